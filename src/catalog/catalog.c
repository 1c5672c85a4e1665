/*
 * catalog.c - the catalog handle's prepared statements, bindings,
 * transactions and the SQLite error mapping, which the other catalog
 * files build on.  Creating and opening the database is in
 * catalog_open.c, the schema calls in catalog_schema.c, tablets, files
 * and counters in catalog_tablet.c.
 *
 * No libbsd here: the catalog is part of the installed libtabletfs, which
 * does not link it.  Strings are copied with snprintf("%s") where the
 * tools use strlcpy (glibc has none before 2.38), and arrays grow through
 * bt_realloc, not reallocarray, so that tests can fail the Nth allocation.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "catalog/catalog_int.h"
#include "catalog/format.h"
#include "catalog/sqlite_env.h"
#include "sstable/format.h"
#include "util/alloc.h"
#include "util/env.h"
#include "util/error.h"

static const char *const catalog_sql[STMT_COUNT] = {
	[STMT_BEGIN_READ] = "BEGIN DEFERRED",
	[STMT_BEGIN_WRITE] = "BEGIN IMMEDIATE",
	[STMT_COMMIT] = "COMMIT",
	[STMT_ROLLBACK] = "ROLLBACK",
	[STMT_TABLE_BY_NAME] =
	    "SELECT id, name, tablet_size, uid, gid, mode FROM tables"
	    " WHERE name = ?1",
	[STMT_TABLE_BY_ID] =
	    "SELECT id, name, tablet_size, uid, gid, mode FROM tables"
	    " WHERE id = ?1",
	[STMT_TABLE_INSERT] =
	    "INSERT INTO tables (id, name, tablet_size, uid, gid, mode)"
	    " VALUES (" CATALOG_TABLE_ID_NEXT_SQL ", ?1, ?2, ?3, ?4, ?5)",
	[STMT_TABLE_DELETE] = "DELETE FROM tables WHERE id = ?1",
	[STMT_TABLE_LIST] = "SELECT name FROM tables ORDER BY name",
	[STMT_GROUP_LIST] =
	    "SELECT name, block_size, compress, bloom, in_memory FROM groups"
	    " WHERE table_id = ?1 ORDER BY name",
	[STMT_GROUP_ADD_DEFAULT] =
	    "INSERT INTO groups"
	    " (table_id, name, block_size, compress, bloom, in_memory)"
	    " VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
	    " ON CONFLICT (table_id, name) DO NOTHING",
	[STMT_GROUP_UPSERT] =
	    "INSERT INTO groups"
	    " (table_id, name, block_size, compress, bloom, in_memory)"
	    " VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
	    " ON CONFLICT (table_id, name) DO UPDATE SET"
	    " block_size = excluded.block_size, compress = excluded.compress,"
	    " bloom = excluded.bloom, in_memory = excluded.in_memory",
	[STMT_GROUP_EXISTS] =
	    "SELECT 1 FROM groups WHERE table_id = ?1 AND name = ?2",
	[STMT_FAMILY_LIST] =
	    "SELECT name, group_name, gc_policy, created_seq, uid, gid, mode"
	    " FROM families WHERE table_id = ?1 ORDER BY name",
	[STMT_FAMILY_INSERT] =
	    "INSERT INTO families"
	    " (table_id, name, group_name, gc_policy, created_seq, uid, gid,"
	    " mode) SELECT ?1, ?2, ?3, ?4, ?5, uid, gid, mode FROM tables"
	    " WHERE id = ?1",
	[STMT_FAMILY_DELETE] =
	    "DELETE FROM families WHERE table_id = ?1 AND name = ?2",
	[STMT_FAMILY_SET_GC] =
	    "UPDATE families SET gc_policy = ?3"
	    " WHERE table_id = ?1 AND name = ?2",
	/* ?2, ?3, ?4: uid, gid, mode, each NULL to keep it. */
	[STMT_TABLE_SET_ACCESS] =
	    "UPDATE tables SET uid = coalesce(?2, uid),"
	    " gid = coalesce(?3, gid), mode = coalesce(?4, mode)"
	    " WHERE id = ?1",
	[STMT_FAMILY_SET_ACCESS] =
	    "UPDATE families SET uid = coalesce(?3, uid),"
	    " gid = coalesce(?4, gid), mode = coalesce(?5, mode)"
	    " WHERE table_id = ?1 AND name = ?2",
	[STMT_TABLET_INSERT] =
	    "INSERT INTO tablets (id, table_id, start_row, end_row,"
	    " flushed_seq) VALUES (" CATALOG_TABLET_ID_NEXT_SQL ","
	    " ?1, ?2, ?3, 0)",
	[STMT_TABLET_LIST] =
	    "SELECT id, start_row, end_row, flushed_seq, auto_split"
	    " FROM tablets WHERE table_id = ?1 ORDER BY start_row",
	[STMT_TABLET_GET] =
	    "SELECT table_id, flushed_seq FROM tablets WHERE id = ?1",
	[STMT_TABLET_SET_SEQ] =
	    "UPDATE tablets SET flushed_seq = ?2 WHERE id = ?1",
	[STMT_TABLET_SERVER] =
	    "SELECT server, recovering FROM tablets WHERE id = ?1",
	[STMT_FILE_INSERT] =
	    "INSERT INTO files"
	    " (tablet_id, number, group_name, size, entry_count, max_seq)"
	    " VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
	[STMT_FILE_DELETE] =
	    "DELETE FROM files WHERE tablet_id = ?1 AND number = ?2",
	[STMT_FILE_LIST] =
	    "SELECT number, group_name, size, entry_count, max_seq FROM files"
	    " WHERE tablet_id = ?1 ORDER BY number DESC",
	/* A row when a tablet names the number or it is pending. */
	[STMT_FILE_LIVE] =
	    "SELECT 1 FROM files WHERE number = ?1"
	    " UNION ALL SELECT 1 FROM pending_files WHERE number = ?1 LIMIT 1",
	[STMT_PENDING_ADD] =
	    "INSERT INTO pending_files (number, server) VALUES (?1, ?2)",
	[STMT_PENDING_NAMED] = "DELETE FROM pending_files WHERE number = ?1",
	[STMT_PENDING_GONE] = "DELETE FROM pending_files WHERE server = ?1",
	[STMT_TABLET_SET_SERVER] =
	    "UPDATE tablets SET server = ?2, recovering = ?3 WHERE id = ?1",
	[STMT_ASSIGNMENTS] =
	    "SELECT t.id, t.table_id, b.name, t.server, t.recovering"
	    " FROM tablets t"
	    " JOIN tables b ON b.id = t.table_id"
	    " ORDER BY t.table_id, t.start_row",
	/* The tablets of the table named ?1 (none: no such table). */
	[STMT_TABLET_RECOVERY] =
	    "SELECT t.id, t.server, t.recovering, t.flushed_seq"
	    " FROM tables b JOIN tablets t ON t.table_id = b.id"
	    " WHERE b.name = ?1 ORDER BY t.start_row",
	/* The tablets of table ?1 after the one ending at ?2 (not the
	 * last), in row order, at most ?3: level 2's rows, by key. */
	[STMT_LOCATIONS_AFTER] =
	    "SELECT tablet_id, meta_id, start_row, end_row, server"
	    " FROM locations WHERE table_id = ?1"
	    " AND (is_last, end_row) > (0, ?2)"
	    " ORDER BY is_last, end_row LIMIT ?3",
	[STMT_META_GET] = "SELECT value FROM meta WHERE key = ?1",
	[STMT_META_SET] =
	    "INSERT INTO meta (key, value) VALUES (?1, ?2)"
	    " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
};

