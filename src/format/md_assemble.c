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
 *     returns (md_resync); a read-only one stays marked unclean.
 * Read-only arrays never write.  Assembly writes nothing, except that
 * resync of an unclean array. */
#include "md.h"

#include "core/log.h"
#include "disc/raid.h"
#include "disc/slice.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MD_NEST_MAX 8 /* arrays inside arrays, at most */

/* Features we cannot serve correctly: refuse rather than corrupt. */
#define MD_FEATURE_REFUSED                                                                         \
	(MD_FEATURE_RESHAPE_ACTIVE | MD_FEATURE_JOURNAL | MD_FEATURE_PPL |                         \
	 MD_FEATURE_MULTIPLE_PPLS | MD_FEATURE_CLUSTERED | MD_FEATURE_NEW_OFFSET)

struct md_member {
	struct vol *vol; /* the whole member; NULL when missing */
	struct md_super *sb;
	bool failed;
};

struct md_array {
	struct vol vol;
	struct vol *raid;
	struct md_member *m; /* by role */
	unsigned n;
	int level;
	bool readonly;
	bool unclean; /* found not clean: stays marked for resync */
	atomic_bool active;
	pthread_mutex_t lock;
	uint64_t events;
	uint32_t max_dev;
	uint16_t roles[MD_SB_MAX_DEV];
};

static struct md_array *to_md(struct vol *v)
{
	return container_of(v, struct md_array, vol);
}

/* Write the array state into every live member's superblock: events + 1.
 * Called with a->lock held.  Returns 0 if at least one member took it. */
static int md_array_sync(struct md_array *a, bool active)
{
	int written = 0, last = -EIO;

	a->events++;
	for (unsigned r = 0; r < a->n; r++) {
		struct md_member *mm = &a->m[r];
		struct md_super *sb = mm->sb;
		int e;

		if (!mm->vol || mm->failed)
			continue;
		sb->events = a->events;
		sb->utime = (uint64_t)time(NULL);
		sb->resync_offset = (active || a->unclean) ? 0 : MD_MAX_SECTOR;
		sb->max_dev = a->max_dev;
		memcpy(sb->roles, a->roles, sizeof(a->roles));
		e = md_super_write(mm->vol, sb);
		if (e < 0) {
			log_warn("%s: %s", a->vol.name, err_detail(e));
			last = e;
		} else
			written++;
	}
	return written ? 0 : last;
}

static int md_mark_active(struct md_array *a)
{
	int r = 0;

	if (atomic_load(&a->active))
		return 0;
	pthread_mutex_lock(&a->lock);
	if (!atomic_load(&a->active)) {
		r = md_array_sync(a, true);
		if (r == 0)
			atomic_store(&a->active, true);
	}
	pthread_mutex_unlock(&a->lock);
	return r;
}

static void md_member_failed(void *ctx, unsigned role, int err)
{
	struct md_array *a = ctx;
	struct md_member *mm;

	if (role >= a->n)
		return;
	mm = &a->m[role];
	pthread_mutex_lock(&a->lock);
	if (!mm->failed) {
		mm->failed = true;
		if (mm->sb && mm->sb->dev_number < MD_SB_MAX_DEV)
			a->roles[mm->sb->dev_number] = MD_ROLE_FAULTY;
		log_warn("%s: member %u (%s) marked faulty: %s", a->vol.name, role,
		         mm->vol ? mm->vol->name : "?", strerror(err < 0 ? -err : err));
		if (!a->readonly && md_array_sync(a, atomic_load(&a->active)) < 0)
			log_warn("%s: could not record the failure in any superblock", a->vol.name);
	}
	pthread_mutex_unlock(&a->lock);
}

static int md_read(struct vol *v, void *buf, uint64_t len, uint64_t off)
{
	struct vol *raid = to_md(v)->raid;
	return raid->ops->read(raid, buf, len, off);
}

static int md_view(struct vol *v, uint64_t len, uint64_t off, vol_view_fn fn, void *arg)
{
	return vol_view(to_md(v)->raid, len, off, fn, arg);
}

static int md_write(struct vol *v, const void *buf, uint64_t len, uint64_t off, unsigned flags)
{
	struct md_array *a = to_md(v);
	int r = md_mark_active(a);
	return r < 0 ? r : a->raid->ops->write(a->raid, buf, len, off, flags);
}

