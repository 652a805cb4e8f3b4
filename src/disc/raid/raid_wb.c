/* raid_wb.c — write-behind for sequential streams: one writer with one
 * request in flight keeps every disk busy.
 *
 * Written through, such a writer leaves every disk idle while its next
 * request travels (the NBD round trip and the payload), and the more disks
 * share a request, the shorter each one's transfer and the larger that idle
 * share: RAID0 of 8 disk models wrote at 5.5 disks' speed.  So once a
 * stream is seen (three back-to-back writes of >= 64 KiB, no other change
 * in flight, slow members), its writes are copied into pieces in memory
 * and acknowledged, and per-member lanes write the pieces out in order,
 * each member its part of a piece in one transfer (raid_piece.c lays the
 * piece out member-major).
 *
 * That is a volatile write cache, bounded (RAID_WB_MAX bytes) and
 * advertised as one (VOL_CAP_FLUSH): a flush returns once every piece
 * before it is on the members and they have flushed; FUA writes, trims,
 * zeroes and writes that are not the stream's wait until the pieces are
 * written, then go straight through; a read of a range still in a piece
 * waits for it to be written.  Closing the array writes everything out.
 *
 * A piece is open while the stream fills it, then sealed: when full, when
 * the stream breaks, before anything waits for it, or as soon as no
 * sealed piece is left to write (so data never waits in memory while the
 * disks idle).  Sealed pieces form a ring [tail, head), in order; lane r
 * writes role r's parts of them one after the other.  A member's write
 * error fails the member as on the direct path; a part that then reaches
 * no copy makes the error sticky: every later write, trim, zeroing and
 * flush returns it, so the client learns of the loss at its next flush at
 * the latest.
 *
 * RAID5/6: a piece is whole stripes, each member's chunks of them (data,
 * P and Q) one run of the buffer (raid_piece.c).  Once it is sealed, the
 * lane of the member holding a stripe's P (or Q) computes it from the
 * staged data, then writes its part with the rest; so a stream's stripes
 * are written whole, without reads, parity computed once.  What a piece
 * holds of a stripe only in part (where the stream began or broke off) is
 * written by lane 0 through the direct path (raid_parity_write(), under
 * the stripe's lock, by reconstruct-write).  While the stream goes on, a
 * trailing partial stripe is not written: sealing for idle disks stops at
 * the last whole stripe and the rest moves to the next piece; if the
 * stream stalls for RAID_WB_HOLD_NS (10 ms) it goes out as it is.
 *
 * With a stripe log (raid.h's raid_set_log: md's PPL or journal) every
 * stripe reaches the log before its member writes, here as on the direct
 * path: lane 0 computes the parity of a sealed piece's whole stripes and
 * logs them in one call (raid_parity_log_rows, the direct path's own)
 * before any lane writes its part; the other lanes wait for that, and
 * lane 0 calls the log's done() once every lane has passed the piece (the
 * same thread as log(): PPL holds its areas' locks in between).  Partial
 * stripes are logged by the direct path as ever, after that done().  A
 * log that allows it (overlap: the journal) is not waited for, and is
 * written by lanes of its own, the log lanes (two: one prepares a piece
 * while the other's is written), as soon as a piece is sealed: the log's
 * append and flush of the next pieces run while every member lane (lane
 * 0's too) writes this one, as the kernel writes its log ahead of the
 * members; lane 0 waits for the log lane's answer, and the last lane to
 * pass a piece calls done().  A
 * log that refuses the call (full, or too many entries for a PPL header)
 * leaves the whole stripes to lane 0's direct path too, logged there in
 * its own batches.  A log may also keep a thread's write off this path
 * (its direct() hook: the journal's write-back destages, which count
 * their rows on the members once the write returns).
 *
 * Lanes write whole stripes without the stripe locks.  That is safe by
 * the barrier design, not by locking: (1) no direct write to the array
 * runs while a piece is pending -- a write that goes direct drains the
 * pieces first and counts itself in wb->direct until it is done, and no
 * piece is opened while that count shows anyone else (checked after the
 * piece counts in wb->pending, so that a direct write that saw no piece
 * pending and one opening a piece cannot both go on); (2) pieces pending
 * at once never share a stripe (a piece that would is opened only once
 * the other is written), so lane 0's partial stripes meet no lane; (3)
 * the row cache forgets a piece's whole stripes when it is sealed, and
 * nothing can cache them again before they are written (by 1 and 2).  A
 * read of a degraded stripe rebuilds under the stripe lock from what is
 * on the members; it only meets a lane's stripe when it overlaps a write
 * still in flight, and then waits for it (raid_wb_wait_range()).  A gone
 * member's lane has nothing to write (the parity covers its chunks, which
 * are staged for computing it); a member failing under a lane fails as on
 * the direct path, and a stripe that then cannot be recovered (the level
 * cannot lose that member) makes the error sticky. */
#include "raid_types.h"

