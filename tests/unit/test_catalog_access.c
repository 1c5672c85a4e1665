/*
 * test_catalog_access.c - owners, groups and modes in the catalog (format
 * version 4): what tables and families are created with, changes and
 * their limits, persistence, and the upgrade of a version-3 catalog,
 * also when a crash cuts it short; and that of a version-4 one, which
 * gains the pending file numbers (version 5).
 */
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog/catalog.h"
#include "catalog/format.h"
#include "util/env.h"
#include "util/error.h"
#include "catalog_util.h"
#include "tap.h"

static char dir[64];
static struct env *env;		/* the local filesystem */

static struct catalog *
open_or_bail(struct env *e, const char *path)
{
	struct catalog *c = NULL;
	int rc = catalog_open(e, path, &c);

	if (rc != 0) {
		diag("catalog_open: %s: %s", bt_strerror(rc),
		    bt_error_detail());
		tap_bail("cannot open the catalog");
	}
	return c;
}

static struct catalog_family
family(const char *name)
{
	struct catalog_family f;

	memset(&f, 0, sizeof(f));
	snprintf(f.name, sizeof(f.name), "%s", name);
	/* Ignored: a family takes its table's. */
	f.access.uid = 4242;
	f.access.mode = 0777;
	return f;
}

static bool
access_is(const struct catalog_access *a, uint32_t uid, uint32_t gid,
    uint32_t mode)
{
	return a->uid == uid && a->gid == gid && a->mode == mode;
}

/* The access of table (family NULL) or one of its families, or
 * a mode of UINT32_MAX when there is no such thing. */
static struct catalog_access
access_of(struct catalog *c, const char *table, const char *family)
{
	struct catalog_access none = { 0, 0, UINT32_MAX }, a = none;
	struct catalog_table *t;

	if (catalog_table_get(c, table, &t) != 0)
		return none;
	if (family == NULL)
		a = t->access;
	for (size_t i = 0; family != NULL && i < t->family_count; i++)
		if (strcmp(t->families[i].name, family) == 0)
			a = t->families[i].access;
	catalog_table_free(t);
	return a;
}

