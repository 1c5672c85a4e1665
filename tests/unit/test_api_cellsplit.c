/*
 * test_api_cellsplit.c - a cell's tablet server with a remote catalog
 * splits the tablets it serves (docs/design.md section 5, "Splits where
 * the tablet is served"): a real store on the local filesystem, the
 * root's server serving the catalog over a real RPC server on loopback
 * (CATALOG_TABLET_REPLACE among the rest), and a second server in the
 * same process reaching it through catalog_client_open(), as in
 * test_api_cellserver.
 *
 * A tablet moved to the second splits there, forced and by size; the
 * catalog names the children, assigned to the second, and the root's
 * locations and its TABLETS show them; the second reads, writes and
 * scans both.  A replace by a server the tablet is not assigned to is
 * refused by the root (BT_ENOTSERVING, the catalog unchanged), over the
 * wire and at the second once the master gave its tablets away; and the
 * children are recovered at the root from the second's log with every
 * acknowledged write.
 *
 * A table whose tablets sit at the root and at a third server, served
 * over RPC, has the usage of both through a cell client (TABLE_USAGE at
 * each), a file a split shares between the two counted once; with the
 * third gone, the usage is an error naming it, not the root's part.
 */
#include "api/api_cell.h"
#include "api/api_server.h"
#include "api/cell_client.h"
#include "api_util.h"
#include "cell_util.h"
#include "catalog/catalog.h"
#include "catalog_text.h"
#include "rpc/rpc.h"
#include "rpc/tabletfs.pb-c.h"
#include "server/server.h"
#include "tabletd/catalog_client.h"
#include "tabletd/service.h"
#include "util/error.h"

#define SECOND_NAME	"127.0.0.1:7001#5"
#define SECOND_DIR	"servers/127.0.0.1_7001.5"
#define OTHER_NAME	"127.0.0.1:7002#3"
#define BIG_TABLET	(48u << 10)
#define BIG_ROWS	1200

static void
open_second(const char *path, struct cell_root *r, struct bt_store **out)
{
	must(cell_server_open(path, r, SECOND_NAME, SECOND_DIR, out));
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

/* The tablets of table in row order, from the root's locations (one
 * read transaction, as LOCATE answers): at most max. */
static size_t
locations(struct catalog *c, const char *table, struct catalog_location
    **out, size_t max)
{
	size_t n = 0;

	if (catalog_locations_from(c, table_id(c, table), slice_make(NULL, 0),
	    max, out, &n) != 0)
		tap_bail("locations_from");
	return n;
}

/* How many of table's tablets the catalog assigns to server. */
static size_t
assigned_to(struct catalog *c, const char *table, const char *server)
{
	struct catalog_location *locs;
	size_t n = locations(c, table, &locs, 64), k = 0;

	for (size_t i = 0; i < n; i++)
		k += strcmp(locs[i].server, server) == 0;
	catalog_locations_free(locs, n);
	return k;
}

static void
tablet_move(struct cell_root *r, struct bt_store *to, const char *table,
    uint64_t id)
{
	must(bt_tablet_unload(r->s, table, id));
	must(catalog_tablet_assign(r->catalog, id, SECOND_NAME));
	must(bt_tablet_load(to, table, id));
}

/* Rows prefix0..prefix(n-1) of "t", family f, each value row-tag. */
static void
rows_put(struct bt_store *s, const char *prefix, int n, const char *tag)
{
	for (int i = 0; i < n; i++) {
		char row[32], val[64];

		snprintf(row, sizeof(row), "%s%d", prefix, i);
		snprintf(val, sizeof(val), "%s-%s", row, tag);
		must(put_str(s, "t", row, "f", "q", BT_TS_SERVER, val));
	}
}

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
		else if (good == i)
			diag("%s: %s, want %s...", row, got, want);
		free(got);
	}
	return good;
}

