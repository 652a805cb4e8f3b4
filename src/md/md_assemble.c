/* md_assemble.c — from member vols to running md arrays (see md.h).
 *
 * Members are grouped by array UUID, checked against each other, given
 * the role the freshest superblock (highest events) records for their
 * slot, and handed to raid_open() as slices of their data areas.  The
 * resulting RAID vol is wrapped in an md vol that keeps the superblocks
 * true while the array runs, as the kernel's md does:
 *   - first write after start: every live member is marked active
 *     (resync_offset 0, events + 1) before the data changes;
 *   - a member fails: its slot becomes faulty (0xfffe) in the survivors,
 *     events + 1, so it is recognised as stale if it comes back;
 *   - close: marked clean again (resync_offset = MaxSector, events + 1);
 *   - a redundant array found unclean is resynced before a writable start
 *     returns (md_resync); a read-only one stays marked unclean;
 *   - online recovery (writable starts): a member found under recovery
 *     (feature RECOVERY_OFFSET: `uraid add --no-rebuild`, an interrupted
 *     rebuild, the kernel's) takes its role as "recovering" before the
 *     array is served, and a thread rebuilds it while the array serves
 *     (raid_recover_begin, raid_rebuild); spares given with the array
 *     stand by, and take a role that is gone (failed now, or already
 *     recorded as failed), as md's hot spares do.  The rebuild saves its
 *     recovery_offset every 64 MiB and when the array closes, and on
 *     completion the member is in sync (events + 1 everywhere).  The
 *     superblock transitions are md_manage.c's.
 * Read-only arrays never write, recover nor take spares: they leave out
 * spares and members under recovery.  Assembly writes nothing, except
 * that resync of an unclean array, the recovery offsets of members a
 * rebuild is about to restart below them, and with --force the stale
 * members it takes back (md_force_stale, md_force_write: mdadm's). */
#include "md_internal.h"
#include "md_ppl.h"
#include "md_reshape.h"

#include "core/log.h"
#include "disc/slice.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MD_NEST_MAX 8 /* arrays inside arrays, at most */

/* One vol being probed: a member, or an array assembled in an earlier
 * round.  sb is set when it holds a superblock. */
struct md_cand {
	struct vol *v;
	struct md_super *sb;
	bool done; /* probed: holds no superblock */
};

/* Read c's superblock: 0 with c->sb set, or a negative errno (-ENOENT: it
 * holds none) with c->sb NULL.  The one read both assemblies make. */
static int md_cand_read(struct md_cand *c)
{
	int r;

	c->sb = malloc(sizeof(*c->sb));
	if (!c->sb)
		return -ENOMEM;
	err_clear();
	r = md_super_read(c->v, c->sb);
	if (r < 0) {
		free(c->sb);
		c->sb = NULL;
	}
	return r;
}

/* The name of the first member present, for messages ("" if none). */
static const char *md_first_present(const struct md_array *a)
{
	for (unsigned role = 0; role < a->n; role++)
		if (a->m[role].vol)
			return a->m[role].vol->name;
	return "";
}

/* Whether candidate sb left the array the freshest superblock fresh
 * describes: older, its slot no role in fresh's table (a level change
 * dropped it, raid5 -> raid0's parity or a raid10 copy, as the kernel
 * writes the table), and its own superblock of another geometry.  mdadm
 * assembles from the freshest and leaves such a device out. */
static bool md_cand_left(const struct md_super *sb, const struct md_super *fresh)
{
	unsigned slot = sb->dev_number;

	return sb->events < fresh->events &&
	       (slot >= fresh->max_dev || slot >= MD_SB_MAX_DEV ||
	        fresh->roles[slot] >= fresh->raid_disks) &&
	       md_super_same_geometry(sb, "", fresh, "", "") < 0 && (err_clear(), true);
}

/* The freshest superblock of the *k candidates of g: the highest events,
 * and of several with those, the one in the lowest role by its own
 * superblock (spares last).  That is the one mdadm bases an array on (its
 * "chosen drive", added to the kernel last so that the kernel, which keeps
 * the first of equal events in its list, bases it on that one too), and
 * the one whose roles and clean mark `--force` writes (md_force_write):
 * the others of those events may still record a forced member faulty. */
static unsigned md_fresh_index(struct md_cand **g, unsigned k)
{
	unsigned fi = 0;

	for (unsigned i = 1; i < k; i++) {
		const struct md_super *s = g[i]->sb, *f = g[fi]->sb;
		if (s->events > f->events ||
		    (s->events == f->events && md_super_role(s) < md_super_role(f)))
			fi = i;
	}
	return fi;
}

/* The freshest superblock of the *k candidates of g (md_fresh_index; a
 * copy, for the members' own may be freed), every member checked against it, and the
 * array's name; a member that missed the end of a reshape is taken in the
 * finished geometry (md_reshape_catch_up; *caught counts them); a device
 * that left the array (md_cand_left) is closed and taken out of g (*k
 * less).  0, or -errno with err_set() detail. */
