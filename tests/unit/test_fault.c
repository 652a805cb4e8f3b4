/* test_fault.c — the fault member: EIO by range, by count and by chance,
 * limited by mode; killing and reviving at run time; op counts.  Power-cut
 * mode (crash=GROUP) over member files, which the test reads behind the
 * crash member's back to see what reached the "platter". */
#include "check.h"

#include "core/log.h"
#include "member/member.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[64];

static const char *img(int i)
{
	static char p[4][96];
	snprintf(p[i], sizeof(p[i]), "%s/c%d.img", dir, i);
	return p[i];
}

/* A zeroed image i of 1 MiB. */
static void img_blank(int i)
{
	int fd = open(img(i), O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0 && ftruncate(fd, 1 << 20) == 0);
	close(fd);
}

/* What image i holds at [off, off+len), read without any fault layer. */
static void img_read(int i, void *buf, uint64_t len, uint64_t off)
{
	int fd = open(img(i), O_RDONLY);
	CHECK(fd >= 0 && pread(fd, buf, len, (off_t)off) == (ssize_t)len);
	close(fd);
}

/* Open "fault:OPTS:image i". */
static struct vol *crash_open(const char *opts, int i)
{
	char spec[256];
	struct vol *v = NULL;

	snprintf(spec, sizeof(spec), "fault:%s:%s", opts, img(i));
	CHECK_EQ(member_open(spec, 0, &v), 0);
	return v;
}

/* Held writes are read back, reach the image only at a flush; FUA ones at
 * once; zeroings are held too. */
static void test_crash_hold(void)
{
	char a[4096], b[4096], got[4096];
	struct vol *v;

	memset(a, 0xa1, sizeof(a));
	memset(b, 0xb2, sizeof(b));
	img_blank(0);
	v = crash_open("crash=hold", 0);
	CHECK_EQ(vol_write(v, a, 4096, 8192, 0), 0);
	CHECK_EQ(vol_read(v, got, 4096, 8192), 0);
	CHECK(memcmp(got, a, 4096) == 0);
	img_read(0, got, 4096, 8192);
	CHECK(got[0] == 0 && got[4095] == 0); /* not yet on the image */
	CHECK_EQ(vol_flush(v), 0);
	img_read(0, got, 4096, 8192);
	CHECK(memcmp(got, a, 4096) == 0);

	CHECK_EQ(vol_write(v, b, 4096, 0, VOL_FUA), 0);
	img_read(0, got, 4096, 0);
	CHECK(memcmp(got, b, 4096) == 0);

	CHECK_EQ(vol_write_zeroes(v, 4096, 8192, 0), 0);
	CHECK_EQ(vol_read(v, got, 4096, 8192), 0);
	CHECK(got[0] == 0 && got[4095] == 0);
	img_read(0, got, 4096, 8192);
	CHECK(memcmp(got, a, 4096) == 0);
	CHECK_EQ(vol_flush(v), 0);
	img_read(0, got, 4096, 8192);
	CHECK(got[0] == 0 && got[4095] == 0);

	/* Closed with the power on: what it holds reaches the image. */
	CHECK_EQ(vol_write(v, a, 4096, 16384, 0), 0);
	vol_close(v);
	img_read(0, got, 4096, 16384);
	CHECK(memcmp(got, a, 4096) == 0);
}

/* hold=16k: the write that would hold more makes the oldest durable, down
 * to half (8k) held. */
static void test_crash_bound(void)
{
	char a[4096], got[4096];
	struct vol *v;

	img_blank(0);
	v = crash_open("crash=bound,hold=16k", 0);
	for (int i = 0; i < 5; i++) {
		memset(a, 0x10 + i, sizeof(a));
		CHECK_EQ(vol_write(v, a, 4096, (uint64_t)i * 4096, 0), 0);
		img_read(0, got, 4096, 0);
		CHECK(got[0] == (i < 4 ? 0 : 0x10)); /* 16k may be held */
	}
	img_read(0, got, 4096, 4096);
	CHECK(got[0] == 0x11 && got[4095] == 0x11);
	img_read(0, got, 4096, 8192);
	CHECK(got[0] == 0); /* the newer ones are still held */
	CHECK_EQ(vol_read(v, got, 4096, 16384), 0);
	CHECK(got[0] == 0x14);
	vol_close(v);
}

#define CUT_WRITES 8

/* One power cut of image 0 after CUT_WRITES held 4 KiB writes, at 8 KiB
 * apart: what reached the image lands in out (CUT_WRITES * 8 KiB). */
