/* md_bitmap.h — md's internal write-intent bitmap: the on-disk format, the
 * index space per level, and its upkeep while an array is written.
 *
 * An md v1.x member with feature MD_FEATURE_BITMAP_OFFSET keeps, at
 * bitmap_offset (signed sectors from its superblock: after it for 1.1 and
 * 1.2, before it for 1.0; md_super_bitmap_area), a 256-byte bitmap
 * superblock followed by one bit per bitmap chunk, bit i of the array's
 * index space in byte i/8, bit i%8 (little-endian bit order, as the
 * kernel's set_bit_le writes them; version 3, "host endian", is the same
 * on the little-endian hosts we run on).  Layout after linux
 * drivers/md/md-bitmap.h (bitmap_super_t).
 *
 * The protocol the kernel trusts (and that we keep):
 *  - before a write reaches a member, the bits of the chunks it covers are
 *    set and durable in the bitmap of every live member;
 *  - bits are cleared lazily, once their chunks had no write for a while
 *    and every member was flushed; events_cleared then takes the array's
 *    events (not while degraded: the bits then remember what a missing
 *    member missed);
 *  - the bitmap's events follow the md superblock's, written first: a
 *    bitmap whose events are behind the superblock's is out of date and
 *    the kernel resyncs everything.
 * A set bit after a crash names a chunk whose copies may differ; the rest
 * agree, so a resync need only visit the set ones. */
#ifndef URAID_MD_BITMAP_H
#define URAID_MD_BITMAP_H

#include <endian.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MD_BITMAP_MAGIC 0x6d746962u /* "bitm" little-endian */
#define MD_BITMAP_HDR 256u          /* bytes before the bits */
#define MD_BITMAP_V_HOSTENDIAN 3u
#define MD_BITMAP_V 4u
#define MD_BITMAP_STALE (1u << 1)           /* state: out of date or had EIO */
#define MD_BITMAP_WRITE_ERROR (1u << 2)     /* state: a write failed */
#define MD_BITMAP_DEFAULT_SLEEP 5u          /* seconds, mdadm's --delay */
#define MD_BITMAP_WRITE_BEHIND_MAX 16383u   /* md's COUNTER_MAX / 2 */
#define MD_BITMAP_WRITE_BEHIND_DEFAULT 256u /* mdadm's --write-behind */
#define MD_BITMAP_DEFAULT_CHUNK (64u << 20)
/* The most chunks uraid keeps a bitmap of: a word of memory each, so a
 * header cannot make it allocate without bound (32 Mi chunks: 4 MiB of
 * bits on disk, 2 PiB in mdadm's default 64 MiB chunks). */
#define MD_BITMAP_MAX_CHUNKS (1ull << 25)

/* The on-disk bitmap superblock (bitmap_super_t), little-endian. */
struct md_bitmap_sb {
	uint32_t magic;
	uint32_t version;
	uint8_t uuid[16];
	uint64_t events;
	uint64_t events_cleared;
	uint64_t sync_size; /* sectors of the index space */
	uint32_t state;
	uint32_t chunksize; /* bytes */
	uint32_t daemon_sleep;
	uint32_t write_behind;
	uint32_t sectors_reserved;
	uint32_t nodes;
	uint8_t cluster_name[64];
	uint8_t pad[120];
} __attribute__((packed));

_Static_assert(sizeof(struct md_bitmap_sb) == MD_BITMAP_HDR, "bitmap superblock is 256 bytes");

/* The bitmap superblock in host order. */
struct md_bitmap_info {
	uint32_t version;
	uint8_t uuid[16];
	uint64_t events, events_cleared;
	uint64_t sync_size; /* sectors */
	uint32_t state;
	uint32_t chunksize; /* bytes */
	uint32_t daemon_sleep;
	uint32_t write_behind;
	uint32_t sectors_reserved;
	uint32_t nodes;
};

/* Decode the 256 bytes at buf.  -ENOENT (err_set, naming name) when the
 * magic is not there. */
int md_bitmap_decode(const void *buf, struct md_bitmap_info *b, const char *name);

/* Check b as the kernel does before using it: version 3 or 4, not
 * clustered, chunk size a power of two of at least 512, a sane
 * daemon_sleep and write_behind, uuid equal to the array's.  0 or
 * -EINVAL / -EUCLEAN with err_set() detail prefixed by name. */
