/* md_admin.c — managing a running md array (md.h): what it is made of
 * and how far a rebuild or check got (md_array_info), failing, removing
 * and adding members, asking for a check.  The superblock rules are
 * md_manage.c's; the gate (md_vol.c) keeps requests off a member being
 * taken away; the work itself runs on md_sync.c's thread. */
#include "md_internal.h"
#include "md_manage.h"
#include "md_sb090.h"

#include "core/clock.h"
#include "core/log.h"
#include "disc/raid/raid_rebuild.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Where a member is: its role, a spare or retired entry.  Called with
 * a->lock held. */
enum md_where { MD_AT_NONE, MD_AT_ROLE, MD_AT_SPARE, MD_AT_RETIRED };

static enum md_where md_find(struct md_array *a, const char *name, struct vol *vol, unsigned *idx)
{
	for (unsigned i = 0; i < a->n; i++)
		if (a->m[i].vol &&
		    (a->m[i].vol == vol || (name && !strcmp(a->m[i].vol->name, name)))) {
			*idx = i;
			return MD_AT_ROLE;
		}
	for (unsigned i = 0; i < a->nspare; i++)
		if (a->spare[i].vol == vol || (name && !strcmp(a->spare[i].vol->name, name))) {
			*idx = i;
			return MD_AT_SPARE;
		}
	for (unsigned i = 0; i < a->nretired; i++)
		if (a->retired[i].vol && (a->retired[i].vol == vol ||
		                          (name && !strcmp(a->retired[i].vol->name, name)))) {
			*idx = i;
			return MD_AT_RETIRED;
		}
	return MD_AT_NONE;
}

static void md_info_add(struct md_array_info *in, struct vol *vol, int role, int slot,
                        enum md_member_state st)
{
	struct md_member_info *mi = &in->m[in->nmembers++];

	snprintf(mi->name, sizeof(mi->name), "%s", vol ? vol->name : "");
	mi->vol = vol;
	mi->role = role;
	mi->slot = slot;
	mi->state = st;
}

