/* test_raid_rebuild.c — raid_rebuild() puts back, byte for byte, what a
 * member held.
 *
 * For RAID1, every RAID10 layout (near, far, offset, three copies, odd
 * member counts), every RAID5 layout and every RAID6 layout: fill the
 * array with random data through the engine, reopen it with one role
 * (RAID6: also every pair of roles) missing, rebuild onto blank members and
 * compare them with the originals; on members larger than a piece, also
 * stopped by the progress callback after the first piece and resumed.
 * A member that fails to read during the rebuild is failed over.  A
 * target that is still in the array, and a level without redundancy, are
 * refused. */
#include "check.h"
#include "mem_vol.h"

#include "core/log.h"
#include "disc/raid/raid.h"
#include "disc/raid/raid_rebuild.h"
#include "disc/slice.h"
#include "member/member.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MAXD 8

struct cfg {
	int level;
	unsigned layout, disks;
	uint32_t chunk;
	bool big; /* members of more than a piece: resumed too */
};

static unsigned long long seed = 0x5eed; /* main() moves it: check_seed() */

static int failed_role = -1;

static void on_failed(void *ctx, unsigned role, int err)
{
	(void)ctx, (void)err;
	failed_role = (int)role;
}

/* Open the array over slices of m[] (not owned), roles in gone[] left out;
 * role `faulty` (if >= 0) fails reads of [at, at + 4096). */
static struct vol *open_array_fault(const struct cfg *c, struct vol **m, uint64_t size,
                                    const bool *gone, int faulty, uint64_t at)
{
	struct raid_geom g = {.level = c->level,
	                      .layout = c->layout,
	                      .chunk = c->chunk,
	                      .raid_disks = c->disks,
	                      .dev_size = size};
	struct raid_events ev = {on_failed, NULL};
	struct vol *s[MAXD] = {0}, *a = NULL;
	char opts[64];

	for (unsigned i = 0; i < c->disks; i++) {
		if (gone && gone[i])
			continue;
		CHECK(slice_open(m[i], 0, size, false, m[i]->name, &s[i]) == 0);
		snprintf(opts, sizeof(opts), "eio=%llu+4096", (unsigned long long)at);
		if ((int)i == faulty)
			CHECK(fault_member_wrap(s[i], opts, &s[i]) == 0);
	}
	if (raid_open(&g, s, &ev, "t", &a) < 0)
		return NULL;
	return a;
}

static struct vol *open_array(const struct cfg *c, struct vol **m, uint64_t size, const bool *gone)
{
	return open_array_fault(c, m, size, gone, -1, 0);
}

struct stop_after {
	uint64_t first;
	int calls;
};

static int stop_first(void *ctx, uint64_t done)
{
	struct stop_after *s = ctx;
	if (s->calls++ == 0)
		s->first = done;
	return 1;
}

/* Rebuild the roles in gone[] (in one go or stopped and resumed) and
 * compare with the originals. */
static void rebuild_and_compare(const struct cfg *c, struct vol **m, uint64_t size,
                                const bool *gone, bool resume, char *a1, char *a2)
{
	struct vol *t[MAXD] = {0};
	struct vol *arr = open_array(c, m, size, gone);
	int r;

	if (!arr)
		return; /* too many gone for this layout: not rebuildable */
	for (unsigned i = 0; i < c->disks; i++)
		if (gone[i])
			t[i] = mem_vol(size);
	if (resume) {
		struct stop_after s = {0};
		r = raid_rebuild(arr, t, 0, size, stop_first, &s);
		CHECK_EQ(r, -EINTR);
		CHECK_EQ(s.first, raid_rebuild_piece(arr));
		/* resume from an offset inside the done part: rounded down */
		r = raid_rebuild(arr, t, s.first > 4096 ? s.first - 4096 : 0, size, NULL, NULL);
	} else {
		r = raid_rebuild(arr, t, 0, size, NULL, NULL);
	}
	CHECK_EQ(r, 0);
	for (unsigned i = 0; i < c->disks; i++) {
		if (!t[i])
			continue;
		CHECK(vol_read(m[i], a1, size, 0) == 0);
		CHECK(vol_read(t[i], a2, size, 0) == 0);
		if (memcmp(a1, a2, size) != 0) {
			fprintf(stderr, "level %d layout %u disks %u chunk %u: role %u differs%s\n",
			        c->level, c->layout, c->disks, c->chunk, i,
			        resume ? " (resumed)" : "");
			check_failures++;
		}
		vol_close(t[i]);
	}
	vol_close(arr);
}

