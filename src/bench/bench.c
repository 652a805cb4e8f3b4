/* bench.c — the driver of `uraid bench`: parse the command line, measure
 * the ceilings (each member alone, all members at once, the cipher over
 * null members, the server over a null volume), then every layout with
 * every workload, and hand the rows to the verdict and the reports.
 *
 * Each figure is the median of --reps repetitions (min and max kept).  A
 * repetition runs until it has moved several passes of its region or until
 * --runtime has passed, so the run's length is predictable whatever the
 * disks: the default run stays well under two minutes. */
#include "bench.h"

#include "core/clock.h"
#include "core/exec.h"
#include "core/log.h"
#include "core/units.h"
#include "disc/crypt.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct wl_def {
	char name[24];
	const char *what;
	enum bench_op op;
	bool random;
	uint32_t bs;
	unsigned qd;
	bool fsync;
	bool sync_each; /* a flush after each write (fio's fsync=1) */
	int fs;         /* 0 block level; through ext4: 1 write, 2 read, 3 touch,
	                 * 4 touch again, 5 rm */
};

#define MAX_WL 48
static struct wl_def wl_table[MAX_WL];
static unsigned n_wl;

static void wl_add(const char *name, const char *what, enum bench_op op, bool random, uint32_t bs,
                   unsigned qd, bool fsync)
{
	struct wl_def *w = &wl_table[n_wl++];
	snprintf(w->name, sizeof(w->name), "%s", name);
	w->what = what;
	w->op = op;
	w->random = random;
	w->bs = bs;
	w->qd = qd;
	w->fsync = fsync;
}

/* Writes come before reads so that reads find written data. */
static void wl_init(void)
{
	static const char *const sizes[] = {"512", "1K",  "2K",   "4K",   "8K",   "16K",
	                                    "32K", "64K", "128K", "256K", "512K", "1M"};
	char name[24];

	if (n_wl)
		return;
	wl_add("write", "dd: 1 MiB writes, one at a time", BENCH_WRITE, false, 1u << 20, 1, false);
	wl_add("write-qd16", "1 MiB writes, QD16", BENCH_WRITE, false, 1u << 20, 16, false);
	wl_add("fw", "fw: 4 KiB writes, then fsync", BENCH_WRITE, false, 4096, 1, true);
	wl_add("randwrite-qd1", "4 KiB random writes, QD1", BENCH_WRITE, true, 4096, 1, false);
	wl_add("randwrite-qd32", "4 KiB random writes, QD32", BENCH_WRITE, true, 4096, 32, false);
	wl_add("randwrite-sync", "4 KiB random writes, flush after each, QD1", BENCH_WRITE, true,
	       4096, 1, false);
	wl_table[n_wl - 1].sync_each = true;
	wl_add("bonnie-write", "bonnie block write (8 KiB)", BENCH_WRITE, false, 8192, 1, false);
	wl_add("bonnie-rewrite", "bonnie rewrite (8 KiB read+write)", BENCH_REWRITE, false, 8192, 1,
	       false);
	for (unsigned i = 0; i < 12; i++) {
		snprintf(name, sizeof(name), "iozone-write-%s", sizes[i]);
		wl_add(name, "iozone write sweep", BENCH_WRITE, false, 512u << i, 1, false);
	}
	wl_add("read", "dd: 1 MiB reads, one at a time", BENCH_READ, false, 1u << 20, 1, false);
	wl_add("read-qd16", "1 MiB reads, QD16", BENCH_READ, false, 1u << 20, 16, false);
	wl_add("bonnie-read", "bonnie block read (8 KiB)", BENCH_READ, false, 8192, 1, false);
	for (unsigned i = 0; i < 12; i++) {
		snprintf(name, sizeof(name), "iozone-read-%s", sizes[i]);
		wl_add(name, "iozone read sweep", BENCH_READ, false, 512u << i, 1, false);
	}
	wl_add("randread-qd1", "4 KiB random reads, QD1", BENCH_READ, true, 4096, 1, false);
	wl_add("randread-qd32", "4 KiB random reads, QD32", BENCH_READ, true, 4096, 32, false);
	wl_add("bonnie-seeks", "bonnie seeks (8 KiB, 3 seekers, 1 in 10 rewritten)", BENCH_SEEKS,
	       true, 8192, 3, false);
	static const char *const fs_names[] = {"fs-write", "fs-read", "fs-touch", "fs-retouch",
	                                       "fs-unlink"};
	static const char *const fs_what[] = {
	    "ext4: 1 MiB file writes + fsync", "ext4: 1 MiB O_DIRECT file reads",
	    "ext4: create 10,000 empty files", "ext4: touch them again", "ext4: remove them"};
	for (int k = 0; k < 5; k++) {
		wl_add(fs_names[k], fs_what[k],
		       k == 0   ? BENCH_WRITE
		       : k == 1 ? BENCH_READ
		                : BENCH_META,
		       k >= 2, k < 2 ? 1u << 20 : 4096, 1, false);
		wl_table[n_wl - 1].fs = k + 1;
	}
}

