/* units.h — sizes and rates as users write them ("4k", "1G", "80M"). */
#ifndef URAID_UNITS_H
#define URAID_UNITS_H

#include <stdint.h>

/* Parse a byte count: digits with an optional suffix k/K, m/M, g/G, t/T
 * (powers of 1024), optionally followed by "iB" or "B".  Returns 0, or
 * -EINVAL for anything else (empty, negative, trailing junk, overflow). */
int parse_size(const char *s, uint64_t *out);

/* A size as mdadm takes it (--chunk, --size, --bitmap-chunk): a bare
 * number is KiB, anything else parse_size()'s.  0 or -EINVAL. */
int parse_size_kib(const char *s, uint64_t *out);

/* Parse a duration: a number with a suffix ns, us, ms or s (default
 * unit_ns when there is none).  Fractions are allowed ("8.5ms"). */
int parse_duration_ns(const char *s, uint64_t unit_ns, uint64_t *out_ns);

/* Format n bytes as "1.5 GiB" into buf. */
const char *format_size(uint64_t n, char *buf, unsigned buflen);

#endif