static int md_set_fresh(struct md_cand **g, unsigned *k, struct md_super **freshp, char name[48],
                        bool readonly, unsigned *caught)
{
	struct md_super *fresh;
	unsigned fi = md_fresh_index(g, *k);
	int r;

	*freshp = fresh = malloc(sizeof(*fresh));
	if (!fresh)
		return -ENOMEM;
	*fresh = *g[fi]->sb;
	md_super_array_name(fresh, name, 48);
	*caught = 0;
	for (unsigned i = 0; i < *k; i++) {
		r = md_reshape_catch_up(g[i]->sb, g[i]->v->name, fresh, g[fi]->v->name, name);
		if (r < 0)
			return r;
		if (r > 0) {
			log_warn("%s: %s (events %llu, newest %llu) missed the end of the reshape: "
			         "taken in the finished geometry, at its new data offset%s",
			         name, g[i]->v->name, (unsigned long long)g[i]->sb->events,
			         (unsigned long long)fresh->events,
			         readonly ? "" : "; its superblock is written forward");
			(*caught)++;
		}
	}
	for (unsigned i = 0; i < *k; i++) {
		if (md_cand_left(g[i]->sb, fresh)) {
			struct md_cand *c = g[i];
			log_warn(
			    "%s: %s (events %llu, newest %llu) left out: it left the array (its "
			    "slot %u has no role now, its superblock records an older "
			    "geometry); nothing is written to it",
			    name, c->v->name, (unsigned long long)c->sb->events,
			    (unsigned long long)fresh->events, c->sb->dev_number);
			vol_close(c->v);
			free(c->sb);
			c->v = NULL;
			c->sb = NULL;
			unsigned last = --*k;
			g[i] = g[last];
			g[last] = c;
			if (fi == last)
				fi = i; /* the freshest moved into i's place */
			i--;
			continue;
		}
		r = md_super_same_geometry(g[i]->sb, g[i]->v->name, fresh, g[fi]->v->name, name);
		if (r < 0)
			return r;
	}
	if (fresh->raid_disks > MD_SB_MAX_DEV)
		return err_set(-EINVAL, "%s: %u devices is more than uraid handles", name,
		               fresh->raid_disks);
	return 0;
}

/* a's state as fresh records it, with slots roles (raid_disks, or both
 * geometries' during a reshape) and room for k members and spares, no
 * member yet.  0 or -ENOMEM (what was allocated is md_array_open's to
 * free). */
static int md_array_init(struct md_array *a, const struct md_super *fresh, unsigned slots,
                         unsigned k, const struct md_assemble_opts *o)
{
	a->m = calloc(slots, sizeof(*a->m));
	if (!a->m)
		return -ENOMEM;
	a->n = slots;
	a->level = fresh->level;
	a->readonly = o->readonly;
	a->events = fresh->events;
	a->max_dev = fresh->max_dev;
	a->size = fresh->size;
	memcpy(a->roles, fresh->roles, sizeof(a->roles));
	pthread_mutex_init(&a->lock, NULL);
	pthread_cond_init(&a->rec.cond, NULL);
	pthread_mutex_init(&a->gate.lock, NULL);
	pthread_cond_init(&a->gate.cond, NULL);
	a->rec.enabled = !o->readonly && !o->no_recovery && md_level_redundant(fresh->level);
	a->no_recovery = o->no_recovery;
	a->sync.min = o->sync_min;
	a->sync.max = o->sync_max;
	a->spare = calloc(k, sizeof(*a->spare));
	if (!a->spare)
		return -ENOMEM;
	a->spare_cap = k;
	a->stale = calloc(k, sizeof(*a->stale));
	if (!a->stale)
		return -ENOMEM;
	return 0;
}

/* Whether the roles a holds let the array start at all, degraded or not
 * (mdadm's enough()): every role for RAID0 and linear, one for RAID1, all
 * but the parity count for RAID4/5/6, and for RAID10 one of each run of
 * near * far adjacent roles. */
static bool md_enough(const struct md_array *a, const struct md_super *fresh)
{
	unsigned have = 0;

	for (unsigned role = 0; role < a->n; role++)
		have += a->m[role].vol && !a->m[role].recovering;
	if (fresh->level == 10) {
		unsigned copies = MD_RAID10_NEAR(fresh->layout) * MD_RAID10_FAR(fresh->layout);
		unsigned first = 0;
		do {
			unsigned live = 0;
			for (unsigned c = 0; c < copies; c++, first = (first + 1) % a->n)
				live += a->m[first].vol && !a->m[first].recovering;
			if (!live)
				return false;
		} while (first != 0);
		return true;
	}
	if (fresh->level == 1)
		return have >= 1;
	return have + md_level_parity(fresh->level) >= a->n;
}

/* A member md_set_roles() leaves out for reason why (which it logs): a
 * stale one that md may take back from the write-intent bitmap waits in
 * a->stale (md_readd.c decides once the array runs); the rest are closed. */
static void md_set_aside(struct md_array *a, struct md_member m, const struct md_super *fresh,
                         const char *name, const char *why)
{
	if (m.sb->events < fresh->events && !(m.sb->feature_map & MD_FEATURE_RECOVERY_OFFSET) &&
	    md_super_role(m.sb) < a->n && a->rec.enabled &&
	    (fresh->feature_map & MD_FEATURE_BITMAP_OFFSET)) {
		log_warn("%s: %s (events %llu, newest %llu) left out for now: it %s; it is "
		         "re-added from the write-intent bitmap if that covers what it missed",
		         name, m.vol->name, (unsigned long long)m.sb->events,
		         (unsigned long long)fresh->events, why);
		a->stale[a->nstale++] = m;
		return;
	}
	log_warn("%s: %s (events %llu, newest %llu) left out: it %s", name, m.vol->name,
	         (unsigned long long)m.sb->events, (unsigned long long)fresh->events, why);
	vol_close(m.vol);
	free(m.sb);
}

/* Take stale[i] back in the role its own superblock gives it (free), as
 * forced (md_force_write raises its events on a writable start if it is
 * more than one behind), its slot that role again in a's table. */
static void md_force_take(struct md_array *a, struct md_member *stale, unsigned i,
                          const struct md_super *fresh, const char *name)
{
	unsigned role = md_super_role(stale[i].sb);

	if (a->readonly)
		log_warn("%s: %s is stale by %llu events (events %llu, newest %llu); taken in role "
		         "%u to start the array (--force), read-only",
		         name, stale[i].vol->name,
		         (unsigned long long)(fresh->events - stale[i].sb->events),
		         (unsigned long long)stale[i].sb->events, (unsigned long long)fresh->events,
		         role);
	a->m[role] = stale[i];
	a->m[role].recovering = false;
	a->m[role].forced = true;
	if (stale[i].sb->dev_number < MD_SB_MAX_DEV)
		a->roles[stale[i].sb->dev_number] = (uint16_t)role;
	stale[i].vol = NULL;
	stale[i].sb = NULL;
}

