/* md_takeover.c — md's level changes that move no data, as the kernel's
 * takeovers make them (md_takeover.h), one row per transition in
 * takeover_rows[]: the levels, the rule in words (what refusals quote),
 * and the function that checks it and fills the plan.  A level pair
 * without a row is refused as md refuses it; rows without a function are
 * transitions md has that uraid refuses, with the reason.
 *
 * What each row writes is what the kernel's superblocks say after its
 * takeover (mdadm --grow --level in a VM, compared field by field:
 * tests/sh/md-kernel-takeover.sh): level, layout, chunk, raid_disks and
 * the role table change; size stays (0 -> 5: the one zone's size); a
 * slot whose member leaves is recorded as 0xffff, as the kernel records
 * every slot without a device.
 *
 * The data stays where it is because each pair maps every block alike:
 * a two-device raid5's parity is its data, so both devices hold what a
 * raid1's copies hold; a -6 raid6 is its raid5 over the first n-1
 * devices with Q on the last; a parity-last raid5 and a raid4 are their
 * raid0 with parity on the last; a near-2 raid10 pair holds the chunk raid0 puts on
 * device role/2. */
#include "md_takeover.h"

#include "core/log.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

struct takeover_row {
	int from, to;
	const char *rule;
	/* Check the rule on in and fill p (pre-filled with the current
	 * geometry and role table); NULL: refused, rule says why. */
	int (*plan)(const struct md_takeover_in *in, struct md_takeover_plan *p);
};

/* The slot holding role r in sync, or -1. */
static int slot_in_sync(const struct md_takeover_in *in, unsigned r)
{
	const struct md_super *sb = in->sb;

	for (uint32_t k = 0; k < sb->max_dev && k < MD_SB_MAX_DEV; k++)
		if (sb->roles[k] == r && in->in_sync[k])
			return (int)k;
	return -1;
}

/* Roles below n not held by a member in sync. */
static unsigned roles_out_of_sync(const struct md_takeover_in *in, unsigned n)
{
	unsigned c = 0;

	for (unsigned r = 0; r < n; r++)
		c += slot_in_sync(in, r) < 0;
	return c;
}

void md_takeover_geometry(const struct md_takeover_plan *p, const struct md_super *f,
                          struct md_super *geom)
{
	*geom = *f;
	geom->level = p->level;
	geom->layout = p->layout;
	geom->chunk = p->chunk;
	geom->raid_disks = p->raid_disks;
	geom->size = p->size;
	geom->feature_map &= ~MD_FEATURE_RAID0_LAYOUT;
	if (p->clean)
		geom->resync_offset = MD_MAX_SECTOR;
}

int md_role_slot(const uint16_t *roles, uint32_t max_dev, unsigned role)
{
	for (uint32_t k = 0; k < max_dev && k < MD_SB_MAX_DEV; k++)
		if (roles[k] == role)
			return (int)k;
	return -1;
}

/* The slot recording role r in sb (in sync or not), or -1. */
static int slot_of_role(const struct md_super *sb, unsigned r)
{
	return md_role_slot(sb->roles, sb->max_dev, r);
}

static int no_layout(const struct md_takeover_in *in, const char *rule)
{
	if (!in->layout)
		return 0;
	return err_set(-EINVAL, "%s: %s: --layout %s: the new level has no layout to choose",
	               in->array, rule, in->layout);
}

/* The kernel's chunk for an array that had none (raid5_takeover_raid1,
 * raid0_takeover_raid1): the largest power of two up to 64 KiB that
 * divides the array's sectors. */
static uint32_t takeover_chunk(uint64_t sectors)
{
	uint32_t c = 128;

	while (c > 1 && (sectors & (c - 1)))
		c >>= 1;
	return c;
}

