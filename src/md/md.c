/* md.c — reading, checking and writing md superblocks (see md.h).
 *
 * Where a superblock lives is one table, md_sb_versions[]: reading tries
 * each entry's offset, writing and checking use the version a superblock
 * was read (or created) with.  The 1.x versions share one codec and
 * differ only in where the superblock sits: 1.2 4 KiB from the start,
 * 1.1 at the start (the data after it for both), 1.0 near the end (the
 * data before it: md_sb_version_data_first()).
 *
 * Nothing here trusts a field before the magic, version, max_dev bound and
 * checksum have been verified; md_super_check() then applies the kernel's
 * own sanity rules (super_1_load) plus ours for the geometry, so that a
 * superblock we accept is one the kernel would accept too. */
#include "md.h"

#include "core/log.h"
#include "md_sb090.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static const struct md_sb1 *sb_const(const void *buf)
{
	return (const struct md_sb1 *)buf;
}

/* ---- the version table ---- */

static uint64_t v12_offset(uint64_t member_bytes)
{
	(void)member_bytes;
	return MD_SB_OFFSET; /* 4 KiB from the start, whatever the size */
}

static uint64_t v11_offset(uint64_t member_bytes)
{
	(void)member_bytes;
	return 0;
}

/* The kernel's and mdadm's rule: 8 to 12 KiB from the end, 4 KiB aligned
 * (sectors (size - 16) & ~7).  UINT64_MAX on a member too small. */
static uint64_t v10_offset(uint64_t member_bytes)
{
	uint64_t sectors = member_bytes / 512;

	if (sectors < 16 + 8)
		return UINT64_MAX;
	return ((sectors - 8 * 2) & ~(uint64_t)(4 * 2 - 1)) * 512;
}

static int sb1_decode(const void *buf, struct md_super *s);
static void sb1_encode(struct md_super *s);
static int sb1_check(const struct md_super *s, uint64_t member_bytes, const char *name);

/* Reading tries them in this order; the first is the default. */
static const struct md_sb_version md_sb_versions[] = {
    {"1.2", v12_offset, sb1_decode, sb1_encode, sb1_check, 512},
    {"1.1", v11_offset, sb1_decode, sb1_encode, sb1_check, 512},
    {"1.0", v10_offset, sb1_decode, sb1_encode, sb1_check, 512},
    {"0.90", md_sb090_offset, md_sb090_decode, md_sb090_encode, md_sb090_check, MD_SB_BLOCK},
};
#define MD_SB_NVERSIONS (sizeof(md_sb_versions) / sizeof(md_sb_versions[0]))

const struct md_sb_version *md_sb_version_default(void)
{
	return &md_sb_versions[0];
}

const struct md_sb_version *md_sb_version_find(const char *name)
{
	if (strcmp(name, "1") == 0 || strcmp(name, "default") == 0)
		return md_sb_version_default(); /* as mdadm reads them */
	for (size_t i = 0; i < MD_SB_NVERSIONS; i++)
		if (strcmp(name, md_sb_versions[i].name) == 0)
			return &md_sb_versions[i];
	return NULL;
}

/* A version whose superblock moves with the member's size keeps it at
 * the end, after the data; the others keep theirs at a fixed place
 * before it.  (Asked of the offset rule itself, so that a version
 * added to the table answers without a flag of its own.) */
bool md_sb_version_data_first(const struct md_sb_version *v)
{
	return v->offset(1ull << 40) != v->offset(1ull << 41);
}

static const struct md_sb_version *sb_version(const struct md_super *s)
{
	return s->version ? s->version : md_sb_version_default();
}

uint64_t md_super_offset(const struct md_super *s, uint64_t member_bytes)
{
	return sb_version(s)->offset(member_bytes);
}

const struct md_sb_version *md_super_version(const struct md_super *s)
{
	return sb_version(s);
}

/* The sectors s keeps between the end of its data and its superblock
 * (data-first versions: bitmap and bad-block log). */
static uint64_t md_super_room_below(const struct md_super *s)
{
	uint64_t end = s->data_offset + s->data_size;
	return s->super_offset > end ? s->super_offset - end : 0;
}

uint64_t md_super_new_data_size(const struct md_super *tmpl, uint64_t member_bytes)
{
	uint64_t sectors = member_bytes / 512, at, room;

	if (!md_sb_version_data_first(sb_version(tmpl)))
		return sectors > tmpl->data_offset ? sectors - tmpl->data_offset : 0;
	at = md_super_offset(tmpl, member_bytes);
	if (at == UINT64_MAX)
		return 0;
	at /= 512;
	room = tmpl->data_offset + md_super_room_below(tmpl);
	return at > room ? at - room : 0;
}