void
catalog_group_default(struct catalog_group *g, const char *name)
{
	memset(g, 0, sizeof(*g));
	snprintf(g->name, sizeof(g->name), "%s", name);
	g->block_size = SST_DEFAULT_BLOCK_SIZE;
	g->compress = true;
	g->bloom = true;
	g->in_memory = false;
}

bool
catalog_name_valid(const char *name)
{
	size_t n;

	if (name == NULL || name[0] == '\0' || name[0] == '.')
		return false;
	for (n = 0; name[n] != '\0'; n++) {
		char ch = name[n];

		if (n >= CATALOG_NAME_MAX)
			return false;
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' ||
		    ch == '-'))
			return false;
	}
	return true;
}

bool
catalog_field_valid(const char *name, size_t size)
{
	return memchr(name, '\0', size) != NULL && catalog_name_valid(name);
}

/*
 * Our code for a SQLite result.  I/O failures carry the errno SQLite saw
 * when there is one, so a full disk reads as ENOSPC and not "I/O error".
 */
static int
catalog_sqlite_code(sqlite3 *db, int src)
{
	int err;

	/* sqlite3_open_v2 and sqlite3_exec give the primary code only. */
	if ((src & 0xff) == SQLITE_IOERR && db != NULL)
		src = sqlite3_extended_errcode(db);
	switch (src) {
	case SQLITE_CONSTRAINT_PRIMARYKEY:
	case SQLITE_CONSTRAINT_UNIQUE:
		return -EEXIST;
	case SQLITE_CONSTRAINT_FOREIGNKEY:
		return -ENOENT;
	case SQLITE_IOERR_DATA:
		return BT_ECHECKSUM;	/* a page failed its check */
	}
	switch (src & 0xff) {
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_CORRUPT:
		return BT_ECORRUPT;
	case SQLITE_NOTADB:
		return BT_EFORMAT;
	case SQLITE_FULL:
		return -ENOSPC;
	case SQLITE_READONLY:
		return -EROFS;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return -EBUSY;
	case SQLITE_TOOBIG:
		return BT_ETOOBIG;
	case SQLITE_CONSTRAINT:
	case SQLITE_MISMATCH:
	case SQLITE_RANGE:
		return -EINVAL;
	case SQLITE_IOERR:
	case SQLITE_CANTOPEN:
		err = db != NULL ? sqlite3_system_errno(db) : 0;
		return err > 0 ? -err : -EIO;
	}
	return -EIO;
}

