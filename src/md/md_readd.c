/* md_readd.c — taking a member back from the write-intent bitmap, as md's
 * --re-add does (the kernel's super_1_validate and bitmap-based recovery,
 * mdadm's Manage.c): a member that failed by I/O errors and answers again
 * (a remote host back, a cable plugged in) and that missed only what the
 * bitmap's set bits name is resynced over those chunks alone, then is in
 * sync again.
 *
 * The rule is md_readd_check(), in one place for the recovery thread's
 * retries (md_readd_poll, with backoff) and `uraid add --re-add` on a
 * running array (md_array_readd).  While a role is degraded the bitmap
 * clears no bit (md_vol.c, md_bitmap.h), so its bits cover every write the
 * member missed as long as its events are not older than the bitmap's
 * events_cleared.  The resync is the RAID engine's (raid_resync over the
 * dirty member ranges, beside client writes, which reach the member all
 * along); the superblock transitions are md_manage.c's. */
#include "md_internal.h"
#include "md_manage.h"

#include "core/clock.h"
#include "core/log.h"
#include "disc/raid/raid_rebuild.h"
#include "disc/slice.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MD_READD_WAIT_MIN_MS 100u   /* first retry after a failure */
#define MD_READD_WAIT_MAX_MS 10000u /* backoff ceiling */

int md_readd_check(const struct md_super *now, const uint8_t device_uuid[16],
                   const uint8_t set_uuid[16], unsigned role, uint64_t array_events,
                   const struct md_bitmap_info *bm, const char *array, const char *spec)
{
	char want[36], got[36];

	if (memcmp(now->set_uuid, set_uuid, 16) != 0)
		return err_set(-EINVAL, "%s: %s: its superblock belongs to another array", array,
		               spec);
	if (device_uuid && memcmp(now->device_uuid, device_uuid, 16) != 0) {
		md_uuid_format(device_uuid, want);
		md_uuid_format(now->device_uuid, got);
		return err_set(-EINVAL,
		               "%s: %s: device UUID %.35s is not the %.35s that role %u had: "
		               "another disk, not re-added",
		               array, spec, got, want, role);
	}
	if (md_super_role(now) != role)
		return err_set(-EINVAL, "%s: %s: its superblock records role %u, not %u", array,
		               spec, md_super_role(now), role);
	if (now->events > array_events)
		return err_set(-ESTALE,
		               "%s: %s: its events (%llu) are newer than the array's (%llu): it "
		               "was written elsewhere meanwhile, not re-added",
		               array, spec, (unsigned long long)now->events,
		               (unsigned long long)array_events);
	if (!bm)
		return err_set(
		    -ENOTSUP,
		    "%s: %s: the array keeps no write-intent bitmap, which a re-add "
		    "needs to know what it missed (`uraid add --force` rebuilds it whole)",
		    array, spec);
	if (now->events < bm->events_cleared)
		return err_set(-ESTALE,
		               "%s: %s: its events (%llu) are older than the bitmap's "
		               "events_cleared (%llu): the bitmap no longer covers what it missed "
		               "(`uraid add --force` rebuilds it whole)",
		               array, spec, (unsigned long long)now->events,
		               (unsigned long long)bm->events_cleared);
	return 0;
}

/* ---- the dirty member ranges of a role ---- */

struct md_ranges {
	uint64_t (*r)[2];
	size_t n, cap;
};

static int md_ranges_add(void *ctx, uint64_t off, uint64_t len)
{
	struct md_ranges *rs = ctx;

	if (rs->n && rs->r[rs->n - 1][1] == off) {
		rs->r[rs->n - 1][1] = off + len;
		return 0;
	}
	if (rs->n == rs->cap) {
		size_t cap = rs->cap ? rs->cap * 2 : 16;
		uint64_t(*nr)[2] = realloc(rs->r, cap * sizeof(*nr));
		if (!nr)
			return -ENOMEM;
		rs->r = nr;
		rs->cap = cap;
	}
	rs->r[rs->n][0] = off;
	rs->r[rs->n][1] = off + len;
	rs->n++;
	return 0;
}

static int md_range_cmp(const void *x, const void *y)
{
	const uint64_t *a = x, *b = y;

	return a[0] < b[0] ? -1 : a[0] > b[0];
}

/* The member offsets of role that the set bits cover, sorted, aligned to
 * unit and merged; *chunks gets the set bits.  With a->lock held. */
