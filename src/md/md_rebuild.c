/* md_rebuild.c — restoring an md array's redundancy offline (md_rebuild.h):
 * `uraid add` writes a superblock of the array's version on NEW for the
 * array the members hold and records it in theirs (events + 1, the same
 * role table everywhere).  If a role is missing NEW takes it, marked as being
 * recovered (feature RECOVERY_OFFSET, recovery_offset 0: what the kernel
 * writes for a member under recovery); otherwise (or with spare) NEW is a
 * spare (role 0xffff).  md_rebuild finds the members being recovered (or
 * gives spares the missing roles), reconstructs their data from the others
 * with md's recovery driver (md_recover.h: recovery_offset saved every
 * 64 MiB and when stopped, so that it, or the Linux kernel, continues from
 * there).  At the end the feature bit is cleared and every superblock gets
 * events + 1.  The members are taken for the call (no running array may
 * hold them meanwhile); `uraid grow` (md_grow.c) rebuilds its new roles
 * here too. */
#include "md_rebuild.h"
#include "md_manage.h"
#include "md_recover.h"
#include "md_journal.h"
#include "md_sb090.h"

#include "core/clock.h"
#include "core/log.h"
#include "core/units.h"
#include "disc/raid/raid.h"
#include "disc/slice.h"
#include "member/member.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void md_say(const struct md_rebuild_out *out, const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	if (!out || !out->say)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	out->say(out->ctx, line);
}

struct rb_member {
	const char *spec;
	struct vol *vol; /* the whole member */
	struct md_super *sb;
	unsigned role;      /* from the freshest role table */
	bool target;        /* being recovered (RECOVERY_OFFSET) */
	atomic_bool failed; /* failed while rebuilding: not written again */
};

/* The given members of one array and the state every superblock gets. */
struct rb_set {
	struct rb_member *m;
	unsigned n;
	unsigned fresh; /* index of the freshest member */
	char name[48];  /* md/NAME */
	int level;
	unsigned raid_disks;
	uint64_t size;   /* sectors used per member */
	uint64_t events; /* written at the next update */
	uint32_t max_dev;
	uint16_t roles[MD_SB_MAX_DEV];
	int *insync; /* by role: index of the in-sync member, or -1 */
	int *rec;    /* by role: index of the member being recovered, or -1 */
};

/* ---- finding the array ---- */

static void rb_set_free(struct rb_set *s)
{
	for (unsigned i = 0; s->m && i < s->n; i++) {
		vol_close(s->m[i].vol);
		free(s->m[i].sb);
	}
	free(s->m);
	free(s->insync);
	free(s->rec);
	memset(s, 0, sizeof(*s));
}

/* Take the members opened (vols, their superblocks sbs, fresh the index
 * of the freshest) and work out who holds which role, refusing anything
 * we would not update correctly.  s owns them from here on. */