/*
 * Record a failed SQLite call on db (NULL if the open itself failed).  For
 * an I/O failure the env VFS has already recorded a detail naming the file
 * and the cause; keep it at the end of ours.
 */
int
catalog_db_error(sqlite3 *db, int src, const char *name, const char *what)
{
	char io[256] = "";
	int primary = src & 0xff, rc = catalog_sqlite_code(db, src);

	if (primary == SQLITE_IOERR || primary == SQLITE_CANTOPEN ||
	    primary == SQLITE_FULL)
		snprintf(io, sizeof(io), "%s", bt_error_detail());
	/* The VFS's detail names the file and the page: say that first. */
	if (rc == BT_ECHECKSUM && io[0] != '\0')
		return bt_error_set(rc, "%s (catalog: %s)", io, what);
	return bt_error_set(rc,
	    "catalog %s: %s: %s%s%s%s", name, what,
	    db != NULL ? sqlite3_errmsg(db) : sqlite3_errstr(src),
	    io[0] != '\0' ? " (" : "", io, io[0] != '\0' ? ")" : "");
}

int
catalog_sqlite_error(struct catalog *c, int src, const char *what)
{
	return catalog_db_error(c->db, src, c->path, what);
}

sqlite3_stmt *
catalog_stmt(struct catalog *c, enum catalog_stmt_id id)
{
	mutex_assert_held(&c->mu);
	catalog_stmt_done(c->stmts[id]);
	return c->stmts[id];
}

/*
 * Prepare every statement at open, so that no call can fail half-way for
 * want of one (a ROLLBACK least of all).
 */
int
catalog_prepare(struct catalog *c)
{
	int src;

	for (int i = 0; i < STMT_COUNT; i++) {
		src = sqlite3_prepare_v3(c->db, catalog_sql[i], -1,
		    SQLITE_PREPARE_PERSISTENT, &c->stmts[i], NULL);
		if (src != SQLITE_OK)
			return catalog_sqlite_error(c, src, catalog_sql[i]);
	}
	return 0;
}

