/*
 * tabletd_assign.c - the master's assignment of tablets in a directory
 * cell (docs/design.md section 5, "Tablets one by one", step 5).
 *
 * Each round the master knows the live servers and the names they serve
 * under ("HOST:PORT#EPOCH", from their SERVE replies).  It reads every
 * tablet's assigned server from the catalog (CATALOG_ASSIGNMENTS at the
 * root's server), and gives each tablet whose server is not live (it
 * died, or it is a name from before: the embedded store's host name, a
 * server's earlier epoch) to the live server that has the fewest: a
 * compare-and-set in the catalog (CATALOG_ASSIGN, so that two masters
 * cannot both give it out), then RECOVER at that server with the logs of
 * every server that is not live (the tablet's records above its redo
 * point are in one of them: docs/design.md, step 4).  A RECOVER that
 * fails unassigns the tablet again, so that the next round tries anew.
 *
 * A new master does not know whether its predecessor's last assignments
 * reached their servers: its first round sends RECOVER for every tablet
 * of a live server too, which a server answers at once (-EBUSY) for a
 * tablet it serves.
 *
 * With no tablet to give out and no server silent, a spread cell's
 * tablets move to even out the servers' load: tabletd_balance.c plans
 * the moves, this file makes them (UNLOAD, the catalog, LOAD).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord/coord.h"
#include "rpc/rpc.h"
#include "rpc/tabletfs.pb-c.h"
#include "tabletd/tabletd.h"
#include "util/buf.h"
#include "util/env.h"
#include "util/error.h"

/* How long one RECOVER may take: it replays logs and flushes. */
#define RECOVER_DEADLINE_NS ((int64_t)120 * 1000000000)
#define CATALOG_DEADLINE_NS ((int64_t)10 * 1000000000)
#define MASTER_CALLER "master"
/* What a CATALOG_ASSIGN does to the tablet's recovery mark. */
#define RECOVERY_KEEP	TABLETFS__CATALOG_ASSIGN_REQUEST__RECOVERY__RECOVERY_KEEP
#define RECOVERY_BEGIN	TABLETFS__CATALOG_ASSIGN_REQUEST__RECOVERY__RECOVERY_BEGIN
#define RECOVERY_DONE	TABLETFS__CATALOG_ASSIGN_REQUEST__RECOVERY__RECOVERY_DONE
/* Moves of the balancer in one round, at most. */
#define ASSIGN_MOVES_PER_ROUND 4

/* tabletd_call() over the connection a keeps to address, or over one
 * of its own when a keeps none. */
static int
assign_call(const struct tabletd_assign *a, const char *address,
    uint32_t method, const ProtobufCMessage *request,
    int64_t connect_deadline, int64_t deadline,
    const ProtobufCMessageDescriptor *reply_desc, ProtobufCMessage **reply)
{
	if (a->conns != NULL)
		return tabletd_conns_call(a->conns, address, method, request,
		    connect_deadline, deadline, reply_desc, reply);
	return tabletd_call(address, a->secret, method, request,
	    connect_deadline, deadline, reply_desc, reply);
}

/* The live server named name, or NULL. */
static struct tabletd_live *
live_find(const struct tabletd_assign *a, const char *name)
{
	for (size_t i = 0; i < a->count; i++)
		if (strcmp(a->live[i].name, name) == 0)
			return &a->live[i];
	return NULL;
}

/*
 * Whether name ("HOST:PORT#EPOCH") is the name of a server that is
 * registered but did not answer this round: it may still serve its
 * tablets (its session has not ended), so they are not given out, and
 * its logs are not read.
 */
static bool
silent_holds(const struct tabletd_assign *a, const char *name)
{
	size_t n = strcspn(name, "#");

	for (size_t i = 0; i < a->silent_count; i++)
		if (strlen(a->silent[i]) == n &&
		    strncmp(a->silent[i], name, n) == 0)
			return true;
	return false;
}

/* The server name "HOST:PORT#EPOCH" of an entry "HOST_PORT.EPOCH" of
 * servers/ (tabletd_server_dir()). */
static void
dir_entry_name(const char *entry, char *name, size_t size)
{
	char *p;

	snprintf(name, size, "%s", entry);
	if ((p = strrchr(name, '.')) != NULL)
		*p = '#';
	if ((p = strrchr(name, '_')) != NULL)
		*p = ':';
}

