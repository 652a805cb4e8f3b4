/* internal.h — what the server's files share: the server and connection
 * structs and the connection's buffered I/O.  Not for use outside src/nbd. */
#ifndef URAID_NBD_INTERNAL_H
#define URAID_NBD_INTERNAL_H

#include "request.h"
#include "server.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define NBD_MAX_LISTEN 4

/* One accepted connection's thread (the accept path's bookkeeping). */
struct nbd_slot {
	struct nbd_slot *next; /* in srv->slots */
	atomic_bool done;      /* the thread has returned; join it */
	pthread_t thread;
	int fd;
	struct nbd_conn *conn;
};

/* Where a connection is, for the two bounds (server.c; phase.c moves a
 * connection from one phase to the next): handshakes
 * (max_handshakes; the oldest unauthenticated one makes room for a new
 * client) and established connections (max_conns). */
enum nbd_phase { NBD_PHASE_HANDSHAKE, NBD_PHASE_ESTABLISHED, NBD_PHASE_EVICTED };

/* Payload buffers of every connection (bufpool.c): at most `budget` bytes
 * held by requests or cached for reuse, a connection's fair share of it
 * guaranteed.  Buffers are mmap'ed so that a freed one leaves the RSS. */
#define NBD_BUF_CLASSES 16 /* 128 KiB << 0..15 */
struct nbd_bufpool {
	pthread_mutex_t lock;
	pthread_cond_t freed;
	uint64_t budget, share;
	uint64_t held;   /* taken by requests */
	uint64_t cached; /* in the free lists */
	struct nbd_buf *free[NBD_BUF_CLASSES];
};

/* The id the one metadata context, base:allocation, gets when selected. */
#define NBD_META_ID_BASE_ALLOCATION 1u

struct nbd_conn;

/* An export as the server keeps it: its own copies of the strings. */
struct nbd_srv_export {
	char *name;        /* never NULL; unique in the server */
	char *description; /* may be NULL */
	struct vol *vol;
	bool readonly;
};

struct nbd_server {
	struct nbd_srv_export *exports;
	unsigned n_exports;
	int default_export; /* what "" selects: an index, or -1 for none */
	unsigned threads;
	unsigned max_conns;      /* established connections */
	unsigned max_handshakes; /* connections still negotiating */
	unsigned hs_timeout_ms;
	unsigned idle_timeout_ms; /* 0: established connections never time out */
	struct nbd_tls *tls; /* credentials, or NULL: no TLS */
	bool tls_required;   /* no option but STARTTLS before TLS is on */

	int lfd[NBD_MAX_LISTEN];
	char *unix_path[NBD_MAX_LISTEN]; /* to unlink, or NULL */
	int n_listen;
	int stop_pipe[2];
	atomic_bool stopping;

	pthread_mutex_t lock;     /* protects conns, slots, the counts, phases */
	pthread_cond_t slot_done; /* a connection thread ended */
	struct nbd_conn *conns; /* every connection being served, newest first */
	struct nbd_slot *slots; /* threads of accepted connections */
	unsigned n_handshake, n_established, n_evicted;

	struct nbd_bufpool pool;
};

/* One client, from the first handshake byte to the last reply. */
struct nbd_conn {
	struct nbd_server *srv;
	struct nbd_conn *next, *prev; /* in srv->conns */
	int rfd, wfd;
	bool wfd_is_socket; /* sendmsg(MSG_NOSIGNAL) rather than writev */
	bool structured;
	bool meta_alloc;    /* base:allocation selected (NBD_CMD_BLOCK_STATUS) */
	/* The export the last SET_META_CONTEXT named: a GO for another one
	 * drops the selection, as the protocol says. */
	const struct nbd_srv_export *meta_export;
	/* The export chosen by GO or EXPORT_NAME: transmission serves its
	 * vol, with its limits, whatever other connections chose. */
	const struct nbd_srv_export *exp;
	void *tls;          /* the GnuTLS session once STARTTLS succeeded (tls.c) */
	uint64_t deadline_ns; /* CLOCK_MONOTONIC; 0: reads do not time out */

