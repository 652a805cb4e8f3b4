/* cmd_detect.c — `uraid detect MEMBER...`: the RAID0/RAID5 geometry of
 * members whose metadata is gone, found by scoring candidates
 * (stack/detect.h), printed best first with their evidence and the
 * `uraid serve --assume` line that opens the best; --json for tools.
 * Reads only.  Also the --assume helper serve and probe share. */
#include "cli.h"

#include "core/clock.h"
#include "core/log.h"
#include "core/units.h"
#include "md/md.h"
#include "member/member.h"
#include "stack/assume.h"
#include "stack/detect.h"

#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_assume_open(const char *spec, char **specs, int n, bool readonly, struct stack_assume **out)
{
	int r;

	*out = NULL;
	err_clear();
	if (!readonly) {
		fprintf(stderr, "uraid: --assume: an array without metadata is opened read-only "
		                "only (nothing on the members says the geometry is right): add "
		                "--readonly\n");
		return -EINVAL;
	}
	r = stack_assume_parse(spec, out);
	if (r == 0)
		r = stack_assume_check_members(*out, specs, n);
	if (r < 0) {
		cli_fail(NULL, r);
		stack_assume_free(*out);
		*out = NULL;
	}
	return r;
}

static void detect_usage(FILE *f)
{
	fprintf(f, "usage: uraid detect [--json] [--top N] MEMBER...\n"
	           "Find the geometry of RAID0 or RAID5 members whose metadata is gone (level,\n"
	           "chunk, member order, layout, data offset) by scoring candidates; print\n"
	           "the best with their evidence and the `uraid serve --assume` line that\n"
	           "opens the best. Reads only.\n"
	           "  --json     one JSON object instead of the table\n"
	           "  --top N    candidates shown (default 5)\n"
	           "  -v         more messages\n");
}

static void detect_line(const struct stack_detect_cand *c, char **specs, char *out, size_t len)
{
	const char *order[STACK_DETECT_MAX];

	for (unsigned k = 0; k < c->geom.raid_disks; k++)
		order[k] = specs[c->order[k]];
	stack_assume_format(&c->geom, order, c->offset, 0, out, len);
}

static void detect_evidence(const struct stack_detect_cand *c, char *out, size_t len)
{
	size_t at = (size_t)snprintf(out, len, "continuity %.3f over %u boundaries", c->continuity,
	                             c->boundaries);
	if (at < len && c->signature)
		at += (size_t)snprintf(out + at, len - at, "; %s at the start", c->signature);
	if (at < len && c->starts)
		at += (size_t)snprintf(out + at, len - at, "; the members' data starts here");
	if (at < len && c->fs_checked)
		snprintf(out + at, len - at, "; %d/%d backup superblocks in place", c->fs_found,
		         c->fs_checked);
}

/* The command line that opens c: members in the order given. */
static void detect_command(const struct stack_detect_cand *c, char **specs, int n, char *out,
                           size_t len)
{
	char as[4096];
	size_t at;

	detect_line(c, specs, as, sizeof(as));
	at = (size_t)snprintf(out, len, "uraid serve --readonly --assume %s", as);
	for (int k = 0; k < n && at < len; k++)
		at += (size_t)snprintf(out + at, len - at, " %s", specs[k]);
}

