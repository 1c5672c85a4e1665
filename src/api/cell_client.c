/*
 * cell_client.c - calls to a cell's serving tablet server (cell_client.h):
 * locating it through ZooKeeper, one pipelined connection, retries.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/cell_client.h"
#include "coord/coord.h"
#include "rpc/rpc.h"
#include "rpc/rpc_pb.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/env.h"
#include "util/error.h"
#include "util/mutex.h"
#include "util/storage.h"

/* The first pause between two tries, doubled up to the last. */
#define RETRY_FIRST_MS 10
#define RETRY_LAST_MS 500
#define ADDRESS_MAX 256

struct cell_client {
	/*
	 * The ZooKeeper session locations are read through, used and
	 * replaced under locate_mu only: one thread locates at a time, and
	 * a session that ZooKeeper expired (the client was cut off or
	 * stopped for longer than its timeout) is replaced by a new one.
	 */
	struct mutex locate_mu;
	struct coord *coord;
	int64_t deadline_ns;		/* per call */
	char cell[ADDRESS_MAX];
	uint8_t secret[RPC_SECRET_SIZE];	/* the cell's, read at open */
	struct mutex mu;
	/* The connection calls use, or NULL; and the ones that broke,
	 * kept until close because other threads may still be in a call
	 * on them (guarded by mu). */
	struct rpc_client *rpc;
	char server[ADDRESS_MAX];
	struct rpc_client **retired;
	size_t retired_count;
};

bool
cell_client_address(const char *s)
{
	return coord_address_is_cell(s);
}

/*
 * The cell's secret, from its storage, which this process must be able
 * to read (docs/design.md section 5): 0, or -EACCES (whatever kept it
 * from being read: its detail says what) or -ENOMEM.
 */
static int
secret_read(struct cell_client *c)
{
	char storage[PATH_MAX];
	struct storage st;
	struct env *env;
	int rc;

	if ((rc = coord_cell_storage(c->coord, storage, sizeof(storage))) < 0)
		return rc;
	if ((rc = storage_parse(storage, &st)) < 0)
		return rc;
	if ((rc = storage_env_new(&st, &env)) < 0)
		return rc == -ENOMEM ? rc : bt_error_set(-EACCES, "cannot "
		    "reach the cell's storage %s: %s", storage,
		    bt_error_detail());
	rc = rpc_secret_read(env, st.path, c->secret);
	env_free(env);
	if (rc == -ENOENT)
		return bt_error_set(-EACCES, "%s (a cell made before secrets "
		    "has none: tabletctl -s %s init --secret makes it)",
		    bt_error_detail(), c->cell);
	if (rc < 0 && rc != -ENOMEM)
		return bt_error_set(-EACCES, "%s", bt_error_detail());
	return rc;
}

int
cell_client_open(const char *address, uint32_t deadline_ms,
    struct cell_client **out)
{
	struct cell_client *c;
	int rc;

	if ((c = bt_calloc(1, sizeof(*c))) == NULL)
		return -ENOMEM;
	if ((rc = mutex_init(&c->mu)) < 0)
		goto out_free;
	if ((rc = mutex_init(&c->locate_mu)) < 0)
		goto out_mu;
	c->deadline_ns = (int64_t)(deadline_ms ? deadline_ms :
	    CELL_CLIENT_DEADLINE_MS) * 1000000;
	snprintf(c->cell, sizeof(c->cell), "%s", address);
	if ((rc = coord_open(address, CELL_CLIENT_SESSION_MS,
	    rpc_now_ns() + c->deadline_ns, &c->coord)) < 0)
		goto out_locate_mu;
	if ((rc = secret_read(c)) < 0)
		goto out_coord;
	*out = c;
	return 0;
out_coord:
	coord_close(c->coord);
out_locate_mu:
	mutex_destroy(&c->locate_mu);
out_mu:
	mutex_destroy(&c->mu);
out_free:
	explicit_bzero(c->secret, sizeof(c->secret));
	bt_free(c);
	return rc;
}

void
cell_client_close(struct cell_client *c)
{
	if (c == NULL)
		return;
	rpc_client_close(c->rpc);
	for (size_t i = 0; i < c->retired_count; i++)
		rpc_client_close(c->retired[i]);
	bt_free(c->retired);
	coord_close(c->coord);
	mutex_destroy(&c->locate_mu);
	mutex_destroy(&c->mu);
	explicit_bzero(c->secret, sizeof(c->secret));
	bt_free(c);
}

