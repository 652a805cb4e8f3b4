/* raid_parity.c — rebuilding a block of a parity level (RAID5, RAID6)
 * whose member is gone, from what the rest of its stripe holds.
 *
 * P is the XOR of the stripe's data chunks; RAID6's Q is the sum of
 * g^i * D_i over GF(2^8) with g = 2 and the polynomial x^8+x^4+x^3+x^2+1
 * (0x11d), i the chunk's place in syndrome order (the level says it).  A
 * lost data chunk x comes back:
 *   - from P and the other data (RAID5, or RAID6 with P alive):
 *       D_x = P + sum D_i (i != x)
 *   - from Q when P is gone too:
 *       D_x = (Q + sum g^i D_i (i != x)) / g^x
 *   - when another data chunk y is gone too (P and Q alive), with
 *       a = P + sum D_i and b = Q + sum g^i D_i over the surviving i:
 *       D_x = (b + g^y a) / (g^x + g^y)
 * ("+" is XOR).  Everything here reads the surviving chunks at once and
 * works on the one extent asked for. */
#include "raid_internal.h"

#include "core/exec.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static uint8_t gf_exp[512], gf_log[256];
static pthread_once_t gf_once = PTHREAD_ONCE_INIT;

static void gf_init(void)
{
	unsigned x = 1;

	for (unsigned i = 0; i < 255; i++) {
		gf_exp[i] = gf_exp[i + 255] = (uint8_t)x;
		gf_log[x] = (uint8_t)i;
		x <<= 1;
		if (x & 0x100)
			x ^= 0x11d;
	}
}

static uint8_t gf_mul(uint8_t a, uint8_t b)
{
	return a && b ? gf_exp[gf_log[a] + gf_log[b]] : 0;
}

/* g^i, for i in 0..254 (syndrome places repeat every 255). */
static uint8_t gf_pow2(unsigned i)
{
	return gf_exp[i % 255];
}

static uint8_t gf_inv(uint8_t a)
{
	return gf_exp[255 - gf_log[a]];
}

static void xor_into(char *dst, const char *src, uint64_t len)
{
	uint64_t j = 0;

	for (; j + 8 <= len; j += 8) {
		uint64_t d, s;
		memcpy(&d, dst + j, 8);
		memcpy(&s, src + j, 8);
		d ^= s;
		memcpy(dst + j, &d, 8);
	}
	for (; j < len; j++)
		dst[j] ^= src[j];
}

/* dst += c * src over GF(2^8), byte by byte. */
static void mul_into(char *dst, const char *src, uint8_t c, uint64_t len)
{
	if (c == 1) {
		xor_into(dst, src, len);
		return;
	}
	for (uint64_t j = 0; j < len; j++)
		dst[j] ^= (char)gf_mul((uint8_t)src[j], c);
}

static void mul_buf(char *buf, uint8_t c, uint64_t len)
{
	for (uint64_t j = 0; j < len; j++)
		buf[j] = (char)gf_mul((uint8_t)buf[j], c);
}

struct parity_read {
	struct raid_array *a;
	const unsigned *role;
	uint64_t moff, len;
	char *bufs;
	int *err;
};

static int parity_read_one(void *arg, unsigned i)
{
	struct parity_read *x = arg;
	struct vol *v = x->a->m[x->role[i]].vol;

	x->err[i] = v->ops->read(v, x->bufs + i * x->len, x->len, x->moff);
	return 0;
}

