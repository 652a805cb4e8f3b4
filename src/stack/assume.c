/* assume.c — parsing and checking `--assume` (assume.h); graph.c builds
 * the array it describes. */
#include "assume.h"

#include "core/log.h"
#include "core/units.h"
#include "md/md.h"
#include "stack.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void stack_assume_free(struct stack_assume *a)
{
	if (!a)
		return;
	for (unsigned i = 0; a->order && i < a->geom.raid_disks; i++)
		free(a->order[i]);
	free(a->order);
	free(a);
}

/* Append one name to a's order. */
static int assume_add_member(struct stack_assume *a, const char *name)
{
	char **p;

	if (!*name)
		return err_set(-EINVAL, "--assume: an empty member name in order");
	if (a->geom.raid_disks >= STACK_ASSUME_MAX)
		return err_set(-EINVAL, "--assume: more than %d members", STACK_ASSUME_MAX);
	p = realloc(a->order, (a->geom.raid_disks + 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	a->order = p;
	if (strcmp(name, "missing") == 0) {
		p[a->geom.raid_disks] = NULL;
		a->missing++;
	} else {
		for (unsigned i = 0; i < a->geom.raid_disks; i++)
			if (p[i] && stack_same_member(p[i], name))
				return err_set(-EINVAL, "--assume: %s is named twice in order",
				               name);
		p[a->geom.raid_disks] = strdup(name);
		if (!p[a->geom.raid_disks])
			return -ENOMEM;
	}
	a->geom.raid_disks++;
	return 0;
}

static int assume_size(const char *key, const char *v, uint64_t *out)
{
	if (parse_size(v, out) < 0)
		return err_set(-EINVAL, "--assume: bad %s '%s' (a size: 64K, 1M, 2048)", key, v);
	return 0;
}

/* The whole description once parsed: what every key together must make. */
static int assume_check(struct stack_assume *a, bool have_level, bool have_chunk,
                        const char *layout)
{
	const struct md_level_info *li;
	int r;

	if (!have_level)
		return err_set(-EINVAL, "--assume: missing key level (level=5, level=0, ...)");
	if (!a->geom.raid_disks)
		return err_set(-EINVAL, "--assume: missing key order (order=a.img,b.img,...)");
	li = md_level_info(a->geom.level);
	r = md_level_served(a->geom.level, "--assume");
	if (r < 0)
		return r;
	if (li->chunked && !have_chunk)
		return err_set(-EINVAL, "--assume: missing key chunk (%s is striped: chunk=64K)",
		               li->name);
	if (!li->chunked && have_chunk)
		return err_set(-EINVAL, "--assume: %s has no chunk", li->name);
	if (li->chunked && (a->geom.chunk < 4096 || (a->geom.chunk & (a->geom.chunk - 1))))
		return err_set(-EINVAL, "--assume: chunk %u is not a power of two of at least 4K",
		               a->geom.chunk);
	if (layout) {
		uint32_t w;
		if (md_layout_parse(a->geom.level, layout, &w) < 0)
			return err_set(-EINVAL, "--assume: %s has no layout '%s'", li->name,
			               layout);
		a->geom.layout = w;
	} else if (li->default_layout) {
		uint32_t w;
		if (md_layout_parse(a->geom.level, li->default_layout, &w) == 0)
			a->geom.layout = w;
	}
	if (a->geom.raid_disks < li->min_disks)
		return err_set(-EINVAL, "--assume: %s takes at least %u members, order names %u",
		               li->name, li->min_disks, a->geom.raid_disks);
	if (a->missing == a->geom.raid_disks)
		return err_set(-EINVAL, "--assume: every member is missing");
	if (a->missing && (!li->redundant || (li->parity && a->missing > li->parity)))
		return err_set(-EINVAL, "--assume: %s cannot run with %u of %u members missing",
		               li->name, a->missing, a->geom.raid_disks);
	if (a->size && li->chunked)
		a->size -= a->size % a->geom.chunk;
	return 0;
}

int stack_assume_parse(const char *spec, struct stack_assume **out)
{
	struct stack_assume *a = calloc(1, sizeof(*a));
	char *s = strdup(spec), *save = NULL, *tok, *layout = NULL;
	const char *key = NULL;
	bool have_level = false, have_chunk = false, have_size = false;
	int r = 0;

	if (!a || !s) {
		r = -ENOMEM;
		goto out;
	}
	for (tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		const char *v = tok;

		if (eq) {
			*eq = 0;
			key = tok;
			v = eq + 1;
		} else if (!key || strcmp(key, "order") != 0) {
			r = err_set(-EINVAL, "--assume: '%s' is not key=value", tok);
			goto out;
		}
		if (strcmp(key, "order") == 0) {
			r = assume_add_member(a, v);
		} else if (strcmp(key, "level") == 0) {
			r = md_level_parse(v, &a->geom.level);
			if (r < 0)
				r = err_set(-EINVAL, "--assume: unknown level '%s'", v);
			have_level = true;
		} else if (strcmp(key, "chunk") == 0) {
			uint64_t c;
			r = assume_size(key, v, &c);
			if (r == 0 && c > (1u << 30))
				r = err_set(-EINVAL, "--assume: chunk %s is too large", v);
			a->geom.chunk = (uint32_t)c;
			have_chunk = true;
		} else if (strcmp(key, "layout") == 0) {
			layout = strdup(v);
			r = layout ? 0 : -ENOMEM;
		} else if (strcmp(key, "offset") == 0) {
			r = assume_size(key, v, &a->offset);
			if (r == 0 && a->offset % 512)
				r = err_set(-EINVAL, "--assume: offset %s is not a multiple of 512",
				            v);
		} else if (strcmp(key, "size") == 0) {
			r = assume_size(key, v, &a->size);
			if (r == 0 && a->size == 0)
				r = err_set(-EINVAL, "--assume: size 0");
			have_size = true;
		} else {
			r = err_set(
			    -EINVAL,
			    "--assume: unknown key '%s' (level, chunk, layout, order, offset, "
			    "size)",
			    key);
		}
		if (r < 0)
			goto out;
	}
	r = assume_check(a, have_level, have_chunk, layout);
	if (r == 0 && have_size && a->size == 0)
		r = err_set(-EINVAL, "--assume: size is smaller than a chunk");
out:
	free(s);
	free(layout);
	if (r < 0) {
		stack_assume_free(a);
		return r;
	}
	*out = a;
	return 0;
}

int stack_assume_check_members(const struct stack_assume *a, char **specs, int n)
{
	for (unsigned i = 0; i < a->geom.raid_disks; i++) {
		bool given = false;
		if (!a->order[i])
			continue;
		for (int j = 0; j < n && !given; j++)
			given = stack_same_member(a->order[i], specs[j]);
		if (!given)
			return err_set(-EINVAL,
			               "--assume: order names %s, which is not a member given",
			               a->order[i]);
	}
	for (int j = 0; j < n; j++) {
		bool named = false;
		for (unsigned i = 0; i < a->geom.raid_disks && !named; i++)
			named = a->order[i] && stack_same_member(a->order[i], specs[j]);
		if (!named)
			return err_set(-EINVAL, "--assume: member %s is not in order", specs[j]);
	}
	return 0;
}

/* A byte count as parse_size() reads it back: 64K, 1M, or bytes. */
static const char *assume_bytes(uint64_t v, char *buf, size_t len)
{
	if (v && v % (1ull << 30) == 0)
		snprintf(buf, len, "%lluG", (unsigned long long)(v >> 30));
	else if (v && v % (1ull << 20) == 0)
		snprintf(buf, len, "%lluM", (unsigned long long)(v >> 20));
	else if (v && v % 1024 == 0)
		snprintf(buf, len, "%lluK", (unsigned long long)(v >> 10));
	else
		snprintf(buf, len, "%llu", (unsigned long long)v);
	return buf;
}

char *stack_assume_format(const struct raid_geom *g, const char *const *order, uint64_t offset,
                          uint64_t size, char *out, size_t len)
{
	const struct md_level_info *li = md_level_info(g->level);
	char b[32], lay[64];
	size_t at = 0;

#define PUT(...)                                                                                   \
	do {                                                                                       \
		if (at < len)                                                                      \
			at += (size_t)snprintf(out + at, len - at, __VA_ARGS__);                   \
	} while (0)
	PUT("level=%s", li ? li->name : "?");
	if (li && li->chunked)
		PUT(",chunk=%s", assume_bytes(g->chunk, b, sizeof(b)));
	if (li && g->level != 0 && (li->nlayouts || li->layout_format))
		PUT(",layout=%s", md_layout_name(g->level, g->layout, lay, sizeof(lay)));
	PUT(",order=");
	for (unsigned i = 0; i < g->raid_disks; i++)
		PUT("%s%s", i ? "," : "", order[i] ? order[i] : "missing");
	if (offset)
		PUT(",offset=%s", assume_bytes(offset, b, sizeof(b)));
	if (size)
		PUT(",size=%s", assume_bytes(size, b, sizeof(b)));
#undef PUT
	if (len)
		out[len - 1] = 0;
	return out;
}
