/* raid0.c — md RAID0: chunked striping, with md's zones for members of
 * unequal size (linux drivers/md/raid0.c, create_strip_zones/map_sector).
 *
 * Each member's size is rounded down to a whole number of chunks.  Zone 0
 * stripes over every member up to the smallest size; each further zone
 * stripes over the members still larger, in role order, from where the
 * previous zone ended on them.  Within a zone, chunk c of the zone lives on
 * zone member (c' % nb_dev) at dev_start + (c / nb_dev) * chunk, where c'
 * counts chunks from the array start in the original layout (layout 0 or
 * 1, RAID0_ORIG_LAYOUT) and from the zone start in the alternate one
 * (layout 2, RAID0_ALT_MULTIZONE_LAYOUT).  With one zone both agree. */
#include "raid_types.h"

#include "core/log.h"

#include <errno.h>
#include <stdlib.h>

struct raid0_zone {
	uint64_t start, end; /* array bytes */
	uint64_t dev_start;  /* member bytes where the zone begins */
	unsigned nb_dev;
	unsigned *roles;
};

struct raid0_priv {
	unsigned nzones;
	struct raid0_zone *zones;
	unsigned *roles; /* storage for every zone's roles */
};

static void raid0_free(void *p)
{
	struct raid0_priv *z = p;
	if (!z)
		return;
	free(z->roles);
	free(z->zones);
	free(z);
}

static int raid0_setup(const struct raid_geom *g, const uint64_t *sizes, void **priv,
                       uint64_t *array_size, unsigned *copies)
{
	struct raid0_priv *z;
	uint64_t *rs;
	uint64_t dev_start = 0, start = 0;
	unsigned n = g->raid_disks;

	if (g->chunk == 0 || g->chunk % 4096)
		return err_set(-EINVAL, "raid0: chunk %u is not a positive multiple of 4 KiB",
		               g->chunk);
	if (g->layout > 2)
		return err_set(-EINVAL, "raid0: unknown layout %u", g->layout);
	rs = calloc(n, sizeof(*rs));
	z = calloc(1, sizeof(*z));
	if (!rs || !z)
		goto nomem;
	z->zones = calloc(n + 1, sizeof(*z->zones));
	z->roles = calloc((size_t)(n + 1) * n, sizeof(*z->roles));
	if (!z->zones || !z->roles)
		goto nomem;
	for (unsigned i = 0; i < n; i++) {
		rs[i] = sizes[i] / g->chunk * g->chunk;
		if (rs[i] == 0) {
			free(rs);
			raid0_free(z);
			return err_set(-EINVAL, "raid0: member %u is smaller than a chunk", i);
		}
	}
	for (;;) {
		/* The next zone: members larger than dev_start, up to the
		 * smallest of them. */
		uint64_t smallest = UINT64_MAX;
		struct raid0_zone *zn = &z->zones[z->nzones];
		zn->roles = z->roles + (size_t)z->nzones * n;
		for (unsigned i = 0; i < n; i++) {
			if (rs[i] <= dev_start)
				continue;
			zn->roles[zn->nb_dev++] = i;
			if (rs[i] < smallest)
				smallest = rs[i];
		}
		if (zn->nb_dev == 0)
			break;
		zn->dev_start = dev_start;
		zn->start = start;
		zn->end = start + (smallest - dev_start) * zn->nb_dev;
		start = zn->end;
		dev_start = smallest;
		z->nzones++;
	}
	free(rs);
	*array_size = start;
	*copies = 1;
	*priv = z;
	return 0;
nomem:
	free(rs);
	raid0_free(z);
	return -ENOMEM;
}

static uint64_t raid0_map(const void *p, const struct raid_geom *g, uint64_t off, uint64_t len,
                          struct raid_loc *loc, unsigned *ncopies)
{
	const struct raid0_priv *z = p;
	const struct raid0_zone *zn = z->zones;
	uint64_t chunk = g->chunk;

	while (off >= zn->end)
		zn++;
	uint64_t in_zone = off - zn->start;
	uint64_t in_chunk = off % chunk;
	uint64_t sel = (g->layout == 2 ? in_zone : off) / chunk;
	loc[0].role = zn->roles[sel % zn->nb_dev];
	loc[0].off = zn->dev_start + in_zone / (chunk * zn->nb_dev) * chunk + in_chunk;
	*ncopies = 1;
	uint64_t ext = chunk - in_chunk;
	if (ext > zn->end - off)
		ext = zn->end - off;
	return ext < len ? ext : len;
}

/* mdadm's names (maps.c's r0layout): md's RAID0_ORIG_LAYOUT and
 * RAID0_ALT_MULTIZONE_LAYOUT. */
static const struct md_layout_name raid0_layouts[] = {
    {1, "original", NULL},
    {2, "alternate", NULL},
};

const struct raid_level raid0_level = {
    .md = {.level = 0,
           .name = "raid0",
           .min_disks = 1,
           .chunked = true,
           .served = true,
           .layouts = raid0_layouts,
           .nlayouts = sizeof(raid0_layouts) / sizeof(raid0_layouts[0]),
           .default_layout = "original"},
    .setup = raid0_setup,
    .map = raid0_map,
    .free = raid0_free,
    .striped = true,
};
