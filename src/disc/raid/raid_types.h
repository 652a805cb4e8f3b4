/* raid_types.h — the RAID engine's types and what its files offer each
 * other, layer by layer from the bottom (no file calls one above it):
 *   levels     raid0.c raid1.c raid10.c raid5.c ../linear.c, one descriptor
 *              each (struct raid_level), listed in raid_levels.c
 *   members    raid_member.c: state, speed, the one live -> failed transition
 *   parity     raid_parity.c: RAID5/6 stripes (the parity levels' hooks)
 *   fan-out    raid_map.c: a request mapped into per-member sub-requests
 *   pieces     raid_piece.c: array ranges staged member-major in memory
 *   stages     raid_ra.c (read-ahead), raid_wb.c (write-behind),
 *              raid_behind.c (md's write-behind of write-mostly copies)
 *   recovery   raid_barrier.c (writes vs. the rebuild's window),
 *              raid_recover.c (lifecycle), raid_rebuild.c, raid_check.c
 *   front      raid.c: raid_open(), the vol_ops, raid.h's and
 *              raid_rebuild.h's calls on a struct vol
 * A level is a mapping: it turns a range of the array into extents, each
 * with the member locations ("copies") that hold it; everything else lives
 * once in the engine, with the level's hooks where it differs. */
#ifndef URAID_RAID_TYPES_H
#define URAID_RAID_TYPES_H

#include "raid.h"
#include "core/clock.h"

#include <pthread.h>
#include <stdatomic.h>

#define RAID_MAX_COPIES 32
#define RAID_MAX_DISKS 1024

struct raid_loc {
	unsigned role;
	uint64_t off; /* byte offset in the member's data area */
};

/* A parity stripe, as the extent at some array offset sees it: every
 * member holds its part at member offset moff; data[] lists the roles of
 * the data chunks in syndrome order (the order RAID6's Q weighs them: Q =
 * sum of g^i * data[i] in GF(2^8)), target is the extent's own index in
 * it; p and q are the parity roles (q = -1 without Q).  ndata <= 1024. */
struct raid_stripe {
	uint64_t moff;
	unsigned ndata, target;
	unsigned data[RAID_MAX_DISKS];
	int p, q;
};

struct raid_array;

/* A level's one descriptor (md's personality, SPDK's raid_bdev_module):
 * what md knows of it (number, name, fewest members, how many it can
 * lose, its layout names: raid.h's struct md_level_info, which create,
 * examine and the control socket read through md_level_info()), how it
 * maps the array onto its members, and hooks where its behaviour differs
 * from the mirrors' (NULL: what raid0/1/10 and linear do).  One file per
 * level fills it (raid0.c, raid1.c, raid10.c, raid5.c, linear.c), and
 * raid_levels.c lists them all in raid_levels[]. */
struct raid_level {
	struct md_level_info md;
	/* Check g against the member sizes (bytes; 0 for a missing member),
	 * build the level's private state, and say how big the array is and
	 * how many copies each block has.  0 or -errno with err_set().  NULL
	 * for a level md knows but the engine does not run (none now). */
	int (*setup)(const struct raid_geom *g, const uint64_t *sizes, void **priv,
	             uint64_t *array_size, unsigned *copies);
	/* Map the start of [off, off+len): fill loc[] with every copy of the
	 * first extent (all in the same order for every extent: copy i of
	 * one extent continues copy i of the previous one where the layout
	 * allows) and return its length, 1..len. */
	uint64_t (*map)(const void *priv, const struct raid_geom *g, uint64_t off, uint64_t len,
	                struct raid_loc *loc, unsigned *ncopies);
	/* Parity levels: the stripe holding the extent at off (see struct
	 * raid_stripe), for rebuilding it when its member is gone. */
	void (*stripe)(const void *priv, const struct raid_geom *g, uint64_t off,
	               struct raid_stripe *st);
	void (*free)(void *priv);
	/* vol caps the level takes away whatever its members can do. */
	unsigned caps_off;
	/* One copy of each block, in chunks over every member (raid0,
	 * raid5/6): read-ahead's lanes pay even without a second copy. */
	bool striped;

