/* test_crash.c — the write-hole oracle.  A RAID5 (4 members) and a RAID6
 * (5 members) made with md_create() and assembled with md_assemble_one(),
 * as `uraid create` and `uraid serve` do, over crash members
 * (fault:crash=GROUP, src/member/fault.c) on member files; a few threads
 * write at random (4 KiB to two stripes, most of them partial stripes, a
 * few FUA) with a FLUSH every few writes; the power of every member is cut
 * at a random point.  Then the member files are assembled again two ways:
 *
 *  - without one member (a random one): dirty and degraded, which must be
 *    refused writable with a message naming the write hole; then forced
 *    read-only (under a policy with a log: started writable, the log
 *    replayed);
 *  - with every member: writable, so that the resync recomputes parity;
 *    then, clean, without the same member again, so that what is read
 *    of it is what the resync made the parity.
 *
 * Each time every 4 KiB block of the array is compared with the oracle:
 * (a) a block whose last write was made durable (acknowledged before a
 * FLUSH that completed, or a FUA write acknowledged) reads back that write;
 * (b) a block no write touched reads back as it was (zeros, as md_create
 * left it).  Blocks whose last write was not durable may hold anything of
 * it and are not judged.  Without PPL or a journal the degraded start
 * shows the hole over the seeds (counted and printed: it must be seen at
 * least once); the resync start must never.
 *
 * The policies that close the hole (md's PPL, the raid5-cache journal in
 * write-through or write-back) have a row each in crash_policies[]; the
 * one place that sets their create options is crash_policy_create().  A
 * row marked supported runs, and must then show no hole degraded either.
 * A journal is one more crash member of the same power group, passed at
 * every start (the degraded one leaves out a data member, never it).  The
 * rule judged is (a) and (b) for every policy: write-through promises more
 * (every write acknowledged before the cut, flushed or not), which this
 * oracle does not check. */
#include "check.h"

#include "core/log.h"
#include "disc/raid/raid_types.h"
#include "md/md.h"
#include "md/md_create.h"
#include "member/member.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CRASH_MAX_MEMBERS 6           /* a RAID6's 5 and a journal */
#define CRASH_MEMBER_BYTES (3u << 20) /* 1 MiB of it md's headroom */
#define CRASH_CHUNK_KIB 16
#define CRASH_BLOCK 4096u
#define CRASH_THREADS 3
#define CRASH_MAX_WRITES 1024
#define CRASH_SEEDS 12       /* per level; the whole test stays well under 30 s under ASan */
#define CRASH_SEEDS_BEHIND 4 /* per level and log, written behind */

enum crash_policy { CRASH_NONE, CRASH_PPL, CRASH_JOURNAL_WT, CRASH_JOURNAL_WB };

static const struct {
	enum crash_policy policy;
	const char *name;
	bool supported; /* md_create() can make it and assembly honours it */
	bool raid6;     /* md offers it on RAID6 too (PPL is RAID5's alone) */
} crash_policies[] = {
    {CRASH_NONE, "none", true, true},
    {CRASH_PPL, "ppl", true, false},
    {CRASH_JOURNAL_WT, "journal write-through", true, true},
    {CRASH_JOURNAL_WB, "journal write-back", true, true},
};

static const char *member_path(unsigned i);

/* The create options a policy adds to the level's defaults; a journal is
 * member file n, after the n data members, in their crash group. */
static void crash_policy_create(enum crash_policy policy, unsigned n, struct md_create_opts *o)
{
	switch (policy) {
	case CRASH_PPL:
		o->ppl = true;
		o->bitmap = 0; /* md keeps one or the other */
		break;
	case CRASH_JOURNAL_WT:
	case CRASH_JOURNAL_WB:
		o->journal = member_path(n);
		o->bitmap = 0;
		break;
	case CRASH_NONE:
		break;
	}
}

/* Member files a policy adds to the n data members (its journal). */
static unsigned crash_policy_extra(enum crash_policy policy)
{
	return policy == CRASH_JOURNAL_WT || policy == CRASH_JOURNAL_WB;
}

static char dir[64];
static bool behind; /* write-behind forced on (URAID_WB_MODE=1) */
static unsigned seeds = CRASH_SEEDS;
static unsigned writers = CRASH_THREADS; /* writer threads of a round */
static uint64_t behind_whole;            /* stripes the lanes wrote whole, all rounds */
static uint64_t wb_behind_whole;         /* ... of them, under a write-back journal */

