/*
 * test_sqlite_env.c - the SQLite VFS over the file environment: a WAL
 * database through the VFS on the local filesystem (then read by SQLite's
 * own VFS) and in the fault env; power loss after commits and after failed
 * commits; random fault points in WAL and rollback-journal modes, where
 * every commit that returned SQLITE_OK must survive and every failed one
 * must be all there or not at all, also on sealed databases (page
 * checksums) and with power losses that keep unsynced sectors out of
 * order; a full disk as SQLITE_FULL.
 * With TABLETFS_TEST_RADOS=CONF:POOL (tests/rados/test_env_rados.sh), WAL
 * and rollback-journal databases, sealed, through the VFS over the RADOS
 * env; the fault points are the in-memory env's own and are not run
 * there.
 */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "rados_util.h"
#include "tap.h"
#include "catalog/format.h"
#include "catalog/sqlite_env.h"
#include "util/crc32c.h"
#include "util/env.h"
#include "util/error.h"

#define PATH_SIZE	512
#define ROWS		12	/* rows of a transaction in the fixed tests */
#define MAX_ROWS	30	/* and at most, in the random ones */
#define MAX_TX		512

enum tx_state {
	TX_NONE,		/* not attempted */
	TX_COMMITTED,		/* COMMIT returned SQLITE_OK */
	TX_FAILED,		/* some step failed: all or nothing */
};

/* What a test expects of each transaction, by id. */
struct ledger {
	enum tx_state state[MAX_TX];
	int rows[MAX_TX];
	int next;
};

static int
exec(sqlite3 *db, const char *sql)
{
	return sqlite3_exec(db, sql, NULL, NULL, NULL);
}

/* The first column of the first row of sql as text (empty if none). */
static int
query_text(sqlite3 *db, const char *sql, char *dst, size_t size)
{
	sqlite3_stmt *st;
	const unsigned char *text;
	int src;

	dst[0] = '\0';
	if ((src = sqlite3_prepare_v2(db, sql, -1, &st, NULL)) != SQLITE_OK)
		return src;
	if ((src = sqlite3_step(st)) == SQLITE_ROW) {
		if ((text = sqlite3_column_text(st, 0)) != NULL)
			snprintf(dst, size, "%s", (const char *)text);
		src = SQLITE_OK;
	} else if (src == SQLITE_DONE) {
		src = SQLITE_OK;
	}
	sqlite3_finalize(st);
	return src;
}

static bool
integrity_ok(sqlite3 *db)
{
	char text[64];

	return query_text(db, "PRAGMA integrity_check", text,
	    sizeof(text)) == SQLITE_OK && strcmp(text, "ok") == 0;
}

/*
 * Open path through vfs (NULL: SQLite's default) and set it up: WAL mode
 * needs exclusive locking first; the rollback-journal mode syncs the
 * directory after deleting the journal (synchronous=EXTRA), without which
 * SQLite itself does not promise that a commit survives power loss.
 */
static int
db_open_reserve(const char *vfs, const char *path, bool wal, int reserve,
    sqlite3 **out)
{
	sqlite3 *db;
	char mode[16];
	int src;

	src = sqlite3_open_v2(path, &db,
	    SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, vfs);
	if (src != SQLITE_OK)
		goto out_close;
	sqlite3_extended_result_codes(db, 1);
	/* Before anything writes page 1 of a new file. */
	if (reserve > 0 && (src = sqlite3_file_control(db, "main",
	    SQLITE_FCNTL_RESERVE_BYTES, &reserve)) != SQLITE_OK)
		goto out_close;
	if (wal) {
		if ((src = exec(db, "PRAGMA locking_mode = EXCLUSIVE")) != 0 ||
		    (src = query_text(db, "PRAGMA journal_mode = WAL", mode,
		    sizeof(mode))) != SQLITE_OK ||
		    (src = exec(db, "PRAGMA synchronous = FULL;"
		    "PRAGMA wal_autocheckpoint = 16")) != SQLITE_OK)
			goto out_close;
		if (strcmp(mode, "wal") != 0) {
			diag("journal_mode is %s, not wal", mode);
			src = SQLITE_ERROR;
			goto out_close;
		}
	} else if ((src = exec(db, "PRAGMA journal_mode = DELETE;"
	    "PRAGMA synchronous = EXTRA")) != SQLITE_OK) {
		goto out_close;
	}
	if ((src = exec(db, "CREATE TABLE IF NOT EXISTS t ("
	    "tx INTEGER NOT NULL, k INTEGER NOT NULL, v BLOB, "
	    "PRIMARY KEY (tx, k))")) != SQLITE_OK)
		goto out_close;
	*out = db;
	return SQLITE_OK;
out_close:
	diag("open %s: %s", path, db != NULL ? sqlite3_errmsg(db) :
	    sqlite3_errstr(src));
	sqlite3_close(db);
	return src;
}

static int
db_open(const char *vfs, const char *path, bool wal, sqlite3 **out)
{
	return db_open_reserve(vfs, path, wal, 0, out);
}

/*
 * One transaction of rows rows with values of random sizes.  Returns the
 * first failure (after a rollback attempt) or SQLITE_OK once committed.
 */
