/*
 * rpc_conn.c - one server connection: its reader thread, which checks the
 * preamble and queues each request as a job (or runs a short one itself),
 * and the worker threads, which run the handler and write the reply
 * (rpc_server_int.h has the notes cited here).
 */
#include <assert.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "rpc/rpc_server_int.h"
#include "util/alloc.h"
#include "util/error.h"

#define EXPIRED_MESSAGE	"deadline passed before a worker took the request"
#define REPLY_KEEP	((size_t)64 << 10)	/* a thread's reply buffer
						   kept between requests */

/* Set SO_RCVTIMEO or SO_SNDTIMEO to ms (0: none). */
static void
conn_set_timeout(int fd, int option, int ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	(void)setsockopt(fd, SOL_SOCKET, option, &tv, sizeof(tv));
}

/* Why a reader stopped, for the log; NULL when it need not be said. */
static const char *
conn_reason(int rc, bool truncated, char *scratch, size_t size,
    size_t max_frame)
{
	switch (rc) {
	case BT_DONE:
		return NULL;
	case BT_ECHECKSUM:
		return "frame checksum mismatch";
	case -EMSGSIZE:
		snprintf(scratch, size, "frame over %zu bytes", max_frame);
		return scratch;
	case -EPROTO:
		return "frame length below the header's";
	default:
		return truncated ? "stream ended inside a frame" :
		    bt_strerror(rc);
	}
}

/*
 * Count a handshake refused (rpc_server_refused) and log it, at most one
 * line a second, saying how many were not logged since the last; unless
 * the server is closing, which cut it short itself.  Returns rc.
 */
static int
conn_refuse(struct rpc_conn *conn, int rc, const char *why)
{
	struct rpc_server *s = conn->s;
	uint64_t unlogged = 0;
	int64_t now = rpc_now_ns();
	bool log = false;

	mutex_lock(&s->mu);
	if (s->closing) {	/* its own doing: nothing to report */
		mutex_unlock(&s->mu);
		return rc;
	}
	atomic_fetch_add(&s->refused, 1);
	if (now - s->refused_logged_ns >= RPC_REFUSED_LOG_NS) {
		s->refused_logged_ns = now;
		unlogged = s->refused_unlogged;
		s->refused_unlogged = 0;
		log = true;
	} else {
		s->refused_unlogged++;
	}
	mutex_unlock(&s->mu);
	if (log && unlogged > 0)
		rpc_server_log(s, conn->peer, "refused: %s; connection closed "
		    "(and %llu more refused since the last line)", why,
		    (unsigned long long)unlogged);
	else if (log)
		rpc_server_log(s, conn->peer, "refused: %s; connection closed",
		    why);
	return rc;
}

/*
 * The server's side of the handshake (format.h), within the send
 * timeout: 0 once the client is welcome, or a negative code (the
 * connection to be closed, refused and logged unless it closed before
 * its first byte).  Nothing the client sends is read past it before the
 * welcome (note 6).
 */
