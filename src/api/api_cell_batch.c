/*
 * api_cell_batch.c - bt_mutate_rows() on a cell (api_cell.h): the rows
 * grouped by the server of their tablets (cell_client.h, "Calls on
 * rows"), one MUTATE_ROWS per server, sent one after the other, and
 * their statuses merged back in the caller's order.  Rows a server
 * refuses with BT_ENOTSERVING (not applied) are located again and sent
 * in the next round, until the deadline.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "api/api_cell.h"
#include "rpc/tabletfs.pb-c.h"
#include "util/alloc.h"
#include "util/error.h"

/* The messages of a batch, in four arrays (entries_release()). */
struct entries {
	Tabletfs__MutateRowsEntry *es, **ep;
	Tabletfs__Mutation *ms, **mp;
};

static void
entries_release(struct entries *e)
{
	bt_free(e->es);
	bt_free(e->ep);
	bt_free(e->ms);
	bt_free(e->mp);
}

/* One entry per row into req, borrowing every byte from rows.  0,
 * -EINVAL or -ENOMEM. */
static int
entries_make(struct entries *e, const struct bt_row_mutation *rows,
    size_t n, Tabletfs__MutateRowsRequest *req)
{
	size_t total = 0, at = 0;

	memset(e, 0, sizeof(*e));
	for (size_t i = 0; i < n; i++) {
		if (rows[i].count > SIZE_MAX / sizeof(*e->ms) / 2 - total)
			return bt_error_set(-EINVAL, "too many mutations");
		total += rows[i].muts != NULL ? rows[i].count : 0;
	}
	e->es = bt_calloc(n, sizeof(*e->es));
	e->ep = bt_calloc(n, sizeof(*e->ep));
	e->ms = bt_calloc(total + 1, sizeof(*e->ms));
	e->mp = bt_calloc(total + 1, sizeof(*e->mp));
	if (e->es == NULL || e->ep == NULL || e->ms == NULL ||
	    e->mp == NULL) {
		entries_release(e);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		const struct bt_mutation *muts = rows[i].muts;
		Tabletfs__MutateRowsEntry *en = &e->es[i];

		tabletfs__mutate_rows_entry__init(en);
		en->has_row = true;
		en->row = cell_bin(rows[i].row);
		en->mutations = e->mp + at;
		en->n_mutations = muts != NULL ? rows[i].count : 0;
		for (size_t j = 0; j < en->n_mutations; j++, at++) {
			Tabletfs__Mutation *m = &e->ms[at];

			tabletfs__mutation__init(m);
			m->has_kind = m->has_qualifier = true;
			m->has_ts = m->has_value = true;
			m->kind = (Tabletfs__Mutation__Kind)muts[j].kind;
			m->family = cell_str(muts[j].family);
			m->qualifier = cell_bin(muts[j].qualifier);
			m->ts = muts[j].ts;
			m->value = cell_bin(muts[j].value);
			e->mp[at] = m;
		}
		e->ep[i] = en;
	}
	req->n_entries = n;
	req->entries = e->ep;
	return 0;
}

/* Where each row of a batch stands. */
struct batch_row {
	int result;
	bool pending;			/* not sent, or to send again */
	struct rpc_client *rpc;		/* routed this round, or NULL */
};

struct batch {
	struct cell_client *c;
	const char *table;
	const struct bt_row_mutation *rows;
	size_t n;
	bool sync, idempotent;
	struct batch_row *st;
	struct bt_row_mutation *sub;	/* one group's rows */
	size_t *sub_index;		/* and their indexes in rows */
	size_t failed_at;		/* the first row failed, for detail */
	char detail[512];
};

/* Row i ends with rc (0: applied), detail its error's. */
static void
row_end(struct batch *b, size_t i, int rc, const char *detail)
{
	b->st[i].result = rc;
	b->st[i].pending = false;
	if (rc < 0 && i < b->failed_at) {
		b->failed_at = i;
		snprintf(b->detail, sizeof(b->detail), "%s", detail != NULL &&
		    *detail ? detail : bt_strerror(rc));
	}
}

/*
 * Send the pending rows routed to rpc (route: the first one's) as one
 * MUTATE_ROWS, and take in what came back.  0, or -ENOMEM.
 */
