/*
 * test_cell_route.c - a cell client's calls routed by tablet
 * (api/cell_client.h, "Calls on rows"; docs/design.md section 5), against
 * RPC servers on loopback written here: a root that answers LOCATE from
 * a tablet map the test changes, and two tablet servers that answer
 * MUTATE_ROW, MUTATE_ROWS, READ_ROW, SCAN and LAST_SEQ for the tablets
 * the map gives them and BT_ENOTSERVING for the rest (the rows live in
 * one store the servers share, as a cell's storage is shared).
 *
 * Proves: each row's call reaches its tablet's server; prefetch (calls
 * in three tablets cost one LOCATE); after a move the old server's
 * BT_ENOTSERVING relocates the call; a dead server makes an idempotent
 * call relocate; a server-stamped put lost after it was sent is -EIO,
 * outcome unknown; a scan over three tablets on two servers returns
 * every row once, in order, with and without a limit, and when its
 * server dies before it or in the middle of a tablet; MUTATE_ROWS split by server with statuses in the caller's
 * order; LAST_SEQ changes with any server's; a root that answers LOCATE
 * with -ENOSYS or -EOPNOTSUPP gets every call, as before LOCATE.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "api/api_cell.h"
#include "api/cell_client.h"
#include "rpc/rpc.h"
#include "rpc/rpc_pb.h"
#include "rpc/tabletfs.pb-c.h"
#include "tablet/cells.h"
#include "tap.h"
#include "util/buf.h"
#include "util/error.h"

#define TABLE "t"
#define TABLE_ID 7
#define KEY_MAX 32
#define ROWS_MAX 256
#define SCANNERS_MAX 16

enum who { ROOT, A, B, SERVERS };

/* The cell as the test makes it: the tablet map, the shared rows, and
 * what each server counted. */
struct tablet {
	uint64_t id;
	const char *start, *end;	/* "" end: to the end */
	enum who server;		/* who serves it; SERVERS: none */
};

struct scanner {
	uint64_t id;			/* 0: free */
	char last[KEY_MAX];
	bool exclusive;
	char end[KEY_MAX];
};

struct server {
	struct fixture *f;
	enum who who;
	struct rpc_server *rpc;
	char address[64];
	atomic_int calls;		/* row calls answered (not refused) */
	atomic_int refused;		/* BT_ENOTSERVING given */
	atomic_int locates;
	atomic_int scans_opened;
	uint64_t last_seq;
	struct scanner scanners[SCANNERS_MAX];
	atomic_int unnamed;		/* row calls without the table's id */
	atomic_bool stall;		/* MUTATE_ROW: take it, then stall */
	atomic_bool stalled;
};

struct fixture {
	pthread_mutex_t mu;		/* guards all below and servers' */
	struct tablet tablets[8];
	size_t tablet_count;
	int locate_status;		/* nonzero: the root answers it */
	bool root_whole;		/* the root serves every row */
	uint32_t batch_cap;		/* a scan's rows per batch; 0: any */
	char rows[ROWS_MAX][KEY_MAX];
	char values[ROWS_MAX][KEY_MAX];
	size_t row_count;
	uint64_t next_scanner;
	struct server servers[SERVERS];
};

static uint8_t secret[RPC_SECRET_SIZE] = "the test cell's secret, 32 byte";

static void
key_of(ProtobufCBinaryData b, char out[KEY_MAX])
{
	size_t n = b.len < KEY_MAX - 1 ? b.len : KEY_MAX - 1;

	if (n > 0)	/* an empty field's data may be NULL */
		memcpy(out, b.data, n);
	out[n] = '\0';
}

/* The tablet holding row.  Caller holds mu. */
static struct tablet *
tablet_of(struct fixture *f, const char *row)
{
	for (size_t i = 0; i < f->tablet_count; i++) {
		struct tablet *t = &f->tablets[i];

		if (strcmp(row, t->start) >= 0 && (t->end[0] == '\0' ||
		    strcmp(row, t->end) < 0))
			return t;
	}
	return NULL;
}

static bool
serves(struct server *s, const char *row)
{
	struct tablet *t;

	if (s->who == ROOT)
		return s->f->root_whole;
	return (t = tablet_of(s->f, row)) != NULL && t->server == s->who;
}

