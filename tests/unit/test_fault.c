/* test_fault.c — the fault member: EIO by range, by count and by chance,
 * limited by mode; killing and reviving at run time; op counts. */
#include "check.h"

#include "core/log.h"
#include "member/member.h"

#include <errno.h>

int main(void)
{
	struct vol *v;
	struct fault_counts c;
	char buf[8192] = { 0 };

	log_verbosity = -1;
	CHECK_EQ(member_open("fault:eio=64k+4k/1M+512:mem:2M", 0, &v), 0);
	CHECK_EQ(vol_read(v, buf, 4096, 0), 0);
	CHECK_EQ(vol_read(v, buf, 4096, 62 * 1024), -EIO); /* overlaps 64k */
	CHECK_EQ(vol_write(v, buf, 512, 68 * 1024, 0), 0); /* just past it */
	CHECK_EQ(vol_write(v, buf, 1024, (1 << 20) - 512, 0), -EIO);
	CHECK_EQ(vol_flush(v), 0);
	CHECK_EQ(fault_member_counts(v, &c), 0);
	CHECK_EQ(c.reads, 2);
	CHECK_EQ(c.writes, 2);
	CHECK_EQ(c.flushes, 1);
	CHECK_EQ(fault_member_kill(v, true), 0);
	CHECK_EQ(vol_read(v, buf, 512, 0), -EIO);
	CHECK_EQ(vol_flush(v), -EIO);
	CHECK_EQ(vol_trim(v, 512, 0, 0), -EIO);
	CHECK_EQ(fault_member_kill(v, false), 0);
	CHECK_EQ(vol_read(v, buf, 512, 0), 0);
	vol_close(v);

	/* after=N counts ops; mode=write spares reads. */
	CHECK_EQ(member_open("fault:after=2,mode=write:mem:1M", 0, &v), 0);
	CHECK_EQ(vol_write(v, buf, 512, 0, 0), 0);
	CHECK_EQ(vol_write(v, buf, 512, 0, 0), 0);
	CHECK_EQ(vol_write(v, buf, 512, 0, 0), -EIO);
	CHECK_EQ(vol_read(v, buf, 512, 0), 0);
	CHECK_EQ(vol_write_zeroes(v, 512, 0, 0), -EIO);
	vol_close(v);

	/* chance=1 always fails, chance=0 never; mode=read spares writes. */
	CHECK_EQ(member_open("fault:chance=1,mode=read:mem:1M", 0, &v), 0);
	CHECK_EQ(vol_read(v, buf, 512, 0), -EIO);
	CHECK_EQ(vol_write(v, buf, 512, 0, 0), 0);
	vol_close(v);
	CHECK_EQ(member_open("fault:chance=0:mem:1M", 0, &v), 0);
	for (int i = 0; i < 100; i++)
		CHECK_EQ(vol_read(v, buf, 512, 0), 0);
	vol_close(v);

	/* Not a fault vol; bad specs. */
	CHECK_EQ(member_open("mem:1M", 0, &v), 0);
	CHECK_EQ(fault_member_kill(v, true), -EINVAL);
	vol_close(v);
	CHECK_EQ(member_open("fault:eio=12:mem:1M", 0, &v), -EINVAL);
	CHECK_EQ(member_open("fault:chance=2:mem:1M", 0, &v), -EINVAL);
	CHECK_EQ(member_open("fault:mode=sideways:mem:1M", 0, &v), -EINVAL);
	CHECK_EQ(member_open("fault:after=1", 0, &v), -EINVAL);
	return check_done();
}
