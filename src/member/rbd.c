/* rbd.c — a member on a Ceph RBD image, through librbd's C API: LUKS2 on
 * RBD, a mirror of a local disk and an image, or a stripe over several
 * images, are then one command.  member.h gives the spec; the parser is
 * pure and built with or without librbd (tests/unit/test_rbd_spec.c).
 *
 * One cluster handle, one I/O context and one image handle per member.
 * librbd is thread-safe and asynchronous: every op submits one rbd_aio_*
 * request and its caller waits for that completion alone, so as many
 * requests are in flight as threads call in (the NBD workers, the RAID
 * fan-out), and librbd splits each across the image's objects itself.
 *
 * Durability: with librbd's cache on (Ceph's default, writethrough until
 * the first flush) a completed write may sit in the client; rbd_aio_flush
 * makes every completed write durable, which is vol.h's flush.  There is
 * no FUA, so the member does not claim it (vol_write flushes after).
 *
 * Ceph's client waits forever on an OSD or monitor that does not answer
 * (rados_osd_op_timeout and rados_mon_op_timeout default to 0): an array
 * would hang on a dead OSD instead of failing the member.  Where the spec
 * does not set them and the conf leaves them at 0, the member sets both to
 * RBD_MEMBER_OP_TIMEOUT_S, longer than Ceph's own failover (an OSD is
 * marked down after osd_heartbeat_grace, 20 s) so a replicated pool heals
 * before uraid gives up on it. */
#include "member.h"

#include "core/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RBD_MEMBER_OP_TIMEOUT_S "60"

void rbd_spec_free(struct rbd_spec *s)
{
	free(s->buf);
	free(s->opt);
	memset(s, 0, sizeof(*s));
}

/* Cut buf at the first of seps; returns what follows it (NULL: none). */
static char *rbd_cut(char *buf, const char *seps, char *found)
{
	char *p = strpbrk(buf, seps);

	*found = p ? *p : 0;
	if (!p)
		return NULL;
	*p = 0;
	return p + 1;
}

static bool rbd_name_ok(const char *n)
{
	return n && *n && strlen(n) < RBD_SPEC_NAME_MAX;
}

int rbd_spec_parse(const char *rest, struct rbd_spec *s)
{
	char *opts, *path, *p, sep;
	int r = -EINVAL;

	memset(s, 0, sizeof(*s));
	s->buf = strdup(rest);
	if (!s->buf)
		return -ENOMEM;
	path = s->buf;
	opts = rbd_cut(path, ",", &sep);

	/* POOL/IMAGE or POOL/NAMESPACE/IMAGE, then @SNAP. */
	s->pool = path;
	p = rbd_cut(path, "/", &sep);
	if (!p) {
		r = err_set(-EINVAL, "rbd:%s: the spec is rbd:POOL/IMAGE[@SNAP][,OPT=VAL...]",
		            rest);
		goto out;
	}
	s->image = p;
	s->snap = rbd_cut(p, "@", &sep);
	p = strchr(s->image, '/');
	if (p) {
		*p = 0;
		s->ns = s->image;
		s->image = p + 1;
	}
	if (!rbd_name_ok(s->pool) || !rbd_name_ok(s->image) || strpbrk(s->image, "/@") ||
	    (s->ns && !rbd_name_ok(s->ns)) ||
	    (s->snap && (!rbd_name_ok(s->snap) || strchr(s->snap, '@')))) {
		r = err_set(-EINVAL,
		            "rbd:%s: empty, too long or stray '/' or '@' in POOL/IMAGE@SNAP", rest);
		goto out;
	}

	while (opts) {
		char *kv = opts, *val;

		opts = rbd_cut(kv, ",", &sep);
		val = rbd_cut(kv, "=", &sep);
		if (!*kv || !val) {
			r = err_set(-EINVAL, "rbd:%s: option '%s' is not KEY=VALUE", rest, kv);
			goto out;
		}
		if (strcmp(kv, "conf") == 0) {
			s->conf = val;
		} else if (strcmp(kv, "id") == 0) {
			s->id = val;
		} else {
			if (s->nopt == RBD_SPEC_MAX_OPTS) {
				r = err_set(-EINVAL, "rbd:%s: more than %d options", rest,
				            RBD_SPEC_MAX_OPTS);
				goto out;
			}
			if (!s->opt) {
				s->opt = calloc(RBD_SPEC_MAX_OPTS, sizeof(*s->opt));
				if (!s->opt) {
					r = -ENOMEM;
					goto out;
				}
			}
			s->opt[s->nopt].key = kv;
			s->opt[s->nopt].val = val;
			s->nopt++;
		}
	}
	if ((s->conf && !*s->conf) || (s->id && !*s->id)) {
		r = err_set(-EINVAL, "rbd:%s: conf= and id= need a value", rest);
		goto out;
	}
	return 0;

out:
	rbd_spec_free(s);
	return r;
}

