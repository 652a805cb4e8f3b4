/* member.h — turning a member spec from the command line into a vol.
 *
 *   PATH                   a regular file or block device
 *   mem:SIZE               RAM, zero-filled
 *   null:SIZE              reads zeros, drops writes (a ceiling probe)
 *   sim:RATE[,opt..]:SPEC  a disk model wrapped around another member
 *   fault:OPTS:SPEC        error injection around another member
 *   nbd://HOST[:PORT]/NAME, nbd+unix:///NAME?socket=PATH
 *                          a remote NBD export (libnbd URI syntax)
 *
 * Each type lives in its own file and is listed once in member.c's table.
 * Wrapper types open their inner spec with member_open() again. */
#ifndef URAID_MEMBER_H
#define URAID_MEMBER_H

#include "core/vol.h"

#define MEMBER_READONLY 0x1u /* open read-only; writes fail with -EROFS */
#define MEMBER_DIRECT 0x2u   /* bypass the page cache (O_DIRECT) */

/* Open the member named by spec.  Returns 0 or -errno with err_set()
 * detail naming the spec. */
int member_open(const char *spec, unsigned flags, struct vol **out);

/* One entry per member type with a "prefix:" spec. */
struct member_type {
	const char *prefix; /* "mem", "sim", ... (without the colon) */
	/* rest: the spec after "prefix:" */
	int (*open)(const char *rest, unsigned flags, struct vol **out);
};

int file_member_open(const char *path, unsigned flags, struct vol **out);
int mem_member_open(const char *rest, unsigned flags, struct vol **out);
int null_member_open(const char *rest, unsigned flags, struct vol **out);
int nbd_member_open(const char *uri, unsigned flags, struct vol **out);

#endif
