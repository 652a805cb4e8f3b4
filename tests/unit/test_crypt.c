/* test_crypt.c — the crypt vol's behaviour over mem: members: a random
 * round-trip oracle for every cipher and both sector sizes (requests
 * smaller and larger than the 256 KiB parallel split), iv_offset and plain vs
 * plain64 IVs, nothing of the plaintext in the child, write_zeroes,
 * caps, the errors for bad parameters, and which timings make a child
 * with a view slow. */
#include "check.h"

#include "core/log.h"
#include "disc/crypt.h"
#include "member/member.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#define DEV_SIZE (4u << 20)

static unsigned char key64[64];

static struct vol *open_mem(void)
{
	struct vol *m = NULL;

	CHECK_EQ(member_open("mem:4M", 0, &m), 0);
	return m;
}

static struct vol *open_crypt(struct vol *m, const char *cipher, size_t key_len, uint32_t ss,
			      uint64_t iv_offset)
{
	struct crypt_params p = { .cipher = cipher, .key = key64, .key_len = key_len,
				  .sector_size = ss, .iv_offset = iv_offset };
	struct vol *c = NULL;
	int r = crypt_open(m, &p, false, NULL, &c);

	if (r != 0)
		fprintf(stderr, "crypt_open %s/%zu/%u: %s\n", cipher, key_len, ss, err_detail(r));
	CHECK_EQ(r, 0);
	return c;
}

/* Random writes, zeroes and reads against a flat reference; then close,
 * reopen with the same key and compare everything. */
static void oracle(const char *cipher, size_t key_len, uint32_t ss, unsigned long long seed)
{
	struct vol *m = open_mem();
	struct vol *c = open_crypt(m, cipher, key_len, ss, 0);
	unsigned char *ref = calloc(1, DEV_SIZE), *buf = malloc(DEV_SIZE), *copy = malloc(DEV_SIZE);
	const uint64_t nsec = DEV_SIZE / ss;

	if (!c)
		goto out;
	/* A fresh member holds raw zeros, which decrypt to noise: format it. */
	CHECK_EQ(vol_write_zeroes(c, DEV_SIZE, 0, 0), 0);
	for (int op = 0; op < 120; op++) {
		uint64_t r = check_rand(&seed);
		/* Sizes from one sector up to 3 MiB, skewed small. */
		uint64_t max = (r & 3) == 0 ? (1536u << 10) / ss : (r & 3) == 1 ? (256u << 10) / ss : 8;
		uint64_t n = 1 + check_rand(&seed) % max;
		uint64_t s = check_rand(&seed) % nsec;
		uint64_t len, off;

		if (s + n > nsec)
			n = nsec - s;
		len = n * ss;
		off = s * ss;
		switch ((r >> 8) % 5) {
		case 0:
		case 1:
			for (uint64_t i = 0; i < len; i++)
				buf[i] = (unsigned char)check_rand(&seed);
			memcpy(copy, buf, len);
			CHECK_EQ(vol_write(c, buf, len, off, (r >> 16) & 1 ? VOL_FUA : 0), 0);
			CHECK(memcmp(copy, buf, len) == 0); /* caller's buffer untouched */
			memcpy(ref + off, buf, len);
			break;
		case 2:
			CHECK_EQ(vol_write_zeroes(c, len, off, 0), 0);
			memset(ref + off, 0, len);
			break;
		default:
			CHECK_EQ(vol_read(c, buf, len, off), 0);
			if (memcmp(buf, ref + off, len) != 0) {
				fprintf(stderr, "%s ss %u: read mismatch at %llu+%llu (op %d)\n", cipher,
					ss, (unsigned long long)off, (unsigned long long)len, op);
				CHECK(0);
			}
			break;
		}
	}
	vol_close(c);
	c = open_crypt(m, cipher, key_len, ss, 0);
	if (!c)
		goto out;
	CHECK_EQ(vol_read(c, buf, DEV_SIZE, 0), 0);
	CHECK(memcmp(buf, ref, DEV_SIZE) == 0);
	vol_close(c);
out:
	vol_close(m);
	free(ref);
	free(buf);
	free(copy);
}