static int
group_send(struct batch *b, struct rpc_client *rpc,
    const struct cell_route *route, int64_t deadline)
{
	Tabletfs__MutateRowsRequest req = TABLETFS__MUTATE_ROWS_REQUEST__INIT;
	Tabletfs__MutateRowsReply *rep = NULL;
	struct entries e;
	size_t m = 0;
	bool sent = false, lost = false;
	int rc;

	for (size_t i = 0; i < b->n; i++)
		if (b->st[i].pending && b->st[i].rpc == rpc) {
			b->sub[m] = b->rows[i];
			b->sub_index[m++] = i;
			b->st[i].rpc = NULL;	/* sent this round */
		}
	if ((rc = entries_make(&e, b->sub, m, &req)) < 0)
		return rc;
	req.table = (char *)b->table;
	req.has_sync = true;
	req.sync = b->sync;
	req.has_table_id = !route->whole;
	req.table_id = route->loc.table_id;
	req.stamp_floor = cell_client_stamp_floor(b->c);
	req.has_stamp_floor = req.stamp_floor > 0;
	rc = cell_client_call_on(b->c, rpc, TABLETFS__METHOD__MUTATE_ROWS,
	    &req.base, deadline, &tabletfs__mutate_rows_reply__descriptor,
	    (ProtobufCMessage **)&rep, &sent, &lost);
	entries_release(&e);
	if (rc == -ENOMEM)
		return rc;
	if (lost || rc == BT_ENOTSERVING) {
		for (size_t j = 0; j < m; j++)
			cell_client_route_failed(b->c, route,
			    slice_make(b->sub[j].row.data,
			    b->sub[j].row.size), lost ? rc : BT_ENOTSERVING);
		if (lost && sent && !b->idempotent) {
			rc = cell_client_outcome_unknown(b->c, route->whole ?
			    "the root's server" : route->loc.server, rc);
			for (size_t j = 0; j < m; j++)
				row_end(b, b->sub_index[j], rc,
				    bt_error_detail());
		}
		return 0;	/* the rest go again */
	}
	if (rc == 0)
		cell_client_stamp_seen(b->c, rep->last_stamp);
	if (rc == 0 && rep->n_status != m)
		rc = bt_error_set(-EPROTO, "MUTATE_ROWS: %zu statuses for "
		    "%zu rows", rep->n_status, m);
	if (rc < 0) {
		for (size_t j = 0; j < m; j++)
			row_end(b, b->sub_index[j], rc, bt_error_detail());
		cell_client_free(rep != NULL ? &rep->base : NULL);
		return 0;
	}
	for (size_t j = 0; j < m; j++) {
		int32_t s = rep->status[j];

		if (s == BT_ENOTSERVING)
			cell_client_route_failed(b->c, route,
			    slice_make(b->sub[j].row.data,
			    b->sub[j].row.size), BT_ENOTSERVING);
		else
			row_end(b, b->sub_index[j], s > 0 ? -EPROTO : s,
			    rep->detail);
	}
	cell_client_free(&rep->base);
	return 0;
}

/*
 * One round: route every pending row, then send each server's group.
 * 0, or a negative code that ends the batch (-ENOMEM, -EACCES).
 */
static int
batch_round(struct batch *b, int64_t deadline, struct cell_route *r)
{
	int rc;

	for (size_t i = 0; i < b->n; i++) {
		if (!b->st[i].pending)
			continue;
		rc = cell_client_route(b->c, b->table,
		    slice_make(b->rows[i].row.data, b->rows[i].row.size),
		    deadline, r);
		if (rc == -ENOMEM || rc == -EACCES)
			return rc;
		if (rc < 0)
			row_end(b, i, rc, bt_error_detail());
		else
			b->st[i].rpc = rc == 0 ? r->rpc : NULL;
	}
	for (size_t i = 0; i < b->n; i++) {
		if (!b->st[i].pending || b->st[i].rpc == NULL)
			continue;
		/* The group's route, for what a failure forgets. */
		if ((rc = cell_client_route(b->c, b->table,
		    slice_make(b->rows[i].row.data, b->rows[i].row.size),
		    deadline, r)) < 0)
			return rc;
		if (rc == 1 || r->rpc != b->st[i].rpc) {
			b->st[i].rpc = NULL;	/* moved meanwhile: next round */
			continue;
		}
		if ((rc = group_send(b, r->rpc, r, deadline)) < 0)
			return rc;
	}
	return 0;
}

static bool
batch_pending(const struct batch *b)
{
	for (size_t i = 0; i < b->n; i++)
		if (b->st[i].pending)
			return true;
	return false;
}

/*
 * A batch is idempotent when every row of it is
 * (cell_mutations_idempotent()):
 * sent twice, it leaves the rows as once.  One with a server-stamped put
 * is sent again only when it certainly was not applied: a server's group
 * lost after it was sent fails with -EIO, outcome unknown.
 */
int
cell_mutate_rows(struct cell_client *c, const char *table,
    const struct bt_row_mutation *rows, size_t n, bool sync, int *results)
{
	int64_t deadline = cell_client_deadline(c);
	struct batch b = { .c = c, .table = table, .rows = rows, .n = n,
	    .sync = sync, .idempotent = true, .failed_at = SIZE_MAX };
	struct cell_route r;
	int wait = 0, rc = 0;

	for (size_t i = 0; i < n; i++)
		if (rows[i].muts != NULL &&
		    !cell_mutations_idempotent(rows[i].muts, rows[i].count))
			b.idempotent = false;
	b.st = bt_calloc(n, sizeof(*b.st));
	b.sub = bt_calloc(n, sizeof(*b.sub));
	b.sub_index = bt_calloc(n, sizeof(*b.sub_index));
	if (b.st == NULL || b.sub == NULL || b.sub_index == NULL) {
		for (size_t i = 0; i < n; i++)
			results[i] = -ENOMEM;
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		b.st[i].pending = true;
	cell_route_init(&r);
	while ((rc = batch_round(&b, deadline, &r)) == 0 &&
	    batch_pending(&b)) {
		if ((rc = cell_client_backoff(c, deadline, &wait)) < 0)
			break;
	}
	cell_route_release(&r);
	for (size_t i = 0; i < n; i++)	/* nothing more is known */
		if (b.st[i].pending)
			row_end(&b, i, rc < 0 ? rc : -ETIMEDOUT,
			    bt_error_detail());
	rc = 0;
	for (size_t i = 0; i < n; i++) {
		results[i] = b.st[i].result;
		if (results[i] < 0 && rc == 0)
			rc = results[i];
	}
	if (rc < 0)
		rc = bt_error_set(rc, "%s", b.detail);
out:
	bt_free(b.st);
	bt_free(b.sub);
	bt_free(b.sub_index);
	return rc;
}
