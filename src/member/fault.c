/* fault.c — fault:OPTS:INNER, error injection as a layer (the nbdkit error
 * filter and SQLite's test VFS are the model).  Options, comma-separated:
 *
 *   eio=OFF+LEN[/OFF+LEN...]  ops touching these byte ranges fail with EIO
 *   after=N                   every op after the first N fails with EIO; only
 *                             the ops mode= names count (with mode=write the
 *                             reads an opening stack makes do not)
 *   chance=P                  each op fails with probability P (0..1)
 *   latency=DUR               every op sleeps DUR first
 *   mode=read|write|all       which ops the failures apply to (default all;
 *                             write covers write, trim, write_zeroes, flush)
 *   align=N                   reads and writes whose buffer does not start at
 *                             a multiple of N fail with EINVAL, as O_DIRECT's
 *                             do (whatever mode says)
 *   errno=NAME                what the failures return: EIO (the default),
 *                             EINVAL, ENOMEM, ENOSPC, ENOTSUP or EROFS
 *   crash=GROUP               power-cut mode (below); with seed=S (default 0),
 *                             cut-after=N and hold=SIZE (default 256M)
 *
 * Tests also flip a fault vol to dead at run time (fault_member_kill) and
 * count the ops that reached it (fault_member_counts).
 *
 * Power-cut mode models a disk with a volatile write cache (SQLite's crash
 * test VFS is the model).  A crash member holds every write and zeroing
 * since its last completed flush in memory, in arrival order; reads see
 * them over the inner member.  A flush writes them through to the inner
 * member, in order, then flushes it.  A FUA write goes through at once (and
 * stays on the list, so that replaying the list keeps its place in the
 * order).  Trim is a no-op (vol.h lets a trim keep the old data).  A write
 * that would hold more than hold= bytes first makes the oldest writes
 * durable, down to half of it, as a cache that fills up destages.  A power
 * cut of the group (fault_power_cut, or the cut-after=N'th write across the
 * group, which fails) deals with every member's held writes in order, each
 * kept, dropped or torn (a random subset of its sectors reaches the inner
 * member) from a generator seeded with seed= and the member's place in the
 * group (the order members joined it), then fails every later op with EIO
 * until the member is closed.  A member closed with its power on writes
 * what it holds through first. */
#include "member.h"

#include "core/log.h"
#include "core/units.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FAULT_MAX_RANGES 16
#define CRASH_HOLD_DEFAULT (256ull << 20)

/* A write a crash member holds; data NULL for a zeroing. */
struct crash_write {
	struct crash_write *next;
	uint64_t off, len;
	unsigned char *data;
	bool durable; /* FUA: on the inner member already */
};

/* A power-cut group: the crash members that lose power together.  Members
 * join at open and leave at close; the last to leave frees it. */
struct crash_group {
	struct crash_group *next;
	char *name;
	struct fault_vol **members;
	unsigned n, cap;
	unsigned joined;    /* members that ever joined: the next one's place */
	uint64_t cut_after; /* 0: no cut-after */
	atomic_uint_fast64_t writes;
	atomic_bool cut;
};

static pthread_mutex_t crash_groups_lock = PTHREAD_MUTEX_INITIALIZER;
static struct crash_group *crash_groups;

enum fault_op { FAULT_READ, FAULT_WRITE, FAULT_FLUSH, FAULT_TRIM, FAULT_ZERO };

struct fault_vol {
	struct vol vol;
	struct vol *inner;
	struct {
		uint64_t off, len;
	} eio[FAULT_MAX_RANGES];
	unsigned n_eio;
	bool has_after;
	uint64_t after;
	double chance;
	uint64_t latency_ns;
	bool on_read, on_write;
	uint64_t align; /* 0: any buffer */
	int err;        /* what an injected failure returns: -EIO unless errno= */
	atomic_bool dead;
	atomic_uint_fast64_t ops; /* ops of mode='s kinds seen, for after= */
	atomic_uint_fast64_t count[5];
	pthread_mutex_t rng_lock;
	unsigned long long rng;

	/* Power-cut mode (group non-NULL).  hold_lock guards the list and
	 * powered_off: readers share it, writers, flushes and cuts own it. */
	struct crash_group *group;
	unsigned place; /* in the group, for the cut's generator */
	uint64_t seed, hold_max, held_bytes;
	pthread_rwlock_t hold_lock;
	struct crash_write *held, **held_tail;
	bool powered_off;
};

