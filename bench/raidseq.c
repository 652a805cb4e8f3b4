/* raidseq.c — one sequential reader or writer, one request in flight, on a
 * RAID array built directly with raid_open() over member specs: the quick
 * way to check RAID scaling on disk models without the NBD server.
 *
 *   raidseq --level 1 --disks 2 --rate 80M --size 256M --read --bs 1M
 *
 * Members are sim:RATE:mem:SIZE unless --member SPEC names another spec
 * (e.g. mem:256M, to measure the RAID layer's own cost).  The same loop is
 * run on one member alone first, and the array's figure is reported with
 * its ratio to that. */
#include "core/log.h"
#include "core/units.h"
#include "disc/raid/raid.h"
#include "member/member.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double last_seconds;

static double max_seconds; /* --seconds: a stream stops after this long */
static unsigned trace;     /* --trace N: print each stream's first N requests */

/* Stream total bytes through v in bs requests, from offset 0 (or for
 * max_seconds, if set, whichever ends first); returns MB/s or -1. */
static double stream(struct vol *v, bool wr, uint64_t bs, uint64_t total)
{
	char *buf = aligned_alloc(4096, bs);
	uint64_t off = 0, done = 0;

	if (!buf)
		return -1;
	memset(buf, 0x5a, bs);
	double t0 = now_s();
	while (done < total) {
		if (off + bs > v->size)
			off = 0;
		double t1 = now_s();
		int r = wr ? vol_write(v, buf, bs, off, 0) : vol_read(v, buf, bs, off);
		if (done / bs < trace)
			printf("    %s at %llu MiB: %.1f ms (at %.1f ms)\n", wr ? "write" : "read",
			       (unsigned long long)(off >> 20), (now_s() - t1) * 1e3,
			       (now_s() - t0) * 1e3);
		if (r < 0) {
			fprintf(stderr, "raidseq: %s at %llu: %s\n", wr ? "write" : "read",
				(unsigned long long)off, strerror(-r));
			free(buf);
			return -1;
		}
		off += bs;
		done += bs;
		if (max_seconds > 0 && now_s() - t0 >= max_seconds)
			break;
	}
	/* A write is done when it is on the members: the array may hold
	 * a stream's last pieces in memory (write-behind) until a flush. */
	if (wr && vol_flush(v) < 0) {
		fprintf(stderr, "raidseq: flush failed\n");
		free(buf);
		return -1;
	}
	double t = now_s() - t0;
	last_seconds = t;
	free(buf);
	return (double)done / t / 1e6;
}

static unsigned parse_layout(const char *s)
{
	unsigned n = (unsigned)atoi(s + 1);
	switch (s[0]) {
	case 'n':
		return n | 1u << 8;
	case 'f':
		return 1u | n << 8;
	case 'o':
		return 1u | n << 8 | 1u << 16;
	default:
		return (unsigned)strtoul(s, NULL, 0);
	}
}