int md_array_info(struct vol *v, struct md_array_info *in)
{
	struct md_array *a = md_of(v);

	memset(in, 0, sizeof(*in));
	if (!a)
		return -EINVAL;
	pthread_mutex_lock(&a->lock);
	/* A failed role shows twice: "removed" in its place, faulty after. */
	in->m = calloc(3 * a->n + a->nspare + a->nretired + 1, sizeof(*in->m));
	if (!in->m) {
		pthread_mutex_unlock(&a->lock);
		return -ENOMEM;
	}
	const struct md_super *sb = NULL;
	for (unsigned r = 0; r < a->n && !sb; r++)
		sb = a->m[r].sb;
	for (unsigned i = 0; i < a->nspare && !sb; i++)
		sb = a->spare[i].sb;
	snprintf(in->name, sizeof(in->name), "%s", a->vol.name);
	if (sb) {
		memcpy(in->set_name, sb->set_name, sizeof(in->set_name));
		snprintf(in->version, sizeof(in->version), "%s", md_super_version(sb)->name);
		md_uuid_format(sb->set_uuid, in->uuid);
		in->layout = sb->layout;
		in->chunk = sb->chunk * 512;
	}
	in->level = a->level;
	in->raid_disks = a->n;
	in->array_size = a->vol.size;
	in->dev_size = a->size * 512;
	in->events = a->events;
	in->readonly = a->readonly;
	in->active = atomic_load(&a->active);
	in->failed = raid_failed(a->raid);
	/* Roles in order: the member holding it, or "removed". */
	for (unsigned r = 0; r < a->n; r++) {
		struct md_member *mm = &a->m[r];
		if (!mm->vol || mm->failed) {
			in->degraded = true;
			md_info_add(in, NULL, (int)r, -1, MD_MEMBER_REMOVED);
		} else if (mm->recovering) {
			in->degraded = in->recovering = true;
			in->working_devs++;
			in->spare_devs++;
			md_info_add(in, mm->vol, (int)r, (int)mm->sb->dev_number,
			            MD_MEMBER_REBUILDING);
			in->m[in->nmembers - 1].has_io =
			    raid_member_stats(a->raid, r, &in->m[in->nmembers - 1].io) == 0;
		} else {
			in->active_devs++;
			in->working_devs++;
			md_info_add(in, mm->vol, (int)r, (int)mm->sb->dev_number,
			            MD_MEMBER_IN_SYNC);
			in->m[in->nmembers - 1].has_io =
			    raid_member_stats(a->raid, r, &in->m[in->nmembers - 1].io) == 0;
		}
		/* A replacement being built shows as mdadm --detail shows it:
		 * a spare rebuilding in the role, beside the member. */
		if (mm->repl && !mm->repl->failed) {
			in->recovering = true;
			in->working_devs++;
			in->spare_devs++;
			md_info_add(in, mm->repl->vol, (int)r, (int)mm->repl->sb->dev_number,
			            MD_MEMBER_REBUILDING);
		}
	}
	for (unsigned i = 0; i < a->nspare; i++) {
		in->working_devs++;
		in->spare_devs++;
		md_info_add(in, a->spare[i].vol, -1, (int)a->spare[i].sb->dev_number,
		            MD_MEMBER_SPARE);
	}
	for (unsigned r = 0; r < a->n; r++) {
		struct md_member *mm = &a->m[r];
		if (mm->vol && mm->failed) {
			in->failed_devs++;
			md_info_add(in, mm->vol, -1, mm->sb ? (int)mm->sb->dev_number : -1,
			            MD_MEMBER_FAULTY);
		}
		if (mm->repl && mm->repl->failed) {
			in->failed_devs++;
			md_info_add(in, mm->repl->vol, -1, (int)mm->repl->sb->dev_number,
			            MD_MEMBER_FAULTY);
		}
	}
	if (a->journal.vol) {
		in->working_devs++;
		md_info_add(in, a->journal.vol, -1, (int)a->journal.sb->dev_number,
		            MD_MEMBER_JOURNAL);
	}
	for (unsigned i = 0; i < a->nretired; i++) {
		struct md_member *mm = &a->retired[i];
		if (!mm->vol)
			continue;
		in->failed_devs++;
		md_info_add(in, mm->vol, -1, mm->sb ? (int)mm->sb->dev_number : -1,
		            MD_MEMBER_FAULTY);
	}
	md_io_totals(a, &in->io);
	in->now_ns = clock_now_ns();
	in->checking = a->scrub.running;
	in->check_repair = a->scrub.running ? a->scrub.repair : a->scrub.req == MD_CHECK_REPAIR;
	in->check_pending = a->scrub.req != MD_CHECK_STOP;
	if (a->scrub.running) {
		in->check_total = a->vol.size;
		in->check_done = atomic_load(&a->scrub.pos);
		double secs = (double)(clock_now_ns() - a->scrub.t0_ns) / 1e9;
		in->check_speed = secs > 0 ? (double)in->check_done / secs : 0;
	}
	in->check_ended = a->scrub.ended;
	if (a->scrub.ended) {
		in->check_ended_repair = a->scrub.ended_repair;
		in->check_status = a->scrub.status;
		in->check_mismatched = a->scrub.rep.mismatched;
		in->check_ranges = a->scrub.rep.ranges;
		in->check_repaired = a->scrub.rep.repaired;
		in->check_read_errors = a->scrub.rep.read_errors;
		if (a->scrub.status < 0 && a->scrub.status != -EINTR)
			in->check_done = a->scrub.rep.checked;
	}
	in->readding = a->readd.running;
	in->readds = a->readd.count;
	in->readd_refusals = a->readd.refusals;
	in->readd_chunks = a->readd.chunks;
	in->readd_bytes = a->readd.bytes;
	in->readd_last_chunks = a->readd.last_chunks;
	in->readd_last_bytes = a->readd.last_bytes;
	if (in->recovering && a->readd.running) {
		in->rec_total = a->readd.total;
		in->rec_done = atomic_load(&a->rec.pos);
		double secs = (double)(clock_now_ns() - a->rec.t0_ns) / 1e9;
		in->rec_speed = secs > 0 ? (double)in->rec_done / secs : 0;
	} else if (in->recovering) {
		in->rec_total = a->size * 512;
		in->rec_done = a->rec.running ? atomic_load(&a->rec.pos) : 0;
		if (a->rec.running) {
			double secs = (double)(clock_now_ns() - a->rec.t0_ns) / 1e9;
			uint64_t done = in->rec_done > a->rec.from ? in->rec_done - a->rec.from : 0;
			in->rec_speed = secs > 0 ? (double)done / secs : 0;
		} else {
			/* Not running now: what the superblocks record. */
			for (unsigned r = 0; r < a->n; r++)
				if (a->m[r].vol && a->m[r].recovering)
					in->rec_done = md_manage_recovery_from(a->m[r].sb, a->size);
				else if (a->m[r].repl && !a->m[r].repl->failed)
					in->rec_done =
					    md_manage_recovery_from(a->m[r].repl->sb, a->size);
		}
	}
	pthread_mutex_unlock(&a->lock);
	return 0;
}