static int
insert_tx(sqlite3 *db, int tx, int rows, uint64_t *rnd)
{
	uint8_t value[1500];
	sqlite3_stmt *st = NULL;
	size_t n;
	int k, src;

	if ((src = exec(db, "BEGIN")) != SQLITE_OK)
		return src;
	if ((src = sqlite3_prepare_v2(db,
	    "INSERT INTO t (tx, k, v) VALUES (?, ?, ?)", -1, &st,
	    NULL)) != SQLITE_OK)
		goto out_rollback;
	for (k = 0; k < rows; k++) {
		n = 16 + tap_rand(rnd) % (sizeof(value) - 16);
		memset(value, (tx + k) & 0xff, n);
		sqlite3_bind_int(st, 1, tx);
		sqlite3_bind_int(st, 2, k);
		sqlite3_bind_blob(st, 3, value, (int)n, SQLITE_STATIC);
		if ((src = sqlite3_step(st)) != SQLITE_DONE)
			goto out_rollback;
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	st = NULL;
	if ((src = exec(db, "COMMIT")) == SQLITE_OK)
		return SQLITE_OK;
out_rollback:
	sqlite3_finalize(st);
	if (!sqlite3_get_autocommit(db))
		exec(db, "ROLLBACK");
	return src;
}

/* Rows of transaction tx, or -1 when the query fails. */
static int
tx_rows(sqlite3 *db, int tx)
{
	sqlite3_stmt *st;
	int n = -1;

	if (sqlite3_prepare_v2(db, "SELECT count(*) FROM t WHERE tx = ?", -1,
	    &st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int(st, 1, tx);
	if (sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	return n;
}

/*
 * Whether the database holds what the ledger says: each committed
 * transaction whole, each failed one whole or not at all, nothing else.
 */
static bool
ledger_check(sqlite3 *db, const struct ledger *l, const char *label,
    int round)
{
	sqlite3_stmt *st;
	int found[MAX_TX] = { 0 };
	int tx, src, bad = 0;

	if (sqlite3_prepare_v2(db, "SELECT tx, count(*) FROM t GROUP BY tx",
	    -1, &st, NULL) != SQLITE_OK)
		return false;
	while ((src = sqlite3_step(st)) == SQLITE_ROW) {
		tx = sqlite3_column_int(st, 0);
		if (tx < 0 || tx >= MAX_TX) {
			bad++;
			continue;
		}
		found[tx] = sqlite3_column_int(st, 1);
	}
	sqlite3_finalize(st);
	if (src != SQLITE_DONE)
		return false;
	for (tx = 0; tx < MAX_TX; tx++) {
		if (l->state[tx] == TX_COMMITTED && found[tx] != l->rows[tx]) {
			diag("%s round %d: committed tx %d has %d of %d rows",
			    label, round, tx, found[tx], l->rows[tx]);
			bad++;
		} else if (l->state[tx] == TX_FAILED && found[tx] != 0 &&
		    found[tx] != l->rows[tx]) {
			diag("%s round %d: failed tx %d has %d of %d rows",
			    label, round, tx, found[tx], l->rows[tx]);
			bad++;
		} else if (l->state[tx] == TX_NONE && found[tx] != 0) {
			diag("%s round %d: unknown tx %d", label, round, tx);
			bad++;
		}
	}
	return bad == 0;
}

/* Run one transaction and record its outcome in the ledger. */
static int
ledger_tx(struct ledger *l, sqlite3 *db, int rows, uint64_t *rnd)
{
	int tx = l->next++, src;

	if (tx >= MAX_TX)
		tap_bail("too many transactions");
	l->rows[tx] = rows;
	src = insert_tx(db, tx, rows, rnd);
	l->state[tx] = src == SQLITE_OK ? TX_COMMITTED : TX_FAILED;
	return src;
}

static void
disarm(struct env *env)
{
	env_fault_fail_after(env, ENV_FAULT_APPEND, 0, 0, false);
	env_fault_fail_after(env, ENV_FAULT_SYNC, 0, 0, false);
	env_fault_fail_after(env, ENV_FAULT_OPEN, 0, 0, false);
}

/*
 * Power loss with the connection open: every write and sync from now on
 * fails, so closing can make nothing more durable; then everything not
 * synced is dropped.
 */
static int
crash_close_torn(struct env *env, sqlite3 *db, uint64_t torn_seed)
{
	int src;

	env_fault_fail_after(env, ENV_FAULT_APPEND, 1, -EIO, true);
	env_fault_fail_after(env, ENV_FAULT_SYNC, 1, -EIO, true);
	env_fault_fail_after(env, ENV_FAULT_OPEN, 1, -EIO, true);
	src = sqlite3_close(db);
	if (torn_seed != 0)
		env_fault_drop_unsynced_torn(env, torn_seed);
	else
		env_fault_drop_unsynced(env);
	disarm(env);
	return src;
}

static int
crash_close(struct env *env, sqlite3 *db)
{
	return crash_close_torn(env, db, 0);
}

/* A fault env with the directory /s, durable, and a VFS over it. */
static void
fault_setup(struct env **envp, struct sqlite_env **vp)
{
	if (env_fault_new(envp) < 0 || env_dir_create(*envp, "/s") < 0 ||
	    env_dir_sync(*envp, "/") < 0)
		tap_bail("fault env");
	if (sqlite_env_register(*envp, vp) < 0)
		tap_bail("sqlite_env_register");
}

static void
test_register(void)
{
	struct sqlite_env *v, *w;
	struct env *env;
	char name[64];

	if (env_fault_new(&env) < 0)
		tap_bail("env_fault_new");
	is_int(sqlite_env_register(env, &v), 0, "register");
	is_int(sqlite_env_register(env, &w), 0, "register again");
	ok(strncmp(sqlite_env_name(v), "tabletfs-env-", 13) == 0,
	    "the name is tabletfs-env-<hex>: %s", sqlite_env_name(v));
	ok(strcmp(sqlite_env_name(v), sqlite_env_name(w)) != 0,
	    "two registrations have distinct names");
	ok(sqlite3_vfs_find(sqlite_env_name(v)) != NULL,
	    "SQLite finds the VFS by its name");
	ok(sqlite3_vfs_find(NULL) != sqlite3_vfs_find(sqlite_env_name(v)) &&
	    sqlite3_vfs_find(NULL) != sqlite3_vfs_find(sqlite_env_name(w)),
	    "neither is the default VFS");
	snprintf(name, sizeof(name), "%s", sqlite_env_name(v));
	sqlite_env_unregister(v);
	ok(sqlite3_vfs_find(name) == NULL, "unregister removes it");
	ok(sqlite3_vfs_find(sqlite_env_name(w)) != NULL,
	    "and leaves the other");
	sqlite_env_unregister(w);
	sqlite_env_unregister(NULL);
	env_free(env);
}

/* Each method of the VFS and of its files, called directly. */
static void
test_methods(void)
{
	const int rw = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
	struct env_fault_stats before, after;
	struct env_file *ef;
	struct sqlite_env *v;
	struct env *env;
	sqlite3_vfs *vfs;
	sqlite3_file *file, *tmp;
	sqlite3_int64 size, now;
	char buf[64], msg[256];
	int out, res, src;

	fault_setup(&env, &v);
	if ((vfs = sqlite3_vfs_find(sqlite_env_name(v))) == NULL)
		tap_bail("sqlite3_vfs_find");
	if ((file = calloc(1, (size_t)vfs->szOsFile)) == NULL ||
	    (tmp = calloc(1, (size_t)vfs->szOsFile)) == NULL)
		tap_bail("calloc");

	is_int(vfs->xOpen(vfs, "/s/m.db", file, rw | SQLITE_OPEN_MAIN_DB,
	    &out), SQLITE_OK, "methods: open creates");
	is_int(out, rw | SQLITE_OPEN_MAIN_DB, "methods: the flags come back");
	is_int(file->pMethods->iVersion, 1,
	    "methods: version 1 (no shared memory, no mapping)");
	is_int(file->pMethods->xWrite(file, "hello", 5, 10), SQLITE_OK,
	    "methods: write past the end");
	is_int(file->pMethods->xFileSize(file, &size), SQLITE_OK,
	    "methods: file size");
	is_int(size, 15, "methods: the write extended the file");
	memset(buf, 'x', sizeof(buf));
	is_int(file->pMethods->xRead(file, buf, 8, 10),
	    SQLITE_IOERR_SHORT_READ, "methods: a read past the end is short");
	ok(memcmp(buf, "hello\0\0\0", 8) == 0,
	    "methods: and zero-fills the rest");
	memset(buf, 'x', sizeof(buf));
	is_int(file->pMethods->xRead(file, buf, 4, 0), SQLITE_OK,
	    "methods: read the gap");
	ok(memcmp(buf, "\0\0\0\0", 4) == 0, "methods: the gap is zeros");
	is_int(file->pMethods->xTruncate(file, 12), SQLITE_OK,
	    "methods: truncate");
	ok(file->pMethods->xFileSize(file, &size) == SQLITE_OK && size == 12,
	    "methods: truncate sets the size");
	env_fault_get_stats(env, &before);
	is_int(file->pMethods->xSync(file, SQLITE_SYNC_FULL), SQLITE_OK,
	    "methods: sync");
	is_int(file->pMethods->xSync(file, SQLITE_SYNC_NORMAL |
	    SQLITE_SYNC_DATAONLY), SQLITE_OK, "methods: sync again");
	env_fault_get_stats(env, &after);
	ok(after.file_syncs == before.file_syncs + 2 &&
	    after.dir_syncs == before.dir_syncs + 1,
	    "methods: two file syncs, and the directory once");
	out = -1;
	ok(file->pMethods->xLock(file, SQLITE_LOCK_EXCLUSIVE) == SQLITE_OK &&
	    file->pMethods->xCheckReservedLock(file, &out) == SQLITE_OK &&
	    out == 0 && file->pMethods->xUnlock(file, SQLITE_LOCK_NONE) ==
	    SQLITE_OK, "methods: locks are no-ops; none is reported held");
	is_int(file->pMethods->xFileControl(file, SQLITE_FCNTL_SIZE_HINT,
	    &size), SQLITE_NOTFOUND, "methods: no file controls");
	is_int(file->pMethods->xSectorSize(file), 4096,
	    "methods: sector size");
	is_int(file->pMethods->xDeviceCharacteristics(file), 0,
	    "methods: no device promises");
	is_int(file->pMethods->xClose(file), SQLITE_OK, "methods: close");

	ok(vfs->xAccess(vfs, "/s/m.db", SQLITE_ACCESS_EXISTS, &res) ==
	    SQLITE_OK && res == 1, "methods: access: the file exists");
	ok(env_file_open(env, "/s/empty", ENV_CREATE, &ef) == 0,
	    "methods: an empty file");
	env_file_close(ef);
	ok(vfs->xAccess(vfs, "/s/empty", SQLITE_ACCESS_EXISTS, &res) ==
	    SQLITE_OK && res == 0,
	    "methods: access: an empty file does not exist (no hot journal)");
	ok(vfs->xAccess(vfs, "/s/empty", SQLITE_ACCESS_READWRITE, &res) ==
	    SQLITE_OK && res == 1, "methods: access: but is writable");
	ok(vfs->xAccess(vfs, "/s/none", SQLITE_ACCESS_EXISTS, &res) ==
	    SQLITE_OK && res == 0, "methods: access: a missing file");

	is_int(vfs->xOpen(vfs, "/s/m.db", file, SQLITE_OPEN_READONLY |
	    SQLITE_OPEN_MAIN_DB, &out), SQLITE_OK, "methods: open read-only");
	is_int(file->pMethods->xWrite(file, "x", 1, 0), SQLITE_IOERR_WRITE,
	    "methods: a read-only file refuses writes");
	ok(vfs->xGetLastError(vfs, sizeof(msg), msg) == EBADF &&
	    strstr(msg, "/s/m.db") != NULL,
	    "methods: the last error is EBADF with the env's detail: %s",
	    msg);
	file->pMethods->xClose(file);
	ok(vfs->xOpen(vfs, "/s/none", file, SQLITE_OPEN_READONLY, &out) ==
	    SQLITE_CANTOPEN && file->pMethods == NULL,
	    "methods: a missing file does not open read-only");
	ok(vfs->xOpen(vfs, "/s/m.db", file, rw | SQLITE_OPEN_EXCLUSIVE,
	    &out) == SQLITE_CANTOPEN && file->pMethods == NULL,
	    "methods: an exclusive open of an existing file fails");
	env_fault_fail_after(env, ENV_FAULT_OPEN, 1, -EMFILE, false);
	ok(vfs->xOpen(vfs, "/s/n.db", file, rw, &out) == SQLITE_CANTOPEN &&
	    vfs->xGetLastError(vfs, 0, NULL) == EMFILE,
	    "methods: a failed open is CANTOPEN with its errno");

	is_int(vfs->xDelete(vfs, "/s/m.db", 1), SQLITE_OK, "methods: delete");
	ok(!env_path_exists(env, "/s/m.db"), "methods: the file is gone");
	is_int(vfs->xDelete(vfs, "/s/m.db", 0), SQLITE_IOERR_DELETE_NOENT,
	    "methods: deleting a missing file is IOERR_DELETE_NOENT");

	is_int(vfs->xOpen(vfs, "/s/gone", file, rw |
	    SQLITE_OPEN_DELETEONCLOSE, &out), SQLITE_OK,
	    "methods: open delete-on-close");
	file->pMethods->xWrite(file, "x", 1, 0);
	ok(env_path_exists(env, "/s/gone"), "methods: it exists while open");
	file->pMethods->xClose(file);
	ok(!env_path_exists(env, "/s/gone"), "methods: and not after close");

	is_int(vfs->xOpen(vfs, "/s/a.db", file, rw, &out), SQLITE_OK,
	    "methods: open a file");
	is_int(vfs->xOpen(vfs, NULL, tmp, rw | SQLITE_OPEN_DELETEONCLOSE |
	    SQLITE_OPEN_TEMP_JOURNAL, &out), SQLITE_OK,
	    "methods: open a nameless temporary file");
	ok(tmp->pMethods != file->pMethods,
	    "methods: it belongs to the default VFS");
	memset(buf, 0, sizeof(buf));
	ok(tmp->pMethods->xWrite(tmp, "temp", 4, 0) == SQLITE_OK &&
	    tmp->pMethods->xRead(tmp, buf, 4, 0) == SQLITE_OK &&
	    memcmp(buf, "temp", 4) == 0, "methods: and works");
	is_int(tmp->pMethods->xClose(tmp), SQLITE_OK,
	    "methods: close the temporary file");
	file->pMethods->xClose(file);

	memset(buf, 0, sizeof(buf));
	ok(vfs->xFullPathname(vfs, "/s/a.db", sizeof(buf), buf) ==
	    SQLITE_OK && strcmp(buf, "/s/a.db") == 0,
	    "methods: a full path name is the name");
	is_int(vfs->xFullPathname(vfs, "/s/a.db", 7, buf), SQLITE_CANTOPEN,
	    "methods: a name too long for the buffer");
	is_int(vfs->xRandomness(vfs, 16, buf), 16, "methods: randomness");
	now = 0;
	src = vfs->xCurrentTimeInt64(vfs, &now);
	ok(src == SQLITE_OK &&
	    now > 212000000000000ll && now < 214000000000000ll,
	    "methods: the time (%lld ms since the Julian epoch)",
	    (long long)now);

	free(tmp);
	free(file);
	sqlite_env_unregister(v);
	env_free(env);
}

/*
 * A WAL database through the VFS on the local filesystem, reopened
 * through it, then read by SQLite's own VFS; and one in rollback mode.
 */
static void
test_posix(const char *root)
{
	char path[PATH_SIZE], wal[PATH_SIZE + 16], journal[PATH_SIZE + 16];
	char text[PATH_SIZE + 16];
	struct sqlite_env *v;
	struct env *env;
	uint64_t rnd = 1;
	sqlite3 *db;
	int tx, bad;

	if (env_posix_new(&env) < 0 || sqlite_env_register(env, &v) < 0)
		tap_bail("posix env");
	snprintf(path, sizeof(path), "%s/cat.db", root);
	snprintf(wal, sizeof(wal), "%s-wal", path);

	is_int(db_open(sqlite_env_name(v), path, true, &db), SQLITE_OK,
	    "posix: open a new WAL database through the VFS");
	for (tx = 0, bad = 0; tx < 10; tx++)
		if (insert_tx(db, tx, ROWS, &rnd) != SQLITE_OK)
			bad++;
	is_int(bad, 0, "posix: ten transactions commit");
	ok(access(wal, F_OK) == 0, "posix: the WAL is a file beside the db");
	is_int(sqlite3_close(db), SQLITE_OK, "posix: close");
	ok(access(wal, F_OK) != 0,
	    "posix: closing checkpoints and deletes the WAL (xDelete)");

	is_int(db_open(sqlite_env_name(v), path, true, &db), SQLITE_OK,
	    "posix: reopen through the VFS");
	for (tx = 0, bad = 0; tx < 10; tx++)
		if (tx_rows(db, tx) != ROWS)
			bad++;
	is_int(bad, 0, "posix: every transaction is there after reopening");
	ok(integrity_ok(db), "posix: integrity_check is ok");
	is_int(sqlite3_close(db), SQLITE_OK, "posix: close");

	is_int(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL),
	    SQLITE_OK, "posix: SQLite's own VFS opens the file");
	is_int(tx_rows(db, 9), ROWS, "posix: and reads the rows");
	ok(query_text(db, "SELECT count(*) FROM t", text, sizeof(text)) ==
	    SQLITE_OK && atoi(text) == 10 * ROWS,
	    "posix: all %d of them (%s)", 10 * ROWS, text);
	ok(query_text(db, "PRAGMA journal_mode", text, sizeof(text)) ==
	    SQLITE_OK && strcmp(text, "wal") == 0,
	    "posix: the file says WAL mode (%s)", text);
	ok(integrity_ok(db), "posix: integrity_check by the default VFS");
	sqlite3_close(db);
	remove(path);
	remove(wal);
	snprintf(text, sizeof(text), "%s-shm", path);
	remove(text);

	snprintf(path, sizeof(path), "%s/del.db", root);
	snprintf(journal, sizeof(journal), "%s-journal", path);
	is_int(db_open(sqlite_env_name(v), path, false, &db), SQLITE_OK,
	    "posix: open a rollback-journal database through the VFS");
	for (tx = 0, bad = 0; tx < 3; tx++)
		if (insert_tx(db, tx, ROWS, &rnd) != SQLITE_OK)
			bad++;
	is_int(bad, 0, "posix: three transactions commit");
	ok(access(journal, F_OK) != 0,
	    "posix: each commit deletes its journal");
	is_int(sqlite3_close(db), SQLITE_OK, "posix: close");
	is_int(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL),
	    SQLITE_OK, "posix: SQLite's own VFS opens it");
	ok(query_text(db, "SELECT count(*) FROM t", text, sizeof(text)) ==
	    SQLITE_OK && atoi(text) == 3 * ROWS,
	    "posix: and reads all %d rows (%s)", 3 * ROWS, text);
	sqlite3_close(db);
	remove(path);

	sqlite_env_unregister(v);
	env_free(env);
}

/* The same round trip, in memory: the bytes are in the env only. */
static void
test_fault_round_trip(void)
{
	struct env_fault_stats st;
	struct env_file *f;
	struct sqlite_env *v;
	struct env *env;
	uint64_t rnd = 2;
	char magic[16];
	sqlite3 *db;
	int tx, bad, src;

	fault_setup(&env, &v);
	is_int(db_open(sqlite_env_name(v), "/s/cat.db", true, &db),
	    SQLITE_OK, "fault: open a new WAL database");
	for (tx = 0, bad = 0; tx < 10; tx++)
		if (insert_tx(db, tx, ROWS, &rnd) != SQLITE_OK)
			bad++;
	is_int(bad, 0, "fault: ten transactions commit");
	ok(env_path_exists(env, "/s/cat.db-wal"),
	    "fault: the WAL is a file of the env");
	ok(access("/s/cat.db", F_OK) != 0 && access("/s", F_OK) != 0,
	    "fault: nothing reached the real filesystem");
	is_int(sqlite3_close(db), SQLITE_OK, "fault: close");
	ok(!env_path_exists(env, "/s/cat.db-wal"),
	    "fault: closing deletes the WAL");
	env_fault_get_stats(env, &st);
	ok(st.appends > 0 && st.file_syncs > 0 && st.dir_syncs > 1,
	    "fault: SQLite wrote, synced files and synced /s "
	    "(%llu, %llu, %llu)", (unsigned long long)st.appends,
	    (unsigned long long)st.file_syncs,
	    (unsigned long long)st.dir_syncs);

	ok(env_file_open(env, "/s/cat.db", ENV_READ, &f) == 0 &&
	    env_file_read_exact(f, 0, magic, sizeof(magic)) == 0 &&
	    memcmp(magic, "SQLite format 3", 16) == 0,
	    "fault: the env file is a SQLite database");
	env_file_close(f);
	is_int(db_open(sqlite_env_name(v), "/s/cat.db", true, &db),
	    SQLITE_OK, "fault: reopen");
	for (tx = 0, bad = 0; tx < 10; tx++)
		if (tx_rows(db, tx) != ROWS)
			bad++;
	is_int(bad, 0, "fault: every transaction is there after reopening");
	ok(integrity_ok(db), "fault: integrity_check is ok");
	is_int(sqlite3_close(db), SQLITE_OK, "fault: close");

	src = sqlite3_open_v2("/nodir/x.db", &db,
	    SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, sqlite_env_name(v));
	is_int(src, SQLITE_CANTOPEN, "fault: a db in a missing dir: CANTOPEN");
	is_int(sqlite3_system_errno(db), ENOENT,
	    "fault: sqlite3_system_errno says ENOENT");
	sqlite3_close(db);
	src = sqlite3_open_v2("/s/absent.db", &db, SQLITE_OPEN_READWRITE,
	    sqlite_env_name(v));
	is_int(src, SQLITE_CANTOPEN,
	    "fault: opening a missing db without CREATE is CANTOPEN");
	sqlite3_close(db);
	ok(!env_path_exists(env, "/s/absent.db"), "fault: and creates nothing");

	sqlite_env_unregister(v);
	env_free(env);
}

/* Transactions committed under synchronous=FULL survive power loss. */
static void
test_power_loss_after_commit(void)
{
	struct sqlite_env *v;
	struct env *env;
	uint64_t rnd = 3;
	sqlite3 *db;

	fault_setup(&env, &v);
	is_int(db_open(sqlite_env_name(v), "/s/cat.db", true, &db),
	    SQLITE_OK, "commit+crash: open");
	is_int(insert_tx(db, 1, ROWS, &rnd), SQLITE_OK,
	    "commit+crash: commit A");
	is_int(insert_tx(db, 2, ROWS, &rnd), SQLITE_OK,
	    "commit+crash: commit B");
	is_int(crash_close(env, db), SQLITE_OK, "commit+crash: power loss");
	is_int(db_open(sqlite_env_name(v), "/s/cat.db", true, &db),
	    SQLITE_OK, "commit+crash: reopen");
	is_int(tx_rows(db, 1), ROWS, "commit+crash: A is there");
	is_int(tx_rows(db, 2), ROWS, "commit+crash: B is there");
	ok(integrity_ok(db), "commit+crash: integrity_check is ok");
	sqlite3_close(db);
	sqlite_env_unregister(v);
	env_free(env);
}

/*
 * A commit that fails on its first write (or sync) is reported, and after
 * power loss the database has the commit before it and not this one.
 */
static void
test_failed_commit(enum env_fault_op op, const char *label)
{
	struct sqlite_env *v;
	struct env *env;
	uint64_t rnd = 4;
	sqlite3 *db;
	int src;

	fault_setup(&env, &v);
	is_int(db_open(sqlite_env_name(v), "/s/cat.db", true, &db),
	    SQLITE_OK, "%s: open", label);
	is_int(insert_tx(db, 1, ROWS, &rnd), SQLITE_OK, "%s: commit A", label);
	env_fault_fail_after(env, op, 1, -EIO, true);
	src = insert_tx(db, 2, ROWS, &rnd);
	is_int(src & 0xff, SQLITE_IOERR, "%s: commit B fails with IOERR (%s)",
	    label, sqlite3_errstr(src));
	is_int(crash_close(env, db), SQLITE_OK, "%s: power loss", label);
	is_int(db_open(sqlite_env_name(v), "/s/cat.db", true, &db),
	    SQLITE_OK, "%s: reopen", label);
	is_int(tx_rows(db, 1), ROWS, "%s: A is there", label);
	is_int(tx_rows(db, 2), 0, "%s: B is not", label);
	ok(integrity_ok(db), "%s: integrity_check is ok", label);
	sqlite3_close(db);
	sqlite_env_unregister(v);
	env_free(env);
}

/*
 * A failed write reaches sqlite3_system_errno() with the env's errno
 * (SQLite asks the VFS when a statement, not a commit, fails: a page
 * write into the rollback journal here).
 */
static void
test_system_errno(void)
{
	struct sqlite_env *v;
	struct env *env;
	uint64_t rnd = 6;
	sqlite3 *db;
	int src;

	fault_setup(&env, &v);
	is_int(db_open(sqlite_env_name(v), "/s/cat.db", false, &db),
	    SQLITE_OK, "errno: open in rollback mode");
	is_int(insert_tx(db, 1, ROWS, &rnd), SQLITE_OK, "errno: commit A");
	env_fault_fail_after(env, ENV_FAULT_APPEND, 1, -EROFS, false);
	src = exec(db, "DELETE FROM t");
	is_int(src, SQLITE_IOERR_WRITE, "errno: the write fails (%s)",
	    sqlite3_errstr(src));
	is_int(sqlite3_system_errno(db), EROFS,
	    "errno: sqlite3_system_errno says EROFS");
	is_int(tx_rows(db, 1), ROWS, "errno: the statement was undone");
	sqlite3_close(db);
	sqlite_env_unregister(v);
	env_free(env);
}

/* ENOSPC from the env is SQLITE_FULL; the connection carries on. */
static void
test_full_disk(void)
{
	struct sqlite_env *v;
	struct env *env;
	uint64_t rnd = 5;
	sqlite3 *db;
	int src;

	fault_setup(&env, &v);
	is_int(db_open(sqlite_env_name(v), "/s/cat.db", true, &db),
	    SQLITE_OK, "full: open");
	is_int(insert_tx(db, 1, ROWS, &rnd), SQLITE_OK, "full: commit A");
	env_fault_fail_after(env, ENV_FAULT_APPEND, 1, -ENOSPC, false);
	src = insert_tx(db, 2, ROWS, &rnd);
	is_int(src, SQLITE_FULL, "full: commit B is SQLITE_FULL (%s)",
	    sqlite3_errstr(src));
	is_int(insert_tx(db, 3, ROWS, &rnd), SQLITE_OK,
	    "full: with space again, commit C");
	is_int(crash_close(env, db), SQLITE_OK, "full: power loss");
	is_int(db_open(sqlite_env_name(v), "/s/cat.db", true, &db),
	    SQLITE_OK, "full: reopen");
	ok(tx_rows(db, 1) == ROWS && tx_rows(db, 2) == 0 &&
	    tx_rows(db, 3) == ROWS, "full: A and C are there, B is not");
	ok(integrity_ok(db), "full: integrity_check is ok");
	sqlite3_close(db);

	src = sqlite3_open_v2("/s/new.db", &db,
	    SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, sqlite_env_name(v));
	is_int(src, SQLITE_OK, "full: open a new db");
	env_fault_fail_after(env, ENV_FAULT_APPEND, 1, -ENOSPC, true);
	src = exec(db, "CREATE TABLE x (a)");
	is_int(src, SQLITE_FULL, "full: its first write is SQLITE_FULL (%s)",
	    sqlite3_errstr(src));
	disarm(env);
	sqlite3_close(db);
	sqlite_env_unregister(v);
	env_free(env);
}

/*
 * Rounds of: reopen (checking the ledger and integrity), a few commits,
 * then a fault at a random point (the nth write or sync, failing once or
 * for good, EIO or ENOSPC) under more commits, then power loss, either
 * with the connection open or after a clean close.
 */
static void
test_random_faults(bool wal, bool sealed, bool torn, int rounds,
    uint64_t seed)
{
	const char *label = wal ? sealed ? torn ? "random torn sealed wal" :
	    "random sealed wal" : "random wal" : sealed ? torn ?
	    "random torn sealed rollback" : "random sealed rollback" :
	    "random rollback";
	const char *path = wal ? "/s/wal.db" : "/s/rollback.db";
	struct ledger *l;
	struct sqlite_env *v;
	struct env *env;
	uint64_t rnd = seed;
	enum env_fault_op op;
	long nth;
	int round, i, n, src, committed = 0, failed = 0;
	int bad_open = 0, bad_check = 0, bad_close = 0, bad_wal = 0;
	char wal_path[64];
	sqlite3 *db;

	if ((l = calloc(1, sizeof(*l))) == NULL)
		tap_bail("calloc");
	fault_setup(&env, &v);
	for (round = 0; round <= rounds; round++) {
		snprintf(wal_path, sizeof(wal_path), "%s-wal", path);
		if (wal && sqlite_env_wal_check(v, wal_path) != 0) {
			diag("%s round %d: wal check: %s", label, round,
			    bt_error_detail());
			bad_wal++;
		}
		src = db_open_reserve(sqlite_env_name(v), path, wal,
		    sealed ? CATALOG_PAGE_RESERVE : 0, &db);
		if (src != SQLITE_OK) {
			diag("%s round %d: reopen: %s (%s)", label, round,
			    sqlite3_errstr(src), bt_error_detail());
			bad_open++;
			break;
		}
		if (!integrity_ok(db) || !ledger_check(db, l, label, round))
			bad_check++;
		if (round == rounds) {
			sqlite3_close(db);
			break;
		}
		n = (int)(tap_rand(&rnd) % 3);
		for (i = 0; i < n; i++)
			ledger_tx(l, db, 1 + (int)(tap_rand(&rnd) % MAX_ROWS),
			    &rnd);
		op = tap_rand(&rnd) % 2 ? ENV_FAULT_APPEND : ENV_FAULT_SYNC;
		nth = 1 + (long)(tap_rand(&rnd) %
		    (op == ENV_FAULT_SYNC ? 8 : 30));
		env_fault_fail_after(env, op, nth,
		    tap_rand(&rnd) % 4 ? -EIO : -ENOSPC, tap_rand(&rnd) % 2);
		n = 1 + (int)(tap_rand(&rnd) % 5);
		for (i = 0; i < n; i++)
			ledger_tx(l, db, 1 + (int)(tap_rand(&rnd) % MAX_ROWS),
			    &rnd);
		if (tap_rand(&rnd) % 4 == 0) {
			disarm(env);
			src = sqlite3_close(db);
			env_fault_drop_unsynced(env);
		} else {
			/* Out of order: a later sector may survive an
			 * earlier one. */
			src = crash_close_torn(env, db, torn ?
			    tap_rand(&rnd) | 1 : 0);
		}
		if (src != SQLITE_OK)
			bad_close++;
	}
	for (i = 0; i < l->next; i++) {
		if (l->state[i] == TX_COMMITTED)
			committed++;
		else if (l->state[i] == TX_FAILED)
			failed++;
	}
	is_int(bad_open, 0, "%s: the database opens after every power loss",
	    label);
	if (wal)
		is_int(bad_wal, 0, "%s: sqlite_env_wal_check takes no torn end "
		    "for damage", label);
	is_int(bad_close, 0, "%s: every close returns SQLITE_OK", label);
	is_int(bad_check, 0, "%s: after every power loss integrity_check is "
	    "ok, every commit that returned OK is there, every failed one "
	    "whole or absent", label);
	ok(committed > rounds / 2 && failed > rounds / 4,
	    "%s: faults hit commits (%d committed, %d failed in %d rounds)",
	    label, committed, failed, rounds);
	sqlite_env_unregister(v);
	env_free(env);
	free(l);
}

/* ---- Page checksums ---- */

static uint32_t
be32_at(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
}

static uint32_t
le32_at(const uint8_t *p)
{
	return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[1] << 8 | p[0];
}

/* The whole of a local file, in memory (freed by the caller). */
static uint8_t *
slurp(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	uint8_t *p;
	long n;

	if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) != 0)
		tap_bail("slurp");
	if ((p = malloc((size_t)n + 1)) == NULL ||
	    fread(p, 1, (size_t)n, f) != (size_t)n)
		tap_bail("slurp read");
	fclose(f);
	*size = (size_t)n;
	return p;
}

