/* cmd_replace.c — `uraid replace`: md's hot replacement (mdadm --replace
 * OLD --with NEW), offline:
 *
 *   uraid replace [--force] [--no-copy] OLD --with NEW MEMBER...
 *
 * md_replace_begin() (md/md_rebuild.c) checks OLD and NEW and records NEW
 * as OLD's replacement; then the array is assembled writable (the
 * members and NEW) and its recovery thread copies OLD onto NEW and ends
 * the replacement (md/md_replace.c), as a writable `uraid serve` would.
 * SIGINT or SIGTERM stops the copy, its offset saved; `uraid rebuild
 * MEMBER...` (or a writable serve, or the kernel) continues it.  The
 * running form, `uraid replace CONTROL OLD --with NEW`, is cmd_control.c's. */
#include "cli.h"
#include "stack/stack.h"

#include "core/log.h"
#include "core/units.h"
#include "md/md.h"
#include "md/md_rebuild.h"
#include "member/member.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t rp_stop;

static void rp_on_signal(int sig)
{
	rp_stop = sig;
}

static void rp_say(void *ctx, const char *line)
{
	(void)ctx;
	printf("uraid: %s\n", line);
	fflush(stdout);
}

static const struct md_rebuild_out rp_out = {.say = rp_say};

/* Whether the md array info shows a replacement still being built. */
static bool rp_building(const struct md_array_info *in)
{
	for (unsigned i = 0; i < in->nmembers; i++)
		if (in->m[i].state == MD_MEMBER_REBUILDING)
			return true;
	return false;
}

int cli_replace_build(char **specs, unsigned n)
{
	struct stack_opts so = {.whole = true, .no_luks = true};
	struct sigaction sa = {0}, old_int, old_term;
	struct stack_info si = {0};
	struct md_array_info in;
	struct cli_progress prog;
	struct vol *top = NULL;
	bool shown = false, left;
	uint64_t from = 0, total = 0;
	int r;

	r = stack_open_info(specs, (int)n, &so, &top, &si);
	if (r < 0)
		return cli_fail("replace", r);
	if (!si.md) {
		vol_close(top);
		fprintf(stderr, "uraid: replace: the members hold no md array\n");
		return 1;
	}
	rp_stop = 0;
	sa.sa_handler = rp_on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	for (;;) {
		if (md_array_info(si.md, &in) < 0)
			break;
		bool rec = in.recovering && (rp_building(&in) || in.rec_total);
		if (rec && !shown && in.rec_total) {
			char label[96];
			snprintf(label, sizeof(label), "%s: replacing", in.name);
			cli_progress_begin(&prog, label);
			from = in.rec_done;
			shown = true;
		}
		if (shown && rec && in.rec_total) {
			total = in.rec_total;
			cli_progress_show(&prog, in.rec_done, from, total, false);
		}
		md_array_info_free(&in);
		if (!rec || rp_stop)
			break;
		usleep(100000);
	}
	left = false;
	if (md_array_info(si.md, &in) == 0) {
		if (shown && !rp_stop)
			cli_progress_show(&prog, total, from, total, true);
		left = rp_building(&in);
		md_array_info_free(&in);
	}
	vol_close(top); /* saves where the copy got to */
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	if (rp_stop) {
		printf("uraid: replace: stopped, its offset saved; `uraid rebuild MEMBER...` or a "
		       "writable `uraid serve` continues it\n");
		return 1;
	}
	if (left) {
		fprintf(stderr, "uraid: replace: the replacement could not be built (see above); "
		                "it stays recorded for the next start\n");
		return 1;
	}
	printf("uraid: replace: done\n");
	return 0;
}

bool cli_has_replacement(char **specs, unsigned n)
{
	bool found = false;

	for (unsigned i = 0; i < n && !found; i++) {
		struct vol *v = NULL;
		struct md_super *sb = malloc(sizeof(*sb));
		if (sb && member_open(specs[i], MEMBER_READONLY, &v) == 0 &&
		    md_super_read_raw(v, sb) == 0)
			found = md_super_replacement(sb);
		vol_close(v);
		free(sb);
	}
	err_clear();
	return found;
}

