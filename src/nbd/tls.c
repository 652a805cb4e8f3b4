/* tls.c — NBD over TLS with GnuTLS (see tls.h).  Only the server side:
 * credentials, the handshake after STARTTLS, and record I/O for conn.c. */
#include "tls.h"

#include "internal.h"

#include "core/clock.h"
#include "core/log.h"

#include <errno.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/* Messages up to this size are corked: sent as one run of records in one
 * write rather than a record and a write per piece (GnuTLS copies corked
 * data, so larger ones go straight). */
#define TLS_CORK_MAX (1u << 20)

/* Input read ahead per session (see struct tls_io). */
#define TLS_READ_AHEAD (64u << 10)

/* GnuTLS's defaults, plus the PSK key exchanges (off by default), the
 * forward-secret ones first. */
#define TLS_PRIORITY_PSK "NORMAL:+ECDHE-PSK:+DHE-PSK:+PSK"
#define TLS_PRIORITY_X509 "NORMAL"

struct nbd_tls {
	gnutls_psk_server_credentials_t psk;
	gnutls_certificate_credentials_t x509;
	gnutls_priority_t prio;
	bool verify_peer; /* X.509: a client certificate from our CA, or no session */
};

void nbd_tls_free(struct nbd_tls *t)
{
	if (!t)
		return;
	if (t->psk)
		gnutls_psk_free_server_credentials(t->psk);
	if (t->x509)
		gnutls_certificate_free_credentials(t->x509);
	if (t->prio)
		gnutls_priority_deinit(t->prio);
	free(t);
}

static int tls_readable(const char *path)
{
	int r = access(path, R_OK) == 0 ? 0 : -errno;
	return r < 0 ? err_set(r, "%s: %s", path, strerror(-r)) : 0;
}

/* GnuTLS reads a PSK file only when a client names a user, so a broken
 * one would go unnoticed until then: check its lines here, each
 * "username:hexkey" (an even number of hex digits), at least one. */
static int tls_check_psk_file(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	unsigned n = 0, lineno = 0;
	int r = 0;

	if (!f)
		return err_set(-errno, "%s: %s", path, strerror(errno));
	while (r == 0 && fgets(line, sizeof(line), f)) {
		size_t len = strcspn(line, "\r\n");
		char *colon = memchr(line, ':', len);
		size_t hex = colon ? len - (size_t)(colon + 1 - line) : 0;

		lineno++;
		if (len == 0)
			continue;
		bool ok = colon && colon > line && hex > 0 && hex % 2 == 0 &&
			  strspn(colon + 1, "0123456789abcdefABCDEF") >= hex;
		if (!ok)
			r = err_set(-EINVAL, "%s: line %u is not username:hexkey", path, lineno);
		n++;
	}
	fclose(f);
	if (r == 0 && n == 0)
		r = err_set(-EINVAL, "%s: no keys", path);
	return r;
}

/* The CA that client certificates must chain to, and the certificates
 * it revoked if DIR/ca-crl.pem exists (optional, as in nbdkit and qemu). */
static int tls_load_ca(struct nbd_tls *t, const char *cert_dir)
{
	char ca[4096], crl[4096];
	int g;

	snprintf(ca, sizeof(ca), "%s/ca-cert.pem", cert_dir);
	snprintf(crl, sizeof(crl), "%s/ca-crl.pem", cert_dir);
	if (access(ca, R_OK) != 0)
		return err_set(-errno, "%s (the CA that client certificates must chain to): %s", ca,
			       strerror(errno));
	g = gnutls_certificate_set_x509_trust_file(t->x509, ca, GNUTLS_X509_FMT_PEM);
	if (g <= 0)
		return err_set(-EINVAL, "%s: %s", ca,
			       g < 0 ? gnutls_strerror(g) : "no certificate in it");
	if (access(crl, F_OK) != 0)
		return 0;
	int r = tls_readable(crl);
	if (r < 0)
		return r;
	g = gnutls_certificate_set_x509_crl_file(t->x509, crl, GNUTLS_X509_FMT_PEM);
	if (g < 0)
		return err_set(-EINVAL, "%s: %s", crl, gnutls_strerror(g));
	return 0;
}

