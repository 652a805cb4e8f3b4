/* The nbd member when its server stops answering and comes back.
 *
 *  - spec: timeout= and reconnect= are ours and checked; bad values are
 *    refused naming the spec.
 *  - a server that accepts and never speaks: open fails with -ETIMEDOUT
 *    within timeout= (before: it hung for ever).
 *  - nbdkit stopped (SIGSTOP) mid-use: the request in flight fails with
 *    -ETIMEDOUT, an error the RAID engine holds against the member; the
 *    member is away and the next request fails with -EIO at once; close
 *    does not wait on the stopped host.  SIGCONT: it reconnects by itself
 *    and reads the data written before.
 *  - a server with another size at the same address is refused (-ESTALE)
 *    and the member stays away.
 *  - several requests in flight on one connection: nbdkit without
 *    multi-conn, its log filter showing how many were outstanding at once.
 *  - churn: threads writing and reading while the server is stopped and
 *    resumed three times: every op ends with 0, -EIO or -ETIMEDOUT (none
 *    hangs), and what each thread reads back is its last write or one
 *    that failed (a write that timed out may land late, as with any
 *    client), never anything else.
 * Skipped without nbdkit. */
#include "check.h"
#include "core/clock.h"
#include "core/log.h"
#include "disc/raid/raid_types.h"
#include "member/member.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[] = "/tmp/uraid-nbdaway-XXXXXX";

/* nbdkit ARGS... on sock, up once it wrote its pid file (it does that
 * when it accepts connections, which the socket's existence is not). */
static pid_t start_nbdkit(const char *sock, char *const args[])
{
	char pidfile[160];
	char *argv[26] = {"nbdkit", "-f", "-U", (char *)sock, "-P", pidfile};
	int k = 6;
	struct stat st;

	snprintf(pidfile, sizeof(pidfile), "%s.pid", sock);
	for (int i = 0; args[i] && k < 25; i++)
		argv[k++] = args[i];
	argv[k] = NULL;
	unlink(sock);
	unlink(pidfile);
	pid_t pid = fork();
	if (pid == 0) {
		execvp("nbdkit", argv);
		_exit(127);
	}
	for (int i = 0; i < 400 && (stat(pidfile, &st) != 0 || st.st_size == 0); i++)
		usleep(25000);
	unlink(pidfile);
	return pid;
}

/* SIGSTOP, and wait until it has stopped: kill() returns before. */
static void pause_nbdkit(pid_t pid)
{
	int status;

	kill(pid, SIGSTOP);
	waitpid(pid, &status, WUNTRACED);
}

static void stop_nbdkit(pid_t pid)
{
	kill(pid, SIGCONT);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* Wait (bounded, so a broken reconnect fails rather than hangs) until the
 * member's state satisfies want. */
static bool wait_for(struct vol *v, bool (*want)(const struct nbd_member_status *))
{
	struct nbd_member_status st;

	for (int i = 0; i < 600; i++) {
		if (nbd_member_status(v, &st) == 0 && want(&st))
			return true;
		usleep(50000);
	}
	return false;
}

static bool is_connected(const struct nbd_member_status *st)
{
	return st->connected;
}

static bool refused_twice(const struct nbd_member_status *st)
{
	return st->attempts >= 2 && st->last_error == -ESTALE;
}

static void test_spec(void)
{
	static const char *bad[] = {
	    "nbd+unix:///?socket=/nonexistent&timeout=abc",
	    "nbd://h/e?timeout=-1",
	    "nbd://h/e?timeout=1e3",
	    "nbd://h/e?reconnect=",
	    "nbd://h/e?timeout=1&timeout=2",
	    "nbd://h/e?timeout=100000",
	};
	struct vol *v;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err_clear();
		CHECK_EQ(member_open(bad[i], 0, &v), -EINVAL);
		CHECK(strstr(err_detail(-EINVAL), bad[i]) != NULL);
	}
}

/* A socket that listens and never answers: the handshake cannot finish. */
static void test_silent_server(void)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	char uri[256];
	struct vol *v;

	snprintf(a.sun_path, sizeof(a.sun_path), "%s/silent", dir);
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	CHECK(fd >= 0);
	CHECK_EQ(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	CHECK_EQ(listen(fd, 8), 0);
	snprintf(uri, sizeof(uri), "nbd+unix:///?socket=%s&timeout=1", a.sun_path);
	err_clear();
	int r = member_open(uri, 0, &v);
	CHECK_EQ(r, -ETIMEDOUT);
	CHECK(strstr(err_detail(r), "no answer within 1 s") != NULL);
	if (r == 0)
		vol_close(v);
	close(fd);
	unlink(a.sun_path);
}