void md_array_info_free(struct md_array_info *info)
{
	free(info->m);
	info->m = NULL;
	info->nmembers = 0;
}

/* The running array v and where member is in it, for the management
 * calls that change members: 0 with a->lock held, or -errno with err_set()
 * detail (not an md array, served read-only, no such member), unlocked. */
static int md_locate(struct vol *v, const char *member, struct md_array **ap, enum md_where *at,
                     unsigned *idx)
{
	struct md_array *a = md_of(v);

	if (!a)
		return err_set(-EINVAL, "%s is not an md array", v->name);
	if (a->readonly)
		return err_set(-EROFS, "%s is served read-only: its members are not changed",
		               a->vol.name);
	pthread_mutex_lock(&a->lock);
	*at = md_find(a, member, NULL, idx);
	if (*at == MD_AT_NONE) {
		pthread_mutex_unlock(&a->lock);
		return err_set(-ENOENT, "%s has no member %s", a->vol.name, member);
	}
	*ap = a;
	return 0;
}

int md_array_fail(struct vol *v, const char *member)
{
	struct md_array *a;
	enum md_where at;
	unsigned i;
	int r = md_locate(v, member, &a, &at, &i);

	if (r == -ENOENT && (a = md_of(v))) {
		/* A replacement being built: given up, its role keeps OLD. */
		pthread_mutex_lock(&a->lock);
		bool done = md_repl_fail_named(a, member);
		pthread_mutex_unlock(&a->lock);
		if (done) {
			err_clear();
			return 0;
		}
	}
	if (r < 0)
		return r;
	if (at == MD_AT_RETIRED || (at == MD_AT_ROLE && a->m[i].failed)) {
		pthread_mutex_unlock(&a->lock);
		return 0; /* already faulty */
	}
	if (at == MD_AT_SPARE) {
		/* A faulty spare: out of the standby list, kept until removed. */
		struct md_member *nr = realloc(a->retired, (a->nretired + 1) * sizeof(*nr));
		if (!nr) {
			pthread_mutex_unlock(&a->lock);
			return -ENOMEM;
		}
		a->retired = nr;
		struct md_member sp = a->spare[i];
		memmove(a->spare + i, a->spare + i + 1, (a->nspare - i - 1) * sizeof(*a->spare));
		a->nspare--;
		sp.failed = true;
		if (sp.sb->dev_number < MD_SB_MAX_DEV)
			a->roles[sp.sb->dev_number] = MD_ROLE_FAULTY;
		a->retired[a->nretired++] = sp;
		log_warn("%s: spare %s marked faulty by request", a->vol.name, sp.vol->name);
		md_ev(a, "FailSpare", &sp);
		if (md_array_sync(a, atomic_load(&a->active)) < 0)
			log_warn("%s: could not record the failure in any superblock", a->vol.name);
		pthread_mutex_unlock(&a->lock);
		return 0;
	}
	struct vol *vol = a->m[i].vol;
	bool recovering = a->m[i].recovering, running = a->rec.running && !a->rec.dead;
	a->m[i].user_failed = true; /* not re-added on its own (md_readd.c) */
	pthread_mutex_unlock(&a->lock);
	if (!recovering) {
		/* raid_member_fail decides, atomically, whether the array can
		 * lose it; md_member_failed records it. */
		r = raid_fail_member(a->raid, i);
		if (r == -EBUSY) {
			pthread_mutex_lock(&a->lock);
			if (a->m[i].vol == vol && !a->m[i].failed)
				a->m[i].user_failed = false;
			pthread_mutex_unlock(&a->lock);
		}
		if (r == -EBUSY)
			return err_set(
			    -EBUSY,
			    "%s: refusing to fail %s: the array cannot lose it (it holds "
			    "the last in-sync copy of some data, or the parity has no "
			    "member left to spare)",
			    a->vol.name, member);
		return r;
	}
	if (!running) {
		/* No rebuild runs to notice: end its recovery here. */
		if (a->m[i].slice_given)
			raid_recover_abort(a->raid, i);
		pthread_mutex_lock(&a->lock);
		if (a->m[i].vol == vol && a->m[i].recovering)
			md_rec_target_failed(a, i, -EIO);
		pthread_mutex_unlock(&a->lock);
		return 0;
	}
	/* The rebuild sees the error at its next piece and marks it faulty
	 * (md_rec_run): wait for that, so that the caller sees it done. */
	raid_fail_member(a->raid, i);
	for (int t = 0; t < 3000; t++) {
		pthread_mutex_lock(&a->lock);
		bool done = a->m[i].vol != vol || a->m[i].failed;
		pthread_mutex_unlock(&a->lock);
		if (done)
			return 0;
		usleep(10000);
	}
	return err_set(-ETIMEDOUT,
	               "%s: %s is marked failed, but the rebuild has not let go of it yet",
	               a->vol.name, member);
}

