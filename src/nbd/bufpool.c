/* bufpool.c — payload buffers for requests larger than a worker's own small
 * buffer (transmit.c), shared by every connection of a server.
 *
 * The bound.  The bytes held by requests plus the bytes cached for reuse
 * stay within the budget (uraid serve --max-buffer-memory), so idle
 * connections and clients that never read their replies cannot make the
 * server's memory grow with connections x workers x request size.  A
 * request waits for buffers, it never fails for the budget:
 *  - a connection may always hold its share, budget / max_conns (at most
 *    64 MiB), so at most max_conns connections stalled at their share
 *    (clients not reading replies) leave every other one its share;
 *  - a request larger than the share gets a buffer when its connection
 *    holds none and the budget has room for it;
 *  - a request alone in the server gets one of any size.
 * A waiter is woken by replies being sent, which never wait for a reader,
 * so waiting cannot deadlock.
 *
 * Buffers come from mmap in power-of-two classes from 128 KiB and are
 * cached per class; a cached buffer unused for a second is unmapped
 * (nbd_bufpool_trim(), from the accept loop), so memory goes back to the
 * system when the server is idle. */
#include "internal.h"

#include <errno.h>
#include <sys/mman.h>
#include <time.h>

#define BUF_MIN_SHIFT 17 /* 128 KiB */
#define SHARE_MAX (64ull << 20)

/* A cached buffer's first bytes. */
struct nbd_buf {
	struct nbd_buf *next;
	uint64_t freed_ns;
	unsigned k; /* its class */
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void nbd_bufpool_init(struct nbd_bufpool *p, uint64_t budget, unsigned max_conns)
{
	*p = (struct nbd_bufpool){.budget = budget};
	p->share = budget / (max_conns ? max_conns : 1);
	if (p->share > SHARE_MAX)
		p->share = SHARE_MAX;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->freed, NULL);
}

void nbd_bufpool_destroy(struct nbd_bufpool *p)
{
	nbd_bufpool_trim(p, 0);
	pthread_cond_destroy(&p->freed);
	pthread_mutex_destroy(&p->lock);
}

/* The class of an n-byte buffer (n <= 4 GiB). */
static unsigned buf_class(size_t n)
{
	unsigned k = 0;

	while (k + 1 < NBD_BUF_CLASSES && ((size_t)1 << (BUF_MIN_SHIFT + k)) < n)
		k++;
	return k;
}

static size_t class_size(unsigned k)
{
	return (size_t)1 << (BUF_MIN_SHIFT + k);
}

/* Under p->lock: take the largest cached buffer off its list onto *out. */
static bool evict_one(struct nbd_bufpool *p, struct nbd_buf **out)
{
	for (unsigned k = NBD_BUF_CLASSES; k-- > 0;) {
		struct nbd_buf *b = p->free[k];
		if (!b)
			continue;
		p->free[k] = b->next;
		p->cached -= class_size(k);
		b->next = *out;
		*out = b;
		return true;
	}
	return false;
}

static void unmap_list(struct nbd_buf *b)
{
	while (b) {
		struct nbd_buf *next = b->next;
		munmap(b, class_size(b->k));
		b = next;
	}
}

void *nbd_buf_get(struct nbd_conn *c, size_t n, size_t *cls)
{
	struct nbd_bufpool *p = &c->srv->pool;
	unsigned k = buf_class(n);
	size_t sz = class_size(k);
	struct nbd_buf *victims = NULL, *b;
	void *mem;

	if (sz < n)
		return NULL; /* beyond the largest class */
	pthread_mutex_lock(&p->lock);
	for (;;) {
		bool mine = c->payload_in_flight + sz <= p->share || c->payload_in_flight == 0;
		if (p->held == 0 || (mine && p->held + sz <= p->budget))
			break;
		pthread_cond_wait(&p->freed, &p->lock);
	}
	p->held += sz;
	c->payload_in_flight += sz;
	b = p->free[k];
	if (b) {
		p->free[k] = b->next;
		p->cached -= sz;
		pthread_mutex_unlock(&p->lock);
		*cls = sz;
		return b;
	}
	while (p->held + p->cached > p->budget && evict_one(p, &victims))
		;
	pthread_mutex_unlock(&p->lock);
	unmap_list(victims);
	mem = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		pthread_mutex_lock(&p->lock);
		p->held -= sz;
		c->payload_in_flight -= sz;
		pthread_cond_broadcast(&p->freed);
		pthread_mutex_unlock(&p->lock);
		return NULL;
	}
	*cls = sz;
	return mem;
}

void nbd_buf_put(struct nbd_conn *c, void *mem, size_t cls)
{
	struct nbd_bufpool *p = &c->srv->pool;
	struct nbd_buf *b = mem;
	unsigned k = buf_class(cls);

	pthread_mutex_lock(&p->lock);
	p->held -= cls;
	c->payload_in_flight -= cls;
	if (p->held + p->cached + cls <= p->budget) {
		b->next = p->free[k];
		b->freed_ns = now_ns();
		b->k = k;
		p->free[k] = b;
		p->cached += cls;
		b = NULL;
	}
	pthread_cond_broadcast(&p->freed);
	pthread_mutex_unlock(&p->lock);
	if (b)
		munmap(b, cls);
}

void nbd_bufpool_trim(struct nbd_bufpool *p, unsigned idle_ms)
{
	uint64_t now = now_ns(), idle_ns = (uint64_t)idle_ms * 1000000ull;
	struct nbd_buf *victims = NULL;

	pthread_mutex_lock(&p->lock);
	for (unsigned k = 0; k < NBD_BUF_CLASSES; k++) {
		for (struct nbd_buf **pp = &p->free[k]; *pp;) {
			struct nbd_buf *b = *pp;
			if (idle_ms && now - b->freed_ns < idle_ns) {
				pp = &b->next;
				continue;
			}
			*pp = b->next;
			p->cached -= class_size(k);
			b->next = victims;
			victims = b;
		}
	}
	pthread_mutex_unlock(&p->lock);
	unmap_list(victims);
}
