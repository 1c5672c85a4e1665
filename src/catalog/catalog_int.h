/*
 * catalog_int.h - what the catalog's source files share: the handle, its
 * cache of prepared statements, and the helpers that run them.
 *
 * Every public call takes the handle's mutex and runs as one transaction:
 *
 *	if ((rc = catalog_begin(c, true)) < 0)
 *		return rc;
 *	rc = ...body, which may return at any point...;
 *	return catalog_end(c, rc);
 *
 * catalog_end() commits when rc >= 0 and rolls back otherwise, then drops
 * the mutex.  Statements come from catalog_stmt() already reset; a body
 * resets each one (catalog_stmt_done) before it returns, so no statement
 * keeps a read open past its call.
 */
#ifndef TABLETFS_CATALOG_CATALOG_INT_H
#define TABLETFS_CATALOG_CATALOG_INT_H

#include <assert.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "catalog/catalog.h"
#include "util/mutex.h"

enum catalog_stmt_id {
	STMT_BEGIN_READ,
	STMT_BEGIN_WRITE,
	STMT_COMMIT,
	STMT_ROLLBACK,
	STMT_TABLE_BY_NAME,
	STMT_TABLE_BY_ID,
	STMT_TABLE_INSERT,
	STMT_TABLE_DELETE,
	STMT_TABLE_LIST,
	STMT_GROUP_LIST,
	STMT_GROUP_ADD_DEFAULT,
	STMT_GROUP_UPSERT,
	STMT_GROUP_EXISTS,
	STMT_FAMILY_LIST,
	STMT_FAMILY_INSERT,
	STMT_FAMILY_DELETE,
	STMT_FAMILY_SET_GC,
	STMT_TABLE_SET_ACCESS,
	STMT_FAMILY_SET_ACCESS,
	STMT_TABLET_INSERT,
	STMT_TABLET_LIST,
	STMT_TABLET_GET,
	STMT_TABLET_SET_SEQ,
	STMT_TABLET_SERVER,
	STMT_FILE_INSERT,
	STMT_FILE_DELETE,
	STMT_FILE_LIST,
	STMT_FILE_LIVE,
	STMT_PENDING_ADD,
	STMT_PENDING_NAMED,
	STMT_PENDING_GONE,
	STMT_TABLET_SET_SERVER,
	STMT_ASSIGNMENTS,
	STMT_TABLET_RECOVERY,
	STMT_LOCATIONS_AFTER,
	STMT_META_GET,
	STMT_META_SET,
	STMT_COUNT
};

struct sqlite_env;

struct catalog {
	struct mutex mu;	/* serializes every call on db */
	struct sqlite_env *vfs;	/* db's files, through the store's env */
	sqlite3 *db;
	char *path;		/* for error details */
	sqlite3_stmt *stmts[STMT_COUNT];	/* prepared at open */
	struct catalog_location_stmts *loc;	/* catalog_location.c's */
	/* A COMMIT failed: it may be on disk all the same (its sync failed,
	 * not its write), so which files are named is unknown until the
	 * catalog is opened again. */
	bool commit_unknown;
	/* The store's owner (CATALOG_ACCESS_STORE_OWNER reads as these):
	 * the effective ids of the process that opened the catalog. */
	uint32_t owner_uid;
	uint32_t owner_gid;
	/* A remote catalog (catalog_remote.c): the calls it serves go to
	 * remote with remote_arg, catalog_begin() refuses every other, and
	 * vfs, db, path and the statements are unused (NULL). */
	bool is_remote;
	struct catalog_remote_ops remote;
	void *remote_arg;
};

/*
 * What a body between catalog_begin() and catalog_end() takes for granted,
 * checked (compiled away with NDEBUG): the calling thread holds c->mu and
 * the call's transaction is open.  The functions below that say "inside a
 * call's transaction" start with it.
 */
static inline void
catalog_assert_in_call(struct catalog *c)
{
	mutex_assert_held(&c->mu);
	assert(!sqlite3_get_autocommit(c->db));
}

/* Take the mutex and BEGIN (IMMEDIATE when write).  On error the mutex is
 * released again.  On a remote catalog: -EOPNOTSUPP, with a detail, and
 * no mutex taken (the one place that refuses the calls a remote catalog
 * does not serve). */
int catalog_begin(struct catalog *c, bool write);
/* COMMIT if rc >= 0, else ROLLBACK; release the mutex; the final code. */
int catalog_end(struct catalog *c, int rc);

/* The prepared statement id (all are prepared at open), reset and with no
 * bindings; the caller holds c->mu (checked). */
sqlite3_stmt *catalog_stmt(struct catalog *c, enum catalog_stmt_id id);
void catalog_stmt_done(sqlite3_stmt *st);

/*
 * Bind parameters 1, 2, ... from the arguments, one letter of types each:
 *	t  const char *		text (borrowed until catalog_stmt_done)
 *	u  uint64_t		integer (pass exactly a uint64_t)
 *	b  const struct slice *	blob; an empty slice binds an empty BLOB
 *	o  uint32_t		an owner or group id; CATALOG_ACCESS_STORE_OWNER
 *				binds -1 (format.h)
 *	k  uint32_t		an id or mode to set; CATALOG_ACCESS_KEEP binds
 *				NULL (keep what is there)
 */
/*
 * Finish a lookup of at most one row: unless bind_rc (the result of binding
 * st) is an error, step st and read its first column, and its second when
 * b is not NULL, as unsigned integers.  0, BT_NOTFOUND when there is no
 * row, or an error; st is released either way.
 */
int catalog_one_u64(struct catalog *c, sqlite3_stmt *st, int bind_rc,
    uint64_t *a, uint64_t *b);
int catalog_bind(struct catalog *c, sqlite3_stmt *st, const char *types,
    ...);

