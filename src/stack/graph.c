/* graph.c — the probe graph of graph.h: one table of layers, run over the
 * nodes round after round until a round adds nothing.
 *
 * Ownership: the graph holds every vol.  A layer that builds on nodes
 * either borrows them (partitions and logical volumes are windows into
 * the vol beneath; LUKS reads through its device) or takes them over (an
 * md array owns its members, as md's remove closes one): those get a
 * borrowing slice of the node, which the array adopts once it has
 * assembled, so that a refusal leaves the node open for the next layer
 * (LUKS's plaintext takes its device over the same way, so that a stack
 * of one array and LUKS is a chain of owners, as stack_open() returns).
 * Nodes are closed in the reverse of the order they were found: what is
 * built on a vol always after it. */
#include "graph.h"

#include "assume.h"

#include "core/log.h"
#include "disc/part.h"
#include "disc/slice.h"
#include "fwraid/fwraid.h"
#include "luks/luks.h"
#include "lvm/lvm.h"
#include "md/md.h"
#include "md/probe.h"
#include "member/member.h"
#include "passphrase.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- nodes ---- */

static char *graph_strdup_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *graph_strdup_printf(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	return s;
}

/* A name no node has yet: name, else name.2, name.3 ... */
static char *graph_unique_name(const struct stack_graph *g, const char *name)
{
	if (stack_graph_find(g, name) < 0)
		return strdup(name);
	for (unsigned k = 2;; k++) {
		char *s = graph_strdup_printf("%s.%u", name, k);
		if (!s || stack_graph_find(g, s) < 0)
			return s;
		free(s);
	}
}

/* Add a node for vol (owned by the graph), made of from[0..nfrom), which
 * it marks used by it.  Returns its index or -ENOMEM (vol is then closed). */
static int graph_add(struct stack_graph *g, struct vol *vol, const char *name, const char *kind,
                     char *what, const int *from, unsigned nfrom)
{
	struct stack_node *nd;

	if (g->n == g->cap) {
		unsigned cap = g->cap ? 2 * g->cap : 16;
		struct stack_node *p = realloc(g->node, cap * sizeof(*p));
		if (!p)
			goto nomem;
		g->node = p;
		g->cap = cap;
	}
	nd = &g->node[g->n];
	memset(nd, 0, sizeof(*nd));
	nd->used_by = -1;
	nd->vol = vol;
	nd->owned = vol != NULL;
	nd->kind = kind;
	nd->what = what;
	nd->name = graph_unique_name(g, name);
	nd->from = nfrom ? calloc(nfrom, sizeof(*nd->from)) : NULL;
	if (!nd->name || (nfrom && !nd->from)) {
		free(nd->name);
		free(nd->from);
		goto nomem;
	}
	for (unsigned i = 0; i < nfrom; i++) {
		nd->from[i] = from[i];
		if (g->node[from[i]].used_by < 0)
			g->node[from[i]].used_by = (int)g->n;
	}
	nd->nfrom = nfrom;
	return (int)g->n++;
nomem:
	free(what);
	if (vol)
		vol_close(vol);
	return -ENOMEM;
}

/* A node a layer may still look at: it has a vol, nothing uses it, no
 * layer refused it, and layer bit has not seen it. */
static bool graph_free(const struct stack_graph *g, unsigned i, unsigned bit)
{
	const struct stack_node *nd = &g->node[i];

	return nd->vol && nd->used_by < 0 && !nd->refused && !(nd->tried & bit);
}

/* Refusals are told once the graph is built (graph_warn_refused): as
 * warnings beside the volumes that open, or, where none does, the first
 * as the error itself (stack_graph_no_export), not twice. */
static void graph_refuse(struct stack_graph *g, unsigned i, const char *why)
{
	free(g->node[i].refused);
	g->node[i].refused = strdup(why);
}

static void graph_warn_refused(const struct stack_graph *g, int skip)
{
	for (unsigned i = 0; i < g->n; i++)
		if (g->node[i].refused && (int)i != skip)
			log_warn("%s: %s", g->node[i].name, g->node[i].refused);
}