	/* ---- hooks (NULL: the mirrors' way) ---- */
	/* State of an open array beside priv (parity: stripe locks, row
	 * cache); stop must take a start that did not run or failed. */
	int (*start)(struct raid_array *a);
	void (*stop)(struct raid_array *a);
	/* The write path: [off, off+len) onto the members (NULL: on every
	 * live copy, raid_map_modify). */
	int (*write)(struct raid_array *a, const char *buf, uint64_t len, uint64_t off,
	             unsigned flags);
	/* Read [off, off+len) (one extent) whose copies are all gone, from the
	 * rest (NULL: -EIO). */
	int (*rebuild)(struct raid_array *a, char *buf, uint64_t len, uint64_t off);
	/* Scrub one row: *differ says how much of it did not match (NULL: the
	 * copies are compared, raid_check.c). */
	int (*check_row)(struct raid_array *a, uint64_t row, bool repair, unsigned *differ);
	/* A member rejoined in sync: forget what was cached without it. */
	void (*member_back)(struct raid_array *a);
};

extern const struct raid_level raid0_level;
extern const struct raid_level raid1_level;
extern const struct raid_level raid10_level;
extern const struct raid_level raid4_level;
extern const struct raid_level raid5_level;
extern const struct raid_level raid6_level;
extern const struct raid_level linear_level;

/* The discipline of md level number level that the engine runs, or NULL
 * (raid_levels.c, from raid_levels[]). */
const struct raid_level *raid_level_of(int level);

/* One thread lane of a member's I/O counters (raid.h's struct
 * raid_io_stats), on lines of its own. */
#define RAID_STAT_LANES 64 /* the last one shared by threads beyond 63 */
struct raid_stat_lane {
	atomic_uint_fast64_t ops[2], bytes[2], errors;
	atomic_uint_fast64_t lat[2][RAID_LAT_BUCKETS];
} __attribute__((aligned(64)));

/* Per-member state of an open array. */
struct raid_member {
	struct vol *vol;    /* NULL when missing */
	atomic_bool failed; /* missing, failed by I/O or by the user */
	/* md's write-mostly: read only when no other live copy is
	 * (raid_read_avoid); written as any other. */
	atomic_bool write_mostly;
	atomic_int inflight;
	/* Busy time (raid_io_begin/end): transfers on it now, since when it
	 * has been busy, and the busy time before that. */
	atomic_int active;
	atomic_uint_fast64_t busy_since, busy_ns;
	struct raid_stat_lane *lanes;  /* RAID_STAT_LANES of them */
	atomic_uint_fast64_t last_end; /* where its last request ended */
	/* read throughput estimate (ns per MiB), for read-ahead eligibility */
	atomic_uint_fast64_t ns_per_mib;
	/* Being recovered online (raid_recover_begin): failed stays true, so
	 * reads and redundancy counts never rely on it, but writes go to it
	 * (RAID1/10) or are rebuilt onto it (RAID5/6, raid_rec_leave). */
	atomic_bool recovering;
	atomic_int rec_err; /* first write error on it while recovering */
	/* md's write-behind (raid_behind.c): its copies still behind, and
	 * the array's state for them (NULL: none). */
	atomic_uint behind;
	struct raid_behind *bh;
};

/* A write registered with online recovery: the member offsets it covers
 * on the roles being recovered (RAID1/10), or of its stripe rows (RAID5/6,
 * whole chunks).  lo >= hi: none. */
struct raid_rec_io {
	uint64_t lo, hi;
	bool excl;  /* parity levels: alone in its rows (see raid_barrier.c) */
	bool below; /* rows under the recovery point: rebuilt onto the targets after */
	struct raid_rec_io *next;
};

/* Online recovery state (raid_barrier.c, raid_recover.c): md's resync
 * barrier.  The rebuild owns the window [lo, hi) of member offsets: a
 * write that would touch it waits, and the rebuild waits for the writes in
 * flight there before it reads.
 * Below point every target holds what it should. */
