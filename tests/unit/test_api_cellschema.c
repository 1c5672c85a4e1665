/*
 * test_api_cellschema.c - schema changes made at a cell's root server
 * reach a tablet server with a remote catalog (docs/design.md section 5,
 * "Tablets one by one"): a real store on the local filesystem, the
 * root's server serving its catalog over a real RPC server on loopback,
 * and a second server in the same process reaching it through
 * catalog_client_open(), as in test_api_cellserver.  The catalog's
 * schema version rises with every schema change and survives a reopen;
 * the second, polled (server_schema_poll(), what its background thread
 * does about once a second), refuses a family dropped at the root,
 * applies a GC policy and access set there, and discards a table dropped
 * there while it serves one of its tablets, so that its flushes go on;
 * the table made again under its name loads at the second; and a tablet
 * that the catalog lost without a schema change is discarded once a
 * flush finds it gone.  SCHEMA_SYNC makes the second poll at once.
 */
#include "api/api_server.h"
#include "api_util.h"
#include "cell_util.h"
#include "catalog/catalog.h"
#include "rpc/rpc.h"
#include "rpc/tabletfs.pb-c.h"
#include "server/server.h"
#include "tabletd/catalog_client.h"
#include "tabletd/service.h"
#include "util/buf.h"
#include "util/error.h"

#define SECOND_NAME	"127.0.0.1:7001#5"
#define SECOND_DIR	"servers/127.0.0.1_7001.5"

static void
second_open(const char *path, struct cell_root *r, struct bt_store **out)
{
	must(cell_server_open(path, r, SECOND_NAME, SECOND_DIR, out));
}

static uint64_t
version(struct catalog *c)
{
	uint64_t v = 0;

	must(catalog_schema_version(c, &v));
	return v;
}

/* The id of the table named table at store s (0: none there). */
static uint64_t
table_id_of(struct bt_store *s, const char *table)
{
	uint64_t id = 0;

	if (server_table_id(api_store_server(s), table, &id) < 0)
		return 0;
	return id;
}

static int
poll_second(struct bt_store *second)
{
	return server_schema_poll(api_store_server(second));
}

/* The first tablet of table at the root's catalog (0: no such table). */
static uint64_t
first_tablet(struct catalog *c, const char *table)
{
	struct catalog_tablet *list = NULL;
	struct catalog_table *t;
	uint64_t id = 0;
	size_t n = 0;

	if (catalog_table_get(c, table, &t) != 0)
		return 0;
	if (catalog_tablets_list(c, t->id, &list, &n) == 0 && n > 0)
		id = list[0].id;
	catalog_tablets_free(list, n);
	catalog_table_free(t);
	return id;
}

/* Make table at the root with families f and g and move its one tablet
 * to the second, as the master does; its tablet's id. */
static uint64_t
table_to_second(struct cell_root *r, struct bt_store *second, const char *table)
{
	struct bt_family_spec fams[] = { { "f", NULL, NULL },
	    { "g", NULL, NULL } };
	uint64_t id;

	must(bt_table_create(r->s, table, fams, 2, NULL, 0, 0));
	id = first_tablet(r->catalog, table);
	must(bt_tablet_unload(r->s, table, id));
	must(catalog_tablet_assign(r->catalog, id, SECOND_NAME));
	must(bt_tablet_load(second, table, id));
	return id;
}

/* The version counts each schema change, and the remote catalog serves
 * the root's. */
static void
test_version(struct cell_root *r, struct bt_store *second, uint64_t *v)
{
	struct catalog *remote = server_catalog(api_store_server(second));
	uint64_t got = 0;

	*v = version(r->catalog);
	ok(*v > 0, "tables made: the schema version is above 0 (%llu)",
	    (unsigned long long)*v);
	is_int(catalog_schema_version(remote, &got), 0,
	    "CATALOG_SCHEMA_VERSION answers the second (%s)",
	    bt_error_detail());
	ok(got == *v, "with the root's version (%llu, %llu)",
	    (unsigned long long)got, (unsigned long long)*v);
	must(bt_tablet_unload(second, "t", first_tablet(r->catalog, "t")));
	must(catalog_tablet_assign(r->catalog, first_tablet(r->catalog, "t"),
	    SECOND_NAME));
	must(bt_tablet_load(second, "t", first_tablet(r->catalog, "t")));
	ok(version(r->catalog) == *v, "an unload, assignment and load leave "
	    "it alone");
}

