/* lvm_text.c — LVM2's metadata text (lvm2's lib/config syntax, the layout
 * of lib/format_text/import_vsn1.c) into a checked struct lvm_vg.
 *
 * Two passes.  The first reads the syntax into a tree: `key = value`,
 * `key { ... }`, values that are integers, strings or arrays of them,
 * '#' comments, under hard bounds (nesting depth, string and key lengths,
 * array sizes, node count, integers in int64).  The second walks the VG
 * section and checks it as lvm2 would have written it: the PV of every
 * stripe, every segment inside its PV, an LV's segments contiguous from
 * extent 0, no two LVs on the same extents.  Any failure is one message
 * naming the line or the VG and LV; the caller (lvm.c) names the device. */
#include "lvm.h"

#include "core/log.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CFG_MAX_DEPTH 8           /* vg { logical_volumes { lv { segment { } } } } is 4 */
#define CFG_MAX_KEY 128           /* lvm2's names are at most 127 characters */
#define CFG_MAX_STRING (64 << 10) /* descriptions hold command lines */
#define CFG_MAX_ARRAY 65536
#define CFG_MAX_NODES (1u << 20)
#define LVM_MAX_SECTORS (1ull << 54) /* bytes of a PV or LV still fit in 63 bits */

/* ---- pass 1: the syntax tree ---- */

enum cfg_type { CFG_INT, CFG_STR, CFG_OTHER };

struct cfg_val {
	enum cfg_type t;
	int64_t i;
	char *s;
};

struct cfg_node {
	char *key;
	unsigned line;
	bool section, array;
	unsigned nval;
	struct cfg_val *val;
	struct cfg_node *child, *next;
};

struct cfg_parser {
	const char *p, *end;
	unsigned line, depth, nodes;
	char path[256]; /* where the parser is, for messages */
};

static void cfg_free(struct cfg_node *n)
{
	while (n) {
		struct cfg_node *next = n->next;
		cfg_free(n->child);
		for (unsigned i = 0; i < n->nval; i++)
			free(n->val[i].s);
		free(n->val);
		free(n->key);
		free(n);
		n = next;
	}
}

static int cfg_err(struct cfg_parser *c, const char *what)
{
	return err_set(-EINVAL, "metadata line %u%s%s%s: %s", c->line, c->path[0] ? " (in " : "",
	               c->path, c->path[0] ? ")" : "", what);
}

/* Skip blanks and comments; the next byte, or 0 at the end (a NUL ends the
 * text as it ends lvm2's buffer). */
static int cfg_peek(struct cfg_parser *c)
{
	while (c->p < c->end && *c->p) {
		if (*c->p == '\n') {
			c->line++;
			c->p++;
		} else if (isspace((unsigned char)*c->p)) {
			c->p++;
		} else if (*c->p == '#') {
			while (c->p < c->end && *c->p && *c->p != '\n')
				c->p++;
		} else {
			return (unsigned char)*c->p;
		}
	}
	return 0;
}

static bool cfg_key_char(int ch)
{
	return isalnum(ch) || ch == '_' || ch == '-' || ch == '.' || ch == '+';
}

static int cfg_key(struct cfg_parser *c, char **out)
{
	const char *s = c->p;

	while (c->p < c->end && cfg_key_char((unsigned char)*c->p))
		c->p++;
	size_t n = (size_t)(c->p - s);
	if (n == 0)
		return cfg_err(c, "a name expected");
	if (n >= CFG_MAX_KEY)
		return cfg_err(c, "a name longer than 127 characters");
	*out = strndup(s, n);
	return *out ? 0 : -ENOMEM;
}

static int cfg_string(struct cfg_parser *c, char **out)
{
	char *buf;
	size_t n = 0;

	c->p++; /* the opening quote */
	buf = malloc(64);
	size_t cap = 64;
	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (c->p >= c->end || !*c->p) {
			free(buf);
			return cfg_err(c, "a string without its closing quote");
		}
		char ch = *c->p++;
		if (ch == '"')
			break;
		if (ch == '\n')
			c->line++;
		if (ch == '\\') {
			if (c->p >= c->end || !*c->p) {
				free(buf);
				return cfg_err(c, "a string without its closing quote");
			}
			ch = *c->p++;
		}
		if (n + 1 >= CFG_MAX_STRING) {
			free(buf);
			return cfg_err(c, "a string longer than 64 KiB");
		}
		if (n + 1 >= cap) {
			char *b = realloc(buf, cap * 2);
			if (!b) {
				free(buf);
				return -ENOMEM;
			}
			buf = b;
			cap *= 2;
		}
		buf[n++] = ch;
	}
	buf[n] = 0;
	*out = buf;
	return 0;
}

