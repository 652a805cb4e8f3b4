/* test_bitmap_grow.c — a write-intent bitmap added to an existing array
 * (md/md_bitmap_grow.h) and kept through a reshape (md_bitmap.h's two
 * geometries):
 *  - md_bitmap_place on arrays md_create made without a bitmap puts it
 *    where md_create (mdadm's layout) puts one made with it: 1.2 and 1.1
 *    8 sectors after the superblock, 1.0 below the bad-block log; the
 *    same chunk, mdadm's or the one asked for; no room and a chunk whose
 *    bits do not fit are refused;
 *  - md_bitmap_grow writes it: the header md_bitmap_check accepts, events
 *    raised by one on bitmap and superblocks; removing clears the bit;
 *  - under a reshape a write maps into both geometries' member ranges,
 *    each the one geometry alone gives, and a dirty chunk unmaps to both;
 *    the swap at the end puts the new geometry first. */
#include "check.h"
#include "member_files.h"

#include "md/md.h"
#include "md/md_bitmap.h"
#include "md/md_bitmap_grow.h"
#include "md/md_create.h"
#include "member/member.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MSIZE (32ull << 20)

/* Three members of a raid5 (64 KiB chunks) of version ver (NULL: 1.2),
 * with a bitmap of bm_chunk bytes (0: mdadm's) or none. */
static void make(const char *ver, int bitmap, uint64_t bm_chunk)
{
	struct md_create_opts o;
	struct md_created made;
	char *specs[3];

	for (int i = 0; i < 3; i++) {
		member_file_make(i, MSIZE);
		specs[i] = (char *)path(i);
	}
	md_create_defaults(5, &o);
	o.chunk_kib = 64;
	o.bitmap = bitmap;
	o.bitmap_chunk = bm_chunk;
	o.version = ver ? md_sb_version_find(ver) : NULL;
	err_clear();
	CHECK_EQ(md_create(specs, 3, &o, &made), 0);
}

static void read_sb(int i, struct md_super *sb)
{
	struct vol *v;
	CHECK_EQ(member_open(path(i), MEMBER_READONLY, &v), 0);
	CHECK_EQ(md_super_read(v, sb), 0);
	vol_close(v);
}

static int32_t bitmap_offset(const struct md_super *sb)
{
	return (int32_t)md_le32(((const struct md_sb1 *)sb->raw)->bitmap_offset);
}

/* The bitmap header of member i. */
static void read_header(int i, struct md_bitmap_info *h)
{
	struct md_super sb;
	struct vol *v;
	uint64_t at, end;
	uint8_t *buf = malloc(4096);

	read_sb(i, &sb);
	CHECK_EQ(member_open(path(i), MEMBER_READONLY, &v), 0);
	CHECK_EQ(md_super_bitmap_area(&sb, v->size, &at, &end), 0);
	CHECK_EQ(vol_read(v, buf, 4096, at), 0);
	CHECK_EQ(md_bitmap_decode(buf, h, "m"), 0);
	uint8_t uuid[16];
	md_super_bitmap_uuid(&sb, uuid);
	CHECK_EQ(md_bitmap_check(h, uuid, "m"), 0);
	vol_close(v);
	free(buf);
}

/* md_bitmap_place on an array made without a bitmap = where create puts one. */
static void test_place_as_create(const char *ver, uint64_t bm_chunk)
{
	struct md_super sb;
	struct md_bitmap_info h;
	int32_t want_off, off;
	uint64_t chunk;
	uint32_t room;

	make(ver, 1, bm_chunk);
	read_sb(0, &sb);
	want_off = bitmap_offset(&sb);
	read_header(0, &h);
	make(ver, 0, 0);
	read_sb(0, &sb);
	CHECK(!(sb.feature_map & MD_FEATURE_BITMAP_OFFSET));
	err_clear();
	CHECK_EQ(md_bitmap_place(&sb, MSIZE, sb.size * 512, bm_chunk, "m", &off, &chunk, &room), 0);
	CHECK_EQ(off, want_off);
	CHECK_EQ(chunk, h.chunksize);
	CHECK(room >= (md_bitmap_bytes(sb.size * 512 / chunk + 1) + 511) / 512);
}

static void test_place_refusals(void)
{
	struct md_super sb;
	int32_t off;
	uint64_t chunk;
	uint32_t room;

	make(NULL, 0, 0);
	read_sb(0, &sb);
	/* 4 KiB chunks of a 1 PiB index: more bits than the room holds. */
	err_clear();
	CHECK_EQ(md_bitmap_place(&sb, MSIZE, 1ull << 50, 4096, "m", &off, &chunk, &room), -EINVAL);
	CHECK(strstr(err_detail(-EINVAL), "take a larger one") != NULL);
	/* No room between the superblock and the data. */
	struct md_sb1 *raw = (struct md_sb1 *)sb.raw;
	raw->bblog_size = 0;
	sb.data_offset = sb.super_offset + 16;
	err_clear();
	CHECK_EQ(md_bitmap_place(&sb, MSIZE, sb.size * 512, 0, "m", &off, &chunk, &room), -ENOSPC);
	CHECK(strstr(err_detail(-ENOSPC), "no room") != NULL);
}