/* Whether m (stale, maybe taken already) could go in the role its own
 * superblock gives it: no member holds that. */
static bool md_force_free(const struct md_array *a, const struct md_member *m)
{
	return m->vol && md_super_role(m->sb) < a->n && !a->m[md_super_role(m->sb)].vol;
}

/* mdadm --assemble --force's choice (its force_array()), the one rule for
 * read-only and writable starts: while the members in their roles cannot
 * start the array, take the stale member with the most events (of equal
 * ones, the lowest role) and with it every other of the same events ("we
 * can't lose and we might gain"), each in the role its own superblock
 * gives it (md_force_take).  The others of stale[0..n) are set aside
 * (md_set_aside) for why[i].  Unlike mdadm, a member one event behind that
 * the freshest records as faulty (md's margin: mdadm counts it up to date
 * and --force clears its FAULTY flag) is taken only while too few are in
 * sync, as any stale one: where the array can start without it, it missed
 * the writes of its absence (md-dirty-degraded.sh's crash), and taking it
 * back would serve them stale. */
static void md_force_stale(struct md_array *a, struct md_member *stale, const char **why,
                           unsigned n, const struct md_super *fresh, const char *name)
{
	while (!md_enough(a, fresh)) {
		int best = -1;
		for (unsigned i = 0; i < n; i++) {
			if (!md_force_free(a, &stale[i]))
				continue;
			if (best < 0 || stale[i].sb->events > stale[best].sb->events ||
			    (stale[i].sb->events == stale[best].sb->events &&
			     md_super_role(stale[i].sb) < md_super_role(stale[best].sb)))
				best = (int)i;
		}
		if (best < 0)
			break;
		uint64_t vintage = stale[best].sb->events;
		md_force_take(a, stale, (unsigned)best, fresh, name);
		for (unsigned i = 0; i < n; i++)
			if (md_force_free(a, &stale[i]) && stale[i].sb->events == vintage)
				md_force_take(a, stale, i, fresh, name);
	}
	for (unsigned i = 0; i < n; i++)
		if (stale[i].vol)
			md_set_aside(a, stale[i], fresh, name, why[i]);
}

/* Each member of g takes the role the freshest superblock gives its slot
 * (as the kernel does), or stands by as a spare; stale, spare and faulty
 * ones are left out (md_set_aside).  With o->force_stale, stale ones
 * are kept aside for md_force_stale() instead.  Consumes g's vols and
 * superblocks. */
static void md_set_roles(struct md_array *a, struct md_cand **g, unsigned k,
                         const struct md_super *fresh, const char *name,
                         const struct md_assemble_opts *o)
{
	struct md_member stale[k ? k : 1], repl[k ? k : 1];
	const char *stale_why[k ? k : 1];
	unsigned nstale = 0, nrepl = 0;

	for (unsigned i = 0; i < k; i++) {
		struct md_super *sb = g[i]->sb;
		unsigned slot = sb->dev_number;
		unsigned role = slot < fresh->max_dev ? fresh->roles[slot] : MD_ROLE_SPARE;
		const char *why = NULL;
		bool rec = sb->feature_map & MD_FEATURE_RECOVERY_OFFSET;

		if (role == MD_ROLE_JOURNAL && (fresh->feature_map & MD_FEATURE_JOURNAL) &&
		    sb->events + 1 >= fresh->events &&
		    (!a->journal.vol || sb->events > a->journal.sb->events)) {
			if (a->journal.vol) {
				log_warn("%s: %s left out: an older journal", name,
				         a->journal.vol->name);
				vol_close(a->journal.vol);
				free(a->journal.sb);
			}
			a->journal = (struct md_member){.vol = g[i]->v, .sb = sb};
			g[i]->v = NULL;
			g[i]->sb = NULL;
			continue;
		}
		if (a->rec.enabled && role == MD_ROLE_SPARE && sb->data_size >= fresh->size) {
			/* A spare's events do not matter (md's rule). */
			a->spare[a->nspare++] = (struct md_member){.vol = g[i]->v, .sb = sb};
			g[i]->v = NULL;
			g[i]->sb = NULL;
			continue;
		}
		if (md_super_replacement(sb) && role < a->n && sb->events + 1 >= fresh->events &&
		    !o->readonly && !(fresh->feature_map & MD_FEATURE_RESHAPE_ACTIVE)) {
			/* Joins its role's member once every member has one
			 * (md_repl_take). */
			repl[nrepl++] = (struct md_member){.vol = g[i]->v, .sb = sb};
			g[i]->v = NULL;
			g[i]->sb = NULL;
			continue;
		}
		if (sb->events + 1 < fresh->events)
			why = "is stale (older events)";
		else if (md_super_replacement(sb) && role < a->n)
			why = o->readonly
			          ? "is a replacement being built (read-only: read from the "
			            "member it replaces; a writable start continues it)"
			          : "is a replacement being built during a reshape";
		else if (role == MD_ROLE_FAULTY)
			why = "is marked faulty";
		else if (role >= a->n)
			why = a->rec.enabled ? "is a spare too small for the array" : "is a spare";
		else if (rec && !a->rec.enabled &&
		         !(fresh->feature_map & MD_FEATURE_RESHAPE_ACTIVE))
			why = "was being rebuilt (`uraid rebuild`, or a writable `uraid serve`, "
			      "finishes that)";
		else if (rec && a->m[role].vol)
			why = "is being rebuilt for a role another member holds";
		else if (a->m[role].vol) {
			why = "claims a role another member holds";
			if (sb->events > a->m[role].sb->events) {
				/* keep the fresher of the two */
				struct md_member old = a->m[role];
				log_warn("%s: %s (events %llu) left out: %s", name, old.vol->name,
				         (unsigned long long)old.sb->events, why);
				vol_close(old.vol);
				free(old.sb);
				a->m[role].vol = NULL;
				why = NULL;
			}
		}
		/* mdadm's force_array() passes over a member whose reshape
		 * differs from the freshest's: the kernel would take its
		 * reshape position, and data would move twice or not at all. */
		bool same_reshape = (sb->feature_map & MD_FEATURE_RESHAPE_ACTIVE) ==
		                        (fresh->feature_map & MD_FEATURE_RESHAPE_ACTIVE) &&
		                    (!(fresh->feature_map & MD_FEATURE_RESHAPE_ACTIVE) ||
		                     sb->reshape_position == fresh->reshape_position);
		if (why && o->force_stale && md_super_role(sb) < a->n &&
		    sb->events < fresh->events && !rec && same_reshape) {
			stale_why[nstale] = why;
			stale[nstale++] = (struct md_member){.vol = g[i]->v, .sb = sb};
		} else if (why) {
			md_set_aside(a, (struct md_member){.vol = g[i]->v, .sb = sb}, fresh, name,
			             why);
		} else {
			a->m[role].vol = g[i]->v;
			a->m[role].sb = sb;
			a->m[role].recovering = rec;
		}
		g[i]->v = NULL;
		g[i]->sb = NULL;
	}
	if (nstale)
		md_force_stale(a, stale, stale_why, nstale, fresh, name);
	md_repl_take(a, repl, nrepl, name);
	/* A slot whose role has no member here (or another member now) is
	 * recorded as faulty at the first superblock update. */
	for (unsigned s = 0; s < a->max_dev && s < MD_SB_MAX_DEV; s++) {
		unsigned role = a->roles[s];
		if (role < a->n && (!a->m[role].vol || a->m[role].sb->dev_number != s) &&
		    !(a->m[role].repl && a->m[role].repl->sb->dev_number == s))
			a->roles[s] = MD_ROLE_FAULTY;
	}
}

