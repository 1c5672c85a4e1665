/*
 * api_cell_rows.c - the calls on rows of a cell (api_cell.h): mutations,
 * read-modify-writes, point reads and scans.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "api/api_cell.h"
#include "rpc/tabletfs.pb-c.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"

/* A scan's batch: at most this many rows and about this many bytes. */
#define SCAN_BATCH_ROWS 256
#define SCAN_BATCH_BYTES (1u << 20)

/* Mutations up to this many are converted on the stack. */
#define MUTATIONS_LOCAL 8

/*
 * A mutation with a server stamp may not be sent twice: a second copy
 * would add a second version.  Everything else a mutation does (puts at
 * a given time, deletes) gives the same row however often it is applied.
 */
bool
cell_mutations_idempotent(const struct bt_mutation *muts, size_t count)
{
	for (size_t i = 0; i < count; i++)
		if (muts[i].kind == BT_PUT && muts[i].ts == BT_TS_SERVER)
			return false;
	return true;
}

int
cell_mutate_row(struct cell_client *c, const char *table,
    struct bt_bytes row, const struct bt_mutation *muts, size_t count,
    bool sync, bool check, const char *family, struct bt_bytes qualifier,
    const struct bt_bytes *expected, int64_t expected_ts, bool *applied,
    int64_t *stamp)
{
	Tabletfs__MutateRowRequest req = TABLETFS__MUTATE_ROW_REQUEST__INIT;
	Tabletfs__Condition cond = TABLETFS__CONDITION__INIT;
	Tabletfs__Mutation local[MUTATIONS_LOCAL], *ms = local;
	Tabletfs__Mutation *localp[MUTATIONS_LOCAL], **msp = localp;
	Tabletfs__MutateRowReply *rep = NULL;
	int rc;

	if (muts == NULL || count == 0)
		return bt_error_set(-EINVAL, "empty mutation");
	if (count > MUTATIONS_LOCAL) {
		ms = bt_calloc(count, sizeof(*ms));
		msp = bt_calloc(count, sizeof(*msp));
		if (ms == NULL || msp == NULL) {
			rc = -ENOMEM;
			goto out;
		}
	}
	for (size_t i = 0; i < count; i++) {
		tabletfs__mutation__init(&ms[i]);
		ms[i].has_kind = ms[i].has_qualifier = ms[i].has_ts = true;
		ms[i].has_value = true;
		ms[i].kind = (Tabletfs__Mutation__Kind)muts[i].kind;
		ms[i].family = cell_str(muts[i].family);
		ms[i].qualifier = cell_bin(muts[i].qualifier);
		ms[i].ts = muts[i].ts;
		ms[i].value = cell_bin(muts[i].value);
		msp[i] = &ms[i];
	}
	req.table = cell_str(table);
	req.has_row = req.has_sync = true;
	req.row = cell_bin(row);
	req.n_mutations = count;
	req.mutations = msp;
	req.sync = sync;
	req.stamp_floor = cell_client_stamp_floor(c);
	req.has_stamp_floor = req.stamp_floor > 0;
	if (check) {
		cond.family = cell_str(family);
		cond.has_qualifier = true;
		cond.qualifier = cell_bin(qualifier);
		if (expected != NULL) {
			cond.has_expected = true;
			cond.expected = cell_bin(*expected);
			if (expected_ts >= 0) {
				cond.has_expected_ts = true;
				cond.expected_ts = expected_ts;
			}
		}
		req.condition = &cond;
	}
	rc = cell_client_call_row(c, table, slice_make(row.data, row.size),
	    TABLETFS__METHOD__MUTATE_ROW, &req.base,
	    !check && cell_mutations_idempotent(muts, count) ?
	    CELL_RETRY_ANY : CELL_RETRY_UNSENT,
	    &tabletfs__mutate_row_reply__descriptor,
	    (ProtobufCMessage **)&rep, NULL);
	if (rc < 0)
		goto out;
	cell_client_stamp_seen(c, rep->last_stamp);
	if (applied != NULL)
		*applied = rep->applied;
	if (stamp != NULL && (!check || rep->applied))
		*stamp = rep->stamp;
	cell_client_free(&rep->base);
out:
	if (ms != local)
		bt_free(ms);
	if (msp != localp)
		bt_free(msp);
	return rc;
}