struct dead_dirs {
	const struct tabletd_assign *a;
	char **dirs;
	size_t count, cap;
	int rc;
};

static int
dead_dirs_add(struct dead_dirs *d, const char *dir)
{
	char **grown;

	if (d->count == d->cap) {
		d->cap = d->cap ? d->cap * 2 : 8;
		if ((grown = realloc(d->dirs, d->cap * sizeof(*grown))) ==
		    NULL)
			return -ENOMEM;
		d->dirs = grown;
	}
	if ((d->dirs[d->count] = strdup(dir)) == NULL)
		return -ENOMEM;
	d->count++;
	return 0;
}

/* One entry of servers/: a log to read unless a live server owns it. */
static int
dead_dir_one(void *arg, const char *entry)
{
	struct dead_dirs *d = arg;
	char dir[PATH_MAX], own[PATH_MAX];

	for (size_t i = 0; i < d->a->count; i++) {
		tabletd_server_dir(d->a->live[i].address, d->a->live[i].epoch,
		    own, sizeof(own));
		if (strcmp(own + sizeof(TABLETD_SERVERS_DIR), entry) == 0)
			return 0;
	}
	dir_entry_name(entry, own, sizeof(own));
	if (silent_holds(d->a, own))
		return 0;
	snprintf(dir, sizeof(dir), TABLETD_SERVERS_DIR "/%s/log", entry);
	if ((d->rc = dead_dirs_add(d, dir)) < 0)
		return d->rc;
	return 0;
}

/* The log directories of the servers that are not live, and the
 * store's own (that of a store served whole before). */
static int
dead_dirs_list(const struct tabletd_assign *a, struct dead_dirs *d)
{
	char path[PATH_MAX];
	int rc;

	memset(d, 0, sizeof(*d));
	d->a = a;
	if ((rc = dead_dirs_add(d, "log")) < 0)
		return rc;
	snprintf(path, sizeof(path), "%s/" TABLETD_SERVERS_DIR,
	    a->storage_path);
	if (!env_path_exists(a->env, path))
		return 0;
	rc = env_dir_list(a->env, path, dead_dir_one, d);
	return rc < 0 ? rc : d->rc;
}

static void
dead_dirs_free(struct dead_dirs *d)
{
	for (size_t i = 0; i < d->count; i++)
		free(d->dirs[i]);
	free(d->dirs);
}

/* Remove dir/name, a file or an empty directory, through env. */
static int
entry_remove(void *arg, const char *name)
{
	const char *dir = ((void **)arg)[0];
	struct env *env = ((void **)arg)[1];
	char path[3 * PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	(void)env_path_remove(env, path);	/* what stays, stays */
	return 0;
}

/* Empty dir's log/ and tmp/, then dir itself, and remove it: what a
 * server's directory holds. */
static int
server_dir_remove(struct env *env, const char *dir)
{
	static const char *const subs[] = { "log", "tmp" };
	char path[2 * PATH_MAX + 8];
	void *arg[2] = { path, env };
	int rc;

	for (size_t i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, subs[i]);
		if (env_path_exists(env, path) &&
		    (rc = env_dir_list(env, path, entry_remove, arg)) < 0)
			return rc;
	}
	snprintf(path, sizeof(path), "%s", dir);
	if ((rc = env_dir_list(env, path, entry_remove, arg)) < 0)
		return rc;
	return env_path_remove(env, dir);
}

/*
 * Once every tablet is served by a live server, recovered from every
 * log it had records in (a round that found no tablet to give out, and
 * no silent server), the directories of the servers that are not live
 * hold nothing any tablet needs: remove them, and release the file
 * numbers the root gave them (CATALOG_SERVER_GONE) so that its sweep
 * collects what they never named.  STORE/log is left, for an embedded
 * open.
 */