static void
test_create_and_change(const char *path)
{
	struct catalog_family fams[] = { family("a"), family("b") };
	const struct catalog_access owner = { 1000, 100, 0750 };
	const uint32_t me = (uint32_t)geteuid(), my_group = (uint32_t)getegid();
	struct catalog_access a, change;
	struct catalog *c;
	uint64_t id;

	if (catalog_create(env, path) != 0)
		tap_bail("catalog_create");
	c = open_or_bail(env, path);

	is_int(catalog_table_create(c, "plain", 0, fams, 1, NULL, 0, NULL, 0,
	    &id, NULL), 0, "a table created without an owner");
	a = access_of(c, "plain", NULL);
	ok(access_is(&a, me, my_group, 0755), "belongs to the store's owner "
	    "(%u:%u %o)", a.uid, a.gid, a.mode);
	a = access_of(c, "plain", "a");
	ok(access_is(&a, me, my_group, 0755), "and so does its family");

	is_int(catalog_table_create_as(c, "owned", &owner, 0, fams, 2, NULL,
	    0, NULL, 0, &id, NULL), 0, "a table created with an owner");
	a = access_of(c, "owned", NULL);
	ok(access_is(&a, 1000, 100, 0750), "has it (%u:%u %o)", a.uid,
	    a.gid, a.mode);
	a = access_of(c, "owned", "b");
	ok(access_is(&a, 1000, 100, 0750), "its families take the table's, "
	    "not what they were given (%u:%u %o)", a.uid, a.gid, a.mode);
	is_int(catalog_table_create_as(c, "badmode", &(struct catalog_access){
	    1, 1, 01777 }, 0, NULL, 0, NULL, 0, NULL, 0, &id, NULL), -EINVAL,
	    "a mode with the sticky bit is -EINVAL");
	is_int(catalog_table_get(c, "badmode", &(struct catalog_table *){0}),
	    BT_NOTFOUND, "and made no table");

	change = (struct catalog_access){ CATALOG_ACCESS_KEEP,
	    CATALOG_ACCESS_KEEP, 0700 };
	is_int(catalog_access_set(c, "owned", "a", &change, NULL), 0,
	    "chmod of a family");
	a = access_of(c, "owned", "a");
	ok(access_is(&a, 1000, 100, 0700), "changes its mode alone");
	a = access_of(c, "owned", "b");
	ok(access_is(&a, 1000, 100, 0750), "not its sibling's");
	a = access_of(c, "owned", NULL);
	ok(access_is(&a, 1000, 100, 0750), "nor its table's");
	change = (struct catalog_access){ 2000, CATALOG_ACCESS_KEEP,
	    CATALOG_ACCESS_KEEP };
	is_int(catalog_access_set(c, "owned", NULL, &change, NULL), 0,
	    "chown of a table");
	a = access_of(c, "owned", NULL);
	ok(access_is(&a, 2000, 100, 0750), "changes its owner alone");
	a = access_of(c, "owned", "b");
	ok(access_is(&a, 1000, 100, 0750), "not its families'");
	change = (struct catalog_access){ CATALOG_ACCESS_KEEP, 0,
	    CATALOG_ACCESS_KEEP };
	is_int(catalog_access_set(c, "owned", "b", &change, NULL), 0,
	    "chgrp of a family");
	a = access_of(c, "owned", "b");
	ok(access_is(&a, 1000, 0, 0750), "changes its group alone");

	change = (struct catalog_access){ CATALOG_ACCESS_KEEP,
	    CATALOG_ACCESS_KEEP, 04755 };
	is_int(catalog_access_set(c, "owned", NULL, &change, NULL), -EINVAL,
	    "a setuid mode is -EINVAL");
	change.mode = 0644;
	is_int(catalog_access_set(c, "owned", "nosuch", &change, NULL),
	    -ENOENT, "a family that does not exist is -ENOENT");
	is_int(catalog_access_set(c, "nosuch", NULL, &change, NULL), -ENOENT,
	    "a table that does not exist is -ENOENT");
	is_int(catalog_access_set(c, "owned", "../x", &change, NULL), -EINVAL,
	    "a bad family name is -EINVAL");
	a = access_of(c, "owned", NULL);
	ok(access_is(&a, 2000, 100, 0750), "refused changes changed nothing");

	is_int(catalog_family_create(c, "owned", &fams[0], NULL), -EEXIST,
	    "family a exists already");
	fams[0].name[0] = 'n';
	is_int(catalog_family_create(c, "owned", &fams[0], NULL), 0,
	    "a family added later");
	a = access_of(c, "owned", "n");
	ok(access_is(&a, 2000, 100, 0750), "takes the table's access as it "
	    "is now (%u:%u %o)", a.uid, a.gid, a.mode);

	catalog_close(c);
	c = open_or_bail(env, path);
	a = access_of(c, "owned", "a");
	ok(access_is(&a, 1000, 100, 0700), "a family's access survives a "
	    "reopen");
	a = access_of(c, "owned", NULL);
	ok(access_is(&a, 2000, 100, 0750), "and the table's");
	catalog_close(c);
}

/*
 * Build a version-3 catalog at path as the previous release left one:
 * today's without the access columns, with one table and one family.
 */
static void
make_v3_catalog(const char *path)
{
	sqlite3 *db;

	unlink(path);
	if (catalog_create(env, path) != 0)
		tap_bail("catalog_create");
	if (raw_open(env, path, &db) != SQLITE_OK ||
	    sqlite3_exec(db, "BEGIN;"
	    "ALTER TABLE tables DROP COLUMN uid;"
	    "ALTER TABLE tables DROP COLUMN gid;"
	    "ALTER TABLE tables DROP COLUMN mode;"
	    "ALTER TABLE families DROP COLUMN uid;"
	    "ALTER TABLE families DROP COLUMN gid;"
	    "ALTER TABLE families DROP COLUMN mode;"
	    "DROP TABLE pending_files;"
	    "ALTER TABLE tablets DROP COLUMN recovering;"
	    "INSERT INTO tables VALUES (1, 'web', 1048576);"
	    "INSERT INTO groups VALUES (1, 'default', 65536, 1, 1, 0);"
	    "INSERT INTO families VALUES (1, 'anchor', 'default',"
	    " 'maxversions=3', 0);"
	    "INSERT INTO tablets (table_id, start_row, end_row, flushed_seq)"
	    " VALUES (1, x'', x'', 7);"
	    "PRAGMA user_version = 3; COMMIT;",
	    NULL, NULL, NULL) != SQLITE_OK)
		tap_bail(sqlite3_errmsg(db));
	/* Checkpointed into the file, so that a copy of it is whole. */
	sqlite3_close(db);
}

