/* luks2.c — the LUKS2 on-disk format: two copies of a 4096-byte big-endian
 * binary header, each followed by a JSON area that describes key slots,
 * digests, segments and tokens (cryptsetup docs/on-disk-format-luks2.pdf).
 *
 *   0        primary binary header ("LUKS\xba\xbe"), JSON area after it
 *   hdr_size secondary binary header ("SKUL\xba\xbe"), JSON area after it
 *   2*hdr_size .. 2*hdr_size+keyslots_size   key-slot areas (AF material)
 *   segment offset (16 MiB by default)       encrypted data
 *
 * Each copy carries a SHA-256 over binary header + JSON area (csum field
 * zeroed) and a seqid; a write rewrites both with seqid+1 (secondary last
 * is not needed: the valid copy with the highest seqid wins).  The JSON
 * object loaded from disk stays the source of truth, so fields we do not
 * interpret (tokens, flags, priorities) survive our writes.
 *
 * luks.c reaches the reading side through luks2_ops (luks_version.h);
 * luks2.h is the writing side's public face. */
#include "luks/luks2.h"

#include "core/log.h"
#include "core/random.h"
#include "luks/luks_af.h"
#include "luks/luks_cipher.h"
#include "luks/luks_kdf.h"
#include "luks/luks_version.h"

#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#define LUKS2_BIN_SIZE 4096
#define LUKS2_DEFAULT_HDR_SIZE 16384u
#define LUKS2_DEFAULT_DATA_OFFSET (16u << 20)
#define LUKS2_STRIPES 4000u
#define LUKS2_AREA_ALIGN 4096u
#define LUKS2_DIGEST_MAX_MS 125u
#define LUKS2_ARGON2_MAX_MEMORY (4u << 20) /* KiB: cryptsetup's limit, 4 GiB */
#define LUKS2_ARGON2_MAX_CPUS 64u

/* The binary header (all integers big-endian). */
struct luks2_bin {
	char magic[6];
	uint8_t version[2];
	uint8_t hdr_size[8];
	uint8_t seqid[8];
	char label[48];
	char checksum_alg[32];
	uint8_t salt[64];
	char uuid[40];
	char subsystem[48];
	uint8_t hdr_offset[8];
	char pad1[184];
	uint8_t csum[64];
	char pad2[7 * 512];
};
_Static_assert(sizeof(struct luks2_bin) == LUKS2_BIN_SIZE, "LUKS2 binary header");
_Static_assert(offsetof(struct luks2_bin, csum) == 448, "LUKS2 csum offset");
_Static_assert(offsetof(struct luks2_bin, hdr_offset) == 256, "LUKS2 hdr_offset");

/* h->state of a LUKS2 header. */
struct luks2_state {
	json_object *json;
	unsigned char salt[2][64]; /* per copy, kept across rewrites */
};

static struct luks2_state *l2(const struct luks_hdr *h)
{
	return h->state;
}