int nbd_tls_new(const char *psk_file, const char *cert_dir, bool verify_peer, struct nbd_tls **out)
{
	struct nbd_tls *t = calloc(1, sizeof(*t));
	char cert[4096], key[4096];
	int g, r;

	if (!t)
		return -ENOMEM;
	if (psk_file) {
		r = tls_check_psk_file(psk_file);
		if (r < 0)
			goto fail;
		g = gnutls_psk_allocate_server_credentials(&t->psk);
		if (g == 0)
			g = gnutls_psk_set_server_credentials_file(t->psk, psk_file);
		if (g < 0) {
			r = err_set(-EINVAL, "%s: not a PSK file (username:hexkey lines): %s", psk_file,
				    gnutls_strerror(g));
			goto fail;
		}
	} else {
		snprintf(cert, sizeof(cert), "%s/server-cert.pem", cert_dir);
		snprintf(key, sizeof(key), "%s/server-key.pem", cert_dir);
		if ((r = tls_readable(cert)) < 0 || (r = tls_readable(key)) < 0)
			goto fail;
		g = gnutls_certificate_allocate_credentials(&t->x509);
		if (g == 0)
			g = gnutls_certificate_set_x509_key_file(t->x509, cert, key,
								 GNUTLS_X509_FMT_PEM);
		if (g < 0) {
			r = err_set(-EINVAL, "%s: server-cert.pem and server-key.pem: %s", cert_dir,
				    gnutls_strerror(g));
			goto fail;
		}
		t->verify_peer = verify_peer;
		if (verify_peer && (r = tls_load_ca(t, cert_dir)) < 0)
			goto fail;
	}
	g = gnutls_priority_init(&t->prio, psk_file ? TLS_PRIORITY_PSK : TLS_PRIORITY_X509, NULL);
	if (g < 0) {
		r = err_set(-EINVAL, "TLS priorities: %s", gnutls_strerror(g));
		goto fail;
	}
	*out = t;
	return 0;
fail:
	nbd_tls_free(t);
	return r;
}

/* Time left before c's handshake deadline, in ms (at least 1). */
static unsigned tls_ms_left(const struct nbd_conn *c)
{
	uint64_t now = clock_now_ns();
	return c->deadline_ns > now ? (unsigned)((c->deadline_ns - now) / 1000000 + 1) : 1;
}

/* The session's transport: c's descriptors, read and written here
 * rather than by GnuTLS's own functions, which use recv() and sendmsg()
 * and so fail on pipes (--stdio).  A read takes whatever the client has
 * sent, up to TLS_READ_AHEAD, and GnuTLS's reads (a record's header, then
 * its body) are served from that: one read() for a burst of small
 * records rather than two per record.  Only the reader (or the
 * handshake) pulls. */
struct tls_io {
	struct nbd_conn *c;
	size_t pos, len; /* raw[pos..len) not yet pulled */
	unsigned char raw[TLS_READ_AHEAD];
};

/* During the negotiation a read waits for input only until c's deadline,
 * then fails with EAGAIN, so that a client stopping in the middle of a
 * record cannot hold the connection past it (GnuTLS reports
 * GNUTLS_E_AGAIN; conn.c makes it -ETIMEDOUT). */
static ssize_t tls_read(struct nbd_conn *c, void *buf, size_t n)
{
	struct pollfd pfd = { .fd = c->rfd, .events = POLLIN };

	for (;;) {
		if (c->deadline_ns) {
			int r = poll(&pfd, 1, (int)tls_ms_left(c) - 1);
			if (r == 0)
				errno = EAGAIN;
			if (r == 0 || (r < 0 && errno != EINTR))
				return -1;
			if (r < 0)
				continue;
		}
		ssize_t got = read(c->rfd, buf, n);
		if (got >= 0 || (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK))
			return got;
		/* A non-blocking descriptor (an inherited stdin) with nothing
		 * yet: wait for input rather than spin (during the negotiation
		 * the poll above waits). */
		if (errno != EINTR && !c->deadline_ns)
			poll(&pfd, 1, -1);
	}
}

static ssize_t tls_pull(gnutls_transport_ptr_t p, void *buf, size_t n)
{
	struct tls_io *io = p;

	if (io->pos == io->len) {
		ssize_t got = tls_read(io->c, io->raw, sizeof(io->raw));
		if (got <= 0)
			return got;
		io->pos = 0;
		io->len = (size_t)got;
	}
	size_t k = io->len - io->pos < n ? io->len - io->pos : n;
	memcpy(buf, io->raw + io->pos, k);
	io->pos += k;
	return (ssize_t)k;
}

