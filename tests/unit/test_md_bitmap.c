/* test_md_bitmap.c — md's internal write-intent bitmap (md/md_bitmap.h):
 * a bitmap superblock decodes and checks, and a corrupt one (magic, chunk
 * size, uuid, version) is refused with a reason; array offsets map to the
 * kernel's index space per level and back; the upkeep sets a chunk's bit
 * durably once, then costs nothing, and clears it only after two idle
 * passes and never under a write in flight; and through a whole array
 * (`uraid create --bitmap internal`, assembled over recording members):
 * every member's bitmap is written before the first data write to a fresh
 * chunk, the bitmap's events follow the superblock's, a clean close leaves
 * no bit set, and a crash copy resyncs only its dirty chunks; a corrupt
 * bitmap is left alone; one behind the superblock's events is not trusted
 * (full resync) and is started over.  Writer threads racing a clearing
 * thread never see their chunk's bit clear on disk mid-write. */
#include "check.h"
#include "member_files.h"

#include "cli/cli.h"
#include "core/log.h"
#include "md/md.h"
#include "md/md_bitmap.h"
#include "member/member.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MEMBER_SIZE (8u << 20)
#define BM_AT 8192u /* bitmap_offset 8 from the superblock at 4096 */

static const uint8_t uuid_a[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

static void good_header(struct md_bitmap_info *b)
{
	memset(b, 0, sizeof(*b));
	b->version = MD_BITMAP_V;
	memcpy(b->uuid, uuid_a, 16);
	b->events = 7;
	b->events_cleared = 5;
	b->sync_size = 2048;
	b->chunksize = 65536;
	b->daemon_sleep = 5;
}

static bool detail_has(const char *word)
{
	return strstr(err_detail(-EINVAL), word) != NULL;
}

static void test_parse(void)
{
	uint8_t buf[MD_BITMAP_HDR];
	struct md_bitmap_info b, d;

	good_header(&b);
	md_bitmap_encode(&b, buf);
	CHECK(memcmp(buf, "bitm", 4) == 0);
	CHECK_EQ(md_bitmap_decode(buf, &d, "m"), 0);
	CHECK(memcmp(&b, &d, sizeof(b)) == 0);
	CHECK_EQ(md_bitmap_check(&d, uuid_a, "m"), 0);
	d.version = MD_BITMAP_V_HOSTENDIAN;
	CHECK_EQ(md_bitmap_check(&d, uuid_a, "m"), 0);

	buf[0] ^= 0xff;
	err_clear();
	CHECK_EQ(md_bitmap_decode(buf, &d, "m"), -ENOENT);
	CHECK(detail_has("magic"));

	struct md_bitmap_info bad = b;
	bad.chunksize = 1000;
	err_clear();
	CHECK_EQ(md_bitmap_check(&bad, uuid_a, "m"), -EUCLEAN);
	CHECK(detail_has("chunk size"));
	bad.chunksize = 256;
	CHECK_EQ(md_bitmap_check(&bad, uuid_a, "m"), -EUCLEAN);

	uint8_t other[16];
	memcpy(other, uuid_a, 16);
	other[3] ^= 1;
	err_clear();
	CHECK_EQ(md_bitmap_check(&b, other, "m"), -EUCLEAN);
	CHECK(detail_has("uuid"));

	bad = b;
	bad.version = 5;
	err_clear();
	CHECK_EQ(md_bitmap_check(&bad, uuid_a, "m"), -EINVAL);
	CHECK(detail_has("version"));
	bad = b;
	bad.events_cleared = 9;
	CHECK_EQ(md_bitmap_check(&bad, uuid_a, "m"), -EUCLEAN);
	bad = b;
	bad.daemon_sleep = 0;
	CHECK_EQ(md_bitmap_check(&bad, uuid_a, "m"), -EUCLEAN);
}

static void test_mapping(void)
{
	struct md_bitmap_geom g;
	uint64_t f, e, off, len;
	const uint64_t K = 1024, M = 1 << 20;

	/* raid1: member sectors = array sectors */
	CHECK_EQ(md_bitmap_geom_init(&g, 1, 2, 0, 2048 * 100, 100 * M), 0);
	CHECK_EQ(md_bitmap_index_size(&g), 100 * M);
	md_bitmap_map(&g, 5 * M + 3 * K, 4 * K, &f, &e);
	CHECK(f == 5 * M + 3 * K && e == 5 * M + 7 * K);
	/* raid10: the kernel indexes array sectors */
	CHECK_EQ(md_bitmap_geom_init(&g, 10, 4, 1024, 2048 * 100, 200 * M), 0);
	CHECK_EQ(md_bitmap_index_size(&g), 200 * M);
	md_bitmap_map(&g, 150 * M, 4 * K, &f, &e);
	CHECK(f == 150 * M && e == 150 * M + 4 * K);
	/* raid5 on 3: member sectors; 64K chunks, rows of 128K */
	CHECK_EQ(md_bitmap_geom_init(&g, 5, 3, 128, 2048 * 100, 200 * M), 0);
	CHECK_EQ(md_bitmap_index_size(&g), 100 * M);
	md_bitmap_map(&g, 0, 4 * K, &f, &e);
	CHECK(f == 0 && e == 4 * K);
	md_bitmap_map(&g, 64 * K + 8 * K, 4 * K, &f, &e); /* 2nd data chunk, row 0 */
	CHECK(f == 8 * K && e == 12 * K);
	md_bitmap_map(&g, 128 * K + 4 * K, 4 * K, &f, &e); /* row 1 */
	CHECK(f == 64 * K + 4 * K && e == 64 * K + 8 * K);
	md_bitmap_map(&g, 60 * K, 8 * K, &f, &e); /* straddles data chunks */
	CHECK(f == 0 && e == 64 * K);
	md_bitmap_map(&g, 100 * K, 200 * K, &f, &e); /* rows 0..2 */
	CHECK(f == 0 && e == 192 * K);
	md_bitmap_unmap(&g, 0, M, &off, &len); /* 1M of each member: 2M of array */
	CHECK(off == 0 && len == 2 * M);
	md_bitmap_unmap(&g, 99 * M, 101 * M, &off, &len); /* clipped */
	CHECK(off == 198 * M && len == 2 * M);
	/* raid6 on 4: two data disks too */
	CHECK_EQ(md_bitmap_geom_init(&g, 6, 4, 128, 2048 * 100, 200 * M), 0);
	md_bitmap_map(&g, 128 * K, 4 * K, &f, &e);
	CHECK(f == 64 * K && e == 68 * K);
	/* none for raid0 and linear */
	CHECK(md_bitmap_geom_init(&g, 0, 2, 128, 2048, M) < 0);
	CHECK(md_bitmap_geom_init(&g, MD_LEVEL_LINEAR, 2, 0, 2048, M) < 0);

	/* mdadm's chunk choice */
	CHECK_EQ(md_bitmap_pick_chunk(63 * M, 4096, 0), 64 * M);
	CHECK_EQ(md_bitmap_pick_chunk(63 * M, 4096, M), M);
	CHECK_EQ(md_bitmap_pick_chunk(1ull << 40, 4096, 4096), 0);
	CHECK_EQ(md_bitmap_pick_chunk(16ull << 40, 128 * K, 0), 64 * M);
	CHECK_EQ(md_bitmap_pick_chunk(64ull << 40, 256 * K, 0), 128 * M);

	/* md_bitmap_resize's chunk (raid10_start_reshape): kept while the
	 * header and the bits fit the space, doubled until they do */
	CHECK_EQ(md_bitmap_resize_chunk(14 * M, 512, 64 * M), 64 * M);
	CHECK_EQ(md_bitmap_resize_chunk(2048 * 64 * K, 512, 64 * K), 64 * K); /* 256 + 256 */
	CHECK_EQ(md_bitmap_resize_chunk(2048 * 64 * K + 1, 512, 64 * K),
	         128 * K);                                                   /* one bit more */
	CHECK_EQ(md_bitmap_resize_chunk(1ull << 50, 512, 4096), 1ull << 31); /* md's limit */
	/* bits carried into a chunk twice the size: each sets the one it lies in */
	uint8_t from[MD_BITMAP_HDR + 2] = {0}, to[MD_BITMAP_HDR + 1] = {0};
	from[MD_BITMAP_HDR] = 0x81;     /* chunks 0 and 7 */
	from[MD_BITMAP_HDR + 1] = 0x04; /* chunk 10 */
	md_bitmap_regrid(from, 11, 64 * K, to, 6, 128 * K);
	CHECK_EQ(to[MD_BITMAP_HDR], 0x29); /* 0, 3, 5 */
	memset(to, 0, sizeof(to));
	md_bitmap_regrid(from, 11, 64 * K, to, 4, 128 * K); /* clipped to 4 chunks */
	CHECK_EQ(to[MD_BITMAP_HDR], 0x09);
}

/* A fake io: records what was written. */
struct rec_io {
	int writes;
	size_t off, len;
	uint8_t img[8192];
};

static int rec_write(void *ctx, const uint8_t *img, size_t off, size_t len)
{
	struct rec_io *r = ctx;
	r->writes++;
	r->off = off;
	r->len = len;
	memcpy(r->img + off, img + off, len);
	return 0;
}

static void test_upkeep(void)
{
	struct md_bitmap_info h;
	struct rec_io rio = {0};
	struct md_bitmap_io io = {rec_write, &rio};
	struct md_bitmap *b;
	const uint64_t C = 65536;

	good_header(&h);
	err_clear();
	CHECK_EQ(md_bitmap_new(&h, 100 * C, 512, 256, NULL, &io, "t", &b), -ENOSPC);
	CHECK_EQ(md_bitmap_new(&h, 100 * C, 512, 4096, NULL, &io, "t", &b), 0);
	CHECK_EQ(md_bitmap_chunks(b), 100);
	CHECK_EQ(md_bitmap_header(b)->sync_size, 100 * C / 512);

	/* a fresh chunk: not durable, marked, written */
	CHECK(!md_bitmap_start(b, 3 * C + 10, 3 * C + 20));
	CHECK_EQ(md_bitmap_mark(b, 3 * C + 10, 3 * C + 20), 0);
	CHECK_EQ(rio.writes, 1);
	CHECK(rio.img[MD_BITMAP_HDR] & (1 << 3));
	CHECK(md_bitmap_test(b, 3));
	/* again, while the first is in flight and after: no write */
	CHECK(md_bitmap_start(b, 3 * C, 4 * C));
	md_bitmap_end(b, 3 * C, 4 * C);
	md_bitmap_end(b, 3 * C + 10, 3 * C + 20);
	CHECK(md_bitmap_start(b, 3 * C, 3 * C + 1));
	md_bitmap_end(b, 3 * C, 3 * C + 1);
	CHECK_EQ(rio.writes, 1);
	/* chunks 10..11 across a boundary, one write kept in flight */
	CHECK(!md_bitmap_start(b, 11 * C - 1, 11 * C + 1));
	CHECK_EQ(md_bitmap_mark(b, 11 * C - 1, 11 * C + 1), 0);
	CHECK_EQ(md_bitmap_dirty(b), 3);

	/* clearing: the first pass only notes that they were touched */
	CHECK_EQ(md_bitmap_clear_idle(b, 9), 0);
	CHECK_EQ(md_bitmap_dirty(b), 3);
	/* the second clears the idle chunk 3, not 10/11 (in flight) */
	int w = rio.writes;
	CHECK_EQ(md_bitmap_clear_idle(b, 9), 0);
	CHECK_EQ(rio.writes, w + 1);
	CHECK(!md_bitmap_test(b, 3) && md_bitmap_test(b, 10) && md_bitmap_test(b, 11));
	CHECK(!(rio.img[MD_BITMAP_HDR] & (1 << 3)));
	struct md_bitmap_info d;
	CHECK_EQ(md_bitmap_decode(rio.img, &d, "t"), 0);
	CHECK_EQ(d.events_cleared, 9);
	/* a write that starts again after a clear sets it again */
	CHECK(!md_bitmap_start(b, 3 * C, 3 * C + 1));
	CHECK_EQ(md_bitmap_mark(b, 3 * C, 3 * C + 1), 0);
	CHECK(rio.img[MD_BITMAP_HDR] & (1 << 3));
	md_bitmap_end(b, 3 * C, 3 * C + 1);
	/* clear_all refuses while a write is in flight */
	CHECK_EQ(md_bitmap_clear_all(b, 10), -EBUSY);
	md_bitmap_end(b, 11 * C - 1, 11 * C + 1);
	CHECK_EQ(md_bitmap_clear_all(b, 10), 0);
	CHECK_EQ(md_bitmap_dirty(b), 0);
	CHECK_EQ(md_bitmap_set_events(b, 11), 0);
	CHECK_EQ(md_bitmap_decode(rio.img, &d, "t"), 0);
	CHECK(d.events == 11 && d.events_cleared == 10);
	for (int i = 0; i < 13; i++)
		CHECK_EQ(rio.img[MD_BITMAP_HDR + i], 0);

	/* bits from an image on disk */
	uint8_t img[4096] = {0};
	md_bitmap_encode(&h, img);
	img[MD_BITMAP_HDR + 1] = 0x81; /* chunks 8 and 15 */
	md_bitmap_merge(b, img);
	CHECK(md_bitmap_test(b, 8) && md_bitmap_test(b, 15) && md_bitmap_dirty(b) == 2);
	CHECK(md_bitmap_start(b, 8 * C, 8 * C + 1)); /* already durable */
	md_bitmap_end(b, 8 * C, 8 * C + 1);
	md_bitmap_free(b);
}

/* Races: writer threads on a few chunks while another thread runs
 * clearing passes back to back.  Every "data write" checks that its
 * chunk's bit is set on the (recorded) disk at that moment. */
#define RACE_CHUNKS 8
static _Atomic uint8_t race_disk[4096];
static pthread_mutex_t race_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int race_bad, race_stop;
static atomic_long race_marks, race_clears;

static int race_write(void *ctx, const uint8_t *img, size_t off, size_t len)
{
	(void)ctx;
	for (size_t i = off; i < off + len; i++)
		atomic_store(&race_disk[i], img[i]);
	return 0;
}

static void *race_writer(void *arg)
{
	struct md_bitmap *b = arg;
	unsigned long long seed = (unsigned long long)(uintptr_t)&b ^ 0x9e3779b97f4a7c15ull;

	for (int i = 0; i < 5000; i++) {
		uint64_t c = check_rand(&seed) % RACE_CHUNKS, f = c * 65536, e = f + 4096;
		if (!md_bitmap_start(b, f, e)) {
			pthread_mutex_lock(&race_lock);
			if (md_bitmap_mark(b, f, e) < 0)
				atomic_fetch_add(&race_bad, 1);
			pthread_mutex_unlock(&race_lock);
			atomic_fetch_add(&race_marks, 1);
		}
		/* The data write takes a while: the bit must stay set all along. */
		for (int k = 0; k < 3; k++) {
			if (!(atomic_load(&race_disk[MD_BITMAP_HDR + c / 8]) & (1u << (c % 8))))
				atomic_fetch_add(&race_bad, 1);
			sched_yield();
		}
		md_bitmap_end(b, f, e);
	}
	return NULL;
}

static void *race_clearer(void *arg)
{
	struct md_bitmap *b = arg;
	while (!atomic_load(&race_stop)) {
		pthread_mutex_lock(&race_lock);
		md_bitmap_clear_idle(b, 1);
		pthread_mutex_unlock(&race_lock);
		atomic_fetch_add(&race_clears, 1);
	}
	return NULL;
}

static void test_races(void)
{
	struct md_bitmap_info h;
	struct md_bitmap_io io = {race_write, NULL};
	struct md_bitmap *b;
	pthread_t w[4], cl;

	good_header(&h);
	CHECK_EQ(md_bitmap_new(&h, RACE_CHUNKS * 65536, 512, 4096, NULL, &io, "race", &b), 0);
	CHECK_EQ(pthread_create(&cl, NULL, race_clearer, b), 0);
	for (int i = 0; i < 4; i++)
		CHECK_EQ(pthread_create(&w[i], NULL, race_writer, b), 0);
	for (int i = 0; i < 4; i++)
		pthread_join(w[i], NULL);
	atomic_store(&race_stop, 1);
	pthread_join(cl, NULL);
	CHECK_EQ(atomic_load(&race_bad), 0);
	CHECK(atomic_load(&race_marks) > RACE_CHUNKS); /* bits were cleared and set again */
	fprintf(stderr, "races: %ld bitmap writes to set, %ld clearing passes\n",
	        atomic_load(&race_marks), atomic_load(&race_clears));
	CHECK_EQ(md_bitmap_clear_all(b, 2), 0);
	md_bitmap_free(b);
}

/* ---- through a whole array ---- */

/* A member that records the writes reaching it, in order, for every
 * member in one log. */
struct rec_vol {
	struct vol vol;
	struct vol *inner;
	int idx;
};

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	int idx;
	uint64_t off, len;
} wlog[4096];
static int nlog;

