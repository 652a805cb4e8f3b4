/* test_journal.c — md's raid5-cache journal (src/md/md_journal.c): the
 * crc32c it checksums with, the meta-block checks and payload decoding,
 * and write-through logging then replay over a RAID5/6 of RAM members:
 * stripes torn on the members after the log took them come back whole,
 * the tail moves as the log fills, and a damaged block ends the log where
 * the kernel's recovery ends it.  Write-back (md_jcache.c) over the same
 * rig: whole stripe rows gathered in the cache are destaged with no
 * member read; a crash with pages cached leaves data-only stripes that
 * replay brings back, beside destaged ones torn on the members. */
#include "check.h"
#include "mem_vol.h"

#include "core/crc32c.h"
#include "disc/raid/raid.h"
#include "disc/slice.h"
#include "md/md_jcache.h"
#include "md/md_journal.h"

#include <endian.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const uint8_t uuid[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

static void test_crc32c(void)
{
	/* the standard check value of CRC-32C */
	CHECK_EQ(~crc32c(~0u, "123456789", 9), 0xe3069283u);
	/* the kernel's convention: pieces chain */
	CHECK_EQ(crc32c(crc32c(7, "1234", 4), "56789", 5), crc32c(7, "123456789", 9));
}

/* A meta block at pos with seq and the given payload bytes, sealed. */
static void make_block(uint8_t *b, uint64_t pos, uint64_t seq, const void *pl, uint32_t len)
{
	struct r5l_meta_block *mb = (struct r5l_meta_block *)b;
	uint32_t seed = md_journal_uuid_csum(uuid);

	memset(b, 0, R5L_PAGE);
	mb->magic = htole32(R5L_MAGIC);
	mb->version = R5L_VERSION;
	mb->meta_size = htole32(32 + len);
	mb->seq = htole64(seq);
	mb->position = htole64(pos);
	memcpy(b + 32, pl, len);
	mb->checksum = htole32(crc32c(seed, b, R5L_PAGE));
}

static void put_dp(uint8_t *at, uint16_t type, uint32_t size, uint64_t loc, unsigned ncs)
{
	struct r5l_payload_data_parity d = {{htole16(type), 0}, htole32(size), htole64(loc)};
	memcpy(at, &d, sizeof(d));
	memset(at + sizeof(d), 0x11, 4 * ncs);
}

static void test_codec(void)
{
	uint8_t b[R5L_PAGE], pl[64];
	uint32_t seed = md_journal_uuid_csum(uuid);
	struct md_journal_payload out[R5L_MAX_PAYLOADS];
	unsigned n, pages;

	put_dp(pl, R5L_PAYLOAD_DATA, 8, 64, 1);        /* 20 bytes */
	put_dp(pl + 20, R5L_PAYLOAD_PARITY, 16, 8, 2); /* 24 bytes */
	struct r5l_payload_flush f = {{htole16(R5L_PAYLOAD_FLUSH), 0}, htole32(8)};
	memcpy(pl + 44, &f, 8);
	uint64_t fs = htole64(24);
	memcpy(pl + 52, &fs, 8);
	make_block(b, 800, 9, pl, 60);
	CHECK_EQ(md_journal_meta_check(b, seed, 800, 9, true), 0);
	CHECK_EQ(md_journal_meta_check(b, seed, 800, 10, true), -EINVAL); /* seq */
	CHECK_EQ(md_journal_meta_check(b, seed, 800, 10, false), 0);
	CHECK_EQ(md_journal_meta_check(b, seed, 808, 9, true), -EINVAL);     /* position */
	CHECK_EQ(md_journal_meta_check(b, seed + 1, 800, 9, true), -EINVAL); /* other array */
	CHECK_EQ(md_journal_meta_decode(b, 800, 4096, 2, out, &n, &pages), 0);
	CHECK_EQ(n, 3);
	CHECK_EQ(pages, 3);
	CHECK_EQ(out[0].type, R5L_PAYLOAD_DATA);
	CHECK_EQ(out[0].location, 64);
	CHECK_EQ(out[0].page_pos, 808);
	CHECK_EQ(out[1].pages, 2);
	CHECK_EQ(out[1].page_pos, 816);
	CHECK_EQ(out[2].nflush, 1);
	/* pages wrap at the end of the log */
	make_block(b, 4088, 9, pl, 60);
	CHECK_EQ(md_journal_meta_decode(b, 4088, 4096, 2, out, &n, &pages), 0);
	CHECK_EQ(out[0].page_pos, 0);
	/* a RAID5 reads one parity page: two is a block it cannot trust */
	CHECK_EQ(md_journal_meta_decode(b, 4088, 4096, 1, out, &n, &pages), -EINVAL);
	/* a flipped byte */
	make_block(b, 800, 9, pl, 60);
	b[100] ^= 1;
	CHECK_EQ(md_journal_meta_check(b, seed, 800, 9, true), -EINVAL);
	/* descriptors past meta_size, unknown types, odd sizes */
	make_block(b, 0, 1, pl, 30); /* cuts the parity descriptor */
	CHECK_EQ(md_journal_meta_decode(b, 0, 4096, 2, out, &n, &pages), -EINVAL);
	put_dp(pl, 7, 8, 64, 1);
	make_block(b, 0, 1, pl, 20);
	CHECK_EQ(md_journal_meta_decode(b, 0, 4096, 1, out, &n, &pages), -EINVAL);
	put_dp(pl, R5L_PAYLOAD_DATA, 16, 64, 2);
	make_block(b, 0, 1, pl, 24);
	CHECK_EQ(md_journal_meta_decode(b, 0, 4096, 1, out, &n, &pages), -EINVAL);
	f.size = htole32(12);
	memcpy(pl, &f, 8);
	make_block(b, 0, 1, pl, 24);
	CHECK_EQ(md_journal_meta_decode(b, 0, 4096, 1, out, &n, &pages), -EINVAL);
	/* meta_size over a page */
	make_block(b, 0, 1, pl, 0);
	((struct r5l_meta_block *)b)->meta_size = htole32(R5L_PAGE + 4);
	((struct r5l_meta_block *)b)->checksum = 0;
	((struct r5l_meta_block *)b)->checksum = htole32(crc32c(seed, b, R5L_PAGE));
	CHECK_EQ(md_journal_meta_check(b, seed, 0, 1, true), -EINVAL);
}

