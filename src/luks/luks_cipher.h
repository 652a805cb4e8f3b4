/* luks_cipher.h — encryption of key-slot areas (luks_cipher.c). */
#ifndef URAID_LUKS_CIPHER_H
#define URAID_LUKS_CIPHER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* En- or decrypt len bytes (a multiple of 512) of key-slot material in
 * place, in 512-byte sectors numbered from 0, as dm-crypt would with the
 * given spec: "aes-xts-plain64", "aes-xts-plain", "aes-cbc-essiv:sha256",
 * "aes-cbc-plain64", "aes-cbc-plain".  -ENOTSUP with detail otherwise. */
int luks_area_crypt(const char *spec, const void *key, size_t key_len, void *buf, size_t len,
                    bool encrypt);
/* The same for sectors of sector_size bytes whose IV numbers are first_iv,
 * first_iv + iv_step, ... (used to check the data path, see luks.c). */
int luks_sector_crypt(const char *spec, const void *key, size_t key_len, void *buf, size_t len,
                      uint32_t sector_size, uint64_t first_iv, uint32_t iv_step, bool encrypt);
/* The cipher spec in dm-crypt's usual form: the kernel crypto-API form
 * "capi:xts(aes)-plain64" becomes "aes-xts-plain64"; anything else is
 * copied.  -ENAMETOOLONG if it does not fit len. */
int luks_cipher_name(const char *spec, char *out, size_t len);
/* 0 if spec is a cipher the area code handles with key_len bytes of key. */
int luks_area_cipher_ok(const char *spec, size_t key_len);

#endif
