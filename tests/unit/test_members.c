/* Members: mem, null and file behave as vols should — data round trips,
 * zeroing and trimming, bounds, read-only refusal, spec errors; the views
 * of mem and file show what read returns, and a file's view of bytes that
 * are gone fails with -EIO instead of killing the process; their extents
 * (base:allocation) show holes where nothing was written; a file opened
 * O_DIRECT takes buffers at any address; members in memory say so
 * (VOL_CAP_RAM) and layers that add latency do not pass it on. */
#include "check.h"
#include "core/log.h"
#include "member/member.h"
#include "view_gather.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>

static void check_view(struct vol *v, uint64_t len, uint64_t off)
{
	static unsigned char a[96 << 10], b[96 << 10];
	struct view_gather g = { b, off, off, 0 };

	CHECK(len <= sizeof(a));
	memset(b, 0xee, len);
	CHECK_EQ(vol_read(v, a, len, off), 0);
	CHECK_EQ(vol_view(v, len, off, view_gather_piece, &g), 0);
	CHECK_EQ(g.bad, 0);
	CHECK_EQ(g.next, off + len);
	CHECK(memcmp(a, b, len) == 0);
}

static int fail_piece(void *arg, const void *src, uint64_t len, uint64_t off)
{
	(void)arg, (void)src, (void)len, (void)off;
	return -EPROTO;
}

static void exercise(struct vol *v)
{
	unsigned char a[8192], b[8192];
	unsigned long long seed = 42;

	for (size_t i = 0; i < sizeof(a); i++)
		a[i] = (unsigned char)check_rand(&seed);
	CHECK_EQ(vol_write(v, a, sizeof(a), 4096, 0), 0);
	CHECK_EQ(vol_read(v, b, sizeof(b), 4096), 0);
	CHECK(memcmp(a, b, sizeof(a)) == 0);

	/* Zero the middle, unaligned to pages: both ends must survive. */
	CHECK_EQ(vol_write_zeroes(v, 5000, 4096 + 1000, 0), 0);
	CHECK_EQ(vol_read(v, b, sizeof(b), 4096), 0);
	CHECK(memcmp(a, b, 1000) == 0);
	for (int i = 1000; i < 6000; i++)
		if (b[i] != 0) {
			CHECK(b[i] == 0);
			break;
		}
	CHECK(memcmp(a + 6000, b + 6000, sizeof(a) - 6000) == 0);

	CHECK_EQ(vol_read(v, b, 512, v->size - 512), 0);
	CHECK_EQ(vol_read(v, b, 1024, v->size - 512), -EINVAL);
	CHECK_EQ(vol_write(v, a, 1, v->size, 0), -EINVAL);
	CHECK_EQ(vol_read(v, b, 1, UINT64_MAX), -EINVAL);
	CHECK_EQ(vol_flush(v), 0);
}

/* mem: reads pages never written (or trimmed) as zeros without touching
 * them; a read across written and unwritten pages, and a partial write to
 * a trimmed page, must still see exactly the data and zeros around it. */
static void exercise_mem_pages(void)
{
	enum { PG = 4096 };
	static unsigned char a[6 * PG], b[6 * PG];
	struct vol *v;

	CHECK_EQ(member_open("mem:1M", 0, &v), 0);
	memset(a, 0, sizeof(a));
	memset(a + PG + 100, 0x5a, 3 * PG);   /* pages 1 to 4, partly */
	CHECK_EQ(vol_write(v, a + PG + 100, 3 * PG, PG + 100, 0), 0);
	CHECK_EQ(vol_trim(v, PG, 2 * PG, 0), 0); /* page 2 given back */
	memset(a + 2 * PG, 0, PG);
	memset(a + 2 * PG + 512, 0xa5, 512);   /* then half-rewritten */
	CHECK_EQ(vol_write(v, a + 2 * PG + 512, 512, 2 * PG + 512, 0), 0);
	memset(b, 0xff, sizeof(b));
	CHECK_EQ(vol_read(v, b, sizeof(b), 0), 0);
	CHECK(memcmp(a, b, sizeof(a)) == 0);
	memset(b, 0xff, sizeof(b));
	CHECK_EQ(vol_read(v, b, 700, PG - 300), 0); /* across pages 0 and 1 */
	CHECK(memcmp(a + PG - 300, b, 700) == 0);
	/* The view: written runs, a given-back page, never-written pages
	 * beyond (in pieces no larger than its block of zeros). */
	check_view(v, sizeof(a), 0);
	check_view(v, 700, PG - 300);
	check_view(v, 80 << 10, 3 * PG + 512);
	CHECK_EQ(vol_view(v, PG, 0, fail_piece, NULL), -EPROTO);
	vol_close(v);
}

