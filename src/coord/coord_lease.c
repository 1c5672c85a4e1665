/*
 * coord_lease.c - the coord's thread: it keeps the lease (a ping every
 * quarter of the session timeout), declares the session lost when the
 * lease lapses and runs the lost callback, and re-arms the watches that
 * fired before running their callbacks (coord_int.h, invariants 2-5).
 *
 * Why the lease is safe.  ZooKeeper expires a session when it has heard
 * nothing from it for the negotiated timeout T, measured from the last
 * request or ping it received.  A ping answered by the server was received
 * after the time taken just before sending it (last_ok), so the server
 * cannot expire the session before last_ok + T on its clock.  The lease
 * ends at last_ok + 0.8 T on ours: the rest covers the clocks' rates and
 * the time the holder needs to stop acting.  ZooKeeper's client reports
 * the expiry only once it reaches a server again, so waiting for its event
 * would let a partitioned process act after its session, and its ephemeral
 * nodes, were gone; the lease does not wait for it.
 *
 * Once the lease is lost the thread closes the session's handle.  A
 * ZooKeeper server that was paused rather than cut off may not have
 * expired the session when it resumes (the client's reconnection can come
 * before its expiry sweep), and a handle left open would keep it, and this
 * process's server registration and election candidacy, alive although
 * the process no longer acts for the cell.
 */
#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "coord/coord_int.h"
#include "util/error.h"

#define LEASE_LAPSED	"lease lapsed: no answer from ZooKeeper within " \
			"0.8 of the session timeout"

static int64_t
timeout_ns(const struct coord *c)
{
	return (int64_t)c->timeout_ms * 1000000;
}

/* The end of the lease (invariant 3); c->mu held. */
static int64_t
lease_expiry(const struct coord *c)
{
	return c->last_ok_ns + timeout_ns(c) * COORD_LEASE_PERMILLE / 1000;
}

void
coord_lease_lose(struct coord *c, const char *why)
{
	mutex_assert_held(&c->mu);
	if (c->lost)
		return;
	c->lost = true;
	c->lost_why = why;
	c->connected = false;
	pthread_cond_broadcast(&c->cond);
}

/* Lose the lease if it has lapsed by now; c->mu held. */
static void
lease_check(struct coord *c, int64_t now)
{
	mutex_assert_held(&c->mu);
	if (!c->lost && now >= lease_expiry(c))
		coord_lease_lose(c, LEASE_LAPSED);
}

bool
coord_lease_valid(struct coord *c)
{
	bool valid;

	mutex_lock(&c->mu);
	lease_check(c, coord_now_ns());
	valid = !c->lost;
	mutex_unlock(&c->mu);
	return valid;
}

int64_t
coord_lease_expiry_ns(struct coord *c)
{
	int64_t expiry;

	mutex_lock(&c->mu);
	lease_check(c, coord_now_ns());
	expiry = c->lost ? 0 : lease_expiry(c);
	mutex_unlock(&c->mu);
	return expiry;
}

void
coord_on_lost(struct coord *c, void (*cb)(void *arg), void *arg)
{
	mutex_lock(&c->mu);
	c->lost_cb = cb;
	c->lost_arg = arg;
	c->lost_notified = false;	/* each callback set runs once */
	pthread_cond_broadcast(&c->cond);
	mutex_unlock(&c->mu);
}

/* The answer to a ping, on ZooKeeper's completion thread.  Any answer
 * from the server renews the lease: "/" always exists. */
static void
ping_done(int zrc, const struct Stat *st, const void *data)
{
	struct coord *c = (struct coord *)data;

	mutex_lock(&c->mu);
	c->ping_pending = false;
	if (zrc == ZOK || zrc == ZNONODE) {
		if (c->ping_sent_ns > c->last_ok_ns)
			c->last_ok_ns = c->ping_sent_ns;
	} else if (zrc == ZSESSIONEXPIRED || zrc == ZINVALIDSTATE) {
		coord_lease_lose(c, "ZooKeeper expired the session");
	}
	pthread_cond_broadcast(&c->cond);
	mutex_unlock(&c->mu);
}

/* Send a ping (asynchronous: the thread must stay free to end the lease
 * on time while ZooKeeper does not answer).  c->mu held, dropped. */