int
cell_read_modify_write(struct cell_client *c, const char *table,
    struct bt_bytes row, const char *family, struct bt_bytes qualifier,
    const struct cell_rmw *op, bool sync, int64_t *result, int64_t *stamp)
{
	Tabletfs__ReadModifyWriteRequest req =
	    TABLETFS__READ_MODIFY_WRITE_REQUEST__INIT;
	Tabletfs__MoveVersion mv = TABLETFS__MOVE_VERSION__INIT;
	Tabletfs__ReadModifyWriteReply *rep = NULL;
	int rc;

	req.table = cell_str(table);
	req.has_row = req.has_qualifier = req.has_sync = true;
	req.row = cell_bin(row);
	req.family = cell_str(family);
	req.qualifier = cell_bin(qualifier);
	req.sync = sync;
	req.stamp_floor = cell_client_stamp_floor(c);
	req.has_stamp_floor = req.stamp_floor > 0;
	switch (op->kind) {
	case CELL_RMW_INCREMENT:
		req.op_case = TABLETFS__READ_MODIFY_WRITE_REQUEST__OP_INCREMENT;
		req.increment = op->delta;
		break;
	case CELL_RMW_APPEND:
		req.op_case = TABLETFS__READ_MODIFY_WRITE_REQUEST__OP_APPEND;
		req.append = cell_bin(op->bytes);
		break;
	case CELL_RMW_PUT_NEWEST:
		req.op_case =
		    TABLETFS__READ_MODIFY_WRITE_REQUEST__OP_PUT_NEWEST;
		req.put_newest = cell_bin(op->bytes);
		break;
	case CELL_RMW_MOVE_VERSION:
		mv.has_src_ts = mv.has_dst_qualifier = mv.has_dst_ts = true;
		mv.src_ts = op->src_ts;
		mv.dst_family = cell_str(op->dst_family);
		mv.dst_qualifier = cell_bin(op->dst_qualifier);
		mv.dst_ts = op->dst_ts;
		req.op_case =
		    TABLETFS__READ_MODIFY_WRITE_REQUEST__OP_MOVE_VERSION;
		req.move_version = &mv;
		break;
	}
	if ((rc = cell_client_call_row(c, table, slice_make(row.data,
	    row.size), TABLETFS__METHOD__READ_MODIFY_WRITE, &req.base,
	    CELL_RETRY_UNSENT, &tabletfs__read_modify_write_reply__descriptor,
	    (ProtobufCMessage **)&rep, NULL)) < 0)
		return rc;
	cell_client_stamp_seen(c, rep->last_stamp);
	if (result != NULL)
		*result = rep->result;
	if (stamp != NULL)
		*stamp = rep->stamp;
	cell_client_free(&rep->base);
	return 0;
}

static void
column_to(Tabletfs__Column *pc, const struct bt_column *c)
{
	tabletfs__column__init(pc);
	pc->family = cell_str(c->family);
	if (c->has_qualifier) {
		pc->has_qualifier = true;
		pc->qualifier = cell_bin(c->qualifier);
	}
}

int
cell_move_column(struct cell_client *c, const char *table,
    struct bt_bytes row, const struct bt_column *src,
    const struct bt_column *dst, bool sync)
{
	Tabletfs__MoveColumnRequest req = TABLETFS__MOVE_COLUMN_REQUEST__INIT;
	Tabletfs__Column from, to;

	column_to(&from, src);
	column_to(&to, dst);
	req.table = cell_str(table);
	req.has_row = req.has_sync = true;
	req.row = cell_bin(row);
	req.src = &from;
	req.dst = &to;
	req.sync = sync;
	return cell_client_call_row(c, table, slice_make(row.data, row.size),
	    TABLETFS__METHOD__MOVE_COLUMN, &req.base, CELL_RETRY_UNSENT, NULL,
	    NULL, NULL);
}

/* ---- Reading ---- */

/* A regex or value bound of the read options, present when its data is
 * (tabletfs.h), borrowed. */
static void
options_filter_to(protobuf_c_boolean *has, ProtobufCBinaryData *out,
    struct bt_bytes in)
{
	*has = in.data != NULL;
	*out = cell_bin(in);
}

