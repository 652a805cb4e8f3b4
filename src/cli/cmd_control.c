/* cmd_control.c — the clients of a running serve's control socket
 * (ctl/control.h): `uraid detail`, `uraid fail`, `uraid remove`, and the hot
 * form of `uraid add` (cmd_rebuild.c hands it over when its first
 * argument is a socket).  Each sends one JSON request (ctl_request(),
 * ctl/client.c) and prints the reply, mdadm's way for detail; the exit
 * code is 0 when the server says ok. */
#include "cli.h"
#include "ctl/control.h"

#include "core/log.h"

#include <getopt.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool cli_is_control_socket(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISSOCK(st.st_mode);
}

/* Send req to the control socket at path; *reply gets the parsed answer.
 * Returns 0, or 1 after printing why not. */
static int control_call(const char *path, json_object *req, json_object **reply)
{
	err_clear();
	int r = ctl_request(path, req, reply);
	if (r < 0) {
		fprintf(stderr, "uraid: %s\n", err_detail(r));
		return 1;
	}
	return 0;
}

static json_object *jget(json_object *o, const char *key)
{
	json_object *v = NULL;
	return o && json_object_object_get_ex(o, key, &v) ? v : NULL;
}

static const char *jstr(json_object *o, const char *key)
{
	json_object *v = jget(o, key);
	return v ? json_object_get_string(v) : "";
}

static int64_t jint(json_object *o, const char *key)
{
	return json_object_get_int64(jget(o, key));
}

/* ok: print its message (unless quiet); else the error.  Exit code. */
static int control_result(const char *cmd, json_object *reply, bool quiet)
{
	if (json_object_get_boolean(jget(reply, "ok"))) {
		if (!quiet && *jstr(reply, "message"))
			printf("uraid: %s\n", jstr(reply, "message"));
		return 0;
	}
	fprintf(stderr, "uraid: %s: %s\n", cmd, jstr(reply, "error"));
	return 1;
}

/* One request of op on member: fail, remove, add, readd, and replace
 * (with: the member that replaces it). */
static int control_member_cmd(const char *cmd, const char *sock, const char *member,
                              const char *with, bool force, const char *array, uint8_t devflags)
{
	json_object *req = json_object_new_object(), *reply = NULL;
	int rc;

	if (devflags)
		json_object_object_add(req, "devflags", json_object_new_int(devflags));
	json_object_object_add(req, "op", json_object_new_string(cmd));
	json_object_object_add(req, "member", json_object_new_string(member));
	if (with)
		json_object_object_add(req, "with", json_object_new_string(with));
	if (force)
		json_object_object_add(req, "force", json_object_new_boolean(true));
	if (array)
		json_object_object_add(req, "array", json_object_new_string(array));
	rc = control_call(sock, req, &reply);
	if (rc == 0)
		rc = control_result(cmd, reply, false);
	json_object_put(req);
	json_object_put(reply);
	return rc;
}

int cmd_add_hot(const char *sock, const char *spec, bool force, const char *array, uint8_t devflags)
{
	return control_member_cmd("add", sock, spec, NULL, force, array, devflags);
}

int cmd_replace_hot(const char *sock, const char *old_spec, const char *new_spec, bool force,
                    const char *array)
{
	return control_member_cmd("replace", sock, old_spec, new_spec, force, array, 0);
}

int cmd_readd_hot(const char *sock, const char *spec)
{
	return control_member_cmd("readd", sock, spec, NULL, false, NULL, 0);
}

/* The array named name in a detail reply, or NULL. */
static json_object *detail_array(json_object *reply, const char *name)
{
	json_object *arr = jget(reply, "arrays");

	for (size_t i = 0; arr && i < json_object_array_length(arr); i++) {
		json_object *a = json_object_array_get_idx(arr, i);
		if (strcmp(jstr(a, "name"), name) == 0)
			return a;
	}
	return NULL;
}

