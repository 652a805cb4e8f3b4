/* test_takeover.c — md_takeover_plan(), the table of md's level changes
 * that move no data (src/md/md_takeover.c), on superblocks built here: for
 * each row the geometry and role table the kernel's takeover writes (the
 * layout map raid5 <-> raid6 for every layout, the chunk a raid1 gets,
 * which slot leaves or becomes a spare, which role a new member takes),
 * and each rule's refusal.  tests/sh/md-takeover.sh runs them on files,
 * tests/sh/md-kernel-takeover.sh against the kernel. */
#include "check.h"

#include "core/log.h"
#include "md/md.h"
#include "md/md_takeover.h"

#include <errno.h>
#include <string.h>

static struct md_super sb;
static bool in_sync[MD_SB_MAX_DEV];

/* An array of n roles in slots 0..n-1, every member in sync. */
static void array(int level, uint32_t layout, uint32_t chunk, unsigned n, uint64_t size)
{
	memset(&sb, 0, sizeof(sb));
	memset(in_sync, 0, sizeof(in_sync));
	sb.level = level;
	sb.layout = layout;
	sb.chunk = chunk;
	sb.raid_disks = n;
	sb.size = size;
	sb.data_size = size;
	sb.max_dev = n + 2;
	for (unsigned k = 0; k < sb.max_dev; k++)
		sb.roles[k] = k < n ? (uint16_t)k : MD_ROLE_SPARE;
	for (unsigned k = 0; k < n; k++)
		in_sync[k] = true;
}

static int plan(int level, const char *layout, struct md_takeover_plan *p)
{
	struct md_takeover_in in = {.sb = &sb,
	                            .in_sync = in_sync,
	                            .min_data_size = sb.data_size,
	                            .max_data_size = sb.data_size,
	                            .level = level,
	                            .layout = layout,
	                            .array = "md/t"};
	err_clear();
	return md_takeover_plan(&in, p);
}

/* The refusal's message holds want. */
static void refused(int level, const char *layout, const char *want)
{
	struct md_takeover_plan p;
	int r = plan(level, layout, &p);

	CHECK(r < 0);
	if (r < 0 && !strstr(err_detail(r), want)) {
		fprintf(stderr, "refusal '%s' lacks '%s'\n", err_detail(r), want);
		CHECK(0);
	}
}

static void test_1_5(void)
{
	struct md_takeover_plan p;

	array(1, 0, 0, 2, 20480);
	CHECK_EQ(plan(5, NULL, &p), 0);
	CHECK_EQ(p.level, 5);
	CHECK_EQ(p.layout, 2);  /* left-symmetric */
	CHECK_EQ(p.chunk, 128); /* 64 KiB divides 20480 sectors */
	CHECK_EQ(p.raid_disks, 2);
	CHECK_EQ(p.size, 20480);
	CHECK_EQ(p.new_role, -1);
	CHECK_EQ(p.roles[0], 0);
	CHECK_EQ(p.roles[1], 1);
	array(1, 0, 0, 2, 8 * 3);
	CHECK_EQ(plan(5, "parity-last", &p), 0);
	CHECK_EQ(p.chunk, 8); /* the largest power of two dividing it */
	CHECK_EQ(p.layout, 5);
	/* --raid-devices 3 with it: the takeover, then a restripe to 3 */
	array(1, 0, 0, 2, 20480);
	struct md_takeover_in in = {.sb = &sb,
	                            .in_sync = in_sync,
	                            .min_data_size = 20480,
	                            .max_data_size = 20480,
	                            .level = 5,
	                            .raid_disks = 3,
	                            .array = "md/t"};
	CHECK_EQ(md_takeover_plan(&in, &p), 0);
	CHECK_EQ(p.raid_disks, 2);
	CHECK(p.restripe_after && !p.restripe_before);
	CHECK_EQ(p.after_disks, 3);
	CHECK_EQ(p.after_layout, 2);
	array(1, 0, 0, 3, 20480);
	refused(5, NULL, "two-device raid1");
	array(1, 0, 0, 2, 20481);
	refused(5, NULL, "multiple of 4 KiB");
}

