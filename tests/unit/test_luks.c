/* test_luks.c — the LUKS building blocks and the LUKS2 life cycle on a
 * memory member: AF split/merge, PBKDF2 known answers, the key-slot area
 * cipher against the data-path crypt vol, format / unlock / add / change /
 * remove, payload round trip, header damage (one copy, both copies), and
 * JSON of the wrong shape.
 * Interop with cryptsetup and qemu is in tests/sh/luks-*.sh. */
#include "check.h"

#include "core/log.h"
#include "core/secmem.h"
#include "disc/crypt.h"
#include "luks/luks.h"
#include "member/member.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>

static struct luks_secret *secret(const char *s)
{
	struct luks_secret *p = luks_secret_alloc(strlen(s));
	memcpy(p->data, s, strlen(s));
	return p;
}

static void test_af(void)
{
	static const char *hashes[] = {"sha1", "sha256", "sha512"};
	unsigned long long seed = 7;

	for (int hi = 0; hi < 3; hi++) {
		for (size_t klen = 16; klen <= 64; klen += 16) {
			unsigned char key[64], back[64];
			uint32_t stripes = hi == 1 ? 4000 : 7;
			unsigned char *m = malloc(klen * stripes);
			for (size_t i = 0; i < klen; i++)
				key[i] = (unsigned char)check_rand(&seed);
			CHECK_EQ(luks_af_split(key, klen, stripes, hashes[hi], m), 0);
			CHECK_EQ(luks_af_merge(m, klen, stripes, hashes[hi], back), 0);
			CHECK(memcmp(key, back, klen) == 0);
			/* One flipped bit anywhere loses the key. */
			m[(klen * stripes) / 3] ^= 1;
			CHECK_EQ(luks_af_merge(m, klen, stripes, hashes[hi], back), 0);
			CHECK(memcmp(key, back, klen) != 0);
			free(m);
		}
	}
	CHECK_EQ(luks_af_split("k", 1, 2, "nohash", (unsigned char[2]){0}), -ENOTSUP);
}

static void test_pbkdf2(void)
{
	/* RFC 6070 test vectors 1 and 2 (PBKDF2-HMAC-SHA1). */
	static const unsigned char v1[20] = {0x0c, 0x60, 0xc8, 0x0f, 0x96, 0x1f, 0x0e,
	                                     0x71, 0xf3, 0xa9, 0xb5, 0x24, 0xaf, 0x60,
	                                     0x12, 0x06, 0x2f, 0xe0, 0x37, 0xa6};
	static const unsigned char v2[20] = {0xea, 0x6c, 0x01, 0x4d, 0xc7, 0x2d, 0x6f,
	                                     0x8c, 0xcd, 0x1e, 0xd9, 0x2a, 0xce, 0x1d,
	                                     0x41, 0xf0, 0xd8, 0xde, 0x89, 0x57};
	unsigned char out[20];

	CHECK_EQ(luks_pbkdf2("sha1", "password", 8, "salt", 4, 1, out, 20), 0);
	CHECK(memcmp(out, v1, 20) == 0);
	CHECK_EQ(luks_pbkdf2("sha1", "password", 8, "salt", 4, 2, out, 20), 0);
	CHECK(memcmp(out, v2, 20) == 0);
}

/* The benchmark picks costs within the bounds asked for; the KDFs are
 * deterministic for a given salt and cost. */
static void test_kdf_choose(void)
{
	struct luks_pbkdf_opts o = {.type = LUKS_KDF_ARGON2ID, .memory_kib = 4096, .iter_ms = 20};
	unsigned char a[32], b[32];
	struct luks_kdf k;

	CHECK_EQ(luks_kdf_choose(&o, 64, &k), 0);
	CHECK(k.iterations >= 4);
	CHECK(k.memory <= 4096 && k.memory >= 8 * k.cpus);
	CHECK(k.cpus >= 1 && k.cpus <= 4);
	CHECK_EQ(k.salt_len, 32);
	CHECK_EQ(luks_kdf_derive(&k, "pw", 2, a, sizeof(a)), 0);
	CHECK_EQ(luks_kdf_derive(&k, "pw", 2, b, sizeof(b)), 0);
	CHECK(memcmp(a, b, sizeof(a)) == 0);
	CHECK_EQ(luks_kdf_derive(&k, "px", 2, b, sizeof(b)), 0);
	CHECK(memcmp(a, b, sizeof(a)) != 0);
	o.type = LUKS_KDF_PBKDF2;
	CHECK_EQ(luks_kdf_choose(&o, 64, &k), 0);
	CHECK(k.iterations >= 1000);
	CHECK(strcmp(k.hash, "sha256") == 0);
	o.type = LUKS_KDF_ARGON2I;
	o.force_iter = 3; /* below argon2's minimum time cost of 4 */
	CHECK_EQ(luks_kdf_choose(&o, 64, &k), -EINVAL);
	o.type = LUKS_KDF_PBKDF2;
	o.force_iter = 999;
	CHECK_EQ(luks_kdf_choose(&o, 64, &k), -EINVAL);
}

