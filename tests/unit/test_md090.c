/* test_md090.c — md's 0.90 superblock (src/md/md_sb090.c): blocks made by
 * the kernel (6.1, mdadm 4.2 -e 0.90 in linux-peer) decode and check;
 * encode round-trips them byte for byte in both byte orders; the kernel's
 * folded checksum, its version and size rules, and ours, refuse damage
 * with a message naming the member and "md 0.90". */
#include "check.h"
#include "mem_vol.h"

#include "core/log.h"
#include "md/md.h"
#include "md/md_sb090.h"

#include <byteswap.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The nonzero words of member 0's superblock of
 *   mdadm --create /dev/md0 -e 0.90 --level=1 --raid-devices=2
 *         --bitmap=internal --assume-clean /dev/vda /dev/vdb
 * on 4 MiB disks, after it was written to and stopped (little-endian). */
static const uint32_t raid1_words[][2] = {
    {0, 0xa92b4efc},   {2, 0x0000005a},   {5, 0xe485c658},   {6, 0x6b0f5d62},   {7, 0x00000001},
    {8, 0x00000fc0},   {9, 0x00000002},   {10, 0x00000002},  {13, 0x59c54204},  {14, 0x8573e0d4},
    {15, 0xb4a65d8d},  {32, 0x6b0f5d68},  {33, 0x00000101},  {34, 0x00000002},  {35, 0x00000002},
    {38, 0xf7af64ca},  {39, 0x00000001},  {41, 0x00000001},  {43, 0xffffffff},  {129, 0x000000fe},
    {132, 0x00000006}, {160, 0x00000001}, {161, 0x000000fe}, {162, 0x00000010}, {163, 0x00000001},
    {164, 0x00000006}, {993, 0x000000fe}, {996, 0x00000006},
};

/* Member 0 of a 3-disk raid5, chunk 64K, /dev/md1, events 19. */
static const uint32_t raid5_words[][2] = {
    {0, 0xa92b4efc},   {2, 0x0000005a},   {5, 0xdcd9a8e7},   {6, 0x6b0f5d62},   {7, 0x00000005},
    {8, 0x00000fc0},   {9, 0x00000003},   {10, 0x00000003},  {11, 0x00000001},  {13, 0x4bfdf310},
    {14, 0x8573e0d4},  {15, 0xb4a65d8d},  {32, 0x6b0f5d68},  {33, 0x00000001},  {34, 0x00000003},
    {35, 0x00000003},  {38, 0xe23cf93c},  {39, 0x00000013},  {41, 0x00000013},  {43, 0xffffffff},
    {64, 0x00000002},  {65, 0x00010000},  {129, 0x000000fe}, {130, 0x00000020}, {132, 0x00000006},
    {160, 0x00000001}, {161, 0x000000fe}, {162, 0x00000030}, {163, 0x00000001}, {164, 0x00000006},
    {192, 0x00000002}, {193, 0x000000fe}, {194, 0x00000040}, {195, 0x00000002}, {196, 0x00000006},
    {993, 0x000000fe}, {994, 0x00000020}, {996, 0x00000006},
};

#define MEMBER (4u << 20)
#define SB_AT (MEMBER - 65536u) /* 4 MiB rounded to 64 KiB, less 64 KiB */
#define W(f) (offsetof(struct md_sb090, f) / 4)

static void build(uint32_t *w, const uint32_t (*words)[2], size_t n)
{
	memset(w, 0, MD_SB_BLOCK);
	for (size_t i = 0; i < n; i++)
		w[words[i][0]] = htole32(words[i][1]);
}

/* What a big-endian machine would have written: every word swapped, and
 * events_hi/lo (cp_events too) in the other order. */
static void to_big_endian(uint32_t *w)
{
	uint32_t t;

	for (unsigned i = 0; i < MD_SB_BLOCK / 4; i++)
		w[i] = bswap_32(w[i]);
	t = w[W(events_a)], w[W(events_a)] = w[W(events_b)], w[W(events_b)] = t;
	t = w[W(cp_events_a)], w[W(cp_events_a)] = w[W(cp_events_b)], w[W(cp_events_b)] = t;
}

static struct vol *member_with(const uint32_t *w, uint64_t size)
{
	struct vol *v = mem_vol(size);
	uint64_t at = (size & ~65535ull) - 65536;

	CHECK(vol_write(v, w, MD_SB_BLOCK, at, 0) == 0);
	return v;
}

