/* luks_backup.h — header backup and restore in cryptsetup's format
 * (luksHeaderBackup / luksHeaderRestore), luks_backup.c.
 *
 * A backup is the header area of the device as it lies there (struct
 * luks_hdr's hdr_area: both LUKS2 copies and the keyslots area; LUKS1's
 * phdr and key material), zeros where cryptsetup writes zeros, padded with
 * zeros to a multiple of 4096.  It holds key material, encrypted: whoever
 * has it and an old passphrase opens the volume even after that passphrase
 * was removed from the device. */
#ifndef URAID_LUKS_BACKUP_H
#define URAID_LUKS_BACKUP_H

#include "core/vol.h"
#include "luks/luks_hdr.h"

#include <stdbool.h>
#include <stddef.h>

/* cryptsetup's granule for a backup file (its page size on x86 and arm64). */
#define LUKS_BACKUP_ALIGN 4096u

/* Write dev's header area (h: its header, loaded) to a new file at path,
 * mode 0400; an existing path is refused (-EEXIST), as cryptsetup does.
 * dev is only read.  A file left half-written is removed. */
int luks_header_backup(const struct luks_hdr *h, struct vol *dev, const char *path);

/* The differences between a backup's header and a device's that a restore
 * must not pass over silently: version, UUID, data offset, the size of the
 * header area (LUKS2: metadata and keyslots areas; LUKS1: key size).
 * Returns how many differ, named in why ("; "-separated, "" for none). */
int luks_backup_diff(const struct luks_hdr *backup, const struct luks_hdr *dev, char *why,
                     size_t why_len);

/* Restore the header area held by backup (a vol over the backup file) onto
 * dev.  Refused, with nothing written: a backup that does not load as a
 * LUKS header or is shorter than its header area, a header area larger
 * than dev; and unless force, a dev whose own header does not load or
 * differs (luks_backup_diff).  Writes exactly the backup's header area
 * (rounded up to dev's block by rewriting what the last block holds),
 * then checks that the header loads from dev. */
int luks_header_restore(struct vol *dev, struct vol *backup, bool force);

#endif
