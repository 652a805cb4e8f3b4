/* events.c — md events to an admin (events.h): the bounded queue every
 * listener drains, the JSON line of `uraid monitor`, and the notifier of
 * `uraid serve --program/--syslog`: one thread that takes events off its
 * queue in order, logs each to syslog and runs the program for it with
 * posix_spawn (no shell), reaping it before the next.  md emits into the
 * queue (md/md_events.c) and never waits for the program. */
#include "events.h"

#include "core/clock.h"
#include "core/log.h"

#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

/* ---- the queue ---- */

int ctl_evq_init(struct ctl_evq *q, unsigned cap)
{
	memset(q, 0, sizeof(*q));
	q->ring = calloc(cap, sizeof(*q->ring));
	if (!q->ring)
		return -ENOMEM;
	q->cap = cap;
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->cond, NULL);
	return 0;
}

void ctl_evq_fini(struct ctl_evq *q)
{
	if (!q->ring)
		return;
	pthread_mutex_destroy(&q->lock);
	pthread_cond_destroy(&q->cond);
	free(q->ring);
	q->ring = NULL;
}

void ctl_evq_push(void *ctx, const struct md_event *ev)
{
	struct ctl_evq *q = ctx;

	pthread_mutex_lock(&q->lock);
	if (q->closed) {
		/* Nobody takes it any more. */
	} else if (q->count == q->cap) {
		q->dropped++;
	} else {
		q->ring[(q->head + q->count++) % q->cap] = *ev;
		pthread_cond_signal(&q->cond);
	}
	pthread_mutex_unlock(&q->lock);
}

void ctl_evq_close(struct ctl_evq *q)
{
	pthread_mutex_lock(&q->lock);
	q->closed = true;
	pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->lock);
}

int ctl_evq_pop(struct ctl_evq *q, int timeout_ms, struct md_event *ev, uint64_t *dropped)
{
	struct timespec until;
	int r = 0;

	clock_gettime(CLOCK_REALTIME, &until);
	if (timeout_ms >= 0) {
		until.tv_sec += timeout_ms / 1000;
		until.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
	}
	*dropped = 0;
	pthread_mutex_lock(&q->lock);
	while (!q->count && !q->dropped && !q->closed && r == 0)
		r = timeout_ms < 0 ? pthread_cond_wait(&q->cond, &q->lock)
		                   : pthread_cond_timedwait(&q->cond, &q->lock, &until);
	if (q->dropped) {
		/* Said before the events that came after the loss. */
		*dropped = q->dropped;
		q->dropped = 0;
		memset(ev, 0, sizeof(*ev));
		snprintf(ev->event, sizeof(ev->event), "Overflow");
		ev->mismatch_cnt = -1;
		struct timespec now;
		clock_gettime(CLOCK_REALTIME, &now);
		ev->time_ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
		r = 1;
	} else if (q->count) {
		*ev = q->ring[q->head];
		q->head = (q->head + 1) % q->cap;
		q->count--;
		r = 1;
	} else {
		r = q->closed ? 0 : -ETIMEDOUT;
	}
	pthread_mutex_unlock(&q->lock);
	return r;
}

/* ---- JSON ---- */

int ctl_event_json(const struct md_event *ev, uint64_t dropped, char *out, size_t len)
{
	json_object *o = json_object_new_object();
	const char *s;
	int n = -ENOMEM;

	if (!o)
		return -ENOMEM;
	json_object_object_add(o, "event", json_object_new_string(ev->event));
	if (ev->device[0])
		json_object_object_add(o, "device", json_object_new_string(ev->device));
	if (ev->member[0])
		json_object_object_add(o, "member", json_object_new_string(ev->member));
	if (ev->mismatch_cnt > 0) {
		json_object_object_add(o, "mismatch_cnt", json_object_new_int64(ev->mismatch_cnt));
		json_object_object_add(o, "level", json_object_new_int(ev->level));
	}
	if (dropped)
		json_object_object_add(o, "dropped", json_object_new_int64((int64_t)dropped));
	json_object_object_add(o, "time", json_object_new_double((double)ev->time_ns / 1e9));
	if (ev->seq)
		json_object_object_add(o, "seq", json_object_new_int64((int64_t)ev->seq));
	s = json_object_to_json_string_ext(o,
	                                   JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	if (s) {
		size_t sl = strlen(s);
		if (sl + 2 > len) {
			n = -ENOSPC;
		} else {
			memcpy(out, s, sl);
			out[sl] = '\n';
			out[sl + 1] = '\0';
			n = (int)sl + 1;
		}
	}
	json_object_put(o);
	return n;
}

/* ---- serve --program / --syslog ---- */

#define CTL_NOTIFY_QUEUE 256
#define CTL_NOTIFY_DRAIN_NS (10ull * 1000000000u) /* at stop, for the rest */

struct ctl_notify {
	struct ctl_notify_opts o;
	char program[PATH_MAX]; /* o.program, absolute when it names a path */
	struct ctl_evq q;
	pthread_t thread;
	atomic_uint_fast64_t deadline_ns; /* 0 until stopping */
};

/* mdadm's priorities: failures are critical, rebuilds worth a warning,
 * the rest information. */
static int ctl_notify_priority(const char *event)
{
	if (!strncmp(event, "Fail", 4) || !strncmp(event, "Degrade", 7) ||
	    !strcmp(event, "DeviceDisappeared"))
		return LOG_CRIT;
	if (!strncmp(event, "Rebuild", 7) || !strcmp(event, "Overflow"))
		return LOG_WARNING;
	return LOG_INFO;
}

/* Wait for pid; once stopping, only until the deadline. */
static void ctl_notify_reap(struct ctl_notify *n, pid_t pid)
{
	for (;;) {
		int st;
		pid_t w = waitpid(pid, &st, WNOHANG);
		if (w == pid || (w < 0 && errno != EINTR))
			return;
		uint64_t dl = atomic_load(&n->deadline_ns);
		if (dl && clock_now_ns() > dl) {
			log_warn("--program %s (pid %d) still runs at exit: not waited for",
			         n->o.program, (int)pid);
			return;
		}
		usleep(20000);
	}
}

static void ctl_notify_run(struct ctl_notify *n, const struct md_event *ev, const char *comp)
{
	extern char **environ;
	char *argv[] = {(char *)n->o.program, (char *)ev->event, (char *)ev->device,
	                comp[0] ? (char *)comp : NULL, NULL};
	posix_spawnattr_t at;
	sigset_t none, dfl;
	pid_t pid;
	int e;

	/* The child starts with no signal blocked and the ones serve
	 * catches or ignores back at their defaults. */
	sigemptyset(&none);
	sigemptyset(&dfl);
	sigaddset(&dfl, SIGPIPE);
	sigaddset(&dfl, SIGINT);
	sigaddset(&dfl, SIGTERM);
	posix_spawnattr_init(&at);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &dfl);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	e = posix_spawnp(&pid, n->o.program, NULL, &at, argv, environ);
	posix_spawnattr_destroy(&at);
	if (e != 0) {
		log_warn("--program %s: %s", n->o.program, strerror(e));
		return;
	}
	ctl_notify_reap(n, pid);
}

