/* test_raid_layout.c — placements checked against md's formulas for known
 * sectors, so that compatibility with Linux md is asserted, not only
 * self-consistency (the linux-peer test checks the real kernel).
 *
 * Expected values are worked out by hand from md's documentation of each
 * layout (md(4): "near", "far" and "offset" copies; raid0 zones). */
#include "check.h"

#include "disc/raid/raid_types.h"

#include <stdlib.h>

#define K 1024ull
#define C (64 * K) /* the chunk of every test here */

struct place {
	uint64_t aoff;
	unsigned ncopies;
	struct raid_loc loc[4];
};

static void expect(const struct raid_level *lvl, const struct raid_geom *g,
		   const uint64_t *sizes, uint64_t want_size,
		   const struct place *p, unsigned np)
{
	void *priv = NULL;
	uint64_t size = 0;
	unsigned copies = 0;

	CHECK_EQ(lvl->setup(g, sizes, &priv, &size, &copies), 0);
	CHECK_EQ(size, want_size);
	CHECK_EQ(raid_array_size(g, sizes), want_size);
	for (unsigned i = 0; i < np; i++) {
		struct raid_loc loc[RAID_MAX_COPIES];
		unsigned nc = 0;
		lvl->map(priv, g, p[i].aoff, 512, loc, &nc);
		CHECK_EQ(nc, p[i].ncopies);
		for (unsigned c = 0; c < nc && c < p[i].ncopies; c++) {
			if (loc[c].role != p[i].loc[c].role || loc[c].off != p[i].loc[c].off) {
				fprintf(stderr, "%s layout 0x%x: array %llu copy %u: got disk %u @ %llu, want disk %u @ %llu\n",
					lvl->md.name, g->layout, (unsigned long long)p[i].aoff, c,
					loc[c].role, (unsigned long long)loc[c].off,
					p[i].loc[c].role, (unsigned long long)p[i].loc[c].off);
				CHECK(0);
			}
		}
	}
	lvl->free(priv);
}

int main(void)
{
	/* raid10 near=2 on 4 disks: chunk k on disks 2k%4 and 2k%4+1 at
	 * device chunk k/2. */
	{
		struct raid_geom g = { 10, 0x102, C, 4, 0 };
		uint64_t sz[4] = { 100 * C, 100 * C, 100 * C, 100 * C };
		struct place p[] = {
			{ 0, 2, { { 0, 0 }, { 1, 0 } } },
			{ C + 512, 2, { { 2, 512 }, { 3, 512 } } },
			{ 5 * C, 2, { { 2, 2 * C }, { 3, 2 * C } } },
		};
		expect(&raid10_level, &g, sz, 200 * C, p, 3);
	}
	/* raid10 near=2 on 3 disks: the second copy of chunk 1 wraps to disk
	 * 0 of the next stripe.  101 chunks per disk: 303/2 = 151 chunks. */
	{
		struct raid_geom g = { 10, 0x102, C, 3, 0 };
		uint64_t sz[3] = { 101 * C, 101 * C, 101 * C };
		struct place p[] = {
			{ 0, 2, { { 0, 0 }, { 1, 0 } } },
			{ C, 2, { { 2, 0 }, { 0, C } } },
			{ 2 * C, 2, { { 1, C }, { 2, C } } },
		};
		expect(&raid10_level, &g, sz, 151 * C, p, 3);
	}
	/* raid10 far=2 on 4 disks, 100 chunks each: chunk k on disk k%4 at
	 * k/4, and on disk (k+1)%4 in the far half (stride 50 chunks). */
	{
		struct raid_geom g = { 10, 0x201, C, 4, 0 };
		uint64_t sz[4] = { 100 * C + 4096, 100 * C, 100 * C, 100 * C + C };
		struct place p[] = {
			{ 0, 2, { { 0, 0 }, { 1, 50 * C } } },
			{ 3 * C, 2, { { 3, 0 }, { 0, 50 * C } } },
			{ 6 * C + 4096, 2, { { 2, C + 4096 }, { 3, 51 * C + 4096 } } },
		};
		expect(&raid10_level, &g, sz, 200 * C, p, 3);
	}
	/* raid10 offset=2 on 4 disks: stripe s is written at device chunk 2s,
	 * and again one chunk on, shifted by one disk. */
	{
		struct raid_geom g = { 10, 0x10201, C, 4, 0 };
		uint64_t sz[4] = { 100 * C, 100 * C, 100 * C, 100 * C };
		struct place p[] = {
			{ 0, 2, { { 0, 0 }, { 1, C } } },
			{ 5 * C, 2, { { 1, 2 * C }, { 2, 3 * C } } },
			{ 7 * C, 2, { { 3, 2 * C }, { 0, 3 * C } } },
		};
		expect(&raid10_level, &g, sz, 200 * C, p, 3);
	}
	/* raid10 far=2 with far sets of near*far = 2 disks (layout bit 18)
	 * on 4 disks: far copies rotate within {0,1} and {2,3}. */
	{
		struct raid_geom g = { 10, 0x40201, C, 4, 0 };
		uint64_t sz[4] = { 100 * C, 100 * C, 100 * C, 100 * C };
		struct place p[] = {
			{ C, 2, { { 1, 0 }, { 0, 50 * C } } },
			{ 3 * C, 2, { { 3, 0 }, { 2, 50 * C } } },
		};
		expect(&raid10_level, &g, sz, 200 * C, p, 2);
	}
	/* raid0 over 1, 3 and 3 chunks: zone 0 stripes chunks 0..2 over all
	 * three; zone 1 holds chunks 3..6 on disks 1 and 2 from device chunk
	 * 1.  The original layout picks the disk by the array chunk (3 % 2 =
	 * 1, disk 2), the alternate one by the chunk within the zone (disk 1). */
	{
		struct raid_geom g = { 0, 1, C, 3, 0 };
		uint64_t sz[3] = { C + 4096, 3 * C, 3 * C + 512 };
		struct place p[] = {
			{ 0, 1, { { 0, 0 } } },
			{ 2 * C + 512, 1, { { 2, 512 } } },
			{ 3 * C, 1, { { 2, C } } },
			{ 4 * C, 1, { { 1, C } } },
			{ 6 * C + 1024, 1, { { 1, 2 * C + 1024 } } },
		};
		expect(&raid0_level, &g, sz, 7 * C, p, 5);
		g.layout = 2;
		struct place q[] = {
			{ 3 * C, 1, { { 1, C } } },
			{ 4 * C, 1, { { 2, C } } },
			{ 5 * C, 1, { { 1, 2 * C } } },
		};
		expect(&raid0_level, &g, sz, 7 * C, q, 3);
	}
	/* linear with a chunk: each member contributes whole chunks. */
	{
		struct raid_geom g = { RAID_LEVEL_LINEAR, 0, C, 2, 0 };
		uint64_t sz[2] = { 2 * C + 4096, 3 * C };
		struct place p[] = {
			{ C, 1, { { 0, C } } },
			{ 2 * C, 1, { { 1, 0 } } },
		};
		expect(&linear_level, &g, sz, 5 * C, p, 2);
	}
	/* raid1: the smallest member, every disk at the same offset. */
	{
		struct raid_geom g = { 1, 0, 0, 2, 0 };
		uint64_t sz[2] = { 10 * C, 9 * C };
		struct place p[] = { { 4096, 2, { { 0, 4096 }, { 1, 4096 } } } };
		expect(&raid1_level, &g, sz, 9 * C, p, 1);
	}
	return check_done();
}
