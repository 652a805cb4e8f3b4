/* md_reshape.h — an md RAID5/6 array in the middle of a reshape (mdadm
 * --grow --raid-devices, --chunk, --layout): two geometries over the same
 * members, as the kernel's raid5 keeps them.
 *
 * The superblocks hold the old geometry (level, layout, chunksize at
 * data_offset, raid_disks - delta_disks devices) and the new one
 * (new_level, new_layout, new_chunk at data_offset + new_offset,
 * raid_disks devices), and reshape_position, the array sector the
 * reshape has reached: growing forwards, array bytes below it lie in the
 * new geometry and those at or above it in the old; with
 * MD_FEATURE_RESHAPE_BACKWARDS the other way round (raid5.c's
 * ahead_of_reshape()).  The array serves the smaller of the two sizes, as
 * md does until the reshape ends.  md_assemble.c opens such an array
 * through md_reshape_open(); the reshape vol below dispatches each
 * request by address. */
#ifndef URAID_MD_RESHAPE_H
#define URAID_MD_RESHAPE_H

#include "disc/raid/raid.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct md_super;

struct md_reshape {
	struct raid_geom from; /* the old geometry, at each member's data_offset */
	struct raid_geom to;   /* the new one, at its new data offset */
	uint64_t pos;          /* array bytes: reshape_position */
	bool backwards;        /* to holds [pos, end), from [0, pos) */
	unsigned slots;        /* roles of either: max(from, to raid_disks) */
	uint64_t size;         /* array bytes served: the smaller geometry's */
	uint64_t from_end;     /* array bytes of each geometry (raid5_size(): the */
	uint64_t to_end;       /* used size in whole chunks of both) */
};

/* The geometry rules a reshape keeps, per level (raid5/6, raid10 near
 * and offset):
 * md_reshape_geom_size: the array bytes of g over members using dev
 * bytes each, as the kernel counts them during a reshape (raid5_size() in
 * whole chunks of chunk bytes, the larger of the two geometries';
 * raid10's calc_sectors() in its own chunk), 0 for another level;
 * md_reshape_dev_first: the lowest member offset holding a byte of the
 * chunk of array byte a (raid10.c's first_dev_address); md_reshape_dev_end:
 * the member offset past every byte of array bytes [0, a), in whole chunks
 * (last_dev_address; offset layouts in whole rows of far chunks).  A window may write the new
 * geometry up to where the old one still holds bytes a restart needs. */
uint64_t md_reshape_geom_size(const struct raid_geom *g, uint64_t dev, uint64_t chunk);
uint64_t md_reshape_dev_first(const struct raid_geom *g, uint64_t a);
uint64_t md_reshape_dev_end(const struct raid_geom *g, uint64_t a);

/* The least distance (bytes) the data offset of every member must move by
 * for reshape rs to run without a backup file: the larger chunk (raid5
 * run()), for raid10 the larger of each geometry's chunk times its far
 * copies (raid10.c's run(): an offset layout's device row is that deep). */
uint64_t md_reshape_least_shift(const struct md_reshape *rs);

/* The reshape the freshest superblock fresh of array name records (it
 * has MD_FEATURE_RESHAPE_ACTIVE), checked as the kernel's raid5 checks
 * it before it starts the array: a level it reshapes (raid5, raid6;
 * raid10 near layouts, as raid10.c's check_reshape) and the same level
 * after, a valid old device count (delta_disks) whose
 * roles cover every role fresh records, a layout and chunk the level
 * takes, something that changes, and a reshape_position inside the array
 * on a stripe boundary of the new geometry (in units of the larger
 * chunk).  0 or -EINVAL / -ENOTSUP with err_set() detail naming name. */
int md_reshape_parse(const struct md_super *fresh, const char *name, struct md_reshape *out);

/* Whether member superblock sb (of member mname) records the same
 * reshape as fresh (of fname): the feature bits, delta_disks and the new
 * geometry.  0, or -EINVAL with err_set() detail naming both. */
int md_reshape_same(const struct md_super *sb, const char *mname, const struct md_super *fresh,
                    const char *fname, const char *name);

/* Superblock sb as the end of its reshape leaves it: the new geometry
 * alone, the data area where the new one lay (the kernel's
 * md_finish_reshape: the offset moved, the end kept); rebuilt: the
 * member the reshape rebuilt is in sync (no recovery offset). */
void md_reshape_sb_finish(struct md_super *sb, bool rebuilt);

