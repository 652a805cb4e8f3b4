/* layout.c — the arrays `uraid bench` measures and the members they are
 * made of.
 *
 * A layout is built two ways.  In process (target "vol"), the members are
 * opened with member_open() and the disciplines stacked directly with
 * raid_open() and crypt_open(): no metadata, no transport, what the stack
 * itself can do.  Served (target "nbd"), the members are files (on tmpfs
 * for mem: and disk models, so that `uraid create` and `uraid serve` see
 * the same bytes), written with md superblocks and a LUKS header by the
 * real commands, and exported by a `uraid serve` child: what a user gets.
 *
 * Members of a disk model are sim:PRESET wrapped around memory, so the
 * model alone decides the member's speed. */
#include "bench.h"

#include "core/log.h"
#include "core/units.h"
#include "disc/crypt.h"
#include "disc/raid/raid.h"
#include "md/md.h"
#include "member/member.h"

#include <errno.h>
#include <fcntl.h>
#include <libnbd.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

uint32_t bench_chunk = 64u << 10;
#define BENCH_PASSPHRASE "uraid-bench"

static const struct bench_layout layouts[] = {
    {"single", "single disk", BENCH_SINGLE, 1, false, false},
    {"luks", "single disk + crypto", BENCH_SINGLE, 1, true, false},
    {"raid1", "2 disk RAID1", 1, 2, false, false},
    {"raid1+luks", "2 disk RAID1 + crypto", 1, 2, true, false},
    {"raid0x2", "2 disk RAID0", 0, 2, false, false},
    {"raid0x4", "4 disk RAID0", 0, 4, false, false},
    {"raid0x4p", "4 disk RAID0, two at once", 0, 4, false, true},
    {"raid0x8", "8 disk RAID0", 0, 8, false, false},
    {"raid10", "4 disk RAID10", 10, 4, false, false},
    {"raid10x8", "8 disk RAID10 (1+0)", 10, 8, false, false},
    {"raid0+1", "8 disk RAID0+1", BENCH_RAID01, 8, false, false},
    {"raid5x4", "4 disk RAID5", 5, 4, false, false},
    {"raid5x4p", "4 disk RAID5, two at once", 5, 4, false, true},
    {"raid5x8", "8 disk RAID5", 5, 8, false, false},
    {"raid6x4", "4 disk RAID6", 6, 4, false, false},
    {"raid5+journal", "4 disk RAID5 + ssd journal", 5, 4, false, false, BENCH_LOG_JOURNAL},
    {"raid5+journal-wb", "4 disk RAID5 + ssd journal, write-back", 5, 4, false, false,
     BENCH_LOG_JOURNAL_WB},
    {"raid5+ppl", "4 disk RAID5 + PPL", 5, 4, false, false, BENCH_LOG_PPL},
};

static const struct bench_model models[] = {
    {"sata80", "80 MB/s SATA disk (seed 000)", "sata80", 80},
    {"u320-15k", "15k rpm U320 SCSI disk (seed 003)", "u320-15k", 76},
    {"ssd", "500 MB/s SATA SSD, 0.5 ms flush (sim:ssd)", "ssd", 500},
    {"mem", "RAM", NULL, 0},
    {"ram", "RAM, issue 16's layouts and workloads, judged as copies", NULL, 0},
    {"file", "file on this machine's disk", NULL, 0},
    {"null", "null (reads zeros, drops writes)", NULL, 0},
};

bool bench_log_journal(const struct bench_layout *l)
{
	return l->log == BENCH_LOG_JOURNAL || l->log == BENCH_LOG_JOURNAL_WB;
}

const struct bench_layout *bench_layouts(unsigned *n)
{
	*n = sizeof(layouts) / sizeof(layouts[0]);
	return layouts;
}

const struct bench_layout *bench_layout_find(const char *name)
{
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (strcmp(layouts[i].name, name) == 0)
			return &layouts[i];
	return NULL;
}

const struct bench_model *bench_models(unsigned *n)
{
	*n = sizeof(models) / sizeof(models[0]);
	return models;
}

const struct bench_model *bench_model_find(const char *name, struct bench_model *custom)
{
	for (size_t i = 0; i < sizeof(models) / sizeof(models[0]); i++)
		if (strcmp(models[i].name, name) == 0)
			return &models[i];
	/* "sim:OPTS": any disk model sim.c understands. */
	if (strncmp(name, "sim:", 4) == 0 && name[4] && !strchr(name + 4, ':')) {
		*custom = (struct bench_model){name, name, name + 4, 0};
		return custom;
	}
	return NULL;
}

