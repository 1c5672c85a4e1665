/*
 * test_coding.c - fixed-width, big-endian and varint coding, length
 * prefixes, and the growable buffer they write into.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "tap.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/coding.h"
#include "util/error.h"

static const uint64_t boundaries[] = {
	0, 1, 0x7f, 0x80, 0xff, 0x100, 0x7fff, 0x8000, 0xffff, 0x10000,
	0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff, 0x100000000ull,
	0x7fffffffffffffffull, 0x8000000000000000ull, 0xfffffffffffffffeull,
	0xffffffffffffffffull, 0x0102030405060708ull,
};
#define NBOUNDARIES (sizeof(boundaries) / sizeof(boundaries[0]))

static void
test_fixed(uint64_t *rng)
{
	uint8_t b[8], c[8];
	int bad32 = 0, bad64 = 0, badbe = 0, badorder = 0;

	put_fixed32(b, 0x04030201u);
	ok(memcmp(b, "\x01\x02\x03\x04", 4) == 0,
	    "fixed32 is little-endian on disk");
	put_fixed64(b, 0x0807060504030201ull);
	ok(memcmp(b, "\x01\x02\x03\x04\x05\x06\x07\x08", 8) == 0,
	    "fixed64 is little-endian on disk");
	put_be64(b, 0x0102030405060708ull);
	ok(memcmp(b, "\x01\x02\x03\x04\x05\x06\x07\x08", 8) == 0,
	    "be64 is big-endian on disk");

	for (size_t i = 0; i < NBOUNDARIES; i++) {
		uint64_t v = boundaries[i];

		put_fixed32(b, (uint32_t)v);
		if (get_fixed32(b) != (uint32_t)v)
			bad32++;
		put_fixed64(b, v);
		if (get_fixed64(b) != v)
			bad64++;
		put_be64(b, v);
		if (get_be64(b) != v)
			badbe++;
	}
	is_int(bad32, 0, "fixed32 round trips at boundaries");
	is_int(bad64, 0, "fixed64 round trips at boundaries");
	is_int(badbe, 0, "be64 round trips at boundaries");

	for (int i = 0; i < 10000; i++) {
		uint64_t x = tap_rand(rng) >> (tap_rand(rng) % 64);
		uint64_t y = tap_rand(rng) >> (tap_rand(rng) % 64);
		int cmp;

		put_be64(b, x);
		put_be64(c, y);
		cmp = memcmp(b, c, 8);
		if ((x < y && cmp >= 0) || (x > y && cmp <= 0) ||
		    (x == y && cmp != 0))
			badorder++;
		if (get_be64(b) != x)
			badbe++;
	}
	is_int(badorder, 0, "be64 byte order follows numeric order");
	is_int(badbe, 0, "be64 round trips random values");
}

/* Encode v both ways, decode it, and check every strict prefix fails. */
static int
check_varint64(uint64_t v)
{
	uint8_t enc[VARINT64_MAX_BYTES + 1];
	struct buf b;
	struct slice in, saved;
	uint64_t got = ~v;
	int len, bad = 0;

	len = (int)(encode_varint64(enc, v) - enc);
	if (len != varint_length(v))
		bad++;
	buf_init(&b);
	if (buf_put_varint64(&b, v) < 0 || b.n != (size_t)len ||
	    memcmp(b.p, enc, (size_t)len) != 0)
		bad++;
	buf_release(&b);

	enc[len] = 0x55;	/* a following byte that must be left alone */
	in = slice_make(enc, (size_t)len + 1);
	if (get_varint64(&in, &got) != 0 || got != v ||
	    in.p != enc + len || in.n != 1)
		bad++;
	for (int cut = 0; cut < len; cut++) {
		in = saved = slice_make(enc, (size_t)cut);
		if (get_varint64(&in, &got) != BT_ECORRUPT ||
		    in.p != saved.p || in.n != saved.n)
			bad++;
	}
	return bad;
}

