/* luks.h — LUKS2 (read and write) and LUKS1 (read and unlock) headers,
 * compatible with cryptsetup.  The one header the rest of uraid includes.
 *
 * A header is loaded from the top vol of a stack (luks_load), unlocked with
 * a passphrase (luks_unlock gives the volume key), and turned into the
 * plaintext vol (luks_open_payload: a slice of the device behind a crypt
 * vol).  LUKS2 headers can also be created (luks2_format) and their key
 * slots added, replaced and removed (luks2.h).
 *
 * Module map: luks.c (probe, load, unlock, payload: any version, through
 * the version table of luks_version.h), luks1.c (the 592-byte phdr),
 * luks2.c (binary header + JSON, writing), luks2_check.c (the JSON's
 * rules), luks_hdr.c (the in-memory header, secrets), luks_af.c
 * (anti-forensic splitter), luks_kdf.c (argon2/pbkdf2 and the iteration
 * benchmark), luks_cipher.c (key-slot area encryption), luks_dump.c and
 * luks2_dump.c (luksDump-style report), luks_backup.c (header backup and
 * restore in cryptsetup's format).
 *
 * Secrets (passphrases, derived keys, volume keys) live in buffers from
 * luks_secret_alloc(), which are locked in memory and wiped when freed. */
#ifndef URAID_LUKS_H
#define URAID_LUKS_H

#include "core/vol.h"
#include "luks/luks2.h"
#include "luks/luks_af.h"
#include "luks/luks_backup.h"
#include "luks/luks_cipher.h"
#include "luks/luks_dump.h"
#include "luks/luks_hdr.h"
#include "luks/luks_kdf.h"

#include <stdbool.h>

/* Does the vol start with a LUKS magic?  Returns 1 or 2 (version), 0 when
 * not, or -errno on a read error. */
int luks_probe(struct vol *dev);

/* Read and check the header.  A LUKS2 device with one damaged copy loads
 * from the other and sets needs_repair (a warning is logged).  Both
 * damaged, or a device shorter than the header area: -EINVAL with
 * detail.  Free with luks_hdr_free(). */
int luks_load(struct vol *dev, struct luks_hdr **out);

/* Try the passphrase on the active key slots bound to the data segment
 * (or only on slot >= 0, which must be bound).  Returns the slot number
 * that opened and sets *vk (the volume key, in a secret), or -EPERM "no
 * key slot matches this passphrase". */
int luks_unlock(struct luks_hdr *h, struct vol *dev, int slot, const struct luks_secret *pass,
                struct luks_secret **vk);

/* Check a volume key against the header's digest.  0 if it matches. */
int luks_verify_key(const struct luks_hdr *h, const struct luks_secret *vk);

/* The plaintext vol: slice the payload off dev and put the crypt layer on
 * it.  Owns dev when owns_dev (also on failure). */
int luks_open_payload(struct luks_hdr *h, struct vol *dev, bool owns_dev,
                      const struct luks_secret *vk, struct vol **out);

/* Remove key slot `slot` without its passphrase (cryptsetup luksKillSlot):
 * the header first, then the slot's material overwritten with random
 * bytes.  LUKS1 and LUKS2.  -ENOENT when the slot is not active. */
int luks_keyslot_kill(struct luks_hdr *h, struct vol *dev, int slot);

/* Is uuid one (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, hexadecimal, any
 * case)?  0 with the lower-case form libuuid writes in out, or -EINVAL with
 * the detail. */
int luks_uuid_check(const char *uuid, char out[40]);

/* Give the header a new UUID (cryptsetup luksUUID --uuid), checked as
 * luks_uuid_check() does.  LUKS1 and LUKS2 (both copies). */
int luks_set_uuid(struct luks_hdr *h, struct vol *dev, const char *uuid);

/* Rewrite both LUKS2 header copies if loading found one damaged or stale.
 * No-op for a clean header; -ENOTSUP for LUKS1. */
int luks_repair(struct luks_hdr *h, struct vol *dev);

#endif