static void graph_warn(struct stack_graph *g, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void graph_warn(struct stack_graph *g, const char *fmt, ...)
{
	size_t len = strlen(g->warning);
	va_list ap;

	va_start(ap, fmt);
	if (len < sizeof(g->warning) - 1) {
		if (len)
			g->warning[len++] = '\n';
		vsnprintf(g->warning + len, sizeof(g->warning) - len, fmt, ap);
		log_warn("%s", g->warning + len);
	}
	va_end(ap);
}

/* ---- the partition layer ---- */

/* Whether node i's md superblock, if it has one, owns the node rather than
 * the partition table t: a superblock near the start (1.1, 1.2) always
 * does (a table there would overlap it, so one of the two is stale and
 * the kernel's md takes the member); one at the end (0.90, 1.0) does
 * unless a partition covers it, for then it is that partition's own
 * (the last partition of an MBR disk can reach the end). */
static bool part_md_wins(struct vol *v, const struct part_table *t)
{
	struct md_super *sb = malloc(sizeof(*sb));
	bool md = false;
	uint64_t at;

	err_clear();
	if (sb && md_super_read(v, sb) == 0) {
		md = true;
		at = md_super_offset(sb, v->size);
		if (at >= v->size / 2)
			for (unsigned k = 0; k < t->n; k++)
				if (t->parts[k].start <= at &&
				    at < t->parts[k].start + t->parts[k].size)
					md = false;
	}
	err_clear();
	free(sb);
	return md;
}

static char *part_what(const struct part_table *t, const struct part *p)
{
	return graph_strdup_printf("%s partition %u%s%s%s%s%s",
	                           strcmp(t->scheme, "gpt") == 0 ? "GPT" : "MBR", p->number,
	                           p->type_name ? ", " : "", p->type_name ? p->type_name : "",
	                           p->name[0] ? " \"" : "", p->name, p->name[0] ? "\"" : "");
}

/* Cut the partitions of a member's, an md array's or a firmware RAID
 * volume's table out (as the kernel scans disks and md arrays, and not
 * partitions or dm volumes). */
static int layer_part(struct stack_graph *g, unsigned bit)
{
	unsigned n0 = g->n;
	int added = 0;

	for (unsigned i = 0; i < n0; i++) {
		struct part_table *t = NULL;
		int r;

		if (!graph_free(g, i, bit))
			continue;
		g->node[i].tried |= bit;
		if (g->o->whole ||
		    (strcmp(g->node[i].kind, "member") != 0 && strcmp(g->node[i].kind, "md") != 0 &&
		     strcmp(g->node[i].kind, "raid") != 0 &&
		     strcmp(g->node[i].kind, "fwraid") != 0))
			continue;
		/* A LUKS header at sector 0 is the volume's, whatever bytes
		 * 510-511 hold (blkid's order). */
		if (luks_probe(g->node[i].vol) > 0)
			continue;
		err_clear();
		r = part_scan(g->node[i].vol, &t);
		if (r == -ENOMEM)
			return r;
		if (r < 0) {
			/* Said, and the node left to the other layers (an md
			 * superblock, a file system whose boot sector looks like
			 * a table) or exported whole: nothing is cut from a
			 * table that does not hold together. */
			graph_warn(g, "%s", err_detail(r));
			continue;
		}
		if (r == 0 || t->n == 0 || part_md_wins(g->node[i].vol, t)) {
			part_table_free(t);
			continue;
		}
		if (t->warning[0])
			graph_warn(g, "%s: %s", g->node[i].name, t->warning);
		free(g->node[i].what);
		g->node[i].what = graph_strdup_printf(
		    "%s, %s partition table, %u partitions", g->node[i].vol->ops->kind,
		    strcmp(t->scheme, "gpt") == 0 ? "GPT" : "MBR", t->n);
		for (unsigned k = 0; k < t->n; k++) {
			char name[300];
			struct vol *pv;
			int from = (int)i;

			snprintf(name, sizeof(name), "%s/p%u", g->node[i].name, t->parts[k].number);
			r = part_open(g->node[i].vol, &t->parts[k], name, &pv);
			if (r == -ENOMEM) {
				part_table_free(t);
				return r;
			}
			if (r < 0) {
				graph_warn(g, "%s: %s", name, err_detail(r));
				continue;
			}
			r = graph_add(g, pv, name, "partition", part_what(t, &t->parts[k]), &from,
			              1);
			if (r < 0) {
				part_table_free(t);
				return r;
			}
			added++;
		}
		part_table_free(t);
	}
	return added;
}

/* ---- the md layer ---- */

static char *md_node_what(struct vol *arr)
{
	struct md_array_info in;
	char *s;

	if (md_array_info(arr, &in) < 0)
		return strdup("md array");
	s = graph_strdup_printf(
	    "%s, %u members%s%s%s", md_level_name(in.level) ? md_level_name(in.level) : "md",
	    in.raid_disks, in.degraded ? ", degraded" : "", in.readonly ? ", read-only" : "",
	    in.recovering ? ", recovering" : "");
	md_array_info_free(&in);
	return s;
}

/* Assemble the arrays of the free nodes holding md superblocks, one set
 * UUID at a time, in the order their first member was found. */
static int layer_md(struct stack_graph *g, unsigned bit)
{
	const struct stack_opts *o = g->o;
	struct md_assemble_opts mo = {.readonly = o->readonly,
	                              .run_degraded = o->run_degraded,
	                              .no_recovery = o->no_recovery,
	                              .start_dirty_degraded = o->start_dirty_degraded,
	                              .force_stale = o->force_stale,
	                              .sync_min = o->sync_min,
	                              .sync_max = o->sync_max,
	                              .journal_writeback = o->journal_writeback,
	                              .journal_cache = o->journal_cache};
	unsigned n0 = g->n, nc = 0;
	int *cand = calloc(n0 ? n0 : 1, sizeof(*cand)), added = 0, r = 0;
	struct md_super *sb = malloc(sizeof(*sb));
	uint8_t(*uuid)[16] = calloc(n0 ? n0 : 1, 16);

	if (!cand || !sb || !uuid) {
		r = -ENOMEM;
		goto out;
	}
	for (unsigned i = 0; i < n0; i++) {
		if (!graph_free(g, i, bit))
			continue;
		g->node[i].tried |= bit;
		err_clear();
		r = md_super_read(g->node[i].vol, sb);
		if (r == -ENOENT) {
			r = 0;
			continue;
		}
		if (r < 0) {
			graph_refuse(g, i, err_detail(r));
			r = 0;
			continue;
		}
		memcpy(uuid[nc], sb->set_uuid, 16);
		cand[nc++] = (int)i;
	}
	for (unsigned a = 0; a < nc; a++) {
		struct vol **members;
		struct vol *arr;
		int from[nc], k = 0, idx;

		if (cand[a] < 0)
			continue;
		for (unsigned b = a; b < nc; b++)
			if (cand[b] >= 0 && memcmp(uuid[a], uuid[b], 16) == 0) {
				from[k++] = cand[b];
				cand[b] = b == a ? cand[b] : -1;
			}
		members = calloc((size_t)k, sizeof(*members));
		if (!members) {
			r = -ENOMEM;
			goto out;
		}
		for (int j = 0; j < k; j++) {
			struct stack_node *nd = &g->node[from[j]];
			/* Named as the vol is (a member: "fault:a.img", not the
			 * spec with its options): md shows and matches it so. */
			r = slice_open(nd->vol, 0, nd->vol->size, false, nd->vol->name,
			               &members[j]);
			if (r < 0) {
				while (j-- > 0)
					vol_close(members[j]);
				free(members);
				goto out;
			}
		}
		err_clear();
		r = md_assemble_one(members, (unsigned)k, &mo, &arr);
		if (r < 0) {
			free(members);
			if (r == -ENOMEM)
				goto out;
			for (int j = 0; j < k; j++)
				graph_refuse(g, (unsigned)from[j], err_detail(r));
			r = 0;
			continue;
		}
		/* The array holds the members it kept (a stale one it left out
		 * and closed): those it adopts, the others stay the graph's. */
		struct md_array_info in;
		char name[48] = "md";
		r = md_array_info(arr, &in);
		if (r < 0) {
			free(members);
			vol_close(arr);
			goto out;
		}
		snprintf(name, sizeof(name), "%s", in.name);
		int kept[nc], nkept = 0;
		for (int j = 0; j < k; j++) {
			bool held = false;
			for (unsigned m = 0; m < in.nmembers; m++)
				held |= in.m[m].vol == members[j];
			if (held) {
				slice_adopt(members[j]);
				g->node[from[j]].owned = false;
				kept[nkept++] = from[j];
			} else {
				char why[200];
				snprintf(why, sizeof(why),
				         "left out of %s: older events than the others, or a spare "
				         "(uraid examine shows which)",
				         name);
				graph_refuse(g, (unsigned)from[j], why);
			}
		}
		md_array_info_free(&in);
		free(members);
		idx = graph_add(g, arr, name, "md", md_node_what(arr), kept, (unsigned)nkept);
		if (idx < 0) {
			r = idx;
			goto out;
		}
		added++;
	}
out:
	free(cand);
	free(sb);
	free(uuid);
	return r < 0 ? r : added;
}

/* ---- what the layers that group nodes share (LVM2, firmware RAID) ---- */

/* The free nodes layer bit has not seen (members alone with members_only)
 * that probe() says carry the layer's metadata: their vols in vols[] and
 * node indexes in cand[] (room for g->n each).  One whose metadata is
 * damaged is refused with probe()'s reason.  How many, or -ENOMEM. */
static int graph_candidates(struct stack_graph *g, unsigned bit, bool members_only,
                            int (*probe)(struct vol *v), struct vol **vols, int *cand)
{
	unsigned n0 = g->n;
	int nc = 0;

	for (unsigned i = 0; i < n0; i++) {
		int r;

		if (!graph_free(g, i, bit))
			continue;
		g->node[i].tried |= bit;
		if (members_only && strcmp(g->node[i].kind, "member") != 0)
			continue;
		err_clear();
		r = probe(g->node[i].vol);
		if (r == -ENOMEM)
			return r;
		if (r < 0)
			graph_refuse(g, i, err_detail(r));
		if (r > 0) {
			vols[nc] = g->node[i].vol;
			cand[nc++] = (int)i;
		}
	}
	return nc;
}

/* A volume a layer found on the candidates cand[idx[0..n)]: a node for
 * *vol, which the graph takes (*vol is set to NULL; closed on error), or,
 * when refused says why it is not opened, a node without a vol that shows
 * it (*vol stays the caller's).  1 for a node with a vol, 0 for a refused
 * one, or -ENOMEM. */
static int graph_add_found(struct stack_graph *g, struct vol **vol, const char *name,
                           const char *kind, char *what, const char *refused, const int *cand,
                           const unsigned *idx, unsigned n)
{
	int from[n ? n : 1], r;
	struct vol *v = refused ? NULL : *vol;

	for (unsigned k = 0; k < n; k++)
		from[k] = cand[idx[k]];
	if (!refused)
		*vol = NULL;
	r = graph_add(g, v, name, kind, what, from, n);
	if (r < 0)
		return r;
	if (refused) {
		graph_refuse(g, (unsigned)r, refused);
		return 0;
	}
	return 1;
}

/* ---- the LVM2 layer ---- */

/* The volume groups on the free nodes with a PV label: each visible LV a
 * node made of the PVs it uses (which stay the graph's: LVs borrow them). */
static int layer_lvm(struct stack_graph *g, unsigned bit)
{
	unsigned n0 = g->n, nc;
	int *cand = calloc(n0 ? n0 : 1, sizeof(*cand)), added = 0, r = 0;
	struct vol **vols = calloc(n0 ? n0 : 1, sizeof(*vols));
	struct lvm_found *f = NULL;

	if (!cand || !vols) {
		r = -ENOMEM;
		goto out;
	}
	if (g->o->whole)
		goto out;
	r = graph_candidates(g, bit, false, lvm_probe, vols, cand);
	if (r <= 0)
		goto out;
	nc = (unsigned)r;
	r = 0;
	err_clear();
	r = lvm_assemble(vols, nc, g->o->readonly, &f);
	if (r == -ENOMEM)
		goto out;
	if (r < 0) {
		for (unsigned c = 0; c < nc; c++)
			graph_refuse(g, (unsigned)cand[c], err_detail(r));
		r = 0;
		goto out;
	}
	if (f->warning[0])
		graph_warn(g, "LVM2: %s", f->warning);
	for (unsigned c = 0; c < nc; c++) {
		struct stack_node *nd = &g->node[cand[c]];
		if (f->vg_of[c] == UINT_MAX)
			continue;
		char *what = graph_strdup_printf("%s; LVM2 physical volume of VG %s",
		                                 nd->what ? nd->what : nd->vol->ops->kind,
		                                 f->vg_names[f->vg_of[c]]);
		if (what) {
			free(nd->what);
			nd->what = what;
		}
	}
	for (unsigned l = 0; l < f->nlv; l++) {
		struct lvm_lv_found *lv = &f->lv[l];

		r = graph_add_found(g, &lv->vol, lv->name, "lvm2",
		                    graph_strdup_printf("LVM2 logical volume on %u PV%s", lv->npvs,
		                                        lv->npvs == 1 ? "" : "s"),
		                    lv->refused, cand, lv->pvs, lv->npvs);
		if (r < 0)
			goto out;
		added += r;
		r = 0;
	}
out:
	lvm_found_free(f);
	free(cand);
	free(vols);
	return r < 0 ? r : added;
}

/* ---- the firmware RAID layer ---- */

/* The IMSM and DDF containers on the free members: each volume a node
 * ("imsm/Volume0", "ddf/VD0") made of the member disks, which stay the
 * graph's (volumes borrow them).  Read-only: uraid never writes firmware
 * metadata, so a writable open refuses the volumes.  It runs first, so
 * that the partition table a volume holds is read from the volume, not
 * from its first member disk. */
static int layer_fwraid(struct stack_graph *g, unsigned bit)
{
	unsigned n0 = g->n, nc;
	int *cand = calloc(n0 ? n0 : 1, sizeof(*cand)), added = 0, r = 0;
	struct vol **vols = calloc(n0 ? n0 : 1, sizeof(*vols));
	struct fwraid_found *f = NULL;

	if (!cand || !vols) {
		r = -ENOMEM;
		goto out;
	}
	if (g->o->whole)
		goto out;
	r = graph_candidates(g, bit, true, fwraid_probe, vols, cand);
	if (r <= 0)
		goto out;
	nc = (unsigned)r;
	r = 0;
	err_clear();
	r = fwraid_assemble(vols, nc, &f);
	if (r == -ENOMEM)
		goto out;
	if (r < 0) {
		for (unsigned c = 0; c < nc; c++)
			graph_refuse(g, (unsigned)cand[c], err_detail(r));
		r = 0;
		goto out;
	}
	if (f->warning[0])
		graph_warn(g, "firmware RAID: %s", f->warning);
	for (unsigned k = 0; k < f->nvol; k++) {
		struct fwraid_vol_found *fv = &f->v[k];
		char name[128], why[300];
		const char *refused = fv->refused;

		snprintf(name, sizeof(name), "%s/%s", fv->fmt, fv->name);
		if (!refused && !g->o->readonly) {
			snprintf(why, sizeof(why),
			         "%s volumes open read-only only (uraid never writes firmware RAID "
			         "metadata): use --readonly",
			         strcmp(fv->fmt, "imsm") == 0 ? "IMSM" : "DDF");
			refused = why;
		}
		r = graph_add_found(g, &fv->vol, name, "fwraid", strdup(fv->what), refused, cand,
		                    fv->members, fv->nmembers);
		if (r < 0)
			goto out;
		added += r;
		r = 0;
	}
out:
	fwraid_found_free(f);
	free(cand);
	free(vols);
	return r < 0 ? r : added;
}

/* ---- the LUKS layer ---- */

/* Unlock a free node that starts with a LUKS header: its plaintext
 * becomes a node of the same name (the encrypted one is used by it).  A
 * writable open rewrites a damaged or stale LUKS2 header copy once the
 * passphrase has proved right; a read-only one never writes.  A wrong
 * passphrase is an error, as with cryptsetup open. */
static int layer_luks_one(struct stack_graph *g, unsigned i)
{
	struct luks_secret *pass = NULL, *vk = NULL;
	struct luks_hdr *h = NULL;
	struct vol *dev = g->node[i].vol, *plain, *lent;
	char prompt[300], *name = NULL;
	int r, slot, from = (int)i;

	r = luks_probe(dev);
	if (r <= 0)
		return r;
	r = luks_load(dev, &h);
	if (r < 0) {
		graph_refuse(g, i, err_detail(r));
		return 0;
	}
	snprintf(prompt, sizeof(prompt), "Enter passphrase for %s: ", g->node[i].name);
	r = passphrase_read(g->o->key_file, prompt, false, &pass);
	if (r < 0)
		goto out;
	slot = r = luks_unlock(h, dev, -1, pass, &vk);
	if (r < 0) {
		/* Which of the stack's volumes refused it: a stack may hold
		 * several LUKS volumes. */
		err_set(r, "%s: LUKS%d: %s", g->node[i].name, h->version, err_detail(r));
		goto out;
	}
	if (!g->o->readonly && h->needs_repair) {
		r = luks_repair(h, dev);
		if (r < 0)
			goto out;
	}
	/* Lent through a slice the payload adopts once open (see the top). */
	r = slice_open(dev, 0, dev->size, false, g->node[i].name, &lent);
	if (r < 0)
		goto out;
	r = luks_open_payload(h, lent, true, vk, &plain); /* closes lent on error */
	if (r < 0)
		goto out;
	slice_adopt(lent);
	g->node[i].owned = false;
	log_info("%s: LUKS%d volume unlocked with key slot %d", g->node[i].name, h->version, slot);
	/* The plaintext takes the name: the ciphertext's node is renamed. */
	name = g->node[i].name;
	g->node[i].name = graph_strdup_printf("%s (LUKS%d)", name, h->version);
	if (!g->node[i].name) {
		g->node[i].name = name;
		name = NULL;
		vol_close(plain);
		r = -ENOMEM;
		goto out;
	}
	r = graph_add(g, plain, name, "luks",
	              graph_strdup_printf("LUKS%d, key slot %d", h->version, slot), &from, 1);
	if (r >= 0)
		g->node[r].luks = h->version;
	r = r < 0 ? r : 1;
out:
	free(name);
	luks_secret_free(pass);
	luks_secret_free(vk);
	luks_hdr_free(h);
	return r;
}

static int layer_luks(struct stack_graph *g, unsigned bit)
{
	unsigned n0 = g->n;
	int added = 0;

	if (g->o->no_luks)
		return 0;
	for (unsigned i = 0; i < n0; i++) {
		int r;
		if (!graph_free(g, i, bit))
			continue;
		g->node[i].tried |= bit;
		r = layer_luks_one(g, i);
		if (r < 0)
			return r;
		added += r;
	}
	return added;
}

/* ---- an array described by hand (assume.h) ---- */

/* Build the --assume array from the member nodes, before any layer runs,
 * as node "assumed" of kind "raid"; the layers then look inside it.  Each
 * member is lent as a slice of its data area, adopted once the array is
 * open (see the top). */
static int graph_assume(struct stack_graph *g, const struct stack_assume *as)
{
	unsigned n = as->geom.raid_disks, nm = 0;
	struct vol **m = calloc(n, sizeof(*m));
	int *from = calloc(n, sizeof(*from)), r = 0;
	struct raid_geom geom = as->geom;
	uint64_t size = as->size;
	struct vol *arr = NULL;
	char *what;

	if (!m || !from) {
		r = -ENOMEM;
		goto out;
	}
	if (!g->o->readonly) {
		r = err_set(-EINVAL, "--assume: an array without metadata is opened read-only "
		                     "only (nothing on the members says it is right): add "
		                     "--readonly");
		goto out;
	}
	for (unsigned k = 0; k < n; k++) {
		int i = -1;
		uint64_t avail;
		if (!as->order[k])
			continue;
		for (unsigned j = 0; j < g->n && i < 0; j++)
			if (strcmp(g->node[j].kind, "member") == 0 &&
			    stack_same_member(g->node[j].name, as->order[k]))
				i = (int)j;
		if (i < 0) {
			r = err_set(-EINVAL,
			            "--assume: order names %s, which is not a member given",
			            as->order[k]);
			goto out;
		}
		from[nm++] = i;
		if (g->node[i].vol->size <= as->offset) {
			r = err_set(-EINVAL, "%s: offset %llu is past its end", as->order[k],
			            (unsigned long long)as->offset);
			goto out;
		}
		avail = g->node[i].vol->size - as->offset;
		if (as->size && as->size > avail) {
			r = err_set(-EINVAL, "%s: offset + size is past its end", as->order[k]);
			goto out;
		}
		if (!as->size && (!size || avail < size))
			size = avail;
	}
	if (geom.chunk)
		size -= size % geom.chunk;
	if (!size) {
		r = err_set(-EINVAL, "--assume: the members are smaller than one chunk");
		goto out;
	}
	geom.dev_size = size;
	for (unsigned k = 0, j = 0; k < n; k++) {
		struct stack_node *nd;
		uint64_t len = size;
		if (!as->order[k])
			continue;
		nd = &g->node[from[j++]];
		/* linear and raid0 (md's zones) use each member whole */
		if (!as->size && (geom.level == RAID_LEVEL_LINEAR || geom.level == 0)) {
			len = nd->vol->size - as->offset;
			len -= geom.chunk ? len % geom.chunk : 0;
		}
		r = slice_open(nd->vol, as->offset, len, false, nd->name, &m[k]);
		if (r < 0)
			goto out;
	}
	err_clear();
	r = raid_open(&geom, m, NULL, "assumed", &arr);
	if (r < 0)
		goto out;
	for (unsigned k = 0, j = 0; k < n; k++)
		if (m[k]) {
			slice_adopt(m[k]);
			g->node[from[j++]].owned = false;
			m[k] = NULL;
		}
	what = graph_strdup_printf("%s, %u members%s, assumed (no metadata), read-only",
	                           md_level_name(geom.level), n, as->missing ? ", degraded" : "");
	r = graph_add(g, arr, "assumed", "raid", what, from, nm);
	r = r < 0 ? r : 0;
out:
	for (unsigned k = 0; m && k < n; k++)
		if (m[k])
			vol_close(m[k]);
	free(m);
	free(from);
	return r;
}

/* ---- the table ---- */

struct graph_layer {
	const char *name;
	/* Look at the free nodes not yet seen (graph_free with bit): the
	 * number of nodes added, or -errno (the whole open fails). */
	int (*scan)(struct stack_graph *g, unsigned bit);
};

/* One layer a line (clang-format would pack them).  Firmware RAID first:
 * its volumes hold the partition tables, not their first disks. */
// clang-format off
static const struct graph_layer graph_layers[] = {
    {"fwraid", layer_fwraid},
    {"partitions", layer_part},
    {"md", layer_md},
    {"lvm2", layer_lvm},
    {"luks", layer_luks},
};
// clang-format on
#define GRAPH_NLAYERS (sizeof(graph_layers) / sizeof(graph_layers[0]))
/* Rounds before a cycle is assumed (md arrays nest up to 8 deep). */
#define GRAPH_ROUNDS 32

/* ---- the graph ---- */

bool stack_graph_is_export(const struct stack_graph *g, unsigned i)
{
	return g->node[i].vol && g->node[i].used_by < 0 && !g->node[i].refused;
}

unsigned stack_graph_exports(const struct stack_graph *g, unsigned *idx)
{
	unsigned k = 0;

	for (unsigned i = 0; i < g->n; i++)
		if (stack_graph_is_export(g, i)) {
			if (idx)
				idx[k] = i;
			k++;
		}
	return k;
}

int stack_graph_no_export(const struct stack_graph *g)
{
	for (unsigned i = 0; i < g->n; i++)
		if (g->node[i].refused) {
			graph_warn_refused(g, (int)i);
			return err_set(-EINVAL, "%s", g->node[i].refused);
		}
	return err_set(-EINVAL, "the members hold no volume to open");
}

int stack_graph_no_such_export(const struct stack_graph *g, const char *name)
{
	char list[512] = "";
	size_t len = 0;
	int named = stack_graph_find(g, name);

	if (named >= 0 && g->node[named].refused)
		return err_set(-EINVAL, "%s: %s", name, g->node[named].refused);
	for (unsigned i = 0; i < g->n && len < sizeof(list) - 4; i++)
		if (stack_graph_is_export(g, i))
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s",
			                        len ? ", " : "", g->node[i].name);
	return err_set(-ENOENT, "no volume named %s; the members hold %s", name,
	               len ? list : "none that can be opened");
}