/* ---- an array with a journal, over RAM ---- */

struct rig {
	int level;
	unsigned n, m;
	uint32_t chunk;
	uint64_t msize, asize;
	struct vol *members[8], *array, *jmem, *jlog;
	struct md_journal *j;
	uint64_t tail;
	atomic_uint tails;        /* set_tail calls (the reclaim thread's too) */
	pthread_t main;           /* the test's thread */
	atomic_bool tail_by_main; /* a set_tail call came from it */
};

static int rig_set_tail(void *ctx, uint64_t tail)
{
	struct rig *g = ctx;
	g->tail = tail;
	if (pthread_equal(pthread_self(), g->main))
		atomic_store(&g->tail_by_main, true);
	atomic_fetch_add(&g->tails, 1);
	return 0;
}

/* The RAID vol over the members (again after a crash: a new process
 * with nothing cached). */
static void rig_array(struct rig *g)
{
	struct raid_geom geom = {
	    .level = g->level, .layout = 2, .chunk = g->chunk, .raid_disks = g->n};
	struct vol *given[8];

	vol_close(g->array);
	for (unsigned i = 0; i < g->n; i++)
		CHECK_EQ(slice_open(g->members[i], 0, g->msize, false, "s", &given[i]), 0);
	CHECK_EQ(raid_open(&geom, given, NULL, "t", &g->array), 0);
}

static void rig_open_chunks(struct rig *g, int level, uint64_t jsize, unsigned chunks)
{
	memset(g, 0, sizeof(*g));
	g->main = pthread_self();
	g->level = level;
	g->n = level == 6 ? 5 : 4;
	g->m = level == 6 ? 2 : 1;
	g->chunk = 16384;
	g->msize = chunks * (uint64_t)g->chunk;
	g->asize = g->msize * (g->n - g->m);
	struct vol *mv[8];
	for (unsigned i = 0; i < g->n; i++) {
		mv[i] = mem_vol(g->msize);
		/* the test keeps its own handle on each member's bytes */
		CHECK_EQ(slice_open(mv[i], 0, g->msize, true, "m", &g->members[i]), 0);
	}
	rig_array(g);
	g->jmem = mem_vol(jsize);
}

static void rig_open(struct rig *g, int level, uint64_t jsize)
{
	rig_open_chunks(g, level, jsize, 32);
}

/* A journal over the RAM log, started as a writable md start does. */
static int rig_journal(struct rig *g, struct md_journal_stats *st, bool log)
{
	struct md_journal_ops ops = {rig_set_tail, g};
	struct raid_log_ops lo;
	int r;

	CHECK_EQ(slice_open(g->jmem, 0, g->jmem->size, false, "j", &g->jlog), 0);
	r = md_journal_open(g->jlog, g->array, g->members, g->n, g->m, g->chunk, uuid, g->tail,
	                    &ops, &g->j);
	if (r < 0)
		return r;
	r = md_journal_recover(g->j, st);
	if (r == 0 && log) {
		md_journal_log_ops(g->j, &lo);
		r = raid_set_log(g->array, &lo);
	}
	return r;
}