void md_super_meta_area(const struct md_super *s, uint64_t member_bytes, uint64_t *start,
                        uint64_t *end)
{
	if (md_sb_version_data_first(sb_version(s))) {
		*start = (s->data_offset + s->data_size) * 512;
		*end = member_bytes;
	} else {
		*start = s->super_offset * 512;
		*end = s->data_offset * 512;
	}
	if (*end > member_bytes)
		*end = member_bytes;
	if (*start > *end)
		*start = *end;
}

int md_super_bitmap_area(const struct md_super *s, uint64_t member_bytes, uint64_t *start,
                         uint64_t *end)
{
	const struct md_sb1 *sb = sb_const(s->raw);
	int64_t bo = (int32_t)md_le32(sb->bitmap_offset);
	int64_t bb = md_le16(sb->bblog_size) ? (int32_t)md_le32(sb->bblog_offset) : 0;
	int64_t at = (int64_t)s->super_offset, lo, hi;
	int64_t sb_sectors =
	    (256 + 2 * (int64_t)(s->max_dev < MD_SB_MAX_DEV ? s->max_dev : MD_SB_MAX_DEV) + 511) /
	    512;
	int64_t data_end = (int64_t)(s->data_offset + s->data_size);

	if (!(s->feature_map & MD_FEATURE_BITMAP_OFFSET))
		return -ENOENT;
	if (md_sb090_is(s)) {
		/* The kernel's place for 0.90's: after the superblock, in the
		 * rest of its 64 KiB block. */
		*start = (s->super_offset + MD_SB_BLOCK / 512) * 512;
		*end = s->super_offset * 512 + MD_SB090_RESERVED;
		return *end <= member_bytes ? 0 : -EUCLEAN;
	}
	if (md_le32(sb->major_version) != 1)
		return -ENOTSUP; /* the offsets below are 1.x's fields */
	if (s->super_offset > member_bytes / 512 || s->data_offset > member_bytes / 512 ||
	    s->data_size > member_bytes / 512)
		return -EUCLEAN;
	if (bo >= sb_sectors) {
		/* After the superblock: up to the data when it follows, else up
		 * to the member's end; a bad-block log beyond the bitmap ends
		 * it. */
		lo = at + bo;
		hi = (int64_t)s->data_offset > at ? (int64_t)s->data_offset
		                                  : (int64_t)(member_bytes / 512);
		if (bb > bo && at + bb < hi)
			hi = at + bb;
	} else if (bo < 0 && -bo <= at) {
		/* Before it, after the data (1.0): up to the superblock, or to
		 * a bad-block log between them. */
		lo = at + bo;
		hi = at;
		if (bb < 0 && bb > bo)
			hi = at + bb;
		if (lo < data_end)
			return -EUCLEAN;
	} else {
		return -EUCLEAN;
	}
	if (hi - lo < 1 || (uint64_t)hi > member_bytes / 512)
		return -EUCLEAN;
	*start = (uint64_t)lo * 512;
	*end = (uint64_t)hi * 512;
	return 0;
}

uint32_t md_sb_csum(const void *buf)
{
	const uint8_t *p = buf;
	uint32_t max_dev = md_le32(sb_const(buf)->max_dev);
	size_t size, i;
	uint64_t sum = 0;

	if (max_dev > MD_SB_MAX_DEV)
		max_dev = MD_SB_MAX_DEV;
	size = 256 + 2 * (size_t)max_dev;
	for (i = 0; i + 4 <= size; i += 4) {
		uint32_t w;
		if (i == offsetof(struct md_sb1, sb_csum))
			continue; /* counted as zero */
		memcpy(&w, p + i, 4);
		sum += md_le32(w);
	}
	if (size - i == 2) {
		uint16_t h;
		memcpy(&h, p + i, 2);
		sum += md_le16(h);
	}
	return (uint32_t)((sum & 0xffffffffu) + (sum >> 32));
}

/* ---- the 1.x codec (1.0, 1.1 and 1.2) ---- */

int md_super_decode(const void *buf, struct md_super *s)
{
	return sb1_decode(buf, s);
}

