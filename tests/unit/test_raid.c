/* test_raid.c — the RAID levels against a flat in-memory oracle.
 *
 * Random reads, writes, trims, zeroes and flushes of random sizes and
 * alignments (in block units) over every level and raid10 layout, 2..8
 * members, chunks 4 KiB..1 MiB, blocks of 512 and 4096 bytes; then the same
 * with a member killed mid-run or missing from the start on the redundant
 * levels: the answers must not change, and member_failed must be reported
 * once for the killed member.  Then again with read-ahead forced on for
 * every read, in small pieces, so that streams, pieces invalidated by
 * writes and lanes meeting a dead member are all exercised; and with
 * write-behind forced on for every write (with read-ahead beside it), so
 * that reads of pieces not yet written, trims and flushes behind them, and
 * lanes writing to a dying member are too.  On RAID5/6 write-behind runs
 * with a member killed mid-run, missing from the start, and (RAID6) one
 * missing and another killed; the counts raid_wb_counts() keeps show that
 * whole stripes really went through the lanes and partial ones through
 * the direct path. */
#include "check.h"

#include "core/log.h"
#include "disc/raid/raid.h"
#include "disc/raid/raid_types.h"
#include "member/member.h"
#include "view_gather.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct cfg {
	int level;
	unsigned layout;
	unsigned disks;
	uint32_t chunk;
	uint32_t bs;
	bool unequal; /* members of different sizes (raid0, linear) */
};

/* MISS_KILL: role 0 missing from the start, and the victim killed. */
enum degrade { NONE, KILL, MISSING, MISS_KILL };

/* Stripes written whole by write-behind's lanes, and partial-stripe
 * ranges it handed to the direct path, over every parity array. */
static uint64_t wb_whole, wb_partial;

static void count_wb(struct vol *a)
{
	uint64_t whole, partial;
	raid_wb_counts(a, &whole, &partial);
	wb_whole += whole;
	wb_partial += partial;
}

struct events {
	atomic_int failed[16];
};

static void on_failed(void *ctx, unsigned role, int err)
{
	struct events *e = ctx;
	(void)err;
	atomic_fetch_add(&e->failed[role], 1);
}

static uint64_t member_size(const struct cfg *c, unsigned i)
{
	uint64_t s = 4 * (uint64_t)c->chunk;
	if (s < (1u << 20))
		s = 1u << 20;
	if (c->unequal)
		s += (uint64_t)i * 3 * c->chunk + (i % 2) * c->bs;
	return s;
}

/* Which role can die without losing data: the last one for raid1/raid10
 * (its copies always live elsewhere when copies > 1). */
static unsigned victim(const struct cfg *c)
{
	return c->disks - 1;
}

/* The bytes of check_rand's numbers, in order; a copy per 4 KiB, not per
 * number (under ASan each memcpy is checked: it was a tenth of the test). */
static void fill(unsigned char *p, uint64_t len, unsigned long long *seed)
{
	unsigned long long v[512];
	for (uint64_t i = 0; i < len; i += sizeof(v)) {
		uint64_t n = len - i < sizeof(v) ? len - i : sizeof(v);
		for (uint64_t k = 0; k < (n + 7) / 8; k++)
			v[k] = check_rand(seed);
		memcpy(p + i, v, n);
	}
}

static void run(const struct cfg *c, enum degrade d, bool ra, bool wb, unsigned long long seed)
{
	struct raid_geom g = {
	    .level = c->level, .layout = c->layout, .chunk = c->chunk, .raid_disks = c->disks};
	struct vol *members[16] = {0}, *a = NULL;
	struct events ev = {0};
	struct raid_events rev = {on_failed, &ev};
	unsigned char *ref = NULL, *buf = NULL;
	const unsigned nops = ra || wb ? 300 : 120;
	int r;

	for (unsigned i = 0; i < c->disks; i++) {
		char spec[64];
		struct vol *inner;
		snprintf(spec, sizeof(spec), "mem:%llu", (unsigned long long)member_size(c, i));
		CHECK(member_open(spec, 0, &inner) == 0);
		CHECK(fault_member_wrap(inner, "", &members[i]) == 0);
		members[i]->block_min = c->bs;
	}
	struct vol *victim_vol = members[victim(c)];
	if (d == MISSING) {
		vol_close(victim_vol);
		members[victim(c)] = NULL;
	}
	if (d == MISS_KILL) {
		vol_close(members[0]);
		members[0] = NULL;
	}
	bool kill = d == KILL || d == MISS_KILL;
	r = raid_open(&g, members, &rev, "test", &a);
	if (r < 0) {
		fprintf(stderr, "raid_open level %d layout 0x%x disks %u chunk %u: %s\n", c->level,
		        c->layout, c->disks, c->chunk, err_detail(r));
		CHECK(r == 0);
		return;
	}
	CHECK_EQ(a->block_min, c->bs);
	if (ra) {
		/* Too large a chunk for the test's read-ahead cap: -ENOTSUP. */
		r = raid_set_readahead(a, 1);
		if (!(r == 0 || (r == -ENOTSUP && c->chunk >= (1u << 20))))
			fprintf(stderr, "readahead level %d layout 0x%x disks %u chunk %u: %d\n",
			        c->level, c->layout, c->disks, c->chunk, r);
		CHECK(r == 0 || (r == -ENOTSUP && c->chunk >= (1u << 20)));
	}
	if (wb) {
		CHECK_EQ(raid_set_writebehind(a, 1), 0);
		CHECK(a->caps & VOL_CAP_FLUSH);
	}
	uint64_t size = a->size;
	ref = calloc(1, size);
	buf = malloc(1u << 21);
	uint64_t blocks = size / c->bs;
	uint64_t last_end = 0, wlast_end = 0;

	for (unsigned op = 0; op < nops; op++) {
		if (kill && op == nops / 2)
			fault_member_kill(victim_vol, true);
		unsigned kind = (unsigned)(check_rand(&seed) % 20);
		uint64_t maxb = (check_rand(&seed) % 2) ? 16 : (1u << 20) / c->bs;
		if (maxb > blocks)
			maxb = blocks;
		uint64_t nb = 1 + check_rand(&seed) % maxb;
		uint64_t ob = check_rand(&seed) % (blocks - nb + 1);
		uint64_t len = nb * c->bs, off = ob * c->bs;
		if (kind < 8) {
			/* Under read-ahead, often write just ahead of the stream,
			 * where pieces have been read ahead. */
			if (ra && kind < 4 && last_end + c->bs + len <= size)
				off = last_end + (kind % 2) * c->bs;
			/* Under write-behind, often continue the writes'
			 * stream, filling pieces across their ends. */
			if (wb && kind >= 4 && wlast_end + len <= size)
				off = wlast_end;
			wlast_end = off + len;
			fill(buf, len, &seed);
			r = vol_write(a, buf, len, off, kind == 0 ? VOL_FUA : 0);
			CHECK_EQ(r, 0);
			memcpy(ref + off, buf, len);
		} else if (kind < 15) {
			if (ra && kind < 12) {
				/* A stream: continue where the last read ended. */
				off = last_end + len <= size ? last_end : 0;
			}
			r = vol_read(a, buf, len, off);
			last_end = off + len;
			CHECK_EQ(r, 0);
			if (memcmp(ref + off, buf, len) != 0) {
				fprintf(stderr,
				        "mismatch level %d layout 0x%x disks %u chunk %u bs %u "
				        "degrade %d ra %d wb %d op %u off %llu len %llu\n",
				        c->level, c->layout, c->disks, c->chunk, c->bs, d, ra, wb,
				        op, (unsigned long long)off, (unsigned long long)len);
				CHECK(0);
			}
		} else if (kind < 17) {
			if (c->level >= 4 && c->level <= 6) {
				/* Parity levels do not trim. */
				CHECK_EQ(vol_trim(a, len, off, 0), -ENOTSUP);
				continue;
			}
			CHECK_EQ(vol_trim(a, len, off, 0), 0);
			memset(ref + off, 0, len); /* mem members zero on trim */
		} else if (kind < 19) {
			CHECK_EQ(vol_write_zeroes(a, len, off, VOL_MAY_TRIM), 0);
			memset(ref + off, 0, len);
		} else {
			CHECK_EQ(vol_flush(a), 0);
		}
	}
	CHECK_EQ(vol_flush(a), 0);
	for (uint64_t off = 0; off < size; off += 1u << 21) {
		uint64_t len = size - off < (1u << 21) ? size - off : (1u << 21);
		CHECK_EQ(vol_read(a, buf, len, off), 0);
		CHECK(memcmp(ref + off, buf, len) == 0);
	}
	for (unsigned i = 0; i < c->disks; i++)
		CHECK_EQ(atomic_load(&ev.failed[i]), kill && i == victim(c) ? 1 : 0);
	if (kill) {
		/* Nothing more reaches the failed member. */
		struct fault_counts before, after;
		fault_member_counts(victim_vol, &before);
		CHECK_EQ(vol_write(a, buf, c->bs, 0, 0), 0);
		CHECK_EQ(vol_flush(a), 0);
		CHECK_EQ(vol_read(a, buf, size < (1u << 20) ? size : (1u << 20), 0), 0);
		fault_member_counts(victim_vol, &after);
		CHECK(memcmp(&before, &after, sizeof(before)) == 0);
	}
	count_wb(a);
	vol_close(a);
	free(ref);
	free(buf);
}