static int rv_read(struct vol *v, void *buf, uint64_t len, uint64_t off)
{
	return vol_read(container_of(v, struct rec_vol, vol)->inner, buf, len, off);
}

static int rv_write(struct vol *v, const void *buf, uint64_t len, uint64_t off, unsigned flags)
{
	struct rec_vol *r = container_of(v, struct rec_vol, vol);
	pthread_mutex_lock(&log_lock);
	if (nlog < 4096)
		wlog[nlog++] = (typeof(wlog[0])){r->idx, off, len};
	pthread_mutex_unlock(&log_lock);
	return vol_write(r->inner, buf, len, off, flags);
}

static int rv_flush(struct vol *v)
{
	return vol_flush(container_of(v, struct rec_vol, vol)->inner);
}

static void rv_close(struct vol *v)
{
	struct rec_vol *r = container_of(v, struct rec_vol, vol);
	vol_close(r->inner);
	vol_fini(v);
	free(r);
}

static const struct vol_ops rv_ops = {
    .kind = "rec", .read = rv_read, .write = rv_write, .flush = rv_flush, .close = rv_close};

static struct vol *rec_open(int i)
{
	struct rec_vol *r = calloc(1, sizeof(*r));
	CHECK(r && member_open(path(i), 0, &r->inner) == 0);
	CHECK_EQ(vol_init(&r->vol, &rv_ops, path(i), r->inner->size, r->inner->block_min, 0), 0);
	r->idx = i;
	return &r->vol;
}

