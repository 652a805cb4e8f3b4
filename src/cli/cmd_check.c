/* cmd_check.c — `uraid check [--repair] MEMBER...`: scrub an md array
 * with redundancy, as md's "check" action does: on RAID1/10 read every
 * copy of every block and report where they differ, on RAID5/6 recompute
 * every stripe's parity and report the stripes whose parity differs; with
 * --repair, make them agree (md's "repair": the first copy is written over
 * the others, the parity is rewritten from the data).
 *
 * A check opens the members read-only and changes no byte, so it is safe
 * on a foreign array; a repair opens them for writing and takes them for
 * itself (no `uraid serve` can have them meanwhile).  Exit status: 0 when
 * the copies agree (or were all repaired), 1 when they differ or on error,
 * 2 on a usage error. */
#include "cli.h"

#include "core/log.h"
#include "core/units.h"
#include "disc/raid/raid.h"
#include "md/md.h"
#include "stack/stack.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#define CHECK_SHOW_MAX 20 /* ranges listed before "..." */

static void check_usage(FILE *f)
{
	fprintf(f,
		"usage: uraid check [--repair [--force]] [--degraded] MEMBER...\n"
		"       uraid check [--repair | --stop] [--wait] [--array md/NAME] CONTROL\n"
		"Read every copy of every block of the RAID1/10 array the members hold, or\n"
		"every stripe of a RAID5/6 with its parity, and report where they disagree\n"
		"(md's \"check\"). Changes nothing.\n"
		"  --repair     make them agree (md's \"repair\"): the first copy is written\n"
		"               over the others; RAID5/6 parity is recomputed from the data\n"
		"  --degraded   also check an array that is missing members\n"
		"  --force      with --repair: start a RAID5/6 that is degraded and was not\n"
		"               shut down cleanly (md's write hole; `uraid serve --force`)\n"
		"  -v           more messages\n"
		"The second form (CONTROL: a `uraid serve --control` socket) checks the array\n"
		"being served, beside its clients, in the background (md's sync_action):\n"
		"`uraid detail` shows its progress and outcome.\n"
		"  --wait       wait for the end and report as the first form does\n"
		"  --stop       interrupt the check running\n"
		"  --array      which array, when several with redundancy are served\n");
}

struct check_show {
	unsigned shown;
};

static void check_on_mismatch(void *ctx, uint64_t off, uint64_t len)
{
	struct check_show *s = ctx;

	if (s->shown++ < CHECK_SHOW_MAX)
		printf("  copies differ: %llu bytes at %llu\n", (unsigned long long)len,
		       (unsigned long long)off);
	else if (s->shown == CHECK_SHOW_MAX + 1)
		printf("  ...\n");
}

int cmd_check(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "repair", no_argument, NULL, 'r' },
		{ "degraded", no_argument, NULL, 'd' },
		{ "force", no_argument, NULL, 'f' },
		{ "stop", no_argument, NULL, 's' },
		{ "wait", no_argument, NULL, 'w' },
		{ "array", required_argument, NULL, 'a' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct stack_opts so = { .readonly = true, .no_luks = true };
	struct raid_check_report rep;
	struct check_show show = { 0 };
	struct vol *top = NULL;
	bool repair = false, stop = false, wait = false;
	const char *array = NULL;
	int c, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "vh", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			repair = true;
			so.readonly = false;
			break;
		case 'd':
			so.run_degraded = true;
			break;
		case 'f':
			so.start_dirty_degraded = true;
			break;
		case 's':
			stop = true;
			break;
		case 'w':
			wait = true;
			break;
		case 'a':
			array = optarg;
			break;
		case 'v':
			log_verbosity = log_verbosity < LOG_INFO ? LOG_INFO : LOG_DEBUG;
			break;
		case 'h':
			check_usage(stdout);
			return 0;
		default:
			return cli_usage_error("check", NULL);
		}
	}
	if (optind >= argc)
		return cli_usage_error("check", "no members given");
	if (argc - optind == 1 && cli_is_control_socket(argv[optind])) {
		if (stop && repair) {
			fprintf(stderr, "uraid: check: --stop and --repair do not go together\n");
			return 2;
		}
		return cmd_check_hot(argv[optind], stop ? "stop" : repair ? "repair" : "check", array,
		                     wait);
	}
	if (stop || wait || array) {
		fprintf(stderr, "uraid: check: --stop, --wait and --array are for a running serve's "
		                "CONTROL socket\n");
		return 2;
	}
	r = stack_open(argv + optind, argc - optind, &so, &top);
	if (r < 0)
		return cli_fail("check", r);
	struct vol *raid = md_array_raid(top);
	if (!raid) {
		fprintf(stderr, "uraid: check: %s is not an md array\n", top->name);
		vol_close(top);
		return 1;
	}
	struct raid_check_cb cb = { .on_mismatch = check_on_mismatch, .ctx = &show };
	r = raid_check(raid, repair, &rep, &cb);
	if (r < 0) {
		vol_close(top);
		return cli_fail("check", r);
	}
	char size[32];
	format_size(rep.checked, size, sizeof(size));
	printf("%s: checked %s: ", top->name, size);
	if (rep.mismatched == 0)
		printf("the copies agree");
	else
		printf("%llu bytes in %llu ranges differ%s", (unsigned long long)rep.mismatched,
		       (unsigned long long)rep.ranges, repair ? ", repaired" : "");
	if (rep.read_errors)
		printf(", %llu read errors", (unsigned long long)rep.read_errors);
	printf("\n");
	vol_close(top);
	return rep.read_errors || (rep.mismatched && !repair) ? 1 : 0;
}
