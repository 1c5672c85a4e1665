/*
 * catalog_location.c - the three-level location hierarchy (format.h has
 * the layout and the triggers that maintain it): the walk, one call per
 * level, its consistency check, tablet assignment, the upgrade from a
 * version-1 catalog, and catalog_tablet_replace(), the one transaction of
 * a split or a merge.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog_int.h"
#include "catalog/format.h"
#include "util/alloc.h"
#include "util/error.h"

#define KEY_ "(table_id, is_last, end_row)"
#define MEND_ "(end_table, end_last, end_row)"

enum loc_stmt_id {
	LOC_ROOT_GET,
	LOC_IS_ROOT,
	LOC_META_FOR_KEY,
	LOC_META_COVERS,
	LOC_FIND,
	LOC_ASSIGN,
	LOC_META_ASSIGN,
	LOC_UNASSIGNED,
	LOC_META_LIST,
	LOC_TABLET_GET,
	LOC_TABLET_DELETE,
	LOC_TABLET_INSERT,
	LOC_CHECK_ROOTS,
	LOC_CHECK_COUNTS,
	LOC_CHECK_TABLETS,
	LOC_CHECK_LOCATIONS,
	LOC_CHECK_BARE,
	LOC_STMT_COUNT
};

struct catalog_location_stmts {
	sqlite3_stmt *st[LOC_STMT_COUNT];
};

static const char *const loc_sql[LOC_STMT_COUNT] = {
	[LOC_ROOT_GET] = "SELECT value FROM meta WHERE key = '"
	    CATALOG_META_ROOT_TABLET "'",
	[LOC_IS_ROOT] =
	    "SELECT 1 FROM meta_tablets WHERE id = ?1 AND parent_id IS NULL",
	[LOC_META_FOR_KEY] =
	    "SELECT id FROM meta_tablets WHERE parent_id = ?1"
	    " AND " MEND_ " > (?2, 0, ?3)"
	    " ORDER BY end_table, end_last, end_row LIMIT 1",
	/* Whether M covers lookup key K: M is the first METADATA tablet
	 * ending above K (one index seek, as level 1 does it). */
	[LOC_META_COVERS] =
	    "SELECT m.id = (SELECT p.id FROM meta_tablets p"
	    "  WHERE p.parent_id = m.parent_id"
	    "  AND (p.end_table, p.end_last, p.end_row) > (?2, 0, ?3)"
	    "  ORDER BY p.end_table, p.end_last, p.end_row LIMIT 1)"
	    " FROM meta_tablets m WHERE m.id = ?1 AND m.parent_id IS NOT NULL",
	[LOC_FIND] =
	    "SELECT tablet_id, table_id, start_row, end_row, server FROM"
	    " locations WHERE meta_id = ?1 AND " KEY_ " > (?2, 0, ?3)"
	    " ORDER BY table_id, is_last, end_row LIMIT 1",
	[LOC_ASSIGN] = "UPDATE tablets SET server = ?2 WHERE id = ?1",
	[LOC_META_ASSIGN] = "UPDATE meta_tablets SET server = ?2 WHERE id = ?1",
	[LOC_UNASSIGNED] =
	    "SELECT t.id, t.table_id, t.start_row, t.end_row, t.server,"
	    " coalesce(l.meta_id, 0) FROM tablets t"
	    " LEFT JOIN locations l ON l.tablet_id = t.id"
	    " WHERE t.server = '' ORDER BY t.table_id, t.start_row",
	[LOC_META_LIST] =
	    "SELECT id, coalesce(parent_id, 0), end_table, end_last, end_row,"
	    " row_count, server FROM meta_tablets"
	    " ORDER BY parent_id IS NOT NULL, end_table, end_last, end_row",
	[LOC_TABLET_GET] =
	    "SELECT table_id, start_row, end_row FROM tablets WHERE id = ?1",
	[LOC_TABLET_DELETE] = "DELETE FROM tablets WHERE id = ?1",
	[LOC_TABLET_INSERT] =
	    "INSERT INTO tablets"
	    " (id, table_id, start_row, end_row, flushed_seq, server,"
	    " auto_split) VALUES (" CATALOG_TABLET_ID_NEXT_SQL ","
	    " ?1, ?2, ?3, ?4, ?5, ?6)",
	[LOC_CHECK_ROOTS] =
	    "SELECT id FROM meta_tablets WHERE parent_id IS NULL ORDER BY id",
	[LOC_CHECK_COUNTS] =
	    "SELECT m.id, coalesce(m.parent_id, 0), m.end_table, m.end_last,"
	    " m.row_count,"
	    " (SELECT count(*) FROM locations l WHERE l.meta_id = m.id)"
	    " FROM meta_tablets m WHERE m.parent_id IS NOT NULL"
	    " ORDER BY m.end_table, m.end_last, m.end_row",
	[LOC_CHECK_TABLETS] =
	    "SELECT t.id, t.table_id, t.start_row, t.end_row, t.server,"
	    " l.tablet_id IS NOT NULL, l.table_id, l.start_row, l.end_row,"
	    " l.is_last, l.server FROM tablets t"
	    " LEFT JOIN locations l ON l.tablet_id = t.id"
	    " ORDER BY t.table_id, t.start_row",
	/* Each location with the METADATA tablet that should hold it (the
	 * first ending at or above its key) and the end before that one. */
	[LOC_CHECK_LOCATIONS] =
	    "SELECT l.tablet_id, l.meta_id, l.table_id, l.start_row,"
	    " t.id IS NOT NULL,"
	    " (SELECT m.id FROM meta_tablets m WHERE m.parent_id = ?1"
	    "  AND (m.end_table, m.end_last, m.end_row) >="
	    "   (l.table_id, l.is_last, l.end_row)"
	    "  ORDER BY m.end_table, m.end_last, m.end_row LIMIT 1),"
	    " EXISTS (SELECT 1 FROM meta_tablets m WHERE m.parent_id = ?1"
	    "  AND (m.end_table, m.end_last, m.end_row) >"
	    "   (l.table_id, 0, l.start_row)"
	    "  AND (m.end_table, m.end_last, m.end_row) <"
	    "   (l.table_id, l.is_last, l.end_row))"
	    " FROM locations l LEFT JOIN tablets t ON t.id = l.tablet_id"
	    " ORDER BY l.table_id, l.is_last, l.end_row",
	[LOC_CHECK_BARE] =
	    ("SELECT id FROM tables WHERE NOT EXISTS"
	    " (SELECT 1 FROM tablets WHERE table_id = tables.id) ORDER BY id"),
};

