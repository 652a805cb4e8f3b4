/* member.c — dispatch a member spec to its type: one table, every type
 * (member.h lists their specs). */
#include "member.h"

#include "core/log.h"

#include <errno.h>
#include <string.h>

static const struct member_type member_types[] = {
    {"nbd", MEMBER_URI, nbd_member_open},        {"mem", MEMBER_PREFIX, mem_member_open},
    {"null", MEMBER_PREFIX, null_member_open},   {"sim", MEMBER_PREFIX, sim_member_open},
    {"fault", MEMBER_PREFIX, fault_member_open}, {"rbd", MEMBER_PREFIX, rbd_member_open},
    {"file", MEMBER_PATH, file_member_open},
};

static bool member_type_matches(const struct member_type *t, const char *spec)
{
	const char *colon = strchr(spec, ':');
	size_t n = strlen(t->name);

	switch (t->syntax) {
	case MEMBER_PREFIX:
		return colon && (size_t)(colon - spec) == n && memcmp(spec, t->name, n) == 0;
	case MEMBER_URI: /* libnbd parses the whole URI, scheme included */
		return strncmp(spec, t->name, n) == 0 && colon && strncmp(colon, "://", 3) == 0;
	case MEMBER_PATH:
		return true;
	}
	return false;
}

const struct member_type *member_type_of(const char *spec)
{
	size_t n = sizeof(member_types) / sizeof(member_types[0]);

	for (size_t i = 0; i + 1 < n; i++)
		if (member_type_matches(&member_types[i], spec))
			return &member_types[i];
	return &member_types[n - 1];
}

int member_open(const char *spec, unsigned flags, struct vol **out)
{
	const struct member_type *t = member_type_of(spec);

	if (t->syntax == MEMBER_PREFIX)
		spec = strchr(spec, ':') + 1;
	return t->open(spec, flags, out);
}
