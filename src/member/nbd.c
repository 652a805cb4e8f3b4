/* nbd.c — a member on a remote NBD export (nbd://, nbds://, nbd+unix://,
 * nbds+unix://) through libnbd's asynchronous calls.  A RAID1 can mirror
 * a local disk to a remote one, and tests put independent servers (nbdkit,
 * uraid serve on another host) under our disciplines.
 *
 * A caller issues its request itself on the least loaded connection
 * (libnbd's aio calls: any number in flight per connection) and waits;
 * each connection's one I/O thread polls the socket, sends what libnbd
 * could not send at once and watches the deadlines.  Replies are read by
 * one reader at a time (struct nbd_conn's reader): a waiting caller when
 * none is reading, so that at queue depth 1 a reply wakes only its own
 * caller, and the I/O thread when that caller leaves with requests still in
 * flight (or always, over TLS).  When the
 * server offers multi-conn, up to NBD_MEMBER_MAX_CONNS connections share
 * the load (a flush on one covers writes on all: the server's promise).
 *
 * A host that stops answering must not hang an array.  A request with no
 * reply within the timeout ends its connection, and the member is away:
 * every request in flight fails (-ETIMEDOUT for the late ones, -EIO for
 * the rest), every other connection is dropped, and every new request fails
 * at once with -EIO, errors the RAID engine holds against the member and
 * not the request (raid_err_is_request()).  A reconnect thread tries again
 * after 0.1 s, doubling up to the reconnect limit; once the export answers
 * with the size it had, requests are served again.  Whether a member that
 * was failed out of an array is taken back is the md layer's decision.
 *
 * NBD has no read-only open: a member opened read-only refuses writes itself
 * (the layers above call its ops directly), and one opened writable over a
 * read-only export is refused.  member.h gives the spec's syntax. */
#include "member.h"

#include "core/clock.h"
#include "core/log.h"

#include <errno.h>
#include <libnbd.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define NBD_MEMBER_MAX_CONNS 8
#define NS 1000000000ull
#define NBD_TIMEOUT_DEFAULT_NS (30 * NS) /* the kernel's nbd client's */
#define NBD_RECONNECT_DEFAULT_NS (5 * NS)
#define NBD_BACKOFF_FIRST_NS (NS / 10)
#define NBD_CLOSE_WAIT_MAX_NS (5 * NS) /* for the server to see NBD_CMD_DISC */
#define NBD_READER_SLICE_MS 10         /* a reading caller's longest poll */

struct link {
	struct link *prev, *next;
};

static void link_init(struct link *l)
{
	l->prev = l->next = l;
}

static bool link_empty(const struct link *l)
{
	return l->next == l;
}

static void link_add_tail(struct link *head, struct link *l)
{
	l->prev = head->prev;
	l->next = head;
	head->prev->next = l;
	head->prev = l;
}

static void link_del(struct link *l)
{
	l->prev->next = l->next;
	l->next->prev = l->prev;
	link_init(l);
}

enum nbd_op_kind { OP_READ, OP_WRITE, OP_FLUSH, OP_TRIM, OP_ZERO };

/* One request, on its caller's stack.  Its caller issues it to libnbd
 * itself (no hop through another thread) and it sits on its connection's
 * in-flight list until libnbd releases it (the .free callback, called
 * exactly once: after the reply, when issuing failed, or at nbd_close);
 * only then, and once its caller's issuing call has returned, is it done:
 * after that neither libnbd nor the I/O thread touches it. */
struct nbd_op {
	struct link link;
	enum nbd_op_kind kind;
	void *buf;
	uint64_t len, off;
	uint32_t flags;     /* LIBNBD_CMD_FLAG_* */
	uint64_t deadline;  /* clock_now_ns() by which it must be answered; 0: none */
	struct nbd_conn *c; /* where it was issued */
	bool replied;       /* the completion callback ran: result is the reply's */
	int result;         /* 0 or -errno, once done */
	int fail;           /* the error if it ends without a reply (-EIO, -ETIMEDOUT) */
	bool issuing;       /* its caller is inside the issuing call (under the lock) */
	bool released;      /* libnbd let go of it (under the lock) */
	bool done;          /* under the member's lock */
	pthread_cond_t cv;
};

struct nbd_vol;

/* Who reads replies off a connection's socket (under the member's lock).
 * NONE only while nothing is in flight, or for the moment between a
 * caller's issue and its wait, where that caller takes the role; a caller
 * reads until its own request is done, then hands the role to the I/O
 * thread if others are in flight (and kicks it), else back to NONE; the
 * I/O thread gives it back once nothing is in flight.  Every other caller
 * waits on its cv.  So whenever a request is in flight someone polls for
 * its reply, and, with no TLS, never two. */
enum nbd_reader { READER_NONE, READER_CALLER, READER_THREAD };

/* Lock order: a connection's hlock, then the member's lock (libnbd's
 * callbacks take the member's lock inside calls made under hlock); no
 * libnbd call is made holding the member's lock. */
struct nbd_conn {
	struct nbd_vol *n;
	pthread_t thread;
	bool thread_started;
	pthread_cond_t cv; /* a handle was installed, or the member closes */
	int wake;          /* eventfd: the socket has output to send, drop, close */
	/* Read-held by a caller issuing on h, write-held to close or install
	 * it: h is written under hlock and the member's lock both. */
	pthread_rwlock_t hlock;
	struct nbd_handle *h;   /* NULL while down; the reconnect thread installs */
	bool drop;              /* another connection was lost: drop this one too */
	struct link inflight;   /* issued or being issued, oldest first (the lock) */
	unsigned load;          /* in flight, under the lock */
	enum nbd_reader reader; /* under the lock */
};