/* The roles no member holds: refusals (a level without redundancy, a
 * surprise without run_degraded, a dirty degraded start), and the counts
 * for the log. */
static int md_set_check_missing(struct md_array *a, const struct md_super *fresh,
                                const struct md_assemble_opts *o, const struct md_reshape *rs,
                                const char *name, unsigned *present, unsigned *missing,
                                unsigned *recovering)
{
	bool redundant = md_level_redundant(fresh->level);
	int r;

	/* A missing role that the freshest superblock still gives to some
	 * device is a surprise (a member not given, or left out above): like
	 * mdadm without --run, start only when asked.  One already recorded
	 * as failed or removed is the array's known state. */
	bool surprise = false;
	char list[256] = "";
	size_t len = 0;
	for (unsigned role = 0; role < a->n; role++) {
		if (a->m[role].vol) {
			*present += !a->m[role].recovering;
			*recovering += a->m[role].recovering;
			continue;
		}
		(*missing)++;
		for (unsigned s = 0; s < fresh->max_dev && s < MD_SB_MAX_DEV; s++)
			surprise |= fresh->roles[s] == role;
		if (len < sizeof(list) - 8)
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%u",
			                        len ? "," : "", role);
	}
	if (*missing && !redundant) {
		r = err_set(-ENODEV, "%s: %s needs all %u members, %u found (missing role %s)",
		            name, md_level_name(fresh->level), a->n, *present, list);
		return r;
	}
	/* Too few in sync to run at all: the array failed (md's MD_BROKEN,
	 * recorded in the superblocks kept) or lost members; mdadm refuses it
	 * ("not enough to start the array") before anything else. */
	if (redundant && *missing && !rs && !md_enough(a, fresh)) {
		r = err_set(-ENODEV,
		            "%s (%s...): %s cannot run: %u of %u members in sync (missing or "
		            "failed role %s)%s",
		            name, md_first_present(a), md_level_name(fresh->level), *present, a->n,
		            list,
		            o->force_stale ? ", even with the stale members --force may take back"
		                           : "; `--force` takes back the members that failed "
		                             "last, as mdadm --assemble --force does");
		return r;
	}
	if (surprise && !o->run_degraded) {
		r = err_set(-ENODEV,
		            "%s: %u of %u members found (missing role %s); start it degraded with "
		            "--degraded",
		            name, *present, a->n, list);
		return r;
	}
	/* A write journal replays what the crash tore before the array is
	 * served: a dirty degraded start is safe with it. */
	bool journal = (fresh->feature_map & MD_FEATURE_JOURNAL) && a->journal.vol;
	/* A reshape whose members missing (or rebuilt by it) hold only
	 * parity, the raid0 grow's raid5: no stripe to tear. */
	bool parity_only = rs && md_reshape_parity_only(a, rs);
	if (!journal && !parity_only && md_dirty_degraded(fresh, *missing + *recovering)) {
		char what[300];
		snprintf(what, sizeof(what), "dirty degraded %s (%s, not shut down cleanly)",
		         md_level_name(fresh->level),
		         *missing ? "a member missing" : "a member being rebuilt");
		if (!o->readonly && !o->start_dirty_degraded) {
			r = err_set(
			    -EUCLEAN,
			    "%s (%s...): cannot start a %s: stripes written during the "
			    "crash may be wrong on the missing member (md's write hole); "
			    "--force starts it anyway, --readonly serves it without changing "
			    "it",
			    name, md_first_present(a), what);
			return r;
		}
		log_warn("%s: %s%s: stripes written during the crash may read back stale or "
		         "wrong where they lie on the missing member (md's write hole)",
		         name, o->readonly ? "" : "starting anyway (--force) a ", what);
	}
	return 0;
}