static int sb1_decode(const void *buf, struct md_super *s)
{
	const struct md_sb1 *sb = sb_const(buf);
	uint32_t n;

	memset(s, 0, sizeof(*s));
	memcpy(s->raw, buf, MD_SB_BLOCK);
	if (md_le32(sb->magic) != MD_SB_MAGIC)
		return -ENOENT;
	s->feature_map = md_le32(sb->feature_map);
	memcpy(s->set_uuid, sb->set_uuid, 16);
	memcpy(s->set_name, sb->set_name, 32);
	s->set_name[32] = '\0';
	s->ctime = md_le64(sb->ctime);
	s->utime = md_le64(sb->utime);
	s->level = (int32_t)md_le32(sb->level);
	s->layout = md_le32(sb->layout);
	s->size = md_le64(sb->size);
	s->chunk = md_le32(sb->chunksize);
	s->raid_disks = md_le32(sb->raid_disks);
	s->data_offset = md_le64(sb->data_offset);
	s->data_size = md_le64(sb->data_size);
	s->super_offset = md_le64(sb->super_offset);
	s->recovery_offset = md_le64(sb->recovery_offset);
	s->dev_number = md_le32(sb->dev_number);
	memcpy(s->device_uuid, sb->device_uuid, 16);
	s->devflags = sb->devflags;
	s->reshape_position = md_le64(sb->reshape_position);
	s->new_level = (int32_t)md_le32(sb->new_level);
	s->delta_disks = (int32_t)md_le32(sb->delta_disks);
	s->new_layout = md_le32(sb->new_layout);
	s->new_chunk = md_le32(sb->new_chunk);
	s->new_offset = (int32_t)md_le32(sb->new_offset);
	s->events = md_le64(sb->events);
	s->resync_offset = md_le64(sb->resync_offset);
	s->sb_csum = md_le32(sb->sb_csum);
	s->max_dev = md_le32(sb->max_dev);
	n = s->max_dev < MD_SB_MAX_DEV ? s->max_dev : MD_SB_MAX_DEV;
	for (uint32_t i = 0; i < n; i++) {
		uint16_t r;
		memcpy(&r, s->raw + 256 + 2 * i, 2);
		s->roles[i] = md_le16(r);
	}
	for (uint32_t i = n; i < MD_SB_MAX_DEV; i++)
		s->roles[i] = MD_ROLE_SPARE;
	return 0;
}

static bool is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

/* 1.x's own rules (the kernel's super_1_load): the block before any
 * field in it is trusted, then the superblock where its version puts it
 * and the data area on the right side of it: after it (1.1, 1.2) or
 * ending at or before it (1.0). */
static int sb1_check(const struct md_super *s, uint64_t member_bytes, const char *name)
{
	const struct md_sb1 *sb = sb_const(s->raw);
	const struct md_sb_version *v = sb_version(s);
	uint64_t at = md_super_offset(s, member_bytes) / 512;
	uint64_t sb_sectors;
	uint32_t want;

	if (md_le32(sb->magic) != MD_SB_MAGIC)
		return err_set(-ENOENT, "%s: no md superblock", name);
	if (md_le32(sb->major_version) != 1)
		return err_set(-EINVAL, "%s: md superblock major version %u, expected 1", name,
		               md_le32(sb->major_version));
	if (s->max_dev > MD_SB_MAX_DEV)
		return err_set(-EUCLEAN, "%s: md superblock max_dev %u exceeds %u", name,
		               s->max_dev, MD_SB_MAX_DEV);
	want = md_sb_csum(s->raw);
	if (want != s->sb_csum)
		return err_set(-EUCLEAN,
		               "%s: md v%s superblock checksum mismatch (stored %08x, computed "
		               "%08x)",
		               name, v->name, s->sb_csum, want);
	if (s->super_offset != at)
		return err_set(-EINVAL,
		               "%s: md v%s superblock says it lives at sector %llu, not %llu "
		               "(where v%s keeps it on a member of this size: moved or "
		               "resized?)",
		               name, v->name, (unsigned long long)s->super_offset,
		               (unsigned long long)at, v->name);
	if (s->feature_map & ~MD_FEATURE_ALL)
		return err_set(-EINVAL, "%s: md superblock has unknown features 0x%x", name,
		               s->feature_map & ~MD_FEATURE_ALL);
	if (sb->pad0 || memcmp(sb->pad3, (const uint8_t[32]){0}, 32) != 0)
		return err_set(-EINVAL, "%s: md superblock padding is not zero", name);
	sb_sectors = (256 + 2 * (uint64_t)s->max_dev + 511) / 512;
	if (md_sb_version_data_first(v)) {
		if (s->data_offset > at || s->data_size > at - s->data_offset)
			return err_set(-EUCLEAN,
			               "%s: md data area (offset %llu + size %llu sectors) runs "
			               "into the v%s superblock at sector %llu",
			               name, (unsigned long long)s->data_offset,
			               (unsigned long long)s->data_size, v->name,
			               (unsigned long long)at);
	} else if (s->data_offset < at + sb_sectors) {
		return err_set(-EUCLEAN, "%s: md data offset %llu overlaps the v%s superblock",
		               name, (unsigned long long)s->data_offset, v->name);
	}
	return 0;
}

