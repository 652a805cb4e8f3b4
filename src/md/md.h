/* md.h — the Linux md v1.x superblock: on-disk layout, reading, checking,
 * writing.
 *
 * A v1.x member holds a 256-byte superblock (plus 2 bytes per device slot):
 * v1.2 4 KiB from its start and v1.1 at its start, the data area beginning
 * data_offset sectors in, after it; v1.0 8 to 12 KiB from its end (4 KiB
 * aligned), the data area (usually from sector 0) ending before it and
 * before the bitmap and bad-block log kept below it.  All numbers are
 * little-endian.  The layout follows linux
 * include/uapi/linux/raid/md_p.h (struct mdp_superblock_1) so that mdadm
 * and the kernel read what we write and we read what they write.
 *
 * The decoded struct md_super keeps the raw 4 KiB block it came from:
 * md_super_encode() writes the fields we manage into that block and leaves
 * every other byte (bitmap and bad-block fields, reshape fields, reserved
 * words) as mdadm or the kernel left them. */
#ifndef URAID_MD_H
#define URAID_MD_H

#include "core/vol.h"
#include "disc/raid/raid.h"

#include <endian.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MD_SB_MAGIC 0xa92b4efcu
/* Where v1.2's superblock sits: its table entry's offset (md.c) and the
 * tests.  Code that means "where this member's superblock is" asks
 * md_super_offset(); layout rules that differ between versions ask
 * md_sb_version_data_first() or the superblock's own offsets. */
#define MD_SB_OFFSET 4096u    /* bytes from the member start (v1.2) */
#define MD_SB_SECTOR 8u       /* the same, in 512-byte sectors */
#define MD_SB_BLOCK 4096u     /* bytes read and written */
#define MD_SB_MAX_DEV 1920u   /* (4096 - 256) / 2: roles that fit */
#define MD_MAX_SECTOR (~0ull) /* resync_offset of a clean array */
/* super_offset as a version that does not record it (0.90) decodes it:
 * md_super_read_raw() puts where the block was found. */
#define MD_SB_UNPLACED (~0ull)

/* dev_roles[] values besides 0..MD_ROLE_MAX-1 (an active slot). */
#define MD_ROLE_SPARE 0xffffu
#define MD_ROLE_FAULTY 0xfffeu
#define MD_ROLE_JOURNAL 0xfffdu
#define MD_ROLE_MAX 0xff00u

/* feature_map bits (md_p.h). */
#define MD_FEATURE_BITMAP_OFFSET 0x1u
#define MD_FEATURE_RECOVERY_OFFSET 0x2u
#define MD_FEATURE_RESHAPE_ACTIVE 0x4u
#define MD_FEATURE_BAD_BLOCKS 0x8u
#define MD_FEATURE_REPLACEMENT 0x10u
#define MD_FEATURE_RESHAPE_BACKWARDS 0x20u
#define MD_FEATURE_NEW_OFFSET 0x40u
#define MD_FEATURE_RECOVERY_BITMAP 0x80u
#define MD_FEATURE_CLUSTERED 0x100u
#define MD_FEATURE_JOURNAL 0x200u
#define MD_FEATURE_PPL 0x400u
#define MD_FEATURE_MULTIPLE_PPLS 0x800u
#define MD_FEATURE_RAID0_LAYOUT 0x1000u
#define MD_FEATURE_ALL 0x1fffu
/* Features uraid cannot serve or update correctly (a cluster):
 * md_super_check() refuses a superblock with any of them, so every path
 * (assembly, add, rebuild, grow, examine) refuses it with the same
 * message rather than corrupt it.  A replacement being built
 * (MD_FEATURE_REPLACEMENT, mdadm --replace: md_replace.h) is served and
 * continued by assembly; md_super_no_replacement() refuses it on the
 * offline paths that cannot take one. */
#define MD_FEATURE_REFUSED (MD_FEATURE_CLUSTERED)
/* A reshape under way (md_reshape.h): md_super_check() accepts these
 * (checking where the new data area lies); assembly serves such an array
 * and md_super_no_reshape() refuses it on the paths that cannot. */
