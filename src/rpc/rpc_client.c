/*
 * rpc_client.c - the RPC client: one connection, many calling threads.
 *
 * NOTES ON THE DESIGN
 *
 * 1. Every call waiting for a reply has a struct pending on its own stack,
 *    in the table under its id while it is WAITING.  c->mu guards the
 *    table, the states, c->error, c->sending, c->reading and c->callers.
 * 2. The reader (note 5) alone takes a pending out of the table for a
 *    reply (it becomes CLAIMED), appends the payload to the caller's
 *    buffer without the lock, then marks it DONE.  A caller returns only
 *    from WAITING (it takes itself out: timeout) or DONE, never while
 *    CLAIMED, so the reader never writes to a buffer whose caller has
 *    gone.
 * 3. One caller at a time sends (c->sending), so frames never interleave.
 *    A send that stops partway leaves the stream unframed: the connection
 *    is broken.
 * 4. Once c->error is set it stays: the socket is shut down, every WAITING
 *    call is DONE with the error, and new calls fail at once with nothing
 *    sent.
 * 5. There is no reader thread: a caller waiting for its reply reads the
 *    socket itself while no other does (c->reading; c->reader is its
 *    alone then), handing the replies of others to them, so that a lone
 *    caller gets its reply with no thread handoff.  It stops reading when
 *    its own reply has come or its time ran out, and wakes one WAITING
 *    caller to read on.  Nothing reads while no call waits: a late reply,
 *    or the end of the stream, that arrived meanwhile is read by the next
 *    caller before it sends, so that a connection the server closed while
 *    idle fails that call with nothing sent; an idempotent call (a read)
 *    skips that look, a system call, since sending it again is safe.
 *    A reader waits in recv itself (rpc_reader_set_recv_timeout), not in
 *    poll and then recv.
 */
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rpc/rpc.h"
#include "rpc/rpc_int.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/mutex.h"

#define PENDING_BUCKETS	64
#define RECV_TIMEOUT_MS	100	/* how often a reader looks at its deadline
				   while it waits in recv (note 5) */

enum pending_state { PENDING_WAITING, PENDING_CLAIMED, PENDING_DONE };

struct pending {
	uint64_t id;
	struct pending *next;		/* in its bucket, while WAITING */
	pthread_cond_t cond;		/* signalled when DONE */
	enum pending_state state;
	struct buf *reply;
	int32_t status;
	int rc;				/* 0, or why the call failed */
};

struct rpc_client {
	int fd;
	struct mutex mu;
	pthread_cond_t send_cond;	/* sending became false, or error */
	pthread_cond_t callers_cond;	/* callers reached 0 while closing */
	bool sending;			/* a caller is writing (note 3) */
	bool reading;			/* a caller is reading (note 5) */
	bool closing;
	int callers;			/* threads inside rpc_client_call */
	int error;			/* note 4 */
	atomic_bool broken;		/* error != 0, read without mu */
	uint64_t next_id;
	struct rpc_reader reader;	/* the reading caller's (note 5) */
	struct pending *table[PENDING_BUCKETS];
};

static struct pending **
table_slot(struct rpc_client *c, uint64_t id)
{
	struct pending **pp = &c->table[id % PENDING_BUCKETS];

	while (*pp != NULL && (*pp)->id != id)
		pp = &(*pp)->next;
	return pp;
}

/* Take the WAITING call id out of the table; NULL if there is none. */
static struct pending *
table_remove(struct rpc_client *c, uint64_t id)
{
	struct pending **pp, *p;

	mutex_assert_held(&c->mu);
	pp = table_slot(c, id);
	if ((p = *pp) != NULL) {
		*pp = p->next;
		p->next = NULL;
	}
	return p;
}

/* Note 4: fail the connection with rc, once. */
static void
client_break(struct rpc_client *c, int rc)
{
	struct pending *p;

	mutex_assert_held(&c->mu);
	assert(rc < 0);
	if (c->error != 0)
		return;
	c->error = rc;
	atomic_store(&c->broken, true);
	(void)shutdown(c->fd, SHUT_RDWR);
	for (size_t i = 0; i < PENDING_BUCKETS; i++) {
		while ((p = c->table[i]) != NULL) {
			c->table[i] = p->next;
			p->next = NULL;
			p->state = PENDING_DONE;
			p->rc = rc;
			pthread_cond_signal(&p->cond);
		}
	}
	pthread_cond_broadcast(&c->send_cond);
}

