/* raid_rebuild.h — putting a lost member's data back (md's "recovery").
 *
 * The array is opened (raid_open) with the roles to rebuild missing, so
 * that its reads never touch them and rebuild what lay on them; the
 * targets are the new members' data areas, written only.  Member offsets
 * are what md counts recovery_offset in: bytes of a member's data area
 * (sectors on disk), the same on every member. */
#ifndef URAID_RAID_REBUILD_H
#define URAID_RAID_REBUILD_H

#include "core/vol.h"

/* Called after every piece, once [from, done) is written on every target
 * (not yet flushed).  A non-zero return stops the rebuild there. */
typedef int (*raid_rebuild_progress_fn)(void *ctx, uint64_t done);

/* Write, on targets[role] for every role whose entry is not NULL (array
 * raid_disks entries), what that role holds at member offsets [from, to):
 * a RAID1/10 block copied from a live copy, a RAID5/6 data chunk rebuilt
 * from the rest of its stripe, P and Q recomputed from the data.  Each
 * target role must be missing from array; from and to are multiples of
 * 4096, to at most the targets' size.  Pieces go out in member order.
 * Returns 0, -EINTR when progress asked to stop (everything before the
 * last done it was given is written), or -errno with err_set() detail. */
int raid_rebuild(struct vol *array, struct vol *const *targets, uint64_t from, uint64_t to,
                 raid_rebuild_progress_fn progress, void *ctx);

/* The piece raid_rebuild() works in for array (a multiple of its chunk):
 * where a resumed rebuild can start. */
uint64_t raid_rebuild_piece(struct vol *array);

#endif
