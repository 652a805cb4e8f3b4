/* raid.c — the engine every RAID level shares: raid_open(), fan-out of
 * member sub-requests, degraded operation and read balancing.
 *
 * A request is mapped into extents by the level (raid_level.map); each
 * extent becomes one sub-request per copy it goes to (one chosen copy for a
 * read, every live copy for a write).  Sub-requests are grouped per member,
 * merged where they are contiguous on the member and in the buffer, and
 * the groups run at once through exec_parallel(); a group runs its pieces
 * in member-offset order, so a member sees a sequential stream as one.
 *
 * Failure: on a redundant level an I/O error from a member marks it failed
 * (once, reported through raid_events) unless that would lose data, and
 * the request is served from the other copies; the client sees no error as
 * long as every block was read from, or written to, at least one copy.  On
 * RAID0 and linear the error goes back to the client for that request.
 *
 * Sequential streams on slow members are read ahead by per-member lanes
 * (the last part of this file), so that one reader with one request in
 * flight gets the bandwidth of every disk. */
#include "raid_internal.h"

#include "core/exec.h"
#include "core/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum raid_op { RAID_READ, RAID_WRITE, RAID_TRIM, RAID_ZERO };

struct raid_ext {
	uint64_t aoff, len;
	unsigned ok;       /* copies written, or 1 once read */
	uint32_t tried;    /* read: copy indices tried */
	unsigned chosen;   /* read: copy index in use */
};

struct raid_sub {
	unsigned role;
	unsigned e_first, e_last; /* extents this sub covers */
	uint64_t off, len;        /* on the member */
	char *buf;                /* NULL for trim and zeroes */
	int err;
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

/* Read-ahead for sequential streams on mirrors (below). */
static int raid_ra_init(struct raid_array *a);
static void raid_ra_destroy(struct raid_array *a);
static int raid_ra_read(struct raid_array *a, char *buf, uint64_t len, uint64_t off);
static void raid_ra_invalidate(struct raid_array *a, uint64_t len, uint64_t off);
static void raid_ra_member_failed(struct raid_array *a, unsigned role);

static struct raid_array *to_raid(struct vol *v)
{
	return container_of(v, struct raid_array, vol);
}

static uint64_t raid_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Errors that say something about the request, not about the member. */
static bool raid_err_is_request(int err)
{
	return err == -ENOTSUP || err == -EOPNOTSUPP || err == -EINVAL ||
	       err == -EROFS || err == -ENOMEM || err == -ENOSPC;
}

/* Would every block still have a live copy if role failed too?  Copy sets
 * of md's layouts repeat every raid_disks chunks, so those are checked. */
static bool raid_survives_without(struct raid_array *a, unsigned role)
{
	struct raid_loc loc[RAID_MAX_COPIES];
	unsigned probes = a->g.level == 10 ? a->g.raid_disks : 1;

	for (unsigned k = 0; k < probes; k++) {
		uint64_t off = (uint64_t)k * a->g.chunk;
		unsigned nc, live = 0;
		if (off >= a->vol.size)
			break;
		a->lvl->map(a->priv, &a->g, off, 1, loc, &nc);
		for (unsigned c = 0; c < nc; c++)
			if (loc[c].role != role && !atomic_load(&a->m[loc[c].role].failed))
				live++;
		if (live == 0)
			return false;
	}
	return true;
}

/* The one transition live -> failed.  Returns 0 if role is (now) failed,
 * -EIO if the level has no redundancy left to lose it. */
static int raid_member_fail(struct raid_array *a, unsigned role, int err,
			    bool by_user)
{
	int r = 0;
	bool report = false;

	pthread_mutex_lock(&a->fail_lock);
	if (atomic_load(&a->m[role].failed)) {
		pthread_mutex_unlock(&a->fail_lock);
		return 0;
	}
	if (!a->lvl->redundant || !raid_survives_without(a, role)) {
		r = by_user ? -EBUSY : -EIO;
	} else {
		atomic_store(&a->m[role].failed, true);
		report = true;
	}
	pthread_mutex_unlock(&a->fail_lock);
	if (report) {
		log_warn("%s: member %u (%s) failed%s: %s", a->vol.name, role,
			 a->m[role].vol->name, by_user ? " by request" : "",
			 strerror(-err));
		raid_ra_member_failed(a, role);
		if (a->ev.member_failed)
			a->ev.member_failed(a->ev.ctx, role, err);
	}
	return r;
}

static const struct vol_ops raid_ops;

int raid_fail_member(struct vol *array, unsigned role)
{
	struct raid_array *a = to_raid(array);

	if (array->ops != &raid_ops)
		return err_set(-EINVAL, "%s is not a RAID array", array->name);
	if (role >= a->n)
		return err_set(-EINVAL, "%s: no role %u", array->name, role);
	int r = raid_member_fail(a, role, -EIO, true);
	if (r < 0)
		return err_set(r, "%s: failing member %u would lose data", array->name, role);
	return 0;
}

/* Members slower than this (measured) are disks: worth reading ahead. */
#define RAID_SLOW_NS_PER_MIB 1000000u /* under ~1 GiB/s */

/* Read or write subs[i] of a group, timing it to estimate the member's
 * speed.  (Gathering chunks that lie together on the disk into one
 * transfer through a bounce was measured slower here on the disk model:
 * the copy delays the transfer more than the extra requests cost.) */
static void raid_group_xfer(struct raid_req *q, struct raid_member *m,
			    struct raid_sub *s)
{
	struct vol *v = m->vol;
	uint64_t t0 = s->len >= (64u << 10) ? raid_now_ns() : 0;

