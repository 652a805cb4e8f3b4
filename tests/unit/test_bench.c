/* test_bench.c — the bench's verdict and ideal-throughput logic: pure
 * functions of numbers, so every case is exact. */
#include "bench/bench.h"

#include "check.h"

#include <math.h>
#include <string.h>

#define MB 1e6

static bool near(double a, double b)
{
	return fabs(a - b) <= 1e-9 * (fabs(a) + fabs(b) + 1);
}

static void test_verdict_bounds(void)
{
	struct bench_verdict v;
	struct bench_ceilings c = {.disks = 80 * MB, .cpu_cap_pct = 200};

	/* At the disks' speed: the disks bind. */
	bench_verdict(78 * MB, &c, &v);
	CHECK(strcmp(v.bound, "disks") == 0);
	CHECK(near(v.ideal, 80 * MB));
	CHECK(near(v.efficiency, 78.0 / 80.0));

	/* The cipher is slower than the disks and the figure reaches it. */
	c.cipher = 30 * MB;
	bench_verdict(29 * MB, &c, &v);
	CHECK(strcmp(v.bound, "cipher") == 0);
	CHECK(near(v.ideal, 30 * MB));

	/* The transport is the lowest ceiling. */
	c = (struct bench_ceilings){
	    .disks = 2000 * MB, .cipher = 3000 * MB, .transport = 900 * MB, .cpu_cap_pct = 200};
	bench_verdict(850 * MB, &c, &v);
	CHECK(strcmp(v.bound, "transport") == 0);

	/* Far below every ceiling with CPU to spare: uraid's own loss. */
	c = (struct bench_ceilings){.disks = 160 * MB, .cpu_pct = 20, .cpu_cap_pct = 200};
	bench_verdict(80 * MB, &c, &v);
	CHECK(strcmp(v.bound, "uraid itself") == 0);
	CHECK(near(v.efficiency, 0.5));

	/* Far below, with the server using every core: the CPU. */
	c.cpu_pct = 195;
	bench_verdict(80 * MB, &c, &v);
	CHECK(strcmp(v.bound, "cpu") == 0);

	/* Exactly at the threshold counts as explained. */
	c = (struct bench_ceilings){.disks = 100 * MB, .cpu_cap_pct = 200};
	bench_verdict(BENCH_EXPLAINED * 100 * MB, &c, &v);
	CHECK(strcmp(v.bound, "disks") == 0);

	/* No ceiling measured. */
	c = (struct bench_ceilings){.cpu_cap_pct = 200};
	bench_verdict(10 * MB, &c, &v);
	CHECK(strcmp(v.bound, "unknown") == 0);
	CHECK(v.ideal == 0 && v.efficiency == 0);
}

static void test_disk_ideal(void)
{
	const double one = 80 * MB;
	const uint32_t chunk = 64 << 10, big = 1 << 20, small = 4096;

	/* A single disk is one disk, whatever the request. */
	CHECK(near(bench_disk_ideal(BENCH_SINGLE, 1, BENCH_READ, big, 1, chunk, one, one), one));
	/* RAID1 (seed 000): large reads from both copies, writes at one. */
	CHECK(near(bench_disk_ideal(1, 2, BENCH_READ, big, 1, chunk, one, 2 * one), 2 * one));
	CHECK(near(bench_disk_ideal(1, 2, BENCH_WRITE, big, 1, chunk, one, 2 * one), one));
	/* Small reads at QD1 keep one copy busy; at QD32 both. */
	CHECK(near(bench_disk_ideal(1, 2, BENCH_READ, small, 1, chunk, one, 2 * one), one));
	CHECK(near(bench_disk_ideal(1, 2, BENCH_READ, small, 32, chunk, one, 2 * one), 2 * one));
	/* RAID0 x8 (seed 003): a 1 MiB request spans all 8 64K-chunk members. */
	CHECK(near(bench_disk_ideal(0, 8, BENCH_WRITE, big, 1, chunk, one, 8 * one), 8 * one));
	/* ... with a 512K chunk only two at a time. */
	CHECK(near(bench_disk_ideal(0, 8, BENCH_WRITE, big, 1, 512 << 10, one, 8 * one), 2 * one));
	/* When all members at once give less than the sum (a shared bus),
	 * the ideal follows what they give together. */
	CHECK(near(bench_disk_ideal(0, 8, BENCH_READ, big, 1, chunk, one, 4 * one), 4 * one));
	/* RAID10 over 4: writes at 2 members' speed, reads at 4. */
	CHECK(near(bench_disk_ideal(10, 4, BENCH_WRITE, big, 1, chunk, one, 4 * one), 2 * one));
	CHECK(near(bench_disk_ideal(10, 4, BENCH_READ, big, 1, chunk, one, 4 * one), 4 * one));
	/* RAID0+1 over 8: writes at 4, reads at 8. */
	CHECK(near(bench_disk_ideal(BENCH_RAID01, 8, BENCH_WRITE, big, 1, chunk, one, 8 * one),
	           4 * one));
	CHECK(near(bench_disk_ideal(BENCH_RAID01, 8, BENCH_READ, big, 1, chunk, one, 8 * one),
	           8 * one));
}

