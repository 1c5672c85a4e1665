/*
 * test_catalog_cell.c - the root's server of a cell whose tablets are
 * served one by one (docs/design.md section 5, "Tablets one by one"): a
 * real store on the local filesystem, served by the service on a real
 * RPC server on loopback, reached by remote catalogs and raw RPC calls.
 *
 * What it proves: a file number another server took is pending, live
 * for the root's sweep of sst/ (a file renamed there under it survives
 * the sweep and a reopen) until the server names it or the master says
 * the server is gone, after which the sweep deletes it; the master's
 * compare-and-set of a tablet's server and its list of assignments;
 * LOCATE with its prefetch, its cap and its addresses; and a remote
 * catalog retargeted to another root's server while threads call it.
 */
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#include "api/api_server.h"
#include "api_util.h"
#include "catalog/catalog.h"
#include "rpc/rpc.h"
#include "rpc/tabletfs.pb-c.h"
#include "server/server.h"
#include "tabletd/catalog_client.h"
#include "tabletd/service.h"
#include "util/alloc.h"
#include "util/error.h"

#define CALLER_A	"127.0.0.1:7001#3"
#define ADDRESS_A	"127.0.0.1:7001"
#define CALLER_B	"127.0.0.1:7002#1"
#define ADDRESS_B	"127.0.0.1:7002"

/* A root's server: a service on the store behind an RPC server, which
 * counts the requests it ran. */
struct root {
	struct service *svc;
	struct rpc_server *rpc;
	atomic_int calls;
};

static uint8_t secret[RPC_SECRET_SIZE];

static int
handle(void *arg, const struct rpc_call *call, struct slice request,
    struct buf *reply)
{
	struct root *r = arg;

	atomic_fetch_add(&r->calls, 1);
	return service_handle_conn(r->svc, call->conn, call->method, request,
	    reply);
}

static void
root_open(struct root *r, struct bt_store *s)
{
	struct rpc_server_options o = { .secret = secret };

	memset(r, 0, sizeof(*r));
	if (service_new(s, &r->svc) < 0 ||
	    rpc_server_open("127.0.0.1:0", &o, handle, r, &r->rpc) < 0)
		tap_bail("cannot serve the store");
}

static void
root_close(struct root *r)
{
	rpc_server_close(r->rpc);
	service_free(r->svc);
	r->rpc = NULL;
	r->svc = NULL;
}

static struct catalog *
remote_open(const char *address, const char *caller)
{
	struct catalog_client_options o = { address, secret, caller, 5000 };
	struct catalog *c;

	if (catalog_client_open(&o, &c) < 0)
		tap_bail("catalog_client_open");
	return c;
}

static struct catalog *
local_catalog(struct tstore *ts)
{
	return server_catalog(api_store_server(ts->s));
}

/* Call method with m packed on svc (no transport): the status, and the
 * reply in *reply (released by the caller). */
static int
call_svc(struct service *svc, uint32_t method, const ProtobufCMessage *m,
    struct buf *reply)
{
	uint8_t p[512];
	size_t n = protobuf_c_message_get_packed_size(m);

	if (n > sizeof(p))
		tap_bail("request too big");
	protobuf_c_message_pack(m, p);
	buf_init(reply);
	return service_handle(svc, method, slice_make(p, n), reply);
}

/* ---- Pending numbers and the sweep ---- */

static void
sst_path(const struct tstore *ts, uint64_t number, char *path, size_t size)
{
	snprintf(path, size, "%s/sst/%016" PRIu64 ".sst", ts->path, number);
}

/* Make sst/NUMBER.sst as a server would have renamed it there. */
static void
sst_make(const struct tstore *ts, uint64_t number)
{
	char path[512];
	FILE *f;

	sst_path(ts, number, path, sizeof(path));
	if ((f = fopen(path, "w")) == NULL || fputs("an sstable\n", f) < 0 ||
	    fclose(f) != 0)
		tap_bail("cannot make an sst file");
}

static bool
sst_exists(const struct tstore *ts, uint64_t number)
{
	char path[512];

	sst_path(ts, number, path, sizeof(path));
	return access(path, F_OK) == 0;
}

static int
server_gone(struct service *svc, const char *name)
{
	Tabletfs__CatalogRequest req = TABLETFS__CATALOG_REQUEST__INIT;
	struct buf reply;
	int rc;

	req.caller = "master:1#1";
	req.name = (char *)name;
	rc = call_svc(svc, TABLETFS__METHOD__CATALOG_SERVER_GONE, &req.base,
	    &reply);
	buf_release(&reply);
	return rc;
}

