/* raid_member.c — the state of an array's members: how fast each is, which
 * errors are the request's and which the member's, and the one transition
 * live -> failed (raid_member_fail), with the redundancy rule it applies.
 *
 * It also keeps each member's I/O counters (raid.h), which every transfer
 * on a member passes through (raid_member_read/write, raid_io_begin/end).
 *
 * The bottom of the engine (raid_types.h has the types): the fan-out
 * (raid_map.c), the parity path (raid_parity.c) and the stages above them
 * fail members through here; a stage that must hear of a failure
 * (read-ahead) hangs a hook on the array instead of being called by name. */
#include "raid_types.h"

#include "core/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void raid_note_speed(struct raid_member *m, uint64_t ns, uint64_t len)
{
	uint64_t per_mib = ns * (1u << 20) / len;
	uint64_t old = atomic_load(&m->ns_per_mib);
	atomic_store(&m->ns_per_mib, old ? (old * 3 + per_mib) / 4 : per_mib);
}

/* Not ENOSPC: a member whose store is full may have taken part of a write
 * (pwrite writes what fits), and the copies would then differ where the
 * client was told the write failed, a parity chunk would no longer match
 * its stripe.  So a full member fails like any other whose write failed
 * (md's rule), and the array goes on with the members that took it. */
bool raid_err_is_request(int err)
{
	return err == -ENOTSUP || err == -EOPNOTSUPP || err == -EINVAL || err == -EROFS ||
	       err == -ENOMEM;
}

/* Would every block still have a live copy if role failed too?  Copy sets
 * of md's layouts repeat every raid_disks chunks, so those are checked. */
bool raid_survives_without(struct raid_array *a, unsigned role)
{
	struct raid_loc loc[RAID_MAX_COPIES];
	unsigned probes = a->g.chunk ? a->g.raid_disks : 1;

	if (a->lvl->md.parity) {
		unsigned gone = 1;
		for (unsigned i = 0; i < a->n; i++)
			gone += i != role && atomic_load(&a->m[i].failed);
		return gone <= a->lvl->md.parity;
	}

	for (unsigned k = 0; k < probes; k++) {
		uint64_t off = (uint64_t)k * a->g.chunk;
		unsigned nc, live = 0;
		if (off >= a->vol.size)
			break;
		a->lvl->map(a->priv, &a->g, off, 1, loc, &nc);
		for (unsigned c = 0; c < nc; c++)
			if (loc[c].role != role && !atomic_load(&a->m[loc[c].role].failed))
				live++;
		if (live == 0)
			return false;
	}
	return true;
}

/* Beyond the redundancy (no other copy of some block, more gone than the
 * parity gives back) the array has failed, as md's MD_BROKEN: a parity
 * level marks the member failed anyway (raid5_error sets Faulty
 * whatever has_failed says, and md records it in the superblocks), a
 * mirror keeps it (raid1_error/raid10_error leave the last copy In_sync,
 * its errors reaching the caller).  Either way every later change fails
 * (raid.c's front: raid_failed). */
static void raid_array_break(struct raid_array *a, unsigned role, unsigned gone)
{
	if (!atomic_exchange(&a->broken, true))
		log_error("%s: member %u (%s) failed beyond the redundancy: the array has failed "
		          "(%u of %u members failed); writes fail from now on",
		          a->vol.name, role, a->m[role].vol ? a->m[role].vol->name : "?", gone,
		          a->n);
}