/* The whole decision for seed 000's rows, from its own figures. */
static void test_seed_000(void)
{
	struct bench_verdict v;
	double one = 80 * MB;
	struct bench_ceilings c = {.cpu_pct = 10, .cpu_cap_pct = 200};

	/* softraid RAID1 read at 78 MB/s against an ideal of 160: its own loss. */
	c.disks = bench_disk_ideal(1, 2, BENCH_READ, 1 << 20, 1, 64 << 10, one, 2 * one);
	bench_verdict(78 * MB, &c, &v);
	CHECK(strcmp(v.bound, "uraid itself") == 0);
	CHECK(v.efficiency < 0.5);
	/* softraid crypto at 30 MB/s, with a cipher that does 31 on one core. */
	c.disks = one;
	c.cipher = 31 * MB;
	bench_verdict(30 * MB, &c, &v);
	CHECK(strcmp(v.bound, "cipher") == 0);
}

/* Issue 15: synchronous 4 KiB writes on a RAID5 of sata80 disks with an
 * ssd journal.  Whichever of the journal device and the members is lower
 * binds; the journal ceiling is one entry of the same table. */
static void test_journal_bound(void)
{
	struct bench_verdict v;
	struct bench_ceilings c = {.disks = 2 * MB, .journal = 40 * MB, .cpu_cap_pct = 200};

	/* A 4 KiB write on RAID5 x4 reads before it writes: half of one
	 * member; a whole stripe (3 x 64K) is the three data members'. */
	CHECK(near(bench_disk_ideal(5, 4, BENCH_WRITE, 4096, 1, 64 << 10, 80 * MB, 320 * MB),
	           40 * MB));
	CHECK(near(bench_disk_ideal(5, 4, BENCH_WRITE, 192 << 10, 1, 64 << 10, 80 * MB, 320 * MB),
	           240 * MB));
	CHECK(near(bench_disk_ideal(5, 4, BENCH_READ, 4096, 1, 64 << 10, 80 * MB, 320 * MB),
	           80 * MB));
	/* The journal logs the parity too: 3/4 of its device on RAID5 x4. */
	CHECK(near(bench_journal_ideal(5, 4, 400 * MB, false), 300 * MB));
	CHECK(near(bench_journal_ideal(6, 4, 400 * MB, false), 200 * MB));
	/* Write-back logs the data alone before it acknowledges. */
	CHECK(near(bench_journal_ideal(5, 4, 400 * MB, true), 400 * MB));

	/* The members are slower: they bind, the journal is not the limit. */
	bench_verdict(1.9 * MB, &c, &v);
	CHECK(strcmp(v.bound, "disks") == 0);
	/* A journal slower than the members binds. */
	c.journal = 1 * MB;
	bench_verdict(0.95 * MB, &c, &v);
	CHECK(strcmp(v.bound, "journal") == 0);
	CHECK(near(v.ideal, 1 * MB));
	/* Far below it with CPU to spare: uraid's own loss. */
	bench_verdict(0.3 * MB, &c, &v);
	CHECK(strcmp(v.bound, "uraid itself") == 0);
}

