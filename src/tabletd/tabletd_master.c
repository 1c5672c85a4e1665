/*
 * tabletd_master.c - tabletd master CELL: the cell's master.
 *
 * Candidates wait in ZooKeeper's election (coord.h); the one elected
 * keeps the cell served.  One tablet server at a time is the root's
 * server, named by the cell's root location (the ZooKeeper value "root"
 * that clients read): it holds the store's lock and catalog.  Each round,
 * when the set of live servers changes and at least every second, the
 * master sends SERVE to the server that should be the root's: the one
 * the root names while it lives, else another live server; once one
 * answers that it serves, the root names it.  SERVE is idempotent, so a
 * new master needs no state of its predecessor's, and a server that
 * restarted under the same address is told again.  A server that cannot
 * open the store yet (its lock is still held by a server on its way out)
 * is tried again the next round.
 *
 * In a directory cell every other live server is then told to SERVE
 * with its catalog at the root's server, and the tablets are given out
 * one by one (tabletd_assign.c): a tablet whose server is not live is
 * recovered by a live one from the logs of the servers that are not, and
 * tablets move, a few a round, from the busiest server to the idlest
 * (tabletd_balance.c: by the requests per second the servers report in
 * their SERVE replies, by tablet count in an idle cell).  A cell on
 * RADOS storage is still served whole by the root's server.
 *
 * Each assignment has an epoch, one above the last, kept in ZooKeeper
 * ("epoch"), so that what a server was told can be ordered; a server
 * serves under the name "HOST:PORT#EPOCH" of the epoch it was first told
 * in, which the catalog's assignments name.
 *
 * On RADOS storage the master fences before it gives the store to a
 * server other than the root: whoever holds the store's lock (the lock
 * names its RADOS client and address: env_rados_lock_fence) is
 * blocklisted and its lock broken, and only then is SERVE sent.  A
 * server that was given up for dead but still runs (stopped, cut off)
 * can then write nothing more, and the new server's open does not wait
 * for it.  In a directory the lock (flock) is let go only when its
 * holder exits, and SERVE fails until then; a tablet server that is not
 * the root's holds no lock, and is fenced by the catalog, which refuses
 * its changes to tablets assigned to another name since.
 *
 * A server's session ending is the master's only news of its death: a
 * watchdog thread then aborts the calls waiting on it, so that a round
 * that was calling it when it stopped goes on to the others at once.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "coord/coord.h"
#include "rpc/rpc.h"
#include "rpc/tabletfs.pb-c.h"
#include "tabletd/tabletd.h"
#include "util/buf.h"
#include "util/env.h"
#include "util/error.h"
#include "util/storage.h"

/* How long a SERVE may take: the store's open replays its log. */
#define SERVE_DEADLINE_NS ((int64_t)120 * 1000000000)
#define ROUND_NS ((int64_t)1000000000)

struct master {
	struct coord *coord;
	char storage[4096];
	struct storage st;
	struct env *env;	/* RADOS storage: the client that fences */
	char lock_path[PATH_MAX + 8];	/* the store's LOCK */
	uint8_t secret[RPC_SECRET_SIZE];
	uint64_t epoch;
	struct env *files;	/* a directory cell's storage */
	bool rebuilt;		/* a first round of assignment ran */
	bool epoch_taken;	/* a server serves under epoch */
	bool spread;		/* tabletd_options.spread */
	bool balance_by_count;	/* tabletd_options.balance_by_count */
	/* The assignment's connections to servers, for the term. */
	struct tabletd_conns *conns;
	struct tabletd_balance balance;	/* between rounds (spread) */
	atomic_bool changed;	/* the servers changed since the last round */
	atomic_bool gone_check;	/* ... since the watchdog looked */
	atomic_bool closing;
};

static void
lease_lost(void *arg)
{
	struct master *m = arg;

	if (atomic_load(&m->closing))
		return;
	tabletd_log("lease lost: no longer master; exiting");
	_exit(TABLETD_EXIT_LEASE);
}

static void
servers_changed(void *arg)
{
	struct master *m = arg;

	atomic_store(&m->changed, true);
	atomic_store(&m->gone_check, true);
}

/* A new epoch, one above the last any master gave (compare-and-set). */
static int
epoch_next(struct master *m)
{
	for (;;) {
		char *data = NULL, text[32];
		size_t len;
		int32_t version = -1;
		uint64_t last = 0;
		int rc;

		rc = coord_value_get(m->coord, "epoch", &data, &len, &version);
		if (rc < 0)
			return rc;
		if (rc == 0)
			last = strtoull(data, NULL, 10);
		free(data);
		snprintf(text, sizeof(text), "%" PRIu64, last + 1);
		rc = coord_value_set_if_version(m->coord, "epoch", text,
		    strlen(text), rc == 0 ? version : -1);
		if (rc == 0) {
			m->epoch = last + 1;
			return 0;
		}
		if (rc != -ESTALE && rc != -EEXIST)
			return rc;
	}
}

