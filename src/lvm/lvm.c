/* lvm.c — LVM2 physical volumes: the label, the metadata area, and the
 * logical volumes assembled over them (lvm.h says what comes out).
 *
 * On a PV (lvm2's lib/label/label.c, lib/format_text/layout.h):
 *   - one of the first four 512-byte sectors holds the label: "LABELONE",
 *     the sector's own number, a CRC of the rest of the sector, the offset
 *     of the pv_header and "LVM2 001";
 *   - the pv_header: the PV's UUID, the device size, then two lists of
 *     (offset, size) ending in a zero entry: data areas, metadata areas;
 *   - each metadata area starts with a 512-byte mda_header (CRC, magic,
 *     version 1, its own start and size, then raw_locn entries), and the
 *     first raw_locn points at the current metadata text in the rest of the
 *     area, a circular buffer: text running past the end of the area
 *     continues right after the header.  The text carries its own CRC.
 * All CRCs are lvm_crc() from LVM_INITIAL_CRC.  Nothing here writes. */
#include "lvm.h"

#include "core/log.h"
#include "disc/raid/raid.h"
#include "disc/slice.h"

#include <ctype.h>
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LVM_SECTOR 512u
#define LVM_LABEL_SCAN 4u /* sectors searched for the label */
#define LVM_MDA_HEADER 512u
#define LVM_MDA_MAX 2u /* lvm2 makes at most two metadata areas */
#define LVM_TEXT_MAX (64u << 20)
#define LVM_RAW_LOCN_IGNORED 0x1u
static const char lvm_mda_magic[16] = " LVM2 x[5A%r0N*>";

struct lvm_label_header {
	char id[8];      /* "LABELONE" */
	uint64_t sector; /* the sector it is in */
	uint32_t crc;    /* of the sector from `offset` on */
	uint32_t offset; /* of the pv_header, from the sector's start */
	char type[8];    /* "LVM2 001" */
};
_Static_assert(sizeof(struct lvm_label_header) == 32, "label_header is 32 bytes");

struct lvm_disk_locn {
	uint64_t offset, size; /* bytes from the PV's start */
};
_Static_assert(sizeof(struct lvm_disk_locn) == 16, "disk_locn is 16 bytes");

struct lvm_pv_header {
	char uuid[LVM_ID_LEN];
	uint64_t device_size;
	/* struct lvm_disk_locn data areas..., {0,0}, metadata areas..., {0,0} */
};
_Static_assert(sizeof(struct lvm_pv_header) == 40, "pv_header is 40 bytes");

struct lvm_raw_locn {
	uint64_t offset; /* from the area's start */
	uint64_t size;
	uint32_t checksum;
	uint32_t flags;
};
_Static_assert(sizeof(struct lvm_raw_locn) == 24, "raw_locn is 24 bytes");

struct lvm_mda_header {
	uint32_t checksum; /* of the header's other 508 bytes */
	char magic[16];
	uint32_t version;
	uint64_t start; /* the area's own offset on the PV */
	uint64_t size;
	struct lvm_raw_locn raw[]; /* ending in a zero entry */
} __attribute__((packed));
_Static_assert(sizeof(struct lvm_mda_header) == 40, "mda_header is 40 bytes");

static uint32_t lvm_crc_table[256];
static pthread_once_t lvm_crc_once = PTHREAD_ONCE_INIT;

static void lvm_crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int b = 0; b < 8; b++)
			c = (c >> 1) ^ (0xedb88320u & -(c & 1));
		lvm_crc_table[i] = c;
	}
}

/* Byte at a time from a table (a metadata text may be megabytes). */
uint32_t lvm_crc(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	pthread_once(&lvm_crc_once, lvm_crc_init);
	for (size_t i = 0; i < len; i++)
		crc = (crc >> 8) ^ lvm_crc_table[(crc ^ p[i]) & 0xff];
	return crc;
}

/* What one PV holds. */
struct lvm_pv {
	char uuid[LVM_ID_LEN + 1];
	uint64_t dev_size;
	struct lvm_vg *vg; /* its newest metadata, or NULL (no area, or none readable) */
	uint32_t text_crc; /* of that text, to tell two copies apart */
	char note[160];    /* "", or what a second copy disagreed on */
};


/* The metadata text of the area at [start, start+size), parsed into *vg.
 * 0, 1 (the area holds no metadata yet, or is marked ignored), or -errno
 * with err_set() detail (without the device name). */
