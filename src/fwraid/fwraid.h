/* fwraid.h — firmware RAID: Intel Matrix Storage (IMSM, "Intel RST") and
 * SNIA DDF (Dell PERC, LSI MegaRAID) containers, opened read-only.
 *
 * A firmware RAID container is a set of whole disks that each carry the
 * same metadata block near their end (IMSM's MPB two sectors before it,
 * DDF's anchor header in the last sector).  The metadata lists the disks
 * and the volumes cut from them: each volume a range on each of its
 * member disks, striped or mirrored as its RAID level says.  Here each
 * volume becomes a vol made by disc/raid (raid_open, md's level and
 * layout numbers) over slices of the member vols, which it borrows.
 *
 * uraid never writes firmware metadata: every volume vol refuses writes
 * (VOL_CAP_READONLY), and the probe graph refuses to open one for writing
 * at all.  A volume mid-migration (a rebuild, an initialisation, a level
 * change) is refused with the reason: its layout is half the old one.
 *
 * imsm.c reads IMSM, ddf.c DDF, fwraid.c groups members into containers
 * and builds the volumes.  The parsers take any bytes
 * (tests/fuzz/fuzz_fwraid.c). */
#ifndef URAID_FWRAID_H
#define URAID_FWRAID_H

#include "core/vol.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* 1 when v carries IMSM or DDF metadata, 0 when not, -errno (err_set,
 * "NAME: IMSM: ...") when it is damaged (a bad checksum, a count past its
 * table, a volume past the disk). */
int fwraid_probe(struct vol *v);

struct fwraid_vol_found {
	char *name;                  /* as the firmware stores it ("Volume0"), made unique
	                              * among those found ("Volume0.2") */
	const char *fmt;             /* "imsm" or "ddf" */
	char *refused;               /* NULL, or why it is not opened ("migration in
	                              * progress", "member disk missing") */
	struct vol *vol;             /* read-only (NULL when refused); borrows the member
	                              * vols: closing it leaves them open */
	uint64_t size;               /* bytes */
	unsigned *members, nmembers; /* indices into the vols[] given */
	char what[128];              /* "IMSM RAID5, 4 disks, 64 KiB strip" */
};

struct fwraid_found {
	unsigned nvol;
	struct fwraid_vol_found *v;
	char warning[256]; /* "" or, e.g., a member whose metadata is older
	                    * than the others' (left out) */
};

/* Group vols[0..n) that fwraid_probe() says carry metadata into containers
 * (IMSM family number, DDF header GUID), take the newest metadata of each
 * (IMSM generation, DDF sequence number) and build each volume read-only.
 * Vols without metadata are left alone.  0 with *out set (free it with
 * fwraid_found_free), or -errno with err_set() detail when a member's
 * metadata is damaged. */
int fwraid_assemble(struct vol **vols, unsigned n, struct fwraid_found **out);

/* Closes the volume vols; the members stay open. */
void fwraid_found_free(struct fwraid_found *f);

/* ---- the parsed metadata, for fwraid.c, tests and fuzzing ---- */

#define FWRAID_MAX_DISKS 256
/* Sector counts and offsets past this (2^52 sectors, 2 ZiB) are damage:
 * in bytes, an offset plus a length stays far from overflowing. */
#define FWRAID_MAX_SECTORS (UINT64_MAX >> 12)
#define FWRAID_MAX_MEMBERS 256

/* One volume as a format describes it, in md's terms. */
#define FWRAID_DISK_UNKNOWN UINT32_MAX /* a role another member's copy records */

struct fwraid_vmeta {
	char id[64]; /* unique in its container (DDF: the VD GUID) */
	char name[40];
	uint64_t seq;                       /* DDF: the configuration's sequence number */
	char refused[96];                   /* "" or why it cannot be opened */
	int level;                          /* md's: 0, 1, 5, 10 */
	unsigned layout;                    /* md's layout word */
	uint32_t chunk;                     /* bytes (0 for raid1) */
	uint64_t size;                      /* the volume's bytes */
	uint64_t per_member;                /* bytes used on each member */
	unsigned nmembers;                  /* roles */
	unsigned disk[FWRAID_MAX_MEMBERS];  /* per role: index into the disk table */
	uint64_t start[FWRAID_MAX_MEMBERS]; /* per role: byte offset on that disk */
	bool missing[FWRAID_MAX_MEMBERS];   /* role failed or rebuilding: left out */
};

/* A container's metadata as one member holds it. */
struct fwraid_meta {
	const char *fmt; /* "imsm", "ddf" */
	char id[64];     /* container id: IMSM family number, DDF GUID (hex) */
	uint64_t seq;    /* IMSM generation, DDF sequence number */
	int self;        /* index into disk[] of the disk this copy came from,
	                  * or -1 (IMSM: not recorded; found by serial) */
	unsigned ndisks;
	struct {
		char id[64];   /* IMSM serial, DDF PD GUID (hex) */
		uint64_t size; /* bytes the metadata says the disk has (0: not said) */
		bool failed;   /* the metadata marks it failed or missing */
	} disk[FWRAID_MAX_DISKS];
	unsigned nvols;
	struct fwraid_vmeta *vol;
};

void fwraid_meta_free(struct fwraid_meta *m);

/* IMSM: read v's MPB and parse it.  1 with *out set, 0 with no MPB, or
 * -errno with err_set() detail naming v. */
int imsm_read(struct vol *v, struct fwraid_meta **out);
/* Parse an MPB (buf[0..len), the anchor sector first, then the extended
 * sectors in disk order): checksum, every count and size.  0 with *out
 * set, -EINVAL / -ENOMEM with err_set() detail "IMSM: ...". */
int imsm_parse(const uint8_t *buf, size_t len, struct fwraid_meta **out);

/* DDF: the same, from v's anchor header at its last sector. */
int ddf_read(struct vol *v, struct fwraid_meta **out);

#endif
