/* test_part.c — src/disc/part.c against the real tools: tables written by
 * sfdisk (dos and gpt), sgdisk (gpt with types and names) and fdisk -b
 * 4096 (a 4096-byte-sector gpt) in a scratch directory, each read by
 * part_scan and compared field by field with what sfdisk --json (fdisk -l
 * for 4096-byte sectors) says of the same image; then those images
 * damaged (a primary GPT header's CRC, both headers, an entry past the
 * disk with its CRCs made right again, overlapping entries, an EBR chain
 * that loops, an EBR link outside its extended partition), each of
 * which must be the error (or the warning) it is.  Skips (77) without
 * sfdisk, sgdisk or fdisk. */
#include "check.h"

#include "core/log.h"
#include "disc/part.h"
#include "member/member.h"

#include <json-c/json.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static char dir[] = "/tmp/uraid-part-XXXXXX";

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	int r = system(cmd);
	if (r != 0)
		fprintf(stderr, "command failed (%d): %s\n", r, cmd);
	return r;
}

static char *img(const char *name)
{
	static char path[64][256];
	static int k;
	char *p = path[k++ % 64];
	snprintf(p, 256, "%s/%s", dir, name);
	return p;
}

/* part_scan of path: its return; *t set when 1. */
static int scan(const char *path, struct part_table **t)
{
	struct vol *v;
	int r;

	*t = NULL;
	err_clear();
	r = member_open(path, MEMBER_READONLY, &v);
	CHECK_EQ(r, 0);
	if (r < 0)
		return r;
	r = part_scan(v, t);
	vol_close(v);
	return r;
}

/* The error part_scan gives path, and its detail must hold want. */
static void scan_fails(const char *path, const char *want)
{
	struct part_table *t;
	int r = scan(path, &t);

	CHECK(r < 0);
	if (r >= 0) {
		fprintf(stderr, "%s: expected an error with \"%s\", got %d\n", path, want, r);
		part_table_free(t);
		return;
	}
	if (!strstr(err_detail(r), want)) {
		fprintf(stderr, "%s: detail \"%s\" lacks \"%s\"\n", path, err_detail(r), want);
		check_failures++;
	}
}

static struct json_object *sfdisk_json(const char *path)
{
	char cmd[512], buf[65536];
	size_t n;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "sfdisk --json '%s'", path);
	f = popen(cmd, "r");
	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	pclose(f);
	buf[n] = '\0';
	return json_tokener_parse(buf);
}

static const char *jstr(struct json_object *o, const char *key)
{
	struct json_object *x;
	return json_object_object_get_ex(o, key, &x) ? json_object_get_string(x) : NULL;
}

static long long jint(struct json_object *o, const char *key)
{
	struct json_object *x;
	return json_object_object_get_ex(o, key, &x) ? json_object_get_int64(x) : -1;
}

static const struct part *find(const struct part_table *t, unsigned number)
{
	for (unsigned i = 0; i < t->n; i++)
		if (t->parts[i].number == number)
			return &t->parts[i];
	return NULL;
}

/* Every field sfdisk --json shows of path against part_scan's table,
 * whose warning must hold warn (NULL: be empty). */