/* Records out; on a socket without SIGPIPE.  During the negotiation the
 * socket's send timeout (server.c) makes this fail with EAGAIN. */
static ssize_t tls_push(gnutls_transport_ptr_t p, const giovec_t *iov, int n)
{
	struct nbd_conn *c = ((struct tls_io *)p)->c;

	for (;;) {
		ssize_t put;
		if (c->wfd_is_socket) {
			struct msghdr m = { .msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)n };
			put = sendmsg(c->wfd, &m, MSG_NOSIGNAL);
		} else {
			put = writev(c->wfd, iov, n);
		}
		if (put >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK) || c->deadline_ns)
			return put;
		/* A non-blocking descriptor (an inherited stdout) is full. */
		struct pollfd pfd = { .fd = c->wfd, .events = POLLOUT };
		poll(&pfd, 1, -1);
	}
}

/* For GnuTLS's handshake timer: > 0 when c has input within ms. */
static int tls_pull_timeout(gnutls_transport_ptr_t p, unsigned ms)
{
	struct tls_io *io = p;
	struct pollfd pfd = { .fd = io->c->rfd, .events = POLLIN };

	if (io->pos < io->len)
		return 1;
	return poll(&pfd, 1, ms == GNUTLS_INDEFINITE_TIMEOUT ? -1 : (int)ms);
}

/* Why a handshake failed, for the log: with --tls-verify-peer, what was
 * wrong with the client's certificate. */
static void tls_log_failure(gnutls_session_t s, int g)
{
	gnutls_datum_t why = { 0 };

	if (g == GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR &&
	    gnutls_certificate_verification_status_print(gnutls_session_get_verify_cert_status(s),
							  GNUTLS_CRT_X509, &why, 0) == 0) {
		char *text = (char *)why.data;
		size_t n = strlen(text);
		while (n > 0 && text[n - 1] == ' ')
			text[--n] = '\0';
		log_warn("nbd: TLS handshake failed: client certificate refused: %s", text);
		gnutls_free(why.data);
	} else if (g == GNUTLS_E_NO_CERTIFICATE_FOUND || g == GNUTLS_E_CERTIFICATE_REQUIRED) {
		/* A client picks its certificate by the CAs the server names:
		 * one issued by another CA is not even sent. */
		log_warn("nbd: TLS handshake failed: the client presented no certificate "
			 "issued by ca-cert.pem (--tls-verify-peer)");
	} else {
		log_warn("nbd: TLS handshake failed: %s", gnutls_strerror(g));
	}
}

/* Who got in with a verified certificate: its subject, for the log. */
static void tls_log_peer(gnutls_session_t s)
{
	unsigned n = 0;
	const gnutls_datum_t *certs = gnutls_certificate_get_peers(s, &n);
	gnutls_x509_crt_t crt;
	gnutls_datum_t dn = { 0 };

	if (!certs || n == 0 || gnutls_x509_crt_init(&crt) < 0)
		return;
	if (gnutls_x509_crt_import(crt, &certs[0], GNUTLS_X509_FMT_DER) == 0 &&
	    gnutls_x509_crt_get_dn3(crt, &dn, 0) == 0) {
		log_info("nbd: TLS client certificate verified: %s", (const char *)dn.data);
		gnutls_free(dn.data);
	}
	gnutls_x509_crt_deinit(crt);
}

