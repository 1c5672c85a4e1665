/*
 * test_service_bulk.c - the service's bulk loads (BULK_OPEN, BULK_PUT,
 * BULK_COMMIT, BULK_ABORT; service.h), LAST_SEQ and SPACE, run through
 * service_handle_conn() on stores in the in-memory env and on the local
 * filesystem: a load commits whole and shows nothing before; it belongs
 * to the connection that opened it (another cannot reach it, and its
 * closing aborts it); a refused cell fails the load for good; at most
 * SERVICE_MAX_LOADS are open, and idle ones make room; allocation
 * failures leak nothing; LAST_SEQ is bt_store_last_seq() and SPACE
 * statvfs(3) of the store.
 */
#include <sys/statvfs.h>
#include <time.h>

#include "api_util.h"
#include "rpc/tabletfs.pb-c.h"
#include "tabletd/service.h"
#include "util/alloc.h"

#define M(name)	TABLETFS__METHOD__##name

static struct tstore tst;
static struct service *svc;

/* Pack req (NULL: no bytes) and run it on connection conn; the reply or
 * the error line in *reply. */
static int
call_conn(uint64_t conn, uint32_t method, const ProtobufCMessage *req,
    struct buf *reply)
{
	size_t n = req != NULL ? protobuf_c_message_get_packed_size(req) : 0;
	uint8_t *p = xmalloc(n + 1);
	int rc;

	if (req != NULL)
		protobuf_c_message_pack(req, p);
	buf_clear(reply);
	rc = service_handle_conn(svc, conn, method, slice_make(p, n), reply);
	free(p);
	if (rc < 0)
		diag("method %u on %llu: %d %.*s", method,
		    (unsigned long long)conn, rc, (int)reply->n, reply->p);
	return rc;
}

static int
call_rc(uint64_t conn, uint32_t method, const ProtobufCMessage *req)
{
	struct buf reply;
	int rc;

	buf_init(&reply);
	rc = call_conn(conn, method, req, &reply);
	if (rc == 0 && reply.n != 0)
		rc = 1000;	/* an Empty reply with bytes */
	buf_release(&reply);
	return rc;
}

/* BULK_OPEN of table on conn: the reply (free with msg_free), or NULL
 * with *rcp. */
static Tabletfs__BulkOpenReply *
bulk_open(uint64_t conn, const char *table, int *rcp)
{
	Tabletfs__BulkOpenRequest r = TABLETFS__BULK_OPEN_REQUEST__INIT;
	Tabletfs__BulkOpenReply *rep = NULL;
	struct buf reply;

	r.table = (char *)table;
	buf_init(&reply);
	*rcp = call_conn(conn, M(BULK_OPEN), &r.base, &reply);
	if (*rcp == 0 && (rep = tabletfs__bulk_open_reply__unpack(NULL,
	    reply.n, reply.p)) == NULL)
		*rcp = 1001;
	buf_release(&reply);
	return rep;
}

static void
msg_free(void *m)
{
	if (m != NULL)
		protobuf_c_message_free_unpacked(m, NULL);
}

/* BULK_PUT of one cell row/family:q@ts=value into load id on conn. */
static int
bulk_put(uint64_t conn, uint64_t id, const char *row, const char *family,
    int64_t ts, const char *value)
{
	Tabletfs__Cell c = TABLETFS__CELL__INIT, *cp = &c;
	Tabletfs__Row r = TABLETFS__ROW__INIT, *rp = &r;
	Tabletfs__BulkPutRequest p = TABLETFS__BULK_PUT_REQUEST__INIT;

	c.family = (char *)family;
	c.has_qualifier = c.has_value = true;
	c.qualifier = (ProtobufCBinaryData){ 1, (uint8_t *)"q" };
	c.value = (ProtobufCBinaryData){ strlen(value), (uint8_t *)value };
	c.has_ts = ts >= 0;
	c.ts = ts;
	r.has_key = true;
	r.key = (ProtobufCBinaryData){ strlen(row), (uint8_t *)row };
	r.n_cells = 1;
	r.cells = &cp;
	p.has_bulk_id = true;
	p.bulk_id = id;
	p.n_rows = 1;
	p.rows = &rp;
	return call_rc(conn, M(BULK_PUT), &p.base);
}