static void compare_sfdisk(const char *path, const char *scheme, const char *warn)
{
	struct json_object *root = sfdisk_json(path), *pt, *parts;
	struct part_table *t;
	unsigned listed = 0;
	long long ss;

	CHECK(root != NULL);
	if (!root)
		return;
	CHECK(json_object_object_get_ex(root, "partitiontable", &pt));
	CHECK_EQ(scan(path, &t), 1);
	if (!t) {
		json_object_put(root);
		return;
	}
	CHECK(strcmp(t->scheme, scheme) == 0);
	CHECK(strcmp(jstr(pt, "label"), t->scheme) == 0);
	CHECK(strcasecmp(jstr(pt, "id"), t->id) == 0);
	ss = jint(pt, "sectorsize");
	CHECK_EQ(ss, t->sector);
	if (warn ? !strstr(t->warning, warn) : t->warning[0] != '\0') {
		fprintf(stderr, "%s: warning \"%s\", expected \"%s\"\n", path, t->warning,
		        warn ? warn : "");
		check_failures++;
	}
	if (strcmp(scheme, "gpt") == 0) {
		CHECK_EQ(jint(pt, "firstlba"), t->first_lba);
		CHECK_EQ(jint(pt, "lastlba"), t->last_lba);
	}
	if (!json_object_object_get_ex(pt, "partitions", &parts))
		parts = NULL; /* sfdisk leaves the list out when it is empty */
	for (size_t i = 0; parts && i < json_object_array_length(parts); i++) {
		struct json_object *j = json_object_array_get_idx(parts, i), *b;
		const char *node = jstr(j, "node"), *type = jstr(j, "type");
		unsigned number = (unsigned)atoi(node + strlen(path));
		const struct part *p = find(t, number);

		if (strcmp(scheme, "dos") == 0 && number <= 4 &&
		    (strcmp(type, "5") == 0 || strcmp(type, "f") == 0 || strcmp(type, "85") == 0)) {
			CHECK(p == NULL); /* the extended container is left out */
			continue;
		}
		listed++;
		CHECK(p != NULL);
		if (!p) {
			fprintf(stderr, "%s: partition %u missing\n", path, number);
			continue;
		}
		CHECK_EQ(p->start, jint(j, "start") * ss);
		CHECK_EQ(p->size, jint(j, "size") * ss);
		if (strcmp(scheme, "gpt") == 0) {
			CHECK(strcasecmp(p->type, type) == 0);
			CHECK(strcasecmp(p->uuid, jstr(j, "uuid")) == 0);
			CHECK(strcmp(p->name, jstr(j, "name") ? jstr(j, "name") : "") == 0);
		} else {
			CHECK_EQ(p->mbr_type, strtoul(type, NULL, 16));
			CHECK_EQ(strtoul(p->type, NULL, 16), strtoul(type, NULL, 16));
			CHECK_EQ(p->logical, number >= 5);
			CHECK_EQ(p->bootable, json_object_object_get_ex(j, "bootable", &b) &&
			                          json_object_get_boolean(b));
			CHECK(strcmp(p->name, "") == 0 && strcmp(p->uuid, "") == 0);
		}
	}
	CHECK_EQ(t->n, listed);
	for (unsigned i = 1; i < t->n; i++)
		CHECK(t->parts[i - 1].number < t->parts[i].number);
	part_table_free(t);
	json_object_put(root);
}

/* Bytes of a file. */
static int file_rw(const char *path, void *buf, size_t len, long off, bool write)
{
	FILE *f = fopen(path, write ? "r+b" : "rb");
	int ok;

	if (!f)
		return -1;
	fseek(f, off, SEEK_SET);
	ok = (write ? fwrite(buf, 1, len, f) : fread(buf, 1, len, f)) == len;
	fclose(f);
	return ok ? 0 : -1;
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p)
{
	return get32(p) | (uint64_t)get32(p + 4) << 32;
}

static void put32(uint8_t *p, uint32_t x)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(x >> 8 * i);
}

static void put64(uint8_t *p, uint64_t x)
{
	put32(p, (uint32_t)x);
	put32(p + 4, (uint32_t)(x >> 32));
}

/* CRC-32 (zlib's), table-driven here: the reader's bitwise one is
 * checked by every real image, this one by the same images below. */
static uint32_t crc32_ref(const uint8_t *p, size_t n)
{
	static uint32_t tab[256];
	uint32_t c = 0xffffffffu;

	if (!tab[1])
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t x = i;
			for (int k = 0; k < 8; k++)
				x = x & 1 ? 0xedb88320u ^ x >> 1 : x >> 1;
			tab[i] = x;
		}
	while (n--)
		c = tab[(c ^ *p++) & 0xff] ^ c >> 8;
	return ~c;
}

/* Apply edit to the entries array of the GPT header at byte hoff of
 * path, then make both CRCs right again. */