/* Read the block w from a member of size through the version table. */
static int read_as(const uint32_t *w, uint64_t size, struct md_super *s)
{
	struct vol *v = member_with(w, size);
	int r;

	err_clear();
	r = md_super_read_raw(v, s);
	if (r == 0)
		r = md_super_check(s, v->size, "m.img");
	vol_close(v);
	return r;
}

/* Fix the checksum of w (in its byte order) after an edit. */
static void fix_csum(uint32_t *w, bool be)
{
	uint32_t c = md_sb090_csum(w);
	w[W(sb_csum)] = be ? htobe32(c) : htole32(c);
}

static void test_raid1_decode(bool be)
{
	static uint32_t w[1024];
	struct md_super *s = malloc(sizeof(*s));
	char uuid[36], name[48];
	uint8_t bu[16];

	build(w, raid1_words, sizeof(raid1_words) / sizeof(raid1_words[0]));
	if (be)
		to_big_endian(w);
	CHECK_EQ(md_sb090_csum(w), 0xf7af64ca);
	CHECK_EQ(read_as(w, MEMBER, s), 0);
	CHECK(md_sb090_is(s));
	CHECK_EQ(md_sb090_big_endian(s), be);
	CHECK(strcmp(s->version->name, "0.90") == 0);
	CHECK_EQ(s->super_offset, SB_AT / 512);
	CHECK_EQ(s->data_offset, 0);
	CHECK_EQ(s->data_size, SB_AT / 512);
	CHECK_EQ(s->size, 4032 * 2);
	CHECK_EQ(s->level, 1);
	CHECK_EQ(s->raid_disks, 2);
	CHECK_EQ(s->events, 1);
	CHECK(md_super_clean(s));
	CHECK_EQ(s->dev_number, 0);
	CHECK_EQ(md_super_role(s), 0);
	CHECK_EQ(s->roles[1], 1);
	CHECK_EQ(s->roles[2], MD_ROLE_SPARE);
	CHECK_EQ(s->max_dev, MD_SB090_DISKS);
	CHECK_EQ(s->ctime, 0x6b0f5d62);
	CHECK(s->feature_map & MD_FEATURE_BITMAP_OFFSET);
	md_uuid_format(s->set_uuid, uuid);
	CHECK(strcmp(uuid, "e485c658:59c54204:8573e0d4:b4a65d8d") == 0); /* as mdadm -E */
	md_super_array_name(s, name, sizeof(name));
	CHECK(strcmp(name, "md/0") == 0);
	CHECK(memcmp(s->device_uuid, s->set_uuid, 12) == 0);
	CHECK(memcmp(s->device_uuid, s->set_uuid, 16) != 0);
	/* The bitmap: 4 KiB after the superblock, its uuid the words as
	 * the writer stored them (the kernel's mddev->uuid). */
	uint64_t at, end;
	CHECK_EQ(md_super_bitmap_area(s, SB_AT + 65536, &at, &end), 0);
	md_super_bitmap_uuid(s, bu);
	CHECK_EQ(at, SB_AT + 4096);
	CHECK_EQ(end, SB_AT + 65536);
	CHECK(memcmp(bu, &w[W(set_uuid0)], 4) == 0 && memcmp(bu + 4, &w[W(set_uuid1)], 4) == 0);
	free(s);
}

/* Encoding what was decoded changes nothing; a new event count changes
 * only the events, cp_events and checksum words, in the block's order. */
static void test_round_trip(bool be)
{
	static uint32_t w[1024], orig[1024];
	struct md_super *s = malloc(sizeof(*s));

	build(w, raid5_words, sizeof(raid5_words) / sizeof(raid5_words[0]));
	if (be)
		to_big_endian(w);
	memcpy(orig, w, sizeof(w));
	CHECK_EQ(read_as(w, MEMBER, s), 0);
	CHECK_EQ(s->events, 19);
	CHECK_EQ(s->chunk, 128);
	CHECK_EQ(s->level, 5);
	CHECK_EQ(s->layout, 2);
	md_super_encode(s);
	CHECK(memcmp(s->raw, orig, MD_SB_BLOCK) == 0);

	s->events = 0x100000014ull; /* past 32 bits: both words move */
	md_super_encode(s);
	uint32_t *nw = (uint32_t *)s->raw, diff = 0;
	for (unsigned i = 0; i < 1024; i++)
		if (nw[i] != orig[i] && i != W(events_a) && i != W(events_b) &&
		    i != W(cp_events_a) && i != W(cp_events_b) && i != W(sb_csum))
			diff++;
	CHECK_EQ(diff, 0);
	memcpy(w, s->raw, MD_SB_BLOCK);
	CHECK_EQ(read_as(w, MEMBER, s), 0);
	CHECK_EQ(s->events, 0x100000014ull);
	CHECK(md_super_clean(s));
	if (be) { /* the same block as a little-endian writer's, swapped */
		uint32_t le[1024];
		memcpy(le, w, sizeof(le));
		to_big_endian(le); /* an involution: back to little-endian */
		CHECK_EQ(le32toh(le[W(events_a)]), 0x14);
		CHECK_EQ(le32toh(le[W(events_b)]), 1);
		CHECK_EQ(md_sb090_csum(le), md_sb090_csum(w));
	}
	free(s);
}

