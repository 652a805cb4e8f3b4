/* crypt.c — the encryption discipline: each sector of this vol is stored
 * as one ciphertext sector of the child, exactly as dm-crypt stores it, so
 * that cryptsetup / the kernel open what uraid wrote and the reverse.
 *
 * Cipher specs: aes-{xts,cbc}-{plain64,plain,essiv:sha256}.  The IV of a
 * sector is derived from its number n = (byte offset / 512 + iv_offset) >>
 * log2(sector_size / 512): dm-crypt counts iv_offset in 512-byte sectors
 * and, only with iv_large_sectors (plain mappings; never LUKS), the IV counts
 * sector_size units.  plain64 is n as a little-endian 64-bit number, zero
 * padded to the block size; plain its low 32 bits; essiv:sha256 encrypts
 * the plain64 block with AES-256 under SHA-256(volume key).
 *
 * Speed (seeds 000, 002): every sector is one EVP call on a context that
 * was keyed once; only the IV is set per sector (512-byte XTS sectors go
 * eight to an ECB call instead: see crypt_transform_xts_ecb).  Keyed
 * contexts live in a per-vol pool, one per direction, so a request takes
 * one, uses it, and puts it back, and close() frees (and so cleanses)
 * every key schedule.
 *
 * Writes never touch the caller's buffer: they encrypt into a per-thread
 * bounce buffer and write that to the child.  A large write with no other
 * write in flight is cut into pieces run on all cores through
 * exec_parallel(), and over a fast plain store each piece writes its part
 * as soon as it is encrypted (see crypt_write); over anything else the
 * request is one child write (so a RAID5 below still sees whole
 * stripes).  A small write, or one among others, runs inline on the
 * caller's thread.
 *
 * Reads go by 128 KiB chunks (see crypt_read).  Where the child shows its
 * bytes (a view, vol.h: a file's page cache, mem:), a chunk is decrypted
 * from them straight into the caller's buffer: one pass over the data,
 * not a copy and a pass (see docs/crypt.md for the figures).  Otherwise it is read into the buffer
 * and decrypted there right after, while still in the core's cache.  A
 * lone large read takes helper threads that do the next chunks in turn.
 * Over a slow child (a disk) a read is one request to the child, then
 * decrypted like a write; a child in RAM is never slow, and a timing
 * taken beside other requests of the vol does not count for a child with
 * a view (see crypt_speed_note).
 *
 * No TRIM: a discard would show which blocks are unused, and a trimmed
 * sector would read back as zeros decrypted into garbage.  write_zeroes
 * encrypts zeros, so zeroed sectors read back as zeros. */
#include "crypt.h"

#include "core/clock.h"
#include "core/exec.h"
#include "core/log.h"
#include "core/secmem.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Requests up to this size are transformed inline; larger ones are cut
 * into pieces of at least this size for the pool.  Handing a piece to a
 * sleeping pool thread costs ~40-50 us on this VM (futex wake-up of an
 * idle vCPU), more than a 128 KiB request takes to encrypt on one core:
 * splitting 128 and 256 KiB requests measured 30-40% slower than inline,
 * 512 KiB about even, 1 MiB 10-40% faster (bench/cryptbench, 2 cores). */
#define CRYPT_INLINE_MAX (256u << 10)
/* A request is cut into one piece per core, or into pieces of about this
 * size when it is larger, up to CRYPT_MAX_PIECES_PER_CPU per core (so a
 * core that is busy elsewhere does not hold up a large request).  More
 * pieces for a 1 MiB request only added wake-ups: measured with
 * bench/cryptbench on 2 cores, 2 pieces beat 4 and 8. */
#define CRYPT_PIECE_TARGET (1u << 20)
#define CRYPT_MAX_PIECES_PER_CPU 4
/* Reads go to the child in chunks of this size, each decrypted right
 * after it arrives (see crypt_read): small enough to stay in L2 between
 * the read, the decryption and the socket's copy, and at least the 64 KiB
 * a RAID read-ahead wants to see to detect a stream. */
#define CRYPT_READ_CHUNK (128u << 10)
/* Reads from this size up may take helper threads (see crypt_read), at
 * most this many (each wake-up costs, and 1 MiB is only 8 chunks). */
#define CRYPT_READ_SPLIT_MIN (512u << 10)
#define CRYPT_READ_MAX_HELPERS 3
/* A child slower than this per MiB read (under 1 GB/s: disks, models) is
 * read in one request per read: caches do not matter at that speed, and
 * a RAID0 below then reads all its members at once for a random read. */
#define CRYPT_SLOW_NS_PER_MIB 1000000u
/* write_zeroes encrypts zeros this many bytes at a time. */
#define CRYPT_ZERO_CHUNK (4u << 20)

enum crypt_mode { CRYPT_XTS, CRYPT_CBC };
enum crypt_ivgen { CRYPT_IV_PLAIN, CRYPT_IV_PLAIN64, CRYPT_IV_ESSIV };

/* One keyed context for one direction (and the ESSIV IV cipher). */
struct crypt_ctx {
	EVP_CIPHER_CTX *data;  /* the mode cipher, or ECB under K1 (xts_ecb) */
	EVP_CIPHER_CTX *tweak; /* xts_ecb only: ECB encryption under K2 */
	EVP_CIPHER_CTX *essiv; /* AES-256-ECB under SHA-256(key); ESSIV only */
	struct crypt_ctx *next;
};

struct crypt_pool {
	pthread_mutex_t lock;
	struct crypt_ctx *free;
};

