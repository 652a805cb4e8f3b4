/* md_reshape.c — an md array with a reshape under way (md_reshape.h):
 * the rules its superblocks must keep (md_reshape_parse, as the kernel's
 * raid5 run() checks them), the vol that serves it from its two
 * geometries, and opening it for md_assemble.c (md_reshape_open: each
 * member's old and new data areas cut out, one RAID vol per geometry);
 * the one driver that moves the data (md_reshape_run), in the foreground
 * or in a thread while the array serves.  Starting one offline is
 * md_reshape_grow.c's.  The per-member half of the rules (where the new data area lies) is
 * md.c's md_super_check(). */
#include "md_internal.h"
#include "md_reshape.h"

#include "core/clock.h"
#include "core/exec.h"
#include "core/log.h"
#include "disc/slice.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- the rules ---- */

/* Whether layout is one of level's named layouts. */
static bool md_reshape_layout_ok(const struct md_level_info *lv, uint32_t layout)
{
	for (unsigned i = 0; i < lv->nlayouts; i++)
		if (lv->layouts[i].layout == layout)
			return true;
	return false;
}

/* Whether a raid10 layout is one md reshapes: near or offset copies
 * (raid10.c's check_reshape refuses far ones). */
static bool md_reshape_raid10_ok(uint32_t layout)
{
	return MD_RAID10_FAR(layout) == 1 || (layout & MD_RAID10_OFFSET);
}

/* The far copies of raid10 geometry g: offset layouts keep each device
 * row that many chunks deep (raid10.c's first_dev_address and
 * last_dev_address multiply by them); 1 for near ones. */
static uint64_t md_reshape_raid10_far(const struct raid_geom *g)
{
	return MD_RAID10_FAR(g->layout) ? MD_RAID10_FAR(g->layout) : 1;
}

uint64_t md_reshape_geom_size(const struct raid_geom *g, uint64_t dev, uint64_t chunk)
{
	if (g->level == 10) {
		/* calc_sectors(): the array's chunks, then the used chunks per
		 * device (rounded up), then raid10_size() of those. */
		uint64_t nc = MD_RAID10_NEAR(g->layout), fc = md_reshape_raid10_far(g);
		uint64_t d = g->raid_disks, chunks = dev / g->chunk / fc * d / nc;
		uint64_t used = (chunks * nc * fc + d - 1) / d;
		return used / fc * d / nc * g->chunk;
	}
	if (!md_level_parity(g->level))
		return 0;
	return dev / chunk * chunk * (g->raid_disks - md_level_parity(g->level));
}

uint64_t md_reshape_dev_first(const struct raid_geom *g, uint64_t a)
{
	if (g->level == 10)
		return a / g->chunk * MD_RAID10_NEAR(g->layout) / g->raid_disks * g->chunk *
		       md_reshape_raid10_far(g);
	return a / (g->chunk * (g->raid_disks - md_level_parity(g->level))) * g->chunk;
}

uint64_t md_reshape_dev_end(const struct raid_geom *g, uint64_t a)
{
	uint64_t d = g->raid_disks;

	if (g->level == 10) {
		uint64_t c = (a + g->chunk - 1) / g->chunk * MD_RAID10_NEAR(g->layout);
		return (c + d - 1) / d * g->chunk * md_reshape_raid10_far(g);
	}
	uint64_t row = g->chunk * (d - md_level_parity(g->level));
	return (a + row - 1) / row * g->chunk;
}

uint64_t md_reshape_least_shift(const struct md_reshape *rs)
{
	uint64_t a = rs->from.chunk, b = rs->to.chunk;

	if (rs->from.level == 10) {
		a *= md_reshape_raid10_far(&rs->from);
		b *= md_reshape_raid10_far(&rs->to);
	}
	return a > b ? a : b;
}

/* The level's half of md_reshape_parse: raid5/6 the same level, a layout
 * it names; raid10 near or offset copies, the same layout (md keeps the
 * copies; a switch between near and offset, which md takes, uraid does
 * not continue: md_reshape_to_check), at least as many devices as
 * copies, before and after. */
static int md_reshape_parse_level(const struct md_super *fresh, const struct md_level_info *lv,
                                  int64_t old_disks, const char *name)
{
	if (fresh->level == 10) {
		uint32_t nc = MD_RAID10_NEAR(fresh->layout) * MD_RAID10_FAR(fresh->layout);
		if (!md_reshape_raid10_ok(fresh->layout) || fresh->new_layout != fresh->layout)
			return err_set(
			    -ENOTSUP,
			    "%s: md records a reshape of a raid10 from layout 0x%x to "
			    "0x%x; uraid reshapes raid10 near and offset layouts, keeping the "
			    "layout",
			    name, fresh->layout, fresh->new_layout);
		if (nc < 1 || old_disks < nc || fresh->raid_disks < nc)
			return err_set(-EINVAL,
			               "%s: md reshape's delta_disks %d does not match the roles: "
			               "%lld -> %u devices, fewer than the %u copies",
			               name, fresh->delta_disks, (long long)old_disks,
			               fresh->raid_disks, nc);
		return 0;
	}
	if (fresh->level == 4) {
		/* Its parity is last whatever the word says (the kernel's
		 * raid0 grow writes 5 to both): nothing to change. */
		if (fresh->new_layout != fresh->layout)
			return err_set(-EINVAL,
			               "%s: md records a reshape of a raid4 from layout %u to %u; "
			               "a raid4 has no layout to change",
			               name, fresh->layout, fresh->new_layout);
		return 0;
	}
	if (!md_reshape_layout_ok(lv, fresh->new_layout))
		return err_set(-EINVAL, "%s: md reshape's new layout %u is not one %s takes", name,
		               fresh->new_layout, lv->name);
	return 0;
}