int nbd_tls_start(struct nbd_tls *t, struct nbd_conn *c)
{
	struct tls_io *io = malloc(sizeof(*io));
	gnutls_session_t s;
	int g;

	if (!io)
		return -ENOMEM;
	*io = (struct tls_io){ .c = c };
	g = gnutls_init(&s, GNUTLS_SERVER | GNUTLS_NO_SIGNAL);
	if (g < 0) {
		log_warn("nbd: TLS: %s", gnutls_strerror(g));
		free(io);
		return -ENOMEM;
	}
	if (t->psk)
		g = gnutls_credentials_set(s, GNUTLS_CRD_PSK, t->psk);
	else
		g = gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, t->x509);
	if (g == 0)
		g = gnutls_priority_set(s, t->prio);
	if (g == 0 && t->verify_peer) {
		/* The handshake itself checks the chain (no host name: a
		 * client's certificate names a client, not an address). */
		gnutls_certificate_server_set_request(s, GNUTLS_CERT_REQUIRE);
		gnutls_session_set_verify_cert(s, NULL, 0);
	}
	if (g < 0) {
		log_warn("nbd: TLS: %s", gnutls_strerror(g));
		gnutls_deinit(s);
		free(io);
		return -EPROTO;
	}
	gnutls_transport_set_ptr(s, io);
	gnutls_transport_set_pull_function(s, tls_pull);
	gnutls_transport_set_pull_timeout_function(s, tls_pull_timeout);
	gnutls_transport_set_vec_push_function(s, tls_push);
	/* The handshake, too, is bounded by the negotiation's deadline:
	 * GnuTLS's own timer, and tls_pull's. */
	gnutls_handshake_set_timeout(s, tls_ms_left(c));
	do {
		g = gnutls_handshake(s);
	} while (g < 0 && !gnutls_error_is_fatal(g) && g != GNUTLS_E_AGAIN);
	if (g < 0) {
		tls_log_failure(s, g);
		gnutls_deinit(s);
		free(io);
		return g == GNUTLS_E_AGAIN || g == GNUTLS_E_TIMEDOUT ? -ETIMEDOUT : -EPROTO;
	}
	if (t->verify_peer)
		tls_log_peer(s);
	c->tls = s;
	return 0;
}

void nbd_tls_end(struct nbd_conn *c)
{
	if (!c->tls)
		return;
	/* close_notify, unless the client stopped reading: then give up
	 * after a second rather than block the connection's end. */
	struct timeval tv = { .tv_sec = 1 };
	if (c->wfd_is_socket)
		setsockopt(c->wfd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	gnutls_bye(c->tls, GNUTLS_SHUT_WR);
	free(gnutls_transport_get_ptr(c->tls));
	gnutls_deinit(c->tls);
	c->tls = NULL;
}

static ssize_t tls_error(ssize_t g, const char *what)
{
	if (g == GNUTLS_E_PREMATURE_TERMINATION)
		return -ECONNRESET;
	if (g == GNUTLS_E_AGAIN)
		return -EAGAIN;
	log_debug("nbd: TLS %s: %s", what, gnutls_strerror((int)g));
	return -EPROTO;
}

ssize_t nbd_tls_recv(struct nbd_conn *c, void *buf, size_t n)
{
	for (;;) {
		ssize_t g = gnutls_record_recv(c->tls, buf, n);
		if (g > 0)
			return g;
		if (g == 0)
			return -ECONNRESET; /* the client said goodbye */
		if (g != GNUTLS_E_INTERRUPTED)
			return tls_error(g, "receive");
	}
}

int nbd_tls_sendv(struct nbd_conn *c, const struct iovec *iov, int iovcnt)
{
	size_t total = 0;
	ssize_t g = 0;

	for (int i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	bool cork = iovcnt > 1 && total <= TLS_CORK_MAX;
	if (cork)
		gnutls_record_cork(c->tls);
	for (int i = 0; i < iovcnt; i++) {
		const char *p = iov[i].iov_base;
		size_t left = iov[i].iov_len;
		while (left > 0) {
			g = gnutls_record_send(c->tls, p, left);
			if (g == GNUTLS_E_INTERRUPTED)
				continue;
			if (g < 0)
				goto out;
			p += g;
			left -= (size_t)g;
		}
	}
out:
	if (cork) {
		/* Corked, a send only queues; the records go out here (after
		 * an error, one try: the connection is ending anyway). */
		ssize_t u;
		do {
			u = gnutls_record_uncork(c->tls, g < 0 ? 0 : GNUTLS_RECORD_WAIT);
		} while (u == GNUTLS_E_INTERRUPTED && g >= 0);
		if (g >= 0 && u < 0)
			g = u;
	}
	return g < 0 ? (int)tls_error(g, "send") : 0;
}

bool nbd_tls_pending(const struct nbd_conn *c)
{
	if (!c->tls)
		return false;
	const struct tls_io *io = gnutls_transport_get_ptr(c->tls);
	return gnutls_record_check_pending(c->tls) > 0 || io->pos < io->len;
}