struct nbd_vol {
	struct vol vol;
	char *uri;                 /* the spec as libnbd gets it: without our parameters */
	uint64_t timeout_ns;       /* 0: requests wait for ever */
	uint64_t reconnect_max_ns; /* the longest wait between tries; 0: never */
	bool ro;                   /* opened read-only: the connections may still take writes */
	/* nbds: the I/O thread reads (records gnutls buffered, poll misses) */
	bool tls;
	unsigned nconns; /* connection slots (multi-conn: several) */
	int close_fd;    /* eventfd, readable once closing: ends a connect */

	pthread_mutex_t lock; /* everything below, and the ops' done flags */
	bool up;              /* false: away, every request fails with -EIO */
	bool closing;
	uint64_t away_since; /* clock_now_ns() when it went away */
	int last_logged;     /* the error last logged by a failed reconnect */
	struct nbd_member_status st;
	pthread_cond_t recon_cv; /* went away, a handle dropped, or closing */
	pthread_t recon_thread;
	bool recon_started;
	struct nbd_conn conn[NBD_MEMBER_MAX_CONNS];
};

static void nbd_kick(int fd)
{
	uint64_t one = 1;
	ssize_t w = write(fd, &one, sizeof(one));
	(void)w; /* an eventfd whose counter is not 0 needs no second kick */
}

static double ns_to_s(uint64_t ns)
{
	return (double)ns / (double)NS;
}

/* Errors that mean the connection, not the request, failed: the member's
 * business, reported as -EIO (what the RAID engine fails a member on). */
static int nbd_errno_of(int e)
{
	if (e <= 0 || e == ENOTCONN || e == ECONNRESET || e == EPIPE || e == ESHUTDOWN ||
	    e == ETIMEDOUT || e == ECONNREFUSED || e == EHOSTUNREACH || e == ENETUNREACH)
		return -EIO;
	return -e;
}

/* --- the spec ---------------------------------------------------------- */

/* "SECONDS": digits with at most one '.', at most a day. */
static int nbd_parse_seconds(const char *spec, const char *key, const char *val, size_t len,
                             uint64_t *ns)
{
	char buf[32];
	int dots = 0;

	if (len == 0 || len >= sizeof(buf))
		goto bad;
	for (size_t i = 0; i < len; i++) {
		if (val[i] == '.')
			dots++;
		else if (val[i] < '0' || val[i] > '9')
			goto bad;
	}
	if (dots > 1 || (len == 1 && dots))
		goto bad;
	memcpy(buf, val, len);
	buf[len] = '\0';
	double s = strtod(buf, NULL);
	if (!(s >= 0 && s <= 86400))
		goto bad;
	*ns = (uint64_t)llround(s * (double)NS);
	return 0;
bad:
	return err_set(-EINVAL, "%s: %s=%.*s: not a number of seconds (0 to 86400)", spec, key,
	               (int)(len > 40 ? 40 : len), val);
}

/* Split our query parameters (timeout=, reconnect=) off spec: the rest of
 * the URI, for libnbd, goes to *uri (malloc'ed). */
static int nbd_spec_parse(const char *spec, char **uri, uint64_t *timeout_ns,
                          uint64_t *reconnect_ns)
{
	const char *q = strchr(spec, '?');
	const char *frag = strchr(spec, '#');
	bool seen_timeout = false, seen_reconnect = false;
	size_t n = strlen(spec);
	char *out;
	size_t o;
	int r;

	*timeout_ns = NBD_TIMEOUT_DEFAULT_NS;
	*reconnect_ns = NBD_RECONNECT_DEFAULT_NS;
	if (frag && q && frag < q)
		q = NULL; /* a '?' inside the fragment is no query */
	out = malloc(n + 1);
	if (!out)
		return -ENOMEM;
	if (!q) {
		memcpy(out, spec, n + 1);
		*uri = out;
		return 0;
	}
	const char *end = frag ? frag : spec + n;
	o = (size_t)(q - spec);
	memcpy(out, spec, o);
	bool first = true;
	for (const char *p = q + 1; p <= end;) {
		const char *amp = memchr(p, '&', (size_t)(end - p));
		const char *pe = amp ? amp : end;
		const char *eq = memchr(p, '=', (size_t)(pe - p));
		size_t klen = eq ? (size_t)(eq - p) : (size_t)(pe - p);
		const char *val = eq ? eq + 1 : pe;
		size_t vlen = (size_t)(pe - val);

		if (klen == 7 && memcmp(p, "timeout", 7) == 0) {
			if (seen_timeout) {
				r = err_set(-EINVAL, "%s: timeout= given twice", spec);
				goto fail;
			}
			seen_timeout = true;
			r = nbd_parse_seconds(spec, "timeout", val, vlen, timeout_ns);
			if (r < 0)
				goto fail;
		} else if (klen == 9 && memcmp(p, "reconnect", 9) == 0) {
			if (seen_reconnect) {
				r = err_set(-EINVAL, "%s: reconnect= given twice", spec);
				goto fail;
			}
			seen_reconnect = true;
			r = nbd_parse_seconds(spec, "reconnect", val, vlen, reconnect_ns);
			if (r < 0)
				goto fail;
		} else if (pe > p) {
			out[o++] = first ? '?' : '&';
			first = false;
			memcpy(out + o, p, (size_t)(pe - p));
			o += (size_t)(pe - p);
		}
		if (!amp)
			break;
		p = amp + 1;
	}
	memcpy(out + o, end, (size_t)(spec + n - end));
	o += (size_t)(spec + n - end);
	out[o] = '\0';
	*uri = out;
	return 0;
fail:
	free(out);
	return r;
}

