/*
 * cell_route.c - calls on rows sent to the server of the row's tablet
 * (cell_client.h, "Calls on rows"; docs/design.md section 5, "Clients
 * locate by tablet"), and the last sequence number of every server.
 * The invariants cited are cell_client_int.h's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/cell_client.h"
#include "api/cell_client_int.h"
#include "rpc/tabletfs.pb-c.h"
#include "util/alloc.h"
#include "util/coding.h"
#include "util/error.h"

/* How long a connection to a tablet server may take to open: a server
 * that is gone fails the call fast, which then locates again. */
#define CONNECT_MS 2000
/* How long LAST_SEQ may take at one server. */
#define LAST_SEQ_MS 1000

void
cell_route_init(struct cell_route *r)
{
	memset(r, 0, sizeof(*r));
	buf_init(&r->loc.start);
	buf_init(&r->loc.end);
}

void
cell_route_release(struct cell_route *r)
{
	buf_release(&r->loc.start);
	buf_release(&r->loc.end);
}

int64_t
cell_client_deadline(const struct cell_client *c)
{
	return rpc_now_ns() + c->deadline_ns;
}

uint64_t
cell_client_locates(struct cell_client *c)
{
	return atomic_load(&c->locates);
}

int64_t
cell_client_stamp_floor(struct cell_client *c)
{
	return atomic_load(&c->stamp_seen);
}

void
cell_client_stamp_seen(struct cell_client *c, int64_t stamp)
{
	int64_t seen = atomic_load(&c->stamp_seen);

	while (stamp > seen &&
	    !atomic_compare_exchange_weak(&c->stamp_seen, &seen, stamp))
		;
}

/* LOCATE's answer cached: 0, or 1 when the row's own tablet has no
 * server yet, or negative. */
static int
locate_cache(struct cell_client *c, const char *table,
    const Tabletfs__LocateReply *rep)
{
	int rc;

	if (rep->n_tablets == 0 || rep->table_id == 0)
		return bt_error_set(-EPROTO, "cell %s: LOCATE of %s named no "
		    "tablet", c->cell, table);
	for (size_t i = 0; i < rep->n_tablets; i++) {
		const Tabletfs__TabletLocation *t = rep->tablets[i];

		if ((rc = cell_locations_insert(c->locations, table,
		    rep->table_id, slice_make(t->start.data, t->start.len),
		    slice_make(t->end.data, t->end.len), t->id,
		    t->server != NULL ? t->server : "")) < 0)
			return rc;
	}
	return rep->tablets[0]->server == NULL ||
	    rep->tablets[0]->server[0] == '\0' ? 1 : 0;
}

/*
 * Ask the root's server where row of table is, with the tablets after
 * it, and cache the answer; decide the route mode (3).  0, 1 (try
 * later: no root's server, or the row's tablet has no server yet), or
 * negative (LOCATE's own error: the table is unknown...).
 */
static int
locate(struct cell_client *c, const char *table, struct slice row,
    int64_t deadline)
{
	Tabletfs__LocateRequest req = TABLETFS__LOCATE_REQUEST__INIT;
	Tabletfs__LocateReply *rep = NULL;
	char root[CELL_SERVER_MAX];
	struct rpc_client *rpc;
	struct buf in, out;
	int32_t status;
	bool sent;
	int rc;

	if ((rc = cell_root_get(c, deadline, &rpc, root)) != 0)
		return rc;
	req.table = (char *)table;
	req.has_row = req.has_count = true;
	req.row.data = (uint8_t *)row.p;
	req.row.len = row.n;
	req.count = CELL_LOCATE_PREFETCH;
	buf_init(&in);
	buf_init(&out);
	if ((rc = cell_request_pack(&req.base, &in)) < 0)
		goto out;
	atomic_fetch_add(&c->locates, 1);
	rc = rpc_client_call(rpc, TABLETFS__METHOD__LOCATE, buf_slice(&in),
	    deadline, &out, &status, &sent);
	if (rc == 0 && (status == -ENOSYS || status == -EOPNOTSUPP)) {
		atomic_store(&c->route, ROUTE_ROOT);
		goto out;
	}
	if (rc == -ENOMEM)
		goto out;
	if (rc < 0 || status == BT_ENOTSERVING) {
		/* As a call to the root's server: find it again. */
		cell_conn_drop(c, rpc);
		rc = 1;
		goto out;
	}
	if ((rc = cell_reply_finish(c, status, &out,
	    &tabletfs__locate_reply__descriptor,
	    (ProtobufCMessage **)&rep)) < 0)
		goto out;
	if ((rc = locate_cache(c, table, rep)) >= 0)
		atomic_store(&c->route, ROUTE_TABLETS);
	cell_client_free(&rep->base);
out:
	buf_release(&in);
	buf_release(&out);
	return rc;
}

