/* workload.c — the load generator behind `uraid bench`.
 *
 * A job is dd, iozone, fw or bonnie reduced to what reaches the volume: a
 * stream of requests of one size, sequential or random, with a fixed number
 * in flight.  Against an NBD target one thread keeps qd requests in flight
 * with libnbd's asynchronous calls (what fio's nbd engine does); against an
 * in-process vol, qd threads each issue one request at a time.
 *
 * Every write sends different, incompressible bytes, at the cost fio pays
 * for the same guarantee (its default scramble_buffers): each request
 * slot's buffer is filled once from a random pool, and before each write
 * the first 16 bytes of every 512-byte sector get a stamp of the
 * sector's volume offset and the request's number.  No two writes, and no
 * two sectors, carry the same bytes, so no layer can compress or
 * deduplicate its way to a better figure; and the load generator neither
 * generates random bytes per request nor streams its data from a pool
 * larger than the CPU's caches, which would make its own memory traffic
 * part of the figure on fast members.  Offsets and data come from a hash
 * of (seed, request index), so a run is reproduced exactly by its seed. */
#include "bench.h"

#include "core/clock.h"
#include "core/log.h"

#include <errno.h>
#include <libnbd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define POOL_SIZE (32u << 20)
#define LAT_CAP (4u << 20) /* latencies kept per repetition */

static unsigned char *pool;

static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

int bench_data_init(uint64_t seed)
{
	if (pool)
		return 0;
	if (posix_memalign((void **)&pool, 4096, POOL_SIZE))
		return -ENOMEM;
	uint64_t *w = (uint64_t *)pool;
	for (size_t i = 0; i < POOL_SIZE / 8; i++)
		w[i] = mix64(seed ^ i);
	return 0;
}

const void *bench_data(void)
{
	return pool;
}

void bench_data_free(void)
{
	free(pool);
	pool = NULL;
}

/* The server's CPU time so far, in ns of user and system time: from
 * /proc/PID/stat for a child server, getrusage() for this process. */
