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
 * restripe (md_reshape.c); other levels need a reshape uraid does not do:
 * refused.
 *
 * Every check is made before the first byte is written: a refusal leaves
 * every member and every NEW as it was. */
#include "md_grow.h"
#include "md_manage.h"
#include "md_journal.h"
#include "md_sb090.h"

#include "core/log.h"
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
                     unsigned fresh, struct grow_set *s)
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
	if (f->level != 1) {
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
static int grow_probe_new(struct grow_set *s, char **specs, unsigned n, bool force)
{
	const struct md_super *f = s->m[s->fresh].sb;
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

/* Checked: write the new members' superblocks, then the members'. */
static int grow_write(struct grow_set *s, unsigned n)
{
	struct grow_dev *fd = &s->m[s->fresh];
	struct md_super tmpl = *fd->sb;
	int r = 0;

	s->events++;
	tmpl.raid_disks = n;
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
		d->sb->raid_disks = n;
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
	for (unsigned i = 0; i < s->n; i++, k++) {
		specs[k] = (char *)s->m[i].spec;
		vols[k] = s->m[i].vol;
		sbs[k] = s->m[i].sb;
		s->m[i].vol = NULL;
		s->m[i].sb = NULL;
	}
	for (unsigned i = 0; i < s->nnew; i++, k++) {
		specs[k] = (char *)s->nw[i].spec;
		vols[k] = s->nw[i].vol;
		sbs[k] = s->nw[i].sb;
		s->nw[i].vol = NULL;
		s->nw[i].sb = NULL;
	}
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

int md_grow(char **specs, unsigned nm, struct vol **vols, struct md_super **sbs, unsigned fresh,
            const struct md_grow_opts *o)
{
	const struct md_rebuild_out *out = o->rebuild ? o->rebuild->out : NULL;
	struct grow_set s = {0};
	unsigned n = o->raid_disks, old = 0, taking = 0;
	int r;

	if (sbs[fresh]->level == 5 || sbs[fresh]->level == 6)
		return md_reshape_grow(specs, nm, vols, sbs, fresh, n, o->news, o->nnew, o->force,
		                       o->reshape, out);

	r = grow_load(specs, nm, vols, sbs, fresh, &s);
	if (r < 0)
		goto fail;
	old = s.m[s.fresh].sb->raid_disks;
	r = md_manage_check_raid_disks(s.roles, s.max_dev, old, n, s.name);
	if (r == 0)
		r = grow_probe_new(&s, o->news, o->nnew, o->force);
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
	r = grow_write(&s, n);
	if (r < 0)
		goto fail;
	md_say(out, "%s: %u -> %u devices (events %llu)", s.name, old, n,
	       (unsigned long long)s.events);
	for (unsigned i = 0; i < s.n; i++) {
		if (!s.m[i].promoted)
			continue;
		md_say(out, "%s, a spare, takes role %u of %s, to be rebuilt", s.m[i].spec,
		       s.m[i].role, s.name);
		taking++;
	}
	for (unsigned i = 0; i < s.nnew; i++) {
		struct grow_dev *d = &s.nw[i];
		if (d->role == MD_ROLE_SPARE) {
			md_say(out, "%s is a spare of %s (slot %u)", d->spec, s.name,
			       d->sb->dev_number);
		} else {
			md_say(out, "%s takes role %u of %s (slot %u), to be rebuilt", d->spec,
			       d->role, s.name, d->sb->dev_number);
			taking++;
		}
	}
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
