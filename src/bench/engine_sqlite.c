/*
 * engine_sqlite.c - tabletbench's engine over SQLite: one table
 * t(k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID (a B-tree keyed by k, as
 * LevelDB's tables are) in PATH/bench.db, in WAL mode.
 *
 * A connection per thread (opened on its first call, closed when the thread
 * exits or the store closes), each with a page cache of cfg->cache_bytes
 * and no mmap.  Durability as the other engines': a put with sync false
 * commits with synchronous=NORMAL (the WAL is written, fsynced only at
 * checkpoints), with sync true under synchronous=FULL (the WAL is fsynced
 * at every commit; SQLite has no group commit).  Writers take a mutex of
 * the store's before they begin, as an application would, so they never
 * wait in SQLite's busy handler; readers do not.  An increment is one
 * UPSERT ... RETURNING.  compact checkpoints the WAL and VACUUMs.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/stat.h>

#include <sqlite3.h>

#include "bench/bench.h"

#define SQ_FILE		"bench.db"
#define SQ_PUT		"INSERT OR REPLACE INTO t(k, v) VALUES (?1, ?2)"
#define SQ_GET		"SELECT v FROM t WHERE k = ?1"
#define SQ_SCAN		"SELECT k, v FROM t WHERE k >= ?1 ORDER BY k LIMIT ?2"
#define SQ_INCREMENT	"INSERT INTO t(k, v) VALUES (?1, ?2 || char(10)) " \
			"ON CONFLICT(k) DO UPDATE SET v = " \
			"(CAST(v AS INTEGER) + ?2) || char(10) RETURNING v"

struct sq;

/* One thread's connection and its prepared statements. */
struct sq_conn {
	struct sq *store;
	sqlite3 *db;
	sqlite3_stmt *put;
	sqlite3_stmt *get;
	sqlite3_stmt *scan;
	sqlite3_stmt *increment;
	bool full_sync;		/* synchronous=FULL now, else NORMAL */
	LIST_ENTRY(sq_conn) link;	/* in store->conns */
};

struct sq {
	char *path;		/* the database file */
	uint64_t cache_kib;
	pthread_key_t key;	/* this thread's struct sq_conn */
	pthread_mutex_t lock;	/* guards conns */
	pthread_mutex_t write;	/* one writer at a time */
	LIST_HEAD(, sq_conn) conns;
};

struct sq_scan {
	sqlite3_stmt *stmt;	/* the connection's scan statement */
};

static int
sq_error(sqlite3 *db, const char *what)
{
	return bt_error_set(-EIO, "sqlite %s: %s", what, db != NULL ?
	    sqlite3_errmsg(db) : "out of memory");
}

static void
sq_conn_close(struct sq_conn *c)
{
	sqlite3_finalize(c->put);
	sqlite3_finalize(c->get);
	sqlite3_finalize(c->scan);
	sqlite3_finalize(c->increment);
	sqlite3_close(c->db);
	free(c);
}

/* The key's destructor: a thread that made a connection exits. */
static void
sq_conn_drop(void *arg)
{
	struct sq_conn *c = arg;
	struct sq *s = c->store;

	pthread_mutex_lock(&s->lock);
	LIST_REMOVE(c, link);
	pthread_mutex_unlock(&s->lock);
	sq_conn_close(c);
}

static int
sq_exec(sqlite3 *db, const char *sql)
{
	char *msg = NULL;
	int rc;

	if (sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK)
		return 0;
	rc = bt_error_set(-EIO, "sqlite %s: %s", sql, msg != NULL ? msg :
	    sqlite3_errmsg(db));
	sqlite3_free(msg);
	return rc;
}

