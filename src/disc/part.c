/* part.c — GPT and DOS/MBR partition tables (part.h), read as Linux's
 * block/partitions/efi.c and msdos.c read them, numbered as they number
 * them, and checked harder: a table that the kernel would quietly trim
 * or cut short (an entry past the disk, an EBR chain that loops) is an
 * error here, because what uraid opens from it is a RAID member.
 *
 * GPT: the header at LBA 1 (512-byte sectors tried first, then 4096) and
 * its copy at the disk's last LBA, each with its CRC32, my_lba, usable
 * range and entries array (its own CRC32) checked before a field is
 * used; a damaged primary falls back to the backup with a warning.  MBR:
 * four primaries; an extended one (0x05, 0x0f, 0x85) holds a chain of
 * EBRs, each with one logical partition and a link to the next, links
 * relative to the extended partition's start, data relative to the EBR.
 * All reads go through vol_read in whole blocks (disk_read). */
#include "part.h"

#include "core/log.h"
#include "slice.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MBR_SIG_AT 510
#define MBR_TABLE_AT 446
#define MBR_ID_AT 440
#define MBR_TYPE_GPT 0xee

#define GPT_HDR_MIN 92u
#define GPT_ENTRY_MIN 128u
#define GPT_ENTRIES_MAX (1u << 20) /* bytes of entries array accepted */
#define GPT_NAME_AT 56u
#define GPT_NAME_UNITS 36u

#define EBR_MAX 256u /* Linux stops at its partition limit too */

static uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* CRC-32 as GPT (and zlib) compute it: reflected 0xedb88320, all ones in
 * and out.  Bitwise: headers and entry arrays are a few KiB. */
static uint32_t gpt_crc32(const uint8_t *p, size_t len)
{
	uint32_t c = 0xffffffffu;

	for (size_t i = 0; i < len; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = c >> 1 ^ (0xedb88320u & -(c & 1));
	}
	return ~c;
}


