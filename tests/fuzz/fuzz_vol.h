/* fuzz_vol.h — what the format fuzz targets' in-memory vols share: they
 * stand for a foreign disk opened read-only, so any write, trim or
 * zeroing, and any read that breaks the vol contract (out of range, not
 * in whole blocks), is a finding: contract_broken() aborts with what
 * happened, and fuzz_ro_write / fuzz_ro_trim are the vol ops that do it.
 * struct fuzz_disk is that disk: a fill byte with pieces of the input laid
 * over it; fuzz_ram_new() a writable RAM member for the targets that
 * replay onto an array.  FUZZ_NAME names the target in the message. */
#ifndef URAID_FUZZ_VOL_H
#define URAID_FUZZ_VOL_H

#include "core/vol.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline void contract_broken(const struct vol *v, const char *op, uint64_t len, uint64_t off)
{
	fprintf(stderr, "%s: %s reached %s with off=%llu len=%llu (size %llu, block_min %u)\n",
	        FUZZ_NAME, op, v->name, (unsigned long long)off, (unsigned long long)len,
	        (unsigned long long)v->size, v->block_min);
	abort();
}

static inline int fuzz_ro_write(struct vol *v, const void *buf, uint64_t len, uint64_t off,
                                unsigned flags)
{
	(void)buf;
	(void)flags;
	contract_broken(v, "write (a read-only start)", len, off);
	return -EROFS;
}

static inline int fuzz_ro_trim(struct vol *v, uint64_t len, uint64_t off, unsigned flags)
{
	(void)flags;
	contract_broken(v, "trim (a read-only start)", len, off);
	return -EROFS;
}

/* A piece of a fuzz disk: len bytes at byte off.  data is the target's (it
 * outlives the disk), and the target may change it, to repair a checksum. */
struct fuzz_piece {
	uint64_t off;
	unsigned char *data;
	size_t len;
};

/* An in-memory disk, read-only: every byte is fill but where a piece lies
 * (a later piece over an earlier one).  fail, when set, makes a read fail
 * before its bytes are looked at (a dying member); heap: close frees the
 * disk too (fuzz_disk_init sets it false). */
struct fuzz_disk {
	struct vol vol;
	unsigned char fill;
	struct fuzz_piece *piece;
	unsigned n, cap;
	int (*fail)(const struct fuzz_disk *d, uint64_t len, uint64_t off);
	bool heap;
};

/* The disk's bytes [off, off+len), without the contract check (the
 * harness's own use, e.g. to compute a checksum as the disk holds it). */
static inline void fuzz_disk_bytes(const struct fuzz_disk *d, void *buf, uint64_t len, uint64_t off)
{
	memset(buf, d->fill, len);
	for (unsigned i = 0; i < d->n; i++) {
		uint64_t p0 = d->piece[i].off, p1 = p0 + d->piece[i].len;
		if (off < p1 && off + len > p0) {
			uint64_t from = off > p0 ? off : p0, to = off + len < p1 ? off + len : p1;
			memcpy((unsigned char *)buf + (from - off), d->piece[i].data + (from - p0),
			       to - from);
		}
	}
}

static inline int fuzz_disk_read(struct vol *v, void *buf, uint64_t len, uint64_t off)
{
	struct fuzz_disk *d = container_of(v, struct fuzz_disk, vol);

	if (!vol_range_ok(v, len, off) || off % v->block_min || len % v->block_min)
		contract_broken(v, "read", len, off);
	if (d->fail && d->fail(d, len, off))
		return -EIO;
	fuzz_disk_bytes(d, buf, len, off);
	return 0;
}

static inline int fuzz_disk_flush(struct vol *v)
{
	(void)v;
	return 0;
}

static inline void fuzz_disk_close(struct vol *v)
{
	struct fuzz_disk *d = container_of(v, struct fuzz_disk, vol);

	free(d->piece);
	vol_fini(v);
	if (d->heap)
		free(d);
}

static const struct vol_ops fuzz_disk_ops = {
    .kind = "fuzz",
    .read = fuzz_disk_read,
    .write = fuzz_ro_write,
    .flush = fuzz_disk_flush,
    .trim = fuzz_ro_trim,
    .write_zeroes = fuzz_ro_trim,
    .close = fuzz_disk_close,
};

