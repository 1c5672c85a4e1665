/*
 * service_bulk.c - the service's bulk loads: BULK_OPEN, BULK_PUT,
 * BULK_COMMIT and BULK_ABORT (service.h), each a bt_bulk on the store,
 * kept in the load table of struct service under the invariants of its
 * scanner table (service_int.h), read for "load".
 *
 * A load belongs to the connection that opened it: no other connection
 * reaches it, and it is aborted when that connection closes
 * (service_conn_closed()).  So a client that dies, or loses its
 * connection, leaves nothing behind that it could not name again, and a
 * BULK_OPEN whose reply was lost opened a load that goes with the broken
 * connection: the client may open another on its next one.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "tabletd/service_int.h"
#include "util/alloc.h"
#include "util/error.h"

#define UNPACK(desc, in, msgp) \
	service_pb_unpack(&(desc), (in), (ProtobufCMessage **)(msgp))

struct service_load {
	uint64_t id;
	uint64_t conn;			/* the connection that opened it */
	struct bt_bulk *bulk;
	uint64_t used_ns;		/* CLOCK_MONOTONIC, last released */
	int failed;			/* the error that failed it, sticky */
	char detail[256];		/* and its detail */
	bool busy;
	bool doomed;
	struct service_load *next;	/* on a list of loads to abort */
};

static void
load_free(struct service_load *ld)
{
	bt_bulk_close(ld->bulk);	/* removes its sorted runs */
	bt_free(ld);
}

static void
loads_free_list(struct service_load *list)
{
	while (list != NULL) {
		struct service_load *next = list->next;

		load_free(list);
		list = next;
	}
}

/* Take slot i out of the table: onto *list to be freed once mu is let
 * go, or, busy, marked doomed for its request to free (invariants 2-3). */
static void
table_remove(struct service *svc, unsigned i, struct service_load **list)
{
	struct service_load *ld = svc->loads[i];

	mutex_assert_held(&svc->mu);
	assert(i < svc->load_count);
	svc->loads[i] = svc->loads[--svc->load_count];
	if (ld->busy) {
		ld->doomed = true;
	} else {
		ld->next = *list;
		*list = ld;
	}
}

void
service_loads_abort(struct service *svc, uint64_t conn, bool all)
{
	struct service_load *list = NULL;

	mutex_lock(&svc->mu);
	for (unsigned i = 0; i < svc->load_count;) {
		if (all || svc->loads[i]->conn == conn)
			table_remove(svc, i, &list);
		else
			i++;
	}
	mutex_unlock(&svc->mu);
	loads_free_list(list);
}

unsigned
service_load_count(struct service *svc)
{
	unsigned n;

	mutex_lock(&svc->mu);
	n = svc->load_count;
	mutex_unlock(&svc->mu);
	return n;
}

/*
 * The load id of connection conn, marked busy for the caller; when
 * forget, taken out of the table too, for the caller to free.  -ENOENT
 * for a load this connection does not have, -EBUSY for one in use.
 */
static int
load_take(struct service *svc, uint64_t conn, uint64_t id, bool forget,
    struct service_load **out)
{
	struct service_load *ld = NULL, *none = NULL;
	unsigned i;

	mutex_lock(&svc->mu);
	for (i = 0; i < svc->load_count; i++)
		if (svc->loads[i]->id == id && svc->loads[i]->conn == conn) {
			ld = svc->loads[i];
			break;
		}
	if (ld == NULL) {
		mutex_unlock(&svc->mu);
		return bt_error_set(-ENOENT, "no bulk load %016" PRIx64 " on "
		    "this connection (committed, aborted, or opened on "
		    "another)", id);
	}
	if (ld->busy) {
		mutex_unlock(&svc->mu);
		return bt_error_set(-EBUSY, "bulk load %016" PRIx64 " is in "
		    "use by another request", id);
	}
	ld->busy = true;
	if (forget) {
		table_remove(svc, i, &none);	/* busy: marked doomed */
		ld->doomed = false;		/* the caller frees it */
	}
	assert(none == NULL);
	mutex_unlock(&svc->mu);
	*out = ld;
	return 0;
}

/* Give back a load load_take() gave without forget; one doomed
 * meanwhile is freed. */
static void
load_release(struct service *svc, struct service_load *ld)
{
	bool doomed;

	mutex_lock(&svc->mu);
	ld->busy = false;
	ld->used_ns = service_now_ns();
	doomed = ld->doomed;
	mutex_unlock(&svc->mu);
	if (doomed)
		load_free(ld);
}

