/* handshake.c — the fixed-newstyle negotiation: greeting, client flags,
 * then options until the client picks an export by name (NBD_OPT_GO or
 * NBD_OPT_EXPORT_NAME) or gives up (NBD_OPT_ABORT).  Every option's
 * declared length is consumed, whatever the option, so the stream stays in
 * step; option data larger than NBD_MAX_OPTION is discarded in pieces and
 * never buffered.  The export chosen is the connection's (c->exp): what
 * the handshake advertised for it is what transmission enforces. */
#include "internal.h"
#include "tls.h"

#include "core/log.h"
#include "proto.h"

#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int send_opt_reply(struct nbd_conn *c, uint32_t opt, uint32_t type,
			  const void *data, uint32_t len)
{
	struct nbd_option_reply h = {
		.magic = htobe64(NBD_REP_MAGIC),
		.option = htobe32(opt),
		.type = htobe32(type),
		.len = htobe32(len),
	};
	struct iovec iov[2] = {
		{ .iov_base = &h, .iov_len = sizeof(h) },
		{ .iov_base = (void *)data, .iov_len = len },
	};
	return nbd_conn_send(c, iov, len ? 2 : 1);
}

/* Name + something else in one reply (NBD_REP_SERVER, NBD_INFO_NAME ...). */
static int send_opt_reply2(struct nbd_conn *c, uint32_t opt, uint32_t type,
			   const void *a, uint32_t alen, const void *b,
			   uint32_t blen)
{
	struct nbd_option_reply h = {
		.magic = htobe64(NBD_REP_MAGIC),
		.option = htobe32(opt),
		.type = htobe32(type),
		.len = htobe32(alen + blen),
	};
	struct iovec iov[3] = {
		{ .iov_base = &h, .iov_len = sizeof(h) },
		{ .iov_base = (void *)a, .iov_len = alen },
		{ .iov_base = (void *)b, .iov_len = blen },
	};
	return nbd_conn_send(c, iov, 3);
}

/* The export a client names: by exact name, or for the empty name the
 * default one.  NULL when there is none. */
static const struct nbd_srv_export *export_find(const struct nbd_server *s, const void *name,
                                                uint32_t len)
{
	if (len == 0)
		return s->default_export >= 0 ? &s->exports[s->default_export] : NULL;
	for (unsigned i = 0; i < s->n_exports; i++) {
		const char *n = s->exports[i].name;
		if (strlen(n) == len && memcmp(n, name, len) == 0)
			return &s->exports[i];
	}
	return NULL;
}

/* NBD_REP_ERR_UNKNOWN, with a message for the user naming what was asked
 * for (cut short, bytes other than printable ASCII shown as '?', so that
 * the message is valid UTF-8 whatever the client sent). */
static int refuse_unknown(struct nbd_conn *c, uint32_t opt, const unsigned char *name, uint32_t len)
{
	static const char how[] = "NBD_OPT_LIST shows the names, as nbdinfo --list does";
	char shown[128], msg[sizeof(shown) + sizeof(how) + 64];
	uint32_t n = len < sizeof(shown) - 4 ? len : (uint32_t)sizeof(shown) - 4;
	int m;

	for (uint32_t i = 0; i < n; i++)
		shown[i] = name[i] >= 0x20 && name[i] < 0x7f ? (char)name[i] : '?';
	strcpy(shown + n, n < len ? "..." : "");
	if (len == 0)
		m = snprintf(msg, sizeof(msg), "no default export: name one (%s)", how);
	else
		m = snprintf(msg, sizeof(msg), "unknown export \"%s\" (%s)", shown, how);
	if (m < 0 || (size_t)m >= sizeof(msg))
		m = 0; /* cannot happen: the parts are bounded */
	log_debug("nbd: %s", msg);
	return send_opt_reply(c, opt, NBD_REP_ERR_UNKNOWN, msg, (uint32_t)m);
}

/* The block sizes to advertise; the protocol wants min a power of two up
 * to 64 KiB, pref a power of two >= min, max a multiple of min. */
