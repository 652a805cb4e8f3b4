/* raid.c — the RAID engine's front: raid_open() builds an array from a
 * level's descriptor (raid_levels.c) and its members, and the array's
 * vol_ops serve a client's requests through the layers below
 * (raid_types.h maps them): read-ahead (raid_ra.c) or the members
 * (raid_map.c) for a read; write-behind (raid_wb.c), the level's write
 * hook (parity levels: raid_parity.c) or every live copy (raid_map.c) for
 * a write, inside the recovery barrier (raid_barrier.c).  raid.h's and
 * raid_rebuild.h's calls on a struct vol are answered here, and handed to
 * the file that does the work (raid_recover.c, raid_rebuild.c,
 * raid_check.c, the stages).
 *
 * Failure: on a redundant level an I/O error from a member marks it failed
 * (once, reported through raid_events) unless that would lose data, and
 * the request is served from the other copies; the client sees no error as
 * long as every block was read from, or written to, at least one copy.  On
 * RAID0 and linear the error goes back to the client for that request.
 * A failure beyond what the level can lose fails the array (md's
 * MD_BROKEN, raid_member.c): from then on every write, trim, zeroing and
 * flush gets EIO here, and a read whatever the members still hold (lost
 * blocks: EIO).
 *
 * Sequential streams on slow members are read ahead by per-member lanes
 * (raid_ra.c), and written behind by them (raid_wb.c, on parity levels too,
 * in whole stripes), so that one reader or writer with one request in
 * flight gets the bandwidth of every disk. */
#include "raid_types.h"

#include "core/exec.h"
#include "core/log.h"

#include "raid_rebuild.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static struct raid_array *to_raid(struct vol *v)
{
	return container_of(v, struct raid_array, vol);
}

static const struct vol_ops raid_ops;

/* The array behind v, or NULL if v is not one. */
static struct raid_array *raid_array_of(struct vol *v)
{
	return v->ops == &raid_ops ? to_raid(v) : NULL;
}

int raid_member_stats(struct vol *array, unsigned role, struct raid_io_stats *out)
{
	struct raid_array *a = raid_array_of(array);

	if (!a) {
		memset(out, 0, sizeof(*out));
		return -EINVAL;
	}
	return raid_array_member_stats(a, role, out);
}

int raid_set_write_mostly(struct vol *array, unsigned role, bool on)
{
	struct raid_array *a = raid_array_of(array);

	if (!a || role >= a->n)
		return -EINVAL;
	atomic_store(&a->m[role].write_mostly, on);
	return 0;
}

int raid_set_write_behind(struct vol *array, unsigned max)
{
	struct raid_array *a = raid_array_of(array);
	return a ? raid_behind_set_max(a, max) : -EINVAL;
}

int raid_write_behind_stats(struct vol *array, unsigned *now, uint64_t *total)
{
	struct raid_array *a = raid_array_of(array);

	if (!a)
		return -EINVAL;
	raid_behind_stats(a, now, total);
	return 0;
}

int raid_fail_member(struct vol *array, unsigned role)
{
	struct raid_array *a = to_raid(array);

	if (array->ops != &raid_ops)
		return err_set(-EINVAL, "%s is not a RAID array", array->name);
	if (role >= a->n)
		return err_set(-EINVAL, "%s: no role %u", array->name, role);
	if (atomic_load(&a->m[role].recovering)) {
		raid_rec_target_failed(a, role, -EIO);
		return 0;
	}
	int r = raid_member_fail(a, role, -EIO, true);
	if (r < 0)
		return err_set(r, "%s: failing member %u would lose data", array->name, role);
	return 0;
}

bool raid_failed(struct vol *array)
{
	struct raid_array *a = raid_array_of(array);
	return a && atomic_load(&a->broken);
}

