/*
 * test_catalog.c - the SQLite catalog: create and open, the schema calls,
 * tablets and their files, counters, persistence across reopen, rollback of
 * failed calls, concurrent callers, and allocation failures.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog/catalog.h"
#include "catalog/format.h"
#include "catalog/sqlite_env.h"
#include "util/alloc.h"
#include "util/env.h"
#include "util/error.h"
#include "catalog_util.h"
#include "tap.h"

#define THREADS 4
#define NUMBERS_PER_THREAD 500

static char dir[64];
static char db_path[128];
static struct env *env;		/* the local filesystem */

static void
path_in_dir(char *out, size_t size, const char *name)
{
	snprintf(out, size, "%s/%s", dir, name);
}

/* Entries in the test directory, not counting . and .. */
static int
dir_entries(void)
{
	struct dirent *e;
	DIR *d = opendir(dir);
	int n = 0;

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			n++;
	closedir(d);
	return n;
}

static void
dir_remove(void)
{
	char p[512];
	struct dirent *e;
	DIR *d = opendir(dir);

	if (d != NULL) {
		while ((e = readdir(d)) != NULL) {
			if (strcmp(e->d_name, ".") == 0 ||
			    strcmp(e->d_name, "..") == 0)
				continue;
			snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
			unlink(p);
		}
		closedir(d);
	}
	rmdir(dir);
}

static struct catalog *
open_or_bail(void)
{
	struct catalog *c = NULL;
	int rc = catalog_open(env, db_path, &c);

	if (rc != 0) {
		diag("catalog_open: %s: %s", bt_strerror(rc), bt_error_detail());
		tap_bail("cannot open the catalog");
	}
	return c;
}

static struct catalog_family
family(const char *name, const char *group, const char *policy)
{
	struct catalog_family f;

	memset(&f, 0, sizeof(f));
	snprintf(f.name, sizeof(f.name), "%s", name);
	snprintf(f.group, sizeof(f.group), "%s", group);
	snprintf(f.gc_policy, sizeof(f.gc_policy), "%s", policy);
	return f;
}

static struct catalog_file
file(uint64_t number, const char *group, uint64_t max_seq)
{
	struct catalog_file f;

	memset(&f, 0, sizeof(f));
	f.number = number;
	snprintf(f.group, sizeof(f.group), "%s", group);
	f.size = number * 1000;
	f.entry_count = number * 10;
	f.max_seq = max_seq;
	return f;
}

static bool
buf_is(const struct buf *b, const void *p, size_t n)
{
	return slice_equal(buf_slice(b), slice_make(p, n));
}

/* The id of table name, or 0 when it cannot be loaded. */
static uint64_t
table_id_of(struct catalog *c, const char *name)
{
	struct catalog_table *t;
	uint64_t id;

	if (catalog_table_get(c, name, &t) != 0)
		return 0;
	id = t->id;
	catalog_table_free(t);
	return id;
}

/* The id of the index-th tablet of a table, or 0. */
static uint64_t
tablet_id_of(struct catalog *c, uint64_t table_id, size_t index)
{
	struct catalog_tablet *t;
	size_t n;
	uint64_t id = 0;

	if (catalog_tablets_list(c, table_id, &t, &n) != 0)
		return 0;
	if (index < n)
		id = t[index].id;
	catalog_tablets_free(t, n);
	return id;
}

static uint64_t
flushed_seq_of(struct catalog *c, uint64_t table_id, uint64_t tablet_id)
{
	struct catalog_tablet *t;
	size_t n;
	uint64_t seq = UINT64_MAX;

	if (catalog_tablets_list(c, table_id, &t, &n) != 0)
		return seq;
	for (size_t i = 0; i < n; i++)
		if (t[i].id == tablet_id)
			seq = t[i].flushed_seq;
	catalog_tablets_free(t, n);
	return seq;
}

/* The file numbers of a tablet, newest first, as "n,n,n" (or "ERR"). */
static const char *
files_of(struct catalog *c, uint64_t tablet_id, char *out, size_t size)
{
	struct catalog_file *f;
	size_t n, used = 0;

	out[0] = '\0';
	if (catalog_files_list(c, tablet_id, &f, &n) != 0) {
		snprintf(out, size, "ERR");
		return out;
	}
	for (size_t i = 0; i < n && used < size; i++)
		used += (size_t)snprintf(out + used, size - used, "%s%llu",
		    i ? "," : "", (unsigned long long)f[i].number);
	bt_free(f);
	return out;
}

static void
test_create_open(void)
{
	struct catalog *c = NULL;
	char p[256];
	int rc;

	is_int(catalog_create(env, db_path), 0, "create a new catalog");
	is_int(dir_entries(), 1, "create leaves only the catalog behind");
	is_int(catalog_create(env, db_path), -EEXIST, "create twice is -EEXIST");
	is_int(dir_entries(), 1, "a refused create leaves nothing behind");
	rc = catalog_open(env, db_path, &c);
	is_int(rc, 0, "open the new catalog");
	catalog_close(c);
	catalog_close(NULL);

	path_in_dir(p, sizeof(p), "missing.db");
	c = NULL;
	is_int(catalog_open(env, p, &c), -ENOENT, "open of a missing file is -ENOENT");
	ok(c == NULL, "a failed open sets no handle");
	path_in_dir(p, sizeof(p), "nodir/catalog.db");
	is_int(catalog_create(env, p), -ENOENT,
	    "create in a missing directory is -ENOENT");
}

/* Write n bytes from the generator state into a new file. */
static void
write_file(const char *p, const void *data, size_t n)
{
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (fd < 0 || write(fd, data, n) != (ssize_t)n)
		tap_bail("cannot write a test file");
	close(fd);
}

static off_t
file_size(const char *p)
{
	struct stat sb;

	return stat(p, &sb) == 0 ? sb.st_size : -1;
}

static void
test_not_a_catalog(uint64_t *seed)
{
	struct catalog *c = NULL;
	uint8_t junk[8192];
	char p[256], *msg = NULL;
	sqlite3 *db;
	int rc;

	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)tap_rand(seed);
	path_in_dir(p, sizeof(p), "junk.db");
	write_file(p, junk, sizeof(junk));
	rc = catalog_open(env, p, &c);
	ok(rc < 0 && c == NULL, "open of random bytes fails (%s: %s)",
	    bt_strerror(rc), bt_error_detail());
	unlink(p);

	/* Random bytes behind a valid SQLite magic: a corrupt database. */
	memcpy(junk, "SQLite format 3", 16);
	write_file(p, junk, sizeof(junk));
	rc = catalog_open(env, p, &c);
	ok(rc < 0 && c == NULL, "open of a corrupt SQLite header fails (%s: %s)",
	    bt_strerror(rc), bt_error_detail());
	unlink(p);

	write_file(p, "", 0);
	is_int(catalog_open(env, p, &c), BT_EFORMAT, "open of an empty file is "
	    "BT_EFORMAT");
	is_int(file_size(p), 0, "the refused empty file is left untouched");
	unlink(p);

	if (sqlite3_open(p, &db) != SQLITE_OK ||
	    sqlite3_exec(db, "CREATE TABLE t (x); PRAGMA user_version = 1;",
	    NULL, NULL, &msg) != SQLITE_OK)
		tap_bail("cannot create a plain SQLite database");
	sqlite3_close(db);
	rc = catalog_open(env, p, &c);
	is_int(rc, BT_EFORMAT, "open of another program's database is "
	    "BT_EFORMAT");
	ok(strstr(bt_error_detail(), "not a tabletfs catalog") != NULL,
	    "the detail says why: %s", bt_error_detail());
	unlink(p);

	path_in_dir(p, sizeof(p), ".");
	rc = catalog_open(env, p, &c);
	ok(rc < 0 && c == NULL, "open of a directory fails (%s: %s)",
	    bt_strerror(rc), bt_error_detail());
}