static int
conn_greet(struct rpc_conn *conn)
{
	struct rpc_server *s = conn->s;
	int64_t deadline = rpc_now_ns() +
	    (int64_t)s->opts.send_timeout_ms * 1000000;
	uint8_t hello[RPC_HELLO_SIZE], challenge[RPC_CHALLENGE_SIZE];
	uint8_t proof[RPC_PROOF_SIZE];
	const uint8_t *client_nonce = hello + RPC_PREAMBLE_SIZE;
	const uint8_t *server_nonce = challenge + RPC_PREAMBLE_SIZE;
	struct iovec iov;
	size_t written;
	char why[64];
	int rc;

	rc = rpc_socket_recv_exact(conn->fd, hello, RPC_PREAMBLE_SIZE,
	    deadline);
	if (rc == -ETIMEDOUT) {
		snprintf(why, sizeof(why), "no preamble in %d ms",
		    s->opts.send_timeout_ms);
		return conn_refuse(conn, rc, why);
	}
	if (rc < 0)
		return rc;	/* gone before a word: a probe, say nothing */
	if (memcmp(hello, RPC_PREAMBLE, RPC_PREAMBLE_SIZE) != 0)
		return conn_refuse(conn, -EPROTO, "wrong preamble (another "
		    "RPC version?)");
	if ((rc = rpc_socket_recv_exact(conn->fd, hello + RPC_PREAMBLE_SIZE,
	    RPC_NONCE_SIZE, deadline)) < 0)
		return conn_refuse(conn, rc, "hello cut short");

	memcpy(challenge, RPC_PREAMBLE, RPC_PREAMBLE_SIZE);
	if ((rc = rpc_auth_random(challenge + RPC_PREAMBLE_SIZE,
	    RPC_NONCE_SIZE)) < 0)
		return conn_refuse(conn, rc, bt_strerror(rc));
	rpc_auth_proof(s->key, RPC_LABEL_SERVER, client_nonce, server_nonce,
	    challenge + RPC_PREAMBLE_SIZE + RPC_NONCE_SIZE);
	iov = (struct iovec){ challenge, sizeof(challenge) };
	if ((rc = rpc_socket_send(conn->fd, &iov, 1, deadline,
	    &written)) < 0)
		return conn_refuse(conn, rc, "challenge not taken");

	if ((rc = rpc_socket_recv_exact(conn->fd, proof, sizeof(proof),
	    deadline)) < 0)
		return conn_refuse(conn, rc, rc == -ETIMEDOUT ? "no proof in "
		    "time" : "no proof: another cell's client, or one "
		    "without its secret");
	if (!rpc_auth_check(s->key, RPC_LABEL_CLIENT, client_nonce,
	    server_nonce, proof))
		return conn_refuse(conn, -EACCES, "wrong proof: the client "
		    "does not know the cell's secret");
	iov = (struct iovec){ (void *)RPC_WELCOME, RPC_WELCOME_SIZE };
	mutex_lock(&conn->write_mu);
	rc = rpc_socket_send(conn->fd, &iov, 1, 0, &written);
	mutex_unlock(&conn->write_mu);
	return rc;
}

/*
 * Run a request (unless its time ran out) and send the reply.  A send
 * that makes no progress for the send timeout (SO_SNDTIMEO) closes the
 * connection: a client that does not read holds a worker no longer than
 * that.  The timeout is on progress, not on the whole reply, so that a
 * large reply to a slow reader still goes out.  The reply is built in
 * scratch, the calling thread's buffer, kept from one request to the
 * next unless it grew large.
 */
static void
conn_answer(struct rpc_conn *conn, const struct rpc_call *call,
    struct slice request, struct buf *scratch)
{
	struct rpc_server *s = conn->s;
	uint8_t hdr[RPC_FRAME_HEADER_SIZE];
	struct rpc_frame f = { .id = call->id, .method = call->method };
	struct iovec iov[2];
	struct buf reply = *scratch;
	const char *msg;
	size_t written;
	bool expired;
	int status, rc;

	buf_clear(&reply);
	expired = call->deadline_ns != 0 && rpc_now_ns() > call->deadline_ns;
	if (expired)
		status = -ETIMEDOUT;
	else
		status = s->handler(s->arg, call, request, &reply);
	if (status < 0 && (reply.n == 0 || reply.n > RPC_MAX_FRAME)) {
		msg = expired ? EXPIRED_MESSAGE : bt_strerror(status);
		if (buf_set(&reply, msg, strlen(msg)) < 0)
			buf_clear(&reply);
	} else if (reply.n > RPC_MAX_FRAME) {
		status = -EMSGSIZE;
		msg = "reply over the largest frame";
		if (buf_set(&reply, msg, strlen(msg)) < 0)
			buf_clear(&reply);
	}
	f.status = status;
	f.payload = buf_slice(&reply);
	rpc_frame_header_encode(hdr, &f);
	iov[0] = (struct iovec){ hdr, sizeof(hdr) };
	iov[1] = (struct iovec){ reply.p, reply.n };