/* md's rules for a PPL (super_1_validate, ppl_validate_rdev): RAID5 only,
 * one of the two feature bits, no bitmap or journal beside it, and an
 * area of a header and one 4 KiB of PP that overlaps neither the
 * superblock's 4 KiB nor the data. */
static int md_super_check_ppl(const struct md_super *s, uint64_t member_bytes, const char *name)
{
	int32_t off;
	uint32_t size;

	if (!md_super_ppl(s, &off, &size))
		return 0;
	if (s->level != 5)
		return err_set(-EINVAL,
		               "%s: md PPL on a level %d array (md keeps it for raid5 only)", name,
		               s->level);
	if ((s->feature_map & MD_FEATURE_ANY_PPL) == MD_FEATURE_ANY_PPL ||
	    (s->feature_map & (MD_FEATURE_BITMAP_OFFSET | MD_FEATURE_JOURNAL)))
		return err_set(-EUCLEAN,
		               "%s: md PPL with a bitmap, a journal or both PPL feature bits "
		               "(features 0x%x)",
		               name, s->feature_map);
	int64_t start = (int64_t)s->super_offset + off, end = start + size;
	int64_t dstart = (int64_t)s->data_offset, dend = dstart + (int64_t)s->data_size;
	if (size < 16 || start < 0 || (uint64_t)end > member_bytes / 512 ||
	    (start < dend && end > dstart) ||
	    (start < (int64_t)s->super_offset + 8 && end > (int64_t)s->super_offset))
		return err_set(-EUCLEAN,
		               "%s: md PPL area (%u sectors at %d from the superblock) overlaps "
		               "the superblock or the data, or lies beyond the member",
		               name, size, off);
	return 0;
}

/* One member's half of a reshape's rules (the array's are md_reshape.c's):
 * the bits that only mean something during one, and a new data area
 * (data_offset + new_offset) that lies after the superblock (1.1, 1.2)
 * and inside the member with room for the used size. */
static int md_super_check_reshape(const struct md_super *s, uint64_t member_bytes, const char *name)
{
	uint64_t at = md_super_offset(s, member_bytes) / 512, off, size;
	int64_t want = (int64_t)s->data_offset + s->new_offset;

	if (!(s->feature_map & MD_FEATURE_RESHAPE))
		return 0;
	if (!(s->feature_map & MD_FEATURE_RESHAPE_ACTIVE))
		return err_set(-EINVAL,
		               "%s: md superblock has reshape features 0x%x without a reshape "
		               "under way",
		               name, s->feature_map & MD_FEATURE_RESHAPE);
	if (!(s->feature_map & MD_FEATURE_NEW_OFFSET))
		return 0;
	md_super_new_data_area(s, &off, &size);
	if (want < 0 || (!md_sb_version_data_first(sb_version(s)) && (uint64_t)want < at + 8) ||
	    size < 10 || (md_level_redundant(s->level) && size < s->size))
		return err_set(-EUCLEAN,
		               "%s: md reshape's new data offset %lld (data offset %llu %+d) "
		               "overlaps the superblock or leaves no room for the data",
		               name, (long long)want, (unsigned long long)s->data_offset,
		               s->new_offset);
	return 0;
}

