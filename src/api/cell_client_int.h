/*
 * cell_client_int.h - what cell_client.c (connections, the root, the
 * retry loop of the calls to the root's server) shares with cell_route.c
 * (calls routed by tablet, the last sequence number of every server).
 *
 * Invariants (cited by number):
 * 1. A connection in conns or retired is never freed before
 *    cell_client_close(): other threads may still be in a call on it,
 *    and a scan or a bulk load holds on to the one it uses.
 * 2. At most one slot of conns per address, holding a connection not
 *    yet found broken, or NULL; a broken one moves to retired.
 * 3. route is ROUTE_UNKNOWN until a LOCATE answers, and again whenever
 *    a new connection to the root's server opens (a server of another
 *    version may now be the root), so that a cell whose root answers
 *    LOCATE with -ENOSYS or -EOPNOTSUPP sends every call to the root's
 *    server, as before LOCATE.
 */
#ifndef TABLETFS_API_CELL_CLIENT_INT_H
#define TABLETFS_API_CELL_CLIENT_INT_H

#include <stdatomic.h>

#include "api/cell_client.h"
#include "api/cell_locations.h"
#include "rpc/rpc.h"
#include "util/mutex.h"

#define CELL_ADDRESS_MAX 256	/* a cell's "zk://..." */

enum cell_route_mode {
	ROUTE_UNKNOWN,		/* not asked yet (3) */
	ROUTE_ROOT,		/* every call to the root's server */
	ROUTE_TABLETS,		/* a row's call to its tablet's server */
};

struct cell_conn {
	char address[CELL_SERVER_MAX];
	struct rpc_client *rpc;		/* or NULL (2) */
};

struct cell_client {
	/*
	 * The ZooKeeper session locations are read through, used and
	 * replaced under locate_mu only: one thread locates at a time, and
	 * a session that ZooKeeper expired (the client was cut off or
	 * stopped for longer than its timeout) is replaced by a new one.
	 * NULL for a client of a given root (cell_client_open_at()).
	 */
	struct mutex locate_mu;
	struct coord *coord;
	char fixed_root[CELL_SERVER_MAX];	/* without coord */
	/* The servers' addresses as last listed for LAST_SEQ, and when
	 * (guarded by locate_mu). */
	char **servers;
	size_t server_count;
	int64_t servers_at_ns;
	int64_t deadline_ns;		/* per call */
	char cell[CELL_ADDRESS_MAX];
	uint8_t secret[RPC_SECRET_SIZE];	/* the cell's, read at open */
	struct mutex mu;
	/* The root's address as last read ("" unknown), one connection
	 * per server address, and the ones that broke (1, 2; guarded by
	 * mu). */
	char root[CELL_SERVER_MAX];
	struct cell_conn *conns;
	size_t conn_count;
	struct rpc_client **retired;
	size_t retired_count;
	/* Routing by tablet (cell_route.c). */
	atomic_int route;		/* enum cell_route_mode (3) */
	struct cell_locations *locations;
	atomic_uint_fast64_t locates;	/* LOCATE calls sent */
	/* The highest last_stamp its writes' replies carried. */
	_Atomic int64_t stamp_seen;
};

/*
 * The connection to address, open or opened by deadline: 0 and *out, 1
 * when it cannot be opened (the server may be gone: try later), or
 * -EACCES (not the cell's secret: nothing mends it), -ENOMEM.
 */
int cell_conn_get(struct cell_client *c, const char *address,
    int64_t deadline, struct rpc_client **out);
/* Stop using rpc (if a slot still holds it): it broke, or its server
 * does not serve the cell any more (1). */
void cell_conn_drop(struct cell_client *c, struct rpc_client *rpc);
/* The connection to the root's server, its address into root: 0, 1
 * (none serves yet, or it cannot be reached: try later) or negative. */
int cell_root_get(struct cell_client *c, int64_t deadline,
    struct rpc_client **out, char root[CELL_SERVER_MAX]);
/* The client's cached list of live servers (LAST_SEQ), or the known
 * addresses without ZooKeeper: 0 with *addresses (free each and the
 * array with free()), or negative. */
int cell_servers_list(struct cell_client *c, char ***addresses,
    size_t *count);

/* Pack request (NULL: empty) into out: 0 or -ENOMEM. */
int cell_request_pack(const ProtobufCMessage *request, struct buf *out);
/* The reply's status as the call's result, its message unpacked. */
int cell_reply_finish(struct cell_client *c, int32_t status,
    const struct buf *rep, const ProtobufCMessageDescriptor *reply_desc,
    ProtobufCMessage **reply);

#endif
