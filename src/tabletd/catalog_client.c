/*
 * catalog_client.c - the remote catalog's ops (catalog_client.h) over one
 * RPC connection to the root's server: each op packs its CatalogRequest,
 * sends it by the call's deadline and unpacks the reply into catalog.h's
 * structs, allocated as the local catalog allocates them
 * (catalog_client_pb.c).
 *
 * The connection is shared by every thread's calls and counted: one that
 * fails is taken out of use at once, and closed when its last call has
 * returned, so that a thread still waiting on it never meets a freed
 * client and a server that keeps failing leaves no connection behind.
 * Retargeting (catalog_client_retarget) takes the connection out of use
 * the same way: calls already on it finish there, later ones connect to
 * the new address.  The address is read under mu only; a call's error
 * names the address of the connection it used.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <protobuf-c/protobuf-c.h>

#include "rpc/rpc.h"
#include "rpc/rpc_pb.h"
#include "rpc/tabletfs.pb-c.h"
#include "tabletd/catalog_client.h"
#include "tabletd/catalog_client_int.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/mutex.h"

#define ADDRESS_MAX	256
#define M(name)		TABLETFS__METHOD__CATALOG_##name

/* One connection and the calls using it (refs, guarded by cc->mu). */
struct conn {
	struct rpc_client *rpc;
	unsigned refs;
	char address[ADDRESS_MAX];	/* where it goes (set once) */
};

struct catalog_client {
	char address[ADDRESS_MAX];	/* the root's server (mu) */
	char caller[CATALOG_SERVER_MAX + 1];
	uint8_t secret[RPC_SECRET_SIZE];
	bool has_secret;
	int64_t deadline_ns;
	struct mutex mu;
	struct conn *conn;	/* the one new calls use, or NULL (mu) */
};

/* Close a connection no call uses any more. */
static void
conn_free(struct conn *k)
{
	rpc_client_close(k->rpc);
	bt_free(k);
}

/*
 * The connection for a call, counted: the current one unless it failed,
 * else a new one made by deadline.  0 (*fresh: made now), or the
 * connect's error as catalog_client.h says.
 */
static int
conn_get(struct catalog_client *cc, int64_t deadline, struct conn **out,
    bool *fresh)
{
	struct conn *k;
	int rc = 0;

	mutex_lock(&cc->mu);
	*fresh = false;
	if ((k = cc->conn) != NULL && rpc_client_broken(k->rpc)) {
		cc->conn = NULL;
		if (k->refs == 0)
			conn_free(k);
	}
	/* Connecting under mu: calls that would connect too wait for this
	 * one, by their own deadlines. */
	if (cc->conn == NULL) {
		if ((k = bt_calloc(1, sizeof(*k))) == NULL) {
			rc = -ENOMEM;
			goto out;
		}
		if ((rc = rpc_client_open(cc->address, cc->has_secret ?
		    cc->secret : NULL, deadline, &k->rpc)) < 0) {
			bt_free(k);
			if (rc == -ETIMEDOUT || rc == -EACCES || rc == -ENOMEM)
				rc = bt_error_set(rc, "catalog at %s: %s",
				    cc->address, bt_error_detail());
			else
				rc = bt_error_set(-EIO, "catalog at %s: cannot "
				    "connect: %s", cc->address,
				    bt_error_detail());
			goto out;
		}
		memcpy(k->address, cc->address, sizeof(k->address));
		cc->conn = k;
		*fresh = true;
	}
	cc->conn->refs++;
	*out = cc->conn;
out:
	mutex_unlock(&cc->mu);
	return rc;
}

/* A call is done with k; failed: k is not to be used again. */
static void
conn_put(struct catalog_client *cc, struct conn *k, bool failed)
{
	mutex_lock(&cc->mu);
	if (failed && cc->conn == k)
		cc->conn = NULL;
	if (--k->refs == 0 && cc->conn != k)
		conn_free(k);
	mutex_unlock(&cc->mu);
}