/* A crash: the log stops being used, nothing is checkpointed. */
static void rig_crash(struct rig *g)
{
	CHECK_EQ(raid_set_log(g->array, NULL), 0);
	md_journal_close(g->j);
	g->j = NULL;
	rig_array(g);
}

static void rig_close(struct rig *g)
{
	if (g->j)
		rig_crash(g);
	vol_close(g->array);
	for (unsigned i = 0; i < g->n; i++)
		vol_close(g->members[i]);
	vol_close(g->jmem);
}

static uint64_t rig_mismatch(struct rig *g)
{
	struct raid_check_report rep = {0};
	CHECK_EQ(raid_check(g->array, false, &rep, NULL), 0);
	return rep.mismatched;
}

static void fill(unsigned char *b, uint64_t len, unsigned long long *seed)
{
	for (uint64_t i = 0; i < len; i += 8) {
		unsigned long long v = check_rand(seed);
		memcpy(b + i, &v, len - i < 8 ? len - i : 8);
	}
}

/* A torn page: junk on its member and over its stripe's P and Q, as a
 * crash in the middle of the request's member writes leaves them. */
static void tear_page(struct rig *g, uint64_t aoff, unsigned long long *seed)
{
	unsigned char junk[4096];
	unsigned role;
	uint64_t moff;
	int p, q;

	CHECK_EQ(raid_log_locate(g->array, aoff, &role, &moff, &p, &q), 0);
	moff -= moff % 4096;
	/* junk of its own on each: the same bytes on data and P would agree */
	fill(junk, 4096, seed);
	CHECK_EQ(vol_write(g->members[role], junk, 4096, moff, 0), 0);
	fill(junk, 4096, seed);
	CHECK_EQ(vol_write(g->members[p], junk, 4096, moff, 0), 0);
	fill(junk, 4096, seed);
	if (q >= 0)
		CHECK_EQ(vol_write(g->members[q], junk, 4096, moff, 0), 0);
}

/* Writes of any size and alignment logged, then every page they touched
 * torn on the members with its parity; replay puts back every one: the
 * array reads exactly what was written and its parity checks. */
static void test_replay_torn(int level)
{
	struct rig g;
	struct md_journal_stats st;
	unsigned long long seed = check_seed(0x15 + (unsigned)level);
	uint64_t offs[24], lens[24];

	/* A log that holds all 24 writes (RAID6's partial rows log P and Q
	 * too: 4 MiB filled up under other seeds): nothing is checkpointed,
	 * so every page torn below is one a crash could have torn. */
	rig_open(&g, level, 16 << 20);
	unsigned char *flat = calloc(1, g.asize), *buf = malloc(g.asize);
	CHECK_EQ(rig_journal(&g, &st, true), 0);
	CHECK(st.created);
	unsigned tails = g.tails;
	for (int i = 0; i < 24; i++) {
		uint64_t len = 512 * (1 + check_rand(&seed) % (2 * g.chunk / 512));
		uint64_t off = 512 * (check_rand(&seed) % ((g.asize - len) / 512));
		fill(buf, len, &seed);
		memcpy(flat + off, buf, len);
		CHECK_EQ(vol_write(g.array, buf, len, off, 0), 0);
		offs[i] = off;
		lens[i] = len;
	}
	CHECK_EQ(g.tails, tails); /* the tail never moved */
	rig_crash(&g);
	for (int i = 0; i < 24; i++)
		for (uint64_t a = offs[i] - offs[i] % 4096; a < offs[i] + lens[i]; a += 4096)
			tear_page(&g, a, &seed);
	CHECK(rig_mismatch(&g) > 0); /* the hole, before replay */
	CHECK_EQ(vol_read(g.array, buf, g.asize, 0), 0);
	CHECK(memcmp(buf, flat, g.asize) != 0);
	CHECK_EQ(rig_journal(&g, &st, false), 0);
	CHECK(!st.created);
	CHECK(st.data_parity > 0);
	CHECK_EQ(st.data_only, 0);
	CHECK_EQ(vol_read(g.array, buf, g.asize, 0), 0);
	CHECK(memcmp(buf, flat, g.asize) == 0);
	CHECK_EQ(rig_mismatch(&g), 0);
	rig_close(&g);
	free(buf);
	free(flat);
}

/* A crash leaves stripes torn only where requests were under way: here
 * parity alone (the data writes landed, P did not).  Replay brings the
 * exact data back and P with it; a second replay (the same tail) changes
 * nothing. */
