/* test_md.c — the md v1.x superblock: a superblock written by real mdadm
 * (4.2, through kernel 6.1 md, captured with linux-peer) decodes and
 * checks; our encoding round-trips; damage is refused with a clear reason;
 * 1.0 and 1.1 are found, checked and written where their version says. */
#include "check.h"

#include "core/log.h"
#include "disc/raid/raid.h"
#include "md/md.h"
#include "md/md_bitmap.h"
#include "member/member.h"

#include <errno.h>
#include <string.h>

/* First 512 bytes of the superblock block of member 0 of
 *   mdadm --create /dev/md0 --run --metadata=1.2 --level=1 --raid-devices=2
 *         --assume-clean --bitmap=none --name=fix /dev/vda /dev/vdb
 * on 64 MiB disks (the rest of the 4 KiB block is zero). */
static const char *const mdadm_raid1_hex =
    "fc4e2ba901000000000000000000000062d21414b76a70629879b94a45f8e22b"
    "6c696e75782d706565723a666978000000000000000000000000000000000000"
    "ad7b0c6b00000000010000000000000000f80100000000000000000002000000"
    "0000000000000000000000000000000000000000000000000000000000000000"
    "000800000000000000f801000000000008000000000000000000000000000000"
    "00000000000000000d48526b24a84f829428d7fe9d854cb30000080010000000"
    "ad7b0c6b000000000000000000000000ffffffffffffffff020e524d80000000"
    "0000000000000000000000000000000000000000000000000000000000000000"
    "00000100ffffffffffffffffffffffffffffffffffffffffffffffffffffffff";

static void fixture(uint8_t *buf)
{
	size_t n = strlen(mdadm_raid1_hex) / 2;

	memset(buf, 0, MD_SB_BLOCK);
	for (size_t i = 0; i < n; i++)
		sscanf(mdadm_raid1_hex + 2 * i, "%2hhx", &buf[i]);
	/* roles 2..127: spare, as mdadm fills them */
	memset(buf + n, 0xff, 512 - n);
}

static void test_mdadm_fixture(void)
{
	uint8_t buf[MD_SB_BLOCK];
	struct md_super s;
	char uuid[36];

	fixture(buf);
	CHECK_EQ(md_super_decode(buf, &s), 0);
	CHECK_EQ(md_sb_csum(buf), 0x4d520e02);
	CHECK_EQ(s.sb_csum, 0x4d520e02);
	CHECK_EQ(s.level, 1);
	CHECK_EQ(s.raid_disks, 2);
	CHECK_EQ(s.data_offset, 2048);
	CHECK_EQ(s.data_size, 129024);
	CHECK_EQ(s.size, 129024);
	CHECK_EQ(s.super_offset, 8);
	CHECK_EQ(s.max_dev, 128);
	CHECK_EQ(s.events, 0);
	CHECK(md_super_clean(&s));
	CHECK_EQ(md_super_role(&s), 0);
	CHECK_EQ(s.roles[1], 1);
	CHECK_EQ(s.roles[2], MD_ROLE_SPARE);
	CHECK(strcmp(s.set_name, "linux-peer:fix") == 0);
	md_uuid_format(s.set_uuid, uuid);
	CHECK(strcmp(uuid, "62d21414:b76a7062:9879b94a:45f8e22b") == 0);
	CHECK_EQ(md_super_check(&s, 64ull << 20, "a"), 0);

	/* Re-encoding what we decoded must give mdadm's bytes back. */
	md_super_encode(&s);
	CHECK(memcmp(s.raw, buf, MD_SB_BLOCK) == 0);
}