static int md_flush(struct vol *v)
{
	return vol_flush(to_md(v)->raid);
}

static int md_trim(struct vol *v, uint64_t len, uint64_t off, unsigned flags)
{
	struct md_array *a = to_md(v);
	int r = md_mark_active(a);
	return r < 0 ? r : vol_trim(a->raid, len, off, flags);
}

static int md_write_zeroes(struct vol *v, uint64_t len, uint64_t off, unsigned flags)
{
	struct md_array *a = to_md(v);
	int r = md_mark_active(a);
	return r < 0 ? r : vol_write_zeroes(a->raid, len, off, flags);
}

static void md_free(struct md_array *a)
{
	for (unsigned r = 0; r < a->n; r++)
		free(a->m[r].sb);
	free(a->m);
	pthread_mutex_destroy(&a->lock);
	vol_fini(&a->vol);
	free(a);
}

static void md_close(struct vol *v)
{
	struct md_array *a = to_md(v);

	if (!a->readonly && atomic_load(&a->active)) {
		/* Data durable first, then the clean mark. */
		int r = vol_flush(a->raid);
		pthread_mutex_lock(&a->lock);
		if (r == 0)
			r = md_array_sync(a, false);
		pthread_mutex_unlock(&a->lock);
		if (r < 0)
			log_warn("%s: could not mark the array clean: %s", v->name, err_detail(r));
	}
	vol_close(a->raid); /* closes the slices; the members are ours */
	for (unsigned r = 0; r < a->n; r++)
		vol_close(a->m[r].vol);
	md_free(a);
}

static const struct vol_ops md_ops = {
    .kind = "md",
    .read = md_read,
    .write = md_write,
    .flush = md_flush,
    .trim = md_trim,
    .write_zeroes = md_write_zeroes,
    .close = md_close,
    .view = md_view,
};

struct vol *md_array_raid(struct vol *v)
{
	return v->ops == &md_ops ? to_md(v)->raid : NULL;
}

/* Make the copies of an array found unclean agree before anyone uses
 * it: read every block (from one copy) and write it back (to all).
 * The array is marked active by the first write and, once this is
 * done, may be marked clean at close.  Runs before the array is
 * served, so no client write can race with it. */
static int md_resync(struct md_array *a)
{
	const uint64_t piece = 1u << 20;
	uint64_t size = a->vol.size;
	void *buf;
	int r = 0;

	if (posix_memalign(&buf, 4096, piece))
		return -ENOMEM;
	log_warn("%s: array was not shut down cleanly; resyncing its %llu bytes", a->vol.name,
	         (unsigned long long)size);
	for (uint64_t off = 0; off < size && r == 0; off += piece) {
		uint64_t len = size - off < piece ? size - off : piece;
		r = vol_read(a->raid, buf, len, off);
		if (r == 0)
			r = vol_write(&a->vol, buf, len, off, 0);
	}
	if (r == 0)
		r = vol_flush(a->raid);
	free(buf);
	if (r < 0)
		return err_set(r, "%s: resync failed: %s", a->vol.name, strerror(-r));
	a->unclean = false;
	return 0;
}

/* One vol being probed: a member, or an array assembled in an earlier
 * round.  sb is set when it holds a superblock. */
struct md_cand {
	struct vol *v;
	struct md_super *sb;
	bool done; /* probed: holds no superblock */
};

static void md_array_name(const struct md_super *sb, char *out, size_t len)
{
	const char *colon = strchr(sb->set_name, ':');
	const char *name = colon ? colon + 1 : sb->set_name;
	char uuid[36];

	if (*name) {
		snprintf(out, len, "md/%s", name);
	} else {
		md_uuid_format(sb->set_uuid, uuid);
		snprintf(out, len, "md/%.8s", uuid);
	}
}

static bool md_same_geometry(const struct md_super *a, const struct md_super *b)
{
	return a->level == b->level && a->layout == b->layout && a->chunk == b->chunk &&
	       a->raid_disks == b->raid_disks &&
	       (a->feature_map & MD_FEATURE_RAID0_LAYOUT) ==
	           (b->feature_map & MD_FEATURE_RAID0_LAYOUT);
}

/* Assemble the k candidates in g[] (one array UUID).  Always consumes
 * their vols and superblocks (closes them on failure). */