/*
 * As the reader (note 5), read one frame by deadline_ns (as for
 * rpc_reader_next) and hand it to its caller (note 2).  Called and
 * returns with mu held.  0 when a frame came, -ETIMEDOUT or -EAGAIN when
 * none did, or the code the connection failed with (note 4).
 */
static int
client_read_frame(struct rpc_client *c, int64_t deadline_ns)
{
	struct rpc_frame f;
	struct pending *p;
	bool truncated;
	int rc, arc;

	mutex_assert_held(&c->mu);
	assert(c->reading);
	mutex_unlock(&c->mu);
	rc = rpc_reader_next(&c->reader, &f, &truncated, deadline_ns);
	mutex_lock(&c->mu);
	if (rc == -ETIMEDOUT || rc == -EAGAIN)
		return rc;
	if (rc != 0) {
		if (rc == BT_DONE || rc == BT_ECHECKSUM || rc == -EMSGSIZE)
			rc = rc == BT_DONE ? -ECONNRESET : -EPROTO;
		client_break(c, rc);
		return c->error;
	}
	if ((p = table_remove(c, f.id)) == NULL)
		return 0;	/* its caller gave up */
	p->state = PENDING_CLAIMED;
	mutex_unlock(&c->mu);
	arc = buf_append(p->reply, f.payload.p, f.payload.n);
	mutex_lock(&c->mu);
	p->status = f.status;
	p->rc = arc;
	p->state = PENDING_DONE;
	pthread_cond_signal(&p->cond);
	return 0;
}

/*
 * While nobody reads, wake a WAITING caller to read (note 5).  A caller
 * leaving the table without reading calls it too: the wake may have gone
 * to it (while it was sending, or as its wait timed out).
 */
static void
client_wake_reader(struct rpc_client *c)
{
	mutex_assert_held(&c->mu);
	if (c->reading)
		return;
	for (size_t i = 0; i < PENDING_BUCKETS; i++) {
		if (c->table[i] != NULL) {
			pthread_cond_signal(&c->table[i]->cond);
			return;
		}
	}
}

/* Stop reading (note 5), and wake a WAITING caller to read on. */
static void
client_reader_leave(struct rpc_client *c)
{
	mutex_assert_held(&c->mu);
	assert(c->reading);
	c->reading = false;
	client_wake_reader(c);
}

/* Before a send, read what arrived while nobody read (note 5). */
static void
client_drain(struct rpc_client *c)
{
	mutex_assert_held(&c->mu);
	if (c->reading || c->error != 0)
		return;
	c->reading = true;
	while (client_read_frame(c, -1) == 0)
		;
	client_reader_leave(c);
}

/*
 * The client's side of the handshake (format.h) on c->fd, by deadline_ns:
 * 0 or a negative code with a detail naming the server.
 */
static int
client_handshake(struct rpc_client *c, const char *address,
    const uint8_t *secret, int64_t deadline_ns)
{
	uint8_t hello[RPC_HELLO_SIZE], challenge[RPC_CHALLENGE_SIZE];
	uint8_t proof[RPC_PROOF_SIZE], welcome[RPC_WELCOME_SIZE];
	const uint8_t *client_nonce = hello + RPC_PREAMBLE_SIZE;
	const uint8_t *server_nonce = challenge + RPC_PREAMBLE_SIZE;
	struct iovec iov;
	size_t written;
	int rc;

	memcpy(hello, RPC_PREAMBLE, RPC_PREAMBLE_SIZE);
	if ((rc = rpc_auth_random(hello + RPC_PREAMBLE_SIZE,
	    RPC_NONCE_SIZE)) < 0)
		return rc;
	iov = (struct iovec){ hello, sizeof(hello) };
	if ((rc = rpc_socket_send(c->fd, &iov, 1, deadline_ns,
	    &written)) < 0)
		return bt_error_set(rc, "server %s: %s", address,
		    bt_strerror(rc));
	rc = rpc_socket_recv_exact(c->fd, challenge, sizeof(challenge),
	    deadline_ns);
	if (rc == -ECONNRESET)
		return bt_error_set(rc, "server %s closed the connection at "
		    "the hello: a server of another RPC version, or one "
		    "over its connections", address);
	if (rc < 0)
		return bt_error_set(rc, "server %s: %s", address,
		    bt_strerror(rc));
	if (memcmp(challenge, RPC_PREAMBLE, RPC_PREAMBLE_SIZE) != 0)
		return bt_error_set(-EPROTO, "server %s is no RPC server of "
		    "version %d", address, RPC_PREAMBLE[7]);
	if (!rpc_auth_check(secret, RPC_LABEL_SERVER, client_nonce,
	    server_nonce, challenge + RPC_PREAMBLE_SIZE + RPC_NONCE_SIZE))
		return bt_error_set(-EACCES, "server %s does not prove the "
		    "cell's secret: wrong cell secret, or another cell's "
		    "server", address);
	rpc_auth_proof(secret, RPC_LABEL_CLIENT, client_nonce, server_nonce,
	    proof);
	iov = (struct iovec){ proof, sizeof(proof) };
	if ((rc = rpc_socket_send(c->fd, &iov, 1, deadline_ns, &written)) < 0 ||
	    (rc = rpc_socket_recv_exact(c->fd, welcome, sizeof(welcome),
	    deadline_ns)) < 0) {
		if (rc == -ECONNRESET || rc == -EPIPE)
			return bt_error_set(-EACCES, "server %s refused the "
			    "connection: wrong cell secret or old protocol",
			    address);
		return bt_error_set(rc, "server %s: %s", address,
		    bt_strerror(rc));
	}
	if (memcmp(welcome, RPC_WELCOME, RPC_WELCOME_SIZE) != 0)
		return bt_error_set(-EPROTO, "server %s: no welcome after the "
		    "handshake", address);
	return 0;
}