static const char *member_path(unsigned i)
{
	static char p[CRASH_MAX_MEMBERS][96];
	snprintf(p[i], sizeof(p[i]), "%s/m%u.img", dir, i);
	return p[i];
}

/* Where member i is kept as the power cut left it. */
static const char *saved_path(unsigned i)
{
	static char p[CRASH_MAX_MEMBERS][96];
	snprintf(p[i], sizeof(p[i]), "%s/s%u.img", dir, i);
	return p[i];
}

/* Copy file from to file to: 0 or -1. */
static int crash_copy(const char *from, const char *to)
{
	static char buf[1 << 16];
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ssize_t got = in < 0 || out < 0 ? -1 : 0;

	while (got >= 0 && (got = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)got) != got)
			got = -1;
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	CHECK(got == 0);
	return got == 0 ? 0 : -1;
}

/* One write of the workload, as the oracle saw it.  Ticks are a logical
 * clock under the workload's lock. */
struct crash_write {
	uint64_t off, len;
	unsigned char *data;
	bool fua;
	uint64_t ack; /* tick of a successful completion; 0: failed or none */
};

struct crash_run {
	struct vol *arr;
	unsigned long long seed;
	pthread_mutex_t lock; /* everything below */
	uint64_t tick;
	uint64_t flushed; /* the start tick of the latest flush that completed */
	struct crash_write w[CRASH_MAX_WRITES];
	unsigned nw, acked;
	int *last; /* per block: the last write to start on it, -1 none */
	int inflight[CRASH_THREADS];
	uint64_t stripe; /* bytes of data in a stripe */
	atomic_bool stop;
};

static bool overlaps(const struct crash_write *w, uint64_t off, uint64_t len)
{
	return off < w->off + w->len && w->off < off + len;
}

struct crash_thread {
	struct crash_run *run;
	unsigned id;
};

/* Writes at random, never overlapping a write in flight (so that the
 * writes of a block are ordered), a flush every 2..5 writes, until the
 * power is gone or the run is stopped. */
static void *crash_writer(void *arg)
{
	struct crash_thread *t = arg;
	struct crash_run *run = t->run;
	unsigned long long rng = run->seed * 7919 + t->id + 1;
	uint64_t blocks = run->arr->size / CRASH_BLOCK;
	unsigned until_flush = 3 + (unsigned)(check_rand(&rng) % 8);

	while (!atomic_load(&run->stop)) {
		uint64_t nb = 1 + check_rand(&rng) % (2 * run->stripe / CRASH_BLOCK);
		uint64_t len = nb * CRASH_BLOCK;
		uint64_t off = check_rand(&rng) % (blocks - nb + 1) * CRASH_BLOCK;
		bool fua = check_rand(&rng) % 16 == 0;
		unsigned char *data = malloc(len);
		for (uint64_t i = 0; i < len; i += 8) {
			uint64_t v = check_rand(&rng);
			memcpy(data + i, &v, 8);
		}

		pthread_mutex_lock(&run->lock);
		bool busy = run->nw == CRASH_MAX_WRITES;
		for (unsigned i = 0; i < CRASH_THREADS && !busy; i++)
			busy =
			    run->inflight[i] >= 0 && overlaps(&run->w[run->inflight[i]], off, len);
		if (busy) {
			pthread_mutex_unlock(&run->lock);
			free(data);
			if (run->nw == CRASH_MAX_WRITES)
				break;
			continue;
		}
		int id = (int)run->nw++;
		run->w[id] = (struct crash_write){.off = off, .len = len, .data = data, .fua = fua};
		for (uint64_t b = off / CRASH_BLOCK; b < (off + len) / CRASH_BLOCK; b++)
			run->last[b] = id;
		run->inflight[t->id] = id;
		run->tick++;
		pthread_mutex_unlock(&run->lock);

		int r = vol_write(run->arr, data, len, off, fua ? VOL_FUA : 0);

		pthread_mutex_lock(&run->lock);
		run->inflight[t->id] = -1;
		if (r == 0) {
			run->w[id].ack = ++run->tick;
			run->acked++;
		}
		pthread_mutex_unlock(&run->lock);
		if (r < 0)
			break;
		if (--until_flush == 0) {
			until_flush = 3 + (unsigned)(check_rand(&rng) % 8);
			pthread_mutex_lock(&run->lock);
			uint64_t begun = ++run->tick;
			pthread_mutex_unlock(&run->lock);
			if (vol_flush(run->arr) < 0)
				break;
			pthread_mutex_lock(&run->lock);
			if (begun > run->flushed)
				run->flushed = begun;
			pthread_mutex_unlock(&run->lock);
		}
	}
	return NULL;
}