/* Step once: SQLITE_ROW, SQLITE_DONE, or a negative code with detail. */
int catalog_step(struct catalog *c, sqlite3_stmt *st);

/* Step a statement that returns no rows, reset it; 0 or negative. */
int catalog_exec(struct catalog *c, sqlite3_stmt *st);

/* A code and detail for a failed SQLite call (src, the SQLite result). */
int catalog_sqlite_error(struct catalog *c, int src, const char *what);
/* The same for a connection db (NULL when opening it failed) to the
 * database at name. */
int catalog_db_error(sqlite3 *db, int src, const char *name,
    const char *what);
/* Prepare every statement of c (at open, so that no call can fail
 * half-way for want of one); 0 or an error. */
int catalog_prepare(struct catalog *c);

/* An owner or group column: -1 stored reads as the store's owner's id
 * (owner), the store owner's group otherwise. */
uint32_t catalog_column_id(struct catalog *c, sqlite3_stmt *st, int col,
    bool owner);

/* Copy text column col into dst (size bytes); BT_ECORRUPT if it does not
 * fit or is NULL. */
int catalog_column_text(struct catalog *c, sqlite3_stmt *st, int col,
    char *dst, size_t size);

static inline uint64_t
catalog_column_u64(sqlite3_stmt *st, int col)
{
	return (uint64_t)sqlite3_column_int64(st, col);
}

/* Copy a BLOB column into b (an empty BLOB reads as a NULL pointer);
 * BT_ECORRUPT when the column is not a BLOB. */
int catalog_column_blob(struct catalog *c, sqlite3_stmt *st, int col,
    struct buf *b);

/* Make room in *arrayp for n + 1 elements of size bytes (*capp counts
 * them).  0 or -ENOMEM, with the array unchanged. */
int catalog_array_grow(void *arrayp, size_t *capp, size_t n, size_t size);

/*
 * Load every row of st into an array of size-byte elements, unless bind_rc
 * (the result of binding st) is an error: for each row, read(c, st, elem,
 * arg) fills the next element, zeroed and already counted, so that
 * release(elem) (NULL: nothing to undo) can free what a failed read left
 * half made.  st is released either way.  0 with *arrayp (NULL without
 * rows; the caller frees its elements and bt_frees it) and *countp, or an
 * error with every element released, the array freed and the outputs
 * untouched.
 */
int catalog_rows_load(struct catalog *c, sqlite3_stmt *st, int bind_rc,
    size_t size,
    int (*read)(struct catalog *c, sqlite3_stmt *st, void *elem, void *arg),
    void *arg, void (*release)(void *elem), void *arrayp, size_t *countp);

/* Whether a name field of a fixed array (size bytes) is NUL-terminated
 * and a valid name. */
bool catalog_field_valid(const char *name, size_t size);

/* The id of a table by name, inside a call's transaction: 0, BT_NOTFOUND
 * or an error. */
int catalog_table_id(struct catalog *c, const char *name, uint64_t *id);
/* catalog_tablets_list()'s body, inside a call's transaction. */
int catalog_tablets_list_txn(struct catalog *c, uint64_t table_id,
    struct catalog_tablet **out, size_t *count);
/* Name file f in tablet_id, of table table_id, inside a write
 * transaction; its group must exist (-ENOENT), and the tablet must not
 * name it yet (-EEXIST).  The number stops being pending
 * (catalog_pending_named). */
int catalog_file_add(struct catalog *c, uint64_t table_id, uint64_t tablet_id,
    const struct catalog_file *f);
/* catalog_next_number()'s body, inside a write transaction. */
int catalog_next_number_txn(struct catalog *c, uint64_t *number);

/* Whether tablet_id's assigned server is server, inside a write
 * transaction: 0, BT_ENOTSERVING with a detail, BT_NOTFOUND (no such
 * tablet) or an error (catalog_tablet.c). */
int catalog_tablet_server_check(struct catalog *c, uint64_t tablet_id,
    const char *server);

/* Whether a server name may be recorded: "" or 1 to CATALOG_SERVER_MAX
 * printable, non-blank bytes (catalog_location.c). */
bool catalog_server_valid(const char *server);

/* catalog_location_walk()'s body, inside a call's transaction; *walked
 * counts the levels walked. */
int catalog_location_walk_txn(struct catalog *c, uint64_t table_id,
    struct slice row, struct catalog_location *out, int *walked);

/* ---- Pending file numbers (catalog_pending.c) ---- */

/* Number stops being pending, inside a write transaction: a tablet
 * names it now (catalog_file_add).  0 whether it was or not. */
int catalog_pending_named(struct catalog *c, uint64_t number);


/* ---- The schema version (catalog_version.c) ---- */

/* Raise CATALOG_META_SCHEMA_VERSION by one, inside the write transaction
 * of a schema change. */
int catalog_schema_version_raise(struct catalog *c);

/* ---- Remote catalogs (catalog_remote.c) ---- */

/* -EOPNOTSUPP with the detail that a remote catalog serves only the
 * calls of struct catalog_remote_ops. */
int catalog_remote_refuse(struct catalog *c);
/* Run the remote's close and free c (catalog_close()). */
void catalog_remote_close(struct catalog *c);

/* ---- The location hierarchy (catalog_location.c) ---- */

/* Prepare the location calls' statements (at open, after the schema is
 * current); finalize them (accepts a handle without them). */
int catalog_location_prepare(struct catalog *c);
void catalog_location_finalize(struct catalog *c);

/* Upgrade a version-1 catalog to the current version in one transaction:
 * the version-2 schema, then a location row for every existing tablet
 * (built by the triggers).  Runs before any statement is prepared. */
int catalog_location_upgrade(struct catalog *c);

#endif
