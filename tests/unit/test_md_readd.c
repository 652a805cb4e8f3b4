/* test_md_readd.c — md's re-add from the write-intent bitmap on a running
 * array: a member under fault: that dies (every op EIO) and comes back is
 * taken back by the recovery thread on its own, and only the chunks
 * written while it was away are resynced onto it (the RAID engine's write
 * counter of its role against the chunks the test wrote); the copies then
 * agree (check finds 0, the data areas are equal byte for byte).  RAID1
 * and RAID10.  A member that comes back with another device UUID, with
 * newer events or with events older than the bitmap covers is refused,
 * and an array without a bitmap takes none back. */
#include "check.h"
#include "member_files.h"

#include "core/log.h"
#include "md/md.h"
#include "md/md_events.h"
#include "member/member.h"

#include <pthread.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MEMBER_SIZE (16u << 20)
#define BM_CHUNK (64u << 10) /* bitmap chunk, and RAID10's chunk */

static void fill(uint8_t *buf, uint64_t len, unsigned long long seed)
{
	for (uint64_t i = 0; i < len; i += 8) {
		uint64_t v = check_rand(&seed);
		memcpy(buf + i, &v, 8);
	}
}

/* Assemble members 0..n-1, member `faulty` wrapped in fault: (*fv). */
static struct vol *assemble(int n, int faulty, struct vol **fv)
{
	struct md_assemble_opts o = {0};
	struct vol *m[8], **res = NULL;
	char spec[160];
	int nres = 0;

	for (int i = 0; i < n; i++) {
		snprintf(spec, sizeof(spec), i == faulty ? "fault::%s" : "%s", path(i));
		CHECK_EQ(member_open(spec, 0, &m[i]), 0);
	}
	*fv = m[faulty];
	err_clear();
	if (md_assemble_all(m, n, &o, &res, &nres) < 0 || nres != 1) {
		fprintf(stderr, "assemble: %s\n", err_detail(-EIO));
		CHECK(0);
		return NULL;
	}
	struct vol *v = res[0];
	free(res);
	return v;
}

/* Fill the whole array, then close it: reassembled, its bitmap is clear. */
static void prime(int n)
{
	struct vol *fv, *v = assemble(n, 0, &fv);
	uint8_t *buf = malloc(1 << 20);

	for (uint64_t off = 0; v && off < v->size; off += 1 << 20) {
		uint64_t len = v->size - off < (1 << 20) ? v->size - off : (1 << 20);
		fill(buf, len, off + 1);
		CHECK_EQ(vol_write(v, buf, len, off, 0), 0);
	}
	free(buf);
	if (v)
		vol_close(v);
}

static void info(struct vol *v, struct md_array_info *in)
{
	CHECK_EQ(md_array_info(v, in), 0);
	md_array_info_free(in);
}

/* Wait (at most 30 s) until the array is not degraded, or until the rule
 * turned a member away: which one came first. */
static bool wait_settled(struct vol *v, struct md_array_info *in)
{
	for (int t = 0; t < 3000; t++) {
		info(v, in);
		if (!in->degraded || in->readd_refusals)
			return true;
		usleep(10000);
	}
	return false;
}

/* Member bytes written on role (the RAID engine's counter). */
static uint64_t role_written(struct vol *v, unsigned role)
{
	struct raid_io_stats st;

	CHECK_EQ(raid_member_stats(md_array_raid(v), role, &st), 0);
	return st.bytes[1];
}

/* Whether members a and b hold the same data area (md superblock 1.2's
 * data_offset, as the first member records it). */
static bool data_equal(int a, int b)
{
	struct md_super s;
	struct vol *m;
	int fa = open(path(a), O_RDONLY), fb = open(path(b), O_RDONLY);
	bool same = fa >= 0 && fb >= 0;
	static uint8_t x[1 << 16], y[1 << 16];

	CHECK_EQ(member_open(path(a), MEMBER_READONLY, &m), 0);
	CHECK_EQ(md_super_read(m, &s), 0);
	vol_close(m);
	for (uint64_t off = s.data_offset * 512; same && off < s.data_offset * 512 + s.size * 512;
	     off += sizeof(x))
		same = pread(fa, x, sizeof(x), (off_t)off) == (ssize_t)sizeof(x) &&
		       pread(fb, y, sizeof(y), (off_t)off) == (ssize_t)sizeof(y) &&
		       memcmp(x, y, sizeof(x)) == 0;
	close(fa);
	close(fb);
	return same;
}