/* What the oracle found in one assembled array. */
struct crash_verdict {
	unsigned durable_bad;   /* (a): blocks whose durable last write is not there */
	unsigned untouched_bad; /* (b): blocks never written that changed */
	unsigned judged;        /* blocks compared */
};

static bool crash_durable(const struct crash_run *run, const struct crash_write *w)
{
	return w->ack && (w->fua || w->ack < run->flushed);
}

static int crash_verify(const struct crash_run *run, struct vol *arr, struct crash_verdict *v)
{
	static const unsigned char zero[CRASH_BLOCK];
	unsigned char got[CRASH_BLOCK];

	*v = (struct crash_verdict){0};
	for (uint64_t b = 0; b < arr->size / CRASH_BLOCK; b++) {
		int id = run->last[b];
		const unsigned char *want = zero;
		if (id >= 0) {
			const struct crash_write *w = &run->w[id];
			if (!crash_durable(run, w))
				continue;
			want = w->data + (b * CRASH_BLOCK - w->off);
		}
		int r = vol_read(arr, got, CRASH_BLOCK, b * CRASH_BLOCK);
		if (r < 0)
			return r;
		v->judged++;
		if (memcmp(got, want, CRASH_BLOCK) != 0) {
			if (id >= 0)
				v->durable_bad++;
			else
				v->untouched_bad++;
		}
	}
	return 0;
}

/* md_assemble_one() of the n member files (a journal among them), member
 * `left_out` (or none: n) not among them: its return, or member_open()'s
 * error. */
static int crash_start(unsigned n, unsigned left_out, const struct md_assemble_opts *o,
                       struct vol **arr)
{
	struct vol *m[CRASH_MAX_MEMBERS];
	unsigned k = 0;

	for (unsigned i = 0; i < n; i++) {
		if (i == left_out)
			continue;
		int r = member_open(member_path(i), o->readonly ? MEMBER_READONLY : 0, &m[k]);
		if (r < 0) {
			while (k)
				vol_close(m[--k]);
			return r;
		}
		k++;
	}
	err_clear();
	return md_assemble_one(m, k, o, arr);
}

/* Start the member files (as crash_start), compare them with the oracle,
 * close: 0, or -1 after saying what failed. */
static int crash_check(const struct crash_run *run, unsigned n, unsigned left_out,
                       const struct md_assemble_opts *o, const char *what, struct crash_verdict *v)
{
	struct vol *arr;
	int r = crash_start(n, left_out, o, &arr);

	if (r < 0) {
		fprintf(stderr, "%s: %s\n", what, err_detail(r));
		CHECK(0);
		return -1;
	}
	r = crash_verify(run, arr, v);
	CHECK_EQ(r, 0);
	vol_close(arr);
	return r < 0 ? -1 : 0;
}

struct crash_result {
	bool ok; /* the round ran through (else a failure was reported) */
	struct crash_verdict degraded, resynced;
};

/* Make the array, write, cut the power, check both starts. */
static void crash_round(int level, enum crash_policy policy, unsigned long long seed,
                        struct crash_result *res)
{
	unsigned n = level == 5 ? 4 : 5, nall = n + crash_policy_extra(policy);
	unsigned long long rng = seed * 104729 + (unsigned)level;
	struct crash_run *run = calloc(1, sizeof(*run));
	struct md_create_opts o;
	struct md_created made;
	struct vol *m[CRASH_MAX_MEMBERS], *arr = NULL;
	pthread_t th[CRASH_THREADS];
	struct crash_thread targ[CRASH_THREADS];
	char *specs[CRASH_MAX_MEMBERS], group[64], spec[256];
	unsigned left_out;
	int r;

