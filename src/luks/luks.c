/* luks.c — LUKS whatever the version: probing, loading (through the
 * version's table, luks_version.h), unlocking a key slot, checking the
 * volume key against the digest, and opening the payload as a crypt vol
 * (see luks.h).  The version files fill a struct luks_hdr (luks_hdr.h);
 * nothing here depends on which one did. */
#include "luks/luks.h"

#include "core/log.h"
#include "core/random.h"
#include "disc/crypt.h"
#include "disc/slice.h"
#include "luks/luks_version.h"
#include "member/member.h"

#include <errno.h>
#include <inttypes.h>
#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>

/* The versions luks_probe() and luks_load() know, by version number. */
static const struct luks_version_ops *const luks_versions[] = {&luks1_ops, &luks2_ops};
#define LUKS_NVERSIONS (sizeof(luks_versions) / sizeof(luks_versions[0]))

static const struct luks_version_ops *luks_version(int v)
{
	for (size_t i = 0; i < LUKS_NVERSIONS; i++)
		if (luks_versions[i]->version == v)
			return luks_versions[i];
	return NULL;
}

int luks_probe(struct vol *dev)
{
	unsigned char *b;
	int r;

	if (dev->size < 4096)
		return 0;
	b = vol_buf_alloc(4096);
	if (!b)
		return -ENOMEM;
	r = vol_read(dev, b, 4096, 0);
	if (r < 0) {
		r = err_set(r, "%s: reading for a LUKS header: %s", dev->name, strerror(-r));
	} else if (memcmp(b, LUKS_MAGIC, LUKS_MAGIC_LEN) == 0) {
		r = b[6] << 8 | b[7];
		if (!luks_version(r))
			r = err_set(-ENOTSUP, "%s: LUKS header version %u is not supported",
			            dev->name, b[6] << 8 | b[7]);
	} else {
		r = 0;
		/* A header whose first copy was destroyed (LUKS2's primary)
		 * may still have another, where its version keeps one. */
		for (size_t i = 0; i < LUKS_NVERSIONS && r == 0; i++)
			if (luks_versions[i]->probe_backup &&
			    luks_versions[i]->probe_backup(dev, b) > 0)
				r = luks_versions[i]->version;
	}
	free(b);
	return r;
}

int luks_load(struct vol *dev, struct luks_hdr **out)
{
	struct luks_hdr *h = calloc(1, sizeof(*h));
	int r;

	if (!h)
		return -ENOMEM;
	r = luks_probe(dev);
	if (r == 0)
		r = err_set(-EINVAL, "%s: no LUKS header found", dev->name);
	if (r > 0) {
		h->ops = luks_version(r);
		r = h->ops->load(dev, h);
	}
	/* As cryptsetup refuses to load it ("Device is too small"): key
	 * material beyond the end cannot be read, nor rewritten. */
	if (r == 0 && h->hdr_area > dev->size)
		r = err_set(-EINVAL,
		            "%s: %" PRIu64 " bytes is too small for its LUKS%d header, whose "
		            "header area takes %" PRIu64 " bytes",
		            dev->name, dev->size, h->version, h->hdr_area);
	if (r < 0) {
		luks_hdr_free(h);
		return r;
	}
	*out = h;
	return 0;
}

/* The digest that checks the data segment's volume key.  Never a key
 * slot's own digest: an unbound slot's digest checks some other key. */
static const struct luks_digest *luks_segment_digest(const struct luks_hdr *h)
{
	int d = h->seg_digest;

	return d >= 0 && d < LUKS_SLOTS_MAX && h->digests[d].used ? &h->digests[d] : NULL;
}

static int luks_digest_check(const struct luks_digest *g, const struct luks_secret *vk)
{
	unsigned char d[64];
	int r;

	if (!g || g->digest_len == 0 || g->digest_len > sizeof(d))
		return -EINVAL;
	r = luks_pbkdf2(g->hash, vk->data, vk->len, g->salt, g->salt_len, g->iterations, d,
	                g->digest_len);
	if (r == 0 && CRYPTO_memcmp(d, g->digest, g->digest_len) != 0)
		r = -EPERM;
	explicit_bzero(d, sizeof(d));
	return r;
}

int luks_verify_key(const struct luks_hdr *h, const struct luks_secret *vk)
{
	int r = luks_digest_check(luks_segment_digest(h), vk);

	if (r == -EPERM)
		return err_set(r, "the volume key does not match the header's digest");
	return r;
}

/* Decrypt one key slot with the passphrase.  -EPERM: not this slot.
 * The material is read into an I/O buffer (ciphertext, as on the disk)
 * and decrypted in locked memory: decrypted, it is the key, split. */