/* Open a connection with the store's settings and statements. */
static int
sq_conn_open(struct sq *s, struct sq_conn **cp)
{
	static const unsigned persist = SQLITE_PREPARE_PERSISTENT;
	struct sq_conn *c;
	char pragma[96];
	int rc = -EIO;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		return -ENOMEM;
	c->store = s;
	if (sqlite3_open_v2(s->path, &c->db, SQLITE_OPEN_READWRITE |
	    SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		rc = sq_error(c->db, "open");
		goto out_close;
	}
	snprintf(pragma, sizeof(pragma), "PRAGMA cache_size = -%" PRIu64
	    "; PRAGMA mmap_size = 0; PRAGMA synchronous = NORMAL",
	    s->cache_kib);
	sqlite3_busy_timeout(c->db, 60000);
	if ((rc = sq_exec(c->db, "PRAGMA journal_mode = WAL")) < 0 ||
	    (rc = sq_exec(c->db, pragma)) < 0 ||
	    (rc = sq_exec(c->db, "CREATE TABLE IF NOT EXISTS t (k BLOB "
	    "PRIMARY KEY, v BLOB) WITHOUT ROWID")) < 0)
		goto out_close;
	if (sqlite3_prepare_v3(c->db, SQ_PUT, -1, persist, &c->put,
	    NULL) != SQLITE_OK ||
	    sqlite3_prepare_v3(c->db, SQ_GET, -1, persist, &c->get,
	    NULL) != SQLITE_OK ||
	    sqlite3_prepare_v3(c->db, SQ_SCAN, -1, persist, &c->scan,
	    NULL) != SQLITE_OK ||
	    sqlite3_prepare_v3(c->db, SQ_INCREMENT, -1, persist,
	    &c->increment, NULL) != SQLITE_OK) {
		rc = sq_error(c->db, "prepare");
		goto out_close;
	}
	*cp = c;
	return 0;
out_close:
	sq_conn_close(c);
	return rc;
}

/* This thread's connection to s, opened on first use. */
static int
sq_conn_get(struct sq *s, struct sq_conn **cp)
{
	struct sq_conn *c = pthread_getspecific(s->key);
	int rc;

	if (c != NULL) {
		*cp = c;
		return 0;
	}
	if ((rc = sq_conn_open(s, &c)) < 0)
		return rc;
	if (pthread_setspecific(s->key, c) != 0) {
		sq_conn_close(c);
		return -ENOMEM;
	}
	pthread_mutex_lock(&s->lock);
	LIST_INSERT_HEAD(&s->conns, c, link);
	pthread_mutex_unlock(&s->lock);
	*cp = c;
	return 0;
}

static int
sq_close(void *db)
{
	struct sq *s = db;
	struct sq_conn *c;

	if (s == NULL)
		return 0;
	while ((c = LIST_FIRST(&s->conns)) != NULL) {
		LIST_REMOVE(c, link);
		sq_conn_close(c);
	}
	/* Only this thread can still hold a (now closed) connection. */
	pthread_setspecific(s->key, NULL);
	pthread_key_delete(s->key);
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->write);
	free(s->path);
	free(s);
	return 0;
}

static int
sq_open(const struct engine_config *cfg, const char *path, void **dbp)
{
	struct sq_conn *c;
	struct sq *s;
	int rc;

	if (mkdir(path, 0777) < 0 && errno != EEXIST)
		return bt_error_set(-errno, "%s: %s", path, strerror(errno));
	if ((s = calloc(1, sizeof(*s))) == NULL)
		return -ENOMEM;
	if (asprintf(&s->path, "%s/%s", path, SQ_FILE) < 0) {
		free(s);
		return -ENOMEM;
	}
	s->cache_kib = cfg->cache_bytes != 0 ? cfg->cache_bytes >> 10 : 2000;
	LIST_INIT(&s->conns);
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->write, NULL);
	if (pthread_key_create(&s->key, sq_conn_drop) != 0) {
		pthread_mutex_destroy(&s->lock);
		pthread_mutex_destroy(&s->write);
		free(s->path);
		free(s);
		return -EAGAIN;
	}
	if ((rc = sq_conn_get(s, &c)) < 0) {
		sq_close(s);
		return rc;
	}
	*dbp = s;
	return 0;
}

/* Run a write statement to completion; the caller holds s->write. */
static int
sq_step_write(struct sq_conn *c, sqlite3_stmt *st, const char *what)
{
	int rc = sqlite3_step(st);

	rc = rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : sq_error(c->db, what);
	return rc;
}

static int
sq_put(void *db, struct bench_bytes key, struct bench_bytes value,
    bool sync)
{
	struct sq *s = db;
	struct sq_conn *c;
	int rc;

	if ((rc = sq_conn_get(s, &c)) < 0)
		return rc;
	if (sync != c->full_sync) {
		if ((rc = sq_exec(c->db, sync ? "PRAGMA synchronous = FULL" :
		    "PRAGMA synchronous = NORMAL")) < 0)
			return rc;
		c->full_sync = sync;
	}
	sqlite3_bind_blob(c->put, 1, key.p, (int)key.n, SQLITE_STATIC);
	sqlite3_bind_blob(c->put, 2, value.n > 0 ? value.p : "", (int)value.n,
	    SQLITE_STATIC);
	pthread_mutex_lock(&s->write);
	rc = sq_step_write(c, c->put, "put");
	pthread_mutex_unlock(&s->write);
	sqlite3_reset(c->put);
	sqlite3_clear_bindings(c->put);
	return rc;
}