static struct fault_vol *to_fault(struct vol *v)
{
	return container_of(v, struct fault_vol, vol);
}

/* Decide whether this op fails.  len/off describe the range (0/0 for a
 * flush, which only after=, chance= and death touch). */
static int fault_check(struct fault_vol *f, enum fault_op op, uint64_t len, uint64_t off)
{
	atomic_fetch_add(&f->count[op], 1);
	uint64_t n;

	if (f->latency_ns) {
		struct timespec ts = {(time_t)(f->latency_ns / 1000000000u),
		                      (long)(f->latency_ns % 1000000000u)};
		while (nanosleep(&ts, &ts) == EINTR)
			;
	}
	if (atomic_load(&f->dead))
		return -EIO;
	if (op == FAULT_READ ? !f->on_read : !f->on_write)
		return 0;
	n = atomic_fetch_add(&f->ops, 1);
	for (unsigned i = 0; i < f->n_eio; i++) {
		if (len && off < f->eio[i].off + f->eio[i].len && f->eio[i].off < off + len)
			return f->err;
	}
	if (f->has_after && n >= f->after)
		return f->err;
	if (f->chance > 0) {
		pthread_mutex_lock(&f->rng_lock);
		f->rng ^= f->rng >> 12;
		f->rng ^= f->rng << 25;
		f->rng ^= f->rng >> 27;
		double u = (double)((f->rng * 2685821657736338717ULL) >> 11) / (double)(1ULL << 53);
		pthread_mutex_unlock(&f->rng_lock);
		if (u < f->chance)
			return f->err;
	}
	return 0;
}

static int fault_align(const struct fault_vol *f, const void *buf)
{
	return f->align && (uintptr_t)buf % f->align ? -EINVAL : 0;
}

/* ---- power-cut mode ---- */

/* The power is gone: the group's cut began (one store, so that the whole
 * group loses it at once, whatever the order its members are dealt with
 * in) or this member was dealt with.  Under hold_lock. */
static bool crash_off(const struct fault_vol *f)
{
	return f->powered_off || atomic_load(&f->group->cut);
}

static uint64_t crash_next(uint64_t *s) /* splitmix64 */
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Put [off, off+len) of held write w onto the inner member. */
static int crash_apply(struct fault_vol *f, const struct crash_write *w, uint64_t len, uint64_t off)
{
	if (!w->data)
		return vol_write_zeroes(f->inner, len, off, 0);
	return vol_write(f->inner, w->data + (off - w->off), len, off, 0);
}

static void crash_free(struct fault_vol *f, struct crash_write *w)
{
	if (w->data)
		f->held_bytes -= w->len;
	free(w->data);
	free(w);
}

/* Write the oldest held writes through until at most keep bytes are held,
 * then flush the inner member.  Under hold_lock (owned). */
static int crash_destage(struct fault_vol *f, uint64_t keep)
{
	struct crash_write *w;
	int r = 0;

	while ((w = f->held) && (f->held_bytes > keep || keep == 0)) {
		r = crash_apply(f, w, w->len, w->off);
		if (r < 0)
			return r;
		f->held = w->next;
		if (!f->held)
			f->held_tail = &f->held;
		crash_free(f, w);
	}
	return vol_flush(f->inner);
}

/* The power cut of one member: each held write kept, dropped or torn, then
 * nothing works any more.  A write already durable (FUA) is replayed whole
 * so that no older one kept after it covers it.  What the inner member
 * does with the survivors is its own business: errors are not reported
 * (there is nobody to report them to when the power is gone). */
static void crash_member_cut(struct fault_vol *f)
{
	uint64_t rng = f->seed ^ ((uint64_t)f->place * 0xd1b54a32d192ed03ULL);
	uint64_t sector = f->inner->block_min > 512 ? f->inner->block_min : 512;

	pthread_rwlock_wrlock(&f->hold_lock);
	for (struct crash_write *w = f->held; w; w = w->next) {
		uint64_t fate = w->durable ? 0 : crash_next(&rng) % 3;
		if (fate == 0) {
			(void)crash_apply(f, w, w->len, w->off);
		} else if (fate == 2) {
			for (uint64_t o = w->off; o < w->off + w->len; o += sector)
				if (crash_next(&rng) & 1)
					(void)crash_apply(f, w, sector, o);
		}
	}
	(void)vol_flush(f->inner);
	while (f->held) {
		struct crash_write *w = f->held;
		f->held = w->next;
		crash_free(f, w);
	}
	f->held_tail = &f->held;
	f->powered_off = true;
	pthread_rwlock_unlock(&f->hold_lock);
}

