/* raid_map.c — the I/O fan-out every level shares: a request mapped into
 * extents by the level (raid_level.map), each extent one sub-request per
 * copy it goes to (one chosen copy for a read, every live copy for a
 * write).  Sub-requests are grouped per member, merged where they are
 * contiguous on the member and in the buffer, and the groups run at once
 * through exec_parallel(); a group runs its pieces in member-offset order,
 * so a member sees a sequential stream as one.
 *
 * Failure: an I/O error from a member fails it (raid_member.c) unless that
 * would lose data, and the request is served from the other copies; a
 * block with no live copy left is rebuilt by the level's rebuild hook
 * (parity levels, raid_parity.c).  Above: the stages (raid_ra.c,
 * raid_wb.c) and the vol_ops front (raid.c). */
#include "raid_types.h"

#include "core/exec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* One transfer to or from a member. */
struct raid_sub {
	unsigned role;
	unsigned e_first, e_last; /* extents this sub covers */
	uint64_t off, len;        /* on the member */
	char *buf;                /* NULL for trim and zeroes */
	int err;
	struct raid_behind_job *behind; /* written behind (raid_behind.c), not here */
};

struct raid_ext {
	uint64_t aoff, len;
	unsigned ok;     /* copies written, or 1 once read */
	uint32_t tried;  /* read: copy indices tried */
	unsigned chosen; /* read: copy index in use */
};

struct raid_req {
	struct raid_array *a;
	enum raid_op op;
	unsigned flags;
	struct raid_sub *subs;
	unsigned nsubs;
	unsigned *group; /* group i is subs[group[i] .. group[i+1]) */
	unsigned ngroups;
};

/* Read or write subs[i] of a group, timing it to estimate the member's
 * speed.  (Gathering chunks that lie together on the disk into one
 * transfer through a bounce was measured slower here on the disk model:
 * the copy delays the transfer more than the extra requests cost.) */
static void raid_group_xfer(struct raid_req *q, struct raid_member *m, struct raid_sub *s)
{
	if (q->op == RAID_READ)
		s->err = raid_member_read(m, s->buf, s->len, s->off, 64u << 10);
	else
		s->err = raid_member_write(m, s->buf, s->len, s->off, q->flags, 64u << 10);
}

/* Run one member's group of sub-requests in order.  After an error on a
 * member the rest of its group is not tried: it gets the same error. */
static int raid_group_run(void *arg, unsigned gi)
{
	struct raid_req *q = arg;
	struct raid_member *m = &q->a->m[q->subs[q->group[gi]].role];
	struct vol *v = m->vol;
	int err = 0;

	atomic_fetch_add(&m->inflight, 1);
	for (unsigned i = q->group[gi]; i < q->group[gi + 1]; i++) {
		struct raid_sub *s = &q->subs[i];
		if (s->behind)
			continue;
		if (err) {
			s->err = err;
			continue;
		}
		switch (q->op) {
		case RAID_READ:
		case RAID_WRITE:
			raid_group_xfer(q, m, s);
			break;
		case RAID_TRIM:
			s->err = vol_trim(v, s->len, s->off, q->flags);
			break;
		case RAID_ZERO:
			s->err = vol_write_zeroes(v, s->len, s->off, q->flags);
			break;
		}
		atomic_store(&m->last_end, s->off + s->len);
		err = s->err;
	}
	atomic_fetch_sub(&m->inflight, 1);
	return 0;
}

/* Add a sub-request, merging it into the previous one on the same role
 * when it continues it on the member and in the buffer. */
static void raid_sub_add(struct raid_req *q, unsigned *last, unsigned role, unsigned e,
                         uint64_t off, uint64_t len, char *buf)
{
	if (last[role] != UINT32_MAX) {
		struct raid_sub *p = &q->subs[last[role]];
		if (p->e_last + 1 == e && p->off + p->len == off &&
		    ((!p->buf && !buf) || (p->buf && p->buf + p->len == buf)) &&
		    p->len + len <= q->a->m[role].vol->block_max) {
			p->len += len;
			p->e_last = e;
			return;
		}
	}
	struct raid_sub *s = &q->subs[q->nsubs];
	*s = (struct raid_sub){
	    .role = role, .e_first = e, .e_last = e, .off = off, .len = len, .buf = buf};
	last[role] = q->nsubs++;
}