struct crypt_vol {
	struct vol vol;
	struct vol *child;
	bool owns_child;
	enum crypt_mode mode;
	enum crypt_ivgen ivgen;
	EVP_CIPHER *cipher;       /* fetched once: no lookup per context */
	EVP_CIPHER *essiv_cipher; /* ESSIV only */
	unsigned char *key;       /* secmem */
	size_t key_len;
	unsigned char *essiv_key; /* secmem, 32 bytes; ESSIV only */
	uint32_t sector_size;
	unsigned iv_shift; /* log2(sector_size / 512) */
	uint64_t iv_offset;
	bool xts_ecb; /* XTS built here on AES-ECB (see crypt_transform_xts_ecb) */
	struct crypt_pool pool[2]; /* [0] decrypt, [1] encrypt */
	atomic_uint reads;         /* reads in flight */
	atomic_uint writes;        /* writes being encrypted */
	_Atomic uint64_t read_seq, write_seq; /* reads, writes begun */
	_Atomic uint64_t read_ns_per_mib;  /* child reads, running average */
	_Atomic uint64_t write_ns_per_mib; /* child writes, running average */
	bool child_store; /* the child is a plain store with a view (VOL_CAP_VIEW) */
};

static struct crypt_vol *to_crypt(struct vol *v)
{
	return container_of(v, struct crypt_vol, vol);
}

static void crypt_ctx_free(struct crypt_ctx *x)
{
	if (!x)
		return;
	/* EVP_CIPHER_CTX_free cleanses the expanded key schedule. */
	EVP_CIPHER_CTX_free(x->data);
	EVP_CIPHER_CTX_free(x->tweak);
	EVP_CIPHER_CTX_free(x->essiv);
	free(x);
}

/* A fresh context keyed for direction enc (1 encrypt, 0 decrypt).
 * The expanded key schedule lives in OpenSSL's own heap, which secmem
 * cannot lock (OpenSSL 3's providers allocate cipher contexts with
 * OPENSSL_zalloc, never from its secure heap): the process is undumpable
 * once a key exists (secmem_alloc) and EVP_CIPHER_CTX_free wipes the
 * schedule, but it can reach swap (docs/luks.md, "Secrets"). */
static struct crypt_ctx *crypt_ctx_new(struct crypt_vol *c, int enc)
{
	struct crypt_ctx *x = calloc(1, sizeof(*x));

	if (!x)
		return NULL;
	x->data = EVP_CIPHER_CTX_new();
	if (!x->data || !EVP_CipherInit_ex(x->data, c->cipher, NULL, c->key, NULL, enc))
		goto fail;
	EVP_CIPHER_CTX_set_padding(x->data, 0);
	if (c->xts_ecb) {
		x->tweak = EVP_CIPHER_CTX_new();
		if (!x->tweak ||
		    !EVP_CipherInit_ex(x->tweak, c->cipher, NULL, c->key + c->key_len / 2, NULL, 1))
			goto fail;
		EVP_CIPHER_CTX_set_padding(x->tweak, 0);
	}
	if (c->ivgen == CRYPT_IV_ESSIV) {
		x->essiv = EVP_CIPHER_CTX_new();
		if (!x->essiv ||
		    !EVP_CipherInit_ex(x->essiv, c->essiv_cipher, NULL, c->essiv_key, NULL, 1))
			goto fail;
		EVP_CIPHER_CTX_set_padding(x->essiv, 0);
	}
	return x;
fail:
	crypt_ctx_free(x);
	return NULL;
}

static struct crypt_ctx *crypt_ctx_get(struct crypt_vol *c, int enc)
{
	struct crypt_pool *p = &c->pool[enc];
	struct crypt_ctx *x;

	pthread_mutex_lock(&p->lock);
	x = p->free;
	if (x)
		p->free = x->next;
	pthread_mutex_unlock(&p->lock);
	return x ? x : crypt_ctx_new(c, enc);
}

static void crypt_ctx_put(struct crypt_vol *c, int enc, struct crypt_ctx *x)
{
	struct crypt_pool *p = &c->pool[enc];

	pthread_mutex_lock(&p->lock);
	x->next = p->free;
	p->free = x;
	pthread_mutex_unlock(&p->lock);
}

/* Little-endian 64-bit load and store at any alignment; one move each
 * on a little-endian host (these sit in the XTS inner loop). */
static inline void put_le64(unsigned char *p, uint64_t v)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	memcpy(p, &v, 8);
}

static inline uint64_t get_le64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}

/* The IV of the sector whose 512-byte sector number (iv_offset included)
 * is s512. */
static int crypt_iv(struct crypt_vol *c, struct crypt_ctx *x, uint64_t s512, unsigned char iv[16])
{
	uint64_t n = s512 >> c->iv_shift;
	int outl;

	memset(iv, 0, 16);
	put_le64(iv, c->ivgen == CRYPT_IV_PLAIN ? (uint32_t)n : n);
	if (c->ivgen == CRYPT_IV_ESSIV &&
	    (!EVP_CipherUpdate(x->essiv, iv, &outl, iv, 16) || outl != 16))
		return err_set(-EIO, "%s: ESSIV cipher failed", c->vol.name);
	return 0;
}

