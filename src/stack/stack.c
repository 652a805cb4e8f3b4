/* stack.c — discovery by probing (see stack.h): member/ opens the
 * specs, format/md.h assembles the arrays, format/luks.h unlocks the top
 * with a passphrase from passphrase.c.  Its callers: serve, check, grow,
 * luks (cli/) and the control socket (ctl/). */
#include "stack.h"

#include "core/log.h"
#include "luks/luks.h"
#include "md/md.h"
#include "member/member.h"
#include "passphrase.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static bool stack_stat(const char *spec, struct stat *st)
{
	const char *c = strrchr(spec, ':');

	return stat(spec, st) == 0 || (c && stat(c + 1, st) == 0);
}

bool stack_same_member(const char *a, const char *b)
{
	struct stat sa, sb;

	if (strcmp(a, b) == 0)
		return true;
	if (!stack_stat(a, &sa) || !stack_stat(b, &sb))
		return false;
	if (S_ISBLK(sa.st_mode) && S_ISBLK(sb.st_mode))
		return sa.st_rdev == sb.st_rdev;
	return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

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

int stack_open_md_members(char **specs, unsigned n, struct vol **vols, struct md_super **sbs,
			  unsigned *fresh, const char *hint)
{
	*fresh = 0;
	for (unsigned i = 0; i < n; i++)
		vols[i] = NULL, sbs[i] = NULL;
	for (unsigned i = 0; i < n; i++) {
		int r;

		for (unsigned j = 0; j < i; j++)
			if (stack_same_member(specs[i], specs[j]))
				return err_set(-EINVAL, "%s is given twice", specs[i]);
		err_clear();
		r = member_open(specs[i], 0, &vols[i]);
		if (r < 0)
			return r;
		sbs[i] = malloc(sizeof(*sbs[i]));
		if (!sbs[i])
			return -ENOMEM;
		err_clear();
		r = md_super_read(vols[i], sbs[i]);
		if (r == -ENOENT)
			return err_set(r, "%s holds no md superblock (%s)", specs[i], hint);
		if (r < 0)
			return r;
		if (memcmp(sbs[i]->set_uuid, sbs[0]->set_uuid, 16) != 0) {
			char u0[36], u1[36];
			md_uuid_format(sbs[0]->set_uuid, u0);
			md_uuid_format(sbs[i]->set_uuid, u1);
			return err_set(-EINVAL,
				       "%s (array %.35s) and %s (array %.35s) belong to "
				       "different arrays",
				       specs[0], u0, specs[i], u1);
		}
		if (sbs[i]->events > sbs[*fresh]->events)
			*fresh = i;
	}
	return 0;
}

/* The md step: assemble the arrays on members[0..n) (see md.h) and
 * require that they make exactly one volume.  Consumes the members. */
static int stack_assemble_md(struct vol **members, int n,
			     const struct stack_opts *o, struct vol **top)
{
	struct md_assemble_opts mo = { .readonly = o->readonly,
				       .run_degraded = o->run_degraded,
				       .no_recovery = o->no_recovery,
				       .start_dirty_degraded = o->start_dirty_degraded,
				       .sync_min = o->sync_min,
				       .sync_max = o->sync_max };
	struct vol **vols = NULL;
	int nvols = 0, r;

	if (o->raw) {
		if (n == 1) {
			*top = members[0];
			return 0;
		}
		for (int i = 0; i < n; i++)
			vol_close(members[i]);
		return err_set(-EINVAL, "--raw exports one member, %d given", n);
	}
	r = md_assemble_all(members, n, &mo, &vols, &nvols);
	if (r < 0)
		return r;
	if (nvols != 1) {
		char list[256] = "";
		size_t len = 0;
		for (int i = 0; i < nvols && len < sizeof(list) - 4; i++)
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s",
						i ? ", " : "", vols[i]->name);
		for (int i = 0; i < nvols; i++)
			vol_close(vols[i]);
		free(vols);
		return err_set(-EINVAL,
			       "the members make %d separate volumes (%s), not one array; give the members of one array",
			       nvols, list);
	}
	*top = vols[0];
	free(vols);
	return 0;
}

/* The LUKS step: if the assembled vol *top starts with a LUKS header,
 * unlock it (o->key_file or a prompt) and replace *top with the plaintext
 * vol.  A writable open rewrites a damaged or stale LUKS2 header copy once
 * the passphrase has proved right; a read-only one never writes.  On
 * failure *top has been closed and set to NULL. */
static int stack_unlock_luks(struct vol **top, const struct stack_opts *o,
			     int *luks_version)
{
	struct luks_secret *pass = NULL, *vk = NULL;
	struct luks_hdr *h = NULL;
	char prompt[300];
	int r, slot;

	if (o->no_luks || o->raw)
		return 0;
	r = luks_probe(*top);
	if (r <= 0)
		goto out;
	r = luks_load(*top, &h);
	if (r < 0)
		goto out;
	snprintf(prompt, sizeof(prompt), "Enter passphrase for %s: ", (*top)->name);
	r = passphrase_read(o->key_file, prompt, false, &pass);
	if (r < 0)
		goto out;
	slot = r = luks_unlock(h, *top, -1, pass, &vk);
	if (r < 0)
		goto out;
	if (!o->readonly && h->needs_repair) {
		r = luks_repair(h, *top);
		if (r < 0)
			goto out;
	}
	r = luks_open_payload(h, *top, true, vk, top);
	if (r == 0) {
		log_info("LUKS%d volume unlocked with key slot %d", h->version, slot);
		*luks_version = h->version;
	} else
		*top = NULL; /* luks_open_payload closed it */
out:
	if (r < 0 && *top) {
		vol_close(*top);
		*top = NULL;
	}
	luks_secret_free(pass);
	luks_secret_free(vk);
	luks_hdr_free(h);
	return r < 0 ? r : 0;
}

int stack_open(char **specs, int n, const struct stack_opts *o,
	       struct vol **top)
{
	struct stack_info info;

	return stack_open_info(specs, n, o, top, &info);
}

int stack_open_info(char **specs, int n, const struct stack_opts *o,
		    struct vol **top, struct stack_info *info)
{
	struct vol **members;
	int r;

	memset(info, 0, sizeof(*info));

	if (n < 1)
		return err_set(-EINVAL, "no members given");
	members = calloc((size_t)n, sizeof(*members));
	if (!members)
		return -ENOMEM;
	r = stack_open_members(specs, n, o, members);
	if (r < 0)
		goto out;
	/* md arrays, nested ones too; consumes the members either way. */
	r = stack_assemble_md(members, n, o, top);
	if (r < 0)
		goto out;
	info->md = md_array_raid(*top) ? *top : NULL;
	/* LUKS on the assembled top vol; consumes *top on failure. */
	r = stack_unlock_luks(top, o, &info->luks);
	if (r < 0)
		info->md = NULL;
out:
	free(members);
	return r;
}