static const struct {
	const char *name;
	const char *members; /* comma list of workloads or prefixes* */
} wl_groups[] = {
    {"default", "write,read,randwrite-qd32,randread-qd1,randread-qd32"},
    {"dd", "write,read"},
    {"fw", "fw"},
    {"rand", "randwrite-qd1,randwrite-qd32,randread-qd1,randread-qd32"},
    {"bonnie", "bonnie-write,bonnie-rewrite,bonnie-read,bonnie-seeks"},
    {"iozone", "iozone-*"},
    {"fs", "fs-*"},
    {"journal", "randwrite-sync,write,fs-touch,fs-retouch,fs-unlink"},
    {"ram", "write,write-qd16,read,read-qd16,randwrite-qd32"},
    {"all", "*"},
};

static bool name_matches(const char *pattern, const char *name)
{
	size_t n = strlen(pattern);
	if (n && pattern[n - 1] == '*')
		return strncmp(pattern, name, n - 1) == 0;
	return strcmp(pattern, name) == 0;
}

/* Mark the workloads a comma list names.  Returns 0 or -EINVAL with the
 * unknown name in the detail. */
static int wl_select(const char *list, bool *sel)
{
	char *copy = strdup(list), *save = NULL;
	int r = 0;

	if (!copy)
		return -ENOMEM;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		const char *expand = tok;
		for (size_t g = 0; g < sizeof(wl_groups) / sizeof(wl_groups[0]); g++)
			if (strcmp(tok, wl_groups[g].name) == 0)
				expand = wl_groups[g].members;
		bool any = false;
		char *c2 = strdup(expand), *s2 = NULL;
		if (!c2) {
			r = -ENOMEM;
			break;
		}
		for (char *p = strtok_r(c2, ",", &s2); p; p = strtok_r(NULL, ",", &s2))
			for (unsigned i = 0; i < n_wl; i++)
				if (name_matches(p, wl_table[i].name))
					sel[i] = any = true;
		free(c2);
		if (!any) {
			r = err_set(-EINVAL, "unknown workload '%s'", tok);
			break;
		}
	}
	free(copy);
	return r;
}

/* ---- options ---- */

struct bench_opts {
	const char *layouts;
	const char *model_name;
	const char *workloads;
	const char *target; /* "auto", "nbd", "vol" */
	const char *dir;
	const char *json, *csv, *svg;
	const char *study;
	uint64_t size;
	uint64_t runtime_ns;
	unsigned reps;
	uint64_t seed;
	bool quick;
	bool time_based; /* no pass limit: every repetition runs --runtime */
	bool ceilings;
	bool cached;
	bool layouts_set, workloads_set; /* given on the command line */
};

static void usage(FILE *f)
{
	unsigned nl, nm;
	const struct bench_layout *l = bench_layouts(&nl);
	const struct bench_model *m = bench_models(&nm);

	fprintf(f, "usage: uraid bench [OPTIONS]\n"
	           "Measure layouts over disk models, RAM or files, and name the bottleneck.\n\n"
	           "  --layout L[,L..]   layouts to run, or 'all' (default: single,luks,raid1,\n"
	           "                     raid1+luks,raid0x4,raid10)\n"
	           "  --members M        member kind (default sata80): a disk model, mem, file,\n"
	           "                     null, sim:OPTS, or ram (mem with issue 16's layouts\n"
	           "                     and workloads: the fast-member rows)\n"
	           "  --workload W[,W..] workloads or groups (default: 'default'); groups:\n"
	           "                     default dd fw rand bonnie iozone fs journal ram all\n"
	           "  --study ID         rerun a seed's study: 000 or 003\n"
	           "  --size SIZE        bytes per member (default 128M)\n"
	           "  --runtime T        cap per repetition (default 0.4s)\n"
	           "  --time-based       run every repetition for --runtime, however many\n"
	           "                     passes of the volume that takes (as fio's time_based)\n"
	           "  --reps N           repetitions per figure, median kept (default 3)\n"
	           "  --chunk SIZE       RAID chunk (default 64K)\n"
	           "  --target T         nbd (a `uraid serve` child), vol (in process), auto\n"
	           "  --dir DIR          where 'file' members go (default $TMPDIR or /var/tmp)\n"
	           "  --cached           file members through the page cache (default O_DIRECT)\n"
	           "  --no-ceilings      skip the ceiling measurements and the verdict\n"
	           "  --seed N           data and offsets (default 1)\n"
	           "  --quick            a few seconds: small volumes, one short repetition\n"
	           "  --json F --csv F --svg F   write the results\n\nlayouts:\n");
	for (unsigned i = 0; i < nl; i++)
		fprintf(f, "  %-14s %s\n", l[i].name, l[i].title);
	fprintf(f, "members:\n");
	for (unsigned i = 0; i < nm; i++)
		fprintf(f, "  %-12s %s\n", m[i].name, m[i].title);
	fprintf(f, "workloads:\n");
	wl_init();
	for (unsigned i = 0; i < n_wl; i++)
		if (strncmp(wl_table[i].name, "iozone-", 7) != 0)
			fprintf(f, "  %-16s %s\n", wl_table[i].name, wl_table[i].what);
	fprintf(f, "  iozone-write-SIZE, iozone-read-SIZE  (512 .. 1M)\n");
}

/* ---- interruption ---- */

/* Ctrl-C stops the server now (a blocked request then fails) and lets the
 * driver unwind, so that no server and no scratch file outlives the run. */
static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
	if (bench_server_live > 0)
		kill(bench_server_live, SIGKILL);
}

/* ---- progress ---- */

static bool progress_tty;
static unsigned progress_done, progress_total;

static void progress(const char *what, const char *detail)
{
	if (!progress_tty)
		return;
	fprintf(stderr, "\r\033[K[%3u/%3u] %s %s", progress_done, progress_total, what, detail);
	fflush(stderr);
}

