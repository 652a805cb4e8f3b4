/* tls.h — NBD over TLS (NBD_OPT_STARTTLS) with GnuTLS.
 *
 * The server loads its credentials once: a PSK file in the format nbdkit,
 * qemu and libnbd share ("username:hexkey" lines, as psktool writes them),
 * or an X.509 directory holding server-cert.pem and server-key.pem (the
 * names nbdkit and qemu use), and with peer verification ca-cert.pem, the
 * CA a client's certificate must chain to, and optionally ca-crl.pem, the
 * certificates it revoked.  A connection that sends STARTTLS gets a
 * session of its own, and from then on conn.c reads and writes through it
 * instead of the socket.  One thread reads and one writes at a time
 * (rlock, wlock), which GnuTLS allows on one session. */
#ifndef URAID_NBD_TLS_H
#define URAID_NBD_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

struct nbd_tls;
struct nbd_conn;

/* Credentials from psk_file or cert_dir (one of them).  verify_peer (X.509
 * only; a PSK already authenticates the client) makes every handshake
 * require a client certificate issued by cert_dir/ca-cert.pem and not
 * revoked by cert_dir/ca-crl.pem.  0, or -errno with err_set() detail
 * naming the file. */
int nbd_tls_new(const char *psk_file, const char *cert_dir, bool verify_peer,
		struct nbd_tls **out);
void nbd_tls_free(struct nbd_tls *t);

/* The TLS handshake on c's descriptors, right after the STARTTLS ACK,
 * bounded by c's handshake deadline.  0, or -errno (the reason logged,
 * e.g. a client certificate refused); on failure the connection must end. */
int nbd_tls_start(struct nbd_tls *t, struct nbd_conn *c);
/* Say goodbye (best effort) and drop c's session, if it has one. */
void nbd_tls_end(struct nbd_conn *c);

/* Record I/O on an established session (the descriptors may be pipes).
 * nbd_tls_recv is like read(): bytes moved (> 0); nbd_tls_sendv sends
 * all of iov (a message, or a batch of them; small ones in one write):
 * 0.  Both fail with -ECONNRESET at the end of the stream, -EAGAIN when
 * c's deadline passed (reads) or the socket's send timeout fired
 * (writes), or -EPROTO / -errno. */
ssize_t nbd_tls_recv(struct nbd_conn *c, void *buf, size_t n);
int nbd_tls_sendv(struct nbd_conn *c, const struct iovec *iov, int iovcnt);
/* Input waiting in the session, decrypted or read ahead: the next read
 * starts without the socket (and waits, bounded by the deadline, only
 * if that input ends inside a record). */
bool nbd_tls_pending(const struct nbd_conn *c);

#endif
