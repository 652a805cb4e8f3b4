/* The nbd member against an independent server: nbdkit's memory plugin.
 * Data round trips, zeroing, flush, and bounds; skipped without nbdkit. */
#include "check.h"
#include "member/member.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void)
{
	char dir[] = "/tmp/uraid-nbdmember-XXXXXX", sock[128], uri[200];
	unsigned char a[65536], b[65536];
	unsigned long long seed = 7;
	struct vol *v;
	pid_t pid;

	if (system("command -v nbdkit >/dev/null 2>&1") != 0) {
		fprintf(stderr, "skip: nbdkit not installed\n");
		return 77;
	}
	if (!mkdtemp(dir))
		return 1;
	snprintf(sock, sizeof(sock), "%s/s", dir);
	snprintf(uri, sizeof(uri), "nbd+unix:///?socket=%s", sock);
	pid = fork();
	if (pid == 0) {
		execlp("nbdkit", "nbdkit", "-f", "-U", sock, "memory", "8M", (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 100; i++) {
		struct stat st;
		if (stat(sock, &st) == 0)
			break;
		usleep(50000);
	}

	CHECK_EQ(member_open(uri, 0, &v), 0);
	if (check_failures)
		goto out;
	CHECK_EQ(v->size, 8 << 20);
	CHECK(v->caps & VOL_CAP_MULTI_CONN);
	for (size_t i = 0; i < sizeof(a); i++)
		a[i] = (unsigned char)check_rand(&seed);
	CHECK_EQ(vol_write(v, a, sizeof(a), 1 << 20, VOL_FUA), 0);
	CHECK_EQ(vol_read(v, b, sizeof(b), 1 << 20), 0);
	CHECK(memcmp(a, b, sizeof(a)) == 0);
	CHECK_EQ(vol_write_zeroes(v, 4096, (1 << 20) + 4096, 0), 0);
	CHECK_EQ(vol_read(v, b, sizeof(b), 1 << 20), 0);
	CHECK(memcmp(a, b, 4096) == 0 && b[4096] == 0 && b[8191] == 0);
	CHECK(memcmp(a + 8192, b + 8192, sizeof(a) - 8192) == 0);
	CHECK_EQ(vol_flush(v), 0);
	CHECK_EQ(vol_read(v, b, 4096, (8 << 20) - 2048), -EINVAL);
	vol_close(v);

	/* A URI naming no server is a clear error, not a hang. */
	char bad[256];
	snprintf(bad, sizeof(bad), "nbd+unix:///?socket=%s/none", dir);
	CHECK(member_open(bad, 0, &v) < 0);
out:
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	unlink(sock);
	rmdir(dir);
	return check_done();
}
