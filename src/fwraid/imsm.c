/* imsm.c — Intel Matrix Storage Manager metadata (the MPB), read only.
 *
 * Each member disk ends with the same MPB: its first 512 bytes (the
 * anchor, "Intel Raid ISM Cfg Sig. ") two sectors before the end, the
 * rest (when mpb_size is larger) in the sectors just before the anchor.
 * All fields are little-endian.  After the 0xd8-byte header come the disk
 * table (48 bytes a disk, identified by serial number) and the volumes
 * (imsm_dev: a name, a size and one map, or two while migrating), each map
 * listing its members as indices into the disk table (the ord table).
 * The checksum is the 32-bit sum of the MPB's words, less its own field.
 * Layout facts as mdadm's super-intel.c keeps them; fwraid.c builds the
 * volumes from struct fwraid_meta. */
#include "fwraid.h"

#include "core/log.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IMSM_SIG "Intel Raid ISM Cfg Sig. "
#define IMSM_SIG_LEN 24
#define IMSM_HDR 0xd8    /* header bytes before the disk table */
#define IMSM_DISK 48     /* bytes per disk table entry */
#define IMSM_DEV_MAP 112 /* offset of the first map in an imsm_dev */
#define IMSM_MAP 48      /* map bytes before its ord table */
#define IMSM_SERIAL 16
#define IMSM_MAX_MPB (1u << 20) /* far above what 255 disks and volumes need */
#define IMSM_ORD_REBUILD (1u << 24)
#define IMSM_ATTR_2TB_DISK 0x04000000u
#define IMSM_DISK_FAILED 0x04u
#define IMSM_MAP_FAILED 3

static uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint32_t imsm_checksum(const uint8_t *buf, uint32_t size)
{
	uint32_t sum = 0;

	for (uint32_t i = 0; i + 4 <= size; i += 4)
		sum += le32(buf + i);
	return sum - le32(buf + 0x20);
}

/* A 16-byte field as a C string: up to the first NUL, trailing blanks cut. */
static void imsm_str(char *dst, const uint8_t *src)
{
	size_t n = 0;

	while (n < IMSM_SERIAL && src[n])
		n++;
	while (n && src[n - 1] == ' ')
		n--;
	for (size_t i = 0; i < n; i++)
		dst[i] = src[i] >= 0x20 && src[i] < 0x7f ? (char)src[i] : '?';
	dst[n] = 0;
}

static const char *imsm_migr_name(unsigned t)
{
	static const char *const names[] = {"initialisation",       "rebuild",      "verify",
	                                    "level or size change", "state change", "repair"};
	return t < sizeof(names) / sizeof(names[0]) ? names[t] : "migration";
}

/* A map's level in md's numbers, or -1 (IMSM stores RAID10 as level 1 on
 * more than two members). */
static int imsm_md_level(unsigned raw, unsigned nmem, unsigned *layout)
{
	*layout = 0;
	switch (raw) {
	case 0:
		return 0;
	case 1:
	case 10:
		if (nmem == 2 && raw == 1)
			return 1;
		*layout = 0x102; /* near, two copies */
		return nmem >= 4 && nmem % 2 == 0 ? 10 : -1;
	case 5:
		*layout = 0; /* md's left-asymmetric */
		return 5;
	}
	return -1;
}

