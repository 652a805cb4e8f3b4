/* transmit.c — the transmission phase.
 *
 * The model.  A connection has a few workers and one read role (rlock).
 * The worker holding the role takes the next request from the connection's
 * input buffer (one read() brings in every request the client has sent so
 * far) and serves it in one of two ways:
 *
 *  - inline, keeping the read role, when the request is small and cheap: a
 *    READ or WRITE (no FUA) of at most INLINE_MAX_LEN while the vol's
 *    recent READ/WRITE service times average under INLINE_MAX_NS, a CACHE,
 *    or a refused request.  Its reply joins the connection's batch, which
 *    goes out in one send when no further whole request is buffered (just
 *    before the reader would block), when the batch is full, or before the
 *    read role changes hands.  A burst of k such requests costs one read,
 *    one send and no thread hand-over;
 *
 *  - handed over: anything else (a slow vol, a large request, FLUSH, FUA,
 *    TRIM, WRITE_ZEROES).  The worker releases the read role, so the next
 *    worker reads on, calls the vol synchronously and sends this reply on
 *    its own under the write lock.  Up to `threads` requests are then in
 *    flight and replies leave in completion order.
 *
 * Why two ways: handing a request to another thread wakes a sleeping one
 * (a futex wake and a context switch, several microseconds of kernel
 * work), which is more than a memory or page-cache vol needs for 4 KiB;
 * that hand-over per request was most of the server's cost at 4 KiB.  But
 * a vol that waits on disks needs many requests in flight.  The running
 * average chooses: one slow request served inline delays the batch behind
 * it by its own duration and lifts the average, so the requests after it
 * are handed over until the vol is fast again.
 *
 * A large WRITE alone on its connection, to a vol that takes segments
 * (VOL_CAP_STREAM, vol.h: memory and page-cache stores, RAID0/1/10 and
 * LUKS over them), is written while it arrives (stream_write below): the
 * reader receives it in STREAM_SEGMENT pieces and a pool thread writes
 * each one as soon as it is in, so the member's copy overlaps the receive
 * instead of following it (docs/write-path.md: received whole, a `mem:`
 * write cost twice `null:`'s).  With other requests in flight their vol
 * calls overlap this receive already, so it is received whole as before;
 * so is a FUA write (one durable write rather than segments and a flush).
 *
 * A handed-over WRITE (no FUA) to a vol whose bytes are plain memory
 * (VOL_CAP_FILL, vol.h: mem:) is received straight into that memory
 * (fill_write below): no pool buffer and no copy after the receive, so a
 * `mem:` write costs what `null:`'s does plus the pages it touches. */
#include "internal.h"

#include "core/exec.h"

#include "core/clock.h"
#include "core/log.h"
#include "proto.h"

#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>

/* A worker keeps a payload buffer of this size for small requests; larger
 * ones take a buffer from the server's pool (bufpool.c), which bounds the
 * memory of all connections together and gives it back when idle. */
#define WORKER_SMALL_BUF (64u << 10)

/* Inline service (see the top of the file): the largest READ/WRITE served
 * inline, the service time (running average, ns) under which the vol
 * counts as fast, and the reply batch's limits.  Inline READ data waits
 * for the batch send in the arena, so ARENA bounds what inline requests
 * hold (they take no pool buffer). */
#define INLINE_MAX_LEN (64u << 10)
#define INLINE_MAX_NS 20000u
#define BATCH_MAX 64
#define BATCH_ARENA (256u << 10)
_Static_assert(BATCH_ARENA >= INLINE_MAX_LEN, "an inline read fits the arena");
_Static_assert(WORKER_SMALL_BUF >= INLINE_MAX_LEN, "an inline write needs no pool buffer");

/* One reply, ready to send: a header and the data after it (READ only). */
struct reply {
	union {
		struct nbd_simple_reply simple;
		struct nbd_structured_reply none;
		struct nbd_chunk_offset_data data;
		struct nbd_chunk_error error;
		struct nbd_chunk_block_status status;
	} h;
	size_t hlen;
	void *data;
	size_t dlen;
};

