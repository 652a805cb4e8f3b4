/* raid_piece.c — how a piece of the array is laid out in a staging buffer,
 * for the stages that move whole pieces between memory and the members
 * (read-ahead, raid_ra.c; write-behind, raid_wb.c).
 *
 * The buffer holds the piece member-major: every member's part is one
 * contiguous run of the buffer per stretch contiguous on the member, the
 * members in role order.  So each member moves its part in one transfer
 * straight to or from the buffer, with no bounce, and the scatter or gather
 * that striping needs is done by the copy between the client's buffer and
 * the piece, which happens anyway.  A copy written to several members is
 * held once per member.
 *
 * On a parity level (RAID5/6) a piece holds whole stripes: every member's
 * chunks of every stripe the piece touches, data and P/Q alike, and a gone
 * member's too (its data still counts in the parity).  A member's chunks of
 * consecutive stripes lie together on it, so its part is one run; P and Q
 * are computed into their places (raid_piece_parity) once the data is in. */
#include "raid_types.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void raid_runs_free(struct raid_runs *rs)
{
	free(rs->run);
	free(rs->tmp);
	free(rs->first);
	*rs = (struct raid_runs){0};
}

void raid_piece_map_free(struct raid_piece_map *m)
{
	raid_runs_free(&m->stage);
	raid_runs_free(&m->out);
}

/* Start collecting runs; until raid_runs_group(), first[role] is the
 * index of role's last run. */
static int raid_runs_reset(struct raid_runs *rs, unsigned members)
{
	if (!rs->first) {
		rs->first = malloc((members + 1) * sizeof(*rs->first));
		if (!rs->first)
			return -ENOMEM;
	}
	for (unsigned i = 0; i <= members; i++)
		rs->first[i] = UINT32_MAX;
	rs->n = 0;
	return 0;
}

/* Add a run, joining it to role's last one when it continues it on the
 * member (and in the buffer, with at_pos). */
static int raid_runs_add(struct raid_runs *rs, struct raid_run x, bool at_pos)
{
	unsigned last = rs->first[x.role];

	if (last != UINT32_MAX) {
		struct raid_run *p = &rs->tmp[last];
		if (p->moff + p->len == x.moff && (!at_pos || p->pos + p->len == x.pos)) {
			p->len += x.len;
			return 0;
		}
	}
	if (rs->n == rs->cap) {
		unsigned cap = rs->cap ? 2 * rs->cap : 16;
		struct raid_run *r = realloc(rs->run, cap * sizeof(*r));
		if (!r)
			return -ENOMEM;
		rs->run = r;
		struct raid_run *t = realloc(rs->tmp, cap * sizeof(*t));
		if (!t)
			return -ENOMEM;
		rs->tmp = t;
		rs->cap = cap;
	}
	rs->tmp[rs->n] = x;
	rs->first[x.role] = rs->n++;
	return 0;
}

/* Sort the runs by role and member offset into run[] (a piece that starts
 * part-way through a far or offset layout meets a member's far copies
 * first), join those that meet on the member (and in the buffer, with
 * at_pos), and set first[]. */
static void raid_runs_group(struct raid_runs *rs, unsigned members, bool at_pos)
{
	unsigned *count = rs->first;

	memset(count, 0, (members + 1) * sizeof(*count));
	for (unsigned i = 0; i < rs->n; i++)
		count[rs->tmp[i].role + 1]++;
	for (unsigned i = 0; i < members; i++)
		count[i + 1] += count[i];
	for (unsigned i = 0; i < rs->n; i++)
		rs->run[count[rs->tmp[i].role]++] = rs->tmp[i];
	/* count[role] is now the end of role's runs: shift to starts. */
	memmove(count + 1, count, members * sizeof(*count));
	count[0] = 0;
	unsigned w = 0;
	for (unsigned role = 0; role < members; role++) {
		unsigned start = w, end = count[role + 1];
		for (unsigned i = count[role] + 1; i < end; i++) {
			struct raid_run x = rs->run[i];
			unsigned j = i;
			for (; j > count[role] && rs->run[j - 1].moff > x.moff; j--)
				rs->run[j] = rs->run[j - 1];
			rs->run[j] = x;
		}
		for (unsigned i = count[role]; i < end; i++) {
			struct raid_run *p = w > start ? &rs->run[w - 1] : NULL;
			const struct raid_run *x = &rs->run[i];
			if (p && p->moff + p->len == x->moff &&
			    (!at_pos || p->pos + p->len == x->pos))
				p->len += x->len;
			else
				rs->run[w++] = *x;
		}
		count[role] = start;
	}
	count[members] = rs->n = w;
}

/* The run of role holding member offset moff, or NULL. */
static const struct raid_run *raid_runs_find(const struct raid_runs *rs, unsigned role,
                                             uint64_t moff)
{
	unsigned lo = rs->first[role], hi = rs->first[role + 1];

	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;
		const struct raid_run *r = &rs->run[mid];
		if (moff < r->moff)
			hi = mid;
		else if (moff >= r->moff + r->len)
			lo = mid + 1;
		else
			return r;
	}
	return NULL;
}

