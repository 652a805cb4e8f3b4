/* fuzz_md.c — libFuzzer target for what a read-only start does with the
 * md members of a foreign disk: md v1.x superblock decoding and checking
 * (src/md/md.c), assembly (md_assemble_all() with readonly set, as
 * `uraid serve --readonly` calls it) and reads through whatever array
 * assembles, degraded ones included.
 *
 * Input:
 *   byte 0    flags: bits 0-1 members - 1 (1 to 4); bit 2 run_degraded;
 *             bit 3 fix the checksum of every md superblock in the blobs
 *             (else the fuzzer rarely gets past md_super_check); bit 4
 *             members have 4096-byte blocks (else 512); bit 7 one member
 *             (bits 5-6 pick it) fails every read past its superblock
 *             (0.90: and every read of its data, before the superblock,
 *             but for the first 8 KiB, where 1.2's would be)
 *   then per member, 6 bytes: le32 (bits 0-29 member size in 512-byte
 *             sectors, bits 30-31 where its blob lies: 1 at byte 0, as
 *             v1.1 keeps its superblock, 2 where v1.0 keeps it near the
 *             end, else at byte 4096, as v1.2; built with
 *             FUZZ_MD090 where 0.90 keeps it), le16 blob length
 *   then the blobs, one per member in order (the last may be cut short by
 *             the end of the input)
 * A member reads as its blob at byte 4096 (or 0, or v1.0's place: blob
 * byte 0 is the superblock's first byte, and for 1.1/1.2 with a small
 * data_offset the data area, and a nested array's superblock, follow in
 * the same blob) and zeros everywhere else; its size is the given one,
 * raised to hold the blob and capped at 1 TiB (nothing is allocated for
 * it); a blob at v1.0's place is cut at the member's end.
 *
 * The member vols check the vol contract and abort when it is broken, and
 * abort on any write: a read-only start must not change a byte.  Every
 * error must come back as a clean errno.
 *
 * Built with -DFUZZ_MD090 it is fuzz_md090, for md 0.90: each blob lies
 * where 0.90 keeps its superblock (the member size rounded down to 64 KiB,
 * less 64 KiB: the superblock, then its bitmap), at most 64 KiB of it, the
 * member raised to at least 128 KiB to hold it; the checksum bit fixes
 * 0.90 blocks (either byte order) instead.
 *
 * Build and run: tests/sh/format-fuzz.sh (clang -fsanitize=fuzzer,...). */
#ifdef FUZZ_MD090
#define FUZZ_NAME "fuzz_md090"
#else
#define FUZZ_NAME "fuzz_md"
#endif
#include "fuzz_vol.h"

#include "core/log.h"
#include "core/vol.h"
#include "md/md.h"
#include "md/md_sb090.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_MAX_MEMBERS 4
#define FUZZ_BLOB_AT 4096u
#define FUZZ_MEMBER_MAX (1ull << 40)
#define FUZZ_READ_MAX (64u << 10)

struct fuzz_member {
	struct fuzz_disk disk; /* first: its close frees the member */
	uint64_t blob_at;      /* the blob's byte offset on the member */
	uint64_t fail_from;    /* reads reaching past here fail with EIO */
	bool fail_data;        /* and reads of 0.90's data, before the blob (but
	                        * where 1.2's superblock would be) */
};

static int fm_fail(const struct fuzz_disk *d, uint64_t len, uint64_t off)
{
	const struct fuzz_member *m = container_of(d, struct fuzz_member, disk);

	return off + len > m->fail_from ||
	       (m->fail_data && off < m->blob_at && off + len > FUZZ_BLOB_AT + MD_SB_BLOCK);
}

static bool verbose; /* FUZZ_VERBOSE set: say what each input did */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	verbose = getenv("FUZZ_VERBOSE") != NULL;
	log_verbosity =
	    verbose ? LOG_DEBUG : -1; /* damaged superblocks are expected: no warnings */
	return 0;
}