static void
test_family_drop(struct cell_root *r, struct bt_store *second, uint64_t *v)
{
	int rc;

	must(put_str(second, "t", "r1", "g", "q", 5, "in g"));
	must(poll_second(second));
	is_int(put_str(second, "t", "r1", "g", "q", 6, "again"), 0,
	    "a poll with no change: g still takes writes at the second");
	must(bt_family_delete(r->s, "t", "g"));
	ok(version(r->catalog) == *v + 1, "a family dropped: the version "
	    "rises by one");
	*v = version(r->catalog);
	rc = poll_second(second);
	is_int(rc, 0, "the second polls (%s)", bt_error_detail());
	rc = put_str(second, "t", "r1", "g", "q", 7, "gone");
	is_int(rc, -ENOENT, "a write to the dropped family at the second: "
	    "-ENOENT (%s)", bt_error_detail());
	is_text(newest_text(second, "t", "r1", "g", "q"), "NOTFOUND",
	    "and its cells are gone from reads there");
	is_int(put_str(second, "t", "r1", "f", "q", 7, "in f"), 0,
	    "family f takes writes on");
}

/* A table of no tablet the second serves is not served there: the
 * client is to locate its rows again, not to take the table for
 * missing. */
static void
test_table_unknown(struct cell_root *r, struct bt_store *second)
{
	static const struct bt_family_spec f = { .name = "f" };
	struct bt_row *row = NULL;
	int rc;

	must(bt_table_create(r->s, "u", &f, 1, NULL, 0, 0));
	rc = put_str(second, "u", "r1", "f", "q", 1, "x");
	is_int(rc, BT_ENOTSERVING, "a write to a table the second serves "
	    "no tablet of: BT_ENOTSERVING (%s)", bt_error_detail());
	rc = bt_read_row(second, "u", bts("r1"), NULL, &row);
	is_int(rc, BT_ENOTSERVING, "a read there too (%s)",
	    bt_error_detail());
	bt_row_free(row);
	is_int(bt_table_delete(r->s, "u"), 0, "the root drops it");
}

static void
test_gc_and_access(struct cell_root *r, struct bt_store *second, uint64_t *v)
{
	struct bt_access change = { BT_ACCESS_KEEP, BT_ACCESS_KEEP, 0700 };
	struct bt_access ta;
	char *text;

	for (int ts = 1; ts <= 3; ts++)
		must(put_str(second, "t", "v", "f", "q", ts, "x"));
	text = read_text_str(second, "t", "v", NULL);
	ok(strstr(text, "@1") != NULL, "three versions read back at the "
	    "second:\n%s", text);
	free(text);
	must(bt_family_set_gc(r->s, "t", "f", "maxversions=1"));
	ok(version(r->catalog) == *v + 1, "a GC policy set: the version "
	    "rises by one");
	must(poll_second(second));
	text = read_text_str(second, "t", "v", NULL);
	is_str(text, "f:q@3=x\n", "polled, the second applies maxversions=1");
	free(text);

	must(bt_access_set(r->s, "t", NULL, &change));
	ok(version(r->catalog) == *v + 2, "access set: the version rises");
	must(poll_second(second));
	must(bt_access_get(second, "t", NULL, &ta, NULL));
	is_int((int)ta.mode, 0700, "polled, the second has the new mode");
	*v = version(r->catalog);
}

/* A table dropped at the root while the second serves one of its
 * tablets, then made again under its name. */