static void
dead_dirs_collect(const struct tabletd_assign *a)
{
	Tabletfs__CatalogRequest req = TABLETFS__CATALOG_REQUEST__INIT;
	struct dead_dirs dirs;
	char dir[2 * PATH_MAX], entry[PATH_MAX], name[PATH_MAX], *p;
	int64_t now = rpc_now_ns();
	bool removed = false;

	if (dead_dirs_list(a, &dirs) < 0)
		goto out;
	req.caller = (char *)MASTER_CALLER;
	for (size_t i = 1; i < dirs.count; i++) {	/* [0]: "log" */
		/* "servers/HOST_PORT.EPOCH/log" */
		snprintf(entry, sizeof(entry), "%s", dirs.dirs[i] +
		    sizeof(TABLETD_SERVERS_DIR));
		if ((p = strrchr(entry, '/')) != NULL)
			*p = '\0';
		snprintf(dir, sizeof(dir), "%s/" TABLETD_SERVERS_DIR "/%s",
		    a->storage_path, entry);
		dir_entry_name(entry, name, sizeof(name));
		req.name = name;
		if (assign_call(a, a->root,
		    TABLETFS__METHOD__CATALOG_SERVER_GONE, &req.base,
		    now + a->connect_ns, now + CATALOG_DEADLINE_NS, NULL,
		    NULL) < 0 || server_dir_remove(a->env, dir) < 0) {
			tabletd_log("removing %s: %s", dir, bt_error_detail());
			continue;
		}
		tabletd_log("removed %s: no tablet needs its log", dir);
		removed = true;
	}
	if (removed) {
		snprintf(dir, sizeof(dir), "%s/" TABLETD_SERVERS_DIR,
		    a->storage_path);
		(void)env_dir_sync(a->env, dir);
	}
out:
	dead_dirs_free(&dirs);
}

/* CATALOG_ASSIGN: tablet to server if it is at expected, its recovery
 * mark set or cleared as recovery says (catalog_tablet_assign_if()). */
static int
catalog_assign(const struct tabletd_assign *a, uint64_t tablet,
    const char *server, const char *expected,
    Tabletfs__CatalogAssignRequest__Recovery recovery)
{
	Tabletfs__CatalogAssignRequest req =
	    TABLETFS__CATALOG_ASSIGN_REQUEST__INIT;
	int64_t now = rpc_now_ns();
	int64_t until = now + CATALOG_DEADLINE_NS, lease;

	/* A master acts only under its lease: none once it has lapsed, and
	 * the root's server runs no request whose timeout ran out before a
	 * worker took it (rpc/format.h), so none that the lease's end
	 * overtook on its way but for the time it spent in flight. */
	if (a->coord != NULL) {
		lease = coord_lease_expiry_ns(a->coord);
		if (lease <= now)
			return bt_error_set(-ENOLINK, "the master's lease has "
			    "lapsed: it assigns nothing");
		if (lease < until)
			until = lease;
	}
	req.caller = (char *)MASTER_CALLER;
	req.has_tablet_id = true;
	req.tablet_id = tablet;
	req.server = (char *)server;
	req.expected = (char *)expected;
	req.has_recovery = recovery != RECOVERY_KEEP;
	req.recovery = recovery;
	return assign_call(a, a->root, TABLETFS__METHOD__CATALOG_ASSIGN,
	    &req.base, now + a->connect_ns < until ? now + a->connect_ns : until, until,
	    NULL, NULL);
}

/* RECOVER of tablet t at to, or with more (n_more tablets of t's table)
 * RECOVER_TABLETS of them all from one pass over the logs. */
static int
tablet_recover(const struct tabletd_assign *a, const struct tabletd_live *to,
    const Tabletfs__CatalogAssignment *t, uint64_t *more, size_t n_more,
    const struct dead_dirs *dirs)
{
	Tabletfs__TabletRequest req = TABLETFS__TABLET_REQUEST__INIT;
	int64_t now = rpc_now_ns();

	req.table = t->table;
	req.has_tablet_id = true;
	req.tablet_id = t->tablet_id;
	req.more_tablet_ids = more;
	req.n_more_tablet_ids = n_more;
	req.log_dirs = dirs->dirs;
	req.n_log_dirs = dirs->count;
	return assign_call(a, to->address, n_more > 0 ?
	    TABLETFS__METHOD__RECOVER_TABLETS : TABLETFS__METHOD__RECOVER,
	    &req.base, now + a->connect_ns, now + RECOVER_DEADLINE_NS, NULL,
	    NULL);
}

/*
 * Clear tablet t's recovery mark now that server to serves it: the
 * records it replayed are flushed, under the tablet's flushed_seq.  A
 * mark that stays (the call failed) is cleared by a later round
 * (marked_recover()).
 */
static void
recovery_done(const struct tabletd_assign *a,
    const Tabletfs__CatalogAssignment *t, const struct tabletd_live *to)
{
	if (catalog_assign(a, t->tablet_id, to->name, to->name,
	    RECOVERY_DONE) < 0)
		tabletd_log("tablet %" PRIu64 " of %s: its recovery mark "
		    "stays: %s", t->tablet_id, t->table, bt_error_detail());
}

