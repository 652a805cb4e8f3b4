/* sim.c — sim:RATE[,opt=val...]:INNER, a model of a rotating disk (or of
 * an SSD: no rotation, no seek, a fixed cost a request) wrapped around
 * another member, so that RAID scaling can be shown on one machine.
 *
 * The model: the disk serves one request at a time, in arrival order.  A
 * request costs len/RATE, plus a positioning cost when it does not start
 * where the previous one ended: a forward gap of G bytes costs
 * min(G/RATE, one rotation) (the platter keeps turning under the head), and
 * any other jump costs an average seek plus half a rotation; every request
 * also costs request_ns (0 for the rotating presets).  Idle time does not
 * move the head.  The data really moves to and from the inner member;
 * the model only decides how long the caller waits.
 *
 * Queueing is a ticket lock (FIFO) held for the whole service time, and the
 * wait is a sleep on CLOCK_MONOTONIC until the request's virtual completion
 * time (busy_until), never a spin. */
#include "member.h"

#include "core/clock.h"
#include "core/log.h"
#include "core/units.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

struct sim_vol {
	struct vol vol;
	struct vol *inner;
	struct sim_params p;

	pthread_mutex_t lock; /* guards everything below */
	pthread_cond_t turn;
	uint64_t next_ticket, serving;
	uint64_t head;       /* where the last request ended */
	uint64_t busy_until; /* CLOCK_MONOTONIC ns when the disk goes idle */
	uint64_t busy_ns;    /* total modelled service time */
	/* What it was asked: reads and writes (count, bytes), and the jumps
	 * back that cost a seek (benchmarks compare them with the kernel's
	 * /sys/block/DEV/stat). */
	uint64_t nread, nwrite, read_bytes, write_bytes, seeks;
};

static const struct {
	const char *name;
	struct sim_params p;
} sim_presets[] = {
    /* A 7200 rpm SATA disk streaming 80 MB/s. */
    {"sata80", {80000000, 8333333, 8500000, 0, true}},
    /* A 15000 rpm Ultra320 SCSI disk (seed 000's): ~76 MB/s, 3.5 ms. */
    {"u320-15k", {76000000, 4000000, 3500000, 0, true}},
    /* A SATA SSD: 500 MB/s (the interface's 600 MB/s less overhead; a
     * Samsung 860 EVO's data sheet says 550 read, 520 write), 80 us a
     * request (its data sheet's 4 KiB queue-depth-1 figures, 10k IOPS
     * read = 100 us and 42k write = 24 us), 0.5 ms a flush (the order of
     * a consumer drive without power-loss protection writing back its
     * DRAM cache; one with it answers in microseconds: flush=0).  These
     * are data-sheet orders of magnitude, not measured here. */
    {"ssd", {500000000, 0, 0, 500000, true, 80000}},
};

static uint64_t bytes_ns(const struct sim_params *p, uint64_t bytes)
{
	return (uint64_t)((double)bytes * 1e9 / (double)p->rate);
}

uint64_t sim_cost_ns(const struct sim_params *p, uint64_t head, uint64_t off, uint64_t len)
{
	uint64_t cost = p->request_ns + bytes_ns(p, len);

	if (off > head) {
		uint64_t gap = bytes_ns(p, off - head);
		cost += gap < p->rotation_ns ? gap : p->rotation_ns;
	} else if (off < head) {
		cost += p->seek_ns + p->rotation_ns / 2;
	}
	return cost;
}

static struct sim_vol *to_sim(struct vol *v)
{
	return container_of(v, struct sim_vol, vol);
}

/* Wait for our turn at the disk; returns with s->lock held. */
static void sim_enter(struct sim_vol *s)
{
	pthread_mutex_lock(&s->lock);
	uint64_t me = s->next_ticket++;
	while (s->serving != me)
		pthread_cond_wait(&s->turn, &s->lock);
}

static void sim_leave(struct sim_vol *s)
{
	s->serving++;
	pthread_cond_broadcast(&s->turn);
	pthread_mutex_unlock(&s->lock);
}

/* Book a request of the given cost on the disk's clock: it starts when
 * the disk goes idle or now, whichever is later.  Called before the real
 * transfer so that the transfer overlaps the modelled time. */
static void sim_book(struct sim_vol *s, uint64_t cost)
{
	uint64_t now = clock_now_ns();
	uint64_t start = s->busy_until > now ? s->busy_until : now;

	s->busy_until = start + cost;
	s->busy_ns += cost;
}

/* Sleep until the booked request is done.  The lock is dropped while
 * sleeping; the ticket keeps the others queued. */