static int rb_load(char **specs, unsigned n, struct vol **vols, struct md_super **sbs,
                   unsigned fresh, struct rb_set *s)
{
	struct md_super *f;
	int r;

	memset(s, 0, sizeof(*s));
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
		s->m[i] = (struct rb_member){.spec = specs[i], .vol = vols[i], .sb = sbs[i]};
	f = s->m[s->fresh].sb;
	md_super_array_name(f, s->name, sizeof(s->name));
	s->level = f->level;
	s->raid_disks = f->raid_disks;
	s->size = f->size;
	s->events = f->events;
	s->max_dev = f->max_dev;
	memcpy(s->roles, f->roles, sizeof(s->roles));
	if (md_sb090_is(f))
		return md_sb090_refuse(f, s->name, "adding or rebuilding a member");
	if (md_journal_refuse(f, s->name, "adding or rebuilding a member") < 0)
		return -ENOTSUP;
	if (!md_level_redundant(f->level))
		return err_set(-EINVAL, "%s is %s: %s", s->name, md_level_name(f->level),
		               f->level == 0 || f->level == MD_LEVEL_LINEAR
		                   ? "it has no redundancy, so a lost member cannot be rebuilt"
		                   : "uraid does not rebuild that level");
	if (f->raid_disks > 1024 || f->size == 0)
		return err_set(-EINVAL,
		               "%s: %u devices of %llu sectors is not an array uraid "
		               "rebuilds",
		               s->name, f->raid_disks, (unsigned long long)f->size);
	s->insync = malloc(f->raid_disks * sizeof(*s->insync));
	s->rec = malloc(f->raid_disks * sizeof(*s->rec));
	if (!s->insync || !s->rec)
		return -ENOMEM;
	for (unsigned r2 = 0; r2 < f->raid_disks; r2++)
		s->insync[r2] = s->rec[r2] = -1;
	for (unsigned i = 0; i < n; i++) {
		struct rb_member *mm = &s->m[i];
		struct md_super *sb = mm->sb;
		unsigned slot = sb->dev_number;

		mm->role =
		    slot < s->max_dev && slot < MD_SB_MAX_DEV ? s->roles[slot] : MD_ROLE_SPARE;
		r = md_super_same_geometry(sb, mm->spec, f, s->m[s->fresh].spec, s->name);
		if (r < 0)
			return r;
		if (mm->role == MD_ROLE_SPARE)
			continue; /* a spare's events do not matter (md's rule) */
		if (mm->role == MD_ROLE_FAULTY)
			return err_set(-EINVAL,
			               "%s: %s is marked faulty in the array; to use it "
			               "again, add it as a new member (`uraid add --force`)",
			               s->name, mm->spec);
		if (mm->role >= s->raid_disks)
			return err_set(-EINVAL, "%s: %s has role 0x%x, which uraid does not handle",
			               s->name, mm->spec, mm->role);
		if (sb->events + 1 < s->events)
			return err_set(-EINVAL,
			               "%s: %s is stale (events %llu, newest %llu): it "
			               "missed writes; add it as a new member (`uraid add "
			               "--force`) or leave it out",
			               s->name, mm->spec, (unsigned long long)sb->events,
			               (unsigned long long)s->events);
		int *holder = (sb->feature_map & MD_FEATURE_RECOVERY_OFFSET) ? s->rec : s->insync;
		if (s->insync[mm->role] >= 0 || s->rec[mm->role] >= 0)
			return err_set(
			    -EINVAL, "%s: %s and %s both claim role %u", s->name, mm->spec,
			    s->m[s->insync[mm->role] >= 0 ? s->insync[mm->role] : s->rec[mm->role]]
			        .spec,
			    mm->role);
		holder[mm->role] = (int)i;
		mm->target = holder == s->rec;
	}
	return 0;
}

/* Roles that no given member holds, in sync or being recovered. */
static unsigned rb_missing(const struct rb_set *s, unsigned *first)
{
	unsigned k = 0;

	for (unsigned r = s->raid_disks; r-- > 0;)
		if (s->insync[r] < 0 && s->rec[r] < 0) {
			k++;
			*first = r;
		}
	return k;
}

/* A slot recording an active role that no given member holds: the device
 * is gone (replaced, or not given); record it as faulty, as md would on
 * its first update, so that it is seen as stale if it comes back. */
static void rb_mark_gone_slots(struct rb_set *s, bool warn)
{
	for (unsigned slot = 0; slot < s->max_dev && slot < MD_SB_MAX_DEV; slot++) {
		unsigned role = s->roles[slot];
		bool given = false;

		if (role >= s->raid_disks)
			continue;
		for (unsigned i = 0; i < s->n; i++)
			given |= s->m[i].sb->dev_number == slot && s->m[i].role == role;
		if (given)
			continue;
		if (warn)
			log_warn("%s: role %u (slot %u) is not among the members given: it is "
			         "recorded as faulty",
			         s->name, role, slot);
		s->roles[slot] = MD_ROLE_FAULTY;
	}
}

static void rb_failed(void *ctx, unsigned role, int err)
{
	struct rb_set *s = ctx;

	(void)err;
	if (role < s->raid_disks && s->insync[role] >= 0)
		atomic_store(&s->m[s->insync[role]].failed, true);
}

/* The array as its in-sync members make it (the rest missing): what the
 * data is read, or rebuilt, from.  Refuses when too much is gone. */