int md_reshape_parse(const struct md_super *fresh, const char *name, struct md_reshape *out)
{
	const struct md_level_info *lv = md_level_info(fresh->level);
	int64_t old_disks = (int64_t)fresh->raid_disks - fresh->delta_disks;
	uint64_t chunk_s, old_size, new_size, align;
	int r;

	memset(out, 0, sizeof(*out));
	if (!lv || (!lv->parity && fresh->level != 10))
		return err_set(-ENOTSUP,
		               "%s: md records a reshape of a %s array, which uraid does not "
		               "reshape (raid4, raid5, raid6 and raid10 only)",
		               name, lv ? lv->name : "unknown");
	if (fresh->new_level != fresh->level)
		return err_set(-ENOTSUP,
		               "%s: md records a reshape from level %d to level %d, which uraid "
		               "does not continue (nor does the kernel)",
		               name, fresh->level, fresh->new_level);
	if (fresh->feature_map & (MD_FEATURE_ANY_PPL | MD_FEATURE_JOURNAL))
		return err_set(-ENOTSUP, "%s: a reshape of an array with a PPL or a journal", name);
	if (old_disks < (int64_t)lv->min_disks || old_disks >= MD_SB_MAX_DEV)
		return err_set(-EINVAL,
		               "%s: md reshape's delta_disks %d does not match the roles: %u "
		               "devices now makes %lld before (%s needs at least %u)",
		               name, fresh->delta_disks, fresh->raid_disks, (long long)old_disks,
		               lv->name, lv->min_disks);
	out->slots =
	    fresh->raid_disks > (uint64_t)old_disks ? fresh->raid_disks : (unsigned)old_disks;
	for (unsigned s = 0; s < fresh->max_dev && s < MD_SB_MAX_DEV; s++) {
		unsigned role = fresh->roles[s];
		if (role < MD_ROLE_MAX && role >= out->slots)
			return err_set(-EINVAL,
			               "%s: md reshape's delta_disks %d does not match the roles: "
			               "slot %u has role %u, beyond both the old %lld and the new "
			               "%u devices",
			               name, fresh->delta_disks, s, role, (long long)old_disks,
			               fresh->raid_disks);
	}
	r = md_reshape_parse_level(fresh, lv, old_disks, name);
	if (r < 0)
		return r;
	if (fresh->new_chunk == 0 || fresh->new_chunk > UINT32_MAX / 512 || fresh->new_chunk % 8 ||
	    (fresh->level == 10 && (fresh->new_chunk & (fresh->new_chunk - 1))))
		return err_set(-EINVAL, "%s: md reshape's new chunk %u sectors is not one %s takes",
		               name, fresh->new_chunk, lv->name);
	if (fresh->delta_disks == 0 && fresh->new_layout == fresh->layout &&
	    fresh->new_chunk == fresh->chunk)
		return err_set(-EINVAL,
		               "%s: md records a reshape that changes nothing (same devices, "
		               "layout and chunk)",
		               name);
	out->from = (struct raid_geom){.level = fresh->level,
	                               .layout = fresh->layout,
	                               .chunk = fresh->chunk * 512,
	                               .raid_disks = (unsigned)old_disks,
	                               .dev_size = fresh->size * 512};
	out->to = (struct raid_geom){.level = fresh->level,
	                             .layout = fresh->new_layout,
	                             .chunk = fresh->new_chunk * 512,
	                             .raid_disks = fresh->raid_disks,
	                             .dev_size = fresh->size * 512};
	/* raid5_size(): the used size in whole chunks of both geometries
	 * (raid10's each in its own). */
	chunk_s = fresh->chunk > fresh->new_chunk ? fresh->chunk : fresh->new_chunk;
	old_size = md_reshape_geom_size(&out->from, fresh->size * 512, chunk_s * 512) / 512;
	new_size = md_reshape_geom_size(&out->to, fresh->size * 512, chunk_s * 512) / 512;
	if (fresh->reshape_position > (old_size > new_size ? old_size : new_size))
		return err_set(-EINVAL,
		               "%s: md reshape_position %llu is past the end of the array (%llu "
		               "sectors before, %llu after)",
		               name, (unsigned long long)fresh->reshape_position,
		               (unsigned long long)old_size, (unsigned long long)new_size);
	/* raid5 moves whole stripes of the new geometry; raid10 copies
	 * pages, stopping anywhere (reshape_request's comment). */
	align = fresh->level == 10 ? 8 : chunk_s * (fresh->raid_disks - lv->parity);
	if (fresh->reshape_position % align)
		return err_set(-EINVAL,
		               "%s: md reshape_position %llu is not on a %s of the new geometry "
		               "(%llu sectors)",
		               name, (unsigned long long)fresh->reshape_position,
		               fresh->level == 10 ? "page" : "stripe boundary",
		               (unsigned long long)align);
	out->pos = fresh->reshape_position * 512;
	/* As super_1_validate reads it: fewer devices run backwards whatever
	 * the bit says (the kernel writes it only when delta_disks is 0). */
	out->backwards =
	    fresh->delta_disks < 0 ||
	    (fresh->delta_disks == 0 && (fresh->feature_map & MD_FEATURE_RESHAPE_BACKWARDS));
	out->size = (old_size < new_size ? old_size : new_size) * 512;
	out->from_end = old_size * 512;
	out->to_end = new_size * 512;
	return 0;
}

int md_reshape_same(const struct md_super *sb, const char *mname, const struct md_super *fresh,
                    const char *fname, const char *name)
{
	const uint32_t bits = MD_FEATURE_RESHAPE_ACTIVE | MD_FEATURE_RESHAPE_BACKWARDS;

	if ((sb->feature_map & bits) != (fresh->feature_map & bits) ||
	    sb->delta_disks != fresh->delta_disks || sb->new_level != fresh->new_level ||
	    sb->new_layout != fresh->new_layout || sb->new_chunk != fresh->new_chunk)
		return err_set(-EINVAL, "%s: %s and %s disagree on the reshape under way", name,
		               mname, fname);
	return 0;
}

void md_reshape_sb_finish(struct md_super *sb, bool rebuilt)
{
	uint64_t off, size;

	md_super_new_data_area(sb, &off, &size);
	sb->data_offset = off;
	sb->data_size = size;
	sb->feature_map &= ~MD_FEATURE_RESHAPE;
	if (rebuilt) {
		sb->feature_map &= ~MD_FEATURE_RECOVERY_OFFSET;
		sb->recovery_offset = 0;
	}
	sb->level = sb->new_level;
	sb->layout = sb->new_layout;
	sb->chunk = sb->new_chunk;
	sb->delta_disks = 0;
	sb->new_offset = 0;
	sb->reshape_position = 0;
}

int md_reshape_catch_up(struct md_super *sb, const char *mname, const struct md_super *fresh,
                        const char *fname, const char *name)
{
	unsigned slot = sb->dev_number;
	unsigned role =
	    slot < fresh->max_dev && slot < MD_SB_MAX_DEV ? fresh->roles[slot] : MD_ROLE_SPARE;
	struct md_reshape rs;
	struct md_super t;
	int r;

	/* Older still, or failed since: left out by the usual rules. */
	if (!(sb->feature_map & MD_FEATURE_RESHAPE_ACTIVE) ||
	    (fresh->feature_map & MD_FEATURE_RESHAPE_ACTIVE) || sb->events + 1 < fresh->events ||
	    role == MD_ROLE_FAULTY)
		return 0;
	if (sb->events >= fresh->events)
		return err_set(-EINVAL,
		               "%s: %s records a reshape under way and %s none, both at events "
		               "%llu: no finish leaves that, and uraid cannot tell which "
		               "geometry holds the data",
		               name, mname, fname, (unsigned long long)fresh->events);
	r = md_reshape_parse(sb, mname, &rs);
	if (r < 0)
		return err_set(
		    r, "%s: %s missed the end of the reshape, and its record of it is bad: %s",
		    name, mname, err_detail(r));
	t = *sb;
	md_reshape_sb_finish(&t, role < fresh->raid_disks);
	if (t.level != fresh->level || t.layout != fresh->layout || t.chunk != fresh->chunk ||
	    t.raid_disks != fresh->raid_disks || t.size != fresh->size)
		return err_set(-EINVAL,
		               "%s: %s (events %llu) records a reshape to %u devices, layout %u, "
		               "chunk %u KiB, and %s (events %llu) the array finished as %u "
		               "devices, layout %u, chunk %u KiB: not the end of that reshape",
		               name, mname, (unsigned long long)sb->events, t.raid_disks, t.layout,
		               t.chunk / 2, fname, (unsigned long long)fresh->events,
		               fresh->raid_disks, fresh->layout, fresh->chunk / 2);
	*sb = t;
	return 1;
}

