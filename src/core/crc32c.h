/* crc32c.h — CRC-32C (Castagnoli), the checksum md's PPL and raid5-cache
 * journal use, in one place, in the kernel's crc32c_le() convention: crc
 * goes in and comes out as it is, with no inversion before or after, so
 * that the formats' code reads as the kernel's does.  The standard
 * CRC-32C of buf is ~crc32c(~0u, buf, len); chaining crc32c(crc32c(s, a,
 * n), b, m) gives that of a followed by b. */
#ifndef URAID_CRC32C_H
#define URAID_CRC32C_H

#include <stddef.h>
#include <stdint.h>

uint32_t crc32c(uint32_t crc, const void *buf, size_t len);
/* The same by table, the path of CPUs without a CRC-32C instruction
 * (crc32c() takes it there; the tests compare the two). */
uint32_t crc32c_table(uint32_t crc, const void *buf, size_t len);

#endif
