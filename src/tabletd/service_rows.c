/*
 * service_rows.c - the row calls of the service: MUTATE_ROW,
 * MUTATE_ROWS, READ_MODIFY_WRITE, MOVE_COLUMN, READ_ROW (service.h), and the
 * conversions of read options and rows that scans share.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "api/api_server.h"
#include "server/server.h"
#include "tabletd/service_int.h"
#include "util/alloc.h"
#include "util/error.h"

#define UNPACK(desc, in, msgp) \
	service_pb_unpack(&(desc), (in), (ProtobufCMessage **)(msgp))

static struct bt_write_options
write_options(bool has_sync, bool sync)
{
	struct bt_write_options w = { has_sync && sync };

	return w;
}

/* ---- MUTATE_ROW ---- */

/* Convert mutations into *out (bt_free it).  0, -EINVAL, -ENOMEM. */
static int
mutations_from(Tabletfs__Mutation **in, size_t count,
    struct bt_mutation **out)
{
	struct bt_mutation *muts;

	*out = NULL;
	if (count == 0)
		return 0;	/* the bt_ call says what it thinks of that */
	if ((muts = bt_calloc(count, sizeof(*muts))) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < count; i++) {
		const Tabletfs__Mutation *m = in[i];

		switch (m->has_kind ? m->kind : 0) {
		case TABLETFS__MUTATION__KIND__PUT:
		case TABLETFS__MUTATION__KIND__DELETE_VERSION:
		case TABLETFS__MUTATION__KIND__DELETE_COLUMN:
		case TABLETFS__MUTATION__KIND__DELETE_FAMILY:
		case TABLETFS__MUTATION__KIND__DELETE_ROW:
			break;
		default:
			bt_free(muts);
			return bt_error_set(-EINVAL,
			    "Mutation %zu: no kind, or an unknown one", i);
		}
		if (m->family == NULL &&
		    m->kind != TABLETFS__MUTATION__KIND__DELETE_ROW) {
			bt_free(muts);
			return bt_error_set(-EINVAL, "Mutation %zu: no family",
			    i);
		}
		/* The proto's kinds are the C API's numbers. */
		muts[i].kind = (enum bt_mutation_kind)m->kind;
		muts[i].family = m->family;
		muts[i].qualifier = service_bytes(m->has_qualifier,
		    m->qualifier);
		muts[i].ts = m->has_ts ? m->ts : BT_TS_SERVER;
		muts[i].value = service_bytes(m->has_value, m->value);
	}
	*out = muts;
	return 0;
}

int
service_stamp_floor(struct service *svc, protobuf_c_boolean has,
    int64_t floor)
{
	if (!has || floor <= 0)
		return 0;
	return server_stamp_observe(api_store_server(svc->store), floor,
	    NULL);
}

bool
service_last_stamp(struct service *svc, int64_t *last)
{
	return server_stamp_observe(api_store_server(svc->store), 0,
	    last) == 0;
}

int
service_table_id_check(struct service *svc, const char *table,
    protobuf_c_boolean has, uint64_t id)
{
	if (!has)
		return 0;
	return server_table_id_check(api_store_server(svc->store), table, id);
}

