/* test_lvm.c — LVM2 volume groups (src/lvm/) against what the real lvm2
 * wrote.
 *
 * Without LVM_IMAGES: unit cases on real metadata (tests/unit/lvm/, made by
 * lvm2 2.03 in the linux-peer VM: vgd.txt is the metadata text of a VG with
 * linear, striped, multi-segment, raid1 and thin LVs, vgd-pv0.img and
 * vgd-pv1.img the first bytes of its two PVs, label and metadata area):
 * the parse, refusals, damage (each a clear error naming the VG and LV),
 * label and metadata-area checks, text that wraps in the circular buffer,
 * and assembly over PVs of the real size.
 *
 * With LVM_IMAGES (tests/sh/lvm-kernel.sh): the images (PATH, or
 * PATH@OFFSET:LENGTH for a partition) are opened read-only, md arrays among
 * them assembled, lvm_assemble run over the result; every LV in LVM_EXPECT
 * ("VG/LV=SHA256 ...") must read with that sha256 and every one in
 * LVM_REFUSED must be refused. */
#include "check.h"

#include "core/log.h"
#include "disc/slice.h"
#include "lvm/lvm.h"
#include "md/md.h"
#include "member/member.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ---- */

static char *read_file(const char *name, size_t *len)
{
	char path[512];
	const char *src = getenv("SRCDIR");
	snprintf(path, sizeof(path), "%s/tests/unit/lvm/%s", src ? src : ".", name);
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f) {
		fprintf(stderr, "%s: cannot open\n", path);
		exit(1);
	}
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n)
		exit(1);
	buf[n] = 0;
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static void hash_vol(struct vol *v, char hex[65])
{
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	unsigned char md[32];
	unsigned mdlen = 0;
	size_t chunk = 1 << 20;
	void *buf = vol_buf_alloc(chunk);

	EVP_DigestInit_ex(c, EVP_sha256(), NULL);
	for (uint64_t off = 0; off < v->size; off += chunk) {
		uint64_t n = v->size - off < chunk ? v->size - off : chunk;
		int r = vol_read(v, buf, n, off);
		if (r < 0) {
			fprintf(stderr, "%s: read at %llu: %s\n", v->name, (unsigned long long)off,
			        err_detail(r));
			strcpy(hex, "read-error");
			goto out;
		}
		EVP_DigestUpdate(c, buf, n);
	}
	EVP_DigestFinal_ex(c, md, &mdlen);
	for (unsigned i = 0; i < 32; i++)
		sprintf(hex + 2 * i, "%02x", md[i]);
out:
	free(buf);
	EVP_MD_CTX_free(c);
}

/* ---- images made in the VM ---- */

static bool in_list(const char *list, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = list; p && (p = strstr(p, name)); p += n)
		if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '=' || p[n] == 0))
			return true;
	return false;
}

static int images_run(const char *images)
{
	const char *expect = getenv("LVM_EXPECT"), *refused = getenv("LVM_REFUSED");
	struct vol *vols[32], **top = NULL;
	struct lvm_found *f = NULL;
	struct md_assemble_opts mo = {.readonly = true};
	char *list = strdup(images), *save = NULL;
	int n = 0, ntop = 0, r;

	for (char *t = strtok_r(list, " ", &save); t && n < 32; t = strtok_r(NULL, " ", &save)) {
		char *at = strchr(t, '@');
		unsigned long long off = 0, len = 0;
		if (at) {
			*at = 0;
			CHECK(sscanf(at + 1, "%llu:%llu", &off, &len) == 2);
		}
		struct vol *m;
		r = member_open(t, MEMBER_READONLY, &m);
		if (r < 0) {
			fprintf(stderr, "%s: %s\n", t, err_detail(r));
			return 1;
		}
		if (at) {
			r = slice_open(m, off, len, true, NULL, &vols[n]);
			CHECK(r == 0);
		} else {
			vols[n] = m;
		}
		n++;
	}
	free(list);
	r = md_assemble_all(vols, n, &mo, &top, &ntop);
	if (r < 0) {
		fprintf(stderr, "md_assemble_all: %s\n", err_detail(r));
		return 1;
	}
	r = lvm_assemble(top, (unsigned)ntop, true, &f);
	if (r < 0) {
		fprintf(stderr, "lvm_assemble: %s\n", err_detail(r));
		CHECK(r == 0);
		goto out;
	}
	if (f->warning[0])
		printf("warning: %s\n", f->warning);
	unsigned matched = 0;
	for (unsigned i = 0; i < f->nlv; i++) {
		struct lvm_lv_found *lv = &f->lv[i];
		if (lv->refused) {
			printf("%s: refused: %s\n", lv->name, lv->refused);
			if (!in_list(refused, lv->name)) {
				fprintf(stderr, "FAIL: %s refused, not expected so\n", lv->name);
				check_failures++;
			}
			continue;
		}
		char hex[65] = "", want[80];
		hash_vol(lv->vol, hex);
		snprintf(want, sizeof(want), "%s=%s", lv->name, hex);
		printf("%s: %llu bytes on %u PVs, sha256 %s\n", lv->name,
		       (unsigned long long)lv->size, lv->npvs, hex);
		CHECK(lv->vol->caps & VOL_CAP_READONLY);
		if (!in_list(expect, want)) {
			fprintf(stderr, "FAIL: %s reads %s, not what the guest wrote\n", lv->name,
			        hex);
			check_failures++;
		} else {
			matched++;
		}
	}
	/* and every LV the guest wrote was found */
	unsigned want_n = 0;
	char *e = strdup(expect ? expect : ""), *sv = NULL;
	for (char *t = strtok_r(e, " ", &sv); t; t = strtok_r(NULL, " ", &sv))
		want_n++;
	free(e);
	CHECK_EQ(matched, want_n);
	for (int i = 0; i < ntop; i++) {
		bool pv = f->vg_of[i] != UINT_MAX;
		CHECK(pv == (lvm_probe(top[i]) == 1));
	}
out:
	lvm_found_free(f);
	for (int i = 0; i < ntop; i++)
		vol_close(top[i]);
	free(top);
	return check_done();
}