/* Set the catalog's PRAGMA user_version behind its back. */
static void
set_user_version(int version)
{
	char sql[64];
	sqlite3 *db;

	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", version);
	if (raw_open(env, db_path, &db) != SQLITE_OK ||
	    sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
		tap_bail("cannot change user_version");
	sqlite3_close(db);
}

static void
test_version(void)
{
	struct catalog *c = NULL;
	char want[32];
	int rc;

	set_user_version(CATALOG_VERSION + 1);
	rc = catalog_open(env, db_path, &c);
	is_int(rc, BT_EFORMAT, "a catalog of version %d is BT_EFORMAT",
	    CATALOG_VERSION + 1);
	snprintf(want, sizeof(want), "version %d", CATALOG_VERSION + 1);
	ok(strstr(bt_error_detail(), want) != NULL,
	    "the detail names the version: %s", bt_error_detail());
	ok(c == NULL, "and no handle");
	set_user_version(CATALOG_VERSION);
	rc = catalog_open(env, db_path, &c);
	is_int(rc, 0, "version %d opens again", CATALOG_VERSION);
	catalog_close(c);
}

static void
test_names(struct catalog *c)
{
	static const char *const bad[] = {
		"", ".x", ".", "..", "a/b", "a b", "a:b", "a\xc3\xa9", "a%b",
	};
	char long_name[CATALOG_NAME_MAX + 2];
	struct catalog_family f;
	uint64_t id;

	memset(long_name, 'n', sizeof(long_name));
	long_name[CATALOG_NAME_MAX + 1] = '\0';
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ok(!catalog_name_valid(bad[i]), "'%s' is not a valid name",
		    bad[i]);
		is_int(catalog_table_create(c, bad[i], 0, NULL, 0, NULL, 0,
		    NULL, 0, &id, NULL), -EINVAL, "table '%s' is -EINVAL",
		    bad[i]);
	}
	ok(!catalog_name_valid(NULL), "NULL is not a valid name");
	ok(!catalog_name_valid(long_name), "65 bytes is too long");
	is_int(catalog_table_create(c, long_name, 0, NULL, 0, NULL, 0, NULL,
	    0, &id, NULL), -EINVAL, "a 65-byte table name is -EINVAL");
	long_name[CATALOG_NAME_MAX] = '\0';
	ok(catalog_name_valid(long_name), "64 bytes is fine");
	ok(catalog_name_valid("a.b-c_D9"), "letters, digits, . - _ are fine");

	f = family("a b", "", "");
	is_int(catalog_table_create(c, "goodname", 0, &f, 1, NULL, 0, NULL, 0,
	    &id, NULL), -EINVAL, "a bad family name is -EINVAL");
	f = family("ok", "bad/group", "");
	is_int(catalog_table_create(c, "goodname", 0, &f, 1, NULL, 0, NULL, 0,
	    &id, NULL), -EINVAL, "a bad group name is -EINVAL");
	is_int(catalog_table_get(c, "goodname", &(struct catalog_table *){0}),
	    BT_NOTFOUND, "refused creates made no table");
}

static void
test_table_create(struct catalog *c)
{
	static const uint8_t s_zero[] = { 0, 0 };
	static const uint8_t s_c0x[] = { 'c', 0, 'x' };
	struct slice splits[] = {
		slice_str("m"), slice_make(s_zero, 2), slice_make(s_c0x, 3),
		slice_make(NULL, 0), slice_str("m"), slice_str("c"),
	};
	/* Sorted, distinct, without the empty row: the tablet boundaries. */
	const struct slice bounds[] = {
		slice_make(s_zero, 2), slice_str("c"), slice_make(s_c0x, 3),
		slice_str("m"),
	};
	struct catalog_family fams[] = {
		family("f2", "g2", ""),
		family("f1", "", "maxversions=3"),
		family("f3", "g3", "maxage=7d or maxversions=1"),
	};
	struct catalog_group groups[2];
	struct catalog_table *t = NULL, *t2 = NULL;
	struct catalog_tablet *tablets;
	size_t n;
	uint64_t id = 0, id2;
	int rc;

	catalog_group_default(&groups[0], "g2");
	groups[0].block_size = 4096;
	groups[0].compress = false;
	groups[0].bloom = false;
	groups[0].in_memory = true;
	catalog_group_default(&groups[1], "gx");
	rc = catalog_table_create(c, "t1", 1 << 20, fams, 3, groups, 2, splits,
	    6, &id, NULL);
	is_int(rc, 0, "create table t1 (%s)", bt_error_detail());
	ok(id != 0, "t1 has an id");

	rc = catalog_table_get(c, "t1", &t);
	is_int(rc, 0, "get t1 by name");
	if (rc != 0)
		return;
	ok(strcmp(t->name, "t1") == 0 && t->id == id, "name and id match");
	is_int(t->tablet_size, 1 << 20, "tablet size kept");
	is_int(t->family_count, 3, "three families");
	if (t->family_count == 3) {
		ok(strcmp(t->families[0].name, "f1") == 0 &&
		    strcmp(t->families[1].name, "f2") == 0 &&
		    strcmp(t->families[2].name, "f3") == 0,
		    "families sorted by name");
		ok(strcmp(t->families[0].group, "default") == 0,
		    "a family without a group is in default");
		ok(strcmp(t->families[0].gc_policy, "maxversions=3") == 0,
		    "policy text kept as given");
		ok(strcmp(t->families[1].gc_policy, "never") == 0,
		    "no policy is never");
		ok(strcmp(t->families[2].group, "g3") == 0 &&
		    strcmp(t->families[2].gc_policy,
		    "maxage=7d or maxversions=1") == 0, "f3 group and policy");
	}
	is_int(t->group_count, 4, "groups default, g2, g3, gx");
	if (t->group_count == 4) {
		ok(strcmp(t->groups[0].name, "default") == 0 &&
		    strcmp(t->groups[1].name, "g2") == 0 &&
		    strcmp(t->groups[2].name, "g3") == 0 &&
		    strcmp(t->groups[3].name, "gx") == 0,
		    "groups sorted by name");
		ok(t->groups[1].block_size == 4096 && !t->groups[1].compress &&
		    !t->groups[1].bloom && t->groups[1].in_memory,
		    "g2 keeps its settings");
		ok(t->groups[2].block_size == 65536 && t->groups[2].compress &&
		    t->groups[2].bloom && !t->groups[2].in_memory,
		    "g3, named only by a family, has the defaults");
		ok(t->groups[0].block_size == 65536 && t->groups[0].compress,
		    "default has the defaults");
	}

	rc = catalog_table_get_by_id(c, id, &t2);
	is_int(rc, 0, "get t1 by id");
	if (rc == 0) {
		ok(strcmp(t2->name, "t1") == 0 &&
		    t2->family_count == t->family_count &&
		    t2->group_count == t->group_count,
		    "by id and by name agree");
		catalog_table_free(t2);
	}
	catalog_table_free(t);
	is_int(catalog_table_get_by_id(c, id + 1000, &t2), BT_NOTFOUND,
	    "an unknown id is BT_NOTFOUND");
	is_int(catalog_table_get(c, "nosuch", &t2), BT_NOTFOUND,
	    "an unknown name is BT_NOTFOUND");

	rc = catalog_tablets_list(c, id, &tablets, &n);
	is_int(rc, 0, "list t1's tablets");
	if (rc != 0)
		return;
	is_int(n, 5, "four distinct split rows make five tablets");
	if (n == 5) {
		bool chain = true;

		ok(tablets[0].start.n == 0, "the first tablet starts at the "
		    "beginning");
		ok(tablets[4].end.n == 0, "the last tablet runs to the end");
		for (size_t i = 0; i < 4; i++) {
			chain = chain && buf_is(&tablets[i].end, bounds[i].p,
			    bounds[i].n) && buf_is(&tablets[i + 1].start,
			    bounds[i].p, bounds[i].n);
		}
		ok(chain, "tablets meet at the sorted binary split rows");
		ok(tablets[0].table_id == id && tablets[0].flushed_seq == 0 &&
		    tablets[0].id != tablets[1].id,
		    "tablets carry their table, seq 0 and distinct ids");
	}
	catalog_tablets_free(tablets, n);
	is_int(catalog_tablets_list(c, id + 1000, &tablets, &n), BT_NOTFOUND,
	    "tablets of an unknown table is BT_NOTFOUND");

	is_int(catalog_table_create(c, "t1", 0, NULL, 0, NULL, 0, NULL, 0,
	    &id2, NULL), -EEXIST, "a second t1 is -EEXIST");

	rc = catalog_table_create(c, "plain", 0, NULL, 0, NULL, 0, NULL, 0,
	    &id2, NULL);
	is_int(rc, 0, "a table without families or splits");
	if (catalog_table_get(c, "plain", &t) == 0) {
		ok(t->family_count == 0 && t->group_count == 1 &&
		    strcmp(t->groups[0].name, "default") == 0,
		    "it has only the default group");
		is_int(t->tablet_size, CATALOG_DEFAULT_TABLET_SIZE,
		    "tablet size 0 means the default");
		catalog_table_free(t);
	}
	if (catalog_tablets_list(c, id2, &tablets, &n) == 0) {
		ok(n == 1 && tablets[0].start.n == 0 && tablets[0].end.n == 0,
		    "and one tablet covering everything");
		catalog_tablets_free(tablets, n);
	}
}