bool bench_layout_available(const struct bench_layout *l, const char **why)
{
	/* Every level in the table is built. */
	(void)l;
	*why = NULL;
	return true;
}

static bool model_is_null(const struct bench_model *m)
{
	return strcmp(m->name, "null") == 0;
}

static bool model_is_file(const struct bench_model *m)
{
	return strcmp(m->name, "file") == 0;
}

/* A member file of size bytes, fully allocated so that reads touch data. */
static int make_file(const char *path, uint64_t size)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	int r = 0;

	if (fd < 0)
		return err_set(-errno, "%s: %s", path, strerror(errno));
	if (ftruncate(fd, (off_t)size) < 0)
		r = err_set(-errno, "%s: %s", path, strerror(errno));
	else if (posix_fallocate(fd, 0, (off_t)size) != 0)
		r = 0; /* tmpfs and others may refuse: sparse is fine */
	close(fd);
	return r;
}

/* The spec of member i of model m in process: RAM, a file in dir, or a
 * disk model around RAM. */
static int member_spec(const struct bench_model *m, unsigned i, uint64_t size, const char *dir,
                       char *spec, size_t len)
{
	char sz[32];

	snprintf(sz, sizeof(sz), "%lluK", (unsigned long long)(size >> 10));
	if (model_is_null(m)) {
		snprintf(spec, len, "null:%s", sz);
	} else if (model_is_file(m)) {
		static unsigned serial;
		snprintf(spec, len, "%s/member%u-%u.img", dir, i, serial++);
		return make_file(spec, size);
	} else if (m->sim) {
		snprintf(spec, len, "sim:%s:mem:%s", m->sim, sz);
	} else {
		snprintf(spec, len, "mem:%s", sz);
	}
	return 0;
}

int bench_members_open(const struct bench_kinds *k, unsigned n, uint64_t member_size, bool direct,
                       const char *dir, struct vol **out)
{
	char spec[512];
	unsigned i;
	int r = 0;

	for (i = 0; i < n; i++) {
		const struct bench_model *m = k->m[i % k->n];
		r = member_spec(m, i, member_size, dir, spec, sizeof(spec));
		if (r == 0)
			r = member_open(spec, direct ? MEMBER_DIRECT : 0, &out[i]);
		if (model_is_file(m))
			unlink(spec); /* gone when closed */
		if (r < 0)
			break;
	}
	if (r < 0)
		while (i-- > 0)
			vol_close(out[i]);
	return r;
}

static int raid_build(int level, struct vol **members, unsigned n, const char *name,
                      struct vol **out)
{
	struct raid_geom g = {.level = level, .raid_disks = n};
	uint64_t smallest = UINT64_MAX;

	for (unsigned i = 0; i < n; i++)
		if (members[i]->size < smallest)
			smallest = members[i]->size;
	g.chunk = level == 1 ? 0 : bench_chunk;
	g.dev_size = smallest - smallest % bench_chunk;
	/* mdadm's default layout (raid0's engine layout stays 0) */
	if (level != 0 && md_level_info(level) && md_level_info(level)->default_layout)
		md_layout_parse(level, md_level_info(level)->default_layout, &g.layout);
	return raid_open(&g, members, NULL, name, out);
}

