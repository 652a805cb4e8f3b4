/* vol.c — the checked entry points of the volume interface and the
 * defaults for optional ops (see vol.h for the contract). */
#include "vol.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int vol_init(struct vol *v, const struct vol_ops *ops, const char *name,
	     uint64_t size, uint32_t block_min, unsigned caps)
{
	v->ops = ops;
	v->name = strdup(name ? name : ops->kind);
	if (!v->name)
		return -ENOMEM;
	v->size = size;
	v->block_min = block_min ? block_min : 1;
	v->block_pref = v->block_min > 4096 ? v->block_min : 4096;
	v->block_max = 32u << 20;
	v->caps = ops->view ? caps : caps & ~VOL_CAP_VIEW;
	if (!ops->fill)
		v->caps &= ~VOL_CAP_FILL;
	return 0;
}

void vol_fini(struct vol *v)
{
	free(v->name);
	v->name = NULL;
}

int vol_read(struct vol *v, void *buf, uint64_t len, uint64_t off)
{
	if (!vol_range_ok(v, len, off))
		return -EINVAL;
	if (len == 0)
		return 0;
	return v->ops->read(v, buf, len, off);
}

int vol_write(struct vol *v, const void *buf, uint64_t len, uint64_t off,
	      unsigned flags)
{
	if (!vol_range_ok(v, len, off))
		return -EINVAL;
	if (v->caps & VOL_CAP_READONLY)
		return -EROFS;
	if (len == 0)
		return (flags & VOL_FUA) ? vol_flush(v) : 0;
	return v->ops->write(v, buf, len, off, flags);
}

int vol_flush(struct vol *v)
{
	return v->ops->flush ? v->ops->flush(v) : 0;
}

int vol_trim(struct vol *v, uint64_t len, uint64_t off, unsigned flags)
{
	if (!vol_range_ok(v, len, off))
		return -EINVAL;
	if (v->caps & VOL_CAP_READONLY)
		return -EROFS;
	if (!v->ops->trim || len == 0)
		return (flags & VOL_FUA) ? vol_flush(v) : 0;
	return v->ops->trim(v, len, off, flags);
}

int vol_write_zeroes(struct vol *v, uint64_t len, uint64_t off,
		     unsigned flags)
{
	if (!vol_range_ok(v, len, off))
		return -EINVAL;
	if (v->caps & VOL_CAP_READONLY)
		return -EROFS;
	if (len == 0)
		return (flags & VOL_FUA) ? vol_flush(v) : 0;
	if (v->ops->write_zeroes)
		return v->ops->write_zeroes(v, len, off, flags);
	if (flags & VOL_FAST_ZERO)
		return -ENOTSUP;
	return vol_write_zeroes_by_writing(v, len, off, flags);
}

int vol_read_any(struct vol *v, void *buf, uint64_t len, uint64_t off)
{
	uint64_t bs = v->block_min ? v->block_min : 1;
	uint64_t from = off / bs * bs, to;
	unsigned char *tmp;
	int r;

	if (!vol_range_ok(v, len, off))
		return -EINVAL;
	to = (off + len + bs - 1) / bs * bs;
	if (from == off && to == off + len && (uintptr_t)buf % VOL_BUF_ALIGN == 0)
		return vol_read(v, buf, len, off);
	if (to > v->size)
		return -EINVAL;
	tmp = vol_buf_alloc(to - from);
	if (!tmp)
		return -ENOMEM;
	r = vol_read(v, tmp, to - from, from);
	if (r == 0)
		memcpy(buf, tmp + (off - from), len);
	free(tmp);
	return r;
}

int vol_view(struct vol *v, uint64_t len, uint64_t off, vol_view_fn fn, void *arg)
{
	if (!vol_range_ok(v, len, off))
		return -EINVAL;
	if (!(v->caps & VOL_CAP_VIEW))
		return -ENOTSUP;
	if (len == 0)
		return 0;
	return v->ops->view(v, len, off, fn, arg);
}

int vol_fill(struct vol *v, uint64_t len, uint64_t off, vol_fill_fn fn, void *arg)
{
	if (!vol_range_ok(v, len, off))
		return -EINVAL;
	if (v->caps & VOL_CAP_READONLY)
		return -EROFS;
	if (!(v->caps & VOL_CAP_FILL))
		return -ENOTSUP;
	if (len == 0)
		return 0;
	return v->ops->fill(v, len, off, fn, arg);
}

int vol_extents(struct vol *v, uint64_t len, uint64_t off, vol_extent_fn fn, void *arg)
{
	if (!vol_range_ok(v, len, off))
		return -EINVAL;
	if (len == 0)
		return 0;
	if (!v->ops->extents)
		return fn(arg, len, 0);
	return v->ops->extents(v, len, off, fn, arg);
}

struct extent_first {
	uint64_t len;
	unsigned flags;
};

static int extent_first_run(void *arg, uint64_t run_len, unsigned flags)
{
	struct extent_first *e = arg;

	e->len = run_len;
	e->flags = flags;
	return 1; /* one is enough */
}

int vol_extent_first(struct vol *v, uint64_t len, uint64_t off, uint64_t *run_len,
		     unsigned *flags)
{
	struct extent_first e = { len, 0 };
	int r = vol_extents(v, len, off, extent_first_run, &e);

	if (r < 0)
		return r;
	*run_len = e.len && e.len <= len ? e.len : len;
	*flags = e.flags;
	return 0;
}

