/* md_manage.c — md's member-management superblock transitions (see
 * md_manage.h): what `uraid add`, `uraid rebuild` and `uraid serve`'s
 * online recovery write, so that mdadm and the kernel read the same story
 * whichever of them wrote it. */
#include "md_manage.h"

#include "core/log.h"

#include <errno.h>
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