/* Is the request so cheap that handing pieces to other threads would cost
 * more than doing them here?  Only on members that are fast: in RAM
 * (VOL_CAP_RAM) or measured faster than RAID_INLINE_NS_PER_MIB (memory,
 * page cache), where a hand-off to a pool thread and back (a futex wake,
 * two context switches, the pool's lock) costs as much as copying the
 * data.  A read up to RAID_INLINE_MAX; a write while what the calling
 * thread does beyond its largest group is at most RAID_INLINE_WRITE_EXTRA:
 * a mirror's second 4 KiB copy is a few microseconds of page-cache work,
 * and with many small writes in flight their own threads keep the cores
 * busy (4 KiB random writes at qd32 on RAID1x2 spent more on the pool's
 * wakes and lock than on the copies: docs/write-path.md).  A large write
 * keeps its copies in parallel. */
#define RAID_INLINE_NS_PER_MIB 250000u /* over ~4 GiB/s */
#define RAID_INLINE_MAX (4u << 20)
#define RAID_INLINE_WRITE_EXTRA (32u << 10)

static bool raid_member_fast(const struct raid_member *m)
{
	uint64_t ns = atomic_load(&m->ns_per_mib);

	if (m->vol && (m->vol->caps & VOL_CAP_RAM))
		return true;
	return ns != 0 && ns < RAID_INLINE_NS_PER_MIB;
}

static bool raid_req_inline(const struct raid_req *q)
{
	uint64_t total = 0, largest = 0;

	if (q->ngroups < 2 || (q->op != RAID_READ && q->op != RAID_WRITE))
		return false;
	for (unsigned g = 0; g < q->ngroups; g++) {
		uint64_t bytes = 0;
		for (unsigned i = q->group[g]; i < q->group[g + 1]; i++)
			bytes += q->subs[i].behind ? 0 : q->subs[i].len;
		total += bytes;
		largest = bytes > largest ? bytes : largest;
		if (!raid_member_fast(&q->a->m[q->subs[q->group[g]].role]))
			return false;
	}
	return q->op == RAID_READ ? total <= RAID_INLINE_MAX
	                          : total - largest <= RAID_INLINE_WRITE_EXTRA;
}

/* Sort the subs by role (stable: each role keeps array order, which is
 * member order), group them and run the groups in parallel. */
static int raid_req_run(struct raid_req *q)
{
	struct raid_array *a = q->a;
	unsigned *count = calloc(a->n + 1, sizeof(*count));
	struct raid_sub *sorted = malloc(q->nsubs * sizeof(*sorted));
	int r = -ENOMEM;

	q->group = calloc(a->n + 1, sizeof(*q->group));
	if (!count || !sorted || !q->group)
		goto out;
	for (unsigned i = 0; i < q->nsubs; i++)
		count[q->subs[i].role + 1]++;
	for (unsigned i = 0; i < a->n; i++)
		count[i + 1] += count[i];
	q->ngroups = 0;
	for (unsigned i = 0; i < a->n; i++)
		if (count[i + 1] > count[i])
			q->group[q->ngroups++] = count[i];
	q->group[q->ngroups] = q->nsubs;
	for (unsigned i = 0; i < q->nsubs; i++)
		sorted[count[q->subs[i].role]++] = q->subs[i];
	memcpy(q->subs, sorted, q->nsubs * sizeof(*sorted));
	if (raid_req_inline(q)) {
		for (unsigned g = 0; g < q->ngroups; g++)
			raid_group_run(q, g);
		r = 0;
	} else {
		r = exec_parallel(q->ngroups, raid_group_run, q);
	}
out:
	free(count);
	free(sorted);
	return r;
}

/* Map [off, off+len) into extents.  Returns the count or -ENOMEM. */
static int raid_extents(struct raid_array *a, uint64_t len, uint64_t off, struct raid_ext **out)
{
	struct raid_loc loc[RAID_MAX_COPIES];
	unsigned cap = 16, n = 0, nc;
	struct raid_ext *e = malloc(cap * sizeof(*e));

	while (e && len > 0) {
		if (n == cap) {
			struct raid_ext *ne = realloc(e, 2 * cap * sizeof(*e));
			if (!ne)
				break;
			e = ne;
			cap *= 2;
		}
		uint64_t l = a->lvl->map(a->priv, &a->g, off, len, loc, &nc);
		e[n++] = (struct raid_ext){.aoff = off, .len = l};
		off += l;
		len -= l;
	}
	if (!e || len > 0) {
		free(e);
		return -ENOMEM;
	}
	*out = e;
	return (int)n;
}

/* Pick the copy of an extent to read: a live one not tried yet, with the
 * fewest requests in flight, then the nearest last position.  Returns the
 * copy index or -1. */
