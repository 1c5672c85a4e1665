/*
 * server_cell.c - a tablet server that is one of a cell's
 * (server_options.dir; docs/design.md section 5, "Tablets one by one"):
 * its options and its own directory, and what it learns from the catalog
 * after it opened, since the root's server makes tables, splits, merges
 * and changes schemas meanwhile.  A table read again keeps the tablets
 * served here as they are and puts tablets that serve nothing
 * (tablet_open_unserved()) for the others, so that its map still tiles
 * the table.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "server/server_int.h"
#include "util/alloc.h"
#include "util/error.h"

/* Whether dir is a path below the store: relative, its components
 * neither empty nor "." nor "..". */
static bool
dir_is_below(const char *dir)
{
	const char *p = dir;

	if (*dir == '\0' || *dir == '/')
		return false;
	while (*p != '\0') {
		size_t n = strcspn(p, "/");

		if (n == 0 || (n == 1 && p[0] == '.') ||
		    (n == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		p += n;
		if (*p == '/' && *++p == '\0')
			return false;
	}
	return true;
}

int
server_cell_options_check(const struct server_options *o)
{
	size_t n;

	if (o->dir == NULL)
		return o->catalog == NULL ? 0 : bt_error_set(-EINVAL,
		    "a catalog given is for a cell's tablet server, which "
		    "has a directory of its own (server_options.dir)");
	if (!dir_is_below(o->dir))
		return bt_error_set(-EINVAL, "server directory \"%s\": not a "
		    "path below the store", o->dir);
	if (o->read_only)
		return bt_error_set(-EINVAL, "a cell's tablet server is not "
		    "read-only");
	if (o->name == NULL || (n = strlen(o->name)) == 0 ||
	    n > CATALOG_SERVER_MAX)
		return bt_error_set(-EINVAL, "a cell's tablet server needs "
		    "a name of 1 to %d bytes", CATALOG_SERVER_MAX);
	for (size_t i = 0; i < n; i++)
		if (o->name[i] <= ' ' || o->name[i] > '~')
			return bt_error_set(-EINVAL, "server name \"%s\": "
			    "printable bytes only, no blank", o->name);
	return 0;
}

/* path + "/" + name, or NULL. */
static char *
path_join(const char *path, const char *name, size_t name_len)
{
	size_t n = strlen(path) + name_len + 2;
	char *p = bt_malloc(n);

	if (p != NULL)
		snprintf(p, n, "%s/%.*s", path, (int)name_len, name);
	return p;
}

/* Make dir in its parent unless it is there, and sync the parent then. */
static int
dir_make(struct env *env, const char *parent, const char *dir)
{
	bool existed = env_path_exists(env, dir);
	int rc;

	if ((rc = env_dir_create(env, dir)) < 0 || existed)
		return rc;
	return env_dir_sync(env, parent);
}

int
server_cell_dirs_make(struct server *s, const char *path)
{
	static const char *const subs[] = { "log", "tmp" };
	const char *p = s->opts.dir;
	char *parent = NULL, *cur;
	int rc = 0;

	assert(s->cell && dir_is_below(p));
	if ((cur = bt_strdup(path)) == NULL)
		return -ENOMEM;
	/* Each component of dir, as mkdir -p does. */
	while (*p != '\0' && rc == 0) {
		size_t n = strcspn(p, "/");

		bt_free(parent);
		parent = cur;
		if ((cur = path_join(parent, p, n)) == NULL)
			rc = -ENOMEM;
		else
			rc = dir_make(s->env, parent, cur);
		p += n + (p[n] == '/');
	}
	for (size_t i = 0; i < 2 && rc == 0; i++) {
		char *sub = path_join(cur, subs[i], strlen(subs[i]));

		rc = sub == NULL ? -ENOMEM : dir_make(s->env, cur, sub);
		bt_free(sub);
	}
	bt_free(parent);
	bt_free(cur);
	return rc;
}

/*
 * A cell's server starts its log empty: segments already in its log/
 * are of tablets it no longer serves (it opens every tablet not served),
 * which a replay could not put anywhere and the close would delete.
 * They are left to the master, which recovers them as a dead server's.
 */
int
server_cell_log_check(struct server *s)
{
	uint64_t *segments = NULL;
	size_t count = 0;
	int rc;

	assert(s->cell);
	if ((rc = log_list_segments(s->env, s->log_dir, &segments,
	    &count)) < 0)
		return rc;
	bt_free(segments);
	if (count > 0)
		return bt_error_set(-EEXIST, "%s: holds %zu log segments of "
		    "an earlier run (a server opens a new epoch's directory; "
		    "the master recovers the old one's tablets from it)",
		    s->log_dir, count);
	return 0;
}

/* The index of tablet id in m, or m->count. */
static size_t
map_find_id(const struct tablet_map *m, uint64_t id)
{
	size_t i;

	for (i = 0; i < m->count && tablet_id(m->tablets[i]) != id; i++)
		;
	return i;
}

bool
server_cell_table_knows(struct server_table *t, uint64_t id)
{
	struct tablet_map *m = server_table_map(t);
	bool known = map_find_id(m, id) < m->count;

	server_tablet_map_unref(m);
	return known;
}

/*
 * A table read again: its new schema and access, and its new map (each
 * tablet of it kept from the old map when the catalog has it with the
 * same id and range, else opened not served), with the schema changes
 * of the kept tablets prepared; built before anything is installed.
 */
struct refresh {
	struct tablet_schema *schema;
	struct server_access *access;
	struct tablet_map *map;
	struct tablet_schema_change **changes;	/* of map, NULL: none */
};

static void
refresh_release(struct refresh *r)
{
	/* Installed, the map is the table's and the changes are gone. */
	for (size_t i = 0; r->changes != NULL && r->map != NULL &&
	    i < r->map->count; i++)
		tablet_schema_change_free(r->changes[i]);
	bt_free(r->changes);
	server_tablet_map_unref(r->map);
	bt_free(r->access);
	tablet_schema_unref(r->schema);
}

static bool
tablet_same(struct tablet *tab, const struct catalog_tablet *ct)
{
	return tablet_id(tab) == ct->id &&
	    slice_equal(tablet_start(tab), buf_slice(&ct->start)) &&
	    slice_equal(tablet_end(tab), buf_slice(&ct->end));
}

static int
refresh_build(struct server *s, struct server_table *t,
    const struct tablet_map *old, const struct catalog_table *ct,
    const struct catalog_tablet *cts, size_t n, struct refresh *r)
{
	size_t served = 0, kept = 0;
	int rc;

	memset(r, 0, sizeof(*r));
	if (n == 0)
		return bt_error_set(BT_ECORRUPT, "table %s: no tablets",
		    ct->name);
	if ((rc = tablet_schema_new(ct, &r->schema)) < 0 ||
	    (rc = server_access_new(ct, &r->access)) < 0)
		return rc;
	if ((r->map = server_tablet_map_new(n)) == NULL ||
	    (r->changes = bt_calloc(n + 1, sizeof(*r->changes))) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < old->count; i++)
		served += tablet_serving(old->tablets[i]);
	for (size_t i = 0; i < n; i++) {
		size_t k = map_find_id(old, cts[i].id);
		struct tablet **tab = &r->map->tablets[i];

		if (k < old->count && tablet_same(old->tablets[k], &cts[i])) {
			*tab = old->tablets[k];
			tablet_ref(*tab);
			kept += tablet_serving(*tab);
			rc = tablet_schema_prepare(*tab, r->schema,
			    &r->changes[i]);
		} else {
			rc = tablet_open_unserved(&s->tenv, &cts[i],
			    r->schema, tab);
		}
		if (rc < 0)
			return rc;
	}
	/* Only this server splits or merges what it serves. */
	if (kept != served)
		return bt_error_set(BT_ECORRUPT, "table %s: a tablet served "
		    "here changed in the catalog", t->name);
	return 0;
}

/* Install r in t (it takes r's map, schema and access): what the catalog
 * says of t from now on.  Caller holds work_mu. */
static int
refresh_install(struct server *s, struct server_table *t, struct refresh *r)
{
	struct server_access *old_access;
	struct tablet_schema *old;
	int rc = 0;

	mutex_assert_held(&s->work_mu);
	mutex_lock(&s->apply_mu);
	server_table_map_install(s, t, r->map);
	mutex_lock(&s->tables_mu);
	old = t->schema;
	t->schema = r->schema;
	old_access = t->access;
	t->access = r->access;
	mutex_unlock(&s->tables_mu);
	for (size_t i = 0; i < r->map->count; i++) {
		int trc = r->changes[i] == NULL ? 0 :
		    tablet_schema_install(r->changes[i]);

		r->changes[i] = NULL;
		if (rc == 0)
			rc = trc;
	}
	/* As a schema change that memory could not follow. */
	if (rc < 0 && s->broken == 0)
		s->broken = rc;
	mutex_unlock(&s->apply_mu);
	r->map = NULL;
	r->schema = NULL;
	r->access = NULL;
	tablet_schema_unref(old);
	bt_free(old_access);
	return rc;
}

/* The catalog's table and tablets: by name when id is 0, else by id. */
static int
catalog_read(struct server *s, const char *name, uint64_t id,
    struct catalog_table **ct, struct catalog_tablet **cts, size_t *n)
{
	int rc;

	*ct = NULL;
	*cts = NULL;
	*n = 0;
	rc = id == 0 ? catalog_table_get(s->catalog, name, ct) :
	    catalog_table_get_by_id(s->catalog, id, ct);
	if (rc == BT_NOTFOUND)
		rc = bt_error_set(-ENOENT, "table %s: not in the catalog",
		    name);
	if (rc == 0 && (rc = catalog_tablets_list(s->catalog, (*ct)->id, cts,
	    n)) == BT_NOTFOUND)
		rc = bt_error_set(-ENOENT, "table %s: not in the catalog",
		    name);
	if (rc != 0) {
		catalog_table_free(*ct);
		*ct = NULL;
	}
	return rc < 0 ? rc : 0;
}

/* Bring t to ct and its tablets; caller holds work_mu. */
static int
table_refresh_locked(struct server *s, struct server_table *t,
    const struct catalog_table *ct, const struct catalog_tablet *cts,
    size_t n)
{
	struct tablet_map *old = server_table_map(t);
	struct refresh r;
	int rc;

	mutex_assert_held(&s->work_mu);
	if ((rc = refresh_build(s, t, old, ct, cts, n, &r)) == 0)
		rc = refresh_install(s, t, &r);
	refresh_release(&r);
	server_tablet_map_unref(old);
	return rc;
}

/* Add t (the caller's reference) to the registry, in place of a table of
 * the same name that the catalog no longer has (dropped and made again
 * at the root's server), which is then as dropped here. */
static int
table_add(struct server *s, struct server_table *t)
{
	struct server_table *gone = NULL;
	int rc = 0;

	mutex_lock(&s->tables_mu);
	for (size_t i = 0; i < s->table_count && gone == NULL; i++)
		if (strcmp(s->tables[i]->name, t->name) == 0) {
			gone = s->tables[i];
			s->tables[i] = t;
		}
	if (gone == NULL)
		rc = server_tables_add_locked(s, t);
	mutex_unlock(&s->tables_mu);
	if (gone != NULL) {
		atomic_store(&gone->dropped, true);
		server_table_unref(gone);
	}
	return rc;
}

int
server_cell_table_reread(struct server *s, const char *name,
    struct server_table **out)
{
	struct catalog_tablet *cts = NULL;
	struct catalog_table *ct = NULL;
	struct server_table *t = NULL;
	size_t n = 0;
	int rc;

	mutex_assert_held(&s->work_mu);
	assert(s->cell);
	if ((rc = catalog_read(s, name, 0, &ct, &cts, &n)) < 0)
		return rc;
	if (server_table_lookup(s, name, &t) == 0 && t->id == ct->id) {
		if ((rc = table_refresh_locked(s, t, ct, cts, n)) < 0)
			goto out;
	} else {
		server_table_unref(t);
		t = NULL;
		if ((rc = server_table_build(s, ct, cts, n,
		    SERVER_TABLETS_UNSERVED, &t)) < 0)
			goto out;
		atomic_fetch_add(&t->refs, 1);	/* the registry's */
		if ((rc = table_add(s, t)) < 0) {
			atomic_fetch_sub(&t->refs, 1);
			goto out;
		}
	}
	*out = t;
	t = NULL;
out:
	server_table_unref(t);
	catalog_tablets_free(cts, n);
	catalog_table_free(ct);
	return rc;
}

int
server_cell_table_refresh(struct server *s, struct server_table *t)
{
	struct catalog_tablet *cts = NULL;
	struct catalog_table *ct = NULL;
	size_t n = 0;
	int rc;

	uint64_t splits = atomic_load(&s->splits);

	mutex_assert_not_held(&s->work_mu);
	assert(s->catalog_remote);
	/* Read before work_mu, which an RPC would hold up. */
	if ((rc = catalog_read(s, t->name, t->id, &ct, &cts, &n)) < 0)
		return rc;
	mutex_lock(&s->work_mu);
	/* A split here since the read (master.c): read again. */
	if (atomic_load(&s->splits) != splits) {
		catalog_tablets_free(cts, n);
		catalog_table_free(ct);
		rc = catalog_read(s, t->name, t->id, &ct, &cts, &n);
	}
	if (rc == 0)
		rc = table_refresh_locked(s, t, ct, cts, n);
	mutex_unlock(&s->work_mu);
	catalog_tablets_free(cts, n);
	catalog_table_free(ct);
	return rc;
}

int
server_cell_tablets_assign(struct server *s, struct server_table *t)
{
	struct tablet_map *m = server_table_map(t);
	int rc = 0;

	assert(s->cell && !s->catalog_remote);
	for (size_t i = 0; i < m->count && rc == 0; i++)
		rc = catalog_tablet_assign(s->catalog,
		    tablet_id(m->tablets[i]), s->name);
	server_tablet_map_unref(m);
	if (rc < 0)
		rc = bt_error_set(rc, "table %s: made, but its tablets are "
		    "not all assigned to %s: %s", t->name, s->name,
		    bt_error_detail());
	return rc;
}