static uint64_t be64_get(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static void be64_put(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static void luks2_state_free(void *state)
{
	struct luks2_state *s = state;

	if (!s)
		return;
	json_object_put(s->json);
	free(s);
}

static bool luks2_hdr_size_ok(uint64_t s)
{
	for (uint64_t v = 16384; v <= (4u << 20); v *= 2)
		if (s == v)
			return true;
	return false;
}

/* ---- small JSON helpers ---- */

static json_object *jget(json_object *o, const char *key)
{
	json_object *v = NULL;

	if (!o || !json_object_object_get_ex(o, key, &v))
		return NULL;
	return v;
}

static const char *jstr(json_object *o, const char *key)
{
	json_object *v = jget(o, key);

	return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

/* A u64 stored as a decimal string (offsets, sizes), as LUKS2 writes
 * them; luks2_check() has refused any other type before we get here. */
static int ju64(json_object *o, const char *key, uint64_t *out)
{
	json_object *v = jget(o, key);
	const char *s;
	char *end;

	if (!v || !json_object_is_type(v, json_type_string))
		return -EINVAL;
	s = json_object_get_string(v);
	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	*out = strtoull(s, &end, 10);
	return errno || *end ? -EINVAL : 0;
}

/* A u32 stored as a JSON integer (sizes in bytes, counts, costs). */
static int ju32(json_object *o, const char *key, uint32_t *out)
{
	json_object *v = jget(o, key);
	int64_t i;

	if (!v || !json_object_is_type(v, json_type_int))
		return -EINVAL;
	errno = 0;
	i = json_object_get_int64(v);
	if (errno || i < 0 || i > UINT32_MAX)
		return -EINVAL;
	*out = (uint32_t)i;
	return 0;
}

static json_object *jstr_new_u64(uint64_t v)
{
	char s[24];

	snprintf(s, sizeof(s), "%" PRIu64, v);
	return json_object_new_string(s);
}

static int b64_decode(const char *s, unsigned char *out, size_t max, size_t *len)
{
	size_t n = strlen(s), pad = 0;
	unsigned char tmp[(LUKS_SALT_LEN + 64) * 2];
	int r;

	if (n == 0 || n % 4 || n / 4 * 3 > sizeof(tmp))
		return -EINVAL;
	r = EVP_DecodeBlock(tmp, (const unsigned char *)s, (int)n);
	if (r < 0)
		return -EINVAL;
	if (s[n - 1] == '=')
		pad++;
	if (s[n - 2] == '=')
		pad++;
	if ((size_t)r - pad > max)
		return -EINVAL;
	*len = (size_t)r - pad;
	memcpy(out, tmp, *len);
	return 0;
}

static json_object *b64_new(const unsigned char *p, size_t len)
{
	char s[((LUKS_SALT_LEN + 64) / 3 + 2) * 4 + 1];

	if (len > LUKS_SALT_LEN + 64)
		return NULL;
	EVP_EncodeBlock((unsigned char *)s, p, (int)len);
	return json_object_new_string(s);
}

/* ---- JSON -> struct luks_hdr ---- */

static int luks2_id(const char *key)
{
	char *end;
	long v = strtol(key, &end, 10);

	return *key && !*end && v >= 0 && v < LUKS_SLOTS_MAX ? (int)v : -1;
}

/* -ENOTSUP: a KDF type uraid does not know (the slot is left unusable). */
static int luks2_parse_kdf(json_object *k, struct luks_kdf *kdf)
{
	const char *type = jstr(k, "type"), *salt = jstr(k, "salt");

	memset(kdf, 0, sizeof(*kdf));
	if (!type || !salt)
		return -EINVAL;
	if (luks_kdf_parse(type, &kdf->type) < 0)
		return -ENOTSUP;
	if (b64_decode(salt, kdf->salt, sizeof(kdf->salt), &kdf->salt_len) < 0)
		return -EINVAL;
	if (kdf->type == LUKS_KDF_PBKDF2) {
		const char *hash = jstr(k, "hash");
		if (!hash || strlen(hash) >= sizeof(kdf->hash) ||
		    ju32(k, "iterations", &kdf->iterations) < 0)
			return -EINVAL;
		strcpy(kdf->hash, hash);
		return 0;
	}
	if (ju32(k, "time", &kdf->iterations) < 0 || ju32(k, "memory", &kdf->memory) < 0 ||
	    ju32(k, "cpus", &kdf->cpus) < 0)
		return -EINVAL;
	/* What an unlock would allocate and start, bounded before it does:
	 * argon2 touches every KiB of its memory and runs a thread per lane,
	 * and a header could ask for 4 TiB or 2^24 lanes. */
	if (kdf->iterations == 0 || kdf->cpus == 0 || kdf->cpus > LUKS2_ARGON2_MAX_CPUS ||
	    kdf->memory < 8 * kdf->cpus || kdf->memory > LUKS2_ARGON2_MAX_MEMORY)
		return -EINVAL;
	return 0;
}

static int luks2_parse_keyslot(struct luks_hdr *h, int id, json_object *ks)
{
	struct luks_keyslot *s = &h->slots[id];
	json_object *af = jget(ks, "af"), *area = jget(ks, "area");
	const char *type = jstr(ks, "type"), *t;
	uint64_t end;
	int r;

	memset(s, 0, sizeof(*s));
	s->digest = -1;
	s->priority = 1;
	if (!type || strcmp(type, "luks2") != 0)
		return err_set(-ENOTSUP, "key slot %d has unsupported type '%s'", id,
		               type ? type : "?");
	if (ju32(ks, "key_size", &s->key_size) < 0 || !af || !area || !(t = jstr(af, "type")) ||
	    strcmp(t, "luks1") != 0 || ju32(af, "stripes", &s->stripes) < 0 ||
	    !(t = jstr(af, "hash")) || strlen(t) >= sizeof(s->af_hash))
		return err_set(-EINVAL, "key slot %d: bad af or key_size", id);
	strcpy(s->af_hash, t);
	if (!(t = jstr(area, "type")) || strcmp(t, "raw") != 0 ||
	    ju64(area, "offset", &s->area_offset) < 0 || ju64(area, "size", &s->area_size) < 0 ||
	    !(t = jstr(area, "encryption")) ||
	    luks_cipher_name(t, s->area_cipher, sizeof(s->area_cipher)) < 0 ||
	    ju32(area, "key_size", &s->area_key_size) < 0)
		return err_set(-EINVAL, "key slot %d: bad area", id);
	r = luks2_parse_kdf(jget(ks, "kdf"), &s->kdf);
	if (r == -ENOTSUP) {
		t = jstr(jget(ks, "kdf"), "type");
		snprintf(s->unusable, sizeof(s->unusable), "KDF '%s' is not supported%s", t,
		         strcmp(t, "argon2") == 0 ? " (cryptsetup writes argon2i or argon2id, "
		                                    "and cannot open it either)"
		                                  : "");
	} else if (r < 0) {
		return err_set(-EINVAL, "key slot %d: bad kdf", id);
	}
	if (jget(ks, "priority"))
		s->priority = json_object_get_int(jget(ks, "priority"));
	if (s->key_size == 0 || s->key_size > LUKS_KEY_MAX || s->stripes == 0 ||
	    s->stripes > 100000 || s->area_key_size == 0 || s->area_key_size > LUKS_KEY_MAX)
		return err_set(-EINVAL, "key slot %d: bad sizes", id);
	end = s->area_offset + s->area_size;
	if (s->area_offset < 2 * h->hdr_size || end < s->area_offset ||
	    end > 2 * h->hdr_size + h->keyslots_size ||
	    (uint64_t)s->key_size * s->stripes > s->area_size)
		return err_set(-EINVAL, "key slot %d: area outside the key-slot space", id);
	s->active = true;
	return 0;
}

static int luks2_parse_digest(struct luks_hdr *h, int id, json_object *d)
{
	struct luks_digest *g = &h->digests[id];
	const char *type = jstr(d, "type"), *hash = jstr(d, "hash");
	json_object *ks = jget(d, "keyslots");

	memset(g, 0, sizeof(*g));
	if (!type || strcmp(type, "pbkdf2") != 0)
		return err_set(-ENOTSUP, "digest %d has unsupported type '%s'", id,
		               type ? type : "?");
	if (!hash || strlen(hash) >= sizeof(g->hash) || ju32(d, "iterations", &g->iterations) < 0 ||
	    !jstr(d, "salt") || !jstr(d, "digest") ||
	    b64_decode(jstr(d, "salt"), g->salt, sizeof(g->salt), &g->salt_len) < 0 ||
	    b64_decode(jstr(d, "digest"), g->digest, sizeof(g->digest), &g->digest_len) < 0 ||
	    !ks || !json_object_is_type(ks, json_type_array))
		return err_set(-EINVAL, "digest %d is malformed", id);
	strcpy(g->hash, hash);
	for (size_t i = 0; i < json_object_array_length(ks); i++) {
		const char *k = json_object_get_string(json_object_array_get_idx(ks, i));
		int n = k ? luks2_id(k) : -1;
		if (n >= 0)
			g->keyslots |= 1u << n;
	}
	g->used = true;
	return 0;
}

/* Fill h from l2(h)->json.  Binary-header fields are already set. */
static int luks2_parse(struct luks_hdr *h)
{
	json_object *j = l2(h)->json, *ks = jget(j, "keyslots"), *dg = jget(j, "digests"),
	            *sg = jget(j, "segments"), *cfg = jget(j, "config"), *seg = NULL;
	uint64_t json_size;
	int seg_id = -1, r;

	memset(h->slots, 0, sizeof(h->slots));
	memset(h->digests, 0, sizeof(h->digests));
	memset(&h->seg, 0, sizeof(h->seg));
	h->nslots = LUKS_SLOTS_MAX;
	h->seg_digest = -1;
	if (!ks || !dg || !sg || !cfg || !jget(j, "tokens"))
		return err_set(-EINVAL, "LUKS2 metadata lacks keyslots, digests, "
		                        "segments, tokens or config");
	/* json_object_object_foreach() needs objects (on anything else it
	 * dereferences NULL). */
	if (!json_object_is_type(ks, json_type_object) ||
	    !json_object_is_type(dg, json_type_object) ||
	    !json_object_is_type(sg, json_type_object))
		return err_set(-EINVAL,
		               "LUKS2 metadata: keyslots, digests or segments is not an object");
	if (ju64(cfg, "json_size", &json_size) < 0 || json_size != h->hdr_size - LUKS2_BIN_SIZE ||
	    ju64(cfg, "keyslots_size", &h->keyslots_size) < 0 ||
	    h->keyslots_size % LUKS2_AREA_ALIGN)
		return err_set(-EINVAL, "LUKS2 config: bad json_size or keyslots_size");
	/* luks2_check() bounds keyslots_size (128 MiB) before this is reached. */
	h->hdr_area = 2 * h->hdr_size + h->keyslots_size;
	h->hdr_gap[0] = h->hdr_gap[1] = 0;
	json_object_object_foreach(ks, key, val)
	{
		int id = luks2_id(key);
		if (id < 0)
			return err_set(-EINVAL, "bad key slot id '%s'", key);
		r = luks2_parse_keyslot(h, id, val);
		if (r < 0)
			return r;
	}
	json_object_object_foreach(dg, dkey, dval)
	{
		int id = luks2_id(dkey);
		if (id < 0)
			return err_set(-EINVAL, "bad digest id '%s'", dkey);
		r = luks2_parse_digest(h, id, dval);
		if (r < 0)
			return r;
		for (int i = 0; i < LUKS_SLOTS_MAX; i++)
			if (h->digests[id].keyslots & (1u << i) && h->slots[i].active)
				h->slots[i].digest = id;
	}
	json_object_object_foreach(sg, skey, sval)
	{
		int id = luks2_id(skey);
		if (id < 0)
			return err_set(-EINVAL, "bad segment id '%s'", skey);
		if (seg_id >= 0)
			return err_set(-ENOTSUP, "LUKS2 header has several segments "
			                         "(reencryption?): not supported");
		seg_id = id;
		seg = sval;
	}
	if (!seg) {
		h->data_offset = 2 * h->hdr_size + h->keyslots_size;
		return 0; /* luks2_check() refuses this on disk */
	}
	{
		struct luks_segment *s = &h->seg;
		const char *type = jstr(seg, "type"), *enc = jstr(seg, "encryption"),
		           *size = jstr(seg, "size");
		if (!type || strcmp(type, "crypt") != 0)
			return err_set(-ENOTSUP, "segment type '%s' is not supported",
			               type ? type : "?");
		if (ju64(seg, "offset", &s->offset) < 0 || !size ||
		    ju64(seg, "iv_tweak", &s->iv_tweak) < 0 || !enc ||
		    luks_cipher_name(enc, s->cipher, sizeof(s->cipher)) < 0 ||
		    ju32(seg, "sector_size", &s->sector_size) < 0)
			return err_set(-EINVAL, "segment %d is malformed", seg_id);
		if (strcmp(size, "dynamic") == 0)
			s->size = 0;
		else if (ju64(seg, "size", &s->size) < 0)
			return err_set(-EINVAL, "segment %d: bad size", seg_id);
		if (s->sector_size != 512 && s->sector_size != 1024 && s->sector_size != 2048 &&
		    s->sector_size != 4096)
			return err_set(-EINVAL, "segment %d: bad sector size %u", seg_id,
			               s->sector_size);
		if (s->offset % 512 || s->offset < 2 * h->hdr_size)
			return err_set(-EINVAL, "segment %d: bad offset", seg_id);
		/* Key material cannot reach the data: luks2_check() keeps the
		 * areas inside the keyslots area and that ahead of the data. */
		h->data_offset = s->offset;
		/* The volume key size is that of the key slots bound to the
		 * digest that lists this segment. */
		json_object_object_foreach(dg, gkey, gval)
		{
			json_object *segs = jget(gval, "segments");
			int gid = luks2_id(gkey);
			if (segs && !json_object_is_type(segs, json_type_array))
				return err_set(-EINVAL, "digest %d: segments is not an array", gid);
			for (size_t i = 0; segs && i < json_object_array_length(segs); i++) {
				const char *sk =
				    json_object_get_string(json_object_array_get_idx(segs, i));
				if (!sk || luks2_id(sk) != seg_id)
					continue;
				h->seg_digest = gid;
				for (int k = 0; k < LUKS_SLOTS_MAX; k++)
					if (h->slots[k].active && h->slots[k].digest == gid)
						s->key_size = h->slots[k].key_size;
			}
		}
	}
	return 0;
}

/* ---- reading the binary headers ---- */

struct luks2_copy {
	bool ok;
	bool magic; /* the magic is there (the copy may still be bad) */
	uint64_t seqid, hdr_size;
	_Alignas(VOL_BUF_ALIGN) struct luks2_bin bin; /* read straight from dev */
	json_object *json;
	int rule; /* the copy is intact but breaks a rule: -EINVAL/-ENOTSUP */
	char why[192];
};

static int luks2_csum(const unsigned char *area, size_t len, unsigned char out[32])
{
	static const unsigned char zero[64];
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	size_t co = offsetof(struct luks2_bin, csum);
	int ok;

	if (!ctx)
		return -ENOMEM;
	ok = EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) && EVP_DigestUpdate(ctx, area, co) &&
	     EVP_DigestUpdate(ctx, zero, 64) &&
	     EVP_DigestUpdate(ctx, area + co + 64, len - co - 64) &&
	     EVP_DigestFinal_ex(ctx, out, NULL);
	EVP_MD_CTX_free(ctx);
	return ok ? 0 : -EIO;
}

/* The JSON area: one JSON object from its first byte, then zeros to the
 * end (as cryptsetup demands: nothing may hide after the text). */
static int luks2_read_json(const unsigned char *a, size_t len, struct luks2_copy *c)
{
	size_t text = strnlen((const char *)a, len);
	json_tokener *tok;

	if (text == len) {
		snprintf(c->why, sizeof(c->why), "JSON area is not terminated");
		return 0;
	}
	tok = json_tokener_new();
	if (!tok)
		return -ENOMEM;
	if (a[0] == '{')
		c->json = json_tokener_parse_ex(tok, (const char *)a, (int)text);
	if (!c->json || json_tokener_get_error(tok) != json_tokener_success ||
	    !json_object_is_type(c->json, json_type_object)) {
		snprintf(c->why, sizeof(c->why), "JSON metadata does not parse");
	} else {
		size_t end = json_tokener_get_parse_end(tok);
		while (end < len && a[end] == 0)
			end++;
		if (end < len) {
			c->rule = -EINVAL;
			snprintf(c->why, sizeof(c->why),
			         "non-zero bytes after the JSON text (at byte %zu of the "
			         "JSON area)",
			         end);
		}
	}
	if (c->why[0]) {
		json_object_put(c->json);
		c->json = NULL;
	}
	json_tokener_free(tok);
	return 0;
}

/* Read and check one copy at off.  I/O errors are returned; a bad copy is
 * reported through c->ok / c->why. */
static int luks2_read_copy(struct vol *dev, uint64_t off, bool primary, struct luks2_copy *c)
{
	const char *magic = primary ? LUKS_MAGIC : LUKS2_MAGIC_2ND;
	unsigned char *area = NULL, sum[32];
	const struct luks2_bin *b = &c->bin;
	int r;

	memset(c, 0, sizeof(*c));
	if (off + LUKS2_BIN_SIZE > dev->size) {
		snprintf(c->why, sizeof(c->why), "beyond the end of the device");
		return 0;
	}
	r = vol_read(dev, &c->bin, LUKS2_BIN_SIZE, off);
	if (r < 0)
		return err_set(r, "reading LUKS2 header at %" PRIu64 ": %s", off, strerror(-r));
	c->hdr_size = be64_get(b->hdr_size);
	c->seqid = be64_get(b->seqid);
	if (memcmp(b->magic, magic, LUKS_MAGIC_LEN) != 0) {
		snprintf(c->why, sizeof(c->why), "no magic");
		return 0;
	}
	c->magic = true;
	if (b->version[0] != 0 || b->version[1] != 2 || !luks2_hdr_size_ok(c->hdr_size) ||
	    be64_get(b->hdr_offset) != off ||
	    strncmp(b->checksum_alg, "sha256", sizeof(b->checksum_alg)) != 0 ||
	    off + c->hdr_size > dev->size) {
		snprintf(c->why, sizeof(c->why), "bad version, size, offset or checksum algorithm");
		return 0;
	}
	area = vol_buf_alloc(c->hdr_size);
	if (!area)
		return -ENOMEM;
	r = vol_read(dev, area, c->hdr_size, off);
	if (r < 0) {
		r = err_set(r, "reading LUKS2 metadata at %" PRIu64 ": %s", off, strerror(-r));
		goto out;
	}
	r = luks2_csum(area, c->hdr_size, sum);
	if (r < 0)
		goto out;
	if (memcmp(sum, b->csum, sizeof(sum)) != 0 ||
	    memcmp(area, b, offsetof(struct luks2_bin, csum)) != 0) {
		snprintf(c->why, sizeof(c->why), "checksum mismatch");
		goto out;
	}
	r = luks2_read_json(area + LUKS2_BIN_SIZE, c->hdr_size - LUKS2_BIN_SIZE, c);
	if (r < 0 || !c->json)
		goto out;
	c->rule = luks2_check(c->json, c->hdr_size, c->why, sizeof(c->why));
	c->ok = c->rule == 0;
	if (!c->ok) {
		json_object_put(c->json);
		c->json = NULL;
	}
out:
	free(area);
	return r;
}

/* LVM2's label checksum: CRC-32 (reflected 0xedb88320) seeded with
 * 0xf597a6cf, without the final inversion. */
static uint32_t lvm2_crc(const unsigned char *p, size_t n)
{
	uint32_t crc = 0xf597a6cfu;

	for (size_t i = 0; i < n; i++) {
		crc ^= p[i];
		for (int k = 0; k < 8; k++)
			crc = crc >> 1 ^ (0xedb88320u & -(crc & 1));
	}
	return crc;
}

/* Is there a signature of another format in the first 8 KiB?  1 with
 * what it is, 0 if none, -errno on a read error. */
static int luks2_foreign_signature(struct vol *dev, char *what, size_t len)
{
	unsigned char *b;
	int r, found = 0;

	if (dev->size < 8192)
		return 0;
	b = vol_buf_alloc(8192);
	if (!b)
		return -ENOMEM;
	r = vol_read(dev, b, 8192, 0);
	if (r < 0) {
		free(b);
		return err_set(r, "%s: reading for other signatures: %s", dev->name, strerror(-r));
	}
	/* LVM2 label: "LABELONE" in one of the first four sectors, naming
	 * its own sector, with "LVM2 001" and a good checksum. */
	for (uint64_t sec = 0; sec < 4 && !found; sec++) {
		const unsigned char *l = b + sec * 512;
		uint64_t at = 0;
		uint32_t crc = 0;
		for (int i = 7; i >= 0; i--)
			at = at << 8 | l[8 + i];
		for (int i = 3; i >= 0; i--)
			crc = crc << 8 | l[16 + i];
		if (memcmp(l, "LABELONE", 8) == 0 && memcmp(l + 24, "LVM2 001", 8) == 0 &&
		    at == sec && crc == lvm2_crc(l + 20, 512 - 20)) {
			snprintf(what, len, "an LVM2 label (sector %" PRIu64 ")", sec);
			found = 1;
		}
	}
	/* Linux md v1.2 superblock at 4 KiB. */
	if (!found && b[4096] == 0xfc && b[4097] == 0x4e && b[4098] == 0x2b && b[4099] == 0xa9) {
		snprintf(what, len, "an md v1.2 superblock");
		found = 1;
	}
	free(b);
	return found;
}

static void luks2_copy_fields(struct luks_hdr *h, const struct luks2_copy *c)
{
	const struct luks2_bin *b = &c->bin;

	snprintf(h->uuid, sizeof(h->uuid), "%.*s", (int)sizeof(b->uuid) - 1, b->uuid);
	snprintf(h->label, sizeof(h->label), "%.*s", (int)sizeof(b->label) - 1, b->label);
	snprintf(h->subsystem, sizeof(h->subsystem), "%.*s", (int)sizeof(b->subsystem) - 1,
	         b->subsystem);
	h->seqid = c->seqid;
	h->hdr_size = c->hdr_size;
}

/* A device whose primary header was destroyed still has its secondary
 * copy at one of the offsets the format allows. */
static int luks2_probe_backup(struct vol *dev, unsigned char *buf)
{
	for (uint64_t off = 16384; off <= (4u << 20) && off + 4096 <= dev->size; off *= 2)
		if (vol_read(dev, buf, 4096, off) == 0 &&
		    memcmp(buf, LUKS2_MAGIC_2ND, LUKS_MAGIC_LEN) == 0)
			return 1;
	return 0;
}

static int luks2_load(struct vol *dev, struct luks_hdr *h)
{
	struct luks2_copy *c = vol_buf_zalloc(2 * sizeof(*c));
	struct luks2_copy *use;
	int r;

	if (!c)
		return -ENOMEM;
	h->version = 2;
	r = luks2_read_copy(dev, 0, true, &c[0]);
	if (r < 0)
		goto out;
	/* The secondary sits at the primary's hdr_size; without a valid
	 * primary, look at every size the format allows. */
	if (c[0].ok || c[0].rule) {
		r = luks2_read_copy(dev, c[0].hdr_size, false, &c[1]);
	} else {
		/* The first copy found with its magic names why the secondary
		 * is bad when no offset holds a good one. */
		char why[sizeof(c[1].why)] = "";
		for (uint64_t s = 16384; s <= (4u << 20) && !c[1].ok && !c[1].rule; s *= 2) {
			r = luks2_read_copy(dev, s, false, &c[1]);
			if (r < 0)
				goto out;
			if (c[1].magic && !c[1].ok && !c[1].rule && !why[0])
				snprintf(why, sizeof(why), "%s", c[1].why);
		}
		if (!c[1].ok && !c[1].rule && why[0])
			memcpy(c[1].why, why, sizeof(why));
	}
	if (r < 0)
		goto out;
	if (!c[0].ok && !c[1].ok) {
		/* Intact copies that break a rule: the rule is the error. */
		const struct luks2_copy *rc = c[0].rule ? &c[0] : c[1].rule ? &c[1] : NULL;
		if (rc && rc->rule == -ENOTSUP)
			r = err_set(-ENOTSUP, "%s: %s", dev->name, rc->why);
		else if (rc)
			r = err_set(-EINVAL, "%s: LUKS2 header: %s", dev->name, rc->why);
		else
			r = err_set(-EINVAL,
			            "%s: both LUKS2 headers are damaged (primary: %s; "
			            "secondary: %s)",
			            dev->name, c[0].why, c[1].why[0] ? c[1].why : "not found");
		goto out;
	}
	/* A damaged primary under another program's signature: that program
	 * owns the device now, and recovering the header would destroy its
	 * data (cryptsetup refuses too: "ambiguous signatures"). */
	if (!c[0].ok) {
		char what[64];
		r = luks2_foreign_signature(dev, what, sizeof(what));
		if (r < 0)
			goto out;
		if (r > 0) {
			r = err_set(-EINVAL,
			            "%s: %s lies over the damaged primary LUKS2 header; not "
			            "recovering from the secondary copy (ambiguous signatures: "
			            "see cryptsetup repair)",
			            dev->name, what);
			goto out;
		}
	}
	h->primary_ok = c[0].ok;
	h->secondary_ok = c[1].ok && (!c[0].ok || c[1].hdr_size == c[0].hdr_size);
	use = !c[1].ok || (c[0].ok && c[0].seqid >= c[1].seqid) ? &c[0] : &c[1];
	if (!c[0].ok)
		log_warn("%s: primary LUKS2 header is damaged (%s); using the "
		         "secondary copy (seqid %" PRIu64 ")",
		         dev->name, c[0].why, c[1].seqid);
	else if (!h->secondary_ok)
		log_warn("%s: secondary LUKS2 header is damaged (%s); using the "
		         "primary copy",
		         dev->name, c[1].why[0] ? c[1].why : "missing");
	else if (c[0].seqid != c[1].seqid)
		log_warn("%s: LUKS2 header copies differ (seqid %" PRIu64 " and %" PRIu64
		         "); using the newer one",
		         dev->name, c[0].seqid, c[1].seqid);
	h->needs_repair = !h->primary_ok || !h->secondary_ok || c[0].seqid != c[1].seqid;
	luks2_copy_fields(h, use);
	h->state = calloc(1, sizeof(struct luks2_state));
	if (!h->state) {
		r = -ENOMEM;
		goto out;
	}
	memcpy(l2(h)->salt[0], c[0].ok ? c[0].bin.salt : use->bin.salt, 64);
	memcpy(l2(h)->salt[1], c[1].ok ? c[1].bin.salt : use->bin.salt, 64);
	l2(h)->json = json_object_get(use->json);
	r = luks2_parse(h);
	if (r < 0)
		err_set(r, "%s: %s", dev->name, err_detail(r));
out:
	json_object_put(c[0].json);
	json_object_put(c[1].json);
	free(c);
	return r;
}

/* ---- writing ---- */

static int luks2_write_copy(struct luks_hdr *h, struct vol *dev, int which, const char *json,
                            size_t json_len)
{
	uint64_t off = which ? h->hdr_size : 0;
	unsigned char *area = vol_buf_zalloc(h->hdr_size), sum[32];
	struct luks2_bin *b = (struct luks2_bin *)area;
	int r;

	if (!area)
		return -ENOMEM;
	memcpy(b->magic, which ? LUKS2_MAGIC_2ND : LUKS_MAGIC, LUKS_MAGIC_LEN);
	b->version[1] = 2;
	be64_put(b->hdr_size, h->hdr_size);
	be64_put(b->seqid, h->seqid);
	memcpy(b->label, h->label, strnlen(h->label, sizeof(b->label) - 1));
	strcpy(b->checksum_alg, "sha256");
	memcpy(b->salt, l2(h)->salt[which], sizeof(b->salt));
	memcpy(b->uuid, h->uuid, strnlen(h->uuid, sizeof(b->uuid) - 1));
	memcpy(b->subsystem, h->subsystem, strnlen(h->subsystem, sizeof(b->subsystem) - 1));
	be64_put(b->hdr_offset, off);
	memcpy(area + LUKS2_BIN_SIZE, json, json_len);
	r = luks2_csum(area, h->hdr_size, sum);
	if (r == 0) {
		memcpy(b->csum, sum, sizeof(sum));
		r = vol_write(dev, area, h->hdr_size, off, 0);
		if (r < 0)
			err_set(r, "%s: writing the %s LUKS2 header: %s", dev->name,
			        which ? "secondary" : "primary", strerror(-r));
	}
	free(area);
	return r;
}

static int luks2_write(struct luks_hdr *h, struct vol *dev)
{
	const char *json;
	size_t len;
	int r;

	if (h->version != 2 || !h->state)
		return err_set(-ENOTSUP, "%s: only LUKS2 headers can be changed", dev->name);
	{
		char why[192];
		r = luks2_check(l2(h)->json, h->hdr_size, why, sizeof(why));
		if (r < 0)
			return err_set(-EINVAL,
			               "refusing to write a LUKS2 header that breaks a rule: %s",
			               why);
	}
	json = json_object_to_json_string_ext(l2(h)->json, JSON_C_TO_STRING_PLAIN |
	                                                       JSON_C_TO_STRING_NOSLASHESCAPE);
	len = strlen(json);
	if (len + 1 > h->hdr_size - LUKS2_BIN_SIZE)
		return err_set(-ENOSPC,
		               "LUKS2 metadata (%zu bytes) does not fit its "
		               "%" PRIu64 "-byte area",
		               len, h->hdr_size - LUKS2_BIN_SIZE);
	h->seqid++;
	/* Primary, flush, secondary, flush: a crash leaves one copy valid, and
	 * the loader takes the valid one with the highest seqid. */
	r = luks2_write_copy(h, dev, 0, json, len);
	if (r == 0)
		r = vol_flush(dev);
	if (r == 0)
		r = luks2_write_copy(h, dev, 1, json, len);
	if (r == 0)
		r = vol_flush(dev);
	if (r == 0)
		h->primary_ok = h->secondary_ok = true, h->needs_repair = false;
	return r;
}

/* ---- key slots ---- */

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

/* The lowest offset where size bytes fit between the active slots' areas.
 * A slot being replaced still counts: its old area must survive until the
 * new header is on disk. */
static int luks2_area_find(const struct luks_hdr *h, uint64_t size, uint64_t *off)
{
	uint64_t start = 2 * h->hdr_size, end = start + h->keyslots_size;
	uint64_t cand = start;
	bool moved = true;

	/* Never into the data segment, whatever keyslots_size says. */
	if (end < start)
		end = UINT64_MAX;
	if (h->seg.cipher[0] && h->seg.offset < end)
		end = h->seg.offset;

	while (moved) {
		moved = false;
		for (int i = 0; i < h->nslots; i++) {
			const struct luks_keyslot *s = &h->slots[i];
			if (!s->active)
				continue;
			if (cand < s->area_offset + s->area_size && s->area_offset < cand + size) {
				cand = align_up(s->area_offset + s->area_size, LUKS2_AREA_ALIGN);
				moved = true;
			}
		}
	}
	if (cand + size > end)
		return err_set(-ENOSPC, "no room left in the LUKS2 key-slot area");
	*off = cand;
	return 0;
}

static json_object *luks2_kdf_json(const struct luks_kdf *k)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "type", json_object_new_string(luks_kdf_name(k->type)));
	if (k->type == LUKS_KDF_PBKDF2) {
		json_object_object_add(o, "hash", json_object_new_string(k->hash));
		json_object_object_add(o, "iterations", json_object_new_int64(k->iterations));
	} else {
		json_object_object_add(o, "time", json_object_new_int64(k->iterations));
		json_object_object_add(o, "memory", json_object_new_int64(k->memory));
		json_object_object_add(o, "cpus", json_object_new_int64(k->cpus));
	}
	json_object_object_add(o, "salt", b64_new(k->salt, k->salt_len));
	return o;
}