/* BULK_COMMIT (or, abort, BULK_ABORT) of load id on conn; *cells the
 * cells written when committed. */
static int
bulk_end(uint64_t conn, uint64_t id, bool abort, uint64_t *cells)
{
	Tabletfs__BulkRequest r = TABLETFS__BULK_REQUEST__INIT;
	Tabletfs__BulkCommitReply *rep;
	struct buf reply;
	int rc;

	r.has_bulk_id = true;
	r.bulk_id = id;
	if (abort)
		return call_rc(conn, M(BULK_ABORT), &r.base);
	buf_init(&reply);
	rc = call_conn(conn, M(BULK_COMMIT), &r.base, &reply);
	if (rc == 0) {
		rep = tabletfs__bulk_commit_reply__unpack(NULL, reply.n,
		    reply.p);
		if (rep == NULL)
			rc = 1001;
		else if (cells != NULL)
			*cells = rep->cells;
		msg_free(rep);
	}
	buf_release(&reply);
	return rc;
}

static bool
row_absent(const char *row)
{
	char *text = read_text_str(tst.s, "t", row, NULL);
	bool absent = strcmp(text, "NOTFOUND") == 0 || text[0] == '\0';

	if (!absent)
		diag("row %s: %s", row, text);
	free(text);
	return absent;
}

static void
test_commit(void)
{
	Tabletfs__BulkOpenReply *o;
	uint64_t cells = 0;
	char *text;
	int rc;

	o = bulk_open(1, "t", &rc);
	ok(rc == 0 && o->has_bulk_id && o->bulk_id != 0,
	    "BULK_OPEN gives a load id");
	if (o == NULL)
		tap_bail("no load");
	ok(o->n_families == 2 && strcmp(o->families[0], "a") == 0 &&
	    strcmp(o->families[1], "b") == 0, "and the table's families");
	is_int(o->max_cell, BT_DEFAULT_MAX_CELL, "and the store's max_cell");
	is_int(service_load_count(svc), 1, "one load open");
	is_int(bulk_put(1, o->bulk_id, "r1", "a", 5, "one"), 0, "BULK_PUT");
	is_int(bulk_put(1, o->bulk_id, "r2", "b", -1, "two"), 0,
	    "BULK_PUT of a cell without a timestamp");
	ok(row_absent("r1"), "nothing of the load is visible before its "
	    "commit");
	is_int(bulk_put(2, o->bulk_id, "r3", "a", 5, "other"), -ENOENT,
	    "another connection cannot put into it: -ENOENT");
	is_int(bulk_end(2, o->bulk_id, false, NULL), -ENOENT,
	    "nor commit it");
	is_int(bulk_end(2, o->bulk_id, true, NULL), 0,
	    "its BULK_ABORT answers 0, and aborts nothing");
	is_int(bulk_end(1, o->bulk_id, false, &cells), 0, "BULK_COMMIT");
	is_int(cells, 2, "of the two cells");
	text = read_text_str(tst.s, "t", "r1", NULL);
	is_str(text, "a:q@5=one\n", "the load is visible after its commit");
	free(text);
	ok(row_absent("r3"), "without the other connection's cell");
	is_int(service_load_count(svc), 0, "the load is forgotten");
	is_int(bulk_end(1, o->bulk_id, false, NULL), -ENOENT,
	    "a second BULK_COMMIT: -ENOENT");
	msg_free(o);
}

