/* md_assemble.c — from member vols to running md arrays (see md.h).
 *
 * Members are grouped by array UUID, checked against each other, given
 * the role the freshest superblock (highest events) records for their
 * slot, and handed to raid_open() as slices of their data areas.  The
 * resulting RAID vol is wrapped in an md vol that keeps the superblocks
 * true while the array runs, as the kernel's md does:
 *   - first write after start: every live member is marked active
 *     (resync_offset 0, events + 1) before the data changes;
 *   - a member fails: its slot becomes faulty (0xfffe) in the survivors,
 *     events + 1, so it is recognised as stale if it comes back;
 *   - close: marked clean again (resync_offset = MaxSector, events + 1);
 *   - a redundant array found unclean is resynced before a writable start
 *     returns (md_resync); a read-only one stays marked unclean;
 *   - online recovery (writable starts): a member found under recovery
 *     (feature RECOVERY_OFFSET: `uraid add --no-rebuild`, an interrupted
 *     rebuild, the kernel's) takes its role as "recovering" before the
 *     array is served, and a thread rebuilds it while the array serves
 *     (raid_recover_begin, raid_rebuild); spares given with the array
 *     stand by, and take a role that is gone (failed now, or already
 *     recorded as failed), as md's hot spares do.  The rebuild saves its
 *     recovery_offset every 64 MiB and when the array closes, and on
 *     completion the member is in sync (events + 1 everywhere).  The
 *     superblock transitions are md_manage.c's.
 * Read-only arrays never write, recover nor take spares: they leave out
 * spares and members under recovery.  Assembly writes nothing, except
 * that resync of an unclean array and the recovery offsets of members a
 * rebuild is about to restart below them. */
#include "md.h"
#include "md_bitmap.h"
#include "md_manage.h"
#include "md_throttle.h"

#include "core/clock.h"
#include "core/log.h"
#include "disc/raid.h"
#include "disc/raid_rebuild.h"
#include "disc/slice.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MD_NEST_MAX 8 /* arrays inside arrays, at most */
#define MD_REC_CHECKPOINT (64ull << 20) /* recovery_offset saved this often */
#define MD_GATE_SLOTS 16                /* counters of requests inside the gate */

struct md_member {
	struct vol *vol; /* the whole member; NULL when missing */
	struct md_super *sb;
	bool failed;
	bool recovering;   /* being rebuilt online (its sb says so) */
	struct vol *slice; /* its data area (being recovered) */
	bool slice_given;  /* the RAID vol owns slice */
	struct vol *data;  /* its data area as the RAID vol holds it, or NULL */
	bool bm_ok;        /* its write-intent bitmap on disk is ours */
};

struct md_array {
	struct vol vol;
	struct vol *raid;
	struct md_member *m; /* by role */
	unsigned n;
	int level;
	bool readonly;
	bool unclean; /* found not clean: stays marked for resync */
	atomic_bool active;
	/* A member failure that no superblock took (-errno; 0 when none):
	 * until a superblock update records it, no write is acknowledged
	 * (md_failure_recorded), as md holds writes until it is. */
	atomic_int unrecorded;
	pthread_mutex_t lock;
	uint64_t events;
	uint32_t max_dev;
	uint16_t roles[MD_SB_MAX_DEV];
	uint64_t size; /* sectors of each member's data area used */
	/* Online recovery (writable arrays of a redundant level). */
	bool recover;
	struct md_member *spare; /* standing by, in the order given */
	unsigned nspare;
	struct md_member *retired; /* replaced by a spare: closed at close */
	unsigned nretired;
	pthread_t rec_thread;
	bool rec_started;
	pthread_cond_t rec_cond; /* with lock: work for the thread */
	atomic_bool rec_stop;    /* the array closes */
	bool rec_dead;           /* recovery cannot go on: no more tries */
	uint64_t rec_to, rec_saved;
	/* What a rebuild running has done (for md_array_info). */
	bool rec_running; /* with lock */
	uint64_t rec_from, rec_t0_ns;
	atomic_uint_fast64_t rec_pos;
	unsigned spare_cap; /* entries allocated in spare */
	/* A check (md_array_check), run by the recovery thread when there
	 * is no recovery to run; with lock, but for the atomics. */
	enum md_check_action scrub_req; /* asked for: STOP for none */
	bool scrub_running, scrub_repair;
	atomic_bool scrub_stop;
	atomic_uint_fast64_t scrub_pos; /* array bytes compared */
	uint64_t scrub_t0_ns;
	unsigned scrub_shown; /* mismatches logged (by the thread) */
	bool scrub_ended, scrub_ended_repair;
	int scrub_status;
	struct raid_check_report scrub_rep;
	/* Speed limits of recoveries and checks, and the recovery thread's
	 * state for them (md_sync_throttle, md_throttle.h). */
	struct md_throttle sync;
	/* The gate (md_io_*): requests count themselves in io_in (a slot
	 * per thread, so that threads do not share one counter's cache
	 * line); while io_hold is set new ones wait at the door
	 * (md_array_remove takes a member's vol away, which requests planned
	 * earlier could name). */
	struct {
		atomic_int n;
		atomic_uint ops; /* requests that entered: clients are busy */
		char pad[56];
	} io_in[MD_GATE_SLOTS];
	atomic_bool io_hold;
	pthread_mutex_t io_lock;
	pthread_cond_t io_cond;
	/* The internal write-intent bitmap we keep up (writable arrays with
	 * a usable one; md_bm_*), its changes under lock. */
	struct md_bitmap *bm;
	struct md_bitmap_geom bmg;
	uint64_t bm_at;     /* its byte offset on each member */
	bool bm_trusted;    /* found up to date: a resync may follow it */
	uint64_t bm_pass_ns; /* last lazy clearing pass (with lock) */
};

static struct md_array *to_md(struct vol *v)
{
	return container_of(v, struct md_array, vol);
}

/* This thread's counter slot (ops are synchronous: a request leaves the
 * gate on the thread that entered it). */
static unsigned md_io_slot(void)
{
	static atomic_uint next;
	static _Thread_local unsigned slot = UINT_MAX;

	if (slot == UINT_MAX)
		slot = atomic_fetch_add(&next, 1) % MD_GATE_SLOTS;
	return slot;
}

/* Every request passes the gate: one atomic add and subtract on its
 * thread's slot unless a management call holds it (then it waits for the
 * call to finish). */
static void md_io_enter(struct md_array *a)
{
	unsigned slot = md_io_slot();

	for (;;) {
		atomic_fetch_add(&a->io_in[slot].n, 1);
		if (!atomic_load(&a->io_hold)) {
			atomic_fetch_add_explicit(&a->io_in[slot].ops, 1, memory_order_relaxed);
			return;
		}
		atomic_fetch_sub(&a->io_in[slot].n, 1);
		pthread_mutex_lock(&a->io_lock);
		while (atomic_load(&a->io_hold))
			pthread_cond_wait(&a->io_cond, &a->io_lock);
		pthread_mutex_unlock(&a->io_lock);
	}
}

static int md_io_leave(struct md_array *a, int r)
{
	atomic_fetch_sub(&a->io_in[md_io_slot()].n, 1);
	return r;
}

static void md_io_release(struct md_array *a);

/* Hold new requests at the gate and wait for those inside to finish:
 * 0, or -EBUSY (and the gate open again) if they have not within 10 s (a
 * member that hangs).  Not with a->lock held: a request may need it
 * (md_mark_active, a member failing). */
static int md_io_hold(struct md_array *a)
{
	int t = 0;

	pthread_mutex_lock(&a->io_lock);
	atomic_store(&a->io_hold, true);
	pthread_mutex_unlock(&a->io_lock);
	for (unsigned i = 0; i < MD_GATE_SLOTS; i++)
		while (atomic_load(&a->io_in[i].n) > 0) {
			if (++t == 50000) {
				md_io_release(a);
				return -EBUSY;
			}
			usleep(200);
		}
	return 0;
}

static void md_io_release(struct md_array *a)
{
	pthread_mutex_lock(&a->io_lock);
	atomic_store(&a->io_hold, false);
	pthread_cond_broadcast(&a->io_cond);
	pthread_mutex_unlock(&a->io_lock);
}

/* Write the array state into every live member's superblock: events + 1.
 * Called with a->lock held.  Returns 0 if at least one member took it. */
static int md_array_sync(struct md_array *a, bool active)
{
	int written = 0, last = -EIO;

	a->events++;
	/* The bitmap's events first, as md does: a bitmap behind the
	 * superblock is out of date for the kernel. */
	if (a->bm)
		md_bitmap_set_events(a->bm, a->events);
	for (unsigned r = 0; r < a->n; r++) {
		struct md_member *mm = &a->m[r];
		struct md_super *sb = mm->sb;
		int e;

		if (!mm->vol || mm->failed)
			continue;
		sb->events = a->events;
		sb->utime = (uint64_t)time(NULL);
		sb->resync_offset = (active || a->unclean) ? 0 : MD_MAX_SECTOR;
		sb->max_dev = a->max_dev;
		memcpy(sb->roles, a->roles, sizeof(a->roles));
		e = md_super_write(mm->vol, sb);
		if (e < 0) {
			log_warn("%s: %s", a->vol.name, err_detail(e));
			last = e;
		} else
			written++;
	}
	/* Spares follow the array's state as md keeps them (a spare left
	 * behind would not count as one of the array's). */
	for (unsigned i = 0; i < a->nspare; i++) {
		struct md_super *sb = a->spare[i].sb;
		md_manage_set_state(sb, a->events, a->max_dev, a->roles);
		sb->resync_offset = (active || a->unclean) ? 0 : MD_MAX_SECTOR;
		int e = md_super_write(a->spare[i].vol, sb);
		if (e < 0)
			log_warn("%s: spare: %s", a->vol.name, err_detail(e));
	}
	return written ? 0 : last;
}

static int md_mark_active(struct md_array *a)
{
	int r = 0;

	if (atomic_load(&a->active))
		return 0;
	pthread_mutex_lock(&a->lock);
	if (!atomic_load(&a->active)) {
		r = md_array_sync(a, true);
		if (r == 0)
			atomic_store(&a->active, true);
	}
	pthread_mutex_unlock(&a->lock);
	return r;
}