	*res = (struct crash_result){0};
	pthread_mutex_init(&run->lock, NULL);
	run->seed = seed;
	for (unsigned i = 0; i < nall; i++) {
		int fd = open(member_path(i), O_RDWR | O_CREAT | O_TRUNC, 0600);
		CHECK(fd >= 0 && ftruncate(fd, CRASH_MEMBER_BYTES) == 0);
		close(fd);
		specs[i] = (char *)member_path(i);
	}
	md_create_defaults(level, &o);
	o.chunk_kib = CRASH_CHUNK_KIB;
	crash_policy_create(policy, n, &o);
	err_clear();
	r = md_create(specs, n, &o, &made);
	if (r < 0) {
		fprintf(stderr, "md_create: %s\n", err_detail(r));
		CHECK(0);
		goto out;
	}

	/* The run: crash members, one power group (the journal's too). */
	snprintf(group, sizeof(group), "raid%d-%llu", level, seed);
	for (unsigned i = 0; i < nall; i++) {
		snprintf(spec, sizeof(spec), "fault:crash=%s,seed=%llu:%s", group, seed,
		         member_path(i));
		r = member_open(spec, 0, &m[i]);
		CHECK_EQ(r, 0);
		if (r < 0) {
			while (i)
				vol_close(m[--i]);
			goto out;
		}
	}
	/* Write-back is a serve option (md's sysfs journal_mode), not on disk:
	 * the run and the full start use it, the degraded start not. */
	struct md_assemble_opts ao = {.journal_writeback = policy == CRASH_JOURNAL_WB};
	err_clear();
	r = md_assemble_one(m, nall, &ao, &arr);
	if (r < 0) {
		fprintf(stderr, "assemble: %s\n", err_detail(r));
		CHECK(0);
		goto out;
	}
	run->arr = arr;
	run->stripe = (uint64_t)CRASH_CHUNK_KIB * 1024 * (n - md_level_parity(level));
	run->last = malloc(arr->size / CRASH_BLOCK * sizeof(*run->last));
	for (uint64_t b = 0; b < arr->size / CRASH_BLOCK; b++)
		run->last[b] = -1;
	for (unsigned i = 0; i < CRASH_THREADS; i++)
		run->inflight[i] = -1;
	for (unsigned i = 0; i < writers; i++) {
		targ[i] = (struct crash_thread){run, i};
		pthread_create(&th[i], NULL, crash_writer, &targ[i]);
	}
	unsigned cut_at = 10 + (unsigned)(check_rand(&rng) % 40);
	for (;;) {
		pthread_mutex_lock(&run->lock);
		bool enough = run->acked >= cut_at || run->nw == CRASH_MAX_WRITES;
		pthread_mutex_unlock(&run->lock);
		if (enough)
			break;
		usleep(200);
	}
	CHECK_EQ(fault_power_cut(group), 0);
	atomic_store(&run->stop, true);
	for (unsigned i = 0; i < writers; i++)
		pthread_join(th[i], NULL);
	uint64_t whole, partial;
	raid_wb_counts(md_array_raid(arr), &whole, &partial);
	behind_whole += whole;
	if (policy == CRASH_JOURNAL_WB)
		wb_behind_whole += whole;
	vol_close(arr); /* cannot mark it clean: the power is gone */
	arr = NULL;

	/* Each start below begins from the members as the cut left them. */
	for (unsigned i = 0; i < nall; i++)
		if (crash_copy(member_path(i), saved_path(i)) < 0)
			goto out;

	/* Dirty and degraded.  Without a log: refused writable, naming the
	 * hole, then forced read-only, to see what the hole did.  With one,
	 * md starts it writable (the log is replayed) and the hole is closed. */
	left_out = (unsigned)(check_rand(&rng) % n);
	struct md_assemble_opts deg = {.run_degraded = true};
	if (policy == CRASH_NONE) {
		r = crash_start(nall, left_out, &deg, &arr);
		CHECK_EQ(r, -EUCLEAN);
		if (r == -EUCLEAN && !strstr(err_detail(r), "write hole")) {
			fprintf(stderr, "refusal does not name the write hole: %s\n",
			        err_detail(r));
			CHECK(0);
		}
		if (r == 0)
			vol_close(arr);
		deg.readonly = deg.start_dirty_degraded = true;
	}
	if (crash_check(run, nall, left_out, &deg, "degraded start", &res->degraded) < 0)
		goto out;