static struct vol *assemble(const int *idx, int n, bool recording)
{
	struct md_assemble_opts o = {0};
	struct vol *m[8], **res;
	int nres;

	for (int i = 0; i < n; i++) {
		if (recording)
			m[i] = rec_open(idx[i]);
		else
			CHECK_EQ(member_open(path(idx[i]), 0, &m[i]), 0);
	}
	err_clear();
	if (md_assemble_all(m, n, &o, &res, &nres) < 0 || nres != 1) {
		fprintf(stderr, "assemble: %s\n", err_detail(-EIO));
		CHECK(0);
		return NULL;
	}
	struct vol *v = res[0];
	free(res);
	return v;
}

/* The bitmap and superblock of member i, from the file. */
static void read_member(int i, struct md_super *s, struct md_bitmap_info *b, uint8_t *bits)
{
	struct vol *m;
	uint8_t buf[4096];

	CHECK_EQ(member_open(path(i), MEMBER_READONLY, &m), 0);
	CHECK_EQ(md_super_read(m, s), 0);
	CHECK_EQ(vol_read(m, buf, 4096, BM_AT), 0);
	CHECK_EQ(md_bitmap_decode(buf, b, "m"), 0);
	if (bits)
		memcpy(bits, buf + MD_BITMAP_HDR, 64);
	vol_close(m);
}

