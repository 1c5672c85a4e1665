/*
 * service.h - a tablet server's request dispatch: the calls of
 * src/rpc/tabletfs.proto executed on a store opened with the public API
 * (docs/design.md section 5), independent of any transport.
 *
 * A request is a method (a Tabletfs__Method value) and the packed request
 * message that the proto names beside it; the reply is the packed reply
 * message, or a status and one line of text.  Every method but SERVE maps
 * onto the bt_ calls of src/api/tabletfs.h, whose contracts hold
 * unchanged; the comments in the proto say which message goes with which
 * call.  What the messages leave open is settled here:
 *
 *  - Absent optional fields take the C API's defaults: an absent row,
 *    qualifier or value is empty, an absent ts is BT_TS_SERVER (-1), an
 *    absent group or gc_policy (or an empty one, as the proto says) is
 *    "default" or "never", absent Group settings are 0 / -1 (unchanged),
 *    an absent or empty table in COMPACT is every table.
 *  - What a call cannot do without is -EINVAL with a detail naming it: a
 *    table name (every call that takes one but COMPACT), a family in a
 *    FamilyRequest, a Family without a name, a Mutation of kind KIND_NONE
 *    (or one the proto does not define), a Condition or Column without a
 *    family, a ReadModifyWrite without family or op, a MoveVersion
 *    without src_ts or dst_family, a MoveColumn without src or dst, a
 *    FAMILY_SET_GC without gc_policy (an empty one is "never"), a
 *    GROUP_SET without a group name.  Bounds and names themselves are
 *    checked by the bt_ layer.
 *  - Bytes that do not unpack as the method's request message are
 *    -EPROTO.  An unknown method, METHOD_NONE and SERVE are -ENOSYS
 *    (SERVE is the process's own business, handled before this).
 *  - MUTATE_ROW replies stamp, as the C call reports it (0 for a
 *    check-and-mutate without expected_ts, whose C call does not, and for
 *    one not applied), and applied (true for an unconditional mutation
 *    that succeeded).
 *  - READ_ROW of a row without a selected cell replies found = false,
 *    status 0.
 *  - CHECK replies status 0 whenever the check ran, sound (result 0) or
 *    not (result BT_ECORRUPT, problems holding the report lines); a check
 *    that could not run is its error as the status.
 *  - SCAN: scanners live in the service (see the SCAN comment in the
 *    proto).  scanner_id 0 opens one with the request's range and
 *    options; later requests name the id, and may give new batch_rows /
 *    batch_bytes (else those of the opening request hold).  A batch holds
 *    up to batch_rows rows (0: SERVICE_BATCH_ROWS) and stops after the row
 *    that brings its packed size to batch_bytes (0: SERVICE_BATCH_BYTES):
 *    always at least one row unless the scan is at its end.  done = true
 *    when the scan reached its end (its last batch may then be empty);
 *    the scanner is closed and forgotten then, and also when a batch
 *    fails (the error is the reply; the client reopens after the last row
 *    it received).  An unknown or forgotten id is BT_ENOTSERVING; an id
 *    another request is using at that moment, -EBUSY.  SCAN_CLOSE
 *    answers 0 even for an unknown id (a scanner in use is closed when
 *    its request ends).  A scanner left idle for the idle time
 *    (SERVICE_SCANNER_IDLE_MS unless set) is closed by the next request
 *    that opens or closes one; at most SERVICE_MAX_SCANNERS are open,
 *    -EMFILE beyond (after closing the idle ones).  Ids are nonzero and
 *    never reused by one service: a counter, scrambled with a random key
 *    so that they are not the obvious 1, 2, 3.
 *  - BULK_*: loads live in the service, each tied to the connection that
 *    opened it (service_handle_conn(); service_handle() is connection 0)
 *    and reachable from that connection only: another's request naming
 *    it, or one naming a load committed, aborted or never opened, is
 *    -ENOENT.  service_conn_closed() aborts a connection's loads.  At
 *    most SERVICE_MAX_LOADS are open, -EBUSY beyond (after aborting
 *    those left idle for SERVICE_LOAD_IDLE_MS); a load in use by another
 *    request at that moment is -EBUSY.  A load's memory budget is at
 *    most SERVICE_LOAD_MAX_BUDGET.  BULK_OPEN replies the families of
 *    the table and max_cell (service_options), which the client checks
 *    its cells against; BULK_PUT fails the whole load on any cell it
 *    refuses, and each later request on it returns that error again.
 *    BULK_COMMIT forgets the load whatever its outcome.
 *  - LAST_SEQ and SPACE are bt_store_last_seq() and bt_store_space().
 *  - CATALOG_*: the store's catalog (catalog.h), for the tablet servers
 *    that do not open it (service_catalog.c): each request names its
 *    caller (-EINVAL without one); a lookup's BT_NOTFOUND is found =
 *    false; CATALOG_TABLET_APPLY is catalog_tablet_apply_as() for the
 *    caller, BT_ENOTSERVING when the tablet is assigned elsewhere.  A
 *    store opened on a cell has no catalog here: -EOPNOTSUPP.
 *    CATALOG_NEXT_NUMBER records the number as pending for the caller
 *    (catalog_next_number_for()), until a tablet names it or
 *    CATALOG_SERVER_GONE names the caller.  The master's CATALOG_ASSIGN
 *    is catalog_tablet_assign_if() (an absent server or expected is
 *    "": none; -ESTALE, -ENOENT), CATALOG_ASSIGNMENTS
 *    catalog_assignments_list(), CATALOG_SERVER_GONE (name: the
 *    server, -EINVAL without) catalog_server_gone().
 *    CATALOG_SCHEMA_VERSION is catalog_schema_version(), which a
 *    tablet server polls to learn of schema changes.
 *  - LOCATE, on the same catalog (-EOPNOTSUPP without one): -EINVAL
 *    without a table, -ENOENT for a table that does not exist; else
 *    the tablet holding row (absent: empty) and up to count - 1 after
 *    it in row order (count 0 is 1; at most SERVICE_LOCATE_MAX in
 *    all), from one read of the catalog, each with its server's
 *    address: the name it is assigned by ("HOST:PORT#EPOCH") up to the
 *    '#', or "" for a tablet unassigned or assigned to a name without
 *    one (an embedded store's).
 *
 * Errors: service_handle() returns a negative tabletfs code (-errno or
 * BT_E*) and writes the one-line message: the detail that the failing
 * call recorded (bt_error_detail()), else bt_strerror(rc); bytes outside
 * printable ASCII are written '?' so that the line is UTF-8 whatever
 * names it quotes.
 *
 * Threads: service_handle() may be called from any number of threads at
 * once; service_new() and service_free() are not concurrent with it.
 * Memory goes through util/alloc.h (bt_malloc), protobuf-c's included,
 * so that a test can fail the Nth allocation: that is -ENOMEM, nothing
 * leaks, and the store is unchanged unless the call had already
 * committed.
 */
