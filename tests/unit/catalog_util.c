/* catalog_util.c - the catalog tests' helpers (catalog_util.h). */
#include <errno.h>

#include <sqlite3.h>

#include "catalog_util.h"

int
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

void
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
