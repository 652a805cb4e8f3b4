/* cmd_create.c — `uraid create`: parse, check the member count against the
 * level, md_create() (md/md_create.c: the superblocks, the zeroing, the
 * checks before any write), print what was made. */
#include "cli.h"

#include "core/log.h"
#include "core/units.h"
#include "md/md.h"
#include "md/md_bitmap.h"
#include "md/md_create.h"
#include "stack/stack.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* What md_create takes, and what the command checks before. */
struct create_opts {
	struct md_create_opts md;
	bool level_set;
	unsigned raid_disks;
	bool chunk_set;
	const char *layout_name;
	/* The members in order, each with the device flags (--write-mostly,
	 * --failfast) given before it, as mdadm applies them. */
	char **specs;
	uint8_t *devflags;
	unsigned n;
};

/* A chunk size argument as mdadm takes it: a bare number is KiB, else a
 * size with its unit; a power of two from 4 KiB to 1 GiB.  Bytes, or 0
 * after saying why. */
static uint64_t create_chunk_arg(const char *arg, const char *what)
{
	uint64_t bytes;

	if (parse_size_kib(arg, &bytes) < 0)
		bytes = 0;
	if (bytes < 4096 || (bytes & (bytes - 1)) || bytes > (1ull << 30)) {
		fprintf(stderr, "uraid: create: %s '%s' must be a power of two from 4K to 1G\n",
		        what, arg);
		return 0;
	}
	return bytes;
}

/* mdadm's --consistency-policy words: resync and bitmap are what
 * --bitmap says, ppl md's partial parity log (RAID5, no bitmap beside). */