/* The sector at iv_offset k (512-byte units) and byte offset 0 encrypts
 * like the sector at byte offset k*512 with iv_offset 0. */
static void iv_offset_check(uint32_t ss)
{
	struct vol *m1 = open_mem(), *m2 = open_mem();
	struct vol *a = open_crypt(m1, "aes-xts-plain64", 64, ss, 0);
	struct vol *b = open_crypt(m2, "aes-xts-plain64", 64, ss, 5 * (ss / 512));
	unsigned char data[4096], ca[4096], cb[4096];

	memset(data, 0x3c, sizeof(data));
	CHECK_EQ(vol_write(a, data, ss, 5 * (uint64_t)ss, 0), 0);
	CHECK_EQ(vol_write(b, data, ss, 0, 0), 0);
	CHECK_EQ(vol_read(m1, ca, ss, 5 * (uint64_t)ss), 0);
	CHECK_EQ(vol_read(m2, cb, ss, 0), 0);
	CHECK(memcmp(ca, cb, ss) == 0);
	/* ... and not like the sector at offset 0 of a. */
	CHECK_EQ(vol_write(a, data, ss, 0, 0), 0);
	CHECK_EQ(vol_read(m1, ca, ss, 0), 0);
	CHECK(memcmp(ca, cb, ss) != 0);
	vol_close(a);
	vol_close(b);
	vol_close(m1);
	vol_close(m2);
}

/* plain keeps the low 32 bits of the sector number, plain64 all 64. */
static void plain_vs_plain64(void)
{
	struct vol *m1 = open_mem(), *m2 = open_mem(), *m3 = open_mem();
	struct vol *p32 = open_crypt(m1, "aes-xts-plain", 64, 512, 1ull << 32);
	struct vol *p32z = open_crypt(m2, "aes-xts-plain", 64, 512, 0);
	struct vol *p64 = open_crypt(m3, "aes-xts-plain64", 64, 512, 1ull << 32);
	unsigned char data[512], c1[512], c2[512], c3[512];

	memset(data, 0x77, sizeof(data));
	CHECK_EQ(vol_write(p32, data, 512, 0, 0), 0);
	CHECK_EQ(vol_write(p32z, data, 512, 0, 0), 0);
	CHECK_EQ(vol_write(p64, data, 512, 0, 0), 0);
	CHECK_EQ(vol_read(m1, c1, 512, 0), 0);
	CHECK_EQ(vol_read(m2, c2, 512, 0), 0);
	CHECK_EQ(vol_read(m3, c3, 512, 0), 0);
	CHECK(memcmp(c1, c2, 512) == 0);
	CHECK(memcmp(c1, c3, 512) != 0);
	vol_close(p32);
	vol_close(p32z);
	vol_close(p64);
	vol_close(m1);
	vol_close(m2);
	vol_close(m3);
}

/* A recognisable pattern written through the vol appears nowhere in the
 * child, not even one 16-byte block of it; zeros do not stay zeros. */
static void nothing_in_the_clear(const char *cipher, size_t key_len, uint32_t ss)
{
	static const char pat[] = "uraid-plaintext!"; /* 16 bytes: one AES block */
	struct vol *m = open_mem();
	struct vol *c = open_crypt(m, cipher, key_len, ss, 0);
	unsigned char *buf = malloc(DEV_SIZE), *zero = calloc(1, 1u << 20);

	if (!c)
		goto out;
	for (size_t i = 0; i < DEV_SIZE; i += 16)
		memcpy(buf + i, pat, 16);
	CHECK_EQ(vol_write(c, buf, DEV_SIZE - (1u << 20), 0, 0), 0);
	CHECK_EQ(vol_write_zeroes(c, 1u << 20, DEV_SIZE - (1u << 20), 0), 0);
	CHECK_EQ(vol_read(m, buf, DEV_SIZE, 0), 0);
	CHECK(memmem(buf, DEV_SIZE, pat, 16) == NULL);
	for (size_t off = DEV_SIZE - (1u << 20); off < DEV_SIZE; off += ss)
		CHECK(memcmp(buf + off, zero, ss) != 0);
	/* Through the vol the zeros are zeros. */
	CHECK_EQ(vol_read(c, buf, 1u << 20, DEV_SIZE - (1u << 20)), 0);
	CHECK(memcmp(buf, zero, 1u << 20) == 0);
	vol_close(c);
out:
	vol_close(m);
	free(buf);
	free(zero);
}

