/* fuzz_fwraid.c — libFuzzer target for what uraid does with the firmware
 * RAID metadata of foreign disks: the IMSM and DDF readers
 * (src/fwraid/imsm.c, ddf.c), container grouping and read-only volume
 * assembly with reads through every volume that opens (src/fwraid/fwraid.c).
 *
 * Input (tests/fuzz/make_corpus_fwraid.py writes it from real disks):
 *   byte 0     flags: bit 0 sectors not given read as 0xff (else zeros)
 *   byte 1     the number of disks, 1 + (byte % 4)
 *   bytes 2-5  le32 sectors per disk (at least 8, at most 4 Mi: 2 GiB;
 *              nothing is allocated)
 *   then records, each: a byte disk index (mod the count), le32 sector
 *   counted back from the disk's end (0: the last), 512 bytes; a later
 *   record over the same sector wins.
 * The disks are named vda ... (the serials mdadm's IMSM_DEVNAME_AS_SERIAL
 * stores are /dev/vda ...).  They abort on any write (a read-only start
 * must not change a byte) and on any read that breaks the vol contract.
 *
 * Build and run: tests/sh/format-fuzz.sh (clang -fsanitize=fuzzer,...). */
#define FUZZ_NAME "fuzz_fwraid"
#include "fuzz_vol.h"

#include "core/log.h"
#include "core/vol.h"
#include "fwraid/fwraid.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REC 517

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	log_verbosity = getenv("FUZZ_VERBOSE") ? LOG_DEBUG : -1;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_disk disk[4];
	struct vol *vols[4];
	struct fwraid_found *f = NULL;
	unsigned char *recs;
	unsigned n;
	uint64_t sectors;
	static char buf[64 << 10];

	if (size < 6)
		return 0;
	n = 1 + data[1] % 4;
	sectors = (uint64_t)data[2] | (uint64_t)data[3] << 8 | (uint64_t)data[4] << 16 |
	          (uint64_t)data[5] << 24;
	if (sectors < 8)
		sectors = 8;
	if (sectors > (4u << 20))
		sectors = 4u << 20;
	recs = malloc(size);
	if (!recs)
		abort();
	memcpy(recs, data, size);
	for (unsigned i = 0; i < n; i++) {
		char name[16];
		snprintf(name, sizeof(name), "vd%c.img", 'a' + i);
		fuzz_disk_init(&disk[i], name, sectors * 512, 512, data[0] & 1 ? 0xff : 0);
		/* Records: member index, sector counted back from the end (LE32),
		 * 512 bytes; those of other members or past the start are left out. */
		for (size_t k = 0; k < (size - 6) / REC; k++) {
			unsigned char *r = recs + 6 + k * REC;
			uint64_t back = (uint64_t)r[1] | (uint64_t)r[2] << 8 |
			                (uint64_t)r[3] << 16 | (uint64_t)r[4] << 24;
			if (r[0] == i && back < sectors)
				fuzz_disk_put(&disk[i], (sectors - 1 - back) * 512, r + 5, 512);
		}
		vols[i] = &disk[i].vol;
	}
	for (unsigned i = 0; i < n; i++)
		(void)fwraid_probe(vols[i]);
	if (fwraid_assemble(vols, n, &f) == 0) {
		for (unsigned k = 0; k < f->nvol; k++) {
			struct vol *v = f->v[k].vol;
			uint64_t len;
			if (!v)
				continue;
			len = v->size < sizeof(buf) ? v->size : sizeof(buf);
			len -= len % v->block_min;
			if (!len)
				continue;
			(void)vol_read(v, buf, len, 0);
			(void)vol_read(v, buf, len, v->size - len);
			if (vol_write(v, buf, len, 0, 0) != -EROFS)
				abort(); /* the volumes refuse writes */
		}
		fwraid_found_free(f);
	}
	for (unsigned i = 0; i < n; i++)
		vol_close(vols[i]);
	free(recs);
	return 0;
}