static void
test_failed(void)
{
	Tabletfs__BulkOpenReply *o;
	int rc;

	o = bulk_open(1, "nosuch", &rc);
	is_int(rc, -ENOENT, "BULK_OPEN of an unknown table: -ENOENT");
	msg_free(o);
	o = bulk_open(1, NULL, &rc);
	is_int(rc, -EINVAL, "BULK_OPEN without a table: -EINVAL");
	msg_free(o);

	o = bulk_open(1, "t", &rc);
	if (o == NULL)
		tap_bail("no load");
	is_int(bulk_put(1, o->bulk_id, "f1", "a", 1, "good"), 0, "a good put");
	is_int(bulk_put(1, o->bulk_id, "f2", "nofam", 1, "bad"), -ENOENT,
	    "a cell of no family: -ENOENT");
	is_int(bulk_put(1, o->bulk_id, "f3", "a", 1, "good"), -ENOENT,
	    "fails the load: the next put returns it again");
	is_int(bulk_end(1, o->bulk_id, false, NULL), -ENOENT,
	    "and so does the commit");
	ok(row_absent("f1") && row_absent("f3"), "nothing of a failed load "
	    "is visible");
	is_int(service_load_count(svc), 0, "the committed (failed) load is "
	    "forgotten");
	msg_free(o);

	o = bulk_open(3, "t", &rc);
	if (o == NULL)
		tap_bail("no load");
	is_int(bulk_put(3, o->bulk_id, "c1", "a", 1, "v"), 0, "a put on "
	    "connection 3");
	service_conn_closed(svc, 4);
	is_int(service_load_count(svc), 1, "another connection's closing "
	    "leaves the load");
	service_conn_closed(svc, 3);
	is_int(service_load_count(svc), 0, "its own connection's closing "
	    "aborts it");
	is_int(bulk_end(3, o->bulk_id, false, NULL), -ENOENT, "it cannot be "
	    "committed then");
	ok(row_absent("c1"), "and nothing of it is visible");
	msg_free(o);
}

static void
pause_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static void
test_limit(void)
{
	Tabletfs__BulkOpenReply *o[SERVICE_MAX_LOADS], *extra;
	bool all = true;
	int rc;

	for (int i = 0; i < SERVICE_MAX_LOADS; i++) {
		o[i] = bulk_open(5, "t", &rc);
		all &= rc == 0;
	}
	ok(all, "%d loads open", SERVICE_MAX_LOADS);
	extra = bulk_open(6, "t", &rc);
	is_int(rc, -EBUSY, "one more: -EBUSY");
	msg_free(extra);
	is_int(bulk_end(5, o[0]->bulk_id, true, NULL), 0, "BULK_ABORT of one");
	extra = bulk_open(6, "t", &rc);
	is_int(rc, 0, "makes room for another");
	msg_free(extra);
	/* The service's idle time here is 1.5 s. */
	pause_ms(1600);
	extra = bulk_open(7, "t", &rc);
	is_int(rc, 0, "loads left idle make room too");
	is_int(service_load_count(svc), 1, "they were aborted");
	is_int(bulk_put(5, o[1]->bulk_id, "i1", "a", 1, "v"), -ENOENT,
	    "an idle load aborted is -ENOENT");
	service_conn_closed(svc, 7);
	for (int i = 0; i < SERVICE_MAX_LOADS; i++)
		msg_free(o[i]);
	msg_free(extra);
}

/* Fail each allocation of a BULK_OPEN, a BULK_PUT and a BULK_COMMIT in
 * turn: -ENOMEM, nothing leaked (valgrind), and the load still works. */
static void
test_enomem(void)
{
	Tabletfs__BulkOpenReply *o = NULL;
	bool all = true;
	uint64_t cells = 0;
	int n, rc = -ENOMEM;

	for (n = 1; n < 1000 && rc != 0; n++) {
		bt_alloc_fail_after(n);
		o = bulk_open(8, "t", &rc);
		bt_alloc_fail_after(0);
		if (rc != 0 && rc != -ENOMEM)
			all = false;
		if (rc != 0)
			all &= service_load_count(svc) == 0;
	}
	ok(all && rc == 0 && n > 2, "BULK_OPEN: -ENOMEM for each of %d "
	    "allocations, no load left", n - 2);
	if (o == NULL)
		tap_bail("no load");
	rc = -ENOMEM;
	for (n = 1; n < 1000 && rc != 0; n++) {
		bt_alloc_fail_after(n);
		rc = bulk_put(8, o->bulk_id, "m1", "a", 1, "v");
		bt_alloc_fail_after(0);
		if (rc == -ENOMEM)
			break;
	}
	ok(rc == -ENOMEM || rc == 0, "BULK_PUT under a failing allocation: "
	    "%d", rc);
	/* A put that failed before it reached the load (unpacking) left
	 * the load as it was; one that failed in it failed the load. */
	rc = bulk_end(8, o->bulk_id, false, &cells);
	ok((rc == -ENOMEM) || (rc == 0 && cells == 0), "then the commit "
	    "fails, or commits without that cell (%d, %llu cells)", rc,
	    (unsigned long long)cells);
	is_int(service_load_count(svc), 0, "no load is left");
	msg_free(o);
}

