/* cmd_grow.c — `uraid grow`: parse, open the members (stack.c), call
 * md_grow() (md/md_grow.c: changing the number of copies of an md RAID1
 * offline, as `mdadm --grow --raid-devices=N [--add NEW]` does, the level
 * changes that move no data, md/md_takeover.c, and the rebuild of the new
 * roles; for RAID5/6 the reshape that restripes the data, md/md_reshape.c),
 * print.
 *
 *   uraid grow --raid-devices N [--add NEW]... [--no-rebuild] [--force] MEMBER...
 *   uraid grow --level L [--layout NAME] [--add NEW]... [--force] MEMBER...
 *   uraid grow [--raid-devices N --add NEW...] [--chunk KIB] [--layout NAME] MEMBER...
 *   uraid grow --continue [--stop-at SECTOR] MEMBER...
 *   uraid grow [--raid-devices N --add NEW...] [--chunk KIB] [--layout NAME]
 *              [--array md/NAME] CONTROL
 *   uraid grow --bitmap=internal|none [--bitmap-chunk=SIZE] [--write-behind[=N]] MEMBER...|CONTROL
 * (--bitmap: md/md_bitmap_grow.c adds or removes the write-intent bitmap;
 * CONTROL: a running serve's control socket; the serve reshapes the array
 * while it serves, ctl/control.c and md_array_grow()).
 */
#include "cli.h"
#include "ctl/control.h"
#include "stack/stack.h"

#include "core/log.h"
#include "core/units.h"
#include "md/md.h"
#include "md/md_bitmap.h"
#include "md/md_bitmap_grow.h"
#include "md/md_grow.h"
#include "md/md_takeover.h"
#include "md/md_reshape.h"
#include "member/member.h"

#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --level and --layout (the takeovers' options, md_takeover.h) into go. */
static int grow_parse_takeover(int c, const char *arg, struct md_grow_opts *go)
{
	if (c == 'p') {
		go->layout = arg;
		return 0;
	}
	if (md_level_parse(arg, &go->level) < 0) {
		fprintf(stderr, "uraid: grow: --level %s: not an md level\n", arg);
		return -EINVAL;
	}
	go->change_level = true;
	return 0;
}

/* --size as mdadm takes it (a bare number is KiB, else a size with its
 * unit; "max": all the members hold) into go->size, sectors; and
 * --array-size the same way into go->array_size (no "max"): md does not
 * store it (mdadm --grow --array-size writes the running array's sysfs
 * array_size, gone at the next start), so uraid, offline, takes it with
 * the --raid-devices that shrinks a RAID5/6, in one command. */
static int grow_parse_size(int c, const char *arg, struct md_grow_opts *go)
{
	uint64_t bytes;

	if (c != 'Z' && strcmp(arg, "max") == 0) {
		go->size = MD_GROW_SIZE_MAX;
		return 0;
	}
	if (parse_size_kib(arg, &bytes) < 0)
		bytes = 0;
	if (bytes < 1024 || bytes % 1024 || bytes / 512 >= MD_GROW_SIZE_MAX) {
		fprintf(stderr, "uraid: grow: --%s %s: not a size in KiB%s\n",
		        c == 'Z' ? "array-size" : "size", arg, c == 'Z' ? "" : " (or max)");
		return -EINVAL;
	}
	if (c == 'Z')
		go->array_size = bytes / 512;
	else
		go->size = bytes / 512;
	return 0;
}

/* --chunk as mdadm takes it (a bare number is KiB, else a size with its
 * unit) into go->chunk, sectors; md_reshape_restripe() checks it. */
static int grow_parse_chunk(const char *arg, struct md_grow_opts *go)
{
	uint64_t bytes;

	if (parse_size_kib(arg, &bytes) < 0)
		bytes = 0;
	if (bytes < 1024 || bytes % 1024 || bytes / 512 > UINT32_MAX) {
		fprintf(stderr, "uraid: grow: --chunk %s: not a size in KiB\n", arg);
		return -EINVAL;
	}
	go->chunk = (uint32_t)(bytes / 512);
	return 0;
}

/* --bitmap, --bitmap-chunk and --write-behind (mdadm's words) into bo;
 * *bitmap: 1 internal, 0 none. */
