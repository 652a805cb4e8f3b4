/* md_throttle.h — the speed limits of an md array's background syncs
 * (recovery and check: the kernel's speed_limit_min / speed_limit_max),
 * as a decision with no clock and no sleeping in it: the sync thread in
 * md_assemble.c asks when it may go on and sleeps until then, the unit
 * test (tests/unit/test_md_throttle.c) asks with a clock of its own.
 *
 * A sync runs at most at max bytes/s of each member, and at most at min
 * while clients use the array (a request entered it in the last
 * MD_THROTTLE_IDLE_NS), as md yields to them; 0 means no limit (with no
 * min, busy clients leave it at max).  The speed is taken since a mark,
 * moved whenever the limit in force changes (what went by at one limit is
 * not paid for at the other) and, once MD_THROTTLE_MARK_NS have gone by,
 * when the sync is behind (a slow past is not made up for by a burst). */
#ifndef URAID_MD_THROTTLE_H
#define URAID_MD_THROTTLE_H

#include <stdbool.h>
#include <stdint.h>

#define MD_THROTTLE_MARK_NS 3000000000ull /* a slow past is forgotten after this */
#define MD_THROTTLE_IDLE_NS 500000000ull  /* clients idle after this long without a request */

struct md_throttle {
	uint64_t min, max; /* bytes/s of each member; 0: none (the owner sets them) */
	/* md_throttle_due()'s own state; zero before the first call */
	uint64_t mark_ns, mark_done, limit, busy_until;
	unsigned ops;
};

/* A sync has done `done` bytes of each member at time now_ns (any
 * monotonic clock, the same on every call); ops counts the requests that
 * have entered the array so far (any change since the last call means
 * clients are busy); begin is true on a sync's first call.  Returns the
 * time, on the same clock, until which the sync must wait: now_ns or
 * earlier when it may go on at once.  Moves the mark as the header says. */
uint64_t md_throttle_due(struct md_throttle *t, uint64_t now_ns, uint64_t done, unsigned ops,
                         bool begin);

#endif