static void
test_last_seq(void)
{
	Tabletfs__LastSeqReply *r;
	struct buf reply;
	uint64_t before;

	buf_init(&reply);
	is_int(call_conn(0, M(LAST_SEQ), NULL, &reply), 0, "LAST_SEQ");
	r = tabletfs__last_seq_reply__unpack(NULL, reply.n, reply.p);
	ok(r != NULL && r->has_last_seq &&
	    r->last_seq == bt_store_last_seq(tst.s),
	    "LAST_SEQ is bt_store_last_seq()");
	before = r != NULL ? r->last_seq : 0;
	msg_free(r);
	if (put_str(tst.s, "t", "s1", "a", "q", 1, "v") != 0)
		tap_bail("cannot write");
	is_int(call_conn(0, M(LAST_SEQ), NULL, &reply), 0, "LAST_SEQ again");
	r = tabletfs__last_seq_reply__unpack(NULL, reply.n, reply.p);
	ok(r != NULL && r->last_seq > before, "a write advances it");
	msg_free(r);
	ok(service_method_short(M(LAST_SEQ)), "LAST_SEQ runs on the "
	    "connection's reader");
	buf_release(&reply);
}

/* SPACE of the store in s: 0, the reply in *out. */
static int
space_of(struct service *s, Tabletfs__SpaceReply **out)
{
	struct buf reply;
	int rc;

	buf_init(&reply);
	rc = service_handle(s, M(SPACE), slice_make("", 0), &reply);
	*out = rc == 0 ? tabletfs__space_reply__unpack(NULL, reply.n,
	    reply.p) : NULL;
	buf_release(&reply);
	return rc != 0 ? rc : *out == NULL ? 1001 : 0;
}

static void
test_space(void)
{
	struct tstore pt;
	struct service *ps;
	Tabletfs__SpaceReply *r;
	struct statvfs sv;
	struct bt_space sp;
	uint64_t total;

	is_int(space_of(svc, &r), 0, "SPACE in the in-memory env");
	ok(r != NULL && r->total_bytes == 0 && r->block_size == 4096,
	    "its size is not known: 0");
	msg_free(r);

	tstore_posix(&pt, NULL);
	if (service_new(pt.s, &ps) != 0)
		tap_bail("service_new");
	is_int(bt_store_space(pt.s, &sp), 0, "bt_store_space on the local "
	    "filesystem");
	if (statvfs(pt.path, &sv) != 0)
		tap_bail("statvfs");
	total = (uint64_t)sv.f_blocks * sv.f_frsize;
	ok(sp.total_bytes == total && sp.block_size == sv.f_frsize &&
	    sp.available_bytes <= sp.free_bytes && sp.free_bytes <= total &&
	    total > 0, "is statvfs(3) of the store");
	is_int(space_of(ps, &r), 0, "SPACE");
	ok(r != NULL && r->total_bytes == total &&
	    r->block_size == sp.block_size && r->free_bytes > 0,
	    "replies the same figures");
	msg_free(r);
	service_free(ps);
	tstore_destroy(&pt);
}

int
main(void)
{
	struct bt_family_spec fams[] = { { "a", NULL, NULL },
	    { "b", NULL, NULL } };
	struct service_options so = { .load_idle_ms = 1500 };

	tstore_fault(&tst, NULL);
	if (tstore_cell_skip(&tst, "runs the service on its own store"))
		return tap_done();
	if (bt_table_create(tst.s, "t", fams, 2, NULL, 0, 0) != 0)
		tap_bail("cannot create the table");
	if (service_new_with(tst.s, &so, &svc) != 0)
		tap_bail("service_new");
	test_commit();
	test_failed();
	test_limit();
	test_enomem();
	test_last_seq();
	test_space();
	/* Loads still open go with the service. */
	{
		int rc;

		msg_free(bulk_open(9, "t", &rc));
		is_int(service_load_count(svc), 1, "a load left open");
	}
	service_free(svc);
	tstore_destroy(&tst);
	return tap_done();
}
