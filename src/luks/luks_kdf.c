/* luks_kdf.c — key derivation for LUKS key slots and digests: argon2id and
 * argon2i (libargon2, version 0x13 as cryptsetup uses) and PBKDF2-HMAC
 * (OpenSSL), plus the benchmark that picks a cost for a target unlock time
 * the way cryptsetup does: argon2 keeps its memory and raises the time cost
 * (minimum 4), lowering memory only when even the minimum is too slow;
 * PBKDF2 scales iterations (minimum 1000). */
#include "luks/luks_kdf.h"

#include "core/log.h"
#include "core/random.h"

#include <argon2.h>
#include <errno.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/provider.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define KDF_ARGON2_MIN_TIME 4u
#define KDF_ARGON2_MAX_MEMORY (1024u * 1024u)
#define KDF_PBKDF2_MIN_ITER 1000u
#define KDF_DEFAULT_MS 2000u
#define KDF_ARGON2_SAMPLE_MEMORY (64u * 1024u) /* KiB */

const char *luks_kdf_name(enum luks_kdf_type t)
{
	switch (t) {
	case LUKS_KDF_PBKDF2:
		return "pbkdf2";
	case LUKS_KDF_ARGON2I:
		return "argon2i";
	case LUKS_KDF_ARGON2ID:
		return "argon2id";
	}
	return "?";
}

int luks_kdf_parse(const char *name, enum luks_kdf_type *t)
{
	if (strcmp(name, "pbkdf2") == 0)
		*t = LUKS_KDF_PBKDF2;
	else if (strcmp(name, "argon2i") == 0)
		*t = LUKS_KDF_ARGON2I;
	else if (strcmp(name, "argon2id") == 0)
		*t = LUKS_KDF_ARGON2ID;
	else
		return err_set(-ENOTSUP, "unknown KDF '%s'", name);
	return 0;
}

static pthread_once_t kdf_legacy_once = PTHREAD_ONCE_INIT;
static OSSL_PROVIDER *kdf_legacy;

static void kdf_legacy_unload(void)
{
	OSSL_PROVIDER_unload(kdf_legacy);
}

static void kdf_legacy_load(void)
{
	/* retain_fallbacks: the default provider stays as it was. */
	kdf_legacy = OSSL_PROVIDER_try_load(NULL, "legacy", 1);
	if (kdf_legacy)
		atexit(kdf_legacy_unload);
}

int luks_md_fetch(const char *name, EVP_MD **md)
{
	*md = EVP_MD_fetch(NULL, name, NULL);
	if (*md)
		return 0;
	/* OpenSSL 3 keeps whirlpool and ripemd160 (LUKS1 hashes of old) in
	 * its legacy provider, which is not loaded by default. */
	pthread_once(&kdf_legacy_once, kdf_legacy_load);
	*md = EVP_MD_fetch(NULL, name, NULL);
	ERR_clear_error();
	if (*md)
		return 0;
	if (!kdf_legacy && (strcmp(name, "whirlpool") == 0 || strcmp(name, "ripemd160") == 0))
		return err_set(-ENOTSUP,
		               "hash '%s' needs OpenSSL's legacy provider, which could not be "
		               "loaded (ossl-modules/legacy.so)",
		               name);
	return err_set(-ENOTSUP, "unknown hash '%s'", name);
}

int luks_pbkdf2(const char *hash, const void *pass, size_t pass_len, const void *salt,
                size_t salt_len, uint32_t iterations, void *out, size_t out_len)
{
	/* OpenSSL refuses a NULL password pointer even with length 0. */
	static const char empty[1];
	EVP_MD *md;
	int r;

	if (iterations == 0 || iterations > INT32_MAX || pass_len > INT32_MAX ||
	    salt_len > INT32_MAX || out_len > INT32_MAX)
		return err_set(-EINVAL, "bad PBKDF2 parameters");
	r = luks_md_fetch(hash, &md);
	if (r < 0)
		return r;
	if (!PKCS5_PBKDF2_HMAC(pass_len ? pass : empty, (int)pass_len, salt, (int)salt_len,
	                       (int)iterations, md, (int)out_len, out))
		r = err_set(-EIO, "PBKDF2-%s failed", hash);
	EVP_MD_free(md);
	return r;
}