static int rb_open_array(struct rb_set *s, struct vol **out)
{
	struct md_super *f = s->m[s->fresh].sb;
	struct raid_geom g = {.level = f->level,
	                      .layout = f->layout,
	                      .chunk = f->chunk * 512,
	                      .raid_disks = f->raid_disks,
	                      .dev_size = f->size * 512};
	struct raid_events ev = {rb_failed, s};
	struct vol **slices = calloc(s->raid_disks, sizeof(*slices));
	unsigned have = 0;
	int r = 0;

	if (!slices)
		return -ENOMEM;
	for (unsigned role = 0; role < s->raid_disks && r == 0; role++) {
		struct rb_member *mm;
		if (s->insync[role] < 0)
			continue;
		mm = &s->m[s->insync[role]];
		have++;
		r = slice_open(mm->vol, mm->sb->data_offset * 512, mm->sb->data_size * 512, false,
		               mm->spec, &slices[role]);
	}
	if (r == 0) {
		unsigned parity = md_level_parity(f->level);
		if (parity && s->raid_disks - have > parity)
			r = err_set(-ENODEV,
			            "%s: %s can rebuild at most %u member%s, but %u of %u "
			            "roles are missing or being rebuilt",
			            s->name, md_level_name(f->level), parity, parity > 1 ? "s" : "",
			            s->raid_disks - have, s->raid_disks);
		else if (!have)
			r = err_set(-ENODEV, "%s: no member is in sync: nothing to rebuild from",
			            s->name);
	}
	if (r == 0) {
		r = raid_open(&g, slices, &ev, s->name, out);
		if (r == 0) {
			free(slices); /* the array owns them now */
			return 0;
		}
		r = err_set(r, "%s: the members in sync cannot give back the data (%s)", s->name,
		            err_detail(r));
	}
	for (unsigned role = 0; role < s->raid_disks; role++)
		vol_close(slices[role]);
	free(slices);
	return r;
}

/* Write the set's events and role table into every given member (but
 * those that failed), targets first: md's order for a new member. */
static int rb_sync_all(struct rb_set *s)
{
	int r = 0;

	for (int pass = 0; pass < 2 && r == 0; pass++) {
		for (unsigned i = 0; i < s->n && r == 0; i++) {
			struct rb_member *mm = &s->m[i];
			if (mm->target != (pass == 0) || atomic_load(&mm->failed))
				continue;
			md_manage_set_state(mm->sb, s->events, s->max_dev, s->roles);
			err_clear();
			r = md_super_write(mm->vol, mm->sb);
		}
	}
	return r;
}

/* NEW gets nsb, the freshest's superblock with NEW's own device fields,
 * in slot slot of s's role table with role (a spare's when role is
 * MD_ROLE_SPARE), as recovering or as a replacement; then every member
 * records it (events + 1).  The writes of md_add and md_replace_begin. */
static int rb_write_new(struct rb_set *s, struct vol *nv, const char *new_spec,
                        const struct md_add_opts *o, unsigned slot, unsigned role, bool repl,
                        uint64_t end_sb)
{
	struct md_super *f = s->m[s->fresh].sb;
	struct md_super *nsb = malloc(sizeof(*nsb));
	int r;

	if (!nsb)
		return -ENOMEM;
	rb_mark_gone_slots(s, true);
	if (slot >= s->max_dev) {
		for (uint32_t i = s->max_dev; i < slot; i++)
			s->roles[i] = MD_ROLE_SPARE;
		s->max_dev = slot + 1;
	}
	s->roles[slot] = (uint16_t)role;
	s->events++;
	r = md_manage_new_super(nv, new_spec, f, s->m[s->fresh].vol, slot, end_sb, nsb);
	if (r < 0)
		goto out;
	nsb->devflags = o->devflags;
	if (role != MD_ROLE_SPARE)
		md_manage_mark_recovering(nsb, s->roles, role);
	if (repl)
		nsb->feature_map |= MD_FEATURE_REPLACEMENT;
	md_manage_set_state(nsb, s->events, s->max_dev, s->roles);
	r = md_super_write(nv, nsb);
	if (r == 0)
		r = rb_sync_all(s);
out:
	free(nsb);
	return r;
}

/* The checks of a new member nv for s (md_manage.h's, one rule) and the
 * slot it takes: *slot, *end_sb.  Nothing written. */
static int rb_check_new(struct rb_set *s, struct vol *nv, const char *new_spec, bool force,
                        unsigned *slot, uint64_t *end_sb)
{
	struct md_super *f = s->m[s->fresh].sb;
	uint32_t *used;
	int r = md_manage_probe_new(nv, new_spec, f->set_uuid, s->name, force, end_sb);

	if (r == 0)
		r = md_manage_check_size(nv, new_spec, f, s->name);
	if (r < 0)
		return r;
	/* A slot of our own, that no member given uses. */
	used = malloc(s->n * sizeof(*used));
	if (!used)
		return -ENOMEM;
	for (unsigned i = 0; i < s->n; i++)
		used[i] = s->m[i].sb->dev_number;
	r = md_manage_pick_slot(s->roles, s->max_dev, s->raid_disks, used, s->n, f, s->name);
	free(used);
	if (r < 0)
		return r;
	*slot = (unsigned)r;
	return 0;
}

