/*
 * coord_cell.c - the cell's own node (its settings) and its tablet
 * servers, one ephemeral node each.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord/coord_int.h"
#include "util/alloc.h"
#include "util/error.h"

/* The nodes a cell is made of, below its own. */
static const char *const cell_dirs[] = { "servers", "election", "values" };
#define CELL_DIRS	(sizeof(cell_dirs) / sizeof(cell_dirs[0]))

/* COORD_TOP, shared by every cell: created once, by whoever comes first. */
static int
top_create(struct coord *c)
{
	int zrc = zoo_create(c->zh, COORD_TOP, NULL, -1, &ZOO_OPEN_ACL_UNSAFE,
	    0, NULL, 0);

	if (zrc == ZOK || zrc == ZNODEEXISTS)
		return 0;
	return coord_zk_error(c, zrc, "creating " COORD_TOP);
}

/* The cell and its directories in one transaction: a cell exists whole
 * or not at all. */
static int
cell_create(struct coord *c, const char *settings)
{
	char paths[1 + CELL_DIRS][COORD_PATH_MAX];
	zoo_op_t ops[1 + CELL_DIRS];
	zoo_op_result_t results[1 + CELL_DIRS];
	size_t len = strlen(settings);
	int zrc, rc;

	if (len > COORD_VALUE_MAX)
		return bt_error_set(BT_ETOOBIG, "cell %s: settings of %zu "
		    "bytes, more than %d", c->cell, len, COORD_VALUE_MAX);
	if ((rc = top_create(c)) < 0)
		return rc;
	if ((rc = coord_path(c, paths[0], NULL, NULL)) < 0)
		return rc;
	zoo_create_op_init(&ops[0], paths[0], settings, (int)len,
	    &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
	for (size_t i = 0; i < CELL_DIRS; i++) {
		if ((rc = coord_path(c, paths[1 + i], cell_dirs[i], NULL)) < 0)
			return rc;
		zoo_create_op_init(&ops[1 + i], paths[1 + i], NULL, -1,
		    &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
	}
	zrc = zoo_multi(c->zh, (int)(1 + CELL_DIRS), ops, results);
	if (zrc == ZNODEEXISTS)
		return bt_error_set(-EEXIST, "cell %s: exists already",
		    c->cell);
	if (zrc != ZOK)
		return coord_zk_error(c, zrc, "creating the cell");
	return 0;
}

int
coord_cell_create(struct coord *c, const char *settings)
{
	int rc;

	assert(settings != NULL);
	if ((rc = coord_enter(c)) < 0)
		return rc;
	rc = cell_create(c, settings);
	coord_leave(c);
	return rc;
}

/* Read the node at sub/name (sub NULL: the cell's own) in a call. */
static int
node_read_call(struct coord *c, const char *sub, const char *name,
    char **data)
{
	char path[COORD_PATH_MAX];
	int rc;

	if ((rc = coord_path(c, path, sub, name)) < 0)
		return rc;
	if ((rc = coord_enter(c)) < 0)
		return rc;
	rc = coord_node_read(c, path, data, NULL, NULL);
	coord_leave(c);
	return rc;
}

int
coord_cell_settings(struct coord *c, char **settings)
{
	return node_read_call(c, NULL, NULL, settings);
}

int
coord_cell_storage(struct coord *c, char *out, size_t size)
{
	char *settings = NULL, *line, *save = NULL;
	int rc;

	if ((rc = coord_cell_settings(c, &settings)) != 0)
		return rc == BT_NOTFOUND ? bt_error_set(-ENOENT, "cell %s "
		    "does not exist (tabletctl init creates it)", c->cell) :
		    rc;
	rc = -EINVAL;
	for (line = strtok_r(settings, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "storage=", 8) == 0 && line[8] != '\0') {
			snprintf(out, size, "%s", line + 8);
			rc = 0;
		}
	}
	free(settings);
	if (rc < 0)	/* set here alone: a detail outlives its call */
		bt_error_set(rc, "cell %s: its settings name no storage",
		    c->cell);
	return rc;
}

static int
server_register(struct coord *c, const char *name, const char *data)
{
	char path[COORD_PATH_MAX];
	size_t len = strlen(data);
	int zrc, rc;

	if ((rc = coord_name_check("server name", name)) < 0)
		return rc;
	if (len > COORD_VALUE_MAX)
		return bt_error_set(BT_ETOOBIG, "cell %s: server %s: data of "
		    "%zu bytes, more than %d", c->cell, name, len,
		    COORD_VALUE_MAX);
	if ((rc = coord_path(c, path, "servers", name)) < 0)
		return rc;
	zrc = zoo_create(c->zh, path, data, (int)len, &ZOO_OPEN_ACL_UNSAFE,
	    ZOO_EPHEMERAL, NULL, 0);
	if (zrc == ZNODEEXISTS)
		return bt_error_set(-EEXIST, "cell %s: server %s is "
		    "registered already (a live server, or a session not yet "
		    "expired)", c->cell, name);
	if (zrc == ZNONODE)
		return bt_error_set(-ENOENT, "cell %s: no such cell",
		    c->cell);
	if (zrc != ZOK)
		return coord_zk_error(c, zrc, "registering a server");
	return 0;
}

int
coord_server_register(struct coord *c, const char *name, const char *data)
{
	int rc;

	assert(data != NULL);
	if ((rc = coord_enter(c)) < 0)
		return rc;
	rc = server_register(c, name, data);
	coord_leave(c);
	return rc;
}

int
coord_server_get(struct coord *c, const char *name, char **data)
{
	int rc;

	if ((rc = coord_name_check("server name", name)) < 0)
		return rc;
	return node_read_call(c, "servers", name, data);
}

static int
name_order(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void
coord_names_free(char **names, size_t count)
{
	if (names == NULL)
		return;
	for (size_t i = 0; i < count; i++)
		bt_free(names[i]);
	bt_free(names);
}

static int
servers_list(struct coord *c, char ***names, size_t *count)
{
	char path[COORD_PATH_MAX];
	struct String_vector kids;
	char **out;
	size_t n = 0;
	int zrc, rc;

	if ((rc = coord_path(c, path, "servers", NULL)) < 0)
		goto out;
	zrc = zoo_get_children(c->zh, path, 0, &kids);
	if (zrc == ZNONODE) {
		rc = bt_error_set(-ENOENT, "cell %s: no such cell", c->cell);
		goto out;
	}
	if (zrc != ZOK) {
		rc = coord_zk_error(c, zrc, "listing the servers");
		goto out;
	}
	if ((out = bt_calloc((size_t)kids.count + 1, sizeof(*out))) == NULL)
		goto out_nomem;
	for (; n < (size_t)kids.count; n++)
		if ((out[n] = bt_strdup(kids.data[n])) == NULL)
			goto out_names;
	qsort(out, n, sizeof(*out), name_order);
	deallocate_String_vector(&kids);
	*names = out;
	*count = n;
	return 0;
out_names:
	coord_names_free(out, n);
out_nomem:
	deallocate_String_vector(&kids);
	rc = bt_error_set(-ENOMEM, "cell %s: listing the servers", c->cell);
out:
	return rc;
}

int
coord_servers_list(struct coord *c, char ***names, size_t *count)
{
	int rc;

	if ((rc = coord_enter(c)) < 0)
		return rc;
	rc = servers_list(c, names, count);
	coord_leave(c);
	return rc;
}

int
coord_servers_watch(struct coord *c, void (*cb)(void *arg), void *arg)
{
	char path[COORD_PATH_MAX];
	int rc;

	if ((rc = coord_path(c, path, "servers", NULL)) < 0)
		return rc;
	rc = coord_watch_add(c, COORD_WATCH_CHILDREN, path, cb, arg);
	if (rc == -ENOENT)
		return bt_error_set(-ENOENT, "cell %s: no such cell",
		    c->cell);
	return rc;
}
