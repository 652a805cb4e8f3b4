/* probe.c — the signatures of probe.h, by their magic numbers: a table of
 * (offset, bytes) read from the first 68 KiB, then md's end superblocks
 * (md.c).  Checks are of magic only, as blkid's quickest probe: a false
 * alarm costs a --force, a miss costs a user's data. */
#include "probe.h"

#include "core/log.h"
#include "md.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* 17 blocks of 4 KiB reach past btrfs's magic at 65600. */
#define PROBE_LEN 69632u

struct probe_sig {
	uint32_t off;
	const char *magic;
	size_t len;
	const char *what;
};

/* The most specific first: a GPT disk also carries a protective MBR (and
 * an LVM2 label, checked first, may sit on an old one). */
static const struct probe_sig probe_sigs[] = {
    {0, "LUKS\xba\xbe", 6, "a LUKS header"},
    {16384, "SKUL\xba\xbe", 6, "a LUKS2 header (its second copy)"},
    {4096, "\xfc\x4e\x2b\xa9", 4, "an md superblock"},
    {0, "\xfc\x4e\x2b\xa9", 4, "an md superblock (v1.1)"},
    {0, "XFSB", 4, "an XFS file system"},
    {1080, "\x53\xef", 2, "an ext2/3/4 file system"},
    {65600, "_BHRfS_M", 8, "a btrfs file system"},
    {4086, "SWAPSPACE2", 10, "a swap area"},
    {4086, "SWAP-SPACE", 10, "a swap area"},
    {65526, "SWAPSPACE2", 10, "a swap area"},
    {512, "EFI PART", 8, "a GPT partition table"},
    {4096, "EFI PART", 8, "a GPT partition table"},
    {510, "\x55\xaa", 2, "an MBR partition table or boot sector"},
};

/* LVM2 writes its label into one of the first four sectors (the second,
 * by default): "LABELONE", and the type "LVM2 001" at byte 24. */
static bool probe_lvm2(const uint8_t *buf)
{
	for (unsigned s = 0; s < 4; s++)
		if (memcmp(buf + s * 512, "LABELONE", 8) == 0 &&
		    memcmp(buf + s * 512 + 24, "LVM2 001", 8) == 0)
			return true;
	return false;
}

int probe_member(struct vol *v, const char *spec, const char **what)
{
	uint64_t len = v->size / 4096 * 4096, at[2];
	uint8_t *buf;
	int r = 0;

	*what = NULL;
	if (len > PROBE_LEN)
		len = PROBE_LEN;
	if (!(buf = vol_buf_zalloc(PROBE_LEN)))
		return -ENOMEM;
	if (len) {
		r = vol_read(v, buf, len, 0);
		if (r < 0) {
			r = err_set(r, "%s: reading it failed: %s", spec, strerror(-r));
			goto out;
		}
	}
	if (len >= 2048 && probe_lvm2(buf))
		*what = "an LVM2 physical volume";
	for (size_t i = 0; i < sizeof(probe_sigs) / sizeof(probe_sigs[0]) && !*what; i++) {
		const struct probe_sig *s = &probe_sigs[i];
		if (s->off + s->len <= len && memcmp(buf + s->off, s->magic, s->len) == 0)
			*what = s->what;
	}
	if (!*what) {
		r = md_find_end_supers(v, spec, at);
		if (r > 0)
			*what = r & 1 ? "an md superblock (v1.0)" : "an md superblock (0.90)";
	}
	if (r >= 0)
		r = *what != NULL;
out:
	free(buf);
	return r;
}

int probe_member_refuse(struct vol *v, const char *spec)
{
	const char *what;
	int r = probe_member(v, spec, &what);

	if (r > 0)
		r = err_set(-EEXIST, "%s already holds %s; refusing to overwrite it (use --force)",
		            spec, what);
	return r;
}
