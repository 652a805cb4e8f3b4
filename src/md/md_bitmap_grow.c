/* md_bitmap_grow.c — an internal write-intent bitmap added to an existing
 * md array, or removed, offline (md_bitmap_grow.h; `uraid grow
 * --bitmap=internal|none`, cli/cmd_grow.c).
 *
 * mdadm does this on a running array: Grow_addbitmap writes each in-sync
 * member's bitmap (add_internal_bitmap1 places it, write_bitmap1 writes
 * it, every bit set) and the kernel then takes it (sysfs bitmap/location)
 * and writes the superblocks with MD_FEATURE_BITMAP_OFFSET; --bitmap=none
 * clears the feature and leaves the old bitmap's blocks as they were.
 * Offline we leave what that leaves: the same place and chunk, the header
 * the kernel would then write (events and events_cleared the array's,
 * sectors_reserved the room), and bits all clear where the array is clean
 * and whole (the kernel clears mdadm's set bits unsynced then, as
 * md_bitmap_load starts them at recovery_cp), else all set.  The bitmap
 * goes down (flushed) before any superblock names it; the superblocks get
 * events + 1.  The codec is md_bitmap.c's, the upkeep md_bitmap_load.c's. */
#include "md_bitmap_grow.h"
#include "md_bitmap.h"
#include "md_internal.h"
#include "md_journal.h"
#include "md_manage.h"
#include "md_sb090.h"

#include "core/log.h"
#include "core/units.h"
#include "disc/raid/raid.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The bad-block log's sectors mdadm keeps free when a member has none. */
#define BMG_BBL_SECTORS 8

int md_bitmap_place(const struct md_super *sb, uint64_t member_bytes, uint64_t index_bytes,
                    uint64_t want, const char *name, int32_t *offset, uint64_t *chunk,
                    uint32_t *room_out)
{
	const struct md_sb1 *raw = (const struct md_sb1 *)sb->raw;
	int64_t bbl_size = md_le16(raw->bblog_size), bbl_off = (int32_t)md_le32(raw->bblog_offset);
	int64_t room, off, reserve = 0; /* set where off is 0 (gcc -O3 cannot see it) */
	uint64_t c;

	if (sb->super_offset > member_bytes / 512 || sb->data_offset > member_bytes / 512 ||
	    sb->data_size > member_bytes / 512)
		return err_set(-EUCLEAN, "%s: superblock offsets past the member's end", name);
	if (!md_sb_version_data_first(md_super_version(sb))) {
		/* superblock | 4 KiB | bitmap ... | bad-block log | data */
		room = (int64_t)sb->data_offset - (int64_t)sb->super_offset;
		if (bbl_size && bbl_off > 0 && bbl_off < room)
			room = bbl_off;
		else
			room -= BMG_BBL_SECTORS;
		room -= 8;
		off = 8;
	} else {
		/* data | ... bitmap | bad-block log | superblock */
		room = (int64_t)sb->super_offset - (int64_t)(sb->data_offset + sb->data_size);
		reserve = bbl_size < BMG_BBL_SECTORS ? BMG_BBL_SECTORS : bbl_size;
		if (reserve < -bbl_off)
			reserve = -bbl_off;
		if (room < 6 && sb->max_dev <= 384) {
			room = 6; /* mdadm: 1 KiB after the superblock, in its 4 KiB */
			off = 2;
			reserve = 0;
		} else {
			off = 0; /* below, placed once the size is known */
		}
		room -= reserve;
	}
	if (room <= 1)
		return err_set(-ENOSPC,
		               "%s: no room for a write-intent bitmap between the superblock and "
		               "the data (%lld sectors)",
		               name, (long long)(room > 0 ? room : 0));
	c = md_bitmap_pick_chunk(index_bytes, (uint64_t)room * 512, want);
	if (!c)
		return err_set(-EINVAL,
		               "%s: a bitmap chunk of %llu bytes needs more bits than the %lld "
		               "sectors of bitmap room hold; take a larger one",
		               name, (unsigned long long)want, (long long)room);
	if (off == 0) {
		/* mdadm's sizing: bits + 1, the header, in whole 4 KiB. */
		uint64_t bits = index_bytes / c + 1;
		int64_t need = (int64_t)((bits + 7) / 8 + MD_BITMAP_HDR + 4095) / 4096 * 8;
		if (need > room)
			return err_set(-ENOSPC,
			               "%s: a write-intent bitmap of %lld sectors does not fit in "
			               "the %lld below the superblock",
			               name, (long long)need, (long long)room);
		off = -need - reserve;
		room = need;
	}
	if (room > UINT32_MAX)
		room = UINT32_MAX;
	*offset = (int32_t)off;
	*chunk = c;
	*room_out = (uint32_t)room;
	return 0;
}