int
catalog_location_prepare(struct catalog *c)
{
	struct catalog_location_stmts *ls;
	int src;

	if ((ls = bt_calloc(1, sizeof(*ls))) == NULL)
		return -ENOMEM;
	c->loc = ls;
	for (int i = 0; i < LOC_STMT_COUNT; i++) {
		src = sqlite3_prepare_v3(c->db, loc_sql[i], -1,
		    SQLITE_PREPARE_PERSISTENT, &ls->st[i], NULL);
		if (src != SQLITE_OK)
			return catalog_sqlite_error(c, src, loc_sql[i]);
	}
	return 0;
}

void
catalog_location_finalize(struct catalog *c)
{
	if (c->loc == NULL)
		return;
	for (int i = 0; i < LOC_STMT_COUNT; i++)
		sqlite3_finalize(c->loc->st[i]);
	bt_free(c->loc);
	c->loc = NULL;
}

static sqlite3_stmt *
loc_stmt(struct catalog *c, enum loc_stmt_id id)
{
	mutex_assert_held(&c->mu);
	catalog_stmt_done(c->loc->st[id]);
	return c->loc->st[id];
}

int
catalog_location_upgrade(struct catalog *c)
{
	static const char script[] =
	    "BEGIN IMMEDIATE;\n"
	    CATALOG_SCHEMA_V2_SQL
	    /* Touching every range fires the update trigger, which gives
	     * each existing tablet its location row. */
	    "UPDATE tablets SET start_row = start_row;\n"
	    "PRAGMA user_version = 2;\n"
	    "COMMIT;\n";
	int src;

	src = sqlite3_exec(c->db, script, NULL, NULL, NULL);
	if (src == SQLITE_OK)
		return 0;
	src = catalog_sqlite_error(c, src, "upgrade to version 2");
	if (!sqlite3_get_autocommit(c->db))
		sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
	return src;
}

void
catalog_location_init(struct catalog_location *loc)
{
	memset(loc, 0, sizeof(*loc));
	buf_init(&loc->start);
	buf_init(&loc->end);
}

void
catalog_location_release(struct catalog_location *loc)
{
	buf_release(&loc->start);
	buf_release(&loc->end);
}

void
catalog_locations_free(struct catalog_location *locs, size_t count)
{
	if (locs == NULL)
		return;
	for (size_t i = 0; i < count; i++)
		catalog_location_release(&locs[i]);
	bt_free(locs);
}