#define MD_FEATURE_RESHAPE                                                                         \
	(MD_FEATURE_RESHAPE_ACTIVE | MD_FEATURE_NEW_OFFSET | MD_FEATURE_RESHAPE_BACKWARDS)
/* md's partial parity log, one area per member (md_ppl.h): either bit (the
 * kernel writes MULTIPLE_PPLS once it logs header after header). */
#define MD_FEATURE_ANY_PPL (MD_FEATURE_PPL | MD_FEATURE_MULTIPLE_PPLS)

/* devflags (md_p.h's WriteMostly1, FailFast1). */
#define MD_DEVFLAG_WRITE_MOSTLY 0x1u
#define MD_DEVFLAG_FAILFAST 0x2u

/* Levels as md numbers them. */
#define MD_LEVEL_LINEAR (-1)

/* RAID0 layouts (with MD_FEATURE_RAID0_LAYOUT) and the raid10 layout word:
 * near copies in bits 0-7, far copies in bits 8-15, bit 16 = offset. */
#define MD_RAID0_ORIG_LAYOUT 1u
#define MD_RAID0_ALT_LAYOUT 2u
#define MD_RAID10_NEAR(l) ((l)&0xffu)
#define MD_RAID10_FAR(l) (((l) >> 8) & 0xffu)
#define MD_RAID10_OFFSET 0x10000u

/* The on-disk superblock (struct mdp_superblock_1).  Multi-byte fields
 * hold little-endian values: read them with le32/le64 below. */
struct md_sb1 {
	/* constant array information, 128 bytes */
	uint32_t magic;
	uint32_t major_version;
	uint32_t feature_map;
	uint32_t pad0;
	uint8_t set_uuid[16];
	char set_name[32];
	uint64_t ctime; /* low 40 bits seconds, high 24 microseconds */
	uint32_t level;
	uint32_t layout;
	uint64_t size;      /* sectors of each member used (raid1/10) */
	uint32_t chunksize; /* sectors */
	uint32_t raid_disks;
	uint32_t bitmap_offset; /* signed, sectors from the superblock */
	uint32_t new_level;
	uint64_t reshape_position;
	uint32_t delta_disks;
	uint32_t new_layout;
	uint32_t new_chunk;
	uint32_t new_offset;
	/* constant this-device information, 64 bytes */
	uint64_t data_offset; /* sectors */
	uint64_t data_size;   /* sectors */
	uint64_t super_offset;
	uint64_t recovery_offset;
	uint32_t dev_number;
	uint32_t cnt_corrected_read;
	uint8_t device_uuid[16];
	uint8_t devflags;
	uint8_t bblog_shift;
	uint16_t bblog_size;   /* sectors */
	uint32_t bblog_offset; /* signed, sectors from the superblock */
	/* array state information, 64 bytes */
	uint64_t utime;
	uint64_t events;
	uint64_t resync_offset;
	uint32_t sb_csum;
	uint32_t max_dev;
	uint8_t pad3[32];
	uint16_t dev_roles[]; /* max_dev entries, indexed by dev_number */
} __attribute__((packed));

_Static_assert(sizeof(struct md_sb1) == 256, "md v1 superblock is 256 bytes");

/* The superblock versions uraid knows, one table entry each (md.c): its
 * name as mdadm's --metadata spells it, where a member of member_bytes
 * holds its superblock, and its codec.  1.2, 1.1 and 1.0 (one 1.x codec)
 * and 0.90 (md_sb090.h).  Reading tries each entry's offset; decoding,
 * checking and writing use the superblock's own version (s->version).
 *
 * A codec translates between its on-disk block and struct md_super, whose
 * fields mean what they mean in a 1.x superblock (sectors, roles indexed
 * by dev_number); raw keeps the block in the version's own format, so
 * that encode() rewrites only the fields uraid manages. */
