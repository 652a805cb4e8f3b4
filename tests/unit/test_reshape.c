/* test_reshape.c — md arrays with a reshape under way (md_reshape.h),
 * made here by hand: a RAID5/6 whose superblocks record a reshape (the
 * fields as the kernel writes them), its data laid out in the old
 * geometry above reshape_position and in the new one below it (or the
 * other way round, backwards); assembly must read the whole array back,
 * for several device counts, chunks and layouts.  Bad reshape records
 * (a position past the end or off a stripe boundary, a delta_disks the
 * roles do not fit, a level change) are refused with a clear message and
 * no byte of any member changes.  Writable, md_reshape_run() continues
 * each forwards one, stopped part-way and again to the end: the data
 * reads the same throughout and the parity of the result agrees; and
 * with clients writing and reading at random beside the move, the array
 * ends as their flat reference; power cut at points spread over a run,
 * it reads the same (the crash rule under the run's overlap).
 * The kernel's own half-done reshapes: tests/sh/md-kernel-reshape.sh. */
#include "check.h"
#include "member_files.h"

#include "core/log.h"
#include "disc/raid/raid.h"
#include "disc/slice.h"
#include "md/md.h"
#include "md/md_reshape.h"
#include "member/member.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MEMBER_SIZE (4u << 20)
#define SHIFT (512u << 10) /* bytes between the old and the new data area */

/* The byte at array offset off of the pattern of seed. */
static void pattern(uint8_t *buf, uint64_t len, uint64_t off, unsigned seed)
{
	for (uint64_t i = 0; i < len; i++) {
		uint64_t x = (off + i) / 8 * 0x9e3779b97f4a7c15ull + seed;
		buf[i] = (uint8_t)(x >> (8 * ((off + i) % 8)));
	}
}

/* A reshape to record: level, devices before and after, chunks (KiB),
 * layouts, where (in stripes of the new geometry), which way. */
struct shape {
	int level;
	unsigned from_disks, to_disks;
	uint32_t from_chunk, to_chunk;
	uint32_t from_layout, to_layout;
	unsigned stripes;
	bool backwards;
};

/* One geometry's RAID vol over members [0, g->raid_disks) at data offset
 * off (sectors, the same on each), written with the pattern over array
 * bytes [lo, hi). */
static void fill(const struct raid_geom *g, uint64_t off, uint64_t len, uint64_t lo, uint64_t hi,
                 unsigned seed)
{
	struct vol *m[8], *sl[8], *arr;
	uint8_t *buf = malloc(1 << 16);

	for (unsigned i = 0; i < g->raid_disks; i++) {
		CHECK_EQ(member_open(path((int)i), 0, &m[i]), 0);
		CHECK_EQ(slice_open(m[i], off * 512, len, true, path((int)i), &sl[i]), 0);
	}
	CHECK_EQ(raid_open(g, sl, NULL, "fill", &arr), 0);
	CHECK(hi <= arr->size);
	for (uint64_t a = lo; a < hi; a += 1 << 16) {
		uint64_t n = hi - a < (1 << 16) ? hi - a : (1 << 16);
		pattern(buf, n, a, seed);
		CHECK_EQ(vol_write(arr, buf, n, a, 0), 0);
	}
	CHECK_EQ(vol_flush(arr), 0);
	vol_close(arr);
	free(buf);
}

/* Make the array of shape s on members 0 .. to_disks-1 (or from_disks,
 * for a shrink): created by md_create with the old geometry, data in
 * both, superblocks recording the reshape (edit may change them after).
 * Returns the array bytes served. */