int raid_member_fail(struct raid_array *a, unsigned role, int err, bool by_user)
{
	int r = 0;
	bool report = false;

	pthread_mutex_lock(&a->fail_lock);
	if (atomic_load(&a->m[role].failed)) {
		r = atomic_load(&a->broken) ? -EIO : 0;
		pthread_mutex_unlock(&a->fail_lock);
		return r;
	}
	bool survives = a->lvl->md.redundant && raid_survives_without(a, role);
	if (!survives && (by_user || !a->lvl->md.redundant)) {
		/* uraid fail refuses (md's set_disk_faulty answers EBUSY);
		 * RAID0 and linear return the error to the request, as md's
		 * raid0 and linear do for an I/O error. */
		r = by_user ? -EBUSY : -EIO;
	} else {
		if (!survives) {
			unsigned gone = 1;
			for (unsigned i = 0; i < a->n; i++)
				gone += atomic_load(&a->m[i].failed);
			raid_array_break(a, role, gone);
			r = -EIO;
		}
		report = survives || a->lvl->md.parity;
	}
	if (report) {
		/* counted before it shows, so that whoever sees it failed
		 * also sees that it is being told */
		atomic_fetch_add(&a->fail_telling, 1);
		atomic_store(&a->m[role].failed, true);
	}
	pthread_mutex_unlock(&a->fail_lock);
	if (report) {
		if (by_user) /* the error is the request's stand-in, not the member's */
			log_warn("%s: member %u (%s) failed by request", a->vol.name, role,
			         a->m[role].vol->name);
		else
			log_warn("%s: member %u (%s) failed: %s", a->vol.name, role,
			         a->m[role].vol->name, strerror(-err));
		if (a->on_member_failed)
			a->on_member_failed(a, role);
		if (a->ev.member_failed)
			a->ev.member_failed(a->ev.ctx, role, err);
		pthread_mutex_lock(&a->fail_lock);
		atomic_fetch_sub(&a->fail_telling, 1);
		pthread_cond_broadcast(&a->fail_told);
		pthread_mutex_unlock(&a->fail_lock);
	}
	return r;
}

void raid_fail_settle(struct raid_array *a)
{
	if (!atomic_load(&a->fail_telling))
		return;
	pthread_mutex_lock(&a->fail_lock);
	while (atomic_load(&a->fail_telling))
		pthread_cond_wait(&a->fail_told, &a->fail_lock);
	pthread_mutex_unlock(&a->fail_lock);
}

bool raid_read_avoid(struct raid_array *a, const struct raid_loc *loc, unsigned nc, unsigned c,
                     uint32_t tried)
{
	if (!atomic_load_explicit(&a->m[loc[c].role].write_mostly, memory_order_relaxed))
		return false;
	for (unsigned o = 0; o < nc; o++) {
		const struct raid_member *m = &a->m[loc[o].role];
		if (o != c && !((tried >> o) & 1) && !atomic_load(&m->failed) &&
		    !atomic_load_explicit(&m->write_mostly, memory_order_relaxed))
			return true;
	}
	return false;
}

/* Are the live members slow enough for staging streams to pay?  At least one
 * must have been measured slow and none fast; members not read yet (the
 * other mirrors) do not count.  A member in RAM (VOL_CAP_RAM) is fast
 * whatever it measured: on a loaded machine a copy can take a disk's
 * time, and staging it would only add a copy (docs/write-path.md). */
bool raid_members_slow(struct raid_array *a)
{
	bool slow = false;

	for (unsigned i = 0; i < a->n; i++) {
		if (atomic_load(&a->m[i].failed))
			continue;
		if (a->m[i].vol && (a->m[i].vol->caps & VOL_CAP_RAM))
			return false;
		uint64_t ns = atomic_load(&a->m[i].ns_per_mib);
		if (ns && ns < RAID_SLOW_NS_PER_MIB)
			return false;
		slow |= ns != 0;
	}
	return slow;
}

/* A write to a role being recovered failed: the recovery of that role
 * is over (the md layer aborts it); the request does not fail for it. */
void raid_rec_target_failed(struct raid_array *a, unsigned role, int err)
{
	int zero = 0;

	if (atomic_compare_exchange_strong(&a->m[role].rec_err, &zero, err < 0 ? err : -EIO))
		log_warn("%s: member %u (%s), being recovered, failed: %s", a->vol.name, role,
		         a->m[role].vol->name, strerror(err < 0 ? -err : EIO));
}

/* ---- I/O counters (raid.h) ---- */

/* Lanes: a thread owns one of the first RAID_STAT_LANES - 1 while it
 * lives (given back at its exit, for the next thread), and only its
 * owner writes it, with plain relaxed stores; threads beyond share the
 * last lane, with atomic adds. */
