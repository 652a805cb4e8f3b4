/* raid5.c — md RAID4, RAID5 and RAID6: the mapping of every layout md writes
 * for them (left/right, symmetric/asymmetric, parity first/last, and RAID6's
 * "_6" variants with Q on the last disk; RAID4 is RAID5's parity-last,
 * whatever its layout word says, as raid5_compute_sector() reads level 4),
 * whole or with members missing
 * (one for RAID5, two for RAID6), whose blocks are then rebuilt from the
 * stripe's other chunks and its parity.  Parity itself -- rebuilding,
 * reconstruct-writes under stripe locks, scrubbing -- is raid_parity.c's;
 * a stream's whole stripes are written by write-behind (raid_wb.c).
 *
 * The geometry, as Linux's raid5_compute_sector(): with m parity chunks
 * per stripe (1 or 2) and n members, array chunk c lies in stripe
 * s = c / (n-m) at data index d = c % (n-m); stripe s sits at member offset
 * s * chunk.  RAID5 (layout word):
 *   0 left-asymmetric   P = n-1 - s%n, data skips P
 *   1 right-asymmetric  P = s%n, data skips P
 *   2 left-symmetric    P = n-1 - s%n, data from P+1 on, wrapping
 *   3 right-symmetric   P = s%n, data from P+1 on, wrapping
 *   4 parity-first      P = 0, data on 1..n-1
 *   5 parity-last       P = n-1, data on 0..n-2
 * RAID6 puts Q right after P (wrapping) and data after both (symmetric) or
 * around both (asymmetric; when P is last, Q is disk 0); parity-first is
 * P 0, Q 1; parity-last P n-2, Q n-1; layouts 16..20 are RAID5's 0..4 over
 * the first n-1 disks with Q always on the last.  md's DDF layouts (8..10)
 * are refused.
 *
 * P is the XOR of the stripe's data chunks; Q weighs them by powers of 2
 * in GF(2^8), in "syndrome order": from the disk after Q (disk 0 when Q is
 * last), wrapping. */
#include "raid_types.h"

#include "core/log.h"

#include <errno.h>
#include <stdlib.h>

enum {
	L_LEFT_ASYM,
	L_RIGHT_ASYM,
	L_LEFT_SYM,
	L_RIGHT_SYM,
	L_PARITY_0,
	L_PARITY_N,
	L6_LEFT_ASYM = 16,
	L6_RIGHT_ASYM,
	L6_LEFT_SYM,
	L6_RIGHT_SYM,
	L6_PARITY_0,
};

struct raid56 {
	unsigned m;        /* parity chunks per stripe: 1 or 2 */
	uint64_t dev_size; /* bytes used on each member, whole chunks */
};

static bool raid56_layout_known(int level, unsigned layout)
{
	if (level == 4 || layout <= L_PARITY_N)
		return true;
	return level == 6 && layout >= L6_LEFT_ASYM && layout <= L6_PARITY_0;
}

