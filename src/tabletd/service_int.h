/*
 * service_int.h - what the files of the service share: the service
 * itself, its scanner table, the protobuf-c glue (unpacking and packing
 * through util/alloc.h) and the handlers that service.c dispatches to.
 *
 * service.c dispatches and runs the schema and administration calls,
 * service_rows.c the row calls, service_scan.c the scanners,
 * service_bulk.c the bulk loads, service_catalog.c the catalog calls,
 * service_locate.c LOCATE (with service_catalog.c's
 * service_store_catalog()); the others call only what this header
 * declares from service_pb.c.
 */
#ifndef TABLETFS_TABLETD_SERVICE_INT_H
#define TABLETFS_TABLETD_SERVICE_INT_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "rpc/tabletfs.pb-c.h"
#include "tabletd/service.h"
#include "util/error.h"
#include "util/mutex.h"

struct catalog;
struct scanner;
struct service_load;

/*
 * Invariants of the scanner table (guarded by mu):
 *  1. scanners[0..count) are the scanners a request may find, each id
 *     once; count <= SERVICE_MAX_SCANNERS.
 *  2. A busy scanner belongs to the one request that set busy; nothing
 *     else touches its scan.  A busy scanner taken out of the table
 *     (SCAN_CLOSE) is marked doomed, and that request closes it.
 *  3. A scanner out of the table and not busy is closed at once.
 */
struct service {
	struct bt_store *store;
	uint64_t idle_ns;
	uint64_t load_idle_ns;
	uint64_t max_cell;
	struct mutex mu;
	struct scanner **scanners;	/* SERVICE_MAX_SCANNERS slots */
	unsigned count;
	/* The bulk loads (service_bulk.c), under the same invariants as
	 * the scanners, read for "load" (guarded by mu). */
	struct service_load *loads[SERVICE_MAX_LOADS];
	unsigned load_count;
	uint64_t next_id;		/* counter, scrambled by id_key */
	uint64_t id_key;
};

/* A new id for a scanner or a load (service.c): nonzero, never given
 * before by svc.  Caller holds svc->mu. */
uint64_t service_next_id(struct service *svc);

/* CLOCK_MONOTONIC in nanoseconds, for idle times. */
uint64_t service_now_ns(void);

/* ---- protobuf-c glue (service_pb.c) ---- */

/*
 * Unpack in as a message of descriptor d into *out (freed with
 * service_pb_free()).  0, -EPROTO for bytes that do not unpack, -ENOMEM.
 */
int service_pb_unpack(const ProtobufCMessageDescriptor *d, struct slice in,
    ProtobufCMessage **out);
void service_pb_free(ProtobufCMessage *m);
/* Append m packed to reply.  0 or -ENOMEM. */
int service_pb_pack(const ProtobufCMessage *m, struct buf *reply);
/* Append m packed as field number field (length-delimited) of an outer
 * message: how a repeated message is packed one element at a time. */
int service_pb_pack_field(uint32_t field, const ProtobufCMessage *m,
    struct buf *reply);

/* -EINVAL, with the detail "what: no thing". */
static inline int
service_missing(const char *what, const char *thing)
{
	(void)bt_error_set(-EINVAL, "%s: no %s", what, thing);
	return -EINVAL;
}

static inline struct bt_bytes
service_bytes(bool has, ProtobufCBinaryData b)
{
	struct bt_bytes out = { has ? b.data : NULL, has ? b.len : 0 };

	if (out.data == NULL)
		out.data = "";
	return out;
}

/* Bytes for a reply, borrowed from b. */
static inline ProtobufCBinaryData
service_pb_bytes(struct bt_bytes b)
{
	ProtobufCBinaryData out = { b.size,
	    (uint8_t *)(b.data != NULL ? b.data : "") };

	return out;
}

/* ---- rows (service_rows.c) ---- */

/*
 * A proto Row built over a bt_row, borrowing every byte from it: cells
 * point into scratch arrays that service_row_view grows as needed.
 */
struct service_row_view {
	Tabletfs__Row row;
	Tabletfs__Cell *cells;
	Tabletfs__Cell **cell_ptrs;
	size_t cap;
};

void service_row_view_init(struct service_row_view *v);
void service_row_view_release(struct service_row_view *v);
/* Point v at r.  0 or -ENOMEM. */
int service_row_view_set(struct service_row_view *v, const struct bt_row *r);