/* --- connecting -------------------------------------------------------- */

/* Connect a new handle to n->uri and finish the handshake within the
 * timeout; a close of the member (close_fd) ends the wait.  Returns 0 or
 * -errno with err_set() detail naming the member. */
static int nbd_connect_bounded(struct nbd_vol *n, struct nbd_handle **out)
{
	const char *name = n->vol.name;
	uint64_t deadline = n->timeout_ns ? clock_now_ns() + n->timeout_ns : 0;
	struct nbd_handle *h = nbd_create();
	int r;

	if (!h)
		return err_set(-ENOMEM, "%s: %s", name, nbd_get_error());
	/* The spec comes from the user: tls-psk-file= in it is theirs to name. */
	nbd_set_uri_allow_local_file(h, true);
	/* Reads hand out data only when they succeed. */
	nbd_set_pread_initialize(h, false);
	if (nbd_aio_connect_uri(h, n->uri) == -1) {
		r = err_set(-EIO, "%s: %s", name, nbd_get_error());
		goto fail;
	}
	while (nbd_aio_is_connecting(h) == 1) {
		unsigned dir = nbd_aio_get_direction(h);
		struct pollfd p[2] = {
		    {.fd = nbd_aio_get_fd(h)},
		    {.fd = n->close_fd, .events = POLLIN},
		};
		int ms = -1;

		if (p[0].fd < 0) {
			r = err_set(-EIO, "%s: %s", name, nbd_get_error());
			goto fail;
		}
		if (dir & LIBNBD_AIO_DIRECTION_READ)
			p[0].events |= POLLIN;
		if (dir & LIBNBD_AIO_DIRECTION_WRITE)
			p[0].events |= POLLOUT;
		if (deadline) {
			uint64_t now = clock_now_ns();
			if (now >= deadline) {
				r = err_set(-ETIMEDOUT,
				            "%s: no answer within %g s while connecting", name,
				            ns_to_s(n->timeout_ns));
				goto fail;
			}
			ms = (int)((deadline - now + 999999) / 1000000);
		}
		int k = poll(p, 2, ms);
		if (k < 0 && errno != EINTR) {
			r = err_set(-errno, "%s: poll: %s", name, strerror(errno));
			goto fail;
		}
		if (k <= 0)
			continue;
		if (p[1].revents) {
			r = -ECANCELED;
			goto fail;
		}
		if ((p[0].revents & (POLLIN | POLLHUP | POLLERR)) && nbd_aio_notify_read(h) == -1) {
			r = err_set(-EIO, "%s: %s", name, nbd_get_error());
			goto fail;
		}
		if ((p[0].revents & POLLOUT) && nbd_aio_notify_write(h) == -1) {
			r = err_set(-EIO, "%s: %s", name, nbd_get_error());
			goto fail;
		}
	}
	if (nbd_aio_is_ready(h) != 1) {
		const char *e = nbd_get_error();
		r = err_set(-EIO, "%s: %s", name, e ? e : "the server ended the handshake");
		goto fail;
	}
	*out = h;
	return 0;
fail:
	nbd_close(h);
	return r;
}

/* The export a reconnect found must be the one this member was opened on. */
static int nbd_check_same(struct nbd_vol *n, struct nbd_handle *h)
{
	int64_t size = nbd_get_size(h);

	if (size < 0)
		return err_set(-EIO, "%s: %s", n->vol.name, nbd_get_error());
	if ((uint64_t)size != n->vol.size)
		return err_set(-ESTALE,
		               "%s: the export is now %lld bytes, not %llu: not the disk this "
		               "member was, refusing it",
		               n->vol.name, (long long)size, (unsigned long long)n->vol.size);
	if (!n->ro && nbd_is_read_only(h) == 1)
		return err_set(-EROFS, "%s: the server now exports it read-only, refusing it",
		               n->vol.name);
	return 0;
}

/* --- the member's state: up or away ------------------------------------ */

/* A connection was lost (under the lock): the whole member goes away, and
 * the first to notice says why. */
static void nbd_member_lost_locked(struct nbd_vol *n, const char *why)
{
	if (!n->up)
		return;
	n->up = false;
	n->away_since = clock_now_ns();
	n->st.losses++;
	log_warn("%s: %s; failing its requests with EIO %s", n->vol.name, why,
	         n->reconnect_max_ns ? "until it reconnects" : "(reconnect=0: for good)");
	for (unsigned i = 0; i < n->nconns; i++)
		if (n->conn[i].h) {
			n->conn[i].drop = true;
			nbd_kick(n->conn[i].wake);
		}
	pthread_cond_signal(&n->recon_cv);
}

/* --- a connection's I/O thread ----------------------------------------- */

static int nbd_op_reply(void *user_data, int *error)
{
	struct nbd_op *op = user_data;

	/* Read under the lock after nbd_op_release, which runs after this in
	 * the same call: no lock needed here. */
	op->replied = true;
	op->result = *error ? nbd_errno_of(*error) : 0;
	return 1;
}