/* The bitmap's index space for the array of f (md_bitmap.h: member bytes,
 * raid10's array bytes); -ENOTSUP (err_set) for a level without one. */
static int bmg_index(const struct md_super *f, const char *name, struct md_bitmap_geom *g)
{
	struct raid_geom rg = {.level = f->level,
	                       .layout = f->layout,
	                       .chunk = f->chunk * 512,
	                       .raid_disks = f->raid_disks,
	                       .dev_size = f->size * 512};
	uint64_t *sizes = calloc(f->raid_disks ? f->raid_disks : 1, sizeof(*sizes));
	uint64_t array = 0;
	int r;

	if (!sizes)
		return -ENOMEM;
	for (unsigned i = 0; i < f->raid_disks; i++)
		sizes[i] = f->size * 512;
	if (md_level_redundant(f->level))
		array = raid_array_size(&rg, sizes);
	free(sizes);
	r = md_bitmap_geom_init(g, f->level, f->raid_disks, f->chunk, f->size, array);
	if (r < 0) {
		const char *lv = md_level_name(f->level);
		return err_set(-ENOTSUP,
		               "%s is %s: a write-intent bitmap needs raid1, 10, 4, 5 or 6 (mdadm: "
		               "\"Bitmaps not meaningful\" without copies or parity)",
		               name, lv ? lv : "of an unknown level");
	}
	return 0;
}

/* The members given are one array, fresh enough, and hold every active
 * role; *whole: every role in sync. */
static int bmg_check_members(char **specs, unsigned nm, struct md_super **sbs, unsigned fresh,
                             const char *name, bool *whole)
{
	const struct md_super *f = sbs[fresh];
	uint32_t max_dev = f->max_dev < MD_SB_MAX_DEV ? f->max_dev : MD_SB_MAX_DEV;
	unsigned insync = 0;
	int r;

	for (unsigned i = 0; i < nm; i++) {
		const struct md_super *sb = sbs[i];
		unsigned slot = sb->dev_number,
		         role = slot < max_dev ? f->roles[slot] : MD_ROLE_SPARE;
		r = md_super_same_geometry(sb, specs[i], f, specs[fresh], name);
		if (r < 0)
			return r;
		for (unsigned j = 0; j < i; j++)
			if (sbs[j]->dev_number == slot)
				return err_set(-EINVAL,
				               "%s: %s and %s are the same member (slot %u)", name,
				               specs[j], specs[i], slot);
		if (role == MD_ROLE_FAULTY)
			return err_set(-EINVAL,
			               "%s: %s is marked faulty in the array; leave it out", name,
			               specs[i]);
		if (sb->events + 1 < f->events)
			return err_set(-EINVAL,
			               "%s: %s is stale (events %llu, newest %llu): leave it out",
			               name, specs[i], (unsigned long long)sb->events,
			               (unsigned long long)f->events);
		if (role < f->raid_disks && !(sb->feature_map & MD_FEATURE_RECOVERY_OFFSET))
			insync++;
	}
	for (unsigned slot = 0; slot < max_dev; slot++) {
		bool given = false;
		if (f->roles[slot] >= f->raid_disks)
			continue;
		for (unsigned i = 0; i < nm; i++)
			given |= sbs[i]->dev_number == slot;
		if (!given)
			return err_set(
			    -ENODEV,
			    "%s: role %u (slot %u) is held by a member that is not given; "
			    "give every member of the array",
			    name, f->roles[slot], slot);
	}
	if (!insync)
		return err_set(-ENODEV, "%s: no member given is in sync", name);
	*whole = insync == f->raid_disks;
	return 0;
}

