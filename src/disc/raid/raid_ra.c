/* raid_ra.c — read-ahead for sequential streams, the part of the RAID
 * engine that lets one reader with one request in flight get the bandwidth
 * of every disk.  The engine (raid.c) calls raid_ra_read() before reading
 * directly, and raid_ra_invalidate() around every change of the array.
 */
#include "raid_types.h"
#include "raid_ra_sched.h"

#include "core/log.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/*
 * A single reader with one request in flight keeps only one disk busy at a
 * time, however each request is split: on a mirror every disk would skip
 * what the others read, and on the disk model (as on a disk) the platter
 * keeps turning under the head.  So once a stream is seen (two
 * back-to-back reads of >= 64 KiB) on slow members (under 1 GiB/s,
 * measured), the array is read ahead in pieces of whole stripes.  The
 * pieces are dealt to the copies in stretches of consecutive pieces, each
 * to the copy that will be free first and as long as the stream's age asks
 * for (raid_ra_sched.h), so on a mirror each disk streams a stretch of its
 * own and then skips the others' at the cost of at most one rotation, and
 * a stream cut short leaves little read for nobody (docs/raid.md works
 * the numbers).
 *
 * Every member has a lane thread that reads its parts of the pieces in
 * piece order straight into their places in the piece's buffer (laid out
 * member-major by raid_piece.c; the reader's copy out does the gather),
 * and goes on to its next part without waiting for the other disks: no
 * disk waits for the slowest one.
 *
 * Pieces live in a ring of K slots covering the window [F, F+K) of pieces
 * from the reader's position F; piece p goes to slot p % K.  Lanes only
 * read inside the window, so memory is K pieces whatever the stream does; K leaves room for the
 * other copies' stretches ahead of the reader.  Writes, trims and zeroes drop the pieces they
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

#define RAID_RA_STRETCH (64u << 20)  /* per mirror disk */
#define RAID_RA_PIECE (2u << 20)     /* per data disk */
#define RAID_RA_MAX (256u << 20)     /* all slots' buffers together */
#define RAID_RA_XFER (512u << 10)    /* a young stream's lane transfers */
#define RAID_RA_YOUNG_NS 1000000000u /* a stream is young for 1 s */
/* A stream is seen at its second back-to-back read (of >= 64 KiB): every
 * read before it goes to one disk. */
#define RAID_RA_SEQ 1
/* The stretch schedule's model of a disk (raid_ra_sched.h): what a copy
 * loses skipping the others' stretch (a 7200 rpm rotation), what one that
 * must seek to a stream's start loses (a seek and half a rotation), and
 * how a stretch grows with the stream's age t: RAID_RA_GROW * sqrt(skip *
 * t) of transfer (docs/raid.md derives it). */
#define RAID_RA_SKIP_NS 8333333u
#define RAID_RA_SEEK_NS 12700000u
#define RAID_RA_GROW 3
/* A stretch is at least this many skips long (133 ms of transfer at a
 * 7200 rpm rotation): shorter ones lose more to skipping than they save
 * at a stream's end, even for a stream of a few tenths of a second. */
#define RAID_RA_FLOOR_SKIPS 16

enum raid_ra_state { RA_EMPTY, RA_FILLING, RA_READY, RA_FAILED };
enum raid_ra_part { PART_NONE, PART_NEED, PART_BUSY, PART_DONE };

struct raid_ra_slot {
	uint64_t piece; /* piece held or being read */
	uint64_t gen;   /* bumped when the slot's content is invalidated */
	enum raid_ra_state state;
	unsigned loading;          /* parts being read now */
	unsigned left;             /* parts still to read */
	bool stale;                /* invalidated while parts were being read */
	unsigned char *part;       /* per member: enum raid_ra_part */
	struct raid_piece_map map; /* where each member's part goes in buf */
	char *buf;
};

