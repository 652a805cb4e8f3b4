/* md_replace.h — md's hot replacement (mdadm --replace OLD --with NEW):
 * a role held by two members while NEW is built from OLD, so that the
 * array never loses redundancy.
 *
 * On disk (the kernel's super_1_sync): NEW's superblock gives it OLD's
 * role in the role table (two slots, one role) and carries
 * MD_FEATURE_REPLACEMENT and MD_FEATURE_RECOVERY_OFFSET, recovery_offset
 * the sectors of its data area built so far.  md reads from OLD, writes
 * both (NEW above its recovery offset too), and once NEW is built whole
 * OLD is marked faulty (0xfffe in the role table) and NEW takes the role,
 * its feature bits cleared.
 *
 * Here the role's member, as the RAID vol holds it, is a replace vol over
 * OLD's and NEW's data areas: reads go to OLD, every change to both; the
 * copy (md_repl_copy) moves OLD's bytes onto NEW window by window, and
 * writes into the window being copied wait for it (so NEW never takes a
 * copy older than a client's write).  A write NEW fails stops NEW being
 * written (md_repl_error says so: the replacement is dropped); one OLD
 * fails fails the request, as a member's would.  md_replace.c also holds
 * the array's side: assembly, the copy on the recovery thread, the end. */
#ifndef URAID_MD_REPLACE_H
#define URAID_MD_REPLACE_H

#include "core/vol.h"

#include <stdint.h>

/* The replace vol over old and new (data areas; owned from now on, also
 * on error), named name, its size old's.  0 or -errno. */
int md_repl_open(struct vol *old, struct vol *new, const char *name, struct vol **out);

/* Undo md_repl_open before the vol was used: new is closed, old is left
 * open (the caller's again). */
void md_repl_unwrap(struct vol *rv);

/* Called after each window copied, with the bytes done from the start;
 * non-zero stops the copy (-EINTR). */
typedef int (*md_repl_progress_fn)(void *ctx, uint64_t done);

/* Copy old's [from, to) onto new in windows of piece bytes (a multiple of
 * 4096), beside client I/O.  0, -EINTR when progress stopped it, -EIO
 * when new failed (md_repl_error), or old's read error (-errno, with
 * err_set() detail naming it). */
int md_repl_copy(struct vol *rv, uint64_t from, uint64_t to, uint64_t piece,
                 md_repl_progress_fn progress, void *ctx);

/* 0, or the first error a change or flush of new met (new is written no
 * more from then on). */
int md_repl_error(struct vol *rv);

/* Stop writing new (the replacement is given up). */
void md_repl_drop(struct vol *rv);

/* new holds everything: flush it, close old (after the requests in
 * flight on it), and send everything to new from now on.  0, or new's
 * flush error (nothing changed). */
int md_repl_switch(struct vol *rv);

#endif