/* Open an array of n mem members of size bytes each (wrapped in fault),
 * with the roles in missing[] left out. */
static int open_array(int level, unsigned layout, unsigned n, uint32_t chunk, uint64_t size,
                      unsigned missing_mask, struct events *ev, struct vol **members,
                      struct vol **out)
{
	struct raid_geom g = {.level = level, .layout = layout, .chunk = chunk, .raid_disks = n};
	struct raid_events rev = {on_failed, ev};
	char spec[64];

	snprintf(spec, sizeof(spec), "fault::mem:%llu", (unsigned long long)size);
	for (unsigned i = 0; i < n; i++) {
		members[i] = NULL;
		if (!(missing_mask & (1u << i)))
			CHECK_EQ(member_open(spec, 0, &members[i]), 0);
	}
	int r = raid_open(&g, members, &rev, "t", out);
	if (r < 0)
		for (unsigned i = 0; i < n; i++)
			vol_close(members[i]);
	return r;
}

/* Degraded starts, user failures, and RAID0's errors staying local. */
/* RAID0/1/10 over mem: members show a view of the array's bytes, copy
 * by copy, equal to what read returns, whole and degraded; parity levels
 * and disk models show none. */
static void test_view(void)
{
	static const struct {
		int level;
		unsigned layout, disks, chunk;
		bool view;
	} cases[] = {
	    {1, 0, 2, 0, true},
	    {0, 0, 3, 64 << 10, true},
	    {10, 0x102, 4, 16 << 10, true},
	    {10, 0x201, 4, 8 << 10, true},
	    {5, 2, 3, 64 << 10, false},
	};
	static char want[1 << 20], got[1 << 20];
	unsigned long long seed = check_seed(77);

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct raid_geom g = {.level = cases[k].level,
		                      .layout = cases[k].layout,
		                      .chunk = cases[k].chunk,
		                      .raid_disks = cases[k].disks};
		struct vol *m[4] = {0}, *a;
		for (unsigned i = 0; i < g.raid_disks; i++)
			CHECK_EQ(member_open("mem:2M", 0, &m[i]), 0);
		if (raid_open(&g, m, NULL, "view", &a) < 0) {
			CHECK(!"raid_open");
			continue;
		}
		CHECK_EQ(!!(a->caps & VOL_CAP_VIEW), cases[k].view);
		/* The same levels take a large write in segments (vol.h). */
		CHECK_EQ(!!(a->caps & VOL_CAP_STREAM), cases[k].view);
		for (size_t i = 0; i < sizeof(want); i++)
			want[i] = (char)check_rand(&seed);
		CHECK_EQ(vol_write(a, want, sizeof(want), 0, 0), 0);
		for (int t = 0; t < 8 && cases[k].view; t++) {
			uint64_t len = (check_rand(&seed) % 64 + 1) * 4096;
			uint64_t off = check_rand(&seed) % (sizeof(want) - len) / 512 * 512;
			struct view_gather vg = {got, off, off, 0};
			if (t == 4 && g.level != 0)
				CHECK_EQ(raid_fail_member(a, 0), 0); /* degraded: the others show */
			CHECK_EQ(vol_view(a, len, off, view_gather_piece, &vg), 0);
			CHECK_EQ(vg.bad, 0);
			CHECK(memcmp(got, want + off, len) == 0);
		}
		if (!cases[k].view)
			CHECK_EQ(vol_view(a, 4096, 0, view_gather_piece, NULL), -ENOTSUP);
		vol_close(a);
	}
}

/* The first run of the array's extents from off to its end (see
 * vol_extent_first). */
static unsigned first_flags(struct vol *a, uint64_t off, uint64_t *run)
{
	unsigned flags = 99;

	CHECK_EQ(vol_extent_first(a, a->size - off, off, run, &flags), 0);
	return flags;
}

/* Extents (base:allocation) of an array come from its members' through
 * the layout: RAID0 maps a member's data to its chunk of the array; a
 * mirror is zeros only where every live copy is; a RAID5 chunk whose
 * member is gone is data; written-behind data counts before it lands. */
static void test_extents(void)
{
	const unsigned HZ = VOL_EXTENT_HOLE | VOL_EXTENT_ZERO;
	const uint32_t CH = 64 << 10;
	static char buf[64 << 10];
	uint64_t run;

	memset(buf, 0x3c, sizeof(buf));
	/* RAID0 x2: member 1's first chunk is array chunk 1. */
	struct raid_geom g0 = {.level = 0, .chunk = CH, .raid_disks = 2};
	struct vol *m[3] = {0}, *a;
	for (unsigned i = 0; i < 2; i++)
		CHECK_EQ(member_open("mem:1M", 0, &m[i]), 0);
	CHECK_EQ(vol_write(m[1], buf, 4096, 0, 0), 0);
	CHECK_EQ(raid_open(&g0, m, NULL, "x0", &a), 0);
	CHECK_EQ(first_flags(a, 0, &run), HZ);
	CHECK_EQ(run, CH);
	CHECK_EQ(first_flags(a, CH, &run), 0);
	CHECK_EQ(run, 4096);
	CHECK_EQ(first_flags(a, CH + 4096, &run), HZ);
	vol_close(a);

	/* RAID1 x2: data on one copy alone is data; once that copy fails,
	 * the other's hole shows. */
	struct raid_geom g1 = {.level = 1, .raid_disks = 2};
	for (unsigned i = 0; i < 2; i++)
		CHECK_EQ(member_open("mem:1M", 0, &m[i]), 0);
	CHECK_EQ(vol_write(m[1], buf, 8192, 128 << 10, 0), 0);
	CHECK_EQ(raid_open(&g1, m, NULL, "x1", &a), 0);
	CHECK_EQ(first_flags(a, 0, &run), HZ);
	CHECK_EQ(run, 128 << 10);
	CHECK_EQ(first_flags(a, 128 << 10, &run), 0);
	CHECK_EQ(run, 8192);
	CHECK_EQ(raid_fail_member(a, 1), 0);
	CHECK_EQ(first_flags(a, 0, &run), HZ);
	CHECK_EQ(run, a->size); /* the whole array */
	vol_close(a);

	/* RAID5 x3 with member 1 missing: its chunks are data (rebuilt
	 * from parity), the others' holes show. */
	struct raid_geom g5 = {
	    .level = 5, .layout = 2, .chunk = CH, .raid_disks = 3, .dev_size = 1 << 20};
	for (unsigned i = 0; i < 3; i++)
		CHECK_EQ(member_open("mem:1M", 0, &m[i]), 0);
	vol_close(m[1]);
	m[1] = NULL;
	CHECK_EQ(raid_open(&g5, m, NULL, "x5", &a), 0);
	/* left-symmetric, row 0: data chunks on members 0 and 1. */
	CHECK_EQ(first_flags(a, 0, &run), HZ);
	CHECK_EQ(run, CH);
	CHECK_EQ(first_flags(a, CH, &run), 0);
	CHECK_EQ(run, CH);
	vol_close(a);

	/* Write-behind forced on: a streamed write is data at once. */
	for (unsigned i = 0; i < 2; i++)
		CHECK_EQ(member_open("mem:1M", 0, &m[i]), 0);
	CHECK_EQ(raid_open(&g1, m, NULL, "x1wb", &a), 0);
	if (raid_set_writebehind(a, 1) == 0) {
		for (int k = 0; k < 4; k++)
			CHECK_EQ(vol_write(a, buf, sizeof(buf), (256 << 10) + k * sizeof(buf), 0),
			         0);
		CHECK_EQ(first_flags(a, 256 << 10, &run), 0);
		CHECK_EQ(run, 4 * sizeof(buf));
	}
	vol_close(a);
}

