/* luks_af.h — the LUKS anti-forensic splitter (luks_af.c). */
#ifndef URAID_LUKS_AF_H
#define URAID_LUKS_AF_H

#include <stddef.h>
#include <stdint.h>

/* Split key (key_len bytes) into stripes * key_len bytes of material, so
 * that losing any part of the material loses the key (LUKS1 AF, diffused
 * with hash).  merge is the inverse. */
int luks_af_split(const void *key, size_t key_len, uint32_t stripes, const char *hash,
                  void *material);
int luks_af_merge(const void *material, size_t key_len, uint32_t stripes, const char *hash,
                  void *key);

#endif
