/* control.c — the control socket of `uraid serve` (see control.h): parse a
 * JSON request, find the md array and member it names in the stack being
 * served (stack/stack.h opened it), call the md layer's management (md.h),
 * answer in JSON.  The clients, `uraid detail` and the rest, are
 * cli/cmd_control.c. */
#include "control.h"
#include "events.h"
#include "stack/stack.h"

#include "core/log.h"
#include "disc/part.h"
#include "luks/luks.h"
#include "lvm/lvm.h"
#include "md/md.h"
#include "md/md_bitmap_grow.h"
#include "md/md_reshape.h"
#include "md/md_takeover.h"
#include "member/member.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define CTL_MAX_ARRAYS 64
#define CTL_IO_TIMEOUT_S 5
#define CTL_MONITORS_MAX 16   /* `uraid monitor` clients at once */
#define CTL_MONITOR_QUEUE 128 /* events a monitor client may lag behind */

/* A `uraid monitor` client: its own queue (md_events.h's sink) and a
 * thread that writes it to the socket, so that a client that does not
 * read holds up only itself (its queue overflows, counted). */
struct ctl_monitor {
	bool used;
	int fd;
	struct ctl_evq q;
	pthread_t thread;
	atomic_bool done, stop;
};

struct ctl {
	const struct ctl_target *t;
	char path[PATH_MAX];
	int fd;
	int stop_pipe[2];
	pthread_t thread;
	struct ctl_monitor mon[CTL_MONITORS_MAX];
};

/* ---- the arrays of the stack ---- */

/* The md arrays in the stack, outermost first: t->md and, depth first,
 * the arrays among its members. */
struct ctl_arrays {
	struct vol *v[CTL_MAX_ARRAYS];
	struct vol *parent[CTL_MAX_ARRAYS];
	struct md_array_info info[CTL_MAX_ARRAYS];
	unsigned n;
};

static void ctl_arrays_walk(struct ctl_arrays *ca, struct vol *v, struct vol *parent)
{
	unsigned me = ca->n;

	if (ca->n == CTL_MAX_ARRAYS || md_array_info(v, &ca->info[me]) < 0)
		return;
	ca->v[me] = v;
	ca->parent[me] = parent;
	ca->n++;
	for (unsigned i = 0; i < ca->info[me].nmembers; i++) {
		struct vol *mv = ca->info[me].m[i].vol;
		if (mv && md_array_raid(mv))
			ctl_arrays_walk(ca, mv, v);
	}
}

static void ctl_arrays_load(const struct ctl_target *t, struct ctl_arrays *ca)
{
	ca->n = 0;
	if (t->md)
		ctl_arrays_walk(ca, t->md, NULL);
}

static void ctl_arrays_free(struct ctl_arrays *ca)
{
	for (unsigned i = 0; i < ca->n; i++)
		md_array_info_free(&ca->info[i]);
	ca->n = 0;
}

/* The array holding a member that spec names (the same string or the same
 * file) and that member's name there.  Returns the array's index or -1. */
static int ctl_find_member(struct ctl_arrays *ca, const char *spec, const char **name)
{
	for (int pass = 0; pass < 2; pass++)
		for (unsigned a = 0; a < ca->n; a++)
			for (unsigned i = 0; i < ca->info[a].nmembers; i++) {
				const char *mn = ca->info[a].m[i].name;
				if (!*mn)
					continue;
				if (pass == 0 ? strcmp(mn, spec) == 0
				              : stack_same_member(spec, mn)) {
					*name = mn;
					return (int)a;
				}
			}
	return -1;
}

/* ---- detail ---- */

static const char *ctl_state_name(enum md_member_state s)
{
	switch (s) {
	case MD_MEMBER_IN_SYNC:
		return "active sync";
	case MD_MEMBER_REBUILDING:
		return "spare rebuilding";
	case MD_MEMBER_SPARE:
		return "spare";
	case MD_MEMBER_FAULTY:
		return "faulty";
	case MD_MEMBER_REMOVED:
		return "removed";
	case MD_MEMBER_JOURNAL:
		return "journal"; /* mdadm --detail's word */
	}
	return "?";
}

static json_object *ctl_int(uint64_t v)
{
	return json_object_new_int64((int64_t)v);
}

/* A member's counters (raid.h): totals, busy time, latency percentiles
 * and the histograms themselves (for rates over an interval). */
static json_object *ctl_member_io_json(const struct raid_io_stats *io)
{
	json_object *o = json_object_new_object(), *lat = json_object_new_object();
	json_object *hist = json_object_new_object();
	static const char *const op[2] = {"read", "write"};

	json_object_object_add(o, "reads", ctl_int(io->ops[0]));
	json_object_object_add(o, "writes", ctl_int(io->ops[1]));
	json_object_object_add(o, "read_bytes", ctl_int(io->bytes[0]));
	json_object_object_add(o, "write_bytes", ctl_int(io->bytes[1]));
	json_object_object_add(o, "errors", ctl_int(io->errors));
	json_object_object_add(o, "inflight", ctl_int(io->inflight));
	json_object_object_add(o, "busy_ns", ctl_int(io->busy_ns));
	for (unsigned w = 0; w < 2; w++) {
		json_object *p = json_object_new_object(), *h = json_object_new_array();
		json_object_object_add(p, "p50", ctl_int(raid_lat_percentile(io->lat[w], 0.50)));
		json_object_object_add(p, "p90", ctl_int(raid_lat_percentile(io->lat[w], 0.90)));
		json_object_object_add(p, "p99", ctl_int(raid_lat_percentile(io->lat[w], 0.99)));
		json_object_object_add(lat, op[w], p);
		for (unsigned b = 0; b < RAID_LAT_BUCKETS; b++)
			json_object_array_add(h, ctl_int(io->lat[w][b]));
		json_object_object_add(hist, op[w], h);
	}
	json_object_object_add(o, "latency_us", lat);
	json_object_object_add(o, "latency_hist", hist);
	return o;
}

