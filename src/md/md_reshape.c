/* md_reshape.c — an md array with a reshape under way (md_reshape.h):
 * the rules its superblocks must keep (md_reshape_parse, as the kernel's
 * raid5 run() checks them), the vol that serves it from its two
 * geometries, and opening it for md_assemble.c (md_reshape_open: each
 * member's old and new data areas cut out, one RAID vol per geometry).
 * The per-member half of the rules (where the new data area lies) is
 * md.c's md_super_check(). */
#include "md_internal.h"
#include "md_reshape.h"

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

int md_reshape_parse(const struct md_super *fresh, const char *name, struct md_reshape *out)
{
	const struct md_level_info *lv = md_level_info(fresh->level);
	int64_t old_disks = (int64_t)fresh->raid_disks - fresh->delta_disks;
	uint64_t dev, stripe, chunk_s, old_size, new_size;
	unsigned parity;

	memset(out, 0, sizeof(*out));
	if (!lv || (fresh->level != 5 && fresh->level != 6))
		return err_set(-ENOTSUP,
		               "%s: md records a reshape of a %s array, which uraid does not "
		               "reshape (raid5 and raid6 only)",
		               name, lv ? lv->name : "unknown");
	if (fresh->new_level != fresh->level)
		return err_set(-ENOTSUP,
		               "%s: md records a reshape from level %d to level %d, which uraid "
		               "does not continue (nor does the kernel)",
		               name, fresh->level, fresh->new_level);
	if (fresh->feature_map & (MD_FEATURE_ANY_PPL | MD_FEATURE_JOURNAL))
		return err_set(-ENOTSUP, "%s: a reshape of an array with a PPL or a journal", name);
	parity = lv->parity;
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
	if (!md_reshape_layout_ok(lv, fresh->new_layout) || fresh->new_chunk == 0 ||
	    fresh->new_chunk > UINT32_MAX / 512 || fresh->new_chunk % 8)
		return err_set(-EINVAL,
		               "%s: md reshape's new layout %u or new chunk %u sectors is not one "
		               "%s takes",
		               name, fresh->new_layout, fresh->new_chunk, lv->name);
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
	/* raid5_size(): the used size in whole chunks of both geometries. */
	chunk_s = fresh->chunk > fresh->new_chunk ? fresh->chunk : fresh->new_chunk;
	dev = fresh->size - fresh->size % chunk_s;
	old_size = dev * (uint64_t)(old_disks - parity);
	new_size = dev * (uint64_t)(fresh->raid_disks - parity);
	if (fresh->reshape_position > (old_size > new_size ? old_size : new_size))
		return err_set(-EINVAL,
		               "%s: md reshape_position %llu is past the end of the array (%llu "
		               "sectors before, %llu after)",
		               name, (unsigned long long)fresh->reshape_position,
		               (unsigned long long)old_size, (unsigned long long)new_size);
	stripe = chunk_s * (fresh->raid_disks - parity);
	if (fresh->reshape_position % stripe)
		return err_set(-EINVAL,
		               "%s: md reshape_position %llu is not on a stripe boundary of the "
		               "new geometry (%llu sectors)",
		               name, (unsigned long long)fresh->reshape_position,
		               (unsigned long long)stripe);
	out->pos = fresh->reshape_position * 512;
	out->backwards = fresh->feature_map & MD_FEATURE_RESHAPE_BACKWARDS;
	out->size = (old_size < new_size ? old_size : new_size) * 512;
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

/* ---- the vol ---- */

struct md_reshape_vol {
	struct vol vol;
	struct vol *from, *to;
	uint64_t pos;
	bool backwards;
};

static struct md_reshape_vol *to_rv(struct vol *v)
{
	return container_of(v, struct md_reshape_vol, vol);
}

/* The geometry holding array byte off, and how many bytes from off on it
 * holds (up to len). */
static struct vol *rv_place(struct md_reshape_vol *x, uint64_t off, uint64_t len, uint64_t *n)
{
	bool below = off < x->pos;

	*n = below && len > x->pos - off ? x->pos - off : len;
	return below != x->backwards ? x->to : x->from;
}

static int rv_read(struct vol *v, void *buf, uint64_t len, uint64_t off)
{
	struct md_reshape_vol *x = to_rv(v);
	uint64_t n;
	int r = 0;

	while (len && r == 0) {
		struct vol *g = rv_place(x, off, len, &n);
		r = g->ops->read(g, buf, n, off);
		buf = (char *)buf + n;
		off += n;
		len -= n;
	}
	return r;
}

static int rv_write(struct vol *v, const void *buf, uint64_t len, uint64_t off, unsigned flags)
{
	(void)v, (void)buf, (void)len, (void)off, (void)flags;
	return -EROFS;
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

int md_reshape_vol_open(struct vol *from, struct vol *to, const struct md_reshape *rs,
                        const char *name, struct vol **out)
{
	struct md_reshape_vol *x = calloc(1, sizeof(*x));
	uint32_t bmin = from->block_min > to->block_min ? from->block_min : to->block_min;
	uint64_t size = rs->size;
	int r;

	if (size > from->size)
		size = from->size;
	if (size > to->size)
		size = to->size;
	size -= size % bmin;
	if (!x || rs->pos % bmin) {
		r = x ? err_set(-EINVAL, "%s: reshape position %llu is not a multiple of %u bytes",
		                name, (unsigned long long)rs->pos, bmin)
		      : -ENOMEM;
		goto fail;
	}
	r = vol_init(&x->vol, &md_reshape_ops, name, size, bmin,
	             VOL_CAP_READONLY | ((from->caps | to->caps) & VOL_CAP_FLUSH));
	if (r < 0)
		goto fail;
	x->vol.block_pref = from->block_pref > to->block_pref ? from->block_pref : to->block_pref;
	x->vol.block_max = from->block_max < to->block_max ? from->block_max : to->block_max;
	x->from = from;
	x->to = to;
	x->pos = rs->pos;
	x->backwards = rs->backwards;
	*out = &x->vol;
	return 0;
fail:
	free(x);
	vol_close(from);
	vol_close(to);
	return r;
}

/* ---- opening it (md_assemble.c) ---- */

/* The RAID vol of geometry g over role's data areas areas[] (NULL where
 * missing), which it takes (closed here on failure). */
static int md_reshape_raid(struct md_array *a, const struct raid_geom *g, struct vol **areas,
                           const char *name, struct vol **out)
{
	struct raid_events ev = {.member_failed = md_member_failed, .ctx = a};
	int r = raid_open(g, areas, &ev, name, out);

	if (r < 0)
		for (unsigned role = 0; role < g->raid_disks; role++)
			vol_close(areas[role]);
	return r;
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
	for (unsigned role = 0; role < a->n && r == 0; role++) {
		struct md_member *mm = &a->m[role];
		uint64_t off, size;
		if (!mm->vol)
			continue;
		if (mm->recovering) {
			r = err_set(-ENOTSUP, "%s: %s is being rebuilt during a reshape", name,
			            mm->vol->name);
			break;
		}
		md_super_new_data_area(mm->sb, &off, &size);
		if (role < rs->from.raid_disks)
			r = slice_open(mm->vol, mm->sb->data_offset * 512, mm->sb->data_size * 512,
			               false, mm->vol->name, &from[role]);
		if (r == 0 && role < rs->to.raid_disks)
			r = slice_open(mm->vol, off * 512, size * 512, false, mm->vol->name,
			               &to[role]);
		if (r < 0)
			r = err_set(r, "%s: %s: cannot cut out the data areas", name,
			            mm->vol->name);
	}
	if (r < 0) {
		for (unsigned role = 0; role < a->n; role++) {
			vol_close(from[role]);
			vol_close(to[role]);
		}
		goto out;
	}
	r = md_reshape_raid(a, &rs->from, from, name, &vfrom);
	if (r < 0) {
		for (unsigned role = 0; role < a->n; role++)
			vol_close(to[role]);
		goto out;
	}
	r = md_reshape_raid(a, &rs->to, to, name, &vto);
	if (r < 0) {
		vol_close(vfrom);
		goto out;
	}
	r = md_reshape_vol_open(vfrom, vto, rs, name, &a->raid);
	if (r < 0)
		goto out;
	r = md_vol_init(a, name, true);
	if (r < 0) {
		vol_close(a->raid);
		a->raid = NULL;
	}
out:
	free(from);
	free(to);
	return r;
}
