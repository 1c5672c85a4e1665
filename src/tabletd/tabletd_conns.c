/*
 * tabletd_conns.c - the master's calls to servers (tabletd.h,
 * tabletd_call() and struct tabletd_conns): one call over a connection
 * of its own, or over a connection kept per server address for the
 * master's term, so that an assignment round does not pay a TCP connect
 * and the secret's handshake for each LOAD, UNLOAD, RECOVER and catalog
 * call.
 *
 * A kept connection is closed when its server leaves the live set or
 * comes back under another name (it restarted: the connection is to
 * the old process), and when a call on it fails in transport (a reply
 * that does not come, a connection that broke): the next call opens a
 * new one.  A call holds a reference to its connection, so that one
 * thread's failure does not free a connection another thread is using
 * (the round's recoveries run a thread per server, each calling the
 * root's server too).
 *
 * The master learns that a server is gone from ZooKeeper, not from the
 * server: a stopped (or cut off) server keeps its connections open and
 * never answers.  tabletd_conns_abandon() then aborts every call waiting
 * on it, kept connection or one of a call's own, so that a round is not
 * held for a call's whole deadline (a SERVE's is two minutes) by a
 * server whose tablets it should be giving to others.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rpc/rpc.h"
#include "tabletd/tabletd.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/mutex.h"

struct tabletd_conn {
	struct tabletd_conn *next;
	char address[256];
	char name[300];		/* the server's when opened ("": unknown) */
	struct rpc_client *rpc;
	unsigned refs;		/* the list's while listed, and each call's */
};

/* A live server's address and name, as the latest round saw it. */
struct conns_name {
	char address[256];
	char name[300];
};

struct tabletd_conns {
	uint8_t secret[RPC_SECRET_SIZE];
	struct mutex mu;
	struct tabletd_conn *list;		/* guarded by mu */
	struct tabletd_conn *own;	/* each a call's own; guarded by mu */
	struct conns_name *names;		/* guarded by mu */
	size_t name_count;
};

/*
 * Send request on rpc (to address) by deadline: 0 with *reply unpacked
 * as reply_desc, the server's status with its message as the detail, or
 * the transport's error, *lost saying which (the connection is then
 * not to be used again).
 */
static int
call_on(struct rpc_client *rpc, const char *address, uint32_t method,
    const ProtobufCMessage *request, int64_t deadline,
    const ProtobufCMessageDescriptor *reply_desc, ProtobufCMessage **reply,
    bool *lost)
{
	struct buf payload, out;
	int32_t status = 0;
	bool sent;
	int rc;

	*lost = false;
	buf_init(&payload);
	buf_init(&out);
	if ((rc = buf_reserve(&payload,
	    protobuf_c_message_get_packed_size(request))) < 0)
		goto out;
	payload.n = protobuf_c_message_pack(request, payload.p);
	rc = rpc_client_call(rpc, method, buf_slice(&payload), deadline, &out,
	    &status, &sent);
	if (rc < 0) {
		*lost = rc != -ENOMEM;
		goto out;
	}
	if (status != 0) {
		rc = bt_error_set(status, "%s: %.*s", address, (int)out.n,
		    out.n > 0 ? (const char *)out.p : bt_strerror(status));
		goto out;
	}
	if (reply_desc != NULL) {
		*reply = protobuf_c_message_unpack(reply_desc, NULL, out.n,
		    out.p);
		if (*reply == NULL)
			rc = bt_error_set(-EPROTO, "%s: a reply that does "
			    "not decode", address);
	}
out:
	buf_release(&payload);
	buf_release(&out);
	return rc;
}

int
tabletd_call(const char *address, const uint8_t *secret, uint32_t method,
    const ProtobufCMessage *request, int64_t connect_deadline,
    int64_t deadline, const ProtobufCMessageDescriptor *reply_desc,
    ProtobufCMessage **reply)
{
	struct rpc_client *rpc;
	bool lost;
	int rc;

	if ((rc = rpc_client_open(address, secret, connect_deadline,
	    &rpc)) < 0)
		return rc;
	rc = call_on(rpc, address, method, request, deadline, reply_desc,
	    reply, &lost);
	rpc_client_close(rpc);
	return rc;
}

