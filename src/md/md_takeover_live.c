/* md_takeover_live.c — md's level changes that move no data (md_takeover.h's
 * table) on a running array (`uraid grow --level L CTL`, mdadm --grow
 * --level on an active array), and a RAID0 grow while serving (`uraid grow
 * -n N --add NEW... CTL`: through a raid4 with its parity missing, as
 * md_grow.c's offline path goes).
 *
 * Why the export has no gap: every layer above (a slice, LUKS, the NBD
 * export) holds the md vol (md_vol.c), which stays; only the RAID vol
 * under it (a->raid) is replaced.  With new requests held at the array's
 * gate and none inside (md_io_hold), and the old RAID vol flushed, the new
 * level's RAID vol is opened over the members' data areas in their new
 * roles, the superblocks are written as the kernel's takeover writes them
 * (one md_array_sync round, events + 1), the vols are swapped and the gate
 * opens: a client waits for one superblock round, and gets no error.  Every
 * row keeps each array byte where it was, so the size served stays.
 *
 * A role the new level adds (parity, Q) is missing at first; a NEW given is
 * then added as md_array_add() adds a spare, and the recovery thread
 * rebuilds it into that role while serving (a spare standing by takes it
 * the same way).  A change mdadm joins to a reshape runs the reshape
 * online (md_array_restripe()): before the takeover (6 -> 5 from a layout
 * rotating Q, the takeover when the reshape ends) or after it (1 -> 5 to
 * more devices). */
#include "md_internal.h"
#include "md_manage.h"
#include "md_takeover.h"

#include "core/log.h"
#include "disc/slice.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Why the running array a cannot change its level now, or 0.  With
 * a->lock held. */
static int live_busy(struct md_array *a)
{
	const char *why = NULL;

	if (a->reshaping || a->rs_then)
		why = "a reshape is under way";
	else if (a->rec.running || a->readd.running)
		why = "a rebuild is running";
	else if (a->scrub.running || a->scrub.req != MD_CHECK_STOP)
		why = "a check is running (`uraid check --stop` it first)";
	else if (a->ppl || a->jn || a->jc || a->journal.vol)
		why = "it has a PPL or a journal, which the new level would not keep";
	else if (a->bm.map)
		why = "it has a write-intent bitmap, laid out for the old level, which uraid does "
		      "not lay out again while serving: remove it first (`uraid grow "
		      "--bitmap=none CTL`), add it again after";
	for (unsigned r = 0; r < a->n && !why; r++)
		if (a->m[r].vol && (a->m[r].failed || a->m[r].recovering))
			why = "a member is faulty or being rebuilt: remove or rebuild it first";
	return why ? err_set(-EBUSY, "%s: cannot change the level while serving: %s", a->vol.name,
	                     why)
	           : 0;
}

/* The takeover's input from the running array a (a->lock held): f, the
 * superblock of its first member, with the array's state (events, role
 * table) in it; which slots hold a member in sync; the data sizes. */
static int live_in(struct md_array *a, struct md_super *f, bool *in_sync, int level,
                   const char *layout, unsigned raid_disks, struct md_takeover_in *in)
{
	const struct md_super *sb = NULL;

	*in = (struct md_takeover_in){.in_sync = in_sync,
	                              .min_data_size = UINT64_MAX,
	                              .level = level,
	                              .raid_disks = raid_disks,
	                              .layout = layout,
	                              .array = a->vol.name};
	for (unsigned r = 0; r < a->n; r++) {
		const struct md_member *mm = &a->m[r];
		if (!mm->vol || !mm->sb || mm->sb->dev_number >= MD_SB_MAX_DEV)
			continue;
		in_sync[mm->sb->dev_number] = true;
		sb = sb ? sb : mm->sb;
		if (mm->sb->data_size < in->min_data_size)
			in->min_data_size = mm->sb->data_size;
		if (mm->sb->data_size > in->max_data_size)
			in->max_data_size = mm->sb->data_size;
	}
	if (!sb)
		return err_set(-ENODEV, "%s: no member in sync", a->vol.name);
	*f = *sb;
	f->events = a->events;
	f->max_dev = a->max_dev;
	memcpy(f->roles, a->roles, sizeof(f->roles));
	in->sb = f;
	return 0;
}

/* What the swap changes in a, kept to put back when no superblock took
 * the new state. */