static void warn_add(struct part_table *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void warn_add(struct part_table *t, const char *fmt, ...)
{
	size_t at = strlen(t->warning);
	va_list ap;

	if (at && at + 2 < sizeof(t->warning)) {
		memcpy(t->warning + at, "; ", 3);
		at += 2;
	}
	va_start(ap, fmt);
	vsnprintf(t->warning + at, sizeof(t->warning) - at, fmt, ap);
	va_end(ap);
}

static struct part *part_add(struct part_table *t, unsigned *cap)
{
	if (t->n == *cap) {
		unsigned ncap = *cap ? *cap * 2 : 8;
		struct part *np = realloc(t->parts, ncap * sizeof(*np));
		if (!np)
			return NULL;
		t->parts = np;
		*cap = ncap;
	}
	memset(&t->parts[t->n], 0, sizeof(t->parts[0]));
	return &t->parts[t->n++];
}

/* Two ranges of [start, start+size) overlap: the first such pair of
 * t->parts[from..] by start, or -1.  *a and *b get their numbers. */
static int by_start(const void *x, const void *y)
{
	const struct part *a = *(struct part *const *)x, *b = *(struct part *const *)y;
	return a->start < b->start ? -1 : a->start > b->start;
}

static int by_number(const void *x, const void *y)
{
	const struct part *a = x, *b = y;
	return a->number < b->number ? -1 : a->number > b->number;
}

/* Whether two of the n parts in list overlap; their numbers in *a < *b. */
static bool parts_overlap(struct part **list, unsigned n, unsigned *a, unsigned *b)
{
	qsort(list, n, sizeof(*list), by_start);
	for (unsigned i = 1; i < n; i++)
		if (list[i]->start < list[i - 1]->start + list[i - 1]->size) {
			*a = list[i - 1]->number < list[i]->number ? list[i - 1]->number
			                                           : list[i]->number;
			*b = list[i - 1]->number ^ list[i]->number ^ *a;
			return true;
		}
	return false;
}

/* ---- names ---- */

struct type_name {
	const char *key;
	const char *name;
};

/* GPT type GUIDs as fdisk names them (the common ones on Linux and NAS
 * disks). */
static const struct type_name gpt_types[] = {
    {"a19d880f-05fc-4d3b-a006-743f0f84911e", "Linux RAID"},
    {"e6d6d379-f507-44c2-a23c-238f2a3df928", "Linux LVM"},
    {"0fc63daf-8483-4772-8e79-3d69d8477de4", "Linux filesystem"},
    {"0657fd6d-a4ab-43c4-84e5-0933c84b4f4f", "Linux swap"},
    {"c12a7328-f81f-11d2-ba4b-00a0c93ec93b", "EFI System"},
    {"ebd0a0a2-b9e5-4433-87c0-68b6b72699c7", "Microsoft basic data"},
    {"e3c9e316-0b5c-4db8-817d-f92df00215ae", "Microsoft reserved"},
    {"21686148-6449-6e6f-744e-656564454649", "BIOS boot"},
    {"933ac7e1-2eb4-4f13-b844-0e14e2aef915", "Linux home"},
    {"4f68bce3-e8cd-4db1-96e7-fbcaf984b709", "Linux root (x86-64)"},
    {"bc13c2ff-59e6-4262-a352-b275fd6f7172", "Linux extended boot"},
    {"ca7d7ccb-63ed-4c53-861c-1742536059cc", "Linux LUKS"},
    {"8da63339-0007-60c0-c436-083ac8230908", "Linux reserved"},
    {"516e7cb6-6ecf-11d6-8ff8-00022d09712b", "FreeBSD ZFS"},
    {"6a898cc3-1dd2-11b2-99a6-080020736631", "Solaris /usr & Apple ZFS"},
    {"48465300-0000-11aa-aa11-00306543ecac", "Apple HFS/HFS+"},
};

/* MBR types as fdisk names them. */
static const struct {
	uint8_t type;
	const char *name;
} mbr_types[] = {
    {0x01, "FAT12"},
    {0x04, "FAT16 <32M"},
    {0x05, "Extended"},
    {0x06, "FAT16"},
    {0x07, "HPFS/NTFS/exFAT"},
    {0x0b, "W95 FAT32"},
    {0x0c, "W95 FAT32 (LBA)"},
    {0x0e, "W95 FAT16 (LBA)"},
    {0x0f, "W95 Ext'd (LBA)"},
    {0x82, "Linux swap / Solaris"},
    {0x83, "Linux"},
    {0x85, "Linux extended"},
    {0x8e, "Linux LVM"},
    {0xa5, "FreeBSD"},
    {0xda, "Non-FS data"},
    {0xee, "GPT"},
    {0xef, "EFI (FAT-12/16/32)"},
    {0xfd, "Linux raid autodetect"},
};

static bool mbr_is_extended(uint8_t type)
{
	return type == 0x05 || type == 0x0f || type == 0x85;
}

static const char *mbr_type_name(uint8_t type)
{
	for (size_t i = 0; i < sizeof(mbr_types) / sizeof(mbr_types[0]); i++)
		if (mbr_types[i].type == type)
			return mbr_types[i].name;
	return NULL;
}

/* A GUID's mixed-endian bytes as text, lowercase and dashed. */
static void guid_text(const uint8_t *g, char out[40])
{
	snprintf(out, 40, "%08x-%04x-%04x-%02x%02x-%02x%02x%02x%02x%02x%02x", le32(g), le16(g + 4),
	         le16(g + 6), g[8], g[9], g[10], g[11], g[12], g[13], g[14], g[15]);
}

static bool guid_zero(const uint8_t *g)
{
	for (int i = 0; i < 16; i++)
		if (g[i])
			return false;
	return true;
}

/* units UTF-16LE code units (up to a NUL) as UTF-8 into out (cap bytes,
 * always terminated); unpaired surrogates become U+FFFD. */
static void utf16_to_utf8(const uint8_t *in, unsigned units, char *out, size_t cap)
{
	size_t o = 0;

	for (unsigned i = 0; i < units; i++) {
		uint32_t c = le16(in + 2 * i);
		uint8_t b[4];
		size_t n;

		if (c == 0)
			break;
		if (c >= 0xd800 && c < 0xdc00 && i + 1 < units && le16(in + 2 * i + 2) >= 0xdc00 &&
		    le16(in + 2 * i + 2) < 0xe000) {
			c = 0x10000 + ((c - 0xd800) << 10) + (le16(in + 2 * i + 2) - 0xdc00);
			i++;
		} else if (c >= 0xd800 && c < 0xe000) {
			c = 0xfffd;
		}
		if (c < 0x80) {
			b[0] = (uint8_t)c;
			n = 1;
		} else if (c < 0x800) {
			b[0] = (uint8_t)(0xc0 | c >> 6);
			b[1] = (uint8_t)(0x80 | (c & 0x3f));
			n = 2;
		} else if (c < 0x10000) {
			b[0] = (uint8_t)(0xe0 | c >> 12);
			b[1] = (uint8_t)(0x80 | (c >> 6 & 0x3f));
			b[2] = (uint8_t)(0x80 | (c & 0x3f));
			n = 3;
		} else {
			b[0] = (uint8_t)(0xf0 | c >> 18);
			b[1] = (uint8_t)(0x80 | (c >> 12 & 0x3f));
			b[2] = (uint8_t)(0x80 | (c >> 6 & 0x3f));
			b[3] = (uint8_t)(0x80 | (c & 0x3f));
			n = 4;
		}
		if (o + n >= cap)
			break;
		memcpy(out + o, b, n);
		o += n;
	}
	out[o] = '\0';
}

/* ---- GPT ---- */

/* A header that passed gpt_header_load, with its entries array. */
struct gpt_hdr {
	uint64_t lba, alternate, first_usable, last_usable, entries_lba;
	uint32_t n_entries, entry_size, entries_crc;
	uint8_t disk_guid[16];
	uint8_t *entries; /* n_entries * entry_size bytes */
	bool signature;   /* "EFI PART" was there (even if the rest was bad) */
};

/* Load and check the header at lba with sector size ss: 0 (h filled, its
 * entries allocated), or -EINVAL with why (what is wrong, for a message).
 * Reads that fail are -errno too. */
static int gpt_header_load(struct vol *v, uint32_t ss, uint64_t lba, struct gpt_hdr *h, char *why,
                           size_t why_len)
{
	uint64_t last = v->size / ss - 1, bytes, e_last;
	uint32_t hs, crc;
	uint8_t *buf;
	int r;

	memset(h, 0, sizeof(*h));
	h->lba = lba;
	if (v->size / ss < 3 || lba > last) {
		snprintf(why, why_len, "LBA %llu is past the disk's end", (unsigned long long)lba);
		return -EINVAL;
	}
	buf = vol_buf_alloc(ss);
	if (!buf)
		return -ENOMEM;
	r = vol_read_any(v, buf, ss, lba * ss);
	if (r < 0) {
		snprintf(why, why_len, "cannot be read (%s)", strerror(-r));
		goto out;
	}
	r = -EINVAL;
	if (memcmp(buf, "EFI PART", 8) != 0) {
		snprintf(why, why_len, "no GPT signature");
		goto out;
	}
	h->signature = true;
	hs = le32(buf + 12);
	if (hs < GPT_HDR_MIN || hs > ss) {
		snprintf(why, why_len, "header size %u is not in %u..%u", hs, GPT_HDR_MIN, ss);
		goto out;
	}
	crc = le32(buf + 16);
	memset(buf + 16, 0, 4);
	if (gpt_crc32(buf, hs) != crc) {
		snprintf(why, why_len, "header CRC");
		goto out;
	}
	if (le64(buf + 24) != lba) {
		snprintf(why, why_len, "it says it is at LBA %llu",
		         (unsigned long long)le64(buf + 24));
		goto out;
	}
	h->alternate = le64(buf + 32);
	h->first_usable = le64(buf + 40);
	h->last_usable = le64(buf + 48);
	memcpy(h->disk_guid, buf + 56, 16);
	h->entries_lba = le64(buf + 72);
	h->n_entries = le32(buf + 80);
	h->entry_size = le32(buf + 84);
	h->entries_crc = le32(buf + 88);
	if (h->first_usable > h->last_usable || h->last_usable > last) {
		snprintf(why, why_len, "usable LBAs %llu-%llu are not inside the disk's 0-%llu",
		         (unsigned long long)h->first_usable, (unsigned long long)h->last_usable,
		         (unsigned long long)last);
		goto out;
	}
	if (h->entry_size < GPT_ENTRY_MIN || h->entry_size % 8 || h->entry_size > GPT_ENTRIES_MAX ||
	    h->n_entries == 0 || h->n_entries > GPT_ENTRIES_MAX / h->entry_size) {
		snprintf(why, why_len, "%u entries of %u bytes is not a sane entries array",
		         h->n_entries, h->entry_size);
		goto out;
	}
	bytes = (uint64_t)h->n_entries * h->entry_size;
	e_last = h->entries_lba + (bytes + ss - 1) / ss - 1;
	if (h->entries_lba == 0 || h->entries_lba > last || e_last > last ||
	    (lba >= h->entries_lba && lba <= e_last) ||
	    (h->entries_lba <= h->last_usable && e_last >= h->first_usable)) {
		snprintf(why, why_len,
		         "entries array at LBAs %llu-%llu overlaps the header, the usable "
		         "LBAs or the disk's end",
		         (unsigned long long)h->entries_lba, (unsigned long long)e_last);
		goto out;
	}
	h->entries = malloc(bytes);
	if (!h->entries) {
		r = -ENOMEM;
		goto out;
	}
	r = vol_read_any(v, h->entries, bytes, h->entries_lba * ss);
	if (r < 0) {
		snprintf(why, why_len, "entries array cannot be read (%s)", strerror(-r));
		goto out;
	}
	r = -EINVAL;
	if (gpt_crc32(h->entries, bytes) != h->entries_crc) {
		snprintf(why, why_len, "entries array CRC");
		goto out;
	}
	r = 0;
out:
	if (r < 0) {
		free(h->entries);
		h->entries = NULL;
	}
	free(buf);
	return r;
}

/* The entries of h into t, each checked against the disk and the usable
 * range, none overlapping another. */
static int gpt_entries(struct vol *v, uint32_t ss, const struct gpt_hdr *h, struct part_table *t)
{
	uint64_t last = v->size / ss - 1;
	struct part **list;
	unsigned cap = 0, a, b;

	for (uint32_t i = 0; i < h->n_entries; i++) {
		const uint8_t *e = h->entries + (size_t)i * h->entry_size;
		uint64_t first = le64(e + 32), end = le64(e + 40);
		struct part *p;

		if (guid_zero(e))
			continue;
		if (first > end)
			return err_set(
			    -EINVAL, "%s: GPT: entry %u ends (LBA %llu) before it starts (%llu)",
			    v->name, i + 1, (unsigned long long)end, (unsigned long long)first);
		if (end > last)
			return err_set(
			    -EINVAL,
			    "%s: GPT: entry %u ends past the disk's end (LBA %llu, the last "
			    "is %llu)",
			    v->name, i + 1, (unsigned long long)end, (unsigned long long)last);
		if (first < h->first_usable || end > h->last_usable)
			return err_set(
			    -EINVAL,
			    "%s: GPT: entry %u (LBAs %llu-%llu) lies outside the usable LBAs "
			    "%llu-%llu",
			    v->name, i + 1, (unsigned long long)first, (unsigned long long)end,
			    (unsigned long long)h->first_usable,
			    (unsigned long long)h->last_usable);
		p = part_add(t, &cap);
		if (!p)
			return -ENOMEM;
		p->number = i + 1;
		p->start = first * ss;
		p->size = (end - first + 1) * ss;
		guid_text(e, p->type);
		for (size_t k = 0; k < sizeof(gpt_types) / sizeof(gpt_types[0]); k++)
			if (strcmp(gpt_types[k].key, p->type) == 0)
				p->type_name = gpt_types[k].name;
		guid_text(e + 16, p->uuid);
		p->attrs = le64(e + 48);
		utf16_to_utf8(e + GPT_NAME_AT, GPT_NAME_UNITS, p->name, sizeof(p->name));
	}
	if (t->n < 2)
		return 0;
	list = malloc(t->n * sizeof(*list));
	if (!list)
		return -ENOMEM;
	for (unsigned i = 0; i < t->n; i++)
		list[i] = &t->parts[i];
	if (parts_overlap(list, t->n, &a, &b)) {
		free(list);
		return err_set(-EINVAL, "%s: GPT: entries %u and %u overlap", v->name, a, b);
	}
	free(list);
	return 0;
}

/* The GPT of v with sector size ss: 1 (t filled), 0 when neither header
 * has a signature at this sector size, or -errno.  need_primary: there is
 * no protective MBR, so only a signature at LBA 1 says GPT (a backup left
 * at the end of a reused disk does not). */
static int gpt_scan(struct vol *v, uint32_t ss, bool need_primary, struct part_table *t)
{
	uint64_t last = v->size / ss - 1;
	struct gpt_hdr p, b = {0};
	const struct gpt_hdr *use;
	char pwhy[128], bwhy[128] = "";
	int pr, br = -EINVAL, r;

	if (v->size / ss < 3)
		return 0;
	pr = gpt_header_load(v, ss, 1, &p, pwhy, sizeof(pwhy));
	if (pr == -ENOMEM)
		return pr;
	if (pr == 0) {
		/* The backup where the primary says, else at the end. */
		br = -EINVAL;
		if (p.alternate != 1 && p.alternate <= last)
			br = gpt_header_load(v, ss, p.alternate, &b, bwhy, sizeof(bwhy));
		if (br < 0 && br != -ENOMEM && p.alternate != last)
			br = gpt_header_load(v, ss, last, &b, bwhy, sizeof(bwhy));
		if (br == -ENOMEM) {
			free(p.entries);
			return br;
		}
		if (br < 0)
			warn_add(t, "backup GPT header is damaged (%s); using the primary", bwhy);
		else if (b.entries_crc != p.entries_crc || b.first_usable != p.first_usable ||
		         b.last_usable != p.last_usable || memcmp(b.disk_guid, p.disk_guid, 16))
			warn_add(t, "primary and backup GPTs differ; using the primary");
		if (p.alternate != last)
			warn_add(
			    t, "the primary GPT puts its backup at LBA %llu, not the last LBA %llu",
			    (unsigned long long)p.alternate, (unsigned long long)last);
		use = &p;
	} else if (need_primary && !p.signature) {
		return 0;
	} else {
		br = gpt_header_load(v, ss, last, &b, bwhy, sizeof(bwhy));
		if (br < 0 && br != -ENOMEM && !b.signature && p.signature) {
			/* The damaged primary's own word for where its copy is. */
			struct gpt_hdr pa;
			char awhy[128];
			uint8_t buf[512];

			if (vol_read_any(v, buf, sizeof(buf), ss) == 0) {
				uint64_t alt = le64(buf + 32);
				if (alt != last && alt > 1 && alt <= last &&
				    gpt_header_load(v, ss, alt, &pa, awhy, sizeof(awhy)) == 0) {
					b = pa;
					br = 0;
				}
			}
		}
		if (br == -ENOMEM)
			return br;
		if (br < 0) {
			if (!p.signature && !b.signature)
				return 0;
			return err_set(
			    -EINVAL,
			    "%s: GPT: primary header at LBA 1: %s; backup header at LBA %llu: %s",
			    v->name, pwhy, (unsigned long long)b.lba, bwhy);
		}
		warn_add(t, "primary GPT header is damaged (%s); using the backup at LBA %llu",
		         pwhy, (unsigned long long)b.lba);
		use = &b;
	}
	t->scheme = "gpt";
	t->sector = ss;
	t->first_lba = use->first_usable;
	t->last_lba = use->last_usable;
	guid_text(use->disk_guid, t->id);
	r = gpt_entries(v, ss, use, t);
	free(p.entries);
	free(b.entries);
	return r < 0 ? r : 1;
}

/* ---- MBR ---- */

struct mbr_entry {
	uint8_t boot, type;
	uint32_t start, size; /* sectors */
};

static void mbr_entries(const uint8_t *sec, struct mbr_entry e[4])
{
	for (int i = 0; i < 4; i++) {
		const uint8_t *p = sec + MBR_TABLE_AT + 16 * i;
		e[i].boot = p[0];
		e[i].type = p[4];
		e[i].start = le32(p + 8);
		e[i].size = le32(p + 12);
	}
}

static struct part *mbr_part(struct part_table *t, unsigned *cap, unsigned number,
                             const struct mbr_entry *e, uint64_t start_sector, uint32_t ss)
{
	struct part *p = part_add(t, cap);

	if (!p)
		return NULL;
	p->number = number;
	p->start = start_sector * ss;
	p->size = (uint64_t)e->size * ss;
	p->mbr_type = e->type;
	snprintf(p->type, sizeof(p->type), "0x%02x", e->type);
	p->type_name = mbr_type_name(e->type);
	p->bootable = e->boot == 0x80;
	p->logical = number > 4;
	return p;
}

/* The EBR chain of the extended primary `slot` (sectors [xs, xs+xn)):
 * its logical partitions into t, numbered on from *next.  Each EBR's
 * entries: data ones (a size, not extended) relative to the EBR, the
 * link (the first extended one) relative to xs.  Like Linux, the 3rd and
 * 4th entries are taken only if they fit (they hold garbage at times). */
static int mbr_chain(struct vol *v, uint32_t ss, unsigned slot, uint64_t xs, uint64_t xn,
                     struct part_table *t, unsigned *cap, unsigned *next)
{
	uint64_t seen[EBR_MAX], this = xs, this_n = xn;
	uint8_t sec[512];
	unsigned n_seen = 0;
	int r;

	for (;;) {
		struct mbr_entry e[4];
		int link = -1;

		for (unsigned i = 0; i < n_seen; i++)
			if (seen[i] == this)
				return err_set(
				    -ELOOP,
				    "%s: MBR: extended partition %u: the EBR chain loops "
				    "back to sector %llu",
				    v->name, slot, (unsigned long long)this);
		if (n_seen == EBR_MAX)
			return err_set(-ELOOP, "%s: MBR: extended partition %u: more than %u EBRs",
			               v->name, slot, EBR_MAX);
		seen[n_seen++] = this;
		r = vol_read_any(v, sec, sizeof(sec), this * ss);
		if (r < 0)
			return err_set(r, "%s: MBR: extended partition %u: EBR at sector %llu: %s",
			               v->name, slot, (unsigned long long)this, strerror(-r));
		if (sec[MBR_SIG_AT] != 0x55 || sec[MBR_SIG_AT + 1] != 0xaa) {
			/* Linux ends the chain here; an empty extended
			 * partition has a blank first EBR. */
			if (n_seen > 1)
				warn_add(t,
				         "extended partition %u: the EBR at sector %llu has no "
				         "signature; the chain ends there",
				         slot, (unsigned long long)this);
			return 0;
		}
		mbr_entries(sec, e);
		for (int i = 0; i < 4; i++) {
			uint64_t at = this + e[i].start;

			if (!e[i].size || mbr_is_extended(e[i].type))
				continue;
			if (e[i].start == 0 && i < 2)
				return err_set(
				    -EINVAL,
				    "%s: MBR: logical partition %u starts on its own EBR "
				    "(sector %llu)",
				    v->name, *next, (unsigned long long)this);
			if (e[i].start == 0 || at < xs || at + e[i].size > xs + xn) {
				if (i >= 2)
					continue;
				return err_set(
				    -EINVAL,
				    "%s: MBR: logical partition %u (sectors %llu-%llu) lies "
				    "outside extended partition %u (sectors %llu-%llu)",
				    v->name, *next, (unsigned long long)at,
				    (unsigned long long)(at + e[i].size - 1), slot,
				    (unsigned long long)xs, (unsigned long long)(xs + xn - 1));
			}
			if (i >= 2 && e[i].start + (uint64_t)e[i].size > this_n)
				continue;
			if (!mbr_part(t, cap, (*next)++, &e[i], at, ss))
				return -ENOMEM;
		}
		for (int i = 0; i < 4 && link < 0; i++)
			if (e[i].size && mbr_is_extended(e[i].type))
				link = i;
		if (link < 0)
			return 0;
		if (xs + e[link].start + e[link].size > xs + xn)
			return err_set(
			    -EINVAL,
			    "%s: MBR: extended partition %u: the EBR at sector %llu links to "
			    "sectors %llu-%llu, outside the extended partition (%llu-%llu)",
			    v->name, slot, (unsigned long long)this,
			    (unsigned long long)(xs + e[link].start),
			    (unsigned long long)(xs + e[link].start + e[link].size - 1),
			    (unsigned long long)xs, (unsigned long long)(xs + xn - 1));
		this = xs + e[link].start;
		this_n = e[link].size;
	}
}

static int mbr_scan(struct vol *v, const uint8_t *sec, struct part_table *t)
{
	uint32_t ss = v->block_min >= 4096 ? 4096 : 512;
	uint64_t sectors = v->size / ss;
	struct mbr_entry e[4];
	struct part **list = NULL;
	struct part ext[4];
	unsigned cap = 0, next = 5, n_ext = 0, n = 0, a, b;
	int r = 0;

	t->scheme = "dos";
	t->sector = ss;
	snprintf(t->id, sizeof(t->id), "0x%08x", le32(sec + MBR_ID_AT));
	mbr_entries(sec, e);
	for (unsigned i = 0; i < 4; i++) {
		uint64_t end = (uint64_t)e[i].start + e[i].size;

		if (!e[i].size)
			continue;
		if (e[i].start == 0)
			return err_set(-EINVAL,
			               "%s: MBR: partition %u starts at sector 0 (the MBR)",
			               v->name, i + 1);
		if (end > sectors)
			return err_set(
			    -EINVAL,
			    "%s: MBR: partition %u (sectors %llu-%llu) ends past the disk's "
			    "end (%llu sectors)",
			    v->name, i + 1, (unsigned long long)e[i].start,
			    (unsigned long long)end - 1, (unsigned long long)sectors);
		if (mbr_is_extended(e[i].type)) {
			memset(&ext[n_ext], 0, sizeof(ext[0]));
			ext[n_ext].number = i + 1;
			ext[n_ext].start = (uint64_t)e[i].start * ss;
			ext[n_ext++].size = (uint64_t)e[i].size * ss;
			r = mbr_chain(v, ss, i + 1, e[i].start, e[i].size, t, &cap, &next);
			if (r < 0)
				return r;
			continue;
		}
		if (!mbr_part(t, &cap, i + 1, &e[i], e[i].start, ss))
			return -ENOMEM;
	}
	/* Primaries and extended containers must not overlap; logicals,
	 * inside their container, must not overlap each other. */
	list = malloc((t->n + 4) * sizeof(*list));
	if (!list)
		return -ENOMEM;
	for (unsigned i = 0; i < t->n; i++)
		if (!t->parts[i].logical)
			list[n++] = &t->parts[i];
	for (unsigned i = 0; i < n_ext; i++)
		list[n++] = &ext[i];
	if (parts_overlap(list, n, &a, &b)) {
		r = err_set(-EINVAL, "%s: MBR: partitions %u and %u overlap", v->name, a, b);
		goto out;
	}
	n = 0;
	for (unsigned i = 0; i < t->n; i++)
		if (t->parts[i].logical)
			list[n++] = &t->parts[i];
	if (parts_overlap(list, n, &a, &b))
		r = err_set(-EINVAL, "%s: MBR: logical partitions %u and %u overlap", v->name, a,
		            b);
out:
	free(list);
	return r < 0 ? r : 1;
}

/* ---- the entry points ---- */

int part_scan(struct vol *v, struct part_table **out)
{
	static const uint32_t sizes[] = {512, 4096};
	struct part_table *t;
	struct mbr_entry e[4];
	uint8_t sec[512];
	bool sig, pmbr = false, hybrid = false, boot_ok = true;
	int r = 0;

	*out = NULL;
	if (v->size < 1024)
		return 0;
	r = vol_read_any(v, sec, sizeof(sec), 0);
	if (r < 0)
		return err_set(r, "%s: MBR: cannot read sector 0: %s", v->name, strerror(-r));
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	sig = sec[MBR_SIG_AT] == 0x55 && sec[MBR_SIG_AT + 1] == 0xaa;
	mbr_entries(sec, e);
	for (int i = 0; i < 4; i++) {
		if (e[i].type == MBR_TYPE_GPT)
			pmbr = true;
		else if (e[i].type)
			hybrid = true;
		if (e[i].boot != 0 && e[i].boot != 0x80)
			boot_ok = false;
	}
	pmbr = pmbr && sig;
	if (pmbr || !sig) {
		/* No MBR at all: a GPT whose protective MBR was wiped is
		 * still taken if "EFI PART" is at LBA 1 (its backup serves
		 * if the rest is damaged), with a warning; a backup alone
		 * is not. */
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]) && r == 0; i++)
			r = gpt_scan(v, sizes[i], !pmbr, t);
		if (r == 0 && pmbr)
			r = err_set(-EINVAL,
			            "%s: GPT: a protective MBR but no GPT header (at LBA 1 of 512- "
			            "or 4096-byte sectors, nor at the last LBA)",
			            v->name);
		if (r > 0 && !pmbr)
			warn_add(t, "no protective MBR in front of the GPT");
		if (r > 0 && pmbr && hybrid)
			warn_add(t, "hybrid MBR: the GPT is used, the MBR's other entries ignored");
	} else if (boot_ok) {
		/* Not a boot sector's code or a file system (whose bytes
		 * there are no valid boot flags): a DOS table. */
		r = mbr_scan(v, sec, t);
	}
	if (r <= 0) {
		part_table_free(t);
		return r;
	}
	if (t->n > 1)
		qsort(t->parts, t->n, sizeof(t->parts[0]), by_number);
	*out = t;
	return 1;
}

void part_table_free(struct part_table *t)
{
	if (!t)
		return;
	free(t->parts);
	free(t);
}

int part_open(struct vol *disk, const struct part *p, const char *name, struct vol **out)
{
	uint32_t bm = disk->block_min ? disk->block_min : 1;
	int r;

	if (!vol_range_ok(disk, p->size, p->start))
		return err_set(-EINVAL, "%s: partition %u (bytes %llu+%llu) is not inside the disk",
		               disk->name, p->number, (unsigned long long)p->start,
		               (unsigned long long)p->size);
	if (p->start % bm || p->size % bm)
		return err_set(-EINVAL,
		               "%s: partition %u (bytes %llu+%llu) is not in whole %u-byte blocks",
		               disk->name, p->number, (unsigned long long)p->start,
		               (unsigned long long)p->size, bm);
	r = slice_open(disk, p->start, p->size, false, name, out);
	if (r < 0)
		return err_set(r, "%s: partition %u: %s", disk->name, p->number, strerror(-r));
	return 0;
}
