/* server.h — the NBD server: exports one vol (the top of a stack), or
 * several named ones (every volume a probe found), over Unix sockets, TCP,
 * or an already-connected pair of file descriptors.  Each connection picks
 * its export by name during the handshake and keeps to it.
 *
 * Per connection a small pool of worker threads takes turns reading
 * requests (header and write payload) under the connection's read lock and
 * validates them (request.h).  Small requests to a fast vol are served by
 * the reader itself, their replies sent together; the rest are served
 * concurrently by the worker that read them, which hands the read lock on
 * first (transmit.c says why).  Replies go out in completion order.  A
 * client that misbehaves loses its own connection, never the server or
 * another connection. */
#ifndef URAID_NBD_SERVER_H
#define URAID_NBD_SERVER_H

#include "core/vol.h"

#include <stdbool.h>

struct nbd_server_opts {
	/* nbd_server_new()'s one export: its name (selected by "" too; NULL
	 * means "") and NBD_INFO_DESCRIPTION (or NULL). */
	const char *export_name;
	const char *description;
	unsigned threads;             /* workers per connection (default 16) */
	unsigned max_connections;     /* established connections (default 16) */
	/* Connections still negotiating (default 64): when full, the oldest
	 * one that has not authenticated (TLS) is dropped for a new client,
	 * so handshaking sockets never keep a well-behaved client out. */
	unsigned max_handshakes;
	unsigned handshake_timeout_ms; /* default 10000; the whole handshake */
	unsigned idle_timeout_ms;     /* close an established connection with
				       * no request for that long; 0: never */
	/* Payload buffers of all connections together (default 256 MiB);
	 * each connection is sure of max_buffer_memory / max_connections
	 * of it, a request alone in the server gets one of any size. */
	uint64_t max_buffer_memory;
	/* TLS (NBD_OPT_STARTTLS): off, offered, or required before any other
	 * option.  Credentials: a PSK file ("username:hexkey" lines) or a
	 * directory with server-cert.pem and server-key.pem. */
	enum nbd_tls_mode { NBD_TLS_OFF, NBD_TLS_ON, NBD_TLS_REQUIRE } tls;
	const char *tls_psk_file;
	const char *tls_cert_dir;
	/* X.509: require a client certificate issued by tls_cert_dir's
	 * ca-cert.pem (and not in its ca-crl.pem, if any).  No effect with
	 * a PSK, whose key already authenticates the client (as in nbdkit). */
	bool tls_verify_peer;
};

struct nbd_server;

/* Create a server for vol (not owned: the caller flushes and closes it
 * after nbd_server_free()): one export, named o->export_name, which the
 * empty name also selects.  Returns 0 or -errno. */
int nbd_server_new(struct vol *vol, const struct nbd_server_opts *o,
		   struct nbd_server **out);

/* One export of several (nbd_server_new_multi). */
struct nbd_export {
	const char *name;        /* unique; "" allowed */
	const char *description; /* NBD_INFO_DESCRIPTION, or NULL */
	struct vol *vol;         /* not owned */
	/* Advertise NBD_FLAG_READ_ONLY and refuse writes even if the vol could. */
	bool readonly;
};
/* Serve exports[0..n) (copied; vols not owned).  The name "" (and
 * NBD_OPT_EXPORT_NAME / GO with an empty name) means the default export:
 * the one named "" if any, else default_export (index) when >= 0, else
 * refused with NBD_REP_ERR_UNKNOWN and a message listing how to see the
 * names.  Any other name must match an export's exactly.  o->export_name
 * and o->description are not used here.  Returns 0, -EINVAL (with
 * err_set() detail) for no exports, a name used twice or longer than the
 * protocol's 4096 bytes, or a default_export past the end; or -ENOMEM. */
int nbd_server_new_multi(const struct nbd_export *exports, unsigned n, int default_export,
                         const struct nbd_server_opts *o, struct nbd_server **out);

/* Listen on a Unix socket at path (removed again by nbd_server_free()), or
 * on TCP addr:port (port 0 picks a free port; *bound_port tells which).
 * Return 0 or -errno with err_set() detail. */
int nbd_server_listen_unix(struct nbd_server *s, const char *path);
int nbd_server_listen_tcp(struct nbd_server *s, const char *addr, int port,
			  int *bound_port);

/* Serve on a socket that is already bound (systemd socket activation). */
int nbd_server_listen_fd(struct nbd_server *s, int fd);

/* Accept and serve connections until nbd_server_stop(); then stop
 * accepting, let every connection finish the requests it has read, and
 * return once all connections have ended.  Returns 0 or -errno. */
int nbd_server_run(struct nbd_server *s);

/* Connections being served now (handshake or transmission, or dropped
 * and not yet ended). */
unsigned nbd_server_connections(struct nbd_server *s);

/* Ask nbd_server_run() to return.  Async-signal-safe. */
void nbd_server_stop(struct nbd_server *s);

/* Serve one already-connected client synchronously: handshake, then
 * transmission until the client disconnects (or the server stops).  rfd
 * and wfd may be one socket, or two descriptors (stdin/stdout, a pipe and
 * /dev/null for a fuzzer: writes to non-sockets use write()).  The
 * descriptors are not closed.  Returns 0 when the client ended cleanly
 * (NBD_CMD_DISC or NBD_OPT_ABORT), -errno otherwise. */
int nbd_serve_connection(struct nbd_server *s, int rfd, int wfd);

/* Free the server (after nbd_server_run() returned, or if it never ran):
 * close the listening sockets and remove the Unix socket files. */
void nbd_server_free(struct nbd_server *s);

#endif
