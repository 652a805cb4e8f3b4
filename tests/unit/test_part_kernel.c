/* test_part_kernel.c — part_scan's numbers against the Linux kernel's own
 * partition scan, in the linux-peer VM (tests/linux-peer/run.sh; skipped,
 * saying why, by tests/sh/peer-check.sh's rule; a VM that does not come
 * up or times out fails the test).
 *
 * Images made by sfdisk and sgdisk go to the guest as /dev/vda..vde; the
 * guest prints each partition the kernel made (/sys/block/vdX/vdXN:
 * partition number, start, size) and the host compares them with
 * part_scan of the same images:
 *   a  dos, the extended partition in slot 2 and a primary in slot 3,
 *      four logicals (numbers 5-8 after 3; Linux shows the extended
 *      container as a 1 KiB partition 2, part_scan leaves it out)
 *   b  gpt by sgdisk with a gap in the numbers (1, 2, 3, 5)
 *   c  b with a hybrid MBR (sgdisk -h): the kernel too reads the GPT
 *   d  b with the primary header's CRC broken: part_scan uses the
 *      backup, the kernel (no gpt= boot option) shows no partitions
 *   e  b with its MBR wiped: part_scan reads the GPT, the kernel does not
 * so the claims of docs/foreign.md about what Linux shows are checked
 * too. */
#include "check.h"
#include "peer.h"

#include "core/log.h"
#include "disc/part.h"
#include "member/member.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define N_IMAGES 5

struct kpart {
	unsigned number;
	unsigned long long start, size; /* 512-byte sectors */
};

static struct kpart kparts[N_IMAGES][64];
static unsigned nk[N_IMAGES];

static void compare(const char *dir, int k, int want_kernel_parts)
{
	char path[512];
	struct part_table *t = NULL;
	struct vol *v;
	unsigned found = 0;

	snprintf(path, sizeof(path), "%s/%c.img", dir, 'a' + k);
	CHECK_EQ(member_open(path, MEMBER_READONLY, &v), 0);
	CHECK_EQ(part_scan(v, &t), 1);
	vol_close(v);
	if (!t)
		return;
	if (want_kernel_parts == 0) {
		if (nk[k] != 0)
			fprintf(stderr, "%c: the kernel shows %u partitions, expected none\n",
			        'a' + k, nk[k]);
		CHECK_EQ(nk[k], 0);
		CHECK(t->n > 0 && t->warning[0]);
		part_table_free(t);
		return;
	}
	for (unsigned i = 0; i < nk[k]; i++) {
		const struct kpart *kp = &kparts[k][i];
		const struct part *p = NULL;

		for (unsigned j = 0; j < t->n; j++)
			if (t->parts[j].number == kp->number)
				p = &t->parts[j];
		if (!p) {
			/* Only an extended container, shown as 1 KiB. */
			if (!(strcmp(t->scheme, "dos") == 0 && kp->number <= 4 && kp->size == 2))
				fprintf(stderr,
				        "%c: the kernel's partition %u (%llu+%llu) is not ours\n",
				        'a' + k, kp->number, kp->start, kp->size);
			CHECK(strcmp(t->scheme, "dos") == 0 && kp->number <= 4 && kp->size == 2);
			continue;
		}
		found++;
		if (p->start != kp->start * 512 || p->size != kp->size * 512)
			fprintf(stderr, "%c%u: kernel %llu+%llu sectors, ours %llu+%llu bytes\n",
			        'a' + k, kp->number, kp->start, kp->size,
			        (unsigned long long)p->start, (unsigned long long)p->size);
		CHECK_EQ(p->start, kp->start * 512);
		CHECK_EQ(p->size, kp->size * 512);
	}
	CHECK_EQ(found, t->n);
	CHECK_EQ(nk[k], (unsigned)want_kernel_parts);
	part_table_free(t);
}

