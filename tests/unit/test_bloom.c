/*
 * test_bloom.c - hash64 and Bloom filters: pinned on-disk values, no false
 * negatives, the false positive rate, and malformed filters.
 */
#include <stdio.h>
#include <string.h>

#include "tap.h"
#include "util/bloom.h"
#include "util/buf.h"
#include "util/crc32c.h"
#include "util/hash.h"

/*
 * hash64 and the filter layout are stored on disk: these values must never
 * change (see src/util/hash.c).
 */
static void
test_hash_pinned(void)
{
	uint8_t b[100];

	for (int i = 0; i < 100; i++)
		b[i] = (uint8_t)i;
	ok(hash64(slice_make("", 0), 0) == 0x7b8b83972c4ca703ull,
	    "hash64(\"\", 0) is pinned");
	ok(hash64(slice_make("", 0), BLOOM_SEED) == 0x52cef41a45ec577full,
	    "hash64(\"\", BLOOM_SEED) is pinned");
	ok(hash64(slice_make("a", 1), 0) == 0x10d1de721f873d3bull,
	    "hash64(\"a\", 0) is pinned");
	ok(hash64(slice_make("abcdefgh", 8), 0) == 0x456da7f02df1f728ull,
	    "hash64 of one word is pinned");
	ok(hash64(slice_make("abcdefghi", 9), 0) == 0x276ad8e7c067b19eull,
	    "hash64 of a word and a tail is pinned");
	ok(hash64(slice_make(b, 100), BLOOM_SEED) == 0x4821afd77c260d6aull,
	    "hash64 of bytes 0..99 is pinned");
	ok(hash64(slice_make("row/col:ts", 10), 12345) == 0x5df78b55c518b7c1ull,
	    "hash64 with seed 12345 is pinned");
	ok(bloom_hash(slice_make(b, 100)) == hash64(slice_make(b, 100),
	    BLOOM_SEED), "bloom_hash is hash64 with BLOOM_SEED");
}

/* Flipping any one input bit flips about half the output bits. */
static void
test_hash_mixing(uint64_t *rng)
{
	uint8_t key[24], alt[24];
	long flips = 0, trials = 0;
	int worst_lo = 64, worst_hi = 0, same = 0;
	int bit_ones[64] = { 0 };
	int biased = 0;

	for (int round = 0; round < 200; round++) {
		size_t n = 1 + tap_rand(rng) % sizeof(key);
		uint64_t h;

		for (size_t i = 0; i < n; i++)
			key[i] = (uint8_t)tap_rand(rng);
		h = hash64(slice_make(key, n), 0);
		for (int b = 0; b < 64; b++)
			bit_ones[b] += (int)((h >> b) & 1);
		for (size_t bit = 0; bit < n * 8; bit++) {
			int d;

			memcpy(alt, key, n);
			alt[bit / 8] ^= (uint8_t)(1u << (bit % 8));
			d = __builtin_popcountll(h ^ hash64(slice_make(alt, n), 0));
			flips += d;
			trials++;
			if (d < worst_lo)
				worst_lo = d;
			if (d > worst_hi)
				worst_hi = d;
		}
		if (hash64(slice_make(key, n), 1) == h)
			same++;
	}
	ok(flips > trials * 31 && flips < trials * 33,
	    "one flipped input bit flips %.2f of 64 output bits on average "
	    "(min %d, max %d)", (double)flips / (double)trials, worst_lo,
	    worst_hi);
	ok(worst_lo >= 8 && worst_hi <= 56, "no flip changes fewer than 8 or "
	    "more than 56 output bits");
	for (int b = 0; b < 64; b++)
		if (bit_ones[b] < 60 || bit_ones[b] > 140)
			biased++;
	is_int(biased, 0, "every output bit is set in 30-70 %% of 200 hashes");
	is_int(same, 0, "a different seed gives a different hash");
	ok(hash64(slice_make("\0", 1), 0) != hash64(slice_make("", 0), 0) &&
	    hash64(slice_make("\0\0", 2), 0) != hash64(slice_make("\0", 1), 0),
	    "trailing zero bytes change the hash");
	ok(hash64(slice_make("abcdefgh12345678", 16), 0) !=
	    hash64(slice_make("12345678abcdefgh", 16), 0),
	    "word order changes the hash");
}

static struct slice
make_key(char *buf, size_t size, const char *prefix, int i)
{
	int n = snprintf(buf, size, "%s%d", prefix, i);

	return slice_make(buf, (size_t)n);
}

static uint64_t *
key_hashes(const char *prefix, int n)
{
	uint64_t *h = calloc(n > 0 ? (size_t)n : 1, sizeof(*h));
	char kb[32];

	if (h == NULL)
		tap_bail("out of memory");
	for (int i = 0; i < n; i++)
		h[i] = bloom_hash(make_key(kb, sizeof(kb), prefix, i));
	return h;
}

static void
test_no_false_negatives(void)
{
	static const int sizes[] = { 0, 1, 10, 1000, 100000 };

	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		int n = sizes[s], missing = 0;
		uint64_t *h = key_hashes("key", n);
		size_t want_len = ((size_t)n * 10 < 64 ? 64 :
		    (size_t)n * 10 + 7) / 8 + 1;
		struct buf f;

		buf_init(&f);
		if (bloom_build(h, (size_t)n, 10, &f) < 0)
			tap_bail("bloom_build");
		for (int i = 0; i < n; i++)
			if (!bloom_may_contain(buf_slice(&f), h[i]))
				missing++;
		ok(missing == 0 && f.n == want_len && f.p[f.n - 1] == 7,
		    "%d keys: no false negatives, %zu bytes, k = 7", n, f.n);
		if (n == 0)
			ok(!bloom_may_contain(buf_slice(&f),
			    bloom_hash(slice_str("anything"))),
			    "an empty filter rejects a key");
		buf_release(&f);
		free(h);
	}
}

