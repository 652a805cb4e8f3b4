/* md_sync.c — what runs over a whole md array besides its clients: the
 * resync of an array found unclean (before it is served), and the
 * background thread that rebuilds members under recovery (giving spares
 * the roles that are gone, as md's hot spares do; recovery_offset saved
 * every 64 MiB and at close) and runs the checks md_array_check asks for,
 * both held to their speed limits (md_throttle.h).  The superblock
 * transitions are md_manage.c's, the array's state md_state.c's. */
#include "md_internal.h"
#include "md_manage.h"
#include "md_recover.h"

#include "core/clock.h"
#include "core/log.h"
#include "disc/raid/raid_rebuild.h"
#include "disc/slice.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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
int md_resync(struct md_array *a)
{
	const uint64_t piece = 1u << 20;
	uint64_t size = a->vol.size, done = 0;
	void *buf;
	int r;

	if (!(buf = vol_buf_alloc(piece)))
		return -ENOMEM;
	r = md_mark_active(a);
	if (r == 0 && a->bm.map && a->bm.trusted) {
		const struct md_bitmap_info *h = md_bitmap_header(a->bm.map);
		uint64_t n = md_bitmap_chunks(a->bm.map), dirty = md_bitmap_dirty(a->bm.map);
		log_warn("%s: array was not shut down cleanly; resyncing the %llu of %llu "
		         "write-intent bitmap chunks that are dirty (chunk %u bytes)",
		         a->vol.name, (unsigned long long)dirty, (unsigned long long)n,
		         h->chunksize);
		for (uint64_t c = 0; c < n && r == 0; c++) {
			uint64_t off[2], len[2];
			if (!md_bitmap_test(a->bm.map, c))
				continue;
			/* Under a reshape, where the chunk lies in both geometries. */
			unsigned k = md_bitmap_unmap_all(&a->bm.geom, c * h->chunksize,
			                                 (c + 1) * h->chunksize, off, len);
			for (unsigned i = 0; i < k && r == 0; i++) {
				/* a raid10's index may reach past what is served (a
				 * reshape's new space, which it fills as it goes) */
				if (off[i] >= size)
					continue;
				if (len[i] > size - off[i])
					len[i] = size - off[i];
				r = md_resync_range(a, buf, piece, off[i], off[i] + len[i]);
				done += len[i];
			}
		}
	} else if (r == 0) {
		log_warn("%s: array was not shut down cleanly; resyncing its %llu bytes%s",
		         a->vol.name, (unsigned long long)size,
		         a->bm.map ? " (its write-intent bitmap is out of date)" : "");
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
	if (a->bm.map && !md_degraded(a))
		md_bitmap_clear_all(a->bm.map, a->events);
	pthread_mutex_unlock(&a->lock);
	log_info("%s: resync done (%llu bytes rewritten)", a->vol.name, (unsigned long long)done);
	return 0;
}

/* ---- online recovery ---- */

/* A member being recovered failed (a write to it, or its rebuild's): out
 * of the array for good, recorded as faulty.  Called with a->lock held. */
void md_rec_target_failed(struct md_array *a, unsigned role, int err)
{
	struct md_member *mm = &a->m[role];
	bool first = !mm->failed; /* md_member_failed may have told already */

	mm->recovering = false;
	mm->failed = true;
	if (first)
		md_ev(a, "FailSpare", mm);
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

	/* md_error raises no recovery on an MD_BROKEN array: nothing to
	 * rebuild a role from. */
	if (!a->nspare || raid_failed(a->raid))
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
		raid_set_write_mostly(a->raid, role, mm->sb->devflags & MD_DEVFLAG_WRITE_MOSTLY);
	}
	return r;
}

/* ---- speed limits (md's speed_limit_min / speed_limit_max) ---- */

#define MD_SYNC_NAP_US 50000u /* naps short enough to hear a stop */

static unsigned md_client_ops(struct md_array *a)
{
	unsigned ops = 0;

	for (unsigned i = 0; i < MD_GATE_SLOTS; i++)
		ops += atomic_load_explicit(&a->gate.in[i].ops, memory_order_relaxed);
	return ops;
}

/* A sync (a recovery, a check) has done bytes of each member since it
 * began (begin: true at its start): hold it as long as its speed limits
 * say (md_throttle.h), asking again after each nap, so that clients
 * leaving let it go at once.  Called by the recovery thread only, without
 * a->lock; returns early once stop is set. */
