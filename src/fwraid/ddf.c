/* ddf.c — SNIA DDF metadata (Dell PERC, LSI MegaRAID, mdadm -e ddf), read
 * only.
 *
 * The last sector of each disk holds the anchor header, which points at
 * a primary and a secondary copy of the header (the newer, not left open,
 * wins, as mdadm chooses).  Sections follow each header at the sector
 * offsets it lists: the physical disk records (every disk of the
 * container: GUID, reference number, state, the sectors it offers), the
 * virtual disk records (every volume: GUID, name, state), the
 * configuration records (this disk's share of each volume: RAID level
 * as PRL/RLQ, the disks in sequence by reference number and where the
 * volume starts on each), and this disk's own data (its GUID).  All
 * fields are big-endian; every block carries a CRC-32 over itself with
 * its CRC field read as 0xffffffff.  A RAID10 is a RAID1 per basic
 * volume (BVD), striped over by the secondary level: each disk records
 * only its BVD, so fwraid.c puts the volume together from all members.
 * Offsets as the SNIA DDF 2.0 spec and mdadm's super-ddf.c lay them out. */
#include "fwraid.h"

#include "core/log.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DDF_HEADER_MAGIC 0xde11de11u
#define DDF_PHYS_MAGIC 0x22222222u
#define DDF_DATA_MAGIC 0x33333333u
#define DDF_VIRT_MAGIC 0xddddddddu
#define DDF_CONF_MAGIC 0xeeeeeeeeu
#define DDF_GUID 24
#define DDF_MAX_SECTION 1024 /* sectors: mdadm's bound on a section */
#define DDF_PD_FAILED 0x02u
#define DDF_PD_REBUILDING 0x04u
#define DDF_PD_MISSING 0x40u
#define DDF_PRL_RAID0 0x00
#define DDF_PRL_RAID1 0x01
#define DDF_PRL_RAID5 0x05
#define DDF_PRL_RAID1E 0x11
#define DDF_SRL_STRIPED 0x00
#define DDF_SRL_SPANNED 0x03

static uint16_t be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t be64(const uint8_t *p)
{
	return (uint64_t)be32(p) << 32 | be32(p + 4);
}

/* DDF's CRC-32 of buf[0..len) with the CRC field at offset 4 read as
 * 0xffffffff: the reflected 0xedb88320 polynomial run from 0, without
 * the final inversion (what mdadm writes and controllers read). */
static uint32_t ddf_crc(const uint8_t *buf, size_t len)
{
	uint32_t crc = 0;

	for (size_t i = 0; i < len; i++) {
		crc ^= i >= 4 && i < 8 ? 0xffu : buf[i];
		for (int b = 0; b < 8; b++)
			crc = crc >> 1 ^ (0xedb88320u & (0u - (crc & 1)));
	}
	return crc;
}

static bool ddf_crc_ok(const uint8_t *buf, size_t len)
{
	return ddf_crc(buf, len) == be32(buf + 4);
}

static void ddf_hex(char *dst, const uint8_t *guid)
{
	for (int i = 0; i < DDF_GUID; i++)
		snprintf(dst + 2 * i, 3, "%02x", guid[i]);
}

/* A space- or NUL-padded 16-byte name as a C string. */
static void ddf_name(char *dst, const uint8_t *src)
{
	size_t n = 0;

	while (n < 16 && src[n])
		n++;
	while (n && src[n - 1] == ' ')
		n--;
	for (size_t i = 0; i < n; i++)
		dst[i] = src[i] >= 0x20 && src[i] < 0x7f ? (char)src[i] : '?';
	dst[n] = 0;
}

/* Read a header at lba and check it against the anchor: 1 good, 0 not. */
static int ddf_header(struct vol *v, uint64_t lba, unsigned type, const uint8_t *anchor,
                      uint8_t *hdr)
{
	if (lba >= v->size / 512 - 1 || vol_read_any(v, hdr, 512, lba * 512) < 0)
		return 0;
	return be32(hdr) == DDF_HEADER_MAGIC && ddf_crc_ok(hdr, 512) &&
	       memcmp(hdr + 8, anchor + 8, DDF_GUID + 8) == 0 &&
	       memcmp(hdr + 96, anchor + 96, 16) == 0 && hdr[112] == type;
}

