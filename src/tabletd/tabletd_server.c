/*
 * tabletd_server.c - tabletd server CELL: a tablet server of a cell.
 *
 * It listens for RPC, registers itself in ZooKeeper under its address
 * (an ephemeral node: its session is its lease), and waits for the
 * master's SERVE, which names the cell's storage and the root's server.
 * In a directory cell it then opens the storage as one server among
 * several (api_store_open_cell(): no tablet served, its own log in
 * servers/HOST_PORT.EPOCH/), with the catalog opened here (the root's
 * server, which takes the store's lock) or reached at the root's server
 * over RPC (catalog_client.h), and serves the tablets the master gives
 * it with LOAD and RECOVER, and lets go of those it takes away with
 * UNLOAD.  A cell on RADOS storage is served whole by the root's server
 * (the store's lock taken, its log replayed).  It answers every call of
 * tabletfs.proto on what it opened (service.h); until then, and for the
 * tablets it does not serve, it answers BT_ENOTSERVING.
 *
 * Fencing: the store's lock is held by one process at a time, so a
 * root's server that the master gave up for dead cannot be replaced
 * while it still runs: the new one's open fails until it is gone.  Any
 * other server is fenced by the catalog, which refuses its flushes and
 * compactions once its tablets are assigned to another name.  A server
 * whose lease ends (coord.h: on its own clock, before ZooKeeper can
 * expire its session) refuses every call from then on and exits at once,
 * without flushing, which lets go of the lock; what it acknowledged is in
 * its commit log, which the servers taking its tablets replay.  A call
 * that ends after the lease did is not acknowledged (-EIO, outcome
 * unknown): its tablets may have been recovered from the log already.
 *
 * On RADOS storage a lock outlives its holder, so the master fences
 * (tabletd_master.c): it blocklists the holder's RADOS client and breaks
 * its lock.  The fenced server's next storage call fails with
 * -ESHUTDOWN, so it cannot commit, hence cannot acknowledge, anything
 * more, and it exits at once (TABLETD_EXIT_FENCED) from that call; one
 * whose lease ends first asks the storage before it exits, so that its
 * log says whether it was fenced.
 *
 * A store that refuses writes until it is reopened (bt_stats'
 * writes_refused: a commit-log write or sync failed and could not be
 * undone, as when the storage times out, docs/rados.md) is given up:
 * the server exits (TABLETD_EXIT_STORAGE) without flushing, as at the
 * end of its lease, so that the master gives the store to another
 * server, whose open replays the log.  Nothing it refused was
 * acknowledged, and everything acknowledged is in the log.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api/api_server.h"
#include "api/tabletfs.h"
#include "catalog/catalog.h"
#include "coord/coord.h"
#include "rpc/rpc.h"
#include "rpc/tabletfs.pb-c.h"
#include "server/server.h"
#include "tabletd/catalog_client.h"
#include "tabletd/service.h"
#include "tabletd/tabletd.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/env.h"
#include "util/error.h"
#include "util/mutex.h"
#include "util/storage.h"

struct tablet_server {
	struct coord *coord;
	struct rpc_server *rpc;
	struct mutex mu;	/* serializes SERVE and the tablet calls */
	/*
	 * What it serves: set by SERVE, replaced when this server becomes
	 * the root's.  Each call on the store holds the lock shared; a
	 * change holds it exclusively.
	 */
	pthread_rwlock_t serving;
	struct bt_store *store;
	struct service *service;
	struct catalog *catalog;	/* the remote catalog (owned by store),
					   NULL at the root's server */
	char storage[PATH_MAX];
	uint64_t epoch;
	char name[CATALOG_SERVER_MAX + 1];	/* "HOST:PORT#EPOCH" */
	/* The cell's storage and secret, read at start. */
	char cell_storage[PATH_MAX];
	struct storage st;
	uint8_t secret[RPC_SECRET_SIZE];
	/* The RADOS client the store was opened with, once it is. */
	struct env *_Atomic rados_env;
	atomic_bool closing;	/* the session is being closed on purpose */
	/* What its tablets cost, sampled by the main loop, reported in
	 * every SERVE reply (tabletd_load.c). */
	struct tabletd_load_window load;
};

/* The storage's fenced callback (env_rados_on_fenced). */
static void
fenced(void *arg)
{
	struct tablet_server *ts = arg;

	tabletd_log("fenced: the cluster blocklisted this server's RADOS "
	    "client (%s); another server serves %s; exiting",
	    bt_error_detail(), ts->cell_storage);
	_exit(TABLETD_EXIT_FENCED);
}