/* What mdadm --assemble --force writes once md_force_stale() took members
 * back, for a writable start (nothing else is written, and nothing at all
 * when none was taken): each forced member's events raised to the
 * freshest's ("forcing event count in X(N) from A up to B"), but for one
 * within md's margin of one event, which both take as it is; then in the
 * superblock the array is based on, mdadm's chosen drive (md_fresh_index:
 * the lowest role at those events, a forced member maybe), every member's
 * slot its role (spares' spare, the journal's journal), and an unclean
 * RAID4/5/6 that is still degraded marked clean (resync_offset MaxSector:
 * what a resync could not recompute is lost either way; fresh too, so no
 * resync runs).  The other members are not written.  0 or -errno with
 * err_set() detail. */
static int md_force_write(struct md_array *a, struct md_super *fresh, const char *name)
{
	struct md_member *chosen = NULL;
	bool any = false, clean = true, change = false;
	unsigned avail = 0;
	int r;

	for (unsigned role = 0; role < a->n; role++) {
		struct md_member *m = &a->m[role];
		if (!m->vol)
			continue;
		avail += !m->recovering;
		if (m->forced && m->sb->events + 1 < fresh->events) {
			log_warn("%s: forcing event count in %s(%u) from %llu up to %llu", name,
			         m->vol->name, role, (unsigned long long)m->sb->events,
			         (unsigned long long)fresh->events);
			m->sb->events = fresh->events;
			r = md_super_write(m->vol, m->sb);
			if (r < 0)
				return err_set(r, "%s: %s: cannot write its superblock: %s", name,
				               m->vol->name, strerror(-r));
		}
		any |= m->forced;
		if (!chosen && m->sb->events == fresh->events)
			chosen = m;
		clean &= md_super_clean(m->sb);
	}
	if (!any || !chosen)
		return 0;
	for (unsigned i = 0; i < a->nspare; i++)
		clean &= md_super_clean(a->spare[i].sb);
	struct md_super *c = chosen->sb;
	for (unsigned role = 0; role <= a->n + a->nspare; role++) {
		const struct md_member *m = role < a->n               ? &a->m[role]
		                            : role < a->n + a->nspare ? &a->spare[role - a->n]
		                                                      : &a->journal;
		unsigned want = role < a->n               ? role
		                : role < a->n + a->nspare ? MD_ROLE_SPARE
		                                          : MD_ROLE_JOURNAL;
		unsigned slot = m->sb ? m->sb->dev_number : MD_SB_MAX_DEV;
		if (!m->vol || slot >= c->max_dev || slot >= MD_SB_MAX_DEV ||
		    c->roles[slot] == want)
			continue;
		log_warn("%s: %s: slot %u of %s's superblock records it in role %u now (was %s)",
		         name, m->vol->name, slot, chosen->vol->name, want,
		         c->roles[slot] == MD_ROLE_FAULTY ? "faulty" : "another role");
		c->roles[slot] = (uint16_t)want;
		change = true;
	}
	bool enough_dirty =
	    avail == a->n || (fresh->level == 4 && avail + 1 == a->n && a->m[a->n - 1].vol == NULL);
	if (!clean && md_level_parity(fresh->level) && !enough_dirty) {
		log_warn(
		    "%s: marking the array clean in %s's superblock (a degraded %s not shut "
		    "down cleanly: what the crash tore on the missing member is lost either way)",
		    name, chosen->vol->name, md_level_name(fresh->level));
		c->resync_offset = MD_MAX_SECTOR;
		fresh->resync_offset = MD_MAX_SECTOR;
		change = true;
	}
	if (!change)
		return 0;
	r = md_super_write(chosen->vol, c);
	if (r < 0)
		return err_set(r, "%s: %s: cannot write its superblock: %s", name,
		               chosen->vol->name, strerror(-r));
	return 0;
}

/* The RAID vol's geometry as fresh records it. */
static int md_set_geom(const struct md_array *a, const struct md_super *fresh, const char *name,
                       struct raid_geom *geom)
{
	*geom = (struct raid_geom){0};
	geom->level = fresh->level;
	geom->raid_disks = a->n;
	/* RAID1 has no chunk, whatever the superblock says (the kernel
	 * ignores it too): a stray one must not refuse 4 KiB-block members. */
	geom->chunk = fresh->level == 1 ? 0 : fresh->chunk * 512;
	geom->layout = fresh->layout;
	if (md_level_redundant(fresh->level))
		geom->dev_size = fresh->size * 512;
	if (fresh->level == 0 && !(fresh->feature_map & MD_FEATURE_RAID0_LAYOUT)) {
		/* Without a layout only single-zone RAID0 is unambiguous; the
		 * kernel refuses the rest too (since 5.4). */
		for (unsigned role = 1; role < a->n; role++)
			if (a->m[role].sb->data_size / fresh->chunk !=
			    a->m[0].sb->data_size / fresh->chunk) {
				return err_set(
				    -EINVAL,
				    "%s: raid0 of unequal members without a layout (made "
				    "before Linux 5.4) is ambiguous; refusing it",
				    name);
			}
		geom->layout = 0;
	}
	if (fresh->level == MD_LEVEL_LINEAR)
		geom->layout = 0;

	return 0;
}

/* Cut out the members' data areas and open the RAID vol over them, and
 * the md vol over that.  slices (by role) are the RAID vol's once it is
 * open; on failure they are left for the caller to close. */