static int64_t
session_ns(struct master *m)
{
	return (int64_t)coord_session_timeout_ms(m->coord) * 1000000;
}

/* The tablets' loads of a SERVE reply, into live (none when there is
 * no memory for them: the balancer then waits for them, or counts). */
static void
loads_take(struct tabletd_live *live, const Tabletfs__ServeReply *reply)
{
	if (reply->n_tablets == 0 || (live->loads = calloc(reply->n_tablets,
	    sizeof(*live->loads))) == NULL)
		return;
	for (size_t i = 0; i < reply->n_tablets; i++) {
		const Tabletfs__TabletLoad *tl = reply->tablets[i];

		live->loads[i] = (struct tabletd_tablet_load){
			.tablet_id = tl->tablet_id,
			.known = tl->has_requests_per_s,
			.requests_per_s = tl->requests_per_s,
			.memtable_bytes = tl->memtable_bytes,
			.sstable_bytes = tl->sstable_bytes,
		};
	}
	live->load_count = reply->n_tablets;
}

/*
 * Tell server to serve the store, with its catalog at root ("": it is
 * the root's server): 0 once it does, within timeout_ns, and its name
 * (tabletd_live) in *live when not NULL.  The connection must be made
 * within the session timeout: a server that is stopped (or cut off)
 * still has its socket accept connections, and waiting for its preamble
 * until the SERVE's own deadline would hold the whole round, so that no
 * other server would be tried while the store is unserved.
 */
static int
serve_send(struct master *m, const char *server, const char *root,
    int64_t timeout_ns, struct tabletd_live *live)
{
	Tabletfs__ServeRequest req = TABLETFS__SERVE_REQUEST__INIT;
	Tabletfs__ServeReply *reply = NULL;
	int64_t now = rpc_now_ns();
	const char *hash;
	int rc;

	req.storage = m->storage;
	req.has_epoch = true;
	req.epoch = m->epoch;
	req.root = (char *)root;
	rc = tabletd_conns_call_own(m->conns, server, TABLETFS__METHOD__SERVE,
	    &req.base, now + session_ns(m), now + timeout_ns,
	    &tabletfs__serve_reply__descriptor, (ProtobufCMessage **)&reply);
	if (rc == -ETIMEDOUT)
		tabletd_log("%s does not answer", server);
	else if (rc < 0)
		tabletd_log("%s does not serve yet: %s", server,
		    bt_error_detail());
	if (rc < 0)
		return rc;
	if (live != NULL) {
		memset(live, 0, sizeof(*live));
		snprintf(live->address, sizeof(live->address), "%s", server);
		snprintf(live->name, sizeof(live->name), "%s",
		    reply->name != NULL ? reply->name : "");
		if ((hash = strrchr(live->name, '#')) != NULL)
			live->epoch = strtoull(hash + 1, NULL, 10);
		loads_take(live, reply);
	}
	protobuf_c_message_free_unpacked(&reply->base, NULL);
	return 0;
}

static bool
listed(char **names, size_t count, const char *name)
{
	for (size_t i = 0; i < count; i++)
		if (strcmp(names[i], name) == 0)
			return true;
	return false;
}

static void
addresses_free(char **addresses, size_t count)
{
	for (size_t i = 0; i < count; i++)
		free(addresses[i]);
	free(addresses);
}

/* The addresses of the live servers (their nodes' data), each and the
 * array freed with addresses_free().  A list it could not read whole is
 * an error: a live server left out of it would be taken for dead. */
static int
servers_list(struct master *m, char ***out, size_t *count)
{
	char **names, **addresses;
	size_t n, live = 0;
	int rc = 0;

	if ((rc = coord_servers_list(m->coord, &names, &n)) < 0)
		return rc;
	if ((addresses = calloc(n + 1, sizeof(*addresses))) == NULL) {
		coord_names_free(names, n);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n && rc >= 0; i++) {
		rc = coord_server_get(m->coord, names[i], &addresses[live]);
		if (rc == 0)
			live++;		/* BT_NOTFOUND: gone meanwhile */
	}
	coord_names_free(names, n);
	if (rc < 0) {
		addresses_free(addresses, live);
		return rc;
	}
	*out = addresses;
	*count = live;
	return 0;
}

/*
 * The watchdog: whenever the servers change, abort the calls waiting on
 * a server that is no longer registered (tabletd_conns.c), which the
 * round may be blocked in.  Its own thread, because the round is what
 * it unblocks, and the coord's callbacks must not block on ZooKeeper.
 */
