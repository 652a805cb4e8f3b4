/* md_sb090.c — md's 0.90 superblock codec (see md_sb090.h): decoding into
 * struct md_super's 1.x-meaning fields, the kernel's rules before any
 * field is trusted (super_90_load, super_90_validate), and writing back
 * only what uraid manages (events, clean or active, a member failing,
 * utime, the checksum) in the byte order the block was found in.  md.c's
 * version table calls these; the rules every version shares stay in
 * md_super_check(). */
#include "md_sb090.h"

#include "core/log.h"

#include <endian.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>

static const struct md_sb090 *sb090(const void *buf)
{
	return (const struct md_sb090 *)buf;
}

/* The block's byte order, by its magic; -1 when it has none. */
static int sb090_order(const void *buf)
{
	uint32_t m = sb090(buf)->magic;

	if (le32toh(m) == MD_SB_MAGIC)
		return 0;
	if (be32toh(m) == MD_SB_MAGIC)
		return 1;
	return -1;
}

static uint32_t get32(int be, uint32_t v)
{
	return be ? be32toh(v) : le32toh(v);
}

static uint32_t put32(int be, uint32_t v)
{
	return be ? htobe32(v) : htole32(v);
}

/* events_a/b hold lo/hi on a little-endian writer, hi/lo on a big one. */
static uint64_t get_events(int be, uint32_t a, uint32_t b)
{
	uint32_t lo = get32(be, be ? b : a), hi = get32(be, be ? a : b);
	return (uint64_t)hi << 32 | lo;
}

/* ab[0], ab[1]: the words events_a, events_b (or cp_events_a, _b). */
static void put_events(int be, uint64_t ev, uint32_t ab[2])
{
	uint32_t lo = put32(be, (uint32_t)ev), hi = put32(be, (uint32_t)(ev >> 32));
	ab[0] = be ? hi : lo;
	ab[1] = be ? lo : hi;
}

uint64_t md_sb090_offset(uint64_t member_bytes)
{
	uint64_t end = member_bytes & ~(uint64_t)(MD_SB090_RESERVED - 1);
	/* Too small to hold one: an offset no member reaches. */
	return end >= MD_SB090_RESERVED ? end - MD_SB090_RESERVED : UINT64_MAX;
}

uint32_t md_sb090_csum(const void *buf)
{
	const uint8_t *p = buf; /* any alignment */
	int be = sb090_order(buf) == 1;
	uint64_t sum = 0;

	for (size_t i = 0; i < MD_SB_BLOCK / 4; i++) {
		uint32_t w;
		if (i == offsetof(struct md_sb090, sb_csum) / 4)
			continue; /* counted as zero */
		memcpy(&w, p + 4 * i, 4);
		sum += get32(be, w);
	}
	return (uint32_t)((sum & 0xffffffffu) + (sum >> 32));
}

uint16_t md_sb090_csum_fold(uint32_t csum)
{
	csum = (csum & 0xffff) + (csum >> 16);
	return (uint16_t)((csum & 0xffff) + (csum >> 16));
}

bool md_sb090_is(const struct md_super *s)
{
	return s->version && s->version->decode == md_sb090_decode;
}

bool md_sb090_big_endian(const struct md_super *s)
{
	return sb090_order(s->raw) == 1;
}

uint32_t md_sb090_word(const struct md_super *s, unsigned i)
{
	uint32_t w;

	if (i >= MD_SB_BLOCK / 4)
		return 0;
	memcpy(&w, s->raw + 4 * i, 4);
	return get32(md_sb090_big_endian(s), w);
}

unsigned md_sb090_preferred_minor(const struct md_super *s)
{
	return md_sb090_word(s, offsetof(struct md_sb090, md_minor) / 4);
}

void md_sb090_bitmap_uuid(const struct md_super *s, uint8_t out[16])
{
	const struct md_sb090 *sb = sb090(s->raw);

	memcpy(out, &sb->set_uuid0, 4);
	memcpy(out + 4, &sb->set_uuid1, 4);
	memcpy(out + 8, &sb->set_uuid2, 4);
	memcpy(out + 12, &sb->set_uuid3, 4);
}

int md_sb090_refuse(const struct md_super *s, const char *name, const char *what)
{
	if (!md_sb090_is(s))
		return 0;
	return err_set(-ENOTSUP,
	               "%s: md 0.90: %s is not supported by uraid (it serves 0.90 arrays and "
	               "records their state and failures; use mdadm for this)",
	               name, what);
}

/* The role a descriptor gives its slot, as super_90_validate reads it:
 * faulty (removed ones too), in sync in its raid_disk, else a spare (an
 * active one not in sync is being recovered, from the start again). */
