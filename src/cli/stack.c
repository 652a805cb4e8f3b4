/* stack.c — discovery by probing (see stack.h). */
#include "stack.h"

#include "core/log.h"
#include "member/member.h"

#include <errno.h>
#include <stdlib.h>

int stack_open_members(char **specs, int n, const struct stack_opts *o,
		       struct vol **members)
{
	unsigned flags = (o->readonly ? MEMBER_READONLY : 0) |
			 (o->direct ? MEMBER_DIRECT : 0);

	for (int i = 0; i < n; i++) {
		int r = member_open(specs[i], flags, &members[i]);
		if (r < 0) {
			while (i-- > 0)
				vol_close(members[i]);
			return r;
		}
	}
	return 0;
}

int stack_open(char **specs, int n, const struct stack_opts *o,
	       struct vol **top)
{
	struct vol **members;
	int r;

	if (n < 1)
		return err_set(-EINVAL, "no members given");
	members = calloc((size_t)n, sizeof(*members));
	if (!members)
		return -ENOMEM;
	r = stack_open_members(specs, n, o, members);
	if (r < 0)
		goto out;
	/* Probing for md arrays and LUKS headers goes here. */
	if (n != 1) {
		for (int i = 0; i < n; i++)
			vol_close(members[i]);
		r = err_set(-EINVAL, "%d members given but no array found on them", n);
		goto out;
	}
	*top = members[0];
out:
	free(members);
	return r;
}
