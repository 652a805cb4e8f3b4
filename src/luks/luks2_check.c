/* luks2_check.c — the rules a LUKS2 header's JSON must keep before uraid
 * uses any field of it: those of the LUKS2 on-disk format document and of
 * cryptsetup's own validation (lib/luks2/luks2_json_metadata.c), written
 * anew.  Field types (sizes and offsets are decimal strings, counts JSON
 * integers), numbered ids, the cross references between key slots,
 * digests, segments and tokens, each key slot bound to exactly one digest,
 * key-slot areas inside the keyslots area and apart from each other, and
 * the keyslots area ahead of the data.  Features uraid does not implement
 * (integrity, reencryption, other segment types, requirements) are named.
 *
 * luks2.c runs this on each header copy after its checksum; a copy that
 * breaks a rule is not used, and when neither is usable the rule is the
 * error.  luks2_write() runs it too, so uraid never writes such a header.
 * The rules are listed in docs/luks.md. */
#include "luks/luks_hdr.h"
#include "luks/luks_version.h"

#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK_BIN_SIZE 4096u
#define CHECK_AREA_ALIGN 4096u
#define CHECK_KEYSLOTS_MAX (128u << 20)    /* cryptsetup's largest keyslots area */
#define CHECK_PBKDF2_ITER_MAX INT32_MAX    /* cryptsetup (and OpenSSL's int) */
#define CHECK_ARGON2_MEMORY_MAX (4u << 20) /* KiB: 4 GiB, cryptsetup's limit */
#define CHECK_ARGON2_CPUS_MAX 64u

struct chk {
	char *why;
	size_t len;
};

static int bad(struct chk *c, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(struct chk *c, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->why, c->len, fmt, ap);
	va_end(ap);
	return err;
}

static json_object *field(json_object *o, const char *key)
{
	json_object *v = NULL;

	return json_object_object_get_ex(o, key, &v) ? v : NULL;
}

static bool numbered(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

/* An id of a key slot, digest, segment or token: digits, below 32. */
static int id_of(struct chk *c, const char *what, const char *key)
{
	char *end;
	unsigned long v;

	if (!numbered(key))
		return bad(c, -EINVAL, "%s id '%s' is not a number", what, key);
	v = strtoul(key, &end, 10);
	if (v >= LUKS_SLOTS_MAX)
		return bad(c, -EINVAL, "%s id %s is beyond %d", what, key, LUKS_SLOTS_MAX - 1);
	return (int)v;
}

static int need_obj(struct chk *c, json_object *o, const char *where, const char *key,
                    json_object **out)
{
	json_object *v = field(o, key);

	if (!v)
		return bad(c, -EINVAL, "%s: %s is missing", where, key);
	if (!json_object_is_type(v, json_type_object))
		return bad(c, -EINVAL, "%s: %s is not an object", where, key);
	*out = v;
	return 0;
}

static int need_str(struct chk *c, json_object *o, const char *where, const char *key,
                    const char **out)
{
	json_object *v = field(o, key);

	if (!v || !json_object_is_type(v, json_type_string) || !*json_object_get_string(v))
		return bad(c, -EINVAL, "%s: %s is missing or not a string", where, key);
	*out = json_object_get_string(v);
	return 0;
}

/* A JSON integer in [min, max]; what names the limit in the message. */
static int need_int(struct chk *c, json_object *o, const char *where, const char *key, int64_t min,
                    int64_t max, const char *limit, int64_t *out)
{
	json_object *v = field(o, key);
	int64_t i;

	if (!v)
		return bad(c, -EINVAL, "%s: %s is missing", where, key);
	if (!json_object_is_type(v, json_type_int))
		return bad(c, -EINVAL, "%s: %s is not a JSON integer", where, key);
	errno = 0;
	i = json_object_get_int64(v);
	if (errno || i < min || i > max)
		return bad(c, -EINVAL, "%s: %s %s is out of range (%s)", where, key,
		           json_object_get_string(v), limit ? limit : "too large or negative");
	if (out)
		*out = i;
	return 0;
}

/* A u64 written as a decimal string, as LUKS2 stores offsets and sizes. */
static int need_u64(struct chk *c, json_object *o, const char *where, const char *key,
                    uint64_t *out)
{
	json_object *v = field(o, key);
	const char *s;
	char *end;

	if (!v)
		return bad(c, -EINVAL, "%s: %s is missing", where, key);
	s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
	if (!s || !numbered(s))
		return bad(c, -EINVAL, "%s: %s is not a decimal string", where, key);
	errno = 0;
	*out = strtoull(s, &end, 10);
	if (errno || *end)
		return bad(c, -EINVAL, "%s: %s %s does not fit 64 bits", where, key, s);
	return 0;
}

/* An array of strings; optional arrays may be absent (*out NULL). */
static int str_array(struct chk *c, json_object *o, const char *where, const char *key,
                     bool required, json_object **out)
{
	json_object *v = field(o, key);

	*out = NULL;
	if (!v && !required)
		return 0;
	if (!v || !json_object_is_type(v, json_type_array))
		return bad(c, -EINVAL, "%s: %s is not an array of strings", where, key);
	for (size_t i = 0; i < json_object_array_length(v); i++)
		if (!json_object_is_type(json_object_array_get_idx(v, i), json_type_string))
			return bad(c, -EINVAL, "%s: %s is not an array of strings", where, key);
	*out = v;
	return 0;
}

/* Each member of arr names an entry of section (which is called what). */
static int refs_exist(struct chk *c, const char *where, json_object *arr, json_object *section,
                      const char *what)
{
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		const char *k = json_object_get_string(json_object_array_get_idx(arr, i));
		if (!field(section, k))
			return bad(c, -EINVAL, "%s lists %s %s, which does not exist", where, what,
			           k);
	}
	return 0;
}