/* What the array must not have for either change. */
static int bmg_refusals(const struct md_super *f, const struct md_bitmap_grow_opts *o,
                        const char *name)
{
	const char *what = o->add ? "adding a write-intent bitmap" : "removing the bitmap";
	int r;

	if ((r = md_sb090_refuse(f, name, what)) < 0)
		return r;
	if (md_journal_refuse(f, name, what) < 0)
		return -ENOTSUP;
	if ((r = md_super_no_reshape(f, name)) < 0)
		return r;
	if (f->feature_map & MD_FEATURE_ANY_PPL)
		return err_set(-ENOTSUP,
		               "%s has a PPL: md keeps a PPL or a write-intent bitmap, not both "
		               "(mdadm: \"Cannot add bitmap to array with PPL\")",
		               name);
	if (o->add && (f->feature_map & MD_FEATURE_BITMAP_OFFSET))
		return err_set(-EEXIST,
		               "%s has a write-intent bitmap already (mdadm: \"bitmap "
		               "already present\"); remove it first to change it",
		               name);
	if (!o->add && !(f->feature_map & MD_FEATURE_BITMAP_OFFSET))
		return err_set(-ENOENT, "%s has no write-intent bitmap to remove", name);
	if (o->write_behind && (!o->add || f->level != 1))
		return err_set(-EINVAL,
		               "%s: write-behind needs raid1 and a write-intent bitmap "
		               "added with it (md's)",
		               name);
	if (o->write_behind > MD_BITMAP_WRITE_BEHIND_MAX)
		return err_set(-EINVAL, "%s: write-behind is at most %u writes", name,
		               MD_BITMAP_WRITE_BEHIND_MAX);
	return 0;
}

/* Each member's bitmap written and flushed: hdr with bits all clear, or
 * all set (set). */
static int bmg_write_bitmaps(char **specs, unsigned nm, struct vol **vols, struct md_super **sbs,
                             const struct md_bitmap_info *hdr, uint64_t nchunks, bool set,
                             uint32_t room)
{
	uint64_t bytes = md_bitmap_bytes(nchunks);
	int r = 0;

	for (unsigned i = 0; i < nm && r == 0; i++) {
		uint64_t unit = vols[i]->block_min > 512 ? vols[i]->block_min : 512;
		uint64_t len = (bytes + 4095) / 4096 * 4096, at;
		uint8_t *buf;
		if (len > (uint64_t)room * 512)
			len = (bytes + unit - 1) / unit * unit;
		at = (uint64_t)((int64_t)sbs[i]->super_offset +
		                (int32_t)md_le32(((struct md_sb1 *)sbs[i]->raw)->bitmap_offset)) *
		     512;
		if (at % unit || len > (uint64_t)room * 512)
			return err_set(-ENOSPC,
			               "%s: the write-intent bitmap does not fit its %u sectors in "
			               "units of %llu bytes",
			               specs[i], room, (unsigned long long)unit);
		if (!(buf = vol_buf_alloc(len)))
			return -ENOMEM;
		memset(buf, 0, len);
		md_bitmap_encode(hdr, buf);
		for (uint64_t c = 0; set && c < nchunks; c++)
			buf[MD_BITMAP_HDR + c / 8] |= (uint8_t)(1u << (c % 8));
		err_clear();
		r = vol_write(vols[i], buf, len, at, 0);
		if (r == 0)
			r = vol_flush(vols[i]);
		if (r < 0)
			r = err_set(r, "%s: writing the write-intent bitmap: %s", specs[i],
			            strerror(-r));
		free(buf);
	}
	return r;
}

