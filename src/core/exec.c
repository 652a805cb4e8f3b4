/* exec.c — a pool of threads running the pieces of indexed batches.
 *
 * Batches wait in a FIFO; a worker claims the next unclaimed index of the
 * batch at the head and drops the batch from the queue when its last index
 * is claimed.  The submitter claims indices the same way, so a batch
 * completes even when every worker is busy.  The batch lives on the
 * submitter's stack: nothing touches it after the last piece reports. */
#include "exec.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

struct batch {
	int (*fn)(void *arg, unsigned i);
	void *arg;
	unsigned n;
	unsigned next;    /* next index to claim; under pool.lock */
	struct batch *qnext;
	pthread_mutex_t lock; /* guards the fields below */
	pthread_cond_t all_done;
	unsigned done;
	unsigned err_index;
	int err;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t work;
	struct batch *head, *tail;
	unsigned size;
} pool = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, NULL, 0 };

unsigned exec_cpu_count(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
		return (unsigned)CPU_COUNT(&set);
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (unsigned)n : 1;
}

unsigned exec_pool_size(void)
{
	const char *env = getenv("URAID_THREADS");
	if (env && atoi(env) > 0)
		return (unsigned)atoi(env);
	unsigned n = 8 * exec_cpu_count();
	return n < 32 ? 32 : n;
}

/* Claim the next index of the batch at the head of the queue.  Caller
 * holds pool.lock.  Returns the batch, or NULL if the queue is empty. */
static struct batch *claim_head(unsigned *index)
{
	struct batch *b = pool.head;

	if (!b)
		return NULL;
	*index = b->next++;
	if (b->next == b->n) {
		pool.head = b->qnext;
		if (!pool.head)
			pool.tail = NULL;
	}
	return b;
}

static void run_piece(struct batch *b, unsigned i)
{
	int r = b->fn(b->arg, i);

	pthread_mutex_lock(&b->lock);
	if (r != 0 && (b->err == 0 || i < b->err_index)) {
		b->err = r;
		b->err_index = i;
	}
	if (++b->done == b->n)
		pthread_cond_signal(&b->all_done);
	pthread_mutex_unlock(&b->lock);
}

static void *worker(void *unused)
{
	(void)unused;
	pthread_mutex_lock(&pool.lock);
	for (;;) {
		unsigned i;
		struct batch *b = claim_head(&i);
		if (!b) {
			pthread_cond_wait(&pool.work, &pool.lock);
			continue;
		}
		pthread_mutex_unlock(&pool.lock);
		run_piece(b, i);
		pthread_mutex_lock(&pool.lock);
	}
	return NULL;
}

static void pool_start(void)
{
	pthread_attr_t attr;
	unsigned want = exec_pool_size();

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	for (unsigned i = 0; i < want; i++) {
		pthread_t t;
		if (pthread_create(&t, &attr, worker, NULL) == 0)
			pool.size++;
	}
	pthread_attr_destroy(&attr);
}

int exec_parallel(unsigned n, int (*fn)(void *arg, unsigned i), void *arg)
{
	static pthread_once_t started = PTHREAD_ONCE_INIT;
	struct batch b = { .fn = fn, .arg = arg, .n = n };

	if (n == 0)
		return 0;
	if (n == 1)
		return fn(arg, 0);
	pthread_once(&started, pool_start);

	pthread_mutex_init(&b.lock, NULL);
	pthread_cond_init(&b.all_done, NULL);

	pthread_mutex_lock(&pool.lock);
	if (pool.tail)
		pool.tail->qnext = &b;
	else
		pool.head = &b;
	pool.tail = &b;
	for (unsigned k = 1; k < n && k <= pool.size; k++)
		pthread_cond_signal(&pool.work);
	/* Take part: claim our own unclaimed pieces until none is left. */
	while (b.next < b.n) {
		unsigned i = b.next++;
		if (b.next == b.n) {
			/* Unlink b: it may not be at the head if others queued. */
			struct batch **pp = &pool.head, *prev = NULL;
			while (*pp != &b) {
				prev = *pp;
				pp = &(*pp)->qnext;
			}
			*pp = b.qnext;
			if (pool.tail == &b)
				pool.tail = prev;
		}
		pthread_mutex_unlock(&pool.lock);
		run_piece(&b, i);
		pthread_mutex_lock(&pool.lock);
	}
	pthread_mutex_unlock(&pool.lock);

	pthread_mutex_lock(&b.lock);
	while (b.done < b.n)
		pthread_cond_wait(&b.all_done, &b.lock);
	pthread_mutex_unlock(&b.lock);
	pthread_cond_destroy(&b.all_done);
	pthread_mutex_destroy(&b.lock);
	return b.err;
}
