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

/* Soaks (docs/testing.md): URAID_TEST_SEEDS=N runs N seeds where a test
 * loops over a fixed count n of them, and URAID_TEST_SEED_BASE=B (default 0)
 * moves the seeds a randomized test starts from, so that the same test runs
 * other cases; with neither set a test runs what CI runs.  Each is read
 * once, by the main thread, before any writer starts. */
static inline unsigned long long check_seed_base(void)
{
	static int read_;
	static unsigned long long base;

	if (!read_) {
		const char *e = getenv("URAID_TEST_SEED_BASE");
		base = e ? strtoull(e, NULL, 0) : 0;
		read_ = 1;
	}
	return base;
}

static inline unsigned check_seeds(unsigned n)
{
	static int read_;
	static unsigned seeds;

	if (!read_) {
		const char *e = getenv("URAID_TEST_SEEDS");
		seeds = e && atoi(e) > 0 ? (unsigned)atoi(e) : 0;
		read_ = 1;
	}
	return seeds ? seeds : n;
}

/* Seed s of a test, moved by URAID_TEST_SEED_BASE (s itself when it is 0);
 * never 0, which check_rand() would keep at 0. */
static inline unsigned long long check_seed(unsigned long long s)
{
	unsigned long long b = check_seed_base(), v = b ? s ^ (b * 0x9e3779b97f4a7c15ull) : s;

	return v ? v : 1;
}

#endif