int md_bitmap_check(const struct md_bitmap_info *b, const uint8_t uuid[16], const char *name);

/* Write b into the 256 bytes at buf (padding and cluster name zero). */
void md_bitmap_encode(const struct md_bitmap_info *b, void *buf);

/* Which array bytes a bit stands for.  The kernel indexes raid1 and
 * raid4/5/6 bitmaps by member data sectors (resync_max_sectors =
 * dev_sectors), raid10 by array sectors; raid0 and linear have none. */
struct md_bitmap_geom {
	int level;
	unsigned data_disks; /* raid4/5/6: members holding data in a stripe */
	uint64_t chunk;      /* raid4/5/6: the RAID chunk, bytes */
	uint64_t dev_size;   /* bytes of each member used */
	uint64_t array_size; /* bytes */
	/* raid5/6 under a reshape (md_bitmap_geom_also): the other
	 * geometry's data disks and chunk (0: none).  md counts member
	 * sectors from each geometry's own data offset and a reshape keeps
	 * the member size, so the index space is one; a write is marked in
	 * both geometries (a superset of the one it lands in, whatever the
	 * position does meanwhile) and a dirty chunk resynced in both. */
	unsigned also_data_disks;
	uint64_t also_chunk;
};

/* The geometry of an md array (level, raid_disks, chunk in sectors,
 * sectors of each member used, array bytes).  -EINVAL for a level
 * without a bitmap (not md_level_redundant(): raid4 neither). */
int md_bitmap_geom_init(struct md_bitmap_geom *g, int level, unsigned raid_disks,
                        uint32_t chunk_sectors, uint64_t dev_sectors, uint64_t array_bytes);

/* g's array is being reshaped to (or from) raid_disks devices of
 * chunk bytes: md_bitmap_map_all and md_bitmap_unmap_all then give both
 * geometries' ranges.  -EINVAL unless g is raid4/5/6 and the other
 * geometry is one. */
int md_bitmap_geom_also(struct md_bitmap_geom *g, unsigned raid_disks, uint64_t chunk);

/* The reshape ended: the other geometry becomes g's own (the one it
 * ended in kept as the other: writes still marked in both are a
 * superset). */
void md_bitmap_geom_swap(struct md_bitmap_geom *g);

/* Bytes of the index space (the bitmap's sync_size * 512). */
uint64_t md_bitmap_index_size(const struct md_bitmap_geom *g);

/* Index bytes [*first, *end) that the array bytes [off, off+len) touch
 * (len > 0; may be a superset). */
void md_bitmap_map(const struct md_bitmap_geom *g, uint64_t off, uint64_t len, uint64_t *first,
                   uint64_t *end);

/* Array bytes [*off, *off + *len) that hold every array byte mapped into
 * index bytes [first, end) (may be a superset; clipped to the array). */
void md_bitmap_unmap(const struct md_bitmap_geom *g, uint64_t first, uint64_t end, uint64_t *off,
                     uint64_t *len);

/* md_bitmap_map and md_bitmap_unmap in each of g's geometries (two
 * under a reshape, else one): the count of ranges filled. */
unsigned md_bitmap_map_all(const struct md_bitmap_geom *g, uint64_t off, uint64_t len,
                           uint64_t first[2], uint64_t end[2]);
unsigned md_bitmap_unmap_all(const struct md_bitmap_geom *g, uint64_t first, uint64_t end,
                             uint64_t off[2], uint64_t len[2]);

/* The bitmap chunk mdadm picks for an index space of index_bytes with
 * room_bytes for the bitmap (superblock included) when none is asked for:
 * the smallest power of two from 4 KiB whose bits fit (in at most 128 KiB,
 * and at most MD_BITMAP_MAX_CHUNKS of them), but at least 64 MiB.  With
 * want non-zero: want, or 0 if its bits do not fit. */
uint64_t md_bitmap_pick_chunk(uint64_t index_bytes, uint64_t room_bytes, uint64_t want);

/* The chunk md_bitmap_resize (chunksize 0: raid10_start_reshape's, a
 * raid10 resized for a new device count) gives a bitmap of chunk bytes
 * resized to index_bytes of index space with space_bytes for it (its
 * sectors_reserved): the chunk kept while the header and the bits fit,
 * else doubled until they do (at most 2 GiB). */
uint64_t md_bitmap_resize_chunk(uint64_t index_bytes, uint64_t space_bytes, uint64_t chunk);

