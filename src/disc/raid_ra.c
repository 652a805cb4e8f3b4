/* raid_ra.c — read-ahead for sequential streams, the part of the RAID
 * engine that lets one reader with one request in flight get the bandwidth
 * of every disk.  The engine (raid.c) calls raid_ra_read() before reading
 * directly, and raid_ra_invalidate() around every change of the array.
 */
#include "raid_internal.h"

#include "core/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/*
 * A single reader with one request in flight keeps only one disk busy at a
 * time, however each request is split: on a mirror every disk would skip
 * what the others read, and on the disk model (as on a disk) the platter
 * keeps turning under the head.  So once a stream is seen (three
 * back-to-back reads of >= 64 KiB) on slow members (under 1 GiB/s,
 * measured), the array is read ahead in pieces of whole stripes.  The
 * pieces are dealt to the copies in stretches: stretch t is read from copy
 * t % copies of every extent, so on a mirror each disk streams a long
 * stretch of its own and then skips the others' at the cost of at most one
 * rotation (docs/raid.md works the numbers).
 *
 * Every member has a lane thread that reads its parts of the pieces in
 * piece order, each part one transfer straight into its place in the
 * piece's buffer (laid out member-major by raid_piece.c; the reader's copy
 * out does the gather), and goes on to its next part without waiting for
 * the other disks: no disk waits for the slowest one.
 *
 * Pieces live in a ring of K slots covering the window [F, F+K) of pieces
 * from the reader's position F; piece p goes to slot p % K.  Lanes only
 * read inside the window, so memory is K pieces whatever the stream does; K leaves room for the other copies' stretches
 * ahead of the reader.  Writes, trims and zeroes drop the pieces they
 * overlap before and after they run, so a piece read while one ran is read
 * again, never served.
 *
 * RAID5/6: a piece is whole stripes and every member reads its chunks of
 * them, parity included, in one transfer (raid_piece.c lays them out), so
 * no disk skips the parity chunks between its data chunks -- a skip costs
 * the disk models, like a disk, up to a rotation -- and the data disks'
 * worth arrives at the disks' full speed; the copy out takes the data and
 * leaves the parity.  Only while every member is live: a piece that would
 * need a gone member is left to the direct path, which rebuilds. */

#define RAID_RA_STRETCH (64u << 20)       /* per mirror disk */
#define RAID_RA_PIECE (2u << 20)          /* per data disk */
#define RAID_RA_MAX (256u << 20)          /* all slots' buffers together */

enum raid_ra_state { RA_EMPTY, RA_FILLING, RA_READY, RA_FAILED };
enum raid_ra_part { PART_NONE, PART_NEED, PART_BUSY, PART_DONE };

struct raid_ra_slot {
	uint64_t piece; /* piece held or being read */
	uint64_t gen;   /* bumped when the slot's content is invalidated */
	enum raid_ra_state state;
	unsigned loading; /* parts being read now */
	unsigned left;    /* parts still to read */
	bool stale;       /* invalidated while parts were being read */
	unsigned char *part; /* per member: enum raid_ra_part */
	struct raid_piece_map map; /* where each member's part goes in buf */
	char *buf;
};

struct raid_ra {
	pthread_mutex_t lock;
	pthread_cond_t work; /* lanes wait for parts to read */
	pthread_cond_t done; /* readers wait for pieces read */
	uint64_t piece;   /* bytes of the array a piece covers */
	uint64_t buf_len; /* bytes a piece's buffer holds (parity levels: all
			   * members' chunks, so more than piece) */
	uint64_t stretch; /* pieces read from the same copy in a row */
	unsigned nslots;  /* K */
	uint64_t npieces; /* in the array */
	struct raid_ra_slot *slot;
	pthread_t *thread;
	unsigned started; /* lane threads running (0 until the first stream) */
	bool stop;
	uint64_t front;   /* F: the piece the reader needs next */
	uint64_t origin;  /* the piece the current stream started at */
	bool reading;     /* a reader is being served (one at a time) */
	int mode;         /* raid_set_readahead() */
	uint64_t next;    /* where the last read ended */
	unsigned seq;     /* back-to-back reads so far */
};

struct raid_ra_lane {
	struct raid_array *a;
	unsigned role;
};

/* The stretch piece p belongs to.  Stretches start at one piece where the
 * stream began and double up to ra->stretch, so every copy is busy from the
 * stream's first request (a short stream reads at N disks' speed too),
 * while a long one still skips at most one rotation per full stretch. */