static uint64_t make(const struct shape *s, unsigned seed, void (*edit)(struct md_super *))
{
	unsigned n = s->to_disks > s->from_disks ? s->to_disks : s->from_disks;
	char level[16], chunk[32], layout[32], nl[32];
	struct md_super sb[8];
	struct vol *v;
	uint64_t size, pos, end, lo, hi;

	for (unsigned i = 0; i < n; i++)
		member_file_make((int)i, MEMBER_SIZE);
	snprintf(chunk, sizeof(chunk), "--chunk=%u", s->from_chunk);
	snprintf(layout, sizeof(layout), "--layout=%s",
	         md_layout_name(s->level, s->from_layout, nl, sizeof(nl)));
	snprintf(level, sizeof(level), "--level=%d", s->level);
	CHECK_EQ(create(level, chunk, layout, "--assume-clean", path(0), path(1), path(2), path(3),
	                n > 4 ? path(4) : NULL, n > 5 ? path(5) : NULL, NULL),
	         0);
	for (unsigned i = 0; i < n; i++) {
		CHECK_EQ(member_open(path((int)i), 0, &v), 0);
		CHECK_EQ(md_super_read(v, &sb[i]), 0);
		vol_close(v);
	}
	/* Room for the area to move: the used size less SHIFT, in chunks. */
	uint64_t big = (s->from_chunk > s->to_chunk ? s->from_chunk : s->to_chunk) * 2;
	size = (sb[0].data_size - SHIFT / 512) / big * big;
	uint64_t data_end = sb[0].data_offset + sb[0].data_size;
	uint64_t old_off = sb[0].data_offset + (s->backwards ? 0 : SHIFT / 512);
	uint64_t new_off = sb[0].data_offset + (s->backwards ? SHIFT / 512 : 0);
	struct raid_geom from = {s->level, s->from_layout, s->from_chunk * 1024, s->from_disks,
	                         size * 512};
	struct raid_geom to = {s->level, s->to_layout, s->to_chunk * 1024, s->to_disks, size * 512};
	uint64_t old_size = md_reshape_geom_size(&from, size * 512, big * 512);
	uint64_t new_size = md_reshape_geom_size(&to, size * 512, big * 512);
	end = old_size < new_size ? old_size : new_size;
	/* raid5/6: whole stripes of the new geometry; raid10 stops at any
	 * page (a chunk and a page here, off every row). */
	pos = s->level == 10
	          ? (uint64_t)s->stripes * big * 512 + 4096
	          : (uint64_t)s->stripes * big * 512 * (s->to_disks - md_level_parity(s->level));
	CHECK(pos < end);
	/* The old geometry everywhere first, then the new one where the
	 * reshape has moved the data: the areas are SHIFT apart, far enough
	 * that the new writes touch no old byte still in use. */
	fill(&from, old_off, (data_end - old_off) * 512, 0, end, seed);
	lo = s->backwards ? pos : 0;
	hi = s->backwards ? end : pos;
	fill(&to, new_off, (data_end - new_off) * 512, lo, hi, seed);
	for (unsigned i = 0; i < n; i++) {
		sb[i].feature_map |= MD_FEATURE_RESHAPE_ACTIVE | MD_FEATURE_NEW_OFFSET |
		                     (s->backwards ? MD_FEATURE_RESHAPE_BACKWARDS : 0);
		sb[i].data_offset = old_off;
		sb[i].data_size = data_end - old_off;
		sb[i].new_offset = (int32_t)new_off - (int32_t)old_off;
		sb[i].size = size;
		sb[i].raid_disks = s->to_disks;
		sb[i].delta_disks = (int32_t)s->to_disks - (int32_t)s->from_disks;
		sb[i].chunk = s->from_chunk * 2;
		sb[i].new_chunk = s->to_chunk * 2;
		sb[i].layout = s->from_layout;
		sb[i].new_layout = s->to_layout;
		sb[i].new_level = s->level;
		sb[i].reshape_position = pos / 512;
		for (unsigned k = 0; k < n; k++)
			sb[i].roles[k] = (uint16_t)k;
		if (edit)
			edit(&sb[i]);
		CHECK_EQ(member_open(path((int)i), 0, &v), 0);
		CHECK_EQ(md_super_write(v, &sb[i]), 0);
		vol_close(v);
	}
	return end;
}

/* Assemble members 0 .. n-1 as one array: 0 or -errno. */
static int assemble(unsigned n, bool ro, struct vol **out)
{
	struct md_assemble_opts o = {.readonly = ro, .no_reshape = true};
	struct vol *m[8];

	for (unsigned i = 0; i < n; i++)
		CHECK_EQ(member_open(path((int)i), ro ? MEMBER_READONLY : 0, &m[i]), 0);
	err_clear();
	return md_assemble_one(m, n, &o, out);
}

/* Whether array v reads the pattern of seed over its first size bytes. */
static bool reads_pattern_upto(struct vol *v, uint64_t size, unsigned seed)
{
	uint8_t *got = malloc(96 << 10), *want = malloc(96 << 10);
	bool ok = v->size >= size;

	/* 96 KiB requests: most straddle stripes and some the position. */
	for (uint64_t a = 0; ok && a < size; a += 96 << 10) {
		uint64_t n = size - a < (96 << 10) ? size - a : (96 << 10);
		pattern(want, n, a, seed);
		ok = vol_read(v, got, n, a) == 0 && memcmp(got, want, n) == 0;
		if (!ok)
			fprintf(stderr, "reshape: wrong bytes at %llu\n", (unsigned long long)a);
	}
	free(got);
	free(want);
	return ok;
}

/* Whether array v is size bytes and reads the pattern of seed. */
static bool reads_pattern(struct vol *v, uint64_t size, unsigned seed)
{
	return v->size == size && reads_pattern_upto(v, size, seed);
}

/* Continue the reshape of shape s (n members, size array bytes of
 * pattern seed) writable: stopped a third of the way on, reassembled
 * (it reads the same), then to the end; the array then records the new
 * geometry alone, reads the pattern (zeros past the old end) and its
 * parity agrees. */