#include "core/exec.h"
#include "core/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RAID_WB_PART (2u << 20) /* what a piece gives each data disk */
#define RAID_WB_SLOTS 4u
#define RAID_WB_MAX (64u << 20) /* all pieces' buffers together */
#define RAID_WB_MIN_LEN (64u << 10)
#define RAID_WB_HOLD_NS 10000000u /* a partial stripe held for a stalled stream */
#define RAID_WB_LOG_LANES 2u      /* log lanes (parity levels): see raid_wb_log_run */

enum raid_wb_state { WB_FREE, WB_OPEN, WB_SEALED };

struct raid_wb_slot {
	enum raid_wb_state state;
	uint64_t end;     /* the piece is [map.off, end) of the array */
	uint64_t fill;    /* ... and holds data in [map.off, fill) */
	unsigned copying; /* writers copying into it now */
	unsigned left;    /* sealed: lanes yet to pass it (every lane does,
	                   * so that no lane meets the slot reused) */
	bool listed;      /* sealed: map.out lists the writes */
	/* Sealed on a parity level: the whole stripes [whole_lo, whole_hi)
	 * go through the lanes; the rest of [map.off, fill) is partial
	 * stripes, for lane 0 to write through the direct path. */
	uint64_t whole_lo, whole_hi;
	/* ... and with a stripe log, lane 0 logs them (see the top). */
	bool logging, logged;
	int log_err;   /* the log's answer: not 0, no lane writes them */
	int write_err; /* a lane's write of them that failed, for done() */
	struct raid_parity_log lg;
	struct raid_piece_map map;
	char *buf;
	uint64_t cap;
};

struct raid_wb {
	pthread_mutex_t lock;
	pthread_cond_t work; /* lanes wait for a sealed piece */
	pthread_cond_t done; /* others wait for pieces written, copies done */
	uint64_t piece;      /* array bytes a piece covers at most */
	uint64_t piece_max;  /* ... without a stripe log */
	uint64_t row;        /* parity levels: array bytes of a stripe; else 0 */
	atomic_uint direct;  /* parity levels: writes that may be going direct */
	unsigned nslots;
	struct raid_wb_slot *slot;
	uint64_t tail, head; /* sealed: ring indices [tail, head) */
	atomic_uint pending; /* slots open or sealed: lets reads skip the lock */
	uint64_t *lane_at;   /* per role: the ring index its lane is at; [n]:
	                      * the next piece a log lane takes (parity levels) */
	pthread_t *thread;   /* [n + RAID_WB_LOG_LANES]: the lanes, the log lanes */
	unsigned started;    /* member lanes started */
	unsigned log_lanes;  /* log lanes started */
	bool stop;
	int err;                 /* sticky: a piece that reached no copy */
	atomic_int mode;         /* raid_set_writebehind(); read unlocked by writes */
	bool told;               /* the log has said that write-behind engaged */
	uint64_t whole, partial; /* parity levels: stripes sealed whole, and
	                          * partial ranges, so far (raid_wb_counts) */
	uint64_t next;           /* where the last write ended */
	unsigned seq;            /* back-to-back writes so far */
	unsigned writers;        /* changes in flight */
};

/* The write-behind whose lane this thread is (NULL: none); see
 * raid_wb_barrier(). */
static _Thread_local const struct raid_wb *raid_wb_own;

struct raid_wb_lane {
	struct raid_array *a;
	unsigned role;
};

static struct raid_wb_slot *raid_wb_at(struct raid_wb *wb, uint64_t i)
{
	return &wb->slot[i % wb->nslots];
}

static struct raid_wb_slot *raid_wb_open_slot(struct raid_wb *wb)
{
	struct raid_wb_slot *s = raid_wb_at(wb, wb->head);
	return s->state == WB_OPEN ? s : NULL;
}

/* Data written behind is lost (on role's way, or on every member's when
 * role is a->n): make the error sticky, keeping the first.  Lock held. */
static void raid_wb_fail(struct raid_array *a, unsigned role, int err)
{
	struct raid_wb *wb = a->wb;

	if (wb->err)
		return;
	wb->err = err;
	log_error("%s: data written behind could not reach %s%s: %s; every later "
	          "write and flush fails",
	          a->vol.name, role < a->n ? "member " : "the members",
	          role < a->n ? a->m[role].vol->name : "", strerror(-err));
}

/* Does role write anything of sealed piece s? */
static bool raid_wb_has_part(const struct raid_wb_slot *s, unsigned role)
{
	const struct raid_runs *out = &s->map.out;
	return s->listed && out->first[role] < out->first[role + 1];
}

/* Piece s is written: free its slot, and the ring's tail with it when it
 * is the oldest.  Lock held. */
static void raid_wb_complete(struct raid_array *a, struct raid_wb_slot *s)
{
	struct raid_wb *wb = a->wb;

	/* Read-ahead may have read the range before it was written: drop
	 * that before the piece counts as written. */
	raid_ra_invalidate(a, s->fill - s->map.off, s->map.off);
	s->state = WB_FREE;
	while (wb->tail < wb->head && raid_wb_at(wb, wb->tail)->state == WB_FREE) {
		wb->tail++;
		atomic_fetch_sub(&wb->pending, 1);
	}
	pthread_cond_broadcast(&wb->done);
}

/* Seal the open piece (no copy into it in progress): work out what each
 * member writes of it, and hand it to the lanes.  Lock held. */
