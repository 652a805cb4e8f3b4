/* detect.h — finding the geometry of RAID0 and RAID5 members whose
 * metadata is gone (`uraid detect`), by scoring candidates.
 *
 * A RAID5's chunks XOR to zero across the members in every stripe whatever
 * the order, layout and chunk: sampled rows decide RAID5 or RAID0.  Then
 * each candidate (data offset, chunk 4K..1M, member order, and for RAID5
 * the four layouts) is scored by how well the data continues across the
 * chunk boundaries it puts next to each other in array order (the byte
 * make-up of the last KiB of a chunk against the first KiB of the next:
 * real file data continues, chunks put together wrongly do not), with a
 * signature (file system, partition table, LVM, LUKS) at the array's start
 * and, for ext2/3/4, its backup superblocks where the geometry puts them as
 * evidence on top (and, to part offsets that only shift whole rows, a
 * little for the offset where the members' data starts).  Reads only.  The result is an assume.h
 * description. */
#ifndef URAID_STACK_DETECT_H
#define URAID_STACK_DETECT_H

#include "disc/raid/raid.h"

#include <stdbool.h>
#include <stdint.h>

#define STACK_DETECT_MAX 8 /* members: every order of them is tried */

struct stack_detect_cand {
	struct raid_geom geom;            /* level 0 or 5, layout, chunk, raid_disks */
	unsigned order[STACK_DETECT_MAX]; /* role -> index of the member given */
	uint64_t offset;                  /* data offset on each member */
	double score;                     /* higher is likelier */
	double continuity;                /* mean continuity, 0..1, over ... */
	unsigned boundaries;              /* ... this many chunk boundaries with data */
	const char *signature;            /* found at array offset 0, or NULL */
	bool starts;                      /* offset is where the members' data starts
	                                   * (all zero before it) */
	int fs_checked, fs_found;         /* ext2/3/4 backup superblocks looked for, found */
};

struct stack_detect_report {
	int level;                      /* 0 or 5 */
	double parity;                  /* of the sampled rows holding data, the share whose
	                                 * XOR across members is zero */
	unsigned parity_rows;           /* rows sampled that hold data */
	uint64_t scored;                /* candidates scored */
	struct stack_detect_cand *cand; /* the best, best first */
	unsigned ncand;
};

/* Score the candidates for members m[0..n) (2..STACK_DETECT_MAX; RAID5
 * takes 3) and keep the best `keep` in rep.  0, or -errno with err_set()
 * detail (a read error, no data on the members). */
int stack_detect(struct vol **m, unsigned n, unsigned keep, struct stack_detect_report *rep);

void stack_detect_report_free(struct stack_detect_report *rep);

/* The data disks of a RAID5 stripe (row) s in array order, for md's
 * layout word (left/right, symmetric/asymmetric), into data[0..n-1);
 * returns the parity disk's role. */
unsigned stack_detect_raid5_row(uint32_t layout, unsigned n, uint64_t s, unsigned *data);

#endif