/* Wait for the check of array name to end; print its outcome.  Exit code
 * as the offline check's. */
static int check_wait(const char *sock, const char *name)
{
	json_object *req = json_object_new_object(), *reply = NULL, *a = NULL;
	struct cli_progress prog;
	bool running = false;
	uint64_t from = 0, total = 0;
	int rc;

	json_object_object_add(req, "op", json_object_new_string("detail"));
	for (;;) {
		json_object_put(reply);
		reply = NULL;
		rc = control_call(sock, req, &reply);
		if (rc == 0)
			rc = control_result("check", reply, true);
		if (rc)
			goto out;
		a = detail_array(reply, name);
		if (!a) {
			fprintf(stderr, "uraid: check: %s is no longer served\n", name);
			rc = 1;
			goto out;
		}
		json_object *chk = jget(a, "check");
		if (!chk)
			break;
		if (json_object_get_boolean(jget(chk, "running"))) {
			uint64_t done = (uint64_t)jint(chk, "done");
			total = (uint64_t)jint(chk, "total");
			if (!running) {
				char label[96];
				snprintf(label, sizeof(label), "%s: %s", name, jstr(chk, "action"));
				cli_progress_begin(&prog, label);
				from = done;
				running = true;
			}
			cli_progress_show(&prog, done, from, total, false);
		}
		usleep(200 * 1000);
	}
	if (running)
		cli_progress_show(&prog, total, from, total, true);
	json_object *last = jget(a, "last_check");
	const char *status = jstr(last, "status");
	bool repair = strcmp(jstr(last, "action"), "repair") == 0;
	printf("%s: %s %s", name, repair ? "repair" : "check", *status ? status : "ended");
	if (strcmp(status, "failed") == 0)
		printf(" (%s; the server's log says more)", jstr(last, "error"));
	if (jint(last, "mismatched"))
		printf(": %lld bytes in %lld ranges differ%s", (long long)jint(last, "mismatched"),
		       (long long)jint(last, "ranges"), repair ? ", repaired" : "");
	else if (strcmp(status, "completed") == 0)
		printf(": the copies agree");
	if (jint(last, "read_errors"))
		printf(", %lld read errors", (long long)jint(last, "read_errors"));
	printf("\n");
	rc = strcmp(status, "completed") != 0 || jint(last, "read_errors") ||
	     (jint(last, "mismatched") && !repair);
out:
	json_object_put(req);
	json_object_put(reply);
	return rc;
}

int cmd_check_hot(const char *sock, const char *action, const char *array, bool wait)
{
	json_object *req = json_object_new_object(), *reply = NULL;
	int rc;

	json_object_object_add(req, "op", json_object_new_string("check"));
	json_object_object_add(req, "action", json_object_new_string(action));
	if (array)
		json_object_object_add(req, "array", json_object_new_string(array));
	rc = control_call(sock, req, &reply);
	if (rc == 0)
		rc = control_result("check", reply, wait);
	if (rc == 0 && wait && strcmp(action, "stop") != 0) {
		char name[64];
		snprintf(name, sizeof(name), "%s", jstr(reply, "array"));
		rc = check_wait(sock, name);
	}
	json_object_put(req);
	json_object_put(reply);
	return rc;
}

static const char *human(uint64_t bytes, char *buf, size_t len)
{
	if (bytes >= 1ull << 30)
		snprintf(buf, len, "%.2f GiB", (double)bytes / 1073741824.0);
	else
		snprintf(buf, len, "%.2f MiB", (double)bytes / 1048576.0);
	return buf;
}