/* Section i of the header (offset, length in sectors) read into *out. */
static int ddf_section(struct vol *v, const uint8_t *hdr, unsigned i, const char *what,
                       uint8_t **out, size_t *len)
{
	uint64_t base = be64(hdr + (hdr[112] == 2 ? 104 : 96));
	uint32_t off = be32(hdr + 192 + 8 * i), n = be32(hdr + 196 + 8 * i);
	int r;

	*out = NULL;
	if (n == 0 || n > DDF_MAX_SECTION || base + off + n > v->size / 512)
		return err_set(-EINVAL,
		               "%s: DDF: the %s section (%" PRIu32 " sectors at %" PRIu64
		               ") lies past the disk",
		               v->name, what, n, base + off);
	*len = (size_t)n * 512;
	*out = malloc(*len);
	if (!*out)
		return -ENOMEM;
	r = vol_read_any(v, *out, *len, (base + off) * 512);
	if (r < 0)
		return err_set(r, "%s: DDF: reading the %s section: %s", v->name, what,
		               strerror(-r));
	return 0;
}

struct ddf_ctx {
	struct vol *v;
	struct fwraid_meta *m;
	uint32_t refnum[FWRAID_MAX_DISKS];
	unsigned mppe; /* max primary element entries: the sequence's length */
	const uint8_t *virt;
	size_t vlen;
};

static int ddf_disk_of(const struct ddf_ctx *c, uint32_t ref)
{
	for (unsigned d = 0; d < c->m->ndisks; d++)
		if (c->refnum[d] == ref)
			return (int)d;
	return -1;
}

/* The volume record for guid: its name and state, or -1. */
static int ddf_virt_find(const struct ddf_ctx *c, const uint8_t *guid, char *name, unsigned *state)
{
	unsigned n = be16(c->virt + 8);

	for (unsigned i = 0; i < n && 64 + (i + 1) * 64 <= c->vlen; i++) {
		const uint8_t *e = c->virt + 64 + i * 64;
		if (memcmp(e, guid, DDF_GUID) == 0) {
			ddf_name(name, e + 48);
			*state = e[32];
			return (int)i;
		}
	}
	return -1;
}

/* md's level and layout of a configuration record, or -1. */
static int ddf_md_level(const uint8_t *rec, unsigned *layout, unsigned *roles)
{
	unsigned prl = rec[67], rlq = rec[68], pec = be16(rec + 64), sec = rec[69], srl = rec[71];

	*layout = 0;
	*roles = pec;
	if (sec > 1) {
		if (prl != DDF_PRL_RAID1 || (srl != DDF_SRL_STRIPED && srl != DDF_SRL_SPANNED) ||
		    !((pec == 2 && rlq == 0) || (pec == 3 && rlq == 1)))
			return -1;
		*layout = 0x100 | pec;
		*roles = pec * sec;
		return 10;
	}
	switch (prl) {
	case DDF_PRL_RAID0:
		return rlq == 0 ? 0 : -1;
	case DDF_PRL_RAID1:
		return (rlq == 0 && pec == 2) || (rlq == 1 && pec == 3) ? 1 : -1;
	case DDF_PRL_RAID1E:
		*layout = rlq == 0 ? 0x102 : 0x201;
		return rlq <= 1 ? 10 : -1;
	case DDF_PRL_RAID5:
		/* N-restart: left-asymmetric, 0-restart: right-asymmetric,
		 * N-continue: left-symmetric (md's 0, 1, 2) */
		*layout = rlq == 2 ? 0 : rlq == 0 ? 1 : 2;
		return rlq == 0 || rlq == 2 || rlq == 3 ? 5 : -1;
	}
	return -1;
}