/* A member that missed the end of the reshape (a power cut during the
 * finish's superblock round): fresh, the freshest superblock (of fname),
 * records none, and member superblock sb (of mname) is one event behind
 * and still records the reshape.  The finish began only once every byte
 * lay in the new geometry, flushed, so sb is rolled forward in memory
 * (md_reshape_sb_finish): its member is read at its new data offset.
 * 1 when it was; 0 when sb is no such member (no reshape, older still,
 * or faulty: the usual rules); -EINVAL with err_set() detail naming both
 * when it cannot be reconciled (the same events, a bad record, or a
 * reshape that does not end in fresh's geometry). */
int md_reshape_catch_up(struct md_super *sb, const char *mname, const struct md_super *fresh,
                        const char *fname, const char *name);

/* The vol of an array under reshape rs over from and to (RAID vols of
 * rs->from and rs->to; it owns them from then on, also on error): each
 * request goes to the geometry that holds its bytes, split at the
 * position; a write into the window being moved waits for the move.
 * 0 or -errno. */
int md_reshape_vol_open(struct vol *from, struct vol *to, const struct md_reshape *rs,
                        bool readonly, const char *name, struct vol **out);

/* How a reshape run shows itself and stops (each may be NULL). */
struct md_reshape_run_opts {
	/* Stop once the position reaches this many array bytes (rounded up
	 * to a window; backwards, once it comes down to it), leaving the
	 * reshape half-done on disk for whoever continues it: `uraid grow
	 * --stop-at`, tests.  0: run to the end. */
	uint64_t stop_at;
	const atomic_bool *stop; /* set: stop after the window being moved */
	uint64_t window;         /* array bytes moved at a time, at most (rounded up to
	                          * a stripe); 0: 32 MiB */
	/* After each window: array bytes moved, of total. */
	void (*progress)(void *ctx, uint64_t done, uint64_t total);
	void *ctx;
};

/* Move the data of the md array v (assembled writable with a reshape
 * under way, forwards, or backwards from the end down) window after
 * window to the new geometry: each
 * window read in the old geometry, written in the new one (full stripes,
 * parity and all), the next window read while this one is written;
 * every 256 MiB or 10 s, before a window would have to spare old bytes
 * a restart still needs, and at the end, the members flushed and
 * reshape_position advanced in every superblock (events + 1), as the
 * kernel's raid5 reshape_request() keeps reshape_safe, so that a stop or
 * a crash at any point leaves a state the kernel or uraid continues.  At the end the superblocks
 * record the new geometry alone (data_offset moved, no reshape).  Safe beside client I/O on v.  0
 * when done (*finished says whether it reached the end), -EINTR when stopped, or -errno with
 * err_set() detail. */
int md_reshape_run(struct vol *v, const struct md_reshape_run_opts *o, bool *finished);

/* Start a reshape of the RAID5/6 of the nm members (vols, superblocks
 * sbs, fresh the freshest, specs their names; all consumed) to raid_disks
 * devices, the nnew members news[] taking the new roles (mdadm --grow
 * --raid-devices=N --add NEW...): checked first (clean, whole, no
 * journal or PPL, v1.1/v1.2 with room before the data, past a bitmap's,
 * to move the data offset down, as mdadm does so that no backup file is
 * needed), then the bitmap's events (a bitmap is kept), then the
 * superblocks written as the kernel writes them at the start of a reshape
 * (new ones first), then md_reshape_run() on the array assembled from
 * them.  force: overwrite what a NEW holds.  say: a line for the user.
 * 0, -EINTR (stopped: continue it with `uraid grow --continue`), or
 * -errno with err_set() detail; nothing is written before every check
 * passed. */
struct md_rebuild_out;
int md_reshape_grow(char **specs, unsigned nm, struct vol **vols, struct md_super **sbs,
                    unsigned fresh, unsigned raid_disks, char **news, unsigned nnew, bool force,
                    const struct md_reshape_run_opts *o, const struct md_rebuild_out *out);

/* ---- on a running array (`uraid serve`'s control socket) ---- */

/* Start the reshape above on the running RAID5/6 v while it serves
 * (mdadm --grow --raid-devices=N --add NEW... on an active array): the
 * same checks as md_reshape_grow() (whole and in sync, no spare, rebuild
 * or check under way, no journal or PPL, room to move the data offset;
 * a bitmap is kept, in both geometries), then, with the array's requests
 * held at its gate for the
 * moment it takes, the superblocks written as the kernel writes them (the
 * new members' first), the reshape vol put in place of the RAID vol, and
 * the data moved by the array's reshape thread at the sync speed limits
 * beside the clients.  When the reshape ends the new geometry serves
 * alone, at its full size (new NBD connections see it).  news[0..nnew):
 * the new members (opened by the caller, taken on success).  0, or -errno
 * with err_set() detail naming the array; nothing is written before
 * every check passed. */