static int md_array_open_raid(struct md_array *a, const struct md_super *fresh, const char *name,
                              bool readonly, struct vol **slices)
{
	struct raid_geom geom;
	struct raid_events ev;
	int r = md_set_geom(a, fresh, name, &geom);

	if (r < 0)
		return r;
	for (unsigned role = 0; role < a->n; role++) {
		struct md_member *mm = &a->m[role];
		if (!mm->vol)
			continue;
		if (mm->repl) {
			r = md_repl_open_role(a, role, name, &slices[role]);
			if (r < 0)
				return r;
			continue;
		}
		/* A member being recovered is missing to raid_open: it joins
		 * as recovering below (md_rec_begin). */
		r = slice_open(mm->vol, mm->sb->data_offset * 512, mm->sb->data_size * 512, false,
		               mm->vol->name, mm->recovering ? &mm->slice : &slices[role]);
		if (r < 0) {
			return err_set(r, "%s: %s: cannot cut out the data area", name,
			               mm->vol->name);
		}
	}
	ev.member_failed = md_member_failed;
	ev.ctx = a;
	r = raid_open(&geom, slices, &ev, name, &a->raid);
	if (r < 0)
		return r;
	for (unsigned role = 0; role < a->n; role++) {
		a->m[role].data = slices[role];
		if (a->m[role].sb && (a->m[role].sb->devflags & MD_DEVFLAG_WRITE_MOSTLY))
			raid_set_write_mostly(a->raid, role, true);
	}
	/* The RAID vol owns the slices now; the members stay ours (the
	 * superblocks are written through them) and the md vol's close (md_vol.c) closes them. */
	r = md_vol_init(a, name, readonly);
	if (r < 0) {
		vol_close(a->raid);
		a->raid = NULL;
		for (unsigned role = 0; role < a->n; role++)
			slices[role] = NULL;
		return r;
	}
	return 0;
}

/* md_journal's word that the tail moved: into the journal member's
 * superblock (journal_tail, the recovery_offset field) alone, as a
 * rebuild's checkpoint writes its member's: the kernel reads the tail
 * from the journal member only, and the events stay as they are. */
static int md_journal_set_tail(void *ctx, uint64_t tail)
{
	struct md_array *a = ctx;
	int r;

	pthread_mutex_lock(&a->lock);
	a->journal.sb->recovery_offset = tail;
	r = md_array_sync_journal(a);
	pthread_mutex_unlock(&a->lock);
	return r;
}

/* An array with a write journal (MD_FEATURE_JOURNAL): md refuses writes
 * without its journal member (mdadm wants --force, the kernel then starts
 * it read-only), so a writable start without it is refused; a writable
 * start replays the journal from its tail (instead of a resync, as md
 * does: *replayed) and logs every stripe update through it from then on.
 * A read-only one writes nothing and leaves the journal as it is. */
static int md_journal_start(struct md_array *a, const struct md_super *fresh,
                            const struct md_assemble_opts *o, const char *name, bool *replayed)
{
	struct md_journal_ops ops = {.set_tail = md_journal_set_tail, .ctx = a};
	struct md_journal_stats st;
	struct raid_log_ops lo;
	struct vol *slice;
	int r;

	*replayed = false;
	if (!(fresh->feature_map & MD_FEATURE_JOURNAL))
		return 0;
	if (!md_level_parity(fresh->level))
		return err_set(-EINVAL, "%s: a write journal on %s (only raid4/5/6 have one)", name,
		               md_level_name(fresh->level));
	if (!a->journal.vol) {
		if (!o->readonly)
			return err_set(-ENODEV,
			               "%s: the write journal member is missing: md does not write "
			               "to the array without it (--readonly serves it as the "
			               "members hold it)",
			               name);
		log_warn("%s: the write journal member is missing; read-only", name);
		return 0;
	}
	r = slice_open(a->journal.vol, a->journal.sb->data_offset * 512,
	               a->journal.sb->data_size * 512, false, a->journal.vol->name, &slice);
	if (r < 0)
		return err_set(r, "%s: %s: cannot cut out the journal's data area", name,
		               a->journal.vol->name);
	if (!(a->jn_members = calloc(a->n, sizeof(*a->jn_members)))) {
		vol_close(slice);
		return -ENOMEM;
	}
	for (unsigned role = 0; role < a->n; role++)
		a->jn_members[role] = a->m[role].recovering ? NULL : a->m[role].data;
	r = md_journal_open(slice, a->raid, a->jn_members, a->n, md_level_parity(fresh->level),
	                    (uint64_t)fresh->chunk * 512, fresh->set_uuid,
	                    a->journal.sb->recovery_offset, &ops, &a->jn);
	if (r < 0)
		return r;
	if (o->readonly) {
		log_info("%s: journal on %s not replayed (read-only)", name, a->journal.vol->name);
		return 0;
	}
	r = md_journal_recover(a->jn, &st);
	if (r < 0)
		return err_set(r, "%s: %s: journal replay failed: %s", name, a->journal.vol->name,
		               err_detail(r));
	if (st.data_parity || st.data_only)
		log_info("%s: journal replayed: %llu stripes with parity, %llu data-only, from "
		         "%llu meta blocks (%llu KiB of log)",
		         name, (unsigned long long)st.data_parity, (unsigned long long)st.data_only,
		         (unsigned long long)st.meta_blocks,
		         (unsigned long long)st.log_bytes / 1024);
	md_journal_log_ops(a->jn, &lo);
	r = raid_set_log(a->raid, &lo);
	if (r < 0)
		return r;
	if (o->journal_writeback) {
		r = md_jcache_open(a->jn, a->raid, (uint64_t)fresh->chunk * 512,
		                   a->n - md_level_parity(fresh->level), o->journal_cache, &a->jc);
		if (r < 0)
			return err_set(r, "%s: journal write-back cache: %s", name, err_detail(r));
		log_info("%s: journal in write-back mode", name);
	}
	*replayed = true;
	return 0;
}