static void progress_end(void)
{
	if (progress_tty)
		fprintf(stderr, "\r\033[K");
}

/* ---- measuring ---- */

static struct bench_job make_job(const struct wl_def *w, uint64_t size, const struct bench_opts *o)
{
	struct bench_job j = {.op = w->op,
	                      .random = w->random,
	                      .bs = w->bs,
	                      .qd = w->qd,
	                      .fsync = w->fsync,
	                      .sync_each = w->sync_each,
	                      .seed = o->seed};
	j.region = size - size % w->bs;
	/* Several passes, unless time runs out first; or the whole
	 * --runtime, like fio's time_based. */
	j.max_bytes = o->time_based ? UINT64_MAX : j.region * 64;
	j.max_ns = o->runtime_ns;
	return j;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static struct bench_stat stat_of(double *v, unsigned n)
{
	struct bench_stat s = {0, 0, 0};
	if (!n)
		return s;
	qsort(v, n, sizeof(*v), cmp_double);
	s.min = v[0];
	s.max = v[n - 1];
	s.med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	return s;
}

/* Repeat a job; fill the figures of row (median, min, max).  vols/n_vols
 * instead of t: run on several vols at once and report the figure per
 * vol (seed 003's parallel arrays) or the sum (ceilings, per_vol false). */
static int measure(struct bench_target *t, struct vol **vols, unsigned n_vols, bool per_vol,
                   const struct bench_job *j, unsigned reps, struct bench_row *row)
{
	double bw[16], iops[16], bwf[16];
	struct bench_sample s[16];
	int r = 0;

	if (reps > 16)
		reps = 16;
	for (unsigned k = 0; k < reps; k++) {
		if (interrupted)
			return err_set(-EINTR, "interrupted");
		if (vols)
			r = bench_run_parallel(vols, n_vols, j, &s[k]);
		else
			r = bench_run(t, j, &s[k]);
		if (r < 0)
			return r;
		double div = vols && per_vol ? n_vols : 1;
		double sec = (double)s[k].ns / 1e9;
		bw[k] = (double)s[k].bytes / sec / div;
		iops[k] = (double)s[k].ops / sec / div;
		bwf[k] =
		    s[k].ns_fsync ? (double)s[k].bytes / ((double)s[k].ns_fsync / 1e9) / div : 0;
	}
	/* Latency and CPU from the repetition closest to the median. */
	double sorted[16];
	memcpy(sorted, bw, sizeof(double) * reps);
	struct bench_stat st = stat_of(sorted, reps);
	unsigned best = 0;
	for (unsigned k = 1; k < reps; k++)
		if (__builtin_fabs(bw[k] - st.med) < __builtin_fabs(bw[best] - st.med))
			best = k;
	row->bw = st;
	row->iops = stat_of(iops, reps);
	row->bw_fsync = stat_of(bwf, reps);
	row->reps = reps;
	row->lat_p50_ns = s[best].lat_p50_ns;
	row->lat_p99_ns = s[best].lat_p99_ns;
	row->usr_cpu = s[best].usr_cpu;
	row->sys_cpu = s[best].sys_cpu;
	return 0;
}

/* A row through the file system on the served volume. */
static int measure_fs(struct bench_fs *fs, const struct wl_def *w, pid_t srv, uint64_t vol_size,
                      const struct bench_opts *o, struct bench_row *row)
{
	double bw[16], iops[16], usr[16], sys[16];
	unsigned reps = w->fs <= 2 ? (o->reps > 16 ? 16 : o->reps) : 1;
	uint64_t bytes = vol_size / 2 < (256u << 20) ? vol_size / 2 : 256u << 20;
	int r = 0;

	for (unsigned k = 0; k < reps && r == 0; k++) {
		struct bench_sample s;
		uint64_t u0, s0, u1, s1;
		if (interrupted)
			return err_set(-EINTR, "interrupted");
		bench_cpu_times(srv, &u0, &s0);
		if (w->fs <= 2)
			r = bench_fs_seq(fs, w->fs == 1, bytes, o->runtime_ns, bench_data(), &s);
		else
			r = bench_fs_meta(fs, w->fs - 3, o->quick ? 1000 : 10000, &s);
		bench_cpu_times(srv, &u1, &s1);
		double sec = (double)(s.ns ? s.ns : 1) / 1e9;
		bw[k] = (double)s.bytes / sec;
		iops[k] = (double)s.ops / sec;
		usr[k] = 100.0 * (double)(u1 - u0) / 1e9 / sec;
		sys[k] = 100.0 * (double)(s1 - s0) / 1e9 / sec;
	}
	if (r < 0)
		return r;
	row->reps = reps;
	row->bw = stat_of(bw, reps);
	row->iops = stat_of(iops, reps);
	row->usr_cpu = stat_of(usr, reps).med;
	row->sys_cpu = stat_of(sys, reps).med;
	return 0;
}

/* The ceilings of one workload: per member count, what the members give
 * alone and all at once; the cipher over null; the server over null. */
struct wl_ceilings {
	double alone[16]; /* by kind index: one member of that kind alone */
	double all[17];   /* by member count */
	double cipher;
	double transport;
	double journal; /* one BENCH_JOURNAL_MODEL member alone (writes only) */
};

static void ceil_note(const char *what, int r)
{
	progress_end();
	fprintf(stderr, "uraid bench: %s: %s (ceiling not measured)\n", what, err_detail(r));
}

/* RAM members (--members ram) are written once before their ceilings
 * are measured, as the served members (files on tmpfs, allocated whole)
 * are: a fresh mem: member's first touch of each page costs a fault and
 * its zeroing, which would make the copy ceiling a page-fault rate. */
static void ram_warm(struct vol **vols, unsigned n, const struct bench_kinds *k,
                     const struct bench_opts *o)
{
	for (unsigned i = 0; i < n; i++) {
		if (strcmp(k->m[i % k->n]->name, "ram") != 0)
			continue;
		struct bench_target t = {.vol = vols[i], .size = vols[i]->size};
		struct bench_job j = {.op = BENCH_WRITE,
		                      .bs = 1u << 20,
		                      .qd = 1,
		                      .seed = o->seed,
		                      .max_ns = 10000000000ull};
		struct bench_sample s;
		j.region = t.size - t.size % j.bs;
		j.max_bytes = j.region;
		(void)bench_run(&t, &j, &s);
	}
}

static void measure_ceilings(const struct wl_def *w, const struct bench_kinds *k,
                             const bool *counts, bool want_cipher, bool want_transport,
                             bool want_journal, struct bench_target *null_srv,
                             const struct bench_opts *o, struct wl_ceilings *c)
{
	struct bench_row tmp;
	struct vol *vols[16];
	int r = 0;

	memset(c, 0, sizeof(*c));
	progress("ceilings", w->name);
	/* One member of each kind alone; a layout's `one` is its slowest
	 * member's, since a stripe or a mirror write waits for it. */
	for (unsigned i = 0; i < k->n; i++) {
		bool seen = false;
		for (unsigned j = 0; j < i; j++)
			seen |= k->m[j] == k->m[i];
		if (seen) {
			for (unsigned j = 0; j < i; j++)
				if (k->m[j] == k->m[i])
					c->alone[i] = c->alone[j];
			continue;
		}
		struct bench_kinds one = {.m = {k->m[i]}, .n = 1};
		r = bench_members_open(&one, 1, o->size, !o->cached, o->dir, vols);
		if (r == 0) {
			ram_warm(vols, 1, &one, o);
			struct bench_target t = {.vol = vols[0], .size = vols[0]->size};
			struct bench_job j = make_job(w, vols[0]->size, o);
			if ((r = measure(&t, NULL, 0, false, &j, o->reps, &tmp)) == 0)
				c->alone[i] = tmp.bw.med;
			vol_close(vols[0]);
		}
		if (r < 0)
			ceil_note("one member", r);
	}
	for (unsigned n = 2; n <= 16; n++) {
		if (!counts[n])
			continue;
		r = bench_members_open(k, n, o->size, !o->cached, o->dir, vols);
		if (r == 0) {
			ram_warm(vols, n, k, o);
			struct bench_job j = make_job(w, vols[0]->size, o);
			if ((r = measure(NULL, vols, n, false, &j, o->reps, &tmp)) == 0)
				c->all[n] = tmp.bw.med;
			for (unsigned i = 0; i < n; i++)
				vol_close(vols[i]);
		}
		if (r < 0)
			ceil_note("all members", r);
	}
	if (want_cipher) {
		static const struct bench_layout luks_null = {"luks", "crypto", BENCH_SINGLE,
		                                              1,      true,     false};
		struct bench_model nm;
		struct bench_kinds nk = {.m = {bench_model_find("null", &nm)}, .n = 1};
		struct vol *v;
		r = bench_layout_open(&luks_null, &nk, o->size, false, o->dir, &v);
		if (r == 0) {
			struct bench_target t = {.vol = v, .size = v->size};
			struct bench_job j = make_job(w, v->size, o);
			if ((r = measure(&t, NULL, 0, false, &j, o->reps, &tmp)) == 0)
				c->cipher = tmp.bw.med;
			vol_close(v);
		}
		if (r < 0)
			ceil_note("cipher over null", r);
	}
	if (want_journal && w->op == BENCH_WRITE) {
		struct bench_model jm;
		struct bench_kinds jk = {.m = {bench_model_find(BENCH_JOURNAL_MODEL, &jm)}, .n = 1};
		r = bench_members_open(&jk, 1, o->size, !o->cached, o->dir, vols);
		if (r == 0) {
			struct bench_target t = {.vol = vols[0], .size = vols[0]->size};
			struct bench_job j = make_job(w, vols[0]->size, o);
			if ((r = measure(&t, NULL, 0, false, &j, o->reps, &tmp)) == 0)
				c->journal = tmp.bw.med;
			vol_close(vols[0]);
		}
		if (r < 0)
			ceil_note("the journal device alone", r);
	}
	if (want_transport && null_srv->nbd) {
		uint64_t region = null_srv->size < o->size ? null_srv->size : o->size;
		struct bench_job j = make_job(w, region, o);
		r = measure(null_srv, NULL, 0, false, &j, o->reps, &tmp);
		if (r == 0)
			c->transport = tmp.bw.med;
		else
			ceil_note("server over null", r);
	}
}

/* ---- the run ---- */

/* A fresh target's first requests pay for thread start-up and page
 * faults: run a little unmeasured load first. */
static void warm_up(struct bench_target *t, const struct bench_opts *o)
{
	struct bench_job j = {.op = BENCH_READ,
	                      .random = true,
	                      .bs = 4096,
	                      .qd = 8,
	                      .seed = o->seed,
	                      .max_ns = 30000000};
	struct bench_sample s;

	j.region = t->size < (64u << 20) ? t->size - t->size % 4096 : 64u << 20;
	j.max_bytes = j.region;
	(void)bench_run(t, &j, &s);
}

static int fail_file(const char *path, int r)
{
	fprintf(stderr, "uraid: bench: %s: %s\n", path, err_detail(r));
	return 1;
}

static void fill_row_head(struct bench_row *row, const struct bench_layout *l,
                          const char *members, const struct wl_def *w, const char *target)
{
	memset(row, 0, sizeof(*row));
	snprintf(row->layout, sizeof(row->layout), "%s", l->name);
	snprintf(row->title, sizeof(row->title), "%s", l->title);
	snprintf(row->model, sizeof(row->model), "%.63s", members);
	snprintf(row->workload, sizeof(row->workload), "%.23s", w->name);
	snprintf(row->target, sizeof(row->target), "%s", target);
	row->op = w->op;
	row->random = w->random;
	row->bs = w->bs;
	row->qd = w->qd;
}

static int parse_opts(int argc, char **argv, struct bench_opts *o)
{
	enum {
		O_LAYOUT = 256,
		O_MEMBERS,
		O_WORKLOAD,
		O_STUDY,
		O_SIZE,
		O_RUNTIME,
		O_REPS,
		O_CHUNK,
		O_TARGET,
		O_DIR,
		O_CACHED,
		O_NOCEIL,
		O_SEED,
		O_QUICK,
		O_TIMEBASED,
		O_JSON,
		O_CSV,
		O_SVG,
		O_HELP
	};
	static const struct option lo[] = {
	    {"layout", required_argument, NULL, O_LAYOUT},
	    {"members", required_argument, NULL, O_MEMBERS},
	    {"workload", required_argument, NULL, O_WORKLOAD},
	    {"study", required_argument, NULL, O_STUDY},
	    {"size", required_argument, NULL, O_SIZE},
	    {"runtime", required_argument, NULL, O_RUNTIME},
	    {"reps", required_argument, NULL, O_REPS},
	    {"chunk", required_argument, NULL, O_CHUNK},
	    {"target", required_argument, NULL, O_TARGET},
	    {"dir", required_argument, NULL, O_DIR},
	    {"cached", no_argument, NULL, O_CACHED},
	    {"no-ceilings", no_argument, NULL, O_NOCEIL},
	    {"seed", required_argument, NULL, O_SEED},
	    {"quick", no_argument, NULL, O_QUICK},
	    {"time-based", no_argument, NULL, O_TIMEBASED},
	    {"json", required_argument, NULL, O_JSON},
	    {"csv", required_argument, NULL, O_CSV},
	    {"svg", required_argument, NULL, O_SVG},
	    {"help", no_argument, NULL, O_HELP},
	    {NULL, 0, NULL, 0},
	};
	bool size_set = false, rt_set = false, reps_set = false;
	uint64_t v;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case O_LAYOUT:
			o->layouts = optarg;
			o->layouts_set = true;
			break;
		case O_MEMBERS:
			o->model_name = optarg;
			break;
		case O_WORKLOAD:
			o->workloads = optarg;
			o->workloads_set = true;
			break;
		case O_STUDY:
			o->study = optarg;
			break;
		case O_TARGET:
			o->target = optarg;
			break;
		case O_DIR:
			o->dir = optarg;
			break;
		case O_CACHED:
			o->cached = true;
			break;
		case O_NOCEIL:
			o->ceilings = false;
			break;
		case O_QUICK:
			o->quick = true;
			break;
		case O_TIMEBASED:
			o->time_based = true;
			break;
		case O_JSON:
			o->json = optarg;
			break;
		case O_CSV:
			o->csv = optarg;
			break;
		case O_SVG:
			o->svg = optarg;
			break;
		case O_SIZE:
			if (parse_size(optarg, &o->size) < 0 || o->size < (1u << 20))
				return err_set(-EINVAL, "--size: '%s' is not a size of 1M or more",
				               optarg);
			size_set = true;
			break;
		case O_RUNTIME:
			if (parse_duration_ns(optarg, 1000000000ULL, &o->runtime_ns) < 0 ||
			    o->runtime_ns == 0)
				return err_set(-EINVAL, "--runtime: '%s' is not a duration",
				               optarg);
			rt_set = true;
			break;
		case O_REPS:
			o->reps = (unsigned)atoi(optarg);
			if (o->reps < 1 || o->reps > 16)
				return err_set(-EINVAL, "--reps: 1 to 16");
			reps_set = true;
			break;
		case O_CHUNK:
			if (parse_size(optarg, &v) < 0 || v < 4096 || v > (64u << 20) ||
			    (v & (v - 1)))
				return err_set(-EINVAL, "--chunk: a power of two from 4K to 64M");
			bench_chunk = (uint32_t)v;
			break;
		case O_SEED:
			o->seed = strtoull(optarg, NULL, 0);
			break;
		case O_HELP:
		case 'h':
			usage(stdout);
			return 1;
		default:
			return err_set(-EINVAL, "unknown option (try 'uraid bench --help')");
		}
	}
	if (optind < argc)
		return err_set(-EINVAL, "unexpected argument '%s'", argv[optind]);
	if (o->quick) {
		if (!size_set)
			o->size = 32u << 20; /* room for a LUKS2 header (16 MiB) */
		if (!rt_set)
			o->runtime_ns = 100000000;
		if (!reps_set)
			o->reps = 1;
	}
	if (strcmp(o->target, "auto") && strcmp(o->target, "nbd") && strcmp(o->target, "vol"))
		return err_set(-EINVAL, "--target: nbd, vol or auto");
	return 0;
}

