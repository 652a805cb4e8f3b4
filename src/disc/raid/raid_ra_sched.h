/* raid_ra_sched.h — which copy of a mirror reads which stretch of a stream
 * that read-ahead (raid_ra.c) serves.  Pure arithmetic on a model of the
 * copies' clocks, apart from the lanes, so that tests can drive it alone.
 *
 * A stream is read ahead in pieces; consecutive pieces are dealt to the
 * copies in stretches.  A copy that skips another's stretch loses about a
 * rotation (skip_ns), and what the copies read beyond where the reader
 * stops is lost, so the best stretch grows with the stream's age t: about
 * grow * sqrt(skip_ns * t) of transfer time (docs/raid.md, "A stream cut
 * short").  Each stretch goes to the copy whose modelled clock is earliest
 * -- the copy that will be free first -- so the copies' stretches end at
 * staggered times and the reader never waits on all of them at once. */
#ifndef URAID_RAID_RA_SCHED_H
#define URAID_RAID_RA_SCHED_H

#include <stdbool.h>
#include <stdint.h>

#define RAID_RA_SCHED_COPIES 32

struct raid_ra_stretch {
	uint64_t start; /* first piece; it ends where the next one starts */
	unsigned copy;
};

struct raid_ra_sched {
	unsigned copies;
	uint64_t max;                         /* longest stretch, pieces */
	uint64_t piece_ns;                    /* one copy's transfer time for a piece */
	uint64_t skip_ns;                     /* what a copy loses skipping a stretch */
	unsigned grow;                        /* stretch = grow * sqrt(skip_ns * age) ... */
	unsigned floor;                       /* ... but at least floor * skip_ns */
	uint64_t limit;                       /* pieces in the array (UINT64_MAX: no end) */
	uint64_t dealt;                       /* pieces before this one are dealt */
	uint64_t clock[RAID_RA_SCHED_COPIES]; /* ns since the stream began */
	uint64_t end[RAID_RA_SCHED_COPIES];   /* where its last stretch ended */
	struct raid_ra_stretch *ring;         /* stretches dealt, oldest first */
	unsigned cap, head, n;
};

/* Allocate room for cap stretches (the window's pieces + 2 is enough).
 * 0 or -ENOMEM. */
int raid_ra_sched_init(struct raid_ra_sched *s, unsigned copies, uint64_t max, unsigned cap);
void raid_ra_sched_free(struct raid_ra_sched *s);
/* A stream begins at piece origin; copy c can start reading it after
 * delay_ns[c] (0 for a copy positioned there, a seek for the others). */
void raid_ra_sched_begin(struct raid_ra_sched *s, uint64_t origin, uint64_t piece_ns,
                         const uint64_t *delay_ns);
/* The copy that reads piece p; front is the first piece still wanted
 * (p >= front): stretches wholly before it are forgotten, and pieces
 * before it never dealt. */
unsigned raid_ra_sched_copy(struct raid_ra_sched *s, uint64_t p, uint64_t front);

#endif
