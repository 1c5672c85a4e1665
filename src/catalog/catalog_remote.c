/*
 * catalog_remote.c - a catalog handle whose calls go to another process
 * (catalog.h, struct catalog_remote_ops): the handle's life, and the
 * refusal of every call it does not serve.  The calls it serves forward
 * to the ops from their own bodies (catalog_schema.c, catalog_tablet.c),
 * after the argument checks they make for a local catalog too, so that a
 * bad argument fails alike on both.
 */
#include <errno.h>

#include "catalog/catalog_int.h"
#include "util/alloc.h"
#include "util/error.h"

int
catalog_open_remote(const struct catalog_remote_ops *ops, void *arg,
    struct catalog **out)
{
	struct catalog *c;
	int rc;

	if (ops == NULL || ops->table_get == NULL ||
	    ops->table_get_by_id == NULL || ops->table_list == NULL ||
	    ops->tablets_list == NULL || ops->files_list == NULL ||
	    ops->next_number == NULL || ops->tablet_apply == NULL ||
	    ops->file_is_live == NULL || ops->schema_version == NULL ||
	    ops->tablet_replace == NULL || ops->close == NULL)
		return bt_error_set(-EINVAL, "catalog: a remote catalog "
		    "needs every op");
	if ((c = bt_calloc(1, sizeof(*c))) == NULL)
		return -ENOMEM;
	/* catalog_commit_unknown() takes it, as on a local handle. */
	if ((rc = mutex_init(&c->mu)) < 0) {
		bt_free(c);
		return bt_error_set(rc, "catalog: remote: mutex");
	}
	c->is_remote = true;
	c->remote = *ops;
	c->remote_arg = arg;
	*out = c;
	return 0;
}

bool
catalog_is_remote(struct catalog *c)
{
	return c->is_remote;
}

void *
catalog_remote_arg(struct catalog *c, void (*close)(void *arg))
{
	if (!c->is_remote || c->remote.close != close)
		return NULL;
	return c->remote_arg;
}

int
catalog_remote_refuse(struct catalog *c)
{
	assert(c->is_remote);
	return bt_error_set(-EOPNOTSUPP, "catalog: a remote catalog serves "
	    "only the reads of tables, tablets and files, file numbers, "
	    "tablet_apply, tablet_replace and the schema version; this call is "
	    "the root's server's alone");
}

void
catalog_remote_close(struct catalog *c)
{
	assert(c->is_remote);
	c->remote.close(c->remote_arg);
	mutex_destroy(&c->mu);
	bt_free(c);
}