static void test_replay_parity_lost(int level)
{
	struct rig g;
	struct md_journal_stats st;
	unsigned long long seed = check_seed(0x77 + (unsigned)level);

	rig_open(&g, level, 4 << 20);
	unsigned char *flat = calloc(1, g.asize), *buf = malloc(g.asize),
	              *zero = calloc(1, g.msize);
	CHECK_EQ(rig_journal(&g, &st, true), 0);
	for (int i = 0; i < 16; i++) {
		uint64_t len = 4096 * (1 + check_rand(&seed) % 8);
		uint64_t off = 4096 * (check_rand(&seed) % ((g.asize - len) / 4096));
		fill(buf, len, &seed);
		memcpy(flat + off, buf, len);
		CHECK_EQ(vol_write(g.array, buf, len, off, 0), 0);
	}
	rig_crash(&g);
	/* every member's whole area zeroed where it holds parity: zero all
	 * of member 0 and 1 (parity rows and data rows alike) */
	for (unsigned i = 0; i < 2; i++)
		CHECK_EQ(vol_write(g.members[i], zero, g.msize, 0, 0), 0);
	CHECK(rig_mismatch(&g) > 0);
	CHECK_EQ(rig_journal(&g, &st, false), 0);
	CHECK(st.data_parity > 0);
	CHECK_EQ(rig_mismatch(&g), 0);
	CHECK_EQ(vol_read(g.array, buf, g.asize, 0), 0);
	/* what the members lost outside logged pages stays lost (zero here,
	 * as it was before the writes): every byte is the write's or zero */
	unsigned bad = 0;
	for (uint64_t k = 0; k < g.asize; k++)
		bad += buf[k] != flat[k] && buf[k] != 0;
	CHECK_EQ(bad, 0);
	uint64_t tail = g.tail;
	rig_crash(&g);
	CHECK_EQ(rig_journal(&g, &st, false), 0); /* a clean log: the new empty block */
	CHECK_EQ(st.data_parity, 0);
	CHECK(g.tail != tail);
	rig_close(&g);
	free(zero);
	free(buf);
	free(flat);
}

/* A small journal fills: writers checkpoint (the tail moves, recorded
 * each time after the members were flushed) and nothing fails.  The last
 * request is always after the tail: torn after the crash, it comes back
 * from the log, wherever the log wrapped. */
static void test_wrap(int level)
{
	struct rig g;
	struct md_journal_stats st;
	unsigned long long seed = check_seed(0x99 + (unsigned)level);
	uint64_t off = 0, len = 0;

	rig_open(&g, level, 256 << 10);
	unsigned char *flat = calloc(1, g.asize), *buf = malloc(g.asize);
	CHECK_EQ(rig_journal(&g, &st, true), 0);
	unsigned before = g.tails;
	for (int i = 0; i < 200; i++) {
		len = 512 * (1 + check_rand(&seed) % 48);
		off = 512 * (check_rand(&seed) % ((g.asize - len) / 512));
		fill(buf, len, &seed);
		memcpy(flat + off, buf, len);
		CHECK_EQ(vol_write(g.array, buf, len, off, 0), 0);
	}
	CHECK(g.tails > before + 4); /* the log went round several times */
	rig_crash(&g);
	for (uint64_t a = off - off % 4096; a < off + len; a += 4096)
		tear_page(&g, a, &seed);
	CHECK(rig_mismatch(&g) > 0);
	CHECK_EQ(rig_journal(&g, &st, false), 0);
	CHECK(st.data_parity > 0);
	CHECK_EQ(rig_mismatch(&g), 0);
	CHECK_EQ(vol_read(g.array, buf, g.asize, 0), 0);
	CHECK(memcmp(buf, flat, g.asize) == 0);
	rig_close(&g);
	free(buf);
	free(flat);
}

/* Past half the log the tail moves by the reclaim thread, not by the
 * writer (it would wait for the members' flush): 5 writes of a page on
 * RAID5, each logged as its stripe's chunk (a meta block, 4 data pages
 * and 4 of P: 45 of the log's 64 pages in all), leave the log past half
 * full and never full, so no writer needs room; the tail moves, and
 * never from the writer's thread. */
static void test_reclaim_thread(void)
{
	struct rig g;
	struct md_journal_stats st;
	unsigned char buf[4096];
	unsigned long long seed = 0x5eed;

	rig_open(&g, 5, 256 << 10);
	CHECK_EQ(rig_journal(&g, &st, true), 0);
	unsigned before = atomic_load(&g.tails);
	atomic_store(&g.tail_by_main, false); /* the start's tail is the writer's */
	for (uint64_t i = 0; i < 5; i++) {
		fill(buf, sizeof(buf), &seed);
		CHECK_EQ(vol_write(g.array, buf, sizeof(buf), i * g.chunk * (g.n - g.m), 0), 0);
	}
	for (int k = 0; k < 1000 && atomic_load(&g.tails) == before; k++)
		nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL); /* 10 s at most */
	CHECK(atomic_load(&g.tails) > before);
	CHECK(!atomic_load(&g.tail_by_main));
	rig_close(&g);
}

