/* crc32c.c — CRC-32C: the x86 SSE4.2 instruction where the CPU has it
 * (8 bytes a step, several GB/s: the PPL checksums every byte of partial
 * parity it logs), else by table, eight bytes a step (slicing-by-8), the
 * tables built once, on first use.  See crc32c.h. */
#include "crc32c.h"

#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#define CRC32C_POLY 0x82f63b78u /* reflected Castagnoli polynomial */

static uint32_t crc32c_tab[8][256];
static pthread_once_t crc32c_once = PTHREAD_ONCE_INIT;

static void crc32c_init(void)
{
	for (unsigned i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ CRC32C_POLY : c >> 1;
		crc32c_tab[0][i] = c;
	}
	for (unsigned i = 0; i < 256; i++)
		for (unsigned t = 1; t < 8; t++)
			crc32c_tab[t][i] = (crc32c_tab[t - 1][i] >> 8) ^
			                   crc32c_tab[0][crc32c_tab[t - 1][i] & 0xff];
}

#if defined(__x86_64__)
#include <nmmintrin.h>

__attribute__((target("sse4.2"))) static uint32_t crc32c_hw(uint32_t crc, const unsigned char *p,
                                                            size_t len)
{
	uint64_t c = crc;
	while (len >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		c = _mm_crc32_u64(c, w);
		p += 8;
		len -= 8;
	}
	crc = (uint32_t)c;
	while (len--)
		crc = _mm_crc32_u8(crc, *p++);
	return crc;
}

static bool crc32c_has_hw(void)
{
	return __builtin_cpu_supports("sse4.2"); /* a load of what libgcc found at start */
}
#endif

uint32_t crc32c(uint32_t crc, const void *buf, size_t len)
{
#if defined(__x86_64__)
	if (crc32c_has_hw())
		return crc32c_hw(crc, buf, len);
#endif
	return crc32c_table(crc, buf, len);
}

uint32_t crc32c_table(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;

	pthread_once(&crc32c_once, crc32c_init);
	while (len >= 8) {
		uint32_t lo, hi;
		memcpy(&lo, p, 4);
		memcpy(&hi, p + 4, 4);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
		lo = __builtin_bswap32(lo);
		hi = __builtin_bswap32(hi);
#endif
		lo ^= crc;
		crc = crc32c_tab[7][lo & 0xff] ^ crc32c_tab[6][(lo >> 8) & 0xff] ^
		      crc32c_tab[5][(lo >> 16) & 0xff] ^ crc32c_tab[4][lo >> 24] ^
		      crc32c_tab[3][hi & 0xff] ^ crc32c_tab[2][(hi >> 8) & 0xff] ^
		      crc32c_tab[1][(hi >> 16) & 0xff] ^ crc32c_tab[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = (crc >> 8) ^ crc32c_tab[0][(crc ^ *p++) & 0xff];
	return crc;
}