/* Add slot to (or drop it from) the "keyslots" list of a digest or token. */
static void luks2_list_keyslot(json_object *digest, int slot, bool add)
{
	json_object *ks = jget(digest, "keyslots"), *keep;
	char id[12];

	if (!ks)
		return;
	snprintf(id, sizeof(id), "%d", slot);
	keep = json_object_new_array();
	for (size_t i = 0; i < json_object_array_length(ks); i++) {
		const char *s = json_object_get_string(json_object_array_get_idx(ks, i));
		if (s && strcmp(s, id) != 0)
			json_object_array_add(keep, json_object_new_string(s));
	}
	if (add)
		json_object_array_add(keep, json_object_new_string(id));
	json_object_object_add(digest, "keyslots", keep);
}

/* The digest that checks the volume key of the data segment. */
static int luks2_segment_digest(const struct luks_hdr *h, json_object **d)
{
	json_object *dg = jget(l2(h)->json, "digests");
	char id[12];

	snprintf(id, sizeof(id), "%d", h->seg_digest);
	*d = h->seg_digest >= 0 ? jget(dg, id) : NULL;
	if (!*d)
		return err_set(-EINVAL, "LUKS2 header has no digest for the data segment");
	return h->seg_digest;
}

int luks2_keyslot_store(struct luks_hdr *h, struct vol *dev, int slot, const struct luks_secret *vk,
                        const struct luks_secret *pass, const struct luks_pbkdf_opts *o)
{
	struct luks_secret *dk = NULL, *split = NULL;
	struct luks_kdf kdf;
	json_object *digest = NULL, *ks, *af, *area;
	unsigned char *mat = NULL;
	uint64_t mat_len, area_size, area_off = 0, old_off = 0, old_size = 0;
	const char *cipher = h->seg.cipher[0] ? h->seg.cipher : "aes-xts-plain64";
	char id[12];
	int r;

	if (h->version != 2)
		return err_set(-ENOTSUP,
		               "%s: key slots can only be changed on LUKS2 "
		               "(this is LUKS1)",
		               dev->name);
	if (slot < 0) {
		for (slot = 0; slot < LUKS_SLOTS_MAX && h->slots[slot].active; slot++)
			;
		if (slot == LUKS_SLOTS_MAX)
			return err_set(-ENOSPC, "all %d key slots are in use", LUKS_SLOTS_MAX);
	}
	if (slot >= LUKS_SLOTS_MAX)
		return err_set(-EINVAL, "key slot %d does not exist", slot);
	if (h->slots[slot].active) {
		old_off = h->slots[slot].area_offset;
		old_size = h->slots[slot].area_size;
	}
	r = luks2_segment_digest(h, &digest);
	if (r < 0)
		return r;
	r = luks_area_cipher_ok(cipher, vk->len);
	if (r < 0)
		return r;
	mat_len = align_up((uint64_t)vk->len * LUKS2_STRIPES, 512);
	area_size = align_up(mat_len, LUKS2_AREA_ALIGN);
	r = luks2_area_find(h, area_size, &area_off);
	if (r < 0)
		return r;
	r = luks_kdf_choose(o, vk->len, &kdf);
	if (r < 0)
		return r;
	dk = luks_secret_alloc(vk->len);
	split = luks_secret_alloc(mat_len);
	mat = vol_buf_zalloc(area_size);
	if (!dk || !split || !mat) {
		r = -ENOMEM;
		goto out;
	}
	r = luks_kdf_derive(&kdf, pass->data, pass->len, dk->data, dk->len);
	if (r < 0)
		goto out;
	/* Split and encrypted in locked memory; only ciphertext reaches the
	 * I/O buffer. */
	r = luks_af_split(vk->data, vk->len, LUKS2_STRIPES, "sha256", split->data);
	if (r < 0)
		goto out;
	r = luks_area_crypt(cipher, dk->data, dk->len, split->data, mat_len, true);
	if (r < 0)
		goto out;
	memcpy(mat, split->data, mat_len);
	r = vol_write(dev, mat, area_size, area_off, 0);
	if (r == 0)
		r = vol_flush(dev);
	if (r < 0) {
		r = err_set(r, "%s: writing key slot %d: %s", dev->name, slot, strerror(-r));
		goto out;
	}

	ks = json_object_new_object();
	json_object_object_add(ks, "type", json_object_new_string("luks2"));
	json_object_object_add(ks, "key_size", json_object_new_int64((int64_t)vk->len));
	af = json_object_new_object();
	json_object_object_add(af, "type", json_object_new_string("luks1"));
	json_object_object_add(af, "stripes", json_object_new_int64(LUKS2_STRIPES));
	json_object_object_add(af, "hash", json_object_new_string("sha256"));
	json_object_object_add(ks, "af", af);
	area = json_object_new_object();
	json_object_object_add(area, "type", json_object_new_string("raw"));
	json_object_object_add(area, "offset", jstr_new_u64(area_off));
	json_object_object_add(area, "size", jstr_new_u64(area_size));
	json_object_object_add(area, "encryption", json_object_new_string(cipher));
	json_object_object_add(area, "key_size", json_object_new_int64((int64_t)vk->len));
	json_object_object_add(ks, "area", area);
	json_object_object_add(ks, "kdf", luks2_kdf_json(&kdf));
	snprintf(id, sizeof(id), "%d", slot);
	json_object_object_add(jget(l2(h)->json, "keyslots"), id, ks);
	luks2_list_keyslot(digest, slot, true);

	r = luks2_write(h, dev);
	if (r == 0)
		r = luks2_parse(h);
	if (r == 0 && old_size)
		r = luks_area_wipe(dev, old_off, old_size);
	if (r == 0)
		r = slot;
out:
	explicit_bzero(&kdf, sizeof(kdf));
	luks_secret_free(dk);
	luks_secret_free(split);
	free(mat);
	return r;
}