/* raid1 -> raid5 (raid5_takeover_raid1; mdadm's rules). */
static int plan_1_5(const struct md_takeover_in *in, struct md_takeover_plan *p)
{
	const struct md_super *sb = in->sb;
	uint32_t layout;

	if (sb->raid_disks != 2)
		return err_set(-EINVAL,
		               "%s: raid1 -> raid5 takes a two-device raid1, not %u devices "
		               "(mdadm: \"Can only convert a 2-device array to RAID5\"); "
		               "grow --raid-devices 2 first",
		               in->array, sb->raid_disks);
	if (sb->size & 7)
		return err_set(-EINVAL,
		               "%s: raid1 -> raid5: the used size (%llu sectors) is not a "
		               "multiple of 4 KiB (mdadm: \"reduce size to multiple of 4K first\")",
		               in->array, (unsigned long long)sb->size);
	if (md_layout_parse(5, in->layout ? in->layout : "left-symmetric", &layout) < 0)
		return err_set(-EINVAL, "%s: raid1 -> raid5: --layout %s is not a raid5 layout",
		               in->array, in->layout);
	/* Any raid5 layout over two devices keeps data and parity (its
	 * copy) at the same offsets: the choice changes no byte. */
	p->level = 5;
	p->layout = layout;
	p->chunk = takeover_chunk(sb->size);
	/* mdadm --grow --level=5 --raid-devices=N: the takeover, then the
	 * reshape to N devices. */
	if (in->raid_disks > 2) {
		p->restripe_after = true;
		p->after_layout = layout;
		p->after_disks = in->raid_disks;
	}
	return 0;
}

/* raid5 -> raid1 (raid1_takeover). */
static int plan_5_1(const struct md_takeover_in *in, struct md_takeover_plan *p)
{
	if (in->sb->raid_disks != 2)
		return err_set(-EINVAL,
		               "%s: raid5 -> raid1 takes a two-device raid5, not %u devices "
		               "(mdadm: \"Can only convert a 2-device array to RAID1\")",
		               in->array, in->sb->raid_disks);
	int r = no_layout(in, "raid5 -> raid1");
	if (r < 0)
		return r;
	p->level = 1;
	p->layout = 0;
	p->chunk = 0;
	return 0;
}

/* The raid5 layout named as the raid6 layout name is (left-symmetric for
 * raid6's left-symmetric), or UINT32_MAX. */
static uint32_t layout_of_name(int level, const char *name)
{
	uint32_t layout;

	return md_layout_parse(level, name, &layout) < 0 ? UINT32_MAX : layout;
}

/* The raid6 layout that is raid5's layout5 with Q on the last device
 * (mdadm's "-6" name, and parity-last for parity-last), or -EINVAL. */
static int layout_5_to_6(uint32_t layout5, uint32_t *layout6)
{
	char name[32], six[40];

	md_layout_name(5, layout5, name, sizeof(name));
	if (md_layout_parse(5, name, &(uint32_t){0}) < 0)
		return -EINVAL;
	if (strcmp(name, "parity-last") == 0)
		return md_layout_parse(6, name, layout6);
	snprintf(six, sizeof(six), "%s-6", name);
	return md_layout_parse(6, six, layout6);
}

/* The raid5 layout of a raid6 layout with Q on the last device (a "-6"
 * name, or parity-last), or -EINVAL for one that rotates Q. */
static int layout_6_to_5(uint32_t layout6, uint32_t *layout5)
{
	char name[32];
	size_t len;

	md_layout_name(6, layout6, name, sizeof(name));
	if (strcmp(name, "parity-last") == 0)
		return md_layout_parse(5, name, layout5);
	len = strlen(name);
	if (len < 3 || strcmp(name + len - 2, "-6") != 0)
		return -EINVAL;
	name[len - 2] = '\0';
	return md_layout_parse(5, name, layout5);
}

/* raid5 -> raid6 (raid6_takeover): Q on a new device, at the "-6"
 * layout.  A restripe to a rotating-Q layout is the reshape's. */