struct live_undo {
	struct md_member *m;
	unsigned n, nspare;
	int level;
	uint64_t size;
	uint32_t max_dev;
	uint16_t roles[MD_SB_MAX_DEV];
	struct md_super *sbs; /* the members' then the spares' superblocks */
};

/* The new RAID vol of p over the members of m (by the new role, n of
 * them): their data areas cut out again (a raid0 at the raid5's size, as
 * the kernel's raid0_takeover_raid45 sizes its zone until the next
 * start), areas[] the slices it took.  0 or -errno with err_set(). */
static int live_raid_open(struct md_array *a, struct md_member *m, const struct md_takeover_plan *p,
                          struct vol **areas, struct vol **out)
{
	struct raid_events ev = {.member_failed = md_member_failed, .ctx = a};
	struct raid_geom g = {.level = p->level,
	                      .layout = p->level == 0 ? 0 : p->layout,
	                      .chunk = p->level == 1 ? 0 : p->chunk * 512,
	                      .raid_disks = p->raid_disks,
	                      .dev_size = md_level_redundant(p->level) ? p->size * 512 : 0};
	int r = 0;

	for (unsigned role = 0; role < p->raid_disks && r == 0; role++) {
		struct md_member *mm = &m[role];
		if (!mm->vol)
			continue;
		uint64_t size = mm->sb->data_size;
		if (p->level == 0 && p->size && p->size < size)
			size = p->size;
		r = slice_open(mm->vol, mm->sb->data_offset * 512, size * 512, false, mm->vol->name,
		               &areas[role]);
		if (r < 0)
			r = err_set(r, "%s: %s: cannot cut out the data area", a->vol.name,
			            mm->vol->name);
	}
	if (r == 0)
		r = raid_open(&g, areas, &ev, a->vol.name, out);
	if (r < 0) {
		for (unsigned role = 0; role < p->raid_disks; role++) {
			vol_close(areas[role]);
			areas[role] = NULL;
		}
		return r;
	}
	for (unsigned role = 0; p->level == 1 && role < p->raid_disks; role++)
		if (m[role].sb && (m[role].sb->devflags & MD_DEVFLAG_WRITE_MOSTLY))
			raid_set_write_mostly(*out, role, true);
	if ((*out)->size < a->vol.size) {
		r = err_set(-EINVAL,
		            "%s: as %s it would hold %llu bytes, fewer than the %llu served",
		            a->vol.name, md_level_name(p->level), (unsigned long long)(*out)->size,
		            (unsigned long long)a->vol.size);
		vol_close(*out);
		*out = NULL;
	}
	return r;
}

/* Plan p carried out with the gate held, the old RAID vol flushed and
 * a->lock held: the new RAID vol, the superblocks, the swap.  *old gets
 * the old RAID vol and *gone (*ngone entries) the members that leave the
 * array, for the caller to close once it dropped the lock.  0 or -errno with err_set() and a as
 * it was (the superblocks too, but where a write failed part-way). */
static int live_swap(struct md_array *a, const struct md_takeover_plan *p, struct vol **old,
                     struct md_member **gone_out, unsigned *ngone_out)
{
	struct md_member *m = calloc(p->raid_disks, sizeof(*m)), *ns = NULL;
	struct vol **areas = calloc(p->raid_disks, sizeof(*areas)), *nr = NULL;
	struct md_member *gone = calloc(a->n + 1, sizeof(*gone));
	struct md_member *spares = calloc(a->n + 1, sizeof(*spares));
	struct md_super *geom = malloc(sizeof(*geom));
	struct live_undo u = {.m = a->m,
	                      .n = a->n,
	                      .nspare = a->nspare,
	                      .level = a->level,
	                      .size = a->size,
	                      .max_dev = a->max_dev};
	unsigned ngone = 0, nsp = 0;
	int r = m && areas && gone && spares && geom ? 0 : -ENOMEM;