int
cell_client_route(struct cell_client *c, const char *table,
    struct slice row, int64_t deadline, struct cell_route *r)
{
	char root[CELL_SERVER_MAX];
	int64_t connect;
	bool located = false;
	int rc;

	for (;;) {
		switch (atomic_load(&c->route)) {
		case ROUTE_UNKNOWN:
			if ((rc = locate(c, table, row, deadline)) != 0)
				return rc;
			located = true;
			continue;
		case ROUTE_ROOT:
			r->whole = true;
			return cell_root_get(c, deadline, &r->rpc, root);
		default:
			break;
		}
		r->whole = false;
		rc = cell_locations_find(c->locations, table, row, &r->loc);
		if (rc == BT_NOTFOUND && located)
			return 1;	/* LOCATE's answer did not hold it */
		if (rc == BT_NOTFOUND) {
			if ((rc = locate(c, table, row, deadline)) != 0)
				return rc;
			located = true;
			continue;
		}
		if (rc < 0)
			return rc;
		connect = rpc_now_ns() + (int64_t)CONNECT_MS * 1000000;
		rc = cell_conn_get(c, r->loc.server, connect < deadline ?
		    connect : deadline, &r->rpc);
		if (rc == 1)
			cell_locations_forget_server(c->locations,
			    r->loc.server);
		return rc;
	}
}

void
cell_client_route_failed(struct cell_client *c, const struct cell_route *r,
    struct slice row, int rc)
{
	if (r->whole) {		/* as a call to the root's server */
		cell_conn_drop(c, r->rpc);
		return;
	}
	if (rc == BT_ENOTSERVING) {
		cell_locations_forget_row(c->locations, r->loc.table_id,
		    row);
	} else if (rpc_client_broken(r->rpc)) {
		cell_conn_drop(c, r->rpc);
		cell_locations_forget_server(c->locations, r->loc.server);
	}
}

/* The number of request's table_id field (tabletfs.proto, above
 * MutateRowRequest), or 0 when it has none. */
static uint32_t
table_id_field(const ProtobufCMessage *request)
{
	const ProtobufCFieldDescriptor *f;

	if (request == NULL)
		return 0;
	f = protobuf_c_message_descriptor_get_field_by_name(
	    request->descriptor, "table_id");
	return f != NULL && f->type == PROTOBUF_C_TYPE_UINT64 ? f->id : 0;
}

/*
 * Set the packed request req (base bytes without it) to name the table
 * id the route located, as its field number field: a field appended to
 * a packed message is read as if packed with it (the last of a scalar
 * wins), so the request is packed once, whatever its route.
 */
static int
table_id_set(struct buf *req, size_t base, uint32_t field,
    const struct cell_route *r)
{
	int rc;

	req->n = base;
	if (field == 0 || r->whole)
		return 0;
	if ((rc = buf_put_varint32(req, field << 3)) < 0)
		return rc;
	return buf_put_varint64(req, r->loc.table_id);
}