/* Rows a scan of "t" from start to end returns. */
static int
scan_count(struct bt_store *s, const char *start, const char *end)
{
	struct bt_scan_options so = { .start = bts(start), .end = bts(end) };
	char *keys = scan_keys(s, "t", &so);
	int n = 0;

	for (const char *p = keys; *p != '\0'; p++)
		n += *p == '\n';
	free(keys);
	return n;
}

/*
 * TABLETS of "t" at the root's service: "START-END@SERVER" of each
 * tablet in row order, a line each (malloc'd); bails out when it fails.
 */
static char *
root_tablets(struct cell_root *r)
{
	Tabletfs__TableRequest req = TABLETFS__TABLE_REQUEST__INIT;
	Tabletfs__TabletsReply *rep;
	uint8_t p[64];
	struct buf reply, text;
	char *out;
	size_t n;

	req.table = (char *)"t";
	n = protobuf_c_message_pack(&req.base, p);
	buf_init(&reply);
	buf_init(&text);
	if (service_handle(r->svc, TABLETFS__METHOD__TABLETS, slice_make(p,
	    n), &reply) != 0 || (rep = tabletfs__tablets_reply__unpack(NULL,
	    reply.n, reply.p)) == NULL)
		tap_bail("TABLETS at the root's server");
	for (size_t i = 0; i < rep->n_tablets; i++) {
		const Tabletfs__TabletInfo *t = rep->tablets[i];
		char line[256];

		snprintf(line, sizeof(line), "%.*s-%.*s@%s\n",
		    (int)t->start.len, (const char *)t->start.data,
		    (int)t->end.len, (const char *)t->end.data,
		    t->server != NULL ? t->server : "");
		must(buf_append(&text, line, strlen(line)));
	}
	tabletfs__tablets_reply__free_unpacked(rep, NULL);
	must(buf_append(&text, "", 1));
	if ((out = strdup((const char *)text.p)) == NULL)
		tap_bail("strdup");
	buf_release(&reply);
	buf_release(&text);
	return out;
}

static void
test_forced(struct cell_root *r, struct bt_store *second, uint64_t child[2])
{
	struct catalog_location *locs;
	size_t n;
	int rc;

	rows_put(second, "p", 10, "before");
	rows_put(second, "w", 10, "before");
	rc = bt_table_split(second, "t", bts("s"));
	ok(rc == 0, "the second splits the tablet it serves at s (%s)",
	    bt_error_detail());
	n = locations(r->catalog, "t", &locs, 8);
	is_int((int)n, 3, "the root's locations: three tablets");
	if (n == 3) {
		ok(locs[1].start.n == 1 && locs[1].start.p[0] == 'm' &&
		    locs[1].end.n == 1 && locs[1].end.p[0] == 's' &&
		    locs[2].start.n == 1 && locs[2].start.p[0] == 's' &&
		    locs[2].end.n == 0, "[m, s) and [s, )");
		is_str(locs[1].server, SECOND_NAME, "[m, s) is the second's");
		is_str(locs[2].server, SECOND_NAME, "[s, ) is the second's");
		is_str(locs[0].server, CELL_ROOT_NAME, "[, m) stays the root's");
		child[0] = locs[1].tablet_id;
		child[1] = locs[2].tablet_id;
	}
	catalog_locations_free(locs, n);
	is_text(root_tablets(r), "-m@" CELL_ROOT_NAME "\nm-s@" SECOND_NAME
	    "\ns-@" SECOND_NAME "\n", "TABLETS at the root's server lists the "
	    "children split at the second, as its catalog does");
	is_int(rows_match(second, "p", 10, "before") + rows_match(second, "w",
	    10, "before"), 20, "both children read back at the second");
	rows_put(second, "p", 10, "after");
	rows_put(second, "w", 10, "after");
	is_int(rows_match(second, "p", 10, "after") + rows_match(second, "w",
	    10, "after"), 20, "and take writes");
	is_int(scan_count(second, "m", ""), 20, "a scan across both "
	    "children at the second returns every row");
	is_int(cell_read_rc(r->s, "t", "p1") == BT_ENOTSERVING && cell_read_rc(r->s, "t",
	    "w1") == BT_ENOTSERVING, 1, "the root serves neither");
	rc = bt_table_split(second, "t", bts("s"));
	is_int(rc, -EEXIST, "a split again at s: -EEXIST");
	rc = bt_table_split(second, "t", bts("c"));
	is_int(rc, BT_ENOTSERVING, "a split of the root's tablet at the "
	    "second: BT_ENOTSERVING");
	rc = bt_table_split(r->s, "t", bts("u"));
	is_int(rc, BT_ENOTSERVING, "a split of the second's tablet at the "
	    "root: BT_ENOTSERVING");
}

