/*
 * service_locate.c - LOCATE (tabletfs.proto), which the root's server
 * answers for a cell's clients on its store's catalog (docs/design.md
 * section 5, "Tablets one by one", step 5): the tablet holding a row,
 * and the next few tablets of its table (the paper's prefetch), each
 * with the address of the server it is assigned to.
 *
 * The tablets come from one read transaction of the catalog
 * (catalog_locations_from()), so a reply never mixes the tablets of
 * before and after a split.  LOCATE runs on a worker, not on the
 * connection's reader (service_method_short): it is a catalog read,
 * which waits for the catalog's lock behind any change being synced.
 */
#include <errno.h>
#include <string.h>

#include "catalog/catalog.h"
#include "tabletd/service_int.h"
#include "util/alloc.h"
#include "util/error.h"

/*
 * A server's address from the name it is assigned by, in place:
 * "HOST:PORT#EPOCH" becomes "HOST:PORT"; a name without '#' (the
 * embedded store's, which no client can reach) or none becomes "".
 */
static void
server_address(char *name)
{
	char *hash = strchr(name, '#');

	if (hash == NULL)
		name[0] = '\0';
	else
		*hash = '\0';
}

/* The id of the table named name: 0, or -ENOENT with a detail. */
static int
table_id(struct catalog *c, const char *name, uint64_t *id)
{
	struct catalog_table *t = NULL;
	int rc;

	if ((rc = catalog_table_get(c, name, &t)) < 0)
		return rc;
	if (rc == BT_NOTFOUND)
		return bt_error_set(-ENOENT, "LOCATE: no table %s", name);
	*id = t->id;
	catalog_table_free(t);
	return 0;
}

/* Pack locs (n >= 1 of them, their servers made addresses) as a
 * LocateReply of table id. */
static int
locate_reply(uint64_t id, struct catalog_location *locs, size_t n,
    struct buf *reply)
{
	Tabletfs__LocateReply out = TABLETFS__LOCATE_REPLY__INIT;
	Tabletfs__TabletLocation *ls, **lp = NULL;
	int rc = -ENOMEM;

	if ((ls = bt_calloc(n, sizeof(*ls))) == NULL ||
	    (lp = bt_calloc(n, sizeof(*lp))) == NULL)
		goto out;
	for (size_t i = 0; i < n; i++) {
		tabletfs__tablet_location__init(&ls[i]);
		ls[i].has_id = ls[i].has_start = ls[i].has_end = true;
		ls[i].id = locs[i].tablet_id;
		ls[i].start = (ProtobufCBinaryData){ locs[i].start.n,
		    locs[i].start.p };
		ls[i].end = (ProtobufCBinaryData){ locs[i].end.n,
		    locs[i].end.p };
		server_address(locs[i].server);
		ls[i].server = locs[i].server;
		lp[i] = &ls[i];
	}
	out.has_table_id = true;
	out.table_id = id;
	out.n_tablets = n;
	out.tablets = lp;
	rc = service_pb_pack(&out.base, reply);
out:
	bt_free(ls);
	bt_free(lp);
	return rc;
}

int
service_locate(struct service *svc, struct slice in, struct buf *reply)
{
	Tabletfs__LocateRequest *r;
	struct catalog_location *locs = NULL;
	struct catalog *c;
	struct bt_bytes row;
	size_t count, n = 0;
	uint64_t id = 0;
	int rc;

	if ((rc = service_pb_unpack(&tabletfs__locate_request__descriptor, in,
	    (ProtobufCMessage **)&r)) < 0)
		return rc;
	if (r->table == NULL) {
		rc = service_missing("LOCATE", "table");
		goto out;
	}
	if ((rc = service_store_catalog(svc, &c)) < 0 ||
	    (rc = table_id(c, r->table, &id)) < 0)
		goto out;
	count = r->has_count && r->count > 0 ? r->count : 1;
	if (count > SERVICE_LOCATE_MAX)
		count = SERVICE_LOCATE_MAX;
	row = service_bytes(r->has_row, r->row);
	rc = catalog_locations_from(c, id, slice_make(row.data, row.size),
	    count, &locs, &n);
	/* Dropped since it was looked up. */
	if (rc == BT_NOTFOUND)
		rc = bt_error_set(-ENOENT, "LOCATE: no table %s", r->table);
	if (rc < 0)
		goto out;
	rc = locate_reply(id, locs, n, reply);
	catalog_locations_free(locs, n);
out:
	service_pb_free(&r->base);
	return rc;
}
