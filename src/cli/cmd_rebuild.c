/* cmd_rebuild.c — `uraid add` and `uraid rebuild`: parse, open the
 * members (stack.c), call md_add() / md_rebuild() (md/md_rebuild.c, which
 * restores an md array's redundancy offline, as `mdadm --add` and the
 * kernel's recovery do), print.
 *
 *   uraid add [--spare] [--no-rebuild] [--force] NEW MEMBER...
 *   uraid rebuild [--force] MEMBER...
 *
 * (`uraid add CONTROL NEW`, CONTROL a running serve's control socket, is
 * the hot form: cmd_control.c sends it there, and md_array_add() does it
 * with the same checks, md_manage.h's.)  The rebuild stops, saving where
 * it got to, on SIGINT or SIGTERM; running it again continues. */
#include "cli.h"
#include "stack/stack.h"

#include "core/clock.h"
#include "core/log.h"
#include "core/units.h"
#include "md/md.h"
#include "md/md_rebuild.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t rb_stop;
static struct sigaction rb_old_int, rb_old_term;
static bool rb_handlers;
static struct cli_progress rb_prog;

static void rb_on_signal(int sig)
{
	rb_stop = sig;
}

static void rb_say(void *ctx, const char *line)
{
	(void)ctx;
	printf("uraid: %s\n", line);
	fflush(stdout);
}

/* The rebuild begins: said, and from now on SIGINT and SIGTERM stop it. */
static void rb_begin(void *ctx, const char *array, const char *list, uint64_t from, uint64_t to)
{
	struct sigaction sa = {0};
	char a[32], b[32];

	(void)ctx;
	format_size(from, a, sizeof(a));
	format_size(to, b, sizeof(b));
	printf("uraid: %s: rebuilding %s from %s of %s per member\n", array, list, a, b);
	fflush(stdout);
	rb_stop = 0;
	sa.sa_handler = rb_on_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &rb_old_int);
	sigaction(SIGTERM, &sa, &rb_old_term);
	rb_handlers = true;
	char label[96];
	snprintf(label, sizeof(label), "%s: rebuilding", array);
	cli_progress_begin(&rb_prog, label);
}

static void rb_progress(void *ctx, const char *array, uint64_t done, uint64_t from, uint64_t to,
                        bool last)
{
	(void)ctx, (void)array;
	cli_progress_show(&rb_prog, done, from, to, last);
}

static const struct md_rebuild_out rb_out = {
    .say = rb_say, .begin = rb_begin, .progress = rb_progress};

/* The members, opened for md_add() / md_rebuild() (which take them). */
struct rb_opened {
	struct vol **vols;
	struct md_super **sbs;
	unsigned n, fresh;
};

static void rb_open_free(struct rb_opened *o)
{
	free(o->vols);
	free(o->sbs);
}

/* 0, or -errno with nothing left open. */
static int rb_open(char **specs, unsigned n, struct rb_opened *o)
{
	int r = -ENOMEM;

	o->n = n;
	o->vols = calloc(n, sizeof(*o->vols));
	o->sbs = calloc(n, sizeof(*o->sbs));
	if (o->vols && o->sbs)
		r = stack_open_md_members(specs, n, o->vols, o->sbs, &o->fresh,
		                          "a new member is added with `uraid add NEW MEMBER...`");
	if (r < 0) {
		for (unsigned i = 0; o->vols && o->sbs && i < n; i++) {
			vol_close(o->vols[i]);
			free(o->sbs[i]);
		}
		rb_open_free(o);
	}
	return r;
}

void cli_rebuild_opts(struct md_rebuild_opts *ro, bool force)
{
	*ro = (struct md_rebuild_opts){.force = force, .stop = &rb_stop, .out = &rb_out};
	rb_handlers = false;
}

void cli_rebuild_end(void)
{
	if (rb_handlers) {
		sigaction(SIGINT, &rb_old_int, NULL);
		sigaction(SIGTERM, &rb_old_term, NULL);
		rb_handlers = false;
	}
}