/* A replace sent by a server the tablet is not assigned to. */
static void
test_fenced_wire(struct cell_root *r, const uint64_t child[2])
{
	struct catalog *other = cell_catalog_as(r, OTHER_NAME);
	uint64_t tid = table_id(r->catalog, "t"), ids[2];
	struct catalog_tablet_spec specs[2] = {
		{ .start = slice_make((const uint8_t *)"m", 1),
		  .end = slice_make((const uint8_t *)"q", 1) },
		{ .start = slice_make((const uint8_t *)"q", 1),
		  .end = slice_make((const uint8_t *)"s", 1) },
	};
	struct catalog_replace_prepare prep = { NULL, NULL };
	char *before, *after;
	int rc;

	before = catalog_text_state(r->catalog, tid);
	rc = catalog_tablet_replace(other, &child[0], 1, specs, 2, ids, NULL);
	is_int(rc, BT_ENOTSERVING, "CATALOG_TABLET_REPLACE of the second's "
	    "tablet by another server: BT_ENOTSERVING");
	ok(strstr(bt_error_detail(), SECOND_NAME) != NULL, "naming its "
	    "server: %s", bt_error_detail());
	rc = catalog_tablet_replace(other, &child[0], 1, specs, 2, ids, &prep);
	is_int(rc, -EINVAL, "a remote replace with a prepare: -EINVAL");
	after = catalog_text_state(r->catalog, tid);
	is_str(after, before, "the catalog is unchanged");
	free(before);
	free(after);
	catalog_close(other);
}

/* Row i's value in "big": 160 letters that do not compress away. */
static void
value_of(int i, char val[161])
{
	uint32_t x = (uint32_t)i * 2654435761u + 12345u;

	for (int k = 0; k < 160; k++) {
		x = x * 1103515245u + 12345u;
		val[k] = (char)('a' + (x >> 16) % 26);
	}
	val[160] = '\0';
}

/* A table of tablet_size BIG_TABLET whose one tablet moves to the second
 * and outgrows it there. */
