/* md_create.c — a new md array of v1.x superblocks (1.2 unless told 1.1 or
 * 1.0), as `mdadm --create --metadata=1.x` makes one (md_create.h;
 * `uraid create` parses and prints, cli/cmd_create.c).
 *
 * The layouts are mdadm's: 1.2 and 1.1 put the superblock at sector 8 or
 * 0, then the bitmap 4 KiB after it, the bad-block log after the bitmap
 * room, and the data from md_default_data_offset(); 1.0 puts the data
 * first (from sector 0) and, below its superblock at the member's end,
 * the bitmap room and then the bad-block log (bitmap_offset and
 * bblog_offset negative).
 *
 * Nothing is written until every check has passed: sizes, and (unless
 * force) that no member already holds an md superblock, a LUKS header, a
 * filesystem or a partition table (probe.c, the list add and grow use too).
 *
 * Consistency: mdadm leaves a new RAID1/10/5/6 "active" and the kernel
 * copies one mirror over the others (or computes parity) in the
 * background.  We make the copies agree before any superblock exists
 * instead, by zeroing every member's data area (a hole punch on files,
 * BLKZEROOUT on devices; zeros are their own parity, P and Q alike), and
 * write the superblocks last, marked clean.  assume_clean skips the
 * zeroing, as with mdadm.  A crash during create leaves no superblock. */
#include "md_create.h"
#include "md.h"
#include "md_bitmap.h"
#include "md_ppl.h"
#include "probe.h"

#include "core/log.h"
#include "core/random.h"
#include "member/member.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void md_create_defaults(int level, struct md_create_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->level = level;
	o->bitmap = -1;
	o->chunk_kib = level == 1 || level == MD_LEVEL_LINEAR ? 0 : 512;
	if (level == 10 || level == 5 || level == 6)
		md_layout_parse(level, md_level_info(level)->default_layout, &o->layout);
	else if (level == 0)
		o->layout = MD_RAID0_ORIG_LAYOUT;
}

/* The array bytes of a new array whose members each use size sectors (as
 * the kernel sizes it). */
static uint64_t md_create_array_bytes(const struct md_create_opts *o, unsigned n, uint64_t size)
{
	uint64_t chunk = (uint64_t)o->chunk_kib * 2;

	switch (o->level) {
	case 1:
		return size * 512;
	case 4:
	case 5:
	case 6:
		return size * (n - md_level_parity(o->level)) * 512;
	case 10:
		return size / chunk / MD_RAID10_FAR(o->layout) * n / MD_RAID10_NEAR(o->layout) *
		       chunk * 512;
	default:
		return 0;
	}
}

/* mdadm's array name: "host:name" when it fits, else the name alone. */
static void md_create_set_name(const char *name, char out[33])
{
	char host[65] = "";

	if (!name)
		name = "uraid";
	gethostname(host, sizeof(host) - 1);
	memset(out, 0, 33);
	if (!strchr(name, ':') && host[0] && strlen(host) + 1 + strlen(name) < 32) {
		strcpy(out, host);
		strcat(out, ":");
		strcat(out, name);
	} else
		strncpy(out, name, 31);
}

/* mdadm's choose_bm_space() for a used size of size sectors: the room a
 * write-intent bitmap gets, whether or not one is made. */
static uint64_t md_create_bm_room(uint64_t size)
{
	if (size < 128)
		return 0;
	return size - 128 >= 200ull * 1024 * 1024 * 2 ? 256
	       : size - 8 > 8ull * 1024 * 1024 * 2    ? 128
	                                              : 8;
}

/* The sectors of a member of s sectors that a new array may use (mdadm's
 * avail_size1): after data_offset, or for 1.0 before the superblock, the
 * bad-block log and the bitmap room mdadm reserves. */
static uint64_t md_create_avail(bool data_first, uint64_t s, uint64_t data_offset, bool ppl)
{
	uint64_t over = 8 * 2 + 8 + (ppl ? MD_PPL_AREA_SECTORS : md_create_bm_room(s));

	if (data_first)
		return (s & ~7ull) > over ? (s & ~7ull) - over : 0;
	return s > data_offset ? s - data_offset : 0;
}

/* sb's per-member fields for a member of member_bytes: where the
 * superblock goes, the data size, the bad-block log and (with bitmap)
 * the bitmap's offset; raw starts over, all zero, but for them. */