static void continue_reshape(const struct shape *s, unsigned n, uint64_t size, unsigned seed)
{
	struct md_reshape_run_opts o = {0};
	struct raid_check_report rep;
	bool finished = true;
	struct vol *v;
	uint8_t *buf = malloc(1 << 16);
	int r;

	o.stop_at = size / 3;
	CHECK_EQ(assemble(n, false, &v), 0);
	CHECK_EQ(md_reshape_run(v, &o, &finished), 0);
	CHECK(!finished);
	vol_close(v);
	CHECK_EQ(assemble(n, true, &v), 0);
	CHECK(reads_pattern(v, size, seed));
	vol_close(v);
	o.stop_at = 0;
	CHECK_EQ(assemble(n, false, &v), 0);
	r = md_reshape_run(v, &o, &finished);
	if (r < 0)
		fprintf(stderr, "reshape run: %s\n", err_detail(r));
	CHECK_EQ(r, 0);
	CHECK(finished);
	vol_close(v);
	CHECK_EQ(assemble(n, true, &v), 0);
	CHECK(strcmp(md_array_raid(v)->ops->kind, "md-reshape") != 0);
	if (s->to_disks > s->from_disks)
		CHECK(v->size > size);
	else
		CHECK_EQ(v->size, size);
	CHECK(reads_pattern_upto(v, size, seed));
	for (uint64_t a = size; a < v->size; a += 1 << 16) {
		uint64_t len = v->size - a < (1 << 16) ? v->size - a : (1 << 16);
		CHECK_EQ(vol_read(v, buf, len, a), 0);
		for (uint64_t k = 0; k < len; k++)
			if (buf[k]) {
				CHECK(buf[k] == 0);
				break;
			}
	}
	CHECK_EQ(raid_check(md_array_raid(v), false, &rep, NULL), 0);
	CHECK_EQ(rep.mismatched, 0);
	vol_close(v);
	/* Shrunk: the roles past the new count are spares. */
	for (unsigned i = s->to_disks; i < s->from_disks; i++) {
		struct md_super sb;
		CHECK_EQ(member_open(path((int)i), MEMBER_READONLY, &v), 0);
		CHECK_EQ(md_super_read(v, &sb), 0);
		CHECK_EQ(md_super_role(&sb), MD_ROLE_SPARE);
		vol_close(v);
	}
	free(buf);
}

static void test_reads(void)
{
	const struct shape shapes[] = {
	    {5, 3, 4, 64, 64, 2, 2, 3, false},  /* the common grow: one disk added */
	    {5, 3, 5, 32, 32, 0, 0, 1, false},  /* two added, left-asymmetric */
	    {6, 4, 5, 64, 64, 2, 2, 2, false},  /* raid6 grow */
	    {5, 4, 4, 64, 16, 2, 2, 5, false},  /* chunk change, no disk */
	    {5, 4, 4, 32, 32, 2, 1, 4, false},  /* layout change */
	    {5, 4, 3, 64, 64, 2, 2, 4, true},   /* a shrink, backwards */
	    {6, 5, 5, 64, 64, 18, 2, 3, false}, /* raid6 left-symmetric-6 -> left-symmetric */
	    /* raid10 near layouts (0x102: n2, 0x103: n3): grows, a chunk
	     * change, a shrink */
	    {10, 4, 5, 64, 64, 0x102, 0x102, 3, false},
	    {10, 3, 5, 32, 32, 0x102, 0x102, 5, false},
	    {10, 4, 6, 64, 64, 0x103, 0x103, 2, false},
	    {10, 4, 4, 64, 16, 0x102, 0x102, 4, false},
	    {10, 5, 4, 64, 64, 0x102, 0x102, 3, true},
	    /* raid10 offset layouts (0x10201: o2, 0x10301: o3): md reshapes
	     * those too, each device row far copies deep */
	    {10, 4, 5, 64, 64, 0x10201, 0x10201, 3, false},
	    {10, 3, 6, 32, 32, 0x10301, 0x10301, 2, false},
	    {10, 4, 4, 64, 32, 0x10201, 0x10201, 4, false},
	    {10, 5, 4, 32, 32, 0x10201, 0x10201, 3, true},
	};

	for (unsigned i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		const struct shape *s = &shapes[i];
		unsigned n = s->to_disks > s->from_disks ? s->to_disks : s->from_disks;
		uint64_t size = make(s, i + 1, NULL);
		uint64_t h0 = file_hash(0);
		struct vol *v;
		int r = assemble(n, true, &v);
		if (r < 0)
			fprintf(stderr, "reshape %u: %s\n", i, err_detail(r));
		CHECK_EQ(r, 0);
		if (r == 0) {
			if (!reads_pattern(v, size, i + 1)) {
				fprintf(stderr,
				        "reshape %u: raid%d %u -> %u disks, chunk %u -> %u\n", i,
				        s->level, s->from_disks, s->to_disks, s->from_chunk,
				        s->to_chunk);
				CHECK(false);
			}
			char blk[4096] = {0};
			CHECK(vol_write(v, blk, sizeof(blk), 0, 0) < 0);
			vol_close(v);
		}
		CHECK_EQ(file_hash(0), h0);
		continue_reshape(s, n, size, i + 1);
	}
}

/* The kernel records a shrink without RESHAPE_BACKWARDS: super_1_sync
 * sets that bit only when delta_disks is 0, fewer devices being
 * backwards by themselves (super_1_validate reads it so).  Such an array
 * reads right and continues. */
static void no_backwards_bit(struct md_super *s)
{
	s->feature_map &= ~MD_FEATURE_RESHAPE_BACKWARDS;
}

static void test_kernel_shrink(void)
{
	const struct shape s = {5, 4, 3, 64, 64, 2, 2, 4, true};
	uint64_t size = make(&s, 11, no_backwards_bit);
	struct vol *v;

	CHECK_EQ(assemble(4, true, &v), 0);
	CHECK(reads_pattern(v, size, 11));
	vol_close(v);
	continue_reshape(&s, 4, size, 11);
}