static void raid_wb_seal(struct raid_array *a, struct raid_wb_slot *s)
{
	struct raid_wb *wb = a->wb;

	if (wb->row) {
		s->whole_lo = (s->map.off + wb->row - 1) / wb->row * wb->row;
		s->whole_hi = s->fill / wb->row * wb->row;
		if (s->whole_hi < s->whole_lo)
			s->whole_hi = s->whole_lo;
		if (s->whole_hi > s->whole_lo)
			raid_parity_forget(a, s->whole_lo / wb->row,
			                   (s->whole_hi - s->whole_lo) / wb->row);
		wb->whole += (s->whole_hi - s->whole_lo) / wb->row;
		wb->partial += (s->map.off < s->whole_lo) + (s->whole_hi < s->fill);
	}
	int r = raid_piece_segments(a, &s->map, s->fill - s->map.off, s->map.off);

	s->listed = r == 0;
	if (r < 0)
		raid_wb_fail(a, a->n, r); /* no memory to list the writes */
	s->logging = wb->row && a->log.log && s->listed && s->whole_hi > s->whole_lo;
	s->logged = false;
	s->log_err = s->write_err = 0;
	s->left = a->n + (wb->log_lanes > 0); /* and the log lane that takes it */
	s->state = WB_SEALED;
	wb->head++;
	pthread_cond_broadcast(&wb->work);
}

/* Seal the open piece if nothing is copying into it (one left empty by
 * a failed write is closed instead).  Lock held. */
static void raid_wb_seal_now(struct raid_array *a)
{
	struct raid_wb_slot *s = raid_wb_open_slot(a->wb);

	if (!s || s->copying)
		return;
	if (s->fill > s->map.off) {
		raid_wb_seal(a, s);
	} else {
		s->state = WB_FREE;
		atomic_fetch_sub(&a->wb->pending, 1);
	}
}

static int raid_wb_open(struct raid_array *a, struct raid_wb_slot *s, uint64_t off);

/* The lanes have nothing left to write: seal the open piece now, so that
 * the disks do not idle while data waits in memory.  On a parity level
 * only up to its last whole stripe: a trailing partial stripe moves to a
 * new open piece for the stream to complete (written now, it would be
 * written again, parity and all, when the stream finishes it, just
 * behind the disks' heads).  Lock held. */
static void raid_wb_seal_idle(struct raid_array *a)
{
	struct raid_wb *wb = a->wb;
	struct raid_wb_slot *s = raid_wb_open_slot(wb);

	if (!wb->row || !s || s->copying || s->fill == s->map.off || s->fill % wb->row == 0) {
		raid_wb_seal_now(a);
		return;
	}
	uint64_t cut = s->fill / wb->row * wb->row, fill = s->fill;
	if (cut <= s->map.off)
		return; /* only the stripe the stream is filling */
	struct raid_wb_slot *n = raid_wb_at(wb, wb->head + 1);
	if (wb->head + 1 - wb->tail >= wb->nslots || n->state != WB_FREE ||
	    raid_wb_open(a, n, cut) < 0) {
		raid_wb_seal(a, s); /* no room to split: all of it goes */
		return;
	}
	if (raid_piece_move(a, &s->map, s->buf, &n->map, n->buf, fill - cut, cut) < 0) {
		n->state = WB_FREE; /* cannot happen: both stage the range */
		atomic_fetch_sub(&wb->pending, 1);
		raid_wb_seal(a, s);
		return;
	}
	n->fill = fill;
	s->fill = cut;
	raid_wb_seal(a, s); /* n is at head now */
}

/* Wait until every piece is written.  Lock held. */
static void raid_wb_drain_locked(struct raid_array *a)
{
	struct raid_wb *wb = a->wb;

	for (;;) {
		raid_wb_seal_now(a);
		if (!raid_wb_open_slot(wb) && wb->tail == wb->head)
			return;
		pthread_cond_wait(&wb->done, &wb->lock);
	}
}

/* Write role's part of piece s.  A failed member's part is skipped: its
 * copies live on the others, unless the array has failed (raid_types.h's
 * broken): then the part is lost, and the error sticks.  Lock not held. */
static int raid_wb_write_part(struct raid_array *a, struct raid_wb_slot *s, unsigned role)
{
	struct raid_member *m = &a->m[role];
	struct vol *v = m->vol;
	int r = 0;

	if (atomic_load(&m->failed)) {
		if (atomic_load(&a->broken)) {
			pthread_mutex_lock(&a->wb->lock);
			raid_wb_fail(a, a->n, -EIO);
			pthread_mutex_unlock(&a->wb->lock);
		}
		return 0;
	}
	atomic_fetch_add(&m->inflight, 1);
	const struct raid_runs *out = &s->map.out;
	for (unsigned i = out->first[role]; i < out->first[role + 1] && !r; i++) {
		const struct raid_run *run = &out->run[i];
		for (uint64_t at = run->moff; at < run->moff + run->len && !r;) {
			uint64_t n = run->moff + run->len - at;
			if (n > v->block_max)
				n = v->block_max;
			r = raid_member_write(m, s->buf + run->pos + (at - run->moff), n, at, 0, 0);
			at += n;
			atomic_store(&m->last_end, at);
		}
	}
	atomic_fetch_sub(&m->inflight, 1);
	return r;
}

