/*
 * rpc.h - the cell's wire transport: a client and a server that carry
 * opaque payloads tagged with a method number over TCP (DESIGN.md
 * section 5; the byte layout is in rpc/format.h).  What the payloads mean
 * (Protocol Buffers messages) is the business of the layer above.
 *
 * Deadlines are absolute CLOCK_MONOTONIC times in nanoseconds
 * (rpc_now_ns() plus a timeout); 0 means none.  Every function returns 0
 * or a negative code: -errno for a system failure, BT_ECHECKSUM for a
 * frame whose crc does not match.
 */
#ifndef TABLETFS_RPC_RPC_H
#define TABLETFS_RPC_RPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rpc/format.h"
#include "util/buf.h"
#include "util/env.h"
#include "util/slice.h"

#define RPC_MAX_FRAME		((size_t)300 << 20)	/* largest payload */

/* CLOCK_MONOTONIC in nanoseconds, for deadlines. */
int64_t rpc_now_ns(void);

/*
 * Client: one TCP connection to a server, shared by any number of threads
 * at once.  Requests are pipelined: each carries an id, and one waiting
 * caller at a time reads the connection, handing each reply to the caller
 * waiting for its id, in whatever order the replies come; a lone caller
 * so reads its own reply, with no thread in between.  Sends are
 * serialized by the connection.  The client starts no thread.
 */
struct rpc_client;

/*
 * Connect to address "HOST:PORT" ("[V6ADDR]:PORT" for IPv6) and make the
 * handshake (format.h) with secret (RPC_SECRET_SIZE bytes, the cell's,
 * copied; NULL: none, the empty key of the transport's own tests), by
 * deadline_ns.  0 and *out, or -ECONNREFUSED (nothing listens),
 * -ETIMEDOUT, -EPROTO (the peer answered, but is no RPC server of our
 * version), -ECONNRESET (the server closed the connection at the hello:
 * a server of another version, or one over its connections), -EACCES
 * (the server does not prove the secret, or refused the client's proof:
 * not the same secret), -EINVAL (a malformed address), -ENOENT (the host
 * has no address), another -errno, or -ENOMEM; every failure but
 * -ENOMEM with a detail naming the server.
 */
int rpc_client_open(const char *address, const uint8_t *secret,
    int64_t deadline_ns, struct rpc_client **out);

/*
 * Close the connection and free c; accepts NULL.  Calls still waiting in
 * other threads return an error (-ECONNRESET, sent = true) before this
 * returns; no call may start once close has begun.
 */
void rpc_client_close(struct rpc_client *c);

/*
 * Fail the connection now, from any thread: calls waiting on it return
 * -ECONNABORTED at once (sent = true for those that sent), and later
 * ones fail with nothing sent.  c must still be closed.  For a caller
 * that learns the server is gone (its session ended) while a call waits
 * on a reply that will not come.
 */
void rpc_client_abort(struct rpc_client *c);

/*
 * Send one request and wait for its reply until deadline_ns.  Thread-safe.
 *
 * 0: the reply arrived; its status is in *status (0, or the negative code
 * the handler returned) and its payload is appended to *reply (after a
 * negative status, a UTF-8 message).
 * Negative: -ETIMEDOUT past the deadline (the connection stays usable;
 * the late reply is dropped), -EMSGSIZE if req is over RPC_MAX_FRAME,
 * -ECONNRESET, -EPIPE or another -errno when the connection failed (then
 * rpc_client_broken()), -ENOMEM.  *reply may hold part of a payload after
 * -ENOMEM only.
 * *sent says whether any byte of the request may have reached the server;
 * false means it certainly did not, so that even a call that is not
 * idempotent may be retried.
 */
int rpc_client_call(struct rpc_client *c, uint32_t method, struct slice req,
    int64_t deadline_ns, struct buf *reply, int32_t *status, bool *sent);

/*
 * rpc_client_call() for a request that may safely run twice (a read),
 * with one system call fewer: it does not first read what came while the
 * connection was idle (rpc_client.c, note 5), so that when the server
 * closed the connection meanwhile the call fails as one that was sent
 * (-ECONNRESET, *sent true) rather than with nothing sent.
 */
int rpc_client_call_idempotent(struct rpc_client *c, uint32_t method,
    struct slice req, int64_t deadline_ns, struct buf *reply,
    int32_t *status, bool *sent);

/*
 * Whether the connection failed: every call then fails at once, and the
 * caller should close c and open a new client.  Thread-safe.
 */
bool rpc_client_broken(const struct rpc_client *c);

/*
 * Server: an accept thread, a reader thread per connection, and a fixed
 * pool of worker threads that run the handler, so that one connection's
 * requests run in parallel and their replies may leave out of order.  A
 * request of a short method (rpc_server_options.short_method) that finds
 * nothing else of its connection in flight or arrived runs on the
 * reader thread itself, sparing the handoff to a worker and back.
 */
struct rpc_call {
	uint64_t id;		/* the client's request id */
	uint32_t method;
	int64_t deadline_ns;	/* from the request's timeout; 0: none */
	const char *peer;	/* "HOST:PORT" of the client */
	uint64_t conn;		/* the connection's number: nonzero, never
				   reused by one server */
};

