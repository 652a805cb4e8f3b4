/* raid.h — md-compatible RAID disciplines built on member vols.
 *
 * The geometry uses md's own numbers (level, layout, chunk) so that the md
 * metadata code (src/md/md.c) hands over what the superblock says, and
 * the RAID code never reads a superblock.  Each level lives in its own file
 * (raid0.c, raid1.c, raid10.c, raid5.c for 4, 5 and 6, ../linear.c), one
 * descriptor each, behind raid_open() (raid_types.h maps the engine).
 *
 * members[] holds the data areas (superblock and offsets already cut away,
 * see slice.h), indexed by role (md's dev_roles slot).  A NULL entry is a
 * missing member: the array starts degraded if its level allows. */
#ifndef URAID_RAID_H
#define URAID_RAID_H

#include "core/vol.h"

#include <stddef.h>

#define RAID_LEVEL_LINEAR (-1)

/* ---- what md knows of each level ----
 * Each level's descriptor (raid_types.h, one file per level) carries
 * these facts; md (src/format/md.c: md_level_info(), md_layout_parse(),
 * md_layout_name(), md_level_parity()) answers from them, so that create,
 * examine, detail and the control socket read one table. */

/* A layout word mdadm has a name for. */
struct md_layout_name {
	uint32_t layout;   /* md's layout word */
	const char *name;  /* mdadm's name: "left-symmetric" */
	const char *alias; /* its short form ("ls"), or NULL */
};

struct md_level_info {
	int level;                            /* md's number: -1 linear, 0, 1, 4, 5, 6, 10 */
	const char *name;                     /* "raid5", as mdadm names it */
	unsigned min_disks;                   /* fewest raid_disks it is made of */
	unsigned parity;                      /* parity chunks per stripe: the members a parity
	                                       * level can lose (raid4/5: 1, raid6: 2); 0 for
	                                       * the others */
	bool redundant;                       /* keeps a copy or parity of every block */
	bool chunked;                         /* striped in chunks: chunksize is part of it */
	bool served;                          /* uraid's RAID engine runs it */
	const struct md_layout_name *layouts; /* named layouts (raid10's are
	                                       * made of copy counts) */
	unsigned nlayouts;
	const char *default_layout; /* what create uses without --layout */
	/* Layouts made by a rule rather than named (raid10's "n2", "f2",
	 * "o2"): read and write them; NULL: the layouts[] above. */
	int (*layout_parse)(const char *s, uint32_t *layout);
	void (*layout_format)(uint32_t layout, char *out, size_t len);
};

/* The levels md knows, linear first (raid_levels[] order): i from 0 until
 * it returns NULL. */
const struct md_level_info *raid_level_md_at(unsigned i);

struct raid_geom {
	int level;           /* -1 linear, 0, 1, 10, 4, 5 and 6 */
	unsigned layout;     /* md's layout word (raid10: near/far/offset copies) */
	uint32_t chunk;      /* bytes; 0 for raid1 */
	unsigned raid_disks; /* number of roles */
	uint64_t dev_size;   /* bytes used on each member (raid1/10/5/6); for raid0
	                      * and linear each member's own vol size is used */
};

/* How a RAID vol tells the metadata layer what happened to a member, so it
 * can mark it faulty in the surviving superblocks.  Called from I/O paths
 * on any thread, once per member failure; may be NULL.  No write, trim,
 * zeroing or flush that succeeded without the member returns before
 * member_failed has returned. */
struct raid_events {
	void (*member_failed)(void *ctx, unsigned role, int err);
	void *ctx;
};

/* Build the array.  On success the RAID vol owns the member vols.
 * Returns 0 or -errno with err_set() detail. */
int raid_open(const struct raid_geom *g, struct vol **members, const struct raid_events *ev,
              const char *name, struct vol **out);

/* Mark role as failed by the user (uraid fail): I/O stops going to it.
 * -EBUSY (err_set) if the array would lose data without it.  A role being
 * recovered (raid_rebuild.h) can always go: its recovery is marked failed
 * (raid_recover_error), for whoever runs the rebuild to abort. */
int raid_fail_member(struct vol *array, unsigned role);

/* Whether the array has failed (md's MD_BROKEN): a member failed beyond
 * what the level can lose (raid_types.h's raid_member_fail says how each
 * level takes it).  Every write, trim, zeroing and flush then fails with
 * -EIO; a read is served where a live member holds the block and fails
 * where it is lost.  false for a vol that is not a RAID vol. */
bool raid_failed(struct vol *array);

/* md's write-mostly (a far or slow mirror): reads keep off role while
 * another live copy of the block can serve them (RAID1 and RAID10, as md
 * does); writes go to it as to any copy.  0, or -EINVAL for a vol that is
 * not a RAID vol or a role out of range. */
int raid_set_write_mostly(struct vol *array, unsigned role, bool on);