static int md_array_open(struct md_cand **g, unsigned k, const struct md_assemble_opts *o,
                         struct vol **out)
{
	struct md_super *fresh = NULL; /* a copy: members' own may be freed */
	struct md_array *a = NULL;
	struct vol **slices = NULL;
	struct raid_geom geom = {0};
	struct raid_events ev;
	char name[48], uuid[36];
	unsigned present = 0, missing = 0;
	bool redundant;
	int r = 0;

	unsigned fi = 0;
	for (unsigned i = 1; i < k; i++)
		if (g[i]->sb->events > g[fi]->sb->events)
			fi = i;
	fresh = malloc(sizeof(*fresh));
	if (!fresh) {
		r = -ENOMEM;
		goto fail;
	}
	*fresh = *g[fi]->sb;
	md_array_name(fresh, name, sizeof(name));
	md_uuid_format(fresh->set_uuid, uuid);
	for (unsigned i = 0; i < k; i++) {
		if (!md_same_geometry(g[i]->sb, fresh)) {
			r = err_set(-EINVAL,
			            "%s: %s and %s carry array %s but disagree on level, layout, "
			            "chunk or device count",
			            name, g[i]->v->name, g[0]->v->name, uuid);
			goto fail;
		}
		if (g[i]->sb->feature_map & MD_FEATURE_REFUSED) {
			r = err_set(-ENOTSUP,
			            "%s: %s uses md features 0x%x (reshape, journal, PPL or "
			            "cluster) that uraid does not support",
			            name, g[i]->v->name,
			            g[i]->sb->feature_map & MD_FEATURE_REFUSED);
			goto fail;
		}
	}
	redundant = fresh->level == 1 || fresh->level == 10 || fresh->level >= 4;
	if (fresh->raid_disks > MD_SB_MAX_DEV) {
		r = err_set(-EINVAL, "%s: %u devices is more than uraid handles", name,
		            fresh->raid_disks);
		goto fail;
	}

	a = calloc(1, sizeof(*a));
	slices = calloc(fresh->raid_disks, sizeof(*slices));
	if (!a || !slices) {
		r = -ENOMEM;
		goto fail;
	}
	a->m = calloc(fresh->raid_disks, sizeof(*a->m));
	if (!a->m) {
		r = -ENOMEM;
		goto fail;
	}
	a->n = fresh->raid_disks;
	a->level = fresh->level;
	a->readonly = o->readonly;
	a->events = fresh->events;
	a->max_dev = fresh->max_dev;
	memcpy(a->roles, fresh->roles, sizeof(a->roles));
	pthread_mutex_init(&a->lock, NULL);

