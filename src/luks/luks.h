/* luks.h — LUKS2 (read and write) and LUKS1 (read and unlock) headers,
 * compatible with cryptsetup.
 *
 * A header is loaded from the top vol of a stack (luks_load), unlocked with
 * a passphrase (luks_unlock gives the volume key), and turned into the
 * plaintext vol (luks_open_payload: a slice of the device behind a crypt
 * vol).  LUKS2 headers can also be created (luks2_format) and their key
 * slots added, replaced and removed; every change rewrites both header
 * copies with a new seqid.
 *
 * Module map: luks.c (probe, load, unlock, payload: both versions),
 * luks2.c (binary header + JSON), luks1.c (the 592-byte phdr),
 * luks_af.c (anti-forensic splitter), luks_kdf.c (argon2/pbkdf2 and the
 * iteration benchmark), luks_cipher.c (key-slot area encryption),
 * luks_dump.c (luksDump-style report).
 *
 * Secrets (passphrases, derived keys, volume keys) live in buffers from
 * luks_secret_alloc(), which are locked in memory and wiped when freed. */
#ifndef URAID_LUKS_H
#define URAID_LUKS_H

#include "core/vol.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define LUKS_MAGIC_LEN 6
#define LUKS_MAGIC "LUKS\xba\xbe"
#define LUKS2_MAGIC_2ND "SKUL\xba\xbe"
#define LUKS_SALT_LEN 32
#define LUKS_KEY_MAX 64   /* bytes of volume key we handle (512 bits) */
#define LUKS_SLOTS_MAX 32 /* LUKS2; LUKS1 has 8 */
#define LUKS1_SLOTS 8

/* ---- secrets ---- */

/* A secret: locked in memory while it lives, wiped when freed. */
struct luks_secret {
	size_t len;
	unsigned char *data;
};

/* Returns NULL on allocation failure. */
struct luks_secret *luks_secret_alloc(size_t len);
void luks_secret_free(struct luks_secret *s);

/* ---- key derivation (luks_kdf.c) ---- */

enum luks_kdf_type { LUKS_KDF_PBKDF2, LUKS_KDF_ARGON2I, LUKS_KDF_ARGON2ID };

struct luks_kdf {
	enum luks_kdf_type type;
	char hash[16];       /* pbkdf2: "sha256", "sha1", ... */
	uint32_t iterations; /* pbkdf2 iterations, or argon2 time cost */
	uint32_t memory;     /* argon2: KiB */
	uint32_t cpus;       /* argon2: lanes and threads */
	unsigned char salt[LUKS_SALT_LEN];
	size_t salt_len;
};

/* What the user asked for when a key slot is made (cryptsetup's options). */
struct luks_pbkdf_opts {
	enum luks_kdf_type type; /* default argon2id */
	uint32_t iter_ms;        /* target unlock time; default 2000 */
	uint32_t memory_kib;     /* argon2 memory cap; default 1 GiB */
	uint32_t cpus;           /* argon2 lanes; default min(4, cores) */
	uint32_t force_iter;     /* nonzero: skip the benchmark */
	const char *hash;        /* pbkdf2 hash; default sha256 */
};

const char *luks_kdf_name(enum luks_kdf_type t);
int luks_kdf_parse(const char *name, enum luks_kdf_type *t);

/* Derive out_len bytes from the passphrase. */
int luks_kdf_derive(const struct luks_kdf *k, const void *pass, size_t pass_len, void *out,
                    size_t out_len);

/* Fill k (type, cost, fresh salt) for a new key slot of key_len bytes,
 * benchmarking unless opts->force_iter is set. */
int luks_kdf_choose(const struct luks_pbkdf_opts *o, size_t key_len, struct luks_kdf *k);

/* The named hash, from OpenSSL's legacy provider where only it has it
 * (whirlpool); free with EVP_MD_free.  -ENOTSUP with the reason. */
typedef struct evp_md_st EVP_MD;
int luks_md_fetch(const char *name, EVP_MD **md);

/* PBKDF2-HMAC with the named hash ("sha1", "sha256", "sha512", ...). */
int luks_pbkdf2(const char *hash, const void *pass, size_t pass_len, const void *salt,
                size_t salt_len, uint32_t iterations, void *out, size_t out_len);

