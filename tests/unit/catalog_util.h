/*
 * catalog_util.h - for the tests that edit a catalog behind its back.
 */
#ifndef TABLETFS_TESTS_CATALOG_UTIL_H
#define TABLETFS_TESTS_CATALOG_UTIL_H

#include <sqlite3.h>

#include "catalog/catalog.h"
#include "catalog/sqlite_env.h"
#include "util/env.h"
#include "tap.h"

/*
 * Open a catalog behind its back through the VFS the catalog uses (over
 * env), so that the pages it changes keep their checksums: SQLite's own
 * VFS would leave them stale, which the catalog reports as damage.
 */
static inline int
raw_open(struct env *env, const char *path, sqlite3 **db)
{
	static struct sqlite_env *vfs;

	if (vfs == NULL && sqlite_env_register(env, &vfs) != 0)
		tap_bail("sqlite_env_register");
	if (sqlite3_open_v2(path, db, SQLITE_OPEN_READWRITE |
	    SQLITE_OPEN_CREATE, sqlite_env_name(vfs)) != SQLITE_OK)
		return SQLITE_ERROR;
	return sqlite3_exec(*db, "PRAGMA locking_mode = EXCLUSIVE", NULL,
	    NULL, NULL);
}

/*
 * The process dies with c open: nothing more reaches the disk (appends
 * and syncs fail while it closes), then the power goes and what was not
 * synced is lost.  The faults are disarmed afterwards.
 */
static inline void
catalog_crash(struct env *env, struct catalog *c)
{
	env_fault_fail_after(env, ENV_FAULT_APPEND, 1, -EIO, true);
	env_fault_fail_after(env, ENV_FAULT_SYNC, 1, -EIO, true);
	catalog_close(c);
	env_fault_drop_unsynced(env);
	env_fault_fail_after(env, ENV_FAULT_APPEND, 0, 0, false);
	env_fault_fail_after(env, ENV_FAULT_SYNC, 0, 0, false);
	env_fault_fail_after(env, ENV_FAULT_RENAME, 0, 0, false);
}

#endif