int md_super_check(const struct md_super *s, uint64_t member_bytes, const char *name)
{
	uint64_t sectors = member_bytes / 512;
	const struct md_level_info *lv;
	int r;

	r = sb_version(s)->check(s, member_bytes, name);
	if (r < 0)
		return r;
	if (s->data_size < 10)
		return err_set(-EUCLEAN, "%s: md data size %llu sectors is too small", name,
		               (unsigned long long)s->data_size);
	if (s->data_offset > sectors || s->data_size > sectors - s->data_offset)
		return err_set(-EUCLEAN,
		               "%s: md data area (offset %llu + size %llu sectors) lies beyond the "
		               "member's %llu sectors (truncated?)",
		               name, (unsigned long long)s->data_offset,
		               (unsigned long long)s->data_size, (unsigned long long)sectors);
	lv = md_level_info(s->level);
	if (!lv)
		return err_set(-EINVAL, "%s: md level %d is unknown", name, s->level);
	if (s->raid_disks < 1 || s->raid_disks >= MD_ROLE_MAX)
		return err_set(-EUCLEAN, "%s: md raid_disks %u is out of range", name,
		               s->raid_disks);
	if ((s->feature_map & MD_FEATURE_RAID0_LAYOUT) && s->level != 0)
		return err_set(-EINVAL, "%s: RAID0 layout flag on a level %d array", name,
		               s->level);
	if (lv->chunked) {
		/* In bytes the chunk must fit 32 bits (raid_geom.chunk): a
		 * larger one would wrap into a different, wrong geometry. */
		if (s->chunk == 0 || s->chunk > UINT32_MAX / 512 ||
		    (s->level == 10 && !is_pow2(s->chunk)))
			return err_set(-EUCLEAN, "%s: md chunk size %u sectors is invalid", name,
			               s->chunk);
	}
	if (lv->redundant) {
		/* A write journal's data area is its log, of its own size. */
		if (s->size > s->data_size && md_super_role(s) != MD_ROLE_JOURNAL)
			return err_set(-EUCLEAN, "%s: md used size %llu exceeds the data size %llu",
			               name, (unsigned long long)s->size,
			               (unsigned long long)s->data_size);
	}
	if (s->level == 10) {
		uint32_t near = MD_RAID10_NEAR(s->layout), far = MD_RAID10_FAR(s->layout);
		if (near < 1 || far < 1 || (s->layout >> 17) || near * far > s->raid_disks)
			return err_set(-EUCLEAN, "%s: raid10 layout 0x%x does not fit %u devices",
			               name, s->layout, s->raid_disks);
	}
	r = md_level_served(s->level, name);
	if (r < 0)
		return r;
	if (s->feature_map & MD_FEATURE_REFUSED)
		return err_set(-ENOTSUP,
		               "%s: md superblock uses features 0x%x (a cluster) "
		               "that uraid does not support",
		               name, s->feature_map & MD_FEATURE_REFUSED);
	r = md_super_check_reshape(s, member_bytes, name);
	if (r < 0)
		return r;
	return md_super_check_ppl(s, member_bytes, name);
}

void md_super_new_data_area(const struct md_super *s, uint64_t *off, uint64_t *size)
{
	uint64_t end = s->data_offset + s->data_size;

	*off = s->data_offset;
	if ((s->feature_map & MD_FEATURE_RESHAPE_ACTIVE) &&
	    (s->feature_map & MD_FEATURE_NEW_OFFSET))
		*off = (uint64_t)((int64_t)s->data_offset + s->new_offset);
	*size = *off < end ? end - *off : 0;
}

int md_super_no_reshape(const struct md_super *s, const char *name)
{
	if (!(s->feature_map & MD_FEATURE_RESHAPE))
		return 0;
	return err_set(-ENOTSUP,
	               "%s: md superblock records a reshape under way (at sector %llu); uraid "
	               "cannot change such an array offline (uraid serve --readonly reads it)",
	               name, (unsigned long long)s->reshape_position);
}

int md_super_no_replacement(const struct md_super *s, const char *name)
{
	if (!md_super_replacement(s))
		return 0;
	return err_set(-ENOTSUP,
	               "%s: md superblock is a replacement being built for role %u (mdadm "
	               "--replace, at sector %llu); uraid cannot change such an array offline "
	               "(a writable uraid serve finishes the replacement)",
	               name, md_super_role(s), (unsigned long long)s->recovery_offset);
}

bool md_super_ppl(const struct md_super *s, int32_t *off, uint32_t *size)
{
	const struct md_sb1 *raw = (const struct md_sb1 *)s->raw;
	uint32_t w = md_le32(raw->bitmap_offset); /* union { bitmap_offset; ppl {offset, size} } */

	if (!(s->feature_map & MD_FEATURE_ANY_PPL) || md_sb090_is(s))
		return false;
	*off = (int16_t)(w & 0xffff);
	*size = w >> 16;
	return true;
}

/* A version that does not record where its superblock lies (0.90, at the
 * end) decodes super_offset as MD_SB_UNPLACED, and data_size as 0 when its
 * data runs from data_offset up to the superblock: where the block was
 * found says both. */
static void sb_place(struct md_super *s, uint64_t at)
{
	if (s->super_offset != MD_SB_UNPLACED)
		return;
	s->super_offset = at / 512;
	if (!s->data_size && s->super_offset > s->data_offset)
		s->data_size = s->super_offset - s->data_offset;
}

