/*
 * test_catalog_remote.c - the remote catalog (catalog_open_remote(),
 * tabletd/catalog_client.h) against the catalog it reaches: a real store
 * on the local filesystem, served by the service (CATALOG_* methods) on
 * a real RPC server on loopback, with the cell's secret.  Every
 * forwarded call must answer as the local catalog does (the same
 * results, rendered field by field, and the same codes); tablet_apply is
 * fenced by the caller's name; every other call is -EOPNOTSUPP; and a
 * root server that goes away or stops answering is an error within the
 * deadline, never a hang.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <time.h>

#include "api/api_server.h"
#include "api_util.h"
#include "catalog/catalog.h"
#include "catalog_text.h"
#include "rpc/rpc.h"
#include "rpc/tabletfs.pb-c.h"
#include "server/server.h"
#include "tabletd/catalog_client.h"
#include "tabletd/service.h"
#include "util/alloc.h"
#include "util/error.h"

#define CALLER_A	"127.0.0.1:7001#3"	/* assigned the tablet */
#define CALLER_STALE	"127.0.0.1:7001#2"	/* the same, an old epoch */
#define CALLER_B	"127.0.0.1:7002#1"	/* another server */

/* The root's server: a service on the store behind an RPC server. */
struct root {
	struct service *svc;
	struct rpc_server *rpc;
	atomic_int stall_ms;	/* each request waits this long first */
};

static uint8_t secret[RPC_SECRET_SIZE];

static void
sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static int
handle(void *arg, const struct rpc_call *call, struct slice request,
    struct buf *reply)
{
	struct root *r = arg;
	int ms = atomic_load(&r->stall_ms);

