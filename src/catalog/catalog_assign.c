/*
 * catalog_assign.c - what the root's server answers the master and the
 * clients of a cell whose tablets are served one by one (catalog.h,
 * catalog_tablet_assign_if() and after; docs/design.md section 5,
 * "Tablets one by one", step 5): the master's compare-and-set of a
 * tablet's server and its list of every assignment, and a client's
 * location of a row with the tablets after it (the paper's prefetch).
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "catalog/catalog_int.h"
#include "util/alloc.h"
#include "util/error.h"

static int
assign_if_txn(struct catalog *c, uint64_t tablet_id, const char *server,
    const char *expected, enum catalog_recovery rec)
{
	char now[CATALOG_SERVER_MAX + 1];
	sqlite3_stmt *st;
	bool marked, was;
	int rc;

	st = catalog_stmt(c, STMT_TABLET_SERVER);
	if ((rc = catalog_bind(c, st, "u", tablet_id)) < 0 ||
	    (rc = catalog_step(c, st)) < 0)
		goto out;
	if (rc == SQLITE_DONE) {
		rc = bt_error_set(-ENOENT, "catalog: no tablet %" PRIu64,
		    tablet_id);
		goto out;
	}
	if ((rc = catalog_column_text(c, st, 0, now, sizeof(now))) < 0)
		goto out;
	marked = catalog_column_u64(st, 1) != 0;
	catalog_stmt_done(st);
	if (strcmp(now, expected) != 0)
		return bt_error_set(-ESTALE, "catalog: tablet %" PRIu64 " is "
		    "assigned to %s, not to %s", tablet_id,
		    now[0] != '\0' ? now : "no server",
		    expected[0] != '\0' ? expected : "no server");
	was = marked;
	if (rec == CATALOG_RECOVERY_BEGIN)
		marked = true;
	else if (rec == CATALOG_RECOVERY_DONE)
		marked = false;
	if (strcmp(now, server) == 0 && marked == was)
		return 0;	/* nothing changes */
	st = catalog_stmt(c, STMT_TABLET_SET_SERVER);
	if ((rc = catalog_bind(c, st, "utu", tablet_id, server,
	    (uint64_t)marked)) < 0)
		goto out;
	return catalog_exec(c, st);
out:
	catalog_stmt_done(st);
	return rc;
}

int
catalog_tablet_assign_if(struct catalog *c, uint64_t tablet_id,
    const char *server, const char *expected, enum catalog_recovery rec)
{
	int rc;

	if (!catalog_server_valid(server) || !catalog_server_valid(expected))
		return bt_error_set(-EINVAL, "catalog: tablet %" PRIu64 ": bad "
		    "server name", tablet_id);
	if (rec == CATALOG_RECOVERY_DONE &&
	    (server[0] == '\0' || strcmp(server, expected) != 0))
		return bt_error_set(-EINVAL, "catalog: tablet %" PRIu64 ": a "
		    "recovery is done by the server assigned", tablet_id);
	if ((rc = catalog_begin(c, true)) < 0)
		return rc;
	return catalog_end(c, assign_if_txn(c, tablet_id, server, expected,
	    rec));
}

/* A row of STMT_ASSIGNMENTS. */
static int
assignment_read(struct catalog *c, sqlite3_stmt *st, void *elem, void *arg)
{
	struct catalog_assignment *a = elem;
	int rc;

	a->tablet_id = catalog_column_u64(st, 0);
	a->table_id = catalog_column_u64(st, 1);
	if ((rc = catalog_column_text(c, st, 2, a->table,
	    sizeof(a->table))) < 0 ||
	    (rc = catalog_column_text(c, st, 3, a->server,
	    sizeof(a->server))) < 0)
		return rc;
	a->recovering = catalog_column_u64(st, 4) != 0;
	return 0;
}

int
catalog_assignments_list(struct catalog *c, struct catalog_assignment **out,
    size_t *count)
{
	int rc;

	if ((rc = catalog_begin(c, false)) < 0)
		return rc;
	return catalog_end(c, catalog_rows_load(c,
	    catalog_stmt(c, STMT_ASSIGNMENTS), 0, sizeof(**out),
	    assignment_read, NULL, NULL, out, count));
}

/* Whether name is one of names (count). */
static bool
name_listed(const char *name, const char *const *names, size_t count)
{
	for (size_t i = 0; i < count; i++)
		if (strcmp(names[i], name) == 0)
			return true;
	return false;
}

