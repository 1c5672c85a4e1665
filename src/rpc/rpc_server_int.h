/*
 * rpc_server_int.h - the RPC server's parts: rpc_server.c runs the
 * server (open, accept, close); rpc_conn.c runs a connection (its reader
 * thread) and the workers that answer its requests.  rpc_server.c calls
 * into rpc_conn.c, never the other way.
 *
 * NOTES ON THE DESIGN
 *
 * 1. s->mu guards the job queue, s->closing, the two connection lists,
 *    each connection's inflight, refs and reader_done, and what the log
 *    of refused handshakes remembers.  A connection's
 *    write_mu guards its dead flag and serializes its replies; it is never
 *    taken while s->mu is held.
 * 2. A connection is referenced by its reader thread (until it returns)
 *    and by each job of its requests.  Its socket is shut down when a
 *    reply fails, when the reader ends on bad input or a closing server,
 *    and otherwise when the last reference goes, but closed only when the
 *    connection is freed, so that no worker ever writes to a descriptor
 *    number that was reused.
 * 3. A connection whose reader has ended moves from s->live to s->done; it
 *    is freed (its reader joined, its socket closed) once refs is 0, by
 *    the accept thread (which looks every RPC_REAP_INTERVAL_MS) or by
 *    rpc_server_close.
 * 4. Once s->closing is set, no job is queued, the workers drop the jobs
 *    still queued without running them, and readers waiting for room
 *    give up.
 * 5. A reader runs a request itself, without a job, only when its method
 *    is short, none of its connection's requests is in flight and no
 *    byte of another has arrived: a client that sends one request at a
 *    time gets no thread handoff, one that pipelines keeps its requests
 *    running in parallel.  rpc_server_close joins the reader, so it
 *    waits for that handler as for a worker's.
 * 6. A reader reads no frame before its connection's handshake
 *    (format.h) has ended in the welcome: until then nothing of the
 *    client's reaches a job or the handler.
 */
#ifndef TABLETFS_RPC_RPC_SERVER_INT_H
#define TABLETFS_RPC_RPC_SERVER_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rpc/rpc.h"
#include "rpc/rpc_int.h"
#include "util/mutex.h"

#define RPC_REAP_INTERVAL_MS	1000
#define RPC_REFUSED_LOG_NS	1000000000	/* a "refused" line a second */

struct rpc_conn {
	struct rpc_server *s;
	uint64_t number;		/* rpc_call.conn */
	bool greeted;			/* its handshake ended in the welcome */
	int fd;
	char peer[RPC_ADDRESS_MAX];
	pthread_t reader;
	struct mutex write_mu;
	bool dead;			/* write_mu: drop further replies */
	int inflight;			/* s->mu: requests queued or running */
	int refs;			/* s->mu: note 2 */
	bool reader_done;		/* s->mu */
	pthread_cond_t room;		/* inflight fell, or closing */
	struct rpc_conn *prev, *next;	/* s->live or s->done */
};

struct rpc_job {
	struct rpc_job *next;
	struct rpc_conn *conn;
	struct rpc_call call;
	size_t n;
	uint8_t payload[];
};

struct rpc_server {
	struct rpc_server_options opts;	/* every field set but secret */
	uint8_t secret[RPC_SECRET_SIZE];
	const uint8_t *key;		/* secret, or NULL: none */
	rpc_handler_fn handler;
	void *arg;
	int listen_fd;
	int wake[2];			/* a byte here stops the acceptor */
	char *address;
	pthread_t acceptor;
	pthread_t *workers;
	int nworkers;			/* started */
	int64_t full_logged_ns;		/* acceptor: last "too many" line */
	_Atomic uint64_t refused;	/* rpc_server_refused() */
	int64_t refused_logged_ns;	/* mu: the last "refused" line */
	uint64_t refused_unlogged;	/* mu: refused since that line */
	struct mutex mu;
	pthread_cond_t work;		/* a job was queued, or closing */
	pthread_cond_t idle;		/* a reader ended or refs fell */
	struct rpc_job *head, **tail;
	bool closing;
	struct rpc_conn *live, *done;
	int nlive;
	uint64_t conns;			/* mu: connections numbered so far */
};

/* One line on stderr about a connection. */
void rpc_server_log(const struct rpc_server *s, const char *peer,
    const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/*
 * A connection for the accepted socket fd (which it then owns), its
 * reader thread started, on s->live.  Called by the acceptor with s->mu
 * held.  0, or -errno (fd closed).
 */
int rpc_conn_start(struct rpc_server *s, int fd, const char *peer);

/* Free the connections of s->done whose refs are 0 (note 3).  Takes
 * s->mu itself. */
void rpc_conn_reap(struct rpc_server *s);

/* The worker threads' body (arg: the server). */
void *rpc_conn_work(void *arg);

#endif
