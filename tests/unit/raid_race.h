/* raid_race.h — what the unit tests that race an array's own work (an
 * online rebuild, a scrub) against client writes share.
 *
 * The layouts they run: race_cfgs[], RAID1, RAID10 near and far, RAID5,
 * RAID6.
 *
 * The writers: WRITERS threads
 * rewrite random ranges of the first span bytes of arr, each its own
 * 64 KiB blocks (block % WRITERS == its number), and keep in ref what the
 * array should hold.  writers_start() launches them (with seed) and
 * returns once they have written a little; writers_stop() stops them and
 * fails the test if a write failed. */
#ifndef URAID_TEST_RAID_RACE_H
#define URAID_TEST_RAID_RACE_H

#include "check.h"

#include "core/vol.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct race_cfg {
	int level;
	unsigned layout, disks;
	uint32_t chunk;
};

static const struct race_cfg race_cfgs[] = {
    {1, 0, 2, 0},
    {10, 0x102, 4, 64 << 10}, /* near 2 */
    {10, 0x201, 4, 64 << 10}, /* far 2 */
    {5, 2, 3, 64 << 10},
    {6, 2, 4, 64 << 10},
};
#define RACE_CFGS (sizeof(race_cfgs) / sizeof(race_cfgs[0]))

#define WRITERS 4
#define WRITER_BLOCK (64u << 10)

struct writers {
	struct vol *arr;
	char *ref;     /* what the array should hold */
	uint64_t span; /* bytes written to, from 0 */
	atomic_bool stop;
	atomic_ulong writes;
	unsigned long long seed[WRITERS];
	int err[WRITERS];
	struct writer {
		struct writers *w;
		unsigned id;
	} me[WRITERS];
	pthread_t th[WRITERS];
};

static void *writer_main(void *arg)
{
	struct writer *me = arg;
	struct writers *w = me->w;
	uint64_t blocks = w->span / WRITER_BLOCK;
	unsigned long long *seed = &w->seed[me->id];
	char *buf = malloc(WRITER_BLOCK);

	while (buf && !atomic_load(&w->stop)) {
		uint64_t b = check_rand(seed) % (blocks / WRITERS) * WRITERS + me->id;
		uint64_t in = check_rand(seed) % (WRITER_BLOCK / 4096) * 4096;
		uint64_t len = 4096 * (1 + check_rand(seed) % ((WRITER_BLOCK - in) / 4096));
		for (uint64_t i = 0; i < len; i++)
			buf[i] = (char)check_rand(seed);
		int r = vol_write(w->arr, buf, len, b * WRITER_BLOCK + in, 0);
		if (r < 0) {
			w->err[me->id] = r;
			break;
		}
		memcpy(w->ref + b * WRITER_BLOCK + in, buf, len);
		atomic_fetch_add(&w->writes, 1);
	}
	free(buf);
	return NULL;
}

/* Aim w at arr and fill the whole array with seeded bytes, which w->ref
 * keeps as what it should hold (freed by the caller). */
static inline void writers_fill(struct writers *w, struct vol *arr, unsigned long long *seed)
{
	w->arr = arr;
	w->span = arr->size;
	w->ref = malloc(arr->size);
	CHECK(w->ref);
	if (!w->ref)
		return;
	for (uint64_t i = 0; i < arr->size; i++)
		w->ref[i] = (char)check_rand(seed);
	CHECK(vol_write(arr, w->ref, arr->size, 0, 0) == 0);
}

static inline void writers_start(struct writers *w, unsigned long long seed)
{
	unsigned long before = atomic_load(&w->writes);

	atomic_store(&w->stop, false);
	for (unsigned i = 0; i < WRITERS; i++) {
		w->me[i] = (struct writer){w, i};
		w->seed[i] = check_seed(seed) + i * 1000003u;
		CHECK(pthread_create(&w->th[i], NULL, writer_main, &w->me[i]) == 0);
	}
	for (bool failed = false; !failed && atomic_load(&w->writes) < before + 8;) {
		usleep(100);
		for (unsigned i = 0; i < WRITERS; i++)
			failed |= w->err[i] != 0;
	}
}

static inline void writers_stop(struct writers *w)
{
	atomic_store(&w->stop, true);
	for (unsigned i = 0; i < WRITERS; i++) {
		pthread_join(w->th[i], NULL);
		CHECK_EQ(w->err[i], 0);
	}
}

#endif