/* Close what md holds of mm (the RAID vol let go of its data area). */
static void md_member_close(struct md_member *mm)
{
	if (mm->slice && !mm->slice_given)
		vol_close(mm->slice);
	vol_close(mm->vol);
	free(mm->sb);
	memset(mm, 0, sizeof(*mm));
}

int md_array_remove(struct vol *v, const char *member)
{
	struct md_array *a;
	enum md_where at;
	unsigned i;
	int r = md_locate(v, member, &a, &at, &i);

	if (r < 0)
		return r;
	if (at == MD_AT_ROLE && a->m[i].readd_probing) {
		pthread_mutex_unlock(&a->lock);
		return err_set(-EBUSY,
		               "%s: %s is being checked for a re-add (its superblock read) right "
		               "now; try again",
		               a->vol.name, member);
	}
	if (at == MD_AT_ROLE && !a->m[i].failed) {
		bool rec = a->m[i].recovering;
		pthread_mutex_unlock(&a->lock);
		return err_set(-EBUSY,
		               "%s: %s is an active member (%s): fail it first (`uraid fail`)",
		               a->vol.name, member, rec ? "being rebuilt" : "in sync");
	}
	struct md_member *mm = at == MD_AT_ROLE    ? &a->m[i]
	                       : at == MD_AT_SPARE ? &a->spare[i]
	                                           : &a->retired[i];
	struct vol *vol = mm->vol, *data = mm->data;
	unsigned slot = mm->sb ? mm->sb->dev_number : MD_SB_MAX_DEV;
	pthread_mutex_unlock(&a->lock);

	if (data) {
		/* The RAID vol may hold its data area (a failed role, or one
		 * it retired): no request may be planned on it meanwhile. */
		r = md_io_hold(a);
		if (r == 0) {
			r = raid_detach_member(a->raid, data);
			md_io_release(a);
		}
		if (r == -ENOENT)
			r = 0; /* never given, or given back */
		if (r < 0)
			return err_set(r,
			               "%s: %s is still in use by the array (a request on it has "
			               "not ended); try again",
			               a->vol.name, member);
	}
	/* Found again: a spare may have taken its role meanwhile (retiring
	 * it), or a rebuild failed it. */
	pthread_mutex_lock(&a->lock);
	at = md_find(a, NULL, vol, &i);
	if (at == MD_AT_ROLE) {
		md_member_close(&a->m[i]);
	} else if (at == MD_AT_SPARE) {
		md_member_close(&a->spare[i]);
		memmove(a->spare + i, a->spare + i + 1, (a->nspare - i - 1) * sizeof(*a->spare));
		a->nspare--;
	} else if (at == MD_AT_RETIRED) {
		md_member_close(&a->retired[i]);
		memmove(a->retired + i, a->retired + i + 1,
		        (a->nretired - i - 1) * sizeof(*a->retired));
		a->nretired--;
	}
	if (slot < MD_SB_MAX_DEV && slot < a->max_dev)
		a->roles[slot] = MD_ROLE_FAULTY; /* as md records a removed device */
	log_info("%s: %s removed", a->vol.name, member);
	if (md_array_sync(a, atomic_load(&a->active)) < 0)
		log_warn("%s: could not record the removal in any superblock", a->vol.name);
	pthread_mutex_unlock(&a->lock);
	return 0;
}