static void
lease_lost(void *arg)
{
	struct tablet_server *ts = arg;
	struct env *env = atomic_load(&ts->rados_env);
	char lock[PATH_MAX + 8];
	uint64_t size;

	if (atomic_load(&ts->closing))
		return;
	tabletd_log("lease lost: no longer serving; exiting");
	/* One read, which exits through fenced() if the master has fenced
	 * this server meanwhile; at most the op timeout if the cluster
	 * does not answer (the lease refuses every call meanwhile). */
	if (env != NULL) {
		snprintf(lock, sizeof(lock), "%s/" STORAGE_LOCK_FILE,
		    ts->st.path);
		(void)env_path_size(env, lock, &size);
	}
	_exit(TABLETD_EXIT_LEASE);
}

/* How often the main loop asks the store whether it refuses writes. */
#define STORE_CHECK_MS	500
/* How often the load of the tablets served is sampled. */
#define LOAD_SAMPLE_MS	1000

/* Exit (TABLETD_EXIT_STORAGE) if the store served refuses writes until
 * it is reopened; see the top of this file. */
static void
store_check(struct tablet_server *ts)
{
	struct bt_stats st;

	pthread_rwlock_rdlock(&ts->serving);
	if (ts->store == NULL) {
		pthread_rwlock_unlock(&ts->serving);
		return;
	}
	bt_store_get_stats(ts->store, &st);
	pthread_rwlock_unlock(&ts->serving);
	if (st.writes_refused >= 0)
		return;
	tabletd_log("the store refuses writes until it is reopened (%s): "
	    "giving %s up to another server; exiting",
	    bt_strerror(st.writes_refused), ts->cell_storage);
	_exit(TABLETD_EXIT_STORAGE);
}

static int
reply_error(struct buf *reply, int rc, const char *what)
{
	reply->n = 0;
	(void)buf_append(reply, what, strlen(what));
	return rc;
}

/* The reply of a failed SERVE: what failed and why. */
static int
reply_failed(struct buf *reply, int rc, const char *storage)
{
	char line[PATH_MAX + 128];

	snprintf(line, sizeof(line), "SERVE: %s: %s", storage,
	    *bt_error_detail() ? bt_error_detail() : bt_strerror(rc));
	return reply_error(reply, rc, line);
}

static int
reply_name(struct tablet_server *ts, struct buf *reply)
{
	Tabletfs__ServeReply out = TABLETFS__SERVE_REPLY__INIT;
	int rc;

	out.name = ts->name;
	/* Without memory for the loads, the name alone: the master then
	 * waits for them. */
	(void)tabletd_load_window_report(&ts->load, &out);
	reply->n = 0;
	if ((rc = buf_reserve(reply,
	    tabletfs__serve_reply__get_packed_size(&out))) == 0)
		reply->n = tabletfs__serve_reply__pack(&out, reply->p);
	tabletd_load_report_free(&out);
	return rc;
}

/* Sample the load of the tablets served (tabletd_load.c), about once a
 * second, from the main loop. */
static void
load_sample(struct tablet_server *ts)
{
	struct server_tablet_load *list = NULL;
	struct server *s;
	size_t count = 0;
	int rc = 0;

	pthread_rwlock_rdlock(&ts->serving);
	if (ts->store != NULL && (s = api_store_server(ts->store)) != NULL)
		rc = server_tablets_load(s, &list, &count);
	pthread_rwlock_unlock(&ts->serving);
	if (rc == 0)
		(void)tabletd_load_window_sample(&ts->load, list, count,
		    rpc_now_ns());	/* no memory: the next second's */
	bt_free(list);
}

/*
 * The whole store, as a cell on RADOS storage is served (by one server
 * at a time, fenced by blocklisting): its lock taken, its log replayed,
 * every tablet served.
 */
static int
serve_store(struct tablet_server *ts, uint64_t epoch, struct bt_store **store)
{
	struct bt_options opts;
	struct env *env = NULL;
	char client[256] = "";
	int rc;

	/* A RADOS client of its own, connected now: its OSD map is at
	 * least as new as any fencing the master did before this SERVE
	 * (tabletd_master.c). */
	memset(&opts, 0, sizeof(opts));
	if ((rc = storage_env_new(&ts->st, &env)) < 0)
		return rc;
	env_rados_on_fenced(env, fenced, ts);
	(void)env_rados_client(env, client, sizeof(client));
	opts.env = env;
	if ((rc = bt_store_open(ts->st.path, &opts, store)) < 0) {
		env_free(env);
		return rc;
	}
	atomic_store(&ts->rados_env, env);
	tabletd_log("serving %s (epoch %" PRIu64 ") as RADOS %s",
	    ts->cell_storage, epoch, client);
	return 0;
}