static void test_edges(void)
{
	struct vol *m[8], *a;
	struct events ev = {0};
	char buf[8192];

	/* raid10 n2 on 4: one of each pair may be missing, not both. */
	CHECK_EQ(open_array(10, 0x102, 4, 64 << 10, 1 << 20, 0x5, &ev, m, &a), 0);
	vol_close(a);
	CHECK_EQ(open_array(10, 0x102, 4, 64 << 10, 1 << 20, 0x3, &ev, m, &a), -ENODEV);
	CHECK_EQ(open_array(1, 0, 3, 0, 1 << 20, 0x7, &ev, m, &a), -ENODEV);
	CHECK_EQ(open_array(0, 0, 2, 64 << 10, 1 << 20, 0x2, &ev, m, &a), -ENODEV);
	CHECK_EQ(open_array(RAID_LEVEL_LINEAR, 0, 2, 0, 1 << 20, 0x1, &ev, m, &a), -ENODEV);
	CHECK_EQ(open_array(10, 0x103, 2, 64 << 10, 1 << 20, 0, &ev, m, &a), -EINVAL);
	CHECK_EQ(open_array(10, 0x102, 4, 12 << 10, 1 << 20, 0, &ev, m, &a), -EINVAL);

	/* The user fails mirrors until one is left: that one is refused. */
	CHECK_EQ(open_array(1, 0, 2, 0, 1 << 20, 0, &ev, m, &a), 0);
	CHECK_EQ(raid_fail_member(a, 0), 0);
	CHECK_EQ(raid_fail_member(a, 0), 0); /* already failed: no change */
	CHECK_EQ(raid_fail_member(a, 1), -EBUSY);
	CHECK_EQ(atomic_load(&ev.failed[0]), 1);
	CHECK_EQ(atomic_load(&ev.failed[1]), 0);
	CHECK_EQ(vol_write(a, buf, 4096, 0, 0), 0);
	CHECK_EQ(vol_read(a, buf, 4096, 0), 0);
	/* The last mirror dying is an error for the client, and it stays. */
	fault_member_kill(m[1], true);
	CHECK_EQ(vol_read(a, buf, 4096, 0), -EIO);
	CHECK_EQ(vol_write(a, buf, 4096, 0, 0), -EIO);
	CHECK_EQ(atomic_load(&ev.failed[1]), 0);
	vol_close(a);

	/* RAID0: a dead member fails the requests that touch it, only. */
	memset(&ev, 0, sizeof(ev));
	CHECK_EQ(open_array(0, 0, 2, 64 << 10, 1 << 20, 0, &ev, m, &a), 0);
	CHECK_EQ(raid_fail_member(a, 1), -EBUSY);
	fault_member_kill(m[1], true);
	CHECK_EQ(vol_read(a, buf, 8192, 0), 0);             /* chunk 0: member 0 */
	CHECK_EQ(vol_read(a, buf, 8192, 64 << 10), -EIO);   /* chunk 1: member 1 */
	CHECK_EQ(vol_write(a, buf, 8192, 128 << 10, 0), 0); /* chunk 2: member 0 */
	CHECK_EQ(vol_flush(a), -EIO);
	CHECK_EQ(atomic_load(&ev.failed[1]), 0);
	vol_close(a);

	/* RAID0 under write-behind: a write acknowledged, then lost on its
	 * way to a dead member, is reported by the next flush and every
	 * write after it; reads of the other member still work. */
	memset(&ev, 0, sizeof(ev));
	CHECK_EQ(open_array(0, 0, 2, 64 << 10, 1 << 20, 0, &ev, m, &a), 0);
	CHECK_EQ(raid_set_writebehind(a, 1), 0);
	fault_member_kill(m[1], true);
	CHECK_EQ(vol_write(a, buf, 8192, 64 << 10, 0), 0); /* behind: not yet written */
	CHECK_EQ(vol_flush(a), -EIO);
	CHECK_EQ(vol_flush(a), -EIO);
	CHECK_EQ(vol_write(a, buf, 8192, 0, 0), -EIO);
	CHECK_EQ(vol_read(a, buf, 8192, 0), 0);
	vol_close(a);
	/* A mirror under write-behind loses a member: no error at all. */
	memset(&ev, 0, sizeof(ev));
	CHECK_EQ(open_array(1, 0, 2, 0, 1 << 20, 0, &ev, m, &a), 0);
	CHECK_EQ(raid_set_writebehind(a, 1), 0);
	fault_member_kill(m[0], true);
	CHECK_EQ(vol_write(a, buf, 8192, 0, 0), 0);
	CHECK_EQ(vol_flush(a), 0);
	CHECK_EQ(atomic_load(&ev.failed[0]), 1);
	CHECK_EQ(vol_read(a, buf, 8192, 0), 0);
	vol_close(a);
	/* ...or a member refusing its part with a request error (EINVAL):
	 * the write was acknowledged and the other copy took it, so that
	 * member is out of step and fails as for EIO. */
	{
		struct raid_geom g1 = {.level = 1, .raid_disks = 2};
		struct raid_events rev = {on_failed, &ev};
		memset(&ev, 0, sizeof(ev));
		CHECK_EQ(member_open("fault:eio=0+1M,mode=write,errno=EINVAL:mem:1M", 0, &m[0]), 0);
		CHECK_EQ(member_open("fault::mem:1M", 0, &m[1]), 0);
		CHECK_EQ(raid_open(&g1, m, &rev, "t", &a), 0);
		CHECK_EQ(raid_set_writebehind(a, 1), 0);
		CHECK_EQ(vol_write(a, buf, 8192, 0, 0), 0);
		CHECK_EQ(vol_flush(a), 0);
		CHECK_EQ(atomic_load(&ev.failed[0]), 1);
		vol_close(a);
	}
	/* A fast zeroing one mirror cannot do fast (ENOTSUP) while the other
	 * did: the client's to redo by writing zeros, no member fails. */
	{
		struct raid_geom g1 = {.level = 1, .raid_disks = 2};
		struct raid_events rev = {on_failed, &ev};
		memset(&ev, 0, sizeof(ev));
		CHECK_EQ(member_open("mem:1M", 0, &m[0]), 0);
		CHECK_EQ(member_open("fault:eio=0+1M,mode=write,errno=ENOTSUP:mem:1M", 0, &m[1]),
		         0);
		CHECK_EQ(raid_open(&g1, m, &rev, "t", &a), 0);
		CHECK_EQ(vol_write_zeroes(a, 8192, 0, VOL_FAST_ZERO), -ENOTSUP);
		CHECK_EQ(atomic_load(&ev.failed[1]), 0);
		vol_close(a);
	}
	/* RAID5 under write-behind: a member dying under the lanes fails
	 * as on the direct path, and the stripes read back from parity;
	 * degraded already, the stripes are lost, the array has failed (the
	 * member marked, as md's raid5_error marks it) and the error sticks:
	 * the write itself fails if the lanes got there before it returned. */
	for (unsigned degraded = 0; degraded < 2; degraded++) {
		static char big[256 << 10];
		memset(&ev, 0, sizeof(ev));
		memset(big, 0x3c, sizeof(big));
		CHECK_EQ(open_array(5, 2, 3, 64 << 10, 1 << 20, degraded ? 0x4 : 0, &ev, m, &a), 0);
		CHECK_EQ(raid_set_writebehind(a, 1), 0);
		fault_member_kill(m[1], true);
		int wr = vol_write(a, big, sizeof(big), 0, 0); /* two whole stripes */
		CHECK(wr == 0 || (degraded && wr == -EIO));
		CHECK_EQ(vol_flush(a), degraded ? -EIO : 0);
		CHECK_EQ(atomic_load(&ev.failed[1]), 1);
		CHECK(raid_failed(a) == (degraded != 0));
		if (degraded) {
			CHECK_EQ(vol_write(a, buf, 8192, 0, 0), -EIO);
		} else {
			static char back[256 << 10];
			CHECK_EQ(vol_read(a, back, sizeof(back), 0), 0);
			CHECK(memcmp(back, big, sizeof(big)) == 0);
		}
		vol_close(a);
	}
	/* Off, and absent on one member. */
	CHECK_EQ(open_array(1, 0, 1, 0, 1 << 20, 0, &ev, m, &a), 0);
	CHECK_EQ(raid_set_writebehind(a, 1), -ENOTSUP);
	CHECK_EQ(raid_set_writebehind(a, -1), 0);
	vol_close(a);

	/* Capabilities: the intersection, the largest block size. */
	CHECK_EQ(open_array(1, 0, 2, 0, 1 << 20, 0, &ev, m, &a), 0);
	CHECK(a->caps & VOL_CAP_MULTI_CONN);
	CHECK(a->caps & VOL_CAP_TRIM);
	CHECK_EQ(a->block_min, 512);
	vol_close(a);
	CHECK_EQ(member_open("mem:1M", 0, &m[0]), 0);
	CHECK_EQ(member_open("null:1M", 0, &m[1]), 0);
	m[1]->block_min = 4096;
	m[1]->caps &= ~VOL_CAP_MULTI_CONN;
	struct raid_geom g = {.level = 1, .raid_disks = 2};
	CHECK_EQ(raid_open(&g, m, NULL, "t", &a), 0);
	CHECK(!(a->caps & VOL_CAP_MULTI_CONN));
	CHECK_EQ(a->block_min, 4096);
	vol_close(a);
}

struct ra_reader {
	struct vol *a;
	const unsigned char *ref;
	uint64_t start;
	int bad;
};