static void *ctl_notify_main(void *arg)
{
	struct ctl_notify *n = arg;
	struct md_event ev;
	uint64_t dropped;
	char comp[sizeof(ev.member) + 64];

	while (ctl_evq_pop(&n->q, -1, &ev, &dropped) == 1) {
		if (dropped) {
			log_warn("events: %llu dropped: the --program is too slow",
			         (unsigned long long)dropped);
			if (n->o.syslog)
				syslog(LOG_WARNING, "%llu events dropped (the program is too slow)",
				       (unsigned long long)dropped);
			continue;
		}
		md_event_component(&ev, comp, sizeof(comp));
		if (n->o.syslog) {
			int pri = ctl_notify_priority(ev.event);
			if (comp[0] == ' ')
				syslog(pri, "%s event detected on md device %s:%s", ev.event,
				       ev.device, comp);
			else if (comp[0])
				syslog(pri,
				       "%s event detected on md device %s, component device %s",
				       ev.event, ev.device, comp);
			else
				syslog(pri, "%s event detected on md device %s", ev.event,
				       ev.device);
		}
		uint64_t dl = atomic_load(&n->deadline_ns);
		if (n->o.program && dl && clock_now_ns() > dl)
			log_warn("--program %s not run for %s on %s: exiting", n->o.program,
			         ev.event, ev.device);
		else if (n->o.program)
			ctl_notify_run(n, &ev, comp);
	}
	return NULL;
}

int ctl_notify_start(const struct ctl_notify_opts *o, struct ctl_notify **out)
{
	struct ctl_notify *n = calloc(1, sizeof(*n));
	int r;

	if (!n)
		return -ENOMEM;
	n->o = *o;
	/* A daemonized serve leaves its directory: a relative path is made
	 * absolute now (a bare name is looked up in PATH at each run). */
	if (o->program) {
		if (strchr(o->program, '/') && o->program[0] != '/') {
			if (!realpath(o->program, n->program)) {
				r = err_set(-errno, "--program %s: %s", o->program, strerror(errno));
				free(n);
				return r;
			}
		} else {
			snprintf(n->program, sizeof(n->program), "%s", o->program);
		}
		n->o.program = n->program;
	}
	r = ctl_evq_init(&n->q, CTL_NOTIFY_QUEUE);
	if (r < 0) {
		free(n);
		return r;
	}
	if (o->syslog)
		openlog("uraid", LOG_PID, LOG_DAEMON);
	r = pthread_create(&n->thread, NULL, ctl_notify_main, n);
	if (r != 0) {
		ctl_evq_fini(&n->q);
		free(n);
		return err_set(-r, "events: cannot start the notifier thread: %s", strerror(r));
	}
	r = md_events_subscribe(ctl_evq_push, &n->q);
	if (r < 0) {
		ctl_evq_close(&n->q);
		pthread_join(n->thread, NULL);
		ctl_evq_fini(&n->q);
		free(n);
		return err_set(r, "events: too many listeners");
	}
	*out = n;
	return 0;
}

void ctl_notify_stop(struct ctl_notify *n)
{
	if (!n)
		return;
	md_events_unsubscribe(ctl_evq_push, &n->q);
	atomic_store(&n->deadline_ns, clock_now_ns() + CTL_NOTIFY_DRAIN_NS);
	ctl_evq_close(&n->q);
	pthread_join(n->thread, NULL);
	ctl_evq_fini(&n->q);
	if (n->o.syslog)
		closelog();
	free(n);
}