/* Parse the volume at buf[off..len) into *vm; its byte length in *dlen. */
static int imsm_parse_dev(const uint8_t *buf, size_t len, size_t off, uint32_t attr,
                          const struct fwraid_meta *m, unsigned idx, struct fwraid_vmeta *vm,
                          size_t *dlen)
{
	const uint8_t *d = buf + off, *map, *vol;
	unsigned nmem, raw, data;
	uint64_t pba, nds, per, size;
	uint32_t strip;
	int level;

	if (len - off < IMSM_DEV_MAP + IMSM_MAP)
		return err_set(-EINVAL, "IMSM: volume %u runs past the metadata's end", idx);
	vol = d + 80;
	map = d + IMSM_DEV_MAP;
	nmem = map[16];
	if (nmem == 0)
		return err_set(-EINVAL, "IMSM: volume %u has no members", idx);
	*dlen = IMSM_DEV_MAP + IMSM_MAP + 4u * nmem;
	if (vol[8]) { /* migrating: a second map follows */
		if (len - off < *dlen + IMSM_MAP)
			return err_set(-EINVAL, "IMSM: volume %u runs past the metadata's end",
			               idx);
		*dlen += IMSM_MAP + 4u * buf[off + *dlen + 16];
	}
	if (len - off < *dlen)
		return err_set(-EINVAL, "IMSM: volume %u runs past the metadata's end", idx);
	memset(vm, 0, sizeof(*vm));
	snprintf(vm->id, sizeof(vm->id), "%u", idx);
	imsm_str(vm->name, d);
	if (!vm->name[0])
		snprintf(vm->name, sizeof(vm->name), "Volume%u", idx);
	size = le32(d + 16) | (uint64_t)le32(d + 20) << 32;
	pba = le32(map + 0);
	per = le32(map + 4);
	nds = le32(map + 8);
	if (attr & IMSM_ATTR_2TB_DISK) {
		pba |= (uint64_t)le32(map + 20) << 32;
		per |= (uint64_t)le32(map + 24) << 32;
		nds |= (uint64_t)le32(map + 28) << 32;
	}
	strip = le16(map + 12);
	raw = map[15];
	vm->nmembers = nmem;
	for (unsigned k = 0; k < nmem; k++) {
		uint32_t ord = le32(map + IMSM_MAP + 4 * k);
		unsigned di = ord & 0xffffff;
		if (di >= m->ndisks)
			return err_set(
			    -EINVAL,
			    "IMSM: volume %s: member %u is disk %u, past the disk table's %u",
			    vm->name, k, di, m->ndisks);
		vm->disk[k] = di;
		vm->missing[k] = (ord & IMSM_ORD_REBUILD) != 0;
	}
	level = imsm_md_level(raw, nmem, &vm->layout);
	if (level < 0) {
		snprintf(vm->refused, sizeof(vm->refused),
		         "RAID level %u on %u disks not supported", raw, nmem);
		return 0;
	}
	vm->level = level;
	data = level == 0 ? nmem : level == 1 ? 1 : level == 10 ? nmem / 2 : nmem - 1;
	if (level != 1 && (strip == 0 || (strip & (strip - 1))))
		return err_set(-EINVAL, "IMSM: volume %s: strip of %u sectors", vm->name, strip);
	vm->chunk = level == 1 ? 0 : (uint32_t)strip * 512;
	/* What each member holds, as mdadm counts it: whole data stripes
	 * (mirrors hold them twice), unless that disagrees with the volume's
	 * size by more than the 1 MiB rounding: then the size decides. */
	if (nds > UINT64_MAX / 2 / (strip ? strip : 1))
		return err_set(-EINVAL, "IMSM: volume %s: %" PRIu64 " data stripes", vm->name, nds);
	per = nds * strip * (level == 1 || level == 10 ? 2 : 1);
	if (level == 1 || per * data + 2048u * data < size || per * data > size + 2048u * data)
		per = size / data;
	if (per == 0 || size == 0 || size / data > per || pba > FWRAID_MAX_SECTORS ||
	    per > FWRAID_MAX_SECTORS || size > FWRAID_MAX_SECTORS)
		return err_set(-EINVAL,
		               "IMSM: volume %s: size %" PRIu64 " sectors does not fit "
		               "%u members of %" PRIu64 " sectors",
		               vm->name, size, nmem, per);
	if (level != 1)
		per -= per % strip;
	vm->size = size * 512;
	vm->per_member = per * 512;
	for (unsigned k = 0; k < nmem; k++) {
		uint64_t dsize = m->disk[vm->disk[k]].size;
		vm->start[k] = pba * 512;
		if (dsize && vm->start[k] + vm->per_member > dsize)
			return err_set(-EINVAL,
			               "IMSM: volume %s extends past member %u (disk %s): sectors "
			               "%" PRIu64 "+%" PRIu64 " of %" PRIu64,
			               vm->name, k, m->disk[vm->disk[k]].id, pba, per, dsize / 512);
	}
	if (vol[8])
		snprintf(vm->refused, sizeof(vm->refused), "migration in progress (%s)",
		         imsm_migr_name(vol[9]));
	else if (map[14] == IMSM_MAP_FAILED)
		snprintf(vm->refused, sizeof(vm->refused), "the firmware marks it failed");
	return 0;
}

