/* md_reshape_grow.c — starting a RAID5/6 reshape offline (`uraid grow -n N
 * --add NEW...`, --chunk, --layout; md_reshape.h): the checks, the
 * superblocks of a reshape at its start as the kernel writes them, then the
 * array assembled from them and md_reshape_run() (md_reshape.c) on it. */
#include "md_internal.h"
#include "md_bitmap_grow.h"
#include "md_manage.h"
#include "md_rebuild.h"
#include "md_reshape.h"
#include "md_sb090.h"
#include "md_takeover.h"

#include "core/log.h"
#include "member/member.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How far the data area of sb's member can move down: from the end of
 * the metadata before it (the superblock's 4 KiB, a bad-block log, the
 * write-intent bitmap's room: the kernel's super_1_allow_new_offset keeps
 * the new offset past all three) to data_offset, in sectors. */
static uint64_t md_reshape_room(const struct md_super *sb)
{
	const struct md_sb1 *raw = (const struct md_sb1 *)sb->raw;
	uint64_t lo = sb->super_offset + MD_SB_BLOCK / 512, bm_at, bm_end;
	int32_t bb = (int32_t)md_le32(raw->bblog_offset);

	if (md_le16(raw->bblog_size) && bb > 0 &&
	    sb->super_offset + (uint64_t)bb + md_le16(raw->bblog_size) > lo)
		lo = sb->super_offset + (uint64_t)bb + md_le16(raw->bblog_size);
	if (md_super_bitmap_area(sb, (sb->data_offset + sb->data_size) * 512, &bm_at, &bm_end) ==
	        0 &&
	    bm_end / 512 > lo)
		lo = bm_end / 512;
	return sb->data_offset > lo ? sb->data_offset - lo : 0;
}

/* The new layout and chunk of t (the old ones where t keeps them) as the
 * kernel's raid5 check_reshape and mdadm take them: a layout the level
 * names, a chunk a power of two of at least 4 KiB (a page) that divides
 * the member size (mdadm: "component size is not a multiple of
 * chunksize"). */
static int md_reshape_to_check(const struct md_super *f, const struct md_reshape_to *t,
                               const char *name, uint32_t *layout, uint32_t *chunk)
{
	const struct md_level_info *lv = md_level_info(f->level);
	bool named = false;

	*layout = t->layout_set ? t->layout : f->layout;
	*chunk = t->chunk ? t->chunk : f->chunk;
	if (f->level == 10) {
		/* mdadm's analyse_change and raid10.c's check_reshape.  A switch
		 * between near and offset copies both take, but the kernel's
		 * reshape of one (Linux 6.1) reads past the members' end and
		 * fails them ("attempt to access beyond end of device", seen
		 * with n2 -> o2 of 4 devices), so uraid starts none: the
		 * kernel could not continue it. */
		uint32_t copies = MD_RAID10_NEAR(f->layout) * MD_RAID10_FAR(f->layout);
		if (MD_RAID10_FAR(f->layout) > 1 && !(f->layout & MD_RAID10_OFFSET))
			return err_set(-ENOTSUP,
			               "%s: Cannot reshape RAID10 in far-mode (md's rule)", name);
		if (MD_RAID10_FAR(*layout) > 1 && !(*layout & MD_RAID10_OFFSET))
			return err_set(-ENOTSUP,
			               "%s: Cannot reshape RAID10 to far-mode (md's rule)", name);
		if (MD_RAID10_NEAR(*layout) * MD_RAID10_FAR(*layout) != copies)
			return err_set(-EINVAL,
			               "%s: Cannot change number of copies when reshaping RAID10 "
			               "(md's rule)",
			               name);
		if (*layout != f->layout)
			return err_set(
			    -ENOTSUP,
			    "%s: a raid10 switch between near and offset copies: md takes "
			    "it, but the kernel's reshape of one fails members (reads "
			    "past their end), so uraid does not start one",
			    name);
		named = true;
	}
	if (f->level == 4) {
		/* raid4 keeps its parity last whatever the word says: there
		 * is no layout to change, the word stays. */
		if (*layout != f->layout)
			return err_set(-EINVAL, "%s: a raid4 has no layout to change", name);
		named = true;
	}
	for (unsigned i = 0; lv && i < lv->nlayouts; i++)
		named |= lv->layouts[i].layout == *layout;
	if (!named)
		return err_set(-EINVAL, "%s: layout %u is not one %s takes", name, *layout,
		               md_level_name(f->level));
	if (*chunk < 8 || (*chunk & (*chunk - 1)) || *chunk > (1u << 30) / 512)
		return err_set(-EINVAL,
		               "%s: chunk %u KiB: md takes a power of two from 4 KiB to 1 GiB",
		               name, *chunk / 2);
	if (f->size % *chunk)
		return err_set(
		    -EINVAL,
		    "%s: component size %lluK is not a multiple of chunksize %uK (mdadm's "
		    "rule): shrink it first (--size)",
		    name, (unsigned long long)f->size / 2, *chunk / 2);
	return 0;
}