	/* Each member takes the role the freshest superblock gives its slot
	 * (as the kernel does); stale, spare and faulty ones are left out. */
	for (unsigned i = 0; i < k; i++) {
		struct md_super *sb = g[i]->sb;
		const char *mname = g[i]->v->name;
		unsigned slot = sb->dev_number;
		unsigned role = slot < fresh->max_dev ? fresh->roles[slot] : MD_ROLE_SPARE;
		const char *why = NULL;

		if (sb->events + 1 < fresh->events)
			why = "is stale (older events)";
		else if (role == MD_ROLE_FAULTY)
			why = "is marked faulty";
		else if (role >= a->n)
			why = "is a spare";
		else if (sb->feature_map & (MD_FEATURE_REPLACEMENT | MD_FEATURE_RECOVERY_OFFSET))
			why = "was being rebuilt (`uraid rebuild` finishes that)";
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
		if (why) {
			log_warn("%s: %s (events %llu, newest %llu) left out: it %s", name, mname,
			         (unsigned long long)sb->events, (unsigned long long)fresh->events,
			         why);
			vol_close(g[i]->v);
			free(sb);
		} else {
			a->m[role].vol = g[i]->v;
			a->m[role].sb = sb;
		}
		g[i]->v = NULL;
		g[i]->sb = NULL;
	}
	/* A missing role that the freshest superblock still gives to some
	 * device is a surprise (a member not given, or left out above): like
	 * mdadm without --run, start only when asked.  One already recorded
	 * as failed or removed is the array's known state. */
	bool surprise = false;
	char list[256] = "";
	size_t len = 0;
	for (unsigned role = 0; role < a->n; role++) {
		if (a->m[role].vol) {
			present++;
			continue;
		}
		missing++;
		for (unsigned s = 0; s < fresh->max_dev && s < MD_SB_MAX_DEV; s++)
			surprise |= fresh->roles[s] == role;
		if (len < sizeof(list) - 8)
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%u",
			                        len ? "," : "", role);
	}
	if (missing && !redundant) {
		r = err_set(-ENODEV, "%s: %s needs all %u members, %u found (missing role %s)",
		            name, md_level_name(fresh->level), a->n, present, list);
		goto fail;
	}
	if (surprise && !o->run_degraded) {
		r = err_set(-ENODEV,
		            "%s: %u of %u members found (missing role %s); start it degraded with "
		            "--degraded",
		            name, present, a->n, list);
		goto fail;
	}
	/* A slot whose role has no member here (or another member now) is
	 * recorded as faulty at the first superblock update. */
	for (unsigned s = 0; s < a->max_dev && s < MD_SB_MAX_DEV; s++) {
		unsigned role = a->roles[s];
		if (role < a->n && (!a->m[role].vol || a->m[role].sb->dev_number != s))
			a->roles[s] = MD_ROLE_FAULTY;
	}

	geom.level = fresh->level;
	geom.raid_disks = a->n;
	geom.chunk = fresh->chunk * 512;
	geom.layout = fresh->layout;
	if (fresh->level == 1 || fresh->level == 10 || fresh->level == 5 || fresh->level == 6)
		geom.dev_size = fresh->size * 512;
	if (fresh->level == 0 && !(fresh->feature_map & MD_FEATURE_RAID0_LAYOUT)) {
		/* Without a layout only single-zone RAID0 is unambiguous; the
		 * kernel refuses the rest too (since 5.4). */
		for (unsigned role = 1; role < a->n; role++)
			if (a->m[role].sb->data_size / fresh->chunk !=
			    a->m[0].sb->data_size / fresh->chunk) {
				r = err_set(-EINVAL,
				            "%s: raid0 of unequal members without a layout (made "
				            "before Linux 5.4) is ambiguous; refusing it",
				            name);
				goto fail;
			}
		geom.layout = 0;
	}
	if (fresh->level == MD_LEVEL_LINEAR)
		geom.layout = 0;

	for (unsigned role = 0; role < a->n; role++) {
		struct md_member *mm = &a->m[role];
		if (!mm->vol)
			continue;
		r = slice_open(mm->vol, mm->sb->data_offset * 512, mm->sb->data_size * 512, false,
		               mm->vol->name, &slices[role]);
		if (r < 0) {
			r = err_set(r, "%s: %s: cannot cut out the data area", name, mm->vol->name);
			goto fail;
		}
	}
	ev.member_failed = md_member_failed;
	ev.ctx = a;
	r = raid_open(&geom, slices, &ev, name, &a->raid);
	if (r < 0)
		goto fail;
	/* The RAID vol owns the slices now; the members stay ours (the
	 * superblocks are written through them) and md_close() closes them. */
	r = vol_init(&a->vol, &md_ops, name, a->raid->size, a->raid->block_min,
	             a->raid->caps | (o->readonly ? VOL_CAP_READONLY : 0));
	if (r < 0) {
		vol_close(a->raid);
		a->raid = NULL;
		for (unsigned role = 0; role < a->n; role++)
			slices[role] = NULL;
		goto fail;
	}
	a->vol.block_pref = a->raid->block_pref;
	a->vol.block_max = a->raid->block_max;
	log_info("%s: assembled %s (%s) from %u of %u members%s%s", name,
	         md_level_name(fresh->level), uuid, present, a->n, missing ? ", degraded" : "",
	         o->readonly ? ", read-only" : "");
	free(slices);
	bool clean = md_super_clean(fresh);
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
				md_close(&a->vol); /* stays marked unclean */
				return r;
			}
		}
	}
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
			vol_close(a->m[role].vol);
			free(a->m[role].sb);
		}
		free(a->m);
		if (a->max_dev || a->n)
			pthread_mutex_destroy(&a->lock);
		free(a);
	}
	free(slices);
	free(fresh);
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
			c[i].sb = malloc(sizeof(*c[i].sb));
			if (!c[i].sb) {
				r = -ENOMEM;
				goto fail;
			}
			err_clear();
			r = md_super_read(c[i].v, c[i].sb);
			if (r == -ENOENT) {
				free(c[i].sb);
				c[i].sb = NULL;
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
