/*
 * tabletd_server.c - tabletd server CELL: a tablet server of a cell.
 *
 * It listens for RPC, registers itself in ZooKeeper under its address
 * (an ephemeral node: its session is its lease), and waits for the
 * master's SERVE, which names the cell's store in shared storage.  It
 * then opens the store, which takes the store's lock and replays its
 * commit log, and answers every call of tabletfs.proto on it
 * (service.h).  Until then, and for anything else it does not serve, it
 * answers BT_ENOTSERVING.
 *
 * Fencing: the store's lock is held by one process at a time, so a
 * server that the master gave up for dead cannot be replaced while it
 * still runs: the new server's open fails until it is gone.  A server
 * whose lease ends (coord.h: on its own clock, before ZooKeeper can
 * expire its session) refuses every call from then on and exits at once,
 * without flushing, which lets go of the lock; what it acknowledged is in
 * the commit log, which the next server replays.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api/tabletfs.h"
#include "coord/coord.h"
#include "rpc/rpc.h"
#include "rpc/tabletfs.pb-c.h"
#include "tabletd/service.h"
#include "tabletd/tabletd.h"
#include "util/buf.h"
#include "util/env.h"
#include "util/error.h"
#include "util/mutex.h"
#include "util/storage.h"

struct tablet_server {
	struct coord *coord;
	struct rpc_server *rpc;
	struct mutex mu;
	/* What it serves (guarded by mu; set once, by the first SERVE). */
	struct bt_store *store;
	struct service *service;
	char storage[PATH_MAX];
	uint64_t epoch;
	/* The cell's storage and secret, read at start. */
	char cell_storage[PATH_MAX];
	struct storage st;
	uint8_t secret[RPC_SECRET_SIZE];
	/* The RADOS client the store was opened with, once it is. */
	struct env *_Atomic rados_env;
	atomic_bool closing;	/* the session is being closed on purpose */
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

/* Exit (TABLETD_EXIT_STORAGE) if the store served refuses writes until
 * it is reopened; see the top of this file. */
static void
store_check(struct tablet_server *ts)
{
	struct bt_store *store;
	struct bt_stats st;

	mutex_lock(&ts->mu);
	store = ts->store;
	mutex_unlock(&ts->mu);
	if (store == NULL)
		return;
	bt_store_get_stats(store, &st);
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

/*
 * SERVE: open the store the master names, once; later SERVEs of the same
 * store (a new master's) are answered at once.  Only the cell's own
 * storage (its settings in ZooKeeper, which tabletctl init wrote, read
 * at start) is served: any client that knows the cell's secret can send
 * a SERVE, and must not make the server open and answer for another
 * store on its filesystem.
 */
static int
serve(struct tablet_server *ts, struct slice request, struct buf *reply)
{
	Tabletfs__ServeRequest *req;
	struct bt_options opts;
	struct bt_store *store;
	struct service *svc;
	struct env *env = NULL;
	char line[PATH_MAX + 128], client[256] = "";
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
	mutex_lock(&ts->mu);
	if (ts->store != NULL) {
		if (strcmp(ts->storage, req->storage) != 0)
			rc = reply_error(reply, -EBUSY,
			    "SERVE: this server serves another store");
		else if (req->epoch > ts->epoch)
			ts->epoch = req->epoch;
		goto out;
	}
	/* A RADOS client of its own, connected now: its OSD map is at
	 * least as new as any fencing the master did before this SERVE
	 * (tabletd_master.c). */
	memset(&opts, 0, sizeof(opts));
	if (ts->st.rados) {
		if ((rc = storage_env_new(&ts->st, &env)) < 0)
			goto out_failed;
		env_rados_on_fenced(env, fenced, ts);
		(void)env_rados_client(env, client, sizeof(client));
		opts.env = env;
	}
	if ((rc = bt_store_open(ts->st.path, &opts, &store)) < 0)
		goto out_failed;
	if ((rc = service_new(store, &svc)) < 0) {
		bt_store_close(store);
		env_free(env);
		rc = reply_error(reply, rc, "SERVE: out of memory");
		goto out;
	}
	snprintf(ts->storage, sizeof(ts->storage), "%s", req->storage);
	ts->epoch = req->epoch;
	ts->service = svc;
	ts->store = store;
	atomic_store(&ts->rados_env, env);
	if (env != NULL)
		tabletd_log("serving %s (epoch %" PRIu64 ") as RADOS %s",
		    ts->storage, ts->epoch, client);
	else
		tabletd_log("serving %s (epoch %" PRIu64 ")", ts->storage,
		    ts->epoch);
	goto out;
out_failed:
	snprintf(line, sizeof(line), "SERVE: %s: %s", req->storage,
	    *bt_error_detail() ? bt_error_detail() : bt_strerror(rc));
	rc = reply_error(reply, rc, line);
	env_free(env);
out:
	mutex_unlock(&ts->mu);
	tabletfs__serve_request__free_unpacked(req, NULL);
	return rc;
}

static int
handle(void *arg, const struct rpc_call *call, struct slice request,
    struct buf *reply)
{
	struct tablet_server *ts = arg;
	struct service *svc;

	if (!coord_lease_valid(ts->coord))
		return reply_error(reply, BT_ENOTSERVING,
		    "this server's lease ended");
	if (call->method == TABLETFS__METHOD__SERVE)
		return serve(ts, request, reply);
	mutex_lock(&ts->mu);
	svc = ts->service;
	mutex_unlock(&ts->mu);
	if (svc == NULL)
		return reply_error(reply, BT_ENOTSERVING,
		    "this server serves nothing yet");
	return service_handle_conn(svc, call->conn, call->method, request,
	    reply);
}

/* A connection closed: the bulk loads it opened go with it. */
static void
conn_closed(void *arg, uint64_t conn)
{
	struct tablet_server *ts = arg;
	struct service *svc;

	mutex_lock(&ts->mu);
	svc = ts->service;
	mutex_unlock(&ts->mu);
	if (svc != NULL)
		service_conn_closed(svc, conn);
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
	mutex_destroy(&ts.mu);
	explicit_bzero(ts.secret, sizeof(ts.secret));
	return status;
}
