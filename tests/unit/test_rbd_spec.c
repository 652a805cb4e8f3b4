/* rbd: specs — the parts rbd_spec_parse() finds (pool, namespace, image,
 * snapshot, conf, id, Ceph options in order), the specs it refuses, and
 * that member_type_of() sends "rbd:" to the rbd type.  No cluster needed
 * (tests/sh/rbd.sh drives a real one). */
#include "check.h"
#include "member/member.h"

#include <errno.h>
#include <string.h>

static bool same(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static void check_parts(const char *spec, const char *pool, const char *ns, const char *image,
                        const char *snap, const char *conf, const char *id)
{
	struct rbd_spec s;

	CHECK_EQ(rbd_spec_parse(spec, &s), 0);
	CHECK(same(s.pool, pool));
	CHECK(same(s.ns, ns));
	CHECK(same(s.image, image));
	CHECK(same(s.snap, snap));
	CHECK(same(s.conf, conf));
	CHECK(same(s.id, id));
	rbd_spec_free(&s);
}

static void check_options(void)
{
	struct rbd_spec s;

	CHECK_EQ(
	    rbd_spec_parse("p/i,keyring=/k,conf=/c,rados_osd_op_timeout=5,mon_host=1.2.3.4", &s),
	    0);
	CHECK(same(s.conf, "/c"));
	CHECK_EQ(s.nopt, 3);
	if (s.nopt == 3) {
		CHECK(same(s.opt[0].key, "keyring") && same(s.opt[0].val, "/k"));
		CHECK(same(s.opt[1].key, "rados_osd_op_timeout") && same(s.opt[1].val, "5"));
		CHECK(same(s.opt[2].key, "mon_host") && same(s.opt[2].val, "1.2.3.4"));
	}
	rbd_spec_free(&s);
}

static void check_refused(void)
{
	static const char *bad[] = {
	    "",
	    "pool",
	    "pool/",
	    "/img",
	    "pool/img@",
	    "pool/img@a@b",
	    "pool//img",
	    "pool/ns/img/x",
	    "pool/img,",
	    "pool/img,conf",
	    "pool/img,=v",
	    "pool/img,conf=",
	    "pool/img,id=",
	};
	struct rbd_spec s;
	char longname[300];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = rbd_spec_parse(bad[i], &s);
		if (r != -EINVAL)
			fprintf(stderr, "accepted: '%s'\n", bad[i]);
		CHECK_EQ(r, -EINVAL);
	}
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	memcpy(longname, "p/", 2);
	CHECK_EQ(rbd_spec_parse(longname, &s), -EINVAL);
}

int main(void)
{
	check_parts("rbd/disk", "rbd", NULL, "disk", NULL, NULL, NULL);
	check_parts("rbd/disk@monday", "rbd", NULL, "disk", "monday", NULL, NULL);
	check_parts("rbd/tenant/disk@s,conf=/etc/ceph/x.conf,id=uraid", "rbd", "tenant", "disk",
	            "s", "/etc/ceph/x.conf", "uraid");
	check_options();
	check_refused();
	CHECK(strcmp(member_type_of("rbd:rbd/disk")->name, "rbd") == 0);
	CHECK(strcmp(member_type_of("rbd.img")->name, "file") == 0);
	return check_done();
}