/* m: the level's parity count, 1 or 2 */
static int raid56_setup(const struct raid_geom *g, const uint64_t *sizes, unsigned m, void **priv,
                        uint64_t *array_size, unsigned *copies)
{
	uint64_t size = UINT64_MAX;
	struct raid56 *t;

	if (g->raid_disks < (m == 2 ? 4u : 2u))
		return err_set(-EINVAL, "raid%d: needs at least %u members, not %u", g->level,
		               m == 2 ? 4 : 2, g->raid_disks);
	if (!raid56_layout_known(g->level, g->layout))
		return err_set(-EINVAL,
		               "raid%d: layout %u is not one uraid reads (DDF layouts are not)",
		               g->level, g->layout);
	if (g->chunk == 0 || g->chunk % 512)
		return err_set(-EINVAL, "raid%d: chunk of %u bytes", g->level, g->chunk);
	for (unsigned i = 0; i < g->raid_disks; i++)
		if (sizes[i] && sizes[i] < size)
			size = sizes[i];
	if (size == UINT64_MAX)
		return err_set(-ENODEV, "raid%d: no member present", g->level);
	if (g->dev_size) {
		if (g->dev_size > size)
			return err_set(-EINVAL, "raid%d: members are smaller than the array",
			               g->level);
		size = g->dev_size;
	}
	size -= size % g->chunk;
	t = malloc(sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->m = m;
	t->dev_size = size;
	*priv = t;
	*array_size = size * (g->raid_disks - m);
	*copies = 1;
	return 0;
}

/* Stripe s: the P and Q disks (q = -1 on RAID5) and the disk of data
 * index d. */
static void raid56_place(const struct raid_geom *g, unsigned m, uint64_t s, unsigned d, unsigned *p,
                         int *q, unsigned *dd)
{
	unsigned n = g->raid_disks;

	*q = -1;
	if (m == 1) {
		/* md's raid4 ignores its layout word: mdadm --create writes 0,
		 * the kernel's raid0 -> raid4 takeover 5 (parity-last). */
		switch (g->level == 4 ? (unsigned)L_PARITY_N : g->layout) {
		case L_LEFT_ASYM:
			*p = n - 1 - (unsigned)(s % n);
			*dd = d >= *p ? d + 1 : d;
			break;
		case L_RIGHT_ASYM:
			*p = (unsigned)(s % n);
			*dd = d >= *p ? d + 1 : d;
			break;
		case L_LEFT_SYM:
			*p = n - 1 - (unsigned)(s % n);
			*dd = (*p + 1 + d) % n;
			break;
		case L_RIGHT_SYM:
			*p = (unsigned)(s % n);
			*dd = (*p + 1 + d) % n;
			break;
		case L_PARITY_0:
			*p = 0;
			*dd = d + 1;
			break;
		default: /* L_PARITY_N */
			*p = n - 1;
			*dd = d;
			break;
		}
		return;
	}
	switch (g->layout) {
	case L_LEFT_ASYM:
	case L_RIGHT_ASYM:
		*p = g->layout == L_LEFT_ASYM ? n - 1 - (unsigned)(s % n) : (unsigned)(s % n);
		if (*p == n - 1) {
			*q = 0;
			*dd = d + 1;
		} else {
			*q = (int)*p + 1;
			*dd = d >= *p ? d + 2 : d;
		}
		break;
	case L_LEFT_SYM:
	case L_RIGHT_SYM:
		*p = g->layout == L_LEFT_SYM ? n - 1 - (unsigned)(s % n) : (unsigned)(s % n);
		*q = (int)((*p + 1) % n);
		*dd = (*p + 2 + d) % n;
		break;
	case L_PARITY_0:
		*p = 0;
		*q = 1;
		*dd = d + 2;
		break;
	case L_PARITY_N:
		*p = n - 2;
		*q = (int)n - 1;
		*dd = d;
		break;
	case L6_LEFT_ASYM:
	case L6_RIGHT_ASYM:
		*p = g->layout == L6_LEFT_ASYM ? n - 2 - (unsigned)(s % (n - 1))
		                               : (unsigned)(s % (n - 1));
		*dd = d >= *p ? d + 1 : d;
		*q = (int)n - 1;
		break;
	case L6_LEFT_SYM:
	case L6_RIGHT_SYM:
		*p = g->layout == L6_LEFT_SYM ? n - 2 - (unsigned)(s % (n - 1))
		                              : (unsigned)(s % (n - 1));
		*dd = (*p + 1 + d) % (n - 1);
		*q = (int)n - 1;
		break;
	default: /* L6_PARITY_0 */
		*p = 0;
		*dd = d + 1;
		*q = (int)n - 1;
		break;
	}
}

static uint64_t raid56_map(const void *priv, const struct raid_geom *g, uint64_t off, uint64_t len,
                           struct raid_loc *loc, unsigned *ncopies)
{
	const struct raid56 *t = priv;
	unsigned ndata = g->raid_disks - t->m;
	uint64_t c = off / g->chunk, in = off % g->chunk, s = c / ndata;
	unsigned p, dd;
	int q;

	raid56_place(g, t->m, s, (unsigned)(c % ndata), &p, &q, &dd);
	loc[0].role = dd;
	loc[0].off = s * g->chunk + in;
	*ncopies = 1;
	return g->chunk - in < len ? g->chunk - in : len;
}

static void raid56_stripe(const void *priv, const struct raid_geom *g, uint64_t off,
                          struct raid_stripe *st)
{
	const struct raid56 *t = priv;
	unsigned n = g->raid_disks, ndata = n - t->m;
	uint64_t c = off / g->chunk, s = c / ndata;
	unsigned p, dd;
	int q;

	raid56_place(g, t->m, s, (unsigned)(c % ndata), &p, &q, &dd);
	st->moff = s * g->chunk + off % g->chunk;
	st->p = (int)p;
	st->q = q;
	st->ndata = 0;
	/* Syndrome order: from the disk after Q (0 when Q is last or
	 * absent), wrapping, parity left out. */
	unsigned d0 = q < 0 || q == (int)n - 1 ? 0 : (unsigned)q + 1;
	for (unsigned k = 0; k < n; k++) {
		unsigned r = (d0 + k) % n;
		if (r == p || (int)r == q)
			continue;
		if (r == dd)
			st->target = st->ndata;
		st->data[st->ndata++] = r;
	}
}

static void raid56_free(void *p)
{
	free(p);
}

static int raid5_setup(const struct raid_geom *g, const uint64_t *sizes, void **priv,
                       uint64_t *array_size, unsigned *copies)
{
	return raid56_setup(g, sizes, 1, priv, array_size, copies);
}

static int raid6_setup(const struct raid_geom *g, const uint64_t *sizes, void **priv,
                       uint64_t *array_size, unsigned *copies)
{
	return raid56_setup(g, sizes, 2, priv, array_size, copies);
}

/* mdadm's names for the layouts (maps.c's r5layout, r6layout). */
#define RAID5_LAYOUT_NAMES                                                                         \
	{L_LEFT_ASYM, "left-asymmetric", "la"}, {L_RIGHT_ASYM, "right-asymmetric", "ra"},          \
	    {L_LEFT_SYM, "left-symmetric", "ls"}, {L_RIGHT_SYM, "right-symmetric", "rs"},          \
	    {L_PARITY_0, "parity-first", NULL},                                                    \
	{                                                                                          \
		L_PARITY_N, "parity-last", NULL                                                    \
	}

static const struct md_layout_name raid5_layouts[] = {RAID5_LAYOUT_NAMES};
static const struct md_layout_name raid6_layouts[] = {
    RAID5_LAYOUT_NAMES,
    {L6_LEFT_ASYM, "left-asymmetric-6", NULL},
    {L6_RIGHT_ASYM, "right-asymmetric-6", NULL},
    {L6_LEFT_SYM, "left-symmetric-6", NULL},
    {L6_RIGHT_SYM, "right-symmetric-6", NULL},
    {L6_PARITY_0, "parity-first-6", NULL},
};

/* What every parity level does where the mirrors differ: a trimmed chunk
 * would no longer match its parity and zeros are written, parity and all;
 * writes, reads of a gone chunk and the scrub go by stripe
 * (raid_parity.c). */
#define RAID56_HOOKS                                                                               \
	.map = raid56_map, .stripe = raid56_stripe, .free = raid56_free, .striped = true,          \
	.caps_off = VOL_CAP_TRIM | VOL_CAP_ZEROES | VOL_CAP_FAST_ZERO | VOL_CAP_VIEW,              \
	.start = raid_parity_init, .stop = raid_parity_destroy, .write = raid_parity_write,        \
	.rebuild = raid_parity_rebuild, .check_row = raid_parity_check_row,                        \
	.member_back = raid_parity_forget_all

/* raid4 is md's raid5 with parity always on the last member: raid5's
 * parity-last map (raid56_place), the same setup and hooks.  It has no
 * layouts to name (mdadm neither takes nor prints one for it). */
const struct raid_level raid4_level = {
    .md = {.level = 4,
           .name = "raid4",
           .min_disks = 2,
           .parity = 1,
           .redundant = true,
           .chunked = true,
           .served = true},
    .setup = raid5_setup,
    RAID56_HOOKS,
};

const struct raid_level raid5_level = {
    .md = {.level = 5,
           .name = "raid5",
           .min_disks = 2,
           .parity = 1,
           .redundant = true,
           .chunked = true,
           .served = true,
           .layouts = raid5_layouts,
           .nlayouts = sizeof(raid5_layouts) / sizeof(raid5_layouts[0]),
           .default_layout = "left-symmetric"},
    .setup = raid5_setup,
    RAID56_HOOKS,
};

const struct raid_level raid6_level = {
    .md = {.level = 6,
           .name = "raid6",
           .min_disks = 4,
           .parity = 2,
           .redundant = true,
           .chunked = true,
           .served = true,
           .layouts = raid6_layouts,
           .nlayouts = sizeof(raid6_layouts) / sizeof(raid6_layouts[0]),
           .default_layout = "left-symmetric"},
    .setup = raid6_setup,
    RAID56_HOOKS,
};