/*
 * This server's share of a directory cell (docs/design.md section 5,
 * "Tablets one by one"): the storage opened with no tablet served and
 * its own log in servers/NAME.EPOCH/; the root's server (root "") opens
 * the catalog itself, taking the store's lock, every other server
 * reaches it at root.
 */
static int
serve_tablets(struct tablet_server *ts, const char *root, uint64_t epoch,
    const char *name, struct bt_store **store, struct catalog **catalog)
{
	struct catalog_client_options co = {
		.address = root,
		.secret = ts->secret,
		.caller = name,
	};
	struct api_cell_server cell = { .name = name };
	struct bt_options opts;
	char dir[PATH_MAX];
	int rc;

	tabletd_server_dir(rpc_server_address(ts->rpc), epoch, dir,
	    sizeof(dir));
	cell.dir = dir;
	*catalog = NULL;
	if (root[0] != '\0' &&
	    (rc = catalog_client_open(&co, &cell.catalog)) < 0)
		return rc;
	memset(&opts, 0, sizeof(opts));
	if ((rc = api_store_open_cell(ts->st.path, &opts, &cell, store)) < 0)
		return rc;
	*catalog = cell.catalog;
	if (root[0] == '\0')
		tabletd_log("serving %s as %s, the root's server",
		    ts->cell_storage, name);
	else
		tabletd_log("serving %s as %s, the catalog at %s",
		    ts->cell_storage, name, root);
	return 0;
}

/*
 * SERVE: serve the cell's storage, once; a later SERVE is answered at
 * once with this server's name, and points the catalog calls at a new
 * root (a server that is told to be the root itself closes what it
 * serves and opens the catalog under a new name: its tablets are then
 * another name's, which the master gives out again).  Only the cell's
 * own storage (its settings in ZooKeeper, which tabletctl init wrote,
 * read at start) is served: any client that knows the cell's secret can
 * send a SERVE, and must not make the server open and answer for
 * another store on its filesystem.
 */
static int
serve(struct tablet_server *ts, struct slice request, struct buf *reply)
{
	Tabletfs__ServeRequest *req;
	struct bt_store *store = NULL, *old = NULL;
	struct service *svc, *old_svc = NULL;
	struct catalog *catalog = NULL;
	const char *root;
	char line[PATH_MAX + 128], name[CATALOG_SERVER_MAX + 1];
	int rc = 0;

	req = tabletfs__serve_request__unpack(NULL, request.n, request.p);
	if (req == NULL || req->storage == NULL || req->storage[0] == '\0') {
		tabletfs__serve_request__free_unpacked(req, NULL);
		return reply_error(reply, -EINVAL, "SERVE: no storage");
	}
	if (strcmp(req->storage, ts->cell_storage) != 0) {
		snprintf(line, sizeof(line), "SERVE: %.1024s is not the cell's "
		    "storage", req->storage);
		tabletfs__serve_request__free_unpacked(req, NULL);
		return reply_error(reply, -EPERM, line);
	}
	root = req->root != NULL ? req->root : "";
	mutex_lock(&ts->mu);
	if (ts->store != NULL) {
		if (ts->st.rados || (root[0] != '\0') == (ts->catalog != NULL)) {
			if (ts->catalog != NULL)
				rc = catalog_client_retarget(ts->catalog, root);
			if (rc == 0)
				rc = reply_name(ts, reply);
			goto out;
		}
		if (ts->catalog == NULL) {
			rc = reply_error(reply, -EBUSY, "SERVE: this server is "
			    "the root's, which another cannot be while it is");
			goto out;
		}
		tabletd_log("becoming the root's server: closing %s", ts->name);
	}
	if (req->epoch <= ts->epoch && ts->store != NULL) {
		rc = reply_error(reply, -ESTALE, "SERVE: no newer epoch");
		goto out;
	}
	snprintf(name, sizeof(name), "%s#%" PRIu64,
	    rpc_server_address(ts->rpc), req->epoch);
	if (ts->st.rados)
		rc = serve_store(ts, req->epoch, &store);
	else
		rc = serve_tablets(ts, root, req->epoch, name, &store,
		    &catalog);
	if (rc < 0) {
		rc = reply_failed(reply, rc, req->storage);
		goto out;
	}
	if ((rc = service_new(store, &svc)) < 0) {
		bt_store_close(store);
		rc = reply_error(reply, rc, "SERVE: out of memory");
		goto out;
	}
	pthread_rwlock_wrlock(&ts->serving);
	old = ts->store;
	old_svc = ts->service;
	ts->store = store;
	ts->service = svc;
	ts->catalog = catalog;
	ts->epoch = req->epoch;
	snprintf(ts->name, sizeof(ts->name), "%s", name);
	snprintf(ts->storage, sizeof(ts->storage), "%s", req->storage);
	pthread_rwlock_unlock(&ts->serving);
	rc = reply_name(ts, reply);
out:
	mutex_unlock(&ts->mu);
	tabletfs__serve_request__free_unpacked(req, NULL);
	service_free(old_svc);
	if (old != NULL && bt_store_close(old) < 0)
		tabletd_log("closing the tablets served before: %s (their "
		    "log stays for the servers that take them)",
		    *bt_error_detail() ? bt_error_detail() : "error");
	return rc;
}