#ifndef URAID_HAVE_LIBRBD

int rbd_member_open(const char *rest, unsigned flags, struct vol **out)
{
	(void)flags, (void)out;
	return err_set(-ENOTSUP,
	               "rbd:%s: uraid was built without librbd (install librbd-dev, "
	               "then meson setup --reconfigure)",
	               rest);
}

#else

#include <rados/librados.h>
#include <rbd/librbd.h>

struct rbd_vol {
	struct vol vol;
	rados_t cluster;
	rados_ioctx_t io;
	rbd_image_t image;
	bool ro;
};

enum rbd_op { RBD_OP_READ, RBD_OP_WRITE, RBD_OP_DISCARD, RBD_OP_ZERO, RBD_OP_FLUSH };

/* One request, submitted and waited for: its result, 0 or -errno (reads:
 * the byte count).  zflags: rbd_aio_write_zeroes' flags. */
static ssize_t rbd_request(struct rbd_vol *b, enum rbd_op op, const void *buf, uint64_t len,
                           uint64_t off, int zflags)
{
	rbd_completion_t c;
	ssize_t r = rbd_aio_create_completion(NULL, NULL, &c);

	if (r < 0)
		return r;
	switch (op) {
	case RBD_OP_READ:
		r = rbd_aio_read(b->image, off, len, (char *)buf, c);
		break;
	case RBD_OP_WRITE:
		r = rbd_aio_write(b->image, off, len, buf, c);
		break;
	case RBD_OP_DISCARD:
		r = rbd_aio_discard(b->image, off, len, c);
		break;
	case RBD_OP_ZERO:
		r = rbd_aio_write_zeroes(b->image, off, len, c, zflags, 0);
		break;
	case RBD_OP_FLUSH:
		r = rbd_aio_flush(b->image, c);
		break;
	}
	if (r == 0) {
		rbd_aio_wait_for_complete(c);
		r = rbd_aio_get_return_value(c);
	}
	rbd_aio_release(c); /* a request that was not submitted never completes */
	return r;
}

static int rbd_member_read(struct vol *v, void *buf, uint64_t len, uint64_t off)
{
	struct rbd_vol *b = container_of(v, struct rbd_vol, vol);
	ssize_t n = rbd_request(b, RBD_OP_READ, buf, len, off, 0);

	if (n < 0)
		return (int)n;
	return (uint64_t)n == len ? 0 : -EIO; /* the image shrank under us */
}

static int rbd_member_flush(struct vol *v)
{
	struct rbd_vol *b = container_of(v, struct rbd_vol, vol);

	return (int)rbd_request(b, RBD_OP_FLUSH, NULL, 0, 0, 0);
}

/* A write, discard or zeroing, then the flush that VOL_FUA asks for. */
static int rbd_change(struct vol *v, enum rbd_op op, const void *buf, uint64_t len, uint64_t off,
                      unsigned flags, int zflags)
{
	struct rbd_vol *b = container_of(v, struct rbd_vol, vol);
	ssize_t n;

	if (b->ro)
		return -EROFS;
	n = rbd_request(b, op, buf, len, off, zflags);
	if (n < 0)
		return (int)n;
	return (flags & VOL_FUA) ? rbd_member_flush(v) : 0;
}