int md_bitmap_grow(char **specs, unsigned nm, struct vol **vols, struct md_super **sbs,
                   unsigned fresh, const struct md_bitmap_grow_opts *o,
                   const struct md_rebuild_out *out)
{
	struct md_super *f = sbs[fresh];
	struct md_bitmap_geom g;
	struct md_bitmap_info hdr = {0};
	uint64_t index = 0, chunk = o->chunk, events = f->events + 1;
	uint32_t room = 0, max_dev = f->max_dev < MD_SB_MAX_DEV ? f->max_dev : MD_SB_MAX_DEV;
	int32_t offset = 0;
	uint16_t roles[MD_SB_MAX_DEV];
	bool whole = false;
	char name[48], csize[32];
	int r;

	memcpy(roles, f->roles, sizeof(roles));
	md_super_array_name(f, name, sizeof(name));
	r = bmg_refusals(f, o, name);
	if (r == 0 && o->add)
		r = bmg_index(f, name, &g);
	if (r == 0)
		r = bmg_check_members(specs, nm, sbs, fresh, name, &whole);
	if (r < 0 || !o->add)
		goto write;
	/* The place on every member: mdadm picks the chunk on the first and
	 * keeps it for the others; uraid keeps one offset for all. */
	index = md_bitmap_index_size(&g);
	for (unsigned i = 0; i < nm && r == 0; i++) {
		int32_t off;
		uint32_t rm;
		err_clear();
		r = md_bitmap_place(sbs[i], vols[i]->size, index, chunk, specs[i], &off, &chunk,
		                    &rm);
		if (r == 0 && i && off != offset)
			r = err_set(-EINVAL,
			            "%s: the bitmap would lie %d sectors from the superblock on %s "
			            "and %d on %s; uraid keeps one place on every member",
			            name, (int)offset, specs[0], (int)off, specs[i]);
		offset = off;
		room = i == 0 || rm < room ? rm : room;
	}
	if (r < 0)
		goto out;
	hdr.version = MD_BITMAP_V;
	md_super_bitmap_uuid(f, hdr.uuid);
	hdr.events = hdr.events_cleared = events;
	hdr.sync_size = index / 512;
	hdr.chunksize = (uint32_t)chunk;
	hdr.daemon_sleep = MD_BITMAP_DEFAULT_SLEEP;
	hdr.write_behind = o->write_behind;
	hdr.sectors_reserved = room;
	for (unsigned i = 0; i < nm; i++)
		((struct md_sb1 *)sbs[i]->raw)->bitmap_offset = htole32((uint32_t)offset);
	r = bmg_write_bitmaps(specs, nm, vols, sbs, &hdr, (index + chunk - 1) / chunk,
	                      !whole || !md_super_clean(f), room);
write:
	/* Checked (and the bitmaps down): the superblocks. */
	for (unsigned i = 0; i < nm && r == 0; i++) {
		struct md_super *sb = sbs[i];
		if (o->add) {
			sb->feature_map |= MD_FEATURE_BITMAP_OFFSET;
		} else {
			sb->feature_map &= ~MD_FEATURE_BITMAP_OFFSET;
			((struct md_sb1 *)sb->raw)->bitmap_offset = 0;
		}
		md_manage_set_state(sb, events, max_dev, roles);
		err_clear();
		r = md_super_write(vols[i], sb);
	}
	if (r < 0)
		goto out;
	if (o->add)
		md_say(out,
		       "%s: internal write-intent bitmap added: %llu chunks of %s, %d sectors "
		       "from the superblock%s%s (events %llu)",
		       name, (unsigned long long)((index + chunk - 1) / chunk),
		       format_size(chunk, csize, sizeof(csize)), (int)offset,
		       whole && md_super_clean(f) ? "" : ", every chunk dirty (not clean or whole)",
		       o->write_behind ? ", write-behind on" : "", (unsigned long long)events);
	else
		md_say(out, "%s: write-intent bitmap removed (events %llu)", name,
		       (unsigned long long)events);
out:
	for (unsigned i = 0; i < nm; i++) {
		vol_close(vols[i]);
		free(sbs[i]);
	}
	return r;
}

int md_bitmap_follow(struct vol **vols, unsigned n, struct vol *src, const struct md_super *f,
                     uint64_t events, const char *name)
{
	/* raid5/6: member sectors, whatever the header says. */
	return md_bitmap_follow_to(vols, n, src, f, events, f->size * 512, f->size * 512, f->size,
	                           name);
}

