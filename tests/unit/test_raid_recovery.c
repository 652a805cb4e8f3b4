/* test_raid_recovery.c — online recovery: raid_rebuild() onto a role made
 * recovering (raid_recover_begin) while writers hammer the array never
 * leaves the rebuilt member behind a client write.
 *
 * For RAID1, RAID10 (near and far), RAID5 and RAID6: the array runs with
 * one role missing; a blank member (its writes slowed, so that the
 * rebuild's pieces stay in flight long) joins as recovering from a point
 * inside the array (a resumed recovery); four writer threads rewrite
 * random ranges (each its own 64 KiB blocks, so the expected content is
 * known) during the whole rebuild.  Then raid_recover_finish() succeeds,
 * the array reads back what was written, and a scrub (raid_check) finds
 * every copy and every parity in agreement: without the barrier or the
 * writes to the recovering member, stale pieces of the member show up
 * there.  A target that fails its writes ends with raid_recover_error()
 * set and finish refused, the array still whole for reads.  A resumed
 * recovery onto a member that already holds the start is covered by
 * starting from a non-zero point.  A re-add (the same member back,
 * raid_resync over the ranges written while it was away) keeps it
 * current with the writes beside it, on every layout. */
#include "check.h"
#include "mem_vol.h"
#include "raid_race.h"

#include "core/log.h"
#include "disc/raid/raid.h"
#include "disc/raid/raid_rebuild.h"
#include "disc/slice.h"
#include "member/member.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define MAXD 6

static struct vol *open_degraded(const struct race_cfg *c, struct vol **m, uint64_t size, unsigned gone)
{
	struct raid_geom g = {.level = c->level,
	                      .layout = c->layout,
	                      .chunk = c->chunk,
	                      .raid_disks = c->disks,
	                      .dev_size = size};
	struct vol *s[MAXD] = {0}, *a = NULL;

	for (unsigned i = 0; i < c->disks; i++)
		if (i != gone)
			CHECK(slice_open(m[i], 0, size, false, m[i]->name, &s[i]) == 0);
	CHECK(raid_open(&g, s, NULL, "t", &a) == 0);
	return a;
}

static void run(const struct race_cfg *c, unsigned gone, bool target_fails)
{
	const uint64_t size = 12u << 20; /* three rebuild pieces */
	struct vol *m[MAXD] = {0}, *t[MAXD] = {0}, *tslice = NULL, *arr;
	struct writers w = {0};
	unsigned long long seed = check_seed(0x5eed + (unsigned long long)c->level * 77 + gone);
	uint64_t from;

	for (unsigned i = 0; i < c->disks; i++)
		m[i] = mem_vol(size);
	arr = open_degraded(c, m, size, gone);
	if (!arr)
		return;
	writers_fill(&w, arr, &seed);
	char *back = malloc(arr->size);
	CHECK(back);

	/* The new member: blank, its writes slowed; it joins as holding the
	 * first piece already (written here as a resumed recovery would
	 * find it). */
	struct vol *blank = mem_vol(size);
	CHECK(slice_open(blank, 0, size, false, "blank", &tslice) == 0);
	CHECK(fault_member_wrap(tslice,
	                        target_fails ? "latency=1ms,eio=6291456+4096,mode=write"
	                                     : "latency=1ms,mode=write",
	                        &tslice) == 0);
	from = raid_rebuild_piece(arr);
	{
		struct vol *s0 = NULL;
		struct vol *tt[MAXD] = {0};
		struct raid_geom g = {.level = c->level,
		                      .layout = c->layout,
		                      .chunk = c->chunk,
		                      .raid_disks = c->disks,
		                      .dev_size = size};
		struct vol *s[MAXD] = {0}, *a0 = NULL;
		/* the first piece, rebuilt offline onto blank directly */
		for (unsigned i = 0; i < c->disks; i++)
			if (i != gone)
				CHECK(slice_open(m[i], 0, size, false, "m", &s[i]) == 0);
		CHECK(raid_open(&g, s, NULL, "t0", &a0) == 0);
		CHECK(slice_open(blank, 0, size, false, "b0", &s0) == 0);
		tt[gone] = s0;
		CHECK_EQ(raid_rebuild(a0, tt, 0, from, NULL, NULL), 0);
		vol_close(s0);
		vol_close(a0);
	}
	CHECK_EQ(raid_recover_begin(arr, gone, tslice, from), 0);
	t[gone] = tslice;

	writers_start(&w, seed);
	int r = raid_rebuild(arr, t, from, size, NULL, NULL);
	writers_stop(&w);
	CHECK(atomic_load(&w.writes) > 0);
	if (target_fails) {
		CHECK(r < 0 || raid_recover_error(arr, gone) < 0);
		CHECK(raid_recover_error(arr, gone) < 0);
		CHECK_EQ(raid_recover_finish(arr, gone), -EIO);
	} else {
		CHECK_EQ(r, 0);
		CHECK_EQ(raid_recover_error(arr, gone), 0);
		CHECK_EQ(raid_recover_finish(arr, gone), 0);
	}
	CHECK(vol_read(arr, back, arr->size, 0) == 0);
	if (memcmp(back, w.ref, arr->size) != 0) {
		fprintf(stderr,
		        "level %d layout %u: the array does not read back what was written\n",
		        c->level, c->layout);
		check_failures++;
	}
	if (!target_fails) {
		struct raid_check_report rep = {0};
		CHECK(raid_check(arr, false, &rep, NULL) == 0);
		if (rep.mismatched) {
			fprintf(stderr,
			        "level %d layout %u disks %u: %llu bytes differ after the online "
			        "rebuild of role %u (%lu writes beside it)\n",
			        c->level, c->layout, c->disks, (unsigned long long)rep.mismatched,
			        gone, (unsigned long)atomic_load(&w.writes));
			check_failures++;
		}
	}
	vol_close(arr);
	vol_close(blank);
	for (unsigned i = 0; i < c->disks; i++)
		vol_close(m[i]);
	free(w.ref);
	free(back);
}