static void build_cmdline(const struct bench_opts *o, struct bench_report *rep)
{
	char sz[32], *c = rep->cmdline;
	size_t n = sizeof(rep->cmdline);

	snprintf(sz, sizeof(sz), "%lluK", (unsigned long long)(o->size >> 10));
	snprintf(c, n,
	         "uraid bench%s%s --layout %s --members %s --workload %s --size %s "
	         "--runtime %.3fs%s --reps %u --chunk %uK --target %s --seed %llu%s%s",
	         o->study ? " --study " : "", o->study ? o->study : "", o->layouts, o->model_name,
	         o->workloads, sz, (double)o->runtime_ns / 1e9,
	         o->time_based ? " --time-based" : "", o->reps, bench_chunk >> 10, o->target,
	         (unsigned long long)o->seed, o->cached ? " --cached" : "",
	         o->ceilings ? "" : " --no-ceilings");
}

/* Is `uraid serve` in this build?  Try it on a null volume, which is also
 * the transport ceiling's server. */
static int start_null_server(const struct bench_opts *o, struct bench_server *s,
                             struct bench_target *t)
{
	static const struct bench_layout single = {"null", "null volume", BENCH_SINGLE,
	                                           1,      false,         false};
	struct bench_model nm;
	struct bench_kinds nk = {.m = {bench_model_find("null", &nm)}, .n = 1};
	return bench_server_start(&single, &nk, o->size * 8, false, o->dir, s, t);
}

