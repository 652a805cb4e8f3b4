/* luks_dump.h — the luksDump-style report of a LUKS header (luks_dump.c). */
#ifndef URAID_LUKS_DUMP_H
#define URAID_LUKS_DUMP_H

#include "luks/luks_hdr.h"

#include <stdio.h>

/* luksDump-style report.  vk non-NULL adds the volume key (the caller has
 * asked the user). */
void luks_dump(const struct luks_hdr *h, const struct luks_secret *vk, FILE *f);

#endif
