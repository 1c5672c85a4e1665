/*
 * service_scan.c - the service's scanners: SCAN and SCAN_CLOSE
 * (service.h), under the invariants listed at struct service
 * (service_int.h).
 *
 * A batch is packed straight from the scan's borrowed rows, one Row
 * field of the ScanReply at a time (a repeated field packs as its
 * elements one after the other), so that no row is copied and the batch
 * takes no more memory than its packed bytes.
 */
#include <errno.h>
#include <inttypes.h>

#include "tabletd/service_int.h"
#include "util/alloc.h"
#include "util/error.h"

#define SCAN_REPLY_ROWS_FIELD	2	/* ScanReply.rows */

struct scanner {
	uint64_t id;
	struct bt_scan *scan;
	/* The opening request: the scan's column filter borrows its
	 * families and qualifiers. */
	Tabletfs__ScanRequest *opened;
	uint64_t used_ns;		/* CLOCK_MONOTONIC, last released */
	uint32_t batch_rows;
	uint32_t batch_bytes;
	bool busy;
	bool doomed;
	struct scanner *next;		/* on a list of scanners to close */
};

static void
scanner_close(struct scanner *sc)
{
	bt_scan_close(sc->scan);
	service_pb_free(&sc->opened->base);
	bt_free(sc);
}

static void
scanners_close_list(struct scanner *list)
{
	while (list != NULL) {
		struct scanner *next = list->next;

		scanner_close(list);
		list = next;
	}
}

/* The slot of id, or svc->count. */
static unsigned
table_find(struct service *svc, uint64_t id)
{
	unsigned i;

	mutex_assert_held(&svc->mu);
	for (i = 0; i < svc->count; i++)
		if (svc->scanners[i]->id == id)
			break;
	return i;
}

static struct scanner *
table_remove(struct service *svc, unsigned i)
{
	struct scanner *sc = svc->scanners[i];

	mutex_assert_held(&svc->mu);
	assert(i < svc->count);
	svc->scanners[i] = svc->scanners[--svc->count];
	return sc;
}

static bool
scanner_expired(const struct service *svc, const struct scanner *sc,
    uint64_t now)
{
	/* now may be older than used_ns when it was read before mu. */
	return !sc->busy && now > sc->used_ns &&
	    now - sc->used_ns >= svc->idle_ns;
}

/* Take the expired scanners out of the table onto *list (invariant 3:
 * the caller closes them once it let go of mu). */
static void
table_sweep(struct service *svc, uint64_t now, struct scanner **list)
{
	mutex_assert_held(&svc->mu);
	for (unsigned i = 0; i < svc->count;) {
		struct scanner *sc = svc->scanners[i];

		if (!scanner_expired(svc, sc, now)) {
			i++;
			continue;
		}
		table_remove(svc, i);
		sc->next = *list;
		*list = sc;
	}
}

/* Open a scanner for r (which it keeps) and enter it in the table, busy
 * for the caller. */
static int
scanner_open(struct service *svc, Tabletfs__ScanRequest *r,
    struct scanner **out)
{
	struct bt_scan_options so = { 0 };
	struct scanner *sc, *idle = NULL;
	struct bt_column *columns;
	int rc;

	if (r->table == NULL)
		return service_missing("ScanRequest", "table");
	if ((rc = service_table_id_check(svc, r->table, r->has_table_id,
	    r->table_id)) != 0)
		return rc;
	if ((sc = bt_calloc(1, sizeof(*sc))) == NULL)
		return -ENOMEM;
	if ((rc = service_read_options(r->options, &so.read, &columns)) < 0)
		goto out_free;
	so.start = service_bytes(r->has_start, r->start);
	so.start_exclusive = r->has_start_exclusive && r->start_exclusive;
	so.end = service_bytes(r->has_end, r->end);
	so.no_cache_fill = r->has_no_cache_fill && r->no_cache_fill;
	so.lend_values = true;
	rc = bt_scan_open(svc->store, r->table, &so, &sc->scan);
	bt_free(columns);
	if (rc < 0)
		goto out_free;
	sc->opened = r;
	sc->batch_rows = r->has_batch_rows ? r->batch_rows : 0;
	sc->batch_bytes = r->has_batch_bytes ? r->batch_bytes : 0;
	sc->busy = true;

	mutex_lock(&svc->mu);
	table_sweep(svc, service_now_ns(), &idle);
	if (svc->count >= SERVICE_MAX_SCANNERS) {
		mutex_unlock(&svc->mu);
		scanners_close_list(idle);
		bt_scan_close(sc->scan);
		rc = bt_error_set(-EMFILE, "%u scanners open already",
		    (unsigned)SERVICE_MAX_SCANNERS);
		goto out_free;
	}
	sc->id = service_next_id(svc);
	svc->scanners[svc->count++] = sc;
	mutex_unlock(&svc->mu);
	scanners_close_list(idle);
	*out = sc;
	return 0;
out_free:
	bt_free(sc);
	return rc;
}

/* Find the scanner r names and make it busy for the caller, taking new
 * batch sizes from r. */
static int
scanner_acquire(struct service *svc, const Tabletfs__ScanRequest *r,
    struct scanner **out)
{
	struct scanner *sc, *expired = NULL;
	unsigned i;
	int rc = 0;