/* A fill of fresh mem: pages finds them allocated already (one madvise
 * for the run, not a fault per page as the receive reaches them:
 * mem.c's mem_populate); the page after the range stays unallocated. */
struct resident {
	unsigned long pages, in;
	bool next_in;
};

static int count_resident(void *arg, void *dst, uint64_t len, uint64_t off)
{
	struct resident *r = arg;
	unsigned char vec[64], next;
	long pg = sysconf(_SC_PAGESIZE);

	(void)off;
	r->pages = (unsigned long)(len / (uint64_t)pg);
	if (r->pages > sizeof(vec) || mincore(dst, len, vec) != 0 ||
	    mincore((unsigned char *)dst + len, (size_t)pg, &next) != 0)
		return -EIO;
	for (unsigned long i = 0; i < r->pages; i++)
		r->in += vec[i] & 1;
	r->next_in = next & 1;
	memset(dst, 0x5a, len);
	return 0;
}

static void check_mem_fill_populated(void)
{
	struct resident r = {0};
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
	struct vol *v;

	CHECK_EQ(member_open("mem:1M", 0, &v), 0);
	CHECK_EQ(vol_fill(v, 16 * pg, 4 * pg, count_resident, &r), 0);
	CHECK_EQ(r.pages, 16);
	CHECK_EQ(r.in, 16);
	CHECK(!r.next_in);
	vol_close(v);
}

/* Extents as a list of (length, flags) runs, merged where flags agree. */
struct runs {
	uint64_t len[16];
	unsigned flags[16];
	unsigned n, calls, stop_after;
};

static int runs_add(void *arg, uint64_t len, unsigned flags)
{
	struct runs *r = arg;

	CHECK(len > 0);
	r->calls++;
	if (r->n && r->flags[r->n - 1] == flags) {
		r->len[r->n - 1] += len;
	} else if (r->n < 16) {
		r->len[r->n] = len;
		r->flags[r->n++] = flags;
	}
	return r->stop_after && r->calls == r->stop_after ? 7 : 0;
}

#define HZ (VOL_EXTENT_HOLE | VOL_EXTENT_ZERO)