/* Whether address is among addresses[0..count). */
static bool
address_listed(char *const *addresses, size_t count, const char *address)
{
	for (size_t i = 0; i < count; i++)
		if (strcmp(addresses[i], address) == 0)
			return true;
	return false;
}

int
tabletd_conns_new(const uint8_t *secret, struct tabletd_conns **out)
{
	struct tabletd_conns *c;
	int rc;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		return -ENOMEM;
	if ((rc = mutex_init(&c->mu)) < 0) {
		free(c);
		return rc;
	}
	memcpy(c->secret, secret, sizeof(c->secret));
	*out = c;
	return 0;
}

/* Drop one reference to conn, closing it with the last.  Caller holds
 * c->mu; a connection to close is returned for the caller to close
 * once it has let go of mu (the close waits for calls to return). */
static struct tabletd_conn *
conn_unref_locked(struct tabletd_conns *c, struct tabletd_conn *conn)
{
	mutex_assert_held(&c->mu);
	return --conn->refs == 0 ? conn : NULL;
}

static void
conn_close(struct tabletd_conn *conn)
{
	if (conn == NULL)
		return;
	rpc_client_close(conn->rpc);
	free(conn);
}

/* Take conn off the list, if it still is on it.  Caller holds c->mu;
 * the connection to close, if that was the last reference. */
static struct tabletd_conn *
conn_unlist_locked(struct tabletd_conns *c, struct tabletd_conn *conn)
{
	for (struct tabletd_conn **p = &c->list; *p != NULL;
	    p = &(*p)->next)
		if (*p == conn) {
			*p = conn->next;
			conn->next = NULL;
			return conn_unref_locked(c, conn);
		}
	return NULL;
}

/* Take conn off the list onto *closing, to be closed by closing_close()
 * once mu is let go, if that was its last reference.  Caller holds mu. */
static void
conn_unlist_onto_locked(struct tabletd_conns *c, struct tabletd_conn *conn,
    struct tabletd_conn **closing)
{
	struct tabletd_conn *done = conn_unlist_locked(c, conn);

	if (done != NULL) {
		done->next = *closing;
		*closing = done;
	}
}

static void
closing_close(struct tabletd_conn *closing)
{
	struct tabletd_conn *next;

	for (; closing != NULL; closing = next) {
		next = closing->next;
		conn_close(closing);
	}
}

void
tabletd_conns_free(struct tabletd_conns *c)
{
	if (c == NULL)
		return;
	closing_close(c->list);
	free(c->names);
	mutex_destroy(&c->mu);
	explicit_bzero(c->secret, sizeof(c->secret));
	free(c);
}

static const char *
name_of_locked(const struct tabletd_conns *c, const char *address)
{
	for (size_t i = 0; i < c->name_count; i++)
		if (strcmp(c->names[i].address, address) == 0)
			return c->names[i].name;
	return "";
}

int
tabletd_conns_retain(struct tabletd_conns *c,
    const struct tabletd_live *live, size_t count)
{
	struct conns_name *names;
	struct tabletd_conn *closing = NULL, *next;

	if ((names = calloc(count + 1, sizeof(*names))) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < count; i++) {
		snprintf(names[i].address, sizeof(names[i].address), "%s",
		    live[i].address);
		snprintf(names[i].name, sizeof(names[i].name), "%s",
		    live[i].name);
	}
	mutex_lock(&c->mu);
	free(c->names);
	c->names = names;
	c->name_count = count;
	for (struct tabletd_conn *conn = c->list; conn != NULL; conn = next) {
		const char *name = name_of_locked(c, conn->address);

		next = conn->next;
		if (*name == '\0' || strcmp(name, conn->name) != 0)
			conn_unlist_onto_locked(c, conn, &closing);
	}
	mutex_unlock(&c->mu);
	closing_close(closing);
	return 0;
}

/* A reference to the kept connection to address, opened by
 * connect_deadline when there is none: 0 or rpc_client_open()'s error. */