static void sim_wait(struct sim_vol *s)
{
	static __thread bool slack_set;

	if (!s->p.sleep)
		return;
	if (!slack_set) {
		/* The default 50 us timer slack would be charged to every
		 * request of a model that wakes up hundreds of times a second. */
		prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
		slack_set = true;
	}
	struct timespec ts = {(time_t)(s->busy_until / 1000000000u),
	                      (long)(s->busy_until % 1000000000u)};
	pthread_mutex_unlock(&s->lock);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
	pthread_mutex_lock(&s->lock);
}

/* Book one positioned transfer of len bytes at off. */
static void sim_position(struct sim_vol *s, uint64_t len, uint64_t off)
{
	uint64_t cost = sim_cost_ns(&s->p, s->head, off, len);
	s->seeks += off < s->head;
	s->head = off + len;
	sim_book(s, cost);
}

static int sim_read(struct vol *v, void *buf, uint64_t len, uint64_t off)
{
	struct sim_vol *s = to_sim(v);
	int r;

	sim_enter(s);
	sim_position(s, len, off);
	s->nread++;
	s->read_bytes += len;
	r = s->inner->ops->read(s->inner, buf, len, off);
	sim_wait(s);
	sim_leave(s);
	return r;
}

static int sim_write(struct vol *v, const void *buf, uint64_t len, uint64_t off, unsigned flags)
{
	struct sim_vol *s = to_sim(v);
	int r;

	sim_enter(s);
	sim_position(s, len, off);
	s->nwrite++;
	s->write_bytes += len;
	r = s->inner->ops->write(s->inner, buf, len, off, flags);
	sim_wait(s);
	sim_leave(s);
	return r;
}

/* One transfer of the parts' total, as the write of them joined. */
static int sim_writev(struct vol *v, const struct iovec *iov, unsigned n, uint64_t off,
                      unsigned flags)
{
	struct sim_vol *s = to_sim(v);
	uint64_t len = 0;
	int r;

	for (unsigned i = 0; i < n; i++)
		len += iov[i].iov_len; /* vol_writev checked the total */
	sim_enter(s);
	sim_position(s, len, off);
	s->nwrite++;
	s->write_bytes += len;
	r = vol_writev(s->inner, iov, n, off, flags);
	sim_wait(s);
	sim_leave(s);
	return r;
}

/* Trim and write_zeroes: the inner member does the work; the model charges
 * a positioning cost only (a disk's zeroing is assumed to be metadata). */
/* Position the head at off, let the inner member trim or zero the range,
 * and leave the head at its end. */
static int sim_unmap(struct sim_vol *s, uint64_t len, uint64_t off, unsigned flags, bool zero)
{
	int r;

	sim_enter(s);
	sim_position(s, 0, off);
	s->head = off + len;
	r = zero ? vol_write_zeroes(s->inner, len, off, flags)
	         : vol_trim(s->inner, len, off, flags);
	sim_wait(s);
	sim_leave(s);
	return r;
}

static int sim_trim(struct vol *v, uint64_t len, uint64_t off, unsigned flags)
{
	return sim_unmap(to_sim(v), len, off, flags, false);
}

static int sim_write_zeroes(struct vol *v, uint64_t len, uint64_t off, unsigned flags)
{
	struct sim_vol *s = to_sim(v);

	/* Without a cheap inner zeroing, model it as the write it becomes. */
	if (!(s->inner->caps & VOL_CAP_ZEROES)) {
		if (flags & VOL_FAST_ZERO)
			return -ENOTSUP;
		return vol_write_zeroes_by_writing(v, len, off, flags);
	}
	return sim_unmap(s, len, off, flags, true);
}

static int sim_flush(struct vol *v)
{
	struct sim_vol *s = to_sim(v);
	int r;

	sim_enter(s);
	sim_book(s, s->p.flush_ns);
	r = vol_flush(s->inner);
	if (s->p.flush_ns)
		sim_wait(s);
	sim_leave(s);
	return r;
}

static void sim_close(struct vol *v)
{
	struct sim_vol *s = to_sim(v);
	/* What the model kept the disk busy for: a rate that CPU contention
	 * on a loaded machine does not blur (benchmarks read it with -v -v). */
	log_debug("%s: modelled busy %.3f s, %llu reads (%.1f MiB), %llu writes (%.1f MiB), "
	          "%llu seeks back",
	          v->name, (double)s->busy_ns / 1e9, (unsigned long long)s->nread,
	          (double)s->read_bytes / 1048576, (unsigned long long)s->nwrite,
	          (double)s->write_bytes / 1048576, (unsigned long long)s->seeks);
	vol_close(s->inner);
	pthread_cond_destroy(&s->turn);
	pthread_mutex_destroy(&s->lock);
	vol_fini(v);
	free(s);
}

/* Where the data lies costs the model no time: the inner member answers. */
static int sim_extents(struct vol *v, uint64_t len, uint64_t off, vol_extent_fn fn, void *arg)
{
	return vol_extents(to_sim(v)->inner, len, off, fn, arg);
}

