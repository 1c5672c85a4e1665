/*
 * fuzz_names.c - the escaping of row keys and qualifiers as path
 * components (src/fs/names.c).  Any bytes encode to a name that decodes
 * back to them, holds no '/' or NUL, never starts with '.', and is
 * canonical (re-encoding what it decodes to gives it again).  Any name
 * either fails to decode or decodes to bytes whose canonical name
 * decodes to the same bytes.
 */
#include <string.h>

#include "util/names.h"
#include "fuzz.h"
#include "util/buf.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct buf enc, dec, again;
	char *name;

	buf_init(&enc);
	buf_init(&dec);
	buf_init(&again);

	/* The input as raw bytes. */
	FUZZ_CHECK(names_encode(slice_make(data, size), &enc) == 0);
	FUZZ_CHECK(enc.n > 0);
	FUZZ_CHECK(memchr(enc.p, '/', enc.n) == NULL);
	FUZZ_CHECK(memchr(enc.p, '\0', enc.n) == NULL);
	FUZZ_CHECK(enc.p[0] != '.');
	FUZZ_CHECK(names_decode((const char *)enc.p, enc.n, &dec) == 0);
	FUZZ_CHECK(slice_equal(buf_slice(&dec), slice_make(data, size)));

	/* The input as a name (an exact-size copy, for ASan). */
	FUZZ_CHECK((name = malloc(size ? size : 1)) != NULL);
	memcpy(name, data, size);
	buf_clear(&dec);
	if (names_decode(name, size, &dec) == 0) {
		FUZZ_CHECK(size > 0 && name[0] != '.');
		FUZZ_CHECK(memchr(name, '/', size) == NULL);
		buf_clear(&enc);
		FUZZ_CHECK(names_encode(buf_slice(&dec), &enc) == 0);
		FUZZ_CHECK(memchr(enc.p, '/', enc.n) == NULL);
		FUZZ_CHECK(names_decode((const char *)enc.p, enc.n,
		    &again) == 0);
		FUZZ_CHECK(slice_equal(buf_slice(&again), buf_slice(&dec)));
	}
	free(name);
	buf_release(&enc);
	buf_release(&dec);
	buf_release(&again);
	return 0;
}
