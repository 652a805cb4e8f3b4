/* clock.h — the one clock uraid measures durations and deadlines with.
 *
 * CLOCK_MONOTONIC in nanoseconds: it never steps back when the wall clock
 * is set, so differences of two readings are elapsed time (speeds, service
 * times, timeouts).  Not a time of day: superblock times use time(). */
#ifndef URAID_CLOCK_H
#define URAID_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t clock_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