static bool in_array(json_object *arr, const char *s)
{
	for (size_t i = 0; arr && i < json_object_array_length(arr); i++)
		if (strcmp(json_object_get_string(json_object_array_get_idx(arr, i)), s) == 0)
			return true;
	return false;
}

/* config: sizes, flags, and the requirements uraid cannot meet. */
static int check_config(struct chk *c, json_object *cfg, uint64_t hdr_size, uint64_t *ks_size)
{
	json_object *req = NULL, *mand = NULL, *flags = NULL;
	uint64_t json_size = 0;
	int r;

	if ((r = need_u64(c, cfg, "config", "json_size", &json_size)) < 0 ||
	    (r = need_u64(c, cfg, "config", "keyslots_size", ks_size)) < 0 ||
	    (r = str_array(c, cfg, "config", "flags", false, &flags)) < 0)
		return r;
	if (json_size != hdr_size - CHECK_BIN_SIZE)
		return bad(c, -EINVAL,
		           "config: json_size %" PRIu64 " does not match the %" PRIu64
		           "-byte header",
		           json_size, hdr_size);
	if (*ks_size == 0 || *ks_size % CHECK_AREA_ALIGN || *ks_size > CHECK_KEYSLOTS_MAX)
		return bad(c, -EINVAL,
		           "config: keyslots_size %" PRIu64
		           " is not a multiple of 4096 up to 128 MiB",
		           *ks_size);
	req = field(cfg, "requirements");
	if (!req)
		return 0;
	if (!json_object_is_type(req, json_type_object))
		return bad(c, -EINVAL, "config: requirements is not an object");
	if ((r = str_array(c, req, "config requirements", "mandatory", false, &mand)) < 0)
		return r;
	for (size_t i = 0; mand && i < json_object_array_length(mand); i++) {
		const char *n = json_object_get_string(json_object_array_get_idx(mand, i));
		if (strncmp(n, "online-reencrypt", 16) == 0 || strcmp(n, "offline-reencrypt") == 0)
			return bad(c, -ENOTSUP,
			           "LUKS2 reencryption (requirement '%s') is not supported: "
			           "finish it with cryptsetup reencrypt",
			           n);
		if (strcmp(n, "opal") == 0)
			return bad(c, -ENOTSUP,
			           "LUKS2 hardware OPAL encryption (requirement "
			           "'opal') is not supported");
		if (strcmp(n, "inline-hw-tags") == 0)
			return bad(c, -ENOTSUP,
			           "LUKS2 inline hardware integrity tags (requirement "
			           "'inline-hw-tags') are not supported");
		return bad(c, -ENOTSUP,
		           "LUKS2 requirement '%s' is unknown to uraid (a newer "
		           "cryptsetup feature?)",
		           n);
	}
	return 0;
}

