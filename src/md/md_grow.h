/* md_grow.h — changing the number of copies of an md RAID1 offline
 * (`uraid grow`, mdadm --grow --raid-devices=N [--add NEW]): no reshape,
 * new roles missing until a member takes them, then rebuilt by
 * md_rebuild() (md_grow.c). */
#ifndef URAID_MD_GROW_H
#define URAID_MD_GROW_H

#include "md_rebuild.h"
#include "md_reshape.h"

struct md_grow_opts {
	unsigned raid_disks; /* the new number of devices */
	char **news;         /* new members, taking missing roles (the caller made */
	unsigned nnew;       /* sure that none is a member, nor given twice) */
	bool no_rebuild;     /* only write the superblocks */
	bool force;          /* overwrite what a NEW holds */
	const struct md_rebuild_opts *rebuild; /* how the rebuild shows and stops */
	bool *rebuilding; /* set once the rebuild begins (its errors are its own) */
	/* RAID5/6: the reshape that moves the data (md_reshape_grow), and
	 * how it shows itself and stops. */
	const struct md_reshape_run_opts *reshape;
};

/* Grow or shrink the RAID1 of the nm members (a RAID5/6 grows by a
 * reshape: md_reshape_grow(), md_reshape.h) (vols, superblocks sbs, fresh
 * the freshest, specs their names; all consumed, as md_rebuild takes
 * them).  0 (said through o->rebuild->out), -EINTR when the rebuild was
 * stopped (said), or -errno with err_set() detail. */
int md_grow(char **specs, unsigned nm, struct vol **vols, struct md_super **sbs, unsigned fresh,
            const struct md_grow_opts *o);

#endif