int md_super_read_raw(struct vol *member, struct md_super *s)
{
	const struct md_sb_version *first = NULL, *best = NULL, *in_s = NULL, *pick;
	uint64_t best_ctime = 0;
	bool fits = false;
	void *buf;
	int r = 0;

	if (!(buf = vol_buf_alloc(MD_SB_BLOCK)))
		return -ENOMEM;
	for (size_t i = 0; i < MD_SB_NVERSIONS; i++) {
		const struct md_sb_version *v = &md_sb_versions[i];
		uint64_t at = v->offset(member->size);
		if (member->size < MD_SB_BLOCK || at > member->size - MD_SB_BLOCK)
			continue;
		fits = true;
		r = vol_read(member, buf, MD_SB_BLOCK, at);
		if (r < 0)
			goto out;
		in_s = NULL; /* s holds this decode, failed or not */
		if (v->decode(buf, s) < 0)
			continue;
		in_s = v;
		sb_place(s, at);
		if (!first)
			first = v;
		/* Several in place (a stale one of an older array): the
		 * latest created wins, as mdadm's load_super1 picks. */
		if (s->super_offset == at / 512 && (!best || MD_TIME_SECS(s->ctime) > best_ctime)) {
			best = v;
			best_ctime = MD_TIME_SECS(s->ctime);
		}
	}
	r = !fits ? -ENOSPC : !first ? -ENOENT : 0;
	pick = best ? best : first;
	if (pick && pick != in_s) {
		/* Decode it again: a later entry overwrote s. */
		r = vol_read(member, buf, MD_SB_BLOCK, pick->offset(member->size));
		if (r == 0)
			r = pick->decode(buf, s);
		if (r == 0)
			sb_place(s, pick->offset(member->size));
	}
	if (pick && r == 0)
		s->version = pick;
out:
	free(buf);
	return r;
}

int md_super_read(struct vol *member, struct md_super *s)
{
	int r = md_super_read_raw(member, s);

	if (r == -ENOSPC)
		return err_set(-ENOENT, "%s: too small to hold an md superblock", member->name);
	if (r == -ENOENT)
		return err_set(r, "%s: no md superblock", member->name);
	if (r < 0)
		return err_set(r, "%s: reading the md superblock: %s", member->name, strerror(-r));
	return md_super_check(s, member->size, member->name);
}

void md_super_encode(struct md_super *s)
{
	sb_version(s)->encode(s);
}

static void sb1_encode(struct md_super *s)
{
	struct md_sb1 *sb = (struct md_sb1 *)s->raw;
	uint32_t n = s->max_dev < MD_SB_MAX_DEV ? s->max_dev : MD_SB_MAX_DEV;

	sb->magic = htole32(MD_SB_MAGIC);
	sb->major_version = htole32(1);
	sb->feature_map = htole32(s->feature_map);
	sb->pad0 = 0;
	memcpy(sb->set_uuid, s->set_uuid, 16);
	memset(sb->set_name, 0, 32);
	memcpy(sb->set_name, s->set_name, strnlen(s->set_name, 32));
	sb->ctime = htole64(s->ctime);
	sb->level = htole32((uint32_t)s->level);
	sb->layout = htole32(s->layout);
	sb->size = htole64(s->size);
	sb->chunksize = htole32(s->chunk);
	sb->raid_disks = htole32(s->raid_disks);
	sb->data_offset = htole64(s->data_offset);
	sb->data_size = htole64(s->data_size);
	sb->super_offset = htole64(s->super_offset);
	sb->recovery_offset = htole64(s->recovery_offset);
	sb->dev_number = htole32(s->dev_number);
	memcpy(sb->device_uuid, s->device_uuid, 16);
	sb->devflags = s->devflags;
	sb->reshape_position = htole64(s->reshape_position);
	sb->new_level = htole32((uint32_t)s->new_level);
	sb->delta_disks = htole32((uint32_t)s->delta_disks);
	sb->new_layout = htole32(s->new_layout);
	sb->new_chunk = htole32(s->new_chunk);
	sb->new_offset = htole32((uint32_t)s->new_offset);
	sb->utime = htole64(s->utime);
	sb->events = htole64(s->events);
	sb->resync_offset = htole64(s->resync_offset);
	sb->max_dev = htole32(n);
	memset(sb->pad3, 0, sizeof(sb->pad3));
	for (uint32_t i = 0; i < n; i++) {
		uint16_t r = htole16(s->roles[i]);
		memcpy(s->raw + 256 + 2 * i, &r, 2);
	}
	s->max_dev = n;
	s->sb_csum = md_sb_csum(s->raw);
	sb->sb_csum = htole32(s->sb_csum);
}

int md_super_write(struct vol *member, struct md_super *s)
{
	void *buf;
	int r;

	md_super_encode(s);
	if (!(buf = vol_buf_alloc(MD_SB_BLOCK)))
		return -ENOMEM;
	memcpy(buf, s->raw, MD_SB_BLOCK);
	r = vol_write(member, buf, MD_SB_BLOCK, md_super_offset(s, member->size), 0);
	if (r == 0)
		r = vol_flush(member);
	if (r < 0)
		r = err_set(r, "%s: writing the md superblock: %s", member->name, strerror(-r));
	free(buf);
	return r;
}