/* The index of row in the store, or where it would go. */
static size_t
row_index(struct fixture *f, const char *row, bool *found)
{
	size_t i = 0;

	while (i < f->row_count && strcmp(f->rows[i], row) < 0)
		i++;
	*found = i < f->row_count && strcmp(f->rows[i], row) == 0;
	return i;
}

static void
row_put(struct server *s, const char *row, ProtobufCBinaryData value)
{
	struct fixture *f = s->f;
	bool found;
	size_t i = row_index(f, row, &found);

	if (!found) {
		memmove(f->rows[i + 1], f->rows[i], (f->row_count - i) *
		    KEY_MAX);
		memmove(f->values[i + 1], f->values[i], (f->row_count - i) *
		    KEY_MAX);
		f->row_count++;
		snprintf(f->rows[i], KEY_MAX, "%s", row);
	}
	key_of(value, f->values[i]);
	s->last_seq++;
}

static int
pack(const ProtobufCMessage *m, struct buf *reply)
{
	size_t n = protobuf_c_message_get_packed_size(m);
	int rc;

	if ((rc = buf_reserve(reply, n)) < 0)
		return rc;
	protobuf_c_message_pack(m, reply->p + reply->n);
	reply->n += n;
	return 0;
}

static int
handle_locate(struct server *s, struct slice req, struct buf *reply)
{
	struct fixture *f = s->f;
	Tabletfs__LocateRequest *in;
	Tabletfs__LocateReply out = TABLETFS__LOCATE_REPLY__INIT;
	Tabletfs__TabletLocation locs[8], *locp[8];
	char row[KEY_MAX];
	size_t first = 0, n = 0;

	atomic_fetch_add(&s->locates, 1);
	if (f->locate_status != 0)
		return f->locate_status;
	in = tabletfs__locate_request__unpack(&rpc_pb_allocator, req.n, req.p);
	if (in == NULL)
		return -EPROTO;
	key_of(in->row, row);
	while (first < f->tablet_count && f->tablets[first].end[0] != '\0' &&
	    strcmp(row, f->tablets[first].end) >= 0)
		first++;
	for (size_t i = first; i < f->tablet_count &&
	    n < (in->count ? in->count : 1); i++, n++) {
		const struct tablet *t = &f->tablets[i];

		tabletfs__tablet_location__init(&locs[n]);
		locs[n].has_id = locs[n].has_start = locs[n].has_end = true;
		locs[n].id = t->id;
		locs[n].start.data = (uint8_t *)t->start;
		locs[n].start.len = strlen(t->start);
		locs[n].end.data = (uint8_t *)t->end;
		locs[n].end.len = strlen(t->end);
		locs[n].server = t->server == SERVERS ? "" :
		    f->servers[t->server].address;
		locp[n] = &locs[n];
	}
	tabletfs__locate_request__free_unpacked(in, &rpc_pb_allocator);
	out.has_table_id = true;
	out.table_id = TABLE_ID;
	out.n_tablets = n;
	out.tablets = locp;
	return pack(&out.base, reply);
}

/* A call on rows must name the table's id as LOCATE gave it (a whole
 * store's server, located by no LOCATE, is given none). */
static void
id_note(struct server *s, protobuf_c_boolean has, uint64_t id)
{
	if (s->f->root_whole ? has : (!has || id != TABLE_ID))
		atomic_fetch_add(&s->unnamed, 1);
}

static int
handle_mutate_row(struct server *s, struct slice req, struct buf *reply)
{
	Tabletfs__MutateRowRequest *in;
	Tabletfs__MutateRowReply out = TABLETFS__MUTATE_ROW_REPLY__INIT;
	char row[KEY_MAX];
	bool stall = false;

	in = tabletfs__mutate_row_request__unpack(&rpc_pb_allocator, req.n,
	    req.p);
	if (in == NULL)
		return -EPROTO;
	id_note(s, in->has_table_id, in->table_id);
	key_of(in->row, row);
	if (!serves(s, row)) {
		tabletfs__mutate_row_request__free_unpacked(in,
		    &rpc_pb_allocator);
		atomic_fetch_add(&s->refused, 1);
		return BT_ENOTSERVING;
	}
	atomic_fetch_add(&s->calls, 1);
	row_put(s, row, in->mutations[0]->value);
	tabletfs__mutate_row_request__free_unpacked(in, &rpc_pb_allocator);
	stall = atomic_exchange(&s->stall, false);
	if (stall) {		/* applied; the reply never leaves */
		pthread_mutex_unlock(&s->f->mu);
		atomic_store(&s->stalled, true);
		usleep(500 * 1000);
		pthread_mutex_lock(&s->f->mu);
	}
	out.has_applied = out.has_stamp = true;
	out.applied = true;
	out.stamp = 1;
	return pack(&out.base, reply);
}