/* XTS (IEEE 1619) for 512-byte sectors, built on AES-ECB: OpenSSL 3.0
 * costs ~60 ns per EVP_CipherInit_ex, a third of a 512-byte sector's
 * time, and its XTS takes one sector per call.  Here 8 sectors go through
 * each ECB call: their tweaks T = E_K2(IV) in one call, then every block
 * is masked with its T * alpha^j, encrypted (or decrypted) under K1 in one
 * call, and unmasked.  With 4096-byte sectors OpenSSL's fused XTS is
 * faster and is used.
 *
 * The masks and the two masking passes work on four blocks at a time
 * (xts4: 64 bytes, one AVX-512 register, two AVX2 or four SSE2 ones; the
 * function is compiled for each and the best the CPU has is picked at
 * load time).  The masks of a sector's next four blocks are its last four
 * times alpha^4, and the eight sectors' chains are advanced side by side
 * so that the core has independent work while each step's result is on
 * its way.  Scalar, one block at a time, this glue took as long as the
 * AES itself.  The masks are derived from K2, so they are wiped before
 * returning.  Little-endian hosts only (see crypt_open). */
#define XTS_ECB_CHUNK 4096
#define XTS_ECB_SECTORS (XTS_ECB_CHUNK / 512)

/* Four XTS blocks as 64-bit words: lo0, hi0, lo1, hi1 ... (a block's two
 * halves as they lie in memory on a little-endian host). */
typedef uint64_t xts4 __attribute__((vector_size(64)));
typedef uint64_t xts4_unaligned __attribute__((vector_size(64), aligned(1), may_alias));

/* Each block of m times alpha^4 in GF(2^128): shifted left four bits, the
 * four bits leaving hi come back into lo times x^7 + x^2 + x + 1 (the
 * reduction of x^128), those leaving lo go into hi. */
static inline void xts4_times_alpha4(xts4 *m)
{
	const xts4 lo_lanes = { ~0ull, 0, ~0ull, 0, ~0ull, 0, ~0ull, 0 };
	const xts4 swap_halves = { 1, 0, 3, 2, 5, 4, 7, 6 };
	xts4 out = __builtin_shuffle(*m, swap_halves) >> 60;

	*m = (*m << 4) ^ out ^ (((out << 1) ^ (out << 2) ^ (out << 7)) & lo_lanes);
}

/* The masks of a sector's first four blocks: T, T alpha, T alpha^2,
 * T alpha^3, from T's two halves.  (Vectors go by pointer: passed by
 * value they would change the calling convention between the clones.) */
static inline void xts4_first(xts4 *m, uint64_t lo, uint64_t hi)
{
	for (unsigned k = 0; k < 4; k++) {
		(*m)[2 * k] = lo;
		(*m)[2 * k + 1] = hi;
		uint64_t carry = (uint64_t)((int64_t)hi >> 63) & 0x87;
		hi = hi << 1 | lo >> 63;
		lo = lo << 1 ^ carry;
	}
}

__attribute__((target_clones("avx512f", "avx2", "default")))
static int crypt_transform_xts_ecb(struct crypt_vol *c, struct crypt_ctx *x, unsigned char *out,
				   const unsigned char *in, uint64_t len, uint64_t off)
{
	enum { GROUPS = 512 / sizeof(xts4) }; /* of four blocks, per sector */
	xts4 mask[XTS_ECB_CHUNK / sizeof(xts4)], chain[XTS_ECB_SECTORS];
	unsigned char ivs[XTS_ECB_SECTORS * 16];
	uint64_t s512 = (off >> 9) + c->iv_offset;
	int outl, r = 0;

	for (uint64_t done = 0; done < len && r == 0; done += XTS_ECB_CHUNK) {
		uint64_t n = len - done < XTS_ECB_CHUNK ? len - done : XTS_ECB_CHUNK;
		unsigned nsec = (unsigned)(n / 512);
		xts4_unaligned *o = (xts4_unaligned *)(out + done);
		const xts4_unaligned *p = (const xts4_unaligned *)(in + done);

		for (unsigned s = 0; s < nsec && r == 0; s++)
			r = crypt_iv(c, x, s512++, ivs + 16 * s);
		if (r < 0)
			break;
		if (!EVP_CipherUpdate(x->tweak, ivs, &outl, ivs, (int)(16 * nsec)) ||
		    outl != (int)(16 * nsec)) {
			r = err_set(-EIO, "%s: cipher failed", c->vol.name);
			break;
		}
		for (unsigned s = 0; s < nsec; s++)
			xts4_first(&chain[s], get_le64(ivs + 16 * s), get_le64(ivs + 16 * s + 8));
		/* mask[] holds sector s's group g at GROUPS * s + g. */
		for (unsigned g = 0; g < GROUPS; g++) {
			for (unsigned s = 0; s < nsec; s++) {
				mask[GROUPS * s + g] = chain[s];
				xts4_times_alpha4(&chain[s]);
			}
		}
		for (unsigned i = 0; i < n / sizeof(xts4); i++)
			o[i] = p[i] ^ mask[i];
		if (!EVP_CipherUpdate(x->data, (unsigned char *)o, &outl, (unsigned char *)o,
				      (int)n) ||
		    outl != (int)n) {
			r = err_set(-EIO, "%s: cipher failed at byte %llu", c->vol.name,
				    (unsigned long long)(off + done));
			break;
		}
		for (unsigned i = 0; i < n / sizeof(xts4); i++)
			o[i] ^= mask[i];
	}
	explicit_bzero(mask, sizeof(mask));
	explicit_bzero(chain, sizeof(chain));
	explicit_bzero(ivs, sizeof(ivs));
	return r;
}

/* Transform len bytes (whole sectors) from in to out (in == out is fine),
 * the first sector being at byte offset off of the vol. */