static uint64_t raid_ra_stretch_of(const struct raid_ra *ra, uint64_t p)
{
	uint64_t rel = p >= ra->origin ? p - ra->origin : p;
	uint64_t t = 0;

	for (uint64_t len = 1; len < ra->stretch; len *= 2, t++) {
		if (rel < len)
			return t;
		rel -= len;
	}
	return t + rel / ra->stretch;
}

/* The copy of [off, off+len) that piece p reads: its stretch's copy if
 * live, else the first live one.  Returns the loc index or -1. */
static int raid_ra_copy(struct raid_array *a, const struct raid_loc *loc,
			unsigned nc, uint64_t p)
{
	unsigned want = (unsigned)(raid_ra_stretch_of(a->ra, p) % nc);

	if (!atomic_load(&a->m[loc[want].role].failed))
		return (int)want;
	for (unsigned c = 0; c < nc; c++)
		if (!atomic_load(&a->m[loc[c].role].failed))
			return (int)c;
	return -1;
}

static int raid_ra_pick(struct raid_array *a, const struct raid_loc *loc,
			unsigned nc, void *ctx)
{
	int c = raid_ra_copy(a, loc, nc, *(const uint64_t *)ctx);
	return c < 0 ? RAID_PICK_NONE : c;
}

/* A parity level with a member gone: its pieces cannot be read whole. */
static bool raid_ra_parity_degraded(struct raid_array *a)
{
	for (unsigned r = 0; a->lvl->parity && r < a->n; r++)
		if (atomic_load(&a->m[r].failed))
			return true;
	return false;
}

/* Lay piece p out in slot s and mark which members have a part of it.
 * Returns the number of parts, or -1 if a block has no live copy or
 * memory ran out. */
static int raid_ra_layout(struct raid_array *a, struct raid_ra_slot *s, uint64_t p)
{
	uint64_t start = p * a->ra->piece;
	uint64_t len = a->vol.size - start < a->ra->piece ? a->vol.size - start : a->ra->piece;
	const struct raid_runs *rs = &s->map.stage;
	int count = 0;

	if (raid_ra_parity_degraded(a))
		return -1; /* the direct path rebuilds what is gone */
	if (raid_piece_map_build(a, start, len, raid_ra_pick, &p, &s->map) < 0 ||
	    s->map.bytes > a->ra->buf_len)
		return -1;
	for (unsigned r = 0; r < a->n; r++) {
		bool has = rs->first[r] < rs->first[r + 1];
		s->part[r] = has ? PART_NEED : PART_NONE;
		count += has;
	}
	return count;
}

/* Read role's part of the piece in s straight into its place in the
 * buffer: one transfer per run (runs are contiguous on the member). */
static int raid_ra_read_part(struct raid_array *a, struct raid_ra_slot *s,
			     unsigned role)
{
	struct raid_member *m = &a->m[role];
	struct vol *v = m->vol;
	const struct raid_runs *rs = &s->map.stage;
	int r = 0;

	atomic_fetch_add(&m->inflight, 1);
	for (unsigned i = rs->first[role]; i < rs->first[role + 1] && !r; i++) {
		const struct raid_run *run = &rs->run[i];
		for (uint64_t at = run->moff; at < run->moff + run->len && !r;) {
			uint64_t n = run->moff + run->len - at;
			if (n > v->block_max)
				n = v->block_max;
			uint64_t t0 = raid_now_ns();
			r = v->ops->read(v, s->buf + run->pos + (at - run->moff), n, at);
			if (!r)
				raid_note_speed(m, raid_now_ns() - t0, n);
			at += n;
			atomic_store(&m->last_end, at);
		}
	}
	atomic_fetch_sub(&m->inflight, 1);
	return r;
}

/* The next piece this lane has a part of, in the window and in order.
 * Sets up slots for pieces nobody has started.  Caller holds the lock.
 * Returns UINT64_MAX if there is nothing to do yet. */