/*
 * LOAD, UNLOAD and RECOVER of one tablet, and RECOVER_TABLETS of several
 * (TabletRequest), the master's assignment: the tablet calls of the
 * store served.  RECOVER's log directories are relative to the cell's
 * storage.
 */
static int
tablet_call(struct tablet_server *ts, uint32_t method, struct slice request,
    struct buf *reply)
{
	Tabletfs__TabletRequest *req;
	uint64_t *ids, *more = NULL;
	size_t n = 1;
	char line[512];
	int rc;

	req = tabletfs__tablet_request__unpack(NULL, request.n, request.p);
	if (req == NULL)
		return reply_error(reply, -EPROTO, "bad TabletRequest");
	if (req->table == NULL || req->table[0] == '\0' ||
	    !req->has_tablet_id) {
		rc = reply_error(reply, -EINVAL, "no table or tablet");
		goto out;
	}
	ids = &req->tablet_id;
	if (method == TABLETFS__METHOD__RECOVER_TABLETS &&
	    req->n_more_tablet_ids > 0) {
		n += req->n_more_tablet_ids;
		if ((ids = more = calloc(n, sizeof(*ids))) == NULL) {
			rc = reply_error(reply, -ENOMEM, "out of memory");
			goto out;
		}
		ids[0] = req->tablet_id;
		memcpy(ids + 1, req->more_tablet_ids,
		    req->n_more_tablet_ids * sizeof(*ids));
	}
	pthread_rwlock_rdlock(&ts->serving);
	if (ts->store == NULL)
		rc = BT_ENOTSERVING;
	else if (method == TABLETFS__METHOD__LOAD)
		rc = bt_tablet_load(ts->store, req->table, req->tablet_id);
	else if (method == TABLETFS__METHOD__UNLOAD)
		rc = bt_tablet_unload(ts->store, req->table, req->tablet_id);
	else
		rc = api_tablets_recover(ts->store, req->table, ids, n,
		    (const char *const *)req->log_dirs, req->n_log_dirs);
	pthread_rwlock_unlock(&ts->serving);
	if (rc < 0) {
		snprintf(line, sizeof(line), "tablet %" PRIu64 "%s of %.200s: "
		    "%s", req->tablet_id, n > 1 ? " and others" : "",
		    req->table, *bt_error_detail() ? bt_error_detail() :
		    bt_strerror(rc));
		rc = reply_error(reply, rc, line);
	} else {
		reply->n = 0;
		rc = 0;
	}
out:
	free(more);
	tabletfs__tablet_request__free_unpacked(req, NULL);
	return rc;
}

static int
handle(void *arg, const struct rpc_call *call, struct slice request,
    struct buf *reply)
{
	struct tablet_server *ts = arg;
	int rc;

	if (!coord_lease_valid(ts->coord))
		return reply_error(reply, BT_ENOTSERVING,
		    "this server's lease ended");
	switch (call->method) {
	case TABLETFS__METHOD__SERVE:
		return serve(ts, request, reply);
	case TABLETFS__METHOD__LOAD:
	case TABLETFS__METHOD__UNLOAD:
	case TABLETFS__METHOD__RECOVER:
	case TABLETFS__METHOD__RECOVER_TABLETS:
		return tablet_call(ts, call->method, request, reply);
	case TABLETFS__METHOD__LOCATE:
		/* Served whole, every tablet is this server's: clients
		 * send it every call (cell_client.h). */
		if (ts->st.rados)
			return reply_error(reply, -EOPNOTSUPP, "LOCATE: this "
			    "server serves the whole store");
		break;
	}
	pthread_rwlock_rdlock(&ts->serving);
	if (ts->service == NULL)
		rc = reply_error(reply, BT_ENOTSERVING,
		    "this server serves nothing yet");
	else
		rc = service_handle_conn(ts->service, call->conn,
		    call->method, request, reply);
	pthread_rwlock_unlock(&ts->serving);
	/* A server stopped during the call may have had its tablets given
	 * to others since: what it did is in a log they may have read
	 * already, so it must not be acknowledged. */
	if (rc == 0 && !coord_lease_valid(ts->coord))
		return reply_error(reply, -EIO, "this server's lease ended "
		    "during the call: its outcome is unknown");
	return rc;
}