static void
meta_tablet_release(void *elem)
{
	struct catalog_meta_tablet *m = elem;

	buf_release(&m->end_row);
}

void
catalog_meta_tablets_free(struct catalog_meta_tablet *m, size_t count)
{
	if (m == NULL)
		return;
	for (size_t i = 0; i < count; i++)
		meta_tablet_release(&m[i]);
	bt_free(m);
}

static struct slice
loc_column_slice(sqlite3_stmt *st, int col)
{
	return slice_make(sqlite3_column_blob(st, col),
	    (size_t)sqlite3_column_bytes(st, col));
}

bool
catalog_server_valid(const char *server)
{
	size_t n;

	if (server == NULL)
		return false;
	for (n = 0; server[n] != '\0'; n++)
		if (n >= CATALOG_SERVER_MAX || server[n] <= ' ' ||
		    server[n] > '~')
			return false;
	return true;
}

/* ---- The walk ---- */

static int
root_txn(struct catalog *c, uint64_t *root_id)
{
	sqlite3_stmt *st = loc_stmt(c, LOC_ROOT_GET);
	int rc = catalog_one_u64(c, st, 0, root_id, NULL);

	if (rc == BT_NOTFOUND)
		return bt_error_set(BT_ECORRUPT, "catalog %s: no root location "
		    "record", c->path);
	return rc;
}

int
catalog_location_root(struct catalog *c, uint64_t *root_id)
{
	uint64_t id = 0;
	int rc;

	if ((rc = catalog_begin(c, false)) < 0)
		return rc;
	if ((rc = catalog_end(c, root_txn(c, &id))) == 0)
		*root_id = id;
	return rc;
}

/*
 * Level 1.  A caller holding root_id from an earlier call has it verified
 * (verify); within one walk's transaction it cannot have changed.
 */
static int
metadata_txn(struct catalog *c, uint64_t root_id, uint64_t table_id,
    struct slice row, bool verify, uint64_t *meta_id)
{
	sqlite3_stmt *st;
	uint64_t one;
	int rc;

	st = loc_stmt(c, LOC_IS_ROOT);
	rc = verify ? catalog_one_u64(c, st, catalog_bind(c, st, "u",
	    root_id), &one, NULL) : 0;
	if (rc != 0)
		return rc == BT_NOTFOUND ? BT_STALE : rc;
	st = loc_stmt(c, LOC_META_FOR_KEY);
	rc = catalog_one_u64(c, st, catalog_bind(c, st, "uub", root_id,
	    table_id, &row), meta_id, NULL);
	if (rc == BT_NOTFOUND)
		return bt_error_set(BT_ECORRUPT, "catalog %s: root tablet %"
		    PRIu64 " has no METADATA tablet for table %" PRIu64,
		    c->path, root_id, table_id);
	return rc;
}

int
catalog_location_metadata(struct catalog *c, uint64_t root_id,
    uint64_t table_id, struct slice row, uint64_t *meta_tablet_id)
{
	uint64_t id = 0;
	int rc;

	if ((rc = catalog_begin(c, false)) < 0)
		return rc;
	rc = catalog_end(c, metadata_txn(c, root_id, table_id, row, true,
	    &id));
	if (rc == 0)
		*meta_tablet_id = id;
	return rc;
}

/* Level 2; verify as for metadata_txn: whether meta_id still covers the
 * key. */
static int
find_txn(struct catalog *c, uint64_t meta_id, uint64_t table_id,
    struct slice row, bool verify, struct catalog_location *out)
{
	sqlite3_stmt *st;
	uint64_t covers = 1;
	int rc = 0;

	if (verify) {
		st = loc_stmt(c, LOC_META_COVERS);
		rc = catalog_one_u64(c, st, catalog_bind(c, st, "uub", meta_id,
		    table_id, &row), &covers, NULL);
	}
	if (rc < 0)
		return rc;
	if (rc == BT_NOTFOUND || covers == 0)
		return BT_STALE;
	st = loc_stmt(c, LOC_FIND);
	if ((rc = catalog_bind(c, st, "uub", meta_id, table_id, &row)) < 0 ||
	    (rc = catalog_step(c, st)) < 0)
		goto out;
	if (rc == SQLITE_DONE ||
	    catalog_column_u64(st, 1) != table_id) {
		rc = BT_NOTFOUND;
		goto out;
	}
	if (slice_compare(loc_column_slice(st, 2), row) > 0) {
		rc = bt_error_set(BT_ECORRUPT, "catalog %s: tablet %" PRIu64
		    " found for a row before its start", c->path,
		    catalog_column_u64(st, 0));
		goto out;
	}
	out->tablet_id = catalog_column_u64(st, 0);
	out->table_id = table_id;
	out->meta_tablet_id = meta_id;
	if ((rc = catalog_column_blob(c, st, 2, &out->start)) < 0 ||
	    (rc = catalog_column_blob(c, st, 3, &out->end)) < 0 ||
	    (rc = catalog_column_text(c, st, 4, out->server,
	    sizeof(out->server))) < 0)
		goto out;
	rc = 0;
out:
	catalog_stmt_done(st);
	return rc;
}