static void test_stop_and_return(void)
{
	char sock[128], uri[256];
	unsigned char a[65536], b[65536];
	unsigned long long seed = 11;
	struct nbd_member_status st;
	struct vol *v;

	snprintf(sock, sizeof(sock), "%s/s", dir);
	snprintf(uri, sizeof(uri), "nbd+unix:///?timeout=1&socket=%s&reconnect=0.2", sock);
	pid_t pid = start_nbdkit(sock, (char *[]){"memory", "8M", NULL});
	int r = member_open(uri, 0, &v);
	CHECK_EQ(r, 0);
	if (r < 0) {
		fprintf(stderr, "%s\n", err_detail(r));
		goto out;
	}
	CHECK_EQ(v->size, 8 << 20);
	for (size_t i = 0; i < sizeof(a); i++)
		a[i] = (unsigned char)check_rand(&seed);
	CHECK_EQ(vol_write(v, a, sizeof(a), 1 << 20, 0), 0);

	pause_nbdkit(pid);
	uint64_t t0 = clock_now_ns();
	r = vol_read(v, b, sizeof(b), 1 << 20);
	fprintf(stderr, "a read on a stopped server failed after %.2f s (timeout=1)\n",
	        (double)(clock_now_ns() - t0) / 1e9);
	CHECK_EQ(r, -ETIMEDOUT);
	CHECK(!raid_err_is_request(r));
	CHECK_EQ(nbd_member_status(v, &st), 0);
	CHECK(!st.connected);
	CHECK_EQ(st.losses, 1);
	CHECK_EQ(vol_read(v, b, 4096, 0), -EIO);
	CHECK_EQ(vol_write(v, a, 4096, 0, 0), -EIO);
	CHECK_EQ(vol_flush(v), -EIO);

	kill(pid, SIGCONT);
	CHECK(wait_for(v, is_connected));
	memset(b, 0, sizeof(b));
	CHECK_EQ(vol_read(v, b, sizeof(b), 1 << 20), 0);
	CHECK(memcmp(a, b, sizeof(a)) == 0);
	CHECK_EQ(nbd_member_status(v, &st), 0);
	CHECK_EQ(st.reconnects, 1);
	CHECK(st.connections >= 1);

	/* Close on a host that stopped answering returns (bounded by the
	 * timeout): the test would hang here otherwise. */
	pause_nbdkit(pid);
	vol_close(v);

	/* Another disk at the same address: refused, the member stays away. */
	stop_nbdkit(pid);
	pid = start_nbdkit(sock, (char *[]){"memory", "8M", NULL});
	r = member_open(uri, 0, &v);
	CHECK_EQ(r, 0);
	if (r < 0)
		goto out;
	stop_nbdkit(pid);
	pid = start_nbdkit(sock, (char *[]){"memory", "4M", NULL});
	CHECK_EQ(vol_read(v, b, 4096, 0), -EIO); /* the connection broke */
	CHECK(wait_for(v, refused_twice));
	CHECK_EQ(nbd_member_status(v, &st), 0);
	CHECK(!st.connected);
	CHECK_EQ(vol_read(v, b, 4096, 0), -EIO);
	vol_close(v);
out:
	stop_nbdkit(pid);
	unlink(sock);
}

struct reader {
	struct vol *v;
	uint64_t off;
	int r;
};

static void *read_one(void *arg)
{
	struct reader *rd = arg;
	unsigned char buf[4096];

	rd->r = vol_read(rd->v, buf, sizeof(buf), rd->off);
	return NULL;
}

/* The most requests the log filter saw outstanding at once. */
static int max_outstanding(const char *log)
{
	FILE *f = fopen(log, "r");
	char line[1024];
	int now = 0, most = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (strstr(line, " Read id="))
			most = ++now > most ? now : most;
		else if (strstr(line, "...Read id="))
			now--;
	}
	fclose(f);
	return most;
}

static void test_in_flight(void)
{
	char sock[128], uri[256], log[128], logarg[160];
	struct reader rd[8];
	pthread_t t[8];
	struct vol *v;

	snprintf(sock, sizeof(sock), "%s/q", dir);
	snprintf(log, sizeof(log), "%s/log", dir);
	snprintf(logarg, sizeof(logarg), "logfile=%s", log);
	snprintf(uri, sizeof(uri), "nbd+unix:///?socket=%s", sock);
	/* The log filter outside the delay: it sees a request arrive, and
	 * its reply 0.3 s later. */
	pid_t pid = start_nbdkit(
	    sock, (char *[]){"--filter=log", "--filter=delay", "--filter=multi-conn", "memory",
	                     "8M", logarg, "delay-read=300ms", "multi-conn-mode=disable", NULL});
	int r = member_open(uri, 0, &v);
	CHECK_EQ(r, 0);
	if (r < 0)
		goto out;
	CHECK(!(v->caps & VOL_CAP_MULTI_CONN));
	for (int i = 0; i < 8; i++) {
		rd[i] = (struct reader){.v = v, .off = (uint64_t)i << 16};
		pthread_create(&t[i], NULL, read_one, &rd[i]);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(t[i], NULL);
		CHECK_EQ(rd[i].r, 0);
	}
	vol_close(v);
	int most = max_outstanding(log);
	fprintf(stderr, "reads outstanding at once on one connection: %d of 8\n", most);
	CHECK(most > 1);
out:
	stop_nbdkit(pid);
	unlink(sock);
	unlink(log);
}