static void *ra_reader_run(void *arg)
{
	struct ra_reader *t = arg;
	const uint64_t len = 64u << 10;
	unsigned char *buf = malloc(len);

	for (uint64_t i = 0; i < t->a->size / len; i++) {
		uint64_t off = (t->start + i * len) % t->a->size;
		if (vol_read(t->a, buf, len, off) != 0 || memcmp(buf, t->ref + off, len) != 0)
			t->bad++;
	}
	free(buf);
	return NULL;
}

/* Several sequential readers at once under forced read-ahead (nbdcopy
 * does this): every answer right, and nobody left waiting for a piece. */
static void test_ra_concurrent(void)
{
	struct vol *m[4], *a;
	struct events ev = {0};
	unsigned long long seed = check_seed(42);
	const uint64_t size = 4u << 20;
	struct ra_reader t[4];
	pthread_t th[4];

	CHECK_EQ(open_array(10, 0x102, 4, 16 << 10, size / 2, 0, &ev, m, &a), 0);
	unsigned char *ref = malloc(a->size);
	fill(ref, a->size, &seed);
	CHECK_EQ(vol_write(a, ref, a->size, 0, 0), 0);
	CHECK_EQ(raid_set_readahead(a, 1), 0);
	for (int i = 0; i < 4; i++) {
		t[i] = (struct ra_reader){a, ref, (uint64_t)i * (a->size / 4), 0};
		pthread_create(&th[i], NULL, ra_reader_run, &t[i]);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		CHECK_EQ(t[i].bad, 0);
	}
	vol_close(a);
	free(ref);
}

/* One sequential stream read by several threads at once, each taking the
 * next 64 KiB (a client at queue depth 8, as fio and nbdcopy read): the
 * client keeps every member busy itself, so read-ahead must not read the
 * same bytes again behind its back.  Every member byte is read about
 * once (a first piece or two read ahead before the depth shows).  The
 * members are disk models (behind a fault layer, which hides that the
 * model keeps its bytes in RAM): read-ahead engages by itself. */
struct deep_reader {
	struct vol *a;
	const unsigned char *ref;
	atomic_uint_fast64_t *next;
	int bad;
};

static void *deep_reader_run(void *arg)
{
	struct deep_reader *t = arg;
	const uint64_t len = 64u << 10;
	unsigned char *buf = malloc(len);

	for (;;) {
		uint64_t off = atomic_fetch_add(t->next, len);
		if (off + len > t->a->size)
			break;
		if (vol_read(t->a, buf, len, off) != 0 || memcmp(buf, t->ref + off, len) != 0)
			t->bad++;
	}
	free(buf);
	return NULL;
}

static void test_ra_deep_stream(void)
{
	struct vol *m[4], *a;
	struct events ev = {0};
	unsigned long long seed = check_seed(43);
	struct deep_reader t[8];
	pthread_t th[8];
	atomic_uint_fast64_t next = 0;

	struct raid_geom g = {.level = 0, .chunk = 16 << 10, .raid_disks = 4};
	struct raid_events rev = {on_failed, &ev};

	for (unsigned i = 0; i < 4; i++)
		CHECK_EQ(member_open("fault::sim:ssd:mem:4M", 0, &m[i]), 0);
	CHECK_EQ(raid_open(&g, m, &rev, "deep", &a), 0);
	unsigned char *ref = malloc(a->size);
	fill(ref, a->size, &seed);
	CHECK_EQ(vol_write(a, ref, a->size, 0, 0), 0);
	/* Slow as measured by the reads to come (500 MB/s): said ahead, as
	 * the 16 KiB transfers of the write above are not measured. */
	struct raid_array *ra = container_of(a, struct raid_array, vol);
	for (unsigned i = 0; i < 4; i++)
		atomic_store(&ra->m[i].ns_per_mib, 2 * RAID_SLOW_NS_PER_MIB);
	CHECK(raid_members_slow(ra));
	for (int i = 0; i < 8; i++) {
		t[i] = (struct deep_reader){a, ref, &next, 0};
		pthread_create(&th[i], NULL, deep_reader_run, &t[i]);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(th[i], NULL);
		CHECK_EQ(t[i].bad, 0);
	}
	uint64_t read = 0;
	for (unsigned r = 0; r < 4; r++) {
		struct raid_io_stats st;
		CHECK_EQ(raid_member_stats(a, r, &st), 0);
		read += st.bytes[0];
	}
	if (getenv("DEEP") || read > a->size + a->size / 16)
		fprintf(stderr, "deep stream: members read %llu bytes for %llu\n",
		        (unsigned long long)read, (unsigned long long)a->size);
	CHECK(read <= a->size + a->size / 16);
	vol_close(a);
	free(ref);
}

struct par_writer {
	struct vol *a;
	bool stream;
	unsigned long long seed;
	atomic_uint_fast64_t *pos; /* where the stream is */
	int bad;
};

/* The stream passes over the array in 20 KiB writes; the other writer
 * writes small FUA blocks (which write-behind never takes) just ahead of
 * it, into the stripes the stream's pieces are filling. */
static void *par_writer_run(void *arg)
{
	struct par_writer *t = arg;
	unsigned char *buf = malloc(64 << 10);
	uint64_t size = t->a->size;

	for (unsigned k = 0; k < 200; k++) {
		uint64_t len, off;
		if (t->stream) {
			len = 20 << 10;
			off = (uint64_t)k * len % (size - len) / 512 * 512;
			atomic_store(t->pos, off);
		} else {
			len = 512 * (1 + check_rand(&t->seed) % 16);
			off = atomic_load(t->pos) + check_rand(&t->seed) % 128 * 512;
			if (off + len > size)
				off = size - len;
		}
		fill(buf, len, &t->seed);
		if (vol_write(t->a, buf, len, off, t->stream ? 0 : VOL_FUA) != 0)
			t->bad++;
	}
	free(buf);
	return NULL;
}

/* RAID5 under write-behind with a stream and another writer over it at
 * the same time: lanes writing whole stripes and direct writes must never
 * mix in one stripe.  Which write wins a block is the race's; but the
 * parity must agree with the data afterwards, so that with a member gone
 * the array reads back the same. */
static void test_wb_parity_concurrent(void)
{
	struct vol *m[4], *a;
	struct raid_check_report rep;
	pthread_t th[2];

	/* Disk models, fast but slow enough for the two to overlap. */
	struct raid_geom g = {.level = 5, .layout = 2, .chunk = 16 << 10, .raid_disks = 4};
	for (unsigned i = 0; i < 4; i++)
		CHECK_EQ(member_open("sim:100M,seek=100us,rot=100us:mem:1M", 0, &m[i]), 0);
	CHECK_EQ(raid_open(&g, m, NULL, "wbc", &a), 0);
	CHECK_EQ(raid_set_writebehind(a, 1), 0);
	unsigned char *want = malloc(a->size), *got = malloc(a->size);
	atomic_uint_fast64_t pos = 0;
	struct par_writer w[2] = {{a, true, 1, &pos, 0}, {a, false, 2, &pos, 0}};
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, par_writer_run, &w[i]);
	for (int i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		CHECK_EQ(w[i].bad, 0);
	}
	CHECK_EQ(vol_flush(a), 0);
	CHECK_EQ(raid_check(a, false, &rep, NULL), 0);
	CHECK_EQ(rep.mismatched, 0);
	CHECK_EQ(vol_read(a, want, a->size, 0), 0);
	CHECK_EQ(raid_fail_member(a, 0), 0);
	CHECK_EQ(vol_read(a, got, a->size, 0), 0);
	CHECK(memcmp(got, want, a->size) == 0);
	count_wb(a);
	vol_close(a);
	free(want);
	free(got);
}

/* Do the members' files hold want at off? */
static bool files_hold(char paths[][64], unsigned n, const unsigned char *want, uint64_t len,
                       uint64_t off)
{
	unsigned char *got = malloc(len);
	bool same = got != NULL;

	for (unsigned i = 0; same && i < n; i++) {
		int fd = open(paths[i], O_RDONLY);
		same = fd >= 0 && pread(fd, got, len, (off_t)off) == (ssize_t)len &&
		       memcmp(got, want, len) == 0;
		if (fd >= 0)
			close(fd);
	}
	free(got);
	return same;
}

/* Write-behind acknowledges a stream's writes before the disks have them:
 * a flush, and closing the array, must put them there.  RAID1 of two
 * 20 MiB/s disk models over files, so 4 MiB is still on its way (200 ms)
 * when the flush or the close is called; the files are then read behind
 * the array's back. */