/* Active, then a member failing: the state words the kernel reads. */
static void test_transitions(bool be)
{
	static uint32_t w[1024];
	struct md_super *s = malloc(sizeof(*s));
	struct md_super *t = malloc(sizeof(*t));

	build(w, raid5_words, sizeof(raid5_words) / sizeof(raid5_words[0]));
	if (be)
		to_big_endian(w);
	CHECK_EQ(read_as(w, MEMBER, s), 0);
	s->resync_offset = 0; /* active */
	s->events++;
	s->roles[2] = MD_ROLE_FAULTY;
	md_super_encode(s);
	CHECK_EQ(md_sb090_csum(s->raw), s->sb_csum);
	CHECK_EQ(md_sb090_word(s, W(state)) & MD_SB090_CLEAN, 0);
	CHECK_EQ(md_sb090_word(s, W(recovery_cp)), 0);
	CHECK_EQ(md_sb090_word(s, W(disks[2].state)), MD_SB090_DISK_FAULTY);
	CHECK_EQ(md_sb090_word(s, W(disks[1].state)), 6);
	CHECK_EQ(md_sb090_word(s, W(active_disks)), 2);
	CHECK_EQ(md_sb090_word(s, W(working_disks)), 2);
	CHECK_EQ(md_sb090_word(s, W(failed_disks)), 1);
	CHECK_EQ(md_sb090_word(s, W(this_disk.state)), 6); /* this one is slot 0 */
	memcpy(w, s->raw, MD_SB_BLOCK);
	CHECK_EQ(read_as(w, MEMBER, t), 0);
	CHECK(!md_super_clean(t));
	CHECK_EQ(t->resync_offset, 0);
	CHECK_EQ(t->roles[2], MD_ROLE_FAULTY);
	CHECK_EQ(t->events, 20);
	/* Clean again: recovery_cp MaxSector, cp_events = events. */
	t->resync_offset = MD_MAX_SECTOR;
	t->events++;
	md_super_encode(t);
	CHECK(md_sb090_word(t, W(state)) & MD_SB090_CLEAN);
	CHECK_EQ(md_sb090_word(t, W(recovery_cp)), UINT32_MAX);
	CHECK_EQ(md_sb090_word(t, be ? W(cp_events_b) : W(cp_events_a)), 21);
	/* A role taken is not recorded (uraid does not rebuild 0.90). */
	t->roles[2] = 2;
	md_super_encode(t);
	CHECK_EQ(md_sb090_word(t, W(disks[2].state)), MD_SB090_DISK_FAULTY);
	free(s);
	free(t);
}

/* The kernel compares checksums folded to 16 bits. */
static void test_checksum(void)
{
	static uint32_t w[1024];
	struct md_super *s = malloc(sizeof(*s));
	uint32_t c;

	build(w, raid1_words, sizeof(raid1_words) / sizeof(raid1_words[0]));
	c = le32toh(w[W(sb_csum)]);
	w[W(sb_csum)] = htole32(c - 0xffff); /* another 32-bit value, same fold */
	CHECK(md_sb090_csum_fold(c - 0xffff) == md_sb090_csum_fold(c));
	CHECK_EQ(read_as(w, MEMBER, s), 0);
	w[W(sb_csum)] = htole32(c ^ 1);
	CHECK_EQ(read_as(w, MEMBER, s), -EUCLEAN);
	CHECK(strstr(err_detail(-EUCLEAN), "m.img: md 0.90 superblock checksum mismatch") != NULL);
	free(s);
}

