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
	bool used;
	atomic_bool done; /* the thread has returned; join it */
	pthread_t thread;
	int fd;
	struct nbd_server *srv;
};

/* The id the one metadata context, base:allocation, gets when selected. */
#define NBD_META_ID_BASE_ALLOCATION 1u

struct nbd_conn;

struct nbd_server {
	struct vol *vol;
	char *export_name; /* never NULL */
	char *description; /* may be NULL */
	unsigned threads;
	unsigned max_conns;
	unsigned hs_timeout_ms;
	struct nbd_tls *tls; /* credentials, or NULL: no TLS */
	bool tls_required;   /* no option but STARTTLS before TLS is on */

	int lfd[NBD_MAX_LISTEN];
	char *unix_path[NBD_MAX_LISTEN]; /* to unlink, or NULL */
	int n_listen;
	int stop_pipe[2];
	atomic_bool stopping;

	pthread_mutex_t lock;  /* protects conns and slots */
	struct nbd_conn *conns; /* every connection being served */
	struct nbd_slot *slots; /* max_conns entries */
};

/* One client, from the first handshake byte to the last reply. */
struct nbd_conn {
	struct nbd_server *srv;
	struct nbd_conn *next, *prev; /* in srv->conns */
	int rfd, wfd;
	bool wfd_is_socket; /* sendmsg(MSG_NOSIGNAL) rather than writev */
	bool structured;
	bool meta_alloc;    /* base:allocation selected (NBD_CMD_BLOCK_STATUS) */
	void *tls;          /* the GnuTLS session once STARTTLS succeeded (tls.c) */
	uint64_t deadline_ns; /* CLOCK_MONOTONIC; 0: reads do not time out */

	/* Reading: one thread at a time, holding rlock.  Input is buffered so
	 * that a burst of small requests costs one read() rather than one
	 * per header; large payloads bypass the buffer. */
	pthread_mutex_t rlock;
	unsigned char *rbuf;
	size_t rpos, rlen, rcap;

	pthread_mutex_t wlock; /* one reply on the wire at a time */

	/* Payload bytes held by requests between reading and their reply.
	 * The reader waits while a new request would exceed the budget, so a
	 * client that stops reading replies stalls itself, not the server's
	 * memory (without it, threads x block_max bytes per connection). */
	pthread_mutex_t budget_lock;
	pthread_cond_t budget_freed;
	uint64_t payload_in_flight;

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
/* Read and drop n bytes, in pieces (n may be up to 4 GiB). */
int nbd_conn_discard(struct nbd_conn *c, uint64_t n);
/* Write the whole iovec under the write lock (iov is modified). */
int nbd_conn_send(struct nbd_conn *c, struct iovec *iov, int iovcnt);

/* handshake.c: returns 0 to enter transmission, 1 when the client ended
 * the session during the handshake (NBD_OPT_ABORT), or -errno. */
int nbd_handshake(struct nbd_conn *c);

/* transmit.c: serve requests until the client leaves or the server stops. */
int nbd_transmit(struct nbd_conn *c);

#endif
