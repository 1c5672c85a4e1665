/*
 * hash.c - hash64, a multiply-xorshift hash over 8-byte words.
 *
 * FROZEN: the value of hash64() for a given (input, seed) is stored on disk
 * in every SSTable's Bloom filter.  Changing any constant, the word order,
 * the tail handling or the finalizer silently turns every stored filter
 * into garbage (false negatives, hence wrong reads).  tests/unit/test_bloom.c
 * pins known values; if they ever need to change, the SSTable format
 * version must change with them.
 *
 * Design: the length and a constant are folded into the starting state;
 * each 8-byte word, read little-endian whatever the host byte order, is
 * scrambled by a multiply-xorshift-multiply and xored into the state, which
 * is then rotated and multiplied so word order matters; the 1..7 byte tail
 * is read as a little-endian word and treated the same way; a final
 * avalanche (xorshift-multiply, as in splitmix64) makes every input bit
 * affect every output bit.
 */
#include <string.h>

#include "util/hash.h"

#define HASH_K0 0x9e3779b97f4a7c15ull	/* 2^64 / golden ratio */
#define HASH_K1 0xbf58476d1ce4e5b9ull
#define HASH_K2 0x94d049bb133111ebull
#define HASH_K3 0xd6e8feb86659fd93ull

static inline uint64_t
hash_rotl(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

/* Eight bytes at p as a little-endian integer, on any host. */
static inline uint64_t
hash_load64(const uint8_t *p)
{
	uint64_t w;

	memcpy(&w, p, sizeof(w));
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	w = __builtin_bswap64(w);
#endif
	return w;
}

static inline uint64_t
hash_scramble(uint64_t w)
{
	w *= HASH_K1;
	w ^= w >> 31;
	w *= HASH_K2;
	return w;
}

static inline uint64_t
hash_absorb(uint64_t h, uint64_t w)
{
	h ^= hash_scramble(w);
	return hash_rotl(h, 29) * HASH_K0 + HASH_K3;
}

uint64_t
hash64(struct slice s, uint64_t seed)
{
	const uint8_t *p = s.p;
	size_t n = s.n;
	uint64_t h = seed ^ HASH_K3 ^ ((uint64_t)s.n * HASH_K0);

	while (n >= 8) {
		h = hash_absorb(h, hash_load64(p));
		p += 8;
		n -= 8;
	}
	if (n > 0) {
		uint64_t w = 0;

		for (size_t i = 0; i < n; i++)
			w |= (uint64_t)p[i] << (8 * i);
		h = hash_absorb(h, w);
	}
	h ^= h >> 33;
	h *= HASH_K1;
	h ^= h >> 29;
	h *= HASH_K2;
	h ^= h >> 32;
	return h;
}
