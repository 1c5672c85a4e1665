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
int raw_open(struct env *env, const char *path, sqlite3 **db);

/*
 * The process dies with c open: nothing more reaches the disk (appends
 * and syncs fail while it closes), then the power goes and what was not
 * synced is lost.  The faults are disarmed afterwards.
 */
void catalog_crash(struct env *env, struct catalog *c);

/* Copy the local file from into fenv as to, and sync it and the directory
 * "/s" that holds it there; bails out of the test on failure. */
void catalog_copy_into(struct env *fenv, const char *from, const char *to);

#endif
