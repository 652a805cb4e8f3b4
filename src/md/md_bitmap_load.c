/* md_bitmap_load.c — at a writable start, the internal write-intent
 * bitmap the superblock records: the freshest valid header on the
 * members, their bits merged when up to date, and the writer that keeps
 * every member's copy (md_bitmap_io.write).  Each member's copy lies at
 * bitmap_offset from its own superblock (md_super_bitmap_area): for 1.0
 * members of different sizes, at different places.  The codec is md_bitmap.c's;
 * md_vol.c marks and clears the bits as the array is written. */
#include "md_internal.h"

#include "core/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Where mm's copy of the bitmap starts, in bytes. */
static uint64_t md_bm_at(const struct md_array *a, const struct md_member *mm)
{
	return (uint64_t)((int64_t)mm->sb->super_offset + a->bm.off) * 512;
}

/* md_bitmap_io.write: the image's bytes [off, off+len) to every live
 * member (all of it to a member whose bitmap is not known to be ours yet),
 * flushed.  Called with a->lock held. */
static int md_bm_io_write(void *ctx, const uint8_t *img, size_t off, size_t len)
{
	struct md_array *a = ctx;
	size_t img_len;
	int written = 0, last = -EIO;

	md_bitmap_image(a->bm.map, &img_len);
	for (unsigned i = 0; i < 2 * a->n; i++) {
		/* Each role's member, then the replacements being built. */
		struct md_member *mm = i < a->n ? &a->m[i] : a->m[i - a->n].repl;
		if (!mm)
			continue;
		size_t o = mm->bm_ok ? off : 0, l = mm->bm_ok ? len : img_len;
		int e;

		if (!mm->vol || mm->failed)
			continue;
		e = vol_write(mm->vol, img + o, l, md_bm_at(a, mm) + o, 0);
		if (e == 0)
			e = vol_flush(mm->vol);
		if (e < 0) {
			mm->bm_ok = false;
			last = err_set(e, "%s: %s", mm->vol->name, strerror(-e));
			continue;
		}
		mm->bm_ok = true;
		written++;
	}
	return written ? 0 : last;
}

/* The index space of a's bitmap: under a reshape (md_reshape_open, or
 * md_reshape_begin on a served array) both geometries, the old one's
 * first. */
static int md_bm_geom(const struct md_array *a, const struct md_super *fresh,
                      struct md_bitmap_geom *g)
{
	/* raid10's index space is the array's bytes, which a reshape keeps
	 * in place: one geometry whichever way it goes, of the new size (the
	 * kernel resized it so at the start) or what is served. */
	if (a->reshaping && a->level == 10)
		return md_bitmap_geom_init(g, a->level, a->n, fresh->chunk, a->size,
		                           a->reshape.to_end > a->vol.size ? a->reshape.to_end
		                                                           : a->vol.size);
	if (!a->reshaping)
		return md_bitmap_geom_init(g, a->level, a->n, fresh->chunk, a->size, a->vol.size);
	int r = md_bitmap_geom_init(g, a->level, a->reshape.from.raid_disks,
	                            a->reshape.from.chunk / 512, a->size, a->vol.size);
	return r < 0 ? r : md_bitmap_geom_also(g, a->reshape.to.raid_disks, a->reshape.to.chunk);
}

/* a's bitmap resized to index bytes of index space (with a->lock held
 * and no write in flight): the chunk as md_bitmap_resize keeps or
 * doubles it within the space the header reserves, the set bits carried
 * over, the whole image written to every member.  0 or -errno; the old
 * bitmap stays on failure. */
static int md_bm_resize(struct md_array *a, uint64_t index)
{
	struct md_bitmap_io io = {.write = md_bm_io_write, .ctx = a};
	const struct md_bitmap_info *old = md_bitmap_header(a->bm.map);
	struct md_bitmap_info h = *old;
	struct md_bitmap *b = NULL, *was = a->bm.map;
	uint64_t space = h.sectors_reserved ? (uint64_t)h.sectors_reserved * 512 : a->bm.room;
	uint32_t unit = 512;
	size_t old_len;
	const uint8_t *oimg = md_bitmap_image(was, &old_len);
	int r;

	h.chunksize = (uint32_t)md_bitmap_resize_chunk(index, space, old->chunksize);
	h.sync_size = index / 512;
	uint64_t n = index / h.chunksize + (index % h.chunksize != 0);
	uint8_t *img = calloc(1, md_bitmap_bytes(n));
	if (!img)
		return -ENOMEM;
	md_bitmap_regrid(oimg, md_bitmap_chunks(was), old->chunksize, img, n, h.chunksize);
	for (unsigned i = 0; i < a->n; i++)
		if (a->m[i].vol && a->m[i].vol->block_min > unit)
			unit = a->m[i].vol->block_min;
	err_clear();
	r = md_bitmap_new(&h, index, unit, a->bm.room, img, &io, a->vol.name, &b);
	free(img);
	if (r < 0)
		return r;
	for (unsigned i = 0; i < a->n; i++)
		a->m[i].bm_ok = false; /* each gets the whole image */
	size_t len;
	const uint8_t *nimg = md_bitmap_image(b, &len);
	a->bm.map = b; /* the writer asks it for the image's length */
	r = md_bm_io_write(a, nimg, 0, len);
	if (r < 0) {
		a->bm.map = was;
		md_bitmap_free(b);
		return r;
	}
	md_bitmap_free(was);
	a->bm.geom.array_size = index;
	return 0;
}

