/*
 * cell_locations.h - where a cell's client sends a row's call
 * (docs/design.md section 5, "Clients locate by tablet"): what LOCATE
 * answered, kept as three maps: a table's name to its id, (table id,
 * row) to the tablet holding the row (location_cache.h), and a tablet
 * to the address of the server that serves it ("HOST:PORT").
 *
 * A row's location is known only when all three hold it; an entry is
 * never known stale by the cache itself: the client drops it when the
 * server it names answers BT_ENOTSERVING (cell_locations_forget_row) or
 * cannot be reached (cell_locations_forget_server), and asks LOCATE
 * again.  Memory is bounded by the capacity: the tablet map is emptied
 * when it would grow past it (every row then misses once), and the range
 * cache evicts as location_cache.h says.
 *
 * Thread-safe: every function may be called from any thread.
 */
#ifndef TABLETFS_API_CELL_LOCATIONS_H
#define TABLETFS_API_CELL_LOCATIONS_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"
#include "util/slice.h"

#define CELL_SERVER_MAX 256	/* an address "HOST:PORT" and its NUL */

struct cell_locations;

/* A located row: its tablet, that tablet's range [start, end) (an empty
 * end: to the end of the table) and its server.  start and end are the
 * caller's (buf_init before, buf_release after). */
struct cell_location {
	uint64_t table_id;
	uint64_t tablet_id;
	struct buf start, end;
	char server[CELL_SERVER_MAX];
};

/* At most capacity tablets (0: LOCATION_CACHE_DEFAULT_CAPACITY).  0 or
 * -ENOMEM. */
int cell_locations_new(size_t capacity, struct cell_locations **out);
/* Accepts NULL. */
void cell_locations_free(struct cell_locations *l);

/* The location of row in table: 0 and *out filled, BT_NOTFOUND (not
 * cached: LOCATE it), or -ENOMEM. */
int cell_locations_find(struct cell_locations *l, const char *table,
    struct slice row, struct cell_location *out);

/*
 * Cache that tablet_id of table (whose id is table_id) serves [start,
 * end) at server.  A table id other than the one cached for the name
 * (the table was dropped and made again) forgets the old one's ranges.
 * server "" (unassigned) caches the table's id only.  0, -EINVAL (a bad
 * range, or an address over CELL_SERVER_MAX - 1 bytes) or -ENOMEM.
 */
int cell_locations_insert(struct cell_locations *l, const char *table,
    uint64_t table_id, struct slice start, struct slice end,
    uint64_t tablet_id, const char *server);

/* Forget the cached range of table_id that holds row. */
void cell_locations_forget_row(struct cell_locations *l, uint64_t table_id,
    struct slice row);
/* Forget every tablet cached as served by server: it failed. */
void cell_locations_forget_server(struct cell_locations *l,
    const char *server);

/* How many tablets are cached with a server (for the tests). */
size_t cell_locations_count(struct cell_locations *l);

#endif
