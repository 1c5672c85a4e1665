/*
 * cell_client.c - calls to a cell's servers (cell_client.h): the root's
 * server located through ZooKeeper, one pipelined connection per server
 * address, retries.  Routing rows by tablet is cell_route.c's.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/cell_client.h"
#include "api/cell_client_int.h"
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

/* A client with nothing open yet: 0 or -ENOMEM. */
static int
client_new(const char *name, uint32_t deadline_ms, struct cell_client **out)
{
	struct cell_client *c;
	int rc;

	if ((c = bt_calloc(1, sizeof(*c))) == NULL)
		return -ENOMEM;
	if ((rc = mutex_init(&c->mu)) < 0)
		goto out_free;
	if ((rc = mutex_init(&c->locate_mu)) < 0)
		goto out_mu;
	if ((rc = cell_locations_new(0, &c->locations)) < 0)
		goto out_locate_mu;
	c->deadline_ns = (int64_t)(deadline_ms ? deadline_ms :
	    CELL_CLIENT_DEADLINE_MS) * 1000000;
	snprintf(c->cell, sizeof(c->cell), "%s", name);
	atomic_init(&c->route, ROUTE_UNKNOWN);
	atomic_init(&c->locates, 0);
	*out = c;
	return 0;
out_locate_mu:
	mutex_destroy(&c->locate_mu);
out_mu:
	mutex_destroy(&c->mu);
out_free:
	bt_free(c);
	return rc;
}

int
cell_client_open(const char *address, uint32_t deadline_ms,
    struct cell_client **out)
{
	struct cell_client *c;
	int rc;

	if ((rc = client_new(address, deadline_ms, &c)) < 0)
		return rc;
	if ((rc = coord_open(address, CELL_CLIENT_SESSION_MS,
	    rpc_now_ns() + c->deadline_ns, &c->coord)) < 0)
		goto out_free;
	if ((rc = secret_read(c)) < 0)
		goto out_free;
	*out = c;
	return 0;
out_free:
	cell_client_close(c);
	return rc;
}

int
cell_client_open_at(const char *root, const uint8_t *secret,
    uint32_t deadline_ms, struct cell_client **out)
{
	struct cell_client *c;
	int rc;

	if (strlen(root) >= CELL_SERVER_MAX)
		return bt_error_set(-EINVAL, "%s: not a server's address",
		    root);
	if ((rc = client_new(root, deadline_ms, &c)) < 0)
		return rc;
	snprintf(c->fixed_root, sizeof(c->fixed_root), "%s", root);
	memcpy(c->secret, secret, RPC_SECRET_SIZE);
	*out = c;
	return 0;
}

void
cell_client_close(struct cell_client *c)
{
	if (c == NULL)
		return;
	for (size_t i = 0; i < c->conn_count; i++)
		rpc_client_close(c->conns[i].rpc);
	for (size_t i = 0; i < c->retired_count; i++)
		rpc_client_close(c->retired[i]);
	bt_free(c->conns);
	bt_free(c->retired);
	for (size_t i = 0; i < c->server_count; i++)
		free(c->servers[i]);
	free(c->servers);
	cell_locations_free(c->locations);
	coord_close(c->coord);
	mutex_destroy(&c->locate_mu);
	mutex_destroy(&c->mu);
	explicit_bzero(c->secret, sizeof(c->secret));
	bt_free(c);
}

/* The slot of address, or NULL.  Caller holds mu. */
static struct cell_conn *
conn_find(struct cell_client *c, const char *address)
{
	mutex_assert_held(&c->mu);
	for (size_t i = 0; i < c->conn_count; i++)
		if (strcmp(c->conns[i].address, address) == 0)
			return &c->conns[i];
	return NULL;
}

void
cell_conn_drop(struct cell_client *c, struct rpc_client *rpc)
{
	struct rpc_client **r;

	mutex_lock(&c->mu);
	for (size_t i = 0; i < c->conn_count; i++) {
		if (c->conns[i].rpc != rpc)
			continue;
		r = bt_realloc(c->retired, (c->retired_count + 1) *
		    sizeof(*r));
		if (r != NULL) {
			c->retired = r;
			c->retired[c->retired_count++] = rpc;
		}
		/* Without room to keep it, it leaks rather than being
		 * freed under another thread's call (1). */
		c->conns[i].rpc = NULL;
	}
	mutex_unlock(&c->mu);
}

/* Put rpc in address's slot unless another thread did first: the
 * connection to use then in *out.  0 or -ENOMEM. */
static int
conn_put(struct cell_client *c, const char *address, struct rpc_client *rpc,
    struct rpc_client **out)
{
	struct cell_conn *slot, *p;