static void crash_cut_once(unsigned long long seed, unsigned char *out)
{
	char opts[64], a[4096];
	struct vol *v;

	img_blank(0);
	snprintf(opts, sizeof(opts), "crash=cut,seed=%llu", seed);
	v = crash_open(opts, 0);
	for (int i = 0; i < CUT_WRITES; i++) {
		memset(a, 0x40 + i, sizeof(a));
		CHECK_EQ(vol_write(v, a, 4096, (uint64_t)i * 8192, 0), 0);
	}
	CHECK_EQ(fault_power_cut("cut"), 0);
	CHECK_EQ(vol_read(v, a, 512, 0), -EIO);
	CHECK_EQ(vol_write(v, a, 512, 0, 0), -EIO);
	CHECK_EQ(vol_flush(v), -EIO);
	vol_close(v);
	CHECK_EQ(fault_power_cut("cut"), -ENOENT); /* gone with its last member */
	img_read(0, out, CUT_WRITES * 8192, 0);
}

/* Over seeds, held writes are kept, dropped and torn (sector-wise); the
 * same seed gives the same bytes. */
static void test_crash_fates(void)
{
	static unsigned char got[CUT_WRITES * 8192], again[CUT_WRITES * 8192];
	unsigned kept = 0, dropped = 0, torn = 0;

	for (unsigned long long seed = 0; seed < 16; seed++) {
		crash_cut_once(seed, got);
		for (int i = 0; i < CUT_WRITES; i++) {
			unsigned landed = 0;
			for (int s = 0; s < 8; s++) {
				unsigned char *p = got + i * 8192 + s * 512;
				landed += p[0] == 0x40 + i;
				CHECK(p[0] == 0 || p[0] == 0x40 + i);
				CHECK(p[0] == p[511]); /* whole sectors */
			}
			kept += landed == 8;
			dropped += landed == 0;
			torn += landed > 0 && landed < 8;
		}
	}
	fprintf(stderr, "crash fates over 16 seeds: %u kept, %u dropped, %u torn\n", kept, dropped,
	        torn);
	CHECK(kept > 0);
	CHECK(dropped > 0);
	CHECK(torn > 0);
	crash_cut_once(7, got);
	crash_cut_once(7, again);
	CHECK(memcmp(got, again, sizeof(got)) == 0);
}

/* A FUA write survives a cut even where an older held write covers it. */
static void test_crash_fua(void)
{
	char a[4096], b[4096], got[4096];

	memset(a, 0xaa, sizeof(a));
	memset(b, 0xbb, sizeof(b));
	for (unsigned long long seed = 0; seed < 8; seed++) {
		char opts[64];
		img_blank(0);
		snprintf(opts, sizeof(opts), "crash=fua,seed=%llu", seed);
		struct vol *v = crash_open(opts, 0);
		CHECK_EQ(vol_write(v, a, 4096, 0, 0), 0);
		CHECK_EQ(vol_write(v, b, 4096, 0, VOL_FUA), 0);
		CHECK_EQ(fault_power_cut("fua"), 0);
		vol_close(v);
		img_read(0, got, 4096, 0);
		CHECK(memcmp(got, b, 4096) == 0);
	}
}

/* cut-after=3 across two members: the third write cuts the group and
 * fails, and so does everything after it on either member. */
static void test_crash_cut_after(void)
{
	char a[4096] = {1};
	struct vol *v0, *v1, *bad = NULL;

	img_blank(0);
	img_blank(1);
	v0 = crash_open("crash=ca,cut-after=3", 0);
	v1 = crash_open("crash=ca", 1);
	CHECK_EQ(vol_write(v0, a, 4096, 0, 0), 0);
	CHECK_EQ(vol_write(v1, a, 4096, 0, 0), 0);
	CHECK_EQ(vol_read(v1, a, 4096, 0), 0);
	CHECK_EQ(vol_write(v0, a, 4096, 4096, 0), -EIO);
	CHECK_EQ(vol_write(v1, a, 4096, 4096, 0), -EIO);
	CHECK_EQ(vol_read(v0, a, 4096, 0), -EIO);
	CHECK_EQ(vol_read(v1, a, 4096, 0), -EIO);
	/* a member that disagrees on the group's cut-after is refused */
	char spec[256];
	img_blank(2);
	snprintf(spec, sizeof(spec), "fault:crash=ca,cut-after=4:%s", img(2));
	CHECK_EQ(member_open(spec, 0, &bad), -EINVAL);
	vol_close(v0);
	vol_close(v1);
	CHECK_EQ(fault_power_cut("ca"), -ENOENT);
	CHECK_EQ(fault_power_cut("never"), -ENOENT);
}