/* Under the lock: op's caller may return. */
static void nbd_op_done_locked(struct nbd_op *op, int result)
{
	link_del(&op->link);
	op->c->load--;
	op->result = result;
	op->done = true;
	pthread_cond_signal(&op->cv);
}

/* libnbd is done with op.  Its caller completes it if it is still inside
 * the issuing call (which may be the one releasing it). */
static void nbd_op_release(void *user_data)
{
	struct nbd_op *op = user_data;
	struct nbd_vol *n = op->c->n;

	pthread_mutex_lock(&n->lock);
	op->released = true;
	if (!op->issuing)
		nbd_op_done_locked(op, op->replied ? op->result : op->fail);
	pthread_mutex_unlock(&n->lock);
}

static int64_t nbd_op_issue(struct nbd_handle *h, struct nbd_op *op)
{
	nbd_completion_callback cb = {
	    .callback = nbd_op_reply, .user_data = op, .free = nbd_op_release};

	switch (op->kind) {
	case OP_READ:
		return nbd_aio_pread(h, op->buf, op->len, op->off, cb, 0);
	case OP_WRITE:
		return nbd_aio_pwrite(h, op->buf, op->len, op->off, cb, op->flags);
	case OP_FLUSH:
		return nbd_aio_flush(h, cb, 0);
	case OP_TRIM:
		return nbd_aio_trim(h, op->len, op->off, cb, op->flags);
	case OP_ZERO:
		return nbd_aio_zero(h, op->len, op->off, cb, op->flags);
	}
	return -1;
}

static bool nbd_handle_gone(struct nbd_handle *h)
{
	return nbd_aio_is_dead(h) == 1 || nbd_aio_is_closed(h) == 1;
}

/* End c's connection: every op on it fails (those past their deadline with
 * -ETIMEDOUT), and the member is away.  why is NULL when c was asked to
 * drop because another connection was lost.  The I/O thread's. */
static void nbd_conn_down(struct nbd_conn *c, const char *why, bool timed_out)
{
	struct nbd_vol *n = c->n;
	uint64_t now = clock_now_ns();

	/* Away first: no new request may pick a connection of this member
	 * between its failed ones returning and the others dropping. */
	pthread_mutex_lock(&n->lock);
	if (why)
		nbd_member_lost_locked(n, why);
	c->drop = true; /* a reading caller leaves (nbd_wait_reading_locked) */
	for (struct link *l = c->inflight.next; l != &c->inflight; l = l->next) {
		struct nbd_op *op = container_of(l, struct nbd_op, link);
		if (timed_out && op->deadline && op->deadline <= now)
			op->fail = -ETIMEDOUT;
	}
	pthread_mutex_unlock(&n->lock);

	pthread_rwlock_wrlock(&c->hlock); /* no caller is issuing on it now */
	nbd_close(c->h);                  /* releases every op in flight */
	pthread_mutex_lock(&n->lock);
	c->h = NULL;
	c->drop = false;
	pthread_cond_signal(&n->recon_cv);
	pthread_mutex_unlock(&n->lock);
	pthread_rwlock_unlock(&c->hlock);
}

/* The member closes: tell the server (NBD_CMD_DISC) and give it a moment
 * to see it, no longer than the timeout, so a dead host cannot hold us. */
static void nbd_conn_disconnect(struct nbd_vol *n, struct nbd_handle *h)
{
	uint64_t wait = n->timeout_ns && n->timeout_ns < NBD_CLOSE_WAIT_MAX_NS
	                    ? n->timeout_ns
	                    : NBD_CLOSE_WAIT_MAX_NS;
	uint64_t deadline = clock_now_ns() + wait;

	if (nbd_aio_disconnect(h, 0) == 0) {
		while (!nbd_handle_gone(h)) {
			uint64_t now = clock_now_ns();
			unsigned dir = nbd_aio_get_direction(h);
			struct pollfd p = {.fd = nbd_aio_get_fd(h)};
			if (now >= deadline || p.fd < 0)
				break;
			if (dir & LIBNBD_AIO_DIRECTION_READ)
				p.events |= POLLIN;
			if (dir & LIBNBD_AIO_DIRECTION_WRITE)
				p.events |= POLLOUT;
			int k = poll(&p, 1, (int)((deadline - now + 999999) / 1000000));
			if (k < 0 && errno != EINTR)
				break;
			if (k <= 0)
				continue;
			if ((p.revents & (POLLIN | POLLHUP | POLLERR)) &&
			    nbd_aio_notify_read(h) == -1)
				break;
			if ((p.revents & POLLOUT) && nbd_aio_notify_write(h) == -1)
				break;
		}
	}
	nbd_close(h);
}

/* One round with a live handle: wait for the socket, a kick or the
 * nearest deadline (by then) and let libnbd run.  Only this thread
 * closes h, so it uses h without hlock. */
