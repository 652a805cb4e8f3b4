/* md_create.c — a new md array of v1.2 superblocks, as `mdadm --create
 * --metadata=1.2` makes one (md_create.h; `uraid create` parses and
 * prints, cli/cmd_create.c).
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

int md_create(char **specs, unsigned n, const struct md_create_opts *o, struct md_created *out)
{
	struct vol **m = NULL;
	struct md_super *sb = NULL;
	unsigned i;
	uint64_t min_sectors = UINT64_MAX, data_offset, min_avail = UINT64_MAX;
	uint8_t set_uuid[16], *bm_block = NULL;
	int r;

	memset(out, 0, sizeof(*out));
	m = calloc(n, sizeof(*m));
	sb = calloc(1, sizeof(*sb));
	if (!m || !sb) {
		r = -ENOMEM;
		goto out;
	}
	for (i = 0; i < n; i++) {
		if (strcmp(specs[i], "missing") == 0)
			continue;
		err_clear();
		r = member_open(specs[i], 0, &m[i]);
		if (r < 0)
			goto out;
		if (m[i]->size / 512 < min_sectors)
			min_sectors = m[i]->size / 512;
		if (!o->force) {
			err_clear();
			r = probe_member_refuse(m[i], specs[i]);
			if (r < 0)
				goto out;
		}
	}

	data_offset = md_default_data_offset(min_sectors, o->chunk_kib);
	for (i = 0; i < n; i++) {
		uint64_t s = m[i] ? m[i]->size / 512 : 0;
		if (!m[i])
			continue;
		if (s <= data_offset + (o->chunk_kib ? o->chunk_kib * 2 : 128)) {
			r = err_set(-ENOSPC, "%s is too small (%llu sectors; data starts at %llu)",
			            specs[i], (unsigned long long)s,
			            (unsigned long long)data_offset);
			goto out;
		}
		if (s - data_offset < min_avail)
			min_avail = s - data_offset;
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
	else if (o->level == 10 || o->level == 5 || o->level == 6)
		sb->size = min_avail / sb->chunk * sb->chunk;
	sb->data_offset = data_offset;
	sb->version = md_sb_version_default(); /* super_offset: per member, below */
	sb->events = 0;
	sb->resync_offset = MD_MAX_SECTOR;
	sb->max_dev = (((256 + 2 * n) + 511) / 512 * 512 - 256) / 2;
	for (i = 0; i < MD_SB_MAX_DEV; i++)
		sb->roles[i] = MD_ROLE_SPARE;
	for (i = 0; i < n; i++)
		if (m[i])
			sb->roles[i] = (uint16_t)i;
	if (o->level == 0) {
		/* Members of different sizes make a multi-zone raid0, which
		 * kernels since 5.4 only assemble with an explicit layout. */
		for (i = 0; i < n; i++)
			if (m[i] &&
			    (m[i]->size / 512 - data_offset) / sb->chunk != min_avail / sb->chunk)
				sb->feature_map |= MD_FEATURE_RAID0_LAYOUT;
	}

	/* The write-intent bitmap: 4 KiB after the superblock (bitmap_offset
	 * 8), in the room mdadm keeps for it, all clear (the array starts
	 * clean), events matching the superblock's.  MD_SB_SECTOR here and in
	 * the bad-block log below is 1.2's layout arithmetic, as mdadm's. */
	uint64_t bm_room = 0;
	if (sb->size >= 128)
		bm_room = sb->size - 128 >= 200ull * 1024 * 1024 * 2 ? 256
		          : sb->size - 8 > 8ull * 1024 * 1024 * 2    ? 128
		                                                     : 8;
	struct md_bitmap_info bmi = {0};
	int bitmap = o->bitmap;
	if (bitmap == -1)
		bitmap = md_level_redundant(o->level) &&
		         md_create_array_bytes(o, n, sb->size) > (100ull << 30);
	if (bitmap == 1) {
		struct md_bitmap_geom g;
		uint64_t index;
		if (!bm_room || data_offset < MD_SB_SECTOR + 8 + bm_room ||
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
	for (i = 0; i < n; i++) {
		if (!m[i])
			continue;
		uint64_t sb_at = md_super_offset(sb, m[i]->size);
		err_clear();
		r = vol_write_zeroes(m[i], data_offset * 512 - sb_at, sb_at, VOL_MAY_TRIM);
		if (r == 0 && md_level_redundant(o->level) && !o->assume_clean)
			r = vol_write_zeroes(m[i], m[i]->size - data_offset * 512,
			                     data_offset * 512, VOL_MAY_TRIM);
		if (r == 0 && bm_block)
			r = vol_write(m[i], bm_block, 4096, sb_at + 8 * 512, 0);
		if (r == 0)
			r = vol_flush(m[i]);
		if (r < 0) {
			r = err_set(r, "%s: zeroing failed: %s", specs[i], strerror(-r));
			goto out;
		}
	}
	for (i = 0; i < n; i++) {
		uint64_t s, bm;
		if (!m[i])
			continue;
		s = m[i]->size / 512;
		sb->dev_number = i;
		sb->super_offset = md_super_offset(sb, m[i]->size) / 512;
		sb->data_size = s - data_offset;
		if (random_fill(sb->device_uuid, 16) < 0) {
			r = -EIO;
			goto out;
		}
		/* mdadm's bad-block log: 4 KiB after the bitmap room. */
		memset(sb->raw, 0, sizeof(sb->raw));
		bm = 0;
		if (sb->size >= 128)
			bm = sb->size - 128 >= 200ull * 1024 * 1024 * 2 ? 256
			     : sb->size - 8 > 8ull * 1024 * 1024 * 2    ? 128
			                                                : 8;
		if (data_offset >= MD_SB_SECTOR + 8 + bm + 8) {
			struct md_sb1 *raw = (struct md_sb1 *)sb->raw;
			raw->bblog_size = htole16(8);
			raw->bblog_offset = htole32((uint32_t)(8 + bm));
		}
		if (bm_block)
			((struct md_sb1 *)sb->raw)->bitmap_offset = htole32(8);
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
		for (i = 0; i < n; i++)
			vol_close(m[i]);
	free(m);
	free(sb);
	free(bm_block);
	return r;
}