/* The store reopened: the sweep of sst/ runs in its open. */
static void
sweep_by_reopen(struct tstore *ts)
{
	if (tstore_reopen(ts) < 0)
		tap_bail("reopen");
}

static void
test_pending_sweep(struct tstore *ts)
{
	struct root root;
	struct service *svc;
	struct catalog *a, *b;
	uint64_t mine = 0, theirs = 0, other = 0;

	root_open(&root, ts->s);
	a = remote_open(rpc_server_address(root.rpc), CALLER_A);
	b = remote_open(rpc_server_address(root.rpc), CALLER_B);
	ok(catalog_next_number(a, &theirs) == 0 &&
	    catalog_next_number(b, &other) == 0 &&
	    catalog_next_number(local_catalog(ts), &mine) == 0,
	    "numbers for %s, for %s and for the root's own engine",
	    CALLER_A, CALLER_B);
	sst_make(ts, theirs);
	sst_make(ts, other);
	sst_make(ts, mine);
	is_int(catalog_file_is_live(local_catalog(ts), theirs), 1,
	    "a number a server took is live, though no tablet names it");
	is_int(catalog_file_is_live(a, theirs), 1, "remotely too");
	is_int(catalog_file_is_live(local_catalog(ts), mine), 0,
	    "the root's own number, unnamed, is not");
	catalog_close(a);
	catalog_close(b);
	root_close(&root);

	sweep_by_reopen(ts);
	ok(!sst_exists(ts, mine), "the sweep deleted the root's unnamed "
	    "file %" PRIu64, mine);
	ok(sst_exists(ts, theirs) && sst_exists(ts, other), "and spared "
	    "the files renamed into sst/ under pending numbers");
	is_int(catalog_file_is_live(local_catalog(ts), theirs), 1,
	    "the pending number survives the reopen");

	if (service_new(ts->s, &svc) < 0)
		tap_bail("service_new");
	is_int(server_gone(svc, ""), -EINVAL,
	    "CATALOG_SERVER_GONE without a name: -EINVAL");
	is_int(server_gone(svc, CALLER_A), 0, "CATALOG_SERVER_GONE %s",
	    CALLER_A);
	is_int(catalog_file_is_live(local_catalog(ts), theirs), 0,
	    "its number is no longer live");
	is_int(catalog_file_is_live(local_catalog(ts), other), 1,
	    "another server's still is");
	is_int(server_gone(svc, CALLER_A), 0, "gone twice: 0");
	service_free(svc);
	is_int(catalog_server_gone(local_catalog(ts), "bad name"), -EINVAL,
	    "a bad name: -EINVAL");

	sweep_by_reopen(ts);
	ok(!sst_exists(ts, theirs), "the next sweep deleted the gone "
	    "server's file");
	ok(sst_exists(ts, other), "and left the other server's");
	is_int(catalog_server_gone(local_catalog(ts), CALLER_B), 0,
	    "%s gone too", CALLER_B);
	sweep_by_reopen(ts);
	ok(!sst_exists(ts, other), "and then its file goes");
}

/* An apply that names a pending number ends its pending: removed again,
 * the file is not live, with its server still there. */
static void
test_pending_named(struct tstore *ts, struct root *root)
{
	struct catalog *local = local_catalog(ts), *a;
	struct catalog_tablet *t = NULL;
	struct catalog_file f = { .group = "default", .size = 1 };
	struct catalog_table *tab = NULL;
	uint64_t tablet, kept = 0;
	size_t n = 0;

	if (catalog_table_get(local, "another", &tab) != 0 ||
	    catalog_tablets_list(local, tab->id, &t, &n) != 0 || n != 1)
		tap_bail("another's tablet");
	tablet = t[0].id;
	catalog_tablets_free(t, n);
	catalog_table_free(tab);
	a = remote_open(rpc_server_address(root->rpc), CALLER_A);
	ok(bt_tablet_unload(ts->s, "another", tablet) == 0 &&
	    catalog_tablet_assign(local, tablet, CALLER_A) == 0,
	    "tablet %" PRIu64 " unloaded and assigned to %s", tablet,
	    CALLER_A);
	ok(catalog_next_number(a, &f.number) == 0 &&
	    catalog_next_number(a, &kept) == 0, "two numbers for %s",
	    CALLER_A);
	is_int(catalog_tablet_apply(a, tablet, &f, 1, NULL, 0, 0), 0,
	    "its apply names the first");
	is_int(catalog_tablet_apply(a, tablet, NULL, 0, &f.number, 1, 0), 0,
	    "and a later one removes it");
	is_int(catalog_file_is_live(local, f.number), 0,
	    "it is not live: the apply that named it ended its pending");
	is_int(catalog_file_is_live(local, kept), 1,
	    "the number it did not name is still pending");
	is_int(catalog_tablet_assign(local, tablet, ""), 0, "unassigned");
	catalog_close(a);
}