static int raid_pick_copy(struct raid_array *a, const struct raid_loc *loc, unsigned nc,
                          uint32_t tried)
{
	int best = -1;
	int best_busy = 0;
	uint64_t best_dist = 0;

	for (unsigned c = 0; c < nc; c++) {
		struct raid_member *m = &a->m[loc[c].role];
		if ((tried >> c) & 1 || atomic_load(&m->failed) ||
		    raid_read_avoid(a, loc, nc, c, tried))
			continue;
		int busy = atomic_load(&m->inflight);
		uint64_t last = atomic_load(&m->last_end);
		uint64_t dist = last > loc[c].off ? last - loc[c].off : loc[c].off - last;
		if (best < 0 || busy < best_busy || (busy == best_busy && dist < best_dist)) {
			best = (int)c;
			best_busy = busy;
			best_dist = dist;
		}
	}
	return best;
}

/* Read [off, off+len) into buf straight from the members, failing over to
 * other copies extent by extent, or rebuilding from parity. */
int raid_read_members(struct raid_array *a, char *buf, uint64_t len, uint64_t off)
{
	struct raid_loc loc[RAID_MAX_COPIES];
	struct raid_req q = {.a = a, .op = RAID_READ};
	struct raid_ext *ext = NULL;
	unsigned *last = NULL;
	unsigned nc;
	int ne, r;

	ne = raid_extents(a, len, off, &ext);
	if (ne < 0)
		return ne;
	q.subs = malloc((size_t)ne * sizeof(*q.subs));
	last = malloc(a->n * sizeof(*last));
	r = -ENOMEM;
	if (!q.subs || !last)
		goto out;
	memset(last, 0xff, a->n * sizeof(*last));
	for (int i = 0; i < ne; i++) {
		a->lvl->map(a->priv, &a->g, ext[i].aoff, ext[i].len, loc, &nc);
		int c = raid_pick_copy(a, loc, nc, 0);
		if (c < 0 && a->lvl->rebuild) {
			ext[i].chosen = UINT32_MAX; /* rebuilt below */
			continue;
		}
		r = -EIO;
		if (c < 0)
			goto out;
		ext[i].chosen = (unsigned)c;
		ext[i].tried = 1u << c;
		raid_sub_add(&q, last, loc[c].role, (unsigned)i, loc[c].off, ext[i].len,
		             buf + (ext[i].aoff - off));
	}
	r = raid_req_run(&q);
	if (r < 0)
		goto out;
	/* Mark the failed members (all of them first: a parity rebuild must
	 * not count on one that failed in the same request), then retry each
	 * affected extent from the copies not tried yet, one at a time: the
	 * rare path. */
	for (unsigned i = 0; i < q.nsubs; i++) {
		struct raid_sub *s = &q.subs[i];
		if (!s->err)
			continue;
		if (raid_err_is_request(s->err)) {
			r = s->err;
			goto out;
		}
		raid_member_fail(a, s->role, s->err, false);
	}
	for (unsigned i = 0; i < q.nsubs; i++) {
		struct raid_sub *s = &q.subs[i];
		if (!s->err)
			continue;
		for (unsigned e = s->e_first; e <= s->e_last; e++) {
			struct raid_ext *x = &ext[e];
			int err = -EIO;
			a->lvl->map(a->priv, &a->g, x->aoff, x->len, loc, &nc);
			for (;;) {
				int c = raid_pick_copy(a, loc, nc, x->tried);
				if (c < 0) {
					if (a->lvl->rebuild)
						err = a->lvl->rebuild(a, buf + (x->aoff - off),
						                      x->len, x->aoff);
					break;
				}
				x->tried |= 1u << c;
				err = raid_member_read(&a->m[loc[c].role], buf + (x->aoff - off),
				                       x->len, loc[c].off, UINT64_MAX);
				if (err == 0 || raid_err_is_request(err))
					break;
				raid_member_fail(a, loc[c].role, err, false);
			}
			if (err) {
				r = err;
				goto out;
			}
		}
	}
	/* Extents whose member was gone from the start. */
	for (int i = 0; i < ne; i++) {
		if (ext[i].chosen != UINT32_MAX)
			continue;
		r = a->lvl->rebuild(a, buf + (ext[i].aoff - off), ext[i].len, ext[i].aoff);
		if (r)
			goto out;
	}
	r = 0;
out:
	free(last);
	free(q.group);
	free(q.subs);
	free(ext);
	return r;
}

/* md's write-behind: a write's copies for write-mostly members go behind
 * (raid_behind.c) where another copy, neither write-mostly nor being
 * recovered, is written here. */
static void raid_map_behind_begin(struct raid_array *a, struct raid_req *q, uint64_t len,
                                  uint64_t off)
{
	bool other = false;

	for (unsigned i = 0; i < q->nsubs && !other; i++) {
		struct raid_member *m = &a->m[q->subs[i].role];
		other = !atomic_load(&m->write_mostly) && !atomic_load(&m->recovering);
	}
	for (unsigned i = 0; other && i < q->nsubs; i++) {
		struct raid_sub *s = &q->subs[i];
		if (raid_behind_eligible(a, s->role, q->flags))
			s->behind = raid_behind_submit(a, s->role, s->buf, s->len, s->off, off, len,
			                               q->flags);
	}
}

