/* test_lvm.c — LVM2 volume groups (src/lvm/) against what the real lvm2
 * wrote.
 *
 * Without LVM_IMAGES: unit cases on real metadata (tests/unit/lvm/, made by
 * lvm2 2.03 in the linux-peer VM: vgd.txt is the metadata text of a VG with
 * linear, striped, multi-segment, raid1 and snapshot LVs, vgd-pv0.img and
 * vgd-pv1.img the first bytes of its two PVs, label and metadata area,
 * vgp-pv2-*.img a PV with two metadata areas):
 * the parse, refusals, damage (each a clear error naming the VG and LV),
 * label and metadata-area checks, text that wraps in the circular buffer,
 * copies that disagree or are damaged, and assembly over PVs of the real
 * size (where the stripes land, read-only, partial VGs).
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
	expect_error("a bad PV id", subst(t, "pv1 {", "id = \"", "id = \"$"), "VG vgd: pv1's id",
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

/* ---- the PVs' first bytes as lvm2 wrote them ---- */

#define PV_SIZE (48u << 20) /* the VM's disks */
#define MDA_AT 4096u        /* where lvm2 put the metadata area */

static uint8_t *pv_img[2];
static size_t pv_len[2];

static uint64_t le64_at(const uint8_t *p)
{
	uint64_t x = 0;
	for (int i = 7; i >= 0; i--)
		x = x << 8 | p[i];
	return x;
}

static void put_le(uint8_t *p, uint64_t x, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(x >> (8 * i));
}

/* A mem: PV of the real size holding img; block 512 or 4096. */
static struct vol *pv_vol(const uint8_t *img, size_t len, unsigned block, const char *name)
{
	char spec[64];
	struct vol *m, *v;
	snprintf(spec, sizeof(spec), "mem:%u", PV_SIZE);
	CHECK(member_open(spec, 0, &m) == 0);
	CHECK(vol_write(m, img, len, 0, 0) == 0);
	CHECK(slice_open(m, 0, m->size, true, name, &v) == 0);
	v->block_min = block;
	return v;
}

static void expect_probe(const char *what, uint8_t *img, size_t len, int want, const char *msg)
{
	struct vol *v = pv_vol(img, len, 512, "pv.img");
	int r = lvm_probe(v);
	if (r != want || (msg && (!strstr(err_detail(r), msg) ||
	                          strncmp(err_detail(r), "pv.img: LVM2: ", 14)))) {
		fprintf(stderr, "FAIL: %s: probe %d \"%s\", want %d \"%s\"\n", what, r,
		        r < 0 ? err_detail(r) : "", want, msg ? msg : "");
		check_failures++;
	} else {
		printf("ok: %s: %d %s\n", what, r, r < 0 ? err_detail(r) : "");
	}
	vol_close(v);
}

static void test_label(void)
{
	uint8_t *img = malloc(pv_len[0]);
	uint8_t zeros[4096] = {0};

	memcpy(img, pv_img[0], pv_len[0]);
	expect_probe("the real PV", img, pv_len[0], 1, NULL);
	expect_probe("no label", zeros, sizeof(zeros), 0, NULL);
	img[512 + 40] ^= 1; /* a byte of the PV UUID */
	expect_probe("label damaged", img, pv_len[0], -EINVAL,
	             "label checksum mismatch (sector 1)");
	img[512 + 40] ^= 1;
	img[MDA_AT + 300] ^= 1; /* the header's unused raw_locn slots */
	expect_probe("mda header damaged", img, pv_len[0], -EINVAL,
	             "metadata area header at 4096: checksum mismatch");
	img[MDA_AT + 300] ^= 1;
	uint64_t toff = le64_at(img + MDA_AT + 40);
	img[MDA_AT + toff + 10] ^= 1;
	expect_probe("text damaged", img, pv_len[0], -EINVAL, "checksum mismatch");
	img[MDA_AT + toff + 10] ^= 1;
	memcpy(img + 512, "LABELONX", 8); /* then no label at all */
	expect_probe("no LABELONE", img, pv_len[0], 0, NULL);
	free(img);
}

/* The text moved so that it wraps around the end of the circular buffer:
 * its first half at the area's end, the rest right after the header. */