static int
replayed_txn(struct catalog *c, const char *table,
    const char *const *servers, size_t count, uint64_t *flushed)
{
	char server[CATALOG_SERVER_MAX + 1];
	sqlite3_stmt *st;
	uint64_t high = 0, id;
	bool any = false;
	int rc;

	st = catalog_stmt(c, STMT_TABLET_RECOVERY);
	if ((rc = catalog_bind(c, st, "t", table)) < 0)
		goto out;
	while ((rc = catalog_step(c, st)) == SQLITE_ROW) {
		any = true;
		id = catalog_column_u64(st, 0);
		if ((rc = catalog_column_text(c, st, 1, server,
		    sizeof(server))) < 0)
			goto out;
		if (catalog_column_u64(st, 2) != 0) {
			rc = bt_error_set(-EAGAIN, "table %s: tablet %" PRIu64
			    " is being recovered at %s from the log of a "
			    "server that is gone", table, id,
			    server[0] != '\0' ? server : "no server yet");
			goto out;
		}
		if (!name_listed(server, servers, count)) {
			rc = bt_error_set(-EAGAIN, "table %s: tablet %" PRIu64
			    " is assigned to %s, which did not give its last "
			    "number: its log may still be replayed", table, id,
			    server[0] != '\0' ? server : "no server");
			goto out;
		}
		if (catalog_column_u64(st, 3) > high)
			high = catalog_column_u64(st, 3);
	}
	if (rc < 0)
		goto out;
	catalog_stmt_done(st);
	if (!any)
		return bt_error_set(-ENOENT, "table %s: no such table", table);
	*flushed = high;
	return 0;
out:
	catalog_stmt_done(st);
	return rc;
}

int
catalog_table_replayed(struct catalog *c, const char *table,
    const char *const *servers, size_t count, uint64_t *flushed)
{
	int rc;

	if (!catalog_name_valid(table))
		return bt_error_set(-EINVAL, "catalog: bad table name '%s'",
		    table != NULL ? table : "(null)");
	if ((rc = catalog_begin(c, false)) < 0)
		return rc;
	return catalog_end(c, replayed_txn(c, table, servers, count,
	    flushed));
}

static void
location_release(void *elem)
{
	catalog_location_release(elem);
}

/* A row of STMT_LOCATIONS_AFTER; arg is the table's id. */
static int
location_read(struct catalog *c, sqlite3_stmt *st, void *elem, void *arg)
{
	struct catalog_location *l = elem;
	int rc;

	catalog_location_init(l);
	l->tablet_id = catalog_column_u64(st, 0);
	l->table_id = *(const uint64_t *)arg;
	l->meta_tablet_id = catalog_column_u64(st, 1);
	if ((rc = catalog_column_blob(c, st, 2, &l->start)) < 0 ||
	    (rc = catalog_column_blob(c, st, 3, &l->end)) < 0 ||
	    (rc = catalog_column_text(c, st, 4, l->server,
	    sizeof(l->server))) < 0)
		return rc;
	return 0;
}

static int
locations_from_txn(struct catalog *c, uint64_t table_id, struct slice row,
    size_t max, struct catalog_location **out, size_t *count)
{
	struct catalog_location first, *next = NULL, *all;
	struct slice end;
	sqlite3_stmt *st;
	size_t n = 0;
	int rc, walked;

	catalog_location_init(&first);
	if ((rc = catalog_location_walk_txn(c, table_id, row, &first,
	    &walked)) != 0)
		goto out;
	end = buf_slice(&first.end);
	/* The tablet running to the end of its table has none after it. */
	if (max > 1 && end.n > 0) {
		st = catalog_stmt(c, STMT_LOCATIONS_AFTER);
		if ((rc = catalog_rows_load(c, st, catalog_bind(c, st, "ubu",
		    table_id, &end, (uint64_t)(max - 1)), sizeof(*next),
		    location_read, &table_id, location_release, &next,
		    &n)) < 0)
			goto out;
	}
	if ((all = bt_calloc(n + 1, sizeof(*all))) == NULL) {
		rc = -ENOMEM;
		catalog_locations_free(next, n);
		goto out;
	}
	/* The elements move: their buffers change owner, not place. */
	all[0] = first;
	if (n > 0)
		memcpy(&all[1], next, n * sizeof(*next));
	bt_free(next);
	*out = all;
	*count = n + 1;
	return 0;
out:
	catalog_location_release(&first);
	return rc;
}

int
catalog_locations_from(struct catalog *c, uint64_t table_id,
    struct slice row, size_t max, struct catalog_location **out,
    size_t *count)
{
	int rc;

	if (max == 0)
		return bt_error_set(-EINVAL, "catalog: locations of table %"
		    PRIu64 ": none asked for", table_id);
	if ((rc = catalog_begin(c, false)) < 0)
		return rc;
	return catalog_end(c, locations_from_txn(c, table_id, row, max, out,
	    count));
}