/* A corrupt page ends the log at its meta block, as the kernel's
 * recovery does: a later unit, intact, is not replayed either. */
static void test_corrupt_ends_log(void)
{
	struct rig g;
	struct md_journal_stats st;
	unsigned long long seed = check_seed(0x5);

	rig_open(&g, 5, 4 << 20);
	unsigned char *buf = malloc(g.asize), page[4096];
	uint64_t row_bytes = (uint64_t)g.chunk * (g.n - g.m);
	CHECK_EQ(rig_journal(&g, &st, true), 0);
	uint64_t head0 = g.tail; /* the empty block */
	fill(buf, 4096, &seed);
	CHECK_EQ(vol_write(g.array, buf, 4096, 0, 0), 0); /* unit 1: row 0 */
	fill(buf, 4096, &seed);
	CHECK_EQ(vol_write(g.array, buf, 4096, 5 * row_bytes, 0), 0); /* unit 2: row 5 */
	rig_crash(&g);
	/* unit 1 is the block after the empty one; its first page follows */
	uint64_t page1 = (head0 + 16) * 512;
	CHECK_EQ(vol_read(g.jmem, page, 4096, page1), 0);
	page[7] ^= 0xff;
	CHECK_EQ(vol_write(g.jmem, page, 4096, page1, 0), 0);
	tear_page(&g, 5 * row_bytes, &seed); /* unit 2's stripe */
	CHECK_EQ(rig_journal(&g, &st, false), 0);
	CHECK_EQ(st.data_parity, 0); /* the log ended at unit 1 */
	CHECK(rig_mismatch(&g) > 0);
	rig_close(&g);
	free(buf);
}

/* Writers on several threads at once (appends batched into one write
 * and flush): each thread owns a quarter of the array; the log is big
 * enough that the tail never moves, so after a crash the last write of
 * each, torn, comes back from it. */
struct writer {
	struct rig *g;
	unsigned char *flat;
	uint64_t lo, span, off, len;
	unsigned long long seed;
};

static void *writer_run(void *arg)
{
	struct writer *w = arg;
	unsigned char *buf = malloc(64 * 1024);

	for (int i = 0; i < 40; i++) {
		w->len = 512 * (1 + check_rand(&w->seed) % 16);
		w->off = w->lo + 512 * (check_rand(&w->seed) % ((w->span - w->len) / 512));
		fill(buf, w->len, &w->seed);
		memcpy(w->flat + w->off, buf, w->len);
		CHECK_EQ(vol_write(w->g->array, buf, w->len, w->off, 0), 0);
	}
	free(buf);
	return NULL;
}