int
catalog_location_find(struct catalog *c, uint64_t meta_tablet_id,
    uint64_t table_id, struct slice row, struct catalog_location *out)
{
	int rc;

	if ((rc = catalog_begin(c, false)) < 0)
		return rc;
	return catalog_end(c, find_txn(c, meta_tablet_id, table_id, row, true,
	    out));
}

int
catalog_location_walk_txn(struct catalog *c, uint64_t table_id,
    struct slice row, struct catalog_location *out, int *walked)
{
	uint64_t root_id, meta_id;
	int rc;

	catalog_assert_in_call(c);
	*walked = 0;
	if ((rc = root_txn(c, &root_id)) != 0)
		return rc;
	(*walked)++;
	/* One transaction: nothing can move between the levels, so no
	 * level needs verifying. */
	if ((rc = metadata_txn(c, root_id, table_id, row, false,
	    &meta_id)) != 0)
		return rc;
	(*walked)++;
	rc = find_txn(c, meta_id, table_id, row, false, out);
	*walked += rc >= 0;
	return rc;
}

int
catalog_location_walk(struct catalog *c, uint64_t table_id,
    struct slice row, struct catalog_location *out, int *levels)
{
	int rc, walked = 0;

	if ((rc = catalog_begin(c, false)) < 0)
		return rc;
	rc = catalog_end(c, catalog_location_walk_txn(c, table_id, row, out,
	    &walked));
	if (levels != NULL)
		*levels = walked;
	return rc;
}

/* ---- Listing and assignment ---- */

/* A row of LOC_META_LIST. */
static int
meta_tablet_read(struct catalog *c, sqlite3_stmt *st, void *elem, void *arg)
{
	struct catalog_meta_tablet *m = elem;
	int rc;

	buf_init(&m->end_row);
	m->id = catalog_column_u64(st, 0);
	m->parent_id = catalog_column_u64(st, 1);
	m->end_table = catalog_column_u64(st, 2);
	if (m->end_table == (uint64_t)INT64_MAX)
		m->end_table = UINT64_MAX;
	m->end_last = sqlite3_column_int(st, 3) != 0;
	m->row_count = catalog_column_u64(st, 5);
	if ((rc = catalog_column_blob(c, st, 4, &m->end_row)) < 0 ||
	    (rc = catalog_column_text(c, st, 6, m->server,
	    sizeof(m->server))) < 0)
		return rc;
	return 0;
}

int
catalog_meta_tablets_list(struct catalog *c, struct catalog_meta_tablet **out,
    size_t *count)
{
	int rc;

	if ((rc = catalog_begin(c, false)) < 0)
		return rc;
	return catalog_end(c, catalog_rows_load(c, loc_stmt(c, LOC_META_LIST),
	    0, sizeof(**out), meta_tablet_read, NULL, meta_tablet_release,
	    out, count));
}

static int
assign(struct catalog *c, enum loc_stmt_id which, const char *what,
    uint64_t id, const char *server)
{
	sqlite3_stmt *st;
	int rc;

	if (!catalog_server_valid(server))
		return bt_error_set(-EINVAL, "catalog: bad server name for "
		    "%s %" PRIu64, what, id);
	if ((rc = catalog_begin(c, true)) < 0)
		return rc;
	st = loc_stmt(c, which);
	if ((rc = catalog_bind(c, st, "ut", id, server)) == 0 &&
	    (rc = catalog_exec(c, st)) == 0 && sqlite3_changes(c->db) == 0)
		rc = bt_error_set(-ENOENT, "catalog: no %s %" PRIu64, what,
		    id);
	catalog_stmt_done(st);
	return catalog_end(c, rc);
}

int
catalog_tablet_assign(struct catalog *c, uint64_t tablet_id,
    const char *server)
{
	return assign(c, LOC_ASSIGN, "tablet", tablet_id, server);
}

int
catalog_meta_tablet_assign(struct catalog *c, uint64_t meta_tablet_id,
    const char *server)
{
	return assign(c, LOC_META_ASSIGN, "METADATA tablet", meta_tablet_id,
	    server);
}