/* XOR one byte of a local file with 0x5a (twice restores it). */
static void
flip(const char *path, uint64_t at)
{
	FILE *f = fopen(path, "r+b");
	int ch;

	if (f == NULL || fseek(f, (long)at, SEEK_SET) != 0 ||
	    (ch = fgetc(f)) == EOF || fseek(f, (long)at, SEEK_SET) != 0 ||
	    fputc(ch ^ 0x5a, f) == EOF || fclose(f) != 0)
		tap_bail("flip");
}

/*
 * Pages of the file at path whose trailer is not what catalog/format.h
 * says (computed here, not by the VFS); *pages receives their count.
 */
static int
unsealed_pages(const char *path, size_t *pages)
{
	size_t size, bad = 0;
	uint8_t *p = slurp(path, &size);
	uint32_t ps = (uint32_t)p[16] << 8 | p[17];

	*pages = size / ps;
	for (size_t i = 0; i < *pages; i++) {
		const uint8_t *pg = p + i * ps;

		if (le32_at(pg + ps - 8) != i + 1 || le32_at(pg + ps - 4) !=
		    crc32c_mask(crc32c_value(pg, ps - 4)))
			bad++;
	}
	free(p);
	return (int)bad;
}

/* A query's result code, extended, with the detail kept for the caller. */
static int
query_code(sqlite3 *db, const char *sql)
{
	char text[64];

	bt_error_clear();
	if (query_text(db, sql, text, sizeof(text)) == SQLITE_OK)
		return SQLITE_OK;
	return sqlite3_extended_errcode(db);
}