/* The crash rule under the run's overlap (a window read ahead while the
 * one before it is written and the position recorded): a forwards grow
 * whose data offset moved by SHIFT, so that the rule binds and records
 * come often, moved one stripe a window on crash members (fault.c's
 * power-cut mode) whose power is cut at the cut'th write across them,
 * for cuts spread over the whole run.  After each cut the array, the
 * plain files reassembled, reads the pattern everywhere: no write ever
 * landed on old bytes a restart from the recorded position still needs. */
static void test_crash_rule(void)
{
	const struct shape s = {5, 3, 4, 64, 64, 2, 2, 1, false};
	struct md_assemble_opts ao = {.no_reshape = true};
	unsigned cuts = 0;

	/* Write-behind off: it engages when the members measure slow (a
	 * loaded machine), and then the run takes fewer member writes, so
	 * that it ended before the sixth cut (3 of 5 runs at load 5-7).  Its
	 * writes reach the crash members all the same before each record's
	 * flush: the rule under test is where the windows write. */
	setenv("URAID_WB_MODE", "-1", 1);
	for (unsigned cut = 3;; cut += 23) {
		uint64_t size = make(&s, 13, NULL);
		struct md_reshape_run_opts o = {.window = 1};
		struct vol *m[4], *v;
		bool finished = false;
		char spec[256];

		for (unsigned i = 0; i < 4; i++) {
			snprintf(spec, sizeof(spec), "fault:crash=rule%u,seed=%u,cut-after=%u:%s",
			         cut, cut, cut, path((int)i));
			CHECK_EQ(member_open(spec, 0, &m[i]), 0);
		}
		err_clear();
		CHECK_EQ(md_assemble_one(m, 4, &ao, &v), 0);
		log_verbosity = LOG_ERROR; /* the failures the cut makes are expected */
		int r = md_reshape_run(v, &o, &finished);
		vol_close(v);
		log_verbosity = LOG_WARN;
		if (r == 0)
			break; /* the run ended before the cut */
		cuts++;
		log_verbosity = LOG_ERROR; /* "not shut down cleanly; resyncing" */
		CHECK_EQ(assemble(4, false, &v), 0);
		log_verbosity = LOG_WARN;
		if (!reads_pattern(v, size, 13)) {
			fprintf(stderr, "reshape: after a power cut at write %u\n", cut);
			CHECK(false);
		}
		vol_close(v);
	}
	printf("  crash rule: %u power cuts, each reassembled and read\n", cuts);
	unsetenv("URAID_WB_MODE");
	CHECK(cuts > 5);
}

/* The writes that reached crash members m[0..n) so far, across them. */
static uint64_t group_writes(struct vol **m, unsigned n)
{
	struct fault_counts c;
	uint64_t w = 0;

	for (unsigned i = 0; i < n; i++) {
		CHECK_EQ(fault_member_counts(m[i], &c), 0);
		w += c.writes + c.zeroes;
	}
	return w;
}

/* Run the reshape of s (made afresh, pattern seed) to its end on crash
 * members whose power is cut at the cut'th write across them (0: never);
 * the writes made until the run returned. */
static uint64_t run_cut(const struct shape *s, unsigned n, unsigned seed, uint64_t cut)
{
	struct md_assemble_opts ao = {.no_reshape = true};
	struct md_reshape_run_opts o = {0};
	struct vol *m[8], *v;
	bool finished = false;
	char spec[256];
	uint64_t w;

	make(s, seed, NULL);
	for (unsigned i = 0; i < n; i++) {
		snprintf(spec, sizeof(spec), "fault:crash=torn%llu,cut-after=%llu:%s",
		         (unsigned long long)cut, (unsigned long long)(cut ? cut : 1ull << 40),
		         path((int)i));
		CHECK_EQ(member_open(spec, 0, &m[i]), 0);
	}
	err_clear();
	CHECK_EQ(md_assemble_one(m, n, &ao, &v), 0);
	log_verbosity = LOG_ERROR; /* the failures the cut makes are expected */
	int r = md_reshape_run(v, &o, &finished);
	w = group_writes(m, n);
	vol_close(v);
	log_verbosity = LOG_WARN;
	CHECK(cut || (r == 0 && finished));
	return w;
}

/* Members [0, n)'s superblocks: how many record a reshape, and whether
 * those that do are one event behind the rest (which record none). */
static unsigned count_lagging(unsigned n, bool *one_behind)
{
	struct md_super sb[8];
	uint64_t fresh = 0;
	unsigned lag = 0;
	struct vol *v;

	for (unsigned i = 0; i < n; i++) {
		CHECK_EQ(member_open(path((int)i), MEMBER_READONLY, &v), 0);
		CHECK_EQ(md_super_read(v, &sb[i]), 0);
		vol_close(v);
		if (sb[i].events > fresh)
			fresh = sb[i].events;
	}
	*one_behind = true;
	for (unsigned i = 0; i < n; i++) {
		bool rs = sb[i].feature_map & MD_FEATURE_RESHAPE_ACTIVE;
		lag += rs;
		*one_behind &= rs ? sb[i].events + 1 == fresh : sb[i].events == fresh;
	}
	return lag;
}