static void copy_file(int from, int to)
{
	static char buf[1 << 16];
	FILE *f = fopen(path(from), "rb"), *t = fopen(path(to), "wb");
	size_t got;

	CHECK(f && t);
	while (f && t && (got = fread(buf, 1, sizeof(buf), f)) > 0)
		CHECK(fwrite(buf, 1, got, t) == got);
	if (f)
		fclose(f);
	if (t)
		fclose(t);
}

/* In the log: every member's bitmap block written before the first
 * write at or past data (there must be one). */
static void check_bitmap_first(uint64_t data)
{
	int first_data = -1, bm_seen[2] = {0, 0};

	for (int i = 0; i < nlog; i++) {
		if (wlog[i].off >= data) {
			if (first_data < 0)
				first_data = i;
		} else if (wlog[i].off >= BM_AT && wlog[i].off < BM_AT + 4096 && first_data < 0) {
			bm_seen[wlog[i].idx] = 1;
		}
	}
	CHECK(first_data > 0);
	CHECK(bm_seen[0] && bm_seen[1]);
}

static void test_array_raid1(void)
{
	const int idx[2] = {0, 1}, crash[2] = {2, 3};
	const uint64_t C = 64 << 10; /* bitmap chunk */
	struct md_super s;
	struct md_bitmap_info b;
	uint8_t bits[64], buf[4096];
	struct vol *v;

	fprintf(stderr, "raid1 with an internal bitmap\n");
	member_file_make(0, MEMBER_SIZE);
	member_file_make(1, MEMBER_SIZE);
	CHECK_EQ(
	    create("--level=1", "--bitmap=internal", "--bitmap-chunk=64", path(0), path(1), NULL),
	    0);
	read_member(0, &s, &b, bits);
	CHECK(s.feature_map & MD_FEATURE_BITMAP_OFFSET);
	CHECK_EQ(md_bitmap_check(&b, s.set_uuid, "m0"), 0);
	CHECK(b.events == s.events && b.chunksize == C && bits[0] == 0);
	CHECK_EQ(b.sync_size, s.size);

	v = assemble(idx, 2, true);
	if (!v)
		return;
	uint64_t data = s.data_offset * 512;
	nlog = 0;
	memset(buf, 0xab, sizeof(buf));
	CHECK_EQ(vol_write(v, buf, 4096, 5 * C + 8192, 0), 0);
	/* Every member's bitmap is written before the first data write (here
	 * with the superblocks that mark the array active). */
	check_bitmap_first(data);
	read_member(1, &s, &b, bits);
	CHECK_EQ(bits[0], 1 << 5);
	CHECK_EQ(b.events, s.events); /* marked active: both moved together */
	/* Again in the same chunk: only data. */
	nlog = 0;
	CHECK_EQ(vol_write(v, buf, 4096, 5 * C, 0), 0);
	for (int i = 0; i < nlog; i++)
		CHECK(wlog[i].off >= data);
	/* A fresh chunk of an active array: the bitmap alone goes first. */
	nlog = 0;
	CHECK_EQ(vol_write(v, buf, 4096, 9 * C, 0), 0);
	check_bitmap_first(data);
	for (int i = 0; i < nlog; i++)
		CHECK(wlog[i].off >= BM_AT); /* no superblock write */
	/* One more; then a crash copy (the files as they are now). */
	CHECK_EQ(vol_write(v, buf, 4096, 17 * C + C - 4096, 0), 0);
	CHECK_EQ(vol_flush(v), 0);
	copy_file(0, 2);
	copy_file(1, 3);
	vol_close(v);
	for (int i = 0; i < 2; i++) {
		read_member(i, &s, &b, bits);
		CHECK(md_super_clean(&s));
		CHECK(b.events == s.events && b.events_cleared == s.events);
		for (int k = 0; k < 8; k++)
			CHECK_EQ(bits[k], 0);
	}

	/* The crash copy: dirty chunks 5, 9, 17; a torn write planted in
	 * chunk 9 on one member, and (as a witness) a difference in chunk 30
	 * that no bit covers, which a bitmap resync must not visit. */
	read_member(2, &s, &b, bits);
	CHECK(!md_super_clean(&s));
	CHECK(bits[0] == (1 << 5) && bits[1] == (1 << 1) && bits[2] == (1 << 1));
	CHECK_EQ(b.events, s.events);
	struct vol *m;
	uint8_t x[4] = {'X', 'X', 'X', 'X'}, got0[4], got1[4];
	CHECK_EQ(member_open(path(3), 0, &m), 0);
	CHECK_EQ(vol_write(m, x, 4, data + 9 * C + 100, 0), 0);
	CHECK_EQ(vol_write(m, x, 4, data + 30 * C + 100, 0), 0);
	vol_close(m);
	v = assemble(crash, 2, false);
	if (!v)
		return;
	vol_close(v);
	struct vol *m2, *m3;
	CHECK_EQ(member_open(path(2), MEMBER_READONLY, &m2), 0);
	CHECK_EQ(member_open(path(3), MEMBER_READONLY, &m3), 0);
	CHECK_EQ(vol_read(m2, got0, 4, data + 9 * C + 100), 0);
	CHECK_EQ(vol_read(m3, got1, 4, data + 9 * C + 100), 0);
	CHECK(memcmp(got0, got1, 4) == 0); /* repaired */
	CHECK_EQ(vol_read(m2, got0, 4, data + 30 * C + 100), 0);
	CHECK_EQ(vol_read(m3, got1, 4, data + 30 * C + 100), 0);
	CHECK(memcmp(got0, got1, 4) != 0); /* not visited */
	vol_close(m2);
	vol_close(m3);
	read_member(3, &s, &b, bits);
	CHECK(md_super_clean(&s) && b.events == s.events && bits[0] == 0 && bits[1] == 0);
}

