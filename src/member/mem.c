/* mem.c — mem:SIZE, a volume in anonymous memory, zero-filled.  Pages are
 * allocated on first write, and trim gives whole pages back. */
#include "member.h"

#include "core/log.h"
#include "core/units.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct mem_vol {
	struct vol vol;
	unsigned char *base;
	size_t len;
};

static int mem_read(struct vol *v, void *buf, uint64_t len, uint64_t off)
{
	struct mem_vol *m = container_of(v, struct mem_vol, vol);
	memcpy(buf, m->base + off, len);
	return 0;
}

static int mem_write(struct vol *v, const void *buf, uint64_t len,
		     uint64_t off, unsigned flags)
{
	struct mem_vol *m = container_of(v, struct mem_vol, vol);
	(void)flags;
	memcpy(m->base + off, buf, len);
	return 0;
}

/* Zero [off, off+len): memset the partial pages at the ends and hand the
 * whole pages in between back to the kernel, which reads them as zeros. */
static int mem_zero(struct vol *v, uint64_t len, uint64_t off, unsigned flags)
{
	struct mem_vol *m = container_of(v, struct mem_vol, vol);
	const uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t start = (off + page - 1) / page * page;
	uint64_t end = (off + len) / page * page;
	(void)flags;

	if (start >= end) {
		memset(m->base + off, 0, len);
		return 0;
	}
	memset(m->base + off, 0, start - off);
	memset(m->base + end, 0, off + len - end);
	if (madvise(m->base + start, end - start, MADV_DONTNEED) != 0)
		memset(m->base + start, 0, end - start);
	return 0;
}

static void mem_close(struct vol *v)
{
	struct mem_vol *m = container_of(v, struct mem_vol, vol);
	munmap(m->base, m->len);
	vol_fini(v);
	free(m);
}

static const struct vol_ops mem_ops = {
	.kind = "mem",
	.read = mem_read,
	.write = mem_write,
	.trim = mem_zero,
	.write_zeroes = mem_zero,
	.close = mem_close,
};

int mem_member_open(const char *rest, unsigned flags, struct vol **out)
{
	uint64_t size;
	char name[64];
	struct mem_vol *m;
	int r;

	if (parse_size(rest, &size) < 0 || size == 0 || size % 512)
		return err_set(-EINVAL, "mem:%s: size must be a positive multiple of 512", rest);
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->len = size;
	m->base = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m->base == MAP_FAILED) {
		free(m);
		return err_set(-ENOMEM, "mem:%s: cannot map memory", rest);
	}
	snprintf(name, sizeof(name), "mem:%s", rest);
	unsigned caps = VOL_CAP_TRIM | VOL_CAP_ZEROES | VOL_CAP_FAST_ZERO |
			VOL_CAP_MULTI_CONN;
	if (flags & MEMBER_READONLY)
		caps |= VOL_CAP_READONLY;
	r = vol_init(&m->vol, &mem_ops, name, size, 1, caps);
	if (r < 0) {
		munmap(m->base, size);
		free(m);
		return r;
	}
	*out = &m->vol;
	return 0;
}
