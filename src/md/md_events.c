/* md_events.c — the one source of md events (md_events.h): the table of
 * sinks and the helpers the files of src/md/ call where an array's state
 * changes (md_internal.h: md_ev_*), so that each event is emitted once,
 * at its transition: md_state.c (a member fails), md_sync.c (a rebuild or
 * check runs, a spare is in sync), md_admin.c (a spare failed by
 * request), md_assemble.c and md_vol.c (an array starts, closes). */
#include "md_events.h"
#include "md_internal.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static struct {
	pthread_mutex_t lock;
	struct {
		md_event_sink fn;
		void *ctx;
	} s[MD_EVENT_SINKS_MAX];
	unsigned n;
	atomic_uint live; /* n, read without the lock: no sink, no work */
	uint64_t seq;
} md_sinks = {.lock = PTHREAD_MUTEX_INITIALIZER};

int md_events_subscribe(md_event_sink fn, void *ctx)
{
	int r = 0;

	pthread_mutex_lock(&md_sinks.lock);
	if (md_sinks.n == MD_EVENT_SINKS_MAX) {
		r = -ENOSPC;
	} else {
		md_sinks.s[md_sinks.n].fn = fn;
		md_sinks.s[md_sinks.n].ctx = ctx;
		atomic_store(&md_sinks.live, ++md_sinks.n);
	}
	pthread_mutex_unlock(&md_sinks.lock);
	return r;
}

void md_events_unsubscribe(md_event_sink fn, void *ctx)
{
	pthread_mutex_lock(&md_sinks.lock);
	for (unsigned i = 0; i < md_sinks.n; i++)
		if (md_sinks.s[i].fn == fn && md_sinks.s[i].ctx == ctx) {
			md_sinks.s[i] = md_sinks.s[--md_sinks.n];
			break;
		}
	atomic_store(&md_sinks.live, md_sinks.n);
	pthread_mutex_unlock(&md_sinks.lock);
}

/* Stamp ev and hand it to every sink, under the table's lock (so that an
 * unsubscribed sink is not called after it left, and sinks see one
 * order). */
static void md_event_send(struct md_event *ev)
{
	struct timespec ts;

	if (!atomic_load_explicit(&md_sinks.live, memory_order_relaxed))
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	ev->time_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	pthread_mutex_lock(&md_sinks.lock);
	ev->seq = ++md_sinks.seq;
	for (unsigned i = 0; i < md_sinks.n; i++)
		md_sinks.s[i].fn(md_sinks.s[i].ctx, ev);
	pthread_mutex_unlock(&md_sinks.lock);
}

static void md_event_fill(struct md_event *ev, const char *event, const char *device,
                          const char *member)
{
	memset(ev, 0, sizeof(*ev));
	snprintf(ev->event, sizeof(ev->event), "%s", event);
	snprintf(ev->device, sizeof(ev->device), "%s", device);
	snprintf(ev->member, sizeof(ev->member), "%s", member ? member : "");
	ev->mismatch_cnt = -1;
}

void md_event_emit(const char *event, const char *device, const char *member)
{
	struct md_event ev;

	if (!atomic_load_explicit(&md_sinks.live, memory_order_relaxed))
		return;
	md_event_fill(&ev, event, device, member);
	md_event_send(&ev);
}

const char *md_event_component(const struct md_event *ev, char *out, unsigned len)
{
	if (ev->mismatch_cnt > 0)
		snprintf(out, len, " mismatches found: %lld (on raid level %d)",
		         (long long)ev->mismatch_cnt, ev->level);
	else
		snprintf(out, len, "%s", ev->member);
	return out;
}

int md_event_test(struct vol *v)
{
	struct md_array *a = md_of(v);

	if (!a)
		return -EINVAL;
	md_event_emit("TestMessage", a->vol.name, NULL);
	return 0;
}

/* ---- for src/md/ (md_internal.h) ---- */

void md_ev(struct md_array *a, const char *event, const struct md_member *mm)
{
	md_event_emit(event, a->vol.name, mm && mm->vol ? mm->vol->name : NULL);
}

#define MD_EV_STEP 20u /* mdadm's default --increment */

void md_ev_progress_begin(struct md_array *a, unsigned *next, uint64_t done, uint64_t total)
{
	unsigned pct = total ? (unsigned)(done * 100 / total) : 0;

	*next = (pct / MD_EV_STEP + 1) * MD_EV_STEP;
	md_ev(a, "RebuildStarted", NULL);
}

void md_ev_progress(struct md_array *a, unsigned *next, uint64_t done, uint64_t total)
{
	unsigned pct = total ? (unsigned)(done * 100 / total) : 0;

	/* Every step crossed, in order, even when one piece crosses two. */
	while (*next < 100 && pct >= *next) {
		char name[16];
		snprintf(name, sizeof(name), "Rebuild%02u", *next);
		md_ev(a, name, NULL);
		*next += MD_EV_STEP;
	}
}

void md_ev_finished(struct md_array *a, uint64_t mismatch_cnt)
{
	struct md_event ev;

	if (!atomic_load_explicit(&md_sinks.live, memory_order_relaxed))
		return;
	md_event_fill(&ev, "RebuildFinished", a->vol.name, NULL);
	if (mismatch_cnt) {
		ev.mismatch_cnt = (int64_t)mismatch_cnt;
		ev.level = a->level;
	}
	md_event_send(&ev);
}