struct md_super;
struct md_sb_version {
	const char *name;                          /* "1.2" */
	uint64_t (*offset)(uint64_t member_bytes); /* bytes from the member start */
	/* Decode the MD_SB_BLOCK bytes at buf into s (clearing it first and
	 * copying buf to s->raw) without judging them; -ENOENT when the
	 * block is not this version's (magic, major version). */
	int (*decode)(const void *buf, struct md_super *s);
	/* Write s's managed fields into s->raw and set the checksum. */
	void (*encode)(struct md_super *s);
	/* The version's own rules for a decoded s on a member of
	 * member_bytes: checksum, where the superblock and the data lie,
	 * reserved fields.  0 or -errno with err_set() detail prefixed by
	 * name.  md_super_check() adds the rules every version shares. */
	int (*check)(const struct md_super *s, uint64_t member_bytes, const char *name);
	/* The bytes of the block mdadm writes, and its --zero-superblock
	 * zeroes: 1.x a sector (512; a 4 KiB one on a 4 KiB member), 0.90
	 * its 4 KiB superblock. */
	uint32_t bytes;
};

/* The version uraid creates: 1.2. */
const struct md_sb_version *md_sb_version_default(void);

/* The version named name as mdadm's --metadata takes it ("1.0", "1.1",
 * "1.2"; "1" and "default" mean 1.2), or NULL. */
const struct md_sb_version *md_sb_version_find(const char *name);

/* Whether v keeps the data area before its superblock, which sits at the
 * member's end (1.0), rather than after it (1.1, 1.2).  Every layout rule
 * that differs between the versions asks this. */
bool md_sb_version_data_first(const struct md_sb_version *v);

/* A superblock in host order.  raw holds the 4 KiB block read or last
 * encoded; fields not listed here live only there. */
struct md_super {
	uint32_t feature_map;
	uint8_t set_uuid[16];
	char set_name[33];     /* NUL-terminated copy */
	uint64_t ctime, utime; /* as stored: see MD_TIME_SECS */
	int32_t level;
	uint32_t layout;
	uint64_t size;  /* sectors */
	uint32_t chunk; /* sectors */
	uint32_t raid_disks;
	uint64_t data_offset, data_size, super_offset, recovery_offset;
	uint32_t dev_number;
	uint8_t device_uuid[16];
	uint8_t devflags; /* MD_DEVFLAG_*: md's per-device flags (1.x only) */
	/* A reshape (MD_FEATURE_RESHAPE_ACTIVE; md_reshape.h): how far it got
	 * (array sectors) and the geometry it goes to; level, layout, chunk
	 * above are the old one's and raid_disks the new count (old =
	 * raid_disks - delta_disks); new_offset: signed sectors from
	 * data_offset to the new data area (MD_FEATURE_NEW_OFFSET). */
	uint64_t reshape_position;
	int32_t new_level, delta_disks, new_offset;
	uint32_t new_layout, new_chunk;
	uint64_t events;
	uint64_t resync_offset;
	uint32_t sb_csum; /* as stored */
	uint32_t max_dev;
	uint16_t roles[MD_SB_MAX_DEV];
	uint8_t raw[MD_SB_BLOCK];
	/* The version it was read with (md_super_read, md_super_read_raw);
	 * NULL, as md_super_decode leaves it, means the default, 1.2. */
	const struct md_sb_version *version;
};

/* ctime and utime keep seconds in their low 40 bits. */
#define MD_TIME_SECS(t) ((t)&0xffffffffffull)

static inline uint16_t md_le16(uint16_t v)
{
	return le16toh(v);
}
static inline uint32_t md_le32(uint32_t v)
{
	return le32toh(v);
}
static inline uint64_t md_le64(uint64_t v)
{
	return le64toh(v);
}

/* The checksum md expects for the superblock in buf (sb_csum treated as
 * zero): the 32-bit little-endian word sum over 256 + 2 * max_dev bytes,
 * carry folded in once.  max_dev is clamped to MD_SB_MAX_DEV. */
uint32_t md_sb_csum(const void *buf);

/* Decode the 4 KiB block buf, a 1.x superblock, into s without judging it
 * (examine shows even a damaged superblock); s->version is left NULL (1.2).
 * Returns -ENOENT when the magic is not there. */
int md_super_decode(const void *buf, struct md_super *s);

/* Check a decoded superblock as the kernel would before trusting it:
 * version, checksum, max_dev, offsets and sizes inside a member of
 * member_bytes, a known level and geometry; then that uraid serves the
 * level (md_level_served) and none of MD_FEATURE_REFUSED is set.  Returns
 * 0 or -EUCLEAN / -EINVAL / -ENOTSUP with err_set() detail prefixed by
 * name. */