static void test_array_raid5(void)
{
	const int idx[3] = {0, 1, 2};
	struct md_super s;
	struct md_bitmap_info b;
	uint8_t bits[64], buf[4096];
	struct vol *v;

	fprintf(stderr, "raid5 with an internal bitmap\n");
	for (int i = 0; i < 3; i++)
		member_file_make(i, MEMBER_SIZE);
	CHECK_EQ(create("--level=5", "--chunk=64", "--bitmap=internal", "--bitmap-chunk=128",
	                path(0), path(1), path(2), NULL),
	         0);
	read_member(0, &s, &b, bits);
	CHECK_EQ(b.sync_size, s.size); /* member sectors */
	v = assemble(idx, 3, false);
	if (!v)
		return;
	memset(buf, 0x5a, sizeof(buf));
	/* array byte 1M is row 8 (rows of 128K), member byte 512K: chunk 4 */
	CHECK_EQ(vol_write(v, buf, 4096, 1 << 20, 0), 0);
	read_member(2, &s, &b, bits);
	CHECK_EQ(bits[0], 1 << 4);
	CHECK_EQ(b.events, s.events);
	vol_close(v);
	read_member(2, &s, &b, bits);
	CHECK(md_super_clean(&s) && b.events == s.events && bits[0] == 0);
}