/* The address new calls go to, copied into where (ADDRESS_MAX). */
static void
address_get(struct catalog_client *cc, char *where)
{
	mutex_lock(&cc->mu);
	memcpy(where, cc->address, ADDRESS_MAX);
	mutex_unlock(&cc->mu);
}

/*
 * One try of a call: 0 with the status in *status and the reply in rep;
 * or the connect's error, final (*connected false); or the call's
 * transport error (*sent as rpc.h says, *fresh: on a connection made by
 * this try).  where (ADDRESS_MAX) receives the address of the
 * connection used, once there is one.
 */
static int
call_once(struct catalog_client *cc, uint32_t method, struct slice req,
    int64_t deadline, struct buf *rep, int32_t *status, bool *connected,
    bool *sent, bool *fresh, char *where)
{
	struct conn *k = NULL;
	int rc;

	*sent = false;
	if ((rc = conn_get(cc, deadline, &k, fresh)) < 0) {
		*connected = false;
		return rc;
	}
	*connected = true;
	snprintf(where, ADDRESS_MAX, "%s", k->address);
	rep->n = 0;
	rc = rpc_client_call(k->rpc, method, req, deadline, rep, status,
	    sent);
	conn_put(cc, k, rc < 0 && rc != -ETIMEDOUT && rc != -ENOMEM &&
	    rc != -EMSGSIZE);
	return rc;
}

/*
 * Send request as method (named what) and unpack the reply as reply_desc
 * (NULL: Empty, nothing unpacked) into *reply (free with msg_free()).
 * change: a call that is not idempotent.  The result as
 * catalog_client.h says.
 */
static int
call(struct catalog_client *cc, uint32_t method, const char *what,
    const ProtobufCMessage *request, bool change,
    const ProtobufCMessageDescriptor *reply_desc, ProtobufCMessage **reply)
{
	int64_t deadline = rpc_now_ns() + cc->deadline_ns;
	size_t n = protobuf_c_message_get_packed_size(request);
	char where[ADDRESS_MAX] = "";
	struct buf req, rep;
	int32_t status = 0;
	bool connected, sent, fresh;
	int rc;

	bt_error_clear();
	buf_init(&req);
	buf_init(&rep);
	if ((rc = buf_reserve(&req, n + 1)) < 0)
		goto out;
	req.n = protobuf_c_message_pack(request, req.p);
	rc = call_once(cc, method, buf_slice(&req), deadline, &rep, &status,
	    &connected, &sent, &fresh, where);
	/* A connection an earlier call made may have been closed by the
	 * server since: once more on a new one, when that is safe. */
	if (rc < 0 && connected && rc != -ETIMEDOUT && rc != -ENOMEM &&
	    rc != -EMSGSIZE && !fresh && (!change || !sent) &&
	    rpc_now_ns() < deadline)
		rc = call_once(cc, method, buf_slice(&req), deadline, &rep,
		    &status, &connected, &sent, &fresh, where);
	if (rc < 0 && (!connected || rc == -ENOMEM))
		goto out;
	if (rc == -ETIMEDOUT) {
		rc = bt_error_set(rc, "catalog at %s: %s: no reply within "
		    "%lld ms%s", where, what,
		    (long long)(cc->deadline_ns / 1000000),
		    change && sent ? ": its outcome is unknown" : "");
		goto out;
	}
	if (rc < 0) {
		rc = bt_error_set(-EIO, "catalog at %s: %s: the connection "
		    "failed (%s)%s", where, what, bt_strerror(rc),
		    change && sent ? ": its outcome is unknown" : "");
		goto out;
	}
	if (status > 0) {
		rc = bt_error_set(-EPROTO, "catalog at %s: %s: positive status "
		    "%d", where, what, (int)status);
		goto out;
	}
	if (status < 0) {
		rc = rep.n > 0 ? bt_error_set(status, "%.*s", (int)rep.n,
		    (const char *)rep.p) : bt_error_set(status, "catalog at "
		    "%s: %s: %s", where, what, bt_strerror(status));
		goto out;
	}
	if (reply_desc != NULL && (*reply = protobuf_c_message_unpack(
	    reply_desc, &rpc_pb_allocator, rep.n, rep.p)) == NULL)
		rc = bt_error_set(-EPROTO, "catalog at %s: %s: the reply does "
		    "not decode", where, what);
out:
	buf_release(&req);
	buf_release(&rep);
	return rc;
}

