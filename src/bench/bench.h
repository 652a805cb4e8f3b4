/* bench.h — `uraid bench`: reproduce the seeds' studies and name the
 * bottleneck.
 *
 * The pieces, one file each:
 *   workload.c  the load generator: a job (op, pattern, block size, queue
 *               depth) run against a target (a served volume over NBD, or
 *               a vol stack in this process), timed per request, with the
 *               server's CPU time sampled around it.
 *   layout.c    the layouts (single, luks, raid1, raid0x4 ...) and member
 *               kinds (mem, file, null, disk models), built either in
 *               process or as a `uraid serve` child.
 *   verdict.c   the pure decision: from a measured figure and the ceilings,
 *               the ideal, the efficiency and the name of the bound.
 *   report.c    the terminal table, JSON, CSV and the SVG chart.
 *   study.c     the seeds' own figures, for --study.
 *   bench.c     the driver and the command line.
 * Rates are bytes per second throughout; times are nanoseconds. */
#ifndef URAID_BENCH_H
#define URAID_BENCH_H

#include "core/vol.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* ---- jobs and their samples (workload.c) ---- */

enum bench_op {
	BENCH_READ,
	BENCH_WRITE,
	BENCH_REWRITE, /* read a block, change it, write it back (bonnie) */
	BENCH_SEEKS,   /* random reads, one in ten written back (bonnie) */
	BENCH_META,    /* file creation, touch, unlink through a file system */
};

struct bench_job {
	enum bench_op op;
	bool random;        /* else sequential from offset 0, wrapping */
	uint32_t bs;        /* request size */
	unsigned qd;        /* requests in flight */
	uint64_t region;    /* bytes of the volume used, from offset 0 */
	uint64_t max_bytes; /* stop after this much (0: one pass of region) */
	uint64_t max_ns;    /* or after this long, whichever comes first */
	bool fsync;         /* flush at the end; timed apart (seed 003's fw) */
	bool sync_each;     /* a flush after every write, inside that write's
	                     * latency (fio's fsync=1): what a database's
	                     * commit pays */
	uint64_t seed;      /* random offsets and data; same seed, same run */
};

/* One repetition of a job. */
struct bench_sample {
	uint64_t bytes, ops;
	uint64_t ns;       /* issuing the requests, up to the last reply */
	uint64_t ns_fsync; /* ns plus the final flush (job.fsync only) */
	uint64_t lat_p50_ns, lat_p99_ns, lat_max_ns;
	double usr_cpu, sys_cpu; /* the server's CPU time, % of one core */
};

/* Where requests go: a volume served by a `uraid serve` child over NBD,
 * or a vol stack in this process (no transport). */
struct bench_target {
	struct vol *vol;        /* in-process target, or NULL */
	struct nbd_handle *nbd; /* NBD target, or NULL */
	pid_t pid;              /* the process whose CPU time is the server's */
	uint64_t size;
};

/* Random incompressible data behind every write: each request slot's
 * buffer is filled from its own slice, and each write stamps its sectors
 * (workload.c).  Call once before any job; thread-safe afterwards. */
int bench_data_init(uint64_t seed);
void bench_data_free(void);

/* Run one repetition.  Returns 0 or -errno with err_set() detail. */
int bench_run(struct bench_target *t, const struct bench_job *job, struct bench_sample *out);

/* The random pool (bench_data_init()), at least 32 MiB. */
const void *bench_data(void);
/* The CPU time of process pid (0: this one) so far, ns user and system. */
void bench_cpu_times(pid_t pid, uint64_t *usr, uint64_t *sys);

/* Run the same job on n vols at once, each with its own queue: what all
 * members deliver together.  out gets the summed bytes over the longest
 * time. */
int bench_run_parallel(struct vol **vols, unsigned n, const struct bench_job *job,
                       struct bench_sample *out);

/* ---- the verdict (verdict.c), a pure function ---- */

struct bench_ceilings {
	double disks;       /* what the layout's members can deliver, already
	                     * scaled by bench_disk_ideal(); 0 = not measured */
	double cipher;      /* the cipher alone on null members; 0 = no cipher */
	double transport;   /* the server over a null volume; 0 = in-process */
	double journal;     /* the journal device alone under the same job,
	                     * its flushes included; 0 = no journal */
	double cpu_pct;     /* the server's usr+sys during the run, % of a core */
	double cpu_cap_pct; /* 100 x cores available */
	bool ram;           /* the members are RAM: their ceiling is the copy
	                     * into them ("copy"), and a row the stages one
	                     * after another explain is "series" */
};

