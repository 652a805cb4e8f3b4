/* luks_af.c — the LUKS anti-forensic information splitter.
 *
 * A key of n bytes is stored as `stripes` blocks of n bytes: all but the
 * last are random, and the last is the key XOR the "diffusion" of the XOR
 * chain of the others.  Every bit of every stripe is needed to get the key
 * back, so wiping any small part of a key slot destroys it (Clemens
 * Fruhwirth, "TKS1", as used by LUKS1 and LUKS2's "luks1" af type).
 *
 * diffuse(): hash the block in digest-sized pieces, each prefixed with its
 * big-endian 32-bit index; a short last piece takes the digest's prefix. */
#include "luks/luks_af.h"

#include "core/log.h"
#include "core/random.h"
#include "luks/luks_hdr.h"
#include "luks/luks_kdf.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

static int af_diffuse(const EVP_MD *md, unsigned char *buf, size_t len)
{
	size_t ds = (size_t)EVP_MD_get_size(md), done = 0;
	unsigned char d[EVP_MAX_MD_SIZE];
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	uint32_t i = 0;
	int r = 0;

	if (!ctx)
		return -ENOMEM;
	while (done < len) {
		size_t piece = len - done < ds ? len - done : ds;
		unsigned char be[4] = {(unsigned char)(i >> 24), (unsigned char)(i >> 16),
		                       (unsigned char)(i >> 8), (unsigned char)i};
		if (!EVP_DigestInit_ex(ctx, md, NULL) || !EVP_DigestUpdate(ctx, be, sizeof(be)) ||
		    !EVP_DigestUpdate(ctx, buf + done, piece) ||
		    !EVP_DigestFinal_ex(ctx, d, NULL)) {
			r = err_set(-EIO, "AF diffuse: hash failed");
			break;
		}
		memcpy(buf + done, d, piece);
		done += piece;
		i++;
	}
	explicit_bzero(d, sizeof(d));
	EVP_MD_CTX_free(ctx);
	return r;
}

static void af_xor(unsigned char *dst, const unsigned char *src, size_t len)
{
	for (size_t i = 0; i < len; i++)
		dst[i] ^= src[i];
}

static int af_check(size_t key_len, uint32_t stripes, const char *hash, EVP_MD **md)
{
	*md = NULL;
	if (key_len == 0 || key_len > LUKS_KEY_MAX || stripes == 0 || stripes > 100000)
		return err_set(-EINVAL, "AF: bad key size %zu or stripes %u", key_len, stripes);
	return luks_md_fetch(hash, md);
}

int luks_af_split(const void *key, size_t key_len, uint32_t stripes, const char *hash,
                  void *material)
{
	unsigned char *m = material, buf[LUKS_KEY_MAX] = {0};
	EVP_MD *md;
	int r = af_check(key_len, stripes, hash, &md);

	if (r < 0)
		return r;
	r = random_fill(m, key_len * (stripes - 1));
	if (r < 0)
		goto out;
	for (uint32_t i = 0; i + 1 < stripes; i++) {
		af_xor(buf, m + (size_t)i * key_len, key_len);
		r = af_diffuse(md, buf, key_len);
		if (r < 0)
			goto out;
	}
	memcpy(m + (size_t)(stripes - 1) * key_len, buf, key_len);
	af_xor(m + (size_t)(stripes - 1) * key_len, key, key_len);
out:
	EVP_MD_free(md);
	explicit_bzero(buf, sizeof(buf));
	return r;
}

int luks_af_merge(const void *material, size_t key_len, uint32_t stripes, const char *hash,
                  void *key)
{
	const unsigned char *m = material;
	unsigned char buf[LUKS_KEY_MAX] = {0};
	EVP_MD *md;
	int r = af_check(key_len, stripes, hash, &md);

	if (r < 0)
		return r;
	for (uint32_t i = 0; i + 1 < stripes; i++) {
		af_xor(buf, m + (size_t)i * key_len, key_len);
		r = af_diffuse(md, buf, key_len);
		if (r < 0)
			goto out;
	}
	af_xor(buf, m + (size_t)(stripes - 1) * key_len, key_len);
	memcpy(key, buf, key_len);
out:
	EVP_MD_free(md);
	explicit_bzero(buf, sizeof(buf));
	return r;
}
