/* test_md_assemble.c — `uraid create` then assembly from the members, per
 * level: data written through the array reads back after reassembly with
 * the members in another order; read-only and refused assemblies change no
 * byte of any member; stale, missing, foreign, damaged and truncated
 * members get a clear answer; a failing member is recorded as faulty in
 * the survivors; an array of arrays assembles. */
#include "check.h"
#include "member_files.h"

#include "cli/cli.h"
#include "stack/stack.h"
#include "core/log.h"
#include "md/md.h"
#include "member/member.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MEMBER_SIZE (8u << 20)

/* Blank members 0 .. n-1 (member_files.h). */
static void make_members(int n)
{
	for (int i = 0; i < n; i++)
		member_file_make(i, MEMBER_SIZE);
}

/* Assemble the members order[0..n) into exactly one vol. */
static int assemble(const int *order, int n, bool ro, bool degraded, struct vol **out)
{
	struct md_assemble_opts o = {.readonly = ro, .run_degraded = degraded};
	struct vol *m[8], **res;
	int nres, r;

	for (int i = 0; i < n; i++) {
		r = member_open(path(order[i]), ro ? MEMBER_READONLY : 0, &m[i]);
		if (r < 0) {
			while (i--)
				vol_close(m[i]);
			return r;
		}
	}
	err_clear();
	r = md_assemble_all(m, n, &o, &res, &nres);
	if (r < 0)
		return r;
	if (nres != 1) {
		for (int i = 0; i < nres; i++)
			vol_close(res[i]);
		free(res);
		return -E2BIG;
	}
	*out = res[0];
	free(res);
	return 0;
}

static void pattern(uint8_t *buf, uint64_t len, unsigned long long seed)
{
	for (uint64_t i = 0; i < len; i += 8) {
		uint64_t v = check_rand(&seed);
		memcpy(buf + i, &v, 8);
	}
}

/* Fill v with a seeded pattern, or check that it holds it. */
static int fill_or_check(struct vol *v, uint64_t seed, bool check)
{
	const uint64_t piece = 192 << 10; /* straddles chunks */
	uint8_t *want = malloc(piece), *got = malloc(piece);
	int bad = 0;

	for (uint64_t off = 0; off < v->size && !bad; off += piece) {
		uint64_t len = v->size - off < piece ? v->size - off : piece;
		pattern(want, piece, seed + off);
		if (!check) {
			bad = vol_write(v, want, len, off, 0) != 0;
		} else {
			bad = vol_read(v, got, len, off) != 0 || memcmp(want, got, len) != 0;
		}
	}
	free(want);
	free(got);
	return bad ? -1 : 0;
}

static void read_sb(int i, struct md_super *s)
{
	struct vol *m;
	CHECK_EQ(member_open(path(i), MEMBER_READONLY, &m), 0);
	CHECK_EQ(md_super_read(m, s), 0);
	vol_close(m);
}

static void test_level(const char *name, int n, uint64_t want_size, const char *a1, const char *a2)
{
	int fwd[8], rev[8];
	struct vol *v;
	struct md_super s;

	fprintf(stderr, "level %s on %d members\n", name, n);
	make_members(n);
	for (int i = 0; i < n; i++)
		fwd[i] = i, rev[i] = n - 1 - i;
	if (n == 2)
		CHECK_EQ(create(a1, a2, path(0), path(1), NULL), 0);
	else if (n == 3)
		CHECK_EQ(create(a1, a2, path(0), path(1), path(2), NULL), 0);
	else
		CHECK_EQ(create(a1, a2, path(0), path(1), path(2), path(3), NULL), 0);
	read_sb(0, &s);
	CHECK(md_super_clean(&s));

	CHECK_EQ(assemble(fwd, n, false, false, &v), 0);
	if (!v)
		return;
	CHECK_EQ(v->size, want_size);
	CHECK_EQ(fill_or_check(v, 1234, false), 0);
	read_sb(n - 1, &s); /* active while open */
	CHECK(!md_super_clean(&s));
	vol_close(v);
	v = NULL;
	for (int i = 0; i < n; i++) {
		read_sb(i, &s);
		CHECK(md_super_clean(&s));
		CHECK_EQ(s.events, 2);
	}
	CHECK_EQ(assemble(rev, n, true, false, &v), 0);
	if (v) {
		CHECK_EQ(fill_or_check(v, 1234, true), 0);
		vol_close(v);
	}
}