/* Iterations of PBKDF2-hash that take about ms milliseconds (min 1000). */
uint32_t luks_pbkdf2_iterations_for(const char *hash, uint32_t ms);

/* ---- anti-forensic splitter (luks_af.c) ---- */

/* Split key (key_len bytes) into stripes * key_len bytes of material, so
 * that losing any part of the material loses the key (LUKS1 AF, diffused
 * with hash).  merge is the inverse. */
int luks_af_split(const void *key, size_t key_len, uint32_t stripes, const char *hash,
                  void *material);
int luks_af_merge(const void *material, size_t key_len, uint32_t stripes, const char *hash,
                  void *key);

/* ---- key-slot area cipher (luks_cipher.c) ---- */

/* En- or decrypt len bytes (a multiple of 512) of key-slot material in
 * place, in 512-byte sectors numbered from 0, as dm-crypt would with the
 * given spec: "aes-xts-plain64", "aes-xts-plain", "aes-cbc-essiv:sha256",
 * "aes-cbc-plain64", "aes-cbc-plain".  -ENOTSUP with detail otherwise. */
int luks_area_crypt(const char *spec, const void *key, size_t key_len, void *buf, size_t len,
                    bool encrypt);
/* The same for sectors of sector_size bytes whose IV numbers are first_iv,
 * first_iv + iv_step, ... (used to check the data path, see luks.c). */
int luks_sector_crypt(const char *spec, const void *key, size_t key_len, void *buf, size_t len,
                      uint32_t sector_size, uint64_t first_iv, uint32_t iv_step, bool encrypt);
/* The cipher spec in dm-crypt's usual form: the kernel crypto-API form
 * "capi:xts(aes)-plain64" becomes "aes-xts-plain64"; anything else is
 * copied.  -ENAMETOOLONG if it does not fit len. */
int luks_cipher_name(const char *spec, char *out, size_t len);
/* 0 if spec is a cipher the area code handles with key_len bytes of key. */
int luks_area_cipher_ok(const char *spec, size_t key_len);

/* ---- headers (luks.c, luks1.c, luks2.c) ---- */

/* One key slot, as both versions describe it. */
struct luks_keyslot {
	bool active;
	uint32_t key_size; /* bytes of volume key it holds */
	uint32_t stripes;
	char af_hash[16];
	uint64_t area_offset; /* bytes from the header start */
	uint64_t area_size;
	char area_cipher[64];
	uint32_t area_key_size;
	struct luks_kdf kdf;
	int digest;   /* LUKS2 digest id that checks it; LUKS1: 0 */
	int priority; /* LUKS2: 0 ignore, 1 normal, 2 prefer */
	/* Why the slot cannot be tried (a KDF uraid lacks), or "". */
	char unusable[96];
};

struct luks_digest {
	bool used;
	char hash[16];
	uint32_t iterations;
	unsigned char salt[LUKS_SALT_LEN];
	size_t salt_len;
	unsigned char digest[64];
	size_t digest_len;
	uint32_t keyslots; /* LUKS2: bit i set when keyslot i is listed */
};

struct luks_segment {
	char cipher[64];   /* "aes-xts-plain64" */
	uint64_t offset;   /* bytes */
	uint64_t size;     /* bytes; 0 = to the end of the device */
	uint64_t iv_tweak; /* added to IV numbers, in 512-byte sectors (dm-crypt's iv_offset) */
	uint32_t sector_size;
	uint32_t key_size; /* bytes of volume key */
};

struct luks2_state; /* JSON and binary-header state (luks2.c) */

