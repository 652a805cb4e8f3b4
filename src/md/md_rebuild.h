/* md_rebuild.h — restoring an md array's redundancy offline, as `mdadm
 * --add` and the kernel's recovery do (`uraid add`, `uraid rebuild`,
 * and `uraid grow`'s new roles): the members are the caller's to open
 * (all of one array, freshest known), md_rebuild.c does the rest with
 * md's one recovery driver (md_recover.h).  Every check is made before
 * the first write: a refusal leaves every member as it was. */
#ifndef URAID_MD_REBUILD_H
#define URAID_MD_REBUILD_H

#include "md.h"

#include <signal.h>

/* What the caller shows, as it happens. */
struct md_rebuild_out {
	void *ctx;
	/* A line for the user (no newline). */
	void (*say)(void *ctx, const char *line);
	/* The rebuild of array begins ("rebuilding LIST from FROM of TO per
	 * member"); the caller may arm its stop now.  May be NULL. */
	void (*begin)(void *ctx, const char *array, const char *list, uint64_t from, uint64_t to);
	/* done bytes of each member of to, from where it began; last once at
	 * the end.  May be NULL. */
	void (*progress)(void *ctx, const char *array, uint64_t done, uint64_t from, uint64_t to,
	                 bool last);
};

/* A line for the user, through out->say (nothing when out is NULL). */
__attribute__((format(printf, 2, 3))) void md_say(const struct md_rebuild_out *out, const char *fmt,
                                                  ...);

struct md_rebuild_opts {
	bool force; /* rebuild a RAID5/6 that was not shut down cleanly */
	/* Set (to a signal number) to stop: the recovery offset is saved
	 * and md_rebuild returns -EINTR, having said so.  May be NULL. */
	volatile sig_atomic_t *stop;
	const struct md_rebuild_out *out;
};

/* Rebuild the members being recovered among the n members (vols, their
 * superblocks sbs, fresh the index of the freshest, specs their names;
 * all consumed), spares given taking the missing roles first.  0 when
 * done or when nothing is to rebuild (said), -EINTR when stopped (said),
 * else -errno with err_set() detail. */
int md_rebuild(char **specs, unsigned n, struct vol **vols, struct md_super **sbs, unsigned fresh,
               const struct md_rebuild_opts *o);

struct md_add_opts {
	bool spare;       /* a spare even if a role is missing */
	bool force;       /* overwrite what the new member holds */
	uint8_t devflags; /* the new member's MD_DEVFLAG_* (write-mostly, failfast) */
	const struct md_rebuild_out *out;
};

/* Add new_spec to the array of the n members (as md_rebuild takes them):
 * a superblock of the array's version on it, recorded in theirs; it takes the first missing
 * role (marked recovering: *role set, md_rebuild does the rest) or is a
 * spare (*role MD_ROLE_SPARE).  0 (said) or -errno with err_set(). */
int md_add(char **specs, unsigned n, struct vol **vols, struct md_super **sbs, unsigned fresh,
           const char *new_spec, const struct md_add_opts *o, unsigned *role);

/* Start replacing old_spec, one of the n members (as md_rebuild takes
 * them), with new_spec (mdadm --replace OLD --with NEW, offline): OLD must
 * be an in-sync member of a redundant array whose role has no replacement
 * yet; NEW is checked as md_add checks a new member (o->force: overwrite
 * what it holds) and gets a superblock of the array's version giving it
 * OLD's role as a replacement (MD_FEATURE_REPLACEMENT, recovery offset 0:
 * md_replace.h), recorded in every member's role table (events + 1).  The
 * copy is the running array's (a writable assembly builds it).  0 (said)
 * or -errno with err_set(); a refusal writes nothing. */
int md_replace_begin(char **specs, unsigned n, struct vol **vols, struct md_super **sbs,
                     unsigned fresh, const char *old_spec, const char *new_spec,
                     const struct md_add_opts *o);

#endif