/* ---- the vol ----
 * Requests count themselves in (inflight) under the lock; a write into
 * the window the driver is moving or has read ahead, or into what it
 * moved since the superblocks last recorded the position, [safe, pos +
 * win), waits until that is recorded (a crash would move it again from
 * its old copy, and the copy read ahead would miss it).  At each window's start the
 * driver drains every request in flight (new ones wait meanwhile): one that chose the old geometry
 * before the previous move must not land where the next move writes.
 * Reads of the window need not wait: the move writes the new geometry
 * only where the old one holds bytes already moved (md_reshape_run). */

struct md_reshape_vol {
	struct vol vol;
	struct vol *from, *to;
	bool backwards;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint64_t pos, win; /* with lock */
	uint64_t safe;     /* the position the superblocks record (<= pos) */
	unsigned inflight;
	bool draining;
	/* A write went to the old geometry since the driver last flushed it:
	 * its write-behind may hold bytes the members do not have yet. */
	atomic_bool from_dirty;
};

static struct md_reshape_vol *to_rv(struct vol *v)
{
	return container_of(v, struct md_reshape_vol, vol);
}

/* The geometry holding array byte off, and how many bytes from off on it
 * holds (up to len); pos is x->pos as the request saw it. */
static struct vol *rv_place(struct md_reshape_vol *x, uint64_t pos, uint64_t off, uint64_t len,
                            uint64_t *n)
{
	bool below = off < pos;

	*n = below && len > pos - off ? pos - off : len;
	return below != x->backwards ? x->to : x->from;
}

/* Whether a write of [off, off+len) must wait (with x->lock): it touches
 * the window being moved or what was moved since the superblocks last
 * recorded the position, [safe, pos + win) forwards, [pos - win, safe)
 * backwards. */
static bool rv_guarded(const struct md_reshape_vol *x, uint64_t off, uint64_t len)
{
	if (x->backwards)
		return x->pos - x->win < x->safe && off < x->safe && off + len > x->pos - x->win;
	return x->pos + x->win > x->safe && off < x->pos + x->win && off + len > x->safe;
}

/* Count a request of [off, off+len) in (write: it waits out the window);
 * returns the position it goes by. */
static uint64_t rv_enter(struct md_reshape_vol *x, uint64_t off, uint64_t len, bool write)
{
	uint64_t pos;

	pthread_mutex_lock(&x->lock);
	while (x->draining || (write && rv_guarded(x, off, len)))
		pthread_cond_wait(&x->cond, &x->lock);
	x->inflight++;
	pos = x->pos;
	pthread_mutex_unlock(&x->lock);
	return pos;
}

static int rv_leave(struct md_reshape_vol *x, int r)
{
	pthread_mutex_lock(&x->lock);
	if (--x->inflight == 0)
		pthread_cond_broadcast(&x->cond);
	pthread_mutex_unlock(&x->lock);
	return r;
}

static int rv_read(struct vol *v, void *buf, uint64_t len, uint64_t off)
{
	struct md_reshape_vol *x = to_rv(v);
	uint64_t pos = rv_enter(x, off, len, false), n;
	int r = 0;

	while (len && r == 0) {
		struct vol *g = rv_place(x, pos, off, len, &n);
		r = g->ops->read(g, buf, n, off);
		buf = (char *)buf + n;
		off += n;
		len -= n;
	}
	return rv_leave(x, r);
}

static int rv_write(struct vol *v, const void *buf, uint64_t len, uint64_t off, unsigned flags)
{
	struct md_reshape_vol *x = to_rv(v);
	uint64_t pos = rv_enter(x, off, len, true), n;
	bool split = off < pos && off + len > pos;
	int r = 0;

	/* Split across the position, FUA goes on neither piece: a flush of
	 * both after (vol.h). */
	while (len && r == 0) {
		struct vol *g = rv_place(x, pos, off, len, &n);
		r = g->ops->write(g, buf, n, off, split ? flags & ~VOL_FUA : flags);
		/* Once it returned: a window that begins after it flushes it out
		 * of the old geometry's write-behind (md_reshape_raw_window). */
		if (g == x->from)
			atomic_store(&x->from_dirty, true);
		buf = (const char *)buf + n;
		off += n;
		len -= n;
	}
	if (r == 0 && split && (flags & VOL_FUA)) {
		r = vol_flush(x->from);
		if (r == 0)
			r = vol_flush(x->to);
	}
	return rv_leave(x, r);
}

static int rv_flush(struct vol *v)
{
	struct md_reshape_vol *x = to_rv(v);
	int r = vol_flush(x->from), r2 = vol_flush(x->to);

	return r < 0 ? r : r2;
}

static void rv_close(struct vol *v)
{
	struct md_reshape_vol *x = to_rv(v);

	vol_close(x->from);
	vol_close(x->to);
	pthread_mutex_destroy(&x->lock);
	pthread_cond_destroy(&x->cond);
	vol_fini(&x->vol);
	free(x);
}

static const struct vol_ops md_reshape_ops = {
    .kind = "md-reshape",
    .read = rv_read,
    .write = rv_write,
    .flush = rv_flush,
    .close = rv_close,
};

/* The reshape vol over from and to; on failure they stay the caller's. */
static int rv_new(struct vol *from, struct vol *to, const struct md_reshape *rs, bool readonly,
                  const char *name, struct vol **out)
{
	struct md_reshape_vol *x;
	uint32_t bmin = from->block_min > to->block_min ? from->block_min : to->block_min;
	uint64_t size = rs->size;
	unsigned caps = (from->caps | to->caps) & (VOL_CAP_FLUSH | VOL_CAP_READONLY);
	int r;

	if (size > from->size)
		size = from->size;
	if (size > to->size)
		size = to->size;
	size -= size % bmin;
	if (rs->pos % bmin)
		return err_set(-EINVAL, "%s: reshape position %llu is not a multiple of %u bytes",
		               name, (unsigned long long)rs->pos, bmin);
	if (!(x = calloc(1, sizeof(*x))))
		return -ENOMEM;
	r = vol_init(&x->vol, &md_reshape_ops, name, size, bmin,
	             caps | (readonly ? VOL_CAP_READONLY : 0));
	if (r < 0) {
		free(x);
		return r;
	}
	x->vol.block_pref = from->block_pref > to->block_pref ? from->block_pref : to->block_pref;
	x->vol.block_max = from->block_max < to->block_max ? from->block_max : to->block_max;
	x->from = from;
	x->to = to;
	x->pos = x->safe = rs->pos;
	x->backwards = rs->backwards;
	pthread_mutex_init(&x->lock, NULL);
	pthread_cond_init(&x->cond, NULL);
	*out = &x->vol;
	return 0;
}

int md_reshape_vol_open(struct vol *from, struct vol *to, const struct md_reshape *rs,
                        bool readonly, const char *name, struct vol **out)
{
	int r = rv_new(from, to, rs, readonly, name, out);

	if (r < 0) {
		vol_close(from);
		vol_close(to);
	}
	return r;
}

/* ---- opening it (md_assemble.c) ---- */

