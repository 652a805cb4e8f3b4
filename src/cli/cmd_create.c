/* cmd_create.c — `uraid create`: write md v1.2 superblocks that make a new
 * array of the members, as `mdadm --create --metadata=1.2` would.
 *
 * Nothing is written until every check has passed: member count, level
 * and layout, sizes, and (unless --force) that no member already holds an
 * md superblock, a LUKS header, a filesystem or a partition table
 * (md/probe.c, the list add and grow use too).
 *
 * Consistency: mdadm leaves a new RAID1/10/5/6 "active" and the kernel
 * copies one mirror over the others (or computes parity) in the
 * background.  We make the copies agree before any superblock exists
 * instead, by zeroing every member's data area (a hole punch on files,
 * BLKZEROOUT on devices; zeros are their own parity, P and Q alike), and
 * write the superblocks last, marked clean.  --assume-clean skips the zeroing, as
 * with mdadm.  A crash during create leaves no superblock at all. */
#include "cli.h"

#include "core/log.h"
#include "core/random.h"
#include "core/units.h"
#include "md/md.h"
#include "md/md_bitmap.h"
#include "md/probe.h"
#include "member/member.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct create_opts {
	int level;
	bool level_set;
	unsigned raid_disks;
	uint32_t chunk_kib;
	bool chunk_set;
	uint32_t layout;
	const char *layout_name;
	const char *name;
	bool assume_clean;
	bool force;
	int bitmap;            /* 1 internal, 0 none, -1 not given (mdadm's rule) */
	uint64_t bitmap_chunk; /* bytes; 0: mdadm's choice */
};

/* A chunk size argument as mdadm takes it: a bare number is KiB, else a
 * size with its unit; a power of two from 4 KiB to 1 GiB.  Bytes, or 0
 * after saying why. */
static uint64_t create_chunk_arg(const char *arg, const char *what)
{
	char *end;
	uint64_t bytes;
	unsigned long v = strtoul(arg, &end, 10);

	if (*arg && !*end)
		bytes = (uint64_t)v * 1024;
	else if (parse_size(arg, &bytes) < 0)
		bytes = 0;
	if (bytes < 4096 || (bytes & (bytes - 1)) || bytes > (1ull << 30)) {
		fprintf(stderr, "uraid: create: %s '%s' must be a power of two from 4K to 1G\n",
		        what, arg);
		return 0;
	}
	return bytes;
}