int luks2_keyslot_remove(struct luks_hdr *h, struct vol *dev, int slot)
{
	json_object *dg;
	uint64_t off, size;
	char id[12];
	int r;

	if (h->version != 2)
		return err_set(-ENOTSUP,
		               "%s: key slots can only be changed on LUKS2 "
		               "(this is LUKS1)",
		               dev->name);
	if (slot < 0 || slot >= LUKS_SLOTS_MAX || !h->slots[slot].active)
		return err_set(-ENOENT, "key slot %d is not active", slot);
	off = h->slots[slot].area_offset;
	size = h->slots[slot].area_size;
	snprintf(id, sizeof(id), "%d", slot);
	json_object_object_del(jget(l2(h)->json, "keyslots"), id);
	/* No digest or token may name a key slot that is gone. */
	dg = jget(l2(h)->json, "digests");
	json_object_object_foreach(dg, key, val)
	{
		(void)key;
		luks2_list_keyslot(val, slot, false);
	}
	dg = jget(l2(h)->json, "tokens");
	json_object_object_foreach(dg, tkey, tval)
	{
		(void)tkey;
		luks2_list_keyslot(tval, slot, false);
	}
	r = luks2_write(h, dev);
	if (r == 0)
		r = luks2_parse(h);
	if (r == 0)
		r = luks_area_wipe(dev, off, size);
	return r;
}