	if (ms > 0)
		sleep_ms(ms);
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

/* The same, listening at address again (a root's server restarted). */
static int
root_reopen(struct root *r, struct bt_store *s, const char *address)
{
	struct rpc_server_options o = { .secret = secret };

	memset(r, 0, sizeof(*r));
	if (service_new(s, &r->svc) < 0)
		tap_bail("service_new");
	return rpc_server_open(address, &o, handle, r, &r->rpc);
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
remote_open(const char *address, const char *caller, uint32_t deadline_ms)
{
	struct catalog_client_options o = { address, secret, caller,
	    deadline_ms };
	struct catalog *c;

	if (catalog_client_open(&o, &c) < 0)
		tap_bail("catalog_client_open");
	return c;
}

/* is_str on two renders, freeing both. */
#define same(remote, local, ...) do {					\
	char *same_r_ = (remote), *same_l_ = (local);			\
	is_str(same_r_, same_l_, __VA_ARGS__);				\
	free(same_r_);							\
	free(same_l_);							\
} while (0)

/* ---- The fixture: a table of several families, groups and tablets ---- */

static uint64_t
make_schema(struct bt_store *s, struct catalog *local)
{
	static const struct bt_family_spec fams[] = {
		{ "contents", NULL, NULL },
		{ "anchor", "links", "maxversions=2" },
		{ "meta", "small", "maxage=7d or maxversions=5" },
	};
	struct bt_bytes splits[] = { bts("g"), bts("p") };
	struct bt_group_spec links = { "links", 4096, 0, 0, 1 };
	struct bt_access mode = { BT_ACCESS_KEEP, BT_ACCESS_KEEP, 0750 };
	struct bt_access fam = { BT_ACCESS_KEEP, 4242, 0700 };
	struct catalog_table *t;
	uint64_t id;
	char row[2] = "a";

	if (bt_table_create(s, "webtable", fams, 2, splits, 2, 1 << 20) < 0 ||
	    bt_table_create(s, "another", fams, 1, NULL, 0, 0) < 0 ||
	    bt_group_set(s, "webtable", &links) < 0 ||
	    bt_access_set(s, "webtable", NULL, &mode) < 0)
		tap_bail("schema");
	for (char ch = 'a'; ch <= 'z'; ch++) {
		row[0] = ch;
		if (put_str(s, "webtable", row, "contents", "", 1000 + ch,
		    "<html>") < 0 || put_str(s, "webtable", row, "anchor",
		    "cnn.com", 7, "CNN") < 0)
			tap_bail("put");
	}
	/* Made after writes: its created_seq is above them. */
	if (bt_family_create(s, "webtable", &fams[2]) < 0 ||
	    bt_access_set(s, "webtable", "meta", &fam) < 0)
		tap_bail("family meta");
	if (bt_table_split(s, "webtable", bts("t")) < 0 ||
	    bt_store_flush(s) < 0)
		tap_bail("split and flush");
	if (catalog_table_get(local, "webtable", &t) != 0)
		tap_bail("local table_get");
	id = t->id;
	catalog_table_free(t);
	return id;
}

/* ---- The tests ---- */

static void
test_reads(struct catalog *remote, struct catalog *local, uint64_t id)
{
	struct catalog_table *t = NULL;
	struct catalog_tablet *tl = NULL;
	size_t n = 0;
	char *s;

	same(catalog_text_names(remote), catalog_text_names(local), "table_list as locally");
	same(catalog_text_table(remote, "webtable", 0), catalog_text_table(local, "webtable",
	    0), "table_get: every field as locally");
	same(catalog_text_table(remote, NULL, id), catalog_text_table(local, NULL, id),
	    "table_get_by_id: every field as locally");
	ok(catalog_table_get(remote, "webtable", &t) == 0 &&
	    t->family_count == 3 && t->group_count == 3 &&
	    strcmp(t->groups[1].name, "links") == 0 &&
	    t->groups[1].block_size == 4096 && !t->groups[1].compress &&
	    !t->groups[1].bloom && t->groups[1].in_memory &&
	    t->access.mode == 0750 && strcmp(t->families[2].name, "meta") == 0 &&
	    t->families[2].access.gid == 4242 &&
	    t->families[2].access.mode == 0700 &&
	    t->families[0].created_seq == 0 &&
	    t->families[2].created_seq > 52 && t->tablet_size == 1 << 20,
	    "the remote schema holds the groups' settings and access");
	catalog_table_free(t);
	s = catalog_text_tablets(local, id, &n);
	same(catalog_text_tablets(remote, id, NULL), s, "tablets_list as locally");
	is_int(n, 4, "the split table has four tablets");
	if (catalog_tablets_list(local, id, &tl, &n) != 0)
		tap_bail("local tablets_list");
	for (size_t i = 0; i < n; i++)
		same(catalog_text_files(remote, tl[i].id, NULL), catalog_text_files(local,
		    tl[i].id, NULL), "files_list of tablet %zu as locally", i);
	catalog_tablets_free(tl, n);

	same(catalog_text_table(remote, "nosuch", 0), catalog_text_table(local, "nosuch", 0),
	    "an unknown table: BT_NOTFOUND as locally");
	same(catalog_text_table(remote, "bad/name", 0), catalog_text_table(local, "bad/name",
	    0), "an invalid name: BT_NOTFOUND as locally");
	same(catalog_text_table(remote, NULL, 987654), catalog_text_table(local, NULL, 987654),
	    "an unknown table id: BT_NOTFOUND as locally");
	same(catalog_text_tablets(remote, 987654, NULL), catalog_text_tablets(local, 987654,
	    NULL), "tablets of an unknown table: BT_NOTFOUND as locally");
	same(catalog_text_files(remote, 987654, NULL), catalog_text_files(local, 987654, NULL),
	    "files of an unknown tablet: BT_NOTFOUND as locally");
	is_int(catalog_table_get(remote, "nosuch", &t), BT_NOTFOUND,
	    "BT_NOTFOUND itself");
}

static void
test_numbers(struct catalog *remote, struct catalog *local)
{
	uint64_t a = 0, b = 0, c = 0, d = 0;
	bool all = catalog_next_number(remote, &a) == 0 &&
	    catalog_next_number(remote, &b) == 0 &&
	    catalog_next_number(local, &c) == 0 &&
	    catalog_next_number(remote, &d) == 0;

	ok(all && a < b && b < c && c < d,
	    "next_number increases across remote and local calls "
	    "(%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 ")", a, b, c, d);
}

static void
test_apply(struct bt_store *s, struct catalog *a, struct catalog *stale,
    struct catalog *b, struct catalog *local, uint64_t id)
{
	struct catalog_tablet *t = NULL;
	struct catalog_file old, added = { 0 };
	uint64_t tablet, number = 0;
	size_t n = 0;
	char *before, *after, *files, line[128], gone[64];
	int rc;