static int luks_slot_open(const struct luks_hdr *h, struct vol *dev, int i,
                          const struct luks_secret *pass, struct luks_secret *vk)
{
	const struct luks_keyslot *s = &h->slots[i];
	uint64_t mat_len = ((uint64_t)s->key_size * s->stripes + 511) / 512 * 512;
	struct luks_secret *dk = luks_secret_alloc(s->area_key_size);
	struct luks_secret *split = luks_secret_alloc(mat_len);
	unsigned char *mat = vol_buf_alloc(mat_len);
	int r;

	if (!dk || !split || !mat) {
		r = -ENOMEM;
		goto out;
	}
	if (s->area_offset + mat_len > dev->size) {
		r = err_set(-EINVAL, "%s: key slot %d lies beyond the device", dev->name, i);
		goto out;
	}
	/* Checked before the slow KDF, so an unknown cipher is reported as
	 * such and not as a wrong passphrase. */
	r = luks_area_cipher_ok(s->area_cipher, s->area_key_size);
	if (r < 0)
		goto out;
	r = vol_read_any(dev, mat, mat_len, s->area_offset);
	if (r < 0) {
		r = err_set(r, "%s: reading key slot %d: %s", dev->name, i, strerror(-r));
		goto out;
	}
	r = luks_kdf_derive(&s->kdf, pass->data, pass->len, dk->data, dk->len);
	if (r < 0)
		goto out;
	memcpy(split->data, mat, mat_len);
	r = luks_area_crypt(s->area_cipher, dk->data, dk->len, split->data, mat_len, false);
	if (r < 0)
		goto out;
	r = luks_af_merge(split->data, s->key_size, s->stripes, s->af_hash, vk->data);
	if (r < 0)
		goto out;
	r = luks_digest_check(luks_segment_digest(h), vk);
out:
	if (mat) {
		explicit_bzero(mat, mat_len);
		free(mat);
	}
	luks_secret_free(split);
	luks_secret_free(dk);
	return r;
}

int luks_unlock(struct luks_hdr *h, struct vol *dev, int slot, const struct luks_secret *pass,
                struct luks_secret **vk)
{
	struct luks_secret *k = NULL;
	int r = -EPERM, tried = 0, unbound = 0, unusable = -1;

	if (slot >= h->nslots || (slot >= 0 && !h->slots[slot].active))
		return err_set(-ENOENT, "key slot %d is not active", slot);
	if (slot >= 0 && !luks_slot_bound(h, slot))
		return err_set(-EPERM,
		               "key slot %d is unbound: it does not hold the data "
		               "segment's key",
		               slot);
	if (slot >= 0 && h->slots[slot].unusable[0])
		return err_set(-ENOTSUP, "key slot %d: %s", slot, h->slots[slot].unusable);
	/* Priority 2 ("prefer") first, then normal; priority 0 ("ignore") only
	 * when asked for by number, as cryptsetup does. */
	for (int pass_no = 0; pass_no < 2 && r == -EPERM; pass_no++) {
		if (slot >= 0 && pass_no == 1)
			break;
		for (int i = 0; i < h->nslots && r == -EPERM; i++) {
			const struct luks_keyslot *s = &h->slots[i];
			if (!s->active || (slot >= 0 && i != slot))
				continue;
			if (slot < 0 && (s->priority == 0 || (pass_no == 0) != (s->priority == 2)))
				continue;
			/* Only slots of the segment's digest: an unbound one
			 * would "open" the volume with a key of its own. */
			if (!luks_slot_bound(h, i)) {
				unbound++;
				continue;
			}
			if (s->unusable[0]) {
				unusable = i;
				continue;
			}
			luks_secret_free(k);
			k = luks_secret_alloc(s->key_size);
			if (!k)
				return -ENOMEM;
			tried++;
			r = luks_slot_open(h, dev, i, pass, k);
			if (r == 0) {
				*vk = k;
				return i;
			}
		}
	}
	luks_secret_free(k);
	if (r != -EPERM)
		return r;
	if (unusable >= 0)
		return err_set(-EPERM, "no key slot matches this passphrase (key slot %d: %s)",
		               unusable, h->slots[unusable].unusable);
	if (unbound)
		return err_set(-EPERM, tried ? "no key slot for the data segment matches this "
		                               "passphrase (unbound key slots are not tried)"
		                             : "no key slot for the data segment (only unbound "
		                               "ones)");
	return err_set(-EPERM,
	               tried ? "no key slot matches this passphrase" : "no active key slot");
}

