/*
 * cell_util.c - the root's server and tablet servers of a cell in one
 * process, for the tests (cell_util.h).
 */
#include <string.h>

#include "api_util.h"
#include "cell_util.h"
#include "rpc/rpc.h"
#include "server/server.h"
#include "tabletd/catalog_client.h"
#include "tabletd/service.h"

uint8_t cell_secret[RPC_SECRET_SIZE];

void
cell_secret_init(void)
{
	for (size_t i = 0; i < sizeof(cell_secret); i++)
		cell_secret[i] = (uint8_t)(i * 7 + 1);
}

static int
handle(void *arg, const struct rpc_call *call, struct slice request,
    struct buf *reply)
{
	struct cell_root *r = arg;

	return service_handle_conn(r->svc, call->conn, call->method, request,
	    reply);
}

int
cell_root_store_open(const char *path, struct bt_store **out)
{
	struct api_cell_server cell = { CELL_ROOT_NAME, CELL_ROOT_DIR, NULL };

	return api_store_open_cell(path, NULL, &cell, out);
}

void
cell_root_serve(struct cell_root *r)
{
	struct rpc_server_options o = { .secret = cell_secret };

	r->catalog = server_catalog(api_store_server(r->s));
	if (service_new(r->s, &r->svc) < 0 ||
	    rpc_server_open("127.0.0.1:0", &o, handle, r, &r->rpc) < 0)
		tap_bail("cannot serve the root's store");
}

void
cell_root_open(const char *path, struct cell_root *r)
{
	memset(r, 0, sizeof(*r));
	must(cell_root_store_open(path, &r->s));
	cell_root_serve(r);
}

void
cell_root_stop(struct cell_root *r)
{
	rpc_server_close(r->rpc);
	service_free(r->svc);
	r->rpc = NULL;
	r->svc = NULL;
}

void
cell_root_close(struct cell_root *r)
{
	cell_root_stop(r);
	must(bt_store_close(r->s));
	memset(r, 0, sizeof(*r));
}

struct catalog *
cell_catalog_as(struct cell_root *r, const char *caller)
{
	struct catalog_client_options o = { rpc_server_address(r->rpc),
	    cell_secret, caller, 5000 };
	struct catalog *c;

	must(catalog_client_open(&o, &c));
	return c;
}

int
cell_server_open(const char *path, struct cell_root *r, const char *name,
    const char *dir, struct bt_store **out)
{
	struct api_cell_server cell = { name, dir, NULL };

	cell.catalog = cell_catalog_as(r, name);
	return api_store_open_cell(path, NULL, &cell, out);
}

int
cell_read_rc(struct bt_store *s, const char *table, const char *row)
{
	struct bt_row *r = NULL;
	int rc = bt_read_row(s, table, bts(row), NULL, &r);

	if (rc == 0)
		bt_row_free(r);
	return rc;
}