	mutex_lock(&conn->write_mu);
	if (!conn->dead &&
	    (rc = rpc_socket_send(conn->fd, iov, 2, 0, &written)) < 0) {
		conn->dead = true;
		(void)shutdown(conn->fd, SHUT_RDWR);
		if (rc == -ETIMEDOUT)
			rpc_server_log(s, conn->peer, "reply not taken for %d "
			    "ms; connection closed", s->opts.send_timeout_ms);
	}
	mutex_unlock(&conn->write_mu);
	if (reply.cap > REPLY_KEEP) {
		buf_release(&reply);
		buf_init(&reply);
	}
	*scratch = reply;
}

/* The call that frame f asks for. */
static struct rpc_call
conn_call(const struct rpc_conn *conn, const struct rpc_frame *f)
{
	return (struct rpc_call){
		.id = f->id,
		.method = f->method,
		.deadline_ns = f->timeout_ms == 0 ? 0 :
		    rpc_now_ns() + (int64_t)f->timeout_ms * 1000000,
		.peer = conn->peer,
		.conn = conn->number,
	};
}

/* Whether the request in f may run on the reader (note 5). */
static bool
conn_runs_inline(struct rpc_conn *conn, const struct rpc_reader *r,
    const struct rpc_frame *f)
{
	struct rpc_server *s = conn->s;
	bool ok;

	if (s->opts.short_method == NULL || !s->opts.short_method(f->method) ||
	    rpc_reader_buffered(r))
		return false;
	mutex_lock(&s->mu);
	ok = conn->inflight == 0 && !s->closing;
	mutex_unlock(&s->mu);
	return ok;
}

/* Queue one request, waiting while the connection has its most in flight.
 * 0, or -ECANCELED when the server is closing, or -ENOMEM. */
static int
conn_queue(struct rpc_conn *conn, const struct rpc_frame *f)
{
	struct rpc_server *s = conn->s;
	struct rpc_job *job;

	if ((job = bt_malloc(sizeof(*job) + f->payload.n)) == NULL)
		return -ENOMEM;
	job->next = NULL;
	job->conn = conn;
	job->call = conn_call(conn, f);
	job->n = f->payload.n;
	if (f->payload.n > 0)
		memcpy(job->payload, f->payload.p, f->payload.n);

	mutex_lock(&s->mu);
	while (conn->inflight >= s->opts.max_inflight_per_connection &&
	    !s->closing)
		cond_wait(&conn->room, &s->mu);
	if (s->closing) {
		mutex_unlock(&s->mu);
		bt_free(job);
		return -ECANCELED;
	}
	conn->inflight++;
	conn->refs++;
	*s->tail = job;
	s->tail = &job->next;
	pthread_cond_signal(&s->work);
	mutex_unlock(&s->mu);
	return 0;
}

/*
 * The reader thread of a connection.  A client that ends its stream
 * cleanly (between frames) still gets the replies to its requests: the
 * last of them shuts the socket down (note 2); any other end shuts it
 * down at once.
 */
static void *
conn_read(void *arg)
{
	struct rpc_conn *conn = arg;
	struct rpc_server *s = conn->s;
	struct rpc_reader r;
	struct rpc_frame f;
	struct rpc_call call;
	struct buf reply;
	const char *why;
	char scratch[64];
	bool truncated = false, drain = false;
	int rc;

	buf_init(&reply);
	rpc_reader_init(&r, conn->fd, s->opts.max_frame);
	if (conn_greet(conn) < 0)
		goto out;
	conn->greeted = true;
	while ((rc = rpc_reader_next(&r, &f, &truncated, 0)) == 0) {
		if (conn_runs_inline(conn, &r, &f)) {
			call = conn_call(conn, &f);
			conn_answer(conn, &call, f.payload, &reply);
		} else if ((rc = conn_queue(conn, &f)) < 0) {
			break;
		}
	}
	mutex_lock(&s->mu);
	drain = rc == BT_DONE && !s->closing;
	if (s->closing)
		rc = BT_DONE;	/* its own doing: nothing to report */
	mutex_unlock(&s->mu);
	if ((why = conn_reason(rc, truncated, scratch, sizeof(scratch),
	    s->opts.max_frame)) != NULL)
		rpc_server_log(s, conn->peer, "%s; connection closed", why);
out:
	rpc_reader_release(&r);
	buf_release(&reply);
	mutex_lock(&s->mu);
	conn->reader_done = true;
	conn->refs--;
	(void)shutdown(conn->fd, drain && conn->refs > 0 ? SHUT_RD : SHUT_RDWR);
	if (conn->prev != NULL)
		conn->prev->next = conn->next;
	else
		s->live = conn->next;
	if (conn->next != NULL)
		conn->next->prev = conn->prev;
	conn->prev = NULL;
	conn->next = s->done;
	if (s->done != NULL)
		s->done->prev = conn;
	s->done = conn;
	s->nlive--;
	pthread_cond_broadcast(&s->idle);
	mutex_unlock(&s->mu);
	return NULL;
}