/* One damage per case, checksum fixed: the rule, its errno and message. */
static void check_refused(unsigned word, uint32_t value, int want, const char *msg, bool be)
{
	static uint32_t w[1024];
	struct md_super *s = malloc(sizeof(*s));
	int r;

	build(w, raid1_words, sizeof(raid1_words) / sizeof(raid1_words[0]));
	w[word] = htole32(value);
	if (be)
		to_big_endian(w);
	fix_csum(w, be);
	r = read_as(w, MEMBER, s);
	CHECK_EQ(r, want);
	if (r < 0 && !strstr(err_detail(r), msg)) {
		fprintf(stderr, "word %u: got \"%s\", want \"%s\"\n", word, err_detail(r), msg);
		check_failures++;
	}
	free(s);
}

static void test_rules(bool be)
{
	check_refused(W(minor_version), 91, -ENOTSUP, "m.img: md 0.90 superblock 0.91", be);
	check_refused(W(minor_version), 89, -EINVAL, "unsupported superblock version 0.89", be);
	check_refused(W(raid_disks), 0, -EUCLEAN, "md 0.90 raid_disks 0", be);
	check_refused(W(raid_disks), 28, -EUCLEAN, "md 0.90 raid_disks 28", be);
	check_refused(W(this_disk.number), 27, -EUCLEAN, "this_disk number 27", be);
	check_refused(W(level), 7, -EINVAL, "m.img: md level 7 is unknown", be);
	check_refused(W(level), (uint32_t)-4, -EINVAL, "md level -4 is unknown",
	              be); /* multipath */
	check_refused(W(size), 4033, -EUCLEAN, "used size 8066 exceeds the data size 8064", be);
	check_refused(W(disks[1].raid_disk), 2, -EUCLEAN, "md 0.90 disk 1 claims role 2", be);
	check_refused(W(chunk_size), 1000, -EUCLEAN, "chunk size 1000 bytes", be);
	check_refused(W(patch_version), 0, 0, "", be); /* not a rule: control */
}

/* A member that grew or shrank keeps its block where it no longer
 * belongs: not found (no magic where 0.90 looks) or refused. */
static void test_placement(void)
{
	static uint32_t w[1024];
	struct md_super *s = malloc(sizeof(*s));
	struct vol *v;

	build(w, raid1_words, sizeof(raid1_words) / sizeof(raid1_words[0]));
	v = member_with(w, MEMBER);
	/* read as a member 64 KiB larger: nothing at the new place */
	struct vol *big = mem_vol(MEMBER + 65536);
	uint8_t buf[MD_SB_BLOCK];
	CHECK(vol_read(v, buf, MD_SB_BLOCK, SB_AT) == 0);
	CHECK(vol_write(big, buf, MD_SB_BLOCK, SB_AT, 0) == 0);
	CHECK_EQ(md_super_read_raw(big, s), -ENOENT);
	/* the check of a block decoded for another size */
	CHECK_EQ(md_super_read_raw(v, s), 0);
	err_clear();
	CHECK_EQ(md_super_check(s, MEMBER + 65536, "m.img"), -EINVAL);
	CHECK(strstr(err_detail(-EINVAL), "md 0.90 superblock found at sector 8064") != NULL);
	/* too small for a 0.90 block: 1.2's place holds none either */
	struct vol *tiny = mem_vol(32768);
	CHECK_EQ(md_super_read_raw(tiny, s), -ENOENT);
	/* major version 1 at 0.90's place is not a 0.90 block */
	w[W(major_version)] = htole32(1);
	struct vol *v1 = member_with(w, MEMBER);
	CHECK_EQ(md_super_read_raw(v1, s), -ENOENT);
	vol_close(v);
	vol_close(big);
	vol_close(tiny);
	vol_close(v1);
	free(s);
}

/* create's probe finds a 0.90 block in either byte order. */
static void test_end_probe(void)
{
	static uint32_t w[1024];
	uint64_t at[2];

	for (int be = 0; be < 2; be++) {
		build(w, raid1_words, sizeof(raid1_words) / sizeof(raid1_words[0]));
		if (be)
			to_big_endian(w);
		struct vol *v = member_with(w, MEMBER);
		CHECK_EQ(md_find_end_supers(v, "m.img", at), 2);
		CHECK_EQ(at[1], SB_AT);
		vol_close(v);
	}
}

int main(void)
{
	log_verbosity = -1;
	for (int be = 0; be < 2; be++) {
		test_raid1_decode(be);
		test_round_trip(be);
		test_transitions(be);
		test_rules(be);
	}
	test_checksum();
	test_placement();
	test_end_probe();
	return check_done();
}
