/* raid_behind.c — md's bitmap write-behind (mdadm --write-behind=N, not
 * raid_wb.c's staging of streams): on a RAID1, a write's copy for a
 * write-mostly member (a far or slow mirror) may still be in flight when
 * the write is acknowledged, once every other live copy has it, up to
 * max such copies (and RAID_BEHIND_MAX_BYTES of their data) at a time.
 * raid_map.c hands those copies here (raid_behind_submit); a few worker
 * threads write them.
 *
 * What keeps it safe, each rule here and nowhere else:
 *  - a copy behind holds its own buffer: the client's is free on return;
 *  - a request (any write, trim or zeroing) that overlaps a copy still
 *    behind waits for it first, so the member applies writes to a block in
 *    the order they were acknowledged (md's serialisation for write-behind);
 *  - a read from a member with copies behind, a FLUSH and the array's close
 *    wait for them (raid_behind_settle, raid_behind_drain), holding new
 *    writes off write-behind meanwhile so the wait ends; md sends a flush
 *    to the members without waiting (its bitmap keeps those chunks dirty
 *    until they land), this waits, so a flush covers every copy;
 *  - a copy behind that fails fails its member (raid_member_fail) before
 *    its count drops, so no read or flush that waited for it can see the
 *    member live with the write missing; the md layer's bitmap keeps the
 *    chunk dirty (it clears only after a flush of every member);
 *  - a FUA write, a write while a recovery or a scrub runs (rec_on) and a
 *    write with no live copy other than the write-mostly ones are never
 *    behind; if every other copy fails, the request waits for the copies
 *    behind and they count as for any write.
 * What it risks (md's risk): a write acknowledged while its write-mostly
 * copy is behind exists on the other copies only until that copy lands;
 * losing them all meanwhile loses it. */
#include "raid_types.h"

#include "core/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Workers: one at first, another whenever a copy is queued with none
 * idle, up to this many (so many copies in flight on a far member: its
 * round trip, not one worker, bounds their rate). */
#define RAID_BEHIND_WORKERS 32
/* The copies' buffers, at most: past it a write waits for its far copy
 * (md bounds the count only; N large writes would be N times their size). */
#define RAID_BEHIND_MAX_BYTES (256ull << 20)

struct raid_behind_job {
	struct raid_behind_job *next;  /* queue (waiting for a worker) */
	struct raid_behind_job *anext; /* the copies behind, for overlaps */
	unsigned role;
	struct vol *vol;     /* the member it was for: skipped if replaced */
	uint64_t aoff, alen; /* the array range (RAID1: the member's too) */
	uint64_t off, len;   /* on the member */
	unsigned flags;
	char *data;
	int err;
	bool done;
	bool waited;   /* its submitter waits for it, and handles its error */
	unsigned refs; /* the worker's, and the submitter's until it lets go */
};

struct raid_behind {
	pthread_mutex_t lock;
	pthread_cond_t work; /* a job queued, or stopping */
	pthread_cond_t done; /* a job done */
	atomic_uint max;     /* 0: off (changed under the lock) */
	atomic_uint count;   /* jobs not done (changed under the lock) */
	unsigned holds;      /* waiters for them: no new job meanwhile */
	uint64_t bytes;      /* the jobs' buffers */
	struct raid_behind_job *head, *tail, *active;
	pthread_t worker[RAID_BEHIND_WORKERS];
	unsigned nworkers;
	unsigned idle; /* workers waiting for a job */
	bool stop;
	uint64_t total; /* jobs since open, for tests */
};

static void raid_behind_put_locked(struct raid_behind_job *j)
{
	if (--j->refs == 0) {
		free(j->data);
		free(j);
	}
}

/* Under bh->lock: j is over; unlink it and wake whoever waits. */
static void raid_behind_finish_locked(struct raid_array *a, struct raid_behind_job *j)
{
	struct raid_behind *bh = a->behind;

	for (struct raid_behind_job **p = &bh->active; *p; p = &(*p)->anext)
		if (*p == j) {
			*p = j->anext;
			break;
		}
	j->done = true;
	bh->count--;
	bh->bytes -= j->len;
	atomic_fetch_sub(&a->m[j->role].behind, 1);
	atomic_fetch_sub(&a->m[j->role].inflight, 1);
	pthread_cond_broadcast(&bh->done);
	raid_behind_put_locked(j);
}