static int grow_parse_bitmap(int c, const char *arg, int *bitmap, struct md_bitmap_grow_opts *bo)
{
	uint64_t bytes;
	char *end;
	unsigned long long v;

	if (c == 'b') {
		if (strcmp(arg, "internal") != 0 && strcmp(arg, "none") != 0) {
			fprintf(stderr,
			        "uraid: grow: --bitmap is 'internal' or 'none' (no bitmap "
			        "files), not '%s'\n",
			        arg);
			return -EINVAL;
		}
		*bitmap = strcmp(arg, "internal") == 0;
		bo->add = *bitmap == 1;
		return 0;
	}
	if (c == 'W') {
		v = arg ? strtoull(arg, &end, 10) : MD_BITMAP_WRITE_BEHIND_DEFAULT;
		if (arg &&
		    (*arg < '0' || *arg > '9' || *end || v < 1 || v > MD_BITMAP_WRITE_BEHIND_MAX)) {
			fprintf(stderr, "uraid: grow: --write-behind is 1 to %u writes, not '%s'\n",
			        MD_BITMAP_WRITE_BEHIND_MAX, arg);
			return -EINVAL;
		}
		bo->write_behind = (uint32_t)v;
		return 0;
	}
	if (parse_size_kib(arg, &bytes) < 0)
		bytes = 0;
	if (bytes < 4096 || (bytes & (bytes - 1)) || bytes > (1ull << 30)) {
		fprintf(stderr,
		        "uraid: grow: --bitmap-chunk %s: a power of two from 4K to 1G (KiB "
		        "unless a unit is given)\n",
		        arg);
		return -EINVAL;
	}
	bo->chunk = bytes;
	return 0;
}

/* The takeover table's rows, as md_takeover.c states them. */
static void grow_usage_takeovers(FILE *f)
{
	const char *rule;
	int from, to;
	bool made;

	for (int pass = 0; pass < 2; pass++) {
		fprintf(f, pass ? "Refused:\n" : "Level changes (--level) and their rules:\n");
		for (unsigned i = 0; (rule = md_takeover_row(i, &from, &to, &made)); i++)
			if (made == !pass)
				fprintf(f, "  %s\n", rule);
	}
}

/* ---- the reshape of a RAID5/6 (md/md_reshape.h) ---- */

static volatile sig_atomic_t grow_signalled;
static atomic_bool grow_stop;

static void grow_on_signal(int sig)
{
	grow_signalled = sig;
	atomic_store(&grow_stop, true);
}

/* SIGINT and SIGTERM stop the reshape after the window being moved (its
 * position saved: --continue goes on); o's other fields from the options. */
static void grow_reshape_opts(struct md_reshape_run_opts *o, uint64_t stop_at)
{
	struct sigaction sa = {.sa_handler = grow_on_signal};

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	*o = (struct md_reshape_run_opts){.stop_at = stop_at * 512, .stop = &grow_stop};
}

/* `uraid grow --continue MEMBER...`: assemble the array (writable) and
 * move the rest of its data, the reshape uraid or the kernel left
 * half-done. */
static int grow_continue(char **specs, unsigned n, uint64_t stop_at)
{
	struct md_assemble_opts ao = {.no_reshape = true};
	struct md_reshape_run_opts ro;
	struct vol **vols = calloc(n, sizeof(*vols)), *arr = NULL;
	bool finished = false;
	int r = vols ? 0 : -ENOMEM;

	for (unsigned i = 0; i < n && r == 0; i++) {
		err_clear();
		r = member_open(specs[i], 0, &vols[i]);
		if (r < 0)
			while (i--)
				vol_close(vols[i]);
	}
	if (r == 0) {
		err_clear();
		r = md_assemble_one(vols, n, &ao, &arr); /* takes the vols */
	}
	free(vols);
	if (r < 0)
		return cli_fail("grow", r);
	grow_reshape_opts(&ro, stop_at);
	r = md_reshape_run(arr, &ro, &finished);
	if (r == 0)
		printf("%s: %s\n", arr->name,
		       finished ? "reshape finished" : "reshape stopped part-way (--stop-at)");
	vol_close(arr);
	if (r == -EINTR) {
		fprintf(stderr,
		        "uraid: grow: stopped (signal %d); `uraid grow --continue` goes on\n",
		        (int)grow_signalled);
		return 1;
	}
	return r < 0 ? cli_fail("grow", r) : 0;
}

