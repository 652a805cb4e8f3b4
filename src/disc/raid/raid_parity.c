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
 * works on the one extent asked for.
 *
 * Writes (raid_parity_write) go stripe by stripe, each under the stripe's
 * lock, by reconstruct-write: the part of every data chunk the write does
 * not cover is read (or, on a gone member, rebuilt from the old parity),
 * P and Q are computed over the whole stripe, and the new data, P and Q
 * go to their members at once.  A gone member's share is simply not
 * written: the new parity covers it.  Rebuilding reads take the same lock,
 * so they never mix one write's new chunks with another's old parity.  A
 * crash between the data and the parity leaves the stripe inconsistent
 * (md's write hole): the array was marked active, so its next writable
 * start recomputes every stripe's parity (md_assemble's resync).
 *
 * The last few stripes written are kept in memory (a row cache, md's
 * stripe cache in miniature): a sequential writer whose requests do not
 * end on stripe boundaries finishes next time the stripe it began, and
 * reading back what it just wrote would cost every disk a seek back. */
#include "raid_types.h"

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

void raid_xor(char *dst, const char *src, uint64_t len)
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
		raid_xor(dst, src, len);
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
	x->err[i] = raid_member_read(&x->a->m[x->role[i]], x->bufs + i * x->len, x->len, x->moff,
	                             UINT64_MAX);
	return 0;
}

