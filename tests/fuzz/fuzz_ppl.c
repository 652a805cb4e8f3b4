/* fuzz_ppl.c — libFuzzer target for md's PPL reader (src/md/md_ppl.c):
 * the input is a member's PPL area; md_ppl_find() picks its newest
 * header, and md_ppl_replay_area() replays its entries over a small RAID5
 * held in memory, as an unclean start of a PPL array does.
 *
 * Input:
 *   byte 0    flags: bit 0 fix every checksum the scan meets (headers, and
 *             the PP of their entries), so that mutations get past them;
 *             bits 1-2 members - 3 (3 to 6); bits 3-4 the RAID5 layout
 *   byte 1    chunk: 4 KiB << (byte & 3)
 *   then      the area (at most 256 KiB, zero-padded to 4 KiB blocks, at
 *             least two); its first header's signature is the array's
 * Every entry, whatever its fields, must be replayed or skipped without a
 * read or write outside the members (their vols check the contract and
 * abort on a breach).
 *
 * Build and run: tests/sh/format-fuzz.sh (clang -fsanitize=fuzzer,...). */
#define FUZZ_NAME "fuzz_ppl"
#include "fuzz_vol.h"

#include "core/crc32c.h"
#include "core/log.h"
#include "core/vol.h"
#include "disc/raid/raid.h"
#include "md/md_ppl.h"

#include <endian.h>
#include <stdlib.h>
#include <string.h>

#define AREA_MAX (256u * 1024)
#define MEMBER_SIZE (128u * 1024)

/* Make the checksums right along the scan md_ppl_find makes. */
static void fix_checksums(unsigned char *a, uint64_t len)
{
	uint64_t off = 0;
	while (len >= MD_PPL_HEADER_SIZE && off < len - MD_PPL_HEADER_SIZE) {
		unsigned char *h = a + off;
		uint32_t count, zero = 0;
		memcpy(&count, h + 512 + 16, 4);
		count = le32toh(count);
		if (count > MD_PPL_MAX_ENTRIES)
			count = MD_PPL_MAX_ENTRIES;
		uint64_t pos = off + MD_PPL_HEADER_SIZE;
		for (uint32_t i = 0; i < count; i++) {
			unsigned char *e = h + 536 + 24 * i;
			uint32_t pp;
			memcpy(&pp, e + 8, 4);
			pp = le32toh(pp) / 512 * 512;
			if (pos <= len && pp <= len - pos) {
				uint32_t c = htole32(~crc32c(~0u, a + pos, pp));
				memcpy(e + 20, &c, 4);
			}
			pos += pp;
		}
		memcpy(h + 512 + 20, &zero, 4);
		uint32_t c = htole32(~crc32c(~0u, h, MD_PPL_HEADER_SIZE));
		memcpy(h + 512 + 20, &c, 4);
		if (pos <= off)
			break;
		off = pos;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	unsigned flags = data[0], n = 3 + ((flags >> 1) & 3), layout = (flags >> 3) & 3;
	uint64_t chunk = 4096u << (data[1] & 3);
	uint64_t in = size - 2 > AREA_MAX ? AREA_MAX : size - 2;
	uint64_t len = (in + 4095) / 4096 * 4096;
	if (len < 2 * MD_PPL_HEADER_SIZE)
		len = 2 * MD_PPL_HEADER_SIZE;
	unsigned char *area = calloc(1, len);
	if (!area)
		abort();
	memcpy(area, data + 2, in);
	if (flags & 1)
		fix_checksums(area, len);
	uint32_t sig;
	memcpy(&sig, area + 512, 4);
	sig = le32toh(sig);

	struct md_ppl_header *h = malloc(sizeof(*h));
	uint64_t at = 0;
	if (h && md_ppl_find(area, len, sig, h, &at) == 0 && at >= len)
		abort();
	free(h);

	struct raid_geom g = {
	    .level = 5, .layout = layout, .chunk = (uint32_t)chunk, .raid_disks = n};
	struct vol *m[8], *arr = NULL;
	for (unsigned i = 0; i < n; i++)
		m[i] = fuzz_ram_new(MEMBER_SIZE, data, size);
	if (raid_open(&g, m, NULL, "fuzz", &arr) == 0) {
		struct vol *av = fuzz_ram_new(len, area, len);
		struct md_ppl_array pa = {arr, m, n, chunk};
		struct md_ppl_stats st = {0};
		if (md_ppl_replay_area(&pa, av, 0, len, sig, &st) < 0 && getenv("FUZZ_VERBOSE"))
			fprintf(stderr, "replay: %s\n", err_detail(-EIO));
		if (getenv("FUZZ_VERBOSE"))
			fprintf(stderr, "recovered %u mismatched %u skipped %u\n", st.recovered,
			        st.mismatched, st.skipped);
		vol_close(av);
		vol_close(arr);
	} else {
		for (unsigned i = 0; i < n; i++)
			vol_close(m[i]);
	}
	free(area);
	err_clear();
	return 0;
}