/* Read options as a message; the columns are allocated (options_free). */
static int
options_to(Tabletfs__ReadOptions *o, const struct bt_read_options *ro)
{
	Tabletfs__Column *cols, **colp;
	size_t nc, nr;

	tabletfs__read_options__init(o);
	if (ro == NULL)
		return 0;
	nc = ro->columns != NULL ? ro->column_count : 0;
	nr = ro->column_regexes != NULL ? ro->column_regex_count : 0;
	if (nc + nr > 0) {
		/* One array for both lists; options_free() frees it. */
		cols = bt_calloc(nc + nr, sizeof(*cols));
		colp = bt_calloc(nc + nr, sizeof(*colp));
		if (cols == NULL || colp == NULL) {
			bt_free(cols);
			bt_free(colp);
			return -ENOMEM;
		}
		for (size_t i = 0; i < nc + nr; i++) {
			column_to(&cols[i], i < nc ? &ro->columns[i] :
			    &ro->column_regexes[i - nc]);
			colp[i] = &cols[i];
		}
		o->n_columns = nc;
		o->columns = colp;
		o->n_column_regexes = nr;
		o->column_regexes = colp + nc;
	}
	o->has_cells_per_column = o->has_min_ts = o->has_keys_only = true;
	o->cells_per_column = ro->cells_per_column;
	o->min_ts = ro->min_ts;
	o->keys_only = ro->keys_only;
	if (ro->has_max_ts) {
		o->has_max_ts = true;
		o->max_ts = ro->max_ts;
	}
	options_filter_to(&o->has_row_regex, &o->row_regex, ro->row_regex);
	options_filter_to(&o->has_family_regex, &o->family_regex,
	    ro->family_regex);
	options_filter_to(&o->has_qualifier_regex, &o->qualifier_regex,
	    ro->qualifier_regex);
	options_filter_to(&o->has_value_regex, &o->value_regex,
	    ro->value_regex);
	options_filter_to(&o->has_value_start, &o->value_start,
	    ro->value_start);
	options_filter_to(&o->has_value_end, &o->value_end, ro->value_end);
	o->has_cells_per_row_offset = ro->cells_per_row_offset != 0;
	o->cells_per_row_offset = ro->cells_per_row_offset;
	o->has_cells_per_row_limit = ro->cells_per_row_limit != 0;
	o->cells_per_row_limit = ro->cells_per_row_limit;
	return 0;
}

static void
options_free(Tabletfs__ReadOptions *o)
{
	if (o->n_columns + o->n_column_regexes > 0) {
		bt_free(o->n_columns > 0 ? o->columns[0] :
		    o->column_regexes[0]);
		bt_free(o->n_columns > 0 ? o->columns : o->column_regexes);
	}
}

/* A row from a reply into out. */
static int
row_from(const Tabletfs__Row *pr, struct cells_row *out)
{
	int rc;

	if ((rc = cells_row_start(out, slice_make(pr->key.data,
	    pr->key.len))) < 0)
		return rc;
	for (size_t i = 0; i < pr->n_cells; i++) {
		const Tabletfs__Cell *pc = pr->cells[i];
		struct cell cell;

		if (pc->family == NULL)
			return bt_error_set(-EPROTO, "a cell without family");
		cell.family = slice_str(pc->family);
		cell.qualifier = slice_make(pc->qualifier.data,
		    pc->qualifier.len);
		cell.ts = pc->ts;
		cell.value = slice_make(pc->value.data, pc->value.len);
		cell.value_size = pc->value_size;
		if ((rc = cells_row_add(out, &cell)) < 0)
			return rc;
	}
	return 0;
}

int
cell_read_row(struct cell_client *c, const char *table,
    struct bt_bytes row, const struct bt_read_options *ropts,
    struct cells_row *out)
{
	Tabletfs__ReadRowRequest req = TABLETFS__READ_ROW_REQUEST__INIT;
	Tabletfs__ReadRowReply *rep = NULL;
	Tabletfs__ReadOptions o;
	int rc;

	if ((rc = options_to(&o, ropts)) < 0)
		return rc;
	req.table = cell_str(table);
	req.has_row = true;
	req.row = cell_bin(row);
	req.options = &o;
	rc = cell_client_call_row(c, table, slice_make(row.data, row.size),
	    TABLETFS__METHOD__READ_ROW, &req.base, CELL_RETRY_ANY,
	    &tabletfs__read_row_reply__descriptor, (ProtobufCMessage **)&rep,
	    NULL);
	options_free(&o);
	if (rc < 0)
		return rc;
	if (!rep->found || rep->row == NULL)
		rc = BT_NOTFOUND;
	else
		rc = row_from(rep->row, out);
	cell_client_free(&rep->base);
	return rc;
}

/*
 * A scan crosses tablets (cell_client.h, "Calls on rows"): its scanner is
 * opened at the server of the tablet holding start, its end clipped to
 * the tablet's; when that scanner is done, the next opens at the next
 * tablet's start.  On a cell whose root's server serves every row (a
 * whole route) one scanner covers the whole range.
 */