int
cell_client_call_row(struct cell_client *c, const char *table,
    struct slice row, uint32_t method, const ProtobufCMessage *request,
    enum cell_retry retry, const ProtobufCMessageDescriptor *reply_desc,
    ProtobufCMessage **reply, struct cell_route *used)
{
	int64_t deadline = cell_client_deadline(c);
	struct cell_route local, *r = used != NULL ? used : &local;
	uint32_t field = table_id_field(request);
	struct buf req, rep;
	int32_t status;
	size_t base;
	int wait = 0;
	int rc;

	buf_init(&req);
	buf_init(&rep);
	if (used == NULL)
		cell_route_init(&local);
	if ((rc = cell_request_pack(request, &req)) < 0)
		goto out;
	base = req.n;
	for (;;) {
		bool sent = false;

		if ((rc = cell_client_route(c, table, row, deadline, r)) < 0)
			goto out;
		if (rc == 0) {
			if ((rc = table_id_set(&req, base, field, r)) < 0)
				goto out;
			rep.n = 0;
			/* A call that may run twice need not find out first
			 * whether the connection closed while idle. */
			if (retry == CELL_RETRY_ANY)
				rc = rpc_client_call_idempotent(r->rpc, method,
				    buf_slice(&req), deadline, &rep, &status,
				    &sent);
			else
				rc = rpc_client_call(r->rpc, method,
				    buf_slice(&req), deadline, &rep, &status,
				    &sent);
			if (rc == 0 && status != BT_ENOTSERVING)
				break;
			cell_client_route_failed(c, r, row, rc == 0 ?
			    BT_ENOTSERVING : rc);
			if (rc == -ENOMEM)
				goto out;
			if (retry == CELL_RETRY_NONE) {
				rc = rc == 0 ? BT_ENOTSERVING : rc;
				goto out;
			}
			if (rc < 0 && sent && retry == CELL_RETRY_UNSENT) {
				rc = cell_client_outcome_unknown(c, r->whole ?
				    c->cell : r->loc.server, rc);
				goto out;
			}
		}
		if ((rc = cell_client_backoff(c, deadline, &wait)) < 0)
			goto out;
	}
	rc = cell_reply_finish(c, status, &rep, reply_desc, reply);
out:
	if (used == NULL)
		cell_route_release(&local);
	buf_release(&req);
	buf_release(&rep);
	return rc;
}

int
cell_client_call_on(struct cell_client *c, struct rpc_client *rpc,
    uint32_t method, const ProtobufCMessage *request, int64_t deadline,
    const ProtobufCMessageDescriptor *reply_desc, ProtobufCMessage **reply,
    bool *sent, bool *lost)
{
	struct buf req, rep;
	int32_t status;
	bool sent_local;
	int rc;

	if (lost != NULL)
		*lost = false;
	buf_init(&req);
	buf_init(&rep);
	if ((rc = cell_request_pack(request, &req)) < 0)
		goto out;
	rc = rpc_client_call(rpc, method, buf_slice(&req), deadline, &rep,
	    &status, sent != NULL ? sent : &sent_local);
	if (rc == 0)
		rc = cell_reply_finish(c, status, &rep, reply_desc, reply);
	else if (rc != -ENOMEM && lost != NULL)
		*lost = true;
out:
	buf_release(&req);
	buf_release(&rep);
	return rc;
}

int
cell_client_call_at(struct cell_client *c, const char *address,
    uint32_t method, const ProtobufCMessage *request, uint32_t timeout_ms,
    const ProtobufCMessageDescriptor *reply_desc, ProtobufCMessage **reply)
{
	int64_t deadline = rpc_now_ns() + (int64_t)timeout_ms * 1000000;

	if (deadline > cell_client_deadline(c))
		deadline = cell_client_deadline(c);
	struct rpc_client *rpc;
	int rc;

	if ((rc = cell_conn_get(c, address, deadline, &rpc)) != 0)
		return rc < 0 ? rc : bt_error_set(-EIO, "cell %s: %s does "
		    "not answer", c->cell, address);
	return cell_client_call_on(c, rpc, method, request, deadline,
	    reply_desc, reply, NULL, NULL);
}

