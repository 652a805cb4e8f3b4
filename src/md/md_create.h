/* md_create.h — making a new md array (`uraid create`, mdadm --create
 * --metadata=1.x): v1.x superblocks (1.2 unless told) on every member,
 * written last, after the data areas were zeroed so that copies and
 * parity agree. */
#ifndef URAID_MD_CREATE_H
#define URAID_MD_CREATE_H

#include <stdbool.h>
#include <stdint.h>

struct md_sb_version;

struct md_create_opts {
	int level;
	uint32_t layout;
	uint32_t chunk_kib;    /* 0 for raid1 and linear */
	const char *name;      /* the array's name (NULL: "uraid"), host: prefixed */
	bool assume_clean;     /* do not zero the data areas (as mdadm's) */
	bool force;            /* overwrite what probe_member() finds */
	int bitmap;            /* 1 internal, 0 none, -1 mdadm's rule (over 100 GiB) */
	uint64_t bitmap_chunk; /* bytes; 0: mdadm's choice */
	/* md's write-behind (raid1 with a bitmap): the bitmap superblock's
	 * write_behind, the most writes to write-mostly members acknowledged
	 * before those land (0: none; at most MD_BITMAP_WRITE_BEHIND_MAX). */
	uint32_t write_behind;
	/* md's partial parity log (raid5, no bitmap): each member's PPL
	 * area where mdadm lays it out (md_ppl.h), MD_FEATURE_PPL. */
	bool ppl;
	/* The superblock version (md_sb_version_find: 1.0, 1.1 or 1.2);
	 * NULL: the default, 1.2.  Another version is refused (-ENOTSUP). */
	const struct md_sb_version *version;
	/* --write-journal: the raid4/5/6's journal member (role 0xfffd,
	 * MD_FEATURE_JOURNAL on every member, no bitmap), or NULL. */
	const char *journal;
	/* [n] each member's devflags (MD_DEVFLAG_WRITE_MOSTLY, _FAILFAST),
	 * or NULL for none. */
	const uint8_t *devflags;
};

/* What was made, for the caller to tell. */
struct md_created {
	char set_name[33];
	char uuid[36];
	uint32_t bitmap_chunk; /* bytes; 0 when no bitmap was written */
};

/* The options a level takes unless told otherwise: mdadm's chunk (512
 * KiB, none for raid1 and linear) and layout, the bitmap by mdadm's rule. */
void md_create_defaults(int level, struct md_create_opts *o);

/* Make a new array of the n members specs ("missing" for a member left
 * out; the caller checked the count against the level).  Every check
 * (each member opened, probed unless o->force, big enough, room for the
 * bitmap) is made before the first write.  0, or -errno with err_set()
 * detail naming the member. */
int md_create(char **specs, unsigned n, const struct md_create_opts *o, struct md_created *out);

#endif
