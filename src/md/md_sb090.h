/* md_sb090.h — md's 0.90 superblock: the on-disk layout and its codec, an
 * entry of md.c's version table (struct md_sb_version "0.90").
 *
 * A 0.90 member keeps a 4096-byte superblock in the last 64 KiB block but
 * one (the member's size rounded down to 64 KiB, less 64 KiB: the
 * kernel's MD_NEW_SIZE_SECTORS); the data runs from sector 0 up to it,
 * and an internal write-intent bitmap, when the state word says so,
 * follows the superblock in the rest of that 64 KiB.  Every field is a
 * 32-bit word in the byte order of the machine that wrote it: we read
 * either order (the magic says which) and write back in the order found.
 * Layout after linux include/uapi/linux/raid/md_p.h (mdp_superblock_s).
 *
 * Decoded, the fields mean what md_super's do for 1.x: sectors, roles
 * indexed by dev_number (this_disk.number).  0.90 records no device UUID:
 * device_uuid is the array's with its last word XORed with number + 1,
 * stable across reads and different per member.  set_uuid holds the four
 * uuid words big-endian, so that md_uuid_format() prints them as mdadm
 * does (%08x each); md_sb090_bitmap_uuid() gives the kernel's byte form,
 * which a 0.90 bitmap carries. */
#ifndef URAID_MD_SB090_H
#define URAID_MD_SB090_H

#include "md.h"

#include <stdbool.h>
#include <stdint.h>

#define MD_SB090_DISKS 27u             /* descriptors in the table */
#define MD_SB090_RESERVED (64u * 1024) /* the block at the end it lives in */
#define MD_SB090_MINOR 90u
#define MD_SB090_MINOR_RESHAPE 91u /* a reshape under way: refused */

/* disk descriptor state bits */
#define MD_SB090_DISK_FAULTY (1u << 0)
#define MD_SB090_DISK_ACTIVE (1u << 1)
#define MD_SB090_DISK_SYNC (1u << 2)
#define MD_SB090_DISK_REMOVED (1u << 3)
#define MD_SB090_DISK_WRITEMOSTLY (1u << 9)

/* array state bits */
#define MD_SB090_CLEAN (1u << 0)
#define MD_SB090_ERRORS (1u << 1)
#define MD_SB090_BITMAP_PRESENT (1u << 8)

struct md_sb090_disk {
	uint32_t number; /* its slot: the index in disks[] */
	uint32_t major, minor;
	uint32_t raid_disk; /* its role when SYNC */
	uint32_t state;
	uint32_t reserved[27];
};

/* Words in the writer's byte order.  events_a/b (cp_events_a/b) are
 * events_lo/hi on a little-endian writer, events_hi/lo on a big one. */
struct md_sb090 {
	uint32_t magic, major_version, minor_version, patch_version;
	uint32_t gvalid_words;
	uint32_t set_uuid0;
	uint32_t ctime; /* seconds */
	uint32_t level;
	uint32_t size; /* KiB of each member used */
	uint32_t nr_disks, raid_disks;
	uint32_t md_minor; /* preferred minor: /dev/mdN */
	uint32_t not_persistent;
	uint32_t set_uuid1, set_uuid2, set_uuid3;
	uint32_t gstate_creserved[16];
	uint32_t utime, state;
	uint32_t active_disks, working_disks, failed_disks, spare_disks;
	uint32_t sb_csum;
	uint32_t events_a, events_b, cp_events_a, cp_events_b;
	uint32_t recovery_cp; /* sectors resynced, with cp_events == events */
	uint32_t reshape_position[2], new_level, delta_disks, new_layout, new_chunk;
	uint32_t gstate_sreserved[14];
	uint32_t layout;
	uint32_t chunk_size; /* bytes */
	uint32_t root_pv, root_block;
	uint32_t pstate_reserved[60];
	struct md_sb090_disk disks[27];
	struct md_sb090_disk this_disk;
} __attribute__((packed));

_Static_assert(sizeof(struct md_sb090) == MD_SB_BLOCK, "md 0.90 superblock is 4096 bytes");

/* The codec (md.c's table entry "0.90"; see struct md_sb_version).
 * decode leaves super_offset MD_SB_UNPLACED and data_size 0: 0.90 does
 * not record where it lies, md_super_read_raw() fills in where it found
 * it. */
uint64_t md_sb090_offset(uint64_t member_bytes);
int md_sb090_decode(const void *buf, struct md_super *s);
void md_sb090_encode(struct md_super *s);
int md_sb090_check(const struct md_super *s, uint64_t member_bytes, const char *name);

/* The checksum the kernel computes for the block at buf (sb_csum counted
 * as zero): the sum of its 1024 words in the block's byte order, the carry
 * folded in once.  The kernel compares it folded to 16 bits
 * (md_sb090_csum_fold). */
uint32_t md_sb090_csum(const void *buf);
uint16_t md_sb090_csum_fold(uint32_t csum);

/* Whether s was read (or made) as a 0.90 superblock. */
bool md_sb090_is(const struct md_super *s);
/* What uraid does not do to a 0.90 array (a change its codec does not
 * write: new members, recovery, a new geometry): -ENOTSUP with detail
 * "NAME: md 0.90: WHAT is not supported ..." for one, 0 for any other
 * version.  The one refusal every such path asks. */
int md_sb090_refuse(const struct md_super *s, const char *name, const char *what);
/* Whether its block is big-endian (written by a big-endian machine). */
bool md_sb090_big_endian(const struct md_super *s);
/* Word i (0..1023) of s's block, in host order. */
uint32_t md_sb090_word(const struct md_super *s, unsigned i);
/* The preferred minor: the array is /dev/mdN. */
unsigned md_sb090_preferred_minor(const struct md_super *s);
/* The array uuid as the kernel keeps it (the words as stored): what a
 * 0.90 array's bitmap header carries. */
void md_sb090_bitmap_uuid(const struct md_super *s, uint8_t out[16]);

#endif