static int crypt_transform(struct crypt_vol *c, struct crypt_ctx *x, unsigned char *out,
			   const unsigned char *in, uint64_t len, uint64_t off)
{
	const uint32_t ss = c->sector_size;
	const uint64_t step = ss >> 9;
	uint64_t s512 = (off >> 9) + c->iv_offset;
	unsigned char iv[16];
	int outl, r;

	if (c->xts_ecb)
		return crypt_transform_xts_ecb(c, x, out, in, len, off);
	for (uint64_t done = 0; done < len; done += ss, s512 += step) {
		r = crypt_iv(c, x, s512, iv);
		if (r < 0)
			return r;
		if (!EVP_CipherInit_ex(x->data, NULL, NULL, NULL, iv, -1) ||
		    !EVP_CipherUpdate(x->data, out + done, &outl, in + done, (int)ss) ||
		    outl != (int)ss)
			return err_set(-EIO, "%s: cipher failed at byte %llu", c->vol.name,
				       (unsigned long long)(off + done));
	}
	return 0;
}

/* How a request began: with busy others of its kind in flight, as the
 * seq-th begun.  It had the vol to itself (crypt_alone) when none was in
 * flight then and none has begun since. */
struct crypt_turn {
	unsigned busy;
	uint64_t seq;
};

static struct crypt_turn crypt_turn_begin(atomic_uint *inflight, _Atomic uint64_t *seqs)
{
	struct crypt_turn t;

	t.seq = atomic_fetch_add_explicit(seqs, 1, memory_order_relaxed);
	t.busy = atomic_fetch_add_explicit(inflight, 1, memory_order_relaxed);
	return t;
}

static bool crypt_alone(const struct crypt_turn *t, _Atomic uint64_t *seqs)
{
	return t && t->busy == 0 && atomic_load_explicit(seqs, memory_order_relaxed) == t->seq + 1;
}

struct crypt_job {
	struct crypt_vol *c;
	unsigned char *out;
	const unsigned char *in;
	uint64_t len, off, piece;
	int enc;
	bool write;     /* each piece also writes its ciphertext to the child */
	unsigned flags; /* of those writes */
	const struct crypt_turn *turn; /* the write's, when it writes */
};

static int crypt_child_write(struct crypt_vol *c, const unsigned char *buf, uint64_t len,
                             uint64_t off, unsigned flags, const struct crypt_turn *t);

static int crypt_job_piece(void *arg, unsigned i)
{
	struct crypt_job *j = arg;
	uint64_t start = (uint64_t)i * j->piece;
	uint64_t n = j->len - start < j->piece ? j->len - start : j->piece;
	struct crypt_ctx *x;
	int r;

	x = crypt_ctx_get(j->c, j->enc);
	if (!x)
		return -ENOMEM;
	r = crypt_transform(j->c, x, j->out + start, j->in + start, n, j->off + start);
	crypt_ctx_put(j->c, j->enc, x);
	if (r == 0 && j->write)
		r = crypt_child_write(j->c, j->out + start, n, j->off + start, j->flags, j->turn);
	return r;
}

/* The processors this process may use, looked up once. */
static unsigned crypt_cpus(void)
{
	static atomic_uint cpu_count;
	unsigned cpus = atomic_load_explicit(&cpu_count, memory_order_relaxed);

	if (!cpus) {
		cpus = exec_cpu_count();
		atomic_store_explicit(&cpu_count, cpus, memory_order_relaxed);
	}
	return cpus;
}

/* The size of the pieces a request of len bytes is cut into: len itself
 * (one piece, run inline) when small or when others are in flight (busy:
 * they keep the cores busy, and pieces would only add wake-ups), else one
 * piece per core or more, a multiple of unit bytes. */
static uint64_t crypt_piece_len(uint64_t len, uint32_t unit, bool busy)
{
	unsigned cpus = crypt_cpus();
	uint64_t pieces, piece;

	if (len <= CRYPT_INLINE_MAX || cpus < 2 || busy)
		return len;
	pieces = len / CRYPT_PIECE_TARGET;
	if (pieces < cpus)
		pieces = cpus;
	if (pieces > (uint64_t)cpus * CRYPT_MAX_PIECES_PER_CPU)
		pieces = (uint64_t)cpus * CRYPT_MAX_PIECES_PER_CPU;
	if (pieces > len / CRYPT_INLINE_MAX)
		pieces = len / CRYPT_INLINE_MAX;
	piece = (len / pieces + unit - 1) / unit * unit;
	return piece < len ? piece : len;
}

/* Run a job whose piece length is set: inline if one piece, else on the
 * pool. */
static int crypt_job_run(struct crypt_job *j)
{
	if (j->piece >= j->len)
		return crypt_job_piece(j, 0);
	return exec_parallel((unsigned)((j->len + j->piece - 1) / j->piece), crypt_job_piece, j);
}

/* Encrypt (enc 1) or decrypt (enc 0) a request, in pieces on every core
 * when it is large and alone (crypt_piece_len). */
static int crypt_run(struct crypt_vol *c, unsigned char *out, const unsigned char *in,
		     uint64_t len, uint64_t off, int enc, bool busy)
{
	struct crypt_job j = { .c = c, .out = out, .in = in, .len = len, .off = off,
			       .piece = crypt_piece_len(len, c->sector_size, busy), .enc = enc };

	return crypt_job_run(&j);
}

/* The per-thread bounce buffer for writes.  It holds ciphertext only, so
 * it needs no wiping.  A nested use on the same thread (crypt over crypt)
 * gets a buffer of its own. */