int md_super_check(const struct md_super *s, uint64_t member_bytes, const char *name);

/* Where s's superblock sits on a member of member_bytes, in bytes: its
 * version's offset (1.2's when s->version is NULL). */
uint64_t md_super_offset(const struct md_super *s, uint64_t member_bytes);

/* s's version: s->version, or the default (1.2) when NULL. */
const struct md_sb_version *md_super_version(const struct md_super *s);

/* The data_size, in sectors, that a new member of member_bytes gets in
 * the layout of tmpl (the same data_offset; for 1.0 the same room below
 * its superblock for the bitmap and bad-block log); 0 when it has none. */
uint64_t md_super_new_data_size(const struct md_super *tmpl, uint64_t member_bytes);

/* The bytes [*start, *end) of s's member that hold metadata and no data:
 * from the superblock up to the data (1.1, 1.2), or from the end of the
 * data to the member's end (1.0).  What a new member's old metadata is
 * wiped from. */
void md_super_meta_area(const struct md_super *s, uint64_t member_bytes, uint64_t *start,
                        uint64_t *end);

/* Where the internal write-intent bitmap s records lies on its member of
 * member_bytes, [*start, *end) bytes: bitmap_offset, signed sectors from
 * the superblock, after it (1.1, 1.2; up to the data, or a bad-block log
 * between), or before it and after the data (1.0; up to the superblock,
 * or a bad-block log between).  -ENOENT when s records none; -EUCLEAN
 * when the offset overlaps the superblock or the data or leaves no room.
 * 0.90: after the superblock, in the rest of its 64 KiB. */
int md_super_bitmap_area(const struct md_super *s, uint64_t member_bytes, uint64_t *start,
                         uint64_t *end);

/* Find member's superblock through the version table and decode it
 * without checking it (examine shows even a damaged one): the first
 * version whose block decodes and whose super_offset names where it was
 * found wins; failing that the first whose block decodes at all (so that
 * md_super_check names the stray super_offset).  s->version records the
 * version.  Returns 0; -ENOENT when no version's block decodes; -ENOSPC
 * when member is too small to hold any; or the read's -errno.  Sets no
 * message: the caller words it. */
int md_super_read_raw(struct vol *member, struct md_super *s);

/* Read and check the superblock of member.  -ENOENT (with detail) when
 * there is no md superblock at all. */
int md_super_read(struct vol *member, struct md_super *s);

/* Write s's managed fields into s->raw and set the checksum. */
void md_super_encode(struct md_super *s);

/* Encode s and write its block to member where its version puts it,
 * then flush it. */
int md_super_write(struct vol *member, struct md_super *s);

/* Zero the superblock s was read from on member (md_super_read_raw), as
 * mdadm --zero-superblock does: its version's bytes, rounded up to the
 * member's block, at its offset, then a flush; no other byte changes (a
 * bitmap, a bad-block log or a second superblock of another version
 * stays).  0 or -errno with err_set() detail naming member. */
int md_super_erase(struct vol *member, const struct md_super *s);

/* Whether two members' superblocks describe one geometry: the same
 * superblock version (a mixed-version array is refused), level, layout,
 * chunk, used size, device count (what mdadm's compare_super1 compares)
 * and the RAID0 layout flag.  0, or -EINVAL with err_set() detail "ARRAY:
 * AN and BN disagree on level, layout, chunk, size or device count" (or
 * naming both versions). */
int md_super_same_geometry(const struct md_super *a, const char *an, const struct md_super *b,
                           const char *bn, const char *array);

/* The array uuid a write-intent bitmap's header carries: the set uuid as
 * stored, or for 0.90 the kernel's byte form of its four words. */
void md_super_bitmap_uuid(const struct md_super *s, uint8_t uuid[16]);

/* Whether s records a PPL (MD_FEATURE_ANY_PPL); then *off gets its area's
 * offset (signed sectors from the superblock: the ppl.offset half of the
 * word bitmap_offset shares) and *size its sectors. */
