/* test_writev.c — the vol interface's scatter write (vol.h's writev):
 * vol_iov_write_all's loop over a writer that takes less than it is given
 * or fails part-way, the file member's pwritev against pread, the copy
 * fallback of a vol without the op (split in block_max pieces, an error
 * part-way), the layers that pass it on (sim:, a slice), and the checks at
 * the edge. */
#include "check.h"
#include "core/vol.h"
#include "disc/slice.h"
#include "member/member.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A writer into mem[] that takes at most step[calls % nstep] bytes a call
 * and fails with fail_errno at call fail_at (0: never). */
struct fake {
	char *mem;
	uint64_t size;
	const uint64_t *step;
	unsigned nstep, calls, fail_at, max_parts;
	int fail_errno;
	int64_t lie; /* added to what it says it wrote */
};

static int64_t fake_write(void *arg, const struct iovec *iov, unsigned n, uint64_t off)
{
	struct fake *f = arg;
	uint64_t want = f->step[f->calls % f->nstep], done = 0;

	f->calls++;
	if (n > f->max_parts)
		f->max_parts = n;
	if (f->fail_at && f->calls == f->fail_at)
		return f->fail_errno;
	for (unsigned i = 0; i < n && done < want; i++) {
		uint64_t k = iov[i].iov_len < want - done ? iov[i].iov_len : want - done;
		if (off + done + k > f->size)
			return -ENOSPC;
		memcpy(f->mem + off + done, iov[i].iov_base, k);
		done += k;
	}
	return (int64_t)done + f->lie;
}

/* n parts of the given lengths cut from src, back to back. */
static struct iovec *parts(const char *src, const uint64_t *len, unsigned n)
{
	struct iovec *iov = calloc(n, sizeof(*iov));
	uint64_t at = 0;

	for (unsigned i = 0; i < n; i++) {
		iov[i] = (struct iovec){(void *)(src + at), len[i]};
		at += len[i];
	}
	return iov;
}

static void fill(char *p, uint64_t len, unsigned long long seed)
{
	for (uint64_t i = 0; i < len; i++)
		p[i] = (char)check_rand(&seed);
}

/* Short writes of every size class, parts of odd sizes and empty ones,
 * more parts than one batch: every byte lands once, in order. */
static void test_short_writes(void)
{
	enum { N = 600 };
	uint64_t len[N], total = 0;
	unsigned long long s = 7;
	unsigned nonempty = 0;

	for (unsigned i = 0; i < N; i++) {
		len[i] = i % 7 == 3 ? 0 : 1 + check_rand(&s) % 9000;
		total += len[i];
		nonempty += len[i] > 0;
	}
	char *src = malloc(total), *dst = malloc(total + 100);
	fill(src, total, 1);
	struct iovec *iov = parts(src, len, N);
	const uint64_t steps[][3] = {{1, 4095, 5000},
	                             {UINT64_MAX, 1, 1},
	                             {4096, 4096, 4096},
	                             {UINT64_MAX, UINT64_MAX, UINT64_MAX}};
	for (unsigned k = 0; k < 4; k++) {
		memset(dst, 0, total + 100);
		struct fake f = {.mem = dst, .size = total + 100, .step = steps[k], .nstep = 3};
		CHECK_EQ(vol_iov_write_all(iov, N, 50, fake_write, &f), 0);
		CHECK(memcmp(dst + 50, src, total) == 0);
		CHECK(f.max_parts <= VOL_IOV_BATCH);
		if (k == 3) /* all it is given each time: a call a batch */
			CHECK_EQ(f.calls, (nonempty + VOL_IOV_BATCH - 1) / VOL_IOV_BATCH);
	}
	/* Nothing at all to write: no call. */
	struct fake f0 = {.mem = dst, .size = total, .step = steps[0], .nstep = 3};
	uint64_t z[2] = {0, 0};
	struct iovec *iz = parts(src, z, 2);
	CHECK_EQ(vol_iov_write_all(iz, 2, 0, fake_write, &f0), 0);
	CHECK_EQ(f0.calls, 0);
	free(iz);
	free(iov);
	free(dst);
	free(src);
}