static int
handle_mutate_rows(struct server *s, struct slice req, struct buf *reply)
{
	Tabletfs__MutateRowsRequest *in;
	Tabletfs__MutateRowsReply out = TABLETFS__MUTATE_ROWS_REPLY__INIT;
	int32_t status[ROWS_MAX];
	char row[KEY_MAX];
	int rc;

	in = tabletfs__mutate_rows_request__unpack(&rpc_pb_allocator, req.n,
	    req.p);
	if (in == NULL || in->n_entries > ROWS_MAX)
		return -EPROTO;
	id_note(s, in->has_table_id, in->table_id);
	atomic_fetch_add(&s->calls, 1);
	for (size_t i = 0; i < in->n_entries; i++) {
		key_of(in->entries[i]->row, row);
		status[i] = 0;
		if (!serves(s, row)) {
			status[i] = BT_ENOTSERVING;
			atomic_fetch_add(&s->refused, 1);
		} else if (strcmp(row, "bad") == 0) {
			status[i] = -EINVAL;
		} else {
			row_put(s, row, in->entries[i]->mutations[0]->value);
		}
	}
	out.n_status = in->n_entries;
	out.status = status;
	out.detail = "a bad row";
	rc = pack(&out.base, reply);
	tabletfs__mutate_rows_request__free_unpacked(in, &rpc_pb_allocator);
	return rc;
}

static int
handle_read_row(struct server *s, struct slice req, struct buf *reply)
{
	struct fixture *f = s->f;
	Tabletfs__ReadRowRequest *in;
	Tabletfs__ReadRowReply out = TABLETFS__READ_ROW_REPLY__INIT;
	Tabletfs__Row r = TABLETFS__ROW__INIT;
	Tabletfs__Cell cell = TABLETFS__CELL__INIT, *cellp = &cell;
	char row[KEY_MAX];
	bool found;
	size_t i;

	in = tabletfs__read_row_request__unpack(&rpc_pb_allocator, req.n,
	    req.p);
	if (in == NULL)
		return -EPROTO;
	id_note(s, in->has_table_id, in->table_id);
	key_of(in->row, row);
	tabletfs__read_row_request__free_unpacked(in, &rpc_pb_allocator);
	if (!serves(s, row)) {
		atomic_fetch_add(&s->refused, 1);
		return BT_ENOTSERVING;
	}
	atomic_fetch_add(&s->calls, 1);
	i = row_index(f, row, &found);
	out.has_found = true;
	out.found = found;
	if (found) {
		r.has_key = true;
		r.key.data = (uint8_t *)f->rows[i];
		r.key.len = strlen(f->rows[i]);
		cell.family = "f";
		cell.has_value = true;
		cell.value.data = (uint8_t *)f->values[i];
		cell.value.len = strlen(f->values[i]);
		r.n_cells = 1;
		r.cells = &cellp;
		out.row = &r;
	}
	return pack(&out.base, reply);
}

/* A scan's next batch from sc, closing it when done. */
static int
scan_batch(struct server *s, struct scanner *sc, uint32_t batch_rows,
    struct buf *reply)
{
	struct fixture *f = s->f;
	Tabletfs__ScanReply out = TABLETFS__SCAN_REPLY__INIT;
	Tabletfs__Row rows[ROWS_MAX], *rowp[ROWS_MAX];
	size_t n = 0, i = 0;