/* NEW opened and checked for s (rb_check_new), and the array shown to
 * open from the members given, the step before add and replace write:
 * *nv (the caller closes it), *slot, *end_sb.  Nothing written. */
static int rb_open_new(struct rb_set *s, const char *new_spec, bool force, struct vol **nv,
                       unsigned *slot, uint64_t *end_sb)
{
	struct vol *arr = NULL;
	int r;

	err_clear();
	r = member_open(new_spec, 0, nv);
	if (r < 0)
		return r;
	r = rb_check_new(s, *nv, new_spec, force, slot, end_sb);
	if (r < 0)
		return r;
	r = rb_open_array(s, &arr);
	vol_close(arr);
	return r;
}

int md_replace_begin(char **specs, unsigned n, struct vol **vols, struct md_super **sbs,
                     unsigned fresh, const char *old_spec, const char *new_spec,
                     const struct md_add_opts *o)
{
	struct rb_set s = {0};
	struct vol *nv = NULL;
	struct rb_member *old = NULL;
	uint64_t end_sb;
	unsigned slot;
	int r;

	r = rb_load(specs, n, vols, sbs, fresh, &s);
	if (r < 0)
		goto out;
	for (unsigned i = 0; i < s.n && !old; i++)
		if (!strcmp(s.m[i].spec, old_spec))
			old = &s.m[i];
	if (!old) {
		r = err_set(-EINVAL, "%s: %s is not among the members given", s.name, old_spec);
		goto out;
	}
	/* mdadm --replace's rule: only an in-sync member is replaced. */
	if (old->role >= s.raid_disks || old->target || old->sb->events < s.events) {
		r = err_set(-EINVAL,
		            "%s: %s is not an in-sync member (%s): only an active, in-sync "
		            "member can be replaced",
		            s.name, old_spec,
		            old->role == MD_ROLE_SPARE ? "a spare"
		            : old->target              ? "being rebuilt"
		                                       : "stale");
		goto out;
	}
	/* The copy reads OLD, but the array must run without it too. */
	r = rb_open_new(&s, new_spec, o->force, &nv, &slot, &end_sb);
	if (r < 0)
		goto out;
	r = rb_write_new(&s, nv, new_spec, o, slot, old->role, true, end_sb);
	if (r < 0)
		goto out;
	md_say(o->out, "%s replaces %s in role %u of %s (slot %u), to be built from it", new_spec,
	       old_spec, old->role, s.name, slot);
out:
	vol_close(nv);
	rb_set_free(&s);
	return r;
}

int md_add(char **specs, unsigned n, struct vol **vols, struct md_super **sbs, unsigned fresh,
           const char *new_spec, const struct md_add_opts *o, unsigned *role_out)
{
	struct rb_set s = {0};
	struct vol *nv = NULL;
	uint64_t end_sb;
	unsigned role = MD_ROLE_SPARE, first = 0, slot;
	int r;

	*role_out = MD_ROLE_SPARE;
	r = rb_load(specs, n, vols, sbs, fresh, &s);
	if (r < 0)
		goto out;
	/* The array must give its data back without the roles nobody holds in
	 * sync; else a rebuild could not happen. */
	r = rb_open_new(&s, new_spec, o->force, &nv, &slot, &end_sb);
	if (r < 0)
		goto out;
	if (rb_missing(&s, &first) && !o->spare)
		role = first;
	/* Checked: from here on we write.  NEW's superblock is the freshest's
	 * with NEW's own device fields. */
	r = rb_write_new(&s, nv, new_spec, o, slot, role, false, end_sb);
	if (r < 0)
		goto out;
	if (role == MD_ROLE_SPARE)
		md_say(o->out, "%s is a spare of %s (slot %u)%s", new_spec, s.name, slot,
		       rb_missing(&s, &first) ? "" : ": the array is whole");
	else
		md_say(o->out, "%s takes role %u of %s (slot %u), to be rebuilt", new_spec, role,
		       s.name, slot);
	*role_out = role;
	r = 0;
out:
	vol_close(nv);
	rb_set_free(&s);
	return r;
}

/* The rebuild's side of the recovery driver (md_recover.h): progress
 * for the caller to show, a stop when it sets o->stop. */