/* Give tablet t, whose server is not live, to the live server with the
 * fewest tablets in the catalog (compare-and-set): that server, or NULL
 * when it could not be given this round. */
static struct tabletd_live *
tablet_give(const struct tabletd_assign *a,
    const Tabletfs__CatalogAssignment *t)
{
	struct tabletd_live *to = NULL;
	const char *from = t->server != NULL ? t->server : "";

	for (size_t i = 0; i < a->count; i++)
		if ((a->spread || strcmp(a->live[i].address, a->root) == 0) &&
		    (to == NULL || a->live[i].tablets < to->tablets))
			to = &a->live[i];
	if (to == NULL)
		return NULL;	/* the root's server did not answer */
	if (catalog_assign(a, t->tablet_id, to->name, from,
	    RECOVERY_BEGIN) < 0) {
		tabletd_log("assign tablet %" PRIu64 " of %s to %s: %s",
		    t->tablet_id, t->table, to->name, bt_error_detail());
		return NULL;
	}
	to->tablets++;
	return to;
}

/* A tablet given to a server this round, to recover there. */
struct recover_job {
	const Tabletfs__CatalogAssignment *t;
	struct tabletd_live *to;
	bool sent;
	int rc;
};

/*
 * The recoveries of one server, one table after another (the server
 * runs them one at a time anyway), while the other servers recover
 * theirs: a dead server's tablets are served again in the time of the
 * busiest recovery, not of all of them.  The tablets of one table go in
 * one RECOVER_TABLETS, which reads the logs once for all of them (one
 * RECOVER each to a server from before it).  A recovery that fails
 * unassigns its tablets for the next round.
 */
struct recover_batch {
	const struct tabletd_assign *a;
	const struct dead_dirs *dirs;
	const struct tabletd_live *to;
	struct recover_job *jobs;	/* all of the round's; to's are run */
	size_t count;
	pthread_t thread;
	bool started;
};

/* Whether job k of b is one that recover_table() sends with job j. */
static bool
recover_with(const struct recover_batch *b, size_t k,
    const struct recover_job *j)
{
	return b->jobs[k].to == b->to && !b->jobs[k].sent &&
	    strcmp(b->jobs[k].t->table, j->t->table) == 0;
}

/*
 * Recover job j at b's server, with the later jobs of its table there
 * (more: room for b->count ids) while the server takes RECOVER_TABLETS
 * (*batch, cleared at its first ENOSYS), and log the outcome of each; a
 * failure unassigns the tablets sent.
 */
static void
recover_table(struct recover_batch *b, struct recover_job *j, uint64_t *more,
    bool *batch)
{
	size_t first = (size_t)(j - b->jobs), n = 0;
	int64_t t0 = rpc_now_ns();
	int rc;

	for (size_t k = first + 1; *batch && k < b->count; k++)
		if (recover_with(b, k, j))
			more[n++] = b->jobs[k].t->tablet_id;
	rc = tablet_recover(b->a, b->to, j->t, more, n, b->dirs);
	/* -EBUSY: one of them is served there already (a table the root's
	 * server made, whose tablets were still unassigned when the round
	 * read them), and RECOVER_TABLETS then recovers none; one by one,
	 * each answers for itself. */
	if (n > 0 && (rc == -ENOSYS || rc == -EBUSY)) {
		if (rc == -ENOSYS)
			*batch = false;
		n = 0;
		rc = tablet_recover(b->a, b->to, j->t, NULL, 0, b->dirs);
	}
	if (rc == -EBUSY) {
		tabletd_log("tablet %" PRIu64 " of %s: %s serves it already",
		    j->t->tablet_id, j->t->table, b->to->name);
		rc = 0;
	}
	if (rc < 0)
		tabletd_log("recover tablet %" PRIu64 "%s of %s at %s: %s",
		    j->t->tablet_id, n > 0 ? " and others" : "", j->t->table,
		    b->to->name, bt_error_detail());
	else
		tabletd_log("recovered %zu tablet%s of %s at %s in %" PRId64
		    " ms", n + 1, n > 0 ? "s" : "", j->t->table, b->to->name,
		    (rpc_now_ns() - t0) / 1000000);
	for (size_t k = first; k < b->count; k++) {
		struct recover_job *o = &b->jobs[k];
		const char *from = o->t->server != NULL ? o->t->server : "";

		if (k != first && (n == 0 || !recover_with(b, k, j)))
			continue;
		o->sent = true;
		o->rc = rc;
		if (rc < 0) {
			(void)catalog_assign(b->a, o->t->tablet_id, "",
			    b->to->name, RECOVERY_KEEP);
			continue;
		}
		tabletd_log("tablet %" PRIu64 " of %s: %s serves it (was %s)",
		    o->t->tablet_id, o->t->table, b->to->name,
		    from[0] ? from : "unassigned");
		recovery_done(b->a, o->t, b->to);
	}
}