static int rebuild_run(char **specs, unsigned n, bool force)
{
	struct md_rebuild_opts ro;
	struct rb_opened set;
	int r;

	/* A replacement being built is continued by the running array's
	 * copy (md_replace.h), as a writable start does. */
	if (cli_has_replacement(specs, n))
		return cli_replace_build(specs, n);
	r = rb_open(specs, n, &set);

	if (r < 0)
		return cli_fail("rebuild", r);
	cli_rebuild_opts(&ro, force);
	r = md_rebuild(specs, n, set.vols, set.sbs, set.fresh, &ro);
	rb_open_free(&set);
	cli_rebuild_end();
	if (r == -EINTR)
		return 1; /* said */
	return r < 0 ? cli_fail("rebuild", r) : 0;
}

static void add_usage(FILE *f)
{
	fprintf(
	    f, "usage: uraid add [--spare] [--no-rebuild] [--force] [--write-mostly] [--failfast]\n"
	       "                 NEW MEMBER...\n"
	       "       uraid add [--force] [--write-mostly] [--failfast] [--array md/NAME] CONTROL "
	       "NEW\n"
	       "Add NEW to the md array the MEMBERs hold (mdadm --add).  If a role is\n"
	       "missing, NEW takes it and is rebuilt from the others at once (see\n"
	       "`uraid rebuild`); if the array is whole, NEW becomes a spare.\n"
	       "  --spare       add NEW as a spare even if a role is missing\n"
	       "  --no-rebuild  only write the superblocks; `uraid rebuild` does the rest\n"
	       "  --force       overwrite a NEW that holds an md superblock or a LUKS header\n"
	       "  --write-mostly  NEW is a write-mostly mirror: read only when no other copy is\n"
	       "  --failfast    NEW is flagged failfast (md's device flags, for the kernel too)\n"
	       "  -v            more messages\n"
	       "The second form (CONTROL: a `uraid serve --control` socket) adds NEW to the\n"
	       "array being served: a spare, that takes a missing role and is rebuilt while\n"
	       "the array serves (--array: which array, when the stack has several).\n"
	       "       uraid add --re-add CONTROL MEMBER\n"
	       "takes back a failed MEMBER of the array being served from its write-intent\n"
	       "bitmap (mdadm --re-add): only the chunks written since it failed are resynced.\n"
	       "It must be the same disk (device UUID, role), with events not newer than the\n"
	       "array's and not older than what the bitmap covers; else it is refused with\n"
	       "the reason.  A member that failed by I/O errors is re-added on its own once it\n"
	       "answers again.\n");
}