/* A part could not be written: fail the member if the others hold its
 * copies, else the data is lost and the error sticks.  Whatever the
 * errno: the client was told the write succeeded, so a member that
 * refused its part (EINVAL too) is out of step with the others. */
static void raid_wb_part_failed(struct raid_array *a, unsigned role, int err)
{
	if (raid_member_fail(a, role, err, false) == 0)
		return;
	pthread_mutex_lock(&a->wb->lock);
	raid_wb_fail(a, role, err);
	pthread_mutex_unlock(&a->wb->lock);
}

/* Parity levels: does sealed piece s hold partial stripes? */
static bool raid_wb_has_partial(const struct raid_wb *wb, const struct raid_wb_slot *s)
{
	return wb->row && s->listed && s->fill > s->map.off &&
	       (s->map.off < s->whole_lo || s->whole_hi < s->fill);
}

/* Compute role's P and Q chunks of piece s (parity levels; with a log,
 * lane 0 computed them all), then write its part: 0, or the write's
 * error (handled).  Lock not held. */
static int raid_wb_lane_part(struct raid_array *a, struct raid_wb_slot *s, unsigned role)
{
	struct raid_wb *wb = a->wb;
	int r = 0;

	if (wb->row && !s->logging && !atomic_load(&a->m[role].failed))
		r = raid_piece_parity(a, &s->map, s->buf, role, s->whole_hi - s->whole_lo,
		                      s->whole_lo);
	if (r) {
		/* No parity to write: the stripes would not match it. */
		pthread_mutex_lock(&wb->lock);
		raid_wb_fail(a, a->n, r);
		pthread_mutex_unlock(&wb->lock);
		return r;
	}
	r = raid_wb_write_part(a, s, role);
	if (r)
		raid_wb_part_failed(a, role, r);
	return r;
}

/* Write ranges [lo[k], hi[k]) of sealed piece s through the direct path
 * (lane 0, on parity levels; each logged there when a log is set).  Lock
 * not held. */
static void raid_wb_lane_direct(struct raid_array *a, struct raid_wb_slot *s, const uint64_t *lo,
                                const uint64_t *hi, unsigned n)
{
	int r = 0;

	for (unsigned k = 0; k < n && r == 0; k++) {
		uint64_t len = hi[k] - lo[k];
		char *tmp = len ? vol_buf_alloc(len) : NULL;
		if (!len)
			continue;
		r = tmp ? raid_piece_copy(a, &s->map, s->buf, tmp, len, lo[k], false) : -ENOMEM;
		if (r == 0)
			r = raid_parity_write(a, tmp, len, lo[k], 0);
		free(tmp);
	}
	if (r) {
		/* raid_parity_write() has failed what members it could. */
		pthread_mutex_lock(&a->wb->lock);
		raid_wb_fail(a, a->n, r);
		pthread_mutex_unlock(&a->wb->lock);
	}
}

/* Write the partial stripes of sealed piece s through the direct path. */
static void raid_wb_lane_partial(struct raid_array *a, struct raid_wb_slot *s)
{
	uint64_t lo[2] = {s->map.off, s->whole_hi}, hi[2] = {s->whole_lo, s->fill};

	if (s->whole_hi == s->whole_lo) { /* no whole stripe: all of it */
		hi[0] = s->fill;
		lo[1] = hi[1] = 0;
	}
	raid_wb_lane_direct(a, s, lo, hi, 2);
}

struct raid_wb_par {
	struct raid_array *a;
	struct raid_wb_slot *s;
};

static int raid_wb_parity_one(void *arg, unsigned role)
{
	struct raid_wb_par *x = arg;
	const struct raid_wb_slot *s = x->s;
	return raid_piece_parity(x->a, &s->map, s->buf, role, s->whole_hi - s->whole_lo,
	                         s->whole_lo);
}

/* Every parity chunk of piece s's whole stripes (a gone member's too: the
 * log keeps it), then the log's one call for them.  Lock not held. */
static int raid_wb_log(struct raid_array *a, struct raid_wb_slot *s)
{
	struct raid_wb_par x = {a, s};
	char **part = calloc(a->n, sizeof(*part));
	int r = part ? exec_parallel(a->n, raid_wb_parity_one, &x) : -ENOMEM;

	if (r == 0)
		r = raid_piece_parts(a, &s->map, s->buf, s->whole_lo, part);
	if (r == 0)
		r = raid_parity_log_rows(a, part, (s->whole_hi - s->whole_lo) / a->wb->row,
		                         s->whole_lo, 0, &s->lg);
	free(part);
	return r;
}

/* Lane 0's turn at sealed piece s with a log: log its whole stripes, let
 * the lanes write them (its own part too), wait until every other lane
 * has passed s, tell the log, then the partial stripes.  Lock held. */
