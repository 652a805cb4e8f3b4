/* test_nbd_bufpool.c — the server-wide pool of payload buffers
 * (src/nbd/bufpool.c): a freed buffer is reused, and unmapped by a trim;
 * the cache never holds more than the budget; a request alone gets a buffer
 * of any size; a connection at its share waits for its own replies, and a
 * connection below its share waits only while the whole budget is taken,
 * each woken by the buffer given back; the cache is unmapped to make
 * room. */
#include "check.h"

#include "nbd/internal.h"

#include <pthread.h>
#include <string.h>
#include <unistd.h>

#define KiB 1024u

struct getter {
	struct nbd_conn *c;
	size_t n, cls;
	void *p;
	atomic_bool got;
	pthread_t th;
};

static void *getter_main(void *arg)
{
	struct getter *g = arg;
	g->p = nbd_buf_get(g->c, g->n, &g->cls);
	g->got = true;
	return NULL;
}

static void getter_start(struct getter *g, struct nbd_conn *c, size_t n)
{
	g->c = c;
	g->n = n;
	g->got = false;
	CHECK(pthread_create(&g->th, NULL, getter_main, g) == 0);
}

/* A waiter must still be waiting: if a bug let it through, it has had a
 * good while to say so (a slow machine only makes this pass more often). */
static void check_waits(struct getter *g)
{
	usleep(200 * 1000);
	CHECK(!g->got);
}

int main(void)
{
	struct nbd_server srv;
	struct nbd_conn a = { .srv = &srv }, b = { .srv = &srv }, c = { .srv = &srv };
	struct nbd_bufpool *p = &srv.pool;
	struct getter g;
	size_t k1, k2, k3;

	/* 1 MiB for 4 connections: a share of 256 KiB. */
	memset(&srv, 0, sizeof(srv));
	nbd_bufpool_init(p, 1024 * KiB, 4);
	CHECK_EQ(p->share, 256 * KiB);

	/* Reuse, and classes: 200 KiB takes a 256 KiB buffer. */
	void *x = nbd_buf_get(&a, 200 * KiB, &k1);
	CHECK(x != NULL);
	CHECK_EQ(k1, 256 * KiB);
	memset(x, 0xab, 200 * KiB);
	nbd_buf_put(&a, x, k1);
	CHECK_EQ(p->held, 0);
	CHECK_EQ(p->cached, 256 * KiB);
	void *y = nbd_buf_get(&b, 256 * KiB, &k2);
	CHECK(y == x);
	CHECK_EQ(p->cached, 0);
	nbd_buf_put(&b, y, k2);
	nbd_bufpool_trim(p, 0);
	CHECK_EQ(p->cached, 0);

	/* Alone in the server: 4 MiB, beyond the budget, is served; given
	 * back, it is not cached (the cache stays within the budget). */
	x = nbd_buf_get(&a, 4096 * KiB, &k1);
	CHECK(x != NULL);
	CHECK_EQ(a.payload_in_flight, 4096 * KiB);
	nbd_buf_put(&a, x, k1);
	CHECK_EQ(p->cached, 0);
	CHECK_EQ(a.payload_in_flight, 0);

	/* At its share, a connection waits for its own buffer to come back,
	 * although the budget has room. */
	x = nbd_buf_get(&a, 256 * KiB, &k1);
	getter_start(&g, &a, 256 * KiB);
	check_waits(&g);
	nbd_buf_put(&a, x, k1);
	pthread_join(g.th, NULL);
	CHECK(g.got && g.p != NULL);
	nbd_buf_put(&a, g.p, g.cls);

	/* Below its share, c waits only while the budget is taken (by a's
	 * and b's 512 KiB alone each: each was empty), and gets the first
	 * buffer given back. */
	x = nbd_buf_get(&a, 512 * KiB, &k1);
	y = nbd_buf_get(&b, 512 * KiB, &k2);
	CHECK(x && y);
	CHECK_EQ(p->held, 1024 * KiB);
	getter_start(&g, &c, 128 * KiB);
	check_waits(&g);
	nbd_buf_put(&b, y, k2);
	pthread_join(g.th, NULL);
	CHECK(g.got && g.p != NULL);
	CHECK_EQ(c.payload_in_flight, 128 * KiB);

	/* c's buffer came with b's cached one unmapped (held + cached within
	 * the budget), and b, holding nothing now, gets its share. */
	CHECK(p->held + p->cached <= p->budget);
	void *z = nbd_buf_get(&b, 256 * KiB, &k3);
	CHECK(z != NULL);
	CHECK(p->held + p->cached <= p->budget);
	nbd_buf_put(&b, z, k3);
	nbd_buf_put(&c, g.p, g.cls);
	nbd_buf_put(&a, x, k1);
	CHECK_EQ(p->held, 0);
	CHECK(p->cached <= p->budget);
	nbd_bufpool_destroy(p);
	return check_done();
}