#ifndef TABLETFS_TABLETD_SERVICE_H
#define TABLETFS_TABLETD_SERVICE_H

#include <stdint.h>

#include "api/tabletfs.h"
#include "util/buf.h"
#include "util/slice.h"

#define SERVICE_MAX_SCANNERS	1024
#define SERVICE_SCANNER_IDLE_MS	60000u
#define SERVICE_BATCH_ROWS	100u
#define SERVICE_BATCH_BYTES	(1u << 20)
#define SERVICE_MAX_LOADS	4
#define SERVICE_LOAD_IDLE_MS	600000u
#define SERVICE_LOAD_MAX_BUDGET	((size_t)64 << 20)

struct service;

/* Settings of a service; zero means the default. */
struct service_options {
	uint32_t scanner_idle_ms;	/* SERVICE_SCANNER_IDLE_MS */
	uint32_t load_idle_ms;		/* SERVICE_LOAD_IDLE_MS */
	uint64_t max_cell;		/* the store's bt_options.max_cell:
					   BT_DEFAULT_MAX_CELL */
};

/*
 * Serve the requests of tabletfs.proto on store (not owned: it must
 * outlive the service).  0 and *out, or -ENOMEM.
 */
int service_new(struct bt_store *store, struct service **out);
/* The same with settings (opts NULL: the defaults). */
int service_new_with(struct bt_store *store,
    const struct service_options *opts, struct service **out);

/* Close every open scanner, abort every open load and free the service;
 * accepts NULL.  No service_handle() call may be running. */
void service_free(struct service *svc);

/*
 * Execute one request: method a Tabletfs__Method value, request the
 * packed request message.  0 with the packed reply message appended to
 * *reply (nothing for Empty), or a negative code with *reply holding what
 * it held before followed by the one-line message (no newline; none when
 * *reply cannot grow for it: give it room beforehand to be sure of one).
 * The store's own errors pass through unchanged (-ENOENT, BT_ECORRUPT,
 * ...), and so does BT_ENOTSERVING.
 */
int service_handle(struct service *svc, uint32_t method,
    struct slice request, struct buf *reply);
/* The same for a request that came on connection conn (rpc_call.conn;
 * 0 is service_handle()'s), which the bulk loads it opens belong to. */
int service_handle_conn(struct service *svc, uint64_t conn, uint32_t method,
    struct slice request, struct buf *reply);
/* Connection conn closed: abort the loads it opened (rpc_server_options.
 * closed).  Thread-safe; a request of conn may not be running. */
void service_conn_closed(struct service *svc, uint64_t conn);

/*
 * Whether a request of method never waits long (no log sync, no scan, no
 * store-wide work), so that the RPC server may run it on the connection's
 * reader (rpc_server_options.short_method).  Reading one row is.
 */
bool service_method_short(uint32_t method);

/* The scanners and bulk loads open now (for status displays and
 * tests). */
unsigned service_scanner_count(struct service *svc);
unsigned service_load_count(struct service *svc);

#endif