/* The other copies are written: let the copies behind go on, or, where
 * one of the others failed, wait for them and take their results. */
static void raid_map_behind_end(struct raid_array *a, struct raid_req *q)
{
	bool others_ok = true;

	for (unsigned i = 0; i < q->nsubs; i++)
		others_ok &= q->subs[i].behind || !q->subs[i].err;
	for (unsigned i = 0; i < q->nsubs; i++) {
		struct raid_sub *s = &q->subs[i];
		if (s->behind)
			s->err = raid_behind_release(a, s->behind, !others_ok);
		s->behind = NULL;
	}
}

/* Write, trim or zero [off, off+len) on every live copy, and on the
 * copies of roles being recovered (which do not count as live). */
int raid_map_modify(struct raid_array *a, enum raid_op op, const char *buf, uint64_t len,
                    uint64_t off, unsigned flags)
{
	struct raid_loc loc[RAID_MAX_COPIES];
	struct raid_req q = {.a = a, .op = op, .flags = flags};
	struct raid_ext *ext = NULL;
	unsigned *last = NULL;
	unsigned nc;
	int ne, r, member_err = 0, req_err = 0;

	raid_behind_wait_range(a, len, off); /* in the order they were acknowledged */
	ne = raid_extents(a, len, off, &ext);
	if (ne < 0)
		return ne;
	q.subs = malloc((size_t)ne * a->copies * sizeof(*q.subs));
	last = malloc(a->n * sizeof(*last));
	r = -ENOMEM;
	if (!q.subs || !last)
		goto out;
	memset(last, 0xff, a->n * sizeof(*last));
	for (int i = 0; i < ne; i++) {
		unsigned live = 0;
		a->lvl->map(a->priv, &a->g, ext[i].aoff, ext[i].len, loc, &nc);
		for (unsigned c = 0; c < nc; c++) {
			struct raid_member *m = &a->m[loc[c].role];
			bool rec = atomic_load(&m->recovering);
			if (atomic_load(&m->failed) && !rec)
				continue;
			live += !rec;
			raid_sub_add(&q, last, loc[c].role, (unsigned)i, loc[c].off, ext[i].len,
			             buf ? (char *)buf + (ext[i].aoff - off) : NULL);
		}
		r = -EIO;
		if (!live)
			goto out;
	}
	if (op == RAID_WRITE && a->behind)
		raid_map_behind_begin(a, &q, len, off);
	r = raid_req_run(&q);
	raid_map_behind_end(a, &q);
	if (r < 0)
		goto out;
	for (unsigned i = 0; i < q.nsubs; i++) {
		struct raid_sub *s = &q.subs[i];
		if (!s->err && !atomic_load(&a->m[s->role].recovering))
			for (unsigned e = s->e_first; e <= s->e_last; e++)
				ext[e].ok++;
	}
	/* A request error (EINVAL, ...) is the client's only where no copy
	 * took the extents: a member that refused data another copy took is
	 * out of step with it, and fails as for EIO (else the copies would
	 * differ in an array later marked clean).  A trim is advice, and a
	 * fast zeroing a member cannot do fast is the client's to redo by
	 * writing zeros: either refused stays the client's error. */
	for (unsigned i = 0; i < q.nsubs; i++) {
		struct raid_sub *s = &q.subs[i];
		bool taken = false;
		if (!s->err)
			continue;
		if (atomic_load(&a->m[s->role].recovering)) {
			raid_rec_target_failed(a, s->role, s->err);
			continue;
		}
		for (unsigned e = s->e_first; e <= s->e_last; e++)
			taken |= ext[e].ok > 0;
		bool redone = op == RAID_TRIM || (op == RAID_ZERO && (flags & VOL_FAST_ZERO) &&
		                                  (s->err == -ENOTSUP || s->err == -EOPNOTSUPP));
		if (raid_err_is_request(s->err) && (!taken || redone)) {
			if (!req_err)
				req_err = s->err;
			continue;
		}
		raid_member_fail(a, s->role, s->err, false);
		if (!member_err)
			member_err = s->err;
	}
	r = req_err;
	for (int i = 0; i < ne && r == 0; i++) {
		if (ext[i].ok == 0) {
			/* No copy took it: the members' own error (a full
			 * store says ENOSPC, not EIO). */
			r = member_err ? member_err : -EIO;
			break;
		}
	}
out:
	free(last);
	free(q.group);
	free(q.subs);
	free(ext);
	return r;
}
