/* catalog_util.c - the catalog tests' helpers (catalog_util.h). */
#include <errno.h>
#include <stdio.h>

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

void
catalog_copy_into(struct env *fenv, const char *from, const char *to)
{
	struct env_file *f;
	FILE *in = fopen(from, "rb");
	char data[65536];
	size_t got;

	if (in == NULL || env_file_open(fenv, to, ENV_CREATE, &f) != 0)
		tap_bail("copy into the fault env");
	while ((got = fread(data, 1, sizeof(data), in)) > 0)
		if (env_file_append(f, data, got) != 0)
			tap_bail("append");
	fclose(in);
	if (env_file_sync(f) != 0 || env_file_close(f) != 0 ||
	    env_dir_sync(fenv, "/s") != 0)
		tap_bail("sync");
}