static int
root_page(sqlite3 *db, const char *table)
{
	char sql[128], text[32];

	snprintf(sql, sizeof(sql),
	    "SELECT rootpage FROM sqlite_schema WHERE name = '%s'", table);
	if (query_text(db, sql, text, sizeof(text)) != SQLITE_OK)
		tap_bail("rootpage");
	return atoi(text);
}

static void
report_count(void *arg, const char *problem)
{
	int *n = arg;

	if ((*n)++ < 5)
		diag("check: %s", problem);
}

/*
 * A sealed database (reserve bytes set before its first page): every page
 * written carries the trailer; a byte flipped in the schema page, in a
 * table's b-tree page, in a trailer or in the reserve byte of the header
 * fails the read of that page with SQLITE_IOERR_DATA and a detail naming
 * the page, while pages left alone stay readable; a flip in a page image
 * that is only in the WAL fails against the frame checksum.
 */
static void
test_sealed(const char *root)
{
	char path[PATH_SIZE], wal[PATH_SIZE + 16], want[PATH_SIZE + 64];
	struct sqlite_env *v;
	struct env *env;
	uint64_t rnd = 7;
	size_t pages, size;
	uint8_t *bytes;
	int tx, bad, t_root, u_root, n, frames, ps;
	sqlite3 *db;

	if (env_posix_new(&env) < 0 || sqlite_env_register(env, &v) < 0)
		tap_bail("posix env");
	snprintf(path, sizeof(path), "%s/sealed.db", root);
	snprintf(wal, sizeof(wal), "%s-wal", path);
	is_int(db_open_reserve(sqlite_env_name(v), path, true,
	    CATALOG_PAGE_RESERVE, &db), SQLITE_OK,
	    "sealed: a new WAL database reserving %d bytes a page",
	    CATALOG_PAGE_RESERVE);
	for (tx = 0, bad = 0; tx < 10; tx++)
		if (insert_tx(db, tx, ROWS, &rnd) != SQLITE_OK)
			bad++;
	if (exec(db, "CREATE TABLE u (x TEXT);"
	    "INSERT INTO u VALUES ('left'), ('alone')") != SQLITE_OK)
		bad++;
	is_int(bad, 0, "sealed: ten transactions and a second table commit");
	t_root = root_page(db, "t");
	u_root = root_page(db, "u");
	is_int(sqlite3_close(db), SQLITE_OK, "sealed: close (checkpoint)");
	bytes = slurp(path, &size);
	ps = bytes[16] << 8 | bytes[17];
	is_int(bytes[20], CATALOG_PAGE_RESERVE, "sealed: header byte 20 says "
	    "%d reserved bytes", CATALOG_PAGE_RESERVE);
	free(bytes);
	is_int(unsealed_pages(path, &pages), 0, "sealed: each of the %zu "
	    "pages carries its number and the CRC32C of the rest", pages);
	ok(pages > 10 && t_root > 1 && u_root > 1 && t_root != u_root,
	    "sealed: t's root is page %d, u's page %d", t_root, u_root);
	n = -1;
	is_int(sqlite_env_check(v, path, NULL, NULL), 0,
	    "sealed: sqlite_env_check finds every page sound");

	/* Schema page: nothing can be read. */
	flip(path, (uint64_t)ps / 2);
	snprintf(want, sizeof(want), "%s: page 1 checksum mismatch", path);
	bt_error_clear();
	if (db_open(sqlite_env_name(v), path, true, &db) == SQLITE_OK) {
		is_int(query_code(db, "SELECT count(*) FROM u"),
		    SQLITE_IOERR_DATA, "schema page: a read fails");
		sqlite3_close(db);
	} else {
		ok(true, "schema page: the open fails");
	}
	ok(strcmp(bt_error_detail(), want) == 0,
	    "schema page: the detail names it: %s", bt_error_detail());
	n = 0;
	is_int(sqlite_env_check(v, path, report_count, &n), 1,
	    "schema page: sqlite_env_check finds the one damaged page");
	flip(path, (uint64_t)ps / 2);

	/* A table's page: that table fails, the other reads. */
	for (int trailer = 0; trailer < 2; trailer++) {
		uint64_t at = (uint64_t)(u_root - 1) * ps +
		    (trailer ? ps - 1 : ps / 2);

		flip(path, at);
		if (db_open(sqlite_env_name(v), path, true, &db) != SQLITE_OK)
			tap_bail("reopen");
		is_int(query_code(db, "SELECT count(*) FROM u"),
		    SQLITE_IOERR_DATA, "%s of u's page: u fails to read",
		    trailer ? "the trailer" : "the body");
		snprintf(want, sizeof(want), "%s: page %d checksum mismatch",
		    path, u_root);
		ok(strcmp(bt_error_detail(), want) == 0,
		    "and the detail names the page: %s", bt_error_detail());
		is_int(tx_rows(db, 9), ROWS, "t, on pages left alone, reads");
		is_int(query_code(db, "SELECT count(*) FROM u"),
		    SQLITE_IOERR_DATA, "u fails again (nothing cached it)");
		sqlite3_close(db);
		flip(path, at);
	}

	/* The reserve byte itself: the checks do not turn off. */
	flip(path, 20);
	bt_error_clear();
	if (db_open(sqlite_env_name(v), path, true, &db) == SQLITE_OK) {
		ok(query_code(db, "SELECT count(*) FROM u") ==
		    SQLITE_IOERR_DATA, "reserve byte: a read fails");
		sqlite3_close(db);
	} else {
		ok(true, "reserve byte: the open fails");
	}
	ok(strstr(bt_error_detail(), "page 1 checksum mismatch") != NULL,
	    "reserve byte: page 1 is named: %s", bt_error_detail());
	flip(path, 20);

	/* A page only in the WAL. */
	if (db_open(sqlite_env_name(v), path, true, &db) != SQLITE_OK ||
	    exec(db, "PRAGMA wal_autocheckpoint = 0;"
	    "CREATE TABLE w (x BLOB); PRAGMA wal_checkpoint(TRUNCATE);"
	    "INSERT INTO w VALUES (randomblob(3000))") != SQLITE_OK)
		tap_bail("WAL setup");
	bytes = slurp(wal, &size);
	frames = (int)((size - 32) / (ps + 24));
	is_int(be32_at(bytes + 32 + (size_t)(frames - 1) * (ps + 24)),
	    root_page(db, "w"), "WAL: the last of %d frames holds w's page",
	    frames);
	free(bytes);
	flip(wal, 32 + (uint64_t)(frames - 1) * (ps + 24) + 24 + 200);
	sqlite3_db_release_memory(db);
	is_int(query_code(db, "SELECT length(x) FROM w"), SQLITE_IOERR_DATA,
	    "WAL: reading the page fails");
	snprintf(want, sizeof(want), "%s: frame %d (page %d) checksum "
	    "mismatch", wal, frames, root_page(db, "w"));
	ok(strcmp(bt_error_detail(), want) == 0,
	    "WAL: the detail names the frame and page: %s",
	    bt_error_detail());
	is_int(tx_rows(db, 3), ROWS, "WAL: t, in the database file, reads");
	flip(wal, 32 + (uint64_t)(frames - 1) * (ps + 24) + 24 + 200);
	sqlite3_db_release_memory(db);
	is_int(query_code(db, "SELECT length(x) FROM w"), SQLITE_OK,
	    "WAL: restored, the page reads again");
	is_int(sqlite3_close(db), SQLITE_OK, "WAL: close checkpoints");
	is_int(unsealed_pages(path, &pages), 0, "WAL: the checkpoint sealed "
	    "the pages it copied (%zu pages)", pages);
	remove(path);
	sqlite_env_unregister(v);
	env_free(env);
}