int raid_detach_member(struct vol *array, struct vol *member)
{
	struct raid_array *a = raid_array_of(array);
	int role = -1, r = -ENOENT;

	if (!a || !member)
		return -EINVAL;
	/* Staged writes were planned against the members of their time. */
	raid_wb_barrier(a);
	pthread_mutex_lock(&a->fail_lock);
	for (unsigned i = 0; i < a->n; i++) {
		if (a->m[i].vol != member)
			continue;
		if (!atomic_load(&a->m[i].failed) || atomic_load(&a->m[i].recovering)) {
			pthread_mutex_unlock(&a->fail_lock);
			return -EBUSY;
		}
		role = (int)i;
	}
	for (unsigned i = 0; role < 0 && i < a->nretired; i++) {
		if (a->retired[i] != member)
			continue;
		a->retired[i] = a->retired[--a->nretired];
		r = 0;
		break;
	}
	pthread_mutex_unlock(&a->fail_lock);
	if (role >= 0) {
		/* Failed, so nothing picks it any more; what was picked before
		 * (a read-ahead part, a rebuild's read) counts in inflight. */
		for (int t = 0; atomic_load(&a->m[role].inflight) > 0; t++) {
			if (t == 10000)
				return -EBUSY; /* hung in a request: left as it is */
			usleep(1000);
		}
		/* Meanwhile a recovery may have begun on the role, retiring it. */
		pthread_mutex_lock(&a->fail_lock);
		if (a->m[role].vol == member) {
			a->m[role].vol = NULL;
			r = 0;
		}
		for (unsigned i = 0; r < 0 && i < a->nretired; i++) {
			if (a->retired[i] != member)
				continue;
			a->retired[i] = a->retired[--a->nretired];
			r = 0;
		}
		pthread_mutex_unlock(&a->fail_lock);
	}
	if (r == 0)
		vol_close(member);
	return r;
}

int raid_swap_member(struct vol *array, unsigned role, struct vol *old, struct vol *nv)
{
	struct raid_array *a = raid_array_of(array);
	int r = 0;

	if (!a || role >= a->n || !nv)
		return -EINVAL;
	/* Staged writes were planned against the members of their time. */
	raid_wb_barrier(a);
	pthread_mutex_lock(&a->fail_lock);
	if (a->m[role].vol != old || atomic_load(&a->m[role].failed) ||
	    atomic_load(&a->m[role].recovering))
		r = -EBUSY;
	else
		a->m[role].vol = nv;
	pthread_mutex_unlock(&a->fail_lock);
	return r;
}

/* A change refused because the array has failed (md_submit_bio's
 * MD_BROKEN rule): -EIO, with the reason for whoever prints it. */
static int raid_broken_err(struct raid_array *a)
{
	return err_set(-EIO, "%s: the array has failed (it lost more members than %s can lose)",
	               a->vol.name, a->lvl->md.name);
}

static int raid_read(struct vol *v, void *buf, uint64_t len, uint64_t off)
{
	struct raid_array *a = to_raid(v);

	raid_wb_wait_range(a, len, off);
	atomic_fetch_add(&a->reads_inflight, len);
	int r = raid_ra_read(a, buf, len, off);

	if (r == -EAGAIN)
		r = raid_read_members(a, buf, len, off);
	atomic_fetch_sub(&a->reads_inflight, len);
	return r;
}

/* After a write registered with the barrier: the parity rows it touched
 * below the recovery point are rebuilt onto the targets before it leaves
 * the barrier. */
static int raid_leave(struct raid_array *a, struct raid_rec_io *io, bool reg, int r)
{
	if (reg)
		raid_rebuild_written(a, io);
	r = raid_rec_leave(a, io, reg, r);
	if (r == 0)
		raid_fail_settle(a);
	/* A change that ends after the array failed is not acknowledged,
	 * whatever it reached (md fails every stripe once has_failed). */
	if (r == 0 && atomic_load(&a->broken))
		r = raid_broken_err(a);
	return r;
}

/* Write, trim or zero on the members, read-ahead of the range dropped
 * before and after (a write may race with a read-ahead of it). */
static int raid_change(struct raid_array *a, enum raid_op op, const char *buf, uint64_t len,
                       uint64_t off, unsigned flags)
{
	int r;

	raid_ra_invalidate(a, len, off);
	if (op == RAID_WRITE && a->lvl->write) {
		r = a->lvl->write(a, buf, len, off, flags);
		raid_wb_direct_done(a);
	} else {
		r = raid_map_modify(a, op, buf, len, off, flags);
	}
	raid_ra_invalidate(a, len, off);
	return r;
}