static void test_wb_durable(void)
{
	char dir[] = "/tmp/test_raid.XXXXXX", paths[2][64];
	struct raid_geom g = {.level = 1, .raid_disks = 2};
	struct vol *m[2], *a = NULL;
	const uint64_t chunk = 1u << 20, n = 4;
	unsigned long long seed = check_seed(7);
	unsigned char *data = malloc(2 * n * chunk);

	CHECK(mkdtemp(dir) != NULL);
	fill(data, 2 * n * chunk, &seed);
	for (unsigned i = 0; i < 2; i++) {
		char spec[160]; /* gcc bounds paths[i] by the whole array */
		snprintf(paths[i], sizeof(paths[i]), "%s/m%u", dir, i);
		int fd = open(paths[i], O_RDWR | O_CREAT, 0600);
		CHECK(fd >= 0 && ftruncate(fd, 16u << 20) == 0);
		close(fd);
		snprintf(spec, sizeof(spec), "sim:20M:%s", paths[i]);
		CHECK_EQ(member_open(spec, 0, &m[i]), 0);
	}
	CHECK_EQ(raid_open(&g, m, NULL, "wb", &a), 0);
	CHECK_EQ(raid_set_writebehind(a, 1), 0);
	for (uint64_t k = 0; k < n; k++)
		CHECK_EQ(vol_write(a, data + k * chunk, chunk, k * chunk, 0), 0);
	CHECK_EQ(vol_flush(a), 0);
	CHECK(files_hold(paths, 2, data, n * chunk, 0));
	for (uint64_t k = n; k < 2 * n; k++)
		CHECK_EQ(vol_write(a, data + k * chunk, chunk, k * chunk, 0), 0);
	vol_close(a);
	CHECK(files_hold(paths, 2, data + n * chunk, n * chunk, n * chunk));
	for (unsigned i = 0; i < 2; i++)
		unlink(paths[i]);
	rmdir(dir);
	free(data);
}

/* RAID5 and RAID6 members encoded here, by md's rules restated.  The
 * parity P of stripe s sits on the last disk minus s (mod n) for "left"
 * layouts, on disk s (mod n) for "right" ones, first or last for the
 * parity-0/N ones; RAID6's Q follows P (disk 0 when P is last) and the
 * "_6" layouts (16..20) are RAID5's over the first n-1 disks with Q last.
 * Data continues after the parity, wrapping ("symmetric"), or fills the
 * other disks from disk 0 ("asymmetric").  Q weighs data chunk i (counted
 * from the disk after Q, wrapping) by 2^i in GF(2^8) mod 0x11d, computed
 * here by shifts.  The arrays must read back whole, with every member and
 * (RAID6) every pair of members missing, and with members dying
 * mid-read; and writes, whole or degraded, must read back, with members
 * left holding exactly what the encoder lays out. */
static uint8_t t_gfmul(uint8_t a, uint8_t b)
{
	uint8_t r = 0;
	while (b) {
		if (b & 1)
			r ^= a;
		a = (uint8_t)((a << 1) ^ ((a & 0x80) ? 0x1d : 0));
		b >>= 1;
	}
	return r;
}

static void r56_layout(int level, unsigned layout, unsigned n, uint64_t s, unsigned *p, int *q,
                       unsigned *disk /* [n - m] */)
{
	unsigned m = level == 6 ? 2 : 1, w = n;
	bool q_last = level == 6 && layout >= 16;

	if (level == 4)
		layout = 5; /* md's raid4: its parity on the last disk, whatever the word */

	if (q_last) {
		w = n - 1; /* a RAID5 layout over the first n-1 disks */
		layout -= 16;
	}
	unsigned used = q_last ? 1 : m; /* parity chunks among the w disks */
	if (layout == 0 || layout == 2)
		*p = w - 1 - (unsigned)(s % w);
	else if (layout == 1 || layout == 3)
		*p = (unsigned)(s % w);
	else
		*p = layout == 4 ? 0 : w - used;
	*q = -1;
	if (q_last)
		*q = (int)n - 1;
	else if (level == 6)
		*q = (int)((*p + 1) % n);
	bool sym = layout == 2 || layout == 3;
	unsigned k = 0;
	for (unsigned j = 0; k < n - m; j++) {
		unsigned d = sym ? (*p + used + j) % w : j;
		if (!sym && (d == *p || (int)d == *q || d >= w))
			continue;
		disk[k++] = d;
	}
}

static void r56_encode(int level, unsigned layout, unsigned n, uint32_t chunk,
                       const unsigned char *data, uint64_t rows, unsigned char **m)
{
	unsigned nd = n - (level == 6 ? 2 : 1), disk[8];
	for (uint64_t s = 0; s < rows; s++) {
		unsigned p;
		int q;
		r56_layout(level, layout, n, s, &p, &q, disk);
		memset(m[p] + s * chunk, 0, chunk);
		if (q >= 0)
			memset(m[q] + s * chunk, 0, chunk);
		for (unsigned d = 0; d < nd; d++) {
			const unsigned char *src = data + (s * nd + d) * chunk;
			memcpy(m[disk[d]] + s * chunk, src, chunk);
			for (uint32_t b = 0; b < chunk; b++)
				m[p][s * chunk + b] ^= src[b];
		}
		if (q < 0)
			continue;
		/* Syndrome order: from the disk after Q (0 if Q is last). */
		unsigned d0 = q == (int)n - 1 ? 0 : (unsigned)q + 1, place = 0;
		for (unsigned t = 0; t < n; t++) {
			unsigned r = (d0 + t) % n;
			if (r == p || (int)r == q)
				continue;
			uint8_t coef = 1, mul[256];
			for (unsigned e = 0; e < place; e++)
				coef = t_gfmul(coef, 2);
			for (unsigned x = 0; x < 256; x++) /* t_gfmul's, by table */
				mul[x] = t_gfmul((uint8_t)x, coef);
			for (uint32_t b = 0; b < chunk; b++)
				m[q][s * chunk + b] ^= mul[m[r][s * chunk + b]];
			place++;
		}
	}
}

static void r56_check(int level, unsigned layout, unsigned n, unsigned gone_mask, bool wb,
                      unsigned long long *seed)
{
	uint32_t chunk = level == 6 || layout % 2 ? 4096 : 16384;
	unsigned m = level == 6 ? 2 : 1;
	uint64_t rows = 2 * n + 1, msize = rows * chunk, asize = msize * (n - m);
	unsigned char *data = malloc(asize), *got = malloc(asize), *img[8];
	struct raid_geom g = {.level = level, .layout = layout, .chunk = chunk, .raid_disks = n};
	struct vol *mem[8] = {0}, *a = NULL;

	fill(data, asize, seed);
	for (unsigned i = 0; i < n; i++)
		img[i] = malloc(msize);
	r56_encode(level, layout, n, chunk, data, rows, img);
	for (unsigned i = 0; i < n; i++) {
		char spec[64];
		struct vol *inner;
		if (gone_mask & (1u << i))
			continue;
		snprintf(spec, sizeof(spec), "mem:%llu", (unsigned long long)msize);
		CHECK_EQ(member_open(spec, 0, &inner), 0);
		CHECK_EQ(vol_write(inner, img[i], msize, 0, 0), 0);
		CHECK_EQ(fault_member_wrap(inner, "", &mem[i]), 0);
	}
	CHECK_EQ(raid_open(&g, mem, NULL, "r56", &a), 0);
	if (a) {
		CHECK_EQ(a->size, asize);
		memset(got, 0, asize);
		for (uint64_t off = 0; off < asize;) {
			uint64_t len = 512 * (1 + check_rand(seed) % 100);
			if (len > asize - off)
				len = asize - off;
			CHECK_EQ(vol_read(a, got + off, len, off), 0);
			off += len;
		}
		if (memcmp(got, data, asize) != 0) {
			fprintf(stderr, "raid%d layout %u n %u missing 0x%x: mismatch\n", level,
			        layout, n, gone_mask);
			CHECK(0);
		}
		CHECK(!(a->caps & VOL_CAP_READONLY));
		CHECK_EQ(vol_trim(a, 512, 0, 0), -ENOTSUP);
		if (wb)
			CHECK_EQ(raid_set_writebehind(a, 1), 0);
		/* Writes, degraded or not: partial chunks, chunks across
		 * stripes, whole stripes; each must read back.  Under
		 * write-behind most continue the last one (a stream). */
		uint64_t next = 0;
		for (unsigned w = 0; w < (wb ? 30u : 12u); w++) {
			uint64_t blocks = asize / 512;
			uint64_t nb = 1 + check_rand(seed) % (w % 3 == 0 ? 8 : 3 * chunk / 512);
			if (nb > blocks)
				nb = blocks;
			uint64_t off = (check_rand(seed) % (blocks - nb + 1)) * 512;
			if (wb && w % 5 != 0 && next + nb * 512 <= asize)
				off = next;
			next = off + nb * 512;
			fill(got, nb * 512, seed);
			CHECK_EQ(vol_write(a, got, nb * 512, off, 0), 0);
			memcpy(data + off, got, nb * 512);
		}
		CHECK_EQ(vol_write_zeroes(a, chunk + 1024, chunk / 2, 0), 0);
		memset(data + chunk / 2, 0, chunk + 1024);
		CHECK_EQ(vol_read(a, got, asize, 0), 0);
		if (memcmp(got, data, asize) != 0) {
			fprintf(stderr,
			        "raid%d layout %u n %u missing 0x%x: mismatch after writes\n",
			        level, layout, n, gone_mask);
			CHECK(0);
		}
		CHECK_EQ(vol_flush(a), 0);
		if (wb)
			count_wb(a);
		if (gone_mask == 0) {
			/* The members hold what md would: data and parity as the
			 * encoder here lays them out. */
			r56_encode(level, layout, n, chunk, data, rows, img);
			unsigned char *raw = malloc(msize);
			for (unsigned i = 0; i < n; i++) {
				CHECK_EQ(vol_read(mem[i], raw, msize, 0), 0);
				if (memcmp(raw, img[i], msize) != 0) {
					fprintf(stderr,
					        "raid%d layout %u n %u: member %u differs from "
					        "md's layout\n",
					        level, layout, n, i);
					CHECK(0);
				}
			}
			free(raw);
		}
		if (gone_mask == 0 && n > 3) {
			/* (read back what was written from here on) */
			/* Members die as far as the level allows: still whole;
			 * one more is data lost. */
			for (unsigned k = 0; k < m; k++)
				fault_member_kill(mem[k + 1], true);
			CHECK_EQ(vol_read(a, got, asize, 0), 0);
			CHECK(memcmp(got, data, asize) == 0);
			fault_member_kill(mem[0], true);
			CHECK_EQ(vol_read(a, got, asize, 0), -EIO);
		}
		vol_close(a);
	}
	for (unsigned i = 0; i < n; i++)
		free(img[i]);
	free(data);
	free(got);
}