int bench_main(int argc, char **argv)
{
	struct bench_opts o = {
	    .layouts = "single,luks,raid1,raid1+luks,raid0x4,raid10",
	    .model_name = "sata80",
	    .workloads = "default",
	    .target = "auto",
	    /* Room for a 0.4 s stream on two mirrored 80 MB/s disks under
	     * LUKS2's 16 MiB header: a stream that reaches the end of the
	     * volume wraps to its start and pays a seek and a new ramp. */
	    .size = 128u << 20,
	    .runtime_ns = 400000000,
	    .reps = 3,
	    .seed = 1,
	    .ceilings = true,
	};
	struct bench_report rep = {0};
	struct bench_model custom[16];
	char custom_names[16][64];
	struct bench_kinds kinds = {.n = 0};
	const struct bench_study *study = NULL;
	const struct bench_layout *lay[32];
	unsigned n_lay = 0;
	bool sel[MAX_WL] = {false};
	char dirbuf[256] = "";
	struct bench_server null_srv = {0};
	struct bench_target null_t = {0};
	struct wl_ceilings *ceil = NULL;
	bool use_nbd;
	int r, rc = 1;

	wl_init();
	r = parse_opts(argc, argv, &o);
	if (r > 0)
		return 0;
	if (r < 0) {
		fprintf(stderr, "uraid: bench: %s\n", err_detail(r));
		return 2;
	}
	if (o.study) {
		study = bench_study_find(o.study);
		if (!study) {
			fprintf(stderr, "uraid: bench: unknown study '%s' (000 or 003)\n", o.study);
			return 2;
		}
		/* The study's own layouts, disks and workloads unless overridden. */
		bool l_given = false, m_given = false, w_given = false;
		for (int i = 1; i < argc; i++) {
			l_given |= strncmp(argv[i], "--layout", 8) == 0;
			m_given |= strncmp(argv[i], "--members", 9) == 0;
			w_given |= strncmp(argv[i], "--workload", 10) == 0;
		}
		static char study_layouts[256];
		study_layouts[0] = 0;
		for (unsigned i = 0; i < study->n; i++) {
			bool seen = false;
			for (unsigned k = 0; k < i; k++)
				seen |= strcmp(study->rows[k].layout, study->rows[i].layout) == 0;
			if (seen)
				continue;
			size_t u = strlen(study_layouts);
			snprintf(study_layouts + u, sizeof(study_layouts) - u, "%s%s", u ? "," : "",
			         study->rows[i].layout);
		}
		if (!l_given)
			o.layouts = study_layouts;
		if (!m_given)
			o.model_name = study->model;
		if (!w_given)
			o.workloads = study->workloads;
		snprintf(rep.study, sizeof(rep.study), "%s", study->id);
	}
	{
		char *copy = strdup(o.model_name), *save = NULL;
		for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			const struct bench_model *m =
			        kinds.n < 16 ? bench_model_find(tok, &custom[kinds.n]) : NULL;
			if (!m) {
				fprintf(stderr, "uraid: bench: unknown member kind '%s' (try --help)\n",
				        tok);
				free(copy);
				return 2;
			}
			/* Keep a custom kind's name alive past the copy. */
			if (m == &custom[kinds.n]) {
				snprintf(custom_names[kinds.n], sizeof(custom_names[0]), "%s", tok);
				custom[kinds.n].name = custom[kinds.n].title = custom_names[kinds.n];
				custom[kinds.n].sim = custom_names[kinds.n] + 4;
			}
			kinds.m[kinds.n++] = m;
		}
		free(copy);
		if (kinds.n == 0) {
			fprintf(stderr, "uraid: bench: --members: no member kind given\n");
			return 2;
		}
	}
	/* --members ram: mem members (served: files on tmpfs) with issue
	 * 16's rows (RAID1x2, RAID0x2 and x4, LUKS2 alone and on RAID1,
	 * beside one member; 1 MiB at QD1 and QD16, 4 KiB random writes at
	 * QD32) unless the layouts or workloads are given, and the verdict's
	 * RAM rules (verdict.c) when every member is of that kind. */
	bool all_ram = true, ram_preset = false;
	for (unsigned i = 0; i < kinds.n; i++) {
		bool ram = strcmp(kinds.m[i]->name, "ram") == 0;
		all_ram &= ram;
		ram_preset |= ram;
	}
	if (ram_preset && !o.layouts_set)
		o.layouts = "single,raid1,raid0x2,raid0x4,luks,raid1+luks";
	if (ram_preset && !o.workloads_set)
		o.workloads = "ram";
	if (strcmp(o.layouts, "all") == 0) {
		unsigned nl;
		const struct bench_layout *all = bench_layouts(&nl);
		for (unsigned i = 0; i < nl; i++)
			lay[n_lay++] = &all[i];
	} else {
		char *copy = strdup(o.layouts), *save = NULL;
		for (char *tok = strtok_r(copy, ",", &save); tok;
		     tok = strtok_r(NULL, ",", &save)) {
			const struct bench_layout *l = bench_layout_find(tok);
			if (!l) {
				fprintf(stderr, "uraid: bench: unknown layout '%s' (try --help)\n",
				        tok);
				free(copy);
				return 2;
			}
			if (n_lay < 32)
				lay[n_lay++] = l;
		}
		free(copy);
	}
	r = wl_select(o.workloads, sel);
	if (r < 0) {
		fprintf(stderr, "uraid: bench: %s (try --help)\n", err_detail(r));
		return 2;
	}
	if (!o.dir) {
		const char *tmp = getenv("TMPDIR");
		snprintf(dirbuf, sizeof(dirbuf), "%s/uraid-bench-XXXXXX",
		         tmp && *tmp ? tmp : "/var/tmp");
		if (!mkdtemp(dirbuf)) {
			fprintf(stderr, "uraid: bench: %s: %s\n", dirbuf, strerror(errno));
			return 1;
		}
		o.dir = dirbuf;
	}
	if (bench_data_init(o.seed) < 0) {
		fprintf(stderr, "uraid: bench: out of memory\n");
		goto out;
	}
	progress_tty = isatty(2);
	struct sigaction sa = {.sa_handler = on_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	rep.cores = exec_cpu_count();
	rep.size = o.size;
	uint64_t t_start = clock_now_ns();

	/* The target: a served volume if this build serves, else in process. */
	use_nbd = false;
	if (strcmp(o.target, "vol") != 0) {
		progress("starting", "uraid serve");
		r = start_null_server(&o, &null_srv, &null_t);
		if (r == 0) {
			use_nbd = true;
			warm_up(&null_t, &o);
		} else if (strcmp(o.target, "nbd") == 0) {
			progress_end();
			fprintf(stderr, "uraid: bench: cannot serve: %s\n", err_detail(r));
			goto out;
		} else {
			progress_end();
			fprintf(stderr, "uraid bench: measuring in process (uraid serve: %s)\n",
			        err_detail(r));
		}
	}
	o.target = use_nbd ? "nbd" : "vol";
	build_cmdline(&o, &rep);

	/* What the ceilings need: member counts, the cipher, the transport. */
	bool counts[17] = {false}, want_cipher = false, want_journal = false;
	for (unsigned i = 0; i < n_lay; i++) {
		unsigned n = lay[i]->n * (lay[i]->parallel ? 2 : 1);
		if (n <= 16)
			counts[n] = true;
		want_cipher |= lay[i]->luks;
		want_journal |= bench_log_journal(lay[i]);
	}
	progress_total = 0;
	for (unsigned w = 0; w < n_wl; w++)
		if (sel[w])
			progress_total += n_lay + (o.ceilings ? 1 : 0);
	ceil = calloc(n_wl, sizeof(*ceil));
	if (!ceil)
		goto out;
	if (o.ceilings)
		for (unsigned w = 0; w < n_wl && !interrupted; w++) {
			if (!sel[w] || wl_table[w].fs)
				continue;
			measure_ceilings(&wl_table[w], &kinds, counts, want_cipher, use_nbd,
			                 want_journal, &null_t, &o, &ceil[w]);
			progress_done++;
		}
	bench_server_stop(&null_srv, &null_t);

	for (unsigned i = 0; i < n_lay && !interrupted; i++) {
		const struct bench_layout *l = lay[i];
		struct bench_server srv = {0};
		struct bench_target t = {0};
		struct vol *tops[2] = {NULL, NULL};
		const char *why = NULL, *target = "vol";
		char skip[160] = "", fs_why[160] = "";
		struct bench_fs fs = {0};
		int fs_state = 0; /* 0 not tried, 1 mounted, -1 cannot */

		progress(l->name, "building");
		if (!bench_layout_available(l, &why)) {
			snprintf(skip, sizeof(skip), "%s", why);
		} else if (use_nbd && !l->parallel && l->level != BENCH_RAID01 &&
		           (r = bench_server_start(l, &kinds, o.size, !o.cached, o.dir, &srv, &t)) ==
		               0) {
			target = "nbd";
		} else if (use_nbd && l->log != BENCH_LOG_NONE) {
			/* A journal or PPL has no in-process build: the server's
			 * reason is the row's. */
			snprintf(skip, sizeof(skip), "%s", err_detail(r));
		} else {
			/* In process: always for paired or nested arrays, and
			 * when the server cannot build this one. */
			if (use_nbd && !l->parallel && l->level != BENCH_RAID01) {
				progress_end();
				fprintf(stderr, "uraid bench: %s: measured in process: %s\n",
				        l->name, err_detail(r));
			}
			r = bench_layout_open(l, &kinds, o.size, !o.cached, o.dir, &tops[0]);
			if (r == 0 && l->parallel &&
			    (r = bench_layout_open(l, &kinds, o.size, !o.cached, o.dir, &tops[1])) < 0) {
				vol_close(tops[0]);
				tops[0] = NULL;
			}
			if (r < 0)
				snprintf(skip, sizeof(skip), "%s", err_detail(r));
			else
				t = (struct bench_target){.vol = tops[0], .size = tops[0]->size};
		}
		if (!skip[0])
			warm_up(&t, &o);
		for (unsigned w = 0; w < n_wl; w++) {
			if (!sel[w])
				continue;
			const struct wl_def *wd = &wl_table[w];
			struct bench_row *row = bench_report_add(&rep);
			if (!row)
				goto out;
			fill_row_head(row, l, o.model_name, wd, target);
			progress_done++;
			if (skip[0]) {
				snprintf(row->skipped, sizeof(row->skipped), "%s", skip);
				continue;
			}
			progress(l->name, wd->name);
			if (wd->fs) {
				if (strcmp(target, "nbd") != 0) {
					snprintf(row->skipped, sizeof(row->skipped),
					         "file system rows need the served volume");
					continue;
				}
				if (fs_state == 0) {
					r = bench_fs_mount(srv.sock, o.dir, &fs);
					fs_state = r == 0 ? 1 : -1;
					if (r < 0)
						snprintf(fs_why, sizeof(fs_why), "%s",
						         err_detail(r));
				}
				if (fs_state < 0) {
					snprintf(row->skipped, sizeof(row->skipped), "%s", fs_why);
					continue;
				}
				r = measure_fs(&fs, wd, srv.pid, t.size, &o, row);
				if (r < 0)
					snprintf(row->skipped, sizeof(row->skipped), "failed: %s",
					         err_detail(r));
				continue;
			}
			struct bench_job j = make_job(wd, t.size, &o);
			r = l->parallel ? measure(NULL, tops, 2, true, &j, o.reps, row)
			                : measure(&t, NULL, 0, false, &j, o.reps, row);
			if (r < 0) {
				snprintf(row->skipped, sizeof(row->skipped), "%s%s",
				         r == -EINVAL ? "" : "failed: ", err_detail(r));
				continue;
			}
			if (!o.ceilings)
				continue;
			struct wl_ceilings *c = &ceil[w];
			unsigned n_all = l->n * (l->parallel ? 2 : 1);
			double all = n_all <= 16 ? c->all[n_all] : 0;
			if (l->parallel)
				all /= 2;
			double one = 0;
			for (unsigned m = 0; m < l->n; m++) {
				double a = c->alone[m % kinds.n];
				if (a > 0 && (one == 0 || a < one))
					one = a;
			}
			if (l->n == 1)
				all = one;
			row->disk_one = one;
			row->disk_all = all;
			row->ceil.disks = bench_disk_ideal(l->level, l->n, wd->op, wd->bs, wd->qd,
			                                   bench_chunk, one, all);
			row->ceil.cipher = l->luks ? c->cipher : 0;
			row->ceil.transport = strcmp(target, "nbd") == 0 ? c->transport : 0;
			row->ceil.journal =
			    bench_log_journal(l)
			        ? bench_journal_ideal(l->level, l->n, c->journal,
			                              l->log == BENCH_LOG_JOURNAL_WB)
			        : 0;
			row->ceil.cpu_pct = row->usr_cpu + row->sys_cpu;
			row->ceil.cpu_cap_pct = 100.0 * rep.cores;
			row->ceil.ram = all_ram;
			bench_verdict(row->bw.med, &row->ceil, &row->v);
		}
		if (fs_state > 0)
			bench_fs_umount(&fs);
		bench_server_stop(&srv, &t);
		if (tops[0])
			vol_close(tops[0]);
		if (tops[1])
			vol_close(tops[1]);
	}
	progress_end();
	rep.seconds = (double)(clock_now_ns() - t_start) / 1e9;

	bench_print_table(stdout, &rep);
	if (study)
		bench_print_study(stdout, study, &rep);
	rc = 0;
	if (o.json && (r = bench_write_json(o.json, &rep)) < 0)
		rc = fail_file(o.json, r);
	if (o.csv && (r = bench_write_csv(o.csv, &rep)) < 0)
		rc = fail_file(o.csv, r);
	if (o.svg && (r = bench_write_svg(o.svg, &rep)) < 0)
		rc = fail_file(o.svg, r);
out:
	bench_server_stop(&null_srv, &null_t);
	free(ceil);
	bench_report_free(&rep);
	bench_data_free();
	if (dirbuf[0])
		rmdir(dirbuf);
	if (interrupted) {
		fprintf(stderr, "uraid bench: interrupted\n");
		return 130;
	}
	return rc;
}
