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

struct server;

/* The tablet server of an embedded store (owned by store), or NULL for
 * a cell's (bt_store_open() of a "zk://" address). */
struct server *api_store_server(struct bt_store *store);

#endif