static void gpt_edit(const char *path, long hoff, void (*edit)(uint8_t *entries, uint32_t esz))
{
	uint8_t h[512], *e;
	uint64_t elba;
	uint32_t n, esz;

	CHECK_EQ(file_rw(path, h, sizeof(h), hoff, false), 0);
	CHECK(memcmp(h, "EFI PART", 8) == 0);
	uint8_t c[512];
	memcpy(c, h, sizeof(c));
	memset(c + 16, 0, 4);
	CHECK_EQ(get32(h + 16), crc32_ref(c, get32(h + 12)));
	elba = get64(h + 72);
	n = get32(h + 80);
	esz = get32(h + 84);
	e = malloc((size_t)n * esz);
	CHECK_EQ(file_rw(path, e, (size_t)n * esz, (long)(elba * 512), false), 0);
	CHECK_EQ(get32(h + 88), crc32_ref(e, (size_t)n * esz));
	edit(e, esz);
	put32(h + 88, crc32_ref(e, (size_t)n * esz));
	memset(h + 16, 0, 4);
	put32(h + 16, crc32_ref(h, get32(h + 12)));
	CHECK_EQ(file_rw(path, e, (size_t)n * esz, (long)(elba * 512), true), 0);
	CHECK_EQ(file_rw(path, h, sizeof(h), hoff, true), 0);
	free(e);
}

static uint64_t last_lba_of(const char *path)
{
	FILE *f = fopen(path, "rb");
	long size;

	fseek(f, 0, SEEK_END);
	size = ftell(f);
	fclose(f);
	return (uint64_t)size / 512 - 1;
}

static uint64_t g_past; /* what edit_past_end sets entry 3's last LBA to */

static void edit_past_end(uint8_t *e, uint32_t esz)
{
	put64(e + 2 * esz + 40, g_past);
}

static void edit_overlap(uint8_t *e, uint32_t esz)
{
	/* entry 2 starts inside entry 1 */
	put64(e + esz + 32, get64(e + 32) + 8);
}

/* A partition read through part_open is the image's bytes there, and
 * closing it leaves the disk open. */
static void check_open(const char *path, unsigned number)
{
	struct part_table *t;
	struct vol *v, *s;
	const struct part *p;
	uint8_t pat[4096], got[4096];

	for (size_t i = 0; i < sizeof(pat); i++)
		pat[i] = (uint8_t)(i * 7 + number);
	CHECK_EQ(member_open(path, 0, &v), 0);
	CHECK_EQ(part_scan(v, &t), 1);
	p = t ? find(t, number) : NULL;
	CHECK(p != NULL);
	if (p) {
		CHECK_EQ(file_rw(path, pat, sizeof(pat), (long)(p->start + p->size - 4096), true),
		         0);
		CHECK_EQ(part_open(v, p, "part", &s), 0);
		CHECK_EQ(s->size, p->size);
		CHECK_EQ(vol_read(s, got, sizeof(got), s->size - 4096), 0);
		CHECK(memcmp(got, pat, sizeof(pat)) == 0);
		vol_close(s);
		CHECK_EQ(vol_read(v, got, sizeof(got), p->start + p->size - 4096), 0);
		CHECK(memcmp(got, pat, sizeof(pat)) == 0);
		struct part bad = *p;
		bad.size = v->size; /* runs past the disk */
		CHECK(part_open(v, &bad, "bad", &s) < 0);
	}
	part_table_free(t);
	vol_close(v);
}

/* A DOS table with primaries, an extended partition and a chain of
 * logicals, one bootable. */
