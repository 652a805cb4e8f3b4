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
 * held once per member. */
#include "raid_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void raid_runs_free(struct raid_runs *rs)
{
	free(rs->run);
	free(rs->tmp);
	free(rs->first);
	*rs = (struct raid_runs){ 0 };
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
			if (p && p->moff + p->len == x->moff && (!at_pos || p->pos + p->len == x->pos))
				p->len += x->len;
			else
				rs->run[w++] = *x;
		}
		count[role] = start;
	}
	count[members] = rs->n = w;
}

/* The run of role holding member offset moff, or NULL. */
static const struct raid_run *raid_runs_find(const struct raid_runs *rs,
					     unsigned role, uint64_t moff)
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

int raid_piece_map_build(struct raid_array *a, uint64_t off, uint64_t len,
			 raid_piece_pick_fn pick, void *ctx,
			 struct raid_piece_map *m)
{
	struct raid_loc loc[RAID_MAX_COPIES];
	struct raid_runs *rs = &m->stage;
	unsigned nc;
	int r = raid_runs_reset(rs, a->n);

	m->off = off;
	while (r == 0 && len > 0) {
		uint64_t n = a->lvl->map(a->priv, &a->g, off, len, loc, &nc);
		int want = pick ? pick(a, loc, nc, ctx) : RAID_PICK_ALL;
		if (want == RAID_PICK_NONE)
			return -EIO;
		for (unsigned c = 0; c < nc && r == 0; c++) {
			unsigned role = loc[c].role;
			if (want >= 0 ? (int)c != want : atomic_load(&a->m[role].failed))
				continue;
			r = raid_runs_add(rs, (struct raid_run){ .role = role, .moff = loc[c].off,
								  .len = n }, false);
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

int raid_piece_copy(struct raid_array *a, const struct raid_piece_map *m,
		    char *piece, char *buf, uint64_t len, uint64_t off, bool in)
{
	struct raid_loc loc[RAID_MAX_COPIES];
	unsigned nc;

	while (len > 0) {
		uint64_t n = a->lvl->map(a->priv, &a->g, off, len, loc, &nc);
		bool found = false;
		for (unsigned c = 0; c < nc; c++) {
			const struct raid_run *r = raid_runs_find(&m->stage, loc[c].role, loc[c].off);
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

int raid_piece_segments(struct raid_array *a, struct raid_piece_map *m,
			uint64_t len, uint64_t off)
{
	struct raid_loc loc[RAID_MAX_COPIES];
	struct raid_runs *out = &m->out;
	unsigned nc;
	int r = raid_runs_reset(out, a->n);

	while (r == 0 && len > 0) {
		uint64_t n = a->lvl->map(a->priv, &a->g, off, len, loc, &nc);
		for (unsigned c = 0; c < nc && r == 0; c++) {
			const struct raid_run *s = raid_runs_find(&m->stage, loc[c].role, loc[c].off);
			if (s)
				r = raid_runs_add(out, (struct raid_run){
					.role = s->role, .moff = loc[c].off, .len = n,
					.pos = s->pos + (loc[c].off - s->moff) }, true);
		}
		off += n;
		len -= n;
	}
	if (r == 0)
		raid_runs_group(out, a->n, true);
	return r;
}
