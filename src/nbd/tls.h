/* tls.h — NBD over TLS (NBD_OPT_STARTTLS) with GnuTLS.
 *
 * The server loads its credentials once: a PSK file in the format nbdkit,
 * qemu and libnbd share ("username:hexkey" lines, as psktool writes them),
 * or an X.509 directory holding server-cert.pem and server-key.pem (the
 * names nbdkit and qemu use).  A connection that sends STARTTLS gets a
 * session of its own, and from then on conn.c reads and writes through it
 * instead of the socket.  One thread reads and one writes at a time
 * (rlock, wlock), which GnuTLS allows on one session. */
#ifndef URAID_NBD_TLS_H
#define URAID_NBD_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct nbd_tls;
struct nbd_conn;

/* Credentials from psk_file or cert_dir (one of them).  0, or -errno with
 * err_set() detail naming the file. */
int nbd_tls_new(const char *psk_file, const char *cert_dir, struct nbd_tls **out);
void nbd_tls_free(struct nbd_tls *t);

/* The TLS handshake on c's descriptors, right after the STARTTLS ACK,
 * bounded by c's handshake deadline.  0, or -errno (the reason logged);
 * on failure the connection must end. */
int nbd_tls_start(struct nbd_tls *t, struct nbd_conn *c);
/* Say goodbye (best effort) and drop c's session, if it has one. */
void nbd_tls_end(struct nbd_conn *c);

/* Record I/O on an established session: like read() and write(), bytes
 * moved (> 0), -ECONNRESET at the end of the stream, -EAGAIN when a
 * socket timeout fired, or -EPROTO / -errno. */
ssize_t nbd_tls_recv(struct nbd_conn *c, void *buf, size_t n);
ssize_t nbd_tls_send(struct nbd_conn *c, const void *buf, size_t n);
/* Decrypted bytes waiting in the session: readable without the socket. */
bool nbd_tls_pending(const struct nbd_conn *c);

#endif
