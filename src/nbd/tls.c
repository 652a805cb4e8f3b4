/* tls.c — NBD over TLS with GnuTLS (see tls.h).  Only the server side:
 * credentials, the handshake after STARTTLS, and record I/O for conn.c. */
#include "tls.h"

#include "internal.h"

#include "core/log.h"

#include <errno.h>
#include <gnutls/gnutls.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/* GnuTLS's defaults, plus the PSK key exchanges (off by default), the
 * forward-secret ones first. */
#define TLS_PRIORITY_PSK "NORMAL:+ECDHE-PSK:+DHE-PSK:+PSK"
#define TLS_PRIORITY_X509 "NORMAL"

struct nbd_tls {
	gnutls_psk_server_credentials_t psk;
	gnutls_certificate_credentials_t x509;
	gnutls_priority_t prio;
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

int nbd_tls_new(const char *psk_file, const char *cert_dir, struct nbd_tls **out)
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
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	return c->deadline_ns > now ? (unsigned)((c->deadline_ns - now) / 1000000 + 1) : 1;
}

int nbd_tls_start(struct nbd_tls *t, struct nbd_conn *c)
{
	gnutls_session_t s;
	int g;

	g = gnutls_init(&s, GNUTLS_SERVER | GNUTLS_NO_SIGNAL);
	if (g < 0) {
		log_warn("nbd: TLS: %s", gnutls_strerror(g));
		return -ENOMEM;
	}
	if (t->psk)
		g = gnutls_credentials_set(s, GNUTLS_CRD_PSK, t->psk);
	else
		g = gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, t->x509);
	if (g == 0)
		g = gnutls_priority_set(s, t->prio);
	if (g < 0) {
		log_warn("nbd: TLS: %s", gnutls_strerror(g));
		gnutls_deinit(s);
		return -EPROTO;
	}
	gnutls_transport_set_int2(s, c->rfd, c->wfd);
	/* The handshake, too, is bounded by the negotiation's deadline:
	 * GnuTLS's own timer, and a receive timeout on the socket so that
	 * a silent client cannot hold a read forever.  The timeout stays
	 * for the rest of the negotiation (a record cut short would block a
	 * read past the deadline); the server clears it after. */
	unsigned ms = tls_ms_left(c);
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };
	if (c->wfd_is_socket)
		setsockopt(c->rfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	gnutls_handshake_set_timeout(s, ms);
	do {
		g = gnutls_handshake(s);
	} while (g < 0 && !gnutls_error_is_fatal(g) && g != GNUTLS_E_AGAIN);
	if (g < 0) {
		log_warn("nbd: TLS handshake failed: %s", gnutls_strerror(g));
		gnutls_deinit(s);
		return g == GNUTLS_E_AGAIN || g == GNUTLS_E_TIMEDOUT ? -ETIMEDOUT : -EPROTO;
	}
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

ssize_t nbd_tls_send(struct nbd_conn *c, const void *buf, size_t n)
{
	for (;;) {
		ssize_t g = gnutls_record_send(c->tls, buf, n);
		if (g >= 0)
			return g;
		if (g != GNUTLS_E_INTERRUPTED)
			return tls_error(g, "send");
	}
}

bool nbd_tls_pending(const struct nbd_conn *c)
{
	return c->tls && gnutls_record_check_pending(c->tls) > 0;
}
