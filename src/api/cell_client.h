/*
 * cell_client.h - the client library's side of a cell (docs/design.md
 * section 5): the calls of tabletfs.proto sent to the tablet server that
 * serves the cell, found through ZooKeeper, with retries until a deadline.
 *
 * A call goes to the server that the cell's root location names (the
 * ZooKeeper value "root", set by the master once a server serves).  When
 * the server answers BT_ENOTSERVING, or the connection fails before the
 * request could reach it, or the call is idempotent, the client locates
 * the server again and retries, backing off, until the call's deadline;
 * a non-idempotent call whose connection failed after sending is not
 * retried (it may have been applied) and fails with -EIO, its detail
 * saying the outcome is unknown.  Past the deadline: -ETIMEDOUT.
 *
 * Thread-safe: one client serves many threads, their calls pipelined over
 * one connection.
 */
#ifndef TABLETFS_API_CELL_CLIENT_H
#define TABLETFS_API_CELL_CLIENT_H

#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stdint.h>

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

#endif