static uint32_t le32_at(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Give every md superblock in blob (at a 512-byte boundary of the member)
 * the checksum it should have, so that mutations reach the checks behind
 * the checksum. */
static void fix_csums(unsigned char *blob, size_t len)
{
	unsigned char sb[MD_SB_BLOCK];

#ifdef FUZZ_MD090
	/* The blob starts with the 0.90 superblock. */
	if (len >= MD_SB_BLOCK &&
	    (le32_at(blob) == MD_SB_MAGIC || be32toh(le32_at(blob)) == MD_SB_MAGIC)) {
		uint32_t c = md_sb090_csum(blob);
		c = le32_at(blob) == MD_SB_MAGIC ? htole32(c) : htobe32(c);
		memcpy(blob + offsetof(struct md_sb090, sb_csum), &c, 4);
	}
	return;
#endif

	for (size_t at = 0; at + 256 <= len; at += 512) {
		if (le32_at(blob + at) != MD_SB_MAGIC)
			continue;
		size_t n = len - at < MD_SB_BLOCK ? len - at : MD_SB_BLOCK;
		memset(sb, 0, sizeof(sb));
		memcpy(sb, blob + at, n);
		uint32_t c = htole32(md_sb_csum(sb));
		size_t co = offsetof(struct md_sb1, sb_csum);
		memcpy(blob + at + co, &c, 4);
	}
}

/* What `uraid examine` does with a member: decode whatever is there,
 * check it, print its fields (formatting only: the output is dropped). */
static void examine(struct vol *v)
{
	struct md_super *s = malloc(sizeof(*s));
	char uuid[36], line[512];

	if (!s)
		return;
	err_clear();
	/* As cmd_examine: nothing to show unless a block decodes. */
	if (md_super_read_raw(v, s) < 0) {
		free(s);
		return;
	}
	md_super_check(s, v->size, v->name);
	md_uuid_format(s->set_uuid, uuid);
	const char *lvl = md_level_name(s->level);
	snprintf(line, sizeof(line), "%s %s %s %u %u %08x %d", uuid, s->set_name,
	         lvl ? lvl : "-unknown-", md_super_role(s), s->raid_disks, md_sb_csum(s->raw),
	         md_super_clean(s));
	free(s);
}

static int count_run(void *arg, uint64_t run_len, unsigned flags)
{
	(void)run_len;
	(void)flags;
	return ++*(int *)arg >= 64; /* enough */
}

/* Read the start, middle and end of an assembled vol, and ask for the
 * extents of its start. */
static void read_some(struct vol *v)
{
	uint64_t len = v->size < FUZZ_READ_MAX ? v->size : FUZZ_READ_MAX;
	int runs = 0;

	if (v->block_max && len > v->block_max)
		len = v->block_max;
	len -= len % v->block_min;
	if (!len)
		return;
	vol_extents(v, len, 0, count_run, &runs);
	fuzz_read_some(v, FUZZ_READ_MAX, verbose);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vol *vols[FUZZ_MAX_MEMBERS];
	struct vol **out = NULL;
	unsigned char *blobs;
	size_t pos, bpos;
	int n, nout = 0, r;

	if (size < 1)
		return 0;
	uint8_t flags = data[0];
	n = (flags & 3) + 1;
	pos = 1;
	if (size < pos + 6 * (size_t)n)
		return 0;
	blobs = malloc(size);
	if (!blobs)
		return 0;
	memcpy(blobs, data, size);
	bpos = pos + 6 * (size_t)n;
	for (int i = 0; i < n; i++) {
		const uint8_t *h = data + pos + 6 * (size_t)i;
		uint64_t sectors = le32_at(h) & 0x3fffffffu;
		unsigned place = le32_at(h) >> 30;
		size_t blen = (size_t)h[4] | (size_t)h[5] << 8;
		uint32_t bmin = flags & 0x10 ? 4096 : 512;
		struct fuzz_member *m = calloc(1, sizeof(*m));
		unsigned char *blob = blobs + bpos;
		char name[8];

		if (!m)
			abort();
		if (blen > size - bpos)
			blen = size - bpos;
		if (flags & 0x08)
			fix_csums(blobs + bpos, blen);
		bpos += blen;
		m->blob_at = place == 1 ? 0 : FUZZ_BLOB_AT;
		uint64_t bytes = sectors * 512;
#ifdef FUZZ_MD090
		if (blen > MD_SB090_RESERVED)
			blen = MD_SB090_RESERVED;
		if (bytes < 2 * MD_SB090_RESERVED)
			bytes = 2 * MD_SB090_RESERVED;
		if (bytes > FUZZ_MEMBER_MAX)
			bytes = FUZZ_MEMBER_MAX;
		bytes = (bytes + bmin - 1) / bmin * bmin;
		m->blob_at = md_sb090_offset(bytes);
#else
		if (bytes < m->blob_at + blen)
			bytes = m->blob_at + blen;
		if (place == 2 && bytes < 24 * 512 + MD_SB_BLOCK)
			bytes = 24 * 512 + MD_SB_BLOCK;
		if (bytes > FUZZ_MEMBER_MAX)
			bytes = FUZZ_MEMBER_MAX;
		bytes = (bytes + bmin - 1) / bmin * bmin;
		if (place == 2) {
			/* v1.0's rule (md.c): (sectors - 16) & ~7 */
			m->blob_at = ((bytes / 512 - 16) & ~7ull) * 512;
			if (blen > bytes - m->blob_at)
				blen = bytes - m->blob_at;
		}
#endif
		m->fail_from = (flags & 0x80) && ((flags >> 5) & 3) == i ? m->blob_at + MD_SB_BLOCK
		                                                         : UINT64_MAX;
#ifdef FUZZ_MD090
		m->fail_data = m->fail_from != UINT64_MAX; /* the data is before it */
#endif
		snprintf(name, sizeof(name), "m%d", i);
		fuzz_disk_init(&m->disk, name, bytes, bmin, 0);
		fuzz_disk_put(&m->disk, m->blob_at, blob, blen);
		m->disk.fail = fm_fail;
		m->disk.heap = true;
		m->disk.vol.block_max = 1u << 30;
		vols[i] = &m->disk.vol;
	}

	for (int i = 0; i < n; i++)
		examine(vols[i]);

	struct md_assemble_opts o = {.readonly = true, .run_degraded = flags & 0x04};
	err_clear();
	r = md_assemble_all(vols, n, &o, &out, &nout);
	if (verbose)
		fprintf(stderr, "fuzz_md: %d members: %s, %d vol(s)\n", n,
		        r < 0 ? err_detail(r) : "assembled", r < 0 ? 0 : nout);
	if (r < 0) {
		/* A clean rejection: a negative errno. */
		if (r < -4095)
			abort();
	} else {
		if (nout < 1 || nout > n)
			abort();
		for (int i = 0; i < nout; i++) {
			struct vol *v = out[i];
			struct md_array_info info;
			if (md_array_raid(v) && md_array_info(v, &info) == 0)
				md_array_info_free(&info);
			if (!(v->caps & VOL_CAP_READONLY) && md_array_raid(v))
				abort(); /* a read-only start gave a writable array */
			if (verbose)
				fprintf(stderr, "fuzz_md:   %s: %s, %llu bytes\n", v->name,
				        v->ops->kind, (unsigned long long)v->size);
			read_some(v);
			vol_close(v);
		}
		free(out);
	}
	free(blobs);
	return 0;
}
