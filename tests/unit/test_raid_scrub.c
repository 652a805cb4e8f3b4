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

#include "core/log.h"
#include "disc/raid.h"
#include "disc/raid_rebuild.h"
#include "disc/slice.h"
#include "member/member.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAXD 6
#define WRITERS 4
#define BLOCK (64u << 10)

struct cfg {
	int level;
	unsigned layout, disks;
	uint32_t chunk;
};

struct writers {
	struct vol *arr;
	char *ref; /* what the array should hold */
	atomic_bool stop;
	atomic_ulong writes;
	unsigned long long seed[WRITERS];
	int err[WRITERS];
};

struct writer {
	struct writers *w;
	unsigned id;
};

/* Rewrite random parts of this writer's blocks (block % WRITERS == id) in
 * the first half of the array. */
static void *writer_main(void *arg)
{
	struct writer *me = arg;
	struct writers *w = me->w;
	uint64_t blocks = w->arr->size / 2 / BLOCK;
	char *buf = malloc(BLOCK);

	while (buf && !atomic_load(&w->stop)) {
		uint64_t b = check_rand(&w->seed[me->id]) % (blocks / WRITERS) * WRITERS + me->id;
		uint64_t in = check_rand(&w->seed[me->id]) % (BLOCK / 4096) * 4096;
		uint64_t len = 4096 * (1 + check_rand(&w->seed[me->id]) % ((BLOCK - in) / 4096));
		for (uint64_t i = 0; i < len; i++)
			buf[i] = (char)check_rand(&w->seed[me->id]);
		int r = vol_write(w->arr, buf, len, b * BLOCK + in, 0);
		if (r < 0) {
			w->err[me->id] = r;
			break;
		}
		memcpy(w->ref + b * BLOCK + in, buf, len);
		atomic_fetch_add(&w->writes, 1);
	}
	free(buf);
	return NULL;
}

/* raid_check on arr while the writers run; *rep gets its report. */
static int check_beside_writers(struct writers *w, bool repair, struct raid_check_report *rep)
{
	struct writer wr[WRITERS];
	pthread_t th[WRITERS];

	atomic_store(&w->stop, false);
	for (unsigned i = 0; i < WRITERS; i++) {
		wr[i] = (struct writer){w, i};
		CHECK(pthread_create(&th[i], NULL, writer_main, &wr[i]) == 0);
	}
	/* Let the writers get going first. */
	while (atomic_load(&w->writes) < 8)
		usleep(100);
	int r = raid_check(w->arr, repair, rep, NULL);
	atomic_store(&w->stop, true);
	for (unsigned i = 0; i < WRITERS; i++) {
		pthread_join(th[i], NULL);
		CHECK_EQ(w->err[i], 0);
	}
	return r;
}

static void run(const struct cfg *c)
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
	unsigned long long seed = 0x5c0b + (unsigned long long)c->level * 31 + c->layout;

	for (unsigned i = 0; i < c->disks; i++) {
		m[i] = mem_vol(size);
		CHECK(slice_open(m[i], 0, size, false, m[i]->name, &s[i]) == 0);
	}
	/* The last member's writes are slow: a write is half done for 1 ms. */
	CHECK(fault_member_wrap(s[c->disks - 1], "latency=1ms,mode=write", &s[c->disks - 1]) == 0);
	CHECK(raid_open(&g, s, NULL, "t", &arr) == 0);
	if (!arr)
		return;
	w.arr = arr;
	w.ref = malloc(arr->size);
	char *back = malloc(arr->size), junk[4096];
	CHECK(w.ref && back);
	for (uint64_t i = 0; i < arr->size; i++)
		w.ref[i] = (char)check_rand(&seed);
	CHECK(vol_write(arr, w.ref, arr->size, 0, 0) == 0);
	for (unsigned i = 0; i < WRITERS; i++)
		w.seed[i] = seed + i * 1000003u;

	/* The planted fault: member 0's last 4 KiB, in the last row. */
	memset(junk, 0x5a, sizeof(junk));
	CHECK(vol_write(m[0], junk, sizeof(junk), size - sizeof(junk), 0) == 0);
	uint64_t want = c->chunk && (c->level == 5 || c->level == 6)
	                    ? (uint64_t)c->chunk * (c->disks - (c->level == 6 ? 2 : 1))
	                    : sizeof(junk);

	CHECK_EQ(check_beside_writers(&w, false, &rep), 0);
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

	CHECK_EQ(check_beside_writers(&w, true, &rep), 0);
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
	static const struct cfg cfgs[] = {
	    {1, 0, 2, 0},
	    {10, 0x102, 4, 64 << 10}, /* near 2 */
	    {10, 0x201, 4, 64 << 10}, /* far 2 */
	    {5, 2, 3, 64 << 10},
	    {6, 2, 4, 64 << 10},
	};

	log_verbosity = LOG_ERROR;
	for (unsigned i = 0; i < sizeof(cfgs) / sizeof(cfgs[0]); i++)
		run(&cfgs[i]);
	refused_during_recovery();
	return check_done();
}
