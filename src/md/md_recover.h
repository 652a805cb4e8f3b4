/* md_recover.h — md's one recovery driver: rebuilding the members under
 * recovery of an array, from the lowest recovery offset among them,
 * saving recovery_offset every MD_RECOVER_CHECKPOINT bytes and when asked
 * to stop, ending at once when all is written.  Used by the background
 * thread of a running array (md_sync.c) and by the offline `uraid
 * rebuild` (md_rebuild.c); each says through md_recover_ops how to save a
 * checkpoint, when to stop, what to show and how fast to go. */
#ifndef URAID_MD_RECOVER_H
#define URAID_MD_RECOVER_H

#include "md.h"

#include "core/vol.h"

#define MD_RECOVER_CHECKPOINT (64ull << 20) /* recovery_offset saved this often */

struct md_recover_ops {
	/* After each piece, done bytes of each target written (may be NULL). */
	void (*progress)(void *ctx, uint64_t done);
	/* A target failed: end now, saving nothing (may be NULL: never). */
	bool (*failed)(void *ctx);
	/* Asked to stop: save where it got to and end. */
	bool (*stopping)(void *ctx);
	/* Make [0, done) durable on every target and record it: 0 or -errno. */
	int (*checkpoint)(void *ctx, uint64_t done);
	/* Hold the rebuild to its speed limits (may be NULL: none). */
	void (*throttle)(void *ctx, uint64_t done);
};

struct md_recover {
	struct vol *raid;     /* the array, its targets joined as recovering */
	struct vol **targets; /* by role: the data area rebuilt, or NULL */
	uint64_t from, to;    /* bytes of each member (md_recover_plan) */
	const struct md_recover_ops *ops;
	void *ctx;
	uint64_t saved;   /* the recovery offset last saved (bytes) */
	int checkpoint_r; /* the checkpoint that failed (-errno), else 0 */
};

/* Where the rebuild starts: the lowest offset that the superblocks sbs of
 * the targets (by role, n roles; NULL where none) record, down to a
 * multiple of the array's rebuild piece; to is the members' used size. */
void md_recover_plan(struct md_recover *rc, struct md_super *const *sbs, unsigned n,
                     uint64_t size_sectors);

/* Rebuild [rc->from, rc->to): 0 when done (all written), -EINTR when
 * stopped (by ops->stopping, ops->failed, or a checkpoint that failed:
 * rc->checkpoint_r), or raid_rebuild()'s -errno with err_set() detail. */
int md_recover_run(struct md_recover *rc);

#endif
