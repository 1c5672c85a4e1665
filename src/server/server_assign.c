/*
 * server_assign.c - tablets unloaded, loaded again, and recovered from
 * another server's commit log in a running server: the tablet server's
 * side of a cell's assignment (Bigtable 5.2-5.3, docs/design.md section
 * 5).  A tablet that is not served stays in its
 * table's map as one that serves nothing (tablet_open_unserved()), so
 * that the map still tiles the table and a row of it finds the tablet
 * that answers BT_ENOTSERVING.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "server/server_int.h"
#include "util/alloc.h"
#include "util/error.h"

/* The directories a recovery reads (server_tablet_recover()). */
struct log_dirs {
	const char *const *dirs;
	size_t count;
};

/* The index of tablet id in m, or m->count when m has none. */
static size_t
map_index_of(const struct tablet_map *m, uint64_t id)
{
	size_t i;

	for (i = 0; i < m->count; i++)
		if (tablet_id(m->tablets[i]) == id)
			break;
	return i;
}

static int
no_tablet(struct server_table *t, uint64_t id)
{
	return bt_error_set(-ENOENT, "table %s: no tablet %" PRIu64, t->name,
	    id);
}

/* Put fresh[k] (its reference taken on success) at index at[k] of t's
 * map m, for k < n, all or none: m is the current map (only work_mu's
 * holder installs maps).  Caller holds apply_mu. */
static int
map_put(struct server *s, struct server_table *t, struct tablet_map *m,
    const size_t *at, struct tablet *const *fresh, size_t n)
{
	struct tablet_map *nm;
	int rc;

	mutex_assert_held(&s->apply_mu);
	assert(server_table_map_locked(s, t) == m && n > 0);
	if ((rc = server_tablet_map_replace(m, at[0], 1, fresh, 1, &nm)) < 0)
		return rc;
	/* The others in place: nm is no one else's yet. */
	for (size_t k = 1; k < n; k++) {
		tablet_unref(nm->tablets[at[k]]);	/* m keeps its own */
		nm->tablets[at[k]] = fresh[k];
	}
	server_table_map_install(s, t, nm);
	return 0;
}

/* A catalog row of tab's range and redo point (its start and end to be
 * released with buf_release()). */
static int
row_of(struct tablet *tab, uint64_t table_id, struct catalog_tablet *row)
{
	int rc;

	*row = (struct catalog_tablet){ .id = tablet_id(tab),
	    .table_id = table_id, .flushed_seq = tablet_flushed_seq(tab) };
	buf_init(&row->start);
	buf_init(&row->end);
	if ((rc = buf_set(&row->start, tablet_start(tab).p,
	    tablet_start(tab).n)) == 0)
		rc = buf_set(&row->end, tablet_end(tab).p, tablet_end(tab).n);
	return rc;
}

static int
unload_locked(struct server *s, struct server_table *t, const uint64_t *ids,
    size_t n, const struct log_dirs *unused)
{
	uint64_t id = ids[0];
	struct tablet_map *m = server_table_map(t);
	struct tablet_schema *schema = NULL;
	struct tablet *tab, *none = NULL;
	struct catalog_tablet row;
	size_t i = map_index_of(m, id);
	int rc;

	(void)unused;
	assert(n == 1);
	mutex_assert_held(&s->work_mu);
	buf_init(&row.start);
	buf_init(&row.end);
	if (i == m->count) {
		rc = no_tablet(t, id);
		goto out;
	}
	tab = m->tablets[i];
	if (!tablet_serving(tab)) {
		rc = 0;
		goto out;
	}
	/* The first minor compaction, while the tablet still serves. */
	if ((rc = master_preflush(s, tab)) < 0)
		goto out;
	schema = server_table_schema(s, t);
	/* The second, of what came meanwhile, in the apply turn: after it
	 * the redo point covers every write the tablet took. */
	mutex_lock(&s->apply_mu);
	if ((rc = s->broken) < 0 || (rc = master_drain_locked(s, tab)) < 0)
		goto out_unlock;
	if ((rc = row_of(tab, t->id, &row)) < 0 ||
	    (rc = tablet_open_unserved(&s->tenv, &row, schema, &none)) < 0)
		goto out_unlock;
	if ((rc = map_put(s, t, m, &i, &none, 1)) < 0) {
		tablet_unref(none);
		goto out_unlock;
	}
	/* Readers that still hold the old map stop too. */
	tablet_serving_stop(tab);
out_unlock:
	mutex_unlock(&s->apply_mu);
out:
	buf_release(&row.start);
	buf_release(&row.end);
	tablet_schema_unref(schema);
	server_tablet_map_unref(m);
	return rc;
}

/* Open tablet id of t from its catalog row (files and redo point), not
 * yet in any map. */