	/* Every member back, writable: resynced (or the log replayed) before
	 * it starts. */
	for (unsigned i = 0; i < nall; i++)
		if (crash_copy(saved_path(i), member_path(i)) < 0)
			goto out;
	if (crash_check(run, nall, nall, &ao, "full start", &res->resynced) < 0)
		goto out;

	/* Parity is what the resync made it: the same member left out, the
	 * clean array reads the same. */
	struct crash_verdict again;
	struct md_assemble_opts after = {.readonly = true, .run_degraded = true};
	if (crash_check(run, nall, left_out, &after, "degraded start after the resync", &again) < 0)
		goto out;
	res->resynced.durable_bad += again.durable_bad;
	res->resynced.untouched_bad += again.untouched_bad;
	res->ok = true;
out:
	for (unsigned i = 0; i < run->nw; i++)
		free(run->w[i].data);
	free(run->last);
	pthread_mutex_destroy(&run->lock);
	free(run);
}

/* CRASH_SEEDS rounds of level under policy: how many show the hole
 * degraded, and none may show it after a resync (nor, under a policy that
 * closes it, degraded). */
static void crash_level(int level, unsigned p)
{
	bool closes_hole = crash_policies[p].policy != CRASH_NONE;
	unsigned holes = 0, durable = 0, untouched = 0, resync_bad = 0;

	for (unsigned long long seed = check_seed_base() + 1; seed <= check_seed_base() + seeds;
	     seed++) {
		struct crash_result res;
		crash_round(level, crash_policies[p].policy, seed, &res);
		if (!res.ok)
			continue;
		const struct crash_verdict *d = &res.degraded, *f = &res.resynced;
		holes += d->durable_bad + d->untouched_bad > 0;
		durable += d->durable_bad > 0;
		untouched += d->untouched_bad > 0;
		if (closes_hole && d->durable_bad + d->untouched_bad)
			fprintf(stderr, "raid%d %s seed %llu: degraded %u+%u bad blocks\n", level,
			        crash_policies[p].name, seed, d->durable_bad, d->untouched_bad);
		if (f->durable_bad + f->untouched_bad) {
			resync_bad++;
			fprintf(stderr, "raid%d %s seed %llu: after resync %u+%u bad blocks\n",
			        level, crash_policies[p].name, seed, f->durable_bad,
			        f->untouched_bad);
		}
	}
	printf("raid%d, %s%s: the write hole in %u of %d seeds degraded (durable writes lost in "
	       "%u, untouched blocks changed in %u); %u seeds bad after resync\n",
	       level, crash_policies[p].name, behind ? " (written behind)" : "", holes, seeds,
	       durable, untouched, resync_bad);
	CHECK_EQ(resync_bad, 0);
	if (closes_hole)
		CHECK_EQ(holes, 0);
	else
		CHECK(untouched > 0);
}

/* Write-back, written behind (URAID_WB_MODE=1): a stream of writes of
 * whole rows goes to the array while the cache is empty, its pieces' DATA
 * and PARITY logged by a log lane after the write returned; a 4 KiB write
 * into the last one's rows right after it is cached (its DATA logged).
 * Then a FLUSH and the power cut: after replay the 4 KiB write reads
 * back.  A page is cached only once write-behind holds nothing
 * (md_jcache.c), so that its DATA follows the piece's in the log; were it
 * logged first, replay would pair the piece's older DATA of that page
 * with the piece's PARITY and write it over the flushed page. */