bool md_super_ppl(const struct md_super *s, int32_t *off, uint32_t *size);

/* Where s's member keeps its data in the reshape's new geometry, in
 * sectors: [*off, *off + *size), the end where the old area ends
 * (data_offset + new_offset under MD_FEATURE_NEW_OFFSET, else the old
 * area itself). */
void md_super_new_data_area(const struct md_super *s, uint64_t *off, uint64_t *size);

/* 0 unless s records a reshape under way; then -ENOTSUP with err_set()
 * detail "NAME: ... a reshape under way ...": the one refusal of the
 * paths that change an array offline (add, rebuild, grow) and cannot
 * take one half-reshaped. */
int md_super_no_reshape(const struct md_super *s, const char *name);

/* 0 unless s is a replacement being built (MD_FEATURE_REPLACEMENT); then
 * -ENOTSUP with err_set() detail "NAME: ... a replacement ...": the
 * refusal of the offline paths (add, rebuild, grow) that cannot take a
 * role held by two members. */
int md_super_no_replacement(const struct md_super *s, const char *name);

/* Whether s is a replacement being built for its role (mdadm --replace). */
static inline bool md_super_replacement(const struct md_super *s)
{
	return s->feature_map & MD_FEATURE_REPLACEMENT;
}

/* This member's role: its dev_roles slot, or MD_ROLE_SPARE. */
unsigned md_super_role(const struct md_super *s);

/* Whether the array was shut down cleanly (resync_offset == MaxSector). */
static inline bool md_super_clean(const struct md_super *s)
{
	return s->resync_offset == MD_MAX_SECTOR;
}

/* ---- md's levels: one table ----
 * Every fact about a level (its name, how few members it takes, how many
 * it can lose, its layout names, whether uraid serves it) is asked of
 * md_level_info(); nothing else tests level numbers for them.  The facts
 * live in the RAID engine's level descriptors (disc/raid/raid.h, struct
 * md_level_info); md.c answers from them. */

/* The level numbered level, or NULL for one md does not know. */
const struct md_level_info *md_level_info(int level);
/* The levels in table order (linear first): md_level_at(i) for i from 0
 * until it returns NULL. */
const struct md_level_info *md_level_at(unsigned i);

/* "raid1", "linear", ... or NULL for a level we do not know. */
const char *md_level_name(int level);
/* A level uraid serves that keeps a copy or parity of every block, so that
 * a member can be lost, rebuilt or checked, and that carries a
 * write-intent bitmap: raid1, raid10, raid4, raid5 and raid6. */
bool md_level_redundant(int level);
/* The members beyond which a level loses data: its parity count for
 * raid4/5/6, 0 for the rest (raid1 and raid10 count copies instead). */
unsigned md_level_parity(int level);

/* 0 when uraid serves level; else -ENOTSUP with err_set() detail, the one
 * message every path gives: "NAME: md level raidN is not supported ...";
 * -EINVAL for a level md does not know. */
int md_level_served(int level, const char *name);

/* md's start_dirty_degraded rule: a RAID4/5/6 found not shut down cleanly
 * with `degraded` roles not in sync (missing, or being rebuilt) may hold
 * stripes that a crash left half-written; what they hold on a missing
 * member cannot be recomputed from them (md's write hole), so md starts
 * such an array only when forced — unless it keeps a PPL, whose replay
 * makes those stripes agree (md starts it). */
bool md_dirty_degraded(const struct md_super *s, unsigned degraded);

/* Parse "0", "raid0", "linear", "10", ... into an md level. */
int md_level_parse(const char *s, int *level);

/* Parse a layout by mdadm's name into md's layout word: for raid5/6
 * "left-symmetric", "ls", ..., and for raid6 the "-6" variants; for raid10
 * md_raid10_layout_parse()'s. */
int md_layout_parse(int level, const char *s, uint32_t *layout);

/* Name level's layout word as mdadm does ("left-symmetric", "original";
 * raid10 as md_raid10_layout_parse() reads it, "n2", "f2", "o2"); its
 * number for a word the table does not name, "" for 0 on a level without
 * named layouts.  Returns out. */