/* Add the configuration record rec (its CRC checked) to c->m's volumes. */
static int ddf_config(struct ddf_ctx *c, const uint8_t *rec, size_t rlen)
{
	struct fwraid_meta *m = c->m;
	struct fwraid_vmeta *vm = NULL;
	unsigned layout, roles, pec = be16(rec + 64), seq = rec[70], state = 0;
	char vid[64], name[20];
	int level, vi;

	if ((size_t)512 + (size_t)c->mppe * 12 > rlen)
		return err_set(-EINVAL, "DDF: %u sequence entries do not fit a %zu-byte record",
		               c->mppe, rlen);
	ddf_hex(vid, rec + 8);
	vi = ddf_virt_find(c, rec + 8, name, &state);
	if (vi < 0)
		return err_set(-EINVAL, "DDF: configuration %s has no virtual disk record", vid);
	if ((state & 7) == 2) /* deleted */
		return 0;
	level = ddf_md_level(rec, &layout, &roles);
	if (pec == 0 || pec > c->mppe || roles > FWRAID_MAX_MEMBERS ||
	    seq >= (rec[69] ? rec[69] : 1))
		return err_set(-EINVAL,
		               "DDF: virtual disk %s: %u members (of %u), element %u of %u", name,
		               pec, c->mppe, seq, rec[69]);
	for (unsigned k = 0; k < m->nvols; k++)
		if (strcmp(m->vol[k].id, vid) == 0)
			vm = &m->vol[k];
	if (!vm) {
		struct fwraid_vmeta *p = realloc(m->vol, (m->nvols + 1) * sizeof(*p));
		if (!p)
			return -ENOMEM;
		m->vol = p;
		vm = &m->vol[m->nvols++];
		memset(vm, 0, sizeof(*vm));
		snprintf(vm->id, sizeof(vm->id), "%s", vid);
		snprintf(vm->name, sizeof(vm->name), "%s", name[0] ? name : "VD");
		if (!name[0])
			snprintf(vm->name, sizeof(vm->name), "VD%d", vi);
		for (unsigned k = 0; k < FWRAID_MAX_MEMBERS; k++)
			vm->disk[k] = FWRAID_DISK_UNKNOWN;
		vm->nmembers = roles;
		vm->seq = be32(rec + 36);
	} else if (vm->nmembers != roles)
		return err_set(-EINVAL, "DDF: virtual disk %s: records disagree on its members",
		               name);
	if (level < 0) {
		snprintf(vm->refused, sizeof(vm->refused),
		         "RAID level (PRL %u, RLQ %u, SRL %u) not supported", rec[67], rec[68],
		         rec[71]);
		return 0;
	}
	vm->level = level;
	vm->layout = layout;
	vm->chunk = level == 1 ? 0 : rec[66] > 16 ? 0 : 512u << rec[66];
	if (level != 1 && vm->chunk == 0)
		return err_set(-EINVAL, "DDF: virtual disk %s: chunk shift %u", name, rec[66]);
	vm->per_member = be64(rec + 72);
	vm->size = be64(rec + 80);
	if (vm->per_member > FWRAID_MAX_SECTORS || vm->size > FWRAID_MAX_SECTORS ||
	    vm->per_member == 0)
		return err_set(-EINVAL, "DDF: virtual disk %s: %" PRIu64 " blocks per member", name,
		               vm->per_member);
	vm->per_member *= 512;
	vm->size *= 512;
	for (unsigned i = 0; i < pec; i++) {
		uint32_t ref = be32(rec + 512 + 4 * i);
		uint64_t start = be64(rec + 512 + 4 * c->mppe + 8 * i);
		unsigned role = seq * pec + i;
		int d;

		if (ref == 0xffffffffu) { /* a member not present */
			vm->missing[role] = true;
			continue;
		}
		d = ddf_disk_of(c, ref);
		if (d < 0)
			return err_set(-EINVAL,
			               "DDF: virtual disk %s: member %u (reference %08" PRIx32
			               ") is in no physical disk record",
			               name, role, ref);
		if (start > FWRAID_MAX_SECTORS ||
		    (m->disk[d].size && start * 512 + vm->per_member > m->disk[d].size))
			return err_set(
			    -EINVAL,
			    "DDF: virtual disk %s extends past member %u (disk %08" PRIx32
			    "): sectors %" PRIu64 "+%" PRIu64 " of %" PRIu64,
			    name, role, ref, start, vm->per_member / 512, m->disk[d].size / 512);
		vm->disk[role] = (unsigned)d;
		vm->start[role] = start * 512;
	}
	if (state & 0x08)
		snprintf(vm->refused, sizeof(vm->refused), "migration in progress (morphing)");
	else if ((state & 7) == 4)
		snprintf(vm->refused, sizeof(vm->refused), "the controller marks it failed");
	return 0;
}