/* ---- the write-intent bitmap (md_bitmap.h) ---- */

/* Whether a role has no in-sync member: bits are then kept (they name
 * what the missing member missed) and events_cleared stays. */
static bool md_degraded(struct md_array *a)
{
	for (unsigned r = 0; r < a->n; r++)
		if (!a->m[r].vol || a->m[r].failed || a->m[r].recovering)
			return true;
	return false;
}

/* md_bitmap_io.write: the image's bytes [off, off+len) to every live
 * member (all of it to a member whose bitmap is not known to be ours yet),
 * flushed.  Called with a->lock held. */
static int md_bm_io_write(void *ctx, const uint8_t *img, size_t off, size_t len)
{
	struct md_array *a = ctx;
	size_t img_len;
	int written = 0, last = -EIO;

	md_bitmap_image(a->bm, &img_len);
	for (unsigned r = 0; r < a->n; r++) {
		struct md_member *mm = &a->m[r];
		size_t o = mm->bm_ok ? off : 0, l = mm->bm_ok ? len : img_len;
		int e;

		if (!mm->vol || mm->failed)
			continue;
		e = vol_write(mm->vol, img + o, l, a->bm_at + o, 0);
		if (e == 0)
			e = vol_flush(mm->vol);
		if (e < 0) {
			mm->bm_ok = false;
			last = err_set(e, "%s: %s", mm->vol->name, strerror(-e));
			continue;
		}
		mm->bm_ok = true;
		written++;
	}
	return written ? 0 : last;
}

/* Before a write of array bytes [off, off+len): its chunks' bits durable.
 * On success the caller calls md_bm_end once the write is done. */
static int md_bm_start(struct md_array *a, uint64_t off, uint64_t len)
{
	uint64_t first, end;
	int r;

	if (!a->bm || !len)
		return 0;
	md_bitmap_map(&a->bmg, off, len, &first, &end);
	if (md_bitmap_start(a->bm, first, end))
		return 0;
	pthread_mutex_lock(&a->lock);
	r = md_bitmap_mark(a->bm, first, end);
	pthread_mutex_unlock(&a->lock);
	if (r < 0)
		md_bitmap_end(a->bm, first, end);
	return r;
}

static int md_bm_end(struct md_array *a, uint64_t off, uint64_t len, int r)
{
	uint64_t first, end;

	if (a->bm && len) {
		md_bitmap_map(&a->bmg, off, len, &first, &end);
		md_bitmap_end(a->bm, first, end);
	}
	return r;
}

/* After every member was flushed by a flush that began at begun: a lazy
 * clearing pass, at most one per daemon_sleep seconds (md's bitmap daemon
 * period), none while degraded.  Only a flush that began after the
 * previous pass may run one: a write counted out of its chunk may still
 * be held in the RAID layer's write-behind, and the pass that clears its
 * bit (the one after the pass that saw it start) must come after a flush
 * that was asked for once it was held, so that wrote it out. */
static void md_bm_after_flush(struct md_array *a, uint64_t begun)
{
	uint64_t now, period;

	if (!a->bm)
		return;
	now = clock_now_ns();
	period = (uint64_t)md_bitmap_header(a->bm)->daemon_sleep * 1000000000u;
	if (pthread_mutex_trylock(&a->lock) != 0)
		return; /* busy: the next flush will do */
	if (begun >= a->bm_pass_ns && now - a->bm_pass_ns >= period && !md_degraded(a)) {
		a->bm_pass_ns = now;
		md_bitmap_clear_idle(a->bm, a->events);
	}
	pthread_mutex_unlock(&a->lock);
}

static void md_member_failed(void *ctx, unsigned role, int err)
{
	struct md_array *a = ctx;
	struct md_member *mm;

	if (role >= a->n)
		return;
	mm = &a->m[role];
	pthread_mutex_lock(&a->lock);
	if (!mm->failed) {
		mm->failed = true;
		if (mm->sb && mm->sb->dev_number < MD_SB_MAX_DEV)
			a->roles[mm->sb->dev_number] = MD_ROLE_FAULTY;
		log_warn("%s: member %u (%s) marked faulty: %s", a->vol.name, role,
		         mm->vol ? mm->vol->name : "?", strerror(err < 0 ? -err : err));
		if (!a->readonly) {
			int e = md_array_sync(a, atomic_load(&a->active));
			if (e < 0) {
				atomic_store(&a->unrecorded, e);
				log_warn("%s: could not record the failure in any superblock: "
				         "writes fail until one takes it",
				         a->vol.name);
			}
		}
		if (a->scrub_running)
			atomic_store(&a->scrub_stop, true); /* as md's: a failure ends it */
		if (a->rec_started)
			pthread_cond_signal(&a->rec_cond); /* a spare may take the role */
	}
	pthread_mutex_unlock(&a->lock);
}

/* r for a write (trim, flush) that came back r from the RAID layer: an
 * error if a member failure is not recorded in any superblock yet (tried
 * again here first), since the array it was acknowledged on would
 * otherwise reassemble with the failed member's stale copy in it. */
static int md_failure_recorded(struct md_array *a, int r)
{
	if (r < 0 || !atomic_load(&a->unrecorded))
		return r;
	pthread_mutex_lock(&a->lock);
	if (atomic_load(&a->unrecorded)) {
		r = md_array_sync(a, atomic_load(&a->active));
		if (r == 0)
			atomic_store(&a->unrecorded, 0);
	}
	pthread_mutex_unlock(&a->lock);
	return r;
}

static int md_read(struct vol *v, void *buf, uint64_t len, uint64_t off)
{
	struct md_array *a = to_md(v);
	md_io_enter(a);
	return md_io_leave(a, a->raid->ops->read(a->raid, buf, len, off));
}

static int md_view(struct vol *v, uint64_t len, uint64_t off, vol_view_fn fn, void *arg)
{
	struct md_array *a = to_md(v);
	md_io_enter(a);
	return md_io_leave(a, vol_view(a->raid, len, off, fn, arg));
}

static int md_extents(struct vol *v, uint64_t len, uint64_t off, vol_extent_fn fn, void *arg)
{
	struct md_array *a = to_md(v);
	md_io_enter(a);
	return md_io_leave(a, vol_extents(a->raid, len, off, fn, arg));
}

static int md_write(struct vol *v, const void *buf, uint64_t len, uint64_t off, unsigned flags)
{
	struct md_array *a = to_md(v);
	md_io_enter(a);
	int r = md_mark_active(a);
	if (r == 0)
		r = md_bm_start(a, off, len);
	if (r == 0)
		r = md_bm_end(a, off, len, a->raid->ops->write(a->raid, buf, len, off, flags));
	return md_io_leave(a, md_failure_recorded(a, r));
}

static int md_flush(struct vol *v)
{
	struct md_array *a = to_md(v);
	md_io_enter(a);
	uint64_t begun = clock_now_ns();
	int r = md_failure_recorded(a, vol_flush(a->raid));
	if (r == 0)
		md_bm_after_flush(a, begun);
	return md_io_leave(a, r);
}

static int md_trim(struct vol *v, uint64_t len, uint64_t off, unsigned flags)
{
	struct md_array *a = to_md(v);
	md_io_enter(a);
	int r = md_mark_active(a);
	if (r == 0)
		r = md_bm_start(a, off, len);
	if (r == 0)
		r = md_bm_end(a, off, len, vol_trim(a->raid, len, off, flags));
	return md_io_leave(a, md_failure_recorded(a, r));
}

static int md_write_zeroes(struct vol *v, uint64_t len, uint64_t off, unsigned flags)
{
	struct md_array *a = to_md(v);
	md_io_enter(a);
	int r = md_mark_active(a);
	if (r == 0)
		r = md_bm_start(a, off, len);
	if (r == 0)
		r = md_bm_end(a, off, len, vol_write_zeroes(a->raid, len, off, flags));
	return md_io_leave(a, md_failure_recorded(a, r));
}

static void md_free(struct md_array *a)
{
	for (unsigned r = 0; r < a->n; r++)
		free(a->m[r].sb);
	for (unsigned i = 0; i < a->nspare; i++)
		free(a->spare[i].sb);
	for (unsigned i = 0; i < a->nretired; i++)
		free(a->retired[i].sb);
	free(a->m);
	free(a->spare);
	free(a->retired);
	md_bitmap_free(a->bm);
	pthread_cond_destroy(&a->rec_cond);
	pthread_mutex_destroy(&a->lock);
	pthread_cond_destroy(&a->io_cond);
	pthread_mutex_destroy(&a->io_lock);
	vol_fini(&a->vol);
	free(a);
}

static void md_rec_target_failed(struct md_array *a, unsigned role, int err);

static void md_close(struct vol *v)
{
	struct md_array *a = to_md(v);

	if (a->rec_started) {
		/* The rebuild saves where it got to and stops. */
		pthread_mutex_lock(&a->lock);
		atomic_store(&a->rec_stop, true);
		pthread_cond_broadcast(&a->rec_cond);
		pthread_mutex_unlock(&a->lock);
		pthread_join(a->rec_thread, NULL);
		a->rec_started = false;
		/* A member being recovered that a write failed on (and no
		 * rebuild ran to notice): it misses data, out it goes. */
		pthread_mutex_lock(&a->lock);
		for (unsigned role = 0; role < a->n; role++) {
			int e = a->m[role].recovering && a->m[role].slice_given
			            ? raid_recover_error(a->raid, role)
			            : 0;
			if (e < 0)
				md_rec_target_failed(a, role, e);
		}
		pthread_mutex_unlock(&a->lock);
	}
	if (!a->readonly && atomic_load(&a->active)) {
		/* Data durable first, then the clean mark. */
		int r = vol_flush(a->raid);
		pthread_mutex_lock(&a->lock);
		/* Every write done and durable: the bitmap ends clear, with
		 * events_cleared at the events the clean mark takes. */
		if (r == 0 && a->bm && !md_degraded(a))
			md_bitmap_clear_all(a->bm, a->events + 1);
		if (r == 0)
			r = md_array_sync(a, false);
		pthread_mutex_unlock(&a->lock);
		if (r < 0)
			log_warn("%s: could not mark the array clean: %s", v->name, err_detail(r));
	}
	vol_close(a->raid); /* closes the slices; the members are ours */
	for (unsigned r = 0; r < a->n; r++) {
		if (!a->m[r].slice_given)
			vol_close(a->m[r].slice);
		vol_close(a->m[r].vol);
	}
	for (unsigned i = 0; i < a->nspare; i++)
		vol_close(a->spare[i].vol);
	for (unsigned i = 0; i < a->nretired; i++)
		vol_close(a->retired[i].vol);
	md_free(a);
}