static void
test_table_drop(struct cell_root *r, struct bt_store *second, uint64_t *v)
{
	uint64_t old, fresh;
	int rc;

	old = table_to_second(r, second, "d");
	*v = version(r->catalog);
	must(put_str(second, "d", "k", "f", "q", 1, "unflushed"));
	must(bt_table_delete(r->s, "d"));
	ok(version(r->catalog) == *v + 1, "a table dropped: the version "
	    "rises by one");
	rc = poll_second(second);
	is_int(rc, 0, "the second polls (%s)", bt_error_detail());
	rc = cell_read_rc(second, "d", "k");
	ok(rc < 0, "the second no longer serves the dropped table (%s)",
	    bt_strerror(rc));
	rc = bt_store_flush(second);
	is_int(rc, 0, "and its flush does not fail (%s)", bt_error_detail());
	is_int(bt_store_flush(second), 0, "nor the next");

	must(bt_table_create(r->s, "d", &(struct bt_family_spec){ "f", NULL,
	    NULL }, 1, NULL, 0, 0));
	fresh = first_tablet(r->catalog, "d");
	ok(fresh != old, "made again, the table has a new tablet");
	must(bt_tablet_unload(r->s, "d", fresh));
	must(catalog_tablet_assign(r->catalog, fresh, SECOND_NAME));
	rc = bt_tablet_load(second, "d", fresh);
	is_int(rc, 0, "its tablet loads at the second (%s)",
	    bt_error_detail());
	is_int(cell_read_rc(second, "d", "k"), BT_NOTFOUND,
	    "without the dropped table's cell");
	must(put_str(second, "d", "k", "f", "q", 2, "new"));
	is_int(bt_store_flush(second), 0, "and flushes");
	*v = version(r->catalog);
}

/* SCHEMA_SYNC, which a client sends every other server after a schema
 * change: the second polls at once, so a table dropped at the root is
 * no longer served there before its background poll; at the root's
 * server it does nothing. */
static void
test_schema_sync(struct cell_root *r, struct bt_store *second, uint64_t *v)
{
	struct service *svc;
	struct buf reply;
	int rc;

	buf_init(&reply);
	(void)table_to_second(r, second, "y");
	must(put_str(second, "y", "k", "f", "q", 1, "x"));
	must(bt_table_delete(r->s, "y"));
	is_int(cell_read_rc(second, "y", "k"), 0,
	    "dropped at the root, the unpolled second still serves y");
	must(service_new(second, &svc));
	rc = service_handle(svc, TABLETFS__METHOD__SCHEMA_SYNC,
	    (struct slice){ NULL, 0 }, &reply);
	is_int(rc, 0, "SCHEMA_SYNC at the second (%s)", bt_error_detail());
	rc = cell_read_rc(second, "y", "k");
	ok(rc < 0, "then it no longer serves y (%s)", bt_strerror(rc));
	service_free(svc);
	must(service_new(r->s, &svc));
	reply.n = 0;
	is_int(service_handle(svc, TABLETFS__METHOD__SCHEMA_SYNC,
	    (struct slice){ NULL, 0 }, &reply), 0,
	    "SCHEMA_SYNC at the root's server: nothing to do");
	service_free(svc);
	buf_release(&reply);
	*v = version(r->catalog);
}

/* The same table dropped and made again between two polls: the second
 * discards its tablet and knows the new table, whose tablet loads. */
static void
test_drop_recreate(struct cell_root *r, struct bt_store *second, uint64_t *v)
{
	uint64_t fresh, old_id, new_id;
	int rc;

	table_to_second(r, second, "e");
	must(put_str(second, "e", "k", "f", "q", 1, "old"));
	must(bt_table_delete(r->s, "e"));
	must(bt_table_create(r->s, "e", &(struct bt_family_spec){ "f", NULL,
	    NULL }, 1, NULL, 0, 0));
	ok(version(r->catalog) == *v + 3, "made, dropped and made again: "
	    "three changes");
	/* Before its poll the second still serves the old table: a call
	 * located in the new one must not reach it. */
	old_id = table_id_of(second, "e");
	new_id = table_id_of(r->s, "e");
	ok(old_id != 0 && new_id != 0 && old_id != new_id, "the new table "
	    "has a new id (%llu, was %llu)", (unsigned long long)new_id,
	    (unsigned long long)old_id);
	rc = server_table_id_check(api_store_server(second), "e", new_id);
	is_int(rc, BT_ENOTSERVING, "unpolled, the second refuses a call "
	    "located in the new table: BT_ENOTSERVING (%s)",
	    bt_error_detail());
	is_int(server_table_id_check(api_store_server(second), "e", old_id),
	    0, "and takes one located in the table it serves");
	is_int(server_table_id_check(api_store_server(second), "nosuch", 1),
	    0, "a table it does not know is for the call to answer");
	rc = poll_second(second);
	is_int(rc, 0, "the second polls (%s)", bt_error_detail());
	is_int(server_table_id_check(api_store_server(second), "e", new_id),
	    0, "polled, it knows the new table's id");
	is_int(cell_read_rc(second, "e", "k"), BT_ENOTSERVING,
	    "it knows the new table, whose tablet it does not serve");
	is_int(bt_store_flush(second), 0, "its flush does not fail");
	fresh = first_tablet(r->catalog, "e");
	must(bt_tablet_unload(r->s, "e", fresh));
	must(catalog_tablet_assign(r->catalog, fresh, SECOND_NAME));
	rc = bt_tablet_load(second, "e", fresh);
	is_int(rc, 0, "the new tablet loads there (%s)", bt_error_detail());
	is_int(cell_read_rc(second, "e", "k"), BT_NOTFOUND, "empty");
	*v = version(r->catalog);
}