static int
sq_get(void *db, struct bench_bytes key, struct bench_buf *value)
{
	struct sq_conn *c;
	const void *p;
	size_t n;
	int rc;

	if ((rc = sq_conn_get(db, &c)) < 0)
		return rc;
	sqlite3_bind_blob(c->get, 1, key.p, (int)key.n, SQLITE_STATIC);
	switch (sqlite3_step(c->get)) {
	case SQLITE_ROW:
		p = sqlite3_column_blob(c->get, 0);
		n = (size_t)sqlite3_column_bytes(c->get, 0);
		if ((rc = bench_buf_reserve(value, n)) == 0) {
			if (n > 0)
				memcpy(value->p, p, n);
			value->n = n;
		}
		break;
	case SQLITE_DONE:
		rc = BT_NOTFOUND;
		break;
	default:
		rc = sq_error(c->db, "get");
		break;
	}
	sqlite3_reset(c->get);
	return rc;
}

static int
sq_scan_open(void *db, struct bench_bytes start, uint64_t limit,
    void **itp)
{
	struct sq_conn *c;
	struct sq_scan *sc;
	int rc;

	if ((rc = sq_conn_get(db, &c)) < 0)
		return rc;
	if ((sc = calloc(1, sizeof(*sc))) == NULL)
		return -ENOMEM;
	sc->stmt = c->scan;
	sqlite3_bind_blob(sc->stmt, 1, start.n > 0 ? start.p : "",
	    (int)start.n, SQLITE_TRANSIENT);
	sqlite3_bind_int64(sc->stmt, 2, limit != 0 && limit <= INT64_MAX ?
	    (sqlite3_int64)limit : -1);
	*itp = sc;
	return 0;
}

static int
sq_scan_next(void *it, struct bench_bytes *key, struct bench_bytes *value)
{
	struct sq_scan *sc = it;

	switch (sqlite3_step(sc->stmt)) {
	case SQLITE_ROW:
		key->p = sqlite3_column_blob(sc->stmt, 0);
		key->n = (size_t)sqlite3_column_bytes(sc->stmt, 0);
		value->p = sqlite3_column_blob(sc->stmt, 1);
		value->n = (size_t)sqlite3_column_bytes(sc->stmt, 1);
		return 0;
	case SQLITE_DONE:
		return BT_DONE;
	default:
		return sq_error(sqlite3_db_handle(sc->stmt), "scan");
	}
}

static void
sq_scan_close(void *it)
{
	struct sq_scan *sc = it;

	if (sc == NULL)
		return;
	sqlite3_reset(sc->stmt);
	sqlite3_clear_bindings(sc->stmt);
	free(sc);
}

static int
sq_compact(void *db)
{
	struct sq *s = db;
	struct sq_conn *c;
	int rc;

	if ((rc = sq_conn_get(s, &c)) < 0)
		return rc;
	pthread_mutex_lock(&s->write);
	if ((rc = sq_exec(c->db, "VACUUM")) == 0)
		rc = sq_exec(c->db, "PRAGMA wal_checkpoint(TRUNCATE)");
	pthread_mutex_unlock(&s->write);
	return rc;
}

static int
sq_increment(void *db, struct bench_bytes key, int64_t delta,
    int64_t *result)
{
	struct sq *s = db;
	struct sq_conn *c;
	int rc;

	if ((rc = sq_conn_get(s, &c)) < 0)
		return rc;
	if (c->full_sync) {
		if ((rc = sq_exec(c->db, "PRAGMA synchronous = NORMAL")) < 0)
			return rc;
		c->full_sync = false;
	}
	sqlite3_bind_blob(c->increment, 1, key.p, (int)key.n, SQLITE_STATIC);
	sqlite3_bind_int64(c->increment, 2, delta);
	pthread_mutex_lock(&s->write);
	if ((rc = sqlite3_step(c->increment)) == SQLITE_ROW)
		rc = bench_counter_parse(sqlite3_column_text(c->increment, 0),
		    (size_t)sqlite3_column_bytes(c->increment, 0), result);
	else
		rc = sq_error(c->db, "increment");
	while (rc == 0 && sqlite3_step(c->increment) == SQLITE_ROW)
		;
	pthread_mutex_unlock(&s->write);
	sqlite3_reset(c->increment);
	sqlite3_clear_bindings(c->increment);
	return rc;
}

static void
sq_describe(const struct engine_config *cfg, char *buf, size_t size)
{
	snprintf(buf, size, "SQLite %s: WITHOUT ROWID table, WAL, page cache "
	    "per connection, synchronous NORMAL (FULL for sync puts), no "
	    "compression", sqlite3_libversion());
}

const struct engine engine_sqlite = {
	.name = "sqlite",
	.open = sq_open,
	.close = sq_close,
	.put = sq_put,
	.get = sq_get,
	.scan_open = sq_scan_open,
	.scan_next = sq_scan_next,
	.scan_close = sq_scan_close,
	.compact = sq_compact,
	.increment = sq_increment,
	.describe = sq_describe,
};