struct churner {
	struct vol *v;
	unsigned id;
	volatile bool *stop;
	unsigned ok, failed, wrong, stale;
};

#define CHURN_MAX 65536

/* 512-byte sectors, each its write's number then that number's low byte. */
static void churn_fill(unsigned char *a, size_t len, uint64_t k)
{
	for (size_t o = 0; o < len; o += 512) {
		memset(a + o, (int)(k & 0xff), 512);
		memcpy(a + o, &k, sizeof(k));
	}
}

/* Every sector read back is from write k (the last one, acknowledged) or
 * from a write that failed: those are in doubt, since one that timed out
 * may still land when the server resumes (it sat in the server's socket
 * buffer), over later ones, as with any NBD client. */
static bool churn_valid(const unsigned char *b, size_t len, uint64_t k, const bool *doubt,
                        bool *saw_doubt)
{
	for (size_t o = 0; o < len; o += 512) {
		uint64_t got;
		memcpy(&got, b + o, sizeof(got));
		if (got != k && (got >= CHURN_MAX || !doubt[got]))
			return false;
		for (size_t x = sizeof(got); x < 512; x++)
			if (b[o + x] != (unsigned char)(got & 0xff))
				return false;
		*saw_doubt |= got != k;
	}
	return true;
}

static void *churn_one(void *arg)
{
	struct churner *ch = arg;
	unsigned char a[16384], b[16384];
	uint64_t off = (uint64_t)ch->id << 20;
	bool *doubt = calloc(CHURN_MAX, sizeof(bool));

	for (uint64_t k = 1; !*ch->stop && k < CHURN_MAX && doubt; k++) {
		churn_fill(a, sizeof(a), k);
		int r = vol_write(ch->v, a, sizeof(a), off, 0);
		if (r < 0)
			doubt[k] = true;
		else
			r = vol_read(ch->v, b, sizeof(b), off);
		bool saw_doubt = false;
		if (r == 0 && !churn_valid(b, sizeof(b), k, doubt, &saw_doubt)) {
			fprintf(stderr, "churn: thread %u: read back what no write wrote\n",
			        ch->id);
			ch->wrong++;
		}
		ch->stale += saw_doubt;
		if (r == 0)
			ch->ok++;
		else if (r == -EIO || r == -ETIMEDOUT)
			ch->failed++;
		else {
			fprintf(stderr, "churn: thread %u: %s\n", ch->id, strerror(-r));
			ch->wrong++;
		}
		if (r < 0)
			usleep(20000);
	}
	free(doubt);
	return NULL;
}

static void test_churn(void)
{
	char sock[128], uri[256];
	struct churner ch[4];
	pthread_t t[4];
	volatile bool stop = false;
	struct nbd_member_status st;
	struct vol *v;

	snprintf(sock, sizeof(sock), "%s/c", dir);
	snprintf(uri, sizeof(uri), "nbd+unix:///?socket=%s&timeout=1&reconnect=0.2", sock);
	pid_t pid = start_nbdkit(sock, (char *[]){"memory", "8M", NULL});
	int r = member_open(uri, 0, &v);
	CHECK_EQ(r, 0);
	if (r < 0)
		goto out;
	for (unsigned i = 0; i < 4; i++) {
		ch[i] = (struct churner){.v = v, .id = i, .stop = &stop};
		pthread_create(&t[i], NULL, churn_one, &ch[i]);
	}
	for (int k = 0; k < 3; k++) {
		usleep(300000);
		pause_nbdkit(pid);
		usleep(1500000);
		kill(pid, SIGCONT);
		CHECK(wait_for(v, is_connected));
	}
	usleep(300000);
	stop = true;
	unsigned ok = 0, failed = 0, stale = 0;
	for (unsigned i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		CHECK_EQ(ch[i].wrong, 0);
		ok += ch[i].ok;
		failed += ch[i].failed;
		stale += ch[i].stale;
	}
	fprintf(stderr, "churn: %u ops ok, %u failed, %u read back a late write\n", ok, failed,
	        stale);
	CHECK(failed > 0); /* the stops were seen */
	CHECK(ok > 0);
	CHECK_EQ(nbd_member_status(v, &st), 0);
	CHECK_EQ(st.losses, 3);
	CHECK_EQ(st.reconnects, 3);
	unsigned char a[4096], b[4096];
	memset(a, 0x5a, sizeof(a));
	CHECK_EQ(vol_write(v, a, sizeof(a), 0, VOL_FUA), 0);
	CHECK_EQ(vol_read(v, b, sizeof(b), 0), 0);
	CHECK(memcmp(a, b, sizeof(a)) == 0);
	vol_close(v);
out:
	stop_nbdkit(pid);
	unlink(sock);
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	test_spec();
	test_silent_server();
	if (system("command -v nbdkit >/dev/null 2>&1") != 0) {
		fprintf(stderr, "skip: nbdkit not installed (the server tests)\n");
		rmdir(dir);
		return check_failures ? 1 : 77;
	}
	test_stop_and_return();
	test_in_flight();
	test_churn();
	rmdir(dir);
	return check_done();
}