static int raid_write(struct vol *v, const void *buf, uint64_t len, uint64_t off, unsigned flags)
{
	struct raid_array *a = to_raid(v);
	struct raid_rec_io io;

	if (atomic_load(&a->broken))
		return raid_broken_err(a); /* md_submit_bio: no write to an MD_BROKEN array */
	bool reg = raid_rec_enter(a, &io, len, off);
	int r = raid_wb_write(a, buf, len, off, flags);

	if (r == -EAGAIN)
		r = raid_change(a, RAID_WRITE, buf, len, off, flags);
	return raid_leave(a, &io, reg, r);
}

static int raid_trim(struct vol *v, uint64_t len, uint64_t off, unsigned flags)
{
	struct raid_array *a = to_raid(v);
	int r = atomic_load(&a->broken) ? raid_broken_err(a) : raid_wb_barrier(a);

	if (a->lvl->caps_off & VOL_CAP_TRIM)
		return -ENOTSUP; /* a trimmed chunk would no longer match its parity */
	if (r)
		return r;
	struct raid_rec_io io;
	bool reg = raid_rec_enter(a, &io, len, off);
	r = raid_change(a, RAID_TRIM, NULL, len, off, flags);
	return raid_leave(a, &io, reg, r);
}

static int raid_write_zeroes(struct vol *v, uint64_t len, uint64_t off, unsigned flags)
{
	struct raid_array *a = to_raid(v);
	int r = atomic_load(&a->broken) ? raid_broken_err(a) : raid_wb_barrier(a);

	if (r)
		return r;
	if (a->lvl->caps_off & VOL_CAP_ZEROES) /* zeros, parity and all (raid_write registers) */
		return flags & VOL_FAST_ZERO ? -ENOTSUP
		                             : vol_write_zeroes_by_writing(v, len, off, flags);
	struct raid_rec_io io;
	bool reg = raid_rec_enter(a, &io, len, off);
	/* A recovering member that cannot zero fast: fail before any
	 * member is zeroed (the client writes zeros instead). */
	for (unsigned i = 0; reg && (flags & VOL_FAST_ZERO) && i < a->n; i++)
		if (atomic_load(&a->m[i].recovering) && !(a->m[i].vol->caps & VOL_CAP_FAST_ZERO))
			return raid_leave(a, &io, reg, -ENOTSUP);
	r = raid_change(a, RAID_ZERO, NULL, len, off, flags);
	return raid_leave(a, &io, reg, r);
}

/* ---- raid.h's and raid_rebuild.h's calls on a struct vol ---- */

int raid_set_readahead(struct vol *array, int mode)
{
	struct raid_array *a = raid_array_of(array);
	return a ? raid_ra_set_mode(a, mode) : -EINVAL;
}

int raid_set_writebehind(struct vol *array, int mode)
{
	struct raid_array *a = raid_array_of(array);
	return a ? raid_wb_set_mode(a, mode) : -EINVAL;
}

int raid_drain_behind(struct vol *array)
{
	struct raid_array *a = raid_array_of(array);
	return a ? raid_wb_barrier(a) : -EINVAL;
}

int raid_set_log(struct vol *array, const struct raid_log_ops *ops)
{
	struct raid_array *a = raid_array_of(array);

	if (!a || !a->lvl->md.parity)
		return -EINVAL;
	raid_wb_set_log(a, ops);
	return 0;
}

int raid_log_locate(struct vol *array, uint64_t aoff, unsigned *role, uint64_t *moff, int *p,
                    int *q)
{
	struct raid_array *a = raid_array_of(array);
	struct raid_loc loc[RAID_MAX_COPIES];
	struct raid_stripe st; /* 4 KiB on the stack: no allocation a page replayed */
	unsigned nc;

	if (!a || !a->lvl->md.parity || !a->lvl->stripe || aoff >= array->size)
		return -EINVAL;
	a->lvl->map(a->priv, &a->g, aoff, 1, loc, &nc);
	a->lvl->stripe(a->priv, &a->g, aoff, &st);
	*role = loc[0].role;
	*moff = loc[0].off;
	*p = st.p;
	*q = st.q;
	return 0;
}

void raid_wb_counts(struct vol *array, uint64_t *whole, uint64_t *partial)
{
	struct raid_array *a = raid_array_of(array);

	*whole = *partial = 0;
	if (a)
		raid_wb_counts_of(a, whole, partial);
}

