/* luks_hdr.h — the in-memory LUKS header that both versions fill (key
 * slots, digests, the data segment), the format's constants, KDF
 * parameters, and the secrets (passphrases, keys) that go with them.
 *
 * luks1.c and luks2.c turn their on-disk header into a struct luks_hdr;
 * luks.c unlocks and opens any of them without knowing which version it is.
 * luks_hdr.c keeps the few functions on the header itself. */
#ifndef URAID_LUKS_HDR_H
#define URAID_LUKS_HDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LUKS_MAGIC_LEN 6
#define LUKS_MAGIC "LUKS\xba\xbe"
#define LUKS2_MAGIC_2ND "SKUL\xba\xbe"
#define LUKS_SALT_LEN 32
#define LUKS_KEY_MAX 64   /* bytes of volume key we handle (512 bits) */
#define LUKS_SLOTS_MAX 32 /* LUKS2; LUKS1 has 8 */
#define LUKS1_SLOTS 8

/* ---- secrets ---- */

/* A secret: locked in memory while it lives, wiped when freed. */
struct luks_secret {
	size_t len;
	unsigned char *data;
};

/* Returns NULL on allocation failure. */
struct luks_secret *luks_secret_alloc(size_t len);
void luks_secret_free(struct luks_secret *s);

/* ---- key derivation parameters (used by luks_kdf.c) ---- */

enum luks_kdf_type { LUKS_KDF_PBKDF2, LUKS_KDF_ARGON2I, LUKS_KDF_ARGON2ID };

struct luks_kdf {
	enum luks_kdf_type type;
	char hash[16];       /* pbkdf2: "sha256", "sha1", ... */
	uint32_t iterations; /* pbkdf2 iterations, or argon2 time cost */
	uint32_t memory;     /* argon2: KiB */
	uint32_t cpus;       /* argon2: lanes and threads */
	unsigned char salt[LUKS_SALT_LEN];
	size_t salt_len;
};

/* What the user asked for when a key slot is made (cryptsetup's options). */
struct luks_pbkdf_opts {
	enum luks_kdf_type type; /* default argon2id */
	uint32_t iter_ms;        /* target unlock time; default 2000 */
	uint32_t memory_kib;     /* argon2 memory cap; default 1 GiB */
	uint32_t cpus;           /* argon2 lanes; default min(4, cores) */
	uint32_t force_iter;     /* nonzero: skip the benchmark */
	const char *hash;        /* pbkdf2 hash; default sha256 */
};

/* ---- the header ---- */

/* One key slot, as both versions describe it. */
struct luks_keyslot {
	bool active;
	uint32_t key_size; /* bytes of volume key it holds */
	uint32_t stripes;
	char af_hash[16];
	uint64_t area_offset; /* bytes from the header start */
	uint64_t area_size;
	char area_cipher[64];
	uint32_t area_key_size;
	struct luks_kdf kdf;
	int digest;   /* LUKS2 digest id that checks it; LUKS1: 0 */
	int priority; /* LUKS2: 0 ignore, 1 normal, 2 prefer */
	/* Why the slot cannot be tried (a KDF uraid lacks), or "". */
	char unusable[96];
};

struct luks_digest {
	bool used;
	char hash[16];
	uint32_t iterations;
	unsigned char salt[LUKS_SALT_LEN];
	size_t salt_len;
	unsigned char digest[64];
	size_t digest_len;
	uint32_t keyslots; /* LUKS2: bit i set when keyslot i is listed */
};

struct luks_segment {
	char cipher[64];   /* "aes-xts-plain64" */
	uint64_t offset;   /* bytes */
	uint64_t size;     /* bytes; 0 = to the end of the device */
	uint64_t iv_tweak; /* added to IV numbers, in 512-byte sectors (dm-crypt's iv_offset) */
	uint32_t sector_size;
	uint32_t key_size; /* bytes of volume key */
};

struct luks_version_ops; /* luks_version.h */

struct luks_hdr {
	int version; /* 1 or 2 */
	char uuid[40];
	char label[48];
	char subsystem[48];
	uint64_t seqid;
	uint64_t hdr_size;      /* LUKS2: binary header + JSON area per copy */
	uint64_t keyslots_size; /* LUKS2: bytes of the keyslot area */
	uint64_t data_offset;   /* bytes */
	/* The header area, what cryptsetup's luksHeaderBackup copies
	 * (luks_backup.c): bytes [0, hdr_area) of the device.  LUKS2: both
	 * copies and the keyslots area (2 x hdr_size + keyslots_size); LUKS1:
	 * the phdr and the key material of all eight slots, to the end of the
	 * last.  The backup holds [hdr_gap[0], hdr_gap[1]) as zeros (LUKS1:
	 * the unused sectors after the phdr when key slot 0 starts at 4096). */
	uint64_t hdr_area;
	uint64_t hdr_gap[2];
	int nslots; /* 8 or 32 */
	struct luks_keyslot slots[LUKS_SLOTS_MAX];
	struct luks_digest digests[LUKS_SLOTS_MAX];
	struct luks_segment seg;
	/* The digest bound to the data segment (LUKS1: 0, which every key
	 * slot has).  Only key slots of this digest open the volume; others
	 * are "unbound" (cryptsetup luksAddKey --unbound) and hold some
	 * other key. */
	int seg_digest;
	/* Which copies were valid when loaded (LUKS2); a damaged or stale
	 * copy is rewritten by luks_repair() or the next header write. */
	bool primary_ok, secondary_ok, needs_repair;
	/* The version that loaded it, and that version's own state (LUKS2:
	 * the JSON object and the copies' salts), freed by ops->free. */
	const struct luks_version_ops *ops;
	void *state;
};

void luks_hdr_free(struct luks_hdr *h);

/* Is key slot i bound to the data segment (may it open the volume)? */
bool luks_slot_bound(const struct luks_hdr *h, int i);

#endif
