/* luks1.c — the LUKS1 header (what qemu-img and older cryptsetup
 * create): a 592-byte big-endian phdr at offset 0 with eight key slots,
 * PBKDF2 for both key slots and the master-key digest, and the payload
 * offset in 512-byte sectors.  uraid opens LUKS1 volumes and changes only
 * what needs no new key material: a key slot killed, the UUID (its version
 * table, luks1_ops, listed in luks.c, has no write; to add or change
 * passphrases, convert with `cryptsetup convert --type luks2`). */
#include "core/log.h"
#include "core/vol.h"
#include "luks/luks_hdr.h"
#include "luks/luks_version.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define LUKS1_KEY_ENABLED 0x00AC71F3u
#define LUKS1_KEY_DISABLED 0x0000DEADu
#define LUKS1_DIGEST_LEN 20
#define LUKS1_STRIPES 4000u
#define LUKS1_ITER_MAX INT32_MAX   /* cryptsetup's limit (and OpenSSL's int) */
#define LUKS1_PHDR_PADDED 1024u    /* cryptsetup's struct luks_phdr, padding included */
#define LUKS1_ALIGN_KEYSLOTS 4096u /* where cryptsetup puts key slot 0 */

struct luks1_keyblock {
	uint8_t active[4];
	uint8_t iterations[4];
	uint8_t salt[32];
	uint8_t material_offset[4]; /* sectors */
	uint8_t stripes[4];
};
_Static_assert(sizeof(struct luks1_keyblock) == 48, "LUKS1 key block");

struct luks1_phdr {
	char magic[6];
	uint8_t version[2];
	char cipher_name[32];
	char cipher_mode[32];
	char hash_spec[32];
	uint8_t payload_offset[4]; /* sectors */
	uint8_t key_bytes[4];
	uint8_t mk_digest[LUKS1_DIGEST_LEN];
	uint8_t mk_digest_salt[32];
	uint8_t mk_digest_iter[4];
	char uuid[40];
	struct luks1_keyblock slots[LUKS1_SLOTS];
};
_Static_assert(sizeof(struct luks1_phdr) == 592, "LUKS1 phdr");