	if (batch_rows == 0)
		batch_rows = 100;
	if (f->batch_cap != 0 && batch_rows > f->batch_cap)
		batch_rows = f->batch_cap;
	while (i < f->row_count && (strcmp(f->rows[i], sc->last) < 0 ||
	    (sc->exclusive && strcmp(f->rows[i], sc->last) == 0)))
		i++;
	for (; i < f->row_count && n < batch_rows && (sc->end[0] == '\0' ||
	    strcmp(f->rows[i], sc->end) < 0); i++, n++) {
		tabletfs__row__init(&rows[n]);
		rows[n].has_key = true;
		rows[n].key.data = (uint8_t *)f->rows[i];
		rows[n].key.len = strlen(f->rows[i]);
		rowp[n] = &rows[n];
		snprintf(sc->last, KEY_MAX, "%s", f->rows[i]);
		sc->exclusive = true;
	}
	out.has_scanner_id = out.has_done = true;
	out.scanner_id = sc->id;
	out.done = i == f->row_count || (sc->end[0] != '\0' &&
	    strcmp(f->rows[i], sc->end) >= 0);
	out.n_rows = n;
	out.rows = rowp;
	if (out.done)
		sc->id = 0;
	return pack(&out.base, reply);
}

static int
handle_scan(struct server *s, struct slice req, struct buf *reply)
{
	struct fixture *f = s->f;
	Tabletfs__ScanRequest *in;
	struct scanner *sc = NULL;
	struct tablet *t;
	char start[KEY_MAX], end[KEY_MAX];
	uint32_t batch;

	in = tabletfs__scan_request__unpack(&rpc_pb_allocator, req.n, req.p);
	if (in == NULL)
		return -EPROTO;
	batch = in->batch_rows;
	if (in->scanner_id != 0) {
		for (size_t i = 0; i < SCANNERS_MAX; i++)
			if (s->scanners[i].id == in->scanner_id)
				sc = &s->scanners[i];
		tabletfs__scan_request__free_unpacked(in, &rpc_pb_allocator);
		return sc != NULL ? scan_batch(s, sc, batch, reply) :
		    BT_ENOTSERVING;
	}
	id_note(s, in->has_table_id, in->table_id);
	key_of(in->start, start);
	key_of(in->end, end);
	/* A tablet server scans within one tablet it serves. */
	t = tablet_of(f, start);
	if (s->who != ROOT && (t == NULL || t->server != s->who ||
	    (t->end[0] != '\0' && (end[0] == '\0' ||
	    strcmp(end, t->end) > 0)))) {
		tabletfs__scan_request__free_unpacked(in, &rpc_pb_allocator);
		atomic_fetch_add(&s->refused, 1);
		return BT_ENOTSERVING;
	}
	for (size_t i = 0; i < SCANNERS_MAX && sc == NULL; i++)
		if (s->scanners[i].id == 0)
			sc = &s->scanners[i];
	if (sc == NULL)
		return -EBUSY;
	sc->id = ++f->next_scanner;
	snprintf(sc->last, KEY_MAX, "%s", start);
	snprintf(sc->end, KEY_MAX, "%s", end);
	sc->exclusive = in->start_exclusive;
	tabletfs__scan_request__free_unpacked(in, &rpc_pb_allocator);
	atomic_fetch_add(&s->scans_opened, 1);
	return scan_batch(s, sc, batch, reply);
}

static int
handle_last_seq(struct server *s, struct buf *reply)
{
	Tabletfs__LastSeqReply out = TABLETFS__LAST_SEQ_REPLY__INIT;

	out.has_last_seq = true;
	out.last_seq = s->last_seq;
	return pack(&out.base, reply);
}

static int
handle(void *arg, const struct rpc_call *call, struct slice req,
    struct buf *reply)
{
	struct server *s = arg;
	int rc;

	pthread_mutex_lock(&s->f->mu);
	switch (call->method) {
	case TABLETFS__METHOD__LOCATE:
		rc = s->who == ROOT ? handle_locate(s, req, reply) : -ENOSYS;
		break;
	case TABLETFS__METHOD__MUTATE_ROW:
		rc = handle_mutate_row(s, req, reply);
		break;
	case TABLETFS__METHOD__MUTATE_ROWS:
		rc = handle_mutate_rows(s, req, reply);
		break;
	case TABLETFS__METHOD__READ_ROW:
		rc = handle_read_row(s, req, reply);
		break;
	case TABLETFS__METHOD__SCAN:
		rc = handle_scan(s, req, reply);
		break;
	case TABLETFS__METHOD__SCAN_CLOSE:
		rc = 0;
		break;
	case TABLETFS__METHOD__LAST_SEQ:
		rc = handle_last_seq(s, reply);
		break;
	default:
		rc = -ENOSYS;
	}
	pthread_mutex_unlock(&s->f->mu);
	return rc;
}

