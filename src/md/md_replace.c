/* md_replace.c — a running array's replacements (md_replace.h): taking a
 * replacement found at assembly into its role, the copy onto it on the
 * recovery thread (md_sync.c calls md_repl_run when no recovery is due),
 * and its end as the kernel's raid1/10/5 end one: the old member faulty
 * in the role table, the replacement in its role, its feature bits
 * cleared.  The replace vol itself is md_replace_vol.c. */
#include "md_internal.h"
#include "md_manage.h"
#include "md_replace.h"

#include "core/clock.h"
#include "core/log.h"
#include "disc/slice.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MD_REPL_PIECE (1u << 20)  /* bytes copied under one window */
#define MD_REPL_SAVE (4ull << 20) /* recovery_offset saved this often */

void md_repl_take(struct md_array *a, struct md_member *cand, unsigned n, const char *name)
{
	for (unsigned i = 0; i < n; i++) {
		struct md_super *sb = cand[i].sb;
		unsigned slot = sb->dev_number;
		unsigned role = slot < a->max_dev && slot < MD_SB_MAX_DEV ? a->roles[slot] : a->n;
		struct md_member *mm = role < a->n ? &a->m[role] : NULL;
		const char *why = NULL;

		if (!mm)
			why = "has no role";
		else if (!mm->vol && a->rec.enabled) {
			/* The member it replaces is gone: as the kernel's raid
			 * levels do, the replacement takes the role and is
			 * recovered from its offset like any member. */
			log_warn("%s: %s replaced a member that is gone: it takes role %u, "
			         "recovered from sector %llu",
			         name, cand[i].vol->name, role,
			         (unsigned long long)sb->recovery_offset);
			sb->feature_map &= ~MD_FEATURE_REPLACEMENT;
			if (!(sb->feature_map & MD_FEATURE_RECOVERY_OFFSET)) {
				sb->feature_map |= MD_FEATURE_RECOVERY_OFFSET;
				sb->recovery_offset = 0;
			}
			mm->vol = cand[i].vol;
			mm->sb = sb;
			mm->recovering = true;
			continue;
		} else if (!mm->vol || mm->recovering)
			why = "replaces a member that is missing or being rebuilt";
		else if (mm->repl)
			why = "is a second replacement for the role";
		if (!why && !(mm->repl = calloc(1, sizeof(*mm->repl))))
			why = "cannot be taken (out of memory)";
		if (why) {
			log_warn("%s: %s (a replacement) left out: it %s", name, cand[i].vol->name,
			         why);
			vol_close(cand[i].vol);
			free(sb);
			continue;
		}
		*mm->repl = cand[i];
		log_info("%s: %s replaces %s in role %u, built up to sector %llu of %llu", name,
		         cand[i].vol->name, mm->vol->name, role,
		         (unsigned long long)(sb->feature_map & MD_FEATURE_RECOVERY_OFFSET
		                                  ? sb->recovery_offset
		                                  : a->size),
		         (unsigned long long)a->size);
	}
}

int md_repl_open_role(struct md_array *a, unsigned role, const char *name, struct vol **out)
{
	struct md_member *mm = &a->m[role], *rp = mm->repl;
	struct vol *old = NULL, *new = NULL;
	int r;

	r = slice_open(mm->vol, mm->sb->data_offset * 512, mm->sb->data_size * 512, false,
	               mm->vol->name, &old);
	if (r == 0)
		r = slice_open(rp->vol, rp->sb->data_offset * 512, rp->sb->data_size * 512, false,
		               rp->vol->name, &new);
	if (r < 0) {
		vol_close(old);
		return err_set(r, "%s: %s: cannot cut out the data area", name,
		               (old ? rp : mm)->vol->name);
	}
	r = md_repl_open(old, new, mm->vol->name, out);
	if (r == 0)
		mm->rv = *out;
	return r;
}

/* The replacement of role's member failed or is given up: recorded as
 * faulty, written no more (the role keeps its member).  With a->lock
 * held; sync: write the superblocks now. */
void md_repl_fail(struct md_array *a, unsigned role, int err, bool sync)
{
	struct md_member *mm = &a->m[role], *rp = mm->repl;

	if (!rp || rp->failed)
		return;
	rp->failed = true;
	if (mm->rv)
		md_repl_drop(mm->rv);
	if (rp->sb->dev_number < MD_SB_MAX_DEV)
		a->roles[rp->sb->dev_number] = MD_ROLE_FAULTY;
	log_warn("%s: the replacement %s of member %u (%s) failed (%s): marked faulty", a->vol.name,
	         rp->vol->name, role, mm->vol->name, strerror(err < 0 ? -err : EIO));
	md_ev(a, "FailSpare", rp);
	if (sync && md_array_sync(a, atomic_load(&a->active)) < 0)
		log_warn("%s: could not record the failure in any superblock", a->vol.name);
}

