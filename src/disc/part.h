/* part.h — the partition table of a disk image: GPT (primary or backup
 * header, 512- or 4096-byte sectors, protective or hybrid MBR) and DOS/MBR
 * (four primaries, extended partitions and their EBR chains), read as
 * Linux reads them so that partition N here is /dev/sdaN there
 * (docs/foreign.md, "Partition tables").  part_open() cuts one out as a
 * slice (slice.h) for the layers above: an md member, a LUKS device.
 * Reading only: nothing here writes to the disk. */
#ifndef URAID_PART_H
#define URAID_PART_H

#include "core/vol.h"

#include <stdbool.h>
#include <stdint.h>

struct part {
	unsigned number;       /* as Linux numbers it: GPT entry index + 1; MBR 1-4
	                        * primary, 5.. logical in chain order */
	uint64_t start, size;  /* bytes from the start of the disk */
	char type[40];         /* GPT type GUID as text (lowercase, dashed) or
	                        * MBR type "0x83" */
	const char *type_name; /* "Linux RAID", "Linux LVM", "EFI System", ...
	                        * (fdisk's names for MBR types: "Linux",
	                        * "Linux raid autodetect", ...) or NULL */
	char name[128];        /* GPT partition name in UTF-8 ("" for MBR) */
	char uuid[40];         /* GPT unique partition GUID ("" for MBR) */
	bool bootable;         /* MBR active flag */
	uint64_t attrs;        /* GPT attribute bits (0 for MBR) */
	uint8_t mbr_type;      /* the MBR type byte (0 for GPT) */
	bool logical;          /* an MBR logical partition (number >= 5) */
};

struct part_table {
	const char *scheme; /* "gpt" or "dos" (as sfdisk says label) */
	char id[40];        /* GPT disk GUID, or the MBR disk signature "0x1234abcd" */
	uint32_t sector;    /* logical sector size it was found with: 512 or 4096 */
	unsigned n;
	struct part *parts;           /* in number order; empty slots left out (GPT: zero
	                               * type GUID; MBR: zero size, as Linux, whatever the
	                               * type); extended containers left out (Linux shows
	                               * each as a 1 KiB partition of its own number) */
	char warning[256];            /* "" or e.g. "primary GPT header is damaged (CRC);
	                               * using the backup at LBA N" */
	uint64_t first_lba, last_lba; /* GPT: the usable range, in sectors */
};

/* Read v's partition table.  1 with *out set (free with part_table_free),
 * 0 when v has none (a protective MBR with no valid GPT is an error, not
 * none), -errno with err_set() detail naming the layer and the disk
 * ("a.img: GPT: entry 3 ends past the disk's end").  Reads only. */
int part_scan(struct vol *v, struct part_table **out);
void part_table_free(struct part_table *t);

/* Open partition p of disk as a vol named name (a slice that borrows
 * disk: closing it leaves disk open).  p must lie inside disk in whole
 * blocks of disk->block_min; -EINVAL with err_set() detail if not. */
int part_open(struct vol *disk, const struct part *p, const char *name, struct vol **out);

#endif
