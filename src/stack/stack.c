/* stack.c — discovery by probing (see stack.h): member/ opens the
 * specs, format/md.h assembles the arrays, format/luks.h unlocks the top
 * with a passphrase from passphrase.c.  Its callers: serve, check, grow,
 * luks (cli/) and the control socket (ctl/). */
#include "stack.h"

#include "graph.h"

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

int stack_open_members(char **specs, int n, const struct stack_opts *o, struct vol **members)
{
	unsigned flags = (o->readonly ? MEMBER_READONLY : 0) | (o->direct ? MEMBER_DIRECT : 0);

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
		if (r == 0)
			r = md_super_no_reshape(sbs[i], specs[i]);
		if (r == 0)
			r = md_super_no_replacement(sbs[i], specs[i]);
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

/* ---- one volume for the callers that want one ----
 * A graph whose export owns everything beneath it (members -> md ->
 * LUKS) hands the export over as it is.  Where it does not (partitions
 * and logical volumes borrow the vol they sit in), the caller gets a vol
 * that passes every op through to the export and closes the whole graph
 * when closed. */

struct stack_top {
	struct vol vol;
	struct vol *in;
	struct stack_graph *g;
};

static struct vol *top_in(struct vol *v)
{
	return ((struct stack_top *)v)->in;
}

static int top_read(struct vol *v, void *buf, uint64_t len, uint64_t off)
{
	return top_in(v)->ops->read(top_in(v), buf, len, off);
}

static int top_write(struct vol *v, const void *buf, uint64_t len, uint64_t off, unsigned flags)
{
	return top_in(v)->ops->write(top_in(v), buf, len, off, flags);
}

static int top_flush(struct vol *v)
{
	return vol_flush(top_in(v));
}

static int top_trim(struct vol *v, uint64_t len, uint64_t off, unsigned flags)
{
	return vol_trim(top_in(v), len, off, flags);
}

static int top_write_zeroes(struct vol *v, uint64_t len, uint64_t off, unsigned flags)
{
	return vol_write_zeroes(top_in(v), len, off, flags);
}

static int top_view(struct vol *v, uint64_t len, uint64_t off, vol_view_fn fn, void *arg)
{
	return vol_view(top_in(v), len, off, fn, arg);
}

static int top_extents(struct vol *v, uint64_t len, uint64_t off, vol_extent_fn fn, void *arg)
{
	return vol_extents(top_in(v), len, off, fn, arg);
}

static void top_close(struct vol *v)
{
	struct stack_top *t = (struct stack_top *)v;

	stack_graph_close(t->g);
	vol_fini(v);
	free(t);
}

static const struct vol_ops top_ops = {
    .kind = "stack",
    .read = top_read,
    .write = top_write,
    .flush = top_flush,
    .trim = top_trim,
    .write_zeroes = top_write_zeroes,
    .close = top_close,
    .view = top_view,
    .extents = top_extents,
};

int stack_take_export(struct stack_graph *g, unsigned e, struct vol **top)
{
	struct vol *in = g->node[e].vol;
	struct stack_top *t;
	bool chain = true;
	int r;

	for (unsigned i = 0; i < g->n; i++)
		if (i != e && g->node[i].vol && g->node[i].owned)
			chain = false;
	if (chain) {
		g->node[e].owned = false;
		stack_graph_close(g);
		*top = in;
		return 0;
	}
	t = calloc(1, sizeof(*t));
	r = t ? vol_init(&t->vol, &top_ops, g->node[e].name, in->size, in->block_min, in->caps)
	      : -ENOMEM;
	if (r < 0) {
		free(t);
		stack_graph_close(g);
		return r;
	}
	t->vol.block_pref = in->block_pref;
	t->vol.block_max = in->block_max;
	t->in = in;
	t->g = g;
	*top = &t->vol;
	return 0;
}

int stack_open(char **specs, int n, const struct stack_opts *o, struct vol **top)
{
	struct stack_info info;

	return stack_open_info(specs, n, o, top, &info);
}

int stack_open_info(char **specs, int n, const struct stack_opts *o, struct vol **top,
                    struct stack_info *info)
{
	struct stack_graph *g;
	unsigned e[2], k;
	int r;

	memset(info, 0, sizeof(*info));
	if (o->raw) {
		if (n != 1)
			return err_set(-EINVAL, "--raw exports one member, %d given", n);
		return stack_open_members(specs, 1, o, top);
	}
	r = stack_graph_open(specs, n, o, &g);
	if (r < 0)
		return r;
	k = stack_graph_exports(g, NULL);
	if (k == 0) {
		r = stack_graph_no_export(g);
		stack_graph_close(g);
		return r;
	}
	if (k > 1) {
		char list[256] = "";
		size_t len = 0;
		unsigned *idx = calloc(k, sizeof(*idx));
		if (!idx) {
			stack_graph_close(g);
			return -ENOMEM;
		}
		stack_graph_exports(g, idx);
		for (unsigned i = 0; i < k && len < sizeof(list) - 4; i++)
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s",
			                        i ? ", " : "", g->node[idx[i]].name);
		free(idx);
		stack_graph_close(g);
		return err_set(-EINVAL,
		               "the members make %u separate volumes (%s), not one array; give the "
		               "members of one array (uraid probe shows what they hold)",
		               k, list);
	}
	stack_graph_exports(g, e);
	stack_info_of(g, e[0], info);
	r = stack_take_export(g, e[0], top);
	if (r < 0)
		memset(info, 0, sizeof(*info));
	return r;
}