void md_sync_throttle(struct md_array *a, uint64_t done, bool begin, atomic_bool *stop)
{
	uint64_t now = clock_now_ns();
	uint64_t due = md_throttle_due(&a->sync, now, done, md_client_ops(a), begin);

	while (now < due && !atomic_load(stop) && !atomic_load(&a->rec.stop)) {
		uint64_t us = (due - now) / 1000;
		usleep(us < MD_SYNC_NAP_US ? (useconds_t)us + 1 : MD_SYNC_NAP_US);
		now = clock_now_ns();
		due = md_throttle_due(&a->sync, now, done, md_client_ops(a), false);
	}
}

/* The background thread's side of the recovery driver (md_recover.h). */
static void md_rec_progress(void *ctx, uint64_t done)
{
	struct md_array *a = ctx;

	atomic_store(&a->rec.pos, done);
	md_ev_progress(a, &a->rec.ev_next, done, a->rec.to);
}

static bool md_rec_failed(void *ctx)
{
	struct md_array *a = ctx;
	bool failed = false;

	for (unsigned role = 0; role < a->n; role++)
		failed |= raid_recover_error(a->raid, role) != 0;
	return failed;
}

static bool md_rec_stopping(void *ctx)
{
	struct md_array *a = ctx;

	return atomic_load(&a->rec.stop);
}

static int md_rec_checkpoint(void *ctx, uint64_t done)
{
	struct md_array *a = ctx;
	int r = 0;

	pthread_mutex_lock(&a->lock);
	for (unsigned role = 0; role < a->n && r == 0; role++)
		if (a->m[role].recovering)
			r = md_manage_checkpoint(a->m[role].vol, a->m[role].sb, done);
	pthread_mutex_unlock(&a->lock);
	if (r < 0) {
		log_warn("%s: saving the recovery offset: %s", a->vol.name, err_detail(r));
		return r;
	}
	log_debug("%s: recovery at %llu of %llu bytes", a->vol.name, (unsigned long long)done,
	          (unsigned long long)a->rec.to);
	return 0;
}

static void md_rec_throttle(void *ctx, uint64_t done)
{
	struct md_array *a = ctx;

	md_sync_throttle(a, done, false, &a->rec.stop);
}

static const struct md_recover_ops md_rec_ops = {
    .progress = md_rec_progress,
    .failed = md_rec_failed,
    .stopping = md_rec_stopping,
    .checkpoint = md_rec_checkpoint,
    .throttle = md_rec_throttle,
};

/* One rebuild of every recovering role, from the lowest offset recorded
 * among them (a member recorded further on is marked back there first).
 * Called with a->lock held; drops it while rebuilding. */