static int md_readd_ranges(struct md_array *a, unsigned role, uint64_t unit, struct md_ranges *rs,
                           uint64_t *chunks)
{
	const struct md_bitmap_info *h = md_bitmap_header(a->bm.map);
	uint64_t n = md_bitmap_chunks(a->bm.map), cs = h->chunksize, end = a->size * 512;
	int r = 0;

	*chunks = 0;
	for (uint64_t c = 0; c < n && r == 0; c++) {
		if (!md_bitmap_test(a->bm.map, c))
			continue;
		(*chunks)++;
		if (a->level == 10) {
			/* raid10 indexes array bytes: where they lie on role. */
			uint64_t off, len;
			md_bitmap_unmap(&a->bm.geom, c * cs, (c + 1) * cs, &off, &len);
			r = raid_role_extents(a->raid, role, off, len, md_ranges_add, rs);
		} else if (c * cs < end) {
			/* raid1 and raid4/5/6 index member bytes. */
			r = md_ranges_add(rs, c * cs, (c + 1) * cs < end ? cs : end - c * cs);
		}
	}
	if (r < 0)
		return r;
	for (size_t i = 0; i < rs->n; i++) {
		rs->r[i][0] -= rs->r[i][0] % unit;
		rs->r[i][1] = (rs->r[i][1] + unit - 1) / unit * unit;
		if (rs->r[i][1] > end)
			rs->r[i][1] = end;
	}
	qsort(rs->r, rs->n, sizeof(*rs->r), md_range_cmp);
	size_t k = 0;
	for (size_t i = 0; i < rs->n; i++) {
		if (k && rs->r[i][0] <= rs->r[k - 1][1]) {
			if (rs->r[i][1] > rs->r[k - 1][1])
				rs->r[k - 1][1] = rs->r[i][1];
			continue;
		}
		rs->r[k][0] = rs->r[i][0];
		rs->r[k][1] = rs->r[i][1];
		k++;
	}
	rs->n = k;
	return 0;
}

/* ---- the re-add itself ---- */

struct md_readd_ctx {
	struct md_array *a;
	unsigned role;
	uint64_t base; /* bytes resynced before this range */
	uint64_t from; /* where this range began */
};

static int md_readd_progress(void *ctx, uint64_t done)
{
	struct md_readd_ctx *x = ctx;
	struct md_array *a = x->a;

	atomic_store(&a->rec.pos, x->base + (done - x->from));
	md_ev_progress(a, &a->rec.ev_next, x->base + (done - x->from), a->readd.total);
	md_sync_throttle(a, x->base + (done - x->from), false, &a->rec.stop);
	return atomic_load(&a->rec.stop) || raid_recover_error(a->raid, x->role) != 0;
}

/* Re-add role's member (its superblock now checked against the rule):
 * it takes the role as recovering, the dirty ranges are resynced onto it,
 * and it is in sync.  Called with a->lock held; drops it while working.
 * 0, or -errno (the member is failed again; a later retry may take it). */
