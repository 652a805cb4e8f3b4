/* raid_levels.c — every level, in one table: raid_levels[] lists each
 * level's descriptor (raid_types.h's struct raid_level, filled by the
 * level's own file), in the order md's tools list them.  raid_open() and
 * raid_array_size() (raid.c) take a level from here, and md (md.c's
 * md_level_info()) reads the levels' md facts from here; a new level is
 * its file plus one line below. */
#include "raid_types.h"

static const struct raid_level *const raid_levels[] = {
    &linear_level, &raid0_level, &raid1_level,  &raid4_level,
    &raid5_level,  &raid6_level, &raid10_level,
};

#define RAID_NLEVELS (sizeof(raid_levels) / sizeof(raid_levels[0]))

const struct raid_level *raid_level_of(int level)
{
	for (unsigned i = 0; i < RAID_NLEVELS; i++)
		if (raid_levels[i]->md.level == level)
			return raid_levels[i]->md.served ? raid_levels[i] : NULL;
	return NULL;
}

const struct md_level_info *raid_level_md_at(unsigned i)
{
	return i < RAID_NLEVELS ? &raid_levels[i]->md : NULL;
}