static int
check_varint32(uint32_t v)
{
	uint8_t enc[VARINT32_MAX_BYTES + 1];
	struct buf b;
	struct slice in, saved;
	uint32_t got = ~v;
	int len, bad = 0;

	len = (int)(encode_varint32(enc, v) - enc);
	if (len != varint_length(v) || len > VARINT32_MAX_BYTES)
		bad++;
	buf_init(&b);
	if (buf_put_varint32(&b, v) < 0 || b.n != (size_t)len ||
	    memcmp(b.p, enc, (size_t)len) != 0)
		bad++;
	buf_release(&b);

	enc[len] = 0x55;
	in = slice_make(enc, (size_t)len + 1);
	if (get_varint32(&in, &got) != 0 || got != v ||
	    in.p != enc + len || in.n != 1)
		bad++;
	for (int cut = 0; cut < len; cut++) {
		in = saved = slice_make(enc, (size_t)cut);
		if (get_varint32(&in, &got) != BT_ECORRUPT ||
		    in.p != saved.p || in.n != saved.n)
			bad++;
	}
	return bad;
}

static void
test_varint_round_trip(uint64_t *rng)
{
	int bad64 = 0, bad32 = 0, badlen = 0;

	for (int i = 0; i < 64; i++) {
		uint64_t p = 1ull << i;

		bad64 += check_varint64(p) + check_varint64(p - 1) +
		    check_varint64(p + 1);
	}
	bad64 += check_varint64(UINT64_MAX);
	is_int(bad64, 0, "varint64 round trips at 2^i-1, 2^i, 2^i+1 and "
	    "its truncations fail");

	for (int i = 0; i < 32; i++) {
		uint32_t p = 1u << i;

		bad32 += check_varint32(p) + check_varint32(p - 1) +
		    check_varint32(p + 1);
	}
	bad32 += check_varint32(UINT32_MAX);
	is_int(bad32, 0, "varint32 round trips at 2^i-1, 2^i, 2^i+1 and "
	    "its truncations fail");

	bad64 = bad32 = 0;
	for (int i = 0; i < 20000; i++) {
		uint64_t v = tap_rand(rng) >> (tap_rand(rng) % 64);

		bad64 += check_varint64(v);
		bad32 += check_varint32((uint32_t)v);
	}
	is_int(bad64, 0, "varint64 round trips random values");
	is_int(bad32, 0, "varint32 round trips random values");

	/* varint_length: one byte per started group of 7 bits. */
	for (int bits = 0; bits <= 64; bits++) {
		uint64_t v = bits == 0 ? 0 :
		    bits == 64 ? UINT64_MAX : (1ull << bits) - 1;
		int want = bits == 0 ? 1 : (bits + 6) / 7;

		if (varint_length(v) != want)
			badlen++;
	}
	is_int(badlen, 0, "varint_length is ceil(bits / 7)");
	is_int(varint_length(UINT64_MAX), VARINT64_MAX_BYTES,
	    "varint_length(UINT64_MAX) is VARINT64_MAX_BYTES");
	is_int(varint_length(UINT32_MAX), VARINT32_MAX_BYTES,
	    "varint_length(UINT32_MAX) is VARINT32_MAX_BYTES");
}

/* Decoding s must fail with BT_ECORRUPT and leave the slice alone. */
static bool
rejects64(const void *p, size_t n)
{
	struct slice in = slice_make(p, n);
	uint64_t v = 0;

	return get_varint64(&in, &v) == BT_ECORRUPT &&
	    in.p == (const uint8_t *)p && in.n == n;
}

static bool
rejects32(const void *p, size_t n)
{
	struct slice in = slice_make(p, n);
	uint32_t v = 0;

	return get_varint32(&in, &v) == BT_ECORRUPT &&
	    in.p == (const uint8_t *)p && in.n == n;
}

