/* test_raid_scrub.c — a scrub (raid_check) beside client writes finds what
 * is wrong and nothing else, and its repair undoes no client write.
 *
 * For RAID1, RAID10 (near and far), RAID5 and RAID6 over RAM members, one
 * of them with its writes slowed (so that a client write stays half done,
 * one copy new and the other old, for a millisecond): one 4 KiB block of
 * one member is overwritten behind the array's back, in the last row,
 * which the writers never touch; four writer threads rewrite random
 * ranges of the first half of the array while
 *   - a check runs: it must report exactly the planted block (a mirror)
 *     or its one stripe (parity), however the writes fell.  Without the
 *     barrier the mirror check also reports the writes it caught half
 *     done;
 *   - a repair runs: afterwards a check finds every copy in agreement
 *     and the array reads back everything the writers wrote (a repair
 *     that copied a stale copy over a fresh one would lose a write;
 *     without the barrier, RAID1's does).
 * A check asked for while a recovery runs is refused (-EBUSY). */
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
#include <unistd.h>

#define MAXD 6

/* raid_check on the writers' array while they write. */
static int check_beside_writers(struct writers *w, unsigned long long seed, bool repair,
				struct raid_check_report *rep)
{
	writers_start(w, seed);
	int r = raid_check(w->arr, repair, rep, NULL);
	writers_stop(w);
	return r;
}

static void run(const struct race_cfg *c)
{
	const uint64_t size = 8u << 20;
	struct raid_geom g = {.level = c->level,
	                      .layout = c->layout,
	                      .chunk = c->chunk,
	                      .raid_disks = c->disks,
	                      .dev_size = size};
	struct vol *m[MAXD] = {0}, *s[MAXD] = {0}, *arr = NULL;
	struct writers w = {0};
	struct raid_check_report rep;
	unsigned long long seed =
	    check_seed(0x5c0b + (unsigned long long)c->level * 31 + c->layout);

	for (unsigned i = 0; i < c->disks; i++) {
		m[i] = mem_vol(size);
		CHECK(slice_open(m[i], 0, size, false, m[i]->name, &s[i]) == 0);
	}
	/* The last member's writes are slow: a write is half done for 1 ms. */
	CHECK(fault_member_wrap(s[c->disks - 1], "latency=1ms,mode=write", &s[c->disks - 1]) == 0);
	CHECK(raid_open(&g, s, NULL, "t", &arr) == 0);
	if (!arr)
		return;
	writers_fill(&w, arr, &seed);
	w.span = arr->size / 2; /* the writers keep to the first half */
	char *back = malloc(arr->size), junk[4096];
	CHECK(back);

	/* The planted fault: member 0's last 4 KiB, in the last row. */
	memset(junk, 0x5a, sizeof(junk));
	CHECK(vol_write(m[0], junk, sizeof(junk), size - sizeof(junk), 0) == 0);
	uint64_t want = c->chunk && (c->level == 5 || c->level == 6)
	                    ? (uint64_t)c->chunk * (c->disks - (c->level == 6 ? 2 : 1))
	                    : sizeof(junk);

	CHECK_EQ(check_beside_writers(&w, seed, false, &rep), 0);
	if (rep.mismatched != want || rep.ranges != 1) {
		fprintf(stderr,
		        "level %d layout %#x: the check beside %lu writes found %llu bytes in %llu "
		        "ranges differ, %llu planted\n",
		        c->level, c->layout, (unsigned long)atomic_load(&w.writes),
		        (unsigned long long)rep.mismatched, (unsigned long long)rep.ranges,
		        (unsigned long long)want);
		check_failures++;
	}
	CHECK_EQ(rep.checked, arr->size);

	CHECK_EQ(check_beside_writers(&w, seed + 1, true, &rep), 0);
	CHECK(rep.mismatched >= want);
	CHECK_EQ(raid_check(arr, false, &rep, NULL), 0);
	CHECK_EQ(rep.mismatched, 0);
	CHECK(vol_read(arr, back, arr->size, 0) == 0);
	/* Where the writers wrote, the array holds what they wrote.  (Where
	 * the fault was planted it holds what the repair chose: the first
	 * copy, or the data the parity was rebuilt from.) */
	if (memcmp(back, w.ref, arr->size / 2) != 0) {
		fprintf(stderr, "level %d layout %#x: the array lost a write beside the repair\n",
		        c->level, c->layout);
		check_failures++;
	}
	vol_close(arr);
	for (unsigned i = 0; i < c->disks; i++)
		vol_close(m[i]);
	free(w.ref);
	free(back);
}

/* A check while a role is recovered online: refused, nothing changed. */
static void refused_during_recovery(void)
{
	const uint64_t size = 4u << 20;
	struct raid_geom g = {.level = 1, .raid_disks = 2, .dev_size = size};
	struct vol *m0 = mem_vol(size), *m1 = mem_vol(size), *s[2] = {0}, *arr = NULL;
	struct raid_check_report rep;

	CHECK(slice_open(m0, 0, size, false, "m0", &s[0]) == 0);
	CHECK(raid_open(&g, s, NULL, "t", &arr) == 0);
	if (!arr)
		return;
	CHECK(slice_open(m1, 0, size, false, "m1", &s[1]) == 0);
	CHECK_EQ(raid_recover_begin(arr, 1, s[1], 0), 0);
	CHECK_EQ(raid_check(arr, false, &rep, NULL), -EBUSY);
	raid_recover_abort(arr, 1);
	vol_close(arr);
	vol_close(m0);
	vol_close(m1);
}

int main(void)
{
	log_verbosity = LOG_ERROR;
	for (unsigned i = 0; i < RACE_CFGS; i++)
		run(&race_cfgs[i]);
	refused_during_recovery();
	return check_done();
}