void md_bm_reshape(struct md_array *a, bool ended)
{
	if (!a->bm.map)
		return;
	if (a->level == 10) {
		/* A write dirties the chunk of its array bytes, whichever
		 * geometry it lands in, and a resync from the bitmap rewrites
		 * those through the reshape vol: both copies of the geometry
		 * that holds them.  The size follows the kernel's: resized to
		 * the new size at a device count change's start
		 * (raid10_start_reshape), and at the end to what is served. */
		const struct md_reshape *rs = &a->reshape;
		uint64_t want = ended                                      ? a->vol.size
		                : rs->from.raid_disks != rs->to.raid_disks ? rs->to_end
		                                                           : a->bm.geom.array_size;
		if (want < a->vol.size)
			want = a->vol.size;
		int r = want != a->bm.geom.array_size ? md_bm_resize(a, want) : 0;
		if (r < 0) {
			/* Left behind the superblock's events, it is called out
			 * of date at the next start: a whole resync then. */
			log_warn(
			    "%s: the write-intent bitmap cannot be resized to %llu bytes (%s): "
			    "it is not kept up from now on; after a crash the whole array is "
			    "resynced",
			    a->vol.name, (unsigned long long)want, err_detail(r));
			md_bitmap_free(a->bm.map);
			a->bm.map = NULL;
		}
		return;
	}
	if (ended) {
		md_bitmap_geom_swap(&a->bm.geom);
		a->bm.geom.array_size = a->vol.size;
	} else if (md_bitmap_geom_also(&a->bm.geom, a->reshape.to.raid_disks, a->reshape.to.chunk) <
	           0) {
		log_warn("%s: the write-intent bitmap cannot follow the reshape", a->vol.name);
	}
}

/* A writable start of an array whose superblock (fresh) records an
 * internal write-intent bitmap: a->bm.map is kept up from now on, and
 * a->bm.trusted says whether its bits may guide a resync (found valid on
 * some member and not behind the superblock's events; the bits of every
 * such member are merged).  One that is out of date starts over, all
 * clear with the array's events (a resync due now covers everything).
 * One that cannot be used at all is warned about and left alone: a crash
 * then costs a full resync, as before. */
