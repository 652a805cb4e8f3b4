/* cryptbench.c — how fast the crypt discipline moves data, without NBD.
 *
 * One stream, one request in flight, sequential: for each member (null:
 * and mem: by default) and crypt sector size, it times reads and writes
 * of 4 KiB, 64 KiB and 1 MiB through aes-xts-plain64 (AES-256) and
 * through the bare member, and prints GB/s and the encrypted/raw ratio.
 * The per-core cipher ceiling is `openssl speed -evp aes-256-xts`.  The
 * process CPU per MiB is printed beside each (steadier under load).
 *
 *   cryptbench [-t SECONDS_PER_CELL] [-c CIPHER] [-k KEYBYTES] [-b SIZE,SIZE..]
 *              [-s SECTOR_SIZE] [MEMBER...] */
#include "core/exec.h"
#include "core/log.h"
#include "core/units.h"
#include "disc/crypt.h"
#include "member/member.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double cpu_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The process's CPU time per MiB in the last run(), in microseconds: the
 * figure a loaded machine does not move as it moves wall-clock GB/s. */
static double last_cpu_us_per_mib;

/* GB/s of sequential requests of bs bytes for about secs seconds. */
static double run(struct vol *v, int write, uint64_t bs, double secs, unsigned char *buf)
{
	uint64_t span = v->size / bs * bs, off = 0, bytes = 0;
	double t0 = now(), c0 = cpu_now(), t;

	do {
		for (int i = 0; i < 16; i++) {
			int r = write ? vol_write(v, buf, bs, off, 0) : vol_read(v, buf, bs, off);
			if (r < 0) {
				fprintf(stderr, "cryptbench: %s: %s\n", v->name, err_detail(r));
				exit(1);
			}
			bytes += bs;
			off += bs;
			if (off >= span)
				off = 0;
		}
		t = now() - t0;
	} while (t < secs);
	last_cpu_us_per_mib = (cpu_now() - c0) * 1e6 / ((double)bytes / (1u << 20));
	return (double)bytes / t / 1e9;
}

int main(int argc, char **argv)
{
	static const char *default_members[] = { "null:4G", "mem:512M" };
	uint64_t sizes[16] = { 4096, 65536, 1u << 20 };
	size_t nsizes = 3;
	uint32_t only_ss = 0;
	const char *cipher = "aes-xts-plain64";
	size_t key_len = 64;
	double secs = 0.5;
	const char **members = default_members;
	int nmembers = 2, opt;
	unsigned char key[64], *buf;

	while ((opt = getopt(argc, argv, "t:c:k:b:s:")) != -1) {
		switch (opt) {
		case 't':
			secs = atof(optarg);
			break;
		case 'c':
			cipher = optarg;
			break;
		case 'k':
			key_len = (size_t)atoi(optarg);
			break;
		case 'b':
			nsizes = 0;
			for (char *tok = strtok(optarg, ","); tok && nsizes < 16; tok = strtok(NULL, ",")) {
				if (parse_size(tok, &sizes[nsizes]) < 0 || sizes[nsizes] == 0 ||
				    sizes[nsizes] > (1u << 20) || sizes[nsizes] % 4096) {
					fprintf(stderr, "cryptbench: bad size %s (4K multiples up to 1M)\n", tok);
					return 2;
				}
				nsizes++;
			}
			break;
		case 's':
			only_ss = (uint32_t)atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: cryptbench [-t secs] [-c cipher] [-k keybytes] "
					"[-b size,size..] [-s 512|4096] [member...]\n");
			return 2;
		}
	}
	if (optind < argc) {
		members = (const char **)argv + optind;
		nmembers = argc - optind;
	}
	if (key_len > sizeof(key)) {
		fprintf(stderr, "cryptbench: key too long\n");
		return 2;
	}
	/* A throwaway key for a benchmark: not secret, so not in secmem. */
	for (size_t i = 0; i < sizeof(key); i++)
		key[i] = (unsigned char)(i * 29 + 3);
	if (posix_memalign((void **)&buf, 4096, 1u << 20) != 0)
		return 1;
	memset(buf, 0x5a, 1u << 20);

	printf("cryptbench: %s, %zu-byte key, %u cpus, %.1fs per cell, 1 stream, qd 1\n", cipher,
	       key_len, exec_cpu_count(), secs);
	printf("%-10s %5s %5s %8s %10s %10s %6s %12s %12s\n", "member", "ss", "op", "bs",
	       "raw GB/s", "crypt GB/s", "ratio", "raw cpu/MiB", "crypt cpu/MiB");
	for (int mi = 0; mi < nmembers; mi++) {
		struct vol *m;
		int r = member_open(members[mi], 0, &m);

		if (r < 0) {
			fprintf(stderr, "cryptbench: %s: %s\n", members[mi], err_detail(r));
			return 1;
		}
		/* Touch every page of a mem: member so reads are real copies. */
		for (uint64_t off = 0; off + (1u << 20) <= m->size; off += 1u << 20)
			vol_write(m, buf, 1u << 20, off, 0);
		for (uint32_t ss = 512; ss <= 4096; ss *= 8) {
			if (only_ss && ss != only_ss)
				continue;
			struct crypt_params p = { .cipher = cipher, .key = key, .key_len = key_len,
						  .sector_size = ss };
			struct vol *c;

			r = crypt_open(m, &p, false, NULL, &c);
			if (r < 0) {
				fprintf(stderr, "cryptbench: %s\n", err_detail(r));
				return 1;
			}
			for (int w = 0; w < 2; w++)
				for (size_t si = 0; si < nsizes; si++) {
					double raw = run(m, w, sizes[si], secs, buf);
					double raw_cpu = last_cpu_us_per_mib;
					double enc = run(c, w, sizes[si], secs, buf);
					printf(
					    "%-10s %5u %5s %7lluK %10.2f %10.2f %5.0f%% %9.0f us "
					    "%9.0f us\n",
					    members[mi], ss, w ? "write" : "read",
					    (unsigned long long)sizes[si] >> 10, raw, enc,
					    100 * enc / raw, raw_cpu, last_cpu_us_per_mib);
					fflush(stdout);
				}
			vol_close(c);
		}
		vol_close(m);
	}
	free(buf);
	return 0;
}
