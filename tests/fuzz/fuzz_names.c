/*
 * fuzz_names.c - the escaping of row keys and qualifiers as path
 * components (src/util/names.c).  Any bytes encode to a name that decodes
 * back to them, holds no '/' or NUL, never starts with '.', and is
 * canonical (re-encoding what it decodes to gives it again).  Their
 * listed component is that name when it fits in 255 bytes, else a short
 * form of at most 255 bytes that does not decode, whose prefix decodes to
 * a prefix of the bytes, and that names_component_is() matches.  Any name
 * either fails to decode or decodes to bytes whose canonical name decodes
 * to the same bytes, and decodes in place to the same bytes.
 */
#include <errno.h>
#include <string.h>

#include "util/names.h"
#include "fuzz.h"
#include "util/buf.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct buf enc, dec, again;
	char *name;
	size_t n;

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

	/* The listed component, and its short form. */
	buf_clear(&dec);
	FUZZ_CHECK(names_component(slice_make(data, size), &dec) == 0);
	FUZZ_CHECK(dec.n <= NAMES_MAX_COMPONENT);
	if (enc.n <= NAMES_MAX_COMPONENT)
		FUZZ_CHECK(slice_equal(buf_slice(&dec), buf_slice(&enc)));
	else {
		FUZZ_CHECK(dec.n > NAMES_SHORT_SUFFIX);
		FUZZ_CHECK(memcmp(dec.p, enc.p, dec.n - NAMES_SHORT_SUFFIX) ==
		    0);
		FUZZ_CHECK(names_decode((const char *)dec.p, dec.n, &again) ==
		    -EINVAL);
		FUZZ_CHECK(names_short_prefix((const char *)dec.p, dec.n,
		    &again) == 1);
		FUZZ_CHECK(again.n <= size &&
		    memcmp(again.p, data, again.n) == 0);
		FUZZ_CHECK(names_component_is(slice_make(data, size),
		    (const char *)dec.p, dec.n, &again) == 1);
	}
	buf_clear(&enc);
	FUZZ_CHECK(names_encode(slice_make(data, size), &enc) == 0);

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
		n = size;
		FUZZ_CHECK(names_decode_in_place(name, &n) == 0);
		FUZZ_CHECK(slice_equal(slice_make(name, n), buf_slice(&dec)));
	} else {
		n = size;
		FUZZ_CHECK(names_decode_in_place(name, &n) == -EINVAL);
		FUZZ_CHECK(n == size && memcmp(name, data, size) == 0);
	}
	free(name);
	buf_release(&enc);
	buf_release(&dec);
	buf_release(&again);
	return 0;
}