static void test_round_trip(void)
{
	struct md_super s, d;

	memset(&s, 0, sizeof(s));
	s.feature_map = 0;
	memset(s.set_uuid, 0xa5, 16);
	strcpy(s.set_name, "host:vol");
	s.ctime = s.utime = 1700000000;
	s.level = 10;
	s.layout = 0x102;
	s.chunk = 1024;
	s.raid_disks = 3;
	s.size = 100 * 1024;
	s.data_offset = 2048;
	s.data_size = 100 * 1024 + 17;
	s.super_offset = MD_SB_SECTOR;
	s.dev_number = 2;
	memset(s.device_uuid, 0x3c, 16);
	s.events = 42;
	s.resync_offset = MD_MAX_SECTOR;
	s.max_dev = 129; /* odd: the checksum's half-word tail */
	for (unsigned i = 0; i < MD_SB_MAX_DEV; i++)
		s.roles[i] = i < 3 ? i : MD_ROLE_SPARE;
	s.roles[1] = MD_ROLE_FAULTY;
	md_super_encode(&s);
	CHECK_EQ(md_super_decode(s.raw, &d), 0);
	CHECK_EQ(md_super_check(&d, (2048 + 100 * 1024 + 17) * 512ull, "x"), 0);
	CHECK_EQ(d.level, 10);
	CHECK_EQ(d.layout, 0x102);
	CHECK_EQ(d.chunk, 1024);
	CHECK_EQ(d.events, 42);
	CHECK_EQ(d.max_dev, 129);
	CHECK_EQ(d.roles[1], MD_ROLE_FAULTY);
	CHECK_EQ(md_super_role(&d), 2);
	CHECK(strcmp(d.set_name, "host:vol") == 0);
	CHECK(memcmp(d.device_uuid, s.device_uuid, 16) == 0);
	CHECK_EQ(d.sb_csum, md_sb_csum(d.raw));
	/* one byte short of the data area: truncated */
	CHECK_EQ(md_super_check(&d, (2048 + 100 * 1024 + 16) * 512ull, "x"), -EUCLEAN);
	CHECK(strstr(err_detail(-EUCLEAN), "truncated") != NULL);
}

/* Damage one thing, expect one reason. */
static void expect_bad(void (*damage)(uint8_t *buf), int err, const char *word)
{
	uint8_t buf[MD_SB_BLOCK];
	struct md_super s;
	int r;

	fixture(buf);
	damage(buf);
	err_clear();
	r = md_super_decode(buf, &s);
	if (r == 0)
		r = md_super_check(&s, 64ull << 20, "m.img");
	CHECK_EQ(r, err);
	if (r < 0 && word && !strstr(err_detail(r), word)) {
		fprintf(stderr, "detail '%s' lacks '%s'\n", err_detail(r), word);
		check_failures++;
	}
}

static void fix_csum(uint8_t *buf)
{
	struct md_sb1 *sb = (struct md_sb1 *)buf;
	sb->sb_csum = htole32(md_sb_csum(buf));
}

static void dmg_csum(uint8_t *buf)
{
	buf[216] ^= 1;
}
static void dmg_field(uint8_t *buf)
{
	buf[200] ^= 1;
} /* events, csum left */
static void dmg_magic(uint8_t *buf)
{
	buf[0] = 0;
}
static void dmg_version(uint8_t *buf)
{
	buf[4] = 2;
	fix_csum(buf);
}
static void dmg_offset(uint8_t *buf)
{
	struct md_sb1 *sb = (struct md_sb1 *)buf;
	sb->data_offset = htole64(200000);
	fix_csum(buf);
}
static void dmg_overlap(uint8_t *buf)
{
	struct md_sb1 *sb = (struct md_sb1 *)buf;
	sb->data_offset = htole64(8);
	fix_csum(buf);
}
static void dmg_maxdev(uint8_t *buf)
{
	struct md_sb1 *sb = (struct md_sb1 *)buf;
	sb->max_dev = htole32(5000);
	fix_csum(buf);
}
static void dmg_level(uint8_t *buf)
{
	struct md_sb1 *sb = (struct md_sb1 *)buf;
	sb->level = htole32(7);
	fix_csum(buf);
}
static void dmg_super_offset(uint8_t *buf)
{
	struct md_sb1 *sb = (struct md_sb1 *)buf;
	sb->super_offset = htole64(0);
	fix_csum(buf);
}

/* A raid0 chunk of 4 GiB + 4 KiB: in bytes it wraps 32 bits to 4 KiB, a
 * different geometry (a fuzz_md finding). */
static void dmg_chunk_wrap(uint8_t *buf)
{
	struct md_sb1 *sb = (struct md_sb1 *)buf;
	sb->level = htole32(0);
	sb->chunksize = htole32((1u << 23) + 8);
	fix_csum(buf);
}

static void test_damage(void)
{
	expect_bad(dmg_csum, -EUCLEAN, "checksum");
	expect_bad(dmg_field, -EUCLEAN, "checksum");
	expect_bad(dmg_magic, -ENOENT, NULL);
	expect_bad(dmg_version, -EINVAL, "version");
	expect_bad(dmg_offset, -EUCLEAN, "beyond");
	expect_bad(dmg_overlap, -EUCLEAN, "overlaps");
	expect_bad(dmg_maxdev, -EUCLEAN, "max_dev");
	expect_bad(dmg_level, -EINVAL, "level");
	expect_bad(dmg_super_offset, -EINVAL, "v1.2");
	expect_bad(dmg_chunk_wrap, -EUCLEAN, "chunk size");
}