struct raid_ra {
	pthread_mutex_t lock;
	pthread_cond_t work; /* lanes wait for parts to read */
	pthread_cond_t done; /* readers wait for pieces read */
	uint64_t piece;      /* bytes of the array a piece covers */
	uint64_t buf_len;    /* bytes a piece's buffer holds (parity levels: all
	                      * members' chunks, so more than piece) */
	uint64_t stretch;    /* pieces read from the same copy in a row */
	unsigned nslots;     /* K */
	uint64_t npieces;    /* in the array */
	struct raid_ra_slot *slot;
	pthread_t *thread;
	unsigned started; /* lane threads running (0 until the first stream) */
	bool stop;
	uint64_t front;             /* F: the piece the reader needs next */
	uint64_t origin;            /* the piece the current stream started at */
	bool reading;               /* a reader is being served (one at a time) */
	int mode;                   /* raid_set_readahead() */
	uint64_t next;              /* where the last read ended */
	unsigned seq;               /* back-to-back reads so far */
	uint64_t first;             /* where in piece origin the stream started (bytes) */
	bool served;                /* the stream's reads continued and were served */
	uint64_t xfer;              /* a lane's longest transfer */
	uint64_t disk_bytes;        /* a piece's bytes on each disk it touches */
	struct raid_ra_sched sched; /* which copy reads which stretch */
};

struct raid_ra_lane {
	struct raid_array *a;
	unsigned role;
};

/* ---- the stretch schedule (raid_ra_sched.h) ---- */

int raid_ra_sched_init(struct raid_ra_sched *s, unsigned copies, uint64_t max, unsigned cap)
{
	*s = (struct raid_ra_sched){
	    .copies = copies < RAID_RA_SCHED_COPIES ? copies : RAID_RA_SCHED_COPIES,
	    .max = max ? max : 1,
	    .piece_ns = 1,
	    .skip_ns = RAID_RA_SKIP_NS,
	    .grow = RAID_RA_GROW,
	    .floor = RAID_RA_FLOOR_SKIPS,
	    .limit = UINT64_MAX,
	    .cap = cap < 2 ? 2 : cap,
	};
	s->ring = calloc(s->cap, sizeof(*s->ring));
	return s->ring ? 0 : -ENOMEM;
}

void raid_ra_sched_free(struct raid_ra_sched *s)
{
	free(s->ring);
	s->ring = NULL;
}

void raid_ra_sched_begin(struct raid_ra_sched *s, uint64_t origin, uint64_t piece_ns,
                         const uint64_t *delay_ns)
{
	s->dealt = origin;
	s->piece_ns = piece_ns ? piece_ns : 1;
	for (unsigned c = 0; c < s->copies; c++) {
		s->clock[c] = delay_ns ? delay_ns[c] : 0;
		s->end[c] = UINT64_MAX;
	}
	s->head = 0;
	s->n = 0;
}

/* Deal the next stretch to the copy that will be free first (ties to the
 * lowest), as long as the stream's age when it starts asks for. */
static void raid_ra_sched_deal(struct raid_ra_sched *s)
{
	unsigned c = 0;

	for (unsigned i = 1; i < s->copies; i++)
		if (s->clock[i] < s->clock[c])
			c = i;
	uint64_t t = s->clock[c], latest = 0;
	if (s->end[c] != UINT64_MAX && s->end[c] != s->dealt)
		t += s->skip_ns;
	for (unsigned i = 0; i < s->copies; i++)
		if (i != c && s->clock[i] > latest)
			latest = s->clock[i];
	/* The stretch x the stream's age asks for, but at least floor
	 * skips long and a piece for every copy.  It
	 * ends x / copies after the copy that will be free last, so the
	 * copies' stretches end evenly spread: the reader, waiting on the
	 * copy whose stretch it is in, has the others' ready behind it, and
	 * a stream cut short leaves less read for nobody than if all ended
	 * together. */
	double x = s->grow * sqrt((double)s->skip_ns * (double)t);
	if (x < (double)s->floor * (double)s->skip_ns)
		x = (double)s->floor * (double)s->skip_ns;
	if (x < (double)s->copies * (double)s->piece_ns)
		x = (double)s->copies * (double)s->piece_ns;
	double until = (double)(latest > t ? latest : t) + x / s->copies;
	uint64_t len = (uint64_t)((until - (double)t) / (double)s->piece_ns + 0.5);
	/* Near the end of the array, the pieces left shared among the
	 * copies: one copy reading the last long stretch alone would keep
	 * the reader waiting at one disk's speed. */
	uint64_t left = s->limit > s->dealt ? s->limit - s->dealt : 1;
	if (len * s->copies > left)
		len = (left + s->copies - 1) / s->copies;
	if (len < 1)
		len = 1;
	if (len > s->max)
		len = s->max;
	if (s->n == s->cap) { /* cannot happen with cap as documented */
		s->head = (s->head + 1) % s->cap;
		s->n--;
	}
	s->ring[(s->head + s->n++) % s->cap] = (struct raid_ra_stretch){s->dealt, c};
	s->dealt += len;
	s->clock[c] = t + len * s->piece_ns;
	s->end[c] = s->dealt;
}