static void
server_start(struct fixture *f, enum who who, const char *address)
{
	struct server *s = &f->servers[who];
	struct rpc_server_options opts = { .secret = secret,
	    .send_timeout_ms = 1000 };

	s->f = f;
	s->who = who;
	if (rpc_server_open(address, &opts, handle, s, &s->rpc) != 0)
		tap_bail("rpc_server_open");
	snprintf(s->address, sizeof(s->address), "%s",
	    rpc_server_address(s->rpc));
}

static void
server_stop(struct fixture *f, enum who who)
{
	rpc_server_close(f->servers[who].rpc);
	f->servers[who].rpc = NULL;
}

/* Three tablets on two servers: [, g) on A, [g, p) on B, [p, ) on A. */
static struct fixture *
fixture_new(void)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (f == NULL)
		tap_bail("calloc");
	pthread_mutex_init(&f->mu, NULL);
	f->tablets[0] = (struct tablet){ 11, "", "g", A };
	f->tablets[1] = (struct tablet){ 12, "g", "p", B };
	f->tablets[2] = (struct tablet){ 13, "p", "", A };
	f->tablet_count = 3;
	for (enum who w = ROOT; w < SERVERS; w++)
		server_start(f, w, "127.0.0.1:0");
	return f;
}

static void
fixture_free(struct fixture *f)
{
	int unnamed = 0;

	for (enum who w = ROOT; w < SERVERS; w++) {
		rpc_server_close(f->servers[w].rpc);
		unnamed += atomic_load(&f->servers[w].unnamed);
	}
	is_int(unnamed, 0, "every call on rows named the table's id that "
	    "LOCATE gave");
	pthread_mutex_destroy(&f->mu);
	free(f);
}

static struct cell_client *
client_open(struct fixture *f, uint32_t deadline_ms)
{
	struct cell_client *c;

	if (cell_client_open_at(f->servers[ROOT].address, secret,
	    deadline_ms, &c) != 0)
		tap_bail("cell_client_open_at");
	return c;
}

static int
put(struct cell_client *c, const char *row, const char *value, bool stamp)
{
	struct bt_mutation m = { .kind = BT_PUT, .family = "f",
	    .ts = stamp ? BT_TS_SERVER : 5,
	    .value = { value, strlen(value) } };

	return cell_mutate_row(c, TABLE, (struct bt_bytes){ row, strlen(row) },
	    &m, 1, false, false, NULL, (struct bt_bytes){ NULL, 0 }, NULL, -1,
	    NULL, NULL);
}

/* The value read for row, "" when absent, "!" on an error. */
static const char *
get(struct cell_client *c, const char *row, char out[KEY_MAX])
{
	struct cells_row r;
	int rc;

	cells_row_init(&r);
	rc = cell_read_row(c, TABLE, (struct bt_bytes){ row, strlen(row) },
	    NULL, &r);
	snprintf(out, KEY_MAX, "%s", rc == BT_NOTFOUND ? "" : rc < 0 ? "!" :
	    r.count != 1 ? "?" : "ok");
	if (rc == 0 && r.count == 1) {
		struct cell cell;

		cells_row_get(&r, 0, &cell);
		snprintf(out, KEY_MAX, "%.*s", (int)cell.value.n,
		    (const char *)cell.value.p);
	}
	cells_row_release(&r);
	return out;
}

static int
calls(struct fixture *f, enum who w)
{
	return atomic_load(&f->servers[w].calls);
}

