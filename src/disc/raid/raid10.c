/* raid10.c — md RAID10 with near, far and offset copies (linux
 * drivers/md/raid10.c: setup_geo, calc_sectors, __raid10_find_phys).
 *
 * The layout word is near | far << 8 | (offset ? 1 << 16 : 0), and bits 17+
 * choose how far copies rotate: 0 over all disks (mdadm's default), 1 over
 * sets of disks/far (the old buggy "improved" layout), 2 over sets of
 * near*far disks.  Array chunk c is first placed at device chunk c*near:
 * device (c*near) % disks, stripe (c*near) / disks (times far for offset
 * layouts); its near copies follow on the next devices, and each of those
 * has far-1 further copies, one stride on and near devices over.  The
 * stride is one chunk for offset layouts, else the used device size
 * divided by far. */
#include "raid_types.h"

#include "core/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RAID10_OFFSET 0x10000u /* offset copies (md's layout bit 16) */

struct raid10_priv {
	unsigned nc, fc, disks;
	bool fo;
	unsigned far_set_size;
	uint64_t stride; /* bytes */
};

static void raid10_free(void *p)
{
	free(p);
}

static int raid10_setup(const struct raid_geom *g, const uint64_t *sizes, void **priv,
                        uint64_t *array_size, unsigned *copies)
{
	struct raid10_priv *t;
	unsigned nc = g->layout & 0xff, fc = (g->layout >> 8) & 0xff;
	unsigned d = g->raid_disks;
	uint64_t dev = UINT64_MAX, chunk = g->chunk;

	if (nc < 1 || fc < 1 || nc * fc > d || nc * fc > RAID_MAX_COPIES || (g->layout >> 17) > 2)
		return err_set(-EINVAL, "raid10: layout 0x%x does not fit %u disks", g->layout, d);
	if (chunk < 4096 || (chunk & (chunk - 1)))
		return err_set(-EINVAL, "raid10: chunk %u is not a power of two >= 4 KiB",
		               g->chunk);
	for (unsigned i = 0; i < d; i++)
		if (sizes[i] && sizes[i] < dev)
			dev = sizes[i];
	if (g->dev_size) {
		if (dev != UINT64_MAX && g->dev_size > dev)
			return err_set(-EINVAL, "raid10: members are smaller than the array");
		dev = g->dev_size;
	}
	if (dev == UINT64_MAX)
		return err_set(-ENODEV, "raid10: no member present");
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->nc = nc;
	t->fc = fc;
	t->disks = d;
	t->fo = g->layout & (1u << 16);
	switch (g->layout >> 17) {
	case 0:
		t->far_set_size = d;
		break;
	case 1:
		t->far_set_size = d / fc;
		break;
	default:
		t->far_set_size = fc * nc;
		break;
	}
	/* calc_sectors(): chunks in the array, then used chunks per device
	 * rounded up, then the stride. */
	uint64_t chunks = dev / chunk / fc * d / nc;
	uint64_t used = (chunks * nc * fc + d - 1) / d;
	t->stride = t->fo ? chunk : used / fc * chunk;
	if (used / fc == 0) {
		free(t);
		return err_set(-EINVAL, "raid10: members too small for the layout");
	}
	*array_size = used / fc * d / nc * chunk;
	*copies = nc * fc;
	*priv = t;
	return 0;
}

static uint64_t raid10_map(const void *p, const struct raid_geom *g, uint64_t off, uint64_t len,
                           struct raid_loc *loc, unsigned *ncopies)
{
	const struct raid10_priv *t = p;
	uint64_t chunk = g->chunk;
	uint64_t in_chunk = off & (chunk - 1);
	uint64_t c = off / chunk * t->nc;
	uint64_t stripe = c / t->disks;
	unsigned dev = (unsigned)(c % t->disks);
	unsigned fss = t->far_set_size;
	unsigned last_set_start = (t->disks / fss - 1) * fss;
	unsigned last_set_size = fss + t->disks % fss;
	unsigned slot = 0;

	if (t->fo)
		stripe *= t->fc;
	uint64_t base = stripe * chunk + in_chunk;
	for (unsigned n = 0; n < t->nc; n++) {
		unsigned d = dev;
		uint64_t s = base;
		loc[slot].role = d;
		loc[slot++].off = s;
		for (unsigned f = 1; f < t->fc; f++) {
			unsigned set = d / fss;
			d += t->nc;
			if ((t->disks % fss) && d > last_set_start) {
				d -= last_set_start;
				d %= last_set_size;
				d += last_set_start;
			} else {
				d %= fss;
				d += fss * set;
			}
			s += t->stride;
			loc[slot].role = d;
			loc[slot++].off = s;
		}
		if (++dev >= t->disks) {
			dev = 0;
			base += chunk;
		}
	}
	*ncopies = slot;
	uint64_t ext = chunk - in_chunk;
	return ext < len ? ext : len;
}

/* mdadm's raid10 layout names are made of the copy counts: "n2" (near),
 * "f2" (far), "o2" (offset). */
static int raid10_layout_parse(const char *s, uint32_t *layout)
{
	char *end;
	unsigned long copies;

	if (!s[0] || !strchr("nfo", s[0]))
		return -EINVAL;
	copies = strtoul(s + 1, &end, 10);
	if (s[1] < '1' || s[1] > '9' || *end || copies < 1 || copies > 255)
		return -EINVAL;
	switch (s[0]) {
	case 'n':
		*layout = (1u << 8) | (uint32_t)copies;
		break;
	case 'f':
		*layout = ((uint32_t)copies << 8) | 1;
		break;
	default:
		*layout = RAID10_OFFSET | ((uint32_t)copies << 8) | 1;
		break;
	}
	return 0;
}

static void raid10_layout_format(uint32_t layout, char *out, size_t len)
{
	unsigned near = layout & 0xff, far = (layout >> 8) & 0xff;

	snprintf(out, len, "%s%u", far > 1 ? (layout & RAID10_OFFSET ? "o" : "f") : "n",
	         far > 1 ? far : near);
}

const struct raid_level raid10_level = {
    .md = {.level = 10,
           .name = "raid10",
           .min_disks = 2,
           .redundant = true,
           .chunked = true,
           .served = true,
           .default_layout = "n2",
           .layout_parse = raid10_layout_parse,
           .layout_format = raid10_layout_format},
    .setup = raid10_setup,
    .map = raid10_map,
    .free = raid10_free,
};