static void test_read_from_member(void)
{
	uint8_t buf[MD_SB_BLOCK];
	struct vol *m;
	struct md_super s;

	CHECK_EQ(member_open("mem:64M", 0, &m), 0);
	err_clear();
	CHECK_EQ(md_super_read(m, &s), -ENOENT);
	CHECK(strstr(err_detail(-ENOENT), "no md superblock") != NULL);
	fixture(buf);
	CHECK_EQ(vol_write(m, buf, MD_SB_BLOCK, MD_SB_OFFSET, 0), 0);
	CHECK_EQ(md_super_read(m, &s), 0);
	s.events = 7;
	CHECK_EQ(md_super_write(m, &s), 0);
	CHECK_EQ(md_super_read(m, &s), 0);
	CHECK_EQ(s.events, 7);
	vol_close(m);
	CHECK_EQ(member_open("mem:6k", 0, &m), 0);
	CHECK_EQ(md_super_read(m, &s), -ENOENT);
	vol_close(m);
}

/* The superblock is found through the version table: read_raw records
 * the version it was found with, decodes one that says it lives elsewhere
 * (so examine can show it, and md_super_check names the sector), and tells
 * "none" from "no room for one". */
static void test_version_table(void)
{
	uint8_t buf[MD_SB_BLOCK];
	struct vol *m;
	struct md_super s;

	CHECK_EQ(member_open("mem:64M", 0, &m), 0);
	CHECK_EQ(md_super_read_raw(m, &s), -ENOENT);
	fixture(buf);
	CHECK_EQ(vol_write(m, buf, MD_SB_BLOCK, MD_SB_OFFSET, 0), 0);
	CHECK_EQ(md_super_read_raw(m, &s), 0);
	CHECK(s.version != NULL && strcmp(s.version->name, "1.2") == 0);
	CHECK_EQ(md_super_offset(&s, m->size), MD_SB_OFFSET);
	dmg_super_offset(buf);
	CHECK_EQ(vol_write(m, buf, MD_SB_BLOCK, MD_SB_OFFSET, 0), 0);
	CHECK_EQ(md_super_read_raw(m, &s), 0);
	CHECK(s.version == md_sb_version_default());
	CHECK_EQ(s.super_offset, 0);
	err_clear();
	CHECK_EQ(md_super_read(m, &s), -EINVAL);
	CHECK(strstr(err_detail(-EINVAL), "lives at sector 0, not 8") != NULL);
	vol_close(m);
	/* 6 KiB holds a 1.1 superblock (none there); 3 KiB holds none. */
	CHECK_EQ(member_open("mem:6k", 0, &m), 0);
	CHECK_EQ(md_super_read_raw(m, &s), -ENOENT);
	vol_close(m);
	CHECK_EQ(member_open("mem:3k", 0, &m), 0);
	CHECK_EQ(md_super_read_raw(m, &s), -ENOSPC);
	vol_close(m);
}

/* The fixture's superblock moved to version name on a 64 MiB member: its
 * super_offset, and for 1.0 the data from sector 0 up to the bitmap room
 * and bad-block log below the superblock (mdadm's 1.0 layout). */
#define V10_AT 131056u /* (131072 - 16) & ~7 */
static void fixture_as(uint8_t *buf, const char *name)
{
	struct md_sb1 *sb = (struct md_sb1 *)buf;

	fixture(buf);
	if (strcmp(name, "1.1") == 0) {
		sb->super_offset = htole64(0);
	} else if (strcmp(name, "1.0") == 0) {
		sb->super_offset = htole64(V10_AT);
		sb->data_offset = htole64(0);
		sb->data_size = htole64(V10_AT - 16);
		sb->bblog_offset = htole32((uint32_t)-8);
	}
	fix_csum(buf);
}

/* 1.1 and 1.0 are found where their version puts them, checked, and
 * written back there (a write-read round trip keeps every byte). */