static void
test_routes_and_prefetch(void)
{
	struct fixture *f = fixture_new();
	struct cell_client *c = client_open(f, 5000);
	char v[KEY_MAX];

	is_int(put(c, "a", "va", false), 0, "a put in the first tablet");
	is_int(cell_client_locates(c), 1, "costs one LOCATE");
	is_int(put(c, "h", "vh", false), 0, "a put in the second");
	is_int(put(c, "q", "vq", false), 0, "a put in the third");
	is_int(cell_client_locates(c), 1, "the others were prefetched: still "
	    "one LOCATE for three tablets");
	is_int(calls(f, A), 2, "A took the rows of its two tablets");
	is_int(calls(f, B), 1, "B took the row of its one");
	is_int(atomic_load(&f->servers[ROOT].calls), 0, "the root took none");
	ok(strcmp(get(c, "h", v), "vh") == 0, "h reads back from B (%s)", v);
	ok(strcmp(get(c, "zz", v), "") == 0, "a row never written: absent");
	is_int(atomic_load(&f->servers[A].refused) +
	    atomic_load(&f->servers[B].refused), 0, "nothing was refused");
	cell_client_close(c);
	fixture_free(f);
}

static void
test_move(void)
{
	struct fixture *f = fixture_new();
	struct cell_client *c = client_open(f, 5000);
	char v[KEY_MAX];

	is_int(put(c, "h", "v1", false), 0, "h put at B");
	pthread_mutex_lock(&f->mu);
	f->tablets[1].server = A;	/* the master moved [g, p) to A */
	pthread_mutex_unlock(&f->mu);
	is_int(put(c, "h", "v2", true), 0, "after the move, a stamped put "
	    "(not idempotent: it was refused, so certainly not applied)");
	is_int(atomic_load(&f->servers[B].refused), 1, "B refused it once");
	is_int(cell_client_locates(c), 2, "and it was located again");
	ok(strcmp(get(c, "h", v), "v2") == 0, "A serves it now (%s)", v);
	is_int(calls(f, A), 2, "A took the put and the read");

	pthread_mutex_lock(&f->mu);
	f->tablets[1].server = SERVERS;	/* unassigned a while */
	f->tablets[1].id = 14;
	pthread_mutex_unlock(&f->mu);
	f->servers[A].stall = false;
	{
		struct cell_client *c2 = client_open(f, 300);

		is_int(put(c2, "h", "v3", false), -ETIMEDOUT, "a tablet that "
		    "no server takes: located again until the deadline");
		ok(cell_client_locates(c2) > 2, "several LOCATEs (%d)",
		    (int)cell_client_locates(c2));
		cell_client_close(c2);
	}
	cell_client_close(c);
	fixture_free(f);
}

/* Stop A once a put is in (a thread). */
static void *
stop_a_when_stalled(void *arg)
{
	struct fixture *f = arg;

	while (!atomic_load(&f->servers[A].stalled))
		usleep(1000);
	server_stop(f, A);
	return NULL;
}

static void
test_dead_server(void)
{
	struct fixture *f = fixture_new();
	struct cell_client *c = client_open(f, 5000);
	char v[KEY_MAX];

	is_int(put(c, "h", "vh", false), 0, "h put at B");
	server_stop(f, B);
	pthread_mutex_lock(&f->mu);
	f->tablets[1].server = A;	/* B's tablet given to A */
	pthread_mutex_unlock(&f->mu);
	ok(strcmp(get(c, "h", v), "vh") == 0, "with B dead, a read (idempotent) "
	    "relocates to A (%s)", v);
	is_int(put(c, "i", "vi", false), 0, "and so does a put at a time");
	is_int(calls(f, A), 2, "A took both");

	/* A stamped put that A applies and then never answers. */
	atomic_store(&f->servers[A].stall, true);
	atomic_store(&f->servers[A].stalled, false);
	{
		pthread_t t;
		int rc;

		pthread_create(&t, NULL, stop_a_when_stalled, f);
		rc = put(c, "a", "va", true);
		pthread_join(t, NULL);
		is_int(rc, -EIO, "a stamped put lost after it was sent: -EIO");
		ok(strstr(bt_error_detail(), "outcome is unknown") != NULL,
		    "its detail says the outcome is unknown (%s)",
		    bt_error_detail());
	}
	cell_client_close(c);
	fixture_free(f);
}