/* A power cut during the finish's superblock writes (md_reshape_finish:
 * one round, events + 1, member after member): the first k members hold
 * the finished geometry, the others the last record (the reshape at its
 * position, one event behind).  The data all lies in the new
 * geometry (flushed before the round): the array starts as the finished
 * one, the lagging members read at their new data offset, and reads the
 * pattern; a writable start writes them forward; the parity agrees. */
static void test_torn_finish(void)
{
	const struct shape shapes[] = {
	    {5, 3, 4, 64, 64, 2, 2, 1, false},          /* devices only: the geometry agrees */
	    {5, 4, 4, 64, 16, 2, 2, 5, false},          /* a chunk change */
	    {5, 4, 3, 64, 64, 2, 2, 4, true},           /* a shrink: role 3 a spare */
	    {10, 3, 5, 32, 32, 0x102, 0x102, 5, false}, /* raid10 near-2 */
	};

	/* Write-behind off: whether it engages depends on the members'
	 * measured speed, and with it how many writes the data takes; the
	 * count must be the same on every run for the cut to land in the
	 * finish (checked: count_lagging). */
	setenv("URAID_WB_MODE", "-1", 1);
	for (unsigned i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		const struct shape *s = &shapes[i];
		unsigned n = s->to_disks > s->from_disks ? s->to_disks : s->from_disks;
		unsigned seed = 40 + i;
		uint64_t size = make(s, seed, NULL), total = run_cut(s, n, seed, 0);
		/* The finish's writes are the last n: each member's superblock.
		 * None taken (k 0): the last record stands, below the end (the
		 * end itself is not recorded), and the run moves the rest again
		 * from the old copy, which the crash rule kept. */
		for (unsigned k = 0; k < n; k++) {
			/* Every k for the first shape; the first and the last
			 * lagging member for the others (the suite's time). */
			if (i > 0 && k != 1 && k != n - 1)
				continue;
			struct md_reshape_run_opts o = {0};
			struct raid_check_report rep;
			struct vol *v;
			bool one_behind, finished = false;
			uint64_t h[8];

			run_cut(s, n, seed, total - n + k + 1);
			CHECK_EQ(count_lagging(n, &one_behind), n - k);
			CHECK(one_behind || k == 0);
			for (unsigned j = 0; j < n; j++)
				h[j] = file_hash((int)j);
			int r = assemble(n, true, &v);
			if (r < 0)
				fprintf(stderr, "torn finish %u, %u of %u: %s\n", i, k, n,
				        err_detail(r));
			CHECK_EQ(r, 0);
			if (r < 0)
				continue;
			CHECK_EQ(strcmp(md_array_raid(v)->ops->kind, "md-reshape") != 0, k > 0);
			if (!reads_pattern_upto(v, size, seed)) {
				fprintf(stderr, "torn finish %u: %u of %u members finished\n", i, k,
				        n);
				CHECK(false);
			}
			vol_close(v);
			for (unsigned j = 0; j < n; j++)
				CHECK_EQ(file_hash((int)j), h[j]); /* read-only: nothing written */
			CHECK_EQ(assemble(n, false, &v), 0);
			if (k == 0) {
				CHECK_EQ(md_reshape_run(v, &o, &finished), 0);
				CHECK(finished);
			}
			vol_close(v);
			CHECK_EQ(count_lagging(n, &one_behind), 0);
			CHECK_EQ(assemble(n, true, &v), 0);
			CHECK(reads_pattern_upto(v, size, seed));
			CHECK_EQ(raid_check(md_array_raid(v), false, &rep, NULL), 0);
			CHECK_EQ(rep.mismatched, 0);
			vol_close(v);
		}
	}
	unsetenv("URAID_WB_MODE");
}

/* A member one event behind the finished ones whose own record cannot be
 * the finish's (a reshape to another chunk), or a reshape at the same
 * events as the finished ones: refused naming both members, nothing
 * written. */
static void test_torn_finish_refused(void)
{
	const struct shape s = {5, 3, 4, 64, 64, 2, 2, 1, false};
	struct md_super keep, sb;
	struct vol *v;
	bool one_behind;
	uint64_t h[4];

	setenv("URAID_WB_MODE", "-1", 1); /* the same writes each run (test_torn_finish) */
	run_cut(&s, 4, 50, run_cut(&s, 4, 50, 0) - 4 + 2); /* m0 finished, m1..m3 not */
	unsetenv("URAID_WB_MODE");
	CHECK_EQ(count_lagging(4, &one_behind), 3);
	CHECK(one_behind);
	CHECK_EQ(member_open(path(3), 0, &v), 0);
	CHECK_EQ(md_super_read(v, &keep), 0);
	vol_close(v);
	CHECK(keep.feature_map & MD_FEATURE_RESHAPE_ACTIVE);
	for (unsigned e = 0; e < 2; e++) {
		sb = keep;
		if (e == 0)
			sb.new_chunk = 64; /* 32 KiB: not the chunk m0 finished with */
		else
			sb.events++;
		CHECK_EQ(member_open(path(3), 0, &v), 0);
		CHECK_EQ(md_super_write(v, &sb), 0);
		vol_close(v);
		for (int i = 0; i < 4; i++)
			h[i] = file_hash(i);
		for (int ro = 1; ro >= 0; ro--) {
			int r = assemble(4, ro, &v);
			CHECK_EQ(r, -EINVAL);
			if (r == 0)
				vol_close(v);
			const char *msg = err_detail(r);
			CHECK(strstr(msg, path(3)) && strstr(msg, path(0)));
		}
		for (int i = 0; i < 4; i++)
			CHECK_EQ(file_hash(i), h[i]);
	}
}