/* A corrupt bitmap is warned about, never fatal. */
static void test_corrupt(void)
{
	const int idx[2] = {0, 1};
	struct vol *v, *m;
	uint8_t buf[4096];

	fprintf(stderr, "raid1 with a corrupt bitmap\n");
	member_file_make(0, MEMBER_SIZE);
	member_file_make(1, MEMBER_SIZE);
	CHECK_EQ(create("--level=1", "--bitmap=internal", path(0), path(1), NULL), 0);
	for (int i = 0; i < 2; i++) {
		CHECK_EQ(member_open(path(i), 0, &m), 0);
		memset(buf, 0x33, sizeof(buf));
		CHECK_EQ(vol_write(m, buf, 4096, BM_AT, 0), 0);
		vol_close(m);
	}
	v = assemble(idx, 2, false);
	if (!v)
		return;
	CHECK_EQ(vol_write(v, buf, 4096, 0, 0), 0);
	vol_close(v);
	CHECK_EQ(member_open(path(0), MEMBER_READONLY, &m), 0);
	CHECK_EQ(vol_read(m, buf, 16, BM_AT), 0);
	CHECK_EQ(buf[0], 0x33); /* left alone */
	vol_close(m);
}

/* A header's chunk count is bounded before anything is allocated or
 * written: by the space the header reserves (sectors_reserved, the
 * kernel's bound) within the room before the data, and by the most chunks
 * uraid keeps; beyond either the bitmap is refused with a reason. */