static void
test_table_list(struct catalog *c)
{
	static const char *const want[] = {
		"Alpha", "Zulu", "beta", "plain", "t1", "zeta",
	};
	char **names = NULL;
	size_t n = 0;
	bool same;
	uint64_t id;
	int rc;

	catalog_table_create(c, "zeta", 0, NULL, 0, NULL, 0, NULL, 0, &id,
	    NULL);
	catalog_table_create(c, "Alpha", 0, NULL, 0, NULL, 0, NULL, 0, &id,
	    NULL);
	catalog_table_create(c, "beta", 0, NULL, 0, NULL, 0, NULL, 0, &id,
	    NULL);
	catalog_table_create(c, "Zulu", 0, NULL, 0, NULL, 0, NULL, 0, &id,
	    NULL);
	rc = catalog_table_list(c, &names, &n);
	is_int(rc, 0, "list tables");
	if (rc != 0)
		return;
	is_int(n, 6, "six tables");
	same = n == 6;
	for (size_t i = 0; same && i < n; i++)
		same = strcmp(names[i], want[i]) == 0;
	ok(same, "listed in byte order");
	ok(names[n] == NULL, "the array ends with NULL");
	for (size_t i = 0; i < n; i++)
		bt_free(names[i]);
	bt_free(names);
}

static void
test_families(struct catalog *c)
{
	struct catalog_family f = family("f4", "g4", "maxversions=2");
	struct catalog_group g;
	struct catalog_table *t;
	bool found = false;

	is_int(catalog_family_create(c, "t1", &f, NULL), 0, "add family f4");
	is_int(catalog_family_create(c, "t1", &f, NULL), -EEXIST,
	    "add f4 again is -EEXIST");
	f = family("f1", "", "");
	is_int(catalog_family_create(c, "t1", &f, NULL), -EEXIST,
	    "add an existing family is -EEXIST");
	is_int(catalog_family_create(c, "nosuch", &f, NULL), -ENOENT,
	    "add to a missing table is -ENOENT");
	f = family(".f", "", "");
	is_int(catalog_family_create(c, "t1", &f, NULL), -EINVAL,
	    "add a bad family name is -EINVAL");

	is_int(catalog_family_set_gc(c, "t1", "f4", "maxage=1h", NULL), 0,
	    "set f4's policy");
	is_int(catalog_family_set_gc(c, "t1", "nosuch", "never", NULL), -ENOENT,
	    "set the policy of a missing family is -ENOENT");
	is_int(catalog_family_set_gc(c, "nosuch", "f4", "never", NULL), -ENOENT,
	    "set a policy in a missing table is -ENOENT");
	is_int(catalog_family_set_gc(c, "t1", "f4", "", NULL), -EINVAL,
	    "an empty policy is -EINVAL");

	catalog_group_default(&g, "g2");
	g.block_size = 8192;
	g.bloom = true;
	is_int(catalog_group_set(c, "t1", &g, NULL), 0, "update group g2");
	catalog_group_default(&g, "g5");
	g.in_memory = true;
	is_int(catalog_group_set(c, "t1", &g, NULL), 0, "add group g5");
	is_int(catalog_group_set(c, "nosuch", &g, NULL), -ENOENT,
	    "set a group of a missing table is -ENOENT");
	g.block_size = 0;
	is_int(catalog_group_set(c, "t1", &g, NULL), -EINVAL,
	    "block size 0 is -EINVAL");

	if (catalog_table_get(c, "t1", &t) != 0) {
		ok(false, "reload t1");
		return;
	}
	for (size_t i = 0; i < t->family_count; i++)
		if (strcmp(t->families[i].name, "f4") == 0)
			found = strcmp(t->families[i].group, "g4") == 0 &&
			    strcmp(t->families[i].gc_policy, "maxage=1h") == 0;
	ok(found, "f4 is in g4 with its new policy");
	is_int(t->group_count, 6, "groups default, g2, g3, g4, g5, gx");
	if (t->group_count == 6) {
		ok(strcmp(t->groups[3].name, "g4") == 0 &&
		    t->groups[3].block_size == 65536,
		    "g4 was made with defaults for f4");
		ok(t->groups[1].block_size == 8192 && t->groups[1].bloom &&
		    !t->groups[1].in_memory, "g2 updated");
		ok(strcmp(t->groups[4].name, "g5") == 0 &&
		    t->groups[4].in_memory, "g5 added");
	}
	catalog_table_free(t);

	is_int(catalog_family_drop(c, "t1", "f4", NULL), 0, "drop f4");
	is_int(catalog_family_drop(c, "t1", "f4", NULL), -ENOENT,
	    "drop f4 again is -ENOENT");
	is_int(catalog_family_drop(c, "nosuch", "f1", NULL), -ENOENT,
	    "drop in a missing table is -ENOENT");
	if (catalog_table_get(c, "t1", &t) == 0) {
		found = false;
		for (size_t i = 0; i < t->family_count; i++)
			found = found || strcmp(t->families[i].name, "f4") == 0;
		ok(!found && t->family_count == 3, "f4 is gone, f1-f3 stay");
		catalog_table_free(t);
	}
}

static void
test_failed_calls_leave_nothing(struct catalog *c)
{
	struct catalog_family fams[] = {
		family("a", "", ""), family("b", "", ""), family("a", "", ""),
	};
	struct catalog_file added[2];
	uint64_t id = 0, tid, tablet, removed = 999;
	char list[128];
	struct catalog_table *t;

	is_int(catalog_table_create(c, "dup", 0, fams, 3, NULL, 0, NULL, 0,
	    &id, NULL), -EINVAL, "a family listed twice is refused");
	is_int(catalog_table_get(c, "dup", &t), BT_NOTFOUND,
	    "and no table was made");

	tid = table_id_of(c, "t1");
	tablet = tablet_id_of(c, tid, 0);
	added[0] = file(501, "default", 10);
	is_int(catalog_tablet_apply(c, tablet, added, 1, NULL, 0, 10), 0,
	    "name file 501");

	/* The second file's group does not exist: the call fails after the
	 * removal and the first insert ran, and must undo both. */
	added[0] = file(502, "default", 20);
	added[1] = file(503, "nosuchgroup", 20);
	removed = 501;
	is_int(catalog_tablet_apply(c, tablet, added, 2, &removed, 1, 20),
	    -ENOENT, "a file in a missing group fails the whole apply");
	ok(strcmp(files_of(c, tablet, list, sizeof(list)), "501") == 0,
	    "the tablet still names only 501 (%s)", list);
	is_int(catalog_file_is_live(c, 502), 0, "502 was never named");
	is_int(flushed_seq_of(c, tid, tablet), 10, "flushed_seq unchanged");

	removed = 777;
	is_int(catalog_tablet_apply(c, tablet, added, 1, &removed, 1, 30),
	    -ENOENT, "removing a file the tablet does not name fails");
	ok(strcmp(files_of(c, tablet, list, sizeof(list)), "501") == 0,
	    "nothing changed (%s)", list);
	is_int(catalog_tablet_apply(c, tablet + 1000, added, 1, NULL, 0, 30),
	    -ENOENT, "apply to a missing tablet is -ENOENT");
	added[0] = file(501, "default", 20);
	is_int(catalog_tablet_apply(c, tablet, added, 1, NULL, 0, 30),
	    -EEXIST, "naming a file twice is -EEXIST");
	is_int(flushed_seq_of(c, tid, tablet), 10, "flushed_seq unchanged");

	removed = 501;
	is_int(catalog_tablet_apply(c, tablet, NULL, 0, &removed, 1, 0), 0,
	    "unname 501");
}

