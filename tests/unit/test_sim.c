/* test_sim.c — the disk model's arithmetic, checked on its virtual clock
 * (sleep=0), never on the wall clock: sequential transfers cost len/rate,
 * a forward gap costs min(gap/rate, rotation), any other jump a seek plus
 * half a rotation; options and presets set those figures; data passes. */
#include "check.h"

#include "core/log.h"
#include "member/member.h"

#include <errno.h>
#include <string.h>

#define MiB (1ull << 20)

int main(void)
{
	struct sim_params p = { .rate = 100000000, .rotation_ns = 8000000,
				.seek_ns = 5000000 };
	struct vol *v;
	char buf[4096];

	/* Pure arithmetic. */
	CHECK_EQ(sim_cost_ns(&p, 0, 0, 1000000), 10000000);         /* 1 MB at 100 MB/s */
	CHECK_EQ(sim_cost_ns(&p, 0, 100000, 1000000), 11000000);    /* gap 1 ms < rotation */
	CHECK_EQ(sim_cost_ns(&p, 0, 10000000, 1000000), 18000000);  /* gap capped at rotation */
	CHECK_EQ(sim_cost_ns(&p, 5000000, 0, 1000000), 19000000);   /* back: seek + rot/2 */

	/* The same through a sim vol's virtual clock. */
	CHECK_EQ(member_open("sim:100M,rot=8ms,seek=5ms,sleep=0:mem:64M", 0, &v), 0);
	uint64_t rate = 100 * MiB;
	uint64_t t = 0, mb = (uint64_t)(MiB * 1e9 / (double)rate);
	char *big = calloc(1, MiB);
	CHECK_EQ(vol_read(v, big, MiB, 0), 0);
	t += mb;
	CHECK_EQ(sim_member_busy_ns(v), t);
	CHECK_EQ(vol_read(v, big, MiB, MiB), 0); /* sequential: no positioning */
	t += mb;
	CHECK_EQ(sim_member_busy_ns(v), t);
	CHECK_EQ(vol_read(v, big, MiB, 4 * MiB), 0); /* 2 MiB forward: one rotation */
	t += mb + 8000000;
	CHECK_EQ(sim_member_busy_ns(v), t);
	CHECK_EQ(vol_read(v, big, MiB, 0), 0); /* backwards: seek + half rotation */
	t += mb + 5000000 + 4000000;
	CHECK_EQ(sim_member_busy_ns(v), t);
	CHECK_EQ(vol_flush(v), 0); /* flush costs nothing by default */
	CHECK_EQ(sim_member_busy_ns(v), t);
	/* Data really moves. */
	memset(buf, 0xa5, sizeof(buf));
	CHECK_EQ(vol_write(v, buf, sizeof(buf), 12345 * 512, 0), 0);
	memset(buf, 0, sizeof(buf));
	CHECK_EQ(vol_read(v, buf, sizeof(buf), 12345 * 512), 0);
	CHECK(buf[0] == (char)0xa5 && buf[4095] == (char)0xa5);
	vol_close(v);
	free(big);

	/* The ssd preset: no positioning cost anywhere, 80 us a request on
	 * top of 500 MB/s, 0.5 ms a flush. */
	CHECK_EQ(member_open("sim:ssd,sleep=0:mem:64M", 0, &v), 0);
	CHECK_EQ(vol_read(v, buf, 4096, 0), 0);
	t = 80000 + (uint64_t)(4096 * 1e9 / 500e6);
	CHECK_EQ(sim_member_busy_ns(v), t);
	CHECK_EQ(vol_read(v, buf, 4096, 40 * MiB), 0); /* far forward: no rotation */
	t += 80000 + (uint64_t)(4096 * 1e9 / 500e6);
	CHECK_EQ(sim_member_busy_ns(v), t);
	CHECK_EQ(vol_read(v, buf, 4096, 0), 0); /* backwards: no seek */
	t += 80000 + (uint64_t)(4096 * 1e9 / 500e6);
	CHECK_EQ(sim_member_busy_ns(v), t);
	CHECK_EQ(vol_flush(v), 0);
	t += 500000;
	CHECK_EQ(sim_member_busy_ns(v), t);
	vol_close(v);
	/* req= sets the per-request cost of any model. */
	struct sim_params q = {.rate = 100000000, .request_ns = 50000};
	CHECK_EQ(sim_cost_ns(&q, 0, 0, 1000000), 10050000);
	CHECK_EQ(member_open("sim:100M,req=0.2ms,sleep=0:mem:1M", 0, &v), 0);
	CHECK_EQ(vol_read(v, buf, 4096, 0), 0);
	CHECK_EQ(sim_member_busy_ns(v), 200000 + (uint64_t)(4096 * 1e9 / (100.0 * MiB)));
	vol_close(v);

	/* rpm sets the rotation; a preset sets all figures; flush= costs. */
	CHECK_EQ(member_open("sim:sata80,rpm=15000,flush=1ms,sleep=0:mem:1M", 0, &v), 0);
	CHECK_EQ(vol_read(v, buf, 4096, 8192), 0); /* forward gap 8192 bytes */
	uint64_t want = (uint64_t)(4096 * 1e9 / 80e6) + (uint64_t)(8192 * 1e9 / 80e6);
	CHECK_EQ(sim_member_busy_ns(v), want);
	CHECK_EQ(vol_read(v, buf, 4096, 0), 0); /* back: 8.5 ms seek + 2 ms */
	want += (uint64_t)(4096 * 1e9 / 80e6) + 8500000 + 2000000;
	CHECK_EQ(sim_member_busy_ns(v), want);
	CHECK_EQ(vol_flush(v), 0);
	CHECK_EQ(sim_member_busy_ns(v), want + 1000000);
	vol_close(v);

	/* Bad specs are refused with a reason. */
	log_verbosity = -1;
	CHECK(member_open("sim:fast:mem:1M", 0, &v) == -EINVAL);
	CHECK(member_open("sim:80M,warp=9:mem:1M", 0, &v) == -EINVAL);
	CHECK(member_open("sim:80M", 0, &v) == -EINVAL);
	CHECK(member_open("sim:80M,seek=x:mem:1M", 0, &v) == -EINVAL);
	return check_done();
}