static void block_sizes(const struct vol *v, uint32_t *min, uint32_t *pref,
			uint32_t *max)
{
	*min = v->block_min ? v->block_min : 1;
	*pref = v->block_pref > *min ? v->block_pref : *min;
	if (*pref < 512)
		*pref = 512;
	*max = v->block_max - v->block_max % *min;
}

static int send_info_replies(struct nbd_conn *c, uint32_t opt, const struct nbd_srv_export *e,
                             const unsigned char *reqs, uint16_t nreq)
{
	const struct vol *v = e->vol;
	bool want_name = false, want_desc = false;
	uint32_t bmin, bpref, bmax;
	int r;

	for (uint16_t i = 0; i < nreq; i++) {
		uint16_t t = (uint16_t)(reqs[2 * i] << 8 | reqs[2 * i + 1]);
		if (t == NBD_INFO_NAME)
			want_name = true;
		else if (t == NBD_INFO_DESCRIPTION)
			want_desc = true;
	}
	struct nbd_info_export ie = {
	    .type = htobe16(NBD_INFO_EXPORT),
	    .size = htobe64(v->size),
	    .tflags = htobe16(nbd_export_tflags(v, e->readonly)),
	};
	r = send_opt_reply(c, opt, NBD_REP_INFO, &ie, sizeof(ie));
	if (r < 0)
		return r;
	/* Sent unasked too: the protocol allows it, and a client that did not
	 * ask may still honour the minimum. */
	block_sizes(v, &bmin, &bpref, &bmax);
	struct nbd_info_block_size ib = {
		.type = htobe16(NBD_INFO_BLOCK_SIZE),
		.min = htobe32(bmin),
		.pref = htobe32(bpref),
		.max = htobe32(bmax),
	};
	r = send_opt_reply(c, opt, NBD_REP_INFO, &ib, sizeof(ib));
	if (r < 0)
		return r;
	if (want_name) {
		uint16_t t = htobe16(NBD_INFO_NAME);
		r = send_opt_reply2(c, opt, NBD_REP_INFO, &t, 2, e->name,
		                    (uint32_t)strlen(e->name));
		if (r < 0)
			return r;
	}
	if (want_desc && e->description) {
		uint16_t t = htobe16(NBD_INFO_DESCRIPTION);
		r = send_opt_reply2(c, opt, NBD_REP_INFO, &t, 2, e->description,
		                    (uint32_t)strlen(e->description));
		if (r < 0)
			return r;
	}
	return send_opt_reply(c, opt, NBD_REP_ACK, NULL, 0);
}

/* The client enters transmission with export e.  A metadata context
 * selected for another export does not carry over (the protocol ties it
 * to the export the last SET_META_CONTEXT named). */
static void enter_export(struct nbd_conn *c, const struct nbd_srv_export *e)
{
	c->exp = e;
	if (c->meta_export != e)
		c->meta_alloc = false;
}

/* NBD_OPT_INFO and NBD_OPT_GO: data is u32 name length, name, u16 count,
 * count u16 info types.  Returns 1 when GO succeeded, 0 to continue. */
static int opt_info_go(struct nbd_conn *c, uint32_t opt,
		       const unsigned char *d, uint32_t len)
{
	uint32_t nlen;
	uint16_t nreq;

	if (len < 6)
		return send_opt_reply(c, opt, NBD_REP_ERR_INVALID, NULL, 0);
	memcpy(&nlen, d, 4);
	nlen = be32toh(nlen);
	if (nlen > NBD_MAX_NAME || (uint64_t)nlen + 6 > len)
		return send_opt_reply(c, opt, NBD_REP_ERR_INVALID, NULL, 0);
	memcpy(&nreq, d + 4 + nlen, 2);
	nreq = be16toh(nreq);
	if ((uint64_t)4 + nlen + 2 + 2ull * nreq != len)
		return send_opt_reply(c, opt, NBD_REP_ERR_INVALID, NULL, 0);
	const struct nbd_srv_export *e = export_find(c->srv, d + 4, nlen);
	if (!e)
		return refuse_unknown(c, opt, d + 4, nlen);
	int r = opt == NBD_OPT_GO ? nbd_conn_establish(c) : 0;
	if (r == -EBUSY) /* every established slot taken: the client may retry */
		return send_opt_reply(c, opt, NBD_REP_ERR_POLICY, NULL, 0);
	if (r < 0)
		return r;
	r = send_info_replies(c, opt, e, d + 4 + nlen + 2, nreq);
	if (r < 0)
		return r;
	if (opt != NBD_OPT_GO)
		return 0;
	enter_export(c, e);
	return 1;
}

