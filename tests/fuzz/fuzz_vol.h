/* fuzz_vol.h — what the format fuzz targets' in-memory vols share: they
 * stand for a foreign disk opened read-only, so any write, trim or
 * zeroing, and any read that breaks the vol contract (out of range, not
 * in whole blocks), is a finding: contract_broken() aborts with what
 * happened, and fuzz_ro_write / fuzz_ro_trim are the vol ops that do it.
 * FUZZ_NAME names the target in the message. */
#ifndef URAID_FUZZ_VOL_H
#define URAID_FUZZ_VOL_H

#include "core/vol.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

static void contract_broken(const struct vol *v, const char *op, uint64_t len, uint64_t off)
{
	fprintf(stderr, "%s: %s reached %s with off=%llu len=%llu (size %llu, block_min %u)\n",
	        FUZZ_NAME, op, v->name, (unsigned long long)off, (unsigned long long)len,
	        (unsigned long long)v->size, v->block_min);
	abort();
}

static int fuzz_ro_write(struct vol *v, const void *buf, uint64_t len, uint64_t off,
                         unsigned flags)
{
	(void)buf;
	(void)flags;
	contract_broken(v, "write (a read-only start)", len, off);
	return -EROFS;
}

static int fuzz_ro_trim(struct vol *v, uint64_t len, uint64_t off, unsigned flags)
{
	(void)flags;
	contract_broken(v, "trim (a read-only start)", len, off);
	return -EROFS;
}

#endif