static void *raid_behind_worker(void *arg)
{
	struct raid_array *a = arg;
	struct raid_behind *bh = a->behind;

	pthread_mutex_lock(&bh->lock);
	for (;;) {
		bh->idle++;
		while (!bh->head && !bh->stop)
			pthread_cond_wait(&bh->work, &bh->lock);
		bh->idle--;
		struct raid_behind_job *j = bh->head;
		if (!j)
			break; /* stopping, nothing left */
		bh->head = j->next;
		if (!bh->head)
			bh->tail = NULL;
		pthread_mutex_unlock(&bh->lock);

		/* A member failed or replaced meanwhile is not written: the
		 * bitmap keeps the chunk for its re-add. */
		struct raid_member *m = &a->m[j->role];
		bool same = m->vol == j->vol;
		if (!same || atomic_load(&m->failed))
			j->err = -EIO;
		else
			j->err = raid_member_write(m, j->data, j->len, j->off, j->flags, 64u << 10);

		pthread_mutex_lock(&bh->lock);
		bool mine = !j->waited; /* else raid_map.c handles the error */
		pthread_mutex_unlock(&bh->lock);
		/* Any error: a copy that refused what the others took is out
		 * of step with them, as raid_map.c fails it. */
		if (j->err && mine && same && raid_member_fail(a, j->role, j->err, false) < 0)
			log_error("%s: member %u (%s): a write acknowledged while its copy here "
			          "was behind failed on this, the last copy (%s): it is lost",
			          a->vol.name, j->role, j->vol->name, strerror(-j->err));
		pthread_mutex_lock(&bh->lock);
		raid_behind_finish_locked(a, j);
	}
	pthread_mutex_unlock(&bh->lock);
	return NULL;
}

static int raid_behind_init(struct raid_array *a)
{
	struct raid_behind *bh = calloc(1, sizeof(*bh));

	if (!bh)
		return -ENOMEM;
	pthread_mutex_init(&bh->lock, NULL);
	pthread_cond_init(&bh->work, NULL);
	pthread_cond_init(&bh->done, NULL);
	a->behind = bh;
	for (unsigned i = 0; i < a->n; i++)
		a->m[i].bh = bh;
	if (pthread_create(&bh->worker[0], NULL, raid_behind_worker, a) == 0)
		bh->nworkers = 1;
	if (bh->nworkers == 0) {
		raid_behind_destroy(a);
		return -EAGAIN;
	}
	return 0;
}

void raid_behind_drain(struct raid_array *a)
{
	struct raid_behind *bh = a->behind;

	if (!bh)
		return;
	pthread_mutex_lock(&bh->lock);
	bh->holds++;
	while (bh->count)
		pthread_cond_wait(&bh->done, &bh->lock);
	bh->holds--;
	pthread_mutex_unlock(&bh->lock);
}

void raid_behind_destroy(struct raid_array *a)
{
	struct raid_behind *bh = a->behind;

	if (!bh)
		return;
	raid_behind_drain(a);
	pthread_mutex_lock(&bh->lock);
	bh->stop = true;
	pthread_cond_broadcast(&bh->work);
	pthread_mutex_unlock(&bh->lock);
	for (unsigned i = 0; i < bh->nworkers; i++)
		pthread_join(bh->worker[i], NULL);
	for (unsigned i = 0; i < a->n; i++)
		a->m[i].bh = NULL;
	pthread_cond_destroy(&bh->work);
	pthread_cond_destroy(&bh->done);
	pthread_mutex_destroy(&bh->lock);
	free(bh);
	a->behind = NULL;
}

int raid_behind_set_max(struct raid_array *a, unsigned max)
{
	if (max > RAID_BEHIND_MAX)
		return -EINVAL;
	if (max && a->lvl != &raid1_level)
		return -ENOTSUP; /* md's: RAID1 only */
	if (!a->behind) {
		if (!max)
			return 0;
		int r = raid_behind_init(a);
		if (r < 0)
			return r;
	}
	pthread_mutex_lock(&a->behind->lock);
	a->behind->max = max;
	pthread_mutex_unlock(&a->behind->lock);
	if (!max)
		raid_behind_drain(a);
	return 0;
}