/* The array sectors of f's level at layout and chunk over raid_disks
 * members each using size sectors (md_reshape_geom_size()). */
static uint64_t md_reshape_sectors(const struct md_super *f, uint32_t layout, uint32_t chunk,
                                   unsigned raid_disks, uint64_t size)
{
	struct raid_geom g = {
	    .level = f->level, .layout = layout, .chunk = chunk * 512, .raid_disks = raid_disks};

	return md_reshape_geom_size(&g, size * 512, (uint64_t)chunk * 512) / 512;
}

/* A shrink to raid_disks (mdadm --grow --array-size S, then
 * --raid-devices): the array size array_size (sectors) asked for, which
 * must fit in the new count, into *size, the sectors each member keeps
 * (in whole chunks of the larger of old and new, chunk: the fewest that
 * hold array_size). */
static int md_reshape_shrink_size(const struct md_super *f, unsigned raid_disks, uint32_t layout,
                                  uint64_t array_size, uint32_t chunk, const char *name,
                                  uint64_t *size)
{
	const struct md_level_info *lv = md_level_info(f->level);
	uint64_t most, lo, hi;

	if (!lv || raid_disks < lv->min_disks ||
	    (f->level == 10 && raid_disks < MD_RAID10_NEAR(layout)))
		return err_set(-EINVAL, "%s: %u devices: a %s needs at least %u", name, raid_disks,
		               md_level_name(f->level),
		               f->level == 10 ? MD_RAID10_NEAR(layout)
		               : lv           ? lv->min_disks
		                              : 0);
	most = md_reshape_sectors(f, layout, chunk, raid_disks, f->size / chunk * chunk);
	if (!array_size)
		return err_set(-EINVAL,
		               "%s: %u -> %u devices reduces the size of the array: give "
		               "--array-size (at most %lluK) with it, as mdadm asks for first; "
		               "what lies past it is lost",
		               name, f->raid_disks, raid_disks, (unsigned long long)most / 2);
	if (array_size > most)
		return err_set(-ENOSPC,
		               "%s: --array-size %lluK does not fit in %u devices (at most %lluK)",
		               name, (unsigned long long)array_size / 2, raid_disks,
		               (unsigned long long)most / 2);
	/* The fewest whole chunks per member that hold it. */
	lo = 1;
	hi = f->size / chunk;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (md_reshape_sectors(f, layout, chunk, raid_disks, mid * chunk) >= array_size)
			hi = mid;
		else
			lo = mid + 1;
	}
	*size = lo * chunk;
	return 0;
}

/* What a reshape's start changes, decided before anything is written
 * (md_reshape_plan_make), for the offline start and the online one. */
struct md_reshape_plan {
	unsigned raid_disks; /* the new count */
	uint32_t layout;     /* the new layout and chunk (sectors) */
	uint32_t chunk;
	uint64_t size;       /* sectors each member keeps (less for a shrink) */
	uint64_t shift;      /* sectors the data offset moves by */
	bool back;           /* up: a backwards reshape, from the new end down */
	bool none;           /* nothing changes (nothing else set) */
	bool parity_missing; /* the raid0 path: a raid5 without its parity role */
};

/* Sectors of sb's member past what the array uses of its data area
 * (data_size - size): how far the data can move up, the end kept (the
 * kernel's new_offset_store: new_offset - data_offset + dev_sectors must
 * fit in the member's sectors). */
static uint64_t md_reshape_room_after(const struct md_super *sb, uint64_t size)
{
	return sb->data_size > size ? sb->data_size - size : 0;
}

/* The checks of a reshape's start, before anything is written, and the
 * way the data offset moves (mdadm's Grow.c set_new_data_offset): more
 * devices move it down (the room before the data), fewer up (what the
 * smaller size frees after it), the same count the way with the more
 * room, down when before > after; by half that room in whole chunks of
 * the larger of old and new (p->chunk), at least one (the kernel runs a
 * reshape without a backup file only then: raid5 run()), two for a
 * raid10 of three copies or more or one changing its chunk (below).  A
 * grow to more devices cannot go up: writing the new geometry backwards
 * from the end would overwrite old stripes not yet moved (raid5 run():
 * "reshape_position too early for auto-recovery"), so mdadm takes a
 * backup file, which uraid does not use. */
