/* events.h — md events (md/md_events.h) delivered to an admin: the
 * bounded queue each listener has (a slow one drops, counted, rather than
 * hold the array up), `uraid serve --program CMD / --syslog` (one thread
 * runs CMD EVENT DEVICE [COMPONENT] as mdadm --monitor does, one event at
 * a time, and logs to syslog(3) as mdadm does), and the JSON line a
 * `uraid monitor` client gets (control.c streams them). */
#ifndef URAID_CTL_EVENTS_H
#define URAID_CTL_EVENTS_H

#include "md/md_events.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A bounded queue of events.  ctl_evq_push never blocks beyond its lock
 * (a full queue drops the event and counts it); ctl_evq_pop waits. */
struct ctl_evq {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct md_event *ring;
	unsigned cap, head, count;
	uint64_t dropped; /* since the last pop that reported them */
	bool closed;
};

int ctl_evq_init(struct ctl_evq *q, unsigned cap);
void ctl_evq_fini(struct ctl_evq *q);
/* An md_event_sink: ctx is the queue. */
void ctl_evq_push(void *ctx, const struct md_event *ev);
/* Wake ctl_evq_pop for good: it returns 0 once the queue is empty. */
void ctl_evq_close(struct ctl_evq *q);
/* Wait up to timeout_ms (-1: for ever) for an event: 1 with *ev, or with
 * *dropped > 0 and ev->event "Overflow" when events were dropped before
 * it (the next pop gives the event itself); 0 when closed and empty;
 * -ETIMEDOUT. */
int ctl_evq_pop(struct ctl_evq *q, int timeout_ms, struct md_event *ev, uint64_t *dropped);

/* One event as a JSON line (with its newline), NUL-terminated:
 * {"event":"Fail","device":"md/x","member":"b.img","time":1764...,"seq":3}
 * ("member" only when there is one; "mismatch_cnt" and "level" for a
 * check that found differences; "dropped" for an Overflow).  Returns the
 * length, or -ENOSPC when it does not fit len. */
int ctl_event_json(const struct md_event *ev, uint64_t dropped, char *out, size_t len);

/* serve --program / --syslog. */
struct ctl_notify_opts {
	const char *program; /* run as PROGRAM EVENT DEVICE [COMPONENT]; or NULL */
	bool syslog;         /* syslog(3), facility daemon, ident "uraid" */
};

struct ctl_notify;

/* Subscribe to md events and start the thread that delivers them.  0 or
 * -errno with err_set(). */
int ctl_notify_start(const struct ctl_notify_opts *o, struct ctl_notify **out);
/* Deliver what is queued (waiting at most a few seconds for the program),
 * then stop.  NULL is fine. */
void ctl_notify_stop(struct ctl_notify *n);

#endif
