/*
 * bloom.h - Bloom filters over 64-bit key hashes.
 *
 * A filter is a byte string: ceil(bits/8) bytes of bit array followed by
 * one byte giving the number of probes k.  Probes use double hashing of the
 * 64-bit hash (h1 = low half, h2 = high half).  With 10 bits per key the
 * false positive rate is about 1 %.  The layout is part of the SSTable
 * format.
 */
#ifndef TABLETFS_UTIL_BLOOM_H
#define TABLETFS_UTIL_BLOOM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"
#include "util/slice.h"

/* The hash a filter stores for key: hash64(key, BLOOM_SEED). */
#define BLOOM_SEED 0x7462666cu
uint64_t bloom_hash(struct slice key);

/*
 * Append to out a filter holding the n hashes (n may be 0), using
 * bits_per_key bits for each (1..30; the filter has at least 64 bits).
 * 0 or -ENOMEM.
 */
int bloom_build(const uint64_t *hashes, size_t n, int bits_per_key,
    struct buf *out);

/*
 * false only if the key with this hash was certainly not added.  A filter
 * that does not decode (too short, k out of range) answers true, so a
 * damaged filter costs reads, never correctness.
 */
bool bloom_may_contain(struct slice filter, uint64_t hash);

#endif
