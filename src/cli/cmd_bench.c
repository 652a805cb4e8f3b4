/* cmd_bench.c — `uraid bench`: the benchmark lives in src/bench/ (see
 * bench.h); this is its entry in the command table. */
#include "cli.h"

#include "bench/bench.h"

int cmd_bench(int argc, char **argv)
{
	return bench_main(argc, argv);
}