static void test_levels(void)
{
	/* 8 MiB members: data at 1 MiB, or 2 MiB with 512K chunks */
	const uint64_t mib = 1 << 20;
	test_level("raid1", 2, 7 * mib, "--level=1", "--name=t");
	test_level("raid0", 3, 3 * 7 * mib, "--level=0", "--chunk=64");
	test_level("raid10 n2", 4, 2 * 7 * mib, "--level=10", "--chunk=64");
	test_level("raid10 f2", 4, 2 * 6 * mib, "--level=10", "--layout=f2");
	test_level("raid10 o2", 3, 3 * 6 * mib / 2, "--level=10", "--layout=o2");
	test_level("linear", 3, 3 * 7 * mib, "--level=linear", "--name=lin");
}

/* Read-only assembly and every refused assembly write nothing. */
static void test_readonly_and_refusals(void)
{
	int all[3] = {0, 1, 2}, two[2] = {0, 1}, swap[3] = {2, 0, 1};
	uint64_t h[3];
	struct vol *v = NULL;
	struct md_super s;
	uint8_t buf[4096] = {0};

	make_members(3);
	CHECK_EQ(create("--level=1", "--assume-clean", path(0), path(1), path(2), NULL), 0);
	for (int i = 0; i < 3; i++)
		h[i] = file_hash(i);

	CHECK_EQ(assemble(swap, 3, true, false, &v), 0);
	if (v) {
		CHECK_EQ(vol_write(v, buf, sizeof(buf), 0, 0), -EROFS);
		CHECK_EQ(fill_or_check(v, 1, true), -1); /* zeros, not pattern */
		vol_close(v);
		v = NULL;
	}
	/* raid1 without one member: refused unless --degraded */
	CHECK_EQ(assemble(two, 2, false, false, &v), -ENODEV);
	CHECK(strstr(err_detail(-ENODEV), "--degraded") != NULL);
	for (int i = 0; i < 3; i++)
		CHECK(h[i] == file_hash(i));

	/* degraded start, written: the absent member becomes stale */
	CHECK_EQ(assemble(two, 2, false, true, &v), 0);
	if (v) {
		CHECK_EQ(fill_or_check(v, 77, false), 0);
		vol_close(v);
		v = NULL;
	}
	CHECK(h[2] == file_hash(2));
	read_sb(0, &s);
	CHECK_EQ(s.roles[2], MD_ROLE_FAULTY);
	CHECK(md_super_clean(&s));
	/* all three again: the stale one is left out, known degraded */
	CHECK_EQ(assemble(all, 3, true, false, &v), 0);
	if (v) {
		CHECK_EQ(fill_or_check(v, 77, true), 0);
		vol_close(v);
		v = NULL;
	}
	/* ...and alone it is an array missing members it knows of */
	int only2[1] = {2};
	CHECK_EQ(assemble(only2, 1, true, false, &v), -ENODEV);
}