void
catalog_stmt_done(sqlite3_stmt *st)
{
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
}

int
catalog_one_u64(struct catalog *c, sqlite3_stmt *st, int bind_rc,
    uint64_t *a, uint64_t *b)
{
	int rc = bind_rc;

	if (rc < 0 || (rc = catalog_step(c, st)) < 0)
		goto out;
	if (rc == SQLITE_DONE) {
		rc = BT_NOTFOUND;
		goto out;
	}
	*a = catalog_column_u64(st, 0);
	if (b != NULL)
		*b = catalog_column_u64(st, 1);
	rc = 0;
out:
	catalog_stmt_done(st);
	return rc;
}

int
catalog_bind(struct catalog *c, sqlite3_stmt *st, const char *types, ...)
{
	const struct slice *s;
	uint32_t id;
	va_list ap;
	int src = SQLITE_OK;

	va_start(ap, types);
	for (int i = 0; types[i] != '\0' && src == SQLITE_OK; i++) {
		switch (types[i]) {
		case 't':
			src = sqlite3_bind_text(st, i + 1,
			    va_arg(ap, const char *), -1, SQLITE_STATIC);
			break;
		case 'u':
			src = sqlite3_bind_int64(st, i + 1,
			    (sqlite3_int64)va_arg(ap, uint64_t));
			break;
		case 'o':
			/* The store's owner is stored as -1. */
			id = va_arg(ap, uint32_t);
			src = sqlite3_bind_int64(st, i + 1,
			    id == CATALOG_ACCESS_STORE_OWNER ? -1 :
			    (sqlite3_int64)id);
			break;
		case 'k':
			id = va_arg(ap, uint32_t);
			src = id == CATALOG_ACCESS_KEEP ?
			    sqlite3_bind_null(st, i + 1) :
			    sqlite3_bind_int64(st, i + 1, (sqlite3_int64)id);
			break;
		case 'b':
			/* A NULL pointer would bind SQL NULL, not x''. */
			s = va_arg(ap, const struct slice *);
			src = sqlite3_bind_blob64(st, i + 1,
			    s->n > 0 ? (const void *)s->p : "", s->n,
			    SQLITE_STATIC);
			break;
		default:
			src = SQLITE_MISUSE;
			break;
		}
	}
	va_end(ap);
	if (src != SQLITE_OK)
		return catalog_sqlite_error(c, src, sqlite3_sql(st));
	return 0;
}

uint32_t
catalog_column_id(struct catalog *c, sqlite3_stmt *st, int col, bool owner)
{
	int64_t v = sqlite3_column_int64(st, col);

	if (v < 0 || v >= CATALOG_ACCESS_STORE_OWNER)
		return owner ? c->owner_uid : c->owner_gid;
	return (uint32_t)v;
}

int
catalog_step(struct catalog *c, sqlite3_stmt *st)
{
	int src = sqlite3_step(st);

	if (src == SQLITE_ROW || src == SQLITE_DONE)
		return src;
	return catalog_sqlite_error(c, src, sqlite3_sql(st));
}

int
catalog_exec(struct catalog *c, sqlite3_stmt *st)
{
	int rc = catalog_step(c, st);

	catalog_stmt_done(st);
	return rc < 0 ? rc : 0;
}

int
catalog_column_text(struct catalog *c, sqlite3_stmt *st, int col,
    char *dst, size_t size)
{
	const unsigned char *p = sqlite3_column_text(st, col);
	size_t n = (size_t)sqlite3_column_bytes(st, col);

	if (p == NULL) {
		if (sqlite3_errcode(c->db) == SQLITE_NOMEM)
			return bt_error_set(-ENOMEM, "catalog %s: out of memory",
			    c->path);
		return bt_error_set(BT_ECORRUPT,
		    "catalog %s: NULL in column %s", c->path,
		    sqlite3_column_name(st, col));
	}
	if (n >= size || memchr(p, '\0', n) != NULL)
		return bt_error_set(BT_ECORRUPT,
		    "catalog %s: column %s holds %zu bytes, at most %zu fit",
		    c->path, sqlite3_column_name(st, col), n, size - 1);
	memcpy(dst, p, n);
	dst[n] = '\0';
	return 0;
}