static void run(const struct cfg *c)
{
	/* Part of a piece, or a whole piece (4 MiB) and a part of one. */
	uint64_t chunk = c->chunk ? c->chunk : 4096;
	uint64_t size = (c->big ? 4ull << 20 : 1ull << 19) + 2 * (chunk > 65536 ? chunk : 65536);
	struct vol *m[MAXD];
	struct vol *arr;
	char *data, *a1 = malloc(size), *a2 = malloc(size);

	for (unsigned i = 0; i < c->disks; i++)
		m[i] = mem_vol(size);
	arr = open_array(c, m, size, NULL);
	CHECK(arr != NULL);
	if (!arr)
		return;
	data = malloc(arr->size);
	for (uint64_t j = 0; j < arr->size; j += 8) {
		unsigned long long v = check_rand(&seed);
		memcpy(data + j, &v, 8);
	}
	CHECK(vol_write(arr, data, arr->size, 0, 0) == 0);
	CHECK(vol_flush(arr) == 0);
	vol_close(arr);

	/* Every role alone, and on RAID6 every pair. */
	for (unsigned x = 0; x < c->disks; x++) {
		for (unsigned y = x; y < c->disks; y++) {
			bool gone[MAXD] = {0};
			gone[x] = gone[y] = true;
			rebuild_and_compare(c, m, size, gone, false, a1, a2);
			if (c->big && x == 0 && (y == 0 || y == 1))
				rebuild_and_compare(c, m, size, gone, true, a1, a2);
			if (c->level != 6)
				break;
		}
	}
	for (unsigned i = 0; i < c->disks; i++)
		vol_close(m[i]);
	free(data);
	free(a1);
	free(a2);
}

int main(void)
{
	log_verbosity = LOG_ERROR; /* "running degraded", many times over */
	seed = check_seed(seed);
	static const struct cfg cfgs[] = {
	    {1, 0, 2, 0, true},          {1, 0, 3, 0}, {10, 0x102, 4, 65536}, /* n2 */
	    {10, 0x102, 3, 4096},                                             /* n2 over 3 */
	    {10, 0x201, 2, 65536},                                            /* f2 */
	    {10, 0x201, 4, 16384, true},                                      /* f2 over 4 */
	    {10, 0x201, 5, 4096},                                             /* f2 over 5 */
	    {10, 0x10201, 3, 65536},                                          /* o2 */
	    {10, 0x103, 3, 32768},                                            /* n3 */
	    {10, 0x20201, 4, 16384},                                          /* f2, far sets */
	};
	for (size_t i = 0; i < sizeof(cfgs) / sizeof(cfgs[0]); i++)
		run(&cfgs[i]);
	for (unsigned layout = 0; layout <= 5; layout++) {
		run(&(struct cfg){5, layout, 3, 65536});
		run(&(struct cfg){6, layout, 4, 65536});
	}
	run(&(struct cfg){5, 2, 5, 16384, true});
	run(&(struct cfg){6, 2, 5, 16384, true});
	for (unsigned layout = 16; layout <= 20; layout++)
		run(&(struct cfg){6, layout, 5, 32768});

	/* A member that fails to read mid-rebuild is failed over (RAID10 n3
	 * reads another copy; RAID6 rebuilds from the rest) and the result
	 * is still right. */
	static const struct cfg fc[] = {{10, 0x103, 3, 65536, true}, {6, 2, 5, 65536, true}};
	for (size_t i = 0; i < 2; i++) {
		uint64_t size = (4ull << 20) + 2 * 65536;
		struct vol *fm[MAXD], *ft[MAXD] = {0}, *arr;
		bool gone[MAXD] = {true};
		char *a1 = malloc(size), *a2 = malloc(size);
		for (unsigned j = 0; j < fc[i].disks; j++) {
			fm[j] = mem_vol(size);
			for (uint64_t o = 0; o < size; o += 8) {
				unsigned long long v = check_rand(&seed);
				memcpy(a1 + o, &v, 8);
			}
			CHECK(vol_write(fm[j], a1, size, 0, 0) == 0);
		}
		/* consistent copies / parity: write the array's contents back */
		arr = open_array(&fc[i], fm, size, NULL);
		char *all = malloc(arr->size);
		CHECK(vol_read(arr, all, arr->size, 0) == 0);
		CHECK(vol_write(arr, all, arr->size, 0, 0) == 0);
		vol_close(arr);
		free(all);
		failed_role = -1;
		/* in stripe row 65, where role 1 holds data on RAID6 */
		arr = open_array_fault(&fc[i], fm, size, gone, 1, 65 * 65536 + 4096);
		ft[0] = mem_vol(size);
		CHECK_EQ(raid_rebuild(arr, ft, 0, size, NULL, NULL), 0);
		CHECK_EQ(failed_role, 1);
		CHECK(vol_read(fm[0], a1, size, 0) == 0);
		CHECK(vol_read(ft[0], a2, size, 0) == 0);
		CHECK(memcmp(a1, a2, size) == 0);
		vol_close(arr);
		vol_close(ft[0]);
		for (unsigned j = 0; j < fc[i].disks; j++)
			vol_close(fm[j]);
		free(a1);
		free(a2);
	}

	/* Refusals: a target still in the array; RAID0. */
	struct cfg c0 = {1, 0, 2, 0};
	struct vol *m[2] = {mem_vol(1 << 20), mem_vol(1 << 20)}, *t[2] = {mem_vol(1 << 20), NULL};
	struct vol *arr = open_array(&c0, m, 1 << 20, NULL);
	CHECK_EQ(raid_rebuild(arr, t, 0, 1 << 20, NULL, NULL), -EINVAL);
	vol_close(arr);
	c0.level = 0;
	c0.chunk = 65536;
	arr = open_array(&c0, m, 1 << 20, NULL);
	t[1] = t[0];
	t[0] = NULL;
	CHECK_EQ(raid_rebuild(arr, t, 0, 1 << 20, NULL, NULL), -EINVAL);
	vol_close(arr);
	vol_close(t[1]);
	vol_close(m[0]);
	vol_close(m[1]);
	return check_done();
}