int imsm_parse(const uint8_t *buf, size_t len, struct fwraid_meta **out)
{
	struct fwraid_meta *m;
	uint32_t size, attr;
	size_t off;
	int r;

	*out = NULL;
	if (len < 512 || memcmp(buf, IMSM_SIG, IMSM_SIG_LEN) != 0)
		return err_set(-EINVAL, "IMSM: no MPB signature");
	size = le32(buf + 0x24);
	if (size < IMSM_HDR || size > len || size % 4)
		return err_set(-EINVAL, "IMSM: MPB size %" PRIu32 " (of %zu bytes read)", size,
		               len);
	if (imsm_checksum(buf, size) != le32(buf + 0x20))
		return err_set(-EINVAL,
		               "IMSM: MPB checksum mismatch (%08" PRIx32 ", stored %08" PRIx32 ")",
		               imsm_checksum(buf, size), le32(buf + 0x20));
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->fmt = "imsm";
	m->self = -1;
	snprintf(m->id, sizeof(m->id), "%08" PRIx32, le32(buf + 0x28));
	m->seq = le32(buf + 0x2c);
	attr = le32(buf + 0x34);
	m->ndisks = buf[0x38];
	off = IMSM_HDR + (size_t)m->ndisks * IMSM_DISK;
	if (off > size) {
		r = err_set(-EINVAL, "IMSM: %u disks do not fit the %" PRIu32 "-byte MPB",
		            m->ndisks, size);
		goto fail;
	}
	for (unsigned i = 0; i < m->ndisks; i++) {
		const uint8_t *d = buf + IMSM_HDR + i * IMSM_DISK;
		uint64_t blocks = le32(d + 16);
		if (attr & IMSM_ATTR_2TB_DISK)
			blocks |= (uint64_t)le32(d + 32) << 32;
		imsm_str(m->disk[i].id, d);
		m->disk[i].failed = (le32(d + 24) & IMSM_DISK_FAILED) != 0;
		m->disk[i].size = blocks > FWRAID_MAX_SECTORS ? 0 : blocks * 512;
	}
	m->nvols = buf[0x39];
	m->vol = calloc(m->nvols ? m->nvols : 1, sizeof(*m->vol));
	if (!m->vol) {
		r = -ENOMEM;
		goto fail;
	}
	for (unsigned i = 0; i < m->nvols; i++) {
		size_t dlen = 0;
		r = imsm_parse_dev(buf, size, off, attr, m, i, &m->vol[i], &dlen);
		if (r < 0)
			goto fail;
		off += dlen;
	}
	*out = m;
	return 0;
fail:
	fwraid_meta_free(m);
	return r;
}

int imsm_read(struct vol *v, struct fwraid_meta **out)
{
	uint8_t *buf = NULL;
	uint32_t size, nsec;
	int r;

	*out = NULL;
	if (v->size < 2048 || v->size % 512)
		return 0;
	buf = malloc(512);
	if (!buf)
		return -ENOMEM;
	r = vol_read_any(v, buf, 512, v->size - 1024);
	if (r < 0) {
		r = err_set(r, "%s: IMSM: reading the anchor: %s", v->name, strerror(-r));
		goto out;
	}
	if (memcmp(buf, IMSM_SIG, IMSM_SIG_LEN) != 0) {
		r = 0;
		goto out;
	}
	size = le32(buf + 0x24);
	nsec = (size + 511) / 512;
	if (size < IMSM_HDR || size > IMSM_MAX_MPB || (uint64_t)nsec * 512 + 1024 > v->size) {
		r = err_set(-EINVAL,
		            "%s: IMSM: MPB size %" PRIu32 " past the disk or the format's limit",
		            v->name, size);
		goto out;
	}
	if (nsec > 1) {
		uint8_t *p = realloc(buf, (size_t)nsec * 512);
		if (!p) {
			r = -ENOMEM;
			goto out;
		}
		buf = p;
		r = vol_read_any(v, buf + 512, (uint64_t)(nsec - 1) * 512,
		                 v->size - 1024 - (uint64_t)(nsec - 1) * 512);
		if (r < 0) {
			r = err_set(r, "%s: IMSM: reading the MPB: %s", v->name, strerror(-r));
			goto out;
		}
	}
	r = imsm_parse(buf, (size_t)nsec * 512, out);
	if (r < 0) {
		if (r != -ENOMEM)
			r = err_set(r, "%s: %s", v->name, err_detail(r));
		goto out;
	}
	r = 1;
out:
	free(buf);
	return r;
}
