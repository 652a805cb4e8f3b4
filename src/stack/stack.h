/* stack.h — from member specs to the volume to export, by probing:
 * open each member, assemble the md arrays whose superblocks they hold (an
 * array may be a member of another), then look for a LUKS header on the
 * result and unlock it.  `uraid serve a.img b.img --key-file k` finds
 * RAID1 -> LUKS2 -> plaintext. */
#ifndef URAID_STACK_H
#define URAID_STACK_H

#include "core/vol.h"

#include <stdbool.h>

struct stack_opts {
	bool readonly;        /* open everything read-only; change no byte */
	bool direct;          /* O_DIRECT on file members */
	bool run_degraded;    /* start an array that is missing members */
	bool no_recovery;     /* no online recovery: leave out spares and members being rebuilt */
	bool start_dirty_degraded;   /* start a dirty degraded RAID5/6 writable (--force) */
	bool force_stale;            /* stale members start an array that cannot start
	                              * without them (--force; written unless readonly, md.h) */
	uint64_t sync_min, sync_max; /* md arrays' recovery and check speed limits (md.h) */
	bool journal_writeback;      /* md write journals in write-back mode (md.h) */
	uint64_t journal_cache;      /* and their caches' bytes (0: the default) */
	bool raw;             /* do not probe: export the single member as is */
	bool whole;           /* md arrays (and LUKS) only: no partition tables or
	                       * LVM2 (for a command that writes a new format onto
	                       * what the members make) */
	bool no_luks;         /* assemble arrays but do not unlock LUKS */
	const char *key_file; /* passphrase file for LUKS, or NULL to ask */
	const struct stack_assume *assume; /* build this array from the members
	                                    * first (assume.h; needs readonly) */
};

/* Returns 0 with *top set, or -errno with err_set() detail. */
int stack_open(char **specs, int n, const struct stack_opts *o,
	       struct vol **top);

/* What stack_open_info() found under the top vol, for those who manage a
 * running stack (the control socket, ctl/control.h).  The vols belong to the
 * stack: valid until the top vol is closed. */
struct stack_info {
	struct vol *md;  /* the md array assembled (arrays inside it are its
			  * members: md_array_info()), or NULL */
	int luks;        /* LUKS version unlocked on top of it, or 0 */
};

/* stack_open(), telling what it assembled. */
int stack_open_info(char **specs, int n, const struct stack_opts *o,
		    struct vol **top, struct stack_info *info);

/* Whether two member specs name the same file or block device: the same
 * string, or, stat()ed (a wrapper spec such as sim:80M:a.img by what
 * follows its last ':'), the same inode or device number. */
bool stack_same_member(const char *a, const char *b);

/* Open the members alone, without probing (for commands that write
 * metadata: create, luks-format). */
int stack_open_members(char **specs, int n, const struct stack_opts *o,
		       struct vol **members);

/* Open the md members specs[0..n) writable, for a command that rewrites
 * their superblocks (add, rebuild, grow): none given twice, each holding a
 * v1.2 superblock of one and the same array.  vols[i] and sbs[i] (malloc'd)
 * are the caller's to close and free, also on error (NULL where not
 * reached); *fresh is the index of the highest events.  hint ends the
 * error for a member without a superblock (how a new one is given). */
struct md_super;
int stack_open_md_members(char **specs, unsigned n, struct vol **vols, struct md_super **sbs,
			  unsigned *fresh, const char *hint);

#endif