static void test_dos(void)
{
	char *d = img("dos.img");
	CHECK_EQ(sh("truncate -s 64M %s && printf 'label: dos\\nlabel-id: 0x1234abcd\\n"
	            ",8M,83,*\\n,8M,fd\\n,,5\\n,4M,83\\n,4M,8e\\n,4M,82\\n,4M,fd\\n' | "
	            "sfdisk -q %s",
	            d, d),
	         0);
	compare_sfdisk(d, "dos", NULL);
	check_open(d, 6);

	/* A table with nothing in it is a table (1, no partitions). */
	char *e = img("dos-empty.img");
	CHECK_EQ(sh("truncate -s 8M %s && echo 'label: dos' | sfdisk -q %s", e, e), 0);
	compare_sfdisk(e, "dos", NULL);

	/* Damaged copies.  The EBRs: the first at the extended
	 * partition's start, the next where its link (entry 2) says. */
	uint8_t mbr[512], ebr[512];
	CHECK_EQ(file_rw(d, mbr, 512, 0, false), 0);
	uint32_t xs = get32(mbr + 446 + 32 + 8), xn = get32(mbr + 446 + 32 + 12);
	CHECK_EQ(file_rw(d, ebr, 512, (long)xs * 512, false), 0);
	uint32_t second = xs + get32(ebr + 446 + 16 + 8);

	char *loop = img("dos-loop.img");
	CHECK_EQ(sh("cp %s %s", d, loop), 0);
	CHECK_EQ(file_rw(loop, ebr, 512, (long)second * 512, false), 0);
	put32(ebr + 446 + 16 + 8, second - xs); /* links to itself */
	CHECK_EQ(file_rw(loop, ebr, 512, (long)second * 512, true), 0);
	scan_fails(loop, "loops back to sector");

	char *loop0 = img("dos-loop0.img");
	CHECK_EQ(sh("cp %s %s", d, loop0), 0);
	CHECK_EQ(file_rw(loop0, ebr, 512, (long)second * 512, false), 0);
	put32(ebr + 446 + 16 + 8, 0); /* back to the first EBR */
	CHECK_EQ(file_rw(loop0, ebr, 512, (long)second * 512, true), 0);
	scan_fails(loop0, "loops back to sector");

	char *out = img("dos-out.img");
	CHECK_EQ(sh("cp %s %s", d, out), 0);
	CHECK_EQ(file_rw(out, ebr, 512, (long)second * 512, false), 0);
	put32(ebr + 446 + 16 + 8, xn + 16); /* past the extended partition */
	CHECK_EQ(file_rw(out, ebr, 512, (long)second * 512, true), 0);
	scan_fails(out, "outside the extended partition");

	char *lout = img("dos-lout.img");
	CHECK_EQ(sh("cp %s %s", d, lout), 0);
	CHECK_EQ(file_rw(lout, ebr, 512, (long)xs * 512, false), 0);
	put32(ebr + 446 + 12, xn); /* logical 5 runs past its container */
	CHECK_EQ(file_rw(lout, ebr, 512, (long)xs * 512, true), 0);
	scan_fails(lout, "logical partition 5");

	/* The extended partition in slot 2, a primary after it in slot 3:
	 * the logicals still come after 4 (sfdisk agrees). */
	char *swap = img("dos-swap.img");
	uint8_t e2[16];
	CHECK_EQ(sh("cp %s %s", d, swap), 0);
	memcpy(e2, mbr + 446 + 16, 16);
	memmove(mbr + 446 + 16, mbr + 446 + 32, 16);
	memcpy(mbr + 446 + 32, e2, 16);
	CHECK_EQ(file_rw(swap, mbr, 512, 0, true), 0);
	compare_sfdisk(swap, "dos", NULL);

	char *past = img("dos-past.img");
	CHECK_EQ(sh("cp %s %s && truncate -s 20M %s", d, past, past), 0);
	scan_fails(past, "partition 3");
}