void md_bm_load(struct md_array *a, const struct md_super *fresh)
{
	struct md_bitmap_io io = {.write = md_bm_io_write, .ctx = a};
	struct md_bitmap_info ref, h;
	struct md_bitmap *b = NULL;
	uint64_t room, ref_events = 0;
	uint32_t unit = 512;
	uint8_t uuid[16];
	uint8_t *buf = NULL;
	char why[256] = "no member holds a valid one";
	bool have = false;
	int r;

	if (!(fresh->feature_map & MD_FEATURE_BITMAP_OFFSET) || a->readonly)
		return;
	if (md_bm_geom(a, fresh, &a->bm.geom) < 0) {
		log_warn("%s: a write-intent bitmap on a %s array is not used", a->vol.name,
		         md_level_name(a->level));
		return;
	}
	for (unsigned i = 0; i < a->n; i++)
		if (a->m[i].vol && a->m[i].vol->block_min > unit)
			unit = a->m[i].vol->block_min;
	/* Every member's copy must fit where its superblock says, at the
	 * same offset from it on each (1.0's and 0.90's superblocks move with
	 * the member's size); the room is the least of theirs. */
	room = UINT64_MAX;
	for (unsigned i = 0; i < a->n; i++) {
		struct md_member *mm = &a->m[i];
		uint64_t start, end;
		int64_t off;
		if (!mm->vol || mm->failed)
			continue;
		r = md_super_bitmap_area(mm->sb, mm->vol->size, &start, &end);
		off = (int64_t)(start / 512) - (int64_t)mm->sb->super_offset;
		if (room == UINT64_MAX)
			a->bm.off = off;
		if (r < 0 || off != a->bm.off || start % unit || end < start + unit) {
			snprintf(why, sizeof(why),
			         "bitmap at sector %lld from the superblock does not fit on %s "
			         "(units of %u bytes)",
			         (long long)off, mm->vol->name, unit);
			goto unusable;
		}
		if (end - start < room)
			room = end - start;
	}
	md_super_bitmap_uuid(fresh, uuid);
	if (room == UINT64_MAX)
		goto unusable;
	if (!(buf = vol_buf_alloc(unit))) {
		snprintf(why, sizeof(why), "out of memory");
		goto unusable;
	}
	/* The reference header: the valid one of the freshest member. */
	for (unsigned i = 0; i < a->n; i++) {
		struct md_member *mm = &a->m[i];
		if (!mm->vol || mm->failed)
			continue;
		err_clear();
		r = vol_read(mm->vol, buf, unit, md_bm_at(a, mm));
		if (r == 0)
			r = md_bitmap_decode(buf, &h, mm->vol->name);
		if (r == 0)
			r = md_bitmap_check(&h, uuid, mm->vol->name);
		if (r < 0) {
			snprintf(why, sizeof(why), "%s", err_detail(r));
			continue;
		}
		if (!have || mm->sb->events > ref_events) {
			ref = h;
			ref_events = mm->sb->events;
			have = true;
		}
	}
	if (!have)
		goto unusable;
	a->bm.trusted = ref.events >= fresh->events && !(ref.state & MD_BITMAP_STALE);
	if (!a->bm.trusted) {
		log_warn("%s: write-intent bitmap is out of date (events %llu, array %llu%s): "
		         "starting it over",
		         a->vol.name, (unsigned long long)ref.events,
		         (unsigned long long)fresh->events,
		         ref.state & MD_BITMAP_STALE ? ", marked stale" : "");
		ref.events = ref.events_cleared = fresh->events;
		ref.state &= ~(MD_BITMAP_STALE | MD_BITMAP_WRITE_ERROR);
	}
	err_clear();
	r = md_bitmap_new(&ref, md_bitmap_index_size(&a->bm.geom), unit, room, NULL, &io,
	                  a->vol.name, &b);
	if (r < 0) {
		snprintf(why, sizeof(why), "%s", err_detail(r));
		goto unusable;
	}
	size_t img_len;
	const uint8_t *img = md_bitmap_image(b, &img_len);
	free(buf);
	if (!(buf = vol_buf_alloc(img_len))) {
		md_bitmap_free(b);
		buf = NULL;
		snprintf(why, sizeof(why), "out of memory");
		goto unusable;
	}
	/* Two passes over the members: merge the bits of every up-to-date
	 * bitmap, then note which members hold exactly ours. */
	for (int pass = 0; pass < 2; pass++)
		for (unsigned i = 0; i < a->n; i++) {
			struct md_member *mm = &a->m[i];
			if (!mm->vol || mm->failed)
				continue;
			err_clear();
			if (vol_read(mm->vol, buf, img_len, md_bm_at(a, mm)) < 0 ||
			    md_bitmap_decode(buf, &h, mm->vol->name) < 0 ||
			    md_bitmap_check(&h, uuid, mm->vol->name) < 0)
				continue;
			if (pass == 1)
				mm->bm_ok = memcmp(buf, img, img_len) == 0;
			else if (a->bm.trusted && h.chunksize == ref.chunksize &&
			         h.events >= fresh->events && !(h.state & MD_BITMAP_STALE))
				md_bitmap_merge(b, buf);
		}
	free(buf);
	a->bm.map = b;
	a->bm.room = room;
	log_info("%s: keeping its write-intent bitmap (%llu chunks of %u bytes, %llu dirty)",
	         a->vol.name, (unsigned long long)md_bitmap_chunks(b), ref.chunksize,
	         (unsigned long long)md_bitmap_dirty(b));
	return;
unusable:
	free(buf);
	log_warn("%s: write-intent bitmap unusable (%s): not kept up; after a crash the whole "
	         "array is resynced",
	         a->vol.name, why);
}

int md_bm_attach(struct md_array *a, const struct md_super *fresh, const struct md_bitmap_info *hdr,
                 int64_t off, uint64_t room, bool all_set)
{
	struct md_bitmap_io io = {.write = md_bm_io_write, .ctx = a};
	struct md_bitmap_geom g;
	struct md_bitmap *b = NULL;
	uint8_t *img = NULL;
	uint32_t unit = 512;
	size_t len;
	int r;

	r = md_bm_geom(a, fresh, &g);
	if (r < 0)
		return err_set(-ENOTSUP, "%s: a write-intent bitmap on a %s array is not kept",
		               a->vol.name, md_level_name(a->level));
	for (unsigned i = 0; i < a->n; i++)
		if (a->m[i].vol && a->m[i].vol->block_min > unit)
			unit = a->m[i].vol->block_min;
	if (all_set) {
		uint64_t n = md_bitmap_bytes(md_bitmap_index_size(&g) / hdr->chunksize + 1);
		if (!(img = malloc(n)))
			return -ENOMEM;
		memset(img, 0xff, n);
	}
	err_clear();
	r = md_bitmap_new(hdr, md_bitmap_index_size(&g), unit, room, img, &io, a->vol.name, &b);
	free(img);
	if (r < 0)
		return r;
	a->bm.off = off;
	a->bm.room = room;
	a->bm.geom = g;
	for (unsigned i = 0; i < a->n; i++)
		a->m[i].bm_ok = false; /* each gets the whole image */
	img = (uint8_t *)md_bitmap_image(b, &len);
	a->bm.map = b; /* the writer asks it for the image's length */
	r = md_bm_io_write(a, img, 0, len);
	if (r < 0) {
		a->bm.map = NULL;
		md_bitmap_free(b);
		return err_set(r, "%s: writing the write-intent bitmap: %s", a->vol.name,
		               err_detail(r));
	}
	a->bm.trusted = true;
	return 0;
}