/* ---- UUID ---- */

/* The UUID lives in the binary headers: both are rewritten. */
static int luks2_set_uuid(struct luks_hdr *h, struct vol *dev, const char *uuid)
{
	snprintf(h->uuid, sizeof(h->uuid), "%s", uuid);
	return luks2_write(h, dev);
}

/* ---- format ---- */

static void luks2_uuid(char out[40], const unsigned char r[16])
{
	unsigned char u[16];

	memcpy(u, r, 16);
	u[6] = (u[6] & 0x0f) | 0x40; /* version 4 */
	u[8] = (u[8] & 0x3f) | 0x80; /* RFC 4122 variant */
	snprintf(out, 40, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
	         u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
	         u[13], u[14], u[15]);
}

static int luks2_zero(struct vol *dev, uint64_t len)
{
	const uint64_t chunk = 1u << 20;
	void *z = vol_buf_zalloc(chunk);
	int r = 0;

	if (!z)
		return -ENOMEM;
	for (uint64_t off = 0; off < len && r == 0; off += chunk)
		r = vol_write(dev, z, len - off < chunk ? len - off : chunk, off, 0);
	free(z);
	return r;
}

int luks2_format(struct vol *dev, const struct luks2_format_opts *o, const struct luks_secret *pass)
{
	const char *cipher = o->cipher ? o->cipher : "aes-xts-plain64";
	uint32_t key_bytes = o->key_bytes ? o->key_bytes : 64;
	/* 4096-byte sectors as cryptsetup 2.4+ picks where the device allows:
	 * a quarter of the per-sector cipher setup of 512. */
	uint32_t sector = o->sector_size                                    ? o->sector_size
	                  : dev->block_min <= 4096 && dev->size % 4096 == 0 ? 4096
	                                                                    : 512;
	uint64_t data_off = LUKS2_DEFAULT_DATA_OFFSET;
	struct luks_secret *vk = NULL;
	struct luks_hdr *h = NULL;
	struct luks_digest g;
	json_object *j, *seg, *segs, *dig, *digs, *cfg, *arr;
	unsigned char rnd[16];
	int r;

	if (sector != 512 && sector != 4096)
		return err_set(-EINVAL, "sector size must be 512 or 4096");
	if (key_bytes != 32 && key_bytes != 64)
		return err_set(-EINVAL, "key size must be 256 or 512 bits");
	if (o->label && strlen(o->label) >= 48)
		return err_set(-EINVAL, "label is longer than 47 bytes");
	r = luks_area_cipher_ok(cipher, key_bytes);
	if (r < 0)
		return r;
	if (dev->size <= data_off || (dev->size - data_off) % sector)
		return err_set(-EINVAL,
		               "%s: %" PRIu64 " bytes is too small for LUKS2 "
		               "(the header takes 16 MiB) or not a multiple of the "
		               "%u-byte sector",
		               dev->name, dev->size, sector);
	if (data_off % dev->block_min)
		return err_set(-EINVAL,
		               "%s: block size %u does not divide the data "
		               "offset",
		               dev->name, dev->block_min);

	h = calloc(1, sizeof(*h));
	vk = luks_secret_alloc(key_bytes);
	if (!h || !vk || !(h->state = calloc(1, sizeof(struct luks2_state)))) {
		r = -ENOMEM;
		goto out;
	}
	h->version = 2;
	h->ops = &luks2_ops;
	h->hdr_size = LUKS2_DEFAULT_HDR_SIZE;
	h->keyslots_size = data_off - 2 * h->hdr_size;
	h->nslots = LUKS_SLOTS_MAX;
	h->seqid = 0;
	if (o->label)
		strcpy(h->label, o->label);
	if ((r = random_fill(vk->data, vk->len)) < 0 || (r = random_fill(rnd, sizeof(rnd))) < 0 ||
	    (r = random_fill(l2(h)->salt, sizeof(l2(h)->salt))) < 0)
		goto out;
	luks2_uuid(h->uuid, rnd);

	/* The digest: PBKDF2-SHA256 of the volume key. */
	memset(&g, 0, sizeof(g));
	g.salt_len = LUKS_SALT_LEN;
	g.digest_len = 32;
	g.iterations =
	    o->pbkdf.force_iter
	        ? 1000
	        : luks_pbkdf2_iterations_for("sha256", o->pbkdf.iter_ms && o->pbkdf.iter_ms <
	                                                                       LUKS2_DIGEST_MAX_MS
	                                                   ? o->pbkdf.iter_ms
	                                                   : LUKS2_DIGEST_MAX_MS);
	if ((r = random_fill(g.salt, g.salt_len)) < 0 ||
	    (r = luks_pbkdf2("sha256", vk->data, vk->len, g.salt, g.salt_len, g.iterations,
	                     g.digest, g.digest_len)) < 0)
		goto out;

	j = json_object_new_object();
	l2(h)->json = j;
	json_object_object_add(j, "keyslots", json_object_new_object());
	json_object_object_add(j, "tokens", json_object_new_object());
	segs = json_object_new_object();
	seg = json_object_new_object();
	json_object_object_add(seg, "type", json_object_new_string("crypt"));
	json_object_object_add(seg, "offset", jstr_new_u64(data_off));
	json_object_object_add(seg, "size", json_object_new_string("dynamic"));
	json_object_object_add(seg, "iv_tweak", json_object_new_string("0"));
	json_object_object_add(seg, "encryption", json_object_new_string(cipher));
	json_object_object_add(seg, "sector_size", json_object_new_int64(sector));
	json_object_object_add(segs, "0", seg);
	json_object_object_add(j, "segments", segs);
	digs = json_object_new_object();
	dig = json_object_new_object();
	json_object_object_add(dig, "type", json_object_new_string("pbkdf2"));
	json_object_object_add(dig, "keyslots", json_object_new_array());
	arr = json_object_new_array();
	json_object_array_add(arr, json_object_new_string("0"));
	json_object_object_add(dig, "segments", arr);
	json_object_object_add(dig, "hash", json_object_new_string("sha256"));
	json_object_object_add(dig, "iterations", json_object_new_int64(g.iterations));
	json_object_object_add(dig, "salt", b64_new(g.salt, g.salt_len));
	json_object_object_add(dig, "digest", b64_new(g.digest, g.digest_len));
	json_object_object_add(digs, "0", dig);
	json_object_object_add(j, "digests", digs);
	cfg = json_object_new_object();
	json_object_object_add(cfg, "json_size", jstr_new_u64(h->hdr_size - LUKS2_BIN_SIZE));
	json_object_object_add(cfg, "keyslots_size", jstr_new_u64(h->keyslots_size));
	json_object_object_add(j, "config", cfg);
	r = luks2_parse(h);
	if (r < 0)
		goto out;

	/* Old headers and key material go first, so nothing of a previous
	 * LUKS header (or its secondary copy) survives. */
	r = luks2_zero(dev, data_off);
	if (r < 0) {
		r = err_set(r, "%s: wiping the header area: %s", dev->name, strerror(-r));
		goto out;
	}
	r = luks2_keyslot_store(h, dev, 0, vk, pass, &o->pbkdf);
	if (r > 0)
		r = 0;
out:
	luks_secret_free(vk);
	luks_hdr_free(h);
	return r;
}

const struct luks_version_ops luks2_ops = {
    .version = 2,
    .probe_backup = luks2_probe_backup,
    .load = luks2_load,
    .write = luks2_write,
    .kill_slot = luks2_keyslot_remove,
    .set_uuid = luks2_set_uuid,
    .dump = luks2_dump,
    .free = luks2_state_free,
};