static void caps_and_limits(void)
{
	struct vol *m = open_mem();
	struct vol *c = open_crypt(m, "aes-xts-plain64", 64, 4096, 0);

	if (!c) {
		vol_close(m);
		return;
	}
	CHECK_EQ(c->block_min, 4096);
	CHECK(c->block_pref >= 4096);
	CHECK_EQ(c->block_max % 4096, 0);
	CHECK_EQ(c->size, DEV_SIZE);
	CHECK(!(c->caps & VOL_CAP_TRIM));
	CHECK(c->caps & VOL_CAP_ZEROES);
	CHECK(!(c->caps & VOL_CAP_FAST_ZERO));
	CHECK_EQ(c->caps & VOL_CAP_MULTI_CONN, m->caps & VOL_CAP_MULTI_CONN);
	CHECK_EQ(c->caps & VOL_CAP_FUA, m->caps & VOL_CAP_FUA);
	CHECK_EQ(vol_write_zeroes(c, 4096, 0, VOL_FAST_ZERO), -ENOTSUP);
	/* Trim is a no-op: the data stays readable. */
	unsigned char a[4096], b[4096];
	memset(a, 0x11, sizeof(a));
	CHECK_EQ(vol_write(c, a, 4096, 8192, 0), 0);
	CHECK_EQ(vol_trim(c, 4096, 8192, 0), 0);
	CHECK_EQ(vol_read(c, b, 4096, 8192), 0);
	CHECK(memcmp(a, b, 4096) == 0);
	vol_close(c);
	vol_close(m);
}

/* A child's I/O error reaches the caller, from inline and split requests
 * alike (the failing range sits in the second piece of a 1 MiB read). */
static void child_errors(void)
{
	struct vol *m = NULL, *c;
	unsigned char *buf = calloc(1, 1u << 20);

	CHECK_EQ(member_open("fault:eio=917504+4096:mem:8M", 0, &m), 0);
	if (!m)
		goto out;
	c = open_crypt(m, "aes-xts-plain64", 64, 4096, 0);
	if (c) {
		CHECK_EQ(vol_read(c, buf, 1u << 20, 0), -EIO);
		CHECK_EQ(vol_read(c, buf, 4096, 917504), -EIO);
		CHECK_EQ(vol_write(c, buf, 1u << 20, 0, 0), -EIO);
		CHECK_EQ(vol_read(c, buf, 4096, 0), 0);
		vol_close(c);
	}
	vol_close(m);
out:
	free(buf);
}

/* Over a slow child (a disk model at 200 MB/s) reads take the one-request
 * path after the first has measured the child: data still reads back, in
 * inline and split requests, and the child's errors still arrive. */
static void slow_child(void)
{
	struct vol *m = NULL, *c;
	unsigned char *a = malloc(2u << 20), *b = malloc(2u << 20);

	CHECK_EQ(member_open("fault:eio=1966080+4096:sim:200M,seek=0,rot=0:mem:4M", 0, &m), 0);
	if (!m || !a || !b)
		goto out;
	c = open_crypt(m, "aes-xts-plain64", 64, 4096, 0);
	if (c) {
		for (size_t i = 0; i < (2u << 20); i++)
			a[i] = (unsigned char)(i * 7 + i / 4096);
		CHECK_EQ(vol_write(c, a, 1u << 20, 0, 0), 0);
		for (int k = 0; k < 3; k++) {
			memset(b, 0, 1u << 20);
			CHECK_EQ(vol_read(c, b, 1u << 20, 0), 0);
			CHECK(memcmp(a, b, 1u << 20) == 0);
			CHECK_EQ(vol_read(c, b, 8192, 4096), 0);
			CHECK(memcmp(a + 4096, b, 8192) == 0);
		}
		CHECK_EQ(vol_read(c, b, 1u << 20, 1u << 20), -EIO);
		vol_close(c);
	}
	vol_close(m);
out:
	free(a);
	free(b);
}

