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
 * On a parity level (RAID5/6) a block whose member is gone is rebuilt from
 * the stripe's other chunks and its parity, and writes update the parity
 * stripe by stripe (raid_parity.c).
 *
 * Sequential streams on slow members are read ahead by per-member lanes
 * (raid_ra.c), and written behind by them (raid_wb.c, on parity levels too,
 * in whole stripes), so that one reader or writer with one request in
 * flight gets the bandwidth of every disk. */
#include "raid_internal.h"

#include "core/exec.h"
#include "core/log.h"

#include "raid_rebuild.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum raid_op { RAID_READ, RAID_WRITE, RAID_TRIM, RAID_ZERO };

/* One transfer to or from a member. */
struct raid_sub {
	unsigned role;
	unsigned e_first, e_last; /* extents this sub covers */
	uint64_t off, len;        /* on the member */
	char *buf;                /* NULL for trim and zeroes */
	int err;
};

struct raid_ext {
	uint64_t aoff, len;
	unsigned ok;       /* copies written, or 1 once read */
	uint32_t tried;    /* read: copy indices tried */
	unsigned chosen;   /* read: copy index in use */
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

static struct raid_array *to_raid(struct vol *v)
{
	return container_of(v, struct raid_array, vol);
}

void raid_note_speed(struct raid_member *m, uint64_t ns, uint64_t len)
{
	uint64_t per_mib = ns * (1u << 20) / len;
	uint64_t old = atomic_load(&m->ns_per_mib);
	atomic_store(&m->ns_per_mib, old ? (old * 3 + per_mib) / 4 : per_mib);
}

/* Not ENOSPC: a member whose store is full may have taken part of a write
 * (pwrite writes what fits), and the copies would then differ where the
 * client was told the write failed, a parity chunk would no longer match
 * its stripe.  So a full member fails like any other whose write failed
 * (md's rule), and the array goes on with the members that took it. */
bool raid_err_is_request(int err)
{
	return err == -ENOTSUP || err == -EOPNOTSUPP || err == -EINVAL ||
	       err == -EROFS || err == -ENOMEM;
}

/* Would every block still have a live copy if role failed too?  Copy sets
 * of md's layouts repeat every raid_disks chunks, so those are checked. */
static bool raid_survives_without(struct raid_array *a, unsigned role)
{
	struct raid_loc loc[RAID_MAX_COPIES];
	unsigned probes = a->g.level == 10 ? a->g.raid_disks : 1;

	if (a->lvl->parity) {
		unsigned gone = 1;
		for (unsigned i = 0; i < a->n; i++)
			gone += i != role && atomic_load(&a->m[i].failed);
		return gone <= a->lvl->parity;
	}

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

int raid_member_fail(struct raid_array *a, unsigned role, int err,
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
static void raid_rec_target_failed(struct raid_array *a, unsigned role, int err);

struct raid_array *raid_array_of(struct vol *v)
{
	return v->ops == &raid_ops ? to_raid(v) : NULL;
}

int raid_fail_member(struct vol *array, unsigned role)
{
	struct raid_array *a = to_raid(array);

	if (array->ops != &raid_ops)
		return err_set(-EINVAL, "%s is not a RAID array", array->name);
	if (role >= a->n)
		return err_set(-EINVAL, "%s: no role %u", array->name, role);
	if (atomic_load(&a->m[role].recovering)) {
		raid_rec_target_failed(a, role, -EIO);
		return 0;
	}
	int r = raid_member_fail(a, role, -EIO, true);
	if (r < 0)
		return err_set(r, "%s: failing member %u would lose data", array->name, role);
	return 0;
}

int raid_detach_member(struct vol *array, struct vol *member)
{
	struct raid_array *a = raid_array_of(array);
	int role = -1, r = -ENOENT;

	if (!a || !member)
		return -EINVAL;
	/* Staged writes were planned against the members of their time. */
	raid_wb_barrier(a);
	pthread_mutex_lock(&a->fail_lock);
	for (unsigned i = 0; i < a->n; i++) {
		if (a->m[i].vol != member)
			continue;
		if (!atomic_load(&a->m[i].failed) || atomic_load(&a->m[i].recovering)) {
			pthread_mutex_unlock(&a->fail_lock);
			return -EBUSY;
		}
		role = (int)i;
	}
	for (unsigned i = 0; role < 0 && i < a->nretired; i++) {
		if (a->retired[i] != member)
			continue;
		a->retired[i] = a->retired[--a->nretired];
		r = 0;
		break;
	}
	pthread_mutex_unlock(&a->fail_lock);
	if (role >= 0) {
		/* Failed, so nothing picks it any more; what was picked before
		 * (a read-ahead part, a rebuild's read) counts in inflight. */
		for (int t = 0; atomic_load(&a->m[role].inflight) > 0; t++) {
			if (t == 10000)
				return -EBUSY; /* hung in a request: left as it is */
			usleep(1000);
		}
		/* Meanwhile a recovery may have begun on the role, retiring it. */
		pthread_mutex_lock(&a->fail_lock);
		if (a->m[role].vol == member) {
			a->m[role].vol = NULL;
			r = 0;
		}
		for (unsigned i = 0; r < 0 && i < a->nretired; i++) {
			if (a->retired[i] != member)
				continue;
			a->retired[i] = a->retired[--a->nretired];
			r = 0;
		}
		pthread_mutex_unlock(&a->fail_lock);
	}
	if (r == 0)
		vol_close(member);
	return r;
}

/* Are the live members slow enough for staging streams to pay?  At least one
 * must have been measured slow and none fast; members not read yet (the
 * other mirrors) do not count. */
bool raid_members_slow(struct raid_array *a)
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

/* Read or write subs[i] of a group, timing it to estimate the member's
 * speed.  (Gathering chunks that lie together on the disk into one
 * transfer through a bounce was measured slower here on the disk model:
 * the copy delays the transfer more than the extra requests cost.) */
static void raid_group_xfer(struct raid_req *q, struct raid_member *m,
			    struct raid_sub *s)
{
	struct vol *v = m->vol;
	uint64_t t0 = s->len >= (64u << 10) ? clock_now_ns() : 0;

	if (q->op == RAID_READ)
		s->err = v->ops->read(v, s->buf, s->len, s->off);
	else
		s->err = v->ops->write(v, s->buf, s->len, s->off, q->flags);
	if (t0 && s->err == 0)
		raid_note_speed(m, clock_now_ns() - t0, s->len);
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
 * other copies extent by extent, or rebuilding from parity. */
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
		if (c < 0 && a->lvl->parity) {
			ext[i].chosen = UINT32_MAX; /* rebuilt below */
			continue;
		}
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
					if (a->lvl->parity)
						err = raid_parity_rebuild(a, buf + (x->aoff - off),
									  x->len, x->aoff);
					break;
				}
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
	/* Extents whose member was gone from the start. */
	for (int i = 0; i < ne; i++) {
		if (ext[i].chosen != UINT32_MAX)
			continue;
		r = raid_parity_rebuild(a, buf + (ext[i].aoff - off), ext[i].len, ext[i].aoff);
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

int raid_read_members(struct raid_array *a, char *buf, uint64_t len, uint64_t off)
{
	return raid_read_direct(a, buf, len, off);
}

/* A write to a role being recovered failed: the recovery of that role
 * is over (the md layer aborts it); the request does not fail for it. */
static void raid_rec_target_failed(struct raid_array *a, unsigned role, int err)
{
	int zero = 0;

	if (atomic_compare_exchange_strong(&a->m[role].rec_err, &zero, err < 0 ? err : -EIO))
		log_warn("%s: member %u (%s), being recovered, failed: %s", a->vol.name, role,
			 a->m[role].vol->name, strerror(err < 0 ? -err : EIO));
}

/* Write, trim or zero [off, off+len) on every live copy, and on the
 * copies of roles being recovered (which do not count as live). */
static int raid_modify(struct raid_array *a, enum raid_op op, const char *buf,
		       uint64_t len, uint64_t off, unsigned flags)
{
	struct raid_loc loc[RAID_MAX_COPIES];
	struct raid_req q = { .a = a, .op = op, .flags = flags };
	struct raid_ext *ext = NULL;
	unsigned *last = NULL;
	unsigned nc;
	int ne, r, member_err = 0, req_err = 0;

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
			struct raid_member *m = &a->m[loc[c].role];
			bool rec = atomic_load(&m->recovering);
			if (atomic_load(&m->failed) && !rec)
				continue;
			live += !rec;
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

	raid_wb_wait_range(a, len, off);
	int r = raid_ra_read(a, buf, len, off);

	if (r != -EAGAIN)
		return r;
	return raid_read_direct(a, buf, len, off);
}

/* ---- online recovery: the barrier between writes and the rebuild ----
 *
 * While a role is recovered the array serves as usual; what changes for a
 * write (raid_rec_enter/leave, around every write, trim and zeroing):
 *   - RAID1/10: it goes to the recovering copies too, everywhere (as md
 *     does), so nothing the rebuild has passed goes stale.  Its range is
 *     the member offsets it covers on those roles.
 *   - RAID5/6: the parity path (raid_parity.c) leaves the recovering role
 *     out as if it were gone; once the write is on the members, the rows
 *     it touched below the recovery point are rebuilt onto the target
 *     (raid_rebuild_rows).  Its range is its stripe rows, and it is alone
 *     in them (excl) from before its first member write to after that
 *     rebuild, so that a rebuild of a row never reads another write's
 *     half-written stripe.
 *   - either way it never overlaps the rebuild's window (md's resync
 *     barrier): a write into the window waits until the rebuild has moved
 *     on, and the rebuild waits for writes in flight there before it reads
 *     the window, so it never writes data older than a write that
 *     completed over data the write put there.
 * With no recovery running a write only counts itself in wr_fast (one
 * atomic add and sub): raid_recover_begin sets rec_on and waits for those
 * counted before to finish, so every write either saw rec_on or is over.
 *
 * A scrub of a mirror level (raid_check on a live array) uses the same
 * barrier instead of a recovery: writes register the range of every copy
 * they change, and the scrub's window holds the extent it compares, so it
 * never sees one copy written and the other not yet (which a repair would
 * then undo).  Parity levels need no window for that: their writes and
 * the scrub's stripe reads take the stripe's lock. */

static bool raid_rec_overlap(uint64_t lo, uint64_t hi, uint64_t lo2, uint64_t hi2)
{
	return lo < hi && lo2 < hi2 && lo < hi2 && lo2 < hi;
}

/* The member range a write of [off, off+len) registers (see above). */
static void raid_rec_range(struct raid_array *a, uint64_t len, uint64_t off,
			   struct raid_rec_io *io)
{
	struct raid_loc loc[RAID_MAX_COPIES];
	unsigned nc;

	io->lo = UINT64_MAX;
	io->hi = 0;
	while (len > 0) {
		uint64_t n = a->lvl->map(a->priv, &a->g, off, len, loc, &nc);
		for (unsigned c = 0; c < nc; c++) {
			uint64_t lo = loc[c].off, hi = loc[c].off + n;
			if (a->lvl->parity) {
				lo -= lo % a->g.chunk;
				hi = lo + a->g.chunk;
			} else if (!atomic_load(&a->m[loc[c].role].recovering) &&
				   !atomic_load(&a->rec.scrub)) {
				continue;
			}
			io->lo = lo < io->lo ? lo : io->lo;
			io->hi = hi > io->hi ? hi : io->hi;
		}
		off += n;
		len -= n;
	}
}

static bool raid_rec_blocked(struct raid_array *a, const struct raid_rec_io *io)
{
	struct raid_rec *rc = &a->rec;

	if (rc->lo < rc->hi && (rc->lo == 0 && rc->hi == UINT64_MAX))
		return true; /* the whole array: a recovery ends or begins */
	if (raid_rec_overlap(io->lo, io->hi, rc->lo, rc->hi))
		return true;
	if (!io->excl)
		return false;
	for (struct raid_rec_io *o = rc->io; o; o = o->next)
		if (o->excl && raid_rec_overlap(io->lo, io->hi, o->lo, o->hi))
			return true;
	return false;
}

/* Before a write: true if it registered (recovery on), false if it only
 * counted itself in wr_fast. */
static bool raid_rec_enter(struct raid_array *a, struct raid_rec_io *io, uint64_t len,
			   uint64_t off)
{
	struct raid_rec *rc = &a->rec;

	atomic_fetch_add(&a->wr_fast, 1);
	if (!atomic_load(&a->rec_on))
		return false;
	atomic_fetch_sub(&a->wr_fast, 1);
	raid_rec_range(a, len, off, io);
	io->excl = a->lvl->parity != 0;
	pthread_mutex_lock(&rc->lock);
	while (raid_rec_blocked(a, io))
		pthread_cond_wait(&rc->cond, &rc->lock);
	io->next = rc->io;
	rc->io = io;
	pthread_mutex_unlock(&rc->lock);
	return true;
}

/* After a write that returned r: on a parity level, rebuild the rows it
 * touched below the recovery point onto the targets; then unregister. */
static int raid_rec_leave(struct raid_array *a, struct raid_rec_io *io, bool reg, int r)
{
	struct raid_rec *rc = &a->rec;

	if (!reg) {
		atomic_fetch_sub(&a->wr_fast, 1);
		return r;
	}
	pthread_mutex_lock(&rc->lock);
	uint64_t point = rc->point;
	pthread_mutex_unlock(&rc->lock);
	if (io->excl && io->lo < io->hi && io->lo < point) {
		uint64_t hi = io->hi < point ? io->hi : point;
		int e = raid_rebuild_rows(a, io->lo, hi);
		/* The target now misses what this write changed: its
		 * recovery is over (the write itself stands). */
		for (unsigned i = 0; e < 0 && i < a->n; i++)
			if (atomic_load(&a->m[i].recovering))
				raid_rec_target_failed(a, i, e);
	}
	pthread_mutex_lock(&rc->lock);
	for (struct raid_rec_io **pp = &rc->io; *pp; pp = &(*pp)->next) {
		if (*pp == io) {
			*pp = io->next;
			break;
		}
	}
	pthread_cond_broadcast(&rc->cond);
	pthread_mutex_unlock(&rc->lock);
	return r;
}

void raid_rec_window(struct raid_array *a, uint64_t lo, uint64_t hi, uint64_t point)
{
	struct raid_rec *rc = &a->rec;
	bool busy = true;

	pthread_mutex_lock(&rc->lock);
	rc->lo = lo;
	rc->hi = hi;
	rc->point = point;
	pthread_cond_broadcast(&rc->cond);
	while (lo < hi && busy) {
		busy = false;
		for (struct raid_rec_io *o = rc->io; o && !busy; o = o->next)
			busy = raid_rec_overlap(o->lo, o->hi, lo, hi) ||
			       (lo == 0 && hi == UINT64_MAX);
		if (busy)
			pthread_cond_wait(&rc->cond, &rc->lock);
	}
	pthread_mutex_unlock(&rc->lock);
}

static int raid_write(struct vol *v, const void *buf, uint64_t len,
		      uint64_t off, unsigned flags)
{
	struct raid_array *a = to_raid(v);
	struct raid_rec_io io;
	bool reg = raid_rec_enter(a, &io, len, off);
	int r = raid_wb_write(a, buf, len, off, flags);

	if (r != -EAGAIN)
		return raid_rec_leave(a, &io, reg, r);
	if (a->lvl->parity) {
		raid_ra_invalidate(a, len, off);
		r = raid_parity_write(a, buf, len, off, flags);
		raid_wb_direct_done(a);
		/* A write that raced with a read-ahead of the same range. */
		raid_ra_invalidate(a, len, off);
		return raid_rec_leave(a, &io, reg, r);
	}
	r = raid_modify(a, RAID_WRITE, buf, len, off, flags);
	return raid_rec_leave(a, &io, reg, r);
}

static int raid_trim(struct vol *v, uint64_t len, uint64_t off, unsigned flags)
{
	struct raid_array *a = to_raid(v);
	int r = raid_wb_barrier(a);

	if (a->lvl->parity)
		return -ENOTSUP; /* a trimmed chunk would no longer match its parity */
	if (r)
		return r;
	struct raid_rec_io io;
	bool reg = raid_rec_enter(a, &io, len, off);
	r = raid_modify(a, RAID_TRIM, NULL, len, off, flags);
	return raid_rec_leave(a, &io, reg, r);
}

static int raid_write_zeroes(struct vol *v, uint64_t len, uint64_t off,
			     unsigned flags)
{
	struct raid_array *a = to_raid(v);
	int r = raid_wb_barrier(a);

	if (r)
		return r;
	if (a->lvl->parity) /* zeros, parity and all (raid_write registers) */
		return flags & VOL_FAST_ZERO ? -ENOTSUP
					     : vol_write_zeroes_by_writing(v, len, off, flags);
	struct raid_rec_io io;
	bool reg = raid_rec_enter(a, &io, len, off);
	/* A recovering member that cannot zero fast: fail before any
	 * member is zeroed (the client writes zeros instead). */
	for (unsigned i = 0; reg && (flags & VOL_FAST_ZERO) && i < a->n; i++)
		if (atomic_load(&a->m[i].recovering) && !(a->m[i].vol->caps & VOL_CAP_FAST_ZERO))
			return raid_rec_leave(a, &io, reg, -ENOTSUP);
	r = raid_modify(a, RAID_ZERO, NULL, len, off, flags);
	return raid_rec_leave(a, &io, reg, r);
}

/* The bytes of each member a recovery rebuilds. */
static uint64_t raid_rec_member_bytes(struct raid_array *a)
{
	return a->g.dev_size ? a->g.dev_size : a->vol.size;
}

int raid_recover_begin(struct vol *array, unsigned role, struct vol *target, uint64_t from)
{
	struct raid_array *a = raid_array_of(array);
	struct raid_rec *rc;

	if (!a)
		return err_set(-EINVAL, "%s is not a RAID array", array->name);
	rc = &a->rec;
	if (!a->lvl->redundant)
		return err_set(-EINVAL, "%s: %s has no redundancy to recover", array->name,
			       a->lvl->kind);
	if (atomic_load(&rc->scrub))
		return err_set(-EBUSY, "%s: a check is running: recovery waits for it",
			       array->name);
	if (role >= a->n || !atomic_load(&a->m[role].failed) ||
	    atomic_load(&a->m[role].recovering))
		return err_set(-EINVAL, "%s: role %u is not missing: nothing to recover",
			       array->name, role);
	if (target->size < raid_rec_member_bytes(a) || target->block_min > a->vol.block_min)
		return err_set(-EINVAL, "%s: %s cannot hold role %u (too small, or blocks of %u)",
			       array->name, target->name, role, target->block_min);
	uint64_t unit = a->g.chunk ? a->g.chunk : 4096;
	from -= from % unit;
	if (rc->n == 0) {
		/* Write-behind stages pieces for the live copies only: off
		 * (what it holds written out) until the recovery ends. */
		rc->wb_mode = raid_wb_mode(a);
		raid_set_writebehind(array, -1);
	}
	/* Another role recovering: writes registered for it may not cover
	 * this one; none in flight while it joins. */
	if (rc->n)
		raid_rec_window(a, 0, UINT64_MAX, rc->point);
	pthread_mutex_lock(&a->fail_lock);
	if (a->m[role].vol) {
		/* A failed member's vol may still be in use by a request
		 * that failed on it: kept until the array closes. */
		struct vol **nr = realloc(a->retired, (a->nretired + 1) * sizeof(*nr));
		if (!nr) {
			pthread_mutex_unlock(&a->fail_lock);
			raid_rec_window(a, 0, 0, rc->point);
			return -ENOMEM;
		}
		a->retired = nr;
		a->retired[a->nretired++] = a->m[role].vol;
	}
	a->m[role].vol = target;
	atomic_store(&a->m[role].rec_err, 0);
	atomic_store(&a->m[role].ns_per_mib, 0);
	atomic_store(&a->m[role].recovering, true);
	pthread_mutex_unlock(&a->fail_lock);
	pthread_mutex_lock(&rc->lock);
	rc->point = rc->n == 0 || from < rc->point ? from : rc->point;
	rc->n++;
	rc->lo = rc->hi = 0; /* the window taken above, if any */
	pthread_cond_broadcast(&rc->cond);
	pthread_mutex_unlock(&rc->lock);
	atomic_store(&a->rec_on, true);
	/* Writes that did not see rec_on: over before the rebuild reads. */
	while (atomic_load(&a->wr_fast) > 0)
		usleep(200);
	raid_wb_barrier(a);
	log_info("%s: member %u (%s) is being recovered from %llu bytes on", array->name, role,
		 target->name, (unsigned long long)from);
	return 0;
}

int raid_scrub_begin(struct raid_array *a)
{
	struct raid_rec *rc = &a->rec;

	pthread_mutex_lock(&rc->lock);
	bool busy = rc->n > 0 || atomic_load(&rc->scrub);
	if (!busy) {
		atomic_store(&rc->scrub, true);
		rc->lo = rc->hi = rc->point = 0; /* point 0: nothing to rebuild */
	}
	pthread_mutex_unlock(&rc->lock);
	if (busy)
		return err_set(-EBUSY, "%s: a recovery or another check is running",
			       a->vol.name);
	if (a->lvl->parity)
		return 0;
	rc->wb_mode = raid_wb_mode(a);
	raid_set_writebehind(&a->vol, -1);
	atomic_store(&a->rec_on, true);
	while (atomic_load(&a->wr_fast) > 0)
		usleep(200);
	raid_wb_barrier(a);
	return 0;
}

void raid_scrub_end(struct raid_array *a)
{
	struct raid_rec *rc = &a->rec;

	if (!a->lvl->parity) {
		raid_rec_window(a, 0, 0, 0);
		atomic_store(&a->rec_on, false);
		raid_set_writebehind(&a->vol, rc->wb_mode);
	}
	atomic_store(&rc->scrub, false);
}

/* End the recovery of role: in sync, or failed. */
static int raid_recover_end(struct raid_array *a, unsigned role, bool in_sync)
{
	struct raid_rec *rc = &a->rec;
	int r = 0;

	if (role >= a->n || !atomic_load(&a->m[role].recovering))
		return -EINVAL;
	/* No write in flight while the role changes state. */
	raid_rec_window(a, 0, UINT64_MAX, rc->point);
	if (in_sync && atomic_load(&a->m[role].rec_err))
		in_sync = false, r = -EIO;
	pthread_mutex_lock(&a->fail_lock);
	atomic_store(&a->m[role].recovering, false);
	if (in_sync)
		atomic_store(&a->m[role].failed, false);
	pthread_mutex_unlock(&a->fail_lock);
	if (in_sync && a->lvl->parity)
		raid_parity_forget(a, 0, UINT64_MAX);
	pthread_mutex_lock(&rc->lock);
	bool last = --rc->n == 0;
	pthread_mutex_unlock(&rc->lock);
	if (last) {
		atomic_store(&a->rec_on, false);
		raid_set_writebehind(&a->vol, rc->wb_mode);
	}
	raid_rec_window(a, 0, 0, rc->point);
	return r;
}

int raid_recover_finish(struct vol *array, unsigned role)
{
	struct raid_array *a = raid_array_of(array);
	return a ? raid_recover_end(a, role, true) : -EINVAL;
}

void raid_recover_abort(struct vol *array, unsigned role)
{
	struct raid_array *a = raid_array_of(array);
	if (a)
		raid_recover_end(a, role, false);
}

int raid_recover_error(struct vol *array, unsigned role)
{
	struct raid_array *a = raid_array_of(array);
	return a && role < a->n ? atomic_load(&a->m[role].rec_err) : 0;
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
	int r = raid_wb_barrier(a);

	if (r)
		return r;
	r = -ENOMEM;
	f.roles = malloc(a->n * sizeof(*f.roles));
	f.err = calloc(a->n, sizeof(*f.err));
	if (!f.roles || !f.err)
		goto out;
	/* Recovering members too: what a client flushed below their
	 * recovery point must be durable there as well. */
	for (unsigned i = 0; i < a->n; i++)
		if (!atomic_load(&a->m[i].failed) || atomic_load(&a->m[i].recovering))
			f.roles[n++] = i;
	r = exec_parallel(n, raid_flush_one, &f);
	for (unsigned i = 0; i < n && r == 0; i++) {
		if (!f.err[i])
			continue;
		if (atomic_load(&a->m[f.roles[i]].recovering))
			raid_rec_target_failed(a, f.roles[i], f.err[i]);
		else if (raid_err_is_request(f.err[i]))
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

	raid_wb_destroy(a);
	raid_ra_destroy(a);
	for (unsigned i = 0; i < a->n; i++)
		vol_close(a->m[i].vol);
	for (unsigned i = 0; i < a->nretired; i++)
		vol_close(a->retired[i]);
	free(a->retired);
	a->lvl->free(a->priv);
	pthread_mutex_destroy(&a->fail_lock);
	pthread_mutex_destroy(&a->rec.lock);
	pthread_cond_destroy(&a->rec.cond);
	raid_parity_destroy(a);
	free(a->m);
	vol_fini(v);
	free(a);
}

/* A member's view, its pieces moved back to the array's offsets. */
struct raid_view {
	vol_view_fn fn;
	void *arg;
	uint64_t aoff, moff; /* the extent's start, on the array and the member */
};

static int raid_view_piece(void *arg, const void *src, uint64_t len, uint64_t off)
{
	struct raid_view *rv = arg;
	return rv->fn(rv->arg, src, len, rv->aoff + (off - rv->moff));
}

/* The view of RAID0/1/10 over plain stores (VOL_CAP_VIEW; see raid_open):
 * extent by extent, a live copy's own view, the copies taken in turn from
 * view to view.  A view that faults (-EIO) fails nothing: the caller reads
 * instead, and the read path fails the member over as for any error.
 * Disk models and block devices show no view, so read-ahead and read
 * balancing stay where they matter; over files on a disk the crypt layer
 * finds the view slow and reads instead (crypt.c times its child). */
static int raid_view(struct vol *v, uint64_t len, uint64_t off, vol_view_fn fn, void *arg)
{
	struct raid_array *a = to_raid(v);
	struct raid_loc loc[RAID_MAX_COPIES];
	unsigned turn = atomic_fetch_add_explicit(&a->view_next, 1, memory_order_relaxed);
	unsigned nc;
	int r = 0;

	raid_wb_wait_range(a, len, off);
	while (len > 0 && r == 0) {
		uint64_t n = a->lvl->map(a->priv, &a->g, off, len, loc, &nc);
		int pick = -1;
		for (unsigned c = 0; c < nc && pick < 0; c++)
			if (!atomic_load(&a->m[loc[(turn + c) % nc].role].failed))
				pick = (int)((turn + c) % nc);
		if (pick < 0)
			return -EIO;
		struct raid_view rv = { fn, arg, off, loc[pick].off };
		r = vol_view(a->m[loc[pick].role].vol, n, loc[pick].off, raid_view_piece, &rv);
		off += n;
		len -= n;
	}
	return r;
}

/* The array's extents from its members': each extent the level maps is
 * zeros (a hole) only as far as every live copy of it is, so a client that
 * skips it reads what any copy would give; data whose member is gone
 * (rebuilt from parity on reads) counts as data.  Write-behind is written
 * out first: the members do not hold its pieces yet. */
static int raid_alloc_extents(struct vol *v, uint64_t len, uint64_t off, vol_extent_fn fn,
			      void *arg)
{
	struct raid_array *a = to_raid(v);
	struct raid_loc loc[RAID_MAX_COPIES];
	unsigned nc;
	int r = raid_wb_barrier(a);

	while (r == 0 && len > 0) {
		uint64_t n = a->lvl->map(a->priv, &a->g, off, len, loc, &nc);
		uint64_t run = n;
		unsigned flags = VOL_EXTENT_HOLE | VOL_EXTENT_ZERO;
		bool live = false;

		for (unsigned c = 0; c < nc && r == 0; c++) {
			struct raid_member *m = &a->m[loc[c].role];
			uint64_t got;
			unsigned f;

			if (!m->vol || atomic_load(&m->failed))
				continue;
			r = vol_extent_first(m->vol, n, loc[c].off, &got, &f);
			live = true;
			run = got < run ? got : run;
			flags &= f;
		}
		if (r < 0)
			break;
		if (!live) {
			run = n;
			flags = 0;
		}
		r = fn(arg, run, flags);
		off += run;
		len -= run;
	}
	return r;
}

static const struct vol_ops raid_ops = {
	.kind = "raid",
	.read = raid_read,
	.write = raid_write,
	.flush = raid_flush,
	.trim = raid_trim,
	.write_zeroes = raid_write_zeroes,
	.close = raid_close,
	.view = raid_view,
	.extents = raid_alloc_extents,
};

const struct raid_level *raid_level_of(int level)
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
	case 5:
		return &raid5_level;
	case 6:
		return &raid6_level;
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
	pthread_mutex_init(&a->rec.lock, NULL);
	pthread_cond_init(&a->rec.cond, NULL);
	if (lvl->parity) {
		r = raid_parity_init(a);
		if (r < 0)
			goto out_lock;
	}
	/* Parity levels neither trim (a trimmed chunk would not match its
	 * parity) nor zero cheaply (zeros are written, parity and all). */
	unsigned caps = raid_caps(members, a->n);
	if (lvl->parity)
		caps &= ~(VOL_CAP_TRIM | VOL_CAP_ZEROES | VOL_CAP_FAST_ZERO);
	/* A view (vol.h) where every member present has one and extents
	 * end on 4096-byte boundaries: RAID0/1/10 with such chunks.  Parity
	 * levels and linear (members of any size) go without. */
	bool views = !lvl->parity && g->level != RAID_LEVEL_LINEAR && g->chunk % 4096 == 0;
	for (unsigned i = 0; i < a->n; i++)
		views &= !members[i] || (members[i]->caps & VOL_CAP_VIEW);
	caps = views ? caps | VOL_CAP_VIEW : caps & ~VOL_CAP_VIEW;
	r = vol_init(&a->vol, &raid_ops, name, size / block_min * block_min, block_min, caps);
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
	if (a->copies > 1 || (g->level == 0 && a->n > 1) || lvl->parity) {
		r = raid_ra_init(a);
		if (r < 0)
			goto out_vol;
	}
	if (a->n > 1) {
		r = raid_wb_init(a);
		if (r < 0)
			goto out_ra;
		if (a->wb)
			a->vol.caps |= VOL_CAP_FLUSH; /* a volatile cache now */
	}
	if (missing)
		log_warn("%s: running degraded, %u of %u members missing", name,
			 missing, g->raid_disks);
	*out = &a->vol;
	free(sizes);
	return 0;
out_ra:
	raid_ra_destroy(a);
out_vol:
	vol_fini(&a->vol);
out_lock:
	raid_parity_destroy(a);
	pthread_mutex_destroy(&a->fail_lock);
	pthread_mutex_destroy(&a->rec.lock);
	pthread_cond_destroy(&a->rec.cond);
	free(a->m);
out_priv:
	lvl->free(a->priv);
out:
	free(sizes);
	free(a);
	return r;
}
