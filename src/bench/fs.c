/* fs.c — the bench's rows through a file system, as the seeds measured:
 * the served volume becomes a file (nbdfuse), a block device (losetup),
 * ext4 (mkfs.ext4) and a mount point.  Then dd-like sequential file writes
 * and reads (O_DIRECT reads, so the page cache does not answer), and seed
 * 004's metadata test: create 10,000 empty files, touch them again, remove
 * them, each phase ended by syncfs() so that the time includes the I/O.
 *
 * Any missing piece (no root, no FUSE, no loop devices, mount refused)
 * makes bench_fs_mount() fail with -ENOTSUP and a reason, and the rows say
 * why they were skipped. */
#include "bench.h"

#include "core/clock.h"
#include "core/log.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Run a shell command quietly; its exit status, or -1. */
static int quiet(const char *fmt, const char *a, const char *b)
{
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), fmt, a, b ? b : "");
	size_t n = strlen(cmd);
	snprintf(cmd + n, sizeof(cmd) - n, " >/dev/null 2>&1");
	int st = system(cmd);
	return st == -1 || !WIFEXITED(st) ? -1 : WEXITSTATUS(st);
}

static int skip(int err, const char *why)
{
	return err_set(err, "%s", why);
}

int bench_fs_mount(const char *sock, const char *scratch, struct bench_fs *fs)
{
	char uri[400], path[600];

	memset(fs, 0, sizeof(*fs));
	if (geteuid() != 0)
		return skip(-ENOTSUP, "file system rows need root (losetup, mount)");
	if (access("/dev/fuse", R_OK | W_OK) != 0)
		return skip(-ENOTSUP, "no /dev/fuse");
	if (quiet("command -v nbdfuse && command -v losetup && command -v mkfs.ext4%s%s", "", NULL))
		return skip(-ENOTSUP, "needs nbdfuse, losetup and mkfs.ext4");
	snprintf(fs->dir, sizeof(fs->dir), "%s/fs-XXXXXX", scratch);
	if (!mkdtemp(fs->dir))
		return err_set(-errno, "%s: %s", fs->dir, strerror(errno));
	snprintf(path, sizeof(path), "%s/fuse", fs->dir);
	mkdir(path, 0700);
	snprintf(fs->mnt, sizeof(fs->mnt), "%s/mnt", fs->dir);
	mkdir(fs->mnt, 0700);
	snprintf(fs->disk, sizeof(fs->disk), "%s/fuse/disk", fs->dir);
	snprintf(uri, sizeof(uri), "nbd+unix:///?socket=%s", sock);

	fs->fuse_pid = fork();
	if (fs->fuse_pid < 0)
		return err_set(-errno, "fork: %s", strerror(errno));
	if (fs->fuse_pid == 0) {
		int devnull = open("/dev/null", O_RDWR);
		if (devnull >= 0) {
			dup2(devnull, 0);
			dup2(devnull, 1);
			dup2(devnull, 2);
		}
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		execlp("nbdfuse", "nbdfuse", fs->disk, uri, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; access(fs->disk, F_OK) != 0; i++) {
		int st;
		if (i > 100 || waitpid(fs->fuse_pid, &st, WNOHANG) == fs->fuse_pid) {
			bench_fs_umount(fs);
			return skip(-ENOTSUP, "nbdfuse could not mount");
		}
		nanosleep(&(struct timespec){0, 50000000}, NULL);
	}
	FILE *p = NULL;
	char cmd[1024];
	/* --direct-io: the loop device must not serve reads from the page
	 * cache of the file nbdfuse exposes; where it cannot, plain. */
	snprintf(
	    cmd, sizeof(cmd),
	    "losetup -f --show --direct-io=on %s 2>/dev/null || losetup -f --show %s 2>/dev/null",
	    fs->disk, fs->disk);
	p = popen(cmd, "r");
	if (!p || !fgets(fs->loop, sizeof(fs->loop), p)) {
		if (p)
			pclose(p);
		fs->loop[0] = 0;
		bench_fs_umount(fs);
		return skip(-ENOTSUP, "no loop devices");
	}
	pclose(p);
	fs->loop[strcspn(fs->loop, "\n")] = 0;
	if (quiet("mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 %s%s", fs->loop,
	          NULL)) {
		bench_fs_umount(fs);
		return skip(-ENOTSUP, "mkfs.ext4 failed");
	}
	if (quiet("mount %s %s", fs->loop, fs->mnt)) {
		bench_fs_umount(fs);
		return skip(-ENOTSUP, "mount refused");
	}
	fs->mounted = true;
	return 0;
}

void bench_fs_umount(struct bench_fs *fs)
{
	char path[600];

	if (fs->mounted)
		quiet("umount %s%s", fs->mnt, NULL);
	fs->mounted = false;
	if (fs->loop[0])
		quiet("losetup -d %s%s", fs->loop, NULL);
	fs->loop[0] = 0;
	if (fs->fuse_pid > 0) {
		snprintf(path, sizeof(path), "%s/fuse", fs->dir);
		quiet("fusermount3 -u %s%s", path, NULL);
		for (int i = 0; i < 50; i++) {
			int st;
			if (waitpid(fs->fuse_pid, &st, WNOHANG) == fs->fuse_pid) {
				fs->fuse_pid = 0;
				break;
			}
			nanosleep(&(struct timespec){0, 20000000}, NULL);
		}
		if (fs->fuse_pid > 0) {
			kill(fs->fuse_pid, SIGKILL);
			waitpid(fs->fuse_pid, NULL, 0);
			fs->fuse_pid = 0;
		}
	}
	if (fs->dir[0]) {
		rmdir(fs->mnt);
		snprintf(path, sizeof(path), "%s/fuse", fs->dir);
		rmdir(path);
		rmdir(fs->dir);
		fs->dir[0] = 0;
	}
}

/* Sequential 1 MiB file writes (then fsync, inside the time) or O_DIRECT
 * reads of the file the last write left. */
int bench_fs_seq(struct bench_fs *fs, bool write, uint64_t bytes, uint64_t max_ns, const void *data,
                 struct bench_sample *out)
{
	char path[600];
	const uint32_t bs = 1u << 20;
	unsigned char *buf = NULL;
	uint64_t done = 0;
	int fd, r = 0;

	memset(out, 0, sizeof(*out));
	snprintf(path, sizeof(path), "%s/seq.file", fs->mnt);
	fd = write ? open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600)
	           : open(path, O_RDONLY | O_DIRECT);
	if (fd < 0)
		return err_set(-errno, "%s: %s", path, strerror(errno));
	if (posix_memalign((void **)&buf, 4096, bs)) {
		close(fd);
		return -ENOMEM;
	}
	uint64_t t0 = clock_now_ns();
	while (done < bytes && clock_now_ns() - t0 < max_ns) {
		ssize_t k =
		    write ? pwrite(fd, (const char *)data + (done / bs % 8) * 4096, bs, (off_t)done)
		          : pread(fd, buf, bs, (off_t)done);
		if (k <= 0) {
			if (k < 0)
				r = err_set(-errno, "%s: %s", path, strerror(errno));
			break;
		}
		done += (uint64_t)k;
		out->ops++;
	}
	if (write && r == 0 && fsync(fd) < 0)
		r = err_set(-errno, "fsync %s: %s", path, strerror(errno));
	out->ns = clock_now_ns() - t0;
	out->bytes = done;
	free(buf);
	close(fd);
	return r;
}