static void test_versions_read_write(void)
{
	static const char *const names[] = {"1.1", "1.0"};
	static const uint64_t at[] = {0, V10_AT * 512ull};
	uint8_t buf[MD_SB_BLOCK], back[MD_SB_BLOCK];

	for (int i = 0; i < 2; i++) {
		struct vol *m;
		struct md_super s, d;

		CHECK_EQ(member_open("mem:64M", 0, &m), 0);
		fixture_as(buf, names[i]);
		CHECK_EQ(vol_write(m, buf, MD_SB_BLOCK, at[i], 0), 0);
		err_clear();
		CHECK_EQ(md_super_read(m, &s), 0);
		CHECK(s.version == md_sb_version_find(names[i]));
		CHECK(strcmp(md_super_version(&s)->name, names[i]) == 0);
		CHECK_EQ(md_super_offset(&s, m->size), at[i]);
		CHECK_EQ(s.super_offset * 512, at[i]);
		s.events = 41;
		CHECK_EQ(md_super_write(m, &s), 0);
		CHECK_EQ(vol_read(m, back, MD_SB_BLOCK, at[i]), 0);
		CHECK(memcmp(back, s.raw, MD_SB_BLOCK) == 0);
		CHECK_EQ(md_super_read(m, &d), 0);
		CHECK_EQ(d.events, 41);
		CHECK(d.version == s.version);
		/* nothing was written where 1.2 lives */
		CHECK_EQ(vol_read(m, back, MD_SB_BLOCK, MD_SB_OFFSET), 0);
		CHECK(i == 0 || memcmp(back, (uint8_t[MD_SB_BLOCK]){0}, MD_SB_BLOCK) == 0);
		vol_close(m);
	}
	CHECK(md_sb_version_find("1.2") == md_sb_version_default());
	CHECK(md_sb_version_find("1") == md_sb_version_default());
	CHECK(md_sb_version_find("1.3") == NULL);
	CHECK(md_sb_version_data_first(md_sb_version_find("1.0")));
	CHECK(!md_sb_version_data_first(md_sb_version_find("1.1")));
	CHECK(!md_sb_version_data_first(md_sb_version_find("1.2")));
}

/* Each version's own rules: a 1.0 data area that runs into its
 * superblock, a 1.1 data area that starts on it, a superblock found away
 * from where its version keeps it. */
static void test_versions_check(void)
{
	uint8_t buf[MD_SB_BLOCK];
	struct md_sb1 *sb = (struct md_sb1 *)buf;
	struct md_super s;
	int r;

	fixture_as(buf, "1.0");
	sb->data_size = htole64(V10_AT + 8);
	fix_csum(buf);
	CHECK_EQ(md_super_decode(buf, &s), 0);
	s.version = md_sb_version_find("1.0");
	err_clear();
	r = md_super_check(&s, 64ull << 20, "a.img");
	CHECK_EQ(r, -EUCLEAN);
	CHECK(strstr(err_detail(r), "a.img: md data area (offset 0 + size 131064 sectors) runs "
	                            "into the v1.0 superblock at sector 131056") != NULL);
	/* ending exactly at the superblock is allowed */
	sb->data_size = htole64(V10_AT);
	sb->size = htole64(V10_AT);
	fix_csum(buf);
	CHECK_EQ(md_super_decode(buf, &s), 0);
	s.version = md_sb_version_find("1.0");
	CHECK_EQ(md_super_check(&s, 64ull << 20, "a.img"), 0);
	/* a 1.0 superblock of a larger member (the member was truncated) */
	CHECK_EQ(md_super_check(&s, 32ull << 20, "a.img"), -EINVAL);

	fixture_as(buf, "1.1");
	sb->data_offset = htole64(0);
	fix_csum(buf);
	CHECK_EQ(md_super_decode(buf, &s), 0);
	s.version = md_sb_version_find("1.1");
	err_clear();
	r = md_super_check(&s, 64ull << 20, "b.img");
	CHECK_EQ(r, -EUCLEAN);
	CHECK(strstr(err_detail(r), "b.img: md data offset 0 overlaps the v1.1 superblock") !=
	      NULL);

	/* a 1.2 superblock decoded as 1.1 names both sectors */
	fixture(buf);
	CHECK_EQ(md_super_decode(buf, &s), 0);
	s.version = md_sb_version_find("1.1");
	err_clear();
	r = md_super_check(&s, 64ull << 20, "c.img");
	CHECK_EQ(r, -EINVAL);
	CHECK(strstr(err_detail(r), "md v1.1 superblock says it lives at sector 8, not 0") != NULL);
}

/* A stale superblock of another version beside the real one: the one
 * created last wins, as mdadm picks. */
