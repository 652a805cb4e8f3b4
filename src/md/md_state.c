/* md_state.c — a running md array's state in its superblocks: events,
 * the role table, active or clean (md_array_sync), written when the
 * array is first written to (md_mark_active) and when a member fails
 * (md_member_failed, the RAID vol's event, which emits Fail and
 * DegradedArray: md_events.h).  The bottom of the running
 * array's files (md_internal.h): it calls none of them but
 * md_repl_fail (without its superblock write), which gives a failed
 * member's replacement up with it.  The journal tail's checkpoints write
 * the journal member's superblock alone (md_array_sync_journal). */
#include "md_internal.h"
#include "md_manage.h"

#include "core/log.h"

#include <errno.h>
#include <string.h>
#include <time.h>

/* The journal member's superblock: the array's state as the members hold
 * it, and its journal_tail (in recovery_offset), which md_journal.c moves.
 * Called with a->lock held. */
static int md_journal_sb_write(struct md_array *a, bool active)
{
	struct md_super *sb = a->journal.sb;

	md_manage_set_state(sb, a->events, a->max_dev, a->roles);
	sb->resync_offset = (active || a->unclean) ? 0 : MD_MAX_SECTOR;
	int e = md_super_write(a->journal.vol, sb);
	if (e < 0)
		log_warn("%s: journal: %s", a->vol.name, err_detail(e));
	return e;
}

int md_array_sync_journal(struct md_array *a)
{
	if (!a->journal.vol || a->journal.failed)
		return 0; /* no journal to record a tail in: nothing replays it */
	return md_journal_sb_write(a, atomic_load(&a->active));
}

/* Write the array state into every live member's superblock: events + 1.
 * Called with a->lock held.  Returns 0 if at least one member took it. */
int md_array_sync(struct md_array *a, bool active)
{
	int written = 0, last = -EIO;

	a->events++;
	/* The bitmap's events first, as md does: a bitmap behind the
	 * superblock is out of date for the kernel. */
	if (a->bm.map)
		md_bitmap_set_events(a->bm.map, a->events);
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
		/* Its replacement keeps its own feature bits and offset. */
		if (mm->repl && !mm->repl->failed) {
			struct md_super *rsb = mm->repl->sb;
			md_manage_set_state(rsb, a->events, a->max_dev, a->roles);
			rsb->resync_offset = sb->resync_offset;
			if ((e = md_super_write(mm->repl->vol, rsb)) < 0)
				log_warn("%s: replacement: %s", a->vol.name, err_detail(e));
		}
	}
	if (a->journal.vol && !a->journal.failed) {
		int e = md_journal_sb_write(a, active);
		if (e < 0)
			return e; /* the tail must reach the journal's superblock */
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

int md_mark_active(struct md_array *a)
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

/* Whether a role has no in-sync member: bits are then kept (they name
 * what the missing member missed) and events_cleared stays. */
bool md_degraded(struct md_array *a)
{
	for (unsigned r = 0; r < a->n; r++)
		if (!a->m[r].vol || a->m[r].failed || a->m[r].recovering)
			return true;
	return false;
}

void md_member_failed(void *ctx, unsigned role, int err)
{
	struct md_array *a = ctx;
	struct md_member *mm;

	if (role >= a->n)
		return;
	mm = &a->m[role];
	pthread_mutex_lock(&a->lock);
	if (!mm->failed) {
		/* mdadm's names: Fail for a member that was in sync, FailSpare
		 * for one being rebuilt; DegradedArray when this loss is what
		 * leaves a role without an in-sync member. */
		bool was_degraded = md_degraded(a), was_spare = mm->recovering;
		mm->failed = true;
		mm->readd_at_ns = 0; /* a re-add is tried from now on (md_readd.c) */
		mm->readd_wait_ms = 0;
		if (mm->sb && mm->sb->dev_number < MD_SB_MAX_DEV)
			a->roles[mm->sb->dev_number] = MD_ROLE_FAULTY;
		log_warn("%s: member %u (%s) marked faulty: %s", a->vol.name, role,
		         mm->vol ? mm->vol->name : "?", strerror(err < 0 ? -err : err));
		/* Its replacement goes with it (the kernel would recover it
		 * in the role instead: md_replace.h). */
		md_repl_fail(a, role, -EIO, false);
		if (!a->readonly) {
			int e = md_array_sync(a, atomic_load(&a->active));
			if (e < 0) {
				atomic_store(&a->unrecorded, e);
				log_warn("%s: could not record the failure in any superblock: "
				         "writes fail until one takes it",
				         a->vol.name);
			}
		}
		md_ev(a, was_spare ? "FailSpare" : "Fail", mm);
		if (!was_degraded)
			md_ev(a, "DegradedArray", NULL);
		if (a->scrub.running)
			atomic_store(&a->scrub.stop, true); /* as md's: a failure ends it */
		if (a->rec.started)
			pthread_cond_signal(&a->rec.cond); /* a spare may take the role */
	}
	pthread_mutex_unlock(&a->lock);
}
