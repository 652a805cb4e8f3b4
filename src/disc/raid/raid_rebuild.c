/* raid_rebuild.c — writing what a lost member held onto a new one, in
 * member order, as md's recovery does (see raid_rebuild.h).
 *
 * The array runs without the roles being rebuilt, so reading it already
 * does the hard part: a RAID1/10 read comes from a live copy, and a read
 * of a RAID5/6 chunk whose member is gone is rebuilt from its stripe
 * (raid_parity.c).  What is left here is the inverse of each level's
 * mapping: which array block a role holds at a member offset.
 *   - RAID1: the same offset.
 *   - RAID10: for every copy index the member row of array chunk c grows
 *     with c (md's layouts place chunk c at device chunk c*near, its far
 *     copies a fixed stride on), so the chunk whose copy lies on (role,
 *     row) is found by a binary search over the level's own map.
 *   - RAID5/6: the level's stripe() names each data chunk's role in the
 *     row; a role holding P or Q gets them recomputed from the row's data
 *     (raid_parity_compute(), the one GF(2^8) implementation).
 * Reading through the array chunk by chunk makes the disks seek, so two
 * ways around it come first: a single RAID5/6 target gets the other
 * members' parts of a piece read at once, one stream per disk, and each of
 * its chunks is the XOR of the others' (P or data), or Q recomputed; a
 * RAID10 piece is read by one lane per source member, in member order.
 * The path through the array stays for what they cannot do (two RAID6
 * targets) and for reads that fail (the engine fails the member over and
 * reads another copy).  Pieces of ~4 MiB
 * of every target are filled while the previous piece is written, so the
 * targets stream. */
#include "raid_rebuild.h"

#include "raid_types.h"

#include "core/exec.h"
#include "core/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define RB_PIECE_MIN (4u << 20)

struct rb {
	struct raid_array *a;
	struct vol *const *targets;
	unsigned *role; /* the roles rebuilt, nt of them */
	unsigned nt;
	uint64_t piece;  /* member bytes per piece, whole chunks */
	uint64_t chunk;  /* 0 for RAID1 */
	uint64_t chunks; /* RAID10: array chunks; RAID5/6: stripe rows */
	unsigned ndata;  /* RAID5/6: data chunks per row */
};

uint64_t raid_rebuild_piece_of(struct raid_array *a)
{
	uint64_t c = a && a->g.chunk ? a->g.chunk : 4096;

	return (RB_PIECE_MIN + c - 1) / c * c;
}

/* RAID10: the member row of copy ci of array chunk c, and its role. */
static uint64_t rb10_row(const struct rb *rb, uint64_t c, unsigned ci, unsigned *role)
{
	struct raid_loc loc[RAID_MAX_COPIES];
	unsigned nc;

	rb->a->lvl->map(rb->a->priv, &rb->a->g, c * rb->chunk, rb->chunk, loc, &nc);
	*role = loc[ci].role;
	return loc[ci].off / rb->chunk;
}

/* RAID10: the array chunk with a copy at member row `row` of role, or
 * UINT64_MAX where the role holds nothing (rows past the used size). */