static int mda_read(struct vol *v, uint64_t start, uint64_t size, struct lvm_vg **vg, uint32_t *crc)
{
	uint8_t hb[LVM_MDA_HEADER];
	struct lvm_mda_header *h = (struct lvm_mda_header *)hb;
	struct lvm_raw_locn rl;
	char *text;
	int r;

	if (start % LVM_SECTOR || size < 2 * LVM_MDA_HEADER || start > v->size ||
	    size > v->size - start)
		return err_set(-EINVAL,
		               "metadata area at %" PRIu64 " (%" PRIu64
		               " bytes) is not on the %" PRIu64 "-byte device",
		               start, size, v->size);
	r = vol_read_any(v, hb, sizeof(hb), start);
	if (r < 0)
		return err_set(r, "cannot read the metadata area header at %" PRIu64, start);
	if (memcmp(h->magic, lvm_mda_magic, sizeof(h->magic)))
		return err_set(-EINVAL, "no metadata area header at %" PRIu64 " (bad magic)",
		               start);
	if (le32toh(h->checksum) != lvm_crc(LVM_INITIAL_CRC, hb + 4, sizeof(hb) - 4))
		return err_set(-EINVAL, "metadata area header at %" PRIu64 ": checksum mismatch",
		               start);
	if (le32toh(h->version) != 1)
		return err_set(-EINVAL, "metadata area header at %" PRIu64 ": version %u, not 1",
		               start, le32toh(h->version));
	/* lvm2 holds the header to its start and wraps by its size. */
	if (le64toh(h->start) != start)
		return err_set(-EINVAL,
		               "metadata area header at %" PRIu64 " says it is at %" PRIu64, start,
		               (uint64_t)le64toh(h->start));
	if (le64toh(h->size) < 2 * LVM_MDA_HEADER || le64toh(h->size) > size)
		return err_set(-EINVAL,
		               "metadata area header at %" PRIu64 ": size %" PRIu64
		               " is not within the label's %" PRIu64 " bytes",
		               start, (uint64_t)le64toh(h->size), size);
	size = le64toh(h->size);
	memcpy(&rl, hb + sizeof(*h), sizeof(rl));
	uint64_t off = le64toh(rl.offset), len = le64toh(rl.size);
	if (off == 0 || (le32toh(rl.flags) & LVM_RAW_LOCN_IGNORED))
		return 1;
	uint64_t room = size - LVM_MDA_HEADER;
	if (off < LVM_MDA_HEADER || off >= size || len == 0 || len > room || len > LVM_TEXT_MAX)
		return err_set(-EINVAL,
		               "metadata area at %" PRIu64 ": text at %" PRIu64 " (%" PRIu64
		               " bytes) does not fit its %" PRIu64 " bytes",
		               start, off, len, size);
	uint64_t first = size - off < len ? size - off : len; /* the rest wraps */
	text = malloc(len + 1);
	if (!text)
		return -ENOMEM;
	r = vol_read_any(v, text, first, start + off);
	if (r == 0 && first < len)
		r = vol_read_any(v, text + first, len - first, start + LVM_MDA_HEADER);
	if (r < 0) {
		free(text);
		return err_set(r, "cannot read the metadata text at %" PRIu64, start + off);
	}
	text[len] = 0;
	*crc = lvm_crc(LVM_INITIAL_CRC, text, len);
	if (*crc != le32toh(rl.checksum)) {
		free(text);
		return err_set(-EINVAL, "metadata text at %" PRIu64 ": checksum mismatch",
		               start + off);
	}
	r = lvm_text_parse(text, len, vg);
	free(text);
	return r;
}

/* Read v's label and the newest metadata of its areas into *pv.  1 (a
 * PV), 0 (no label), -errno with "NAME: LVM2: ..." detail (damaged). */