	/* The tablet [g, p) moves to server A, as the master will do it:
	 * unloaded here (its memtable flushed), then assigned. */
	if (catalog_tablets_list(local, id, &t, &n) != 0 || n != 4)
		tap_bail("tablets");
	tablet = t[1].id;
	catalog_tablets_free(t, n);
	free(catalog_text_files(local, tablet, &old));
	ok(bt_tablet_unload(s, "webtable", tablet) == 0 &&
	    catalog_tablet_assign(local, tablet, CALLER_A) == 0,
	    "the tablet is unloaded from the root's server and assigned "
	    "to %s", CALLER_A);
	if (catalog_next_number(a, &number) != 0)
		tap_bail("next_number");
	added.number = number;
	snprintf(added.group, sizeof(added.group), "links");
	added.size = 4096;
	added.entry_count = 9;
	added.max_seq = old.max_seq + 10;

	before = catalog_text_state(local, id);
	rc = catalog_tablet_apply(b, tablet, &added, 1, &old.number, 1,
	    added.max_seq);
	is_int(rc, BT_ENOTSERVING, "apply from %s, not assigned: "
	    "BT_ENOTSERVING", CALLER_B);
	ok(strstr(bt_error_detail(), CALLER_A) != NULL,
	    "its detail names the assigned server: %s", bt_error_detail());
	is_int(catalog_tablet_apply(stale, tablet, &added, 1, &old.number, 1,
	    added.max_seq), BT_ENOTSERVING,
	    "apply from an older epoch of the assigned server: refused");
	is_int(catalog_tablet_apply(b, 987654, &added, 1, NULL, 0, 0),
	    catalog_tablet_apply_as(local, CALLER_B, 987654, &added, 1, NULL,
	    0, 0), "apply to an unknown tablet: as locally (-ENOENT)");
	is_int(catalog_tablet_apply_as(local, "", tablet, &added, 1, NULL, 0,
	    0), -EINVAL, "an empty caller, which would match an unassigned "
	    "tablet: -EINVAL");
	same(catalog_text_state(local, id), strdup(before),
	    "the refused applies changed nothing");
	is_int(catalog_file_is_live(a, number), 1,
	    "the refused file's number is live all the same: pending for "
	    "the server that took it");

	snprintf(added.group, sizeof(added.group), "nosuchgroup");
	is_int(catalog_tablet_apply(a, tablet, &added, 1, NULL, 0, 0),
	    -ENOENT, "apply of a file in an unknown group: -ENOENT, as "
	    "locally");
	snprintf(added.group, sizeof(added.group), "links");
	is_int(catalog_tablet_apply(a, tablet, NULL, 0, &number, 1, 0),
	    -ENOENT, "removing a file the tablet does not name: -ENOENT");
	same(catalog_text_state(local, id), strdup(before),
	    "and neither did the failed ones");

