/* cmd_examine.c — `uraid examine MEMBER...`: print each member's md
 * superblock the way `mdadm --examine` does.  Opens members read-only and
 * never writes.  A damaged superblock is still shown (with the checksum it
 * should have), followed by the reason it would not be assembled. */
#include "cli.h"

#include "core/log.h"
#include "md/md.h"
#include "md/md_bitmap.h"
#include "md/md_sb090.h"
#include "member/member.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* mdadm's " (63.00 MiB 66.06 MB)" suffix; empty for small sizes. */
static const char *examine_human(uint64_t bytes, char *buf, size_t len)
{
	if (bytes < 5000 * 1024ull)
		buf[0] = '\0';
	else if (bytes < 2ull << 30)
		snprintf(buf, len, " (%.2f MiB %.2f MB)", bytes / 1048576.0, bytes / 1e6);
	else if (bytes < 2ull << 40)
		snprintf(buf, len, " (%.2f GiB %.2f GB)", bytes / 1073741824.0, bytes / 1e9);
	else
		snprintf(buf, len, " (%.2f TiB %.2f TB)", bytes / 1099511627776.0, bytes / 1e12);
	return buf;
}

static const char *examine_time(uint64_t t, char *buf, size_t len)
{
	time_t secs = (time_t)MD_TIME_SECS(t);
	struct tm tm;

	if (!localtime_r(&secs, &tm) || !strftime(buf, len, "%a %b %e %H:%M:%S %Y", &tm))
		snprintf(buf, len, "%llu", (unsigned long long)secs);
	return buf;
}