/* ---- The master's assignment ---- */

static char *
assignments_text(const struct catalog_assignment *a, size_t n)
{
	struct sbuf b = { 0 };

	for (size_t i = 0; i < n; i++)
		sbuf_printf(&b, "%s %" PRIu64 " %" PRIu64 " @%s\n", a[i].table,
		    a[i].table_id, a[i].tablet_id, a[i].server);
	return sbuf_take(&b);
}

/* What the assignments must be: every table by id, its tablets by row,
 * each with the server the catalog's walk finds for it. */
static char *
assignments_want(struct catalog *c)
{
	struct sbuf b = { 0 };
	char **names = NULL;
	size_t count = 0;
	struct {
		uint64_t id;
		char name[CATALOG_NAME_MAX + 1];
	} tables[16];

	if (catalog_table_list(c, &names, &count) != 0 || count > 16)
		tap_bail("table_list");
	for (size_t i = 0; i < count; i++) {
		struct catalog_table *t;

		if (catalog_table_get(c, names[i], &t) != 0)
			tap_bail("table_get");
		tables[i].id = t->id;
		snprintf(tables[i].name, sizeof(tables[i].name), "%s",
		    names[i]);
		catalog_table_free(t);
		free(names[i]);
	}
	free(names);
	for (size_t i = 1; i < count; i++)	/* by id: few, insertion */
		for (size_t j = i; j > 0 && tables[j].id < tables[j - 1].id;
		    j--) {
			__typeof__(tables[0]) x = tables[j];

			tables[j] = tables[j - 1];
			tables[j - 1] = x;
		}
	for (size_t i = 0; i < count; i++) {
		struct catalog_tablet *t = NULL;
		size_t n = 0;

		if (catalog_tablets_list(c, tables[i].id, &t, &n) != 0)
			tap_bail("tablets_list");
		for (size_t k = 0; k < n; k++) {
			struct catalog_location loc;

			catalog_location_init(&loc);
			if (catalog_location_walk(c, tables[i].id,
			    slice_make(t[k].start.p, t[k].start.n), &loc,
			    NULL) != 0)
				tap_bail("walk");
			sbuf_printf(&b, "%s %" PRIu64 " %" PRIu64 " @%s\n",
			    tables[i].name, tables[i].id, t[k].id,
			    loc.server);
			catalog_location_release(&loc);
		}
		catalog_tablets_free(t, n);
	}
	return sbuf_take(&b);
}

static int
assign_rpc(struct service *svc, const char *caller, uint64_t tablet,
    const char *server, const char *expected)
{
	Tabletfs__CatalogAssignRequest req =
	    TABLETFS__CATALOG_ASSIGN_REQUEST__INIT;
	struct buf reply;
	int rc;

	req.caller = (char *)caller;
	req.has_tablet_id = true;
	req.tablet_id = tablet;
	req.server = (char *)server;
	req.expected = (char *)expected;
	rc = call_svc(svc, TABLETFS__METHOD__CATALOG_ASSIGN, &req.base,
	    &reply);
	buf_release(&reply);
	return rc;
}

