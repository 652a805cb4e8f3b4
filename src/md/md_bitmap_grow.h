/* md_bitmap_grow.h — adding an internal write-intent bitmap to an
 * existing md array, or removing it, offline (`uraid grow
 * --bitmap=internal|none`, as mdadm --grow --bitmap does on a running
 * array): where it goes (md_bitmap_place, mdadm's add_internal_bitmap1
 * with a movable offset), its header, the feature bit in every member's
 * superblock (md_bitmap_grow.c). */
#ifndef URAID_MD_BITMAP_GROW_H
#define URAID_MD_BITMAP_GROW_H

#include "md.h"
#include "md_rebuild.h"

#include <stdbool.h>
#include <stdint.h>

/* Where a bitmap added to the array of sb (a v1.x member of member_bytes,
 * index_bytes of bitmap index space) goes, as mdadm places one on a
 * running array: 1.1/1.2 4 KiB after the superblock, up to the bad-block
 * log (or 4 KiB short of the data); 1.0 below the bad-block log under the
 * superblock, in whole 4 KiB.  *offset: signed sectors from the
 * superblock (bitmap_offset); *chunk: want, or mdadm's choice when 0;
 * *room: sectors the bitmap may take (sectors_reserved).  -ENOSPC when
 * there is no room, -EINVAL when want's bits do not fit (err_set detail
 * naming name). */
int md_bitmap_place(const struct md_super *sb, uint64_t member_bytes, uint64_t index_bytes,
                    uint64_t want, const char *name, int32_t *offset, uint64_t *chunk,
                    uint32_t *room);

struct md_bitmap_grow_opts {
	bool add;              /* true: add an internal bitmap; false: remove it */
	uint64_t chunk;        /* bytes (a power of two); 0: mdadm's choice */
	uint32_t write_behind; /* raid1: md's write-behind (0: none) */
};

/* Add (or remove) the write-intent bitmap of the array the nm members
 * hold (vols, superblocks sbs, fresh the freshest, specs their names; all
 * consumed): every active role must be given.  Adding writes each
 * member's bitmap (all clear on a clean, whole array, else every bit set,
 * as mdadm's), then every superblock with MD_FEATURE_BITMAP_OFFSET and
 * events + 1; removing writes the superblocks without it.  Every check is
 * made first; 0 (said through out) or -errno with err_set() detail. */
int md_bitmap_grow(char **specs, unsigned nm, struct vol **vols, struct md_super **sbs,
                   unsigned fresh, const struct md_bitmap_grow_opts *o,
                   const struct md_rebuild_out *out);

/* The same on the array v that `uraid serve` serves (writable; the
 * control socket's "bitmap"): requests held and drained, the members
 * flushed (what was acknowledged is on every copy, so clear bits are
 * true), the bitmap written, the superblocks with events + 1, the
 * bitmap then kept (or, removing, dropped).  Refused while a reshape,
 * rebuild, re-add, check or resync runs.  0 or -errno with err_set()
 * detail. */
int md_array_bitmap(struct vol *v, const struct md_bitmap_grow_opts *o);

/* Offline, before superblocks with events are written to the n members
 * vols (1.1/1.2, one bitmap offset): the bitmap
 * of the array of f (read from src, valid and not behind f's events)
 * written to each, with events (the bitmap's events go first: never
 * behind the superblock's, or md calls it out of date and resyncs all).
 * 0 when f has no bitmap; -errno with err_set() detail naming name. */
int md_bitmap_follow(struct vol **vols, unsigned n, struct vol *src, const struct md_super *f,
                     uint64_t events, const char *name);

/* md_bitmap_follow for a new index space: the bitmap of old_index bytes
 * resized to new_index (a raid10 changing its device count: its array
 * size, as raid10_start_reshape resizes it), the chunk kept or doubled as
 * md_bitmap_resize does within the space the header reserves and the
 * set bits carried over; sync_size recorded as sync_sectors (md writes
 * its resync_max_sectors there: a raid10 reshape's smaller size). */
int md_bitmap_follow_to(struct vol **vols, unsigned n, struct vol *src, const struct md_super *f,
                        uint64_t events, uint64_t old_index, uint64_t new_index,
                        uint64_t sync_sectors, const char *name);

#endif