/* Under crash_groups_lock. */
static struct crash_group *crash_group_find(const char *name)
{
	for (struct crash_group *g = crash_groups; g; g = g->next)
		if (strcmp(g->name, name) == 0)
			return g;
	return NULL;
}

/* Free g if no member is left in it.  Under crash_groups_lock. */
static void crash_group_drop_empty(struct crash_group *g)
{
	struct crash_group **pp = &crash_groups;

	if (g->n)
		return;
	while (*pp != g)
		pp = &(*pp)->next;
	*pp = g->next;
	free(g->name);
	free(g->members);
	free(g);
}

/* Cut g's power (once; a second cut finds nothing held).  Under
 * crash_groups_lock, so that no member joins or leaves meanwhile. */
static void crash_group_cut(struct crash_group *g)
{
	atomic_store(&g->cut, true);
	for (unsigned i = 0; i < g->n; i++)
		crash_member_cut(g->members[i]);
}

int fault_power_cut(const char *group)
{
	struct crash_group *g;

	pthread_mutex_lock(&crash_groups_lock);
	g = crash_group_find(group);
	if (g)
		crash_group_cut(g);
	pthread_mutex_unlock(&crash_groups_lock);
	return g ? 0 : -ENOENT;
}

/* Join the group f->group names (made on first use).  cut_after 0 takes
 * the group's; another value must agree with it. */
static int crash_join(struct fault_vol *f, const char *name, uint64_t cut_after)
{
	struct crash_group *g;
	int r = 0;

	pthread_mutex_lock(&crash_groups_lock);
	g = crash_group_find(name);
	if (!g) {
		g = calloc(1, sizeof(*g));
		if (!g || !(g->name = strdup(name))) {
			free(g);
			r = -ENOMEM;
			goto out;
		}
		g->next = crash_groups;
		crash_groups = g;
	}
	if (cut_after && g->cut_after && cut_after != g->cut_after) {
		r = err_set(-EINVAL,
		            "fault: crash group %s already cuts after %llu writes, not %llu", name,
		            (unsigned long long)g->cut_after, (unsigned long long)cut_after);
		goto out;
	}
	if (g->n == g->cap) {
		unsigned cap = g->cap ? 2 * g->cap : 4;
		struct fault_vol **m = realloc(g->members, cap * sizeof(*m));
		if (!m) {
			r = -ENOMEM;
			goto out;
		}
		g->members = m;
		g->cap = cap;
	}
	if (cut_after)
		g->cut_after = cut_after;
	g->members[g->n++] = f;
	f->place = g->joined++;
	f->group = g;
out:
	if (r < 0 && g)
		crash_group_drop_empty(g); /* the one made above */
	pthread_mutex_unlock(&crash_groups_lock);
	return r;
}

/* A member closed with its power on keeps what it holds, as a disk's
 * cache drains while it stays powered; then it leaves its group. */
static void crash_leave(struct fault_vol *f)
{
	struct crash_group *g = f->group;

	pthread_rwlock_wrlock(&f->hold_lock);
	int r = crash_off(f) ? 0 : crash_destage(f, 0);
	pthread_rwlock_unlock(&f->hold_lock);
	if (r < 0)
		log_warn("%s: writing held writes at close: %s", f->vol.name, strerror(-r));
	pthread_mutex_lock(&crash_groups_lock);
	for (unsigned i = 0; i < g->n; i++)
		if (g->members[i] == f) {
			g->members[i] = g->members[--g->n];
			break;
		}
	crash_group_drop_empty(g);
	pthread_mutex_unlock(&crash_groups_lock);
	while (f->held) {
		struct crash_write *w = f->held;
		f->held = w->next;
		crash_free(f, w);
	}
	pthread_rwlock_destroy(&f->hold_lock);
}

/* The inner member's bytes with the held writes laid over them. */
static int crash_read(struct fault_vol *f, void *buf, uint64_t len, uint64_t off)
{
	unsigned char *p = buf;
	int r = -EIO;

	pthread_rwlock_rdlock(&f->hold_lock);
	if (crash_off(f))
		goto out;
	r = f->inner->ops->read(f->inner, buf, len, off);
	for (struct crash_write *w = f->held; w && r == 0; w = w->next) {
		uint64_t lo = w->off > off ? w->off : off;
		uint64_t hi = w->off + w->len < off + len ? w->off + w->len : off + len;
		if (lo >= hi)
			continue;
		if (w->data)
			memcpy(p + (lo - off), w->data + (lo - w->off), hi - lo);
		else
			memset(p + (lo - off), 0, hi - lo);
	}
out:
	pthread_rwlock_unlock(&f->hold_lock);
	return r;
}