/* Fail ld with rc, whose detail it keeps for the later requests. */
static int
load_fail(struct service_load *ld, int rc)
{
	ld->failed = rc;
	snprintf(ld->detail, sizeof(ld->detail), "%s", *bt_error_detail() ?
	    bt_error_detail() : bt_strerror(rc));
	return rc;
}

static int
load_failed(const struct service_load *ld)
{
	return bt_error_set(ld->failed, "this bulk load failed: %s",
	    ld->detail);
}

static int
loads_full(void)
{
	return bt_error_set(-EBUSY, "this server has %d bulk loads open, its "
	    "most: try again once one has ended", SERVICE_MAX_LOADS);
}

/* Abort the loads left idle; then -EBUSY if the table is still full. */
static int
room_make(struct service *svc)
{
	struct service_load *idle = NULL;
	uint64_t now = service_now_ns();
	bool full;

	mutex_lock(&svc->mu);
	for (unsigned i = 0; i < svc->load_count;) {
		struct service_load *ld = svc->loads[i];

		if (!ld->busy && now > ld->used_ns &&
		    now - ld->used_ns >= svc->load_idle_ns)
			table_remove(svc, i, &idle);
		else
			i++;
	}
	full = svc->load_count >= SERVICE_MAX_LOADS;
	mutex_unlock(&svc->mu);
	loads_free_list(idle);
	return full ? loads_full() : 0;
}

/* Enter ld in the table (invariant 1: -EBUSY when another filled it
 * meanwhile). */
static int
load_enter(struct service *svc, struct service_load *ld)
{
	mutex_lock(&svc->mu);
	if (svc->load_count >= SERVICE_MAX_LOADS) {
		mutex_unlock(&svc->mu);
		return loads_full();
	}
	ld->used_ns = service_now_ns();
	svc->loads[svc->load_count++] = ld;
	mutex_unlock(&svc->mu);
	return 0;
}

int
service_bulk_open(struct service *svc, uint64_t conn, struct slice in,
    struct buf *reply)
{
	Tabletfs__BulkOpenReply out = TABLETFS__BULK_OPEN_REPLY__INIT;
	Tabletfs__BulkOpenRequest *r;
	struct bt_bulk_options bo = { 0 };
	struct bt_family_access *fams;
	struct service_load *ld;
	struct bt_access ta;
	char **names;
	size_t n;
	int rc;

	if ((rc = UNPACK(tabletfs__bulk_open_request__descriptor, in,
	    &r)) < 0)
		return rc;
	if (r->table == NULL) {
		rc = service_missing("BulkOpenRequest", "table");
		goto out;
	}
	if ((rc = service_stamp_floor(svc, r->has_stamp_floor,
	    r->stamp_floor)) < 0)
		goto out;
	if ((rc = room_make(svc)) < 0)
		goto out;
	if ((ld = bt_calloc(1, sizeof(*ld))) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	ld->conn = conn;
	if (r->memory_budget > SERVICE_LOAD_MAX_BUDGET)
		bo.memory_budget = SERVICE_LOAD_MAX_BUDGET;
	else
		bo.memory_budget = (size_t)r->memory_budget;
	if ((rc = bt_bulk_open(svc->store, r->table, &bo, &ld->bulk)) < 0)
		goto out_load;
	/* The load checks its cells against the schema as it opened: a
	 * family changed between the two calls fails the load at its
	 * put, never lets a cell in that the load refuses. */
	if ((rc = bt_table_access(svc->store, r->table, &ta, &fams, &n)) < 0)
		goto out_load;
	if ((names = bt_calloc(n + 1, sizeof(*names))) == NULL) {
		rc = -ENOMEM;
		goto out_fams;
	}
	for (size_t i = 0; i < n; i++)
		names[i] = fams[i].name;
	mutex_lock(&svc->mu);
	ld->id = service_next_id(svc);
	mutex_unlock(&svc->mu);
	out.has_bulk_id = out.has_max_cell = true;
	out.bulk_id = ld->id;
	out.max_cell = svc->max_cell;
	out.n_families = n;
	out.families = names;
	if ((rc = service_pb_pack(&out.base, reply)) < 0 ||
	    (rc = load_enter(svc, ld)) < 0)
		goto out_names;
	ld = NULL;		/* the table's now */
out_names:
	bt_free(names);
out_fams:
	free(fams);
out_load:
	if (ld != NULL) {
		bt_bulk_close(ld->bulk);
		bt_free(ld);
	}
out:
	service_pb_free(&r->base);
	return rc;
}

/* Put the cells of r into ld: the first refused fails the load. */
static int
load_put(struct service *svc, struct service_load *ld,
    const Tabletfs__BulkPutRequest *r)
{
	int rc;

	for (size_t i = 0; i < r->n_rows; i++) {
		const Tabletfs__Row *row = r->rows[i];
		struct bt_bytes key = service_bytes(row->has_key, row->key);

		for (size_t j = 0; j < row->n_cells; j++) {
			const Tabletfs__Cell *c = row->cells[j];

			if (c->family == NULL)
				return service_missing("BulkPutRequest cell",
				    "family");
			if (c->has_value && c->value.len > svc->max_cell)
				return bt_error_set(-EFBIG, "value of %zu "
				    "bytes (at most %" PRIu64 " allowed)",
				    c->value.len, svc->max_cell);
			if ((rc = bt_bulk_put(ld->bulk, key, c->family,
			    service_bytes(c->has_qualifier, c->qualifier),
			    c->has_ts ? c->ts : BT_TS_SERVER,
			    service_bytes(c->has_value, c->value))) < 0)
				return rc;
		}
	}
	return 0;
}

int
service_bulk_put(struct service *svc, uint64_t conn, struct slice in,
    struct buf *reply)
{
	Tabletfs__BulkPutRequest *r;
	struct service_load *ld;
	int rc;