static void
test_assign(struct tstore *ts, struct service *svc)
{
	Tabletfs__CatalogRequest req = TABLETFS__CATALOG_REQUEST__INIT;
	Tabletfs__CatalogAssignmentsReply *r;
	struct catalog *local = local_catalog(ts);
	struct catalog_assignment *a = NULL;
	char host[CATALOG_SERVER_MAX + 1], *want, *got;
	struct sbuf b = { 0 };
	struct buf reply;
	uint64_t tablet;
	size_t n = 0;

	is_int(catalog_assignments_list(local, &a, &n), 0,
	    "assignments_list");
	want = assignments_want(local);
	got = assignments_text(a, n);
	is_str(got, want, "every tablet, by table id then row, with its "
	    "table's name and its server");
	free(got);
	free(want);
	ok(n >= 6, "%zu tablets", n);
	tablet = a[0].tablet_id;
	snprintf(host, sizeof(host), "%s", a[0].server);
	bt_free(a);

	is_int(catalog_tablet_assign_if(local, tablet, CALLER_A, CALLER_B,
	    CATALOG_RECOVERY_KEEP),
	    -ESTALE, "CAS against the wrong server: -ESTALE");
	ok(strstr(bt_error_detail(), host) != NULL, "naming the tablet's "
	    "server: %s", bt_error_detail());
	is_int(catalog_tablet_assign_if(local, tablet, CALLER_A, host,
	    CATALOG_RECOVERY_KEEP), 0,
	    "CAS from %s to %s wins", host, CALLER_A);
	is_int(catalog_tablet_assign_if(local, tablet, CALLER_B, host,
	    CATALOG_RECOVERY_KEEP),
	    -ESTALE, "a second master's CAS from the old server loses");
	is_int(catalog_tablet_assign_if(local, tablet, CALLER_A, CALLER_A,
	    CATALOG_RECOVERY_KEEP), 0,
	    "assigning it where it is: 0");
	is_int(catalog_tablet_assign_if(local, tablet, "", CALLER_A,
	    CATALOG_RECOVERY_KEEP), 0,
	    "unassigned from %s", CALLER_A);
	is_int(catalog_tablet_assign_if(local, tablet, CALLER_B, CALLER_A,
	    CATALOG_RECOVERY_KEEP),
	    -ESTALE, "then a CAS expecting %s: -ESTALE", CALLER_A);
	is_int(catalog_tablet_assign_if(local, 987654, CALLER_A, "",
	    CATALOG_RECOVERY_KEEP),
	    -ENOENT, "no such tablet: -ENOENT");
	is_int(catalog_tablet_assign_if(local, tablet, "a b", "",
	    CATALOG_RECOVERY_KEEP), -EINVAL,
	    "a bad name: -EINVAL");

	is_int(assign_rpc(svc, "master:1#1", tablet, CALLER_B, NULL), 0,
	    "CATALOG_ASSIGN of the unassigned tablet (no expected: none)");
	is_int(assign_rpc(svc, "master:1#1", tablet, CALLER_A, ""), -ESTALE,
	    "CATALOG_ASSIGN expecting none, now it is %s: -ESTALE",
	    CALLER_B);
	is_int(assign_rpc(svc, NULL, tablet, CALLER_A, CALLER_B), -EINVAL,
	    "CATALOG_ASSIGN without a caller: -EINVAL");
	is_int(assign_rpc(svc, "master:1#1", 987654, CALLER_A, ""), -ENOENT,
	    "CATALOG_ASSIGN of no tablet: -ENOENT");

	req.caller = "master:1#1";
	want = assignments_want(local);
	is_int(call_svc(svc, TABLETFS__METHOD__CATALOG_ASSIGNMENTS,
	    &req.base, &reply), 0, "CATALOG_ASSIGNMENTS");
	r = tabletfs__catalog_assignments_reply__unpack(NULL, reply.n,
	    reply.p);
	for (size_t i = 0; r != NULL && i < r->n_tablets; i++)
		sbuf_printf(&b, "%s %" PRIu64 " %" PRIu64 " @%s\n",
		    r->tablets[i]->table, r->tablets[i]->table_id,
		    r->tablets[i]->tablet_id, r->tablets[i]->server);
	got = sbuf_take(&b);
	is_str(got, want, "replies the same list, %s's change in it",
	    CALLER_B);
	free(got);
	free(want);
	tabletfs__catalog_assignments_reply__free_unpacked(r, NULL);
	buf_release(&reply);
	req.caller = NULL;
	is_int(call_svc(svc, TABLETFS__METHOD__CATALOG_ASSIGNMENTS,
	    &req.base, &reply), -EINVAL, "and without a caller: -EINVAL");
	buf_release(&reply);
	is_int(catalog_tablet_assign(local, tablet, host), 0,
	    "given back to %s", host);
}