/* An integer (in int64) or a real, which lvm2 writes for nothing a VG needs
 * and is kept as CFG_OTHER. */
static int cfg_number(struct cfg_parser *c, struct cfg_val *v)
{
	bool neg = false, real = false;
	uint64_t x = 0;
	unsigned digits = 0;

	if (*c->p == '-') {
		neg = true;
		c->p++;
	}
	while (c->p < c->end && (isdigit((unsigned char)*c->p) || *c->p == '.')) {
		if (*c->p == '.') {
			if (real)
				return cfg_err(c, "a malformed number");
			real = true;
		} else if (!real) {
			unsigned d = (unsigned)(*c->p - '0');
			if (x > (UINT64_MAX - d) / 10 || x * 10 + d > (uint64_t)INT64_MAX)
				return cfg_err(c, "a number out of range");
			x = x * 10 + d;
		}
		digits++;
		c->p++;
	}
	if (!digits || (c->p < c->end && cfg_key_char((unsigned char)*c->p)))
		return cfg_err(c, "a malformed number");
	v->t = real ? CFG_OTHER : CFG_INT;
	v->i = neg ? -(int64_t)x : (int64_t)x;
	return 0;
}

static int cfg_value(struct cfg_parser *c, struct cfg_val *v)
{
	int ch = cfg_peek(c);

	if (ch == '"') {
		v->t = CFG_STR;
		return cfg_string(c, &v->s);
	}
	if (ch == '-' || isdigit(ch))
		return cfg_number(c, v);
	return cfg_err(c, ch ? "a value expected" : "the text ends where a value belongs");
}

static int cfg_array(struct cfg_parser *c, struct cfg_node *n)
{
	unsigned cap = 0;
	int r;

	c->p++; /* '[' */
	n->array = true;
	for (;;) {
		int ch = cfg_peek(c);
		if (ch == ']') {
			c->p++;
			return 0;
		}
		if (n->nval == CFG_MAX_ARRAY)
			return cfg_err(c, "an array of more than 65536 values");
		if (n->nval == cap) {
			unsigned nc = cap ? cap * 2 : 4;
			struct cfg_val *nv = realloc(n->val, nc * sizeof(*nv));
			if (!nv)
				return -ENOMEM;
			n->val = nv;
			cap = nc;
		}
		memset(&n->val[n->nval], 0, sizeof(n->val[0]));
		r = cfg_value(c, &n->val[n->nval]);
		if (r < 0) {
			free(n->val[n->nval].s);
			return r;
		}
		n->nval++;
		ch = cfg_peek(c);
		if (ch == ',')
			c->p++;
		else if (ch != ']')
			return cfg_err(c, ch ? "',' or ']' expected in an array"
			                     : "an array without its ']'");
	}
}

static int cfg_section_body(struct cfg_parser *c, struct cfg_node **first, bool top);

/* One `key = value` or `key { ... }`, appended at *tail. */
static int cfg_entry(struct cfg_parser *c, struct cfg_node ***tail)
{
	struct cfg_node *n;
	int r;

	if (++c->nodes > CFG_MAX_NODES)
		return cfg_err(c, "more than a million entries");
	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	**tail = n;
	*tail = &n->next;
	n->line = c->line;
	r = cfg_key(c, &n->key);
	if (r < 0)
		return r;
	int ch = cfg_peek(c);
	if (ch == '{') {
		size_t plen = strlen(c->path);
		if (c->depth >= CFG_MAX_DEPTH)
			return cfg_err(c, "sections nested deeper than 8");
		snprintf(c->path + plen, sizeof(c->path) - plen, "%s%s", plen ? "/" : "", n->key);
		c->p++;
		c->depth++;
		n->section = true;
		r = cfg_section_body(c, &n->child, false);
		c->depth--;
		if (r < 0)
			return r;
		c->path[plen] = 0;
		return 0;
	}
	if (ch != '=')
		return cfg_err(c, ch ? "'=' or '{' expected after a name"
		                     : "the text ends after a name");
	c->p++;
	if (cfg_peek(c) == '[')
		return cfg_array(c, n);
	n->val = calloc(1, sizeof(*n->val));
	if (!n->val)
		return -ENOMEM;
	n->nval = 1;
	return cfg_value(c, n->val);
}