static void
test_varint_malformed(void)
{
	const uint8_t over11[] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
	    0x80, 0x80, 0x80, 0x00 };
	const uint8_t over64[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	    0xff, 0xff, 0x02 };
	const uint8_t max64[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	    0xff, 0xff, 0x01 };
	const uint8_t more10[] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
	    0x80, 0x80, 0x81, 0x00 };
	const uint8_t over6[] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x00 };
	const uint8_t over32[] = { 0xff, 0xff, 0xff, 0xff, 0x10 };
	const uint8_t max32[] = { 0xff, 0xff, 0xff, 0xff, 0x0f };
	struct slice in;
	uint64_t v64;
	uint32_t v32;

	ok(rejects64(over11, sizeof(over11)),
	    "11-byte varint64 is BT_ECORRUPT, input unchanged");
	ok(rejects64(more10, sizeof(more10)),
	    "varint64 whose 10th byte continues is BT_ECORRUPT");
	ok(rejects64(over64, sizeof(over64)),
	    "varint64 overflowing 64 bits is BT_ECORRUPT");
	ok(rejects32(over6, sizeof(over6)),
	    "6-byte varint32 is BT_ECORRUPT, input unchanged");
	ok(rejects32(over32, sizeof(over32)),
	    "varint32 overflowing 32 bits is BT_ECORRUPT");
	ok(rejects32(max64, 5), "5 continuation bytes reject as varint32");
	ok(rejects64("", 0) && rejects32("", 0), "empty input rejects");
	ok(rejects64("\x80", 1) && rejects32("\xff", 1),
	    "lone continuation byte rejects");

	in = slice_make(max64, sizeof(max64));
	ok(get_varint64(&in, &v64) == 0 && v64 == UINT64_MAX && in.n == 0,
	    "10-byte varint64 of UINT64_MAX decodes");
	in = slice_make(max32, sizeof(max32));
	ok(get_varint32(&in, &v32) == 0 && v32 == UINT32_MAX && in.n == 0,
	    "5-byte varint32 of UINT32_MAX decodes");
	/* A non-minimal but in-range encoding is accepted, as LevelDB does. */
	in = slice_make("\x81\x80\x00", 3);
	ok(get_varint32(&in, &v32) == 0 && v32 == 1 && in.n == 0,
	    "padded varint32 within 5 bytes decodes");
}

static void
test_lenprefixed(uint64_t *rng)
{
	struct buf b;
	struct slice in, out, saved;
	uint8_t data[300];
	size_t sizes[] = { 0, 1, 127, 128, 300 };
	int bad = 0, badcut = 0;
	size_t first_len;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)tap_rand(rng);
	buf_init(&b);
	for (size_t i = 0; i < 5; i++)
		if (buf_put_lenprefixed(&b, slice_make(data, sizes[i])) < 0)
			bad++;
	is_int(b.n, 1 + 0 + 1 + 1 + 1 + 127 + 2 + 128 + 2 + 300,
	    "lenprefixed sizes add up");
	in = buf_slice(&b);
	for (size_t i = 0; i < 5; i++) {
		if (get_lenprefixed(&in, &out) != 0 || out.n != sizes[i] ||
		    (out.n > 0 && memcmp(out.p, data, out.n) != 0))
			bad++;
	}
	is_int(bad, 0, "lenprefixed round trips 0, 1, 127, 128, 300 bytes");
	is_int(in.n, 0, "lenprefixed consumed the whole buffer");

	/* Every strict prefix of the 300-byte item fails and moves nothing. */
	buf_clear(&b);
	if (buf_put_lenprefixed(&b, slice_make(data, 300)) < 0)
		tap_bail("out of memory");
	first_len = b.n;
	for (size_t cut = 0; cut < first_len; cut++) {
		in = saved = slice_make(b.p, cut);
		if (get_lenprefixed(&in, &out) != BT_ECORRUPT ||
		    in.p != saved.p || in.n != saved.n)
			badcut++;
	}
	is_int(badcut, 0, "every truncation of a lenprefixed run is "
	    "BT_ECORRUPT and leaves the input unchanged");

	/* A length far beyond the input, and one that overflows size_t. */
	buf_clear(&b);
	if (buf_put_varint64(&b, UINT64_MAX) < 0 || buf_append(&b, "xy", 2) < 0)
		tap_bail("out of memory");
	in = saved = buf_slice(&b);
	ok(get_lenprefixed(&in, &out) == BT_ECORRUPT && in.n == saved.n,
	    "lenprefixed with a 2^64-1 length is BT_ECORRUPT");
	buf_release(&b);
}