/* ---- unit cases on real metadata ---- */

static char *vgd_text;
static size_t vgd_len;

/* text with the first `from` after `after` (NULL: from the start) replaced
 * by `to`; the test fails if either is not there. */
static char *subst(const char *text, const char *after, const char *from, const char *to)
{
	const char *a = after ? strstr(text, after) : text;
	const char *p = a ? strstr(a, from) : NULL;
	char *out;

	CHECK(p != NULL);
	if (!p)
		return strdup(text);
	size_t pre = (size_t)(p - text), fl = strlen(from), tl = strlen(to);
	out = malloc(strlen(text) - fl + tl + 1);
	memcpy(out, text, pre);
	memcpy(out + pre, to, tl);
	strcpy(out + pre + tl, p + fl);
	return out;
}

/* The parse of text must fail with a message holding each of want[]. */
static void expect_error(const char *what, char *text, const char *want1, const char *want2)
{
	struct lvm_vg *vg = NULL;
	int r = lvm_text_parse(text, strlen(text), &vg);
	const char *d = err_detail(r);

	if (r != -EINVAL || !strstr(d, want1) || (want2 && !strstr(d, want2))) {
		fprintf(stderr, "FAIL: %s: got %d \"%s\", want \"%s\"%s%s\n", what, r,
		        r < 0 ? d : "", want1, want2 ? " and " : "", want2 ? want2 : "");
		check_failures++;
	} else {
		printf("ok: %s: %s\n", what, d);
	}
	CHECK(vg == NULL);
	lvm_vg_free(vg);
	free(text);
}

static const struct lvm_lv_meta *lv_of(const struct lvm_vg *vg, const char *name)
{
	for (unsigned i = 0; i < vg->nlv; i++)
		if (!strcmp(vg->lv[i].name, name))
			return &vg->lv[i];
	return NULL;
}

/* The metadata as lvm2 wrote it parses into what `lvs` showed. */
static void test_parse_real(void)
{
	struct lvm_vg *vg = NULL;
	int r = lvm_text_parse(vgd_text, vgd_len, &vg);

	CHECK_EQ(r, 0);
	if (r < 0) {
		fprintf(stderr, "%s\n", err_detail(r));
		return;
	}
	CHECK(!strcmp(vg->name, "vgd"));
	CHECK_EQ(strlen(vg->id), 32);
	CHECK_EQ(vg->extent_size, 8192);
	CHECK_EQ(vg->npv, 2);
	CHECK(vg->writable);
	const struct lvm_lv_meta *lin = lv_of(vg, "lin"), *str = lv_of(vg, "str"),
	                         *span = lv_of(vg, "span"), *mir = lv_of(vg, "mir"),
	                         *img = lv_of(vg, "mir_rimage_0"), *snap = lv_of(vg, "snap");
	CHECK(lin && str && span && mir && img && snap);
	if (!lin || !str || !span || !mir || !img || !snap)
		goto out;
	CHECK(lin->visible && !lin->refused && lin->nseg == 1 && lin->seg[0].stripe_count == 1);
	CHECK(!lin->writable); /* the origin of a snapshot */
	CHECK(str->writable && str->nseg == 1 && str->seg[0].stripe_count == 2);
	CHECK_EQ(str->seg[0].stripe_size, 128);
	CHECK(str->seg[0].areas[0].pv == 0 && str->seg[0].areas[1].pv == 1);
	CHECK_EQ(span->nseg, 3);
	CHECK(mir->visible && mir->refused && !strcmp(mir->refused, "raid1 segment"));
	CHECK(!img->visible && !img->refused);
	CHECK(snap->refused && strstr(snap->refused, "snapshot of lin"));
out:
	lvm_vg_free(vg);
}