struct run_arg {
	struct vol *v;
	int r;
	bool finished;
	atomic_bool done;
};

static void *run_thread(void *p)
{
	struct run_arg *ra = p;
	/* One stripe at a time: many windows, for clients to run into. */
	struct md_reshape_run_opts o = {.window = 1};

	ra->r = md_reshape_run(ra->v, &o, &ra->finished);
	atomic_store(&ra->done, true);
	return NULL;
}

/* Clients beside the move: random writes (and reads checked against a
 * flat reference) while md_reshape_run() moves the data in another
 * thread; afterwards the array, reassembled, is the reference. */
static void test_online(void)
{
	const struct shape s = {5, 3, 4, 8, 8, 2, 2, 1, false}; /* small stripes: many windows */
	uint64_t size = make(&s, 99, NULL);
	unsigned long long seed = check_seed(5);
	uint8_t *ref = malloc(size), *buf = malloc(256 << 10), *got = malloc(256 << 10);
	struct run_arg ra = {0};
	pthread_t t;
	unsigned writes = 0, during = 0;

	pattern(ref, size, 0, 99);
	CHECK_EQ(assemble(4, false, &ra.v), 0);
	CHECK_EQ(pthread_create(&t, NULL, run_thread, &ra), 0);
	while (writes < 400 || !atomic_load(&ra.done)) {
		uint64_t len = (check_rand(&seed) % 64 + 1) * 4096;
		uint64_t off = check_rand(&seed) % ((size - len) / 4096 + 1) * 4096;
		during += !atomic_load(&ra.done);
		if (check_rand(&seed) % 3) {
			for (uint64_t k = 0; k < len; k++)
				buf[k] = (uint8_t)check_rand(&seed);
			CHECK_EQ(vol_write(ra.v, buf, len, off, 0), 0);
			memcpy(ref + off, buf, len);
			writes++;
		} else {
			CHECK_EQ(vol_read(ra.v, got, len, off), 0);
			CHECK(memcmp(got, ref + off, len) == 0);
		}
	}
	pthread_join(t, NULL);
	CHECK_EQ(ra.r, 0);
	CHECK(ra.finished);
	CHECK(during > 0);
	vol_close(ra.v);
	CHECK_EQ(assemble(4, true, &ra.v), 0);
	for (uint64_t a = 0; a < size; a += 256 << 10) {
		uint64_t len = size - a < (256 << 10) ? size - a : (256 << 10);
		CHECK_EQ(vol_read(ra.v, got, len, a), 0);
		if (memcmp(got, ref + a, len) != 0) {
			fprintf(stderr, "online: wrong bytes at %llu\n", (unsigned long long)a);
			CHECK(false);
			break;
		}
	}
	vol_close(ra.v);
	free(ref);
	free(buf);
	free(got);
}

static void past_end(struct md_super *s)
{
	s->reshape_position = s->size * 8;
}
static void off_stripe(struct md_super *s)
{
	s->reshape_position += 128; /* 64 KiB: a chunk, not a stripe */
}
static void delta_too_big(struct md_super *s)
{
	s->delta_disks = 4; /* 5 devices now, 1 before */
}
static void delta_roles(struct md_super *s)
{
	s->delta_disks = 1; /* 4 devices now, 3 before: role 4 fits neither */
	s->raid_disks = 4;
}
static void level_change(struct md_super *s)
{
	s->new_level = 6;
}
static void nothing_changes(struct md_super *s)
{
	s->delta_disks = 0;
	s->raid_disks = 5;
}

static void r10_to_far(struct md_super *s)
{
	s->new_layout = 0x201; /* f2: md has no reshape to far copies */
}
static void r10_off_page(struct md_super *s)
{
	s->reshape_position += 1; /* a sector: md's raid10 moves whole pages */
}
static void r10_copies(struct md_super *s)
{
	s->delta_disks = 3; /* 5 devices now, 2 before: fewer than 3 copies */
	s->layout = s->new_layout = 0x103;
}

/* Assembly (read-only) of the n members refused with err and msg, no
 * member changed. */
static void refused(unsigned n, int err, const char *msg, const uint64_t *h, unsigned i)
{
	struct vol *v;
	int r = assemble(n, true, &v);

	CHECK_EQ(r, err);
	if (r == 0)
		vol_close(v);
	else if (!strstr(err_detail(r), msg) || !strstr(err_detail(r), "md/")) {
		fprintf(stderr, "refusal %u: '%s', want '%s'\n", i, err_detail(r), msg);
		CHECK(false);
	}
	for (unsigned k = 0; k < n; k++)
		CHECK_EQ(file_hash((int)k), h[k]);
}

/* Each bad record, on a raid5 or a raid10 grow: assembly (read-only)
 * fails with a message saying what is wrong, and no member changes. */
