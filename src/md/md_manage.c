/* md_manage.c — md's member-management superblock transitions (see
 * md_manage.h): what `uraid add`, `uraid rebuild` and `uraid serve`'s
 * online recovery write, so that mdadm and the kernel read the same story
 * whichever of them wrote it. */
#include "md_manage.h"

#include "core/log.h"
#include "core/random.h"
#include "core/units.h"
#include "md_journal.h"
#include "md_sb090.h"
#include "probe.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void md_manage_set_state(struct md_super *sb, uint64_t events, uint32_t max_dev,
                         const uint16_t *roles)
{
	sb->events = events;
	sb->utime = (uint64_t)time(NULL);
	sb->max_dev = max_dev;
	memcpy(sb->roles, roles, sizeof(sb->roles));
}

void md_manage_set_geometry(struct md_super *sb, const struct md_super *tmpl)
{
	sb->level = tmpl->level;
	sb->layout = tmpl->layout;
	sb->chunk = tmpl->chunk;
	sb->raid_disks = tmpl->raid_disks;
	sb->size = tmpl->size;
	sb->resync_offset = tmpl->resync_offset;
	sb->feature_map = (sb->feature_map & ~MD_FEATURE_RAID0_LAYOUT) |
	                  (tmpl->feature_map & MD_FEATURE_RAID0_LAYOUT);
}

void md_manage_mark_recovering(struct md_super *sb, uint16_t *roles, unsigned role)
{
	if (sb->dev_number < MD_SB_MAX_DEV)
		roles[sb->dev_number] = (uint16_t)role;
	sb->feature_map |= MD_FEATURE_RECOVERY_OFFSET;
	sb->recovery_offset = 0;
}

int md_manage_promote_spare(struct md_super *sb, uint16_t *roles, unsigned role,
                            uint64_t size_sectors, const char *array, const char *spec)
{
	int r = md_sb090_refuse(sb, array, "rebuilding onto a spare");

	if (r == 0)
		r = md_journal_refuse(sb, array, "rebuilding onto a spare");

	if (r < 0)
		return r;
	if (sb->data_size < size_sectors)
		return err_set(
		    -ENOSPC, "%s: spare %s is too small (%llu sectors of data, %llu needed)", array,
		    spec, (unsigned long long)sb->data_size, (unsigned long long)size_sectors);
	if (sb->dev_number >= MD_SB_MAX_DEV)
		return err_set(-EINVAL, "%s: spare %s has slot %u, beyond the role table", array,
		               spec, sb->dev_number);
	md_manage_mark_recovering(sb, roles, role);
	return 0;
}

int md_manage_checkpoint(struct vol *member, struct md_super *sb, uint64_t done)
{
	int r;

	if (sb->recovery_offset * 512 >= done)
		return 0;
	r = vol_flush(member);
	if (r < 0)
		return err_set(r, "%s: flush: %s", member->name, strerror(-r));
	sb->recovery_offset = done / 512;
	sb->utime = (uint64_t)time(NULL);
	err_clear();
	return md_super_write(member, sb);
}

int md_manage_restart(struct vol *member, struct md_super *sb, uint64_t from)
{
	if (sb->recovery_offset * 512 <= from)
		return 0;
	sb->recovery_offset = from / 512;
	sb->utime = (uint64_t)time(NULL);
	err_clear();
	return md_super_write(member, sb);
}

void md_manage_recovery_done(struct md_super *sb)
{
	sb->feature_map &= ~MD_FEATURE_RECOVERY_OFFSET;
	sb->recovery_offset = 0;
}

uint64_t md_manage_recovery_from(const struct md_super *sb, uint64_t size_sectors)
{
	return (sb->recovery_offset < size_sectors ? sb->recovery_offset : size_sectors) * 512;
}

/* ---- a new member ---- */

