/* md_grow.h — changing the number of copies of an md RAID1 offline
 * (`uraid grow`, mdadm --grow --raid-devices=N [--add NEW]) and the level
 * changes that move no data (--level, md_takeover.h): no reshape, new
 * roles missing until a member takes them, then rebuilt by md_rebuild()
 * (md_grow.c). */
#ifndef URAID_MD_GROW_H
#define URAID_MD_GROW_H

#include "md_rebuild.h"
#include "md_reshape.h"

#define MD_GROW_SIZE_MAX UINT64_MAX

struct md_grow_opts {
	unsigned raid_disks; /* the new number of devices (0 with a level: the rule's) */
	/* A level change that moves no data (md_takeover.h): take the array
	 * over to level, at layout (mdadm's name, or NULL: the rule's). */
	bool change_level;
	int level;
	const char *layout;
	/* --chunk (sectors; 0: unchanged) and --layout without a level: a
	 * RAID5/6 restripes to them (md_reshape_restripe()). */
	uint32_t chunk;
	/* --array-size (sectors; 0: none): with --raid-devices, the size a
	 * RAID5/6 shrinks to (mdadm asks for it first; md keeps it only in
	 * the running array, so uraid takes both in one command). */
	uint64_t array_size;
	/* --size: the sectors each member uses (MD_GROW_SIZE_MAX: all they
	 * hold); 0: unchanged.  Alone: no other change with it. */
	uint64_t size;
	char **news;     /* new members, taking missing roles (the caller made */
	unsigned nnew;   /* sure that none is a member, nor given twice) */
	bool no_rebuild; /* only write the superblocks */
	bool force;      /* overwrite what a NEW holds; a level change leaves a new role
	                  * missing without a NEW (mdadm --force) */
	const struct md_rebuild_opts *rebuild; /* how the rebuild shows and stops */
	bool *rebuilding; /* set once the rebuild begins (its errors are its own) */
	/* RAID5/6: the reshape that moves the data (md_reshape_grow), and
	 * how it shows itself and stops. */
	const struct md_reshape_run_opts *reshape;
};

/* Grow or shrink the RAID1 of the nm members (a RAID5/6 grows by a
 * reshape: md_reshape_grow(), md_reshape.h) (vols, superblocks sbs, fresh
 * the freshest, specs their names; all consumed, as md_rebuild takes
 * them); or, with change_level, take the array over to another level
 * (md_takeover.h's table): a role the new level adds (parity, Q) is taken
 * by a NEW or a spare given and rebuilt; or, with size, change the sectors
 * each member uses (mdadm --grow --size: RAID1/4/5/6/10 near or offset, no
 * bitmap; a grown region is recorded for resync from the old size, as md
 * records it).  0 (said through o->rebuild->out), -EINTR when the rebuild
 * was stopped (said), or -errno with err_set() detail. */
int md_grow(char **specs, unsigned nm, struct vol **vols, struct md_super **sbs, unsigned fresh,
            const struct md_grow_opts *o);

#endif
