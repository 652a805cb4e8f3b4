/* test_detect.c — the pieces of src/stack/detect.c and assume.c that can
 * be checked alone: stack_detect_raid5_row() (where detect thinks each
 * data chunk of a row lies) against the RAID engine's own placement
 * (tested against the kernel's md elsewhere), for the four RAID5 layouts
 * and 3..6 members; and --assume's parser: what stack_assume_format()
 * writes (the line detect prints) parses back to the same array, and
 * what is wrong is an error. */
#include "check.h"
#include "mem_vol.h"

#include "core/log.h"
#include "disc/raid/raid.h"
#include "stack/assume.h"
#include "stack/detect.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#define CHUNK 4096u
#define ROWS 12u

static void check_row_mapping(uint32_t layout, unsigned n)
{
	struct raid_geom g = {.level = 5,
	                      .layout = layout,
	                      .chunk = CHUNK,
	                      .raid_disks = n,
	                      .dev_size = ROWS * CHUNK};
	struct vol *m[8], *a = NULL;
	static uint8_t buf[CHUNK];

	for (unsigned k = 0; k < n; k++)
		m[k] = mem_vol(ROWS * CHUNK);
	if (raid_open(&g, m, NULL, "t", &a) < 0) {
		CHECK(!"raid_open");
		return;
	}
	/* Each array chunk filled with its number + 1. */
	for (unsigned c = 0; c < ROWS * (n - 1); c++) {
		memset(buf, (int)(c + 1), sizeof(buf));
		CHECK_EQ(vol_write(a, buf, CHUNK, (uint64_t)c * CHUNK, 0), 0);
	}
	CHECK_EQ(vol_flush(a), 0);
	for (unsigned s = 0; s < ROWS; s++) {
		unsigned data[8], pd = stack_detect_raid5_row(layout, n, s, data);
		for (unsigned k = 0; k < n - 1; k++) {
			CHECK(data[k] != pd && data[k] < n);
			CHECK_EQ(vol_read(m[data[k]], buf, CHUNK, (uint64_t)s * CHUNK), 0);
			if (buf[0] != (uint8_t)(s * (n - 1) + k + 1))
				fprintf(stderr, "layout %u n %u row %u data %u: disk %u holds %u\n",
				        layout, n, s, k, data[k], buf[0]);
			CHECK_EQ(buf[0], (uint8_t)(s * (n - 1) + k + 1));
		}
	}
	vol_close(a);
}

static void check_round_trip(void)
{
	struct raid_geom g = {.level = 5, .layout = 3, .chunk = 256 * 1024, .raid_disks = 4};
	const char *order[4] = {"c.img", NULL, "a.img", "b.img"};
	char line[512];
	struct stack_assume *as = NULL;

	stack_assume_format(&g, order, 1 << 20, 0, line, sizeof(line));
	CHECK(strcmp(line, "level=raid5,chunk=256K,layout=right-symmetric,order=c.img,missing,"
	                   "a.img,b.img,offset=1M") == 0);
	CHECK_EQ(stack_assume_parse(line, &as), 0);
	if (!as)
		return;
	CHECK_EQ(as->geom.level, 5);
	CHECK_EQ(as->geom.layout, 3);
	CHECK_EQ(as->geom.chunk, 256 * 1024);
	CHECK_EQ(as->geom.raid_disks, 4);
	CHECK_EQ(as->offset, 1 << 20);
	CHECK_EQ(as->missing, 1);
	CHECK(as->order[1] == NULL && strcmp(as->order[0], "c.img") == 0 &&
	      strcmp(as->order[3], "b.img") == 0);
	char *specs[] = {"b.img", "a.img", "c.img"};
	CHECK_EQ(stack_assume_check_members(as, specs, 3), 0);
	CHECK_EQ(stack_assume_check_members(as, specs, 2), -EINVAL);
	stack_assume_free(as);
	/* RAID0 and linear: no layout, no chunk for linear. */
	g = (struct raid_geom){.level = 0, .chunk = 65536, .raid_disks = 2};
	const char *o2[2] = {"x", "y"};
	stack_assume_format(&g, o2, 0, 8 << 20, line, sizeof(line));
	CHECK(strcmp(line, "level=raid0,chunk=64K,order=x,y,size=8M") == 0);
	g = (struct raid_geom){.level = RAID_LEVEL_LINEAR, .raid_disks = 2};
	stack_assume_format(&g, o2, 0, 0, line, sizeof(line));
	CHECK(strcmp(line, "level=linear,order=x,y") == 0);
	CHECK_EQ(stack_assume_parse(line, &as), 0);
	stack_assume_free(as);
}

static void check_bad(const char *spec, const char *says)
{
	struct stack_assume *as = NULL;

	err_clear();
	CHECK_EQ(stack_assume_parse(spec, &as), -EINVAL);
	CHECK(as == NULL);
	if (!strstr(err_detail(-EINVAL), says)) {
		fprintf(stderr, "'%s': '%s', want '%s'\n", spec, err_detail(-EINVAL), says);
		CHECK(!"message");
	}
}

int main(void)
{
	for (uint32_t layout = 0; layout < 4; layout++)
		for (unsigned n = 3; n <= 6; n++)
			check_row_mapping(layout, n);
	check_round_trip();
	check_bad("", "missing key level");
	check_bad("level=5,chunk=64K", "missing key order");
	check_bad("level=1,chunk=64K,order=a,b", "raid1 has no chunk");
	check_bad("level=5,chunk=64K,order=a,b,a", "a is named twice");
	check_bad("level=5,chunk=0,order=a,b,c", "not a power of two");
	check_bad("level=10,chunk=64K,layout=z9,order=a,b,c,d", "raid10 has no layout 'z9'");
	check_bad("level=5,chunk=64K,order=a,missing,missing", "cannot run with 2 of 3");
	check_bad("level=5,chunk=64K,order=a,b,c,offset=1000", "not a multiple of 512");
	check_bad("level=5,chunk=64K,order=a,b,c,size=0", "size 0");
	check_bad("size=1M", "missing key level");
	return check_done();
}