static void test_bounds(void)
{
	struct md_bitmap_info h;
	struct rec_io rio = {0};
	struct md_bitmap_io io = {rec_write, &rio};
	struct md_bitmap *b = NULL;

	good_header(&h);
	h.chunksize = 512;
	h.sectors_reserved = 2; /* 1 KiB: 256 + 768 bytes of bits = 6144 chunks */
	err_clear();
	CHECK_EQ(md_bitmap_new(&h, 6144 * 512, 512, 1 << 20, NULL, &io, "t", &b), 0);
	md_bitmap_free(b);
	b = NULL;
	CHECK_EQ(md_bitmap_new(&h, 6145 * 512, 512, 1 << 20, NULL, &io, "t", &b), -ENOSPC);
	CHECK(detail_has("reserves"));
	md_bitmap_free(b);
	b = NULL;
	/* 64 GiB in 512-byte chunks: 2^27 chunks, in room enough for them */
	h.sectors_reserved = 0;
	err_clear();
	CHECK_EQ(md_bitmap_new(&h, 64ull << 30, 512, 32u << 20, NULL, &io, "t", &b), -EFBIG);
	CHECK(detail_has("at most"));
	md_bitmap_free(b);
	b = NULL;
	/* nor does create make one: 256 GiB in 4 KiB chunks is 2^26 */
	CHECK_EQ(md_bitmap_pick_chunk(256ull << 30, 32u << 20, 4096), 0);
}

/* Through an array: a header whose chunks do not fit in the space it
 * reserves (here its chunk size cut to 512) is refused, left alone on
 * disk, and never written past what it reserves. */