int cmd_detect(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"json", no_argument, NULL, 'j'},
	    {"top", required_argument, NULL, 't'},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	struct vol *m[STACK_DETECT_MAX] = {0};
	struct stack_detect_report rep;
	bool json = false;
	unsigned top = 5;
	int c, r, n, rc = 1;
	uint64_t t0, t1;
	char **specs;

	optind = 1;
	while ((c = getopt_long(argc, argv, "vh", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 't': {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);
			if (*end || v < 1 || v > 48) {
				fprintf(stderr, "uraid detect: --top takes 1..48\n");
				return 2;
			}
			top = (unsigned)v;
			break;
		}
		case 'v':
			log_verbosity = log_verbosity < LOG_INFO ? LOG_INFO : LOG_DEBUG;
			break;
		case 'h':
			detect_usage(stdout);
			return 0;
		default:
			return cli_usage_error("detect", NULL);
		}
	}
	n = argc - optind;
	specs = argv + optind;
	if (n < 2 || n > STACK_DETECT_MAX) {
		fprintf(stderr, "uraid detect: give 2 to %d members\n", STACK_DETECT_MAX);
		return 2;
	}
	for (int k = 0; k < n; k++) {
		r = member_open(specs[k], MEMBER_READONLY, &m[k]);
		if (r < 0) {
			cli_fail("detect", r);
			goto out;
		}
	}
	t0 = clock_now_ns();
	err_clear();
	r = stack_detect(m, (unsigned)n, top, &rep);
	t1 = clock_now_ns();
	if (r < 0) {
		cli_fail("detect", r);
		goto out;
	}
	double secs = (double)(t1 - t0) / 1e9;
	char line[8192], ev[512];
	if (json) {
		json_object *o = json_object_new_object(), *arr = json_object_new_array();
		json_object_object_add(o, "level", json_object_new_int(rep.level));
		json_object_object_add(o, "parity_rows", json_object_new_int((int)rep.parity_rows));
		json_object_object_add(o, "parity", json_object_new_double(rep.parity));
		json_object_object_add(o, "scored", json_object_new_int64((int64_t)rep.scored));
		json_object_object_add(o, "seconds", json_object_new_double(secs));
		for (unsigned i = 0; i < rep.ncand; i++) {
			const struct stack_detect_cand *cd = &rep.cand[i];
			json_object *e = json_object_new_object(), *ord = json_object_new_array();
			char lay[64];
			json_object_object_add(e, "score", json_object_new_double(cd->score));
			json_object_object_add(e, "level", json_object_new_int(cd->geom.level));
			json_object_object_add(e, "chunk", json_object_new_int64(cd->geom.chunk));
			json_object_object_add(e, "layout",
			                       cd->geom.level == 5
			                           ? json_object_new_string(md_layout_name(
			                                 5, cd->geom.layout, lay, sizeof(lay)))
			                           : NULL);
			json_object_object_add(e, "offset",
			                       json_object_new_int64((int64_t)cd->offset));
			for (unsigned k = 0; k < cd->geom.raid_disks; k++)
				json_object_array_add(ord,
				                      json_object_new_string(specs[cd->order[k]]));
			json_object_object_add(e, "order", ord);
			json_object_object_add(e, "continuity",
			                       json_object_new_double(cd->continuity));
			json_object_object_add(e, "boundaries",
			                       json_object_new_int((int)cd->boundaries));
			json_object_object_add(e, "signature",
			                       cd->signature ? json_object_new_string(cd->signature)
			                                     : NULL);
			json_object_object_add(e, "data_starts",
			                       json_object_new_boolean(cd->starts));
			json_object_object_add(e, "backups_checked",
			                       json_object_new_int(cd->fs_checked));
			json_object_object_add(e, "backups_found",
			                       json_object_new_int(cd->fs_found));
			detect_line(cd, specs, line, sizeof(line));
			json_object_object_add(e, "assume", json_object_new_string(line));
			json_object_array_add(arr, e);
		}
		json_object_object_add(o, "candidates", arr);
		detect_command(&rep.cand[0], specs, n, line, sizeof(line));
		json_object_object_add(o, "command", json_object_new_string(line));
		cli_print_json(o);
	} else {
		printf(
		    "rows sampled with data: %u; XOR of the members zero in %.1f%% of them: %s\n",
		    rep.parity_rows, 100 * rep.parity,
		    rep.level == 5 ? "RAID5 (parity)" : "RAID0 (no parity)");
		printf("scored %llu candidates in %.2f s (%.0f/s)\n\n",
		       (unsigned long long)rep.scored, secs, secs > 0 ? rep.scored / secs : 0.0);
		printf("%-4s %-6s %s\n", "RANK", "SCORE", "GEOMETRY / EVIDENCE");
		for (unsigned i = 0; i < rep.ncand; i++) {
			detect_line(&rep.cand[i], specs, line, sizeof(line));
			detect_evidence(&rep.cand[i], ev, sizeof(ev));
			printf("%-4u %-6.3f %s\n            %s\n", i + 1, rep.cand[i].score, line,
			       ev);
		}
		detect_command(&rep.cand[0], specs, n, line, sizeof(line));
		printf("\nopen the best with:\n  %s\n", line);
	}
	stack_detect_report_free(&rep);
	rc = 0;
out:
	for (int k = 0; k < n; k++)
		if (m[k])
			vol_close(m[k]);
	return rc;
}