static int kdf_argon2(const struct luks_kdf *k, const void *pass, size_t pass_len, void *out,
                      size_t out_len)
{
	argon2_type t = k->type == LUKS_KDF_ARGON2I ? Argon2_i : Argon2_id;
	int r;

	if (k->cpus == 0 || k->iterations == 0 || k->memory == 0)
		return err_set(-EINVAL, "bad argon2 parameters");
	r = argon2_hash(k->iterations, k->memory, k->cpus, pass, pass_len, k->salt, k->salt_len,
	                out, out_len, NULL, 0, t, ARGON2_VERSION_13);
	if (r == ARGON2_MEMORY_ALLOCATION_ERROR)
		return err_set(-ENOMEM, "argon2: cannot allocate %u KiB", k->memory);
	if (r != ARGON2_OK)
		return err_set(-EINVAL, "argon2: %s", argon2_error_message(r));
	return 0;
}

int luks_kdf_derive(const struct luks_kdf *k, const void *pass, size_t pass_len, void *out,
                    size_t out_len)
{
	if (k->type == LUKS_KDF_PBKDF2)
		return luks_pbkdf2(k->hash, pass, pass_len, k->salt, k->salt_len, k->iterations,
		                   out, out_len);
	return kdf_argon2(k, pass, pass_len, out, out_len);
}

/* CPU time, not wall time: the cost chosen must not drop because the
 * machine was busy while we measured.  clock is CLOCK_THREAD_CPUTIME_ID for
 * PBKDF2 (one thread) or CLOCK_PROCESS_CPUTIME_ID for argon2 (its lanes
 * run on threads; the caller divides by the lanes). */
