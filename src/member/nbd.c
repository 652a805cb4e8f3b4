/* nbd.c — a member on a remote NBD export (nbd://, nbd+unix://, nbds://),
 * through libnbd.  A RAID1 can mirror a local disk to a remote one, and
 * tests can put an independent server (nbdkit with its error filter) under
 * our disciplines.
 *
 * libnbd handles serialise their commands, so the member keeps a small pool
 * of connections and lends one to each request; when the server does not
 * offer multi-conn consistency, one connection is used and flush covers
 * everything.  NBD has no read-only open: a member opened read-only
 * refuses writes itself (the layers above call its ops directly), and one
 * opened writable over a read-only export is refused. */
#include "member.h"

#include "core/log.h"

#include <errno.h>
#include <libnbd.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define NBD_MEMBER_MAX_CONNS 8

struct nbd_vol {
	struct vol vol;
	pthread_mutex_t lock;
	pthread_cond_t freed;
	unsigned nconns;
	struct nbd_handle *conn[NBD_MEMBER_MAX_CONNS];
	bool busy[NBD_MEMBER_MAX_CONNS];
	bool ro; /* opened read-only: the connections may still take writes */
};

static unsigned nbd_borrow(struct nbd_vol *n)
{
	pthread_mutex_lock(&n->lock);
	for (;;) {
		for (unsigned i = 0; i < n->nconns; i++)
			if (!n->busy[i]) {
				n->busy[i] = true;
				pthread_mutex_unlock(&n->lock);
				return i;
			}
		pthread_cond_wait(&n->freed, &n->lock);
	}
}

static void nbd_give_back(struct nbd_vol *n, unsigned i)
{
	pthread_mutex_lock(&n->lock);
	n->busy[i] = false;
	pthread_cond_signal(&n->freed);
	pthread_mutex_unlock(&n->lock);
}

/* libnbd reports errors through nbd_get_errno(); map "no errno" to EIO. */
static int nbd_result(int r)
{
	if (r != -1)
		return 0;
	int e = nbd_get_errno();
	return e > 0 ? -e : -EIO;
}

static int nbd_member_read(struct vol *v, void *buf, uint64_t len, uint64_t off)
{
	struct nbd_vol *n = container_of(v, struct nbd_vol, vol);
	unsigned i = nbd_borrow(n);
	int r = nbd_result(nbd_pread(n->conn[i], buf, len, off, 0));
	nbd_give_back(n, i);
	return r;
}

static int nbd_member_write(struct vol *v, const void *buf, uint64_t len,
			    uint64_t off, unsigned flags)
{
	struct nbd_vol *n = container_of(v, struct nbd_vol, vol);
	if (n->ro)
		return -EROFS;
	unsigned i = nbd_borrow(n);
	int r = nbd_result(nbd_pwrite(n->conn[i], buf, len, off,
				      (flags & VOL_FUA) ? LIBNBD_CMD_FLAG_FUA : 0));
	nbd_give_back(n, i);
	return r;
}

/* With multi-conn, a flush on one connection covers writes completed on
 * all of them (that is what the server promises by advertising it). */
static int nbd_member_flush(struct vol *v)
{
	struct nbd_vol *n = container_of(v, struct nbd_vol, vol);
	unsigned i = nbd_borrow(n);
	int r = nbd_result(nbd_flush(n->conn[i], 0));
	nbd_give_back(n, i);
	return r;
}

static int nbd_member_trim(struct vol *v, uint64_t len, uint64_t off, unsigned flags)
{
	struct nbd_vol *n = container_of(v, struct nbd_vol, vol);
	if (n->ro)
		return -EROFS;
	unsigned i = nbd_borrow(n);
	int r = nbd_result(nbd_trim(n->conn[i], len, off,
				    (flags & VOL_FUA) ? LIBNBD_CMD_FLAG_FUA : 0));
	nbd_give_back(n, i);
	return r;
}