static void test_bad_members(void)
{
	int r0[3] = {0, 1, 2}, r0short[2] = {0, 2};
	uint64_t h[4];
	struct vol *v = NULL;
	struct stack_opts so = {0};
	char *specs[4];

	/* raid0 cannot run without a member */
	make_members(3);
	CHECK_EQ(create("--level=0", path(0), path(1), path(2), NULL), 0);
	CHECK_EQ(assemble(r0short, 2, false, true, &v), -ENODEV);
	CHECK(strstr(err_detail(-ENODEV), "needs all 3") != NULL);

	/* a damaged checksum */
	for (int i = 0; i < 3; i++)
		h[i] = file_hash(i);
	{
		int fd = open(path(1), O_RDWR);
		uint8_t b;
		CHECK(pread(fd, &b, 1, MD_SB_OFFSET + 200) == 1);
		b ^= 0x40;
		CHECK(pwrite(fd, &b, 1, MD_SB_OFFSET + 200) == 1);
		close(fd);
		h[1] = file_hash(1);
	}
	CHECK_EQ(assemble(r0, 3, false, false, &v), -EUCLEAN);
	CHECK(strstr(err_detail(-EUCLEAN), "checksum") != NULL);
	for (int i = 0; i < 3; i++)
		CHECK(h[i] == file_hash(i));

	/* a truncated member */
	make_members(2);
	CHECK_EQ(create("--level=1", "--assume-clean", path(0), path(1), NULL), 0);
	CHECK_EQ(truncate(path(1), MEMBER_SIZE - (1 << 20)), 0);
	h[0] = file_hash(0);
	h[1] = file_hash(1);
	CHECK_EQ(assemble(r0, 2, false, false, &v), -EUCLEAN);
	CHECK(strstr(err_detail(-EUCLEAN), "truncated") != NULL);
	CHECK(h[0] == file_hash(0) && h[1] == file_hash(1));

	/* the freshest superblock is a spare's: it decides, then is left out */
	make_members(2);
	CHECK_EQ(create("--level=1", "--assume-clean", path(0), path(1), NULL), 0);
	{
		struct vol *m;
		struct md_super s;
		CHECK_EQ(member_open(path(1), 0, &m), 0);
		CHECK_EQ(md_super_read(m, &s), 0);
		s.roles[1] = MD_ROLE_SPARE;
		s.events = 5;
		CHECK_EQ(md_super_write(m, &s), 0);
		vol_close(m);
	}
	CHECK_EQ(assemble(r0, 2, true, true, &v), -ENODEV);

	/* members of two arrays given for one export */
	make_members(4);
	CHECK_EQ(create("--level=1", "--assume-clean", path(0), path(1), NULL), 0);
	CHECK_EQ(create("--level=1", "--assume-clean", path(2), path(3), NULL), 0);
	for (int i = 0; i < 4; i++) {
		h[i] = file_hash(i);
		specs[i] = (char *)path(i);
	}
	err_clear();
	CHECK_EQ(stack_open(specs, 4, &so, &v), -EINVAL);
	CHECK(strstr(err_detail(-EINVAL), "separate volumes") != NULL);
	for (int i = 0; i < 4; i++)
		CHECK(h[i] == file_hash(i));

	/* create refuses members that hold something, writing nothing */
	CHECK(create("--level=1", path(0), path(1), NULL) != 0);
	CHECK(h[0] == file_hash(0) && h[1] == file_hash(1));
}

/* A member failing under a write is recorded as faulty in the survivor. */
static void test_member_failure(void)
{
	char spec[160];
	int both[2] = {0, 1};
	struct vol *m[2], **res = NULL, *v = NULL;
	struct md_assemble_opts o = {0};
	struct md_super s;
	int nres = 0;
	uint8_t buf[65536];

	make_members(2);
	CHECK_EQ(create("--level=1", "--assume-clean", path(0), path(1), NULL), 0);
	/* member data starts at 1 MiB: array offset 3 MiB is member 4 MiB */
	snprintf(spec, sizeof(spec), "fault:eio=4M+64k,mode=write:%s", path(1));
	CHECK_EQ(member_open(path(0), 0, &m[0]), 0);
	CHECK_EQ(member_open(spec, 0, &m[1]), 0);
	CHECK_EQ(md_assemble_all(m, 2, &o, &res, &nres), 0);
	CHECK_EQ(nres, 1);
	if (nres == 1) {
		memset(buf, 0x5a, sizeof(buf));
		CHECK_EQ(vol_write(res[0], buf, sizeof(buf), 3 << 20, 0), 0);
		vol_close(res[0]);
	}
	free(res);
	read_sb(0, &s);
	CHECK_EQ(s.roles[1], MD_ROLE_FAULTY);
	CHECK(md_super_clean(&s));
	/* reassembled: member 1 is left out, the array runs degraded */
	CHECK_EQ(assemble(both, 2, true, false, &v), 0);
	if (v) {
		uint8_t got[65536];
		CHECK_EQ(vol_read(v, got, sizeof(got), 3 << 20), 0);
		CHECK(memcmp(got, buf, sizeof(buf)) == 0);
		vol_close(v);
	}
}

/* A member failure that no superblock could record is not acknowledged:
 * member 0 fails under the write, and member 1, the survivor, takes data
 * but no superblock write after the first (md holds the write until the
 * failure is recorded; recorded nowhere, reassembly would bring the
 * failed member's stale copy back). */
