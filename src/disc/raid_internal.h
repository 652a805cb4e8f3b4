/* raid_internal.h — what raid.c (the shared engine) and the level files
 * (raid0.c, raid1.c, raid10.c, linear.c) agree on.
 *
 * A level is a mapping: it turns a range of the array into extents, each
 * with the member locations ("copies") that hold it.  Everything else —
 * fanning sub-requests out to members in parallel, degraded operation,
 * read balancing and read-ahead — lives once in raid.c (and its stages, raid_ra.c). */
#ifndef URAID_RAID_INTERNAL_H
#define URAID_RAID_INTERNAL_H

#include "raid.h"

#include <pthread.h>
#include <stdatomic.h>

#define RAID_MAX_COPIES 32
#define RAID_MAX_DISKS 1024

struct raid_loc {
	unsigned role;
	uint64_t off; /* byte offset in the member's data area */
};

struct raid_level {
	const char *kind;
	bool redundant;
	/* Check g against the member sizes (bytes; 0 for a missing member),
	 * build the level's private state, and say how big the array is and
	 * how many copies each block has.  0 or -errno with err_set(). */
	int (*setup)(const struct raid_geom *g, const uint64_t *sizes,
		     void **priv, uint64_t *array_size, unsigned *copies);
	/* Map the start of [off, off+len): fill loc[] with every copy of the
	 * first extent (all in the same order for every extent: copy i of
	 * one extent continues copy i of the previous one where the layout
	 * allows) and return its length, 1..len. */
	uint64_t (*map)(const void *priv, const struct raid_geom *g,
			uint64_t off, uint64_t len, struct raid_loc *loc,
			unsigned *ncopies);
	void (*free)(void *priv);
};

extern const struct raid_level raid0_level;
extern const struct raid_level raid1_level;
extern const struct raid_level raid10_level;
extern const struct raid_level linear_level;

/* Per-member state of an open array. */
struct raid_member {
	struct vol *vol;   /* NULL when missing */
	atomic_bool failed; /* missing, failed by I/O or by the user */
	atomic_int inflight;
	atomic_uint_fast64_t last_end; /* where its last request ended */
	/* read throughput estimate (ns per MiB), for read-ahead eligibility */
	atomic_uint_fast64_t ns_per_mib;
};

/* One transfer to or from a member. */
struct raid_sub {
	unsigned role;
	unsigned e_first, e_last; /* extents this sub covers */
	uint64_t off, len;        /* on the member */
	char *buf;                /* NULL for trim and zeroes */
	int err;
};

struct raid_ra; /* read-ahead state (raid_ra.c) */

struct raid_array {
	struct vol vol;
	struct raid_geom g;
	const struct raid_level *lvl;
	void *priv;
	struct raid_events ev;
	unsigned n;
	unsigned copies;
	struct raid_member *m;
	pthread_mutex_t fail_lock; /* serialises failure transitions */
	struct raid_ra *ra;        /* NULL unless copies > 1 */
};

/* ---- the engine (raid.c), for the stages below ---- */

/* Members slower than this (measured) are disks: worth staging streams
 * for. */
#define RAID_SLOW_NS_PER_MIB 1000000u /* under ~1 GiB/s */

uint64_t raid_now_ns(void);
/* Fold a transfer of len bytes that took ns into m's speed estimate. */
void raid_note_speed(struct raid_member *m, uint64_t ns, uint64_t len);
/* Errors that say something about the request, not about the member. */
bool raid_err_is_request(int err);
/* The one transition live -> failed.  Returns 0 if role is (now) failed,
 * -EIO (-EBUSY when by_user) if the level has no redundancy left to lose
 * it. */
int raid_member_fail(struct raid_array *a, unsigned role, int err, bool by_user);
/* The array behind v, or NULL if v is not one. */
struct raid_array *raid_array_of(struct vol *v);

/* ---- read-ahead for sequential streams (raid_ra.c) ---- */

int raid_ra_init(struct raid_array *a);
void raid_ra_destroy(struct raid_array *a);
/* Serve a read from read-ahead; -EAGAIN when the caller should read the
 * members directly. */
int raid_ra_read(struct raid_array *a, char *buf, uint64_t len, uint64_t off);
/* Drop what was read ahead of [off, off+len): called before and after
 * every change of that range. */
void raid_ra_invalidate(struct raid_array *a, uint64_t len, uint64_t off);
void raid_ra_member_failed(struct raid_array *a, unsigned role);

#endif