struct raid_rec {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint64_t lo, hi;
	uint64_t point;
	struct raid_rec_io *io; /* writes in flight, registered */
	int wb_mode;            /* write-behind's mode before recovery (or a scrub) began */
	unsigned n;             /* roles being recovered */
	/* A scrub runs (raid_check): mirror writes register every copy's
	 * range, so that the scrub's window sees no write half done.  Never
	 * with a recovery: one of the two at a time. */
	atomic_bool scrub;
};

struct raid_ra;     /* read-ahead state (raid_ra.c) */
struct raid_wb;     /* write-behind state (raid_wb.c) */
struct raid_par;    /* parity levels' state (raid_parity.c) */
struct raid_behind; /* md's write-behind (raid_behind.c) */

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
	/* Failures marked but not yet told (raid_member_fail running the
	 * events), and their end: raid_fail_settle() waits for them. */
	atomic_uint fail_telling;
	pthread_cond_t fail_told;
	/* The array has failed (md's MD_BROKEN): a member failed beyond the
	 * redundancy (raid_member_fail).  From then on no write, trim,
	 * zeroing or flush is acknowledged; reads go on where a live member
	 * holds the block, and fail where it is lost.  Never cleared. */
	atomic_bool broken;
	struct raid_par *par;       /* parity levels: stripe locks, row cache */
	struct raid_ra *ra;         /* NULL without read-ahead */
	struct raid_wb *wb;         /* NULL without write-behind */
	struct raid_behind *behind; /* NULL until raid_set_write_behind() */
	/* Bytes of client reads inside the engine now (raid.c's raid_read):
	 * read-ahead's measure of the client's own depth. */
	atomic_uint_fast64_t reads_inflight;
	/* A stage's word that a member failed (read-ahead's: raid_ra.c). */
	void (*on_member_failed)(struct raid_array *a, unsigned role);
	atomic_uint view_next; /* the copy the next view starts from */
	/* Online recovery: rec_on says writes must register (rec);
	 * writes that saw it off are counted in wr_fast, so that turning it
	 * on can wait for them (raid_recover_begin). */
	atomic_bool rec_on;
	atomic_int wr_fast;
	struct raid_rec rec;
	struct vol **retired; /* failed members replaced by a spare */
	unsigned nretired;
	/* The stripe log (raid.h's raid_set_log); log.log NULL: none. */
	struct raid_log_ops log;
};

/* ---- members' state and failure (raid_member.c) ---- */

/* Whether a read should skip copy c of loc[0..nc): a write-mostly member
 * while another live copy, not write-mostly and not in the tried mask
 * (bit i: copy i was tried), could serve it instead.  The one rule every
 * read path asks (raid_map.c's pick, views, read-ahead). */
bool raid_read_avoid(struct raid_array *a, const struct raid_loc *loc, unsigned nc, unsigned c,
                     uint32_t tried);

/* Members slower than this (measured) are disks: worth staging streams
 * for. */
#define RAID_SLOW_NS_PER_MIB 1000000u /* under ~1 GiB/s */

/* At least one live member measured slower than RAID_SLOW_NS_PER_MIB and
 * none faster (members not measured yet do not count). */
bool raid_members_slow(struct raid_array *a);
/* The accounting of one transfer on m: raid_io_begin before it (it
 * returns the start time), raid_io_end after (write: which op; err: its
 * result; it returns the end time).  Two clock reads and, but for the
 * member's busy count, only this thread's lane (measured: about 0.2 us
 * of CPU a transfer).  raid_member_read and raid_member_write do both around the
 * member's op, and fold the time into the speed estimate when len is at
 * least speed_min (UINT64_MAX: never). */
uint64_t raid_io_begin(struct raid_member *m);
uint64_t raid_io_end(struct raid_member *m, bool write, uint64_t len, uint64_t t0, int err);
int raid_member_read(struct raid_member *m, void *buf, uint64_t len, uint64_t off,
                     uint64_t speed_min);