/* Send req (with "array" when given; req is consumed) to the serve behind
 * the control socket sock and print its answer: 0, or 1 when refused. */
static int grow_ctl_call(const char *sock, json_object *req, const char *array)
{
	json_object *reply = NULL, *v;
	int rc = 1, r;

	if (array)
		json_object_object_add(req, "array", json_object_new_string(array));
	err_clear();
	r = ctl_request(sock, req, &reply);
	if (r < 0) {
		fprintf(stderr, "uraid: grow: %s\n", err_detail(r));
	} else if (json_object_object_get_ex(reply, "ok", &v) && json_object_get_boolean(v)) {
		json_object_object_get_ex(reply, "message", &v);
		printf("uraid: %s\n", json_object_get_string(v));
		rc = 0;
	} else {
		json_object_object_get_ex(reply, "error", &v);
		fprintf(stderr, "uraid: grow: %s\n", v ? json_object_get_string(v) : "refused");
	}
	json_object_put(req);
	json_object_put(reply);
	return rc;
}

/* `uraid grow [-n N --add NEW...] [--chunk KIB] [--layout NAME] CONTROL`:
 * the serve behind the control socket reshapes its array while it serves;
 * `uraid detail` follows it. */
static int grow_hot(const char *sock, const struct md_grow_opts *go, unsigned n, char **news,
                    unsigned nnew, bool force, const char *array)
{
	json_object *req = json_object_new_object(), *add = json_object_new_array();

	json_object_object_add(req, "op", json_object_new_string("grow"));
	if (n)
		json_object_object_add(req, "raid_devices", json_object_new_int((int)n));
	for (unsigned i = 0; i < nnew; i++)
		json_object_array_add(add, json_object_new_string(news[i]));
	json_object_object_add(req, "add", add);
	if (go->chunk)
		json_object_object_add(req, "chunk", json_object_new_int((int)(go->chunk / 2)));
	if (go->layout)
		json_object_object_add(req, "layout", json_object_new_string(go->layout));
	if (go->change_level)
		json_object_object_add(req, "level",
		                       json_object_new_string(md_level_name(go->level)));
	if (go->array_size)
		json_object_object_add(req, "array_size",
		                       json_object_new_int64((int64_t)(go->array_size / 2)));
	if (force)
		json_object_object_add(req, "force", json_object_new_boolean(true));
	return grow_ctl_call(sock, req, array);
}

/* `uraid grow --bitmap=internal|none ... CONTROL`: the serve behind the
 * control socket adds or removes its array's bitmap. */
static int grow_hot_bitmap(const char *sock, const struct md_bitmap_grow_opts *bo,
                           const char *array)
{
	json_object *req = json_object_new_object();

	json_object_object_add(req, "op", json_object_new_string("bitmap"));
	json_object_object_add(req, "bitmap",
	                       json_object_new_string(bo->add ? "internal" : "none"));
	if (bo->chunk)
		json_object_object_add(req, "chunk", json_object_new_int64((int64_t)bo->chunk));
	if (bo->write_behind)
		json_object_object_add(req, "write_behind",
		                       json_object_new_int((int)bo->write_behind));
	return grow_ctl_call(sock, req, array);
}

