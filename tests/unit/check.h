/* check.h — the smallest test harness: CHECK(cond) reports the failing
 * expression with its line and counts it; check_done() sets the exit code
 * (0 all passed, 1 something failed). */
#ifndef URAID_CHECK_H
#define URAID_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_failures;

#define CHECK(cond)                                                       \
	do {                                                              \
		if (!(cond)) {                                            \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, \
				__LINE__, #cond);                         \
			check_failures++;                                 \
		}                                                         \
	} while (0)

#define CHECK_EQ(a, b)                                                     \
	do {                                                               \
		long long va_ = (long long)(a), vb_ = (long long)(b);      \
		if (va_ != vb_) {                                          \
			fprintf(stderr, "%s:%d: CHECK failed: %s == %s (%lld != %lld)\n", \
				__FILE__, __LINE__, #a, #b, va_, vb_);     \
			check_failures++;                                  \
		}                                                          \
	} while (0)

static inline int check_done(void)
{
	if (check_failures)
		fprintf(stderr, "%d check(s) failed\n", check_failures);
	return check_failures ? 1 : 0;
}

/* Make a fresh directory $TMPDIR/uraid-NAME-XXXXXX (under /tmp when
 * TMPDIR is unset or too long to leave room) into dir: 0, or -1 after
 * saying why. */
static inline int check_tmpdir(char *dir, size_t len, const char *name)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(dir, len, "%s/uraid-%s-XXXXXX", tmp && strlen(tmp) < 30 ? tmp : "/tmp", name);
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return -1;
	}
	return 0;
}

/* A small deterministic PRNG (xorshift64*) so failures reproduce. */
static inline unsigned long long check_rand(unsigned long long *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ULL;
}

#endif