/* Forget the stretches that end at or before front. */
static void raid_ra_sched_prune(struct raid_ra_sched *s, uint64_t front)
{
	while (s->n > 1 && s->ring[(s->head + 1) % s->cap].start <= front) {
		s->head = (s->head + 1) % s->cap;
		s->n--;
	}
}

unsigned raid_ra_sched_copy(struct raid_ra_sched *s, uint64_t p, uint64_t front)
{
	if (s->copies <= 1)
		return 0;
	if (s->dealt < front)
		s->dealt = front;
	raid_ra_sched_prune(s, front);
	while (s->dealt <= p)
		raid_ra_sched_deal(s);
	raid_ra_sched_prune(s, front);
	for (unsigned i = s->n; i-- > 0;) {
		const struct raid_ra_stretch *e = &s->ring[(s->head + i) % s->cap];
		if (e->start <= p)
			return e->copy;
	}
	return s->ring[s->head].copy; /* p before front: not asked for */
}

/* The copy of [off, off+len) that piece p reads: its stretch's copy if
 * live, else the first live one.  Returns the loc index or -1. */
static int raid_ra_copy(struct raid_array *a, const struct raid_loc *loc, unsigned nc, uint64_t p)
{
	struct raid_ra *ra = a->ra;
	unsigned want = raid_ra_sched_copy(&ra->sched, p, ra->front) % nc;

	if (!atomic_load(&a->m[loc[want].role].failed) && !raid_read_avoid(a, loc, nc, want, 0))
		return (int)want;
	for (unsigned c = 0; c < nc; c++)
		if (!atomic_load(&a->m[loc[c].role].failed) && !raid_read_avoid(a, loc, nc, c, 0))
			return (int)c;
	return -1;
}

static int raid_ra_pick(struct raid_array *a, const struct raid_loc *loc, unsigned nc, void *ctx)
{
	int c = raid_ra_copy(a, loc, nc, *(const uint64_t *)ctx);
	return c < 0 ? RAID_PICK_NONE : c;
}