struct cell_scan {
	struct cell_client *c;
	Tabletfs__ScanRequest req;	/* the opening request */
	Tabletfs__ReadOptions options;
	char *table;
	struct buf start, end;		/* where a new scanner starts; the
					   scan's end */
	uint64_t limit;			/* rows still wanted; 0: all */
	uint64_t scanner;		/* 0: none open */
	struct cell_route route;	/* the scanner's, when open */
	struct buf clipped;		/* the scanner's end */
	bool tablet_done;		/* its tablet is read: go on at
					   route.loc.end */
	Tabletfs__ScanReply *batch;	/* or NULL */
	size_t next;			/* the batch's next row */
	bool done;			/* no row follows the batch */
};

/* The scanner's end: the scan's, clipped to the tablet's.  0 or
 * -ENOMEM. */
static int
scan_clip(struct cell_scan *sc)
{
	const struct buf *tablet_end = &sc->route.loc.end;

	if (!sc->route.whole && tablet_end->n > 0 && (sc->end.n == 0 ||
	    slice_compare(buf_slice(tablet_end), buf_slice(&sc->end)) < 0))
		return buf_set(&sc->clipped, tablet_end->p, tablet_end->n);
	return buf_set(&sc->clipped, sc->end.p, sc->end.n);
}

/* Open a scanner where the scan leaves off, at the server of the tablet
 * holding its start, by deadline: 0 with its first batch in *rep, or
 * negative. */
static int
scan_open_at(struct cell_scan *sc, uint32_t rows, int64_t deadline,
    Tabletfs__ScanReply **rep)
{
	struct slice start = buf_slice(&sc->start);
	int wait = 0;
	bool lost;
	int rc;

	for (;;) {
		rc = cell_client_route(sc->c, sc->table, start, deadline,
		    &sc->route);
		if (rc < 0)
			return rc;
		if (rc == 0) {
			if ((rc = scan_clip(sc)) < 0)
				return rc;
			sc->req.start.data = sc->start.p;
			sc->req.start.len = sc->start.n;
			sc->req.end.data = sc->clipped.p;
			sc->req.end.len = sc->clipped.n;
			sc->req.batch_rows = rows;
			sc->req.has_table_id = !sc->route.whole;
			sc->req.table_id = sc->route.loc.table_id;
			rc = cell_client_call_on(sc->c, sc->route.rpc,
			    TABLETFS__METHOD__SCAN, &sc->req.base, deadline,
			    &tabletfs__scan_reply__descriptor,
			    (ProtobufCMessage **)rep, NULL, &lost);
			if (rc == 0 || rc == -ENOMEM)
				return rc;
			if (!lost && rc != BT_ENOTSERVING)
				return rc;	/* the scan's own error */
			cell_client_route_failed(sc->c, &sc->route, start,
			    rc);
		}
		if ((rc = cell_client_backoff(sc->c, deadline, &wait)) < 0)
			return rc;
	}
}

/*
 * The next batch: from the open scanner, or from a new one that starts
 * where the last row returned leaves off when there is none (the first
 * batch, the next tablet's) or the server lost it.
 */
static int
scan_fetch(struct cell_scan *sc)
{
	Tabletfs__ScanRequest more = TABLETFS__SCAN_REQUEST__INIT;
	Tabletfs__ScanReply *rep = NULL;
	int64_t deadline = cell_client_deadline(sc->c);
	uint64_t rows = SCAN_BATCH_ROWS;
	bool lost;
	int rc;

	if (sc->limit != 0 && sc->limit < rows)
		rows = sc->limit;
	if (sc->batch != NULL)
		cell_client_free(&sc->batch->base);
	sc->batch = NULL;
	if (sc->tablet_done) {
		if ((rc = buf_set(&sc->start, sc->route.loc.end.p,
		    sc->route.loc.end.n)) < 0)
			return rc;
		sc->req.start_exclusive = false;
		sc->tablet_done = false;
	}
	if (sc->scanner != 0) {
		more.has_scanner_id = more.has_batch_rows = true;
		more.has_batch_bytes = true;
		more.scanner_id = sc->scanner;
		more.batch_rows = (uint32_t)rows;
		more.batch_bytes = SCAN_BATCH_BYTES;
		rc = cell_client_call_on(sc->c, sc->route.rpc,
		    TABLETFS__METHOD__SCAN, &more.base, deadline,
		    &tabletfs__scan_reply__descriptor,
		    (ProtobufCMessage **)&rep, NULL, &lost);
		/* Lost, or failed: a new scanner tells which (an error
		 * of the table's own comes back from it too).  A scanner
		 * its server forgot (BT_ENOTSERVING) does not make the
		 * tablet's location stale: opening one again does. */
		if (rc < 0) {
			if (lost)
				cell_client_route_failed(sc->c, &sc->route,
				    buf_slice(&sc->start), rc);
			sc->scanner = 0;
		}
	}
	if (sc->scanner == 0) {
		if ((rc = scan_open_at(sc, (uint32_t)rows, deadline,
		    &rep)) < 0)
			return rc;
		sc->scanner = rep->scanner_id;
	}
	sc->batch = rep;
	sc->next = 0;
	sc->done = false;
	if (rep->done) {
		sc->scanner = 0;	/* the server closed it */
		/* The scan goes on past the tablet's end, if before its
		 * own. */
		if (sc->clipped.n > 0 && (sc->end.n == 0 ||
		    slice_compare(buf_slice(&sc->clipped),
		    buf_slice(&sc->end)) < 0))
			sc->tablet_done = true;
		else
			sc->done = true;
	}
	return 0;
}