/* ---- the stripe log (raid_set_log) ----
 * Every byte a client writes on RAID5/6 is shown to the log before any
 * member write, in updates that describe their stripe whole: the data
 * after the update equals the oracle's, the parity is that data's P (and
 * Q), the roles and places are the layout's (r56_layout, written apart
 * from the engine), and written[] marks exactly the chunks the request
 * touches.  A log that refuses fails the request with nothing written. */
struct log_probe {
	const unsigned char *flat; /* the oracle, already holding the write */
	unsigned char *seen;       /* array bytes some update marked written */
	int level, refuse;
	unsigned layout, n, calls, done_calls;
	uint32_t chunk;
};

static int probe_log(void *ctx, const struct raid_log_stripe *s, unsigned n, unsigned flags)
{
	struct log_probe *lp = ctx;
	(void)flags;
	lp->calls++;
	for (unsigned i = 0; i < n; i++, s++) {
		unsigned disk[8], p;
		int q;
		r56_layout(lp->level, lp->layout, lp->n, s->row, &p, &q, disk);
		CHECK_EQ(s->p, p);
		CHECK_EQ(s->q, q);
		CHECK_EQ(s->moff / lp->chunk, s->row);
		CHECK(s->moff % lp->chunk + s->len <= lp->chunk);
		unsigned char *pp = calloc(1, s->len), *qq = calloc(1, s->len);
		for (unsigned d = 0; d < s->ndata; d++) {
			CHECK_EQ(s->role[d], disk[d]);
			uint64_t at = s->aoff + (uint64_t)d * lp->chunk;
			CHECK(memcmp(s->data[d], lp->flat + at, s->len) == 0);
			if (s->written[d])
				memset(lp->seen + at, 1, s->len);
			for (uint64_t j = 0; j < s->len; j++) {
				pp[j] ^= (unsigned char)s->data[d][j];
				uint8_t c = 1;
				for (unsigned e = 0; e < s->place[d]; e++)
					c = t_gfmul(c, 2);
				qq[j] ^= t_gfmul((uint8_t)s->data[d][j], c);
			}
		}
		CHECK(memcmp(pp, s->pbuf, s->len) == 0);
		if (lp->level == 6)
			CHECK(s->qbuf && memcmp(qq, s->qbuf, s->len) == 0);
		else
			CHECK(!s->qbuf);
		free(qq);
		free(pp);
	}
	return lp->refuse;
}

static void probe_done(void *ctx, const struct raid_log_stripe *s, unsigned n, int r)
{
	struct log_probe *lp = ctx;
	(void)s;
	(void)n;
	CHECK_EQ(r, 0);
	lp->done_calls++;
}

static void test_stripe_log(void)
{
	for (int level = 5; level <= 6; level++)
		for (int wb = 0; wb < 2; wb++) {
			unsigned n = 5, m = level == 6 ? 2 : 1;
			uint32_t chunk = 16384;
			uint64_t size = 16 * chunk, asize = size * (n - m), row = chunk * (n - m);
			unsigned char *flat = calloc(1, asize), *seen = calloc(1, asize);
			unsigned char *buf = malloc(asize);
			struct vol *members[8], *a = NULL;
			struct events ev = {0};
			unsigned long long seed = check_seed(0x106 + (unsigned)level);
			struct log_probe lp = {flat, seen, level, 0, 2, n, 0, 0, chunk};
			struct raid_log_ops ops = {probe_log, probe_done, &lp};
			struct raid_check_report rep;

			CHECK_EQ(open_array(level, 2, n, chunk, size, 0, &ev, members, &a), 0);
			CHECK_EQ(raid_set_log(a, &ops), 0);
			/* written behind: every write staged, logged by the
			 * lanes (whole stripes) or the direct path (the rest) */
			CHECK_EQ(raid_set_writebehind(a, wb ? 1 : -1), 0);
			for (int i = 0; i < 60; i++) {
				uint64_t len = 512 * (1 + check_rand(&seed) % (3 * row / 512));
				uint64_t off =
				    512 * (check_rand(&seed) % ((asize - len) / 512 + 1));
				if (i % 10 == 0) { /* whole stripes, through the rows path */
					off = (check_rand(&seed) % 8) * row;
					len = 2 * row;
				}
				fill(buf, len, &seed);
				memcpy(flat + off, buf, len);
				memset(seen, 0, asize);
				CHECK_EQ(vol_write(a, buf, len, off, 0), 0);
				/* behind: logged by the time a flush is through */
				CHECK_EQ(vol_flush(a), 0);
				/* exactly the written chunks' ranges were marked, and
				 * they cover the write */
				for (uint64_t j = off; j < off + len; j++)
					if (!seen[j]) {
						CHECK(!"a written byte no update marked written");
						break;
					}
			}
			CHECK(lp.calls > 0);
			CHECK_EQ(lp.calls, lp.done_calls);
			CHECK_EQ(vol_read(a, buf, asize, 0), 0);
			CHECK(memcmp(buf, flat, asize) == 0);
			CHECK_EQ(raid_check(a, false, &rep, NULL), 0);
			CHECK_EQ(rep.mismatched, 0);
			if (wb) {
				uint64_t whole, partial;
				raid_wb_counts(a, &whole, &partial);
				CHECK(whole > 0);
				CHECK(partial > 0);
			}
			/* refused: the request fails (behind: the flush after
			 * it), nothing reaches the members */
			unsigned char *would = malloc(asize);
			memcpy(would, flat, asize);
			memset(would, 0xa5, 2 * row);
			lp.flat = would;
			lp.refuse = -EIO;
			int r = vol_write(a, would, 2 * row, 0, 0);
			if (wb)
				CHECK_EQ(r == 0 ? vol_flush(a) : r, -EIO);
			else
				CHECK_EQ(r, -EIO);
			CHECK_EQ(vol_read(a, buf, asize, 0), 0);
			CHECK(memcmp(buf, flat, asize) == 0);
			free(would);
			vol_close(a);
			free(buf);
			free(seen);
			free(flat);
		}
	/* only parity levels take a log */
	struct vol *members[8], *a = NULL;
	struct events ev = {0};
	struct raid_log_ops ops = {probe_log, probe_done, NULL};
	CHECK_EQ(open_array(1, 0, 2, 0, 1 << 20, 0, &ev, members, &a), 0);
	CHECK_EQ(raid_set_log(a, &ops), -EINVAL);
	vol_close(a);
}

static void test_raid56(void)
{
	static const unsigned layouts6[] = {0, 1, 2, 3, 4, 5, 16, 17, 18, 19, 20};
	unsigned long long seed = check_seed(56);

	for (unsigned layout = 0; layout <= 5; layout++)
		for (unsigned n = 2; n <= 5; n++)
			for (int gone = -1; gone < (int)n; gone++)
				for (int wb = 0; wb < 2; wb++)
					r56_check(5, layout, n, gone < 0 ? 0 : 1u << gone, wb,
					          &seed);
	/* raid4: the layout words mdadm --create (0) and the kernel's
	 * raid0 -> raid4 takeover (5) write */
	for (unsigned layout = 0; layout <= 5; layout += 5)
		for (unsigned n = 2; n <= 4; n++)
			for (int gone = -1; gone < (int)n; gone++)
				r56_check(4, layout, n, gone < 0 ? 0 : 1u << gone, gone & 1, &seed);
	for (size_t l = 0; l < sizeof(layouts6) / sizeof(layouts6[0]); l++)
		for (unsigned n = 4; n <= 5; n++)
			for (unsigned mask = 0; mask < (1u << n); mask++)
				if (__builtin_popcount(mask) <= 2)
					for (int wb = 0; wb < 2; wb++)
						r56_check(6, layouts6[l], n, mask, wb, &seed);
}