int md_super_erase(struct vol *member, const struct md_super *s)
{
	const struct md_sb_version *v = sb_version(s);
	uint64_t at = v->offset(member->size);
	uint32_t len = v->bytes > member->block_min ? v->bytes : member->block_min;
	void *buf;
	int r;

	if (len > MD_SB_BLOCK || at > member->size || len > member->size - at)
		return err_set(-EINVAL, "%s: no room for a v%s superblock", member->name, v->name);
	if (!(buf = vol_buf_alloc(len)))
		return -ENOMEM;
	memset(buf, 0, len);
	r = vol_write(member, buf, len, at, 0);
	if (r == 0)
		r = vol_flush(member);
	if (r < 0)
		r = err_set(r, "%s: zeroing the md superblock: %s", member->name, strerror(-r));
	free(buf);
	return r;
}

int md_super_same_geometry(const struct md_super *a, const char *an, const struct md_super *b,
                           const char *bn, const char *array)
{
	if (sb_version(a) != sb_version(b))
		return err_set(-EINVAL,
		               "%s: %s holds an md v%s superblock and %s a v%s one: uraid "
		               "refuses an array of mixed superblock versions",
		               array, an, sb_version(a)->name, bn, sb_version(b)->name);
	if (a->level == b->level && a->layout == b->layout && a->chunk == b->chunk &&
	    a->size == b->size && a->raid_disks == b->raid_disks &&
	    (a->feature_map & MD_FEATURE_RAID0_LAYOUT) ==
	        (b->feature_map & MD_FEATURE_RAID0_LAYOUT))
		return 0;
	return err_set(-EINVAL,
	               "%s: %s and %s disagree on level, layout, chunk, size or device count",
	               array, an, bn);
}

void md_super_bitmap_uuid(const struct md_super *s, uint8_t uuid[16])
{
	if (md_sb090_is(s))
		md_sb090_bitmap_uuid(s, uuid);
	else
		memcpy(uuid, s->set_uuid, 16);
}

unsigned md_super_role(const struct md_super *s)
{
	if (s->dev_number < s->max_dev && s->dev_number < MD_SB_MAX_DEV)
		return s->roles[s->dev_number];
	return MD_ROLE_SPARE;
}

/* The levels and their layouts are the RAID engine's level descriptors'
 * (disc/raid/raid.h): md answers from them. */
const struct md_level_info *md_level_at(unsigned i)
{
	return raid_level_md_at(i);
}

const struct md_level_info *md_level_info(int level)
{
	const struct md_level_info *l;

	for (unsigned i = 0; (l = md_level_at(i)); i++)
		if (l->level == level)
			return l;
	return NULL;
}

bool md_dirty_degraded(const struct md_super *s, unsigned degraded)
{
	return md_level_parity(s->level) > 0 && degraded > 0 && !md_super_clean(s) &&
	       !(s->feature_map & MD_FEATURE_ANY_PPL);
}

const char *md_level_name(int level)
{
	const struct md_level_info *l = md_level_info(level);
	return l ? l->name : NULL;
}

bool md_level_redundant(int level)
{
	const struct md_level_info *l = md_level_info(level);
	return l && l->served && l->redundant;
}

unsigned md_level_parity(int level)
{
	const struct md_level_info *l = md_level_info(level);
	return l ? l->parity : 0;
}

int md_level_served(int level, const char *name)
{
	const struct md_level_info *l = md_level_info(level);
	char list[128] = "";
	size_t len = 0;
	unsigned i = 0;

	if (l && l->served)
		return 0;
	for (const struct md_level_info *o; (o = md_level_at(i)); i++)
		if (o->served && len < sizeof(list))
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s",
			                        len ? ", " : "", o->name);
	if (!l)
		return err_set(-EINVAL, "%s: md level %d is unknown", name, level);
	return err_set(-ENOTSUP, "%s: md level %s is not supported by uraid (it serves %s)", name,
	               l->name, list);
}

int md_level_parse(const char *s, int *level)
{
	char *end;
	long v;

	const struct md_level_info *l;

	for (unsigned i = 0; (l = md_level_at(i)); i++)
		if (strcasecmp(s, l->name) == 0) {
			*level = l->level;
			return 0;
		}
	v = strtol(s, &end, 10);
	if (*s && !*end && md_level_name((int)v) && v >= 0) {
		*level = (int)v;
		return 0;
	}
	return -EINVAL;
}

int md_layout_parse(int level, const char *s, uint32_t *layout)
{
	const struct md_level_info *l = md_level_info(level);

	if (l && l->layout_parse)
		return l->layout_parse(s, layout);
	for (unsigned i = 0; l && i < l->nlayouts; i++) {
		const struct md_layout_name *n = &l->layouts[i];
		if (strcmp(s, n->name) == 0 || (n->alias && strcmp(s, n->alias) == 0)) {
			*layout = n->layout;
			return 0;
		}
	}
	return -EINVAL;
}