static int rbd_member_write(struct vol *v, const void *buf, uint64_t len, uint64_t off,
                            unsigned flags)
{
	return rbd_change(v, RBD_OP_WRITE, buf, len, off, flags, 0);
}

static int rbd_member_trim(struct vol *v, uint64_t len, uint64_t off, unsigned flags)
{
	return rbd_change(v, RBD_OP_DISCARD, NULL, len, off, flags, 0);
}

/* librbd zeroes by object operations (truncate, remove, zero), so it is
 * always fast; without VOL_MAY_TRIM the extent stays allocated. */
static int rbd_member_zero(struct vol *v, uint64_t len, uint64_t off, unsigned flags)
{
	int zflags = (flags & VOL_MAY_TRIM) ? 0 : RBD_WRITE_ZEROES_FLAG_THICK_PROVISION;

	return rbd_change(v, RBD_OP_ZERO, NULL, len, off, flags, zflags);
}

static void rbd_member_close(struct vol *v)
{
	struct rbd_vol *b = container_of(v, struct rbd_vol, vol);

	rbd_close(b->image);
	rados_ioctx_destroy(b->io);
	rados_shutdown(b->cluster);
	vol_fini(v);
	free(b);
}

static const struct vol_ops rbd_member_ops = {
    .kind = "rbd",
    .read = rbd_member_read,
    .write = rbd_member_write,
    .flush = rbd_member_flush,
    .trim = rbd_member_trim,
    .write_zeroes = rbd_member_zero,
    .close = rbd_member_close,
};

/* Does the spec name Ceph option opt ("rados_osd_op_timeout"; Ceph also
 * takes spaces or dashes for the underscores)? */
static bool rbd_spec_sets(const struct rbd_spec *s, const char *opt)
{
	for (size_t i = 0; i < s->nopt; i++) {
		const char *k = s->opt[i].key, *o = opt;

		while (*k && (*k == *o || ((*k == ' ' || *k == '-') && *o == '_')))
			k++, o++;
		if (!*k && !*o)
			return true;
	}
	return false;
}

/* RBD_MEMBER_OP_TIMEOUT_S for a timeout at Ceph's "never" (0), unless the
 * spec names it (a spec's 0 is kept: the user asked to wait forever).  A
 * conf's explicit 0 cannot be told from the default, and is replaced. */
static void rbd_default_timeout(const struct rbd_spec *s, rados_t cluster, const char *opt)
{
	char cur[32];

	if (rbd_spec_sets(s, opt))
		return;
	if (rados_conf_get(cluster, opt, cur, sizeof(cur)) == 0 && strcmp(cur, "0") == 0)
		rados_conf_set(cluster, opt, RBD_MEMBER_OP_TIMEOUT_S);
}

/* The cluster handle, configured and connected: the conf (the spec's or
 * Ceph's search path and $CEPH_CONF), $CEPH_ARGS, then the spec's options. */