static const struct cfg cfgs[] = {
    {RAID_LEVEL_LINEAR, 0, 2, 0, 512, true},
    {RAID_LEVEL_LINEAR, 0, 3, 64 << 10, 4096, true},
    {0, 0, 2, 4 << 10, 512, false},
    {0, 0, 3, 64 << 10, 512, true},
    {0, 2, 4, 16 << 10, 4096, true},
    {0, 1, 5, 8 << 10, 512, true},
    {0, 0, 8, 128 << 10, 4096, false},
    {0, 0, 2, 1 << 20, 512, false},
    {0, 0, 3, 12 << 10, 512, false}, /* not a power of two: md allows it */
    {1, 0, 2, 0, 512, false},
    {1, 0, 3, 0, 4096, false},
    {1, 0, 8, 0, 512, false},
    {10, 0x102, 2, 4 << 10, 512, false},    /* n2 */
    {10, 0x102, 4, 64 << 10, 512, false},   /* n2 */
    {10, 0x102, 5, 8 << 10, 4096, false},   /* n2, odd */
    {10, 0x103, 3, 16 << 10, 512, false},   /* n3 */
    {10, 0x103, 7, 4 << 10, 512, false},    /* n3 */
    {10, 0x201, 2, 32 << 10, 512, false},   /* f2 */
    {10, 0x201, 4, 4 << 10, 4096, false},   /* f2 */
    {10, 0x201, 5, 64 << 10, 512, false},   /* f2, odd */
    {10, 0x301, 6, 8 << 10, 512, false},    /* f3 */
    {10, 0x10201, 4, 16 << 10, 512, false}, /* o2 */
    {10, 0x10201, 3, 1 << 20, 4096, false}, /* o2 */
    {10, 0x202, 8, 4 << 10, 512, false},    /* n2 f2 */
    {10, 0x40201, 6, 8 << 10, 512, false},  /* f2, far sets of 2 */
    {10, 0x40201, 5, 8 << 10, 512, false},  /* f2, far sets, odd */
    {4, 0, 3, 64 << 10, 512, false},        /* raid4, as mdadm --create writes it */
    {5, 2, 3, 64 << 10, 512, false},        /* left-symmetric */
    {5, 0, 4, 16 << 10, 4096, false},       /* left-asymmetric */
    {5, 3, 5, 8 << 10, 512, false},         /* right-symmetric */
    {6, 2, 4, 16 << 10, 512, false},        /* left-symmetric */
    {6, 18, 5, 8 << 10, 4096, false},       /* left-symmetric-6 */
    {6, 1, 6, 4 << 10, 512, false},         /* right-asymmetric */
};

/* A member failure being reported (raid_events.member_failed still
 * running, as md's records it in the other superblocks) and a flush that
 * skips the member, failed already: the flush must not return before the
 * report did, or md acknowledges it while the failure is recorded nowhere,
 * and the member comes back as in sync without what the flush promised
 * (found by test_crash: a flushed write lost after a power cut). */
struct slow_report {
	atomic_bool entered, release, flushed;
	struct vol *a;
	int write_r, flush_r;
};

static void slow_failed(void *ctx, unsigned role, int err)
{
	struct slow_report *s = ctx;
	(void)role;
	(void)err;
	atomic_store(&s->entered, true);
	while (!atomic_load(&s->release))
		usleep(1000);
}

static void *slow_writer(void *arg)
{
	struct slow_report *s = arg;
	unsigned char *buf = calloc(1, 128 << 10);
	s->write_r = vol_write(s->a, buf, 128 << 10, 0, 0); /* a whole stripe */
	free(buf);
	return NULL;
}

static void *slow_flusher(void *arg)
{
	struct slow_report *s = arg;
	s->flush_r = vol_flush(s->a);
	atomic_store(&s->flushed, true);
	return NULL;
}

static void test_flush_after_failure_report(void)
{
	struct raid_geom g = {.level = 5, .layout = 2, .chunk = 64 << 10, .raid_disks = 3};
	struct slow_report s = {0};
	struct raid_events rev = {slow_failed, &s};
	struct vol *m[3];
	pthread_t w, f;

	for (unsigned i = 0; i < 3; i++)
		CHECK_EQ(member_open("fault::mem:1M", 0, &m[i]), 0);
	CHECK_EQ(raid_open(&g, m, &rev, "t", &s.a), 0);
	fault_member_kill(m[0], true);
	pthread_create(&w, NULL, slow_writer, &s);
	while (!atomic_load(&s.entered))
		usleep(1000);
	pthread_create(&f, NULL, slow_flusher, &s);
	/* Give a flush that does not wait every chance to return early. */
	for (int i = 0; i < 300 && !atomic_load(&s.flushed); i++)
		usleep(1000);
	bool early = atomic_load(&s.flushed);
	atomic_store(&s.release, true);
	pthread_join(w, NULL);
	pthread_join(f, NULL);
	CHECK(!early);
	CHECK_EQ(s.write_r, 0);
	CHECK_EQ(s.flush_r, 0);
	vol_close(s.a);
}

/* A failure beyond what the level can lose fails the array, as md's
 * MD_BROKEN (raid_member_fail): a RAID5 member whose write fails while
 * another is gone is failed too, so that a read of the gone member's data
 * is an error, never a reconstruction from a chunk the write did not
 * reach (the stripe's parity did: the old code returned those wrong bytes
 * as data).  No write is acknowledged afterwards; reads of the blocks a
 * live member holds go on.  A mirror keeps its last copy (md's last
 * device) and reads on; RAID0 only fails the requests on the member. */
static void test_fail_beyond(void)
{
	static char x[64 << 10], y[4096], got[4096];
	struct raid_geom g5 = {.level = 5, .layout = 2, .chunk = 64 << 10, .raid_disks = 3};
	struct events ev = {0};
	struct raid_events rev = {on_failed, &ev};
	struct vol *m[3], *a;

	memset(x, 0x5a, sizeof(x));
	memset(y, 0xa5, sizeof(y));
	CHECK_EQ(member_open("fault::mem:1M", 0, &m[0]), 0);
	CHECK_EQ(member_open("fault:eio=0+4096,mode=write:mem:1M", 0, &m[1]), 0);
	CHECK_EQ(member_open("fault::mem:1M", 0, &m[2]), 0);
	CHECK_EQ(raid_open(&g5, m, &rev, "t", &a), 0);
	CHECK_EQ(raid_set_writebehind(a, -1), 0);
	unsigned role;
	uint64_t moff;
	int p, q;
	CHECK_EQ(raid_log_locate(a, 0, &role, &moff, &p, &q), 0);
	CHECK(role == 0 && p == 2);                    /* row 0: data on 0 and 1, parity on 2 */
	CHECK_EQ(vol_write(a, x, sizeof(x), 0, 0), 0); /* data chunk 0, role 0 */
	CHECK_EQ(raid_fail_member(a, 0), 0);
	CHECK_EQ(vol_write(a, y, 4096, (64 << 10) + 8192, 0), 0); /* degraded */
	CHECK_EQ(atomic_load(&ev.failed[0]), 1);
	CHECK(!raid_failed(a));
	/* Role 1 refuses this write; the parity takes it. */
	CHECK_EQ(vol_write(a, y, 4096, 64 << 10, 0), -EIO);
	CHECK(raid_failed(a));
	CHECK_EQ(atomic_load(&ev.failed[1]), 1); /* marked and told, as raid5_error */
	struct fault_counts c1, c1_after;
	CHECK_EQ(fault_member_counts(m[1], &c1), 0);
	int r = vol_read(a, got, 4096, 0);
	CHECK(r == -EIO || (r == 0 && memcmp(got, x, 4096) == 0));
	CHECK_EQ(r, -EIO);
	CHECK_EQ(vol_write(a, y, 4096, 128 << 10, 0), -EIO);
	CHECK_EQ(vol_flush(a), -EIO);
	for (uint64_t off = 128 << 10; off < 512 << 10; off += 64 << 10) {
		CHECK_EQ(raid_log_locate(a, off, &role, &moff, &p, &q), 0);
		CHECK_EQ(vol_read(a, got, 4096, off), role == 2 ? 0 : -EIO);
	}
	CHECK_EQ(raid_fail_member(a, 2), -EBUSY);
	struct raid_check_report rep;
	CHECK_EQ(raid_check(a, false, &rep, NULL), -EIO); /* says why it stops */
	CHECK(strstr(err_detail(-EIO), "the array has failed") != NULL);
	/* Nothing went to the member that failed since. */
	CHECK_EQ(fault_member_counts(m[1], &c1_after), 0);
	CHECK_EQ(c1_after.writes + c1_after.flushes, c1.writes + c1.flushes);
	vol_close(a);

	/* RAID1: the last copy's write fails; it stays, reads go to it, and
	 * no write is acknowledged after (md_submit_bio's MD_BROKEN rule). */
	struct raid_geom g1 = {.level = 1, .raid_disks = 2};
	memset(&ev, 0, sizeof(ev));
	CHECK_EQ(member_open("fault::mem:1M", 0, &m[0]), 0);
	CHECK_EQ(member_open("fault:eio=0+4096,mode=write:mem:1M", 0, &m[1]), 0);
	CHECK_EQ(raid_open(&g1, m, &rev, "t", &a), 0);
	CHECK_EQ(raid_set_writebehind(a, -1), 0);
	CHECK_EQ(vol_write(a, x, 8192, 8192, 0), 0);
	fault_member_kill(m[0], true);
	CHECK_EQ(vol_write(a, y, 4096, 16384, 0), 0);
	CHECK(!raid_failed(a));
	CHECK_EQ(vol_write(a, y, 4096, 0, 0), -EIO);
	CHECK(raid_failed(a));
	CHECK_EQ(atomic_load(&ev.failed[1]), 0); /* the last copy is kept */
	CHECK_EQ(vol_write(a, y, 4096, 8192, 0), -EIO);
	CHECK_EQ(vol_flush(a), -EIO);
	CHECK_EQ(vol_read(a, got, 4096, 8192), 0);
	CHECK(memcmp(got, x, 4096) == 0);
	vol_close(a);

	/* RAID0: the request on the member fails; the array does not. */
	struct raid_geom g0 = {.level = 0, .chunk = 64 << 10, .raid_disks = 2};
	CHECK_EQ(member_open("fault::mem:1M", 0, &m[0]), 0);
	CHECK_EQ(member_open("fault:eio=0+4096,mode=write:mem:1M", 0, &m[1]), 0);
	CHECK_EQ(raid_open(&g0, m, &rev, "t", &a), 0);
	CHECK_EQ(raid_set_writebehind(a, -1), 0);
	CHECK_EQ(vol_write(a, y, 4096, 64 << 10, 0), -EIO); /* chunk 1: member 1 */
	CHECK(!raid_failed(a));
	CHECK_EQ(vol_write(a, y, 4096, 0, 0), 0);
	vol_close(a);
}

