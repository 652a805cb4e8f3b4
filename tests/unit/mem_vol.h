/* mem_vol.h — a zero-filled RAM member of size bytes (mem:SIZE) for the
 * unit tests; the test fails if it cannot be opened. */
#ifndef URAID_TEST_MEM_VOL_H
#define URAID_TEST_MEM_VOL_H

#include "check.h"
#include "member/member.h"

#include <stdio.h>

static inline struct vol *mem_vol(uint64_t size)
{
	char spec[64];
	struct vol *v = NULL;

	snprintf(spec, sizeof(spec), "mem:%llu", (unsigned long long)size);
	CHECK(member_open(spec, 0, &v) == 0);
	return v;
}

#endif