/* The RAID vol of geometry g over the data areas of a's members in
 * roles 0..g->raid_disks (missing ones left out): the new ones (newer:
 * md_super_new_data_area) or the old ones.  areas[] (a->n entries) gets
 * the slices the vol took.  0 or -errno with err_set() naming name. */
static int md_reshape_raid(struct md_array *a, const struct raid_geom *g, bool newer,
                           const char *name, struct vol **areas, struct vol **out)
{
	struct raid_events ev = {.member_failed = md_member_failed, .ctx = a};
	int r = 0;

	for (unsigned role = 0; role < g->raid_disks && role < a->n && r == 0; role++) {
		struct md_member *mm = &a->m[role];
		uint64_t off = mm->vol ? mm->sb->data_offset : 0,
		         size = mm->vol ? mm->sb->data_size : 0;
		if (!mm->vol)
			continue;
		/* One being rebuilt by the reshape (raid5_start_reshape's spare
		 * in a missing role): in sync in the new geometry below the
		 * position, which is all of it the reshape vol reads; missing
		 * in the old one. */
		if (mm->recovering && !newer)
			continue;
		if (newer)
			md_super_new_data_area(mm->sb, &off, &size);
		r = slice_open(mm->vol, off * 512, size * 512, false, mm->vol->name, &areas[role]);
		if (r < 0)
			r = err_set(r, "%s: %s: cannot cut out the data areas", name,
			            mm->vol->name);
	}
	if (r == 0)
		r = raid_open(g, areas, &ev, name, out);
	if (r < 0)
		for (unsigned role = 0; role < a->n; role++) {
			vol_close(areas[role]);
			areas[role] = NULL;
		}
	return r;
}

bool md_reshape_parity_only(const struct md_array *a, const struct md_reshape *rs)
{
	const struct raid_geom *gs[2] = {&rs->from, &rs->to};
	uint32_t pl;

	if (md_layout_parse(5, "parity-last", &pl) < 0)
		return false;
	for (unsigned k = 0; k < 2; k++) {
		const struct raid_geom *g = gs[k];
		for (unsigned role = 0; role < g->raid_disks; role++) {
			bool held = role < a->n && a->m[role].vol && (k || !a->m[role].recovering);
			bool parity_last = g->level == 4 || (g->level == 5 && g->layout == pl);
			if (!held && (!parity_last || role + 1 != g->raid_disks))
				return false;
		}
	}
	return true;
}

int md_reshape_open(struct md_array *a, const struct md_reshape *rs, const char *name)
{
	struct vol **from = calloc(a->n, sizeof(*from)), **to = calloc(a->n, sizeof(*to));
	struct vol *vfrom = NULL, *vto = NULL;
	int r = 0;

	if (!from || !to) {
		r = -ENOMEM;
		goto out;
	}
	/* Backwards md never has a member part-way in sync (raid5.c run()). */
	for (unsigned role = 0; role < a->n && rs->backwards; role++)
		if (a->m[role].vol && a->m[role].recovering) {
			r = err_set(-ENOTSUP, "%s: %s is being rebuilt during a backwards reshape",
			            name, a->m[role].vol->name);
			goto out;
		}
	r = md_reshape_raid(a, &rs->from, false, name, from, &vfrom);
	if (r < 0)
		goto out;
	r = md_reshape_raid(a, &rs->to, true, name, to, &vto);
	if (r < 0) {
		vol_close(vfrom);
		goto out;
	}
	r = md_reshape_vol_open(vfrom, vto, rs, a->readonly, name, &a->raid);
	if (r < 0)
		goto out;
	for (unsigned role = 0; role < a->n; role++) {
		a->m[role].data = from[role];
		a->m[role].rs_to = to[role];
	}
	a->reshape = *rs;
	a->reshaping = true;
	r = md_vol_init(a, name, a->readonly);
	if (r < 0) {
		vol_close(a->raid);
		a->raid = NULL;
	}
out:
	free(from);
	free(to);
	return r;
}

int md_reshape_begin(struct md_array *a, const struct md_reshape *rs)
{
	struct vol **to = calloc(a->n, sizeof(*to)), *vto = NULL, *rv = NULL;
	int r = to ? 0 : -ENOMEM;

	if (r == 0)
		r = md_reshape_raid(a, &rs->to, true, a->vol.name, to, &vto);
	if (r == 0) {
		r = rv_new(a->raid, vto, rs, false, a->vol.name, &rv);
		if (r < 0)
			vol_close(vto);
	}
	if (r == 0 && rv->size < a->vol.size) {
		r = err_set(
		    -EINVAL,
		    "%s: the reshape would serve %llu bytes, fewer than the %llu served now",
		    a->vol.name, (unsigned long long)rv->size, (unsigned long long)a->vol.size);
		to_rv(rv)->from = NULL; /* still a->raid */
		vol_close(rv);
	}
	if (r == 0) {
		a->raid = rv;
		for (unsigned role = 0; role < a->n; role++)
			a->m[role].rs_to = to[role];
		a->reshape = *rs;
		a->reshaping = true;
		md_bm_reshape(a, false);
	}
	free(to);
	return r;
}

/* ---- moving the data (md_reshape_run) ---- */

/* The largest window at pos, at most want bytes in whole new stripes of
 * unit bytes, whose new-geometry writes stay below the old geometry's
 * bytes a restart would still need (those of the old stripe holding safe,
 * the position the superblocks record, and after):
 * the members' new data area starts shift bytes before the old one.  A
 * crash during the move then leaves the old copy of [pos, ...) whole for
 * the next start, which redoes the window.  0 when not even one stripe
 * fits (no room: the kernel would need a backup file). */
static uint64_t md_reshape_window(const struct md_reshape *rs, uint64_t safe, uint64_t pos,
                                  uint64_t want, uint64_t unit, uint64_t shift)
{
	uint64_t old_start = md_reshape_dev_first(&rs->from, safe);

	if (safe >= rs->from_end)
		return want / unit * unit; /* past the old array: no old byte is needed */
	for (uint64_t w = want / unit * unit; w >= unit; w -= unit)
		if (md_reshape_dev_end(&rs->to, pos + w) <= old_start + shift)
			return w;
	return 0;
}

/* The superblocks once the reshape has reached the end, in one round
 * (events + 1, as the kernel's md_finish_reshape and md_update_sb): a
 * power cut during it leaves some members finished and the others one
 * event behind with the last record, which assembly reads as finished
 * (md_reshape_catch_up): the data was flushed in the new geometry before
 * the round began. */
static int md_reshape_finish(struct md_array *a)
{
	for (unsigned role = 0; role < a->n; role++) {
		struct md_super *sb = a->m[role].sb;
		if (!a->m[role].vol || !sb)
			continue;
		/* Rebuilt by the reshape: in sync now (md_do_sync's end). */
		bool rebuilt = a->m[role].recovering && role < a->reshape.to.raid_disks;
		md_reshape_sb_finish(sb, rebuilt);
		if (rebuilt)
			a->m[role].recovering = false;
	}
	/* Shrunk: the roles past the new count are spares (raid5's
	 * finish_reshape takes them out of the array). */
	for (unsigned s = 0; s < a->max_dev && s < MD_SB_MAX_DEV; s++)
		if (a->roles[s] < MD_ROLE_MAX && a->roles[s] >= a->reshape.to.raid_disks)
			a->roles[s] = MD_ROLE_SPARE;
	return md_array_sync(a, atomic_load(&a->active));
}