	/* Reading: one thread at a time, holding rlock.  Input is buffered so
	 * that a burst of small requests costs one read() rather than one
	 * per header; large payloads bypass the buffer. */
	pthread_mutex_t rlock;
	unsigned char *rbuf;
	size_t rpos, rlen, rcap;

	pthread_mutex_t wlock; /* one reply on the wire at a time */

	/* Payload bytes this connection's requests hold from srv->pool
	 * (under its lock): a client that stops reading replies stalls
	 * itself at its share, not the server. */
	uint64_t payload_in_flight;

	enum nbd_phase phase; /* under srv->lock */
	atomic_bool tls_on;   /* STARTTLS succeeded: the client authenticated */
	atomic_uint busy;     /* requests handed to workers, not yet replied */

	atomic_bool quit;      /* stop reading new requests */
	atomic_bool clean;     /* the client ended with DISC or ABORT */

	struct nbd_export_limits lim;
};

/* Read exactly n bytes.  Returns 0, -ECONNRESET at end of file, -ETIMEDOUT
 * past the deadline, or -errno. */
int nbd_conn_recv(struct nbd_conn *c, void *dst, size_t n);
/* Bytes already read from the client and not yet taken: that many can be
 * received without blocking.  Only for the reader (it holds rlock). */
size_t nbd_conn_buffered(const struct nbd_conn *c);
/* Wait until the next request may be read: 0, or -ETIMEDOUT when nothing
 * came for idle_ms while no request of this connection was in flight. */
int nbd_conn_wait_request(struct nbd_conn *c, unsigned idle_ms);
/* Read and drop n bytes, in pieces (n may be up to 4 GiB). */
int nbd_conn_discard(struct nbd_conn *c, uint64_t n);
/* Write the whole iovec under the write lock (iov is modified). */
int nbd_conn_send(struct nbd_conn *c, struct iovec *iov, int iovcnt);

/* bufpool.c.  Take a buffer of at least n bytes for connection c, waiting
 * while c holds its share or the server its budget (a request alone in the
 * server always gets one).  *cls: what to give back.  NULL: no memory. */
void *nbd_buf_get(struct nbd_conn *c, size_t n, size_t *cls);
void nbd_buf_put(struct nbd_conn *c, void *p, size_t cls);
/* Unmap cached buffers unused for idle_ms (0: all of them). */
void nbd_bufpool_trim(struct nbd_bufpool *p, unsigned idle_ms);
void nbd_bufpool_init(struct nbd_bufpool *p, uint64_t budget, unsigned max_conns);
void nbd_bufpool_destroy(struct nbd_bufpool *p);

/* phase.c.  Under srv->lock: put c on the server's list, in the
 * handshake phase; -ESHUTDOWN when the server is stopping. */
int nbd_conn_register(struct nbd_server *s, struct nbd_conn *c);
/* Take c off the list (takes srv->lock); the last one out trims the pool. */
void nbd_conn_unregister(struct nbd_server *s, struct nbd_conn *c);
/* Before the reply that enters transmission, take an established slot.
 * 0, -EBUSY when every one is taken, or -ECONNRESET when the connection
 * was dropped to make room for a newer one. */
int nbd_conn_establish(struct nbd_conn *c);
/* Under srv->lock: drop the oldest connection still negotiating, one
 * that has not authenticated if there is one. */
void nbd_evict_oldest_handshake(struct nbd_server *s);

/* handshake.c: returns 0 to enter transmission, 1 when the client ended
 * the session during the handshake (NBD_OPT_ABORT), or -errno. */
int nbd_handshake(struct nbd_conn *c);

/* transmit.c: serve requests until the client leaves or the server stops. */
int nbd_transmit(struct nbd_conn *c);

#endif