static void nbd_conn_round(struct nbd_conn *c, struct nbd_handle *h, uint64_t by, bool reading)
{
	char why[300];
	struct pollfd p[2] = {
	    {.fd = nbd_aio_get_fd(h)},
	    {.fd = c->wake, .events = POLLIN},
	};
	unsigned dir = nbd_aio_get_direction(h);
	int ms = -1;

	/* Not the reader: still see the server hang up while idle. */
	if (dir & LIBNBD_AIO_DIRECTION_READ)
		p[0].events |= reading ? POLLIN : POLLRDHUP;
	if (dir & LIBNBD_AIO_DIRECTION_WRITE)
		p[0].events |= POLLOUT;
	if (by) {
		uint64_t now = clock_now_ns();
		ms = by > now ? (int)((by - now + 999999) / 1000000) : 0;
	}
	int k = poll(p, 2, ms);
	if (k > 0 && p[1].revents) {
		uint64_t cnt;
		ssize_t rd = read(c->wake, &cnt, sizeof(cnt));
		(void)rd;
	}
	if (k > 0 && (p[0].revents & (POLLIN | POLLRDHUP | POLLHUP | POLLERR)) &&
	    nbd_aio_notify_read(h) == -1)
		goto lost;
	if (k > 0 && (p[0].revents & POLLOUT) && nbd_aio_notify_write(h) == -1)
		goto lost;
	if (nbd_handle_gone(h))
		goto lost;

	pthread_mutex_lock(&c->n->lock);
	bool late = false;
	if (!link_empty(&c->inflight)) {
		struct nbd_op *oldest = container_of(c->inflight.next, struct nbd_op, link);
		late = oldest->deadline && oldest->deadline <= clock_now_ns();
	}
	pthread_mutex_unlock(&c->n->lock);
	if (late) {
		snprintf(why, sizeof(why), "no reply within %g s", ns_to_s(c->n->timeout_ns));
		nbd_conn_down(c, why, true);
	}
	return;
lost : {
	const char *e = nbd_get_error();
	snprintf(why, sizeof(why), "connection lost (%s)", e ? e : "closed by the server");
	nbd_conn_down(c, why, false);
}
}

static void *nbd_conn_thread(void *arg)
{
	struct nbd_conn *c = arg;
	struct nbd_vol *n = c->n;

	pthread_mutex_lock(&n->lock);
	for (;;) {
		while (!c->h && !n->closing)
			pthread_cond_wait(&c->cv, &n->lock);
		struct nbd_handle *h = c->h;
		if (!h)
			break; /* closing */
		if (n->closing) {
			/* No request is left: close() comes after the last. */
			c->h = NULL;
			pthread_mutex_unlock(&n->lock);
			nbd_conn_disconnect(n, h);
			pthread_mutex_lock(&n->lock);
			break;
		}
		if (c->drop) {
			pthread_mutex_unlock(&n->lock);
			nbd_conn_down(c, NULL, false);
			pthread_mutex_lock(&n->lock);
			continue;
		}
		/* Wake by the oldest deadline; with none, a timeout from now,
		 * which is before the deadline of any request issued later: a
		 * caller never has to wake this thread for its deadline. */
		uint64_t by = 0;
		if (!link_empty(&c->inflight))
			by = container_of(c->inflight.next, struct nbd_op, link)->deadline;
		else if (n->timeout_ns)
			by = clock_now_ns() + n->timeout_ns;
		if (c->reader == READER_THREAD && c->load == 0 && !n->tls)
			c->reader = READER_NONE;
		bool reading = c->reader == READER_THREAD;
		pthread_mutex_unlock(&n->lock);
		nbd_conn_round(c, h, by, reading);
		pthread_mutex_lock(&n->lock);
	}
	pthread_mutex_unlock(&n->lock);
	return NULL;
}

/* --- reconnecting ------------------------------------------------------ */

static bool nbd_all_down_locked(struct nbd_vol *n)
{
	for (unsigned i = 0; i < n->nconns; i++)
		if (n->conn[i].h)
			return false;
	return true;
}

/* Wait up to ns for closing (under the lock); true once closing. */
static bool nbd_wait_closing_locked(struct nbd_vol *n, uint64_t ns)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t t = (uint64_t)ts.tv_nsec + ns;
	ts.tv_sec += (time_t)(t / NS);
	ts.tv_nsec = (long)(t % NS);
	while (!n->closing)
		if (pthread_cond_timedwait(&n->recon_cv, &n->lock, &ts) == ETIMEDOUT)
			break;
	return n->closing;
}

/* One try: connect every slot (at least the first), check it is the same
 * export, and install the handles.  Under the lock on entry and exit. */
static int nbd_reconnect_once(struct nbd_vol *n)
{
	struct nbd_handle *h[NBD_MEMBER_MAX_CONNS] = {0};
	unsigned got = 0;
	int r;

	pthread_mutex_unlock(&n->lock);
	err_clear();
	r = nbd_connect_bounded(n, &h[0]);
	if (r == 0)
		r = nbd_check_same(n, h[0]);
	if (r == 0) {
		got = 1;
		if (n->nconns > 1 && nbd_can_multi_conn(h[0]) == 1)
			while (got < n->nconns && nbd_connect_bounded(n, &h[got]) == 0)
				got++;
	} else if (h[0]) {
		nbd_close(h[0]);
		h[0] = NULL;
	}
	pthread_mutex_lock(&n->lock);
	if (r < 0 || n->closing) {
		if (r < 0 && r != -ECANCELED && r != n->last_logged) {
			/* The detail names the member. */
			log_warn("%s (reconnecting, trying again every %g s at most)",
			         err_detail(r), ns_to_s(n->reconnect_max_ns));
			n->last_logged = r;
		}
		pthread_mutex_unlock(&n->lock);
		for (unsigned i = 0; i < got; i++)
			nbd_close(h[i]);
		pthread_mutex_lock(&n->lock);
		return r < 0 ? r : -ECANCELED;
	}
	pthread_mutex_unlock(&n->lock);
	for (unsigned i = 0; i < got; i++) {
		struct nbd_conn *c = &n->conn[i];
		pthread_rwlock_wrlock(&c->hlock);
		pthread_mutex_lock(&n->lock);
		c->h = h[i];
		c->drop = false;
		pthread_cond_signal(&c->cv);
		pthread_mutex_unlock(&n->lock);
		pthread_rwlock_unlock(&c->hlock);
	}
	pthread_mutex_lock(&n->lock);
	n->up = true;
	n->st.reconnects++;
	n->last_logged = 0;
	log_info("%s: reconnected after %.1f s away (%u connection%s)", n->vol.name,
	         ns_to_s(clock_now_ns() - n->away_since), got, got == 1 ? "" : "s");
	return 0;
}

