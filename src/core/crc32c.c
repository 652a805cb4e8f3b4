/* crc32c.c — CRC-32C, reflected polynomial 0x82f63b78, a byte table built
 * once (slicing by one byte: the journal's pages are small, and the
 * hardware instruction would tie the build to one CPU family). */
#include "crc32c.h"

#include <pthread.h>

static uint32_t crc32c_table[256];
static pthread_once_t crc32c_once = PTHREAD_ONCE_INIT;

static void crc32c_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (c & 1 ? 0x82f63b78u : 0);
		crc32c_table[i] = c;
	}
}

uint32_t crc32c(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	pthread_once(&crc32c_once, crc32c_init);
	while (len--)
		crc = crc32c_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}