static void examine_print(const char *name, const struct md_super *s)
{
	char uuid[36], hb[64], tb[64], lname[32];
	uint32_t want = md_sb_csum(s->raw);
	unsigned role;
	const struct md_level_info *lv = md_level_info(s->level);
	const char *lvl = lv ? lv->name : NULL;

	printf("%s:\n", name);
	printf("          Magic : %08x\n", MD_SB_MAGIC);
	printf("        Version : %s\n", md_super_version(s)->name);
	printf("    Feature Map : 0x%x\n", s->feature_map);
	md_uuid_format(s->set_uuid, uuid);
	printf("     Array UUID : %s\n", uuid);
	printf("           Name : %s\n", s->set_name);
	printf("  Creation Time : %s\n", examine_time(s->ctime, tb, sizeof(tb)));
	printf("     Raid Level : %s\n", lvl ? lvl : "-unknown-");
	printf("   Raid Devices : %u\n\n", s->raid_disks);
	printf(" Avail Dev Size : %llu sectors%s\n", (unsigned long long)s->data_size,
	       examine_human(s->data_size * 512, hb, sizeof(hb)));
	if (s->level > 0) {
		uint64_t data_disks = 0, denom = 1;
		if (s->level == 1)
			data_disks = 1;
		else if (md_level_parity(s->level))
			data_disks = s->raid_disks - md_level_parity(s->level);
		else if (s->level == 10) {
			data_disks = s->raid_disks;
			denom = MD_RAID10_NEAR(s->layout) * MD_RAID10_FAR(s->layout);
		}
		if (data_disks && denom) {
			uint64_t bytes = s->size * 512 * data_disks / denom;
			printf("     Array Size : %llu KiB%s\n", (unsigned long long)(bytes >> 10),
			       examine_human(bytes, hb, sizeof(hb)));
		}
		if (s->size != s->data_size)
			printf("  Used Dev Size : %llu sectors%s\n", (unsigned long long)s->size,
			       examine_human(s->size * 512, hb, sizeof(hb)));
	}
	printf("    Data Offset : %llu sectors\n", (unsigned long long)s->data_offset);
	printf("   Super Offset : %llu sectors\n", (unsigned long long)s->super_offset);
	if (s->feature_map & MD_FEATURE_RECOVERY_OFFSET)
		printf("Recovery Offset : %llu sectors\n", (unsigned long long)s->recovery_offset);
	else if (md_super_role(s) == MD_ROLE_JOURNAL)
		printf("   Journal Tail : %llu sectors\n", (unsigned long long)s->recovery_offset);
	printf("          State : %s\n", md_super_clean(s) ? "clean" : "active");
	if (md_level_redundant(s->level))
		printf(" Consistency Policy : %s\n",
		       s->feature_map & MD_FEATURE_ANY_PPL         ? "ppl"
		       : s->feature_map & MD_FEATURE_BITMAP_OFFSET ? "bitmap"
		       : s->feature_map & MD_FEATURE_JOURNAL       ? "journal"
		                                                   : "resync");
	md_uuid_format(s->device_uuid, uuid);
	printf("    Device UUID : %s\n\n", uuid);
	if (s->feature_map & MD_FEATURE_BITMAP_OFFSET) {
		int32_t off;
		memcpy(&off, s->raw + offsetof(struct md_sb1, bitmap_offset), 4);
		printf("Internal Bitmap : %d sectors from superblock\n",
		       (int32_t)md_le32((uint32_t)off));
	} else {
		int32_t poff;
		uint32_t psize;
		if (md_super_ppl(s, &poff, &psize))
			printf(
			    "            PPL : %u sectors at offset %d sectors from superblock\n",
			    psize, poff);
	}
	if (s->feature_map & MD_FEATURE_JOURNAL)
		printf("Consistency Policy : journal\n\n");
	if (s->devflags)
		printf("          Flags :%s%s\n",
		       s->devflags & MD_DEVFLAG_WRITE_MOSTLY ? " write-mostly" : "",
		       s->devflags & MD_DEVFLAG_FAILFAST ? " failfast" : "");
	printf("    Update Time : %s\n", examine_time(s->utime, tb, sizeof(tb)));
	if (want == s->sb_csum)
		printf("       Checksum : %x - correct\n", s->sb_csum);
	else
		printf("       Checksum : %x - expected %x\n", s->sb_csum, want);
	printf("         Events : %llu\n\n", (unsigned long long)s->events);
	if ((s->level == 0 && (s->feature_map & MD_FEATURE_RAID0_LAYOUT)) ||
	    (lv && lv->nlayouts && s->level != 0))
		printf("         Layout : %s\n",
		       md_layout_name(s->level, s->layout, lname, sizeof(lname)));
	if (s->level == 10) {
		uint32_t near = MD_RAID10_NEAR(s->layout), far = MD_RAID10_FAR(s->layout);
		const char *sep = "";
		printf("         Layout :");
		if (near != 1) {
			printf(" near=%u", near);
			sep = ",";
		}
		if (far != 1)
			printf("%s %s=%u", sep, (s->layout & MD_RAID10_OFFSET) ? "offset" : "far",
			       far);
		if (near * far == 1)
			printf("NO REDUNDANCY");
		printf("\n");
	}
	if (lv && lv->chunked)
		printf("     Chunk Size : %uK\n\n", s->chunk / 2);
	else if (s->level == MD_LEVEL_LINEAR)
		printf("       Rounding : %uK\n\n", s->chunk / 2);
	else
		printf("\n");
	role = md_super_role(s);
	if (role >= MD_ROLE_FAULTY)
		printf("   Device Role : spare\n");
	else if (role == MD_ROLE_JOURNAL)
		printf("   Device Role : Journal\n");
	else if (md_super_replacement(s))
		printf("   Device Role : Replacement device %u\n", role);
	else
		printf("   Device Role : Active device %u\n", role);
	printf("   Array State : ");
	for (uint32_t d = 0; d < s->raid_disks && d < MD_ROLE_MAX; d++) {
		unsigned cnt = 0;
		for (uint32_t i = 0; i < s->max_dev && i < MD_SB_MAX_DEV; i++)
			cnt += s->roles[i] == d;
		putchar(cnt == 1 ? 'A' : cnt == 0 ? '.' : (cnt == 2 && s->level > 0) ? 'R' : '?');
	}
	printf(" ('A' == active, '.' == missing, 'R' == replacing)\n");
}