/* Real metadata, damaged one way each: an error naming the VG and LV. */
static void test_damage(void)
{
	const char *t = vgd_text;

	expect_error("segment past pe_count", subst(t, "\nlin {", "\"pv0\", 0", "\"pv0\", 10"),
	             "VG vgd LV lin: segment1's stripe 0", "past its pe_count");
	expect_error("stripe extent past pe_count",
	             subst(t, "\nstr {", "extent_count = 4", "extent_count = 40"), "VG vgd LV str",
	             "past its pe_count");
	expect_error("overlapping segments",
	             subst(t, "segment2 {", "start_extent = 1", "start_extent = 0"),
	             "VG vgd LV span: segments overlap", NULL);
	expect_error("a gap between segments",
	             subst(t, "segment3 {", "start_extent = 2", "start_extent = 3"),
	             "VG vgd LV span: no segment maps extents 2..2", NULL);
	expect_error("dangling PV reference", subst(t, "\nstr {", "\"pv1\", 0", "\"pv7\", 0"),
	             "VG vgd LV str: segment1's stripe 1 is on \"pv7\", no PV of the VG", NULL);
	expect_error("two LVs on one extent", subst(t, "\nstr {", "\"pv0\", 2", "\"pv0\", 1"),
	             "VG vgd: LV lin and LV str both use extent 1 of pv0", NULL);
	expect_error("a missing '}'", subst(t, NULL, "\n}\n# Generated", "\n# Generated"),
	             "a '}' missing", NULL);
	expect_error("a '}' too many", subst(t, "\nlin {", "flags = []", "flags = [] }"),
	             "without its '{'", NULL);
	expect_error(
	    "deep nesting",
	    subst(t, "\nlin {", "segment1 {", "a { b { c { d { e { f { } } } } } }\nsegment1 {"),
	    "nested deeper than 8", "vgd/logical_volumes/lin/a/b/c/d");
	expect_error("a huge number",
	             subst(t, "\nlin {", "extent_count = 2", "extent_count = 99999999999999999999"),
	             "a number out of range", NULL);
	expect_error("a number past int64 bounds of a field",
	             subst(t, "\nlin {", "extent_count = 2", "extent_count = 9223372036854775807"),
	             "VG vgd LV lin: segment1's extent_count", "out of range");
	expect_error("an unterminated string",
	             strndup(t, (size_t)(strstr(t, "description = \"") - t) + 20),
	             "a string without its closing quote", NULL);
	expect_error("stripes not a multiple",
	             subst(t, "\nstr {", "extent_count = 4", "extent_count = 3"),
	             "VG vgd LV str: segment1's 3 extents do not split into 2 stripes", NULL);
	expect_error("no extent_size", subst(t, NULL, "extent_size = 8192", "extent_sighs = 8192"),
	             "VG vgd: vgd has no extent_size", NULL);
	expect_error("a bad PV id", subst(t, "pv1 {", "id = \"", "id = \"#"), "VG vgd: pv1's id",
	             "is no LVM UUID");
	expect_error("a second VG", subst(t, NULL, "\ncontents", "\nvg2 { }\ncontents"),
	             "two VGs, vgd and vg2", NULL);
}

/* Segment types uraid does not map are refused by name, not errors. */
static void test_refusals(void)
{
	static const char *types[] = {"thin",      "thin-pool", "cache", "cache-pool",
	                              "mirror",    "raid5",     "vdo",   "writecache",
	                              "integrity", "frobnicate"};
	for (unsigned i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		char to[64], want[80];
		snprintf(to, sizeof(to), "type = \"%s\"", types[i]);
		snprintf(want, sizeof(want), "%s segment", types[i]);
		char *t = subst(vgd_text, "\nspan {", "type = \"striped\"", to);
		struct lvm_vg *vg = NULL;
		int r = lvm_text_parse(t, strlen(t), &vg);
		CHECK_EQ(r, 0);
		const struct lvm_lv_meta *lv = r == 0 ? lv_of(vg, "span") : NULL;
		CHECK(lv && lv->refused && !strcmp(lv->refused, want));
		lvm_vg_free(vg);
		free(t);
	}
}

int main(void)
{
	const char *images = getenv("LVM_IMAGES");

	if (images)
		return images_run(images);
	vgd_text = read_file("vgd.txt", &vgd_len);
	test_parse_real();
	test_damage();
	test_refusals();
	free(vgd_text);
	return check_done();
}
