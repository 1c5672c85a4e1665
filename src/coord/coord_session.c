/*
 * coord_session.c - a coord's life: the ZooKeeper session it opens and
 * closes, and the session events ZooKeeper reports.
 */
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coord/coord_int.h"
#include "util/alloc.h"
#include "util/error.h"

int64_t
coord_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/*
 * The client logs at INFO to stderr by default, a line for every
 * connection, and at ERROR a line for every failed attempt: six a second
 * while no server answers, which buries a tool's one-line message.  What
 * it would say reaches the caller as this module's errors instead, so the
 * library's log (a process-wide setting, set once) is off unless
 * TABLETFS_ZK_LOG names a level (error, warn, info, debug) to debug with.
 */
static pthread_once_t log_once = PTHREAD_ONCE_INIT;

static void
log_quiet(void)
{
	static const struct {
		const char *name;
		ZooLogLevel level;
	} levels[] = {
		{ "error", ZOO_LOG_LEVEL_ERROR }, { "warn", ZOO_LOG_LEVEL_WARN },
		{ "info", ZOO_LOG_LEVEL_INFO }, { "debug", ZOO_LOG_LEVEL_DEBUG },
	};
	const char *want = getenv("TABLETFS_ZK_LOG");

	zoo_set_debug_level((ZooLogLevel)0);
	for (size_t i = 0; want != NULL && i < 4; i++)
		if (strcmp(want, levels[i].name) == 0)
			zoo_set_debug_level(levels[i].level);
}

/*
 * ZooKeeper's session watcher, on its completion thread: connected,
 * connecting again, or gone (expired, refused).  Node events go to the
 * watchers of coord_watch.c and coord_election.c instead.
 */
static void
session_event(zhandle_t *zh, int type, int state, const char *path,
    void *ctx)
{
	struct coord *c = ctx;

	if (type != ZOO_SESSION_EVENT)
		return;
	mutex_lock(&c->mu);
	if (state == ZOO_CONNECTED_STATE)
		c->connected = true;
	else if (state == ZOO_CONNECTING_STATE ||
	    state == ZOO_ASSOCIATING_STATE)
		c->connected = false;
	else if (state == ZOO_EXPIRED_SESSION_STATE) {
		c->connected = false;
		coord_lease_lose(c, "ZooKeeper expired the session");
	} else if (state == ZOO_AUTH_FAILED_STATE) {
		c->connected = false;
		coord_lease_lose(c, "ZooKeeper refused the session");
	}
	pthread_cond_broadcast(&c->cond);
	mutex_unlock(&c->mu);
}

static void
timespec_at(struct timespec *ts, int64_t ns)
{
	ts->tv_sec = ns / 1000000000;
	ts->tv_nsec = ns % 1000000000;
}

/* Wait until the session is connected (0), lost or deadline_ns passes. */
static int
session_wait_connected(struct coord *c, int64_t deadline_ns)
{
	struct timespec ts;
	int rc = 0;

	timespec_at(&ts, deadline_ns);
	mutex_lock(&c->mu);
	while (!c->connected && !c->lost && coord_now_ns() < deadline_ns)
		cond_timedwait(&c->cond, &c->mu, &ts);
	if (c->lost)
		rc = bt_error_set(-ENOLINK, "cell %s: %s", c->cell,
		    c->lost_why);
	else if (!c->connected)
		rc = bt_error_set(-ETIMEDOUT, "cell %s: no ZooKeeper server "
		    "answered at %s before the deadline", c->cell, c->hosts);
	mutex_unlock(&c->mu);
	return rc;
}

/*
 * One round trip before the lease starts, timed like a ping (invariant 3):
 * a connection that took most of the timeout to come up would otherwise
 * start the lease from before it, already lapsed.
 */
