/* crypt.h — the encryption discipline: a vol whose sectors are the
 * ciphertext sectors of its child, as dm-crypt does it.  LUKS (src/format/
 * luks2.c, luks1.c) parses headers and unlocks keys, then opens this on
 * the payload area (a slice of the device). */
#ifndef URAID_CRYPT_H
#define URAID_CRYPT_H

#include "core/vol.h"

#include <stdbool.h>
#include <stddef.h>

struct crypt_params {
	const char *cipher;    /* dm-crypt spec as in LUKS: "aes-xts-plain64" */
	const unsigned char *key;
	size_t key_len;        /* bytes: 32 or 64 for xts */
	uint32_t sector_size;  /* 512 or 4096 */
	uint64_t iv_offset;    /* in 512-byte sectors, as dm-crypt's table and
				* LUKS2's iv_tweak: IV number = (byte offset /
				* 512 + iv_offset) / (sector_size / 512) */
	bool iv_large_sectors;  /* true: IVs count sector_size units (dm-crypt's
				* iv_large_sectors, plain mappings).  false
				* (LUKS1/LUKS2): IVs count 512-byte sectors, so
				* 4096-byte sector k has IV 8k + iv_offset */
};

/* The crypt vol copies the key into locked memory; the caller wipes its
 * own copy.  Owns child when owns_child (on failure the caller keeps it).
 * Ciphers: aes-xts-plain64, aes-xts-plain, aes-cbc-essiv:sha256,
 * aes-cbc-plain64, aes-cbc-plain.  Returns 0 or -errno with err_set()
 * detail: -ENOTSUP for an unknown cipher, -EINVAL for a bad key length,
 * an XTS key with equal halves, or a bad sector size.  No TRIM is offered
 * (see crypt.c); write_zeroes writes encrypted zeros. */
int crypt_open(struct vol *child, const struct crypt_params *p, bool owns_child,
	       const char *name, struct vol **out);

#endif