static void md_rec_run(struct md_array *a)
{
	struct vol **targets = calloc(a->n, sizeof(*targets));
	struct md_super **sbs = calloc(a->n, sizeof(*sbs));
	struct md_recover rc = {.raid = a->raid, .targets = targets, .ops = &md_rec_ops, .ctx = a};
	uint64_t from;
	char list[256] = "";
	size_t len = 0;
	int r;

	if (!targets || !sbs) {
		free(targets);
		free(sbs);
		a->rec.dead = true;
		return;
	}
	for (unsigned role = 0; role < a->n; role++) {
		struct md_member *mm = &a->m[role];
		if (!mm->recovering)
			continue;
		sbs[role] = mm->sb;
		targets[role] = mm->slice;
		if (len < sizeof(list) - 8)
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s (role %u)",
			                        len ? ", " : "", mm->vol->name, role);
	}
	md_recover_plan(&rc, sbs, a->n, a->size);
	free(sbs);
	from = rc.from;
	for (unsigned role = 0; role < a->n; role++) {
		struct md_member *mm = &a->m[role];
		if (mm->recovering && (r = md_manage_restart(mm->vol, mm->sb, from)) < 0)
			log_warn("%s: %s", a->vol.name, err_detail(r));
	}
	log_info("%s: recovering %s from byte %llu of %llu, while serving", a->vol.name, list,
	         (unsigned long long)from, (unsigned long long)a->rec.to);
	uint64_t t0 = clock_now_ns();
	a->rec.running = true;
	a->rec.from = from;
	md_sync_throttle(a, from, true, &a->rec.stop);
	a->rec.t0_ns = t0;
	atomic_store(&a->rec.pos, from);
	md_ev_progress_begin(a, &a->rec.ev_next, from, a->rec.to);
	pthread_mutex_unlock(&a->lock);

	err_clear();
	r = md_recover_run(&rc);
	double secs = (double)(clock_now_ns() - t0) / 1e9;
	char detail[512];
	snprintf(detail, sizeof(detail), "%s", r < 0 ? err_detail(r) : "");
	/* The RAID vol's state first (it waits for writes in flight, which
	 * may need a->lock), then the superblocks'. */
	int *end = calloc(a->n, sizeof(*end));
	bool stopped = r == -EINTR && atomic_load(&a->rec.stop);
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
	a->rec.running = false;
	if (!stopped)
		md_ev_finished(a, 0); /* stopped: it resumes at the next start */
	bool any_failed = false, synced = false;
	for (unsigned role = 0; end && role < a->n; role++) {
		if (end[role] < 0) {
			md_rec_target_failed(a, role, end[role]);
			any_failed = true;
		} else if (end[role] == 1) {
			md_manage_recovery_done(a->m[role].sb);
			a->m[role].recovering = false;
			synced = true;
			md_ev(a, "SpareActive", &a->m[role]);
			log_info("%s: member %u (%s) is rebuilt and in sync (%.1f MiB in %.1f s, "
			         "%.1f MiB/s)",
			         a->vol.name, role, a->m[role].vol->name,
			         (double)(a->rec.to - from) / 1048576.0, secs,
			         secs > 0 ? (double)(a->rec.to - from) / 1048576.0 / secs : 0.0);
		}
	}
	if (synced && md_array_sync(a, atomic_load(&a->active)) < 0)
		log_warn("%s: could not record the recovery in any superblock", a->vol.name);
	if (!end) {
		a->rec.dead = true;
	} else if (r < 0 && !stopped && !any_failed) {
		/* Data gone beyond what redundancy gives back, or a checkpoint
		 * that could not be saved: the rebuild stops (its members stay
		 * recovering, written by clients, and resume at the next start). */
		log_error("%s: recovery stopped: %s", a->vol.name, detail);
		a->rec.dead = true;
	}
	free(end);
	free(targets);
}

/* ---- checks: md's sync_action "check" and "repair" ---- */

#define MD_CHECK_SHOW_MAX 20 /* mismatches logged, then only counted */

static void md_scrub_mismatch(void *ctx, uint64_t off, uint64_t len)
{
	struct md_array *a = ctx;

	if (a->scrub.shown++ < MD_CHECK_SHOW_MAX)
		log_warn("%s: check: copies differ: %llu bytes at %llu%s", a->vol.name,
		         (unsigned long long)len, (unsigned long long)off,
		         a->scrub.repair ? " (repaired)" : "");
}

static int md_scrub_progress(void *ctx, uint64_t done)
{
	struct md_array *a = ctx;

	atomic_store(&a->scrub.pos, done);
	md_ev_progress(a, &a->scrub.ev_next, done, a->vol.size);
	/* The limits are per member, as md's are: the array bytes checked
	 * so far in bytes of each member. */
	md_sync_throttle(a,
	                 (uint64_t)((double)done * (double)(a->size * 512) / (double)a->vol.size),
	                 false, &a->scrub.stop);
	return atomic_load(&a->rec.stop) || atomic_load(&a->scrub.stop);
}

/* Run the check asked for.  Called with a->lock held; drops it while the
 * check runs. */