static void raid_wb_lane_logged(struct raid_array *a, struct raid_wb_slot *s, bool part,
                                bool partial)
{
	struct raid_wb *wb = a->wb;
	int r;

	if (a->log.overlap && wb->log_lanes) {
		/* logged by the log lane, ahead of the member lanes */
		while (!s->logged)
			pthread_cond_wait(&wb->done, &wb->lock);
		r = s->log_err;
	} else {
		pthread_mutex_unlock(&wb->lock);
		r = raid_wb_log(a, s);
		pthread_mutex_lock(&wb->lock);
		s->log_err = r;
		s->logged = true;
		pthread_cond_broadcast(&wb->done);
	}
	pthread_mutex_unlock(&wb->lock);
	int w = r == 0 && part ? raid_wb_lane_part(a, s, 0) : 0;
	if (r == 0 && a->log.overlap) {
		/* done() from whichever lane passes s last */
		if (partial)
			raid_wb_lane_partial(a, s);
		pthread_mutex_lock(&wb->lock);
		if (w && !s->write_err)
			s->write_err = w;
		return;
	}
	pthread_mutex_lock(&wb->lock);
	if (w && !s->write_err)
		s->write_err = w;
	while (s->left > 1)
		pthread_cond_wait(&wb->done, &wb->lock);
	w = s->write_err;
	pthread_mutex_unlock(&wb->lock);
	if (r == 0) {
		raid_parity_log_done(a, &s->lg, w);
	} else {
		/* Refused by the log: nothing of them was written. */
		uint64_t lo = s->whole_lo, hi = s->whole_hi;
		raid_wb_lane_direct(a, s, &lo, &hi, 1);
	}
	if (partial)
		raid_wb_lane_partial(a, s);
	pthread_mutex_lock(&wb->lock);
}

/* Wait for a sealed piece.  On a parity level a trailing partial stripe
 * held back for the stream goes out if the stream has not moved on
 * within RAID_WB_HOLD_NS.  Lock held. */
static void raid_wb_lane_wait(struct raid_array *a)
{
	struct raid_wb *wb = a->wb;
	struct raid_wb_slot *s = raid_wb_open_slot(wb);

	if (!wb->row || !s || s->fill == s->map.off) {
		pthread_cond_wait(&wb->work, &wb->lock);
		return;
	}
	uint64_t fill = s->fill, head = wb->head, t = clock_now_ns() + RAID_WB_HOLD_NS;
	struct timespec ts = {.tv_sec = (time_t)(t / 1000000000u),
	                      .tv_nsec = (long)(t % 1000000000u)};
	if (pthread_cond_timedwait(&wb->work, &wb->lock, &ts) == ETIMEDOUT && wb->head == head &&
	    raid_wb_open_slot(wb) == s && s->fill == fill)
		raid_wb_seal_now(a);
}

/* A lane has passed sealed piece s: the last one tells the log (an
 * overlap log's done()) and frees the slot.  Lock held. */
static void raid_wb_passed(struct raid_array *a, struct raid_wb_slot *s)
{
	struct raid_wb *wb = a->wb;

	if (--s->left == 0) {
		if (s->logging && a->log.overlap && !s->log_err) {
			int w = s->write_err;
			pthread_mutex_unlock(&wb->lock);
			raid_parity_log_done(a, &s->lg, w);
			pthread_mutex_lock(&wb->lock);
		}
		raid_wb_complete(a, s);
	} else if (s->logging) {
		pthread_cond_broadcast(&wb->done); /* lane 0 waits for the others */
	}
}

static void *raid_wb_lane_run(void *arg)
{
	struct raid_wb_lane *l = arg;
	struct raid_array *a = l->a;
	struct raid_wb *wb = a->wb;
	unsigned role = l->role;

	free(l);
	raid_wb_own = wb;
	pthread_mutex_lock(&wb->lock);
	for (;;) {
		if (wb->lane_at[role] == wb->head) {
			if (wb->stop)
				break;
			if (wb->tail == wb->head)
				raid_wb_seal_idle(a); /* the disks would idle */
			if (wb->lane_at[role] == wb->head)
				raid_wb_lane_wait(a);
			continue;
		}
		uint64_t i = wb->lane_at[role];
		struct raid_wb_slot *s = raid_wb_at(wb, i);
		bool part = raid_wb_has_part(s, role);
		bool partial = role == 0 && raid_wb_has_partial(wb, s);
		if (role == 0 && s->logging) {
			raid_wb_lane_logged(a, s, part, partial);
		} else {
			while (part && s->logging && !s->logged)
				pthread_cond_wait(&wb->done, &wb->lock);
			part = part && !(s->logging && s->log_err);
			if (part || partial) {
				pthread_mutex_unlock(&wb->lock);
				int r = part ? raid_wb_lane_part(a, s, role) : 0;
				if (partial)
					raid_wb_lane_partial(a, s);
				pthread_mutex_lock(&wb->lock);
				if (r && !s->write_err)
					s->write_err = r;
			}
		}
		wb->lane_at[role]++;
		raid_wb_passed(a, s);
	}
	pthread_mutex_unlock(&wb->lock);
	return NULL;
}