static json_object *ctl_array_json(const struct md_array_info *in, const char *parent)
{
	json_object *o = json_object_new_object(), *ms = json_object_new_array();
	const char *lvl = md_level_name(in->level);
	char state[64], layout[32];

	/* mdadm --detail's words: FAILED where too few members are left */
	const char *health = in->failed ? ", FAILED" : in->degraded ? ", degraded" : "";
	snprintf(state, sizeof(state), "%s%s%s%s", in->active ? "active" : "clean", health,
	         in->recovering ? ", recovering" : "", in->readonly ? ", read-only" : "");
	md_layout_name(in->level, in->layout, layout, sizeof(layout));
	json_object_object_add(o, "name", json_object_new_string(in->name));
	json_object_object_add(o, "set_name", json_object_new_string(in->set_name));
	json_object_object_add(o, "version", json_object_new_string(in->version));
	json_object_object_add(o, "uuid", json_object_new_string(in->uuid));
	json_object_object_add(o, "parent", parent ? json_object_new_string(parent) : NULL);
	json_object_object_add(o, "level", json_object_new_string(lvl ? lvl : "unknown"));
	json_object_object_add(o, "layout", json_object_new_string(layout));
	json_object_object_add(o, "chunk", json_object_new_int64((int64_t)in->chunk));
	json_object_object_add(o, "raid_disks", json_object_new_int((int)in->raid_disks));
	json_object_object_add(o, "array_size", json_object_new_int64((int64_t)in->array_size));
	json_object_object_add(o, "dev_size", json_object_new_int64((int64_t)in->dev_size));
	json_object_object_add(o, "events", json_object_new_int64((int64_t)in->events));
	json_object_object_add(o, "state", json_object_new_string(state));
	json_object_object_add(o, "active", json_object_new_boolean(in->active));
	json_object_object_add(o, "degraded", json_object_new_boolean(in->degraded));
	json_object_object_add(o, "failed", json_object_new_boolean(in->failed));
	json_object_object_add(o, "recovering", json_object_new_boolean(in->recovering));
	if (in->recovering) {
		json_object *rec = json_object_new_object();
		double pct =
		    in->rec_total ? 100.0 * (double)in->rec_done / (double)in->rec_total : 0;
		json_object_object_add(rec, "percent",
		                       json_object_new_double((int)(pct * 10) / 10.0));
		json_object_object_add(rec, "done", json_object_new_int64((int64_t)in->rec_done));
		json_object_object_add(rec, "total", json_object_new_int64((int64_t)in->rec_total));
		json_object_object_add(rec, "speed", json_object_new_int64((int64_t)in->rec_speed));
		json_object_object_add(o, "recovery", rec);
	}
	if (in->recovering && in->readding)
		json_object_object_add(json_object_object_get(o, "recovery"), "readd",
		                       json_object_new_boolean(true));
	if (in->readds || in->readd_refusals) {
		/* Re-adds from the write-intent bitmap since the start, and the
		 * members the rule turned away (another disk, a stale one). */
		json_object *ra = json_object_new_object();
		json_object_object_add(ra, "count", json_object_new_int((int)in->readds));
		json_object_object_add(ra, "chunks", ctl_int(in->readd_chunks));
		json_object_object_add(ra, "bytes", ctl_int(in->readd_bytes));
		json_object_object_add(ra, "last_chunks", ctl_int(in->readd_last_chunks));
		json_object_object_add(ra, "last_bytes", ctl_int(in->readd_last_bytes));
		json_object_object_add(ra, "refusals",
		                       json_object_new_int((int)in->readd_refusals));
		json_object_object_add(o, "readd", ra);
	}
	if (in->checking || in->check_pending) {
		json_object *chk = json_object_new_object();
		double pct =
		    in->check_total ? 100.0 * (double)in->check_done / (double)in->check_total : 0;
		json_object_object_add(
		    chk, "action", json_object_new_string(in->check_repair ? "repair" : "check"));
		json_object_object_add(chk, "running", json_object_new_boolean(in->checking));
		json_object_object_add(chk, "percent",
		                       json_object_new_double((int)(pct * 10) / 10.0));
		json_object_object_add(chk, "done", json_object_new_int64((int64_t)in->check_done));
		json_object_object_add(chk, "total",
		                       json_object_new_int64((int64_t)in->check_total));
		json_object_object_add(chk, "speed",
		                       json_object_new_int64((int64_t)in->check_speed));
		json_object_object_add(o, "check", chk);
	}
	if (in->check_ended) {
		json_object *last = json_object_new_object();
		const char *status = in->check_status == 0        ? "completed"
		                     : in->check_status == -EINTR ? "interrupted"
		                                                  : "failed";
		json_object_object_add(
		    last, "action",
		    json_object_new_string(in->check_ended_repair ? "repair" : "check"));
		json_object_object_add(last, "status", json_object_new_string(status));
		if (in->check_status < 0 && in->check_status != -EINTR)
			json_object_object_add(last, "error",
			                       json_object_new_string(strerror(-in->check_status)));
		json_object_object_add(last, "mismatched",
		                       json_object_new_int64((int64_t)in->check_mismatched));
		/* md's mismatch_cnt counts 512-byte sectors. */
		json_object_object_add(last, "mismatch_cnt",
		                       json_object_new_int64((int64_t)(in->check_mismatched >> 9)));
		json_object_object_add(last, "ranges",
		                       json_object_new_int64((int64_t)in->check_ranges));
		json_object_object_add(last, "repaired",
		                       json_object_new_int64((int64_t)in->check_repaired));
		json_object_object_add(last, "read_errors",
		                       json_object_new_int64((int64_t)in->check_read_errors));
		json_object_object_add(o, "last_check", last);
	}
	json_object_object_add(o, "active_devices", json_object_new_int((int)in->active_devs));
	json_object_object_add(o, "working_devices", json_object_new_int((int)in->working_devs));
	json_object_object_add(o, "failed_devices", json_object_new_int((int)in->failed_devs));
	json_object_object_add(o, "spare_devices", json_object_new_int((int)in->spare_devs));
	json_object *io = json_object_new_object();
	json_object_object_add(io, "reads", ctl_int(in->io.ops[0]));
	json_object_object_add(io, "writes", ctl_int(in->io.ops[1]));
	json_object_object_add(io, "read_bytes", ctl_int(in->io.bytes[0]));
	json_object_object_add(io, "write_bytes", ctl_int(in->io.bytes[1]));
	json_object_object_add(io, "errors", ctl_int(in->io.errors));
	json_object_object_add(o, "io", io);
	json_object_object_add(o, "time_ns", ctl_int(in->now_ns));
	for (unsigned i = 0; i < in->nmembers; i++) {
		const struct md_member_info *mi = &in->m[i];
		json_object *m = json_object_new_object();
		json_object_object_add(m, "role", json_object_new_int(mi->role));
		json_object_object_add(m, "slot", json_object_new_int(mi->slot));
		json_object_object_add(m, "state",
		                       json_object_new_string(ctl_state_name(mi->state)));
		json_object_object_add(m, "device", json_object_new_string(mi->name));
		if (mi->has_io)
			json_object_object_add(m, "io", ctl_member_io_json(&mi->io));
		json_object_array_add(ms, m);
	}
	json_object_object_add(o, "members", ms);
	return o;
}