static void test_5_1(void)
{
	struct md_takeover_plan p;

	array(5, 0, 1024, 2, 20480);
	CHECK_EQ(plan(1, NULL, &p), 0);
	CHECK_EQ(p.level, 1);
	CHECK_EQ(p.layout, 0);
	CHECK_EQ(p.chunk, 0);
	CHECK_EQ(p.size, 20480);
	refused(1, "left-symmetric", "no layout");
	array(5, 2, 1024, 3, 20480);
	refused(1, NULL, "two-device raid5");
}

static void test_5_6(void)
{
	/* raid5 layout -> its raid6 form with Q on the last device */
	static const uint32_t map[][2] = {{0, 16}, {1, 17}, {2, 18}, {3, 19}, {4, 20}, {5, 5}};
	struct md_takeover_plan p;

	for (unsigned i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		array(5, map[i][0], 1024, 3, 20480);
		CHECK_EQ(plan(6, NULL, &p), 0);
		CHECK_EQ(p.level, 6);
		CHECK_EQ(p.layout, map[i][1]);
		CHECK_EQ(p.raid_disks, 4);
		CHECK_EQ(p.new_role, 3);
		CHECK_EQ(p.chunk, 1024);
		CHECK_EQ(p.roles[3], MD_ROLE_SPARE);
	}
	array(5, 2, 1024, 3, 20480);
	CHECK_EQ(plan(6, "preserve", &p), 0);
	CHECK_EQ(plan(6, "left-symmetric-6", &p), 0);
	CHECK(!p.restripe_after && !p.restripe_before);
	/* another raid6 layout: to -6, then restriped to it (mdadm's way) */
	CHECK_EQ(plan(6, "left-symmetric", &p), 0);
	CHECK_EQ(p.layout, 18);
	CHECK(p.restripe_after && !p.restripe_before);
	CHECK_EQ(p.after_layout, 2);
	CHECK_EQ(p.after_disks, 4);
	CHECK_EQ(plan(6, "right-symmetric-6", &p), 0);
	CHECK(p.restripe_after);
	CHECK_EQ(p.after_layout, 19);
	refused(6, "left-symmetricx", "not a raid6 layout");
	in_sync[1] = false;
	refused(6, NULL, "degraded or rebuilding");
	array(5, 2, 1024, 2, 20480);
	refused(6, NULL, "at least 4");
}

static void test_6_5(void)
{
	static const uint32_t map[][2] = {{16, 0}, {17, 1}, {18, 2}, {19, 3}, {20, 4}, {5, 5}};
	struct md_takeover_plan p;

	for (unsigned i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		array(6, map[i][0], 1024, 4, 20480);
		CHECK_EQ(plan(5, NULL, &p), 0);
		CHECK_EQ(p.level, 5);
		CHECK_EQ(p.layout, map[i][1]);
		CHECK_EQ(p.raid_disks, 3);
		CHECK_EQ(p.roles[3], MD_ROLE_SPARE); /* Q's device: a spare */
		CHECK(!p.dropped[3]);
		CHECK_EQ(p.roles[2], 2);
	}
	/* Q's device in another slot */
	array(6, 18, 1024, 4, 20480);
	sb.roles[0] = 3;
	sb.roles[3] = 0;
	CHECK_EQ(plan(5, NULL, &p), 0);
	CHECK_EQ(p.roles[0], MD_ROLE_SPARE);
	CHECK_EQ(p.roles[3], 0);
	array(6, 18, 1024, 4, 20480);
	in_sync[0] = false; /* one data device out: a degraded raid5 */
	CHECK_EQ(plan(5, NULL, &p), 0);
	in_sync[1] = false;
	refused(5, NULL, "a raid5 survives one");
	array(6, 2, 1024, 4, 20480); /* left-symmetric: Q rotates; restriped to -6 first */
	CHECK_EQ(plan(5, NULL, &p), 0);
	CHECK(p.restripe_before && !p.restripe_after);
	CHECK_EQ(p.before_layout, 18);
	CHECK_EQ(p.layout, 2);
	CHECK_EQ(p.raid_disks, 3);
	array(6, 8, 1024, 4, 20480); /* rotating-zero-restart (ddf): no raid5 form */
	refused(5, NULL, "no raid5 form");
	array(6, 18, 1024, 4, 20480);
	refused(5, "left-asymmetric", "restripe");
}

