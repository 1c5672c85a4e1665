/*
 * catalog_open.c - creating, opening, checking and closing the catalog
 * database: the schema set up or upgraded, the statements prepared
 * (catalog.c and catalog_location.c).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "catalog/catalog_int.h"
#include "catalog/format.h"
#include "catalog/sqlite_env.h"
#include "sstable/format.h"
#include "util/alloc.h"
#include "util/env.h"
#include "util/error.h"

#define CATALOG_BUSY_TIMEOUT_MS 10000
#define CATALOG_STR_(x) #x
#define CATALOG_STR(x) CATALOG_STR_(x)

/*
 * Open a connection to path whose files go through env, on a VFS of its
 * own (sqlite_env.h).  Both outputs are set only on success.
 */
static int
catalog_connect(struct env *env, const char *path, int flags,
    struct sqlite_env **vfsp, sqlite3 **dbp)
{
	struct sqlite_env *vfs;
	sqlite3 *db = NULL;
	int src, rc;

	if ((rc = sqlite_env_register(env, &vfs)) < 0)
		return rc;
	src = sqlite3_open_v2(path, &db, flags | SQLITE_OPEN_NOMUTEX,
	    sqlite_env_name(vfs));
	if (src != SQLITE_OK) {
		rc = catalog_db_error(db, src, path, "open");
		goto out_close;
	}
	sqlite3_extended_result_codes(db, 1);
	*vfsp = vfs;
	*dbp = db;
	return 0;
out_close:
	sqlite3_close(db);
	sqlite_env_unregister(vfs);
	return rc;
}

/*
 * Write a complete, empty catalog into tmp.  It is built with the journal
 * in memory: if anything fails the file is removed, so there is nothing to
 * roll back on disk.  catalog_open switches the catalog to WAL.
 */
static int
catalog_build(struct env *env, const char *tmp)
{
	static const char script[] =
	    "PRAGMA locking_mode = EXCLUSIVE;\n"
	    "PRAGMA journal_mode = MEMORY;\n"
	    "PRAGMA synchronous = FULL;\n"
	    "BEGIN IMMEDIATE;\n"
	    CATALOG_SCHEMA_SQL
	    "PRAGMA application_id = " CATALOG_STR(CATALOG_APPLICATION_ID) ";\n"
	    "PRAGMA user_version = " CATALOG_STR(CATALOG_VERSION) ";\n"
	    "COMMIT;\n";
	struct sqlite_env *vfs;
	sqlite3 *db;
	int reserve = CATALOG_PAGE_RESERVE;
	int src, rc;

	if ((rc = catalog_connect(env, tmp, SQLITE_OPEN_READWRITE |
	    SQLITE_OPEN_CREATE, &vfs, &db)) < 0)
		return rc;
	/* Before the first page is written: every page gets a trailer. */
	src = sqlite3_file_control(db, "main", SQLITE_FCNTL_RESERVE_BYTES,
	    &reserve);
	if (src == SQLITE_OK)
		src = sqlite3_exec(db, script, NULL, NULL, NULL);
	if (src != SQLITE_OK)
		rc = catalog_db_error(db, src, tmp, "create schema");
	src = sqlite3_close(db);
	if (src != SQLITE_OK && rc == 0)
		rc = bt_error_set(-EIO, "catalog %s: close: %s", tmp,
		    sqlite3_errstr(src));
	sqlite_env_unregister(vfs);
	return rc;
}

int
catalog_create(struct env *env, const char *path)
{
	uint64_t size;
	char *tmp, *dir;
	size_t n;
	int rc;

	if (env == NULL || path == NULL || path[0] == '\0')
		return bt_error_set(-EINVAL, "catalog: no env or path");
	bt_error_clear();
	if ((rc = env_path_size(env, path, &size)) == 0)
		return bt_error_set(-EEXIST, "catalog %s: already exists",
		    path);
	if (rc != -ENOENT)
		return rc;
	n = strlen(path) + sizeof(".tmp");
	if ((tmp = bt_malloc(n)) == NULL)
		return -ENOMEM;
	snprintf(tmp, n, "%s.tmp", path);
	if ((dir = env_path_parent(path)) == NULL) {
		rc = -ENOMEM;
		goto out_free;
	}
	/* A crash during an earlier create may have left one behind. */
	if ((rc = env_path_remove(env, tmp)) < 0 && rc != -ENOENT)
		goto out_free;
	if ((rc = catalog_build(env, tmp)) < 0)
		goto out_remove;
	if (env_path_exists(env, path)) {
		rc = bt_error_set(-EEXIST, "catalog %s: already exists",
		    path);
		goto out_remove;
	}
	if ((rc = env_path_rename(env, tmp, path)) < 0)
		goto out_remove;
	rc = env_dir_sync(env, dir);
	goto out_free;
out_remove:
	env_path_remove(env, tmp);
out_free:
	bt_free(dir);
	bt_free(tmp);
	return rc;
}