/* md's bitmap write-behind (mdadm --write-behind=N): up to max writes'
 * copies for write-mostly members may still be in flight when the write is
 * acknowledged, once every other live copy has it (raid_behind.c says what
 * keeps it safe and what it risks).  A FLUSH waits for them.  0 turns it
 * off (after the copies behind land).  RAID1 only (-ENOTSUP else), max at
 * most RAID_BEHIND_MAX (md's, -EINVAL beyond), -EINVAL for a vol that is
 * not a RAID vol. */
#define RAID_BEHIND_MAX 16383u
int raid_set_write_behind(struct vol *array, unsigned max);
/* For tests: the copies behind now, and since the array opened. */
int raid_write_behind_stats(struct vol *array, unsigned *now, uint64_t *total);

/* Take member (a vol given to raid_open or raid_recover_begin) out of the
 * array for good and close it: its role must have failed (and not be
 * recovering), or the array retired it when a spare took its role.  Waits
 * for the member I/O still in flight on the role.  The caller keeps new
 * requests away from the array meanwhile (planned ones may still name
 * it).  0, -EBUSY if its role is live or recovering (or I/O on it has
 * not ended within 10 s), -ENOENT if the array does not hold it. */
int raid_detach_member(struct vol *array, struct vol *member);

/* Put nv in place of old, role's live member, which nv wraps (md's
 * replacement: a vol over old and the new member, md_replace.h): requests
 * from now on go to nv; those on old in flight end there (old stays open:
 * nv's).  The array owns nv, old is the caller's (nv's).  The caller keeps
 * new requests away meanwhile.  0, -EBUSY when old is not role's live
 * member, -EINVAL for a vol that is not a RAID vol. */
int raid_swap_member(struct vol *array, unsigned role, struct vol *old, struct vol *nv);

/* ---- per-member I/O counters (raid_member.c) ----
 * Every transfer the engine makes on a member (client I/O, read-ahead,
 * write-behind, parity reads, a check's or a rebuild's reads) is counted
 * by the thread that made it in its own lane of the member's counters
 * (plain relaxed stores on lines no other thread writes; threads beyond
 * the 63 that own a lane at a time share a last one, with atomic adds),
 * so the counters add no shared cache line to the I/O path; busy time is
 * a count of transfers in flight on the member's own line. */
#define RAID_LAT_BUCKETS 24 /* log2 histogram: bucket 0 < 1 us, k: [2^(k-1), 2^k) us */

struct raid_io_stats {
	uint64_t ops[2];                   /* completed without error: [0] reads, [1] writes */
	uint64_t bytes[2];                 /* their bytes */
	uint64_t errors;                   /* transfers that failed */
	unsigned inflight;                 /* transfers on it now */
	uint64_t busy_ns;                  /* time with at least one transfer on it */
	uint64_t lat[2][RAID_LAT_BUCKETS]; /* latency histograms, by op */
};

/* role's counters since the array opened (or since the member now in the
 * role joined it).  0, or -EINVAL for a vol that is not a RAID vol or a
 * role out of range. */
int raid_member_stats(struct vol *array, unsigned role, struct raid_io_stats *out);

/* The latency, in microseconds, under which fraction p (0..1) of the
 * hist's transfers fall: the upper bound of that bucket (0 when empty). */
uint64_t raid_lat_percentile(const uint64_t hist[RAID_LAT_BUCKETS], double p);

/* Read-ahead for sequential streams on mirrors and stripes: mode 0 (the
 * default) engages it for streams on members slower than ~1 GiB/s, 1
 * engages it for every read (tests), -1 turns it off.  -ENOTSUP if the
 * array has none (linear, one member, URAID_RA_MAX=0). */
int raid_set_readahead(struct vol *array, int mode);

/* Write-behind for sequential streams (a volatile write cache of at most
 * 64 MiB that FLUSH and FUA wait for): mode 0 (the default) engages it for
 * a single writer's stream on members slower than ~1 GiB/s, 1 for every
 * write that is not FUA and has no other change beside it (tests), -1
 * turns it off (after writing out what it holds).  -ENOTSUP if the array
 * has none (one member, stripes too wide to stage). */
int raid_set_writebehind(struct vol *array, int mode);
/* Wait until write-behind holds nothing: every piece logged and on the
 * members (their caches; no flush).  0, or the sticky error of data
 * written behind that was lost; -EINVAL for a vol that is not a RAID vol. */
int raid_drain_behind(struct vol *array);
/* Flush every live member without waiting for write-behind: the writes
 * that returned from the members are durable on return (a stripe log's
 * checkpoint, which must not wait for pieces whose log calls may wait
 * for it).  0 or -errno; -EINVAL for a vol that is not a RAID vol. */
int raid_flush_members(struct vol *array);

/* ---- a stripe log (parity levels) ----
 * md closes the RAID5/6 write hole two ways, PPL and the raid5-cache
 * journal (src/md/); both see every stripe update of a parity level
 * before any of its member writes is issued.  An update is one stripe
 * row's [moff, moff+len) on every member, described whole: each data
 * chunk's content after the update (written by this request or not), the
 * parity after it, and which data chunks the request writes.  Resync and
 * repair writes (md_sync, raid_check) and rebuilds are not logged, as md
 * logs only what clients write.  Write-behind logs what its lanes write
 * (a piece's whole stripes in one call, raid_wb.c), so it stays on. */