	mutex_lock(&c->mu);
	if ((slot = conn_find(c, address)) == NULL) {
		p = bt_realloc(c->conns, (c->conn_count + 1) * sizeof(*p));
		if (p == NULL) {
			mutex_unlock(&c->mu);
			rpc_client_close(rpc);
			return -ENOMEM;
		}
		c->conns = p;
		slot = &c->conns[c->conn_count++];
		snprintf(slot->address, sizeof(slot->address), "%s", address);
		slot->rpc = NULL;
	}
	if (slot->rpc == NULL) {
		slot->rpc = rpc;
	} else {		/* another thread connected first */
		rpc_client_close(rpc);
		rpc = slot->rpc;
	}
	mutex_unlock(&c->mu);
	*out = rpc;
	return 0;
}

int
cell_conn_get(struct cell_client *c, const char *address, int64_t deadline,
    struct rpc_client **out)
{
	struct cell_conn *slot;
	struct rpc_client *rpc = NULL;
	int rc;

	mutex_lock(&c->mu);
	if ((slot = conn_find(c, address)) != NULL)
		rpc = slot->rpc;
	mutex_unlock(&c->mu);
	if (rpc != NULL && !rpc_client_broken(rpc)) {
		*out = rpc;
		return 0;
	}
	if (rpc != NULL)
		cell_conn_drop(c, rpc);
	rc = rpc_client_open(address, c->secret, deadline, &rpc);
	if (rc == -EACCES)	/* not this cell's secret: no retry mends it */
		return bt_error_set(rc, "cell %s: %s", c->cell,
		    bt_error_detail());
	if (rc == -ENOMEM)
		return rc;
	if (rc < 0)
		return 1;	/* the server may be gone: locate again */
	return conn_put(c, address, rpc, out);
}

/*
 * Read the root location, in a new ZooKeeper session if the current one
 * was lost (-ENOLINK): it is only this client's, with nothing of it to
 * keep.  1 when no session opens yet (try again later).
 */