static void
msg_free(void *m)
{
	if (m != NULL)
		protobuf_c_message_free_unpacked(m, &rpc_pb_allocator);
}

/* A reply that breaks catalog.h's limits (the converter's detail). */
static int
bad_reply(struct catalog_client *cc, const char *what, int rc)
{
	char where[ADDRESS_MAX];

	if (rc != -EPROTO)
		return rc;
	address_get(cc, where);
	return bt_error_set(rc, "catalog at %s: %s: bad reply: %s", where,
	    what, bt_error_detail());
}

/* CATALOG_TABLE_GET and CATALOG_TABLE_GET_BY_ID. */
static int
table_get(struct catalog_client *cc, const char *name, uint64_t id,
    struct catalog_table **out)
{
	Tabletfs__CatalogRequest req = TABLETFS__CATALOG_REQUEST__INIT;
	Tabletfs__CatalogTableReply *r = NULL;
	const char *what = name != NULL ? "table_get" : "table_get_by_id";
	int rc;

	req.caller = cc->caller;
	req.name = (char *)name;
	req.has_id = name == NULL;
	req.id = id;
	if ((rc = call(cc, name != NULL ? M(TABLE_GET) : M(TABLE_GET_BY_ID),
	    what, &req.base, false,
	    &tabletfs__catalog_table_reply__descriptor,
	    (ProtobufCMessage **)&r)) < 0)
		return rc;
	if (!r->found)
		rc = BT_NOTFOUND;
	else
		rc = bad_reply(cc, what, catalog_client_table_in(r->table,
		    out));
	msg_free(r);
	return rc;
}

static int
op_table_get(void *arg, const char *name, struct catalog_table **out)
{
	return table_get(arg, name, 0, out);
}

static int
op_table_get_by_id(void *arg, uint64_t id, struct catalog_table **out)
{
	return table_get(arg, NULL, id, out);
}

/* The request most calls send: caller, and id when has_id. */
static Tabletfs__CatalogRequest
request(struct catalog_client *cc, bool has_id, uint64_t id)
{
	Tabletfs__CatalogRequest req = TABLETFS__CATALOG_REQUEST__INIT;

	req.caller = cc->caller;
	req.has_id = has_id;
	req.id = id;
	return req;
}

static int
op_table_list(void *arg, char ***namesp, size_t *countp)
{
	struct catalog_client *cc = arg;
	Tabletfs__CatalogRequest req = request(cc, false, 0);
	Tabletfs__TableListReply *r = NULL;
	int rc;

	if ((rc = call(cc, M(TABLE_LIST), "table_list", &req.base, false,
	    &tabletfs__table_list_reply__descriptor,
	    (ProtobufCMessage **)&r)) < 0)
		return rc;
	rc = catalog_client_names_in(r, namesp, countp);
	msg_free(r);
	return rc;
}

static int
op_tablets_list(void *arg, uint64_t table_id, struct catalog_tablet **out,
    size_t *count)
{
	struct catalog_client *cc = arg;
	Tabletfs__CatalogRequest req = request(cc, true, table_id);
	Tabletfs__CatalogTabletsReply *r = NULL;
	int rc;

	if ((rc = call(cc, M(TABLETS_LIST), "tablets_list", &req.base, false,
	    &tabletfs__catalog_tablets_reply__descriptor,
	    (ProtobufCMessage **)&r)) < 0)
		return rc;
	if (!r->found) {
		rc = BT_NOTFOUND;
		goto out;
	}
	rc = catalog_client_tablets_in(r, out, count);
out:
	msg_free(r);
	return rc;
}

