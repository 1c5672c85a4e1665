/*
 * test_api_cellserver.c - the engine opened as one tablet server of a
 * cell (api_store_open_cell(); server.h, server_options.dir): a real
 * store on the local filesystem, the root's server (the catalog's
 * holder) serving the catalog over a real RPC server on loopback, and a
 * second server in the same process reaching it through
 * catalog_client_open().  Each server opens every tablet not served;
 * the root's server serves the tablets it makes; a tablet moves to the
 * second server by unload, assignment and load, and its writes there
 * are flushed through the remote catalog; the second refuses schema
 * changes and splits of tablets it does not serve (its own splits are
 * test_api_cellsplit's); a table, tablet or family made at the root after
 * the second opened is found by reading the catalog again; and when the
 * second is given up for dead, the root recovers its two tablets from
 * one pass over its log (all or none: naming one twice recovers
 * neither) with every acknowledged write, while the still-running
 * second's flush is refused by the catalog and changes nothing.
 */
#include <sys/stat.h>

#include "api/api_server.h"
#include "api_util.h"
#include "cell_util.h"
#include "catalog/catalog.h"
#include "catalog_text.h"
#include "rpc/rpc.h"
#include "server/server.h"
#include "tabletd/catalog_client.h"
#include "tabletd/service.h"
#include "util/error.h"

#define SECOND_NAME	"127.0.0.1:7001#5"
#define SECOND_DIR	"servers/127.0.0.1_7001.5"

static int
open_second(const char *path, struct cell_root *r, struct bt_store **out)
{
	return cell_server_open(path, r, SECOND_NAME, SECOND_DIR, out);
}