static unsigned disk_role(int be, const struct md_sb090 *sb, unsigned i)
{
	uint32_t st = get32(be, sb->disks[i].state), rd = get32(be, sb->disks[i].raid_disk);

	if (st & (MD_SB090_DISK_FAULTY | MD_SB090_DISK_REMOVED))
		return MD_ROLE_FAULTY;
	if (st & MD_SB090_DISK_SYNC)
		return rd < MD_ROLE_MAX ? rd : MD_ROLE_FAULTY;
	return MD_ROLE_SPARE;
}

int md_sb090_decode(const void *buf, struct md_super *s)
{
	const struct md_sb090 *sb = sb090(buf);
	int be = sb090_order(buf);
	uint32_t uuid[4], num, st, cp;

	memset(s, 0, sizeof(*s));
	memcpy(s->raw, buf, MD_SB_BLOCK);
	if (be < 0 || get32(be, sb->major_version) != 0)
		return -ENOENT;
	uuid[0] = htobe32(get32(be, sb->set_uuid0));
	uuid[1] = htobe32(get32(be, sb->set_uuid1));
	uuid[2] = htobe32(get32(be, sb->set_uuid2));
	uuid[3] = htobe32(get32(be, sb->set_uuid3));
	memcpy(s->set_uuid, uuid, 16);
	s->ctime = get32(be, sb->ctime);
	s->utime = get32(be, sb->utime);
	s->level = (int32_t)get32(be, sb->level);
	s->layout = get32(be, sb->layout);
	s->size = (uint64_t)get32(be, sb->size) * 2;
	s->chunk = get32(be, sb->chunk_size) / 512;
	s->raid_disks = get32(be, sb->raid_disks);
	s->data_offset = 0;
	s->data_size = 0; /* up to the superblock: md_super_read_raw */
	s->super_offset = MD_SB_UNPLACED;
	num = get32(be, sb->this_disk.number);
	s->dev_number = num;
	memcpy(s->device_uuid, s->set_uuid, 16);
	uuid[3] ^= htobe32(num + 1);
	memcpy(s->device_uuid + 12, &uuid[3], 4);
	s->events = get_events(be, sb->events_a, sb->events_b);
	st = get32(be, sb->state);
	cp = get32(be, sb->recovery_cp);
	if (st & MD_SB090_CLEAN)
		s->resync_offset = MD_MAX_SECTOR;
	else if (get_events(be, sb->cp_events_a, sb->cp_events_b) == s->events)
		s->resync_offset = cp;
	else
		s->resync_offset = 0;
	if (st & MD_SB090_BITMAP_PRESENT)
		s->feature_map |= MD_FEATURE_BITMAP_OFFSET;
	s->sb_csum = get32(be, sb->sb_csum);
	s->max_dev = MD_SB090_DISKS;
	for (unsigned i = 0; i < MD_SB_MAX_DEV; i++)
		s->roles[i] = i < MD_SB090_DISKS ? (uint16_t)disk_role(be, sb, i) : MD_ROLE_SPARE;
	return 0;
}

/* The kernel's super_90_load rules, and sizes no member can hold. */
int md_sb090_check(const struct md_super *s, uint64_t member_bytes, const char *name)
{
	const struct md_sb090 *sb = sb090(s->raw);
	int be = sb090_order(s->raw);
	uint64_t at = md_sb090_offset(member_bytes);
	uint32_t minor, csum;

	if (be < 0)
		return err_set(-ENOENT, "%s: no md superblock", name);
	minor = get32(be, sb->minor_version);
	if (get32(be, sb->major_version) != 0 ||
	    (minor != MD_SB090_MINOR && minor != MD_SB090_MINOR_RESHAPE))
		return err_set(-EINVAL, "%s: md 0.90: unsupported superblock version %u.%u", name,
		               get32(be, sb->major_version), minor);
	csum = md_sb090_csum(s->raw);
	if (md_sb090_csum_fold(csum) != md_sb090_csum_fold(s->sb_csum))
		return err_set(-EUCLEAN,
		               "%s: md 0.90 superblock checksum mismatch (stored %08x, computed "
		               "%08x)",
		               name, s->sb_csum, csum);
	if (minor == MD_SB090_MINOR_RESHAPE)
		return err_set(-ENOTSUP,
		               "%s: md 0.90 superblock 0.91 records a reshape under way, which "
		               "uraid does not support",
		               name);
	if (at == UINT64_MAX || s->super_offset != at / 512)
		return err_set(-EINVAL,
		               "%s: md 0.90 superblock found at sector %llu, but a member of %llu "
		               "bytes keeps it elsewhere (resized?)",
		               name, (unsigned long long)s->super_offset,
		               (unsigned long long)member_bytes);
	if (s->raid_disks < 1 || s->raid_disks > MD_SB090_DISKS)
		return err_set(-EUCLEAN, "%s: md 0.90 raid_disks %u is out of range (1 to %u)",
		               name, s->raid_disks, MD_SB090_DISKS);
	if (s->dev_number >= MD_SB090_DISKS)
		return err_set(-EUCLEAN, "%s: md 0.90 this_disk number %u is beyond the %u slots",
		               name, s->dev_number, MD_SB090_DISKS);
	if (get32(be, sb->chunk_size) % 512)
		return err_set(-EUCLEAN, "%s: md 0.90 chunk size %u bytes is not whole sectors",
		               name, get32(be, sb->chunk_size));
	for (unsigned i = 0; i < MD_SB090_DISKS; i++) {
		unsigned role = s->roles[i];
		if (role < MD_ROLE_MAX && role >= s->raid_disks)
			return err_set(-EUCLEAN,
			               "%s: md 0.90 disk %u claims role %u of an array of %u", name,
			               i, role, s->raid_disks);
	}
	if (s->data_size != s->super_offset)
		return err_set(-EUCLEAN, "%s: md 0.90 data area does not end at the superblock",
		               name);
	return 0;
}