/* user_version of the catalog at path in e, read from its header. */
static int
version_of(struct env *e, const char *path)
{
	struct env_file *f;
	uint8_t h[100];
	int version = -1;

	if (env_file_open(e, path, ENV_READ, &f) != 0)
		return -1;
	if (env_file_read_exact(f, 0, h, sizeof(h)) == 0)
		version = h[60] << 24 | h[61] << 16 | h[62] << 8 | h[63];
	env_file_close(f);
	return version;
}

/* What the version-3 catalog held, with the store owner's access. */
static bool
v3_whole(struct catalog *c)
{
	const uint32_t me = (uint32_t)geteuid(), my_group = (uint32_t)getegid();
	struct catalog_access t = access_of(c, "web", NULL);
	struct catalog_access f = access_of(c, "web", "anchor");

	return access_is(&t, me, my_group, 0755) &&
	    access_is(&f, me, my_group, 0755) &&
	    catalog_location_check(c, NULL, NULL) == 0;
}

static void
test_upgrade(const char *path)
{
	static const char fpath[] = "/s/catalog.db";
	struct catalog *c;
	struct catalog_access change = { 77, CATALOG_ACCESS_KEEP,
	    CATALOG_ACCESS_KEEP }, a;
	int crashes = 0, old = 0, new = 0, bad = 0, rc;

	make_v3_catalog(path);
	is_int(version_of(env, path), 3, "a version-3 catalog");
	c = open_or_bail(env, path);
	ok(v3_whole(c), "opens; its table and family belong to the store's "
	    "owner, mode 0755");
	is_int(catalog_access_set(c, "web", NULL, &change, NULL), 0,
	    "and take a new owner");
	catalog_close(c);
	/* The close checkpoints the WAL into the file. */
	is_int(version_of(env, path), CATALOG_VERSION, "and is version %d",
	    CATALOG_VERSION);
	c = open_or_bail(env, path);
	a = access_of(c, "web", NULL);
	ok(a.uid == 77 && a.gid == (uint32_t)getegid(),
	    "which a reopen keeps (%u:%u)", a.uid, a.gid);
	catalog_close(c);

	/* A crash at each write and sync of the upgrade. */
	make_v3_catalog(path);
	for (int op = 0; op < 2; op++) {
		for (long k = 1; k < 100; k++) {
			struct env *fenv;

			if (env_fault_new(&fenv) < 0 ||
			    env_dir_create(fenv, "/s") < 0 ||
			    env_dir_sync(fenv, "/") < 0)
				tap_bail("fault env");
			catalog_copy_into(fenv, path, fpath);
			env_fault_fail_after(fenv, op == 0 ? ENV_FAULT_APPEND :
			    ENV_FAULT_SYNC, k, -EIO, true);
			c = NULL;
			rc = catalog_open(fenv, fpath, &c);
			catalog_crash(fenv, c);
			crashes++;
			/* The file's header: an upgrade whose commit is
			 * in the WAL still reads 3 here. */
			switch (version_of(fenv, fpath)) {
			case 3:
				old++;
				break;
			case CATALOG_VERSION:
				new++;
				break;
			default:
				bad++;
			}
			c = NULL;
			if (catalog_open(fenv, fpath, &c) != 0) {
				diag("after crash %d: %s", crashes,
				    bt_error_detail());
				bad++;
			} else if (!v3_whole(c)) {
				bad++;
			}
			catalog_close(c);
			bad += version_of(fenv, fpath) != CATALOG_VERSION;
			env_free(fenv);
			if (rc == 0)
				break;
		}
	}
	ok(crashes > 2 && old > 0, "%d crashes in the upgrade, %d left a "
	    "version-3 header, %d version %d", crashes, old, new,
	    CATALOG_VERSION);
	is_int(bad, 0, "each left version 3 or %d, and the next open "
	    "upgrades it with all it held", CATALOG_VERSION);
	unlink(path);
}

/*
 * A version-4 catalog (today's without pending_files) opens as the
 * current version, in one transaction, and then keeps pending numbers
 * as a new one does.
 */