static void *
recover_batch_run(void *arg)
{
	struct recover_batch *b = arg;
	uint64_t *more = calloc(b->count + 1, sizeof(*more));
	bool batch = more != NULL;

	for (size_t i = 0; i < b->count; i++)
		if (b->jobs[i].to == b->to && !b->jobs[i].sent)
			recover_table(b, &b->jobs[i], more, &batch);
	free(more);
	return NULL;
}

/* Give every tablet whose server is neither live nor silent to a live
 * one, and recover them, each server's in a thread of its own. */
static void
orphans_recover(const struct tabletd_assign *a,
    const Tabletfs__CatalogAssignmentsReply *all,
    const struct dead_dirs *dirs)
{
	struct recover_job *jobs;
	struct recover_batch *batches;
	size_t n = 0;

	jobs = calloc(all->n_tablets + 1, sizeof(*jobs));
	batches = calloc(a->count + 1, sizeof(*batches));
	if (jobs == NULL || batches == NULL) {
		tabletd_log("recovery: out of memory; next round");
		goto out;
	}
	for (size_t i = 0; i < all->n_tablets; i++) {
		const Tabletfs__CatalogAssignment *t = all->tablets[i];
		const char *server = t->server != NULL ? t->server : "";
		struct tabletd_live *to;

		if (live_find(a, server) != NULL || silent_holds(a, server))
			continue;
		if ((to = tablet_give(a, t)) != NULL)
			jobs[n++] = (struct recover_job){ .t = t, .to = to };
	}
	for (size_t k = 0; k < a->count; k++) {
		bool any = false;

		for (size_t i = 0; i < n && !any; i++)
			any = jobs[i].to == &a->live[k];
		if (!any)
			continue;
		batches[k] = (struct recover_batch){ .a = a, .dirs = dirs,
		    .to = &a->live[k], .jobs = jobs, .count = n };
		batches[k].started = pthread_create(&batches[k].thread, NULL,
		    recover_batch_run, &batches[k]) == 0;
		if (!batches[k].started)
			recover_batch_run(&batches[k]);
	}
	for (size_t k = 0; k < a->count; k++)
		if (batches[k].started)
			pthread_join(batches[k].thread, NULL);
	for (size_t i = 0; i < n; i++)
		if (jobs[i].rc < 0)
			jobs[i].to->tablets--;
out:
	free(batches);
	free(jobs);
}

static int
tablet_call(const struct tabletd_assign *a, const char *address,
    uint32_t method, const Tabletfs__CatalogAssignment *t)
{
	Tabletfs__TabletRequest req = TABLETFS__TABLET_REQUEST__INIT;
	int64_t now = rpc_now_ns();

	req.table = t->table;
	req.has_tablet_id = true;
	req.tablet_id = t->tablet_id;
	return assign_call(a, address, method, &req.base,
	    now + a->connect_ns, now + RECOVER_DEADLINE_NS, NULL, NULL);
}

/*
 * Move tablet t from one live server to another as the paper does
 * (Bigtable 5.2): UNLOAD at from, whose flushes leave nothing of it in
 * from's log, then the catalog's compare-and-set, then LOAD at to.  A
 * LOAD that fails unassigns it, for the next round to recover.
 */
static int
tablet_move(const struct tabletd_assign *a, struct tabletd_live *from,
    struct tabletd_live *to, const Tabletfs__CatalogAssignment *t)
{
	int rc;