static void grow_usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: uraid grow --raid-devices N [--add NEW]... [--no-rebuild] [--force] "
	    "MEMBER...\n"
	    "       uraid grow --level L [--layout NAME] [--add NEW]... [--force] MEMBER...\n"
	    "       uraid grow --size KIB|max MEMBER...\n"
	    "       uraid grow [--raid-devices N --add NEW...] [--chunk KIB] [--layout NAME] "
	    "MEMBER...\n"
	    "       uraid grow --continue [--stop-at SECTOR] MEMBER...\n"
	    "       uraid grow [--raid-devices N --add NEW...|--raid-devices N --array-size S]\n"
	    "                  [--chunk KIB] [--layout NAME] [--array md/NAME] CONTROL\n"
	    "       uraid grow --bitmap=internal|none [--bitmap-chunk=SIZE] "
	    "[--write-behind[=N]] MEMBER...|CONTROL\n"
	    "Reshape the md array the MEMBERs hold, or change its level, size or bitmap\n"
	    "(mdadm --grow); give every member, or the CONTROL socket of a serve.  A RAID1\n"
	    "with --raid-devices changes its number of copies: growing leaves the new roles\n"
	    "missing until a member takes them: each NEW does, and is rebuilt from the\n"
	    "others at once (see `uraid rebuild`).  Shrinking needs the dropped roles\n"
	    "empty (their members failed and removed).\n"
	    "  -n, --raid-devices N  the new number of devices\n"
	    "  -l, --level L         take the array over to level L without moving data\n"
	    "                        (md's takeovers, listed below)\n"
	    "  -p, --layout NAME     with --level: the new layout (5->6: preserve, the -6 one);\n"
	    "                        alone (RAID5/6): restripe to it, a reshape\n"
	    "  -c, --chunk KIB       RAID5/6, RAID10: restripe to this chunk, a reshape\n"
	    "  -z, --size KIB|max    the KiB each member uses (max: all they hold; RAID1/5/6/10)\n"
	    "  -Z, --array-size S    with -n: the size a RAID5/6 shrinks to (KiB; md keeps\n"
	    "                        no array size on disk, so uraid takes both at once)\n"
	    "  -a, --add NEW         a new member, taking a missing role (repeatable)\n"
	    "  --no-rebuild          only write the superblocks; `uraid rebuild` does the rest\n"
	    "  --force               overwrite a NEW that holds an md superblock or LUKS header\n"
	    "RAID5, RAID6 and RAID10 (near) are restriped (reshaped), as mdadm --grow does:\n"
	    "each NEW takes a new role (or the chunk or layout changes), the data moves to the\n"
	    "new geometry, and a stop (signal) or a crash leaves a state that --continue, or\n"
	    "the kernel's md, goes on with.  RAID4 reshapes as RAID5; RAID0 grows through a\n"
	    "raid4 with its parity missing and back, as mdadm; --level changes that mdadm\n"
	    "joins to a reshape (raid1 of 2 --level 5 -n N, raid5 --level 6 --layout L,\n"
	    "raid6 --level 5) run the takeover and the reshape in turn.\n"
	    "  --continue            go on with the reshape the members record\n"
	    "  --stop-at SECTOR      stop the reshape once it has reached array sector SECTOR\n"
	    "                        (leaves it half-done; for tests)\n"
	    "With CONTROL (a `uraid serve --control` socket) the serve reshapes its RAID5/6/10\n"
	    "while it serves (more or fewer devices, a chunk, a layout), grows its RAID0 (-n N\n"
	    "--add NEW, through raid5 and back) and changes its level (--level L: the RAID\n"
	    "under the export is replaced while requests wait a moment at the array's gate);\n"
	    "`uraid detail CONTROL` shows the progress.  A shrink serves S from its start on.\n"
	    "  --array md/NAME       with CONTROL: the array, when it serves several\n"
	    "--bitmap=internal adds an md write-intent bitmap to the array (where mdadm\n"
	    "--grow puts one: after the superblock for 1.1/1.2, below it for 1.0), offline;\n"
	    "--bitmap=none removes it.  Give every member (or CONTROL: the serve does it\n"
	    "while it serves); nothing else changes with it.\n"
	    "  --bitmap-chunk SIZE   the bitmap's chunk (KiB unless a unit; default mdadm's)\n"
	    "  --write-behind[=N]    RAID1, with --bitmap=internal: md's write-behind, up\n"
	    "                        to N (256) writes to write-mostly members behind\n"
	    "  -v                    more messages\n");
	grow_usage_takeovers(f);
}