static void
test_upgrade_v4(const char *path)
{
	struct catalog *c;
	sqlite3 *db;
	uint64_t number = 0;

	unlink(path);
	if (catalog_create(env, path) != 0)
		tap_bail("catalog_create");
	if (raw_open(env, path, &db) != SQLITE_OK ||
	    sqlite3_exec(db, "BEGIN; DROP TABLE pending_files;"
	    "ALTER TABLE tablets DROP COLUMN recovering;"
	    "INSERT INTO meta VALUES ('last_number', 41);"
	    "PRAGMA user_version = 4; COMMIT;", NULL, NULL, NULL) !=
	    SQLITE_OK)
		tap_bail(sqlite3_errmsg(db));
	sqlite3_close(db);
	is_int(version_of(env, path), 4, "a version-4 catalog");
	c = open_or_bail(env, path);
	ok(catalog_next_number_for(c, "127.0.0.1:7001#1", &number) == 0 &&
	    number == 42, "opens, and hands out a pending number (%llu)",
	    (unsigned long long)number);
	is_int(catalog_file_is_live(c, number), 1, "which is live");
	catalog_close(c);
	is_int(version_of(env, path), CATALOG_VERSION, "the catalog is "
	    "version %d", CATALOG_VERSION);
	c = open_or_bail(env, path);
	is_int(catalog_file_is_live(c, number), 1, "and its pending number "
	    "is still live after a reopen");
	catalog_close(c);
	unlink(path);
}

/*
 * A version-5 catalog (today's without tablets.recovering) opens as the
 * current version, in one transaction, its tablets unmarked, and then
 * keeps a recovery mark as a new one does.
 */
static void
test_upgrade_v5(const char *path)
{
	static const char *const servers[] = { "127.0.0.1:7001#1" };
	struct catalog_family fam = { .name = "f" };
	struct catalog_assignment *a = NULL;
	struct catalog *c;
	uint64_t id = 0, flushed = 0;
	size_t n = 0;
	sqlite3 *db;

	unlink(path);
	if (catalog_create(env, path) != 0)
		tap_bail("catalog_create");
	c = open_or_bail(env, path);
	if (catalog_table_create(c, "web", 0, &fam, 1, NULL, 0, NULL, 0, &id,
	    NULL) != 0 || catalog_assignments_list(c, &a, &n) != 0 || n != 1 ||
	    catalog_tablet_assign_if(c, a[0].tablet_id, servers[0], "",
	    CATALOG_RECOVERY_KEEP) != 0)
		tap_bail("table_create");
	catalog_close(c);
	if (raw_open(env, path, &db) != SQLITE_OK ||
	    sqlite3_exec(db, "BEGIN; ALTER TABLE tablets DROP COLUMN "
	    "recovering; PRAGMA user_version = 5; COMMIT;", NULL, NULL,
	    NULL) != SQLITE_OK)
		tap_bail(sqlite3_errmsg(db));
	sqlite3_close(db);
	is_int(version_of(env, path), 5, "a version-5 catalog");
	c = open_or_bail(env, path);
	is_int(catalog_table_replayed(c, "web", servers, 1, &flushed), 0,
	    "opens, its tablet unmarked at %s", servers[0]);
	is_int(catalog_tablet_assign_if(c, a[0].tablet_id, servers[0],
	    servers[0], CATALOG_RECOVERY_BEGIN), 0, "and marks a tablet");
	is_int(catalog_table_replayed(c, "web", servers, 1, &flushed),
	    -EAGAIN, "which a family then waits for");
	catalog_close(c);
	is_int(version_of(env, path), CATALOG_VERSION, "the catalog is "
	    "version %d", CATALOG_VERSION);
	c = open_or_bail(env, path);
	is_int(catalog_table_replayed(c, "web", servers, 1, &flushed),
	    -EAGAIN, "and the mark is there after a reopen");
	catalog_close(c);
	bt_free(a);
	unlink(path);
}

int
main(void)
{
	char path[128];

	if (env_posix_new(&env) < 0)
		tap_bail("env_posix_new");
	snprintf(dir, sizeof(dir), "/tmp/test_catalog_access.XXXXXX");
	if (mkdtemp(dir) == NULL)
		tap_bail("mkdtemp");
	snprintf(path, sizeof(path), "%s/catalog.db", dir);
	test_create_and_change(path);
	unlink(path);
	snprintf(path, sizeof(path), "%s/v3.db", dir);
	test_upgrade(path);
	snprintf(path, sizeof(path), "%s/v4.db", dir);
	test_upgrade_v4(path);
	snprintf(path, sizeof(path), "%s/v5.db", dir);
	test_upgrade_v5(path);
	snprintf(path, sizeof(path), "rm -rf %s", dir);
	if (system(path) != 0)
		diag("cannot remove %s", dir);
	env_free(env);
	return tap_done();
}