static void
test_apply(struct catalog *c)
{
	struct catalog_file added[3], *files;
	uint64_t tid, tablet, tablet2, removed[2];
	char list[128];
	size_t n;
	int rc;

	tid = table_id_of(c, "t1");
	tablet = tablet_id_of(c, tid, 1);
	tablet2 = tablet_id_of(c, tid, 2);
	ok(tablet != 0 && tablet2 != 0, "t1 has tablets");

	added[0] = file(10, "default", 100);
	added[1] = file(30, "g2", 100);
	added[2] = file(20, "g3", 90);
	is_int(catalog_tablet_apply(c, tablet, added, 3, NULL, 0, 100), 0,
	    "a flush names three files");
	is_int(flushed_seq_of(c, tid, tablet), 100, "flushed_seq is 100");
	rc = catalog_files_list(c, tablet, &files, &n);
	is_int(rc, 0, "list the files");
	if (rc == 0) {
		ok(n == 3 && files[0].number == 30 && files[1].number == 20 &&
		    files[2].number == 10, "newest (highest number) first");
		if (n == 3)
			ok(strcmp(files[0].group, "g2") == 0 &&
			    files[0].size == 30000 &&
			    files[0].entry_count == 300 &&
			    files[0].max_seq == 100 &&
			    files[0].tablet_id == tablet,
			    "a file's fields round-trip");
		bt_free(files);
	}
	ok(strcmp(files_of(c, tablet2, list, sizeof(list)), "") == 0,
	    "another tablet names nothing");
	is_int(catalog_files_list(c, 987654, &files, &n), BT_NOTFOUND,
	    "files of a missing tablet is BT_NOTFOUND");

	added[0] = file(40, "default", 50);
	removed[0] = 10;
	removed[1] = 20;
	is_int(catalog_tablet_apply(c, tablet, added, 1, removed, 2, 50), 0,
	    "a compaction replaces 10 and 20 by 40");
	ok(strcmp(files_of(c, tablet, list, sizeof(list)), "40,30") == 0,
	    "the tablet names 40,30 (%s)", list);
	is_int(flushed_seq_of(c, tid, tablet), 100,
	    "a lower flushed_seq does not lower the redo point");
	is_int(catalog_file_is_live(c, 10), 0, "10 is no longer live");
	is_int(catalog_file_is_live(c, 40), 1, "40 is live");

	/* A split child shares its parent's file. */
	added[0] = file(40, "default", 50);
	is_int(catalog_tablet_apply(c, tablet2, added, 1, NULL, 0, 120), 0,
	    "a second tablet may name the same file");
	is_int(flushed_seq_of(c, tid, tablet2), 120, "its flushed_seq rises");
	removed[0] = 40;
	is_int(catalog_tablet_apply(c, tablet, NULL, 0, removed, 1, 0), 0,
	    "the first tablet drops 40");
	is_int(catalog_file_is_live(c, 40), 1,
	    "40 is live while one tablet names it");
	is_int(catalog_tablet_apply(c, tablet2, NULL, 0, removed, 1, 0), 0,
	    "the second tablet drops 40");
	is_int(catalog_file_is_live(c, 40), 0, "then 40 is dead");
}

static void
test_drop_table(struct catalog *c)
{
	static const struct slice splits[] = { { (const uint8_t *)"k", 1 } };
	struct catalog_file added = file(601, "default", 5);
	struct catalog_tablet *tablets;
	struct catalog_file *files;
	struct catalog_table *t;
	uint64_t id = 0, tablet0, tablet1;
	size_t n;

	is_int(catalog_table_create(c, "victim", 0, NULL, 0, NULL, 0, splits,
	    1, &id, NULL), 0, "create victim with two tablets");
	tablet0 = tablet_id_of(c, id, 0);
	tablet1 = tablet_id_of(c, id, 1);
	is_int(catalog_tablet_apply(c, tablet0, &added, 1, NULL, 0, 5), 0,
	    "name 601 in its first tablet");
	added = file(602, "default", 5);
	is_int(catalog_tablet_apply(c, tablet1, &added, 1, NULL, 0, 5), 0,
	    "name 602 in its second tablet");
	is_int(catalog_file_is_live(c, 601), 1, "601 is live");

	is_int(catalog_table_drop(c, "victim"), 0, "drop victim");
	is_int(catalog_file_is_live(c, 601), 0, "601 is no longer live");
	is_int(catalog_file_is_live(c, 602), 0, "602 is no longer live");
	is_int(catalog_table_get(c, "victim", &t), BT_NOTFOUND,
	    "the table is gone");
	is_int(catalog_tablets_list(c, id, &tablets, &n), BT_NOTFOUND,
	    "its tablets are gone");
	is_int(catalog_files_list(c, tablet0, &files, &n), BT_NOTFOUND,
	    "its tablet's files are gone");
	is_int(catalog_table_drop(c, "victim"), -ENOENT,
	    "drop it again is -ENOENT");
	is_int(catalog_table_drop(c, "a b"), -EINVAL,
	    "drop a bad name is -EINVAL");
}

static void
test_numbers_and_meta(struct catalog **cp)
{
	uint64_t a = 0, b = 0, v = 0;
	bool rising = true;

	is_int(catalog_meta_get(*cp, "log_number", 77, &v), 0,
	    "meta get of an unset key");
	is_int(v, 77, "gives the default");
	is_int(catalog_meta_set(*cp, "log_number", 5), 0, "meta set");
	is_int(catalog_meta_set(*cp, "log_number", 1ull << 40), 0,
	    "meta set again");
	catalog_meta_get(*cp, "log_number", 77, &v);
	is_int(v, 1ull << 40, "meta get returns the last value");
	is_int(catalog_meta_set(*cp, "", 1), -EINVAL, "an empty key is -EINVAL");

	is_int(catalog_next_number(*cp, &a), 0, "next_number");
	ok(a > 0, "numbers start above 0");
	for (int i = 0; i < 10; i++) {
		if (catalog_next_number(*cp, &b) != 0 || b <= a)
			rising = false;
		a = b;
	}
	ok(rising, "ten more numbers strictly increase");
	catalog_close(*cp);
	*cp = open_or_bail();
	is_int(catalog_next_number(*cp, &b), 0, "next_number after reopen");
	ok(b > a, "still increasing after reopen (%llu > %llu)",
	    (unsigned long long)b, (unsigned long long)a);
}

struct number_thread {
	struct catalog *c;
	uint64_t numbers[NUMBERS_PER_THREAD];
	int errors;
};

static void *
number_thread_main(void *arg)
{
	struct number_thread *nt = arg;

	for (int i = 0; i < NUMBERS_PER_THREAD; i++)
		if (catalog_next_number(nt->c, &nt->numbers[i]) != 0)
			nt->errors++;
	return NULL;
}

