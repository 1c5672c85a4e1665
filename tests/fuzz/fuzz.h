/*
 * fuzz.h - what the fuzz targets share.  Each target defines
 * LLVMFuzzerTestOneInput(); built with clang -fsanitize=fuzzer (and
 * -DTABLETFS_LIBFUZZER) it is a libFuzzer binary, run by tests/fuzz/run;
 * otherwise fuzz_main.c supplies a main() that runs the target once per
 * file or directory of files named on its command line, so that `make
 * check` replays the checked-in corpora (seeds and regressions) under the
 * normal and the sanitizer builds.
 *
 * A target aborts (FUZZ_CHECK) when a property fails, not only when memory
 * is misused: a decoder that accepts bytes must give back what re-encodes
 * to the same thing.
 */
#ifndef TABLETFS_TESTS_FUZZ_FUZZ_H
#define TABLETFS_TESTS_FUZZ_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "%s:%d: fuzz property failed: %s\n",	\
		    __FILE__, __LINE__, #cond);				\
		abort();						\
	}								\
} while (0)

#endif
