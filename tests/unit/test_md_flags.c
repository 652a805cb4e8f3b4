/* test_md_flags.c — md's device flags (WriteMostly1, FailFast1) on a
 * running array: reads never reach a write-mostly member while a mirror
 * of it is in sync (the RAID engine's read counter of its role stays 0,
 * read-ahead on or off), writes do; once the mirror fails the reads go
 * to the write-mostly member and return the data.  RAID1 and RAID10 n2.
 * The flags are recorded in the member's superblock (devflags). */
#include "check.h"
#include "member_files.h"

#include "core/log.h"
#include "md/md.h"
#include "member/member.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MEMBER_SIZE (12u << 20)

static struct raid_io_stats stats(struct vol *v, unsigned role)
{
	struct raid_io_stats st;

	CHECK_EQ(raid_member_stats(md_array_raid(v), role, &st), 0);
	return st;
}

/* Read the whole array back and compare with want. */
static void read_all(struct vol *v, const uint8_t *want)
{
	uint8_t *got = malloc(v->size);

	for (uint64_t off = 0; off < v->size; off += 256 << 10)
		CHECK_EQ(vol_read(v, got + off, 256 << 10, off), 0);
	CHECK(memcmp(got, want, v->size) == 0);
	free(got);
}

/* n members, those with a bit in wm write-mostly (member 0 failfast). */
static void test_level(int level, const char *layout, unsigned n, unsigned wm, int readahead)
{
	struct md_create_opts o;
	struct md_created made;
	struct md_assemble_opts ao = {0};
	char *specs[4];
	uint8_t flags[4] = {0};
	struct vol *m[4], **res = NULL;
	int nres = 0;

	fprintf(stderr, "-- raid%d%s%s, write-mostly mask %x, read-ahead %d\n", level,
	        layout ? " " : "", layout ? layout : "", wm, readahead);
	for (unsigned i = 0; i < n; i++) {
		member_file_make((int)i, MEMBER_SIZE);
		specs[i] = (char *)path((int)i);
		flags[i] = (wm >> i) & 1 ? MD_DEVFLAG_WRITE_MOSTLY : 0;
	}
	flags[0] |= MD_DEVFLAG_FAILFAST;
	md_create_defaults(level, &o);
	if (layout)
		CHECK_EQ(md_layout_parse(level, layout, &o.layout), 0);
	if (level == 10)
		o.chunk_kib = 64;
	o.assume_clean = true;
	o.devflags = flags;
	err_clear();
	CHECK_EQ(md_create(specs, n, &o, &made), 0);
	for (unsigned i = 0; i < n; i++) {
		struct md_super s;
		struct vol *mv;
		CHECK_EQ(member_open(path((int)i), MEMBER_READONLY, &mv), 0);
		CHECK_EQ(md_super_read(mv, &s), 0);
		CHECK_EQ(s.devflags, flags[i]);
		vol_close(mv);
	}
	for (unsigned i = 0; i < n; i++)
		CHECK_EQ(member_open(path((int)i), 0, &m[i]), 0);
	CHECK_EQ(md_assemble_all(m, (int)n, &ao, &res, &nres), 0);
	if (nres != 1)
		return;
	struct vol *v = res[0];
	free(res);
	if (readahead)
		CHECK_EQ(raid_set_readahead(md_array_raid(v), readahead), 0);
	uint8_t *data = malloc(v->size);
	unsigned long long seed = 99;
	for (uint64_t i = 0; i < v->size; i += 8) {
		uint64_t x = check_rand(&seed);
		memcpy(data + i, &x, 8);
	}
	CHECK_EQ(vol_write(v, data, v->size, 0, 0), 0);
	for (int pass = 0; pass < 3; pass++)
		read_all(v, data);
	for (unsigned i = 0; i < n; i++) {
		struct raid_io_stats st = stats(v, i);
		if ((wm >> i) & 1) {
			CHECK_EQ(st.ops[0], 0); /* never read */
			CHECK(st.bytes[1] > 0); /* but written */
		} else {
			CHECK(st.ops[0] > 0);
		}
	}
	/* The in-sync mirror of member 1 (member 0) fails: reads of its
	 * blocks go to the write-mostly one now. */
	CHECK_EQ(md_array_fail(v, path(0)), 0);
	read_all(v, data);
	CHECK(stats(v, 1).ops[0] > 0);
	vol_close(v);
	free(data);
}

int main(void)
{
	if (check_tmpdir(dir, sizeof(dir), "flags") < 0)
		return 1;
	log_verbosity = LOG_ERROR;
	test_level(1, NULL, 2, 0x2, 0);
	test_level(1, NULL, 2, 0x2, 1);
	test_level(10, "n2", 4, 0xa, 0);
	test_level(10, "n2", 4, 0xa, 1);
	for (int i = 0; i < 8; i++)
		unlink(path(i));
	rmdir(dir);
	return check_done();
}