static void
test_by_size(struct cell_root *r, struct bt_store *second)
{
	struct bt_family_spec f = { "f", NULL, "maxversions=1" };
	struct bt_group_spec g = { "default", 2048, -1, -1, -1 };
	struct catalog_location *locs;
	char row[32], val[161];
	uint64_t id;
	size_t n, before;
	int good = 0, rc;

	must(bt_table_create(r->s, "big", &f, 1, NULL, 0, BIG_TABLET));
	must(bt_group_set(r->s, "big", &g));
	n = locations(r->catalog, "big", &locs, 1);
	id = locs[0].tablet_id;
	catalog_locations_free(locs, n);
	tablet_move(r, second, "big", id);
	for (int i = 0; i < BIG_ROWS; i++) {
		snprintf(row, sizeof(row), "row%06d", i);
		value_of(i, val);
		must(put_str(second, "big", row, "f", "q", 1, val));
	}
	rc = bt_store_compact(second, "big", false);
	ok(rc == 0, "the second compacts the table (%s)", bt_error_detail());
	n = locations(r->catalog, "big", &locs, 64);
	catalog_locations_free(locs, n);
	ok(n > 1, "it split by size there: %zu tablets of %u KiB",
	    n, BIG_TABLET >> 10);
	is_int((int)assigned_to(r->catalog, "big", SECOND_NAME), (int)n,
	    "every one assigned to the second");
	for (int i = 0; i < BIG_ROWS; i++) {
		char *got;

		snprintf(row, sizeof(row), "row%06d", i);
		value_of(i, val);
		got = newest_text(second, "big", row, "f", "q");
		good += strncmp(got, val, 160) == 0;
		free(got);
	}
	is_int(good, BIG_ROWS, "every row reads back at the second");

	/* Most rows deleted: the neighbours shrink and merge there. */
	for (int i = 0; i < BIG_ROWS; i++) {
		struct bt_mutation m = { .kind = BT_DELETE_ROW };

		if (i % 50 == 0)
			continue;
		snprintf(row, sizeof(row), "row%06d", i);
		must(bt_mutate_row(second, "big", bts(row), &m, 1, NULL,
		    NULL));
	}
	rc = bt_store_compact(second, "big", true);
	ok(rc == 0, "the second compacts the shrunken table (%s)",
	    bt_error_detail());
	for (int i = 0; i < 3; i++)
		must(bt_store_flush(second));
	before = n;
	n = locations(r->catalog, "big", &locs, 64);
	catalog_locations_free(locs, n);
	ok(n < before, "it merged the neighbours it serves: %zu tablets from "
	    "%zu", n, before);
	is_int((int)assigned_to(r->catalog, "big", SECOND_NAME), (int)n,
	    "every one assigned to the second");
	good = 0;
	for (int i = 0; i < BIG_ROWS; i++) {
		char *got;

		snprintf(row, sizeof(row), "row%06d", i);
		value_of(i, val);
		got = newest_text(second, "big", row, "f", "q");
		good += i % 50 == 0 ? strncmp(got, val, 160) == 0 :
		    strcmp(got, "NOTFOUND") == 0;
		free(got);
	}
	is_int(good, BIG_ROWS, "every row kept reads back there, and no "
	    "deleted one");
}

/* The master gives the second up: the root recovers both children from
 * its log; the second, still running, can no longer split them. */
static void
test_given_up(struct cell_root *r, struct bt_store *second, const uint64_t child[2])
{
	const char *dirs[] = { SECOND_DIR "/log" };
	uint64_t tid = table_id(r->catalog, "t");
	char *before, *after;
	int rc;

	/* Acknowledged, not flushed: only in the second's log. */
	rows_put(second, "p", 10, "acked");
	rows_put(second, "w", 10, "acked");
	must(catalog_tablet_assign(r->catalog, child[0], CELL_ROOT_NAME));
	must(catalog_tablet_assign(r->catalog, child[1], CELL_ROOT_NAME));
	rc = api_tablet_recover(r->s, "t", child[0], dirs, 1);
	ok(rc == 0, "the root recovers [m, s) from the second's log (%s)",
	    bt_error_detail());
	rc = api_tablet_recover(r->s, "t", child[1], dirs, 1);
	ok(rc == 0, "and [s, ) (%s)", bt_error_detail());
	is_int(rows_match(r->s, "p", 10, "acked") + rows_match(r->s, "w", 10,
	    "acked"), 20, "every acknowledged write reads back at the root");
	is_int(scan_count(r->s, "m", ""), 20, "and scans there");

	before = catalog_text_state(r->catalog, tid);
	rc = bt_table_split(second, "t", bts("u"));
	is_int(rc, BT_ENOTSERVING, "a split at the stale second: "
	    "BT_ENOTSERVING from the root (%s)", bt_error_detail());
	after = catalog_text_state(r->catalog, tid);
	is_str(after, before, "and the catalog is unchanged");
	free(before);
	free(after);
	is_int(rows_match(second, "w", 10, "acked"), 10,
	    "the stale second keeps its tablet as it was");
}

/* A tablet server behind RPC on loopback, so that a client reaches it. */
struct served {
	struct bt_store *s;
	struct service *svc;
	struct rpc_server *rpc;
	char name[64];
};

static int
served_handle(void *arg, const struct rpc_call *call, struct slice request,
    struct buf *reply)
{
	struct served *v = arg;