static const struct vol_ops md_ops = {
    .kind = "md",
    .read = md_read,
    .write = md_write,
    .flush = md_flush,
    .trim = md_trim,
    .write_zeroes = md_write_zeroes,
    .close = md_close,
    .view = md_view,
    .extents = md_extents,
};

struct vol *md_array_raid(struct vol *v)
{
	return v->ops == &md_ops ? to_md(v)->raid : NULL;
}

/* Read array bytes [from, to) (from one copy) and write them back (to
 * all), in pieces of the buffer's size. */
static int md_resync_range(struct md_array *a, void *buf, uint64_t piece, uint64_t from,
                           uint64_t to)
{
	int r = 0;

	for (uint64_t off = from; off < to && r == 0; off += piece) {
		uint64_t len = to - off < piece ? to - off : piece;
		r = vol_read(a->raid, buf, len, off);
		if (r == 0)
			r = vol_write(&a->vol, buf, len, off, 0);
	}
	return r;
}

/* Make the copies of an array found unclean agree before anyone uses
 * it: read every block (from one copy) and write it back (to all) — or,
 * with a bitmap found up to date, only the blocks of the chunks whose
 * bits are set (the others saw no write in flight at the crash).  The
 * array is marked active first and, once this is done, may be marked
 * clean at close.  Runs before the array is served, so no client write
 * can race with it. */
static int md_resync(struct md_array *a)
{
	const uint64_t piece = 1u << 20;
	uint64_t size = a->vol.size, done = 0;
	void *buf;
	int r;

	if (!(buf = vol_buf_alloc(piece)))
		return -ENOMEM;
	r = md_mark_active(a);
	if (r == 0 && a->bm && a->bm_trusted) {
		const struct md_bitmap_info *h = md_bitmap_header(a->bm);
		uint64_t n = md_bitmap_chunks(a->bm), dirty = md_bitmap_dirty(a->bm);
		log_warn("%s: array was not shut down cleanly; resyncing the %llu of %llu "
		         "write-intent bitmap chunks that are dirty (chunk %u bytes)",
		         a->vol.name, (unsigned long long)dirty, (unsigned long long)n,
		         h->chunksize);
		for (uint64_t c = 0; c < n && r == 0; c++) {
			uint64_t off, len;
			if (!md_bitmap_test(a->bm, c))
				continue;
			md_bitmap_unmap(&a->bmg, c * h->chunksize, (c + 1) * h->chunksize, &off,
			                &len);
			r = md_resync_range(a, buf, piece, off, off + len);
			done += len;
		}
	} else if (r == 0) {
		log_warn("%s: array was not shut down cleanly; resyncing its %llu bytes%s",
		         a->vol.name, (unsigned long long)size,
		         a->bm ? " (its write-intent bitmap is out of date)" : "");
		r = md_resync_range(a, buf, piece, 0, size);
		done = size;
	}
	if (r == 0)
		r = vol_flush(a->raid);
	free(buf);
	if (r < 0)
		return err_set(r, "%s: resync failed: %s", a->vol.name, strerror(-r));
	a->unclean = false;
	pthread_mutex_lock(&a->lock);
	if (a->bm && !md_degraded(a))
		md_bitmap_clear_all(a->bm, a->events);
	pthread_mutex_unlock(&a->lock);
	log_info("%s: resync done (%llu bytes rewritten)", a->vol.name, (unsigned long long)done);
	return 0;
}

/* ---- online recovery ---- */

/* A member being recovered failed (a write to it, or its rebuild's): out
 * of the array for good, recorded as faulty.  Called with a->lock held. */
static void md_rec_target_failed(struct md_array *a, unsigned role, int err)
{
	struct md_member *mm = &a->m[role];

	mm->recovering = false;
	mm->failed = true;
	if (mm->sb->dev_number < MD_SB_MAX_DEV)
		a->roles[mm->sb->dev_number] = MD_ROLE_FAULTY;
	log_warn("%s: member %u (%s) failed while being recovered (%s): marked faulty, the "
	         "array stays degraded",
	         a->vol.name, role, mm->vol->name, strerror(err < 0 ? -err : EIO));
	if (md_array_sync(a, atomic_load(&a->active)) < 0)
		log_warn("%s: could not record the failure in any superblock", a->vol.name);
}

/* A spare takes the first role that is gone: recorded in every
 * superblock (events + 1), its data area cut out for the RAID vol.
 * Returns the role, or -1 (no spare, no role gone, or it could not).
 * Called with a->lock held. */
static int md_rec_promote(struct md_array *a)
{
	unsigned role;
	int r;

	if (!a->nspare)
		return -1;
	for (role = 0; role < a->n; role++)
		if ((!a->m[role].vol || a->m[role].failed) && !a->m[role].recovering)
			break;
	if (role == a->n)
		return -1;
	struct md_member *nr = realloc(a->retired, (a->nretired + 1) * sizeof(*nr));
	if (!nr)
		return -1;
	a->retired = nr;
	struct md_member sp = a->spare[0];
	err_clear();
	r = md_manage_promote_spare(sp.sb, a->roles, role, a->size, a->vol.name, sp.vol->name);
	if (r == 0)
		r = slice_open(sp.vol, sp.sb->data_offset * 512, sp.sb->data_size * 512, false,
		               sp.vol->name, &sp.slice);
	if (r < 0) {
		/* This spare cannot serve: left out of the array's state. */
		log_warn("%s: spare %s left out: %s", a->vol.name, sp.vol->name, err_detail(r));
		if (sp.sb->dev_number < MD_SB_MAX_DEV)
			a->roles[sp.sb->dev_number] = MD_ROLE_SPARE;
		a->retired[a->nretired++] = sp; /* closed at close */
		memmove(a->spare, a->spare + 1, --a->nspare * sizeof(*a->spare));
		return -1;
	}
	memmove(a->spare, a->spare + 1, --a->nspare * sizeof(*a->spare));
	if (a->m[role].vol)
		a->retired[a->nretired++] = a->m[role];
	sp.recovering = true;
	sp.failed = false;
	a->m[role] = sp;
	log_info("%s: spare %s takes role %u, to be rebuilt", a->vol.name, sp.vol->name, role);
	if (md_array_sync(a, atomic_load(&a->active)) < 0)
		log_warn("%s: could not record the spare in any superblock", a->vol.name);
	return (int)role;
}

/* The RAID vol takes role's member as recovering (and owns its slice from
 * then on; mm->slice stays as the rebuild's target). */
static int md_rec_begin(struct md_array *a, unsigned role)
{
	struct md_member *mm = &a->m[role];
	int r =
	    raid_recover_begin(a->raid, role, mm->slice, md_manage_recovery_from(mm->sb, a->size));

	if (r == 0) {
		mm->slice_given = true;
		mm->data = mm->slice;
	}
	return r;
}

/* ---- speed limits (md's speed_limit_min / speed_limit_max) ---- */

#define MD_SYNC_NAP_US 50000u /* naps short enough to hear a stop */

static unsigned md_client_ops(struct md_array *a)
{
	unsigned ops = 0;

	for (unsigned i = 0; i < MD_GATE_SLOTS; i++)
		ops += atomic_load_explicit(&a->io_in[i].ops, memory_order_relaxed);
	return ops;
}

/* A sync (a recovery, a check) has done bytes of each member since it
 * began (begin: true at its start): hold it as long as its speed limits
 * say (md_throttle.h), asking again after each nap, so that clients
 * leaving let it go at once.  Called by the recovery thread only, without
 * a->lock; returns early once stop is set. */
static void md_sync_throttle(struct md_array *a, uint64_t done, bool begin, atomic_bool *stop)
{
	uint64_t now = clock_now_ns();
	uint64_t due = md_throttle_due(&a->sync, now, done, md_client_ops(a), begin);

	while (now < due && !atomic_load(stop) && !atomic_load(&a->rec_stop)) {
		uint64_t us = (due - now) / 1000;
		usleep(us < MD_SYNC_NAP_US ? (useconds_t)us + 1 : MD_SYNC_NAP_US);
		now = clock_now_ns();
		due = md_throttle_due(&a->sync, now, done, md_client_ops(a), false);
	}
}

static int md_rec_progress(void *ctx, uint64_t done)
{
	struct md_array *a = ctx;
	bool stop = atomic_load(&a->rec_stop), failed = false;

	atomic_store(&a->rec_pos, done);
	for (unsigned role = 0; role < a->n; role++)
		failed |= raid_recover_error(a->raid, role) != 0;
	if (failed)
		return 1;
	if (done >= a->rec_to)
		return 0; /* all written: finish */
	if (done - a->rec_saved >= MD_REC_CHECKPOINT || stop) {
		int r = 0;
		pthread_mutex_lock(&a->lock);
		for (unsigned role = 0; role < a->n && r == 0; role++)
			if (a->m[role].recovering)
				r = md_manage_checkpoint(a->m[role].vol, a->m[role].sb, done);
		pthread_mutex_unlock(&a->lock);
		if (r < 0) {
			log_warn("%s: saving the recovery offset: %s", a->vol.name, err_detail(r));
			return 1;
		}
		a->rec_saved = done;
		log_debug("%s: recovery at %llu of %llu bytes", a->vol.name,
		          (unsigned long long)done, (unsigned long long)a->rec_to);
	}
	if (!stop)
		md_sync_throttle(a, done, false, &a->rec_stop);
	return atomic_load(&a->rec_stop);
}

/* One rebuild of every recovering role, from the lowest offset recorded
 * among them (a member recorded further on is marked back there first).
 * Called with a->lock held; drops it while rebuilding. */