	if ((rc = tablet_call(a, from->address, TABLETFS__METHOD__UNLOAD,
	    t)) < 0) {
		tabletd_log("unload tablet %" PRIu64 " of %s at %s: %s",
		    t->tablet_id, t->table, from->name, bt_error_detail());
		return rc;
	}
	if ((rc = catalog_assign(a, t->tablet_id, to->name, from->name,
	    RECOVERY_KEEP)) < 0) {
		tabletd_log("assign tablet %" PRIu64 " of %s to %s: %s",
		    t->tablet_id, t->table, to->name, bt_error_detail());
		(void)tablet_call(a, from->address, TABLETFS__METHOD__LOAD, t);
		return rc;
	}
	from->tablets--;
	to->tablets++;
	if ((rc = tablet_call(a, to->address, TABLETFS__METHOD__LOAD,
	    t)) < 0) {
		tabletd_log("load tablet %" PRIu64 " of %s at %s: %s",
		    t->tablet_id, t->table, to->name, bt_error_detail());
		(void)catalog_assign(a, t->tablet_id, "", to->name,
		    RECOVERY_KEEP);
		return rc;
	}
	tabletd_log("tablet %" PRIu64 " of %s: moved from %s to %s",
	    t->tablet_id, t->table, from->name, to->name);
	return 0;
}

/*
 * Even out the number of tablets the live servers serve, a few moves a
 * round: from the server with the most to the one with the fewest while
 * they differ by more than one.
 */
static void
tablets_balance_count(const struct tabletd_assign *a,
    const Tabletfs__CatalogAssignmentsReply *all)
{
	size_t moved[ASSIGN_MOVES_PER_ROUND];

	for (int moves = 0; moves < ASSIGN_MOVES_PER_ROUND; moves++) {
		struct tabletd_live *most = &a->live[0], *fewest = &a->live[0];
		const Tabletfs__CatalogAssignment *t = NULL;
		size_t pick = 0;

		for (size_t i = 1; i < a->count; i++) {
			if (a->live[i].tablets > most->tablets)
				most = &a->live[i];
			if (a->live[i].tablets < fewest->tablets)
				fewest = &a->live[i];
		}
		if (most->tablets <= fewest->tablets + 1)
			return;
		/* Its last tablet in the list not moved this round. */
		for (size_t i = all->n_tablets; i-- > 0 && t == NULL;) {
			bool done = false;

			for (int k = 0; k < moves; k++)
				done = done || moved[k] == i;
			if (!done && all->tablets[i]->server != NULL &&
			    strcmp(all->tablets[i]->server, most->name) == 0) {
				t = all->tablets[i];
				pick = i;
			}
		}
		if (t == NULL || tablet_move(a, most, fewest, t) < 0)
			return;
		moved[moves] = pick;
	}
}

/* Split tablet t, too hot for a move to help, at its server from
 * (tabletd_balance.c, rule 6): SPLIT with no row, so that the server
 * splits it at the middle of its recent requests. */
static void
hot_split(const struct tabletd_assign *a, const struct tabletd_live *from,
    const Tabletfs__CatalogAssignment *t)
{
	Tabletfs__SplitRequest req = TABLETFS__SPLIT_REQUEST__INIT;
	int64_t now = rpc_now_ns();

	req.table = t->table;
	req.has_tablet_id = true;
	req.tablet_id = t->tablet_id;
	if (assign_call(a, from->address, TABLETFS__METHOD__SPLIT, &req.base,
	    now + a->connect_ns, now + RECOVER_DEADLINE_NS, NULL, NULL) < 0)
		tabletd_log("split tablet %" PRIu64 " of %s at %s: %s",
		    t->tablet_id, t->table, from->name, bt_error_detail());
	else
		tabletd_log("tablet %" PRIu64 " of %s: split at %s by its "
		    "requests", t->tablet_id, t->table, from->name);
}

/*
 * Even out the servers' load (tabletd_balance.c): by requests per
 * second while the cell is busy, by tablet count while it is idle, and
 * not at all while a busy cell has a tablet whose rate is not known.
 * The moves stop at the first that fails.
 */