static void
location_release(void *elem)
{
	catalog_location_release(elem);
}

/* A row of LOC_UNASSIGNED. */
static int
unassigned_read(struct catalog *c, sqlite3_stmt *st, void *elem, void *arg)
{
	struct catalog_location *l = elem;
	int rc;

	catalog_location_init(l);
	l->tablet_id = catalog_column_u64(st, 0);
	l->table_id = catalog_column_u64(st, 1);
	l->meta_tablet_id = catalog_column_u64(st, 5);
	if ((rc = catalog_column_blob(c, st, 2, &l->start)) < 0 ||
	    (rc = catalog_column_blob(c, st, 3, &l->end)) < 0)
		return rc;
	return 0;
}

int
catalog_tablets_unassigned(struct catalog *c, struct catalog_location **out,
    size_t *count)
{
	int rc;

	if ((rc = catalog_begin(c, false)) < 0)
		return rc;
	return catalog_end(c, catalog_rows_load(c, loc_stmt(c, LOC_UNASSIGNED),
	    0, sizeof(**out), unassigned_read, NULL, location_release, out,
	    count));
}

/* ---- Replacing tablets: split and merge ---- */

struct old_tablet {
	uint64_t id;
	struct buf start;
	struct buf end;
};

static int
old_compare(const void *a, const void *b)
{
	const struct old_tablet *x = a, *y = b;

	return slice_compare(buf_slice(&x->start), buf_slice(&y->start));
}

/* Load the old tablets, sorted by start, and check they are one table's
 * contiguous run; *table_id receives the table. */
static int
old_load(struct catalog *c, struct old_tablet *old, size_t n,
    uint64_t *table_id)
{
	sqlite3_stmt *st;
	uint64_t tid;
	int rc;

	for (size_t i = 0; i < n; i++) {
		st = loc_stmt(c, LOC_TABLET_GET);
		if ((rc = catalog_bind(c, st, "u", old[i].id)) < 0 ||
		    (rc = catalog_step(c, st)) < 0)
			goto out;
		if (rc == SQLITE_DONE) {
			rc = bt_error_set(-ENOENT, "catalog: no tablet %" PRIu64,
			    old[i].id);
			goto out;
		}
		tid = catalog_column_u64(st, 0);
		if (i > 0 && tid != *table_id) {
			rc = bt_error_set(-EINVAL, "catalog: tablets %" PRIu64
			    " and %" PRIu64 " are of different tables",
			    old[0].id, old[i].id);
			goto out;
		}
		*table_id = tid;
		if ((rc = catalog_column_blob(c, st, 1, &old[i].start)) < 0 ||
		    (rc = catalog_column_blob(c, st, 2, &old[i].end)) < 0)
			goto out;
		catalog_stmt_done(st);
	}
	qsort(old, n, sizeof(*old), old_compare);
	for (size_t i = 0; i + 1 < n; i++)
		if (old[i].end.n == 0 || !slice_equal(buf_slice(&old[i].end),
		    buf_slice(&old[i + 1].start)))
			return bt_error_set(-EINVAL, "catalog: tablets %" PRIu64
			    " and %" PRIu64 " are not adjacent", old[i].id,
			    old[i + 1].id);
	return 0;
out:
	catalog_stmt_done(st);
	return rc;
}

static int
replace_insert(struct catalog *c, uint64_t table_id,
    const struct catalog_tablet_spec *sp, uint64_t *id)
{
	sqlite3_stmt *st = loc_stmt(c, LOC_TABLET_INSERT);
	int rc;

	if ((rc = catalog_bind(c, st, "ubbutu", table_id, &sp->start,
	    &sp->end, sp->flushed_seq, sp->server != NULL ? sp->server :
	    "", (uint64_t)sp->auto_split)) < 0 ||
	    (rc = catalog_exec(c, st)) < 0) {
		catalog_stmt_done(st);
		return rc;
	}
	*id = (uint64_t)sqlite3_last_insert_rowid(c->db);
	for (size_t i = 0; i < sp->file_count; i++)
		if ((rc = catalog_file_add(c, table_id, *id,
		    &sp->files[i])) < 0)
			return rc;
	return 0;
}

