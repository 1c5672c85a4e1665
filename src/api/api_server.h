/*
 * api_server.h - what the process that serves a store (tabletd's root
 * server) may reach behind the public API: the engine under an embedded
 * bt_store.  Not installed, and not exported by libtabletfs, which
 * exports the bt_ functions of tabletfs.h alone; tabletd and the tests
 * link the engine's libraries directly.
 */
#ifndef TABLETFS_API_API_SERVER_H
#define TABLETFS_API_API_SERVER_H

#include "api/tabletfs.h"

#include <stddef.h>
#include <stdint.h>

struct catalog;
struct server;
struct server_table;

/* The tablet server of an embedded store (owned by store), or NULL for
 * a cell's (bt_store_open() of a "zk://" address). */
struct server *api_store_server(struct bt_store *store);

/*
 * One tablet server of a cell, as tabletd runs it (server.h, struct
 * server_options: name, dir, catalog): name is the server's as the
 * master assigns tablets to it ("HOST:PORT#EPOCH"), dir its own
 * directory relative to the store's path ("servers/HOST_PORT.EPOCH"),
 * catalog NULL for the root's server (which opens STORE/catalog.db and
 * takes STORE/LOCK) or a remote catalog (catalog_client_open()) for
 * any other.
 */
struct api_cell_server {
	const char *name;
	const char *dir;
	struct catalog *catalog;
};

/*
 * Open the store at path (a directory as the env names it, not a cell
 * address) as the tablet server cell describes: every tablet not
 * served until bt_tablet_load() or api_tablet_recover(), no tablet
 * assigned, STORE/log not replayed (server.h has the rest).  The store
 * owns cell->catalog from the call on, whatever it returns:
 * bt_store_close() closes it, and so does a failed open.  Errors as
 * bt_store_open(), and -EINVAL for a cell that server.h refuses.
 */
int api_store_open_cell(const char *path, const struct bt_options *opts,
    const struct api_cell_server *cell, struct bt_store **out);

/*
 * bt_tablet_recover() from the commit logs of several servers
 * (server_tablet_recover()): log_dirs (count >= 1) relative to the
 * store's path on a cell's server, or absolute.
 */
int api_tablet_recover(struct bt_store *s, const char *table,
    uint64_t tablet_id, const char *const *log_dirs, size_t count);
/* The same of tablets ids (n) of table from one pass over the logs
 * (server_tablets_recover()): all served when it returns 0, or none. */
int api_tablets_recover(struct bt_store *s, const char *table,
    const uint64_t *ids, size_t n, const char *const *log_dirs,
    size_t count);

/*
 * bt_family_create() with the least created_seq the family may take
 * (server_family_create()): a cell's server, the root's, told by the
 * client what the other servers numbered, and which servers (count
 * names, as tablets are assigned) those are.
 */
int api_family_create_above(struct bt_store *s, const char *table,
    const struct bt_family_spec *family, uint64_t created_min,
    const char *const *servers, size_t count);

/*
 * bt_read_row() on the table named table of an embedded store, held by
 * the caller (server_table_id_hold()) with its id table_id, so that the
 * call does not look the name up again.
 */
int api_read_row_held(struct bt_store *s, struct server_table *t,
    uint64_t table_id, const char *table, struct bt_bytes row,
    const struct bt_read_options *ropts, struct bt_row **out);

#endif