struct seg_info {
	bool used;
	uint64_t offset;
};

static bool reencrypt_flag(const char *f)
{
	return strncmp(f, "backup-", 7) == 0 || strcmp(f, "in-reencryption") == 0;
}

static int check_segments(struct chk *c, json_object *segs, struct seg_info *si)
{
	int n = 0, r;

	json_object_object_foreach(segs, key, val)
	{
		json_object *flags = NULL, *integ = NULL;
		const char *type = NULL, *size_s = NULL, *enc = NULL;
		uint64_t offset = 0, size = 0, tweak = 0;
		int64_t sector = 512;
		char w[24];
		int id = id_of(c, "segment", key);

		if (id < 0)
			return id;
		snprintf(w, sizeof(w), "segment %d", id);
		if (!json_object_is_type(val, json_type_object))
			return bad(c, -EINVAL, "%s is not an object", w);
		if ((r = need_str(c, val, w, "type", &type)) < 0 ||
		    (r = need_u64(c, val, w, "offset", &offset)) < 0 ||
		    (r = need_str(c, val, w, "size", &size_s)) < 0 ||
		    (r = str_array(c, val, w, "flags", false, &flags)) < 0)
			return r;
		for (size_t i = 0; flags && i < json_object_array_length(flags); i++) {
			const char *f = json_object_get_string(json_object_array_get_idx(flags, i));
			if (reencrypt_flag(f))
				return bad(c, -ENOTSUP,
				           "LUKS2 reencryption (%s flag '%s') is not "
				           "supported: finish it with cryptsetup reencrypt",
				           w, f);
		}
		if (strcmp(size_s, "dynamic") != 0) {
			if ((r = need_u64(c, val, w, "size", &size)) < 0)
				return r;
			if (size == 0)
				return bad(c, -EINVAL,
				           "%s: size 0 (a segment to the end of the device "
				           "says \"dynamic\")",
				           w);
		}
		if (offset % 512 || size % 512)
			return bad(c, -EINVAL, "%s: offset or size is not a multiple of 512", w);
		if (strcmp(type, "crypt") != 0)
			return bad(c, -ENOTSUP, "%s has type '%s', which uraid does not support", w,
			           type);
		integ = field(val, "integrity");
		if (integ) {
			json_object *t = json_object_is_type(integ, json_type_object)
			                     ? field(integ, "type")
			                     : NULL;
			return bad(c, -ENOTSUP,
			           "LUKS2 integrity (authenticated encryption) is not "
			           "supported (%s: integrity %s)",
			           w, t ? json_object_get_string(t) : "?");
		}
		if ((r = need_u64(c, val, w, "iv_tweak", &tweak)) < 0 ||
		    (r = need_str(c, val, w, "encryption", &enc)) < 0 ||
		    (r = need_int(c, val, w, "sector_size", 1, UINT32_MAX, NULL, &sector)) < 0)
			return r;
		if (sector % 512)
			return bad(c, -EINVAL,
			           "%s: sector_size %" PRId64 " is not a multiple of 512", w,
			           sector);
		if (size % (uint64_t)sector)
			return bad(c, -EINVAL,
			           "%s: size %" PRIu64 " is not a multiple of its %" PRId64
			           "-byte sectors",
			           w, size, sector);
		si[id].used = true;
		si[id].offset = offset;
		n++;
	}
	if (n == 0)
		return bad(c, -EINVAL, "no segments");
	if (n > 1)
		return bad(c, -ENOTSUP,
		           "LUKS2 header has several segments (reencryption?), which "
		           "uraid does not support");
	return 0;
}

