/* fuzz_luks.c — libFuzzer target for the LUKS1 and LUKS2 header code that
 * faces a foreign disk: probing and loading (luks_probe, luks_load: the
 * LUKS1 phdr, both LUKS2 binary headers and what their JSON says), the
 * luksDump report, an unlock attempt with a fixed passphrase, and the
 * payload vol cut out by what the segment says, as `uraid luks-dump` and a
 * read-only `uraid serve` do; and the device taken as a header backup
 * (`uraid luks-header-restore`, luks_backup.c) restored onto a RAM device.
 *
 * Input:
 *   byte 0    flags: bit 0 give both LUKS2 header copies the SHA-256 they
 *             should have (else the fuzzer rarely gets past the checksum);
 *             bit 1 try to unlock with the passphrase "fuzz"; bit 2 the
 *             device has 4096-byte blocks (else 512); bit 3 open the
 *             payload with a made-up volume key (bytes 1, 2, 3, ...) when
 *             unlocking did not give one; bits 4-7: 0 tries every slot, k tries slot k - 1
 *   bytes 1-4 le32 device size in 4 KiB units (raised to hold the image,
 *             capped at 1 TiB; nothing is allocated for it)
 *   the rest  the device's first bytes (the image); zeros follow
 *
 * Unlocking is cheap only when the header asks for cheap key derivation,
 * and a mutated header easily asks for 2^32 PBKDF2 iterations or 4 GiB of
 * argon2 memory.  So before unlocking, the harness turns off (in its copy
 * of the loaded header) every key slot whose KDF costs more than PBKDF2
 * with 2000 iterations, argon2 with time 4, 64 KiB and 4 lanes, or whose
 * AF material exceeds 512 KiB, and skips unlocking altogether when the
 * digest asks for more than 2000 iterations.  Parsing and validation of
 * those headers is fuzzed all the same; only the KDF is not run on them.
 *
 * The device vol checks the vol contract and aborts when it is broken,
 * and aborts on any write: loading, dumping and unlocking change nothing.
 *
 * Restore (header areas up to 1088 KiB, so that a run stays cheap: a
 * LUKS1 header of 256-bit keys, small LUKS2 ones): a header
 * compared with itself has no difference; onto an empty RAM device it is
 * refused without --force with nothing written; with --force, when it
 * succeeds, a second restore without --force succeeds too (the device's
 * header is now the backup's).
 *
 * Build and run: tests/sh/format-fuzz.sh (clang -fsanitize=fuzzer,...). */
#define FUZZ_NAME "fuzz_luks"
#include "fuzz_vol.h"

#include "core/log.h"
#include "core/vol.h"
#include "luks/luks.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_DEV_MAX (1ull << 40)
#define FUZZ_READ_MAX (64u << 10)
#define FUZZ_PBKDF2_MAX 2000u
#define FUZZ_ARGON2_TIME_MAX 4u
#define FUZZ_ARGON2_MEM_MAX 64u /* KiB */
#define FUZZ_ARGON2_CPUS_MAX 4u
#define FUZZ_AF_MAX (512u << 10)
#define FUZZ_RESTORE_MAX (1088u << 10) /* a LUKS1 header of 256-bit keys */

/* Where the binary header keeps hdr_size and the checksum. */
#define L2_HDR_SIZE_AT 8
#define L2_CSUM_AT 448

static FILE *devnull;

static bool verbose; /* FUZZ_VERBOSE set: say what each input did */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	verbose = getenv("FUZZ_VERBOSE") != NULL;
	log_verbosity = verbose ? LOG_DEBUG : -1; /* damaged headers are expected: no warnings */
	devnull = fopen("/dev/null", "w");
	if (!devnull)
		abort();
	return 0;
}

static uint64_t be64_at(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static bool l2_size_ok(uint64_t s)
{
	for (uint64_t v = 16384; v <= (4u << 20); v *= 2)
		if (s == v)
			return true;
	return false;
}

/* Give the LUKS2 binary header at off (if its magic and size are there)
 * the checksum of its copy as the device holds it. */
static void fix_copy(struct fuzz_disk *d, unsigned char *img, size_t img_len, uint64_t off,
                     const char *magic)
{
	static const unsigned char zero[64];
	unsigned char *area, sum[32];
	uint64_t hs;

	if (off + 512 > img_len || memcmp(img + off, magic, LUKS_MAGIC_LEN) != 0)
		return;
	hs = be64_at(img + off + L2_HDR_SIZE_AT);
	if (!l2_size_ok(hs) || !(area = malloc(hs)))
		return;
	fuzz_disk_bytes(d, area, hs, off);
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	if (ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) &&
	    EVP_DigestUpdate(ctx, area, L2_CSUM_AT) && EVP_DigestUpdate(ctx, zero, 64) &&
	    EVP_DigestUpdate(ctx, area + L2_CSUM_AT + 64, hs - L2_CSUM_AT - 64) &&
	    EVP_DigestFinal_ex(ctx, sum, NULL))
		memcpy(img + off + L2_CSUM_AT, sum, sizeof(sum));
	EVP_MD_CTX_free(ctx);
	free(area);
}

static void fix_csums(struct fuzz_disk *d, unsigned char *img, size_t img_len)
{
	fix_copy(d, img, img_len, 0, LUKS_MAGIC);
	for (uint64_t off = 16384; off <= (4u << 20); off *= 2)
		fix_copy(d, img, img_len, off, LUKS2_MAGIC_2ND);
}

