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

bool
server_cell_dir_is_below(const char *dir)
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
	if (!server_cell_dir_is_below(o->dir))
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

	assert(s->cell && server_cell_dir_is_below(p));
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

struct logs_pending {
	struct server *s;
	const char *servers;
	size_t segments;
	char first[256];
};

static int
logs_pending_one(void *arg, const char *name)
{
	struct logs_pending *lp = arg;
	uint64_t *segments = NULL;
	size_t count = 0;
	char *log;
	int rc;

	if ((log = bt_malloc(strlen(lp->servers) + strlen(name) + 8)) == NULL)
		return -ENOMEM;
	sprintf(log, "%s/%s/log", lp->servers, name);
	rc = env_path_exists(lp->s->env, log) ? log_list_segments(lp->s->env,
	    log, &segments, &count) : 0;
	bt_free(log);
	bt_free(segments);
	if (rc < 0)
		return rc;
	if (count > 0 && lp->segments == 0)
		snprintf(lp->first, sizeof(lp->first), "%s", name);
	lp->segments += count;
	return 0;
}

int
server_cell_logs_pending(struct server *s, const char *path)
{
	struct logs_pending lp = { .s = s };
	char *servers;
	int rc = 0;

	assert(!s->cell);
	if ((servers = bt_malloc(strlen(path) + sizeof("/servers"))) == NULL)
		return -ENOMEM;
	sprintf(servers, "%s/servers", path);
	lp.servers = servers;
	if (env_path_exists(s->env, servers) &&
	    (rc = env_dir_list(s->env, servers, logs_pending_one, &lp)) == 0 &&
	    lp.segments > 0)
		rc = bt_error_set(-EBUSY, "%s: the commit logs of a cell's "
		    "tablet servers (%zu segments, servers/%s/log and others) "
		    "hold writes that no SSTable has yet: serve the store as "
		    "a cell again (tabletd), whose master recovers them", path,
		    lp.segments, lp.first);
	bt_free(servers);
	return rc;
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
 * of the kept tablets prepared, and the tablets served here that the
 * catalog no longer has, to discard; built before anything is installed.
 */
struct refresh {
	struct tablet_schema *schema;
	struct server_access *access;
	struct tablet_map *map;
	struct tablet_schema_change **changes;	/* of map, NULL: none */
	struct tablet **gone;			/* referenced */
	size_t gone_count;
};

static void
refresh_release(struct refresh *r)
{
	/* Installed, the map is the table's and the changes are gone. */
	for (size_t i = 0; r->changes != NULL && r->map != NULL &&
	    i < r->map->count; i++)
		tablet_schema_change_free(r->changes[i]);
	bt_free(r->changes);
	for (size_t i = 0; i < r->gone_count; i++)
		tablet_unref(r->gone[i]);
	bt_free(r->gone);
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

/* The index of tablet id in cts, or n. */
static size_t
rows_find_id(const struct catalog_tablet *cts, size_t n, uint64_t id)
{
	size_t i;

	for (i = 0; i < n && cts[i].id != id; i++)
		;
	return i;
}

/*
 * A served tablet that the catalog no longer has (its table dropped, or
 * given to another server and split or merged there) goes to r->gone,
 * to be discarded; one that the catalog has with another range cannot
 * be, since only this server splits or merges what it serves.
 */
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
	    (r->changes = bt_calloc(n + 1, sizeof(*r->changes))) == NULL ||
	    (r->gone = bt_calloc(old->count + 1, sizeof(*r->gone))) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < old->count; i++) {
		struct tablet *tab = old->tablets[i];

		if (!tablet_serving(tab))
			continue;
		if (rows_find_id(cts, n, tablet_id(tab)) < n) {
			served++;
		} else {
			tablet_ref(tab);
			r->gone[r->gone_count++] = tab;
		}
	}
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
	if ((rc = server_seq_raise_created_locked(s,
	    tablet_schema_created_seq_max(r->schema))) < 0) {
		mutex_unlock(&s->apply_mu);
		return rc;
	}
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
	/* In the apply turn: no write group is applying to them. */
	for (size_t i = 0; i < r->gone_count; i++)
		tablet_serving_stop(r->gone[i]);
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

/*
 * Discard t, which the catalog no longer has: writes that still hold it
 * fail (dropped), its tablets stop serving, and their memtables go with
 * the last reference, unflushed (the data was dropped; what of it is in
 * this server's log no tablet replays, as no tablet names its table).
 * Writers of it waiting for memtable room leave.  Caller holds work_mu.
 */
static void
table_discard(struct server *s, struct server_table *t)
{
	struct tablet_map *m;

	mutex_assert_held(&s->work_mu);
	atomic_store(&t->dropped, true);
	mutex_lock(&s->apply_mu);
	m = server_table_map_locked(s, t);
	for (size_t i = 0; i < m->count; i++)
		tablet_serving_stop(m->tablets[i]);
	mutex_unlock(&s->apply_mu);
	mutex_lock(&s->bg_mu);
	pthread_cond_broadcast(&s->bg_done_cv);
	mutex_unlock(&s->bg_mu);
}

/* Add t (the caller's reference) to the registry, in place of a table of
 * the same name that the catalog no longer has (dropped and made again
 * at the root's server), which is then discarded here (table_discard).
 * Caller holds work_mu. */
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
		table_discard(s, gone);
		server_table_unref(gone);
	}
	return rc;
}

