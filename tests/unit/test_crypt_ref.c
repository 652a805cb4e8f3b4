/* test_crypt_ref.c — the crypt vol against a second, independent
 * implementation of the modes and IV generators, written here from the
 * definitions (IEEE 1619 XTS; CBC; dm-crypt's plain, plain64 and
 * essiv:sha256) on top of a bare AES block function (OpenSSL ECB).  The
 * vol uses OpenSSL's XTS and CBC modes, so this checks the IV numbering,
 * large-sector and iv_offset handling and the tweak chaining by another
 * route.  (`openssl enc` refuses XTS, so the CLI is no help here; the
 * real dm-crypt is test_crypt_dmcrypt's.) */
#include "check.h"

#include "core/log.h"
#include "disc/crypt.h"
#include "member/member.h"

#include <openssl/evp.h>
#include <stdbool.h>
#include <string.h>

/* A bare AES block encryption under one key. */
static EVP_CIPHER_CTX *aes_new(const unsigned char *key, int key_len)
{
	EVP_CIPHER_CTX *x = EVP_CIPHER_CTX_new();
	const EVP_CIPHER *c = key_len == 16 ? EVP_aes_128_ecb()
			      : key_len == 24 ? EVP_aes_192_ecb()
					      : EVP_aes_256_ecb();

	CHECK(x && EVP_EncryptInit_ex(x, c, NULL, key, NULL));
	EVP_CIPHER_CTX_set_padding(x, 0);
	return x;
}

static void aes_block(EVP_CIPHER_CTX *x, const unsigned char in[16], unsigned char out[16])
{
	int n = 0;

	CHECK(EVP_EncryptUpdate(x, out, &n, in, 16) && n == 16);
}

static void aes_once(const unsigned char *key, int key_len, const unsigned char in[16],
		     unsigned char out[16])
{
	EVP_CIPHER_CTX *x = aes_new(key, key_len);

	aes_block(x, in, out);
	EVP_CIPHER_CTX_free(x);
}

/* IEEE 1619: T = E_K2(i); C_j = E_K1(P_j ^ T) ^ T; T *= alpha in GF(2^128)
 * with the little-endian byte order of the standard. */
static void ref_xts(const unsigned char *key, int half, const unsigned char iv[16],
		    const unsigned char *in, unsigned char *out, size_t len)
{
	EVP_CIPHER_CTX *k1 = aes_new(key, half);
	unsigned char t[16], b[16];

	aes_once(key + half, half, iv, t);
	for (size_t j = 0; j < len; j += 16) {
		for (int k = 0; k < 16; k++)
			b[k] = in[j + k] ^ t[k];
		aes_block(k1, b, b);
		for (int k = 0; k < 16; k++)
			out[j + k] = b[k] ^ t[k];
		int carry = t[15] >> 7;
		for (int k = 15; k > 0; k--)
			t[k] = (unsigned char)(t[k] << 1 | t[k - 1] >> 7);
		t[0] = (unsigned char)(t[0] << 1);
		if (carry)
			t[0] ^= 0x87;
	}
	EVP_CIPHER_CTX_free(k1);
}

static void ref_cbc(const unsigned char *key, int klen, const unsigned char iv[16],
		    const unsigned char *in, unsigned char *out, size_t len)
{
	EVP_CIPHER_CTX *k = aes_new(key, klen);
	unsigned char prev[16], b[16];

	memcpy(prev, iv, 16);
	for (size_t j = 0; j < len; j += 16) {
		for (int i = 0; i < 16; i++)
			b[i] = in[j + i] ^ prev[i];
		aes_block(k, b, out + j);
		memcpy(prev, out + j, 16);
	}
	EVP_CIPHER_CTX_free(k);
}

enum ivgen { PLAIN, PLAIN64, ESSIV };

static void ref_iv(enum ivgen g, const unsigned char *key, int klen, uint64_t n,
		   unsigned char iv[16])
{
	memset(iv, 0, 16);
	if (g == PLAIN)
		n = (uint32_t)n;
	for (int i = 0; i < 8; i++)
		iv[i] = (unsigned char)(n >> (8 * i));
	if (g == ESSIV) {
		unsigned char salt[32];
		unsigned int slen = 0;
		CHECK(EVP_Digest(key, (size_t)klen, salt, &slen, EVP_sha256(), NULL) && slen == 32);
		aes_once(salt, 32, iv, iv);
	}
}

static void check_spec(const char *cipher, int xts, enum ivgen g, int klen, uint32_t ss,
		       bool large, uint64_t iv_offset, unsigned long long seed)
{
	unsigned char key[64], *pt = malloc(1u << 20), *got = malloc(1u << 20);
	unsigned char want[4096], iv[16];
	struct crypt_params p = { .cipher = cipher, .key = key, .key_len = (size_t)klen,
				  .sector_size = ss, .iv_offset = iv_offset,
				  .iv_large_sectors = large };
	struct vol *m = NULL, *c = NULL;

	for (int i = 0; i < 64; i++)
		key[i] = (unsigned char)check_rand(&seed);
	CHECK_EQ(member_open("mem:4M", 0, &m), 0);
	CHECK_EQ(crypt_open(m, &p, false, NULL, &c), 0);
	if (!c)
		goto out;
	for (size_t i = 0; i < (1u << 20); i++)
		pt[i] = (unsigned char)check_rand(&seed);
	/* One large write (split across cores) at a random sector. */
	uint64_t off = check_rand(&seed) % ((3u << 20) / ss) * ss;
	CHECK_EQ(vol_write(c, pt, 1u << 20, off, 0), 0);
	CHECK_EQ(vol_read(m, got, 1u << 20, off), 0);
	for (uint64_t s = 0; s < (1u << 20) / ss; s++) {
		uint64_t n = (off + s * ss) / 512 + iv_offset;
		if (large)
			n /= ss / 512;
		ref_iv(g, key, klen, n, iv); /* ESSIV hashes the whole volume key */
		if (xts)
			ref_xts(key, klen / 2, iv, pt + s * ss, want, ss);
		else
			ref_cbc(key, klen, iv, pt + s * ss, want, ss);
		if (memcmp(want, got + s * ss, ss) != 0) {
			fprintf(stderr, "%s ss %u iv_offset %llu: sector %llu differs\n", cipher, ss,
				(unsigned long long)iv_offset, (unsigned long long)s);
			CHECK(0);
			break;
		}
	}
	vol_close(c);
out:
	vol_close(m);
	free(pt);
	free(got);
}

int main(void)
{
	/* 512-byte sectors, then 4096-byte sectors with LUKS's 512-byte IV
	 * units and with dm-crypt's iv_large_sectors. */
	for (int variant = 0; variant < 3; variant++) {
		uint32_t ss = variant == 0 ? 512 : 4096;
		bool large = variant == 2;
		uint64_t step = ss / 512;
		check_spec("aes-xts-plain64", 1, PLAIN64, 64, ss, large, 0, 1);
		check_spec("aes-xts-plain64", 1, PLAIN64, 32, ss, large, 7 * step, 2);
		check_spec("aes-xts-plain64", 1, PLAIN64, 64, ss, large, (1ull << 40) * step, 3);
		check_spec("aes-xts-plain", 1, PLAIN, 64, ss, large, ((1ull << 32) - 5) * step, 4);
		check_spec("aes-cbc-essiv:sha256", 0, ESSIV, 32, ss, large, 0, 5);
		check_spec("aes-cbc-essiv:sha256", 0, ESSIV, 16, ss, large, 3 * step, 6);
		check_spec("aes-cbc-plain64", 0, PLAIN64, 24, ss, large, 0, 7);
	}
	return check_done();
}