/* A log lane (parity levels): logs a sealed piece's whole stripes for a
 * log that allows overlap (the journal), as soon as the piece is sealed,
 * so that the log's append and flush of piece k+1 run while the member
 * lanes write piece k (the kernel writes the log ahead of the members the
 * same way); lane 0 waits for its answer instead of logging
 * (raid_wb_lane_logged).  RAID_WB_LOG_LANES of them take the sealed
 * pieces in turn, so that one computes a piece's parity and fills its
 * append (CPU work as long as a third of the log device's write) while
 * another waits for the log device: one lane alone left the log device
 * idle for that time, and a piece's log took as long as its member
 * writes (BENCHMARKS, j15).  The pieces' appends may reach the log in
 * either order: they never share a stripe.  The lane that takes a piece
 * passes it, logged or not, so that no slot is reused under it. */
static void *raid_wb_log_run(void *arg)
{
	struct raid_array *a = arg;
	struct raid_wb *wb = a->wb;

	raid_wb_own = wb; /* its log call's checkpoint waits for no piece */
	pthread_mutex_lock(&wb->lock);
	for (;;) {
		uint64_t i = wb->lane_at[a->n];
		if (i == wb->head) {
			if (wb->stop)
				break;
			pthread_cond_wait(&wb->work, &wb->lock);
			continue;
		}
		wb->lane_at[a->n]++; /* taken */
		struct raid_wb_slot *s = raid_wb_at(wb, i);
		if (s->logging && a->log.overlap) {
			pthread_mutex_unlock(&wb->lock);
			int r = raid_wb_log(a, s);
			pthread_mutex_lock(&wb->lock);
			s->log_err = r;
			s->logged = true;
			pthread_cond_broadcast(&wb->done);
		}
		raid_wb_passed(a, s);
	}
	pthread_mutex_unlock(&wb->lock);
	return NULL;
}

static int raid_wb_start(struct raid_array *a)
{
	struct raid_wb *wb = a->wb;

	while (wb->started < a->n) {
		struct raid_wb_lane *l = malloc(sizeof(*l));
		if (!l)
			return -ENOMEM;
		*l = (struct raid_wb_lane){a, wb->started};
		wb->lane_at[wb->started] = wb->head;
		if (pthread_create(&wb->thread[wb->started], NULL, raid_wb_lane_run, l) != 0) {
			free(l);
			return -EAGAIN;
		}
		wb->started++;
	}
	if (wb->row && !wb->log_lanes)
		wb->lane_at[a->n] = wb->head;
	while (wb->row && wb->log_lanes < RAID_WB_LOG_LANES) {
		if (pthread_create(&wb->thread[a->n + wb->log_lanes], NULL, raid_wb_log_run, a) !=
		    0)
			return -EAGAIN;
		wb->log_lanes++;
	}
	return 0;
}

/* Where a piece opened at off ends: the next piece boundary. */
static uint64_t raid_wb_end(struct raid_array *a, uint64_t off)
{
	uint64_t end = (off / a->wb->piece + 1) * a->wb->piece;
	return end < a->vol.size ? end : a->vol.size;
}

/* Parity levels: would a piece opened at off share a stripe with a sealed
 * piece not written yet?  (Then it waits for that one: see the top.)
 * Lock held. */
static bool raid_wb_shares_row(struct raid_array *a, uint64_t off)
{
	struct raid_wb *wb = a->wb;
	uint64_t row = wb->row;

	if (!row)
		return false;
	uint64_t lo = off / row, hi = (raid_wb_end(a, off) + row - 1) / row;
	for (uint64_t i = wb->tail; i < wb->head; i++) {
		const struct raid_wb_slot *s = raid_wb_at(wb, i);
		if (s->state == WB_SEALED && s->map.off / row < hi &&
		    lo < (s->fill + row - 1) / row)
			return true;
	}
	return false;
}

/* Open a piece at off, from there to the next piece boundary, in slot s
 * (free; at head, or after it when the open piece is being split).  Lock
 * held. */
static int raid_wb_open(struct raid_array *a, struct raid_wb_slot *s, uint64_t off)
{
	struct raid_wb *wb = a->wb;
	uint64_t end = raid_wb_end(a, off);
	int r;

	r = raid_piece_map_build(a, off, end - off, NULL, NULL, &s->map);
	if (r < 0)
		return r;
	if (s->cap < s->map.bytes) {
		free(s->buf);
		s->cap = 0;
		s->buf = vol_buf_alloc(s->map.bytes);
		if (!s->buf)
			return -ENOMEM;
		s->cap = s->map.bytes;
	}
	s->end = end;
	s->fill = off;
	s->state = WB_OPEN;
	atomic_fetch_add(&wb->pending, 1);
	return 0;
}

/* Is this write the stream's, to be written behind?  Lock held. */
static bool raid_wb_takes(struct raid_array *a, uint64_t len, uint64_t off, unsigned flags)
{
	struct raid_wb *wb = a->wb;

	wb->seq = off == wb->next ? wb->seq + 1 : 0;
	wb->next = off + len;
	int mode = atomic_load(&wb->mode);

	if (mode < 0 || (flags & VOL_FUA) || wb->writers > 1 ||
	    (wb->row && atomic_load(&wb->direct) > 1) ||
	    (a->log.direct && a->log.direct(a->log.ctx)))
		return false;
	if (mode == 0 && (wb->seq < 2 || len < RAID_WB_MIN_LEN || !raid_members_slow(a)))
		return false;
	if (raid_wb_start(a) < 0)
		return false;
	if (!wb->told) {
		log_info("%s: writing a stream behind, in pieces of %llu KiB", a->vol.name,
		         (unsigned long long)(wb->piece >> 10));
		wb->told = true;
	}
	return true;
}