static void detail_print_array(json_object *a)
{
	char h[32];
	json_object *rec = jget(a, "recovery"), *ms = jget(a, "members");
	size_t nm = ms ? json_object_array_length(ms) : 0;

	printf("%s:\n", jstr(a, "name"));
	if (*jstr(a, "parent"))
		printf("      Member of : %s\n", jstr(a, "parent"));
	printf("        Version : %s\n", jstr(a, "version"));
	printf("     Raid Level : %s\n", jstr(a, "level"));
	printf("     Array Size : %lld KiB (%s)\n", (long long)(jint(a, "array_size") >> 10),
	       human((uint64_t)jint(a, "array_size"), h, sizeof(h)));
	if (jint(a, "dev_size"))
		printf("  Used Dev Size : %lld KiB (%s)\n", (long long)(jint(a, "dev_size") >> 10),
		       human((uint64_t)jint(a, "dev_size"), h, sizeof(h)));
	printf("   Raid Devices : %lld\n", (long long)jint(a, "raid_disks"));
	printf("          State : %s\n", jstr(a, "state"));
	printf(" Active Devices : %lld\n", (long long)jint(a, "active_devices"));
	printf("Working Devices : %lld\n", (long long)jint(a, "working_devices"));
	printf(" Failed Devices : %lld\n", (long long)jint(a, "failed_devices"));
	printf("  Spare Devices : %lld\n", (long long)jint(a, "spare_devices"));
	if (*jstr(a, "layout"))
		printf("         Layout : %s\n", jstr(a, "layout"));
	if (jint(a, "chunk"))
		printf("     Chunk Size : %lldK\n", (long long)(jint(a, "chunk") >> 10));
	json_object *rsh = jget(a, "reshape");
	if (rsh) {
		/* mdadm --detail's lines, the new ones only where they change. */
		char ol[32];
		snprintf(ol, sizeof(ol), "%s", jstr(a, "layout"));
		printf(" Reshape Status : %d%% complete%s\n",
		       (int)json_object_get_double(jget(rsh, "percent")),
		       json_object_get_boolean(jget(rsh, "moving")) ? "" : " (not moving)");
		printf("  Delta Devices : %lld, (%lld->%lld)\n",
		       (long long)jint(rsh, "delta_devices"), (long long)jint(rsh, "from_devices"),
		       (long long)jint(rsh, "to_devices"));
		if (strcmp(jstr(rsh, "new_level"), jstr(a, "level")))
			printf("      New Level : %s\n", jstr(rsh, "new_level"));
		if (strcmp(jstr(rsh, "new_layout"), ol))
			printf("     New Layout : %s\n", jstr(rsh, "new_layout"));
		if (jint(rsh, "new_chunk") != jint(a, "chunk"))
			printf("  New Chunksize : %lldK\n",
			       (long long)(jint(rsh, "new_chunk") >> 10));
		printf(" New Array Size : %lld KiB (%s) once the reshape ends\n",
		       (long long)(jint(rsh, "new_size") >> 10),
		       human((uint64_t)jint(rsh, "new_size"), h, sizeof(h)));
		if (jint(rsh, "speed"))
			printf("  Reshape Speed : %.1f MiB/s\n",
			       (double)jint(rsh, "speed") / 1048576.0);
	}
	if (rec)
		printf(" Rebuild Status : %.1f%% complete (%.1f MiB/s)\n",
		       json_object_get_double(jget(rec, "percent")),
		       (double)jint(rec, "speed") / 1048576.0);
	json_object *ra = jget(a, "readd");
	if (ra)
		printf(
		    "        Re-adds : %lld, %lld bitmap chunks and %lld KiB resynced (last: %lld "
		    "chunks, %lld KiB), %lld refused\n",
		    (long long)jint(ra, "count"), (long long)jint(ra, "chunks"),
		    (long long)(jint(ra, "bytes") >> 10), (long long)jint(ra, "last_chunks"),
		    (long long)(jint(ra, "last_bytes") >> 10), (long long)jint(ra, "refusals"));
	json_object *chk = jget(a, "check"), *last = jget(a, "last_check");
	if (chk && json_object_get_boolean(jget(chk, "running")))
		printf("   Check Status : %s %.1f%% complete (%.1f MiB/s)\n", jstr(chk, "action"),
		       json_object_get_double(jget(chk, "percent")),
		       (double)jint(chk, "speed") / 1048576.0);
	else if (chk)
		printf("   Check Status : %s waiting for the recovery\n", jstr(chk, "action"));
	if (last)
		printf("     Last Check : %s %s, %lld bytes differ%s, %lld read errors\n",
		       jstr(last, "action"), jstr(last, "status"),
		       (long long)jint(last, "mismatched"),
		       jint(last, "mismatched") && !strcmp(jstr(last, "action"), "repair")
		           ? " (repaired)"
		           : "",
		       (long long)jint(last, "read_errors"));
	printf("           Name : %s\n", jstr(a, "set_name"));
	printf("           UUID : %s\n", jstr(a, "uuid"));
	printf("         Events : %lld\n\n", (long long)jint(a, "events"));
	printf("    Number   RaidDevice State\n");
	for (size_t i = 0; i < nm; i++) {
		json_object *m = json_object_array_get_idx(ms, i);
		char num[16] = "-", role[16] = "-";
		if (jint(m, "slot") >= 0)
			snprintf(num, sizeof(num), "%lld", (long long)jint(m, "slot"));
		if (jint(m, "role") >= 0)
			snprintf(role, sizeof(role), "%lld", (long long)jint(m, "role"));
		printf("    %6s   %10s %-17s %s\n", num, role, jstr(m, "state"), jstr(m, "device"));
	}
	/* The counters since the start (rates: --watch). */
	json_object *aio = jget(a, "io");
	printf(
	    "\n    I/O        reads     writes    read MiB written MiB  errors  qd  r_p50/p99us  "
	    "w_p50/p99us\n");
	printf("    %-6s %9lld %10lld %11.1f %11.1f %7lld\n", "array",
	       (long long)jint(aio, "reads"), (long long)jint(aio, "writes"),
	       (double)jint(aio, "read_bytes") / 1048576.0,
	       (double)jint(aio, "write_bytes") / 1048576.0, (long long)jint(aio, "errors"));
	for (size_t i = 0; i < nm; i++) {
		json_object *m = json_object_array_get_idx(ms, i), *io = jget(m, "io");
		json_object *lat = jget(io, "latency_us");
		char role[16], rl[32], wl[32];
		if (!io)
			continue;
		snprintf(role, sizeof(role), "role %lld", (long long)jint(m, "role"));
		snprintf(rl, sizeof(rl), "%lld/%lld", (long long)jint(jget(lat, "read"), "p50"),
		         (long long)jint(jget(lat, "read"), "p99"));
		snprintf(wl, sizeof(wl), "%lld/%lld", (long long)jint(jget(lat, "write"), "p50"),
		         (long long)jint(jget(lat, "write"), "p99"));
		printf("    %-6s %9lld %10lld %11.1f %11.1f %7lld %3lld %12s %12s\n", role,
		       (long long)jint(io, "reads"), (long long)jint(io, "writes"),
		       (double)jint(io, "read_bytes") / 1048576.0,
		       (double)jint(io, "write_bytes") / 1048576.0, (long long)jint(io, "errors"),
		       (long long)jint(io, "inflight"), rl, wl);
	}
	printf("\n");
}