static int raid_parity_rebuild_once(struct raid_array *a, char *buf, uint64_t len, uint64_t off,
                                    unsigned *bad)
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
	if (!(bufs = vol_buf_alloc(k * len)))
		goto out;
	struct parity_read x = {a, role, st->moff, len, bufs, err};
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
				raid_xor(buf, bufs + i * len, len);
	} else if (!lost) {
		/* P gone: D_x = (Q + sum g^i D_i) / g^x. */
		memset(buf, 0, len);
		for (unsigned i = 0; i < k; i++) {
			const char *src = bufs + i * len;
			if (what[i] == -2)
				raid_xor(buf, src, len);
			else
				mul_into(buf, src, gf_pow2((unsigned)what[i]), len);
		}
		mul_buf(buf, gf_inv(gf_pow2(tx)), len);
	} else {
		/* Data x and y gone: a = P + sum D_i, b = Q + sum g^i D_i,
		 * D_x = (b + g^y a) / (g^x + g^y). */
		char *pa = NULL;
		r = -ENOMEM;
		if (!(pa = vol_buf_alloc(len)))
			goto out;
		memset(pa, 0, len);
		memset(buf, 0, len);
		for (unsigned i = 0; i < k; i++) {
			const char *src = bufs + i * len;
			if (what[i] == -1) {
				raid_xor(pa, src, len);
			} else if (what[i] == -2) {
				raid_xor(buf, src, len);
			} else {
				raid_xor(pa, src, len);
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

#define RAID_STRIPE_LOCKS RAID_PARITY_BATCH /* stripes hash onto this many locks */
#define RAID_ROW_CACHE 4                    /* stripes kept whole in memory */

struct raid_par {
	pthread_mutex_t stripe_lock[RAID_STRIPE_LOCKS];
	pthread_mutex_t cache_lock; /* the cache's directory and contents */
	uint64_t row_bytes;         /* data bytes of a stripe */
	struct {
		uint64_t row; /* UINT64_MAX: empty */
		char *buf;    /* the stripe's data chunks, in data-index order */
	} cache[RAID_ROW_CACHE];
	unsigned next; /* the slot to reuse next */
};

int raid_parity_init(struct raid_array *a)
{
	struct raid_par *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	p->row_bytes = (uint64_t)a->g.chunk * (a->n - a->lvl->md.parity);
	for (unsigned i = 0; i < RAID_STRIPE_LOCKS; i++)
		pthread_mutex_init(&p->stripe_lock[i], NULL);
	pthread_mutex_init(&p->cache_lock, NULL);
	for (unsigned i = 0; i < RAID_ROW_CACHE; i++)
		p->cache[i].row = UINT64_MAX;
	a->par = p;
	return 0;
}

void raid_parity_destroy(struct raid_array *a)
{
	struct raid_par *p = a->par;

	if (!p)
		return;
	for (unsigned i = 0; i < RAID_STRIPE_LOCKS; i++)
		pthread_mutex_destroy(&p->stripe_lock[i]);
	pthread_mutex_destroy(&p->cache_lock);
	for (unsigned i = 0; i < RAID_ROW_CACHE; i++)
		free(p->cache[i].buf);
	free(p);
	a->par = NULL;
}

/* The lock of the stripe holding array offset off. */
static pthread_mutex_t *raid_parity_lock(struct raid_array *a, uint64_t off)
{
	return &a->par->stripe_lock[off / a->par->row_bytes % RAID_STRIPE_LOCKS];
}

static int raid_row_find(struct raid_par *p, uint64_t row)
{
	for (unsigned i = 0; i < RAID_ROW_CACHE; i++)
		if (p->cache[i].row == row)
			return (int)i;
	return -1;
}

/* Copy [lo, hi) of every data chunk of stripe row from the cache into
 * data (span bytes per chunk); false if the row is not cached.  The
 * caller holds the row's lock. */
static bool raid_row_get(struct raid_array *a, uint64_t row, uint64_t lo, uint64_t hi, char *data)
{
	struct raid_par *p = a->par;
	unsigned ndata = a->n - a->lvl->md.parity;
	bool hit;

	pthread_mutex_lock(&p->cache_lock);
	int i = raid_row_find(p, row);
	hit = i >= 0;
	for (unsigned d = 0; hit && d < ndata; d++)
		memcpy(data + d * (hi - lo), p->cache[i].buf + d * a->g.chunk + lo, hi - lo);
	pthread_mutex_unlock(&p->cache_lock);
	return hit;
}

/* Forget stripes [row0, row0+k) (rewritten without the cache). */
static void raid_row_forget(struct raid_array *a, uint64_t row0, uint64_t k)
{
	struct raid_par *p = a->par;

	pthread_mutex_lock(&p->cache_lock);
	for (unsigned i = 0; i < RAID_ROW_CACHE; i++)
		if (p->cache[i].row != UINT64_MAX && p->cache[i].row - row0 < k)
			p->cache[i].row = UINT64_MAX;
	pthread_mutex_unlock(&p->cache_lock);
}

void raid_parity_forget(struct raid_array *a, uint64_t row0, uint64_t k)
{
	raid_row_forget(a, row0, k);
}

void raid_parity_forget_all(struct raid_array *a)
{
	raid_row_forget(a, 0, UINT64_MAX);
}

/* Record [lo, hi) of every data chunk of stripe row (as just written),
 * or with data NULL forget the row.  A row not cached yet is taken in only
 * when that is all of it. */
static void raid_row_put(struct raid_array *a, uint64_t row, uint64_t lo, uint64_t hi,
                         const char *data)
{
	struct raid_par *p = a->par;
	unsigned ndata = a->n - a->lvl->md.parity;

	pthread_mutex_lock(&p->cache_lock);
	int i = raid_row_find(p, row);
	if (!data) {
		if (i >= 0)
			p->cache[i].row = UINT64_MAX;
		pthread_mutex_unlock(&p->cache_lock);
		return;
	}
	if (i < 0 && lo == 0 && hi == a->g.chunk) {
		i = (int)p->next;
		p->next = (p->next + 1) % RAID_ROW_CACHE;
		if (!p->cache[i].buf)
			p->cache[i].buf = malloc(p->row_bytes);
		p->cache[i].row = p->cache[i].buf ? row : UINT64_MAX;
		if (!p->cache[i].buf)
			i = -1;
	}
	for (unsigned d = 0; i >= 0 && d < ndata; d++)
		memcpy(p->cache[i].buf + d * a->g.chunk + lo, data + d * (hi - lo), hi - lo);
	pthread_mutex_unlock(&p->cache_lock);
}

/* Rebuild without taking the stripe's lock (its holder calls this). */
static int raid_parity_rebuild_locked(struct raid_array *a, char *buf, uint64_t len, uint64_t off)
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

int raid_parity_rebuild(struct raid_array *a, char *buf, uint64_t len, uint64_t off)
{
	pthread_mutex_t *l = raid_parity_lock(a, off);

	pthread_mutex_lock(l);
	int r = raid_parity_rebuild_locked(a, buf, len, off);
	pthread_mutex_unlock(l);
	return r;
}

/* One member transfer of a stripe write. */
struct parity_io {
	unsigned role;
	uint64_t moff, len;
	const char *buf;
	int err;
};

struct parity_ios {
	struct raid_array *a;
	struct parity_io *io;
	unsigned flags;
	bool write;
};

static int parity_io_one(void *arg, unsigned i)
{
	struct parity_ios *x = arg;
	struct parity_io *io = &x->io[i];
	struct raid_member *m = &x->a->m[io->role];

	/* Timed, as raid_map.c times its transfers: write-behind engages only on
	 * members measured slow, and a RAID5/6 that is only written would
	 * otherwise never be measured. */
	io->err = x->write ? raid_member_write(m, io->buf, io->len, io->moff, x->flags, 64u << 10)
	                   : raid_member_read(m, (char *)io->buf, io->len, io->moff, 64u << 10);
	return 0;
}

/* Run ios at once; then fail the members that erred.  0, or the first
 * error that cannot be absorbed (a request error, or a member the array
 * cannot lose).  A write refused with a request error (EINVAL, ...) by
 * one member while another took its part leaves the stripe's parity out
 * of step: that member fails as for EIO. */
static int parity_io_run(struct raid_array *a, struct parity_io *io, unsigned n, bool write,
                         unsigned flags)
{
	struct parity_ios x = {a, io, flags, write};
	int r = exec_parallel(n, parity_io_one, &x);
	bool taken = false;

	for (unsigned i = 0; i < n && write; i++)
		taken |= io[i].err == 0;
	for (unsigned i = 0; i < n && r == 0; i++) {
		if (!io[i].err)
			continue;
		if ((raid_err_is_request(io[i].err) && !taken) ||
		    raid_member_fail(a, io[i].role, io[i].err, false) < 0)
			r = io[i].err;
	}
	return r;
}

/* Write [off, off+len), all inside stripe row `row`, holding its lock. */
static int raid_parity_write_row(struct raid_array *a, const char *buf, uint64_t len, uint64_t off,
                                 unsigned flags, struct raid_stripe *st)
{
	uint64_t chunk = a->g.chunk;
	unsigned ndata = a->n - a->lvl->md.parity;
	uint64_t row_off = off / (chunk * ndata) * (chunk * ndata);
	uint64_t first = (off - row_off) / chunk, last = (off + len - 1 - row_off) / chunk;
	/* The part of every chunk to recompute: the hull of what is written;
	 * or the whole stripe for a write that is part of a stream (a chunk
	 * or more, or one that starts or ends the stripe), so that the
	 * stripe goes whole into the row cache for the stream's next write. */
	bool stream = len >= chunk || off == row_off || off + len == row_off + chunk * ndata;
	uint64_t lo = first == last && !stream ? (off - row_off) % chunk : 0;
	uint64_t hi = first == last && !stream ? lo + len : chunk;
	if (a->log.align) { /* the log writes whole pages of every chunk */
		lo -= lo % a->log.align;
		hi = (hi + a->log.align - 1) / a->log.align * a->log.align;
	}
	uint64_t span = hi - lo;
	unsigned *role = calloc(ndata, sizeof(*role)), *place = calloc(ndata, sizeof(*place));
	struct parity_io *io = calloc(ndata + 2, sizeof(*io));
	char *data = NULL, *par = NULL, **dptr = NULL;
	bool *written = NULL;
	unsigned nio = 0;
	int r = -ENOMEM;

	if (!role || !place || !io || !(data = vol_buf_alloc(ndata * span)) ||
	    !(par = vol_buf_alloc(2 * span)))
		goto out;
	/* Each data index's member and syndrome place. */
	for (unsigned d = 0; d < ndata; d++) {
		a->lvl->stripe(a->priv, &a->g, row_off + d * chunk, st);
		role[d] = st->data[st->target];
		place[d] = st->target;
	}
	uint64_t moff = st->moff - st->moff % chunk + lo;
	uint64_t row = row_off / (chunk * ndata);
	bool whole = off <= row_off + lo && off + len >= row_off + (ndata - 1) * chunk + hi;
	/* What the write does not cover: from the row cache, else read it,
	 * or rebuild it. */
	if (whole || !raid_row_get(a, row, lo, hi, data)) {
		for (unsigned d = 0; d < ndata; d++) {
			uint64_t c0 = row_off + d * chunk + lo, c1 = c0 + span;
			if (off <= c0 && off + len >= c1)
				continue; /* wholly rewritten */
			if (atomic_load(&a->m[role[d]].failed))
				continue; /* rebuilt below, once the others are in */
			io[nio++] = (struct parity_io){role[d], moff, span, data + d * span, 0};
		}
		r = parity_io_run(a, io, nio, false, 0);
		if (r)
			goto out;
		for (unsigned d = 0; d < ndata; d++) {
			uint64_t c0 = row_off + d * chunk + lo, c1 = c0 + span;
			if ((off <= c0 && off + len >= c1) || !atomic_load(&a->m[role[d]].failed))
				continue;
			r = raid_parity_rebuild_locked(a, data + d * span, span, c0);
			if (r)
				goto out;
		}
	}
	/* The new data over the old. */
	for (unsigned d = 0; d < ndata; d++) {
		uint64_t c0 = row_off + d * chunk + lo, c1 = c0 + span;
		uint64_t w0 = off > c0 ? off : c0, w1 = off + len < c1 ? off + len : c1;
		if (w0 < w1)
			memcpy(data + d * span + (w0 - c0), buf + (w0 - off), w1 - w0);
	}
	/* P, and Q on RAID6. */
	char *p = par, *q = par + span;
	memset(par, 0, 2 * span);
	for (unsigned d = 0; d < ndata; d++) {
		raid_xor(p, data + d * span, span);
		if (st->q >= 0)
			mul_into(q, data + d * span, gf_pow2(place[d]), span);
	}
	nio = 0;
	for (unsigned d = 0; d < ndata; d++) {
		uint64_t c0 = row_off + d * chunk + lo, c1 = c0 + span;
		uint64_t w0 = off > c0 ? off : c0, w1 = off + len < c1 ? off + len : c1;
		if (w0 >= w1 || atomic_load(&a->m[role[d]].failed))
			continue;
		io[nio++] = (struct parity_io){role[d], moff + (w0 - c0), w1 - w0,
		                               data + d * span + (w0 - c0), 0};
	}
	if (!atomic_load(&a->m[st->p].failed))
		io[nio++] = (struct parity_io){(unsigned)st->p, moff, span, p, 0};
	if (st->q >= 0 && !atomic_load(&a->m[st->q].failed))
		io[nio++] = (struct parity_io){(unsigned)st->q, moff, span, q, 0};
	struct raid_log_stripe ls = {
	    .row = row,
	    .moff = moff,
	    .len = span,
	    .aoff = row_off + lo,
	    .ndata = ndata,
	    .role = role,
	    .place = place,
	    .p = st->p,
	    .q = st->q,
	    .pbuf = p,
	    .qbuf = st->q >= 0 ? q : NULL,
	    .woff = off,
	    .wlen = len,
	};
	if (a->log.log) {
		r = -ENOMEM;
		if (!(dptr = calloc(ndata, sizeof(*dptr))) || !(written = calloc(ndata, 1)))
			goto out;
		for (unsigned d = 0; d < ndata; d++) {
			uint64_t c0 = row_off + d * chunk + lo, c1 = c0 + span;
			dptr[d] = data + d * span;
			written[d] = off < c1 && off + len > c0;
		}
		ls.data = (const char *const *)dptr;
		ls.written = written;
		r = a->log.log(a->log.ctx, &ls, 1, flags);
		if (r)
			goto out;
	}
	r = parity_io_run(a, io, nio, true, flags);
	if (a->log.log)
		a->log.done(a->log.ctx, &ls, 1, r);
	/* A write that failed part-way leaves the members unknown: forget
	 * the row rather than trust the cache. */
	raid_row_put(a, row, lo, hi, r == 0 ? data : NULL);
out:
	free(written);
	free(dptr);
	free(par);
	free(data);
	free(io);
	free(place);
	free(role);
	return r;
}

static void raid_parity_log_free(struct raid_parity_log *lg)
{
	free(lg->written);
	free(lg->data);
	free(lg->place);
	free(lg->role);
	free(lg->s);
	*lg = (struct raid_parity_log){0};
}

int raid_parity_log_rows(struct raid_array *a, char *const *part, uint64_t k, uint64_t off,
                         unsigned flags, struct raid_parity_log *lg)
{
	uint64_t chunk = a->g.chunk, row_bytes = a->par->row_bytes;
	unsigned ndata = a->n - a->lvl->md.parity;
	struct raid_stripe *st = malloc(sizeof(*st));
	int r = -ENOMEM;

	*lg = (struct raid_parity_log){0};
	if (!st || !(lg->s = calloc(k, sizeof(*lg->s))) ||
	    !(lg->role = calloc(k * ndata, sizeof(unsigned))) ||
	    !(lg->place = calloc(k * ndata, sizeof(unsigned))) ||
	    !(lg->data = calloc(k * ndata, sizeof(char *))) || !(lg->written = malloc(ndata)))
		goto out;
	memset(lg->written, 1, ndata);
	for (uint64_t i = 0; i < k; i++) {
		struct raid_log_stripe *s = &lg->s[i];
		unsigned *role = lg->role + i * ndata, *place = lg->place + i * ndata;
		const char **data = lg->data + i * ndata;
		for (unsigned d = 0; d < ndata; d++) {
			a->lvl->stripe(a->priv, &a->g, off + i * row_bytes + d * chunk, st);
			role[d] = st->data[st->target];
			place[d] = st->target;
			data[d] = part[role[d]] + i * chunk;
		}
		*s = (struct raid_log_stripe){
		    .row = off / row_bytes + i,
		    .moff = (off / row_bytes + i) * chunk,
		    .len = chunk,
		    .aoff = off + i * row_bytes,
		    .ndata = ndata,
		    .role = role,
		    .place = place,
		    .data = data,
		    .written = lg->written,
		    .p = st->p,
		    .q = st->q,
		    .pbuf = part[st->p] + i * chunk,
		    .qbuf = st->q >= 0 ? part[st->q] + i * chunk : NULL,
		    .woff = off + i * row_bytes,
		    .wlen = row_bytes,
		};
	}
	lg->n = (unsigned)k;
	r = a->log.log(a->log.ctx, lg->s, lg->n, flags);
out:
	free(st);
	if (r)
		raid_parity_log_free(lg);
	return r;
}

void raid_parity_log_done(struct raid_array *a, struct raid_parity_log *lg, int r)
{
	if (lg->s)
		a->log.done(a->log.ctx, lg->s, lg->n, r);
	raid_parity_log_free(lg);
}

/* Write k whole stripes from off (a stripe boundary) at once, holding
 * their locks: no reads, parity computed per stripe, and each member's
 * share of all k written in one transfer (its chunks of consecutive
 * stripes lie together on it). */
static int raid_parity_write_rows(struct raid_array *a, const char *buf, uint64_t k, uint64_t off,
                                  unsigned flags, struct raid_stripe *st)
{
	uint64_t chunk = a->g.chunk, row_bytes = a->par->row_bytes, share = k * chunk;
	unsigned ndata = a->n - a->lvl->md.parity;
	uint64_t row0 = off / row_bytes;
	struct parity_io *io = calloc(a->n, sizeof(*io));
	struct raid_parity_log lg = {0};
	char **part = calloc(a->n, sizeof(*part));
	char *mb = NULL;
	unsigned nio = 0;
	int r = -ENOMEM;

	if (!io || !part || !(mb = vol_buf_alloc(a->n * share)))
		goto out;
	for (unsigned m = 0; m < a->n; m++)
		part[m] = mb + m * share;
	for (uint64_t i = 0; i < k; i++) {
		const char *row = buf + i * row_bytes;
		char *p = NULL, *q = NULL;
		for (unsigned d = 0; d < ndata; d++) {
			a->lvl->stripe(a->priv, &a->g, off + i * row_bytes + d * chunk, st);
			if (!p) {
				p = mb + (uint64_t)st->p * share + i * chunk;
				memset(p, 0, chunk);
				if (st->q >= 0) {
					q = mb + (uint64_t)st->q * share + i * chunk;
					memset(q, 0, chunk);
				}
			}
			const char *src = row + d * chunk;
			memcpy(mb + (uint64_t)st->data[st->target] * share + i * chunk, src, chunk);
			raid_xor(p, src, chunk);
			if (q)
				mul_into(q, src, gf_pow2(st->target), chunk);
		}
	}
	for (unsigned m = 0; m < a->n; m++)
		if (!atomic_load(&a->m[m].failed))
			io[nio++] = (struct parity_io){m, row0 * chunk, share, mb + m * share, 0};
	if (a->log.log) {
		r = raid_parity_log_rows(a, part, k, off, flags, &lg);
		if (r)
			goto out;
	}
	r = parity_io_run(a, io, nio, true, flags);
	if (a->log.log)
		raid_parity_log_done(a, &lg, r);
	/* What the cache held of these stripes is old now; the last one may
	 * be where the stream's next write begins. */
	raid_row_forget(a, row0, k - 1);
	raid_row_put(a, row0 + k - 1, 0, chunk, r == 0 ? buf + (k - 1) * row_bytes : NULL);
out:
	free(mb);
	free(part);
	free(io);
	return r;
}

/* Take (or release) the locks of stripes [row0, row0+k), k at most
 * RAID_STRIPE_LOCKS, in lock order, so that two writers never wait on
 * each other crosswise. */
static void raid_parity_lock_rows(struct raid_array *a, uint64_t row0, uint64_t k, bool take)
{
	for (unsigned i = 0; i < RAID_STRIPE_LOCKS; i++) {
		/* Is lock i one of the rows'?  Rows map to consecutive locks. */
		uint64_t first = row0 % RAID_STRIPE_LOCKS;
		uint64_t dist = (i + RAID_STRIPE_LOCKS - first) % RAID_STRIPE_LOCKS;
		if (dist >= k)
			continue;
		if (take)
			pthread_mutex_lock(&a->par->stripe_lock[i]);
		else
			pthread_mutex_unlock(&a->par->stripe_lock[i]);
	}
}

int raid_parity_write(struct raid_array *a, const char *buf, uint64_t len, uint64_t off,
                      unsigned flags)
{
	uint64_t row_bytes = (uint64_t)a->g.chunk * (a->n - a->lvl->md.parity);
	struct raid_stripe *st = malloc(sizeof(*st));
	int r = 0;

	if (!st)
		return -ENOMEM;
	pthread_once(&gf_once, gf_init);
	while (len > 0 && r == 0) {
		uint64_t n = row_bytes - off % row_bytes;
		if (off % row_bytes == 0 && len >= row_bytes) {
			/* Whole stripes: as many as the locks allow, at once. */
			uint64_t k = len / row_bytes;
			if (k > RAID_STRIPE_LOCKS)
				k = RAID_STRIPE_LOCKS;
			raid_parity_lock_rows(a, off / row_bytes, k, true);
			r = raid_parity_write_rows(a, buf, k, off, flags, st);
			raid_parity_lock_rows(a, off / row_bytes, k, false);
			buf += k * row_bytes;
			off += k * row_bytes;
			len -= k * row_bytes;
			continue;
		}
		if (n > len)
			n = len;
		pthread_mutex_t *l = raid_parity_lock(a, off);
		pthread_mutex_lock(l);
		r = raid_parity_write_row(a, buf, n, off, flags, st);
		pthread_mutex_unlock(l);
		buf += n;
		off += n;
		len -= n;
	}
	free(st);
	return r;
}

int raid_parity_check_row(struct raid_array *a, uint64_t row, bool repair, unsigned *differ)
{
	uint64_t chunk = a->g.chunk, row_bytes = a->par->row_bytes;
	unsigned ndata = a->n - a->lvl->md.parity;
	struct raid_stripe *st = malloc(sizeof(*st));
	struct parity_io *io = calloc(a->n, sizeof(*io));
	char *bufs = NULL, *calc = NULL;
	int r = -ENOMEM;

	*differ = 0;
	if (!st || !io || !(bufs = vol_buf_alloc(a->n * chunk)) ||
	    !(calc = vol_buf_alloc(2 * chunk)))
		goto out;
	pthread_once(&gf_once, gf_init);
	pthread_mutex_t *l = raid_parity_lock(a, row * row_bytes);
	pthread_mutex_lock(l);
	a->lvl->stripe(a->priv, &a->g, row * row_bytes, st);
	r = -ENODEV; /* a member is gone: nothing to compare against */
	for (unsigned m = 0; m < a->n; m++)
		if (atomic_load(&a->m[m].failed))
			goto unlock;
	for (unsigned m = 0; m < a->n; m++)
		io[m] =
		    (struct parity_io){m, st->moff - st->moff % chunk, chunk, bufs + m * chunk, 0};
	r = parity_io_run(a, io, a->n, false, 0);
	if (r)
		goto unlock;
	char *p = calc, *q = calc + chunk;
	memset(calc, 0, 2 * chunk);
	for (unsigned i = 0; i < ndata; i++) {
		raid_xor(p, bufs + st->data[i] * chunk, chunk);
		if (st->q >= 0)
			mul_into(q, bufs + st->data[i] * chunk, gf_pow2(i), chunk);
	}
	unsigned nio = 0;
	if (memcmp(p, bufs + st->p * chunk, chunk) != 0)
		io[nio++] = (struct parity_io){(unsigned)st->p, io[0].moff, chunk, p, 0};
	if (st->q >= 0 && memcmp(q, bufs + st->q * chunk, chunk) != 0)
		io[nio++] = (struct parity_io){(unsigned)st->q, io[0].moff, chunk, q, 0};
	*differ = nio;
	r = repair && nio ? parity_io_run(a, io, nio, true, 0) : 0;
unlock:
	pthread_mutex_unlock(l);
out:
	free(calc);
	free(bufs);
	free(io);
	free(st);
	return r;
}

void raid_parity_compute(char *const *data, unsigned ndata, uint64_t len, char *p, char *q)
{
	pthread_once(&gf_once, gf_init);
	memset(p, 0, len);
	if (q)
		memset(q, 0, len);
	for (unsigned i = 0; i < ndata; i++) {
		raid_xor(p, data[i], len);
		if (q)
			mul_into(q, data[i], gf_pow2(i), len);
	}
}
