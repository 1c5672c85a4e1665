/*
 * cell_locations.c - a cell client's tablet locations (cell_locations.h).
 *
 * The ranges live in a location_cache (its own lock); the names of
 * tables, the servers and the tablet map under mu.  Servers are interned
 * (a client meets a few, and a tablet names one by its index), tables
 * are searched linearly (a client uses a few), and the tablet map is an
 * array sorted by tablet id.
 */
#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "api/cell_locations.h"
#include "api/location_cache.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/mutex.h"

struct cl_table {
	char *name;
	uint64_t id;
};

struct cl_tablet {
	uint64_t id;
	size_t server;		/* index into servers */
};

struct cell_locations {
	struct location_cache *ranges;
	size_t capacity;
	struct mutex mu;
	struct cl_table *tables;	/* guarded by mu, as below */
	size_t table_count;
	char **servers;
	size_t server_count;
	struct cl_tablet *tablets;	/* sorted by id */
	size_t tablet_count;
};

int
cell_locations_new(size_t capacity, struct cell_locations **out)
{
	struct cell_locations *l;
	int rc;

	if ((l = bt_calloc(1, sizeof(*l))) == NULL)
		return -ENOMEM;
	l->capacity = capacity ? capacity : LOCATION_CACHE_DEFAULT_CAPACITY;
	if ((rc = location_cache_new(l->capacity, &l->ranges)) < 0)
		goto out_free;
	if ((rc = mutex_init(&l->mu)) < 0)
		goto out_ranges;
	l->tablets = bt_calloc(l->capacity, sizeof(*l->tablets));
	if (l->tablets == NULL) {
		rc = -ENOMEM;
		goto out_mu;
	}
	*out = l;
	return 0;
out_mu:
	mutex_destroy(&l->mu);
out_ranges:
	location_cache_free(l->ranges);
out_free:
	bt_free(l);
	return rc;
}

void
cell_locations_free(struct cell_locations *l)
{
	if (l == NULL)
		return;
	for (size_t i = 0; i < l->table_count; i++)
		bt_free(l->tables[i].name);
	for (size_t i = 0; i < l->server_count; i++)
		bt_free(l->servers[i]);
	bt_free(l->tables);
	bt_free(l->servers);
	bt_free(l->tablets);
	mutex_destroy(&l->mu);
	location_cache_free(l->ranges);
	bt_free(l);
}

/* The entry of table, or NULL.  Caller holds mu. */
static struct cl_table *
table_find(struct cell_locations *l, const char *table)
{
	mutex_assert_held(&l->mu);
	for (size_t i = 0; i < l->table_count; i++)
		if (strcmp(l->tables[i].name, table) == 0)
			return &l->tables[i];
	return NULL;
}

