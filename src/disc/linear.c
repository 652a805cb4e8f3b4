/* linear.c — md linear: the members concatenated in role order (linux
 * drivers/md/md-linear.c).  When the superblock has a chunk size, each
 * member contributes its size rounded down to whole chunks, as md does. */
#include "raid/raid_types.h"

#include "core/log.h"

#include <errno.h>
#include <stdlib.h>

struct linear_priv {
	unsigned n;
	uint64_t end[]; /* array byte where member i ends */
};

static void linear_free(void *p)
{
	free(p);
}

static int linear_setup(const struct raid_geom *g, const uint64_t *sizes, void **priv,
                        uint64_t *array_size, unsigned *copies)
{
	struct linear_priv *l;
	uint64_t total = 0;

	if (g->chunk % 512)
		return err_set(-EINVAL, "linear: chunk %u is not a multiple of 512", g->chunk);
	l = calloc(1, sizeof(*l) + g->raid_disks * sizeof(l->end[0]));
	if (!l)
		return -ENOMEM;
	l->n = g->raid_disks;
	for (unsigned i = 0; i < l->n; i++) {
		uint64_t s = g->chunk ? sizes[i] / g->chunk * g->chunk : sizes[i] / 512 * 512;
		if (s == 0) {
			free(l);
			return err_set(-EINVAL, "linear: member %u is empty", i);
		}
		total += s;
		l->end[i] = total;
	}
	*array_size = total;
	*copies = 1;
	*priv = l;
	return 0;
}

static uint64_t linear_map(const void *p, const struct raid_geom *g, uint64_t off, uint64_t len,
                           struct raid_loc *loc, unsigned *ncopies)
{
	const struct linear_priv *l = p;
	unsigned i = 0;
	(void)g;

	while (off >= l->end[i])
		i++;
	uint64_t start = i ? l->end[i - 1] : 0;
	loc[0].role = i;
	loc[0].off = off - start;
	*ncopies = 1;
	return l->end[i] - off < len ? l->end[i] - off : len;
}

/* Members of any size: extents need not end on 4096-byte boundaries, so
 * no view (vol.h). */
const struct raid_level linear_level = {
    .md = {.level = RAID_LEVEL_LINEAR, .name = "linear", .min_disks = 1, .served = true},
    .setup = linear_setup,
    .map = linear_map,
    .free = linear_free,
    .caps_off = VOL_CAP_VIEW,
};