static void md_rec_run(struct md_array *a)
{
	struct vol **targets = calloc(a->n, sizeof(*targets));
	uint64_t from = a->rec_to;
	char list[256] = "";
	size_t len = 0;
	int r;

	if (!targets) {
		a->rec_dead = true;
		return;
	}
	for (unsigned role = 0; role < a->n; role++) {
		struct md_member *mm = &a->m[role];
		if (!mm->recovering)
			continue;
		uint64_t f = md_manage_recovery_from(mm->sb, a->size);
		from = f < from ? f : from;
		targets[role] = mm->slice;
		if (len < sizeof(list) - 8)
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s (role %u)",
			                        len ? ", " : "", mm->vol->name, role);
	}
	from -= from % raid_rebuild_piece(a->raid);
	for (unsigned role = 0; role < a->n; role++) {
		struct md_member *mm = &a->m[role];
		if (mm->recovering && (r = md_manage_restart(mm->vol, mm->sb, from)) < 0)
			log_warn("%s: %s", a->vol.name, err_detail(r));
	}
	a->rec_saved = from;
	log_info("%s: recovering %s from byte %llu of %llu, while serving", a->vol.name, list,
	         (unsigned long long)from, (unsigned long long)a->rec_to);
	uint64_t t0 = clock_now_ns();
	a->rec_running = true;
	a->rec_from = from;
	md_sync_throttle(a, from, true, &a->rec_stop);
	a->rec_t0_ns = t0;
	atomic_store(&a->rec_pos, from);
	pthread_mutex_unlock(&a->lock);

	err_clear();
	r = raid_rebuild(a->raid, targets, from, a->rec_to, md_rec_progress, a);
	double secs = (double)(clock_now_ns() - t0) / 1e9;
	char detail[512];
	snprintf(detail, sizeof(detail), "%s", r < 0 ? err_detail(r) : "");
	/* The RAID vol's state first (it waits for writes in flight, which
	 * may need a->lock), then the superblocks'. */
	int *end = calloc(a->n, sizeof(*end));
	bool stopped = r == -EINTR && atomic_load(&a->rec_stop);
	for (unsigned role = 0; end && role < a->n; role++) {
		if (!targets[role])
			continue;
		int e = raid_recover_error(a->raid, role);
		if (e == 0 && r == 0) {
			e = vol_flush(targets[role]);
			if (e == 0)
				e = raid_recover_finish(a->raid, role);
			else
				raid_recover_abort(a->raid, role);
			end[role] = e < 0 ? e : 1; /* 1: in sync */
		} else if (e < 0) {
			raid_recover_abort(a->raid, role);
			end[role] = e;
		}
	}
	pthread_mutex_lock(&a->lock);
	a->rec_running = false;
	bool any_failed = false, synced = false;
	for (unsigned role = 0; end && role < a->n; role++) {
		if (end[role] < 0) {
			md_rec_target_failed(a, role, end[role]);
			any_failed = true;
		} else if (end[role] == 1) {
			md_manage_recovery_done(a->m[role].sb);
			a->m[role].recovering = false;
			synced = true;
			log_info("%s: member %u (%s) is rebuilt and in sync (%.1f MiB in %.1f s, "
			         "%.1f MiB/s)",
			         a->vol.name, role, a->m[role].vol->name,
			         (double)(a->rec_to - from) / 1048576.0, secs,
			         secs > 0 ? (double)(a->rec_to - from) / 1048576.0 / secs : 0.0);
		}
	}
	if (synced && md_array_sync(a, atomic_load(&a->active)) < 0)
		log_warn("%s: could not record the recovery in any superblock", a->vol.name);
	if (!end) {
		a->rec_dead = true;
	} else if (r < 0 && !stopped && !any_failed) {
		/* Data gone beyond what redundancy gives back, or a checkpoint
		 * that could not be saved: the rebuild stops (its members stay
		 * recovering, written by clients, and resume at the next start). */
		log_error("%s: recovery stopped: %s", a->vol.name, detail);
		a->rec_dead = true;
	}
	free(end);
	free(targets);
}

/* ---- checks: md's sync_action "check" and "repair" ---- */

#define MD_CHECK_SHOW_MAX 20 /* mismatches logged, then only counted */

static void md_scrub_mismatch(void *ctx, uint64_t off, uint64_t len)
{
	struct md_array *a = ctx;

	if (a->scrub_shown++ < MD_CHECK_SHOW_MAX)
		log_warn("%s: check: copies differ: %llu bytes at %llu%s", a->vol.name,
		         (unsigned long long)len, (unsigned long long)off,
		         a->scrub_repair ? " (repaired)" : "");
}

static int md_scrub_progress(void *ctx, uint64_t done)
{
	struct md_array *a = ctx;

	atomic_store(&a->scrub_pos, done);
	/* The limits are per member, as md's are: the array bytes checked
	 * so far in bytes of each member. */
	md_sync_throttle(a, (uint64_t)((double)done * (double)(a->size * 512) / (double)a->vol.size),
	                 false, &a->scrub_stop);
	return atomic_load(&a->rec_stop) || atomic_load(&a->scrub_stop);
}

/* Run the check asked for.  Called with a->lock held; drops it while the
 * check runs. */
static void md_scrub_run(struct md_array *a)
{
	struct raid_check_report rep;
	struct raid_check_cb cb = {md_scrub_mismatch, md_scrub_progress, a};
	const char *what = a->scrub_req == MD_CHECK_REPAIR ? "repair" : "check";

	a->scrub_repair = a->scrub_req == MD_CHECK_REPAIR;
	a->scrub_req = MD_CHECK_STOP;
	a->scrub_running = true;
	a->scrub_shown = 0;
	a->scrub_t0_ns = clock_now_ns();
	atomic_store(&a->scrub_pos, 0);
	md_sync_throttle(a, 0, true, &a->scrub_stop);
	pthread_mutex_unlock(&a->lock);

	log_info("%s: %s of %llu bytes begins, while serving", a->vol.name, what,
	         (unsigned long long)a->vol.size);
	err_clear();
	int r = raid_check(a->raid, a->scrub_repair, &rep, &cb);
	double secs = (double)(clock_now_ns() - a->scrub_t0_ns) / 1e9;
	if (r == 0)
		log_info("%s: %s done: %llu bytes in %.1f s, %llu bytes in %llu ranges differ%s, "
		         "%llu read errors",
		         a->vol.name, what, (unsigned long long)rep.checked, secs,
		         (unsigned long long)rep.mismatched, (unsigned long long)rep.ranges,
		         a->scrub_repair && rep.mismatched ? " (repaired)" : "",
		         (unsigned long long)rep.read_errors);
	else if (r == -EINTR)
		log_warn("%s: %s interrupted at byte %llu", a->vol.name, what,
		         (unsigned long long)rep.checked);
	else
		log_error("%s: %s failed: %s", a->vol.name, what, err_detail(r));

	pthread_mutex_lock(&a->lock);
	a->scrub_running = false;
	a->scrub_ended = true;
	a->scrub_ended_repair = a->scrub_repair;
	a->scrub_status = r;
	a->scrub_rep = rep;
	atomic_store(&a->scrub_stop, false);
}

static void *md_rec_main(void *arg)
{
	struct md_array *a = arg;

	pthread_mutex_lock(&a->lock);
	while (!atomic_load(&a->rec_stop)) {
		bool todo = false;
		for (unsigned role = 0; role < a->n; role++)
			todo |= a->m[role].recovering;
		if (!todo && !a->rec_dead && a->recover) {
			int role = md_rec_promote(a);
			if (role >= 0) {
				/* Not under a->lock: it waits for writes in flight. */
				pthread_mutex_unlock(&a->lock);
				int r = md_rec_begin(a, (unsigned)role);
				pthread_mutex_lock(&a->lock);
				if (r < 0) {
					md_rec_target_failed(a, (unsigned)role, r);
				} else if (a->m[role].failed) {
					/* Failed by request before it began. */
					pthread_mutex_unlock(&a->lock);
					raid_recover_abort(a->raid, (unsigned)role);
					pthread_mutex_lock(&a->lock);
				}
				continue;
			}
		}
		if ((!todo || a->rec_dead) && a->scrub_req != MD_CHECK_STOP) {
			md_scrub_run(a);
			continue;
		}
		if (!todo || a->rec_dead) {
			pthread_cond_wait(&a->rec_cond, &a->lock);
			continue;
		}
		md_rec_run(a);
	}
	pthread_mutex_unlock(&a->lock);
	return NULL;
}

/* At a writable start: members found under recovery join the RAID vol as
 * recovering before anyone writes, and the thread starts if there is a
 * rebuild to run or spares to stand by. */
static int md_rec_start(struct md_array *a)
{
	bool need = a->nspare > 0;
	int r;

	a->rec_to = a->size * 512;
	for (unsigned role = 0; role < a->n; role++) {
		if (!a->m[role].recovering)
			continue;
		r = md_rec_begin(a, role);
		if (r < 0) {
			log_warn("%s: %s", a->vol.name, err_detail(r));
			pthread_mutex_lock(&a->lock);
			md_rec_target_failed(a, role, r);
			pthread_mutex_unlock(&a->lock);
			continue;
		}
		need = true;
	}
	if (!need)
		return 0;
	r = pthread_create(&a->rec_thread, NULL, md_rec_main, a);
	if (r != 0)
		return err_set(-r, "%s: cannot start the recovery thread: %s", a->vol.name,
		               strerror(r));
	a->rec_started = true;
	return 0;
}

/* A writable start of an array whose superblock (fresh) records an
 * internal write-intent bitmap: a->bm is kept up from now on, and
 * a->bm_trusted says whether its bits may guide a resync (found valid on
 * some member and not behind the superblock's events; the bits of every
 * such member are merged).  One that is out of date starts over, all
 * clear with the array's events (a resync due now covers everything).
 * One that cannot be used at all is warned about and left alone: a crash
 * then costs a full resync, as before. */