/* Bytes of array data in a stripe of a parity level. */
static uint64_t raid_piece_row(const struct raid_array *a)
{
	return (uint64_t)a->g.chunk * (a->n - a->lvl->md.parity);
}

/* Where stripe row s begins on every member (md: s chunks in). */
static uint64_t raid_piece_row_moff(struct raid_array *a, uint64_t s, struct raid_stripe *st)
{
	a->lvl->stripe(a->priv, &a->g, s * raid_piece_row(a), st);
	return st->moff - st->moff % a->g.chunk;
}

/* A parity level's stage: every member's chunks of the stripes that
 * [off, off+len) touches, one run per member. */
static int raid_piece_rows(struct raid_array *a, uint64_t off, uint64_t len,
                           struct raid_piece_map *m)
{
	struct raid_runs *rs = &m->stage;
	struct raid_stripe *st = malloc(sizeof(*st));
	uint64_t row = raid_piece_row(a), s0 = off / row, s1 = (off + len + row - 1) / row;
	int r = st ? raid_runs_reset(rs, a->n) : -ENOMEM;

	if (r == 0) {
		uint64_t moff = raid_piece_row_moff(a, s0, st);
		for (unsigned role = 0; role < a->n && r == 0; role++)
			r = raid_runs_add(rs,
			                  (struct raid_run){.role = role,
			                                    .moff = moff,
			                                    .len = (s1 - s0) * a->g.chunk},
			                  false);
	}
	free(st);
	return r;
}

int raid_piece_map_build(struct raid_array *a, uint64_t off, uint64_t len, raid_piece_pick_fn pick,
                         void *ctx, struct raid_piece_map *m)
{
	struct raid_loc loc[RAID_MAX_COPIES];
	struct raid_runs *rs = &m->stage;
	unsigned nc;
	int r = a->lvl->md.parity ? raid_piece_rows(a, off, len, m) : raid_runs_reset(rs, a->n);

	m->off = off;
	while (!a->lvl->md.parity && r == 0 && len > 0) {
		uint64_t n = a->lvl->map(a->priv, &a->g, off, len, loc, &nc);
		int want = pick ? pick(a, loc, nc, ctx) : RAID_PICK_ALL;
		if (want == RAID_PICK_NONE)
			return -EIO;
		for (unsigned c = 0; c < nc && r == 0; c++) {
			unsigned role = loc[c].role;
			if (want >= 0 ? (int)c != want : atomic_load(&a->m[role].failed))
				continue;
			r = raid_runs_add(
			    rs, (struct raid_run){.role = role, .moff = loc[c].off, .len = n},
			    false);
		}
		off += n;
		len -= n;
	}
	if (r)
		return r;
	raid_runs_group(rs, a->n, false);
	m->bytes = 0;
	for (unsigned i = 0; i < rs->n; i++) {
		rs->run[i].pos = m->bytes;
		m->bytes += rs->run[i].len;
	}
	return 0;
}

int raid_piece_copy(struct raid_array *a, const struct raid_piece_map *m, char *piece, char *buf,
                    uint64_t len, uint64_t off, bool in)
{
	struct raid_loc loc[RAID_MAX_COPIES];
	unsigned nc;

	while (len > 0) {
		uint64_t n = a->lvl->map(a->priv, &a->g, off, len, loc, &nc);
		bool found = false;
		for (unsigned c = 0; c < nc; c++) {
			const struct raid_run *r =
			    raid_runs_find(&m->stage, loc[c].role, loc[c].off);
			if (!r)
				continue;
			char *p = piece + r->pos + (loc[c].off - r->moff);
			found = true;
			if (!in) {
				memcpy(buf, p, n);
				break;
			}
			memcpy(p, buf, n);
		}
		if (!found)
			return -EIO; /* not staged: a caller's bug */
		buf += n;
		off += n;
		len -= n;
	}
	return 0;
}

int raid_piece_segments(struct raid_array *a, struct raid_piece_map *m, uint64_t len, uint64_t off)
{
	struct raid_loc loc[RAID_MAX_COPIES];
	struct raid_runs *out = &m->out;
	unsigned nc;
	int r = raid_runs_reset(out, a->n);

	if (a->lvl->md.parity) {
		/* The whole stripes inside the range, every live member's
		 * chunks of them (parity included) in one run. */
		uint64_t row = raid_piece_row(a), s0 = (off + row - 1) / row;
		uint64_t s1 = (off + len) / row;
		struct raid_stripe *st = s1 > s0 ? malloc(sizeof(*st)) : NULL;
		if (s1 > s0 && !st)
			r = -ENOMEM;
		uint64_t moff = st ? raid_piece_row_moff(a, s0, st) : 0;
		for (unsigned role = 0; st && role < a->n && r == 0; role++) {
			const struct raid_run *x = raid_runs_find(&m->stage, role, moff);
			if (x && !atomic_load(&a->m[role].failed))
				r = raid_runs_add(
				    out,
				    (struct raid_run){.role = role,
				                      .moff = moff,
				                      .len = (s1 - s0) * a->g.chunk,
				                      .pos = x->pos + (moff - x->moff)},
				    true);
		}
		free(st);
		len = 0; /* nothing more to map */
	}
	while (r == 0 && len > 0) {
		uint64_t n = a->lvl->map(a->priv, &a->g, off, len, loc, &nc);
		for (unsigned c = 0; c < nc && r == 0; c++) {
			const struct raid_run *s =
			    raid_runs_find(&m->stage, loc[c].role, loc[c].off);
			if (s)
				r = raid_runs_add(
				    out,
				    (struct raid_run){.role = s->role,
				                      .moff = loc[c].off,
				                      .len = n,
				                      .pos = s->pos + (loc[c].off - s->moff)},
				    true);
		}
		off += n;
		len -= n;
	}
	if (r == 0)
		raid_runs_group(out, a->n, true);
	return r;
}

