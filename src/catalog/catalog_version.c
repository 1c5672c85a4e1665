/*
 * catalog_version.c - the schema version (catalog.h,
 * CATALOG_META_SCHEMA_VERSION): a counter in meta that every schema
 * change raises in its own transaction, so that a tablet server with a
 * remote catalog learns by one small call that it must read its tables
 * again (docs/design.md section 5, "Tablets one by one").
 */
#include <errno.h>

#include "catalog/catalog_int.h"
#include "util/error.h"

/* The version inside a call's transaction: 0 when never raised. */
static int
version_read(struct catalog *c, uint64_t *version)
{
	sqlite3_stmt *st = catalog_stmt(c, STMT_META_GET);
	int rc;

	rc = catalog_one_u64(c, st, catalog_bind(c, st, "t",
	    CATALOG_META_SCHEMA_VERSION), version, NULL);
	if (rc == BT_NOTFOUND) {
		*version = 0;
		rc = 0;
	}
	return rc;
}

int
catalog_schema_version_raise(struct catalog *c)
{
	sqlite3_stmt *st;
	uint64_t v;
	int rc;

	catalog_assert_in_call(c);
	if ((rc = version_read(c, &v)) < 0)
		return rc;
	if (v >= INT64_MAX)
		return bt_error_set(-EOVERFLOW, "catalog %s: schema version "
		    "exhausted", c->path);
	st = catalog_stmt(c, STMT_META_SET);
	if ((rc = catalog_bind(c, st, "tu", CATALOG_META_SCHEMA_VERSION,
	    v + 1)) < 0) {
		catalog_stmt_done(st);
		return rc;
	}
	return catalog_exec(c, st);
}

int
catalog_schema_version(struct catalog *c, uint64_t *version)
{
	uint64_t v = 0;
	int rc;

	if (c->is_remote)
		return c->remote.schema_version(c->remote_arg, version);
	if ((rc = catalog_begin(c, false)) < 0)
		return rc;
	if ((rc = catalog_end(c, version_read(c, &v))) == 0)
		*version = v;
	return rc;
}