/* Seed 004: `touch $(jot 10000)`, again, then `rm`; phase 0, 1 or 2. */
int bench_fs_meta(struct bench_fs *fs, int phase, unsigned nfiles, struct bench_sample *out)
{
	char path[600];
	int r = 0;

	memset(out, 0, sizeof(*out));
	uint64_t t0 = clock_now_ns();
	for (unsigned i = 1; i <= nfiles && r == 0; i++) {
		snprintf(path, sizeof(path), "%s/%u", fs->mnt, i);
		if (phase == 2) {
			/* Without a touch phase before, there is nothing to
			 * remove: not an error. */
			if (unlink(path) < 0 && errno != ENOENT)
				r = err_set(-errno, "unlink %s: %s", path, strerror(errno));
		} else {
			int fd = open(path, O_WRONLY | O_CREAT, 0644);
			if (fd < 0 || futimens(fd, NULL) < 0)
				r = err_set(-errno, "touch %s: %s", path, strerror(errno));
			if (fd >= 0)
				close(fd);
		}
		out->ops++;
	}
	int dfd = open(fs->mnt, O_RDONLY | O_DIRECTORY);
	if (dfd >= 0) {
		if (syncfs(dfd) < 0 && r == 0)
			r = err_set(-errno, "syncfs: %s", strerror(errno));
		close(dfd);
	}
	out->ns = clock_now_ns() - t0;
	return r;
}
