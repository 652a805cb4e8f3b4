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
	uint32_t sector_size;  /* 512 or 4096; IVs count in these units */
	uint64_t iv_offset;    /* added to every sector number (LUKS2 iv_tweak) */
};

/* The crypt vol copies the key into locked memory; the caller wipes its
 * own copy.  Owns child when owns_child.  Returns 0 or -errno
 * (-ENOTSUP with detail for an unknown cipher). */
int crypt_open(struct vol *child, const struct crypt_params *p, bool owns_child,
	       const char *name, struct vol **out);

#endif