struct crypt_bounce {
	void *buf;
	size_t cap;
	bool busy;
};

static pthread_key_t bounce_key;
static pthread_once_t bounce_once = PTHREAD_ONCE_INIT;

static void bounce_destroy(void *p)
{
	struct crypt_bounce *b = p;

	free(b->buf);
	free(b);
}

static void bounce_key_init(void)
{
	if (pthread_key_create(&bounce_key, bounce_destroy) != 0)
		abort();
}

/* A vol_buf_alloc() buffer of at least len bytes; *own says the caller frees
 * it (else it releases it with bounce_put). */
static void *bounce_get(size_t len, bool *own)
{
	struct crypt_bounce *b;

	pthread_once(&bounce_once, bounce_key_init);
	b = pthread_getspecific(bounce_key);
	if (!b) {
		b = calloc(1, sizeof(*b));
		if (b && pthread_setspecific(bounce_key, b) != 0) {
			free(b);
			b = NULL;
		}
	}
	if (b && !b->busy) {
		if (b->cap < len) {
			size_t cap = (len + (1u << 20) - 1) & ~(size_t)((1u << 20) - 1);
			free(b->buf);
			b->buf = NULL;
			b->cap = 0;
			if (!(b->buf = vol_buf_alloc(cap)))
				return NULL;
			b->cap = cap;
		}
		b->busy = true;
		*own = false;
		return b->buf;
	}
	*own = true;
	return vol_buf_alloc(len);
}

static void bounce_put(void *p, bool own)
{
	struct crypt_bounce *b;

	if (own) {
		free(p);
		return;
	}
	b = pthread_getspecific(bounce_key);
	b->busy = false;
}

/* Reads: the child is read in chunks of CRYPT_READ_CHUNK, and each chunk
 * is decrypted in place right after it was read, by the thread that read
 * it, while it is still in that core's L2 (and it stays there for the
 * socket to copy it out).  One whole-request read followed by a
 * decryption pass moved every byte through memory once more.
 *
 * A large read with cores to spare takes helpers: every thread claims the
 * next chunk (an atomic counter), reads it and decrypts it, so reading and
 * decrypting overlap across cores.  A helper that wakes late finds nothing
 * left and returns; nothing waits for it, and no thread ever waits for
 * another in the middle of a request (a lock handing the reads over in
 * order cost futex sleeps of tens of microseconds on this VM).  With
 * other reads of this vol in flight the cores are busy with them, and a
 * helper would only add wake-ups, so the read runs on its caller alone.
 *
 * The chunks of a helped read reach the child concurrently, which would
 * break the stream a RAID1 read-ahead looks for; but read-ahead only runs
 * over slow members, and a slow child (measured here: see
 * CRYPT_SLOW_NS_PER_MIB) is read in one request per read instead. */
/* Fold a child transfer's speed into the running average (7/8 old, 1/8
 * new; racing updates may lose one sample, which is harmless).  Only
 * transfers of 64 KiB and more count: a small one's time is mostly the
 * cost of the call, which says nothing of the child's transfer rate.
 * Nor do those made beside others of this vol (!alone) to a child with a
 * view: a page cache or memory moves bytes on the CPU, so with N requests
 * sharing the cores each one's time is N times its own and says nothing of
 * the child (LUKS reads at qd16 on tmpfs measured "slow" that way and took
 * the one-request path, a copy more a request).  A child without a view
 * (a disk, a remote member) spends its time waiting, so it always counts. */
static void crypt_speed_note(struct crypt_vol *c, _Atomic uint64_t *avg_ns_per_mib, uint64_t ns,
                             uint64_t len, bool alone)
{
	uint64_t avg;

	if (len < (64u << 10) || (!alone && c->child_store))
		return;
	ns = ns * (1u << 20) / len;
	avg = atomic_load_explicit(avg_ns_per_mib, memory_order_relaxed);
	atomic_store_explicit(avg_ns_per_mib, avg ? (7 * avg + ns) / 8 : ns,
			      memory_order_relaxed);
}

/* Whether the child is slow (CRYPT_SLOW_NS_PER_MIB) by the average
 * avg_ns_per_mib: never for a child in RAM (VOL_CAP_RAM: mem:, a tmpfs
 * file), whatever a timing on a loaded machine says, as RAID members in
 * RAM are never slow (raid_members_slow). */
static bool crypt_child_slow(struct crypt_vol *c, _Atomic uint64_t *avg_ns_per_mib)
{
	return !(c->child->caps & VOL_CAP_RAM) &&
	       atomic_load_explicit(avg_ns_per_mib, memory_order_relaxed) > CRYPT_SLOW_NS_PER_MIB;
}

static int crypt_child_read(struct crypt_vol *c, unsigned char *buf, uint64_t len, uint64_t off,
                            const struct crypt_turn *t)
{
	uint64_t t0 = clock_now_ns();
	int r = c->child->ops->read(c->child, buf, len, off);

	if (r == 0)
		crypt_speed_note(c, &c->read_ns_per_mib, clock_now_ns() - t0, len,
		                 crypt_alone(t, &c->read_seq));
	return r;
}

/* Decrypt what a view of the child shows straight into the reader's
 * buffer: one pass over the data instead of a copy and then a pass. */
struct crypt_view {
	struct crypt_vol *c;
	struct crypt_ctx *x;
	unsigned char *out; /* receives the plaintext of [off, ...) */
	uint64_t off;
};

