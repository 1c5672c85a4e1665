/*
 * cell_client.h - the client library's side of a cell (docs/design.md
 * section 5): the calls of tabletfs.proto sent to the cell's servers,
 * found through ZooKeeper, with retries until a deadline.
 *
 * A call goes to the server that the cell's root location names (the
 * ZooKeeper value "root", set by the master once a server serves), a
 * call on a row to the server of the row's tablet (cell_client_call_row()
 * below).  When
 * the server answers BT_ENOTSERVING, or the connection fails before the
 * request could reach it, or the call is idempotent, the client locates
 * the server again and retries, backing off, until the call's deadline;
 * a non-idempotent call whose connection failed after sending is not
 * retried (it may have been applied) and fails with -EIO, its detail
 * saying the outcome is unknown.  Past the deadline: -ETIMEDOUT.
 *
 * Thread-safe: one client serves many threads, their calls pipelined over
 * one connection per server.
 */
#ifndef TABLETFS_API_CELL_CLIENT_H
#define TABLETFS_API_CELL_CLIENT_H

#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stdint.h>

#include "api/cell_locations.h"
#include "util/slice.h"

#define CELL_CLIENT_DEADLINE_MS 30000
#define CELL_CLIENT_SESSION_MS 10000

struct cell_client;

/* Whether s names a cell ("zk://...") rather than a store's directory. */
bool cell_client_address(const char *s);

/*
 * Connect to the cell at address ("zk://H:P[,H:P]/CELL") and read its
 * secret from the storage its settings name (rpc.h); deadline_ms bounds
 * every call (0: CELL_CLIENT_DEADLINE_MS).  0, or ZooKeeper's error,
 * -ENOENT (no such cell), -EACCES (the secret cannot be read: "cannot
 * read the cell's secret at DIR/secret: WHY"), -ENOMEM.  A server that
 * does not prove the same secret fails calls with -EACCES, untried
 * again.
 */
int cell_client_open(const char *address, uint32_t deadline_ms,
    struct cell_client **out);
/*
 * A client of the root's server at root ("HOST:PORT"), without
 * ZooKeeper, whose secret is secret (RPC_SECRET_SIZE bytes, copied):
 * for the tests of the routing.  0, -EINVAL or -ENOMEM.
 */
int cell_client_open_at(const char *root, const uint8_t *secret,
    uint32_t deadline_ms, struct cell_client **out);
/* Accepts NULL. */
void cell_client_close(struct cell_client *c);

/* When a call is tried again (see above). */
enum cell_retry {
	CELL_RETRY_ANY,		/* idempotent: after any failure */
	CELL_RETRY_UNSENT,	/* only when it certainly was not applied */
	CELL_RETRY_NONE,	/* never: BT_ENOTSERVING and transport
				   errors go back to the caller */
};

/*
 * Send request (NULL: an empty message) as method and wait for the reply:
 * 0 with *reply unpacked as reply_desc (free with cell_client_free()), or
 * with reply_desc NULL nothing; a negative status the server gave, with
 * its message as the detail; or a transport error as above.
 */
int cell_client_call(struct cell_client *c, uint32_t method,
    const ProtobufCMessage *request, enum cell_retry retry,
    const ProtobufCMessageDescriptor *reply_desc, ProtobufCMessage **reply);

/*
 * Calls that must all reach one server over one connection: a bulk
 * load's, which the server ties to the connection that opened it and
 * drops when that connection closes.  request is packed already.
 *
 * With *pin NULL: as cell_client_call() with CELL_RETRY_ANY (a request
 * whose connection failed went with it, so sending it again on another
 * is safe), and *pin set to the connection that answered.  With *pin
 * set: the request goes on that connection alone, never again: when the
 * connection has failed or fails, the call times out, or the server
 * answers BT_ENOTSERVING, the result is -EIO with a detail naming the
 * cell and why, and *lost is set; whether a request that was sent took
 * effect is then unknown.  The connection stays valid (not freed) until
 * cell_client_close().
 */
struct rpc_client;
int cell_client_call_pinned(struct cell_client *c, struct rpc_client **pin,
    uint32_t method, struct slice request,
    const ProtobufCMessageDescriptor *reply_desc, ProtobufCMessage **reply,
    bool *lost);
/* Accepts NULL. */
void cell_client_free(ProtobufCMessage *reply);

/*
 * Calls on rows, routed by tablet (cell_route.c; docs/design.md section
 * 5, "Clients locate by tablet").  The client asks the root's server
 * LOCATE for a row missing from its cell_locations, with the next
 * CELL_LOCATE_PREFETCH tablets after it, and sends the row's call to the
 * server of its tablet, over that server's connection.  BT_ENOTSERVING
 * forgets the row's tablet, a failed connection every tablet of its
 * server, and the call is located again and retried as cell_retry
 * says.  A tablet that no server serves yet is located again after a
 * pause, until the deadline.  A root's server that answers LOCATE with
 * -ENOSYS (it predates it) or -EOPNOTSUPP (it serves the whole store)
 * gets every call, as cell_client_call() sends them.
 */
#define CELL_LOCATE_PREFETCH 8

/* Where a call on a row goes: a connection, and the tablet it serves
 * (loc), unless whole: the root's server, which serves every row. */
struct cell_route {
	struct rpc_client *rpc;
	bool whole;
	struct cell_location loc;
};
void cell_route_init(struct cell_route *r);
void cell_route_release(struct cell_route *r);

/* The deadline of a call starting now. */
int64_t cell_client_deadline(const struct cell_client *c);

/*
 * Route a call on row of table: 0 and *r; 1 when there is nowhere to
 * send it yet (no server serves the tablet, or it cannot be reached:
 * pause and route again); negative: the error LOCATE answered (-ENOENT:
 * no such table) or -EACCES, -ENOMEM.
 */