/* The key-slot cipher must agree with the data path (another
 * implementation) sector for sector. */
static void test_area_vs_crypt(void)
{
	static const char *specs[] = {"aes-xts-plain64", "aes-cbc-essiv:sha256", "aes-xts-plain",
	                              "aes-cbc-plain64"};
	static const size_t klens[] = {64, 32, 32, 16};
	unsigned long long seed = 99;

	for (int i = 0; i < 4; i++) {
		unsigned char key[64], plain[8 * 512], area[8 * 512], disk[8 * 512];
		struct crypt_params p = {
		    .cipher = specs[i], .key = key, .key_len = klens[i], .sector_size = 512};
		struct vol *mem, *cv;

		for (size_t j = 0; j < sizeof(key); j++)
			key[j] = (unsigned char)check_rand(&seed);
		for (size_t j = 0; j < sizeof(plain); j++)
			plain[j] = (unsigned char)check_rand(&seed);
		CHECK_EQ(mem_member_open("64K", 0, &mem), 0);
		CHECK_EQ(crypt_open(mem, &p, false, "c", &cv), 0);
		CHECK_EQ(vol_write(cv, plain, sizeof(plain), 0, 0), 0);
		CHECK_EQ(vol_read(mem, disk, sizeof(disk), 0), 0);
		memcpy(area, plain, sizeof(area));
		CHECK_EQ(luks_area_crypt(specs[i], key, klens[i], area, sizeof(area), true), 0);
		CHECK(memcmp(area, disk, sizeof(area)) == 0);
		CHECK_EQ(luks_area_crypt(specs[i], key, klens[i], area, sizeof(area), false), 0);
		CHECK(memcmp(area, plain, sizeof(area)) == 0);
		vol_close(cv);
		vol_close(mem);
	}
	CHECK_EQ(luks_area_cipher_ok("twofish-xts-plain64", 64), -ENOTSUP);
	CHECK_EQ(luks_area_cipher_ok("aes-xts-plain64", 48), -ENOTSUP);
}

static const struct luks_pbkdf_opts fast_argon = {
    .type = LUKS_KDF_ARGON2ID, .memory_kib = 1024, .cpus = 1, .force_iter = 4};
static const struct luks_pbkdf_opts fast_pbkdf2 = {.type = LUKS_KDF_PBKDF2, .force_iter = 1000};

static int unlock(struct vol *dev, const char *pw, struct luks_secret **vk)
{
	struct luks_hdr *h;
	struct luks_secret *p = secret(pw);
	int r = luks_load(dev, &h);

	if (r == 0) {
		r = luks_unlock(h, dev, -1, p, vk);
		luks_hdr_free(h);
	}
	luks_secret_free(p);
	return r;
}

static void corrupt(struct vol *dev, uint64_t off)
{
	unsigned char b[512];

	vol_read(dev, b, 512, off);
	b[200] ^= 0x55; /* inside the uuid */
	vol_write(dev, b, 512, off, 0);
}