static void test_wrap(void)
{
	uint8_t *img = calloc(1, PV_SIZE / 16);
	const uint8_t *h = pv_img[0] + MDA_AT;
	uint64_t msize = le64_at(h + 32), toff = le64_at(h + 40), tlen = le64_at(h + 48);
	uint64_t first = tlen / 2, noff = msize - first;

	memcpy(img, pv_img[0], MDA_AT + 512);
	memcpy(img + MDA_AT + noff, pv_img[0] + MDA_AT + toff, first);
	memcpy(img + MDA_AT + 512, pv_img[0] + MDA_AT + toff + first, tlen - first);
	put_le(img + MDA_AT + 40, noff, 8);
	put_le(img + MDA_AT, lvm_crc(LVM_INITIAL_CRC, img + MDA_AT + 4, 508), 4);
	struct vol *v = pv_vol(img, PV_SIZE / 16, 512, "wrap.img");
	CHECK_EQ(lvm_probe(v), 1);
	img[MDA_AT + 512 + 5] ^= 1; /* the wrapped part is checked too */
	struct vol *w = pv_vol(img, PV_SIZE / 16, 512, "wrap.img");
	CHECK_EQ(lvm_probe(w), -EINVAL);
	vol_close(v);
	vol_close(w);
	free(img);
}

static struct lvm_lv_found *found(struct lvm_found *f, const char *name)
{
	for (unsigned i = 0; f && i < f->nlv; i++)
		if (!strcmp(f->lv[i].name, name))
			return &f->lv[i];
	return NULL;
}

/* Both PVs: what lvs showed, as vols; one PV: a partial VG. */
static void test_assemble(unsigned block)
{
	struct vol *pv[2] = {pv_vol(pv_img[0], pv_len[0], block, "pv0.img"),
	                     pv_vol(pv_img[1], pv_len[1], block, "pv1.img")};
	struct lvm_found *f = NULL;
	int r = lvm_assemble(pv, 2, false, &f);

	CHECK_EQ(r, 0);
	if (r < 0) {
		fprintf(stderr, "%s\n", err_detail(r));
		goto out;
	}
	CHECK_EQ(f->nvg, 1);
	CHECK(!strcmp(f->vg_names[0], "vgd"));
	CHECK(f->vg_of[0] == 0 && f->vg_of[1] == 0);
	CHECK_EQ(f->warning[0], 0);
	struct lvm_lv_found *lin = found(f, "vgd/lin"), *str = found(f, "vgd/str"),
	                    *span = found(f, "vgd/span"), *mir = found(f, "vgd/mir"),
	                    *snap = found(f, "vgd/snap");
	CHECK(lin && str && span && mir && snap && !found(f, "vgd/mir_rimage_0"));
	if (!lin || !str || !span || !mir || !snap)
		goto out;
	CHECK(lin->vol && lin->size == 8u << 20 && lin->npvs == 1 && lin->pvs[0] == 0);
	CHECK(lin->vol->caps & VOL_CAP_READONLY); /* a snapshot's origin */
	CHECK(str->vol && str->size == 16u << 20 && str->npvs == 2);
	CHECK(span->vol && span->size == 16u << 20 && span->vol->size == span->size);
	CHECK(mir->refused && !mir->vol);
	CHECK(snap->refused && !snap->vol);
	/* dm-stripe's order: chunk 0 on the first stripe, chunk 1 on the
	 * second, at each stripe's first extent (from the metadata: str's
	 * stripes are pv0 extent 2 and pv1 extent 0, 4 MiB extents, pe_start
	 * 1 MiB). */
	uint8_t a[65536], b[65536], got[65536];
	memset(a, 0xa5, sizeof(a));
	memset(b, 0x5a, sizeof(b));
	CHECK(!(str->vol->caps & VOL_CAP_READONLY));
	CHECK(vol_write(str->vol, a, sizeof(a), 0, 0) == 0);
	CHECK(vol_write(str->vol, b, sizeof(b), sizeof(a), 0) == 0);
	CHECK(vol_read(pv[0], got, sizeof(got), (1u << 20) + 2 * (4u << 20)) == 0);
	CHECK(!memcmp(got, a, sizeof(a)));
	CHECK(vol_read(pv[1], got, sizeof(got), 1u << 20) == 0);
	CHECK(!memcmp(got, b, sizeof(b)));
	/* span's second segment: pv0 extent 4 */
	CHECK(vol_write(span->vol, a, sizeof(a), 4u << 20, 0) == 0);
	CHECK(vol_read(pv[0], got, sizeof(got), (1u << 20) + 4 * (4u << 20)) == 0);
	CHECK(!memcmp(got, a, sizeof(a)));
	lvm_found_free(f);
	f = NULL;

	/* read-only: every LV refuses writes */
	CHECK_EQ(lvm_assemble(pv, 2, true, &f), 0);
	for (unsigned i = 0; f && i < f->nlv; i++)
		if (f->lv[i].vol)
			CHECK_EQ(vol_write(f->lv[i].vol, a, 4096, 0, 0), -EROFS);
	lvm_found_free(f);
	f = NULL;

	/* pv1 missing: the VG is partial, LVs on pv1 are refused by name */
	CHECK_EQ(lvm_assemble(pv, 1, true, &f), 0);
	if (f) {
		CHECK(strstr(f->warning, "VG vgd is partial: 1 of its 2 PVs missing"));
		lin = found(f, "vgd/lin");
		str = found(f, "vgd/str");
		CHECK(lin && lin->vol);
		CHECK(str && !str->vol && str->refused && strstr(str->refused, "PV pv1 (") &&
		      strstr(str->refused, ") missing"));
	}
out:
	lvm_found_free(f);
	vol_close(pv[0]);
	vol_close(pv[1]);
}

