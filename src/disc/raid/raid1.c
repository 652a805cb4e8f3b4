/* raid1.c — md RAID1: every member holds the whole array at the same
 * offset of its data area.  The array is dev_size bytes (or the smallest
 * member when the geometry leaves it 0). */
#include "raid_types.h"

#include "core/log.h"

#include <errno.h>

static int raid1_setup(const struct raid_geom *g, const uint64_t *sizes, void **priv,
                       uint64_t *array_size, unsigned *copies)
{
	uint64_t size = UINT64_MAX;

	if (g->raid_disks > RAID_MAX_COPIES)
		return err_set(-EINVAL, "raid1: at most %d mirrors", RAID_MAX_COPIES);
	for (unsigned i = 0; i < g->raid_disks; i++)
		if (sizes[i] && sizes[i] < size)
			size = sizes[i];
	if (g->dev_size) {
		if (size != UINT64_MAX && g->dev_size > size)
			return err_set(-EINVAL, "raid1: members are smaller than the array");
		size = g->dev_size;
	}
	if (size == UINT64_MAX)
		return err_set(-ENODEV, "raid1: no member present");
	*array_size = size / 512 * 512;
	*copies = g->raid_disks;
	*priv = NULL;
	return 0;
}

static uint64_t raid1_map(const void *p, const struct raid_geom *g, uint64_t off, uint64_t len,
                          struct raid_loc *loc, unsigned *ncopies)
{
	(void)p;
	for (unsigned i = 0; i < g->raid_disks; i++) {
		loc[i].role = i;
		loc[i].off = off;
	}
	*ncopies = g->raid_disks;
	return len;
}

static void raid1_free(void *p)
{
	(void)p;
}

const struct raid_level raid1_level = {
    .md = {.level = 1, .name = "raid1", .min_disks = 1, .redundant = true, .served = true},
    .setup = raid1_setup,
    .map = raid1_map,
    .free = raid1_free,
};
