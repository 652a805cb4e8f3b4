/* fault.c — fault:OPTS:INNER, error injection as a layer (the nbdkit error
 * filter and SQLite's test VFS are the model).  Options, comma-separated:
 *
 *   eio=OFF+LEN[/OFF+LEN...]  ops touching these byte ranges fail with EIO
 *   after=N                   every op after the first N fails with EIO
 *   chance=P                  each op fails with probability P (0..1)
 *   latency=DUR               every op sleeps DUR first
 *   mode=read|write|all       which ops the failures apply to (default all;
 *                             write covers write, trim, write_zeroes, flush)
 *   align=N                   reads and writes whose buffer does not start at
 *                             a multiple of N fail with EINVAL, as O_DIRECT's
 *                             do (whatever mode says)
 *   errno=NAME                what the failures return: EIO (the default),
 *                             EINVAL, ENOMEM, ENOSPC, ENOTSUP or EROFS
 *
 * Tests also flip a fault vol to dead at run time (fault_member_kill) and
 * count the ops that reached it (fault_member_counts). */
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

enum fault_op { FAULT_READ, FAULT_WRITE, FAULT_FLUSH, FAULT_TRIM, FAULT_ZERO };

struct fault_vol {
	struct vol vol;
	struct vol *inner;
	struct { uint64_t off, len; } eio[FAULT_MAX_RANGES];
	unsigned n_eio;
	bool has_after;
	uint64_t after;
	double chance;
	uint64_t latency_ns;
	bool on_read, on_write;
	uint64_t align; /* 0: any buffer */
	int err; /* what an injected failure returns: -EIO unless errno= */
	atomic_bool dead;
	atomic_uint_fast64_t ops; /* ops seen, for after= */
	atomic_uint_fast64_t count[5];
	pthread_mutex_t rng_lock;
	unsigned long long rng;
};

static struct fault_vol *to_fault(struct vol *v)
{
	return container_of(v, struct fault_vol, vol);
}

/* Decide whether this op fails.  len/off describe the range (0/0 for a
 * flush, which only after=, chance= and death touch). */
static int fault_check(struct fault_vol *f, enum fault_op op, uint64_t len,
		       uint64_t off)
{
	atomic_fetch_add(&f->count[op], 1);
	uint64_t n = atomic_fetch_add(&f->ops, 1);

	if (f->latency_ns) {
		struct timespec ts = { (time_t)(f->latency_ns / 1000000000u),
				       (long)(f->latency_ns % 1000000000u) };
		while (nanosleep(&ts, &ts) == EINTR)
			;
	}
	if (atomic_load(&f->dead))
		return -EIO;
	if (op == FAULT_READ ? !f->on_read : !f->on_write)
		return 0;
	for (unsigned i = 0; i < f->n_eio; i++) {
		if (len && off < f->eio[i].off + f->eio[i].len &&
		    f->eio[i].off < off + len)
			return f->err;
	}
	if (f->has_after && n >= f->after)
		return f->err;
	if (f->chance > 0) {
		pthread_mutex_lock(&f->rng_lock);
		f->rng ^= f->rng >> 12;
		f->rng ^= f->rng << 25;
		f->rng ^= f->rng >> 27;
		double u = (double)((f->rng * 2685821657736338717ULL) >> 11) /
			   (double)(1ULL << 53);
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

static int fault_read(struct vol *v, void *buf, uint64_t len, uint64_t off)
{
	struct fault_vol *f = to_fault(v);
	int r = fault_check(f, FAULT_READ, len, off);
	if (!r)
		r = fault_align(f, buf);
	return r ? r : f->inner->ops->read(f->inner, buf, len, off);
}

static int fault_write(struct vol *v, const void *buf, uint64_t len,
		       uint64_t off, unsigned flags)
{
	struct fault_vol *f = to_fault(v);
	int r = fault_check(f, FAULT_WRITE, len, off);
	if (!r)
		r = fault_align(f, buf);
	return r ? r : f->inner->ops->write(f->inner, buf, len, off, flags);
}

static int fault_flush(struct vol *v)
{
	struct fault_vol *f = to_fault(v);
	int r = fault_check(f, FAULT_FLUSH, 0, 0);
	return r ? r : vol_flush(f->inner);
}

static int fault_trim(struct vol *v, uint64_t len, uint64_t off, unsigned flags)
{
	struct fault_vol *f = to_fault(v);
	int r = fault_check(f, FAULT_TRIM, len, off);
	return r ? r : vol_trim(f->inner, len, off, flags);
}

static int fault_write_zeroes(struct vol *v, uint64_t len, uint64_t off,
			      unsigned flags)
{
	struct fault_vol *f = to_fault(v);
	int r = fault_check(f, FAULT_ZERO, len, off);
	return r ? r : vol_write_zeroes(f->inner, len, off, flags);
}

static void fault_close(struct vol *v)
{
	struct fault_vol *f = to_fault(v);
	vol_close(f->inner);
	pthread_mutex_destroy(&f->rng_lock);
	vol_fini(v);
	free(f);
}

/* Metadata, not I/O: the inner member answers, faults or not. */
static int fault_extents(struct vol *v, uint64_t len, uint64_t off, vol_extent_fn fn, void *arg)
{
	return vol_extents(to_fault(v)->inner, len, off, fn, arg);
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

static int fault_parse(struct fault_vol *f, char *opts, const char *spec)
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
	return 0;
}

int fault_member_wrap(struct vol *inner, const char *opts, struct vol **out)
{
	struct fault_vol *f = calloc(1, sizeof(*f));
	char *copy = strdup(opts ? opts : "");
	char name[256];
	int r = -ENOMEM;

	if (!f || !copy)
		goto out;
	r = fault_parse(f, copy, opts ? opts : "");
	if (r < 0)
		goto out;
	snprintf(name, sizeof(name), "fault:%s", inner->name);
	r = vol_init(&f->vol, &fault_ops, name, inner->size, inner->block_min,
		     inner->caps);
	if (r < 0)
		goto out;
	f->vol.block_pref = inner->block_pref;
	f->vol.block_max = inner->block_max;
	f->inner = inner;
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