/* A reshape under way on v into its detail object o, as mdadm --detail
 * shows one ("reshaping" in the state, the progress, the delta and what
 * changes), and the array's sizes before and after. */
static void ctl_reshape_json(struct vol *v, json_object *o)
{
	struct md_reshape_info ri;
	json_object *rs, *st;
	char buf[96], layout[32];

	if (md_array_reshape_info(v, &ri) < 0)
		return;
	rs = json_object_new_object();
	/* Backwards the position comes down from the end (md's sync_completed
	 * counts up either way). */
	uint64_t done = ri.backwards && ri.pos <= ri.total ? ri.total - ri.pos : ri.pos;
	double pct = ri.total ? 100.0 * (double)done / (double)ri.total : 0;
	json_object_object_add(rs, "percent", json_object_new_double((int)(pct * 10) / 10.0));
	json_object_object_add(rs, "done", ctl_int(done));
	json_object_object_add(rs, "total", ctl_int(ri.total));
	json_object_object_add(rs, "moving", json_object_new_boolean(ri.moving));
	json_object_object_add(rs, "backwards", json_object_new_boolean(ri.backwards));
	json_object_object_add(rs, "speed", ctl_int((uint64_t)ri.speed));
	json_object_object_add(rs, "delta_devices",
	                       json_object_new_int((int)ri.to_disks - (int)ri.from_disks));
	json_object_object_add(rs, "from_devices", json_object_new_int((int)ri.from_disks));
	json_object_object_add(rs, "to_devices", json_object_new_int((int)ri.to_disks));
	const char *lvl = md_level_name(ri.new_level);
	json_object_object_add(rs, "new_level", json_object_new_string(lvl ? lvl : "unknown"));
	md_layout_name(ri.new_level, ri.new_layout, layout, sizeof(layout));
	json_object_object_add(rs, "new_layout", json_object_new_string(layout));
	json_object_object_add(rs, "new_chunk", ctl_int(ri.new_chunk));
	json_object_object_add(rs, "old_size", ctl_int(ri.old_size));
	json_object_object_add(rs, "new_size", ctl_int(ri.new_size));
	json_object_object_add(o, "reshape", rs);
	if (json_object_object_get_ex(o, "state", &st)) {
		snprintf(buf, sizeof(buf), "%s, reshaping", json_object_get_string(st));
		json_object_object_add(o, "state", json_object_new_string(buf));
	}
}

static json_object *ctl_detail(const struct ctl_target *t)
{
	struct ctl_arrays *ca = calloc(1, sizeof(*ca));
	json_object *o = json_object_new_object(), *ex = json_object_new_object();
	json_object *arr = json_object_new_array();

	json_object_object_add(o, "ok", json_object_new_boolean(true));
	json_object_object_add(ex, "name", json_object_new_string(t->top->name));
	json_object_object_add(ex, "size", json_object_new_int64((int64_t)t->top->size));
	json_object_object_add(ex, "luks", json_object_new_int(t->luks));
	json_object_object_add(ex, "connections",
	                       t->connections ? json_object_new_int((int)t->connections(t->ctx))
	                                      : NULL);
	json_object_object_add(o, "export", ex);
	if (ca) {
		ctl_arrays_load(t, ca);
		for (unsigned i = 0; i < ca->n; i++) {
			const char *parent = NULL;
			for (unsigned j = 0; j < i; j++)
				if (ca->v[j] == ca->parent[i])
					parent = ca->info[j].name;
			json_object *ao = ctl_array_json(&ca->info[i], parent);
			ctl_reshape_json(ca->v[i], ao);
			json_object_array_add(arr, ao);
		}
		ctl_arrays_free(ca);
		free(ca);
	}
	json_object_object_add(o, "arrays", arr);
	return o;
}

/* ---- fail, remove, add ---- */

/* {"ok":true,"message":...} or {"ok":false,"error":...}. */
static json_object *ctl_vreply(bool ok, const char *fmt, va_list ap)
{
	json_object *o = json_object_new_object();
	char msg[1024];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	json_object_object_add(o, "ok", json_object_new_boolean(ok));
	json_object_object_add(o, ok ? "message" : "error", json_object_new_string(msg));
	return o;
}

static json_object *ctl_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static json_object *ctl_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	json_object *o = ctl_vreply(false, fmt, ap);
	va_end(ap);
	return o;
}