static void md_bm_load(struct md_array *a, const struct md_super *fresh)
{
	const struct md_sb1 *raw = (const struct md_sb1 *)fresh->raw;
	int32_t bo = (int32_t)md_le32(raw->bitmap_offset);
	int32_t bb = (int32_t)md_le32(raw->bblog_offset);
	struct md_bitmap_io io = {.write = md_bm_io_write, .ctx = a};
	struct md_bitmap_info ref, h;
	struct md_bitmap *b = NULL;
	uint64_t end, room, ref_events = 0;
	uint32_t unit = 512;
	uint8_t *buf = NULL;
	char why[256] = "no member holds a valid one";
	bool have = false;
	int r;

	if (!(fresh->feature_map & MD_FEATURE_BITMAP_OFFSET) || a->readonly)
		return;
	if (md_bitmap_geom_init(&a->bmg, a->level, a->n, fresh->chunk, a->size, a->vol.size) <
	    0) {
		log_warn("%s: a write-intent bitmap on a %s array is not used", a->vol.name,
		         md_level_name(a->level));
		return;
	}
	for (unsigned i = 0; i < a->n; i++)
		if (a->m[i].vol && a->m[i].vol->block_min > unit)
			unit = a->m[i].vol->block_min;
	a->bm_at = (fresh->super_offset + (uint64_t)(int64_t)bo) * 512;
	end = fresh->data_offset * 512;
	if (md_le16(raw->bblog_size) && bb > bo &&
	    (fresh->super_offset + (uint64_t)bb) * 512 < end)
		end = (fresh->super_offset + (uint64_t)bb) * 512;
	if (bo <= 0 || a->bm_at % unit || end < a->bm_at + unit) {
		snprintf(why, sizeof(why), "bitmap offset %d does not fit (units of %u bytes)", bo,
		         unit);
		goto unusable;
	}
	room = end - a->bm_at;
	if (!(buf = vol_buf_alloc(unit))) {
		snprintf(why, sizeof(why), "out of memory");
		goto unusable;
	}
	/* The reference header: the valid one of the freshest member. */
	for (unsigned i = 0; i < a->n; i++) {
		struct md_member *mm = &a->m[i];
		if (!mm->vol || mm->failed)
			continue;
		err_clear();
		r = vol_read(mm->vol, buf, unit, a->bm_at);
		if (r == 0)
			r = md_bitmap_decode(buf, &h, mm->vol->name);
		if (r == 0)
			r = md_bitmap_check(&h, fresh->set_uuid, mm->vol->name);
		if (r < 0) {
			snprintf(why, sizeof(why), "%s", err_detail(r));
			continue;
		}
		if (!have || mm->sb->events > ref_events) {
			ref = h;
			ref_events = mm->sb->events;
			have = true;
		}
	}
	if (!have)
		goto unusable;
	a->bm_trusted = ref.events >= fresh->events && !(ref.state & MD_BITMAP_STALE);
	if (!a->bm_trusted) {
		log_warn("%s: write-intent bitmap is out of date (events %llu, array %llu%s): "
		         "starting it over",
		         a->vol.name, (unsigned long long)ref.events,
		         (unsigned long long)fresh->events,
		         ref.state & MD_BITMAP_STALE ? ", marked stale" : "");
		ref.events = ref.events_cleared = fresh->events;
		ref.state &= ~(MD_BITMAP_STALE | MD_BITMAP_WRITE_ERROR);
	}
	err_clear();
	r = md_bitmap_new(&ref, md_bitmap_index_size(&a->bmg), unit, room, NULL, &io,
	                  a->vol.name, &b);
	if (r < 0) {
		snprintf(why, sizeof(why), "%s", err_detail(r));
		goto unusable;
	}
	size_t img_len;
	const uint8_t *img = md_bitmap_image(b, &img_len);
	free(buf);
	if (!(buf = vol_buf_alloc(img_len))) {
		md_bitmap_free(b);
		buf = NULL;
		snprintf(why, sizeof(why), "out of memory");
		goto unusable;
	}
	/* Two passes over the members: merge the bits of every up-to-date
	 * bitmap, then note which members hold exactly ours. */
	for (int pass = 0; pass < 2; pass++)
		for (unsigned i = 0; i < a->n; i++) {
			struct md_member *mm = &a->m[i];
			if (!mm->vol || mm->failed)
				continue;
			err_clear();
			if (vol_read(mm->vol, buf, img_len, a->bm_at) < 0 ||
			    md_bitmap_decode(buf, &h, mm->vol->name) < 0 ||
			    md_bitmap_check(&h, fresh->set_uuid, mm->vol->name) < 0)
				continue;
			if (pass == 1)
				mm->bm_ok = memcmp(buf, img, img_len) == 0;
			else if (a->bm_trusted && h.chunksize == ref.chunksize &&
			         h.events >= fresh->events && !(h.state & MD_BITMAP_STALE))
				md_bitmap_merge(b, buf);
		}
	free(buf);
	a->bm = b;
	log_info("%s: keeping its write-intent bitmap (%llu chunks of %u bytes, %llu dirty)",
	         a->vol.name, (unsigned long long)md_bitmap_chunks(b), ref.chunksize,
	         (unsigned long long)md_bitmap_dirty(b));
	return;
unusable:
	free(buf);
	log_warn("%s: write-intent bitmap unusable (%s): not kept up; after a crash the whole "
	         "array is resynced",
	         a->vol.name, why);
}

/* One vol being probed: a member, or an array assembled in an earlier
 * round.  sb is set when it holds a superblock. */
struct md_cand {
	struct vol *v;
	struct md_super *sb;
	bool done; /* probed: holds no superblock */
};

/* The name of the first member present, for messages ("" if none). */
static const char *md_first_present(const struct md_array *a)
{
	for (unsigned role = 0; role < a->n; role++)
		if (a->m[role].vol)
			return a->m[role].vol->name;
	return "";
}

/* Assemble the k candidates in g[] (one array UUID).  Always consumes
 * their vols and superblocks (closes them on failure). */
static int md_array_open(struct md_cand **g, unsigned k, const struct md_assemble_opts *o,
                         struct vol **out)
{
	struct md_super *fresh = NULL; /* a copy: members' own may be freed */
	struct md_array *a = NULL;
	struct vol **slices = NULL;
	struct raid_geom geom = {0};
	struct raid_events ev;
	char name[48], uuid[36];
	unsigned present = 0, missing = 0;
	bool redundant;
	int r = 0;

	unsigned fi = 0;
	for (unsigned i = 1; i < k; i++)
		if (g[i]->sb->events > g[fi]->sb->events)
			fi = i;
	fresh = malloc(sizeof(*fresh));
	if (!fresh) {
		r = -ENOMEM;
		goto fail;
	}
	*fresh = *g[fi]->sb;
	md_super_array_name(fresh, name, sizeof(name));
	md_uuid_format(fresh->set_uuid, uuid);
	for (unsigned i = 0; i < k; i++) {
		r = md_super_same_geometry(g[i]->sb, g[i]->v->name, fresh, g[fi]->v->name, name);
		if (r < 0)
			goto fail;
	}
	redundant = md_level_redundant(fresh->level);
	if (fresh->raid_disks > MD_SB_MAX_DEV) {
		r = err_set(-EINVAL, "%s: %u devices is more than uraid handles", name,
		            fresh->raid_disks);
		goto fail;
	}

	a = calloc(1, sizeof(*a));
	slices = calloc(fresh->raid_disks, sizeof(*slices));
	if (!a || !slices) {
		r = -ENOMEM;
		goto fail;
	}
	a->m = calloc(fresh->raid_disks, sizeof(*a->m));
	if (!a->m) {
		r = -ENOMEM;
		goto fail;
	}
	a->n = fresh->raid_disks;
	a->level = fresh->level;
	a->readonly = o->readonly;
	a->events = fresh->events;
	a->max_dev = fresh->max_dev;
	a->size = fresh->size;
	memcpy(a->roles, fresh->roles, sizeof(a->roles));
	pthread_mutex_init(&a->lock, NULL);
	pthread_cond_init(&a->rec_cond, NULL);
	pthread_mutex_init(&a->io_lock, NULL);
	pthread_cond_init(&a->io_cond, NULL);
	a->recover = !o->readonly && !o->no_recovery && redundant;
	a->sync.min = o->sync_min;
	a->sync.max = o->sync_max;
	a->spare = calloc(k, sizeof(*a->spare));
	if (!a->spare) {
		r = -ENOMEM;
		goto fail;
	}
	a->spare_cap = k;