/* A child with a view (a page cache, memory) whose view is slow by the
 * clock (sleep_us a call, as on a loaded machine) and may hold the view of
 * gate_off until released; it counts read() calls, the one-request path a
 * slow child takes. */
struct slowview_vol {
	struct vol vol;
	struct vol *inner;
	unsigned sleep_us;
	uint64_t gate_off; /* UINT64_MAX: none */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool at_gate, open;
	unsigned reads;
};

static struct slowview_vol *to_sv(struct vol *v)
{
	return container_of(v, struct slowview_vol, vol);
}

static int sv_read(struct vol *v, void *buf, uint64_t len, uint64_t off)
{
	struct slowview_vol *s = to_sv(v);

	pthread_mutex_lock(&s->lock);
	s->reads++;
	pthread_mutex_unlock(&s->lock);
	return vol_read(s->inner, buf, len, off);
}

static int sv_write(struct vol *v, const void *buf, uint64_t len, uint64_t off, unsigned flags)
{
	return vol_write(to_sv(v)->inner, buf, len, off, flags);
}

static int sv_view(struct vol *v, uint64_t len, uint64_t off, vol_view_fn fn, void *arg)
{
	struct slowview_vol *s = to_sv(v);

	if (off == s->gate_off) {
		pthread_mutex_lock(&s->lock);
		s->at_gate = true;
		pthread_cond_broadcast(&s->cond);
		while (!s->open)
			pthread_cond_wait(&s->cond, &s->lock);
		pthread_mutex_unlock(&s->lock);
	} else if (s->sleep_us) {
		struct timespec t = {0, (long)s->sleep_us * 1000};
		nanosleep(&t, NULL);
	}
	return vol_view(s->inner, len, off, fn, arg);
}

static void sv_close(struct vol *v)
{
	struct slowview_vol *s = to_sv(v);

	vol_close(s->inner);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	vol_fini(v);
	free(s);
}

static const struct vol_ops sv_ops = {
    .kind = "slowview",
    .read = sv_read,
    .write = sv_write,
    .view = sv_view,
    .close = sv_close,
};

static struct slowview_vol *sv_open(bool ram, unsigned sleep_us)
{
	struct slowview_vol *s = calloc(1, sizeof(*s));

	CHECK(s != NULL);
	s->inner = open_mem();
	s->sleep_us = sleep_us;
	s->gate_off = UINT64_MAX;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	CHECK_EQ(vol_init(&s->vol, &sv_ops, "slowview", DEV_SIZE, 512,
	                  VOL_CAP_VIEW | (ram ? VOL_CAP_RAM : 0)),
	         0);
	return s;
}

struct gated_read {
	struct vol *c;
	uint64_t off;
	int r;
};

static void *gated_read_main(void *arg)
{
	struct gated_read *g = arg;
	unsigned char *buf = malloc(128u << 10);

	g->r = buf ? vol_read(g->c, buf, 128u << 10, g->off) : -ENOMEM;
	free(buf);
	return NULL;
}

/* When a read over a child with a view goes the one-request way (read(),
 * a copy more): only after the child measured slow while the read was
 * alone, never for a child in RAM.  3 ms a 128 KiB view is 24 ms a MiB,
 * far over the 1 ms rule. */