/*
 * A tablet the catalog no longer has with no schema change (the master
 * gave it to another server, which split it): the second's flush finds
 * it gone (-ENOENT from the root), and the next poll discards it.
 */
static void
test_flush_finds_gone(struct cell_root *r, struct bt_store *second,
    const uint64_t *v)
{
	struct catalog_tablet_spec spec = { .server = CELL_ROOT_NAME };
	uint64_t id, fresh = 0;
	int rc = -1;

	id = table_to_second(r, second, "h");
	must(poll_second(second));
	must(put_str(second, "h", "k", "f", "q", 1, "lost"));
	must(catalog_tablet_assign(r->catalog, id, CELL_ROOT_NAME));
	must(catalog_tablet_replace(r->catalog, &id, 1, &spec, 1, &fresh,
	    NULL));
	ok(version(r->catalog) == *v + 1, "a tablet replaced leaves the "
	    "version alone (but for the table made)");
	must(poll_second(second));
	is_int(cell_read_rc(second, "h", "k"), 0, "so a poll keeps it served");
	for (int i = 0; i < 3 && rc != 0; i++)
		rc = bt_store_flush(second);
	is_int(rc, 0, "a flush at the second succeeds again within three "
	    "(%s)", bt_error_detail());
	is_int(cell_read_rc(second, "h", "k"), BT_ENOTSERVING,
	    "the tablet gone from the catalog is discarded");
	is_int(bt_store_flush(second), 0, "and the next flush is clean");
}

int
main(void)
{
	struct bt_family_spec fams[] = { { "f", NULL, NULL },
	    { "g", NULL, NULL } };
	struct tstore ts;
	struct cell_root r = { 0 };
	struct bt_store *second = NULL;
	uint64_t v = 0, before;

	cell_secret_init();
	tstore_posix(&ts, NULL);
	if (tstore_cell_skip(&ts, "opens the store's servers itself"))
		return tap_done();
	must(bt_store_close(ts.s));
	ts.s = NULL;
	cell_root_open(ts.path, &r);
	is_int((int)version(r.catalog), 0, "a new catalog's schema version "
	    "is 0");
	must(bt_table_create(r.s, "t", fams, 2, NULL, 0, 0));
	is_int((int)version(r.catalog), 1, "a table made: 1");
	second_open(ts.path, &r, &second);
	test_version(&r, second, &v);
	test_family_drop(&r, second, &v);
	test_gc_and_access(&r, second, &v);
	test_table_drop(&r, second, &v);
	test_schema_sync(&r, second, &v);
	test_drop_recreate(&r, second, &v);
	test_flush_finds_gone(&r, second, &v);
	test_table_unknown(&r, second);

	must(bt_store_close(second));
	before = version(r.catalog);
	cell_root_close(&r);
	cell_root_open(ts.path, &r);
	ok(version(r.catalog) == before, "the version survives a reopen "
	    "(%llu)", (unsigned long long)before);
	cell_root_close(&r);
	tstore_destroy(&ts);
	return tap_done();
}