/* Two copies of the VG's metadata: the newer one wins, and the caller hears
 * that they disagree; a damaged copy is stood in for by the other PV's. */
static void test_copies(void)
{
	uint8_t *old = malloc(pv_len[1]);
	memcpy(old, pv_img[1], pv_len[1]);
	/* pv1's copy said seqno 1 lower: rewrite the number (same width) */
	char *t = (char *)old + MDA_AT + le64_at(old + MDA_AT + 40);
	char *sq = strstr(t, "seqno = ");
	CHECK(sq != NULL);
	uint64_t tlen = le64_at(old + MDA_AT + 48);
	if (sq) {
		sq[8] = (char)(sq[8] - 1); /* seqno N -> N-1 (a single digit under 10 here) */
		put_le(old + MDA_AT + 56, lvm_crc(LVM_INITIAL_CRC, t, tlen), 4);
		put_le(old + MDA_AT, lvm_crc(LVM_INITIAL_CRC, old + MDA_AT + 4, 508), 4);
	}
	struct vol *pv[2] = {pv_vol(pv_img[0], pv_len[0], 512, "pv0.img"),
	                     pv_vol(old, pv_len[1], 512, "pv1.img")};
	struct lvm_found *f = NULL;
	CHECK_EQ(lvm_assemble(pv, 2, true, &f), 0);
	CHECK(f && strstr(f->warning, "VG vgd: metadata copies disagree"));
	CHECK(f && found(f, "vgd/snap")); /* the newer copy's LV */
	lvm_found_free(f);
	f = NULL;
	vol_close(pv[1]);
	old[MDA_AT + 300] ^= 1; /* now damaged: pv0's copy stands in */
	pv[1] = pv_vol(old, pv_len[1], 512, "pv1.img");
	CHECK_EQ(lvm_assemble(pv, 2, true, &f), 0);
	CHECK(f && strstr(f->warning, "pv1.img (VG vgd): pv1.img: LVM2: metadata area header"));
	CHECK(f && f->vg_of[1] == 0);
	lvm_found_free(f);
	f = NULL;
	/* alone, the damage is an error */
	CHECK_EQ(lvm_assemble(&pv[1], 1, true, &f), -EINVAL);
	CHECK(strstr(err_detail(-EINVAL), "pv1.img: LVM2: metadata area header at 4096: checksum"));
	vol_close(pv[0]);
	vol_close(pv[1]);
	free(old);
}

/* pv0's copy of the metadata edited in place (same length), checksums
 * made again: what lvm2 would have read had it written that. */
