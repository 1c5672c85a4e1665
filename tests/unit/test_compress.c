/*
 * test_compress.c - Snappy round trips, and damaged or oversized input
 * rejected with BT_ECORRUPT, never a crash.
 */
#include <errno.h>
#include <string.h>

#include "tap.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/coding.h"
#include "util/compress.h"
#include "util/error.h"

/* Compress and uncompress in, checking the bytes come back. */
static bool
round_trip(struct slice in, size_t *compressed_len)
{
	struct buf c, u;
	bool good;

	buf_init(&c);
	buf_init(&u);
	good = compress_snappy(in, &c) == 0 &&
	    uncompress_snappy(buf_slice(&c), in.n, &u) == 0 &&
	    u.n == in.n && (in.n == 0 || memcmp(u.p, in.p, in.n) == 0);
	if (compressed_len != NULL)
		*compressed_len = c.n;
	buf_release(&c);
	buf_release(&u);
	return good;
}

static void
fill_random(uint8_t *p, size_t n, uint64_t *rng)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)tap_rand(rng);
}

/* Text-like bytes: words from a small vocabulary, so it compresses. */
static void
fill_compressible(uint8_t *p, size_t n, uint64_t *rng)
{
	static const char *words[] = { "tablet ", "row ", "column ",
	    "family ", "timestamp ", "bigtable ", "locality ", "group " };
	size_t i = 0;

	while (i < n) {
		const char *w = words[tap_rand(rng) % 8];

		for (size_t j = 0; w[j] != '\0' && i < n; j++)
			p[i++] = (uint8_t)w[j];
	}
}

static void
test_round_trips(uint64_t *rng)
{
	size_t n = 8u << 20, clen = 0;
	uint8_t *data = malloc(n);
	bool good;

	if (data == NULL)
		tap_bail("out of memory");
	good = round_trip(slice_make(NULL, 0), &clen);
	ok(good && clen > 0,
	    "empty input round trips (%zu compressed bytes)", clen);
	ok(round_trip(slice_str("a"), NULL), "one byte round trips");
	ok(round_trip(slice_str("hello, tablet server"), NULL),
	    "a short string round trips");

	fill_compressible(data, 100000, rng);
	good = round_trip(slice_make(data, 100000), &clen);
	ok(good && clen < 100000 / 2,
	    "100 KB of text round trips and halves (%zu bytes)", clen);
	memset(data, 'x', 100000);
	good = round_trip(slice_make(data, 100000), &clen);
	ok(good && clen * 20 < 100000,
	    "100 KB of one byte round trips to %zu bytes, more than 20x: "
	    "near Snappy's densest, which the decoder's bound admits", clen);
	{
		int bad = 0;

		for (size_t len = 0; len < 2000; len++)
			if (!round_trip(slice_make(data, len), NULL))
				bad++;
		is_int(bad, 0, "one byte repeated 0..1999 times round trips");
	}

	fill_random(data, 65536, rng);
	good = round_trip(slice_make(data, 65536), &clen);
	ok(good && clen >= 65536,
	    "64 KiB of random bytes round trips (%zu bytes)", clen);

	fill_compressible(data, n, rng);
	fill_random(data + n / 2, n / 4, rng);
	good = round_trip(slice_make(data, n), &clen);
	ok(good,
	    "8 MiB of mixed text and noise round trips (%zu bytes)", clen);

	{
		int bad = 0;

		for (size_t len = 0; len < 300; len++) {
			fill_compressible(data, len, rng);
			if (len % 3 == 0)
				fill_random(data, len / 2, rng);
			if (!round_trip(slice_make(data, len), NULL))
				bad++;
		}
		is_int(bad, 0, "every length 0..299 round trips");
	}
	free(data);
}

/* The output buffer is replaced, not appended to. */
static void
test_replaces_output(void)
{
	struct buf c, u;

	buf_init(&c);
	buf_init(&u);
	if (buf_set(&c, "old content", 11) < 0 ||
	    buf_set(&u, "older content", 13) < 0)
		tap_bail("out of memory");
	ok(compress_snappy(slice_str("abc"), &c) == 0 &&
	    uncompress_snappy(buf_slice(&c), 100, &u) == 0 && u.n == 3 &&
	    memcmp(u.p, "abc", 3) == 0, "output buffers are replaced");
	buf_release(&c);
	buf_release(&u);
}

