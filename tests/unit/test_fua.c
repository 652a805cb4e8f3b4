/* test_fua.c — FUA covers the whole request on every layer that splits
 * one: after a WRITE or WRITE_ZEROES with VOL_FUA returns, every piece it
 * wrote to a member is durable, either written with VOL_FUA itself or
 * followed by a flush of that member before the reply.  The members are
 * recorders over mem: vols that log each write's flags and each flush;
 * they have no write_zeroes op, so zeros reach them through
 * vol_write_zeroes_by_writing as well.  Layers: the fallback itself,
 * crypt (whole and in pieces), RAID5 and RAID6 (zeros are written, parity and all) and linear. */
#include "check.h"
#include "mem_vol.h"

#include "core/log.h"
#include "disc/crypt.h"
#include "disc/raid/raid.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1u << 20)
#define REC_MAX 4096

struct rec_event {
	bool flush; /* else a write */
	bool fua;
};

struct rec_vol {
	struct vol vol;
	struct vol *inner;
	pthread_mutex_t lock;
	unsigned n;
	struct rec_event ev[REC_MAX];
};

static struct rec_vol *to_rec(struct vol *v)
{
	return container_of(v, struct rec_vol, vol);
}

static void rec_log(struct rec_vol *r, bool flush, bool fua)
{
	pthread_mutex_lock(&r->lock);
	if (r->n < REC_MAX)
		r->ev[r->n] = (struct rec_event){flush, fua};
	r->n++;
	pthread_mutex_unlock(&r->lock);
}

static int rec_read(struct vol *v, void *buf, uint64_t len, uint64_t off)
{
	return vol_read(to_rec(v)->inner, buf, len, off);
}

static int rec_write(struct vol *v, const void *buf, uint64_t len, uint64_t off, unsigned flags)
{
	struct rec_vol *r = to_rec(v);
	int e = vol_write(r->inner, buf, len, off, 0);

	/* Logged once it is done, as a disk would complete it. */
	if (e == 0)
		rec_log(r, false, flags & VOL_FUA);
	return e;
}

/* A view, as mem: has, so layers that treat plain stores apart (crypt's
 * piece writes) take that path over the recorder too. */
static int rec_view(struct vol *v, uint64_t len, uint64_t off, vol_view_fn fn, void *arg)
{
	return vol_view(to_rec(v)->inner, len, off, fn, arg);
}

static int rec_flush(struct vol *v)
{
	rec_log(to_rec(v), true, false);
	return 0;
}

static void rec_close(struct vol *v)
{
	struct rec_vol *r = to_rec(v);

	vol_close(r->inner);
	pthread_mutex_destroy(&r->lock);
	vol_fini(v);
	free(r);
}

static const struct vol_ops rec_ops = {
    .kind = "rec",
    .read = rec_read,
    .write = rec_write,
    .flush = rec_flush,
    .close = rec_close,
    .view = rec_view,
};

static struct vol *rec_open(uint64_t size)
{
	struct rec_vol *r = calloc(1, sizeof(*r));

	CHECK(r != NULL);
	r->inner = mem_vol(size);
	pthread_mutex_init(&r->lock, NULL);
	CHECK_EQ(vol_init(&r->vol, &rec_ops, "rec", size, 512,
	                  VOL_CAP_FUA | VOL_CAP_FLUSH | (r->inner->caps & VOL_CAP_VIEW)),
	         0);
	return &r->vol;
}

/* Where the member's log stands now: what a check later starts from. */
static unsigned rec_mark(struct vol *v)
{
	return to_rec(v)->n;
}

/* Since mark: the number of writes, and how many of them are still
 * volatile (neither FUA nor followed by a flush). */
static unsigned rec_volatile(struct vol *v, unsigned mark, unsigned *writes)
{
	struct rec_vol *r = to_rec(v);
	unsigned pending = 0;

	CHECK(r->n <= REC_MAX);
	*writes = 0;
	for (unsigned i = mark; i < r->n && i < REC_MAX; i++) {
		if (r->ev[i].flush) {
			pending = 0;
			continue;
		}
		++*writes;
		pending += !r->ev[i].fua;
	}
	return pending;
}

enum op { OP_WRITE, OP_ZERO, OP_ZERO_FALLBACK };

/* Run one FUA request of len at off on top, then check every member:
 * it took writes (the request reached it) and none is left volatile. */