static int
u64_compare(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void
test_threads(struct catalog *c)
{
	static struct number_thread nt[THREADS];
	static uint64_t all[THREADS * NUMBERS_PER_THREAD];
	pthread_t tids[THREADS];
	uint64_t before = 0;
	int errors = 0, dups = 0, order = 0;

	catalog_next_number(c, &before);
	for (int i = 0; i < THREADS; i++) {
		nt[i].c = c;
		if (pthread_create(&tids[i], NULL, number_thread_main,
		    &nt[i]) != 0)
			tap_bail("pthread_create");
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(tids[i], NULL);
		errors += nt[i].errors;
		for (int j = 0; j < NUMBERS_PER_THREAD; j++) {
			all[i * NUMBERS_PER_THREAD + j] = nt[i].numbers[j];
			if (j > 0 && nt[i].numbers[j] <= nt[i].numbers[j - 1])
				order++;
		}
	}
	is_int(errors, 0, "%d threads x %d next_number calls succeed",
	    THREADS, NUMBERS_PER_THREAD);
	is_int(order, 0, "each thread sees its numbers increase");
	qsort(all, THREADS * NUMBERS_PER_THREAD, sizeof(all[0]), u64_compare);
	for (int i = 1; i < THREADS * NUMBERS_PER_THREAD; i++)
		dups += all[i] == all[i - 1];
	is_int(dups, 0, "all numbers are distinct");
	ok(all[0] > before, "all are above the number taken before");
}

static bool
has_table(struct catalog *c, const char *name)
{
	return table_id_of(c, name) != 0;
}

static struct catalog *
fault_open_or_bail(struct env *fenv, const char *path)
{
	struct catalog *c = NULL;
	int rc = catalog_open(fenv, path, &c);

	if (rc != 0) {
		diag("catalog_open: %s: %s", bt_strerror(rc), bt_error_detail());
		tap_bail("cannot open the catalog in the fault env");
	}
	return c;
}

/*
 * Through the fault env: a create that fails leaves nothing, a finished
 * one survives power loss, a commit whose sync or write fails changes
 * nothing (also after power loss), and what committed survives it.  Then
 * the thread test, where the fault env's syncs cost nothing.
 */
static void
test_fault_env(void)
{
	static const char path[] = "/s/catalog.db";
	struct catalog_table *t;
	struct catalog *c;
	struct env *fenv;
	uint64_t id, n1 = 0, n2 = 0, v = 0;
	int rc;

	if (env_fault_new(&fenv) < 0 || env_dir_create(fenv, "/s") < 0 ||
	    env_dir_sync(fenv, "/") < 0)
		tap_bail("cannot set up the fault env");

	env_fault_fail_after(fenv, ENV_FAULT_SYNC, 1, -EIO, false);
	rc = catalog_create(fenv, path);
	is_int(rc, -EIO, "create fails when a sync fails (%s)",
	    bt_error_detail());
	ok(!env_path_exists(fenv, path) &&
	    !env_path_exists(fenv, "/s/catalog.db.tmp"),
	    "and leaves neither the catalog nor its temporary file");
	env_fault_fail_after(fenv, ENV_FAULT_RENAME, 1, -EIO, false);
	is_int(catalog_create(fenv, path), -EIO,
	    "create fails when the rename fails");
	ok(!env_path_exists(fenv, path) &&
	    !env_path_exists(fenv, "/s/catalog.db.tmp"),
	    "and leaves nothing either");

	is_int(catalog_create(fenv, path), 0, "create in the fault env");
	env_fault_drop_unsynced(fenv);
	c = fault_open_or_bail(fenv, path);
	ok(true, "a created catalog survives power loss");

	is_int(catalog_table_create(c, "a", 0, NULL, 0, NULL, 0, NULL, 0, &id,
	    NULL),
	    0, "create table a");
	is_int(catalog_next_number(c, &n1), 0, "take a number");
	env_fault_drop_unsynced(fenv);
	catalog_close(c);
	c = fault_open_or_bail(fenv, path);
	ok(has_table(c, "a"), "table a survives power loss");
	catalog_next_number(c, &n2);
	ok(n2 > n1, "and so does the last number (%llu > %llu)",
	    (unsigned long long)n2, (unsigned long long)n1);

	env_fault_fail_after(fenv, ENV_FAULT_SYNC, 1, -EIO, false);
	rc = catalog_table_create(c, "b", 0, NULL, 0, NULL, 0, NULL, 0, &id,
	    NULL);
	ok(rc < 0, "a create whose commit cannot sync fails (%s: %s)",
	    bt_strerror(rc), bt_error_detail());
	is_int(catalog_table_get(c, "b", &t), BT_NOTFOUND,
	    "and made no table");
	rc = catalog_table_create(c, "c", 0, NULL, 0, NULL, 0, NULL, 0, &id,
	    NULL);
	is_int(rc, 0, "the next create works (%s)", bt_error_detail());

	env_fault_fail_after(fenv, ENV_FAULT_APPEND, 1, -ENOSPC, false);
	rc = catalog_meta_set(c, "k", 5);
	is_int(rc, -ENOSPC, "a write that finds the disk full is -ENOSPC "
	    "(%s)", bt_error_detail());
	catalog_meta_get(c, "k", 99, &v);
	is_int(v, 99, "and set nothing");
	is_int(catalog_meta_set(c, "k", 6), 0, "the next set works");

	env_fault_drop_unsynced(fenv);
	catalog_close(c);
	c = fault_open_or_bail(fenv, path);
	ok(has_table(c, "a"), "after power loss: a is there");
	ok(has_table(c, "c"), "c is there");
	is_int(catalog_table_get(c, "b", &t), BT_NOTFOUND, "b is not");
	catalog_meta_get(c, "k", 99, &v);
	is_int(v, 6, "and k is 6");

	/* Closing deletes the WAL; if that removal was not synced, power
	 * loss brings it back and the next open recovers from it. */
	is_int(catalog_meta_set(c, "k", 7), 0, "set k to 7");
	catalog_close(c);
	env_fault_drop_unsynced(fenv);
	diag("after close and power loss the WAL %s",
	    env_path_exists(fenv, "/s/catalog.db-wal") ? "came back" :
	    "stayed deleted");
	c = fault_open_or_bail(fenv, path);
	catalog_meta_get(c, "k", 99, &v);
	is_int(v, 7, "and the reopened catalog has k = 7");
	ok(has_table(c, "a") && has_table(c, "c") && !has_table(c, "b"),
	    "and the same tables");

	test_threads(c);
	catalog_close(c);
	env_free(fenv);
}

/* Random binary split rows, with empties and duplicates, make tablets
 * that tile the row space in order. */
static void
test_random_splits(struct catalog *c, uint64_t *seed)
{
	enum { SPLITS = 40 };
	uint8_t rows[SPLITS][4];
	struct slice splits[SPLITS], sorted[SPLITS];
	struct catalog_tablet *t;
	size_t n, distinct = 0;
	uint64_t id = 0;
	bool tiled = true;

	for (int i = 0; i < SPLITS; i++) {
		size_t len = tap_rand(seed) % 4;

		for (size_t j = 0; j < len; j++)
			rows[i][j] = (uint8_t[]){ 0x00, 0x01, 'a', 0xff }[
			    tap_rand(seed) % 4];
		splits[i] = slice_make(rows[i], len);
	}
	/* The expected boundaries: insertion sort without duplicates. */
	for (int i = 0; i < SPLITS; i++) {
		size_t j;

		if (splits[i].n == 0)
			continue;
		for (j = 0; j < distinct &&
		    slice_compare(sorted[j], splits[i]) < 0; j++)
			;
		if (j < distinct && slice_equal(sorted[j], splits[i]))
			continue;
		memmove(&sorted[j + 1], &sorted[j],
		    (distinct - j) * sizeof(sorted[0]));
		sorted[j] = splits[i];
		distinct++;
	}
	is_int(catalog_table_create(c, "random", 0, NULL, 0, NULL, 0, splits,
	    SPLITS, &id, NULL), 0, "create a table with random split rows");
	if (catalog_tablets_list(c, id, &t, &n) != 0) {
		ok(false, "list its tablets");
		return;
	}
	is_int(n, distinct + 1, "one tablet more than distinct split rows");
	if (n == distinct + 1) {
		tiled = t[0].start.n == 0 && t[n - 1].end.n == 0;
		for (size_t i = 0; i < distinct; i++)
			tiled = tiled && slice_equal(buf_slice(&t[i].end),
			    sorted[i]) && slice_equal(buf_slice(&t[i + 1].start),
			    sorted[i]);
	}
	ok(tiled, "the tablets tile the row space in order");
	catalog_tablets_free(t, n);
}

/* After a reopen, everything written earlier is still there. */
static void
test_persistence(struct catalog **cp)
{
	struct catalog_table *t;
	char list[128];
	uint64_t tid, v = 0;

	catalog_close(*cp);
	*cp = open_or_bail();
	if (catalog_table_get(*cp, "t1", &t) != 0) {
		ok(false, "t1 survives a reopen");
		return;
	}
	ok(t->family_count == 3 && t->group_count == 6 &&
	    t->tablet_size == 1 << 20, "t1's schema survives a reopen");
	catalog_table_free(t);
	tid = table_id_of(*cp, "t1");
	ok(strcmp(files_of(*cp, tablet_id_of(*cp, tid, 1), list,
	    sizeof(list)), "30") == 0, "t1's files survive (%s)", list);
	is_int(flushed_seq_of(*cp, tid, tablet_id_of(*cp, tid, 1)), 100,
	    "and its redo point");
	catalog_meta_get(*cp, "log_number", 0, &v);
	is_int(v, 1ull << 40, "and the counters");
	is_int(catalog_table_get(*cp, "victim", &t), BT_NOTFOUND,
	    "a dropped table stays dropped");
}

/*
 * Every allocation of the catalog's own may fail: each call then returns
 * -ENOMEM and leaks nothing (valgrind checks the second part).
 */
static void
test_alloc_failures(struct catalog *c)
{
	struct catalog_tablet *tablets;
	struct catalog_table *t;
	struct catalog *c2;
	char **names;
	size_t n;
	uint64_t random_id = table_id_of(c, "random");
	int bad = 0, failed = 0, rc;

	for (long k = 1; k <= 12; k++) {
		bt_alloc_fail_after(k);
		rc = catalog_table_get(c, "t1", &t);
		if (rc == 0)
			catalog_table_free(t);
		bad += rc != 0 && rc != -ENOMEM;
		failed += rc == -ENOMEM;
		bt_alloc_fail_after(k);
		rc = catalog_table_list(c, &names, &n);
		if (rc == 0) {
			for (size_t i = 0; i < n; i++)
				bt_free(names[i]);
			bt_free(names);
		}
		bad += rc != 0 && rc != -ENOMEM;
		failed += rc == -ENOMEM;
		bt_alloc_fail_after(k);
		rc = catalog_tablets_list(c, random_id, &tablets, &n);
		if (rc == 0)
			catalog_tablets_free(tablets, n);
		bad += rc != 0 && rc != -ENOMEM;
		failed += rc == -ENOMEM;
		bt_alloc_fail_after(k);
		rc = catalog_open(env, db_path, &c2);
		if (rc == 0)
			catalog_close(c2);
		bad += rc != 0 && rc != -ENOMEM;
		failed += rc == -ENOMEM;
	}
	bt_alloc_fail_after(0);
	is_int(bad, 0, "failed allocations give only -ENOMEM");
	ok(failed > 0, "and some did fail (%d)", failed);
	if (catalog_table_get(c, "t1", &t) == 0) {
		ok(t->family_count == 3, "the catalog still works afterwards");
		catalog_table_free(t);
	} else {
		ok(false, "the catalog still works afterwards");
	}
}

/* ---- Page checksums (format version 3) ---- */

static void
copy_local(const char *from, const char *to)
{
	char data[65536];
	FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
	size_t got;

	if (in == NULL || out == NULL)
		tap_bail("copy_local");
	while ((got = fread(data, 1, sizeof(data), in)) > 0)
		if (fwrite(data, 1, got, out) != got)
			tap_bail("copy_local write");
	fclose(in);
	if (fclose(out) != 0)
		tap_bail("copy_local close");
}

/* The page size in the header of the SQLite database at p. */
static uint32_t
page_size_of(const char *p)
{
	uint8_t h[18];
	int fd = open(p, O_RDONLY);
	uint32_t ps;

	if (fd < 0 || pread(fd, h, sizeof(h), 0) != (ssize_t)sizeof(h))
		tap_bail("read a database header");
	close(fd);
	ps = (uint32_t)h[16] << 8 | h[17];
	return ps == 1 ? 65536 : ps;
}

/* XOR one byte of a local file with 0x20. */
static void
flip_byte(const char *p, uint64_t at)
{
	int fd = open(p, O_RDWR);
	uint8_t b;

	if (fd < 0 || pread(fd, &b, 1, (off_t)at) != 1)
		tap_bail("flip_byte read");
	b ^= 0x20;
	if (pwrite(fd, &b, 1, (off_t)at) != 1 || close(fd) != 0)
		tap_bail("flip_byte write");
}

/*
 * Everything the catalog says, through its API, as text into *out
 * (malloc'ed).  Returns 0, or the first error.
 */
static int
catalog_dump(struct catalog *c, char **out)
{
	struct catalog_tablet *tabs;
	struct catalog_table *t;
	struct catalog_file *files;
	char **names = NULL, *text = NULL;
	size_t n = 0, tn, fn, size;
	FILE *f = open_memstream(&text, &size);
	int rc;

	if (f == NULL)
		tap_bail("open_memstream");
	if ((rc = catalog_table_list(c, &names, &n)) < 0)
		goto out;
	for (size_t i = 0; i < n && rc == 0; i++) {
		if ((rc = catalog_table_get(c, names[i], &t)) != 0)
			break;
		fprintf(f, "table %s %llu %llu\n", t->name,
		    (unsigned long long)t->id,
		    (unsigned long long)t->tablet_size);
		for (size_t j = 0; j < t->family_count; j++)
			fprintf(f, " family %s %s %s %llu\n",
			    t->families[j].name, t->families[j].group,
			    t->families[j].gc_policy,
			    (unsigned long long)t->families[j].created_seq);
		for (size_t j = 0; j < t->group_count; j++)
			fprintf(f, " group %s %u %d %d %d\n", t->groups[j].name,
			    t->groups[j].block_size, t->groups[j].compress,
			    t->groups[j].bloom, t->groups[j].in_memory);
		rc = catalog_tablets_list(c, t->id, &tabs, &tn);
		catalog_table_free(t);
		if (rc != 0)
			break;
		for (size_t j = 0; rc == 0 && j < tn; j++) {
			fprintf(f, " tablet %llu [%.*s, %.*s) %llu\n",
			    (unsigned long long)tabs[j].id,
			    (int)tabs[j].start.n, (char *)tabs[j].start.p,
			    (int)tabs[j].end.n, (char *)tabs[j].end.p,
			    (unsigned long long)tabs[j].flushed_seq);
			if ((rc = catalog_files_list(c, tabs[j].id, &files,
			    &fn)) != 0)
				break;
			for (size_t k = 0; k < fn; k++)
				fprintf(f, "  file %llu %s %llu\n",
				    (unsigned long long)files[k].number,
				    files[k].group,
				    (unsigned long long)files[k].size);
			bt_free(files);
		}
		catalog_tablets_free(tabs, tn);
	}
out:
	for (size_t i = 0; i < n; i++)
		bt_free(names[i]);
	bt_free(names);
	fclose(f);
	if (rc != 0) {
		free(text);
		return rc;
	}
	*out = text;
	return 0;
}

static void
report_append(void *arg, const char *problem)
{
	char *text = arg;
	size_t n = strlen(text);

	snprintf(text + n, 4096 - n, "%s\n", problem);
}

/*
 * A byte flipped in any page of a catalog, in its body or in its trailer:
 * the open fails with BT_ECHECKSUM naming the page, or it succeeds and
 * every read returns what the catalog held or BT_ECHECKSUM, never other
 * data, and catalog_check names the page.  Free pages (a dropped table's)
 * are damaged too.
 */
static void
test_damage_every_page(void)
{
	struct catalog_family fams[] = {
		family("anchor", "", "maxversions=3"),
		family("contents", "", "maxage=7d"),
		family("language", "lang", ""),
	};
	struct slice splits[40];
	char keys[40][16], p[256], orig[256], want[64], *pristine, *got;
	char *reported;
	struct catalog_file added[3];
	struct catalog *c;
	uint64_t id, size, ps;
	size_t pages;
	int refused = 0, opened = 0, bad_refusal = 0, wrong = 0, missed = 0;
	int bad_error = 0, rc;

	for (int i = 0; i < 40; i++) {
		snprintf(keys[i], sizeof(keys[i]), "com.site%03d", i * 7);
		splits[i] = slice_str(keys[i]);
	}
	path_in_dir(p, sizeof(p), "damage.db");
	path_in_dir(orig, sizeof(orig), "damage.orig");
	unlink(p);
	if (catalog_create(env, p) != 0)
		tap_bail("catalog_create");
	c = fault_open_or_bail(env, p);
	if (catalog_table_create(c, "webtable", 0, fams, 3, NULL, 0, splits,
	    40, &id, NULL) != 0 || catalog_table_create(c, "victim", 0, fams, 1,
	    NULL, 0, splits, 40, &id, NULL) != 0 || catalog_table_drop(c,
	    "victim") != 0)
		tap_bail("cannot fill the catalog");
	id = table_id_of(c, "webtable");
	for (int i = 0; i < 3; i++)
		added[i] = file(100 + (uint64_t)i, i == 2 ? "lang" :
		    "default", 1000 + (uint64_t)i);
	if (catalog_tablet_apply(c, tablet_id_of(c, id, 3), added, 3, NULL,
	    0, 42) != 0)
		tap_bail("cannot name files");
	catalog_close(c);
	copy_local(p, orig);
	size = file_size(orig);
	ps = page_size_of(orig);
	pages = (size_t)(size / ps);
	c = fault_open_or_bail(env, p);
	if (catalog_dump(c, &pristine) != 0)
		tap_bail("dump");
	is_int(catalog_check(c, NULL, NULL), 0,
	    "a catalog of %zu pages: check finds nothing", pages);
	catalog_close(c);
	if ((reported = malloc(4096)) == NULL)
		tap_bail("malloc");

	for (size_t pg = 1; pg <= pages; pg++) {
		for (int trailer = 0; trailer < 2; trailer++) {
			copy_local(orig, p);
			flip_byte(p, (pg - 1) * ps + (trailer ? ps - 3 :
			    ps / 4 + pg * 37 % (ps / 2)));
			snprintf(want, sizeof(want), "page %zu checksum "
			    "mismatch", pg);
			bt_error_clear();
			c = NULL;
			rc = catalog_open(env, p, &c);
			if (rc < 0) {
				refused++;
				if (rc != BT_ECHECKSUM || strstr(
				    bt_error_detail(), want) == NULL) {
					bad_refusal++;
					diag("page %zu: open: %s: %s", pg,
					    bt_strerror(rc), bt_error_detail());
				}
				continue;
			}
			opened++;
			rc = catalog_dump(c, &got);
			if (rc == 0) {
				wrong += strcmp(got, pristine) != 0;
				free(got);
			} else if (rc != BT_ECHECKSUM) {
				bad_error++;
				diag("page %zu: read: %s: %s", pg,
				    bt_strerror(rc), bt_error_detail());
			}
			reported[0] = '\0';
			snprintf(want, sizeof(want), "page %zu: checksum "
			    "mismatch", pg);
			rc = catalog_check(c, report_append, reported);
			if (rc < 1 || strstr(reported, want) == NULL) {
				missed++;
				diag("page %zu: check %d (%s): %s", pg, rc,
				    bt_error_detail(), reported);
			}
			catalog_close(c);
		}
	}
	diag("%zu pages x 2 flips: %d refused at open, %d opened", pages,
	    refused, opened);
	is_int(bad_refusal, 0, "each refused open is BT_ECHECKSUM and names "
	    "the page");
	is_int(wrong, 0, "no read returned other data than the catalog held");
	is_int(bad_error, 0, "each failed read is BT_ECHECKSUM");
	is_int(missed, 0, "check names every damaged page of every catalog "
	    "that opens");
	ok(refused > 0 && opened > 0, "some flips stop the open (%d), most "
	    "do not (%d)", refused, opened);
	free(reported);
	free(pristine);
	unlink(p);
	unlink(orig);
}

/*
 * A byte flipped in the newest frame of the WAL of an open catalog:
 * catalog_check names the WAL frame and the page (the checkpoint it runs
 * first reads every newest frame), and finds nothing once it is restored.
 */
static void
test_damage_wal(void)
{
	struct catalog_family fams[] = { family("anchor", "", "") };
	char p[256], wal[300], want[64], *reported;
	struct catalog *c;
	uint64_t id, size, at, fs;
	int rc;

	path_in_dir(p, sizeof(p), "walcheck.db");
	snprintf(wal, sizeof(wal), "%s-wal", p);
	unlink(p);
	if (catalog_create(env, p) != 0)
		tap_bail("catalog_create");
	c = fault_open_or_bail(env, p);
	if (catalog_table_create(c, "webtable", 0, fams, 1, NULL, 0, NULL, 0,
	    &id, NULL) != 0 || (reported = calloc(1, 4096)) == NULL)
		tap_bail("cannot fill the catalog");
	size = file_size(wal);
	fs = page_size_of(p) + 24;
	ok(size > 32 + fs, "the catalog's WAL holds %llu frames",
	    (unsigned long long)((size - 32) / fs));
	at = 32 + ((size - 32) / fs - 1) * fs + 24 + 1000;
	flip_byte(wal, at);
	rc = catalog_check(c, report_append, reported);
	snprintf(want, sizeof(want), "WAL frame %llu (page ",
	    (unsigned long long)((size - 32) / fs));
	ok(rc >= 1 && strstr(reported, want) != NULL &&
	    strstr(reported, "checksum mismatch") != NULL,
	    "check names the WAL frame (%d): %s", rc, reported);
	flip_byte(wal, at);
	reported[0] = '\0';
	is_int(catalog_check(c, report_append, reported), 0,
	    "restored, check finds nothing %s", reported);
	catalog_close(c);
	free(reported);
	unlink(p);
}

/* The index of the last commit's own frame in the WAL at p (SQLite pads
 * a commit with copies of that frame, up to a sector boundary). */
static uint64_t
last_commit_frame(const char *p, uint64_t frames, uint64_t fs)
{
	uint8_t *last = malloc(fs), *f = malloc(fs);
	uint64_t k = frames - 1;
	int fd = open(p, O_RDONLY);

	if (last == NULL || f == NULL || fd < 0 ||
	    pread(fd, last, fs, 32 + (off_t)(k * fs)) != (ssize_t)fs)
		tap_bail("read the WAL");
	while (k > 0 && pread(fd, f, fs, 32 + (off_t)((k - 1) * fs)) ==
	    (ssize_t)fs && memcmp(f, last, 8) == 0 &&
	    memcmp(f + 24, last + 24, fs - 24) == 0)
		k--;
	close(fd);
	free(last);
	free(f);
	return k;
}

/*
 * What a crash leaves: a catalog and its WAL of committed transactions.
 * A byte flipped in an early frame would make SQLite's recovery end the
 * log there and drop the later commits; the open fails instead, naming
 * the frame.  Damage in the last transaction cannot be told from a commit
 * torn by the crash: the catalog opens with what came before it.
 */
static void
test_damage_wal_at_rest(void)
{
	struct catalog_family fams[] = { family("anchor", "", "") };
	char p[256], q[256], pw[300], qw[300];
	struct catalog *c, *d;
	uint64_t id, v = 0, size, frames, fs;
	int rc;

	path_in_dir(p, sizeof(p), "live.db");
	path_in_dir(q, sizeof(q), "crashed.db");
	snprintf(pw, sizeof(pw), "%s-wal", p);
	snprintf(qw, sizeof(qw), "%s-wal", q);
	unlink(p);
	if (catalog_create(env, p) != 0)
		tap_bail("catalog_create");
	c = fault_open_or_bail(env, p);
	if (catalog_table_create(c, "webtable", 0, fams, 1, NULL, 0, NULL, 0,
	    &id, NULL) != 0)
		tap_bail("cannot fill the catalog");
	for (uint64_t i = 1; i <= 5; i++)
		if (catalog_meta_set(c, "step", i) != 0)
			tap_bail("meta_set");
	size = file_size(pw);
	fs = page_size_of(p) + 24;
	frames = (size - 32) / fs;

	copy_local(p, q);
	copy_local(pw, qw);
	d = fault_open_or_bail(env, q);
	rc = catalog_meta_get(d, "step", 0, &v);
	ok(rc == 0 && v == 5 && table_id_of(d, "webtable") == id,
	    "a copy of the catalog and its WAL of %llu frames opens with "
	    "every commit", (unsigned long long)frames);
	catalog_close(d);

	copy_local(p, q);
	copy_local(pw, qw);
	flip_byte(qw, 32 + 1 * fs + 24 + 500);
	d = NULL;
	rc = catalog_open(env, q, &d);
	ok(rc == BT_ECHECKSUM && strstr(bt_error_detail(),
	    "-wal: frame 2 (page ") != NULL && strstr(bt_error_detail(),
	    "committed frames follow it") != NULL,
	    "a flip in frame 2 fails the open (%s): %s", bt_strerror(rc),
	    bt_error_detail());
	catalog_close(d);

	copy_local(p, q);
	copy_local(pw, qw);
	flip_byte(qw, 32 + last_commit_frame(qw, frames, fs) * fs + 24 + 500);
	d = fault_open_or_bail(env, q);
	rc = catalog_meta_get(d, "step", 0, &v);
	ok(rc == 0 && v == 4, "a flip in the last commit reads as a torn one: "
	    "the catalog opens at the commit before (step %llu)",
	    (unsigned long long)v);
	catalog_close(d);
	catalog_close(c);
	unlink(p);
	unlink(q);
	unlink(qw);
}

/* Build a version-2 catalog as the previous release did, without the
 * reserve, with a table of 200 tablets. */
static void
make_v2_catalog(const char *p)
{
	char sql[256];
	sqlite3 *db;

	unlink(p);
	if (sqlite3_open(p, &db) != SQLITE_OK ||
	    sqlite3_exec(db, "PRAGMA journal_mode = WAL; BEGIN;"
	    CATALOG_SCHEMA_V1_SQL CATALOG_SCHEMA_V2_SQL
	    "INSERT INTO tables VALUES (1, 'web', 1048576);"
	    "INSERT INTO groups VALUES (1, 'default', 65536, 1, 1, 0);"
	    "INSERT INTO families VALUES (1, 'anchor', 'default',"
	    " 'maxversions=3', 0);"
	    "INSERT INTO meta VALUES ('last_number', 500);",
	    NULL, NULL, NULL) != SQLITE_OK)
		tap_bail("v2 schema");
	for (int i = 0; i < 200; i++) {
		char start[16] = "", end[16] = "";

		if (i > 0)
			snprintf(start, sizeof(start), "k%04d", i);
		if (i < 199)
			snprintf(end, sizeof(end), "k%04d", i + 1);
		snprintf(sql, sizeof(sql), "INSERT INTO tablets (table_id, "
		    "start_row, end_row, flushed_seq) VALUES (1, "
		    "CAST('%s' AS BLOB), CAST('%s' AS BLOB), %d)", start, end,
		    i);
		if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
			tap_bail(sqlite3_errmsg(db));
	}
	if (sqlite3_exec(db, "PRAGMA application_id = 1952871267;"
	    "PRAGMA user_version = 2; COMMIT;", NULL, NULL, NULL) !=
	    SQLITE_OK)
		tap_bail("v2 commit");
	sqlite3_close(db);
}

/* Header byte 20 (reserve) and user_version of the catalog at p in e. */
static void
header_of(struct env *e, const char *p, int *reserve, int *version)
{
	struct env_file *f;
	uint8_t h[100];

	*reserve = *version = -1;
	if (env_file_open(e, p, ENV_READ, &f) != 0)
		return;
	if (env_file_read_exact(f, 0, h, sizeof(h)) == 0) {
		*reserve = h[20];
		*version = h[60] << 24 | h[61] << 16 | h[62] << 8 | h[63];
	}
	env_file_close(f);
}

/* What a version-2 catalog must still hold after its upgrade. */
static bool
v2_whole(struct catalog *c)
{
	struct catalog_tablet *t;
	struct catalog_table *tab;
	uint64_t number = 0;
	size_t n = 0;
	bool whole;

	if (catalog_table_get(c, "web", &tab) != 0)
		return false;
	whole = tab->family_count == 1 &&
	    strcmp(tab->families[0].gc_policy, "maxversions=3") == 0;
	catalog_table_free(tab);
	if (catalog_tablets_list(c, 1, &t, &n) != 0)
		return false;
	catalog_tablets_free(t, n);
	return whole && n == 200 &&
	    catalog_location_check(c, NULL, NULL) == 0 &&
	    catalog_next_number(c, &number) == 0 && number == 501;
}

/*
 * A version-2 catalog (no reserve) opens, becomes version 3 with every
 * page sealed, and keeps everything; a crash at any write, sync or rename
 * of the upgrade leaves the old catalog or the new one, never a mix, and
 * the next open finishes the upgrade.
 */
static void
test_upgrade_reserve(void)
{
	static const enum env_fault_op ops[] = { ENV_FAULT_APPEND,
	    ENV_FAULT_SYNC, ENV_FAULT_RENAME };
	static const char fpath[] = "/s/catalog.db";
	char p[256], tmp[300];
	struct sqlite_env *vfs;
	struct catalog *c;
	struct env *fenv;
	int reserve, version, crashes = 0, old = 0, new = 0, mixed = 0;
	int bad = 0, rc;

	path_in_dir(p, sizeof(p), "v2.db");
	snprintf(tmp, sizeof(tmp), "%s" CATALOG_UPGRADE_SUFFIX, p);
	make_v2_catalog(p);
	header_of(env, p, &reserve, &version);
	ok(reserve == 0 && version == 2, "a version-2 catalog without the "
	    "reserve (%d, %d)", reserve, version);
	c = fault_open_or_bail(env, p);
	ok(v2_whole(c), "opens with all it held");
	catalog_close(c);
	header_of(env, p, &reserve, &version);
	ok(reserve == CATALOG_PAGE_RESERVE && version == CATALOG_VERSION,
	    "and is now version %d reserving %d bytes (%d, %d)",
	    CATALOG_VERSION, CATALOG_PAGE_RESERVE, version, reserve);
	if (sqlite_env_register(env, &vfs) != 0)
		tap_bail("sqlite_env_register");
	is_int(sqlite_env_check(vfs, p, NULL, NULL), 0,
	    "every page of the upgraded catalog is sealed");
	sqlite_env_unregister(vfs);
	ok(access(tmp, F_OK) != 0, "the upgrade's copy is gone");

	make_v2_catalog(p);
	for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); o++) {
		for (long k = 1; k < 200; k++) {
			if (env_fault_new(&fenv) < 0 ||
			    env_dir_create(fenv, "/s") < 0 ||
			    env_dir_sync(fenv, "/") < 0)
				tap_bail("fault env");
			catalog_copy_into(fenv, p, fpath);
			env_fault_fail_after(fenv, ops[o], k, -EIO, true);
			c = NULL;
			rc = catalog_open(fenv, fpath, &c);
			catalog_crash(fenv, c);
			crashes++;
			header_of(fenv, fpath, &reserve, &version);
			/* Version 3 upgrades to 4 in one transaction
			 * (test_catalog_access.c). */
			if (reserve == 0 && version == 2)
				old++;
			else if (reserve == CATALOG_PAGE_RESERVE &&
			    (version == CATALOG_VERSION_RESERVE ||
			    version == CATALOG_VERSION))
				new++;
			else
				mixed++;
			c = NULL;
			if (catalog_open(fenv, fpath, &c) != 0) {
				diag("after crash %d: %s", crashes,
				    bt_error_detail());
				bad++;
			} else if (!v2_whole(c)) {
				bad++;
			}
			catalog_close(c);
			header_of(fenv, fpath, &reserve, &version);
			bad += reserve != CATALOG_PAGE_RESERVE ||
			    version != CATALOG_VERSION;
			env_free(fenv);
			if (rc == 0)
				break;
		}
	}
	is_int(mixed, 0, "after each of %d crashes in the upgrade the catalog "
	    "is the old one (%d) or the new one (%d)", crashes, old, new);
	ok(old > 0 && new > 0, "crashes hit both sides of the rename");
	is_int(bad, 0, "and the next open upgrades it and has all it held");
	unlink(p);
}

int
main(void)
{
	struct catalog *c;
	uint64_t seed = tap_seed();

	if (env_posix_new(&env) < 0)
		tap_bail("env_posix_new");
	snprintf(dir, sizeof(dir), "/tmp/test_catalog.XXXXXX");
	if (mkdtemp(dir) == NULL)
		tap_bail("mkdtemp");
	path_in_dir(db_path, sizeof(db_path), "catalog.db");

	test_create_open();
	test_not_a_catalog(&seed);
	test_version();
	c = open_or_bail();
	test_names(c);
	test_table_create(c);
	test_table_list(c);
	test_families(c);
	test_failed_calls_leave_nothing(c);
	test_apply(c);
	test_drop_table(c);
	test_numbers_and_meta(&c);
	test_random_splits(c, &seed);
	test_persistence(&c);
	test_alloc_failures(c);
	catalog_close(c);
	test_fault_env();
	test_damage_every_page();
	test_damage_wal();
	test_damage_wal_at_rest();
	test_upgrade_reserve();

	env_free(env);
	dir_remove();
	ok(access(dir, F_OK) != 0, "the test directory is removed");
	return tap_done();
}