static int pv_read(struct vol *v, struct lvm_pv *pv)
{
	uint8_t buf[LVM_LABEL_SCAN * LVM_SECTOR], *sec = NULL;
	struct lvm_label_header lh;
	struct lvm_mda_area {
		uint64_t start, size;
	} mda[LVM_MDA_MAX];
	unsigned nmda = 0, s;
	char first_err[200] = "";
	int r, good = 0, first_r = 0;

	memset(pv, 0, sizeof(*pv));
	if (v->size < sizeof(buf))
		return 0;
	r = vol_read_any(v, buf, sizeof(buf), 0);
	if (r < 0)
		return err_set(r, "%s: LVM2: cannot read the label sectors", v->name);
	for (s = 0; s < LVM_LABEL_SCAN; s++)
		if (!memcmp(buf + s * LVM_SECTOR, "LABELONE", 8)) {
			sec = buf + s * LVM_SECTOR;
			break;
		}
	if (!sec)
		return 0;
	memcpy(&lh, sec, sizeof(lh));
	if (le64toh(lh.sector) != s)
		return err_set(-EINVAL,
		               "%s: LVM2: the label in sector %u says it is in sector %" PRIu64,
		               v->name, s, (uint64_t)le64toh(lh.sector));
	if (le32toh(lh.crc) != lvm_crc(LVM_INITIAL_CRC, sec + 20, LVM_SECTOR - 20))
		return err_set(-EINVAL, "%s: LVM2: label checksum mismatch (sector %u)", v->name,
		               s);
	if (memcmp(lh.type, "LVM2 001", 8))
		return err_set(-EINVAL, "%s: LVM2: label type \"%.8s\", not LVM2 001", v->name,
		               lh.type);
	uint32_t ho = le32toh(lh.offset);
	if (ho < sizeof(lh) || ho > LVM_SECTOR - sizeof(struct lvm_pv_header) - 16)
		return err_set(-EINVAL, "%s: LVM2: pv_header offset %u is outside the label sector",
		               v->name, ho);
	struct lvm_pv_header ph;
	memcpy(&ph, sec + ho, sizeof(ph));
	for (unsigned i = 0; i < LVM_ID_LEN; i++)
		if (!(isalnum((unsigned char)ph.uuid[i]) || ph.uuid[i] == '!' || ph.uuid[i] == '#'))
			return err_set(-EINVAL, "%s: LVM2: the PV UUID holds byte 0x%02x", v->name,
			               (uint8_t)ph.uuid[i]);
	memcpy(pv->uuid, ph.uuid, LVM_ID_LEN);
	pv->dev_size = le64toh(ph.device_size);
	/* The two lists: data areas (pe_start, which the metadata repeats),
	 * then metadata areas, each ending in a zero offset. */
	unsigned list = 0;
	for (uint32_t at = ho + sizeof(ph);; at += sizeof(struct lvm_disk_locn)) {
		struct lvm_disk_locn dl;
		if (at + sizeof(dl) > LVM_SECTOR)
			return err_set(
			    -EINVAL,
			    "%s: LVM2: the pv_header's area lists run past the label sector",
			    v->name);
		memcpy(&dl, sec + at, sizeof(dl));
		if (dl.offset == 0) {
			if (++list == 2)
				break;
			continue;
		}
		if (list == 1) {
			if (nmda == LVM_MDA_MAX)
				return err_set(-EINVAL, "%s: LVM2: more than %u metadata areas",
				               v->name, LVM_MDA_MAX);
			mda[nmda++] = (struct lvm_mda_area){le64toh(dl.offset), le64toh(dl.size)};
		}
	}
	/* Every area is read; the newest copy wins, and a damaged one is
	 * damage only when no other copy stands in. */
	for (unsigned i = 0; i < nmda; i++) {
		struct lvm_vg *vg = NULL;
		uint32_t crc = 0;
		r = mda_read(v, mda[i].start, mda[i].size, &vg, &crc);
		if (r == 1)
			continue;
		if (r < 0) {
			if (!first_r) {
				first_r = r;
				snprintf(first_err, sizeof(first_err), "%s", err_detail(r));
			}
			continue;
		}
		good++;
		if (pv->vg && (strcmp(pv->vg->id, vg->id) || pv->vg->seqno != vg->seqno ||
		               pv->text_crc != crc))
			snprintf(pv->note, sizeof(pv->note),
			         "%s: its metadata areas disagree (seqno %" PRIu64 " and %" PRIu64
			         ")",
			         v->name, pv->vg->seqno, vg->seqno);
		if (!pv->vg || vg->seqno > pv->vg->seqno) {
			lvm_vg_free(pv->vg);
			pv->vg = vg;
			pv->text_crc = crc;
		} else {
			lvm_vg_free(vg);
		}
	}
	if (first_r && !good)
		return err_set(first_r, "%s: LVM2: %s", v->name, first_err);
	if (first_r)
		snprintf(pv->note, sizeof(pv->note),
		         "%s: a metadata area is damaged, the other one used (%.100s)", v->name,
		         first_err);
	return 1;
}

static void pv_clear(struct lvm_pv *pv)
{
	lvm_vg_free(pv->vg);
	pv->vg = NULL;
}