	rc = catalog_tablet_apply(a, tablet, &added, 1, &old.number, 1,
	    added.max_seq);
	is_int(rc, 0, "apply from the assigned server succeeds");
	after = catalog_text_state(local, id);
	ok(strcmp(before, after) != 0, "and changes the catalog");
	files = catalog_text_files(local, tablet, NULL);
	snprintf(line, sizeof(line), "\n%" PRIu64 " of %" PRIu64 " links "
	    "size=4096 entries=9 ", number, tablet);
	snprintf(gone, sizeof(gone), "\n%" PRIu64 " of ", old.number);
	ok(strstr(files, line) != NULL && strstr(files, gone) == NULL,
	    "locally, the tablet names the added file, not the removed "
	    "one:\n%s", files);
	free(files);
	same(catalog_text_tablets(a, id, NULL), catalog_text_tablets(local, id, NULL),
	    "its redo point is raised, remotely as locally");
	is_int(catalog_file_is_live(a, number), 1,
	    "file_is_live: the added file is live remotely");
	is_int(catalog_file_is_live(local, number), 1, "and locally");
	is_int(catalog_file_is_live(a, old.number),
	    catalog_file_is_live(local, old.number),
	    "the removed file: as locally");
	is_int(catalog_file_is_live(a, number + 100000), 0,
	    "a number never given is not live");
	free(before);
	free(after);
}

static void
test_refused(struct catalog *remote)
{
	struct catalog_family f = { .name = "x" };
	struct catalog_location loc;
	uint64_t v = 0;

	catalog_location_init(&loc);
	is_int(catalog_family_create(remote, "webtable", &f, NULL),
	    -EOPNOTSUPP, "family_create on a remote catalog: -EOPNOTSUPP");
	ok(strstr(bt_error_detail(), "remote") != NULL, "with a detail: %s",
	    bt_error_detail());
	is_int(catalog_table_drop(remote, "webtable"), -EOPNOTSUPP,
	    "table_drop: -EOPNOTSUPP");
	is_int(catalog_meta_get(remote, "last_seq", 0, &v), -EOPNOTSUPP,
	    "meta_get: -EOPNOTSUPP");
	is_int(catalog_tablet_assign(remote, 1, CALLER_B), -EOPNOTSUPP,
	    "tablet_assign: -EOPNOTSUPP");
	is_int(catalog_tablet_apply_as(remote, CALLER_B, 1, NULL, 0, NULL, 0,
	    0), -EOPNOTSUPP, "tablet_apply_as: -EOPNOTSUPP");
	is_int(catalog_location_walk(remote, 1, slice_make((const uint8_t *)
	    "a", 1), &loc, NULL), -EOPNOTSUPP, "location_walk: -EOPNOTSUPP");
	is_int(catalog_check(remote, NULL, NULL), -EOPNOTSUPP,
	    "check: -EOPNOTSUPP");
	ok(!catalog_commit_unknown(remote) && catalog_is_remote(remote),
	    "commit_unknown is false on a remote catalog");
	catalog_location_release(&loc);
}

/* A request without a caller is refused by the service itself. */
static void
test_no_caller(struct service *svc)
{
	Tabletfs__CatalogRequest req = TABLETFS__CATALOG_REQUEST__INIT;
	uint8_t p[64];
	struct buf reply;
	size_t n;

	buf_init(&reply);
	n = protobuf_c_message_pack(&req.base, p);
	is_int(service_handle(svc, TABLETFS__METHOD__CATALOG_NEXT_NUMBER,
	    slice_make(p, n), &reply), -EINVAL,
	    "a catalog request without a caller: -EINVAL");
	buf_release(&reply);
}

struct racer {
	struct catalog *c;
	uint64_t numbers[50];
	int failed;
};

static void *
race(void *arg)
{
	struct racer *r = arg;
	struct catalog_table *t;

	for (int i = 0; i < 50; i++) {
		if (catalog_next_number(r->c, &r->numbers[i]) != 0 ||
		    catalog_table_get(r->c, "webtable", &t) != 0)
			r->failed++;
		else
			catalog_table_free(t);
	}
	return NULL;
}

static int
u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void
test_threads(struct catalog *remote)
{
	static struct racer r[4];
	uint64_t all[4 * 50];
	pthread_t th[4];
	int failed = 0, dup = 0;

	for (int i = 0; i < 4; i++) {
		r[i].c = remote;
		pthread_create(&th[i], NULL, race, &r[i]);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		failed += r[i].failed;
		memcpy(all + i * 50, r[i].numbers, sizeof(r[i].numbers));
	}
	qsort(all, 200, sizeof(all[0]), u64_cmp);
	for (int i = 1; i < 200; i++)
		dup += all[i] == all[i - 1];
	ok(failed == 0 && dup == 0, "four threads on one remote catalog: "
	    "no call failed, 200 distinct numbers (%d failed, %d repeated)",
	    failed, dup);
}

static double
elapsed_ms(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) * 1e3 +
	    (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

/* A root that stops answering, then one that listens but never speaks:
 * -ETIMEDOUT by the deadline. */
static void
test_silent(struct root *root)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	struct catalog *c;
	struct timespec t0;
	char address[64];
	uint64_t v;
	int fd, rc;

	c = remote_open(rpc_server_address(root->rpc), CALLER_A, 300);
	atomic_store(&root->stall_ms, 1500);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = catalog_next_number(c, &v);
	is_int(rc, -ETIMEDOUT, "a root that does not answer: -ETIMEDOUT");
	ok(elapsed_ms(&t0) < 1000, "within the deadline (%.0f ms of 300)",
	    elapsed_ms(&t0));
	ok(strstr(bt_error_detail(), "outcome is unknown") != NULL,
	    "a change: its outcome is unknown: %s", bt_error_detail());
	catalog_close(c);
	atomic_store(&root->stall_ms, 0);

	fd = socket(AF_INET, SOCK_STREAM, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(fd, 4) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) < 0)
		tap_bail("listen");
	snprintf(address, sizeof(address), "127.0.0.1:%u",
	    ntohs(sa.sin_port));
	c = remote_open(address, CALLER_A, 300);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = catalog_file_is_live(c, 1);
	is_int(rc, -ETIMEDOUT, "a port that never speaks: -ETIMEDOUT");
	ok(elapsed_ms(&t0) < 1000, "within the deadline (%.0f ms of 300)",
	    elapsed_ms(&t0));
	catalog_close(c);
	close(fd);
}