int md_repl_busy(struct md_array *a, const char *what)
{
	int r = 0;

	pthread_mutex_lock(&a->lock);
	for (unsigned role = 0; role < a->n && r == 0; role++) {
		struct md_member *mm = &a->m[role];
		if (mm->repl && !mm->repl->failed)
			r = err_set(-EBUSY,
			            "%s: %s is being replaced by %s: %s once the replacement ended",
			            a->vol.name, mm->vol->name, mm->repl->vol->name, what);
	}
	pthread_mutex_unlock(&a->lock);
	return r;
}

bool md_repl_fail_named(struct md_array *a, const char *member)
{
	for (unsigned role = 0; role < a->n; role++) {
		struct md_member *mm = &a->m[role];
		if (mm->repl && !mm->repl->failed && !strcmp(mm->repl->vol->name, member)) {
			md_repl_fail(a, role, -ECANCELED, true);
			return true;
		}
	}
	return false;
}

/* The role whose replacement is to be built next, or -1. */
static int md_repl_next(struct md_array *a)
{
	for (unsigned role = 0; role < a->n; role++) {
		struct md_member *mm = &a->m[role];
		if (mm->repl && mm->rv && !mm->repl->failed && !mm->repl->stalled && mm->vol &&
		    !mm->failed)
			return (int)role;
	}
	return -1;
}

bool md_repl_pending(struct md_array *a)
{
	return a->rec.enabled && md_repl_next(a) >= 0;
}

struct md_repl_run {
	struct md_array *a;
	struct md_member *rp;
	uint64_t from, saved;
	int save_err;
};

static int md_repl_progress(void *ctx, uint64_t done)
{
	struct md_repl_run *run = ctx;
	struct md_array *a = run->a;

	atomic_store(&a->rec.pos, done);
	md_ev_progress(a, &a->rec.ev_next, done, a->rec.to);
	if (done - run->saved >= MD_REPL_SAVE) {
		pthread_mutex_lock(&a->lock);
		run->save_err = md_manage_checkpoint(run->rp->vol, run->rp->sb, done);
		pthread_mutex_unlock(&a->lock);
		if (run->save_err < 0)
			return 1;
		run->saved = done;
	}
	md_sync_throttle(a, done - run->from, false, &a->rec.stop);
	return atomic_load(&a->rec.stop);
}

/* The replacement of role is built whole and switched to: the old member
 * is retired (faulty in the role table), the replacement takes the role.
 * With a->lock held. */
static void md_repl_end(struct md_array *a, unsigned role, double secs)
{
	struct md_member *mm = &a->m[role], *rp = mm->repl;
	struct md_member *nr = realloc(a->retired, (a->nretired + 1) * sizeof(*nr));

	if (!nr) {
		/* The old member's vol stays open, unnamed (closed with rp). */
		log_warn("%s: out of memory retiring %s", a->vol.name, mm->vol->name);
	} else {
		a->retired = nr;
		a->retired[a->nretired] = *mm;
		a->retired[a->nretired].failed = true;
		a->retired[a->nretired].repl = NULL;
		a->retired[a->nretired].rv = NULL;
		a->retired[a->nretired].data = NULL;
		a->nretired++;
	}
	if (mm->sb->dev_number < MD_SB_MAX_DEV)
		a->roles[mm->sb->dev_number] = MD_ROLE_FAULTY;
	if (!nr)
		free(mm->sb); /* its vol leaks until exit rather than closing under I/O */
	rp->sb->feature_map &= ~MD_FEATURE_REPLACEMENT;
	md_manage_recovery_done(rp->sb);
	log_info("%s: %s replaced %s in role %u (%.1f MiB copied in %.1f s): %s is marked "
	         "faulty",
	         a->vol.name, rp->vol->name, mm->vol->name, role,
	         (double)(a->rec.to - a->rec.from) / 1048576.0, secs, mm->vol->name);
	mm->vol = rp->vol;
	mm->sb = rp->sb;
	mm->bm_ok = rp->bm_ok;
	free(rp);
	mm->repl = NULL;
	md_ev(a, "SpareActive", mm);
	if (md_array_sync(a, atomic_load(&a->active)) < 0)
		log_warn("%s: could not record the replacement in any superblock", a->vol.name);
}

