/* transmit.c — the transmission phase.  A connection's workers take turns
 * reading one request (header, and a write's payload) under the read lock,
 * validate it with nbd_request_check(), release the lock, call the vol
 * synchronously, and send the reply under the write lock.  So up to
 * `threads` requests are in flight per connection and replies leave in
 * completion order, with no queue and no hand-over between threads. */
#include "internal.h"

#include "core/log.h"
#include "proto.h"

#include <endian.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* A worker keeps its payload buffer between requests up to this size;
 * larger requests get a buffer of their own for their duration. */
#define WORKER_KEEP_BUF (4u << 20)

/* Payload bytes one connection may hold in flight (see internal.h).  Twice
 * the largest request, so two maximal requests still overlap. */
#define CONN_PAYLOAD_BUDGET (64u << 20)

struct worker {
	struct nbd_conn *c;
	pthread_t thread;
	void *buf;
	size_t cap;
};

/* An aligned buffer of at least n bytes (4096 so O_DIRECT members can use
 * it as is).  *tmp is set when the caller must free it after the request. */
static void *worker_buf(struct worker *w, size_t n, void **tmp)
{
	void *p;

	*tmp = NULL;
	if (w->buf && n <= w->cap)
		return w->buf;
	if (n > WORKER_KEEP_BUF) {
		if (posix_memalign(&p, 4096, n) != 0)
			return NULL;
		*tmp = p;
		return p;
	}
	size_t want = n < 65536 ? 65536 : n;
	if (posix_memalign(&p, 4096, want) != 0)
		return NULL;
	free(w->buf);
	w->buf = p;
	w->cap = want;
	return p;
}

/* Take n bytes of the connection's payload budget, waiting for replies to
 * free some.  A request alone always fits, so this cannot wait forever on
 * its own account; replies are sent without the read lock, so the workers
 * that free budget never wait for the reader holding it. */
static void budget_take(struct nbd_conn *c, uint64_t n)
{
	pthread_mutex_lock(&c->budget_lock);
	while (c->payload_in_flight > 0 &&
	       c->payload_in_flight + n > CONN_PAYLOAD_BUDGET)
		pthread_cond_wait(&c->budget_freed, &c->budget_lock);
	c->payload_in_flight += n;
	pthread_mutex_unlock(&c->budget_lock);
}

static void budget_give(struct nbd_conn *c, uint64_t n)
{
	if (n == 0)
		return;
	pthread_mutex_lock(&c->budget_lock);
	c->payload_in_flight -= n;
	pthread_cond_broadcast(&c->budget_freed);
	pthread_mutex_unlock(&c->budget_lock);
}

/* Stop reading: the client left, broke the protocol, or the server stops. */
static void conn_quit(struct nbd_conn *c)
{
	c->quit = true;
}

static int send_simple(struct nbd_conn *c, uint64_t cookie, uint32_t error)
{
	struct nbd_simple_reply h = {
		.magic = htobe32(NBD_SIMPLE_REPLY_MAGIC),
		.error = htobe32(error),
		.cookie = cookie, /* opaque: echoed in wire order */
	};
	struct iovec iov = { .iov_base = &h, .iov_len = sizeof(h) };
	return nbd_conn_send(c, &iov, 1);
}

