/* md_replace_vol.c — the replace vol of md_replace.h: one role's member
 * while a replacement is built, over the old member's data area and the
 * new one's.  Reads from old; writes, trims, zeroes and flushes to both;
 * the copy moves old's bytes onto new a window at a time, changes into
 * that window waiting for it.  md_replace.c drives it. */
#include "md_replace.h"

#include "core/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* A change in flight (on its caller's stack), for the copy to wait on. */
struct md_rv_change {
	uint64_t lo, hi;
	struct md_rv_change *next;
};

struct md_rv {
	struct vol vol;
	struct vol *old, *new;
	/* Every request holds sw shared; md_repl_switch holds it alone. */
	pthread_rwlock_t sw;
	bool new_only; /* switched: old is gone */
	atomic_int new_err;
	atomic_bool dropped;
	/* The window being copied [win_lo, win_hi) (empty: lo == hi) and the
	 * changes in flight, under lock. */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint64_t win_lo, win_hi;
	struct md_rv_change *changes;
};

static struct md_rv *to_rv(struct vol *v)
{
	return (struct md_rv *)v;
}

static bool md_rv_overlap(uint64_t lo, uint64_t hi, uint64_t lo2, uint64_t hi2)
{
	return lo < hi2 && lo2 < hi;
}

/* A change of [off, off+len) enters: it waits while the copy's window
 * covers any of it, then is listed. */
static void md_rv_enter(struct md_rv *rv, struct md_rv_change *c, uint64_t len, uint64_t off)
{
	c->lo = off;
	c->hi = off + len;
	pthread_mutex_lock(&rv->lock);
	while (md_rv_overlap(c->lo, c->hi, rv->win_lo, rv->win_hi))
		pthread_cond_wait(&rv->cond, &rv->lock);
	c->next = rv->changes;
	rv->changes = c;
	pthread_mutex_unlock(&rv->lock);
}

