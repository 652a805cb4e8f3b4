/* units.c — parsing and printing of sizes and durations. */
#include "units.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned shift = 0;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	unsigned long long n = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	}
	if (shift && strcasecmp(end, "iB") == 0)
		end += 2;
	else if (strcasecmp(end, "B") == 0)
		end += 1;
	if (*end)
		return -EINVAL;
	if (shift && n > (UINT64_MAX >> shift))
		return -EINVAL;
	*out = (uint64_t)n << shift;
	return 0;
}

int parse_size_kib(const char *s, uint64_t *out)
{
	uint64_t n;

	if (parse_size(s, &n) < 0)
		return -EINVAL;
	if (isdigit((unsigned char)s[strlen(s) - 1])) {
		if (n > UINT64_MAX / 1024)
			return -EINVAL;
		n *= 1024;
	}
	*out = n;
	return 0;
}

int parse_duration_ns(const char *s, uint64_t unit_ns, uint64_t *out_ns)
{
	char *end;
	double mult = (double)unit_ns;

	if (!s || !(isdigit((unsigned char)*s) || *s == '.'))
		return -EINVAL;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || v < 0 || !isfinite(v))
		return -EINVAL;
	if (strcmp(end, "ns") == 0)
		mult = 1;
	else if (strcmp(end, "us") == 0)
		mult = 1e3;
	else if (strcmp(end, "ms") == 0)
		mult = 1e6;
	else if (strcmp(end, "s") == 0)
		mult = 1e9;
	else if (*end)
		return -EINVAL;
	if (v * mult > 1e18)
		return -EINVAL;
	*out_ns = (uint64_t)(v * mult + 0.5);
	return 0;
}

const char *format_size(uint64_t n, char *buf, unsigned buflen)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = (double)n;
	unsigned u = 0;

	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, buflen, "%llu B", (unsigned long long)n);
	else
		snprintf(buf, buflen, "%.4g %s", v, unit[u]);
	return buf;
}