static int send_read_reply(struct nbd_conn *c, const struct nbd_req *req,
			   uint64_t wire_cookie, uint32_t error, void *data)
{
	if (!c->structured) {
		struct nbd_simple_reply h = {
			.magic = htobe32(NBD_SIMPLE_REPLY_MAGIC),
			.error = htobe32(error),
			.cookie = wire_cookie,
		};
		struct iovec iov[2] = {
			{ .iov_base = &h, .iov_len = sizeof(h) },
			{ .iov_base = data, .iov_len = req->len },
		};
		/* A failed simple read sends no data. */
		return nbd_conn_send(c, iov, error ? 1 : 2);
	}
	if (error) {
		struct nbd_chunk_error e = {
			.hdr = {
				.magic = htobe32(NBD_STRUCTURED_REPLY_MAGIC),
				.flags = htobe16(NBD_REPLY_FLAG_DONE),
				.type = htobe16(NBD_REPLY_TYPE_ERROR),
				.cookie = wire_cookie,
				.len = htobe32(sizeof(e) - sizeof(e.hdr)),
			},
			.error = htobe32(error),
			.msg_len = 0,
		};
		struct iovec iov = { .iov_base = &e, .iov_len = sizeof(e) };
		return nbd_conn_send(c, &iov, 1);
	}
	if (req->len == 0) {
		/* An OFFSET_DATA chunk may not be empty. */
		struct nbd_structured_reply h = {
			.magic = htobe32(NBD_STRUCTURED_REPLY_MAGIC),
			.flags = htobe16(NBD_REPLY_FLAG_DONE),
			.type = htobe16(NBD_REPLY_TYPE_NONE),
			.cookie = wire_cookie,
			.len = 0,
		};
		struct iovec iov = { .iov_base = &h, .iov_len = sizeof(h) };
		return nbd_conn_send(c, &iov, 1);
	}
	struct nbd_chunk_offset_data d = {
		.hdr = {
			.magic = htobe32(NBD_STRUCTURED_REPLY_MAGIC),
			.flags = htobe16(NBD_REPLY_FLAG_DONE),
			.type = htobe16(NBD_REPLY_TYPE_OFFSET_DATA),
			.cookie = wire_cookie,
			.len = htobe32(8 + req->len),
		},
		.offset = htobe64(req->offset),
	};
	struct iovec iov[2] = {
		{ .iov_base = &d, .iov_len = sizeof(d) },
		{ .iov_base = data, .iov_len = req->len },
	};
	return nbd_conn_send(c, iov, 2);
}

/* TRIM and WRITE_ZEROES carry no payload and may be as large as the export;
 * the vol takes at most block_max per call, so cut them up.  FUA covers the
 * whole request: a flush at the end rather than FUA on each piece. */
static int dispatch_ranged(struct vol *v, const struct nbd_req *req,
			   unsigned flags, bool zero)
{
	uint64_t off = req->offset, left = req->len;
	uint64_t piece = v->block_max - v->block_max % v->block_min;
	int r = 0;

	if (left <= piece)
		return zero ? vol_write_zeroes(v, left, off, flags)
			    : vol_trim(v, left, off, flags);
	while (left > 0 && r == 0) {
		uint64_t n = left < piece ? left : piece;
		r = zero ? vol_write_zeroes(v, n, off, flags & ~VOL_FUA)
			 : vol_trim(v, n, off, flags & ~VOL_FUA);
		off += n;
		left -= n;
	}
	if (r == 0 && (flags & VOL_FUA))
		r = vol_flush(v);
	return r;
}

/* Run a validated request against the vol.  Returns 0 or -errno. */
static int dispatch(struct vol *v, const struct nbd_req *req, void *buf)
{
	unsigned flags = (req->flags & NBD_CMD_FLAG_FUA) ? VOL_FUA : 0;

	switch (req->type) {
	case NBD_CMD_READ:
		return vol_read(v, buf, req->len, req->offset);
	case NBD_CMD_WRITE:
		return vol_write(v, buf, req->len, req->offset, flags);
	case NBD_CMD_FLUSH:
		/* Replies go out only after the vol op returned, so every write
		 * this connection has acknowledged has completed, and the vol's
		 * flush contract (durable: every write completed before the
		 * call) covers them all — no extra waiting needed here. */
		return vol_flush(v);
	case NBD_CMD_TRIM:
		return dispatch_ranged(v, req, flags, false);
	case NBD_CMD_WRITE_ZEROES:
		if (!(req->flags & NBD_CMD_FLAG_NO_HOLE))
			flags |= VOL_MAY_TRIM;
		if (req->flags & NBD_CMD_FLAG_FAST_ZERO)
			flags |= VOL_FAST_ZERO;
		return dispatch_ranged(v, req, flags, true);
	case NBD_CMD_CACHE:
		/* Advisory; the vol interface has no prefetch, and every vol
		 * either has no slow tier or caches on its own. */
		return 0;
	default:
		return -EINVAL; /* unreachable: nbd_request_check() refused it */
	}
}

/* Read and validate one request under the read lock.  Returns 1 with *req,
 * *error, the payload budget taken in *held (to give back after the
 * reply) and (for a valid WRITE) the payload in *data; 0 when the
 * connection is over (EOF, DISC, protocol error, quit). */