int md_array_grow(struct vol *v, struct vol **news, unsigned nnew, unsigned raid_disks, bool force);

/* A reshape under way on a running array, as mdadm --detail shows it. */
struct md_reshape_info {
	bool moving; /* the array's thread moves data now (else it stands) */
	bool backwards;
	int level, new_level;
	uint32_t layout, new_layout;
	uint32_t chunk, new_chunk; /* bytes */
	unsigned from_disks, to_disks;
	uint64_t pos, total;         /* array bytes: reshape_position, of the new geometry's */
	uint64_t old_size, new_size; /* array bytes served now and once it ends */
	double speed;                /* array bytes/s moved since the thread started */
};

/* The reshape of the running md array v: 0, or -ENOENT when none is
 * under way (-EINVAL when v is not an md array). */
int md_array_reshape_info(struct vol *v, struct md_reshape_info *out);
/* What a reshape started by uraid changes (mdadm --grow --raid-devices,
 * --layout, --chunk; any of them at once, as the kernel's raid5
 * check_reshape takes them). */
struct md_reshape_to {
	unsigned raid_disks; /* 0: unchanged */
	bool layout_set;     /* layout: md's layout word for the level */
	uint32_t layout;
	uint32_t chunk;      /* sectors; 0: unchanged */
	uint64_t array_size; /* sectors: a shrink's --array-size (required for one) */
	/* The raid0 path (md_grow.c, as mdadm grows a raid0 through a
	 * degraded raid4): a parity-last raid5 whose parity role (its last)
	 * no member holds.  The first new member takes that role, recovering
	 * (the kernel's raid5_start_reshape adds a spare to the lowest free
	 * slot; the reshape brings it in sync as it passes, recording its
	 * recovery_offset), the others the roles after it, and the new last
	 * role, the new parity, is left missing. */
	bool parity_missing;
};

/* md_reshape_grow() for any change of to: the new layout one the level
 * takes, the new chunk a power of two of 4 KiB or more that divides the
 * member size (mdadm's rule), the data offset moved down by whole chunks
 * of the larger of the two (the kernel's rule for a reshape without a
 * backup file: at least a chunk of each), forwards.  nnew members only
 * when raid_disks grows.  Fewer devices (a shrink) need array_size, which
 * must fit in them: each member then keeps what that needs, the data
 * offset moves up into what it frees, and the reshape runs backwards from
 * the new end, as the kernel's; the roles past the new count end spares.  A request that changes
 * nothing is said and returns 0, nothing written. */
int md_reshape_restripe(char **specs, unsigned nm, struct vol **vols, struct md_super **sbs,
                        unsigned fresh, const struct md_reshape_to *to, char **news, unsigned nnew,
                        bool force, const struct md_reshape_run_opts *o,
                        const struct md_rebuild_out *out);

/* md_array_grow() for any change of to on the running RAID5/6 v (mdadm
 * --grow --chunk, --layout, --raid-devices on an active array): the
 * checks of md_reshape_restripe() (the data offset moved down, or up and
 * the reshape backwards from the end where the room is after the data,
 * as mdadm chooses), and those of md_array_grow().  Fewer devices take
 * to->array_size (sectors, at most what is served), which the array
 * serves from the start on, as md's array_size: a write past it fails
 * (-ENOSPC), new NBD connections get it, and it stays when the reshape
 * ends; the members past the new count then stand by as spares.  What a
 * layer above claims is the caller's to check (ctl/control.c).  A
 * request that changes nothing is refused (-EINVAL). */
int md_array_restripe(struct vol *v, const struct md_reshape_to *to, struct vol **news,
                      unsigned nnew, bool force);

/* md_reshape_restripe()'s checks of the members alone, nothing written
 * (the version, no bitmap, PPL or journal, every role in sync, the new
 * members' count, room to move the data offset by a chunk): whether
 * the array of sbs (nm members, fresh the freshest, specs their names)
 * could start a reshape to raid_disks devices with nnew new members at
 * chunk sectors.  For a level change that restripes after its takeover
 * (md_grow.c), which leaves each member's room as it is.  0 or -errno
 * with err_set() detail. */
int md_reshape_restripe_check(struct md_super **sbs, unsigned nm, unsigned fresh,
                              unsigned raid_disks, unsigned nnew, uint32_t chunk, char **specs);

#endif
