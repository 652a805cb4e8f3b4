/* slice.c — a window of another vol, passing every op through. */
#include "slice.h"

#include <errno.h>
#include <stdlib.h>

struct slice_vol {
	struct vol vol;
	struct vol *child;
	uint64_t offset;
	bool owns_child;
};

static struct slice_vol *to_slice(struct vol *v)
{
	return container_of(v, struct slice_vol, vol);
}

static int slice_read(struct vol *v, void *buf, uint64_t len, uint64_t off)
{
	struct slice_vol *s = to_slice(v);
	return s->child->ops->read(s->child, buf, len, s->offset + off);
}

static int slice_write(struct vol *v, const void *buf, uint64_t len,
		       uint64_t off, unsigned flags)
{
	struct slice_vol *s = to_slice(v);
	return s->child->ops->write(s->child, buf, len, s->offset + off, flags);
}

static int slice_writev(struct vol *v, const struct iovec *iov, unsigned n, uint64_t off,
                        unsigned flags)
{
	struct slice_vol *s = to_slice(v);
	return vol_writev(s->child, iov, n, s->offset + off, flags);
}

static int slice_flush(struct vol *v)
{
	return vol_flush(to_slice(v)->child);
}

static int slice_trim(struct vol *v, uint64_t len, uint64_t off, unsigned flags)
{
	struct slice_vol *s = to_slice(v);
	return vol_trim(s->child, len, s->offset + off, flags);
}

static int slice_write_zeroes(struct vol *v, uint64_t len, uint64_t off,
			      unsigned flags)
{
	struct slice_vol *s = to_slice(v);
	return vol_write_zeroes(s->child, len, s->offset + off, flags);
}

static void slice_close(struct vol *v)
{
	struct slice_vol *s = to_slice(v);
	if (s->owns_child)
		vol_close(s->child);
	vol_fini(v);
	free(s);
}

/* A view of the child, its pieces' offsets moved back into the slice. */
struct slice_view {
	vol_view_fn fn;
	void *arg;
	uint64_t offset;
};

static int slice_view_piece(void *arg, const void *src, uint64_t len, uint64_t off)
{
	struct slice_view *sv = arg;
	return sv->fn(sv->arg, src, len, off - sv->offset);
}

static int slice_view(struct vol *v, uint64_t len, uint64_t off, vol_view_fn fn, void *arg)
{
	struct slice_vol *s = to_slice(v);
	struct slice_view sv = { fn, arg, s->offset };

	return s->child->ops->view(s->child, len, s->offset + off, slice_view_piece, &sv);
}

/* Runs carry lengths, not offsets: the child's serve as they are. */
static int slice_extents(struct vol *v, uint64_t len, uint64_t off, vol_extent_fn fn, void *arg)
{
	struct slice_vol *s = to_slice(v);

	return vol_extents(s->child, len, s->offset + off, fn, arg);
}

static const struct vol_ops slice_ops = {
	.kind = "slice",
	.read = slice_read,
	.write = slice_write,
	.writev = slice_writev,
	.flush = slice_flush,
	.trim = slice_trim,
	.write_zeroes = slice_write_zeroes,
	.close = slice_close,
	.view = slice_view,
	.extents = slice_extents,
};

void slice_adopt(struct vol *slice)
{
	to_slice(slice)->owns_child = true;
}

int slice_open(struct vol *child, uint64_t offset, uint64_t size,
	       bool owns_child, const char *name, struct vol **out)
{
	struct slice_vol *s;
	int r;

	if (!vol_range_ok(child, size, offset) || offset % child->block_min ||
	    size % child->block_min)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	/* The child's 4096-byte view pieces are the slice's only if the
	 * window starts on a boundary (vol.h's promise to the caller). */
	r = vol_init(&s->vol, &slice_ops, name ? name : child->name, size,
		     child->block_min, offset % 4096 ? child->caps & ~VOL_CAP_VIEW : child->caps);
	if (r < 0) {
		free(s);
		return r;
	}
	s->vol.block_pref = child->block_pref;
	s->vol.block_max = child->block_max;
	s->child = child;
	s->offset = offset;
	s->owns_child = owns_child;
	*out = &s->vol;
	return 0;
}