static int cfg_section_body(struct cfg_parser *c, struct cfg_node **first, bool top)
{
	struct cfg_node **tail = first;

	for (;;) {
		int ch = cfg_peek(c);
		if (ch == 0)
			return top ? 0
			           : cfg_err(c, "the text ends inside a section (a '}' missing)");
		if (ch == '}') {
			if (top)
				return cfg_err(c, "a '}' without its '{'");
			c->p++;
			return 0;
		}
		int r = cfg_entry(c, &tail);
		if (r < 0)
			return r;
	}
}

static int cfg_parse(const char *text, size_t len, struct cfg_node **out)
{
	struct cfg_parser c = {.p = text, .end = text + len, .line = 1};
	int r = cfg_section_body(&c, out, true);

	if (r < 0) {
		cfg_free(*out);
		*out = NULL;
	}
	return r;
}

/* ---- pass 2: the VG ---- */

static const struct cfg_node *cfg_find(const struct cfg_node *sec, const char *key)
{
	for (const struct cfg_node *n = sec ? sec->child : NULL; n; n = n->next)
		if (!strcmp(n->key, key))
			return n;
	return NULL;
}

/* Messages of pass 2 name where they are: "VG vg1 LV lin: ...". */
struct vg_ctx {
	struct lvm_vg *vg;
	const char *lv; /* NULL outside an LV */
	char where[CFG_MAX_KEY * 2 + 16];
};

static const char *vg_where(struct vg_ctx *x)
{
	const char *vg = x->vg->name ? x->vg->name : "?";
	if (x->lv)
		snprintf(x->where, sizeof(x->where), "VG %s LV %s", vg, x->lv);
	else
		snprintf(x->where, sizeof(x->where), "VG %s", vg);
	return x->where;
}

static int get_int(struct vg_ctx *x, const struct cfg_node *sec, const char *key, bool need,
                   uint64_t max, uint64_t *out)
{
	const struct cfg_node *n = cfg_find(sec, key);

	if (!n) {
		if (need)
			return err_set(-EINVAL, "%s: %s has no %s", vg_where(x), sec->key, key);
		return 0;
	}
	if (n->section || n->array || n->nval != 1 || n->val[0].t != CFG_INT)
		return err_set(-EINVAL, "%s: %s's %s (line %u) is not a number", vg_where(x),
		               sec->key, key, n->line);
	if (n->val[0].i < 0 || (uint64_t)n->val[0].i > max)
		return err_set(
		    -EINVAL, "%s: %s's %s = %" PRId64 " (line %u) is out of range (0..%" PRIu64 ")",
		    vg_where(x), sec->key, key, n->val[0].i, n->line, max);
	*out = (uint64_t)n->val[0].i;
	return 0;
}

static const char *get_str(const struct cfg_node *sec, const char *key)
{
	const struct cfg_node *n = cfg_find(sec, key);
	if (!n || n->section || n->array || n->nval != 1 || n->val[0].t != CFG_STR)
		return NULL;
	return n->val[0].s;
}

/* Whether the string array key holds flag. */
static bool has_flag(const struct cfg_node *sec, const char *key, const char *flag)
{
	const struct cfg_node *n = cfg_find(sec, key);
	for (unsigned i = 0; n && !n->section && i < n->nval; i++)
		if (n->val[i].t == CFG_STR && !strcmp(n->val[i].s, flag))
			return true;
	return false;
}

/* A UUID as lvm2 writes it (6-4-4-4-4-4-6) or bare: 32 of lvm2's id
 * characters (letters, digits, '!' and '#', lib/uuid/uuid.c). */
static int get_id(struct vg_ctx *x, const struct cfg_node *sec, char id[LVM_ID_LEN + 1])
{
	const char *s = get_str(sec, "id");
	unsigned n = 0;

	if (!s)
		return err_set(-EINVAL, "%s: %s has no id", vg_where(x), sec->key);
	for (; *s; s++) {
		if (*s == '-')
			continue;
		if (!(isalnum((unsigned char)*s) || *s == '!' || *s == '#') || n == LVM_ID_LEN)
			break;
		id[n++] = *s;
	}
	id[n] = 0;
	if (*s || n != LVM_ID_LEN)
		return err_set(-EINVAL, "%s: %s's id \"%s\" is no LVM UUID", vg_where(x), sec->key,
		               get_str(sec, "id"));
	return 0;
}