int main(void)
{
	const char *srcdir = getenv("SRCDIR");
	char dir[] = "/tmp/uraid-partk-XXXXXX", peer[512], why[512], cmd[4096], path[600],
	     line[512];
	int rc;
	FILE *f;

	if (!srcdir)
		srcdir = ".";
	if (system("command -v sfdisk >/dev/null 2>&1 && command -v sgdisk >/dev/null 2>&1") != 0) {
		fprintf(stderr, "skip: sfdisk or sgdisk not installed (fdisk, gdisk)\n");
		return 77;
	}
	rc = peer_check(srcdir, peer, sizeof(peer), why, sizeof(why));
	if (rc != 0) {
		fprintf(stderr, "%s\n", rc == 77 ? why : "skip: peer-check.sh failed");
		return rc == 77 ? 77 : 1;
	}
	if (!mkdtemp(dir))
		return 1;
	snprintf(
	    cmd, sizeof(cmd),
	    "cd %s && truncate -s 64M a.img b.img && "
	    "printf 'label: dos\\n,8M,83,*\\n,8M,fd\\n,,5\\n,4M,83\\n,4M,8e\\n,4M,82\\n,4M,fd\\n' "
	    "| sfdisk -q a.img && "
	    /* swap MBR slots 2 and 3: the extended one comes second */
	    "dd if=a.img of=s2 bs=1 skip=462 count=16 status=none && "
	    "dd if=a.img of=s3 bs=1 skip=478 count=16 status=none && "
	    "dd if=s3 of=a.img bs=1 seek=462 conv=notrunc status=none && "
	    "dd if=s2 of=a.img bs=1 seek=478 conv=notrunc status=none && "
	    "sgdisk -n1:2048:+8M -t1:fd00 -c1:raid0 -n2:0:+8M -t2:8e00 -n3:0:+4M -t3:8200 "
	    "-n5:0:0 -t5:ef00 b.img >/dev/null && "
	    "cp b.img c.img && sgdisk -h 1:EE c.img >/dev/null 2>&1 && "
	    "cp b.img d.img && printf '\\377' | dd of=d.img bs=1 seek=600 conv=notrunc "
	    "status=none && "
	    "cp b.img e.img && dd if=/dev/zero of=e.img bs=512 count=1 conv=notrunc status=none",
	    dir);
	CHECK_EQ(system(cmd), 0);

	snprintf(path, sizeof(path), "%s/job.sh", dir);
	f = fopen(path, "w");
	if (!f)
		return 1;
	fprintf(f, "#!/bin/sh\n"
	           "for d in /sys/block/vd?; do n=${d##*/}\n"
	           "  for p in $d/$n*; do [ -e $p/partition ] || continue\n"
	           "    echo \"PART $n $(cat $p/partition) $(cat $p/start) $(cat $p/size)\"\n"
	           "  done\n"
	           "done\necho JOB-DONE\n");
	fclose(f);
	chmod(path, 0755);
	snprintf(
	    cmd, sizeof(cmd),
	    "LINUX_PEER_TIMEOUT=280 LINUX_PEER_SMP=1 LINUX_PEER_SNAPSHOT=1 %s/run.sh %s/job.sh "
	    "%s/a.img %s/b.img %s/c.img %s/d.img %s/e.img > %s/guest.out 2>&1",
	    peer, dir, dir, dir, dir, dir, dir, dir);
	rc = system(cmd);
	rc = WIFEXITED(rc) ? WEXITSTATUS(rc) : 125;
	snprintf(path, sizeof(path), "%s/guest.out", dir);
	if (rc != 0) {
		fprintf(stderr, "the linux-peer VM failed (exit %d): see %s\n", rc, path);
		return 1;
	}
	f = fopen(path, "r");
	bool done = false;
	while (f && fgets(line, sizeof(line), f)) {
		char disk[16];
		struct kpart kp;
		if (strncmp(line, "JOB-DONE", 8) == 0)
			done = true;
		if (sscanf(line, "PART %15s %u %llu %llu", disk, &kp.number, &kp.start, &kp.size) ==
		        4 &&
		    strlen(disk) == 3 && disk[2] >= 'a' && disk[2] < 'a' + N_IMAGES &&
		    nk[disk[2] - 'a'] < 64)
			kparts[disk[2] - 'a'][nk[disk[2] - 'a']++] = kp;
	}
	if (f)
		fclose(f);
	CHECK(done);
	compare(dir, 0, 7); /* 1, the extended 2 (1 KiB), 3, 5-8 */
	compare(dir, 1, 4);
	compare(dir, 2, 4);
	compare(dir, 3, 0);
	compare(dir, 4, 0);
	if (check_failures) {
		fprintf(stderr, "images and the guest's output kept in %s\n", dir);
		return check_done();
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		return 1;
	return check_done();
}