static int plan_5_6(const struct md_takeover_in *in, struct md_takeover_plan *p)
{
	const struct md_super *sb = in->sb;
	char name[32];
	uint32_t layout, want;

	if (layout_5_to_6(sb->layout, &layout) < 0)
		return err_set(-EINVAL, "%s: raid5 -> raid6: layout %s has no raid6 form",
		               in->array, md_layout_name(5, sb->layout, name, sizeof(name)));
	md_layout_name(6, layout, name, sizeof(name));
	if (in->layout && strcmp(in->layout, "preserve") != 0 &&
	    md_layout_parse(6, in->layout, &want) < 0)
		return err_set(-EINVAL, "%s: raid5 -> raid6 --layout %s: not a raid6 layout",
		               in->array, in->layout);
	/* Another raid6 layout than the -6 one: the takeover to it, then a
	 * restripe (as mdadm does: Q rotates only once every block moved). */
	if (in->layout && strcmp(in->layout, "preserve") != 0 && want != layout) {
		p->restripe_after = true;
		p->after_layout = want;
		p->after_disks = sb->raid_disks + 1;
	}
	if (sb->raid_disks + 1 < md_level_info(6)->min_disks)
		return err_set(-EINVAL, "%s: raid5 -> raid6: %u devices; raid6 takes at least %u",
		               in->array, sb->raid_disks + 1, md_level_info(6)->min_disks);
	if (roles_out_of_sync(in, sb->raid_disks))
		return err_set(-EINVAL,
		               "%s: raid5 -> raid6: the raid5 is degraded or rebuilding; the "
		               "takeover adds only Q: rebuild it first (uraid rebuild)",
		               in->array);
	p->level = 6;
	p->layout = layout;
	p->raid_disks = sb->raid_disks + 1;
	p->new_role = (int)sb->raid_disks;
	return 0;
}

/* raid6 -> raid5 (raid5_takeover_raid6): Q's device becomes a spare. */
static int plan_6_5(const struct md_takeover_in *in, struct md_takeover_plan *p)
{
	const struct md_super *sb = in->sb;
	char name[32];
	uint32_t layout, want;
	unsigned n = sb->raid_disks;

	md_layout_name(6, sb->layout, name, sizeof(name));
	if (layout_6_to_5(sb->layout, &layout) == 0) {
		/* Q on the last device already: the takeover alone. */
	} else if (layout_5_to_6(layout_of_name(5, name), &p->before_layout) == 0) {
		/* A layout that rotates Q: restriped first to its -6 form (Q on
		 * the last device), as mdadm does, then taken over. */
		p->restripe_before = true;
		layout = layout_of_name(5, name);
	} else {
		return err_set(-ENOTSUP,
		               "%s: raid6 -> raid5: layout %s has no raid5 form (only the "
		               "raid5 layouts' own, with Q on the last device or rotating, do)",
		               in->array, name);
	}
	md_layout_name(5, layout, name, sizeof(name));
	if (in->layout && (md_layout_parse(5, in->layout, &want) < 0 || want != layout))
		return err_set(-ENOTSUP,
		               "%s: raid6 -> raid5 --layout %s: the data is at %s; another layout "
		               "is a restripe (the reshape's work)",
		               in->array, in->layout, name);
	if (roles_out_of_sync(in, n - 1) > 1)
		return err_set(-EINVAL,
		               "%s: raid6 -> raid5: %u of the devices that stay are missing or "
		               "rebuilding; a raid5 survives one",
		               in->array, roles_out_of_sync(in, n - 1));
	int q = slot_of_role(sb, n - 1);
	if (q >= 0)
		p->roles[q] = MD_ROLE_SPARE; /* stays, as a spare (the kernel's) */
	p->level = 5;
	p->layout = layout;
	p->raid_disks = n - 1;
	return 0;
}

/* raid0 -> raid4 or raid5 (raid45_takeover_raid0): parity-last (the
 * kernel writes ALGORITHM_PARITY_N for both), its parity on a new last
 * device; the raid0 must be one zone (devices of one size). */