static int opt_export_name(struct nbd_conn *c, const unsigned char *name,
			   uint32_t len, bool no_zeroes)
{
	static const unsigned char zeroes[124];
	const struct nbd_srv_export *e = export_find(c->srv, name, len);

	/* No way to report an error here: the protocol says close. */
	if (!e) {
		log_debug("nbd: NBD_OPT_EXPORT_NAME for an unknown export, closing");
		return -ENOENT;
	}
	int r = nbd_conn_establish(c);
	if (r < 0)
		return r;
	struct nbd_export_name_reply rep = {
	    .size = htobe64(e->vol->size),
	    .tflags = htobe16(nbd_export_tflags(e->vol, e->readonly)),
	};
	struct iovec iov[2] = {
		{ .iov_base = &rep, .iov_len = sizeof(rep) },
		{ .iov_base = (void *)zeroes, .iov_len = sizeof(zeroes) },
	};
	r = nbd_conn_send(c, iov, no_zeroes ? 1 : 2);
	if (r < 0)
		return r;
	enter_export(c, e);
	return 1;
}

/* One NBD_REP_SERVER per export: u32 name length, the name, then its
 * description (text for people, which the protocol allows there). */
static int opt_list(struct nbd_conn *c)
{
	const struct nbd_server *s = c->srv;

	for (unsigned i = 0; i < s->n_exports; i++) {
		const struct nbd_srv_export *e = &s->exports[i];
		uint32_t nlen = (uint32_t)strlen(e->name);
		uint32_t dlen = e->description ? (uint32_t)strlen(e->description) : 0;
		uint32_t be = htobe32(nlen);
		struct nbd_option_reply h = {
		    .magic = htobe64(NBD_REP_MAGIC),
		    .option = htobe32(NBD_OPT_LIST),
		    .type = htobe32(NBD_REP_SERVER),
		    .len = htobe32(4 + nlen + dlen),
		};
		struct iovec iov[4] = {
		    {.iov_base = &h, .iov_len = sizeof(h)},
		    {.iov_base = &be, .iov_len = 4},
		    {.iov_base = e->name, .iov_len = nlen},
		    {.iov_base = e->description, .iov_len = dlen},
		};
		int r = nbd_conn_send(c, iov, 4);
		if (r < 0)
			return r;
	}
	return send_opt_reply(c, NBD_OPT_LIST, NBD_REP_ACK, NULL, 0);
}

static uint32_t get_be32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return be32toh(v);
}

/* Whether a query names base:allocation: exactly, or (listing only) as
 * the whole base namespace, "base:". */
static bool meta_query_matches(const unsigned char *q, uint32_t len, bool listing)
{
	static const char name[] = NBD_META_BASE_ALLOCATION;

	if (len == sizeof(name) - 1 && memcmp(q, name, len) == 0)
		return true;
	return listing && len == 5 && memcmp(q, "base:", 5) == 0;
}

/* NBD_OPT_LIST_META_CONTEXT and NBD_OPT_SET_META_CONTEXT: u32 name length,
 * name, u32 query count, then queries of u32 length and string.  The one
 * context is base:allocation; listing with no query lists it, setting
 * with no query selects nothing.  A SET replaces the selection even when
 * it fails, as the protocol says. */