struct bench_verdict {
	double ideal;      /* the lowest ceiling, bytes/s (0: none known) */
	double efficiency; /* measured / ideal */
	const char *bound; /* "disks" ("copy" on RAM members), "cipher",
	                    * "transport", "journal", "series" (RAM members),
	                    * "cpu", "uraid itself" or "unknown" */
	double series;     /* RAM members: the ceilings' stages run one after
	                    * another, 1 / sum(1 / rate), bytes/s (else 0) */
};

/* Below this efficiency the lowest ceiling does not explain the figure. */
#define BENCH_EXPLAINED 0.80
/* The server is CPU-bound when it uses this share of the cores or more. */
#define BENCH_CPU_SATURATED 0.90

void bench_verdict(double measured, const struct bench_ceilings *c, struct bench_verdict *v);

/* What a layout's disks should deliver for a request stream, from one
 * member alone (one) and all members at once (all, the sum): RAID1 reads
 * use every copy, writes go to all copies, RAID0 uses every member, RAID10
 * half of them for writes, RAID5/6 the data members, and a write of less
 * than a stripe there reads first (half).  A stream of small requests
 * keeps at most qd members busy.  level: BENCH_SINGLE, 0, 1, 10 or BENCH_RAID01. */
#define BENCH_SINGLE (-2)
#define BENCH_RAID01 (-3)
double bench_disk_ideal(int level, unsigned n, enum bench_op op, uint32_t bs, unsigned qd,
                        uint32_t chunk, double one, double all);
/* What md's journal lets an n-member RAID5/6 write, from its device alone
 * under the same job (alone): the parity is logged too, so at best the
 * data members' share of it. */
double bench_journal_ideal(int level, unsigned n, double alone, bool writeback);

/* ---- layouts and members (layout.c) ---- */

/* How a RAID5 layout closes md's write hole. */
enum bench_log {
	BENCH_LOG_NONE,
	BENCH_LOG_JOURNAL,    /* md's raid5-cache journal on one more member */
	BENCH_LOG_JOURNAL_WB, /* the same, served --journal-mode=write-back */
	BENCH_LOG_PPL,        /* md's partial parity log, on the members */
};

/* The disk model of a journal member, whatever --members says: the
 * journal is the fast device in front of the slow ones (issue 15). */
#define BENCH_JOURNAL_MODEL "ssd"

struct bench_layout {
	const char *name;  /* as --layout takes it: "raid1+luks" */
	const char *title; /* for the table: "2 disk RAID1 + crypto" */
	int level;         /* BENCH_SINGLE, 0, 1, 10, BENCH_RAID01 */
	unsigned n;        /* members */
	bool luks;
	bool parallel;      /* two such arrays at once, figure per array
	                     * (seed 003's "p" rows) */
	enum bench_log log; /* journal or PPL: served only (md metadata) */
};

/* The RAID chunk of every striped layout (--chunk; 64 KiB, the chunk of
 * the seeds' arrays, so a 1 MiB request spans up to 16 members). */
extern uint32_t bench_chunk;

const struct bench_layout *bench_layout_find(const char *name);
/* Whether the layout has md's journal (either mode). */
bool bench_log_journal(const struct bench_layout *l);
/* The whole table, for --help and for `--layout all`. */
const struct bench_layout *bench_layouts(unsigned *n);

/* A member kind: a disk model, RAM, a file on this machine's disk, or
 * null (the ceiling probe). */
struct bench_model {
	const char *name; /* "sata80", "u320-15k", "ssd", "mem", "file", "null" */
	const char *title;
	const char *sim; /* sim: options, or NULL for none */
	double seed_mbs; /* the post's own single-disk figure, MB/s */
};

/* The member kinds of a run: member i of a layout is m[i % n], so
 * "--members sata80,sata80,sim:20M" makes every third member slow. */
struct bench_kinds {
	const struct bench_model *m[16];
	unsigned n;
};

/* Known name, or a literal "sim:OPTS" (kept in *custom).  Returns NULL if
 * unknown. */
const struct bench_model *bench_model_find(const char *name, struct bench_model *custom);
const struct bench_model *bench_models(unsigned *n);

/* Whether the code for a layout is in this build (RAID levels and the
 * cipher arrive in their own files). */
bool bench_layout_available(const struct bench_layout *l, const char **why);

/* Build the layout in this process over fresh members of kinds k, each
 * member_size bytes.  Returns 0 with *top, or -errno with detail. */