int md_bitmap_follow_to(struct vol **vols, unsigned n, struct vol *src, const struct md_super *f,
                        uint64_t events, uint64_t old_index, uint64_t new_index,
                        uint64_t sync_sectors, const char *name)
{
	struct md_bitmap_info h;
	uint64_t at, end, len, old_len, nchunks, old_chunks, old_chunk, space;
	uint8_t uuid[16], *buf = NULL, *old = NULL;
	int r;

	if (!(f->feature_map & MD_FEATURE_BITMAP_OFFSET))
		return 0;
	r = md_super_bitmap_area(f, src->size, &at, &end);
	if (r < 0)
		return err_set(r, "%s: the write-intent bitmap's place is not on %s", name,
		               src->name);
	if (!(buf = vol_buf_alloc(4096)))
		return -ENOMEM;
	md_super_bitmap_uuid(f, uuid);
	err_clear();
	r = end - at < 4096 ? -ENOSPC : vol_read(src, buf, 4096, at);
	if (r == 0)
		r = md_bitmap_decode(buf, &h, src->name);
	if (r == 0)
		r = md_bitmap_check(&h, uuid, src->name);
	if (r == 0 && (h.events < f->events || (h.state & MD_BITMAP_STALE)))
		r = err_set(-ESTALE,
		            "%s: the write-intent bitmap on %s is out of date (events %llu, the "
		            "array's %llu): start the array once (uraid serve) to renew it",
		            name, src->name, (unsigned long long)h.events,
		            (unsigned long long)f->events);
	free(buf);
	buf = NULL;
	if (r < 0)
		return r;
	/* A new index space (a raid10's array size): the chunk as
	 * md_bitmap_resize keeps or doubles it within the space reserved
	 * (or the room, where the header reserves none). */
	old_chunk = h.chunksize;
	space = h.sectors_reserved ? (uint64_t)h.sectors_reserved * 512 : end - at;
	if (new_index != old_index)
		h.chunksize = (uint32_t)md_bitmap_resize_chunk(new_index, space, h.chunksize);
	h.sync_size = sync_sectors;
	old_chunks = old_index / old_chunk + (old_index % old_chunk != 0);
	nchunks = new_index / h.chunksize + (new_index % h.chunksize != 0);
	old_len = (md_bitmap_bytes(old_chunks) + 4095) / 4096 * 4096;
	len = (md_bitmap_bytes(nchunks) + 4095) / 4096 * 4096;
	if (nchunks > MD_BITMAP_MAX_CHUNKS || old_chunks > MD_BITMAP_MAX_CHUNKS || len > end - at ||
	    old_len > end - at)
		return err_set(-EUCLEAN, "%s: the write-intent bitmap on %s does not fit its room",
		               name, src->name);
	if (!(buf = vol_buf_alloc(len)) || !(old = vol_buf_alloc(old_len))) {
		free(buf);
		return -ENOMEM;
	}
	r = vol_read(src, old, old_len, at);
	memset(buf, 0, len);
	if (h.chunksize == old_chunk) /* the bits where they were (those past the old end clear) */
		memcpy(buf, old, (old_len < len ? old_len : len));
	else
		md_bitmap_regrid(old, old_chunks, old_chunk, buf, nchunks, h.chunksize);
	for (uint64_t c = old_chunks; h.chunksize == old_chunk && c < nchunks; c++)
		buf[MD_BITMAP_HDR + c / 8] &= (uint8_t) ~(1u << (c % 8));
	free(old);
	h.events = events;
	md_bitmap_encode(&h, buf);
	for (unsigned i = 0; i < n && r == 0; i++) {
		if (at + len > vols[i]->size) {
			r = err_set(-ENOSPC, "%s: no room for the write-intent bitmap",
			            vols[i]->name);
			break;
		}
		r = vol_write(vols[i], buf, len, at, 0);
		if (r == 0)
			r = vol_flush(vols[i]);
		if (r < 0)
			r = err_set(r, "%s: writing the write-intent bitmap: %s", vols[i]->name,
			            strerror(-r));
	}
	free(buf);
	return r;
}

