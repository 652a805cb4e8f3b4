/* raid_check.c — scrubbing: read every copy of every block of a redundant
 * array and compare them (md's "check"), and optionally make them agree
 * (md's "repair": the first live copy is written over the others); on
 * RAID5/6, recompute every stripe's parity from its data and compare
 * (repair rewrites the parity, as md's does).
 *
 * Runs on an array nobody else uses (the command opens the members
 * exclusively), in ranges of whole extents; the copies of an extent are
 * read at once, one per member.  A member that fails to read is reported
 * and left out of that extent's comparison; it is not marked failed (a
 * check may run read-only, and that is the user's decision). */
#include "raid_internal.h"

#include "core/exec.h"
#include "core/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define RAID_CHECK_RANGE (1u << 20)

struct raid_check_read {
	struct raid_array *a;
	const struct raid_loc *loc;
	uint64_t len;
	char **buf;
	int *err;
};

static int raid_check_read_one(void *arg, unsigned c)
{
	struct raid_check_read *x = arg;
	struct raid_member *m = &x->a->m[x->loc[c].role];

	x->err[c] = atomic_load(&m->failed) ? -ENODEV
					     : m->vol->ops->read(m->vol, x->buf[c], x->len,
								 x->loc[c].off);
	return 0;
}

/* Parity levels: stripe by stripe, the parity recomputed from the data
 * and compared (md's check of a RAID5/6); a differing stripe is reported
 * as its whole array range, and repaired by rewriting its parity. */
static int raid_check_parity(struct raid_array *a, bool repair, struct raid_check_report *rep,
			     void (*on_mismatch)(void *ctx, uint64_t off, uint64_t len), void *ctx)
{
	uint64_t row_bytes = (uint64_t)a->g.chunk * (a->n - a->lvl->parity);
	uint64_t rows = a->vol.size / row_bytes;

	for (uint64_t row = 0; row < rows; row++) {
		unsigned differ;
		int r = raid_parity_check_row(a, row, repair, &differ);
		if (r == -ENODEV)
			return err_set(r, "%s: a member is missing or failed: its parity cannot be "
					  "checked", a->vol.name);
		if (r < 0)
			return err_set(r, "%s: stripe %llu: %s", a->vol.name,
				       (unsigned long long)row, strerror(-r));
		rep->checked += row_bytes;
		if (!differ)
			continue;
		rep->mismatched += row_bytes;
		rep->ranges++;
		if (repair)
			rep->repaired += (uint64_t)a->g.chunk * differ;
		if (on_mismatch)
			on_mismatch(ctx, row * row_bytes, row_bytes);
	}
	return repair && rep->repaired ? vol_flush(&a->vol) : 0;
}

int raid_check(struct vol *array, bool repair, struct raid_check_report *rep,
	       void (*on_mismatch)(void *ctx, uint64_t off, uint64_t len), void *ctx)
{
	struct raid_array *a = raid_array_of(array);
	struct raid_loc loc[RAID_MAX_COPIES];
	char *buf[RAID_MAX_COPIES] = { 0 };
	int err[RAID_MAX_COPIES];
	uint32_t bs = array->block_min;
	uint64_t run_off = 0, run_len = 0; /* mismatching blocks not reported yet */
	unsigned nc;
	int r = 0;

	*rep = (struct raid_check_report){ 0 };
	if (!a)
		return err_set(-EINVAL, "%s is not a RAID array", array->name);
	if (a->lvl->parity)
		return raid_check_parity(a, repair, rep, on_mismatch, ctx);
	if (!a->lvl->redundant || a->copies < 2)
		return err_set(-EINVAL, "%s: %s keeps one copy of each block: nothing to compare",
			       array->name, a->lvl->kind);
	r = raid_wb_barrier(a);
	if (r)
		return r;
	for (unsigned c = 0; c < a->copies && c < RAID_MAX_COPIES; c++) {
		if (posix_memalign((void **)&buf[c], 4096, RAID_CHECK_RANGE)) {
			r = -ENOMEM;
			goto out;
		}
	}
	for (uint64_t off = 0; off < array->size;) {
		uint64_t want = array->size - off < RAID_CHECK_RANGE ? array->size - off
								      : RAID_CHECK_RANGE;
		uint64_t n = a->lvl->map(a->priv, &a->g, off, want, loc, &nc);
		struct raid_check_read x = { a, loc, n, buf, err };
		r = exec_parallel(nc, raid_check_read_one, &x);
		if (r < 0)
			goto out;
		/* The reference is the first copy that read. */
		int ref = -1;
		for (unsigned c = 0; c < nc; c++) {
			if (err[c] == -ENODEV)
				continue;
			if (err[c]) {
				rep->read_errors++;
				log_error("%s: member %u (%s) could not read %llu bytes at %llu: %s",
					  array->name, loc[c].role, a->m[loc[c].role].vol->name,
					  (unsigned long long)n, (unsigned long long)loc[c].off,
					  strerror(-err[c]));
				continue;
			}
			if (ref < 0)
				ref = (int)c;
		}
		for (uint64_t b = 0; ref >= 0 && b < n; b += bs) {
			uint64_t l = n - b < bs ? n - b : bs;
			bool differ = false;
			for (unsigned c = 0; c < nc; c++) {
				if ((int)c == ref || err[c] || memcmp(buf[c] + b, buf[ref] + b, l) == 0)
					continue;
				differ = true;
				if (!repair)
					continue;
				struct vol *v = a->m[loc[c].role].vol;
				r = v->ops->write(v, buf[ref] + b, l, loc[c].off + b, 0);
				if (r < 0) {
					err_set(r, "%s: repairing member %u at %llu: %s", array->name,
						loc[c].role, (unsigned long long)(loc[c].off + b),
						strerror(-r));
					goto out;
				}
				rep->repaired += l;
			}
			if (!differ)
				continue;
			rep->mismatched += l;
			if (run_len && run_off + run_len == off + b) {
				run_len += l;
				continue;
			}
			if (run_len && on_mismatch)
				on_mismatch(ctx, run_off, run_len);
			rep->ranges++;
			run_off = off + b;
			run_len = l;
		}
		rep->checked += n;
		off += n;
	}
	if (run_len && on_mismatch)
		on_mismatch(ctx, run_off, run_len);
	if (repair && rep->repaired)
		r = vol_flush(array);
out:
	for (unsigned c = 0; c < RAID_MAX_COPIES; c++)
		free(buf[c]);
	return r;
}