/* Whether the catalog's assignments mark tablet as recovering. */
static bool
marked(struct catalog *c, uint64_t tablet)
{
	struct catalog_assignment *a = NULL;
	bool found = false;
	size_t n = 0;

	if (catalog_assignments_list(c, &a, &n) != 0)
		tap_bail("assignments_list");
	for (size_t i = 0; i < n; i++)
		if (a[i].tablet_id == tablet)
			found = a[i].recovering;
	bt_free(a);
	return found;
}

/*
 * The recovery mark (catalog_tablet_assign_if()'s rec) and what a family
 * made on a cell asks of it (catalog_table_replayed()): every tablet of
 * the table at a server that gave its last number, none marked.
 */
static void
test_recovery_mark(struct tstore *ts, struct service *svc)
{
	Tabletfs__CatalogAssignRequest req =
	    TABLETFS__CATALOG_ASSIGN_REQUEST__INIT;
	Tabletfs__CatalogRequest lreq = TABLETFS__CATALOG_REQUEST__INIT;
	Tabletfs__CatalogAssignmentsReply *r;
	struct catalog *local = local_catalog(ts);
	struct catalog_assignment *a = NULL;
	struct catalog_tablet *tablets = NULL;
	char host[CATALOG_SERVER_MAX + 1], table[CATALOG_NAME_MAX + 1];
	const char *names[2];
	uint64_t tablet, table_id, flushed = 0, high = 0;
	struct buf reply;
	size_t n = 0;
	bool seen = false;

	if (catalog_assignments_list(local, &a, &n) != 0 || n == 0)
		tap_bail("assignments_list");
	tablet = a[0].tablet_id;
	table_id = a[0].table_id;
	snprintf(host, sizeof(host), "%s", a[0].server);
	snprintf(table, sizeof(table), "%s", a[0].table);
	bt_free(a);
	if (catalog_tablets_list(local, table_id, &tablets, &n) != 0)
		tap_bail("tablets_list");
	for (size_t i = 0; i < n; i++)
		if (tablets[i].flushed_seq > high)
			high = tablets[i].flushed_seq;
	catalog_tablets_free(tablets, n);

	names[0] = host;
	names[1] = CALLER_A;
	ok(!marked(local, tablet), "a tablet carries no recovery mark");
	is_int(catalog_table_replayed(local, table, names, 1, &flushed), 0,
	    "table %s: every tablet at %s, which gave its number", table,
	    host);
	is_int((int)(flushed == high), 1, "flushed is the tablets' highest "
	    "flushed_seq (%" PRIu64 ")", high);
	is_int(catalog_table_replayed(local, table, names + 1, 1, &flushed),
	    -EAGAIN, "a server that did not give its number holds tablets: "
	    "-EAGAIN");
	ok(strstr(bt_error_detail(), host) != NULL, "naming the server: %s",
	    bt_error_detail());
	is_int(catalog_table_replayed(local, "nosuch", names, 1, &flushed),
	    -ENOENT, "no such table: -ENOENT");

	is_int(catalog_tablet_assign_if(local, tablet, CALLER_A, host,
	    CATALOG_RECOVERY_BEGIN), 0, "given to %s to recover", CALLER_A);
	ok(marked(local, tablet), "and marked");
	is_int(catalog_table_replayed(local, table, names, 2, &flushed),
	    -EAGAIN, "a family waits while a tablet is being recovered, even "
	    "at a server that gave its number");
	ok(strstr(bt_error_detail(), "being recovered") != NULL, "saying "
	    "so: %s", bt_error_detail());
	is_int(catalog_tablet_assign_if(local, tablet, "", CALLER_A,
	    CATALOG_RECOVERY_KEEP), 0, "a recovery that failed unassigns it");
	ok(marked(local, tablet), "and the mark stays");
	is_int(catalog_tablet_assign_if(local, tablet, CALLER_A, "",
	    CATALOG_RECOVERY_DONE), -EINVAL, "only the server assigned ends "
	    "a recovery: -EINVAL");
	is_int(catalog_tablet_assign_if(local, tablet, CALLER_A, "",
	    CATALOG_RECOVERY_BEGIN), 0, "given out again");

	req.caller = "master:1#1";
	req.has_tablet_id = true;
	req.tablet_id = tablet;
	req.server = req.expected = (char *)CALLER_B;
	req.has_recovery = true;
	req.recovery = TABLETFS__CATALOG_ASSIGN_REQUEST__RECOVERY__RECOVERY_DONE;
	is_int(call_svc(svc, TABLETFS__METHOD__CATALOG_ASSIGN, &req.base,
	    &reply), -ESTALE, "CATALOG_ASSIGN ending the recovery of another "
	    "server: -ESTALE");
	buf_release(&reply);
	ok(marked(local, tablet), "the mark stays");
	lreq.caller = "master:1#1";
	is_int(call_svc(svc, TABLETFS__METHOD__CATALOG_ASSIGNMENTS,
	    &lreq.base, &reply), 0, "CATALOG_ASSIGNMENTS");
	r = tabletfs__catalog_assignments_reply__unpack(NULL, reply.n,
	    reply.p);
	for (size_t i = 0; r != NULL && i < r->n_tablets; i++)
		if (r->tablets[i]->tablet_id == tablet)
			seen = r->tablets[i]->has_recovering &&
			    r->tablets[i]->recovering;
	ok(seen, "replies the mark");
	tabletfs__catalog_assignments_reply__free_unpacked(r, NULL);
	buf_release(&reply);
	req.server = req.expected = (char *)CALLER_A;
	is_int(call_svc(svc, TABLETFS__METHOD__CATALOG_ASSIGN, &req.base,
	    &reply), 0, "CATALOG_ASSIGN ending the recovery at %s", CALLER_A);
	buf_release(&reply);
	ok(!marked(local, tablet), "clears the mark");
	is_int(catalog_table_replayed(local, table, names, 2, &flushed), 0,
	    "then the family may be made");

	is_int(catalog_tablet_assign_if(local, tablet, host, CALLER_A,
	    CATALOG_RECOVERY_KEEP), 0, "given back to %s", host);
}