int bench_layout_open(const struct bench_layout *l, const struct bench_kinds *k,
                      uint64_t member_size, bool direct, const char *dir, struct vol **top);
/* Open n bare members, member i of kind k->m[i % k->n] (the disk
 * ceilings). */
int bench_members_open(const struct bench_kinds *k, unsigned n, uint64_t member_size, bool direct,
                       const char *dir, struct vol **out);

/* A `uraid serve` child exporting the layout over a Unix socket. */
struct bench_server {
	pid_t pid;
	char dir[256]; /* scratch: members, key file, socket */
	char sock[300];
	char cmdline[2048]; /* how to run the same server by hand */
};

/* Create the members (md superblocks with `uraid create`, a LUKS header
 * with `uraid luks-format`), start the server and connect.  Returns 0, or
 * -errno with detail (-ENOSYS when this build cannot serve the layout). */
int bench_server_start(const struct bench_layout *l, const struct bench_kinds *k,
                       uint64_t member_size, bool direct, const char *parent_dir,
                       struct bench_server *s, struct bench_target *t);
void bench_server_stop(struct bench_server *s, struct bench_target *t);
/* The running server's pid (0: none), for a signal handler to stop it. */
extern volatile pid_t bench_server_live;

/* ---- through a file system (fs.c) ---- */

struct bench_fs {
	pid_t fuse_pid;
	bool mounted;
	char dir[300];
	char mnt[320];
	char disk[330];
	char loop[64];
};

/* nbdfuse + losetup + mkfs.ext4 + mount of the volume served on sock.
 * -ENOTSUP with the reason as detail when this machine cannot. */
int bench_fs_mount(const char *sock, const char *scratch, struct bench_fs *fs);
void bench_fs_umount(struct bench_fs *fs);
/* 1 MiB sequential file writes (fsync inside the time) or O_DIRECT reads. */
int bench_fs_seq(struct bench_fs *fs, bool write, uint64_t bytes, uint64_t max_ns, const void *data,
                 struct bench_sample *out);
/* Seed 004's metadata test, phase 0 touch, 1 touch again, 2 rm. */
int bench_fs_meta(struct bench_fs *fs, int phase, unsigned nfiles, struct bench_sample *out);

/* ---- one run's results (bench.c fills, report.c prints) ---- */

struct bench_stat {
	double med, min, max;
};

struct bench_row {
	char layout[32];
	char title[64];
	char model[64];
	char workload[32];
	char target[8]; /* "nbd" or "vol" */
	enum bench_op op;
	bool random;
	uint32_t bs;
	unsigned qd;
	unsigned reps;
	struct bench_stat bw; /* bytes/s */
	struct bench_stat iops;
	struct bench_stat bw_fsync;      /* fw only */
	uint64_t lat_p50_ns, lat_p99_ns; /* of the median repetition */
	double usr_cpu, sys_cpu;
	struct bench_ceilings ceil;
	double disk_one, disk_all; /* the raw member figures behind ceil.disks */
	struct bench_verdict v;
	char skipped[160]; /* why the row has no figures, or "" */
};

struct bench_report {
	struct bench_row *rows;
	unsigned n, cap;
	char cmdline[1024]; /* reproduces the run */
	char study[8];      /* "000", "003" or "" */
	unsigned cores;
	uint64_t size; /* bytes per member */
	double seconds;
};

struct bench_row *bench_report_add(struct bench_report *r);
void bench_report_free(struct bench_report *r);

void bench_print_table(FILE *f, const struct bench_report *r);
int bench_write_json(const char *path, const struct bench_report *r);
int bench_write_csv(const char *path, const struct bench_report *r);
int bench_write_svg(const char *path, const struct bench_report *r);

/* ---- studies (study.c) ---- */

struct bench_study_row {
	const char *layout; /* our layout name */
	const char *title;  /* the post's words */
	double write, read; /* the post's MB/s (0: not measured there) */
	bool parallel;      /* two arrays at once (seed 003's "p" rows) */
	bool fs;            /* through a file system (fs-write, fs-read) */
};

struct bench_study {
	const char *id; /* "000" */
	const char *title;
	const char *model;     /* the disk model that matches the post */
	const char *source;    /* what the post measured with */
	const char *workloads; /* what --study runs by default */
	const struct bench_study_row *rows;
	unsigned n;
};

const struct bench_study *bench_study_find(const char *id);
void bench_print_study(FILE *f, const struct bench_study *s, const struct bench_report *r);

/* The command: `uraid bench [OPTIONS]`. */
int bench_main(int argc, char **argv);

#endif
