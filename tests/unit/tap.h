/*
 * tap.h - a minimal TAP producer for the unit tests (automake's
 * tap-driver.sh reads the output).
 *
 *	int main(void) { ok(1 + 1 == 2, "addition"); return tap_done(); }
 *
 * Randomized tests take their seed from tap_seed(), which reads
 * TEST_SEED from the environment or picks one from the clock, and prints it
 * so a failure can be replayed with TEST_SEED=N.
 */
#ifndef TABLETFS_TESTS_TAP_H
#define TABLETFS_TESTS_TAP_H

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int tap_count;
static int tap_failed;

static inline bool __attribute__((format(printf, 2, 3)))
ok(bool cond, const char *fmt, ...)
{
	va_list ap;

	printf("%s %d - ", cond ? "ok" : "not ok", ++tap_count);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!cond)
		tap_failed++;
	fflush(stdout);
	return cond;
}

/* ok() for integers, printing both values when they differ. */
#define is_int(got, want, ...) do {					\
	long long tap_g_ = (long long)(got), tap_w_ = (long long)(want);	\
	if (!ok(tap_g_ == tap_w_, __VA_ARGS__))				\
		printf("#   got %lld, want %lld\n", tap_g_, tap_w_);	\
} while (0)

static inline void __attribute__((format(printf, 1, 2)))
diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

/* Abort the whole test program (TAP "Bail out!"). */
static inline void __attribute__((noreturn))
tap_bail(const char *why)
{
	printf("Bail out! %s\n", why);
	exit(1);
}

static inline uint64_t
tap_seed(void)
{
	const char *s = getenv("TEST_SEED");
	uint64_t seed;

	if (s != NULL && *s != '\0')
		seed = strtoull(s, NULL, 0);
	else
		seed = (uint64_t)time(NULL) ^ ((uint64_t)clock() << 20);
	diag("seed %" PRIu64 " (rerun with TEST_SEED=%" PRIu64 ")", seed, seed);
	return seed;
}

/* A small, fast PRNG (xorshift64*) for tests; never returns to state 0. */
static inline uint64_t
tap_rand(uint64_t *state)
{
	uint64_t x = *state ? *state : 0x9e3779b97f4a7c15ull;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* Print the plan and return the exit status. */
static inline int
tap_done(void)
{
	printf("1..%d\n", tap_count);
	return tap_failed ? 1 : 0;
}

#endif