static int md_readd_run(struct md_array *a, unsigned role)
{
	struct md_member *mm = &a->m[role];
	struct md_ranges rs = {0};
	struct vol *target = mm->data;
	uint64_t unit = a->level == 1 ? 4096 : (uint64_t)mm->sb->chunk * 512, chunks = 0, total = 0;
	bool fresh_slice = false, joined = false, told = false;
	int r;

	if (unit < 4096)
		unit = 4096;
	if (!target) {
		r = slice_open(mm->vol, mm->sb->data_offset * 512, mm->sb->data_size * 512, false,
		               mm->vol->name, &target);
		if (r < 0)
			goto out;
		fresh_slice = true;
	}
	/* Recorded first as a member being recovered from 0: a crash or a
	 * stop before the end leaves a full rebuild for the next start, never
	 * a member taken as in sync with chunks missing. */
	md_manage_mark_recovering(mm->sb, a->roles, role);
	mm->failed = false;
	mm->recovering = true;
	mm->bm_ok = false; /* its bitmap missed updates: written whole */
	if (md_array_sync(a, atomic_load(&a->active)) < 0)
		log_warn("%s: could not record the re-add in any superblock", a->vol.name);
	a->readd.running = true;
	a->readd.total = 0;
	a->rec.running = true;
	a->rec.from = 0;
	a->rec.t0_ns = clock_now_ns();
	atomic_store(&a->rec.pos, 0);
	pthread_mutex_unlock(&a->lock);

	err_clear();
	r = raid_recover_begin(a->raid, role, target, UINT64_MAX);
	if (r == 0) {
		joined = true;
		if (fresh_slice) {
			mm->slice = target;
			mm->slice_given = true;
			mm->data = target;
			fresh_slice = false;
		}
		raid_set_write_mostly(a->raid, role, mm->sb->devflags & MD_DEVFLAG_WRITE_MOSTLY);
		/* Every write reaches the member from now on, and every one
		 * before set its bits first (none is cleared while degraded):
		 * the bits as they are now name all it missed. */
		pthread_mutex_lock(&a->lock);
		r = md_readd_ranges(a, role, unit, &rs, &chunks);
		for (size_t i = 0; i < rs.n; i++)
			total += rs.r[i][1] - rs.r[i][0];
		a->readd.total = total;
		if (r == 0) {
			log_info("%s: re-adding %s to role %u: resyncing the %llu dirty "
			         "write-intent bitmap chunks (%llu bytes of it)",
			         a->vol.name, mm->vol->name, role, (unsigned long long)chunks,
			         (unsigned long long)total);
			md_ev_progress_begin(a, &a->rec.ev_next, 0, total);
			told = true;
		}
		pthread_mutex_unlock(&a->lock);
		md_sync_throttle(a, 0, true, &a->rec.stop); /* its speed limits */
	}
	if (r == 0) {
		struct vol **targets = calloc(a->n, sizeof(*targets));
		struct md_readd_ctx x = {.a = a, .role = role};
		if (!targets)
			r = -ENOMEM;
		else
			targets[role] = target;
		for (size_t i = 0; i < rs.n && r == 0; i++) {
			x.from = rs.r[i][0];
			r = raid_resync(a->raid, targets, rs.r[i][0], rs.r[i][1], md_readd_progress,
			                &x);
			x.base += rs.r[i][1] - rs.r[i][0];
		}
		free(targets);
		if (r == 0 && raid_recover_error(a->raid, role))
			r = raid_recover_error(a->raid, role);
		if (r == 0)
			r = vol_flush(target);
		if (r == 0)
			r = raid_recover_finish(a->raid, role);
	}
	if (r < 0 && joined && (r != -EINTR || !atomic_load(&a->rec.stop)))
		raid_recover_abort(a->raid, role); /* it joined the RAID vol: out again */
	char detail[256];
	snprintf(detail, sizeof(detail), "%s", r < 0 ? err_detail(r) : "");
	pthread_mutex_lock(&a->lock);
	a->rec.running = false;
	a->readd.running = false;
	if (r == -EINTR && atomic_load(&a->rec.stop))
		goto out; /* closing: a full rebuild at the next start */
	if (told)
		md_ev_finished(a, 0);
	if (r < 0) {
		log_warn("%s: re-adding %s failed: %s", a->vol.name, mm->vol->name, detail);
		if (!mm->failed)
			md_rec_target_failed(a, role, r);
		mm->recovering = false;
		goto out;
	}
	md_manage_recovery_done(mm->sb);
	mm->recovering = false;
	a->readd.count++;
	a->readd.chunks += chunks;
	a->readd.bytes += total;
	a->readd.last_chunks = chunks;
	a->readd.last_bytes = total;
	md_ev(a, "SpareActive", mm);
	log_info("%s: %s re-added to role %u and in sync (%llu bytes resynced in %llu bitmap "
	         "chunks)",
	         a->vol.name, mm->vol->name, role, (unsigned long long)total,
	         (unsigned long long)chunks);
	if (md_array_sync(a, atomic_load(&a->active)) < 0)
		log_warn("%s: could not record the re-add in any superblock", a->vol.name);
out:
	if (fresh_slice)
		vol_close(target);
	free(rs.r);
	return r;
}

/* Read role's member's superblock now and judge it (asked: by request,
 * else the thread's retry, which a member failed by request meanwhile
 * stops).  With a->lock held (dropped for the read).  0: it may be re-added; -EIO-like: it does not
 * answer yet; else the rule's refusal (err_set). */
