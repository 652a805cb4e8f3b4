/* crc32c.h — CRC-32C (Castagnoli), the checksum md's PPL and raid5-cache
 * journal use (the kernel's crc32c_le), in one place.
 *
 * crc32c(0, buf, len) is the standard CRC-32C of buf (pre- and
 * post-inverted); chaining crc32c(crc32c(0, a, n), b, m) gives that of a
 * followed by b.  The kernel's ~crc32c_le(~0, buf, len) equals
 * crc32c(0, buf, len); its raw crc32c_le(seed, ...) equals
 * ~crc32c(~seed, ...). */
#ifndef URAID_CRC32C_H
#define URAID_CRC32C_H

#include <stddef.h>
#include <stdint.h>

uint32_t crc32c(uint32_t crc, const void *buf, size_t len);
/* The same by table, the path of CPUs without a CRC-32C instruction
 * (crc32c() takes it there; the tests compare the two). */
uint32_t crc32c_table(uint32_t crc, const void *buf, size_t len);

#endif