/* md_array_bitmap with a->lock held and no request inside. */
static int bmg_online(struct md_array *a, const struct md_bitmap_grow_opts *o)
{
	const struct md_super *f = NULL;
	struct md_bitmap_info hdr = {0};
	struct md_bitmap_geom g;
	uint64_t chunk = o->chunk, index;
	uint32_t room = 0;
	int32_t offset = 0;
	const char *why = NULL;
	int r;

	for (unsigned i = 0; i < a->n && !f; i++)
		if (a->m[i].vol && a->m[i].sb && !a->m[i].failed)
			f = a->m[i].sb;
	if (!f)
		return err_set(-ENODEV, "%s: no member in sync", a->vol.name);
	if (a->reshaping)
		why = "a reshape is under way";
	else if (a->rec.running || a->readd.running)
		why = "a rebuild is running";
	else if (a->scrub.running || a->scrub.req != MD_CHECK_STOP)
		why = "a check is running";
	if (why) /* the kernel's EBUSY; mdadm: "Cannot add bitmap while array is resyncing..." */
		return err_set(-EBUSY, "%s: cannot change the write-intent bitmap: %s", a->vol.name,
		               why);
	if ((r = bmg_refusals(f, o, a->vol.name)) < 0)
		return r;
	if (!o->add) {
		md_bitmap_free(a->bm.map);
		a->bm.map = NULL;
		a->bm.trusted = false;
	} else {
		if ((r = bmg_index(f, a->vol.name, &g)) < 0)
			return r;
		index = md_bitmap_index_size(&g);
		for (unsigned i = 0; i < a->n; i++) {
			struct md_member *mm = &a->m[i];
			int32_t off;
			uint32_t rm;
			if (!mm->vol || !mm->sb || mm->failed)
				continue;
			err_clear();
			r = md_bitmap_place(mm->sb, mm->vol->size, index, chunk, mm->vol->name,
			                    &off, &chunk, &rm);
			if (r == 0 && room && off != offset)
				r = err_set(-EINVAL,
				            "%s: the bitmap would lie at %d sectors from the "
				            "superblock on one member, %d on %s",
				            a->vol.name, (int)offset, (int)off, mm->vol->name);
			if (r < 0)
				return r;
			offset = off;
			room = !room || rm < room ? rm : room;
		}
		hdr.version = MD_BITMAP_V;
		md_super_bitmap_uuid(f, hdr.uuid);
		hdr.events = hdr.events_cleared = a->events;
		hdr.sync_size = index / 512;
		hdr.chunksize = (uint32_t)chunk;
		hdr.daemon_sleep = MD_BITMAP_DEFAULT_SLEEP;
		hdr.write_behind = o->write_behind;
		hdr.sectors_reserved = room;
		r = md_bm_attach(a, f, &hdr, offset, (uint64_t)room * 512,
		                 md_degraded(a) || a->unclean);
		if (r < 0)
			return r;
	}
	/* The superblocks (spares' too) name it, or no longer. */
	for (unsigned k = 0; k < a->n + a->nspare; k++) {
		struct md_super *sb = k < a->n ? a->m[k].sb : a->spare[k - a->n].sb;
		if (!sb)
			continue;
		struct md_sb1 *raw = (struct md_sb1 *)sb->raw;
		if (o->add) {
			sb->feature_map |= MD_FEATURE_BITMAP_OFFSET;
			raw->bitmap_offset = htole32((uint32_t)offset);
		} else {
			sb->feature_map &= ~MD_FEATURE_BITMAP_OFFSET;
			raw->bitmap_offset = 0;
		}
	}
	r = md_array_sync(a, atomic_load(&a->active));
	if (r == 0 && a->level == 1)
		raid_set_write_behind(a->raid, o->add ? o->write_behind : 0);
	if (r == 0 && o->add)
		log_info(
		    "%s: write-intent bitmap added (%llu chunks of %llu bytes, %d sectors from "
		    "the superblock)",
		    a->vol.name, (unsigned long long)md_bitmap_chunks(a->bm.map),
		    (unsigned long long)chunk, (int)offset);
	else if (r == 0)
		log_info("%s: write-intent bitmap removed", a->vol.name);
	return r;
}

int md_array_bitmap(struct vol *v, const struct md_bitmap_grow_opts *o)
{
	struct md_array *a = md_of(v);
	int r;

	if (!a)
		return err_set(-EINVAL, "%s is not an md array", v->name);
	if (a->readonly)
		return err_set(-EROFS, "%s is served read-only", a->vol.name);
	if ((r = md_repl_busy(a, "change its bitmap")) < 0)
		return r;
	r = md_io_hold(a);
	if (r < 0)
		return err_set(r, "%s: requests in flight did not drain", a->vol.name);
	/* What was acknowledged reaches every copy before a clear bit
	 * says that its chunk's copies agree. */
	for (unsigned i = 0; i < a->n && r == 0; i++)
		if (a->m[i].vol && !a->m[i].failed && o->add && vol_flush(a->m[i].vol) < 0)
			r = err_set(-EIO, "%s: flushing %s failed", a->vol.name, a->m[i].vol->name);
	if (r == 0) {
		pthread_mutex_lock(&a->lock);
		r = bmg_online(a, o);
		pthread_mutex_unlock(&a->lock);
	}
	md_io_release(a);
	return r;
}