static void test_refusals(void)
{
	static const struct shape r5 = {5, 4, 5, 64, 64, 2, 2, 1, false};
	static const struct shape r10 = {10, 4, 5, 64, 64, 0x102, 0x102, 1, false};
	const struct {
		const struct shape *s;
		void (*edit)(struct md_super *);
		int err;
		const char *msg;
	} bad[] = {
	    {&r5, past_end, -EINVAL, "past the end"},
	    {&r5, off_stripe, -EINVAL, "not on a stripe boundary"},
	    {&r5, delta_too_big, -EINVAL, "does not match the roles"},
	    {&r5, delta_roles, -EINVAL, "does not match the roles"},
	    {&r5, level_change, -ENOTSUP, "from level 5 to level 6"},
	    {&r5, nothing_changes, -EINVAL, "changes nothing"},
	    {&r10, r10_to_far, -ENOTSUP, "near and offset layouts, keeping the layout"},
	    {&r10, r10_off_page, -EINVAL, "not on a page"},
	    {&r10, r10_copies, -EINVAL, "fewer than the 3 copies"},
	    {&r10, past_end, -EINVAL, "past the end"},
	};

	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t h[5];
		make(bad[i].s, 7 + i, bad[i].edit);
		for (int k = 0; k < 5; k++)
			h[k] = file_hash(k);
		refused(5, bad[i].err, bad[i].msg, h, i);
	}
}

/* md_reshape_restripe() on members [0, n) (+ news [n, n + nnew)) to t:
 * its result. */
static int restripe(unsigned n, unsigned nnew, const struct md_reshape_to *t)
{
	struct vol *vols[8];
	struct md_super *sbs[8];
	char *specs[8], *news[8];
	struct md_reshape_run_opts o = {.stop_at = 1};

	for (unsigned i = 0; i < n; i++) {
		specs[i] = (char *)path((int)i);
		sbs[i] = malloc(sizeof(*sbs[i]));
		CHECK_EQ(member_open(specs[i], 0, &vols[i]), 0);
		CHECK_EQ(md_super_read(vols[i], sbs[i]), 0);
	}
	for (unsigned i = 0; i < nnew; i++)
		news[i] = (char *)path((int)(n + i));
	err_clear();
	return md_reshape_restripe(specs, n, vols, sbs, 0, t, news, nnew, false, &o, NULL);
}

/* Starting a chunk or layout change or a shrink (md_reshape_restripe):
 * each request the kernel or mdadm would not take is refused with its
 * rule named, no member changed; one that changes nothing writes nothing either; a
 * good one starts (the superblocks record the new chunk and layout). */
static void test_start(void)
{
	const struct {
		struct md_reshape_to t;
		int err;
		const char *msg;
	} bad[] = {
	    {{.chunk = 96}, -EINVAL, "power of two"},                  /* 48 KiB */
	    {{.chunk = 4}, -EINVAL, "power of two"},                   /* 2 KiB */
	    {{.chunk = 2048}, -EINVAL, "not a multiple of chunksize"}, /* 1 MiB: size 2.5 MiB */
	    {{.chunk = 1024}, -ENOSPC, "too few to move it"},          /* 512 KiB: no room */
	    {{.layout_set = true, .layout = 16}, -EINVAL, "not one raid5 takes"},
	    {{.raid_disks = 3}, -EINVAL, "give --array-size (at most 5120K)"},
	    {{.raid_disks = 3, .array_size = 10240 + 128}, -ENOSPC, "does not fit in 3 devices"},
	    {{.raid_disks = 3, .array_size = 10240}, -ENOSPC, "too few to move the data up"},
	    {{.array_size = 8192}, -EINVAL, "goes with the --raid-devices that shrinks"},
	    {{.raid_disks = 1, .array_size = 128}, -EINVAL, "a raid5 needs at least 2"},
	    {{.raid_disks = 5}, -EINVAL, "takes 1 new members"},
	    {{.layout_set = true, .layout = 2, .chunk = 128}, 0, NULL}, /* no change */
	};
	uint64_t h[5];
	struct md_super sb;
	struct vol *v;

	/* 4 x 3.5 MiB, chunk 64 KiB: a data offset of 1 MiB, 2.5 MiB used. */
	for (int i = 0; i < 5; i++)
		member_file_make(i, 3584u << 10);
	CHECK_EQ(create("--level=5", "--chunk=64", "--assume-clean", path(0), path(1), path(2),
	                path(3), NULL),
	         0);
	for (int k = 0; k < 5; k++)
		h[k] = file_hash(k);
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = restripe(4, 0, &bad[i].t);
		CHECK_EQ(r, bad[i].err);
		if (bad[i].msg &&
		    (!strstr(err_detail(r), bad[i].msg) || !strstr(err_detail(r), "md/"))) {
			fprintf(stderr, "start refusal %u: '%s', want '%s'\n", i, err_detail(r),
			        bad[i].msg);
			CHECK(false);
		}
		for (int k = 0; k < 5; k++)
			CHECK_EQ(file_hash(k), h[k]);
	}
	const struct md_reshape_to good = {.layout_set = true, .layout = 0, .chunk = 32};
	CHECK_EQ(restripe(4, 0, &good), 0);
	CHECK_EQ(member_open(path(0), MEMBER_READONLY, &v), 0);
	CHECK_EQ(md_super_read(v, &sb), 0);
	vol_close(v);
	CHECK(sb.feature_map & MD_FEATURE_RESHAPE_ACTIVE);
	CHECK(sb.feature_map & MD_FEATURE_NEW_OFFSET);
	CHECK(!(sb.feature_map & MD_FEATURE_RESHAPE_BACKWARDS));
	CHECK_EQ(sb.new_chunk, 32);
	CHECK_EQ(sb.new_layout, 0);
	CHECK_EQ(sb.delta_disks, 0);
	CHECK(sb.new_offset < 0 && (uint32_t)-sb.new_offset % 128 == 0);
	CHECK(sb.reshape_position > 0);
}