	mutex_lock(&svc->mu);
	i = table_find(svc, r->scanner_id);
	if (i == svc->count) {
		rc = BT_ENOTSERVING;
	} else if ((sc = svc->scanners[i])->busy) {
		rc = bt_error_set(-EBUSY, "scanner %" PRIu64 ": in use by "
		    "another request", r->scanner_id);
	} else if (scanner_expired(svc, sc, service_now_ns())) {
		expired = table_remove(svc, i);
		rc = BT_ENOTSERVING;
	} else {
		sc->busy = true;
		if (r->has_batch_rows)
			sc->batch_rows = r->batch_rows;
		if (r->has_batch_bytes)
			sc->batch_bytes = r->batch_bytes;
		*out = sc;
	}
	mutex_unlock(&svc->mu);
	if (expired != NULL)
		scanner_close(expired);
	if (rc == BT_ENOTSERVING)
		bt_error_set(rc, "scanner %" PRIu64 ": not open here",
		    r->scanner_id);
	return rc;
}

/* Give sc back after a batch: closed when it is done, failed (keep is
 * false) or doomed, else idle from now. */
static void
scanner_release(struct service *svc, struct scanner *sc, bool keep)
{
	bool close = false;

	mutex_lock(&svc->mu);
	assert(sc->busy);
	sc->busy = false;
	if (sc->doomed) {
		close = true;
	} else if (!keep) {
		table_remove(svc, table_find(svc, sc->id));
		close = true;
	} else {
		sc->used_ns = service_now_ns();
	}
	mutex_unlock(&svc->mu);
	if (close)
		scanner_close(sc);
}

/* Pack a batch of sc's rows as a ScanReply; *done at the scan's end. */
static int
scanner_batch(struct scanner *sc, struct buf *reply, bool *done)
{
	Tabletfs__ScanReply head = TABLETFS__SCAN_REPLY__INIT;
	uint32_t max_rows = sc->batch_rows ? sc->batch_rows :
	    SERVICE_BATCH_ROWS;
	uint32_t max_bytes = sc->batch_bytes ? sc->batch_bytes :
	    SERVICE_BATCH_BYTES;
	struct service_row_view view;
	const struct bt_row *row;
	size_t start;
	int rc;

	*done = false;
	head.has_scanner_id = true;
	head.scanner_id = sc->id;
	if ((rc = service_pb_pack(&head.base, reply)) < 0)
		return rc;
	start = reply->n;
	service_row_view_init(&view);
	for (uint32_t rows = 0; rows < max_rows &&
	    reply->n - start < max_bytes; rows++) {
		if ((rc = bt_scan_next_borrowed(sc->scan, &row)) < 0)
			goto out;
		if (rc == BT_DONE) {
			*done = true;
			break;
		}
		if ((rc = service_row_view_set(&view, row)) < 0 ||
		    (rc = service_pb_pack_field(SCAN_REPLY_ROWS_FIELD,
		    &view.row.base, reply)) < 0)
			goto out;
	}
	tabletfs__scan_reply__init(&head);
	head.has_done = true;
	head.done = *done;
	rc = service_pb_pack(&head.base, reply);
out:
	service_row_view_release(&view);
	return rc;
}

int
service_scan(struct service *svc, struct slice in, struct buf *reply)
{
	Tabletfs__ScanRequest *r;
	struct scanner *sc = NULL;
	bool done;
	int rc;

	if ((rc = service_pb_unpack(&tabletfs__scan_request__descriptor, in,
	    (ProtobufCMessage **)&r)) < 0)
		return rc;
	if (!r->has_scanner_id || r->scanner_id == 0) {
		if ((rc = scanner_open(svc, r, &sc)) < 0) {
			service_pb_free(&r->base);
			return rc;
		}
	} else {
		rc = scanner_acquire(svc, r, &sc);
		service_pb_free(&r->base);
		if (rc < 0)
			return rc;
	}
	rc = scanner_batch(sc, reply, &done);
	scanner_release(svc, sc, rc == 0 && !done);
	return rc;
}

int
service_scan_close(struct service *svc, struct slice in, struct buf *reply)
{
	struct scanner *sc = NULL, *idle = NULL;
	Tabletfs__ScanRequest *r;
	unsigned i;
	int rc;

	if ((rc = service_pb_unpack(&tabletfs__scan_request__descriptor, in,
	    (ProtobufCMessage **)&r)) < 0)
		return rc;
	mutex_lock(&svc->mu);
	if (r->has_scanner_id && r->scanner_id != 0 &&
	    (i = table_find(svc, r->scanner_id)) < svc->count) {
		sc = table_remove(svc, i);
		if (sc->busy) {
			sc->doomed = true;	/* its request closes it */
			sc = NULL;
		}
	}
	table_sweep(svc, service_now_ns(), &idle);
	mutex_unlock(&svc->mu);
	if (sc != NULL)
		scanner_close(sc);
	scanners_close_list(idle);
	service_pb_free(&r->base);
	return 0;
}

void
service_scanners_close_all(struct service *svc)
{
	mutex_lock(&svc->mu);
	while (svc->count > 0) {
		struct scanner *sc = table_remove(svc, svc->count - 1);

		assert(!sc->busy);
		scanner_close(sc);
	}
	mutex_unlock(&svc->mu);
}

unsigned
service_scanner_count(struct service *svc)
{
	unsigned n;

	mutex_lock(&svc->mu);
	n = svc->count;
	mutex_unlock(&svc->mu);
	return n;
}