static void
test_false_positive_rate(void)
{
	uint64_t *keys = key_hashes("key", 10000);
	uint64_t *probes = key_hashes("probe", 100000);
	struct buf f;
	int fp = 0;
	double rate;

	buf_init(&f);
	if (bloom_build(keys, 10000, 10, &f) < 0)
		tap_bail("bloom_build");
	for (int i = 0; i < 100000; i++)
		if (bloom_may_contain(buf_slice(&f), probes[i]))
			fp++;
	rate = fp / 1000.0;
	ok(rate < 2.0, "false positive rate %.3f %% with 10 bits/key is "
	    "below 2 %%", rate);
	ok(fp > 0, "and some false positives happen (%d): probes are tested",
	    fp);
	buf_release(&f);
	free(keys);
	free(probes);
}

/* Every bits_per_key gives the expected k, size and no false negatives. */
static void
test_bits_per_key(void)
{
	uint64_t *keys = key_hashes("k", 500);
	int bad = 0;

	for (int bpk = 1; bpk <= 30; bpk++) {
		struct buf f;
		int k = (int)(bpk * 0.6931471805599453 + 0.5);
		size_t bits = 500 * (size_t)bpk;

		if (k < 1)
			k = 1;
		buf_init(&f);
		if (bloom_build(keys, 500, bpk, &f) < 0)
			tap_bail("bloom_build");
		if (f.n != (bits + 7) / 8 + 1 || f.p[f.n - 1] != k)
			bad++;
		for (int i = 0; i < 500; i++)
			if (!bloom_may_contain(buf_slice(&f), keys[i]))
				bad++;
		buf_release(&f);
	}
	is_int(bad, 0, "bits_per_key 1..30: k = round(bpk ln 2), size "
	    "bpk * n bits, no false negatives");
	free(keys);
}

static void
test_layout(void)
{
	uint64_t *keys = key_hashes("key", 100);
	struct buf f;
	uint64_t h;
	size_t m;
	int bad = 0;

	buf_init(&f);
	if (buf_append(&f, "prefix", 6) < 0 ||
	    bloom_build(keys, 100, 10, &f) < 0)
		tap_bail("bloom_build");
	ok(f.n == 6 + 125 + 1 && memcmp(f.p, "prefix", 6) == 0,
	    "bloom_build appends after existing content");
	is_int(crc32c_value(f.p + 6, f.n - 6), 0x8c893680u,
	    "filter of key0..key99 is pinned");

	/* The documented probe positions are exactly the bits set. */
	m = 125 * 8;
	for (int i = 0; i < 100; i++) {
		h = keys[i];
		for (uint64_t j = 0; j < 7; j++) {
			uint64_t b = ((h & 0xffffffffu) + j * (h >> 32)) % m;

			if (!(f.p[6 + b / 8] & (1u << (b % 8))))
				bad++;
		}
	}
	is_int(bad, 0, "bit (h1 + i * h2) mod m is set for every probe");

	/* A filter for one hash: exactly those probe bits and no others. */
	buf_clear(&f);
	h = 0x0000000500000003ull;	/* h1 = 3, h2 = 5 */
	if (bloom_build(&h, 1, 10, &f) < 0)
		tap_bail("bloom_build");
	/* 64 bits, k = 7: bits 3, 8, 13, ..., 33 */
	ok(f.n == 9 && f.p[8] == 7, "one-key filter has 64 bits and k = 7");
	bad = 0;
	for (int b = 0; b < 64; b++) {
		bool want = b >= 3 && b <= 33 && (b - 3) % 5 == 0;

		if (((f.p[b / 8] >> (b % 8)) & 1) != want)
			bad++;
	}
	is_int(bad, 0, "bit i is bit i %% 8 of byte i / 8");
	buf_release(&f);
	free(keys);
}

static void
test_malformed(void)
{
	uint8_t zeros[20] = { 0 };
	uint64_t h = bloom_hash(slice_str("x"));

	ok(bloom_may_contain(slice_make(NULL, 0), h), "empty filter: true");
	ok(bloom_may_contain(slice_make(zeros, 1), h), "1-byte filter: true");
	zeros[4] = 7;
	ok(bloom_may_contain(slice_make(zeros, 5), h),
	    "filter shorter than 64 bits, with a valid k: true");
	zeros[19] = 0;
	ok(bloom_may_contain(slice_make(zeros, 20), h), "k = 0: true");
	zeros[19] = 255;
	ok(bloom_may_contain(slice_make(zeros, 20), h), "k = 255: true");
	zeros[19] = 31;
	ok(bloom_may_contain(slice_make(zeros, 20), h), "k = 31: true");
	zeros[19] = 30;
	ok(!bloom_may_contain(slice_make(zeros, 20), h),
	    "k = 30 over empty bits decodes and answers false");
}

int
main(void)
{
	uint64_t rng = tap_seed();

	test_hash_pinned();
	test_hash_mixing(&rng);
	test_no_false_negatives();
	test_false_positive_rate();
	test_bits_per_key();
	test_layout();
	test_malformed();
	return tap_done();
}