#define RAID_LANE_SHARED (RAID_STAT_LANES - 1)
static atomic_uint_fast64_t raid_lanes_taken; /* bit i: lane i owned */
static pthread_key_t raid_lane_key;
static pthread_once_t raid_lane_once = PTHREAD_ONCE_INIT;
static _Thread_local int raid_lane_mine = -1;

static void raid_lane_give_back(void *v)
{
	uint64_t bit = 1ull << ((uintptr_t)v - 1);

	atomic_fetch_and(&raid_lanes_taken, ~bit);
}

static void raid_lane_init(void)
{
	if (pthread_key_create(&raid_lane_key, raid_lane_give_back) != 0)
		atomic_store(&raid_lanes_taken, ~0ull); /* no key: all share */
}

static unsigned raid_lane(void)
{
	if (raid_lane_mine >= 0)
		return (unsigned)raid_lane_mine;
	pthread_once(&raid_lane_once, raid_lane_init);
	uint64_t t = atomic_load(&raid_lanes_taken);
	int lane = RAID_LANE_SHARED;
	for (;;) {
		uint64_t free = ~t & ((1ull << RAID_LANE_SHARED) - 1);
		if (!free)
			break;
		int i = __builtin_ctzll(free);
		if (atomic_compare_exchange_weak(&raid_lanes_taken, &t, t | 1ull << i)) {
			if (pthread_setspecific(raid_lane_key, (void *)(uintptr_t)(i + 1)) == 0)
				lane = i;
			else
				raid_lane_give_back((void *)(uintptr_t)(i + 1));
			break;
		}
	}
	raid_lane_mine = lane;
	return (unsigned)lane;
}

/* Add n to a lane's counter: the owner's plain store, or an atomic add
 * on the shared lane. */
static inline void raid_lane_add(atomic_uint_fast64_t *c, uint64_t n, bool shared)
{
	if (shared)
		atomic_fetch_add_explicit(c, n, memory_order_relaxed);
	else
		atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
		                      memory_order_relaxed);
}

static unsigned raid_lat_bucket(uint64_t ns)
{
	uint64_t us = ns / 1000;
	unsigned b = us ? 64 - (unsigned)__builtin_clzll(us) : 0;

	return b < RAID_LAT_BUCKETS ? b : RAID_LAT_BUCKETS - 1;
}

uint64_t raid_io_begin(struct raid_member *m)
{
	uint64_t t0 = clock_now_ns();

	/* The member's own line, which its in-flight count dirties anyway. */
	if (atomic_fetch_add(&m->active, 1) == 0)
		atomic_store_explicit(&m->busy_since, t0, memory_order_relaxed);
	return t0;
}

uint64_t raid_io_end(struct raid_member *m, bool write, uint64_t len, uint64_t t0, int err)
{
	uint64_t t1 = clock_now_ns();
	uint64_t since = atomic_load_explicit(&m->busy_since, memory_order_relaxed);
	unsigned lane = raid_lane();
	struct raid_stat_lane *l = &m->lanes[lane];
	bool shared = lane == RAID_LANE_SHARED;

	if (err == 0) {
		raid_lane_add(&l->ops[write], 1, shared);
		raid_lane_add(&l->bytes[write], len, shared);
		raid_lane_add(&l->lat[write][raid_lat_bucket(t1 - t0)], 1, shared);
	} else {
		raid_lane_add(&l->errors, 1, shared);
	}
	/* since was read before leaving: the busy period it began is this
	 * one, even if another transfer begins the next one at once. */
	if (atomic_fetch_sub(&m->active, 1) == 1 && t1 > since)
		atomic_fetch_add_explicit(&m->busy_ns, t1 - since, memory_order_relaxed);
	return t1;
}

int raid_member_read(struct raid_member *m, void *buf, uint64_t len, uint64_t off,
                     uint64_t speed_min)
{
	struct vol *v = m->vol;

	raid_behind_before_read(m); /* md: a read of it waits for its writes behind */
	uint64_t t0 = raid_io_begin(m);
	int r = v->ops->read(v, buf, len, off);
	uint64_t t1 = raid_io_end(m, false, len, t0, r);

	if (r == 0 && len >= speed_min)
		raid_note_speed(m, t1 - t0, len);
	return r;
}