static uint32_t be32_get(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void be32_put(uint8_t *p, uint32_t v)
{
	for (int i = 3; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

/* Copy a fixed-width, possibly unterminated field into dst. */
static bool luks1_str(char *dst, size_t dst_len, const char *src, size_t src_len)
{
	size_t n = strnlen(src, src_len);

	if (n == 0 || n >= dst_len)
		return false;
	memcpy(dst, src, n);
	dst[n] = 0;
	return true;
}

/* The key material of all eight slots (enabled or not: cryptsetup lays
 * them all out at format) after the phdr, apart, and before the payload,
 * each of 4000 stripes, as cryptsetup checks before it trusts a slot. */
static int luks1_check_slots(struct vol *dev, const struct luks1_phdr *p, uint32_t key_bytes,
                             uint32_t payload)
{
	uint64_t secs = ((uint64_t)key_bytes * LUKS1_STRIPES + 511) / 512;

	for (int i = 0; i < LUKS1_SLOTS; i++) {
		uint64_t off = be32_get(p->slots[i].material_offset);
		uint32_t st = be32_get(p->slots[i].stripes);
		if (st != LUKS1_STRIPES)
			return err_set(-EINVAL,
			               "%s: LUKS1 key slot %d has %u stripes (LUKS1 uses %u)",
			               dev->name, i, st, LUKS1_STRIPES);
		if (off * 512 < sizeof(*p))
			return err_set(-EINVAL, "%s: LUKS1 key slot %d material lies in the header",
			               dev->name, i);
		if (off + secs > payload)
			return err_set(-EINVAL,
			               "%s: LUKS1 key slot %d material overlaps the payload "
			               "(sectors %" PRIu64 "-%" PRIu64 ", payload at %u)",
			               dev->name, i, off, off + secs - 1, payload);
		for (int j = 0; j < i; j++) {
			uint64_t o = be32_get(p->slots[j].material_offset);
			if (off < o + secs && o < off + secs)
				return err_set(
				    -EINVAL, "%s: LUKS1 key slot %d material overlaps key slot %d",
				    dev->name, i, j);
		}
	}
	return 0;
}

/* The header area as cryptsetup's luksHeaderBackup takes it: up to the end
 * of the last slot's material (luks1_check_slots() keeps that before the
 * payload).  cryptsetup's phdr is 1024 bytes (592 and padding); when slot 0
 * starts at 4096 the sectors between are unused and the backup zeroes
 * them, so that no old signature travels with it. */
static void luks1_hdr_area(struct luks_hdr *h, const struct luks1_phdr *p, uint32_t key_bytes)
{
	uint64_t secs = ((uint64_t)key_bytes * LUKS1_STRIPES + 511) / 512, end = 0;

	for (int i = 0; i < LUKS1_SLOTS; i++) {
		uint64_t off = be32_get(p->slots[i].material_offset);
		if (off + secs > end)
			end = off + secs;
	}
	h->hdr_area = end * 512;
	h->hdr_gap[0] = h->hdr_gap[1] = 0;
	if (be32_get(p->slots[0].material_offset) * 512ull == LUKS1_ALIGN_KEYSLOTS) {
		h->hdr_gap[0] = LUKS1_PHDR_PADDED;
		h->hdr_gap[1] = LUKS1_ALIGN_KEYSLOTS;
	}
}

static int luks1_load(struct vol *dev, struct luks_hdr *h)
{
	_Alignas(VOL_BUF_ALIGN) unsigned char buf[4096]; /* O_DIRECT reads it */
	const struct luks1_phdr *p = (const void *)buf;
	char name[32], mode[32];
	uint32_t key_bytes, payload;
	int r;

	if (dev->size < sizeof(buf))
		return err_set(-EINVAL, "%s: too small for a LUKS1 header", dev->name);
	r = vol_read(dev, buf, sizeof(buf), 0);
	if (r < 0)
		return err_set(r, "%s: reading LUKS1 header: %s", dev->name, strerror(-r));
	if (memcmp(p->magic, LUKS_MAGIC, LUKS_MAGIC_LEN) != 0 || p->version[0] != 0 ||
	    p->version[1] != 1)
		return err_set(-EINVAL, "%s: not a LUKS1 header", dev->name);
	h->version = 1;
	h->nslots = LUKS1_SLOTS;
	key_bytes = be32_get(p->key_bytes);
	payload = be32_get(p->payload_offset);
	if (!luks1_str(name, sizeof(name), p->cipher_name, sizeof(p->cipher_name)) ||
	    !luks1_str(mode, sizeof(mode), p->cipher_mode, sizeof(p->cipher_mode)) ||
	    !luks1_str(h->digests[0].hash, sizeof(h->digests[0].hash), p->hash_spec,
	               sizeof(p->hash_spec)) ||
	    strlen(name) + strlen(mode) + 2 > sizeof(h->seg.cipher))
		return err_set(-EINVAL, "%s: LUKS1 header has bad cipher or hash names", dev->name);
	if (key_bytes == 0 || key_bytes > LUKS_KEY_MAX)
		return err_set(-EINVAL, "%s: LUKS1 key size %u is not supported", dev->name,
		               key_bytes);
	snprintf(h->seg.cipher, sizeof(h->seg.cipher), "%s-%s", name, mode);
	h->seg.key_size = key_bytes;
	h->seg.sector_size = 512;
	h->seg.offset = (uint64_t)payload * 512;
	h->data_offset = h->seg.offset;
	/* A payload beyond the end is refused when it is opened
	 * (luks_open_payload), not here: a header backup ends before it. */
	if (h->seg.offset < sizeof(*p))
		return err_set(-EINVAL, "%s: LUKS1 payload offset %u lies in the header", dev->name,
		               payload);
	luks1_str(h->uuid, sizeof(h->uuid), p->uuid, sizeof(p->uuid));

	h->digests[0].used = true;
	h->digests[0].iterations = be32_get(p->mk_digest_iter);
	memcpy(h->digests[0].salt, p->mk_digest_salt, 32);
	h->digests[0].salt_len = 32;
	memcpy(h->digests[0].digest, p->mk_digest, LUKS1_DIGEST_LEN);
	h->digests[0].digest_len = LUKS1_DIGEST_LEN;
	if (h->digests[0].iterations == 0 || h->digests[0].iterations > LUKS1_ITER_MAX)
		return err_set(-EINVAL, "%s: LUKS1 digest iterations %u out of range (1 to 2^31-1)",
		               dev->name, h->digests[0].iterations);
	/* Every key slot and the segment are on digest 0: all are bound. */
	h->seg_digest = 0;
	r = luks1_check_slots(dev, p, key_bytes, payload);
	if (r < 0)
		return r;
	luks1_hdr_area(h, p, key_bytes);

	for (int i = 0; i < LUKS1_SLOTS; i++) {
		const struct luks1_keyblock *kb = &p->slots[i];
		struct luks_keyslot *s = &h->slots[i];
		uint32_t st = be32_get(kb->active);

		if (st != LUKS1_KEY_ENABLED) {
			if (st != LUKS1_KEY_DISABLED)
				log_warn("%s: LUKS1 key slot %d has a bad state, ignored",
				         dev->name, i);
			continue;
		}
		s->key_size = key_bytes;
		s->stripes = be32_get(kb->stripes);
		strcpy(s->af_hash, h->digests[0].hash);
		s->area_offset = (uint64_t)be32_get(kb->material_offset) * 512;
		s->area_size = ((uint64_t)key_bytes * s->stripes + 511) / 512 * 512;
		strcpy(s->area_cipher, h->seg.cipher);
		s->area_key_size = key_bytes;
		s->kdf.type = LUKS_KDF_PBKDF2;
		strcpy(s->kdf.hash, h->digests[0].hash);
		s->kdf.iterations = be32_get(kb->iterations);
		memcpy(s->kdf.salt, kb->salt, 32);
		s->kdf.salt_len = 32;
		s->digest = 0;
		s->priority = 1;
		if (s->kdf.iterations == 0 || s->kdf.iterations > LUKS1_ITER_MAX)
			return err_set(-EINVAL,
			               "%s: LUKS1 key slot %d: iterations %u out of range (1 to "
			               "2^31-1)",
			               dev->name, i, s->kdf.iterations);
		s->active = true;
		h->digests[0].keyslots |= 1u << i;
	}
	h->primary_ok = true;
	h->secondary_ok = true;
	return 0;
}

static void luks1_dump(const struct luks_hdr *h, FILE *f)
{
	const struct luks_digest *g = &h->digests[0];

	fprintf(f, "LUKS header information for LUKS1\n\n");
	fprintf(f, "Version:       \t1\n");
	fprintf(f, "Cipher name+mode:\t%s\n", h->seg.cipher);
	fprintf(f, "Hash spec:     \t%s\n", g->hash);
	fprintf(f, "Payload offset:\t%" PRIu64 "\n", h->seg.offset / 512);
	fprintf(f, "MK bits:       \t%u\n", h->seg.key_size * 8);
	luks_dump_hex(f, "MK digest:     \t", g->digest, g->digest_len, "               \t");
	luks_dump_hex(f, "MK salt:       \t", g->salt, g->salt_len, "               \t");
	fprintf(f, "MK iterations: \t%u\n", g->iterations);
	fprintf(f, "UUID:          \t%s\n\n", h->uuid);
	for (int i = 0; i < LUKS1_SLOTS; i++) {
		const struct luks_keyslot *s = &h->slots[i];
		if (!s->active) {
			fprintf(f, "Key Slot %d: DISABLED\n", i);
			continue;
		}
		fprintf(f, "Key Slot %d: ENABLED\n", i);
		fprintf(f, "\tIterations:         \t%u\n", s->kdf.iterations);
		luks_dump_hex(f, "\tSalt:               \t", s->kdf.salt, s->kdf.salt_len,
		              "\t                      \t");
		fprintf(f, "\tKey material offset:\t%" PRIu64 "\n", s->area_offset / 512);
		fprintf(f, "\tAF stripes:         \t%u\n", s->stripes);
	}
}

/* Change the phdr in place: its first 4096 bytes are read again, must
 * still be the header h was loaded from (same UUID), and are written back
 * with edit's change. */
static int luks1_edit(const struct luks_hdr *h, struct vol *dev,
                      void (*edit)(struct luks1_phdr *p, const void *arg), const void *arg)
{
	_Alignas(VOL_BUF_ALIGN) unsigned char buf[4096];
	struct luks1_phdr *p = (void *)buf;
	int r;

	r = vol_read(dev, buf, sizeof(buf), 0);
	if (r < 0)
		return err_set(r, "%s: reading LUKS1 header: %s", dev->name, strerror(-r));
	if (memcmp(p->magic, LUKS_MAGIC, LUKS_MAGIC_LEN) != 0 ||
	    strncmp(p->uuid, h->uuid, sizeof(p->uuid)) != 0)
		return err_set(-ESTALE, "%s: the LUKS1 header changed since it was read",
		               dev->name);
	edit(p, arg);
	r = vol_write(dev, buf, sizeof(buf), 0, 0);
	if (r == 0)
		r = vol_flush(dev);
	if (r < 0)
		return err_set(r, "%s: writing the LUKS1 header: %s", dev->name, strerror(-r));
	return 0;
}

/* As cryptsetup disables a slot: state DEAD, no iterations, no salt. */
static void luks1_disable(struct luks1_phdr *p, const void *arg)
{
	struct luks1_keyblock *kb = &p->slots[*(const int *)arg];

	be32_put(kb->active, LUKS1_KEY_DISABLED);
	be32_put(kb->iterations, 0);
	memset(kb->salt, 0, sizeof(kb->salt));
}

static int luks1_kill_slot(struct luks_hdr *h, struct vol *dev, int slot)
{
	struct luks_keyslot *s = &h->slots[slot];
	int r;

	r = luks1_edit(h, dev, luks1_disable, &slot);
	if (r < 0)
		return r;
	s->active = false;
	h->digests[0].keyslots &= ~(1u << slot);
	return luks_area_wipe(dev, s->area_offset, s->area_size);
}

static void luks1_put_uuid(struct luks1_phdr *p, const void *arg)
{
	memset(p->uuid, 0, sizeof(p->uuid));
	memcpy(p->uuid, arg, strnlen(arg, sizeof(p->uuid) - 1));
}

static int luks1_set_uuid(struct luks_hdr *h, struct vol *dev, const char *uuid)
{
	int r = luks1_edit(h, dev, luks1_put_uuid, uuid);

	if (r == 0)
		snprintf(h->uuid, sizeof(h->uuid), "%s", uuid);
	return r;
}

const struct luks_version_ops luks1_ops = {
    .version = 1,
    .load = luks1_load,
    .kill_slot = luks1_kill_slot,
    .set_uuid = luks1_set_uuid,
    .dump = luks1_dump,
};
