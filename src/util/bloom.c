/*
 * bloom.c - Bloom filters over 64-bit key hashes.
 *
 * On-disk layout (part of the SSTable format; see bloom.h):
 *
 *	bytes [0, len-1)   bit array, m = 8 * (len - 1) bits; bit i is
 *	                   (byte[i / 8] >> (i % 8)) & 1
 *	byte  len-1        k, the number of probes, 1..30
 *
 * A key with 64-bit hash h sets bits (h1 + i * h2) mod m for i = 0..k-1,
 * where h1 = low 32 bits of h and h2 = high 32 bits, computed without
 * wrap-around in 64-bit arithmetic (h1 + 29 * h2 < 2^37).
 */
#include <errno.h>
#include <string.h>

#include "util/bloom.h"
#include "util/hash.h"

#define BLOOM_MIN_BITS 64
#define BLOOM_MAX_K 30
/* A filter bloom_build() writes has at least this many bytes. */
#define BLOOM_MIN_LEN (BLOOM_MIN_BITS / 8 + 1)

uint64_t
bloom_hash(struct slice key)
{
	return hash64(key, BLOOM_SEED);
}

/* k minimising the false positive rate: bits_per_key * ln 2, rounded. */
static int
bloom_probes(int bits_per_key)
{
	int k = (bits_per_key * 693 + 500) / 1000;

	if (k < 1)
		k = 1;
	if (k > BLOOM_MAX_K)
		k = BLOOM_MAX_K;
	return k;
}

/*
 * Probe i of hash h in a filter of m bits (m >= BLOOM_MIN_BITS) is bit
 * (h1 + i * h2) mod m, as the layout says.  h1 and h2 are below 2^32 and
 * k at most BLOOM_MAX_K, so h1 + i * h2 never wraps and the remainders
 * step by h2 mod m: one division for the first probe and one for the
 * step, not one a probe (a 64-bit division costs tens of cycles, and
 * with none in its way the CPU runs ahead to the next probes' loads).
 */
struct bloom_probe {
	uint64_t bit, step, m;
};

static inline void
bloom_probe_init(struct bloom_probe *p, uint64_t m, uint64_t h)
{
	p->bit = (h & 0xffffffffu) % m;
	p->step = (h >> 32) % m;
	p->m = m;
}

static inline void
bloom_probe_next(struct bloom_probe *p)
{
	p->bit += p->step;
	if (p->bit >= p->m)
		p->bit -= p->m;
}

static inline void
bloom_set(uint8_t *bits, uint64_t m, uint64_t h, int k)
{
	struct bloom_probe p;

	bloom_probe_init(&p, m, h);
	for (int i = 0; i < k; i++, bloom_probe_next(&p))
		bits[p.bit / 8] |= (uint8_t)(1u << (p.bit % 8));
}

int
bloom_build(const uint64_t *hashes, size_t n, int bits_per_key,
    struct buf *out)
{
	size_t bits, len;
	uint8_t *bytes;
	int k, rc;

	if (bits_per_key < 1)
		bits_per_key = 1;
	if (bits_per_key > BLOOM_MAX_K)
		bits_per_key = BLOOM_MAX_K;
	k = bloom_probes(bits_per_key);
	if (n > (SIZE_MAX - 8) / (size_t)bits_per_key)
		return -ENOMEM;
	bits = n * (size_t)bits_per_key;
	if (bits < BLOOM_MIN_BITS)
		bits = BLOOM_MIN_BITS;
	len = (bits + 7) / 8;
	if ((rc = buf_reserve(out, len + 1)) < 0)
		return rc;
	bytes = out->p + out->n;
	memset(bytes, 0, len);
	for (size_t i = 0; i < n; i++)
		bloom_set(bytes, (uint64_t)len * 8, hashes[i], k);
	bytes[len] = (uint8_t)k;
	out->n += len + 1;
	return 0;
}

bool
bloom_may_contain(struct slice filter, uint64_t hash)
{
	struct bloom_probe p;
	int k;

	if (filter.n < BLOOM_MIN_LEN)
		return true;
	k = filter.p[filter.n - 1];
	if (k < 1 || k > BLOOM_MAX_K)
		return true;
	bloom_probe_init(&p, (uint64_t)(filter.n - 1) * 8, hash);
	for (int i = 0; i < k; i++, bloom_probe_next(&p))
		if ((filter.p[p.bit / 8] & (1u << (p.bit % 8))) == 0)
			return false;
	return true;
}