static int check_kdf(struct chk *c, json_object *kdf, const char *w)
{
	const char *type = NULL, *s = NULL;
	char wk[32];
	int r;

	snprintf(wk, sizeof(wk), "%s kdf", w);
	if ((r = need_str(c, kdf, wk, "type", &type)) < 0)
		return r;
	if (strcmp(type, "pbkdf2") == 0)
		return (r = need_str(c, kdf, wk, "hash", &s)) < 0 ? r
		       : (r = need_str(c, kdf, wk, "salt", &s)) < 0
		           ? r
		           : need_int(c, kdf, wk, "iterations", 1, CHECK_PBKDF2_ITER_MAX,
		                      "cryptsetup's limit is 2^31-1", NULL);
	if (strcmp(type, "argon2i") == 0 || strcmp(type, "argon2id") == 0) {
		int64_t mem = 0, cpus = 1;
		if ((r = need_str(c, kdf, wk, "salt", &s)) < 0 ||
		    (r = need_int(c, kdf, wk, "time", 1, UINT32_MAX, NULL, NULL)) < 0 ||
		    (r = need_int(c, kdf, wk, "cpus", 1, CHECK_ARGON2_CPUS_MAX, "1 to 64 lanes",
		                  &cpus)) < 0 ||
		    (r = need_int(c, kdf, wk, "memory", 1, CHECK_ARGON2_MEMORY_MAX,
		                  "cryptsetup's limit is 4 GiB", &mem)) < 0)
			return r;
		if (mem < 8 * cpus)
			return bad(c, -EINVAL,
			           "%s memory %" PRId64 " KiB is below argon2's 8 KiB per lane", wk,
			           mem);
	}
	/* Another type is left to the unlock, which refuses that key slot
	 * (cryptsetup loads such a header, too, and fails the slot). */
	return 0;
}

struct area {
	bool used;
	uint64_t offset, size;
};

static int check_keyslots(struct chk *c, json_object *kss, struct area *ar)
{
	int r;

	json_object_object_foreach(kss, key, val)
	{
		json_object *kdf = NULL, *af = NULL, *area = NULL;
		const char *type = NULL, *s = NULL;
		char w[24], wa[32], wr[32];
		int id = id_of(c, "keyslot", key);

		if (id < 0)
			return id;
		snprintf(w, sizeof(w), "keyslot %d", id);
		if (!json_object_is_type(val, json_type_object))
			return bad(c, -EINVAL, "%s is not an object", w);
		if ((r = need_str(c, val, w, "type", &type)) < 0)
			return r;
		if (strcmp(type, "reencrypt") == 0)
			return bad(c, -ENOTSUP,
			           "LUKS2 reencryption (%s of type reencrypt) is not supported: "
			           "finish it with cryptsetup reencrypt",
			           w);
		if (strcmp(type, "luks2") != 0)
			return bad(c, -ENOTSUP, "%s has type '%s', which uraid does not support", w,
			           type);
		if ((r = need_int(c, val, w, "key_size", 0, UINT32_MAX, NULL, NULL)) < 0 ||
		    (field(val, "priority") &&
		     (r = need_int(c, val, w, "priority", 0, 2, "0, 1 or 2", NULL)) < 0) ||
		    (r = need_obj(c, val, w, "kdf", &kdf)) < 0 ||
		    (r = need_obj(c, val, w, "af", &af)) < 0 ||
		    (r = need_obj(c, val, w, "area", &area)) < 0)
			return r;
		if ((r = check_kdf(c, kdf, w)) < 0)
			return r;
		snprintf(wa, sizeof(wa), "keyslot %d af", id);
		snprintf(wr, sizeof(wr), "keyslot %d area", id);
		if ((r = need_str(c, af, wa, "type", &s)) < 0)
			return r;
		if (strcmp(s, "luks1") != 0)
			return bad(c, -EINVAL, "%s: type '%s' is not luks1", wa, s);
		if ((r = need_str(c, af, wa, "hash", &s)) < 0 ||
		    (r = need_int(c, af, wa, "stripes", 1, UINT32_MAX, NULL, NULL)) < 0 ||
		    (r = need_str(c, area, wr, "type", &s)) < 0)
			return r;
		if (strcmp(s, "raw") != 0)
			return bad(c, -EINVAL, "%s: type '%s' is not raw", wr, s);
		if ((r = need_str(c, area, wr, "encryption", &s)) < 0 ||
		    (r = need_int(c, area, wr, "key_size", 0, UINT32_MAX, NULL, NULL)) < 0 ||
		    (r = need_u64(c, area, wr, "offset", &ar[id].offset)) < 0 ||
		    (r = need_u64(c, area, wr, "size", &ar[id].size)) < 0)
			return r;
		ar[id].used = true;
	}
	return 0;
}

