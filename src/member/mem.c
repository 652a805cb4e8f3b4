/* mem.c — mem:SIZE, a volume in anonymous memory, zero-filled.  Pages are
 * allocated on first write, and trim gives whole pages back.  A bitmap says
 * which pages have been written since they were last given back, so a read
 * of any other page returns zeros without touching it: the first touch of
 * a page costs a fault (a few microseconds), which made reads of fresh
 * memory several times dearer than reads of written memory. */
#include "member.h"

#include "core/log.h"
#include "core/units.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct mem_vol {
	struct vol vol;
	unsigned char *base;
	size_t len;
	uint64_t page; /* the system's page size */
	/* One bit per page: set once a write reached the page.  A page whose
	 * bit is clear holds zeros (never written, or given back). */
	_Atomic uint64_t *written;
};

static bool page_written(struct mem_vol *m, uint64_t pg)
{
	uint64_t word = atomic_load_explicit(&m->written[pg / 64], memory_order_acquire);
	return word >> (pg % 64) & 1;
}

/* Set (a write landed) or clear (the page was given back) pages
 * [first, last]'s bits. */
static void pages_mark(struct mem_vol *m, uint64_t first, uint64_t last, bool set)
{
	for (uint64_t pg = first; pg <= last; pg++) {
		uint64_t bit = 1ull << (pg % 64);
		_Atomic uint64_t *w = &m->written[pg / 64];
		if (set && !(atomic_load_explicit(w, memory_order_relaxed) & bit))
			atomic_fetch_or_explicit(w, bit, memory_order_release);
		else if (!set)
			atomic_fetch_and_explicit(w, ~bit, memory_order_release);
	}
}

/* Where the run of pages like off's (all written, or none) ends, at most
 * at end; *written says which kind it is. */
static uint64_t mem_run_end(struct mem_vol *m, uint64_t off, uint64_t end, bool *written)
{
	bool w = page_written(m, off / m->page);
	uint64_t next = (off / m->page + 1) * m->page;

	while (next < end && page_written(m, next / m->page) == w)
		next += m->page;
	*written = w;
	return next < end ? next : end;
}

static int mem_read(struct vol *v, void *buf, uint64_t len, uint64_t off)
{
	struct mem_vol *m = container_of(v, struct mem_vol, vol);
	unsigned char *p = buf;
	uint64_t end = off + len;

	/* Runs of written pages are copied, runs of others are zeros. */
	while (off < end) {
		bool w;
		uint64_t next = mem_run_end(m, off, end, &w);
		if (w)
			memcpy(p, m->base + off, next - off);
		else
			memset(p, 0, next - off);
		p += next - off;
		off = next;
	}
	return 0;
}

/* The view: runs of written pages straight from memory, the others from
 * a block of zeros, in pieces of at most its size. */