/* Scan [start, end) with limit, the keys joined by ',' into out. */
static int
scan(struct cell_client *c, const char *start, const char *end,
    uint64_t limit, char *out, size_t size)
{
	struct cell_scan *sc;
	struct cells_row r;
	uint64_t n = 0;
	int rc;

	out[0] = '\0';
	if ((rc = cell_scan_open(c, TABLE, (struct bt_bytes){ start,
	    strlen(start) }, false, (struct bt_bytes){ end, strlen(end) },
	    NULL, false, limit, &sc)) < 0)
		return rc;
	cells_row_init(&r);
	while ((limit == 0 || n < limit) && (rc = cell_scan_next(sc,
	    &r)) == 0) {
		size_t at = strlen(out);

		snprintf(out + at, size - at, "%s%.*s", at ? "," : "",
		    (int)r.key.n, (const char *)r.key.p);
		n++;
	}
	cells_row_release(&r);
	cell_scan_close(sc);
	return rc == BT_DONE || rc == 0 ? 0 : rc;
}

static void
test_scan(void)
{
	static const char *keys[] = { "a", "b", "c", "f", "g", "h", "o",
	    "p", "q", "z" };
	struct fixture *f = fixture_new();
	struct cell_client *c = client_open(f, 5000);
	char out[256];

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		put(c, keys[i], "v", false);
	is_int(scan(c, "", "", 0, out, sizeof(out)), 0, "a scan of the table");
	ok(strcmp(out, "a,b,c,f,g,h,o,p,q,z") == 0, "three tablets on two "
	    "servers: every row once, in order (%s)", out);
	is_int(atomic_load(&f->servers[A].scans_opened), 2, "two scanners "
	    "at A (its two tablets)");
	is_int(atomic_load(&f->servers[B].scans_opened), 1, "one at B");
	is_int(atomic_load(&f->servers[A].refused) +
	    atomic_load(&f->servers[B].refused), 0, "each clipped to its "
	    "tablet: none refused");
	is_int(scan(c, "c", "", 4, out, sizeof(out)), 0, "a scan with a limit");
	ok(strcmp(out, "c,f,g,h") == 0, "the limit carries across tablets "
	    "(%s)", out);
	is_int(scan(c, "b", "h", 0, out, sizeof(out)), 0, "a scan with an end");
	ok(strcmp(out, "b,c,f,g") == 0, "ends at its own end (%s)", out);
	is_int(scan(c, "h", "h", 0, out, sizeof(out)), 0, "an empty range");
	ok(strcmp(out, "") == 0, "returns nothing (%s)", out);

	/* B dies before the scan reaches its tablet, which moves to A. */
	server_stop(f, B);
	pthread_mutex_lock(&f->mu);
	f->tablets[1].server = A;
	pthread_mutex_unlock(&f->mu);
	is_int(scan(c, "", "", 0, out, sizeof(out)), 0, "a scan after B died");
	ok(strcmp(out, "a,b,c,f,g,h,o,p,q,z") == 0, "relocates B's tablet "
	    "and returns every row once (%s)", out);
	cell_client_close(c);
	fixture_free(f);
}

/* A scanner lost with its server: the scan goes on just after the last
 * row it returned, at the tablet's new server. */
static void
test_scan_lost(void)
{
	static const char *keys[] = { "a", "b", "c", "d", "e", "h", "q" };
	struct fixture *f = fixture_new();
	struct cell_client *c = client_open(f, 5000);
	struct cell_scan *sc;
	struct cells_row r;
	char out[256] = "";
	int rc, n = 0;

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		put(c, keys[i], "v", false);
	f->batch_cap = 2;
	if (cell_scan_open(c, TABLE, (struct bt_bytes){ "", 0 }, false,
	    (struct bt_bytes){ "", 0 }, NULL, false, 0, &sc) != 0)
		tap_bail("cell_scan_open");
	cells_row_init(&r);
	while ((rc = cell_scan_next(sc, &r)) == 0) {
		size_t at = strlen(out);

		snprintf(out + at, sizeof(out) - at, "%s%.*s", at ? "," : "",
		    (int)r.key.n, (const char *)r.key.p);
		if (++n == 3) {		/* c: A's second batch */
			server_stop(f, A);
			pthread_mutex_lock(&f->mu);
			f->tablets[0].server = B;
			f->tablets[2].server = B;
			pthread_mutex_unlock(&f->mu);
		}
	}
	is_int(rc, BT_DONE, "a scan whose server died mid-tablet ends");
	ok(strcmp(out, "a,b,c,d,e,h,q") == 0, "with every row once, in "
	    "order (%s)", out);
	is_int(atomic_load(&f->servers[B].scans_opened), 3, "B opened the "
	    "rest of A's tablet, its own, and the last");
	cells_row_release(&r);
	cell_scan_close(sc);
	cell_client_close(c);
	fixture_free(f);
}