int raid_check(struct vol *array, bool repair, struct raid_check_report *rep,
               const struct raid_check_cb *cb)
{
	struct raid_array *a = raid_array_of(array);

	if (!a) {
		*rep = (struct raid_check_report){0};
		return err_set(-EINVAL, "%s is not a RAID array", array->name);
	}
	return raid_check_run(a, repair, rep, cb);
}

int raid_rebuild(struct vol *array, struct vol *const *targets, uint64_t from, uint64_t to,
                 raid_rebuild_progress_fn progress, void *ctx)
{
	struct raid_array *a = raid_array_of(array);

	if (!a)
		return err_set(-EINVAL, "%s is not a RAID array", array->name);
	return raid_rebuild_run(a, targets, from, to, false, progress, ctx);
}

int raid_resync(struct vol *array, struct vol *const *targets, uint64_t from, uint64_t to,
                raid_rebuild_progress_fn progress, void *ctx)
{
	struct raid_array *a = raid_array_of(array);

	if (!a)
		return err_set(-EINVAL, "%s is not a RAID array", array->name);
	return raid_rebuild_run(a, targets, from, to, true, progress, ctx);
}

int raid_role_extents(struct vol *array, unsigned role, uint64_t off, uint64_t len,
                      int (*fn)(void *ctx, uint64_t moff, uint64_t mlen), void *ctx)
{
	struct raid_array *a = raid_array_of(array);
	struct raid_loc loc[RAID_MAX_COPIES];
	unsigned nc;
	int r = 0;

	if (!a || role >= a->n)
		return -EINVAL;
	if (off >= a->vol.size)
		return 0;
	if (len > a->vol.size - off)
		len = a->vol.size - off;
	while (len > 0 && r == 0) {
		uint64_t n = a->lvl->map(a->priv, &a->g, off, len, loc, &nc);
		for (unsigned c = 0; c < nc && r == 0; c++)
			if (loc[c].role == role)
				r = fn(ctx, loc[c].off, n);
		off += n;
		len -= n;
	}
	return r;
}

uint64_t raid_rebuild_piece(struct vol *array)
{
	return raid_rebuild_piece_of(raid_array_of(array));
}

int raid_recover_begin(struct vol *array, unsigned role, struct vol *target, uint64_t from)
{
	struct raid_array *a = raid_array_of(array);

	if (!a)
		return err_set(-EINVAL, "%s is not a RAID array", array->name);
	return raid_recovery_begin(a, role, target, from);
}

int raid_recover_finish(struct vol *array, unsigned role)
{
	struct raid_array *a = raid_array_of(array);
	return a ? raid_recovery_end(a, role, true) : -EINVAL;
}

void raid_recover_abort(struct vol *array, unsigned role)
{
	struct raid_array *a = raid_array_of(array);
	if (a)
		raid_recovery_end(a, role, false);
}

int raid_recover_error(struct vol *array, unsigned role)
{
	struct raid_array *a = raid_array_of(array);
	return a && role < a->n ? atomic_load(&a->m[role].rec_err) : 0;
}

struct raid_flush {
	struct raid_array *a;
	unsigned *roles;
	int *err;
};

static int raid_flush_one(void *arg, unsigned i)
{
	struct raid_flush *f = arg;
	f->err[i] = vol_flush(f->a->m[f->roles[i]].vol);
	return 0;
}

/* Flush every live member at once (what write-behind holds not waited
 * for: raid_flush does that first). */
static int raid_flush_live(struct raid_array *a)
{
	struct raid_flush f = {.a = a};
	unsigned n = 0;
	int r = -ENOMEM;

	f.roles = malloc(a->n * sizeof(*f.roles));
	f.err = calloc(a->n, sizeof(*f.err));
	if (!f.roles || !f.err)
		goto out;
	/* Recovering members too: what a client flushed below their
	 * recovery point must be durable there as well. */
	for (unsigned i = 0; i < a->n; i++)
		if (!atomic_load(&a->m[i].failed) || atomic_load(&a->m[i].recovering))
			f.roles[n++] = i;
	r = exec_parallel(n, raid_flush_one, &f);
	for (unsigned i = 0; i < n && r == 0; i++) {
		if (!f.err[i])
			continue;
		if (atomic_load(&a->m[f.roles[i]].recovering))
			raid_rec_target_failed(a, f.roles[i], f.err[i]);
		else if (raid_err_is_request(f.err[i]))
			r = f.err[i];
		else if (raid_member_fail(a, f.roles[i], f.err[i], false) < 0)
			r = f.err[i];
	}
	if (r == 0) /* members it skipped may be failing right now */
		raid_fail_settle(a);
	if (r == 0 && atomic_load(&a->broken))
		r = raid_broken_err(a); /* a flush is a write to md_submit_bio */
out:
	free(f.roles);
	free(f.err);
	return r;
}