static const struct vol_ops sim_ops = {
    .kind = "sim",
    .read = sim_read,
    .write = sim_write,
    .writev = sim_writev,
    .flush = sim_flush,
    .trim = sim_trim,
    .write_zeroes = sim_write_zeroes,
    .close = sim_close,
    .extents = sim_extents,
};

uint64_t sim_member_busy_ns(struct vol *v)
{
	if (!v || v->ops != &sim_ops)
		return 0;
	struct sim_vol *s = to_sim(v);
	pthread_mutex_lock(&s->lock);
	uint64_t ns = s->busy_ns;
	pthread_mutex_unlock(&s->lock);
	return ns;
}

/* Parse "RATE|PRESET[,opt=val...]" into p. */
static int sim_parse(char *params, const char *spec, struct sim_params *p)
{
	char *save = NULL;
	char *tok = strtok_r(params, ",", &save);
	uint64_t v;
	bool found = false;

	if (!tok)
		return err_set(-EINVAL, "sim:%s: missing rate", spec);
	for (size_t i = 0; i < sizeof(sim_presets) / sizeof(sim_presets[0]); i++) {
		if (strcmp(tok, sim_presets[i].name) == 0) {
			*p = sim_presets[i].p;
			found = true;
		}
	}
	if (!found) {
		*p = sim_presets[0].p;
		if (parse_size(tok, &v) < 0 || v == 0)
			return err_set(-EINVAL, "sim:%s: bad rate or preset '%s'", spec, tok);
		p->rate = v;
	}
	while ((tok = strtok_r(NULL, ",", &save))) {
		char *eq = strchr(tok, '=');
		if (!eq)
			return err_set(-EINVAL, "sim:%s: option '%s' needs a value", spec, tok);
		*eq++ = '\0';
		int r = 0;
		if (strcmp(tok, "rate") == 0) {
			r = parse_size(eq, &v);
			if (r == 0 && v == 0)
				r = -EINVAL;
			p->rate = v;
		} else if (strcmp(tok, "seek") == 0) {
			r = parse_duration_ns(eq, 1000000, &p->seek_ns);
		} else if (strcmp(tok, "rot") == 0) {
			r = parse_duration_ns(eq, 1000000, &p->rotation_ns);
		} else if (strcmp(tok, "rpm") == 0) {
			r = parse_size(eq, &v);
			if (r == 0 && v == 0)
				r = -EINVAL;
			if (r == 0)
				p->rotation_ns = 60000000000u / v;
		} else if (strcmp(tok, "req") == 0) {
			r = parse_duration_ns(eq, 1000000, &p->request_ns);
		} else if (strcmp(tok, "flush") == 0) {
			r = parse_duration_ns(eq, 1000000, &p->flush_ns);
		} else if (strcmp(tok, "sleep") == 0) {
			if (strcmp(eq, "0") && strcmp(eq, "1"))
				r = -EINVAL;
			p->sleep = eq[0] == '1';
		} else {
			return err_set(-EINVAL, "sim:%s: unknown option '%s'", spec, tok);
		}
		if (r < 0)
			return err_set(-EINVAL, "sim:%s: bad value for %s: '%s'", spec, tok, eq);
	}
	return 0;
}

int sim_member_wrap(struct vol *inner, const struct sim_params *p, struct vol **out)
{
	struct sim_vol *s = calloc(1, sizeof(*s));
	char name[256];
	int r;

	if (!s)
		return -ENOMEM;
	snprintf(name, sizeof(name), "sim:%s", inner->name);
	r = vol_init(&s->vol, &sim_ops, name, inner->size, inner->block_min,
	             (inner->caps & ~(VOL_CAP_STREAM | VOL_CAP_RAM)) | VOL_CAP_FLUSH);
	if (r < 0) {
		free(s);
		return r;
	}
	s->vol.block_pref = inner->block_pref;
	s->vol.block_max = inner->block_max;
	s->inner = inner;
	s->p = *p;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->turn, NULL);
	*out = &s->vol;
	return 0;
}

int sim_member_open(const char *rest, unsigned flags, struct vol **out)
{
	const char *colon = strchr(rest, ':');
	struct sim_params p;
	struct vol *inner = NULL;
	char *params;
	int r;

	if (!colon)
		return err_set(-EINVAL, "sim:%s: expected sim:RATE[,opt=val...]:MEMBER", rest);
	params = strndup(rest, (size_t)(colon - rest));
	if (!params)
		return -ENOMEM;
	r = sim_parse(params, rest, &p);
	free(params);
	if (r < 0)
		return r;
	r = member_open(colon + 1, flags, &inner);
	if (r < 0)
		return r;
	r = sim_member_wrap(inner, &p, out);
	if (r < 0)
		vol_close(inner);
	return r;
}