/*
 * Pages SQLite writes before page 1 (a small cache spilling the first
 * transaction of a new file; VACUUM INTO a copy that adds the reserve)
 * are sealed too, once page 1 says the file is.
 */
static void
test_sealed_spill(const char *root)
{
	char path[PATH_SIZE], copy[PATH_SIZE + 16], sql[PATH_SIZE + 64];
	struct sqlite_env *v;
	struct env *env;
	uint64_t rnd = 9;
	size_t pages;
	int reserve = CATALOG_PAGE_RESERVE, bad = 0;
	sqlite3 *db;

	if (env_posix_new(&env) < 0 || sqlite_env_register(env, &v) < 0)
		tap_bail("posix env");
	snprintf(path, sizeof(path), "%s/spill.db", root);
	snprintf(copy, sizeof(copy), "%s.copy", path);
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE |
	    SQLITE_OPEN_CREATE, sqlite_env_name(v)) != SQLITE_OK ||
	    sqlite3_file_control(db, "main", SQLITE_FCNTL_RESERVE_BYTES,
	    &reserve) != SQLITE_OK ||
	    exec(db, "PRAGMA cache_size = 2; PRAGMA journal_mode = MEMORY;"
	    "CREATE TABLE t (tx INTEGER, k INTEGER, v BLOB,"
	    " PRIMARY KEY (tx, k))") != SQLITE_OK)
		tap_bail("spill setup");
	for (int tx = 0; tx < 4; tx++)
		if (insert_tx(db, tx, MAX_ROWS, &rnd) != SQLITE_OK)
			bad++;
	is_int(bad, 0, "spill: four transactions through a 2-page cache");
	sqlite3_close(db);
	is_int(unsealed_pages(path, &pages), 0, "spill: all %zu pages sealed",
	    pages);

	/* A database without the reserve, copied with it. */
	remove(path);
	if (sqlite3_open(path, &db) != SQLITE_OK ||
	    exec(db, "CREATE TABLE t (tx INTEGER, k INTEGER, v BLOB,"
	    " PRIMARY KEY (tx, k))") != SQLITE_OK)
		tap_bail("plain database");
	for (int tx = 0; tx < 4; tx++)
		insert_tx(db, tx, MAX_ROWS, &rnd);
	sqlite3_close(db);
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE,
	    sqlite_env_name(v)) != SQLITE_OK)
		tap_bail("open the plain database through the VFS");
	is_int(tx_rows(db, 3), MAX_ROWS, "plain: a database without the "
	    "reserve reads through the VFS as it is");
	is_int(sqlite_env_check(v, path, NULL, NULL), 0,
	    "plain: sqlite_env_check has nothing to check");
	snprintf(sql, sizeof(sql), "PRAGMA cache_size = 2; VACUUM INTO '%s'",
	    copy);
	reserve = CATALOG_PAGE_RESERVE;	/* the call returned the old one */
	if (sqlite3_file_control(db, "main", SQLITE_FCNTL_RESERVE_BYTES,
	    &reserve) != SQLITE_OK || exec(db, sql) != SQLITE_OK)
		tap_bail("VACUUM INTO");
	sqlite3_close(db);
	is_int(unsealed_pages(copy, &pages), 0, "VACUUM INTO through a 2-page "
	    "cache: all %zu pages of the copy sealed", pages);
	if (sqlite3_open_v2(copy, &db, SQLITE_OPEN_READWRITE,
	    sqlite_env_name(v)) != SQLITE_OK)
		tap_bail("open the copy");
	ok(integrity_ok(db) && tx_rows(db, 3) == MAX_ROWS,
	    "the copy is whole and reads");
	sqlite3_close(db);
	remove(path);
	remove(copy);
	sqlite_env_unregister(v);
	env_free(env);
}