/* A 0.90 superblock, as mdadm's examine_super0 shows it. */
static void examine_print_090(const char *name, const struct md_super *s)
{
	char uuid[36], hb[64], tb[64], lname[32];
	const struct md_level_info *lv = md_level_info(s->level);
	uint32_t want = md_sb090_csum(s->raw), st;
	uint64_t data_disks = 0;
#define W(f) md_sb090_word(s, offsetof(struct md_sb090, f) / 4)

	printf("%s:\n", name);
	printf("          Magic : %08x%s\n", MD_SB_MAGIC,
	       md_sb090_big_endian(s) ? " (big-endian)" : "");
	printf("        Version : %u.%02u.%02u\n", W(major_version), W(minor_version),
	       W(patch_version));
	md_uuid_format(s->set_uuid, uuid);
	printf("           UUID : %s\n", uuid);
	printf("  Creation Time : %s\n", examine_time(s->ctime, tb, sizeof(tb)));
	printf("     Raid Level : %s\n", lv ? lv->name : "-unknown-");
	printf("  Used Dev Size : %llu%s\n", (unsigned long long)s->size / 2,
	       examine_human(s->size * 512, hb, sizeof(hb)));
	if (s->level == 1)
		data_disks = 1;
	else if (md_level_parity(s->level))
		data_disks = s->raid_disks - md_level_parity(s->level);
	else if (s->level == 10 && MD_RAID10_NEAR(s->layout) && MD_RAID10_FAR(s->layout))
		data_disks = s->raid_disks / (MD_RAID10_NEAR(s->layout) * MD_RAID10_FAR(s->layout));
	if (data_disks)
		printf("     Array Size : %llu%s\n", (unsigned long long)(s->size / 2 * data_disks),
		       examine_human(s->size * 512 * data_disks, hb, sizeof(hb)));
	printf("   Raid Devices : %u\n", s->raid_disks);
	printf("  Total Devices : %u\n", W(nr_disks));
	printf("Preferred Minor : %u\n\n", md_sb090_preferred_minor(s));
	printf("    Update Time : %s\n", examine_time(s->utime, tb, sizeof(tb)));
	st = W(state);
	printf("          State : %s%s\n", st & MD_SB090_CLEAN ? "clean" : "active",
	       st & MD_SB090_ERRORS ? ", errors" : "");
	if (st & MD_SB090_BITMAP_PRESENT)
		printf("Internal Bitmap : present\n");
	printf(" Active Devices : %u\n", W(active_disks));
	printf("Working Devices : %u\n", W(working_disks));
	printf(" Failed Devices : %u\n", W(failed_disks));
	printf("  Spare Devices : %u\n", W(spare_disks));
	if (want == s->sb_csum)
		printf("       Checksum : %x - correct\n", s->sb_csum);
	else
		printf("       Checksum : %x - expected %x\n", s->sb_csum, want);
	printf("         Events : %llu\n\n", (unsigned long long)s->events);
	if (lv && lv->nlayouts && s->level != 0)
		printf("         Layout : %s\n",
		       md_layout_name(s->level, s->layout, lname, sizeof(lname)));
	if (lv && lv->chunked)
		printf("     Chunk Size : %uK\n", s->chunk / 2);
	printf("\n      Number   Major   Minor   RaidDevice State\n");
	for (unsigned i = 0; i <= MD_SB090_DISKS; i++) {
		/* this_disk first, then every descriptor in use */
		unsigned d = i == 0 ? MD_SB090_DISKS : i - 1;
		unsigned base = (offsetof(struct md_sb090, disks) / 4) + 32 * d;
		uint32_t num = md_sb090_word(s, base), maj = md_sb090_word(s, base + 1);
		uint32_t mnr = md_sb090_word(s, base + 2), rd = md_sb090_word(s, base + 3);
		uint32_t ds = md_sb090_word(s, base + 4);
		char idx[12] = "this";
		if (i > 0 && !ds && !num && !maj && !mnr && !rd)
			continue;
		if (i > 0)
			snprintf(idx, sizeof(idx), "%u", d);
		printf("%4s %5u %7u %7u %8u      %s%s%s%s%s%s\n", idx, num, maj, mnr, rd,
		       ds & MD_SB090_DISK_FAULTY ? "faulty " : "",
		       ds & MD_SB090_DISK_ACTIVE ? "active " : "",
		       ds & MD_SB090_DISK_SYNC ? "sync " : "",
		       ds & MD_SB090_DISK_REMOVED ? "removed " : "",
		       ds & MD_SB090_DISK_WRITEMOSTLY ? "write-mostly " : "",
		       ds & (MD_SB090_DISK_FAULTY | MD_SB090_DISK_ACTIVE | MD_SB090_DISK_SYNC |
		             MD_SB090_DISK_REMOVED)
		           ? ""
		           : "spare");
		if (i == 0)
			printf("\n");
	}
#undef W
}

/* The internal write-intent bitmap in brief, as `mdadm -X` shows it:
 * chunk size, events, events cleared, dirty chunks.  Informational: a
 * damaged bitmap is described, never an error of examine. */
