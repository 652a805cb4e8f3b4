/* test_md_throttle.c — what the speed limits of md's background syncs
 * decide (md/md_throttle.h), on a clock of the test's own: no test
 * here sleeps or reads the time, so each answer is exact.
 *
 * sync_run() plays md_assemble.c's sync thread: one call as the sync
 * begins and one after each piece, then "sleeping" (the fake clock jumps)
 * until the answer (the thread asks again after each nap; while the limit
 * in force stays, the answer does not change); clients enter a request
 * every client_ns. */
#include "check.h"

#include "md/md_throttle.h"

#define MiB (1ull << 20)
#define S 1000000000ull
#define MS 1000000ull
#define T0 (100 * S) /* the clock does not start at 0 */

/* The fake duration of a sync of size bytes in piece-byte steps costing
 * cost_ns each, with a client request every client_ns (0: none). */
static uint64_t sync_run(struct md_throttle *t, uint64_t size, uint64_t piece, uint64_t cost_ns,
                         uint64_t client_ns)
{
	uint64_t now = T0, next_client = T0, done = 0, due;
	unsigned ops = 0;

	due = md_throttle_due(t, now, done, ops, true);
	now = due > now ? due : now;
	while (done < size) {
		now += cost_ns;
		done += piece;
		while (client_ns && next_client <= now) {
			ops++;
			next_client += client_ns;
		}
		due = md_throttle_due(t, now, done, ops, false);
		now = due > now ? due : now;
	}
	return now - T0;
}

/* The time size bytes take at limit bytes/s. */
static uint64_t at(uint64_t size, uint64_t limit)
{
	return (uint64_t)((double)size * 1e9 / (double)limit);
}

/* No limits: a sync never waits, busy clients or not. */
static void test_unlimited(void)
{
	struct md_throttle t = { 0 };

	CHECK_EQ(sync_run(&t, 11 * MiB, 64 * 1024, 1 * MS, 0), 176 * MS);
	t = (struct md_throttle){ 0 };
	CHECK_EQ(sync_run(&t, 11 * MiB, 64 * 1024, 1 * MS, 10 * MS), 176 * MS);
}

/* At max, a sync faster than the limit takes size / max, inside one
 * window and across several; one slower than the limit is not held. */
static void test_max(void)
{
	struct md_throttle t = { .max = 4 * MiB };

	CHECK_EQ(sync_run(&t, 11 * MiB, 64 * 1024, 0, 0), at(11 * MiB, 4 * MiB));
	t = (struct md_throttle){ .max = 4 * MiB };
	CHECK_EQ(sync_run(&t, 11 * MiB, 64 * 1024, 1 * MS, 0), at(11 * MiB, 4 * MiB));
	t = (struct md_throttle){ .max = 4 * MiB };
	CHECK_EQ(sync_run(&t, 40 * MiB, 64 * 1024, 0, 0), at(40 * MiB, 4 * MiB));
	t = (struct md_throttle){ .max = 4 * MiB };
	CHECK_EQ(sync_run(&t, 4 * MiB, 64 * 1024, 100 * MS, 0), 64 * 100 * MS);
	/* idle clients (none here) never bring in min */
	t = (struct md_throttle){ .min = 1 * MiB, .max = 4 * MiB };
	CHECK_EQ(sync_run(&t, 11 * MiB, 64 * 1024, 0, 0), at(11 * MiB, 4 * MiB));
}

/* A piece longer at the limit than a window (a rebuild's 4 MiB at md's
 * 1 MiB/s minimum) is paid for in full: the window forgets a sync's slow
 * past, never the wait it owes. */
static void test_big_pieces(void)
{
	struct md_throttle t = { .max = 1 * MiB };

	CHECK_EQ(sync_run(&t, 40 * MiB, 4 * MiB, 0, 0), at(40 * MiB, 1 * MiB));
	t = (struct md_throttle){ .min = 1 * MiB };
	CHECK_EQ(sync_run(&t, 40 * MiB, 4 * MiB, 0, 10 * MS), at(40 * MiB - 4 * MiB, 1 * MiB));
}

/* Beside busy clients a sync runs at min: from the piece on which it
 * first sees them (the limit changed there, a new mark). */