static int nbd_member_zero(struct vol *v, uint64_t len, uint64_t off, unsigned flags)
{
	struct nbd_vol *n = container_of(v, struct nbd_vol, vol);
	uint32_t f = 0;

	if (n->ro)
		return -EROFS;
	if (flags & VOL_FUA)
		f |= LIBNBD_CMD_FLAG_FUA;
	if (!(flags & VOL_MAY_TRIM))
		f |= LIBNBD_CMD_FLAG_NO_HOLE;
	if (flags & VOL_FAST_ZERO)
		f |= LIBNBD_CMD_FLAG_FAST_ZERO;
	unsigned i = nbd_borrow(n);
	int r = nbd_result(nbd_zero(n->conn[i], len, off, f));
	nbd_give_back(n, i);
	if (r == -ENOTSUP && (flags & VOL_FAST_ZERO))
		return -ENOTSUP;
	return r;
}

static void nbd_member_close(struct vol *v)
{
	struct nbd_vol *n = container_of(v, struct nbd_vol, vol);

	for (unsigned i = 0; i < n->nconns; i++) {
		nbd_shutdown(n->conn[i], 0);
		nbd_close(n->conn[i]);
	}
	pthread_cond_destroy(&n->freed);
	pthread_mutex_destroy(&n->lock);
	vol_fini(v);
	free(n);
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

static struct nbd_handle *nbd_member_connect(const char *uri)
{
	struct nbd_handle *h = nbd_create();

	if (!h)
		return NULL;
	if (nbd_connect_uri(h, uri) == -1) {
		err_set(-EIO, "%s: %s", uri, nbd_get_error());
		nbd_close(h);
		return NULL;
	}
	return h;
}

int nbd_member_open(const char *uri, unsigned flags, struct vol **out)
{
	bool ro = flags & MEMBER_READONLY;
	struct nbd_vol *n;
	int64_t size;
	int r;

	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	pthread_mutex_init(&n->lock, NULL);
	pthread_cond_init(&n->freed, NULL);
	n->conn[0] = nbd_member_connect(uri);
	if (!n->conn[0]) {
		r = -EIO;
		goto out_free;
	}
	n->nconns = 1;
	size = nbd_get_size(n->conn[0]);
	if (size < 0) {
		r = err_set(-EIO, "%s: %s", uri, nbd_get_error());
		goto out_close;
	}
	/* A writable member whose every write would fail is refused now,
	 * not at its first write (which would fail it out of an array). */
	if (!ro && nbd_is_read_only(n->conn[0]) == 1) {
		r = err_set(-EROFS, "%s: the server exports it read-only (open it with --readonly)",
		            uri);
		goto out_close;
	}
	n->ro = ro;

	unsigned caps = 0;
	if (nbd_can_flush(n->conn[0]) == 1)
		caps |= VOL_CAP_FLUSH;
	if (nbd_can_fua(n->conn[0]) == 1)
		caps |= VOL_CAP_FUA;
	if (nbd_can_trim(n->conn[0]) == 1)
		caps |= VOL_CAP_TRIM;
	if (nbd_can_zero(n->conn[0]) == 1)
		caps |= VOL_CAP_ZEROES;
	if (nbd_can_fast_zero(n->conn[0]) == 1)
		caps |= VOL_CAP_FAST_ZERO;
	if (ro)
		caps |= VOL_CAP_READONLY;
	if (nbd_can_multi_conn(n->conn[0]) == 1) {
		caps |= VOL_CAP_MULTI_CONN;
		while (n->nconns < NBD_MEMBER_MAX_CONNS) {
			struct nbd_handle *h = nbd_member_connect(uri);
			if (!h)
				break; /* fewer connections is fine */
			n->conn[n->nconns++] = h;
		}
	}
	int64_t minb = nbd_get_block_size(n->conn[0], LIBNBD_SIZE_MINIMUM);
	r = vol_init(&n->vol, &nbd_member_ops, uri, (uint64_t)size,
		     minb > 0 ? (uint32_t)minb : 1, caps);
	if (r < 0)
		goto out_close;
	*out = &n->vol;
	return 0;

out_close:
	for (unsigned i = 0; i < n->nconns; i++)
		nbd_close(n->conn[i]);
out_free:
	pthread_cond_destroy(&n->freed);
	pthread_mutex_destroy(&n->lock);
	free(n);
	return r;
}