struct rb_progress {
	struct rb_set *s;
	const struct md_rebuild_opts *o;
	struct md_recover rc;
	uint64_t t0;
};

/* Make [0, done) durable on every target and say so in its superblock. */
static int rb_checkpoint(void *ctx, uint64_t done)
{
	struct rb_progress *p = ctx;
	struct rb_set *s = p->s;
	int r = 0;

	for (unsigned i = 0; i < s->n && r == 0; i++) {
		struct rb_member *mm = &s->m[i];
		if (mm->target)
			r = md_manage_checkpoint(mm->vol, mm->sb, done);
	}
	return r;
}

static void rb_show(struct rb_progress *p, uint64_t done, bool last)
{
	const struct md_rebuild_out *out = p->o->out;

	if (out && out->progress)
		out->progress(out->ctx, p->s->name, done, p->rc.from, p->rc.to, last);
}

static void rb_on_progress(void *ctx, uint64_t done)
{
	rb_show(ctx, done, false);
}

static bool rb_stopping(void *ctx)
{
	struct rb_progress *p = ctx;

	return p->o->stop && *p->o->stop != 0;
}

static const struct md_recover_ops rb_ops = {
    .progress = rb_on_progress,
    .stopping = rb_stopping,
    .checkpoint = rb_checkpoint,
};