static int md_reshape_grow_check(struct md_super **sbs, unsigned nm, unsigned fresh, unsigned nnew,
                                 const char *name, char **specs, struct md_reshape_plan *p)
{
	const struct md_super *f = sbs[fresh];
	uint64_t before = UINT64_MAX, after = UINT64_MAX, room;
	bool held[MD_SB_MAX_DEV] = {false};
	uint32_t chunk = p->chunk > f->chunk ? p->chunk : f->chunk;
	unsigned pm = p->parity_missing;
	if (md_sb090_is(f) || md_sb_version_data_first(md_super_version(f)))
		return err_set(-ENOTSUP,
		               "%s: a v%s array keeps its data from the member's start: moving it "
		               "needs a backup file, which uraid does not use",
		               name, md_super_version(f)->name);
	if (f->feature_map & (MD_FEATURE_ANY_PPL | MD_FEATURE_JOURNAL))
		return err_set(-ENOTSUP,
		               "%s: reshaping an array with a PPL or a journal: uraid keeps "
		               "neither across a reshape",
		               name);
	if (p->raid_disks < f->raid_disks && nnew)
		return err_set(-EINVAL, "%s: %u -> %u devices takes no new member (--add)", name,
		               f->raid_disks, p->raid_disks);
	if (p->raid_disks >= f->raid_disks && nnew != p->raid_disks - f->raid_disks)
		return err_set(
		    -EINVAL, "%s: %u -> %u devices takes %u new members (--add NEW), %u given",
		    name, f->raid_disks, p->raid_disks, p->raid_disks - f->raid_disks, nnew);
	for (unsigned i = 0; i < nm; i++) {
		unsigned role = md_super_role(sbs[i]);
		if (role >= f->raid_disks || sbs[i]->events != f->events ||
		    (sbs[i]->feature_map & MD_FEATURE_RECOVERY_OFFSET))
			return err_set(
			    -EINVAL,
			    "%s: %s is not an in-sync member of the array (a spare, stale "
			    "or being rebuilt): give the array's members in sync only",
			    name, specs[i]);
		held[role] = true;
		uint64_t b = md_reshape_room(sbs[i]), a = md_reshape_room_after(sbs[i], p->size);
		before = b < before ? b : before;
		after = a < after ? a : after;
	}
	if (pm && (held[f->raid_disks - 1] || p->raid_disks <= f->raid_disks ||
	           (f->level != 4 && f->level != 5)))
		return err_set(-EINVAL,
		               "%s: the raid0 path reshapes a raid4 or raid5 whose parity role "
		               "no member holds, to more devices",
		               name);
	for (unsigned role = 0; role + pm < f->raid_disks; role++)
		if (!held[role])
			return err_set(-ENODEV, "%s: role %u is missing: reshape a whole array",
			               name, role);
	if (p->raid_disks != f->raid_disks)
		p->back = p->raid_disks < f->raid_disks;
	else
		p->back = !(before > after);
	/* A raid10 of three near copies or more, or changing its chunk, two
	 * chunks: md_reshape_run's window rule counts each geometry in whole
	 * chunk rows, and with one such a reshape comes to a position where
	 * no window fits (a simulation of the rule over 2..8 devices, near
	 * 1..4, chunks 4 KiB..1 MiB found none with two).  Offset copies F
	 * chunks, as many as the kernel asks (raid10.c's run(): each device
	 * row is F chunks deep); the same simulation over o2 and o3 found
	 * none stalled with F. */
	uint32_t far =
	    f->level == 10 && (f->layout & MD_RAID10_OFFSET) ? MD_RAID10_FAR(f->layout) : 1;
	bool two =
	    f->level == 10 && far == 1 && (MD_RAID10_NEAR(f->layout) > 2 || p->chunk != f->chunk);
	uint32_t times = far > 1 ? far : two ? 2 : 1;
	uint32_t least = times * chunk;
	char by[32];
	snprintf(by, sizeof(by), times > 1 ? "%u chunks" : "a chunk", times);
	room = p->back ? after : before;
	p->shift = room / 2 / chunk * chunk;
	if (p->shift >= least)
		return 0;
	if (p->raid_disks < f->raid_disks)
		return err_set(-ENOSPC,
		               "%s: %llu sectors after what each member keeps are too few to move "
		               "the data up by %s (%u sectors); uraid does not use a backup "
		               "file: give a smaller --array-size",
		               name, (unsigned long long)room, by, least);
	if (p->raid_disks > f->raid_disks)
		return err_set(-ENOSPC,
		               "%s: %llu sectors before the data are too few to move it down by %s "
		               "(%u sectors; half the room is used), as more devices need: "
		               "up, the new geometry written backwards from the end would "
		               "overwrite old stripes not yet moved; uraid does not use a backup "
		               "file",
		               name, (unsigned long long)before, by, least);
	return err_set(-ENOSPC,
	               "%s: %llu sectors before the data and %llu after what each member uses "
	               "are too few to move it by %s (%u sectors; half the room is used) "
	               "either way; uraid does not use a backup file",
	               name, (unsigned long long)before, (unsigned long long)after, by, least);
}

/* The plan of a reshape of the array of sbs[0..nm) (fresh the freshest;
 * specs their names) to t with nnew new members: the new layout and
 * chunk as the kernel takes them, a shrink's size, then the members and
 * the room to move the data offset.  0 (p->none: nothing to change) or
 * -errno with err_set() detail naming name. */