void md_repl_run(struct md_array *a)
{
	int role = md_repl_next(a);
	struct md_member *mm, *rp;
	struct md_repl_run run = {.a = a};
	int r;

	if (role < 0)
		return;
	mm = &a->m[role];
	rp = mm->repl;
	run.rp = rp;
	run.from = (rp->sb->feature_map & MD_FEATURE_RECOVERY_OFFSET)
	               ? md_manage_recovery_from(rp->sb, a->size)
	               : a->size * 512;
	run.from -= run.from % MD_REPL_PIECE;
	run.saved = run.from;
	if (!(rp->sb->feature_map & MD_FEATURE_RECOVERY_OFFSET))
		rp->sb->feature_map |= MD_FEATURE_RECOVERY_OFFSET;
	if ((r = md_manage_restart(rp->vol, rp->sb, run.from)) < 0)
		log_warn("%s: %s", a->vol.name, err_detail(r));
	log_info("%s: replacing %s (role %u) with %s from byte %llu of %llu, while serving",
	         a->vol.name, mm->vol->name, role, rp->vol->name, (unsigned long long)run.from,
	         (unsigned long long)a->rec.to);
	a->rec.running = true;
	a->rec.from = run.from;
	md_sync_throttle(a, 0, true, &a->rec.stop);
	a->rec.t0_ns = clock_now_ns();
	atomic_store(&a->rec.pos, run.from);
	md_ev_progress_begin(a, &a->rec.ev_next, run.from, a->rec.to);
	struct vol *rv = mm->rv;
	pthread_mutex_unlock(&a->lock);

	err_clear();
	r = md_repl_copy(rv, run.from, a->rec.to, MD_REPL_PIECE, md_repl_progress, &run);
	double secs = (double)(clock_now_ns() - a->rec.t0_ns) / 1e9;
	int e = r;
	if (r == 0)
		e = md_repl_switch(rv); /* waits for the requests on old */
	char detail[512];
	snprintf(detail, sizeof(detail), "%s", r < 0 ? err_detail(r) : "");

	pthread_mutex_lock(&a->lock);
	a->rec.running = false;
	bool stopped = r == -EINTR && atomic_load(&a->rec.stop);
	if (!stopped)
		md_ev_finished(a, 0);
	if (mm->failed || rp->failed) {
		/* The role's member failed meanwhile (md_member_failed gave the
		 * replacement up with it). */
	} else if (r == 0 && e == 0) {
		md_repl_end(a, (unsigned)role, secs);
	} else if (r == -EINTR && run.save_err < 0) {
		log_error("%s: replacement stopped: saving its offset: %s", a->vol.name,
		          err_detail(run.save_err));
		rp->stalled = true; /* not tried again until the next start */
	} else if (r == -EINTR) {
		uint64_t at = atomic_load(&a->rec.pos);
		if ((e = md_manage_checkpoint(rp->vol, rp->sb, at)) < 0)
			log_warn("%s: saving the replacement's offset: %s", a->vol.name,
			         err_detail(e));
	} else if (r == -EIO || e < 0) {
		md_repl_fail(a, (unsigned)role, md_repl_error(rv) ? md_repl_error(rv) : -EIO, true);
	} else {
		/* old could not be read: the replacement waits (written by
		 * clients) until the next start. */
		log_error("%s: replacement stopped: %s", a->vol.name, detail);
		rp->stalled = true;
	}
}

/* ---- a replacement begun on the running array (md_array_replace) ---- */

/* The role of the member named member (its vol name) if it may be
 * replaced now, else -1 with err_set().  With a->lock held. */
static int md_repl_role(struct md_array *a, const char *member)
{
	for (unsigned role = 0; role < a->n; role++) {
		struct md_member *mm = &a->m[role];
		if (!mm->vol || strcmp(mm->vol->name, member) != 0)
			continue;
		if (mm->failed || mm->recovering)
			return err_set(-EINVAL,
			               "%s: %s is not an in-sync member (%s): only an active, "
			               "in-sync member can be replaced",
			               a->vol.name, member,
			               mm->failed ? "faulty" : "being rebuilt");
		if (mm->repl)
			return err_set(-EBUSY, "%s: %s is being replaced already (by %s)",
			               a->vol.name, member, mm->repl->vol->name);
		return (int)role;
	}
	return err_set(-EINVAL,
	               "%s: %s is not an in-sync member of the array (a spare, faulty, or not "
	               "one of its members)",
	               a->vol.name, member);
}

