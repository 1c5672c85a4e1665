/*
 * api_cell_bulk.c - a bulk load on a cell (api_cell.h; the contract is
 * bt_bulk_* in tabletfs.h): BULK_OPEN, BULK_PUT, BULK_COMMIT and
 * BULK_ABORT of tabletfs.proto, all on the one connection to the serving
 * server that opened the load (cell_client_call_pinned()).
 *
 * Each put is checked here as the server's load checks it (the same
 * bounds, the families and max_cell that BULK_OPEN replied), so that a
 * refused cell is refused by its own bt_bulk_put() call and the load goes
 * on, as on a store; the cells taken are packed straight into the next
 * BULK_PUT request, one Row each, sent once it holds CELL_BULK_BATCH
 * bytes, or the load's memory budget when that is smaller (the batch is
 * memory too).  Any failure of a batch or of the connection fails the load: its
 * later calls return that error again, and the server drops what it
 * gathered (at BULK_ABORT, or when the connection closes).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_cell.h"
#include "rpc/tabletfs.pb-c.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/coding.h"
#include "util/error.h"

#define CELL_BULK_BATCH		((size_t)1 << 20)
#define BULK_PUT_ROWS_FIELD	2	/* BulkPutRequest.rows */

struct cell_bulk {
	struct cell_client *c;
	struct rpc_client *rpc;		/* the connection holding the load */
	uint64_t id;
	char *table;
	Tabletfs__BulkOpenReply *opened; /* families and max_cell */
	struct buf batch;		/* a packed BulkPutRequest */
	size_t batch_head;		/* bytes of its bulk_id field */
	size_t batch_cells;
	size_t batch_max;		/* bytes that send a batch */
	int failed;			/* sticky, with detail */
	char detail[512];
	bool ended;			/* committed, or tried to: the server
					   forgot it */
};

/* Fail the load with rc (its detail kept) and return rc. */
static int
bulk_fail(struct cell_bulk *b, int rc)
{
	b->failed = rc;
	snprintf(b->detail, sizeof(b->detail), "%s", *bt_error_detail() ?
	    bt_error_detail() : bt_strerror(rc));
	return rc;
}

static int
bulk_failed(const struct cell_bulk *b)
{
	return bt_error_set(b->failed, "this bulk load failed: %s",
	    b->detail);
}

/* A server from before bulk loads answers -ENOSYS. */
static int
bulk_unsupported(int rc)
{
	if (rc == -ENOSYS)
		return bt_error_set(-EOPNOTSUPP, "the cell's servers take no "
		    "bulk load (they predate it)");
	return rc;
}

int
cell_bulk_open(struct cell_client *c, const char *table,
    size_t memory_budget, struct cell_bulk **out)
{
	Tabletfs__BulkOpenRequest req = TABLETFS__BULK_OPEN_REQUEST__INIT;
	struct cell_bulk *b;
	struct buf packed;
	bool lost;
	int rc;

	if ((b = bt_calloc(1, sizeof(*b))) == NULL)
		return -ENOMEM;
	b->c = c;
	b->batch_max = memory_budget > 0 && memory_budget < CELL_BULK_BATCH ?
	    memory_budget : CELL_BULK_BATCH;
	buf_init(&b->batch);
	buf_init(&packed);
	if ((b->table = bt_strdup(table)) == NULL) {
		rc = -ENOMEM;
		goto out_free;
	}
	req.table = cell_str(table);
	req.has_memory_budget = true;
	req.memory_budget = memory_budget;
	req.stamp_floor = cell_client_stamp_floor(c);
	req.has_stamp_floor = req.stamp_floor > 0;
	if ((rc = buf_reserve(&packed,
	    protobuf_c_message_get_packed_size(&req.base))) < 0)
		goto out_free;
	packed.n = protobuf_c_message_pack(&req.base, packed.p);
	if ((rc = cell_client_call_pinned(c, &b->rpc,
	    TABLETFS__METHOD__BULK_OPEN, buf_slice(&packed),
	    &tabletfs__bulk_open_reply__descriptor,
	    (ProtobufCMessage **)&b->opened, &lost)) < 0) {
		rc = bulk_unsupported(rc);
		goto out_free;
	}
	if (!b->opened->has_bulk_id || !b->opened->has_max_cell) {
		rc = bt_error_set(-EPROTO, "BULK_OPEN: a reply without its "
		    "bulk_id or max_cell");
		goto out_reply;
	}
	b->id = b->opened->bulk_id;
	if ((rc = buf_put_varint32(&b->batch, 1 << 3 |
	    PROTOBUF_C_WIRE_TYPE_VARINT)) < 0 ||
	    (rc = buf_put_varint64(&b->batch, b->id)) < 0)
		goto out_abort;
	b->batch_head = b->batch.n;
	buf_release(&packed);
	*out = b;
	return 0;
out_abort:
	cell_bulk_close(b);
	buf_release(&packed);
	return rc;
out_reply:
	cell_client_free(&b->opened->base);
out_free:
	buf_release(&packed);
	buf_release(&b->batch);
	bt_free(b->table);
	bt_free(b);
	return rc;
}

/* Send the cells gathered, if any, as one BULK_PUT. */
static int
batch_send(struct cell_bulk *b)
{
	bool lost;
	int rc;

	if (b->batch_cells == 0)
		return 0;
	rc = cell_client_call_pinned(b->c, &b->rpc,
	    TABLETFS__METHOD__BULK_PUT, buf_slice(&b->batch), NULL, NULL,
	    &lost);
	b->batch.n = b->batch_head;
	b->batch_cells = 0;
	if (rc < 0 && lost)
		rc = bt_error_set(rc, "%s: the load is gone with it, nothing "
		    "of it committed", bt_error_detail());
	return rc < 0 ? bulk_fail(b, rc) : 0;
}