/* A parity level with a member gone: its pieces cannot be read whole. */
static bool raid_ra_parity_degraded(struct raid_array *a)
{
	for (unsigned r = 0; a->lvl->md.parity && r < a->n; r++)
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

	/* The stream's first piece from where the stream began: its start
	 * was read directly, and reading it again would cost a disk that
	 * much of the stream's first milliseconds. */
	if (p == a->ra->origin && a->ra->first > start && a->ra->first < start + len) {
		len -= a->ra->first - start;
		start = a->ra->first;
	}
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

/* Whether the part of slot s a lane took at generation gen is still
 * wanted: not when the slot was invalidated or the stream ended since. */
static bool raid_ra_part_wanted(struct raid_ra *ra, struct raid_ra_slot *s, uint64_t gen)
{
	pthread_mutex_lock(&ra->lock);
	bool wanted = !ra->stop && s->gen == gen && !s->stale;
	pthread_mutex_unlock(&ra->lock);
	return wanted;
}

/* Read role's part of the piece in s straight into its place in the
 * buffer, in transfers of at most most bytes along each run (runs are
 * contiguous on the member).  Between transfers it stops with -ECANCELED
 * once the part is no longer wanted: a stream's next one (a new stream's
 * first reads, direct) then waits for one short transfer on the disk,
 * not for a whole part read for nobody. */
static int raid_ra_read_part(struct raid_array *a, struct raid_ra_slot *s, uint64_t most,
                             unsigned role, uint64_t gen)
{
	struct raid_member *m = &a->m[role];
	struct vol *v = m->vol;
	const struct raid_runs *rs = &s->map.stage;
	struct raid_ra *ra = a->ra;
	bool first = true;

	if (most > v->block_max)
		most = v->block_max;
	int r = 0;

	atomic_fetch_add(&m->inflight, 1);
	for (unsigned i = rs->first[role]; i < rs->first[role + 1] && !r; i++) {
		const struct raid_run *run = &rs->run[i];
		for (uint64_t at = run->moff; at < run->moff + run->len && !r;) {
			uint64_t n = run->moff + run->len - at;
			if (n > most)
				n = most;
			if (!first && !raid_ra_part_wanted(ra, s, gen)) {
				r = -ECANCELED;
				break;
			}
			first = false;
			r = raid_member_read(m, s->buf + run->pos + (at - run->moff), n, at, 0);
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

/* How long a lane's transfers for piece p are.  Short (ra->xfer) only
 * while a mirror's stream is young, under RAID_RA_YOUNG_NS of every
 * copy's transfer since it began: a transfer ends a little after the next
 * is asked for (2 % of the disk models' time at 512 KiB), which an old
 * stream would pay for nothing, its end being a small part of it.
 * Caller holds the lock. */
static uint64_t raid_ra_xfer_of(struct raid_array *a, uint64_t p)
{
	struct raid_ra *ra = a->ra;

	if (a->copies <= 1 || p < ra->origin)
		return UINT64_MAX;
	uint64_t age = (p - ra->origin) * ra->sched.piece_ns / a->copies;
	return age < RAID_RA_YOUNG_NS ? ra->xfer : UINT64_MAX;
}

static void *raid_ra_lane_run(void *arg)
{
	struct raid_ra_lane *l = arg;
	struct raid_array *a = l->a;
	struct raid_ra *ra = a->ra;

	pthread_mutex_lock(&ra->lock);
	while (!ra->stop) {
		uint64_t p =
		    atomic_load(&a->m[l->role].failed) ? UINT64_MAX : raid_ra_next_part(a, l->role);
		if (p == UINT64_MAX) {
			pthread_cond_wait(&ra->work, &ra->lock);
			continue;
		}
		struct raid_ra_slot *s = &ra->slot[p % ra->nslots];
		uint64_t gen = s->gen;
		s->part[l->role] = PART_BUSY;
		s->loading++;
		uint64_t xfer = raid_ra_xfer_of(a, p);
		pthread_mutex_unlock(&ra->lock);
		int r = raid_ra_read_part(a, s, xfer, l->role, gen);
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

static void raid_ra_member_failed(struct raid_array *a, unsigned role);

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
	if (a->lvl->md.parity) {
		width = a->n - a->lvl->md.parity;
		unit = (uint64_t)a->g.chunk * width;
	}
	uint64_t per_disk = a->copies > 1 ? RAID_RA_PIECE : 1u << 20;
	env = getenv("URAID_RA_PIECE");
	if (env && strtoull(env, NULL, 0) >= 4096)
		per_disk = strtoull(env, NULL, 0);
	ra->piece = (uint64_t)width * per_disk;
	ra->piece = (ra->piece + unit - 1) / unit * unit;
	ra->buf_len = a->lvl->md.parity ? ra->piece / width * a->n : ra->piece;
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
	ra->front = ra->npieces; /* no stream yet */
	ra->disk_bytes = ra->piece / width;
	ra->xfer = RAID_RA_XFER;
	env = getenv("URAID_RA_XFER");
	if (env && strtoull(env, NULL, 0) >= 4096)
		ra->xfer = strtoull(env, NULL, 0);
	ra->slot = calloc(ra->nslots, sizeof(*ra->slot));
	ra->thread = calloc(a->n, sizeof(*ra->thread));
	if (!ra->slot || !ra->thread ||
	    raid_ra_sched_init(&ra->sched, a->copies, ra->stretch, ra->nslots + 2) < 0)
		goto nomem;
	ra->sched.limit = ra->npieces;
	env = getenv("URAID_RA_GROW");
	if (env && atoi(env) > 0)
		ra->sched.grow = (unsigned)atoi(env);
	env = getenv("URAID_RA_FLOOR");
	if (env)
		ra->sched.floor = (unsigned)atoi(env);
	for (unsigned i = 0; i < ra->nslots; i++) {
		ra->slot[i].part = calloc(a->n, 1);
		if (!ra->slot[i].part)
			goto nomem;
	}
	pthread_mutex_init(&ra->lock, NULL);
	pthread_cond_init(&ra->work, NULL);
	pthread_cond_init(&ra->done, NULL);
	a->ra = ra;
	a->on_member_failed = raid_ra_member_failed;
	return 0;
nomem:
	raid_ra_sched_free(&ra->sched);
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
	raid_ra_sched_free(&ra->sched);
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
			ra->slot[i].buf = vol_buf_alloc(ra->buf_len);
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

/* A stream begins at off: set the schedule up from there.  A copy whose
 * disk has just read up to the stream's start (its first reads went
 * there, directly) starts at once, the others after a seek, so the
 * schedule deals the first stretch to the one in place.  Caller holds the
 * lock. */
static void raid_ra_begin(struct raid_array *a, uint64_t off)
{
	struct raid_ra *ra = a->ra;
	struct raid_loc loc[RAID_MAX_COPIES];
	uint64_t delay[RAID_RA_SCHED_COPIES] = {0};
	uint64_t ns_per_mib = 0;
	unsigned nc = 0;

	ra->origin = off / ra->piece;
	ra->first = off;
	if (a->copies <= 1)
		return;
	a->lvl->map(a->priv, &a->g, off, ra->piece, loc, &nc);
	for (unsigned c = 0; c < nc && c < RAID_RA_SCHED_COPIES; c++) {
		uint64_t last = atomic_load(&a->m[loc[c].role].last_end);
		bool placed = last <= loc[c].off && loc[c].off - last < ra->disk_bytes;
		delay[c] = placed ? 0 : RAID_RA_SEEK_NS;
	}
	/* The fastest live member's measured speed: the others' may include
	 * time queued behind another request. */
	for (unsigned r = 0; r < a->n; r++) {
		uint64_t ns = atomic_load(&a->m[r].ns_per_mib);
		if (!atomic_load(&a->m[r].failed) && ns && (!ns_per_mib || ns < ns_per_mib))
			ns_per_mib = ns;
	}
	if (!ns_per_mib)
		ns_per_mib = RAID_SLOW_NS_PER_MIB;
	raid_ra_sched_begin(&ra->sched, ra->origin,
	                    (uint64_t)((double)ns_per_mib * (double)ra->disk_bytes / (1 << 20)),
	                    delay);
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
	bool again = false;
	if (ra->seq == 0 && !ra->reading && ra->front < ra->npieces &&
	    (at < ra->front || at >= ra->front + ra->nslots)) {
		/* A stream read ahead and then cut short is, as often as
		 * not, followed by another (a benchmark's next run, the next
		 * file): take this read as the new stream's first, so that
		 * every disk starts for it now, the seeks overlapped,
		 * instead of one disk at a time serving it directly until
		 * it is seen.  Only after a stream that was served: a
		 * random reader pays for this once, not on every read. */
		again = ra->served;
		ra->served = false;
		ra->front = ra->npieces;
		raid_ra_drop(ra);
	}
	/* A client with other reads in flight, a piece's worth with this
	 * one, keeps the members busy itself (fio or nbdcopy at queue depth 16,
	 * qemu's own read-ahead): reading the same bytes ahead of it would
	 * only read them twice.  Over four remote members at qd16 that was
	 * a fifth of every link (BENCHMARKS, remote section).  Its reads go
	 * direct and what is read ahead is dropped, unless the stream's
	 * reader waits in here for a piece; one at a time again, the stream
	 * is read ahead again.  Not when read-ahead is forced on. */
	uint64_t others = atomic_load(&a->reads_inflight) - len;
	if (ra->mode == 0 && others > 0 && others + len >= ra->piece) {
		if (!ra->reading && ra->front < ra->npieces) {
			ra->front = ra->npieces;
			ra->served = false;
			raid_ra_drop(ra);
		}
		goto out;
	}
	if (ra->mode < 0 || (ra->mode == 0 && ((ra->seq < RAID_RA_SEQ && !again) ||
	                                       len < (64u << 10) || !raid_members_slow(a))))
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
		raid_ra_begin(a, off);
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
	if (r == 0 && ra->seq >= RAID_RA_SEQ)
		ra->served = true;
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
static void raid_ra_member_failed(struct raid_array *a, unsigned role)
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

int raid_ra_set_mode(struct raid_array *a, int mode)
{
	if (!a->ra)
		return mode > 0 ? -ENOTSUP : 0;
	pthread_mutex_lock(&a->ra->lock);
	a->ra->mode = raid_stage_mode(mode);
	pthread_mutex_unlock(&a->ra->lock);
	return 0;
}