static void md_create_layout(struct md_super *sb, uint64_t member_bytes, uint64_t bm_room,
                             bool bitmap, bool ppl)
{
	struct md_sb1 *raw = (struct md_sb1 *)sb->raw;
	uint64_t at = md_super_offset(sb, member_bytes) / 512;

	memset(sb->raw, 0, sizeof(sb->raw));
	raw->magic = htole32(MD_SB_MAGIC); /* a 1.x block to md_super_bitmap_area */
	raw->major_version = htole32(1);
	sb->super_offset = at;
	if (md_sb_version_data_first(sb->version)) {
		/* data | bitmap room | bad-block log | superblock */
		sb->data_size = at - sb->data_offset - bm_room - 8;
		raw->bblog_size = htole16(8);
		raw->bblog_offset = htole32((uint32_t)-8);
		if (bitmap)
			raw->bitmap_offset = htole32((uint32_t) - (int32_t)(bm_room + 8));
		if (ppl) /* ppl {offset, size} share the bitmap_offset word */
			raw->bitmap_offset = htole32((uint32_t)bm_room << 16 |
			                             (uint16_t)(int16_t) - (int16_t)(bm_room + 8));
		return;
	}
	/* superblock | bitmap room | bad-block log | data */
	sb->data_size = member_bytes / 512 - sb->data_offset;
	if (sb->data_offset >= at + 8 + bm_room + 8) {
		raw->bblog_size = htole16(8);
		raw->bblog_offset = htole32((uint32_t)(8 + bm_room));
	}
	if (bitmap)
		raw->bitmap_offset = htole32(8);
	if (ppl)
		raw->bitmap_offset = htole32((uint32_t)bm_room << 16 | 8);
}

/* The PPL area of a new member as mdadm's write_init_ppl1 leaves it: all
 * zero but an empty header at its start. */
static int md_create_ppl_area(struct vol *m, const struct md_super *sb)
{
	struct md_ppl_header h = {.signature = md_ppl_signature(sb->set_uuid)};
	int32_t off;
	uint32_t size;
	char *buf;
	int r;

	if (!md_super_ppl(sb, &off, &size))
		return -EINVAL;
	if (!(buf = vol_buf_alloc((uint64_t)size * 512)))
		return -ENOMEM;
	memset(buf, 0, (uint64_t)size * 512);
	md_ppl_header_encode(&h, buf);
	r = vol_write(m, buf, (uint64_t)size * 512,
	              (uint64_t)((int64_t)sb->super_offset + off) * 512, 0);
	free(buf);
	return r;
}

