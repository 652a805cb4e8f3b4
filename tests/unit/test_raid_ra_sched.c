/* test_raid_ra_sched.c — the stretch schedule of mirror read-ahead
 * (disc/raid/raid_ra_sched.h), driven alone: which copy reads which piece of a
 * stream.  Pure arithmetic, no disks and no clocks. */
#include "check.h"

#include "disc/raid/raid_ra_sched.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#define PIECE_NS 26000000u /* 2 MiB at 80 MB/s */
#define NPIECES 4000

/* The copy of every piece of a stream from origin, asked in order with
 * the reader right behind (front = the piece asked). */
static void deal_all(unsigned copies, uint64_t max, unsigned cap, uint64_t origin,
		     const uint64_t *delay, unsigned *copy, unsigned n)
{
	struct raid_ra_sched s;

	CHECK_EQ(raid_ra_sched_init(&s, copies, max, cap), 0);
	raid_ra_sched_begin(&s, origin, PIECE_NS, delay);
	for (unsigned i = 0; i < n; i++)
		copy[i] = raid_ra_sched_copy(&s, origin + i, origin + i);
	raid_ra_sched_free(&s);
}

/* Stretches are runs of one copy; each is 1..max pieces, no copy reads
 * two in a row (it would not skip: the stretch would simply be longer),
 * every copy gets its turn, and they grow with the stream's age. */
static void test_stretches(unsigned copies, uint64_t max)
{
	static unsigned copy[NPIECES];
	unsigned len[NPIECES], who[NPIECES], n = 0;
	unsigned turns[8] = { 0 };

	deal_all(copies, max, 64, 7, NULL, copy, NPIECES);
	for (unsigned i = 0; i < NPIECES; i++) {
		CHECK(copy[i] < copies);
		if (i == 0 || copy[i] != copy[i - 1]) {
			who[n] = copy[i];
			len[n++] = 0;
		}
		len[n - 1]++;
	}
	for (unsigned t = 0; t + 1 < n; t++) { /* the last one is cut */
		CHECK(len[t] >= 1 && len[t] <= max);
		turns[who[t]]++;
	}
	for (unsigned c = 0; c < copies; c++)
		CHECK(turns[c] >= n / copies - 2);
	/* Short while the stream is young (the first stretch ends
	 * floor / copies after the start, the later ones floor apart, or
	 * a piece per copy), the longest allowed once old. */
	struct raid_ra_sched d;
	CHECK_EQ(raid_ra_sched_init(&d, copies, max, 2), 0);
	uint64_t floor_ns = (uint64_t)d.floor * d.skip_ns;
	raid_ra_sched_free(&d);
	if (floor_ns < copies * (uint64_t)PIECE_NS)
		floor_ns = copies * (uint64_t)PIECE_NS;
	CHECK(len[0] * PIECE_NS <= floor_ns / copies + PIECE_NS);
	CHECK(len[1] * PIECE_NS <= floor_ns + PIECE_NS);
	CHECK(len[0] < max);
	CHECK_EQ(len[n - 2], max);
	/* Growing: a stretch is never much shorter than one dealt a round
	 * earlier (staggering evens the ends out by a piece or so). */
	for (unsigned t = copies; t + 1 < n; t++)
		CHECK(len[t] + 2 >= len[t - copies]);
}

/* The stretch the stream's age asks for: about grow * sqrt(skip * age),
 * age being the stretch's start on its copy's clock. */
static void test_growth(void)
{
	struct raid_ra_sched s;

	CHECK_EQ(raid_ra_sched_init(&s, 2, 1000, 64), 0);
	raid_ra_sched_begin(&s, 0, PIECE_NS, NULL);
	for (uint64_t p = 0, t = 0; t < 40; t++, p = s.dealt) {
		uint64_t before[2] = { s.clock[0], s.clock[1] };
		CHECK_EQ(s.dealt, p);
		unsigned c = raid_ra_sched_copy(&s, p, p); /* deals one stretch */
		uint64_t len = s.dealt - p;
		/* It starts when its copy is free (and, but for its first,
		 * has skipped the other's stretch) and takes len pieces. */
		uint64_t age = s.clock[c] - len * PIECE_NS;
		CHECK(age == before[c] || age == before[c] + s.skip_ns);
		if (t < 4)
			continue;
		double want = s.grow * sqrt((double)s.skip_ns * (double)age) / PIECE_NS;
		/* Within the staggering's correction: between half and twice. */
		CHECK((double)len >= want / 2 - 1 && (double)len <= want * 2 + 1);
	}
	raid_ra_sched_free(&s);
}