static uint64_t raid_ra_next_part(struct raid_array *a, unsigned role)
{
	struct raid_ra *ra = a->ra;
	uint64_t end = ra->front + ra->nslots;

	if (end > ra->npieces)
		end = ra->npieces;
	for (uint64_t p = ra->front; p < end; p++) {
		struct raid_ra_slot *s = &ra->slot[p % ra->nslots];
		if (s->piece != p || s->state == RA_EMPTY) {
			if (s->loading)
				return UINT64_MAX; /* busy with an older piece */
			s->piece = p;
			s->gen++;
			s->stale = false;
			s->state = RA_FILLING;
			int n = raid_ra_layout(a, s, p);
			if (n < 0) {
				s->state = RA_FAILED;
				pthread_cond_broadcast(&ra->done); /* the reader goes direct */
				continue;
			}
			s->left = (unsigned)n;
		}
		if (s->state == RA_FILLING && !s->stale && s->part[role] == PART_NEED)
			return p;
	}
	return UINT64_MAX;
}

static void *raid_ra_lane_run(void *arg)
{
	struct raid_ra_lane *l = arg;
	struct raid_array *a = l->a;
	struct raid_ra *ra = a->ra;

	pthread_mutex_lock(&ra->lock);
	while (!ra->stop) {
		uint64_t p = atomic_load(&a->m[l->role].failed) ? UINT64_MAX
								: raid_ra_next_part(a, l->role);
		if (p == UINT64_MAX) {
			pthread_cond_wait(&ra->work, &ra->lock);
			continue;
		}
		struct raid_ra_slot *s = &ra->slot[p % ra->nslots];
		uint64_t gen = s->gen;
		s->part[l->role] = PART_BUSY;
		s->loading++;
		pthread_mutex_unlock(&ra->lock);
		int r = raid_ra_read_part(a, s, l->role);
		pthread_mutex_lock(&ra->lock);
		s->loading--;
		if (s->gen != gen || s->stale) {
			if (s->loading == 0)
				s->state = RA_EMPTY; /* invalidated meanwhile: read again */
		} else if (r) {
			s->state = RA_FAILED; /* the direct path reports or recovers */
		} else {
			s->part[l->role] = PART_DONE;
			if (--s->left == 0)
				s->state = RA_READY;
		}
		pthread_cond_broadcast(&ra->done);
		pthread_cond_broadcast(&ra->work);
	}
	pthread_mutex_unlock(&ra->lock);
	free(l);
	return NULL;
}

int raid_ra_init(struct raid_array *a)
{
	struct raid_ra *ra = calloc(1, sizeof(*ra));
	uint64_t cap = RAID_RA_MAX, unit, stretch = RAID_RA_STRETCH;
	const char *env = getenv("URAID_RA_MAX");

	if (!ra)
		return -ENOMEM;
	if (env)
		cap = strtoull(env, NULL, 0);
	env = getenv("URAID_RA_STRETCH");
	if (env && strtoull(env, NULL, 0) >= 4096)
		stretch = strtoull(env, NULL, 0);
	/* A piece gives each data disk RAID_RA_PIECE (1 MiB on RAID0 and
	 * RAID5/6), in whole stripes. */
	unsigned width = a->n / a->copies ? a->n / a->copies : 1;
	unit = a->g.chunk ? (uint64_t)a->g.chunk * a->n : 4096;
	if (a->lvl->parity) {
		width = a->n - a->lvl->parity;
		unit = (uint64_t)a->g.chunk * width;
	}
	uint64_t per_disk = a->copies > 1 ? RAID_RA_PIECE : 1u << 20;
	env = getenv("URAID_RA_PIECE");
	if (env && strtoull(env, NULL, 0) >= 4096)
		per_disk = strtoull(env, NULL, 0);
	ra->piece = (uint64_t)width * per_disk;
	ra->piece = (ra->piece + unit - 1) / unit * unit;
	ra->buf_len = a->lvl->parity ? ra->piece / width * a->n : ra->piece;
	ra->stretch = a->copies > 1 ? (stretch * width + ra->piece - 1) / ra->piece : 1;
	if (ra->stretch == 0)
		ra->stretch = 1;
	/* Room for a whole stretch of every copy ahead of the reader, and two
	 * pieces per copy of slack, so that no lane waits for the reader in
	 * a steady stream; shorter stretches if that exceeds the cap. */
	for (;;) {
		ra->nslots = (unsigned)(a->copies * ra->stretch + 2 * a->copies);
		if (a->copies == 1)
			ra->nslots = 4;
		if (ra->stretch == 1 || ra->nslots * ra->buf_len <= cap)
			break;
		ra->stretch /= 2;
	}
	ra->npieces = (a->vol.size + ra->piece - 1) / ra->piece;
	if (cap == 0 || ra->buf_len > (256u << 20) || ra->nslots * ra->buf_len > 2 * cap) {
		free(ra); /* read-ahead off */
		return 0;
	}
	ra->slot = calloc(ra->nslots, sizeof(*ra->slot));
	ra->thread = calloc(a->n, sizeof(*ra->thread));
	if (!ra->slot || !ra->thread)
		goto nomem;
	for (unsigned i = 0; i < ra->nslots; i++) {
		ra->slot[i].part = calloc(a->n, 1);
		if (!ra->slot[i].part)
			goto nomem;
	}
	pthread_mutex_init(&ra->lock, NULL);
	pthread_cond_init(&ra->work, NULL);
	pthread_cond_init(&ra->done, NULL);
	a->ra = ra;
	return 0;
nomem:
	for (unsigned i = 0; ra->slot && i < ra->nslots; i++)
		free(ra->slot[i].part);
	free(ra->slot);
	free(ra->thread);
	free(ra);
	return -ENOMEM;
}

