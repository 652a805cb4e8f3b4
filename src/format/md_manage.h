/* md_manage.h — the superblock transitions of md's member management
 * (mdadm --add, the kernel's recovery and hot spares), in one place for
 * `uraid add` / `uraid rebuild` (offline, cli/cmd_rebuild.c) and the
 * online recovery of `uraid serve` (md_assemble.c).
 *
 * A member's life as md records it: spare (role 0xffff) -> recovering (an
 * active role, feature RECOVERY_OFFSET, recovery_offset = sectors of its
 * data area rebuilt, saved as the rebuild goes) -> in sync (feature
 * cleared).  Every change of the role table goes to every member with
 * events + 1; the caller owns that counter and the table. */
#ifndef URAID_MD_MANAGE_H
#define URAID_MD_MANAGE_H

#include "md.h"

/* Copy the array-wide state into sb (events, utime now, max_dev, role
 * table); it is written by md_super_write(). */
void md_manage_set_state(struct md_super *sb, uint64_t events, uint32_t max_dev,
                         const uint16_t *roles);

/* sb's member takes role and is to be rebuilt from its start. */
void md_manage_mark_recovering(struct md_super *sb, uint16_t *roles, unsigned role);

/* A spare takes role: its slot in roles records it, and it is marked as
 * recovering.  -ENOSPC (err_set, naming array and spec) when its data area
 * is smaller than the size_sectors every member uses. */
int md_manage_promote_spare(struct md_super *sb, uint16_t *roles, unsigned role,
                            uint64_t size_sectors, const char *array, const char *spec);

/* [0, done) bytes of member's data area are rebuilt: make them durable
 * (flush member), then record it in its superblock.  Never lowers the
 * recorded offset (md_manage_restart does). */
int md_manage_checkpoint(struct vol *member, struct md_super *sb, uint64_t done);

/* A rebuild starts at from bytes: a member recorded further on is marked
 * at from (written), since writes below its old offset may reach it only
 * once the rebuild gets there. */
int md_manage_restart(struct vol *member, struct md_super *sb, uint64_t from);

/* The member is rebuilt whole: no longer recovering (to be written with
 * the next state change). */
void md_manage_recovery_done(struct md_super *sb);

/* Where a recovering member's rebuild continues, in bytes (its recorded
 * offset, at most size_sectors). */
uint64_t md_manage_recovery_from(const struct md_super *sb, uint64_t size_sectors);

#endif