static int
root_read(struct cell_client *c, int64_t deadline, char **root,
    size_t *len, int32_t *version)
{
	struct coord *fresh;
	int rc;

	if (c->coord == NULL) {
		if ((*root = strdup(c->fixed_root)) == NULL)
			return -ENOMEM;
		*len = strlen(c->fixed_root);
		return 0;
	}
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

int
cell_root_get(struct cell_client *c, int64_t deadline,
    struct rpc_client **out, char root[CELL_SERVER_MAX])
{
	struct cell_conn *slot;
	struct rpc_client *rpc = NULL;
	char *value = NULL;
	size_t len;
	int32_t version;
	int rc;

	mutex_lock(&c->mu);
	if (c->root[0] != '\0' && (slot = conn_find(c, c->root)) != NULL)
		rpc = slot->rpc;
	memcpy(root, c->root, sizeof(c->root));
	mutex_unlock(&c->mu);
	if (rpc != NULL && !rpc_client_broken(rpc)) {
		*out = rpc;
		return 0;
	}
	if (rpc != NULL)
		cell_conn_drop(c, rpc);
	if ((rc = root_read(c, deadline, &value, &len, &version)) == 1)
		return 1;
	if (rc == BT_NOTFOUND || (rc == 0 && (len == 0 ||
	    len >= CELL_SERVER_MAX))) {
		free(value);
		return 1;
	}
	if (rc < 0)
		return rc;
	snprintf(root, CELL_SERVER_MAX, "%s", value);
	free(value);
	if ((rc = cell_conn_get(c, root, deadline, &rpc)) != 0)
		return rc;
	mutex_lock(&c->mu);
	memcpy(c->root, root, sizeof(c->root));
	mutex_unlock(&c->mu);
	/* A new root connection: its server may answer LOCATE otherwise
	 * than the last one (3). */
	atomic_store(&c->route, ROUTE_UNKNOWN);
	*out = rpc;
	return 0;
}

/* Copy count strings of from into *out (free()): 0 or -ENOMEM. */
static int
names_copy(char *const *from, size_t count, char ***out)
{
	char **to;

	if ((to = calloc(count + 1, sizeof(*to))) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < count; i++)
		if ((to[i] = strdup(from[i])) == NULL) {
			while (i > 0)
				free(to[--i]);
			free(to);
			return -ENOMEM;
		}
	*out = to;
	return 0;
}

/* The servers registered in ZooKeeper, each one's address (its node's
 * data): 0 or negative.  Caller holds locate_mu. */
static int
servers_read(struct cell_client *c, char ***out, size_t *count)
{
	char **names, **addresses;
	size_t n, live = 0;
	int rc;

	mutex_assert_held(&c->locate_mu);
	if ((rc = coord_servers_list(c->coord, &names, &n)) < 0)
		return rc;
	if ((addresses = calloc(n + 1, sizeof(*addresses))) == NULL) {
		coord_names_free(names, n);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)	/* one gone meanwhile is skipped */
		if (coord_server_get(c->coord, names[i],
		    &addresses[live]) == 0)
			live++;
	coord_names_free(names, n);
	*out = addresses;
	*count = live;
	return 0;
}

/* Without ZooKeeper: the root's and every address connected to. */
static int
servers_known(struct cell_client *c, char ***out, size_t *count)
{
	char **names;
	size_t n = 0;
	int rc;

	mutex_lock(&c->mu);
	if ((names = calloc(c->conn_count + 2, sizeof(*names))) == NULL) {
		mutex_unlock(&c->mu);
		return -ENOMEM;
	}
	names[n++] = c->fixed_root;
	for (size_t i = 0; i < c->conn_count; i++)
		if (strcmp(c->conns[i].address, c->fixed_root) != 0)
			names[n++] = c->conns[i].address;
	rc = names_copy(names, n, out);
	mutex_unlock(&c->mu);
	free(names);
	*count = n;
	return rc;
}

int
cell_servers_list(struct cell_client *c, char ***addresses, size_t *count)
{
	int64_t now = rpc_now_ns();
	int rc = 0;

	if (c->coord == NULL)
		return servers_known(c, addresses, count);
	mutex_lock(&c->locate_mu);
	if (c->servers == NULL ||
	    now - c->servers_at_ns > (int64_t)CELL_SERVERS_MS * 1000000) {
		char **fresh;
		size_t n;

		if ((rc = servers_read(c, &fresh, &n)) == 0) {
			for (size_t i = 0; i < c->server_count; i++)
				free(c->servers[i]);
			free(c->servers);
			c->servers = fresh;
			c->server_count = n;
			c->servers_at_ns = now;
		}
	}
	if (c->servers != NULL) {	/* the last list, if none is read */
		rc = names_copy(c->servers, c->server_count, addresses);
		*count = c->server_count;
	}
	mutex_unlock(&c->locate_mu);
	return rc;
}

int
cell_client_backoff(struct cell_client *c, int64_t deadline, int *wait_ms)
{
	int ms = *wait_ms > 0 ? *wait_ms : RETRY_FIRST_MS;
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	if (rpc_now_ns() + (int64_t)ms * 1000000 > deadline)
		return bt_error_set(-ETIMEDOUT, "cell %s: no server "
		    "answered within the deadline", c->cell);
	nanosleep(&ts, NULL);
	*wait_ms = ms * 2 > RETRY_LAST_MS ? RETRY_LAST_MS : ms * 2;
	return 0;
}

int
cell_request_pack(const ProtobufCMessage *request, struct buf *out)
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

int
cell_client_outcome_unknown(struct cell_client *c, const char *server, int rc)
{
	return bt_error_set(-EIO, "cell %s: the connection to %s failed "
	    "after the request was sent (%s): its outcome is unknown",
	    c->cell, server, bt_strerror(rc));
}

/*
 * Send req as method to the root's server, retrying as retry says,
 * until the reply arrives: 0 with its status in *status and its payload
 * in *rep, and the connection it came on in *used; or a negative code.
 */
static int
call_root(struct cell_client *c, uint32_t method, struct slice req,
    enum cell_retry retry, struct buf *rep, int32_t *status,
    struct rpc_client **used)
{
	int64_t deadline = rpc_now_ns() + c->deadline_ns;
	int wait = 0;
	char root[CELL_SERVER_MAX];
	int rc;

	for (;;) {
		struct rpc_client *rpc;
		bool sent = false;

		rc = cell_root_get(c, deadline, &rpc, root);
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
			cell_conn_drop(c, rpc);
			if (retry == CELL_RETRY_NONE)
				return rc == 0 ? BT_ENOTSERVING : rc;
			if (rc < 0 && sent && retry == CELL_RETRY_UNSENT)
				return cell_client_outcome_unknown(c, root, rc);
		}
		if ((rc = cell_client_backoff(c, deadline, &wait)) < 0)
			return rc;
	}
}

int
cell_reply_finish(struct cell_client *c, int32_t status,
    const struct buf *rep, const ProtobufCMessageDescriptor *reply_desc,
    ProtobufCMessage **reply)
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
	if ((rc = cell_request_pack(request, &req)) < 0)
		goto out;
	if ((rc = call_root(c, method, buf_slice(&req), retry, &rep,
	    &status, &used)) < 0)
		goto out;
	rc = cell_reply_finish(c, status, &rep, reply_desc, reply);
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
		if ((rc = call_root(c, method, request, CELL_RETRY_ANY,
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
				cell_conn_drop(c, rpc);
			*lost = true;
			rc = bt_error_set(-EIO, "cell %s: the connection to "
			    "the server that holds this load failed (%s)",
			    c->cell, bt_strerror(rc));
			goto out;
		}
		if (rc < 0)
			goto out;
	}
	rc = cell_reply_finish(c, status, &rep, reply_desc, reply);
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