void raid_ra_destroy(struct raid_array *a)
{
	struct raid_ra *ra = a->ra;

	if (!ra)
		return;
	pthread_mutex_lock(&ra->lock);
	ra->stop = true;
	pthread_cond_broadcast(&ra->work);
	pthread_mutex_unlock(&ra->lock);
	for (unsigned i = 0; i < ra->started; i++)
		pthread_join(ra->thread[i], NULL);
	for (unsigned i = 0; i < ra->nslots; i++) {
		free(ra->slot[i].buf);
		free(ra->slot[i].part);
		raid_piece_map_free(&ra->slot[i].map);
	}
	pthread_cond_destroy(&ra->done);
	pthread_cond_destroy(&ra->work);
	pthread_mutex_destroy(&ra->lock);
	free(ra->slot);
	free(ra->thread);
	free(ra);
	a->ra = NULL;
}

/* Start the lanes and allocate the slots on the first stream.  Caller
 * holds ra->lock.  Returns false if that failed (read-ahead stays off). */
static bool raid_ra_start(struct raid_array *a)
{
	struct raid_ra *ra = a->ra;

	if (ra->started == a->n)
		return true;
	for (unsigned i = 0; i < ra->nslots; i++) {
		if (!ra->slot[i].buf)
			ra->slot[i].buf = malloc(ra->buf_len);
		if (!ra->slot[i].buf)
			return false;
	}
	while (ra->started < a->n) {
		struct raid_ra_lane *l = calloc(1, sizeof(*l));
		if (!l)
			return false;
		l->a = a;
		l->role = ra->started;
		if (pthread_create(&ra->thread[ra->started], NULL, raid_ra_lane_run, l) != 0) {
			free(l);
			return false;
		}
		ra->started++;
	}
	return true;
}

/* Forget every piece read ahead; pieces being read are read again when
 * next needed.  Caller holds the lock. */
static void raid_ra_drop(struct raid_ra *ra)
{
	for (unsigned i = 0; i < ra->nslots; i++) {
		struct raid_ra_slot *s = &ra->slot[i];
		if (s->loading)
			s->stale = true;
		else if (s->state != RA_EMPTY)
			s->state = RA_EMPTY;
	}
}

/* Serve a read from read-ahead when it continues a stream.  Returns
 * -EAGAIN when the caller should read directly. */