int
service_mutate_row(struct service *svc, struct slice in, struct buf *reply)
{
	Tabletfs__MutateRowReply out = TABLETFS__MUTATE_ROW_REPLY__INIT;
	Tabletfs__MutateRowRequest *r;
	const Tabletfs__Condition *c;
	struct bt_write_options w;
	struct bt_bytes row, expected;
	struct bt_mutation *muts;
	int64_t stamp = 0;
	bool applied = true;
	int rc;

	if ((rc = UNPACK(tabletfs__mutate_row_request__descriptor, in,
	    &r)) < 0)
		return rc;
	c = r->condition;
	if (r->table == NULL) {
		rc = service_missing("MutateRowRequest", "table");
		goto out;
	}
	if ((rc = service_table_id_check(svc, r->table, r->has_table_id,
	    r->table_id)) != 0)
		goto out;
	if (c != NULL && c->family == NULL) {
		rc = service_missing("MutateRowRequest condition", "family");
		goto out;
	}
	if ((rc = service_stamp_floor(svc, r->has_stamp_floor,
	    r->stamp_floor)) < 0)
		goto out;
	if ((rc = mutations_from(r->mutations, r->n_mutations, &muts)) < 0)
		goto out;
	row = service_bytes(r->has_row, r->row);
	w = write_options(r->has_sync, r->sync);
	if (c == NULL) {
		rc = bt_mutate_row(svc->store, r->table, row, muts,
		    r->n_mutations, &w, &stamp);
	} else {
		expected = service_bytes(c->has_expected, c->expected);
		if (c->has_expected_ts)
			rc = bt_check_version_and_mutate(svc->store,
			    r->table, row, c->family,
			    service_bytes(c->has_qualifier, c->qualifier),
			    c->has_expected ? &expected : NULL,
			    c->expected_ts, muts, r->n_mutations, &w,
			    &applied, &stamp);
		else
			rc = bt_check_and_mutate(svc->store, r->table, row,
			    c->family,
			    service_bytes(c->has_qualifier, c->qualifier),
			    c->has_expected ? &expected : NULL, muts,
			    r->n_mutations, &w, &applied);
	}
	bt_free(muts);
	if (rc < 0)
		goto out;
	out.has_stamp = out.has_applied = true;
	out.stamp = applied ? stamp : 0;
	out.applied = applied;
	out.has_last_stamp = service_last_stamp(svc, &out.last_stamp);
	rc = service_pb_pack(&out.base, reply);
out:
	service_pb_free(&r->base);
	return rc;
}

/* ---- READ_MODIFY_WRITE ---- */

static int
move_version(struct service *svc, const Tabletfs__ReadModifyWriteRequest *r,
    const struct bt_write_options *w, int64_t *stamp)
{
	const Tabletfs__MoveVersion *mv = r->move_version;

	if (mv == NULL || !mv->has_src_ts)
		return service_missing("MoveVersion", "src_ts");
	if (mv->dst_family == NULL)
		return service_missing("MoveVersion", "dst_family");
	return bt_move_version(svc->store, r->table,
	    service_bytes(r->has_row, r->row), r->family,
	    service_bytes(r->has_qualifier, r->qualifier), mv->src_ts,
	    mv->dst_family,
	    service_bytes(mv->has_dst_qualifier, mv->dst_qualifier),
	    mv->has_dst_ts ? mv->dst_ts : BT_TS_SERVER, w, stamp);
}

/* ---- MUTATE_ROWS ---- */

/* Free what rows_from_entries() made. */
static void
entries_free(struct bt_row_mutation *rows, size_t n)
{
	if (rows == NULL)
		return;
	for (size_t i = 0; i < n; i++)
		bt_free((void *)rows[i].muts);
	bt_free(rows);
}

/*
 * Convert the entries into *out (entries_free() it): an entry whose
 * mutations do not convert gets no mutations, and its error goes into
 * status[i] (bt_mutate_rows() then fails that row alone, and the error
 * given here is what is reported for it).  0 or -ENOMEM.
 */
static int
rows_from_entries(Tabletfs__MutateRowsEntry **in, size_t n, int *status,
    struct bt_row_mutation **out)
{
	struct bt_row_mutation *rows;
	struct bt_mutation *muts;
	int rc;

	if ((rows = bt_calloc(n, sizeof(*rows))) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const Tabletfs__MutateRowsEntry *e = in[i];

		status[i] = 0;
		rows[i].row = service_bytes(e->has_row, e->row);
		if ((rc = mutations_from(e->mutations, e->n_mutations,
		    &muts)) == -ENOMEM) {
			entries_free(rows, n);
			return rc;
		}
		if (rc < 0) {
			status[i] = rc;
			continue;
		}
		rows[i].muts = muts;
		rows[i].count = e->n_mutations;
	}
	*out = rows;
	return 0;
}