int raid_member_write(struct raid_member *m, const void *buf, uint64_t len, uint64_t off,
                      unsigned flags, uint64_t speed_min);
/* Allocate and free the members' counter lanes (raid_open, close); a
 * role's counters start again at zero when a new member takes it. */
int raid_stats_alloc(struct raid_array *a);
void raid_stats_free(struct raid_array *a);
void raid_stats_reset(struct raid_member *m);
int raid_array_member_stats(struct raid_array *a, unsigned role, struct raid_io_stats *out);
/* Fold a transfer of len bytes that took ns into m's speed estimate. */
void raid_note_speed(struct raid_member *m, uint64_t ns, uint64_t len);
/* Errors that say something about the request, not about the member. */
bool raid_err_is_request(int err);
/* The one transition live -> failed.  Returns 0 if role is (now) failed
 * and the array runs on.  Beyond the redundancy: -EBUSY when by_user
 * (nothing changes); RAID0 and linear -EIO (the request's error, nothing
 * changes); else -EIO and the array has failed (a->broken, md's
 * MD_BROKEN), a parity level's member marked failed and told, a
 * mirror's kept (md's last device).  -EIO too for a role already failed
 * once the array has. */
int raid_member_fail(struct raid_array *a, unsigned role, int err, bool by_user);
/* Return once every failure marked so far has been told (its events
 * returned): a request that succeeded without a failed member calls it
 * before it returns, so that nothing is acknowledged that the metadata
 * layer has not heard the failure of (md records it first). */
void raid_fail_settle(struct raid_array *a);
/* Would every block still have a live copy if role failed too? */
bool raid_survives_without(struct raid_array *a, unsigned role);
/* A write to a role being recovered failed: the recovery of that role is
 * over (the md layer aborts it); the request does not fail for it. */
void raid_rec_target_failed(struct raid_array *a, unsigned role, int err);

/* ---- the I/O fan-out (raid_map.c) ---- */

enum raid_op { RAID_READ, RAID_WRITE, RAID_TRIM, RAID_ZERO };
/* Read [off, off+len) from the members (no read-ahead, no write-behind
 * wait), failing over to other copies extent by extent, or rebuilding
 * through the level's rebuild hook: the front's and the rebuild's read. */
int raid_read_members(struct raid_array *a, char *buf, uint64_t len, uint64_t off);
/* Write, trim or zero [off, off+len) on every live copy, and on the
 * copies of roles being recovered (which do not count as live). */
int raid_map_modify(struct raid_array *a, enum raid_op op, const char *buf, uint64_t len,
                    uint64_t off, unsigned flags);

/* ---- the recovery barrier (raid_barrier.c) ---- */

/* Before a write of [off, off+len): true if it registered (recovery or
 * scrub on), false if it only counted itself in wr_fast. */
bool raid_rec_enter(struct raid_array *a, struct raid_rec_io *io, uint64_t len, uint64_t off);
/* After a write that returned r: unregister it; returns r. */
int raid_rec_leave(struct raid_array *a, struct raid_rec_io *io, bool reg, int r);
/* Where every target holds what it should below. */
uint64_t raid_rec_point(struct raid_array *a);

/* The rebuild's window moves to [lo, hi) with every target rebuilt below
 * point: writes into it wait from now on, and this returns once none is
 * in flight there.  lo >= hi clears it. */
void raid_rec_window(struct raid_array *a, uint64_t lo, uint64_t hi, uint64_t point);

/* ---- online recovery and scrub lifecycle (raid_recover.c) ---- */

/* raid_rebuild.h's raid_recover_begin/finish/abort on an array. */
int raid_recovery_begin(struct raid_array *a, unsigned role, struct vol *target, uint64_t from);
int raid_recovery_end(struct raid_array *a, unsigned role, bool in_sync);
/* A scrub of a (live) array begins: writes register from now on, with
 * write-behind off (what it held written out).  -EBUSY while a recovery or
 * another scrub runs. */