static void test_versions_stale(void)
{
	uint8_t old[MD_SB_BLOCK], cur[MD_SB_BLOCK];
	struct md_sb1 *o = (struct md_sb1 *)old, *c = (struct md_sb1 *)cur;
	struct vol *m;
	struct md_super s;

	fixture(old);
	fixture_as(cur, "1.0");
	o->ctime = htole64(1000);
	c->ctime = htole64(2000);
	fix_csum(old);
	fix_csum(cur);
	CHECK_EQ(member_open("mem:64M", 0, &m), 0);
	CHECK_EQ(vol_write(m, old, MD_SB_BLOCK, MD_SB_OFFSET, 0), 0);
	CHECK_EQ(vol_write(m, cur, MD_SB_BLOCK, V10_AT * 512ull, 0), 0);
	CHECK_EQ(md_super_read(m, &s), 0);
	CHECK(s.version == md_sb_version_find("1.0"));
	o->ctime = htole64(3000);
	fix_csum(old);
	CHECK_EQ(vol_write(m, old, MD_SB_BLOCK, MD_SB_OFFSET, 0), 0);
	CHECK_EQ(md_super_read(m, &s), 0);
	CHECK(s.version == md_sb_version_default());
	vol_close(m);
}

/* Where a bitmap lies: after a 1.1/1.2 superblock up to the bad-block log,
 * before a 1.0 one after the data; one that overlaps the data is refused. */
static void test_versions_bitmap_area(void)
{
	uint8_t buf[MD_SB_BLOCK];
	struct md_sb1 *sb = (struct md_sb1 *)buf;
	struct md_super s;
	uint64_t start = 0, end = 0;

	fixture(buf); /* 1.2, no bitmap */
	CHECK_EQ(md_super_decode(buf, &s), 0);
	CHECK_EQ(md_super_bitmap_area(&s, 64ull << 20, &start, &end), -ENOENT);
	sb->feature_map = htole32(MD_FEATURE_BITMAP_OFFSET);
	sb->bitmap_offset = htole32(8);
	sb->bblog_offset = htole32(16);
	sb->bblog_size = htole16(8);
	CHECK_EQ(md_super_decode(buf, &s), 0);
	CHECK_EQ(md_super_bitmap_area(&s, 64ull << 20, &start, &end), 0);
	CHECK_EQ(start, 16 * 512);
	CHECK_EQ(end, 24 * 512);

	fixture_as(buf, "1.0"); /* data 0..131040, bblog at -8 */
	sb->feature_map = htole32(MD_FEATURE_BITMAP_OFFSET);
	sb->bitmap_offset = htole32((uint32_t)-16);
	sb->bblog_size = htole16(8);
	CHECK_EQ(md_super_decode(buf, &s), 0);
	s.version = md_sb_version_find("1.0");
	CHECK_EQ(md_super_bitmap_area(&s, 64ull << 20, &start, &end), 0);
	CHECK_EQ(start, (V10_AT - 16) * 512ull);
	CHECK_EQ(end, (V10_AT - 8) * 512ull);
	sb->bitmap_offset = htole32((uint32_t)-24); /* into the data */
	CHECK_EQ(md_super_decode(buf, &s), 0);
	CHECK_EQ(md_super_bitmap_area(&s, 64ull << 20, &start, &end), -EUCLEAN);
	sb->bitmap_offset = htole32((uint32_t) - (int32_t)(V10_AT + 8)); /* before the member */
	CHECK_EQ(md_super_decode(buf, &s), 0);
	CHECK_EQ(md_super_bitmap_area(&s, 64ull << 20, &start, &end), -EUCLEAN);
	sb->bitmap_offset = 0;
	CHECK_EQ(md_super_decode(buf, &s), 0);
	CHECK_EQ(md_super_bitmap_area(&s, 64ull << 20, &start, &end), -EUCLEAN);
}

/* A new member in the array's layout: 1.0 keeps the room below its
 * superblock, 1.1/1.2 the data offset; the metadata area to wipe. */