static void *nbd_reconnect_thread(void *arg)
{
	struct nbd_vol *n = arg;
	uint64_t backoff = 0;

	pthread_mutex_lock(&n->lock);
	while (!n->closing) {
		if (n->up || !nbd_all_down_locked(n) || n->reconnect_max_ns == 0) {
			backoff = 0;
			pthread_cond_wait(&n->recon_cv, &n->lock);
			continue;
		}
		if (backoff == 0)
			backoff = NBD_BACKOFF_FIRST_NS;
		if (backoff > n->reconnect_max_ns)
			backoff = n->reconnect_max_ns;
		if (nbd_wait_closing_locked(n, backoff))
			break;
		int r = nbd_reconnect_once(n);
		if (r < 0) {
			n->st.attempts++;
			n->st.last_error = r;
			backoff *= 2;
		} else {
			backoff = 0;
		}
	}
	pthread_mutex_unlock(&n->lock);
	return NULL;
}

/* --- the ops ------------------------------------------------------------ */

static const struct vol_ops nbd_member_ops;

/* op's caller reads replies off c's socket itself (every reply that comes,
 * others' too) until op is done, rather than wait for the I/O thread to
 * hand it over: at queue depth 1 that hop, a wake-up of one thread by
 * another, cost as much as the round trip.  It reads in slices of polls and
 * leaves early when the connection is to drop, is gone or misbehaves, or
 * op's deadline passes, handing the role to the I/O thread, whose it then
 * is to judge the connection (nbd_conn_down waits for one slice at most:
 * it marks drop before it takes hlock).  Takes the role only when no one
 * has it; false: the caller should wait on op's cv.  With the member's
 * lock, dropped while reading. */
static bool nbd_wait_reading_locked(struct nbd_conn *c, struct nbd_handle *h, struct nbd_op *op)
{
	struct nbd_vol *n = c->n;

	if (c->reader != READER_NONE)
		return false;
	c->reader = READER_CALLER;
	for (;;) {
		uint64_t now = clock_now_ns();
		bool leave = false;

		if (op->done || c->h != h || c->drop || !n->up ||
		    (op->deadline && op->deadline <= now))
			break;
		int ms = NBD_READER_SLICE_MS;
		if (op->deadline && op->deadline - now < (uint64_t)ms * 1000000u)
			ms = (int)((op->deadline - now + 999999) / 1000000);
		pthread_mutex_unlock(&n->lock);
		pthread_rwlock_rdlock(&c->hlock);
		if (c->h == h) { /* closing h takes hlock: it stays while held */
			struct pollfd p = {.fd = nbd_aio_get_fd(h), .events = POLLIN};
			int k = poll(&p, 1, ms);
			if (k > 0 && nbd_aio_notify_read(h) == -1)
				leave = true;
			else if (k > 0 && nbd_handle_gone(h))
				leave = true;
			/* Reading may have moved libnbd on to sending what was
			 * issued meanwhile: output is the I/O thread's. */
			else if (k > 0 && (nbd_aio_get_direction(h) & LIBNBD_AIO_DIRECTION_WRITE))
				nbd_kick(c->wake);
		}
		pthread_rwlock_unlock(&c->hlock);
		pthread_mutex_lock(&n->lock);
		if (leave)
			break;
	}
	if (c->load > 0) { /* op's own, if not done, or others' */
		c->reader = READER_THREAD;
		nbd_kick(c->wake);
	} else {
		c->reader = READER_NONE;
	}
	return op->done;
}