static int
conn_get(struct tabletd_conns *c, const char *address,
    int64_t connect_deadline, struct tabletd_conn **out)
{
	struct tabletd_conn *conn, *fresh;
	struct rpc_client *rpc;
	int rc;

	mutex_lock(&c->mu);
	for (conn = c->list; conn != NULL; conn = conn->next)
		if (strcmp(conn->address, address) == 0) {
			conn->refs++;
			mutex_unlock(&c->mu);
			*out = conn;
			return 0;
		}
	mutex_unlock(&c->mu);
	/* Opened without the lock: a server slow to answer its handshake
	 * holds up only the calls to it. */
	if ((rc = rpc_client_open(address, c->secret, connect_deadline,
	    &rpc)) < 0)
		return rc;
	if ((fresh = calloc(1, sizeof(*fresh))) == NULL) {
		rpc_client_close(rpc);
		return -ENOMEM;
	}
	snprintf(fresh->address, sizeof(fresh->address), "%s", address);
	fresh->rpc = rpc;
	mutex_lock(&c->mu);
	for (conn = c->list; conn != NULL; conn = conn->next)
		if (strcmp(conn->address, address) == 0)
			break;
	if (conn != NULL) {		/* another thread's, meanwhile */
		conn->refs++;
		mutex_unlock(&c->mu);
		conn_close(fresh);
		*out = conn;
		return 0;
	}
	snprintf(fresh->name, sizeof(fresh->name), "%s",
	    name_of_locked(c, address));
	fresh->refs = 2;
	fresh->next = c->list;
	c->list = fresh;
	mutex_unlock(&c->mu);
	*out = fresh;
	return 0;
}

int
tabletd_conns_call(struct tabletd_conns *c, const char *address,
    uint32_t method, const ProtobufCMessage *request,
    int64_t connect_deadline, int64_t deadline,
    const ProtobufCMessageDescriptor *reply_desc, ProtobufCMessage **reply)
{
	struct tabletd_conn *conn, *done, *last = NULL;
	bool lost;
	int rc;

	if ((rc = conn_get(c, address, connect_deadline, &conn)) < 0)
		return rc;
	rc = call_on(conn->rpc, address, method, request, deadline,
	    reply_desc, reply, &lost);
	mutex_lock(&c->mu);
	if (lost)
		last = conn_unlist_locked(c, conn);
	assert(last == NULL);	/* this call still holds a reference */
	(void)last;
	done = conn_unref_locked(c, conn);
	mutex_unlock(&c->mu);
	conn_close(done);
	return rc;
}

int
tabletd_conns_call_own(struct tabletd_conns *c, const char *address,
    uint32_t method, const ProtobufCMessage *request,
    int64_t connect_deadline, int64_t deadline,
    const ProtobufCMessageDescriptor *reply_desc, ProtobufCMessage **reply)
{
	struct tabletd_conn *conn;
	bool lost;
	int rc;

	if ((conn = calloc(1, sizeof(*conn))) == NULL)
		return -ENOMEM;
	if ((rc = rpc_client_open(address, c->secret, connect_deadline,
	    &conn->rpc)) < 0) {
		free(conn);
		return rc;
	}
	snprintf(conn->address, sizeof(conn->address), "%s", address);
	mutex_lock(&c->mu);
	conn->next = c->own;
	c->own = conn;
	mutex_unlock(&c->mu);
	rc = call_on(conn->rpc, address, method, request, deadline,
	    reply_desc, reply, &lost);
	mutex_lock(&c->mu);
	for (struct tabletd_conn **p = &c->own; *p != NULL; p = &(*p)->next)
		if (*p == conn) {
			*p = conn->next;
			break;
		}
	mutex_unlock(&c->mu);
	conn_close(conn);
	return rc;
}

size_t
tabletd_conns_abandon(struct tabletd_conns *c, char *const *addresses,
    size_t count)
{
	struct tabletd_conn *closing = NULL, *next;
	size_t aborted = 0;

	mutex_lock(&c->mu);
	for (struct tabletd_conn *conn = c->own; conn != NULL;
	    conn = conn->next)
		if (!address_listed(addresses, count, conn->address)) {
			rpc_client_abort(conn->rpc);
			aborted++;
		}
	for (struct tabletd_conn *conn = c->list; conn != NULL; conn = next) {
		next = conn->next;
		if (address_listed(addresses, count, conn->address))
			continue;
		rpc_client_abort(conn->rpc);
		aborted++;
		conn_unlist_onto_locked(c, conn, &closing);
	}
	mutex_unlock(&c->mu);
	closing_close(closing);
	return aborted;
}