/* An error part-way ends the loop with it, what came before written; a
 * writer that makes no progress, or says it wrote more than it was
 * given, is an I/O error, not a loop forever or a skip. */
static void test_errors(void)
{
	uint64_t len[4] = {3000, 5000, 4096, 100}, total = 12196;
	char *src = malloc(total), *dst = calloc(1, total);
	struct iovec *iov = parts(src, len, 4);
	const uint64_t step[1] = {4000};

	fill(src, total, 2);
	struct fake f = {
	    .mem = dst, .size = total, .step = step, .nstep = 1, .fail_at = 3, .fail_errno = -EIO};
	CHECK_EQ(vol_iov_write_all(iov, 4, 0, fake_write, &f), -EIO);
	CHECK_EQ(f.calls, 3);
	CHECK(memcmp(dst, src, 8000) == 0);
	for (uint64_t i = 8000; i < total; i++)
		if (dst[i]) {
			CHECK(!"a byte after the failed call was written");
			break;
		}
	f = (struct fake){.mem = dst,
	                  .size = total,
	                  .step = step,
	                  .nstep = 1,
	                  .fail_at = 2,
	                  .fail_errno = -ENOSPC};
	CHECK_EQ(vol_iov_write_all(iov, 4, 0, fake_write, &f), -ENOSPC);
	const uint64_t none[1] = {0};
	f = (struct fake){.mem = dst, .size = total, .step = none, .nstep = 1};
	CHECK_EQ(vol_iov_write_all(iov, 4, 0, fake_write, &f), -EIO);
	CHECK_EQ(f.calls, 1);
	const uint64_t all[1] = {UINT64_MAX};
	f = (struct fake){.mem = dst, .size = total, .step = all, .nstep = 1, .lie = 1};
	CHECK_EQ(vol_iov_write_all(iov, 4, 0, fake_write, &f), -EIO);
	free(iov);
	free(dst);
	free(src);
}

/* spec's member written by vol_writev from parts at odd addresses reads
 * back as the parts joined; FUA too. */
static void writev_reads_back(const char *spec, uint64_t off)
{
	struct vol *v = NULL;
	uint64_t len[5] = {4096, 8192, 512, 3584, 4096}, total = 20480;
	char *src = malloc(total + 1), *back = vol_buf_alloc(total);
	struct iovec *iov = parts(src + 1, len, 5);

	fill(src, total + 1, 3);
	CHECK_EQ(member_open(spec, 0, &v), 0);
	if (!v)
		goto out;
	CHECK_EQ(vol_writev(v, iov, 5, off, 0), 0);
	CHECK_EQ(vol_read(v, back, total, off), 0);
	CHECK(memcmp(back, src + 1, total) == 0);
	fill(src, total + 1, 4);
	CHECK_EQ(vol_writev(v, iov, 5, off, VOL_FUA), 0);
	CHECK_EQ(vol_read(v, back, total, off), 0);
	CHECK(memcmp(back, src + 1, total) == 0);
	vol_close(v);
out:
	free(iov);
	free(back);
	free(src);
}