static void md_scrub_run(struct md_array *a)
{
	struct raid_check_report rep;
	struct raid_check_cb cb = {md_scrub_mismatch, md_scrub_progress, a};
	const char *what = a->scrub.req == MD_CHECK_REPAIR ? "repair" : "check";

	a->scrub.repair = a->scrub.req == MD_CHECK_REPAIR;
	a->scrub.req = MD_CHECK_STOP;
	a->scrub.running = true;
	a->scrub.shown = 0;
	a->scrub.t0_ns = clock_now_ns();
	atomic_store(&a->scrub.pos, 0);
	/* mdadm sees a check as it sees a rebuild: RebuildStarted ...
	 * RebuildFinished, with the mismatches found. */
	md_ev_progress_begin(a, &a->scrub.ev_next, 0, a->vol.size);
	md_sync_throttle(a, 0, true, &a->scrub.stop);
	pthread_mutex_unlock(&a->lock);

	log_info("%s: %s of %llu bytes begins, while serving", a->vol.name, what,
	         (unsigned long long)a->vol.size);
	err_clear();
	int r = raid_check(a->raid, a->scrub.repair, &rep, &cb);
	double secs = (double)(clock_now_ns() - a->scrub.t0_ns) / 1e9;
	if (r == 0)
		log_info("%s: %s done: %llu bytes in %.1f s, %llu bytes in %llu ranges differ%s, "
		         "%llu read errors",
		         a->vol.name, what, (unsigned long long)rep.checked, secs,
		         (unsigned long long)rep.mismatched, (unsigned long long)rep.ranges,
		         a->scrub.repair && rep.mismatched ? " (repaired)" : "",
		         (unsigned long long)rep.read_errors);
	else if (r == -EINTR)
		log_warn("%s: %s interrupted at byte %llu", a->vol.name, what,
		         (unsigned long long)rep.checked);
	else
		log_error("%s: %s failed: %s", a->vol.name, what, err_detail(r));

	pthread_mutex_lock(&a->lock);
	a->scrub.running = false;
	a->scrub.ended = true;
	a->scrub.ended_repair = a->scrub.repair;
	a->scrub.status = r;
	a->scrub.rep = rep;
	atomic_store(&a->scrub.stop, false);
	if (!atomic_load(&a->rec.stop))
		md_ev_finished(a, r == 0 ? rep.mismatched >> 9 : 0); /* md's mismatch_cnt */
}

static void *md_rec_main(void *arg)
{
	struct md_array *a = arg;

	pthread_mutex_lock(&a->lock);
	while (!atomic_load(&a->rec.stop)) {
		bool todo = false;
		uint64_t readd_ns;
		if (md_readd_poll(a, &readd_ns))
			continue;
		for (unsigned role = 0; role < a->n; role++)
			todo |= a->m[role].recovering;
		if (!todo && !a->rec.dead && a->rec.enabled) {
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
		if (!todo && md_repl_pending(a)) {
			/* A replacement next (md's order: recovery first). */
			md_repl_run(a);
			continue;
		}
		if ((!todo || a->rec.dead) && a->scrub.req != MD_CHECK_STOP) {
			md_scrub_run(a);
			continue;
		}
		if (!todo || a->rec.dead) {
			if (readd_ns == UINT64_MAX) {
				pthread_cond_wait(&a->rec.cond, &a->lock);
			} else {
				/* A member to try again for a re-add. */
				struct timespec ts;
				uint64_t now = clock_now_ns();
				uint64_t wait = readd_ns > now ? readd_ns - now : 0;
				clock_gettime(CLOCK_REALTIME, &ts);
				wait += (uint64_t)ts.tv_nsec;
				ts.tv_sec += (time_t)(wait / 1000000000u);
				ts.tv_nsec = (long)(wait % 1000000000u);
				pthread_cond_timedwait(&a->rec.cond, &a->lock, &ts);
			}
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
int md_rec_start(struct md_array *a)
{
	/* With a bitmap the thread also retries members that fail (re-add);
	 * it builds replacements. */
	bool need = a->nspare > 0 || a->bm.map || md_repl_pending(a);
	int r;

	a->rec.to = a->size * 512;
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
	r = pthread_create(&a->rec.thread, NULL, md_rec_main, a);
	if (r != 0)
		return err_set(-r, "%s: cannot start the recovery thread: %s", a->vol.name,
		               strerror(r));
	a->rec.started = true;
	return 0;
}

int md_rec_wake(struct md_array *a)
{
	int e;

	if (a->rec.started) {
		pthread_cond_signal(&a->rec.cond);
		return 0;
	}
	e = pthread_create(&a->rec.thread, NULL, md_rec_main, a);
	if (e == 0)
		a->rec.started = true;
	return e;
}

void md_rec_stop(struct md_array *a)
{
	if (!a->rec.started)
		return;
	/* The rebuild saves where it got to and stops. */
	pthread_mutex_lock(&a->lock);
	atomic_store(&a->rec.stop, true);
	pthread_cond_broadcast(&a->rec.cond);
	pthread_mutex_unlock(&a->lock);
	pthread_join(a->rec.thread, NULL);
	a->rec.started = false;
	/* A member being recovered that a write failed on (and no rebuild
	 * ran to notice): it misses data, out it goes. */
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