static void test_0_5(void)
{
	struct md_takeover_plan p;
	struct md_takeover_in in;

	array(0, 0, 1024, 2, 0);
	sb.data_size = 20480 + 100; /* rounded to the chunk: 20480 */
	CHECK_EQ(plan(5, NULL, &p), 0);
	CHECK_EQ(p.level, 5);
	CHECK_EQ(p.layout, 5); /* parity-last */
	CHECK_EQ(p.raid_disks, 3);
	CHECK_EQ(p.size, 20480);
	CHECK_EQ(p.new_role, 2);
	CHECK(p.clean);
	CHECK_EQ(plan(5, "parity-last", &p), 0);
	refused(5, "left-symmetric", "reshape");
	refused(6, NULL, "go to raid5");
	in = (struct md_takeover_in){.sb = &sb,
	                             .in_sync = in_sync,
	                             .min_data_size = 20480,
	                             .max_data_size = 40960,
	                             .level = 5,
	                             .array = "md/t"};
	int r = md_takeover_plan(&in, &p);
	CHECK(r < 0);
	CHECK(strstr(err_detail(r), "more than one zone") != NULL);
}

static void test_5_0(void)
{
	struct md_takeover_plan p;

	array(5, 5, 1024, 3, 20480);
	CHECK_EQ(plan(0, NULL, &p), 0);
	CHECK_EQ(p.level, 0);
	CHECK_EQ(p.layout, 0);
	CHECK_EQ(p.raid_disks, 2);
	CHECK(p.dropped[2]);
	CHECK_EQ(p.roles[2], MD_ROLE_SPARE);
	CHECK(!p.dropped[0] && !p.dropped[1]);
	in_sync[2] = false; /* the parity device's state does not matter */
	CHECK_EQ(plan(0, NULL, &p), 0);
	in_sync[0] = false;
	refused(0, NULL, "data device is missing");
	array(5, 2, 1024, 3, 20480);
	refused(0, NULL, "only parity-last");
	array(5, 5, 1024, 3, 20480);
	sb.feature_map = MD_FEATURE_BITMAP_OFFSET;
	refused(0, NULL, "bitmap");
	sb.feature_map = MD_FEATURE_PPL;
	refused(0, NULL, "partial parity log");
}

/* raid0 <-> raid4 and raid4 <-> raid5, as raid5.c's raid4_takeover,
 * raid5_takeover and raid0.c's raid0_takeover_raid45 write them. */