int md_manage_probe_new(struct vol *v, const char *spec, const uint8_t set_uuid[16],
                        const char *array, bool force, uint64_t *end_sb)
{
	struct md_super *sb = malloc(sizeof(*sb));
	bool found = true;
	int r = 0;

	*end_sb = UINT64_MAX;
	if (!sb)
		return -ENOMEM;
	r = md_super_read_raw(v, sb);
	if (r == -ENOENT || r == -ENOSPC) {
		found = false; /* none, or no room for one */
		r = 0;
	} else if (r < 0) {
		r = err_set(r, "%s: reading it failed: %s", spec, strerror(-r));
		goto out;
	}
	if (!force && found) {
		if (memcmp(sb->set_uuid, set_uuid, 16) == 0)
			r = err_set(-EEXIST,
			            "%s is already a member of %s (slot %u, events %llu); "
			            "to rebuild it from scratch use --force",
			            spec, array, sb->dev_number, (unsigned long long)sb->events);
		else
			r = err_set(-EEXIST,
			            "%s holds an md superblock of another array; refusing "
			            "to overwrite it (use --force)",
			            spec);
		goto out;
	}
	/* Anything else a user may want kept: the one list create uses too. */
	if (!force) {
		r = probe_member_refuse(v, spec);
		goto out;
	}
	/* v1.0 and 0.90 superblocks live at the end: --force wipes one. */
	uint64_t at[2];
	r = md_find_end_supers(v, spec, at);
	if (r > 0) {
		*end_sb = at[r & 2 ? 1 : 0];
		r = 0;
	}
out:
	free(sb);
	return r;
}

int md_manage_check_size(struct vol *v, const char *spec, const struct md_super *tmpl,
                         const char *array)
{
	uint64_t avail = md_super_new_data_size(tmpl, v->size);
	char need[32], have[32];

	if (avail >= tmpl->size)
		return 0;
	format_size((v->size / 512 - avail + tmpl->size) * 512, need, sizeof(need));
	format_size(v->size, have, sizeof(have));
	return err_set(-ENOSPC,
	               "%s is too small: %s, and %s needs %s (data from sector %llu, "
	               "%llu sectors of it, and its v%s metadata)",
	               spec, have, array, need, (unsigned long long)tmpl->data_offset,
	               (unsigned long long)tmpl->size, md_super_version(tmpl)->name);
}

int md_manage_pick_slot(const uint16_t *roles, uint32_t max_dev, unsigned raid_disks,
                        const uint32_t *used, unsigned nused, const struct md_super *tmpl,
                        const char *array)
{
	unsigned slot;

	for (slot = raid_disks; slot < MD_SB_MAX_DEV; slot++) {
		bool taken = slot < max_dev && roles[slot] != MD_ROLE_SPARE;
		for (unsigned i = 0; i < nused; i++)
			taken |= used[i] == slot;
		if (!taken)
			break;
	}
	/* The roles must fit between the superblock and the data after it
	 * (1.1, 1.2); 1.0's has its 4 KiB block at the member's end. */
	uint64_t sb_sectors = (256 + 2 * (uint64_t)(slot + 1) + 511) / 512;
	bool after = !md_sb_version_data_first(md_super_version(tmpl));
	if (slot >= MD_SB_MAX_DEV || (after && tmpl->super_offset + sb_sectors > tmpl->data_offset))
		return err_set(-ENOSPC, "%s: no free device slot for another member", array);
	return (int)slot;
}

/* Copy the write-intent bitmap (superblock and bits) of the member from,
 * whose superblock is f, onto to, whose new superblock is t (the same
 * offsets from its own superblock): the kernel reads the bitmap from any
 * in-sync member. */
