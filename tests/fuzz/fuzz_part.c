/* fuzz_part.c — libFuzzer target for the partition-table reader
 * (src/disc/part.c): part_scan() over a disk made of the input's
 * sectors, then every partition it finds opened with part_open() and read
 * at its first and last block.
 *
 * Input:
 *   byte 0    flags: bit 0 the disk has 4096-byte blocks (else 512);
 *             bit 1 fix the CRCs of every GPT header found at LBA 1 or
 *             the last LBA (512- and 4096-byte sectors) and of its
 *             entries array, so that mutations get past them
 *   bytes 1-4 le32 disk size in 512-byte sectors (raised to hold the
 *             records, capped at 1 TiB; nothing is allocated for it)
 *   then records, up to 64: le32 where, in 512-byte sectors (bit 31 set:
 *             counted back from the disk's last sector, so a backup GPT
 *             stays at the end whatever the size), then 512 bytes of
 *             that sector (the last record may be short)
 * The disk reads as its records (a later one wins) and zeros elsewhere.
 * tests/fuzz/make_corpus_part.py writes seeds this way from tables that
 * sfdisk, sgdisk and fdisk made.
 *
 * The disk vol checks the vol contract and aborts when it is broken, and
 * on any write: scanning reads only.  Every error must come back as a
 * clean errno with a detail.
 *
 * Build and run: tests/sh/format-fuzz.sh (clang -fsanitize=fuzzer,...). */
#define FUZZ_NAME "fuzz_part"
#include "fuzz_vol.h"

#include "core/log.h"
#include "core/vol.h"
#include "disc/part.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_RECORDS 64
#define FUZZ_DISK_MAX (1ull << 40)
#define FUZZ_FROM_END 0x80000000u

/* The records' bytes, 512 a record (a short last one padded with zeros):
 * the disk's pieces point into it. */
struct records {
	uint8_t data[FUZZ_RECORDS][512];
};

static bool verbose; /* FUZZ_VERBOSE set: say what each input did */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	verbose = getenv("FUZZ_VERBOSE") != NULL;
	log_verbosity = verbose ? LOG_DEBUG : -1;
	return 0;
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

static uint32_t crc32_fuzz(const uint8_t *p, size_t n)
{
	uint32_t c = 0xffffffffu;

	while (n--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320u ^ c >> 1 : c >> 1;
	}
	return ~c;
}

/* Give the GPT header in the record of byte off (if any) the CRCs it
 * should have: its entries array's, then its own. */
static void fix_gpt(struct fuzz_disk *d, uint64_t off)
{
	uint8_t *h = NULL, *e;
	uint64_t bytes, eoff;
	uint32_t hs;

	if (off % 512)
		return;
	for (unsigned i = 0; i < d->n; i++)
		if (d->piece[i].off == off)
			h = d->piece[i].data; /* the last one wins, as in reads */
	if (!h || memcmp(h, "EFI PART", 8) != 0)
		return;
	bytes = (uint64_t)get32(h + 80) * get32(h + 84);
	eoff = get64(h + 72) * (off == 512 || off == d->vol.size - 512 ? 512 : 4096);
	if (bytes <= (1u << 20) && eoff <= d->vol.size && bytes <= d->vol.size - eoff &&
	    (e = malloc(bytes ? bytes : 1)) != NULL) {
		fuzz_disk_bytes(d, e, bytes, eoff);
		put32(h + 88, crc32_fuzz(e, bytes));
		free(e);
	}
	hs = get32(h + 12);
	if (hs >= 20 && hs <= 512) {
		memset(h + 16, 0, 4);
		put32(h + 16, crc32_fuzz(h, hs));
	}
}

