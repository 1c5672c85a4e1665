/*
 * cell_util.h - what the tests of a cell's tablet servers in one process
 * share (test_api_cellserver, test_api_cellschema, test_api_cellsplit):
 * the root's server, a store opened with api_store_open_cell() and its
 * service behind a real RPC server on loopback, and other servers
 * reaching its catalog through catalog_client_open(), all with one
 * secret.  Every failure to set up bails out of the test.
 */
#ifndef TABLETFS_TESTS_CELL_UTIL_H
#define TABLETFS_TESTS_CELL_UTIL_H

#include <stdint.h>

#include "api/api_server.h"
#include "catalog/catalog.h"
#include "rpc/format.h"

#define CELL_ROOT_NAME	"127.0.0.1:7000#1"
#define CELL_ROOT_DIR	"servers/127.0.0.1_7000.1"

/* The secret of the cell's RPC (set by cell_secret_init()). */
extern uint8_t cell_secret[RPC_SECRET_SIZE];
void cell_secret_init(void);

/* The root's server: its store, and a service on it behind RPC. */
struct cell_root {
	struct bt_store *s;
	struct catalog *catalog;	/* its own, local */
	struct service *svc;
	struct rpc_server *rpc;
};

/* The root's store at path, opened as CELL_ROOT_NAME in CELL_ROOT_DIR
 * (api_store_open_cell()'s result). */
int cell_root_store_open(const char *path, struct bt_store **out);
/* Serve r->s (set by the caller): its catalog, service and RPC. */
void cell_root_serve(struct cell_root *r);
/* cell_root_store_open() and cell_root_serve() into *r. */
void cell_root_open(const char *path, struct cell_root *r);
/* Stop serving (the store stays open). */
void cell_root_stop(struct cell_root *r);
/* cell_root_stop() and close the store. */
void cell_root_close(struct cell_root *r);

/* A remote catalog on the root's server as caller. */
struct catalog *cell_catalog_as(struct cell_root *r, const char *caller);
/* A tablet server named name, in dir, with its catalog at r. */
int cell_server_open(const char *path, struct cell_root *r,
    const char *name, const char *dir, struct bt_store **out);

/* bt_read_row()'s result for row of table, the row freed. */
int cell_read_rc(struct bt_store *s, const char *table, const char *row);

#endif
