/* test_ppl.c — md's partial parity log (src/md/md_ppl.c): CRC-32C, the
 * header codec and the newest-header scan, and the recovery math: entries
 * logged for random writes over RAID5 (every md layout, 3 to 5 members),
 * the stripes then torn (parity, or a written chunk, left as before the
 * write), and md_ppl_recover_entry must make every stripe's parity agree
 * again, also with the member of a chunk the write left alone missing;
 * an entry whose PP fails its checksum is skipped. */
#include "check.h"
#include "mem_vol.h"

#include "core/crc32c.h"
#include "core/vol.h"
#include "disc/raid/raid.h"
#include "md/md_ppl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void test_crc32c(void)
{
	/* The standard check value, and chaining. */
	CHECK_EQ(~crc32c(~0u, "123456789", 9), 0xe3069283u);
	CHECK_EQ(~crc32c(crc32c(~0u, "1234", 4), "56789", 5), 0xe3069283u);
	CHECK_EQ(~crc32c(~0u, "", 0), 0);
	CHECK_EQ(~crc32c_table(~0u, "123456789", 9), 0xe3069283u);
	/* the instruction and the table agree, at every length and offset */
	unsigned char b[300];
	unsigned long long seed = check_seed(3);
	for (unsigned i = 0; i < sizeof(b); i++)
		b[i] = (unsigned char)check_rand(&seed);
	for (unsigned off = 0; off < 9; off++)
		for (unsigned len = 0; len + off <= sizeof(b); len += 7)
			CHECK_EQ(crc32c(0x1234, b + off, len), crc32c_table(0x1234, b + off, len));
}

