/* lvm.h — LVM2 volume groups, read from their physical volumes.
 *
 * What a NAS puts on its md arrays (Synology SHR: one VG over md2 and md3
 * with one LV spanning both) opens here as plain vols: each visible
 * linear or striped LV becomes slices of its PV vols (disc/slice.h),
 * striped runs a RAID0 of them (disc/raid, chunk = stripe size) and an LV
 * of several segments a linear concatenation.  The metadata is read and
 * never written: no seqno bump, no PV status change.  LV data is
 * writable when the PV vols are and the caller did not ask readonly.
 *
 * lvm.c reads the label, the metadata area and assembles; lvm_text.c
 * parses the metadata text (lvm2's config format) into struct lvm_vg and
 * checks every reference and extent range in it.  Both parsers take any
 * bytes (tests/fuzz/fuzz_lvm.c).
 *
 * A PV is found by its label alone, so the md arrays under a VG must be
 * assembled first and their vols passed, not the md members: a member of
 * an md 1.0 or 0.90 array (superblock at the end) starts with the PV's
 * label too (lvm2 filters those "md components" out the same way). */
#ifndef URAID_LVM_H
#define URAID_LVM_H

#include "core/vol.h"

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* 1 when v carries an LVM2 PV label, 0 when not, -errno (err_set,
 * "NAME: LVM2: ...") when the label or the metadata is damaged. */
int lvm_probe(struct vol *v);

struct lvm_lv_found {
	char *name;          /* "VG/LV" */
	char *refused;       /* NULL, or why it is not opened ("thin-pool segment",
	                      * "PV pv1 (UUID) missing") */
	struct vol *vol;     /* the LV (NULL when refused); borrows the PV vols:
	                      * closing it leaves them open */
	uint64_t size;       /* bytes */
	unsigned *pvs, npvs; /* indices into the vols[] given that this LV uses */
};

struct lvm_found {
	unsigned nlv;
	struct lvm_lv_found *lv;
	/* Per input vol (n of them): the index into vg_names of the VG it is a
	 * PV of, or UINT_MAX (no PV, or a PV of no VG found). */
	unsigned *vg_of;
	char **vg_names;
	unsigned nvg;
	char warning[256]; /* "" or, e.g., a VG with PVs missing (partial),
	                    * metadata copies that disagree (newest seqno used) */
};

/* Group vols[0..n) that lvm_probe() says are PVs into VGs by VG id, take
 * the newest metadata (highest seqno) of each and build each visible LV
 * over slices of the PV vols, borrowed.  readonly: the LV vols refuse
 * writes (they do anyway on read-only PVs, or where the metadata marks
 * the VG or LV read-only).  Vols with no label are left alone.  Returns
 * 0 with *out set (free it with lvm_found_free), or -errno with err_set()
 * detail when a PV's label or metadata is damaged and no other copy of
 * its VG's metadata stands in for it. */
int lvm_assemble(struct vol **vols, unsigned n, bool readonly, struct lvm_found **out);

/* Closes the LV vols too; the PV vols stay open. */
void lvm_found_free(struct lvm_found *f);

/* ---- the parsed metadata (lvm_text.c), for lvm.c, tests and fuzzing ---- */

#define LVM_ID_LEN 32       /* a UUID without its dashes */
#define LVM_MAX_STRIPES 128 /* lvm2's own limit */

struct lvm_pv_meta {
	char *name;              /* "pv0" */
	char id[LVM_ID_LEN + 1]; /* dashes removed */
	uint64_t pe_start;       /* sectors from the PV's start */
	uint64_t pe_count;       /* extents */
	bool missing;            /* flagged MISSING in the metadata */
};

struct lvm_area {
	unsigned pv;    /* index into lvm_vg.pv */
	uint64_t first; /* first extent on that PV */
};

struct lvm_seg {
	uint64_t start_extent, extent_count; /* in the LV */
	char *type;                          /* "striped", "linear", "thin-pool" ... */
	bool mapped;                         /* striped or linear: areas[] filled; else refused */
	unsigned stripe_count;
	uint64_t stripe_size;   /* sectors; 0 with one stripe */
	struct lvm_area *areas; /* stripe_count of them */
};

struct lvm_lv_meta {
	char *name;
	bool visible;  /* status VISIBLE: hidden sub-LVs are not opened */
	bool writable; /* status WRITE */
	unsigned nseg;
	struct lvm_seg *seg; /* in LV order, contiguous from extent 0 */
	char *refused;       /* NULL, or why it cannot be opened (a segment type,
	                      * an area on another LV) */
};

struct lvm_vg {
	char *name;
	char id[LVM_ID_LEN + 1];
	uint64_t seqno;
	uint64_t extent_size; /* sectors */
	bool writable;        /* status WRITE */
	unsigned npv, nlv;
	struct lvm_pv_meta *pv;
	struct lvm_lv_meta *lv;
};

/* Parse metadata text (text[0..len), a NUL anywhere ends it) and check it:
 * every PV reference, every segment inside its PV's pe_count, segments in
 * order without gaps or overlaps, no two LVs on the same extents.  0 with
 * *out set, or -EINVAL / -ENOMEM with err_set() detail naming the VG and LV
 * ("VG vg1 LV lin: segment2 ..."); nothing is printed. */
int lvm_text_parse(const char *text, size_t len, struct lvm_vg **out);
void lvm_vg_free(struct lvm_vg *vg);

/* LVM's CRC-32 (lib/misc/crc.c): the reflected 0xedb88320 polynomial run
 * from the initial value given, without the final inversion; label,
 * metadata area header and metadata text are all checked by it from
 * LVM_INITIAL_CRC. */
#define LVM_INITIAL_CRC 0xf597a6cfu
uint32_t lvm_crc(uint32_t crc, const void *buf, size_t len);

#endif