/* Stop using rpc (if it is still the current connection): it broke, or
 * its server does not serve the cell any more. */
static void
connection_drop(struct cell_client *c, struct rpc_client *rpc)
{
	struct rpc_client **r;

	mutex_lock(&c->mu);
	if (c->rpc == rpc) {
		r = bt_realloc(c->retired, (c->retired_count + 1) *
		    sizeof(*r));
		if (r != NULL) {
			c->retired = r;
			c->retired[c->retired_count++] = rpc;
		}
		/* Without room to keep it, it leaks rather than being
		 * freed under another thread's call. */
		c->rpc = NULL;
	}
	mutex_unlock(&c->mu);
}

/*
 * Read the root location, in a new ZooKeeper session if the current one
 * was lost (-ENOLINK): it is only this client's, with nothing of it to
 * keep.  1 when no session opens yet (try again later).
 */
static int
root_get(struct cell_client *c, int64_t deadline, char **root,
    size_t *len, int32_t *version)
{
	struct coord *fresh;
	int rc;

	mutex_lock(&c->locate_mu);
	rc = coord_value_get(c->coord, "root", root, len, version);
	if (rc == -ENOLINK) {
		if (coord_open(c->cell, CELL_CLIENT_SESSION_MS, deadline,
		    &fresh) < 0) {
			rc = 1;
		} else {
			coord_close(c->coord);
			c->coord = fresh;
			rc = coord_value_get(c->coord, "root", root, len,
			    version);
		}
	}
	mutex_unlock(&c->locate_mu);
	return rc;
}

/*
 * The connection to the server the root location names: the current one,
 * or a new one.  1 when no server serves the cell yet (try again later).
 */
static int
connection_get(struct cell_client *c, int64_t deadline,
    struct rpc_client **out)
{
	struct rpc_client *rpc;
	char *root = NULL;
	size_t len;
	int32_t version;
	int rc;

	mutex_lock(&c->mu);
	if ((rpc = c->rpc) != NULL && !rpc_client_broken(rpc)) {
		mutex_unlock(&c->mu);
		*out = rpc;
		return 0;
	}
	mutex_unlock(&c->mu);
	if (rpc != NULL)
		connection_drop(c, rpc);
	if ((rc = root_get(c, deadline, &root, &len, &version)) == 1)
		return 1;
	if (rc == BT_NOTFOUND || (rc == 0 && len == 0)) {
		free(root);
		return 1;
	}
	if (rc < 0)
		return rc;
	rc = rpc_client_open(root, c->secret, deadline, &rpc);
	if (rc == -EACCES) {	/* not this cell's secret: no retry mends it */
		bt_error_set(rc, "cell %s: %s", c->cell, bt_error_detail());
		free(root);
		return rc;
	}
	if (rc < 0) {
		free(root);
		return 1;	/* the server may be gone: locate again */
	}
	mutex_lock(&c->mu);
	if (c->rpc == NULL) {
		c->rpc = rpc;
		snprintf(c->server, sizeof(c->server), "%s", root);
	} else {		/* another thread connected first */
		rpc_client_close(rpc);
		rpc = c->rpc;
	}
	mutex_unlock(&c->mu);
	free(root);
	*out = rpc;
	return 0;
}

static void
pause_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static int
request_pack(const ProtobufCMessage *request, struct buf *out)
{
	size_t n;
	int rc;

	if (request == NULL)
		return 0;
	n = protobuf_c_message_get_packed_size(request);
	if ((rc = buf_reserve(out, n)) < 0)
		return rc;
	protobuf_c_message_pack(request, out->p);
	out->n = n;
	return 0;
}

/* A non-idempotent call whose connection failed after it was sent. */
static int
outcome_unknown(struct cell_client *c, int rc)
{
	char server[ADDRESS_MAX];

	mutex_lock(&c->mu);
	snprintf(server, sizeof(server), "%s", c->server);
	mutex_unlock(&c->mu);
	return bt_error_set(-EIO, "cell %s: the connection to %s failed "
	    "after the request was sent (%s): its outcome is unknown",
	    c->cell, server, bt_strerror(rc));
}

/*
 * Send req as method to the located server, retrying as retry says,
 * until the reply arrives: 0 with its status in *status and its payload
 * in *rep, and the connection it came on in *used; or a negative code.
 */