static void test_versions_new_member(void)
{
	uint8_t buf[MD_SB_BLOCK];
	struct md_super s;
	uint64_t start, end;

	fixture_as(buf, "1.0");
	CHECK_EQ(md_super_decode(buf, &s), 0);
	s.version = md_sb_version_find("1.0");
	/* 128 MiB: superblock at (262144 - 16) & ~7, 16 sectors below it */
	CHECK_EQ(md_super_new_data_size(&s, 128ull << 20), 262128 - 16);
	CHECK_EQ(md_super_new_data_size(&s, 4096), 0);
	md_super_meta_area(&s, 64ull << 20, &start, &end);
	CHECK_EQ(start, (V10_AT - 16) * 512ull);
	CHECK_EQ(end, 64ull << 20);

	fixture(buf);
	CHECK_EQ(md_super_decode(buf, &s), 0);
	CHECK_EQ(md_super_new_data_size(&s, 128ull << 20), 262144 - 2048);
	md_super_meta_area(&s, 64ull << 20, &start, &end);
	CHECK_EQ(start, 4096);
	CHECK_EQ(end, 2048 * 512);
}

static void test_names(void)
{
	int level = 99;
	uint32_t layout = 0;

	CHECK(md_level_parse("raid10", &level) == 0 && level == 10);
	CHECK(md_level_parse("0", &level) == 0 && level == 0);
	CHECK(md_level_parse("linear", &level) == 0 && level == -1);
	CHECK(md_level_parse("7", &level) < 0);
	CHECK(md_level_parse("", &level) < 0);
	CHECK(md_raid10_layout_parse("n2", &layout) == 0 && layout == 0x102);
	CHECK(md_raid10_layout_parse("f2", &layout) == 0 && layout == 0x201);
	CHECK(md_raid10_layout_parse("o2", &layout) == 0 && layout == 0x10201);
	CHECK(md_raid10_layout_parse("n3", &layout) == 0 && layout == 0x103);
	CHECK(md_raid10_layout_parse("x2", &layout) < 0);
	CHECK(md_raid10_layout_parse("n", &layout) < 0);
	/* what mdadm 4.2 chose on 64 MiB members (see the fixture) */
	CHECK_EQ(md_default_data_offset(131072, 0), 2048);
	CHECK_EQ(md_default_data_offset(131072, 512), 4096);
	/* large members: 128 MiB headroom plus bitmap room, rounded to 1 MiB */
	CHECK_EQ(md_default_data_offset(1ull << 31, 512), 264192);
}

/* Every level and layout through the one table: names round-trip, and
 * the engine runs exactly the levels the table says uraid serves, losing
 * as many members' worth of space to parity as the table says. */
static void test_level_table(void)
{
	const struct md_level_info *l;
	unsigned count = 0;

	for (unsigned i = 0; (l = md_level_at(i)); i++) {
		int level = 99;
		char name[32];
		uint32_t layout = 0;

		count++;
		CHECK(md_level_info(l->level) == l);
		CHECK(strcmp(md_level_name(l->level), l->name) == 0);
		CHECK(md_level_parse(l->name, &level) == 0 && level == l->level);
		CHECK(l->min_disks >= 1);
		CHECK_EQ(md_level_parity(l->level), l->parity);
		CHECK(!l->parity || l->redundant);
		CHECK_EQ(md_level_redundant(l->level), l->served && l->redundant);
		for (unsigned k = 0; k < l->nlayouts; k++) {
			const struct md_layout_name *n = &l->layouts[k];
			CHECK(md_layout_parse(l->level, n->name, &layout) == 0 &&
			      layout == n->layout);
			CHECK(!n->alias || (md_layout_parse(l->level, n->alias, &layout) == 0 &&
			                    layout == n->layout));
			CHECK(strcmp(md_layout_name(l->level, n->layout, name, sizeof(name)),
			             n->name) == 0);
		}
		if (l->default_layout)
			CHECK(md_layout_parse(l->level, l->default_layout, &layout) == 0);
		else
			layout = 0;

		/* What the engine makes of 4 (or min_disks) members of 1 MiB. */
		unsigned n = l->min_disks > 4 ? l->min_disks : 4;
		uint64_t sizes[8] = {0};
		for (unsigned k = 0; k < n; k++)
			sizes[k] = 1 << 20;
		if (l->level == 10)
			md_layout_parse(10, "n2", &layout);
		struct raid_geom g = {.level = l->level,
		                      .layout = l->level == 0 ? 0 : layout,
		                      .chunk = l->chunked ? 64 << 10 : 0,
		                      .raid_disks = n,
		                      .dev_size = l->redundant ? 1 << 20 : 0};
		uint64_t size = raid_array_size(&g, sizes);
		CHECK_EQ(size != 0, l->served);
		if (l->served && l->parity)
			CHECK_EQ(size, (uint64_t)(n - l->parity) << 20);
		err_clear();
		CHECK_EQ(md_level_served(l->level, "x") == 0, l->served);
	}
	CHECK_EQ(count, 7);
	/* raid6's own layouts are not raid5's */
	uint32_t layout;
	CHECK(md_layout_parse(5, "left-symmetric-6", &layout) < 0);
	CHECK(md_layout_parse(6, "left-symmetric-6", &layout) == 0 && layout == 18);
	char name[32];
	CHECK(strcmp(md_layout_name(10, 0x102, name, sizeof(name)), "n2") == 0);
	CHECK(strcmp(md_layout_name(10, 0x201, name, sizeof(name)), "f2") == 0);
	CHECK(strcmp(md_layout_name(10, 0x10201, name, sizeof(name)), "o2") == 0);
	CHECK(strcmp(md_layout_name(5, 9, name, sizeof(name)), "9") == 0);
	CHECK(strcmp(md_layout_name(1, 0, name, sizeof(name)), "") == 0);
}