static int raid_flush(struct vol *v)
{
	struct raid_array *a = to_raid(v);
	int r = raid_wb_barrier(a);

	if (r)
		return r;
	raid_behind_drain(a); /* md does not wait for them here; this does */
	return raid_flush_live(a);
}

int raid_flush_members(struct vol *array)
{
	struct raid_array *a = raid_array_of(array);
	return a ? raid_flush_live(a) : -EINVAL;
}

static void raid_close(struct vol *v)
{
	struct raid_array *a = to_raid(v);

	raid_wb_destroy(a);
	raid_behind_destroy(a); /* after what raid_wb held was written */
	raid_ra_destroy(a);
	for (unsigned i = 0; i < a->n; i++)
		vol_close(a->m[i].vol);
	for (unsigned i = 0; i < a->nretired; i++)
		vol_close(a->retired[i]);
	free(a->retired);
	a->lvl->free(a->priv);
	pthread_mutex_destroy(&a->fail_lock);
	pthread_cond_destroy(&a->fail_told);
	pthread_mutex_destroy(&a->rec.lock);
	pthread_cond_destroy(&a->rec.cond);
	if (a->lvl->stop)
		a->lvl->stop(a);
	raid_stats_free(a);
	free(a->m);
	vol_fini(v);
	free(a);
}

/* A member's view, its pieces moved back to the array's offsets. */
struct raid_view {
	vol_view_fn fn;
	void *arg;
	uint64_t aoff, moff; /* the extent's start, on the array and the member */
};

static int raid_view_piece(void *arg, const void *src, uint64_t len, uint64_t off)
{
	struct raid_view *rv = arg;
	return rv->fn(rv->arg, src, len, rv->aoff + (off - rv->moff));
}

/* The view of RAID0/1/10 over plain stores (VOL_CAP_VIEW; see raid_open):
 * extent by extent, a live copy's own view, the copies taken in turn from
 * view to view.  A view that faults (-EIO) fails nothing: the caller reads
 * instead, and the read path fails the member over as for any error.
 * Disk models and block devices show no view, so read-ahead and read
 * balancing stay where they matter; over files on a disk the crypt layer
 * finds the view slow and reads instead (crypt.c times its child). */
static int raid_view(struct vol *v, uint64_t len, uint64_t off, vol_view_fn fn, void *arg)
{
	struct raid_array *a = to_raid(v);
	struct raid_loc loc[RAID_MAX_COPIES];
	unsigned turn = atomic_fetch_add_explicit(&a->view_next, 1, memory_order_relaxed);
	unsigned nc;
	int r = 0;

	raid_wb_wait_range(a, len, off);
	while (len > 0 && r == 0) {
		uint64_t n = a->lvl->map(a->priv, &a->g, off, len, loc, &nc);
		int pick = -1;
		for (unsigned c = 0; c < nc && pick < 0; c++) {
			unsigned k = (turn + c) % nc;
			if (!atomic_load(&a->m[loc[k].role].failed) &&
			    !raid_read_avoid(a, loc, nc, k, 0))
				pick = (int)k;
		}
		if (pick < 0)
			return -EIO;
		struct raid_view rv = {fn, arg, off, loc[pick].off};
		struct raid_member *m = &a->m[loc[pick].role];
		raid_behind_before_read(m);
		uint64_t t0 = raid_io_begin(m);
		r = vol_view(m->vol, n, loc[pick].off, raid_view_piece, &rv);
		raid_io_end(m, false, n, t0, r);
		off += n;
		len -= n;
	}
	return r;
}