static int parse_pvs(struct vg_ctx *x, const struct cfg_node *pvs)
{
	struct lvm_vg *vg = x->vg;
	unsigned n = 0;
	int r;

	for (const struct cfg_node *p = pvs->child; p; p = p->next)
		n += p->section;
	vg->pv = calloc(n ? n : 1, sizeof(*vg->pv));
	if (!vg->pv)
		return -ENOMEM;
	for (const struct cfg_node *p = pvs->child; p; p = p->next) {
		if (!p->section)
			continue;
		struct lvm_pv_meta *pv = &vg->pv[vg->npv];
		pv->name = strdup(p->key);
		if (!pv->name)
			return -ENOMEM;
		vg->npv++;
		if ((r = get_id(x, p, pv->id)) < 0 ||
		    (r = get_int(x, p, "pe_start", true, LVM_MAX_SECTORS, &pv->pe_start)) < 0 ||
		    (r = get_int(x, p, "pe_count", true, LVM_MAX_SECTORS / vg->extent_size,
		                 &pv->pe_count)) < 0)
			return r;
		if (pv->pe_start + pv->pe_count * vg->extent_size > LVM_MAX_SECTORS)
			return err_set(-EINVAL, "%s: %s ends past 2^54 sectors", vg_where(x),
			               p->key);
		pv->missing = has_flag(p, "flags", "MISSING") || has_flag(p, "status", "MISSING");
		for (unsigned i = 0; i + 1 < vg->npv; i++) {
			if (!strcmp(vg->pv[i].name, pv->name))
				return err_set(-EINVAL, "%s: two PVs named %s", vg_where(x),
				               pv->name);
			if (!strcmp(vg->pv[i].id, pv->id))
				return err_set(-EINVAL, "%s: %s and %s have the same id %s",
				               vg_where(x), vg->pv[i].name, pv->name, pv->id);
		}
	}
	return 0;
}

static int pv_index(const struct lvm_vg *vg, const char *name)
{
	for (unsigned i = 0; i < vg->npv; i++)
		if (!strcmp(vg->pv[i].name, name))
			return (int)i;
	return -1;
}

/* The stripes of a striped (or linear) segment. */
static int parse_stripes(struct vg_ctx *x, const struct cfg_node *s, struct lvm_seg *seg,
                         struct lvm_lv_meta *lv, const struct cfg_node *lvs)
{
	struct lvm_vg *vg = x->vg;
	uint64_t count = 1;
	int r;

	if ((r = get_int(x, s, "stripe_count", !!strcmp(seg->type, "linear"), LVM_MAX_STRIPES,
	                 &count)) < 0)
		return r;
	if (count == 0)
		return err_set(-EINVAL, "%s: %s has stripe_count 0", vg_where(x), s->key);
	seg->stripe_count = (unsigned)count;
	if (count > 1) {
		if ((r = get_int(x, s, "stripe_size", true, 1u << 30, &seg->stripe_size)) < 0)
			return r;
		if (seg->stripe_size == 0)
			return err_set(-EINVAL, "%s: %s has stripe_size 0", vg_where(x), s->key);
	}
	if (seg->extent_count % count)
		return err_set(-EINVAL, "%s: %s's %" PRIu64 " extents do not split into %u stripes",
		               vg_where(x), s->key, seg->extent_count, seg->stripe_count);
	uint64_t area_len = seg->extent_count / count;
	const struct cfg_node *st = cfg_find(s, "stripes");
	if (!st || st->section || st->nval != 2 * count)
		return err_set(-EINVAL, "%s: %s's stripes list does not hold %u name, extent pairs",
		               vg_where(x), s->key, seg->stripe_count);
	seg->areas = calloc(count, sizeof(*seg->areas));
	if (!seg->areas)
		return -ENOMEM;
	for (unsigned i = 0; i < count; i++) {
		const struct cfg_val *nv = &st->val[2 * i], *ev = &st->val[2 * i + 1];
		if (nv->t != CFG_STR || ev->t != CFG_INT || ev->i < 0)
			return err_set(-EINVAL, "%s: %s's stripe %u is not a \"name\", extent pair",
			               vg_where(x), s->key, i);
		int pv = pv_index(vg, nv->s);
		if (pv < 0) {
			/* A layered LV (pvmove's, a mirror's legs) names an LV here. */
			const struct cfg_node *o = NULL;
			for (o = lvs ? lvs->child : NULL; o; o = o->next)
				if (o->section && !strcmp(o->key, nv->s))
					break;
			if (!o)
				return err_set(-EINVAL,
				               "%s: %s's stripe %u is on \"%s\", no PV of the VG",
				               vg_where(x), s->key, i, nv->s);
			if (!lv->refused &&
			    asprintf(&lv->refused, "a segment on LV %s (pvmove or layered)",
			             nv->s) < 0) {
				lv->refused = NULL;
				return -ENOMEM;
			}
			seg->mapped = false;
			continue;
		}
		uint64_t first = (uint64_t)ev->i;
		if (first > vg->pv[pv].pe_count || area_len > vg->pv[pv].pe_count - first)
			return err_set(-EINVAL,
			               "%s: %s's stripe %u, extents %" PRIu64 "..%" PRIu64
			               " of %s, lies past its pe_count %" PRIu64,
			               vg_where(x), s->key, i, first, first + area_len - 1, nv->s,
			               vg->pv[pv].pe_count);
		seg->areas[i].pv = (unsigned)pv;
		seg->areas[i].first = first;
	}
	return 0;
}

