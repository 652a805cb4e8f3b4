/* test_raid_behind.c — md's write-behind (raid_set_write_behind) on a
 * RAID1 of a RAM member and a write-mostly "gate" member whose writes wait
 * until the test opens it (or 20 s, so that a broken build fails rather
 * than hangs), and then complete newest first:
 *  - writes return while their write-mostly copies wait at the gate, up to
 *    the max; the data reads back (from the other copy); a FLUSH issued
 *    while they wait reaches the gate member only after they landed, and
 *    then both copies agree;
 *  - a write overlapping a copy still behind waits for it, so the gate's
 *    newest-first order cannot leave the older data on the member;
 *  - FUA writes, and writes past the max, do not go behind;
 *  - a copy behind that fails fails its member before the FLUSH after it
 *    returns;
 *  - a read that must use the write-mostly copy (the other failed) waits
 *    for what is behind on it.
 * Without write-behind each of these fails on its own CHECK. */
#include "check.h"
#include "mem_vol.h"

#include "core/log.h"
#include "disc/raid/raid.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MIB (1u << 20)
#define SIZE (8 * MIB)
#define BLK (64u << 10)

struct gate_vol {
	struct vol vol;
	struct vol *inner;
	pthread_mutex_t lock;
	pthread_cond_t cv;
	bool open;
	int fail;          /* writes fail with this once through the gate */
	uint64_t pending;  /* bit t: ticket t waits at the gate */
	unsigned tickets;  /* taken (at most 64 a test) */
	unsigned done;     /* writes completed */
	unsigned at_flush; /* done as the last flush found it */
};

static struct gate_vol *to_gate(struct vol *v)
{
	return container_of(v, struct gate_vol, vol);
}

static int gate_read(struct vol *v, void *buf, uint64_t len, uint64_t off)
{
	return vol_read(to_gate(v)->inner, buf, len, off);
}

/* Through the gate when it is open and no later write waits: newest
 * first, the order that would undo an older write landing last. */
static int gate_write(struct vol *v, const void *buf, uint64_t len, uint64_t off, unsigned flags)
{
	struct gate_vol *g = to_gate(v);
	struct timespec until;
	int e;

	(void)flags;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 20;
	pthread_mutex_lock(&g->lock);
	unsigned t = g->tickets++ % 64;
	g->pending |= 1ull << t;
	while (!(g->open && (g->pending >> t) == 1))
		if (pthread_cond_timedwait(&g->cv, &g->lock, &until) == ETIMEDOUT)
			break;
	e = g->fail;
	pthread_mutex_unlock(&g->lock);
	if (!e)
		e = vol_write(g->inner, buf, len, off, 0);
	pthread_mutex_lock(&g->lock);
	g->pending &= ~(1ull << t);
	g->done++;
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->lock);
	return e;
}

static int gate_flush(struct vol *v)
{
	struct gate_vol *g = to_gate(v);

	pthread_mutex_lock(&g->lock);
	g->at_flush = g->done;
	pthread_mutex_unlock(&g->lock);
	return 0;
}

static void gate_close(struct vol *v)
{
	struct gate_vol *g = to_gate(v);

	vol_close(g->inner);
	pthread_cond_destroy(&g->cv);
	pthread_mutex_destroy(&g->lock);
	vol_fini(v);
	free(g);
}

static const struct vol_ops gate_ops = {
    .kind = "gate",
    .read = gate_read,
    .write = gate_write,
    .flush = gate_flush,
    .close = gate_close,
};

static struct gate_vol *gate_new(void)
{
	struct gate_vol *g = calloc(1, sizeof(*g));

	CHECK(g != NULL);
	g->inner = mem_vol(SIZE);
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->cv, NULL);
	CHECK_EQ(vol_init(&g->vol, &gate_ops, "gate", SIZE, 512, VOL_CAP_FLUSH), 0);
	return g;
}

static void gate_set(struct gate_vol *g, bool open)
{
	pthread_mutex_lock(&g->lock);
	g->open = open;
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->lock);
}

static unsigned gate_done(struct gate_vol *g)
{
	pthread_mutex_lock(&g->lock);
	unsigned d = g->done;
	pthread_mutex_unlock(&g->lock);
	return d;
}

struct fixture {
	struct vol *a, *fast;
	struct gate_vol *g;
	unsigned failed; /* member_failed events, bit per role */
};

static void on_failed(void *ctx, unsigned role, int err)
{
	(void)err;
	__atomic_fetch_or(&((struct fixture *)ctx)->failed, 1u << role, __ATOMIC_SEQ_CST);
}