/* Read one integer PRAGMA (a constant name) into *value. */
static int
catalog_pragma_int(struct catalog *c, const char *sql, int64_t *value)
{
	sqlite3_stmt *st;
	int src, rc;

	src = sqlite3_prepare_v2(c->db, sql, -1, &st, NULL);
	if (src != SQLITE_OK)
		return catalog_sqlite_error(c, src, sql);
	if ((rc = catalog_step(c, st)) == SQLITE_ROW) {
		*value = sqlite3_column_int64(st, 0);
		rc = 0;
	} else if (rc == SQLITE_DONE) {
		rc = bt_error_set(-EIO, "catalog %s: %s returned nothing",
		    c->path, sql);
	}
	sqlite3_finalize(st);
	return rc;
}

static int catalog_schema_upgrade(struct catalog *c, int64_t version);

/*
 * Refuse what is not a catalog of our version, then set the connection
 * up.  Exclusive locking mode comes first: the env VFS has no shared
 * memory, and with it SQLite keeps the WAL index in the heap.  Nothing is
 * written before the version checks pass.  A version-1 catalog is
 * upgraded to 2 here, and a version-3 or 4 one to the current version
 * (catalog_schema_upgrade); 1 means the catalog must still be rebuilt
 * with page checksums (catalog_upgrade_reserve), after which this runs
 * again.
 */
static int
catalog_setup(struct catalog *c)
{
	sqlite3_stmt *st;
	const char *mode;
	int64_t app, version, fk;
	int reserve = -1;
	char *wal;
	int src, rc;

	/* Before SQLite's recovery reads the WAL (sqlite_env.h). */
	if ((wal = bt_malloc(strlen(c->path) + sizeof("-wal"))) == NULL)
		return -ENOMEM;
	sprintf(wal, "%s-wal", c->path);
	rc = sqlite_env_wal_check(c->vfs, wal);
	bt_free(wal);
	if (rc < 0)
		return rc;
	sqlite3_busy_timeout(c->db, CATALOG_BUSY_TIMEOUT_MS);
	src = sqlite3_exec(c->db, "PRAGMA locking_mode = EXCLUSIVE;"
	    " PRAGMA temp_store = MEMORY;", NULL, NULL, NULL);
	if (src != SQLITE_OK)
		return catalog_sqlite_error(c, src, "locking_mode");
	if ((rc = catalog_pragma_int(c, "PRAGMA application_id", &app)) < 0)
		return rc;
	if ((rc = catalog_pragma_int(c, "PRAGMA user_version",
	    &version)) < 0)
		return rc;
	if (app != CATALOG_APPLICATION_ID)
		return bt_error_set(BT_EFORMAT,
		    "catalog %s: not a tabletfs catalog (application_id %#llx)",
		    c->path, (unsigned long long)app);
	if (version < 1 || version > CATALOG_VERSION)
		return bt_error_set(BT_EFORMAT,
		    "catalog %s: format version %lld, this build reads %d",
		    c->path, (long long)version, CATALOG_VERSION);

	src = sqlite3_prepare_v2(c->db, "PRAGMA journal_mode = WAL", -1, &st,
	    NULL);
	if (src != SQLITE_OK)
		return catalog_sqlite_error(c, src, "journal_mode");
	if ((rc = catalog_step(c, st)) == SQLITE_ROW) {
		mode = (const char *)sqlite3_column_text(st, 0);
		rc = 0;
		if (mode == NULL || strcmp(mode, "wal") != 0)
			rc = bt_error_set(-EIO,
			    "catalog %s: cannot use WAL mode (got %s)",
			    c->path, mode != NULL ? mode : "nothing");
	} else if (rc == SQLITE_DONE) {
		rc = bt_error_set(-EIO, "catalog %s: journal_mode: no answer",
		    c->path);
	}
	sqlite3_finalize(st);
	if (rc < 0)
		return rc;

	src = sqlite3_exec(c->db,
	    "PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;"
	    /* The catalog is small: keep its WAL small too. */
	    " PRAGMA wal_autocheckpoint = 128;"
	    " PRAGMA journal_size_limit = 1048576;",
	    NULL, NULL, NULL);
	if (src != SQLITE_OK)
		return catalog_sqlite_error(c, src, "pragmas");
	if ((rc = catalog_pragma_int(c, "PRAGMA foreign_keys", &fk)) < 0)
		return rc;
	if (fk != 1)
		return bt_error_set(-ENOTSUP,
		    "catalog %s: SQLite lacks foreign key support", c->path);
	if (version == 1 && (rc = catalog_location_upgrade(c)) < 0)
		return rc;
	if (version < CATALOG_VERSION_RESERVE)
		return 1;
	src = sqlite3_file_control(c->db, "main", SQLITE_FCNTL_RESERVE_BYTES,
	    &reserve);
	if (src != SQLITE_OK)
		return catalog_sqlite_error(c, src, "reserve bytes");
	if (reserve != CATALOG_PAGE_RESERVE)
		return bt_error_set(BT_ECORRUPT, "catalog %s: page 1: %d "
		    "reserved bytes a page, a version-%lld catalog has %d",
		    c->path, reserve, (long long)version,
		    CATALOG_PAGE_RESERVE);
	if (version < CATALOG_VERSION)
		return catalog_schema_upgrade(c, version);
	return 0;
}