static json_object *ctl_ok(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static json_object *ctl_ok(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	json_object *o = ctl_vreply(true, fmt, ap);
	va_end(ap);
	return o;
}

/* fail, remove or re-add the member spec names. */
static json_object *ctl_member_op(const struct ctl_target *t, const char *op, const char *spec)
{
	struct ctl_arrays *ca = calloc(1, sizeof(*ca));
	json_object *reply;
	const char *name = NULL;
	int r;

	if (!ca)
		return ctl_error("out of memory");
	ctl_arrays_load(t, ca);
	int ai = ctl_find_member(ca, spec, &name);
	if (ai < 0 && strcmp(op, "readd") == 0 && ca->n) {
		/* A member the array no longer holds: opened, and its own
		 * superblock says which array and role it had. */
		struct vol *nv = NULL;
		err_clear();
		r = member_open(spec, t->member_flags, &nv);
		for (unsigned i = 0; r == 0 && i < ca->n; i++) {
			err_clear();
			r = md_array_readd_vol(ca->v[i], nv);
			if (r == 0) {
				reply =
				    ctl_ok("%s: %s is re-added: the chunks its write-intent bitmap "
				           "marks dirty are resynced onto it while serving",
				           ca->info[i].name, spec);
				goto out;
			}
			if (ca->n > 1 && i + 1 < ca->n)
				r = 0; /* maybe the next array's */
		}
		vol_close(nv);
		reply = ctl_error("%s", err_detail(r));
		goto out;
	}
	if (ai < 0) {
		reply = ca->n ? ctl_error("%s is not a member of any md array served here", spec)
		              : ctl_error("no md array is served here");
		goto out;
	}
	err_clear();
	if (strcmp(op, "fail") == 0)
		r = md_array_fail(ca->v[ai], name);
	else if (strcmp(op, "readd") == 0)
		r = md_array_readd(ca->v[ai], name);
	else
		r = md_array_remove(ca->v[ai], name);
	if (r < 0)
		reply = ctl_error("%s", err_detail(r));
	else
		reply = ctl_ok("%s: %s %s", ca->info[ai].name, name,
		               strcmp(op, "fail") == 0 ? "is faulty"
		               : strcmp(op, "readd") == 0
		                   ? "re-added: the chunks its write-intent bitmap marks dirty are "
		                     "resynced onto it while serving"
		                   : "removed");
out:
	ctl_arrays_free(ca);
	free(ca);
	return reply;
}

static json_object *ctl_add(const struct ctl_target *t, const char *spec, const char *array,
                            bool force, uint8_t devflags)
{
	struct ctl_arrays *ca = calloc(1, sizeof(*ca));
	struct vol *nv = NULL;
	json_object *reply;
	const char *name;
	int ai = -1, r;

	if (!ca)
		return ctl_error("out of memory");
	ctl_arrays_load(t, ca);
	if (!ca->n) {
		reply = ctl_error("no md array is served here");
		goto out;
	}
	if (ctl_find_member(ca, spec, &name) >= 0) {
		reply = ctl_error("%s is already a member of an array served here (a failed one "
		                  "comes back with `uraid add --re-add`)",
		                  spec);
		goto out;
	}
	if (array) {
		for (unsigned i = 0; i < ca->n && ai < 0; i++)
			if (strcmp(ca->info[i].name, array) == 0)
				ai = (int)i;
		if (ai < 0) {
			reply = ctl_error("no md array %s is served here", array);
			goto out;
		}
	} else if (ca->n == 1) {
		ai = 0;
	} else {
		/* The array that misses a member, if only one does. */
		for (unsigned i = 0; i < ca->n; i++)
			if (ca->info[i].degraded && ca->info[i].raid_disks) {
				if (ai >= 0) {
					ai = -2;
					break;
				}
				ai = (int)i;
			}
		if (ai < 0) {
			reply = ctl_error("%u md arrays are served here: say which one takes %s "
			                  "(--array md/NAME)",
			                  ca->n, spec);
			goto out;
		}
	}
	err_clear();
	r = member_open(spec, t->member_flags, &nv);
	if (r < 0) {
		reply = ctl_error("%s", err_detail(r));
		goto out;
	}
	err_clear();
	r = md_array_add(ca->v[ai], nv, force, devflags);
	if (r < 0) {
		vol_close(nv);
		reply = ctl_error("%s", err_detail(r));
		goto out;
	}
	reply = ctl_ok("%s: %s added as a spare; it takes a missing role and is rebuilt "
	               "while serving",
	               ca->info[ai].name, spec);
out:
	ctl_arrays_free(ca);
	free(ca);
	return reply;
}

/* mdadm --replace OLD --with NEW on the array holding OLD (the member
 * spec names). */
static json_object *ctl_replace(const struct ctl_target *t, const char *spec, const char *with,
                                const char *array, bool force)
{
	struct ctl_arrays *ca = calloc(1, sizeof(*ca));
	struct vol *nv = NULL;
	json_object *reply;
	const char *name = NULL, *other;
	int ai, r;

	if (!ca)
		return ctl_error("out of memory");
	ctl_arrays_load(t, ca);
	ai = ctl_find_member(ca, spec, &name);
	if (ai < 0 || (array && strcmp(ca->info[ai].name, array) != 0)) {
		reply = ca->n ? ctl_error("%s is not a member of %s served here", spec,
		                          array ? array : "any md array")
		              : ctl_error("no md array is served here");
		goto out;
	}
	if (ctl_find_member(ca, with, &other) >= 0) {
		reply = ctl_error("%s is already a member of an array served here", with);
		goto out;
	}
	err_clear();
	r = member_open(with, t->member_flags, &nv);
	if (r == 0) {
		err_clear();
		r = md_array_replace(ca->v[ai], name, nv, force);
		if (r < 0)
			vol_close(nv);
	}
	if (r < 0)
		reply = ctl_error("%s", err_detail(r));
	else
		reply = ctl_ok("%s: %s replaces %s: built from it while serving, then %s is "
		               "marked faulty",
		               ca->info[ai].name, with, name, name);
out:
	ctl_arrays_free(ca);
	free(ca);
	return reply;
}

static const char *ctl_str(json_object *req, const char *key);

/* The array a request names (array: md/NAME, or NULL for the one array
 * served whose level is one of the levels[0..nlevels), or of any with
 * nlevels 0): its index, or -1 with *reply set. */
static int ctl_pick_array(struct ctl_arrays *ca, const char *array, const char *what,
                          const int *levels, unsigned nlevels, json_object **reply)
{
	int ai = -1;

	for (unsigned i = 0; i < ca->n; i++) {
		bool kind = !nlevels;
		for (unsigned k = 0; k < nlevels; k++)
			kind |= ca->info[i].level == levels[k];
		if (array ? strcmp(ca->info[i].name, array) == 0 : kind) {
			if (ai >= 0 && !array) {
				*reply = ctl_error("%u md arrays are served here: say which one %s "
				                   "(--array md/NAME)",
				                   ca->n, what);
				return -1;
			}
			ai = (int)i;
		}
	}
	if (ai < 0)
		*reply = array   ? ctl_error("no md array %s is served here", array)
		         : ca->n ? ctl_error("no %s array is served here %s",
		                             nlevels > 4 ? "raid0, raid4, raid5, raid6 or raid10"
		                                         : "raid4, raid5, raid6 or raid10",
		                             what)
		                 : ctl_error("no md array is served here");
	return ai;
}

/* Whether what the md array v holds at its start fits in s bytes, for a
 * shrink while serving (md serves --array-size from the shrink's start
 * on): a LUKS header's data segment (LUKS1, and a LUKS2 segment to the
 * device's end, take all of it: refused), an LVM2 PV (refused: its
 * extents are pvresize's to move), a partition table's partitions (the
 * last one's end).  A file system straight on the array is not looked
 * at, as mdadm looks at nothing.  0, or -errno with err_set() naming the
 * layer. */
static int ctl_grow_claim_fits(struct vol *v, uint64_t s, const char *name)
{
	struct luks_hdr *h = NULL;
	struct part_table *pt = NULL;
	uint64_t end = 0;
	int r;

	err_clear();
	if ((r = luks_probe(v)) > 0 && (r = luks_load(v, &h)) == 0) {
		end = h->seg.size ? h->seg.offset + h->seg.size : UINT64_MAX;
		r = h->version;
		luks_hdr_free(h);
		if (end == UINT64_MAX)
			return err_set(
			    -EBUSY,
			    "%s: LUKS%d on it takes the array to its end (the data "
			    "segment is dynamic): a shrink would cut off the end of what "
			    "it holds; not shrunk",
			    name, r);
		if (end > s)
			return err_set(-ENOSPC,
			               "%s: the LUKS%d data segment on it ends at %lluK, past "
			               "--array-size %lluK; not shrunk",
			               name, r, (unsigned long long)end / 1024,
			               (unsigned long long)s / 1024);
		return 0;
	}
	if (r < 0)
		return err_set(r, "%s: LUKS: %s; not shrunk", name, err_detail(r));
	if ((r = lvm_probe(v)) != 0)
		return err_set(r < 0 ? r : -EBUSY,
		               "%s: it holds an LVM2 PV%s: shrink the PV first (pvresize "
		               "--setphysicalvolumesize); not shrunk while serving",
		               name, r < 0 ? " (damaged)" : "");
	if ((r = part_scan(v, &pt)) < 0)
		return err_set(r, "%s: %s; not shrunk", name, err_detail(r));
	for (unsigned i = 0; r > 0 && i < pt->n; i++) {
		const struct part *p = &pt->parts[i];
		if (p->start + p->size > s) {
			r = err_set(-ENOSPC,
			            "%s: %s partition %u on it ends at %lluK, past --array-size "
			            "%lluK; not shrunk",
			            name, pt->scheme, p->number,
			            (unsigned long long)(p->start + p->size) / 1024,
			            (unsigned long long)s / 1024);
			break;
		}
	}
	if (r > 0 && strcmp(pt->scheme, "gpt") == 0)
		log_warn("%s: the backup GPT header at the array's end is cut off: `sgdisk -e` "
		         "writes it again at the new end",
		         name);
	part_table_free(pt);
	return r < 0 ? r : 0;
}

/* The control op "grow": reshape a served RAID4/5/6/10 (a raid0 through a
 * raid4) to raid_disks devices, the members add names taking the new roles
 * (mdadm --grow --raid-devices --add), change its chunk or layout, shrink
 * it, or change its level (md's takeovers), online. */
static json_object *ctl_grow(const struct ctl_target *t, json_object *in)
{
	struct ctl_arrays *ca = calloc(1, sizeof(*ca));
	json_object *add = NULL, *f;
	struct vol *nv[CTL_MAX_ARRAYS] = {NULL};
	struct md_reshape_to to = {0};
	json_object *reply = NULL;
	const char *name, *layout = ctl_str(in, "layout"), *lname = ctl_str(in, "level");
	size_t nnew = 0;
	int ai, r = 0, n = 0, chunk = 0, level = 0;
	int64_t asize = 0;
	/* What a reshape takes (a raid0 grows through raid4); a level
	 * change any level. */
	static const int reshaped[] = {4, 5, 6, 10, 0};

	if (!ca)
		return ctl_error("out of memory");
	if (json_object_object_get_ex(in, "raid_devices", &f) &&
	    json_object_is_type(f, json_type_int))
		n = json_object_get_int(f);
	if (json_object_object_get_ex(in, "chunk", &f) && json_object_is_type(f, json_type_int))
		chunk = json_object_get_int(f);
	if (json_object_object_get_ex(in, "array_size", &f) &&
	    json_object_is_type(f, json_type_int))
		asize = json_object_get_int64(f);
	if (json_object_object_get_ex(in, "add", &add) && json_object_is_type(add, json_type_array))
		nnew = json_object_array_length(add);
	if (lname && md_level_parse(lname, &level) < 0) {
		reply = ctl_error("grow: level %.32s: not an md level", lname);
		goto out;
	}
	if (n < 0 || n >= (int)MD_SB_MAX_DEV || chunk < 0 || chunk > (1 << 20) || asize < 0 ||
	    asize > (INT64_MAX >> 11) || nnew > CTL_MAX_ARRAYS ||
	    (!n && !chunk && !layout && !lname) || (lname && (chunk || asize))) {
		reply = ctl_error("grow needs \"raid_devices\" (a device count) with \"add\" (at "
		                  "most %u members), \"chunk\" (KiB), \"layout\" (a name) or "
		                  "\"level\" (with \"layout\", \"raid_devices\", \"add\" only)",
		                  CTL_MAX_ARRAYS);
		goto out;
	}
	ctl_arrays_load(t, ca);
	ai = ctl_pick_array(ca, ctl_str(in, "array"), lname ? "to take over" : "to reshape",
	                    reshaped,
	                    lname       ? 0
	                    : n && nnew ? 5
	                                : 4,
	                    &reply);
	if (ai < 0)
		goto out;
	to.raid_disks = (unsigned)n;
	to.chunk = (uint32_t)chunk * 2;
	to.array_size = (uint64_t)asize * 2;
	if (!lname && n && (unsigned)n < ca->info[ai].raid_disks && ca->parent[ai]) {
		reply = ctl_error("%s is a member of %s: a shrink would cut off the end of that "
		                  "array's member; not shrunk",
		                  ca->info[ai].name, ca->parent[ai]->name);
		goto out;
	}
	if (!lname && n && (unsigned)n < ca->info[ai].raid_disks && asize &&
	    (r = ctl_grow_claim_fits(ca->v[ai], to.array_size * 512, ca->info[ai].name)) < 0) {
		reply = ctl_error("%s", err_detail(r));
		goto out;
	}
	to.layout_set = layout != NULL;
	if (!lname && layout && md_layout_parse(ca->info[ai].level, layout, &to.layout) < 0) {
		reply = ctl_error("%s: layout %.32s: not a %s layout", ca->info[ai].name, layout,
		                  md_level_name(ca->info[ai].level));
		goto out;
	}
	for (size_t i = 0; i < nnew && r == 0; i++) {
		json_object *e = json_object_array_get_idx(add, i);
		const char *spec =
		    json_object_is_type(e, json_type_string) ? json_object_get_string(e) : NULL;
		if (!spec || !*spec) {
			reply = ctl_error("grow: \"add\" holds member names (strings)");
			goto out;
		}
		if (ctl_find_member(ca, spec, &name) >= 0) {
			reply = ctl_error("%s is already a member of an array served here", spec);
			goto out;
		}
		for (size_t j = 0; j < i; j++)
			if (stack_same_member(spec, nv[j]->name)) {
				reply = ctl_error("%s is given twice", spec);
				goto out;
			}
		err_clear();
		r = member_open(spec, t->member_flags, &nv[i]);
	}
	bool force = json_object_object_get_ex(in, "force", &f) && json_object_get_boolean(f);
	if (r == 0) {
		err_clear();
		r = lname ? md_array_takeover(ca->v[ai], level, layout, (unsigned)n, nv,
		                              (unsigned)nnew, force)
		          : md_array_restripe(ca->v[ai], &to, nv, (unsigned)nnew, force);
	}
	if (r < 0) {
		reply = ctl_error("%s", err_detail(r));
		goto out;
	}
	memset(nv, 0, sizeof(nv)); /* the array's now */
	if (lname)
		reply = ctl_ok(
		    "%s: %s -> %s while serving%s (`uraid detail` shows it)", ca->info[ai].name,
		    md_level_name(ca->info[ai].level), md_level_name(level),
		    n && (unsigned)n != ca->info[ai].raid_disks ? ", then reshaping to more devices"
		    : nnew                                      ? ", the new member being rebuilt"
		                                                : "");
	else if (ca->info[ai].level == 0)
		reply = ctl_ok("%s: raid0 %u -> %u devices while serving, through a raid5 with its "
		               "parity missing (`uraid detail` shows the reshape)",
		               ca->info[ai].name, ca->info[ai].raid_disks, (unsigned)n);
	else
		reply =
		    ctl_ok("%s: reshaping %u -> %u devices%s%s while serving (`uraid detail` shows "
		           "its progress)",
		           ca->info[ai].name, ca->info[ai].raid_disks,
		           n ? (unsigned)n : ca->info[ai].raid_disks, chunk ? ", new chunk" : "",
		           layout ? ", new layout" : "");
	json_object_object_add(reply, "array", json_object_new_string(ca->info[ai].name));
out:
	for (size_t i = 0; i < nnew && i < CTL_MAX_ARRAYS; i++)
		vol_close(nv[i]);
	ctl_arrays_free(ca);
	free(ca);
	return reply;
}

/* Add ("bitmap": "internal", with "chunk" bytes and "write_behind") or
 * remove ("none") the write-intent bitmap of the array named "array", or
 * of the one array served (mdadm --grow --bitmap, online). */
static json_object *ctl_bitmap(const struct ctl_target *t, json_object *in)
{
	struct ctl_arrays *ca = calloc(1, sizeof(*ca));
	const char *how = ctl_str(in, "bitmap"), *array = ctl_str(in, "array");
	struct md_bitmap_grow_opts o = {0};
	json_object *reply = NULL, *f;
	int ai = -1, r;

	if (!ca)
		return ctl_error("out of memory");
	if (!how || (strcmp(how, "internal") != 0 && strcmp(how, "none") != 0)) {
		reply = ctl_error("bitmap needs \"bitmap\": \"internal\" or \"none\"");
		goto out;
	}
	o.add = strcmp(how, "internal") == 0;
	if (json_object_object_get_ex(in, "chunk", &f))
		o.chunk = (uint64_t)json_object_get_int64(f);
	if (json_object_object_get_ex(in, "write_behind", &f))
		o.write_behind = (uint32_t)json_object_get_int(f);
	if (o.chunk && (o.chunk < 4096 || (o.chunk & (o.chunk - 1)) || o.chunk > (1u << 30))) {
		reply = ctl_error("bitmap: \"chunk\" is a power of two from 4096 to 1 GiB");
		goto out;
	}
	ctl_arrays_load(t, ca);
	for (unsigned i = 0; i < ca->n; i++)
		if (array ? strcmp(ca->info[i].name, array) == 0 : ca->n == 1)
			ai = (int)i;
	if (ai < 0) {
		reply = array   ? ctl_error("no md array %s is served here", array)
		        : ca->n ? ctl_error("%u md arrays are served here: say which one (--array "
		                            "md/NAME)",
		                            ca->n)
		                : ctl_error("no md array is served here");
		goto out;
	}
	err_clear();
	r = md_array_bitmap(ca->v[ai], &o);
	reply = r < 0 ? ctl_error("%s", err_detail(r))
	              : ctl_ok("%s: write-intent bitmap %s", ca->info[ai].name,
	                       o.add ? "added" : "removed");
out:
	ctl_arrays_free(ca);
	free(ca);
	return reply;
}

/* Start (or stop) a check of the array named array, or of the one array
 * with redundancy served here. */
static json_object *ctl_check(const struct ctl_target *t, const char *action, const char *array)
{
	struct ctl_arrays *ca;
	enum md_check_action act;
	json_object *reply;
	int ai = -1, r;

	if (!action || strcmp(action, "check") == 0)
		act = MD_CHECK_CHECK;
	else if (strcmp(action, "repair") == 0)
		act = MD_CHECK_REPAIR;
	else if (strcmp(action, "stop") == 0)
		act = MD_CHECK_STOP;
	else
		return ctl_error("unknown check action \"%.32s\" (check, repair, stop)", action);
	ca = calloc(1, sizeof(*ca));
	if (!ca)
		return ctl_error("out of memory");
	ctl_arrays_load(t, ca);
	for (unsigned i = 0; i < ca->n; i++) {
		bool redundant = md_level_redundant(ca->info[i].level);
		if (array ? strcmp(ca->info[i].name, array) != 0 : !redundant)
			continue;
		if (ai >= 0) {
			reply = ctl_error("%u md arrays with redundancy are served here: say "
			                  "which one (--array md/NAME)",
			                  ca->n);
			goto out;
		}
		ai = (int)i;
	}
	if (ai < 0) {
		reply = array   ? ctl_error("no md array %s is served here", array)
		        : ca->n ? ctl_error("no md array served here keeps copies or parity")
		                : ctl_error("no md array is served here");
		goto out;
	}
	err_clear();
	r = md_array_check(ca->v[ai], act);
	if (r < 0)
		reply = ctl_error("%s", err_detail(r));
	else if (act == MD_CHECK_STOP)
		reply = ctl_ok("%s: check stopped", ca->info[ai].name);
	else
		reply = ctl_ok("%s: %s started while serving (`uraid detail` shows it)",
		               ca->info[ai].name, act == MD_CHECK_REPAIR ? "repair" : "check");
	if (r == 0)
		json_object_object_add(reply, "array", json_object_new_string(ca->info[ai].name));
out:
	ctl_arrays_free(ca);
	free(ca);
	return reply;
}

static const char *ctl_str(json_object *req, const char *key)
{
	json_object *v;

	if (!json_object_object_get_ex(req, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

char *ctl_handle(const struct ctl_target *t, const char *req, size_t len)
{
	json_tokener *tok = json_tokener_new();
	json_object *in = NULL, *reply;
	const char *op, *member;
	char *out;

	if (!tok)
		return NULL;
	while (len > 0 && (req[len - 1] == '\n' || req[len - 1] == '\r'))
		len--;
	if (len > CTL_REQ_MAX) {
		reply = ctl_error("request too long (more than %u bytes)", CTL_REQ_MAX);
		goto answer;
	}
	in = json_tokener_parse_ex(tok, req, (int)len);
	if (!in || json_tokener_get_error(tok) != json_tokener_success ||
	    json_tokener_get_parse_end(tok) != len || !json_object_is_type(in, json_type_object)) {
		reply = ctl_error("malformed request: one JSON object expected, such as "
		                  "{\"op\":\"detail\"}");
		goto answer;
	}
	op = ctl_str(in, "op");
	member = ctl_str(in, "member");
	if (!op) {
		reply = ctl_error("malformed request: no \"op\" string");
	} else if (strcmp(op, "detail") == 0) {
		reply = ctl_detail(t);
	} else if (strcmp(op, "fail") == 0 || strcmp(op, "remove") == 0 || strcmp(op, "add") == 0 ||
	           strcmp(op, "readd") == 0) {
		json_object *f;
		bool force =
		    json_object_object_get_ex(in, "force", &f) && json_object_get_boolean(f);
		if (!member || !*member)
			reply = ctl_error("%s needs a \"member\" string", op);
		else if (strcmp(op, "add") == 0)
			reply =
			    ctl_add(t, member, ctl_str(in, "array"), force,
			            json_object_object_get_ex(in, "devflags", &f)
			                ? (uint8_t)(json_object_get_int(f) &
			                            (MD_DEVFLAG_WRITE_MOSTLY | MD_DEVFLAG_FAILFAST))
			                : 0);
		else
			reply = ctl_member_op(t, op, member);
	} else if (strcmp(op, "replace") == 0) {
		json_object *f;
		const char *with = ctl_str(in, "with");
		bool force =
		    json_object_object_get_ex(in, "force", &f) && json_object_get_boolean(f);
		if (!member || !*member || !with || !*with)
			reply = ctl_error("replace needs \"member\" and \"with\" strings");
		else
			reply = ctl_replace(t, member, with, ctl_str(in, "array"), force);
	} else if (strcmp(op, "check") == 0) {
		reply = ctl_check(t, ctl_str(in, "action"), ctl_str(in, "array"));
	} else if (strcmp(op, "grow") == 0) {
		reply = ctl_grow(t, in);
	} else if (strcmp(op, "bitmap") == 0) {
		reply = ctl_bitmap(t, in);
	} else if (strcmp(op, "monitor") == 0) {
		/* The socket's own loop streams it (ctl_monitor_begin). */
		reply =
		    ctl_error("monitor streams events: it is served on a connection of its own");
	} else {
		reply = ctl_error(
		    "unknown op \"%.64s\" (detail, fail, remove, add, readd, check, grow, bitmap, "
		    "monitor)",
		    op);
	}
answer:
	json_object_put(in);
	json_tokener_free(tok);
	if (!reply)
		return NULL;
	const char *s = json_object_to_json_string_ext(reply, JSON_C_TO_STRING_PLAIN);
	out = s ? strdup(s) : NULL;
	json_object_put(reply);
	return out;
}

/* ---- monitor: events as JSON lines ---- */

void ctl_events_test(const struct ctl_target *t)
{
	struct ctl_arrays *ca = calloc(1, sizeof(*ca));

	if (!ca)
		return;
	ctl_arrays_load(t, ca);
	for (unsigned i = 0; i < ca->n; i++)
		md_event_test(ca->v[i]);
	ctl_arrays_free(ca);
	free(ca);
}

/* Whether req is {"op":"monitor"[,"test":true]}. */
static bool ctl_monitor_request(const char *req, size_t len, bool *test)
{
	json_object *in = len <= CTL_REQ_MAX ? json_tokener_parse(req) : NULL, *v;
	const char *op = in && json_object_is_type(in, json_type_object) ? ctl_str(in, "op") : NULL;
	bool mon = op && strcmp(op, "monitor") == 0;

	*test = mon && json_object_object_get_ex(in, "test", &v) && json_object_get_boolean(v);
	json_object_put(in);
	return mon;
}

static int ctl_send_all(int fd, const char *buf, size_t n)
{
	for (size_t off = 0; off < n;) {
		ssize_t w = send(fd, buf + off, n - off, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		off += (size_t)w;
	}
	return 0;
}

/* Whether the client hung up (it sends nothing once streaming). */
static bool ctl_client_gone(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	char b[256];

	if (poll(&p, 1, 0) <= 0)
		return false;
	if (p.revents & (POLLHUP | POLLERR))
		return true;
	ssize_t got = recv(fd, b, sizeof(b), MSG_DONTWAIT);
	return got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR);
}

static void *ctl_monitor_main(void *arg)
{
	struct ctl_monitor *m = arg;
	char line[1024];
	struct md_event ev;
	uint64_t dropped;

	while (!atomic_load(&m->stop)) {
		int r = ctl_evq_pop(&m->q, 500, &ev, &dropped);
		if (r == 0)
			break;
		if (r < 0) {
			if (ctl_client_gone(m->fd))
				break;
			continue;
		}
		int n = ctl_event_json(&ev, dropped, line, sizeof(line));
		if (n > 0 && ctl_send_all(m->fd, line, (size_t)n) < 0)
			break;
	}
	md_events_unsubscribe(ctl_evq_push, &m->q);
	atomic_store(&m->done, true);
	return NULL;
}

static void ctl_monitor_end(struct ctl_monitor *m)
{
	pthread_join(m->thread, NULL);
	close(m->fd);
	ctl_evq_fini(&m->q);
	m->used = false;
}

/* Stream events to fd from now on; 0 (fd is the monitor's then) or an
 * error reply to send. */
static json_object *ctl_monitor_begin(struct ctl *c, int fd, bool test)
{
	struct ctl_monitor *m = NULL;
	static const char ok[] = "{\"ok\":true,\"monitor\":true}\n";
	struct timeval none = {0};

	for (unsigned i = 0; i < CTL_MONITORS_MAX; i++) {
		if (c->mon[i].used && atomic_load(&c->mon[i].done))
			ctl_monitor_end(&c->mon[i]);
		if (!c->mon[i].used && !m)
			m = &c->mon[i];
	}
	if (!m)
		return ctl_error("%u monitors are listening already", CTL_MONITORS_MAX);
	if (ctl_evq_init(&m->q, CTL_MONITOR_QUEUE) < 0)
		return ctl_error("out of memory");
	m->fd = fd;
	atomic_store(&m->done, false);
	atomic_store(&m->stop, false);
	if (md_events_subscribe(ctl_evq_push, &m->q) < 0) {
		ctl_evq_fini(&m->q);
		return ctl_error("too many event listeners");
	}
	/* Sends block as long as the client makes them (its thread only). */
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &none, sizeof(none));
	if (ctl_send_all(fd, ok, sizeof(ok) - 1) < 0 ||
	    pthread_create(&m->thread, NULL, ctl_monitor_main, m) != 0) {
		md_events_unsubscribe(ctl_evq_push, &m->q);
		ctl_evq_fini(&m->q);
		return ctl_error("cannot start streaming");
	}
	m->used = true;
	if (test)
		ctl_events_test(c->t);
	return NULL;
}

/* ---- the socket ---- */

/* Serve the request on fd; false when fd was handed to a monitor. */
static bool ctl_serve_one(struct ctl *c, int fd)
{
	struct timeval tv = {.tv_sec = CTL_IO_TIMEOUT_S};
	char *buf = malloc(CTL_REQ_MAX + 1), *reply = NULL;
	size_t len = 0;
	bool too_long = false;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (!buf)
		return true;
	for (;;) {
		ssize_t got = read(fd, buf + len, CTL_REQ_MAX + 1 - len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			goto out; /* timed out or reset: no answer */
		if (got == 0)
			break;
		len += (size_t)got;
		if (memchr(buf + len - (size_t)got, '\n', (size_t)got))
			break;
		if (len > CTL_REQ_MAX) {
			too_long = true;
			break;
		}
	}
	/* An oversized request is read on (up to a limit) before the
	 * answer, so that the client is not reset before it reads it. */
	for (size_t drained = 0; too_long && drained < (1u << 20);) {
		ssize_t got = read(fd, buf, CTL_REQ_MAX);
		if (got <= 0 || memchr(buf, '\n', (size_t)got))
			break;
		drained += (size_t)got;
	}
	char *nl = too_long ? NULL : memchr(buf, '\n', len);
	if (nl)
		len = (size_t)(nl - buf);
	if (!too_long)
		buf[len] = '\0';
	bool test;
	if (!too_long && ctl_monitor_request(buf, len, &test)) {
		json_object *err = ctl_monitor_begin(c, fd, test);
		if (!err) {
			free(buf);
			return false;
		}
		const char *es = json_object_to_json_string_ext(err, JSON_C_TO_STRING_PLAIN);
		reply = es ? strdup(es) : NULL;
		json_object_put(err);
	} else {
		reply = ctl_handle(c->t, buf, too_long ? CTL_REQ_MAX + 1 : len);
	}
	if (reply) {
		size_t n = strlen(reply), off = 0;
		while (off < n) {
			ssize_t w = send(fd, reply + off, n - off, MSG_NOSIGNAL);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				goto out;
			off += (size_t)w;
		}
		if (send(fd, "\n", 1, MSG_NOSIGNAL) < 0) {
			/* The client left: nothing to do. */
		}
	}
out:
	free(reply);
	free(buf);
	return true;
}

static void *ctl_main(void *arg)
{
	struct ctl *c = arg;

	for (;;) {
		struct pollfd p[2] = {{.fd = c->fd, .events = POLLIN},
		                      {.fd = c->stop_pipe[0], .events = POLLIN}};
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			log_error("control: poll: %s", strerror(errno));
			break;
		}
		if (p[1].revents)
			break;
		if (!(p[0].revents & POLLIN))
			continue;
		int fd = accept4(c->fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		if (ctl_serve_one(c, fd))
			close(fd);
	}
	return NULL;
}

/* Is a server listening at path? */
static bool ctl_live(const struct sockaddr_un *sa)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool live;

	if (fd < 0)
		return false;
	live = connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0;
	close(fd);
	return live;
}

int ctl_start(const char *path, const struct ctl_target *t, struct ctl **out)
{
	struct ctl *c = calloc(1, sizeof(*c));
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct stat st;
	int r;

	if (!c)
		return -ENOMEM;
	c->t = t;
	c->fd = -1;
	c->stop_pipe[0] = c->stop_pipe[1] = -1;
	/* Absolute: a daemonized serve leaves its directory, and removes
	 * the socket at exit from wherever it is. */
	if (path[0] != '/') {
		char cwd[PATH_MAX];
		if (!getcwd(cwd, sizeof(cwd))) {
			r = err_set(-errno, "--control: %s", strerror(errno));
			goto fail;
		}
		if ((size_t)snprintf(c->path, sizeof(c->path), "%s/%s", cwd, path) >=
		    sizeof(c->path)) {
			r = err_set(-ENAMETOOLONG, "--control %s: path too long", path);
			goto fail;
		}
	} else {
		snprintf(c->path, sizeof(c->path), "%s", path);
	}
	if (strlen(c->path) >= sizeof(sa.sun_path)) {
		r = err_set(-ENAMETOOLONG, "--control %s: path too long for a Unix socket", path);
		goto fail;
	}
	memcpy(sa.sun_path, c->path, strlen(c->path) + 1);
	if (lstat(c->path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			r = err_set(-EEXIST, "--control %s: exists and is not a socket", path);
			goto fail;
		}
		if (ctl_live(&sa)) {
			r = err_set(-EADDRINUSE, "--control %s: another server is listening there",
			            path);
			goto fail;
		}
		unlink(c->path); /* stale: its server is gone */
	}
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0 || pipe2(c->stop_pipe, O_CLOEXEC) < 0) {
		r = err_set(-errno, "--control: %s", strerror(errno));
		goto fail;
	}
	mode_t old = umask(0077);
	r = bind(c->fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (r < 0 || chmod(c->path, 0600) < 0 || listen(c->fd, 8) < 0) {
		r = err_set(-errno, "--control %s: %s", path, strerror(errno));
		unlink(c->path);
		goto fail;
	}
	r = pthread_create(&c->thread, NULL, ctl_main, c);
	if (r != 0) {
		unlink(c->path);
		r = err_set(-r, "--control: cannot start its thread: %s", strerror(r));
		goto fail;
	}
	*out = c;
	return 0;
fail:
	if (c->fd >= 0)
		close(c->fd);
	if (c->stop_pipe[0] >= 0) {
		close(c->stop_pipe[0]);
		close(c->stop_pipe[1]);
	}
	free(c);
	return r;
}

void ctl_stop(struct ctl *c)
{
	if (!c)
		return;
	if (write(c->stop_pipe[1], "x", 1) != 1) {
		/* A full pipe already says stop. */
	}
	pthread_join(c->thread, NULL);
	for (unsigned i = 0; i < CTL_MONITORS_MAX; i++) {
		struct ctl_monitor *m = &c->mon[i];
		if (!m->used)
			continue;
		atomic_store(&m->stop, true);
		ctl_evq_close(&m->q);
		shutdown(m->fd, SHUT_RDWR); /* a send blocked on the client ends */
		ctl_monitor_end(m);
	}
	close(c->fd);
	close(c->stop_pipe[0]);
	close(c->stop_pipe[1]);
	unlink(c->path);
	free(c);
}