static void check_fua(const char *what, struct vol *top, struct vol **m, unsigned n, enum op op,
                      uint64_t len, uint64_t off)
{
	unsigned mark[8], touched = 0;
	int r;

	for (unsigned i = 0; i < n; i++)
		mark[i] = rec_mark(m[i]);
	if (op == OP_WRITE) {
		unsigned char *buf = malloc(len);
		CHECK(buf != NULL);
		memset(buf, 0x5a, len);
		r = vol_write(top, buf, len, off, VOL_FUA);
		free(buf);
	} else if (op == OP_ZERO) {
		r = vol_write_zeroes(top, len, off, VOL_FUA);
	} else {
		r = vol_write_zeroes_by_writing(top, len, off, VOL_FUA);
	}
	CHECK_EQ(r, 0);
	for (unsigned i = 0; i < n; i++) {
		unsigned writes, left = rec_volatile(m[i], mark[i], &writes);
		if (left)
			fprintf(stderr, "%s: member %u: %u of %u writes not durable at the reply\n",
			        what, i, left, writes);
		CHECK_EQ(left, 0);
		touched += writes > 0;
	}
	CHECK(touched > 0);
}

/* The fallback splits into 1 MiB writes of the vol itself. */
static void test_fallback(void)
{
	struct vol *m = rec_open(8 * MIB);

	check_fua("fallback", m, &m, 1, OP_ZERO_FALLBACK, 3 * MIB, 512);
	check_fua("fallback, one piece", m, &m, 1, OP_ZERO_FALLBACK, 4096, 0);
	check_fua("no write_zeroes op", m, &m, 1, OP_ZERO, 3 * MIB, 0);
	vol_close(m);
}

/* Crypt encrypts zeros in 4 MiB pieces. */
static void test_crypt(void)
{
	unsigned char key[64];
	struct crypt_params p = {
	    .cipher = "aes-xts-plain64", .key = key, .key_len = 64, .sector_size = 512};
	struct vol *m = rec_open(32 * MIB), *c = NULL;

	for (unsigned i = 0; i < sizeof(key); i++) /* XTS wants two different halves */
		key[i] = (unsigned char)(i * 37 + 11);
	CHECK_EQ(crypt_open(m, &p, true, NULL, &c), 0);
	if (!c) {
		vol_close(m);
		return;
	}
	check_fua("crypt zeroes", c, &m, 1, OP_ZERO, 16 * MIB, 0);
	check_fua("crypt zeroes, one piece", c, &m, 1, OP_ZERO, 64 << 10, 4096);
	check_fua("crypt write", c, &m, 1, OP_WRITE, 9 * MIB, 512);
	/* Aligned, over a fast child: each piece writes its own part. */
	check_fua("crypt write, in pieces", c, &m, 1, OP_WRITE, 2 * MIB, MIB);
	vol_close(c);
}

static struct vol *open_raid(int level, unsigned n, uint32_t chunk, uint64_t size, struct vol **m)
{
	struct raid_geom g = {
	    .level = level, .layout = level >= 5 ? 2 : 0, .chunk = chunk, .raid_disks = n};
	struct vol *members[8], *a = NULL;
	int r;

	for (unsigned i = 0; i < n; i++)
		members[i] = m[i] = rec_open(size);
	r = raid_open(&g, members, NULL, "t", &a);
	if (r < 0)
		fprintf(stderr, "raid_open level %d: %s\n", level, err_detail(r));
	CHECK_EQ(r, 0);
	return a;
}

/* RAID5 and RAID6: zeros are written by the fallback over the array;
 * writes span rows and members. */
static void test_parity(int level, unsigned n)
{
	struct vol *m[4], *a = open_raid(level, n, 64 << 10, 8 * MIB, m);

	if (!a)
		return;
	check_fua("parity zeroes", a, m, n, OP_ZERO, 4 * MIB, 0);
	check_fua("parity zeroes, part rows", a, m, n, OP_ZERO, 3 * MIB + 4096, 64 << 10);
	check_fua("parity write", a, m, n, OP_WRITE, 3 * MIB, 4096);
	vol_close(a);
}

/* Linear: one request over both members, each of which zeros by the
 * fallback (the recorders have no write_zeroes). */
static void test_linear(void)
{
	struct vol *m[2], *a = open_raid(RAID_LEVEL_LINEAR, 2, 0, 4 * MIB, m);

	if (!a)
		return;
	check_fua("linear zeroes", a, m, 2, OP_ZERO, 6 * MIB, 1 * MIB);
	check_fua("linear write", a, m, 2, OP_WRITE, 6 * MIB, 1 * MIB);
	vol_close(a);
}

int main(void)
{
	test_fallback();
	test_crypt();
	test_parity(5, 3);
	test_parity(6, 4);
	test_linear();
	return check_done();
}