static void replace_usage(FILE *f)
{
	fprintf(f, "usage: uraid replace [--force] [--no-copy] OLD --with NEW MEMBER...\n"
	           "       uraid replace [--force] [--array md/NAME] CONTROL OLD --with NEW\n"
	           "Replace OLD, an in-sync member of the md array the MEMBERs hold, with NEW\n"
	           "(mdadm --replace): NEW is built from OLD while OLD stays in the array, so\n"
	           "redundancy is never lost; then OLD is marked faulty and NEW takes its role.\n"
	           "NEW is checked as `uraid add` checks a new member.  The copy stops on\n"
	           "SIGINT/SIGTERM with its offset saved; `uraid rebuild MEMBER...` (or a\n"
	           "writable `uraid serve`, or the kernel) continues it.\n"
	           "  --with NEW    the new member\n"
	           "  --force       overwrite a NEW that holds an md superblock or a LUKS header\n"
	           "  --no-copy     only write the superblocks; the next writable start copies\n"
	           "  -v            more messages\n"
	           "The second form (CONTROL: a `uraid serve --control` socket) replaces OLD in\n"
	           "the array being served, the copy running beside client I/O (--array: which\n"
	           "array, when the stack has several).\n");
}

int cmd_replace(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"with", required_argument, NULL, 'w'},
	    {"force", no_argument, NULL, 'f'},
	    {"no-copy", no_argument, NULL, 'N'},
	    {"array", required_argument, NULL, 'A'},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	struct md_add_opts ao = {.out = &rp_out};
	const char *new_spec = NULL, *array = NULL;
	bool no_copy = false;
	int c, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "fvh", opts, NULL)) != -1) {
		switch (c) {
		case 'w':
			new_spec = optarg;
			break;
		case 'f':
			ao.force = true;
			break;
		case 'N':
			no_copy = true;
			break;
		case 'A':
			array = optarg;
			break;
		case 'v':
			log_verbosity = log_verbosity < LOG_INFO ? LOG_INFO : LOG_DEBUG;
			break;
		case 'h':
			replace_usage(stdout);
			return 0;
		default:
			replace_usage(stderr);
			return 2;
		}
	}
	if (!new_spec || argc - optind < 1) {
		replace_usage(stderr);
		return 2;
	}
	if (cli_is_control_socket(argv[optind])) {
		if (argc - optind != 2 || no_copy) {
			fprintf(stderr, "uraid: replace: a running array: `uraid replace [--force] "
			                "[--array md/NAME] CONTROL OLD --with NEW`\n");
			return 2;
		}
		return cmd_replace_hot(argv[optind], argv[optind + 1], new_spec, ao.force, array);
	}
	if (array) {
		fprintf(stderr, "uraid: replace: --array goes with a control socket\n");
		return 2;
	}
	/* The members: OLD first, then the others given. */
	const char *old_spec = argv[optind];
	unsigned n = 0;
	char **specs = calloc((size_t)(argc - optind) + 1, sizeof(*specs));
	if (!specs)
		return cli_fail("replace", -ENOMEM);
	specs[n++] = (char *)old_spec;
	for (int i = optind + 1; i < argc; i++) {
		if (stack_same_member(new_spec, argv[i])) {
			fprintf(stderr,
			        "uraid: replace: %s is the new member and also one of the members "
			        "given; nothing was changed\n",
			        argv[i]);
			free(specs);
			return 2;
		}
		if (!stack_same_member(old_spec, argv[i]))
			specs[n++] = argv[i];
	}
	if (stack_same_member(new_spec, old_spec)) {
		fprintf(stderr, "uraid: replace: OLD and NEW are the same; nothing was changed\n");
		free(specs);
		return 2;
	}
	struct vol **vols = calloc(n, sizeof(*vols));
	struct md_super **sbs = calloc(n, sizeof(*sbs));
	unsigned fresh = 0;
	r = vols && sbs ? stack_open_md_members(specs, n, vols, sbs, &fresh,
	                                        "the members are given after NEW")
	                : -ENOMEM;
	if (r < 0) {
		for (unsigned i = 0; vols && sbs && i < n; i++) {
			vol_close(vols[i]);
			free(sbs[i]);
		}
	} else {
		r = md_replace_begin(specs, n, vols, sbs, fresh, old_spec, new_spec, &ao);
	}
	free(vols);
	free(sbs);
	if (r < 0) {
		free(specs);
		return cli_fail("replace", r);
	}
	int rc = 0;
	if (!no_copy) {
		specs[n++] = (char *)new_spec;
		rc = cli_replace_build(specs, n);
	}
	free(specs);
	return rc;
}
