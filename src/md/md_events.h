/* md_events.h — what happens to the md arrays of this process, named as
 * mdadm --monitor names it (Fail, FailSpare, DegradedArray, SpareActive,
 * RebuildStarted, Rebuild20/40/60/80, RebuildFinished, NewArray,
 * DeviceDisappeared, TestMessage), for whoever listens: `uraid serve
 * --program/--syslog` and `uraid monitor` (ctl/events.c).
 *
 * One source: the files of src/md/ that change an array's state emit
 * where the state changes (md_events.c's md_ev_* helpers), and every
 * sink subscribed is called at once, in the emitter's thread, possibly on
 * an I/O path and under an array's lock.  A sink must therefore only copy
 * the event into a queue of its own and return: never block, never call
 * into md.  With no sink subscribed an event costs a load and a branch. */
#ifndef URAID_MD_EVENTS_H
#define URAID_MD_EVENTS_H

#include <stdint.h>

#define MD_EVENT_SINKS_MAX 32

struct md_event {
	char event[24];   /* "Fail", "Rebuild20", ... */
	char device[48];  /* the array: "md/NAME" */
	char member[256]; /* the component device, "" when none */
	/* For a RebuildFinished of a check that found differences: md's
	 * mismatch_cnt (512-byte sectors) and the level; -1 otherwise. */
	int64_t mismatch_cnt;
	int level;
	uint64_t seq;     /* 1, 2, ... in the order emitted */
	uint64_t time_ns; /* CLOCK_REALTIME */
};

typedef void (*md_event_sink)(void *ctx, const struct md_event *ev);

/* Call fn(ctx, ev) for every event from now on: 0, or -ENOSPC when
 * MD_EVENT_SINKS_MAX are subscribed. */
int md_events_subscribe(md_event_sink fn, void *ctx);
/* After it returns, fn(ctx) is called no more. */
void md_events_unsubscribe(md_event_sink fn, void *ctx);

/* Emit one event to every sink (member may be NULL). */
void md_event_emit(const char *event, const char *device, const char *member);

/* mdadm's --program arguments for ev: the component device, or, for a
 * check's RebuildFinished, " mismatches found: N (on raid level L)"; ""
 * when there is none (no third argument then).  Returns out. */
const char *md_event_component(const struct md_event *ev, char *out, unsigned len);

/* TestMessage for the md array v (mdadm --monitor --test); -EINVAL when v
 * is not one. */
struct vol;
int md_event_test(struct vol *v);

#endif