int cmd_grow(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"raid-devices", required_argument, NULL, 'n'},
	    {"level", required_argument, NULL, 'l'},
	    {"layout", required_argument, NULL, 'p'},
	    {"chunk", required_argument, NULL, 'c'},
	    {"size", required_argument, NULL, 'z'},
	    {"array-size", required_argument, NULL, 'Z'},
	    {"add", required_argument, NULL, 'a'},
	    {"no-rebuild", no_argument, NULL, 'N'},
	    {"force", no_argument, NULL, 'f'},
	    {"readonly", no_argument, NULL, 'R'},
	    {"continue", no_argument, NULL, 'C'},
	    {"stop-at", required_argument, NULL, 'S'},
	    {"array", required_argument, NULL, 'A'},
	    {"bitmap", required_argument, NULL, 'b'},
	    {"bitmap-chunk", required_argument, NULL, 'B'},
	    {"write-behind", optional_argument, NULL, 'W'},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	char **news = calloc((size_t)argc + 1, sizeof(*news));
	struct md_rebuild_opts ro;
	struct md_grow_opts go = {0};
	struct vol **vols = NULL;
	struct md_super **sbs = NULL;
	unsigned nnew = 0, n = 0, nm = 0, fresh = 0;
	bool no_rebuild = false, force = false, rebuilding = false, cont = false;
	uint64_t stop_at = 0;
	const char *array = NULL;
	struct md_reshape_run_opts rso;
	struct md_bitmap_grow_opts bo = {0};
	int bitmap = -1;
	char name[48];
	int c, r, rc = 1;

	if (!news)
		return cli_fail("grow", -ENOMEM);
	optind = 1;
	while ((c = getopt_long(argc, argv, "n:l:p:c:z:Z:a:fvh", opts, NULL)) != -1) {
		switch (c) {
		case 'z':
		case 'Z':
			if (grow_parse_size(c, optarg, &go) < 0) {
				rc = 2;
				goto out;
			}
			break;
		case 'l':
		case 'p':
			if (grow_parse_takeover(c, optarg, &go) < 0) {
				rc = 2;
				goto out;
			}
			break;
		case 'c':
			if (grow_parse_chunk(optarg, &go) < 0) {
				rc = 2;
				goto out;
			}
			break;
		case 'n': {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);
			if (*optarg < '0' || *optarg > '9' || *end || v < 1 || v >= MD_SB_MAX_DEV) {
				fprintf(stderr,
				        "uraid: grow: --raid-devices %s: not a device count\n",
				        optarg);
				rc = 2;
				goto out;
			}
			n = (unsigned)v;
			break;
		}
		case 'a':
			news[nnew++] = optarg;
			break;
		case 'N':
			no_rebuild = true;
			break;
		case 'C':
			cont = true;
			break;
		case 'S': {
			char *end;
			stop_at = strtoull(optarg, &end, 10);
			if (*optarg < '0' || *optarg > '9' || *end || !stop_at) {
				fprintf(stderr, "uraid: grow: --stop-at %s: not a sector\n",
				        optarg);
				rc = 2;
				goto out;
			}
			break;
		}
		case 'A':
			array = optarg;
			break;
		case 'b':
		case 'B':
		case 'W':
			if (grow_parse_bitmap(c, optarg, &bitmap, &bo) < 0) {
				rc = 2;
				goto out;
			}
			break;
		case 'f':
			force = true;
			break;
		case 'R':
			fprintf(stderr, "uraid: grow: --readonly: growing writes superblocks (and "
			                "data); nothing was changed\n");
			rc = 2;
			goto out;
		case 'v':
			log_verbosity = log_verbosity < LOG_INFO ? LOG_INFO : LOG_DEBUG;
			break;
		case 'h':
			grow_usage(stdout);
			rc = 0;
			goto out;
		default:
			rc = cli_usage_error("grow", NULL);
			goto out;
		}
	}
	if (go.chunk && go.change_level) {
		fprintf(stderr, "uraid: grow: --chunk with --level: a takeover keeps the chunk "
		                "(restripe after it); nothing was changed\n");
		rc = 2;
		goto out;
	}
	if (go.array_size && (!n || go.change_level)) {
		fprintf(stderr, "uraid: grow: --array-size: md keeps no array size on disk (mdadm "
		                "sets it on a running array, until it stops): give it with the "
		                "--raid-devices that shrinks a RAID5/6, offline or with CONTROL "
		                "(or --size to change what each member holds); nothing was "
		                "changed\n");
		rc = 2;
		goto out;
	}
	if (go.size && (n || go.change_level || nnew || go.chunk || go.layout)) {
		fprintf(stderr, "uraid: grow: --size changes nothing else: give it alone (no "
		                "--raid-devices, --level, --chunk, --layout or --add); nothing "
		                "was changed\n");
		rc = 2;
		goto out;
	}
	if ((bo.chunk || bo.write_behind) && bitmap != 1) {
		fprintf(stderr, "uraid: grow: --bitmap-chunk and --write-behind go with "
		                "--bitmap=internal; nothing was changed\n");
		rc = 2;
		goto out;
	}
	if (bitmap != -1 && (n || go.change_level || nnew || go.chunk || go.layout || go.size ||
	                     go.array_size || cont || stop_at || no_rebuild)) {
		fprintf(stderr, "uraid: grow: --bitmap changes nothing else (mdadm changes one of "
		                "size, devices, bitmap and layout at a time); nothing was "
		                "changed\n");
		rc = 2;
		goto out;
	}
	if (bitmap != -1 && argc - optind == 1 && cli_is_control_socket(argv[optind])) {
		rc = grow_hot_bitmap(argv[optind], &bo, array);
		goto out;
	}
	if (argc - optind == 1 && cli_is_control_socket(argv[optind])) {
		if ((!n && !go.chunk && !go.layout && !go.change_level) ||
		    (n && !nnew && !go.array_size && !go.change_level) || cont || stop_at ||
		    go.size || no_rebuild) {
			fprintf(stderr,
			        "uraid: grow: with a control socket: --raid-devices N with "
			        "--add NEW (more) or --array-size S (fewer), --chunk, "
			        "--layout (a reshape while serving), --level L (a takeover); "
			        "nothing was changed\n");
			rc = 2;
			goto out;
		}
		rc = grow_hot(argv[optind], &go, n, news, nnew, force, array);
		goto out;
	}
	if (array) {
		fprintf(stderr, "uraid: grow: --array goes with a control socket; nothing was "
		                "changed\n");
		rc = 2;
		goto out;
	}
	if (cont && optind < argc && !n && !nnew) {
		rc = grow_continue(argv + optind, (unsigned)(argc - optind), stop_at);
		goto out;
	}
	if (optind >= argc) {
		rc = cli_usage_error("grow", "no members given");
		goto out;
	}
	if ((!n && !go.change_level && !go.size && !go.chunk && !go.layout && bitmap == -1) ||
	    cont) {
		rc = cli_usage_error("grow",
		                     cont ? "--continue takes only the members"
		                          : "say what to change: --raid-devices, --level, --size, "
		                            "--chunk, --layout or --bitmap");
		goto out;
	}
	nm = (unsigned)(argc - optind);
	vols = calloc(nm, sizeof(*vols));
	sbs = calloc(nm, sizeof(*sbs));
	r = vols && sbs ? 0 : -ENOMEM;
	if (r == 0)
		r = stack_open_md_members(argv + optind, nm, vols, sbs, &fresh,
		                          "a new member is given with --add NEW");
	if (r < 0) {
		for (unsigned i = 0; vols && sbs && i < nm; i++) {
			vol_close(vols[i]);
			free(sbs[i]);
		}
		goto fail;
	}
	if (bitmap != -1) {
		cli_rebuild_opts(&ro, false);
		r = md_bitmap_grow(argv + optind, nm, vols, sbs, fresh, &bo, ro.out);
		cli_rebuild_end();
		if (r < 0)
			goto fail;
		rc = 0;
		goto out;
	}
	/* The new members are not members, nor given twice (md_grow's
	 * checks of the array first). */
	md_super_array_name(sbs[fresh], name, sizeof(name));
	for (unsigned i = 0; i < nnew; i++) {
		for (int j = optind; j < argc; j++)
			if (stack_same_member(news[i], argv[j])) {
				r = err_set(-EINVAL,
				            "%s: %s is given both as --add NEW and as a member",
				            name, news[i]);
				goto close;
			}
		for (unsigned j = 0; j < i; j++)
			if (stack_same_member(news[i], news[j])) {
				r = err_set(-EINVAL, "%s is given twice", news[i]);
				goto close;
			}
	}
	cli_rebuild_opts(&ro, false);
	go.raid_disks = n;
	go.news = news;
	go.nnew = nnew;
	go.no_rebuild = no_rebuild;
	go.force = force;
	go.rebuild = &ro;
	go.rebuilding = &rebuilding;
	grow_reshape_opts(&rso, stop_at);
	go.reshape = &rso;
	r = md_grow(argv + optind, nm, vols, sbs, fresh, &go);
	cli_rebuild_end();
	if (r == -EINTR && rebuilding)
		rc = 1; /* said */
	else if (r < 0)
		goto fail;
	else
		rc = 0;
	goto out;
close:
	for (unsigned i = 0; i < nm; i++) {
		vol_close(vols[i]);
		free(sbs[i]);
	}
fail:
	rc = cli_fail(rebuilding ? "rebuild" : "grow", r);
out:
	free(vols);
	free(sbs);
	free(news);
	return rc;
}
