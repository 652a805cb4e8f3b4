/* md_vol.c — the md vol's ops: every request passes the gate (md_io_*,
 * which md_array_remove holds shut while it takes a member away), a write
 * marks the array active first (md_state.c) and keeps the write-intent
 * bitmap's bits (md_bm_start/end; the lazy clearing after a flush), and
 * close stops the recovery thread (md_sync.c) and marks the array clean.
 * Opening is md_assemble.c's, managing md_admin.c's. */
#include "md_internal.h"
#include "md_ppl.h"

#include "core/clock.h"
#include "core/log.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
		atomic_fetch_add(&a->gate.in[slot].n, 1);
		if (!atomic_load(&a->gate.hold)) {
			atomic_fetch_add_explicit(&a->gate.in[slot].ops, 1, memory_order_relaxed);
			return;
		}
		atomic_fetch_sub(&a->gate.in[slot].n, 1);
		pthread_mutex_lock(&a->gate.lock);
		while (atomic_load(&a->gate.hold))
			pthread_cond_wait(&a->gate.cond, &a->gate.lock);
		pthread_mutex_unlock(&a->gate.lock);
	}
}

/* The array's own counters, in this thread's slot (write: which op). */
static void md_io_count(struct md_array *a, bool write, uint64_t len, int r)
{
	unsigned slot = md_io_slot();
	const memory_order rx = memory_order_relaxed;

	if (r < 0) {
		atomic_fetch_add_explicit(&a->gate.in[slot].errors, 1, rx);
		return;
	}
	atomic_fetch_add_explicit(&a->gate.in[slot].done[write], 1, rx);
	atomic_fetch_add_explicit(&a->gate.in[slot].bytes[write], len, rx);
}

void md_io_totals(struct md_array *a, struct md_io_totals *t)
{
	memset(t, 0, sizeof(*t));
	for (unsigned i = 0; i < MD_GATE_SLOTS; i++) {
		t->errors += atomic_load_explicit(&a->gate.in[i].errors, memory_order_relaxed);
		for (unsigned w = 0; w < 2; w++) {
			t->ops[w] +=
			    atomic_load_explicit(&a->gate.in[i].done[w], memory_order_relaxed);
			t->bytes[w] +=
			    atomic_load_explicit(&a->gate.in[i].bytes[w], memory_order_relaxed);
		}
	}
}

static int md_io_leave(struct md_array *a, int r)
{
	atomic_fetch_sub(&a->gate.in[md_io_slot()].n, 1);
	return r;
}

static void md_io_release_gate(struct md_array *a);

/* Hold new requests at the gate and wait for those inside to finish:
 * 0, or -EBUSY (and the gate open again) if they have not within 10 s (a
 * member that hangs).  Not with a->lock held: a request may need it
 * (md_mark_active, a member failing). */
int md_io_hold(struct md_array *a)
{
	int t = 0;

	pthread_mutex_lock(&a->gate.lock);
	atomic_store(&a->gate.hold, true);
	pthread_mutex_unlock(&a->gate.lock);
	for (unsigned i = 0; i < MD_GATE_SLOTS; i++)
		while (atomic_load(&a->gate.in[i].n) > 0) {
			if (++t == 50000) {
				md_io_release_gate(a);
				return -EBUSY;
			}
			usleep(200);
		}
	/* The write-back cache's destage writes bypass the gate: held too,
	 * once the writes inside (which may wait for it) are through. */
	if (a->jc)
		md_jcache_pause(a->jc, true);
	return 0;
}

void md_io_release(struct md_array *a)
{
	if (a->jc)
		md_jcache_pause(a->jc, false);
	md_io_release_gate(a);
}

static void md_io_release_gate(struct md_array *a)
{
	pthread_mutex_lock(&a->gate.lock);
	atomic_store(&a->gate.hold, false);
	pthread_cond_broadcast(&a->gate.cond);
	pthread_mutex_unlock(&a->gate.lock);
}

/* Before a write of array bytes [off, off+len): its chunks' bits durable
 * (in both geometries during a reshape: md_bitmap_map_all).  On success
 * the caller calls md_bm_end once the write is done; the geometries
 * change only with no request inside (md_io_hold). */
static int md_bm_start(struct md_array *a, uint64_t off, uint64_t len)
{
	uint64_t first[2], end[2];
	unsigned n, i;
	int r = 0;

	if (!a->bm.map || !len)
		return 0;
	n = md_bitmap_map_all(&a->bm.geom, off, len, first, end);
	for (i = 0; i < n; i++) {
		if (md_bitmap_start(a->bm.map, first[i], end[i]))
			continue;
		pthread_mutex_lock(&a->lock);
		r = md_bitmap_mark(a->bm.map, first[i], end[i]);
		pthread_mutex_unlock(&a->lock);
		if (r < 0)
			break;
	}
	if (r < 0) /* ranges [0, i] are counted in */
		for (unsigned j = 0; j <= i; j++)
			md_bitmap_end(a->bm.map, first[j], end[j]);
	return r;
}

