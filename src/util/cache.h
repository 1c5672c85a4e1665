/*
 * cache.h - sharded LRU cache with reference-counted handles.
 *
 * Maps byte-string keys to values that the cache owns.  Each entry has a
 * charge (usually its size); when the total charge passes the capacity, the
 * least recently used entries that no handle holds are evicted and their
 * deleter runs.  An entry held by a handle stays alive (and may push usage
 * over capacity) until the handle is released, even if it was erased or
 * replaced meanwhile.  Keys are hashed to one of 16 shards, each with its own
 * mutex, LRU order and a 16th of the capacity (rounded up); the shard is the
 * top 4 bits of hash64(key, 0).  An entry whose charge passes a quarter of
 * its shard's capacity is large: it is kept only in room its shard has
 * free, and evicted before any other entry (cache_insert()).  One such
 * entry would otherwise evict a quarter of its shard or more, so a large
 * value read once (a file's large version streamed through the block
 * cache) would push out the small blocks that every other reader keeps
 * using.  All functions are thread-safe.
 */
#ifndef TABLETFS_UTIL_CACHE_H
#define TABLETFS_UTIL_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "util/slice.h"

struct cache;
struct cache_handle;

struct cache_stats {
	uint64_t hits;
	uint64_t misses;
	uint64_t inserts;
	uint64_t evictions;
	uint64_t bypassed;	/* large inserts without room, not kept */
	size_t usage;		/* total charge of the live entries */
	size_t capacity;
};

/* A cache holding up to capacity units of charge.  0 or -ENOMEM. */
int cache_new(size_t capacity, struct cache **out);
/* Every handle must have been released.  Runs all deleters; accepts NULL. */
void cache_free(struct cache *c);

/*
 * Insert key -> value, replacing any entry with the same key, and return in
 * *out a handle on the new entry (release it with cache_release()).  The
 * cache takes ownership of value and calls deleter(key, value) exactly once,
 * when the entry dies; the key is copied.  An entry whose charge is above a
 * quarter of its shard's capacity is kept only when the shard has that
 * much room free (it then goes before every other entry when room is
 * needed); otherwise it is not kept (counted in bypassed): any entry with
 * the same key is still removed, the handle is the entry's only
 * reference, lookups do not find it, and it dies when the handle is
 * released.  0 or -ENOMEM, in which case the deleter has already been
 * called.
 */
int cache_insert(struct cache *c, struct slice key, void *value,
    size_t charge, void (*deleter)(struct slice key, void *value),
    struct cache_handle **out);

/* A handle on key's entry, or NULL if absent.  Counts a hit or a miss. */
struct cache_handle *cache_lookup(struct cache *c, struct slice key);

/* Give back a handle from cache_insert() or cache_lookup(). */
void cache_release(struct cache *c, struct cache_handle *h);

/* The value a handle holds; valid until the handle is released. */
void *cache_handle_value(const struct cache_handle *h);

/* Remove key's entry; it dies when its last handle is released. */
void cache_erase(struct cache *c, struct slice key);

/* A fresh number, distinct on each call: lets clients partition keys. */
uint64_t cache_new_id(struct cache *c);

void cache_get_stats(struct cache *c, struct cache_stats *out);

#endif