static void test_tables(void)
{
	struct bench_model custom;
	const struct bench_layout *l = bench_layout_find("raid1+luks");

	CHECK(l && l->level == 1 && l->n == 2 && l->luks);
	CHECK(bench_layout_find("raid7") == NULL);
	CHECK(bench_model_find("sata80", &custom) != NULL);
	CHECK(bench_model_find("floppy", &custom) == NULL);
	const struct bench_model *m = bench_model_find("sim:50M,seek=1ms", &custom);
	CHECK(m && strcmp(m->sim, "50M,seek=1ms") == 0);
	CHECK(bench_study_find("000") && bench_study_find("003"));
	CHECK(bench_study_find("001") == NULL);
	/* The journal layouts: RAID5 of 4 members, the journal on ssd. */
	l = bench_layout_find("raid5+journal");
	CHECK(l && l->level == 5 && l->n == 4 && l->log == BENCH_LOG_JOURNAL);
	l = bench_layout_find("raid5+ppl");
	CHECK(l && l->level == 5 && l->n == 4 && l->log == BENCH_LOG_PPL);
	m = bench_model_find(BENCH_JOURNAL_MODEL, &custom);
	CHECK(m && m->sim && strcmp(m->sim, "ssd") == 0);
}

/* RAM members (--members ram): the members' ceiling is the copy into
 * them, and a row that the stages one after another explain is "series".
 * Transport 2000 and copy 2000 MB/s in series: 1000 MB/s. */
static void test_ram_bound(void)
{
	struct bench_verdict v;
	struct bench_ceilings c = {
	    .disks = 2000 * MB, .transport = 2000 * MB, .cpu_cap_pct = 200, .ram = true};

	/* Near the lowest ceiling, the members' own: the copy binds. */
	c.transport = 4000 * MB;
	bench_verdict(1900 * MB, &c, &v);
	CHECK(strcmp(v.bound, "copy") == 0);
	CHECK(near(v.series, 1 / (1 / (2000 * MB) + 1 / (4000 * MB))));

	/* Below both, at the two in series: the series binds. */
	c.transport = 2000 * MB;
	bench_verdict(900 * MB, &c, &v);
	CHECK(near(v.ideal, 2000 * MB));
	CHECK(near(v.series, 1000 * MB));
	CHECK(strcmp(v.bound, "series") == 0);

	/* Below the series too: uraid's own loss. */
	bench_verdict(700 * MB, &c, &v);
	CHECK(strcmp(v.bound, "uraid itself") == 0);

	/* A full CPU explains it before the series does. */
	c.cpu_pct = 190;
	bench_verdict(900 * MB, &c, &v);
	CHECK(strcmp(v.bound, "cpu") == 0);
	c.cpu_pct = 0;

	/* Three stages (LUKS): receive, cipher and copy, 1 / (1/2 + 1/2 + 1/2). */
	c.cipher = 2000 * MB;
	bench_verdict(600 * MB, &c, &v);
	CHECK(near(v.series, 2000 * MB / 3));
	CHECK(strcmp(v.bound, "series") == 0);

	/* Disk members: no series rule, the same figure is uraid's loss. */
	c.ram = false;
	bench_verdict(600 * MB, &c, &v);
	CHECK(v.series == 0);
	CHECK(strcmp(v.bound, "uraid itself") == 0);
	bench_verdict(1900 * MB, &c, &v);
	CHECK(strcmp(v.bound, "disks") == 0);
}

int main(void)
{
	test_verdict_bounds();
	test_ram_bound();
	test_disk_ideal();
	test_seed_000();
	test_journal_bound();
	test_tables();
	return check_done();
}