int md_array_can_take(struct md_array *a, struct vol *v, struct vol *nv, const char *what)
{
	if (!a)
		return err_set(-EINVAL, "%s is not an md array", v->name);
	if (a->readonly)
		return err_set(-EROFS, "%s is served read-only: no member can be %s", a->vol.name,
		               what);
	if (a->reshaping)
		return err_set(-EBUSY, "%s: a reshape is under way: try once it ended",
		               a->vol.name);
	if (!a->rec.enabled)
		return err_set(-EINVAL,
		               "%s: %s has no online recovery here (a level without redundancy, or "
		               "served with --no-rebuild)",
		               a->vol.name, md_level_name(a->level));
	for (unsigned i = 0; i < a->n; i++)
		if (a->m[i].sb && md_sb090_is(a->m[i].sb))
			return md_sb090_refuse(a->m[i].sb, a->vol.name, "adding a member");
	for (unsigned i = 0; i < a->n; i++)
		if (a->m[i].sb && md_journal_refuse(a->m[i].sb, a->vol.name, "adding a member") < 0)
			return -ENOTSUP;
	if (nv->block_min > a->vol.block_min)
		return err_set(-EINVAL, "%s: %s has blocks of %u bytes, the array %u", a->vol.name,
		               nv->name, nv->block_min, a->vol.block_min);
	return 0;
}

int md_array_add(struct vol *v, struct vol *nv, bool force, uint8_t devflags)
{
	struct md_array *a = md_of(v);
	struct md_super *nsb = NULL;
	const struct md_super *tmpl = NULL;
	struct vol *tmpl_vol = NULL;
	uint32_t *used = NULL;
	uint64_t end_sb;
	unsigned nused = 0;
	int r;

	if ((r = md_array_can_take(a, v, nv, "added")) < 0)
		return r;
	/* Probed outside the lock (nv may be slow): what it is checked
	 * against (uuid, data offset, size) never changes. */
	nsb = malloc(sizeof(*nsb));
	if (!nsb)
		return -ENOMEM;
	pthread_mutex_lock(&a->lock);
	for (unsigned r2 = 0; r2 < a->n && !tmpl; r2++)
		if (a->m[r2].vol && !a->m[r2].failed && !a->m[r2].recovering)
			tmpl = a->m[r2].sb;
	if (tmpl)
		*nsb = *tmpl;
	pthread_mutex_unlock(&a->lock);
	if (!tmpl) {
		free(nsb);
		return err_set(-ENODEV, "%s: no member in sync to take the superblock from",
		               a->vol.name);
	}
	r = md_manage_probe_new(nv, nv->name, nsb->set_uuid, a->vol.name, force, &end_sb);
	if (r == 0)
		r = md_manage_check_size(nv, nv->name, nsb, a->vol.name);
	if (r < 0) {
		free(nsb);
		return r;
	}
	tmpl = NULL;
	pthread_mutex_lock(&a->lock);
	for (unsigned r2 = 0; r2 < a->n && !tmpl; r2++)
		if (a->m[r2].vol && !a->m[r2].failed && !a->m[r2].recovering) {
			tmpl = a->m[r2].sb;
			tmpl_vol = a->m[r2].vol;
		}
	if (!tmpl) {
		r = err_set(-ENODEV, "%s: no member in sync to take the superblock from",
		            a->vol.name);
		goto out;
	}
	used = calloc(a->n + a->nspare + a->nretired + 1, sizeof(*used));
	if (!used) {
		r = -ENOMEM;
		goto out;
	}
	for (unsigned r2 = 0; r2 < a->n; r2++)
		if (a->m[r2].sb)
			used[nused++] = a->m[r2].sb->dev_number;
	for (unsigned k = 0; k < a->nspare; k++)
		used[nused++] = a->spare[k].sb->dev_number;
	for (unsigned k = 0; k < a->nretired; k++)
		if (a->retired[k].sb)
			used[nused++] = a->retired[k].sb->dev_number;
	r = md_manage_pick_slot(a->roles, a->max_dev, a->n, used, nused, tmpl, a->vol.name);
	if (r < 0)
		goto out;
	unsigned slot = (unsigned)r;
	if (a->nspare == a->spare_cap) {
		struct md_member *ns = realloc(a->spare, (a->spare_cap + 4) * sizeof(*ns));
		if (!ns) {
			r = -ENOMEM;
			goto out;
		}
		a->spare = ns;
		a->spare_cap += 4;
	}
	/* Checked: from here on we write, NEW first. */
	r = md_manage_new_super(nv, nv->name, tmpl, tmpl_vol, slot, end_sb, nsb);
	if (r < 0)
		goto out;
	nsb->devflags = devflags;
	uint32_t old_max = a->max_dev;
	if (slot >= a->max_dev) {
		for (uint32_t k = a->max_dev; k < slot; k++)
			a->roles[k] = MD_ROLE_SPARE;
		a->max_dev = slot + 1;
	}
	a->roles[slot] = MD_ROLE_SPARE;
	md_manage_set_state(nsb, a->events + 1, a->max_dev, a->roles);
	nsb->resync_offset = atomic_load(&a->active) || a->unclean ? 0 : MD_MAX_SECTOR;
	err_clear();
	r = md_super_write(nv, nsb);
	if (r < 0) {
		a->max_dev = old_max;
		goto out;
	}
	a->spare[a->nspare++] = (struct md_member){.vol = nv, .sb = nsb};
	nsb = NULL;
	log_info("%s: %s added as a spare (slot %u)", a->vol.name, nv->name, slot);
	if (md_array_sync(a, atomic_load(&a->active)) < 0)
		log_warn("%s: could not record the new member in any superblock", a->vol.name);
	/* Hot spare logic: it takes a role that is gone, now (a check
	 * running gives way). */
	a->rec.dead = false;
	if (a->scrub.running)
		atomic_store(&a->scrub.stop, true);
	int e = md_rec_wake(a);
	if (e != 0)
		log_warn("%s: cannot start the recovery thread: %s", a->vol.name, strerror(e));
	r = 0;
out:
	pthread_mutex_unlock(&a->lock);
	free(used);
	free(nsb);
	return r;
}