/* An array whose freshest superblock fresh records a reshape under way:
 * its rules (md_reshape_parse into *rs), every member of the same events
 * recording the same reshape, and a start uraid can give it:
 * (read-only, any; writable, one md_reshape_run() continues, forwards or
 * backwards, its bitmap kept in both geometries, md_bm_load; found
 * unclean, it is resynced first, through both geometries, as any array
 * is). */
static int md_set_reshape(struct md_cand **g, unsigned k, const struct md_super *fresh,
                          const char *name, struct md_reshape *rs)
{
	int r = md_reshape_parse(fresh, name, rs);

	for (unsigned i = 0; i < k && r == 0; i++)
		if (g[i]->sb->events + 1 >= fresh->events)
			r = md_reshape_same(g[i]->sb, g[i]->v->name, fresh, g[0]->v->name, name);
	return r;
}

/* Assemble the k candidates in g[] (one array UUID), step by step: the
 * freshest superblock, the array's state, the members' roles, the
 * refusals for what is missing, the RAID and md vols, then the bitmap,
 * resync and recovery of a writable start.  Always consumes their vols
 * and superblocks (closes them on failure). */
static int md_array_open(struct md_cand **g, unsigned k, const struct md_assemble_opts *o,
                         struct vol **out)
{
	struct md_super *fresh = NULL; /* a copy: members' own may be freed */
	struct md_array *a = NULL;
	struct vol **slices = NULL;
	char name[48], uuid[36];
	unsigned present = 0, missing = 0, recovering = 0, slots, caught;
	struct md_reshape rs;
	bool redundant, reshaping;
	int r = 0;

	r = md_set_fresh(g, &k, &fresh, name, o->readonly, &caught);
	if (r < 0)
		goto fail;
	md_uuid_format(fresh->set_uuid, uuid);
	redundant = md_level_redundant(fresh->level);
	reshaping = fresh->feature_map & MD_FEATURE_RESHAPE_ACTIVE;
	if (reshaping) {
		r = md_set_reshape(g, k, fresh, name, &rs);
		if (r < 0)
			goto fail;
	}
	slots = reshaping ? rs.slots : fresh->raid_disks;
	a = calloc(1, sizeof(*a));
	slices = calloc(slots, sizeof(*slices));
	if (!a || !slices) {
		r = -ENOMEM;
		goto fail;
	}
	r = md_array_init(a, fresh, slots, k, o);
	if (r < 0)
		goto fail;
	a->rs_rec_enabled = a->rec.enabled;
	if (reshaping)
		a->rec.enabled = false; /* no recovery while the data moves */
	md_set_roles(a, g, k, fresh, name, o);
	r = md_set_check_missing(a, fresh, o, reshaping ? &rs : NULL, name, &present, &missing,
	                         &recovering);
	if (r == 0 && !o->readonly)
		r = md_force_write(a, fresh, name);
	if (r == 0)
		r = reshaping ? md_reshape_open(a, &rs, name)
		              : md_array_open_raid(a, fresh, name, o->readonly, slices);
	if (r < 0)
		goto fail;
	if (reshaping)
		log_info("%s: a reshape is under way (%u -> %u devices, chunk %u -> %u KiB), at "
		         "%llu of %llu KiB",
		         name, rs.from.raid_disks, rs.to.raid_disks, rs.from.chunk / 1024,
		         rs.to.chunk / 1024, (unsigned long long)rs.pos / 1024,
		         (unsigned long long)rs.size / 1024);
	log_info("%s: assembled %s (%s) from %u of %u members%s%s%s", name,
	         md_level_name(fresh->level), uuid, present, a->n,
	         missing || recovering ? ", degraded" : "", o->readonly ? ", read-only" : "",
	         recovering ? ", recovering" : "");
	free(slices);
	bool replayed;
	r = md_journal_start(a, fresh, o, name, &replayed);
	if (r < 0) {
		free(fresh);
		vol_close(&a->vol); /* writes nothing: never marked active */
		return r;
	}
	md_bm_load(a, fresh);
	/* md's write-behind, as the kernel takes it: from the bitmap. */
	if (a->bm.map && fresh->level == 1 && md_bitmap_header(a->bm.map)->write_behind)
		raid_set_write_behind(a->raid, md_bitmap_header(a->bm.map)->write_behind);
	/* With a journal, the replay made the stripes agree: no resync (md's). */
	bool clean = md_super_clean(fresh) || replayed;
	if (fresh->feature_map & MD_FEATURE_ANY_PPL) {
		/* md replays the PPL instead of resyncing (md_ppl.h). */
		a->unclean = !clean;
		r = md_ppl_open(a, fresh);
		if (r == 0 && !clean && !a->unclean) {
			pthread_mutex_lock(&a->lock);
			r = md_array_sync(a, false);
			pthread_mutex_unlock(&a->lock);
		}
		if (r < 0) {
			free(fresh);
			vol_close(&a->vol);
			return r;
		}
		clean = !a->unclean;
	}
	free(fresh);
	if (redundant && !clean) {
		a->unclean = true;
		if (o->readonly) {
			log_warn("%s: array was not shut down cleanly; copies may differ until "
			         "it is resynced (a writable start does that)",
			         name);
		} else {
			r = md_resync(a);
			if (r < 0) {
				vol_close(&a->vol); /* stays marked unclean */
				return r;
			}
		}
	}
	if (caught && !o->readonly) {
		/* The finish the members above missed, on their superblocks
		 * too (events + 1 everywhere): a kernel reads them then. */
		pthread_mutex_lock(&a->lock);
		r = md_array_sync(a, atomic_load(&a->active));
		pthread_mutex_unlock(&a->lock);
		if (r < 0) {
			r = err_set(r,
			            "%s: writing the end of the reshape to the members that "
			            "missed it: %s",
			            name, err_detail(r));
			vol_close(&a->vol);
			return r;
		}
	}
	if (a->reshaping && !o->readonly && !o->no_reshape) {
		r = md_reshape_start(a);
		if (r < 0) {
			vol_close(&a->vol);
			return r;
		}
	}
	if (a->rec.enabled) {
		r = md_rec_start(a);
		if (r < 0) {
			vol_close(&a->vol);
			return r;
		}
	}
	/* As mdadm --monitor sees an array appear: degraded, it says so. */
	md_ev(a, "NewArray", NULL);
	pthread_mutex_lock(&a->lock);
	if (md_degraded(a))
		md_ev(a, "DegradedArray", NULL);
	pthread_mutex_unlock(&a->lock);
	*out = &a->vol;
	return 0;

fail:
	for (unsigned i = 0; i < k; i++) {
		vol_close(g[i]->v);
		free(g[i]->sb);
		g[i]->v = NULL;
		g[i]->sb = NULL;
	}
	if (a) {
		for (unsigned role = 0; a->m && role < a->n; role++) {
			if (slices && slices[role])
				vol_close(slices[role]);
			vol_close(a->m[role].slice);
			vol_close(a->m[role].vol);
			free(a->m[role].sb);
			if (a->m[role].repl) {
				vol_close(a->m[role].repl->vol);
				free(a->m[role].repl->sb);
				free(a->m[role].repl);
			}
		}
		for (unsigned i = 0; i < a->nspare; i++) {
			vol_close(a->spare[i].vol);
			free(a->spare[i].sb);
		}
		vol_close(a->journal.vol);
		free(a->journal.sb);
		for (unsigned i = 0; i < a->nstale; i++) {
			vol_close(a->stale[i].vol);
			free(a->stale[i].sb);
		}
		free(a->stale);
		free(a->spare);
		free(a->m);
		if (a->max_dev || a->n) {
			pthread_mutex_destroy(&a->lock);
			pthread_cond_destroy(&a->rec.cond);
			pthread_mutex_destroy(&a->gate.lock);
			pthread_cond_destroy(&a->gate.cond);
		}
		free(a);
	}
	free(slices);
	free(fresh);
	return r;
}