/* The replacement's body; fenced for server unless it is NULL. */
static int
replace_txn(struct catalog *c, const char *server, struct old_tablet *old,
    size_t old_count, const struct catalog_tablet_spec *specs, size_t count,
    uint64_t *ids)
{
	sqlite3_stmt *st;
	uint64_t table_id = 0;
	int rc;

	if ((rc = old_load(c, old, old_count, &table_id)) < 0)
		return rc;
	for (size_t i = 0; i < old_count && server != NULL; i++)
		if ((rc = catalog_tablet_server_check(c, old[i].id,
		    server)) != 0)
			return rc;	/* old_load found each: not BT_NOTFOUND */
	if (!slice_equal(specs[0].start, buf_slice(&old[0].start)) ||
	    !slice_equal(specs[count - 1].end,
	    buf_slice(&old[old_count - 1].end)))
		return bt_error_set(-EINVAL, "catalog: the new tablets do not "
		    "cover exactly the range of tablets %" PRIu64 "..%" PRIu64,
		    old[0].id, old[old_count - 1].id);
	/* Deletes first: a successor may reuse a start or an end. */
	for (size_t i = 0; i < old_count; i++) {
		st = loc_stmt(c, LOC_TABLET_DELETE);
		if ((rc = catalog_bind(c, st, "u", old[i].id)) < 0 ||
		    (rc = catalog_exec(c, st)) < 0) {
			catalog_stmt_done(st);
			return rc;
		}
	}
	for (size_t i = 0; i < count; i++) {
		struct catalog_tablet_spec sp = specs[i];

		if (server != NULL)
			sp.server = server;
		if ((rc = replace_insert(c, table_id, &sp, &ids[i])) < 0)
			return rc;
	}
	return 0;
}

/* The checks that need no transaction: the specs tile a range. */
static int
specs_check(const struct catalog_tablet_spec *specs, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		const struct catalog_tablet_spec *sp = &specs[i];

		if ((sp->start.n > 0 && sp->start.p == NULL) ||
		    (sp->end.n > 0 && sp->end.p == NULL) ||
		    (sp->file_count > 0 && sp->files == NULL))
			return bt_error_set(-EINVAL, "catalog: new tablet %zu: "
			    "missing bytes", i);
		if (sp->server != NULL && !catalog_server_valid(sp->server))
			return bt_error_set(-EINVAL, "catalog: new tablet %zu: "
			    "bad server name", i);
		if (sp->end.n > 0 && slice_compare(sp->start, sp->end) >= 0)
			return bt_error_set(-EINVAL, "catalog: new tablet %zu: "
			    "empty range", i);
		if (i + 1 < count && (sp->end.n == 0 ||
		    !slice_equal(sp->end, specs[i + 1].start)))
			return bt_error_set(-EINVAL, "catalog: new tablet %zu "
			    "does not end where %zu starts", i, i + 1);
		for (size_t j = 0; j < sp->file_count; j++)
			if (sp->files[j].number == 0 ||
			    !catalog_field_valid(sp->files[j].group,
			    sizeof(sp->files[j].group)))
				return bt_error_set(-EINVAL, "catalog: new "
				    "tablet %zu: bad file %" PRIu64, i,
				    sp->files[j].number);
	}
	return 0;
}

/* catalog_tablet_replace(), fenced for server unless it is NULL. */
static int
tablet_replace(struct catalog *c, const char *server,
    const uint64_t *old_ids, size_t old_count,
    const struct catalog_tablet_spec *specs, size_t count,
    uint64_t *new_ids, const struct catalog_replace_prepare *prep)
{
	struct old_tablet *old;
	uint64_t *ids;
	int rc;

	if (old_ids == NULL || old_count == 0 || specs == NULL || count == 0)
		return bt_error_set(-EINVAL, "catalog: replace needs old and "
		    "new tablets");
	if ((rc = specs_check(specs, count)) < 0)
		return rc;
	if (server != NULL && (server[0] == '\0' ||
	    !catalog_server_valid(server)))
		return bt_error_set(-EINVAL, "catalog: replace: bad server "
		    "name");
	if (c->is_remote && server == NULL) {
		if (prep != NULL)
			return bt_error_set(-EINVAL, "catalog: a remote "
			    "catalog's replace runs no prepare");
		return c->remote.tablet_replace(c->remote_arg, old_ids,
		    old_count, specs, count, new_ids);
	}
	if ((old = bt_calloc(old_count, sizeof(*old))) == NULL)
		return -ENOMEM;
	if ((ids = bt_calloc(count, sizeof(*ids))) == NULL) {
		rc = -ENOMEM;
		goto out_old;
	}
	for (size_t i = 0; i < old_count; i++) {
		old[i].id = old_ids[i];
		buf_init(&old[i].start);
		buf_init(&old[i].end);
	}
	if ((rc = catalog_begin(c, true)) < 0)
		goto out_ids;
	rc = replace_txn(c, server, old, old_count, specs, count, ids);
	if (rc == 0 && prep != NULL)
		rc = prep->fn(prep->arg, ids, count);
	rc = catalog_end(c, rc);
	if (rc == 0 && new_ids != NULL)
		memcpy(new_ids, ids, count * sizeof(*ids));
out_ids:
	bt_free(ids);
out_old:
	for (size_t i = 0; i < old_count; i++) {
		buf_release(&old[i].start);
		buf_release(&old[i].end);
	}
	bt_free(old);
	return rc;
}

