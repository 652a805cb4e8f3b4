/* md_takeover.h — md's level changes that move no data (the kernel's
 * "takeovers": raid0.c raid0_takeover*, raid1.c raid1_takeover, raid5.c
 * raid45_takeover_raid0, raid4_takeover, raid5_takeover_raid1, raid5_takeover_raid6,
 * raid6_takeover, raid10.c; mdadm --grow --level=N), as one table of
 * transitions (md_takeover.c).  Pure: from the freshest superblock and
 * which slots hold members in sync, the plan (the new geometry and role
 * table) or the refusal naming the rule; md_grow.c writes it. */
#ifndef URAID_MD_TAKEOVER_H
#define URAID_MD_TAKEOVER_H

#include "md.h"

#include "core/vol.h"

#include <stdbool.h>
#include <stdint.h>

struct md_takeover_in {
	const struct md_super *sb; /* the freshest superblock: geometry, role table */
	/* Per slot (dev_number < sb->max_dev): a member given that holds its
	 * role in sync (not being rebuilt). */
	const bool *in_sync;
	uint64_t min_data_size; /* the smallest data_size (sectors) of the members given */
	uint64_t max_data_size; /* and the largest */
	int level;              /* the level asked for */
	unsigned raid_disks;    /* --raid-devices with it, or 0 */
	const char *layout;     /* --layout as given, or NULL */
	const char *array;      /* md/NAME, for messages */
};

struct md_takeover_plan {
	const char *rule; /* the table row's name: "raid1 -> raid5" */
	int level;
	uint32_t layout;
	uint32_t chunk; /* sectors */
	unsigned raid_disks;
	uint64_t size; /* sectors of each member used */
	/* The new role table (indexed by slot, sb->max_dev entries): a slot
	 * whose member leaves the array (raid5 -> raid0's parity, one copy of
	 * each raid10 pair) gets MD_ROLE_SPARE as the kernel writes it, and
	 * its member is not written; a slot whose member stays as a spare
	 * (raid6 -> raid5's Q) gets MD_ROLE_SPARE and is written. */
	uint16_t roles[MD_SB_MAX_DEV];
	bool dropped[MD_SB_MAX_DEV]; /* slots whose member leaves the array */
	/* The role left missing for a new member to take (its parity, Q),
	 * or -1. */
	int new_role;
	bool clean; /* the array is to be recorded clean (from or to raid0) */
	/* A change mdadm makes in one command with a reshape, which md_grow.c
	 * runs through md_reshape_restripe(): before the takeover, restripe
	 * to before_layout (6 -> 5 from a layout that rotates Q: to its -6
	 * form); after it, to after_layout over after_disks (5 -> 6 to a
	 * layout that rotates Q: from the -6 one; 1 -> 5 to more devices). */
	bool restripe_before, restripe_after;
	uint32_t before_layout, after_layout;
	unsigned after_disks;
};

/* The plan for taking the array of in over to in->level, or -ENOTSUP /
 * -EINVAL with err_set() detail naming the array and the rule that
 * refuses (a level pair md has no takeover for, a layout, a device count,
 * members not in sync, a bitmap RAID0 cannot keep, a restripe to a layout
 * the level change does not reach).  Nothing is written by anyone before
 * this answers. */
int md_takeover_plan(const struct md_takeover_in *in, struct md_takeover_plan *p);

/* The superblock geometry plan p gives the array of f (f with p's level,
 * layout, chunk, devices and size, no raid0 layout flag, clean where p
 * says so) into *geom, for md_manage_set_geometry(). */
void md_takeover_geometry(const struct md_takeover_plan *p, const struct md_super *f,
                          struct md_super *geom);

/* The slot of the role table (roles, max_dev entries) recording role, or
 * -1. */
int md_role_slot(const uint16_t *roles, uint32_t max_dev, unsigned role);

/* The table's rows, for `uraid grow --help` and tests: i from 0 until
 * NULL.  *from and *to get the levels, *made whether uraid makes it (else
 * the rule says why not); the string is the row's rule. */
const char *md_takeover_row(unsigned i, int *from, int *to, bool *made);

/* ---- on a running array (md_takeover_live.c) ---- */

/* Take the running md array v over to level (mdadm --grow --level on an
 * active array): the plan of md_takeover_plan() on its state, refused
 * where a served array cannot take it (a reshape, rebuild or check under
 * way, a member faulty or rebuilding, a bitmap, PPL or journal), then,
 * with its requests held at the gate for one superblock round, the new
 * level's RAID vol put under the md vol in place of the old one.  A role
 * the level adds is taken by news[0] (added as md_array_add() adds a
 * spare, then rebuilt while serving), or by a spare, or left missing
 * with force.  layout: --layout as given or NULL; raid_disks: with it, or
 * 0.  The rows mdadm joins to a reshape run it while serving: 6 -> 5
 * from a layout rotating Q restripes first and takes over when that
 * ends; 1 -> 5 to raid_disks > 2 takes over, then restripes with news;
 * 5 -> 6 to a rotating layout is refused (Q rebuilt first: two steps).
 * news[0..nnew): opened by the caller, taken on success.  0 or -errno
 * with err_set() detail; nothing is written before every check passed. */
int md_array_takeover(struct vol *v, int level, const char *layout, unsigned raid_disks,
                      struct vol **news, unsigned nnew, bool force);

/* Grow the running RAID0 v to raid_disks devices, news[0..nnew) taking
 * the new roles (mdadm --grow -n N --add NEW on an active raid0): the
 * offline path's checks first (md_reshape_restripe_check, the takeover
 * rule, the new members), then the takeover to a raid4 with
 * its parity role missing, the reshape of md_array_restripe() to
 * raid_disks + 1 devices (parity_missing) beside the clients, and, once
 * it ends, the takeover back to raid0 (from the reshape thread).  A stop
 * part-way leaves the raid4 reshape on disk, as the offline path does
 * (the kernel or `uraid grow --continue` goes on; `--level 0` after).
 * news: taken on success.  0 or -errno with err_set() detail. */
int md_array_grow_raid0(struct vol *v, unsigned raid_disks, struct vol **news, unsigned nnew,
                        bool force);

#endif