int md_rebuild(char **specs, unsigned n, struct vol **vols, struct md_super **sbs, unsigned fresh,
               const struct md_rebuild_opts *o)
{
	struct rb_set s = {0};
	struct rb_progress p = {0};
	struct vol *arr = NULL;
	struct vol **tslice = NULL;
	struct md_super **tsb = NULL;
	unsigned first = 0, ntargets = 0, nspare = 0;
	bool promoted = false;
	char list[256] = "";
	size_t llen = 0;
	int r;

	r = rb_load(specs, n, vols, sbs, fresh, &s);
	if (r < 0)
		goto fail;
	struct md_super *f = s.m[s.fresh].sb;
	/* Spares take the missing roles. */
	for (unsigned i = 0; i < s.n; i++) {
		struct rb_member *mm = &s.m[i];
		if (mm->role != MD_ROLE_SPARE)
			continue;
		nspare++;
		if (!rb_missing(&s, &first))
			continue;
		r = md_manage_promote_spare(mm->sb, s.roles, first, s.size, s.name, mm->spec);
		if (r < 0)
			goto fail;
		mm->role = first;
		mm->target = true;
		s.rec[first] = (int)i;
		promoted = true;
		nspare--;
	}
	/* A role the superblocks still give to a member not given, and no
	 * spare took it: the user left one out, not a loss to repair here. */
	for (unsigned slot = 0; slot < s.max_dev && slot < MD_SB_MAX_DEV; slot++) {
		unsigned role = s.roles[slot];
		if (role < s.raid_disks && s.insync[role] < 0 && s.rec[role] < 0) {
			r = err_set(-ENODEV,
			            "%s: role %u (slot %u) is recorded as held by a "
			            "member that is not given; give every member (or `uraid "
			            "add` a new one in its place)",
			            s.name, role, slot);
			goto fail;
		}
	}
	for (unsigned i = 0; i < s.n; i++) {
		struct rb_member *mm = &s.m[i];
		if (!mm->target)
			continue;
		ntargets++;
		if (llen < sizeof(list) - 8)
			llen += (size_t)snprintf(list + llen, sizeof(list) - llen, "%s%s (role %u)",
			                         llen ? ", " : "", mm->spec, mm->role);
	}
	if (!ntargets) {
		if (rb_missing(&s, &first)) {
			r = err_set(-ENODEV,
			            "%s: role %u is missing and no spare or new member is "
			            "given; add one with `uraid add NEW MEMBER...`",
			            s.name, first);
			goto fail;
		}
		md_say(o->out, "%s: nothing to rebuild: all %u roles are in sync%s", s.name,
		       s.raid_disks, nspare ? ", spares stand by" : "");
		r = 0;
		goto out;
	}
	if (md_dirty_degraded(f, ntargets) && !o->force) {
		r = err_set(-EUCLEAN,
		            "%s was not shut down cleanly: its parity may be stale, and a "
		            "member rebuilt from it wrong (md refuses such a dirty degraded "
		            "array too); --force rebuilds anyway",
		            s.name);
		goto fail;
	}
	r = rb_open_array(&s, &arr);
	if (r < 0)
		goto fail;
	tslice = calloc(s.raid_disks, sizeof(*tslice));
	tsb = calloc(s.raid_disks, sizeof(*tsb));
	if (!tslice || !tsb) {
		r = -ENOMEM;
		goto fail;
	}
	for (unsigned role = 0; role < s.raid_disks; role++) {
		struct rb_member *mm;
		if (s.rec[role] < 0)
			continue;
		mm = &s.m[s.rec[role]];
		if (mm->sb->recovery_offset > s.size)
			mm->sb->recovery_offset = s.size;
		tsb[role] = mm->sb;
		r = slice_open(mm->vol, mm->sb->data_offset * 512, mm->sb->data_size * 512, false,
		               mm->spec, &tslice[role]);
		if (r < 0)
			goto fail;
	}
	p.s = &s;
	p.o = o;
	p.rc = (struct md_recover){.raid = arr, .targets = tslice, .ops = &rb_ops, .ctx = &p};
	md_recover_plan(&p.rc, tsb, s.raid_disks, s.size);

	/* Checked: from here on we write. */
	if (promoted) {
		rb_mark_gone_slots(&s, true);
		s.events++;
		r = rb_sync_all(&s);
		if (r < 0)
			goto fail;
	}
	if (o->out && o->out->begin)
		o->out->begin(o->out->ctx, s.name, list, p.rc.from, p.rc.to);
	p.t0 = clock_now_ns();
	r = md_recover_run(&p.rc);
	rb_show(&p, r == 0 ? p.rc.to : p.rc.saved, true);
	if (r == -EINTR && p.rc.checkpoint_r < 0) {
		r = p.rc.checkpoint_r;
		goto fail;
	}
	if (r == -EINTR) {
		md_say(o->out,
		       "%s: interrupted (signal %d) with %.1f%% rebuilt; recovery offset "
		       "saved: `uraid rebuild` (or the kernel) continues from there",
		       s.name, o->stop ? (int)*o->stop : 0,
		       100.0 * (double)p.rc.saved / (double)p.rc.to);
		goto out;
	}
	if (r < 0) {
		char detail[512];
		snprintf(detail, sizeof(detail), "%s", err_detail(r));
		if (p.rc.saved > p.rc.from)
			log_warn("%s: %.1f%% was rebuilt and saved", s.name,
			         100.0 * (double)p.rc.saved / (double)p.rc.to);
		r = err_set(r, "%s", detail);
		goto fail;
	}
	/* Done: the data is durable, then the targets are in sync. */
	for (unsigned i = 0; i < s.n && r == 0; i++) {
		struct rb_member *mm = &s.m[i];
		if (!mm->target)
			continue;
		r = vol_flush(mm->vol);
		md_manage_recovery_done(mm->sb);
	}
	for (unsigned i = 0; i < s.n; i++) {
		struct rb_member *mm = &s.m[i];
		if (atomic_load(&mm->failed)) {
			log_warn("%s: %s failed during the rebuild: recorded as faulty", s.name,
			         mm->spec);
			s.roles[mm->sb->dev_number] = MD_ROLE_FAULTY;
		}
	}
	rb_mark_gone_slots(&s, false);
	s.events++;
	if (r == 0)
		r = rb_sync_all(&s);
	if (r < 0)
		goto fail;
	{
		double secs = (double)(clock_now_ns() - p.t0) / 1e9;
		char a[32];
		format_size((p.rc.to - p.rc.from) * ntargets, a, sizeof(a));
		unsigned gone = rb_missing(&s, &first);
		char rest[96];
		if (gone)
			snprintf(rest, sizeof(rest), "%u role%s still missing (role %u first)",
			         gone, gone > 1 ? "s" : "", first);
		else
			snprintf(rest, sizeof(rest), "the array is whole%s",
			         md_super_clean(f) ? " and clean" : " (still marked for resync)");
		md_say(o->out, "%s: rebuilt %s: %s in %.1f s (%.1f MiB/s); %s", s.name, list, a,
		       secs,
		       secs > 0 ? (double)(p.rc.to - p.rc.from) * ntargets / 1048576.0 / secs : 0.0,
		       rest);
	}
	r = 0;
	goto out;
fail:
out:
	vol_close(arr);
	for (unsigned role = 0; tslice && role < s.raid_disks; role++)
		vol_close(tslice[role]);
	free(tslice);
	free(tsb);
	rb_set_free(&s);
	return r;
}
