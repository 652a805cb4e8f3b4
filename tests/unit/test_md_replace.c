/* test_md_replace.c — the replace vol of md_replace.h (md_replace_vol.c):
 *   - the copy beside writers: four threads write random blocks into the
 *     vol while md_repl_copy moves old onto new; at the end new holds
 *     exactly what old holds (a write racing the copy's window is never
 *     undone by an older copy), at two window sizes;
 *   - reads come from old, and after md_repl_switch from new alone;
 *   - a new member that fails a write: the client's write still succeeds
 *     (old has it), md_repl_error reports it, the copy ends with -EIO. */
#include "check.h"
#include "mem_vol.h"

#include "md/md_replace.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define SIZE (8u << 20)
#define BLK 4096u

struct writer {
	struct vol *rv;
	unsigned seed, seed0;
	atomic_bool *stop;
	int err;
};

static void *write_loop(void *arg)
{
	struct writer *w = arg;
	char buf[4 * BLK];

	while (!atomic_load(w->stop)) {
		unsigned n = 1 + rand_r(&w->seed) % 4;
		/* Each writer keeps to its own quarter: two writes to one
		 * block at once may land in either order on each copy (as on
		 * any mirror); the race tested is the copy's against them. */
		uint64_t quarter = SIZE / 4 / BLK;
		uint64_t off = ((w->seed0 % 4) * quarter + rand_r(&w->seed) % (quarter - n)) * BLK;
		for (unsigned i = 0; i < n * BLK; i++)
			buf[i] = (char)rand_r(&w->seed);
		int r = vol_write(w->rv, buf, n * BLK, off, 0);
		if (r < 0 && !w->err)
			w->err = r;
	}
	return NULL;
}

static bool same(struct vol *a, struct vol *b)
{
	char *x = malloc(SIZE), *y = malloc(SIZE);
	bool eq = x && y && vol_read(a, x, SIZE, 0) == 0 && vol_read(b, y, SIZE, 0) == 0 &&
	          memcmp(x, y, SIZE) == 0;

	free(x);
	free(y);
	return eq;
}

/* Progress that lets the writers run between windows. */
static int slow(void *ctx, uint64_t done)
{
	(void)ctx, (void)done;
	sched_yield();
	return 0;
}

static void test_copy_beside_writers(uint64_t piece)
{
	struct vol *old = mem_vol(SIZE), *new = mem_vol(SIZE), *rv = NULL;
	char *fill = malloc(SIZE);
	atomic_bool stop = false;
	struct writer w[4];
	pthread_t t[4];

	unsigned seed = 7;
	for (unsigned i = 0; i < SIZE; i++)
		fill[i] = (char)rand_r(&seed);
	CHECK_EQ(vol_write(old, fill, SIZE, 0, 0), 0);
	CHECK_EQ(md_repl_open(old, new, "old", &rv), 0);
	for (unsigned i = 0; i < 4; i++) {
		w[i] = (struct writer){.rv = rv, .seed = 100 + i, .seed0 = i, .stop = &stop};
		pthread_create(&t[i], NULL, write_loop, &w[i]);
	}
	CHECK_EQ(md_repl_copy(rv, 0, SIZE, piece, slow, NULL), 0);
	atomic_store(&stop, true);
	for (unsigned i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		CHECK_EQ(w[i].err, 0);
	}
	CHECK_EQ(md_repl_error(rv), 0);
	CHECK(same(old, new));
	/* Reads come from old; after the switch from new. */
	char a[BLK], b[BLK];
	CHECK_EQ(vol_read(rv, a, BLK, 0), 0);
	CHECK_EQ(vol_read(old, b, BLK, 0), 0);
	CHECK(memcmp(a, b, BLK) == 0);
	CHECK_EQ(md_repl_switch(rv), 0);
	memset(a, 0x5a, BLK);
	CHECK_EQ(vol_write(rv, a, BLK, 0, 0), 0);
	CHECK_EQ(vol_read(new, b, BLK, 0), 0);
	CHECK(memcmp(a, b, BLK) == 0);
	vol_close(rv);
	free(fill);
}

static void test_new_fails(void)
{
	struct vol *old = mem_vol(SIZE), *new = NULL, *rv = NULL;
	char buf[BLK];

	CHECK_EQ(member_open("fault:after=0,mode=write:mem:8M", 0, &new), 0);
	if (!new)
		return;
	CHECK_EQ(md_repl_open(old, new, "old", &rv), 0);
	memset(buf, 0x33, BLK);
	CHECK_EQ(vol_write(rv, buf, BLK, 4096, 0), 0);
	CHECK(md_repl_error(rv) < 0);
	char back[BLK];
	CHECK_EQ(vol_read(old, back, BLK, 4096), 0);
	CHECK(memcmp(buf, back, BLK) == 0);
	CHECK_EQ(md_repl_copy(rv, 0, SIZE, 1 << 20, NULL, NULL), -EIO);
	CHECK(md_repl_switch(rv) < 0); /* nothing switches to a failed new */
	CHECK_EQ(vol_read(rv, back, BLK, 4096), 0);
	CHECK(memcmp(buf, back, BLK) == 0);
	vol_close(rv);
}

int main(void)
{
	test_copy_beside_writers(1 << 20);
	test_copy_beside_writers(64 << 10);
	test_new_fails();
	return check_done();
}
