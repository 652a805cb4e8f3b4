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

/* The geometry of tmpl onto sb: level, layout, chunk, devices, size,
 * resync offset, the raid0 layout flag (a level change, md_grow.c and
 * md_takeover_live.c). */
void md_manage_set_geometry(struct md_super *sb, const struct md_super *tmpl);

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

/* ---- a new member (`uraid add`, offline and on a running serve) ----
 * The checks come first and write nothing; md_manage_new_super() is the
 * first write.  Messages name spec (the new member) and array (md/NAME). */

/* Refuse a new member v that holds an md superblock (of this array,
 * set_uuid, or another) or anything else probe_member() finds, unless
 * force.
 * *end_sb gets the offset of a v1.0/0.90 superblock at its end, which
 * --force wipes (UINT64_MAX: none).  -EEXIST with err_set(). */
int md_manage_probe_new(struct vol *v, const char *spec, const uint8_t set_uuid[16],
                        const char *array, bool force, uint64_t *end_sb);

/* -ENOSPC with err_set() unless v holds tmpl's data area (data_offset
 * and size sectors of data) in tmpl's superblock version's layout. */
int md_manage_check_size(struct vol *v, const char *spec, const struct md_super *tmpl,
                         const char *array);

/* The device slot a new member takes: the first from raid_disks up (as
 * mdadm picks it) that the role table (roles, max_dev) records no device
 * in and no device present uses (used[0..nused), their dev_numbers), and
 * whose role table still fits in tmpl's superblock (below its data for
 * 1.1 and 1.2).  The slot, or -ENOSPC with err_set(). */
int md_manage_pick_slot(const uint16_t *roles, uint32_t max_dev, unsigned raid_disks,
                        const uint32_t *used, unsigned nused, const struct md_super *tmpl,
                        const char *array);

/* Prepare the new member nv to take slot: *nsb becomes tmpl's superblock
 * (and version) with nv's own device fields (slot, where its superblock
 * sits, data size, a new device uuid, no recovery or bad-block state);
 * nv's metadata area outside the data (md_super_meta_area) is zeroed (and the end superblock at
 * end_sb, if not UINT64_MAX), and tmpl_vol's write-intent bitmap copied onto it.  nsb's role and
 * array state are the caller's to set before it writes nsb. */
int md_manage_new_super(struct vol *nv, const char *spec, const struct md_super *tmpl,
                        struct vol *tmpl_vol, unsigned slot, uint64_t end_sb, struct md_super *nsb);

/* ---- the number of copies (`uraid grow --raid-devices`, RAID1) ----
 * md's raid1 changes raid_disks at once, without a reshape: the roles
 * from the old count up start out missing; dropping roles is allowed
 * only when nobody holds them. */

/* Whether the role table (roles, max_dev) lets raid_disks go from old to
 * n: growing always does (n up to MD_ROLE_MAX - 1); shrinking only if no
 * slot records a role in [n, old).  -EBUSY with err_set() naming array,
 * the role and its slot otherwise; -EINVAL for n == 0 or too large. */
int md_manage_check_raid_disks(const uint16_t *roles, uint32_t max_dev, unsigned old, unsigned n,
                               const char *array);

/* The lowest role below raid_disks that no slot of roles records, or -1. */
int md_manage_free_role(const uint16_t *roles, uint32_t max_dev, unsigned raid_disks);

#endif