/*
 * The round trips of test_posix on the RADOS env, sealed (the catalog's
 * page checksums): a WAL database through the VFS, reopened through a
 * second env (another client of the cluster, as another host would
 * be), its WAL object gone after close, every page sound; a
 * rollback-journal database whose commits delete their journal.
 */
static void
test_rados(void)
{
	char root[RADOS_TEST_PATH], root2[RADOS_TEST_PATH];
	char path[RADOS_TEST_PATH + 16], wal[RADOS_TEST_PATH + 32];
	char journal[RADOS_TEST_PATH + 32], text[64];
	struct sqlite_env *v, *w;
	struct env *env, *env2;
	uint64_t rnd = 3;
	sqlite3 *db;
	int tx, bad;

	if (!rados_test_env("test_sqlite_env", &env, root))
		return;
	ok(1, "# SKIP rados: fault points and power loss (the in-memory "
	    "env's)");
	if (sqlite_env_register(env, &v) < 0)
		tap_bail("sqlite_env_register");
	snprintf(path, sizeof(path), "%s/cat.db", root);
	snprintf(wal, sizeof(wal), "%s-wal", path);
	is_int(db_open_reserve(sqlite_env_name(v), path, true,
	    CATALOG_PAGE_RESERVE, &db), SQLITE_OK,
	    "rados: open a new sealed WAL database through the VFS");
	for (tx = 0, bad = 0; tx < 10; tx++)
		if (insert_tx(db, tx, ROWS, &rnd) != SQLITE_OK)
			bad++;
	is_int(bad, 0, "rados: ten transactions commit");
	ok(env_path_exists(env, wal), "rados: the WAL is an object beside "
	    "the db");
	is_int(sqlite3_close(db), SQLITE_OK, "rados: close");
	ok(!env_path_exists(env, wal),
	    "rados: closing checkpoints and deletes the WAL");

	if (!rados_test_env("test_sqlite_env.2", &env2, root2))
		tap_bail("second RADOS env");
	rados_test_clean(env2, root2);
	if (sqlite_env_register(env2, &w) < 0)
		tap_bail("sqlite_env_register");
	is_int(db_open(sqlite_env_name(w), path, true, &db), SQLITE_OK,
	    "rados: reopen through another client");
	for (tx = 0, bad = 0; tx < 10; tx++)
		if (tx_rows(db, tx) != ROWS)
			bad++;
	is_int(bad, 0, "rados: every transaction is there");
	ok(integrity_ok(db), "rados: integrity_check is ok");
	is_int(sqlite3_close(db), SQLITE_OK, "rados: close");
	is_int(sqlite_env_check(w, path, NULL, NULL), 0,
	    "rados: sqlite_env_check finds every page sound");
	sqlite_env_unregister(w);
	env_free(env2);

	snprintf(path, sizeof(path), "%s/del.db", root);
	snprintf(journal, sizeof(journal), "%s-journal", path);
	is_int(db_open(sqlite_env_name(v), path, false, &db), SQLITE_OK,
	    "rados: open a rollback-journal database through the VFS");
	for (tx = 0, bad = 0; tx < 3; tx++)
		if (insert_tx(db, tx, ROWS, &rnd) != SQLITE_OK)
			bad++;
	is_int(bad, 0, "rados: three transactions commit");
	ok(!env_path_exists(env, journal),
	    "rados: each commit deletes its journal");
	ok(query_text(db, "SELECT count(*) FROM t", text, sizeof(text)) ==
	    SQLITE_OK && atoi(text) == 3 * ROWS,
	    "rados: all %d rows read back (%s)", 3 * ROWS, text);
	is_int(sqlite3_close(db), SQLITE_OK, "rados: close");

	sqlite_env_unregister(v);
	rados_test_clean(env, root);
	env_free(env);
}

