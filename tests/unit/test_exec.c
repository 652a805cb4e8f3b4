/* The fan-out executor: every piece runs exactly once, the lowest-indexed
 * error wins, nested batches complete even with a pool of one thread, and
 * pieces really run in parallel. */
#include "check.h"
#include "core/exec.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

static atomic_int hits[1000];

static int count_piece(void *arg, unsigned i)
{
	(void)arg;
	atomic_fetch_add(&hits[i], 1);
	return 0;
}

static int fail_some(void *arg, unsigned i)
{
	(void)arg;
	if (i == 7)
		return -EIO;
	if (i == 3)
		return -ENOSPC;
	return 0;
}

static int inner_piece(void *arg, unsigned i)
{
	atomic_int *sum = arg;
	atomic_fetch_add(sum, (int)i);
	return 0;
}

static int outer_piece(void *arg, unsigned i)
{
	atomic_int *sum = arg;
	(void)i;
	/* Each outer piece fans out again: the nesting LUKS over RAID makes. */
	return exec_parallel(10, inner_piece, sum);
}

static atomic_int running, most_running;

static int overlap_piece(void *arg, unsigned i)
{
	(void)arg, (void)i;
	int now = atomic_fetch_add(&running, 1) + 1;
	int seen = atomic_load(&most_running);
	while (now > seen && !atomic_compare_exchange_weak(&most_running, &seen, now))
		;
	/* Block until all four run at once (a barrier), giving up after 10 s:
	 * an executor that ran them one after another never gets there. */
	for (int waited = 0; atomic_load(&most_running) < 4 && waited < 10000; waited++)
		usleep(1000);
	atomic_fetch_sub(&running, 1);
	return 0;
}

int main(void)
{
	atomic_int sum = 0;

	/* A small pool makes nesting and sharing the pool matter. */
	setenv("URAID_THREADS", "3", 1);

	CHECK_EQ(exec_parallel(0, count_piece, NULL), 0);
	for (int round = 0; round < 50; round++)
		CHECK_EQ(exec_parallel(1000, count_piece, NULL), 0);
	for (int i = 0; i < 1000; i++)
		CHECK_EQ(atomic_load(&hits[i]), 50);

	CHECK_EQ(exec_parallel(20, fail_some, NULL), -ENOSPC);

	CHECK_EQ(exec_parallel(50, outer_piece, &sum), 0);
	CHECK_EQ(atomic_load(&sum), 50 * 45);

	/* Pieces that block overlap: with 3 workers and the caller, all four
	 * pieces of a batch of four run at once. */
	CHECK_EQ(exec_parallel(4, overlap_piece, NULL), 0);
	CHECK_EQ(atomic_load(&most_running), 4);
	return check_done();
}