static int raid_parity_rebuild_once(struct raid_array *a, char *buf, uint64_t len,
				    uint64_t off, unsigned *bad)
{
	struct raid_stripe *st = malloc(sizeof(*st));
	unsigned *role = malloc((a->n + 2) * sizeof(*role));
	int *err = calloc(a->n + 2, sizeof(*err));
	int *what = calloc(a->n + 2, sizeof(*what)); /* data index, -1 P, -2 Q */
	char *bufs = NULL;
	unsigned k = 0, lost = 0, other = 0;
	bool p_ok, q_ok;
	int r = -ENOMEM;

	if (!st || !role || !err || !what)
		goto out;
	pthread_once(&gf_once, gf_init);
	a->lvl->stripe(a->priv, &a->g, off, st);
	/* What survives: the data chunks other than the target, P, Q. */
	for (unsigned i = 0; i < st->ndata; i++) {
		if (i == st->target)
			continue;
		if (atomic_load(&a->m[st->data[i]].failed)) {
			lost++;
			other = i;
			continue;
		}
		role[k] = st->data[i];
		what[k++] = (int)i;
	}
	p_ok = !atomic_load(&a->m[st->p].failed);
	q_ok = st->q >= 0 && !atomic_load(&a->m[st->q].failed);
	r = -EIO; /* more lost than the parity can give back */
	if (lost > 1 || (lost == 1 && !(p_ok && q_ok)) || (!p_ok && !q_ok))
		goto out;
	if (p_ok) {
		role[k] = (unsigned)st->p;
		what[k++] = -1;
	}
	if (q_ok && (!p_ok || lost)) {
		role[k] = (unsigned)st->q;
		what[k++] = -2;
	}
	r = -ENOMEM;
	if (posix_memalign((void **)&bufs, 4096, k * len))
		goto out;
	struct parity_read x = { a, role, st->moff, len, bufs, err };
	r = exec_parallel(k, parity_read_one, &x);
	for (unsigned i = 0; i < k && r == 0; i++) {
		r = err[i];
		if (r)
			*bad = role[i];
	}
	if (r)
		goto out;

	unsigned tx = st->target;
	if (!lost && p_ok) {
		/* D_x = P + sum of the other data. */
		memset(buf, 0, len);
		for (unsigned i = 0; i < k; i++)
			if (what[i] != -2)
				xor_into(buf, bufs + i * len, len);
	} else if (!lost) {
		/* P gone: D_x = (Q + sum g^i D_i) / g^x. */
		memset(buf, 0, len);
		for (unsigned i = 0; i < k; i++) {
			const char *src = bufs + i * len;
			if (what[i] == -2)
				xor_into(buf, src, len);
			else
				mul_into(buf, src, gf_pow2((unsigned)what[i]), len);
		}
		mul_buf(buf, gf_inv(gf_pow2(tx)), len);
	} else {
		/* Data x and y gone: a = P + sum D_i, b = Q + sum g^i D_i,
		 * D_x = (b + g^y a) / (g^x + g^y). */
		char *pa = NULL;
		r = -ENOMEM;
		if (posix_memalign((void **)&pa, 4096, len))
			goto out;
		memset(pa, 0, len);
		memset(buf, 0, len);
		for (unsigned i = 0; i < k; i++) {
			const char *src = bufs + i * len;
			if (what[i] == -1) {
				xor_into(pa, src, len);
			} else if (what[i] == -2) {
				xor_into(buf, src, len);
			} else {
				xor_into(pa, src, len);
				mul_into(buf, src, gf_pow2((unsigned)what[i]), len);
			}
		}
		uint8_t gy = gf_pow2(other);
		mul_into(buf, pa, gy, len);
		mul_buf(buf, gf_inv(gf_pow2(tx) ^ gy), len);
		free(pa);
	}
	r = 0;
out:
	free(bufs);
	free(what);
	free(err);
	free(role);
	free(st);
	return r;
}

int raid_parity_rebuild(struct raid_array *a, char *buf, uint64_t len, uint64_t off)
{
	/* A member that fails to read here fails (if the array can lose
	 * it) and the rebuild is tried again without it. */
	for (;;) {
		unsigned bad = UINT32_MAX;
		int r = raid_parity_rebuild_once(a, buf, len, off, &bad);
		if (r == 0 || bad == UINT32_MAX || raid_err_is_request(r) ||
		    raid_member_fail(a, bad, r, false) < 0)
			return r;
	}
}