static int md_readd_probe(struct md_array *a, unsigned role, bool asked, bool *refused)
{
	struct md_member *mm = &a->m[role];
	struct md_super *now = malloc(sizeof(*now));
	struct vol *vol = mm->vol;
	uint8_t set_uuid[16], dev_uuid[16];
	int r;

	*refused = false;
	if (!now)
		return -ENOMEM;
	memcpy(set_uuid, mm->sb->set_uuid, 16);
	memcpy(dev_uuid, mm->sb->device_uuid, 16);
	mm->readd_probing = true; /* md_array_remove waits: vol stays open */
	pthread_mutex_unlock(&a->lock);
	err_clear();
	r = md_super_read_raw(vol, now);
	*refused = r == -ENOENT || r == -ENOSPC; /* it answers, but holds no superblock */
	if (*refused)
		r = err_set(r,
		            "%s: %s answers again but holds no md superblock: another disk, not "
		            "re-added",
		            a->vol.name, vol->name);
	if (r == 0) {
		r = md_super_check(now, vol->size, vol->name);
		*refused = r < 0;
	}
	pthread_mutex_lock(&a->lock);
	mm->readd_probing = false;
	if (r == 0 &&
	    (mm->vol != vol || !mm->failed || mm->recovering || (!asked && mm->user_failed)))
		r = -EAGAIN; /* changed meanwhile (failed by request: not on its own) */
	if (r == 0) {
		r = md_readd_check(now, dev_uuid, set_uuid, role, a->events,
		                   a->bm.map ? md_bitmap_header(a->bm.map) : NULL, a->vol.name,
		                   vol->name);
		*refused = r < 0;
	}
	free(now);
	return r;
}

/* Whether role's member waits for a re-add try. */
static bool md_readd_waits(const struct md_array *a, unsigned role)
{
	const struct md_member *mm = &a->m[role];

	return mm->vol && mm->sb && mm->failed && !mm->recovering && !mm->user_failed &&
	       !mm->readd_refused && a->bm.map && a->rec.enabled && !a->readonly &&
	       !raid_failed(a->raid); /* md recovers nothing on a failed array */
}

/* Members found stale at the start take their role back, as failed
 * members waiting for a re-add, once nobody holds it. */
static void md_readd_take_stale(struct md_array *a)
{
	for (unsigned i = 0; i < a->nstale;) {
		unsigned role = md_super_role(a->stale[i].sb);
		if (role >= a->n || a->m[role].vol || a->m[role].recovering) {
			i++;
			continue;
		}
		a->m[role] = a->stale[i];
		a->m[role].failed = true;
		memmove(a->stale + i, a->stale + i + 1, (a->nstale - i - 1) * sizeof(*a->stale));
		a->nstale--;
	}
}

bool md_readd_poll(struct md_array *a, uint64_t *next_ns)
{
	uint64_t now = clock_now_ns();
	bool changed = false;

	*next_ns = UINT64_MAX;
	if (a->bm.map && a->rec.enabled)
		md_readd_take_stale(a);
	for (unsigned role = 0; role < a->n && !atomic_load(&a->rec.stop); role++) {
		struct md_member *mm = &a->m[role];
		bool refused;

		if (!md_readd_waits(a, role))
			continue;
		if (mm->readd_at_ns > now) {
			*next_ns = mm->readd_at_ns < *next_ns ? mm->readd_at_ns : *next_ns;
			continue;
		}
		int r = md_readd_probe(a, role, false, &refused);
		now = clock_now_ns();
		if (r == 0) {
			if (md_readd_run(a, role) == 0)
				mm->readd_wait_ms = 0; /* else the backoff goes on */
			changed = true;
		} else if (refused) {
			log_warn("%s", err_detail(r));
			mm->readd_refused = true;
			a->readd.refusals++;
			changed = true;
			continue;
		}
		if (md_readd_waits(a, role)) {
			/* Not back yet (or failed again): try later, backing off. */
			unsigned w =
			    mm->readd_wait_ms ? mm->readd_wait_ms * 2 : MD_READD_WAIT_MIN_MS;
			mm->readd_wait_ms = w < MD_READD_WAIT_MAX_MS ? w : MD_READD_WAIT_MAX_MS;
			mm->readd_at_ns = now + (uint64_t)mm->readd_wait_ms * 1000000u;
			*next_ns = mm->readd_at_ns < *next_ns ? mm->readd_at_ns : *next_ns;
		}
	}
	return changed;
}