static bool
is_dir(const char *store, const char *sub)
{
	char path[512];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", store, sub);
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static uint64_t
table_id(struct catalog *c, const char *name)
{
	struct catalog_table *t;
	uint64_t id;

	if (catalog_table_get(c, name, &t) != 0)
		tap_bail("table_get");
	id = t->id;
	catalog_table_free(t);
	return id;
}

/* The tablet ids of table, in row order (at most max). */
static size_t
tablet_ids(struct catalog *c, const char *table, uint64_t *ids, size_t max)
{
	struct catalog_tablet *list;
	size_t n;

	if (catalog_tablets_list(c, table_id(c, table), &list, &n) != 0)
		tap_bail("tablets_list");
	for (size_t i = 0; i < n && i < max; i++)
		ids[i] = list[i].id;
	catalog_tablets_free(list, n);
	return n;
}

/* The server the catalog assigns row's tablet of table to. */
static char *
server_of(struct catalog *c, const char *table, const char *row)
{
	struct catalog_location loc;
	char *name;

	catalog_location_init(&loc);
	if (catalog_location_walk(c, table_id(c, table), slice_make(
	    (const uint8_t *)row, strlen(row)), &loc, NULL) != 0)
		tap_bail("location_walk");
	name = strdup(loc.server);
	catalog_location_release(&loc);
	return name;
}

static size_t
file_count(struct catalog *c, uint64_t tablet)
{
	struct catalog_file *files = NULL;
	size_t n = 0;

	if (catalog_files_list(c, tablet, &files, &n) < 0)
		tap_bail("files_list");
	free(files);
	return n;
}

/* Move tablet id of table from server `from` to `to`, as the master does. */
static void
tablet_move(struct bt_store *from, struct bt_store *to, struct catalog *c,
    const char *table, uint64_t id, const char *to_name)
{
	must(bt_tablet_unload(from, table, id));
	must(catalog_tablet_assign(c, id, to_name));
	must(bt_tablet_load(to, table, id));
}

/* Rows prefix0..prefix(n-1) of "t", family f, each value prefix-i-tag. */
static void
rows_put(struct bt_store *s, const char *prefix, int n, const char *tag,
    bool sync)
{
	struct bt_write_options wo = { .sync = sync };

	for (int i = 0; i < n; i++) {
		char row[32], val[64];
		struct bt_mutation m = { .kind = BT_PUT, .family = "f",
		    .qualifier = bts("q"), .ts = BT_TS_SERVER };

		snprintf(row, sizeof(row), "%s%d", prefix, i);
		snprintf(val, sizeof(val), "%s-%s", row, tag);
		m.value = bts(val);
		must(bt_mutate_row(s, "t", bts(row), &m, 1, &wo, NULL));
	}
}

/* How many of those rows read back with their newest value as put. */
static int
rows_match(struct bt_store *s, const char *prefix, int n, const char *tag)
{
	int good = 0;

	for (int i = 0; i < n; i++) {
		char row[32], want[80], *got;

		snprintf(row, sizeof(row), "%s%d", prefix, i);
		snprintf(want, sizeof(want), "%s-%s@", row, tag);
		got = newest_text(s, "t", row, "f", "q");
		if (strncmp(got, want, strlen(want)) == 0)
			good++;
		else if (good == i)	/* the first miss */
			diag("%s: %s, want %s...", row, got, want);
		free(got);
	}
	return good;
}

/* A store made embedded, with table "pre" written and flushed. */
static void
store_make(struct tstore *ts)
{
	static const char *const fams[] = { "f", NULL };

	must(make_table(ts->s, "pre", fams));
	must(put_str(ts->s, "pre", "a", "f", "q", 7, "before"));
	must(bt_store_close(ts->s));
	ts->s = NULL;
}

static void
test_root(struct tstore *ts, struct cell_root *r, uint64_t ids[2])
{
	struct bt_family_spec f = { "f", NULL, NULL };
	struct bt_bytes split = bts("m");
	struct bt_store *again = NULL;
	char *a, *b;
	int rc;

	rc = cell_root_store_open(ts->path, &r->s);
	ok(rc == 0, "the root's server opens (%s)", bt_error_detail());
	if (rc != 0)
		tap_bail("no root");
	ok(is_dir(ts->path, CELL_ROOT_DIR "/log") && is_dir(ts->path,
	    CELL_ROOT_DIR "/tmp"), "its directory has log/ and tmp/");
	rc = cell_read_rc(r->s, "pre", "a");
	is_int(rc, BT_ENOTSERVING, "it serves no tablet of a table made "
	    "before (%s)", bt_error_detail());
	rc = bt_store_open(ts->path, NULL, &again);
	ok(rc < 0, "it holds STORE/LOCK: an embedded open fails (%s)",
	    bt_strerror(rc));
	bt_store_close(again);

	must(bt_table_create(r->s, "t", &f, 1, &split, 1, 0));
	r->catalog = server_catalog(api_store_server(r->s));
	is_int(tablet_ids(r->catalog, "t", ids, 2), 2,
	    "createtable with a split point: two tablets");
	a = server_of(r->catalog, "t", "a");
	b = server_of(r->catalog, "t", "x");
	ok(strcmp(a, CELL_ROOT_NAME) == 0 && strcmp(b, CELL_ROOT_NAME) == 0,
	    "both assigned to the root's server (%s, %s)", a, b);
	free(a);
	free(b);
	rows_put(r->s, "a", 10, "root", false);
	rows_put(r->s, "x", 10, "root", true);
	is_int(rows_match(r->s, "a", 10, "root") + rows_match(r->s, "x", 10,
	    "root"), 20, "and serves them: writes read back");
}

static void
test_second_open(struct tstore *ts, struct cell_root *r, struct bt_store **second)
{
	int rc;

	rc = open_second(ts->path, r, second);
	ok(rc == 0, "a second server opens with a remote catalog while "
	    "the root holds the lock (%s)", bt_error_detail());
	if (rc != 0)
		tap_bail("no second server");
	ok(is_dir(ts->path, SECOND_DIR "/log") && is_dir(ts->path,
	    SECOND_DIR "/tmp"), "its own directory has log/ and tmp/");
	is_int(cell_read_rc(*second, "t", "x1"), BT_ENOTSERVING,
	    "it serves nothing");
	is_int(cell_read_rc(*second, "pre", "a"), BT_ENOTSERVING,
	    "not even the table made before");
}

static void
test_move(struct cell_root *r, struct bt_store *second, const uint64_t ids[2])
{
	size_t before;
	char *who;
	int rc;

	/* Unloaded at the root, assigned to the second, loaded there. */
	tablet_move(r->s, second, r->catalog, "t", ids[1], SECOND_NAME);
	is_int(rows_match(second, "x", 10, "root"), 10,
	    "the second reads the root's data");
	is_int(cell_read_rc(r->s, "t", "x1"), BT_ENOTSERVING,
	    "the root no longer serves it");
	is_int(rows_match(r->s, "a", 10, "root"), 10,
	    "and serves the other tablet on");
	rows_put(second, "x", 10, "second", true);
	is_int(rows_match(second, "x", 10, "second"), 10,
	    "writes through the second read back");
	before = file_count(r->catalog, ids[1]);
	rc = bt_store_flush(second);
	ok(rc == 0, "the second flushes through the remote catalog (%s)",
	    bt_error_detail());
	ok(file_count(r->catalog, ids[1]) > before, "a file appears in the "
	    "catalog for the tablet (%zu, was %zu)",
	    file_count(r->catalog, ids[1]), before);
	who = server_of(r->catalog, "t", "x");
	is_str(who, SECOND_NAME, "the catalog assigns it to the second");
	free(who);
}

static void
test_refused(struct bt_store *second)
{
	struct bt_family_spec f = { "g", NULL, NULL };
	int rc;

	rc = bt_table_create(second, "nope", &f, 1, NULL, 0, 0);
	is_int(rc, -EOPNOTSUPP, "createtable at the second: -EOPNOTSUPP");
	ok(strstr(bt_error_detail(), "remote") != NULL, "with a detail: %s",
	    bt_error_detail());
	is_int(bt_family_create(second, "t", &f), -EOPNOTSUPP,
	    "family create: -EOPNOTSUPP");
	is_int(bt_table_delete(second, "t"), -EOPNOTSUPP,
	    "table delete: -EOPNOTSUPP");
	rc = bt_table_split(second, "t", bts("c"));
	is_int(rc, BT_ENOTSERVING, "split at the second of a tablet it "
	    "does not serve: BT_ENOTSERVING");
	ok(strstr(bt_error_detail(), "not served") != NULL, "with a "
	    "detail: %s", bt_error_detail());
	is_int(rows_match(second, "x", 10, "second"), 10,
	    "and the second serves on");
}

/* What the root makes after the second opened: a table, a tablet (a
 * split) and a family, all found by the second. */
static void
test_made_later(struct cell_root *r, struct bt_store *second, uint64_t *child)
{
	struct bt_family_spec f = { "f", NULL, NULL }, g = { "g", NULL, NULL };
	uint64_t ids[4], late;
	int rc;

	must(bt_table_create(r->s, "late", &f, 1, NULL, 0, 0));
	must(put_str(r->s, "late", "k", "f", "q", 5, "made late"));
	tablet_ids(r->catalog, "late", &late, 1);
	must(bt_tablet_unload(r->s, "late", late));
	must(catalog_tablet_assign(r->catalog, late, SECOND_NAME));
	rc = bt_tablet_load(second, "late", late);
	ok(rc == 0, "a table made at the root after the second opened "
	    "loads there (%s)", bt_error_detail());
	is_text(read_text_str(second, "late", "k", NULL),
	    "f:q@5=made late\n", "and reads the root's cell");

	must(bt_table_split(r->s, "t", bts("c")));
	is_int(tablet_ids(r->catalog, "t", ids, 4), 3,
	    "the root splits its tablet [, m) at c");
	*child = ids[1];
	must(bt_tablet_unload(r->s, "t", ids[1]));
	must(catalog_tablet_assign(r->catalog, ids[1], SECOND_NAME));
	rc = bt_tablet_load(second, "t", ids[1]);
	ok(rc == 0, "the child [c, m), unknown at the second, loads there "
	    "(%s)", bt_error_detail());
	is_int(rows_match(second, "x", 10, "second"), 10,
	    "the tablet it served before serves on");
	must(put_str(second, "t", "d", "f", "q", BT_TS_SERVER, "on child"));

	must(bt_family_create(r->s, "t", &g));
	rc = put_str(second, "t", "x1", "g", "q", 9, "new family");
	ok(rc == 0, "a write at the second to a family made at the root "
	    "since: the schema is read again (%s)", bt_error_detail());
	is_text(newest_text(second, "t", "x1", "g", "q"), "new family@9",
	    "and reads back");
	is_int(rows_match(second, "x", 10, "second"), 10,
	    "the table read again serves on");
	rc = put_str(second, "t", "x1", "nosuch", "q", 9, "x");
	is_int(rc, -ENOENT, "a family the catalog lacks too: -ENOENT");
}

/* The redo point of tablet id of table tid in the catalog. */
static uint64_t
tablet_flushed(struct catalog *c, uint64_t tid, uint64_t id)
{
	struct catalog_tablet *rows = NULL;
	uint64_t seq = 0;
	size_t n = 0;

	if (catalog_tablets_list(c, tid, &rows, &n) != 0)
		tap_bail("tablets_list");
	for (size_t i = 0; i < n; i++)
		if (rows[i].id == id)
			seq = rows[i].flushed_seq;
	catalog_tablets_free(rows, n);
	return seq;
}

static void
test_given_up(struct tstore *ts, struct cell_root *r, struct bt_store *second,
    const uint64_t ids[2], uint64_t child)
{
	const char *dirs[] = { "nosuch/log", SECOND_DIR "/log" };
	const char *outside[] = { "/tmp", "../store/log", "servers/../log",
	    "./log", "log/" };
	uint64_t tid = table_id(r->catalog, "t"), both[2], flushed;
	char *before, *after;
	int rc;

	/* Acknowledged, not flushed: only in the second's log. */
	rows_put(second, "y", 20, "acked", false);
	rows_put(second, "z", 5, "synced", true);
	must(put_str(second, "t", "e", "f", "q", 11, "child acked"));

	/* The master gives the second up and its tablets to the root. */
	must(catalog_tablet_assign(r->catalog, ids[1], CELL_ROOT_NAME));
	must(catalog_tablet_assign(r->catalog, child, CELL_ROOT_NAME));
	rc = api_tablet_recover(r->s, "t", ids[1], dirs, 2);
	ok(rc < 0, "recover from a directory that is not there: an error "
	    "(%s)", bt_error_detail());
	for (size_t i = 0; i < sizeof(outside) / sizeof(outside[0]); i++) {
		rc = api_tablet_recover(r->s, "t", ids[1], &outside[i], 1);
		is_int(rc, -EINVAL, "recover from \"%s\", not below the "
		    "store: -EINVAL (%s)", outside[i], bt_error_detail());
	}
	both[0] = ids[1];
	both[1] = ids[1];
	rc = api_tablets_recover(r->s, "t", both, 2, dirs + 1, 1);
	is_int(rc, -EINVAL, "a recovery naming a tablet twice: -EINVAL (%s)",
	    bt_error_detail());
	rc = put_str(r->s, "t", "y0", "f", "q", 12, "early");
	is_int(rc, BT_ENOTSERVING, "and it serves nothing: BT_ENOTSERVING");
	/* The child first, with nothing to replay: what the second wrote to
	 * it is flushed (its unload), so that its recovery flushes nothing,
	 * and the tablet after it must still be flushed. */
	must(catalog_tablet_assign(r->catalog, child, SECOND_NAME));
	must(bt_tablet_unload(second, "t", child));
	must(catalog_tablet_assign(r->catalog, child, CELL_ROOT_NAME));
	flushed = tablet_flushed(r->catalog, tid, ids[1]);
	both[0] = child;
	both[1] = ids[1];
	rc = api_tablets_recover(r->s, "t", both, 2, dirs + 1, 1);
	ok(rc == 0, "the root recovers [c, m) and [m, ) from one pass over "
	    "the second's log (%s)", bt_error_detail());
	ok(tablet_flushed(r->catalog, tid, ids[1]) > flushed, "[m, ), after "
	    "a tablet that took no record, is flushed: its redo point rose "
	    "from %" PRIu64, flushed);
	is_int(rows_match(r->s, "y", 20, "acked") + rows_match(r->s, "z", 5,
	    "synced") + rows_match(r->s, "x", 10, "second"), 35,
	    "every acknowledged write of the second reads back at the root");
	is_text(newest_text(r->s, "t", "e", "f", "q"), "child acked@11",
	    "and of the child");
	is_text(newest_text(r->s, "t", "x1", "g", "q"), "new family@9",
	    "and the write to the family made late");

	/* The second still runs: its writes go to its memtable, but its
	 * flush is refused by the catalog. */
	before = catalog_text_state(r->catalog, tid);
	must(put_str(second, "t", "y0", "f", "q", BT_TS_SERVER, "stale"));
	rc = bt_store_flush(second);
	is_int(rc, BT_ENOTSERVING, "a flush at the stale second: "
	    "BT_ENOTSERVING (%s)", bt_error_detail());
	after = catalog_text_state(r->catalog, tid);
	is_str(after, before, "and the catalog is unchanged");
	free(before);
	free(after);
	is_int(rows_match(r->s, "y", 20, "acked"), 20,
	    "the root does not see the stale write");
	rc = bt_store_close(second);
	ok(rc < 0, "the stale second's close cannot flush (%s)",
	    bt_strerror(rc));
	ok(is_dir(ts->path, SECOND_DIR "/log"), "its directory stays");

	/* What the root recovered is durable. */
	cell_root_stop(r);
	must(bt_store_close(r->s));
	must(cell_root_store_open(ts->path, &r->s));
	r->catalog = server_catalog(api_store_server(r->s));
	is_int(cell_read_rc(r->s, "t", "y1"), BT_ENOTSERVING,
	    "the root reopened serves nothing");
	must(bt_tablet_load(r->s, "t", ids[1]));
	is_int(rows_match(r->s, "y", 20, "acked") + rows_match(r->s, "z", 5,
	    "synced"), 25, "loaded again, it holds every recovered write");
}

int
main(void)
{
	struct tstore ts;
	struct cell_root r = { 0 };
	struct bt_store *second = NULL;
	uint64_t ids[2], child = 0;

	cell_secret_init();
	tstore_posix(&ts, NULL);
	if (tstore_cell_skip(&ts, "opens the store's servers itself"))
		return tap_done();
	store_make(&ts);
	test_root(&ts, &r, ids);
	cell_root_serve(&r);
	test_second_open(&ts, &r, &second);
	test_move(&r, second, ids);
	test_refused(second);
	test_made_later(&r, second, &child);
	test_given_up(&ts, &r, second, ids, child);
	must(bt_store_close(r.s));
	tstore_destroy(&ts);
	return tap_done();
}