static void test_min_busy(void)
{
	struct md_throttle t = { .min = 2 * MiB };

	CHECK_EQ(sync_run(&t, 11 * MiB, 64 * 1024, 0, 10 * MS), at(11 * MiB - 64 * 1024, 2 * MiB));
	t = (struct md_throttle){ .min = 2 * MiB, .max = 8 * MiB };
	CHECK_EQ(sync_run(&t, 11 * MiB, 64 * 1024, 0, 10 * MS), at(11 * MiB - 64 * 1024, 2 * MiB));
	/* no min: busy clients leave the sync at max */
	t = (struct md_throttle){ .max = 8 * MiB };
	CHECK_EQ(sync_run(&t, 11 * MiB, 64 * 1024, 0, 10 * MS), at(11 * MiB, 8 * MiB));
}

/* Clients are busy from a request until MD_THROTTLE_IDLE_NS without one;
 * the first call of a sync does not count requests from before it. */
static void test_idle(void)
{
	struct md_throttle t = { .min = 1 * MiB, .max = 4 * MiB };
	uint64_t now = T0;

	md_throttle_due(&t, now, 0, 7, true);
	CHECK_EQ(t.limit, 4 * MiB);
	now += 10 * MS;
	md_throttle_due(&t, now, 64 * 1024, 8, false); /* a request came */
	CHECK_EQ(t.limit, 1 * MiB);
	CHECK_EQ(md_throttle_due(&t, now + MD_THROTTLE_IDLE_NS - 1, 1 * MiB + 64 * 1024, 8, false),
	         now + 1 * S);
	CHECK_EQ(t.limit, 1 * MiB);
	now += MD_THROTTLE_IDLE_NS;
	CHECK_EQ(md_throttle_due(&t, now, 2 * MiB, 8, false), now); /* idle: a new mark */
	CHECK_EQ(t.limit, 4 * MiB);
	CHECK_EQ(md_throttle_due(&t, now, 6 * MiB, 8, false), now + 1 * S);

	/* requests from before a sync began do not make its clients busy */
	t = (struct md_throttle){ .min = 1 * MiB, .max = 4 * MiB };
	md_throttle_due(&t, T0, 0, 7, true);
	md_throttle_due(&t, T0 + 10 * MS, 64 * 1024, 7, false);
	CHECK_EQ(t.limit, 4 * MiB);
}

/* What went by at one limit is not paid for at the other: a sync that ran
 * unlimited while clients were idle does not stall, at min, for what it
 * did then (and the reverse). */
static void test_no_payback(void)
{
	struct md_throttle t = { .min = 1 * MiB };
	uint64_t now = T0;

	md_throttle_due(&t, now, 0, 0, true);
	now += 100 * MS;
	CHECK_EQ(md_throttle_due(&t, now, 10 * MiB, 0, false), now);
	CHECK_EQ(md_throttle_due(&t, now, 10 * MiB + 64 * 1024, 1, false), now); /* clients came */
	CHECK_EQ(md_throttle_due(&t, now, 11 * MiB + 64 * 1024, 2, false), now + 1 * S);
	now += 1 * S + MD_THROTTLE_IDLE_NS;
	CHECK_EQ(md_throttle_due(&t, now, 30 * MiB, 2, false), now); /* and went */
}

/* The speed is taken over a window: a sync slower than max for the
 * window does not then burst to catch up. */
static void test_window(void)
{
	struct md_throttle t = { .max = 4 * MiB };
	uint64_t now = T0;

	md_throttle_due(&t, now, 0, 0, true);
	CHECK_EQ(md_throttle_due(&t, now + MD_THROTTLE_MARK_NS - 1, 64 * 1024, 0, false),
	         now + at(64 * 1024, 4 * MiB));
	now += MD_THROTTLE_MARK_NS;
	CHECK_EQ(md_throttle_due(&t, now, 128 * 1024, 0, false), now); /* a new mark */
	CHECK_EQ(md_throttle_due(&t, now, 128 * 1024 + 4 * MiB, 0, false), now + 1 * S);
}

/* A sync that went back (done below the mark) starts a new mark. */
static void test_back(void)
{
	struct md_throttle t = { .max = 1 * MiB };
	uint64_t now = T0;

	md_throttle_due(&t, now, 8 * MiB, 0, true);
	CHECK_EQ(md_throttle_due(&t, now, 9 * MiB, 0, false), now + 1 * S);
	CHECK_EQ(md_throttle_due(&t, now + 1, 1 * MiB, 0, false), now + 1);
	CHECK_EQ(md_throttle_due(&t, now + 1, 2 * MiB, 0, false), now + 1 + 1 * S);
}

int main(void)
{
	test_unlimited();
	test_max();
	test_min_busy();
	test_big_pieces();
	test_idle();
	test_no_payback();
	test_window();
	test_back();
	return check_done();
}