/* Turn off the key slots too dear to try; false if the digest is. */
static bool clamp_kdf(struct luks_hdr *h)
{
	for (int i = 0; i < LUKS_SLOTS_MAX; i++) {
		struct luks_keyslot *s = &h->slots[i];
		const struct luks_kdf *k = &s->kdf;
		bool dear = (uint64_t)s->key_size * s->stripes > FUZZ_AF_MAX;
		if (k->type == LUKS_KDF_PBKDF2)
			dear |= k->iterations > FUZZ_PBKDF2_MAX;
		else
			dear |= k->iterations > FUZZ_ARGON2_TIME_MAX ||
			        k->memory > FUZZ_ARGON2_MEM_MAX || k->cpus > FUZZ_ARGON2_CPUS_MAX;
		if (dear)
			s->active = false;
	}
	for (int i = 0; i < LUKS_SLOTS_MAX; i++)
		if (h->digests[i].used && h->digests[i].iterations > FUZZ_PBKDF2_MAX)
			return false;
	return true;
}

static void open_payload(struct luks_hdr *h, struct vol *dev, const struct luks_secret *vk)
{
	struct vol *pl = NULL;

	err_clear();
	int r = luks_open_payload(h, dev, false, vk, &pl);
	if (verbose)
		fprintf(stderr, "fuzz_luks: payload: %s\n", r < 0 ? err_detail(r) : pl->name);
	if (r == 0) {
		fuzz_read_some(pl, FUZZ_READ_MAX, false);
		vol_close(pl);
	}
}

/* The device as a backup file, restored onto a RAM device just large
 * enough (see the top). */
static void restore(const struct luks_hdr *h, struct vol *file)
{
	static const unsigned char zero[64 << 10];
	char why[512];
	uint64_t size = (h->hdr_area + 4096 + 4095) / 4096 * 4096;
	struct vol *ram;
	const unsigned char *b;
	int r;

	if (luks_backup_diff(h, h, why, sizeof(why)) != 0 || why[0])
		abort();
	if (h->hdr_area > FUZZ_RESTORE_MAX)
		return;
	ram = fuzz_ram_new(size, NULL, 0);
	b = container_of(ram, struct fuzz_ram, vol)->b;
	err_clear();
	if (luks_header_restore(ram, file, false) == 0)
		abort(); /* nothing on ram to check the backup against */
	for (uint64_t i = 0; i < size; i += sizeof(zero))
		if (memcmp(b + i, zero, size - i < sizeof(zero) ? size - i : sizeof(zero)) != 0)
			abort(); /* a refusal wrote */
	err_clear();
	r = luks_header_restore(ram, file, true);
	if (verbose)
		fprintf(stderr, "fuzz_luks: restore --force: %s\n", r < 0 ? err_detail(r) : "ok");
	if (r == 0) {
		err_clear();
		r = luks_header_restore(ram, file, false);
		if (verbose)
			fprintf(stderr, "fuzz_luks: restore again: %s\n",
			        r < 0 ? err_detail(r) : "ok");
		if (r < 0)
			abort();
	}
	vol_close(ram);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_disk d;
	struct luks_hdr *h = NULL;
	unsigned char *img;
	size_t img_len;
	uint64_t bytes;
	int r;

	if (size < 5)
		return 0;
	uint8_t flags = data[0];
	uint32_t bmin = flags & 0x04 ? 4096 : 512;
	img_len = size - 5;
	img = malloc(img_len ? img_len : 1);
	if (!img)
		abort();
	memcpy(img, data + 5, img_len);
	bytes = (uint64_t)((uint32_t)data[1] | (uint32_t)data[2] << 8 | (uint32_t)data[3] << 16 |
	                   (uint32_t)data[4] << 24) *
	        4096;
	if (bytes < img_len)
		bytes = img_len;
	if (bytes > FUZZ_DEV_MAX)
		bytes = FUZZ_DEV_MAX;
	bytes = (bytes + bmin - 1) / bmin * bmin;
	fuzz_disk_init(&d, "fuzzdev", bytes, bmin, 0);
	fuzz_disk_put(&d, 0, img, img_len);
	d.vol.block_max = 1u << 30;
	if (flags & 0x01)
		fix_csums(&d, img, img_len);

	err_clear();
	r = luks_load(&d.vol, &h);
	if (verbose)
		fprintf(stderr, "fuzz_luks: load: %s\n", r < 0 ? err_detail(r) : "ok");
	if (r < 0) {
		if (r < -4095)
			abort();
		goto out;
	}
	luks_dump(h, NULL, devnull);
	restore(h, &d.vol);

	struct luks_secret *vk = NULL;
	if ((flags & 0x02) && clamp_kdf(h)) {
		struct luks_secret *pass = luks_secret_alloc(4);
		if (!pass)
			abort();
		memcpy(pass->data, "fuzz", 4);
		err_clear();
		r = luks_unlock(h, &d.vol, (flags >> 4) - 1, pass, &vk);
		luks_secret_free(pass);
		if (verbose)
			fprintf(stderr, "fuzz_luks: unlock: %s\n", r < 0 ? err_detail(r) : "ok");
		if (r < 0)
			vk = NULL;
		else if (r >= h->nslots || !vk)
			abort();
	}
	if (vk) {
		luks_dump(h, vk, devnull);
		open_payload(h, &d.vol, vk);
	} else if (flags & 0x08) {
		uint32_t ks = h->seg.key_size ? h->seg.key_size : 32;
		vk = luks_secret_alloc(ks);
		if (!vk)
			abort();
		for (uint32_t i = 0; i < ks; i++)
			vk->data[i] = (unsigned char)(i + 1);
		if (clamp_kdf(h))
			luks_verify_key(h, vk);
		open_payload(h, &d.vol, vk);
	}
	luks_secret_free(vk);
	luks_hdr_free(h);
out:
	vol_close(&d.vol);
	free(img);
	return 0;
}
