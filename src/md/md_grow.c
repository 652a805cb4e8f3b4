/* md_grow.c — changing the number of copies of an md RAID1 offline, as
 * `mdadm --grow --raid-devices=N [--add NEW]` does (md_grow.h).
 *
 * md's raid1 changes raid_disks without a reshape (no data moves): every
 * superblock gets the new count and events + 1, and the roles from the old
 * count up are missing until a member takes them.  Each NEW gets a
 * superblock as `uraid add` makes one (md_manage.h) and takes the lowest
 * missing role, marked as recovering from 0 (a spare when no role is
 * missing); then md's offline rebuild (md_rebuild.c) runs on all of them
 * (unless no_rebuild).  Shrinking drops roles only when no member holds
 * them (mdadm asks for them to be failed and removed first).  RAID5/6
 * and RAID10 restripe (md_reshape.c); other levels need a reshape uraid
 * does not do: refused.
 *
 * Every check is made before the first byte is written: a refusal leaves
 * every member and every NEW as it was. */
#include "md_grow.h"
#include "md_manage.h"
#include "md_takeover.h"
#include "md_journal.h"
#include "md_sb090.h"

#include "core/log.h"
#include "core/units.h"
#include "member/member.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct grow_dev {
	const char *spec;
	struct vol *vol;
	struct md_super *sb;
	uint64_t end_sb; /* NEW only: its end superblock to wipe (--force) */
	unsigned role;   /* its role (a NEW's: the one it takes, or MD_ROLE_SPARE) */
	bool promoted;   /* a spare given that takes a missing role */
	bool dropped;    /* leaves the array (a level change): not written */
	bool to_spare;   /* held a role the level change ends: now a spare */
};

struct grow_set {
	struct grow_dev *m; /* the members given */
	unsigned n;
	struct grow_dev *nw; /* the new members */
	unsigned nnew;
	unsigned fresh; /* index of the freshest member */
	char name[48];  /* md/NAME */
	uint64_t events;
	uint32_t max_dev;
	uint16_t roles[MD_SB_MAX_DEV];
};

static void grow_set_free(struct grow_set *s)
{
	for (unsigned i = 0; s->m && i < s->n; i++) {
		vol_close(s->m[i].vol);
		free(s->m[i].sb);
	}
	for (unsigned i = 0; s->nw && i < s->nnew; i++) {
		vol_close(s->nw[i].vol);
		free(s->nw[i].sb);
	}
	free(s->m);
	free(s->nw);
	memset(s, 0, sizeof(*s));
}

/* Take the members opened (all of one array, fresh the freshest) and
 * check that they are one RAID1, every role recorded as held is held by
 * a member given, and nothing is in a state we would not update
 * correctly.  s owns them from here on. */
static int grow_load(char **specs, unsigned n, struct vol **vols, struct md_super **sbs,
                     unsigned fresh, bool any_level, struct grow_set *s)
{
	struct md_super *f;
	unsigned insync = 0;

	s->m = calloc(n, sizeof(*s->m));
	if (!s->m) {
		for (unsigned i = 0; i < n; i++) {
			vol_close(vols[i]);
			free(sbs[i]);
		}
		return -ENOMEM;
	}
	s->n = n;
	s->fresh = fresh;
	for (unsigned i = 0; i < n; i++)
		s->m[i] = (struct grow_dev){.spec = specs[i], .vol = vols[i], .sb = sbs[i]};
	int r;
	f = s->m[s->fresh].sb;
	md_super_array_name(f, s->name, sizeof(s->name));
	s->events = f->events;
	s->max_dev = f->max_dev < MD_SB_MAX_DEV ? f->max_dev : MD_SB_MAX_DEV;
	memcpy(s->roles, f->roles, sizeof(s->roles));
	if (md_sb090_is(f))
		return md_sb090_refuse(f, s->name, "growing the array");
	if (md_journal_refuse(f, s->name, "growing the array") < 0)
		return -ENOTSUP;
	if (f->level != 1 && !any_level) {
		const char *lv = md_level_name(f->level);
		return err_set(-ENOTSUP,
		               "%s is %s: changing its number of devices needs a reshape "
		               "(mdadm --grow restripes the data), which uraid does not do; "
		               "only RAID1 grows or shrinks here",
		               s->name, lv ? lv : "of an unknown level");
	}
	for (unsigned i = 0; i < n; i++) {
		struct grow_dev *d = &s->m[i];
		struct md_super *sb = d->sb;
		unsigned slot = sb->dev_number;

		d->role = slot < s->max_dev ? s->roles[slot] : MD_ROLE_SPARE;
		r = md_super_same_geometry(sb, d->spec, f, s->m[s->fresh].spec, s->name);
		if (r < 0)
			return r;
		for (unsigned j = 0; j < i; j++)
			if (s->m[j].sb->dev_number == slot)
				return err_set(-EINVAL,
				               "%s: %s and %s are the same member (slot %u)",
				               s->name, s->m[j].spec, d->spec, slot);
		if (d->role == MD_ROLE_SPARE)
			continue;
		if (d->role == MD_ROLE_FAULTY)
			return err_set(-EINVAL,
			               "%s: %s is marked faulty in the array; leave it out (or "
			               "give it as --add NEW with --force)",
			               s->name, d->spec);
		if (d->role >= f->raid_disks)
			return err_set(-EINVAL, "%s: %s has role 0x%x, which uraid does not handle",
			               s->name, d->spec, d->role);
		if (sb->events + 1 < s->events)
			return err_set(-EINVAL,
			               "%s: %s is stale (events %llu, newest %llu): leave it out "
			               "or re-add it with `uraid add --force`",
			               s->name, d->spec, (unsigned long long)sb->events,
			               (unsigned long long)s->events);
		if (!(sb->feature_map & MD_FEATURE_RECOVERY_OFFSET))
			insync++;
	}
	if (!insync)
		return err_set(-ENODEV, "%s: no member given is in sync", s->name);
	return 0;
}