/* GPT by sfdisk: names, the default types. */
static void test_gpt_sfdisk(void)
{
	char *g = img("gpt.img");
	CHECK_EQ(sh("truncate -s 64M %s && printf 'label: gpt\\n"
	            "size=8M, type=L, name=boot\\nsize=8M, type=R, name=\"md member\"\\n"
	            "size=8M, type=V\\ntype=U, name=esp\\n' | sfdisk -q %s",
	            g, g),
	         0);
	compare_sfdisk(g, "gpt", NULL);
	check_open(g, 2);

	struct part_table *t;
	CHECK_EQ(scan(g, &t), 1);
	if (t && t->n == 4) {
		CHECK(strcmp(t->parts[1].type_name, "Linux RAID") == 0);
		CHECK(strcmp(t->parts[2].type_name, "Linux LVM") == 0);
		CHECK(strcmp(t->parts[3].type_name, "EFI System") == 0);
	}
	part_table_free(t);

	uint64_t last = last_lba_of(g);
	uint8_t b = 0;

	/* The primary header's CRC broken: the backup serves, saying so. */
	char *p1 = img("gpt-prim.img");
	CHECK_EQ(sh("cp %s %s", g, p1), 0);
	CHECK_EQ(file_rw(p1, &b, 1, 512 + 60, false), 0);
	b ^= 0x40;
	CHECK_EQ(file_rw(p1, &b, 1, 512 + 60, true), 0);
	CHECK_EQ(scan(p1, &t), 1);
	if (t) {
		char want[64];
		snprintf(want, sizeof(want), "backup at LBA %llu", (unsigned long long)last);
		CHECK(strstr(t->warning, "primary GPT header is damaged (header CRC)") != NULL);
		CHECK(strstr(t->warning, want) != NULL);
		CHECK_EQ(t->n, 4);
	}
	part_table_free(t);

	/* The primary's entries array broken: the backup's serves. */
	char *pe = img("gpt-prim-entries.img");
	CHECK_EQ(sh("cp %s %s", g, pe), 0);
	CHECK_EQ(file_rw(pe, &b, 1, 1024 + 56, false), 0);
	b ^= 1;
	CHECK_EQ(file_rw(pe, &b, 1, 1024 + 56, true), 0);
	CHECK_EQ(scan(pe, &t), 1);
	if (t) {
		CHECK(strstr(t->warning, "entries array CRC") != NULL);
		CHECK(strcmp(t->parts[0].name, "boot") == 0); /* the backup's */
	}
	part_table_free(t);

	/* A header that says it is elsewhere (the backup copied to LBA 1,
	 * its CRC right): not the primary. */
	char *pl = img("gpt-mylba.img");
	uint8_t bh[512];
	CHECK_EQ(sh("cp %s %s", g, pl), 0);
	CHECK_EQ(file_rw(pl, bh, 512, (long)(last * 512), false), 0);
	CHECK_EQ(file_rw(pl, bh, 512, 512, true), 0);
	CHECK_EQ(scan(pl, &t), 1);
	if (t) {
		char want[64];
		snprintf(want, sizeof(want), "it says it is at LBA %llu", (unsigned long long)last);
		CHECK(strstr(t->warning, want) != NULL);
	}
	part_table_free(t);

	/* The image grown by 1 MiB: the backup is no longer at the end.  With
	 * the primary whole, a warning; with it damaged, the backup is found
	 * where the damaged primary says. */
	char *gg = img("gpt-grown.img"), *gd = img("gpt-grown-prim.img");
	CHECK_EQ(sh("cp %s %s && truncate -s 65M %s && cp %s %s && truncate -s 65M %s", g, gg, gg,
	            p1, gd, gd),
	         0);
	CHECK_EQ(scan(gg, &t), 1);
	if (t) {
		char want[80];
		snprintf(want, sizeof(want), "backup at LBA %llu, not the last LBA %llu",
		         (unsigned long long)last, (unsigned long long)last + 2048);
		CHECK(strstr(t->warning, want) != NULL);
		CHECK_EQ(t->n, 4);
	}
	part_table_free(t);
	CHECK_EQ(scan(gd, &t), 1);
	if (t) {
		char want[64];
		snprintf(want, sizeof(want), "using the backup at LBA %llu",
		         (unsigned long long)last);
		CHECK(strstr(t->warning, want) != NULL);
		CHECK_EQ(t->n, 4);
	}
	part_table_free(t);

	/* The backup's CRC broken too: an error naming both. */
	char *p2 = img("gpt-both.img");
	CHECK_EQ(sh("cp %s %s", p1, p2), 0);
	CHECK_EQ(file_rw(p2, &b, 1, (long)(last * 512 + 60), false), 0);
	b ^= 0x40;
	CHECK_EQ(file_rw(p2, &b, 1, (long)(last * 512 + 60), true), 0);
	scan_fails(p2, "GPT: primary header at LBA 1: header CRC; backup header at LBA");

	/* Entry 3 past the disk's end, in both copies, CRCs right. */
	char *pp = img("gpt-past.img");
	CHECK_EQ(sh("cp %s %s", g, pp), 0);
	g_past = last + 10;
	gpt_edit(pp, 512, edit_past_end);
	gpt_edit(pp, (long)(last * 512), edit_past_end);
	scan_fails(pp, "GPT: entry 3 ends past the disk's end");

	/* Entry 3 inside the disk but into the backup's array. */
	char *pu = img("gpt-usable.img");
	CHECK_EQ(sh("cp %s %s", g, pu), 0);
	g_past = last - 1;
	gpt_edit(pu, 512, edit_past_end);
	gpt_edit(pu, (long)(last * 512), edit_past_end);
	scan_fails(pu, "GPT: entry 3 (LBAs");

	char *po = img("gpt-overlap.img");
	CHECK_EQ(sh("cp %s %s", g, po), 0);
	gpt_edit(po, 512, edit_overlap);
	gpt_edit(po, (long)(last * 512), edit_overlap);
	scan_fails(po, "GPT: entries 1 and 2 overlap");

	/* A protective MBR with both headers gone. */
	char *pz = img("gpt-none.img");
	CHECK_EQ(sh("cp %s %s && dd if=/dev/zero of=%s bs=512 seek=1 count=1 conv=notrunc "
	            "status=none && dd if=/dev/zero of=%s bs=512 seek=%llu count=1 "
	            "conv=notrunc status=none",
	            g, pz, pz, pz, (unsigned long long)last),
	         0);
	scan_fails(pz, "protective MBR but no GPT header");

	/* The MBR wiped, the GPT intact: taken, with a warning. */
	char *pm = img("gpt-nombr.img");
	CHECK_EQ(sh("cp %s %s && dd if=/dev/zero of=%s bs=512 count=1 conv=notrunc status=none", g,
	            pm, pm),
	         0);
	CHECK_EQ(scan(pm, &t), 1);
	if (t) {
		CHECK(strstr(t->warning, "no protective MBR") != NULL);
		CHECK_EQ(t->n, 4);
	}
	part_table_free(t);

	/* The MBR wiped and the primary's CRC broken: the backup, both
	 * said.  The MBR and the primary both gone: no table. */
	char *pmb = img("gpt-nombr-prim.img");
	CHECK_EQ(sh("cp %s %s && dd if=/dev/zero of=%s bs=512 count=1 conv=notrunc status=none", p1,
	            pmb, pmb),
	         0);
	CHECK_EQ(scan(pmb, &t), 1);
	if (t) {
		CHECK(strstr(t->warning, "no protective MBR") != NULL);
		CHECK(strstr(t->warning, "using the backup") != NULL);
		CHECK_EQ(t->n, 4);
	}
	part_table_free(t);
	CHECK_EQ(sh("dd if=/dev/zero of=%s bs=512 seek=1 count=1 conv=notrunc status=none", pmb),
	         0);
	CHECK_EQ(scan(pmb, &t), 0);
	part_table_free(t);

	/* No table at all. */
	char *z = img("zero.img");
	CHECK_EQ(sh("truncate -s 8M %s", z), 0);
	CHECK_EQ(scan(z, &t), 0);
	CHECK(t == NULL);
}