static void test_members(const char *dir)
{
	char path[128], spec[160];

	snprintf(path, sizeof(path), "%s/f.img", dir);
	int fd = open(path, O_CREAT | O_RDWR, 0600);
	CHECK(fd >= 0 && ftruncate(fd, 1 << 20) == 0);
	close(fd);
	writev_reads_back(path, 65536);
	snprintf(spec, sizeof(spec), "sim:ssd:%s", path);
	writev_reads_back(spec, 4096);
	writev_reads_back("mem:1M", 8192);
	writev_reads_back("fault:chance=0:mem:1M", 0); /* no op: the copy */

	/* A slice passes it on at its offset. */
	struct vol *m = NULL, *s = NULL;
	char src[8192], back[8192];
	fill(src, sizeof(src), 5);
	CHECK_EQ(member_open("mem:1M", 0, &m), 0);
	CHECK_EQ(slice_open(m, 65536, 65536, true, "slice", &s), 0);
	uint64_t len[2] = {1000, 7192};
	struct iovec *iov = parts(src, len, 2);
	CHECK_EQ(vol_writev(s, iov, 2, 4096, 0), 0);
	CHECK_EQ(vol_read(m, back, sizeof(back), 65536 + 4096), 0);
	CHECK(memcmp(back, src, sizeof(src)) == 0);
	/* The edge: past the end, a total that overflows, read-only. */
	CHECK_EQ(vol_writev(s, iov, 2, 65536 - 4096, 0), -EINVAL);
	struct iovec big[2] = {{src, SIZE_MAX}, {src, 2}};
	CHECK_EQ(vol_writev(s, big, 2, 0, 0), -EINVAL);
	s->caps |= VOL_CAP_READONLY;
	CHECK_EQ(vol_writev(s, iov, 2, 0, 0), -EROFS);
	free(iov);
	vol_close(s);
}

/* The copy fallback in pieces of block_max: every piece is written in
 * order, and a failure part-way returns it with the pieces before it on
 * the member and none after. */
static void test_copy_fallback(void)
{
	struct vol *v = NULL;
	enum { TOTAL = 256 << 10 };
	uint64_t len[3] = {100 << 10, 100 << 10, 56 << 10};
	char *src = malloc(TOTAL), *back = malloc(TOTAL);
	struct iovec *iov = parts(src, len, 3);

	fill(src, TOTAL, 6);
	CHECK_EQ(member_open("fault:after=2,mode=write:mem:1M", 0, &v), 0);
	if (!v)
		goto out;
	v->block_max = 64 << 10;
	CHECK_EQ(vol_writev(v, iov, 3, 0, 0), -EIO);
	v->block_max = 32 << 20;
	vol_close(v);
	CHECK_EQ(member_open("fault:chance=0:mem:1M", 0, &v), 0);
	v->block_max = 64 << 10;
	CHECK_EQ(vol_writev(v, iov, 3, 4096, VOL_FUA), 0);
	CHECK_EQ(vol_read(v, back, TOTAL, 4096), 0);
	CHECK(memcmp(back, src, TOTAL) == 0);
	vol_close(v);
out:
	free(iov);
	free(back);
	free(src);
}

/* The pieces before a failure are on the member: a fault member failing
 * its third write leaves the first two pieces there (vol.h's rule allows
 * any state, but the fallback writes in order and stops). */
static void test_copy_stops(void)
{
	struct vol *v = NULL;
	enum { TOTAL = 256 << 10 };
	char *src = malloc(TOTAL), *back = calloc(1, TOTAL);
	struct iovec two[2] = {{src, 4096}, {src + 4096, TOTAL - 4096}};

	fill(src, TOTAL, 8);
	CHECK_EQ(member_open("fault:after=2,mode=write:mem:1M", 0, &v), 0);
	if (!v)
		goto out;
	v->block_max = 64 << 10;
	CHECK_EQ(vol_writev(v, two, 2, 0, 0), -EIO);
	/* reads pass (mode=write): the first 128 KiB are the new data */
	CHECK_EQ(vol_read(v, back, TOTAL, 0), 0);
	CHECK(memcmp(back, src, 128 << 10) == 0);
	for (unsigned i = 128 << 10; i < TOTAL; i++)
		if (back[i]) {
			CHECK(!"a piece after the failed write was written");
			break;
		}
	vol_close(v);
out:
	free(back);
	free(src);
}

int main(void)
{
	char dir[64];

	if (check_tmpdir(dir, sizeof(dir), "writev") < 0)
		return 1;
	test_short_writes();
	test_errors();
	test_members(dir);
	test_copy_fallback();
	test_copy_stops();
	char cmd[96];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		return 1;
	return check_done();
}
