/*
 * sqlite_env.h - a SQLite VFS over the file environment (util/env.h), so
 * that the catalog's bytes go through struct env like every other byte of
 * the store, and the fault env's power loss and injected failures reach
 * them too.
 *
 * Each registration is a VFS of its own, named "tabletfs-env-<hex>" and
 * never made the default: pass sqlite_env_name() as the zVfs argument of
 * sqlite3_open_v2().  File names given to SQLite are env paths, used as
 * they are (no working directory, no canonical form); the journal and the
 * WAL are the database's path with "-journal" and "-wal" appended, in the
 * same env.
 *
 * What the VFS does not do, because one process owns the store (through
 * STORE/LOCK) and the catalog has one connection:
 *
 *  - Locks are no-ops that always succeed.  Two connections to one
 *    database at the same time would corrupt it.
 *  - There is no shared memory.  WAL mode works only with
 *    "PRAGMA locking_mode = EXCLUSIVE" issued first, before
 *    "PRAGMA journal_mode = WAL" and before anything reads a database that
 *    is already in WAL mode (which otherwise fails with SQLITE_CANTOPEN);
 *    SQLite then keeps the WAL index in heap memory.  Rollback-journal
 *    modes work without it.
 *  - Temporary files that SQLite opens without a name (temporary tables,
 *    sorter spills) go to SQLite's default VFS: they hold nothing that
 *    must outlive the connection.  "PRAGMA temp_store = MEMORY" keeps them
 *    in memory instead.
 *
 * Checksums.  A main database whose header reserves CATALOG_PAGE_RESERVE
 * bytes a page (catalog/format.h; SQLITE_FCNTL_RESERVE_BYTES before the
 * first table of a new database, or VACUUM INTO a new file) is sealed:
 * every page written gets the trailer (its number and a masked CRC32C),
 * and every read verifies each page it touches.  Whether a file is
 * sealed is read from its header when it is opened, and for a new file
 * from the first write of page 1 (pages SQLite wrote before it are sealed
 * then); databases with another reserve are read and written as they are.
 * Page images in a WAL are not changed (SQLite's frame checksums cover
 * them and its recovery would drop a frame changed behind it): each page
 * image read from any WAL is verified against its frame's checksum
 * instead.  A mismatch fails the read with SQLITE_IOERR_DATA and the
 * detail "PATH: page 7 checksum mismatch" or "PATH-wal: frame 3 (page 7)
 * checksum mismatch" (code BT_ECHECKSUM).  Not covered: journals and
 * temporary files; a frame rewritten in place inside a transaction until
 * the transaction commits; WAL frames that SQLite's own recovery reads
 * when it opens a WAL (a damaged one ends the log there, as in SQLite;
 * sqlite_env_wal_check, run first, finds most such damage).
 *
 * Durability: xSync is env_file_sync(), and the first xSync of each file
 * opened for writing also syncs its parent directory (env_dir_sync()), so
 * that a new database, journal or WAL is found again after power loss.
 * xDelete syncs the parent directory when SQLite asks for it.
 *
 * Errors: an env failure of -ENOSPC or -EDQUOT is SQLITE_FULL, -ENOMEM
 * SQLITE_NOMEM, others the SQLITE_IOERR_* code of the operation (or
 * SQLITE_CANTOPEN from an open).  sqlite3_system_errno() then gives the
 * errno of the last failure of this VFS, and bt_error_detail() in the
 * failing thread the env's detail naming the path.
 *
 * Thread safety: registration goes through SQLite's VFS registry, which has
 * its own mutex.  Connections on several threads may share one VFS as far
 * as the env allows (distinct files from distinct threads).
 */
#ifndef TABLETFS_CATALOG_SQLITE_ENV_H
#define TABLETFS_CATALOG_SQLITE_ENV_H

struct env;
struct sqlite_env;

/*
 * Register a VFS that stores its files in env, which must outlive it.  0,
 * -ENOMEM, or -EIO when SQLite cannot be initialized or has no default VFS
 * to borrow randomness and time from (with a detail).
 */
int sqlite_env_register(struct env *env, struct sqlite_env **out);

/* The VFS's name, to pass to sqlite3_open_v2(); valid until unregister. */
const char *sqlite_env_name(const struct sqlite_env *v);

/*
 * Verify every page of the sealed database at path (in v's env, read
 * directly, not through SQLite), passing each damaged one to report (may
 * be NULL) as one line: "page 7: checksum mismatch".  Returns the number
 * of damaged pages (0 also for a database that is not sealed), or a
 * negative error.  Safe while a connection has the database open if no
 * write runs meanwhile.
 */
int sqlite_env_check(struct sqlite_env *v, const char *path,
    void (*report)(void *arg, const char *problem), void *arg);

/*
 * Before SQLite opens the WAL at path (in v's env) and recovers it: find
 * damage that its recovery would take for the torn end of a crash, ending
 * the log there and dropping the committed transactions after it.  A
 * frame that fails its checksum is damage when a later transaction's
 * commit follows it in an unbroken chain, since every commit syncs the
 * WAL: only for databases with synchronous = FULL or EXTRA, as the catalog
 * has.  Returns 0 (none found, or no WAL), BT_ECHECKSUM with the detail
 * "PATH: frame 3 (page 7) checksum mismatch, and committed frames follow
 * it", or a negative error.  Damage in the last committed transaction
 * cannot be told from a torn one and is not found.
 */
int sqlite_env_wal_check(struct sqlite_env *v, const char *path);

/*
 * Unregister and free the VFS; accepts NULL.  Every connection opened with
 * it must be closed first.
 */
void sqlite_env_unregister(struct sqlite_env *v);

#endif