/* GPT by sgdisk: types by code, a non-ASCII name, sgdisk's usable range. */
static void test_gpt_sgdisk(void)
{
	char *s = img("sgdisk.img");
	CHECK_EQ(sh("truncate -s 64M %s && sgdisk -n1:2048:+8M -t1:fd00 -c1:raid0 "
	            "-n2:0:+8M -t2:8e00 -c2:'lvm \xc3\xbc' -n3:0:+4M -t3:8200 "
	            "-n5:0:0 -t5:ef00 %s >/dev/null",
	            s, s),
	         0);
	compare_sfdisk(s, "gpt", NULL);

	/* A hybrid MBR (entry 1 mirrored into the MBR beside the 0xee one):
	 * the GPT is what counts, as for sfdisk. */
	char *h = img("hybrid.img");
	CHECK_EQ(sh("cp %s %s && sgdisk -h 1:EE %s >/dev/null 2>&1", s, h, h), 0);
	compare_sfdisk(h, "gpt", "hybrid MBR");
	struct part_table *t;
	CHECK_EQ(scan(s, &t), 1);
	if (t) {
		CHECK_EQ(t->n, 4);
		CHECK(find(t, 5) != NULL && find(t, 4) == NULL); /* a gap in the numbers */
		CHECK(find(t, 3) && strcmp(find(t, 3)->type_name, "Linux swap") == 0);
	}
	part_table_free(t);
}