	(void)reply;
	if ((rc = UNPACK(tabletfs__bulk_put_request__descriptor, in,
	    &r)) < 0)
		return rc;
	if (!r->has_bulk_id) {
		rc = service_missing("BulkPutRequest", "bulk_id");
		goto out;
	}
	if ((rc = load_take(svc, conn, r->bulk_id, false, &ld)) < 0)
		goto out;
	if (ld->failed < 0)
		rc = load_failed(ld);
	else if ((rc = load_put(svc, ld, r)) < 0)
		load_fail(ld, rc);
	load_release(svc, ld);
out:
	service_pb_free(&r->base);
	return rc;
}

/* A BulkRequest with its bulk_id. */
static int
bulk_request(struct slice in, uint64_t *id)
{
	Tabletfs__BulkRequest *r;
	int rc;

	if ((rc = UNPACK(tabletfs__bulk_request__descriptor, in, &r)) < 0)
		return rc;
	if (!r->has_bulk_id)
		rc = service_missing("BulkRequest", "bulk_id");
	*id = r->bulk_id;
	service_pb_free(&r->base);
	return rc;
}

int
service_bulk_commit(struct service *svc, uint64_t conn, struct slice in,
    struct buf *reply)
{
	Tabletfs__BulkCommitReply out = TABLETFS__BULK_COMMIT_REPLY__INIT;
	struct bt_bulk_stats st;
	struct service_load *ld;
	uint64_t id;
	int rc;

	if ((rc = bulk_request(in, &id)) < 0)
		return rc;
	/* Forgotten whatever comes of it: commit once (tabletfs.h). */
	if ((rc = load_take(svc, conn, id, true, &ld)) < 0)
		return rc;
	if (ld->failed < 0)
		rc = load_failed(ld);
	else
		rc = bt_bulk_commit(ld->bulk, &st);
	if (rc == 0) {
		out.has_cells = out.has_files = true;
		out.has_tablets = out.has_stamp = true;
		out.cells = st.cells;
		out.files = st.files;
		out.tablets = st.tablets;
		out.stamp = st.stamp;
		rc = service_pb_pack(&out.base, reply);
	}
	load_free(ld);
	return rc;
}

int
service_bulk_abort(struct service *svc, uint64_t conn, struct slice in,
    struct buf *reply)
{
	struct service_load *list = NULL;
	uint64_t id;
	int rc;

	(void)reply;
	if ((rc = bulk_request(in, &id)) < 0)
		return rc;
	mutex_lock(&svc->mu);
	for (unsigned i = 0; i < svc->load_count; i++)
		if (svc->loads[i]->id == id && svc->loads[i]->conn == conn) {
			table_remove(svc, i, &list);
			break;
		}
	mutex_unlock(&svc->mu);
	loads_free_list(list);
	return 0;
}