static int plan_0_45(const struct md_takeover_in *in, struct md_takeover_plan *p, int level)
{
	const struct md_super *sb = in->sb;
	uint64_t c = sb->chunk ? sb->chunk : 1;
	uint64_t lo = in->min_data_size / c * c, hi = in->max_data_size / c * c;
	const char *to = md_level_name(level);
	uint32_t layout;

	md_layout_parse(5, "parity-last", &layout);
	if (level == 4 && in->layout)
		return no_layout(in, "raid0 -> raid4");
	if (in->layout && strcmp(in->layout, "parity-last") != 0)
		return err_set(-ENOTSUP,
		               "%s: raid0 -> raid5 --layout %s: the takeover makes parity-last "
		               "(raid4's layout: the raid0 untouched, parity on the new device); "
		               "another layout restripes every block, the reshape's work",
		               in->array, in->layout);
	if (lo != hi)
		return err_set(-EINVAL,
		               "%s: raid0 -> %s: the devices differ in size (%llu to %llu "
		               "sectors of data), so the raid0 has more than one zone (the "
		               "kernel: \"cannot takeover for raid0 with more than one zone\")",
		               in->array, to, (unsigned long long)lo, (unsigned long long)hi);
	if (!lo)
		return err_set(-EINVAL, "%s: raid0 -> %s: no data area", in->array, to);
	p->level = level;
	p->layout = layout;
	p->raid_disks = sb->raid_disks + 1;
	p->size = lo;
	p->new_role = (int)sb->raid_disks;
	p->clean = true;
	return 0;
}

static int plan_0_5(const struct md_takeover_in *in, struct md_takeover_plan *p)
{
	return plan_0_45(in, p, 5);
}

static int plan_0_4(const struct md_takeover_in *in, struct md_takeover_plan *p)
{
	return plan_0_45(in, p, 4);
}

/* raid4 or parity-last raid5 -> raid0 (raid0_takeover_raid45): the parity
 * device (the last role) leaves. */
static int plan_45_0(const struct md_takeover_in *in, struct md_takeover_plan *p)
{
	const struct md_super *sb = in->sb;
	const char *rule = sb->level == 4 ? "raid4 -> raid0" : "raid5 -> raid0";
	char name[32];
	uint32_t pl;
	unsigned n = sb->raid_disks;

	md_layout_parse(5, "parity-last", &pl);
	if (sb->level == 5 && sb->layout != pl)
		return err_set(-ENOTSUP,
		               "%s: raid5 -> raid0: layout %s rotates parity over every device; "
		               "only parity-last keeps the data where raid0 puts it, and a "
		               "restripe to it is the reshape's work",
		               in->array, md_layout_name(5, sb->layout, name, sizeof(name)));
	int r = no_layout(in, rule);
	if (r < 0)
		return r;
	if (roles_out_of_sync(in, n - 1))
		return err_set(-EINVAL,
		               "%s: %s: a data device is missing or rebuilding; raid0 "
		               "needs all of them (the kernel: \"raid5 must have missing parity "
		               "disk\")",
		               in->array, rule);
	int k = slot_of_role(sb, n - 1);
	if (k >= 0) {
		p->roles[k] = MD_ROLE_SPARE;
		p->dropped[k] = true;
	}
	p->level = 0;
	p->layout = 0;
	p->raid_disks = n - 1;
	p->clean = true;
	return 0;
}

/* raid4 -> raid5 (raid5_takeover: level 4): parity-last, whatever the
 * raid4's layout word; any state (no block moves). */
static int plan_4_5(const struct md_takeover_in *in, struct md_takeover_plan *p)
{
	if (in->layout && strcmp(in->layout, "parity-last") != 0)
		return err_set(-ENOTSUP,
		               "%s: raid4 -> raid5 --layout %s: the takeover makes parity-last "
		               "(raid4's parity stays on the last device); another layout "
		               "restripes every block: take it over, then grow --layout",
		               in->array, in->layout);
	md_layout_parse(5, "parity-last", &p->layout);
	p->level = 5;
	return 0;
}

/* parity-last raid5 -> raid4 (raid4_takeover: layout 0, as the kernel
 * writes it); any state. */