static void
tablets_balance(const struct tabletd_assign *a,
    const Tabletfs__CatalogAssignmentsReply *all)
{
	struct tabletd_move moves[ASSIGN_MOVES_PER_ROUND];
	enum tabletd_balance_by by = TABLETD_BALANCE_COUNT;
	int64_t now = rpc_now_ns();
	size_t n = 0;

	if (a->balance != NULL)
		by = tabletd_balance_plan(a->balance, a, all, now, moves,
		    ASSIGN_MOVES_PER_ROUND, &n);
	if (by == TABLETD_BALANCE_COUNT) {
		tablets_balance_count(a, all);
		return;
	}
	if (a->balance->split_wanted)
		hot_split(a, &a->live[a->balance->split_server],
		    all->tablets[a->balance->split_tablet]);
	for (size_t i = 0; i < n; i++) {
		const Tabletfs__CatalogAssignment *t =
		    all->tablets[moves[i].tablet];

		tabletd_log("tablet %" PRIu64 " of %s: %.1f requests/s, moving "
		    "from %s to %s to even out the load", t->tablet_id,
		    t->table, moves[i].requests_per_s,
		    a->live[moves[i].from].name, a->live[moves[i].to].name);
		if (tablet_move(a, &a->live[moves[i].from],
		    &a->live[moves[i].to], t) < 0)
			return;
		tabletd_balance_moved(a->balance, t->tablet_id,
		    a->live[moves[i].from].name, now);
	}
}

/*
 * RECOVER at its live server each tablet of all that still carries a
 * recovery mark (a master that gave it out stopped before it saw the
 * recovery end, or the call that clears the mark failed), and in a new
 * master's first round every tablet of a live server (the file
 * comment); a server that serves the tablet already answers at once
 * (-EBUSY).  Then clear the marks of those its server serves.
 */
static void
marked_recover(const struct tabletd_assign *a,
    const Tabletfs__CatalogAssignmentsReply *all,
    const struct dead_dirs *dirs)
{
	for (size_t i = 0; i < all->n_tablets; i++) {
		const Tabletfs__CatalogAssignment *t = all->tablets[i];
		const struct tabletd_live *l = live_find(a,
		    t->server != NULL ? t->server : "");
		int rc;

		if (l == NULL || (!a->rebuild && !t->recovering))
			continue;
		rc = tablet_recover(a, l, t, NULL, 0, dirs);
		if (rc < 0 && rc != -EBUSY)
			tabletd_log("tablet %" PRIu64 " of %s at %s: %s",
			    t->tablet_id, t->table, l->name,
			    bt_error_detail());
		else if (t->recovering)
			recovery_done(a, t, l);
	}
}

int
tabletd_assign_round(const struct tabletd_assign *a)
{
	Tabletfs__CatalogRequest req = TABLETFS__CATALOG_REQUEST__INIT;
	Tabletfs__CatalogAssignmentsReply *all = NULL;
	struct dead_dirs dirs = { 0 };
	int64_t now = rpc_now_ns();
	size_t orphans = 0, marked = 0;
	int rc;

	if (a->conns != NULL &&
	    (rc = tabletd_conns_retain(a->conns, a->live, a->count)) < 0)
		return rc;
	if (a->count == 0)
		return 0;
	req.caller = (char *)MASTER_CALLER;
	if ((rc = assign_call(a, a->root,
	    TABLETFS__METHOD__CATALOG_ASSIGNMENTS, &req.base,
	    now + a->connect_ns, now + CATALOG_DEADLINE_NS,
	    &tabletfs__catalog_assignments_reply__descriptor,
	    (ProtobufCMessage **)&all)) < 0)
		return rc;
	for (size_t i = 0; i < all->n_tablets; i++) {
		const char *s = all->tablets[i]->server;
		struct tabletd_live *l = live_find(a, s != NULL ? s : "");

		if (all->tablets[i]->recovering)
			marked++;
		if (l != NULL)
			l->tablets++;
		else if (!silent_holds(a, s != NULL ? s : ""))
			orphans++;
	}
	/* A marked tablet's records may still be only in a dead server's
	 * log: no log goes while one is marked. */
	if (orphans == 0 && marked == 0 && !a->rebuild) {
		if (a->silent_count == 0)
			dead_dirs_collect(a);
		goto balance;
	}
	if ((rc = dead_dirs_list(a, &dirs)) < 0)
		goto out;
	orphans_recover(a, all, &dirs);
	marked_recover(a, all, &dirs);
balance:
	/* Not while a server is silent: it may be dying, and a round of
	 * moves (each a flush at its server) would hold up the round that
	 * gives its tablets out once its session ends. */
	if (a->spread && a->silent_count == 0)
		tablets_balance(a, all);
out:
	dead_dirs_free(&dirs);
	if (all != NULL)
		protobuf_c_message_free_unpacked(&all->base, NULL);
	return rc;
}
