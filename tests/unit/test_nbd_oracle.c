/* test_nbd_oracle.c — random mixed operations through `uraid serve`,
 * checked against a flat reference buffer.
 *
 * For each member (mem:, a file): start `$URAID serve -f --socket`, open two
 * connections with libnbd, and run random reads, writes (with and without
 * FUA), trims, zeroes (with and without NO_HOLE) and flushes of random sizes
 * and offsets, alternating between the connections; every read must match
 * the reference (trimmed ranges may read as old data or zeros, so the
 * reference forgets them until rewritten).  Then stop the server with
 * SIGTERM and, for the file member, read it all back through a fresh
 * `--stdio` server: what was written must have survived the shutdown. */
#include "check.h"

#include <errno.h>
#include <fcntl.h>
#include <libnbd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define EXPORT_SIZE (16u << 20)
#define N_OPS 3000

static unsigned char *ref;   /* expected contents */
static unsigned char *known; /* 0 where a trim left old-or-zero */

static pid_t start_server(const char *uraid, const char *sock, const char *member)
{
	pid_t pid = fork();
	if (pid == 0) {
		execl(uraid, uraid, "serve", "-f", "--socket", sock, member, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 200; i++) {
		struct stat st;
		if (stat(sock, &st) == 0)
			return pid;
		usleep(20000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return -1;
}

static int stop_server(pid_t pid)
{
	int st;
	kill(pid, SIGTERM);
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static bool check_read(const unsigned char *got, uint64_t off, uint64_t len)
{
	for (uint64_t i = 0; i < len; i++) {
		unsigned char want = ref[off + i];
		if (known[off + i] ? got[i] != want : (got[i] != want && got[i] != 0)) {
			fprintf(stderr, "mismatch at %llu: got %02x want %02x\n",
				(unsigned long long)(off + i), got[i], want);
			return false;
		}
	}
	return true;
}

static void random_ops(struct nbd_handle **h, int nh, unsigned long long *seed)
{
	unsigned char *buf = malloc(1u << 20);

	for (int i = 0; i < N_OPS && check_failures == 0; i++) {
		struct nbd_handle *c = h[check_rand(seed) % (unsigned)nh];
		unsigned kind = check_rand(seed) % 10;
		/* Mostly small, sometimes up to 1 MiB; any alignment. */
		uint64_t len = check_rand(seed) % 4 == 0 ? check_rand(seed) % (1u << 20) + 1
							 : check_rand(seed) % 9000 + 1;
		uint64_t off = check_rand(seed) % (EXPORT_SIZE - len + 1);
		int r;

		switch (kind) {
		case 0: case 1: case 2: /* read */
			r = nbd_pread(c, buf, len, off, 0);
			CHECK_EQ(r, 0);
			CHECK(r == 0 && check_read(buf, off, len));
			break;
		case 3: case 4: case 5: { /* write */
			for (uint64_t j = 0; j < len; j++)
				buf[j] = (unsigned char)check_rand(seed);
			bool fua = check_rand(seed) % 4 == 0 && nbd_can_fua(c) == 1;
			r = nbd_pwrite(c, buf, len, off, fua ? LIBNBD_CMD_FLAG_FUA : 0);
			CHECK_EQ(r, 0);
			memcpy(ref + off, buf, len);
			memset(known + off, 1, len);
			break;
		}
		case 6: /* trim */
			if (nbd_can_trim(c) != 1)
				break;
			r = nbd_trim(c, len, off, 0);
			CHECK_EQ(r, 0);
			memset(known + off, 0, len);
			break;
		case 7: case 8: /* zero */
			r = nbd_zero(c, len, off, kind == 8 ? LIBNBD_CMD_FLAG_NO_HOLE : 0);
			CHECK_EQ(r, 0);
			memset(ref + off, 0, len);
			memset(known + off, 1, len);
			break;
		case 9:
			if (nbd_can_flush(c) == 1)
				CHECK_EQ(nbd_flush(c, 0), 0);
			break;
		}
		if (check_failures)
			fprintf(stderr, "op %d kind %u off %llu len %llu: %s\n", i, kind,
				(unsigned long long)off, (unsigned long long)len,
				nbd_get_error() ? nbd_get_error() : "");
	}
	free(buf);
}

/* Invalid requests are refused without hurting the connection. */
static void bad_requests(struct nbd_handle *c)
{
	char b[512];
	nbd_set_strict_mode(c, 0);
	CHECK(nbd_pread(c, b, sizeof(b), EXPORT_SIZE, 0) == -1);
	CHECK(nbd_pread(c, b, sizeof(b), UINT64_MAX - 100, 0) == -1);
	CHECK(nbd_pwrite(c, b, sizeof(b), EXPORT_SIZE - 100, 0) == -1);
	CHECK(nbd_pread(c, b, 16, 0, 0) == 0);
}

static void run_member(const char *uraid, const char *dir, const char *member,
		       bool check_persist, unsigned long long seed)
{
	char sock[512];
	struct nbd_handle *h[2] = { NULL, NULL };
	pid_t pid;

	snprintf(sock, sizeof(sock), "%s/s.sock", dir);
	memset(ref, 0, EXPORT_SIZE);
	memset(known, 1, EXPORT_SIZE);
	pid = start_server(uraid, sock, member);
	CHECK(pid > 0);
	if (pid <= 0)
		return;
	for (int i = 0; i < 2; i++) {
		h[i] = nbd_create();
		CHECK(h[i] != NULL);
		CHECK_EQ(nbd_connect_unix(h[i], sock), 0);
		CHECK_EQ(nbd_get_size(h[i]), EXPORT_SIZE);
	}
	if (check_failures == 0) {
		random_ops(h, 2, &seed);
		bad_requests(h[0]);
	}
	for (int i = 0; i < 2; i++) {
		nbd_shutdown(h[i], 0);
		nbd_close(h[i]);
	}
	CHECK_EQ(stop_server(pid), 0);
	CHECK(access(sock, F_OK) != 0); /* the socket is removed at exit */

	if (!check_persist || check_failures)
		return;
	/* A fresh server on stdin/stdout sees everything the first one wrote. */
	struct nbd_handle *c = nbd_create();
	char *argv[] = { (char *)uraid, "serve", "--stdio", (char *)member, NULL };
	unsigned char *all = malloc(EXPORT_SIZE);
	CHECK_EQ(nbd_connect_command(c, argv), 0);
	for (uint64_t off = 0; off < EXPORT_SIZE && check_failures == 0; off += 1u << 20) {
		CHECK_EQ(nbd_pread(c, all + off, 1u << 20, off, 0), 0);
		CHECK(check_read(all + off, off, 1u << 20));
	}
	nbd_shutdown(c, 0);
	nbd_close(c);
	free(all);
}

int main(void)
{
	const char *uraid = getenv("URAID");
	char dir[] = "/tmp/test_nbd_oracle.XXXXXX", file[600], spec[64];

	if (!uraid) {
		fprintf(stderr, "skip: URAID not set\n");
		return 77;
	}
	signal(SIGPIPE, SIG_IGN);
	if (!mkdtemp(dir))
		return 1;
	ref = malloc(EXPORT_SIZE);
	known = malloc(EXPORT_SIZE);

	snprintf(spec, sizeof(spec), "mem:%u", EXPORT_SIZE);
	run_member(uraid, dir, spec, false, check_seed(0x1234567ull));

	snprintf(file, sizeof(file), "%s/disk.img", dir);
	int fd = open(file, O_CREAT | O_RDWR, 0644);
	CHECK(fd >= 0 && ftruncate(fd, EXPORT_SIZE) == 0);
	close(fd);
	run_member(uraid, dir, file, true, check_seed(0xfeedbeefull));

	unlink(file);
	rmdir(dir);
	free(ref);
	free(known);
	return check_done();
}