int raid_member_write(struct raid_member *m, const void *buf, uint64_t len, uint64_t off,
                      unsigned flags, uint64_t speed_min)
{
	struct vol *v = m->vol;
	uint64_t t0 = raid_io_begin(m);
	int r = v->ops->write(v, buf, len, off, flags);
	uint64_t t1 = raid_io_end(m, true, len, t0, r);

	if (r == 0 && len >= speed_min)
		raid_note_speed(m, t1 - t0, len);
	return r;
}

int raid_stats_alloc(struct raid_array *a)
{
	for (unsigned i = 0; i < a->n; i++) {
		a->m[i].lanes = aligned_alloc(64, RAID_STAT_LANES * sizeof(struct raid_stat_lane));
		if (!a->m[i].lanes)
			return -ENOMEM;
		raid_stats_reset(&a->m[i]);
	}
	return 0;
}

void raid_stats_free(struct raid_array *a)
{
	for (unsigned i = 0; a->m && i < a->n; i++) {
		free(a->m[i].lanes);
		a->m[i].lanes = NULL;
	}
}

/* Atomic stores, not memset: a transfer on the member that left may
 * still be counting. */
void raid_stats_reset(struct raid_member *m)
{
	for (unsigned i = 0; i < RAID_STAT_LANES; i++) {
		struct raid_stat_lane *l = &m->lanes[i];
		atomic_store_explicit(&l->errors, 0, memory_order_relaxed);
		for (unsigned w = 0; w < 2; w++) {
			atomic_store_explicit(&l->ops[w], 0, memory_order_relaxed);
			atomic_store_explicit(&l->bytes[w], 0, memory_order_relaxed);
			for (unsigned b = 0; b < RAID_LAT_BUCKETS; b++)
				atomic_store_explicit(&l->lat[w][b], 0, memory_order_relaxed);
		}
	}
	atomic_store(&m->busy_ns, 0);
}

int raid_array_member_stats(struct raid_array *a, unsigned role, struct raid_io_stats *out)
{
	struct raid_member *m;

	memset(out, 0, sizeof(*out));
	if (role >= a->n)
		return -EINVAL;
	m = &a->m[role];
	for (unsigned i = 0; i < RAID_STAT_LANES; i++) {
		const struct raid_stat_lane *l = &m->lanes[i];
		out->errors += atomic_load_explicit(&l->errors, memory_order_relaxed);
		for (unsigned w = 0; w < 2; w++) {
			out->ops[w] += atomic_load_explicit(&l->ops[w], memory_order_relaxed);
			out->bytes[w] += atomic_load_explicit(&l->bytes[w], memory_order_relaxed);
			for (unsigned b = 0; b < RAID_LAT_BUCKETS; b++)
				out->lat[w][b] +=
				    atomic_load_explicit(&l->lat[w][b], memory_order_relaxed);
		}
	}
	int active = atomic_load(&m->active);
	out->inflight = active > 0 ? (unsigned)active : 0;
	out->busy_ns = atomic_load(&m->busy_ns);
	if (active > 0) {
		uint64_t now = clock_now_ns(), since = atomic_load(&m->busy_since);
		out->busy_ns += now > since ? now - since : 0;
	}
	return 0;
}

uint64_t raid_lat_percentile(const uint64_t hist[RAID_LAT_BUCKETS], double p)
{
	uint64_t total = 0, seen = 0;

	for (unsigned b = 0; b < RAID_LAT_BUCKETS; b++)
		total += hist[b];
	if (!total)
		return 0;
	for (unsigned b = 0; b < RAID_LAT_BUCKETS; b++) {
		seen += hist[b];
		if ((double)seen >= p * (double)total)
			return 1ull << b; /* bucket b ends at 2^b us */
	}
	return 1ull << (RAID_LAT_BUCKETS - 1);
}