static int create_policy(const char *policy, struct create_opts *o)
{
	if (!policy)
		return 0;
	if (strcmp(policy, "resync") == 0 || strcmp(policy, "bitmap") == 0) {
		int want = strcmp(policy, "bitmap") == 0;
		if (o->md.bitmap != -1 && o->md.bitmap != want) {
			fprintf(stderr,
			        "uraid: create: --consistency-policy=%s contradicts --bitmap\n",
			        policy);
			return 2;
		}
		if (want && !md_level_redundant(o->md.level)) {
			fprintf(
			    stderr,
			    "uraid: create: a write-intent bitmap needs raid1, 10, 4, 5 or 6\n");
			return 2;
		}
		o->md.bitmap = want;
		return 0;
	}
	if (strcmp(policy, "journal") == 0) {
		if (o->md.journal)
			return 0;
		fprintf(stderr,
		        "uraid: create: --consistency-policy=journal needs --write-journal\n");
		return 2;
	}
	if (strcmp(policy, "ppl") != 0) {
		fprintf(
		    stderr,
		    "uraid: create: --consistency-policy is resync, bitmap, ppl or journal, not "
		    "'%s'\n",
		    policy);
		return 2;
	}
	if (o->md.level != 5) {
		fprintf(stderr, "uraid: create: --consistency-policy=ppl needs raid5 (as md's)\n");
		return 2;
	}
	if (o->md.bitmap == 1) {
		fprintf(stderr, "uraid: create: a PPL and a write-intent bitmap cannot go together "
		                "(md refuses both)\n");
		return 2;
	}
	o->md.bitmap = 0;
	o->md.ppl = true;
	return 0;
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
	    {"metadata", required_argument, NULL, 'e'},
	    {"consistency-policy", required_argument, NULL, 'k'},
	    {"write-journal", required_argument, NULL, 'J'},
	    {"write-mostly", no_argument, NULL, 'W'},
	    {"failfast", no_argument, NULL, 'F'},
	    {"write-behind", optional_argument, NULL, 'H'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *policy = NULL;
	uint8_t flags = 0;
	int c;

	optind = 1;
	o->md.bitmap = -1;
	o->specs = calloc((size_t)argc + 1, sizeof(*o->specs));
	o->devflags = calloc((size_t)argc + 1, 1);
	if (!o->specs || !o->devflags) {
		fprintf(stderr, "uraid: create: out of memory\n");
		return 2;
	}
	/* "-": members come back in order (code 1), so that a flag applies
	 * to the members after it. */
	while ((c = getopt_long(argc, argv, "-l:n:c:N:p:fb:e:h", opts, NULL)) != -1) {
		switch (c) {
		case 1:
			o->devflags[o->n] = flags;
			o->specs[o->n++] = optarg;
			break;
		case 'W':
			flags |= MD_DEVFLAG_WRITE_MOSTLY;
			break;
		case 'F':
			flags |= MD_DEVFLAG_FAILFAST;
			break;
		case 'H': {
			char *end;
			unsigned long v =
			    optarg ? strtoul(optarg, &end, 10) : MD_BITMAP_WRITE_BEHIND_DEFAULT;
			if (optarg &&
			    (!*optarg || *end || v < 1 || v > MD_BITMAP_WRITE_BEHIND_MAX)) {
				fprintf(
				    stderr,
				    "uraid: create: --write-behind is 1 to %u writes, not '%s'\n",
				    MD_BITMAP_WRITE_BEHIND_MAX, optarg);
				return 2;
			}
			o->md.write_behind = (uint32_t)v;
			break;
		}
		case 'l':
			if (md_level_parse(optarg, &o->md.level) < 0) {
				fprintf(
				    stderr,
				    "uraid: create: level '%s' is not one of 0, 1, 10, 4, 5, 6, "
				    "linear\n",
				    optarg);
				return 2;
			}
			err_clear();
			if (md_level_served(o->md.level, "uraid: create") < 0) {
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
			o->md.chunk_kib = (uint32_t)(bytes / 1024);
			o->chunk_set = true;
			break;
		}
		case 'N':
			o->md.name = optarg;
			break;
		case 'p':
			o->layout_name = optarg;
			break;
		case 'A':
			o->md.assume_clean = true;
			break;
		case 'f':
			o->md.force = true;
			break;
		case 'b':
			if (strcmp(optarg, "internal") && strcmp(optarg, "none")) {
				fprintf(
				    stderr,
				    "uraid: create: --bitmap is 'internal' or 'none' (no bitmap "
				    "files)\n");
				return 2;
			}
			o->md.bitmap = strcmp(optarg, "internal") == 0;
			break;
		case 'B': {
			uint64_t bytes = create_chunk_arg(optarg, "bitmap chunk");
			if (!bytes)
				return 2;
			o->md.bitmap_chunk = bytes;
			break;
		}
		case 'e':
			o->md.version = md_sb_version_find(optarg);
			if (!o->md.version || strncmp(o->md.version->name, "1.", 2) != 0) {
				fprintf(stderr,
				        "uraid: create: --metadata is 1.0, 1.1 or 1.2 (the "
				        "default), not '%s'\n",
				        optarg);
				return 2;
			}
			break;
		case 'k':
			policy = optarg;
			break;
		case 'J':
			o->md.journal = optarg;
			break;
		case 'h':
			printf(
			    "usage: uraid create --level=0|1|10|4|5|6|linear [--raid-devices=N] "
			    "[--chunk=SIZE]\n"
			    "                    [--layout=n2|f2|o2|left-symmetric|...] "
			    "[--name=NAME] "
			    "[--assume-clean]\n"
			    "                    [--bitmap=internal|none] [--bitmap-chunk=SIZE] "
			    "[--metadata=1.0|1.1|1.2]\n"
			    "                    [--consistency-policy=resync|bitmap|ppl|journal]\n"
			    "                    [--write-journal=DEV] [--force] [--write-mostly] "
			    "[--failfast]\n"
			    "                    [--write-behind[=N]] MEMBER...\n"
			    "Write md v1.x superblocks (as mdadm --create; 1.2 unless --metadata\n"
			    "says 1.1, at the start, or 1.0, at the end) making a new array.\n"
			    "MEMBER may be 'missing' for a degraded RAID1/10/5/6.  --chunk is in "
			    "KiB\n"
			    "unless a suffix is given (default 512K).  Without --assume-clean the\n"
			    "data areas of RAID1/10/5/6 members are zeroed so that mirrors agree\n"
			    "and parity matches (zeros are their own parity).\n"
			    "--bitmap=internal keeps an md write-intent bitmap (so that a crash "
			    "costs\n"
			    "a resync of the chunks being written only); as with mdadm it is the\n"
			    "default for RAID1/10/5/6 arrays above 100 GiB.  --bitmap-chunk is in "
			    "KiB\n"
			    "(default: mdadm's, at least 64M).\n"
			    "--consistency-policy=ppl (RAID5) keeps md's partial parity log: a "
			    "crash\n"
			    "costs no resync and cannot tear a stripe (md's write hole); 'resync' "
			    "is\n"
			    "--bitmap=none, 'bitmap' --bitmap=internal.\n"
			    "--write-journal=DEV makes DEV the raid4/5/6's write journal (md's\n"
			    "raid5-cache, role 0xfffd): every stripe update is logged on it "
			    "before\n"
			    "the members are written, closing the write hole; no bitmap with "
			    "it.\n"
			    "--write-mostly and --failfast flag the members listed after them "
			    "(md's\n"
			    "device flags, which the kernel honours too): reads keep off a\n"
			    "write-mostly mirror while another copy is in sync; failfast is "
			    "recorded\n"
			    "for the kernel (uraid fails a member on its first error anyway).\n"
			    "--write-behind[=N] (raid1, with a bitmap; N default 256): up to N "
			    "writes\n"
			    "to write-mostly members are acknowledged once the other mirrors have "
			    "them\n"
			    "(md's write-behind, kept in the bitmap so the kernel does it too); a "
			    "flush\n"
			    "waits for them.  Until they land only the other mirrors hold those "
			    "writes.\n");
			return 1;
		default:
			return 2;
		}
	}
	for (; optind < argc; optind++) { /* after "--" */
		o->devflags[o->n] = flags;
		o->specs[o->n++] = argv[optind];
	}
	if (!o->level_set) {
		fprintf(stderr, "uraid: create: --level is required\n");
		return 2;
	}
	if (o->chunk_set && o->md.level == 1) {
		fprintf(stderr, "uraid: create: --chunk makes no sense for raid1\n");
		return 2;
	}
	/* The level's defaults (md_create_defaults: one place for them); a
	 * --layout given is parsed with a message naming the level's words. */
	struct md_create_opts d;
	md_create_defaults(o->md.level, &d);
	if (!o->chunk_set)
		o->md.chunk_kib = d.chunk_kib;
	o->md.layout = d.layout;
	if (o->layout_name && o->md.level == 10) {
		if (md_layout_parse(10, o->layout_name, &o->md.layout) < 0) {
			fprintf(stderr,
			        "uraid: create: raid10 layout '%s' is not n<copies>, f<copies> or "
			        "o<copies>\n",
			        o->layout_name);
			return 2;
		}
	} else if (o->layout_name && (o->md.level == 5 || o->md.level == 6)) {
		if (md_layout_parse(o->md.level, o->layout_name, &o->md.layout) < 0) {
			fprintf(stderr, "uraid: create: '%s' is not a raid%d layout mdadm knows\n",
			        o->layout_name, o->md.level);
			return 2;
		}
	} else if (o->layout_name) {
		fprintf(stderr, "uraid: create: --layout is only supported for raid10, 5 and 6\n");
		return 2;
	}
	if (o->md.bitmap == 1 && !md_level_redundant(o->md.level)) {
		fprintf(stderr,
		        "uraid: create: a write-intent bitmap needs raid1, 10, 4, 5 or 6\n");
		return 2;
	}
	if (o->md.bitmap_chunk && o->md.bitmap == 0) {
		fprintf(stderr, "uraid: create: --bitmap-chunk with --bitmap=none\n");
		return 2;
	}
	if (o->md.bitmap_chunk && o->md.bitmap == -1)
		o->md.bitmap = 1;
	if (o->md.write_behind && (o->md.level != 1 || o->md.bitmap == 0)) {
		fprintf(stderr, "uraid: create: --write-behind needs raid1 and a write-intent "
		                "bitmap (md's write-behind)\n");
		return 2;
	}
	if (o->md.write_behind)
		o->md.bitmap = 1;
	if (o->md.journal && !md_level_parity(o->md.level)) {
		fprintf(stderr, "uraid: create: --write-journal needs raid4, 5 or 6\n");
		return 2;
	}
	if (o->md.journal && o->md.bitmap == 1) {
		fprintf(stderr, "uraid: create: md keeps no bitmap beside a write journal\n");
		return 2;
	}
	if (o->md.journal && policy && strcmp(policy, "journal") != 0) {
		fprintf(stderr,
		        "uraid: create: --consistency-policy=%s contradicts --write-journal\n",
		        policy);
		return 2;
	}
	if (o->md.journal)
		o->md.bitmap = 0;
	return create_policy(policy, o);
}

static int create_run(struct create_opts *op, char **specs, unsigned n);

int cmd_create(int argc, char **argv)
{
	struct create_opts o = {0};
	char **specs;
	unsigned n;
	int rc;

	rc = create_parse(argc, argv, &o);
	specs = o.specs;
	n = o.n;
	o.md.devflags = o.devflags;
	if (rc) {
		free(o.specs);
		free(o.devflags);
		return rc == 1 ? 0 : rc;
	}
	rc = create_run(&o, specs, n);
	free(o.specs);
	free(o.devflags);
	return rc;
}

/* The checks of the member list, then md_create(). */
static int create_run(struct create_opts *op, char **specs, unsigned n)
{
	struct create_opts o = *op;
	struct md_created made;
	unsigned missing = 0, i;
	int r;

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
		if (o.md.journal && stack_same_member(specs[i], o.md.journal)) {
			fprintf(stderr, "uraid: create: %s is a member and the journal\n",
			        specs[i]);
			return 2;
		}
		for (unsigned j = 0; j < i; j++)
			if (strcmp(specs[i], "missing") && stack_same_member(specs[i], specs[j])) {
				if (strcmp(specs[i], specs[j]))
					fprintf(stderr,
					        "uraid: create: %s is given twice (as %s)\n",
					        specs[i], specs[j]);
				else
					fprintf(stderr, "uraid: create: %s is given twice\n",
					        specs[i]);
				return 2;
			}
	}
	if (missing && !md_level_redundant(o.md.level)) {
		fprintf(
		    stderr,
		    "uraid: create: 'missing' members need a redundant level (1, 10, 5 or 6)\n");
		return 2;
	}
	if (n < md_level_info(o.md.level)->min_disks) {
		fprintf(stderr, "uraid: create: %s needs at least %u members\n",
		        md_level_name(o.md.level), md_level_info(o.md.level)->min_disks);
		return 2;
	}
	if (md_level_parity(o.md.level) && missing > md_level_parity(o.md.level)) {
		fprintf(stderr, "uraid: create: %s can miss at most %u member%s\n",
		        md_level_name(o.md.level), md_level_parity(o.md.level),
		        md_level_parity(o.md.level) > 1 ? "s" : "");
		return 2;
	}
	if (missing == n) {
		fprintf(stderr, "uraid: create: every member is 'missing'\n");
		return 2;
	}
	if (o.md.level == 10) {
		unsigned copies = MD_RAID10_NEAR(o.md.layout) * MD_RAID10_FAR(o.md.layout);
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

	err_clear();
	r = md_create(specs, n, &o.md, &made);
	if (r < 0)
		return cli_fail("create", r);
	printf("uraid: created %s array %s (%s) on %u members%s", md_level_name(o.md.level),
	       made.set_name, made.uuid, n, missing ? ", degraded" : "");
	if (made.bitmap_chunk)
		printf(", internal bitmap of %u KiB chunks", made.bitmap_chunk / 1024);
	if (o.md.journal)
		printf(", write journal on %s", o.md.journal);
	printf("\n");
	return 0;
}