static bool setup(struct fixture *f, unsigned max)
{
	struct raid_geom geom = {.level = 1, .raid_disks = 2};
	struct raid_events ev = {.member_failed = on_failed, .ctx = f};
	struct vol *m[2];

	memset(f, 0, sizeof(*f));
	f->g = gate_new();
	m[0] = f->fast = mem_vol(SIZE);
	m[1] = &f->g->vol;
	int r = raid_open(&geom, m, &ev, "behind", &f->a);
	CHECK_EQ(r, 0);
	if (r < 0)
		return false;
	CHECK_EQ(raid_set_write_mostly(f->a, 1, true), 0);
	CHECK_EQ(raid_set_writebehind(f->a, -1), 0); /* no staging of streams */
	CHECK_EQ(raid_set_write_behind(f->a, max), 0);
	return true;
}

static void fill(uint8_t *b, size_t len, unsigned k)
{
	for (size_t i = 0; i < len; i++)
		b[i] = (uint8_t)(k * 31 + i / 512);
}

/* Both copies, read from the members themselves, agree over the array. */
static void check_copies_agree(struct fixture *f)
{
	uint8_t *x = malloc(SIZE), *y = malloc(SIZE);

	CHECK_EQ(vol_read(f->fast, x, SIZE, 0), 0);
	CHECK_EQ(vol_read(f->g->inner, y, SIZE, 0), 0);
	CHECK(memcmp(x, y, SIZE) == 0);
	free(x);
	free(y);
}

struct async {
	struct vol *v;
	const void *buf;
	uint64_t len, off;
	unsigned flags;
	bool flush;
	int r;
	volatile bool returned;
};

static void *async_run(void *arg)
{
	struct async *op = arg;
	op->r =
	    op->flush ? vol_flush(op->v) : vol_write(op->v, op->buf, op->len, op->off, op->flags);
	op->returned = true;
	return NULL;
}

static void test_ack_and_flush(void)
{
	struct fixture f;
	uint8_t *w = malloc(8 * BLK), *r = malloc(8 * BLK);
	unsigned now;
	uint64_t total;

	fprintf(stderr, "-- writes return ahead of the write-mostly copy; FLUSH waits\n");
	if (!setup(&f, 8))
		return;
	for (unsigned k = 0; k < 8; k++) {
		fill(w + k * BLK, BLK, k + 1);
		CHECK_EQ(vol_write(f.a, w + k * BLK, BLK, (uint64_t)k * BLK, 0), 0);
	}
	CHECK_EQ(gate_done(f.g), 0); /* returned with every copy behind */
	CHECK_EQ(raid_write_behind_stats(f.a, &now, &total), 0);
	CHECK_EQ(now, 8);
	CHECK_EQ(vol_read(f.a, r, 8 * BLK, 0), 0);
	CHECK(memcmp(w, r, 8 * BLK) == 0);

	struct async fl = {.v = f.a, .flush = true};
	pthread_t t;
	pthread_create(&t, NULL, async_run, &fl);
	usleep(100000); /* lets a flush that does not wait reach the gate first */
	gate_set(f.g, true);
	pthread_join(t, NULL);
	CHECK_EQ(fl.r, 0);
	CHECK_EQ(f.g->at_flush, 8); /* the member's flush came after its 8 writes */
	CHECK_EQ(raid_write_behind_stats(f.a, &now, &total), 0);
	CHECK_EQ(now, 0);
	CHECK_EQ(total, 8);
	check_copies_agree(&f);
	CHECK_EQ(f.failed, 0);
	vol_close(f.a);
	free(w);
	free(r);
}

static void test_overlap_order(void)
{
	struct fixture f;
	uint8_t *a = malloc(BLK), *b = malloc(BLK), *got = malloc(BLK);

	fprintf(stderr, "-- a write over a copy still behind waits for it\n");
	if (!setup(&f, 8))
		return;
	fill(a, BLK, 1);
	fill(b, BLK, 2);
	CHECK_EQ(vol_write(f.a, a, BLK, 0, 0), 0);
	struct async w2 = {.v = f.a, .buf = b, .len = BLK, .off = 0};
	pthread_t t;
	pthread_create(&t, NULL, async_run, &w2);
	usleep(100000); /* lets a second copy that does not wait reach the gate */
	gate_set(f.g, true);
	pthread_join(t, NULL);
	CHECK_EQ(w2.r, 0);
	CHECK_EQ(vol_flush(f.a), 0);
	CHECK_EQ(vol_read(f.g->inner, got, BLK, 0), 0);
	CHECK(memcmp(got, b, BLK) == 0); /* the newer data, not the one that was behind */
	check_copies_agree(&f);
	vol_close(f.a);
	free(a);
	free(b);
	free(got);
}