/*
 * Version 3, 4 or 5 -> 6 (format.h), in one transaction with the new
 * user_version, so that a crash leaves the old version or the current
 * one: from 3, owners, groups and modes (rows already there belong to
 * the store's owner); from 3 and 4, the pending file numbers (none);
 * from all three, the recovery marks (none set).
 */
static int
catalog_schema_upgrade(struct catalog *c, int64_t version)
{
	static const char from3[] =
	    "BEGIN IMMEDIATE;\n"
	    CATALOG_SCHEMA_V4_SQL
	    CATALOG_SCHEMA_V5_SQL
	    CATALOG_SCHEMA_V6_SQL
	    "PRAGMA user_version = " CATALOG_STR(CATALOG_VERSION) ";\n"
	    "COMMIT;\n";
	static const char from4[] =
	    "BEGIN IMMEDIATE;\n"
	    CATALOG_SCHEMA_V5_SQL
	    CATALOG_SCHEMA_V6_SQL
	    "PRAGMA user_version = " CATALOG_STR(CATALOG_VERSION) ";\n"
	    "COMMIT;\n";
	static const char from5[] =
	    "BEGIN IMMEDIATE;\n"
	    CATALOG_SCHEMA_V6_SQL
	    "PRAGMA user_version = " CATALOG_STR(CATALOG_VERSION) ";\n"
	    "COMMIT;\n";
	int src, rc;

	_Static_assert(CATALOG_VERSION == 6, "the upgrades end at 6");
	assert(version >= 3 && version <= 5);
	src = sqlite3_exec(c->db, version == 3 ? from3 : version == 4 ?
	    from4 : from5, NULL, NULL, NULL);
	if (src == SQLITE_OK)
		return 0;
	rc = catalog_sqlite_error(c, src, "upgrade to version "
	    CATALOG_STR(CATALOG_VERSION));
	if (!sqlite3_get_autocommit(c->db))
		sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

/* Run one statement of SQL made from fmt (sqlite3_mprintf, so %Q quotes). */
static int
catalog_execf(struct catalog *c, const char *fmt, ...)
{
	va_list ap;
	char *sql;
	int src, rc = 0;

	va_start(ap, fmt);
	sql = sqlite3_vmprintf(fmt, ap);
	va_end(ap);
	if (sql == NULL)
		return -ENOMEM;
	if ((src = sqlite3_exec(c->db, sql, NULL, NULL, NULL)) != SQLITE_OK)
		rc = catalog_sqlite_error(c, src, sql);
	sqlite3_free(sql);
	return rc;
}

/*
 * Version 2 -> 3: rebuild the catalog with page checksums (format.h).
 * VACUUM INTO writes a copy whose pages reserve the trailer; the copy is
 * made version 3 and synced; the connection to the old catalog is closed,
 * which checkpoints and removes its WAL (made durable by syncing the
 * directory, so that no old WAL can be replayed onto the new file); then
 * the copy replaces the catalog and the connection is opened again.  A
 * crash at any point leaves the old catalog or the new one.
 */
static int
catalog_upgrade_reserve(struct catalog *c, struct env *env)
{
	int reserve = CATALOG_PAGE_RESERVE;
	char *tmp = NULL, *wal = NULL, *dir = NULL;
	struct env_file *f;
	int src, rc;

	if ((tmp = bt_malloc(strlen(c->path) + sizeof(CATALOG_UPGRADE_SUFFIX)))
	    == NULL || (wal = bt_malloc(strlen(c->path) + sizeof("-wal"))) ==
	    NULL || (dir = env_path_parent(c->path)) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	sprintf(tmp, "%s%s", c->path, CATALOG_UPGRADE_SUFFIX);
	sprintf(wal, "%s-wal", c->path);
	/* What a crash during an earlier upgrade left. */
	if ((rc = env_path_remove(env, tmp)) < 0 && rc != -ENOENT)
		goto out;
	src = sqlite3_file_control(c->db, "main", SQLITE_FCNTL_RESERVE_BYTES,
	    &reserve);
	if (src != SQLITE_OK) {
		rc = catalog_sqlite_error(c, src, "reserve bytes");
		goto out;
	}
	if ((rc = catalog_execf(c, "VACUUM INTO %Q", tmp)) < 0 ||
	    (rc = catalog_execf(c, "ATTACH %Q AS upgrade", tmp)) < 0)
		goto out_remove;
	rc = catalog_execf(c, "PRAGMA upgrade.journal_mode = MEMORY;"
	    " PRAGMA upgrade.synchronous = FULL;"
	    " PRAGMA upgrade.user_version = %d", CATALOG_VERSION_RESERVE);
	if (rc == 0)
		rc = catalog_execf(c, "DETACH upgrade");
	else
		catalog_execf(c, "DETACH upgrade");
	if (rc < 0)
		goto out_remove;
	if ((rc = env_file_open(env, tmp, ENV_READ, &f)) < 0)
		goto out_remove;
	rc = env_file_sync(f);
	env_file_close(f);
	if (rc < 0)
		goto out_remove;

	if ((src = sqlite3_close(c->db)) != SQLITE_OK) {
		rc = catalog_sqlite_error(c, src, "close for the upgrade");
		goto out_remove;
	}
	c->db = NULL;
	sqlite_env_unregister(c->vfs);
	c->vfs = NULL;
	if (env_path_exists(env, wal)) {
		rc = bt_error_set(-EIO, "catalog %s: upgrade to version %d: "
		    "the WAL was not checkpointed", c->path,
		    CATALOG_VERSION_RESERVE);
		goto out_remove;
	}
	if ((rc = env_dir_sync(env, dir)) < 0 ||
	    (rc = env_path_rename(env, tmp, c->path)) < 0)
		goto out_remove;
	if ((rc = env_dir_sync(env, dir)) < 0)
		goto out;
	if ((rc = catalog_connect(env, c->path, SQLITE_OPEN_READWRITE,
	    &c->vfs, &c->db)) < 0)
		goto out;
	rc = catalog_setup(c);
	if (rc > 0)
		rc = bt_error_set(-EIO, "catalog %s: still version 2 after "
		    "the upgrade", c->path);
	goto out;
out_remove:
	env_path_remove(env, tmp);
out:
	bt_free(dir);
	bt_free(wal);
	bt_free(tmp);
	return rc;
}

int
catalog_open(struct env *env, const char *path, struct catalog **out)
{
	struct catalog *c;
	uint64_t size;
	int rc;

	if (env == NULL || path == NULL || path[0] == '\0')
		return bt_error_set(-EINVAL, "catalog: no env or path");
	bt_error_clear();
	if ((rc = env_path_size(env, path, &size)) < 0)
		return rc;
	if ((c = bt_calloc(1, sizeof(*c))) == NULL)
		return -ENOMEM;
	if ((c->path = bt_strdup(path)) == NULL) {
		rc = -ENOMEM;
		goto out_free;
	}
	c->owner_uid = (uint32_t)geteuid();
	c->owner_gid = (uint32_t)getegid();
	if ((rc = mutex_init(&c->mu)) < 0) {
		bt_error_set(rc, "catalog %s: mutex: %s", path, strerror(-rc));
		goto out_free;
	}
	if ((rc = catalog_connect(env, path, SQLITE_OPEN_READWRITE, &c->vfs,
	    &c->db)) < 0)
		goto out_mutex;
	if ((rc = catalog_setup(c)) > 0)
		rc = catalog_upgrade_reserve(c, env);
	if (rc < 0 || (rc = catalog_prepare(c)) < 0 ||
	    (rc = catalog_location_prepare(c)) < 0)
		goto out_close;
	*out = c;
	return 0;
out_close:
	catalog_location_finalize(c);
	for (int i = 0; i < STMT_COUNT; i++)
		sqlite3_finalize(c->stmts[i]);
	sqlite3_close(c->db);
	sqlite_env_unregister(c->vfs);
out_mutex:
	mutex_destroy(&c->mu);
out_free:
	bt_free(c->path);
	bt_free(c);
	return rc;
}

/*
 * Report a failure that catalog_check found damage by (BT_ECHECKSUM or
 * BT_ECORRUPT): the VFS's detail, "PATH: page 7 ..." or "PATH-wal: frame
 * 3 ...", without the path.  Other failures are errors, returned as they
 * are.
 */
static int
catalog_check_failed(struct catalog *c, int rc,
    void (*report)(void *arg, const char *problem), void *arg)
{
	const char *d = bt_error_detail();
	size_t n = strlen(c->path);
	char line[512];

	if (rc != BT_ECHECKSUM && rc != BT_ECORRUPT)
		return rc;
	if (strncmp(d, c->path, n) == 0 && strncmp(d + n, "-wal: ", 6) == 0)
		snprintf(line, sizeof(line), "WAL %s", d + n + 6);
	else if (strncmp(d, c->path, n) == 0 && strncmp(d + n, ": ", 2) == 0)
		snprintf(line, sizeof(line), "%s", d + n + 2);
	else
		snprintf(line, sizeof(line), "%s", d);
	if (report != NULL)
		report(arg, line);
	return 1;
}

int
catalog_check(struct catalog *c,
    void (*report)(void *arg, const char *problem), void *arg)
{
	sqlite3_stmt *st = NULL;
	const char *msg;
	int rc, src, pages, problems = 0;

	if (c->is_remote)
		return catalog_remote_refuse(c);
	mutex_lock(&c->mu);
	bt_error_clear();
	/* Copy the WAL into the database first: it reads (and so checks)
	 * the newest image of every page there, and leaves no page of the
	 * file that a crash tore in a checkpoint, which the WAL covers. */
	src = sqlite3_wal_checkpoint_v2(c->db, "main",
	    SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
	if (src != SQLITE_OK && (rc = catalog_check_failed(c,
	    catalog_sqlite_error(c, src, "checkpoint"), report, arg)) < 0)
		goto out_unlock;
	problems += src != SQLITE_OK;
	if ((rc = catalog_exec(c, catalog_stmt(c, STMT_BEGIN_READ))) < 0)
		goto out_unlock;
	if ((rc = sqlite_env_check(c->vfs, c->path, report, arg)) < 0)
		goto out;
	pages = rc;
	problems += rc;
	src = sqlite3_prepare_v2(c->db, "PRAGMA quick_check", -1, &st, NULL);
	while (st != NULL && (src = sqlite3_step(st)) == SQLITE_ROW) {
		msg = (const char *)sqlite3_column_text(st, 0);
		if (msg == NULL || strcmp(msg, "ok") == 0)
			continue;
		/* A page the scan above named already. */
		if (pages > 0 && strstr(msg, "error code=") != NULL)
			continue;
		problems++;
		if (report != NULL)
			report(arg, msg);
	}
	rc = problems;
	/* quick_check itself failed on a page it could not do without. */
	if (src != SQLITE_DONE && (rc = catalog_check_failed(c,
	    catalog_sqlite_error(c, src, "quick_check"), pages > 0 ? NULL :
	    report, arg)) > 0)
		rc = problems + (pages == 0);
out:
	sqlite3_finalize(st);
	if (!sqlite3_get_autocommit(c->db))
		return catalog_end(c, rc);
	/* An I/O error ended the read transaction already. */
out_unlock:
	mutex_unlock(&c->mu);
	return rc;
}

void
catalog_close(struct catalog *c)
{
	if (c == NULL)
		return;
	if (c->is_remote) {
		catalog_remote_close(c);
		return;
	}
	catalog_location_finalize(c);
	for (int i = 0; i < STMT_COUNT; i++)
		sqlite3_finalize(c->stmts[i]);
	sqlite3_close(c->db);
	sqlite_env_unregister(c->vfs);
	mutex_destroy(&c->mu);
	bt_free(c->path);
	bt_free(c);
}