static int seg_cmp(const void *a, const void *b)
{
	const struct lvm_seg *x = a, *y = b;
	return x->start_extent < y->start_extent ? -1 : x->start_extent > y->start_extent;
}

static int parse_lv(struct vg_ctx *x, const struct cfg_node *l, struct lvm_lv_meta *lv,
                    const struct cfg_node *lvs)
{
	struct lvm_vg *vg = x->vg;
	uint64_t declared = 0;
	unsigned n = 0;
	int r;

	lv->visible = has_flag(l, "status", "VISIBLE");
	lv->writable = has_flag(l, "status", "WRITE");
	for (const struct cfg_node *s = l->child; s; s = s->next)
		n += s->section;
	if (n == 0)
		return err_set(-EINVAL, "%s: no segments", vg_where(x));
	if ((r = get_int(x, l, "segment_count", false, UINT32_MAX, &declared)) < 0)
		return r;
	if (cfg_find(l, "segment_count") && declared != n)
		return err_set(-EINVAL, "%s: segment_count is %" PRIu64 " but %u segments follow",
		               vg_where(x), declared, n);
	lv->seg = calloc(n, sizeof(*lv->seg));
	if (!lv->seg)
		return -ENOMEM;
	for (const struct cfg_node *s = l->child; s; s = s->next) {
		if (!s->section)
			continue;
		struct lvm_seg *seg = &lv->seg[lv->nseg++];
		const char *type = get_str(s, "type");
		if ((r = get_int(x, s, "start_extent", true, LVM_MAX_SECTORS, &seg->start_extent)) <
		        0 ||
		    (r = get_int(x, s, "extent_count", true, LVM_MAX_SECTORS, &seg->extent_count)) <
		        0)
			return r;
		if (seg->extent_count == 0)
			return err_set(-EINVAL, "%s: %s has extent_count 0", vg_where(x), s->key);
		if (!type)
			return err_set(-EINVAL, "%s: %s has no type", vg_where(x), s->key);
		seg->type = strdup(type);
		if (!seg->type)
			return -ENOMEM;
		if (strcmp(type, "striped") && strcmp(type, "linear")) {
			/* thin, thin-pool, cache, snapshot, mirror, raid*, vdo,
			 * writecache, integrity, or a type lvm2 adds later: another
			 * device-mapper target than a concatenation of extents. */
			if (!lv->refused && asprintf(&lv->refused, "%s segment", type) < 0) {
				lv->refused = NULL;
				return -ENOMEM;
			}
			continue;
		}
		seg->mapped = true;
		if ((r = parse_stripes(x, s, seg, lv, lvs)) < 0)
			return r;
	}
	qsort(lv->seg, lv->nseg, sizeof(*lv->seg), seg_cmp);
	uint64_t next = 0;
	for (unsigned i = 0; i < lv->nseg; i++) {
		const struct lvm_seg *s = &lv->seg[i];
		if (s->start_extent < next)
			return err_set(-EINVAL, "%s: segments overlap at extent %" PRIu64,
			               vg_where(x), s->start_extent);
		if (s->start_extent > next)
			return err_set(-EINVAL, "%s: no segment maps extents %" PRIu64 "..%" PRIu64,
			               vg_where(x), next, s->start_extent - 1);
		next = s->start_extent + s->extent_count;
		if (next > LVM_MAX_SECTORS / vg->extent_size)
			return err_set(-EINVAL, "%s: ends past 2^54 sectors", vg_where(x));
	}
	return 0;
}