int raid_wb_write(struct raid_array *a, const char *buf, uint64_t len, uint64_t off, unsigned flags)
{
	struct raid_wb *wb = a->wb;
	int r;

	if (!wb)
		return -EAGAIN;
	/* Parity levels: counted as a write that may go direct before
	 * looking at what is pending (see the top, and out:). */
	if (wb->row)
		atomic_fetch_add(&wb->direct, 1);
	/* Members that are not disks (or write-behind off) and nothing
	 * staged: straight through, without the lock every write would
	 * otherwise take (a RAM array at qd 32 would serialize on it). */
	int mode = atomic_load(&wb->mode);
	if (mode <= 0 && atomic_load(&wb->pending) == 0 && (mode < 0 || !raid_members_slow(a)))
		return -EAGAIN;
	pthread_mutex_lock(&wb->lock);
	wb->writers++;
	if (!raid_wb_takes(a, len, off, flags)) {
		raid_wb_drain_locked(a);
		r = wb->err ? wb->err : -EAGAIN;
		goto out;
	}
	while (len > 0) {
		struct raid_wb_slot *s = raid_wb_open_slot(wb);
		if (s && (off != s->fill || off >= s->end)) {
			raid_wb_seal(a, s);
			s = NULL;
		}
		if (!s) {
			while (wb->head - wb->tail >= wb->nslots || raid_wb_shares_row(a, off))
				pthread_cond_wait(&wb->done, &wb->lock);
			s = raid_wb_at(wb, wb->head);
			r = raid_wb_open(a, s, off);
			if (r == 0 && wb->row && atomic_load(&wb->direct) > 1) {
				/* A direct write began: it runs alone. */
				s->state = WB_FREE;
				atomic_fetch_sub(&wb->pending, 1);
				r = -EBUSY;
			}
			if (r < 0) {
				/* No memory or no live copy: the direct path
				 * writes the whole request (again) or reports. */
				raid_wb_drain_locked(a);
				r = -EAGAIN;
				goto out;
			}
		}
		r = wb->err;
		if (r)
			goto out;
		uint64_t n = s->end - off < len ? s->end - off : len;
		s->fill = off + n;
		s->copying++;
		pthread_mutex_unlock(&wb->lock);
		raid_ra_invalidate(a, n, off);
		r = raid_piece_copy(a, &s->map, s->buf, (char *)buf, n, off, true);
		pthread_mutex_lock(&wb->lock);
		s->copying--;
		pthread_cond_broadcast(&wb->done);
		if (r < 0)
			goto out; /* cannot happen: the piece was laid out for it */
		if (s->fill == s->end)
			raid_wb_seal(a, s);
		else if (wb->tail == wb->head)
			raid_wb_seal_idle(a);
		buf += n;
		off += n;
		len -= n;
	}
	r = 0;
out:
	wb->writers--;
	pthread_mutex_unlock(&wb->lock);
	if (wb->row && r != -EAGAIN)
		atomic_fetch_sub(&wb->direct, 1); /* not going direct after all */
	return r;
}

void raid_wb_direct_done(struct raid_array *a)
{
	if (a->wb && a->wb->row)
		atomic_fetch_sub(&a->wb->direct, 1);
}

int raid_wb_barrier(struct raid_array *a)
{
	struct raid_wb *wb = a->wb;
	int r;

	/* A lane's own flush (a journal's checkpoint in the log call it
	 * makes) waits for no piece: it would wait for itself, and what it
	 * needs on the members (writes that returned) is there. */
	if (!wb || atomic_load(&wb->pending) == 0 || raid_wb_own == wb)
		return wb ? wb->err : 0;
	pthread_mutex_lock(&wb->lock);
	raid_wb_drain_locked(a);
	r = wb->err;
	pthread_mutex_unlock(&wb->lock);
	return r;
}

void raid_wb_wait_range(struct raid_array *a, uint64_t len, uint64_t off)
{
	struct raid_wb *wb = a->wb;

	if (!wb || atomic_load(&wb->pending) == 0)
		return;
	pthread_mutex_lock(&wb->lock);
	for (;;) {
		bool held = false;
		for (uint64_t i = wb->tail; i <= wb->head && !held; i++) {
			struct raid_wb_slot *s = raid_wb_at(wb, i);
			if (s->state == WB_FREE || (i == wb->head && s->state != WB_OPEN))
				continue; /* written, or the ring is full and i is tail */
			held = off < s->fill && s->map.off < off + len;
		}
		if (!held)
			break;
		raid_wb_seal_now(a);
		pthread_cond_wait(&wb->done, &wb->lock);
	}
	pthread_mutex_unlock(&wb->lock);
}