	/* Each member takes the role the freshest superblock gives its slot
	 * (as the kernel does); stale, spare and faulty ones are left out. */
	for (unsigned i = 0; i < k; i++) {
		struct md_super *sb = g[i]->sb;
		const char *mname = g[i]->v->name;
		unsigned slot = sb->dev_number;
		unsigned role = slot < fresh->max_dev ? fresh->roles[slot] : MD_ROLE_SPARE;
		const char *why = NULL;
		bool rec = sb->feature_map & MD_FEATURE_RECOVERY_OFFSET;

		if (a->recover && role == MD_ROLE_SPARE && sb->data_size >= fresh->size) {
			/* A spare's events do not matter (md's rule). */
			a->spare[a->nspare++] = (struct md_member){.vol = g[i]->v, .sb = sb};
			g[i]->v = NULL;
			g[i]->sb = NULL;
			continue;
		}
		if (sb->events + 1 < fresh->events)
			why = "is stale (older events)";
		else if (role == MD_ROLE_FAULTY)
			why = "is marked faulty";
		else if (role >= a->n)
			why = a->recover ? "is a spare too small for the array" : "is a spare";
		else if (rec && !a->recover)
			why = "was being rebuilt (`uraid rebuild`, or a writable `uraid serve`, "
			      "finishes that)";
		else if (rec && a->m[role].vol)
			why = "is being rebuilt for a role another member holds";
		else if (a->m[role].vol) {
			why = "claims a role another member holds";
			if (sb->events > a->m[role].sb->events) {
				/* keep the fresher of the two */
				struct md_member old = a->m[role];
				log_warn("%s: %s (events %llu) left out: %s", name, old.vol->name,
				         (unsigned long long)old.sb->events, why);
				vol_close(old.vol);
				free(old.sb);
				a->m[role].vol = NULL;
				why = NULL;
			}
		}
		if (why) {
			log_warn("%s: %s (events %llu, newest %llu) left out: it %s", name, mname,
			         (unsigned long long)sb->events, (unsigned long long)fresh->events,
			         why);
			vol_close(g[i]->v);
			free(sb);
		} else {
			a->m[role].vol = g[i]->v;
			a->m[role].sb = sb;
			a->m[role].recovering = rec;
		}
		g[i]->v = NULL;
		g[i]->sb = NULL;
	}
	/* A missing role that the freshest superblock still gives to some
	 * device is a surprise (a member not given, or left out above): like
	 * mdadm without --run, start only when asked.  One already recorded
	 * as failed or removed is the array's known state. */
	bool surprise = false;
	char list[256] = "";
	size_t len = 0;
	unsigned recovering = 0;
	for (unsigned role = 0; role < a->n; role++) {
		if (a->m[role].vol) {
			present += !a->m[role].recovering;
			recovering += a->m[role].recovering;
			continue;
		}
		missing++;
		for (unsigned s = 0; s < fresh->max_dev && s < MD_SB_MAX_DEV; s++)
			surprise |= fresh->roles[s] == role;
		if (len < sizeof(list) - 8)
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%u",
			                        len ? "," : "", role);
	}
	if (missing && !redundant) {
		r = err_set(-ENODEV, "%s: %s needs all %u members, %u found (missing role %s)",
		            name, md_level_name(fresh->level), a->n, present, list);
		goto fail;
	}
	if (surprise && !o->run_degraded) {
		r = err_set(-ENODEV,
		            "%s: %u of %u members found (missing role %s); start it degraded with "
		            "--degraded",
		            name, present, a->n, list);
		goto fail;
	}
	if (md_dirty_degraded(fresh, missing + recovering)) {
		char what[300];
		snprintf(what, sizeof(what), "dirty degraded %s (%s, not shut down cleanly)",
		         md_level_name(fresh->level),
		         missing ? "a member missing" : "a member being rebuilt");
		if (!o->readonly && !o->start_dirty_degraded) {
			r = err_set(
			    -EUCLEAN,
			    "%s (%s...): cannot start a %s: stripes written during the "
			    "crash may be wrong on the missing member (md's write hole); "
			    "--force starts it anyway, --readonly serves it without changing "
			    "it",
			    name, md_first_present(a), what);
			goto fail;
		}
		log_warn("%s: %s%s: stripes written during the crash may read back stale or "
		         "wrong where they lie on the missing member (md's write hole)",
		         name, o->readonly ? "" : "starting anyway (--force) a ", what);
	}
	/* A slot whose role has no member here (or another member now) is
	 * recorded as faulty at the first superblock update. */
	for (unsigned s = 0; s < a->max_dev && s < MD_SB_MAX_DEV; s++) {
		unsigned role = a->roles[s];
		if (role < a->n && (!a->m[role].vol || a->m[role].sb->dev_number != s))
			a->roles[s] = MD_ROLE_FAULTY;
	}

	geom.level = fresh->level;
	geom.raid_disks = a->n;
	/* RAID1 has no chunk, whatever the superblock says (the kernel
	 * ignores it too): a stray one must not refuse 4 KiB-block members. */
	geom.chunk = fresh->level == 1 ? 0 : fresh->chunk * 512;
	geom.layout = fresh->layout;
	if (md_level_redundant(fresh->level))
		geom.dev_size = fresh->size * 512;
	if (fresh->level == 0 && !(fresh->feature_map & MD_FEATURE_RAID0_LAYOUT)) {
		/* Without a layout only single-zone RAID0 is unambiguous; the
		 * kernel refuses the rest too (since 5.4). */
		for (unsigned role = 1; role < a->n; role++)
			if (a->m[role].sb->data_size / fresh->chunk !=
			    a->m[0].sb->data_size / fresh->chunk) {
				r = err_set(-EINVAL,
				            "%s: raid0 of unequal members without a layout (made "
				            "before Linux 5.4) is ambiguous; refusing it",
				            name);
				goto fail;
			}
		geom.layout = 0;
	}
	if (fresh->level == MD_LEVEL_LINEAR)
		geom.layout = 0;

	for (unsigned role = 0; role < a->n; role++) {
		struct md_member *mm = &a->m[role];
		if (!mm->vol)
			continue;
		/* A member being recovered is missing to raid_open: it joins
		 * as recovering below (md_rec_begin). */
		r = slice_open(mm->vol, mm->sb->data_offset * 512, mm->sb->data_size * 512, false,
		               mm->vol->name, mm->recovering ? &mm->slice : &slices[role]);
		if (r < 0) {
			r = err_set(r, "%s: %s: cannot cut out the data area", name, mm->vol->name);
			goto fail;
		}
	}
	ev.member_failed = md_member_failed;
	ev.ctx = a;
	r = raid_open(&geom, slices, &ev, name, &a->raid);
	if (r < 0)
		goto fail;
	for (unsigned role = 0; role < a->n; role++)
		a->m[role].data = slices[role];
	/* The RAID vol owns the slices now; the members stay ours (the
	 * superblocks are written through them) and md_close() closes them. */
	r = vol_init(&a->vol, &md_ops, name, a->raid->size, a->raid->block_min,
	             a->raid->caps | (o->readonly ? VOL_CAP_READONLY : 0));
	if (r < 0) {
		vol_close(a->raid);
		a->raid = NULL;
		for (unsigned role = 0; role < a->n; role++)
			slices[role] = NULL;
		goto fail;
	}
	a->vol.block_pref = a->raid->block_pref;
	a->vol.block_max = a->raid->block_max;
	log_info("%s: assembled %s (%s) from %u of %u members%s%s%s", name,
	         md_level_name(fresh->level), uuid, present, a->n,
	         missing || recovering ? ", degraded" : "", o->readonly ? ", read-only" : "",
	         recovering ? ", recovering" : "");
	free(slices);
	md_bm_load(a, fresh);
	bool clean = md_super_clean(fresh);
	free(fresh);
	if (redundant && !clean) {
		a->unclean = true;
		if (o->readonly) {
			log_warn("%s: array was not shut down cleanly; copies may differ until "
			         "it is resynced (a writable start does that)",
			         name);
		} else {
			r = md_resync(a);
			if (r < 0) {
				md_close(&a->vol); /* stays marked unclean */
				return r;
			}
		}
	}
	if (a->recover) {
		r = md_rec_start(a);
		if (r < 0) {
			md_close(&a->vol);
			return r;
		}
	}
	*out = &a->vol;
	return 0;

fail:
	for (unsigned i = 0; i < k; i++) {
		vol_close(g[i]->v);
		free(g[i]->sb);
		g[i]->v = NULL;
		g[i]->sb = NULL;
	}
	if (a) {
		for (unsigned role = 0; a->m && role < a->n; role++) {
			if (slices && slices[role])
				vol_close(slices[role]);
			vol_close(a->m[role].slice);
			vol_close(a->m[role].vol);
			free(a->m[role].sb);
		}
		for (unsigned i = 0; i < a->nspare; i++) {
			vol_close(a->spare[i].vol);
			free(a->spare[i].sb);
		}
		free(a->spare);
		free(a->m);
		if (a->max_dev || a->n) {
			pthread_mutex_destroy(&a->lock);
			pthread_cond_destroy(&a->rec_cond);
			pthread_mutex_destroy(&a->io_lock);
			pthread_cond_destroy(&a->io_cond);
		}
		free(a);
	}
	free(slices);
	free(fresh);
	return r;
}

int md_assemble_all(struct vol **vols, int n, const struct md_assemble_opts *o, struct vol ***out,
                    int *nout)
{
	struct md_cand *c = calloc((size_t)n, sizeof(*c));
	struct md_cand **g = calloc((size_t)n, sizeof(*g));
	struct vol **res = NULL;
	int nc = n, r = 0, round;

	if (!c || !g) {
		r = -ENOMEM;
		for (int i = 0; i < n; i++)
			vol_close(vols[i]);
		goto out;
	}
	for (int i = 0; i < n; i++)
		c[i].v = vols[i];

	for (round = 0; round <= MD_NEST_MAX; round++) {
		bool found = false;

		for (int i = 0; i < nc; i++) {
			if (c[i].done || c[i].sb)
				continue;
			c[i].sb = malloc(sizeof(*c[i].sb));
			if (!c[i].sb) {
				r = -ENOMEM;
				goto fail;
			}
			err_clear();
			r = md_super_read(c[i].v, c[i].sb);
			if (r == -ENOENT) {
				free(c[i].sb);
				c[i].sb = NULL;
				c[i].done = true;
				r = 0;
			} else if (r < 0) {
				goto fail;
			} else
				found = true;
		}
		if (!found)
			break;
		if (round == MD_NEST_MAX) {
			r = err_set(-ELOOP, "md arrays nested more than %d deep", MD_NEST_MAX);
			goto fail;
		}
		/* Assemble each array UUID, in the order members were given;
		 * the array takes the place of its first member. */
		for (int i = 0; i < nc; i++) {
			unsigned k = 0;
			struct vol *arr;

			if (!c[i].sb)
				continue;
			for (int j = i; j < nc; j++)
				if (c[j].sb &&
				    memcmp(c[j].sb->set_uuid, c[i].sb->set_uuid, 16) == 0)
					g[k++] = &c[j];
			r = md_array_open(g, k, o, &arr);
			if (r < 0)
				goto fail;
			c[i].v = arr;
			c[i].sb = NULL;
			c[i].done = false;
		}
		/* drop the emptied slots */
		int w = 0;
		for (int i = 0; i < nc; i++)
			if (c[i].v)
				c[w++] = c[i];
		nc = w;
	}

	res = calloc(nc > 0 ? (size_t)nc : 1, sizeof(*res));
	if (!res) {
		r = -ENOMEM;
		goto fail;
	}
	for (int i = 0; i < nc; i++)
		res[i] = c[i].v;
	*out = res;
	*nout = nc;
	r = 0;
	goto out;
fail:
	for (int i = 0; i < nc; i++) {
		/* An array assembled in this run has written nothing yet:
		 * closing it writes nothing either (never marked active). */
		vol_close(c[i].v);
		free(c[i].sb);
	}
out:
	free(c);
	free(g);
	return r;
}

/* ---- managing a running array (md.h) ---- */

static struct md_array *md_of(struct vol *v)
{
	return v && v->ops == &md_ops ? to_md(v) : NULL;
}

/* Where a member is: its role, a spare or retired entry.  Called with
 * a->lock held. */
enum md_where { MD_AT_NONE, MD_AT_ROLE, MD_AT_SPARE, MD_AT_RETIRED };