/* Read the first and last block of p through part_open. */
static void read_part(struct vol *disk, const struct part *p)
{
	struct vol *s;
	uint8_t buf[4096];
	int r;

	err_clear();
	r = part_open(disk, p, "part", &s);
	if (r < 0) {
		if (!err_detail(r)[0])
			abort();
		return;
	}
	if (s->size != p->size)
		abort();
	if (s->size >= s->block_min && s->block_min <= sizeof(buf)) {
		int a = vol_read(s, buf, s->block_min, 0);
		int b = vol_read(s, buf, s->block_min, s->size - s->block_min);
		if (verbose)
			fprintf(stderr, "fuzz_part:   partition %u: reads %d %d\n", p->number, a,
			        b);
	}
	vol_close(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct part_table *t;
	struct fuzz_disk disk, *d = &disk;
	struct records *rec;
	uint64_t sectors, bytes;
	uint32_t bmin;
	size_t pos = 5;
	unsigned nrec = 0;
	int r;

	if (size < 5)
		return 0;
	rec = calloc(1, sizeof(*rec));
	if (!rec)
		abort();
	bmin = data[0] & 1 ? 4096 : 512;
	sectors = get32(data + 1);
	/* The records' sizes first: "from the end" needs the disk's size. */
	for (size_t p = pos; p + 4 < size && nrec < FUZZ_RECORDS; p += 4 + 512, nrec++) {
		uint32_t w = get32(data + p);
		if (!(w & FUZZ_FROM_END) && w >= sectors)
			sectors = (uint64_t)w + 1;
		else if ((w & FUZZ_FROM_END) && (w & ~FUZZ_FROM_END) >= sectors)
			sectors = (uint64_t)(w & ~FUZZ_FROM_END) + 1;
	}
	bytes = sectors * 512;
	if (bytes > FUZZ_DISK_MAX)
		bytes = FUZZ_DISK_MAX;
	bytes = (bytes + bmin - 1) / bmin * bmin;
	if (bytes < bmin)
		bytes = bmin;
	sectors = bytes / 512;
	fuzz_disk_init(d, "disk", bytes, bmin, 0);
	for (; pos + 4 < size && d->n < FUZZ_RECORDS; pos += 4 + 512) {
		uint32_t w = get32(data + pos);
		size_t len = size - pos - 4 < 512 ? size - pos - 4 : 512;
		uint64_t at = w & FUZZ_FROM_END ? sectors - 1 - (w & ~FUZZ_FROM_END) : w;

		if (at >= sectors)
			continue;
		memcpy(rec->data[d->n], data + pos + 4, len);
		fuzz_disk_put(d, at * 512, rec->data[d->n], 512);
	}
	if (data[0] & 2) {
		fix_gpt(d, 512);
		fix_gpt(d, 4096);
		fix_gpt(d, bytes - 512);
		if (bytes >= 4096)
			fix_gpt(d, bytes - 4096);
	}

	err_clear();
	r = part_scan(&d->vol, &t);
	if (verbose)
		fprintf(stderr, "fuzz_part: %llu bytes, %u records: %d%s%s\n",
		        (unsigned long long)bytes, d->n, r, r < 0 ? ": " : "",
		        r < 0 ? err_detail(r) : "");
	if (r < 0 && !err_detail(r)[0])
		abort();
	if (r == 1) {
		if (verbose && t->warning[0])
			fprintf(stderr, "fuzz_part: warning: %s\n", t->warning);
		for (unsigned i = 0; i < t->n; i++) {
			const struct part *p = &t->parts[i];
			/* What part.h promises of a table it hands out. */
			if (p->start > bytes || p->size > bytes - p->start || !p->size ||
			    (i && p->number <= t->parts[i - 1].number) ||
			    strnlen(p->name, sizeof(p->name)) == sizeof(p->name))
				abort();
			if (verbose)
				fprintf(stderr, "fuzz_part:   %s %u: %llu+%llu %s \"%s\"\n",
				        t->scheme, p->number, (unsigned long long)p->start,
				        (unsigned long long)p->size, p->type, p->name);
			read_part(&d->vol, p);
		}
		part_table_free(t);
	}
	vol_close(&d->vol);
	free(rec);
	return 0;
}
