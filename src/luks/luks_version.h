/* luks_version.h — what the files of src/luks/ share and nobody else
 * sees: the table of operations each LUKS version provides, and the
 * helpers the version files use.
 *
 * luks.c walks its list of versions (luks1_ops, luks2_ops) and never
 * names a version's functions; a version file (luks1.c, luks2.c) fills a
 * struct luks_hdr and knows nothing of luks.c.  A new version is one file
 * with one table, and one entry in luks.c's list. */
#ifndef URAID_LUKS_VERSION_H
#define URAID_LUKS_VERSION_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct luks_hdr; /* luks_hdr.h */
struct vol;      /* core/vol.h */

struct luks_version_ops {
	/* The big-endian u16 after LUKS_MAGIC at offset 0. */
	int version;
	/* A copy of the header elsewhere when offset 0 has none (LUKS2's
	 * secondary): 1 found, 0 not.  buf is a 4096-byte I/O buffer.  NULL:
	 * the version keeps no other copy. */
	int (*probe_backup)(struct vol *dev, unsigned char *buf);
	/* Read, check and describe the header in h (zeroed, h->ops set).
	 * -errno with the detail set; h may hold state to free. */
	int (*load)(struct vol *dev, struct luks_hdr *h);
	/* Rewrite every copy of the header from h.  NULL: read-only. */
	int (*write)(struct luks_hdr *h, struct vol *dev);
	/* Remove active key slot i (h->slots[i] and the header on dev), then
	 * overwrite its material (luks_keyslot_kill). */
	int (*kill_slot)(struct luks_hdr *h, struct vol *dev, int slot);
	/* Store uuid (checked, lower-case) in h and on dev (luks_set_uuid). */
	int (*set_uuid)(struct luks_hdr *h, struct vol *dev, const char *uuid);
	/* The version's part of luks_dump(). */
	void (*dump)(const struct luks_hdr *h, FILE *f);
	/* Free h->state (may be NULL). */
	void (*free)(void *state);
};

extern const struct luks_version_ops luks1_ops; /* luks1.c */
extern const struct luks_version_ops luks2_ops; /* luks2.c */

/* The rules of a LUKS2 header's JSON (luks2_check.c): 0, or -EINVAL (a
 * broken rule) / -ENOTSUP (a feature uraid lacks) with why filled in. */
struct json_object;
int luks2_check(struct json_object *j, uint64_t hdr_size, char *why, size_t why_len);

/* LUKS2's part of the report (luks2_dump.c). */
void luks2_dump(const struct luks_hdr *h, FILE *f);

/* Overwrite [off, off + size) of dev with random bytes, so that the key
 * material there (and the key it held) is gone; blocks of dev that the
 * range covers only in part keep their other bytes (luks.c). */
int luks_area_wipe(struct vol *dev, uint64_t off, uint64_t size);

/* One hex field of the report: title, then 16 bytes a line, the
 * following lines after indent (luks_dump.c). */
void luks_dump_hex(FILE *f, const char *title, const unsigned char *p, size_t n,
                   const char *indent);

#endif