static int md_reshape_plan_make(struct md_super **sbs, unsigned nm, unsigned fresh,
                                const struct md_reshape_to *t, unsigned nnew, const char *name,
                                char **specs, struct md_reshape_plan *p)
{
	const struct md_super *f = sbs[fresh];
	int r;

	*p = (struct md_reshape_plan){.raid_disks = t->raid_disks ? t->raid_disks : f->raid_disks,
	                              .size = f->size,
	                              .parity_missing = t->parity_missing};
	r = md_reshape_to_check(f, t, name, &p->layout, &p->chunk);
	if (r < 0)
		return r;
	if (p->raid_disks == f->raid_disks && p->layout == f->layout && p->chunk == f->chunk &&
	    !nnew && !t->array_size) {
		p->none = true;
		return 0;
	}
	uint32_t big = p->chunk > f->chunk ? p->chunk : f->chunk;
	if (p->raid_disks < f->raid_disks)
		r = md_reshape_shrink_size(f, p->raid_disks, p->layout, t->array_size, big, name,
		                           &p->size);
	else if (t->array_size)
		r = err_set(-EINVAL,
		            "%s: --array-size goes with the --raid-devices that shrinks the array",
		            name);
	if (r == 0)
		r = md_reshape_grow_check(sbs, nm, fresh, nnew, name, specs, p);
	return r;
}

/* What plan p of the array of f changes besides the device count, for
 * a message: ", layout A -> B, chunk XK -> YK, array size SK, backwards
 * (data offset D -> E sectors)". */
static void md_reshape_plan_say(const struct md_reshape_plan *p, const struct md_super *f,
                                char *what, size_t n)
{
	char ln[2][32];
	size_t k = 0;

	what[0] = 0;
	if (p->layout != f->layout)
		k += (size_t)snprintf(what + k, n - k, ", layout %s -> %s",
		                      md_layout_name(f->level, f->layout, ln[0], sizeof(ln[0])),
		                      md_layout_name(f->level, p->layout, ln[1], sizeof(ln[1])));
	if (p->chunk != f->chunk && k < n)
		k += (size_t)snprintf(what + k, n - k, ", chunk %uK -> %uK", f->chunk / 2,
		                      p->chunk / 2);
	if (p->raid_disks < f->raid_disks && k < n)
		k += (size_t)snprintf(what + k, n - k, ", array size %lluK",
		                      (unsigned long long)md_reshape_sectors(
		                          f, p->layout, p->chunk, p->raid_disks, p->size) /
		                          2);
	if (p->back && k < n)
		k += (size_t)snprintf(what + k, n - k, ", backwards");
	if (k < n)
		snprintf(what + k, n - k, " (data offset %llu -> %llu sectors)",
		         (unsigned long long)f->data_offset,
		         (unsigned long long)(p->back ? f->data_offset + p->shift
		                                      : f->data_offset - p->shift));
}

/* The template every member's superblock at the start of the reshape p
 * of the array of f is made from, as the kernel writes it (raid_disks
 * the new count, the old geometry still in level, layout and chunk, the
 * move in delta_disks, new_offset and the new_* fields); backwards the
 * position starts at the new geometry's end (raid5_start_reshape:
 * raid5_size() of the smaller geometry, in whole chunks of both). */
static void md_reshape_plan_super(const struct md_reshape_plan *p, const struct md_super *f,
                                  struct md_super *tmpl)
{
	uint32_t big = p->chunk > f->chunk ? p->chunk : f->chunk;

	*tmpl = *f;
	tmpl->feature_map |= MD_FEATURE_RESHAPE_ACTIVE | MD_FEATURE_NEW_OFFSET |
	                     (p->back ? MD_FEATURE_RESHAPE_BACKWARDS : 0);
	tmpl->size = p->size;
	tmpl->raid_disks = p->raid_disks;
	tmpl->delta_disks = (int32_t)(p->raid_disks - f->raid_disks);
	tmpl->new_level = f->level;
	tmpl->new_layout = p->layout;
	tmpl->new_chunk = p->chunk;
	tmpl->reshape_position =
	    p->back ? md_reshape_sectors(f, p->layout, p->chunk, p->raid_disks, p->size / big * big)
	            : 0;
	tmpl->new_offset = p->back ? (int32_t)p->shift : -(int32_t)p->shift;
}

/* The bitmap of the array of f written to the nm vols at the start of
 * plan p with events (md_bitmap_follow).  raid10's index space is its
 * array: with the device count changing, raid10_start_reshape resizes
 * the bitmap to the new size (md_bitmap_resize, the chunk kept while the
 * bits fit), and md records its resync_max_sectors, the smaller of the two
 * sizes while the reshape runs, as sync_size. */
static int md_reshape_bitmap_follow(const struct md_reshape_plan *p, struct vol **vols, unsigned nm,
                                    struct vol *src, const struct md_super *f, uint64_t events,
                                    const char *name)
{
	if (f->level != 10)
		return md_bitmap_follow(vols, nm, src, f, events, name);
	uint64_t was = md_reshape_sectors(f, f->layout, f->chunk, f->raid_disks, f->size);
	uint64_t now = p->raid_disks != f->raid_disks
	                   ? md_reshape_sectors(f, p->layout, p->chunk, p->raid_disks, p->size)
	                   : was;
	return md_bitmap_follow_to(vols, nm, src, f, events, was * 512, now * 512,
	                           was < now ? was : now, name);
}