/*
 * Run one request and fill *reply (empty on entry).  Returns 0, or a
 * negative code that goes back as the reply's status, with *reply then
 * holding a message (when left empty, bt_strerror() of the code is sent).
 * Called from worker threads, concurrently; call and request are valid
 * until it returns.  When the client has gone meanwhile, the reply is
 * dropped.
 */
typedef int (*rpc_handler_fn)(void *arg, const struct rpc_call *call,
    struct slice request, struct buf *reply);

/* A field left 0 takes its default. */
struct rpc_server_options {
	int workers;			/* handler threads; 8 */
	int max_connections;		/* beyond it, accept and close; 256 */
	size_t max_frame;		/* largest request payload;
					   RPC_MAX_FRAME (also the most) */
	int send_timeout_ms;		/* a reply that makes no progress in
					   this long closes its connection;
					   also the wait for a preamble;
					   10000 */
	int max_inflight_per_connection; /* requests queued or running, past
					   which a connection is not read; 256 */
	bool (*short_method)(uint32_t method);	/* whether a request may run
					   on its connection's reader (it
					   never waits long: no sync, no
					   scan); NULL: none may */
	void (*closed)(void *arg, uint64_t conn);	/* NULL, or called
					   with the handler's arg once for
					   each connection that got past its
					   handshake, after it closed and the
					   last handler of its requests
					   returned (within about a second,
					   or in rpc_server_close), from
					   one thread at a time: state kept per
					   connection is let go here */
	const uint8_t *secret;		/* RPC_SECRET_SIZE bytes that a
					   client must prove (copied); NULL:
					   none, the empty key (the
					   transport's own tests: a cell's
					   processes always give one) */
};

struct rpc_server;

/*
 * Listen on address "HOST:PORT" (port 0 picks a free one) and serve every
 * request with handler(arg, ...).  opts NULL: every default.  0 and *out,
 * or -EADDRINUSE, -EINVAL (a malformed address or option), another
 * -errno, or -ENOMEM.
 */
int rpc_server_open(const char *address,
    const struct rpc_server_options *opts, rpc_handler_fn handler, void *arg,
    struct rpc_server **out);

/* "HOST:PORT" as bound (the port chosen when 0 was asked); owned by s. */
const char *rpc_server_address(const struct rpc_server *s);

/*
 * How many connections the server has closed in their handshake: a
 * wrong preamble (another version), a wrong proof (another secret), a
 * handshake cut short or not finished within the send timeout.  A
 * connection closed before its first byte (a port probe) is not
 * counted.  Each is logged, at most one line a second.  Thread-safe.
 */
uint64_t rpc_server_refused(const struct rpc_server *s);

/*
 * The cell's secret, kept as the file RPC_SECRET_FILE in the cell's
 * storage dir, where whoever may read the store (and so could read and
 * rewrite its files directly) may read it too.
 *
 * rpc_secret_create makes it: RPC_SECRET_SIZE bytes from getrandom(2),
 * in a file created readable by its owner only (ENV_CREATE_PRIVATE: mode
 * 0600 from its creation), synced, and its directory synced.  0, or
 * -EEXIST (there is one; left as it is), or -errno with a detail naming
 * the file (a file begun is removed).
 *
 * rpc_secret_read reads it into secret: 0, or -errno (-ENOENT: none,
 * -EACCES...) or BT_ECORRUPT (not RPC_SECRET_SIZE bytes), with the
 * detail "cannot read the cell's secret at DIR/secret: WHY".
 */
#define RPC_SECRET_FILE		"secret"
int rpc_secret_create(struct env *env, const char *dir);
int rpc_secret_read(struct env *env, const char *dir,
    uint8_t secret[RPC_SECRET_SIZE]);

/*
 * Stop accepting, close every connection (requests not yet started are
 * dropped), wait for the handlers running to return, and free s; accepts
 * NULL.  Not to be called from a handler.
 */
void rpc_server_close(struct rpc_server *s);

/*
 * Frames (rpc/format.h), exposed for the fuzz target and tests.  status
 * and timeout_ms are 0 where a direction has none.
 */
struct rpc_frame {
	uint64_t id;
	uint32_t method;
	int32_t status;
	uint32_t timeout_ms;
	struct slice payload;
};

/*
 * Decode the frame at the front of p[0..n), its payload at most max_frame
 * bytes.  0: a whole frame, its payload borrowed from p, *consumed its
 * size.  1: more bytes are needed; *consumed is the size of the frame
 * when its length is in, else RPC_FRAME_HEADER_SIZE.  Negative: the
 * frame is bad: -EMSGSIZE (payload over max_frame), -EPROTO (length below
 * RPC_FRAME_MIN_LENGTH), BT_ECHECKSUM.
 */
int rpc_frame_decode(const uint8_t *p, size_t n, size_t max_frame,
    struct rpc_frame *f, size_t *consumed);

/* Append f as a frame to out.  0, -EMSGSIZE (payload over
 * RPC_MAX_FRAME) or -ENOMEM (out then unchanged). */
int rpc_frame_encode(struct buf *out, const struct rpc_frame *f);

#endif