int
rpc_conn_start(struct rpc_server *s, int fd, const char *peer)
{
	struct rpc_conn *conn;
	int one = 1, rc;

	mutex_assert_held(&s->mu);
	if ((conn = bt_calloc(1, sizeof(*conn))) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	conn->s = s;
	conn->number = ++s->conns;
	conn->fd = fd;
	snprintf(conn->peer, sizeof(conn->peer), "%s", peer);
	conn->refs = 1;
	if ((rc = mutex_init(&conn->write_mu)) < 0)
		goto out_free;
	if ((rc = -pthread_cond_init(&conn->room, NULL)) < 0)
		goto out_mutex;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	conn_set_timeout(fd, SO_SNDTIMEO, s->opts.send_timeout_ms);
	if ((rc = -pthread_create(&conn->reader, NULL, conn_read, conn)) < 0)
		goto out_cond;
	conn->next = s->live;
	if (s->live != NULL)
		s->live->prev = conn;
	s->live = conn;
	s->nlive++;
	return 0;
out_cond:
	pthread_cond_destroy(&conn->room);
out_mutex:
	mutex_destroy(&conn->write_mu);
out_free:
	bt_free(conn);
out:
	close(fd);
	return rc;
}

void
rpc_conn_reap(struct rpc_server *s)
{
	struct rpc_conn *conn, *next, *gone = NULL;

	mutex_lock(&s->mu);
	for (conn = s->done; conn != NULL; conn = next) {
		next = conn->next;
		if (conn->refs > 0)
			continue;
		if (conn->prev != NULL)
			conn->prev->next = next;
		else
			s->done = next;
		if (next != NULL)
			next->prev = conn->prev;
		conn->next = gone;
		gone = conn;
	}
	mutex_unlock(&s->mu);
	for (conn = gone; conn != NULL; conn = next) {
		next = conn->next;
		pthread_join(conn->reader, NULL);
		/* After the join: greeted is the reader's, and no handler
		 * of the connection runs any more (refs is 0). */
		if (conn->greeted && s->opts.closed != NULL)
			s->opts.closed(s->arg, conn->number);
		close(conn->fd);
		pthread_cond_destroy(&conn->room);
		mutex_destroy(&conn->write_mu);
		bt_free(conn);
	}
}

void *
rpc_conn_work(void *arg)
{
	struct rpc_server *s = arg;
	struct rpc_job *job;
	struct rpc_conn *conn;
	struct buf reply;
	bool run;

	buf_init(&reply);
	mutex_lock(&s->mu);
	for (;;) {
		while (s->head == NULL && !s->closing)
			cond_wait(&s->work, &s->mu);
		if ((job = s->head) == NULL)
			break;		/* closing, and nothing queued */
		if ((s->head = job->next) == NULL)
			s->tail = &s->head;
		run = !s->closing;	/* note 4 */
		mutex_unlock(&s->mu);
		if (run)
			conn_answer(job->conn, &job->call,
			    slice_make(job->payload, job->n), &reply);
		conn = job->conn;
		bt_free(job);
		mutex_lock(&s->mu);
		conn->inflight--;
		conn->refs--;
		pthread_cond_signal(&conn->room);
		if (conn->refs == 0 && conn->reader_done) {
			(void)shutdown(conn->fd, SHUT_RDWR);	/* note 2 */
			pthread_cond_broadcast(&s->idle);
		}
	}
	mutex_unlock(&s->mu);
	buf_release(&reply);
	return NULL;
}