const char *md_layout_name(int level, uint32_t layout, char *out, size_t len)
{
	const struct md_level_info *l = md_level_info(level);

	if (l && l->layout_format) {
		l->layout_format(layout, out, len);
		return out;
	}
	for (unsigned i = 0; l && i < l->nlayouts; i++)
		if (l->layouts[i].layout == layout) {
			snprintf(out, len, "%s", l->layouts[i].name);
			return out;
		}
	/* A parity level without named layouts (raid4: parity last, whatever
	 * the word) has none to show, as mdadm shows none. */
	if (layout != 0 && !(l && l->parity && !l->nlayouts))
		snprintf(out, len, "%u", layout);
	else if (len)
		out[0] = '\0';
	return out;
}

int md_raid10_layout_parse(const char *s, uint32_t *layout)
{
	return md_level_info(10)->layout_parse(s, layout);
}

/* mdadm's choose_bm_space(): room it keeps for a write-intent bitmap. */
static uint64_t md_bitmap_space(uint64_t sectors)
{
	if (sectors < 64 * 2)
		return 0;
	if (sectors - 64 * 2 >= 200ull * 1024 * 1024 * 2)
		return 128 * 2;
	if (sectors - 4 * 2 > 8ull * 1024 * 1024 * 2)
		return 64 * 2;
	return 4 * 2;
}

/* As mdadm's validate_geometry1() for v1.2: superblock and bitmap room,
 * plus reshape headroom of about 0.1% (at most 128 MiB, and shrinking no
 * further than four chunks), rounded up to 1 MiB. */
uint64_t md_data_offset_room(uint64_t member_sectors, uint32_t chunk_kib, uint64_t room)
{
	uint64_t headroom = 128 * 1024 * 2;
	uint64_t off;

	while ((headroom << 10) > member_sectors &&
	       (chunk_kib == 0 || headroom / 2 >= (uint64_t)chunk_kib * 4))
		headroom >>= 1;
	off = 12 * 2 + room + headroom;
	return (off + 2047) / 2048 * 2048;
}

uint64_t md_default_data_offset(uint64_t member_sectors, uint32_t chunk_kib)
{
	return md_data_offset_room(member_sectors, chunk_kib, md_bitmap_space(member_sectors));
}

void md_uuid_format(const uint8_t uuid[16], char out[36])
{
	char *p = out;

	for (int i = 0; i < 16; i++) {
		if (i && !(i & 3))
			*p++ = ':';
		p += sprintf(p, "%02x", uuid[i]);
	}
}

void md_super_array_name(const struct md_super *sb, char *out, size_t len)
{
	const char *colon = strchr(sb->set_name, ':');
	const char *name = colon ? colon + 1 : sb->set_name;
	char uuid[36], host[256];

	if (md_sb090_is(sb)) { /* no name: the preferred minor, /dev/mdN */
		snprintf(out, len, "md/%u", md_sb090_preferred_minor(sb));
		return;
	}
	/* mdadm's rule for /dev/md/: the host part goes when it is this
	 * host's name, and stays for a foreign array (md/DiskStation:2). */
	if (colon && (gethostname(host, sizeof(host)) != 0 ||
	              strlen(host) != (size_t)(colon - sb->set_name) ||
	              memcmp(host, sb->set_name, strlen(host)) != 0))
		name = sb->set_name;
	if (*name) {
		snprintf(out, len, "md/%s", name);
	} else {
		md_uuid_format(sb->set_uuid, uuid);
		snprintf(out, len, "md/%.8s", uuid);
	}
}

int md_find_end_supers(struct vol *v, const char *spec, uint64_t at[2])
{
	const uint32_t magic = htole32(MD_SB_MAGIC), magic_be = htobe32(MD_SB_MAGIC);
	uint8_t *buf;
	int found = 0;

	at[0] = at[1] = UINT64_MAX;
	if (v->size < 65536 * 2)
		return 0;
	at[0] = v10_offset(v->size);
	at[1] = (v->size & ~65535ull) - 65536;
	if (!(buf = vol_buf_alloc(4096)))
		return -ENOMEM;
	for (int i = 0; i < 2; i++) {
		int r = vol_read(v, buf, 4096, at[i]);
		if (r < 0) {
			free(buf);
			return err_set(r, "%s: reading it failed: %s", spec, strerror(-r));
		}
		/* 0.90 is in the writer's byte order: either */
		if (memcmp(buf, &magic, 4) == 0 || (i == 1 && memcmp(buf, &magic_be, 4) == 0))
			found |= 1 << i;
	}
	free(buf);
	return found;
}