static int
op_files_list(void *arg, uint64_t tablet_id, struct catalog_file **out,
    size_t *count)
{
	struct catalog_client *cc = arg;
	Tabletfs__CatalogRequest req = request(cc, true, tablet_id);
	Tabletfs__CatalogFilesReply *r = NULL;
	int rc;

	if ((rc = call(cc, M(FILES_LIST), "files_list", &req.base, false,
	    &tabletfs__catalog_files_reply__descriptor,
	    (ProtobufCMessage **)&r)) < 0)
		return rc;
	if (!r->found) {
		rc = BT_NOTFOUND;
		goto out;
	}
	rc = bad_reply(cc, "files_list", catalog_client_files_in(r, out,
	    count));
out:
	msg_free(r);
	return rc;
}

static int
op_next_number(void *arg, uint64_t *number)
{
	struct catalog_client *cc = arg;
	Tabletfs__CatalogRequest req = request(cc, false, 0);
	Tabletfs__CatalogNumberReply *r = NULL;
	int rc;

	if ((rc = call(cc, M(NEXT_NUMBER), "next_number", &req.base, true,
	    &tabletfs__catalog_number_reply__descriptor,
	    (ProtobufCMessage **)&r)) < 0)
		return rc;
	if (!r->has_number || r->number == 0)
		rc = bad_reply(cc, "next_number", bt_error_set(-EPROTO,
		    "no number"));
	else
		*number = r->number;
	msg_free(r);
	return rc;
}

static int
op_tablet_apply(void *arg, uint64_t tablet_id,
    const struct catalog_file *added, size_t added_count,
    const uint64_t *removed, size_t removed_count, uint64_t flushed_seq)
{
	struct catalog_client *cc = arg;
	Tabletfs__CatalogApplyRequest req =
	    TABLETFS__CATALOG_APPLY_REQUEST__INIT;
	Tabletfs__CatalogFile *fs, **fp;
	int rc = -ENOMEM;

	fs = bt_calloc(added_count + 1, sizeof(*fs));
	fp = bt_calloc(added_count + 1, sizeof(*fp));
	if (fs == NULL || fp == NULL)
		goto out;
	for (size_t i = 0; i < added_count; i++) {
		tabletfs__catalog_file__init(&fs[i]);
		fs[i].has_number = fs[i].has_tablet_id = true;
		fs[i].has_size = fs[i].has_entry_count = true;
		fs[i].has_max_seq = true;
		fs[i].number = added[i].number;
		fs[i].tablet_id = tablet_id;
		fs[i].group = (char *)added[i].group;
		fs[i].size = added[i].size;
		fs[i].entry_count = added[i].entry_count;
		fs[i].max_seq = added[i].max_seq;
		fp[i] = &fs[i];
	}
	req.caller = cc->caller;
	req.has_tablet_id = req.has_flushed_seq = true;
	req.tablet_id = tablet_id;
	req.flushed_seq = flushed_seq;
	req.n_added = added_count;
	req.added = fp;
	req.n_removed = removed_count;
	req.removed = (uint64_t *)removed;
	rc = call(cc, M(TABLET_APPLY), "tablet_apply", &req.base, true, NULL,
	    NULL);
out:
	bt_free(fs);
	bt_free(fp);
	return rc;
}

static int
op_file_is_live(void *arg, uint64_t number)
{
	struct catalog_client *cc = arg;
	Tabletfs__CatalogRequest req = request(cc, true, number);
	Tabletfs__CatalogLiveReply *r = NULL;
	int rc;

	if ((rc = call(cc, M(FILE_IS_LIVE), "file_is_live", &req.base, false,
	    &tabletfs__catalog_live_reply__descriptor,
	    (ProtobufCMessage **)&r)) < 0)
		return rc;
	if (!r->has_live)
		rc = bad_reply(cc, "file_is_live", bt_error_set(-EPROTO,
		    "no answer"));
	else
		rc = r->live ? 1 : 0;
	msg_free(r);
	return rc;
}