int md_reshape_restripe_check(struct md_super **sbs, unsigned nm, unsigned fresh,
                              unsigned raid_disks, unsigned nnew, uint32_t chunk, char **specs)
{
	struct md_reshape_plan p = {.raid_disks = raid_disks,
	                            .layout = sbs[fresh]->layout,
	                            .chunk = chunk,
	                            .size = sbs[fresh]->size};
	char name[48];

	md_super_array_name(sbs[fresh], name, sizeof(name));
	return md_reshape_grow_check(sbs, nm, fresh, nnew, name, specs, &p);
}

/* The superblock of a reshape at its start (raid_disks the new count,
 * the old geometry still in level, layout and chunk, the move in
 * delta_disks, new_offset and the new_* fields), as the kernel writes it:
 * sb takes the reshape fields of t, the template every member's start is
 * made from, and keeps its own. */
static void md_reshape_start_take(struct md_super *sb, const struct md_super *t)
{
	sb->feature_map |= t->feature_map & MD_FEATURE_RESHAPE;
	sb->size = t->size;
	sb->raid_disks = t->raid_disks;
	sb->delta_disks = t->delta_disks;
	sb->new_level = t->new_level;
	sb->new_layout = t->new_layout;
	sb->new_chunk = t->new_chunk;
	sb->reshape_position = t->reshape_position;
	sb->new_offset = t->new_offset;
}

int md_reshape_grow(char **specs, unsigned nm, struct vol **vols, struct md_super **sbs,
                    unsigned fresh, unsigned raid_disks, char **news, unsigned nnew, bool force,
                    const struct md_reshape_run_opts *o, const struct md_rebuild_out *out)
{
	const struct md_reshape_to t = {.raid_disks = raid_disks};

	return md_reshape_restripe(specs, nm, vols, sbs, fresh, &t, news, nnew, force, o, out);
}