const char *md_layout_name(int level, uint32_t layout, char *out, size_t len);

/* Parse a raid10 layout "n2", "f2", "o2", "n3" into md's layout word. */
int md_raid10_layout_parse(const char *s, uint32_t *layout);

/* The default data_offset, in sectors, that mdadm 4.x chooses for a v1.2
 * member of member_sectors with chunk_kib (0 for raid1/linear). */
uint64_t md_default_data_offset(uint64_t member_sectors, uint32_t chunk_kib);
/* The same with room sectors kept for a bitmap or PPL (mdadm's bmspace:
 * MD_PPL_AREA_SECTORS for a PPL) instead of its bitmap rule. */
uint64_t md_data_offset_room(uint64_t member_sectors, uint32_t chunk_kib, uint64_t room);

/* Look for the superblocks older md formats keep at a member's end, v1.0
 * (where its table entry puts it) and 0.90 (the last 64 KiB
 * block but one), by their magic.  at[0] and at[1] get their offsets
 * (UINT64_MAX where the member is too small to hold one); returns a mask
 * of those found (bit 0 v1.0, bit 1 0.90) or a negative errno with detail
 * naming spec. */
int md_find_end_supers(struct vol *v, const char *spec, uint64_t at[2]);

/* Format a 16-byte uuid as mdadm does: 8:8:8:8 hex digits. */
void md_uuid_format(const uint8_t uuid[16], char out[36]);

/* The array's name as uraid shows it everywhere (serve, detail, add,
 * rebuild, grow, the export names): as mdadm names /dev/md/, "md/NAME"
 * from the set name "host:NAME" when host is this machine's name (or
 * there is none), "md/host:NAME" for a foreign array, or, when the name
 * is empty, "md/" and the first 8 hex digits of the array UUID. */
void md_super_array_name(const struct md_super *sb, char *out, size_t len);

/* ---- assembly (md_assemble.c) ---- */

struct md_assemble_opts {
	bool readonly;     /* never write a byte, not even events or utime */
	bool run_degraded; /* start redundant arrays with members missing */
	bool no_recovery;  /* writable, but no online recovery: members under
	                    * recovery and spares are left out, as read-only
	                    * starts leave them */
	/* A writable start of an array with a reshape under way continues
	 * it in the background (md_reshape.h), at the sync speed limits,
	 * unless this is set (the offline `uraid grow` runs it itself). */
	bool no_reshape;
	bool start_dirty_degraded; /* start a writable RAID5/6 that is
	                            * md_dirty_degraded() (mdadm --force) */
	/* When the members up to date cannot start the array, take stale
	 * ones in, the freshest first, until they can (mdadm --assemble
	 * --force's choice).  Writable, their superblocks are written as
	 * mdadm writes them (events raised; roles and the clean mark in the
	 * superblock the array is based on); read-only, in memory only. */
	bool force_stale;
	/* md's speed_limit_min and _max for online recoveries and checks,
	 * bytes per second of each member (0: no limit): a sync runs at most
	 * at sync_max, and at most at sync_min while clients use the array. */
	uint64_t sync_min, sync_max;
	/* An array with a write journal: md's journal_mode write-back (a write
	 * is acknowledged once on the journal, destaged later, md_jcache.h)
	 * with a cache of journal_cache bytes (0: MD_JCACHE_DEFAULT); else
	 * write-through, md's default. */
	bool journal_writeback;
	uint64_t journal_cache;
};

/* Find the md arrays on vols[0..n) and assemble them, repeatedly, so that
 * an array whose data holds a superblock becomes a member of the next one
 * (RAID0 over RAID1s).  Takes ownership of every vol in vols.  On success
 * *out holds the resulting top-level vols (*nout of them, in the order
 * their first member was given): assembled arrays and the vols that hold
 * no superblock.  On error everything is closed and nothing was written
 * (beyond a resync that failed part-way, which leaves the array unclean).
 *
 * An assembled array writes to its members' superblocks only when it is
 * written to (marked active first, as md does), when a member fails (the
 * member is marked faulty in the survivors, events + 1) and when it is
 * closed (marked clean again).  A redundant array found unclean is
 * resynced (copies made to agree) before a writable start returns; a
 * RAID5/6 found unclean and degraded is refused (-EUCLEAN) unless
 * start_dirty_degraded, and a read-only start warns that it may read
 * stale stripes.  A writable start also recovers members found under recovery, in the
 * background while the array serves, and keeps the spares given for roles
 * that fail (unless no_recovery; see md_assemble.c and md_manage.h). */