/* What the workers of one connection share besides the connection. */
struct transmit {
	struct nbd_conn *c;
	/* Average READ/WRITE service time, ns (updated without a lock: a
	 * lost update only delays the average by one sample). */
	atomic_uint_fast64_t avg_ns;
	/* The reply batch: only the holder of the read role touches it. */
	struct reply batch[BATCH_MAX];
	struct iovec iov[2 * BATCH_MAX];
	unsigned n_batch;
	unsigned char *arena; /* BATCH_ARENA bytes, 4096-aligned */
	size_t arena_used;
};

struct worker {
	struct transmit *t;
	struct nbd_conn *c;
	pthread_t thread;
	void *buf; /* WORKER_SMALL_BUF bytes, or NULL until needed */
};

/* A small request's payload buffer, kept by the worker (4096-aligned so
 * that O_DIRECT members can use it as is). */
static void *worker_small_buf(struct worker *w)
{
	if (!w->buf)
		w->buf = vol_buf_alloc(WORKER_SMALL_BUF);
	return w->buf;
}

/* Stop reading: the client left, broke the protocol, or the server stops. */
static void conn_quit(struct nbd_conn *c)
{
	c->quit = true;
}

/* Fill *rp with the reply to req: error 0 or an NBD error; data is a
 * READ's payload. */
static void reply_build(const struct nbd_conn *c, const struct nbd_req *req,
			uint64_t wire_cookie, uint32_t error, void *data,
			struct reply *rp)
{
	rp->data = NULL;
	rp->dlen = 0;
	if (req->type != NBD_CMD_READ || !c->structured) {
		rp->h.simple = (struct nbd_simple_reply){
			.magic = htobe32(NBD_SIMPLE_REPLY_MAGIC),
			.error = htobe32(error),
			.cookie = wire_cookie, /* opaque: echoed in wire order */
		};
		rp->hlen = sizeof(rp->h.simple);
		/* A failed simple read sends no data. */
		if (req->type == NBD_CMD_READ && !error) {
			rp->data = data;
			rp->dlen = req->len;
		}
		return;
	}
	if (error) {
		rp->h.error = (struct nbd_chunk_error){
			.hdr = {
				.magic = htobe32(NBD_STRUCTURED_REPLY_MAGIC),
				.flags = htobe16(NBD_REPLY_FLAG_DONE),
				.type = htobe16(NBD_REPLY_TYPE_ERROR),
				.cookie = wire_cookie,
				.len = htobe32(sizeof(rp->h.error) - sizeof(rp->h.error.hdr)),
			},
			.error = htobe32(error),
			.msg_len = 0,
		};
		rp->hlen = sizeof(rp->h.error);
		return;
	}
	if (req->len == 0) {
		/* An OFFSET_DATA chunk may not be empty. */
		rp->h.none = (struct nbd_structured_reply){
			.magic = htobe32(NBD_STRUCTURED_REPLY_MAGIC),
			.flags = htobe16(NBD_REPLY_FLAG_DONE),
			.type = htobe16(NBD_REPLY_TYPE_NONE),
			.cookie = wire_cookie,
			.len = 0,
		};
		rp->hlen = sizeof(rp->h.none);
		return;
	}
	rp->h.data = (struct nbd_chunk_offset_data){
		.hdr = {
			.magic = htobe32(NBD_STRUCTURED_REPLY_MAGIC),
			.flags = htobe16(NBD_REPLY_FLAG_DONE),
			.type = htobe16(NBD_REPLY_TYPE_OFFSET_DATA),
			.cookie = wire_cookie,
			.len = htobe32(8 + req->len),
		},
		.offset = htobe64(req->offset),
	};
	rp->hlen = sizeof(rp->h.data);
	rp->data = data;
	rp->dlen = req->len;
}

/* Send n replies in one write (under the write lock).  iov has room for
 * 2n entries. */
static int reply_send(struct nbd_conn *c, struct reply *rp, unsigned n,
		      struct iovec *iov)
{
	int k = 0;

	for (unsigned i = 0; i < n; i++) {
		iov[k++] = (struct iovec){ .iov_base = &rp[i].h, .iov_len = rp[i].hlen };
		if (rp[i].dlen)
			iov[k++] = (struct iovec){ .iov_base = rp[i].data,
						   .iov_len = rp[i].dlen };
	}
	return nbd_conn_send(c, iov, k);
}

/* Send the batched replies, if any.  The caller holds the read role. */
static int batch_flush(struct transmit *t)
{
	int r = 0;

	if (t->n_batch)
		r = reply_send(t->c, t->batch, t->n_batch, t->iov);
	t->n_batch = 0;
	t->arena_used = 0;
	return r;
}