static int rbd_connect(const struct rbd_spec *s, const char *what, rados_t *out)
{
	char name[RBD_SPEC_NAME_MAX + 8];
	rados_t cluster;
	int r;

	snprintf(name, sizeof(name), "client.%s", s->id ? s->id : "admin");
	r = rados_create2(&cluster, "ceph", name, 0);
	if (r < 0)
		return err_set(r, "%s: rados_create2: %s", what, strerror(-r));
	r = rados_conf_read_file(cluster, s->conf);
	if (r < 0 && (s->conf || r != -ENOENT)) {
		r = err_set(r, "%s: reading the Ceph conf %s: %s", what,
		            s->conf ? s->conf : "($CEPH_CONF or /etc/ceph/ceph.conf)",
		            strerror(-r));
		goto out;
	}
	r = rados_conf_parse_env(cluster, NULL);
	if (r < 0) {
		r = err_set(r, "%s: $CEPH_ARGS: %s", what, strerror(-r));
		goto out;
	}
	for (size_t i = 0; i < s->nopt; i++) {
		r = rados_conf_set(cluster, s->opt[i].key, s->opt[i].val);
		if (r < 0) {
			r = err_set(r, "%s: Ceph option %s: %s", what, s->opt[i].key,
			            r == -ENOENT ? "no such option" : strerror(-r));
			goto out;
		}
	}
	rbd_default_timeout(s, cluster, "rados_osd_op_timeout");
	rbd_default_timeout(s, cluster, "rados_mon_op_timeout");
	r = rados_connect(cluster);
	if (r < 0) {
		r = err_set(r, "%s: connecting to the Ceph cluster: %s%s", what, strerror(-r),
		            r == -ENOENT ? " (no monitor address: give conf=PATH or mon_host=ADDR)"
		                         : "");
		goto out;
	}
	*out = cluster;
	return 0;

out:
	rados_shutdown(cluster);
	return r;
}

int rbd_member_open(const char *rest, unsigned flags, struct vol **out)
{
	bool ro = (flags & MEMBER_READONLY);
	char what[3 * RBD_SPEC_NAME_MAX + 8];
	struct rbd_spec s;
	struct rbd_vol *b;
	uint64_t size;
	int r;

	r = rbd_spec_parse(rest, &s);
	if (r < 0)
		return r;
	/* The name, for messages and `uraid detail`: never the options,
	 * which may carry a key. */
	snprintf(what, sizeof(what), "rbd:%s/%s%s%s%s%s", s.pool, s.ns ? s.ns : "", s.ns ? "/" : "",
	         s.image, s.snap ? "@" : "", s.snap ? s.snap : "");
	b = calloc(1, sizeof(*b));
	if (!b) {
		r = -ENOMEM;
		goto out_spec;
	}
	if (s.snap && !ro) {
		r = err_set(-EROFS, "%s: a snapshot is read-only (open it with --readonly)", what);
		goto out_free;
	}
	b->ro = ro;
	r = rbd_connect(&s, what, &b->cluster);
	if (r < 0)
		goto out_free;
	r = rados_ioctx_create(b->cluster, s.pool, &b->io);
	if (r < 0) {
		r = err_set(r, "%s: pool %s: %s", what, s.pool, strerror(-r));
		goto out_cluster;
	}
	if (s.ns)
		rados_ioctx_set_namespace(b->io, s.ns);
	r = ro ? rbd_open_read_only(b->io, s.image, &b->image, s.snap)
	       : rbd_open(b->io, s.image, &b->image, NULL);
	if (r < 0) {
		r = err_set(r, "%s: opening the image%s: %s", what, s.snap ? " snapshot" : "",
		            strerror(-r));
		goto out_io;
	}
	r = rbd_get_size(b->image, &size);
	if (r < 0) {
		r = err_set(r, "%s: rbd_get_size: %s", what, strerror(-r));
		goto out_image;
	}
	unsigned caps = VOL_CAP_FLUSH | VOL_CAP_MULTI_CONN;
	if (ro)
		caps |= VOL_CAP_READONLY;
	else
		caps |= VOL_CAP_TRIM | VOL_CAP_ZEROES | VOL_CAP_FAST_ZERO;
	/* Sectors, as the kernel's rbd driver: a tail under 512 bytes is
	 * not used. */
	r = vol_init(&b->vol, &rbd_member_ops, what, size & ~511ull, 512, caps);
	if (r < 0)
		goto out_image;
	rbd_spec_free(&s);
	*out = &b->vol;
	return 0;

out_image:
	rbd_close(b->image);
out_io:
	rados_ioctx_destroy(b->io);
out_cluster:
	rados_shutdown(b->cluster);
out_free:
	free(b);
out_spec:
	rbd_spec_free(&s);
	return r;
}

#endif