/* Count a write against the group's cut-after; the cut-after'th cuts the
 * group's power from here, and it and every later one fail. */
static int crash_count(struct fault_vol *f)
{
	struct crash_group *g = f->group;

	if (atomic_load(&g->cut))
		return -EIO;
	if (!g->cut_after)
		return 0;
	uint64_t n = atomic_fetch_add(&g->writes, 1) + 1;
	if (n < g->cut_after)
		return 0;
	if (n == g->cut_after) {
		pthread_mutex_lock(&crash_groups_lock);
		crash_group_cut(g);
		pthread_mutex_unlock(&crash_groups_lock);
	}
	return -EIO;
}

/* Hold a write (buf NULL: a zeroing). */
static int crash_write(struct fault_vol *f, const void *buf, uint64_t len, uint64_t off,
                       unsigned flags)
{
	struct crash_write *w = calloc(1, sizeof(*w));
	int r = crash_count(f);

	if (!w) {
		r = -ENOMEM;
		goto out;
	}
	if (r < 0)
		goto out;
	w->off = off;
	w->len = len;
	if (buf) {
		if (!(w->data = malloc(len))) {
			r = -ENOMEM;
			goto out;
		}
		memcpy(w->data, buf, len);
	}
	pthread_rwlock_wrlock(&f->hold_lock);
	r = -EIO;
	if (crash_off(f))
		goto unlock;
	r = 0;
	if (buf && f->held_bytes + len > f->hold_max) {
		/* down to half, so that a full cache flushes its member once
		 * in a while rather than at every write */
		uint64_t room = f->hold_max > len ? f->hold_max - len : 0;
		r = crash_destage(f, room < f->hold_max / 2 ? room : f->hold_max / 2);
	}
	if (r == 0 && (flags & VOL_FUA)) {
		r = buf ? vol_write(f->inner, buf, len, off, VOL_FUA)
		        : vol_write_zeroes(f->inner, len, off, VOL_FUA);
		w->durable = true;
	}
	if (r == 0) {
		*f->held_tail = w;
		f->held_tail = &w->next;
		if (buf)
			f->held_bytes += len;
		w = NULL;
	}
unlock:
	pthread_rwlock_unlock(&f->hold_lock);
out:
	if (w) {
		free(w->data);
		free(w);
	}
	return r;
}

static int crash_flush(struct fault_vol *f)
{
	int r = -EIO;

	pthread_rwlock_wrlock(&f->hold_lock);
	if (!crash_off(f))
		r = crash_destage(f, 0);
	pthread_rwlock_unlock(&f->hold_lock);
	return r;
}

static int fault_read(struct vol *v, void *buf, uint64_t len, uint64_t off)
{
	struct fault_vol *f = to_fault(v);
	int r = fault_check(f, FAULT_READ, len, off);
	if (!r)
		r = fault_align(f, buf);
	if (r)
		return r;
	return f->group ? crash_read(f, buf, len, off)
	                : f->inner->ops->read(f->inner, buf, len, off);
}

static int fault_write(struct vol *v, const void *buf, uint64_t len, uint64_t off, unsigned flags)
{
	struct fault_vol *f = to_fault(v);
	int r = fault_check(f, FAULT_WRITE, len, off);
	if (!r)
		r = fault_align(f, buf);
	if (r)
		return r;
	return f->group ? crash_write(f, buf, len, off, flags)
	                : f->inner->ops->write(f->inner, buf, len, off, flags);
}

static int fault_flush(struct vol *v)
{
	struct fault_vol *f = to_fault(v);
	int r = fault_check(f, FAULT_FLUSH, 0, 0);
	if (r)
		return r;
	return f->group ? crash_flush(f) : vol_flush(f->inner);
}

static int fault_trim(struct vol *v, uint64_t len, uint64_t off, unsigned flags)
{
	struct fault_vol *f = to_fault(v);
	int r = fault_check(f, FAULT_TRIM, len, off);
	if (r)
		return r;
	if (f->group) { /* a no-op, but not after the power is gone */
		pthread_rwlock_rdlock(&f->hold_lock);
		r = crash_off(f) ? -EIO : 0;
		pthread_rwlock_unlock(&f->hold_lock);
		return r;
	}
	return vol_trim(f->inner, len, off, flags);
}

