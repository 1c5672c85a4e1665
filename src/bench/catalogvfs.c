/*
 * catalogvfs - the catalog's SQLite database on a RADOS pool through the
 * project's VFS over the RADOS env (catalog/sqlite_env.h, page checksums)
 * beside the same database through Ceph's own SQLite VFS, libcephsqlite
 * (Debian libsqlite3-mod-ceph), loaded at run time as a SQLite extension
 * (docs/rados.md, "The catalog's VFS").
 *
 *	catalogvfs [-n TXNS] [-p PAGE_SIZE] [-q READS] [-r ROUNDS]
 *	    [-t TABLETS] [-V ours|ceph] [-F] CONF POOL
 *
 * Each round, on each VFS in turn (the order alternates by round), on a
 * fresh database in POOL: create it in place (catalog_create builds it
 * beside and renames it, which Ceph's VFS cannot) with the catalog's
 * schema, its pragmas (exclusive locking, WAL, synchronous = FULL, the
 * WAL checkpointed every 128 pages), its page reserve and page size
 * (PAGE_SIZE, 4096, SQLite's default, which the catalog keeps), holding
 * one table of TABLETS (100) tablets naming 3 files each; then TXNS (200)
 * transactions, each what a flush or compaction commits
 * (catalog_tablet_apply: a file named, the tablet's oldest file unnamed,
 * the redo point raised, and the next file number taken from meta) with
 * the catalog's own statements; READS (200) point reads of one tablet's
 * files in a read transaction; then a close and an open again (what a
 * tablet server's SERVE pays: the open, the pragmas, a WAL's check and
 * recovery if any, a first read), timed, and the database removed.  The
 * connection is the catalog's: one, NOMUTEX, in exclusive locking mode.
 * -V runs one of the two only.
 *
 * Standard output: one line per VFS and measure, the median of the
 * rounds' medians and the p99 over all rounds (the slowest, for create
 * and reopen, once a round), in microseconds:
 *	ours txn p50_us X p99_us Y
 *	ours reopen p50_us X max_us Y
 * ("ours" or "ceph"; txn, read, create, reopen), and the one-time cost of
 * loading each VFS (for Ceph's: loading the extension, whose first open
 * connects its own RADOS client).  Ceph's VFS reads CONF through
 * $CEPH_CONF and connects as client.admin (or $CEPH_ARGS's --id); when it
 * cannot be loaded the line "ceph unavailable: WHY" stands for its lines
 * and the status is still 0.
 *
 * -F: afterwards, the cell's fencing (docs/rados.md, "Fencing") of this
 * process: it takes a lock through its env as a tablet server does, a
 * second client fences it (env_rados_lock_fence), and one more
 * transaction is tried through each VFS.  Prints whether each committed:
 *	fence ours commit: disk I/O error (...: this RADOS client is
 *	    blocklisted (fenced) by the cluster)
 *	fence ceph commit: ok
 * Each round's medians go to standard error.  Exit status 1 on an error.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "bench/bench.h"
#include "catalog/format.h"
#include "catalog/sqlite_env.h"
#include "util/env.h"
#include "util/error.h"

#define MAX_ROUNDS	20
#define FILES_EACH	3	/* files a tablet names at the start */
#ifndef CEPH_EXTENSION
#define CEPH_EXTENSION	"libcephsqlite.so"	/* on the loader's path */
#endif

enum { TXN, READ, CREATE, REOPEN, MEASURES };

static const char *const measure_names[MEASURES] = {
	"txn", "read", "create", "reopen",
};

enum { OURS, CEPH, VFSES };

static const char *const vfs_names[VFSES] = { "ours", "ceph" };

/* The catalog's statements (catalog.c), as a flush or compaction runs them. */
static const char sql_file_insert[] =
    "INSERT INTO files"
    " (tablet_id, number, group_name, size, entry_count, max_seq)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6)";
static const char sql_file_delete[] =
    "DELETE FROM files WHERE tablet_id = ?1 AND number = ?2";
static const char sql_file_list[] =
    "SELECT number, group_name, size, entry_count, max_seq FROM files"
    " WHERE tablet_id = ?1 ORDER BY number DESC";