static void
ping_send(struct coord *c, int64_t now)
{
	int zrc;

	c->ping_pending = true;
	c->ping_sent_ns = now;	/* taken before sending: invariant 3 */
	c->next_ping_ns = now + timeout_ns(c) / 4;
	mutex_unlock(&c->mu);
	zrc = zoo_aexists(c->zh, "/", 0, ping_done, c);
	mutex_lock(&c->mu);
	if (zrc != ZOK) {
		c->ping_pending = false;
		if (zrc == ZINVALIDSTATE || zrc == ZSESSIONEXPIRED)
			coord_lease_lose(c, "ZooKeeper expired the session");
	}
}

/*
 * One step of the watches: run one callback due, or re-arm one watch that
 * fired; true when it did (having dropped c->mu meanwhile, so the caller
 * looks at everything again).  *wake is lowered to the next retry of a
 * failed re-arm.
 */
static bool
watches_serve(struct coord *c, int64_t now, int64_t *wake)
{
	for (struct coord_watch *w = c->watches; w != NULL; w = w->next) {
		if (w->notify) {
			w->notify = false;
			mutex_unlock(&c->mu);
			w->cb(w->arg);		/* invariant 5 */
			mutex_lock(&c->mu);
			return true;
		}
		if (!w->fired || w->arming)
			continue;
		if (now < w->retry_ns) {
			if (w->retry_ns < *wake)
				*wake = w->retry_ns;
			continue;
		}
		w->fired = false;
		w->arming = true;
		mutex_unlock(&c->mu);
		coord_watch_rearm(w);
		mutex_lock(&c->mu);
		return true;
	}
	return false;
}

/* Close the handle of a lost session (invariant 6).  c->mu held,
 * dropped meanwhile: ZooKeeper's threads, joined by zookeeper_close, may
 * be waiting for it. */
static void
session_end(struct coord *c)
{
	zhandle_t *zh;

	c->session_ended = true;
	mutex_unlock(&c->mu);
	pthread_rwlock_wrlock(&c->zh_lock);
	zh = c->zh;
	c->zh = NULL;
	pthread_rwlock_unlock(&c->zh_lock);
	zookeeper_close(zh);
	mutex_lock(&c->mu);
}

static void
wait_until(struct coord *c, int64_t ns)
{
	struct timespec ts = {
		.tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000,
	};

	cond_timedwait(&c->cond, &c->mu, &ts);
}

static void *
lease_thread(void *arg)
{
	struct coord *c = arg;

	mutex_lock(&c->mu);
	while (!c->closing) {
		int64_t now = coord_now_ns(), wake;

		lease_check(c, now);
		if (c->lost) {
			void (*cb)(void *) = c->lost_cb;
			void *cb_arg = c->lost_arg;

			if (cb != NULL && !c->lost_notified) {
				c->lost_notified = true;
				mutex_unlock(&c->mu);
				cb(cb_arg);		/* invariant 5 */
				mutex_lock(&c->mu);
			} else if (!c->session_ended) {
				session_end(c);
			} else {
				cond_wait(&c->cond, &c->mu);
			}
			continue;
		}
		if (!c->ping_pending && now >= c->next_ping_ns) {
			ping_send(c, now);
			continue;
		}
		wake = lease_expiry(c);
		if (!c->ping_pending && c->next_ping_ns < wake)
			wake = c->next_ping_ns;
		if (watches_serve(c, now, &wake))
			continue;
		wait_until(c, wake);
	}
	mutex_unlock(&c->mu);
	return NULL;
}

int
coord_lease_start(struct coord *c)
{
	int rc;

	c->next_ping_ns = 0;		/* at once */
	if ((rc = -pthread_create(&c->thread, NULL, lease_thread, c)) < 0)
		return bt_error_set(rc, "cell %s: starting its thread: %s",
		    c->cell, bt_strerror(rc));
	return 0;
}

void
coord_lease_stop(struct coord *c)
{
	mutex_lock(&c->mu);
	c->closing = true;
	pthread_cond_broadcast(&c->cond);
	mutex_unlock(&c->mu);
	pthread_join(c->thread, NULL);
}

/*
 * Used by the retry of a failed re-arm (coord_watch.c): a quarter of the
 * timeout, like the pings, so a disconnected coord does not spin.
 */
int64_t
coord_lease_retry_ns(const struct coord *c, int64_t now)
{
	return now + timeout_ns(c) / 4;
}