static uint64_t rb10_find(const struct rb *rb, unsigned role, uint64_t row)
{
	for (unsigned ci = 0; ci < rb->a->copies; ci++) {
		uint64_t lo = 0, hi = rb->chunks;
		unsigned r;

		while (lo < hi) {
			uint64_t mid = lo + (hi - lo) / 2;
			if (rb10_row(rb, mid, ci, &r) < row)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (uint64_t c = lo; c < rb->chunks && rb10_row(rb, c, ci, &r) == row; c++)
			if (r == role)
				return c;
	}
	return UINT64_MAX;
}

/* Scratch of one row task (RAID5/6). */
struct rb_row_scratch {
	struct raid_stripe st;
	unsigned place[RAID_MAX_DISKS]; /* data index -> syndrome place */
	char *data[RAID_MAX_DISKS];     /* by syndrome place */
	char *row;                      /* the row's data, in array order */
	char *pq;                       /* P, then Q */
};

/* RAID5/6: what role t holds in stripe row `row`, into out (one chunk). */
static int rb56_fill(const struct rb *rb, struct rb_row_scratch *s, uint64_t row, unsigned t,
                     char *out)
{
	struct raid_array *a = rb->a;
	uint64_t chunk = rb->chunk, row_off = row * chunk * rb->ndata;
	int r;

	for (unsigned d = 0; d < rb->ndata; d++) {
		a->lvl->stripe(a->priv, &a->g, row_off + d * chunk, &s->st);
		if (s->st.data[s->st.target] == t)
			return raid_read_members(a, out, chunk, row_off + d * chunk);
		s->place[d] = s->st.target;
	}
	/* t holds P or Q: both from the row's data (a gone data chunk of
	 * the row comes back through the array's read). */
	if (!s->row) {
		if (!(s->row = vol_buf_alloc(chunk * rb->ndata)) ||
		    !(s->pq = vol_buf_alloc(2 * chunk)))
			return -ENOMEM;
		r = raid_read_members(a, s->row, chunk * rb->ndata, row_off);
		if (r < 0)
			return r;
		for (unsigned d = 0; d < rb->ndata; d++)
			s->data[s->place[d]] = s->row + d * chunk;
		raid_parity_compute(s->data, rb->ndata, chunk, s->pq,
		                    s->st.q >= 0 ? s->pq + chunk : NULL);
	}
	memcpy(out, (int)t == s->st.p ? s->pq : s->pq + chunk, chunk);
	return 0;
}

struct rb_rows {
	const struct rb *rb;
	char *buf;
	uint64_t r0;
};

/* Fill member row r0 + i of every target. */
static int rb_fill_row(void *arg, unsigned i)
{
	struct rb_rows *x = arg;
	const struct rb *rb = x->rb;
	uint64_t row = x->r0 + i, chunk = rb->chunk;
	struct rb_row_scratch *s = NULL;
	int r = 0;

	if (rb->a->lvl->md.parity) {
		s = calloc(1, sizeof(*s));
		if (!s)
			return -ENOMEM;
	}
	for (unsigned k = 0; k < rb->nt && r == 0; k++) {
		char *out = x->buf + k * rb->piece + (uint64_t)i * chunk;
		unsigned t = rb->role[k];

		if (row >= (rb->a->lvl->md.parity ? rb->chunks : UINT64_MAX)) {
			memset(out, 0, chunk); /* past the array: nothing there */
		} else if (s) {
			r = rb56_fill(rb, s, row, t, out);
		} else {
			uint64_t c = rb10_find(rb, t, row);
			if (c == UINT64_MAX)
				memset(out, 0, chunk);
			else
				r = raid_read_members(rb->a, out, chunk, c * chunk);
		}
	}
	if (s) {
		free(s->row);
		free(s->pq);
		free(s);
	}
	return r;
}

struct rb_mread {
	const struct rb *rb;
	const unsigned *role;
	char *buf;
	uint64_t off, len;
	int *err;
};

static int rb_mread_one(void *arg, unsigned i)
{
	struct rb_mread *x = arg;
	x->err[i] = raid_member_read(&x->rb->a->m[x->role[i]], x->buf + i * x->rb->piece, x->len,
	                             x->off, UINT64_MAX);
	return 0;
}

/* RAID5/6 with one target: every other member's part of the piece in one
 * read each (a stream per disk), then per row the target's chunk is the
 * XOR of the others but Q (a data chunk or P), or Q recomputed from the
 * data.  -EAGAIN when a member is gone or fails to read: the caller takes
 * the path through the array, which copes with that. */
static int rb56_fill_fast(const struct rb *rb, char *out, uint64_t w0, uint64_t len)
{
	struct raid_array *a = rb->a;
	unsigned t = rb->role[0], ns = 0, *role = calloc(a->n, sizeof(*role));
	int *err = calloc(a->n, sizeof(*err)), *slot = calloc(a->n, sizeof(*slot));
	struct rb_row_scratch *s = calloc(1, sizeof(*s));
	char *bufs = NULL, **src = calloc(a->n, sizeof(*src));
	uint64_t chunk = rb->chunk;
	int r = -ENOMEM;

	if (!role || !err || !slot || !s || !src ||
	    !(bufs = vol_buf_alloc((a->n - 1) * rb->piece)) || !(s->pq = vol_buf_alloc(chunk)))
		goto out;
	for (unsigned i = 0; i < a->n; i++) {
		slot[i] = -1;
		if (i == t)
			continue;
		r = -EAGAIN;
		if (atomic_load(&a->m[i].failed))
			goto out;
		slot[i] = (int)ns;
		role[ns++] = i;
	}
	struct rb_mread x = {rb, role, bufs, w0, len, err};
	r = exec_parallel(ns, rb_mread_one, &x);
	for (unsigned i = 0; i < ns && r == 0; i++)
		if (err[i])
			r = -EAGAIN;
	for (uint64_t i = 0; r == 0 && i * chunk < len; i++) {
		uint64_t row = w0 / chunk + i,
		         rl = len - i * chunk < chunk ? len - i * chunk : chunk;
		char *dst = out + i * chunk;
		unsigned k = 0;

		if (row >= rb->chunks) {
			memset(dst, 0, rl);
			continue;
		}
		a->lvl->stripe(a->priv, &a->g, row * chunk * rb->ndata, &s->st);
		if ((int)t == s->st.q) {
			for (unsigned d = 0; d < s->st.ndata; d++)
				s->data[d] = bufs + slot[s->st.data[d]] * rb->piece + i * chunk;
			raid_parity_compute(s->data, s->st.ndata, rl, s->pq, dst);
			continue;
		}
		for (unsigned m = 0; m < a->n; m++)
			if (m != t && (int)m != s->st.q)
				src[k++] = bufs + slot[m] * rb->piece + i * chunk;
		raid_parity_compute(src, k, rl, dst, NULL);
	}
out:
	free(bufs);
	if (s)
		free(s->pq);
	free(s);
	free(src);
	free(slot);
	free(err);
	free(role);
	return r;
}

/* RAID10: one chunk to copy, from a live copy to a target's piece. */
struct rb10_item {
	unsigned role;
	uint64_t moff;
	char *dst;
	uint64_t len;
};

struct rb10_lanes {
	const struct rb *rb;
	struct rb10_item *item; /* sorted by role, then member offset */
	unsigned *first;        /* lane i is item[first[i] .. first[i+1]) */
	int *err;
};

static int rb10_item_cmp(const void *x, const void *y)
{
	const struct rb10_item *a = x, *b = y;

	if (a->role != b->role)
		return a->role < b->role ? -1 : 1;
	return a->moff < b->moff ? -1 : a->moff > b->moff;
}

static int rb10_lane(void *arg, unsigned i)
{
	struct rb10_lanes *x = arg;

	for (unsigned k = x->first[i]; k < x->first[i + 1] && !x->err[i]; k++) {
		struct rb10_item *it = &x->item[k];
		x->err[i] = raid_member_read(&x->rb->a->m[it->role], it->dst, it->len, it->moff,
		                             UINT64_MAX);
	}
	return 0;
}

/* RAID10: every chunk of the piece from a live copy, read by one lane per
 * source member in member order (a stream per disk, however the copies
 * are spread).  -EAGAIN when a read fails: the caller takes the path
 * through the array, which fails the member over. */
static int rb10_fill_lanes(const struct rb *rb, char *buf, uint64_t w0, uint64_t len)
{
	struct raid_array *a = rb->a;
	uint64_t chunk = rb->chunk, rows = (len + chunk - 1) / chunk;
	struct rb10_item *item = calloc(rows * rb->nt, sizeof(*item));
	unsigned *first = calloc(a->n + 1, sizeof(*first)), n = 0, lanes = 0;
	int *err = calloc(a->n, sizeof(*err));
	int r = -ENOMEM;

	if (!item || !first || !err)
		goto out;
	for (unsigned k = 0; k < rb->nt; k++) {
		for (uint64_t i = 0; i < rows; i++) {
			struct raid_loc loc[RAID_MAX_COPIES];
			uint64_t rl = len - i * chunk < chunk ? len - i * chunk : chunk;
			char *dst = buf + k * rb->piece + i * chunk;
			uint64_t c = rb10_find(rb, rb->role[k], w0 / chunk + i);
			unsigned nc, pick = UINT32_MAX;

			if (c == UINT64_MAX) {
				memset(dst, 0, rl);
				continue;
			}
			a->lvl->map(a->priv, &a->g, c * chunk, chunk, loc, &nc);
			for (unsigned j = 0; j < nc && pick == UINT32_MAX; j++)
				if (!atomic_load(&a->m[loc[j].role].failed))
					pick = j;
			r = -EAGAIN;
			if (pick == UINT32_MAX)
				goto out;
			item[n++] = (struct rb10_item){loc[pick].role, loc[pick].off, dst, rl};
		}
	}
	qsort(item, n, sizeof(*item), rb10_item_cmp);
	for (unsigned k = 0; k < n; k++)
		if (k == 0 || item[k].role != item[k - 1].role)
			first[lanes++] = k;
	first[lanes] = n;
	struct rb10_lanes x = {rb, item, first, err};
	r = exec_parallel(lanes, rb10_lane, &x);
	for (unsigned i = 0; i < lanes && r == 0; i++)
		if (err[i])
			r = -EAGAIN;
out:
	free(err);
	free(first);
	free(item);
	return r;
}

/* Fill [w0, w0+len) of every target into buf (target k at k * piece). */
static int rb_fill(const struct rb *rb, char *buf, uint64_t w0, uint64_t len)
{
	struct raid_array *a = rb->a;
	int r;

	if (rb->chunk && !a->lvl->md.parity) {
		r = rb10_fill_lanes(rb, buf, w0, len);
		if (r != -EAGAIN)
			return r;
	}

	if (rb->chunk && a->lvl->md.parity && rb->nt == 1) {
		r = rb56_fill_fast(rb, buf, w0, len);
		if (r != -EAGAIN)
			return r;
	}
	if (!rb->chunk) {
		/* RAID1: the array at the same offset. */
		uint64_t have = w0 < a->vol.size ? a->vol.size - w0 : 0;
		if (have > len)
			have = len;
		memset(buf + have, 0, len - have);
		r = have ? raid_read_members(a, buf, have, w0) : 0;
		for (unsigned k = 1; k < rb->nt && r == 0; k++)
			memcpy(buf + k * rb->piece, buf, len);
	} else {
		struct rb_rows x = {rb, buf, w0 / rb->chunk};
		r = exec_parallel((unsigned)((len + rb->chunk - 1) / rb->chunk), rb_fill_row, &x);
	}
	if (r < 0)
		return err_set(r, "%s: reading what member offset %llu holds: %s", a->vol.name,
		               (unsigned long long)w0, strerror(-r));
	return 0;
}

/* Write target k's part of a piece; online, a failure is the target's. */
static int rb_write_target(const struct rb *rb, unsigned k, const char *buf, uint64_t len,
                           uint64_t off)
{
	unsigned role = rb->role[k];
	struct vol *v = rb->targets[role];
	/* Counted as the role's writes when the target is the role's member
	 * (online); offline the target is only the rebuild's. */
	struct raid_member *m = rb->a->m[role].vol == v ? &rb->a->m[role] : NULL;
	uint64_t t0 = m ? raid_io_begin(m) : 0;
	int r = vol_write(v, buf, len, off, 0);

	if (m)
		raid_io_end(m, true, len, t0, r);

	if (r == 0)
		return 0;
	if (rb->a->m[role].vol == v && atomic_load(&rb->a->m[role].recovering)) {
		int zero = 0;
		atomic_compare_exchange_strong(&rb->a->m[role].rec_err, &zero, r);
	}
	return err_set(r, "%s: writing %llu bytes at %llu: %s", v->name, (unsigned long long)len,
	               (unsigned long long)off, strerror(-r));
}

/* One step: write piece w (buffer wbuf) to the targets while the next
 * piece is filled into fbuf. */
struct rb_step {
	const struct rb *rb;
	char *wbuf, *fbuf;
	uint64_t w0, wlen, f0, flen;
	int err[2];
};

static int rb_step_one(void *arg, unsigned i)
{
	struct rb_step *s = arg;
	const struct rb *rb = s->rb;

	if (i == 1) {
		s->err[1] = rb_fill(rb, s->fbuf, s->f0, s->flen);
		return 0;
	}
	for (unsigned k = 0; k < rb->nt && !s->err[0]; k++)
		s->err[0] = rb_write_target(rb, k, s->wbuf + k * rb->piece, s->wlen, s->w0);
	return 0;
}

static void rb_geometry(struct rb *rb)
{
	struct raid_array *a = rb->a;

	if (a->lvl->md.chunked) {
		rb->chunk = a->g.chunk;
		rb->ndata = a->n - a->lvl->md.parity;
		rb->chunks = a->vol.size / (rb->chunk * (a->lvl->md.parity ? rb->ndata : 1));
	}
}

/* Rebuild member offsets [lo, hi) (whole chunks) of every role being
 * recovered from the others, and write them there. */
static int raid_rebuild_rows(struct raid_array *a, uint64_t lo, uint64_t hi)
{
	struct rb rb = {.a = a};
	struct vol **targets = calloc(a->n, sizeof(*targets));
	char *buf = NULL;
	int r = -ENOMEM;

	rb.role = calloc(a->n, sizeof(*rb.role));
	if (!targets || !rb.role)
		goto out;
	for (unsigned i = 0; i < a->n; i++) {
		if (!atomic_load(&a->m[i].recovering))
			continue;
		targets[i] = a->m[i].vol;
		rb.role[rb.nt++] = i;
	}
	rb.targets = targets;
	rb_geometry(&rb);
	uint64_t unit = rb.chunk ? rb.chunk : 4096;
	lo -= lo % unit;
	hi = (hi + unit - 1) / unit * unit;
	r = 0;
	if (!rb.nt || lo >= hi)
		goto out;
	rb.piece = hi - lo;
	r = -ENOMEM;
	if (!(buf = vol_buf_alloc(rb.nt * rb.piece)))
		goto out;
	r = rb_fill(&rb, buf, lo, rb.piece);
	for (unsigned k = 0; k < rb.nt && r == 0; k++)
		r = rb_write_target(&rb, k, buf + k * rb.piece, rb.piece, lo);
out:
	free(buf);
	free(targets);
	free(rb.role);
	return r;
}

void raid_rebuild_written(struct raid_array *a, const struct raid_rec_io *io)
{
	uint64_t point = raid_rec_point(a);

	if (!io->excl || io->lo >= io->hi || io->lo >= point)
		return;
	uint64_t hi = io->hi < point ? io->hi : point;
	int e = raid_rebuild_rows(a, io->lo, hi);
	/* The target now misses what this write changed: its recovery is
	 * over (the write itself stands). */
	for (unsigned i = 0; e < 0 && i < a->n; i++)
		if (atomic_load(&a->m[i].recovering))
			raid_rec_target_failed(a, i, e);
}

int raid_rebuild_run(struct raid_array *a, struct vol *const *targets, uint64_t from, uint64_t to,
                     bool resync, raid_rebuild_progress_fn progress, void *ctx)
{
	struct vol *array = &a->vol;
	struct rb rb = {.a = a, .targets = targets};
	char *buf[2] = {NULL, NULL};
	int r = -ENOMEM;

	if (!a->lvl->md.redundant)
		return err_set(-EINVAL, "%s: %s has no redundancy: a lost member cannot be rebuilt",
		               array->name, a->lvl->md.name);
	if (from % 4096 || to % 4096 || from > to)
		return err_set(-EINVAL, "%s: rebuild range %llu..%llu is not 4 KiB aligned",
		               array->name, (unsigned long long)from, (unsigned long long)to);
	rb.role = calloc(a->n, sizeof(*rb.role));
	if (!rb.role)
		return -ENOMEM;
	bool online = false;
	for (unsigned i = 0; i < a->n; i++) {
		if (!targets[i])
			continue;
		if (a->m[i].vol == targets[i] && atomic_load(&a->m[i].recovering)) {
			online = true;
		} else if (a->m[i].vol) {
			r = err_set(-EINVAL, "%s: role %u is in the array: it cannot be a target",
			            array->name, i);
			goto out;
		}
		if (targets[i]->size < to) {
			r = err_set(-EINVAL, "%s: %s is smaller than the %llu bytes to rebuild",
			            array->name, targets[i]->name, (unsigned long long)to);
			goto out;
		}
		rb.role[rb.nt++] = i;
	}
	r = 0;
	if (!rb.nt || from == to)
		goto out;
	rb.piece = raid_rebuild_piece_of(a);
	rb_geometry(&rb);
	/* A resync (a re-add) keeps the recovery point where
	 * raid_recover_begin put it: its targets hold what they should
	 * outside the ranges resynced, and every write reaches them.  A
	 * rebuild moves the point along with it. */
	uint64_t unit = rb.chunk ? rb.chunk : 4096, keep = resync ? raid_rec_point(a) : 0;
	from -= from % (resync ? unit : rb.piece);
	r = -ENOMEM;
	if (!(buf[0] = vol_buf_alloc(rb.nt * rb.piece)) ||
	    !(buf[1] = vol_buf_alloc(rb.nt * rb.piece)))
		goto out;
	/* Online, the window covers every piece from before it is read until
	 * it is written: the piece being written and the one being filled. */
	uint64_t w = from, len = to - w < rb.piece ? to - w : rb.piece;
	unsigned cur = 0;
	if (online)
		raid_rec_window(a, w, w + len, resync ? keep : w);
	r = rb_fill(&rb, buf[cur], w, len);
	while (r == 0 && w < to) {
		uint64_t next = w + len;
		struct rb_step s = {.rb = &rb,
		                    .wbuf = buf[cur],
		                    .fbuf = buf[!cur],
		                    .w0 = w,
		                    .wlen = len,
		                    .f0 = next,
		                    .flen = to - next < rb.piece ? to - next : rb.piece};
		if (online && s.flen)
			raid_rec_window(a, w, next + s.flen, resync ? keep : w);
		r = exec_parallel(s.flen ? 2 : 1, rb_step_one, &s);
		if (r == 0)
			r = s.err[0];
		if (r < 0)
			break;
		w = next;
		len = s.flen;
		cur = !cur;
		if (online)
			raid_rec_window(a, w, w + len, resync ? keep : w);
		if (progress && progress(ctx, w)) {
			r = -EINTR;
			break;
		}
		r = s.err[1];
	}
	if (online)
		raid_rec_window(a, 0, 0, resync ? keep : w);
	if (r < 0 && r != -EINTR && atomic_load(&a->broken))
		r = err_set(-EIO,
		            "%s: the array has failed (it lost more members than %s can "
		            "lose): the %s stops",
		            a->vol.name, a->lvl->md.name, resync ? "resync" : "rebuild");
out:
	free(buf[0]);
	free(buf[1]);
	free(rb.role);
	return r;
}