static int md_manage_copy_bitmap(struct vol *from, struct vol *to, const struct md_super *f,
                                 const struct md_super *t)
{
	uint64_t start, end, to_start, to_end;
	char *buf;
	int r = 0;

	if (md_super_bitmap_area(f, from->size, &start, &end) < 0)
		return 0; /* none, or one the array's start will call unusable */
	if (md_super_bitmap_area(t, to->size, &to_start, &to_end) < 0 ||
	    to_end - to_start < end - start)
		return err_set(-ENOSPC, "%s: no room for the array's write-intent bitmap",
		               to->name);
	if (!(buf = vol_buf_alloc(1 << 20)))
		return -ENOMEM;
	for (uint64_t off = 0; off < end - start && r == 0; off += 1 << 20) {
		uint64_t len = end - start - off < (1 << 20) ? end - start - off : (1 << 20);
		r = vol_read(from, buf, len, start + off);
		if (r == 0)
			r = vol_write(to, buf, len, to_start + off, 0);
	}
	free(buf);
	return r < 0 ? err_set(r, "%s: copying the write-intent bitmap: %s", to->name, strerror(-r))
	             : 0;
}

int md_manage_new_super(struct vol *nv, const char *spec, const struct md_super *tmpl,
                        struct vol *tmpl_vol, unsigned slot, uint64_t end_sb, struct md_super *nsb)
{
	uint64_t meta, meta_end;
	int r;

	*nsb = *tmpl;
	nsb->dev_number = slot;
	nsb->super_offset = md_super_offset(nsb, nv->size) / 512;
	nsb->data_size = md_super_new_data_size(tmpl, nv->size);
	nsb->feature_map &= ~(MD_FEATURE_RECOVERY_OFFSET | MD_FEATURE_REPLACEMENT |
	                      MD_FEATURE_BAD_BLOCKS | MD_FEATURE_RECOVERY_BITMAP);
	nsb->recovery_offset = 0;
	((struct md_sb1 *)nsb->raw)->devflags = 0;
	nsb->devflags = 0; /* its own flags are the caller's to set */
	((struct md_sb1 *)nsb->raw)->cnt_corrected_read = 0;
	r = random_fill(nsb->device_uuid, 16);
	if (r < 0)
		return r;
	/* Old metadata, bitmaps and bad-block logs outside the data go; the
	 * array's bitmap comes over; the superblock is the caller's to write,
	 * last of nv's bytes. */
	md_super_meta_area(nsb, nv->size, &meta, &meta_end);
	r = vol_write_zeroes(nv, meta_end - meta, meta, VOL_MAY_TRIM);
	if (r == 0 && end_sb != UINT64_MAX && (end_sb < meta || end_sb >= meta_end))
		r = vol_write_zeroes(nv, 4096, end_sb, 0);
	if (r < 0)
		return err_set(r, "%s: zeroing the metadata area: %s", spec, strerror(-r));
	return md_manage_copy_bitmap(tmpl_vol, nv, tmpl, nsb);
}

/* ---- the number of copies ---- */

int md_manage_check_raid_disks(const uint16_t *roles, uint32_t max_dev, unsigned old, unsigned n,
                               const char *array)
{
	if (n < 1 || n >= MD_ROLE_MAX || n > MD_SB_MAX_DEV)
		return err_set(-EINVAL, "%s: %u devices is out of range (1 to %u)", array, n,
		               MD_SB_MAX_DEV);
	for (uint32_t slot = 0; n < old && slot < max_dev && slot < MD_SB_MAX_DEV; slot++)
		if (roles[slot] >= n && roles[slot] < old)
			return err_set(-EBUSY,
			               "%s: role %u (slot %u) is held by a member: fail and "
			               "remove the members in roles >= %u first",
			               array, roles[slot], slot, n);
	return 0;
}

int md_manage_free_role(const uint16_t *roles, uint32_t max_dev, unsigned raid_disks)
{
	for (unsigned role = 0; role < raid_disks; role++) {
		bool held = false;
		for (uint32_t slot = 0; slot < max_dev && slot < MD_SB_MAX_DEV && !held; slot++)
			held = roles[slot] == role;
		if (!held)
			return (int)role;
	}
	return -1;
}