static const char sql_tablet_get[] =
    "SELECT table_id, flushed_seq FROM tablets WHERE id = ?1";
static const char sql_tablet_set_seq[] =
    "UPDATE tablets SET flushed_seq = ?2 WHERE id = ?1";
static const char sql_meta_set[] =
    "INSERT INTO meta (key, value) VALUES (?1, ?2)"
    " ON CONFLICT (key) DO UPDATE SET value = excluded.value";

struct vfs {
	const char *vfs;	/* for sqlite3_open_v2 */
	int flags;		/* SQLITE_OPEN_URI for Ceph's */
	int page_size;		/* of a new database */
	char path[256];		/* this round's database */
};

struct samples {
	double *v;
	size_t n;
};

static int
db_fail(sqlite3 *db, const char *what)
{
	fprintf(stderr, "catalogvfs: %s: %s (%s)\n", what,
	    db != NULL ? sqlite3_errmsg(db) : "no connection",
	    bt_error_detail());
	return -1;
}

static int
exec(sqlite3 *db, const char *sql)
{
	if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
		return db_fail(db, sql);
	return 0;
}

/*
 * Open path as catalog_open does: exclusive locking, WAL, the pragmas,
 * and for ours the WAL checked first (sqlite_env_wal_check).
 */
static int
db_open(struct vfs *v, struct sqlite_env *ours, bool create, sqlite3 **dbp)
{
	static const char pragmas[] =
	    "PRAGMA locking_mode = EXCLUSIVE; PRAGMA temp_store = MEMORY;"
	    " PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;"
	    " PRAGMA foreign_keys = ON; PRAGMA wal_autocheckpoint = 128;"
	    " PRAGMA journal_size_limit = 1048576;";
	int reserve = CATALOG_PAGE_RESERVE, rc;
	char wal[300], sql[64];
	sqlite3 *db = NULL;

	if (ours != NULL && !create) {
		snprintf(wal, sizeof(wal), "%s-wal", v->path);
		if ((rc = sqlite_env_wal_check(ours, wal)) < 0) {
			fprintf(stderr, "catalogvfs: %s: %s\n", wal,
			    bt_error_detail());
			return -1;
		}
	}
	if (sqlite3_open_v2(v->path, &db, SQLITE_OPEN_READWRITE |
	    (create ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_NOMUTEX | v->flags,
	    v->vfs) != SQLITE_OK)
		goto fail;
	sqlite3_extended_result_codes(db, 1);
	if (create && sqlite3_file_control(db, "main",
	    SQLITE_FCNTL_RESERVE_BYTES, &reserve) != SQLITE_OK)
		goto fail;
	snprintf(sql, sizeof(sql), "PRAGMA page_size = %d", v->page_size);
	if ((create && exec(db, sql) < 0) || exec(db, pragmas) < 0)
		goto out;
	*dbp = db;
	return 0;
fail:
	db_fail(db, v->path);
out:
	sqlite3_close(db);
	return -1;
}

static int
step_done(sqlite3 *db, sqlite3_stmt *st, const char *what)
{
	int src = sqlite3_step(st);

	sqlite3_reset(st);
	if (src != SQLITE_DONE && src != SQLITE_ROW)
		return db_fail(db, what);
	return 0;
}

/* The schema and one table of tablets tablets, 3 files each. */
static int
db_populate(sqlite3 *db, int tablets, int64_t *number)
{
	char sql[512];
	sqlite3_stmt *st;

	if (exec(db, "BEGIN IMMEDIATE;" CATALOG_SCHEMA_SQL
	    "INSERT INTO tables (name, tablet_size) VALUES ('t', 134217728);"
	    "INSERT INTO groups (table_id, name, block_size, compress, bloom,"
	    " in_memory) VALUES (1, 'default', 65536, 1, 0, 0);") < 0)
		return -1;
	for (int i = 1; i <= tablets; i++) {
		snprintf(sql, sizeof(sql), "INSERT INTO tablets (id, table_id,"
		    " start_row, end_row, flushed_seq) VALUES (%d, 1,"
		    " 'row%06d', 'row%06d', 0)", i, i - 1, i);
		if (exec(db, sql) < 0)
			return -1;
	}
	if (sqlite3_prepare_v2(db, sql_file_insert, -1, &st, NULL) !=
	    SQLITE_OK)
		return db_fail(db, "prepare");
	for (int i = 1; i <= tablets; i++) {
		for (int k = 0; k < FILES_EACH; k++) {
			sqlite3_bind_int64(st, 1, i);
			sqlite3_bind_int64(st, 2, ++*number);
			sqlite3_bind_text(st, 3, "default", -1, SQLITE_STATIC);
			sqlite3_bind_int64(st, 4, 4 << 20);
			sqlite3_bind_int64(st, 5, 40000);
			sqlite3_bind_int64(st, 6, *number * 1000);
			if (step_done(db, st, "insert file") < 0) {
				sqlite3_finalize(st);
				return -1;
			}
		}
	}
	sqlite3_finalize(st);
	snprintf(sql, sizeof(sql), "INSERT INTO meta (key, value) VALUES"
	    " ('next_number', %lld); COMMIT;", (long long)*number + 1);
	return exec(db, sql);
}

/*
 * One flush or compaction of tablet t: its oldest file unnamed, a new one
 * named, its redo point raised and the next file number taken, in one
 * transaction.  The oldest file's number is found by the read the server
 * makes before (catalog_files_list), inside the transaction here.
 */
static int
db_apply(sqlite3 *db, sqlite3_stmt *const st[], int64_t t, int64_t *number)
{
	int64_t oldest = 0;
	int src;

	if (exec(db, "BEGIN IMMEDIATE") < 0)
		return -1;
	sqlite3_bind_int64(st[0], 1, t);
	while ((src = sqlite3_step(st[0])) == SQLITE_ROW)
		oldest = sqlite3_column_int64(st[0], 0);
	sqlite3_reset(st[0]);
	if (src != SQLITE_DONE)
		goto fail;
	++*number;
	sqlite3_bind_text(st[1], 1, "next_number", -1, SQLITE_STATIC);
	sqlite3_bind_int64(st[1], 2, *number + 1);
	sqlite3_bind_int64(st[2], 1, t);
	sqlite3_bind_int64(st[2], 2, *number);
	sqlite3_bind_text(st[2], 3, "default", -1, SQLITE_STATIC);
	sqlite3_bind_int64(st[2], 4, 4 << 20);
	sqlite3_bind_int64(st[2], 5, 40000);
	sqlite3_bind_int64(st[2], 6, *number * 1000);
	sqlite3_bind_int64(st[3], 1, t);
	sqlite3_bind_int64(st[3], 2, oldest);
	sqlite3_bind_int64(st[4], 1, t);
	sqlite3_bind_int64(st[4], 2, *number * 1000);
	for (int i = 1; i <= 4; i++)
		if (step_done(db, st[i], "apply") < 0)
			goto fail;
	if (exec(db, "COMMIT") < 0)
		goto fail;
	return 0;
fail:
	sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	return -1;
}

/* A point read: a tablet and its files, in a read transaction. */
static int
db_read(sqlite3 *db, sqlite3_stmt *const st[], int64_t t)
{
	int src, rows = 0;

	if (exec(db, "BEGIN DEFERRED") < 0)
		return -1;
	sqlite3_bind_int64(st[5], 1, t);
	if (sqlite3_step(st[5]) != SQLITE_ROW)
		goto fail;
	sqlite3_reset(st[5]);
	sqlite3_bind_int64(st[0], 1, t);
	while ((src = sqlite3_step(st[0])) == SQLITE_ROW)
		rows++;
	sqlite3_reset(st[0]);
	if (src != SQLITE_DONE || rows != FILES_EACH)
		goto fail;
	return exec(db, "COMMIT");
fail:
	db_fail(db, "read");
	sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	return -1;
}

static int
stmts_prepare(sqlite3 *db, sqlite3_stmt *st[])
{
	const char *const sql[] = {
		sql_file_list, sql_meta_set, sql_file_insert,
		sql_file_delete, sql_tablet_set_seq, sql_tablet_get,
	};

	for (size_t i = 0; i < sizeof(sql) / sizeof(sql[0]); i++)
		if (sqlite3_prepare_v2(db, sql[i], -1, &st[i], NULL) !=
		    SQLITE_OK)
			return db_fail(db, sql[i]);
	return 0;
}

static void
stmts_finalize(sqlite3_stmt *st[])
{
	for (int i = 0; i < 6; i++) {
		sqlite3_finalize(st[i]);
		st[i] = NULL;
	}
}

/*
 * One round on one VFS: create, TXNS transactions, READS reads, a reopen
 * and a first read.  The connection is left open in *dbp (for -F).
 */
static int
round_run(struct vfs *v, struct sqlite_env *ours, int txns, int reads,
    int tablets, struct samples out[], sqlite3 **dbp, int64_t *number)
{
	sqlite3_stmt *st[6] = { NULL };
	uint64_t rnd = 42;
	sqlite3 *db;
	double t;

	*number = 0;
	t = bench_now_us();
	if (db_open(v, ours, true, &db) < 0)
		return -1;
	if (db_populate(db, tablets, number) < 0)
		goto fail;
	out[CREATE].v[out[CREATE].n++] = bench_now_us() - t;
	if (stmts_prepare(db, st) < 0)
		goto fail;
	for (int i = 0; i < txns; i++) {
		rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
		t = bench_now_us();
		if (db_apply(db, st, (int64_t)(rnd >> 33) % tablets + 1,
		    number) < 0)
			goto fail;
		out[TXN].v[out[TXN].n++] = bench_now_us() - t;
	}
	for (int i = 0; i < reads; i++) {
		rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
		t = bench_now_us();
		if (db_read(db, st, (int64_t)(rnd >> 33) % tablets + 1) < 0)
			goto fail;
		out[READ].v[out[READ].n++] = bench_now_us() - t;
	}
	stmts_finalize(st);
	if (sqlite3_close(db) != SQLITE_OK)
		return db_fail(db, "close");
	t = bench_now_us();
	if (db_open(v, ours, false, &db) < 0 || stmts_prepare(db, st) < 0 ||
	    db_read(db, st, 1) < 0)
		goto fail;
	out[REOPEN].v[out[REOPEN].n++] = bench_now_us() - t;
	stmts_finalize(st);
	*dbp = db;
	return 0;
fail:
	stmts_finalize(st);
	sqlite3_close(db);
	return -1;
}

/* Remove a database of ours and its WAL (and journal, if any). */
static void
ours_remove(struct env *env, const char *path)
{
	static const char *const tails[] = { "", "-wal", "-journal" };
	char name[300];

	for (size_t i = 0; i < sizeof(tails) / sizeof(tails[0]); i++) {
		snprintf(name, sizeof(name), "%s%s", path, tails[i]);
		env_path_remove(env, name);
	}
}

/* Remove a database of Ceph's VFS through the VFS (its stripes). */
static void
ceph_remove(const char *name)
{
	static const char *const tails[] = { "", "-wal", "-journal" };
	sqlite3_vfs *vfs = sqlite3_vfs_find("ceph");
	char path[300];

	for (size_t i = 0; vfs != NULL && i < sizeof(tails) /
	    sizeof(tails[0]); i++) {
		snprintf(path, sizeof(path), "%s%s", name, tails[i]);
		vfs->xDelete(vfs, path, 0);
	}
}

/*
 * Load libcephsqlite into SQLite (it registers the VFS "ceph" for the
 * process); false with why in why when it cannot be.
 */
static bool
ceph_load(const char *conf, char *why, size_t size)
{
	char *err = NULL;
	sqlite3 *db;
	bool ok;

	setenv("CEPH_CONF", conf, 0);
	if (sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE, NULL) !=
	    SQLITE_OK) {
		snprintf(why, size, "sqlite3_open: %s", sqlite3_errmsg(db));
		sqlite3_close(db);
		return false;
	}
	sqlite3_enable_load_extension(db, 1);
	ok = sqlite3_load_extension(db, CEPH_EXTENSION, NULL, &err) ==
	    SQLITE_OK && sqlite3_vfs_find("ceph") != NULL;
	if (!ok)
		snprintf(why, size, "%s", err != NULL ? err :
		    "no VFS named ceph after loading " CEPH_EXTENSION);
	sqlite3_free(err);
	sqlite3_close(db);
	return ok;
}