static void md_rv_leave(struct md_rv *rv, struct md_rv_change *c)
{
	pthread_mutex_lock(&rv->lock);
	for (struct md_rv_change **p = &rv->changes; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	pthread_cond_broadcast(&rv->cond);
	pthread_mutex_unlock(&rv->lock);
}

/* Whether new is still written. */
static bool md_rv_new_live(struct md_rv *rv)
{
	return !atomic_load(&rv->new_err) && !atomic_load(&rv->dropped);
}

/* new failed a change with e: it is written no more. */
static void md_rv_new_failed(struct md_rv *rv, int e)
{
	int zero = 0;

	if (atomic_compare_exchange_strong(&rv->new_err, &zero, e))
		log_warn("%s: the replacement %s failed (%s): it is written no more", rv->vol.name,
		         rv->new->name, strerror(-e));
}

enum md_rv_op { MD_RV_WRITE, MD_RV_TRIM, MD_RV_ZEROES };

static int md_rv_do(struct vol *v, enum md_rv_op op, const void *buf, uint64_t len, uint64_t off,
                    unsigned flags)
{
	switch (op) {
	case MD_RV_WRITE:
		return vol_write(v, buf, len, off, flags);
	case MD_RV_TRIM:
		return vol_trim(v, len, off, flags);
	case MD_RV_ZEROES:
		return vol_write_zeroes(v, len, off, flags);
	}
	return -EINVAL;
}

static int md_rv_change(struct vol *v, enum md_rv_op op, const void *buf, uint64_t len,
                        uint64_t off, unsigned flags)
{
	struct md_rv *rv = to_rv(v);
	struct md_rv_change c;
	int r;

	pthread_rwlock_rdlock(&rv->sw);
	if (rv->new_only) {
		r = md_rv_do(rv->new, op, buf, len, off, flags);
		goto out;
	}
	md_rv_enter(rv, &c, len, off);
	r = md_rv_do(rv->old, op, buf, len, off, flags);
	if (md_rv_new_live(rv)) {
		/* A fast zeroing old could do may be slow on new: new then
		 * writes its zeros however it can. */
		int e = md_rv_do(rv->new, op, buf, len, off, flags);
		if (e == -ENOTSUP && op == MD_RV_ZEROES)
			e = vol_write_zeroes(rv->new, len, off, flags & ~VOL_FAST_ZERO);
		if (e < 0)
			md_rv_new_failed(rv, e);
	}
	md_rv_leave(rv, &c);
out:
	pthread_rwlock_unlock(&rv->sw);
	return r;
}

static int md_rv_write(struct vol *v, const void *buf, uint64_t len, uint64_t off, unsigned flags)
{
	return md_rv_change(v, MD_RV_WRITE, buf, len, off, flags);
}

static int md_rv_trim(struct vol *v, uint64_t len, uint64_t off, unsigned flags)
{
	return md_rv_change(v, MD_RV_TRIM, NULL, len, off, flags);
}

static int md_rv_write_zeroes(struct vol *v, uint64_t len, uint64_t off, unsigned flags)
{
	return md_rv_change(v, MD_RV_ZEROES, NULL, len, off, flags);
}

static int md_rv_read(struct vol *v, void *buf, uint64_t len, uint64_t off)
{
	struct md_rv *rv = to_rv(v);
	int r;

	pthread_rwlock_rdlock(&rv->sw);
	r = vol_read(rv->new_only ? rv->new : rv->old, buf, len, off);
	pthread_rwlock_unlock(&rv->sw);
	return r;
}

static int md_rv_flush(struct vol *v)
{
	struct md_rv *rv = to_rv(v);
	int r;

	pthread_rwlock_rdlock(&rv->sw);
	if (rv->new_only) {
		r = vol_flush(rv->new);
	} else {
		r = vol_flush(rv->old);
		if (md_rv_new_live(rv)) {
			int e = vol_flush(rv->new);
			if (e < 0)
				md_rv_new_failed(rv, e);
		}
	}
	pthread_rwlock_unlock(&rv->sw);
	return r;
}

static void md_rv_close(struct vol *v)
{
	struct md_rv *rv = to_rv(v);

	vol_close(rv->old);
	vol_close(rv->new);
	pthread_rwlock_destroy(&rv->sw);
	pthread_mutex_destroy(&rv->lock);
	pthread_cond_destroy(&rv->cond);
	vol_fini(&rv->vol);
	free(rv);
}

static const struct vol_ops md_rv_ops = {
    .kind = "md-replace",
    .read = md_rv_read,
    .write = md_rv_write,
    .flush = md_rv_flush,
    .trim = md_rv_trim,
    .write_zeroes = md_rv_write_zeroes,
    .close = md_rv_close,
};

int md_repl_open(struct vol *old, struct vol *new, const char *name, struct vol **out)
{
	struct md_rv *rv = calloc(1, sizeof(*rv));
	/* What both do; nothing that hands out a member's own memory. */
	unsigned keep = VOL_CAP_TRIM | VOL_CAP_ZEROES | VOL_CAP_FUA | VOL_CAP_FLUSH |
	                VOL_CAP_FAST_ZERO | VOL_CAP_MULTI_CONN;
	uint32_t bmin = old->block_min > new->block_min ? old->block_min : new->block_min;
	int r;

	if (!rv) {
		r = -ENOMEM;
		goto fail;
	}
	if (new->size < old->size) {
		r = err_set(-ENOSPC, "%s: the replacement %s is smaller than %s", name, new->name,
		            old->name);
		goto fail;
	}
	r = vol_init(&rv->vol, &md_rv_ops, name, old->size, bmin,
	             (old->caps & new->caps &keep) | (old->caps & VOL_CAP_FLUSH) |
	                 (new->caps &VOL_CAP_FLUSH));
	if (r < 0)
		goto fail;
	rv->vol.block_pref = old->block_pref;
	rv->vol.block_max = old->block_max < new->block_max ? old->block_max : new->block_max;
	rv->old = old;
	rv->new = new;
	pthread_rwlock_init(&rv->sw, NULL);
	pthread_mutex_init(&rv->lock, NULL);
	pthread_cond_init(&rv->cond, NULL);
	*out = &rv->vol;
	return 0;
fail:
	free(rv);
	vol_close(old);
	vol_close(new);
	return r;
}

int md_repl_copy(struct vol *v, uint64_t from, uint64_t to, uint64_t piece,
                 md_repl_progress_fn progress, void *ctx)
{
	struct md_rv *rv = to_rv(v);
	char *buf = vol_buf_alloc(piece);
	int r = 0;

	if (!buf)
		return -ENOMEM;
	if (to > v->size)
		to = v->size;
	for (uint64_t off = from; off < to && r == 0;) {
		uint64_t n = to - off < piece ? to - off : piece;
		/* New changes into the window wait; those in flight there
		 * land first, so old holds the newest bytes when it is read. */
		pthread_mutex_lock(&rv->lock);
		rv->win_lo = off;
		rv->win_hi = off + n;
		for (;;) {
			bool busy = false;
			for (struct md_rv_change *c = rv->changes; c && !busy; c = c->next)
				busy = md_rv_overlap(c->lo, c->hi, off, off + n);
			if (!busy)
				break;
			pthread_cond_wait(&rv->cond, &rv->lock);
		}
		pthread_mutex_unlock(&rv->lock);
		r = vol_read(rv->old, buf, n, off);
		if (r < 0)
			r = err_set(r, "%s: reading %s to copy it: %s", v->name, rv->old->name,
			            strerror(-r));
		else if (!md_rv_new_live(rv))
			r = -EIO;
		else if ((r = vol_write(rv->new, buf, n, off, 0)) < 0) {
			md_rv_new_failed(rv, r);
			r = -EIO;
		}
		pthread_mutex_lock(&rv->lock);
		rv->win_lo = rv->win_hi = 0;
		pthread_cond_broadcast(&rv->cond);
		pthread_mutex_unlock(&rv->lock);
		off += n;
		/* A stop asked for after the last window is too late: done. */
		if (r == 0 && progress && progress(ctx, off) && off < to)
			r = -EINTR;
	}
	free(buf);
	return r;
}

void md_repl_unwrap(struct vol *v)
{
	struct md_rv *rv = to_rv(v);

	rv->old = NULL;
	md_rv_close(v);
}

int md_repl_error(struct vol *v)
{
	return atomic_load(&to_rv(v)->new_err);
}

void md_repl_drop(struct vol *v)
{
	atomic_store(&to_rv(v)->dropped, true);
}

int md_repl_switch(struct vol *v)
{
	struct md_rv *rv = to_rv(v);
	int r;

	pthread_rwlock_wrlock(&rv->sw);
	r = md_rv_new_live(rv) ? vol_flush(rv->new) : -EIO;
	if (r == 0) {
		rv->new_only = true;
		vol_close(rv->old);
		rv->old = NULL;
	}
	pthread_rwlock_unlock(&rv->sw);
	return r;
}
