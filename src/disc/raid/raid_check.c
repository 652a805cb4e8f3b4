/* raid_check.c — scrubbing: read every copy of every block of a redundant
 * array and compare them (md's "check"), and optionally make them agree
 * (md's "repair": the first live copy is written over the others); on
 * RAID5/6, recompute every stripe's parity from its data and compare
 * (repair rewrites the parity, as md's does).
 *
 * It runs offline (`uraid check`, the members opened for it alone) or on
 * an array being served (`uraid serve`'s check thread), in ranges of
 * whole extents; the copies of an extent are read at once, one per
 * member.  Beside client writes, a mirror's extent is compared inside
 * the recovery barrier's window (raid_barrier.c: no write in flight there, none
 * let in until the window moves on), and a parity stripe under its
 * stripe lock.  A member that fails to read is reported and left out of
 * that extent's comparison; it is not marked failed (a check may run
 * read-only, and that is the user's decision). */
#include "raid_types.h"

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

/* One member transfer of the check.  Counted in the member's inflight
 * before its state is looked at, so that a member failed and taken away
 * meanwhile (raid_detach_member waits for inflight) is either seen failed
 * or still there: -ENODEV for a failed one. */
static int raid_check_xfer(struct raid_member *m, bool write, char *buf, uint64_t len, uint64_t off)
{
	int r;

	atomic_fetch_add(&m->inflight, 1);
	if (atomic_load(&m->failed))
		r = -ENODEV;
	else if (write)
		r = raid_member_write(m, buf, len, off, 0, UINT64_MAX);
	else
		r = raid_member_read(m, buf, len, off, UINT64_MAX);
	atomic_fetch_sub(&m->inflight, 1);
	return r;
}

static int raid_check_read_one(void *arg, unsigned c)
{
	struct raid_check_read *x = arg;

	x->err[c] =
	    raid_check_xfer(&x->a->m[x->loc[c].role], false, x->buf[c], x->len, x->loc[c].off);
	return 0;
}

static void check_mismatch(const struct raid_check_cb *cb, uint64_t off, uint64_t len)
{
	if (cb && cb->on_mismatch)
		cb->on_mismatch(cb->ctx, off, len);
}

static int check_progress(const struct raid_check_cb *cb, uint64_t done)
{
	return cb && cb->progress && cb->progress(cb->ctx, done) ? -EINTR : 0;
}

/* Parity levels: stripe by stripe, the parity recomputed from the data
 * and compared (md's check of a RAID5/6); a differing stripe is reported
 * as its whole array range, and repaired by rewriting its parity. */
static int raid_check_rows(struct raid_array *a, bool repair, struct raid_check_report *rep,
                           const struct raid_check_cb *cb)
{
	uint64_t row_bytes = (uint64_t)a->g.chunk * (a->n - a->lvl->md.parity);
	uint64_t rows = a->vol.size / row_bytes;
	int r = 0;

	for (uint64_t row = 0; row < rows && r == 0; row++) {
		unsigned differ;
		r = a->lvl->check_row(a, row, repair, &differ);
		if (r == -ENODEV)
			return err_set(r,
			               "%s: a member is missing or failed: its parity cannot be "
			               "checked",
			               a->vol.name);
		if (r < 0)
			return err_set(r, "%s: stripe %llu: %s", a->vol.name,
			               (unsigned long long)row, strerror(-r));
		rep->checked += row_bytes;
		if (differ) {
			rep->mismatched += row_bytes;
			rep->ranges++;
			if (repair)
				rep->repaired += (uint64_t)a->g.chunk * differ;
			check_mismatch(cb, row * row_bytes, row_bytes);
		}
		r = check_progress(cb, rep->checked);
	}
	if (r == 0 && repair && rep->repaired)
		r = vol_flush(&a->vol);
	return r;
}

/* The member offsets an extent's copies lie at: the scrub's window. */
static void check_window(struct raid_array *a, const struct raid_loc *loc, unsigned nc, uint64_t n)
{
	uint64_t lo = UINT64_MAX, hi = 0;

	for (unsigned c = 0; c < nc; c++) {
		lo = loc[c].off < lo ? loc[c].off : lo;
		hi = loc[c].off + n > hi ? loc[c].off + n : hi;
	}
	raid_rec_window(a, lo, hi, 0);
}

/* Mirror levels: one extent, every copy read and compared block by block,
 * the differing copies rewritten from the reference when repairing.  *run
 * is the run of differing blocks not reported yet. */