static void test_grow_add_remove(void)
{
	char *specs[3];
	struct vol *vols[3];
	struct md_super *sbs[3], sb;
	struct md_bitmap_info h;
	struct md_bitmap_grow_opts o = {.add = true, .chunk = 1u << 20};
	uint64_t ev;

	make(NULL, 0, 0);
	read_sb(0, &sb);
	ev = sb.events;
	for (int k = 0; k < 2; k++) {
		for (int i = 0; i < 3; i++) {
			specs[i] = (char *)path(i);
			sbs[i] = malloc(sizeof(*sbs[i]));
			CHECK_EQ(member_open(specs[i], 0, &vols[i]), 0);
			CHECK_EQ(md_super_read(vols[i], sbs[i]), 0);
		}
		err_clear();
		CHECK_EQ(md_bitmap_grow(specs, 3, vols, sbs, 0, &o, NULL), 0);
		for (int i = 0; i < 3; i++) {
			read_sb(i, &sb);
			CHECK_EQ(sb.events, ev + 1 + (uint64_t)k);
			CHECK_EQ(!!(sb.feature_map & MD_FEATURE_BITMAP_OFFSET), o.add);
			if (!o.add)
				continue;
			CHECK_EQ(bitmap_offset(&sb), 8);
			read_header(i, &h);
			CHECK_EQ(h.events, sb.events);
			CHECK_EQ(h.events_cleared, sb.events);
			CHECK_EQ(h.chunksize, 1u << 20);
			CHECK_EQ(h.sync_size, sb.size);
		}
		o = (struct md_bitmap_grow_opts){.add = false};
	}
}

/* raid5 3 -> 4 devices, 64 KiB chunks: two data disks, then three. */
static void test_two_geometries(void)
{
	struct md_bitmap_geom g, old, now;
	uint64_t first[2], end[2], f, e, off[2], len[2], o, l;
	const uint64_t K = 64 * 1024;

	CHECK_EQ(md_bitmap_geom_init(&g, 5, 3, 128, 4096, 2 * 4096 * 512), 0);
	old = g;
	CHECK_EQ(md_bitmap_map_all(&g, 10 * K, 4096, first, end), 1);
	CHECK_EQ(md_bitmap_geom_also(&g, 4, K), 0);
	CHECK_EQ(md_bitmap_geom_init(&now, 5, 4, 128, 4096, 2 * 4096 * 512), 0);
	/* Array chunk 10: member chunk 5 of two data disks, 3 of three. */
	CHECK_EQ(md_bitmap_map_all(&g, 10 * K + 512, 4096, first, end), 2);
	md_bitmap_map(&old, 10 * K + 512, 4096, &f, &e);
	CHECK(first[0] == f && end[0] == e && f == 5 * K + 512);
	md_bitmap_map(&now, 10 * K + 512, 4096, &f, &e);
	CHECK(first[1] == f && end[1] == e && f == 3 * K + 512);
	/* A dirty member range [3K, 4K): array chunks 6-7 old, 9-11 new. */
	CHECK_EQ(md_bitmap_unmap_all(&g, 3 * K, 4 * K, off, len), 2);
	md_bitmap_unmap(&old, 3 * K, 4 * K, &o, &l);
	CHECK(off[0] == o && len[0] == l && o == 6 * K && l == 2 * K);
	md_bitmap_unmap(&now, 3 * K, 4 * K, &o, &l);
	CHECK(off[1] == o && len[1] == l && o == 9 * K && l == 3 * K);
	/* The end: the new geometry first, the old one still marked. */
	md_bitmap_geom_swap(&g);
	CHECK_EQ(g.data_disks, 3u);
	CHECK_EQ(g.also_data_disks, 2u);
	/* Not striped: no second geometry. */
	CHECK_EQ(md_bitmap_geom_init(&g, 1, 2, 0, 4096, 4096 * 512), 0);
	CHECK_EQ(md_bitmap_geom_also(&g, 3, K), -EINVAL);
}

int main(void)
{
	if (check_tmpdir(dir, sizeof(dir), "bmg") < 0)
		return 1;
	log_verbosity = LOG_ERROR;
	test_place_as_create(NULL, 0);
	test_place_as_create(NULL, 1u << 20);
	test_place_as_create("1.1", 0);
	test_place_as_create("1.0", 0);
	test_place_as_create("1.0", 64u << 10);
	test_place_refusals();
	test_grow_add_remove();
	test_two_geometries();
	for (int i = 0; i < 3; i++)
		unlink(path(i));
	rmdir(dir);
	return check_done();
}