static int fault_write_zeroes(struct vol *v, uint64_t len, uint64_t off, unsigned flags)
{
	struct fault_vol *f = to_fault(v);
	int r = fault_check(f, FAULT_ZERO, len, off);
	if (r)
		return r;
	return f->group ? crash_write(f, NULL, len, off, flags)
	                : vol_write_zeroes(f->inner, len, off, flags);
}

static void fault_close(struct vol *v)
{
	struct fault_vol *f = to_fault(v);
	if (f->group)
		crash_leave(f);
	vol_close(f->inner);
	pthread_mutex_destroy(&f->rng_lock);
	vol_fini(v);
	free(f);
}

/* Metadata, not I/O: the inner member answers, faults or not; a crash
 * member's held writes are not in the inner member's map, so it says
 * data (always a safe answer). */
static int fault_extents(struct vol *v, uint64_t len, uint64_t off, vol_extent_fn fn, void *arg)
{
	struct fault_vol *f = to_fault(v);
	if (f->group)
		return fn(arg, len, 0);
	return vol_extents(f->inner, len, off, fn, arg);
}

static const struct vol_ops fault_ops = {
    .kind = "fault",
    .read = fault_read,
    .write = fault_write,
    .flush = fault_flush,
    .trim = fault_trim,
    .write_zeroes = fault_write_zeroes,
    .close = fault_close,
    .extents = fault_extents,
};

int fault_member_kill(struct vol *v, bool dead)
{
	if (!v || v->ops != &fault_ops)
		return -EINVAL;
	atomic_store(&to_fault(v)->dead, dead);
	return 0;
}

int fault_member_counts(struct vol *v, struct fault_counts *c)
{
	if (!v || v->ops != &fault_ops)
		return -EINVAL;
	struct fault_vol *f = to_fault(v);
	c->reads = atomic_load(&f->count[FAULT_READ]);
	c->writes = atomic_load(&f->count[FAULT_WRITE]);
	c->flushes = atomic_load(&f->count[FAULT_FLUSH]);
	c->trims = atomic_load(&f->count[FAULT_TRIM]);
	c->zeroes = atomic_load(&f->count[FAULT_ZERO]);
	return 0;
}

static int fault_parse_ranges(struct fault_vol *f, char *s)
{
	char *save = NULL;

	for (char *tok = strtok_r(s, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
		char *plus = strchr(tok, '+');
		if (!plus || f->n_eio == FAULT_MAX_RANGES)
			return -EINVAL;
		*plus++ = '\0';
		if (parse_size(tok, &f->eio[f->n_eio].off) < 0 ||
		    parse_size(plus, &f->eio[f->n_eio].len) < 0)
			return -EINVAL;
		f->n_eio++;
	}
	return 0;
}

/* The errnos a member can plausibly return for a write it did not take. */
static int fault_parse_errno(const char *s, int *err)
{
	static const struct {
		const char *name;
		int err;
	} names[] = {{"EIO", EIO},       {"EINVAL", EINVAL},   {"ENOMEM", ENOMEM},
	             {"ENOSPC", ENOSPC}, {"ENOTSUP", ENOTSUP}, {"EOPNOTSUPP", EOPNOTSUPP},
	             {"EROFS", EROFS}};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(s, names[i].name) == 0) {
			*err = -names[i].err;
			return 0;
		}
	return -EINVAL;
}

/* What a spec asks of power-cut mode, joined once the vol is made. */
struct crash_opts {
	const char *group; /* NULL: not a crash member */
	uint64_t cut_after;
};

