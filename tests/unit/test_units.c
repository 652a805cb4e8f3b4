/* Size and duration parsing: what users type, and what must be refused. */
#include "check.h"
#include "core/units.h"

#include <errno.h>

int main(void)
{
	uint64_t v, ns;

	CHECK(parse_size("512", &v) == 0 && v == 512);
	CHECK(parse_size("4k", &v) == 0 && v == 4096);
	CHECK(parse_size("64K", &v) == 0 && v == 65536);
	CHECK(parse_size("1M", &v) == 0 && v == 1048576);
	CHECK(parse_size("2G", &v) == 0 && v == 2ull << 30);
	CHECK(parse_size("1GiB", &v) == 0 && v == 1ull << 30);
	CHECK(parse_size("3T", &v) == 0 && v == 3ull << 40);
	CHECK(parse_size("100B", &v) == 0 && v == 100);
	CHECK_EQ(parse_size("", &v), -EINVAL);
	CHECK_EQ(parse_size("-1", &v), -EINVAL);
	CHECK_EQ(parse_size("1X", &v), -EINVAL);
	CHECK_EQ(parse_size("1Mx", &v), -EINVAL);
	CHECK_EQ(parse_size("99999999999999999999", &v), -EINVAL);
	CHECK_EQ(parse_size("17000000T", &v), -EINVAL);
	/* mdadm's sizes: a bare number is KiB */
	CHECK(parse_size_kib("64", &v) == 0 && v == 65536);
	CHECK(parse_size_kib("1M", &v) == 0 && v == 1048576);
	CHECK(parse_size_kib("512B", &v) == 0 && v == 512);
	CHECK_EQ(parse_size_kib("64X", &v), -EINVAL);
	CHECK_EQ(parse_size_kib("18014398509481984", &v), -EINVAL); /* 2^54 KiB */

	CHECK(parse_duration_ns("8.5ms", 1000000, &ns) == 0 && ns == 8500000);
	CHECK(parse_duration_ns("2", 1000000, &ns) == 0 && ns == 2000000);
	CHECK(parse_duration_ns("1s", 1, &ns) == 0 && ns == 1000000000);
	CHECK(parse_duration_ns("10us", 1, &ns) == 0 && ns == 10000);
	CHECK_EQ(parse_duration_ns("ms", 1, &ns), -EINVAL);
	CHECK_EQ(parse_duration_ns("3 ms", 1, &ns), -EINVAL);
	return check_done();
}