	return service_handle_conn(v->svc, call->conn, call->method, request,
	    reply);
}

/* A server named after the port it listens on, as tabletd's are. */
static void
served_open(const char *path, struct cell_root *r, struct served *v)
{
	struct rpc_server_options o = { .secret = cell_secret };
	char dir[80], *colon;

	if (rpc_server_open("127.0.0.1:0", &o, served_handle, v,
	    &v->rpc) < 0)
		tap_bail("rpc_server_open");
	snprintf(v->name, sizeof(v->name), "%s#7",
	    rpc_server_address(v->rpc));
	snprintf(dir, sizeof(dir), "servers/%s.7",
	    rpc_server_address(v->rpc));
	if ((colon = strchr(dir, ':')) != NULL)
		*colon = '_';
	must(cell_server_open(path, r, v->name, dir, &v->s));
	if (service_new(v->s, &v->svc) < 0)
		tap_bail("service_new");
}

static uint64_t
tablet_at(struct cell_root *r, const char *table, int index)
{
	struct catalog_location *locs;
	size_t n = locations(r->catalog, table, &locs, 8);
	uint64_t id;

	if ((size_t)index >= n)
		tap_bail("no such tablet");
	id = locs[index].tablet_id;
	catalog_locations_free(locs, n);
	return id;
}

static struct bt_table_usage *
usage_of(struct bt_store *s, const char *table)
{
	struct bt_table_usage *u = NULL;

	must(bt_table_usage(s, table, &u));
	return u;
}

/*
 * "u" split at m: [, m) at the root, [m, ) at the third, which splits it
 * at s, and [s, ) moved back to the root, so that the root and the third
 * both name the file of [m, ) that the split shares.
 */