static int fault_parse(struct fault_vol *f, char *opts, const char *spec, struct crash_opts *c)
{
	char *save = NULL;

	f->on_read = f->on_write = true;
	f->err = -EIO;
	for (char *tok = strtok_r(opts, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		int r = 0;
		if (!eq)
			return err_set(-EINVAL, "fault:%s: option '%s' needs a value", spec, tok);
		*eq++ = '\0';
		if (strcmp(tok, "eio") == 0) {
			r = fault_parse_ranges(f, eq);
		} else if (strcmp(tok, "after") == 0) {
			f->has_after = true;
			r = parse_size(eq, &f->after);
		} else if (strcmp(tok, "chance") == 0) {
			char *end;
			f->chance = strtod(eq, &end);
			if (*end || !(f->chance >= 0 && f->chance <= 1))
				r = -EINVAL;
		} else if (strcmp(tok, "latency") == 0) {
			r = parse_duration_ns(eq, 1000000, &f->latency_ns);
		} else if (strcmp(tok, "align") == 0) {
			r = parse_size(eq, &f->align);
			if (r == 0 && (f->align == 0 || (f->align & (f->align - 1))))
				r = -EINVAL;
		} else if (strcmp(tok, "errno") == 0) {
			r = fault_parse_errno(eq, &f->err);
		} else if (strcmp(tok, "crash") == 0) {
			c->group = eq;
			if (!*eq)
				r = -EINVAL;
		} else if (strcmp(tok, "seed") == 0) {
			char *end;
			errno = 0;
			f->seed = strtoull(eq, &end, 0);
			if (!*eq || *end || errno || *eq == '-')
				r = -EINVAL;
		} else if (strcmp(tok, "cut-after") == 0) {
			r = parse_size(eq, &c->cut_after);
			if (r == 0 && c->cut_after == 0)
				r = -EINVAL;
		} else if (strcmp(tok, "hold") == 0) {
			r = parse_size(eq, &f->hold_max);
		} else if (strcmp(tok, "mode") == 0) {
			f->on_read = strcmp(eq, "read") == 0 || strcmp(eq, "all") == 0;
			f->on_write = strcmp(eq, "write") == 0 || strcmp(eq, "all") == 0;
			if (!f->on_read && !f->on_write)
				r = -EINVAL;
		} else {
			return err_set(-EINVAL, "fault:%s: unknown option '%s'", spec, tok);
		}
		if (r < 0)
			return err_set(-EINVAL, "fault:%s: bad value for %s: '%s'", spec, tok, eq);
	}
	if (!c->group && (f->seed || c->cut_after || f->hold_max))
		return err_set(-EINVAL, "fault:%s: seed=, cut-after= and hold= need crash=GROUP",
		               spec);
	if (!f->hold_max)
		f->hold_max = CRASH_HOLD_DEFAULT;
	return 0;
}

int fault_member_wrap(struct vol *inner, const char *opts, struct vol **out)
{
	struct fault_vol *f = calloc(1, sizeof(*f));
	char *copy = strdup(opts ? opts : "");
	struct crash_opts c = {0};
	char name[256];
	int r = -ENOMEM;

	if (!f || !copy)
		goto out;
	r = fault_parse(f, copy, opts ? opts : "", &c);
	if (r < 0)
		goto out;
	snprintf(name, sizeof(name), "fault:%s", inner->name);
	/* A crash member has a volatile cache and honours FUA itself.  It
	 * takes writes whole, as sent (its counts and cuts are per request),
	 * and with latency= the inner member's RAM is no promise (vol.h). */
	r = vol_init(&f->vol, &fault_ops, name, inner->size, inner->block_min,
	             (inner->caps & ~(VOL_CAP_STREAM | VOL_CAP_RAM)) |
	                 (c.group ? VOL_CAP_FLUSH | VOL_CAP_FUA : 0));
	if (r < 0)
		goto out;
	f->vol.block_pref = inner->block_pref;
	f->vol.block_max = inner->block_max;
	f->inner = inner;
	if (c.group) { /* last: a cut may reach the member once it joined */
		f->held_tail = &f->held;
		pthread_rwlock_init(&f->hold_lock, NULL);
		r = crash_join(f, c.group, c.cut_after);
		if (r < 0) {
			pthread_rwlock_destroy(&f->hold_lock);
			vol_fini(&f->vol);
			goto out;
		}
	}
	f->rng = 0x9e3779b97f4a7c15ULL ^ (uintptr_t)f;
	pthread_mutex_init(&f->rng_lock, NULL);
	*out = &f->vol;
	f = NULL;
out:
	free(copy);
	free(f);
	return r;
}

int fault_member_open(const char *rest, unsigned flags, struct vol **out)
{
	const char *colon = strchr(rest, ':');
	struct vol *inner = NULL;
	char *opts;
	int r;

	if (!colon)
		return err_set(-EINVAL, "fault:%s: expected fault:OPTS:MEMBER", rest);
	opts = strndup(rest, (size_t)(colon - rest));
	if (!opts)
		return -ENOMEM;
	r = member_open(colon + 1, flags, &inner);
	if (r == 0) {
		r = fault_member_wrap(inner, opts, out);
		if (r < 0)
			vol_close(inner);
	}
	free(opts);
	return r;
}