/* A connection closed: the bulk loads it opened go with it. */
static void
conn_closed(void *arg, uint64_t conn)
{
	struct tablet_server *ts = arg;

	pthread_rwlock_rdlock(&ts->serving);
	if (ts->service != NULL)
		service_conn_closed(ts->service, conn);
	pthread_rwlock_unlock(&ts->serving);
}

/* The server's name in the cell: its address, spelled as ZooKeeper
 * names allow ("127.0.0.1:7000" is "127.0.0.1_7000"); the node holds the
 * address itself. */
static void
server_name(const char *address, char *name, size_t size)
{
	snprintf(name, size, "%s", address);
	for (char *p = name; *p != '\0'; p++)
		if (*p == ':')
			*p = '_';
}

int
tabletd_server_run(const struct tabletd_options *o)
{
	struct tablet_server ts;
	struct rpc_server_options ro = {
		.short_method = service_method_short,
		.closed = conn_closed,
		.secret = ts.secret,
	};
	char name[COORD_NAME_MAX + 1];
	const char *address;
	int status = 1, rc;

	memset(&ts, 0, sizeof(ts));
	if (mutex_init(&ts.mu) < 0)
		return 1;
	if (tabletd_load_window_init(&ts.load) < 0) {
		mutex_destroy(&ts.mu);
		return 1;
	}
	pthread_rwlock_init(&ts.serving, NULL);
	if ((rc = coord_open(o->cell, o->session_ms, rpc_now_ns() +
	    (int64_t)10 * 1000000000, &ts.coord)) < 0) {
		tabletd_log("%s: %s", o->cell, *bt_error_detail() ?
		    bt_error_detail() : bt_strerror(rc));
		goto out;
	}
	coord_on_lost(ts.coord, lease_lost, &ts);
	if (tabletd_cell_read(ts.coord, o->cell, ts.cell_storage,
	    sizeof(ts.cell_storage), &ts.st, ts.secret) < 0)
		goto out;
	if ((rc = rpc_server_open(o->listen, &ro, handle, &ts,
	    &ts.rpc)) < 0) {
		tabletd_log("listen on %s: %s", o->listen, *bt_error_detail() ?
		    bt_error_detail() : bt_strerror(rc));
		goto out;
	}
	address = rpc_server_address(ts.rpc);
	server_name(address, name, sizeof(name));
	if ((rc = coord_server_register(ts.coord, name, address)) < 0) {
		tabletd_log("register %s: %s", address, *bt_error_detail() ?
		    bt_error_detail() : bt_strerror(rc));
		goto out;
	}
	tabletd_log("listening on %s, session %d ms", address,
	    coord_session_timeout_ms(ts.coord));
	for (unsigned ticks = 1; !*o->stop; ticks++) {
		tabletd_pause_ms(100);
		if (ticks % (STORE_CHECK_MS / 100) == 0)
			store_check(&ts);
		if (ticks % (LOAD_SAMPLE_MS / 100) == 0)
			load_sample(&ts);
	}
	status = 0;
out:
	/* Stop answering, then unregister (closing the session drops the
	 * node), so that the master looks for another server while this
	 * one flushes; the store's lock keeps that one waiting until the
	 * flush is done. */
	atomic_store(&ts.closing, true);
	rpc_server_close(ts.rpc);
	coord_close(ts.coord);
	service_free(ts.service);
	if (ts.store != NULL && (rc = bt_store_close(ts.store)) < 0) {
		tabletd_log("close %s: %s", ts.storage, bt_strerror(rc));
		status = 1;
	}
	env_free(atomic_load(&ts.rados_env));
	pthread_rwlock_destroy(&ts.serving);
	tabletd_load_window_release(&ts.load);
	mutex_destroy(&ts.mu);
	explicit_bzero(ts.secret, sizeof(ts.secret));
	return status;
}