int md_array_replace(struct vol *v, const char *member, struct vol *nv, bool force)
{
	struct md_array *a = md_of(v);
	struct md_member *rp = NULL;
	struct md_super *nsb = NULL;
	struct vol *slice = NULL, *rv = NULL;
	uint32_t *used = NULL;
	uint64_t end_sb;
	unsigned nused = 0;
	bool held = false;
	int r, role;

	if ((r = md_array_can_take(a, v, nv, "replaced")) < 0)
		return r;
	nsb = malloc(sizeof(*nsb));
	rp = calloc(1, sizeof(*rp));
	if (!nsb || !rp) {
		r = -ENOMEM;
		goto out;
	}
	pthread_mutex_lock(&a->lock);
	role = md_repl_role(a, member);
	if (role >= 0)
		*nsb = *a->m[role].sb;
	pthread_mutex_unlock(&a->lock);
	if ((r = role) < 0)
		goto out;
	/* The checks of a new member (md_manage.h), outside the lock: what
	 * they compare with (uuid, data offset, size) never changes. */
	r = md_manage_probe_new(nv, nv->name, nsb->set_uuid, a->vol.name, force, &end_sb);
	if (r == 0)
		r = md_manage_check_size(nv, nv->name, nsb, a->vol.name);
	if (r < 0)
		goto out;
	pthread_mutex_lock(&a->lock);
	if ((r = md_repl_role(a, member)) != role) {
		pthread_mutex_unlock(&a->lock);
		r = r < 0 ? r : err_set(-EBUSY, "%s: %s moved meanwhile", a->vol.name, member);
		goto out;
	}
	used = calloc(2 * a->n + a->nspare + a->nretired + 1, sizeof(*used));
	if (!used) {
		pthread_mutex_unlock(&a->lock);
		r = -ENOMEM;
		goto out;
	}
	for (unsigned i = 0; i < a->n; i++) {
		if (a->m[i].sb)
			used[nused++] = a->m[i].sb->dev_number;
		if (a->m[i].repl)
			used[nused++] = a->m[i].repl->sb->dev_number;
	}
	for (unsigned k = 0; k < a->nspare; k++)
		used[nused++] = a->spare[k].sb->dev_number;
	for (unsigned k = 0; k < a->nretired; k++)
		if (a->retired[k].sb)
			used[nused++] = a->retired[k].sb->dev_number;
	struct md_member *mm = &a->m[role];
	r = md_manage_pick_slot(a->roles, a->max_dev, a->n, used, nused, mm->sb, a->vol.name);
	pthread_mutex_unlock(&a->lock);
	if (r < 0)
		goto out;
	unsigned slot = (unsigned)r;
	/* Checked: from here on we write, NEW first (its metadata area). */
	r = md_manage_new_super(nv, nv->name, mm->sb, mm->vol, slot, end_sb, nsb);
	if (r == 0)
		r = slice_open(nv, nsb->data_offset * 512, nsb->data_size * 512, false, nv->name,
		               &slice);
	if (r < 0)
		goto out;
	/* The RAID vol's member for the role becomes the replace vol, with
	 * no request inside. */
	if ((r = md_io_hold(a)) < 0) {
		r = err_set(r, "%s: requests did not drain: nothing changed", a->vol.name);
		goto out;
	}
	held = true;
	r = md_repl_open(mm->data, slice, mm->vol->name, &rv);
	slice = NULL; /* rv's, or closed */
	if (r < 0)
		goto out;
	r = raid_swap_member(a->raid, (unsigned)role, mm->data, rv);
	if (r < 0) {
		md_repl_unwrap(rv);
		r = err_set(r, "%s: %s is no longer a live member", a->vol.name, member);
		goto out;
	}
	pthread_mutex_lock(&a->lock);
	if (slot >= a->max_dev) {
		for (uint32_t k = a->max_dev; k < slot; k++)
			a->roles[k] = MD_ROLE_SPARE;
		a->max_dev = slot + 1;
	}
	md_manage_mark_recovering(nsb, a->roles, (unsigned)role);
	nsb->feature_map |= MD_FEATURE_REPLACEMENT;
	*rp = (struct md_member){.vol = nv, .sb = nsb};
	mm->repl = rp;
	mm->rv = rv;
	mm->data = rv;
	r = md_array_sync(a, atomic_load(&a->active)); /* the replacement's too */
	if (r < 0) {
		/* Recorded in no superblock: the replacement is given up (the
		 * array holds nv now, written no more). */
		log_warn("%s: recording the replacement %s: %s; it is given up", a->vol.name,
		         nv->name, err_detail(r));
		md_repl_fail(a, (unsigned)role, r, false);
		pthread_mutex_unlock(&a->lock);
		md_io_release(a);
		free(used);
		return 0;
	}
	log_info("%s: %s replaces %s in role %u (slot %u), built while serving", a->vol.name,
	         nv->name, member, role, slot);
	int e = md_rec_wake(a);
	pthread_mutex_unlock(&a->lock);
	md_io_release(a);
	free(used);
	if (e != 0)
		log_warn("%s: cannot start the recovery thread: %s", a->vol.name, strerror(e));
	return 0;
out:
	if (held)
		md_io_release(a);
	vol_close(slice);
	free(used);
	free(nsb);
	free(rp);
	return r;
}