int stack_graph_find(const struct stack_graph *g, const char *name)
{
	for (unsigned i = 0; i < g->n; i++)
		if (g->node[i].name && strcmp(g->node[i].name, name) == 0)
			return (int)i;
	return -1;
}

void stack_info_of(const struct stack_graph *g, unsigned e, struct stack_info *info)
{
	const struct stack_node *nd = &g->node[e];

	memset(info, 0, sizeof(*info));
	if (nd->luks) {
		info->luks = nd->luks;
		nd = &g->node[nd->from[0]];
	}
	if (strcmp(nd->kind, "md") == 0)
		info->md = nd->vol;
}

void stack_graph_close(struct stack_graph *g)
{
	if (!g)
		return;
	for (unsigned i = g->n; i-- > 0;) {
		struct stack_node *nd = &g->node[i];
		if (nd->vol && nd->owned)
			vol_close(nd->vol);
		free(nd->name);
		free(nd->what);
		free(nd->refused);
		free(nd->from);
	}
	free(g->node);
	free(g);
}

int stack_graph_open(char **specs, int n, const struct stack_opts *o, struct stack_graph **out)
{
	unsigned flags = (o->readonly ? MEMBER_READONLY : 0) | (o->direct ? MEMBER_DIRECT : 0);
	struct stack_graph *g = calloc(1, sizeof(*g));
	int r = 0, round;

	if (!g)
		return -ENOMEM;
	g->o = o;
	if (n < 1) {
		r = err_set(-EINVAL, "no members given");
		goto fail;
	}
	/* A key file that is not there is a mistake even where no LUKS turns
	 * up to use it (cryptsetup refuses it too): say so before any work. */
	if (o->key_file && strcmp(o->key_file, "-") != 0 && access(o->key_file, R_OK) < 0) {
		r = err_set(-errno, "key file %s: %s", o->key_file, strerror(errno));
		goto fail;
	}
	for (int i = 0; i < n; i++) {
		struct vol *v;

		for (int j = 0; j < i; j++)
			if (stack_same_member(specs[i], specs[j])) {
				r = err_set(-EINVAL, "%s is given twice", specs[i]);
				goto fail;
			}
		r = member_open(specs[i], flags, &v);
		if (r < 0)
			goto fail;
		r = graph_add(g, v, specs[i], "member", strdup(v->ops->kind), NULL, 0);
		if (r < 0)
			goto fail;
	}
	if (o->assume) {
		r = graph_assume(g, o->assume);
		if (r < 0)
			goto fail;
	}
	for (round = 0; round < GRAPH_ROUNDS; round++) {
		int added = 0;

		for (unsigned l = 0; l < GRAPH_NLAYERS; l++) {
			r = graph_layers[l].scan(g, 1u << l);
			if (r < 0)
				goto fail;
			added += r;
		}
		if (!added)
			break;
	}
	if (round == GRAPH_ROUNDS) {
		r = err_set(-ELOOP, "volumes nested more than %d deep", GRAPH_ROUNDS);
		goto fail;
	}
	for (unsigned i = 0; i < g->n; i++) {
		const char *what = NULL;
		if (stack_graph_is_export(g, i) &&
		    probe_member(g->node[i].vol, g->node[i].name, &what) > 0)
			g->node[i].holds = what;
	}
	if (stack_graph_exports(g, NULL) > 0)
		graph_warn_refused(g, -1);
	*out = g;
	return 0;
fail:
	graph_warn_refused(g, -1);
	stack_graph_close(g);
	return r;
}