int lvm_probe(struct vol *v)
{
	struct lvm_pv pv;
	int r = pv_read(v, &pv);

	pv_clear(&pv);
	return r;
}

/* ---- assembly ---- */

static void warn_add(struct lvm_found *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void warn_add(struct lvm_found *f, const char *fmt, ...)
{
	size_t used = strlen(f->warning);
	va_list ap;

	if (used && used + 2 < sizeof(f->warning)) {
		strcpy(f->warning + used, "; ");
		used += 2;
	}
	va_start(ap, fmt);
	vsnprintf(f->warning + used, sizeof(f->warning) - used, fmt, ap);
	va_end(ap);
}

/* Why an LV is not opened, in *why: 1, or -ENOMEM. */
static int refuse(char **why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int refuse(char **why, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = vasprintf(why, fmt, ap);
	va_end(ap);
	if (r < 0) {
		*why = NULL;
		return -ENOMEM;
	}
	return 1;
}

/* The segment's vol: one slice, or a RAID0 of one slice per stripe.  0, 1
 * (*why says why not) or -errno. */
static int seg_open(const struct lvm_vg *vg, const struct lvm_seg *seg, struct vol **pvvol,
                    const char *name, struct vol **out, char **why)
{
	uint64_t ext = vg->extent_size * LVM_SECTOR;
	uint64_t area = seg->extent_count / seg->stripe_count * ext, chunk = 0;
	struct vol *sl[LVM_MAX_STRIPES];
	unsigned n = 0;
	int r = 0;

	if (seg->stripe_count > 1) {
		chunk = seg->stripe_size * LVM_SECTOR;
		if (chunk % 4096 || chunk > UINT32_MAX)
			return refuse(
			    why, "a stripe size of %" PRIu64 " bytes (not a multiple of 4 KiB)",
			    chunk);
		/* dm-stripe refuses these too */
		if (area % chunk)
			return refuse(
			    why, "stripes of %" PRIu64 " bytes, not whole %" PRIu64 "-byte chunks",
			    area, chunk);
	}
	for (; n < seg->stripe_count; n++) {
		const struct lvm_area *a = &seg->areas[n];
		struct vol *pv = pvvol[a->pv];
		uint64_t off = (vg->pv[a->pv].pe_start + a->first * vg->extent_size) * LVM_SECTOR;
		if (off > pv->size || area > pv->size - off) {
			r = refuse(why,
			           "its extents on %s lie past the end of %s (%" PRIu64 " bytes)",
			           vg->pv[a->pv].name, pv->name, pv->size);
			goto out;
		}
		r = slice_open(pv, off, area, false, name, &sl[n]);
		if (r == -EINVAL)
			r = refuse(why, "its extents on %s are not aligned to %s's %u-byte blocks",
			           vg->pv[a->pv].name, pv->name, pv->block_min);
		if (r != 0)
			goto out;
	}
	if (n == 1) {
		*out = sl[0];
		return 0;
	}
	struct raid_geom g = {.level = 0, .chunk = (uint32_t)chunk, .raid_disks = n};
	r = raid_open(&g, sl, NULL, name, out);
	if (r == 0)
		return 0;
	if (r == -EINVAL)
		r = refuse(why, "%s", err_detail(r));
out:
	while (n)
		vol_close(sl[--n]);
	return r;
}

/* The LV's vol: its one segment, or a linear concatenation of them, under a
 * slice that carries its name and read-only flag.  0, 1 (*why says why
 * not) or -errno. */
static int lv_open(const struct lvm_vg *vg, const struct lvm_lv_meta *lv, struct vol **pvvol,
                   const char *name, bool readonly, struct vol **out, char **why)
{
	struct vol **segs = calloc(lv->nseg, sizeof(*segs)), *inner = NULL;
	uint64_t want = 0;
	unsigned n = 0;
	int r = 0;

	if (!segs)
		return -ENOMEM;
	for (; n < lv->nseg; n++) {
		want += lv->seg[n].extent_count * vg->extent_size * LVM_SECTOR;
		r = seg_open(vg, &lv->seg[n], pvvol, name, &segs[n], why);
		if (r != 0)
			goto out;
	}
	if (n == 1) {
		inner = segs[0];
	} else {
		struct raid_geom g = {.level = RAID_LEVEL_LINEAR, .raid_disks = n};
		r = raid_open(&g, segs, NULL, name, &inner);
		if (r < 0)
			goto out;
	}
	n = 0; /* inner owns them */
	if (inner->size != want) {
		vol_close(inner);
		r = refuse(why, "it assembles to %" PRIu64 " bytes, not %" PRIu64, inner->size,
		           want);
		goto out;
	}
	r = slice_open(inner, 0, inner->size, true, name, out);
	if (r < 0) {
		vol_close(inner);
		goto out;
	}
	if (readonly)
		(*out)->caps |= VOL_CAP_READONLY;
out:
	while (n)
		vol_close(segs[--n]);
	free(segs);
	return r;
}

void lvm_found_free(struct lvm_found *f)
{
	if (!f)
		return;
	for (unsigned i = 0; i < f->nlv; i++) {
		if (f->lv[i].vol)
			vol_close(f->lv[i].vol);
		free(f->lv[i].name);
		free(f->lv[i].refused);
		free(f->lv[i].pvs);
	}
	for (unsigned i = 0; i < f->nvg; i++)
		free(f->vg_names[i]);
	free(f->lv);
	free(f->vg_of);
	free(f->vg_names);
	free(f);
}

/* Open the visible LVs of vg (the newest copy of its metadata) over the
 * input vols; at[i] is the input index of vg->pv[i], or UINT_MAX. */
static int vg_open(struct lvm_found *f, const struct lvm_vg *vg, const unsigned *at,
                   struct vol **vols, bool readonly)
{
	struct vol **pvvol = calloc(vg->npv ? vg->npv : 1, sizeof(*pvvol));
	int r = 0;

	if (!pvvol)
		return -ENOMEM;
	for (unsigned i = 0; i < vg->npv; i++)
		pvvol[i] = at[i] == UINT_MAX ? NULL : vols[at[i]];
	for (unsigned l = 0; l < vg->nlv; l++) {
		const struct lvm_lv_meta *lv = &vg->lv[l];
		if (!lv->visible)
			continue;
		struct lvm_lv_found *o = &f->lv[f->nlv];
		if (asprintf(&o->name, "%s/%s", vg->name, lv->name) < 0) {
			o->name = NULL;
			r = -ENOMEM;
			goto out;
		}
		f->nlv++;
		o->pvs = calloc(vg->npv ? vg->npv : 1, sizeof(*o->pvs));
		if (!o->pvs) {
			r = -ENOMEM;
			goto out;
		}
		const char *missing = NULL;
		for (unsigned s = 0; s < lv->nseg; s++) {
			o->size += lv->seg[s].extent_count * vg->extent_size * LVM_SECTOR;
			for (unsigned i = 0; lv->seg[s].mapped && i < lv->seg[s].stripe_count;
			     i++) {
				unsigned p = lv->seg[s].areas[i].pv;
				if (!pvvol[p] || vg->pv[p].missing) {
					missing = missing ? missing : vg->pv[p].name;
					continue;
				}
				bool seen = false;
				for (unsigned k = 0; k < o->npvs; k++)
					seen |= o->pvs[k] == at[p];
				if (!seen)
					o->pvs[o->npvs++] = at[p];
			}
		}
		if (lv->refused) {
			o->refused = strdup(lv->refused);
		} else if (missing) {
			int p = 0;
			while (strcmp(vg->pv[p].name, missing))
				p++;
			if (asprintf(&o->refused, "PV %s (%s) missing", missing, vg->pv[p].id) < 0)
				o->refused = NULL;
		} else {
			bool ro = readonly || !vg->writable || !lv->writable;
			r = lv_open(vg, lv, pvvol, o->name, ro, &o->vol, &o->refused);
			if (r < 0) {
				r = err_set(r, "%s: %s", o->name, err_detail(r));
				goto out;
			}
			r = 0;
			continue;
		}
		if (!o->refused) {
			r = -ENOMEM;
			goto out;
		}
	}
out:
	free(pvvol);
	return r;
}

int lvm_assemble(struct vol **vols, unsigned n, bool readonly, struct lvm_found **out)
{
	struct lvm_pv *pv = calloc(n ? n : 1, sizeof(*pv));
	struct lvm_found *f = calloc(1, sizeof(*f));
	int *perr = calloc(n ? n : 1, sizeof(*perr));
	char(*pmsg)[200] = calloc(n ? n : 1, sizeof(*pmsg));
	unsigned *best =
	    calloc(n ? n : 1, sizeof(*best)); /* per VG: the PV holding its newest copy */
	unsigned *at = NULL, nlv_max = 0;
	int r = 0;

	*out = NULL;
	if (!pv || !f || !perr || !pmsg || !best)
		goto nomem;
	f->vg_of = malloc((n ? n : 1) * sizeof(*f->vg_of));
	f->vg_names = calloc(n ? n : 1, sizeof(*f->vg_names));
	if (!f->vg_of || !f->vg_names)
		goto nomem;
	for (unsigned i = 0; i < n; i++) {
		f->vg_of[i] = UINT_MAX;
		perr[i] = pv_read(vols[i], &pv[i]);
		if (perr[i] < 0)
			snprintf(pmsg[i], sizeof(pmsg[i]), "%s", err_detail(perr[i]));
		if (pv[i].note[0])
			warn_add(f, "%s", pv[i].note);
		for (unsigned j = 0; perr[i] != 0 && j < i; j++)
			if (perr[j] != 0 && pv[j].uuid[0] && !strcmp(pv[i].uuid, pv[j].uuid)) {
				r = err_set(-EEXIST,
				            "%s and %s carry the same LVM2 PV UUID %s (a copy, or "
				            "an md member beside its array?)",
				            vols[j]->name, vols[i]->name, pv[i].uuid);
				goto out;
			}
	}
	/* One VG per id, from the PV with its newest copy. */
	for (unsigned i = 0; i < n; i++) {
		if (!pv[i].vg)
			continue;
		unsigned g = 0;
		while (g < f->nvg && strcmp(pv[best[g]].vg->id, pv[i].vg->id))
			g++;
		if (g == f->nvg) {
			best[f->nvg++] = i;
			continue;
		}
		const struct lvm_vg *a = pv[best[g]].vg, *b = pv[i].vg;
		if (a->seqno != b->seqno || pv[best[g]].text_crc != pv[i].text_crc)
			warn_add(f,
			         "VG %s: metadata copies disagree (seqno %" PRIu64
			         " on %s, %" PRIu64 " on %s): the newest used",
			         a->name, a->seqno, vols[best[g]]->name, b->seqno, vols[i]->name);
		if (b->seqno > a->seqno)
			best[g] = i;
	}
	for (unsigned g = 0; g < f->nvg; g++) {
		const struct lvm_vg *vg = pv[best[g]].vg;
		for (unsigned h = 0; h < g; h++)
			if (!strcmp(f->vg_names[h], vg->name))
				warn_add(f,
				         "two VGs named %s (ids %s and %s): their LVs share names",
				         vg->name, pv[best[h]].vg->id, vg->id);
		nlv_max += vg->nlv;
		f->vg_names[g] = strdup(vg->name);
		if (!f->vg_names[g])
			goto nomem;
	}
	f->lv = calloc(nlv_max ? nlv_max : 1, sizeof(*f->lv));
	if (!f->lv)
		goto nomem;
	for (unsigned g = 0; g < f->nvg; g++) {
		const struct lvm_vg *vg = pv[best[g]].vg;
		unsigned nmissing = 0;
		free(at);
		at = malloc((vg->npv ? vg->npv : 1) * sizeof(*at));
		if (!at)
			goto nomem;
		for (unsigned p = 0; p < vg->npv; p++) {
			at[p] = UINT_MAX;
			for (unsigned i = 0; i < n; i++)
				if (perr[i] != 0 && !strcmp(pv[i].uuid, vg->pv[p].id)) {
					at[p] = i;
					f->vg_of[i] = g;
					if (perr[i] < 0)
						warn_add(f,
						         "%s (VG %s): %s; another PV's copy of the "
						         "metadata used",
						         vols[i]->name, vg->name, pmsg[i]);
				}
			nmissing += at[p] == UINT_MAX;
		}
		if (nmissing)
			warn_add(f, "VG %s is partial: %u of its %u PVs missing", vg->name,
			         nmissing, vg->npv);
		r = vg_open(f, vg, at, vols, readonly);
		if (r < 0)
			goto out;
	}
	/* A damaged PV no VG accounts for is damage the caller must hear of. */
	for (unsigned i = 0; i < n; i++)
		if (perr[i] < 0 && f->vg_of[i] == UINT_MAX) {
			r = err_set(perr[i], "%s", pmsg[i]);
			goto out;
		}
	*out = f;
	f = NULL;
	goto out;
nomem:
	r = -ENOMEM;
out:
	for (unsigned i = 0; pv && i < n; i++)
		pv_clear(&pv[i]);
	lvm_found_free(f);
	free(pv);
	free(perr);
	free(pmsg);
	free(best);
	free(at);
	return r;
}