static double kdf_cpu_ms(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

uint32_t luks_pbkdf2_iterations_for(const char *hash, uint32_t ms)
{
	static const char pass[] = "uraid benchmark";
	unsigned char salt[LUKS_SALT_LEN] = {0}, out[32];
	uint32_t iter = 1000;
	double t, rate;

	/* Grow the sample until it runs long enough to time. */
	for (;;) {
		double t0 = kdf_cpu_ms(CLOCK_THREAD_CPUTIME_ID);
		if (luks_pbkdf2(hash, pass, sizeof(pass) - 1, salt, sizeof(salt), iter, out,
		                sizeof(out)) < 0)
			return KDF_PBKDF2_MIN_ITER;
		t = kdf_cpu_ms(CLOCK_THREAD_CPUTIME_ID) - t0;
		if (t >= 20.0 || iter >= (1u << 28))
			break;
		iter *= 4;
	}
	rate = (double)iter / (t > 0.001 ? t : 0.001);
	rate *= ms;
	if (rate < KDF_PBKDF2_MIN_ITER)
		return KDF_PBKDF2_MIN_ITER;
	if (rate > (double)UINT32_MAX / 2)
		return UINT32_MAX / 2;
	return (uint32_t)rate;
}

static uint32_t kdf_default_memory(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	uint64_t half_kib;

	if (pages <= 0 || psz <= 0)
		return KDF_ARGON2_MAX_MEMORY;
	half_kib = (uint64_t)pages * (uint64_t)psz / 2048;
	return half_kib < KDF_ARGON2_MAX_MEMORY ? (uint32_t)half_kib : KDF_ARGON2_MAX_MEMORY;
}

/* argon2: time the minimum time cost on a sample of the memory (at most
 * 64 MiB, so the benchmark stays short), take the time as linear in memory,
 * then raise the time cost to reach ms, or lower the memory when even the
 * minimum time cost at full memory would take longer. */
static int kdf_argon2_bench(struct luks_kdf *k, uint32_t ms, size_t key_len)
{
	static const char pass[] = "uraid benchmark";
	unsigned char out[LUKS_KEY_MAX];
	struct luks_kdf sample = *k;
	double t0, t, full;
	int r;

	sample.iterations = KDF_ARGON2_MIN_TIME;
	if (sample.memory > KDF_ARGON2_SAMPLE_MEMORY)
		sample.memory = KDF_ARGON2_SAMPLE_MEMORY;
	t0 = kdf_cpu_ms(CLOCK_PROCESS_CPUTIME_ID);
	r = kdf_argon2(&sample, pass, sizeof(pass) - 1, out, key_len);
	explicit_bzero(out, sizeof(out));
	if (r < 0)
		return r;
	t = (kdf_cpu_ms(CLOCK_PROCESS_CPUTIME_ID) - t0) / sample.cpus;
	if (t < 0.1)
		t = 0.1;
	full = t * k->memory / sample.memory;
	k->iterations = KDF_ARGON2_MIN_TIME;
	if (full > ms) {
		double m = (double)k->memory * ms / full;
		k->memory = m < 8.0 * k->cpus ? 8 * k->cpus : (uint32_t)m;
	} else {
		double it = (double)KDF_ARGON2_MIN_TIME * ms / full;
		k->iterations = it > 1e6 ? 1000000u : (uint32_t)it;
		if (k->iterations < KDF_ARGON2_MIN_TIME)
			k->iterations = KDF_ARGON2_MIN_TIME;
	}
	return 0;
}

int luks_kdf_choose(const struct luks_pbkdf_opts *o, size_t key_len, struct luks_kdf *k)
{
	uint32_t ms = o->iter_ms ? o->iter_ms : KDF_DEFAULT_MS;
	int r;

	memset(k, 0, sizeof(*k));
	k->type = o->type;
	k->salt_len = LUKS_SALT_LEN;
	r = random_fill(k->salt, k->salt_len);
	if (r < 0)
		return r;
	if (key_len > LUKS_KEY_MAX)
		return err_set(-EINVAL, "key of %zu bytes is too long", key_len);
	if (k->type == LUKS_KDF_PBKDF2) {
		const char *hash = o->hash ? o->hash : "sha256";
		EVP_MD *md = NULL;
		if (strlen(hash) >= sizeof(k->hash))
			return err_set(-ENOTSUP, "unknown hash '%s'", hash);
		r = luks_md_fetch(hash, &md);
		EVP_MD_free(md);
		if (r < 0)
			return r;
		strcpy(k->hash, hash);
		k->iterations =
		    o->force_iter ? o->force_iter : luks_pbkdf2_iterations_for(hash, ms);
		if (k->iterations < KDF_PBKDF2_MIN_ITER)
			return err_set(-EINVAL, "PBKDF2 needs at least %u iterations",
			               KDF_PBKDF2_MIN_ITER);
		return 0;
	}
	k->memory = o->memory_kib ? o->memory_kib : kdf_default_memory();
	if (k->memory > 4u * 1024 * 1024)
		return err_set(-EINVAL, "argon2 memory is limited to 4 GiB");
	if (o->cpus) {
		k->cpus = o->cpus;
	} else {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		k->cpus = n < 1 ? 1 : n > 4 ? 4 : (uint32_t)n;
	}
	if (k->memory < 8 * k->cpus)
		k->memory = 8 * k->cpus;
	if (o->force_iter) {
		if (o->force_iter < KDF_ARGON2_MIN_TIME)
			return err_set(-EINVAL, "argon2 needs a time cost of at least %u",
			               KDF_ARGON2_MIN_TIME);
		k->iterations = o->force_iter;
		return 0;
	}
	return kdf_argon2_bench(k, ms, key_len ? key_len : 32);
}