static int check_digests(struct chk *c, json_object *dgs, json_object *kss, json_object *segs)
{
	int r;

	json_object_object_foreach(dgs, key, val)
	{
		json_object *ks = NULL, *sg = NULL;
		const char *type = NULL, *s = NULL;
		char w[24];
		int id = id_of(c, "digest", key);

		if (id < 0)
			return id;
		snprintf(w, sizeof(w), "digest %d", id);
		if (!json_object_is_type(val, json_type_object))
			return bad(c, -EINVAL, "%s is not an object", w);
		if ((r = need_str(c, val, w, "type", &type)) < 0 ||
		    (r = str_array(c, val, w, "keyslots", true, &ks)) < 0 ||
		    (r = str_array(c, val, w, "segments", true, &sg)) < 0 ||
		    (r = refs_exist(c, w, ks, kss, "keyslot")) < 0 ||
		    (r = refs_exist(c, w, sg, segs, "segment")) < 0)
			return r;
		if (strcmp(type, "pbkdf2") == 0 &&
		    ((r = need_str(c, val, w, "hash", &s)) < 0 ||
		     (r = need_str(c, val, w, "salt", &s)) < 0 ||
		     (r = need_str(c, val, w, "digest", &s)) < 0 ||
		     (r = need_int(c, val, w, "iterations", 1, CHECK_PBKDF2_ITER_MAX,
		                   "cryptsetup's limit is 2^31-1", NULL)) < 0))
			return r;
	}
	return 0;
}

static int check_tokens(struct chk *c, json_object *toks, json_object *kss)
{
	int r;

	json_object_object_foreach(toks, key, val)
	{
		json_object *ks = NULL;
		const char *type = NULL;
		char w[24];
		int id = id_of(c, "token", key);

		if (id < 0)
			return id;
		snprintf(w, sizeof(w), "token %d", id);
		if (!json_object_is_type(val, json_type_object))
			return bad(c, -EINVAL, "%s is not an object", w);
		if ((r = need_str(c, val, w, "type", &type)) < 0 ||
		    (r = str_array(c, val, w, "keyslots", true, &ks)) < 0 ||
		    (r = refs_exist(c, w, ks, kss, "keyslot")) < 0)
			return r;
	}
	return 0;
}

