/* md_ppl.h — md's partial parity log (PPL) for RAID5: the on-disk format
 * (linux include/uapi/linux/raid/md_p.h, struct ppl_header), the log a
 * writable PPL array keeps, and its replay at an unclean start
 * (drivers/md/raid5-ppl.c, Documentation/driver-api/md/raid5-ppl.rst).
 *
 * Each member keeps a PPL area (the 1.x superblock's ppl.offset, signed
 * sectors from the superblock, and ppl.size; MD_FEATURE_PPL or
 * MD_FEATURE_MULTIPLE_PPLS).  Before a stripe update's member writes, its
 * partial parity — the XOR of the data the update leaves alone, over the
 * update's range — goes with a header entry to the area of the stripe's
 * parity member.  After a crash, parity = PP XOR the data of the chunks
 * the update wrote, whatever of it reached the disks: data and parity
 * agree again without a full resync, and a member lost with the crash
 * (one the update did not write) is rebuilt right, which closes md's
 * write hole.
 *
 * An area holds 4 KiB headers, each followed by the PP of its entries in
 * entry order.  The kernel writes headers one after another (generation
 * increasing) when the area holds two of 4 KiB + 128 KiB; the newest
 * valid header is the one recovery reads.  uraid writes its header at the
 * area's start every time (a kernel reader finds it first and stops at
 * what follows). */
#ifndef URAID_MD_PPL_H
#define URAID_MD_PPL_H

#include "disc/raid/raid.h"

#include <stdbool.h>
#include <stdint.h>

#define MD_PPL_HEADER_SIZE 4096u
#define MD_PPL_HDR_RESERVED 512u   /* filled with 0xff */
#define MD_PPL_MAX_ENTRIES 148u    /* (4096 - 512 - 4 * 4 - 8) / 24 */
#define MD_PPL_SPACE (128u * 1024) /* the kernel's PP bytes per header (multiple PPLs) */
/* The area mdadm lays out for 1.x at create (MULTIPLE_PPL_AREA_SIZE_SUPER1). */
#define MD_PPL_AREA_SECTORS 2048u
#define MD_PPL_MAX_DATA 63u /* data chunks of a stripe uraid logs (64 members) */

struct md_ppl_entry {
	uint64_t data_sector; /* first array sector (512 bytes) of the modified data */
	uint32_t pp_size;     /* bytes of partial parity; 0: every data chunk written */
	uint32_t data_size;   /* bytes of modified data: chunks x strip */
	uint32_t parity_disk; /* the parity role of the stripe */
	uint32_t checksum;    /* crc32c of its partial parity */
};

struct md_ppl_header {
	uint32_t signature;  /* crc32c of the array's set uuid (md_ppl_signature) */
	uint64_t generation; /* increases with each header written */
	uint32_t nentries;
	uint32_t checksum; /* as stored (decode), or as written (encode) */
	struct md_ppl_entry e[MD_PPL_MAX_ENTRIES];
};

/* The kernel's PPL signature for an md 1.x array: ~crc32c_le(~0, uuid, 16). */
uint32_t md_ppl_signature(const uint8_t set_uuid[16]);

/* Write h into the 4 KiB block buf (reserved bytes 0xff, checksum over the
 * block with its checksum word zero); sets h->checksum. */
void md_ppl_header_encode(struct md_ppl_header *h, void *buf);

/* Decode the 4 KiB block buf.  0; -EBADMSG when its checksum does not
 * match; -EUCLEAN when it counts more entries than fit. */
int md_ppl_header_decode(const void *buf, struct md_ppl_header *h);

/* Find the header recovery reads in the area of len bytes at area, as the
 * kernel does: from the start, header after header (each one's PP skipped),
 * until one does not decode, carries another signature, or is older than
 * the one before; the last good one wins.  0 with *h and *at (its byte
 * offset in the area); -ENOENT when not even the first is valid. */
int md_ppl_find(const void *area, uint64_t len, uint32_t signature, struct md_ppl_header *h,
                uint64_t *at);

/* ---- building entries (the log's half, pure) ---- */

/* One range of an update that a fixed set of data chunks writes: member
 * bytes [moff, moff+len) of data chunks d0 .. d0+nd-1 (array order). */
struct md_ppl_seg {
	uint64_t moff, len;
	unsigned d0, nd;
};

/* Cut update s (chunk bytes per chunk) into the ranges each written by
 * one set of its data chunks; ranges no chunk writes are left out.  out
 * holds 2 * s->ndata + 1; returns how many. */
unsigned md_ppl_segments(const struct raid_log_stripe *s, uint64_t chunk, struct md_ppl_seg *out);

/* Append the entries of the updates s[0..n) whose parity role is role to
 * h, their PP to pp (at *pp_used, of pp_cap bytes); a range whose PP does
 * not fit goes in as a whole-stripe entry (pp_size 0, every data chunk).
 * 0, or -ENOSPC when the header would overflow (nothing usable was
 * appended then). */
int md_ppl_add(struct md_ppl_header *h, char *pp, uint64_t *pp_used, uint64_t pp_cap,
               const struct raid_log_stripe *s, unsigned n, unsigned role, uint64_t chunk);

/* ---- recovery ---- */

/* What a replay sees of the array: its RAID vol (for the mapping), the
 * data area of each role (NULL: missing), its chunk in bytes. */
struct md_ppl_array {
	struct vol *raid;
	struct vol **data; /* [raid_disks], by role */
	unsigned raid_disks;
	uint64_t chunk;
};

/* What a replay did. */
struct md_ppl_stats {
	unsigned recovered;  /* entries whose parity was rewritten */
	unsigned mismatched; /* headers or entries skipped: checksum, signature, bounds */
	unsigned skipped;    /* entries whose modified data is on a missing member */
};

/* Recompute the parity entry e covers (ppl_recover_entry): for each block
 * of its strip, PP (pp, e->pp_size bytes; NULL when 0) XOR the current
 * data of the modified chunks, written to the parity role's data area.
 * An entry whose modified data lies on a missing member is left alone
 * (st->skipped); one that does not fit the array counts as mismatched.
 * 0 or -errno of the I/O. */
int md_ppl_recover_entry(const struct md_ppl_array *a, const struct md_ppl_entry *e, const char *pp,
                         struct md_ppl_stats *st);

/* Replay the PPL area [area_off, area_off+area_len) of the member vol m
 * (role's): the newest valid header's entries whose PP checksum matches.
 * 0 or -errno of the I/O. */
int md_ppl_replay_area(const struct md_ppl_array *a, struct vol *m, uint64_t area_off,
                       uint64_t area_len, uint32_t signature, struct md_ppl_stats *st);

/* ---- the running log (md_assemble) ---- */

struct md_array;
struct md_super;

/* Open the PPL of the md array a (fresh: its freshest superblock), before
 * it is served: replay it when a writable start finds the array unclean
 * (then the array is clean, as md marks it when every entry replayed),
 * write every member's area empty, and set the RAID vol's stripe log.
 * Read-only: nothing is written (an unclean array is left as it is).
 * 0, or -errno with err_set() detail. */
int md_ppl_open(struct md_array *a, const struct md_super *fresh);

/* Drop the log (after the RAID vol stopped writing). */
void md_ppl_close(struct md_array *a);

#endif