int cmd_add(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"spare", no_argument, NULL, 's'},
	    {"no-rebuild", no_argument, NULL, 'N'},
	    {"force", no_argument, NULL, 'f'},
	    {"readonly", no_argument, NULL, 'R'},
	    {"array", required_argument, NULL, 'A'},
	    {"verbose", no_argument, NULL, 'v'},
	    {"re-add", no_argument, NULL, 'r'},
	    {"write-mostly", no_argument, NULL, 'W'},
	    {"failfast", no_argument, NULL, 'F'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	const char *array = NULL;
	struct md_add_opts ao = {.out = &rb_out};
	bool spare = false, no_rebuild = false, force = false, readd = false;
	struct rb_opened set;
	unsigned role = MD_ROLE_SPARE;
	int c, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "fvh", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			spare = true;
			break;
		case 'N':
			no_rebuild = true;
			break;
		case 'A':
			array = optarg;
			break;
		case 'f':
			force = true;
			break;
		case 'r':
			readd = true;
			break;
		case 'W':
			ao.devflags |= MD_DEVFLAG_WRITE_MOSTLY;
			break;
		case 'F':
			ao.devflags |= MD_DEVFLAG_FAILFAST;
			break;
		case 'R':
			fprintf(stderr,
			        "uraid: add: --readonly: adding a member writes superblocks "
			        "(and data); nothing was changed\n");
			return 2;
		case 'v':
			log_verbosity = log_verbosity < LOG_INFO ? LOG_INFO : LOG_DEBUG;
			break;
		case 'h':
			add_usage(stdout);
			return 0;
		default:
			return cli_usage_error("add", NULL);
		}
	}
	if (argc - optind < 2)
		return cli_usage_error("add", "give the new member and the array's members");
	if (readd) {
		/* Re-add: a running array's (the bitmap it keeps says what the
		 * member missed). */
		if (argc - optind != 2 || !cli_is_control_socket(argv[optind]) || spare ||
		    no_rebuild || force || array || ao.devflags) {
			fprintf(stderr,
			        "uraid: add: --re-add takes back a failed member of a running "
			        "array, alone: `uraid add --re-add CONTROL MEMBER`\n");
			return 2;
		}
		return cmd_readd_hot(argv[optind], argv[optind + 1]);
	}
	if (cli_is_control_socket(argv[optind])) {
		/* Hot add: the running serve does it. */
		if (argc - optind != 2 || spare || no_rebuild) {
			fprintf(stderr,
			        "uraid: add: a running array takes one NEW member at a time "
			        "(`uraid add [--force] [--array md/NAME] CONTROL NEW`); "
			        "--spare and --no-rebuild are for the offline form\n");
			return 2;
		}
		return cmd_add_hot(argv[optind], argv[optind + 1], force, array, ao.devflags);
	}
	if (array) {
		fprintf(stderr, "uraid: add: --array goes with a control socket (`uraid add "
		                "--array md/NAME CONTROL NEW`)\n");
		return 2;
	}
	const char *new_spec = argv[optind];
	for (int i = optind + 1; i < argc; i++)
		if (stack_same_member(new_spec, argv[i])) {
			fprintf(stderr,
			        "uraid: add: %s is the new member and also one of the "
			        "members given; nothing was changed\n",
			        argv[i]);
			return 2;
		}
	unsigned n = (unsigned)(argc - optind - 1);
	ao.spare = spare;
	ao.force = force;
	r = rb_open(argv + optind + 1, n, &set);
	if (r == 0) {
		r = md_add(argv + optind + 1, n, set.vols, set.sbs, set.fresh, new_spec, &ao,
		           &role);
		rb_open_free(&set);
	}
	if (r < 0)
		return cli_fail("add", r);
	if (role != MD_ROLE_SPARE && !no_rebuild)
		return rebuild_run(argv + optind, (unsigned)(argc - optind), false);
	return 0;
}

static void rebuild_usage(FILE *f)
{
	fprintf(f, "usage: uraid rebuild [--force] MEMBER...\n"
	           "Rebuild the members of the md array being recovered (added with `uraid add`,\n"
	           "or stopped part-way by uraid or the kernel), or give spares the missing roles\n"
	           "and rebuild them: their data is reconstructed from the other members (md's\n"
	           "recovery).  Progress is saved every 64 MiB and on SIGINT/SIGTERM; running\n"
	           "it again continues from there.\n"
	           "  --force   rebuild a RAID5/6 that was not shut down cleanly (its parity may\n"
	           "            be stale, and what it rebuilds wrong)\n"
	           "  -v        more messages\n");
}

int cmd_rebuild(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"force", no_argument, NULL, 'f'},
	    {"readonly", no_argument, NULL, 'R'},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	bool force = false;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "fvh", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			force = true;
			break;
		case 'R':
			fprintf(stderr, "uraid: rebuild: --readonly: a rebuild writes the new "
			                "members; nothing was changed\n");
			return 2;
		case 'v':
			log_verbosity = log_verbosity < LOG_INFO ? LOG_INFO : LOG_DEBUG;
			break;
		case 'h':
			rebuild_usage(stdout);
			return 0;
		default:
			return cli_usage_error("rebuild", NULL);
		}
	}
	if (optind >= argc)
		return cli_usage_error("rebuild", "no members given");
	return rebuild_run(argv + optind, (unsigned)(argc - optind), force);
}
