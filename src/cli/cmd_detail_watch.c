/* cmd_detail_watch.c — `uraid detail --watch`: the per-member counters of
 * a running serve (ctl/control.c's detail reply, raid.h's counters) as
 * rates over each interval, one line per member and one per array, as
 * iostat -x and gstat show disks: redrawn in place on a terminal, plain
 * lines with a time stamp otherwise. */
#include "cli.h"
#include "ctl/control.h"

#include "core/log.h"
#include "disc/raid/raid.h"

#include <json-c/json.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static json_object *wget(json_object *o, const char *key)
{
	json_object *v = NULL;
	return o && json_object_object_get_ex(o, key, &v) ? v : NULL;
}

static uint64_t wint(json_object *o, const char *key)
{
	return (uint64_t)json_object_get_int64(wget(o, key));
}

static const char *wstr(json_object *o, const char *key)
{
	json_object *v = wget(o, key);
	return v ? json_object_get_string(v) : "";
}

/* The member (or array: member NULL) named in prev's reply, or NULL. */
static json_object *watch_find(json_object *reply, const char *array, const char *member)
{
	json_object *arr = wget(reply, "arrays");

	for (size_t i = 0; arr && i < json_object_array_length(arr); i++) {
		json_object *a = json_object_array_get_idx(arr, i);
		if (strcmp(wstr(a, "name"), array) != 0)
			continue;
		if (!member)
			return a;
		json_object *ms = wget(a, "members");
		for (size_t k = 0; ms && k < json_object_array_length(ms); k++) {
			json_object *m = json_object_array_get_idx(ms, k);
			if (wget(m, "io") && strcmp(wstr(m, "device"), member) == 0)
				return m;
		}
	}
	return NULL;
}

/* The interval's latency percentile of op from two histograms. */
static uint64_t watch_p(json_object *now, json_object *then, const char *op, double p)
{
	uint64_t d[RAID_LAT_BUCKETS] = {0};
	json_object *hn = wget(wget(now, "latency_hist"), op);
	json_object *ht = then ? wget(wget(then, "latency_hist"), op) : NULL;

	for (unsigned b = 0; hn && b < RAID_LAT_BUCKETS && b < json_object_array_length(hn); b++) {
		uint64_t n = (uint64_t)json_object_get_int64(json_object_array_get_idx(hn, b));
		uint64_t t = ht && b < json_object_array_length(ht)
		                 ? (uint64_t)json_object_get_int64(json_object_array_get_idx(ht, b))
		                 : 0;
		d[b] = n >= t ? n - t : n;
	}
	return raid_lat_percentile(d, p);
}

static uint64_t delta(json_object *now, json_object *then, const char *key)
{
	uint64_t n = wint(now, key), t = then ? wint(then, key) : 0;
	return n >= t ? n - t : n; /* a new member in the role starts at 0 */
}

/* Names wider than the column show their end, where a path differs. */
static void watch_line(FILE *f, const char *stamp, int width, const char *name, json_object *now,
                       json_object *then, double secs, bool member)
{
	size_t nl = strlen(name);
	char shown[96];

	if ((int)nl > width)
		snprintf(shown, sizeof(shown), "%s..%s", member ? "  " : "",
		         name + nl - (size_t)width + (member ? 4 : 2));
	else
		snprintf(shown, sizeof(shown), "%s", name);
	char busy[32] = "", inflight[32] = "", lat[2][32] = {"", ""};

	if (member) {
		snprintf(busy, sizeof(busy), "%5.1f",
		         fmin(100.0, (double)delta(now, then, "busy_ns") / 1e7 / secs));
		snprintf(inflight, sizeof(inflight), "%llu",
		         (unsigned long long)wint(now, "inflight"));
		for (int w = 0; w < 2; w++) {
			uint64_t us = watch_p(now, then, w ? "write" : "read", 0.99);
			if (us)
				snprintf(lat[w], sizeof(lat[w]), "%llu", (unsigned long long)us);
			else
				snprintf(lat[w], sizeof(lat[w]), "-");
		}
	}
	fprintf(f, "%s%-*s %8.0f %8.0f %9.2f %9.2f %6s %4s %8s %8s %6llu\n", stamp, width, shown,
	        (double)delta(now, then, "reads") / secs, (double)delta(now, then, "writes") / secs,
	        (double)delta(now, then, "read_bytes") / 1048576.0 / secs,
	        (double)delta(now, then, "write_bytes") / 1048576.0 / secs, busy, inflight, lat[0],
	        lat[1], (unsigned long long)delta(now, then, "errors"));
}