/* A slot's descriptor after a transition uraid records: failing, or
 * becoming a spare.  A role taken (a recovery) is not recorded: uraid does
 * not rebuild onto 0.90 members (md_manage refuses), and a descriptor
 * marked in sync before its data is would be trusted by the kernel. */
static void set_disk(int be, struct md_sb090 *sb, unsigned i, unsigned role)
{
	uint32_t st = get32(be, sb->disks[i].state), keep = st & MD_SB090_DISK_WRITEMOSTLY;
	bool was_active = st & MD_SB090_DISK_ACTIVE, was_faulty = st & MD_SB090_DISK_FAULTY;
	uint32_t active = get32(be, sb->active_disks), working = get32(be, sb->working_disks);
	uint32_t failed = get32(be, sb->failed_disks), spare = get32(be, sb->spare_disks);

	if (role == MD_ROLE_FAULTY) {
		sb->disks[i].state = put32(be, MD_SB090_DISK_FAULTY | keep);
		active -= was_active && active;
		working -= !was_faulty && working;
		failed += !was_faulty;
	} else if (role == MD_ROLE_SPARE) {
		sb->disks[i].state = put32(be, keep);
		sb->disks[i].raid_disk = put32(be, i);
		active -= was_active && active;
		failed -= was_faulty && failed;
		working += was_faulty;
		spare++;
	} else {
		return;
	}
	sb->active_disks = put32(be, active);
	sb->working_disks = put32(be, working);
	sb->failed_disks = put32(be, failed);
	sb->spare_disks = put32(be, spare);
}

void md_sb090_encode(struct md_super *s)
{
	struct md_sb090 *sb = (struct md_sb090 *)s->raw;
	int be = sb090_order(s->raw);
	uint32_t st, num, ab[2];

	if (be < 0) { /* not made by decode: a new one, little-endian */
		be = 0;
		sb->magic = put32(be, MD_SB_MAGIC);
		sb->minor_version = put32(be, MD_SB090_MINOR);
	}
	for (unsigned i = 0; i < MD_SB090_DISKS; i++)
		if (s->roles[i] != disk_role(be, sb, i))
			set_disk(be, sb, i, s->roles[i]);
	num = get32(be, sb->this_disk.number);
	if (num < MD_SB090_DISKS)
		sb->this_disk = sb->disks[num];
	sb->utime = put32(be, (uint32_t)s->utime);
	put_events(be, s->events, ab);
	sb->events_a = ab[0];
	sb->events_b = ab[1];
	/* As super_90_sync: clean records the resync point reached with
	 * cp_events = events; active records none (recovery_cp 0). */
	st = get32(be, sb->state) & ~MD_SB090_CLEAN;
	if (s->resync_offset == MD_MAX_SECTOR) {
		st |= MD_SB090_CLEAN;
		sb->recovery_cp = put32(be, UINT32_MAX);
		put_events(be, s->events, ab);
		sb->cp_events_a = ab[0];
		sb->cp_events_b = ab[1];
	} else if (s->resync_offset && s->resync_offset < UINT32_MAX) {
		sb->recovery_cp = put32(be, (uint32_t)s->resync_offset);
		put_events(be, s->events, ab);
		sb->cp_events_a = ab[0];
		sb->cp_events_b = ab[1];
	} else {
		sb->recovery_cp = 0;
	}
	sb->state = put32(be, st);
	s->max_dev = MD_SB090_DISKS;
	s->sb_csum = md_sb090_csum(s->raw);
	sb->sb_csum = put32(be, s->sb_csum);
}
