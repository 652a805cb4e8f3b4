/* probe.h — what a member holds before a command writes a new format onto
 * it.  One list, asked by every command that writes a new member (`uraid
 * create`, `add`, `grow --add`, the online add of `serve`, `luks-format`),
 * so that they all refuse, or warn about, the same things. */
#ifndef URAID_PROBE_H
#define URAID_PROBE_H

#include "core/vol.h"

/* Look at v for the signatures of what a user may still want: md
 * superblocks (every version), LUKS headers, ext2/3/4, XFS and btrfs file
 * systems, an LVM2 physical volume, swap, and GPT or MBR partition tables
 * (or an MBR-style boot sector).  Reads only.  Returns 1 and sets *what to
 * a phrase such as "an ext2/3/4 file system" (static) when one is found,
 * 0 when none is, or -errno with err_set() detail naming spec. */
int probe_member(struct vol *v, const char *spec, const char **what);

/* For the commands that refuse without --force: 0 when probe_member()
 * finds nothing, else -EEXIST with err_set() "SPEC already holds WHAT;
 * refusing to overwrite it (use --force)" (or its read error). */
int probe_member_refuse(struct vol *v, const char *spec);

#endif