static uint8_t *pv0_edited(const char *from, const char *to)
{
	uint8_t *img = malloc(pv_len[0]);
	memcpy(img, pv_img[0], pv_len[0]);
	uint64_t toff = le64_at(img + MDA_AT + 40), tlen = le64_at(img + MDA_AT + 48);
	char *t = (char *)img + MDA_AT + toff, *p = strstr(t, from);
	CHECK(p != NULL && strlen(from) == strlen(to));
	if (p)
		memcpy(p, to, strlen(to));
	put_le(img + MDA_AT + 56, lvm_crc(LVM_INITIAL_CRC, t, tlen), 4);
	put_le(img + MDA_AT, lvm_crc(LVM_INITIAL_CRC, img + MDA_AT + 4, 508), 4);
	return img;
}

/* A stripe size the RAID0 cannot take: that LV refused, the rest open. */
static void test_stripe_refused(void)
{
	uint8_t *img = pv0_edited("stripe_size = 128", "stripe_size = 004");
	struct vol *pv[2] = {pv_vol(img, pv_len[0], 512, "pv0.img"),
	                     pv_vol(pv_img[1], pv_len[1], 512, "pv1.img")};
	struct lvm_found *f = NULL;

	CHECK_EQ(lvm_assemble(pv, 2, true, &f), 0);
	struct lvm_lv_found *str = found(f, "vgd/str"), *span = found(f, "vgd/span");
	CHECK(str && !str->vol && str->refused &&
	      !strcmp(str->refused, "a stripe size of 2048 bytes (not a multiple of 4 KiB)"));
	CHECK(span && span->vol);
	CHECK(f && strstr(f->warning, "metadata copies disagree")); /* pv1 kept the original */
	lvm_found_free(f);
	vol_close(pv[0]);
	vol_close(pv[1]);
	free(img);
}

/* vgp's third PV, made with --metadatacopies 2: a second area at its end
 * (tests/unit/lvm/vgp-pv2-head.img and -tail.img: the first 12 and 8 KiB
 * of the PV and of that area, at 40894464 on a 40 MiB PV). */
#define PV2_MDA2 40894464u

static size_t head_len, tail_len;

static struct vol *pv2_vol(const uint8_t *head, const uint8_t *tail)
{
	struct vol *v = pv_vol(head, head_len, 512, "pv2.img");
	CHECK(vol_write(v, tail, tail_len, PV2_MDA2, 0) == 0);
	return v;
}

static void test_two_areas(void)
{
	uint8_t *head = (uint8_t *)read_file("vgp-pv2-head.img", &head_len);
	uint8_t *tail = (uint8_t *)read_file("vgp-pv2-tail.img", &tail_len);
	struct lvm_found *f = NULL;

	struct vol *v = pv2_vol(head, tail);
	CHECK_EQ(lvm_probe(v), 1);
	CHECK_EQ(lvm_assemble(&v, 1, true, &f), 0);
	CHECK(f && f->nvg == 1 && !strcmp(f->vg_names[0], "vgp"));
	CHECK(f && strstr(f->warning, "VG vgp is partial: 2 of its 3 PVs missing"));
	CHECK(f && !strstr(f->warning, "disagree") && !strstr(f->warning, "damaged"));
	lvm_found_free(f);
	vol_close(v);

	/* the first area damaged: the second stands in, and says so */
	head[MDA_AT + 300] ^= 1;
	v = pv2_vol(head, tail);
	CHECK_EQ(lvm_probe(v), 1);
	CHECK_EQ(lvm_assemble(&v, 1, true, &f), 0);
	CHECK(f && strstr(f->warning, "pv2.img: a metadata area is damaged, the other one used"));
	CHECK(f && f->vg_of[0] == 0);
	lvm_found_free(f);
	vol_close(v);

	/* both damaged: damage */
	tail[300] ^= 1;
	v = pv2_vol(head, tail);
	CHECK_EQ(lvm_probe(v), -EINVAL);
	CHECK(strstr(err_detail(-EINVAL), "pv2.img: LVM2: metadata area header at 4096"));
	vol_close(v);
	free(head);
	free(tail);
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
	pv_img[0] = (uint8_t *)read_file("vgd-pv0.img", &pv_len[0]);
	pv_img[1] = (uint8_t *)read_file("vgd-pv1.img", &pv_len[1]);
	test_label();
	test_wrap();
	test_assemble(512);
	test_assemble(4096);
	test_copies();
	test_stripe_refused();
	test_two_areas();
	free(pv_img[0]);
	free(pv_img[1]);
	free(vgd_text);
	return check_done();
}