struct luks_hdr {
	int version; /* 1 or 2 */
	char uuid[40];
	char label[48];
	char subsystem[48];
	uint64_t seqid;
	uint64_t hdr_size;      /* LUKS2: binary header + JSON area per copy */
	uint64_t keyslots_size; /* LUKS2: bytes of the keyslot area */
	uint64_t data_offset;   /* bytes */
	int nslots;             /* 8 or 32 */
	struct luks_keyslot slots[LUKS_SLOTS_MAX];
	struct luks_digest digests[LUKS_SLOTS_MAX];
	struct luks_segment seg;
	/* The digest bound to the data segment (LUKS1: 0).  Only key slots
	 * of this digest open the volume; others are "unbound" (cryptsetup
	 * luksAddKey --unbound) and hold some other key. */
	int seg_digest;
	/* Which copies were valid when loaded (LUKS2); a damaged or stale
	 * copy is rewritten by luks_repair() or the next header write. */
	bool primary_ok, secondary_ok, needs_repair;
	struct luks2_state *l2;
};

/* Does the vol start with a LUKS magic?  Returns 1 or 2 (version), 0 when
 * not, or -errno on a read error. */
int luks_probe(struct vol *dev);

/* Read and check the header.  A LUKS2 device with one damaged copy loads
 * from the other and sets needs_repair (a warning is logged).  Both
 * damaged: -EINVAL with detail. */
int luks_load(struct vol *dev, struct luks_hdr **out);
void luks_hdr_free(struct luks_hdr *h);

/* Try the passphrase on the active key slots bound to the data segment
 * (or only on slot >= 0, which must be bound).  Returns the slot number
 * that opened and sets *vk (the volume key, in a secret), or -EPERM "no
 * key slot matches this passphrase". */
int luks_unlock(struct luks_hdr *h, struct vol *dev, int slot, const struct luks_secret *pass,
                struct luks_secret **vk);

/* Check a volume key against the header's digest.  0 if it matches. */
int luks_verify_key(const struct luks_hdr *h, const struct luks_secret *vk);

/* The plaintext vol: slice the payload off dev and put the crypt layer on
 * it.  Owns dev when owns_dev (also on failure). */
int luks_open_payload(struct luks_hdr *h, struct vol *dev, bool owns_dev,
                      const struct luks_secret *vk, struct vol **out);

/* Rewrite both LUKS2 header copies if loading found one damaged or stale.
 * No-op for a clean header; -ENOTSUP for LUKS1. */
int luks_repair(struct luks_hdr *h, struct vol *dev);

/* luksDump-style report.  vk non-NULL adds the volume key (the caller has
 * asked the user). */
void luks_dump(const struct luks_hdr *h, const struct luks_secret *vk, FILE *f);

/* ---- LUKS2 writing (luks2.c) ---- */

struct luks2_format_opts {
	uint32_t key_bytes;   /* 32 or 64 (aes-xts-plain64 256/512 bits) */
	uint32_t sector_size; /* 512 or 4096 */
	const char *label;    /* may be NULL */
	const char *cipher;   /* NULL: aes-xts-plain64 */
	struct luks_pbkdf_opts pbkdf;
};

/* Write a fresh LUKS2 header with a new random volume key in slot 0.
 * Everything before the data offset is overwritten. */
int luks2_format(struct vol *dev, const struct luks2_format_opts *o,
                 const struct luks_secret *pass);

/* Store vk in key slot `slot` (-1: the lowest free one) under pass; an
 * active slot with that number is replaced (its old area wiped after the
 * new header is written).  Returns the slot number. */
int luks2_keyslot_store(struct luks_hdr *h, struct vol *dev, int slot, const struct luks_secret *vk,
                        const struct luks_secret *pass, const struct luks_pbkdf_opts *o);

/* Remove a key slot: header first, then wipe its area. */
int luks2_keyslot_remove(struct luks_hdr *h, struct vol *dev, int slot);

/* Is key slot i bound to the data segment (may it open the volume)? */
bool luks_slot_bound(const struct luks_hdr *h, int i);

/* Internals shared by luks.c with the version files. */
int luks2_load(struct vol *dev, struct luks_hdr *h);
int luks2_write(struct luks_hdr *h, struct vol *dev);
void luks2_state_free(struct luks2_state *s);
int luks1_load(struct vol *dev, struct luks_hdr *h);
/* The rules of a LUKS2 header's JSON (luks2_check.c): 0, or -EINVAL (a
 * broken rule) / -ENOTSUP (a feature uraid lacks) with why filled in. */
struct json_object;
int luks2_check(struct json_object *j, uint64_t hdr_size, char *why, size_t why_len);

#endif