int
service_mutate_rows(struct service *svc, struct slice in, struct buf *reply)
{
	Tabletfs__MutateRowsReply out = TABLETFS__MUTATE_ROWS_REPLY__INIT;
	Tabletfs__MutateRowsRequest *r;
	struct bt_row_mutation *rows = NULL;
	struct bt_write_options w;
	int32_t *status = NULL;
	int *conv = NULL, *results = NULL, rc, first = 0;
	char detail[256] = "";

	if ((rc = UNPACK(tabletfs__mutate_rows_request__descriptor, in,
	    &r)) < 0)
		return rc;
	if (r->table == NULL) {
		rc = service_missing("MutateRowsRequest", "table");
		goto out;
	}
	if ((rc = service_table_id_check(svc, r->table, r->has_table_id,
	    r->table_id)) != 0)
		goto out;
	if ((rc = service_stamp_floor(svc, r->has_stamp_floor,
	    r->stamp_floor)) < 0)
		goto out;
	if (r->n_entries == 0) {
		rc = bt_error_set(-EINVAL, "MutateRowsRequest: no entries");
		goto out;
	}
	conv = bt_calloc(r->n_entries, sizeof(*conv));
	results = bt_calloc(r->n_entries, sizeof(*results));
	status = bt_calloc(r->n_entries, sizeof(*status));
	if (conv == NULL || results == NULL || status == NULL) {
		rc = -ENOMEM;
		goto out_free;
	}
	if ((rc = rows_from_entries(r->entries, r->n_entries, conv,
	    &rows)) < 0)
		goto out_free;
	for (size_t i = 0; i < r->n_entries && first == 0; i++)
		if ((first = conv[i]) < 0)
			snprintf(detail, sizeof(detail), "entry %zu: %s", i,
			    bt_error_detail());
	w = write_options(r->has_sync, r->sync);
	bt_error_clear();
	rc = bt_mutate_rows(svc->store, r->table, rows, r->n_entries, &w,
	    results);
	out.has_last_stamp = service_last_stamp(svc, &out.last_stamp);
	if (rc < 0 && rc != first)
		snprintf(detail, sizeof(detail), "%s", bt_error_detail());
	for (size_t i = 0; i < r->n_entries; i++)
		status[i] = conv[i] < 0 ? conv[i] : results[i];
	out.n_status = r->n_entries;
	out.status = status;
	if (rc < 0)
		out.detail = detail;
	rc = service_pb_pack(&out.base, reply);
out_free:
	entries_free(rows, r->n_entries);
	bt_free(status);
	bt_free(results);
	bt_free(conv);
out:
	service_pb_free(&r->base);
	return rc;
}

int
service_read_modify_write(struct service *svc, struct slice in,
    struct buf *reply)
{
	Tabletfs__ReadModifyWriteReply out =
	    TABLETFS__READ_MODIFY_WRITE_REPLY__INIT;
	Tabletfs__ReadModifyWriteRequest *r;
	struct bt_write_options w;
	struct bt_bytes row, qual;
	int64_t stamp = 0, result = 0;
	int rc;

	if ((rc = UNPACK(tabletfs__read_modify_write_request__descriptor, in,
	    &r)) < 0)
		return rc;
	if (r->table == NULL || r->family == NULL) {
		rc = service_missing("ReadModifyWriteRequest",
		    r->table == NULL ? "table" : "family");
		goto out;
	}
	if ((rc = service_table_id_check(svc, r->table, r->has_table_id,
	    r->table_id)) != 0)
		goto out;
	if ((rc = service_stamp_floor(svc, r->has_stamp_floor,
	    r->stamp_floor)) < 0)
		goto out;
	row = service_bytes(r->has_row, r->row);
	qual = service_bytes(r->has_qualifier, r->qualifier);
	w = write_options(r->has_sync, r->sync);
	switch (r->op_case) {
	case TABLETFS__READ_MODIFY_WRITE_REQUEST__OP_INCREMENT:
		rc = bt_increment(svc->store, r->table, row, r->family, qual,
		    r->increment, &w, &result, &stamp);
		out.has_result = true;
		break;
	case TABLETFS__READ_MODIFY_WRITE_REQUEST__OP_APPEND:
		rc = bt_append(svc->store, r->table, row, r->family, qual,
		    service_bytes(true, r->append), &w, &stamp);
		break;
	case TABLETFS__READ_MODIFY_WRITE_REQUEST__OP_PUT_NEWEST:
		rc = bt_put_newest(svc->store, r->table, row, r->family, qual,
		    service_bytes(true, r->put_newest), &w, &stamp);
		break;
	case TABLETFS__READ_MODIFY_WRITE_REQUEST__OP_MOVE_VERSION:
		rc = move_version(svc, r, &w, &stamp);
		break;
	default:
		rc = service_missing("ReadModifyWriteRequest", "op");
		break;
	}
	if (rc < 0)
		goto out;
	out.has_stamp = true;
	out.stamp = stamp;
	out.result = result;
	out.has_last_stamp = service_last_stamp(svc, &out.last_stamp);
	rc = service_pb_pack(&out.base, reply);
out:
	service_pb_free(&r->base);
	return rc;
}