int
catalog_column_blob(struct catalog *c, sqlite3_stmt *st, int col,
    struct buf *b)
{
	const void *p = sqlite3_column_blob(st, col);
	int n = sqlite3_column_bytes(st, col);

	if (p == NULL && n > 0)
		return bt_error_set(-ENOMEM, "catalog %s: out of memory",
		    c->path);
	if (p == NULL && sqlite3_column_type(st, col) != SQLITE_BLOB)
		return bt_error_set(BT_ECORRUPT,
		    "catalog %s: column %s is not a BLOB", c->path,
		    sqlite3_column_name(st, col));
	return buf_set(b, p, (size_t)n);
}

int
catalog_array_grow(void *arrayp, size_t *capp, size_t n, size_t size)
{
	void **array = arrayp;
	size_t cap = *capp;
	void *p;

	assert(n <= cap);
	if (n < cap)
		return 0;
	cap = cap ? cap * 2 : 8;
	if (cap > SIZE_MAX / size)
		return -ENOMEM;
	if ((p = bt_realloc(*array, cap * size)) == NULL)
		return -ENOMEM;
	*array = p;
	*capp = cap;
	return 0;
}

int
catalog_rows_load(struct catalog *c, sqlite3_stmt *st, int bind_rc,
    size_t size,
    int (*read)(struct catalog *c, sqlite3_stmt *st, void *elem, void *arg),
    void *arg, void (*release)(void *elem), void *arrayp, size_t *countp)
{
	char *array = NULL, *elem;
	size_t n = 0, cap = 0;
	int rc = bind_rc;

	catalog_assert_in_call(c);
	while (rc >= 0 && (rc = catalog_step(c, st)) == SQLITE_ROW) {
		if ((rc = catalog_array_grow(&array, &cap, n, size)) < 0)
			goto out_free;
		elem = array + n++ * size;
		memset(elem, 0, size);
		if ((rc = read(c, st, elem, arg)) < 0)
			goto out_free;
	}
	if (rc < 0)
		goto out_free;
	catalog_stmt_done(st);
	*(void **)arrayp = array;
	*countp = n;
	return 0;
out_free:
	catalog_stmt_done(st);
	for (size_t i = 0; release != NULL && i < n; i++)
		release(array + i * size);
	bt_free(array);
	return rc;
}

int
catalog_begin(struct catalog *c, bool write)
{
	sqlite3_stmt *st;
	int rc;

	if (c->is_remote)
		return catalog_remote_refuse(c);
	mutex_lock(&c->mu);
	bt_error_clear();
	st = catalog_stmt(c, write ? STMT_BEGIN_WRITE : STMT_BEGIN_READ);
	if ((rc = catalog_exec(c, st)) < 0)
		mutex_unlock(&c->mu);
	return rc;
}

/*
 * End the call's transaction.  A COMMIT that fails (busy, I/O) leaves the
 * transaction open or already rolled back, depending on the error; roll
 * back whatever is left so the next call starts clean.
 */
int
catalog_end(struct catalog *c, int rc)
{
	sqlite3_stmt *st;
	int crc;

	/* A failed statement may have rolled the transaction back already. */
	mutex_assert_held(&c->mu);
	if (rc >= 0 && (crc = catalog_exec(c,
	    catalog_stmt(c, STMT_COMMIT))) < 0) {
		rc = crc;
		c->commit_unknown = true;
	}
	/* The rollback's own result is ignored: the first error's detail
	 * says what went wrong. */
	if (rc < 0 && !sqlite3_get_autocommit(c->db)) {
		st = catalog_stmt(c, STMT_ROLLBACK);
		sqlite3_step(st);
		catalog_stmt_done(st);
	}
	mutex_unlock(&c->mu);
	return rc;
}