int bench_layout_open(const struct bench_layout *l, const struct bench_kinds *k,
                      uint64_t member_size, bool direct, const char *dir, struct vol **top)
{
	struct vol *members[8], *v = NULL;
	const char *why;
	int r;

	if (!bench_layout_available(l, &why))
		return err_set(-ENOSYS, "%s: %s", l->name, why);
	/* The journal and the PPL live in md's metadata: only `uraid create`
	 * and `uraid serve` set them up. */
	if (l->log != BENCH_LOG_NONE)
		return err_set(-ENOSYS, "%s: a journal or PPL needs md metadata: served only",
		               l->name);
	r = bench_members_open(k, l->n, member_size, direct, dir, members);
	if (r < 0)
		return r;
	if (l->level == BENCH_SINGLE) {
		v = members[0];
	} else if (l->level == BENCH_RAID01) {
		struct vol *half[2];
		r = raid_build(0, members, l->n / 2, "raid0-a", &half[0]);
		if (r < 0)
			goto fail_members;
		r = raid_build(0, members + l->n / 2, l->n / 2, "raid0-b", &half[1]);
		if (r < 0) {
			vol_close(half[0]);
			for (unsigned i = l->n / 2; i < l->n; i++)
				vol_close(members[i]);
			return r;
		}
		r = raid_build(1, half, 2, l->name, &v);
		if (r < 0) {
			vol_close(half[0]);
			vol_close(half[1]);
			return r;
		}
	} else {
		r = raid_build(l->level, members, l->n, l->name, &v);
		if (r < 0)
			goto fail_members;
	}
	if (l->luks) {
		/* The cipher LUKS would use, under a throwaway random key. */
		unsigned char key[64];
		struct vol *c;
		FILE *f = fopen("/dev/urandom", "r");
		size_t got = f ? fread(key, 1, sizeof(key), f) : 0;
		if (f)
			fclose(f);
		if (got != sizeof(key)) {
			vol_close(v);
			return err_set(-EIO, "/dev/urandom: short read");
		}
		struct crypt_params p = {.cipher = "aes-xts-plain64",
		                         .key = key,
		                         .key_len = sizeof(key),
		                         .sector_size = 4096};
		r = crypt_open(v, &p, true, l->name, &c);
		explicit_bzero(key, sizeof(key));
		if (r < 0) {
			vol_close(v);
			return r;
		}
		v = c;
	}
	*top = v;
	return 0;
fail_members:
	for (unsigned i = 0; i < l->n; i++)
		vol_close(members[i]);
	return r;
}

/* ---- served layouts ---- */

volatile pid_t bench_server_live;

/* Run `uraid ARGS...` (this very binary) quietly; 0 if it exits 0. */
static int run_uraid(char *const argv[], const char *what)
{
	char log[] = "/tmp/uraid-bench-XXXXXX";
	int lfd = mkstemp(log);
	pid_t pid = fork();
	int status = 0;

	if (pid < 0) {
		if (lfd >= 0)
			close(lfd);
		return err_set(-errno, "fork: %s", strerror(errno));
	}
	if (pid == 0) {
		if (lfd >= 0) {
			dup2(lfd, 1);
			dup2(lfd, 2);
		}
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	waitpid(pid, &status, 0);
	int r = 0;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		char msg[256] = "";
		if (lfd >= 0) {
			ssize_t k = pread(lfd, msg, sizeof(msg) - 1, 0);
			msg[k > 0 ? k : 0] = 0;
			char *nl = strchr(msg, '\n');
			if (nl)
				*nl = 0;
		}
		r = err_set(-ENOSYS, "%s failed: %s", what, msg[0] ? msg : "(no message)");
	}
	if (lfd >= 0) {
		close(lfd);
		unlink(log);
	}
	return r;
}

static void add_arg(char **argv, unsigned *argc, char *cmd, size_t cmdlen, const char *a)
{
	argv[(*argc)++] = (char *)a;
	argv[*argc] = NULL;
	size_t used = strlen(cmd);
	if (cmdlen > used + 1)
		snprintf(cmd + used, cmdlen - used, "%s%s", used ? " " : "", a);
}

int bench_server_start(const struct bench_layout *l, const struct bench_kinds *k,
                       uint64_t member_size, bool direct, const char *parent_dir,
                       struct bench_server *s, struct bench_target *t)
{
	char files[8][300], specs[8][400], keyfile[300], level[8], count[8], chunk[16];
	char jfile[300], jspec[400];
	char *argv[40];
	unsigned argc = 0;
	bool any_null = false, any_file = false;
	int r;