/* A copy whose disk is already where the stream starts reads its first
 * stretch; one that must seek does not. */
static void test_placed_first(void)
{
	unsigned copy[4];
	uint64_t delay[2] = { 12700000, 0 };

	deal_all(2, 32, 64, 100, delay, copy, 4);
	CHECK_EQ(copy[0], 1);
	delay[0] = 0;
	delay[1] = 12700000;
	deal_all(2, 32, 64, 100, delay, copy, 4);
	CHECK_EQ(copy[0], 0);
}

/* The window's bounded ring (the window's pieces + 2 stretches) gives the
 * same answers as an unbounded one while the reader's front moves on by
 * uneven steps, the window is laid out to its end and its pieces are
 * asked again in any order. */
static void test_window(void)
{
	const unsigned copies = 3, K = 3 * 32 + 6;
	static unsigned ref[NPIECES];
	struct raid_ra_sched s;
	unsigned long long seed = 99;

	deal_all(copies, 32, NPIECES + 2, 0, NULL, ref, NPIECES);
	CHECK_EQ(raid_ra_sched_init(&s, copies, 32, K + 2), 0);
	raid_ra_sched_begin(&s, 0, PIECE_NS, NULL);
	for (uint64_t front = 0; front + K < NPIECES; front += check_rand(&seed) % 5) {
		/* The lanes lay the window's pieces out in order. */
		CHECK_EQ(raid_ra_sched_copy(&s, front + K - 1, front), ref[front + K - 1]);
		for (unsigned k = 0; k < 8; k++) {
			uint64_t p = front + check_rand(&seed) % K;
			CHECK_EQ(raid_ra_sched_copy(&s, p, front), ref[p]);
		}
		CHECK_EQ(raid_ra_sched_copy(&s, front, front), ref[front]);
	}
	raid_ra_sched_free(&s);
}

/* A new stream starts over: the same answers as a fresh schedule. */
static void test_restart(void)
{
	static unsigned ref[200];
	struct raid_ra_sched s;

	deal_all(2, 32, 80, 500, NULL, ref, 200);
	CHECK_EQ(raid_ra_sched_init(&s, 2, 32, 80), 0);
	raid_ra_sched_begin(&s, 3, PIECE_NS, NULL);
	for (uint64_t p = 3; p < 60; p++)
		raid_ra_sched_copy(&s, p, p);
	raid_ra_sched_begin(&s, 500, PIECE_NS, NULL);
	for (unsigned i = 0; i < 200; i++)
		CHECK_EQ(raid_ra_sched_copy(&s, 500 + i, 500 + i), ref[i]);
	raid_ra_sched_free(&s);
}

/* Near the array's end the pieces left are shared among the copies:
 * no copy is dealt more than its share of them. */
static void test_end(void)
{
	struct raid_ra_sched s;

	CHECK_EQ(raid_ra_sched_init(&s, 2, 32, 80), 0);
	s.limit = 300;
	raid_ra_sched_begin(&s, 0, PIECE_NS, NULL);
	for (uint64_t p = 0; p < 300; p = s.dealt) {
		raid_ra_sched_copy(&s, p, p);
		uint64_t left = 300 - p;
		CHECK(s.dealt - p <= (left + 1) / 2 || s.dealt - p == 1);
	}
	CHECK_EQ(s.dealt, 300);
	raid_ra_sched_free(&s);
}

/* One copy (RAID0, parity levels): everything is copy 0. */
static void test_one_copy(void)
{
	unsigned copy[50];

	deal_all(1, 1, 8, 0, NULL, copy, 50);
	for (unsigned i = 0; i < 50; i++)
		CHECK_EQ(copy[i], 0);
}

int main(void)
{
	test_stretches(2, 32);
	test_stretches(3, 32);
	test_stretches(2, 8);
	test_stretches(4, 16);
	test_growth();
	test_placed_first();
	test_window();
	test_restart();
	test_end();
	test_one_copy();
	return check_done();
}
