/* raid_recover.c — the lifecycle of online recovery and of a scrub on a
 * running array: a role gets its new member as "recovering" and leaves
 * that state in sync or failed; a scrub turns the barrier on for mirror
 * levels.  Write-behind (raid_wb.c) is off meanwhile.  The front (raid.c)
 * answers raid_rebuild.h's raid_recover_*() through here; the rebuild
 * itself is raid_rebuild.c, the barrier raid_barrier.c. */
#include "raid_types.h"

#include "core/log.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

/* The bytes of each member a recovery rebuilds. */
static uint64_t raid_rec_member_bytes(struct raid_array *a)
{
	return a->g.dev_size ? a->g.dev_size : a->vol.size;
}

int raid_recovery_begin(struct raid_array *a, unsigned role, struct vol *target, uint64_t from)
{
	struct vol *array = &a->vol;
	struct raid_rec *rc = &a->rec;

	if (!a->lvl->md.redundant)
		return err_set(-EINVAL, "%s: %s has no redundancy to recover", array->name,
		               a->lvl->md.name);
	if (atomic_load(&rc->scrub))
		return err_set(-EBUSY, "%s: a check is running: recovery waits for it",
		               array->name);
	if (role >= a->n || !atomic_load(&a->m[role].failed) || atomic_load(&a->m[role].recovering))
		return err_set(-EINVAL, "%s: role %u is not missing: nothing to recover",
		               array->name, role);
	if (target->size < raid_rec_member_bytes(a) || target->block_min > a->vol.block_min)
		return err_set(-EINVAL, "%s: %s cannot hold role %u (too small, or blocks of %u)",
		               array->name, target->name, role, target->block_min);
	uint64_t unit = a->g.chunk ? a->g.chunk : 4096;
	bool readd = from == UINT64_MAX; /* nothing held below a point: a re-add's */
	from -= from % unit;
	if (rc->n == 0) {
		/* Write-behind stages pieces for the live copies only: off
		 * (what it holds written out) until the recovery ends. */
		rc->wb_mode = raid_wb_mode(a);
		raid_wb_set_mode(a, -1);
	}
	/* Another role recovering: writes registered for it may not cover
	 * this one; none in flight while it joins. */
	if (rc->n)
		raid_rec_window(a, 0, UINT64_MAX, rc->point);
	pthread_mutex_lock(&a->fail_lock);
	if (a->m[role].vol && a->m[role].vol != target) {
		/* A failed member's vol may still be in use by a request
		 * that failed on it: kept until the array closes.  (A re-add
		 * gives the role its own member back: nothing to retire.) */
		struct vol **nr = realloc(a->retired, (a->nretired + 1) * sizeof(*nr));
		if (!nr) {
			pthread_mutex_unlock(&a->fail_lock);
			raid_rec_window(a, 0, 0, rc->point);
			return -ENOMEM;
		}
		a->retired = nr;
		a->retired[a->nretired++] = a->m[role].vol;
	}
	if (a->m[role].vol != target)
		raid_stats_reset(&a->m[role]); /* the role's counters are its member's */
	a->m[role].vol = target;
	atomic_store(&a->m[role].rec_err, 0);
	atomic_store(&a->m[role].ns_per_mib, 0);
	atomic_store(&a->m[role].recovering, true);
	pthread_mutex_unlock(&a->fail_lock);
	pthread_mutex_lock(&rc->lock);
	rc->point = rc->n == 0 || from < rc->point ? from : rc->point;
	rc->n++;
	rc->lo = rc->hi = 0; /* the window taken above, if any */
	pthread_cond_broadcast(&rc->cond);
	pthread_mutex_unlock(&rc->lock);
	atomic_store(&a->rec_on, true);
	/* Writes that did not see rec_on: over before the rebuild reads. */
	while (atomic_load(&a->wr_fast) > 0)
		usleep(200);
	raid_wb_barrier(a);
	if (readd)
		log_info("%s: member %u (%s) is being recovered from its write-intent bitmap",
		         array->name, role, target->name);
	else
		log_info("%s: member %u (%s) is being recovered from %llu bytes on", array->name,
		         role, target->name, (unsigned long long)from);
	return 0;
}

int raid_scrub_begin(struct raid_array *a)
{
	struct raid_rec *rc = &a->rec;

	pthread_mutex_lock(&rc->lock);
	bool busy = rc->n > 0 || atomic_load(&rc->scrub);
	if (!busy) {
		atomic_store(&rc->scrub, true);
		rc->lo = rc->hi = rc->point = 0; /* point 0: nothing to rebuild */
	}
	pthread_mutex_unlock(&rc->lock);
	if (busy)
		return err_set(-EBUSY, "%s: a recovery or another check is running", a->vol.name);
	/* Levels that scrub row by row take each row's stripe lock: no
	 * window. */
	if (a->lvl->check_row)
		return 0;
	rc->wb_mode = raid_wb_mode(a);
	raid_wb_set_mode(a, -1);
	atomic_store(&a->rec_on, true);
	while (atomic_load(&a->wr_fast) > 0)
		usleep(200);
	raid_wb_barrier(a);
	return 0;
}

void raid_scrub_end(struct raid_array *a)
{
	struct raid_rec *rc = &a->rec;

	if (!a->lvl->check_row) {
		raid_rec_window(a, 0, 0, 0);
		atomic_store(&a->rec_on, false);
		raid_wb_set_mode(a, rc->wb_mode);
	}
	atomic_store(&rc->scrub, false);
}

int raid_recovery_end(struct raid_array *a, unsigned role, bool in_sync)
{
	struct raid_rec *rc = &a->rec;
	int r = 0;

	if (role >= a->n || !atomic_load(&a->m[role].recovering))
		return -EINVAL;
	/* No write in flight while the role changes state. */
	raid_rec_window(a, 0, UINT64_MAX, rc->point);
	if (in_sync && atomic_load(&a->m[role].rec_err))
		in_sync = false, r = -EIO;
	pthread_mutex_lock(&a->fail_lock);
	atomic_store(&a->m[role].recovering, false);
	if (in_sync)
		atomic_store(&a->m[role].failed, false);
	pthread_mutex_unlock(&a->fail_lock);
	if (in_sync && a->lvl->member_back)
		a->lvl->member_back(a);
	pthread_mutex_lock(&rc->lock);
	bool last = --rc->n == 0;
	pthread_mutex_unlock(&rc->lock);
	if (last) {
		atomic_store(&a->rec_on, false);
		raid_wb_set_mode(a, rc->wb_mode);
	}
	raid_rec_window(a, 0, 0, rc->point);
	return r;
}