/* raid4 is served as raid5's parity-last, whatever its layout word
 * (mdadm --create writes 0, the kernel's takeover 5): a superblock of it
 * is usable, it is redundant (rebuilt, checked, with a write-intent
 * bitmap over its data disks) and names no layout. */
static void test_level4(void)
{
	uint8_t buf[MD_SB_BLOCK];
	struct md_super s;
	struct md_bitmap_geom g;
	struct md_sb1 *sb = (struct md_sb1 *)buf;
	char name[16];

	fixture(buf);
	sb->level = htole32(4);
	sb->chunksize = htole32(128);
	sb->sb_csum = htole32(md_sb_csum(buf));
	CHECK_EQ(md_super_decode(buf, &s), 0);
	err_clear();
	CHECK_EQ(md_super_check(&s, 64ull << 20, "m.img"), 0);
	CHECK(md_level_redundant(4));
	CHECK_EQ(md_level_parity(4), 1);
	CHECK(md_bitmap_geom_init(&g, 4, 3, 128, 2048 * 100, 200ull << 20) == 0);
	CHECK_EQ(g.data_disks, 2);
	CHECK(strcmp(md_layout_name(4, 5, name, sizeof(name)), "") == 0);
	CHECK(strcmp(md_layout_name(4, 0, name, sizeof(name)), "") == 0);
}

/* Each feature in the one refusal mask, replacement included, makes a
 * superblock unusable with the one message; the features uraid handles
 * (bitmap, recovery offset, bad blocks, a reshape under way: its rules
 * are test_reshape.c's) do not, but a reshape's bits without one do. */
static void test_refused_features(void)
{
	for (unsigned bit = 0; bit < 13; bit++) {
		uint8_t buf[MD_SB_BLOCK];
		struct md_sb1 *sb = (struct md_sb1 *)buf;
		struct md_super s;
		uint32_t f = 1u << bit;
		int r;

		if (f == MD_FEATURE_RAID0_LAYOUT)
			continue; /* refused on raid1 for another reason */
		fixture(buf);
		sb->feature_map = htole32(f);
		sb->sb_csum = htole32(md_sb_csum(buf));
		CHECK_EQ(md_super_decode(buf, &s), 0);
		err_clear();
		r = md_super_check(&s, 64ull << 20, "m.img");
		if (f & MD_FEATURE_REFUSED) {
			CHECK_EQ(r, -ENOTSUP);
			CHECK(strstr(err_detail(r), "m.img: md superblock uses features") != NULL);
		} else if (f & (MD_FEATURE_NEW_OFFSET | MD_FEATURE_RESHAPE_BACKWARDS)) {
			/* the reshape's bits, without one under way */
			CHECK_EQ(r, -EINVAL);
			CHECK(strstr(err_detail(r), "m.img: md superblock has reshape features") !=
			      NULL);
		} else if (f & MD_FEATURE_ANY_PPL) { /* served, but on raid5 only */
			CHECK_EQ(r, -EINVAL);
			CHECK(strstr(err_detail(r), "m.img: md PPL on a level 1 array") != NULL);
		} else
			CHECK_EQ(r, 0);
	}
	CHECK(MD_FEATURE_REFUSED & MD_FEATURE_CLUSTERED);
	CHECK(!(MD_FEATURE_REFUSED & MD_FEATURE_REPLACEMENT)); /* served: md_replace.c */
}

/* md's rules for a PPL (super_1_validate, ppl_validate_rdev) on a raid5
 * superblock: its area in the ppl half of the bitmap_offset word, clear
 * of superblock and data; one PPL bit, no bitmap beside it. */