struct raid_log_stripe {
	uint64_t row;            /* stripe row: chunk row * chunk on every member */
	uint64_t moff, len;      /* on every member's data area, inside the row's chunks */
	uint64_t aoff;           /* array offset of data chunk 0 at moff; data chunk d
	                          * (array order) is at aoff + d * chunk */
	unsigned ndata;          /* data chunks in the row */
	const unsigned *role;    /* [ndata]: the role holding data chunk d */
	const unsigned *place;   /* [ndata]: d's place in syndrome order (RAID6's Q) */
	const char *const *data; /* [ndata]: d's len bytes after the update */
	const bool *written;     /* [ndata]: the request writes some of d's range */
	uint64_t woff, wlen;     /* the request's array bytes (what of each data
	                          * chunk's range it writes: PPL's entries) */
	int p, q;                /* parity roles (q: -1 on RAID5) */
	const char *pbuf, *qbuf; /* the parity after the update (qbuf NULL on RAID5) */
};

struct raid_log_ops {
	/* Before the member writes of n updates (one request's, under their
	 * stripes' locks; called from many threads at once): make them
	 * durable where a crash cannot tear them.  flags: the request's
	 * (VOL_FUA).  0, or -errno: nothing is written and the request fails
	 * with it. */
	int (*log)(void *ctx, const struct raid_log_stripe *s, unsigned n, unsigned flags);
	/* After those member writes returned r (0: all on the members' caches;
	 * a member flush makes them durable). */
	void (*done)(void *ctx, const struct raid_log_stripe *s, unsigned n, int r);
	void *ctx;
	/* Bytes every update's [moff, moff+len) is widened to (a power of
	 * two dividing the chunk; the journal's 4 KiB pages); 0: none. */
	uint32_t align;
	/* log() may be called again before an earlier call's done(), and
	 * done() may come from another thread (the journal); false: done()
	 * comes from log()'s thread before its next log() (PPL holds its
	 * areas' locks in between). */
	bool overlap;
	/* Optional: true when the calling thread's write must be on the
	 * members when it returns, never written behind (raid_wb.c): the
	 * journal's write-back destages and the writes that release cached
	 * pages count them on the members (or logged) from then on. */
	bool (*direct)(void *ctx);
};

/* Set (ops non-NULL) or clear the array's stripe log, before the array
 * takes writes; ops is copied.  What write-behind holds is written out
 * first; its pieces then hold at most 64 stripes (the direct path's
 * batch), so that one call asks no more of the log than a direct write.
 * 0, or -EINVAL when array is not a RAID vol of a parity level. */
int raid_set_log(struct vol *array, const struct raid_log_ops *ops);

/* For a stripe log's replay: where array byte aoff lies (its role and the
 * offset in that member's data area) and its stripe's parity roles (q -1
 * on RAID5).  0, or -EINVAL for a vol that is not a parity RAID vol or an
 * aoff beyond it. */
int raid_log_locate(struct vol *array, uint64_t aoff, unsigned *role, uint64_t *moff, int *p,
                    int *q);

/* dst ^= src over len bytes: RAID5's parity, and PPL's partial parity
 * (src/md/md_ppl.c), by one rule. */
void raid_xor(char *dst, const char *src, uint64_t len);

/* What raid_check() found. */
struct raid_check_report {
	uint64_t checked;     /* array bytes compared */
	uint64_t mismatched;  /* array bytes (whole blocks) where copies differ */
	uint64_t ranges;      /* runs of such blocks */
	uint64_t repaired;    /* member bytes rewritten */
	uint64_t read_errors; /* extents a member could not read */
};

/* What raid_check() tells its caller as it goes (each may be NULL). */
struct raid_check_cb {
	/* each run of differing blocks (array offsets) */
	void (*on_mismatch)(void *ctx, uint64_t off, uint64_t len);
	/* array bytes compared so far; non-zero stops the check (-EINTR) */
	int (*progress)(void *ctx, uint64_t done);
	void *ctx;
};

/* Scrub a redundant array: read every copy of every block and compare
 * (md's "check"); with repair, write the first copy that read over those
 * that differ (md's "repair").  RAID5/6: every stripe's parity recomputed
 * and compared, rewritten by a repair.  Safe beside client I/O on the same
 * array (a write never lands half-seen in what is compared), but not
 * beside a recovery: -EBUSY then (md_assemble runs both from one thread,
 * as md does; the refusal is a guard, not a lock).  0 (whatever was
 * found), -EINTR when progress stopped it (rep says how far it got), or
 * -errno with err_set() detail; -EINVAL for a level without copies. */
int raid_check(struct vol *array, bool repair, struct raid_check_report *rep,
               const struct raid_check_cb *cb);

/* How many bytes of array each level makes of the given geometry and member
 * sizes (for create and for validating superblocks). */
uint64_t raid_array_size(const struct raid_geom *g, const uint64_t *member_sizes);

#endif