/* Run a check of the array to its end: the bytes that differed. */
static uint64_t check_array(struct vol *v)
{
	struct md_array_info in;

	CHECK_EQ(md_array_check(v, MD_CHECK_CHECK), 0);
	for (int t = 0; t < 3000; t++) {
		info(v, &in);
		if (in.check_ended && !in.checking)
			break;
		usleep(10000);
	}
	CHECK(in.check_ended);
	CHECK_EQ(in.check_status, 0);
	return in.check_mismatched;
}

/* The md events seen (md_events.h), as one string of names. */
static char events[4096];
static pthread_mutex_t events_lock = PTHREAD_MUTEX_INITIALIZER;

static void on_event(void *ctx, const struct md_event *ev)
{
	(void)ctx;
	pthread_mutex_lock(&events_lock);
	size_t n = strlen(events);
	if (n + strlen(ev->event) + 2 < sizeof(events))
		snprintf(events + n, sizeof(events) - n, "%s ", ev->event);
	pthread_mutex_unlock(&events_lock);
}

struct write_at {
	uint64_t off, len;
};

/* One level: kill member `dead`, write w[0..nw) (their bitmap chunks are
 * the dirty set), revive it: re-added with want_bytes resynced onto it.
 * mirrors: members 2k and 2k+1 hold the same data area. */
static void test_level(const char *level, const char *layout, int n, unsigned dead,
                       const struct write_at *w, unsigned nw, uint64_t want_chunks,
                       uint64_t want_bytes, bool mirrors)
{
	char chunk[32], lay[32];
	struct md_array_info in;
	struct vol *fv, *v;
	uint8_t buf[256 << 10];

	fprintf(stderr, "-- %s %s, %d members\n", level, layout ? layout : "", n);
	for (int i = 0; i < n; i++)
		member_file_make(i, MEMBER_SIZE);
	snprintf(chunk, sizeof(chunk), "--chunk=%u", BM_CHUNK >> 10);
	snprintf(lay, sizeof(lay), "--layout=%s", layout ? layout : "");
	const char *args[12];
	int k = 0;
	args[k++] = level;
	if (layout)
		args[k++] = lay;
	args[k++] = chunk;
	for (int i = 0; i < n; i++)
		args[k++] = path(i);
	while (k < 12)
		args[k++] = NULL;
	CHECK_EQ(create("--assume-clean", "--bitmap=internal", "--bitmap-chunk=64", args[0],
	                args[1], args[2], args[3], args[4], args[5], args[6], args[7], NULL),
	         0);
	prime(n);
	v = assemble(n, (int)dead, &fv);
	if (!v)
		return;
	info(v, &in);
	CHECK(!in.degraded);
	CHECK_EQ(fault_member_kill(fv, true), 0);
	for (unsigned i = 0; i < nw; i++) {
		fill(buf, w[i].len, 1000 + i);
		CHECK_EQ(vol_write(v, buf, w[i].len, w[i].off, 0), 0);
	}
	CHECK_EQ(vol_flush(v), 0);
	info(v, &in);
	CHECK(in.degraded);
	CHECK_EQ(in.failed_devs, 1);
	uint64_t before = role_written(v, dead);
	pthread_mutex_lock(&events_lock);
	events[0] = 0;
	pthread_mutex_unlock(&events_lock);
	CHECK_EQ(fault_member_kill(fv, false), 0);
	CHECK(wait_settled(v, &in));
	CHECK(!in.degraded);
	CHECK_EQ(in.readd_refusals, 0);
	CHECK_EQ(in.readds, 1);
	CHECK_EQ(in.readd_last_chunks, want_chunks);
	CHECK_EQ(in.readd_last_bytes, want_bytes);
	/* Independent of what md says it did: the engine's count of the
	 * bytes that reached the role meanwhile. */
	uint64_t resynced = role_written(v, dead) - before;
	CHECK_EQ(resynced, want_bytes);
	fprintf(stderr,
	        "   written while away: %u writes in %llu bitmap chunks; resynced %llu "
	        "bytes onto the member\n",
	        nw, (unsigned long long)want_chunks, (unsigned long long)resynced);
	/* As mdadm --monitor reports the kernel's re-add. */
	pthread_mutex_lock(&events_lock);
	bool evs = !strncmp(events, "RebuildStarted ", 15) &&
	           strstr(events, "RebuildFinished SpareActive") != NULL;
	if (!evs)
		fprintf(stderr, "   events: %s\n", events);
	CHECK(evs);
	pthread_mutex_unlock(&events_lock);
	CHECK_EQ(check_array(v), 0);
	vol_close(v);
	for (int i = 0; mirrors && i < n; i += 2)
		CHECK(data_equal(i, i + 1));
}