int ddf_read(struct vol *v, struct fwraid_meta **out)
{
	uint8_t *anchor = malloc(512), *prim = malloc(512), *sec = malloc(512), *hdr = NULL;
	uint8_t *phys = NULL, *virt = NULL, *conf = NULL, *data = NULL;
	struct ddf_ctx c = {.v = v};
	size_t plen, vlen, clen, dlen;
	unsigned crl, npd;
	int r;

	*out = NULL;
	if (!anchor || !prim || !sec) {
		r = -ENOMEM;
		goto out;
	}
	r = 0;
	if (v->size < 1024 || v->size % 512)
		goto out;
	r = vol_read_any(v, anchor, 512, v->size - 512);
	if (r < 0) {
		r = err_set(r, "%s: DDF: reading the anchor: %s", v->name, strerror(-r));
		goto out;
	}
	if (be32(anchor) != DDF_HEADER_MAGIC)
		goto out;
	if (!ddf_crc_ok(anchor, 512)) {
		r = err_set(-EINVAL, "%s: DDF: anchor header CRC mismatch", v->name);
		goto out;
	}
	bool p = ddf_header(v, be64(anchor + 96), 1, anchor, prim);
	bool s = ddf_header(v, be64(anchor + 104), 2, anchor, sec);
	if (p)
		hdr = prim;
	if (s && (!p || (be32(prim + 40) < be32(sec + 40) && !sec[48]) ||
	          (be32(prim + 40) == be32(sec + 40) && prim[48] && !sec[48])))
		hdr = sec;
	if (!hdr) {
		r = err_set(-EINVAL,
		            "%s: DDF: neither the primary nor the secondary header is valid "
		            "(CRC, or not matching the anchor)",
		            v->name);
		goto out;
	}
	crl = be16(hdr + 134);
	c.mppe = be16(hdr + 136);
	if (crl == 0 || c.mppe == 0 || c.mppe > FWRAID_MAX_MEMBERS * 16 ||
	    (size_t)512 + (size_t)c.mppe * 12 > (size_t)crl * 512) {
		r = err_set(-EINVAL, "%s: DDF: configuration records of %u sectors for %u members",
		            v->name, crl, c.mppe);
		goto out;
	}
	if ((r = ddf_section(v, hdr, 1, "physical disk", &phys, &plen)) < 0 ||
	    (r = ddf_section(v, hdr, 2, "virtual disk", &virt, &vlen)) < 0 ||
	    (r = ddf_section(v, hdr, 3, "configuration", &conf, &clen)) < 0 ||
	    (r = ddf_section(v, hdr, 4, "disk data", &data, &dlen)) < 0)
		goto out;
	if (be32(phys) != DDF_PHYS_MAGIC || !ddf_crc_ok(phys, plen) ||
	    be32(virt) != DDF_VIRT_MAGIC || !ddf_crc_ok(virt, vlen) ||
	    be32(data) != DDF_DATA_MAGIC || !ddf_crc_ok(data, 512)) {
		r = err_set(
		    -EINVAL, "%s: DDF: %s record's magic or CRC is wrong", v->name,
		    !ddf_crc_ok(phys, plen) || be32(phys) != DDF_PHYS_MAGIC   ? "the physical disk"
		    : be32(virt) != DDF_VIRT_MAGIC || !ddf_crc_ok(virt, vlen) ? "the virtual disk"
		                                                              : "the disk data");
		goto out;
	}
	c.m = calloc(1, sizeof(*c.m));
	if (!c.m) {
		r = -ENOMEM;
		goto out;
	}
	c.m->fmt = "ddf";
	c.m->self = -1;
	ddf_hex(c.m->id, hdr + 8);
	c.m->seq = be32(hdr + 40);
	npd = be16(phys + 8);
	if (npd > FWRAID_MAX_DISKS || 64 + (size_t)npd * 64 > plen) {
		r = err_set(-EINVAL, "%s: DDF: %u physical disk records do not fit their section",
		            v->name, npd);
		goto out;
	}
	for (unsigned i = 0; i < npd; i++) {
		const uint8_t *e = phys + 64 + i * 64;
		uint64_t cfg = be64(e + 32);
		ddf_hex(c.m->disk[i].id, e);
		c.refnum[i] = be32(e + 24);
		c.m->disk[i].failed = (be16(e + 30) & (DDF_PD_FAILED | DDF_PD_MISSING)) != 0;
		c.m->disk[i].size = cfg > FWRAID_MAX_SECTORS ? 0 : cfg * 512;
		if (memcmp(e, data + 8, DDF_GUID) == 0)
			c.m->self = (int)i;
	}
	c.m->ndisks = npd;
	if (c.m->self < 0) {
		r = err_set(-EINVAL, "%s: DDF: the disk's own GUID is in no physical disk record",
		            v->name);
		goto out;
	}
	c.virt = virt;
	c.vlen = vlen;
	for (size_t off = 0; off + (size_t)crl * 512 <= clen; off += (size_t)crl * 512) {
		const uint8_t *rec = conf + off;
		if (be32(rec) != DDF_CONF_MAGIC)
			continue; /* unused, a spare assignment or vendor's */
		if (!ddf_crc_ok(rec, (size_t)crl * 512)) {
			r = err_set(-EINVAL, "%s: DDF: configuration record %zu CRC mismatch",
			            v->name, off / 512 / crl);
			goto out;
		}
		r = ddf_config(&c, rec, (size_t)crl * 512);
		if (r == -ENOMEM)
			goto out;
		if (r < 0) {
			r = err_set(r, "%s: %s", v->name, err_detail(r));
			goto out;
		}
	}
	*out = c.m;
	c.m = NULL;
	r = 1;
out:
	fwraid_meta_free(c.m);
	free(anchor);
	free(prim);
	free(sec);
	free(phys);
	free(virt);
	free(conf);
	free(data);
	return r;
}