static enum md_where md_find(struct md_array *a, const char *name, struct vol *vol, unsigned *idx)
{
	for (unsigned i = 0; i < a->n; i++)
		if (a->m[i].vol &&
		    (a->m[i].vol == vol || (name && !strcmp(a->m[i].vol->name, name)))) {
			*idx = i;
			return MD_AT_ROLE;
		}
	for (unsigned i = 0; i < a->nspare; i++)
		if (a->spare[i].vol == vol || (name && !strcmp(a->spare[i].vol->name, name))) {
			*idx = i;
			return MD_AT_SPARE;
		}
	for (unsigned i = 0; i < a->nretired; i++)
		if (a->retired[i].vol && (a->retired[i].vol == vol ||
		                          (name && !strcmp(a->retired[i].vol->name, name)))) {
			*idx = i;
			return MD_AT_RETIRED;
		}
	return MD_AT_NONE;
}

static void md_info_add(struct md_array_info *in, struct vol *vol, int role, int slot,
                        enum md_member_state st)
{
	struct md_member_info *mi = &in->m[in->nmembers++];

	snprintf(mi->name, sizeof(mi->name), "%s", vol ? vol->name : "");
	mi->vol = vol;
	mi->role = role;
	mi->slot = slot;
	mi->state = st;
}

int md_array_info(struct vol *v, struct md_array_info *in)
{
	struct md_array *a = md_of(v);

	memset(in, 0, sizeof(*in));
	if (!a)
		return -EINVAL;
	pthread_mutex_lock(&a->lock);
	/* A failed role shows twice: "removed" in its place, faulty after. */
	in->m = calloc(2 * a->n + a->nspare + a->nretired + 1, sizeof(*in->m));
	if (!in->m) {
		pthread_mutex_unlock(&a->lock);
		return -ENOMEM;
	}
	const struct md_super *sb = NULL;
	for (unsigned r = 0; r < a->n && !sb; r++)
		sb = a->m[r].sb;
	for (unsigned i = 0; i < a->nspare && !sb; i++)
		sb = a->spare[i].sb;
	snprintf(in->name, sizeof(in->name), "%s", a->vol.name);
	if (sb) {
		memcpy(in->set_name, sb->set_name, sizeof(in->set_name));
		md_uuid_format(sb->set_uuid, in->uuid);
		in->layout = sb->layout;
		in->chunk = sb->chunk * 512;
	}
	in->level = a->level;
	in->raid_disks = a->n;
	in->array_size = a->vol.size;
	in->dev_size = a->size * 512;
	in->events = a->events;
	in->readonly = a->readonly;
	in->active = atomic_load(&a->active);
	/* Roles in order: the member holding it, or "removed". */
	for (unsigned r = 0; r < a->n; r++) {
		struct md_member *mm = &a->m[r];
		if (!mm->vol || mm->failed) {
			in->degraded = true;
			md_info_add(in, NULL, (int)r, -1, MD_MEMBER_REMOVED);
		} else if (mm->recovering) {
			in->degraded = in->recovering = true;
			in->working_devs++;
			in->spare_devs++;
			md_info_add(in, mm->vol, (int)r, (int)mm->sb->dev_number,
			            MD_MEMBER_REBUILDING);
		} else {
			in->active_devs++;
			in->working_devs++;
			md_info_add(in, mm->vol, (int)r, (int)mm->sb->dev_number,
			            MD_MEMBER_IN_SYNC);
		}
	}
	for (unsigned i = 0; i < a->nspare; i++) {
		in->working_devs++;
		in->spare_devs++;
		md_info_add(in, a->spare[i].vol, -1, (int)a->spare[i].sb->dev_number,
		            MD_MEMBER_SPARE);
	}
	for (unsigned r = 0; r < a->n; r++) {
		struct md_member *mm = &a->m[r];
		if (mm->vol && mm->failed) {
			in->failed_devs++;
			md_info_add(in, mm->vol, -1, mm->sb ? (int)mm->sb->dev_number : -1,
			            MD_MEMBER_FAULTY);
		}
	}
	for (unsigned i = 0; i < a->nretired; i++) {
		struct md_member *mm = &a->retired[i];
		if (!mm->vol)
			continue;
		in->failed_devs++;
		md_info_add(in, mm->vol, -1, mm->sb ? (int)mm->sb->dev_number : -1,
		            MD_MEMBER_FAULTY);
	}
	in->checking = a->scrub_running;
	in->check_repair = a->scrub_running ? a->scrub_repair : a->scrub_req == MD_CHECK_REPAIR;
	in->check_pending = a->scrub_req != MD_CHECK_STOP;
	if (a->scrub_running) {
		in->check_total = a->vol.size;
		in->check_done = atomic_load(&a->scrub_pos);
		double secs = (double)(clock_now_ns() - a->scrub_t0_ns) / 1e9;
		in->check_speed = secs > 0 ? (double)in->check_done / secs : 0;
	}
	in->check_ended = a->scrub_ended;
	if (a->scrub_ended) {
		in->check_ended_repair = a->scrub_ended_repair;
		in->check_status = a->scrub_status;
		in->check_mismatched = a->scrub_rep.mismatched;
		in->check_ranges = a->scrub_rep.ranges;
		in->check_repaired = a->scrub_rep.repaired;
		in->check_read_errors = a->scrub_rep.read_errors;
		if (a->scrub_status < 0 && a->scrub_status != -EINTR)
			in->check_done = a->scrub_rep.checked;
	}
	if (in->recovering) {
		in->rec_total = a->size * 512;
		in->rec_done = a->rec_running ? atomic_load(&a->rec_pos) : 0;
		if (a->rec_running) {
			double secs = (double)(clock_now_ns() - a->rec_t0_ns) / 1e9;
			uint64_t done = in->rec_done > a->rec_from ? in->rec_done - a->rec_from : 0;
			in->rec_speed = secs > 0 ? (double)done / secs : 0;
		} else {
			/* Not running now: what the superblocks record. */
			for (unsigned r = 0; r < a->n; r++)
				if (a->m[r].vol && a->m[r].recovering)
					in->rec_done = md_manage_recovery_from(a->m[r].sb, a->size);
		}
	}
	pthread_mutex_unlock(&a->lock);
	return 0;
}

void md_array_info_free(struct md_array_info *info)
{
	free(info->m);
	info->m = NULL;
	info->nmembers = 0;
}

/* The running array v and where member is in it, for the management
 * calls that change members: 0 with a->lock held, or -errno with err_set()
 * detail (not an md array, served read-only, no such member), unlocked. */
static int md_locate(struct vol *v, const char *member, struct md_array **ap,
                     enum md_where *at, unsigned *idx)
{
	struct md_array *a = md_of(v);

	if (!a)
		return err_set(-EINVAL, "%s is not an md array", v->name);
	if (a->readonly)
		return err_set(-EROFS, "%s is served read-only: its members are not changed",
		               a->vol.name);
	pthread_mutex_lock(&a->lock);
	*at = md_find(a, member, NULL, idx);
	if (*at == MD_AT_NONE) {
		pthread_mutex_unlock(&a->lock);
		return err_set(-ENOENT, "%s has no member %s", a->vol.name, member);
	}
	*ap = a;
	return 0;
}

int md_array_fail(struct vol *v, const char *member)
{
	struct md_array *a;
	enum md_where at;
	unsigned i;
	int r = md_locate(v, member, &a, &at, &i);

	if (r < 0)
		return r;
	if (at == MD_AT_RETIRED || (at == MD_AT_ROLE && a->m[i].failed)) {
		pthread_mutex_unlock(&a->lock);
		return 0; /* already faulty */
	}
	if (at == MD_AT_SPARE) {
		/* A faulty spare: out of the standby list, kept until removed. */
		struct md_member *nr = realloc(a->retired, (a->nretired + 1) * sizeof(*nr));
		if (!nr) {
			pthread_mutex_unlock(&a->lock);
			return -ENOMEM;
		}
		a->retired = nr;
		struct md_member sp = a->spare[i];
		memmove(a->spare + i, a->spare + i + 1, (a->nspare - i - 1) * sizeof(*a->spare));
		a->nspare--;
		sp.failed = true;
		if (sp.sb->dev_number < MD_SB_MAX_DEV)
			a->roles[sp.sb->dev_number] = MD_ROLE_FAULTY;
		a->retired[a->nretired++] = sp;
		log_warn("%s: spare %s marked faulty by request", a->vol.name, sp.vol->name);
		if (md_array_sync(a, atomic_load(&a->active)) < 0)
			log_warn("%s: could not record the failure in any superblock", a->vol.name);
		pthread_mutex_unlock(&a->lock);
		return 0;
	}
	struct vol *vol = a->m[i].vol;
	bool recovering = a->m[i].recovering, running = a->rec_running && !a->rec_dead;
	pthread_mutex_unlock(&a->lock);
	if (!recovering) {
		/* raid_member_fail decides, atomically, whether the array can
		 * lose it; md_member_failed records it. */
		r = raid_fail_member(a->raid, i);
		if (r == -EBUSY)
			return err_set(
			    -EBUSY,
			    "%s: refusing to fail %s: the array cannot lose it (it holds "
			    "the last in-sync copy of some data, or the parity has no "
			    "member left to spare)",
			    a->vol.name, member);
		return r;
	}
	if (!running) {
		/* No rebuild runs to notice: end its recovery here. */
		if (a->m[i].slice_given)
			raid_recover_abort(a->raid, i);
		pthread_mutex_lock(&a->lock);
		if (a->m[i].vol == vol && a->m[i].recovering)
			md_rec_target_failed(a, i, -EIO);
		pthread_mutex_unlock(&a->lock);
		return 0;
	}
	/* The rebuild sees the error at its next piece and marks it faulty
	 * (md_rec_run): wait for that, so that the caller sees it done. */
	raid_fail_member(a->raid, i);
	for (int t = 0; t < 3000; t++) {
		pthread_mutex_lock(&a->lock);
		bool done = a->m[i].vol != vol || a->m[i].failed;
		pthread_mutex_unlock(&a->lock);
		if (done)
			return 0;
		usleep(10000);
	}
	return err_set(-ETIMEDOUT,
	               "%s: %s is marked failed, but the rebuild has not let go of it yet",
	               a->vol.name, member);
}

/* Close what md holds of mm (the RAID vol let go of its data area). */
static void md_member_close(struct md_member *mm)
{
	if (mm->slice && !mm->slice_given)
		vol_close(mm->slice);
	vol_close(mm->vol);
	free(mm->sb);
	memset(mm, 0, sizeof(*mm));
}