static void test_concurrent(int level)
{
	struct rig g;
	struct md_journal_stats st;
	struct writer w[4];
	pthread_t t[4];
	unsigned long long seed = check_seed(0x4242);

	rig_open(&g, level, 32 << 20);
	unsigned char *flat = calloc(1, g.asize), *buf = malloc(g.asize);
	CHECK_EQ(rig_journal(&g, &st, true), 0);
	unsigned tails = g.tails;
	uint64_t quarter = g.asize / 4 / (g.chunk * (g.n - g.m)) * (g.chunk * (g.n - g.m));
	for (unsigned i = 0; i < 4; i++) {
		w[i] = (struct writer){&g, flat, i * quarter, quarter, 0, 0, 0x100 + i};
		CHECK_EQ(pthread_create(&t[i], NULL, writer_run, &w[i]), 0);
	}
	for (unsigned i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ(g.tails, tails); /* the test's premise */
	rig_crash(&g);
	for (unsigned i = 0; i < 4; i++)
		for (uint64_t a = w[i].off - w[i].off % 4096; a < w[i].off + w[i].len; a += 4096)
			tear_page(&g, a, &seed);
	CHECK(rig_mismatch(&g) > 0);
	CHECK_EQ(rig_journal(&g, &st, false), 0);
	CHECK_EQ(rig_mismatch(&g), 0);
	CHECK_EQ(vol_read(g.array, buf, g.asize, 0), 0);
	CHECK(memcmp(buf, flat, g.asize) == 0);
	rig_close(&g);
	free(buf);
	free(flat);
}

static uint64_t member_reads(struct rig *g)
{
	uint64_t n = 0;
	for (unsigned i = 0; i < g->n; i++) {
		struct raid_io_stats st;
		CHECK_EQ(raid_member_stats(g->array, i, &st), 0);
		n += st.ops[0];
	}
	return n;
}

/* Write-back: whole stripe rows written in pieces gather in the cache
 * (reads see them there), and their destage reads nothing from the
 * members: the parity comes from the cached pages. */
static void test_wb_whole(int level)
{
	struct rig g;
	struct md_journal_stats st;
	struct md_jcache *c;
	struct md_jcache_stats cs;
	unsigned long long seed = check_seed(0x3b + (unsigned)level);
	uint64_t row;

	rig_open(&g, level, 8 << 20);
	row = (uint64_t)g.chunk * (g.n - g.m);
	unsigned char *flat = calloc(1, g.asize), *buf = malloc(g.asize);
	CHECK_EQ(rig_journal(&g, &st, true), 0);
	CHECK_EQ(md_jcache_open(g.j, g.array, g.chunk, g.n - g.m, 0, &c), 0);
	md_jcache_pause(c, true); /* nothing destaged until the drain */
	/* rows 2..5, each in three pieces of its own size, the last first
	 * (a write that ends a row the cache holds the rest of goes through:
	 * test_wb_through) */
	for (uint64_t at = 2 * row; at < 6 * row; at += row)
		for (int k = 0; k < 3; k++) {
			uint64_t off = at + (uint64_t)(k + 2) % 3 * (row / 3);
			fill(flat + off, row / 3, &seed);
			CHECK_EQ(md_jcache_write(c, flat + off, row / 3, off, 0), 0);
		}
	md_jcache_stats(c, &cs);
	CHECK_EQ(cs.cached_pages, 4 * row / 4096);
	CHECK_EQ(md_jcache_read(c, buf, g.asize, 0), 0);
	CHECK(memcmp(buf, flat, g.asize) == 0);
	uint64_t reads = member_reads(&g);
	md_jcache_pause(c, false);
	CHECK_EQ(md_jcache_drain(c), 0);
	md_jcache_stats(c, &cs);
	CHECK_EQ(cs.rows, 4);
	CHECK_EQ(cs.whole_pages, 4 * row / 4096);
	CHECK_EQ(cs.read_pages, 0);
	CHECK_EQ(member_reads(&g), reads);
	md_jcache_close(c);
	CHECK_EQ(vol_read(g.array, buf, g.asize, 0), 0);
	CHECK(memcmp(buf, flat, g.asize) == 0);
	CHECK_EQ(rig_mismatch(&g), 0);
	rig_close(&g);
	free(buf);
	free(flat);
}

/* Write-back, then a crash: a first batch of random pages destaged (its
 * parity logged, its data not again), a second held in the cache only.
 * The first batch's pages are torn on the members with their parity;
 * the replay rewrites them from the log (data and parity) and writes the
 * second's stripes, data-only, through the array. */
/* After a write-back crash with the members torn: the replay finds
 * data-parity and data-only stripes and brings back flat, consistent. */
static void rig_replay_both(struct rig *g, const unsigned char *flat, unsigned char *buf)
{
	struct md_journal_stats st;

	CHECK(rig_mismatch(g) > 0);
	CHECK_EQ(rig_journal(g, &st, false), 0);
	CHECK(st.data_parity > 0);
	CHECK(st.data_only > 0);
	CHECK_EQ(vol_read(g->array, buf, g->asize, 0), 0);
	CHECK(memcmp(buf, flat, g->asize) == 0);
	CHECK_EQ(rig_mismatch(g), 0);
}

/* Write-back: a write's whole stripe rows go through (data and parity
 * logged, then the members), as write-through writes them, and so does
 * the row it completes from pages cached before it; the rest is cached.
 * A crash then (pages cached, the through rows torn on the members)
 * replays to what was written, the through row's data over the older
 * page cached in it. */
static void test_wb_through(int level)
{
	struct rig g;
	struct md_journal_stats st;
	struct md_jcache *c;
	struct md_jcache_stats cs;
	unsigned long long seed = check_seed(0x6d + (unsigned)level);

	rig_open(&g, level, 8 << 20);
	uint64_t row = (uint64_t)g.chunk * (g.n - g.m), pg = 4096;
	unsigned char *flat = calloc(1, g.asize), *buf = malloc(g.asize);
	CHECK_EQ(rig_journal(&g, &st, true), 0);
	unsigned tails = g.tails;
	CHECK_EQ(md_jcache_open(g.j, g.array, g.chunk, g.n - g.m, 0, &c), 0);
	md_jcache_pause(c, true); /* nothing destaged: the cache shows what it took */
	/* an older page in row 3, the first half of row 1 */
	fill(flat + 3 * row + pg, pg, &seed);
	CHECK_EQ(md_jcache_write(c, flat + 3 * row + pg, pg, 3 * row + pg, 0), 0);
	fill(flat + row, row / 2, &seed);
	CHECK_EQ(md_jcache_write(c, flat + row, row / 2, row, 0), 0);
	/* the rest of row 1, rows 2-4 whole, a page of row 5 */
	uint64_t off = row + row / 2, len = 4 * row - row / 2 + pg;
	fill(flat + off, len, &seed);
	CHECK_EQ(md_jcache_write(c, flat + off, len, off, 0), 0);
	md_jcache_stats(c, &cs);
	CHECK_EQ(cs.through_rows, 4);
	CHECK_EQ(cs.cached_pages, 1);
	CHECK_EQ(md_jcache_read(c, buf, g.asize, 0), 0);
	CHECK(memcmp(buf, flat, g.asize) == 0);
	md_jcache_close(c); /* paused: the crash, the page stays in the log only */
	CHECK_EQ(g.tails, tails);
	rig_crash(&g);
	for (uint64_t at = row; at < 5 * row; at += 5 * pg)
		tear_page(&g, at, &seed);
	rig_replay_both(&g, flat, buf);
	rig_close(&g);
	free(buf);
	free(flat);
}

static void test_wb_replay(int level)
{
	struct rig g;
	struct md_journal_stats st;
	struct md_jcache *c;
	unsigned long long seed = check_seed(0x5c + (unsigned)level);
	uint64_t first[12];

	rig_open(&g, level, 8 << 20);
	unsigned char *flat = calloc(1, g.asize), *buf = malloc(g.asize);
	CHECK_EQ(rig_journal(&g, &st, true), 0);
	unsigned tails = g.tails;
	CHECK_EQ(md_jcache_open(g.j, g.array, g.chunk, g.n - g.m, 0, &c), 0);
	for (int batch = 0; batch < 2; batch++) {
		md_jcache_pause(c, true);
		for (int i = 0; i < 12; i++) {
			uint64_t off = 4096 * (check_rand(&seed) % (g.asize / 4096));
			fill(flat + off, 4096, &seed);
			CHECK_EQ(md_jcache_write(c, flat + off, 4096, off, 0), 0);
			if (batch == 0)
				first[i] = off;
		}
		if (batch == 0) {
			md_jcache_pause(c, false);
			CHECK_EQ(md_jcache_drain(c), 0);
		}
	}
	md_jcache_close(c);       /* paused: the crash, nothing more reaches the members */
	CHECK_EQ(g.tails, tails); /* the test's premise: the log holds both */
	rig_crash(&g);
	for (int i = 0; i < 12; i++)
		tear_page(&g, first[i], &seed);
	rig_replay_both(&g, flat, buf);
	rig_close(&g);
	free(buf);
	free(flat);
}

/* A member (or log) whose writes wait while it is shut; counts flushes. */
struct gate {
	struct vol vol;
	struct vol *inner;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool shut;
	unsigned flushes;
};

static int gate_read(struct vol *v, void *buf, uint64_t len, uint64_t off)
{
	return vol_read(container_of(v, struct gate, vol)->inner, buf, len, off);
}

static int gate_write(struct vol *v, const void *buf, uint64_t len, uint64_t off, unsigned flags)
{
	struct gate *g = container_of(v, struct gate, vol);
	pthread_mutex_lock(&g->mu);
	while (g->shut)
		pthread_cond_wait(&g->cv, &g->mu);
	pthread_mutex_unlock(&g->mu);
	return vol_write(g->inner, buf, len, off, flags);
}

static int gate_flush(struct vol *v)
{
	struct gate *g = container_of(v, struct gate, vol);
	int r = vol_flush(g->inner);
	pthread_mutex_lock(&g->mu);
	g->flushes++;
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
	return r;
}

static void gate_close(struct vol *v)
{
	struct gate *g = container_of(v, struct gate, vol);
	vol_close(g->inner);
	pthread_cond_destroy(&g->cv);
	pthread_mutex_destroy(&g->mu);
	vol_fini(v);
	free(g);
}

static const struct vol_ops gate_ops = {.kind = "gate",
                                        .read = gate_read,
                                        .write = gate_write,
                                        .flush = gate_flush,
                                        .close = gate_close};

static struct gate *gate_over(struct vol *inner)
{
	struct gate *g = calloc(1, sizeof(*g));
	g->inner = inner;
	pthread_mutex_init(&g->mu, NULL);
	pthread_cond_init(&g->cv, NULL);
	CHECK_EQ(vol_init(&g->vol, &gate_ops, "gate", inner->size, 512, VOL_CAP_FLUSH), 0);
	return g;
}

static void gate_set(struct gate *g, bool shut)
{
	pthread_mutex_lock(&g->mu);
	g->shut = shut;
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
}

/* The end of a stream test: written behind, flushed, it reads back and
 * the parity agrees; frees flat, buf and the rig. */
static void stream_done(struct rig *g, unsigned char *flat, unsigned char *buf, uint64_t len)
{
	CHECK_EQ(vol_flush(g->array), 0);
	CHECK_EQ(vol_read(g->array, buf, len, 0), 0);
	CHECK(memcmp(buf, flat, len) == 0);
	CHECK_EQ(rig_mismatch(g), 0);
	free(buf);
	free(flat);
	rig_close(g);
}

/* Write-behind under the journal logs a sealed piece while the member
 * lanes still write the one before, lane 0's member included: with
 * member 0's writes held, a stream of two pieces reaches the log as two
 * appends (two flushes of it).  Lane 0 logging the next piece after
 * writing its own part of this one would stop at one. */
static void test_log_ahead(void)
{
	struct rig g;
	struct md_journal_stats st;
	unsigned long long seed = check_seed(0x4a);

	rig_open_chunks(&g, 5, 32 << 20, 512);
	/* member 0 behind a gate, the log behind another (open) */
	struct raid_geom geom = {.level = 5, .layout = 2, .chunk = g.chunk, .raid_disks = g.n};
	struct vol *given[8];
	struct gate *g0;
	vol_close(g.array);
	for (unsigned i = 0; i < g.n; i++)
		CHECK_EQ(slice_open(g.members[i], 0, g.msize, false, "s", &given[i]), 0);
	g0 = gate_over(given[0]);
	given[0] = &g0->vol;
	CHECK_EQ(raid_open(&geom, given, NULL, "t", &g.array), 0);
	struct gate *lg = gate_over(g.jmem);
	g.jmem = &lg->vol;
	CHECK_EQ(rig_journal(&g, &st, true), 0);
	CHECK_EQ(raid_set_writebehind(g.array, 1), 0);

	uint64_t piece = 64 * (uint64_t)g.chunk * (g.n - g.m); /* 64 stripes under a log */
	unsigned char *flat = malloc(2 * piece), *buf = malloc(2 * piece);
	fill(flat, 2 * piece, &seed);
	gate_set(g0, true);
	unsigned before = lg->flushes;
	CHECK_EQ(vol_write(g.array, flat, piece, 0, 0), 0);
	CHECK_EQ(vol_write(g.array, flat + piece, piece, piece, 0), 0);
	/* Wait for the second append; lane 0 is held at the gate meanwhile. */
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 20;
	pthread_mutex_lock(&lg->mu);
	while (lg->flushes < before + 2 && pthread_cond_timedwait(&lg->cv, &lg->mu, &until) == 0)
		;
	unsigned appends = lg->flushes - before;
	pthread_mutex_unlock(&lg->mu);
	CHECK(appends >= 2);
	gate_set(g0, false);
	stream_done(&g, flat, buf, 2 * piece);
}

/* Write-behind under the journal prepares and numbers a sealed piece
 * while the log still writes the one before: with the log's writes held,
 * a stream of two pieces is numbered in the log (its head past both)
 * before either is written.  One log lane, busy writing the first, would
 * number the second only after. */
static void test_log_two_ahead(void)
{
	struct rig g;
	struct md_journal_stats st;
	unsigned long long seed = check_seed(0x4b);

	rig_open_chunks(&g, 5, 32 << 20, 512);
	struct gate *lg = gate_over(g.jmem);
	g.jmem = &lg->vol;
	CHECK_EQ(rig_journal(&g, &st, true), 0);
	CHECK_EQ(raid_set_writebehind(g.array, 1), 0);

	uint64_t piece = 64 * (uint64_t)g.chunk * (g.n - g.m); /* 64 stripes under a log */
	uint64_t sectors = piece / (g.n - g.m) * g.n / 512;    /* its data and parity */
	uint64_t size = g.jmem->size / 512, before = md_journal_head(g.j);
	unsigned char *flat = malloc(2 * piece), *buf = malloc(2 * piece);
	fill(flat, 2 * piece, &seed);
	gate_set(lg, true);
	CHECK_EQ(vol_write(g.array, flat, piece, 0, 0), 0);
	CHECK_EQ(vol_write(g.array, flat + piece, piece, piece, 0), 0);
	uint64_t moved = 0;
	for (int i = 0; i < 2000 && moved < 2 * sectors; i++) {
		struct timespec ms10 = {0, 10 * 1000 * 1000};
		nanosleep(&ms10, NULL);
		moved = (md_journal_head(g.j) + size - before) % size;
	}
	CHECK(moved >= 2 * sectors);
	gate_set(lg, false);
	stream_done(&g, flat, buf, 2 * piece);
}

int main(void)
{
	test_crc32c();
	test_codec();
	for (int level = 5; level <= 6; level++) {
		test_replay_torn(level);
		test_replay_parity_lost(level);
		test_wrap(level);
		test_concurrent(level);
		test_wb_whole(level);
		test_wb_replay(level);
		test_wb_through(level);
	}
	test_corrupt_ends_log();
	test_reclaim_thread();
	test_log_ahead();
	test_log_two_ahead();
	return check_done();
}