static void
test_usage_two_servers(struct cell_root *r, const char *path)
{
	struct bt_family_spec f = { "f", NULL, NULL };
	struct bt_bytes split = bts("m");
	struct bt_table_usage *atr, *att, *cu = NULL;
	struct cell_client *c;
	struct cells_row row;
	struct served v = { 0 };
	char third[80];
	uint64_t id;
	int rc;

	must(bt_table_create(r->s, "u", &f, 1, &split, 1, 0));
	served_open(path, r, &v);
	id = tablet_at(r, "u", 1);
	must(bt_tablet_unload(r->s, "u", id));
	must(catalog_tablet_assign(r->catalog, id, v.name));
	must(bt_tablet_load(v.s, "u", id));
	for (int i = 0; i < 40; i++) {
		char k[16];

		snprintf(k, sizeof(k), "a%02d", i);
		must(put_str(r->s, "u", k, "f", "q", 1, "root's value"));
		snprintf(k, sizeof(k), "p%02d", i);
		must(put_str(v.s, "u", k, "f", "q", 1, "third's value"));
		snprintf(k, sizeof(k), "w%02d", i);
		must(put_str(v.s, "u", k, "f", "q", 1, "third's value"));
	}
	must(bt_store_flush(r->s));
	must(bt_store_flush(v.s));
	must(bt_table_split(v.s, "u", bts("s")));
	id = tablet_at(r, "u", 2);
	must(bt_tablet_unload(v.s, "u", id));
	must(catalog_tablet_assign(r->catalog, id, CELL_ROOT_NAME));
	must(bt_tablet_load(r->s, "u", id));
	for (int i = 0; i < 40; i++) {		/* a file at the third alone */
		char k[16];

		snprintf(k, sizeof(k), "q%02d", i);
		must(put_str(v.s, "u", k, "f", "q", 1, "third's value"));
	}
	must(bt_store_flush(v.s));

	atr = usage_of(r->s, "u");
	att = usage_of(v.s, "u");
	ok(atr->families[0].disk_bytes > 0 && att->families[0].disk_bytes > 0,
	    "each server counts its own tablets' bytes (%llu, %llu)",
	    (unsigned long long)atr->families[0].disk_bytes,
	    (unsigned long long)att->families[0].disk_bytes);
	is_int((int)atr->groups[0].files, 2, "the root names two files");
	is_int((int)att->groups[0].files, 2, "the third two, one of which "
	    "the root's [s, ) shares");

	if (cell_client_open_at(rpc_server_address(r->rpc), cell_secret, 5000,
	    &c) < 0)
		tap_bail("cell_client_open_at");
	cells_row_init(&row);
	must(cell_read_row(c, "u", bts("p01"), NULL, &row));
	cells_row_release(&row);
	rc = cell_table_usage(c, "u", &cu);
	ok(rc == 0, "a client's usage of a table on two servers (%s)",
	    bt_error_detail());
	if (rc == 0) {
		is_int((int)cu->entries, 160, "its entries are both "
		    "servers' rows, the shared file's once (the servers "
		    "alone: %llu, %llu)", (unsigned long long)atr->entries,
		    (unsigned long long)att->entries);
		is_int((int)cu->value_bytes, 40 * 12 + 120 * 13, "and its "
		    "value bytes");
		is_int((int)cu->files, 3, "the shared file counted once");
		ok(cu->disk_bytes > atr->disk_bytes && cu->disk_bytes <
		    atr->disk_bytes + att->disk_bytes, "and its bytes once "
		    "(%llu)", (unsigned long long)cu->disk_bytes);
		ok(cu->families[0].disk_bytes + cu->groups[0].other_bytes ==
		    cu->disk_bytes, "the family's and other bytes add up to "
		    "the files' (%llu + %llu)", (unsigned long long)
		    cu->families[0].disk_bytes, (unsigned long long)
		    cu->groups[0].other_bytes);
		ok(cu->families[0].disk_bytes < atr->families[0].disk_bytes +
		    att->families[0].disk_bytes, "the family's less than "
		    "the servers' summed: the file's blocks by each range "
		    "counted once");
	}
	bt_table_usage_free(cu);
	cu = NULL;

	snprintf(third, sizeof(third), "%s", rpc_server_address(v.rpc));
	rpc_server_close(v.rpc);
	v.rpc = NULL;
	rc = cell_table_usage(c, "u", &cu);
	ok(rc < 0 && cu == NULL, "with the third gone the usage fails "
	    "(%d) rather than count the root's part alone", rc);
	ok(strstr(bt_error_detail(), third) != NULL, "its detail names the "
	    "server: %s", bt_error_detail());
	bt_table_usage_free(cu);
	cell_client_close(c);
	bt_table_usage_free(atr);
	bt_table_usage_free(att);
	service_free(v.svc);
	(void)bt_store_close(v.s);
}

int
main(void)
{
	static const char *const fams[] = { "f", NULL };
	struct bt_family_spec f = { "f", NULL, NULL };
	struct bt_bytes split = bts("m");
	struct cell_root r = { 0 };
	struct bt_store *second = NULL;
	struct catalog_location *locs;
	uint64_t child[2] = { 0, 0 };
	struct tstore ts;
	size_t n;

	cell_secret_init();
	tstore_posix(&ts, NULL);
	if (tstore_cell_skip(&ts, "opens the store's servers itself"))
		return tap_done();
	must(make_table(ts.s, "pre", fams));
	must(bt_store_close(ts.s));
	ts.s = NULL;
	cell_root_open(ts.path, &r);
	must(bt_table_create(r.s, "t", &f, 1, &split, 1, 0));
	open_second(ts.path, &r, &second);
	n = locations(r.catalog, "t", &locs, 2);
	if (n != 2)
		tap_bail("not two tablets");
	tablet_move(&r, second, "t", locs[1].tablet_id);
	catalog_locations_free(locs, n);

	test_forced(&r, second, child);
	test_fenced_wire(&r, child);
	test_by_size(&r, second);
	test_given_up(&r, second, child);
	test_usage_two_servers(&r, ts.path);

	(void)bt_store_close(second);	/* stale: its flush is refused */
	rpc_server_close(r.rpc);
	service_free(r.svc);
	must(bt_store_close(r.s));
	tstore_destroy(&ts);
	return tap_done();
}