static void
test_buf(void)
{
	static const uint8_t zeros[1 << 16];
	struct buf b;
	uint8_t big[1000];
	uint8_t *before, *src;
	size_t n_before, cap_before;
	int rc;

	memset(big, 'z', sizeof(big));
	buf_init(&b);
	ok(b.p == NULL && b.n == 0 && b.cap == 0, "buf_init gives an empty buffer");
	ok(buf_append(&b, "hello", 5) == 0 && b.n == 5 &&
	    memcmp(b.p, "hello", 5) == 0, "buf_append");
	ok(buf_append(&b, big, sizeof(big)) == 0 && b.n == 1005 &&
	    b.cap >= 1005 && memcmp(b.p + 5, big, sizeof(big)) == 0 &&
	    memcmp(b.p, "hello", 5) == 0, "buf_append grows and keeps content");
	ok(buf_set(&b, "abc", 3) == 0 && b.n == 3 &&
	    memcmp(b.p, "abc", 3) == 0, "buf_set replaces content");
	ok(buf_set(&b, b.p + 1, 2) == 0 && b.n == 2 &&
	    memcmp(b.p, "bc", 2) == 0, "buf_set from its own bytes");
	buf_clear(&b);
	ok(b.n == 0 && b.cap >= 1005, "buf_clear keeps the allocation");
	buf_release(&b);
	ok(b.p == NULL && b.n == 0 && b.cap == 0, "buf_release empties");
	buf_release(&b);

	buf_init(&b);
	ok(buf_set(&b, big, sizeof(big)) == 0 && b.n == sizeof(big) &&
	    memcmp(b.p, big, sizeof(big)) == 0, "buf_set on an empty buffer");
	ok(buf_reserve(&b, 5000) == 0 && b.cap >= b.n + 5000,
	    "buf_reserve makes room");
	ok(b.cap < sizeof(zeros) && buf_set(&b, big, 8) == 0 &&
	    buf_set(&b, zeros, b.cap + 1) == 0 && b.cap >= b.n,
	    "buf_set of capacity + 1 bytes grows the buffer");
	ok(buf_set(&b, big, sizeof(big)) == 0, "buf_set shrinks");
	ok(buf_reserve(&b, SIZE_MAX) == -ENOMEM && b.n == sizeof(big),
	    "buf_reserve refuses an overflowing size");

	before = b.p;
	n_before = b.n;
	cap_before = b.cap;
	if ((src = calloc(cap_before, 1)) == NULL)
		tap_bail("out of memory");
	bt_alloc_fail_after(1);
	rc = buf_append(&b, src, cap_before);	/* must grow */
	bt_alloc_fail_after(0);
	free(src);
	ok(rc == -ENOMEM && b.p == before && b.n == n_before &&
	    b.cap == cap_before, "failed growth leaves the buffer unchanged");
	bt_alloc_fail_after(1);
	rc = buf_put_varint64(&b, 1);		/* fits: no allocation */
	bt_alloc_fail_after(0);
	is_int(rc, 0, "appending within capacity does not allocate");
	buf_release(&b);

	buf_init(&b);
	ok(buf_append(&b, NULL, 0) == 0 && b.n == 0 && b.p == NULL,
	    "appending nothing does not allocate");
	buf_release(&b);
}

int
main(void)
{
	uint64_t rng = tap_seed();

	test_fixed(&rng);
	test_varint_round_trip(&rng);
	test_varint_malformed();
	test_lenprefixed(&rng);
	test_buf();
	return tap_done();
}