static void *
watchdog_run(void *arg)
{
	struct master *m = arg;
	char **servers;
	size_t count, aborted;

	while (!atomic_load(&m->closing)) {
		if (atomic_exchange(&m->gone_check, false)) {
			if (servers_list(m, &servers, &count) < 0) {
				atomic_store(&m->gone_check, true);
			} else {
				aborted = tabletd_conns_abandon(m->conns,
				    servers, count);
				if (aborted > 0)
					tabletd_log("aborted %zu connection%s to "
					    "servers no longer registered",
					    aborted, aborted == 1 ? "" : "s");
				addresses_free(servers, count);
			}
		}
		tabletd_pause_ms(50);
	}
	return NULL;
}

/*
 * Fence whoever holds the store's lock (the file comment): 0 when nobody
 * holds it any more, or a negative error after one line saying why,
 * having sent no SERVE.  A directory cell has nothing to fence with.
 */
static int
store_fence(struct master *m)
{
	char fenced[1024];
	int rc;

	if (m->env == NULL)
		return 0;
	rc = env_rados_lock_fence(m->env, m->lock_path, fenced,
	    sizeof(fenced));
	if (rc < 0)
		tabletd_log("cannot fence the store's holder: %s",
		    *bt_error_detail() ? bt_error_detail() : bt_strerror(rc));
	else if (rc > 0)
		tabletd_log("fenced %s: blocklisted, its lock broken", fenced);
	return rc < 0 ? rc : 0;
}

/*
 * The other live servers of a directory cell serve with the catalog at
 * the root's server, and every tablet goes to one of them
 * (tabletd_assign.c).  A server that does not serve yet gets its name
 * from a new epoch, taken once for the round.
 */