/* The bits of image img (n chunks of chunk bytes) carried into image out
 * (out_n chunks of out_chunk bytes, a multiple of chunk; its header and
 * bits as they are): a set chunk sets every chunk of out it overlaps, as
 * md_bitmap_resize carries them. */
void md_bitmap_regrid(const uint8_t *img, uint64_t n, uint64_t chunk, uint8_t *out, uint64_t out_n,
                      uint64_t out_chunk);

/* Bytes of a bitmap (superblock and bits) with chunks bits. */
static inline uint64_t md_bitmap_bytes(uint64_t chunks)
{
	return MD_BITMAP_HDR + (chunks + 7) / 8;
}

/* ---- upkeep of a running array's bitmap ---- */

/* Where the bitmap image goes: write img[off, off+len) (offsets from the
 * bitmap's start, multiples of the write unit) to the bitmap of every live
 * member and flush it there, and only then return.  0 if at least one
 * member took it.  Called with the caller's lock held (see below). */
struct md_bitmap_io {
	int (*write)(void *ctx, const uint8_t *img, size_t off, size_t len);
	void *ctx;
};

struct md_bitmap;

/* A bitmap for index_bytes with header hdr (its sync_size is set from
 * index_bytes; its bits from img when not NULL, else clear), written in
 * units of unit bytes (a power of two >= 512) through io.  The chunk
 * count (index_bytes over hdr's chunk size) is bounded before anything is
 * allocated: -ENOSPC (err_set) when the bits do not fit in room bytes, or
 * in the space hdr reserves (sectors_reserved, when set: the kernel's
 * bound); -EFBIG when they are more than MD_BITMAP_MAX_CHUNKS. */
int md_bitmap_new(const struct md_bitmap_info *hdr, uint64_t index_bytes, uint32_t unit,
                  uint64_t room, const uint8_t *img, const struct md_bitmap_io *io,
                  const char *name, struct md_bitmap **out);
void md_bitmap_free(struct md_bitmap *b);

/* Add the bits of another member's image (same geometry) to b's. */
void md_bitmap_merge(struct md_bitmap *b, const uint8_t *img);

/* The image as it should be on disk: img_len bytes (a multiple of the
 * unit), header included. */
const uint8_t *md_bitmap_image(const struct md_bitmap *b, size_t *img_len);
const struct md_bitmap_info *md_bitmap_header(const struct md_bitmap *b);
uint64_t md_bitmap_chunks(const struct md_bitmap *b);
bool md_bitmap_test(const struct md_bitmap *b, uint64_t chunk);
uint64_t md_bitmap_dirty(const struct md_bitmap *b); /* set bits */

/* Thread safety.  md_bitmap_start and md_bitmap_end are lock-free and may
 * run on any number of threads at once.  Every other call that changes b
 * (mark, clear_*, set_events, merge) must be serialised by the caller's
 * lock, the one its io.write runs under.
 *
 * A write of index bytes [first, end):
 *   if (!md_bitmap_start(b, first, end))      counted in
 *           under the lock: md_bitmap_mark(b, first, end)   bits durable
 *   ... the data write ...
 *   md_bitmap_end(b, first, end);
 * md_bitmap_start returns true when every chunk's bit was already durable
 * (the hot path: one atomic add per chunk).  A chunk with a write counted
 * in is never cleared. */
bool md_bitmap_start(struct md_bitmap *b, uint64_t first, uint64_t end);
int md_bitmap_mark(struct md_bitmap *b, uint64_t first, uint64_t end);
void md_bitmap_end(struct md_bitmap *b, uint64_t first, uint64_t end);

/* After a flush of every member: one pass of lazy clearing.  A set chunk
 * without writes in flight is cleared if no write started on it since the
 * previous pass; the others are noted for the next one.  Clears on disk
 * (events_cleared = events) when anything went.  0 or the io error. */
int md_bitmap_clear_idle(struct md_bitmap *b, uint64_t events);

/* At a clean close or after a resync, with no write in flight and every
 * member flushed: every bit cleared, events_cleared = events, the whole
 * image written. */
int md_bitmap_clear_all(struct md_bitmap *b, uint64_t events);

/* The array's events moved to events: the header follows (written to
 * every live member).  Before the md superblocks are written. */
int md_bitmap_set_events(struct md_bitmap *b, uint64_t events);

#endif