int md_assemble_one(struct vol **vols, unsigned n, const struct md_assemble_opts *o,
                    struct vol **out)
{
	struct md_cand *c = calloc(n ? n : 1, sizeof(*c));
	struct md_cand **g = calloc(n ? n : 1, sizeof(*g));
	int r = 0;

	if (!c || !g) {
		r = -ENOMEM;
		goto fail;
	}
	for (unsigned i = 0; i < n; i++) {
		c[i].v = vols[i];
		g[i] = &c[i];
		r = md_cand_read(&c[i]);
		if (r < 0)
			goto fail;
		if (memcmp(c[i].sb->set_uuid, c[0].sb->set_uuid, 16) != 0) {
			r = err_set(-EINVAL, "%s and %s belong to different md arrays",
			            vols[0]->name, vols[i]->name);
			goto fail;
		}
	}
	r = md_array_open(g, n, o, out); /* takes the members, also on error */
	goto out;
fail:
	for (unsigned i = 0; i < n; i++) {
		vol_close(vols[i]);
		if (c)
			free(c[i].sb);
	}
out:
	free(c);
	free(g);
	return r;
}

int md_assemble_all(struct vol **vols, int n, const struct md_assemble_opts *o, struct vol ***out,
                    int *nout)
{
	struct md_cand *c = calloc((size_t)n, sizeof(*c));
	struct md_cand **g = calloc((size_t)n, sizeof(*g));
	struct vol **res = NULL;
	int nc = n, r = 0, round;

	if (!c || !g) {
		r = -ENOMEM;
		for (int i = 0; i < n; i++)
			vol_close(vols[i]);
		goto out;
	}
	for (int i = 0; i < n; i++)
		c[i].v = vols[i];

	for (round = 0; round <= MD_NEST_MAX; round++) {
		bool found = false;

		for (int i = 0; i < nc; i++) {
			if (c[i].done || c[i].sb)
				continue;
			r = md_cand_read(&c[i]);
			if (r == -ENOENT) {
				c[i].done = true;
				r = 0;
			} else if (r < 0) {
				goto fail;
			} else
				found = true;
		}
		if (!found)
			break;
		if (round == MD_NEST_MAX) {
			r = err_set(-ELOOP, "md arrays nested more than %d deep", MD_NEST_MAX);
			goto fail;
		}
		/* Assemble each array UUID, in the order members were given;
		 * the array takes the place of its first member. */
		for (int i = 0; i < nc; i++) {
			unsigned k = 0;
			struct vol *arr;

			if (!c[i].sb)
				continue;
			for (int j = i; j < nc; j++)
				if (c[j].sb &&
				    memcmp(c[j].sb->set_uuid, c[i].sb->set_uuid, 16) == 0)
					g[k++] = &c[j];
			r = md_array_open(g, k, o, &arr);
			if (r < 0)
				goto fail;
			c[i].v = arr;
			c[i].sb = NULL;
			c[i].done = false;
		}
		/* drop the emptied slots */
		int w = 0;
		for (int i = 0; i < nc; i++)
			if (c[i].v)
				c[w++] = c[i];
		nc = w;
	}

	res = calloc(nc > 0 ? (size_t)nc : 1, sizeof(*res));
	if (!res) {
		r = -ENOMEM;
		goto fail;
	}
	for (int i = 0; i < nc; i++)
		res[i] = c[i].v;
	*out = res;
	*nout = nc;
	r = 0;
	goto out;
fail:
	for (int i = 0; i < nc; i++) {
		/* An array assembled in this run has written nothing yet:
		 * closing it writes nothing either (never marked active). */
		vol_close(c[i].v);
		free(c[i].sb);
	}
out:
	free(c);
	free(g);
	return r;
}