/* The index of tablet id in the map, or where it would go. */
static size_t
tablet_index(const struct cell_locations *l, uint64_t id, bool *found)
{
	size_t lo = 0, hi = l->tablet_count;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (l->tablets[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = lo < l->tablet_count && l->tablets[lo].id == id;
	return lo;
}

int
cell_locations_find(struct cell_locations *l, const char *table,
    struct slice row, struct cell_location *out)
{
	struct cl_table *t;
	uint64_t table_id, tablet_id;
	size_t i;
	bool found;
	int rc;

	mutex_lock(&l->mu);
	t = table_find(l, table);
	table_id = t != NULL ? t->id : 0;
	mutex_unlock(&l->mu);
	if (t == NULL)
		return BT_NOTFOUND;
	if ((rc = location_cache_lookup_range(l->ranges, table_id, row,
	    &tablet_id, &out->start, &out->end)) != 0)
		return rc;
	mutex_lock(&l->mu);
	i = tablet_index(l, tablet_id, &found);
	if (found)
		memcpy(out->server, l->servers[l->tablets[i].server],
		    strlen(l->servers[l->tablets[i].server]) + 1);
	mutex_unlock(&l->mu);
	if (!found)
		return BT_NOTFOUND;
	out->table_id = table_id;
	out->tablet_id = tablet_id;
	return 0;
}

/* The id cached for table set to id: 0, or -ENOMEM.  *old is the id it
 * replaced, 0 for none.  Caller holds mu. */
static int
table_set(struct cell_locations *l, const char *table, uint64_t id,
    uint64_t *old)
{
	struct cl_table *t, *p;
	size_t n = strlen(table) + 1;

	*old = 0;
	if ((t = table_find(l, table)) != NULL) {
		if (t->id != id)
			*old = t->id;
		t->id = id;
		return 0;
	}
	p = bt_realloc(l->tables, (l->table_count + 1) * sizeof(*p));
	if (p == NULL)
		return -ENOMEM;
	l->tables = p;
	if ((p[l->table_count].name = bt_malloc(n)) == NULL)
		return -ENOMEM;
	memcpy(p[l->table_count].name, table, n);
	p[l->table_count++].id = id;
	return 0;
}

/* The index of server, interned: 0 or -ENOMEM.  Caller holds mu. */
static int
server_intern(struct cell_locations *l, const char *server, size_t *index)
{
	size_t n = strlen(server) + 1;
	char **p;

	for (size_t i = 0; i < l->server_count; i++)
		if (strcmp(l->servers[i], server) == 0) {
			*index = i;
			return 0;
		}
	p = bt_realloc(l->servers, (l->server_count + 1) * sizeof(*p));
	if (p == NULL)
		return -ENOMEM;
	l->servers = p;
	if ((p[l->server_count] = bt_malloc(n)) == NULL)
		return -ENOMEM;
	memcpy(p[l->server_count], server, n);
	*index = l->server_count++;
	return 0;
}

/* Map tablet id to server index: 0 or -ENOMEM.  Caller holds mu. */
static int
tablet_set(struct cell_locations *l, uint64_t id, size_t server)
{
	bool found;
	size_t i = tablet_index(l, id, &found);

	if (!found && l->tablet_count == l->capacity) {
		/* Full: start again (every row misses once). */
		l->tablet_count = 0;
		i = 0;
	}
	if (!found) {
		memmove(&l->tablets[i + 1], &l->tablets[i],
		    (l->tablet_count - i) * sizeof(l->tablets[0]));
		l->tablet_count++;
	}
	l->tablets[i].id = id;
	l->tablets[i].server = server;
	assert(l->tablet_count <= l->capacity);
	return 0;
}

int
cell_locations_insert(struct cell_locations *l, const char *table,
    uint64_t table_id, struct slice start, struct slice end,
    uint64_t tablet_id, const char *server)
{
	uint64_t old;
	size_t si;
	int rc;

	if (strlen(server) >= CELL_SERVER_MAX)
		return bt_error_set(-EINVAL, "a server's address over %d "
		    "bytes", CELL_SERVER_MAX - 1);
	mutex_lock(&l->mu);
	rc = table_set(l, table, table_id, &old);
	mutex_unlock(&l->mu);
	if (rc < 0)
		return rc;
	if (old != 0)
		(void)location_cache_invalidate_table(l->ranges, old);
	if (server[0] == '\0') {	/* unassigned: nothing to cache */
		(void)location_cache_invalidate(l->ranges, table_id, start);
		return 0;
	}
	if ((rc = location_cache_insert(l->ranges, table_id, start, end,
	    tablet_id)) < 0)
		return rc;
	mutex_lock(&l->mu);
	if ((rc = server_intern(l, server, &si)) == 0)
		rc = tablet_set(l, tablet_id, si);
	mutex_unlock(&l->mu);
	return rc;
}

void
cell_locations_forget_row(struct cell_locations *l, uint64_t table_id,
    struct slice row)
{
	(void)location_cache_invalidate(l->ranges, table_id, row);
}

/* A tablet out of the map is not found, whatever range the cache still
 * holds for it, so the map alone is cleared. */
void
cell_locations_forget_server(struct cell_locations *l, const char *server)
{
	size_t kept = 0;

	mutex_lock(&l->mu);
	for (size_t i = 0; i < l->tablet_count; i++)
		if (strcmp(l->servers[l->tablets[i].server], server) != 0)
			l->tablets[kept++] = l->tablets[i];
	l->tablet_count = kept;
	mutex_unlock(&l->mu);
}

size_t
cell_locations_count(struct cell_locations *l)
{
	size_t n;

	mutex_lock(&l->mu);
	n = l->tablet_count;
	mutex_unlock(&l->mu);
	return n;
}