/* GPT with 4096-byte sectors (fdisk -b 4096; sfdisk 2.38 cannot), checked
 * against fdisk -l's columns. */
static void test_gpt_4k(void)
{
	char *g = img("gpt4k.img"), cmd[512], line[512];
	struct part_table *t;
	unsigned seen = 0;
	FILE *f;

	CHECK_EQ(sh("truncate -s 256M %s && printf 'g\\nn\\n\\n\\n+16M\\n"
	            "t\\nA19D880F-05FC-4D3B-A006-743F0F84911E\\nn\\n\\n\\n+32M\\nn\\n\\n\\n\\n"
	            "x\\nn\\n1\\nraid a\\nr\\nw\\n' | fdisk -b 4096 %s >/dev/null 2>&1",
	            g, g),
	         0);
	CHECK_EQ(scan(g, &t), 1);
	if (!t)
		return;
	CHECK_EQ(t->sector, 4096);
	CHECK(strcmp(t->scheme, "gpt") == 0);
	CHECK(strcmp(t->warning, "") == 0);
	snprintf(cmd, sizeof(cmd),
	         "fdisk -b 4096 -l -o Device,Start,Sectors,Type-UUID,UUID,Name %s; "
	         "fdisk -b 4096 -l %s | sed -n 's/^Disk identifier: /id /p'",
	         g, g);
	f = popen(cmd, "r");
	while (f && fgets(line, sizeof(line), f)) {
		char dev[256], type[64], uuid[64], name[128] = "";
		unsigned long long start, sectors;
		line[strcspn(line, "\n")] = '\0';
		if (strncmp(line, "id ", 3) == 0) {
			CHECK(strcasecmp(line + 3, t->id) == 0);
			seen++;
			continue;
		}
		if (strncmp(line, g, strlen(g)) != 0)
			continue;
		int k = sscanf(line, "%255s %llu %llu %63s %63s %127[^\n]", dev, &start, &sectors,
		               type, uuid, name);
		CHECK(k >= 5);
		const struct part *p = find(t, (unsigned)atoi(dev + strlen(g)));
		CHECK(p != NULL);
		if (!p)
			continue;
		seen++;
		CHECK_EQ(p->start, start * 4096);
		CHECK_EQ(p->size, sectors * 4096);
		CHECK(strcasecmp(p->type, type) == 0);
		CHECK(strcasecmp(p->uuid, uuid) == 0);
		CHECK(strcmp(p->name, name) == 0);
	}
	if (f)
		pclose(f);
	CHECK_EQ(seen, t->n + 1);
	CHECK_EQ(t->n, 3);
	CHECK(find(t, 1) && strcmp(find(t, 1)->name, "raid a") == 0);
	part_table_free(t);
	check_open(g, 2);
}

int main(void)
{
	if (system("command -v sfdisk >/dev/null 2>&1 && command -v sgdisk >/dev/null 2>&1 && "
	           "command -v fdisk >/dev/null 2>&1") != 0) {
		fprintf(stderr, "skip: sfdisk, sgdisk or fdisk not installed (fdisk, gdisk)\n");
		return 77;
	}
	if (!mkdtemp(dir)) {
		fprintf(stderr, "skip: cannot make a scratch directory in /tmp\n");
		return 77;
	}
	test_dos();
	test_gpt_sfdisk();
	test_gpt_sgdisk();
	test_gpt_4k();
	sh("rm -rf %s", dir);
	return check_done();
}