/*
 * Convert read options (NULL: every cell); the columns array is allocated
 * into *columns when there are filters (bt_free() it, NULL or not).
 * 0, -EINVAL for a column without family, -ENOMEM.
 */
int service_read_options(const Tabletfs__ReadOptions *in,
    struct bt_read_options *out, struct bt_column **columns);

/* The handlers: request unpacked by each, reply packed onto reply. */
int service_mutate_row(struct service *svc, struct slice req,
    struct buf *reply);
int service_mutate_rows(struct service *svc, struct slice req,
    struct buf *reply);
int service_read_modify_write(struct service *svc, struct slice req,
    struct buf *reply);
int service_move_column(struct service *svc, struct slice req,
    struct buf *reply);
int service_read_row(struct service *svc, struct slice req,
    struct buf *reply);

/* ---- scanners (service_scan.c) ---- */

int service_scan(struct service *svc, struct slice req, struct buf *reply);
int service_scan_close(struct service *svc, struct slice req,
    struct buf *reply);
/* Close every scanner: service_free(), no request running. */
void service_scanners_close_all(struct service *svc);

/* ---- bulk loads (service_bulk.c) ---- */

int service_bulk_open(struct service *svc, uint64_t conn, struct slice req,
    struct buf *reply);
int service_bulk_put(struct service *svc, uint64_t conn, struct slice req,
    struct buf *reply);
int service_bulk_commit(struct service *svc, uint64_t conn,
    struct slice req, struct buf *reply);
int service_bulk_abort(struct service *svc, uint64_t conn, struct slice req,
    struct buf *reply);
/* Abort the loads of conn (every load when all): service_conn_closed()
 * and service_free(). */
void service_loads_abort(struct service *svc, uint64_t conn, bool all);

/* ---- the catalog, for the other tablet servers (service_catalog.c) ---- */

int service_catalog_table_get(struct service *svc, struct slice req,
    struct buf *reply);
int service_catalog_table_get_by_id(struct service *svc, struct slice req,
    struct buf *reply);
int service_catalog_table_list(struct service *svc, struct slice req,
    struct buf *reply);
int service_catalog_tablets_list(struct service *svc, struct slice req,
    struct buf *reply);
int service_catalog_files_list(struct service *svc, struct slice req,
    struct buf *reply);
int service_catalog_next_number(struct service *svc, struct slice req,
    struct buf *reply);
int service_catalog_tablet_apply(struct service *svc, struct slice req,
    struct buf *reply);
int service_catalog_file_is_live(struct service *svc, struct slice req,
    struct buf *reply);
int service_catalog_schema_version(struct service *svc, struct slice req,
    struct buf *reply);
int service_catalog_assign(struct service *svc, struct slice req,
    struct buf *reply);
int service_catalog_assignments(struct service *svc, struct slice req,
    struct buf *reply);
int service_catalog_server_gone(struct service *svc, struct slice req,
    struct buf *reply);
/* CATALOG_TABLET_REPLACE (service_replace.c). */
int service_catalog_tablet_replace(struct service *svc, struct slice req,
    struct buf *reply);
/* The catalog this service's store keeps (the root's server's): 0 and
 * *out, or -EOPNOTSUPP with a detail (a store that is a cell's client
 * keeps none here). */
int service_store_catalog(struct service *svc, struct catalog **out);

/* ---- where tablets are served (service_locate.c) ---- */

/* LOCATE answers at most this many tablets (its count is capped). */
#define SERVICE_LOCATE_MAX	64

int service_locate(struct service *svc, struct slice req,
    struct buf *reply);

/*
 * A write call's stamp_floor (tabletfs.proto, above MutateRowRequest),
 * observed by the server before the call writes: server_stamp_observe()'s
 * result.
 */
int service_stamp_floor(struct service *svc, protobuf_c_boolean has,
    int64_t floor);
/* A write reply's last_stamp: the server's, once the call wrote. */
bool service_last_stamp(struct service *svc, int64_t *last);

/* The table id a call on rows names (has: whether it names one) against
 * the store's (server_table_id_check()): 0 or BT_ENOTSERVING. */
int service_table_id_check(struct service *svc, const char *table,
    protobuf_c_boolean has, uint64_t id);

#endif