int
rpc_client_open(const char *address, const uint8_t *secret,
    int64_t deadline_ns, struct rpc_client **out)
{
	struct rpc_client *c;
	int rc;

	if ((c = bt_calloc(1, sizeof(*c))) == NULL)
		return -ENOMEM;
	if ((rc = mutex_init(&c->mu)) < 0)
		goto out_free;
	if ((rc = rpc_cond_init(&c->send_cond)) < 0)
		goto out_mutex;
	if ((rc = rpc_cond_init(&c->callers_cond)) < 0)
		goto out_send_cond;
	if ((rc = rpc_socket_connect(address, deadline_ns, &c->fd)) < 0) {
		bt_error_set(rc, "server %s: %s", address, bt_strerror(rc));
		goto out_callers_cond;
	}
	if ((rc = client_handshake(c, address, secret, deadline_ns)) < 0)
		goto out_close;
	rpc_reader_init(&c->reader, c->fd, RPC_MAX_FRAME);
	/* Without it, every wait polls first: one more system call. */
	(void)rpc_reader_set_recv_timeout(&c->reader, RECV_TIMEOUT_MS);
	*out = c;
	return 0;
out_close:
	close(c->fd);
out_callers_cond:
	pthread_cond_destroy(&c->callers_cond);
out_send_cond:
	pthread_cond_destroy(&c->send_cond);
out_mutex:
	mutex_destroy(&c->mu);
out_free:
	bt_free(c);
	return rc;
}

void
rpc_client_close(struct rpc_client *c)
{
	if (c == NULL)
		return;
	mutex_lock(&c->mu);
	c->closing = true;
	client_break(c, -ECONNRESET);
	while (c->callers > 0)
		cond_wait(&c->callers_cond, &c->mu);
	mutex_unlock(&c->mu);
	rpc_reader_release(&c->reader);
	close(c->fd);
	pthread_cond_destroy(&c->callers_cond);
	pthread_cond_destroy(&c->send_cond);
	mutex_destroy(&c->mu);
	bt_free(c);
}

void
rpc_client_abort(struct rpc_client *c)
{
	mutex_lock(&c->mu);
	client_break(c, -ECONNABORTED);
	mutex_unlock(&c->mu);
}

bool
rpc_client_broken(const struct rpc_client *c)
{
	return atomic_load(&((struct rpc_client *)c)->broken);
}

/* Wait on cond until deadline_ns (0: until signalled).  0 or ETIMEDOUT. */
static int
client_wait(struct rpc_client *c, pthread_cond_t *cond, int64_t deadline_ns)
{
	struct timespec ts;

	if (deadline_ns == 0) {
		cond_wait(cond, &c->mu);
		return 0;
	}
	ts = rpc_abstime(deadline_ns);
	return cond_timedwait(cond, &c->mu, &ts);
}

/* Send request id when its turn comes (note 3).  Called and returns with
 * mu held.  0 or a negative code; *sent as for rpc_client_call. */