static void test_header_codec(void)
{
	static struct md_ppl_header h, g;
	static unsigned char buf[2 * MD_PPL_HEADER_SIZE];
	uint64_t at = 0;

	memset(&h, 0, sizeof(h));
	h.signature = 0x12345678;
	h.generation = 7;
	h.nentries = MD_PPL_MAX_ENTRIES;
	for (unsigned i = 0; i < h.nentries; i++)
		h.e[i] = (struct md_ppl_entry){1000 + i, 4096, 8192, i % 3, 0xabc0 + i};
	md_ppl_header_encode(&h, buf);
	CHECK(buf[0] == 0xff && buf[MD_PPL_HDR_RESERVED - 1] == 0xff);
	CHECK_EQ(md_ppl_header_decode(buf, &g), 0);
	CHECK_EQ(g.signature, h.signature);
	CHECK_EQ(g.generation, 7);
	CHECK_EQ(g.nentries, MD_PPL_MAX_ENTRIES);
	CHECK(memcmp(g.e, h.e, sizeof(h.e)) == 0);
	/* the checksum covers the whole block, the last bytes too */
	buf[MD_PPL_HEADER_SIZE - 1] ^= 1;
	CHECK_EQ(md_ppl_header_decode(buf, &g), -EBADMSG);
	/* a count beyond the block, with a checksum that matches */
	h.nentries = MD_PPL_MAX_ENTRIES + 1;
	md_ppl_header_encode(&h, buf);
	CHECK_EQ(md_ppl_header_decode(buf, &g), -EUCLEAN);

	/* The scan: a header, then one after its PP (none here: pp 0) that
	 * is newer wins; an older one, or another array's, does not. */
	memset(&h, 0, sizeof(h));
	h.signature = 5;
	h.generation = 1;
	md_ppl_header_encode(&h, buf);
	h.generation = 2;
	md_ppl_header_encode(&h, buf + MD_PPL_HEADER_SIZE);
	CHECK_EQ(md_ppl_find(buf, sizeof(buf), 5, &g, &at), 0);
	/* the kernel reads no header in the area's last 4 KiB */
	CHECK_EQ(at, 0);
	static unsigned char area[3 * MD_PPL_HEADER_SIZE];
	memcpy(area, buf, sizeof(buf));
	CHECK_EQ(md_ppl_find(area, sizeof(area), 5, &g, &at), 0);
	CHECK_EQ(at, MD_PPL_HEADER_SIZE);
	CHECK_EQ(g.generation, 2);
	h.generation = 0;
	md_ppl_header_encode(&h, area + MD_PPL_HEADER_SIZE);
	CHECK_EQ(md_ppl_find(area, sizeof(area), 5, &g, &at), 0);
	CHECK_EQ(at, 0);
	CHECK_EQ(md_ppl_find(area, sizeof(area), 6, &g, &at), -ENOENT);
	area[10] ^= 1;
	CHECK_EQ(md_ppl_find(area, sizeof(area), 5, &g, &at), -ENOENT);
	uint8_t uuid[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
	CHECK_EQ(md_ppl_signature(uuid), ~crc32c(~0u, uuid, 16));
}

/* What the log hands the test: the entries and PP of every call since
 * the test began, per parity role, as md_ppl.c's log builds each call's
 * (a request over several rows makes a call per row). */
struct capture {
	unsigned n;
	uint64_t chunk;
	struct md_ppl_header h[8];
	char *pp[8];
	uint64_t used[8];
	uint64_t cap; /* PP bytes each role's log holds; 0: 8 chunks */
	bool full;
};

static int cap_log(void *ctx, const struct raid_log_stripe *s, unsigned n, unsigned flags)
{
	struct capture *c = ctx;
	(void)flags;
	for (unsigned r = 0; r < c->n; r++)
		if (md_ppl_add(&c->h[r], c->pp[r], &c->used[r], c->cap ? c->cap : 8 * c->chunk, s,
		               n, r, c->chunk) < 0)
			c->full = true;
	return 0;
}

static void cap_done(void *ctx, const struct raid_log_stripe *s, unsigned n, int r)
{
	(void)ctx, (void)s, (void)n;
	CHECK_EQ(r, 0);
}

static void fill(unsigned char *b, uint64_t len, unsigned long long *seed)
{
	for (uint64_t i = 0; i < len; i++)
		b[i] = (unsigned char)check_rand(seed);
}

/* Replay every captured entry over the array's members (data[] NULL for
 * a member left out); returns the stats. */
static struct md_ppl_stats replay(struct capture *c, struct vol *a, struct vol **data)
{
	struct md_ppl_array pa = {a, data, c->n, c->chunk};
	struct md_ppl_stats st = {0};
	for (unsigned r = 0; r < c->n; r++) {
		uint64_t pos = 0;
		if (!data[r]) /* its log went with it */
			continue;
		for (unsigned i = 0; i < c->h[r].nentries; i++) {
			const struct md_ppl_entry *e = &c->h[r].e[i];
			CHECK_EQ(~crc32c(~0u, c->pp[r] + pos, e->pp_size), e->checksum);
			CHECK_EQ(md_ppl_recover_entry(&pa, e, c->pp[r] + pos, &st), 0);
			pos += e->pp_size;
		}
	}
	return st;
}

static uint64_t mismatched(struct vol *a)
{
	struct raid_check_report rep = {0};
	CHECK_EQ(raid_check(a, false, &rep, NULL), 0);
	return rep.mismatched;
}

/* One torn write on RAID5 (layout, n members): tear = 0 leaves the
 * parity as it was, 1 a written chunk's data (the first member the
 * write touches). */
static void torn_write(unsigned layout, unsigned n, int tear, unsigned long long *seed)
{
	const uint64_t chunk = 16384, size = 8 * chunk, ndata = n - 1, asize = size * ndata;
	struct raid_geom g = {.level = 5, .layout = layout, .chunk = chunk, .raid_disks = n};
	struct vol *m[8], *a = NULL;
	struct capture c = {.n = n, .chunk = chunk};
	unsigned char *buf = malloc(asize), *before[8];

	for (unsigned i = 0; i < n; i++) {
		m[i] = mem_vol(size);
		c.pp[i] = malloc(8 * chunk);
		before[i] = malloc(size);
	}
	CHECK_EQ(raid_open(&g, m, NULL, "t", &a), 0);
	fill(buf, asize, seed);
	CHECK_EQ(vol_write(a, buf, asize, 0, 0), 0);
	for (unsigned i = 0; i < n; i++)
		CHECK_EQ(vol_read(m[i], before[i], size, 0), 0);
	struct raid_log_ops ops = {cap_log, cap_done, &c};
	CHECK_EQ(raid_set_log(a, &ops), 0);

	/* A write of at most n - 1 rows (md_ppl_open's cap), anywhere. */
	uint64_t len = 512 * (1 + check_rand(seed) % ((n - 1) * ndata * chunk / 512));
	uint64_t off = 512 * (check_rand(seed) % ((asize - len) / 512 + 1));
	fill(buf, len, seed);
	CHECK_EQ(vol_write(a, buf, len, off, 0), 0);
	CHECK(!c.full);
	CHECK_EQ(mismatched(a), 0);

	/* Tear: the member the tear picks goes back to what it held, which
	 * leaves parity and data disagreeing where the write changed it. */
	unsigned victim = 0;
	unsigned char *now = malloc(size);
	for (unsigned r = 0; r < n; r++) {
		CHECK_EQ(vol_read(m[r], now, size, 0), 0);
		if (memcmp(now, before[r], size) == 0)
			continue;
		/* parity of the first row written is on ...: pick by tear */
		victim = r;
		if (tear == 1)
			break;
	}
	free(now);
	/* tear 0: every member that holds parity of a logged stripe goes
	 * back (their data ranges included, which is also a torn state) */
	if (tear == 0) {
		for (unsigned r = 0; r < n; r++)
			if (c.h[r].nentries)
				CHECK_EQ(vol_write(m[r], before[r], size, 0, 0), 0);
	} else {
		CHECK_EQ(vol_write(m[victim], before[victim], size, 0, 0), 0);
	}
	uint64_t logged = 0;
	for (unsigned r = 0; r < n; r++)
		logged += c.h[r].nentries;
	CHECK(logged > 0);

	struct vol *data[8];
	for (unsigned r = 0; r < n; r++)
		data[r] = m[r];
	struct md_ppl_stats st = replay(&c, a, data);
	CHECK_EQ(st.mismatched, 0);
	CHECK_EQ(st.skipped, 0);
	CHECK_EQ(st.recovered, logged);
	CHECK_EQ(mismatched(a), 0);

	/* A member of a chunk the write left alone missing: the entries
	 * still replay (the PP stands for it), and each that needs a missing
	 * member's data is skipped, never mismatched. */
	unsigned gone = (unsigned)(check_rand(seed) % n);
	data[gone] = NULL;
	st = replay(&c, a, data);
	CHECK_EQ(st.mismatched, 0);
	CHECK_EQ(st.recovered + st.skipped, logged - c.h[gone].nentries);

	vol_close(a);
	for (unsigned i = 0; i < n; i++) {
		free(c.pp[i]);
		free(before[i]);
	}
	free(buf);
}

/* The hole itself: a 4 KiB write to chunk 0 of stripe 0 torn (its data
 * back to what it was, parity new), chunk 1's member lost.  Rebuilt from
 * parity after the replay, chunk 1 reads as before; without the replay
 * it would not (the check that the case shows something). */
static void test_hole(void)
{
	const uint64_t chunk = 16384, size = 4 * chunk;
	struct raid_geom g = {.level = 5, .layout = 2, .chunk = chunk, .raid_disks = 3};
	struct vol *m[3], *a = NULL;
	struct capture c = {.n = 3, .chunk = chunk};
	unsigned long long seed = check_seed(77);
	unsigned char *orig = malloc(2 * chunk), *buf = malloc(2 * chunk), old0[4096];

	for (unsigned i = 0; i < 3; i++) {
		m[i] = mem_vol(size);
		c.pp[i] = malloc(8 * chunk);
	}
	CHECK_EQ(raid_open(&g, m, NULL, "t", &a), 0);
	fill(orig, 2 * chunk, &seed);
	CHECK_EQ(vol_write(a, orig, 2 * chunk, 0, 0), 0);
	struct raid_log_ops ops = {cap_log, cap_done, &c};
	CHECK_EQ(raid_set_log(a, &ops), 0);
	/* left-symmetric, 3 members: row 0 = member 0, member 1, parity 2 */
	CHECK_EQ(vol_read(m[0], old0, 4096, 0), 0);
	fill(buf, 4096, &seed);
	CHECK_EQ(vol_write(a, buf, 4096, 0, 0), 0);
	CHECK_EQ(c.h[2].nentries, 1);
	CHECK_EQ(c.h[2].e[0].pp_size, 4096);
	CHECK_EQ(c.h[2].e[0].data_sector, 0);
	CHECK_EQ(vol_write(m[0], old0, 4096, 0, 0), 0); /* the data write that did not land */

	/* chunk 1 rebuilt from parity and chunk 0: new parity ^ old data */
	unsigned char p[4096], d0[4096], rebuilt[4096];
	CHECK_EQ(vol_read(m[2], p, 4096, 0), 0);
	CHECK_EQ(vol_read(m[0], d0, 4096, 0), 0);
	for (int i = 0; i < 4096; i++)
		rebuilt[i] = p[i] ^ d0[i];
	CHECK(memcmp(rebuilt, orig + chunk, 4096) != 0); /* the hole */
	struct vol *data[3] = {m[0], NULL, m[2]};
	struct md_ppl_stats st = replay(&c, a, data);
	CHECK_EQ(st.recovered, 1);
	CHECK_EQ(vol_read(m[2], p, 4096, 0), 0);
	for (int i = 0; i < 4096; i++)
		rebuilt[i] = p[i] ^ d0[i];
	CHECK(memcmp(rebuilt, orig + chunk, 4096) == 0); /* closed */
	vol_close(a);
	for (unsigned i = 0; i < 3; i++)
		free(c.pp[i]);
	free(orig);
	free(buf);
}

/* The area replay: an entry whose PP fails its checksum is skipped (and
 * counted), the next one still replays. */
static void test_replay_area(void)
{
	const uint64_t chunk = 16384, size = 4 * chunk;
	struct raid_geom g = {.level = 5, .layout = 2, .chunk = chunk, .raid_disks = 3};
	struct vol *m[3], *a = NULL, *area = mem_vol(256 * 1024);
	struct capture c = {.n = 3, .chunk = chunk};
	unsigned long long seed = check_seed(78);
	unsigned char *buf = malloc(2 * chunk);
	static unsigned char blk[256 * 1024];

	for (unsigned i = 0; i < 3; i++) {
		m[i] = mem_vol(size);
		c.pp[i] = malloc(8 * chunk);
	}
	CHECK_EQ(raid_open(&g, m, NULL, "t", &a), 0);
	struct raid_log_ops ops = {cap_log, cap_done, &c};
	CHECK_EQ(raid_set_log(a, &ops), 0);
	/* two 4 KiB writes in one request's reach: chunk 0 at 0 and at 8K */
	fill(buf, 12288, &seed);
	CHECK_EQ(vol_write(a, buf, 12288, 0, 0), 0);
	struct md_ppl_header h = c.h[2];
	CHECK_EQ(h.nentries, 1);
	/* split it by hand into two entries (4K, then 8K), as the kernel's
	 * per-stripe entries come */
	h.nentries = 2;
	h.e[1] = h.e[0];
	h.e[0].pp_size = 4096;
	h.e[0].data_size = 4096;
	h.e[0].checksum = ~crc32c(~0u, c.pp[2], 4096);
	h.e[1].data_sector += 8;
	h.e[1].pp_size = 8192;
	h.e[1].data_size = 8192;
	h.e[1].checksum = ~crc32c(~0u, c.pp[2] + 4096, 8192);
	h.signature = 9;
	memset(blk, 0, sizeof(blk));
	md_ppl_header_encode(&h, blk);
	memcpy(blk + MD_PPL_HEADER_SIZE, c.pp[2], 12288);
	blk[MD_PPL_HEADER_SIZE + 5] ^= 0x40; /* entry 0's PP */
	CHECK_EQ(vol_write(area, blk, sizeof(blk), 0, 0), 0);
	/* tear the parity of both */
	unsigned char junk[12288];
	fill(junk, sizeof(junk), &seed);
	CHECK_EQ(vol_write(m[2], junk, sizeof(junk), 0, 0), 0);
	struct vol *data[3] = {m[0], m[1], m[2]};
	struct md_ppl_array pa = {a, data, 3, chunk};
	struct md_ppl_stats st = {0};
	CHECK_EQ(md_ppl_replay_area(&pa, area, 0, sizeof(blk), 9, &st), 0);
	CHECK_EQ(st.mismatched, 1);
	CHECK_EQ(st.recovered, 1);
	/* entry 1's 8 KiB agree again, entry 0's 4 KiB stay torn */
	unsigned char d0[12288], d1[12288], p[12288];
	CHECK_EQ(vol_read(m[0], d0, sizeof(d0), 0), 0);
	CHECK_EQ(vol_read(m[1], d1, sizeof(d1), 0), 0);
	CHECK_EQ(vol_read(m[2], p, sizeof(p), 0), 0);
	unsigned bad0 = 0, bad1 = 0;
	for (int i = 0; i < 12288; i++)
		if ((d0[i] ^ d1[i]) != p[i])
			i < 4096 ? bad0++ : bad1++;
	CHECK(bad0 > 0);
	CHECK_EQ(bad1, 0);
	/* another array's area: nothing replays */
	st = (struct md_ppl_stats){0};
	CHECK_EQ(md_ppl_replay_area(&pa, area, 0, sizeof(blk), 10, &st), 0);
	CHECK_EQ(st.recovered, 0);
	CHECK_EQ(st.mismatched, 1);
	vol_close(a);
	vol_close(area);
	for (unsigned i = 0; i < 3; i++)
		free(c.pp[i]);
	free(buf);
}

/* PP that does not fit the area (a chunk larger than it) goes in as a
 * whole-stripe entry: replayed, parity agrees again; with a member gone
 * the entry is skipped, never replayed wrong. */
static void test_pp_fallback(void)
{
	const uint64_t chunk = 16384, size = 4 * chunk;
	struct raid_geom g = {.level = 5, .layout = 2, .chunk = chunk, .raid_disks = 3};
	struct vol *m[3], *a = NULL;
	struct capture c = {.n = 3, .chunk = chunk, .cap = 2048};
	unsigned long long seed = check_seed(79);
	unsigned char buf[4096], junk[4096];

	for (unsigned i = 0; i < 3; i++) {
		m[i] = mem_vol(size);
		c.pp[i] = malloc(8 * chunk);
	}
	CHECK_EQ(raid_open(&g, m, NULL, "t", &a), 0);
	struct raid_log_ops ops = {cap_log, cap_done, &c};
	CHECK_EQ(raid_set_log(a, &ops), 0);
	fill(buf, sizeof(buf), &seed);
	CHECK_EQ(vol_write(a, buf, sizeof(buf), chunk, 0), 0); /* chunk 1 of stripe 0 */
	CHECK(!c.full);
	CHECK_EQ(c.h[2].nentries, 1);
	CHECK_EQ(c.h[2].e[0].pp_size, 0);
	CHECK_EQ(c.h[2].e[0].data_sector, 0);
	CHECK_EQ(c.h[2].e[0].data_size, 2 * 4096);
	fill(junk, sizeof(junk), &seed);
	CHECK_EQ(vol_write(m[2], junk, sizeof(junk), 0, 0), 0);
	struct vol *data[3] = {m[0], m[1], m[2]};
	struct md_ppl_stats st = replay(&c, a, data);
	CHECK_EQ(st.recovered, 1);
	CHECK_EQ(mismatched(a), 0);
	data[0] = NULL;
	st = replay(&c, a, data);
	CHECK_EQ(st.recovered, 0);
	CHECK_EQ(st.skipped, 1);
	CHECK_EQ(st.mismatched, 0);
	vol_close(a);
	for (unsigned i = 0; i < 3; i++)
		free(c.pp[i]);
}

int main(void)
{
	unsigned long long seed = check_seed(15);

	test_crc32c();
	test_header_codec();
	test_hole();
	test_replay_area();
	test_pp_fallback();
	for (unsigned layout = 0; layout <= 3; layout++)
		for (unsigned n = 3; n <= 5; n++)
			for (int tear = 0; tear < 2; tear++)
				for (int k = 0; k < 6; k++)
					torn_write(layout, n, tear, &seed);
	return check_done();
}
