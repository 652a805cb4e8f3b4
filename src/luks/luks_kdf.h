/* luks_kdf.h — key derivation for LUKS key slots and digests (luks_kdf.c):
 * argon2i/argon2id and PBKDF2, and the benchmark that picks their cost. */
#ifndef URAID_LUKS_KDF_H
#define URAID_LUKS_KDF_H

#include "luks/luks_hdr.h"

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

#endif