int raid_ra_read(struct raid_array *a, char *buf, uint64_t len, uint64_t off)
{
	struct raid_ra *ra = a->ra;
	int r = -EAGAIN;

	if (!ra)
		return -EAGAIN;
	pthread_mutex_lock(&ra->lock);
	ra->seq = off == ra->next ? ra->seq + 1 : 0;
	ra->next = off + len;
	/* A read that neither continues the stream nor falls in its window
	 * ends it: the lanes stop reading ahead at once (an empty window)
	 * instead of filling the window for a reader that has gone, on the
	 * disks the next stream's first, direct, reads need.  That cost a
	 * new stream on RAID5 of four models 90 ms, a fifth of a 0.4 s run.
	 * Not while the stream's reader waits in here for a piece. */
	uint64_t at = off / ra->piece;
	if (ra->seq == 0 && !ra->reading && ra->front < ra->npieces &&
	    (at < ra->front || at >= ra->front + ra->nslots)) {
		ra->front = ra->npieces;
		raid_ra_drop(ra);
	}
	if (ra->mode < 0 ||
	    (ra->mode == 0 && (ra->seq < 2 || len < (64u << 10) || !raid_members_slow(a))))
		goto out;
	/* A degraded RAID5/6 rebuilds on the direct path (raid_ra_layout). */
	if (raid_ra_parity_degraded(a))
		goto out;
	/* One stream at a time: the window follows one reader, and a second
	 * reader moving it could leave the first waiting for a piece no lane
	 * will read.  Concurrent readers go direct. */
	if (ra->reading || !raid_ra_start(a))
		goto out;
	ra->reading = true;
	uint64_t front = off / ra->piece;
	if (front < ra->front || front >= ra->front + ra->nslots) {
		raid_ra_drop(ra); /* a new stream: what the old one left is not ours */
		ra->origin = front;
	}
	ra->front = front;
	pthread_cond_broadcast(&ra->work);
	while (len > 0) {
		uint64_t p = off / ra->piece;
		struct raid_ra_slot *s = &ra->slot[p % ra->nslots];
		uint64_t in = off - p * ra->piece;
		uint64_t n = ra->piece - in < len ? ra->piece - in : len;
		while (!(s->piece == p && (s->state == RA_READY || s->state == RA_FAILED)))
			pthread_cond_wait(&ra->done, &ra->lock);
		if (s->state == RA_FAILED) {
			s->state = s->loading ? RA_FAILED : RA_EMPTY; /* try again later */
			r = -EAGAIN; /* the direct path reports or recovers */
			break;
		}
		if (raid_piece_copy(a, &s->map, s->buf, buf, n, off, false) < 0) {
			r = -EAGAIN; /* cannot happen: the piece was laid out whole */
			break;
		}
		buf += n;
		off += n;
		len -= n;
		if (n == ra->piece - in) {
			/* Piece consumed: drop it (read-ahead, not a cache: a
			 * second pass reads the disks again) and move on. */
			s->state = RA_EMPTY;
			ra->front = p + 1;
			pthread_cond_broadcast(&ra->work);
		}
		r = 0;
	}
	ra->reading = false;
out:
	pthread_mutex_unlock(&ra->lock);
	return r;
}

/* Forget what slot s holds: it is read again when next needed (parts
 * being read now are thrown away when they land).  Caller holds the lock. */
static void raid_ra_slot_forget(struct raid_ra_slot *s)
{
	s->gen++;
	if (s->loading)
		s->stale = true;
	else
		s->state = RA_EMPTY;
}

void raid_ra_invalidate(struct raid_array *a, uint64_t len, uint64_t off)
{
	struct raid_ra *ra = a->ra;
	bool dropped = false;

	if (!ra || len == 0)
		return;
	pthread_mutex_lock(&ra->lock);
	for (unsigned i = 0; i < ra->nslots; i++) {
		struct raid_ra_slot *s = &ra->slot[i];
		uint64_t start = s->piece * ra->piece;
		if (s->state == RA_EMPTY || off >= start + ra->piece || start >= off + len)
			continue;
		raid_ra_slot_forget(s);
		dropped = true;
	}
	if (dropped)
		pthread_cond_broadcast(&ra->work);
	pthread_mutex_unlock(&ra->lock);
}

/* A member failed: pieces waiting for a part from it are set up again
 * from the live copies (its lane reads no more). */
void raid_ra_member_failed(struct raid_array *a, unsigned role)
{
	struct raid_ra *ra = a->ra;

	if (!ra)
		return;
	pthread_mutex_lock(&ra->lock);
	for (unsigned i = 0; i < ra->nslots; i++) {
		struct raid_ra_slot *s = &ra->slot[i];
		if (s->state != RA_FILLING || s->part[role] != PART_NEED)
			continue;
		raid_ra_slot_forget(s);
	}
	pthread_cond_broadcast(&ra->work);
	pthread_cond_broadcast(&ra->done);
	pthread_mutex_unlock(&ra->lock);
}

int raid_set_readahead(struct vol *array, int mode)
{
	struct raid_array *a = raid_array_of(array);

	if (!a)
		return -EINVAL;
	if (!a->ra)
		return mode > 0 ? -ENOTSUP : 0;
	pthread_mutex_lock(&a->ra->lock);
	a->ra->mode = raid_stage_mode(mode);
	pthread_mutex_unlock(&a->ra->lock);
	return 0;
}