	for (unsigned i = 0; i < l->n; i++) {
		any_null |= model_is_null(k->m[i % k->n]);
		any_file |= model_is_file(k->m[i % k->n]);
	}
	memset(s, 0, sizeof(*s));
	memset(t, 0, sizeof(*t));
	if (l->level == BENCH_RAID01 || l->parallel)
		return err_set(-ENOSYS, "%s: nested or paired arrays are measured in process only",
		               l->name);
	if (any_null && (l->level != BENCH_SINGLE || l->luks))
		return err_set(-ENOSYS, "%s: null members keep no metadata to assemble", l->name);
	/* Members live on tmpfs unless they are files on this machine's disk. */
	snprintf(s->dir, sizeof(s->dir), "%s/srv-XXXXXX",
	         any_file ? parent_dir : "/dev/shm");
	if (!mkdtemp(s->dir))
		return err_set(-errno, "%s: %s", s->dir, strerror(errno));
	snprintf(s->sock, sizeof(s->sock), "%s/s.sock", s->dir);
	for (unsigned i = 0; i < l->n; i++) {
		const struct bench_model *m = k->m[i % k->n];
		snprintf(files[i], sizeof(files[i]), "%s/member%u.img", s->dir, i);
		if (model_is_null(m)) {
			snprintf(specs[i], sizeof(specs[i]), "null:%lluK",
			         (unsigned long long)(member_size >> 10));
			continue;
		}
		r = make_file(files[i], member_size);
		if (r < 0)
			goto fail;
		if (m->sim)
			snprintf(specs[i], sizeof(specs[i]), "sim:%s:%s", m->sim, files[i]);
		else
			snprintf(specs[i], sizeof(specs[i]), "%s", files[i]);
	}
	/* The journal member is always the ssd model: the fast device in
	 * front of the array. */
	snprintf(jfile, sizeof(jfile), "%s/journal.img", s->dir);
	snprintf(jspec, sizeof(jspec), "sim:%s:%s", BENCH_JOURNAL_MODEL, jfile);
	if (bench_log_journal(l) && (r = make_file(jfile, member_size)) < 0)
		goto fail;
	snprintf(keyfile, sizeof(keyfile), "%s/key", s->dir);
	if (l->luks) {
		FILE *kf = fopen(keyfile, "w");
		if (!kf) {
			r = err_set(-errno, "%s: %s", keyfile, strerror(errno));
			goto fail;
		}
		fputs(BENCH_PASSPHRASE, kf);
		fclose(kf);
	}
	/* The metadata goes on the bare files, fast; the model wraps them
	 * only when served. */
	if (l->level != BENCH_SINGLE) {
		char dummy[8] = "";
		snprintf(level, sizeof(level), "%d", l->level);
		snprintf(count, sizeof(count), "%u", l->n);
		snprintf(chunk, sizeof(chunk), "%uK", bench_chunk >> 10);
		argc = 0;
		add_arg(argv, &argc, dummy, 0, "uraid");
		add_arg(argv, &argc, dummy, 0, "create");
		add_arg(argv, &argc, dummy, 0, "--level");
		add_arg(argv, &argc, dummy, 0, level);
		add_arg(argv, &argc, dummy, 0, "--raid-devices");
		add_arg(argv, &argc, dummy, 0, count);
		add_arg(argv, &argc, dummy, 0, "--assume-clean");
		if (l->level != 1) {
			add_arg(argv, &argc, dummy, 0, "--chunk");
			add_arg(argv, &argc, dummy, 0, chunk);
		}
		if (bench_log_journal(l)) {
			add_arg(argv, &argc, dummy, 0, "--write-journal");
			add_arg(argv, &argc, dummy, 0, jfile);
		} else if (l->log == BENCH_LOG_PPL) {
			add_arg(argv, &argc, dummy, 0, "--consistency-policy=ppl");
		}
		for (unsigned i = 0; i < l->n; i++)
			add_arg(argv, &argc, dummy, 0, files[i]);
		r = run_uraid(argv, "uraid create");
		if (r < 0)
			goto fail;
	}
	if (l->luks) {
		char dummy[8] = "";
		argc = 0;
		add_arg(argv, &argc, dummy, 0, "uraid");
		add_arg(argv, &argc, dummy, 0, "luks-format");
		add_arg(argv, &argc, dummy, 0, "--batch");
		add_arg(argv, &argc, dummy, 0, "--key-file");
		add_arg(argv, &argc, dummy, 0, keyfile);
		/* A quick KDF: the bench measures the data path, not unlocking. */
		add_arg(argv, &argc, dummy, 0, "--pbkdf");
		add_arg(argv, &argc, dummy, 0, "pbkdf2");
		add_arg(argv, &argc, dummy, 0, "--pbkdf-force-iterations");
		add_arg(argv, &argc, dummy, 0, "1000");
		for (unsigned i = 0; i < l->n; i++)
			add_arg(argv, &argc, dummy, 0, files[i]);
		r = run_uraid(argv, "uraid luks-format");
		if (r < 0)
			goto fail;
	}