int md_assemble_all(struct vol **vols, int n, const struct md_assemble_opts *o, struct vol ***out,
                    int *nout);

/* Assemble the one array whose members are vols[0..n): each must hold a
 * superblock of one set UUID (md_assemble_all() groups them; the probe
 * graph of stack/graph.c groups them itself, to assemble one array at a
 * time).  Takes ownership of the vols, also on error. */
int md_assemble_one(struct vol **vols, unsigned n, const struct md_assemble_opts *o,
                    struct vol **out);

/* The RAID array inside an assembled md array, or NULL if v is not one. */
struct vol *md_array_raid(struct vol *v);

/* ---- managing a running array (md_assemble.c; the control socket) ----
 * mdadm --detail, --fail, --remove and --add on an array being served.
 * Each call is one transition, recorded in the superblocks as the
 * kernel's md records it (events + 1); calls may come from any thread,
 * concurrently with I/O, but one at a time per array. */

enum md_member_state {
	MD_MEMBER_IN_SYNC,    /* active sync */
	MD_MEMBER_REBUILDING, /* active, being recovered */
	MD_MEMBER_SPARE,
	MD_MEMBER_FAULTY,  /* failed, still attached (remove takes it out) */
	MD_MEMBER_REMOVED, /* a role without a device */
	MD_MEMBER_JOURNAL, /* the raid5-cache write journal */
};

struct md_member_info {
	char name[256];  /* the member's spec (its vol name); "" for removed */
	struct vol *vol; /* the member: another md array when nested; NULL
	                  * for removed.  Valid until the next remove. */
	int role;        /* 0..raid_disks-1, or -1 (spare, faulty and replaced) */
	int slot;        /* dev_number, or -1 for removed */
	enum md_member_state state;
	bool has_io;             /* io holds its role's counters (a member in a role) */
	struct raid_io_stats io; /* raid.h: since it took the role */
};

/* An array's own I/O (its clients'), [0] reads, [1] writes. */
struct md_io_totals {
	uint64_t ops[2], bytes[2], errors;
};

struct md_array_info {
	char name[48];     /* md/NAME */
	char set_name[33]; /* as stored: host:NAME */
	char version[8];   /* the superblocks' version, "1.2" */
	char uuid[36];
	int level;
	uint32_t layout;
	uint32_t chunk; /* bytes; 0 without */
	unsigned raid_disks;
	uint64_t array_size; /* bytes */
	uint64_t dev_size;   /* bytes of each member used (0: each its own) */
	uint64_t events;
	bool readonly;
	bool active;   /* written since it started (else clean) */
	bool degraded; /* a role without an in-sync member */
	bool failed;   /* lost more members than it can (raid.h's raid_failed) */
	bool recovering;
	uint64_t rec_done, rec_total; /* member bytes */
	double rec_speed;             /* bytes/s of the rebuild running */
	/* A check (md's sync_action "check" or "repair"): the one running,
	 * else the last one's outcome since the array started. */
	bool checking, check_repair;      /* running; a repair */
	bool check_pending;               /* asked for, waiting for a recovery */
	uint64_t check_done, check_total; /* array bytes */
	double check_speed;               /* bytes/s of the check running */
	bool check_ended;                 /* one ended: the fields below */
	bool check_ended_repair;
	int check_status; /* 0 completed, -EINTR interrupted, -errno failed */
	uint64_t check_mismatched, check_ranges, check_repaired, check_read_errors;
	/* Re-adds from the write-intent bitmap (md's --re-add) since the
	 * array started: how many, the bitmap chunks and member bytes they
	 * resynced in all and in the last one; readding: one runs (rec_done
	 * and rec_total then count its bytes). */
	bool readding;
	unsigned readds, readd_refusals; /* refusals: members the rule turned away */
	uint64_t readd_chunks, readd_bytes, readd_last_chunks, readd_last_bytes;
	unsigned active_devs, working_devs, failed_devs, spare_devs;
	unsigned nmembers;
	struct md_member_info *m; /* roles in order, then spares, then faulty */
	struct md_io_totals io;
	uint64_t now_ns; /* when the counters were read (CLOCK_MONOTONIC) */
};