static void test_member_failure_unrecorded(void)
{
	char spec[2][160];
	struct vol *m[2], **res = NULL;
	struct md_assemble_opts o = {0};
	int nres = 0;
	uint8_t buf[65536];

	make_members(2);
	CHECK_EQ(create("--level=1", "--assume-clean", path(0), path(1), NULL), 0);
	/* data at 1 MiB: array offset 3 MiB is member offset 4 MiB */
	snprintf(spec[0], sizeof(spec[0]), "fault:eio=4M+64k,mode=write:%s", path(0));
	snprintf(spec[1], sizeof(spec[1]), "fault:eio=4k+4k,mode=write:%s", path(1));
	for (int i = 0; i < 2; i++)
		CHECK_EQ(member_open(spec[i], 0, &m[i]), 0);
	CHECK_EQ(md_assemble_all(m, 2, &o, &res, &nres), 0);
	CHECK_EQ(nres, 1);
	if (nres == 1) {
		memset(buf, 0x3c, sizeof(buf));
		CHECK_EQ(vol_write(res[0], buf, sizeof(buf), 0, 0), 0); /* marks it active */
		CHECK(vol_write(res[0], buf, sizeof(buf), 3 << 20, 0) < 0);
		CHECK(vol_flush(res[0]) < 0);
		vol_close(res[0]);
	}
	free(res);
}

/* A member that refuses a write with what reads as a request error
 * (EINVAL, ENOMEM, ENOTSUP, EROFS) after the other members took it is out
 * of step with them: it fails as it would for EIO, so that the array is
 * never marked clean with copies or parity that differ.  When every member
 * refuses it the request was bad: the client gets the error, and no member
 * fails. */
static void test_member_request_error(void)
{
	static const struct {
		const char *name;
		int err;
	} errs[] = {
	    {"EINVAL", -EINVAL}, {"ENOMEM", -ENOMEM}, {"ENOTSUP", -ENOTSUP}, {"EROFS", -EROFS}};
	/* Member data starts at 1 MiB (RAID1) or 2 MiB (RAID5, 512K chunks):
	 * 1 MiB at array offset 3 MiB is one full RAID5 row. */
	const uint64_t at = 3 << 20, len = 1 << 20;
	static uint8_t buf[1 << 20];
	struct vol *m[3], **res = NULL;
	struct md_assemble_opts o = {0};
	struct md_super s;
	char spec[3][200];
	int nres = 0;

	memset(buf, 0x6b, sizeof(buf));
	for (unsigned e = 0; e < sizeof(errs) / sizeof(errs[0]); e++) {
		for (int level = 1; level <= 5; level += 4) {
			int n = level == 1 ? 2 : 3, bad = n - 1;

			fprintf(stderr, "raid%d, member %d refusing writes with %s\n", level, bad,
			        errs[e].name);
			make_members(n);
			if (level == 1)
				CHECK_EQ(
				    create("--level=1", "--assume-clean", path(0), path(1), NULL),
				    0);
			else
				CHECK_EQ(create("--level=5", "--assume-clean", "--chunk=512",
				                path(0), path(1), path(2), NULL),
				         0);
			for (int i = 0; i < n; i++) {
				snprintf(spec[i], sizeof(spec[i]),
				         "fault:eio=%s,mode=write,errno=%s:%s",
				         level == 1 ? "1M+7M" : "2M+6M", errs[e].name, path(i));
				CHECK_EQ(member_open(i == bad ? spec[i] : path(i), 0, &m[i]), 0);
			}
			CHECK_EQ(md_assemble_all(m, n, &o, &res, &nres), 0);
			CHECK_EQ(nres, 1);
			if (nres == 1) {
				CHECK_EQ(vol_write(res[0], buf, len, at, 0), 0);
				vol_close(res[0]);
			}
			free(res);
			read_sb(0, &s);
			CHECK_EQ(s.roles[bad], MD_ROLE_FAULTY);
		}

		fprintf(stderr, "raid1, both members refusing writes with %s\n", errs[e].name);
		make_members(2);
		CHECK_EQ(create("--level=1", "--assume-clean", path(0), path(1), NULL), 0);
		for (int i = 0; i < 2; i++) {
			snprintf(spec[i], sizeof(spec[i]), "fault:eio=1M+7M,mode=write,errno=%s:%s",
			         errs[e].name, path(i));
			CHECK_EQ(member_open(spec[i], 0, &m[i]), 0);
		}
		CHECK_EQ(md_assemble_all(m, 2, &o, &res, &nres), 0);
		CHECK_EQ(nres, 1);
		if (nres == 1) {
			CHECK_EQ(vol_write(res[0], buf, len, at, 0), errs[e].err);
			vol_close(res[0]);
		}
		free(res);
		read_sb(0, &s);
		CHECK(s.roles[0] == 0 && s.roles[1] == 1);
		CHECK(md_super_clean(&s));
	}
}