static void usage(void)
{
	fprintf(stderr,
		"usage: raidseq [--level L] [--disks N] [--rate R|--preset P] [--size S]\n"
		"               [--read|--write] [--bs B] [--chunk C] [--layout n2|f2|o2]\n"
		"               [--total T] [--member SPEC] [--no-baseline]\n"
		"               [--reps N] [--seconds S]   (N streams from offset 0, each\n"
		"                                           at most S seconds, as uraid bench)\n"
		"               [--trace N]  (print each stream's first N requests' times)\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "level", 1, 0, 'l' }, { "disks", 1, 0, 'd' },
		{ "rate", 1, 0, 'r' },  { "preset", 1, 0, 'p' },
		{ "size", 1, 0, 's' },  { "read", 0, 0, 'R' },
		{ "write", 0, 0, 'W' }, { "bs", 1, 0, 'b' },
		{ "chunk", 1, 0, 'c' }, { "layout", 1, 0, 'L' },
		{ "total", 1, 0, 't' }, { "member", 1, 0, 'm' },
		{ "no-baseline", 0, 0, 'n' }, { "reps", 1, 0, 'N' },
		{ "seconds", 1, 0, 'S' }, { "trace", 1, 0, 'T' },
		{ 0, 0, 0, 0 },
	};
	int level = 1, c;
	unsigned disks = 2, layout = 0x102;
	const char *rate = "80M", *member = NULL;
	uint64_t size = 256u << 20, bs = 1u << 20, chunk = 128u << 10, total = 0;
	bool wr = false, baseline = true;
	unsigned reps = 1;
	char spec[256];
	struct vol *members[64] = { 0 }, *a = NULL;
	int r;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'l':
			level = strcmp(optarg, "linear") == 0 ? RAID_LEVEL_LINEAR : atoi(optarg);
			break;
		case 'd':
			disks = (unsigned)atoi(optarg);
			break;
		case 'r':
		case 'p':
			rate = optarg;
			break;
		case 's':
			if (parse_size(optarg, &size) < 0)
				return usage(), 2;
			break;
		case 'R':
			wr = false;
			break;
		case 'W':
			wr = true;
			break;
		case 'b':
			if (parse_size(optarg, &bs) < 0 || bs == 0 || bs % 512)
				return usage(), 2;
			break;
		case 'c':
			if (parse_size(optarg, &chunk) < 0)
				return usage(), 2;
			break;
		case 'L':
			layout = parse_layout(optarg);
			break;
		case 't':
			if (parse_size(optarg, &total) < 0)
				return usage(), 2;
			break;
		case 'm':
			member = optarg;
			break;
		case 'n':
			baseline = false;
			break;
		case 'N':
			reps = (unsigned)atoi(optarg);
			break;
		case 'S':
			max_seconds = atof(optarg);
			break;
		case 'T':
			trace = (unsigned)atoi(optarg);
			break;
		default:
			return usage(), 2;
		}
	}
	if (disks < 1 || disks > 64 || reps < 1)
		return usage(), 2;
	if (!total)
		total = size;
	if (member)
		snprintf(spec, sizeof(spec), "%s", member);
	else
		snprintf(spec, sizeof(spec), "sim:%s:mem:%llu", rate, (unsigned long long)size);

	double one = 0;
	if (baseline) {
		struct vol *v;
		r = member_open(spec, 0, &v);
		if (r < 0) {
			fprintf(stderr, "raidseq: %s: %s\n", spec, err_detail(r));
			return 1;
		}
		uint64_t t1 = total / disks;
		if (level == 1 || level == 10)
			t1 = total / (level == 1 ? disks : disks / ((layout & 0xff) * ((layout >> 8) & 0xff)));
		if (t1 < 16 * bs)
			t1 = 16 * bs;
		one = stream(v, wr, bs, t1);
		vol_close(v);
		printf("one member (%s): %.1f MB/s\n", spec, one);
	}
	for (unsigned i = 0; i < disks; i++) {
		r = member_open(spec, 0, &members[i]);
		if (r < 0) {
			fprintf(stderr, "raidseq: %s: %s\n", spec, err_detail(r));
			return 1;
		}
	}
	struct raid_geom g = { .level = level, .layout = level == 10 ? layout : 0,
			       .chunk = level == 1 ? 0 : (uint32_t)chunk,
			       .raid_disks = disks };
	r = raid_open(&g, members, NULL, "raidseq", &a);
	if (r < 0) {
		fprintf(stderr, "raidseq: raid_open: %s\n", err_detail(r));
		return 1;
	}
	uint64_t busy0[64];
	for (unsigned i = 0; i < disks; i++)
		busy0[i] = sim_member_busy_ns(members[i]);
	double mbs = stream(a, wr, bs, total);
	for (unsigned k = 1; k < reps && mbs >= 0; k++) {
		printf("  rep %u: %.1f MB/s\n", k, mbs);
		mbs = stream(a, wr, bs, total);
	}
	printf("level %d disks %u layout 0x%x chunk %llu bs %llu %s: %.1f MB/s",
	       level, disks, g.layout, (unsigned long long)g.chunk,
	       (unsigned long long)bs, wr ? "write" : "read", mbs);
	if (one > 0)
		printf(" = %.2f x one member", mbs / one);
	printf("\n");
	if (sim_member_busy_ns(members[0])) {
		printf("disk busy (modelled time / wall time):");
		for (unsigned i = 0; i < disks; i++)
			printf(" %.0f%%", (double)(sim_member_busy_ns(members[i]) - busy0[i]) /
						  1e9 / last_seconds * 100);
		printf("\n");
	}
	vol_close(a);
	return mbs < 0;
}