static void test_ppl_rules(void)
{
	static const struct {
		uint32_t features;
		int16_t off;
		uint16_t size;
		int want;
	} cases[] = {
	    {MD_FEATURE_PPL, 8, 2032, 0},
	    {MD_FEATURE_MULTIPLE_PPLS, 8, 2032, 0},
	    {MD_FEATURE_PPL | MD_FEATURE_MULTIPLE_PPLS, 8, 2032, -EUCLEAN},
	    {MD_FEATURE_PPL | MD_FEATURE_BITMAP_OFFSET, 8, 2032, -EUCLEAN},
	    {MD_FEATURE_PPL, 8, 2033, -EUCLEAN}, /* into the data */
	    {MD_FEATURE_PPL, 4, 100, -EUCLEAN},  /* over the superblock */
	    {MD_FEATURE_PPL, 8, 8, -EUCLEAN},    /* no room for PP */
	    {MD_FEATURE_PPL, -16, 8, -EUCLEAN},  /* before the member */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint8_t buf[MD_SB_BLOCK];
		struct md_sb1 *sb = (struct md_sb1 *)buf;
		struct md_super s;
		int32_t off;
		uint32_t size;

		fixture(buf);
		sb->level = htole32(5);
		sb->layout = htole32(2);
		sb->chunksize = htole32(128);
		sb->raid_disks = htole32(3);
		sb->feature_map = htole32(cases[i].features);
		sb->bitmap_offset = htole32((uint32_t)cases[i].size << 16 | (uint16_t)cases[i].off);
		sb->sb_csum = htole32(md_sb_csum(buf));
		CHECK_EQ(md_super_decode(buf, &s), 0);
		CHECK(md_super_ppl(&s, &off, &size));
		CHECK_EQ(off, cases[i].off);
		CHECK_EQ(size, cases[i].size);
		err_clear();
		CHECK_EQ(md_super_check(&s, 64ull << 20, "m.img"), cases[i].want);
		/* a dirty degraded PPL array starts: the PPL closes the hole */
		s.resync_offset = 0;
		CHECK(!md_dirty_degraded(&s, 1));
	}
}

/* One geometry check: members that differ in any one of level, layout,
 * chunk, used size, device count or the RAID0 layout flag are not one
 * array; events, names and roles may differ. */
static void test_same_geometry(void)
{
	uint8_t buf[MD_SB_BLOCK];
	struct md_super a, b;

	fixture(buf);
	CHECK_EQ(md_super_decode(buf, &a), 0);
	for (int field = 0; field < 8; field++) {
		b = a;
		switch (field) {
		case 0:
			b.level = 10;
			break;
		case 1:
			b.layout ^= 1;
			break;
		case 2:
			b.chunk += 8;
			break;
		case 3:
			b.size -= 128;
			break;
		case 4:
			b.raid_disks++;
			break;
		case 5:
			b.feature_map |= MD_FEATURE_RAID0_LAYOUT;
			break;
		case 6:
			b.events += 5;
			b.dev_number = 1;
			break;
		case 7:
			strcpy(b.set_name, "other");
			break;
		}
		err_clear();
		int r = md_super_same_geometry(&b, "b.img", &a, "a.img", "md/fix");
		if (field < 6) {
			CHECK_EQ(r, -EINVAL);
			CHECK(strstr(err_detail(r), "md/fix: b.img and a.img disagree on level, "
			                            "layout, chunk, size or device count") != NULL);
		} else
			CHECK_EQ(r, 0);
	}
	/* one geometry, two superblock versions: a mixed array is refused */
	b = a;
	b.version = md_sb_version_find("1.0");
	err_clear();
	int r = md_super_same_geometry(&b, "b.img", &a, "a.img", "md/fix");
	CHECK_EQ(r, -EINVAL);
	CHECK(strstr(err_detail(r), "md/fix: b.img holds an md v1.0 superblock and a.img a v1.2 "
	                            "one") != NULL);
}

int main(void)
{
	test_mdadm_fixture();
	test_round_trip();
	test_damage();
	test_read_from_member();
	test_version_table();
	test_names();
	test_level_table();
	test_level4();
	test_refused_features();
	test_ppl_rules();
	test_same_geometry();
	test_versions_read_write();
	test_versions_check();
	test_versions_stale();
	test_versions_bitmap_area();
	test_versions_new_member();
	return check_done();
}