static int
open_from_catalog(struct server *s, struct server_table *t, uint64_t id,
    struct tablet **out)
{
	struct tablet_schema *schema;
	struct catalog_tablet *rows = NULL;
	size_t n = 0, k;
	int rc;

	if ((rc = catalog_tablets_list(s->catalog, t->id, &rows, &n)) < 0)
		return rc;
	for (k = 0; k < n && rows[k].id != id; k++)
		;
	if (k == n) {
		rc = bt_error_set(BT_ECORRUPT, "table %s: tablet %" PRIu64
		    " is not in the catalog", t->name, id);
	} else {
		schema = server_table_schema(s, t);
		rc = tablet_open(&s->tenv, &rows[k], schema, out);
		tablet_schema_unref(schema);
	}
	catalog_tablets_free(rows, n);
	return rc;
}

static int
load_locked(struct server *s, struct server_table *t, const uint64_t *ids,
    size_t n, const struct log_dirs *unused)
{
	uint64_t id = ids[0];
	struct tablet_map *m = server_table_map(t);
	struct tablet *tab = NULL;
	size_t i = map_index_of(m, id);
	int rc;

	(void)unused;
	assert(n == 1);
	mutex_assert_held(&s->work_mu);
	if (i == m->count) {
		rc = no_tablet(t, id);
		goto out;
	}
	if (tablet_serving(m->tablets[i])) {
		rc = 0;
		goto out;
	}
	if ((rc = open_from_catalog(s, t, id, &tab)) < 0)
		goto out;
	/* Its redo point covers every number it was given (an unload or a
	 * recovery flushed them): number above it. */
	mutex_lock(&s->apply_mu);
	if ((rc = server_seq_raise_locked(s, tablet_flushed_seq(tab), 0)) < 0 ||
	    (rc = map_put(s, t, m, &i, &tab, 1)) < 0)
		tablet_unref(tab);
	mutex_unlock(&s->apply_mu);
out:
	server_tablet_map_unref(m);
	return rc;
}

/* Replay into tab the records of its rows in every segment of log_dir
 * above its redo point, raising rp's highest sequence number and stamp. */
static int
replay_from(struct server *s, const char *log_dir, struct replay *rp)
{
	uint64_t *segments = NULL;
	size_t count = 0;
	int rc;

	rp->dir = log_dir;
	rp->name = log_dir;
	if ((rc = log_list_segments(s->env, log_dir, &segments, &count)) < 0)
		return bt_error_set(rc, "%s: %s", log_dir, bt_strerror(rc));
	for (size_t i = 0; i < count && rc == 0; i++) {
		bool damaged = false, torn = false;

		rc = server_replay_segment(s, rp, segments[i], i + 1 == count,
		    &damaged, &torn);
	}
	bt_free(segments);
	return rc;
}

/* log_dir as the env names it: on a cell's server it is below the store
 * (server_tablet_recover() checks).  path (size bytes) holds it when it
 * is made here. */
static const char *
log_dir_path(struct server *s, const char *log_dir, char *path, size_t size)
{
	char *store;

	if (!s->cell)
		return log_dir;
	/* The store is sst/'s parent (home_dir is the server's own). */
	if ((store = env_path_parent(s->sst_dir)) == NULL)
		return NULL;
	snprintf(path, size, "%s/%s", store, log_dir);
	bt_free(store);
	return path;
}

/*
 * Recover tablets ids (n) of t from the logs of from in one pass over
 * them, then flush each, and serve them all or none (server.h).
 */