/* The array's extents from its members': each extent the level maps is
 * zeros (a hole) only as far as every live copy of it is, so a client that
 * skips it reads what any copy would give; data whose member is gone
 * (rebuilt from parity on reads) counts as data.  Write-behind is written
 * out first: the members do not hold its pieces yet. */
static int raid_alloc_extents(struct vol *v, uint64_t len, uint64_t off, vol_extent_fn fn,
                              void *arg)
{
	struct raid_array *a = to_raid(v);
	struct raid_loc loc[RAID_MAX_COPIES];
	unsigned nc;
	int r = raid_wb_barrier(a);

	while (r == 0 && len > 0) {
		uint64_t n = a->lvl->map(a->priv, &a->g, off, len, loc, &nc);
		uint64_t run = n;
		unsigned flags = VOL_EXTENT_HOLE | VOL_EXTENT_ZERO;
		bool live = false;

		for (unsigned c = 0; c < nc && r == 0; c++) {
			struct raid_member *m = &a->m[loc[c].role];
			uint64_t got;
			unsigned f;

			if (!m->vol || atomic_load(&m->failed))
				continue;
			r = vol_extent_first(m->vol, n, loc[c].off, &got, &f);
			live = true;
			run = got < run ? got : run;
			flags &= f;
		}
		if (r < 0)
			break;
		if (!live) {
			run = n;
			flags = 0;
		}
		r = fn(arg, run, flags);
		off += run;
		len -= run;
	}
	return r;
}

static const struct vol_ops raid_ops = {
    .kind = "raid",
    .read = raid_read,
    .write = raid_write,
    .flush = raid_flush,
    .trim = raid_trim,
    .write_zeroes = raid_write_zeroes,
    .close = raid_close,
    .view = raid_view,
    .extents = raid_alloc_extents,
};

uint64_t raid_array_size(const struct raid_geom *g, const uint64_t *member_sizes)
{
	const struct raid_level *lvl = raid_level_of(g->level);
	void *priv = NULL;
	uint64_t size = 0;
	unsigned copies;

	if (!lvl || g->raid_disks == 0 || g->raid_disks > RAID_MAX_DISKS)
		return 0;
	if (lvl->setup(g, member_sizes, &priv, &size, &copies) < 0)
		return 0;
	lvl->free(priv);
	return size;
}

/* Capabilities of the array: what every present member can do, with a
 * volatile cache if any member has one. */
static unsigned raid_caps(struct vol **members, unsigned n)
{
	const unsigned all =
	    VOL_CAP_TRIM | VOL_CAP_ZEROES | VOL_CAP_FUA | VOL_CAP_MULTI_CONN | VOL_CAP_FAST_ZERO;
	unsigned caps = all;

	for (unsigned i = 0; i < n; i++) {
		if (!members[i])
			continue;
		caps &= members[i]->caps | ~all;
		caps |= members[i]->caps & (VOL_CAP_READONLY | VOL_CAP_FLUSH);
	}
	return caps;
}