/*
 * -F: fence this process as the master fences a tablet server, then try
 * one more transaction on each connection that is still open.
 */
static int
fence_probe(const char *conf, const char *pool, struct env *env,
    const char *dir, sqlite3 *dbs[], struct env **masterp)
{
	char lock_path[300], fenced[512], client[256];
	sqlite3_stmt *st[6] = { NULL };
	struct env_lock *lock;
	struct env *master;
	int64_t number = 1 << 20;
	int rc;

	snprintf(lock_path, sizeof(lock_path), "%s/LOCK", dir);
	if ((rc = env_lock(env, lock_path, &lock)) < 0 ||
	    (rc = env_rados_client(env, client, sizeof(client))) < 0 ||
	    (rc = env_rados_new(conf, pool, NULL, &master)) < 0) {
		fprintf(stderr, "catalogvfs: fence: %s\n", bt_error_detail());
		return -1;
	}
	if ((rc = env_rados_lock_fence(master, lock_path, fenced,
	    sizeof(fenced))) < 1) {
		fprintf(stderr, "catalogvfs: fence: %s\n", rc < 0 ?
		    bt_error_detail() : "nobody held the lock");
		env_free(master);
		return -1;
	}
	printf("fence: %s fenced (the env's client was %s)\n", fenced,
	    client);
	for (int k = 0; k < VFSES; k++) {
		if (dbs[k] == NULL)
			continue;
		if (stmts_prepare(dbs[k], st) == 0 &&
		    db_apply(dbs[k], st, 1, &number) == 0)
			printf("fence %s commit: ok\n", vfs_names[k]);
		else
			printf("fence %s commit: %s (%s)\n", vfs_names[k],
			    sqlite3_errmsg(dbs[k]), bt_error_detail());
		stmts_finalize(st);
	}
	env_path_remove(master, lock_path);
	(void)lock;	/* broken by the fence; its client is gone */
	*masterp = master;	/* removes what this process wrote */
	return 0;
}