static int crypt_view_piece(void *arg, const void *src, uint64_t len, uint64_t off)
{
	struct crypt_view *cv = arg;
	return crypt_transform(cv->c, cv->x, cv->out + (off - cv->off), src, len, off);
}

/* Read and decrypt one chunk, through the child's view where it has one
 * (a file or mem: below), else by reading it into buf and decrypting in
 * place.  A view that faults (-EIO) leaves the chunk to read(), which
 * meets the error itself.  Either way the time counts towards the
 * child's speed (crypt_child_read). */
static int crypt_read_chunk(struct crypt_vol *c, struct crypt_ctx *x, unsigned char *buf,
                            uint64_t len, uint64_t off, const struct crypt_turn *t)
{
	if (c->child_store) {
		struct crypt_view cv = { c, x, buf, off };
		uint64_t t0 = clock_now_ns();
		int r = vol_view(c->child, len, off, crypt_view_piece, &cv);

		if (r == 0) {
			crypt_speed_note(c, &c->read_ns_per_mib, clock_now_ns() - t0, len,
			                 crypt_alone(t, &c->read_seq));
			return 0;
		}
		if (r != -EIO)
			return r;
	}
	int r = crypt_child_read(c, buf, len, off, t);
	return r < 0 ? r : crypt_transform(c, x, buf, buf, len, off);
}

struct crypt_rjob {
	struct crypt_vol *c;
	unsigned char *buf;
	uint64_t len, off;
	struct crypt_turn turn;
	_Atomic uint64_t next; /* bytes claimed so far */
	atomic_int err;        /* first error, 0 if none */
};

static int crypt_read_worker(void *arg, unsigned i)
{
	struct crypt_rjob *j = arg;
	struct crypt_vol *c = j->c;
	struct crypt_ctx *x = crypt_ctx_get(c, 0);
	int r = x ? 0 : -ENOMEM, none = 0;

	(void)i;
	while (r == 0 && atomic_load_explicit(&j->err, memory_order_relaxed) == 0) {
		uint64_t start = atomic_fetch_add(&j->next, CRYPT_READ_CHUNK), n;

		if (start >= j->len)
			break;
		n = j->len - start < CRYPT_READ_CHUNK ? j->len - start : CRYPT_READ_CHUNK;
		r = crypt_read_chunk(c, x, j->buf + start, n, j->off + start, &j->turn);
	}
	if (r < 0)
		atomic_compare_exchange_strong(&j->err, &none, r);
	if (x)
		crypt_ctx_put(c, 0, x);
	return 0; /* the error is in j->err */
}

static int crypt_read(struct vol *v, void *buf, uint64_t len, uint64_t off)
{
	struct crypt_vol *c = to_crypt(v);
	struct crypt_rjob j = {.c = c,
	                       .buf = buf,
	                       .len = len,
	                       .off = off,
	                       .turn = crypt_turn_begin(&c->reads, &c->read_seq)};
	unsigned busy = j.turn.busy;
	unsigned cpus = crypt_cpus();
	unsigned helpers = 0;
	int r;

	if (crypt_child_slow(c, &c->read_ns_per_mib)) {
		r = crypt_child_read(c, buf, len, off, &j.turn);
		if (r == 0)
			r = crypt_run(c, buf, buf, len, off, 0, busy > 0);
		goto out;
	}
	atomic_init(&j.next, 0);
	atomic_init(&j.err, 0);
	if (len >= CRYPT_READ_SPLIT_MIN && busy + 1 < cpus) {
		helpers = cpus - busy - 1;
		if (helpers > CRYPT_READ_MAX_HELPERS)
			helpers = CRYPT_READ_MAX_HELPERS;
		if (helpers > len / CRYPT_READ_CHUNK - 1)
			helpers = (unsigned)(len / CRYPT_READ_CHUNK - 1);
	}
	if (helpers)
		exec_parallel(helpers + 1, crypt_read_worker, &j);
	else
		crypt_read_worker(&j, 0);
	r = atomic_load(&j.err);
out:
	atomic_fetch_sub_explicit(&c->reads, 1, memory_order_relaxed);
	return r;
}

/* Writes.  A large lone write is cut into pieces on every core
 * (crypt_piece_len).  Over a plain store (a child with a view: mem:, a
 * file, RAID0/1/10 of those) whose writes are measured fast (under
 * CRYPT_SLOW_NS_PER_MIB a MiB) each piece also writes its own ciphertext
 * to the child right after encrypting it: the pieces' encryption and
 * child writes overlap, and the ciphertext goes out while still in the
 * core's cache.  Done as one whole encryption and then one child write,
 * the write waited for the whole encryption: on RAM members LUKS2 wrote
 * at 0.70 of plain at qd1 (docs/write-path.md).  Anything else (disks,
 * models, parity arrays, which have no view) gets one child write per
 * request, as a RAID5 wants whole stripes and a write-behind stream one
 * writer; so does a write that does not start on the child's preferred
 * block (pieces are multiples of it). */
static int crypt_child_write(struct crypt_vol *c, const unsigned char *buf, uint64_t len,
                             uint64_t off, unsigned flags, const struct crypt_turn *t)
{
	uint64_t t0 = clock_now_ns();
	int r = c->child->ops->write(c->child, buf, len, off, flags);

	if (r == 0)
		crypt_speed_note(c, &c->write_ns_per_mib, clock_now_ns() - t0, len,
		                 crypt_alone(t, &c->write_seq));
	return r;
}