int
catalog_tablet_replace(struct catalog *c, const uint64_t *old_ids,
    size_t old_count, const struct catalog_tablet_spec *specs, size_t count,
    uint64_t *new_ids, const struct catalog_replace_prepare *prep)
{
	return tablet_replace(c, NULL, old_ids, old_count, specs, count,
	    new_ids, prep);
}

int
catalog_tablet_replace_as(struct catalog *c, const char *server,
    const uint64_t *old_ids, size_t old_count,
    const struct catalog_tablet_spec *specs, size_t count,
    uint64_t *new_ids, const struct catalog_replace_prepare *prep)
{
	assert(server != NULL);
	return tablet_replace(c, server, old_ids, old_count, specs, count,
	    new_ids, prep);
}

/* ---- The consistency check ---- */

struct loc_check {
	struct catalog *c;
	void (*report)(void *arg, const char *problem);
	void *arg;
	int problems;
};

static void __attribute__((format(printf, 2, 3)))
check_problem(struct loc_check *ck, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	ck->problems++;
	if (ck->report == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	ck->report(ck->arg, line);
}

/* Levels 0 and 1: one root, every METADATA tablet its child with a true
 * row count, exactly one ending the key space. */
static int
check_levels01(struct loc_check *ck, uint64_t root_id)
{
	struct catalog *c = ck->c;
	sqlite3_stmt *st = loc_stmt(c, LOC_CHECK_ROOTS);
	int rc, roots = 0, last = 0;

	while ((rc = catalog_step(c, st)) == SQLITE_ROW) {
		roots++;
		if (catalog_column_u64(st, 0) != root_id)
			check_problem(ck, "location: tablet %" PRIu64 " claims "
			    "to be a root tablet; the root is %" PRIu64,
			    catalog_column_u64(st, 0), root_id);
	}
	catalog_stmt_done(st);
	if (rc < 0)
		return rc;
	if (roots == 0)
		check_problem(ck, "location: root tablet %" PRIu64 " does not "
		    "exist", root_id);
	st = loc_stmt(c, LOC_CHECK_COUNTS);
	while ((rc = catalog_step(c, st)) == SQLITE_ROW) {
		uint64_t id = catalog_column_u64(st, 0);

		if (catalog_column_u64(st, 1) != root_id)
			check_problem(ck, "location: METADATA tablet %" PRIu64
			    " is not in root tablet %" PRIu64, id, root_id);
		if (catalog_column_u64(st, 2) == (uint64_t)INT64_MAX)
			last++;
		else if (last > 0)
			check_problem(ck, "location: METADATA tablet %" PRIu64
			    " ends after the end of the key space", id);
		if (catalog_column_u64(st, 4) != catalog_column_u64(st, 5))
			check_problem(ck, "location: METADATA tablet %" PRIu64
			    " counts %" PRIu64 " rows but holds %" PRIu64, id,
			    catalog_column_u64(st, 4),
			    catalog_column_u64(st, 5));
	}
	catalog_stmt_done(st);
	if (rc < 0)
		return rc;
	if (last != 1)
		check_problem(ck, "location: %d METADATA tablets end the key "
		    "space, not 1", last);
	return 0;
}

/* Every tablet has its location row, equal to it; each table's tablets
 * tile its row space. */
static int
check_tablets(struct loc_check *ck)
{
	struct catalog *c = ck->c;
	sqlite3_stmt *st = loc_stmt(c, LOC_CHECK_TABLETS);
	uint64_t prev_table = 0;
	struct buf prev_end;
	bool any = false;
	int rc;

	buf_init(&prev_end);
	while ((rc = catalog_step(c, st)) == SQLITE_ROW) {
		uint64_t id = catalog_column_u64(st, 0);
		uint64_t table = catalog_column_u64(st, 1);
		struct slice start = loc_column_slice(st, 2);
		struct slice end = loc_column_slice(st, 3);
		const char *server = (const char *)sqlite3_column_text(st, 4);
		const char *lserver;

		if (!any || table != prev_table) {
			if (any && prev_end.n > 0)
				check_problem(ck, "table %" PRIu64 ": its last "
				    "tablet does not run to the end", prev_table);
			if (start.n > 0)
				check_problem(ck, "table %" PRIu64 ": its first "
				    "tablet %" PRIu64 " does not start at the "
				    "beginning", table, id);
		} else if (prev_end.n == 0 ||
		    !slice_equal(buf_slice(&prev_end), start)) {
			check_problem(ck, "table %" PRIu64 ": tablet %" PRIu64
			    " does not start where the one before ends",
			    table, id);
		}
		if (end.n > 0 && slice_compare(start, end) >= 0)
			check_problem(ck, "tablet %" PRIu64 ": empty range", id);
		if (sqlite3_column_int(st, 5) == 0) {
			check_problem(ck, "tablet %" PRIu64 ": no location row",
			    id);
		} else {
			lserver = (const char *)sqlite3_column_text(st, 10);
			if (catalog_column_u64(st, 6) != table ||
			    !slice_equal(loc_column_slice(st, 7), start) ||
			    !slice_equal(loc_column_slice(st, 8), end) ||
			    sqlite3_column_int(st, 9) != (end.n == 0) ||
			    server == NULL || lserver == NULL ||
			    strcmp(server, lserver) != 0)
				check_problem(ck, "tablet %" PRIu64 ": its "
				    "location row differs from it", id);
		}
		if ((rc = buf_set(&prev_end, end.p, end.n)) < 0)
			goto out;
		prev_table = table;
		any = true;
	}
	if (rc >= 0 && any && prev_end.n > 0)
		check_problem(ck, "table %" PRIu64 ": its last tablet does not "
		    "run to the end", prev_table);
out:
	catalog_stmt_done(st);
	buf_release(&prev_end);
	if (rc < 0)
		return rc;
	st = loc_stmt(c, LOC_CHECK_BARE);
	while ((rc = catalog_step(c, st)) == SQLITE_ROW)
		check_problem(ck, "table %" PRIu64 ": no tablets",
		    catalog_column_u64(st, 0));
	catalog_stmt_done(st);
	return rc < 0 ? rc : 0;
}

/* Every location row has a tablet and sits in the METADATA tablet that
 * covers its key, with no METADATA end inside the tablet's span. */
static int
check_locations(struct loc_check *ck, uint64_t root_id)
{
	struct catalog *c = ck->c;
	sqlite3_stmt *st = loc_stmt(c, LOC_CHECK_LOCATIONS);
	int rc;

	if ((rc = catalog_bind(c, st, "u", root_id)) < 0)
		goto out;
	while ((rc = catalog_step(c, st)) == SQLITE_ROW) {
		uint64_t id = catalog_column_u64(st, 0);
		uint64_t meta = catalog_column_u64(st, 1);

		if (sqlite3_column_int(st, 4) == 0)
			check_problem(ck, "location: row for tablet %" PRIu64
			    " that does not exist", id);
		if (sqlite3_column_type(st, 5) == SQLITE_NULL ||
		    catalog_column_u64(st, 5) != meta)
			check_problem(ck, "location: tablet %" PRIu64 " is in "
			    "METADATA tablet %" PRIu64 ", not in the one "
			    "covering its key", id, meta);
		if (sqlite3_column_int(st, 6) != 0)
			check_problem(ck, "location: a METADATA tablet ends "
			    "inside the span of tablet %" PRIu64, id);
	}
out:
	catalog_stmt_done(st);
	return rc < 0 ? rc : 0;
}

static int
check_txn(struct loc_check *ck)
{
	uint64_t root_id = 0;
	int rc;

	if ((rc = root_txn(ck->c, &root_id)) == BT_ECORRUPT) {
		check_problem(ck, "location: no root location record");
		return 0;
	}
	if (rc < 0 || (rc = check_levels01(ck, root_id)) < 0 ||
	    (rc = check_tablets(ck)) < 0 ||
	    (rc = check_locations(ck, root_id)) < 0)
		return rc;
	return 0;
}

int
catalog_location_check(struct catalog *c,
    void (*report)(void *arg, const char *problem), void *arg)
{
	struct loc_check ck = { c, report, arg, 0 };
	int rc;

	if ((rc = catalog_begin(c, false)) < 0)
		return rc;
	if ((rc = catalog_end(c, check_txn(&ck))) < 0)
		return rc;
	return ck.problems;
}