static int plan_5_4(const struct md_takeover_in *in, struct md_takeover_plan *p)
{
	const struct md_super *sb = in->sb;
	char name[32];
	uint32_t pl;

	md_layout_parse(5, "parity-last", &pl);
	if (sb->layout != pl)
		return err_set(-ENOTSUP,
		               "%s: raid5 -> raid4: layout %s rotates parity over every device; "
		               "only parity-last keeps it where raid4 does (mdadm --grow "
		               "--layout=parity-last first, a restripe)",
		               in->array, md_layout_name(5, sb->layout, name, sizeof(name)));
	int r = no_layout(in, "raid5 -> raid4");
	if (r < 0)
		return r;
	p->level = 4;
	p->layout = 0;
	return 0;
}

/* raid10 -> raid0 (raid0_takeover_raid10): near-2, an even count; one
 * device of each pair stays, role/2. */
static int plan_10_0(const struct md_takeover_in *in, struct md_takeover_plan *p)
{
	const struct md_super *sb = in->sb;
	unsigned n = sb->raid_disks;
	char name[32];

	if (sb->layout != 0x102)
		return err_set(
		    -ENOTSUP,
		    "%s: raid10 -> raid0: layout %s; only near-2 (n2) pairs copies "
		    "raid0 can drop (mdadm: \"Cannot Grow RAID10 with far/offset layout\")",
		    in->array, md_layout_name(10, sb->layout, name, sizeof(name)));
	if (n & 1)
		return err_set(
		    -EINVAL,
		    "%s: raid10 -> raid0: %u devices, an odd count: its copies are not "
		    "pairs (the kernel: \"cannot takeover Raid10 with odd disk number\")",
		    in->array, n);
	int r = no_layout(in, "raid10 -> raid0");
	if (r < 0)
		return r;
	for (unsigned k = 0; k < n / 2; k++) {
		int keep = slot_in_sync(in, 2 * k);
		if (keep < 0)
			keep = slot_in_sync(in, 2 * k + 1);
		if (keep < 0)
			return err_set(
			    -EINVAL,
			    "%s: raid10 -> raid0: neither device of pair %u (roles %u, %u) "
			    "is in sync",
			    in->array, k, 2 * k, 2 * k + 1);
		for (unsigned j = 2 * k; j <= 2 * k + 1; j++) {
			int s = slot_of_role(sb, j);
			if (s >= 0 && s != keep) {
				p->roles[s] = MD_ROLE_SPARE;
				p->dropped[s] = true;
			}
		}
		p->roles[keep] = (uint16_t)k;
	}
	p->level = 0;
	p->layout = 0;
	p->raid_disks = n / 2;
	p->clean = true;
	return 0;
}

/* raid1 -> raid0 (raid0_takeover_raid1): one copy stays. */
static int plan_1_0(const struct md_takeover_in *in, struct md_takeover_plan *p)
{
	const struct md_super *sb = in->sb;
	int keep = -1;

	int r = no_layout(in, "raid1 -> raid0");
	if (r < 0)
		return r;
	for (unsigned j = 0; j < sb->raid_disks && keep < 0; j++)
		keep = slot_in_sync(in, j);
	if (keep < 0)
		return err_set(-EINVAL, "%s: raid1 -> raid0: no copy is in sync", in->array);
	for (uint32_t k = 0; k < sb->max_dev && k < MD_SB_MAX_DEV; k++)
		if (sb->roles[k] < sb->raid_disks && (int)k != keep) {
			p->roles[k] = MD_ROLE_SPARE;
			p->dropped[k] = true;
		}
	p->roles[keep] = 0;
	p->level = 0;
	p->layout = 0;
	p->chunk = takeover_chunk(sb->size);
	p->raid_disks = 1;
	p->clean = true;
	return 0;
}