/* ---- The last sequence number of every server ---- */

struct server_seq {
	const char *address;
	uint64_t seq;
};

static int
server_seq_compare(const void *a, const void *b)
{
	return strcmp(((const struct server_seq *)a)->address,
	    ((const struct server_seq *)b)->address);
}

/* FNV-1a, 64 bits, over p[0..n) continuing from h. */
static uint64_t
hash_add(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

/* LAST_SEQ at address: 0 and *seq, or negative (it did not answer). */
static int
server_last_seq(struct cell_client *c, const char *address, uint64_t *seq)
{
	int64_t deadline = rpc_now_ns() + (int64_t)LAST_SEQ_MS * 1000000;
	Tabletfs__LastSeqReply *rep = NULL;
	struct rpc_client *rpc;
	int rc;

	if ((rc = cell_conn_get(c, address, deadline, &rpc)) != 0)
		return rc < 0 ? rc : -ECONNREFUSED;
	rc = cell_client_call_on(c, rpc, TABLETFS__METHOD__LAST_SEQ, NULL,
	    deadline, &tabletfs__last_seq_reply__descriptor,
	    (ProtobufCMessage **)&rep, NULL, NULL);
	if (rc < 0) {
		if (rpc_client_broken(rpc))
			cell_conn_drop(c, rpc);
		return rc;
	}
	*seq = rep->last_seq;
	cell_client_free(&rep->base);
	return 0;
}

/*
 * The mount compares the value for equality to see whether a directory
 * changed, so it is a hash of the (address, last_seq) pairs sorted by
 * address: any server's change changes it, and so does a server coming
 * or going (a listing read again for nothing, not one missed).
 */
int
cell_client_last_seq(struct cell_client *c, uint64_t *out)
{
	struct server_seq *seqs;
	char **addresses;
	size_t count, answered = 0;
	uint64_t h = 0xcbf29ce484222325ull;
	int rc;

	if (atomic_load(&c->route) != ROUTE_TABLETS)
		return 1;
	if ((rc = cell_servers_list(c, &addresses, &count)) < 0)
		return rc;
	if ((seqs = bt_calloc(count + 1, sizeof(*seqs))) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < count; i++)
		if (server_last_seq(c, addresses[i], &seqs[answered].seq) == 0)
			seqs[answered++].address = addresses[i];
	qsort(seqs, answered, sizeof(*seqs), server_seq_compare);
	for (size_t i = 0; i < answered; i++) {
		h = hash_add(h, seqs[i].address, strlen(seqs[i].address) + 1);
		h = hash_add(h, &seqs[i].seq, sizeof(seqs[i].seq));
	}
	*out = answered > 0 ? (h != 0 ? h : 1) : 0;
	bt_free(seqs);
	rc = 0;
out:
	for (size_t i = 0; i < count; i++)
		free(addresses[i]);
	free(addresses);
	return rc;
}

/*
 * request to every live server but the root's, one after another within
 * the client's deadline, when the tablets are served one by one; each
 * reply handed to each() when given.  -ENOENT and BT_ENOTSERVING (the
 * server serves nothing of the table) are skipped; another failure
 * stops the loop when strict, its detail naming the server, and is
 * otherwise kept (the first) while the others are asked.
 */
static int
servers_call(struct cell_client *c, uint32_t method,
    const ProtobufCMessage *request,
    const ProtobufCMessageDescriptor *reply_desc,
    int (*each)(void *arg, const char *server, ProtobufCMessage *reply),
    void *arg, bool strict)
{
	int64_t deadline = cell_client_deadline(c);
	char root[CELL_SERVER_MAX] = "";
	struct rpc_client *rpc;
	char **addresses;
	size_t count;
	int rc, first = 0;

	if (atomic_load(&c->route) != ROUTE_TABLETS)
		return 0;
	if ((rc = cell_root_get(c, deadline, &rpc, root)) != 0)
		return rc < 0 ? rc : bt_error_set(-EIO, "cell %s: no root's "
		    "server answers", c->cell);
	if ((rc = cell_servers_list(c, &addresses, &count)) < 0)
		return rc;
	for (size_t i = 0; i < count; i++) {
		int64_t left = (deadline - rpc_now_ns()) / 1000000;
		ProtobufCMessage *reply = NULL;

		if (strcmp(addresses[i], root) == 0)
			continue;
		rc = cell_client_call_at(c, addresses[i], method, request,
		    left > 0 ? (uint32_t)left : 1, reply_desc,
		    reply_desc != NULL ? &reply : NULL);
		/* A connection its server closed since (it restarted, or
		 * closed it idle): once more, on a new one. */
		if (rc == -ECONNRESET || rc == -EPIPE) {
			left = (deadline - rpc_now_ns()) / 1000000;
			rc = cell_client_call_at(c, addresses[i], method,
			    request, left > 0 ? (uint32_t)left : 1,
			    reply_desc, reply_desc != NULL ? &reply : NULL);
		}
		if (rc == -ENOENT || rc == BT_ENOTSERVING)
			continue;
		if (rc < 0) {
			if (strstr(bt_error_detail(), addresses[i]) == NULL)
				rc = bt_error_set(rc, "cell %s: server %s: %s",
				    c->cell, addresses[i], *bt_error_detail() ?
				    bt_error_detail() : bt_strerror(rc));
			if (first == 0)
				first = rc;
			if (strict)
				break;
			continue;
		}
		if (reply != NULL) {
			rc = each != NULL ? each(arg, addresses[i], reply) : 0;
			cell_client_free(reply);
			if (rc < 0) {
				first = rc;
				break;
			}
		}
	}
	for (size_t i = 0; i < count; i++)
		free(addresses[i]);
	free(addresses);
	return first;
}

int
cell_client_call_others(struct cell_client *c, uint32_t method,
    const ProtobufCMessage *request)
{
	return servers_call(c, method, request, NULL, NULL, NULL, false);
}

int
cell_client_call_others_each(struct cell_client *c, uint32_t method,
    const ProtobufCMessage *request,
    const ProtobufCMessageDescriptor *reply_desc,
    int (*each)(void *arg, const char *server, ProtobufCMessage *reply),
    void *arg)
{
	return servers_call(c, method, request, reply_desc, each, arg, false);
}

int
cell_client_call_each(struct cell_client *c, uint32_t method,
    const ProtobufCMessage *request,
    const ProtobufCMessageDescriptor *reply_desc,
    int (*each)(void *arg, const char *server, ProtobufCMessage *reply),
    void *arg)
{
	return servers_call(c, method, request, reply_desc, each, arg, true);
}

int
cell_client_route_learn(struct cell_client *c, const char *table)
{
	int64_t deadline = cell_client_deadline(c);
	Tabletfs__TableListReply *tables = NULL;
	int wait_ms = 0, rc = 0;

	if (atomic_load(&c->route) != ROUTE_UNKNOWN)
		return 0;
	/* No table named: the first the cell has, if any. */
	if (table == NULL) {
		if ((rc = cell_client_call(c, TABLETFS__METHOD__TABLE_LIST,
		    NULL, CELL_RETRY_ANY, &tabletfs__table_list_reply__descriptor,
		    (ProtobufCMessage **)&tables)) < 0)
			return rc;
		if (tables->n_names == 0)
			goto out;
		table = tables->names[0];
	}
	while (atomic_load(&c->route) == ROUTE_UNKNOWN) {
		if ((rc = locate(c, table, slice_make(NULL, 0), deadline)) < 0)
			goto out;
		if (rc == 1 &&
		    (rc = cell_client_backoff(c, deadline, &wait_ms)) < 0)
			goto out;
	}
	rc = 0;
out:
	if (tables != NULL)
		cell_client_free(&tables->base);
	return rc;
}