static int
round_assign(struct master *m, const char *root, char **servers,
    size_t count)
{
	struct tabletd_live *live;
	char **silent;
	struct tabletd_assign a = {
		.root = root,
		.secret = m->secret,
		.env = m->files,
		.storage_path = m->st.path,
		.rebuild = !m->rebuilt,
		.spread = m->spread,
		.connect_ns = session_ns(m),
		.coord = m->coord,
		.conns = m->conns,
		.balance = m->spread && !m->balance_by_count ? &m->balance :
		    NULL,
	};
	int rc;

	live = calloc(count + 1, sizeof(*live));
	silent = calloc(count + 1, sizeof(*silent));
	if (live == NULL || silent == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	if ((m->epoch == 0 || m->epoch_taken) && (rc = epoch_next(m)) < 0)
		goto out;
	for (size_t i = 0; i < count; i++)
		if (serve_send(m, servers[i], strcmp(servers[i], root) == 0 ?
		    "" : root, SERVE_DEADLINE_NS, &live[a.count]) == 0)
			a.count++;
		else
			silent[a.silent_count++] = servers[i];
	/* A server that took this epoch now: the next one gets another. */
	m->epoch_taken = false;
	for (size_t i = 0; i < a.count; i++)
		if (live[i].epoch == m->epoch)
			m->epoch_taken = true;
	a.live = live;
	a.silent = silent;
	if ((rc = tabletd_assign_round(&a)) == 0)
		m->rebuilt = true;
out:
	for (size_t i = 0; live != NULL && i < a.count; i++)
		free(live[i].loads);
	free(silent);
	free(live);
	return rc;
}

/* One round: make sure a live server serves the store and the root
 * names it; in a directory cell, then the tablets. */
static int
round_run(struct master *m)
{
	char **servers = NULL, *root = NULL, *old_root = NULL;
	size_t count = 0, len = 0, start;
	int32_t version;
	int rc;

	if ((rc = servers_list(m, &servers, &count)) < 0)
		return rc;
	rc = coord_value_get(m->coord, "root", &root, &len, &version);
	if (rc < 0)
		goto out;
	/* The root serves already, so its answer is at once: a root that
	 * does not answer within the session timeout (stopped between its
	 * preamble and its reply) must not hold the round, which would try
	 * nobody else meanwhile.  A root that restarted and is replaying the
	 * log holds the store's lock meanwhile, and is asked again the next
	 * round. */
	if (rc == 0 && len > 0 && listed(servers, count, root) &&
	    serve_send(m, root, "", session_ns(m), NULL) == 0)
		goto assign;
	old_root = root;
	root = NULL;
	if (count == 0) {
		rc = 0;		/* nobody to serve: wait for a server */
		goto out;
	}
	/* Another server, starting at a varying place among them. */
	start = (size_t)rpc_now_ns() % count;
	for (size_t i = 0; i < count; i++) {
		const char *s = servers[(start + i) % count];

		if (old_root != NULL && strcmp(s, old_root) == 0)
			continue;
		if ((rc = epoch_next(m)) < 0)
			goto out;
		if (store_fence(m) < 0)
			break;	/* tried again next round */
		if (serve_send(m, s, "", SERVE_DEADLINE_NS, NULL) != 0)
			continue;
		if ((rc = coord_value_set(m->coord, "root", s,
		    strlen(s))) < 0)
			goto out;
		tabletd_log("%s serves the cell (epoch %" PRIu64 ")", s,
		    m->epoch);
		if ((root = strdup(s)) == NULL) {
			rc = -ENOMEM;
			goto out;
		}
		break;
	}
assign:
	rc = 0;
	if (root != NULL && !m->st.rados)
		rc = round_assign(m, root, servers, count);
out:
	free(root);
	free(old_root);
	addresses_free(servers, count);
	return rc;
}

int
tabletd_master_run(const struct tabletd_options *o)
{
	char host[256], me[300];
	struct master m;
	int64_t next = 0;
	pthread_t watchdog;
	bool watching = false;
	int status = 1, rc;

	memset(&m, 0, sizeof(m));
	m.spread = o->spread;
	m.balance_by_count = o->balance_by_count;
	if ((rc = coord_open(o->cell, o->session_ms, rpc_now_ns() +
	    (int64_t)10 * 1000000000, &m.coord)) < 0) {
		tabletd_log("%s: %s", o->cell, *bt_error_detail() ?
		    bt_error_detail() : bt_strerror(rc));
		goto out;
	}
	coord_on_lost(m.coord, lease_lost, &m);
	if (tabletd_cell_read(m.coord, o->cell, m.storage, sizeof(m.storage),
	    &m.st, m.secret) < 0)
		goto out;
	if (m.st.rados) {
		if ((rc = storage_env_new(&m.st, &m.env)) < 0) {
			tabletd_log("%s", *bt_error_detail() ?
			    bt_error_detail() : bt_strerror(rc));
			goto out;
		}
		snprintf(m.lock_path, sizeof(m.lock_path),
		    "%s/" STORAGE_LOCK_FILE, m.st.path);
	} else if ((rc = storage_env_new(&m.st, &m.files)) < 0) {
		tabletd_log("%s: %s", m.storage, bt_strerror(rc));
		goto out;
	}
	/* What tabletctl status shows of the master. */
	if (gethostname(host, sizeof(host)) < 0)
		snprintf(host, sizeof(host), "?");
	host[sizeof(host) - 1] = '\0';
	snprintf(me, sizeof(me), "pid %ld on %s", (long)getpid(), host);
	tabletd_log("waiting in the election");
	while (!*o->stop) {
		rc = coord_master_elect(m.coord, me, rpc_now_ns() + ROUND_NS);
		if (rc == 0)
			break;
		/* Standing failed with the connection lost (ZooKeeper's
		 * leader gone, say): the lease decides when to give up. */
		if (rc == -ENOTCONN) {
			tabletd_log("election: %s; standing again",
			    bt_strerror(rc));
			tabletd_pause_ms(100);
			continue;
		}
		if (rc != -ETIMEDOUT) {
			tabletd_log("election: %s", bt_strerror(rc));
			goto out;
		}
	}
	if (*o->stop) {
		status = 0;
		goto out;
	}
	if ((rc = coord_servers_watch(m.coord, servers_changed, &m)) < 0) {
		tabletd_log("watch servers: %s", bt_strerror(rc));
		goto out;
	}
	if ((rc = tabletd_conns_new(m.secret, &m.conns)) < 0) {
		tabletd_log("%s", bt_strerror(rc));
		goto out;
	}
	if ((rc = pthread_create(&watchdog, NULL, watchdog_run, &m)) != 0) {
		tabletd_log("watchdog: %s", strerror(rc));
		goto out;
	}
	watching = true;
	tabletd_log("elected master of %s (storage %s)", o->cell, m.storage);
	while (!*o->stop) {
		if (atomic_exchange(&m.changed, false) ||
		    rpc_now_ns() >= next) {
			bt_error_clear();	/* no detail of an earlier call */
			if ((rc = round_run(&m)) < 0)
				tabletd_log("round: %s", *bt_error_detail() ?
				    bt_error_detail() : bt_strerror(rc));
			next = rpc_now_ns() + ROUND_NS;
		}
		tabletd_pause_ms(50);
	}
	status = 0;
out:
	atomic_store(&m.closing, true);
	if (watching)
		pthread_join(watchdog, NULL);
	coord_close(m.coord);
	tabletd_conns_free(m.conns);
	env_free(m.env);
	env_free(m.files);
	explicit_bzero(m.secret, sizeof(m.secret));
	return status;
}