/* Rewrite member i's superblock (v1.2, at 4 KiB) with fn's change, behind
 * the array's back (as another host's writes would). */
static void tamper(int i, void (*fn)(struct md_super *s))
{
	uint8_t *buf = malloc(MD_SB_BLOCK);
	struct md_super *s = malloc(sizeof(*s));
	int fd = open(path(i), O_RDWR);

	CHECK(fd >= 0 && pread(fd, buf, MD_SB_BLOCK, MD_SB_OFFSET) == MD_SB_BLOCK);
	CHECK_EQ(md_super_decode(buf, s), 0);
	fn(s);
	md_super_encode(s);
	CHECK(pwrite(fd, s->raw, MD_SB_BLOCK, MD_SB_OFFSET) == MD_SB_BLOCK);
	close(fd);
	free(s);
	free(buf);
}

static void other_disk(struct md_super *s)
{
	s->device_uuid[0] ^= 0x5a;
}

static void newer(struct md_super *s)
{
	s->events += 100;
}

static void older(struct md_super *s)
{
	s->events = 0;
}

/* RAID1 member 1 dies, is written over behind our back by change, and
 * comes back: refused, the array stays degraded, and asking for a re-add
 * gives the reason. */
static void test_refused(const char *what, void (*change)(struct md_super *s), bool bitmap,
                         int want_err)
{
	struct md_array_info in;
	struct vol *fv, *v;
	uint8_t buf[4096];

	fprintf(stderr, "-- refused: %s\n", what);
	member_file_make(0, MEMBER_SIZE);
	member_file_make(1, MEMBER_SIZE);
	CHECK_EQ(create("--level=1", "--assume-clean",
	                bitmap ? "--bitmap=internal" : "--bitmap=none", "--bitmap-chunk=64",
	                path(0), path(1), NULL),
	         0);
	prime(2); /* events_cleared moves past 0 */
	v = assemble(2, 1, &fv);
	if (!v)
		return;
	CHECK_EQ(fault_member_kill(fv, true), 0);
	memset(buf, 0x33, sizeof(buf));
	CHECK_EQ(vol_write(v, buf, sizeof(buf), 1 << 20, 0), 0);
	if (change)
		tamper(1, change);
	CHECK_EQ(fault_member_kill(fv, false), 0);
	if (bitmap) {
		CHECK(wait_settled(v, &in));
		CHECK_EQ(in.readd_refusals, 1);
	} else {
		/* No bitmap: no retries at all; the request is refused. */
		info(v, &in);
	}
	CHECK(in.degraded);
	CHECK_EQ(in.readds, 0);
	err_clear();
	int r = md_array_readd(v, fv->name);
	CHECK_EQ(r, want_err);
	fprintf(stderr, "   uraid add --re-add: %s\n", err_detail(r));
	info(v, &in);
	CHECK(in.degraded);
	vol_close(v);
}

/* A member that missed writes while the array ran without it (failed,
 * the array closed degraded) and is given again at the next start: left
 * out as stale, then re-added from the bitmap by the running array, with
 * only the chunks written meanwhile resynced (md's re-add at assembly). */
