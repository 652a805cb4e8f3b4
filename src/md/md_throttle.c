/* md_throttle.c — when a background sync may go on under its speed limits
 * (md_throttle.h); the sync thread that sleeps on the answer is in
 * md_assemble.c. */
#include "md_throttle.h"

uint64_t md_throttle_due(struct md_throttle *t, uint64_t now_ns, uint64_t done, unsigned ops,
                         bool begin)
{
	/* Clients are busy from a request seen until MD_THROTTLE_IDLE_NS
	 * without one: a few requests a second keep the sync at min. */
	if (!begin && ops != t->ops)
		t->busy_until = now_ns + MD_THROTTLE_IDLE_NS;
	t->ops = ops;
	bool busy = !begin && now_ns < t->busy_until;
	uint64_t limit = busy && t->min ? t->min : t->max;

	/* A new mark when the sync starts or went back, and when the limit
	 * changes (clients came or went): what went by at one limit is not
	 * paid for at the other. */
	if (begin || done < t->mark_done || limit != t->limit) {
		t->mark_ns = now_ns;
		t->mark_done = done;
		t->limit = limit;
		return now_ns;
	}
	if (!limit)
		return now_ns;
	uint64_t due = t->mark_ns + (uint64_t)((double)(done - t->mark_done) * 1e9 / (double)limit);
	/* And once a window is over, if the sync is behind: a slow past is
	 * not made up for by a burst.  A wait still owed is never forgiven
	 * (a piece can take longer than a window at the limit). */
	if (due <= now_ns && now_ns - t->mark_ns >= MD_THROTTLE_MARK_NS) {
		t->mark_ns = now_ns;
		t->mark_done = done;
		return now_ns;
	}
	return due;
}
