/* test_crypt_dmcrypt.c — the crypt vol against the real dm-crypt, in the
 * linux-peer VM (tests/linux-peer/run.sh, or $LINUX_PEER/run.sh; skipped,
 * saying why, by tests/sh/peer-check.sh's rule (peer.h); a VM that
 * does not come up, or times out, fails it, as it fails the shell tests).
 *
 * uraid -> kernel: images a, b, c are written through crypt vols (XTS with
 * 512-byte sectors and a 64-byte key; XTS with 4096-byte sectors, large
 * IVs, a 32-byte key and iv_offset 16; CBC-ESSIV), dm-crypt maps each with
 * the same table parameters and the guest prints the SHA-256 of what it
 * reads, which must be that of the plaintext.
 * kernel -> uraid: the guest copies a's plaintext through dm-crypt onto
 * image d (XTS, iv_offset 8); the host decrypts d with a crypt vol. */
#include "check.h"
#include "peer.h"

#include "core/log.h"
#include "disc/crypt.h"
#include "member/member.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define IMG_SIZE (2u << 20)

struct image {
	const char *name;
	const char *cipher;
	size_t key_len;
	uint32_t ss;
	uint64_t iv_offset;
	bool large; /* dm-crypt's iv_large_sectors (LUKS never sets it) */
	unsigned char key[64];
};

static struct image images[] = {
	{ "a", "aes-xts-plain64", 64, 512, 0, false },
	{ "b", "aes-xts-plain64", 32, 4096, 16, true },
	{ "c", "aes-cbc-essiv:sha256", 32, 512, 0, false },
	{ "d", "aes-xts-plain64", 64, 512, 8, false },
	{ "e", "aes-xts-plain64", 64, 4096, 24, false },
};

static int open_image(const char *dir, struct image *im, struct vol **m, struct vol **c)
{
	char path[512];
	struct crypt_params p = { .cipher = im->cipher, .key = im->key, .key_len = im->key_len,
				  .sector_size = im->ss, .iv_offset = im->iv_offset,
				  .iv_large_sectors = im->large };
	int r;

	snprintf(path, sizeof(path), "%s/%s.img", dir, im->name);
	r = member_open(path, 0, m);
	if (r < 0)
		return r;
	r = crypt_open(*m, &p, true, NULL, c);
	if (r < 0)
		vol_close(*m);
	return r;
}

static void hex(const unsigned char *b, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
}

int main(void)
{
	const char *srcdir = getenv("SRCDIR");
	char peerdir[400], why[512], dir[] = "/tmp/uraid-dmcrypt-XXXXXX", path[600], cmd[2048];
	char want[65], line[512];
	unsigned char *plain = malloc(IMG_SIZE), *buf = malloc(IMG_SIZE), digest[32];
	unsigned long long seed = 42;
	unsigned int dlen;
	int matched = 0, rc, ret = 1;
	bool keep = false;
	FILE *f, *job;

	if (!plain || !buf || !mkdtemp(dir)) {
		dir[0] = '\0';
		goto out;
	}
	rc = peer_check(srcdir ? srcdir : ".", peerdir, sizeof(peerdir), why, sizeof(why));
	if (rc != 0) {
		fprintf(stderr, "%s\n", rc == 77 ? why : "peer-check.sh failed");
		ret = rc == 77 ? 77 : 1;
		goto out;
	}
	for (size_t i = 0; i < IMG_SIZE; i++)
		plain[i] = (unsigned char)check_rand(&seed);
	EVP_Digest(plain, IMG_SIZE, digest, &dlen, EVP_sha256(), NULL);
	hex(digest, 32, want);

	for (size_t i = 0; i < sizeof(images) / sizeof(images[0]); i++) {
		struct image *im = &images[i];
		struct vol *m, *c;

		for (size_t k = 0; k < im->key_len; k++)
			im->key[k] = (unsigned char)check_rand(&seed);
		snprintf(path, sizeof(path), "%s/%s.img", dir, im->name);
		int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0600);
		CHECK(fd >= 0 && ftruncate(fd, IMG_SIZE) == 0);
		close(fd);
		if (im->name[0] == 'd')
			continue; /* written by the kernel */
		CHECK_EQ(open_image(dir, im, &m, &c), 0);
		CHECK_EQ(vol_write(c, plain, IMG_SIZE, 0, VOL_FUA), 0);
		vol_close(c);
	}

	/* The guest job: one dm-crypt table per image, as crypt.h documents
	 * the parameters (iv_offset in 512-byte sectors). */
	snprintf(path, sizeof(path), "%s/job.sh", dir);
	job = fopen(path, "w");
	if (!job)
		goto out;
	fprintf(job, "#!/bin/sh\nset -e\n");
	for (size_t i = 0; i < sizeof(images) / sizeof(images[0]); i++) {
		struct image *im = &images[i];
		char key[129];

		hex(im->key, im->key_len, key);
		fprintf(job,
			"dmsetup create u%s --table \"0 %u crypt %s %s %llu /dev/vd%c 0%s\"\n",
			im->name, IMG_SIZE / 512, im->cipher, key, (unsigned long long)im->iv_offset,
			(char)('a' + i),
			im->ss != 4096 ? "" : im->large ? " 2 sector_size:4096 iv_large_sectors"
							: " 1 sector_size:4096");
	}
	fprintf(job, "for n in a b c e; do echo \"SUM $n $(dd if=/dev/mapper/u$n bs=64k 2>/dev/null | "
		     "sha256sum | cut -d' ' -f1)\"; done\n"
		     "dd if=/dev/mapper/ua of=/dev/mapper/ud bs=64k oflag=direct 2>/dev/null\n"
		     "sync\nfor n in a b c d e; do dmsetup remove u$n; done\necho JOB-DONE\n");
	fclose(job);
	chmod(path, 0755);

	snprintf(cmd, sizeof(cmd),
		 "LINUX_PEER_TIMEOUT=280 %s/run.sh %s/job.sh %s/a.img %s/b.img %s/c.img %s/d.img "
		 "%s/e.img > %s/guest.out 2>&1",
		 peerdir, dir, dir, dir, dir, dir, dir, dir);
	rc = system(cmd);
	rc = WIFEXITED(rc) ? WEXITSTATUS(rc) : 125;
	snprintf(path, sizeof(path), "%s/guest.out", dir);
	if (rc == 124 || rc == 125) {
		fprintf(stderr, "the linux-peer VM %s (exit %d): see %s\n",
			rc == 124 ? "timed out" : "died", rc, path);
		keep = true;
		goto out;
	}
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f)) {
		char n, sum[80];
		if (sscanf(line, "SUM %c %79s", &n, sum) == 2) {
			if (strcmp(sum, want) != 0)
				fprintf(stderr, "dm-crypt reads image %c as %s, want %s\n", n, sum, want);
			CHECK(strcmp(sum, want) == 0);
			matched++;
		}
	}
	if (f)
		fclose(f);
	CHECK_EQ(rc, 0);
	CHECK_EQ(matched, 4);

	/* kernel -> uraid */
	{
		struct vol *m, *c;
		CHECK_EQ(open_image(dir, &images[3], &m, &c), 0);
		CHECK_EQ(vol_read(c, buf, IMG_SIZE, 0), 0);
		CHECK(memcmp(buf, plain, IMG_SIZE) == 0);
		vol_close(c);
	}
	if (check_failures) {
		fprintf(stderr, "guest output kept in %s\n", path);
		keep = true;
	}
	ret = check_done();
out:
	if (dir[0] && !keep) {
		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", dir);
	}
	free(plain);
	free(buf);
	return ret;
}