int main(void)
{
	struct vol *v;
	struct fault_counts c;
	char buf[8192] = {0};

	log_verbosity = -1;
	CHECK_EQ(member_open("fault:eio=64k+4k/1M+512:mem:2M", 0, &v), 0);
	CHECK_EQ(vol_read(v, buf, 4096, 0), 0);
	CHECK_EQ(vol_read(v, buf, 4096, 62 * 1024), -EIO); /* overlaps 64k */
	CHECK_EQ(vol_write(v, buf, 512, 68 * 1024, 0), 0); /* just past it */
	CHECK_EQ(vol_write(v, buf, 1024, (1 << 20) - 512, 0), -EIO);
	CHECK_EQ(vol_flush(v), 0);
	CHECK_EQ(fault_member_counts(v, &c), 0);
	CHECK_EQ(c.reads, 2);
	CHECK_EQ(c.writes, 2);
	CHECK_EQ(c.flushes, 1);
	CHECK_EQ(fault_member_kill(v, true), 0);
	CHECK_EQ(vol_read(v, buf, 512, 0), -EIO);
	CHECK_EQ(vol_flush(v), -EIO);
	CHECK_EQ(vol_trim(v, 512, 0, 0), -EIO);
	CHECK_EQ(fault_member_kill(v, false), 0);
	CHECK_EQ(vol_read(v, buf, 512, 0), 0);
	vol_close(v);

	/* after=N counts ops; mode=write spares reads. */
	CHECK_EQ(member_open("fault:after=2,mode=write:mem:1M", 0, &v), 0);
	CHECK_EQ(vol_write(v, buf, 512, 0, 0), 0);
	CHECK_EQ(vol_write(v, buf, 512, 0, 0), 0);
	CHECK_EQ(vol_write(v, buf, 512, 0, 0), -EIO);
	CHECK_EQ(vol_read(v, buf, 512, 0), 0);
	CHECK_EQ(vol_write_zeroes(v, 512, 0, 0), -EIO);
	vol_close(v);

	/* after=N counts only the ops mode= names: the reads a stack makes
	 * opening the member (superblock, signatures) do not bring a
	 * mode=write failure nearer. */
	CHECK_EQ(member_open("fault:after=2,mode=write:mem:1M", 0, &v), 0);
	for (int i = 0; i < 3; i++)
		CHECK_EQ(vol_read(v, buf, 512, 0), 0);
	CHECK_EQ(vol_write(v, buf, 512, 0, 0), 0);
	CHECK_EQ(vol_write(v, buf, 512, 0, 0), 0);
	CHECK_EQ(vol_write(v, buf, 512, 0, 0), -EIO);
	vol_close(v);
	CHECK_EQ(member_open("fault:after=1,mode=read:mem:1M", 0, &v), 0);
	CHECK_EQ(vol_write(v, buf, 512, 0, 0), 0);
	CHECK_EQ(vol_read(v, buf, 512, 0), 0);
	CHECK_EQ(vol_read(v, buf, 512, 0), -EIO);
	vol_close(v);

	/* chance=1 always fails, chance=0 never; mode=read spares writes. */
	CHECK_EQ(member_open("fault:chance=1,mode=read:mem:1M", 0, &v), 0);
	CHECK_EQ(vol_read(v, buf, 512, 0), -EIO);
	CHECK_EQ(vol_write(v, buf, 512, 0, 0), 0);
	vol_close(v);
	CHECK_EQ(member_open("fault:chance=0:mem:1M", 0, &v), 0);
	for (int i = 0; i < 100; i++)
		CHECK_EQ(vol_read(v, buf, 512, 0), 0);
	vol_close(v);

	/* Not a fault vol; bad specs. */
	CHECK_EQ(member_open("mem:1M", 0, &v), 0);
	CHECK_EQ(fault_member_kill(v, true), -EINVAL);
	vol_close(v);
	CHECK_EQ(member_open("fault:eio=12:mem:1M", 0, &v), -EINVAL);
	CHECK_EQ(member_open("fault:chance=2:mem:1M", 0, &v), -EINVAL);
	CHECK_EQ(member_open("fault:mode=sideways:mem:1M", 0, &v), -EINVAL);
	CHECK_EQ(member_open("fault:after=1", 0, &v), -EINVAL);
	CHECK_EQ(member_open("fault:seed=1:mem:1M", 0, &v), -EINVAL);
	CHECK_EQ(member_open("fault:crash=g,cut-after=0:mem:1M", 0, &v), -EINVAL);
	CHECK_EQ(member_open("fault:crash=:mem:1M", 0, &v), -EINVAL);

	snprintf(dir, sizeof(dir), "/tmp/uraid-fault-XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_crash_hold();
	test_crash_bound();
	test_crash_fates();
	test_crash_fua();
	test_crash_cut_after();
	for (int i = 0; i < 3; i++)
		unlink(img(i));
	rmdir(dir);
	return check_done();
}