static void
test_mutate_rows(void)
{
	static const char *keys[] = { "q", "a", "h", "bad", "i", "b" };
	struct bt_mutation m = { .kind = BT_PUT, .family = "f", .ts = 5,
	    .value = { "v", 1 } };
	struct bt_row_mutation rows[6];
	struct fixture *f = fixture_new();
	struct cell_client *c = client_open(f, 5000);
	int results[6];
	int rc;
	char v[KEY_MAX];

	put(c, "a", "v0", false);	/* the locations are cached */
	for (size_t i = 0; i < 6; i++)
		rows[i] = (struct bt_row_mutation){ { keys[i],
		    strlen(keys[i]) }, &m, 1 };
	pthread_mutex_lock(&f->mu);
	f->tablets[1].server = A;	/* [g, p) moved: B refuses h and i */
	pthread_mutex_unlock(&f->mu);
	memset(results, 0x7f, sizeof(results));
	rc = cell_mutate_rows(c, TABLE, rows, 6, false, results);
	is_int(rc, -EINVAL, "a batch with a bad row fails as its row does");
	is_int(results[0], 0, "q applied");
	is_int(results[1], 0, "a applied");
	is_int(results[2], 0, "h applied, after B refused it");
	is_int(results[3], -EINVAL, "bad: its own status, in its place");
	is_int(results[4], 0, "i applied, after B refused it");
	is_int(results[5], 0, "b applied");
	is_int(atomic_load(&f->servers[B].refused), 2, "B refused h and i "
	    "once each");
	is_int(calls(f, B), 1, "B's rows went in one call");
	is_int(calls(f, A), 3, "A's in one, then the relocated ones in "
	    "another (and the first put)");
	ok(strcmp(get(c, "i", v), "v") == 0, "i reads back (%s)", v);
	is_int(atomic_load(&f->servers[ROOT].calls), 0, "the root took none");
	cell_client_close(c);
	fixture_free(f);
}

static void
test_last_seq(void)
{
	struct fixture *f = fixture_new();
	struct cell_client *c = client_open(f, 5000);
	uint64_t v1, v2, v3;

	put(c, "a", "v", false);
	put(c, "h", "v", false);
	v1 = cell_store_last_seq(c);
	v2 = cell_store_last_seq(c);
	ok(v1 != 0 && v1 == v2, "LAST_SEQ is the same while nothing changes");
	put(c, "i", "v", false);	/* at B alone */
	v3 = cell_store_last_seq(c);
	ok(v3 != v2 && v3 != 0, "and changes when one server's does");
	cell_client_close(c);
	fixture_free(f);
}

/* A root that predates LOCATE (-ENOSYS) or serves the whole store
 * (-EOPNOTSUPP): every call to it, as before LOCATE. */
static void
test_whole_root(int status)
{
	struct fixture *f = fixture_new();
	struct cell_client *c;
	char v[KEY_MAX], out[256];

	f->locate_status = status;
	f->root_whole = true;
	c = client_open(f, 5000);
	is_int(put(c, "a", "va", false), 0, "LOCATE %d: a put", status);
	is_int(put(c, "h", "vh", true), 0, "a stamped put");
	ok(strcmp(get(c, "h", v), "vh") == 0, "a read (%s)", v);
	is_int(scan(c, "", "", 0, out, sizeof(out)), 0, "a scan");
	ok(strcmp(out, "a,h") == 0, "one scanner for the whole range (%s)",
	    out);
	is_int(calls(f, ROOT), 3, "the root took every row call");
	is_int(atomic_load(&f->servers[ROOT].scans_opened), 1, "and the "
	    "scan");
	is_int(calls(f, A) + calls(f, B), 0, "the tablet servers none");
	is_int(cell_client_locates(c), 1, "LOCATE was asked once");
	cell_client_close(c);
	fixture_free(f);
}

int
main(void)
{
	test_routes_and_prefetch();
	test_move();
	test_dead_server();
	test_scan();
	test_scan_lost();
	test_mutate_rows();
	test_last_seq();
	test_whole_root(-ENOSYS);
	test_whole_root(-EOPNOTSUPP);
	return tap_done();
}