int luks_open_payload(struct luks_hdr *h, struct vol *dev, bool owns_dev,
                      const struct luks_secret *vk, struct vol **out)
{
	const struct luks_segment *s = &h->seg;
	struct crypt_params p = {0};
	struct vol *sl = NULL;
	uint64_t size;
	char *name = NULL;
	int r;

	if (!s->cipher[0] || !s->sector_size) {
		r = err_set(-EINVAL, "%s: LUKS header has no data segment", dev->name);
		goto fail;
	}
	if (s->offset >= dev->size || (s->size && s->size > dev->size - s->offset)) {
		r = err_set(-EINVAL,
		            "%s: LUKS data segment lies beyond the device "
		            "(offset %" PRIu64 ", device %" PRIu64 " bytes)",
		            dev->name, s->offset, dev->size);
		goto fail;
	}
	size = s->size ? s->size : dev->size - s->offset;
	size = size / s->sector_size * s->sector_size;
	if (size == 0 || s->offset % dev->block_min) {
		r = err_set(-EINVAL, "%s: LUKS data segment is empty or misaligned", dev->name);
		goto fail;
	}
	if (vk->len != s->key_size && s->key_size) {
		r = err_set(-EINVAL, "%s: volume key of %zu bytes, segment wants %u", dev->name,
		            vk->len, s->key_size);
		goto fail;
	}
	if (asprintf(&name, "luks%d(%s)", h->version, dev->name) < 0) {
		name = NULL;
		r = -ENOMEM;
		goto fail;
	}
	r = slice_open(dev, s->offset, size, owns_dev, name, &sl);
	if (r < 0) {
		r = err_set(r, "%s: cannot cut the LUKS payload: %s", dev->name, strerror(-r));
		goto fail;
	}
	p.cipher = s->cipher;
	p.key = vk->data;
	p.key_len = vk->len;
	p.sector_size = s->sector_size;
	p.iv_offset = s->iv_tweak;
	r = crypt_open(sl, &p, true, name, out);
	if (r < 0)
		vol_close(sl); /* closes dev too when we own it */
	free(name);
	return r;
fail:
	free(name);
	if (owns_dev)
		vol_close(dev);
	return r;
}

int luks_repair(struct luks_hdr *h, struct vol *dev)
{
	int r;

	if (!h->needs_repair)
		return 0;
	if (!h->ops->write)
		return -ENOTSUP;
	r = h->ops->write(h, dev);
	if (r == 0)
		log_warn("%s: LUKS%d header copies rewritten (seqid %" PRIu64 ")", dev->name,
		         h->version, h->seqid);
	return r;
}

int luks_keyslot_kill(struct luks_hdr *h, struct vol *dev, int slot)
{
	if (slot < 0 || slot >= h->nslots || !h->slots[slot].active)
		return err_set(-ENOENT, "%s: key slot %d is not active", dev->name, slot);
	if (!h->ops->kill_slot)
		return err_set(-ENOTSUP, "%s: LUKS%d key slots cannot be changed", dev->name,
		               h->version);
	return h->ops->kill_slot(h, dev, slot);
}

int luks_uuid_check(const char *uuid, char out[40])
{
	size_t i;

	for (i = 0; uuid[i] && i < 36; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;
		char c = uuid[i];
		if (dash ? c != '-'
		         : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
		             (c >= 'A' && c <= 'F')))
			break;
		out[i] = c >= 'A' && c <= 'F' ? (char)(c - 'A' + 'a') : c;
	}
	if (i != 36 || uuid[i])
		return err_set(-EINVAL,
		               "'%s' is not a UUID (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, "
		               "hexadecimal)",
		               uuid);
	out[36] = 0;
	return 0;
}

int luks_set_uuid(struct luks_hdr *h, struct vol *dev, const char *uuid)
{
	char u[40];
	int r = luks_uuid_check(uuid, u);

	if (r < 0)
		return r;
	if (!h->ops->set_uuid)
		return err_set(-ENOTSUP, "%s: the LUKS%d UUID cannot be changed", dev->name,
		               h->version);
	return h->ops->set_uuid(h, dev, u);
}

int luks_area_wipe(struct vol *dev, uint64_t off, uint64_t size)
{
	uint64_t bm = dev->block_min ? dev->block_min : 1;
	uint64_t start = off / bm * bm, end = (off + size + bm - 1) / bm * bm;
	unsigned char *buf = vol_buf_alloc(end - start);
	int r = 0;

	if (!buf)
		return -ENOMEM;
	/* Partly covered blocks: read first, so their other bytes stay. */
	if (start != off || end != off + size)
		r = vol_read(dev, buf, end - start, start);
	if (r == 0)
		r = random_fill(buf + (off - start), size);
	if (r == 0)
		r = vol_write(dev, buf, end - start, start, 0);
	if (r == 0)
		r = vol_flush(dev);
	free(buf);
	if (r < 0)
		return err_set(r, "%s: wiping key-slot area at %" PRIu64 ": %s", dev->name, off,
		               err_detail(r));
	return 0;
}