/* raid_role_extents' callback: the member ranges, merged as they come. */
struct mranges {
	uint64_t r[64][2];
	unsigned n;
};

static int mranges_add(void *ctx, uint64_t off, uint64_t len)
{
	struct mranges *m = ctx;

	if (m->n && m->r[m->n - 1][1] >= off && m->r[m->n - 1][0] <= off) {
		if (off + len > m->r[m->n - 1][1])
			m->r[m->n - 1][1] = off + len;
		return 0;
	}
	if (m->n == 64)
		return -ENOSPC;
	m->r[m->n][0] = off;
	m->r[m->n][1] = off + len;
	m->n++;
	return 0;
}

/* A re-add (md's bitmap-based recovery): role gone fails, the array is
 * written in a few ranges meanwhile, and the same member comes back as
 * recovering with every write reaching it (raid_recover_begin from
 * UINT64_MAX); raid_resync() then rewrites only the member ranges those
 * writes touched, while four writers rewrite the whole array.  The writes
 * outside the ranges being resynced must reach the member too: on RAID5/6
 * they do only while the recovery point stays where begin put it. */
static void run_readd(const struct race_cfg *c, unsigned gone)
{
	const uint64_t size = 12u << 20;
	struct raid_geom g = {.level = c->level,
	                      .layout = c->layout,
	                      .chunk = c->chunk,
	                      .raid_disks = c->disks,
	                      .dev_size = size};
	struct vol *m[MAXD] = {0}, *s[MAXD] = {0}, *t[MAXD] = {0}, *arr = NULL;
	struct writers w = {0};
	unsigned long long seed = check_seed(0xadd + (unsigned long long)c->level * 31 + c->layout);
	const uint64_t away[][2] = {{1u << 20, 64u << 10}, {(5u << 20) + 4096, 200u << 10}};
	struct mranges mr = {0};

	for (unsigned i = 0; i < c->disks; i++) {
		m[i] = mem_vol(size);
		CHECK(slice_open(m[i], 0, size, false, m[i]->name, &s[i]) == 0);
	}
	/* The member that goes away is slow to write: resync pieces stay in
	 * flight while the writers run. */
	CHECK(fault_member_wrap(s[gone], "latency=1ms", &s[gone]) == 0);
	struct vol *target = s[gone];
	CHECK(raid_open(&g, s, NULL, "t", &arr) == 0);
	if (!arr)
		return;
	writers_fill(&w, arr, &seed);
	char *back = malloc(arr->size);
	CHECK(back);
	CHECK_EQ(raid_fail_member(arr, gone), 0);
	for (unsigned k = 0; k < 2; k++) {
		uint64_t off = away[k][0], len = away[k][1];
		for (uint64_t i = 0; i < len; i++)
			w.ref[off + i] = (char)check_rand(&seed);
		CHECK(vol_write(arr, w.ref + off, len, off, 0) == 0);
		if (c->level == 5 || c->level == 6) {
			/* the stripe rows touched (md's bitmap index for them) */
			uint64_t row = c->chunk * (c->disks - (c->level == 6 ? 2 : 1));
			mranges_add(&mr, off / row * c->chunk,
			            ((off + len + row - 1) / row - off / row) * c->chunk);
		} else {
			CHECK_EQ(raid_role_extents(arr, gone, off, len, mranges_add, &mr), 0);
		}
	}
	CHECK(mr.n > 0);
	CHECK_EQ(raid_recover_begin(arr, gone, target, UINT64_MAX), 0);
	t[gone] = target;
	writers_start(&w, seed);
	for (unsigned k = 0; k < mr.n; k++) {
		uint64_t lo = mr.r[k][0] - mr.r[k][0] % 4096,
		         hi = (mr.r[k][1] + 4095) / 4096 * 4096;
		CHECK_EQ(raid_resync(arr, t, lo, hi, NULL, NULL), 0);
	}
	writers_stop(&w);
	CHECK(atomic_load(&w.writes) > 0);
	CHECK_EQ(raid_recover_error(arr, gone), 0);
	CHECK_EQ(raid_recover_finish(arr, gone), 0);
	CHECK(vol_read(arr, back, arr->size, 0) == 0);
	CHECK(memcmp(back, w.ref, arr->size) == 0);
	struct raid_check_report rep = {0};
	CHECK(raid_check(arr, false, &rep, NULL) == 0);
	if (rep.mismatched) {
		fprintf(stderr,
		        "level %d layout %u disks %u: %llu bytes differ after the re-add of role "
		        "%u (%lu writes beside it)\n",
		        c->level, c->layout, c->disks, (unsigned long long)rep.mismatched, gone,
		        (unsigned long)atomic_load(&w.writes));
		check_failures++;
	}
	vol_close(arr);
	for (unsigned i = 0; i < c->disks; i++)
		vol_close(m[i]);
	free(w.ref);
	free(back);
}

int main(void)
{
	log_verbosity = LOG_ERROR;
	for (unsigned i = 0; i < RACE_CFGS; i++)
		run(&race_cfgs[i], race_cfgs[i].disks - 1, false);
	run(&race_cfgs[0], 0, true);
	run(&race_cfgs[3], 1, true);
	for (unsigned i = 0; i < RACE_CFGS; i++)
		run_readd(&race_cfgs[i], 1);
	return check_done();
}