/* ---- LOCATE ---- */

/* The server the catalog names for row of table id, into server. */
static void
server_of(struct catalog *c, uint64_t id, const char *row, char *server)
{
	struct catalog_location loc;

	catalog_location_init(&loc);
	if (catalog_location_walk(c, id, slice_make(row, strlen(row)), &loc,
	    NULL) != 0)
		tap_bail("walk");
	memcpy(server, loc.server, sizeof(loc.server));
	catalog_location_release(&loc);
}

/* LOCATE over RPC: the status, and the reply rendered into *text (the
 * table id, then "id [start, end) @server" lines). */
static int
locate(struct rpc_client *cl, const char *table, const char *row,
    int64_t count, char **text)
{
	Tabletfs__LocateRequest req = TABLETFS__LOCATE_REQUEST__INIT;
	Tabletfs__LocateReply *r;
	struct sbuf b = { 0 };
	uint8_t p[256];
	struct buf reply;
	int32_t status = 0;
	bool sent;
	int rc;

	req.table = (char *)table;
	req.has_row = row != NULL;
	req.row = (ProtobufCBinaryData){ row != NULL ? strlen(row) : 0,
	    (uint8_t *)row };
	req.has_count = count >= 0;
	req.count = count >= 0 ? (uint32_t)count : 0;
	buf_init(&reply);
	rc = rpc_client_call(cl, TABLETFS__METHOD__LOCATE, slice_make(p,
	    protobuf_c_message_pack(&req.base, p)), rpc_now_ns() +
	    5000000000, &reply, &status, &sent);
	if (rc < 0)
		tap_bail("LOCATE: the call failed");
	*text = NULL;
	if (status == 0) {
		if ((r = tabletfs__locate_reply__unpack(NULL, reply.n,
		    reply.p)) == NULL)
			tap_bail("LOCATE: the reply does not unpack");
		sbuf_printf(&b, "table %" PRIu64 "\n", r->table_id);
		for (size_t i = 0; i < r->n_tablets; i++) {
			Tabletfs__TabletLocation *l = r->tablets[i];

			sbuf_printf(&b, "%" PRIu64 " [", l->id);
			sbuf_escaped(&b, l->start.data, l->start.len);
			sbuf_printf(&b, ", ");
			sbuf_escaped(&b, l->end.data, l->end.len);
			sbuf_printf(&b, ") @%s\n", l->server);
		}
		*text = sbuf_take(&b);
		tabletfs__locate_reply__free_unpacked(r, NULL);
	}
	buf_release(&reply);
	return status;
}

/* The expected text for tablets [from, from + n) of t (the tablets of
 * table id), each with address addr[i]. */