	memcpy(u.roles, a->roles, sizeof(u.roles));
	u.sbs = r == 0 ? calloc(a->n + a->nspare + 1, sizeof(*u.sbs)) : NULL;
	if (r == 0 && !u.sbs)
		r = -ENOMEM;
	/* Each member to its new role, a spare, or out. */
	for (unsigned role = 0; role < a->n && r == 0; role++) {
		struct md_member *mm = &a->m[role];
		if (!mm->vol)
			continue;
		unsigned slot = mm->sb->dev_number;
		unsigned nrole = slot < MD_SB_MAX_DEV ? p->roles[slot] : MD_ROLE_SPARE;
		u.sbs[role] = *mm->sb;
		if (slot < MD_SB_MAX_DEV && p->dropped[slot])
			gone[ngone++] = *mm;
		else if (nrole < p->raid_disks)
			m[nrole] = (struct md_member){.vol = mm->vol, .sb = mm->sb};
		else
			spares[nsp++] = (struct md_member){.vol = mm->vol, .sb = mm->sb};
	}
	for (unsigned i = 0; i < a->nspare && r == 0; i++)
		u.sbs[a->n + i] = *a->spare[i].sb;
	if (r == 0 && a->nspare + nsp > a->spare_cap) {
		if ((ns = realloc(a->spare, (a->nspare + nsp) * sizeof(*ns))) == NULL)
			r = -ENOMEM;
		else {
			a->spare = ns;
			a->spare_cap = a->nspare + nsp;
		}
	}
	if (r == 0)
		r = live_raid_open(a, m, p, areas, &nr);
	if (r < 0)
		goto out;

	const struct md_super *f = NULL;
	for (unsigned role = 0; role < u.n && !f; role++)
		f = u.m[role].sb;
	md_takeover_geometry(p, f, geom); /* live_plan found a member */
	for (unsigned role = 0; role < p->raid_disks; role++)
		if (m[role].sb)
			md_manage_set_geometry(m[role].sb, geom);
	for (unsigned i = 0; i < nsp; i++) {
		md_manage_set_geometry(spares[i].sb, geom);
		spares[i].sb->feature_map &= ~MD_FEATURE_RECOVERY_OFFSET; /* a spare now */
		spares[i].sb->recovery_offset = 0;
		a->spare[a->nspare++] = spares[i];
	}
	for (unsigned i = 0; i < u.nspare; i++)
		md_manage_set_geometry(a->spare[i].sb, geom);
	a->m = m;
	a->n = p->raid_disks;
	a->level = p->level;
	a->size = p->size;
	memcpy(a->roles, p->roles, sizeof(a->roles));
	if (p->clean)
		a->unclean = false;
	r = md_array_sync(a, atomic_load(&a->active));
	if (r < 0) {
		/* No member took it: the old state stays, on disk and here. */
		for (unsigned role = 0; role < u.n; role++)
			if (u.m[role].vol)
				*u.m[role].sb = u.sbs[role];
		for (unsigned i = 0; i < u.nspare; i++)
			*a->spare[i].sb = u.sbs[u.n + i];
		a->m = u.m;
		a->n = u.n;
		a->nspare = u.nspare;
		a->level = u.level;
		a->size = u.size;
		a->max_dev = u.max_dev;
		memcpy(a->roles, u.roles, sizeof(a->roles));
		r = err_set(r, "%s: no superblock took the new level: %s", a->vol.name,
		            err_detail(r));
		vol_close(nr);
		goto out;
	}
	*old = a->raid; /* closed by the caller, the lock dropped */
	a->raid = nr;
	for (unsigned role = 0; role < a->n; role++)
		a->m[role].data = areas[role];
	*gone_out = gone; /* out of the array: the caller closes them too */
	*ngone_out = ngone;
	gone = NULL;
	free(u.m);
	m = NULL;
	a->rec.enabled = !a->readonly && !a->no_recovery && md_level_redundant(a->level);
	a->rec.dead = false;
	a->rec.to = a->size * 512;
out:
	free(m); /* the table alone (NULL once a's); the members stay a's */
	free(areas);
	free(gone);
	free(spares);
	free(geom);
	free(u.sbs);
	return r;
}

/* Take the running array a over as plan p says (made by live_plan), with
 * the requests held at the gate meanwhile.  0 or -errno with err_set(). */
