/* md_reshape.h — an md RAID5/6 array in the middle of a reshape (mdadm
 * --grow --raid-devices, --chunk, --layout): two geometries over the same
 * members, as the kernel's raid5 keeps them.
 *
 * The superblocks hold the old geometry (level, layout, chunksize at
 * data_offset, raid_disks - delta_disks devices) and the new one
 * (new_level, new_layout, new_chunk at data_offset + new_offset,
 * raid_disks devices), and reshape_position, the array sector the
 * reshape has reached: growing forwards, array bytes below it lie in the
 * new geometry and those at or above it in the old; with
 * MD_FEATURE_RESHAPE_BACKWARDS the other way round (raid5.c's
 * ahead_of_reshape()).  The array serves the smaller of the two sizes, as
 * md does until the reshape ends.  md_assemble.c opens such an array
 * through md_reshape_open(); the reshape vol below dispatches each
 * request by address. */
#ifndef URAID_MD_RESHAPE_H
#define URAID_MD_RESHAPE_H

#include "disc/raid/raid.h"

#include <stdbool.h>
#include <stdint.h>

struct md_super;

struct md_reshape {
	struct raid_geom from; /* the old geometry, at each member's data_offset */
	struct raid_geom to;   /* the new one, at its new data offset */
	uint64_t pos;          /* array bytes: reshape_position */
	bool backwards;        /* to holds [pos, end), from [0, pos) */
	unsigned slots;        /* roles of either: max(from, to raid_disks) */
	uint64_t size;         /* array bytes served: the smaller geometry's */
};

/* The reshape the freshest superblock fresh of array name records (it
 * has MD_FEATURE_RESHAPE_ACTIVE), checked as the kernel's raid5 checks
 * it before it starts the array: a level it reshapes (raid5, raid6) and
 * the same level after, a valid old device count (delta_disks) whose
 * roles cover every role fresh records, a layout and chunk the level
 * takes, something that changes, and a reshape_position inside the array
 * on a stripe boundary of the new geometry (in units of the larger
 * chunk).  0 or -EINVAL / -ENOTSUP with err_set() detail naming name. */
int md_reshape_parse(const struct md_super *fresh, const char *name, struct md_reshape *out);

/* Whether member superblock sb (of member mname) records the same
 * reshape as fresh (of fname): the feature bits, delta_disks and the new
 * geometry.  0, or -EINVAL with err_set() detail naming both. */
int md_reshape_same(const struct md_super *sb, const char *mname, const struct md_super *fresh,
                    const char *fname, const char *name);

/* The vol of an array under reshape rs over from and to (RAID vols of
 * rs->from and rs->to; it owns them from then on, also on error): reads
 * go to the geometry that holds their bytes, split at rs->pos.
 * Read-only for now: writes fail with -EROFS.  0 or -errno. */
int md_reshape_vol_open(struct vol *from, struct vol *to, const struct md_reshape *rs,
                        const char *name, struct vol **out);

#endif