int cell_client_route(struct cell_client *c, const char *table,
    struct slice row, int64_t deadline, struct cell_route *r);
/* A call on row routed by r failed with rc: BT_ENOTSERVING, or a
 * transport error.  Forget what led there, as said above. */
void cell_client_route_failed(struct cell_client *c,
    const struct cell_route *r, struct slice row, int rc);

/*
 * cell_client_call() of a call on row of table, sent to the server of the
 * row's tablet; with used not NULL (cell_route_init()ed), the route of
 * the call that answered is left there.
 */
int cell_client_call_row(struct cell_client *c, const char *table,
    struct slice row, uint32_t method, const ProtobufCMessage *request,
    enum cell_retry retry, const ProtobufCMessageDescriptor *reply_desc,
    ProtobufCMessage **reply, struct cell_route *used);

/*
 * Send request on rpc (a connection of this client, as a route gave it)
 * once, by deadline: as cell_client_call() with CELL_RETRY_NONE.  *sent
 * as rpc_client_call() says, and *lost whether no reply came (the
 * connection failed, or the deadline passed): then the result is the
 * transport's, else the server's.  Either may be NULL.
 */
int cell_client_call_on(struct cell_client *c, struct rpc_client *rpc,
    uint32_t method, const ProtobufCMessage *request, int64_t deadline,
    const ProtobufCMessageDescriptor *reply_desc, ProtobufCMessage **reply,
    bool *sent, bool *lost);

/*
 * Send request to the server at address ("HOST:PORT") once, over this
 * client's connection to it, within timeout_ms (and the client's
 * deadline): as cell_client_call() with CELL_RETRY_NONE; -EIO when it
 * cannot be reached.  For the calls a client makes of every server,
 * which a stopped one must not hold up for long.
 */
int cell_client_call_at(struct cell_client *c, const char *address,
    uint32_t method, const ProtobufCMessage *request, uint32_t timeout_ms,
    const ProtobufCMessageDescriptor *reply_desc, ProtobufCMessage **reply);

/*
 * Send request (its reply an Empty) to every live server but the root's,
 * one after another within the client's deadline, when the cell's
 * tablets are served one by one: the calls that act on what each server
 * serves (FLUSH, COMPACT), which the caller sends to the root's server
 * first, as its answer is the one that says whether the table exists.
 * -ENOENT and BT_ENOTSERVING from the others (they serve nothing of the
 * table) are not errors; 0 or the first other error.
 */
int cell_client_call_others(struct cell_client *c, uint32_t method,
    const ProtobufCMessage *request);
/* cell_client_call_others(), each server's reply unpacked as reply_desc
 * and handed to each(arg, server, reply) (freed after it returns; a
 * negative return stops there): for the calls whose replies are summed
 * where a server that does not answer may be left out (STATS). */
int cell_client_call_others_each(struct cell_client *c, uint32_t method,
    const ProtobufCMessage *request,
    const ProtobufCMessageDescriptor *reply_desc,
    int (*each)(void *arg, const char *server, ProtobufCMessage *reply),
    void *arg);

/*
 * Find out, when no call has yet, whether the cell's tablets are served
 * one by one (ROUTE_TABLETS: LOCATE answers) or all at the root's
 * server, by a LOCATE of table's first row (table NULL: of the first
 * table the cell has; none, nothing learned): a fresh client's
 * cell_client_call_others() and cell_client_call_each() would
 * otherwise take it for the latter and ask the root's server alone.
 * 0, or LOCATE's error.
 */
int cell_client_route_learn(struct cell_client *c, const char *table);

/*
 * Send request to every live server but the root's, as
 * cell_client_call_others(), for the calls whose replies the caller
 * combines with the root's (TABLE_USAGE): each(arg, address, reply) for
 * every reply (the reply freed after it returns; a negative return
 * stops there).  -ENOENT and BT_ENOTSERVING from a server (it serves
 * nothing of the table) call nothing; any other failure, a server that
 * does not answer included, stops with it, its detail naming the
 * server: a sum missing a server's part is never returned.  0, or the
 * first error.
 */
int cell_client_call_each(struct cell_client *c, uint32_t method,
    const ProtobufCMessage *request,
    const ProtobufCMessageDescriptor *reply_desc,
    int (*each)(void *arg, const char *server, ProtobufCMessage *reply),
    void *arg);

/* Pause *wait_ms (0 on the first call: the first pause) and lengthen it
 * for the next: 0, or -ETIMEDOUT with a detail when the pause would
 * pass deadline. */
int cell_client_backoff(struct cell_client *c, int64_t deadline,
    int *wait_ms);
/* -EIO with a detail saying that a call sent to server, whose connection
 * then failed with rc, has an unknown outcome. */
int cell_client_outcome_unknown(struct cell_client *c, const char *server,
    int rc);

/*
 * The last sequence number of every live server (registered under the
 * cell's servers/, the list kept CELL_SERVERS_MS), combined into one
 * value that changes whenever one of theirs does: 0 and *out, or 1 when
 * calls go to the root's server alone (ask it LAST_SEQ), or negative.
 */
#define CELL_SERVERS_MS 1000
int cell_client_last_seq(struct cell_client *c, uint64_t *out);

/*
 * Server stamps across servers (tabletfs.proto, above MutateRowRequest):
 * the stamp_floor a write sends (the highest last_stamp this client's
 * writes were answered with, 0 before any), and taking one in from a
 * reply.  Thread-safe.
 */
int64_t cell_client_stamp_floor(struct cell_client *c);
void cell_client_stamp_seen(struct cell_client *c, int64_t stamp);

/* LOCATE calls sent so far (for the tests). */
uint64_t cell_client_locates(struct cell_client *c);

#endif
