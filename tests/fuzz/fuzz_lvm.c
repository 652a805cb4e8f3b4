/* fuzz_lvm.c — libFuzzer target for what uraid does with the LVM2 PVs of a
 * foreign disk: the metadata text parser and its checks (src/lvm/lvm_text.c),
 * the label and metadata-area reader, and read-only assembly with reads
 * through every LV that opens (src/lvm/lvm.c).
 *
 * Input:
 *   byte 0   flags: bit 0 clear: the rest is metadata text, given to
 *            lvm_text_parse() alone; bit 0 set: the rest is a PV image
 *            (below); bit 1 fix the label, metadata-area header and text
 *            checksums in the image (else the fuzzer rarely gets past
 *            them); bit 2 the PV has 4096-byte blocks (else 512)
 *   image:   bytes 1-2 le16 PV size in 64 KiB units (raised to hold the
 *            blob, at most 4 GiB; nothing is allocated), then the blob: the
 *            PV's first bytes, zeros after it.
 * The PV aborts on any write (a read-only start must not change a byte) and
 * on any read that breaks the vol contract.
 *
 * Build and run: tests/sh/format-fuzz.sh (clang -fsanitize=fuzzer,...). */
#define FUZZ_NAME "fuzz_lvm"
#include "fuzz_vol.h"

#include "core/log.h"
#include "core/vol.h"
#include "lvm/lvm.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_READ_MAX (64u << 10)

static bool verbose;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	verbose = getenv("FUZZ_VERBOSE") != NULL;
	log_verbosity = verbose ? LOG_DEBUG : -1;
	return 0;
}

static uint64_t le_at(const unsigned char *p, unsigned n)
{
	uint64_t x = 0;
	for (unsigned i = n; i-- > 0;)
		x = x << 8 | p[i];
	return x;
}

static void put_le32(unsigned char *p, uint32_t x)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(x >> (8 * i));
}

/* Give the label, each metadata-area header found through it and the text
 * each points at (where all lie in the blob) the checksums they should
 * have. */
static void fix_csums(unsigned char *b, size_t len)
{
	for (size_t s = 0; s < 4 && (s + 1) * 512 <= len; s++) {
		unsigned char *l = b + s * 512;
		if (memcmp(l, "LABELONE", 8))
			continue;
		uint32_t ho = (uint32_t)le_at(l + 20, 4);
		unsigned list = 0;
		for (uint32_t at = ho + 40; ho >= 32 && at + 16 <= 512 && list < 2; at += 16) {
			uint64_t off = le_at(l + at, 8), size = le_at(l + at + 8, 8);
			if (!off) {
				list++;
				continue;
			}
			if (list != 1 || off > len || 512 > len - off || size < 1024)
				continue;
			unsigned char *h = b + off;
			uint64_t toff = le_at(h + 40, 8), tlen = le_at(h + 48, 8);
			if (toff >= 512 && toff < size && tlen && tlen <= size - 512) {
				uint64_t first = size - toff < tlen ? size - toff : tlen;
				if (toff + first <= len - off &&
				    512 + (tlen - first) <= len - off) {
					uint32_t c = lvm_crc(LVM_INITIAL_CRC, h + toff, first);
					c = lvm_crc(c, h + 512, tlen - first);
					put_le32(h + 56, c);
				}
			}
			put_le32(h, lvm_crc(LVM_INITIAL_CRC, h + 4, 508));
		}
		put_le32(l + 16, lvm_crc(LVM_INITIAL_CRC, l + 20, 492));
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t flags = data[0];
	err_clear();
	if (!(flags & 1)) {
		struct lvm_vg *vg = NULL;
		int r = lvm_text_parse((const char *)data + 1, size - 1, &vg);
		if (verbose)
			fprintf(stderr, "fuzz_lvm: text: %d %s\n", r, r < 0 ? err_detail(r) : "");
		lvm_vg_free(vg);
		return 0;
	}
	if (size < 3)
		return 0;
	struct fuzz_disk pv;
	size_t blob_len = size - 3;
	unsigned char *blob = malloc(blob_len + 1);
	if (!blob)
		return 0;
	memcpy(blob, data + 3, blob_len);
	if (flags & 2)
		fix_csums(blob, blob_len);
	uint32_t bs = flags & 4 ? 4096 : 512;
	uint64_t vsize = le_at(data + 1, 2) << 16;
	if (vsize < blob_len)
		vsize = blob_len;
	vsize = (vsize + bs - 1) / bs * bs;
	if (vsize == 0) {
		free(blob);
		return 0;
	}
	fuzz_disk_init(&pv, "fuzz.img", vsize, bs, 0);
	fuzz_disk_put(&pv, 0, blob, blob_len);
	int r = lvm_probe(&pv.vol);
	if (verbose)
		fprintf(stderr, "fuzz_lvm: probe: %d %s\n", r, r < 0 ? err_detail(r) : "");
	struct vol *vols[1] = {&pv.vol};
	struct lvm_found *f = NULL;
	r = lvm_assemble(vols, 1, true, &f);
	if (verbose)
		fprintf(stderr, "fuzz_lvm: assemble: %d %s\n", r, r < 0 ? err_detail(r) : "");
	for (unsigned i = 0; r == 0 && i < f->nlv; i++) {
		if (verbose)
			fprintf(stderr, "fuzz_lvm:  %s %llu %s\n", f->lv[i].name,
			        (unsigned long long)f->lv[i].size,
			        f->lv[i].refused ? f->lv[i].refused : "");
		if (f->lv[i].vol)
			fuzz_read_some(f->lv[i].vol, FUZZ_READ_MAX, verbose);
	}
	lvm_found_free(f);
	vol_close(&pv.vol);
	free(blob);
	return 0;
}
