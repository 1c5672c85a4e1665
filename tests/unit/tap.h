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

/* Report one test point; returns cond. */
bool ok(bool cond, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ok() for integers, printing both values when they differ. */
#define is_int(got, want, ...) do {					\
	long long tap_g_ = (long long)(got), tap_w_ = (long long)(want);	\
	if (!ok(tap_g_ == tap_w_, __VA_ARGS__))				\
		printf("#   got %lld, want %lld\n", tap_g_, tap_w_);	\
} while (0)

/* A "# " comment line. */
void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Abort the whole test program (TAP "Bail out!"). */
void tap_bail(const char *why) __attribute__((noreturn));

uint64_t tap_seed(void);

/* A small, fast PRNG (xorshift64*) for tests; never returns to state 0. */
uint64_t tap_rand(uint64_t *state);
/* n bytes at p generated from seed (the same seed, the same bytes). */
void tap_fill(uint8_t *p, size_t n, uint64_t seed);

/* Print the plan and return the exit status. */
int tap_done(void);

#endif