static const struct takeover_row takeover_rows[] = {
    {1, 5,
     "raid1 -> raid5: a two-device raid1 is a two-device raid5 (parity = the copy); with "
     "--raid-devices N, then restriped to N",
     plan_1_5},
    {5, 1, "raid5 -> raid1: a two-device raid5 is a two-copy raid1", plan_5_1},
    {5, 6,
     "raid5 -> raid6: Q on a new last device, at the raid5 layout's -6 form (--layout of "
     "another: then restriped to it)",
     plan_5_6},
    {6, 5,
     "raid6 -> raid5: a -6 (or parity-last) raid6 drops Q; its device becomes a spare (a "
     "layout that rotates Q: restriped to its -6 form first)",
     plan_6_5},
    {0, 5, "raid0 -> raid5: parity-last, the parity on a new last device", plan_0_5},
    {5, 0, "raid5 -> raid0: a parity-last raid5 drops its parity device", plan_45_0},
    {0, 4, "raid0 -> raid4: the parity on a new last device", plan_0_4},
    {4, 0, "raid4 -> raid0: the raid4 drops its parity device (the last)", plan_45_0},
    {4, 5, "raid4 -> raid5: parity-last, the parity where raid4 keeps it", plan_4_5},
    {5, 4, "raid5 -> raid4: a parity-last raid5 is a raid4 (layout 0, as the kernel writes)",
     plan_5_4},
    {10, 0, "raid10 -> raid0: one device of each near-2 pair stays", plan_10_0},
    {1, 0, "raid1 -> raid0: one copy stays, a one-device raid0", plan_1_0},
    {0, 6, "raid0 -> raid6: md takes raid0 over to one parity device only: go to raid5, then raid6",
     NULL},
    {0, 10, "raid0 -> raid10: not done by uraid (it needs a new copy of every device rebuilt)",
     NULL},
};
#define TAKEOVER_NROWS (sizeof(takeover_rows) / sizeof(takeover_rows[0]))

const char *md_takeover_row(unsigned i, int *from, int *to, bool *made)
{
	if (i >= TAKEOVER_NROWS)
		return NULL;
	*from = takeover_rows[i].from;
	*to = takeover_rows[i].to;
	*made = takeover_rows[i].plan != NULL;
	return takeover_rows[i].rule;
}

int md_takeover_plan(const struct md_takeover_in *in, struct md_takeover_plan *p)
{
	const struct md_super *sb = in->sb;
	const char *fl = md_level_name(sb->level), *tl = md_level_name(in->level);
	const struct takeover_row *row = NULL;
	uint32_t max_dev = sb->max_dev < MD_SB_MAX_DEV ? sb->max_dev : MD_SB_MAX_DEV;

	fl = fl ? fl : "an unknown level";
	tl = tl ? tl : "an unknown level";
	if (sb->level == in->level)
		return err_set(-EINVAL, "%s is %s already: no level to change", in->array, fl);
	for (size_t i = 0; i < TAKEOVER_NROWS && !row; i++)
		if (takeover_rows[i].from == sb->level && takeover_rows[i].to == in->level)
			row = &takeover_rows[i];
	if (!row)
		return err_set(-ENOTSUP,
		               "%s: %s -> %s: md has no takeover between these levels (`uraid "
		               "grow --help` lists those it has)",
		               in->array, fl, tl);
	if (!row->plan)
		return err_set(-ENOTSUP, "%s: %s", in->array, row->rule);
	if (sb->feature_map & MD_FEATURE_ANY_PPL)
		return err_set(-ENOTSUP,
		               "%s: %s -> %s: the array keeps a partial parity log; the takeover "
		               "would leave it to a level that does not (switch the consistency "
		               "policy to resync first)",
		               in->array, fl, tl);
	if (in->level == 0 && (sb->feature_map & MD_FEATURE_BITMAP_OFFSET))
		return err_set(-ENOTSUP,
		               "%s: %s -> raid0: raid0 keeps no write-intent bitmap (the kernel: "
		               "\"cannot takeover array with bitmap\"); remove it first "
		               "(mdadm --grow --bitmap=none)",
		               in->array, fl);

	memset(p, 0, sizeof(*p));
	p->rule = row->rule;
	p->level = sb->level;
	p->layout = sb->layout;
	p->chunk = sb->chunk;
	p->raid_disks = sb->raid_disks;
	p->size = sb->size;
	p->new_role = -1;
	memcpy(p->roles, sb->roles, max_dev * sizeof(p->roles[0]));
	for (uint32_t k = max_dev; k < MD_SB_MAX_DEV; k++)
		p->roles[k] = MD_ROLE_SPARE;
	return row->plan(in, p);
}
