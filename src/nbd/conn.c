/* conn.c — a connection's byte stream: buffered reads with an optional
 * deadline (the handshake timeout), the idle timeout's wait for a request,
 * discarding unwanted input in pieces, and whole-message writes that never
 * raise SIGPIPE. */
#include "internal.h"
#include "tls.h"
#include "core/clock.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* Before a read during the handshake: wait for input, up to the deadline. */
static int conn_wait_readable(struct nbd_conn *c)
{
	for (;;) {
		uint64_t now = clock_now_ns();
		if (now >= c->deadline_ns)
			return -ETIMEDOUT;
		uint64_t ms = (c->deadline_ns - now + 999999) / 1000000;
		struct pollfd p = { .fd = c->rfd, .events = POLLIN };
		int r = poll(&p, 1, ms > 60000 ? 60000 : (int)ms);
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

/* One read(): returns bytes read (> 0), -ECONNRESET at EOF, or -errno.
 * Under TLS, a read of the session, which may hold decrypted bytes that
 * the socket no longer shows. */
static ssize_t conn_read_once(struct nbd_conn *c, void *dst, size_t n)
{
	for (;;) {
		if (c->deadline_ns && !nbd_tls_pending(c)) {
			int r = conn_wait_readable(c);
			if (r < 0)
				return r;
		}
		if (c->tls) {
			ssize_t got = nbd_tls_recv(c, dst, n);
			if (got != -EAGAIN)
				return got;
			/* During the handshake TLS reads wait only until
			 * the deadline (tls.c): a client that stopped in the
			 * middle of a record is out of time. */
			if (c->deadline_ns)
				return -ETIMEDOUT;
			struct pollfd p = { .fd = c->rfd, .events = POLLIN };
			if (poll(&p, 1, -1) < 0 && errno != EINTR)
				return -errno;
			continue;
		}
		ssize_t got = read(c->rfd, dst, n);
		if (got > 0)
			return got;
		if (got == 0)
			return -ECONNRESET;
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			/* A non-blocking descriptor (an inherited stdin, say):
			 * wait for data rather than spin. */
			struct pollfd p = { .fd = c->rfd, .events = POLLIN };
			if (poll(&p, 1, -1) < 0 && errno != EINTR)
				return -errno;
			continue;
		}
		if (errno != EINTR)
			return -errno;
	}
}

int nbd_conn_recv(struct nbd_conn *c, void *dst, size_t n)
{
	unsigned char *p = dst;

	while (n > 0) {
		if (c->rpos < c->rlen) {
			size_t k = c->rlen - c->rpos;
			if (k > n)
				k = n;
			memcpy(p, c->rbuf + c->rpos, k);
			c->rpos += k;
			p += k;
			n -= k;
			continue;
		}
		ssize_t got;
		if (n >= c->rcap / 2) {
			/* Large payload: straight into the caller's buffer. */
			got = conn_read_once(c, p, n);
			if (got < 0)
				return (int)got;
			p += got;
			n -= (size_t)got;
			continue;
		}
		got = conn_read_once(c, c->rbuf, c->rcap);
		if (got < 0)
			return (int)got;
		c->rpos = 0;
		c->rlen = (size_t)got;
	}
	return 0;
}

size_t nbd_conn_buffered(const struct nbd_conn *c)
{
	return c->rlen - c->rpos;
}

int nbd_conn_wait_request(struct nbd_conn *c, unsigned idle_ms)
{
	if (nbd_tls_pending(c))
		return 0;
	for (;;) {
		struct pollfd p = { .fd = c->rfd, .events = POLLIN };
		int r = poll(&p, 1, (int)idle_ms);
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
		/* A client waiting for a slow request is not idle. */
		if (r == 0 && atomic_load(&c->busy) == 0)
			return -ETIMEDOUT;
	}
}

int nbd_conn_discard(struct nbd_conn *c, uint64_t n)
{
	unsigned char scratch[4096];

	while (n > 0) {
		size_t k = n < sizeof(scratch) ? (size_t)n : sizeof(scratch);
		int r = nbd_conn_recv(c, scratch, k);
		if (r < 0)
			return r;
		n -= k;
	}
	return 0;
}

int nbd_conn_send(struct nbd_conn *c, struct iovec *iov, int iovcnt)
{
	int r = 0;

	pthread_mutex_lock(&c->wlock);
	if (c->tls) {
		r = nbd_tls_sendv(c, iov, iovcnt);
		/* EAGAIN: the handshake's send timeout (see below). */
		pthread_mutex_unlock(&c->wlock);
		return r == -EAGAIN ? -ETIMEDOUT : r;
	}
	while (iovcnt > 0) {
		ssize_t put;
		if (c->wfd_is_socket) {
			struct msghdr m = { .msg_iov = iov, .msg_iovlen = (size_t)iovcnt };
			put = sendmsg(c->wfd, &m, MSG_NOSIGNAL);
		} else {
			put = writev(c->wfd, iov, iovcnt);
		}
		if (put < 0) {
			/* EAGAIN only comes from SO_SNDTIMEO, set during the
			 * handshake: the client is not reading. */
			if ((errno == EAGAIN || errno == EWOULDBLOCK) && c->deadline_ns) {
				r = -ETIMEDOUT;
				break;
			}
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				struct pollfd p = { .fd = c->wfd, .events = POLLOUT };
				if (poll(&p, 1, -1) < 0 && errno != EINTR) {
					r = -errno;
					break;
				}
				continue;
			}
			if (errno == EINTR)
				continue;
			r = -errno;
			break;
		}
		while (iovcnt > 0 && (size_t)put >= iov->iov_len) {
			put -= (ssize_t)iov->iov_len;
			iov++;
			iovcnt--;
		}
		if (iovcnt > 0) {
			iov->iov_base = (char *)iov->iov_base + put;
			iov->iov_len -= (size_t)put;
		}
	}
	pthread_mutex_unlock(&c->wlock);
	return r;
}