static void detail_usage(FILE *f)
{
	fprintf(f, "usage: uraid detail [--json] CONTROL\n"
	           "       uraid detail --watch [--interval S] [--count N] CONTROL\n"
	           "Show the md arrays a running `uraid serve --control CONTROL` serves, as\n"
	           "mdadm --detail does: level, size, state, rebuild progress, members, and\n"
	           "each member's I/O counters (reads, writes, bytes, errors, in flight,\n"
	           "latency percentiles).\n"
	           "  --json          print the server's JSON reply as it is\n"
	           "  --watch         show rates every interval, one line per member and\n"
	           "                  array, as iostat and gstat do (redrawn on a terminal,\n"
	           "                  plain lines otherwise), until interrupted\n"
	           "  --interval S    seconds between two samples (default 1; 0.1 and up)\n"
	           "  --count N       stop after N samples\n");
}

int cmd_detail(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"json", no_argument, NULL, 'j'},           {"watch", no_argument, NULL, 'w'},
	    {"interval", required_argument, NULL, 'i'}, {"count", required_argument, NULL, 'c'},
	    {"help", no_argument, NULL, 'h'},           {0},
	};
	json_object *req, *reply = NULL;
	bool as_json = false, watch = false;
	double interval = 1;
	unsigned long count = 0;
	char *end;
	int c, rc;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			as_json = true;
			break;
		case 'w':
			watch = true;
			break;
		case 'i':
			interval = strtod(optarg, &end);
			if (*end || !(interval >= 0.1 && interval <= 86400)) {
				fprintf(stderr,
				        "uraid detail: --interval takes seconds, 0.1 and up\n");
				return 2;
			}
			break;
		case 'c':
			count = strtoul(optarg, &end, 10);
			if (*end || !count || count > 1000000) {
				fprintf(stderr, "uraid detail: --count takes 1 and up\n");
				return 2;
			}
			break;
		case 'h':
			detail_usage(stdout);
			return 0;
		default:
			return cli_usage_error("detail", NULL);
		}
	}
	if (argc - optind != 1)
		return cli_usage_error("detail", "give one control socket");
	if (watch && as_json) {
		fprintf(stderr, "uraid detail: --watch and --json exclude each other\n");
		return 2;
	}
	if (watch)
		return detail_watch(argv[optind], interval, (unsigned)count);
	req = json_object_new_object();
	json_object_object_add(req, "op", json_object_new_string("detail"));
	rc = control_call(argv[optind], req, &reply);
	json_object_put(req);
	if (rc)
		return rc;
	rc = control_result("detail", reply, true);
	if (rc == 0 && as_json) {
		printf("%s\n", json_object_to_json_string_ext(reply, JSON_C_TO_STRING_PRETTY));
	} else if (rc == 0) {
		json_object *ex = jget(reply, "export"), *arr = jget(reply, "arrays");
		char h[32];
		for (size_t i = 0; arr && i < json_object_array_length(arr); i++)
			detail_print_array(json_object_array_get_idx(arr, i));
		printf("Export %s: %lld bytes (%s)", jstr(ex, "name"), (long long)jint(ex, "size"),
		       human((uint64_t)jint(ex, "size"), h, sizeof(h)));
		if (jint(ex, "luks"))
			printf(", LUKS%lld on the array", (long long)jint(ex, "luks"));
		if (jget(ex, "connections"))
			printf(", %lld NBD connection%s", (long long)jint(ex, "connections"),
			       jint(ex, "connections") == 1 ? "" : "s");
		printf("\n");
	}
	json_object_put(reply);
	return rc;
}

static int member_cmd(int argc, char **argv, const char *what)
{
	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("usage: uraid %s CONTROL MEMBER\n%s\n", argv[0], what);
		return 0;
	}
	if (argc != 3) {
		fprintf(stderr, "usage: uraid %s CONTROL MEMBER\n", argv[0]);
		return 2;
	}
	return control_member_cmd(argv[0], argv[1], argv[2], NULL, false, NULL, 0);
}

int cmd_fail(int argc, char **argv)
{
	return member_cmd(
	    argc, argv,
	    "Mark MEMBER faulty in the array a running `uraid serve --control CONTROL`\n"
	    "serves (mdadm --fail); refused if the array cannot lose it.");
}

int cmd_remove(int argc, char **argv)
{
	return member_cmd(
	    argc, argv,
	    "Take a faulty or spare MEMBER out of the array a running `uraid serve\n"
	    "--control CONTROL` serves (mdadm --remove) and close it; an active member\n"
	    "must be failed first.");
}