static int md_bm_end(struct md_array *a, uint64_t off, uint64_t len, int r)
{
	uint64_t first[2], end[2];

	if (a->bm.map && len) {
		unsigned n = md_bitmap_map_all(&a->bm.geom, off, len, first, end);
		for (unsigned i = 0; i < n; i++)
			md_bitmap_end(a->bm.map, first[i], end[i]);
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

	if (!a->bm.map)
		return;
	now = clock_now_ns();
	period = (uint64_t)md_bitmap_header(a->bm.map)->daemon_sleep * 1000000000u;
	if (pthread_mutex_trylock(&a->lock) != 0)
		return; /* busy: the next flush will do */
	if (begun >= a->bm.pass_ns && now - a->bm.pass_ns >= period && !md_degraded(a)) {
		a->bm.pass_ns = now;
		md_bitmap_clear_idle(a->bm.map, a->events);
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
	int r = a->jc ? md_jcache_read(a->jc, buf, len, off)
	              : a->raid->ops->read(a->raid, buf, len, off);
	md_io_count(a, false, len, r);
	return md_io_leave(a, r);
}

/* A view of the md vol when its RAID vol has none (since a level change
 * while serving, md_takeover_live.c: raid0/1/10 -> raid5/6): the layers
 * above took the md vol's VOL_CAP_VIEW at their start, so the bytes are
 * read into a buffer and handed over as one piece. */
static int md_view_copy(struct md_array *a, uint64_t len, uint64_t off, vol_view_fn fn, void *arg)
{
	void *buf = len <= SIZE_MAX ? vol_buf_alloc((size_t)len) : NULL;
	int r = buf ? a->raid->ops->read(a->raid, buf, len, off) : -ENOMEM;

	if (r == 0)
		r = fn(arg, buf, len, off);
	free(buf);
	return r;
}

static int md_view(struct vol *v, uint64_t len, uint64_t off, vol_view_fn fn, void *arg)
{
	struct md_array *a = to_md(v);
	md_io_enter(a);
	/* a write-back cache holds pages the raid vol's view would miss */
	int r = a->jc                             ? -ENOTSUP
	        : !(a->raid->caps & VOL_CAP_VIEW) ? md_view_copy(a, len, off, fn, arg)
	                                          : vol_view(a->raid, len, off, fn, arg);
	md_io_count(a, false, len, r);
	return md_io_leave(a, r);
}

static int md_extents(struct vol *v, uint64_t len, uint64_t off, vol_extent_fn fn, void *arg)
{
	struct md_array *a = to_md(v);
	md_io_enter(a);
	/* write-back: pages in the cache may lie over what the members hold as holes */
	return md_io_leave(a, a->jc ? fn(arg, len, 0) : vol_extents(a->raid, len, off, fn, arg));
}

/* What every change of the data (a write, trim or zeroing) does around
 * the RAID's own op: the array marked active and the range's bitmap bits
 * set before it, the bits' count dropped after it, and no success
 * acknowledged while a member failure is recorded nowhere. */
enum md_change_op { MD_WRITE, MD_TRIM, MD_ZEROES };

static int md_change(struct vol *v, enum md_change_op op, const void *buf, uint64_t len,
                     uint64_t off, unsigned flags)
{
	struct md_array *a = to_md(v);
	md_io_enter(a);
	/* The size went down while it waited at the gate (a shrink, which
	 * serves its --array-size from its start): nothing past it lands. */
	if (off + len > a->vol.size)
		return md_io_leave(a, -ENOSPC);
	int r = md_mark_active(a);
	if (r == 0)
		r = md_bm_start(a, off, len);
	/* Write-back: a write goes into the cache; a trim or zeroing to the
	 * array once the cache has destaged what it holds of the range. */
	bool barrier = a->jc && op != MD_WRITE;
	if (r == 0 && barrier && (r = md_jcache_barrier(a->jc, off, len)) < 0)
		r = md_bm_end(a, off, len, r);
	else if (r == 0) {
		switch (op) {
		case MD_WRITE:
			r = a->jc ? md_jcache_write(a->jc, buf, len, off, flags)
			          : a->raid->ops->write(a->raid, buf, len, off, flags);
			break;
		case MD_TRIM:
			/* A level change while serving can leave the old level's
			 * VOL_CAP_TRIM above a parity level: a no-op then (vol.h). */
			r = a->raid->caps & VOL_CAP_TRIM ? vol_trim(a->raid, len, off, flags)
			    : flags & VOL_FUA            ? vol_flush(a->raid)
			                                 : 0;
			break;
		case MD_ZEROES:
			r = vol_write_zeroes(a->raid, len, off, flags);
			break;
		}
		if (barrier)
			md_jcache_barrier_end(a->jc);
		r = md_bm_end(a, off, len, r);
	}
	r = md_failure_recorded(a, r);
	if (op == MD_WRITE)
		md_io_count(a, true, len, r);
	return md_io_leave(a, r);
}

static int md_write(struct vol *v, const void *buf, uint64_t len, uint64_t off, unsigned flags)
{
	return md_change(v, MD_WRITE, buf, len, off, flags);
}

static int md_flush(struct vol *v)
{
	struct md_array *a = to_md(v);
	md_io_enter(a);
	uint64_t begun = clock_now_ns();
	/* Write-back: what was acknowledged is on the flushed journal, or
	 * with the array's write-behind (md_jcache_flush). */
	int r = md_failure_recorded(a, a->jc ? md_jcache_flush(a->jc) : vol_flush(a->raid));
	if (r == 0)
		md_bm_after_flush(a, begun);
	return md_io_leave(a, r);
}

static int md_trim(struct vol *v, uint64_t len, uint64_t off, unsigned flags)
{
	return md_change(v, MD_TRIM, NULL, len, off, flags);
}

static int md_write_zeroes(struct vol *v, uint64_t len, uint64_t off, unsigned flags)
{
	return md_change(v, MD_ZEROES, NULL, len, off, flags);
}

static void md_free(struct md_array *a)
{
	for (unsigned r = 0; r < a->n; r++) {
		free(a->m[r].sb);
		if (a->m[r].repl)
			free(a->m[r].repl->sb);
		free(a->m[r].repl);
	}
	for (unsigned i = 0; i < a->nspare; i++)
		free(a->spare[i].sb);
	for (unsigned i = 0; i < a->nretired; i++)
		free(a->retired[i].sb);
	for (unsigned i = 0; i < a->nstale; i++)
		free(a->stale[i].sb);
	free(a->stale);
	free(a->m);
	free(a->spare);
	free(a->retired);
	free(a->journal.sb);
	free(a->jn_members);
	md_bitmap_free(a->bm.map);
	pthread_cond_destroy(&a->rec.cond);
	pthread_mutex_destroy(&a->lock);
	pthread_cond_destroy(&a->gate.cond);
	pthread_mutex_destroy(&a->gate.lock);
	vol_fini(&a->vol);
	free(a);
}

static void md_close(struct vol *v)
{
	struct md_array *a = to_md(v);

	md_reshape_stop(a);
	md_rec_stop(a);
	/* Write-back: everything cached onto the members first. */
	int dr = a->jc ? md_jcache_drain(a->jc) : 0;
	md_jcache_close(a->jc);
	a->jc = NULL;
	if (!a->readonly && atomic_load(&a->active)) {
		/* Data durable first, then the clean mark; the journal's tail
		 * past everything (the members flushed). */
		int r = vol_flush(a->raid);
		if (r == 0 && a->jn)
			r = md_journal_checkpoint(a->jn);
		if (r == 0)
			r = dr;
		pthread_mutex_lock(&a->lock);
		/* Every write done and durable: the bitmap ends clear, with
		 * events_cleared at the events the clean mark takes. */
		if (r == 0 && a->bm.map && !md_degraded(a))
			md_bitmap_clear_all(a->bm.map, a->events + 1);
		if (r == 0)
			r = md_array_sync(a, false);
		pthread_mutex_unlock(&a->lock);
		if (r < 0)
			log_warn("%s: could not mark the array clean: %s", v->name, err_detail(r));
	}
	md_journal_close(a->jn);
	a->jn = NULL;
	vol_close(a->raid); /* closes the slices; the members are ours */
	md_ppl_close(a);
	vol_close(a->journal.vol);
	for (unsigned r = 0; r < a->n; r++) {
		if (!a->m[r].slice_given)
			vol_close(a->m[r].slice);
		vol_close(a->m[r].vol);
		if (a->m[r].repl)
			vol_close(a->m[r].repl->vol);
	}
	for (unsigned i = 0; i < a->nspare; i++)
		vol_close(a->spare[i].vol);
	for (unsigned i = 0; i < a->nretired; i++)
		vol_close(a->retired[i].vol);
	for (unsigned i = 0; i < a->nstale; i++)
		vol_close(a->stale[i].vol);
	md_ev(a, "DeviceDisappeared", NULL);
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

struct md_array *md_of(struct vol *v)
{
	return v && v->ops == &md_ops ? to_md(v) : NULL;
}

int md_vol_init(struct md_array *a, const char *name, bool readonly)
{
	int r = vol_init(&a->vol, &md_ops, name, a->raid->size, a->raid->block_min,
	                 a->raid->caps | (readonly ? VOL_CAP_READONLY : 0));

	if (r == 0) {
		a->vol.block_pref = a->raid->block_pref;
		a->vol.block_max = a->raid->block_max;
	}
	return r;
}