static char *
locate_want(uint64_t id, const struct catalog_tablet *t, size_t from,
    size_t n, const char *const *addr)
{
	struct sbuf b = { 0 };

	sbuf_printf(&b, "table %" PRIu64 "\n", id);
	for (size_t i = from; i < from + n; i++) {
		sbuf_printf(&b, "%" PRIu64 " [", t[i].id);
		sbuf_escaped(&b, t[i].start.p, t[i].start.n);
		sbuf_printf(&b, ", ");
		sbuf_escaped(&b, t[i].end.p, t[i].end.n);
		sbuf_printf(&b, ") @%s\n", addr[i]);
	}
	return sbuf_take(&b);
}

#define LOCATE_IS(cl, table, row, count, want, ...) do {		\
	char *got_, *want_ = (want);					\
	int rc_ = locate((cl), (table), (row), (count), &got_);		\
	is_int(rc_, 0, __VA_ARGS__);					\
	is_str(got_ != NULL ? got_ : "", want_, __VA_ARGS__);		\
	free(got_);							\
	free(want_);							\
} while (0)

static void
test_locate(struct tstore *ts, struct root *root, uint64_t id,
    uint64_t many_id)
{
	/* [, g) A; [g, p) none; [p, t) B; [t, ) the embedded name. */
	static const char *const addr[] = { ADDRESS_A, "", ADDRESS_B, "" };
	const char **many_addr;
	struct catalog *local = local_catalog(ts);
	struct catalog_tablet *t = NULL, *m = NULL;
	char host[CATALOG_SERVER_MAX + 1];
	struct rpc_client *cl;
	size_t n = 0, mn = 0;
	char *text;

	if (catalog_tablets_list(local, id, &t, &n) != 0 || n != 4 ||
	    catalog_tablets_list(local, many_id, &m, &mn) != 0 || mn < 65)
		tap_bail("tablets");
	server_of(local, id, "zzz", host);
	ok(catalog_tablet_assign(local, t[0].id, CALLER_A) == 0 &&
	    catalog_tablet_assign(local, t[1].id, "") == 0 &&
	    catalog_tablet_assign(local, t[2].id, CALLER_B) == 0 &&
	    host[0] != '\0' && strchr(host, '#') == NULL,
	    "webtable's tablets assigned to %s, none, %s, and the embedded "
	    "server's name (%s)", CALLER_A, CALLER_B, host);
	if (rpc_client_open(rpc_server_address(root->rpc), secret,
	    rpc_now_ns() + 5000000000, &cl) < 0)
		tap_bail("rpc_client_open");

	LOCATE_IS(cl, "webtable", "h", 1, locate_want(id, t, 1, 1, addr),
	    "LOCATE of a row: its tablet, with table_id; unassigned: \"\"");
	LOCATE_IS(cl, "webtable", "h", -1, locate_want(id, t, 1, 1, addr),
	    "without count: one tablet");
	LOCATE_IS(cl, "webtable", "a", 0, locate_want(id, t, 0, 1, addr),
	    "count 0: one tablet, the address of %s: %s", CALLER_A,
	    ADDRESS_A);
	LOCATE_IS(cl, "webtable", "a", 3, locate_want(id, t, 0, 3, addr),
	    "count 3: the tablet and the next two, in row order, each "
	    "with its address");
	LOCATE_IS(cl, "webtable", "p", 10, locate_want(id, t, 2, 2, addr),
	    "a row at a tablet's start, count 10: up to the table's end");
	LOCATE_IS(cl, "webtable", "zzz", 5, locate_want(id, t, 3, 1, addr),
	    "a row in the last tablet: that tablet alone; a name without "
	    "'#' gives \"\"");
	LOCATE_IS(cl, "webtable", NULL, 4, locate_want(id, t, 0, 4, addr),
	    "no row: from the table's first tablet");

	if ((many_addr = calloc(mn, sizeof(*many_addr))) == NULL)
		tap_bail("calloc");
	for (size_t i = 0; i < mn; i++)
		many_addr[i] = "";
	LOCATE_IS(cl, "many", "", 1000, locate_want(many_id, m, 0, 64,
	    (const char *const *)many_addr), "count 1000 of a table of %zu tablets: capped at "
	    "64", mn);
	free(many_addr);

	is_int(locate(cl, "nosuch", "a", 1, &text), -ENOENT,
	    "an unknown table: -ENOENT");
	is_int(locate(cl, NULL, "a", 1, &text), -EINVAL,
	    "no table: -EINVAL");
	rpc_client_close(cl);
	for (size_t i = 0; i < 3; i++)
		if (catalog_tablet_assign(local, t[i].id, host) != 0)
			tap_bail("assign back");
	catalog_tablets_free(t, n);
	catalog_tablets_free(m, mn);
}