/* An array found unclean (mirrors may differ) is resynced at a writable
 * start, and left alone by a read-only one. */
static void test_unclean(void)
{
	int both[2] = {0, 1};
	struct vol *m, *v = NULL;
	struct md_super s;
	static uint8_t d0[7 << 20], d1[7 << 20];
	uint64_t h0, h1;
	int fd;

	make_members(2);
	CHECK_EQ(create("--level=1", "--assume-clean", path(0), path(1), NULL), 0);
	memset(d1, 0xab, 65536);
	fd = open(path(1), O_WRONLY);
	CHECK(pwrite(fd, d1, 65536, (1 << 20) + 8192) == 65536);
	close(fd);
	for (int i = 0; i < 2; i++) {
		CHECK_EQ(member_open(path(i), 0, &m), 0);
		CHECK_EQ(md_super_read(m, &s), 0);
		s.resync_offset = 0;
		CHECK_EQ(md_super_write(m, &s), 0);
		vol_close(m);
	}
	h0 = file_hash(0);
	h1 = file_hash(1);
	CHECK_EQ(assemble(both, 2, true, false, &v), 0);
	vol_close(v);
	v = NULL;
	CHECK(h0 == file_hash(0) && h1 == file_hash(1));

	CHECK_EQ(assemble(both, 2, false, false, &v), 0);
	vol_close(v);
	read_sb(0, &s);
	CHECK(md_super_clean(&s));
	fd = open(path(0), O_RDONLY);
	CHECK(pread(fd, d0, sizeof(d0), 1 << 20) == (ssize_t)sizeof(d0));
	close(fd);
	fd = open(path(1), O_RDONLY);
	CHECK(pread(fd, d1, sizeof(d1), 1 << 20) == (ssize_t)sizeof(d1));
	close(fd);
	CHECK(memcmp(d0, d1, sizeof(d0)) == 0);
}

/* md's write hole: a RAID5 found unclean while a member is missing or
 * being rebuilt is refused writable unless forced (naming the write
 * hole), writing nothing; read-only it starts; a RAID1 so found starts. */
static void test_dirty_degraded(void)
{
	int all[3] = {0, 1, 2};
	struct vol *m, *v = NULL, **res;
	struct md_super s;
	uint64_t h[3];
	int nres;

	for (int rebuilding = 0; rebuilding < 2; rebuilding++) {
		fprintf(stderr, "dirty raid5 with a member %s\n",
		        rebuilding ? "being rebuilt" : "missing");
		make_members(3);
		CHECK_EQ(create("--level=5", "--assume-clean", path(0), path(1), path(2), NULL), 0);
		for (int i = 0; i < 3; i++) {
			CHECK_EQ(member_open(path(i), 0, &m), 0);
			CHECK_EQ(md_super_read(m, &s), 0);
			s.resync_offset = 0;
			if (rebuilding && i == 2) {
				s.feature_map |= MD_FEATURE_RECOVERY_OFFSET;
				s.recovery_offset = 2048;
			}
			CHECK_EQ(md_super_write(m, &s), 0);
			vol_close(m);
		}
		for (int i = 0; i < 3; i++)
			h[i] = file_hash(i);
		/* missing: member 2 not given (--degraded); rebuilding: all given */
		int r = assemble(all, rebuilding ? 3 : 2, false, true, &v);
		CHECK_EQ(r, -EUCLEAN);
		CHECK(strstr(err_detail(-EUCLEAN), "write hole") != NULL);
		if (r == 0)
			vol_close(v);
		for (int i = 0; i < 3; i++)
			CHECK(h[i] == file_hash(i));
		CHECK_EQ(assemble(all, rebuilding ? 3 : 2, true, true, &v), 0);
		vol_close(v);
		v = NULL;
		for (int i = 0; i < 3; i++)
			CHECK(h[i] == file_hash(i));
		/* forced */
		struct md_assemble_opts o = {.run_degraded = true, .start_dirty_degraded = true};
		struct vol *mm[3];
		for (int i = 0; i < (rebuilding ? 3 : 2); i++)
			CHECK_EQ(member_open(path(i), 0, &mm[i]), 0);
		CHECK_EQ(md_assemble_all(mm, rebuilding ? 3 : 2, &o, &res, &nres), 0);
		for (int i = 0; i < nres; i++)
			vol_close(res[i]);
		free(res);
	}

	fprintf(stderr, "dirty raid1 with a member missing\n");
	make_members(2);
	CHECK_EQ(create("--level=1", "--assume-clean", path(0), path(1), NULL), 0);
	CHECK_EQ(member_open(path(0), 0, &m), 0);
	CHECK_EQ(md_super_read(m, &s), 0);
	s.resync_offset = 0;
	CHECK_EQ(md_super_write(m, &s), 0);
	vol_close(m);
	CHECK_EQ(assemble(all, 1, false, true, &v), 0);
	vol_close(v);
	read_sb(0, &s);
	CHECK(md_super_clean(&s));
}

