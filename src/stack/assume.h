/* assume.h — an array described by hand, for members whose metadata is
 * gone (superblocks zeroed, a hardware controller's format nobody reads):
 * `--assume level=5,chunk=64K,layout=left-symmetric,order=c.img,a.img,b.img`.
 *
 * The description names the members in role order (`missing` for an absent
 * one); graph.c builds the array from them with the RAID engine and the
 * other layers run on it.  Such an array is always read-only: nothing on
 * the members says it is right, so nothing may be written by it.
 * detect.h finds the description from the data. */
#ifndef URAID_STACK_ASSUME_H
#define URAID_STACK_ASSUME_H

#include "disc/raid/raid.h"

#include <stddef.h>
#include <stdint.h>

#define STACK_ASSUME_MAX 64 /* members (roles) */

struct stack_assume {
	struct raid_geom geom; /* level, layout, chunk, raid_disks; dev_size 0 */
	uint64_t offset;       /* data offset on each member (offset=, default 0) */
	uint64_t size;         /* bytes used on each member (size=), 0: the smallest
	                        * member less offset, rounded down to the chunk
	                        * (linear and raid0: each member's own) */
	char **order;          /* raid_disks member specs in role order, NULL for
	                        * `missing` */
	unsigned missing;      /* how many are */
};

/* Parse "key=value,key=value..." (keys level, chunk, layout, order, offset,
 * size; a token without '=' continues the previous key's list, as in
 * order=c.img,a.img,b.img).  level and order are required, chunk for the
 * striped levels; layout defaults to the level's (mdadm's).  Checks that
 * uraid serves the level, the member count, and that no more members are
 * missing than the level can lose.  0 with *out set (free with
 * stack_assume_free), or -EINVAL with err_set() detail "--assume: ...". */
int stack_assume_parse(const char *spec, struct stack_assume **out);

void stack_assume_free(struct stack_assume *a);

/* The members of a given on the command line as specs[0..n): every one
 * order names, and no other (stack_same_member).  0, or -EINVAL with
 * err_set() detail naming the one that is not. */
int stack_assume_check_members(const struct stack_assume *a, char **specs, int n);

/* The --assume argument that describes g (dev_size ignored) on the
 * members order[0..g->raid_disks) (NULL: missing) at offset, with size
 * when it is not 0.  Returns out (truncated to len). */
char *stack_assume_format(const struct raid_geom *g, const char *const *order, uint64_t offset,
                          uint64_t size, char *out, size_t len);

#endif