int raid_wb_init(struct raid_array *a)
{
	struct raid_wb *wb = calloc(1, sizeof(*wb));
	unsigned width = a->n / a->copies ? a->n / a->copies : 1;
	uint64_t unit = a->g.chunk ? (uint64_t)a->g.chunk * a->n : 4096;
	uint64_t held = (uint64_t)width * a->copies; /* parts a piece stages */
	uint64_t part = RAID_WB_PART;
	const char *env = getenv("URAID_WB_PART");
	pthread_condattr_t ca;

	if (!wb)
		return -ENOMEM;
	if (env && strtoull(env, NULL, 0) >= 512)
		part = strtoull(env, NULL, 0);
	env = getenv("URAID_WB_MODE"); /* tests: 1 forces it on, as raid_set_writebehind */
	if (env)
		atomic_store(&wb->mode, raid_stage_mode(atoi(env)));
	if (a->lvl->md.parity) {
		/* A stripe is a chunk of every data disk; every member's
		 * part is staged, parity included. */
		width = a->n - a->lvl->md.parity;
		unit = wb->row = (uint64_t)a->g.chunk * width;
		held = a->n;
	}
	/* Pieces of whole stripes, RAID_WB_PART per data disk, as many as
	 * RAID_WB_MAX holds for every copy, down to one stripe. */
	wb->nslots = RAID_WB_SLOTS;
	while (part > unit / width && (uint64_t)wb->nslots * held * part > RAID_WB_MAX)
		part /= 2;
	wb->piece = (width * part + unit - 1) / unit * unit;
	wb->piece_max = wb->piece;
	uint64_t staged = a->lvl->md.parity ? wb->piece / width * held : wb->piece * a->copies;
	if ((uint64_t)wb->nslots * staged > 2 * (uint64_t)RAID_WB_MAX) {
		free(wb); /* stripes too wide to stage: write-behind off */
		return 0;
	}
	wb->slot = calloc(wb->nslots, sizeof(*wb->slot));
	wb->lane_at = calloc(a->n + 1, sizeof(*wb->lane_at));
	wb->thread = calloc(a->n + RAID_WB_LOG_LANES, sizeof(*wb->thread));
	if (!wb->slot || !wb->lane_at || !wb->thread) {
		free(wb->slot);
		free(wb->lane_at);
		free(wb->thread);
		free(wb);
		return -ENOMEM;
	}
	pthread_mutex_init(&wb->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* raid_wb_lane_wait() */
	pthread_cond_init(&wb->work, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&wb->done, NULL);
	a->wb = wb;
	return 0;
}

void raid_wb_destroy(struct raid_array *a)
{
	struct raid_wb *wb = a->wb;

	if (!wb)
		return;
	pthread_mutex_lock(&wb->lock);
	raid_wb_drain_locked(a);
	wb->stop = true;
	pthread_cond_broadcast(&wb->work);
	pthread_mutex_unlock(&wb->lock);
	for (unsigned i = 0; i < wb->started; i++)
		pthread_join(wb->thread[i], NULL);
	for (unsigned i = 0; i < wb->log_lanes; i++)
		pthread_join(wb->thread[a->n + i], NULL);
	for (unsigned i = 0; i < wb->nslots; i++) {
		raid_piece_map_free(&wb->slot[i].map);
		free(wb->slot[i].buf);
	}
	pthread_cond_destroy(&wb->done);
	pthread_cond_destroy(&wb->work);
	pthread_mutex_destroy(&wb->lock);
	free(wb->slot);
	free(wb->lane_at);
	free(wb->thread);
	free(wb);
	a->wb = NULL;
}

void raid_wb_counts_of(struct raid_array *a, uint64_t *whole, uint64_t *partial)
{
	*whole = *partial = 0;
	if (!a->wb)
		return;
	pthread_mutex_lock(&a->wb->lock);
	*whole = a->wb->whole;
	*partial = a->wb->partial;
	pthread_mutex_unlock(&a->wb->lock);
}

void raid_wb_set_log(struct raid_array *a, const struct raid_log_ops *ops)
{
	struct raid_wb *wb = a->wb;

	if (!wb) {
		a->log = ops ? *ops : (struct raid_log_ops){0};
		return;
	}
	pthread_mutex_lock(&wb->lock);
	raid_wb_drain_locked(a);
	a->log = ops ? *ops : (struct raid_log_ops){0};
	wb->piece = wb->piece_max;
	if (ops && wb->row && wb->piece > RAID_PARITY_BATCH * wb->row)
		wb->piece = RAID_PARITY_BATCH * wb->row;
	pthread_mutex_unlock(&wb->lock);
}

int raid_wb_set_mode(struct raid_array *a, int mode)
{
	if (!a->wb)
		return mode > 0 ? -ENOTSUP : 0;
	pthread_mutex_lock(&a->wb->lock);
	atomic_store(&a->wb->mode, raid_stage_mode(mode));
	if (mode < 0)
		raid_wb_drain_locked(a);
	pthread_mutex_unlock(&a->wb->lock);
	return 0;
}

int raid_wb_mode(struct raid_array *a)
{
	return a->wb ? atomic_load(&a->wb->mode) : -1;
}