static int check_extent(struct raid_array *a, bool repair, uint64_t off, uint64_t n,
                        const struct raid_loc *loc, unsigned nc, char **buf,
                        struct raid_check_report *rep, uint64_t run[2],
                        const struct raid_check_cb *cb)
{
	uint32_t bs = a->vol.block_min;
	int err[RAID_MAX_COPIES];
	struct raid_check_read x = {a, loc, n, buf, err};
	int r = exec_parallel(nc, raid_check_read_one, &x);

	if (r < 0)
		return r;
	/* The reference is the first copy that read. */
	int ref = -1;
	for (unsigned c = 0; c < nc; c++) {
		if (err[c] == -ENODEV)
			continue;
		if (err[c]) {
			rep->read_errors++;
			log_error("%s: member %u could not read %llu bytes at %llu: %s",
			          a->vol.name, loc[c].role, (unsigned long long)n,
			          (unsigned long long)loc[c].off, strerror(-err[c]));
			continue;
		}
		if (ref < 0)
			ref = (int)c;
	}
	bool repaired = false;
	for (uint64_t b = 0; ref >= 0 && b < n; b += bs) {
		uint64_t l = n - b < bs ? n - b : bs;
		bool differ = false;
		for (unsigned c = 0; c < nc; c++) {
			if ((int)c == ref || err[c] || memcmp(buf[c] + b, buf[ref] + b, l) == 0)
				continue;
			differ = true;
			if (!repair)
				continue;
			r = raid_check_xfer(&a->m[loc[c].role], true, buf[ref] + b, l,
			                    loc[c].off + b);
			if (r == -ENODEV)
				continue; /* failed meanwhile: nothing to repair */
			if (r < 0)
				return err_set(r, "%s: repairing member %u at %llu: %s",
				               a->vol.name, loc[c].role,
				               (unsigned long long)(loc[c].off + b), strerror(-r));
			rep->repaired += l;
			repaired = true;
		}
		if (!differ)
			continue;
		rep->mismatched += l;
		if (run[1] && run[0] + run[1] == off + b) {
			run[1] += l;
			continue;
		}
		if (run[1])
			check_mismatch(cb, run[0], run[1]);
		rep->ranges++;
		run[0] = off + b;
		run[1] = l;
	}
	/* Read-ahead may hold what a repaired copy said before. */
	if (repaired)
		raid_ra_invalidate(a, n, off);
	rep->checked += n;
	return 0;
}

int raid_check_run(struct raid_array *a, bool repair, struct raid_check_report *rep,
                   const struct raid_check_cb *cb)
{
	struct vol *array = &a->vol;
	struct raid_loc loc[RAID_MAX_COPIES];
	char *buf[RAID_MAX_COPIES] = {0};
	uint64_t run[2] = {0, 0}; /* mismatching blocks not reported yet */
	unsigned nc;
	int r = 0;

	*rep = (struct raid_check_report){0};
	if (!a->lvl->check_row && (!a->lvl->md.redundant || a->copies < 2))
		return err_set(-EINVAL, "%s: %s keeps one copy of each block: nothing to compare",
		               array->name, a->lvl->md.name);
	r = raid_scrub_begin(a);
	if (r < 0)
		return r;
	if (a->lvl->check_row) {
		r = raid_check_rows(a, repair, rep, cb);
		goto out;
	}
	for (unsigned c = 0; c < a->copies && c < RAID_MAX_COPIES; c++) {
		if (!(buf[c] = vol_buf_alloc(RAID_CHECK_RANGE))) {
			r = -ENOMEM;
			goto out;
		}
	}
	for (uint64_t off = 0; off < array->size && r == 0;) {
		uint64_t want =
		    array->size - off < RAID_CHECK_RANGE ? array->size - off : RAID_CHECK_RANGE;
		uint64_t n = a->lvl->map(a->priv, &a->g, off, want, loc, &nc);
		check_window(a, loc, nc, n);
		r = check_extent(a, repair, off, n, loc, nc, buf, rep, run, cb);
		off += n;
		if (r == 0)
			r = check_progress(cb, rep->checked);
	}
	if (run[1])
		check_mismatch(cb, run[0], run[1]);
	if (r == 0 && repair && rep->repaired)
		r = vol_flush(array);
out:
	if (r < 0 && r != -EINTR && atomic_load(&a->broken))
		r = err_set(-EIO,
		            "%s: the array has failed (it lost more members than %s can "
		            "lose): the %s stops",
		            array->name, a->lvl->md.name, repair ? "repair" : "check");
	raid_scrub_end(a);
	for (unsigned c = 0; c < RAID_MAX_COPIES; c++)
		free(buf[c]);
	return r;
}