int raid_scrub_begin(struct raid_array *a);
void raid_scrub_end(struct raid_array *a);

/* ---- the rebuild (raid_rebuild.c) and the scrub (raid_check.c) ---- */

/* raid_rebuild.h's raid_rebuild() and raid_rebuild_piece() on an array. */
int raid_rebuild_run(struct raid_array *a, struct vol *const *targets, uint64_t from, uint64_t to,
                     bool resync, int (*progress)(void *ctx, uint64_t done), void *ctx);
uint64_t raid_rebuild_piece_of(struct raid_array *a);
/* After a registered write: on a parity level, rebuild the rows it
 * touched below the recovery point onto the targets (a failure there ends
 * their recovery; the write itself stands). */
void raid_rebuild_written(struct raid_array *a, const struct raid_rec_io *io);
/* raid.h's raid_check() on an array. */
int raid_check_run(struct raid_array *a, bool repair, struct raid_check_report *rep,
                   const struct raid_check_cb *cb);

/* ---- parity levels (raid_parity.c) ---- */

/* Whole stripes written (and logged) in one go at most: the direct path's
 * batch, one stripe lock each, and a write-behind piece's under a stripe
 * log, so that neither asks more of a log than the other. */
#define RAID_PARITY_BATCH 64u

/* Rebuild [off, off+len) (inside one chunk) of a parity level from the
 * rest of its stripe; -EIO when more is gone than the parity gives back. */
int raid_parity_rebuild(struct raid_array *a, char *buf, uint64_t len, uint64_t off);
/* Write [off, off+len) of a parity level, stripe by stripe, parity
 * included. */
int raid_parity_write(struct raid_array *a, const char *buf, uint64_t len, uint64_t off,
                      unsigned flags);
/* Scrub stripe row: recompute its P (and Q) from its data and compare;
 * *differ says how many of them differ, and with repair those are
 * rewritten.  -ENODEV when a member is gone (nothing to compare against). */
int raid_parity_check_row(struct raid_array *a, uint64_t row, bool repair, unsigned *differ);
/* P (and Q, when q is not NULL) of ndata blocks of len bytes, data[i] being
 * the block at syndrome place i (raid_rebuild.c, for a gone parity chunk). */
void raid_parity_compute(char *const *data, unsigned ndata, uint64_t len, char *p, char *q);
/* The stripe log's view of whole stripes (raid.h's struct raid_log_stripe,
 * one per stripe), from raid_parity_log_rows() to raid_parity_log_done(). */
struct raid_parity_log {
	struct raid_log_stripe *s;
	unsigned n;
	unsigned *role, *place;
	const char **data;
	bool *written;
};
/* Log k whole stripes from off (a stripe boundary) as one a->log.log()
 * call, before any of their member writes: part[role] is where role's
 * chunk of the first stripe is in memory, data and parity alike, each
 * next stripe's a chunk after it (member-major, as raid_piece.c stages
 * them).  0 (then raid_parity_log_done() once the member writes are over)
 * or the log's -errno (nothing to free). */
int raid_parity_log_rows(struct raid_array *a, char *const *part, uint64_t k, uint64_t off,
                         unsigned flags, struct raid_parity_log *lg);
/* The log's done() with the member writes' result r, and free lg. */
void raid_parity_log_done(struct raid_array *a, struct raid_parity_log *lg, int r);
/* Forget what the row cache holds of stripes [row0, row0+k): they are
 * being rewritten whole behind its back (raid_wb.c). */
void raid_parity_forget(struct raid_array *a, uint64_t row0, uint64_t k);
/* Forget the whole row cache (a member rejoined in sync). */
void raid_parity_forget_all(struct raid_array *a);
int raid_parity_init(struct raid_array *a);
void raid_parity_destroy(struct raid_array *a);

/* ---- pieces staged in memory (raid_piece.c) ---- */