int md_create(char **specs, unsigned n, const struct md_create_opts *o, struct md_created *out)
{
	struct vol **m = NULL;
	struct md_super *sb = NULL;
	unsigned i;
	uint64_t min_sectors = UINT64_MAX, data_offset, min_avail = UINT64_MAX;
	uint8_t set_uuid[16], *bm_block = NULL;
	const struct md_sb_version *v = o->version ? o->version : md_sb_version_default();
	bool data_first;
	int r;

	unsigned nall = n + (o->journal != NULL); /* the journal is member n */

	memset(out, 0, sizeof(*out));
	if (strncmp(v->name, "1.", 2) != 0)
		return err_set(-ENOTSUP, "uraid creates md 1.x superblocks, not v%s", v->name);
	if (o->journal && (!md_level_parity(o->level) || o->bitmap == 1))
		return err_set(-EINVAL, "a write journal needs raid4/5/6 and no bitmap");
	if (o->write_behind && (o->level != 1 || o->bitmap != 1))
		return err_set(-EINVAL,
		               "write-behind needs raid1 and a write-intent bitmap (as md's)");
	if (o->write_behind > MD_BITMAP_WRITE_BEHIND_MAX)
		return err_set(-EINVAL, "write-behind is at most %u writes (md's)",
		               MD_BITMAP_WRITE_BEHIND_MAX);
	m = calloc(nall, sizeof(*m));
	sb = calloc(1, sizeof(*sb));
	if (!m || !sb) {
		r = -ENOMEM;
		goto out;
	}
	for (i = 0; i < nall; i++) {
		const char *spec = i < n ? specs[i] : o->journal;
		if (strcmp(spec, "missing") == 0)
			continue;
		err_clear();
		r = member_open(spec, 0, &m[i]);
		if (r < 0)
			goto out;
		if (i < n && m[i]->size / 512 < min_sectors)
			min_sectors = m[i]->size / 512;
		if (!o->force) {
			err_clear();
			r = probe_member_refuse(m[i], spec);
			if (r < 0)
				goto out;
		}
	}

	data_first = md_sb_version_data_first(v);
	data_offset = data_first ? 0
	              : o->ppl ? md_data_offset_room(min_sectors, o->chunk_kib, MD_PPL_AREA_SECTORS)
	                       : md_default_data_offset(min_sectors, o->chunk_kib);
	for (i = 0; i < nall; i++) {
		uint64_t s = m[i] ? m[i]->size / 512 : 0, avail;
		if (!m[i])
			continue;
		avail = md_create_avail(data_first, s, data_offset, o->ppl);
		/* the journal: room for a log of 16 blocks at least */
		if (avail <= (i == n ? 128 : o->chunk_kib ? o->chunk_kib * 2 : 128)) {
			r = err_set(
			    -ENOSPC,
			    "%s is too small (%llu sectors; v%s metadata takes %llu of them)",
			    i < n ? specs[i] : o->journal, (unsigned long long)s, v->name,
			    (unsigned long long)(s > avail ? s - avail : s));
			goto out;
		}
		if (i < n && avail < min_avail)
			min_avail = avail;
	}

	memset(sb, 0, sizeof(*sb));
	if (random_fill(set_uuid, 16) < 0) {
		r = -EIO;
		goto out;
	}
	memcpy(sb->set_uuid, set_uuid, 16);
	md_create_set_name(o->name, sb->set_name);
	sb->ctime = sb->utime = (uint64_t)time(NULL);
	sb->level = o->level;
	sb->layout = o->layout;
	sb->chunk = o->chunk_kib * 2;
	sb->raid_disks = n;
	/* Used size per member: raid1 rounds to 64K (as mdadm, for a later
	 * reshape), raid10 to the chunk; raid0 and linear record 0 and use
	 * each member's whole data area. */
	if (o->level == 1)
		sb->size = min_avail & ~127ull;
	else if (o->level == 10 || md_level_parity(o->level))
		sb->size = min_avail / sb->chunk * sb->chunk;
	sb->data_offset = data_offset;
	sb->version = v; /* super_offset, data_size: per member, below */
	sb->events = 0;
	sb->resync_offset = MD_MAX_SECTOR;
	sb->max_dev = (((256 + 2 * nall) + 511) / 512 * 512 - 256) / 2;
	for (i = 0; i < MD_SB_MAX_DEV; i++)
		sb->roles[i] = MD_ROLE_SPARE;
	for (i = 0; i < n; i++)
		if (m[i])
			sb->roles[i] = (uint16_t)i;
	if (o->journal) {
		sb->roles[n] = MD_ROLE_JOURNAL;
		sb->feature_map |= MD_FEATURE_JOURNAL;
	}
	if (o->level == 0) {
		/* Members of different sizes make a multi-zone raid0, which
		 * kernels since 5.4 only assemble with an explicit layout. */
		uint64_t zone = UINT64_MAX;
		for (i = 0; i < n; i++) {
			if (!m[i])
				continue;
			md_create_layout(sb, m[i]->size, 0, false, false);
			if (zone != UINT64_MAX && sb->data_size / sb->chunk != zone)
				sb->feature_map |= MD_FEATURE_RAID0_LAYOUT;
			zone = sb->data_size / sb->chunk;
		}
	}

	/* The write-intent bitmap, in the room mdadm keeps for it (after the
	 * superblock, or below it for 1.0: md_create_layout), all clear (the
	 * array starts clean), events matching the superblock's. */
	uint64_t bm_room = o->ppl ? MD_PPL_AREA_SECTORS : md_create_bm_room(sb->size);
	struct md_bitmap_info bmi = {0};
	int bitmap = o->ppl ? 0 : o->bitmap;
	if (o->ppl && (o->level != 5 || o->bitmap == 1)) {
		r = err_set(-EINVAL, "a PPL needs raid5 and no write-intent bitmap (as md's)");
		goto out;
	}
	if (o->ppl)
		sb->feature_map |= MD_FEATURE_PPL;
	if (bitmap == -1)
		bitmap = !o->journal && md_level_redundant(o->level) &&
		         md_create_array_bytes(o, n, sb->size) > (100ull << 30);
	if (bitmap == 1) {
		struct md_bitmap_geom g;
		uint64_t index;
		if (!bm_room ||
		    (!data_first && data_offset < md_super_offset(sb, 0) / 512 + 8 + bm_room) ||
		    md_bitmap_geom_init(&g, o->level, n, sb->chunk, sb->size,
		                        md_create_array_bytes(o, n, sb->size)) < 0) {
			r = err_set(-ENOSPC, "no room for a write-intent bitmap");
			goto out;
		}
		index = md_bitmap_index_size(&g);
		uint64_t chunk = md_bitmap_pick_chunk(index, bm_room * 512, o->bitmap_chunk);
		if (!chunk) {
			r = err_set(
			    -EINVAL,
			    "a bitmap chunk of %llu bytes needs more bits than the %llu bytes "
			    "of bitmap room hold; take a larger one",
			    (unsigned long long)o->bitmap_chunk, (unsigned long long)bm_room * 512);
			goto out;
		}
		bmi.version = MD_BITMAP_V;
		memcpy(bmi.uuid, set_uuid, 16);
		bmi.sync_size = index / 512;
		bmi.chunksize = (uint32_t)chunk;
		bmi.daemon_sleep = MD_BITMAP_DEFAULT_SLEEP;
		bmi.write_behind = o->write_behind;
		bmi.sectors_reserved = (uint32_t)bm_room;
		if (!(bm_block = vol_buf_alloc(4096))) {
			r = -ENOMEM;
			goto out;
		}
		memset(bm_block, 0, 4096);
		md_bitmap_encode(&bmi, bm_block);
		sb->feature_map |= MD_FEATURE_BITMAP_OFFSET;
	}

	/* Data first: wipe any old superblock (with --force) and the space up
	 * to the data (old bitmaps, bad-block logs), zero the mirrors so they
	 * agree; the new superblocks come last. */
	for (i = 0; i < nall; i++) {
		uint64_t meta, meta_end, bm_at, bm_end;
		if (!m[i])
			continue;
		md_create_layout(sb, m[i]->size, bm_room, bm_block != NULL, o->ppl);
		md_super_meta_area(sb, m[i]->size, &meta, &meta_end);
		err_clear();
		r = vol_write_zeroes(m[i], meta_end - meta, meta, VOL_MAY_TRIM);
		if (r == 0 && md_level_redundant(o->level) && !o->assume_clean)
			r = vol_write_zeroes(m[i], sb->data_size * 512, data_offset * 512,
			                     VOL_MAY_TRIM);
		if (r == 0 && bm_block) {
			r = md_super_bitmap_area(sb, m[i]->size, &bm_at, &bm_end);
			if (r == 0)
				r = vol_write(m[i], bm_block, 4096, bm_at, 0);
		}
		if (r == 0 && o->ppl)
			r = md_create_ppl_area(m[i], sb);
		if (r == 0)
			r = vol_flush(m[i]);
		if (r < 0) {
			r = err_set(r, "%s: zeroing failed: %s", i < n ? specs[i] : o->journal,
			            strerror(-r));
			goto out;
		}
	}
	for (i = 0; i < nall; i++) {
		if (!m[i])
			continue;
		sb->dev_number = i;
		sb->devflags = o->devflags && i < n ? o->devflags[i] : 0;
		md_create_layout(sb, m[i]->size, bm_room, bm_block != NULL, o->ppl);
		if (random_fill(sb->device_uuid, 16) < 0) {
			r = -EIO;
			goto out;
		}
		err_clear();
		r = md_super_write(m[i], sb);
		if (r < 0)
			goto out;
	}
	memcpy(out->set_name, sb->set_name, sizeof(out->set_name));
	md_uuid_format(set_uuid, out->uuid);
	out->bitmap_chunk = bm_block ? bmi.chunksize : 0;
	r = 0;
out:
	if (m)
		for (i = 0; i < nall; i++)
			vol_close(m[i]);
	free(m);
	free(sb);
	free(bm_block);
	return r;
}