static void test_lifecycle(uint32_t sector, uint32_t key_bytes, const struct luks_pbkdf_opts *kdf)
{
	struct luks2_format_opts fo = {
	    .key_bytes = key_bytes, .sector_size = sector, .label = "test", .pbkdf = *kdf};
	struct luks_secret *pw = secret("first"), *pw2 = secret("second"), *vk = NULL, *vk2 = NULL;
	struct luks_hdr *h = NULL;
	struct vol *dev, *plain;
	unsigned char buf[8192], back[8192];
	unsigned long long seed = sector + key_bytes;

	CHECK_EQ(mem_member_open("20M", 0, &dev), 0);
	CHECK_EQ(luks_probe(dev), 0);
	CHECK_EQ(luks2_format(dev, &fo, pw), 0);
	CHECK_EQ(luks_probe(dev), 2);
	CHECK_EQ(unlock(dev, "first", &vk), 0);
	CHECK_EQ(vk ? vk->len : 0, key_bytes);
	CHECK_EQ(unlock(dev, "wrong", &vk2), -EPERM);
	CHECK(strcmp(err_detail(-EPERM), "no key slot matches this passphrase") == 0);

	/* add slot 1, change it, remove slot 0 */
	CHECK_EQ(luks_load(dev, &h), 0);
	CHECK_EQ(h->seg.sector_size, sector);
	CHECK(strcmp(h->label, "test") == 0);
	CHECK_EQ(luks2_keyslot_store(h, dev, -1, vk, pw2, kdf), 1);
	CHECK(h->slots[1].area_offset >= h->slots[0].area_offset + h->slots[0].area_size);
	luks_hdr_free(h);
	CHECK_EQ(unlock(dev, "second", &vk2), 1);
	CHECK(vk2 && memcmp(vk2->data, vk->data, vk->len) == 0);
	luks_secret_free(vk2);
	vk2 = NULL;
	CHECK_EQ(luks_load(dev, &h), 0);
	CHECK_EQ(luks2_keyslot_store(h, dev, 1, vk, pw, kdf), 1); /* change */
	CHECK_EQ(luks2_keyslot_remove(h, dev, 0), 0);
	luks_hdr_free(h);
	CHECK_EQ(unlock(dev, "second", &vk2), -EPERM);
	CHECK_EQ(unlock(dev, "first", &vk2), 1);
	luks_secret_free(vk2);
	vk2 = NULL;

	/* payload round trip, and the ciphertext is not the plaintext */
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)check_rand(&seed);
	CHECK_EQ(luks_load(dev, &h), 0);
	CHECK_EQ(luks_open_payload(h, dev, false, vk, &plain), 0);
	CHECK_EQ(plain->size, (20u << 20) - (16u << 20));
	CHECK_EQ(vol_write(plain, buf, sizeof(buf), 4096, 0), 0);
	CHECK_EQ(vol_read(plain, back, sizeof(back), 4096), 0);
	CHECK(memcmp(buf, back, sizeof(buf)) == 0);
	CHECK_EQ(vol_read(dev, back, sizeof(back), (16u << 20) + 4096), 0);
	CHECK(memcmp(buf, back, sizeof(buf)) != 0);
	vol_close(plain);
	luks_hdr_free(h);

	/* primary damaged: loads from the secondary, repair rewrites it */
	corrupt(dev, 0);
	CHECK_EQ(luks_probe(dev), 2); /* the magic survives */
	CHECK_EQ(luks_load(dev, &h), 0);
	CHECK(h && !h->primary_ok && h->secondary_ok && h->needs_repair);
	CHECK_EQ(luks_repair(h, dev), 0);
	luks_hdr_free(h);
	CHECK_EQ(luks_load(dev, &h), 0);
	CHECK(h && h->primary_ok && h->secondary_ok && !h->needs_repair);
	luks_hdr_free(h);
	/* secondary damaged */
	corrupt(dev, 16384);
	CHECK_EQ(luks_load(dev, &h), 0);
	CHECK(h && h->primary_ok && !h->secondary_ok);
	luks_hdr_free(h);
	/* both damaged */
	corrupt(dev, 0);
	CHECK_EQ(luks_load(dev, &h), -EINVAL);
	CHECK(strstr(err_detail(-EINVAL), "both LUKS2 headers are damaged") != NULL);

	luks_secret_free(vk);
	luks_secret_free(pw);
	luks_secret_free(pw2);
	vol_close(dev);
}

/* Replace the first `from` in both LUKS2 JSON areas by `to` and give
 * both copies their checksums again: a header as a foreign tool (or a
 * damaged disk) could have written it. */
static void rewrite_json(struct vol *dev, const char *from, const char *to)
{
	static unsigned char area[16384], json[12288];
	static const unsigned char zero[64];

	for (uint64_t off = 0; off <= 16384; off += 16384) {
		CHECK_EQ(vol_read(dev, area, sizeof(area), off), 0);
		char *j = (char *)area + 4096, *at = strstr(j, from);
		CHECK(at != NULL);
		if (!at)
			return;
		size_t head = (size_t)(at - j);
		memset(json, 0, sizeof(json));
		memcpy(json, j, head);
		snprintf((char *)json + head, sizeof(json) - head, "%s%s", to, at + strlen(from));
		memcpy(area + 4096, json, sizeof(json));
		EVP_MD_CTX *ctx = EVP_MD_CTX_new();
		CHECK(ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) &&
		      EVP_DigestUpdate(ctx, area, 448) && EVP_DigestUpdate(ctx, zero, 64) &&
		      EVP_DigestUpdate(ctx, area + 512, sizeof(area) - 512) &&
		      EVP_DigestFinal_ex(ctx, area + 448, NULL));
		EVP_MD_CTX_free(ctx);
		CHECK_EQ(vol_write(dev, area, sizeof(area), off, 0), 0);
	}
}

