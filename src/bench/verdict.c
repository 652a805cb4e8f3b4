/* verdict.c — which ceiling binds a measured figure.
 *
 * Pure functions of numbers, so the decision is tested apart from any
 * measurement.  The ideal of a row is the lowest of its ceilings: the
 * disks (scaled for the layout), the cipher alone, the server and
 * transport over a null volume, and for a write through md's journal the
 * journal device alone (every write is on it, flushed, before the members
 * see it: its flush cost binds small synchronous writes).  When the figure
 * reaches most of the ideal that ceiling is the bound.  When it falls
 * short, the server was either out of CPU ("cpu") or nothing measured
 * explains the gap, and the loss is uraid's own ("uraid itself").
 *
 * On RAM members (issue 16) every ceiling is a CPU stage of the same
 * request: the payload's receive (transport), its encryption (cipher),
 * the copy into the members (the members' own ceiling, named "copy").
 * A row below the lowest of them but at the rate of all of them one after
 * another (1 / sum of 1 / rate) is bound by their running in series, not
 * by any one ("series": overlapping them is what would gain).  On disks a
 * request's stages overlap with other requests' waits, so no such sum is
 * taken there. */
#include "bench.h"

#include "md/md.h"

#include <math.h>

void bench_verdict(double measured, const struct bench_ceilings *c, struct bench_verdict *v)
{
	struct {
		double rate;
		const char *name;
	} ceil[] = {
	    {c->disks, c->ram ? "copy" : "disks"},
	    {c->cipher, "cipher"},
	    {c->transport, "transport"},
	    {c->journal, "journal"},
	};
	const char *lowest = NULL;
	double ideal = 0, inverse = 0;

	for (unsigned k = 0; k < sizeof(ceil) / sizeof(ceil[0]); k++) {
		if (ceil[k].rate > 0 && (!lowest || ceil[k].rate < ideal)) {
			ideal = ceil[k].rate;
			lowest = ceil[k].name;
		}
		if (ceil[k].rate > 0)
			inverse += 1 / ceil[k].rate;
	}
	v->ideal = ideal;
	v->series = c->ram && inverse > 0 ? 1 / inverse : 0;
	v->efficiency = ideal > 0 ? measured / ideal : 0;
	bool cpu_full = c->cpu_cap_pct > 0 && c->cpu_pct >= BENCH_CPU_SATURATED * c->cpu_cap_pct;
	if (!lowest)
		v->bound = cpu_full ? "cpu" : "unknown";
	else if (v->efficiency >= BENCH_EXPLAINED)
		v->bound = lowest;
	else if (cpu_full)
		v->bound = "cpu";
	else if (v->series > 0 && measured >= BENCH_EXPLAINED * v->series)
		v->bound = "series";
	else
		v->bound = "uraid itself";
}

/* How many members a request stream keeps busy: each request touches
 * ceil(bs / chunk) of them, and qd requests are in flight.  chunk 0 means
 * a request can use every member (a mirror splitting a large read). */
static double busy_members(unsigned members, uint32_t bs, unsigned qd, uint32_t chunk)
{
	double per_req = chunk ? ceil((double)bs / chunk) : members;
	double n = per_req * (qd ? qd : 1);
	return n < members ? n : members;
}

double bench_disk_ideal(int level, unsigned n, enum bench_op op, uint32_t bs, unsigned qd,
                        uint32_t chunk, double one, double all)
{
	bool reads = op == BENCH_READ || op == BENCH_SEEKS;
	double per = n ? all / n : one; /* one member's share when all run */
	double busy, rmw = 1;

	if (per > one || per <= 0)
		per = one;
	switch (level) {
	case 0:
		busy = busy_members(n, bs, qd, chunk);
		break;
	case 1: /* large reads split over every copy; writes go to all */
		if (!reads)
			busy = 1;
		else
			busy = busy_members(n, bs, qd, bs >= (128u << 10) ? 0 : bs);
		break;
	case 10: /* two copies: writes keep n/2 members' worth busy */
	case BENCH_RAID01:
		busy = busy_members(reads ? n : n / 2, bs, qd, chunk);
		break;
	case 5: /* one (two) chunk(s) of every stripe is parity: at best */
	case 6: /* the data disks' worth, reading or writing whole stripes */
		busy = busy_members(n - md_level_parity(level), bs, qd, chunk);
		/* A write of less than a stripe reads before it writes (old
		 * data and parity, or the rest of the stripe): two round
		 * trips on the members it touches. */
		if (!reads && bs < (uint64_t)chunk * (n - md_level_parity(level)))
			rmw = 2;
		break;
	default:
		busy = 1;
		break;
	}
	if (busy < 1)
		busy = 1;
	/* One busy member runs at `one`; several at once share what the
	 * machine gives all of them together (`all`). */
	return (busy <= 1 ? one : busy * per) / rmw;
}

double bench_journal_ideal(int level, unsigned n, double alone, bool writeback)
{
	unsigned p = md_level_parity(level);

	/* Data and parity both go through the log, and the log's flushes
	 * are in what `alone` measured; write-back logs the data alone
	 * before the acknowledgement. */
	if (writeback)
		return alone;
	return n > p ? alone * (n - p) / n : 0;
}
