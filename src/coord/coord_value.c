/*
 * coord_value.c - small persistent named values of a cell
 * (/tabletfs/CELL/values/NAME): plain set, compare-and-set on ZooKeeper's
 * node version, get, and a watch.
 */
#include <assert.h>
#include <errno.h>
#include <string.h>

#include "coord/coord_int.h"
#include "util/error.h"

/* A set that races a delete or a create may need another turn; more than
 * this many means something else is wrong. */
#define VALUE_SET_TRIES	8

static int
value_path(struct coord *c, const char *name, char *path)
{
	int rc;

	if ((rc = coord_name_check("value name", name)) < 0)
		return rc;
	return coord_path(c, path, "values", name);
}

static int
value_len_check(struct coord *c, const char *name, size_t len)
{
	if (len > COORD_VALUE_MAX)
		return bt_error_set(BT_ETOOBIG, "cell %s: value %s: %zu "
		    "bytes, more than %d", c->cell, name, len,
		    COORD_VALUE_MAX);
	return 0;
}

/* Create a value; ZNONODE here means the cell's values node is missing. */
static int
value_create(struct coord *c, const char *name, const char *path,
    const void *data, size_t len)
{
	int zrc = zoo_create(c->zh, path, data, (int)len,
	    &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);

	if (zrc == ZOK)
		return 0;
	if (zrc == ZNODEEXISTS)
		return -EEXIST;		/* the caller decides */
	if (zrc == ZNONODE)
		return bt_error_set(-ENOENT, "cell %s: no such cell",
		    c->cell);
	return coord_zk_error(c, zrc, name);
}

static int
value_set(struct coord *c, const char *name, const void *data, size_t len)
{
	char path[COORD_PATH_MAX];
	int zrc, rc;

	if ((rc = value_path(c, name, path)) < 0 ||
	    (rc = value_len_check(c, name, len)) < 0)
		return rc;
	for (int i = 0; i < VALUE_SET_TRIES; i++) {
		zrc = zoo_set(c->zh, path, data, (int)len, -1);
		if (zrc == ZOK)
			return 0;
		if (zrc != ZNONODE)
			return coord_zk_error(c, zrc, name);
		rc = value_create(c, name, path, data, len);
		if (rc != -EEXIST)
			return rc;
	}
	return bt_error_set(-EAGAIN, "cell %s: value %s: created and "
	    "deleted under every one of %d tries", c->cell, name,
	    VALUE_SET_TRIES);
}

static int
value_set_if_version(struct coord *c, const char *name, const void *data,
    size_t len, int32_t version)
{
	char path[COORD_PATH_MAX];
	int zrc, rc;

	if ((rc = value_path(c, name, path)) < 0 ||
	    (rc = value_len_check(c, name, len)) < 0)
		return rc;
	if (version == -1) {
		rc = value_create(c, name, path, data, len);
		if (rc == -EEXIST)
			return bt_error_set(-ESTALE, "cell %s: value %s "
			    "exists already", c->cell, name);
		return rc;
	}
	zrc = zoo_set(c->zh, path, data, (int)len, version);
	if (zrc == ZOK)
		return 0;
	if (zrc == ZBADVERSION)
		return bt_error_set(-ESTALE, "cell %s: value %s is no longer "
		    "at version %d", c->cell, name, (int)version);
	if (zrc == ZNONODE)
		return bt_error_set(-ESTALE, "cell %s: value %s no longer "
		    "exists (or the cell does not)", c->cell, name);
	return coord_zk_error(c, zrc, name);
}

int
coord_value_set(struct coord *c, const char *name, const void *data,
    size_t len)
{
	int rc;

	if ((rc = coord_enter(c)) < 0)
		return rc;
	rc = value_set(c, name, data, len);
	coord_leave(c);
	return rc;
}

int
coord_value_set_if_version(struct coord *c, const char *name,
    const void *data, size_t len, int32_t version)
{
	int rc;

	assert(version >= -1);
	if ((rc = coord_enter(c)) < 0)
		return rc;
	rc = value_set_if_version(c, name, data, len, version);
	coord_leave(c);
	return rc;
}

int
coord_value_get(struct coord *c, const char *name, char **data,
    size_t *len, int32_t *version)
{
	char path[COORD_PATH_MAX];
	int rc;

	if ((rc = value_path(c, name, path)) < 0)
		return rc;
	if ((rc = coord_enter(c)) < 0)
		return rc;
	rc = coord_node_read(c, path, data, len, version);
	coord_leave(c);
	return rc;
}

int
coord_value_watch(struct coord *c, const char *name, void (*cb)(void *arg),
    void *arg)
{
	char path[COORD_PATH_MAX];
	int rc;

	if ((rc = value_path(c, name, path)) < 0)
		return rc;
	return coord_watch_add(c, COORD_WATCH_NODE, path, cb, arg);
}