static int nbd_run(struct vol *v, struct nbd_op *op)
{
	struct nbd_vol *n = container_of(v, struct nbd_vol, vol);
	struct nbd_conn *c = NULL;

	pthread_mutex_lock(&n->lock);
	if (n->up)
		for (unsigned i = 0; i < n->nconns; i++) {
			struct nbd_conn *t = &n->conn[i];
			if (t->h && !t->drop && (!c || t->load < c->load))
				c = t;
		}
	if (!c) {
		pthread_mutex_unlock(&n->lock);
		return -EIO; /* away */
	}
	pthread_cond_init(&op->cv, NULL);
	op->c = c;
	op->fail = -EIO;
	op->issuing = true;
	op->deadline = n->timeout_ns ? clock_now_ns() + n->timeout_ns : 0;
	link_add_tail(&c->inflight, &op->link);
	c->load++;
	pthread_mutex_unlock(&n->lock);

	/* Issue it from this thread: libnbd sends it at once when the socket
	 * takes it; the I/O thread is told only when output is left over. */
	int64_t cookie = -1;
	int err = -EIO;
	unsigned dir = 0;
	pthread_rwlock_rdlock(&c->hlock);
	struct nbd_handle *h = c->h; /* NULL: dropped since it was picked */
	if (h) {
		cookie = nbd_op_issue(h, op);
		if (cookie == -1 && !nbd_handle_gone(h)) {
			int e = nbd_get_errno();
			err = e > 0 ? -e : -EIO;
		}
		dir = nbd_aio_get_direction(h);
	}
	pthread_rwlock_unlock(&c->hlock);
	if (h && (cookie == -1 || (dir & LIBNBD_AIO_DIRECTION_WRITE)))
		nbd_kick(c->wake); /* output left, or the handle may be dead */

	pthread_mutex_lock(&n->lock);
	op->issuing = false;
	if (!h)
		nbd_op_done_locked(op, -EIO);
	else if (op->released)
		nbd_op_done_locked(op, cookie == -1 ? err : op->replied ? op->result : op->fail);
	while (!op->done)
		if (!nbd_wait_reading_locked(c, h, op))
			pthread_cond_wait(&op->cv, &n->lock);
	pthread_mutex_unlock(&n->lock);
	pthread_cond_destroy(&op->cv);
	return op->result;
}

static int nbd_member_read(struct vol *v, void *buf, uint64_t len, uint64_t off)
{
	struct nbd_op op = {.kind = OP_READ, .buf = buf, .len = len, .off = off};
	return nbd_run(v, &op);
}

static int nbd_member_write(struct vol *v, const void *buf, uint64_t len, uint64_t off,
                            unsigned flags)
{
	struct nbd_vol *n = container_of(v, struct nbd_vol, vol);
	struct nbd_op op = {.kind = OP_WRITE, .buf = (void *)buf, .len = len, .off = off};

	if (n->ro)
		return -EROFS;
	op.flags = (flags & VOL_FUA) ? LIBNBD_CMD_FLAG_FUA : 0;
	return nbd_run(v, &op);
}

/* With multi-conn, a flush on one connection covers writes completed on
 * all of them (that is what the server promises by advertising it). */
static int nbd_member_flush(struct vol *v)
{
	struct nbd_op op = {.kind = OP_FLUSH};
	return nbd_run(v, &op);
}

static int nbd_member_trim(struct vol *v, uint64_t len, uint64_t off, unsigned flags)
{
	struct nbd_vol *n = container_of(v, struct nbd_vol, vol);
	struct nbd_op op = {.kind = OP_TRIM, .len = len, .off = off};

	if (n->ro)
		return -EROFS;
	op.flags = (flags & VOL_FUA) ? LIBNBD_CMD_FLAG_FUA : 0;
	return nbd_run(v, &op);
}

static int nbd_member_zero(struct vol *v, uint64_t len, uint64_t off, unsigned flags)
{
	struct nbd_vol *n = container_of(v, struct nbd_vol, vol);
	struct nbd_op op = {.kind = OP_ZERO, .len = len, .off = off};

	if (n->ro)
		return -EROFS;
	if (flags & VOL_FUA)
		op.flags |= LIBNBD_CMD_FLAG_FUA;
	if (!(flags & VOL_MAY_TRIM))
		op.flags |= LIBNBD_CMD_FLAG_NO_HOLE;
	if (flags & VOL_FAST_ZERO)
		op.flags |= LIBNBD_CMD_FLAG_FAST_ZERO;
	return nbd_run(v, &op);
}

/* Stop the threads and free n; the handles of a member that never started
 * its threads are closed here.  Bounded: connects and polls end on
 * close_fd, a disconnect waits no longer than the timeout. */
static void nbd_teardown(struct nbd_vol *n)
{
	pthread_mutex_lock(&n->lock);
	n->closing = true;
	for (unsigned i = 0; i < NBD_MEMBER_MAX_CONNS; i++)
		pthread_cond_signal(&n->conn[i].cv);
	pthread_cond_signal(&n->recon_cv);
	pthread_mutex_unlock(&n->lock);
	if (n->close_fd >= 0)
		nbd_kick(n->close_fd);
	for (unsigned i = 0; i < NBD_MEMBER_MAX_CONNS; i++)
		if (n->conn[i].wake >= 0)
			nbd_kick(n->conn[i].wake);
	if (n->recon_started)
		pthread_join(n->recon_thread, NULL);
	for (unsigned i = 0; i < NBD_MEMBER_MAX_CONNS; i++) {
		struct nbd_conn *c = &n->conn[i];
		if (c->thread_started)
			pthread_join(c->thread, NULL);
		else if (c->h)
			nbd_close(c->h);
		if (c->wake >= 0)
			close(c->wake);
		pthread_cond_destroy(&c->cv);
		pthread_rwlock_destroy(&c->hlock);
	}
	if (n->close_fd >= 0)
		close(n->close_fd);
	pthread_cond_destroy(&n->recon_cv);
	pthread_mutex_destroy(&n->lock);
	free(n->uri);
	if (n->vol.ops)
		vol_fini(&n->vol);
	free(n);
}

static void nbd_member_close(struct vol *v)
{
	nbd_teardown(container_of(v, struct nbd_vol, vol));
}