/* Members in RAM are never slow enough to stage a stream behind, however
 * slow they measured (a loaded machine); members not known to be RAM
 * (the same memory behind a fault layer) that measured so slow are. */
static void test_ram_members_fast(void)
{
	struct raid_geom g = {.level = 1, .raid_disks = 2};
	static const char *const specs[] = {"mem:1M", "fault::mem:1M"};

	for (unsigned k = 0; k < 2; k++) {
		struct vol *m[2] = {0}, *a;
		for (unsigned i = 0; i < 2; i++)
			CHECK_EQ(member_open(specs[k], 0, &m[i]), 0);
		if (raid_open(&g, m, NULL, "ram", &a) < 0) {
			CHECK(!"raid_open");
			continue;
		}
		struct raid_array *ra = container_of(a, struct raid_array, vol);
		for (unsigned i = 0; i < 2; i++)
			atomic_store(&ra->m[i].ns_per_mib, 10 * RAID_SLOW_NS_PER_MIB);
		CHECK_EQ(raid_members_slow(ra), k == 1);
		vol_close(a);
	}
}

/* Where a write's copies run: a member over mem: that records the thread
 * of its write, role 0's waiting (up to wait_ms) for another copy to
 * begin, so a copy handed to a pool thread shows as another thread.  On
 * members in RAM a small write's copies run on the caller (the pool's
 * hand-off cost more than the copy: docs/write-path.md); a large one's,
 * or a small one's on members not known to be fast, in parallel. */
struct who {
	struct vol vol;
	struct vol *child;
	unsigned role, wait_ms;
	atomic_uint *begun;
	pthread_t thread;
};

static int who_read(struct vol *v, void *buf, uint64_t len, uint64_t off)
{
	return vol_read(container_of(v, struct who, vol)->child, buf, len, off);
}

static int who_write(struct vol *v, const void *buf, uint64_t len, uint64_t off, unsigned flags)
{
	struct who *w = container_of(v, struct who, vol);

	w->thread = pthread_self();
	atomic_fetch_add(w->begun, 1);
	for (unsigned ms = 0; w->role == 0 && ms < w->wait_ms && atomic_load(w->begun) < 2; ms++)
		usleep(1000);
	return vol_write(w->child, buf, len, off, flags);
}

static void who_close(struct vol *v)
{
	struct who *w = container_of(v, struct who, vol);
	vol_close(w->child);
	vol_fini(v);
	free(w);
}

static const struct vol_ops who_ops = {
    .kind = "who", .read = who_read, .write = who_write, .close = who_close};

/* Write len at 0 to a RAID1x2 of who members with caps; whether both
 * copies ran on this thread. */
static bool copies_here(unsigned caps, uint64_t len, unsigned wait_ms)
{
	struct raid_geom g = {.level = 1, .raid_disks = 2};
	struct vol *m[2], *a = NULL;
	struct who *w[2];
	atomic_uint begun = 0;
	bool here = false;
	void *buf = calloc(1, len);

	for (unsigned i = 0; i < 2; i++) {
		w[i] = calloc(1, sizeof(*w[i]));
		CHECK_EQ(member_open("mem:2M", 0, &w[i]->child), 0);
		CHECK_EQ(vol_init(&w[i]->vol, &who_ops, "who", 2 << 20, 512, caps), 0);
		w[i]->role = i;
		w[i]->wait_ms = wait_ms;
		w[i]->begun = &begun;
		m[i] = &w[i]->vol;
	}
	CHECK_EQ(raid_open(&g, m, NULL, "who", &a), 0);
	if (a && buf) {
		CHECK_EQ(vol_write(a, buf, len, 0, 0), 0);
		here = pthread_equal(w[0]->thread, pthread_self()) &&
		       pthread_equal(w[1]->thread, pthread_self());
		vol_close(a);
	}
	free(buf);
	return here;
}

static void test_write_copies_where(void)
{
	CHECK(copies_here(VOL_CAP_RAM, 4096, 200));
	CHECK(!copies_here(VOL_CAP_RAM, 1 << 20, 5000));
	CHECK(!copies_here(0, 4096, 5000));
}

int main(void)
{
	unsigned long long seed = check_seed(0x5eed1234abcdULL);

	log_verbosity = LOG_ERROR - 1;
	setenv("URAID_RA_PIECE", "16384", 1);
	setenv("URAID_RA_STRETCH", "65536", 1);
	setenv("URAID_RA_MAX", "4194304", 1);
	setenv("URAID_WB_PART", "8192", 1);
	for (size_t i = 0; i < sizeof(cfgs) / sizeof(cfgs[0]); i++) {
		const struct cfg *c = &cfgs[i];
		run(c, NONE, false, false, seed + i);
		bool parity = c->level >= 4 && c->level <= 6;
		if (c->level == 1 || c->level == 10 || parity) {
			run(c, KILL, false, false, seed + 100 + i);
			run(c, MISSING, false, false, seed + 200 + i);
		}
		if (parity) {
			/* Write-behind forced on, with members dying or
			 * missing under it; read-ahead forced on, alone and
			 * beside write-behind, with a member dying under it
			 * (from then on reads go direct and rebuild). */
			run(c, KILL, false, true, seed + 400 + i);
			run(c, MISSING, false, true, seed + 500 + i);
			if (c->level == 6)
				run(c, MISS_KILL, false, true, seed + 600 + i);
			run(c, KILL, true, false, seed + 300 + i);
			run(c, KILL, true, true, seed + 700 + i);
			continue;
		}
		/* Read-ahead forced on, in small pieces, with a member dying
		 * under it where the level allows. */
		if (c->level != RAID_LEVEL_LINEAR && c->disks > 1)
			run(c, c->level == 0 ? NONE : KILL, true, false, seed + 300 + i);
		/* Write-behind forced on, in small pieces, with read-ahead
		 * beside it and a member dying under it where the level
		 * allows. */
		if (c->disks > 1)
			run(c, c->level == 1 || c->level == 10 ? KILL : NONE,
			    c->level != RAID_LEVEL_LINEAR, true, seed + 400 + i);
	}
	test_edges();
	test_view();
	test_ram_members_fast();
	test_write_copies_where();
	test_extents();
	test_ra_concurrent();
	test_ra_deep_stream();
	test_wb_durable();
	test_wb_parity_concurrent();
	test_raid56();
	test_stripe_log();
	test_flush_after_failure_report();
	test_fail_beyond();
	/* Write-behind on parity levels went through its own path: whole
	 * stripes by the lanes, partial ones by the direct path. */
	CHECK(wb_whole > 0);
	CHECK(wb_partial > 0);
	fprintf(stderr, "parity write-behind: %llu stripes whole, %llu partial ranges\n",
	        (unsigned long long)wb_whole, (unsigned long long)wb_partial);
	return check_done();
}
