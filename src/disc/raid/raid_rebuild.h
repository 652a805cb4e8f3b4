/* raid_rebuild.h — putting a lost member's data back (md's "recovery").
 *
 * Offline (uraid rebuild): the array is opened (raid_open) with the roles
 * to rebuild missing, so that its reads never touch them and rebuild what
 * lay on them; the targets are the new members' data areas, written only.
 * Online (uraid serve): the array runs, and raid_recover_begin() gives a
 * missing role its new member as "recovering": written by clients, never
 * read; raid_rebuild() onto it then runs beside client I/O, behind a
 * barrier that keeps it from writing data older than a client's (raid_barrier.c).
 * Member offsets are what md counts recovery_offset in: bytes of a
 * member's data area (sectors on disk), the same on every member. */
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
 * target role must be missing from array, or be recovering with targets[role]
 * its member (online: then the rebuild keeps its window clear of client
 * writes, and a failed target write is recorded for raid_recover_error);
 * from and to are multiples of
 * 4096, to at most the targets' size.  Pieces go out in member order.
 * Returns 0, -EINTR when progress asked to stop (everything before the
 * last done it was given is written), or -errno with err_set() detail. */
int raid_rebuild(struct vol *array, struct vol *const *targets, uint64_t from, uint64_t to,
                 raid_rebuild_progress_fn progress, void *ctx);

/* A re-add's pass (md's bitmap-based recovery): as raid_rebuild() over
 * member offsets [from, to) (from rounded down to a chunk, 4 KiB for
 * RAID1), onto targets that hold what they should everywhere else and
 * take every client write (raid_recover_begin with from UINT64_MAX): the
 * recovery point stays where it is, so writes outside [from, to) keep
 * reaching the targets while this runs.  Call once per dirty range. */
int raid_resync(struct vol *array, struct vol *const *targets, uint64_t from, uint64_t to,
                raid_rebuild_progress_fn progress, void *ctx);

/* Where array bytes [off, off+len) lie on role: fn(ctx, moff, mlen) for
 * each extent of a copy on it, in array order (a copy count of extents
 * per array extent at most; none where the role holds no copy).  0, fn's
 * non-zero return, or -EINVAL for a vol that is not a RAID vol. */
int raid_role_extents(struct vol *array, unsigned role, uint64_t off, uint64_t len,
                      int (*fn)(void *ctx, uint64_t moff, uint64_t mlen), void *ctx);

/* ---- online recovery ---- */

/* Role (missing or failed) of the running array gets target (its data
 * area: the array owns it from now on) as a recovering member, holding
 * what it should below member offset from (rounded down to a chunk):
 * client writes go to it (or, RAID5/6, are rebuilt onto it below the
 * recovery point), reads never use it.  Write-behind is off until the
 * last recovery ends.  Not while raid_rebuild() runs on the array (call
 * it between rebuilds).  0 or -errno with err_set(). */
int raid_recover_begin(struct vol *array, unsigned role, struct vol *target, uint64_t from);
/* Role's rebuild reached the end (every byte written and flushed): it is
 * an in-sync member from now on.  -EIO (and it stays failed) if a write to
 * it failed meanwhile. */
int raid_recover_finish(struct vol *array, unsigned role);
/* Give up role's recovery: it is a failed member again, never written. */
void raid_recover_abort(struct vol *array, unsigned role);
/* 0, or the first error a write to recovering role met (then its recovery
 * is to be aborted: it misses data). */
int raid_recover_error(struct vol *array, unsigned role);

/* The piece raid_rebuild() works in for array (a multiple of its chunk):
 * where a resumed rebuild can start. */
uint64_t raid_rebuild_piece(struct vol *array);

#endif