static void test_crafted(void)
{
	const int idx[2] = {0, 1};
	struct md_bitmap_info b;
	struct md_super s;
	uint8_t buf[4096], before[2][8192], after[8192];
	struct vol *v, *m;

	fprintf(stderr, "raid1 with a bitmap header claiming more chunks than its space holds\n");
	member_file_make(0, MEMBER_SIZE);
	member_file_make(1, MEMBER_SIZE);
	CHECK_EQ(create("--level=1", "--bitmap=internal", path(0), path(1), NULL), 0);
	for (int i = 0; i < 2; i++) {
		read_member(i, &s, &b, NULL);
		b.chunksize = 512;
		b.sectors_reserved = 2;
		CHECK_EQ(member_open(path(i), 0, &m), 0);
		CHECK_EQ(vol_read(m, buf, 4096, BM_AT), 0);
		md_bitmap_encode(&b, buf);
		CHECK_EQ(vol_write(m, buf, 4096, BM_AT, 0), 0);
		CHECK_EQ(vol_read(m, before[i], sizeof(before[i]), BM_AT), 0);
		vol_close(m);
	}
	v = assemble(idx, 2, false);
	if (!v)
		return;
	memset(buf, 0x44, sizeof(buf));
	CHECK_EQ(vol_write(v, buf, 4096, 0, 0), 0);
	vol_close(v);
	for (int i = 0; i < 2; i++) {
		CHECK_EQ(member_open(path(i), MEMBER_READONLY, &m), 0);
		CHECK_EQ(vol_read(m, after, sizeof(after), BM_AT), 0);
		CHECK(memcmp(after, before[i], sizeof(after)) == 0);
		vol_close(m);
	}
}

/* A bitmap left behind (events older than the superblock's, as one that
 * an older uraid or a stopped bitmap daemon leaves) is not trusted: its
 * bits do not guide the resync, which then covers everything; then it is
 * started over, and kept up again. */
static void test_stale(void)
{
	const int idx[2] = {0, 1};
	struct md_super s;
	struct md_bitmap_info b;
	uint8_t bits[64], buf[4096];
	struct vol *v, *m;

	fprintf(stderr, "raid1 with a stale bitmap\n");
	member_file_make(0, MEMBER_SIZE);
	member_file_make(1, MEMBER_SIZE);
	CHECK_EQ(
	    create("--level=1", "--bitmap=internal", "--bitmap-chunk=64", path(0), path(1), NULL),
	    0);
	v = assemble(idx, 2, false);
	if (!v)
		return;
	memset(buf, 0x11, sizeof(buf));
	CHECK_EQ(vol_write(v, buf, 4096, 0, 0), 0);
	/* A crash copy, then the bitmaps put behind by one event with no bit
	 * set, and a difference planted in chunk 30 (no bit covers it). */
	copy_file(0, 2);
	copy_file(1, 3);
	vol_close(v);
	read_member(2, &s, &b, NULL);
	CHECK(!md_super_clean(&s));
	uint64_t data = s.data_offset * 512;
	for (int i = 2; i < 4; i++) {
		CHECK_EQ(member_open(path(i), 0, &m), 0);
		CHECK_EQ(vol_read(m, buf, 4096, BM_AT), 0);
		b.events = s.events - 1;
		b.events_cleared = 0;
		md_bitmap_encode(&b, buf);
		memset(buf + MD_BITMAP_HDR, 0, 64);
		CHECK_EQ(vol_write(m, buf, 4096, BM_AT, 0), 0);
		if (i == 3)
			CHECK_EQ(vol_write(m, "XXXX", 4, data + 30 * 65536 + 100, 0), 0);
		vol_close(m);
	}
	const int crash[2] = {2, 3};
	v = assemble(crash, 2, false);
	if (!v)
		return;
	vol_close(v);
	uint8_t got0[4], got1[4];
	struct vol *m2, *m3;
	CHECK_EQ(member_open(path(2), MEMBER_READONLY, &m2), 0);
	CHECK_EQ(member_open(path(3), MEMBER_READONLY, &m3), 0);
	CHECK_EQ(vol_read(m2, got0, 4, data + 30 * 65536 + 100), 0);
	CHECK_EQ(vol_read(m3, got1, 4, data + 30 * 65536 + 100), 0);
	CHECK(memcmp(got0, got1, 4) == 0); /* the full resync reached it */
	vol_close(m2);
	vol_close(m3);
	for (int i = 2; i < 4; i++) {
		read_member(i, &s, &b, bits);
		CHECK_EQ(md_bitmap_check(&b, s.set_uuid, "m"), 0);
		CHECK(md_super_clean(&s) && b.events == s.events && b.events_cleared == s.events);
		CHECK(bits[0] == 0 && bits[3] == 0);
	}
}

int main(void)
{
	if (check_tmpdir(dir, sizeof(dir), "mdb") < 0)
		return 1;
	log_verbosity = LOG_ERROR;
	test_parse();
	test_mapping();
	test_upkeep();
	test_races();
	test_array_raid1();
	test_array_raid5();
	test_corrupt();
	test_bounds();
	test_crafted();
	test_stale();
	for (int i = 0; i < 4; i++)
		unlink(path(i));
	rmdir(dir);
	return check_done();
}