static void test_at_start(void)
{
	struct md_array_info in;
	struct vol *fv, *v;
	uint8_t buf[8192];

	fprintf(stderr, "-- stale at the start\n");
	member_file_make(0, MEMBER_SIZE);
	member_file_make(1, MEMBER_SIZE);
	CHECK_EQ(create("--level=1", "--assume-clean", "--bitmap=internal", "--bitmap-chunk=64",
	                path(0), path(1), NULL),
	         0);
	prime(2);
	v = assemble(2, 1, &fv);
	if (!v)
		return;
	CHECK_EQ(fault_member_kill(fv, true), 0);
	fill(buf, sizeof(buf), 7);
	CHECK_EQ(vol_write(v, buf, 4096, 2u << 20, 0), 0);          /* chunk 32 */
	CHECK_EQ(vol_write(v, buf, 8192, (7u << 20) - 4096, 0), 0); /* chunks 111, 112 */
	vol_close(v);
	v = assemble(2, 0, &fv); /* both plain, member 1 stale now */
	if (!v)
		return;
	CHECK(wait_settled(v, &in));
	CHECK(!in.degraded);
	CHECK_EQ(in.readds, 1);
	CHECK_EQ(in.readd_last_chunks, 3);
	CHECK_EQ(in.readd_last_bytes, 3 * BM_CHUNK);
	CHECK_EQ(role_written(v, 1), 3 * BM_CHUNK); /* it joined at the start */
	CHECK_EQ(check_array(v), 0);
	vol_close(v);
	CHECK(data_equal(0, 1));
}

int main(void)
{
	if (check_tmpdir(dir, sizeof(dir), "readd") < 0)
		return 1;
	log_verbosity = LOG_WARN;
	CHECK_EQ(md_events_subscribe(on_event, NULL), 0);
	/* RAID1: bitmap chunks are member bytes; 4 dirty chunks. */
	const struct write_at w1[] = {
	    {1u << 20, 4096},                    /* chunk 16 */
	    {(3u << 20) + (100u << 10), 4096},   /* chunk 49 */
	    {(5u << 20) + (32u << 10), 64 << 10} /* chunks 80, 81 */
	};
	test_level("--level=1", NULL, 2, 1, w1, 3, 4, 4 * BM_CHUNK, true);
	/* RAID10 n2 on 4: array chunk c lies on roles 2c%4 and 2c%4+1, row
	 * c/2; role 1 holds the even chunks.  Dirty: 2, 4, 7, 10, 11 (one
	 * 128 KiB write); role 1 holds 2, 4 and 10 of them. */
	const struct write_at w10[] = {
	    {2 * BM_CHUNK + 512, 4096},
	    {4 * BM_CHUNK, BM_CHUNK},
	    {7 * BM_CHUNK + 8192, 4096},
	    {10 * BM_CHUNK, 2 * BM_CHUNK},
	};
	test_level("--level=10", "n2", 4, 1, w10, 4, 5, 3 * BM_CHUNK, true);
	/* RAID5 on 4 (3 data chunks a row): bitmap chunks are member bytes,
	 * one per stripe row; every dirty row is resynced onto the member,
	 * data or parity.  Rows 0, 2 and 3 (chunks 0, 7, 9..10). */
	const struct write_at w5[] = {
	    {0, 4096},
	    {7 * BM_CHUNK + 4096, 8192},
	    {9 * BM_CHUNK, 2 * BM_CHUNK},
	};
	test_level("--level=5", NULL, 4, 2, w5, 3, 3, 3 * BM_CHUNK, false);
	test_at_start();
	test_refused("another device UUID", other_disk, true, -EINVAL);
	test_refused("newer events", newer, true, -ESTALE);
	test_refused("events older than the bitmap covers", older, true, -ESTALE);
	test_refused("no bitmap", NULL, false, -ENOTSUP);
	for (int i = 0; i < 8; i++)
		unlink(path(i));
	rmdir(dir);
	return check_done();
}