static int mem_view(struct vol *v, uint64_t len, uint64_t off, vol_view_fn fn, void *arg)
{
	static const unsigned char zeros[64 << 10];
	struct mem_vol *m = container_of(v, struct mem_vol, vol);
	uint64_t end = off + len;
	int r = 0;

	while (off < end && r == 0) {
		bool w;
		uint64_t next = mem_run_end(m, off, end, &w);
		if (!w && next - off > sizeof(zeros))
			next = (off / sizeof(zeros) + 1) * sizeof(zeros);
		r = fn(arg, w ? m->base + off : zeros, next - off, off);
		off = next;
	}
	return r;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

/* Before a write lands on [off, off+len): the pages of it never written
 * (nor written since given back) are allocated by one madvise per run
 * rather than by a fault each as the copy reaches them: in a VM a fault
 * is an exception and its return, per 4 KiB, and the first pass over fresh
 * memory cost 723-978 us a MiB that way against 542-617 populated first
 * (and 130-180 once there; docs/write-path.md).  Pages already written
 * are not asked for again: populating present pages costs a page-table
 * walk each, for nothing.  A kernel without it (EINVAL) faults as before. */
static void mem_populate(struct mem_vol *m, uint64_t len, uint64_t off)
{
	uint64_t end = off + len;

	off -= off % m->page;
	while (len > 0 && off < end) {
		bool w;
		uint64_t next = mem_run_end(m, off, end, &w);
		if (!w)
			(void)madvise(m->base + off, next - off, MADV_POPULATE_WRITE);
		off = next;
	}
}

static int mem_write(struct vol *v, const void *buf, uint64_t len,
		     uint64_t off, unsigned flags)
{
	struct mem_vol *m = container_of(v, struct mem_vol, vol);
	(void)flags;
	if (len == 0)
		return 0;
	mem_populate(m, len, off);
	memcpy(m->base + off, buf, len);
	pages_mark(m, off / m->page, (off + len - 1) / m->page, true);
	return 0;
}

/* Each part copied where it goes: the copy a write of them joined makes,
 * without the bounce before it. */
static int mem_writev(struct vol *v, const struct iovec *iov, unsigned n, uint64_t off,
                      unsigned flags)
{
	for (unsigned i = 0; i < n; i++) {
		mem_write(v, iov[i].iov_base, iov[i].iov_len, off, flags);
		off += iov[i].iov_len;
	}
	return 0;
}

/* The fill: the whole range is one piece of memory.  Its pages are marked
 * written whatever fn did: a marked page reads what its memory holds,
 * which is zeros, old data or what fn stored (vol.h's failed-write rule). */
static int mem_fill(struct vol *v, uint64_t len, uint64_t off, vol_fill_fn fn, void *arg)
{
	struct mem_vol *m = container_of(v, struct mem_vol, vol);
	int r;

	mem_populate(m, len, off);
	r = fn(arg, m->base + off, len, off);

	pages_mark(m, off / m->page, (off + len - 1) / m->page, true);
	return r;
}

/* Zero [off, off+len): memset the partial pages at the ends and hand the
 * whole pages in between back to the kernel, which reads them as zeros. */
static int mem_zero(struct vol *v, uint64_t len, uint64_t off, unsigned flags)
{
	struct mem_vol *m = container_of(v, struct mem_vol, vol);
	const uint64_t page = m->page;
	uint64_t start = (off + page - 1) / page * page;
	uint64_t end = (off + len) / page * page;
	(void)flags;

	if (start >= end) {
		memset(m->base + off, 0, len);
		return 0;
	}
	memset(m->base + off, 0, start - off);
	memset(m->base + end, 0, off + len - end);
	/* Clear the bits first: a page is then either given back or still
	 * marked, so a clear bit always means zeros. */
	pages_mark(m, start / page, end / page - 1, false);
	if (madvise(m->base + start, end - start, MADV_DONTNEED) != 0)
		memset(m->base + start, 0, end - start);
	return 0;
}

static void mem_close(struct vol *v)
{
	struct mem_vol *m = container_of(v, struct mem_vol, vol);
	munmap(m->base, m->len);
	free(m->written);
	vol_fini(v);
	free(m);
}

/* Pages never written (or given back) are holes. */
static int mem_extents(struct vol *v, uint64_t len, uint64_t off, vol_extent_fn fn, void *arg)
{
	struct mem_vol *m = container_of(v, struct mem_vol, vol);
	uint64_t end = off + len;
	int r = 0;

	while (off < end && r == 0) {
		bool w;
		uint64_t next = mem_run_end(m, off, end, &w);
		r = fn(arg, next - off, w ? 0 : VOL_EXTENT_HOLE | VOL_EXTENT_ZERO);
		off = next;
	}
	return r;
}

static const struct vol_ops mem_ops = {
    .kind = "mem",
    .read = mem_read,
    .write = mem_write,
    .writev = mem_writev,
    .trim = mem_zero,
    .write_zeroes = mem_zero,
    .close = mem_close,
    .view = mem_view,
    .extents = mem_extents,
    .fill = mem_fill,
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
	m->page = (uint64_t)sysconf(_SC_PAGESIZE);
	m->written = calloc((size / m->page + 1 + 63) / 64, sizeof(*m->written));
	if (!m->written) {
		free(m);
		return -ENOMEM;
	}
	m->base = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m->base == MAP_FAILED) {
		free(m->written);
		free(m);
		return err_set(-ENOMEM, "mem:%s: cannot map memory", rest);
	}
	snprintf(name, sizeof(name), "mem:%s", rest);
	unsigned caps = VOL_CAP_TRIM | VOL_CAP_ZEROES | VOL_CAP_FAST_ZERO | VOL_CAP_MULTI_CONN |
	                VOL_CAP_VIEW | VOL_CAP_STREAM | VOL_CAP_RAM | VOL_CAP_FILL;
	if (flags & MEMBER_READONLY)
		caps |= VOL_CAP_READONLY;
	r = vol_init(&m->vol, &mem_ops, name, size, 1, caps);
	if (r < 0) {
		munmap(m->base, size);
		free(m->written);
		free(m);
		return r;
	}
	*out = &m->vol;
	return 0;
}