static void
test_corrupt(uint64_t *rng)
{
	uint8_t data[4000];
	struct buf c, u, bad;
	int wrong = 0, rejected = 0, accepted = 0;
	int rc;

	buf_init(&c);
	buf_init(&u);
	buf_init(&bad);
	fill_compressible(data, sizeof(data), rng);
	fill_random(data + 1000, 200, rng);
	if (compress_snappy(slice_make(data, sizeof(data)), &c) < 0)
		tap_bail("compress_snappy");

	bt_error_clear();
	rc = uncompress_snappy(slice_make(NULL, 0), 1 << 20, &u);
	is_int(rc, BT_ECORRUPT, "empty compressed input is BT_ECORRUPT");
	ok(bt_error_detail()[0] != '\0', "with a detail: %s",
	    bt_error_detail());

	for (size_t cut = 0; cut < c.n; cut++) {
		rc = uncompress_snappy(slice_make(c.p, cut), sizeof(data), &u);
		if (rc != BT_ECORRUPT)
			wrong++;
	}
	is_int(wrong, 0, "all %zu truncations are BT_ECORRUPT", c.n);

	/* Flip random bytes: any outcome but a crash or a wrong code. */
	wrong = 0;
	for (int i = 0; i < 3000; i++) {
		if (buf_set(&bad, c.p, c.n) < 0)
			tap_bail("out of memory");
		for (int k = 1 + (int)(tap_rand(rng) % 4); k > 0; k--)
			bad.p[tap_rand(rng) % bad.n] ^=
			    (uint8_t)(1 + tap_rand(rng) % 255);
		rc = uncompress_snappy(buf_slice(&bad), sizeof(data), &u);
		if (rc == BT_ECORRUPT)
			rejected++;
		else if (rc == 0 && u.n <= sizeof(data))
			accepted++;
		else
			wrong++;
	}
	ok(wrong == 0 && rejected > 0, "3000 damaged blocks: %d rejected, "
	    "%d decode (damaged literals), none crash or misreport",
	    rejected, accepted);

	/* Pure noise. */
	wrong = 0;
	for (int i = 0; i < 3000; i++) {
		size_t n = tap_rand(rng) % 200;

		if (buf_reserve(&bad, n) < 0)
			tap_bail("out of memory");
		fill_random(bad.p, n, rng);
		bad.n = n;
		rc = uncompress_snappy(buf_slice(&bad), 1 << 16, &u);
		if (rc != BT_ECORRUPT && rc != 0)
			wrong++;
	}
	is_int(wrong, 0, "random bytes are BT_ECORRUPT or decode, never crash");

	buf_release(&c);
	buf_release(&u);
	buf_release(&bad);
}

static void
test_max_len(void)
{
	uint8_t data[1000];
	struct buf c, u;
	int rc;

	memset(data, 'q', sizeof(data));
	buf_init(&c);
	buf_init(&u);
	if (compress_snappy(slice_make(data, sizeof(data)), &c) < 0)
		tap_bail("compress_snappy");
	is_int(uncompress_snappy(buf_slice(&c), 1000, &u), 0,
	    "max_len equal to the size is enough");
	bt_error_clear();
	rc = uncompress_snappy(buf_slice(&c), 999, &u);
	is_int(rc, BT_ECORRUPT, "one byte over max_len is BT_ECORRUPT");
	ok(strstr(bt_error_detail(), "1000") != NULL, "detail names the "
	    "size: %s", bt_error_detail());
	is_int(uncompress_snappy(buf_slice(&c), 0, &u), BT_ECORRUPT,
	    "max_len 0 rejects a non-empty block");

	/* A header claiming 4 GiB - 1 must be refused before allocating. */
	buf_clear(&c);
	if (buf_put_varint32(&c, UINT32_MAX) < 0 || buf_append(&c, "\0", 1) < 0)
		tap_bail("out of memory");
	bt_alloc_fail_after(1);
	rc = uncompress_snappy(buf_slice(&c), 1 << 20, &u);
	bt_alloc_fail_after(0);
	is_int(rc, BT_ECORRUPT, "a huge declared length is refused without "
	    "allocating");

	/* Within max_len but more than a few bytes of Snappy can encode. */
	buf_clear(&c);
	if (buf_put_varint32(&c, 2218786815u) < 0 ||
	    buf_append(&c, "\0\0\0\0\0\0", 6) < 0)
		tap_bail("out of memory");
	bt_error_clear();
	bt_alloc_fail_after(1);
	rc = uncompress_snappy(buf_slice(&c), UINT32_MAX, &u);
	bt_alloc_fail_after(0);
	is_int(rc, BT_ECORRUPT, "a 2 GiB length in an 11-byte block is refused "
	    "without allocating, though within max_len");
	ok(strstr(bt_error_detail(), "more than Snappy can encode") != NULL,
	    "detail says why: %s", bt_error_detail());
	buf_release(&c);
	buf_release(&u);
}

static void
test_enomem(void)
{
	struct buf c, u;
	int rc;

	buf_init(&c);
	buf_init(&u);
	bt_alloc_fail_after(1);
	rc = compress_snappy(slice_str("some bytes"), &c);
	bt_alloc_fail_after(0);
	is_int(rc, -ENOMEM, "compress_snappy reports -ENOMEM");
	if (compress_snappy(slice_str("some bytes"), &c) < 0)
		tap_bail("compress_snappy");
	bt_alloc_fail_after(1);
	rc = uncompress_snappy(buf_slice(&c), 100, &u);
	bt_alloc_fail_after(0);
	is_int(rc, -ENOMEM, "uncompress_snappy reports -ENOMEM");
	buf_release(&c);
	buf_release(&u);
}

int
main(void)
{
	uint64_t rng = tap_seed();

	test_round_trips(&rng);
	test_replaces_output();
	test_corrupt(&rng);
	test_max_len();
	test_enomem();
	return tap_done();
}