/* A stretch contiguous on a member, and where a piece's buffer holds it. */
struct raid_run {
	unsigned role;
	uint64_t moff, len; /* on the member */
	uint64_t pos;       /* in the piece's buffer */
};

/* Runs sorted by role and member offset: role r's are run[first[r] ..
 * first[r+1]). */
struct raid_runs {
	struct raid_run *run, *tmp;
	unsigned n, cap;
	unsigned *first; /* members + 1 entries */
};

/* A piece of the array from off, laid out member-major: stage says
 * where every member's part lies in the buffer (bytes long), out what to
 * write of it (raid_piece_segments). */
struct raid_piece_map {
	uint64_t off;
	struct raid_runs stage, out;
	uint64_t bytes;
};

#define RAID_PICK_ALL (-1)  /* every live copy (writes) */
#define RAID_PICK_NONE (-2) /* no live copy: the piece cannot be staged */
/* Which copy of an extent a piece stages: a loc index, or one of the two
 * above. */
typedef int (*raid_piece_pick_fn)(struct raid_array *a, const struct raid_loc *loc, unsigned nc,
                                  void *ctx);

/* Lay out [off, off+len); pick NULL stages every live copy.  0, -EIO if an
 * extent has no copy to stage, or -ENOMEM.  m is reused between calls.
 * On a parity level every member's chunks of the stripes the range
 * touches are staged, gone members' too, and pick is not used. */
int raid_piece_map_build(struct raid_array *a, uint64_t off, uint64_t len, raid_piece_pick_fn pick,
                         void *ctx, struct raid_piece_map *m);
void raid_piece_map_free(struct raid_piece_map *m);
/* Copy [off, off+len) of the array between buf and the piece's buffer:
 * in (buf -> piece) to every staged copy, out from the first one.  -EIO if
 * some of the range is not staged. */
int raid_piece_copy(struct raid_array *a, const struct raid_piece_map *m, char *piece, char *buf,
                    uint64_t len, uint64_t off, bool in);
/* Set m->out to the member writes that put [off, off+len) of the array
 * (inside the piece) on every staged copy, each contiguous on the member
 * and in the buffer.  On a parity level: the whole stripes inside the
 * range, every live member's chunks of them, P and Q included (compute
 * those first with raid_piece_parity).  0 or -ENOMEM. */
int raid_piece_segments(struct raid_array *a, struct raid_piece_map *m, uint64_t len, uint64_t off);
/* Parity levels: compute the P and Q chunks that role holds in the whole
 * stripes inside [off, off+len), from the data staged in the piece (all
 * of it must be in).  0, -ENOMEM or -EIO (the stripes are not staged). */
int raid_piece_parity(struct raid_array *a, const struct raid_piece_map *m, char *piece,
                      unsigned role, uint64_t len, uint64_t off);
/* Parity levels: where each role's chunk of the stripe at off (a stripe
 * boundary the piece stages) lies in the piece's buffer, into part[a->n]
 * (its chunks of the next stripes follow it).  0, -ENOMEM, or -EIO. */
int raid_piece_parts(struct raid_array *a, const struct raid_piece_map *m, char *piece,
                     uint64_t off, char **part);
/* Copy [off, off+len) of the array from one piece to another (both
 * staging it).  0 or -EIO. */
int raid_piece_move(struct raid_array *a, const struct raid_piece_map *from, const char *fbuf,
                    const struct raid_piece_map *to, char *tbuf, uint64_t len, uint64_t off);

/* A stage's mode as raid_set_readahead()/raid_set_writebehind() take it:
 * -1 off, 0 automatic, 1 forced on. */
static inline int raid_stage_mode(int mode)
{
	return mode < 0 ? -1 : mode > 0 ? 1 : 0;
}

/* ---- read-ahead for sequential streams (raid_ra.c) ---- */

int raid_ra_init(struct raid_array *a);
void raid_ra_destroy(struct raid_array *a);
/* Serve a read from read-ahead; -EAGAIN when the caller should read the
 * members directly. */