/* Every active role recorded must be among the members given: the new
 * table is written to them all, and a member left out would keep the old
 * count.  (After the new members' checks: a NEW that is a member left out
 * is told so by md_manage_probe_new().) */
static int grow_check_given(const struct grow_set *s)
{
	unsigned rd = s->m[s->fresh].sb->raid_disks;

	for (unsigned slot = 0; slot < s->max_dev; slot++) {
		bool given = false;
		if (s->roles[slot] >= rd)
			continue;
		for (unsigned i = 0; i < s->n; i++)
			given |= s->m[i].sb->dev_number == slot;
		if (!given)
			return err_set(-ENODEV,
			               "%s: role %u (slot %u) is held by a member that is not "
			               "given; give every member of the array",
			               s->name, s->roles[slot], slot);
	}
	return 0;
}

/* Open and check the new members (the caller made sure that none is a
 * member, nor given twice); nothing is written. */
static int grow_probe_new(struct grow_set *s, char **specs, unsigned n, bool force,
                          const struct md_super *f)
{
	int r;

	s->nw = calloc(n, sizeof(*s->nw));
	if (!s->nw)
		return -ENOMEM;
	s->nnew = n;
	for (unsigned i = 0; i < n; i++) {
		struct grow_dev *d = &s->nw[i];
		d->spec = specs[i];
		err_clear();
		r = member_open(specs[i], 0, &d->vol);
		if (r < 0)
			return r;
		d->sb = malloc(sizeof(*d->sb));
		if (!d->sb)
			return -ENOMEM;
		r = md_manage_probe_new(d->vol, d->spec, f->set_uuid, s->name, force, &d->end_sb);
		if (r == 0)
			r = md_manage_check_size(d->vol, d->spec, f, s->name);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The spares given take the missing roles below n first (md's recovery
 * would, at once), then each new member gets a slot and the lowest missing
 * role still free, else is a spare; all in s's role table.  Nothing is
 * written. */
static int grow_assign(struct grow_set *s, unsigned old, unsigned n)
{
	const struct md_super *f = s->m[s->fresh].sb;
	uint32_t *used = malloc((s->n + s->nnew) * sizeof(*used));
	unsigned nused = 0;
	int r = 0;

	if (!used)
		return -ENOMEM;
	for (unsigned i = 0; i < s->n; i++)
		used[nused++] = s->m[i].sb->dev_number;
	for (unsigned i = 0; i < s->n && r == 0; i++) {
		struct grow_dev *d = &s->m[i];
		int role = md_manage_free_role(s->roles, s->max_dev, n);
		if (d->role != MD_ROLE_SPARE || role < 0)
			continue;
		for (uint32_t k = s->max_dev; k <= d->sb->dev_number && k < MD_SB_MAX_DEV; k++)
			s->roles[k] = MD_ROLE_SPARE;
		if (d->sb->dev_number >= s->max_dev && d->sb->dev_number < MD_SB_MAX_DEV)
			s->max_dev = d->sb->dev_number + 1;
		r = md_manage_promote_spare(d->sb, s->roles, (unsigned)role, f->size, s->name,
		                            d->spec);
		d->role = (unsigned)role;
		d->promoted = true;
	}
	for (unsigned i = 0; i < s->nnew && r == 0; i++) {
		struct grow_dev *d = &s->nw[i];
		r = md_manage_pick_slot(s->roles, s->max_dev, old, used, nused, f, s->name);
		if (r < 0)
			break;
		unsigned slot = (unsigned)r;
		r = 0;
		used[nused++] = slot;
		int role = md_manage_free_role(s->roles, s->max_dev, n);
		d->role = role < 0 ? MD_ROLE_SPARE : (unsigned)role;
		for (uint32_t k = s->max_dev; k < slot; k++)
			s->roles[k] = MD_ROLE_SPARE;
		if (slot >= s->max_dev)
			s->max_dev = slot + 1;
		s->roles[slot] = (uint16_t)d->role;
		d->sb->dev_number = slot; /* until grow_write builds its superblock */
	}
	free(used);
	return r;
}

/* Checked: write the new members' superblocks, then the members' (all
 * but those leaving the array), in tmpl's geometry. */
static int grow_write(struct grow_set *s, const struct md_super *geom)
{
	struct grow_dev *fd = &s->m[s->fresh];
	struct md_super tmpl = *fd->sb;
	int r = 0;

	s->events++;
	md_manage_set_geometry(&tmpl, geom);
	for (unsigned i = 0; i < s->nnew && r == 0; i++) {
		struct grow_dev *d = &s->nw[i];
		r = md_manage_new_super(d->vol, d->spec, &tmpl, fd->vol, d->sb->dev_number,
		                        d->end_sb, d->sb);
		if (r < 0)
			break;
		if (d->role != MD_ROLE_SPARE)
			md_manage_mark_recovering(d->sb, s->roles, d->role);
		md_manage_set_state(d->sb, s->events, s->max_dev, s->roles);
		err_clear();
		r = md_super_write(d->vol, d->sb);
	}
	for (unsigned i = 0; i < s->n && r == 0; i++) {
		struct grow_dev *d = &s->m[i];
		if (d->dropped)
			continue;
		md_manage_set_geometry(d->sb, geom);
		if (d->to_spare) {
			d->sb->feature_map &= ~MD_FEATURE_RECOVERY_OFFSET;
			d->sb->recovery_offset = 0;
		}
		md_manage_set_state(d->sb, s->events, s->max_dev, s->roles);
		err_clear();
		r = md_super_write(d->vol, d->sb);
	}
	return r;
}

/* The new roles rebuilt, by md's offline rebuild, on every device now in
 * the array (handed over to it, their superblocks read again as written):
 * the members given, then the new ones. */
static int grow_rebuild(struct grow_set *s, const struct md_grow_opts *o)
{
	unsigned k = 0, n = s->n + s->nnew;
	char **specs = calloc(n, sizeof(*specs));
	struct vol **vols = calloc(n, sizeof(*vols));
	struct md_super **sbs = calloc(n, sizeof(*sbs));
	int r = 0;

	if (!specs || !vols || !sbs) {
		free(specs);
		free(vols);
		free(sbs);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < s->n; i++) {
		if (s->m[i].dropped) /* no longer a member; grow_set_free closes it */
			continue;
		specs[k] = (char *)s->m[i].spec;
		vols[k] = s->m[i].vol;
		sbs[k] = s->m[i].sb;
		s->m[i].vol = NULL;
		s->m[i].sb = NULL;
		k++;
	}
	for (unsigned i = 0; i < s->nnew; i++, k++) {
		specs[k] = (char *)s->nw[i].spec;
		vols[k] = s->nw[i].vol;
		sbs[k] = s->nw[i].sb;
		s->nw[i].vol = NULL;
		s->nw[i].sb = NULL;
	}
	n = k;
	for (unsigned i = 0; i < n && r == 0; i++) {
		err_clear();
		r = md_super_read(vols[i], sbs[i]);
	}
	if (r == 0) {
		unsigned fresh = 0; /* as md_rebuild's callers find it */
		for (unsigned i = 1; i < n; i++)
			if (sbs[i]->events > sbs[fresh]->events)
				fresh = i;
		if (o->rebuilding)
			*o->rebuilding = true;
		r = md_rebuild(specs, n, vols, sbs, fresh, o->rebuild);
	} else {
		for (unsigned i = 0; i < n; i++) {
			vol_close(vols[i]);
			free(sbs[i]);
		}
	}
	free(specs);
	free(vols);
	free(sbs);
	return r;
}

/* What the new members and spares given do, said; the count of those that
 * take a role, to be rebuilt. */
static unsigned grow_say_new(const struct grow_set *s, const struct md_rebuild_out *out)
{
	unsigned taking = 0;

	for (unsigned i = 0; i < s->n; i++) {
		if (!s->m[i].promoted)
			continue;
		md_say(out, "%s, a spare, takes role %u of %s, to be rebuilt", s->m[i].spec,
		       s->m[i].role, s->name);
		taking++;
	}
	for (unsigned i = 0; i < s->nnew; i++) {
		const struct grow_dev *d = &s->nw[i];
		if (d->role == MD_ROLE_SPARE) {
			md_say(out, "%s is a spare of %s (slot %u)", d->spec, s->name,
			       d->sb->dev_number);
		} else {
			md_say(out, "%s takes role %u of %s (slot %u), to be rebuilt", d->spec,
			       d->role, s->name, d->sb->dev_number);
			taking++;
		}
	}
	return taking;
}

/* specs[0..n) opened again, with the superblocks the step before wrote
 * (fresh the newest): the next step of a level change mdadm makes with a
 * reshape.  0, or -errno with nothing left open. */
static int grow_reopen(char **specs, unsigned n, struct vol **vols, struct md_super **sbs,
                       unsigned *fresh)
{
	unsigned i;
	int r = 0;

	for (i = 0; i < n; i++) {
		err_clear();
		sbs[i] = malloc(sizeof(*sbs[i]));
		r = sbs[i] ? member_open(specs[i], 0, &vols[i]) : -ENOMEM;
		if (r == 0 && (r = md_super_read(vols[i], sbs[i])) < 0)
			vol_close(vols[i]);
		if (r < 0) {
			free(sbs[i]);
			break;
		}
	}
	if (r < 0) {
		while (i--) {
			vol_close(vols[i]);
			free(sbs[i]);
		}
		return r;
	}
	*fresh = 0;
	for (i = 1; i < n; i++)
		if (sbs[i]->events > sbs[*fresh]->events)
			*fresh = i;
	return 0;
}

/* The new members news[0..n) that a later step of a level change takes
 * (the restripe after a takeover), checked now as that step will check
 * them (md_manage.h), and closed again: nothing is written. */
static int grow_probe_later(char **news, unsigned n, const struct md_super *f, const char *name,
                            bool force)
{
	int r = 0;

	for (unsigned i = 0; i < n && r == 0; i++) {
		struct vol *nv;
		uint64_t end_sb;
		err_clear();
		r = member_open(news[i], 0, &nv);
		if (r < 0)
			break;
		r = md_manage_probe_new(nv, news[i], f->set_uuid, name, force, &end_sb);
		if (r == 0)
			r = md_manage_check_size(nv, news[i], f, name);
		vol_close(nv);
	}
	return r;
}

/* One restripe of a level change (md_reshape_restripe() on specs[0..n),
 * the news[0..nnew) taking the new roles) to t; *done: it ran to the end
 * (else it stopped part-way, said, for --continue). */
static int grow_level_restripe(char **specs, unsigned n, const struct md_reshape_to *t, char **news,
                               unsigned nnew, const struct md_grow_opts *o, bool *done)
{
	struct vol **vols = calloc(n, sizeof(*vols));
	struct md_super **sbs = calloc(n, sizeof(*sbs)), sb;
	struct vol *v;
	unsigned fresh;
	int r = vols && sbs ? grow_reopen(specs, n, vols, sbs, &fresh) : -ENOMEM;

	*done = false;
	if (r == 0)
		r = md_reshape_restripe(specs, n, vols, sbs, fresh, t, news, nnew, o->force,
		                        o->reshape, o->rebuild ? o->rebuild->out : NULL);
	if (r == 0 && (r = member_open(specs[0], MEMBER_READONLY, &v)) == 0) {
		r = md_super_read(v, &sb);
		vol_close(v);
		*done = r == 0 && !(sb.feature_map & MD_FEATURE_RESHAPE_ACTIVE);
	}
	free(vols);
	free(sbs);
	return r;
}

/* A level change (md_takeover.h): the plan from the table, checked with
 * the new members and spares given before the first write, then written
 * as the kernel writes its takeover, and the role it adds rebuilt. */
static int grow_takeover(char **specs, unsigned nm, struct vol **vols, struct md_super **sbs,
                         unsigned fresh, const struct md_grow_opts *o)
{
	const struct md_rebuild_out *out = o->rebuild ? o->rebuild->out : NULL;
	struct grow_set s = {0};
	struct md_takeover_plan *p = calloc(1, sizeof(*p));
	bool *in_sync = calloc(MD_SB_MAX_DEV, sizeof(*in_sync));
	struct md_super *geom = malloc(sizeof(*geom));
	struct md_takeover_in in = {0};
	char lay[32], chunk[32], from[64];
	int r;

	if (!p || !in_sync || !geom) {
		for (unsigned i = 0; i < nm; i++) {
			vol_close(vols[i]);
			free(sbs[i]);
		}
		r = -ENOMEM;
		goto out;
	}
	r = grow_load(specs, nm, vols, sbs, fresh, true, &s);
	if (r == 0)
		r = grow_check_given(&s);
	if (r < 0)
		goto out;
	const struct md_super *f = s.m[s.fresh].sb;
	in.sb = f;
	in.in_sync = in_sync;
	in.min_data_size = UINT64_MAX;
	for (unsigned i = 0; i < s.n; i++) {
		const struct md_super *sb = s.m[i].sb;
		if (s.m[i].role != MD_ROLE_SPARE && !(sb->feature_map & MD_FEATURE_RECOVERY_OFFSET))
			in_sync[sb->dev_number] = true; /* dev_number < max_dev: a role */
		if (s.m[i].role >= f->raid_disks)
			continue;
		if (sb->data_size < in.min_data_size)
			in.min_data_size = sb->data_size;
		if (sb->data_size > in.max_data_size)
			in.max_data_size = sb->data_size;
	}
	in.level = o->level;
	in.raid_disks = o->raid_disks;
	in.layout = o->layout;
	in.array = s.name;
	r = md_takeover_plan(&in, p);
	if (r < 0)
		goto out;
	unsigned end_disks = p->restripe_after ? p->after_disks : p->raid_disks;
	if (o->raid_disks && o->raid_disks != end_disks) {
		r = err_set(-ENOTSUP,
		            "%s: --level with --raid-devices %u: %s makes %u devices; another "
		            "count moves data, a reshape mdadm does not join to this change",
		            s.name, o->raid_disks, p->rule, end_disks);
		goto out;
	}
	if (p->restripe_before) {
		/* 6 -> 5 from a layout that rotates Q: the restripe to its -6
		 * form first (its own checks before it writes), then this
		 * takeover, planned again on what it wrote. */
		struct md_reshape_to t = {.layout_set = true, .layout = p->before_layout};
		bool done;
		if (o->nnew) {
			r = err_set(-EINVAL, "%s: %s takes no new member (--add)", s.name, p->rule);
			goto out;
		}
		grow_set_free(&s);
		r = grow_level_restripe(specs, nm, &t, NULL, 0, o, &done);
		if (r == 0 && !done)
			md_say(out,
			       "%s: the level change follows the reshape: `uraid grow --continue`, "
			       "then --level again",
			       s.name);
		if (r == 0 && done) {
			struct vol **v2 = calloc(nm, sizeof(*v2));
			struct md_super **s2 = calloc(nm, sizeof(*s2));
			unsigned f2;
			r = v2 && s2 ? grow_reopen(specs, nm, v2, s2, &f2) : -ENOMEM;
			if (r == 0)
				r = grow_takeover(specs, nm, v2, s2, f2, o);
			free(v2);
			free(s2);
		}
		goto out;
	}
	/* Restriped after the takeover: to more devices the new members are
	 * the restripe's, else (5 -> 6) the first takes Q; its checks (room
	 * before the data, which the takeover keeps; the new members) now. */
	unsigned tnew = p->restripe_after && p->after_disks > p->raid_disks ? 0 : o->nnew;
	if (p->restripe_after) {
		struct md_super **v = calloc(s.n, sizeof(*v));
		char **sp = calloc(s.n, sizeof(*sp));
		r = v && sp ? 0 : -ENOMEM;
		for (unsigned i = 0; i < s.n && r == 0; i++) {
			v[i] = s.m[i].sb;
			sp[i] = (char *)s.m[i].spec;
		}
		if (r == 0)
			r = md_reshape_restripe_check(
			    v, s.n, s.fresh, p->after_disks - (p->raid_disks - f->raid_disks),
			    o->nnew - tnew, p->chunk ? p->chunk : f->chunk, sp);
		free(v);
		free(sp);
		if (r < 0)
			goto out;
	}

	/* The new geometry, on every member that stays and on the new ones. */
	md_takeover_geometry(p, f, geom);
	memcpy(s.roles, p->roles, sizeof(s.roles));
	for (unsigned i = 0; i < s.n; i++) {
		struct grow_dev *d = &s.m[i];
		unsigned slot = d->sb->dev_number;
		/* raid0 keeps no spare: one given leaves, as mdadm removes it */
		d->dropped = p->level == 0 && d->role == MD_ROLE_SPARE;
		if (slot >= s.max_dev)
			continue;
		d->dropped |= p->dropped[slot];
		d->to_spare =
		    !d->dropped && d->role != MD_ROLE_SPARE && s.roles[slot] == MD_ROLE_SPARE;
		d->role = s.roles[slot];
	}
	r = grow_probe_new(&s, o->news, tnew, o->force, geom);
	if (r == 0)
		r = grow_probe_later(o->news + tnew, o->nnew - tnew, geom, s.name, o->force);
	if (r == 0)
		r = grow_assign(&s, f->raid_disks,
		                p->raid_disks); /* slots as mdadm --add picks them first */
	if (r < 0)
		goto out;
	if (p->new_role >= 0 && md_role_slot(s.roles, s.max_dev, (unsigned)p->new_role) < 0 &&
	    !o->force) {
		r = err_set(-ENODEV,
		            "%s: %s -> %s adds role %d (%s), and no new member takes it: give "
		            "one with --add NEW (mdadm: \"Need 1 spare to avoid degraded array\"), "
		            "or --force to leave it missing",
		            s.name, md_level_name(f->level), md_level_name(p->level), p->new_role,
		            p->level == 6 ? "Q" : "parity");
		goto out;
	}
	for (unsigned i = 0; i < s.nnew; i++)
		if (s.nw[i].role == MD_ROLE_SPARE && p->level == 0) {
			r = err_set(-EINVAL, "%s: %s: raid0 keeps no spare", s.name, s.nw[i].spec);
			goto out;
		}

	/* Checked: from here on we write. */
	snprintf(from, sizeof(from), "%s", md_level_name(f->level));
	r = grow_write(&s, geom);
	if (r < 0)
		goto out;
	md_layout_name(p->level, p->layout, lay, sizeof(lay));
	snprintf(chunk, sizeof(chunk), ", chunk %uK", p->chunk / 2);
	md_say(out, "%s: %s -> %s%s%s%s, %u devices (events %llu)", s.name, from,
	       md_level_name(p->level), lay[0] ? " " : "", lay, p->chunk ? chunk : "",
	       p->raid_disks, (unsigned long long)s.events);
	for (unsigned i = 0; i < s.n; i++) {
		if (s.m[i].dropped)
			md_say(out,
			       "%s leaves %s: its superblock is left as it was (uraid "
			       "zero-superblock before using it elsewhere)",
			       s.m[i].spec, s.name);
		else if (s.m[i].to_spare)
			md_say(out, "%s is a spare of %s now", s.m[i].spec, s.name);
	}
	unsigned taking = grow_say_new(&s, out);
	int missing = md_manage_free_role(s.roles, s.max_dev, p->raid_disks);
	if (missing >= 0)
		md_say(out, "%s: role %d is missing (degraded): `uraid add NEW MEMBER...` fills it",
		       s.name, missing);
	/* The members after the takeover, for a restripe after it (their
	 * names stay in s once grow_rebuild took the vols). */
	char **after = calloc(s.n + s.nnew + 1, sizeof(*after));
	unsigned nafter = 0;
	for (unsigned i = 0; after && i < s.n; i++)
		if (!s.m[i].dropped)
			after[nafter++] = (char *)s.m[i].spec;
	for (unsigned i = 0; after && i < s.nnew; i++)
		after[nafter++] = (char *)s.nw[i].spec;
	r = taking && !o->no_rebuild ? grow_rebuild(&s, o) : 0;
	if (r == 0 && p->restripe_after && taking && o->no_rebuild) {
		md_say(out,
		       "%s: --no-rebuild: the restripe to %u devices waits for the rebuild "
		       "(`uraid rebuild`, then grow again)",
		       s.name, p->after_disks);
	} else if (r == 0 && p->restripe_after) {
		struct md_reshape_to t = {
		    .raid_disks = p->after_disks, .layout_set = true, .layout = p->after_layout};
		bool done;
		grow_set_free(&s); /* the members close (the names are the caller's) */
		r = after ? grow_level_restripe(after, nafter, &t, o->news + tnew, o->nnew - tnew,
		                                o, &done)
		          : -ENOMEM;
	}
	free(after);
out:
	grow_set_free(&s);
	free(p);
	free(in_sync);
	free(geom);
	return r;
}

/* The sectors of data member d can hold: for 1.1 and 1.2 all it has past
 * data_offset (the member may have grown since data_size was written);
 * for 1.0 the data_size recorded, as the superblock at its end would have
 * to move for more. */
static uint64_t grow_room(const struct grow_dev *d)
{
	if (md_sb_version_data_first(md_super_version(d->sb)))
		return d->sb->data_size;
	return md_super_new_data_size(d->sb, d->vol->size);
}

/* --size (mdadm --grow --size): every check first, then each member's
 * size (and a grown data_size) written with events + 1. */
static int grow_size(char **specs, unsigned nm, struct vol **vols, struct md_super **sbs,
                     unsigned fresh, const struct md_grow_opts *o)
{
	const struct md_rebuild_out *out = o->rebuild ? o->rebuild->out : NULL;
	struct grow_set s = {0};
	const char *small = NULL;
	uint64_t room = UINT64_MAX, want, old;
	char had[32], now[32];
	int r;

	r = grow_load(specs, nm, vols, sbs, fresh, true, &s);
	if (r == 0)
		r = grow_check_given(&s);
	if (r < 0)
		goto out;
	struct md_super *f = s.m[s.fresh].sb;
	const char *lv = md_level_name(f->level);
	lv = lv ? lv : "an unknown level";
	old = f->size;
	if (!md_level_redundant(f->level)) {
		r = err_set(-ENOTSUP,
		            "%s is %s: each member's whole data area is used, there is no size to "
		            "change (mdadm: \"RAID 0 array size cannot be changed\")",
		            s.name, lv);
		goto out;
	}
	if (f->level == 10 && MD_RAID10_FAR(f->layout) > 1 && !(f->layout & MD_RAID10_OFFSET)) {
		r = err_set(-ENOTSUP,
		            "%s: raid10 far copies start at a fraction of the member size: a new "
		            "size moves every far copy (the kernel refuses it too)",
		            s.name);
		goto out;
	}
	if (f->feature_map & MD_FEATURE_BITMAP_OFFSET) {
		r = err_set(-ENOTSUP,
		            "%s: the write-intent bitmap covers the old size and has no room "
		            "reserved for more; remove it first (mdadm --grow --bitmap=none), as "
		            "mdadm asks, and add it again after",
		            s.name);
		goto out;
	}
	for (unsigned i = 0; i < s.n; i++) {
		uint64_t m = grow_room(&s.m[i]);
		if (s.m[i].role == MD_ROLE_SPARE || m >= room)
			continue;
		room = m;
		small = s.m[i].spec;
	}
	want = o->size == MD_GROW_SIZE_MAX ? room : o->size;
	if (f->chunk && f->level != 1)
		want -= want % f->chunk; /* whole chunks, as the kernel's resize rounds */
	if (!want || want > room) {
		r = err_set(-ENOSPC, "%s: --size %llu KiB: %s holds %llu KiB of data at most%s",
		            s.name, (unsigned long long)want / 2, small ? small : "no member",
		            (unsigned long long)(room == UINT64_MAX ? 0 : room) / 2,
		            want ? "" : " (in whole chunks)");
		goto out;
	}
	if (want == old) {
		md_say(out, "%s: each member uses %llu KiB already: nothing was changed", s.name,
		       (unsigned long long)old / 2);
		r = 0;
		goto out;
	}

	/* Checked: from here on we write. */
	s.events++;
	for (unsigned i = 0; i < s.n && r == 0; i++) {
		struct md_super *sb = s.m[i].sb;
		if (want > sb->data_size)
			sb->data_size = grow_room(&s.m[i]);
		sb->size = want;
		/* md's resize: the new region is out of sync (recovery_cp =
		 * the old size), resynced at the next start. */
		if (want > old && sb->resync_offset > old)
			sb->resync_offset = old;
		md_manage_set_state(sb, s.events, s.max_dev, s.roles);
		err_clear();
		r = md_super_write(s.m[i].vol, sb);
	}
	if (r < 0)
		goto out;
	md_say(out, "%s: each member uses %s (was %s), events %llu%s", s.name,
	       format_size(want * 512, now, sizeof(now)), format_size(old * 512, had, sizeof(had)),
	       (unsigned long long)s.events,
	       want > old ? "; the new region is resynced at the next start (uraid serve, or "
	                    "the kernel's assembly)"
	                  : "");
out:
	grow_set_free(&s);
	return r;
}

/* A RAID5/6 or RAID10: --raid-devices, --chunk, --layout by a reshape
 * (md_reshape_restripe()). */
static int grow_restripe(char **specs, unsigned nm, struct vol **vols, struct md_super **sbs,
                         unsigned fresh, const struct md_grow_opts *o)
{
	struct md_reshape_to t = {
	    .raid_disks = o->raid_disks, .chunk = o->chunk, .array_size = o->array_size};
	char name[48];
	int r = 0;

	if (o->layout) {
		md_super_array_name(sbs[fresh], name, sizeof(name));
		t.layout_set = true;
		r = md_layout_parse(sbs[fresh]->level, o->layout, &t.layout);
		if (r < 0)
			r = err_set(-EINVAL, "%s: --layout %s: not a %s layout", name, o->layout,
			            md_level_name(sbs[fresh]->level));
	}
	if (r < 0) {
		for (unsigned i = 0; i < nm; i++) {
			vol_close(vols[i]);
			free(sbs[i]);
		}
		return r;
	}
	return md_reshape_restripe(specs, nm, vols, sbs, fresh, &t, o->news, o->nnew, o->force,
	                           o->reshape, o->rebuild ? o->rebuild->out : NULL);
}

/* A RAID0 to more devices (mdadm --grow --raid-devices=N --add NEW...):
 * md has no raid0 reshape, so mdadm takes the array over to a degraded
 * raid4 (its parity missing), reshapes that and takes it back; uraid the
 * same through its own rows: raid0 -> raid4 (layout 5, as the kernel's
 * raid45_takeover_raid0 writes it), md_reshape_restripe() to N+1 devices
 * with the parity role missing (the first NEW rebuilt in the old parity's
 * role as the reshape passes, as the kernel adds it), raid4 -> raid0.
 * Each superblock in between is one the kernel writes; a stop part-way
 * leaves the raid4 reshape for --continue (and --level 0 after it: what
 * takes it back is mdadm's process, which a stop ends, so the kernel
 * too ends such a one as raid4).  Every step's checks before the first
 * write. */
static int grow_raid0(char **specs, unsigned nm, struct vol **vols, struct md_super **sbs,
                      unsigned fresh, const struct md_grow_opts *o)
{
	const struct md_rebuild_out *out = o->rebuild ? o->rebuild->out : NULL;
	const struct md_super *f = sbs[fresh];
	unsigned old = f->raid_disks, n = o->raid_disks;
	char name[48];
	bool done = false;
	int r = 0;

	md_super_array_name(f, name, sizeof(name));
	if (o->chunk || o->layout || o->array_size || n <= old)
		r = err_set(-ENOTSUP,
		            "%s is raid0: md reshapes it to more devices only (through raid4), "
		            "with no other change",
		            name);
	if (r == 0)
		r = md_reshape_restripe_check(sbs, nm, fresh, n, o->nnew, f->chunk, specs);
	if (r == 0)
		r = grow_probe_later(o->news, o->nnew, f, name, o->force);
	if (r < 0) {
		for (unsigned i = 0; i < nm; i++) {
			vol_close(vols[i]);
			free(sbs[i]);
		}
		return r;
	}
	md_say(out,
	       "%s: raid0 %u -> %u devices, through a raid4 with its parity missing (as mdadm)",
	       name, old, n);
	struct md_grow_opts to4 = {
	    .change_level = true, .level = 4, .force = true, .rebuild = o->rebuild};
	r = grow_takeover(specs, nm, vols, sbs, fresh, &to4); /* its own checks first */
	struct md_reshape_to t = {.raid_disks = n + 1, .parity_missing = true};
	if (r == 0)
		r = grow_level_restripe(specs, nm, &t, o->news, o->nnew, o, &done);
	if (r == 0 && !done)
		md_say(out,
		       "%s: back to raid0 once the reshape ends: `uraid grow --continue`, then "
		       "`uraid grow --level 0`",
		       name);
	if (r == 0 && done) {
		char **all = calloc(nm + o->nnew, sizeof(*all));
		struct vol **v2 = calloc(nm + o->nnew, sizeof(*v2));
		struct md_super **s2 = calloc(nm + o->nnew, sizeof(*s2));
		struct md_grow_opts to0 = {.change_level = true, .level = 0, .rebuild = o->rebuild};
		unsigned f2;
		r = all && v2 && s2 ? 0 : -ENOMEM;
		for (unsigned i = 0; i < nm + o->nnew && r == 0; i++)
			all[i] = i < nm ? specs[i] : o->news[i - nm];
		if (r == 0)
			r = grow_reopen(all, nm + o->nnew, v2, s2, &f2);
		if (r == 0)
			r = grow_takeover(all, nm + o->nnew, v2, s2, f2, &to0);
		free(all);
		free(v2);
		free(s2);
	}
	return r;
}

int md_grow(char **specs, unsigned nm, struct vol **vols, struct md_super **sbs, unsigned fresh,
            const struct md_grow_opts *o)
{
	const struct md_rebuild_out *out = o->rebuild ? o->rebuild->out : NULL;
	struct grow_set s = {0};
	unsigned n = o->raid_disks, old = 0, taking = 0;
	int r;

	if (o->change_level)
		return grow_takeover(specs, nm, vols, sbs, fresh, o);
	if (o->size)
		return grow_size(specs, nm, vols, sbs, fresh, o);
	if (md_level_parity(sbs[fresh]->level) || sbs[fresh]->level == 10)
		return grow_restripe(specs, nm, vols, sbs, fresh, o);
	if (sbs[fresh]->level == 0)
		return grow_raid0(specs, nm, vols, sbs, fresh, o);
	if (o->chunk || o->layout || o->array_size) {
		char name[48];
		md_super_array_name(sbs[fresh], name, sizeof(name));
		r = err_set(
		    -ENOTSUP,
		    "%s is %s: a new chunk or layout, or a shrink to an --array-size, "
		    "restripes the data, which uraid does for raid4, raid5, raid6 and raid10 only",
		    name, md_level_name(sbs[fresh]->level));
		for (unsigned i = 0; i < nm; i++) {
			vol_close(vols[i]);
			free(sbs[i]);
		}
		return r;
	}

	r = grow_load(specs, nm, vols, sbs, fresh, false, &s);
	if (r < 0)
		goto fail;
	old = s.m[s.fresh].sb->raid_disks;
	r = md_manage_check_raid_disks(s.roles, s.max_dev, old, n, s.name);
	if (r == 0)
		r = grow_probe_new(&s, o->news, o->nnew, o->force, s.m[s.fresh].sb);
	if (r == 0)
		r = grow_check_given(&s);
	if (r == 0)
		r = grow_assign(&s, old, n);
	if (r < 0)
		goto fail;
	if (n == old && !o->nnew) {
		md_say(out, "%s already has %u devices: nothing was changed", s.name, n);
		r = 0;
		goto out;
	}

	/* Checked: from here on we write. */
	struct md_super geom = *s.m[s.fresh].sb;
	geom.raid_disks = n;
	r = grow_write(&s, &geom);
	if (r < 0)
		goto fail;
	md_say(out, "%s: %u -> %u devices (events %llu)", s.name, old, n,
	       (unsigned long long)s.events);
	taking = grow_say_new(&s, out);
	int missing = md_manage_free_role(s.roles, s.max_dev, n);
	if (missing >= 0)
		md_say(out, "%s: role %d is missing (degraded): `uraid add NEW MEMBER...` fills it",
		       s.name, missing);
	r = taking && !o->no_rebuild ? grow_rebuild(&s, o) : 0;
	goto out;
fail:
out:
	grow_set_free(&s);
	return r;
}