/* Not pipelined: a lone 256 KiB segment over a child in RAM encrypted in
 * 128 KiB chunks, chunk k + 1 on a pool thread while the caller wrote
 * chunk k, wrote LUKS2 on a tmpfs file at 0.75-0.96 of this path at qd1 in
 * every one of 5 paired rounds at the quietest load seen (5-7 on 2 vCPUs),
 * for 3-17% more server CPU a request: at qd1 the NBD stream already runs
 * the receive, this writer and the client's send at once, and a third
 * thread for the cipher had no core (docs/write-path.md, "luks16"). */
static int crypt_write(struct vol *v, const void *buf, uint64_t len, uint64_t off,
		       unsigned flags)
{
	struct crypt_vol *c = to_crypt(v);
	bool own;
	unsigned char *bounce = bounce_get(len, &own);
	uint32_t unit = c->child->block_pref > c->sector_size ? c->child->block_pref
							      : c->sector_size;
	struct crypt_turn t;
	unsigned busy;
	int r;

	if (!bounce)
		return -ENOMEM;
	t = crypt_turn_begin(&c->writes, &c->write_seq);
	busy = t.busy;
	struct crypt_job j = {.c = c,
	                      .out = bounce,
	                      .in = buf,
	                      .len = len,
	                      .off = off,
	                      .enc = 1,
	                      .flags = flags,
	                      .turn = &t};
	j.write = c->child_store && off % unit == 0 && !crypt_child_slow(c, &c->write_ns_per_mib);
	j.piece = crypt_piece_len(len, j.write ? unit : c->sector_size, busy > 0);
	if (j.piece >= len)
		j.write = false; /* one piece: encrypt, then one child write */
	r = crypt_job_run(&j);
	atomic_fetch_sub_explicit(&c->writes, 1, memory_order_relaxed);
	if (r == 0 && !j.write)
		r = crypt_child_write(c, bounce, len, off, flags, &t);
	bounce_put(bounce, own);
	return r;
}

static int crypt_flush(struct vol *v)
{
	return vol_flush(to_crypt(v)->child);
}

/* Zeros must read back as zeros, so they are encrypted and written like
 * any data; the saving is only that the client sends no payload. */
static int crypt_write_zeroes(struct vol *v, uint64_t len, uint64_t off, unsigned flags)
{
	struct crypt_vol *c = to_crypt(v);
	uint64_t chunk = len < CRYPT_ZERO_CHUNK ? len : CRYPT_ZERO_CHUNK;
	bool own;
	unsigned char *bounce;
	int r = 0;

	if (flags & VOL_FAST_ZERO)
		return -ENOTSUP;
	bounce = bounce_get(chunk, &own);
	if (!bounce)
		return -ENOMEM;
	/* In pieces, FUA covers them all by one flush (vol.h). */
	bool split = len > chunk;
	while (len > 0 && r == 0) {
		uint64_t n = len < chunk ? len : chunk;

		memset(bounce, 0, n);
		r = crypt_run(c, bounce, bounce, n, off, 1, false);
		if (r == 0)
			r = c->child->ops->write(c->child, bounce, n, off,
			                         split ? 0 : flags & VOL_FUA);
		off += n;
		len -= n;
	}
	bounce_put(bounce, own);
	if (r == 0 && split && (flags & VOL_FUA))
		r = vol_flush(c->child);
	return r;
}

static void crypt_free(struct crypt_vol *c)
{
	for (int d = 0; d < 2; d++) {
		struct crypt_ctx *x = c->pool[d].free;
		while (x) {
			struct crypt_ctx *next = x->next;
			crypt_ctx_free(x);
			x = next;
		}
		pthread_mutex_destroy(&c->pool[d].lock);
	}
	EVP_CIPHER_free(c->cipher);
	EVP_CIPHER_free(c->essiv_cipher);
	secmem_free(c->key);
	secmem_free(c->essiv_key);
	if (c->vol.name)
		vol_fini(&c->vol);
	free(c);
}

static void crypt_close(struct vol *v)
{
	struct crypt_vol *c = to_crypt(v);

	if (c->owns_child)
		vol_close(c->child);
	crypt_free(c);
}

static const struct vol_ops crypt_ops = {
	.kind = "crypt",
	.read = crypt_read,
	.write = crypt_write,
	.flush = crypt_flush,
	.write_zeroes = crypt_write_zeroes,
	.close = crypt_close,
};

#define CRYPT_SUPPORTED                                                           \
	"aes-xts-plain64, aes-xts-plain, aes-cbc-essiv:sha256, aes-cbc-plain64, " \
	"aes-cbc-plain"

/* Parse "aes-MODE-IVGEN" and pick the OpenSSL cipher for the key length. */
static int crypt_parse(struct crypt_vol *c, const char *spec, size_t key_len,
		       const char **name)
{
	const char *rest;

	if (!spec || strncmp(spec, "aes-", 4) != 0)
		goto unsupported;
	rest = spec + 4;
	if (strncmp(rest, "xts-", 4) == 0)
		c->mode = CRYPT_XTS;
	else if (strncmp(rest, "cbc-", 4) == 0)
		c->mode = CRYPT_CBC;
	else
		goto unsupported;
	rest += 4;
	if (strcmp(rest, "plain64") == 0)
		c->ivgen = CRYPT_IV_PLAIN64;
	else if (strcmp(rest, "plain") == 0)
		c->ivgen = CRYPT_IV_PLAIN;
	else if (strcmp(rest, "essiv:sha256") == 0 && c->mode == CRYPT_CBC)
		c->ivgen = CRYPT_IV_ESSIV; /* xts-essiv exists but is untested here */
	else
		goto unsupported;

	if (c->mode == CRYPT_XTS) {
		if (key_len != 32 && key_len != 64)
			return err_set(-EINVAL,
				       "cipher %s needs a 32- or 64-byte key (AES-128/256-XTS), "
				       "got %zu bytes",
				       spec, key_len);
		*name = key_len == 32 ? "AES-128-XTS" : "AES-256-XTS";
	} else {
		if (key_len != 16 && key_len != 24 && key_len != 32)
			return err_set(-EINVAL,
				       "cipher %s needs a 16-, 24- or 32-byte key, got %zu bytes",
				       spec, key_len);
		*name = key_len == 16 ? "AES-128-CBC" : key_len == 24 ? "AES-192-CBC" : "AES-256-CBC";
	}
	return 0;
unsupported:
	return err_set(-ENOTSUP, "unsupported cipher '%s' (uraid supports %s)",
		       spec ? spec : "(none)", CRYPT_SUPPORTED);
}