int
main(void)
{
	struct tstore ts;
	struct root root;
	struct catalog *local, *a, *stale, *b;
	struct timespec t0;
	uint64_t id, given = 0, after = 0;
	char address[64];
	int rc;

	for (size_t i = 0; i < sizeof(secret); i++)
		secret[i] = (uint8_t)(i * 7 + 1);
	tstore_posix(&ts, NULL);
	if (tstore_cell_skip(&ts, "the root's catalog is an embedded "
	    "store's"))
		return tap_done();
	local = server_catalog(api_store_server(ts.s));
	id = make_schema(ts.s, local);
	root_open(&root, ts.s);
	a = remote_open(rpc_server_address(root.rpc), CALLER_A, 5000);
	stale = remote_open(rpc_server_address(root.rpc), CALLER_STALE, 5000);
	b = remote_open(rpc_server_address(root.rpc), CALLER_B, 5000);

	test_reads(a, local, id);
	test_numbers(a, local);
	test_apply(ts.s, a, stale, b, local, id);
	test_refused(a);
	test_no_caller(root.svc);
	test_threads(b);
	test_silent(&root);

	/* The root's server restarts at the same address: the connection
	 * that a's calls used is closed under it, and its next idempotent
	 * call goes again on a new one. */
	snprintf(address, sizeof(address), "%s", rpc_server_address(root.rpc));
	rc = catalog_next_number(a, &given);
	ok(rc == 0 && given > 0, "a number before the root restarts: "
	    "%" PRIu64, given);
	root_close(&root);
	if ((rc = root_reopen(&root, ts.s, address)) < 0) {
		diag("cannot listen at %s again: %s", address,
		    bt_strerror(rc));
		service_free(root.svc);
	} else {
		same(catalog_text_table(a, "webtable", 0), catalog_text_table(local, "webtable",
		    0), "after the root's server restarted, a call succeeds "
		    "on a new connection");
		root_close(&root);
	}

	/* The root's server goes away: an error at once, not a hang. */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = catalog_table_get(a, "webtable", &(struct catalog_table *){0});
	ok(rc == -EIO, "a root that went away: -EIO (%d: %s)", rc,
	    bt_error_detail());
	ok(elapsed_ms(&t0) < 5000, "well within the deadline (%.0f ms)",
	    elapsed_ms(&t0));
	catalog_close(a);
	catalog_close(stale);
	catalog_close(b);

	/* What the remote next_number gave is durable: the store reopened
	 * gives higher numbers. */
	if (tstore_reopen(&ts) < 0)
		tap_bail("reopen");
	local = server_catalog(api_store_server(ts.s));
	rc = catalog_next_number(local, &after);
	ok(rc == 0 && after > given,
	    "after a reopen, numbers continue above the remote one's "
	    "(%" PRIu64 " > %" PRIu64 ")", after, given);
	tstore_destroy(&ts);
	return tap_done();
}
