/* raid5.c — md RAID5, read-only: every layout md writes (left/right,
 * symmetric/asymmetric, parity first/last), whole or with one member
 * missing, whose blocks are then rebuilt from the stripe's other chunks
 * and its parity.  Writing needs parity updates that are not built yet, so
 * the array is offered read-only (raid.c refuses changes): enough to read
 * the disks of a dead NAS.
 *
 * The geometry, as Linux's raid5_compute_sector(): array chunk c lies in
 * stripe s = c / (n-1) at data index d = c % (n-1); stripe s sits at member
 * offset s * chunk; its parity disk p and the data disk of d depend on the
 * algorithm (md's layout word):
 *   0 left-asymmetric   p = n-1 - s%n, data skips p
 *   1 right-asymmetric  p = s%n, data skips p
 *   2 left-symmetric    p = n-1 - s%n, data from p+1 on, wrapping
 *   3 right-symmetric   p = s%n, data from p+1 on, wrapping
 *   4 parity-first      p = 0, data on 1..n-1
 *   5 parity-last       p = n-1, data on 0..n-2
 * The parity is the XOR of the stripe's data chunks. */
#include "raid_internal.h"

#include "core/log.h"

#include <errno.h>
#include <stdlib.h>

enum { R5_LEFT_ASYM, R5_RIGHT_ASYM, R5_LEFT_SYM, R5_RIGHT_SYM, R5_PARITY_0, R5_PARITY_N };

struct raid5 {
	uint64_t dev_size; /* bytes used on each member, whole chunks */
};

static int raid5_setup(const struct raid_geom *g, const uint64_t *sizes,
		       void **priv, uint64_t *array_size, unsigned *copies)
{
	uint64_t size = UINT64_MAX;
	struct raid5 *t;

	if (g->raid_disks < 2)
		return err_set(-EINVAL, "raid5: needs at least 2 members, not %u", g->raid_disks);
	if (g->layout > R5_PARITY_N)
		return err_set(-EINVAL, "raid5: layout %u is not one md writes", g->layout);
	if (g->chunk == 0 || g->chunk % 512)
		return err_set(-EINVAL, "raid5: chunk of %u bytes", g->chunk);
	for (unsigned i = 0; i < g->raid_disks; i++)
		if (sizes[i] && sizes[i] < size)
			size = sizes[i];
	if (size == UINT64_MAX)
		return err_set(-ENODEV, "raid5: no member present");
	if (g->dev_size) {
		if (g->dev_size > size)
			return err_set(-EINVAL, "raid5: members are smaller than the array");
		size = g->dev_size;
	}
	size -= size % g->chunk;
	t = malloc(sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->dev_size = size;
	*priv = t;
	*array_size = size * (g->raid_disks - 1);
	*copies = 1;
	return 0;
}

/* The parity disk of stripe s, and the member holding data index d. */
static void raid5_place(const struct raid_geom *g, uint64_t s, unsigned d,
			unsigned *pd, unsigned *dd)
{
	unsigned n = g->raid_disks;

	switch (g->layout) {
	case R5_LEFT_ASYM:
		*pd = n - 1 - (unsigned)(s % n);
		*dd = d >= *pd ? d + 1 : d;
		break;
	case R5_RIGHT_ASYM:
		*pd = (unsigned)(s % n);
		*dd = d >= *pd ? d + 1 : d;
		break;
	case R5_LEFT_SYM:
		*pd = n - 1 - (unsigned)(s % n);
		*dd = (*pd + 1 + d) % n;
		break;
	case R5_RIGHT_SYM:
		*pd = (unsigned)(s % n);
		*dd = (*pd + 1 + d) % n;
		break;
	case R5_PARITY_0:
		*pd = 0;
		*dd = d + 1;
		break;
	default: /* R5_PARITY_N */
		*pd = n - 1;
		*dd = d;
		break;
	}
}

static uint64_t raid5_map(const void *p, const struct raid_geom *g, uint64_t off,
			  uint64_t len, struct raid_loc *loc, unsigned *ncopies)
{
	uint64_t c = off / g->chunk, in = off % g->chunk;
	uint64_t s = c / (g->raid_disks - 1);
	unsigned pd, dd;

	(void)p;
	raid5_place(g, s, (unsigned)(c % (g->raid_disks - 1)), &pd, &dd);
	loc[0].role = dd;
	loc[0].off = s * g->chunk + in;
	*ncopies = 1;
	return g->chunk - in < len ? g->chunk - in : len;
}

static unsigned raid5_peers(const void *p, const struct raid_geom *g, uint64_t off,
			    struct raid_loc *loc)
{
	uint64_t c = off / g->chunk, in = off % g->chunk;
	uint64_t s = c / (g->raid_disks - 1);
	unsigned pd, dd, k = 0;

	(void)p;
	raid5_place(g, s, (unsigned)(c % (g->raid_disks - 1)), &pd, &dd);
	for (unsigned r = 0; r < g->raid_disks; r++) {
		if (r == dd)
			continue;
		loc[k].role = r;
		loc[k++].off = s * g->chunk + in;
	}
	return k;
}

static void raid5_free(void *p)
{
	free(p);
}

const struct raid_level raid5_level = {
	.kind = "raid5",
	.redundant = true,
	.parity = 1,
	.setup = raid5_setup,
	.map = raid5_map,
	.peers = raid5_peers,
	.free = raid5_free,
};
