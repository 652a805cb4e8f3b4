/* luks_cipher.c — encryption of LUKS key-slot areas.
 *
 * Key material is encrypted like a tiny dm-crypt device: 512-byte sectors
 * numbered from 0 at the start of the area, with the IV scheme of the
 * cipher spec.  Only what LUKS headers made by cryptsetup and qemu use is
 * here: AES in XTS (plain64, plain) and CBC (essiv:HASH, plain64, plain).
 * The data path has its own, faster implementation (src/disc/crypt.c);
 * this one runs once per unlock on a few hundred KiB. */
#include "luks/luks_cipher.h"

#include "core/log.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

#define AREA_SECTOR 512

enum area_iv { IV_PLAIN, IV_PLAIN64, IV_ESSIV };

struct area_spec {
	const EVP_CIPHER *cipher;
	enum area_iv iv;
	const EVP_MD *essiv_md;
};

static int area_parse(const char *spec, size_t key_len, struct area_spec *a)
{
	char name[16], mode[16], iv[32];
	const char *p = spec, *d1, *d2;

	memset(a, 0, sizeof(*a));
	d1 = strchr(p, '-');
	d2 = d1 ? strchr(d1 + 1, '-') : NULL;
	if (!d1 || !d2 || (size_t)(d1 - p) >= sizeof(name) ||
	    (size_t)(d2 - d1 - 1) >= sizeof(mode) || strlen(d2 + 1) >= sizeof(iv))
		goto unsupported;
	snprintf(name, sizeof(name), "%.*s", (int)(d1 - p), p);
	snprintf(mode, sizeof(mode), "%.*s", (int)(d2 - d1 - 1), d1 + 1);
	snprintf(iv, sizeof(iv), "%s", d2 + 1);
	if (strcmp(name, "aes") != 0)
		goto unsupported;
	if (strcmp(mode, "xts") == 0) {
		if (key_len == 32)
			a->cipher = EVP_aes_128_xts();
		else if (key_len == 64)
			a->cipher = EVP_aes_256_xts();
	} else if (strcmp(mode, "cbc") == 0) {
		if (key_len == 16)
			a->cipher = EVP_aes_128_cbc();
		else if (key_len == 24)
			a->cipher = EVP_aes_192_cbc();
		else if (key_len == 32)
			a->cipher = EVP_aes_256_cbc();
	} else {
		goto unsupported;
	}
	if (!a->cipher)
		return err_set(-ENOTSUP, "cipher %s: unsupported key size of %zu bits", spec,
		               key_len * 8);
	if (strcmp(iv, "plain64") == 0) {
		a->iv = IV_PLAIN64;
	} else if (strcmp(iv, "plain") == 0) {
		a->iv = IV_PLAIN;
	} else if (strncmp(iv, "essiv:", 6) == 0 && strcmp(mode, "cbc") == 0) {
		a->iv = IV_ESSIV;
		a->essiv_md = EVP_get_digestbyname(iv + 6);
		/* The ESSIV cipher is AES keyed with the digest: 16..32 bytes. */
		if (!a->essiv_md || EVP_MD_get_size(a->essiv_md) < 16 ||
		    EVP_MD_get_size(a->essiv_md) > 32)
			goto unsupported;
	} else {
		goto unsupported;
	}
	return 0;
unsupported:
	return err_set(-ENOTSUP, "unsupported cipher '%s'", spec);
}

int luks_cipher_name(const char *spec, char *out, size_t len)
{
	const char *mode, *open, *close;
	int n;

	if (strncmp(spec, "capi:", 5) != 0) {
		n = snprintf(out, len, "%s", spec);
		return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
	}
	/* The kernel's crypto-API form: capi:MODE(CIPHER)-IV. */
	mode = spec + 5;
	open = strchr(mode, '(');
	close = open ? strchr(open, ')') : NULL;
	if (!open || !close || close[1] != '-' || open == mode || close == open + 1 ||
	    memchr(open + 1, '(', (size_t)(close - open - 1))) {
		n = snprintf(out, len, "%s", spec); /* refused as unsupported later */
		return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
	}
	n = snprintf(out, len, "%.*s-%.*s-%s", (int)(close - open - 1), open + 1,
	             (int)(open - mode), mode, close + 2);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int luks_area_cipher_ok(const char *spec, size_t key_len)
{
	struct area_spec a;

	return area_parse(spec, key_len, &a);
}

static const EVP_CIPHER *area_essiv_cipher(int len)
{
	return len == 16 ? EVP_aes_128_ecb() : len == 24 ? EVP_aes_192_ecb() : EVP_aes_256_ecb();
}

int luks_area_crypt(const char *spec, const void *key, size_t key_len, void *buf, size_t len,
                    bool encrypt)
{
	return luks_sector_crypt(spec, key, key_len, buf, len, AREA_SECTOR, 0, 1, encrypt);
}

int luks_sector_crypt(const char *spec, const void *key, size_t key_len, void *buf, size_t len,
                      uint32_t sector_size, uint64_t first_iv, uint32_t iv_step, bool encrypt)
{
	unsigned char *p = buf, iv[16], salt[EVP_MAX_MD_SIZE];
	EVP_CIPHER_CTX *ctx = NULL, *ectx = NULL;
	struct area_spec a;
	int r, outl;

	r = area_parse(spec, key_len, &a);
	if (r < 0)
		return r;
	if (sector_size == 0 || len % sector_size)
		return err_set(-EINVAL, "%zu bytes are not whole %u-byte sectors", len,
		               sector_size);
	ctx = EVP_CIPHER_CTX_new();
	if (!ctx)
		return -ENOMEM;
	if (a.iv == IV_ESSIV) {
		unsigned int sl = 0;
		ectx = EVP_CIPHER_CTX_new();
		if (!ectx || !EVP_Digest(key, key_len, salt, &sl, a.essiv_md, NULL) ||
		    !EVP_EncryptInit_ex(ectx, area_essiv_cipher((int)sl), NULL, salt, NULL)) {
			r = err_set(-EIO, "%s: ESSIV setup failed", spec);
			goto out;
		}
		EVP_CIPHER_CTX_set_padding(ectx, 0);
	}
	if (!EVP_CipherInit_ex(ctx, a.cipher, NULL, key, NULL, encrypt)) {
		r = err_set(-EIO, "%s: cipher setup failed", spec);
		goto out;
	}
	EVP_CIPHER_CTX_set_padding(ctx, 0);
	for (size_t s = 0; s < len / sector_size; s++) {
		uint64_t n = first_iv + (uint64_t)s * iv_step;
		memset(iv, 0, sizeof(iv));
		for (int i = 0; i < (a.iv == IV_PLAIN ? 4 : 8); i++)
			iv[i] = (unsigned char)(n >> (8 * i));
		if (a.iv == IV_ESSIV && !EVP_EncryptUpdate(ectx, iv, &outl, iv, sizeof(iv))) {
			r = err_set(-EIO, "%s: ESSIV failed", spec);
			goto out;
		}
		if (!EVP_CipherInit_ex(ctx, NULL, NULL, NULL, iv, encrypt) ||
		    !EVP_CipherUpdate(ctx, p + s * sector_size, &outl, p + s * sector_size,
		                      (int)sector_size)) {
			r = err_set(-EIO, "%s: %scryption failed", spec, encrypt ? "en" : "de");
			goto out;
		}
	}
out:
	explicit_bzero(salt, sizeof(salt));
	EVP_CIPHER_CTX_free(ctx);
	EVP_CIPHER_CTX_free(ectx);
	return r;
}