static int
op_schema_version(void *arg, uint64_t *version)
{
	struct catalog_client *cc = arg;
	Tabletfs__CatalogRequest req = request(cc, false, 0);
	Tabletfs__CatalogVersionReply *r = NULL;
	int rc;

	if ((rc = call(cc, M(SCHEMA_VERSION), "schema_version", &req.base,
	    false, &tabletfs__catalog_version_reply__descriptor,
	    (ProtobufCMessage **)&r)) < 0)
		return rc;
	if (!r->has_version)
		rc = bad_reply(cc, "schema_version", bt_error_set(-EPROTO,
		    "no version"));
	else
		*version = r->version;
	msg_free(r);
	return rc;
}

/* What CATALOG_TABLET_REPLACE sends: specs and their files, each
 * spec's files in its own slice of one array (free with replace_free). */
struct replace_out {
	Tabletfs__CatalogTabletSpec *specs, **sp;
	Tabletfs__CatalogFile *files, **fp;
};

static void
replace_free(struct replace_out *o)
{
	bt_free(o->specs);
	bt_free(o->sp);
	bt_free(o->files);
	bt_free(o->fp);
}

static int
replace_out_make(const struct catalog_tablet_spec *specs, size_t count,
    struct replace_out *o)
{
	size_t total = 0, k = 0;

	for (size_t i = 0; i < count; i++)
		total += specs[i].file_count;
	o->specs = bt_calloc(count + 1, sizeof(*o->specs));
	o->sp = bt_calloc(count + 1, sizeof(*o->sp));
	o->files = bt_calloc(total + 1, sizeof(*o->files));
	o->fp = bt_calloc(total + 1, sizeof(*o->fp));
	if (o->specs == NULL || o->sp == NULL || o->files == NULL ||
	    o->fp == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < count; i++) {
		const struct catalog_tablet_spec *sp = &specs[i];
		Tabletfs__CatalogTabletSpec *t = &o->specs[i];

		tabletfs__catalog_tablet_spec__init(t);
		t->has_start = t->has_end = true;
		t->has_flushed_seq = t->has_auto_split = true;
		t->start = (ProtobufCBinaryData){ sp->start.n,
		    (uint8_t *)sp->start.p };
		t->end = (ProtobufCBinaryData){ sp->end.n,
		    (uint8_t *)sp->end.p };
		t->flushed_seq = sp->flushed_seq;
		t->auto_split = sp->auto_split;
		t->n_files = sp->file_count;
		t->files = &o->fp[k];
		for (size_t j = 0; j < sp->file_count; j++, k++) {
			const struct catalog_file *f = &sp->files[j];
			Tabletfs__CatalogFile *pf = &o->files[k];

			tabletfs__catalog_file__init(pf);
			pf->has_number = pf->has_size = true;
			pf->has_entry_count = pf->has_max_seq = true;
			pf->number = f->number;
			pf->group = (char *)f->group;
			pf->size = f->size;
			pf->entry_count = f->entry_count;
			pf->max_seq = f->max_seq;
			o->fp[k] = pf;
		}
		o->sp[i] = t;
	}
	return 0;
}

static int
op_tablet_replace(void *arg, const uint64_t *old_ids, size_t old_count,
    const struct catalog_tablet_spec *specs, size_t count,
    uint64_t *new_ids)
{
	struct catalog_client *cc = arg;
	Tabletfs__CatalogReplaceRequest req =
	    TABLETFS__CATALOG_REPLACE_REQUEST__INIT;
	Tabletfs__CatalogReplaceReply *r = NULL;
	struct replace_out o = { 0 };
	int rc;

	if ((rc = replace_out_make(specs, count, &o)) < 0)
		goto out;
	req.caller = cc->caller;
	req.n_old_ids = old_count;
	req.old_ids = (uint64_t *)old_ids;
	req.n_specs = count;
	req.specs = o.sp;
	if ((rc = call(cc, M(TABLET_REPLACE), "tablet_replace", &req.base,
	    true, &tabletfs__catalog_replace_reply__descriptor,
	    (ProtobufCMessage **)&r)) < 0)
		goto out;
	/* Committed: a reply without the ids is still a replacement made. */
	if (r->n_new_ids != count)
		rc = bad_reply(cc, "tablet_replace", bt_error_set(-EPROTO,
		    "%zu new ids for %zu tablets: its outcome is known, "
		    "its ids are not", r->n_new_ids, count));
	else if (new_ids != NULL)
		memcpy(new_ids, r->new_ids, count * sizeof(*new_ids));
	msg_free(r);
out:
	replace_free(&o);
	return rc;
}