static int opt_meta_context(struct nbd_conn *c, uint32_t opt, const unsigned char *d,
			    uint32_t len)
{
	bool listing = opt == NBD_OPT_LIST_META_CONTEXT, found = false;
	uint32_t nlen, nq, pos;
	int r;

	if (!listing)
		c->meta_alloc = false;
	if (!c->structured || len < 8)
		return send_opt_reply(c, opt, NBD_REP_ERR_INVALID, NULL, 0);
	nlen = get_be32(d);
	if (nlen > NBD_MAX_NAME || (uint64_t)nlen + 8 > len)
		return send_opt_reply(c, opt, NBD_REP_ERR_INVALID, NULL, 0);
	nq = get_be32(d + 4 + nlen);
	pos = 8 + nlen;
	for (uint32_t i = 0; i < nq; i++) {
		if (len - pos < 4)
			return send_opt_reply(c, opt, NBD_REP_ERR_INVALID, NULL, 0);
		uint32_t qlen = get_be32(d + pos);
		pos += 4;
		if (qlen > len - pos || qlen > NBD_MAX_NAME)
			return send_opt_reply(c, opt, NBD_REP_ERR_INVALID, NULL, 0);
		found |= meta_query_matches(d + pos, qlen, listing);
		pos += qlen;
	}
	if (pos != len)
		return send_opt_reply(c, opt, NBD_REP_ERR_INVALID, NULL, 0);
	const struct nbd_srv_export *e = export_find(c->srv, d + 4, nlen);
	if (!e)
		return refuse_unknown(c, opt, d + 4, nlen);
	if (listing && nq == 0)
		found = true;
	if (found) {
		/* Listing replies carry id 0 (reserved there). */
		uint32_t id = htobe32(listing ? 0 : NBD_META_ID_BASE_ALLOCATION);
		r = send_opt_reply2(c, opt, NBD_REP_META_CONTEXT, &id, 4, NBD_META_BASE_ALLOCATION,
				    (uint32_t)strlen(NBD_META_BASE_ALLOCATION));
		if (r < 0)
			return r;
	}
	if (!listing) {
		c->meta_alloc = found;
		c->meta_export = e;
	}
	return send_opt_reply(c, opt, NBD_REP_ACK, NULL, 0);
}

/* NBD_OPT_STARTTLS (offered only with credentials): ACK in the clear,
 * then the TLS handshake; what was negotiated before is forgotten, as the
 * protocol says.  A client that sent more after the option, or whose TLS
 * handshake fails, loses the connection. */
static int opt_starttls(struct nbd_conn *c, uint32_t len)
{
	int r;

	if (len || c->tls)
		return send_opt_reply(c, NBD_OPT_STARTTLS, NBD_REP_ERR_INVALID, NULL, 0);
	r = send_opt_reply(c, NBD_OPT_STARTTLS, NBD_REP_ACK, NULL, 0);
	if (r < 0)
		return r;
	if (nbd_conn_buffered(c))
		return -EPROTO; /* plaintext where the TLS handshake belongs */
	r = nbd_tls_start(c->srv->tls, c);
	if (r < 0)
		return r;
	c->structured = false;
	c->meta_alloc = false;
	c->meta_export = NULL;
	return 0;
}