static int
recover_locked(struct server *s, struct server_table *t, const uint64_t *ids,
    size_t n, const struct log_dirs *from)
{
	struct tablet_map *m = server_table_map(t);
	struct tablet **tabs;
	struct replay rp;
	size_t *at;
	char path[4096];
	int rc = 0;

	mutex_assert_held(&s->work_mu);
	tabs = bt_calloc(n, sizeof(*tabs));
	at = bt_calloc(n, sizeof(*at));
	if (tabs == NULL || at == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t k = 0; k < n && rc == 0; k++) {
		at[k] = map_index_of(m, ids[k]);
		for (size_t j = 0; j < k && rc == 0; j++)
			if (at[j] == at[k])
				rc = bt_error_set(-EINVAL, "table %s: tablet "
				    "%" PRIu64 " named twice", t->name, ids[k]);
		if (rc < 0)
			break;
		if (at[k] == m->count)
			rc = no_tablet(t, ids[k]);
		else if (tablet_serving(m->tablets[at[k]]))
			rc = bt_error_set(-EBUSY, "table %s: tablet %" PRIu64
			    " is served here: unload it first", t->name,
			    ids[k]);
		else
			rc = open_from_catalog(s, t, ids[k], &tabs[k]);
	}
	if (rc < 0)
		goto out;
	/* Directory by directory: a tablet's records above its redo point
	 * are in one of them only (server.h). */
	rp = (struct replay){ .only = tabs, .only_count = n,
	    .only_table = t->id };
	for (size_t k = 0; k < from->count && rc == 0; k++) {
		const char *dir = log_dir_path(s, from->dirs[k], path,
		    sizeof(path));

		rc = dir == NULL ? -ENOMEM : replay_from(s, dir, &rp);
	}
	/* Each flushed, so that the master may remove the logs read once
	 * every tablet is served: BT_NOTFOUND is a tablet that took no
	 * record, and the next are flushed still. */
	for (size_t k = 0; k < n && rc == 0; k++) {
		if ((rc = tablet_freeze(tabs[k])) == 0)
			rc = tablet_flush(tabs[k], false);
		if (rc == BT_NOTFOUND)
			rc = 0;
	}
	if (rc < 0)
		goto out;
	mutex_lock(&s->apply_mu);
	if ((rc = server_seq_raise_locked(s, rp.max_seq,
	    rp.max_stamp)) == 0 &&
	    (rc = map_put(s, t, m, at, tabs, n)) == 0)
		memset(tabs, 0, n * sizeof(*tabs));
	mutex_unlock(&s->apply_mu);
out:
	for (size_t k = 0; tabs != NULL && k < n; k++)
		tablet_unref(tabs[k]);
	bt_free(tabs);
	bt_free(at);
	server_tablet_map_unref(m);
	return rc;
}

/*
 * The table named table, referenced, for an assignment of its tablets
 * ids (n): on a cell's server, read again from the catalog when this
 * server does not know the table or one of the tablets (server.h).
 * Caller holds work_mu.
 */
static int
assign_table(struct server *s, const char *table, const uint64_t *ids,
    size_t n, struct server_table **out)
{
	struct server_table *t = NULL;
	bool known;
	int rc;

	mutex_assert_held(&s->work_mu);
	rc = server_table_lookup(s, table, &t);
	known = rc == 0;
	for (size_t k = 0; k < n && known; k++)
		known = server_cell_table_knows(t, ids[k]);
	if (!s->cell || known || (rc < 0 && rc != -ENOENT)) {
		*out = t;
		return rc;
	}
	server_table_unref(t);
	return server_cell_table_reread(s, table, out);
}

/* Run fn on tablets ids (n) of table under work_mu (so that no flush,
 * compaction, split or merge runs beside it). */
static int
assign_run(struct server *s, const char *table, const uint64_t *ids,
    size_t n, const struct log_dirs *from,
    int (*fn)(struct server *, struct server_table *, const uint64_t *,
    size_t, const struct log_dirs *))
{
	struct server_table *t;
	int rc;

	if (s->opts.read_only)
		return bt_error_set(-EROFS, "the store is open read-only");
	if (table == NULL)
		return bt_error_set(-EINVAL, "no table name");
	if (n == 0)
		return bt_error_set(-EINVAL, "no tablet");
	mutex_lock(&s->work_mu);
	if ((rc = assign_table(s, table, ids, n, &t)) == 0) {
		rc = fn(s, t, ids, n, from);
		server_table_unref(t);
	}
	mutex_unlock(&s->work_mu);
	return rc;
}

int
server_tablet_unload(struct server *s, const char *table, uint64_t id)
{
	return assign_run(s, table, &id, 1, NULL, unload_locked);
}

int
server_tablet_load(struct server *s, const char *table, uint64_t id)
{
	return assign_run(s, table, &id, 1, NULL, load_locked);
}

int
server_tablet_recover(struct server *s, const char *table, uint64_t id,
    const char *const *log_dirs, size_t count)
{
	return server_tablets_recover(s, table, &id, 1, log_dirs, count);
}

int
server_tablets_recover(struct server *s, const char *table,
    const uint64_t *ids, size_t n, const char *const *log_dirs,
    size_t count)
{
	struct log_dirs from = { log_dirs, count };

	if (log_dirs == NULL || count == 0)
		return bt_error_set(-EINVAL, "no log directory to recover "
		    "from");
	for (size_t i = 0; i < count; i++)
		if (log_dirs[i] == NULL || log_dirs[i][0] == '\0')
			return bt_error_set(-EINVAL, "an empty log directory "
			    "to recover from");
		else if (s->cell && !server_cell_dir_is_below(log_dirs[i]))
			return bt_error_set(-EINVAL, "log directory \"%s\": "
			    "not a path below the store", log_dirs[i]);
	return assign_run(s, table, ids, n, &from, recover_locked);
}