/* Put the catalog's table ct, its tablets not served, in the registry
 * in place of the table of its name (table_add); *out referenced.
 * Caller holds work_mu. */
static int
table_replace(struct server *s, const struct catalog_table *ct,
    const struct catalog_tablet *cts, size_t n, struct server_table **out)
{
	struct server_table *t = NULL;
	int rc;

	mutex_assert_held(&s->work_mu);
	if ((rc = server_table_build(s, ct, cts, n, SERVER_TABLETS_UNSERVED,
	    &t)) < 0)
		return rc;
	mutex_lock(&s->apply_mu);
	rc = server_seq_raise_created_locked(s,
	    tablet_schema_created_seq_max(t->schema));
	mutex_unlock(&s->apply_mu);
	if (rc < 0) {
		server_table_unref(t);
		return rc;
	}
	atomic_fetch_add(&t->refs, 1);	/* the registry's */
	if ((rc = table_add(s, t)) < 0) {
		atomic_fetch_sub(&t->refs, 1);
		server_table_unref(t);
		return rc;
	}
	*out = t;
	return 0;
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
		if ((rc = table_replace(s, ct, cts, n, &t)) < 0)
			goto out;
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
	return server_cell_table_sync(s, t);
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

/* Take t out of the registry, if it is still there, and discard it
 * (table_discard).  Caller holds work_mu.  Returns 0. */
static int
table_remove(struct server *s, struct server_table *t)
{
	bool found = false;

	mutex_assert_held(&s->work_mu);
	mutex_lock(&s->tables_mu);
	for (size_t i = 0; i < s->table_count && !found; i++)
		if (s->tables[i] == t) {
			s->tables[i] = s->tables[--s->table_count];
			found = true;
		}
	mutex_unlock(&s->tables_mu);
	if (found) {
		table_discard(s, t);
		server_table_unref(t);	/* the registry's */
	}
	return 0;
}

/* How often server_cell_table_sync() reads the catalog again when t's
 * tablets changed while it read. */
#define SYNC_TRIES 3

/*
 * One try of server_cell_table_sync(): the catalog read before work_mu
 * (an RPC would hold it up), applied under it only if t's map is still
 * the one from before the read (else -EAGAIN): a tablet loaded or split
 * here meanwhile must not be taken for one the catalog dropped.
 */
static int
table_sync_once(struct server *s, struct server_table *t)
{
	struct tablet_map *before = server_table_map(t), *now;
	struct catalog_tablet *cts = NULL;
	struct catalog_table *ct = NULL;
	struct server_table *made = NULL;
	size_t n = 0;
	int rc;

	rc = catalog_table_get(s->catalog, t->name, &ct);
	if (rc == 0 && (rc = catalog_tablets_list(s->catalog, ct->id, &cts,
	    &n)) == BT_NOTFOUND) {
		catalog_table_free(ct);		/* dropped since */
		ct = NULL;
	}
	if (rc < 0)
		goto out;
	mutex_lock(&s->work_mu);
	now = server_table_map(t);
	if (now != before)
		rc = -EAGAIN;
	else if (atomic_load(&t->dropped))
		rc = 0;		/* replaced meanwhile (a load's reread) */
	else if (ct == NULL)
		rc = table_remove(s, t);
	else if (ct->id != t->id)
		rc = table_replace(s, ct, cts, n, &made);
	else
		rc = table_refresh_locked(s, t, ct, cts, n);
	mutex_unlock(&s->work_mu);
	server_tablet_map_unref(now);
	server_table_unref(made);
out:
	catalog_tablets_free(cts, n);
	catalog_table_free(ct);
	server_tablet_map_unref(before);
	return rc;
}

int
server_cell_table_sync(struct server *s, struct server_table *t)
{
	int rc = -EAGAIN;

	mutex_assert_not_held(&s->work_mu);
	assert(s->catalog_remote);
	for (int i = 0; i < SYNC_TRIES && rc == -EAGAIN; i++)
		rc = table_sync_once(s, t);
	if (rc == -EAGAIN)
		rc = bt_error_set(rc, "table %s: its tablets kept changing "
		    "while it was read from the catalog", t->name);
	return rc;
}