int md_array_check(struct vol *v, enum md_check_action action)
{
	struct md_array *a = md_of(v);
	int r = 0;

	if (!a)
		return err_set(-EINVAL, "%s is not an md array", v->name);
	if (!md_level_redundant(a->level))
		return err_set(-EINVAL, "%s: %s keeps no second copy or parity to check",
		               a->vol.name, md_level_name(a->level));
	if (action != MD_CHECK_STOP && a->reshaping)
		return err_set(-EBUSY, "%s: a reshape is under way: check it once it ended",
		               a->vol.name);
	if (action == MD_CHECK_REPAIR && a->readonly)
		return err_set(-EROFS, "%s is served read-only: it can be checked, not repaired",
		               a->vol.name);
	pthread_mutex_lock(&a->lock);
	if (action != MD_CHECK_STOP && md_degraded(a)) {
		r = err_set(-EINVAL,
		            "%s is degraded: a check needs every copy (add a member first)",
		            a->vol.name);
		goto out;
	}
	if (action == MD_CHECK_STOP) {
		a->scrub.req = MD_CHECK_STOP;
		if (a->scrub.running)
			atomic_store(&a->scrub.stop, true);
		goto out;
	}
	if (a->scrub.running || a->scrub.req != MD_CHECK_STOP) {
		r = err_set(-EBUSY, "%s: a %s is running already", a->vol.name,
		            a->scrub.running && a->scrub.repair ? "repair" : "check");
		goto out;
	}
	a->scrub.req = action;
	/* Arrays without spares or recovery have no thread yet. */
	int e = md_rec_wake(a);
	if (e != 0) {
		a->scrub.req = MD_CHECK_STOP;
		r = err_set(-e, "%s: cannot start the check: %s", a->vol.name, strerror(e));
		goto out;
	}
	log_info("%s: %s asked for", a->vol.name, action == MD_CHECK_REPAIR ? "repair" : "check");
out:
	pthread_mutex_unlock(&a->lock);
	return r;
}