/* A chunk change on members with no room before the data for it but
 * room after (each uses 1 MiB less than its data area holds): the data
 * offset moves up instead, a backwards reshape from the end, as mdadm
 * chooses (Grow.c set_new_data_offset: the side with more room); it runs
 * to the end, the data reads the same and the members record the new
 * chunk at the higher offset. */
static void test_start_backwards(void)
{
	const struct md_reshape_to t = {.chunk = 1024}; /* 512 KiB: 2 x 1016 sectors before */
	struct md_super sb;
	uint64_t off0 = 0, size = 0;
	struct vol *v;
	uint8_t *buf = malloc(1 << 16);

	for (int i = 0; i < 4; i++)
		member_file_make(i, 3584u << 10);
	CHECK_EQ(create("--level=5", "--chunk=64", "--assume-clean", path(0), path(1), path(2),
	                path(3), NULL),
	         0);
	for (int i = 0; i < 4; i++) {
		CHECK_EQ(member_open(path(i), 0, &v), 0);
		CHECK_EQ(md_super_read(v, &sb), 0);
		sb.size = (sb.data_size - 2048) / 1024 * 1024;
		off0 = sb.data_offset;
		CHECK_EQ(md_super_write(v, &sb), 0);
		vol_close(v);
	}
	CHECK_EQ(assemble(4, false, &v), 0);
	size = v->size;
	for (uint64_t a = 0; a < size; a += 1 << 16) {
		pattern(buf, 1 << 16, a, 23);
		CHECK_EQ(vol_write(v, buf, 1 << 16, a, 0), 0);
	}
	vol_close(v);
	int r = restripe(4, 0, &t);
	if (r < 0)
		fprintf(stderr, "backwards start: %s\n", err_detail(r));
	CHECK_EQ(r, 0);
	CHECK_EQ(member_open(path(0), MEMBER_READONLY, &v), 0);
	CHECK_EQ(md_super_read(v, &sb), 0);
	vol_close(v);
	CHECK(!(sb.feature_map & MD_FEATURE_RESHAPE));
	CHECK_EQ(sb.chunk, 1024);
	CHECK_EQ(sb.data_offset, off0 + 1024);
	CHECK_EQ(assemble(4, true, &v), 0);
	CHECK(reads_pattern(v, size, 23));
	vol_close(v);
	free(buf);
}

/* A raid10 reshape md or uraid does not make, refused with its rule before
 * anything is written: far copies (md's words), a layout change that
 * changes the copies or goes to far copies, a switch between near and
 * offset copies (md takes it, the kernel's reshape fails members). */
static void test_start10(void)
{
	const struct {
		const char *layout;
		struct md_reshape_to t;
		int err;
		const char *msg;
	} bad[] = {
	    {"--layout=f2", {.raid_disks = 5}, -ENOTSUP, "Cannot reshape RAID10 in far-mode"},
	    {"--layout=o2", {.layout_set = true, .layout = 0x102}, -ENOTSUP, "near and offset"},
	    {"--layout=n2", {.layout_set = true, .layout = 0x103}, -EINVAL, "number of copies"},
	    {"--layout=n2", {.layout_set = true, .layout = 0x201}, -ENOTSUP, "to far-mode"},
	    {"--layout=n2", {.layout_set = true, .layout = 0x10201}, -ENOTSUP, "near and offset"},
	};

	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t h[5];
		for (int k = 0; k < 5; k++)
			member_file_make(k, 3584u << 10);
		CHECK_EQ(create("--level=10", "--chunk=64", bad[i].layout, "--assume-clean",
		                path(0), path(1), path(2), path(3), NULL),
		         0);
		for (int k = 0; k < 5; k++)
			h[k] = file_hash(k);
		int r = restripe(4, bad[i].t.raid_disks ? 1 : 0, &bad[i].t);
		CHECK_EQ(r, bad[i].err);
		if (!strstr(err_detail(r), bad[i].msg)) {
			fprintf(stderr, "raid10 start refusal %u: '%s', want '%s'\n", i,
			        err_detail(r), bad[i].msg);
			CHECK(false);
		}
		for (int k = 0; k < 5; k++)
			CHECK_EQ(file_hash(k), h[k]);
	}
}

int main(void)
{
	if (check_tmpdir(dir, sizeof(dir), "reshape") < 0)
		return 1;
	log_verbosity = LOG_WARN;
	test_reads();
	test_kernel_shrink();
	test_crash_rule();
	test_torn_finish();
	test_torn_finish_refused();
	test_online();
	test_refusals();
	test_start();
	test_start_backwards();
	test_start10();
	for (int i = 0; i < 8; i++)
		unlink(path(i));
	rmdir(dir);
	return check_done();
}