int md_reshape_restripe(char **specs, unsigned nm, struct vol **vols, struct md_super **sbs,
                        unsigned fresh, const struct md_reshape_to *to, char **news, unsigned nnew,
                        bool force, const struct md_reshape_run_opts *o,
                        const struct md_rebuild_out *out)
{
	struct md_super *f = sbs[fresh], tmpl;
	struct vol **all = calloc(nm + nnew, sizeof(*all));
	struct md_super *nsb = calloc(nnew ? nnew : 1, sizeof(*nsb));
	uint64_t *end_sb = calloc(nnew ? nnew : 1, sizeof(*end_sb));
	unsigned *slot = calloc(nnew ? nnew : 1, sizeof(*slot));
	uint32_t *used = calloc(nm + nnew, sizeof(*used));
	unsigned old = f->raid_disks, nall = 0;
	uint16_t roles[MD_SB_MAX_DEV];
	uint32_t max_dev = f->max_dev < MD_SB_MAX_DEV ? f->max_dev : MD_SB_MAX_DEV;
	struct md_reshape_plan p;
	uint64_t events = f->events + 1;
	struct vol *arr = NULL;
	bool finished = false;
	char name[48];
	int r;

	md_super_array_name(f, name, sizeof(name));
	if (!md_super_clean(f)) { /* online, the array's own resync at its start did that */
		for (unsigned i = 0; i < nm; i++)
			vol_close(vols[i]);
		r = err_set(-EUCLEAN, "%s: not shut down cleanly: resync it first (uraid serve)",
		            name);
		goto out;
	}
	if (!all || !nsb || !end_sb || !slot || !used) {
		for (unsigned i = 0; i < nm; i++)
			vol_close(vols[i]);
		r = -ENOMEM;
		goto out;
	}
	for (unsigned i = 0; i < nm; i++)
		all[nall++] = vols[i];
	memcpy(roles, f->roles, sizeof(roles));
	r = md_reshape_plan_make(sbs, nm, fresh, to, nnew, name, specs, &p);
	if (r == 0 && p.none) {
		md_say(out, "%s: no change requested (%u devices, layout and chunk as they are)",
		       name, old);
		goto out;
	}
	unsigned raid_disks = p.raid_disks;
	for (unsigned i = 0; i < nnew && r == 0; i++) {
		err_clear();
		r = member_open(news[i], 0, &all[nall]);
		if (r < 0)
			break;
		nall++;
		r = md_manage_probe_new(all[nm + i], news[i], f->set_uuid, name, force, &end_sb[i]);
		if (r == 0)
			r = md_manage_check_size(all[nm + i], news[i], f, name);
	}
	for (unsigned i = 0; i < nm; i++)
		used[i] = sbs[i]->dev_number;
	for (unsigned i = 0; i < nnew && r == 0; i++) {
		r = md_manage_pick_slot(roles, max_dev, raid_disks, used, nm + i, f, name);
		if (r < 0)
			break;
		slot[i] = used[nm + i] = (unsigned)r;
		for (uint32_t k = max_dev; k < slot[i]; k++)
			roles[k] = MD_ROLE_SPARE;
		if (slot[i] >= max_dev)
			max_dev = slot[i] + 1;
		/* parity_missing: from the missing parity role on */
		roles[slot[i]] = (uint16_t)(old - to->parity_missing + i);
		r = 0;
	}
	if (r < 0)
		goto out;

	/* Checked: the superblocks of a reshape at its start, as the kernel
	 * writes them (raid_disks the new count, the old geometry in level,
	 * layout, chunk, the move in delta_disks and new_offset), the new
	 * members' first, then the members'. */
	md_reshape_plan_super(&p, f, &tmpl);
	r = md_reshape_bitmap_follow(&p, vols, nm, vols[fresh], f, events, name); /* NEWs copy it */
	for (unsigned i = 0; i < nnew && r == 0; i++) {
		r = md_manage_new_super(all[nm + i], news[i], &tmpl, vols[fresh], slot[i],
		                        end_sb[i], &nsb[i]);
		if (r < 0)
			break;
		if (to->parity_missing && i == 0)
			md_manage_mark_recovering(&nsb[i], roles, old - 1);
		md_manage_set_state(&nsb[i], events, max_dev, roles);
		err_clear();
		r = md_super_write(all[nm + i], &nsb[i]);
	}
	for (unsigned i = 0; i < nm && r == 0; i++) {
		struct md_super *sb = sbs[i];
		md_reshape_start_take(sb, &tmpl);
		md_manage_set_state(sb, events, max_dev, roles);
		err_clear();
		r = md_super_write(vols[i], sb);
	}
	if (r < 0)
		goto out;
	char what[200];
	md_reshape_plan_say(&p, f, what, sizeof(what));
	md_say(out, "%s: reshaping %u -> %u devices%s", name, old, raid_disks, what);

	/* Then the same as continuing it: the array assembled from what was
	 * written, the driver run on it. */
	struct md_assemble_opts ao = {.no_reshape = true};
	err_clear();
	r = md_assemble_one(all, nall, &ao, &arr);
	nall = 0; /* taken, also on error */
	if (r < 0)
		goto out;
	r = md_reshape_run(arr, o, &finished);
	vol_close(arr);
	if (r == 0)
		md_say(out,
		       finished ? "%s: reshaped to %u devices"
		                : "%s: reshape stopped part-way (%u devices when done); "
		                  "`uraid grow --continue` goes on",
		       name, raid_disks);
out:
	for (unsigned i = 0; i < nall; i++)
		vol_close(all[i]);
	for (unsigned i = 0; i < nm; i++)
		free(sbs[i]);
	free(all);
	free(nsb);
	free(end_sb);
	free(slot);
	free(used);
	return r;
}

/* ---- on a running array (md_array_grow) ---- */

/* Why the running array a cannot start a reshape now, or 0 (pm: the
 * raid0 path's raid4, its parity role, the last, missing).  With a->lock
 * held. */
static int md_array_grow_busy(struct md_array *a, bool pm)
{
	const char *why = NULL;
	bool degraded = false;

	for (unsigned r = 0; r + pm < a->n; r++)
		degraded |= !a->m[r].vol || a->m[r].failed || a->m[r].recovering;
	if (a->reshaping)
		why = "a reshape is under way already";
	else if (!md_level_parity(a->level) && a->level != 10)
		why = "uraid reshapes a served raid4, raid5, raid6 or raid10 only (a raid0 "
		      "through a raid4, with --raid-devices and --add)";
	else if (degraded)
		why = "it is degraded: rebuild it first";
	else if (a->nspare)
		why = "it has spares: remove them first (a spare would take no new role)";
	else if (a->rec.running || a->readd.running)
		why = "a rebuild is running";
	else if (a->scrub.running || a->scrub.req != MD_CHECK_STOP)
		why = "a check is running (`uraid check --stop` it first)";
	else if (a->ppl || a->jn || a->jc)
		why = "it has a PPL or a journal (uraid keeps neither across a reshape)";
	for (unsigned r = 0; r + pm < a->n && !why; r++)
		if (!a->m[r].vol || !a->m[r].sb || a->m[r].failed || a->m[r].recovering)
			why = "a role has no member in sync";
	return why ? err_set(-EBUSY, "%s: cannot start a reshape: %s", a->vol.name, why) : 0;
}

/* Undo what md_array_grow set in memory after its writes failed part-way
 * (the superblocks written so far record a reshape at position 0, which
 * is what the array holds: a start continues it). */