int raid_ra_read(struct raid_array *a, char *buf, uint64_t len, uint64_t off);
/* Drop what was read ahead of [off, off+len): called before and after
 * every change of that range. */
void raid_ra_invalidate(struct raid_array *a, uint64_t len, uint64_t off);
/* raid_set_readahead() on an array. */
int raid_ra_set_mode(struct raid_array *a, int mode);

/* ---- write-behind for sequential streams (raid_wb.c) ---- */

int raid_wb_init(struct raid_array *a);
/* Write everything out and stop. */
void raid_wb_destroy(struct raid_array *a);
/* Take a write of the stream: 0 once it is staged, the sticky error, or
 * -EAGAIN (after every staged piece is written) when the caller should
 * write directly.  On a parity level the caller then calls
 * raid_wb_direct_done() once its direct write is over: until then no
 * piece is staged, so lanes never write stripes beside the direct path. */
int raid_wb_write(struct raid_array *a, const char *buf, uint64_t len, uint64_t off,
                  unsigned flags);
void raid_wb_direct_done(struct raid_array *a);
/* Wait until every staged piece is written; 0 or the sticky error. */
int raid_wb_barrier(struct raid_array *a);
/* raid.h's raid_set_log(): every piece written out first, then the log
 * (ops, or none with NULL) set for what comes next. */
void raid_wb_set_log(struct raid_array *a, const struct raid_log_ops *ops);
/* raid_set_writebehind() on an array. */
int raid_wb_set_mode(struct raid_array *a, int mode);
/* The mode raid_set_writebehind() last set (-1 without write-behind). */
int raid_wb_mode(struct raid_array *a);
/* Wait until no staged piece holds any of [off, off+len). */
void raid_wb_wait_range(struct raid_array *a, uint64_t len, uint64_t off);
/* Parity levels, for tests: how many stripes pieces have held whole (the
 * lanes write them, parity computed once), and how many partial-stripe
 * ranges they handed to the direct path, since the array opened. */
void raid_wb_counts_of(struct raid_array *a, uint64_t *whole, uint64_t *partial);
/* The same on a struct vol (raid.c), for tests. */
void raid_wb_counts(struct vol *array, uint64_t *whole, uint64_t *partial);

/* ---- md's write-behind of write-mostly copies (raid_behind.c) ---- */

struct raid_behind_job;
/* raid_set_write_behind() on an array (RAID1 only, -ENOTSUP else). */
int raid_behind_set_max(struct raid_array *a, unsigned max);
/* Wait for every copy behind (and stop the workers: close). */
void raid_behind_drain(struct raid_array *a);
void raid_behind_destroy(struct raid_array *a);
/* Wait until no copy behind overlaps [off, off+len) of the array: every
 * change of the array calls it first. */
void raid_behind_wait_range(struct raid_array *a, uint64_t len, uint64_t off);
/* Wait until m has no copy behind: before reading m. */
void raid_behind_settle(struct raid_member *m);
static inline void raid_behind_before_read(struct raid_member *m)
{
	if (atomic_load_explicit(&m->behind, memory_order_acquire))
		raid_behind_settle(m);
}
/* Could role's copy of a write with flags go behind now? */
bool raid_behind_eligible(struct raid_array *a, unsigned role, unsigned flags);
/* Take a copy of [off, off+len) on role (of the array's [aoff,
 * aoff+alen)) behind: NULL when it cannot (the max reached, a waiter,
 * no memory), and the caller writes it itself.  Else the caller calls
 * raid_behind_release once the other copies are written: wait (when one
 * of them failed) returns the copy's own result. */
struct raid_behind_job *raid_behind_submit(struct raid_array *a, unsigned role, const char *buf,
                                           uint64_t len, uint64_t off, uint64_t aoff, uint64_t alen,
                                           unsigned flags);
int raid_behind_release(struct raid_array *a, struct raid_behind_job *j, bool wait);
/* Copies behind now, and since the array opened. */
void raid_behind_stats(struct raid_array *a, unsigned *now, uint64_t *total);

#endif