static void view_timing(void)
{
	const uint64_t len = 128u << 10;
	unsigned char *buf = malloc(len);
	struct slowview_vol *s;
	struct vol *c;

	CHECK(buf != NULL);
	/* Alone, slow: it does take the one-request path (the rule still
	 * sees a slow child). */
	s = sv_open(false, 3000);
	c = open_crypt(&s->vol, "aes-xts-plain64", 64, 4096, 0);
	for (int i = 0; c && i < 3; i++)
		CHECK_EQ(vol_read(c, buf, len, 0), 0);
	CHECK(s->reads > 0);
	if (c)
		vol_close(c);
	sv_close(&s->vol);

	/* In RAM: never slow, whatever the clock says. */
	s = sv_open(true, 3000);
	c = open_crypt(&s->vol, "aes-xts-plain64", 64, 4096, 0);
	for (int i = 0; c && i < 3; i++)
		CHECK_EQ(vol_read(c, buf, len, 0), 0);
	CHECK_EQ(s->reads, 0);
	if (c)
		vol_close(c);
	sv_close(&s->vol);

	/* Slow only while another read is in flight: those timings do not
	 * count, so the next read, alone, still goes through the view. */
	s = sv_open(false, 3000);
	s->gate_off = 1u << 20;
	c = open_crypt(&s->vol, "aes-xts-plain64", 64, 4096, 0);
	if (c) {
		struct gated_read g = {c, 1u << 20, 0};
		pthread_t t;

		CHECK_EQ(pthread_create(&t, NULL, gated_read_main, &g), 0);
		pthread_mutex_lock(&s->lock);
		while (!s->at_gate)
			pthread_cond_wait(&s->cond, &s->lock);
		pthread_mutex_unlock(&s->lock);
		for (int i = 0; i < 3; i++)
			CHECK_EQ(vol_read(c, buf, len, 0), 0);
		pthread_mutex_lock(&s->lock);
		s->open = true;
		pthread_cond_broadcast(&s->cond);
		pthread_mutex_unlock(&s->lock);
		pthread_join(t, NULL);
		CHECK_EQ(g.r, 0);
		s->sleep_us = 0;
		CHECK_EQ(vol_read(c, buf, len, 0), 0);
		CHECK_EQ(s->reads, 0);
		vol_close(c);
	}
	sv_close(&s->vol);
	free(buf);
}

static void bad_params(void)
{
	struct vol *m = open_mem(), *c = NULL;
	struct crypt_params p = { .cipher = "serpent-xts-plain64", .key = key64, .key_len = 64,
				  .sector_size = 512 };
	int r;

	r = crypt_open(m, &p, false, NULL, &c);
	CHECK_EQ(r, -ENOTSUP);
	CHECK(strstr(err_detail(r), "unsupported cipher 'serpent-xts-plain64'") != NULL);
	p.cipher = "aes-xts-benbi";
	CHECK_EQ(crypt_open(m, &p, false, NULL, &c), -ENOTSUP);
	p.cipher = "aes-xts-essiv:sha256";
	CHECK_EQ(crypt_open(m, &p, false, NULL, &c), -ENOTSUP);
	p.cipher = "aes-xts-plain64";
	p.key_len = 48;
	r = crypt_open(m, &p, false, NULL, &c);
	CHECK_EQ(r, -EINVAL);
	CHECK(strstr(err_detail(r), "32- or 64-byte key") != NULL);
	p.cipher = "aes-cbc-essiv:sha256";
	p.key_len = 64;
	r = crypt_open(m, &p, false, NULL, &c);
	CHECK_EQ(r, -EINVAL);
	CHECK(strstr(err_detail(r), "16-, 24- or 32-byte key") != NULL);
	p.cipher = "aes-xts-plain64";
	p.sector_size = 1024;
	r = crypt_open(m, &p, false, NULL, &c);
	CHECK_EQ(r, -EINVAL);
	CHECK(strstr(err_detail(r), "sector size") != NULL);
	CHECK(c == NULL);
	vol_close(m);
}

int main(void)
{
	static const struct {
		const char *cipher;
		size_t key_len;
	} ciphers[] = {
		{ "aes-xts-plain64", 64 },     { "aes-xts-plain64", 32 }, { "aes-xts-plain", 64 },
		{ "aes-cbc-essiv:sha256", 32 }, { "aes-cbc-plain64", 16 },
	};
	for (int i = 0; i < 64; i++)
		key64[i] = (unsigned char)(i * 37 + 11);

	for (size_t i = 0; i < sizeof(ciphers) / sizeof(ciphers[0]); i++)
		for (uint32_t ss = 512; ss <= 4096; ss *= 8) {
			oracle(ciphers[i].cipher, ciphers[i].key_len, ss, 0x1234567 + i * 17 + ss);
			nothing_in_the_clear(ciphers[i].cipher, ciphers[i].key_len, ss);
		}
	iv_offset_check(512);
	iv_offset_check(4096);
	plain_vs_plain64();
	caps_and_limits();
	child_errors();
	slow_child();
	view_timing();
	bad_params();
	return check_done();
}