/* The total of n parts, or UINT64_MAX when it overflows. */
static uint64_t vol_iov_total(const struct iovec *iov, unsigned n)
{
	uint64_t t = 0;

	for (unsigned i = 0; i < n; i++) {
		if (iov[i].iov_len > UINT64_MAX - 1 - t)
			return UINT64_MAX;
		t += iov[i].iov_len;
	}
	return t;
}

int vol_writev(struct vol *v, const struct iovec *iov, unsigned n, uint64_t off, unsigned flags)
{
	uint64_t len = vol_iov_total(iov, n);

	if (len == UINT64_MAX || !vol_range_ok(v, len, off))
		return -EINVAL;
	if (v->caps & VOL_CAP_READONLY)
		return -EROFS;
	if (len == 0)
		return (flags & VOL_FUA) ? vol_flush(v) : 0;
	if (v->ops->writev)
		return v->ops->writev(v, iov, n, off, flags);
	return vol_writev_by_copy(v, iov, n, off, flags);
}

int vol_writev_by_copy(struct vol *v, const struct iovec *iov, unsigned n, uint64_t off,
                       unsigned flags)
{
	uint64_t len = vol_iov_total(iov, n), cap = len < v->block_max ? len : v->block_max;
	size_t i = 0, skip = 0;
	char *b;
	int r = 0;

	if (len == UINT64_MAX)
		return -EINVAL;
	if (len == 0)
		return (flags & VOL_FUA) ? vol_flush(v) : 0;
	/* A bounce a whole number of blocks, so that every write but the
	 * last is one too. */
	if (cap > v->block_min)
		cap -= cap % v->block_min;
	if (!(b = vol_buf_alloc(cap)))
		return -ENOMEM;
	bool split = len > cap;
	while (len > 0 && r == 0) {
		uint64_t fill = 0, want = len < cap ? len : cap;
		while (fill < want) {
			size_t k = iov[i].iov_len - skip;
			if (k > want - fill)
				k = want - fill;
			memcpy(b + fill, (const char *)iov[i].iov_base + skip, k);
			fill += k;
			skip += k;
			if (skip == iov[i].iov_len) {
				i++;
				skip = 0;
			}
		}
		r = v->ops->write(v, b, fill, off, split ? 0 : flags & VOL_FUA);
		off += fill;
		len -= fill;
	}
	free(b);
	if (r == 0 && split && (flags & VOL_FUA))
		r = vol_flush(v);
	return r;
}

int vol_iov_write_all(const struct iovec *iov, unsigned n, uint64_t off, vol_iov_fn fn, void *arg)
{
	struct iovec batch[VOL_IOV_BATCH];
	unsigned i = 0;
	size_t skip = 0; /* bytes of iov[i] written */

	for (;;) {
		while (i < n && iov[i].iov_len == skip) {
			i++;
			skip = 0;
		}
		if (i == n)
			return 0;
		unsigned k = 0;
		batch[k++] = (struct iovec){(char *)iov[i].iov_base + skip, iov[i].iov_len - skip};
		for (unsigned j = i + 1; j < n && k < VOL_IOV_BATCH; j++)
			if (iov[j].iov_len)
				batch[k++] = iov[j];
		int64_t w = fn(arg, batch, k, off);
		if (w < 0)
			return (int)w;
		if (w == 0)
			return -EIO;
		off += (uint64_t)w;
		/* Move on by w bytes: whole parts, then into one. */
		while (w > 0 && i < n) {
			size_t left = iov[i].iov_len - skip;
			if ((uint64_t)w < left) {
				skip += (size_t)w;
				w = 0;
			} else {
				w -= (int64_t)left;
				i++;
				skip = 0;
			}
		}
		if (w > 0)
			return -EIO; /* more than it was given */
	}
}

void vol_close(struct vol *v)
{
	if (v)
		v->ops->close(v);
}

/* One shared read-only page of zeros would not do: write() takes a buffer
 * of up to block_max bytes, so write in pieces of a zeroed scratch buffer.
 * In several pieces, FUA covers them all by one flush at the end. */
int vol_write_zeroes_by_writing(struct vol *v, uint64_t len, uint64_t off,
				unsigned flags)
{
	const uint64_t piece = 1u << 20;
	void *zero = vol_buf_zalloc(len < piece ? len : piece);
	bool split = len > piece;
	int r = 0;

	if (!zero)
		return -ENOMEM;
	while (len > 0 && r == 0) {
		uint64_t n = len < piece ? len : piece;
		r = v->ops->write(v, zero, n, off, split ? 0 : flags & VOL_FUA);
		off += n;
		len -= n;
	}
	free(zero);
	if (r == 0 && split && (flags & VOL_FUA))
		r = vol_flush(v);
	return r;
}

void *vol_buf_alloc(size_t len)
{
	size_t cap =
	    len ? (len + VOL_BUF_ALIGN - 1) / VOL_BUF_ALIGN * VOL_BUF_ALIGN : VOL_BUF_ALIGN;
	void *p;

	if (cap < len || posix_memalign(&p, VOL_BUF_ALIGN, cap) != 0)
		return NULL;
	return p;
}

void *vol_buf_zalloc(size_t len)
{
	void *p = vol_buf_alloc(len);

	if (p)
		memset(p, 0, len);
	return p;
}