static int
call_located(struct cell_client *c, uint32_t method, struct slice req,
    enum cell_retry retry, struct buf *rep, int32_t *status,
    struct rpc_client **used)
{
	int64_t deadline = rpc_now_ns() + c->deadline_ns;
	int wait = RETRY_FIRST_MS;
	int rc;

	for (;;) {
		struct rpc_client *rpc;
		bool sent = false;

		rc = connection_get(c, deadline, &rpc);
		if (rc < 0)
			return rc;
		if (rc == 0) {
			rep->n = 0;
			rc = rpc_client_call(rpc, method, req, deadline, rep,
			    status, &sent);
			if (rc == 0 && *status != BT_ENOTSERVING) {
				*used = rpc;
				return 0;
			}
			connection_drop(c, rpc);
			if (retry == CELL_RETRY_NONE)
				return rc == 0 ? BT_ENOTSERVING : rc;
			if (rc < 0 && sent && retry == CELL_RETRY_UNSENT)
				return outcome_unknown(c, rc);
		}
		if (rpc_now_ns() + (int64_t)wait * 1000000 > deadline)
			return bt_error_set(-ETIMEDOUT, "cell %s: no server "
			    "answered within the deadline", c->cell);
		pause_ms(wait);
		wait = wait * 2 > RETRY_LAST_MS ? RETRY_LAST_MS : wait * 2;
	}
}

/* The reply's status as the call's result, and its message unpacked. */
static int
reply_finish(struct cell_client *c, int32_t status, const struct buf *rep,
    const ProtobufCMessageDescriptor *reply_desc, ProtobufCMessage **reply)
{
	if (status != 0)
		return bt_error_set(status, "%.*s", (int)rep->n,
		    rep->n ? (const char *)rep->p : bt_strerror(status));
	if (reply_desc != NULL) {
		*reply = protobuf_c_message_unpack(reply_desc, &rpc_pb_allocator,
		    rep->n, rep->p);
		if (*reply == NULL)
			return bt_error_set(-EPROTO, "cell %s: a reply does "
			    "not decode", c->cell);
	}
	return 0;
}

int
cell_client_call(struct cell_client *c, uint32_t method,
    const ProtobufCMessage *request, enum cell_retry retry,
    const ProtobufCMessageDescriptor *reply_desc, ProtobufCMessage **reply)
{
	struct rpc_client *used;
	struct buf req, rep;
	int32_t status;
	int rc;

	buf_init(&req);
	buf_init(&rep);
	if ((rc = request_pack(request, &req)) < 0)
		goto out;
	if ((rc = call_located(c, method, buf_slice(&req), retry, &rep,
	    &status, &used)) < 0)
		goto out;
	rc = reply_finish(c, status, &rep, reply_desc, reply);
out:
	buf_release(&req);
	buf_release(&rep);
	return rc;
}

int
cell_client_call_pinned(struct cell_client *c, struct rpc_client **pin,
    uint32_t method, struct slice request,
    const ProtobufCMessageDescriptor *reply_desc, ProtobufCMessage **reply,
    bool *lost)
{
	struct rpc_client *rpc = *pin;
	struct buf rep;
	int32_t status;
	bool sent;
	int rc;

	*lost = false;
	buf_init(&rep);
	if (rpc == NULL) {
		if ((rc = call_located(c, method, request, CELL_RETRY_ANY,
		    &rep, &status, pin)) < 0)
			goto out;
	} else {
		rc = rpc_client_broken(rpc) ? -ECONNRESET :
		    rpc_client_call(rpc, method, request, rpc_now_ns() +
		    c->deadline_ns, &rep, &status, &sent);
		if (rc == 0 && status == BT_ENOTSERVING)
			rc = BT_ENOTSERVING;
		if (rc < 0 && rc != -ENOMEM) {
			if (rc != -ETIMEDOUT)
				connection_drop(c, rpc);
			*lost = true;
			rc = bt_error_set(-EIO, "cell %s: the connection to "
			    "the server that holds this load failed (%s)",
			    c->cell, bt_strerror(rc));
			goto out;
		}
		if (rc < 0)
			goto out;
	}
	rc = reply_finish(c, status, &rep, reply_desc, reply);
out:
	buf_release(&rep);
	return rc;
}

void
cell_client_free(ProtobufCMessage *reply)
{
	if (reply != NULL)
		protobuf_c_message_free_unpacked(reply, &rpc_pb_allocator);
}