int crypt_open(struct vol *child, const struct crypt_params *p, bool owns_child,
	       const char *name, struct vol **out)
{
	struct crypt_vol *c;
	const char *cipher_name = NULL;
	struct crypt_ctx *probe;
	unsigned caps;
	int r;

	if (p->sector_size != 512 && p->sector_size != 4096)
		return err_set(-EINVAL, "%s: crypt sector size %u (must be 512 or 4096)",
			       child->name, p->sector_size);
	if (child->block_min > p->sector_size || p->sector_size % child->block_min)
		return err_set(-EINVAL, "%s: crypt sector size %u below the device's block size %u",
			       child->name, p->sector_size, child->block_min);
	if (child->size < p->sector_size)
		return err_set(-EINVAL, "%s: too small for one %u-byte crypt sector",
			       child->name, p->sector_size);
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	for (int d = 0; d < 2; d++)
		pthread_mutex_init(&c->pool[d].lock, NULL);
	r = crypt_parse(c, p->cipher, p->key_len, &cipher_name);
	if (r < 0)
		goto out;
	/* OpenSSL refuses XTS keys whose halves are equal (they void XTS's
	 * security argument); say so rather than "cipher failed". */
	if (c->mode == CRYPT_XTS && !CRYPTO_memcmp(p->key, p->key + p->key_len / 2, p->key_len / 2)) {
		r = err_set(-EINVAL, "%s: XTS key halves are equal; refusing a weak key", child->name);
		goto out;
	}
	c->key = secmem_dup(p->key, p->key_len);
	c->key_len = p->key_len;
	/* 512-byte XTS sectors: XTS over ECB (crypt_transform_xts_ecb), whose
	 * masks take the host's words to be little-endian. */
	c->xts_ecb = c->mode == CRYPT_XTS && p->sector_size == 512 &&
		     __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;
	c->cipher = EVP_CIPHER_fetch(NULL,
				     !c->xts_ecb ? cipher_name
				     : p->key_len == 32 ? "AES-128-ECB"
							: "AES-256-ECB",
				     NULL);
	if (!c->key || !c->cipher) {
		r = c->key ? err_set(-ENOTSUP, "OpenSSL has no %s", cipher_name) : -ENOMEM;
		goto out;
	}
	if (c->ivgen == CRYPT_IV_ESSIV) {
		unsigned int dlen = 0;
		c->essiv_key = secmem_alloc(32);
		c->essiv_cipher = EVP_CIPHER_fetch(NULL, "AES-256-ECB", NULL);
		if (!c->essiv_key || !c->essiv_cipher ||
		    !EVP_Digest(c->key, c->key_len, c->essiv_key, &dlen, EVP_sha256(), NULL) ||
		    dlen != 32) {
			r = err_set(-ENOMEM, "%s: cannot set up ESSIV", child->name);
			goto out;
		}
	}
	c->sector_size = p->sector_size;
	c->iv_shift = p->iv_large_sectors && p->sector_size == 4096 ? 3 : 0;
	c->iv_offset = p->iv_offset;

	/* Key one context per direction now, so a key OpenSSL rejects fails
	 * here and not on the first request. */
	for (int d = 0; d < 2; d++) {
		probe = crypt_ctx_new(c, d);
		if (!probe) {
			r = err_set(-EINVAL, "%s: OpenSSL rejected the %s key", child->name,
				    cipher_name);
			goto out;
		}
		crypt_ctx_put(c, d, probe);
	}

	/* TRIM is not offered (see the top of the file); FUA, FLUSH,
	 * MULTI_CONN and STREAM (segments encrypt as a whole write would) are
	 * the child's; zeroes are cheaper on the wire. */
	caps = (child->caps & (VOL_CAP_FUA | VOL_CAP_FLUSH | VOL_CAP_MULTI_CONN | VOL_CAP_READONLY |
	                       VOL_CAP_STREAM)) |
	       VOL_CAP_ZEROES;
	r = vol_init(&c->vol, &crypt_ops, name ? name : child->name,
		     child->size / p->sector_size * p->sector_size, p->sector_size, caps);
	if (r < 0)
		goto out;
	c->vol.block_pref = child->block_pref > p->sector_size ? child->block_pref : p->sector_size;
	c->vol.block_max = child->block_max / p->sector_size * p->sector_size;
	if (c->vol.block_max < p->sector_size)
		c->vol.block_max = p->sector_size;
	c->child = child;
	c->owns_child = owns_child;
	c->child_store = child->caps & VOL_CAP_VIEW;
	*out = &c->vol;
	return 0;
out:
	crypt_free(c);
	return r;
}