void bench_cpu_times(pid_t pid, uint64_t *usr, uint64_t *sys)
{
	*usr = *sys = 0;
	if (pid <= 0) {
		struct rusage ru;
		getrusage(RUSAGE_SELF, &ru);
		*usr = (uint64_t)ru.ru_utime.tv_sec * 1000000000ULL +
		       (uint64_t)ru.ru_utime.tv_usec * 1000ULL;
		*sys = (uint64_t)ru.ru_stime.tv_sec * 1000000000ULL +
		       (uint64_t)ru.ru_stime.tv_usec * 1000ULL;
		return;
	}
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	/* The command name may hold spaces: fields count from its ')'. */
	char *p = strrchr(buf, ')');
	if (!p)
		return;
	unsigned long long ut = 0, st = 0;
	/* After ')': state(3) ppid pgrp session tty tpgid flags minflt
	 * cminflt majflt cmajflt utime(14) stime(15). */
	if (sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return;
	long hz = sysconf(_SC_CLK_TCK);
	if (hz <= 0)
		hz = 100;
	*usr = ut * (1000000000ULL / (uint64_t)hz);
	*sys = st * (1000000000ULL / (uint64_t)hz);
}

/* Request i of a job: where it goes and which bytes a write sends. */
static uint64_t job_offset(const struct bench_job *j, uint64_t i)
{
	uint64_t blocks = j->region / j->bs;
	if (j->random)
		return (mix64(j->seed ^ (i * 0x100000001b3ULL)) % blocks) * j->bs;
	return (i % blocks) * j->bs;
}

/* Fill a request slot's buffer from the pool, at a place of its own. */
static void job_buf_fill(const struct bench_job *j, unsigned char *buf, unsigned slot)
{
	uint64_t slots = (POOL_SIZE - j->bs) / 512 + 1;
	memcpy(buf, pool + (mix64(~j->seed ^ slot) % slots) * 512, j->bs);
}

/* Make buf the data of write i at off: stamp every sector. */
static void job_buf_stamp(const struct bench_job *j, unsigned char *buf, uint64_t i, uint64_t off)
{
	uint64_t tag = mix64(j->seed ^ i);
	for (uint32_t s = 0; s < j->bs; s += 512) {
		uint64_t stamp[2] = {off + s, tag};
		memcpy(buf + s, stamp, sizeof(stamp));
	}
}

/* bonnie's seekers write back one block in ten. */
static bool job_writes_back(const struct bench_job *j, uint64_t i)
{
	return j->op == BENCH_REWRITE || (j->op == BENCH_SEEKS && mix64(j->seed + i) % 10 == 0);
}

static uint64_t job_nops(const struct bench_job *j)
{
	uint64_t bytes = j->max_bytes ? j->max_bytes : j->region;
	uint64_t n = bytes / j->bs;
	return n ? n : 1;
}

/* Latencies of one repetition, appended from any thread. */
struct lat_log {
	uint64_t *v;
	_Atomic uint64_t n;
	uint64_t cap;
};

static void lat_add(struct lat_log *l, uint64_t ns)
{
	uint64_t k = atomic_fetch_add(&l->n, 1);
	if (k < l->cap)
		l->v[k] = ns;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void lat_percentiles(struct lat_log *l, struct bench_sample *s)
{
	uint64_t n = atomic_load(&l->n);
	if (n > l->cap)
		n = l->cap;
	if (n == 0)
		return;
	qsort(l->v, n, sizeof(*l->v), cmp_u64);
	s->lat_p50_ns = l->v[(n - 1) / 2];
	s->lat_p99_ns = l->v[(n - 1) * 99 / 100];
	s->lat_max_ns = l->v[n - 1];
}

/* ---- in-process target: qd threads, one request each ---- */

struct vol_run {
	struct vol *vol;
	const struct bench_job *job;
	uint64_t nops, deadline;
	_Atomic uint64_t next, done;
	_Atomic unsigned workers; /* hands each worker its buffer's slot */
	struct lat_log *lat;
	_Atomic int err;
};

static void *vol_worker(void *arg)
{
	struct vol_run *r = arg;
	const struct bench_job *j = r->job;
	unsigned char *buf;
	int e = 0;

	if (posix_memalign((void **)&buf, 4096, j->bs)) {
		atomic_store(&r->err, -ENOMEM);
		return NULL;
	}
	if (j->op == BENCH_WRITE)
		job_buf_fill(j, buf, atomic_fetch_add(&r->workers, 1));
	for (;;) {
		uint64_t i = atomic_fetch_add(&r->next, 1);
		if (i >= r->nops || atomic_load(&r->err))
			break;
		uint64_t t0 = clock_now_ns();
		/* The first request runs whatever the clock says: a worker
		 * started late on a loaded machine still measures something,
		 * never a rate of 0. */
		if (t0 >= r->deadline && i > 0)
			break;
		uint64_t off = job_offset(j, i);
		if (j->op == BENCH_WRITE) {
			job_buf_stamp(j, buf, i, off);
			e = vol_write(r->vol, buf, j->bs, off, 0);
			if (!e && j->sync_each)
				e = vol_flush(r->vol);
		} else {
			e = vol_read(r->vol, buf, j->bs, off);
			if (!e && job_writes_back(j, i)) {
				buf[0] ^= 1; /* bonnie dirties the block */
				e = vol_write(r->vol, buf, j->bs, off, 0);
			}
		}
		if (e) {
			atomic_store(&r->err, e);
			break;
		}
		lat_add(r->lat, clock_now_ns() - t0);
		atomic_fetch_add(&r->done, 1);
	}
	free(buf);
	return NULL;
}

static int run_vol(struct vol *v, const struct bench_job *j, struct lat_log *lat, uint64_t t_start,
                   uint64_t *done)
{
	struct vol_run r = {
	    .vol = v, .job = j, .nops = job_nops(j), .deadline = t_start + j->max_ns, .lat = lat};
	unsigned qd = j->qd ? j->qd : 1;
	pthread_t *th = calloc(qd, sizeof(*th));
	unsigned started = 0;

	if (!th)
		return -ENOMEM;
	for (; started < qd; started++)
		if (pthread_create(&th[started], NULL, vol_worker, &r))
			break;
	if (started == 0)
		atomic_store(&r.err, -EAGAIN);
	for (unsigned k = 0; k < started; k++)
		pthread_join(th[k], NULL);
	free(th);
	*done = atomic_load(&r.done);
	return atomic_load(&r.err);
}

/* ---- NBD target: one thread, qd asynchronous requests ---- */

struct nbd_slot {
	unsigned char *buf;
	uint64_t i, t0;
	bool reading_for_rewrite; /* the read half of a read-then-write */
	bool writing_for_sync;    /* the write half of a write-then-flush */
	bool completed;
	int error;
};

static int slot_complete(void *user_data, int *error)
{
	struct nbd_slot *s = user_data;
	s->error = *error;
	s->completed = true;
	return 1; /* retire the command */
}

static int nbd_issue(struct nbd_handle *h, const struct bench_job *j, struct nbd_slot *s,
                     bool write)
{
	uint64_t off = job_offset(j, s->i);
	nbd_completion_callback cb = {.callback = slot_complete, .user_data = s};
	int64_t c;

	s->completed = false;
	s->error = 0;
	if (write && j->op == BENCH_WRITE)
		job_buf_stamp(j, s->buf, s->i, off);
	if (write)
		c = nbd_aio_pwrite(h, s->buf, j->bs, off, cb, 0);
	else
		c = nbd_aio_pread(h, s->buf, j->bs, off, cb, 0);
	if (c < 0)
		return err_set(-(nbd_get_errno() ? nbd_get_errno() : EIO), "nbd: %s",
		               nbd_get_error());
	return 0;
}

/* *t_start: when the first request went out (the buffers are ready by
 * then); the caller's clock runs from there. */
static int run_nbd(struct nbd_handle *h, const struct bench_job *j, struct lat_log *lat,
                   uint64_t *t_start, uint64_t *done)
{
	unsigned qd = j->qd ? j->qd : 1;
	uint64_t nops = job_nops(j), next = 0, deadline;
	struct nbd_slot *slots = calloc(qd, sizeof(*slots));
	unsigned *free_q = calloc(qd, sizeof(*free_q));
	unsigned n_free = 0, in_flight = 0;
	/* A volume without a cache to flush (null:) has no flush. */
	bool sync_each = j->sync_each && nbd_can_flush(h) > 0;
	int r = 0;

	*done = 0;
	if (!slots || !free_q) {
		r = -ENOMEM;
		goto out;
	}
	for (unsigned k = 0; k < qd; k++) {
		if (posix_memalign((void **)&slots[k].buf, 4096, j->bs)) {
			r = -ENOMEM;
			goto out;
		}
		if (j->op == BENCH_WRITE)
			job_buf_fill(j, slots[k].buf, k);
		free_q[n_free++] = k;
	}
	*t_start = clock_now_ns();
	deadline = *t_start + j->max_ns;
	for (;;) {
		/* Fill the queue while there is work and time. */
		while (n_free && next < nops && r == 0) {
			uint64_t t = clock_now_ns();
			if (t >= deadline && next > 0) { /* one request at least */
				nops = next;
				break;
			}
			struct nbd_slot *s = &slots[free_q[--n_free]];
			s->i = next++;
			s->t0 = t;
			s->reading_for_rewrite = j->op != BENCH_WRITE && job_writes_back(j, s->i);
			s->writing_for_sync = j->op == BENCH_WRITE && sync_each;
			r = nbd_issue(h, j, s, j->op == BENCH_WRITE);
			if (r == 0)
				in_flight++;
		}
		if (in_flight == 0)
			break;
		if (nbd_poll(h, -1) < 0) {
			r = err_set(-EIO, "nbd: %s", nbd_get_error());
			break;
		}
		/* Handle what completed (callbacks only set flags). */
		for (unsigned k = 0; k < qd; k++) {
			struct nbd_slot *s = &slots[k];
			if (!s->completed)
				continue;
			s->completed = false;
			in_flight--;
			if (s->error && r == 0)
				r = err_set(-s->error, "nbd request failed: %s",
				            strerror(s->error));
			if (r == 0 && s->writing_for_sync) {
				/* The write is done when its flush is. */
				s->writing_for_sync = false;
				nbd_completion_callback cb = {.callback = slot_complete,
				                              .user_data = s};
				if (nbd_aio_flush(h, cb, 0) < 0) {
					r = err_set(-EIO, "nbd flush: %s", nbd_get_error());
				} else {
					in_flight++;
					continue;
				}
			}
			if (r == 0 && s->reading_for_rewrite) {
				s->reading_for_rewrite = false;
				s->buf[0] ^= 1;
				r = nbd_issue(h, j, s, true);
				if (r == 0) {
					in_flight++;
					continue;
				}
			}
			lat_add(lat, clock_now_ns() - s->t0);
			(*done)++;
			free_q[n_free++] = k;
		}
	}
out:
	if (slots)
		for (unsigned k = 0; k < qd; k++)
			free(slots[k].buf);
	free(slots);
	free(free_q);
	return r;
}

int bench_run(struct bench_target *t, const struct bench_job *job, struct bench_sample *out)
{
	struct lat_log lat = {0};
	uint64_t u0, s0, u1, s1, done = 0;
	int r;

	memset(out, 0, sizeof(*out));
	if (!pool)
		return err_set(-EINVAL, "bench: data pool not initialised");
	if (job->bs == 0 || job->bs > POOL_SIZE / 2 || job->region < job->bs ||
	    job->region > t->size)
		return err_set(-EINVAL, "bench: job does not fit the volume");
	/* Requests below the volume's block size break the vol contract
	 * (and an NBD server may refuse them): such rows are skipped. */
	uint64_t block = t->vol ? t->vol->block_min : 1;
	if (t->nbd) {
		int64_t b = nbd_get_block_size(t->nbd, LIBNBD_SIZE_MINIMUM);
		block = b > 0 ? (uint64_t)b : 1;
	}
	if (job->bs % block)
		return err_set(-EINVAL, "%u-byte requests on a volume of %llu-byte blocks", job->bs,
		               (unsigned long long)block);
	lat.cap = job_nops(job);
	if (lat.cap > LAT_CAP)
		lat.cap = LAT_CAP;
	lat.v = malloc(lat.cap * sizeof(*lat.v));
	if (!lat.v)
		return -ENOMEM;

	bench_cpu_times(t->pid, &u0, &s0);
	uint64_t t0 = clock_now_ns();
	if (t->nbd)
		r = run_nbd(t->nbd, job, &lat, &t0, &done);
	else
		r = run_vol(t->vol, job, &lat, t0, &done);
	uint64_t t1 = clock_now_ns();
	/* A write is done when it is on the volume: a cache in front of the
	 * disks (an array's write-behind, a file's page cache) would
	 * otherwise count as their speed in a short run.  So write jobs end
	 * with a flush inside their window, as fio's end_fsync does; fw keeps
	 * its two figures, without and with it. */
	bool end_flush = job->op == BENCH_WRITE && !job->fsync;
	if (r == 0 && (job->fsync || end_flush)) {
		if (t->nbd) {
			/* A volume without a cache to flush (null:) has no flush. */
			if (nbd_can_flush(t->nbd) > 0 && nbd_flush(t->nbd, 0) < 0)
				r = err_set(-EIO, "nbd flush: %s", nbd_get_error());
		} else {
			r = vol_flush(t->vol);
		}
	}
	uint64_t t2 = clock_now_ns();
	bench_cpu_times(t->pid, &u1, &s1);
	if (r == 0) {
		out->ops = done;
		out->bytes = done * job->bs;
		uint64_t end = end_flush ? t2 : t1;
		out->ns = end - t0 ? end - t0 : 1;
		out->ns_fsync = job->fsync ? t2 - t0 : 0;
		out->usr_cpu = 100.0 * (double)(u1 - u0) / (double)(t2 - t0);
		out->sys_cpu = 100.0 * (double)(s1 - s0) / (double)(t2 - t0);
		lat_percentiles(&lat, out);
	}
	free(lat.v);
	return r;
}

struct par_arg {
	struct bench_target t;
	const struct bench_job *job;
	struct bench_sample s;
	int r;
};

static void *par_worker(void *arg)
{
	struct par_arg *a = arg;
	a->r = bench_run(&a->t, a->job, &a->s);
	return NULL;
}

int bench_run_parallel(struct vol **vols, unsigned n, const struct bench_job *job,
                       struct bench_sample *out)
{
	struct par_arg *a = calloc(n, sizeof(*a));
	pthread_t *th = calloc(n, sizeof(*th));
	unsigned started = 0;
	int r = 0;

	memset(out, 0, sizeof(*out));
	if (!a || !th) {
		r = -ENOMEM;
		goto out;
	}
	for (unsigned k = 0; k < n; k++) {
		a[k].t = (struct bench_target){.vol = vols[k], .size = vols[k]->size};
		a[k].job = job;
	}
	uint64_t u0, s0, u1, s1, t0 = clock_now_ns();
	bench_cpu_times(0, &u0, &s0);
	for (; started < n; started++)
		if (pthread_create(&th[started], NULL, par_worker, &a[started]))
			break;
	for (unsigned k = 0; k < started; k++)
		pthread_join(th[k], NULL);
	bench_cpu_times(0, &u1, &s1);
	double wall = (double)(clock_now_ns() - t0);
	out->usr_cpu = 100.0 * (double)(u1 - u0) / wall;
	out->sys_cpu = 100.0 * (double)(s1 - s0) / wall;
	if (started < n)
		r = -EAGAIN;
	for (unsigned k = 0; k < started; k++) {
		if (a[k].r && !r)
			r = a[k].r;
		out->bytes += a[k].s.bytes;
		out->ops += a[k].s.ops;
		if (a[k].s.ns > out->ns)
			out->ns = a[k].s.ns;
		if (a[k].s.lat_p50_ns > out->lat_p50_ns)
			out->lat_p50_ns = a[k].s.lat_p50_ns;
		if (a[k].s.lat_p99_ns > out->lat_p99_ns)
			out->lat_p99_ns = a[k].s.lat_p99_ns;
	}
out:
	free(a);
	free(th);
	return r;
}