/* ---- MOVE_COLUMN ---- */

static int
column_from(const Tabletfs__Column *in, const char *what,
    struct bt_column *out)
{
	if (in == NULL || in->family == NULL)
		return service_missing(what, "family");
	out->family = in->family;
	out->has_qualifier = in->has_qualifier;
	out->qualifier = service_bytes(in->has_qualifier, in->qualifier);
	return 0;
}

int
service_move_column(struct service *svc, struct slice in, struct buf *reply)
{
	Tabletfs__MoveColumnRequest *r;
	struct bt_column src, dst;
	struct bt_write_options w;
	int rc;

	if ((rc = UNPACK(tabletfs__move_column_request__descriptor, in,
	    &r)) < 0)
		return rc;
	if (r->table == NULL)
		rc = service_missing("MoveColumnRequest", "table");
	else if ((rc = service_table_id_check(svc, r->table,
	    r->has_table_id, r->table_id)) != 0)
		;
	else if ((rc = column_from(r->src, "MoveColumnRequest src",
	    &src)) == 0 &&
	    (rc = column_from(r->dst, "MoveColumnRequest dst", &dst)) == 0) {
		w = write_options(r->has_sync, r->sync);
		rc = bt_move_column(svc->store, r->table,
		    service_bytes(r->has_row, r->row), &src, &dst, &w);
	}
	service_pb_free(&r->base);
	return rc;
}

/* ---- READ_ROW, and what scans share ---- */

/* A regex or value bound of ReadOptions: present (data not NULL, even
 * when empty) or absent (tabletfs.h), borrowed from the message. */
static struct bt_bytes
service_filter_bytes(protobuf_c_boolean has, ProtobufCBinaryData b)
{
	static const uint8_t empty[1];

	if (!has)
		return (struct bt_bytes){ NULL, 0 };
	return (struct bt_bytes){ b.len > 0 ? b.data : empty, b.len };
}

int
service_read_options(const Tabletfs__ReadOptions *in,
    struct bt_read_options *out, struct bt_column **columns)
{
	struct bt_column *cols = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	*columns = NULL;
	if (in == NULL)
		return 0;
	if (in->n_columns + in->n_column_regexes > 0) {
		size_t nc = in->n_columns;

		if ((cols = bt_calloc(nc + in->n_column_regexes,
		    sizeof(*cols))) == NULL)
			return -ENOMEM;
		for (size_t i = 0; i < nc + in->n_column_regexes; i++) {
			if ((rc = column_from(i < nc ? in->columns[i] :
			    in->column_regexes[i - nc],
			    "ReadOptions column", &cols[i])) < 0) {
				bt_free(cols);
				return rc;
			}
		}
		if (in->n_column_regexes > 0) {
			out->column_regexes = cols + nc;
			out->column_regex_count = in->n_column_regexes;
		}
	}
	out->columns = in->n_columns > 0 ? cols : NULL;
	out->column_count = in->n_columns;
	out->cells_per_column = in->has_cells_per_column ?
	    in->cells_per_column : 0;
	out->min_ts = in->has_min_ts ? in->min_ts : 0;
	out->has_max_ts = in->has_max_ts;
	out->max_ts = in->has_max_ts ? in->max_ts : 0;
	out->keys_only = in->has_keys_only && in->keys_only;
	out->row_regex = service_filter_bytes(in->has_row_regex,
	    in->row_regex);
	out->family_regex = service_filter_bytes(in->has_family_regex,
	    in->family_regex);
	out->qualifier_regex = service_filter_bytes(in->has_qualifier_regex,
	    in->qualifier_regex);
	out->value_regex = service_filter_bytes(in->has_value_regex,
	    in->value_regex);
	out->value_start = service_filter_bytes(in->has_value_start,
	    in->value_start);
	out->value_end = service_filter_bytes(in->has_value_end,
	    in->value_end);
	out->cells_per_row_offset = in->has_cells_per_row_offset ?
	    in->cells_per_row_offset : 0;
	out->cells_per_row_limit = in->has_cells_per_row_limit ?
	    in->cells_per_row_limit : 0;
	*columns = cols;
	return 0;
}