/* RAID0 over two RAID1 arrays: the outer superblocks live in the inner
 * arrays' data; written here the way create writes them. */
static void test_nested(void)
{
	int a[2] = {0, 1}, b[2] = {2, 3}, all[4] = {3, 1, 2, 0};
	struct vol *inner[2] = {NULL, NULL}, *v = NULL;
	struct md_super s;

	make_members(4);
	CHECK_EQ(create("--level=1", "--assume-clean", "--name=in0", path(0), path(1), NULL), 0);
	CHECK_EQ(create("--level=1", "--assume-clean", "--name=in1", path(2), path(3), NULL), 0);
	CHECK_EQ(assemble(a, 2, false, false, &inner[0]), 0);
	CHECK_EQ(assemble(b, 2, false, false, &inner[1]), 0);
	if (!inner[0] || !inner[1])
		return;
	memset(&s, 0, sizeof(s));
	memset(s.set_uuid, 0x77, 16);
	strcpy(s.set_name, "outer");
	s.level = 0;
	s.layout = MD_RAID0_ORIG_LAYOUT;
	s.chunk = 128;
	s.raid_disks = 2;
	s.super_offset = MD_SB_SECTOR;
	s.data_offset = 2048;
	s.resync_offset = MD_MAX_SECTOR;
	s.max_dev = 128;
	for (unsigned i = 0; i < MD_SB_MAX_DEV; i++)
		s.roles[i] = i < 2 ? i : MD_ROLE_SPARE;
	for (unsigned i = 0; i < 2; i++) {
		s.dev_number = i;
		s.data_size = inner[i]->size / 512 - 2048;
		memset(s.device_uuid, (int)i + 1, 16);
		memset(s.raw, 0, sizeof(s.raw));
		CHECK_EQ(md_super_write(inner[i], &s), 0);
		vol_close(inner[i]);
	}
	CHECK_EQ(assemble(all, 4, false, false, &v), 0);
	if (!v)
		return;
	CHECK(strcmp(v->name, "md/outer") == 0);
	CHECK_EQ(v->size, 2 * (7u << 20) - 2 * (1u << 20));
	CHECK_EQ(fill_or_check(v, 9, false), 0);
	CHECK_EQ(fill_or_check(v, 9, true), 0);
	vol_close(v);
}

int main(void)
{
	if (check_tmpdir(dir, sizeof(dir), "md") < 0)
		return 1;
	log_verbosity = LOG_WARN;
	test_levels();
	test_readonly_and_refusals();
	test_bad_members();
	test_member_failure();
	test_member_request_error();
	test_member_failure_unrecorded();
	test_unclean();
	test_dirty_degraded();
	test_nested();
	for (int i = 0; i < 8; i++)
		unlink(path(i));
	rmdir(dir);
	return check_done();
}