int raid_open(const struct raid_geom *g, struct vol **members, const struct raid_events *ev,
              const char *name, struct vol **out)
{
	const struct raid_level *lvl = raid_level_of(g->level);
	struct raid_array *a = NULL;
	uint64_t *sizes = NULL, size = 0;
	uint32_t block_min = 512, block_max = UINT32_MAX;
	unsigned missing = 0;
	int r;

	if (!lvl)
		return err_set(-EINVAL, "%s: RAID level %d is not supported", name, g->level);
	if (g->raid_disks == 0 || g->raid_disks > RAID_MAX_DISKS)
		return err_set(-EINVAL, "%s: %u disks is not a valid array", name, g->raid_disks);
	sizes = calloc(g->raid_disks, sizeof(*sizes));
	a = calloc(1, sizeof(*a));
	if (!sizes || !a) {
		r = -ENOMEM;
		goto out;
	}
	for (unsigned i = 0; i < g->raid_disks; i++) {
		if (!members[i]) {
			missing++;
			continue;
		}
		sizes[i] = members[i]->size;
		if (members[i]->block_min > block_min)
			block_min = members[i]->block_min;
		if (members[i]->block_max < block_max)
			block_max = members[i]->block_max;
	}
	if (missing && !lvl->md.redundant) {
		r = err_set(-ENODEV, "%s: %s cannot run with %u of %u members missing", name,
		            lvl->md.name, missing, g->raid_disks);
		goto out;
	}
	if (g->chunk % block_min) {
		r = err_set(-EINVAL, "%s: chunk %u is not a multiple of the members' block size %u",
		            name, g->chunk, block_min);
		goto out;
	}
	a->g = *g;
	a->lvl = lvl;
	a->n = g->raid_disks;
	if (ev)
		a->ev = *ev;
	r = lvl->setup(g, sizes, &a->priv, &size, &a->copies);
	if (r < 0) {
		err_set(r, "%s: %s", name, err_detail(r));
		goto out;
	}
	a->m = calloc(a->n, sizeof(*a->m));
	r = -ENOMEM;
	if (!a->m)
		goto out_priv;
	if (raid_stats_alloc(a) < 0) {
		raid_stats_free(a);
		free(a->m);
		goto out_priv;
	}
	pthread_mutex_init(&a->fail_lock, NULL);
	pthread_cond_init(&a->fail_told, NULL);
	pthread_mutex_init(&a->rec.lock, NULL);
	pthread_cond_init(&a->rec.cond, NULL);
	if (lvl->start) {
		r = lvl->start(a);
		if (r < 0)
			goto out_lock;
	}
	/* What the level cannot do whatever its members can (parity levels
	 * neither trim nor zero cheaply, nor show a view). */
	unsigned caps = raid_caps(members, a->n) & ~lvl->caps_off;
	/* A view (vol.h) where every member present has one and extents
	 * end on 4096-byte boundaries: RAID0/1/10 with such chunks. */
	bool views = !(lvl->caps_off & VOL_CAP_VIEW) && g->chunk % 4096 == 0;
	for (unsigned i = 0; i < a->n; i++)
		views &= !members[i] || (members[i]->caps & VOL_CAP_VIEW);
	caps = views ? caps | VOL_CAP_VIEW : caps & ~VOL_CAP_VIEW;
	/* Segments (vol.h) where the same levels' members all take them: a
	 * parity level wants whole stripes, and raid_caps passes no member's
	 * VOL_CAP_RAM (an array is not a member). */
	bool streams = views;
	for (unsigned i = 0; i < a->n; i++)
		streams &= !members[i] || (members[i]->caps & VOL_CAP_STREAM);
	if (streams)
		caps |= VOL_CAP_STREAM;
	r = vol_init(&a->vol, &raid_ops, name, size / block_min * block_min, block_min, caps);
	if (r < 0)
		goto out_lock;
	a->vol.block_max = block_max;
	for (unsigned i = 0; i < a->n; i++) {
		a->m[i].vol = members[i];
		atomic_store(&a->m[i].failed, members[i] == NULL);
	}
	/* Degraded start: every block needs a live copy. */
	for (unsigned i = 0; i < a->n; i++) {
		if (members[i] || raid_survives_without(a, i))
			continue;
		r = err_set(-ENODEV, "%s: too many members missing for %s to run", name,
		            lvl->md.name);
		goto out_vol;
	}
	if (a->copies > 1 || (lvl->striped && a->n > 1)) {
		r = raid_ra_init(a);
		if (r < 0)
			goto out_vol;
	}
	if (a->n > 1) {
		r = raid_wb_init(a);
		if (r < 0)
			goto out_ra;
		if (a->wb)
			a->vol.caps |= VOL_CAP_FLUSH; /* a volatile cache now */
	}
	if (missing)
		log_warn("%s: running degraded, %u of %u members missing", name, missing,
		         g->raid_disks);
	*out = &a->vol;
	free(sizes);
	return 0;
out_ra:
	raid_ra_destroy(a);
out_vol:
	vol_fini(&a->vol);
out_lock:
	if (lvl->stop)
		lvl->stop(a);
	pthread_mutex_destroy(&a->fail_lock);
	pthread_cond_destroy(&a->fail_told);
	pthread_mutex_destroy(&a->rec.lock);
	pthread_cond_destroy(&a->rec.cond);
	raid_stats_free(a);
	free(a->m);
out_priv:
	lvl->free(a->priv);
out:
	free(sizes);
	free(a);
	return r;
}