static void test_raid4(void)
{
	struct md_takeover_plan p;

	array(0, 0, 1024, 2, 0);
	sb.data_size = 20480;
	CHECK_EQ(plan(4, NULL, &p), 0);
	CHECK_EQ(p.level, 4);
	CHECK_EQ(p.layout, 5); /* ALGORITHM_PARITY_N, as for raid5 */
	CHECK_EQ(p.raid_disks, 3);
	CHECK_EQ(p.size, 20480);
	CHECK_EQ(p.new_role, 2);
	CHECK(p.clean);
	refused(4, "parity-last", "no layout to choose");

	array(4, 0, 1024, 3, 20480); /* mdadm --create's raid4: layout 0 */
	CHECK_EQ(plan(5, NULL, &p), 0);
	CHECK_EQ(p.level, 5);
	CHECK_EQ(p.layout, 5);
	CHECK_EQ(p.raid_disks, 3);
	CHECK_EQ(p.new_role, -1);
	CHECK_EQ(plan(5, "parity-last", &p), 0);
	refused(5, "left-symmetric", "restripes every block");
	in_sync[0] = false; /* no block moves: any state */
	CHECK_EQ(plan(5, NULL, &p), 0);

	array(4, 5, 1024, 3, 20480);
	CHECK_EQ(plan(0, NULL, &p), 0);
	CHECK_EQ(p.level, 0);
	CHECK_EQ(p.raid_disks, 2);
	CHECK(p.dropped[2] && !p.dropped[0] && !p.dropped[1]);
	in_sync[1] = false;
	refused(0, NULL, "raid4 -> raid0: a data device is missing");

	array(5, 5, 1024, 3, 20480);
	CHECK_EQ(plan(4, NULL, &p), 0);
	CHECK_EQ(p.level, 4);
	CHECK_EQ(p.layout, 0); /* raid4_takeover's new_layout */
	CHECK_EQ(p.raid_disks, 3);
	array(5, 2, 1024, 3, 20480);
	refused(4, NULL, "only parity-last");
	array(4, 0, 1024, 4, 20480);
	refused(6, NULL, "no takeover between these levels");
}

static void test_10_0(void)
{
	struct md_takeover_plan p;

	array(10, 0x102, 1024, 4, 20480);
	CHECK_EQ(plan(0, NULL, &p), 0);
	CHECK_EQ(p.level, 0);
	CHECK_EQ(p.raid_disks, 2);
	CHECK_EQ(p.roles[0], 0);
	CHECK_EQ(p.roles[2], 1);
	CHECK(p.dropped[1] && p.dropped[3]);
	CHECK(!p.dropped[0] && !p.dropped[2]);
	/* a pair whose first copy is out keeps its second */
	in_sync[2] = false;
	CHECK_EQ(plan(0, NULL, &p), 0);
	CHECK_EQ(p.roles[3], 1);
	CHECK(p.dropped[2] && !p.dropped[3]);
	in_sync[3] = false;
	refused(0, NULL, "neither device of pair 1");
	array(10, 0x201, 1024, 4, 20480); /* f2 */
	refused(0, NULL, "only near-2");
	array(10, 0x103, 1024, 3, 20480); /* n3 */
	refused(0, NULL, "only near-2");
	array(10, 0x102, 1024, 3, 20480);
	refused(0, NULL, "odd count");
}

static void test_1_0(void)
{
	struct md_takeover_plan p;

	array(1, 0, 0, 3, 20480);
	in_sync[0] = false;
	CHECK_EQ(plan(0, NULL, &p), 0);
	CHECK_EQ(p.raid_disks, 1);
	CHECK_EQ(p.roles[1], 0);
	CHECK(p.dropped[0] && p.dropped[2] && !p.dropped[1]);
	CHECK_EQ(p.chunk, 128);
}

static void test_refusals(void)
{
	array(1, 0, 0, 2, 20480);
	refused(6, NULL, "no takeover between these levels");
	refused(10, NULL, "no takeover between these levels");
	refused(1, NULL, "is raid1 already");
	array(10, 0x102, 1024, 4, 20480);
	refused(5, NULL, "no takeover between these levels");
	/* every row names both of its levels */
	int from, to;
	bool made;
	const char *rule;
	for (unsigned i = 0; (rule = md_takeover_row(i, &from, &to, &made)); i++) {
		char want[32];
		snprintf(want, sizeof(want), "%s -> %s", md_level_name(from), md_level_name(to));
		CHECK(strstr(rule, want) != NULL);
	}
}

int main(void)
{
	log_verbosity = LOG_ERROR;
	test_1_5();
	test_5_1();
	test_5_6();
	test_6_5();
	test_0_5();
	test_5_0();
	test_raid4();
	test_10_0();
	test_1_0();
	test_refusals();
	return check_done();
}