int nbd_handshake(struct nbd_conn *c)
{
	struct nbd_greeting g = {
		.magic = htobe64(NBD_MAGIC),
		.ihaveopt = htobe64(NBD_IHAVEOPT),
		.flags = htobe16(NBD_FLAG_FIXED_NEWSTYLE | NBD_FLAG_NO_ZEROES),
	};
	struct iovec iov = { .iov_base = &g, .iov_len = sizeof(g) };
	unsigned char *data = NULL;
	uint32_t cflags;
	bool no_zeroes;
	int r;

	r = nbd_conn_send(c, &iov, 1);
	if (r < 0)
		return r;
	r = nbd_conn_recv(c, &cflags, 4);
	if (r < 0)
		return r;
	cflags = be32toh(cflags);
	/* Unknown client flags: the protocol says close. */
	if (cflags & ~(NBD_FLAG_C_FIXED_NEWSTYLE | NBD_FLAG_C_NO_ZEROES))
		return -EPROTO;
	no_zeroes = cflags & NBD_FLAG_C_NO_ZEROES;
	data = malloc(NBD_MAX_OPTION);
	if (!data)
		return -ENOMEM;

	for (;;) {
		struct nbd_option o;
		r = nbd_conn_recv(c, &o, sizeof(o));
		if (r < 0)
			goto out;
		if (be64toh(o.magic) != NBD_IHAVEOPT) {
			r = -EPROTO;
			goto out;
		}
		uint32_t opt = be32toh(o.option), len = be32toh(o.len);
		bool known = opt == NBD_OPT_EXPORT_NAME || opt == NBD_OPT_ABORT ||
			     opt == NBD_OPT_LIST || opt == NBD_OPT_INFO ||
			     opt == NBD_OPT_GO || opt == NBD_OPT_STRUCTURED_REPLY ||
			     opt == NBD_OPT_LIST_META_CONTEXT || opt == NBD_OPT_SET_META_CONTEXT ||
			     (opt == NBD_OPT_STARTTLS && c->srv->tls);
		/* Required TLS (the protocol's FORCEDTLS): before it is on,
		 * every option but STARTTLS and ABORT is refused, and
		 * EXPORT_NAME, which cannot be refused, ends the session. */
		bool tls_missing = c->srv->tls_required && !c->tls && opt != NBD_OPT_STARTTLS &&
				   opt != NBD_OPT_ABORT;
		if (tls_missing && opt == NBD_OPT_EXPORT_NAME) {
			r = -EPERM;
			goto out;
		}
		if (tls_missing) {
			r = nbd_conn_discard(c, len);
			if (r == 0)
				r = send_opt_reply(c, opt, NBD_REP_ERR_TLS_REQD, NULL, 0);
			if (r < 0)
				goto out;
			continue;
		}
		log_debug("nbd: option %u, %u bytes", opt, len);
		if (!known || len > NBD_MAX_OPTION) {
			r = nbd_conn_discard(c, len);
			if (r < 0)
				goto out;
			if (opt == NBD_OPT_EXPORT_NAME) {
				r = -ENAMETOOLONG; /* cannot reply: close */
				goto out;
			}
			r = send_opt_reply(c, opt, known ? NBD_REP_ERR_TOO_BIG : NBD_REP_ERR_UNSUP,
					   NULL, 0);
			if (r < 0)
				goto out;
			continue;
		}
		r = nbd_conn_recv(c, data, len);
		if (r < 0)
			goto out;
		switch (opt) {
		case NBD_OPT_EXPORT_NAME:
			r = opt_export_name(c, data, len, no_zeroes);
			break;
		case NBD_OPT_ABORT:
			/* Best effort: the client may already have gone. */
			send_opt_reply(c, opt, NBD_REP_ACK, NULL, 0);
			c->clean = true;
			r = -ECONNRESET;
			break;
		case NBD_OPT_LIST:
			r = len ? send_opt_reply(c, opt, NBD_REP_ERR_INVALID, NULL, 0)
				: opt_list(c);
			break;
		case NBD_OPT_STRUCTURED_REPLY:
			if (len) {
				r = send_opt_reply(c, opt, NBD_REP_ERR_INVALID, NULL, 0);
				break;
			}
			c->structured = true;
			r = send_opt_reply(c, opt, NBD_REP_ACK, NULL, 0);
			break;
		case NBD_OPT_STARTTLS:
			r = opt_starttls(c, len);
			/* Authenticated: no longer the first to make room
			 * for a new client (server.c). */
			if (r == 0 && c->tls)
				c->tls_on = true;
			break;
		case NBD_OPT_LIST_META_CONTEXT:
		case NBD_OPT_SET_META_CONTEXT:
			r = opt_meta_context(c, opt, data, len);
			break;
		default: /* INFO, GO */
			r = opt_info_go(c, opt, data, len);
			break;
		}
		if (r != 0)
			goto out;
	}
out:
	free(data);
	if (r == -ECONNRESET && c->clean)
		return 1;
	return r == 1 ? 0 : r;
}