#define MD_RESHAPE_WINDOW_MAX (32u << 20) /* array bytes moved at a time, at most */
/* Between two records of the position, at most: array bytes moved, and
 * time (raid5's reshape_request checkpoints every 10 s).  A record costs
 * a flush and a superblock write on every member, each a seek away from
 * the data; a crash redoes at most this much. */
#define MD_RESHAPE_RECORD_MAX (256u << 20)
#define MD_RESHAPE_RECORD_NS 10000000000ull

/* The new geometry flushed, then pos recorded in every superblock
 * (events + 1), as the kernel's reshape_safe: what a restart starts from. */
static int md_reshape_record(struct md_array *a, struct md_reshape_vol *x, uint64_t pos)
{
	int r = vol_flush(x->to);

	if (r == 0) {
		pthread_mutex_lock(&a->lock);
		for (unsigned role = 0; role < a->n; role++) {
			struct md_super *sb = a->m[role].sb;
			if (!sb)
				continue;
			sb->reshape_position = pos / 512;
			/* One the reshape rebuilds is in sync below the new
			 * geometry's rows written (raid5 reshape_request). */
			uint64_t in_sync = md_reshape_dev_end(&a->reshape.to, pos) / 512;
			if (a->m[role].recovering && !a->reshape.backwards &&
			    sb->recovery_offset < in_sync)
				sb->recovery_offset = in_sync;
		}
		r = md_array_sync(a, atomic_load(&a->active));
		pthread_mutex_unlock(&a->lock);
	}
	if (r == 0) {
		pthread_mutex_lock(&x->lock);
		x->safe = pos;
		pthread_cond_broadcast(&x->cond);
		pthread_mutex_unlock(&x->lock);
	}
	return r;
}

/* Reading the old geometry straight from its members: each member's part
 * of a window (its chunks of the window's rows, parity between them
 * included) in one request, all members at once, then the data chunks
 * put in array order.  A disk then reads one run per window instead of a
 * request per chunk in whatever order the RAID read's pieces reach it
 * (section 20 of BENCHMARKS.md: a head going back and forth); the parity
 * read along costs what skipping it would (a forward gap). */
struct md_reshape_raw {
	unsigned n;        /* roles of the old geometry */
	struct vol **area; /* their old data areas */
	char **mbuf;       /* per role, cap bytes */
	uint64_t cap, *lo, *hi;
};

static int md_reshape_raw_read(void *arg, unsigned i)
{
	struct md_reshape_raw *rr = arg;

	if (rr->hi[i] <= rr->lo[i])
		return 0;
	return vol_read(rr->area[i], rr->mbuf[i], rr->hi[i] - rr->lo[i], rr->lo[i]);
}

static void md_reshape_raw_free(struct md_reshape_raw *rr)
{
	for (unsigned i = 0; rr->mbuf && i < rr->n; i++)
		free(rr->mbuf[i]);
	free(rr->mbuf);
	free(rr->area);
	free(rr->lo);
	free(rr->hi);
	memset(rr, 0, sizeof(*rr));
}

/* Set rr up for windows of at most wmax array bytes, when every role of
 * the old geometry is there and in sync (else 0 with rr->n 0: the RAID
 * vol's own reads, which reconstruct). */
static int md_reshape_raw_init(struct md_array *a, struct md_reshape_raw *rr, uint64_t wmax)
{
	const struct raid_geom *g = &a->reshape.from;
	unsigned nd = g->raid_disks - md_level_parity(g->level);

	memset(rr, 0, sizeof(*rr));
	if (!md_level_parity(g->level))
		return 0; /* raid10: its reads go to one copy of each chunk already */
	for (unsigned role = 0; role < g->raid_disks; role++)
		if (role >= a->n || !a->m[role].data || a->m[role].failed)
			return 0;
	rr->cap = (wmax / (g->chunk * nd) + 2) * g->chunk;
	rr->area = calloc(g->raid_disks, sizeof(*rr->area));
	rr->mbuf = calloc(g->raid_disks, sizeof(*rr->mbuf));
	rr->lo = calloc(g->raid_disks, sizeof(*rr->lo));
	rr->hi = calloc(g->raid_disks, sizeof(*rr->hi));
	if (!rr->area || !rr->mbuf || !rr->lo || !rr->hi)
		goto nomem;
	rr->n = g->raid_disks;
	for (unsigned role = 0; role < rr->n; role++) {
		rr->area[role] = a->m[role].data;
		if (!(rr->mbuf[role] = vol_buf_alloc(rr->cap)))
			goto nomem;
	}
	return 0;
nomem:
	md_reshape_raw_free(rr);
	return -ENOMEM;
}

/* Whether a member rr reads directly has failed since rr was set up. */
static bool md_reshape_raw_failed(struct md_array *a, const struct md_reshape_raw *rr)
{
	bool failed = false;

	pthread_mutex_lock(&a->lock);
	for (unsigned role = 0; role < rr->n && !failed; role++)
		failed = a->m[role].failed;
	pthread_mutex_unlock(&a->lock);
	return failed;
}

/* Array bytes [pos, pos+len) of the old geometry into buf, through rr. */
static int md_reshape_raw_window(struct md_reshape_vol *x, struct md_reshape_raw *rr,
                                 uint64_t chunk, char *buf, uint64_t len, uint64_t pos)
{
	unsigned role;
	uint64_t moff;
	int p, q, r = 0;

	/* What a client wrote to the old geometry may still be in its
	 * write-behind: on the members first. */
	if (atomic_exchange(&x->from_dirty, false) && (r = vol_flush(x->from)) < 0)
		return r;
	for (unsigned i = 0; i < rr->n; i++)
		rr->lo[i] = UINT64_MAX, rr->hi[i] = 0;
	for (uint64_t c = pos - pos % chunk; c < pos + len && r == 0; c += chunk) {
		r = raid_log_locate(x->from, c, &role, &moff, &p, &q);
		if (r == 0 && role >= rr->n)
			r = -EIO;
		if (r < 0)
			break;
		rr->lo[role] = moff < rr->lo[role] ? moff : rr->lo[role];
		rr->hi[role] = moff + chunk > rr->hi[role] ? moff + chunk : rr->hi[role];
		if (rr->hi[role] - rr->lo[role] > rr->cap)
			r = -E2BIG;
	}
	if (r == 0)
		r = exec_parallel(rr->n, md_reshape_raw_read, rr);
	for (uint64_t c = pos - pos % chunk; c < pos + len && r == 0; c += chunk) {
		uint64_t from = c < pos ? pos - c : 0;
		uint64_t to = c + chunk > pos + len ? pos + len - c : chunk;
		r = raid_log_locate(x->from, c, &role, &moff, &p, &q);
		if (r == 0)
			memcpy(buf + (c + from - pos),
			       rr->mbuf[role] + (moff - rr->lo[role]) + from, to - from);
	}
	return r;
}