static int create_parse(int argc, char **argv, struct create_opts *o)
{
	static const struct option opts[] = {
	    {"level", required_argument, NULL, 'l'},
	    {"raid-devices", required_argument, NULL, 'n'},
	    {"chunk", required_argument, NULL, 'c'},
	    {"name", required_argument, NULL, 'N'},
	    {"layout", required_argument, NULL, 'p'},
	    {"assume-clean", no_argument, NULL, 'A'},
	    {"force", no_argument, NULL, 'f'},
	    {"bitmap", required_argument, NULL, 'b'},
	    {"bitmap-chunk", required_argument, NULL, 'B'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;

	optind = 1;
	o->bitmap = -1;
	while ((c = getopt_long(argc, argv, "l:n:c:N:p:fb:h", opts, NULL)) != -1) {
		switch (c) {
		case 'l':
			if (md_level_parse(optarg, &o->level) < 0) {
				fprintf(
				    stderr,
				    "uraid: create: level '%s' is not one of 0, 1, 10, 5, 6, linear\n",
				    optarg);
				return 2;
			}
			err_clear();
			if (md_level_served(o->level, "uraid: create") < 0) {
				fprintf(stderr, "%s\n", err_detail(-ENOTSUP));
				return 2;
			}
			o->level_set = true;
			break;
		case 'n': {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);
			if (!*optarg || *end || v < 1 || v > 256) {
				fprintf(stderr, "uraid: create: bad --raid-devices '%s'\n", optarg);
				return 2;
			}
			o->raid_disks = (unsigned)v;
			break;
		}
		case 'c': {
			uint64_t bytes = create_chunk_arg(optarg, "chunk");
			if (!bytes)
				return 2;
			o->chunk_kib = (uint32_t)(bytes / 1024);
			o->chunk_set = true;
			break;
		}
		case 'N':
			o->name = optarg;
			break;
		case 'p':
			o->layout_name = optarg;
			break;
		case 'A':
			o->assume_clean = true;
			break;
		case 'f':
			o->force = true;
			break;
		case 'b':
			if (strcmp(optarg, "internal") && strcmp(optarg, "none")) {
				fprintf(stderr,
				        "uraid: create: --bitmap is 'internal' or 'none' (no bitmap "
				        "files)\n");
				return 2;
			}
			o->bitmap = strcmp(optarg, "internal") == 0;
			break;
		case 'B': {
			uint64_t bytes = create_chunk_arg(optarg, "bitmap chunk");
			if (!bytes)
				return 2;
			o->bitmap_chunk = bytes;
			break;
		}
		case 'h':
			printf(
			    "usage: uraid create --level=0|1|10|5|6|linear [--raid-devices=N] "
			    "[--chunk=SIZE]\n"
			    "                    [--layout=n2|f2|o2|left-symmetric|...] [--name=NAME] "
			    "[--assume-clean]\n"
			    "                    [--bitmap=internal|none] [--bitmap-chunk=SIZE] "
			    "[--force] MEMBER...\n"
			    "Write md v1.2 superblocks (as mdadm --create) making a new array.\n"
			    "MEMBER may be 'missing' for a degraded RAID1/10/5/6.  --chunk is in KiB\n"
			    "unless a suffix is given (default 512K).  Without --assume-clean the\n"
			    "data areas of RAID1/10/5/6 members are zeroed so that mirrors agree\n"
			    "and parity matches (zeros are their own parity).\n"
			    "--bitmap=internal keeps an md write-intent bitmap (so that a crash costs\n"
			    "a resync of the chunks being written only); as with mdadm it is the\n"
			    "default for RAID1/10/5/6 arrays above 100 GiB.  --bitmap-chunk is in KiB\n"
			    "(default: mdadm's, at least 64M).\n");
			return 1;
		default:
			return 2;
		}
	}
	if (!o->level_set) {
		fprintf(stderr, "uraid: create: --level is required\n");
		return 2;
	}
	if (o->level == 1 || o->level == MD_LEVEL_LINEAR) {
		if (o->chunk_set && o->level == 1) {
			fprintf(stderr, "uraid: create: --chunk makes no sense for raid1\n");
			return 2;
		}
		if (!o->chunk_set)
			o->chunk_kib = 0;
	} else if (!o->chunk_set)
		o->chunk_kib = 512;
	if (o->level == 10) {
		const char *name =
		    o->layout_name ? o->layout_name : md_level_info(10)->default_layout;
		if (md_layout_parse(10, name, &o->layout) < 0) {
			fprintf(stderr,
			        "uraid: create: raid10 layout '%s' is not n<copies>, f<copies> or "
			        "o<copies>\n",
			        o->layout_name);
			return 2;
		}
	} else if (o->level == 5 || o->level == 6) {
		const char *name =
		    o->layout_name ? o->layout_name : md_level_info(o->level)->default_layout;
		if (md_layout_parse(o->level, name, &o->layout) < 0) {
			fprintf(stderr, "uraid: create: '%s' is not a raid%d layout mdadm knows\n",
			        name, o->level);
			return 2;
		}
	} else if (o->layout_name) {
		fprintf(stderr, "uraid: create: --layout is only supported for raid10, 5 and 6\n");
		return 2;
	} else if (o->level == 0)
		o->layout = MD_RAID0_ORIG_LAYOUT;
	if (o->bitmap == 1 && !md_level_redundant(o->level)) {
		fprintf(stderr, "uraid: create: a write-intent bitmap needs raid1, 10, 5 or 6\n");
		return 2;
	}
	if (o->bitmap_chunk && o->bitmap == 0) {
		fprintf(stderr, "uraid: create: --bitmap-chunk with --bitmap=none\n");
		return 2;
	}
	if (o->bitmap_chunk && o->bitmap == -1)
		o->bitmap = 1;
	return 0;
}

/* The array bytes of a new array whose members each use size sectors (as
 * the kernel sizes it). */
static uint64_t create_array_bytes(const struct create_opts *o, unsigned n, uint64_t size)
{
	uint64_t chunk = (uint64_t)o->chunk_kib * 2;

	switch (o->level) {
	case 1:
		return size * 512;
	case 5:
	case 6:
		return size * (n - md_level_parity(o->level)) * 512;
	case 10:
		return size / chunk / MD_RAID10_FAR(o->layout) * n / MD_RAID10_NEAR(o->layout) *
		       chunk * 512;
	default:
		return 0;
	}
}

/* mdadm's array name: "host:name" when it fits, else the name alone. */
static void create_set_name(const char *name, char out[33])
{
	char host[65] = "";

	if (!name)
		name = "uraid";
	gethostname(host, sizeof(host) - 1);
	memset(out, 0, 33);
	if (!strchr(name, ':') && host[0] && strlen(host) + 1 + strlen(name) < 32) {
		strcpy(out, host);
		strcat(out, ":");
		strcat(out, name);
	} else
		strncpy(out, name, 31);
}

int cmd_create(int argc, char **argv)
{
	struct create_opts o = {0};
	struct vol **m = NULL;
	struct md_super *sb = NULL;
	char **specs;
	unsigned n, missing = 0, i;
	uint64_t min_sectors = UINT64_MAX, data_offset, min_avail = UINT64_MAX;
	uint8_t set_uuid[16], *bm_block = NULL;
	int rc, r;

	rc = create_parse(argc, argv, &o);
	if (rc)
		return rc == 1 ? 0 : rc;
	specs = argv + optind;
	n = (unsigned)(argc - optind);
	if (n == 0) {
		fprintf(stderr, "uraid: create: no members given\n");
		return 2;
	}
	if (o.raid_disks && o.raid_disks != n) {
		fprintf(stderr,
		        "uraid: create: --raid-devices=%u but %u members given (spares are not "
		        "supported)\n",
		        o.raid_disks, n);
		return 2;
	}
	for (i = 0; i < n; i++) {
		missing += strcmp(specs[i], "missing") == 0;
		for (unsigned j = 0; j < i; j++)
			if (strcmp(specs[i], "missing") && strcmp(specs[i], specs[j]) == 0) {
				fprintf(stderr, "uraid: create: %s is given twice\n", specs[i]);
				return 2;
			}
	}
	if (missing && !md_level_redundant(o.level)) {
		fprintf(stderr,
		        "uraid: create: 'missing' members need a redundant level (1, 10, 5 or 6)\n");
		return 2;
	}
	if (n < md_level_info(o.level)->min_disks) {
		fprintf(stderr, "uraid: create: %s needs at least %u members\n",
		        md_level_name(o.level), md_level_info(o.level)->min_disks);
		return 2;
	}
	if (md_level_parity(o.level) && missing > md_level_parity(o.level)) {
		fprintf(stderr, "uraid: create: %s can miss at most %u member%s\n",
		        md_level_name(o.level), md_level_parity(o.level),
		        md_level_parity(o.level) > 1 ? "s" : "");
		return 2;
	}
	if (missing == n) {
		fprintf(stderr, "uraid: create: every member is 'missing'\n");
		return 2;
	}
	if (o.level == 10) {
		unsigned copies = MD_RAID10_NEAR(o.layout) * MD_RAID10_FAR(o.layout);
		if (copies < 2 || copies > n) {
			fprintf(stderr,
			        "uraid: create: raid10 layout %s needs %u to %u copies over %u "
			        "members\n",
			        o.layout_name ? o.layout_name : "n2", 2, n, n);
			return 2;
		}
		/* Fewer missing members than copies always leaves every
		 * chunk one copy, whatever the layout. */
		if (missing >= copies) {
			fprintf(stderr,
			        "uraid: create: %u missing members would lose data in a %u-copy "
			        "raid10\n",
			        missing, copies);
			return 2;
		}
	}

	m = calloc(n, sizeof(*m));
	sb = calloc(1, sizeof(*sb));
	if (!m || !sb) {
		rc = cli_fail("create", -ENOMEM);
		goto out;
	}
	for (i = 0; i < n; i++) {
		if (strcmp(specs[i], "missing") == 0)
			continue;
		err_clear();
		r = member_open(specs[i], 0, &m[i]);
		if (r < 0) {
			rc = cli_fail("create", r);
			goto out;
		}
		if (m[i]->size / 512 < min_sectors)
			min_sectors = m[i]->size / 512;
		if (!o.force) {
			err_clear();
			r = probe_member_refuse(m[i], specs[i]);
			if (r < 0) {
				rc = cli_fail("create", r);
				goto out;
			}
		}
	}

	data_offset = md_default_data_offset(min_sectors, o.chunk_kib);
	for (i = 0; i < n; i++) {
		uint64_t s = m[i] ? m[i]->size / 512 : 0;
		if (!m[i])
			continue;
		if (s <= data_offset + (o.chunk_kib ? o.chunk_kib * 2 : 128)) {
			fprintf(
			    stderr,
			    "uraid: create: %s is too small (%llu sectors; data starts at %llu)\n",
			    specs[i], (unsigned long long)s, (unsigned long long)data_offset);
			rc = 1;
			goto out;
		}
		if (s - data_offset < min_avail)
			min_avail = s - data_offset;
	}

	memset(sb, 0, sizeof(*sb));
	if (random_fill(set_uuid, 16) < 0) {
		rc = cli_fail("create", -EIO);
		goto out;
	}
	memcpy(sb->set_uuid, set_uuid, 16);
	create_set_name(o.name, sb->set_name);
	sb->ctime = sb->utime = (uint64_t)time(NULL);
	sb->level = o.level;
	sb->layout = o.layout;
	sb->chunk = o.chunk_kib * 2;
	sb->raid_disks = n;
	/* Used size per member: raid1 rounds to 64K (as mdadm, for a later
	 * reshape), raid10 to the chunk; raid0 and linear record 0 and use
	 * each member's whole data area. */
	if (o.level == 1)
		sb->size = min_avail & ~127ull;
	else if (o.level == 10 || o.level == 5 || o.level == 6)
		sb->size = min_avail / sb->chunk * sb->chunk;
	sb->data_offset = data_offset;
	sb->super_offset = MD_SB_SECTOR;
	sb->events = 0;
	sb->resync_offset = MD_MAX_SECTOR;
	sb->max_dev = (((256 + 2 * n) + 511) / 512 * 512 - 256) / 2;
	for (i = 0; i < MD_SB_MAX_DEV; i++)
		sb->roles[i] = MD_ROLE_SPARE;
	for (i = 0; i < n; i++)
		if (m[i])
			sb->roles[i] = (uint16_t)i;
	if (o.level == 0) {
		/* Members of different sizes make a multi-zone raid0, which
		 * kernels since 5.4 only assemble with an explicit layout. */
		for (i = 0; i < n; i++)
			if (m[i] &&
			    (m[i]->size / 512 - data_offset) / sb->chunk != min_avail / sb->chunk)
				sb->feature_map |= MD_FEATURE_RAID0_LAYOUT;
	}

	/* The write-intent bitmap: 4 KiB after the superblock (bitmap_offset
	 * 8), in the room mdadm keeps for it, all clear (the array starts
	 * clean), events matching the superblock's. */
	uint64_t bm_room = 0;
	if (sb->size >= 128)
		bm_room = sb->size - 128 >= 200ull * 1024 * 1024 * 2 ? 256
		          : sb->size - 8 > 8ull * 1024 * 1024 * 2    ? 128
		                                                     : 8;
	struct md_bitmap_info bmi = {0};
	if (o.bitmap == -1)
		o.bitmap = md_level_redundant(o.level) &&
		           create_array_bytes(&o, n, sb->size) > (100ull << 30);
	if (o.bitmap == 1) {
		struct md_bitmap_geom g;
		uint64_t index;
		if (!bm_room || data_offset < MD_SB_SECTOR + 8 + bm_room ||
		    md_bitmap_geom_init(&g, o.level, n, sb->chunk, sb->size,
		                        create_array_bytes(&o, n, sb->size)) < 0) {
			fprintf(stderr, "uraid: create: no room for a write-intent bitmap\n");
			rc = 1;
			goto out;
		}
		index = md_bitmap_index_size(&g);
		uint64_t chunk = md_bitmap_pick_chunk(index, bm_room * 512, o.bitmap_chunk);
		if (!chunk) {
			fprintf(stderr,
			        "uraid: create: a bitmap chunk of %llu bytes needs more bits than "
			        "the %llu bytes of bitmap room hold; take a larger one\n",
			        (unsigned long long)o.bitmap_chunk,
			        (unsigned long long)bm_room * 512);
			rc = 1;
			goto out;
		}
		bmi.version = MD_BITMAP_V;
		memcpy(bmi.uuid, set_uuid, 16);
		bmi.sync_size = index / 512;
		bmi.chunksize = (uint32_t)chunk;
		bmi.daemon_sleep = MD_BITMAP_DEFAULT_SLEEP;
		bmi.sectors_reserved = (uint32_t)bm_room;
		if (!(bm_block = vol_buf_alloc(4096))) {
			rc = cli_fail("create", -ENOMEM);
			goto out;
		}
		memset(bm_block, 0, 4096);
		md_bitmap_encode(&bmi, bm_block);
		sb->feature_map |= MD_FEATURE_BITMAP_OFFSET;
	}

	/* Data first: wipe any old superblock (with --force) and the space up
	 * to the data (old bitmaps, bad-block logs), zero the mirrors so they
	 * agree; the new superblocks come last. */
	for (i = 0; i < n; i++) {
		if (!m[i])
			continue;
		err_clear();
		r = vol_write_zeroes(m[i], data_offset * 512 - MD_SB_OFFSET, MD_SB_OFFSET,
		                     VOL_MAY_TRIM);
		if (r == 0 && md_level_redundant(o.level) &&
		    !o.assume_clean)
			r = vol_write_zeroes(m[i], m[i]->size - data_offset * 512,
			                     data_offset * 512, VOL_MAY_TRIM);
		if (r == 0 && bm_block)
			r = vol_write(m[i], bm_block, 4096, (MD_SB_SECTOR + 8) * 512, 0);
		if (r == 0)
			r = vol_flush(m[i]);
		if (r < 0) {
			fprintf(stderr, "uraid: create: %s: zeroing failed: %s\n", specs[i],
			        strerror(-r));
			rc = 1;
			goto out;
		}
	}
	for (i = 0; i < n; i++) {
		uint64_t s, bm;
		if (!m[i])
			continue;
		s = m[i]->size / 512;
		sb->dev_number = i;
		sb->data_size = s - data_offset;
		if (random_fill(sb->device_uuid, 16) < 0) {
			rc = cli_fail("create", -EIO);
			goto out;
		}
		/* mdadm's bad-block log: 4 KiB after the bitmap room. */
		memset(sb->raw, 0, sizeof(sb->raw));
		bm = 0;
		if (sb->size >= 128)
			bm = sb->size - 128 >= 200ull * 1024 * 1024 * 2 ? 256
			     : sb->size - 8 > 8ull * 1024 * 1024 * 2    ? 128
			                                                : 8;
		if (data_offset >= MD_SB_SECTOR + 8 + bm + 8) {
			struct md_sb1 *raw = (struct md_sb1 *)sb->raw;
			raw->bblog_size = htole16(8);
			raw->bblog_offset = htole32((uint32_t)(8 + bm));
		}
		if (bm_block)
			((struct md_sb1 *)sb->raw)->bitmap_offset = htole32(8);
		err_clear();
		r = md_super_write(m[i], sb);
		if (r < 0) {
			rc = cli_fail("create", r);
			goto out;
		}
	}
	{
		char uuid[36];
		md_uuid_format(set_uuid, uuid);
		printf("uraid: created %s array %s (%s) on %u members%s", md_level_name(o.level),
		       sb->set_name, uuid, n, missing ? ", degraded" : "");
		if (bm_block)
			printf(", internal bitmap of %u KiB chunks", bmi.chunksize / 1024);
		printf("\n");
	}
	rc = 0;
out:
	if (m)
		for (i = 0; i < n; i++)
			vol_close(m[i]);
	free(m);
	free(sb);
	free(bm_block);
	return rc;
}