/* A write that may not go behind waits at the gate: it has not returned
 * while the gate is shut. */
static void check_waits(struct fixture *f, const uint8_t *buf, uint64_t off, unsigned flags)
{
	struct async w = {.v = f->a, .buf = buf, .len = BLK, .off = off, .flags = flags};
	pthread_t t;

	pthread_create(&t, NULL, async_run, &w);
	usleep(100000);
	CHECK(!w.returned);
	gate_set(f->g, true);
	pthread_join(t, NULL);
	CHECK_EQ(w.r, 0);
	gate_set(f->g, false);
}

static void test_not_behind(void)
{
	struct fixture f;
	uint8_t *w = malloc(BLK);

	fprintf(stderr, "-- FUA and writes past the max are not behind\n");
	if (!setup(&f, 2))
		return;
	fill(w, BLK, 7);
	check_waits(&f, w, 0, VOL_FUA);
	CHECK_EQ(vol_write(f.a, w, BLK, BLK, 0), 0);
	CHECK_EQ(vol_write(f.a, w, BLK, 2 * BLK, 0), 0);
	check_waits(&f, w, 3 * BLK, 0); /* the third, with two behind */
	gate_set(f.g, true);
	CHECK_EQ(vol_flush(f.a), 0);
	check_copies_agree(&f);
	vol_close(f.a);
	free(w);
}

static void test_behind_fails(void)
{
	struct fixture f;
	uint8_t *w = malloc(BLK), *r = malloc(BLK);

	fprintf(stderr, "-- a copy behind that fails fails its member\n");
	if (!setup(&f, 8))
		return;
	f.g->fail = -EIO;
	fill(w, BLK, 9);
	CHECK_EQ(vol_write(f.a, w, BLK, 0, 0), 0);
	CHECK_EQ(f.failed, 0);
	gate_set(f.g, true);
	CHECK_EQ(vol_flush(f.a), 0);
	CHECK_EQ(f.failed, 2u); /* role 1, before the flush returned */
	CHECK_EQ(vol_read(f.a, r, BLK, 0), 0);
	CHECK(memcmp(w, r, BLK) == 0);
	vol_close(f.a);
	free(w);
	free(r);
}

struct async_read {
	struct vol *v;
	void *buf;
	int r;
};

static void *async_read_run(void *arg)
{
	struct async_read *op = arg;
	op->r = vol_read(op->v, op->buf, BLK, 0);
	return NULL;
}

static void test_read_waits(void)
{
	struct fixture f;
	uint8_t *w = malloc(BLK), *r = malloc(BLK);

	fprintf(stderr, "-- a read of the write-mostly copy waits for what is behind\n");
	if (!setup(&f, 8))
		return;
	fill(w, BLK, 5);
	CHECK_EQ(vol_write(f.a, w, BLK, 0, 0), 0);
	CHECK_EQ(raid_fail_member(f.a, 0), 0); /* reads go to the write-mostly copy now */
	struct async_read rd = {.v = f.a, .buf = r};
	pthread_t t;
	pthread_create(&t, NULL, async_read_run, &rd);
	usleep(100000); /* lets a read that does not wait reach the member first */
	gate_set(f.g, true);
	pthread_join(t, NULL);
	CHECK_EQ(rd.r, 0);
	CHECK(memcmp(w, r, BLK) == 0);
	vol_close(f.a);
	free(w);
	free(r);
}

static void test_refused(void)
{
	struct vol *m[2] = {mem_vol(SIZE), mem_vol(SIZE)}, *a;
	struct raid_geom geom = {.level = 0, .raid_disks = 2, .chunk = 64 << 10};

	fprintf(stderr, "-- RAID1 only, at most md's max\n");
	CHECK_EQ(raid_open(&geom, m, NULL, "r0", &a), 0);
	CHECK_EQ(raid_set_write_behind(a, 4), -ENOTSUP);
	vol_close(a);
	struct fixture f;
	if (!setup(&f, 0))
		return;
	CHECK_EQ(raid_set_write_behind(f.a, RAID_BEHIND_MAX + 1), -EINVAL);
	gate_set(f.g, true);
	vol_close(f.a);
}

int main(void)
{
	test_ack_and_flush();
	test_overlap_order();
	test_not_behind();
	test_behind_fails();
	test_read_waits();
	test_refused();
	return check_done();
}