int raid_piece_move(struct raid_array *a, const struct raid_piece_map *from, const char *fbuf,
                    const struct raid_piece_map *to, char *tbuf, uint64_t len, uint64_t off)
{
	struct raid_loc loc[RAID_MAX_COPIES];
	unsigned nc;

	while (len > 0) {
		uint64_t n = a->lvl->map(a->priv, &a->g, off, len, loc, &nc);
		const char *src = NULL;
		for (unsigned c = 0; c < nc && !src; c++) {
			const struct raid_run *r =
			    raid_runs_find(&from->stage, loc[c].role, loc[c].off);
			if (r)
				src = fbuf + r->pos + (loc[c].off - r->moff);
		}
		bool found = false;
		for (unsigned c = 0; c < nc && src; c++) {
			const struct raid_run *r =
			    raid_runs_find(&to->stage, loc[c].role, loc[c].off);
			if (r) {
				memcpy(tbuf + r->pos + (loc[c].off - r->moff), src, n);
				found = true;
			}
		}
		if (!found)
			return -EIO; /* not staged in one of them: a caller's bug */
		off += n;
		len -= n;
	}
	return 0;
}

int raid_piece_parts(struct raid_array *a, const struct raid_piece_map *m, char *piece,
                     uint64_t off, char **part)
{
	struct raid_stripe *st = malloc(sizeof(*st));
	int r = st ? 0 : -ENOMEM;

	uint64_t moff = st ? raid_piece_row_moff(a, off / raid_piece_row(a), st) : 0;
	for (unsigned role = 0; role < a->n && r == 0; role++) {
		const struct raid_run *x = raid_runs_find(&m->stage, role, moff);
		if (!x)
			r = -EIO; /* not staged: a caller's bug */
		else
			part[role] = piece + x->pos + (moff - x->moff);
	}
	free(st);
	return r;
}

#define RAID_PIECE_SLICE (64u << 10) /* parity computed this much at a time */

int raid_piece_parity(struct raid_array *a, const struct raid_piece_map *m, char *piece,
                      unsigned role, uint64_t len, uint64_t off)
{
	uint64_t chunk = a->g.chunk, row = raid_piece_row(a);
	uint64_t s0 = (off + row - 1) / row, s1 = (off + len) / row;
	unsigned ndata = a->n - a->lvl->md.parity;
	struct raid_stripe *st = malloc(sizeof(*st));
	char **data = malloc(2 * ndata * sizeof(*data)), **at;
	char *scratch = NULL;
	int r = -ENOMEM;

	if (!st || !data)
		goto out;
	at = data + ndata; /* data[] shifted to the slice */
	for (uint64_t s = s0; s < s1; s++) {
		uint64_t moff = raid_piece_row_moff(a, s, st);
		bool is_q = st->q == (int)role;
		if (st->p != (int)role && !is_q)
			continue;
		const struct raid_run *own = raid_runs_find(&m->stage, role, moff);
		r = -EIO; /* not staged: a caller's bug */
		if (!own)
			goto out;
		char *dst = piece + own->pos + (moff - own->moff);
		for (unsigned i = 0; i < ndata; i++) {
			const struct raid_run *x = raid_runs_find(&m->stage, st->data[i], moff);
			if (!x)
				goto out;
			data[i] = piece + x->pos + (moff - x->moff);
		}
		/* Q's member computes P beside it, into scratch: P's member
		 * writes its own. */
		r = -ENOMEM;
		if (is_q && !scratch && !(scratch = malloc(RAID_PIECE_SLICE)))
			goto out;
		for (uint64_t o = 0; o < chunk; o += RAID_PIECE_SLICE) {
			uint64_t n = chunk - o < RAID_PIECE_SLICE ? chunk - o : RAID_PIECE_SLICE;
			for (unsigned i = 0; i < ndata; i++)
				at[i] = data[i] + o;
			if (is_q)
				raid_parity_compute(at, ndata, n, scratch, dst + o);
			else
				raid_parity_compute(at, ndata, n, dst + o, NULL);
		}
	}
	r = 0;
out:
	free(scratch);
	free(data);
	free(st);
	return r;
}