/* Describe the md array v.  -EINVAL if v is not one. */
int md_array_info(struct vol *v, struct md_array_info *out);
void md_array_info_free(struct md_array_info *info);

/* Mark the member named member (its vol name) faulty (mdadm --fail): an
 * in-sync member only if the array keeps every block without it (else
 * -EBUSY); a member being rebuilt stops being rebuilt; a spare becomes a
 * faulty spare.  0 or -errno with err_set(). */
int md_array_fail(struct vol *v, const char *member);

/* Take a faulty or spare member out (mdadm --remove): its slot is recorded
 * as faulty-removed, and its vol closed (the file is free again).  -EBUSY
 * (err_set) for an active member: fail it first. */
int md_array_remove(struct vol *v, const char *member);

/* Add nv (spec: its name for messages) to the running array (mdadm --add,
 * hot): checked as `uraid add` checks a new member (md_manage.h), given a
 * superblock of the array's version as a spare, recorded in every superblock, and, as md's
 * hot spares do, it takes a role that is gone and is rebuilt while the
 * array serves.  Takes nv on success.  -EROFS for a read-only array,
 * -EINVAL for one without redundancy or online recovery.  devflags: the
 * new member's MD_DEVFLAG_* (write-mostly, failfast). */
int md_array_add(struct vol *v, struct vol *nv, bool force, uint8_t devflags);

/* Take back the failed member named member (its vol name) from the
 * write-intent bitmap (mdadm --re-add): its superblock is read now and it
 * must pass md's rule (the same device UUID and role, events not newer
 * than the array's and not older than the bitmap's events_cleared, a
 * bitmap at all); then the recovery thread resyncs only the chunks the
 * bitmap marks dirty onto it, in the background.  A member that failed
 * by I/O errors is also re-added on its own once it answers again (the
 * recovery thread retries, backing off up to 10 s); one failed by request
 * only through this.  0, or -errno with err_set() giving the reason. */
int md_array_readd(struct vol *v, const char *member);

/* The same for a member the array no longer holds (removed, or left out
 * at the start): nv (spec: its name) is opened by the caller; its
 * superblock must be of this array and give it a role nobody holds now,
 * and pass the same rule (its device UUID cannot be compared: the array
 * forgot it).  Takes nv on success.  0 or -errno with err_set(). */
int md_array_readd_vol(struct vol *v, struct vol *nv);

/* Replace the in-sync member named member (its vol name) with nv (mdadm
 * --replace OLD --with NEW, hot; md_replace.h): nv is checked as
 * md_array_add checks a new member, gets OLD's role as a replacement
 * (recorded in every superblock), takes every write from now on and is
 * built from OLD in the background; then OLD is faulty and nv holds the
 * role.  Takes nv on success.  -EROFS for a read-only array, -EINVAL for
 * one without online recovery or an OLD not in sync, -EBUSY when the
 * role has a replacement already or a reshape runs.  0 or -errno with
 * err_set(). */
int md_array_replace(struct vol *v, const char *member, struct vol *nv, bool force);

/* md's sync_action for checks, on a running array. */
enum md_check_action {
	MD_CHECK_STOP,   /* interrupt the check running (or asked for) */
	MD_CHECK_CHECK,  /* compare the copies (parity), change nothing */
	MD_CHECK_REPAIR, /* and make them agree (raid_check's repair) */
};

/* Start a check or repair of the whole running array beside client I/O
 * (raid_check()), in the background: md_array_info shows its progress and
 * its outcome.  It waits while a recovery runs, and a member that fails
 * or a member added interrupts it (as md's do).  0, or -errno with
 * err_set(): -EBUSY when one runs already, -EROFS to repair a read-only
 * array, -EINVAL for a level without redundancy. */
int md_array_check(struct vol *v, enum md_check_action action);

#endif