static int live_takeover(struct md_array *a, const struct md_takeover_plan *p, uint64_t events)
{
	const char *from = md_level_name(a->level);
	struct md_member *gone = NULL;
	struct vol *old = NULL;
	unsigned ngone = 0;
	bool was_degraded;
	char fl[16];
	int r;

	snprintf(fl, sizeof(fl), "%s", from ? from : "?");
	md_rec_stop(a); /* nothing of the old RAID vol may be in use */
	atomic_store(&a->rec.stop, false);
	r = md_io_hold(a);
	if (r < 0)
		return err_set(r, "%s: requests in flight did not drain: the level is unchanged",
		               a->vol.name);
	/* What the clients wrote on the members before the new state is (a
	 * member failing meanwhile takes a->lock to record it: not held). */
	if ((r = vol_flush(a->raid)) < 0) {
		md_io_release(a);
		return err_set(r,
		               "%s: flushing before the level change: %s; the level is unchanged",
		               a->vol.name, err_detail(r));
	}
	pthread_mutex_lock(&a->lock);
	was_degraded = md_degraded(a);
	r = a->events != events
	        ? err_set(-EBUSY, "%s: its state changed meanwhile; try again", a->vol.name)
	        : 0;
	if (r == 0)
		r = live_swap(a, p, &old, &gone, &ngone);
	pthread_mutex_unlock(&a->lock);
	vol_close(old); /* its slices; the members are a's */
	for (unsigned i = 0; i < ngone; i++) {
		vol_close(gone[i].vol);
		free(gone[i].sb);
	}
	free(gone);
	md_io_release(a);
	pthread_mutex_lock(&a->lock);
	if (a->rec.enabled) {
		int e = md_rec_wake(a); /* a spare may take the new role now */
		if (e != 0)
			log_warn("%s: cannot start the recovery thread: %s", a->vol.name,
			         strerror(e));
	}
	if (r == 0 && !was_degraded && md_degraded(a))
		md_ev(a, "DegradedArray", NULL);
	pthread_mutex_unlock(&a->lock);
	if (r == 0)
		log_info("%s: %s -> %s while serving (%u devices, events %llu)", a->vol.name, fl,
		         md_level_name(a->level), a->n, (unsigned long long)a->events);
	return r;
}

/* The plan for taking the running a over to level (md_takeover_plan on
 * its state), and the events it was made at.  With a->lock held. */
static int live_plan(struct md_array *a, int level, const char *layout, unsigned raid_disks,
                     struct md_takeover_plan *p, uint64_t *events)
{
	struct md_super *f = malloc(sizeof(*f));
	bool *in_sync = calloc(MD_SB_MAX_DEV, sizeof(*in_sync));
	struct md_takeover_in in;
	int r = f && in_sync ? live_busy(a) : -ENOMEM;

	if (r == 0)
		r = live_in(a, f, in_sync, level, layout, raid_disks, &in);
	if (r == 0)
		r = md_takeover_plan(&in, p);
	if (r == 0 && level == 0 && a->nspare)
		r = err_set(-EINVAL, "%s: raid0 keeps no spare: remove the spares first",
		            a->vol.name);
	*events = a->events;
	free(f);
	free(in_sync);
	return r;
}

/* After the reshape a level change waits for (a->rs_then: the raid0
 * grow's way back, 6 -> 5 from a layout rotating Q): from the reshape
 * thread, once the new geometry serves alone. */
static void takeover_after_reshape(struct md_array *a)
{
	struct md_takeover_plan p;
	uint64_t events;
	int r;

	pthread_mutex_lock(&a->lock);
	int level = a->rs_then_level;
	a->rs_then = NULL;
	r = live_plan(a, level, NULL, 0, &p, &events);
	pthread_mutex_unlock(&a->lock);
	if (r == 0)
		r = live_takeover(a, &p, events);
	if (r < 0)
		log_warn("%s: the reshape ended, the level change after it did not: %s "
		         "(`uraid grow --level %d CTL` tries again)",
		         a->vol.name, err_detail(r), level);
}

/* A NEW for a role the takeover adds: checked now as md_array_add()
 * checks it after, so that a refusal comes before the takeover. */
static int live_probe_new(struct md_array *a, struct vol *nv, bool force)
{
	struct md_super *tmpl = malloc(sizeof(*tmpl));
	uint64_t end_sb;
	int r = tmpl ? 0 : -ENOMEM;

	if (r == 0 && nv->block_min > a->vol.block_min)
		r = err_set(-EINVAL, "%s: %s has blocks of %u bytes, the array %u", a->vol.name,
		            nv->name, nv->block_min, a->vol.block_min);
	if (r == 0) {
		pthread_mutex_lock(&a->lock);
		r = -ENODEV;
		for (unsigned role = 0; role < a->n && r < 0; role++)
			if (a->m[role].vol && a->m[role].sb) {
				*tmpl = *a->m[role].sb;
				r = 0;
			}
		pthread_mutex_unlock(&a->lock);
	}
	if (r == 0)
		r = md_manage_probe_new(nv, nv->name, tmpl->set_uuid, a->vol.name, force, &end_sb);
	if (r == 0)
		r = md_manage_check_size(nv, nv->name, tmpl, a->vol.name);
	free(tmpl);
	return r;
}

