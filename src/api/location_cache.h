/*
 * location_cache.h - the client side's cache of tablet locations (Bigtable
 * section 5.1): per table, a sorted set of non-overlapping row ranges
 * [start, end) with the tablet that serves each, so that repeated lookups
 * do not walk the location hierarchy.
 *
 * The client looks a row up here first; on a miss it walks the hierarchy
 * (catalog_location_walk, or one call per level), inserts what it found
 * and adds the levels it walked to the counters.  An entry is never known
 * to be stale by the cache itself: when the tablet it names turns out not
 * to serve the row (split, merged, moved, table dropped), the client
 * invalidates it and walks again.  Inserting a range drops every cached
 * range it overlaps, so the children of a split replace their parent as
 * soon as either is learned.
 *
 * Memory is bounded: at most capacity entries; inserting past it evicts an
 * entry not looked up since the clock hand last passed it (CLOCK, a cheap
 * LRU).  Every function is thread-safe: lookups share a read lock and may
 * run in parallel; inserts and invalidations take it exclusively.
 * Depends only on util.
 */
#ifndef TABLETFS_API_LOCATION_CACHE_H
#define TABLETFS_API_LOCATION_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"
#include "util/slice.h"

#define LOCATION_CACHE_DEFAULT_CAPACITY 65536	/* entries */

struct location_cache;

struct location_cache_stats {
	uint64_t lookups;
	uint64_t hits;
	uint64_t misses;
	uint64_t inserts;
	uint64_t invalidations;	/* entries dropped as stale */
	uint64_t evictions;	/* entries dropped for room */
	uint64_t levels_walked;	/* as reported by location_cache_add_levels */
	size_t entries;
	size_t capacity;
};

/* A cache of at most capacity entries (0: the default).  0 or -ENOMEM. */
int location_cache_new(size_t capacity, struct location_cache **out);
/* Accepts NULL. */
void location_cache_free(struct location_cache *lc);

/*
 * The tablet whose cached range in table_id holds row: 0 and *tablet_id
 * (a hit), or BT_NOTFOUND (a miss).  Counts a lookup and a hit or miss.
 */
int location_cache_lookup(struct location_cache *lc, uint64_t table_id,
    struct slice row, uint64_t *tablet_id);

/*
 * As location_cache_lookup(), and the cached range's start and end copied
 * into start and end (either may be NULL; an empty end: to the end of
 * the table).  0, BT_NOTFOUND, or -ENOMEM (counted as a miss).
 */
int location_cache_lookup_range(struct location_cache *lc, uint64_t table_id,
    struct slice row, uint64_t *tablet_id, struct buf *start, struct buf *end);

/*
 * Cache that tablet_id serves [start, end) of table_id (an empty end: to
 * the end of the table; an empty start: from the beginning), replacing
 * every cached range of the table that overlaps it.  The bytes are
 * copied.  0, -EINVAL (start >= a non-empty end), or -ENOMEM (the cache
 * is unchanged).
 */
int location_cache_insert(struct location_cache *lc, uint64_t table_id,
    struct slice start, struct slice end, uint64_t tablet_id);

/* Drop the cached range of table_id holding row: 0, or BT_NOTFOUND when
 * none does. */
int location_cache_invalidate(struct location_cache *lc, uint64_t table_id,
    struct slice row);

/* Drop every range cached for tablet_id (it split, merged or moved), or
 * for a whole table (it was dropped): 0, or BT_NOTFOUND when none was. */
int location_cache_invalidate_tablet(struct location_cache *lc,
    uint64_t tablet_id);
int location_cache_invalidate_table(struct location_cache *lc,
    uint64_t table_id);

/* Count levels of the location hierarchy the caller walked after a miss. */
void location_cache_add_levels(struct location_cache *lc, unsigned levels);

/* A snapshot of the counters. */
void location_cache_get_stats(struct location_cache *lc,
    struct location_cache_stats *out);

#endif