/* ---- Retargeting ---- */

struct caller {
	struct catalog *c;
	atomic_int *retargeted;	/* set once retarget returned */
	int before, after, failed_after;
};

static void *
calls(void *arg)
{
	struct caller *k = arg;
	struct catalog_table *t;

	/* A bound, should the retarget never come. */
	for (int i = 0; i < 100000; i++) {
		bool after = atomic_load(k->retargeted) != 0;
		int rc = catalog_table_get(k->c, "webtable", &t);

		if (rc == 0)
			catalog_table_free(t);
		if (after) {
			k->after++;
			k->failed_after += rc != 0;
			if (k->after >= 50)
				break;
		} else {
			k->before++;
		}
	}
	return NULL;
}

static void
test_retarget(struct tstore *ts, struct root *first)
{
	static struct caller k[4];
	struct root second;
	struct catalog *c;
	atomic_int retargeted = 0;
	pthread_t th[4];
	int after = 0, failed = 0, before = 0, calls_first;

	root_open(&second, ts->s);
	c = remote_open(rpc_server_address(first->rpc), CALLER_A);
	is_int(catalog_client_retarget(local_catalog(ts), "127.0.0.1:1"),
	    -EINVAL, "retarget of a local catalog: -EINVAL");
	is_int(catalog_client_retarget(c, ""), -EINVAL,
	    "retarget to no address: -EINVAL");
	for (int i = 0; i < 4; i++) {
		k[i].c = c;
		k[i].retargeted = &retargeted;
		pthread_create(&th[i], NULL, calls, &k[i]);
	}
	while (atomic_load(&first->calls) < 40)
		sched_yield();
	is_int(catalog_client_retarget(c, rpc_server_address(second.rpc)), 0,
	    "retarget while four threads call");
	calls_first = atomic_load(&first->calls);
	atomic_store(&retargeted, 1);
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		before += k[i].before;
		after += k[i].after;
		failed += k[i].failed_after;
	}
	ok(before > 0 && after == 200 && failed == 0, "calls before it "
	    "(%d), and 200 after it, none failed (%d)", before, failed);
	ok(atomic_load(&first->calls) <= calls_first + 4,
	    "the first root ran at most the calls in flight after it "
	    "(%d, then %d)", calls_first, atomic_load(&first->calls));
	ok(atomic_load(&second.calls) >= 200, "the second ran every later "
	    "one (%d)", atomic_load(&second.calls));
	catalog_close(c);
	root_close(&second);
}

/* ---- The fixture ---- */

static void
make_schema(struct bt_store *s)
{
	static const struct bt_family_spec fams[] = {
		{ "contents", NULL, NULL },
	};
	struct bt_bytes splits[] = { bts("g"), bts("p"), bts("t") };
	struct bt_bytes many[70];
	char rows[70][8];

	for (int i = 0; i < 70; i++) {
		snprintf(rows[i], sizeof(rows[i]), "r%03d", i);
		many[i] = bts(rows[i]);
	}
	if (bt_table_create(s, "webtable", fams, 1, splits, 3, 0) < 0 ||
	    bt_table_create(s, "another", fams, 1, NULL, 0, 0) < 0 ||
	    bt_table_create(s, "many", fams, 1, many, 70, 0) < 0 ||
	    put_str(s, "webtable", "a", "contents", "", 1, "x") < 0 ||
	    bt_store_flush(s) < 0)
		tap_bail("schema");
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

int
main(void)
{
	struct tstore ts;
	struct root root;

	for (size_t i = 0; i < sizeof(secret); i++)
		secret[i] = (uint8_t)(i * 5 + 3);
	tstore_posix(&ts, NULL);
	if (tstore_cell_skip(&ts, "the root's catalog is an embedded "
	    "store's"))
		return tap_done();
	make_schema(ts.s);

	test_pending_sweep(&ts);
	root_open(&root, ts.s);
	test_pending_named(&ts, &root);
	test_assign(&ts, root.svc);
	test_recovery_mark(&ts, root.svc);
	test_locate(&ts, &root, table_id(local_catalog(&ts), "webtable"),
	    table_id(local_catalog(&ts), "many"));
	test_retarget(&ts, &root);
	root_close(&root);
	tstore_destroy(&ts);
	return tap_done();
}
