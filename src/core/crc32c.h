/* crc32c.h — CRC-32C (Castagnoli), as the formats md and the kernel write
 * use it: the raid5-cache journal (its meta blocks and pages) and PPL. */
#ifndef URAID_CRC32C_H
#define URAID_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* The kernel's crc32c_le() convention: crc goes in and comes out as it is,
 * with no inversion before or after (the standard CRC-32C of buf is
 * ~crc32c(~0u, buf, len)). */
uint32_t crc32c(uint32_t crc, const void *buf, size_t len);

#endif