/* One extent run of a PV that an LV's stripe takes, for the overlap check. */
struct pv_run {
	unsigned pv, lv;
	uint64_t first, len;
};

static int run_cmp(const void *a, const void *b)
{
	const struct pv_run *x = a, *y = b;
	if (x->pv != y->pv)
		return x->pv < y->pv ? -1 : 1;
	return x->first < y->first ? -1 : x->first > y->first;
}

/* No two stripes (of one LV or two) on the same extents of a PV. */
static int check_overlaps(struct vg_ctx *x)
{
	struct lvm_vg *vg = x->vg;
	struct pv_run *runs;
	size_t n = 0;

	for (unsigned l = 0; l < vg->nlv; l++)
		for (unsigned s = 0; s < vg->lv[l].nseg; s++)
			if (vg->lv[l].seg[s].mapped)
				n += vg->lv[l].seg[s].stripe_count;
	runs = calloc(n ? n : 1, sizeof(*runs));
	if (!runs)
		return -ENOMEM;
	n = 0;
	for (unsigned l = 0; l < vg->nlv; l++)
		for (unsigned s = 0; s < vg->lv[l].nseg; s++) {
			const struct lvm_seg *seg = &vg->lv[l].seg[s];
			for (unsigned i = 0; seg->mapped && i < seg->stripe_count; i++)
				runs[n++] =
				    (struct pv_run){seg->areas[i].pv, l, seg->areas[i].first,
				                    seg->extent_count / seg->stripe_count};
		}
	qsort(runs, n, sizeof(*runs), run_cmp);
	for (size_t i = 1; i < n; i++) {
		const struct pv_run *a = &runs[i - 1], *b = &runs[i];
		if (a->pv == b->pv && a->first + a->len > b->first) {
			int r = err_set(-EINVAL,
			                "VG %s: LV %s and LV %s both use extent %" PRIu64 " of %s",
			                vg->name, vg->lv[a->lv].name, vg->lv[b->lv].name, b->first,
			                vg->pv[a->pv].name);
			free(runs);
			return r;
		}
	}
	free(runs);
	return 0;
}

static struct lvm_lv_meta *lv_named(struct lvm_vg *vg, const char *name)
{
	for (unsigned i = 0; name && i < vg->nlv; i++)
		if (!strcmp(vg->lv[i].name, name))
			return &vg->lv[i];
	return NULL;
}

/* lvm2 keeps a snapshot as two LVs: its copy-on-write store, hidden but
 * under the name users know ("snap"), and a visible "snapshotN" whose one
 * segment names that store and the origin.  The user's view is kept: the
 * store is listed, refused (it holds the snapshot's exceptions, not a
 * volume), snapshotN is not, and the origin opens read-only, as a write to
 * it that skips the copy-on-write would change the snapshot. */
static int mark_snapshots(struct vg_ctx *x, const struct cfg_node *lvs)
{
	for (const struct cfg_node *l = lvs ? lvs->child : NULL; l; l = l->next)
		for (const struct cfg_node *s = l->section ? l->child : NULL; s; s = s->next) {
			const char *type = s->section ? get_str(s, "type") : NULL;
			if (!type || strcmp(type, "snapshot"))
				continue;
			x->lv = l->key;
			struct lvm_lv_meta *origin = lv_named(x->vg, get_str(s, "origin"));
			struct lvm_lv_meta *cow = lv_named(x->vg, get_str(s, "cow_store"));
			if (!origin || !cow)
				return err_set(-EINVAL,
				               "%s: %s names no origin or cow_store LV of the VG",
				               vg_where(x), s->key);
			origin->writable = false;
			lv_named(x->vg, l->key)->visible = false;
			cow->visible = true;
			free(cow->refused);
			if (asprintf(&cow->refused,
			             "a snapshot of %s (dm-snapshot's copy-on-write store)",
			             origin->name) < 0) {
				cow->refused = NULL;
				return -ENOMEM;
			}
		}
	return 0;
}