static const struct vol_ops nbd_member_ops = {
    .kind = "nbd",
    .read = nbd_member_read,
    .write = nbd_member_write,
    .flush = nbd_member_flush,
    .trim = nbd_member_trim,
    .write_zeroes = nbd_member_zero,
    .close = nbd_member_close,
};

int nbd_member_status(struct vol *v, struct nbd_member_status *st)
{
	if (v->ops != &nbd_member_ops)
		return -EINVAL;
	struct nbd_vol *n = container_of(v, struct nbd_vol, vol);
	pthread_mutex_lock(&n->lock);
	*st = n->st;
	st->connected = n->up;
	st->connections = 0;
	for (unsigned i = 0; i < n->nconns; i++)
		st->connections += n->conn[i].h != NULL && !n->conn[i].drop;
	pthread_mutex_unlock(&n->lock);
	return 0;
}

static unsigned nbd_caps_of(struct nbd_handle *h, bool ro)
{
	unsigned caps = 0;

	if (nbd_can_flush(h) == 1)
		caps |= VOL_CAP_FLUSH;
	if (nbd_can_fua(h) == 1)
		caps |= VOL_CAP_FUA;
	if (nbd_can_trim(h) == 1)
		caps |= VOL_CAP_TRIM;
	if (nbd_can_zero(h) == 1)
		caps |= VOL_CAP_ZEROES;
	if (nbd_can_fast_zero(h) == 1)
		caps |= VOL_CAP_FAST_ZERO;
	if (nbd_can_multi_conn(h) == 1)
		caps |= VOL_CAP_MULTI_CONN;
	if (ro)
		caps |= VOL_CAP_READONLY;
	return caps;
}

int nbd_member_open(const char *spec, unsigned flags, struct vol **out)
{
	bool ro = flags & MEMBER_READONLY;
	struct nbd_vol *n;
	int r;

	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* nbd_wait_closing_locked() */
	pthread_mutex_init(&n->lock, NULL);
	pthread_cond_init(&n->recon_cv, &ca);
	pthread_condattr_destroy(&ca);
	n->close_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	for (unsigned i = 0; i < NBD_MEMBER_MAX_CONNS; i++) {
		struct nbd_conn *c = &n->conn[i];
		c->n = n;
		c->wake = -1;
		pthread_cond_init(&c->cv, NULL);
		pthread_rwlock_init(&c->hlock, NULL);
		link_init(&c->inflight);
	}
	for (unsigned i = 0; i < NBD_MEMBER_MAX_CONNS; i++)
		n->conn[i].wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	n->ro = ro;
	r = nbd_spec_parse(spec, &n->uri, &n->timeout_ns, &n->reconnect_max_ns);
	if (r < 0)
		goto fail;
	n->tls = strncmp(n->uri, "nbds", 4) == 0;
	for (unsigned i = 0; i < NBD_MEMBER_MAX_CONNS; i++)
		n->conn[i].reader = n->tls ? READER_THREAD : READER_NONE;
	if (n->close_fd < 0) {
		r = -errno;
		goto fail;
	}
	for (unsigned i = 0; i < NBD_MEMBER_MAX_CONNS; i++)
		if (n->conn[i].wake < 0) {
			r = -errno;
			goto fail;
		}
	/* The name until vol_init: the spec as the user gave it. */
	n->vol.name = (char *)spec;
	r = nbd_connect_bounded(n, &n->conn[0].h);
	n->vol.name = NULL;
	if (r < 0)
		goto fail;

	struct nbd_handle *h0 = n->conn[0].h;
	int64_t size = nbd_get_size(h0);
	if (size < 0) {
		r = err_set(-EIO, "%s: %s", spec, nbd_get_error());
		goto fail;
	}
	/* A writable member whose every write would fail is refused now,
	 * not at its first write (which would fail it out of an array). */
	if (!ro && nbd_is_read_only(h0) == 1) {
		r = err_set(-EROFS, "%s: the server exports it read-only (open it with --readonly)",
		            spec);
		goto fail;
	}
	unsigned caps = nbd_caps_of(h0, ro);
	int64_t minb = nbd_get_block_size(h0, LIBNBD_SIZE_MINIMUM);
	int64_t maxb = nbd_get_block_size(h0, LIBNBD_SIZE_MAXIMUM);
	r = vol_init(&n->vol, &nbd_member_ops, spec, (uint64_t)size, minb > 0 ? (uint32_t)minb : 1,
	             caps);
	if (r < 0)
		goto fail;
	if (maxb > 0 && (uint64_t)maxb < n->vol.block_max && maxb >= (int64_t)n->vol.block_min)
		n->vol.block_max = (uint32_t)maxb;
	n->nconns = 1;
	if (caps & VOL_CAP_MULTI_CONN) {
		while (n->nconns < NBD_MEMBER_MAX_CONNS &&
		       nbd_connect_bounded(n, &n->conn[n->nconns].h) == 0)
			n->nconns++; /* fewer connections is fine */
		err_clear();
	}
	n->up = true;
	for (unsigned i = 0; i < n->nconns; i++) {
		struct nbd_conn *c = &n->conn[i];
		r = -pthread_create(&c->thread, NULL, nbd_conn_thread, c);
		if (r < 0)
			goto fail;
		c->thread_started = true;
	}
	r = -pthread_create(&n->recon_thread, NULL, nbd_reconnect_thread, n);
	if (r < 0)
		goto fail;
	n->recon_started = true;
	*out = &n->vol;
	return 0;
fail:
	nbd_teardown(n);
	return r;
}