/* Backwards (a shrink): the mirror image of md_reshape_window.  [pos,
 * end) holds the new geometry and [0, pos) the old; windows are moved
 * from pos down, and the members' new data area starts shift bytes after
 * the old one.  The largest window [pos - w, pos), at most want bytes in
 * whole units, whose new-geometry writes (from the new stripe holding
 * pos - w on) lie at or above the end of the old stripe holding safe - 1,
 * the old bytes a restart still needs; 0 when not even one unit fits. */
static uint64_t md_reshape_window_back(const struct md_reshape *rs, uint64_t safe, uint64_t pos,
                                       uint64_t want, uint64_t unit, uint64_t shift)
{
	uint64_t old_end = md_reshape_dev_end(&rs->from, safe);

	if (want > pos)
		want = pos;
	for (uint64_t w = want / unit * unit; w >= unit; w -= unit)
		if (md_reshape_dev_first(&rs->to, pos - w) + shift >= old_end)
			return w;
	return 0;
}

/* The largest window at pos with the position recorded at safe, at most
 * wmax bytes in whole units (0: none fits). */
static uint64_t md_reshape_fit(const struct md_reshape *rs, uint64_t safe, uint64_t pos,
                               uint64_t wmax, uint64_t unit, uint64_t shift)
{
	if (rs->backwards)
		return md_reshape_window_back(rs, safe, pos, wmax, unit, shift);
	return md_reshape_window(rs, safe, pos, rs->to_end - pos < wmax ? rs->to_end - pos : wmax,
	                         unit, shift);
}

/* Whether the run stops at pos: the end, or o's stop_at. */
static bool md_reshape_at_end(const struct md_reshape *rs, const struct md_reshape_run_opts *o,
                              uint64_t pos)
{
	uint64_t at = o ? o->stop_at : 0;

	return rs->backwards ? pos == 0 || (at && pos <= at)
	                     : pos >= rs->to_end || (at && pos >= at);
}

/* The run moves window after window, and reads the next window while it
 * writes this one (and records the position, when it must or is due),
 * so that a member's head always has work queued: the read and the
 * write of a window one after the other left the disks idle while the
 * window was gathered and copied and while a record ran (BENCHMARKS.md,
 * section 30).  The crash rule still holds: a window's writes stay below
 * the old bytes of the stripe holding the recorded position (safe), and
 * the window read ahead lies at or after that stripe, so it reads old
 * bytes no write of this window touches; the window read ahead is sized
 * for the position recorded when it is written (after this step's
 * record, if it has one), never before. */
struct md_reshape_win {
	uint64_t pos, w;   /* from pos, w bytes (0: no window) */
	uint64_t lo, next; /* [lo, lo + w) of the array; where pos goes after it */
	char *buf;         /* its bytes, read in the old geometry */
};

static void md_reshape_win_set(struct md_reshape_win *win, bool back, uint64_t pos, uint64_t w)
{
	win->pos = pos;
	win->w = w;
	win->lo = back ? pos - w : pos;
	win->next = back ? win->lo : pos + w;
}

/* A window's old bytes into its buffer (zeros past the old end, as md
 * writes): from the members directly while raw is set up, else (and
 * from a failed direct read on) through the RAID vol, which
 * reconstructs. */
static int md_reshape_read_win(struct md_array *a, struct md_reshape_vol *x,
                               struct md_reshape_raw *raw, const struct md_reshape_win *win)
{
	const struct md_reshape *rs = &a->reshape;
	uint64_t n_old = win->lo < rs->from_end
	                     ? (rs->from_end - win->lo < win->w ? rs->from_end - win->lo : win->w)
	                     : 0;
	int r = 0;

	memset(win->buf + n_old, 0, win->w - n_old);
	if (raw->n && md_reshape_raw_failed(a, raw)) {
		/* A member failed since (its failure was recorded before the
		 * drain that let this window begin): what it holds may be
		 * stale, though it still reads; the RAID vol reconstructs. */
		log_warn("%s: a member of the old geometry failed: reading it through the "
		         "array from here on",
		         a->vol.name);
		md_reshape_raw_free(raw);
	}
	if (n_old && raw->n) {
		r = md_reshape_raw_window(x, raw, rs->from.chunk, win->buf, n_old, win->lo);
		if (r < 0 && r != -ENOMEM) {
			/* A member that fails: the RAID vol's own reads, which
			 * reconstruct (and record the failure), from here on. */
			log_warn("%s: reading the old geometry's members directly: %s; "
			         "through the array from here on",
			         a->vol.name, strerror(-r));
			md_reshape_raw_free(raw);
			r = vol_read(x->from, win->buf, n_old, win->lo);
		}
	} else if (n_old) {
		r = vol_read(x->from, win->buf, n_old, win->lo);
	}
	return r;
}

/* Wait out the requests in flight, then guard span bytes from the
 * position on (md_reshape_vol's rule): the window moved and the one read
 * ahead. */
static void md_reshape_guard(struct md_reshape_vol *x, uint64_t span)
{
	pthread_mutex_lock(&x->lock);
	x->draining = true;
	while (x->inflight)
		pthread_cond_wait(&x->cond, &x->lock);
	x->win = span;
	x->draining = false;
	pthread_cond_broadcast(&x->cond);
	pthread_mutex_unlock(&x->lock);
}

/* One step: piece 0 writes cur, moves the position past it (the window
 * read ahead stays guarded) and records it if asked; piece 1 reads
 * ahead (if any). */
struct md_reshape_step {
	struct md_array *a;
	struct md_reshape_vol *x;
	struct md_reshape_raw *raw;
	const struct md_reshape_win *cur, *ahead;
	bool record;
	int r[2];
	uint64_t ns[2];
};

static int md_reshape_step_piece(void *arg, unsigned i)
{
	struct md_reshape_step *st = arg;
	struct md_reshape_vol *x = st->x;
	uint64_t t0 = clock_now_ns();
	int r = 0;

	if (i == 0) {
		r = vol_write(x->to, st->cur->buf, st->cur->w, st->cur->lo, 0);
		if (r == 0) {
			/* Moved: requests of it go to the new geometry from
			 * now on (a write there waits for the record). */
			pthread_mutex_lock(&x->lock);
			x->pos = st->cur->next;
			x->win = st->ahead->w;
			pthread_cond_broadcast(&x->cond);
			pthread_mutex_unlock(&x->lock);
		}
		if (r == 0 && st->record)
			r = md_reshape_record(st->a, x, st->cur->next);
	} else if (st->ahead->w) {
		r = md_reshape_read_win(st->a, x, st->raw, st->ahead);
	}
	st->ns[i] = clock_now_ns() - t0;
	st->r[i] = r;
	return 0;
}