static int read_request(struct worker *w, struct nbd_req *req,
			uint64_t *wire_cookie, uint32_t *error, void **data,
			void **tmp, uint64_t *held)
{
	struct nbd_conn *c = w->c;
	struct nbd_request h;
	int r;

	*data = NULL;
	*tmp = NULL;
	*held = 0;
	if (c->quit)
		return 0;
	r = nbd_conn_recv(c, &h, sizeof(h));
	if (r < 0) {
		if (r != -ECONNRESET)
			log_debug("nbd: reading a request: %s", strerror(-r));
		return 0;
	}
	if (be32toh(h.magic) != NBD_REQUEST_MAGIC) {
		log_warn("nbd: bad request magic 0x%08x, closing the connection",
			 be32toh(h.magic));
		return 0;
	}
	req->flags = be16toh(h.flags);
	req->type = be16toh(h.type);
	req->cookie = be64toh(h.cookie);
	req->offset = be64toh(h.offset);
	req->len = be32toh(h.len);
	*wire_cookie = h.cookie;
	*error = nbd_request_check(req, &c->lim);
	if (req->type == NBD_CMD_DISC) {
		c->clean = true;
		return 0;
	}
	if ((req->type == NBD_CMD_READ || req->type == NBD_CMD_WRITE) && !*error) {
		budget_take(c, req->len);
		*held = req->len;
	}
	if (req->type == NBD_CMD_READ && !*error) {
		*data = worker_buf(w, req->len, tmp);
		if (!*data)
			*error = NBD_ENOMEM;
	}
	if (req->type != NBD_CMD_WRITE)
		return 1;
	if (!*error) {
		*data = worker_buf(w, req->len, tmp);
		if (!*data)
			*error = NBD_ENOMEM;
	}
	/* The payload follows whether or not the request is valid. */
	r = *data ? nbd_conn_recv(c, *data, req->len)
		  : nbd_conn_discard(c, req->len);
	if (r < 0) {
		/* The client left mid-write: no reply, the connection ends. */
		budget_give(c, *held);
		*held = 0;
		free(*tmp);
		*tmp = NULL;
		return 0;
	}
	return 1;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct nbd_conn *c = w->c;

	for (;;) {
		struct nbd_req req;
		uint64_t wire_cookie;
		uint32_t error;
		void *data, *tmp;
		uint64_t held;
		int r;

		pthread_mutex_lock(&c->rlock);
		int more = read_request(w, &req, &wire_cookie, &error, &data, &tmp, &held);
		if (!more)
			conn_quit(c);
		pthread_mutex_unlock(&c->rlock);
		if (!more)
			break;

		if (error) {
			log_debug("nbd: %s off=%llu len=%u flags=0x%x refused: %u",
				  nbd_cmd_name(req.type), (unsigned long long)req.offset,
				  req.len, req.flags, error);
		} else {
			r = dispatch(c->srv->vol, &req, data);
			error = nbd_errno_to_wire(r);
			if (r < 0)
				log_debug("nbd: %s off=%llu len=%u: %s",
					  nbd_cmd_name(req.type),
					  (unsigned long long)req.offset, req.len,
					  strerror(-r));
		}
		if (req.type == NBD_CMD_READ)
			r = send_read_reply(c, &req, wire_cookie, error, data);
		else
			r = send_simple(c, wire_cookie, error);
		free(tmp);
		budget_give(c, held);
		if (r < 0) {
			/* The client cannot hear us: wake the reader and end. */
			conn_quit(c);
			shutdown(c->rfd, SHUT_RD);
			break;
		}
	}
	return NULL;
}

int nbd_transmit(struct nbd_conn *c)
{
	struct nbd_server *s = c->srv;
	unsigned n = s->threads ? s->threads : 1;
	struct worker *w = calloc(n, sizeof(*w));
	sigset_t all, old;
	unsigned started = 1;

	if (!w)
		return -ENOMEM;
	nbd_export_limits_init(&c->lim, s->vol, c->structured);
	for (unsigned i = 0; i < n; i++)
		w[i].c = c;
	/* Workers take no signals: the thread that set up the handlers does. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	for (unsigned i = 1; i < n; i++) {
		if (pthread_create(&w[i].thread, NULL, worker_main, &w[i]) != 0)
			break;
		started++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	worker_main(&w[0]);
	for (unsigned i = 1; i < started; i++)
		pthread_join(w[i].thread, NULL);
	for (unsigned i = 0; i < n; i++)
		free(w[i].buf);
	free(w);
	return c->clean ? 0 : -ECONNRESET;
}