/* JSON that parses but says the wrong thing (tests/fuzz/fuzz_luks.c
 * findings): refused with a reason, never a crash. */
static void test_json_shapes(void)
{
	static const struct {
		const char *from, *to, *why;
		bool argon;
	} cases[] = {
	    /* were NULL dereferences in json_object_object_foreach */
	    {"\"keyslots\":{", "\"keyslots\":[],\"k\":{", "is not an object"},
	    {"\"segments\":{\"0\"", "\"segments\":7,\"s\":{\"0\"", "is not an object"},
	    /* was an assertion failure in json_object_array_length */
	    {"\"segments\":[\"0\"]", "\"segments\":{\"0\":0}", "segments is not an array"},
	    /* key material inside the data segment */
	    {"\"offset\":\"16777216\"", "\"offset\":\"65536\"",
	     "keyslots area reaches into data segment 0"},
	    /* argon2 asking for 4 TiB or 2^24 lanes, before an unlock tries */
	    {"\"memory\":1024", "\"memory\":4294967295",
	     "keyslot 0 kdf: memory 4294967295 is out of range", true},
	    {"\"cpus\":1", "\"cpus\":16777215", "keyslot 0 kdf: cpus 16777215 is out of range",
	     true},
	};
	struct luks_secret *pw = secret("pw");

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct luks2_format_opts fo = {.key_bytes = 32,
		                               .sector_size = 512,
		                               .pbkdf = cases[i].argon ? fast_argon : fast_pbkdf2};
		struct luks_hdr *h = NULL;
		struct vol *dev;
		CHECK_EQ(mem_member_open("20M", 0, &dev), 0);
		CHECK_EQ(luks2_format(dev, &fo, pw), 0);
		CHECK_EQ(luks_load(dev, &h), 0);
		luks_hdr_free(h);
		h = NULL;
		rewrite_json(dev, cases[i].from, cases[i].to);
		err_clear();
		CHECK_EQ(luks_load(dev, &h), -EINVAL);
		/* the reason, once, after the device name */
		const char *d = err_detail(-EINVAL);
		CHECK(strstr(d, cases[i].why) != NULL);
		CHECK(strncmp(d, dev->name, strlen(dev->name)) == 0 &&
		      strstr(d + 1, dev->name) == NULL);
		vol_close(dev);
	}
	luks_secret_free(pw);
}

static size_t freed_max;
static void note_free(const unsigned char *p, size_t len)
{
	(void)p;
	if (len > freed_max)
		freed_max = len;
}

/* The AF material, split key or decrypted, lives in locked memory (seen
 * as a secmem block of its size being freed), and once a secret exists
 * the process is not dumpable. */
static void test_secrets_locked(void)
{
	struct luks2_format_opts fo = {.key_bytes = 64, .sector_size = 512, .pbkdf = fast_pbkdf2};
	struct luks_secret *pw = secret("pw"), *vk = NULL;
	struct luks_hdr *h = NULL;
	struct vol *dev;

	CHECK_EQ(prctl(PR_GET_DUMPABLE), 0);
	CHECK_EQ(mem_member_open("20M", 0, &dev), 0);
	secmem_free_hook = note_free;
	freed_max = 0;
	CHECK_EQ(luks2_format(dev, &fo, pw), 0);
	CHECK(freed_max >= 64 * 4000); /* the split key, before encryption */
	CHECK_EQ(luks_load(dev, &h), 0);
	freed_max = 0;
	CHECK_EQ(luks_unlock(h, dev, -1, pw, &vk), 0);
	CHECK(freed_max >= 64 * 4000); /* the decrypted material */
	secmem_free_hook = NULL;
	luks_secret_free(vk);
	luks_hdr_free(h);
	vol_close(dev);
	luks_secret_free(pw);
}

int main(void)
{
	log_verbosity = LOG_ERROR;
	test_af();
	test_pbkdf2();
	test_kdf_choose();
	test_area_vs_crypt();
	test_lifecycle(512, 64, &fast_argon);
	test_lifecycle(4096, 32, &fast_pbkdf2);
	test_lifecycle(4096, 64, &fast_argon);
	test_json_shapes();
	test_secrets_locked();
	return check_done();
}