int md_reshape_run(struct vol *v, const struct md_reshape_run_opts *o, bool *finished)
{
	struct md_array *a = md_of(v);
	struct md_reshape_vol *x;
	const struct md_reshape *rs;
	uint64_t unit, shift = UINT64_MAX, end, chunk;
	unsigned par;
	bool back;
	char *buf[2] = {NULL, NULL};
	int r = 0;

	*finished = false;
	if (!a || !a->reshaping)
		return err_set(-EINVAL, "%s: no reshape under way", v->name);
	if (a->readonly)
		return err_set(-EROFS, "%s: read-only: the reshape stays where it is", v->name);
	x = to_rv(a->raid);
	rs = &a->reshape;
	back = rs->backwards;
	par = md_level_parity(rs->from.level);
	chunk = rs->from.chunk > rs->to.chunk ? rs->from.chunk : rs->to.chunk;
	/* raid5/6 write whole new stripes (in the larger chunk); raid10
	 * has no parity to keep: any run of blocks (a page, as md copies). */
	unit = rs->from.level == 10 ? 4096 : chunk * (rs->to.raid_disks - par);
	end = rs->to_end;
	uint64_t least = md_reshape_least_shift(rs);
	for (unsigned role = 0; role < a->n; role++) {
		const struct md_super *sb = a->m[role].sb;
		uint64_t off, size;
		if (!a->m[role].vol)
			continue;
		md_super_new_data_area(sb, &off, &size);
		/* Forwards the new data area lies before the old one, backwards
		 * after it, by a chunk or more (else md needs a backup file);
		 * raid10 offset copies by a chunk of each of their far copies
		 * (raid10.c's run(): "offset difference not enough"). */
		uint64_t lo = back ? sb->data_offset : off, hi = back ? off : sb->data_offset;
		if (hi < lo || (hi - lo) * 512 < least)
			return err_set(
			    -ENOTSUP,
			    "%s: %s: the new data area (sector %llu) does not lie %s the old "
			    "one (sector %llu) by %llu sectors or more; that reshape needs a "
			    "backup file, which uraid does not use",
			    v->name, a->m[role].vol->name, (unsigned long long)off,
			    back ? "after" : "before", (unsigned long long)sb->data_offset,
			    (unsigned long long)least / 512);
		if ((hi - lo) * 512 < shift)
			shift = (hi - lo) * 512;
	}
	uint64_t wmax =
	    o && o->window && o->window < MD_RESHAPE_WINDOW_MAX ? o->window : MD_RESHAPE_WINDOW_MAX;
	wmax = wmax < unit ? unit : wmax;
	struct md_reshape_raw raw;
	if ((r = md_reshape_raw_init(a, &raw, wmax)) < 0)
		return r;
	if (!(buf[0] = vol_buf_alloc(wmax)) || !(buf[1] = vol_buf_alloc(wmax))) {
		r = -ENOMEM;
		goto out;
	}

	struct md_reshape_win cur = {.buf = buf[0]}, ahead = {.buf = buf[1]};
	uint64_t rec_ns = clock_now_ns();
	bool stopped = o && o->stop && atomic_load(o->stop), nospace = false;

	if (!md_reshape_at_end(rs, o, x->pos) && !stopped) {
		uint64_t pos = x->pos, w = md_reshape_fit(rs, x->safe, pos, wmax, unit, shift);
		if (x->safe != pos && w < md_reshape_fit(rs, pos, pos, wmax, unit, shift)) {
			if ((r = md_reshape_record(a, x, pos)) < 0)
				goto out;
			rec_ns = clock_now_ns();
			w = md_reshape_fit(rs, pos, pos, wmax, unit, shift);
		}
		nospace = !w;
		md_reshape_guard(x, w);
		md_reshape_win_set(&cur, back, pos, w);
		r = w ? md_reshape_read_win(a, x, &raw, &cur) : 0;
		if (r < 0)
			r = err_set(r, "%s: reshape at %llu KiB: %s", v->name,
			            (unsigned long long)pos / 1024, err_detail(r));
	}
	while (r == 0 && cur.w) {
		uint64_t next = cur.next, t0 = clock_now_ns();
		struct md_reshape_step st = {
		    .a = a, .x = x, .raw = &raw, .cur = &cur, .ahead = &ahead};
		/* Record after this window when it is due, and when the next
		 * window fits whole only then. */
		st.record = (back ? x->safe - next : next - x->safe) >= MD_RESHAPE_RECORD_MAX ||
		            t0 - rec_ns >= MD_RESHAPE_RECORD_NS;
		stopped = !md_reshape_at_end(rs, o, next) && o && o->stop && atomic_load(o->stop);
		ahead.w = 0;
		if (!md_reshape_at_end(rs, o, next) && !stopped) {
			uint64_t w = md_reshape_fit(rs, x->safe, next, wmax, unit, shift),
			         wr = md_reshape_fit(rs, next, next, wmax, unit, shift);
			if (w < wr)
				st.record = true;
			md_reshape_win_set(&ahead, back, next, st.record ? wr : w);
		}
		md_reshape_guard(x, cur.w + ahead.w);
		exec_parallel(2, md_reshape_step_piece, &st);
		r = st.r[0] ? st.r[0] : st.r[1];
		if (st.r[0] == 0 && st.record)
			rec_ns = clock_now_ns();
		log_debug("%s: reshape window %llu KiB at %llu KiB: written%s %.1f ms, the next "
		          "read %.1f ms, step %.1f ms",
		          v->name, (unsigned long long)cur.w / 1024,
		          (unsigned long long)cur.pos / 1024, st.record ? " and recorded" : "",
		          (double)st.ns[0] / 1e6, (double)st.ns[1] / 1e6,
		          (double)(clock_now_ns() - t0) / 1e6);
		if (r < 0) {
			r = err_set(r, "%s: reshape at %llu KiB: %s", v->name,
			            (unsigned long long)(st.r[0] ? cur.pos : next) / 1024,
			            err_detail(r));
			break;
		}
		if (o && o->progress)
			o->progress(o->ctx, back ? end - next : next, end);
		if (!ahead.w && !md_reshape_at_end(rs, o, next) && !stopped) {
			nospace = true;
			break;
		}
		struct md_reshape_win t = cur;
		cur = ahead;
		ahead = t;
	}
	if (r == 0 && stopped)
		r = -EINTR;
	if (r == 0 && nospace)
		r = err_set(-ENOSPC,
		            "%s: at %llu KiB the data offset has not moved far enough to go "
		            "on without overwriting data not yet moved",
		            v->name, (unsigned long long)x->pos / 1024);
	pthread_mutex_lock(&x->lock);
	x->win = 0;
	pthread_cond_broadcast(&x->cond);
	pthread_mutex_unlock(&x->lock);
	/* Stopped: what was moved recorded (after an error, the last record
	 * stands and a restart moves the rest again).  At the end the data
	 * flushed and the end recorded are the record. */
	bool at_end = r == 0 && (back ? x->pos == 0 : x->pos >= end);
	if ((r == 0 || r == -EINTR) && !at_end && x->safe != x->pos) {
		int e = md_reshape_record(a, x, x->pos);
		if (e < 0)
			r = err_set(e, "%s: recording the reshape position: %s", v->name,
			            err_detail(e));
	}
	if (at_end) {
		r = vol_flush(x->to);
		if (r == 0) {
			pthread_mutex_lock(&a->lock);
			r = md_reshape_finish(a);
			if (r == 0)
				a->reshaping = false;
			pthread_mutex_unlock(&a->lock);
		}
		if (r < 0)
			r = err_set(r, "%s: recording the end of the reshape: %s", v->name,
			            err_detail(r));
		if (r == 0) {
			pthread_mutex_lock(&x->lock);
			x->safe = x->pos; /* writes waiting for the record go on */
			pthread_cond_broadcast(&x->cond);
			pthread_mutex_unlock(&x->lock);
			*finished = true;
		}
	}
out:
	free(buf[0]);
	free(buf[1]);
	md_reshape_raw_free(&raw);
	return r;
}