static void examine_bitmap(struct vol *m, const struct md_super *s)
{
	uint64_t at, end, chunks, dirty = 0;
	struct md_bitmap_info b;
	uint8_t *buf = NULL, uuid[16];
	char hb[64];
	int r = md_super_bitmap_area(s, m->size, &at, &end);

	if (r == -ENOENT)
		return;
	md_super_bitmap_uuid(s, uuid);
	if (r < 0 || end <= at + MD_BITMAP_HDR || end > m->size) {
		printf("\n  Bitmap Status : not examined (at byte %lld)\n", (long long)at);
		return;
	}
	if (!(buf = vol_buf_alloc(end - at)) || vol_read(m, buf, end - at, at) < 0) {
		printf("\n  Bitmap Status : unreadable\n");
		free(buf);
		return;
	}
	err_clear();
	if (md_bitmap_decode(buf, &b, "bitmap") < 0 || md_bitmap_check(&b, uuid, "bitmap")) {
		printf("\n  Bitmap Status : %s\n", err_detail(-EINVAL));
		free(buf);
		return;
	}
	chunks = (b.sync_size * 512 + b.chunksize - 1) / b.chunksize;
	if (md_bitmap_bytes(chunks) > end - at)
		chunks = (end - at - MD_BITMAP_HDR) * 8;
	for (uint64_t c = 0; c < chunks; c++)
		dirty += (buf[MD_BITMAP_HDR + c / 8] >> (c % 8)) & 1;
	printf("\n   Bitmap Chunk : %u KiB\n", b.chunksize / 1024);
	if (b.write_behind)
		printf("     Write Mode : Allow write behind, max %u\n", b.write_behind);
	printf("  Bitmap Events : %llu\n", (unsigned long long)b.events);
	printf(" Bitmap Cleared : %llu\n", (unsigned long long)b.events_cleared);
	printf("Bitmap Sync Size : %llu sectors%s\n", (unsigned long long)b.sync_size,
	       examine_human(b.sync_size * 512, hb, sizeof(hb)));
	printf("  Bitmap Status : %llu of %llu chunks dirty, %s\n", (unsigned long long)dirty,
	       (unsigned long long)chunks,
	       b.state & MD_BITMAP_STALE ? "stale"
	       : b.events < s->events    ? "out of date (events behind the superblock's)"
	                                 : "up to date");
	free(buf);
}

static int examine_one(const char *spec)
{
	struct vol *m = NULL;
	struct md_super *s = NULL;
	int r;

	err_clear();
	r = member_open(spec, MEMBER_READONLY, &m);
	if (r < 0)
		return cli_fail("examine", r);
	s = malloc(sizeof(*s));
	if (!s) {
		r = cli_fail("examine", -ENOMEM);
		goto out;
	}
	r = md_super_read_raw(m, s);
	if (r == -ENOSPC) {
		fprintf(stderr,
		        "uraid: examine: %s: no md superblock (member is too small to hold one)\n",
		        spec);
		r = 1;
		goto out;
	}
	if (r == -ENOENT) {
		fprintf(stderr, "uraid: examine: %s: no md superblock detected\n", spec);
		r = 1;
		goto out;
	}
	if (r < 0) {
		fprintf(stderr, "uraid: examine: %s: read failed: %s\n", spec, strerror(-r));
		r = 1;
		goto out;
	}
	if (md_sb090_is(s))
		examine_print_090(spec, s);
	else
		examine_print(spec, s);
	examine_bitmap(m, s);
	err_clear();
	r = md_super_check(s, m->size, spec);
	if (r < 0) {
		fprintf(stderr, "uraid: examine: %s: superblock is not usable: %s\n", spec,
		        err_detail(r));
		r = 1;
	}
out:
	free(s);
	vol_close(m);
	return r;
}

int cmd_examine(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c, rc = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'h') {
			printf("usage: uraid examine MEMBER...\n"
			       "Print the md superblock (1.2, 1.1, 1.0, 0.90) of each member (as "
			       "mdadm "
			       "--examine).\n"
			       "Members are opened read-only; nothing is written.\n");
			return 0;
		}
		return 2;
	}
	if (optind >= argc) {
		fprintf(stderr, "uraid: examine: no members given\n");
		return 2;
	}
	for (int i = optind; i < argc; i++) {
		if (i > optind)
			printf("\n");
		if (examine_one(argv[i]) != 0)
			rc = 1;
	}
	return rc;
}