static void md_array_grow_undo(struct md_array *a, unsigned old, unsigned pm, const uint16_t *roles,
                               uint32_t max_dev)
{
	for (unsigned r = old - pm; r < a->n; r++)
		free(a->m[r].sb);
	memset(a->m + old - pm, 0, (a->n - old + pm) * sizeof(*a->m));
	a->n = old;
	memcpy(a->roles, roles, sizeof(a->roles));
	a->max_dev = max_dev;
}

int md_array_grow(struct vol *v, struct vol **news, unsigned nnew, unsigned raid_disks, bool force)
{
	const struct md_reshape_to t = {.raid_disks = raid_disks};

	return md_array_restripe(v, &t, news, nnew, force);
}

int md_array_restripe(struct vol *v, const struct md_reshape_to *to, struct vol **news,
                      unsigned nnew, bool force)
{
	struct md_array *a = md_of(v);
	struct md_super **sbs = NULL, f0, tmpl, *nsb = NULL;
	struct md_member *nm = NULL;
	char **specs = NULL;
	uint64_t *end_sb = NULL;
	uint32_t *used = NULL, max_dev, old_max;
	uint16_t roles[MD_SB_MAX_DEV], old_roles[MD_SB_MAX_DEV];
	unsigned old = 0, raid_disks = 0;
	struct md_reshape_plan p;
	struct md_reshape rs;
	char what[200];
	bool wrote = false;
	int r;

	if (!a)
		return err_set(-EINVAL, "%s is not an md array", v->name);
	if (a->readonly)
		return err_set(-EROFS, "%s is served read-only: it cannot be reshaped",
		               a->vol.name);
	if (a->level == 0 && !to->chunk && !to->layout_set && !to->array_size)
		return md_array_grow_raid0(v, to->raid_disks, news, nnew, force);
	if ((r = md_repl_busy(a, "reshape it")) < 0)
		return r;
	unsigned pm = to->parity_missing, nsb0 = 0;
	for (unsigned i = 0; i < nnew; i++)
		if (news[i]->block_min > a->vol.block_min)
			return err_set(-EINVAL, "%s: %s has blocks of %u bytes, the array %u",
			               a->vol.name, news[i]->name, news[i]->block_min,
			               a->vol.block_min);
	pthread_mutex_lock(&a->lock);
	old = a->n;
	sbs = calloc(old, sizeof(*sbs));
	specs = calloc(old, sizeof(*specs));
	end_sb = calloc(nnew + 1, sizeof(*end_sb));
	used = calloc(old + nnew + a->nretired + 1, sizeof(*used));
	nsb = calloc(nnew + 1, sizeof(*nsb));
	r = sbs && specs && end_sb && used && nsb ? md_array_grow_busy(a, pm) : -ENOMEM;
	for (unsigned i = 0; i < old && r == 0; i++)
		if (a->m[i].vol) { /* all but pm's parity role */
			sbs[nsb0] = a->m[i].sb;
			specs[nsb0++] = (char *)a->m[i].vol->name;
		}
	if (r == 0)
		r = md_reshape_plan_make(sbs, nsb0, 0, to, nnew, a->vol.name, specs, &p);
	if (r == 0 && p.none)
		r = err_set(-EINVAL,
		            "%s: no change requested (%u devices, layout and chunk as they are)",
		            a->vol.name, old);
	if (r == 0) {
		f0 = *a->m[0].sb;
		raid_disks = p.raid_disks;
	}
	/* A shrink serves --array-size from its start on, as md's array_size
	 * (mdadm sets it before the reshape): nothing past it is written. */
	uint64_t size0 = a->vol.size, shrunk = size0;
	if (r == 0 && raid_disks < old) {
		shrunk = to->array_size * 512 - to->array_size * 512 % a->vol.block_min;
		if (shrunk > size0)
			r = err_set(-ENOSPC, "%s: --array-size %lluK is more than the %lluK served",
			            a->vol.name, (unsigned long long)to->array_size / 2,
			            (unsigned long long)size0 / 1024);
	}
	pthread_mutex_unlock(&a->lock);
	/* The new members probed outside the lock (they may be slow): what
	 * they are checked against never changes while the array serves. */
	for (unsigned i = 0; i < nnew && r == 0; i++) {
		err_clear();
		r = md_manage_probe_new(news[i], news[i]->name, f0.set_uuid, a->vol.name, force,
		                        &end_sb[i]);
		if (r == 0)
			r = md_manage_check_size(news[i], news[i]->name, &f0, a->vol.name);
	}
	if (r < 0)
		goto out;
	md_rec_stop(a); /* a thread left from a check: none may run during the move */
	atomic_store(&a->rec.stop, false);
	r = md_io_hold(a);
	if (r < 0) {
		r = err_set(r, "%s: requests in flight did not drain: no reshape started",
		            a->vol.name);
		goto out;
	}
	pthread_mutex_lock(&a->lock);
	r = md_array_grow_busy(a, pm);
	if (r == 0 && a->n != old)
		r = err_set(-EBUSY, "%s: its members changed meanwhile; try again", a->vol.name);
	if (r == 0 && raid_disks > old && !(nm = realloc(a->m, raid_disks * sizeof(*nm))))
		r = -ENOMEM;
	if (r < 0)
		goto unlock;
	if (raid_disks > old) {
		a->m = nm;
		memset(a->m + old, 0, (raid_disks - old) * sizeof(*a->m));
	}
	a->vol.size = shrunk;
	memcpy(roles, a->roles, sizeof(roles));
	memcpy(old_roles, a->roles, sizeof(roles));
	max_dev = old_max = a->max_dev;
	unsigned nused = 0;
	for (unsigned i = 0; i < old; i++)
		if (a->m[i].sb)
			used[nused++] = a->m[i].sb->dev_number;
	for (unsigned k = 0; k < a->nretired; k++)
		if (a->retired[k].sb)
			used[nused++] = a->retired[k].sb->dev_number;
	/* The superblocks of a reshape at its start, as md_reshape_restripe
	 * writes them offline: the new members' first. */
	md_reshape_plan_super(&p, &f0, &tmpl);
	for (unsigned i = 0; i < nnew && r == 0; i++) {
		r = md_manage_pick_slot(roles, max_dev, raid_disks, used, nused, &tmpl,
		                        a->vol.name);
		if (r < 0)
			break;
		unsigned slot = (unsigned)r;
		used[nused++] = slot;
		for (uint32_t k = max_dev; k < slot; k++)
			roles[k] = MD_ROLE_SPARE;
		if (slot >= max_dev)
			max_dev = slot + 1;
		roles[slot] = (uint16_t)(old - pm + i);
		r = md_manage_new_super(news[i], news[i]->name, &tmpl, a->m[0].vol, slot, end_sb[i],
		                        &nsb[i]);
		if (r < 0)
			break;
		/* pm: the first takes the missing parity role, recovering: the
		 * reshape brings it in sync as it passes (md_reshape_grow()'s
		 * rule offline) */
		if (pm && i == 0)
			md_manage_mark_recovering(&nsb[i], roles, old - 1);
		md_manage_set_state(&nsb[i], a->events + 1, max_dev, roles);
		err_clear();
		wrote = true;
		r = md_super_write(news[i], &nsb[i]);
	}
	for (unsigned i = 0; i < nnew && r == 0; i++) {
		struct md_super *sb = malloc(sizeof(*sb));
		if (!sb) {
			r = -ENOMEM;
			break;
		}
		*sb = nsb[i];
		a->m[old - pm + i] =
		    (struct md_member){.vol = news[i], .sb = sb, .recovering = pm && i == 0};
	}
	if (r < 0) {
		for (unsigned i = 0; i < nnew; i++)
			free(a->m[old - pm + i].sb);
		if (raid_disks > old - pm)
			memset(a->m + old - pm, 0, (raid_disks - old + pm) * sizeof(*a->m));
		a->vol.size = size0;
		goto unlock;
	}
	if (raid_disks > old)
		a->n = raid_disks;
	memcpy(a->roles, roles, sizeof(roles));
	a->max_dev = max_dev;
	for (unsigned i = 0; i < old; i++)
		if (a->m[i].sb)
			md_reshape_start_take(a->m[i].sb, &tmpl);
	r = md_array_sync(a, atomic_load(&a->active));
	if (r == 0)
		r = md_reshape_parse(a->m[0].sb, a->vol.name, &rs);
	if (r == 0)
		r = md_reshape_begin(a, &rs);
	if (r < 0) {
		/* The members go on in the old geometry; the superblocks that
		 * took the reshape's start are put back (a start would
		 * otherwise continue it, which is just as safe). */
		for (unsigned i = 0; i < old; i++) {
			if (!a->m[i].sb)
				continue;
			a->m[i].sb->feature_map &= ~MD_FEATURE_RESHAPE;
			md_reshape_start_take(a->m[i].sb, &f0);
		}
		md_array_grow_undo(a, old, pm, old_roles, old_max);
		a->vol.size = size0;
		if (md_array_sync(a, atomic_load(&a->active)) < 0)
			log_warn("%s: could not record that the reshape did not start",
			         a->vol.name);
		goto unlock;
	}
	a->rs_rec_enabled = a->rec.enabled;
	a->rec.enabled = false;
	a->rs_ev_next = 0;
	md_reshape_plan_say(&p, &f0, what, sizeof(what));
	log_info("%s: reshaping %u -> %u devices%s while serving", a->vol.name, old, raid_disks,
	         what);
unlock:
	pthread_mutex_unlock(&a->lock);
	md_io_release(a);
	if (r == 0) {
		int e = md_reshape_start(a);
		if (e < 0)
			log_warn("%s: %s; the reshape goes on at the next start", a->vol.name,
			         err_detail(e));
	}
	if (r < 0 && wrote)
		log_warn("%s: reshape not started: %s", a->vol.name, err_detail(r));
out:
	free(sbs);
	free(specs);
	free(end_sb);
	free(used);
	free(nsb);
	return r;
}
