/*
 * catalog_pending.c - the file numbers handed to other tablet servers
 * that no tablet names yet (format.h, version 5: pending_files), which
 * catalog_file_is_live() counts as live so that the root's sweep of sst/
 * spares a file between its rename into sst/ and its naming
 * (docs/design.md section 5, "The catalog served").
 *
 * A number is pending from the transaction that hands it out
 * (catalog_next_number_for) until the one that names it in a tablet
 * (catalog_file_add, whatever call names it) or the one that forgets its
 * server (catalog_server_gone).  A number a server took for something
 * it never names (a log segment, a compaction that failed) stays pending
 * until then: a row of a few bytes, for the server's life.
 */
#include <errno.h>

#include "catalog/catalog_int.h"
#include "util/error.h"

/* Whether a caller's name may own pending numbers: a valid server name,
 * not "" (which reads as "unassigned"). */
static bool
pending_server_valid(const char *server)
{
	return server != NULL && server[0] != '\0' &&
	    catalog_server_valid(server);
}

static int
next_number_for_txn(struct catalog *c, const char *server, uint64_t *number)
{
	sqlite3_stmt *st;
	int rc;

	if ((rc = catalog_next_number_txn(c, number)) < 0)
		return rc;
	st = catalog_stmt(c, STMT_PENDING_ADD);
	if ((rc = catalog_bind(c, st, "ut", *number, server)) < 0) {
		catalog_stmt_done(st);
		return rc;
	}
	return catalog_exec(c, st);
}

int
catalog_next_number_for(struct catalog *c, const char *server,
    uint64_t *number)
{
	uint64_t n = 0;
	int rc;

	if (!pending_server_valid(server))
		return bt_error_set(-EINVAL, "catalog: next_number: bad "
		    "server name");
	if ((rc = catalog_begin(c, true)) < 0)
		return rc;
	if ((rc = catalog_end(c, next_number_for_txn(c, server, &n))) == 0)
		*number = n;
	return rc;
}

int
catalog_pending_named(struct catalog *c, uint64_t number)
{
	sqlite3_stmt *st;
	int rc;

	catalog_assert_in_call(c);
	st = catalog_stmt(c, STMT_PENDING_NAMED);
	if ((rc = catalog_bind(c, st, "u", number)) < 0) {
		catalog_stmt_done(st);
		return rc;
	}
	return catalog_exec(c, st);
}

int
catalog_server_gone(struct catalog *c, const char *server)
{
	sqlite3_stmt *st;
	int rc;

	if (!pending_server_valid(server))
		return bt_error_set(-EINVAL, "catalog: server_gone: bad "
		    "server name");
	if ((rc = catalog_begin(c, true)) < 0)
		return rc;
	st = catalog_stmt(c, STMT_PENDING_GONE);
	if ((rc = catalog_bind(c, st, "t", server)) < 0)
		catalog_stmt_done(st);
	else
		rc = catalog_exec(c, st);
	return catalog_end(c, rc);
}