/* catalog_close(): no call is running. */
static void
op_close(void *arg)
{
	struct catalog_client *cc = arg;

	if (cc->conn != NULL) {
		assert(cc->conn->refs == 0);
		conn_free(cc->conn);
	}
	mutex_destroy(&cc->mu);
	explicit_bzero(cc->secret, sizeof(cc->secret));
	bt_free(cc);
}

static const struct catalog_remote_ops client_ops = {
	.table_get = op_table_get,
	.table_get_by_id = op_table_get_by_id,
	.table_list = op_table_list,
	.tablets_list = op_tablets_list,
	.files_list = op_files_list,
	.next_number = op_next_number,
	.tablet_apply = op_tablet_apply,
	.file_is_live = op_file_is_live,
	.schema_version = op_schema_version,
	.tablet_replace = op_tablet_replace,
	.close = op_close,
};

int
catalog_client_open(const struct catalog_client_options *o,
    struct catalog **out)
{
	struct catalog_client *cc;
	int rc;

	if (o == NULL || o->address == NULL || o->address[0] == '\0' ||
	    strlen(o->address) >= ADDRESS_MAX || o->caller == NULL ||
	    o->caller[0] == '\0' || strlen(o->caller) > CATALOG_SERVER_MAX)
		return bt_error_set(-EINVAL, "catalog client: no address, or "
		    "no caller or one over %d bytes", CATALOG_SERVER_MAX);
	if ((cc = bt_calloc(1, sizeof(*cc))) == NULL)
		return -ENOMEM;
	snprintf(cc->address, sizeof(cc->address), "%s", o->address);
	snprintf(cc->caller, sizeof(cc->caller), "%s", o->caller);
	if (o->secret != NULL) {
		memcpy(cc->secret, o->secret, sizeof(cc->secret));
		cc->has_secret = true;
	}
	cc->deadline_ns = (int64_t)(o->deadline_ms ? o->deadline_ms :
	    CATALOG_CLIENT_DEADLINE_MS) * 1000000;
	if ((rc = mutex_init(&cc->mu)) < 0)
		goto out_free;
	if ((rc = catalog_open_remote(&client_ops, cc, out)) < 0)
		goto out_mutex;
	return 0;
out_mutex:
	mutex_destroy(&cc->mu);
out_free:
	bt_free(cc);
	return rc;
}

int
catalog_client_retarget(struct catalog *c, const char *address)
{
	struct catalog_client *cc = catalog_remote_arg(c, op_close);
	struct conn *k;

	if (cc == NULL)
		return bt_error_set(-EINVAL, "catalog client: retarget: not a "
		    "catalog client's handle");
	if (address == NULL || address[0] == '\0' ||
	    strlen(address) >= ADDRESS_MAX)
		return bt_error_set(-EINVAL, "catalog client: retarget: no "
		    "address, or one over %d bytes", ADDRESS_MAX - 1);
	mutex_lock(&cc->mu);
	if (strcmp(cc->address, address) == 0) {
		mutex_unlock(&cc->mu);
		return 0;	/* the same root: keep its connection */
	}
	snprintf(cc->address, sizeof(cc->address), "%s", address);
	/* Out of use, as a failed one: freed now or by its last call. */
	if ((k = cc->conn) != NULL) {
		cc->conn = NULL;
		if (k->refs == 0)
			conn_free(k);
	}
	mutex_unlock(&cc->mu);
	return 0;
}