static void check_extents(void)
{
	enum { PG = 4096 };
	unsigned char buf[PG];
	struct runs r = { .n = 0 };
	struct vol *v;
	uint64_t len;
	unsigned flags;

	memset(buf, 0x11, sizeof(buf));
	/* mem: a written page between holes; a hole again once trimmed. */
	CHECK_EQ(member_open("mem:64k", 0, &v), 0);
	CHECK_EQ(vol_write(v, buf, PG, 3 * PG, 0), 0);
	CHECK_EQ(vol_extents(v, v->size, 0, runs_add, &r), 0);
	CHECK_EQ(r.n, 3);
	CHECK(r.len[0] == 3 * PG && r.flags[0] == HZ);
	CHECK(r.len[1] == PG && r.flags[1] == 0);
	CHECK(r.len[2] == v->size - 4 * PG && r.flags[2] == HZ);
	/* A range inside, the walk stopped by its callback, the first run. */
	r = (struct runs){ .stop_after = 1 };
	CHECK_EQ(vol_extents(v, 3 * PG, 2 * PG, runs_add, &r), 7);
	CHECK(r.n == 1 && r.len[0] == PG && r.flags[0] == HZ);
	CHECK_EQ(vol_extent_first(v, 8 * PG, 3 * PG + 512, &len, &flags), 0);
	CHECK(len == PG - 512 && flags == 0);
	CHECK_EQ(vol_extents(v, PG, v->size, runs_add, &r), -EINVAL);
	CHECK_EQ(vol_trim(v, PG, 3 * PG, 0), 0);
	r = (struct runs){ .n = 0 };
	CHECK_EQ(vol_extents(v, v->size, 0, runs_add, &r), 0);
	CHECK(r.n == 1 && r.len[0] == v->size && r.flags[0] == HZ);
	vol_close(v);

	/* null: all hole; a disk model shows its inner member's. */
	CHECK_EQ(member_open("null:64k", 0, &v), 0);
	CHECK_EQ(vol_extent_first(v, 8192, 4096, &len, &flags), 0);
	CHECK(len == 8192 && flags == HZ);
	vol_close(v);
	CHECK_EQ(member_open("sim:200M,seek=0,rot=0:null:64k", 0, &v), 0);
	CHECK_EQ(vol_extent_first(v, 8192, 4096, &len, &flags), 0);
	CHECK(len == 8192 && flags == HZ);
	vol_close(v);

	/* A sparse file: a hole, 8 KiB of data at 256 KiB, a hole to the
	 * end.  On tmpfs, which always keeps holes; where there is none,
	 * /tmp, and if its file system keeps no holes the layout is not
	 * checked (only that the extents cover the file), and we say so. */
	char path[64];
	snprintf(path, sizeof(path), "%s/uraid-test-extents-XXXXXX",
	         access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	CHECK(ftruncate(fd, 1 << 20) == 0);
	CHECK(pwrite(fd, buf, PG, 256 << 10) == PG && pwrite(fd, buf, PG, (256 << 10) + PG) == PG);
	off_t first = lseek(fd, 0, SEEK_DATA);
	close(fd);
	CHECK_EQ(member_open(path, 0, &v), 0);
	r = (struct runs){ .n = 0 };
	CHECK_EQ(vol_extents(v, v->size, 0, runs_add, &r), 0);
	uint64_t total = 0;
	for (unsigned i = 0; i < r.n; i++)
		total += r.len[i];
	CHECK_EQ(total, v->size);
	if (first == 256 << 10) {
		CHECK_EQ(r.n, 3);
		CHECK(r.len[0] == 256 << 10 && r.flags[0] == HZ);
		CHECK(r.len[1] >= 2 * PG && r.flags[1] == 0);
		CHECK(r.flags[2] == HZ);
	} else {
		fprintf(stderr, "test_members: %s keeps no holes: sparse-file extents not checked\n",
		        path);
	}
	vol_close(v);
	unlink(path);
}

/* Every member type member.h lists is in the one table, and each spec
 * form finds its type there: paths and NBD URIs too. */
static void check_types(void)
{
	static const struct {
		const char *spec, *type;
	} cases[] = {
	    {"a.img", "file"},
	    {"/dev/sdb", "file"},
	    {"odd:name.img", "file"},
	    {"nbdish.img", "file"},
	    {"mem:1M", "mem"},
	    {"null:64k", "null"},
	    {"sim:200M:mem:1M", "sim"},
	    {"fault:rfail=1:mem:1M", "fault"},
	    {"nbd://host/export", "nbd"},
	    {"nbd+unix:///e?socket=/run/s", "nbd"},
	    {"nbds://host:10809/e", "nbd"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct member_type *t = member_type_of(cases[i].spec);
		if (strcmp(t->name, cases[i].type) != 0) {
			fprintf(stderr, "%s: type %s, expected %s\n", cases[i].spec, t->name,
			        cases[i].type);
			check_failures++;
		}
	}
}

/* O_DIRECT (--direct): buffers at odd addresses, smaller and larger than
 * the bounce, round trip; requests stay whole multiples of block_min.  In
 * the build dir (where meson runs us), on a file system with O_DIRECT. */
static void check_direct(void)
{
	const char *dir = getenv("BUILDDIR") ? getenv("BUILDDIR") : "/tmp";
	const uint64_t len = (3u << 20) / 2;
	unsigned char *a = malloc(len + 1), *b = malloc(len + 1);
	char path[512];
	struct vol *v = NULL;
	int fd, r;

	snprintf(path, sizeof(path), "%s/uraid-test-direct-XXXXXX", dir);
	fd = mkstemp(path);
	CHECK(fd >= 0 && a && b);
	CHECK(ftruncate(fd, 4 << 20) == 0);
	close(fd);
	r = member_open(path, MEMBER_DIRECT, &v);
	if (r < 0)
		fprintf(stderr, "test_members: %s: %s\n", path, err_detail(r));
	CHECK_EQ(r, 0);
	if (!v)
		goto out;
	CHECK(v->block_min >= 512 && len % v->block_min == 0);
	for (uint64_t i = 0; i < len; i++)
		a[i + 1] = (unsigned char)(i * 7 + i / 4096);
	CHECK_EQ(vol_write(v, a + 1, len, v->block_min, VOL_FUA), 0);
	CHECK_EQ(vol_read(v, b + 1, len, v->block_min), 0);
	CHECK(memcmp(a + 1, b + 1, len) == 0);
	CHECK_EQ(vol_write(v, a + 1, v->block_min, 0, 0), 0);
	CHECK_EQ(vol_read(v, b + 1, v->block_min, 0), 0);
	CHECK(memcmp(a + 1, b + 1, v->block_min) == 0);
	vol_close(v);
out:
	unlink(path);
	free(a);
	free(b);
}

/* Whether a file made in dir is on tmpfs, as statfs says: -1 when no
 * file can be made there. */
static int file_in_ram(const char *dir, bool *ram)
{
	char path[256];
	struct statfs sfs;
	struct vol *v;
	int fd;

	snprintf(path, sizeof(path), "%s/uraid-test-ram-XXXXXX", dir);
	fd = mkstemp(path);
	if (fd < 0)
		return -1;
	CHECK(ftruncate(fd, 1 << 20) == 0);
	bool tmpfs = fstatfs(fd, &sfs) == 0 && sfs.f_type == TMPFS_MAGIC;
	close(fd);
	CHECK_EQ(member_open(path, 0, &v), 0);
	if (v) {
		*ram = v->caps & VOL_CAP_RAM;
		CHECK_EQ(*ram, tmpfs);
		CHECK(v->caps & VOL_CAP_STREAM); /* the page cache takes segments */
		vol_close(v);
	}
	unlink(path);
	return tmpfs;
}

/* mem: and files on tmpfs are RAM; a disk model or fault layer over mem:
 * is not (it adds latency), and neither takes segments (vol.h). */
static void check_ram(void)
{
	static const struct {
		const char *spec;
		unsigned caps;
	} cases[] = {
	    {"mem:1M", VOL_CAP_RAM | VOL_CAP_STREAM},
	    {"sim:200M,seek=0,rot=0:mem:1M", 0},
	    {"fault:latency=1:mem:1M", 0},
	    {"null:1M", 0},
	};
	bool ram = false;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct vol *v = NULL;
		CHECK_EQ(member_open(cases[i].spec, 0, &v), 0);
		if (!v)
			continue;
		CHECK_EQ(v->caps & (VOL_CAP_RAM | VOL_CAP_STREAM), cases[i].caps);
		vol_close(v);
	}
	if (file_in_ram("/dev/shm", &ram) != 1)
		fprintf(stderr, "test_members: /dev/shm is not tmpfs: a RAM file not checked\n");
	if (file_in_ram(".", &ram) == 1)
		fprintf(stderr, "test_members: . is tmpfs: a file not in RAM not checked\n");
}

int main(void)
{
	struct vol *v;
	char path[] = "/tmp/uraid-test-members-XXXXXX";
	unsigned char buf[4096];

	check_types();
	exercise_mem_pages();
	check_mem_fill_populated();
	check_extents();
	check_direct();
	check_ram();
	CHECK_EQ(member_open("mem:1M", 0, &v), 0);
	CHECK_EQ(v->size, 1 << 20);
	exercise(v);
	vol_close(v);

	/* A layer without a view of its own (a disk model) shows none. */
	CHECK_EQ(member_open("sim:200M,seek=0,rot=0:mem:1M", 0, &v), 0);
	CHECK(!(v->caps & VOL_CAP_VIEW));
	CHECK_EQ(vol_view(v, 4096, 0, fail_piece, NULL), -ENOTSUP);
	vol_close(v);

	CHECK_EQ(member_open("null:64k", 0, &v), 0);
	memset(buf, 0xaa, sizeof(buf));
	CHECK_EQ(vol_write(v, buf, sizeof(buf), 0, 0), 0);
	CHECK_EQ(vol_read(v, buf, sizeof(buf), 0), 0);
	CHECK(buf[0] == 0 && buf[4095] == 0);
	vol_close(v);

	int fd = mkstemp(path);
	CHECK(fd >= 0);
	CHECK(ftruncate(fd, 1 << 20) == 0);
	close(fd);
	CHECK_EQ(member_open(path, 0, &v), 0);
	exercise(v);
	CHECK_EQ(vol_trim(v, 65536, 65536, 0), 0);
	check_view(v, 96 << 10, 4096 - 1000);
	/* Two writers on one file are refused. */
	struct vol *again;
	CHECK_EQ(member_open(path, 0, &again), -EBUSY);
	/* Cut short behind our back: the view of the lost bytes faults and
	 * reports -EIO, and read finds them gone too. */
	CHECK(truncate(path, 256 << 10) == 0);
	struct view_gather g = { buf, 300 << 10, 300 << 10, 0 };
	CHECK_EQ(vol_view(v, 4096, 300 << 10, view_gather_piece, &g), -EIO);
	CHECK_EQ(vol_read(v, buf, 4096, 300 << 10), -EIO);
	check_view(v, 8192, 200 << 10); /* what is left still shows */
	vol_close(v);
	CHECK(truncate(path, 1 << 20) == 0);

	CHECK_EQ(member_open(path, MEMBER_READONLY, &v), 0);
	CHECK_EQ(vol_write(v, buf, 512, 0, 0), -EROFS);
	CHECK_EQ(vol_write_zeroes(v, 512, 0, 0), -EROFS);
	CHECK_EQ(vol_trim(v, 512, 0, 0), -EROFS);
	vol_close(v);
	unlink(path);

	err_clear();
	CHECK_EQ(member_open("mem:12x", 0, &v), -EINVAL);
	CHECK(strstr(err_detail(-EINVAL), "mem:12x") != NULL);
	CHECK_EQ(member_open("mem:1000", 0, &v), -EINVAL);
	CHECK(member_open("/nonexistent/uraid", 0, &v) == -ENOENT);
	return check_done();
}