static void watch_print(json_object *now, json_object *prev, double interval, bool tty)
{
	json_object *arr = wget(now, "arrays");
	char stamp[32] = "";
	time_t t = time(NULL);
	struct tm tm;

	localtime_r(&t, &tm);
	if (tty) {
		printf("\033[H\033[2J");
		strftime(stamp, sizeof(stamp), "%H:%M:%S", &tm);
		printf("uraid detail --watch, every %gs, %s\n", interval, stamp);
		stamp[0] = '\0';
	} else {
		strftime(stamp, sizeof(stamp), "%H:%M:%S ", &tm);
	}
	/* The name column fits the longest name, up to 60. */
	int width = 12;
	for (size_t i = 0; arr && i < json_object_array_length(arr); i++) {
		json_object *a = json_object_array_get_idx(arr, i), *ms = wget(a, "members");
		width = (int)fmax(width, (double)strlen(wstr(a, "name")));
		for (size_t k = 0; ms && k < json_object_array_length(ms); k++)
			width = (int)fmax(
			    width,
			    2.0 + (double)strlen(wstr(json_object_array_get_idx(ms, k), "device")));
	}
	width = width > 60 ? 60 : width;
	printf("%s%-*s %8s %8s %9s %9s %6s %4s %8s %8s %6s\n", stamp, width, "device", "r/s", "w/s",
	       "rMiB/s", "wMiB/s", "busy%", "qd", "r_p99us", "w_p99us", "errors");
	for (size_t i = 0; arr && i < json_object_array_length(arr); i++) {
		json_object *a = json_object_array_get_idx(arr, i), *ms = wget(a, "members");
		const char *an = wstr(a, "name");
		json_object *pa = watch_find(prev, an, NULL);
		double secs = pa ? (double)(wint(a, "time_ns") - wint(pa, "time_ns")) / 1e9 : 0;
		if (secs <= 0)
			secs = interval;
		watch_line(stdout, stamp, width, an, wget(a, "io"), pa ? wget(pa, "io") : NULL,
		           secs, false);
		for (size_t k = 0; ms && k < json_object_array_length(ms); k++) {
			json_object *m = json_object_array_get_idx(ms, k);
			if (!wget(m, "io"))
				continue;
			char name[300];
			snprintf(name, sizeof(name), "  %s", wstr(m, "device"));
			json_object *pm = watch_find(prev, an, wstr(m, "device"));
			watch_line(stdout, stamp, width, name, wget(m, "io"),
			           pm ? wget(pm, "io") : NULL, secs, true);
		}
	}
	fflush(stdout);
}

int detail_watch(const char *sock, double interval, unsigned count)
{
	json_object *req = json_object_new_object(), *prev = NULL, *reply = NULL;
	bool tty = isatty(STDOUT_FILENO);
	int rc = 0;

	json_object_object_add(req, "op", json_object_new_string("detail"));
	for (unsigned n = 0; count == 0 || n <= count; n++) {
		err_clear();
		int r = ctl_request(sock, req, &reply);
		if (r < 0) {
			/* The server went away: the watch ends there. */
			rc = n ? 0 : cli_fail("detail", r);
			break;
		}
		json_object *ok = wget(reply, "ok");
		if (!ok || !json_object_get_boolean(ok)) {
			fprintf(stderr, "uraid: detail: %s\n", wstr(reply, "error"));
			rc = 1;
			break;
		}
		if (prev)
			watch_print(reply, prev, interval, tty);
		json_object_put(prev);
		prev = reply;
		reply = NULL;
		if (count && n == count)
			break;
		struct timespec ts = {(time_t)interval, (long)((interval - floor(interval)) * 1e9)};
		while (nanosleep(&ts, &ts) != 0)
			;
	}
	json_object_put(reply);
	json_object_put(prev);
	json_object_put(req);
	return rc;
}