void raid_behind_stats(struct raid_array *a, unsigned *now, uint64_t *total)
{
	*now = 0;
	*total = 0;
	if (!a->behind)
		return;
	pthread_mutex_lock(&a->behind->lock);
	*now = a->behind->count;
	*total = a->behind->total;
	pthread_mutex_unlock(&a->behind->lock);
}

void raid_behind_settle(struct raid_member *m)
{
	struct raid_behind *bh = m->bh;

	if (!bh)
		return;
	pthread_mutex_lock(&bh->lock);
	bh->holds++;
	while (atomic_load(&m->behind))
		pthread_cond_wait(&bh->done, &bh->lock);
	bh->holds--;
	pthread_mutex_unlock(&bh->lock);
}

static bool raid_behind_overlaps_locked(struct raid_behind *bh, uint64_t len, uint64_t off)
{
	for (struct raid_behind_job *j = bh->active; j; j = j->anext)
		if (j->aoff < off + len && off < j->aoff + j->alen)
			return true;
	return false;
}

void raid_behind_wait_range(struct raid_array *a, uint64_t len, uint64_t off)
{
	struct raid_behind *bh = a->behind;

	if (!bh || !atomic_load_explicit(&bh->count, memory_order_relaxed))
		return;
	pthread_mutex_lock(&bh->lock);
	while (raid_behind_overlaps_locked(bh, len, off))
		pthread_cond_wait(&bh->done, &bh->lock);
	pthread_mutex_unlock(&bh->lock);
}

bool raid_behind_eligible(struct raid_array *a, unsigned role, unsigned flags)
{
	struct raid_behind *bh = a->behind;
	struct raid_member *m = &a->m[role];

	return bh && bh->max && !(flags & VOL_FUA) && !atomic_load(&a->rec_on) &&
	       atomic_load(&m->write_mostly) && !atomic_load(&m->failed) &&
	       !atomic_load(&m->recovering);
}

struct raid_behind_job *raid_behind_submit(struct raid_array *a, unsigned role, const char *buf,
                                           uint64_t len, uint64_t off, uint64_t aoff, uint64_t alen,
                                           unsigned flags)
{
	struct raid_behind *bh = a->behind;
	struct raid_behind_job *j = calloc(1, sizeof(*j));
	char *data = malloc(len ? len : 1);

	if (!j || !data)
		goto none;
	pthread_mutex_lock(&bh->lock);
	if (bh->count >= bh->max || bh->holds || bh->bytes + len > RAID_BEHIND_MAX_BYTES) {
		pthread_mutex_unlock(&bh->lock);
		goto none;
	}
	memcpy(data, buf, len);
	*j = (struct raid_behind_job){.role = role,
	                              .vol = a->m[role].vol,
	                              .aoff = aoff,
	                              .alen = alen,
	                              .off = off,
	                              .len = len,
	                              .flags = flags,
	                              .data = data,
	                              .refs = 2};
	bh->count++;
	bh->bytes += len;
	bh->total++;
	atomic_fetch_add(&a->m[role].behind, 1);
	atomic_fetch_add(&a->m[role].inflight, 1);
	j->anext = bh->active;
	bh->active = j;
	if (bh->tail)
		bh->tail->next = j;
	else
		bh->head = j;
	bh->tail = j;
	/* A worker more when none waits (none started is fine: the ones
	 * there take the queue in turn). */
	if (bh->idle == 0 && bh->nworkers < RAID_BEHIND_WORKERS &&
	    pthread_create(&bh->worker[bh->nworkers], NULL, raid_behind_worker, a) == 0)
		bh->nworkers++;
	pthread_cond_signal(&bh->work);
	pthread_mutex_unlock(&bh->lock);
	return j;
none:
	free(j);
	free(data);
	return NULL;
}

int raid_behind_release(struct raid_array *a, struct raid_behind_job *j, bool wait)
{
	struct raid_behind *bh = a->behind;
	int err = 0;

	pthread_mutex_lock(&bh->lock);
	j->waited = wait;
	while (wait && !j->done)
		pthread_cond_wait(&bh->done, &bh->lock);
	if (wait)
		err = j->err;
	raid_behind_put_locked(j);
	pthread_mutex_unlock(&bh->lock);
	return err;
}