static void __attribute__((noreturn))
usage(void)
{
	fprintf(stderr, "usage: catalogvfs [-n TXNS] [-p PAGE_SIZE] [-q READS]"
	    " [-r ROUNDS] [-t TABLETS] [-V ours|ceph] [-F] CONF POOL\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	struct samples all[VFSES][MEASURES];
	double medians[VFSES][MEASURES][MAX_ROUNDS];
	double load_us[VFSES] = { 0 };
	int txns = 200, reads = 200, rounds = 3, tablets = 100, c;
	int page_size = 4096;
	bool fence = false, have[VFSES] = { true, false };
	const char *only = NULL;
	char why[512], dir[64];
	struct vfs vfs[VFSES];
	sqlite3 *dbs[VFSES] = { NULL };
	struct sqlite_env *ours;
	struct env *env, *master;
	const char *conf, *pool;
	int64_t number;
	double t;

	while ((c = getopt(argc, argv, "n:p:q:r:t:V:F")) != -1) {
		switch (c) {
		case 'n':
			txns = atoi(optarg);
			break;
		case 'p':
			page_size = atoi(optarg);
			break;
		case 'q':
			reads = atoi(optarg);
			break;
		case 'r':
			rounds = atoi(optarg);
			break;
		case 't':
			tablets = atoi(optarg);
			break;
		case 'F':
			fence = true;
			break;
		case 'V':
			only = optarg;
			break;
		default:
			usage();
		}
	}
	if (optind + 2 != argc || txns < 1 || reads < 1 || rounds < 1 ||
	    rounds > MAX_ROUNDS || tablets < 1 || (only != NULL &&
	    strcmp(only, vfs_names[OURS]) != 0 &&
	    strcmp(only, vfs_names[CEPH]) != 0))
		usage();
	conf = argv[optind];
	pool = argv[optind + 1];
	if (strlen(pool) > 100)
		usage();

	t = bench_now_us();
	if (env_rados_new(conf, pool, NULL, &env) < 0 ||
	    sqlite_env_register(env, &ours) < 0) {
		fprintf(stderr, "catalogvfs: %s\n", bt_error_detail());
		return 1;
	}
	load_us[OURS] = bench_now_us() - t;
	master = env;
	snprintf(dir, sizeof(dir), "/catalogvfs.%ld", (long)getpid());
	if (env_dir_create(env, dir) < 0) {
		fprintf(stderr, "catalogvfs: %s\n", bt_error_detail());
		return 1;
	}
	vfs[OURS].vfs = sqlite_env_name(ours);
	vfs[OURS].flags = 0;
	vfs[CEPH].vfs = NULL;
	vfs[CEPH].flags = SQLITE_OPEN_URI;
	vfs[OURS].page_size = vfs[CEPH].page_size = page_size;
	if (only == NULL || strcmp(only, vfs_names[CEPH]) == 0) {
		t = bench_now_us();
		have[CEPH] = ceph_load(conf, why, sizeof(why));
		load_us[CEPH] = bench_now_us() - t;
		if (!have[CEPH])
			printf("ceph unavailable: %s\n", why);
	}
	if (only != NULL && strcmp(only, vfs_names[OURS]) != 0)
		have[OURS] = false;

	for (int k = 0; k < VFSES; k++)
		for (int m = 0; m < MEASURES; m++) {
			size_t n = m == TXN ? (size_t)txns : m == READ ?
			    (size_t)reads : 1;

			all[k][m].n = 0;
			if ((all[k][m].v = calloc(n * (size_t)rounds,
			    sizeof(double))) == NULL) {
				fprintf(stderr, "catalogvfs: out of memory\n");
				return 1;
			}
		}
	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < VFSES; i++) {
			int k = (i + r) % VFSES;
			size_t start[MEASURES];

			if (!have[k])
				continue;
			if (k == OURS)
				snprintf(vfs[k].path, sizeof(vfs[k].path),
				    "%s/r%d.db", dir, r);
			else
				snprintf(vfs[k].path, sizeof(vfs[k].path),
				    "file:///%s:/catalogvfs.%ld.r%d.db?vfs=ceph",
				    pool, (long)getpid(), r);
			for (int m = 0; m < MEASURES; m++)
				start[m] = all[k][m].n;
			if (round_run(&vfs[k], k == OURS ? ours : NULL, txns,
			    reads, tablets, all[k], &dbs[k], &number) < 0)
				return 1;
			fprintf(stderr, "round %d %s:", r + 1, vfs_names[k]);
			for (int m = 0; m < MEASURES; m++) {
				size_t n = all[k][m].n - start[m];
				double *tmp = malloc(n * sizeof(double));

				if (tmp == NULL)
					return 1;
				memcpy(tmp, all[k][m].v + start[m],
				    n * sizeof(double));
				medians[k][m][r] = bench_quantile(tmp, n, 0.5);
				free(tmp);
				fprintf(stderr, " %s %.0f", measure_names[m],
				    medians[k][m][r]);
			}
			fprintf(stderr, " (median us)\n");
			if (fence && r == rounds - 1)
				continue;	/* kept open for -F */
			sqlite3_close(dbs[k]);
			dbs[k] = NULL;
		}
	}
	for (int k = 0; k < VFSES; k++) {
		if (!have[k])
			continue;
		printf("%s load_us %.0f\n", vfs_names[k], load_us[k]);
		for (int m = 0; m < MEASURES; m++)
			printf("%s %s p50_us %.0f %s %.0f\n",
			    vfs_names[k], measure_names[m],
			    bench_quantile(medians[k][m], (size_t)rounds, 0.5),
			    m == TXN || m == READ ? "p99_us" : "max_us",
			    bench_quantile(all[k][m].v, all[k][m].n,
			    m == TXN || m == READ ? 0.99 : 1.0));
	}
	if (fence && fence_probe(conf, pool, env, dir, dbs, &master) < 0)
		return 1;
	for (int k = 0; k < VFSES; k++)
		sqlite3_close(dbs[k]);
	for (int r = 0; r < rounds; r++) {
		char name[128];

		snprintf(name, sizeof(name), "%s/r%d.db", dir, r);
		ours_remove(master, name);
		snprintf(name, sizeof(name), "/%s:/catalogvfs.%ld.r%d.db",
		    pool, (long)getpid(), r);
		if (have[CEPH])
			ceph_remove(name);
	}
	env_path_remove(master, dir);
	sqlite_env_unregister(ours);
	if (master != env)
		env_free(master);
	env_free(env);
	return 0;
}