	if (q->op == RAID_READ)
		s->err = v->ops->read(v, s->buf, s->len, s->off);
	else
		s->err = v->ops->write(v, s->buf, s->len, s->off, q->flags);
	if (t0 && s->err == 0) {
		uint64_t ns = (raid_now_ns() - t0) * (1u << 20) / s->len;
		uint64_t old = atomic_load(&m->ns_per_mib);
		atomic_store(&m->ns_per_mib, old ? (old * 3 + ns) / 4 : ns);
	}
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
static void raid_sub_add(struct raid_req *q, unsigned *last, unsigned role,
			 unsigned e, uint64_t off, uint64_t len, char *buf)
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
	*s = (struct raid_sub){ .role = role, .e_first = e, .e_last = e,
				.off = off, .len = len, .buf = buf };
	last[role] = q->nsubs++;
}

/* Is the request so cheap that handing pieces to other threads would cost
 * more than doing them here?  True for small reads on members measured
 * faster than RAID_INLINE_NS_PER_MIB (memory, page cache), where a wake-up
 * costs as much as copying the data. */
#define RAID_INLINE_NS_PER_MIB 250000u /* over ~4 GiB/s */
#define RAID_INLINE_MAX (4u << 20)

static bool raid_req_inline(const struct raid_req *q)
{
	uint64_t total = 0;

	if (q->op != RAID_READ || q->ngroups < 2)
		return false;
	for (unsigned i = 0; i < q->nsubs; i++)
		total += q->subs[i].len;
	if (total > RAID_INLINE_MAX)
		return false;
	for (unsigned g = 0; g < q->ngroups; g++) {
		uint64_t ns = atomic_load(&q->a->m[q->subs[q->group[g]].role].ns_per_mib);
		if (ns == 0 || ns >= RAID_INLINE_NS_PER_MIB)
			return false;
	}
	return true;
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
static int raid_extents(struct raid_array *a, uint64_t len, uint64_t off,
			struct raid_ext **out)
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
		e[n++] = (struct raid_ext){ .aoff = off, .len = l };
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
static int raid_pick_copy(struct raid_array *a, const struct raid_loc *loc,
			  unsigned nc, uint32_t tried)
{
	int best = -1;
	int best_busy = 0;
	uint64_t best_dist = 0;

	for (unsigned c = 0; c < nc; c++) {
		struct raid_member *m = &a->m[loc[c].role];
		if ((tried >> c) & 1 || atomic_load(&m->failed))
			continue;
		int busy = atomic_load(&m->inflight);
		uint64_t last = atomic_load(&m->last_end);
		uint64_t dist = last > loc[c].off ? last - loc[c].off : loc[c].off - last;
		if (best < 0 || busy < best_busy ||
		    (busy == best_busy && dist < best_dist)) {
			best = (int)c;
			best_busy = busy;
			best_dist = dist;
		}
	}
	return best;
}

/* Read [off, off+len) into buf straight from the members, failing over to
 * other copies extent by extent. */
static int raid_read_direct(struct raid_array *a, char *buf, uint64_t len,
			    uint64_t off)
{
	struct raid_loc loc[RAID_MAX_COPIES];
	struct raid_req q = { .a = a, .op = RAID_READ };
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
		r = -EIO;
		if (c < 0)
			goto out;
		ext[i].chosen = (unsigned)c;
		ext[i].tried = 1u << c;
		raid_sub_add(&q, last, loc[c].role, (unsigned)i, loc[c].off,
			     ext[i].len, buf + (ext[i].aoff - off));
	}
	r = raid_req_run(&q);
	if (r < 0)
		goto out;
	/* Mark the failed members, then retry each affected extent from the
	 * copies not tried yet, one at a time: the rare path. */
	for (unsigned i = 0; i < q.nsubs; i++) {
		struct raid_sub *s = &q.subs[i];
		if (!s->err)
			continue;
		if (raid_err_is_request(s->err)) {
			r = s->err;
			goto out;
		}
		raid_member_fail(a, s->role, s->err, false);
		for (unsigned e = s->e_first; e <= s->e_last; e++) {
			struct raid_ext *x = &ext[e];
			int err = -EIO;
			a->lvl->map(a->priv, &a->g, x->aoff, x->len, loc, &nc);
			for (;;) {
				int c = raid_pick_copy(a, loc, nc, x->tried);
				if (c < 0)
					break;
				x->tried |= 1u << c;
				struct vol *v = a->m[loc[c].role].vol;
				err = v->ops->read(v, buf + (x->aoff - off), x->len, loc[c].off);
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
	r = 0;
out:
	free(last);
	free(q.group);
	free(q.subs);
	free(ext);
	return r;
}

/* Write, trim or zero [off, off+len) on every live copy. */
static int raid_modify(struct raid_array *a, enum raid_op op, const char *buf,
		       uint64_t len, uint64_t off, unsigned flags)
{
	struct raid_loc loc[RAID_MAX_COPIES];
	struct raid_req q = { .a = a, .op = op, .flags = flags };
	struct raid_ext *ext = NULL;
	unsigned *last = NULL;
	unsigned nc;
	int ne, r;

	raid_ra_invalidate(a, len, off);
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
			if (atomic_load(&a->m[loc[c].role].failed))
				continue;
			live++;
			raid_sub_add(&q, last, loc[c].role, (unsigned)i, loc[c].off,
				     ext[i].len,
				     buf ? (char *)buf + (ext[i].aoff - off) : NULL);
		}
		r = -EIO;
		if (!live)
			goto out;
	}
	r = raid_req_run(&q);
	if (r < 0)
		goto out;
	for (unsigned i = 0; i < q.nsubs; i++) {
		struct raid_sub *s = &q.subs[i];
		if (!s->err) {
			for (unsigned e = s->e_first; e <= s->e_last; e++)
				ext[e].ok++;
			continue;
		}
		if (raid_err_is_request(s->err)) {
			r = s->err;
			goto out;
		}
		raid_member_fail(a, s->role, s->err, false);
	}
	r = 0;
	for (int i = 0; i < ne; i++) {
		if (ext[i].ok == 0) {
			r = -EIO;
			break;
		}
	}
	/* A write that raced with a read-ahead of the same range. */
	raid_ra_invalidate(a, len, off);
out:
	free(last);
	free(q.group);
	free(q.subs);
	free(ext);
	return r;
}

static int raid_read(struct vol *v, void *buf, uint64_t len, uint64_t off)
{
	struct raid_array *a = to_raid(v);
	int r = raid_ra_read(a, buf, len, off);

	if (r != -EAGAIN)
		return r;
	return raid_read_direct(a, buf, len, off);
}

static int raid_write(struct vol *v, const void *buf, uint64_t len,
		      uint64_t off, unsigned flags)
{
	return raid_modify(to_raid(v), RAID_WRITE, buf, len, off, flags);
}

static int raid_trim(struct vol *v, uint64_t len, uint64_t off, unsigned flags)
{
	return raid_modify(to_raid(v), RAID_TRIM, NULL, len, off, flags);
}

static int raid_write_zeroes(struct vol *v, uint64_t len, uint64_t off,
			     unsigned flags)
{
	return raid_modify(to_raid(v), RAID_ZERO, NULL, len, off, flags);
}

struct raid_flush {
	struct raid_array *a;
	unsigned *roles;
	int *err;
};

static int raid_flush_one(void *arg, unsigned i)
{
	struct raid_flush *f = arg;
	f->err[i] = vol_flush(f->a->m[f->roles[i]].vol);
	return 0;
}

/* Flush every live member at once. */
static int raid_flush(struct vol *v)
{
	struct raid_array *a = to_raid(v);
	struct raid_flush f = { .a = a };
	unsigned n = 0;
	int r = -ENOMEM;

	f.roles = malloc(a->n * sizeof(*f.roles));
	f.err = calloc(a->n, sizeof(*f.err));
	if (!f.roles || !f.err)
		goto out;
	for (unsigned i = 0; i < a->n; i++)
		if (!atomic_load(&a->m[i].failed))
			f.roles[n++] = i;
	r = exec_parallel(n, raid_flush_one, &f);
	for (unsigned i = 0; i < n && r == 0; i++) {
		if (!f.err[i])
			continue;
		if (raid_err_is_request(f.err[i]))
			r = f.err[i];
		else if (raid_member_fail(a, f.roles[i], f.err[i], false) < 0)
			r = f.err[i];
	}
out:
	free(f.roles);
	free(f.err);
	return r;
}

static void raid_close(struct vol *v)
{
	struct raid_array *a = to_raid(v);

	raid_ra_destroy(a);
	for (unsigned i = 0; i < a->n; i++)
		vol_close(a->m[i].vol);
	a->lvl->free(a->priv);
	pthread_mutex_destroy(&a->fail_lock);
	free(a->m);
	vol_fini(v);
	free(a);
}

static const struct vol_ops raid_ops = {
	.kind = "raid",
	.read = raid_read,
	.write = raid_write,
	.flush = raid_flush,
	.trim = raid_trim,
	.write_zeroes = raid_write_zeroes,
	.close = raid_close,
};

static const struct raid_level *raid_level_of(int level)
{
	switch (level) {
	case RAID_LEVEL_LINEAR:
		return &linear_level;
	case 0:
		return &raid0_level;
	case 1:
		return &raid1_level;
	case 10:
		return &raid10_level;
	default:
		return NULL;
	}
}

uint64_t raid_array_size(const struct raid_geom *g, const uint64_t *member_sizes)
{
	const struct raid_level *lvl = raid_level_of(g->level);
	void *priv = NULL;
	uint64_t size = 0;
	unsigned copies;

	if (!lvl || g->raid_disks == 0 || g->raid_disks > RAID_MAX_DISKS)
		return 0;
	if (lvl->setup(g, member_sizes, &priv, &size, &copies) < 0)
		return 0;
	lvl->free(priv);
	return size;
}

/* Capabilities of the array: what every present member can do, with a
 * volatile cache if any member has one. */
static unsigned raid_caps(struct vol **members, unsigned n)
{
	const unsigned all = VOL_CAP_TRIM | VOL_CAP_ZEROES | VOL_CAP_FUA |
			     VOL_CAP_MULTI_CONN | VOL_CAP_FAST_ZERO;
	unsigned caps = all;

	for (unsigned i = 0; i < n; i++) {
		if (!members[i])
			continue;
		caps &= members[i]->caps | ~all;
		caps |= members[i]->caps & (VOL_CAP_READONLY | VOL_CAP_FLUSH);
	}
	return caps;
}

int raid_open(const struct raid_geom *g, struct vol **members,
	      const struct raid_events *ev, const char *name, struct vol **out)
{
	const struct raid_level *lvl = raid_level_of(g->level);
	struct raid_array *a = NULL;
	uint64_t *sizes = NULL, size = 0;
	uint32_t block_min = 512, block_max = UINT32_MAX;
	unsigned missing = 0;
	int r;

	if (!lvl)
		return err_set(-EINVAL, "%s: RAID level %d is not supported", name, g->level);
	if (g->raid_disks == 0 || g->raid_disks > RAID_MAX_DISKS)
		return err_set(-EINVAL, "%s: %u disks is not a valid array", name, g->raid_disks);
	sizes = calloc(g->raid_disks, sizeof(*sizes));
	a = calloc(1, sizeof(*a));
	if (!sizes || !a) {
		r = -ENOMEM;
		goto out;
	}
	for (unsigned i = 0; i < g->raid_disks; i++) {
		if (!members[i]) {
			missing++;
			continue;
		}
		sizes[i] = members[i]->size;
		if (members[i]->block_min > block_min)
			block_min = members[i]->block_min;
		if (members[i]->block_max < block_max)
			block_max = members[i]->block_max;
	}
	if (missing && !lvl->redundant) {
		r = err_set(-ENODEV, "%s: %s cannot run with %u of %u members missing",
			    name, lvl->kind, missing, g->raid_disks);
		goto out;
	}
	if (g->chunk % block_min) {
		r = err_set(-EINVAL, "%s: chunk %u is not a multiple of the members' block size %u",
			    name, g->chunk, block_min);
		goto out;
	}
	a->g = *g;
	a->lvl = lvl;
	a->n = g->raid_disks;
	if (ev)
		a->ev = *ev;
	r = lvl->setup(g, sizes, &a->priv, &size, &a->copies);
	if (r < 0) {
		err_set(r, "%s: %s", name, err_detail(r));
		goto out;
	}
	a->m = calloc(a->n, sizeof(*a->m));
	r = -ENOMEM;
	if (!a->m)
		goto out_priv;
	pthread_mutex_init(&a->fail_lock, NULL);
	r = vol_init(&a->vol, &raid_ops, name, size / block_min * block_min,
		     block_min, raid_caps(members, a->n));
	if (r < 0)
		goto out_lock;
	a->vol.block_max = block_max;
	for (unsigned i = 0; i < a->n; i++) {
		a->m[i].vol = members[i];
		atomic_store(&a->m[i].failed, members[i] == NULL);
	}
	/* Degraded start: every block needs a live copy. */
	for (unsigned i = 0; i < a->n; i++) {
		if (members[i] || raid_survives_without(a, i))
			continue;
		r = err_set(-ENODEV, "%s: too many members missing for %s to run",
			    name, lvl->kind);
		goto out_vol;
	}
	if (a->copies > 1 || (g->level == 0 && a->n > 1)) {
		r = raid_ra_init(a);
		if (r < 0)
			goto out_vol;
	}
	if (missing)
		log_warn("%s: running degraded, %u of %u members missing", name,
			 missing, g->raid_disks);
	*out = &a->vol;
	free(sizes);
	return 0;
out_vol:
	vol_fini(&a->vol);
out_lock:
	pthread_mutex_destroy(&a->fail_lock);
	free(a->m);
out_priv:
	lvl->free(a->priv);
out:
	free(sizes);
	free(a);
	return r;
}

/* ---- read-ahead for sequential streams ----
 *
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
 * piece order, each part one transfer (through a bounce buffer when it is
 * not contiguous in the piece), and goes on to its next part without
 * waiting for the other disks: no disk waits for the slowest one.
 *
 * Pieces live in a ring of K slots covering the window [F, F+K) of pieces
 * from the reader's position F; piece p goes to slot p % K.  Lanes only
 * read inside the window, so memory is K pieces (plus a bounce per lane)
 * whatever the stream does; K leaves room for the other copies' stretches
 * ahead of the reader.  Writes, trims and zeroes drop the pieces they
 * overlap before and after they run, so a piece read while one ran is read
 * again, never served. */

#define RAID_RA_STRETCH (32u << 20)       /* per mirror disk */
#define RAID_RA_PIECE (2u << 20)          /* per data disk */

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
	char *buf;
};

struct raid_ra {
	pthread_mutex_t lock;
	pthread_cond_t work; /* lanes wait for parts to read */
	pthread_cond_t done; /* readers wait for pieces read */
	uint64_t piece;   /* bytes */
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
	struct raid_sub *subs; /* this member's part of a piece */
	unsigned cap;
	char *bounce;
	uint64_t bounce_len;
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

/* Walk piece p's extents.  With l == NULL, mark in s->part which members
 * have a part and count them; else collect l->role's part into l->subs.
 * Returns the number of parts (or subs), or -1 if a block has no live
 * copy or memory ran out. */
static int raid_ra_walk(struct raid_array *a, struct raid_ra_slot *s,
			uint64_t p, struct raid_ra_lane *l)
{
	struct raid_loc loc[RAID_MAX_COPIES];
	uint64_t start = p * a->ra->piece, off = start;
	uint64_t end = a->vol.size - start < a->ra->piece ? a->vol.size : start + a->ra->piece;
	unsigned nc, count = 0;

	while (off < end) {
		uint64_t n = a->lvl->map(a->priv, &a->g, off, end - off, loc, &nc);
		int c = raid_ra_copy(a, loc, nc, p);
		if (c < 0)
			return -1;
		unsigned role = loc[c].role;
		if (!l) {
			if (s->part[role] == PART_NONE) {
				s->part[role] = PART_NEED;
				count++;
			}
		} else if (role == l->role) {
			struct raid_sub *prev = count ? &l->subs[count - 1] : NULL;
			if (prev && prev->off + prev->len == loc[c].off &&
			    prev->buf + prev->len == s->buf + (off - start)) {
				prev->len += n;
			} else {
				if (count == l->cap) {
					unsigned cap = l->cap ? 2 * l->cap : 16;
					struct raid_sub *ns = realloc(l->subs, cap * sizeof(*ns));
					if (!ns)
						return -1;
					l->subs = ns;
					l->cap = cap;
				}
				l->subs[count++] = (struct raid_sub){
					.role = role, .off = loc[c].off, .len = n,
					.buf = s->buf + (off - start) };
			}
		}
		off += n;
	}
	return (int)count;
}

/* Read this lane's part of piece p: each run contiguous on the member is
 * one transfer, through the bounce when it spans several subs. */
static int raid_ra_read_part(struct raid_array *a, struct raid_ra_lane *l,
			     unsigned nsubs)
{
	struct raid_member *m = &a->m[l->role];
	struct vol *v = m->vol;

	atomic_fetch_add(&m->inflight, 1);
	for (unsigned i = 0; i < nsubs;) {
		unsigned j = i;
		uint64_t len = l->subs[i].len;
		while (j + 1 < nsubs && l->subs[j].off + l->subs[j].len == l->subs[j + 1].off &&
		       len + l->subs[j + 1].len <= v->block_max)
			len += l->subs[++j].len;
		char *dst = l->subs[i].buf;
		if (j > i) {
			if (l->bounce_len < len) {
				free(l->bounce);
				l->bounce = malloc(len);
				l->bounce_len = l->bounce ? len : 0;
			}
			if (!l->bounce) {
				atomic_fetch_sub(&m->inflight, 1);
				return -ENOMEM;
			}
			dst = l->bounce;
		}
		uint64_t t0 = raid_now_ns();
		int r = v->ops->read(v, dst, len, l->subs[i].off);
		if (r) {
			atomic_fetch_sub(&m->inflight, 1);
			return r;
		}
		uint64_t ns = (raid_now_ns() - t0) * (1u << 20) / len;
		uint64_t old = atomic_load(&m->ns_per_mib);
		atomic_store(&m->ns_per_mib, old ? (old * 3 + ns) / 4 : ns);
		atomic_store(&m->last_end, l->subs[j].off + l->subs[j].len);
		if (j > i) {
			uint64_t at = 0;
			for (unsigned k = i; k <= j; k++) {
				memcpy(l->subs[k].buf, l->bounce + at, l->subs[k].len);
				at += l->subs[k].len;
			}
		}
		i = j + 1;
	}
	atomic_fetch_sub(&m->inflight, 1);
	return 0;
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
			memset(s->part, PART_NONE, a->n);
			s->piece = p;
			s->gen++;
			s->stale = false;
			s->state = RA_FILLING;
			int n = raid_ra_walk(a, s, p, NULL);
			if (n < 0) {
				s->state = RA_FAILED;
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
		int r = raid_ra_walk(a, s, p, l);
		s->part[l->role] = PART_BUSY;
		s->loading++;
		pthread_mutex_unlock(&ra->lock);
		r = r < 0 ? -ENOMEM : raid_ra_read_part(a, l, (unsigned)r);
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
	free(l->subs);
	free(l->bounce);
	free(l);
	return NULL;
}

static int raid_ra_init(struct raid_array *a)
{
	struct raid_ra *ra = calloc(1, sizeof(*ra));
	uint64_t cap = 128u << 20, unit, stretch = RAID_RA_STRETCH;
	const char *env = getenv("URAID_RA_MAX");

	if (!ra)
		return -ENOMEM;
	if (env)
		cap = strtoull(env, NULL, 0);
	env = getenv("URAID_RA_STRETCH");
	if (env && strtoull(env, NULL, 0) >= 4096)
		stretch = strtoull(env, NULL, 0);
	/* A piece gives each data disk RAID_RA_PIECE (1 MiB on RAID0), in
	 * whole stripes. */
	unsigned width = a->n / a->copies ? a->n / a->copies : 1;
	unit = a->g.chunk ? (uint64_t)a->g.chunk * a->n : 4096;
	uint64_t per_disk = a->copies > 1 ? RAID_RA_PIECE : 1u << 20;
	env = getenv("URAID_RA_PIECE");
	if (env && strtoull(env, NULL, 0) >= 4096)
		per_disk = strtoull(env, NULL, 0);
	ra->piece = (uint64_t)width * per_disk;
	ra->piece = (ra->piece + unit - 1) / unit * unit;
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
		if (ra->stretch == 1 || ra->nslots * ra->piece <= cap)
			break;
		ra->stretch /= 2;
	}
	ra->npieces = (a->vol.size + ra->piece - 1) / ra->piece;
	if (cap == 0 || ra->piece > (256u << 20) || ra->nslots * ra->piece > 2 * cap) {
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

static void raid_ra_destroy(struct raid_array *a)
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
	}
	pthread_cond_destroy(&ra->done);
	pthread_cond_destroy(&ra->work);
	pthread_mutex_destroy(&ra->lock);
	free(ra->slot);
	free(ra->thread);
	free(ra);
	a->ra = NULL;
}

/* Are the live members slow enough for read-ahead to pay?  At least one
 * must have been measured slow and none fast; members not read yet (the
 * other mirrors) do not count. */
static bool raid_ra_members_slow(struct raid_array *a)
{
	bool slow = false;

	for (unsigned i = 0; i < a->n; i++) {
		if (atomic_load(&a->m[i].failed))
			continue;
		uint64_t ns = atomic_load(&a->m[i].ns_per_mib);
		if (ns && ns < RAID_SLOW_NS_PER_MIB)
			return false;
		slow |= ns != 0;
	}
	return slow;
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
			ra->slot[i].buf = malloc(ra->piece);
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
static int raid_ra_read(struct raid_array *a, char *buf, uint64_t len, uint64_t off)
{
	struct raid_ra *ra = a->ra;
	int r = -EAGAIN;

	if (!ra)
		return -EAGAIN;
	pthread_mutex_lock(&ra->lock);
	ra->seq = off == ra->next ? ra->seq + 1 : 0;
	ra->next = off + len;
	if (ra->mode < 0 ||
	    (ra->mode == 0 && (ra->seq < 2 || len < (64u << 10) || !raid_ra_members_slow(a))))
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
		memcpy(buf, s->buf + in, n);
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

static void raid_ra_invalidate(struct raid_array *a, uint64_t len, uint64_t off)
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
		s->gen++;
		if (s->loading)
			s->stale = true;
		else
			s->state = RA_EMPTY;
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
		s->gen++;
		if (s->loading)
			s->stale = true;
		else
			s->state = RA_EMPTY;
	}
	pthread_cond_broadcast(&ra->work);
	pthread_cond_broadcast(&ra->done);
	pthread_mutex_unlock(&ra->lock);
}

int raid_set_readahead(struct vol *array, int mode)
{
	struct raid_array *a = to_raid(array);

	if (array->ops != &raid_ops)
		return -EINVAL;
	if (!a->ra)
		return mode > 0 ? -ENOTSUP : 0;
	pthread_mutex_lock(&a->ra->lock);
	a->ra->mode = mode < 0 ? -1 : mode > 0 ? 1 : 0;
	pthread_mutex_unlock(&a->ra->lock);
	return 0;
}