static bool
bulk_has_family(const struct cell_bulk *b, const char *family)
{
	for (size_t i = 0; i < b->opened->n_families; i++)
		if (strcmp(b->opened->families[i], family) == 0)
			return true;
	return false;
}

int
cell_bulk_put(struct cell_bulk *b, struct bt_bytes row, const char *family,
    struct bt_bytes qualifier, int64_t ts, struct bt_bytes value)
{
	Tabletfs__Row r = TABLETFS__ROW__INIT;
	Tabletfs__Cell cell = TABLETFS__CELL__INIT, *cp = &cell;
	uint8_t head[5 + 10], *e;
	size_t n;
	int rc;

	if (b->failed < 0)
		return bulk_failed(b);
	/* The checks of server_bulk_put(), in its order, with its words. */
	if (row.size == 0 || row.size > BT_MAX_ROW)
		return bt_error_set(-EINVAL, "row key of %zu bytes (1 to %u "
		    "allowed)", row.size, BT_MAX_ROW);
	if (!bulk_has_family(b, family))
		return bt_error_set(-ENOENT, "table %s: no family %s",
		    b->table, family);
	if (qualifier.size > BT_MAX_QUALIFIER)
		return bt_error_set(-EINVAL, "qualifier of %zu bytes (at most "
		    "%u allowed)", qualifier.size, BT_MAX_QUALIFIER);
	if (value.size > b->opened->max_cell)
		return bt_error_set(-EFBIG, "value of %zu bytes (at most %"
		    PRIu64 " allowed)", value.size, b->opened->max_cell);
	if (ts < 0 && ts != BT_TS_SERVER)
		return bt_error_set(-EINVAL, "timestamp %" PRId64 " out of "
		    "range", ts);
	r.has_key = true;
	r.key = cell_bin(row);
	cell.family = cell_str(family);
	cell.has_qualifier = cell.has_value = true;
	cell.qualifier = cell_bin(qualifier);
	cell.value = cell_bin(value);
	cell.has_ts = ts != BT_TS_SERVER;
	cell.ts = ts;
	r.n_cells = 1;
	r.cells = &cp;
	n = protobuf_c_message_get_packed_size(&r.base);
	e = encode_varint32(head, BULK_PUT_ROWS_FIELD << 3 |
	    PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED);
	e = encode_varint64(e, n);
	if ((rc = buf_reserve(&b->batch, (size_t)(e - head) + n)) < 0)
		return bulk_fail(b, rc);
	buf_append(&b->batch, head, (size_t)(e - head));
	b->batch.n += protobuf_c_message_pack(&r.base, b->batch.p +
	    b->batch.n);
	b->batch_cells++;
	if (b->batch.n >= b->batch_max)
		return batch_send(b);
	return 0;
}

int
cell_bulk_commit(struct cell_bulk *b, struct bt_bulk_stats *out)
{
	Tabletfs__BulkRequest req = TABLETFS__BULK_REQUEST__INIT;
	Tabletfs__BulkCommitReply *rep = NULL;
	uint8_t packed[16];
	bool lost;
	int rc;

	if (b->ended)
		return bt_error_set(-EINVAL, "this bulk load was committed "
		    "already");
	if (b->failed < 0)
		return bulk_failed(b);
	if ((rc = batch_send(b)) < 0)
		return rc;
	req.has_bulk_id = true;
	req.bulk_id = b->id;
	b->ended = true;
	rc = cell_client_call_pinned(b->c, &b->rpc,
	    TABLETFS__METHOD__BULK_COMMIT, slice_make(packed,
	    protobuf_c_message_pack(&req.base, packed)),
	    &tabletfs__bulk_commit_reply__descriptor,
	    (ProtobufCMessage **)&rep, &lost);
	if (rc < 0 && lost)
		return bulk_fail(b, bt_error_set(-EIO, "%s, after the commit "
		    "was sent: its outcome is unknown (the load is there "
		    "whole, or not at all)", bt_error_detail()));
	if (rc < 0)
		return bulk_fail(b, rc);
	cell_client_stamp_seen(b->c, rep->stamp);
	if (out != NULL) {
		out->cells = rep->cells;
		out->files = rep->files;
		out->tablets = rep->tablets;
		out->stamp = rep->stamp;
	}
	cell_client_free(&rep->base);
	return 0;
}

void
cell_bulk_close(struct cell_bulk *b)
{
	Tabletfs__BulkRequest req = TABLETFS__BULK_REQUEST__INIT;
	uint8_t packed[16];
	char detail[512];
	bool lost;

	if (b == NULL)
		return;
	/* Abandoned: let the server drop it now rather than when the
	 * connection closes (a broken one fails at once, and took the
	 * load with it).  The caller's error detail is kept. */
	if (!b->ended) {
		snprintf(detail, sizeof(detail), "%s", bt_error_detail());
		req.has_bulk_id = true;
		req.bulk_id = b->id;
		(void)cell_client_call_pinned(b->c, &b->rpc,
		    TABLETFS__METHOD__BULK_ABORT, slice_make(packed,
		    protobuf_c_message_pack(&req.base, packed)), NULL, NULL,
		    &lost);
		(void)bt_error_set(0, "%s", detail);
	}
	cell_client_free(&b->opened->base);
	buf_release(&b->batch);
	bt_free(b->table);
	bt_free(b);
}