int md_array_takeover(struct vol *v, int level, const char *layout, unsigned raid_disks,
                      struct vol **news, unsigned nnew, bool force)
{
	struct md_array *a = md_of(v);
	struct md_takeover_plan *p = calloc(1, sizeof(*p));
	uint64_t events;
	unsigned tnew;
	int r;

	if (!a)
		r = err_set(-EINVAL, "%s is not an md array", v->name);
	else if (a->readonly)
		r = err_set(-EROFS, "%s is served read-only: its level cannot change", a->vol.name);
	else if ((r = md_repl_busy(a, "change its level")) == 0)
		r = p ? 0 : -ENOMEM;
	if (r < 0)
		goto out;
	pthread_mutex_lock(&a->lock);
	r = live_plan(a, level, layout, raid_disks, p, &events);
	pthread_mutex_unlock(&a->lock);
	if (r < 0)
		goto out;
	unsigned end_disks = p->restripe_after ? p->after_disks : p->raid_disks;
	if (raid_disks && raid_disks != end_disks) {
		r = err_set(
		    -ENOTSUP,
		    "%s: --level with --raid-devices %u: %s makes %u devices; another count "
		    "moves data, a reshape mdadm does not join to this change",
		    a->vol.name, raid_disks, p->rule, end_disks);
		goto out;
	}
	if (p->restripe_before) {
		/* 6 -> 5 from a layout rotating Q: the reshape to its -6 form
		 * first, the takeover when it ends (takeover_after_reshape). */
		struct md_reshape_to t = {.layout_set = true, .layout = p->before_layout};
		if (nnew) {
			r = err_set(-EINVAL, "%s: %s takes no new member (--add)", a->vol.name,
			            p->rule);
			goto out;
		}
		pthread_mutex_lock(&a->lock);
		a->rs_then = takeover_after_reshape;
		a->rs_then_level = p->level;
		pthread_mutex_unlock(&a->lock);
		r = md_array_restripe(v, &t, NULL, 0, force);
		if (r < 0) {
			pthread_mutex_lock(&a->lock);
			a->rs_then = NULL;
			pthread_mutex_unlock(&a->lock);
		}
		goto out;
	}
	if (p->restripe_after && p->level == 6) {
		r = err_set(
		    -ENOTSUP,
		    "%s: raid5 -> raid6 to a layout rotating Q restripes after Q is "
		    "rebuilt, which a served array does in two steps: `uraid grow --level 6 "
		    "--add NEW CTL`, then, once rebuilt, `uraid grow --layout %s CTL`",
		    a->vol.name, layout);
		goto out;
	}
	/* To more devices (1 -> 5 -n N) the new members are the restripe's;
	 * else the first takes the role the level adds. */
	tnew = p->restripe_after ? 0 : nnew;
	if (p->new_role < 0 && tnew) {
		r = err_set(-EINVAL, "%s: %s takes no new member (--add)", a->vol.name, p->rule);
		goto out;
	}
	if (tnew > 1) {
		r = err_set(-EINVAL, "%s: %s adds one role: give one NEW", a->vol.name, p->rule);
		goto out;
	}
	if (p->new_role >= 0 && !tnew && !a->nspare && !force) {
		r = err_set(-ENODEV,
		            "%s: %s -> %s adds role %d (%s), and no new member takes it: give one "
		            "with --add NEW (mdadm: \"Need 1 spare to avoid degraded array\"), or "
		            "--force to leave it missing",
		            a->vol.name, md_level_name(a->level), md_level_name(p->level),
		            p->new_role, p->level == 6 ? "Q" : "parity");
		goto out;
	}
	if (tnew && (r = live_probe_new(a, news[0], force)) < 0)
		goto out;
	if (p->restripe_after && nnew != p->after_disks - p->raid_disks) {
		r = err_set(
		    -EINVAL, "%s: %s to %u devices takes %u new members (--add NEW), %u given",
		    a->vol.name, p->rule, p->after_disks, p->after_disks - p->raid_disks, nnew);
		goto out;
	}
	r = live_takeover(a, p, events);
	if (r < 0)
		goto out;
	if (tnew) {
		err_clear();
		r = md_array_add(v, news[0], force, 0);
		if (r < 0)
			r = err_set(r, "%s: now %s with role %d missing; adding %s: %s",
			            a->vol.name, md_level_name(p->level), p->new_role,
			            news[0]->name, err_detail(r));
	} else if (p->restripe_after) {
		struct md_reshape_to t = {
		    .raid_disks = p->after_disks, .layout_set = true, .layout = p->after_layout};
		err_clear();
		r = md_array_restripe(v, &t, news, nnew, force);
		if (r < 0)
			r = err_set(r, "%s: now %s of %u devices; the reshape to %u: %s",
			            a->vol.name, md_level_name(p->level), p->raid_disks,
			            p->after_disks, err_detail(r));
	}
out:
	free(p);
	return r;
}

