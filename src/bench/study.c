/* study.c — the seeds' own figures, so that `uraid bench --study ID`
 * prints the post's comparison beside ours.  Both are normalised to their
 * single-disk row: the disks differ (a model is not the post's hardware),
 * the shape is the point — does the mirror read faster than one disk, does
 * RAID0 over 8 disks reach 8 times one, what does the cipher cost.
 *
 * Seed 000: OpenBSD softraid on two 80 MB/s SATA disks, dd bs=1m on the raw
 * device and on FFS (the summary at the top of the post, MB/s); ours
 * through ext4 on the served volume.
 * Seed 003: Linux md on eight 15k rpm U320 disks, bonnie++ block write and
 * block read (K/sec, converted to MB/s); the single-disk figure is the mean
 * of the post's eight /dev/sd* rows, the 4-disk rows the mean of its two
 * runs. */
#include "bench.h"

#include <string.h>

#define KS(k) ((k)*1.024 / 1000.0) /* bonnie's K/sec to MB/s */

static const struct bench_study_row rows_000[] = {
    {"single", "single disk / raw", 80, 80, false},
    {"luks", "single disk + softraid crypto / raw", 30, 30, false},
    {"raid1", "2 disk softraid RAID1 / raw", 80, 78, false},
    {"raid1+luks", "2 disk softraid RAID1 + softraid crypto / raw", 30, 22, false},
    {"single", "single disk / file system", 68, 80, false, true},
    {"luks", "single disk + softraid crypto / file system", 28, 30, false, true},
    {"raid1", "2 disk softraid RAID1 / file system", 70, 76, false, true},
    {"raid1+luks", "2 disk softraid RAID1 + softraid crypto / file system", 28, 22, false, true},
};

static const struct bench_study_row rows_003[] = {
    {"single", "/dev/sd[c-j] (mean)", KS(100976.75), KS(76373.6), false},
    {"raid0x4", "Raid0s (4 disk)", KS(261001.5), KS(192777.5), false},
    {"raid0x4p", "Raid0p (4 disk, two at once)", KS(153013), KS(157215), true},
    {"raid0x8", "Raid0 (8 disk)", KS(247419), KS(226651), false},
    {"raid10x8", "Raid1+0", KS(202497), KS(270509), false},
    {"raid0+1", "Raid0+1", KS(194492), KS(174313), false},
    {"raid5x4", "Raid5s (4 disk)", KS(82351.5), KS(189187.5), false},
    {"raid5x4p", "Raid5p (4 disk, two at once)", KS(55209), KS(177020.5), true},
    {"raid5x8", "Raid5 (8 disk)", KS(153735), KS(207348), false},
};

static const struct bench_study studies[] = {
    {"000", "OpenBSD softraid: RAID1 reads no faster than one disk; crypto at 37%", "sata80",
     "dd bs=1m on the raw device and on a file system", "dd,fs-write,fs-read", rows_000,
     sizeof(rows_000) / sizeof(rows_000[0])},
    {"003", "md RAID0 over 8 disks at a third of their sum: what limit am I hitting?", "u320-15k",
     "bonnie++ block write / block read", "dd", rows_003, sizeof(rows_003) / sizeof(rows_003[0])},
};

const struct bench_study *bench_study_find(const char *id)
{
	for (size_t i = 0; i < sizeof(studies) / sizeof(studies[0]); i++)
		if (strcmp(studies[i].id, id) == 0)
			return &studies[i];
	return NULL;
}

static const struct bench_row *row_of(const struct bench_report *r, const char *layout,
                                      const char *workload)
{
	for (unsigned i = 0; i < r->n; i++)
		if (strcmp(r->rows[i].layout, layout) == 0 &&
		    strcmp(r->rows[i].workload, workload) == 0 && !r->rows[i].skipped[0])
			return &r->rows[i];
	return NULL;
}

static void cell(FILE *f, double v, double base)
{
	if (v > 0 && base > 0)
		fprintf(f, " %5.2f", v / base);
	else
		fprintf(f, " %5s", "-");
}

void bench_print_study(FILE *f, const struct bench_study *s, const struct bench_report *r)
{
	const struct bench_row *ow = row_of(r, "single", "write");
	const struct bench_row *orr = row_of(r, "single", "read");
	double pw = s->rows[0].write, pr = s->rows[0].read;
	double bw = ow ? ow->bw.med : 0, br = orr ? orr->bw.med : 0;

	fprintf(f, "\nstudy %s: %s\n", s->id, s->title);
	fprintf(f, "the post: %s; ours: the same layouts on '%s' disk models.\n", s->source,
	        s->model);
	fprintf(f, "figures as multiples of the single-disk row (write / read):\n");
	fprintf(f, "%-46s %11s  %11s  %11s  %s\n", "", "the post", "uraid", "ideal", "bound (w/r)");
	for (unsigned i = 0; i < s->n; i++) {
		const struct bench_study_row *sr = &s->rows[i];
		/* File-system rows compare with the raw single disk too: the
		 * file system's cost is part of the shape. */
		const struct bench_row *w = row_of(r, sr->layout, sr->fs ? "fs-write" : "write");
		const struct bench_row *rd = row_of(r, sr->layout, sr->fs ? "fs-read" : "read");
		fprintf(f, "%-46.46s", sr->title);
		cell(f, sr->write, pw);
		cell(f, sr->read, pr);
		fprintf(f, " ");
		cell(f, w ? w->bw.med : 0, bw);
		cell(f, rd ? rd->bw.med : 0, br);
		fprintf(f, " ");
		cell(f, w ? w->v.ideal : 0, bw);
		cell(f, rd ? rd->v.ideal : 0, br);
		fprintf(f, "  %s / %s\n", w && w->v.bound ? w->v.bound : "-",
		        rd && rd->v.bound ? rd->v.bound : "-");
	}
	fprintf(f, "single disk: the post %.0f / %.0f MB/s, uraid %.1f / %.1f MB/s\n", pw, pr,
	        bw / 1e6, br / 1e6);
}