static void crash_wb_order(void)
{
	const unsigned n = 4, nall = 5, rounds = check_seeds(12);
	const uint64_t row = (uint64_t)CRASH_CHUNK_KIB * 1024 * (n - 1), len = 4 * row;
	unsigned lost = 0, done = 0;
	char *big = malloc(len), page[CRASH_BLOCK], got[CRASH_BLOCK];
	unsigned long long rng = check_seed(99);

	for (unsigned k = 0; k < rounds; k++) {
		struct md_create_opts o;
		struct md_created made;
		struct md_assemble_opts ao = {.journal_writeback = true};
		struct vol *m[CRASH_MAX_MEMBERS], *arr = NULL;
		char *specs[CRASH_MAX_MEMBERS], group[32], spec[256];
		unsigned opened = 0;
		int r;

		for (unsigned i = 0; i < nall; i++) {
			int fd = open(member_path(i), O_RDWR | O_CREAT | O_TRUNC, 0600);
			CHECK(fd >= 0 && ftruncate(fd, CRASH_MEMBER_BYTES) == 0);
			close(fd);
			specs[i] = (char *)member_path(i);
		}
		md_create_defaults(5, &o);
		o.chunk_kib = CRASH_CHUNK_KIB;
		crash_policy_create(CRASH_JOURNAL_WB, n, &o);
		err_clear();
		if ((r = md_create(specs, n, &o, &made)) < 0) {
			fprintf(stderr, "md_create: %s\n", err_detail(r));
			CHECK(0);
			break;
		}
		snprintf(group, sizeof(group), "wborder-%u", k);
		for (; opened < nall; opened++) {
			snprintf(spec, sizeof(spec), "fault:crash=%s,seed=%u:%s", group, k,
			         member_path(opened));
			if ((r = member_open(spec, 0, &m[opened])) < 0)
				break;
		}
		CHECK_EQ(opened, nall);
		if (opened < nall || (r = md_assemble_one(m, nall, &ao, &arr)) < 0) {
			if (opened == nall)
				fprintf(stderr, "assemble: %s\n", err_detail(r));
			while (opened < nall && opened)
				vol_close(m[--opened]);
			CHECK(0);
			break;
		}
		/* three back-to-back writes: the third is the stream's */
		for (unsigned w = 0; w < 3; w++) {
			for (uint64_t i = 0; i < len; i++)
				big[i] = (char)check_rand(&rng);
			CHECK_EQ(vol_write(arr, big, len, w * len, 0), 0);
		}
		uint64_t at = 2 * len + check_rand(&rng) % (len / CRASH_BLOCK) * CRASH_BLOCK;
		memset(page, (int)(0x41 + k), sizeof(page));
		CHECK_EQ(vol_write(arr, page, sizeof(page), at, 0), 0);
		CHECK_EQ(vol_flush(arr), 0);
		CHECK_EQ(fault_power_cut(group), 0);
		vol_close(arr);
		arr = NULL;
		if (crash_start(nall, nall, &ao, &arr) < 0) {
			fprintf(stderr, "start after the cut: %s\n", err_detail(-EIO));
			CHECK(0);
			break;
		}
		CHECK_EQ(vol_read(arr, got, sizeof(got), at), 0);
		lost += memcmp(got, page, sizeof(page)) != 0;
		done++;
		vol_close(arr);
	}
	printf("write-back, a page cached after a stream written behind: lost in %u of %u rounds\n",
	       lost, done);
	CHECK_EQ(lost, 0);
	CHECK_EQ(done, rounds);
	free(big);
}

int main(void)
{
	log_verbosity = -1;
	seeds = check_seeds(CRASH_SEEDS);
	snprintf(dir, sizeof(dir), "/tmp/uraid-crash-XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	for (unsigned p = 0; p < sizeof(crash_policies) / sizeof(crash_policies[0]); p++) {
		if (!crash_policies[p].supported)
			continue;
		crash_level(5, p);
		if (crash_policies[p].raid6)
			crash_level(6, p);
	}
	/* The logs again with every write that can be staged written behind
	 * (the workload's streams are short: small pieces, so that they
	 * seal whole stripes): the lanes log what they write. */
	setenv("URAID_WB_MODE", "1", 1);
	setenv("URAID_WB_PART", "65536", 1);
	behind = true;
	seeds = check_seeds(CRASH_SEEDS_BEHIND);
	writers = 1; /* write-behind takes a write that has nothing beside it */
	behind_whole = 0;
	crash_wb_order();
	for (unsigned p = 0; p < sizeof(crash_policies) / sizeof(crash_policies[0]); p++) {
		/* write-back too: a write of whole rows while its cache is empty
		 * goes to the array, written behind (md_jcache.c) */
		if (!crash_policies[p].supported || crash_policies[p].policy == CRASH_NONE)
			continue;
		crash_level(5, p);
		if (crash_policies[p].raid6)
			crash_level(6, p);
	}
	CHECK(behind_whole > 0);    /* the lanes did write (and log) stripes */
	CHECK(wb_behind_whole > 0); /* ... write-back's stream writes among them */
	for (unsigned i = 0; i < CRASH_MAX_MEMBERS; i++) {
		unlink(member_path(i));
		unlink(saved_path(i));
	}
	rmdir(dir);
	return check_done();
}
