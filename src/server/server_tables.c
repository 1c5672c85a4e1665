/*
 * server_tables.c - the tablet server's table registry (server.tables) and
 * each table's tablet map: the bottom of src/server, which every other
 * file of it uses and which calls none of them.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "server/server_int.h"
#include "tablet/ikey.h"
#include "util/alloc.h"
#include "util/error.h"

struct tablet_map *
server_tablet_map_new(size_t count)
{
	struct tablet_map *m;

	assert(count > 0);	/* a map tiles the whole key space */
	m = bt_calloc(1, sizeof(*m) + (count + 1) * sizeof(m->tablets[0]));
	if (m == NULL)
		return NULL;
	atomic_init(&m->refs, 1);
	m->count = count;
	return m;
}

void
server_tablet_map_unref(struct tablet_map *m)
{
	if (m == NULL || atomic_fetch_sub(&m->refs, 1) != 1)
		return;
	for (size_t i = 0; i < m->count; i++)
		tablet_unref(m->tablets[i]);
	bt_free(m);
}

size_t
server_tablet_map_index(const struct tablet_map *m, struct slice row)
{
	size_t lo = 0, hi = m->count;

	/* The last tablet whose start is <= row; the first starts at "". */
	assert(m->count > 0 && tablet_start(m->tablets[0]).n == 0);
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (slice_compare(tablet_start(m->tablets[mid]), row) <= 0)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

struct tablet *
server_tablet_map_find(const struct tablet_map *m, struct slice row)
{
	return m->tablets[server_tablet_map_index(m, row)];
}

int
server_tablet_map_replace(const struct tablet_map *m, size_t first,
    size_t old_count, struct tablet *const *fresh, size_t fresh_count,
    struct tablet_map **out)
{
	struct tablet_map *nm;
	size_t k = 0;

	assert(first + old_count <= m->count && fresh_count > 0);
	nm = server_tablet_map_new(m->count - old_count + fresh_count);
	if (nm == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < first; i++) {
		tablet_ref(m->tablets[i]);
		nm->tablets[k++] = m->tablets[i];
	}
	for (size_t i = 0; i < fresh_count; i++)
		nm->tablets[k++] = fresh[i];
	for (size_t i = first + old_count; i < m->count; i++) {
		tablet_ref(m->tablets[i]);
		nm->tablets[k++] = m->tablets[i];
	}
	assert(k == nm->count);
	*out = nm;
	return 0;
}

struct tablet_map *
server_table_map(struct server_table *t)
{
	struct tablet_map *m;

	mutex_lock(&t->map_mu);
	m = t->map;
	atomic_fetch_add(&m->refs, 1);
	mutex_unlock(&t->map_mu);
	return m;
}

int
server_table_serves_row(struct server_table *t, uint64_t tablet,
    struct slice row)
{
	struct tablet *tab;
	int rc = 0;

	mutex_lock(&t->map_mu);
	tab = server_tablet_map_find(t->map, row);
	if (tablet_id(tab) != tablet)
		rc = BT_STALE;
	else if (!tablet_serving(tab))
		rc = BT_ENOTSERVING;
	mutex_unlock(&t->map_mu);
	if (rc == BT_ENOTSERVING)
		rc = bt_error_set(rc, "table %s: tablet %" PRIu64 " is not "
		    "served here", t->name, tablet);
	return rc;
}

struct tablet_map *
server_table_map_locked(struct server *s, struct server_table *t)
{
	mutex_assert_held(&s->apply_mu);
	return t->map;
}

void
server_table_map_install(struct server *s, struct server_table *t,
    struct tablet_map *m)
{
	struct tablet_map *old;

	mutex_assert_held(&s->apply_mu);
	assert(m->count > 0);
	mutex_lock(&t->map_mu);
	old = t->map;
	t->map = m;
	mutex_unlock(&t->map_mu);
	server_tablet_map_unref(old);
}

void
server_table_unref(struct server_table *t)
{
	if (t == NULL || atomic_fetch_sub(&t->refs, 1) != 1)
		return;
	server_tablet_map_unref(t->map);
	mutex_destroy(&t->map_mu);
	tablet_schema_unref(t->schema);
	bt_free(t->access);
	bt_free(t);
}

/* The table named name, or NULL; caller holds tables_mu. */
static struct server_table *
table_find_locked(struct server *s, const char *name)
{
	mutex_assert_held(&s->tables_mu);
	for (size_t i = 0; i < s->table_count; i++)
		if (strcmp(s->tables[i]->name, name) == 0)
			return s->tables[i];
	return NULL;
}

/* Find a table by name and take a reference; -ENOENT if absent. */
int
server_table_lookup(struct server *s, const char *name,
    struct server_table **out)
{
	struct server_table *t;

	if (name == NULL)
		return bt_error_set(-EINVAL, "no table name");
	mutex_lock(&s->tables_mu);
	if ((t = table_find_locked(s, name)) == NULL) {
		mutex_unlock(&s->tables_mu);
		return bt_error_set(-ENOENT, "table %s: no such table", name);
	}
	atomic_fetch_add(&t->refs, 1);
	mutex_unlock(&s->tables_mu);
	*out = t;
	return 0;
}

struct tablet_schema *
server_table_schema(struct server *s, struct server_table *t)
{
	struct tablet_schema *schema;

	mutex_lock(&s->tables_mu);
	schema = t->schema;
	tablet_schema_ref(schema);
	mutex_unlock(&s->tables_mu);
	return schema;
}

/* The id of the table named name, without taking a reference: an id is
 * only a key to its holder; -ENOENT if absent. */
int
server_table_id(struct server *s, const char *name, uint64_t *id)
{
	struct server_table *t;

	mutex_lock(&s->tables_mu);
	if ((t = table_find_locked(s, name)) != NULL)
		*id = t->id;
	mutex_unlock(&s->tables_mu);
	if (t == NULL)
		return bt_error_set(-ENOENT, "table %s: no such table", name);
	return 0;
}

struct server_table *
server_table_find_id_locked(struct server *s, uint64_t id)
{
	mutex_assert_held(&s->tables_mu);
	for (size_t i = 0; i < s->table_count; i++)
		if (s->tables[i]->id == id)
			return s->tables[i];
	return NULL;
}

int
server_seq_raise_locked(struct server *s, uint64_t max_seq,
    int64_t max_stamp)
{
	mutex_assert_held(&s->apply_mu);
	assert(atomic_load(&s->next_seq) == s->applied_upto + 1);
	if (max_seq >= IKEY_MAX_SEQ)
		return bt_error_set(-EOVERFLOW, "sequence numbers exhausted");
	if (max_seq > s->applied_upto) {
		atomic_store(&s->next_seq, max_seq + 1);
		s->applied_upto = max_seq;
		atomic_store_explicit(&s->visible_seq, max_seq,
		    memory_order_release);
	}
	server_stamp_raise(s, max_stamp);
	return 0;
}

uint64_t
server_tablet_size_max(const struct server *s)
{
	uint64_t limit = env_max_file_size(s->env);

	return limit == UINT64_MAX ? UINT64_MAX : limit / 2;
}

/* Build a table from its schema and tablets as the catalog has them,
 * opening the tablets as how says. */
int
server_table_build(struct server *s, const struct catalog_table *ct,
    const struct catalog_tablet *cts, size_t count,
    enum server_tablets_open how, struct server_table **out)
{
	struct server_table *t;
	int rc;

	if (count == 0)
		return bt_error_set(BT_ECORRUPT, "table %s: no tablets",
		    ct->name);
	if ((t = bt_calloc(1, sizeof(*t))) == NULL)
		return -ENOMEM;
	atomic_init(&t->refs, 1);
	mutex_init(&t->map_mu);
	snprintf(t->name, sizeof(t->name), "%s", ct->name);
	t->id = ct->id;
	t->tablet_size = ct->tablet_size;
	if (t->tablet_size > server_tablet_size_max(s))
		t->tablet_size = server_tablet_size_max(s);
	if ((rc = tablet_schema_new(ct, &t->schema)) < 0 ||
	    (rc = server_access_new(ct, &t->access)) < 0)
		goto out_free;
	if ((t->map = server_tablet_map_new(count)) == NULL) {
		rc = -ENOMEM;
		goto out_free;
	}
	for (size_t i = 0; i < count; i++) {
		struct tablet **tab = &t->map->tablets[i];

		if (how == SERVER_TABLETS_MADE)
			rc = tablet_open_files(&s->tenv, &cts[i], t->schema,
			    NULL, 0, tab);
		else if (how == SERVER_TABLETS_UNSERVED)
			rc = tablet_open_unserved(&s->tenv, &cts[i],
			    t->schema, tab);
		else
			rc = tablet_open(&s->tenv, &cts[i], t->schema, tab);
		if (rc < 0)
			goto out_free;
	}
	*out = t;
	return 0;
out_free:
	server_table_unref(t);
	return rc;
}

/* Load a table from the catalog, its tablets opened as how says. */
int
server_table_load(struct server *s, const char *name,
    enum server_tablets_open how, struct server_table **out)
{
	struct catalog_tablet *cts = NULL;
	struct catalog_table *ct = NULL;
	size_t count = 0;
	int rc;

	if ((rc = catalog_table_get(s->catalog, name, &ct)) != 0) {
		if (rc == BT_NOTFOUND)
			rc = bt_error_set(-ENOENT, "table %s: not in the "
			    "catalog", name);
		return rc;
	}
	/* None (BT_NOTFOUND) is the build's error. */
	if ((rc = catalog_tablets_list(s->catalog, ct->id, &cts,
	    &count)) >= 0)
		rc = server_table_build(s, ct, cts, count, how, out);
	catalog_tablets_free(cts, count);
	catalog_table_free(ct);
	return rc;
}

/* Room in s->tables for one more table. */
int
server_tables_reserve_locked(struct server *s)
{
	struct server_table **n;

	mutex_assert_held(&s->tables_mu);
	if (s->table_count < s->table_cap)
		return 0;
	if ((n = bt_realloc(s->tables, (s->table_cap + 8) *
	    sizeof(*n))) == NULL)
		return -ENOMEM;
	s->tables = n;
	s->table_cap += 8;
	return 0;
}

int
server_tables_add_locked(struct server *s, struct server_table *t)
{
	int rc;

	if ((rc = server_tables_reserve_locked(s)) < 0)
		return rc;
	s->tables[s->table_count++] = t;
	return 0;
}

/* References to every table, for work that runs without the mutex. */
int
server_tables_snapshot(struct server *s, struct server_table ***out,
    size_t *count)
{
	struct server_table **list;

	mutex_lock(&s->tables_mu);
	list = bt_calloc(s->table_count + 1, sizeof(*list));
	if (list == NULL) {
		mutex_unlock(&s->tables_mu);
		return -ENOMEM;
	}
	for (size_t i = 0; i < s->table_count; i++) {
		list[i] = s->tables[i];
		atomic_fetch_add(&list[i]->refs, 1);
	}
	*count = s->table_count;
	mutex_unlock(&s->tables_mu);
	*out = list;
	return 0;
}

void
server_tables_snapshot_free(struct server_table **list, size_t count)
{
	for (size_t i = 0; i < count; i++)
		server_table_unref(list[i]);
	bt_free(list);
}

/* A cell's server whose catalog is remote knows only the tables whose
 * tablets it serves or served, and its schemas lag the catalog's by up
 * to a poll: a table it does not know has no tablet served here. */
int
server_table_ref(struct server *s, const char *name,
    struct server_table **out, uint64_t *id)
{
	int rc;

	if ((rc = server_table_lookup(s, name, out)) == -ENOENT &&
	    s->catalog_remote)
		rc = bt_error_set(BT_ENOTSERVING, "table %s: no tablet of it "
		    "is served here", name);
	if (rc < 0)
		return rc;
	*id = (*out)->id;
	return 0;
}

/* The id a caller located is not here's: BT_ENOTSERVING, and a remote
 * catalog's schema is polled anew (server_table_id_check()). */
static int
table_id_stale(struct server *s, const char *name, uint64_t here,
    uint64_t id)
{
	if (s->catalog_remote)
		atomic_store(&s->poll_stale, true);
	return bt_error_set(BT_ENOTSERVING, "table %s: its id here is %"
	    PRIu64 ", the caller located %" PRIu64, name, here, id);
}

int
server_table_id_check(struct server *s, const char *name, uint64_t id)
{
	uint64_t here;

	if (server_table_id(s, name, &here) < 0) {
		bt_error_clear();
		return 0;	/* the call itself answers */
	}
	if (here == id)
		return 0;
	return table_id_stale(s, name, here, id);
}

int
server_table_id_hold(struct server *s, const char *name, uint64_t id,
    struct server_table **out)
{
	struct server_table *t;
	uint64_t here;

	*out = NULL;
	if (server_table_lookup(s, name, &t) < 0) {
		bt_error_clear();
		return 0;	/* the call itself answers */
	}
	if ((here = t->id) != id) {
		server_table_unref(t);
		return table_id_stale(s, name, here, id);
	}
	*out = t;
	return 0;
}

int
server_locate(struct server *s, const char *table, struct slice row,
    struct catalog_location *loc, int *levels)
{
	struct server_table *t;
	int rc;

	if ((rc = server_table_lookup(s, table, &t)) < 0)
		return rc;
	rc = catalog_location_walk(s->catalog, t->id, row, loc, levels);
	if (rc == BT_NOTFOUND)
		rc = bt_error_set(BT_ECORRUPT, "table %s: no location for a "
		    "row", table);
	server_table_unref(t);
	return rc;
}
