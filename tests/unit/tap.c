/* tap.c - the TAP producer of tap.h, one plan per test program. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tap.h"

static int tap_count;
static int tap_failed;

bool __attribute__((format(printf, 2, 3)))
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

void __attribute__((format(printf, 1, 2)))
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

void __attribute__((noreturn))
tap_bail(const char *why)
{
	printf("Bail out! %s\n", why);
	exit(1);
}

uint64_t
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

uint64_t
tap_rand(uint64_t *state)
{
	uint64_t x = *state ? *state : 0x9e3779b97f4a7c15ull;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545f4914f6cdd1dull;
}

int
tap_done(void)
{
	printf("1..%d\n", tap_count);
	return tap_failed ? 1 : 0;
}

void
tap_fill(uint8_t *p, size_t n, uint64_t seed)
{
	uint64_t s = seed * 2 + 1, x;

	for (size_t i = 0; i < n; i += 8) {
		size_t k = n - i < 8 ? n - i : 8;

		x = tap_rand(&s);
		memcpy(p + i, &x, k);
	}
}
