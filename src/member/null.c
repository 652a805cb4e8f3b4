/* null.c — null:SIZE reads zeros and drops writes.  It costs nothing, so a
 * stack on null members measures everything but the disks (the cipher, the
 * server, the transport): GELI's gzero trick from seed 002. */
#include "member.h"

#include "core/log.h"
#include "core/units.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct null_vol {
	struct vol vol;
};

static int null_read(struct vol *v, void *buf, uint64_t len, uint64_t off)
{
	(void)v;
	(void)off;
	memset(buf, 0, len);
	return 0;
}

static int null_write(struct vol *v, const void *buf, uint64_t len,
		      uint64_t off, unsigned flags)
{
	(void)v, (void)buf, (void)len, (void)off, (void)flags;
	return 0;
}

static int null_zero(struct vol *v, uint64_t len, uint64_t off, unsigned flags)
{
	(void)v, (void)len, (void)off, (void)flags;
	return 0;
}

static void null_close(struct vol *v)
{
	vol_fini(v);
	free(container_of(v, struct null_vol, vol));
}

/* Reads zeros everywhere and stores nothing. */
static int null_extents(struct vol *v, uint64_t len, uint64_t off, vol_extent_fn fn, void *arg)
{
	(void)v, (void)off;
	return fn(arg, len, VOL_EXTENT_HOLE | VOL_EXTENT_ZERO);
}

static const struct vol_ops null_ops = {
	.kind = "null",
	.read = null_read,
	.write = null_write,
	.trim = null_zero,
	.write_zeroes = null_zero,
	.close = null_close,
	.extents = null_extents,
};

int null_member_open(const char *rest, unsigned flags, struct vol **out)
{
	uint64_t size;
	char name[64];
	struct null_vol *n;
	int r;

	if (parse_size(rest, &size) < 0 || size == 0 || size % 512)
		return err_set(-EINVAL, "null:%s: size must be a positive multiple of 512", rest);
	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	snprintf(name, sizeof(name), "null:%s", rest);
	unsigned caps = VOL_CAP_TRIM | VOL_CAP_ZEROES | VOL_CAP_FAST_ZERO |
			VOL_CAP_MULTI_CONN;
	if (flags & MEMBER_READONLY)
		caps |= VOL_CAP_READONLY;
	r = vol_init(&n->vol, &null_ops, name, size, 1, caps);
	if (r < 0) {
		free(n);
		return r;
	}
	*out = &n->vol;
	return 0;
}