	argc = 0;
	s->cmdline[0] = 0;
	add_arg(argv, &argc, s->cmdline, sizeof(s->cmdline), "uraid");
	add_arg(argv, &argc, s->cmdline, sizeof(s->cmdline), "serve");
	add_arg(argv, &argc, s->cmdline, sizeof(s->cmdline), "--foreground");
	add_arg(argv, &argc, s->cmdline, sizeof(s->cmdline), "--socket");
	add_arg(argv, &argc, s->cmdline, sizeof(s->cmdline), s->sock);
	if (direct && any_file)
		add_arg(argv, &argc, s->cmdline, sizeof(s->cmdline), "--direct");
	if (l->luks) {
		add_arg(argv, &argc, s->cmdline, sizeof(s->cmdline), "--key-file");
		add_arg(argv, &argc, s->cmdline, sizeof(s->cmdline), keyfile);
	}
	for (unsigned i = 0; i < l->n; i++)
		add_arg(argv, &argc, s->cmdline, sizeof(s->cmdline), specs[i]);
	if (l->log == BENCH_LOG_JOURNAL_WB)
		add_arg(argv, &argc, s->cmdline, sizeof(s->cmdline), "--journal-mode=write-back");
	if (bench_log_journal(l))
		add_arg(argv, &argc, s->cmdline, sizeof(s->cmdline), jspec);

	s->pid = fork();
	if (s->pid < 0) {
		r = err_set(-errno, "fork: %s", strerror(errno));
		goto fail;
	}
	char logpath[320];
	snprintf(logpath, sizeof(logpath), "%s/serve.log", s->dir);
	if (s->pid == 0) {
		/* The server's messages go to a log in the scratch dir: the
		 * bench's own output stays a table. */
		int devnull = open("/dev/null", O_RDWR);
		int lfd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		/* If the bench dies, its server goes with it. */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (devnull >= 0)
			dup2(devnull, 0);
		if (lfd >= 0) {
			dup2(lfd, 1);
			dup2(lfd, 2);
		}
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	bench_server_live = s->pid;
	/* Wait for the socket, or for the server to give up. */
	for (int tries = 0;; tries++) {
		int status;
		if (waitpid(s->pid, &status, WNOHANG) == s->pid) {
			char msg[256] = "";
			FILE *lf = fopen(logpath, "r");
			if (lf) {
				if (!fgets(msg, sizeof(msg), lf))
					msg[0] = 0;
				fclose(lf);
			}
			msg[strcspn(msg, "\n")] = 0;
			s->pid = 0;
			r = err_set(-ENOSYS, "uraid serve exited before it listened%s%s",
			            msg[0] ? ": " : "", msg);
			goto fail;
		}
		struct stat st;
		if (stat(s->sock, &st) == 0 && S_ISSOCK(st.st_mode))
			break;
		if (tries > 300) {
			r = err_set(-ETIMEDOUT, "uraid serve did not listen in 30 s");
			goto fail;
		}
		nanosleep(&(struct timespec){0, 100000000}, NULL);
	}
	t->nbd = nbd_create();
	if (!t->nbd) {
		r = err_set(-ENOMEM, "nbd_create: %s", nbd_get_error());
		goto fail;
	}
	if (nbd_connect_unix(t->nbd, s->sock) < 0) {
		r = err_set(-EIO, "connect %s: %s", s->sock, nbd_get_error());
		goto fail;
	}
	int64_t size = nbd_get_size(t->nbd);
	if (size <= 0) {
		r = err_set(-EIO, "nbd: no size: %s", nbd_get_error());
		goto fail;
	}
	t->size = (uint64_t)size;
	t->pid = s->pid;
	return 0;
fail:
	bench_server_stop(s, t);
	return r;
}

void bench_server_stop(struct bench_server *s, struct bench_target *t)
{
	if (t->nbd) {
		/* No nbd_shutdown(): it would wait for the server to hang up,
		 * and the server is about to be stopped anyway. */
		nbd_close(t->nbd);
		t->nbd = NULL;
	}
	if (s->pid > 0) {
		int status;
		bench_server_live = 0;
		kill(s->pid, SIGTERM);
		for (int i = 0; i < 50; i++) {
			if (waitpid(s->pid, &status, WNOHANG) == s->pid)
				goto reaped;
			nanosleep(&(struct timespec){0, 20000000}, NULL);
		}
		kill(s->pid, SIGKILL);
		waitpid(s->pid, &status, 0);
	reaped:
		s->pid = 0;
	}
	if (s->dir[0]) {
		char path[600];
		for (unsigned i = 0; i < 8; i++) {
			snprintf(path, sizeof(path), "%s/member%u.img", s->dir, i);
			unlink(path);
		}
		snprintf(path, sizeof(path), "%s/journal.img", s->dir);
		unlink(path);
		snprintf(path, sizeof(path), "%s/key", s->dir);
		unlink(path);
		snprintf(path, sizeof(path), "%s/serve.log", s->dir);
		unlink(path);
		unlink(s->sock);
		rmdir(s->dir);
		s->dir[0] = 0;
	}
}
