/* luks2.h — writing LUKS2 headers (luks2.c): a fresh header, and key slots
 * added, replaced and removed.  Every change rewrites both header copies
 * with a new seqid.  LUKS1 headers are read-only in uraid. */
#ifndef URAID_LUKS2_H
#define URAID_LUKS2_H

#include "core/vol.h"
#include "luks/luks_hdr.h"

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

#endif