/* A disk of size bytes in blocks of block_min, all fill, no pieces yet;
 * vol_close() ends it.  Aborts where vol_init refuses: the targets clamp
 * the size first. */
static inline void fuzz_disk_init(struct fuzz_disk *d, const char *name, uint64_t size,
                                  uint32_t block_min, unsigned char fill)
{
	*d = (struct fuzz_disk){.fill = fill};
	if (vol_init(&d->vol, &fuzz_disk_ops, name, size, block_min, VOL_CAP_READONLY) < 0)
		abort();
}

/* Lay len bytes of data at byte off (on top of what is there). */
static inline void fuzz_disk_put(struct fuzz_disk *d, uint64_t off, unsigned char *data, size_t len)
{
	if (d->n == d->cap) {
		unsigned cap = d->cap ? 2 * d->cap : 8;
		struct fuzz_piece *p = realloc(d->piece, cap * sizeof(*p));
		if (!p)
			abort();
		d->piece = p;
		d->cap = cap;
	}
	d->piece[d->n++] = (struct fuzz_piece){.off = off, .data = data, .len = len};
}

/* Read v's start, middle and end, max bytes each at the most (no more than
 * the vol takes in one request, in whole blocks); with verbose, say what
 * each read returned.  What an assembled vol is asked after it opened. */
static inline void fuzz_read_some(struct vol *v, uint64_t max, bool verbose)
{
	uint64_t len = v->size < max ? v->size : max;
	void *buf;

	if (v->block_max && len > v->block_max)
		len = v->block_max;
	len -= len % v->block_min;
	if (!len || posix_memalign(&buf, 4096, len))
		return;
	uint64_t at[3] = {0, v->size / 2 / v->block_min * v->block_min, v->size - len};
	for (int i = 0; i < 3; i++) {
		uint64_t off = at[i] + len > v->size ? v->size - len : at[i];
		int e = vol_read(v, buf, len, off);
		if (verbose)
			fprintf(stderr, "%s:   %s: read %llu at %llu: %d\n", FUZZ_NAME, v->name,
			        (unsigned long long)len, (unsigned long long)off, e);
	}
	free(buf);
}

/* A RAM member of size bytes (512-byte blocks) that takes writes, holding
 * init's first n bytes, zeros after; nothing here trims or zeroes (a
 * finding).  vol_close() frees it. */
struct fuzz_ram {
	struct vol vol;
	unsigned char *b;
};

static inline int fuzz_ram_read(struct vol *v, void *buf, uint64_t len, uint64_t off)
{
	if (!vol_range_ok(v, len, off) || off % v->block_min || len % v->block_min)
		contract_broken(v, "read", len, off);
	memcpy(buf, container_of(v, struct fuzz_ram, vol)->b + off, len);
	return 0;
}

static inline int fuzz_ram_write(struct vol *v, const void *buf, uint64_t len, uint64_t off,
                                 unsigned flags)
{
	(void)flags;
	if (!vol_range_ok(v, len, off) || off % v->block_min || len % v->block_min)
		contract_broken(v, "write", len, off);
	memcpy(container_of(v, struct fuzz_ram, vol)->b + off, buf, len);
	return 0;
}

static inline void fuzz_ram_close(struct vol *v)
{
	struct fuzz_ram *r = container_of(v, struct fuzz_ram, vol);

	free(r->b);
	vol_fini(v);
	free(r);
}

static const struct vol_ops fuzz_ram_ops = {
    .kind = "fuzz-ram",
    .read = fuzz_ram_read,
    .write = fuzz_ram_write,
    .flush = fuzz_disk_flush,
    .trim = fuzz_ro_trim,
    .write_zeroes = fuzz_ro_trim,
    .close = fuzz_ram_close,
};

static inline struct vol *fuzz_ram_new(uint64_t size, const void *init, uint64_t n)
{
	struct fuzz_ram *r = calloc(1, sizeof(*r));

	if (!r || !(r->b = calloc(1, size)) ||
	    vol_init(&r->vol, &fuzz_ram_ops, "ram", size, 512, 0) < 0)
		abort();
	if (init)
		memcpy(r->b, init, n < size ? n : size);
	return &r->vol;
}

#endif
