/*
 * hash.h - a fast 64-bit non-cryptographic hash for Bloom filters and
 * cache sharding.  The value is part of the SSTable format (Bloom filter
 * bits): it must never change for a given input.
 */
#ifndef TABLETFS_UTIL_HASH_H
#define TABLETFS_UTIL_HASH_H

#include <stdint.h>

#include "util/slice.h"

uint64_t hash64(struct slice s, uint64_t seed);

#endif
