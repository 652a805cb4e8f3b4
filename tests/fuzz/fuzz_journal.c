/* fuzz_journal.c — libFuzzer target for md's raid5-cache journal
 * (src/md/md_journal.c): the meta-block checks and payload decoding on
 * every page of a log the input makes, then the journal opened on that
 * log and replayed onto a RAID5 or RAID6 of RAM members (the replay's
 * writes land there), then one write logged through it and a checkpoint.
 *
 * Input:
 *   byte 0    flags: bit 0 RAID6 on 5 members (else RAID5 on 4); bit 1
 *             repair every page that starts with the journal's magic: its
 *             position, the checksums of the pages its payloads name, its
 *             own checksum (so that mutations get past them); bit 2 chain
 *             their seqs from the tail's
 *   byte 1    the tail, in pages
 *   then the log's pages (up to 32; 4 KiB each, the last may be short,
 *   the rest zero)
 * A log position, count or size the input gives must never make the code
 * read or write outside its vols (the vols abort if it does), loop, or
 * leak.
 *
 * Build and run: tests/sh/format-fuzz.sh (clang -fsanitize=fuzzer,...). */
#define FUZZ_NAME "fuzz_journal"
#include "fuzz_vol.h"

#include "core/crc32c.h"
#include "core/log.h"
#include "disc/raid/raid.h"
#include "md/md_journal.h"

#include <endian.h>
#include <stdlib.h>
#include <string.h>

#define LOG_PAGES 32
#define CHUNK 16384
#define MEMBER (8 * CHUNK)

static const uint8_t uuid[16] = "fuzz-journal-uid";

/* bit 1 and 2: make the page at index i a block that passes the checks. */
static void repair(uint8_t *log, unsigned i, uint64_t *seq, bool chain, unsigned parity)
{
	struct r5l_meta_block *mb = (struct r5l_meta_block *)(log + (size_t)i * R5L_PAGE);
	uint32_t seed = md_journal_uuid_csum(uuid);
	struct md_journal_payload *pl = malloc(R5L_MAX_PAYLOADS * sizeof(*pl));
	unsigned n, pages;

	if (!pl)
		abort();
	mb->position = htole64((uint64_t)i * R5L_PAGE_SECTORS);
	if (chain)
		mb->seq = htole64((*seq)++);
	if (le32toh(mb->meta_size) <= R5L_PAGE &&
	    md_journal_meta_decode(mb, (uint64_t)i * R5L_PAGE_SECTORS, LOG_PAGES * R5L_PAGE_SECTORS,
	                           parity, pl, &n, &pages) == 0) {
		/* each payload's checksums, in the descriptor order */
		uint32_t off = 32;
		for (unsigned k = 0; k < n; k++) {
			if (pl[k].type == R5L_PAYLOAD_FLUSH) {
				off += 8 + 8 * pl[k].nflush;
				continue;
			}
			for (unsigned p = 0; p < pl[k].pages; p++) {
				uint64_t at = (pl[k].page_pos / R5L_PAGE_SECTORS + p) % LOG_PAGES;
				uint32_t c = htole32(crc32c(seed, log + at * R5L_PAGE, R5L_PAGE));
				memcpy((uint8_t *)mb + off + 16 + 4 * p, &c, 4);
			}
			off += 16 + 4 * pl[k].pages;
		}
	}
	mb->checksum = 0;
	mb->checksum = htole32(crc32c(seed, mb, R5L_PAGE));
	free(pl);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	log_verbosity = getenv("FUZZ_VERBOSE") ? LOG_DEBUG : -1;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	uint8_t flags = data[0], tail = data[1];
	unsigned n = flags & 1 ? 5 : 4, parity = flags & 1 ? 2 : 1;
	uint8_t *log = calloc(LOG_PAGES, R5L_PAGE);
	struct md_journal_payload *pl = malloc(R5L_MAX_PAYLOADS * sizeof(*pl));
	uint32_t seed = md_journal_uuid_csum(uuid);
	struct vol *members[5], *given[5], *array = NULL;
	struct md_journal *j = NULL;
	struct md_journal_stats st;
	unsigned np, pages;

	if (!log || !pl)
		abort();
	memcpy(log, data + 2, size - 2 < LOG_PAGES * R5L_PAGE ? size - 2 : LOG_PAGES * R5L_PAGE);
	uint64_t seq =
	    le64toh(((struct r5l_meta_block *)(log + (tail % LOG_PAGES) * R5L_PAGE))->seq);
	for (unsigned k = 0; k < LOG_PAGES && (flags & 2); k++) {
		unsigned i = (tail + k) % LOG_PAGES;
		if (le32toh(*(uint32_t *)(log + (size_t)i * R5L_PAGE)) == R5L_MAGIC)
			repair(log, i, &seq, flags & 4, parity);
	}
	/* the parser alone, on every page */
	for (unsigned i = 0; i < LOG_PAGES; i++) {
		const uint8_t *b = log + (size_t)i * R5L_PAGE;
		if (md_journal_meta_check(b, seed, (uint64_t)i * 8, 0, false) == 0)
			(void)md_journal_meta_decode(b, (uint64_t)i * 8, LOG_PAGES * 8, parity, pl,
			                             &np, &pages);
	}
	/* the journal over it, replayed onto an array */
	struct raid_geom g = {
	    .level = flags & 1 ? 6 : 5, .layout = 2, .chunk = CHUNK, .raid_disks = n};
	for (unsigned i = 0; i < n; i++)
		members[i] = given[i] = fuzz_ram_new(MEMBER, NULL, 0);
	if (raid_open(&g, given, NULL, "fuzz", &array) < 0)
		abort();
	struct vol *jlog = fuzz_ram_new(LOG_PAGES * R5L_PAGE, log, LOG_PAGES * R5L_PAGE);
	if (md_journal_open(jlog, array, members, n, parity, CHUNK, uuid,
	                    (uint64_t)tail * R5L_PAGE_SECTORS, NULL, &j) == 0) {
		int r = md_journal_recover(j, &st);
		if (getenv("FUZZ_VERBOSE"))
			fprintf(stderr,
			        "recover %d: %llu meta blocks, %llu stripes with parity, %llu "
			        "data-only%s\n",
			        r, (unsigned long long)st.meta_blocks,
			        (unsigned long long)st.data_parity,
			        (unsigned long long)st.data_only, st.created ? ", a new log" : "");
		if (r == 0) {
			struct raid_log_ops lo;
			static uint8_t page[4096] __attribute__((aligned(4096)));
			md_journal_log_ops(j, &lo);
			raid_set_log(array, &lo);
			(void)vol_write(array, page, sizeof(page), 0, 0);
			(void)md_journal_checkpoint(j);
			raid_set_log(array, NULL);
		}
		md_journal_close(j);
	}
	vol_close(array);
	free(pl);
	free(log);
	return 0;
}