int
cell_scan_open(struct cell_client *c, const char *table,
    struct bt_bytes start, bool start_exclusive, struct bt_bytes end,
    const struct bt_read_options *ropts, bool no_cache_fill, uint64_t limit,
    struct cell_scan **out)
{
	struct cell_scan *sc;
	int rc;

	if (table == NULL)
		return bt_error_set(-EINVAL, "no table");
	if ((sc = bt_calloc(1, sizeof(*sc))) == NULL)
		return -ENOMEM;
	buf_init(&sc->start);
	buf_init(&sc->end);
	buf_init(&sc->clipped);
	cell_route_init(&sc->route);
	sc->c = c;
	sc->limit = limit;
	tabletfs__scan_request__init(&sc->req);
	if ((rc = options_to(&sc->options, ropts)) < 0) {
		bt_free(sc);
		return rc;
	}
	if ((sc->table = bt_malloc(strlen(table) + 1)) == NULL ||
	    (rc = buf_set(&sc->start, start.data, start.size)) < 0 ||
	    (rc = buf_set(&sc->end, end.data, end.size)) < 0) {
		cell_scan_close(sc);
		return -ENOMEM;
	}
	memcpy(sc->table, table, strlen(table) + 1);
	sc->req.table = sc->table;
	sc->req.has_start = sc->req.has_start_exclusive = true;
	sc->req.has_end = sc->req.has_no_cache_fill = true;
	sc->req.start_exclusive = start_exclusive;
	sc->req.options = &sc->options;
	sc->req.no_cache_fill = no_cache_fill;
	sc->req.has_batch_rows = sc->req.has_batch_bytes = true;
	sc->req.batch_bytes = SCAN_BATCH_BYTES;
	/* The scanner opens now: the scan reads the table as of this
	 * call, and an unknown table fails here. */
	if ((rc = scan_fetch(sc)) < 0) {
		cell_scan_close(sc);
		return rc;
	}
	*out = sc;
	return 0;
}

int
cell_scan_next(struct cell_scan *sc, struct cells_row *out)
{
	const Tabletfs__Row *pr;
	int rc;

	while (sc->batch == NULL || sc->next == sc->batch->n_rows) {
		if (sc->batch != NULL && sc->done)
			return BT_DONE;
		if ((rc = scan_fetch(sc)) < 0)
			return rc;
	}
	pr = sc->batch->rows[sc->next++];
	if ((rc = row_from(pr, out)) < 0)
		return rc;
	/* A scanner opened again resumes after this row. */
	if ((rc = buf_set(&sc->start, pr->key.data, pr->key.len)) < 0)
		return rc;
	sc->req.start_exclusive = true;
	if (sc->limit != 0)
		sc->limit--;
	return 0;
}

void
cell_scan_close(struct cell_scan *sc)
{
	if (sc == NULL)
		return;
	if (sc->scanner != 0) {
		Tabletfs__ScanRequest req = TABLETFS__SCAN_REQUEST__INIT;

		req.has_scanner_id = true;
		req.scanner_id = sc->scanner;
		(void)cell_client_call_on(sc->c, sc->route.rpc,
		    TABLETFS__METHOD__SCAN_CLOSE, &req.base,
		    cell_client_deadline(sc->c), NULL, NULL, NULL, NULL);
	}
	if (sc->batch != NULL)
		cell_client_free(&sc->batch->base);
	options_free(&sc->options);
	bt_free(sc->table);
	buf_release(&sc->start);
	buf_release(&sc->end);
	buf_release(&sc->clipped);
	cell_route_release(&sc->route);
	bt_free(sc);
}