static int
session_first_trip(struct coord *c)
{
	int64_t sent = coord_now_ns();
	int zrc = zoo_exists(c->zh, "/", 0, NULL);

	if (zrc != ZOK)
		return coord_zk_error(c, zrc, "first round trip");
	mutex_lock(&c->mu);
	c->last_ok_ns = sent;
	mutex_unlock(&c->mu);
	return 0;
}

static int
coord_new(const char *address, struct coord **out)
{
	pthread_condattr_t attr;
	struct coord *c;
	int rc;

	if ((c = bt_calloc(1, sizeof(*c))) == NULL) {
		rc = bt_error_set(-ENOMEM, "%s: opening", address);
		goto out;
	}
	if ((rc = coord_address_parse(address, c->hosts, sizeof(c->hosts),
	    c->cell, sizeof(c->cell))) < 0)
		goto out_free;
	snprintf(c->root, sizeof(c->root), "%s/%s", COORD_TOP, c->cell);
	if ((rc = mutex_init(&c->mu)) < 0) {
		bt_error_set(rc, "%s: mutex: %s", address, bt_strerror(rc));
		goto out_free;
	}
	if ((rc = -pthread_rwlock_init(&c->zh_lock, NULL)) < 0)
		goto out_mutex;
	if ((rc = -pthread_condattr_init(&attr)) < 0)
		goto out_rwlock;
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	rc = -pthread_cond_init(&c->cond, &attr);
	pthread_condattr_destroy(&attr);
	if (rc < 0)
		goto out_rwlock;
	*out = c;
	return 0;
out_rwlock:
	pthread_rwlock_destroy(&c->zh_lock);
out_mutex:
	bt_error_set(rc, "%s: locks: %s", address, bt_strerror(rc));
	mutex_destroy(&c->mu);
out_free:
	bt_free(c);
out:
	return rc;
}

static void
coord_free(struct coord *c)
{
	coord_watch_free_all(c);
	pthread_cond_destroy(&c->cond);
	pthread_rwlock_destroy(&c->zh_lock);
	mutex_destroy(&c->mu);
	bt_free(c);
}

int
coord_open(const char *address, int session_timeout_ms,
    int64_t deadline_ns, struct coord **out)
{
	struct coord *c = NULL;
	int64_t started;
	int rc;

	assert(address != NULL && out != NULL);
	assert(session_timeout_ms > 0);
	if ((rc = coord_new(address, &c)) < 0)
		goto out;
	pthread_once(&log_once, log_quiet);
	/* The session cannot exist before this: the lease's first last_ok
	 * (invariant 3). */
	started = coord_now_ns();
	c->last_ok_ns = started;
	c->zh = zookeeper_init(c->hosts, session_event, session_timeout_ms,
	    NULL, c, 0);
	if (c->zh == NULL) {
		rc = bt_error_set(errno ? -errno : -EINVAL, "cell %s: "
		    "ZooKeeper client for %s: %s", c->cell, c->hosts,
		    strerror(errno ? errno : EINVAL));
		goto out_free;
	}
	if ((rc = session_wait_connected(c, deadline_ns)) < 0)
		goto out_close;
	c->timeout_ms = zoo_recv_timeout(c->zh);
	if ((rc = session_first_trip(c)) < 0)
		goto out_close;
	if ((rc = coord_lease_start(c)) < 0)
		goto out_close;
	*out = c;
	return 0;
out_close:
	zookeeper_close(c->zh);
out_free:
	coord_free(c);
out:
	return rc;
}

void
coord_close(struct coord *c)
{
	if (c == NULL)
		return;
	coord_lease_stop(c);
	/* Ends the session (its ephemeral nodes go now) and joins
	 * ZooKeeper's threads: no watcher or completion runs after it.  A
	 * lost session's handle may be closed already (coord_lease.c). */
	if (c->zh != NULL)
		zookeeper_close(c->zh);
	coord_free(c);
}

int
coord_session_timeout_ms(const struct coord *c)
{
	return c->timeout_ms;
}

const char *
coord_cell_name(const struct coord *c)
{
	return c->cell;
}