static int
client_send(struct rpc_client *c, uint32_t method, struct slice req,
    int64_t deadline_ns, bool *sent, uint64_t id)
{
	uint8_t hdr[RPC_FRAME_HEADER_SIZE];
	struct rpc_frame f = { .id = id, .method = method, .payload = req };
	struct iovec iov[2];
	size_t written;
	int rc;

	while (c->sending && c->error == 0)
		if (client_wait(c, &c->send_cond, deadline_ns) == ETIMEDOUT)
			return -ETIMEDOUT;
	if (c->error != 0)
		return c->error;
	f.timeout_ms = rpc_timeout_ms(deadline_ns, rpc_now_ns());
	if (deadline_ns != 0 && rpc_now_ns() >= deadline_ns)
		return -ETIMEDOUT;
	c->sending = true;
	mutex_unlock(&c->mu);

	rpc_frame_header_encode(hdr, &f);
	iov[0] = (struct iovec){ hdr, sizeof(hdr) };
	iov[1] = (struct iovec){ (void *)req.p, req.n };
	rc = rpc_socket_send(c->fd, iov, 2, deadline_ns, &written);

	mutex_lock(&c->mu);
	c->sending = false;
	pthread_cond_signal(&c->send_cond);
	*sent = written > 0;
	if (rc < 0 && (written > 0 || rc != -ETIMEDOUT))
		client_break(c, rc == -ETIMEDOUT ? -ECONNABORTED : rc);
	return rc;
}

/* rpc_client_call(), and with drain false rpc_client_call_idempotent(). */
static int
client_call(struct rpc_client *c, uint32_t method, struct slice req,
    int64_t deadline_ns, struct buf *reply, int32_t *status, bool *sent,
    bool drain)
{
	struct pending p = { .state = PENDING_WAITING, .reply = reply };
	struct pending **slot;
	bool reader = false;	/* this caller reads (note 5) */
	int rc;

	*sent = false;
	if (req.n > RPC_MAX_FRAME)
		return -EMSGSIZE;
	if ((rc = rpc_cond_init(&p.cond)) < 0)
		return rc;
	mutex_lock(&c->mu);
	assert(!c->closing);
	if (c->error != 0) {
		rc = c->error;
		goto out_unlock;
	}
	c->callers++;
	if (drain)
		client_drain(c);
	if (c->error != 0) {
		rc = c->error;
		goto out_callers;
	}
	p.id = ++c->next_id;
	slot = table_slot(c, p.id);
	assert(*slot == NULL);
	*slot = &p;
	if ((rc = client_send(c, method, req, deadline_ns, sent, p.id)) < 0) {
		if (p.state == PENDING_WAITING) {
			table_remove(c, p.id);
			client_wake_reader(c);
		}
		goto out_callers;
	}
	while (p.state != PENDING_DONE) {
		if (!reader && c->reading) {	/* another reads for this one */
			if (client_wait(c, &p.cond, deadline_ns) == ETIMEDOUT &&
			    p.state == PENDING_WAITING) {
				table_remove(c, p.id);
				client_wake_reader(c);
				rc = -ETIMEDOUT;
				goto out_callers;
			}
			continue;
		}
		c->reading = reader = true;
		rc = client_read_frame(c, deadline_ns);
		if (p.state != PENDING_DONE && rc == -ETIMEDOUT) {
			table_remove(c, p.id);	/* before waking another */
			client_reader_leave(c);
			goto out_callers;
		}
		if (p.state == PENDING_DONE) {
			client_reader_leave(c);
			reader = false;
		}
	}
	if ((rc = p.rc) == 0)
		*status = p.status;
out_callers:
	if (--c->callers == 0 && c->closing)
		pthread_cond_signal(&c->callers_cond);
out_unlock:
	mutex_unlock(&c->mu);
	pthread_cond_destroy(&p.cond);
	return rc;
}

int
rpc_client_call(struct rpc_client *c, uint32_t method, struct slice req,
    int64_t deadline_ns, struct buf *reply, int32_t *status, bool *sent)
{
	return client_call(c, method, req, deadline_ns, reply, status, sent,
	    true);
}

int
rpc_client_call_idempotent(struct rpc_client *c, uint32_t method,
    struct slice req, int64_t deadline_ns, struct buf *reply,
    int32_t *status, bool *sent)
{
	return client_call(c, method, req, deadline_ns, reply, status, sent,
	    false);
}