static int
remove_one(const char *path, const struct stat *st, int flag,
    struct FTW *ftw)
{
	return remove(path);
}

int
main(void)
{
	char tmp[] = "/tmp/test_sqlite_env.XXXXXX";
	uint64_t seed = tap_seed();

	if (mkdtemp(tmp) == NULL)
		tap_bail("mkdtemp");
	test_register();
	test_methods();
	test_posix(tmp);
	test_sealed(tmp);
	test_sealed_spill(tmp);
	nftw(tmp, remove_one, 16, FTW_DEPTH | FTW_PHYS);
	test_fault_round_trip();
	test_power_loss_after_commit();
	test_failed_commit(ENV_FAULT_APPEND, "failed write");
	test_failed_commit(ENV_FAULT_SYNC, "failed sync");
	test_system_errno();
	test_full_disk();
	test_random_faults(true, false, false, 50, seed);
	test_random_faults(false, false, false, 30, seed ^ 0x5bd1e995);
	test_random_faults(true, true, false, 50, seed ^ 0x9e3779b9);
	test_random_faults(false, true, false, 30, seed ^ 0x7f4a7c15);
	test_random_faults(true, true, true, 60, seed ^ 0x2545f491);
	test_random_faults(false, true, true, 40, seed ^ 0x6c078965);
	test_rados();
	sqlite3_shutdown();
	return tap_done();
}