/* Each key slot in exactly one digest; the segment in exactly one. */
static int check_bindings(struct chk *c, json_object *dgs, json_object *kss, json_object *segs)
{
	json_object_object_foreach(kss, kkey, kval)
	{
		int n = 0;
		(void)kval;
		json_object_object_foreach(dgs, dkey, dval)
		{
			(void)dkey;
			n += in_array(field(dval, "keyslots"), kkey);
		}
		if (n != 1)
			return n ? bad(c, -EINVAL, "keyslot %s is in %d digests", kkey, n)
			         : bad(c, -EINVAL, "keyslot %s is in no digest", kkey);
	}
	json_object_object_foreach(segs, skey, sval)
	{
		int n = 0;
		(void)sval;
		json_object_object_foreach(dgs, dkey, dval)
		{
			(void)dkey;
			n += in_array(field(dval, "segments"), skey);
		}
		if (n != 1)
			return n ? bad(c, -EINVAL, "segment %s is bound to %d digests", skey, n)
			         : bad(c, -EINVAL, "segment %s is bound to no digest", skey);
	}
	return 0;
}

/* Key-slot areas: after both header copies, inside keyslots_size, apart;
 * and the keyslots area ahead of the data. */
static int check_areas(struct chk *c, const struct area *ar, const struct seg_info *si,
                       uint64_t hdr_size, uint64_t ks_size)
{
	uint64_t start = 2 * hdr_size, end = start + ks_size;

	for (int i = 0; i < LUKS_SLOTS_MAX; i++) {
		if (!si[i].used || si[i].offset == 0)
			continue; /* offset 0: a detached header (refused later) */
		if (si[i].offset < end)
			return bad(c, -EINVAL,
			           "config: keyslots area reaches into data segment %d (it ends "
			           "at %" PRIu64 ", the segment starts at %" PRIu64 ")",
			           i, end, si[i].offset);
	}
	for (int i = 0; i < LUKS_SLOTS_MAX; i++) {
		const struct area *a = &ar[i];
		if (!a->used)
			continue;
		if (a->offset < start)
			return bad(c, -EINVAL,
			           "keyslot %d area starts at %" PRIu64
			           ", inside the header copies",
			           i, a->offset);
		if (a->size == 0)
			return bad(c, -EINVAL, "keyslot %d area is empty", i);
		if (a->offset > UINT64_MAX - a->size || a->offset + a->size > end)
			return bad(c, -EINVAL,
			           "keyslot %d area ends beyond the keyslots area (keyslots_size "
			           "%" PRIu64 ")",
			           i, ks_size);
		for (int j = 0; j < i; j++)
			if (ar[j].used && a->offset < ar[j].offset + ar[j].size &&
			    ar[j].offset < a->offset + a->size)
				return bad(c, -EINVAL, "keyslot %d area overlaps keyslot %d", i, j);
	}
	return 0;
}

int luks2_check(struct json_object *j, uint64_t hdr_size, char *why, size_t why_len)
{
	static const char *const sections[] = {"keyslots", "tokens", "digests", "segments",
	                                       "config"};
	struct chk c = {why, why_len};
	struct seg_info si[LUKS_SLOTS_MAX] = {0};
	struct area ar[LUKS_SLOTS_MAX] = {0};
	json_object *sec[5];
	uint64_t ks_size = 0;
	int r;

	if (!json_object_is_type(j, json_type_object))
		return bad(&c, -EINVAL, "the JSON metadata is not an object");
	for (int i = 0; i < 5; i++)
		if ((r = need_obj(&c, j, "metadata", sections[i], &sec[i])) < 0)
			return r;
	if ((r = check_config(&c, sec[4], hdr_size, &ks_size)) < 0 ||
	    (r = check_segments(&c, sec[3], si)) < 0 || (r = check_keyslots(&c, sec[0], ar)) < 0 ||
	    (r = check_digests(&c, sec[2], sec[0], sec[3])) < 0 ||
	    (r = check_tokens(&c, sec[1], sec[0])) < 0 ||
	    (r = check_bindings(&c, sec[2], sec[0], sec[3])) < 0 ||
	    (r = check_areas(&c, ar, si, hdr_size, ks_size)) < 0)
		return r;
	return 0;
}