int md_array_readd_vol(struct vol *v, struct vol *nv)
{
	struct md_array *a = md_of(v);
	struct md_super *sb = malloc(sizeof(*sb));
	int r;

	if (!sb)
		return -ENOMEM;
	if (!a || a->readonly || !a->rec.enabled) {
		free(sb);
		return err_set(a ? -EROFS : -EINVAL, "%s: no member can be re-added here", v->name);
	}
	err_clear();
	r = md_super_read(nv, sb);
	if (r < 0) {
		free(sb);
		return err_set(r, "%s: %s: %s", a->vol.name, nv->name, err_detail(r));
	}
	pthread_mutex_lock(&a->lock);
	const struct md_super *any = NULL;
	for (unsigned i = 0; i < a->n && !any; i++)
		any = a->m[i].sb;
	unsigned role = md_super_role(sb);
	if (!any)
		r = err_set(-ENODEV, "%s: no member to compare %s with", a->vol.name, nv->name);
	else if (role >= a->n)
		r = err_set(-EINVAL,
		            "%s: %s is not an active member (its superblock gives it no role)",
		            a->vol.name, nv->name);
	else if (a->m[role].vol)
		r = err_set(-EBUSY, "%s: role %u of %s is held by %s", a->vol.name, role, nv->name,
		            a->m[role].vol->name);
	else
		r = md_readd_check(sb, NULL, any->set_uuid, role, a->events,
		                   a->bm.map ? md_bitmap_header(a->bm.map) : NULL, a->vol.name,
		                   nv->name);
	if (r == 0 && md_super_version(sb) != md_super_version(any))
		r = err_set(-EINVAL, "%s: %s has superblock version %s, the array %s", a->vol.name,
		            nv->name, md_super_version(sb)->name, md_super_version(any)->name);
	struct md_member *ns = NULL;
	if (r == 0 && !(ns = realloc(a->stale, (a->nstale + 1) * sizeof(*ns))))
		r = -ENOMEM;
	if (r == 0) {
		a->stale = ns;
		a->stale[a->nstale++] = (struct md_member){.vol = nv, .sb = sb};
		sb = NULL;
		int e = md_rec_wake(a);
		if (e != 0)
			log_warn("%s: cannot start the recovery thread: %s", a->vol.name,
			         strerror(e));
	}
	pthread_mutex_unlock(&a->lock);
	free(sb);
	return r;
}

int md_array_readd(struct vol *v, const char *member)
{
	struct md_array *a = md_of(v);
	unsigned role;
	bool refused;
	int r;

	if (!a)
		return err_set(-EINVAL, "%s is not an md array", v->name);
	if (a->readonly)
		return err_set(-EROFS, "%s is served read-only: no member can be re-added",
		               a->vol.name);
	if (!a->rec.enabled)
		return err_set(-EINVAL, "%s: %s has no online recovery here", a->vol.name,
		               md_level_name(a->level));
	pthread_mutex_lock(&a->lock);
	for (role = 0; role < a->n; role++)
		if (a->m[role].vol && !strcmp(a->m[role].vol->name, member))
			break;
	if (role == a->n) {
		r = err_set(-ENOENT,
		            "%s: %s is not a failed member of it (re-add takes back a member the "
		            "array still knows)",
		            a->vol.name, member);
		goto out;
	}
	if (!a->m[role].failed || a->m[role].recovering) {
		r = err_set(-EBUSY, "%s: %s is %s: nothing to re-add", a->vol.name, member,
		            a->m[role].recovering ? "being rebuilt" : "in sync");
		goto out;
	}
	r = md_readd_probe(a, role, true, &refused);
	if (r < 0) {
		if (!refused)
			r = err_set(r, "%s: %s: its superblock cannot be read: %s", a->vol.name,
			            member, strerror(-r));
		goto out;
	}
	/* Asked for: the recovery thread takes it at once. */
	a->m[role].user_failed = false;
	a->m[role].readd_refused = false;
	a->m[role].readd_at_ns = 0;
	a->m[role].readd_wait_ms = 0;
	int e = md_rec_wake(a);
	if (e != 0)
		r = err_set(-e, "%s: cannot start the recovery thread: %s", a->vol.name,
		            strerror(e));
out:
	pthread_mutex_unlock(&a->lock);
	return r;
}
