/* cmd_zero.c — `uraid zero-superblock [--force] MEMBER...`: erase the md
 * superblock of each member (mdadm --zero-superblock), and nothing else:
 * md_super_erase() zeroes the bytes mdadm zeroes.  Every member is opened
 * writable (a member a serve holds is refused by its lock) and read first;
 * a mistake in any of them (missing, given twice, no superblock) writes
 * nothing to any. */
#include "cli.h"

#include "core/log.h"
#include "md/md.h"
#include "member/member.h"
#include "stack/stack.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void zero_usage(FILE *f)
{
	fprintf(f, "usage: uraid zero-superblock [--force] MEMBER...\n"
	           "Erase the md superblock (1.2, 1.1, 1.0 or 0.90) of each member, as\n"
	           "mdadm --zero-superblock does: the superblock's block is zeroed and no\n"
	           "other byte changes (the data, a bitmap, a bad-block log stay).  A member\n"
	           "of an array being served is refused (it is locked), and so is one with no\n"
	           "md superblock, unless --force; then nothing is written to any member.\n"
	           "  --force   skip members with no md superblock, quietly\n"
	           "  -v        more messages\n");
}

int cmd_zero_superblock(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"force", no_argument, NULL, 'f'},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct vol **vols = NULL;
	struct md_super *sbs = NULL;
	bool force = false, *found = NULL;
	int c, n, rc = 1, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "fvh", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			force = true;
			break;
		case 'v':
			log_verbosity = log_verbosity < LOG_INFO ? LOG_INFO : LOG_DEBUG;
			break;
		case 'h':
			zero_usage(stdout);
			return 0;
		default:
			return cli_usage_error("zero-superblock", NULL);
		}
	}
	n = argc - optind;
	if (n < 1)
		return cli_usage_error("zero-superblock", "no members given");
	char **specs = argv + optind;
	vols = calloc((size_t)n, sizeof(*vols));
	sbs = calloc((size_t)n, sizeof(*sbs));
	found = calloc((size_t)n, sizeof(*found));
	if (!vols || !sbs || !found) {
		cli_fail("zero-superblock", -ENOMEM);
		goto out;
	}
	for (int i = 0; i < n; i++) {
		for (int j = 0; j < i; j++)
			if (stack_same_member(specs[i], specs[j])) {
				fprintf(stderr, "uraid: zero-superblock: %s is given twice\n",
				        specs[i]);
				rc = 2;
				goto out;
			}
		err_clear();
		r = member_open(specs[i], 0, &vols[i]);
		if (r < 0) {
			cli_fail("zero-superblock", r);
			goto out;
		}
		r = md_super_read_raw(vols[i], &sbs[i]);
		if (r == -ENOENT || r == -ENOSPC) {
			if (force)
				continue;
			fprintf(stderr,
			        "uraid: zero-superblock: %s: Unrecognised md component device (no "
			        "md superblock; --force skips it)\n",
			        specs[i]);
			goto out;
		}
		if (r < 0) {
			fprintf(stderr,
			        "uraid: zero-superblock: %s: reading the md superblock: %s\n",
			        specs[i], strerror(-r));
			goto out;
		}
		found[i] = true;
	}
	for (int i = 0; i < n; i++) {
		if (!found[i])
			continue;
		err_clear();
		r = md_super_erase(vols[i], &sbs[i]);
		if (r < 0) {
			cli_fail("zero-superblock", r);
			goto out;
		}
		log_info("%s: md v%s superblock zeroed", specs[i], md_super_version(&sbs[i])->name);
	}
	rc = 0;
out:
	for (int i = 0; vols && i < n; i++)
		if (vols[i])
			vol_close(vols[i]);
	free(vols);
	free(sbs);
	free(found);
	return rc;
}
