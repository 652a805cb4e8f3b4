/* member.c — dispatch a member spec to its type by prefix. */
#include "member.h"

#include "core/log.h"

#include <errno.h>
#include <string.h>

static const struct member_type member_types[] = {
	{ "mem", mem_member_open },
	{ "null", null_member_open },
	{ "sim", sim_member_open },
	{ "fault", fault_member_open },
};

int member_open(const char *spec, unsigned flags, struct vol **out)
{
	const char *colon = strchr(spec, ':');

	/* NBD URIs keep their scheme: libnbd parses the whole string. */
	if (strncmp(spec, "nbd", 3) == 0 && colon && strncmp(colon, "://", 3) == 0)
		return nbd_member_open(spec, flags, out);
	if (colon) {
		size_t plen = (size_t)(colon - spec);
		for (size_t i = 0; i < sizeof(member_types) / sizeof(member_types[0]); i++) {
			const struct member_type *t = &member_types[i];
			if (strlen(t->prefix) == plen && memcmp(spec, t->prefix, plen) == 0)
				return t->open(colon + 1, flags, out);
		}
	}
	return file_member_open(spec, flags, out);
}