int md_array_remove(struct vol *v, const char *member)
{
	struct md_array *a;
	enum md_where at;
	unsigned i;
	int r = md_locate(v, member, &a, &at, &i);

	if (r < 0)
		return r;
	if (at == MD_AT_ROLE && !a->m[i].failed) {
		bool rec = a->m[i].recovering;
		pthread_mutex_unlock(&a->lock);
		return err_set(-EBUSY,
		               "%s: %s is an active member (%s): fail it first (`uraid fail`)",
		               a->vol.name, member, rec ? "being rebuilt" : "in sync");
	}
	struct md_member *mm = at == MD_AT_ROLE    ? &a->m[i]
	                       : at == MD_AT_SPARE ? &a->spare[i]
	                                           : &a->retired[i];
	struct vol *vol = mm->vol, *data = mm->data;
	unsigned slot = mm->sb ? mm->sb->dev_number : MD_SB_MAX_DEV;
	pthread_mutex_unlock(&a->lock);

	if (data) {
		/* The RAID vol may hold its data area (a failed role, or one
		 * it retired): no request may be planned on it meanwhile. */
		r = md_io_hold(a);
		if (r == 0) {
			r = raid_detach_member(a->raid, data);
			md_io_release(a);
		}
		if (r == -ENOENT)
			r = 0; /* never given, or given back */
		if (r < 0)
			return err_set(r,
			               "%s: %s is still in use by the array (a request on it has "
			               "not ended); try again",
			               a->vol.name, member);
	}
	/* Found again: a spare may have taken its role meanwhile (retiring
	 * it), or a rebuild failed it. */
	pthread_mutex_lock(&a->lock);
	at = md_find(a, NULL, vol, &i);
	if (at == MD_AT_ROLE) {
		md_member_close(&a->m[i]);
	} else if (at == MD_AT_SPARE) {
		md_member_close(&a->spare[i]);
		memmove(a->spare + i, a->spare + i + 1, (a->nspare - i - 1) * sizeof(*a->spare));
		a->nspare--;
	} else if (at == MD_AT_RETIRED) {
		md_member_close(&a->retired[i]);
		memmove(a->retired + i, a->retired + i + 1,
		        (a->nretired - i - 1) * sizeof(*a->retired));
		a->nretired--;
	}
	if (slot < MD_SB_MAX_DEV && slot < a->max_dev)
		a->roles[slot] = MD_ROLE_FAULTY; /* as md records a removed device */
	log_info("%s: %s removed", a->vol.name, member);
	if (md_array_sync(a, atomic_load(&a->active)) < 0)
		log_warn("%s: could not record the removal in any superblock", a->vol.name);
	pthread_mutex_unlock(&a->lock);
	return 0;
}

int md_array_add(struct vol *v, struct vol *nv, bool force)
{
	struct md_array *a = md_of(v);
	struct md_super *nsb = NULL;
	const struct md_super *tmpl = NULL;
	struct vol *tmpl_vol = NULL;
	uint32_t *used = NULL;
	uint64_t end_sb;
	unsigned nused = 0;
	int r;

	if (!a)
		return err_set(-EINVAL, "%s is not an md array", v->name);
	if (a->readonly)
		return err_set(-EROFS, "%s is served read-only: no member can be added",
		               a->vol.name);
	if (!a->recover)
		return err_set(-EINVAL,
		               "%s: %s has no online recovery here (a level without redundancy, or "
		               "served with --no-rebuild)",
		               a->vol.name, md_level_name(a->level));
	if (nv->block_min > a->vol.block_min)
		return err_set(-EINVAL, "%s: %s has blocks of %u bytes, the array %u", a->vol.name,
		               nv->name, nv->block_min, a->vol.block_min);
	/* Probed outside the lock (nv may be slow): what it is checked
	 * against (uuid, data offset, size) never changes. */
	nsb = malloc(sizeof(*nsb));
	if (!nsb)
		return -ENOMEM;
	pthread_mutex_lock(&a->lock);
	for (unsigned r2 = 0; r2 < a->n && !tmpl; r2++)
		if (a->m[r2].vol && !a->m[r2].failed && !a->m[r2].recovering)
			tmpl = a->m[r2].sb;
	if (tmpl)
		*nsb = *tmpl;
	pthread_mutex_unlock(&a->lock);
	if (!tmpl) {
		free(nsb);
		return err_set(-ENODEV, "%s: no member in sync to take the superblock from",
		               a->vol.name);
	}
	r = md_manage_probe_new(nv, nv->name, nsb->set_uuid, a->vol.name, force, &end_sb);
	if (r == 0)
		r = md_manage_check_size(nv, nv->name, nsb, a->vol.name);
	if (r < 0) {
		free(nsb);
		return r;
	}
	tmpl = NULL;
	pthread_mutex_lock(&a->lock);
	for (unsigned r2 = 0; r2 < a->n && !tmpl; r2++)
		if (a->m[r2].vol && !a->m[r2].failed && !a->m[r2].recovering) {
			tmpl = a->m[r2].sb;
			tmpl_vol = a->m[r2].vol;
		}
	if (!tmpl) {
		r = err_set(-ENODEV, "%s: no member in sync to take the superblock from",
		            a->vol.name);
		goto out;
	}
	used = calloc(a->n + a->nspare + a->nretired + 1, sizeof(*used));
	if (!used) {
		r = -ENOMEM;
		goto out;
	}
	for (unsigned r2 = 0; r2 < a->n; r2++)
		if (a->m[r2].sb)
			used[nused++] = a->m[r2].sb->dev_number;
	for (unsigned k = 0; k < a->nspare; k++)
		used[nused++] = a->spare[k].sb->dev_number;
	for (unsigned k = 0; k < a->nretired; k++)
		if (a->retired[k].sb)
			used[nused++] = a->retired[k].sb->dev_number;
	r = md_manage_pick_slot(a->roles, a->max_dev, a->n, used, nused, tmpl->data_offset,
	                        a->vol.name);
	if (r < 0)
		goto out;
	unsigned slot = (unsigned)r;
	if (a->nspare == a->spare_cap) {
		struct md_member *ns = realloc(a->spare, (a->spare_cap + 4) * sizeof(*ns));
		if (!ns) {
			r = -ENOMEM;
			goto out;
		}
		a->spare = ns;
		a->spare_cap += 4;
	}
	/* Checked: from here on we write, NEW first. */
	r = md_manage_new_super(nv, nv->name, tmpl, tmpl_vol, slot, end_sb, nsb);
	if (r < 0)
		goto out;
	uint32_t old_max = a->max_dev;
	if (slot >= a->max_dev) {
		for (uint32_t k = a->max_dev; k < slot; k++)
			a->roles[k] = MD_ROLE_SPARE;
		a->max_dev = slot + 1;
	}
	a->roles[slot] = MD_ROLE_SPARE;
	md_manage_set_state(nsb, a->events + 1, a->max_dev, a->roles);
	nsb->resync_offset = atomic_load(&a->active) || a->unclean ? 0 : MD_MAX_SECTOR;
	err_clear();
	r = md_super_write(nv, nsb);
	if (r < 0) {
		a->max_dev = old_max;
		goto out;
	}
	a->spare[a->nspare++] = (struct md_member){.vol = nv, .sb = nsb};
	nsb = NULL;
	log_info("%s: %s added as a spare (slot %u)", a->vol.name, nv->name, slot);
	if (md_array_sync(a, atomic_load(&a->active)) < 0)
		log_warn("%s: could not record the new member in any superblock", a->vol.name);
	/* Hot spare logic: it takes a role that is gone, now (a check
	 * running gives way). */
	a->rec_dead = false;
	if (a->scrub_running)
		atomic_store(&a->scrub_stop, true);
	if (!a->rec_started) {
		int e = pthread_create(&a->rec_thread, NULL, md_rec_main, a);
		if (e == 0)
			a->rec_started = true;
		else
			log_warn("%s: cannot start the recovery thread: %s", a->vol.name,
			         strerror(e));
	} else {
		pthread_cond_signal(&a->rec_cond);
	}
	r = 0;
out:
	pthread_mutex_unlock(&a->lock);
	free(used);
	free(nsb);
	return r;
}

int md_array_check(struct vol *v, enum md_check_action action)
{
	struct md_array *a = md_of(v);
	int r = 0;

	if (!a)
		return err_set(-EINVAL, "%s is not an md array", v->name);
	if (!md_level_redundant(a->level))
		return err_set(-EINVAL, "%s: %s keeps no second copy or parity to check",
		               a->vol.name, md_level_name(a->level));
	if (action == MD_CHECK_REPAIR && a->readonly)
		return err_set(-EROFS, "%s is served read-only: it can be checked, not repaired",
		               a->vol.name);
	pthread_mutex_lock(&a->lock);
	if (action != MD_CHECK_STOP && md_degraded(a)) {
		r = err_set(-EINVAL, "%s is degraded: a check needs every copy (add a member first)",
		            a->vol.name);
		goto out;
	}
	if (action == MD_CHECK_STOP) {
		a->scrub_req = MD_CHECK_STOP;
		if (a->scrub_running)
			atomic_store(&a->scrub_stop, true);
		goto out;
	}
	if (a->scrub_running || a->scrub_req != MD_CHECK_STOP) {
		r = err_set(-EBUSY, "%s: a %s is running already", a->vol.name,
		            a->scrub_running && a->scrub_repair ? "repair" : "check");
		goto out;
	}
	a->scrub_req = action;
	if (!a->rec_started) {
		/* Arrays without spares or recovery have no thread yet. */
		int e = pthread_create(&a->rec_thread, NULL, md_rec_main, a);
		if (e != 0) {
			a->scrub_req = MD_CHECK_STOP;
			r = err_set(-e, "%s: cannot start the check: %s", a->vol.name, strerror(e));
			goto out;
		}
		a->rec_started = true;
	} else {
		pthread_cond_signal(&a->rec_cond);
	}
	log_info("%s: %s asked for", a->vol.name,
	         action == MD_CHECK_REPAIR ? "repair" : "check");
out:
	pthread_mutex_unlock(&a->lock);
	return r;
}