static int parse_vg(const struct cfg_node *top, struct lvm_vg *vg)
{
	struct vg_ctx x = {.vg = vg};
	const struct cfg_node *sec = NULL, *pvs, *lvs;
	int r;

	for (const struct cfg_node *n = top; n; n = n->next) {
		if (!n->section)
			continue;
		if (sec)
			return err_set(-EINVAL, "metadata holds two VGs, %s and %s", sec->key,
			               n->key);
		sec = n;
	}
	for (const struct cfg_node *n = top; n; n = n->next) {
		if (!strcmp(n->key, "version") && !n->section &&
		    (n->nval != 1 || n->val[0].t != CFG_INT || n->val[0].i != 1))
			return err_set(-EINVAL, "metadata text version (line %u) is not 1",
			               n->line);
		if (!strcmp(n->key, "contents") && !n->section &&
		    (n->nval != 1 || n->val[0].t != CFG_STR ||
		     strcmp(n->val[0].s, "Text Format Volume Group")))
			return err_set(
			    -EINVAL, "metadata contents (line %u) are not a volume group", n->line);
	}
	if (!sec)
		return err_set(-EINVAL, "metadata holds no VG section");
	vg->name = strdup(sec->key);
	if (!vg->name)
		return -ENOMEM;
	if ((r = get_id(&x, sec, vg->id)) < 0 ||
	    (r = get_int(&x, sec, "seqno", true, INT64_MAX, &vg->seqno)) < 0 ||
	    (r = get_int(&x, sec, "extent_size", true, 1u << 31, &vg->extent_size)) < 0)
		return r;
	if (vg->extent_size == 0)
		return err_set(-EINVAL, "VG %s: extent_size 0", vg->name);
	vg->writable = has_flag(sec, "status", "WRITE");
	pvs = cfg_find(sec, "physical_volumes");
	if (!pvs || !pvs->section)
		return err_set(-EINVAL, "VG %s: no physical_volumes section", vg->name);
	if ((r = parse_pvs(&x, pvs)) < 0)
		return r;
	lvs = cfg_find(sec, "logical_volumes");
	if (lvs && !lvs->section)
		return err_set(-EINVAL, "VG %s: logical_volumes is not a section", vg->name);
	unsigned n = 0;
	for (const struct cfg_node *l = lvs ? lvs->child : NULL; l; l = l->next)
		n += l->section;
	vg->lv = calloc(n ? n : 1, sizeof(*vg->lv));
	if (!vg->lv)
		return -ENOMEM;
	for (const struct cfg_node *l = lvs ? lvs->child : NULL; l; l = l->next) {
		if (!l->section)
			continue;
		struct lvm_lv_meta *lv = &vg->lv[vg->nlv++];
		lv->name = strdup(l->key);
		if (!lv->name)
			return -ENOMEM;
		x.lv = lv->name;
		for (unsigned i = 0; i + 1 < vg->nlv; i++)
			if (!strcmp(vg->lv[i].name, lv->name))
				return err_set(-EINVAL, "%s: defined twice", vg_where(&x));
		if ((r = parse_lv(&x, l, lv, lvs)) < 0)
			return r;
	}
	if ((r = mark_snapshots(&x, lvs)) < 0)
		return r;
	return check_overlaps(&x);
}

void lvm_vg_free(struct lvm_vg *vg)
{
	if (!vg)
		return;
	for (unsigned i = 0; i < vg->npv; i++)
		free(vg->pv[i].name);
	for (unsigned i = 0; i < vg->nlv; i++) {
		struct lvm_lv_meta *lv = &vg->lv[i];
		for (unsigned s = 0; s < lv->nseg; s++) {
			free(lv->seg[s].type);
			free(lv->seg[s].areas);
		}
		free(lv->seg);
		free(lv->name);
		free(lv->refused);
	}
	free(vg->pv);
	free(vg->lv);
	free(vg->name);
	free(vg);
}

int lvm_text_parse(const char *text, size_t len, struct lvm_vg **out)
{
	struct cfg_node *top = NULL;
	struct lvm_vg *vg;
	int r;

	*out = NULL;
	r = cfg_parse(text, len, &top);
	if (r < 0)
		return r;
	vg = calloc(1, sizeof(*vg));
	if (!vg) {
		cfg_free(top);
		return -ENOMEM;
	}
	r = parse_vg(top, vg);
	cfg_free(top);
	if (r < 0) {
		lvm_vg_free(vg);
		return r;
	}
	*out = vg;
	return 0;
}