/* ---- in the background (serve) ---- */

/* After each window: RebuildNN events (mdadm --monitor reports a reshape
 * as it reports a rebuild), and the speed limits (md_throttle.h), in
 * bytes of each member written so far. */
static void md_reshape_bg_progress(void *ctx, uint64_t done, uint64_t total)
{
	struct md_array *a = ctx;

	md_ev_progress(a, &a->rs_ev_next, done, total);
	md_sync_throttle(a, md_reshape_dev_end(&a->reshape.to, done), false, &a->rs_stop);
}

/* Shrunk: the members past the new count stand by as spares from now on
 * (md_reshape_finish recorded them so, as raid5's finish_reshape does).
 * With a->lock held. */
static void md_reshape_settle_spares(struct md_array *a)
{
	unsigned keep = a->reshape.to.raid_disks, more = a->n > keep ? a->n - keep : 0;
	struct md_member *ns;

	if (!more)
		return;
	if (a->nspare + more > a->spare_cap) {
		if (!(ns = realloc(a->spare, (a->nspare + more) * sizeof(*ns)))) {
			log_warn("%s: out of memory: the members past %u devices stay as they were "
			         "until the next start",
			         a->vol.name, keep);
			return;
		}
		a->spare = ns;
		a->spare_cap = a->nspare + more;
	}
	for (unsigned role = keep; role < a->n; role++) {
		a->m[role].data = NULL;
		a->spare[a->nspare++] = a->m[role];
	}
	memset(a->m + keep, 0, more * sizeof(*a->m));
	a->n = keep;
}

/* The reshape ended while the array serves: the new geometry's RAID vol
 * serves alone from now on, at its full size (a new NBD connection sees
 * it: NBD has no message for a size that changes, and a connection keeps
 * the size it was given), and recovery and checks work again.  Requests
 * wait at the gate meanwhile. */
static void md_reshape_settle(struct md_array *a)
{
	struct md_reshape_vol *x = to_rv(a->raid);
	uint64_t size;
	int r = md_io_hold(a);

	if (r < 0) {
		log_warn("%s: the reshape ended, but requests did not drain: the old size stays "
		         "served until the next start",
		         a->vol.name);
		return;
	}
	pthread_mutex_lock(&a->lock);
	a->raid = x->to;
	x->to = NULL;
	vol_close(&x->vol); /* the old geometry's vol and its slices */
	for (unsigned role = 0; role < a->n; role++) {
		a->m[role].data = a->m[role].rs_to;
		a->m[role].rs_to = NULL;
	}
	size = a->reshape.to_end < a->raid->size ? a->reshape.to_end : a->raid->size;
	size -= size % a->vol.block_min;
	/* A shrink keeps serving its --array-size (md's array_size, set by
	 * mdadm, stays until the array stops). */
	if (size > a->vol.size && a->reshape.to_end > a->reshape.from_end)
		a->vol.size = size;
	md_bm_reshape(a, true);
	md_reshape_settle_spares(a);
	a->rec.enabled = a->rs_rec_enabled;
	pthread_mutex_unlock(&a->lock);
	md_io_release(a);
	log_info("%s: now %llu bytes (%u devices)", a->vol.name, (unsigned long long)a->vol.size,
	         a->reshape.to.raid_disks);
}

static void *md_reshape_thread(void *p)
{
	struct md_array *a = p;
	struct md_reshape_run_opts o = {
	    .stop = &a->rs_stop, .progress = md_reshape_bg_progress, .ctx = a};
	bool finished = false;
	int r;

	md_sync_throttle(a, 0, true, &a->rs_stop);
	md_ev_progress_begin(a, &a->rs_ev_next,
	                     a->reshape.backwards ? a->reshape.to_end - a->rs_pos0 : a->rs_pos0,
	                     a->reshape.to_end);
	r = md_reshape_run(&a->vol, &o, &finished);
	atomic_store(&a->rs_moving, false);
	md_ev_finished(a, 0);
	if (finished) {
		log_info("%s: reshape finished (%u devices)", a->vol.name,
		         a->reshape.to.raid_disks);
		md_reshape_settle(a);
	} else if (r < 0 && r != -EINTR)
		log_warn("%s: reshape stopped: %s", a->vol.name, err_detail(r));
	if (finished && a->rs_then) /* the level change that waited for it */
		a->rs_then(a);
	return NULL;
}

int md_reshape_start(struct md_array *a)
{
	int e;

	a->rs_t0_ns = clock_now_ns();
	a->rs_pos0 = to_rv(a->raid)->pos;
	atomic_store(&a->rs_stop, false);
	atomic_store(&a->rs_moving, true);
	e = pthread_create(&a->rs_thread, NULL, md_reshape_thread, a);
	if (e) {
		atomic_store(&a->rs_moving, false);
		return err_set(-e, "%s: cannot start the reshape thread", a->vol.name);
	}
	a->rs_started = true;
	return 0;
}

void md_reshape_stop(struct md_array *a)
{
	if (!a->rs_started)
		return;
	atomic_store(&a->rs_stop, true);
	pthread_join(a->rs_thread, NULL);
	a->rs_started = false;
}

int md_array_reshape_info(struct vol *v, struct md_reshape_info *out)
{
	struct md_array *a = md_of(v);
	const struct md_reshape *rs;
	struct md_reshape_vol *x;
	int r = 0;

	memset(out, 0, sizeof(*out));
	if (!a)
		return -EINVAL;
	pthread_mutex_lock(&a->lock);
	if (!a->reshaping) {
		r = -ENOENT;
		goto out;
	}
	rs = &a->reshape;
	x = to_rv(a->raid);
	out->moving = atomic_load(&a->rs_moving);
	out->backwards = rs->backwards;
	out->level = rs->from.level;
	out->new_level = rs->to.level;
	out->layout = rs->from.layout;
	out->new_layout = rs->to.layout;
	out->chunk = (uint32_t)rs->from.chunk;
	out->new_chunk = (uint32_t)rs->to.chunk;
	out->from_disks = rs->from.raid_disks;
	out->to_disks = rs->to.raid_disks;
	pthread_mutex_lock(&x->lock);
	out->pos = x->pos;
	pthread_mutex_unlock(&x->lock);
	out->total = rs->to_end;
	out->old_size = a->vol.size;
	out->new_size = rs->to_end - rs->to_end % a->vol.block_min;
	if (rs->to_end <= rs->from_end && out->new_size > a->vol.size)
		out->new_size = a->vol.size; /* a shrink keeps serving its --array-size */
	double secs = (double)(clock_now_ns() - a->rs_t0_ns) / 1e9;
	uint64_t moved = out->backwards ? a->rs_pos0 - out->pos : out->pos - a->rs_pos0;
	if (out->moving && secs > 0 && moved && moved <= out->total)
		out->speed = (double)moved / secs;
out:
	pthread_mutex_unlock(&a->lock);
	return r;
}