int md_array_grow_raid0(struct vol *v, unsigned raid_disks, struct vol **news, unsigned nnew,
                        bool force)
{
	struct md_array *a = md_of(v);
	struct md_takeover_plan *p = calloc(1, sizeof(*p));
	struct md_super **sbs = NULL;
	char **specs = NULL;
	uint64_t events;
	unsigned old = 0;
	int r = p ? 0 : -ENOMEM;

	if (r < 0)
		goto out;
	if (!a || a->level != 0) {
		r = err_set(-EINVAL, "%s is not a served md raid0", v->name);
		goto out;
	}
	if (a->readonly) {
		r = err_set(-EROFS, "%s is served read-only: it cannot grow", a->vol.name);
		goto out;
	}
	pthread_mutex_lock(&a->lock);
	old = a->n;
	sbs = calloc(old, sizeof(*sbs));
	specs = calloc(old, sizeof(*specs));
	r = sbs && specs ? live_busy(a) : -ENOMEM;
	if (r == 0 && raid_disks <= old)
		r = err_set(-ENOTSUP,
		            "%s is raid0: md reshapes it to more devices only (through raid4), "
		            "with no other change",
		            a->vol.name);
	for (unsigned i = 0; i < old && r == 0; i++) {
		sbs[i] = a->m[i].sb;
		specs[i] = (char *)a->m[i].vol->name;
	}
	/* The offline path's checks (md_grow.c's grow_raid0): the reshape's
	 * room and members on the raid0 as it is, then the takeover's. */
	if (r == 0)
		r = md_reshape_restripe_check(sbs, old, 0, raid_disks, nnew, sbs[0]->chunk, specs);
	if (r == 0)
		r = live_plan(a, 4, NULL, 0, p, &events);
	pthread_mutex_unlock(&a->lock);
	for (unsigned i = 0; i < nnew && r == 0; i++)
		r = live_probe_new(a, news[i], force);
	if (r < 0)
		goto out;
	r = live_takeover(a, p, events); /* raid4, its parity role missing */
	if (r < 0)
		goto out;
	struct md_reshape_to t = {.raid_disks = raid_disks + 1, .parity_missing = true};
	pthread_mutex_lock(&a->lock);
	a->rs_then = takeover_after_reshape; /* back to raid0 when the reshape ends */
	a->rs_then_level = 0;
	pthread_mutex_unlock(&a->lock);
	err_clear();
	r = md_array_restripe(v, &t, news, nnew, force);
	if (r < 0) {
		/* Not started: back to the raid0 it was (the reason kept). */
		char why[512];
		int e = r;
		snprintf(why, sizeof(why), "%s", err_detail(e));
		pthread_mutex_lock(&a->lock);
		a->rs_then = NULL;
		r = live_plan(a, 0, NULL, 0, p, &events);
		pthread_mutex_unlock(&a->lock);
		if (r == 0)
			r = live_takeover(a, p, events);
		if (r < 0)
			log_warn("%s: left as a raid4 with its parity missing: %s", a->vol.name,
			         err_detail(r));
		r = err_set(e, "%s", why);
	}
out:
	free(p);
	free(sbs);
	free(specs);
	return r;
}