/* Room in the arena for an inline READ of n bytes (<= INLINE_MAX_LEN),
 * sending the batch first if it is full.  NULL if that send failed. */
static void *batch_arena(struct transmit *t, size_t n)
{
	size_t need = (n + 4095) & ~(size_t)4095; /* keep O_DIRECT alignment */

	if (t->arena_used + need > BATCH_ARENA && batch_flush(t) < 0)
		return NULL;
	void *p = t->arena + t->arena_used;
	t->arena_used += need;
	return p;
}

/* Fold one READ/WRITE service time into the average (weight 1/8). */
static void avg_add(struct transmit *t, uint64_t ns)
{
	uint64_t a = atomic_load_explicit(&t->avg_ns, memory_order_relaxed);
	a = a - a / 8 + ns / 8;
	atomic_store_explicit(&t->avg_ns, a, memory_order_relaxed);
}

/* Whether a request read (error: what nbd_request_check() said) is served
 * inline; see the top of the file. */
static bool serve_inline(struct transmit *t, const struct nbd_req *req,
			 uint32_t error)
{
	if (error || req->type == NBD_CMD_CACHE)
		return true;
	if (req->type != NBD_CMD_READ && req->type != NBD_CMD_WRITE)
		return false;
	return !(req->flags & NBD_CMD_FLAG_FUA) && req->len <= INLINE_MAX_LEN &&
	       atomic_load_explicit(&t->avg_ns, memory_order_relaxed) < INLINE_MAX_NS;
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

/* ---- NBD_CMD_BLOCK_STATUS: base:allocation from the vol's extents ---- */

/* Descriptors in one reply at most (8 bytes each); a client asks again
 * from where the reply ended. */
#define BLOCK_STATUS_MAX 1024

struct block_status {
	struct nbd_block_descriptor *d; /* done ones, wire order */
	unsigned n, max;
	uint64_t len;   /* the one being built */
	uint32_t flags; /* its NBD_STATE_* */
	uint32_t bmin;  /* descriptors end on multiples of it */
};

static void block_status_push(struct block_status *b)
{
	b->d[b->n++] = (struct nbd_block_descriptor){ .len = htobe32((uint32_t)b->len),
						      .flags = htobe32(b->flags) };
}

/* One run of the vol's extents.  Runs with the same status join one
 * descriptor, and so does a run after a boundary that is not a multiple
 * of the block size (what both share: data if either is data). */
static int block_status_run(void *arg, uint64_t len, unsigned vflags)
{
	struct block_status *b = arg;
	uint32_t f = ((vflags & VOL_EXTENT_HOLE) ? NBD_STATE_HOLE : 0) |
		     ((vflags & VOL_EXTENT_ZERO) ? NBD_STATE_ZERO : 0);

	if (b->len && (f == b->flags || b->len % b->bmin)) {
		b->flags &= f;
		b->len += len;
		return 0;
	}
	if (b->len) {
		block_status_push(b);
		if (b->n == b->max)
			return 1; /* full: the reply ends here */
	}
	b->len = len;
	b->flags = f;
	return 0;
}

/* Fill *rp with the BLOCK_STATUS reply for req (the payload in *payload,
 * to be freed after the reply), or return -errno. */
static int block_status_reply(struct vol *v, const struct nbd_req *req, uint64_t wire_cookie,
			      void **payload, struct reply *rp)
{
	struct block_status b = {
		.max = (req->flags & NBD_CMD_FLAG_REQ_ONE) ? 1 : BLOCK_STATUS_MAX,
		.bmin = v->block_min ? v->block_min : 1,
	};
	int r;

	b.d = malloc(b.max * sizeof(*b.d));
	if (!b.d)
		return -ENOMEM;
	r = vol_extents(v, req->len, req->offset, block_status_run, &b);
	if (r < 0) {
		free(b.d);
		return r;
	}
	if (b.len && b.n < b.max)
		block_status_push(&b);
	rp->h.status = (struct nbd_chunk_block_status){
		.hdr = {
			.magic = htobe32(NBD_STRUCTURED_REPLY_MAGIC),
			.flags = htobe16(NBD_REPLY_FLAG_DONE),
			.type = htobe16(NBD_REPLY_TYPE_BLOCK_STATUS),
			.cookie = wire_cookie,
			.len = htobe32(4 + b.n * sizeof(*b.d)),
		},
		.context = htobe32(NBD_META_ID_BASE_ALLOCATION),
	};
	rp->hlen = sizeof(rp->h.status);
	rp->data = b.d;
	rp->dlen = b.n * sizeof(*b.d);
	*payload = b.d;
	return 0;
}

/* A request read, and where its payload lives until the reply is sent. */
struct pending {
	struct nbd_req req;
	uint64_t wire_cookie; /* the cookie as it came, echoed as is */
	uint32_t error;       /* from nbd_request_check(), or NBD_ENOMEM */
	bool inline_;         /* served by the reader (see the top) */
	void *data;           /* READ/WRITE payload, or NULL */
	void *tmp;            /* to free after the reply, or NULL */
	size_t cls;           /* data is a pool buffer of that class, or 0 */
	bool streamed;        /* written while received: stream_err is the result */
	int stream_err;
};

/* After the reply: give the request's buffers back. */
static void pending_release(struct nbd_conn *c, struct pending *p)
{
	free(p->tmp);
	p->tmp = NULL;
	if (p->cls)
		nbd_buf_put(c, p->data, p->cls);
	p->cls = 0;
}

/* Before a read that could block: no reply may wait in the batch while
 * the reader sleeps, or a client waiting for it would never send more. */
static int flush_unless_buffered(struct transmit *t, size_t n)
{
	return nbd_conn_buffered(t->c) >= n ? 0 : batch_flush(t);
}

/* Where a valid READ/WRITE's payload lives until its reply is sent: an
 * inline READ's in the batch arena, to go out with the batch; a small one's
 * in the worker's buffer; a larger one's in a buffer from the server's pool,
 * which may wait for other requests' replies to free some.  A handed-over
 * request ends the batch first: its replies must not wait through that.
 * Returns 0, or -1 when the batch could not be sent. */
static int payload_place(struct worker *w, struct pending *p)
{
	struct transmit *t = w->t;
	uint32_t len = p->req.len;

	if (p->inline_ && p->req.type == NBD_CMD_READ) {
		p->data = batch_arena(t, len);
		return p->data ? 0 : -1;
	}
	if (!p->inline_ && batch_flush(t) < 0)
		return -1;
	if (len <= WORKER_SMALL_BUF)
		p->data = worker_small_buf(w);
	else
		p->data = nbd_buf_get(w->c, len, &p->cls);
	if (!p->data)
		p->error = NBD_ENOMEM;
	return 0;
}

/* ---- Streamed writes (see the top of the file) ---- */

/* The segment: large enough that a segment's vol write costs far more
 * than the hand-off that announces it, small enough that the last one,
 * written after the receive ends, is a small part of the request. */
#define STREAM_SEGMENT (256u << 10)

/* One streamed write: the receiver (piece 0) publishes how much of the
 * payload is in, the writer (piece 1) writes each whole segment in order. */
struct stream {
	struct nbd_conn *c;
	struct vol *v;
	unsigned char *buf;
	uint64_t off;
	uint32_t len, seg;
	pthread_mutex_t lock;
	pthread_cond_t more;
	uint32_t received; /* bytes in buf; under lock */
	int recv_err;      /* the receive failed (the client left); under lock */
	bool waiting;      /* the writer sleeps on more; under lock */
	int write_err;     /* the first vol error; the writer's alone */
};

static bool stream_wanted(struct nbd_conn *c, const struct pending *p)
{
	const struct vol *v = c->exp->vol;

	return p->req.type == NBD_CMD_WRITE && !p->error && p->data &&
	       !(p->req.flags & NBD_CMD_FLAG_FUA) && (v->caps & VOL_CAP_STREAM) &&
	       p->req.len > STREAM_SEGMENT && atomic_load(&c->busy) == 0;
}

static void stream_publish(struct stream *s, uint32_t received, int err)
{
	pthread_mutex_lock(&s->lock);
	s->received = received;
	s->recv_err = err;
	if (s->waiting)
		pthread_cond_signal(&s->more);
	pthread_mutex_unlock(&s->lock);
}

/* The whole payload is received whatever the writer meets, so that the
 * next request is read from where it starts. */
static int stream_receive(struct stream *s)
{
	uint32_t got = 0;

	while (got < s->len) {
		uint32_t n = s->len - got < s->seg ? s->len - got : s->seg;
		int r = nbd_conn_recv(s->c, s->buf + got, n);
		if (r < 0) {
			stream_publish(s, got, r);
			return r;
		}
		got += n;
		stream_publish(s, got, 0);
	}
	return 0;
}

/* Segments in order, each once it is whole; none after a vol error (the
 * request fails: vol.h) or once the receive failed (no reply will say
 * what was written: nothing beyond what arrived is). */
static int stream_write_segments(struct stream *s)
{
	for (uint32_t pos = 0; pos < s->len;) {
		uint32_t n = s->len - pos < s->seg ? s->len - pos : s->seg;

		pthread_mutex_lock(&s->lock);
		while (!s->recv_err && s->received < pos + n) {
			s->waiting = true;
			pthread_cond_wait(&s->more, &s->lock);
			s->waiting = false;
		}
		bool stop = s->recv_err != 0;
		pthread_mutex_unlock(&s->lock);
		if (stop)
			return 0;
		int r = vol_write(s->v, s->buf + pos, n, s->off + pos, 0);
		if (r < 0) {
			s->write_err = r;
			return 0;
		}
		pos += n;
	}
	return 0;
}

/* exec_parallel claims indices in order, so the receive (0) has started
 * on some thread whenever the writer (1) waits for it; when no pool
 * thread is free the caller runs both, one after the other. */
static int stream_piece(void *arg, unsigned i)
{
	struct stream *s = arg;

	return i == 0 ? stream_receive(s) : stream_write_segments(s);
}

/* Receive p's payload and write it in segments.  Returns the receive's
 * error (the connection ends), else 0 with the vol's result in p. */
static int stream_write(struct nbd_conn *c, struct pending *p)
{
	struct vol *v = c->exp->vol;
	uint32_t bmin = v->block_min ? v->block_min : 1;
	struct stream s = {
	    .c = c,
	    .v = v,
	    .buf = p->data,
	    .off = p->req.offset,
	    .len = p->req.len,
	    .seg = STREAM_SEGMENT > bmin ? STREAM_SEGMENT - STREAM_SEGMENT % bmin : bmin,
	};
	int r;

	pthread_mutex_init(&s.lock, NULL);
	pthread_cond_init(&s.more, NULL);
	r = exec_parallel(2, stream_piece, &s);
	pthread_cond_destroy(&s.more);
	pthread_mutex_destroy(&s.lock);
	p->streamed = true;
	p->stream_err = s.write_err;
	return r;
}

/* ---- Writes received into the vol's memory (see the top of the file) ---- */

/* What lands in the vol's memory lands in whole blocks of the payload, as
 * a received-then-written payload's segments do: a client that leaves
 * mid-block leaves that block as it was (conn_abuse.py checks it). */
#define FILL_BLOCK 4096u

/* Not over TLS: the socket's queued bytes (below) are then ciphertext. */
static bool fill_wanted(struct nbd_conn *c, const struct pending *p)
{
	return p->req.type == NBD_CMD_WRITE && !p->error && !p->inline_ && !c->tls &&
	       !(p->req.flags & NBD_CMD_FLAG_FUA) && (c->exp->vol->caps & VOL_CAP_FILL);
}

/* Bytes of the socket that a read() returns now without waiting. */
static uint64_t fill_queued(struct nbd_conn *c)
{
	int queued = 0;

	if (ioctl(c->rfd, FIONREAD, &queued) < 0 || queued < 0)
		return 0;
	return (uint64_t)queued;
}

/* read() from the socket into dst: n bytes, or with some false, what one
 * read gives (the socket holds n: all of it).  Past the input buffer, so
 * that what follows it keeps its place in the payload's blocks. */
static int fill_read(struct nbd_conn *c, unsigned char *dst, uint64_t n, bool all,
                     uint64_t *got_out)
{
	uint64_t got = 0;

	while (got < n) {
		ssize_t k = read(c->rfd, dst + got, n - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			struct pollfd pfd = {.fd = c->rfd, .events = POLLIN};
			if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
				return -errno;
			continue;
		}
		if (k <= 0)
			return k == 0 ? -ECONNRESET : -errno;
		got += (uint64_t)k;
		if (!all)
			break;
	}
	*got_out = got;
	return 0;
}

/* Whole blocks that have arrived go straight into place: from the
 * connection's input buffer (what one read brought in with the header),
 * else read() from the socket into place, never more than it holds (with
 * nothing there, first wait for it to hold something); a block still
 * arriving (and the payload's tail) waits in a block of its own, filled
 * from the buffer and then the socket, and is copied in once whole, so a
 * receive that fails leaves no part-block. */
static int fill_recv(void *arg, void *dst, uint64_t len, uint64_t off)
{
	struct nbd_conn *c = arg;
	unsigned char *p = dst, stage[FILL_BLOCK];

	(void)off;
	while (len > 0) {
		uint64_t whole = len - len % FILL_BLOCK, buffered = nbd_conn_buffered(c), n = 0;
		int r = 0;

		if (buffered) {
			n = buffered < whole ? buffered - buffered % FILL_BLOCK : whole;
		} else if (whole) {
			uint64_t q = fill_queued(c);
			if (q < FILL_BLOCK) {
				struct pollfd pfd = {.fd = c->rfd, .events = POLLIN};
				if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
					return -errno;
				q = fill_queued(c);
			}
			n = q < whole ? q - q % FILL_BLOCK : whole;
		}
		if (n > 0 && buffered) {
			r = nbd_conn_recv(c, p, n);
		} else if (n > 0) {
			r = fill_read(c, p, n, false, &n);
		} else {
			uint64_t have = 0, more = 0;
			n = len < FILL_BLOCK ? len : FILL_BLOCK;
			if (buffered) {
				have = buffered < n ? buffered : n;
				r = nbd_conn_recv(c, stage, have);
			}
			if (r == 0 && have < n)
				r = fill_read(c, stage + have, n - have, true, &more);
			if (r == 0)
				memcpy(p, stage, n);
		}
		if (r < 0)
			return r;
		p += n;
		len -= n;
	}
	return 0;
}

/* Receive p's payload into the vol.  Returns the receive's error (the
 * connection ends: the range is as after a failed write, vol.h), else 0
 * with the request's result (done) in p. */
static int fill_write(struct nbd_conn *c, struct pending *p)
{
	int r = vol_fill(c->exp->vol, p->req.len, p->req.offset, fill_recv, c);

	p->streamed = true;
	p->stream_err = 0;
	return r;
}

/* Read and validate one request; the caller holds the read role.  Returns
 * 1 with *p filled, or 0 when the connection is over (EOF, DISC, protocol
 * error, quit, a reply that could not be sent). */
static int read_request(struct worker *w, struct pending *p)
{
	struct transmit *t = w->t;
	struct nbd_conn *c = w->c;
	struct nbd_req *req = &p->req;
	struct nbd_request h;
	int r;

	p->data = NULL;
	p->tmp = NULL;
	p->cls = 0;
	p->streamed = false;
	if (c->quit)
		return 0;
	if (flush_unless_buffered(t, sizeof(h)) < 0)
		return 0;
	if (c->srv->idle_timeout_ms && nbd_conn_buffered(c) < sizeof(h)) {
		r = nbd_conn_wait_request(c, c->srv->idle_timeout_ms);
		if (r == -ETIMEDOUT)
			log_info("nbd: closing a connection idle for %u s",
				 c->srv->idle_timeout_ms / 1000);
		if (r < 0)
			return 0;
	}
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
	p->wire_cookie = h.cookie;
	/* A size that went down since the connection began (an md shrink)
	 * binds it from then on: past it, ENOSPC for writes and EINVAL for
	 * the rest, as the protocol says.  One that grew reaches new
	 * connections only (NBD has no message for a size that changes). */
	if (c->exp->vol->size < c->lim.size)
		c->lim.size = c->exp->vol->size;
	p->error = nbd_request_check(req, &c->lim);
	if (req->type == NBD_CMD_DISC) {
		c->clean = true;
		return 0;
	}
	p->inline_ = serve_inline(t, req, p->error);
	bool fill = fill_wanted(c, p);
	if (fill && batch_flush(t) < 0) /* handed over: as payload_place does */
		return 0;
	if ((req->type == NBD_CMD_READ || req->type == NBD_CMD_WRITE) && !p->error && !fill &&
	    payload_place(w, p) < 0)
		return 0;
	if (req->type != NBD_CMD_WRITE)
		return 1;
	/* The payload follows whether or not the request is valid. */
	r = flush_unless_buffered(t, req->len);
	if (r == 0 && fill)
		r = fill_write(c, p);
	else if (r == 0 && stream_wanted(c, p))
		r = stream_write(c, p);
	else if (r == 0)
		r = p->data ? nbd_conn_recv(c, p->data, req->len)
			    : nbd_conn_discard(c, req->len);
	if (r < 0) {
		/* The client left mid-write: no reply, the connection ends. */
		pending_release(c, p);
		return 0;
	}
	return 1;
}

/* Call the vol for a request read (unless it was refused) and fill *rp
 * with the reply. */
static void serve(struct transmit *t, struct pending *p, struct reply *rp)
{
	const struct nbd_req *req = &p->req;
	uint32_t error = p->error;

	if (error) {
		log_debug("nbd: %s off=%llu len=%u flags=0x%x refused: %u",
			  nbd_cmd_name(req->type), (unsigned long long)req->offset,
			  req->len, req->flags, error);
	} else if (req->type == NBD_CMD_BLOCK_STATUS) {
		int r = block_status_reply(t->c->exp->vol, req, p->wire_cookie, &p->tmp, rp);
		if (r == 0)
			return;
		error = nbd_errno_to_wire(r);
		log_debug("nbd: BLOCK_STATUS off=%llu len=%u: %s", (unsigned long long)req->offset,
			  req->len, strerror(-r));
	} else if (p->streamed) {
		/* Written while it arrived; its time is the client's too, so it
		 * does not enter the vol's average. */
		error = nbd_errno_to_wire(p->stream_err);
		if (p->stream_err < 0)
			log_debug("nbd: WRITE off=%llu len=%u, in segments: %s",
			          (unsigned long long)req->offset, req->len,
			          strerror(-p->stream_err));
	} else {
		bool timed = req->type == NBD_CMD_READ || req->type == NBD_CMD_WRITE;
		uint64_t t0 = timed ? clock_now_ns() : 0;
		int r = dispatch(t->c->exp->vol, req, p->data);
		if (timed)
			avg_add(t, clock_now_ns() - t0);
		error = nbd_errno_to_wire(r);
		if (r < 0)
			log_debug("nbd: %s off=%llu len=%u: %s", nbd_cmd_name(req->type),
				  (unsigned long long)req->offset, req->len,
				  strerror(-r));
	}
	reply_build(t->c, req, p->wire_cookie, error, p->data, rp);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct transmit *t = w->t;
	struct nbd_conn *c = w->c;

	for (;;) {
		struct pending p;
		struct reply rp;
		struct iovec iov[2];
		int more;

		/* Hold the read role while requests are served inline. */
		pthread_mutex_lock(&c->rlock);
		for (;;) {
			more = read_request(w, &p);
			if (!more || !p.inline_)
				break;
			serve(t, &p, &t->batch[t->n_batch++]);
			if (t->n_batch == BATCH_MAX && batch_flush(t) < 0) {
				more = 0;
				break;
			}
		}
		/* Replies already served go out before the role changes
		 * hands, and at the end (DISC wants them all). */
		if (batch_flush(t) < 0 && more) {
			pending_release(c, &p);
			more = 0;
		}
		if (!more)
			conn_quit(c);
		else
			atomic_fetch_add(&c->busy, 1);
		pthread_mutex_unlock(&c->rlock);
		if (!more)
			break;

		serve(t, &p, &rp);
		int r = reply_send(c, &rp, 1, iov);
		pending_release(c, &p);
		atomic_fetch_sub(&c->busy, 1);
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
	struct transmit *t = calloc(1, sizeof(*t));
	struct worker *w = calloc(n, sizeof(*w));
	sigset_t all, old;
	unsigned started = 1;
	int r = -ENOMEM;

	if (!t || !w || !(t->arena = vol_buf_alloc(BATCH_ARENA)))
		goto out;
	t->c = c;
	atomic_init(&t->avg_ns, 0);
	nbd_export_limits_init(&c->lim, c->exp->vol, c->exp->readonly, c->structured,
	                       c->meta_alloc);
	for (unsigned i = 0; i < n; i++) {
		w[i].t = t;
		w[i].c = c;
	}
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
	r = c->clean ? 0 : -ECONNRESET;
out:
	if (t)
		free(t->arena);
	free(t);
	free(w);
	return r;
}