void
service_row_view_init(struct service_row_view *v)
{
	memset(v, 0, sizeof(*v));
}

void
service_row_view_release(struct service_row_view *v)
{
	bt_free(v->cells);
	bt_free(v->cell_ptrs);
	service_row_view_init(v);
}

int
service_row_view_set(struct service_row_view *v, const struct bt_row *r)
{
	if (r->cell_count > v->cap) {
		size_t cap = r->cell_count;
		Tabletfs__Cell *cells;
		Tabletfs__Cell **ptrs;

		if ((cells = bt_calloc(cap, sizeof(*cells))) == NULL)
			return -ENOMEM;
		if ((ptrs = bt_calloc(cap, sizeof(*ptrs))) == NULL) {
			bt_free(cells);
			return -ENOMEM;
		}
		bt_free(v->cells);
		bt_free(v->cell_ptrs);
		v->cells = cells;
		v->cell_ptrs = ptrs;
		v->cap = cap;
	}
	tabletfs__row__init(&v->row);
	v->row.has_key = true;
	v->row.key = service_pb_bytes(r->key);
	v->row.n_cells = r->cell_count;
	v->row.cells = v->cell_ptrs;
	for (size_t i = 0; i < r->cell_count; i++) {
		const struct bt_cell *bc = &r->cells[i];
		Tabletfs__Cell *c = &v->cells[i];

		tabletfs__cell__init(c);
		c->family = (char *)bc->family;
		c->has_qualifier = c->has_ts = true;
		c->has_value = c->has_value_size = true;
		c->qualifier = service_pb_bytes(bc->qualifier);
		c->ts = bc->ts;
		c->value = service_pb_bytes(bc->value);
		c->value_size = bc->value_size;
		v->cell_ptrs[i] = c;
	}
	return 0;
}

/*
 * A read names the table id it located as a rule, and that lookup's
 * table is kept for the read itself: one lookup of the name a call.
 */
int
service_read_row(struct service *svc, struct slice in, struct buf *reply)
{
	Tabletfs__ReadRowReply out = TABLETFS__READ_ROW_REPLY__INIT;
	struct service_row_view view;
	struct bt_read_options ro;
	Tabletfs__ReadRowRequest *r;
	struct server_table *t = NULL;
	struct bt_column *columns;
	struct bt_row *row = NULL;
	int rc;

	if ((rc = UNPACK(tabletfs__read_row_request__descriptor, in,
	    &r)) < 0)
		return rc;
	if (r->table == NULL) {
		rc = service_missing("ReadRowRequest", "table");
		goto out;
	}
	if (r->has_table_id && (rc = server_table_id_hold(
	    api_store_server(svc->store), r->table, r->table_id, &t)) != 0)
		goto out;
	if ((rc = service_read_options(r->options, &ro, &columns)) < 0)
		goto out;
	if (t != NULL)
		rc = api_read_row_held(svc->store, t, r->table_id, r->table,
		    service_bytes(r->has_row, r->row), &ro, &row);
	else
		rc = bt_read_row(svc->store, r->table,
		    service_bytes(r->has_row, r->row), &ro, &row);
	bt_free(columns);
	if (rc < 0)
		goto out;
	service_row_view_init(&view);
	out.has_found = true;
	out.found = rc == 0;
	if (rc == 0) {
		if ((rc = service_row_view_set(&view, row)) < 0)
			goto out_row;
		out.row = &view.row;
	}
	rc = service_pb_pack(&out.base, reply);
out_row:
	service_row_view_release(&view);
	bt_row_free(row);
out:
	server_table_unref(t);
	service_pb_free(&r->base);
	return rc;
}
