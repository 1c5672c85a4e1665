/*
 * coord_election.c - the master election, ZooKeeper's recipe: every
 * candidate creates an ephemeral sequential node under
 * /tabletfs/CELL/election, the lowest leads, and each other candidate
 * watches only the node just below its own (no herd of wake-ups when the
 * leader goes: only its successor looks again).
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coord/coord_int.h"
#include "util/error.h"

#define CANDIDATE_PREFIX	"m-"
/* master_get may race a leader's departure: look again this often. */
#define MASTER_GET_TRIES	8
/* After a lost connection, look again (or delete again) this much later. */
#define ELECTION_RETRY_NS	((int64_t)100 * 1000000)

/* ZooKeeper's watcher on a predecessor, on its completion thread: wake
 * the waiting candidate. */
static void
election_event(zhandle_t *zh, int type, int state, const char *path,
    void *ctx)
{
	struct coord *c = ctx;

	if (type == ZOO_SESSION_EVENT)
		return;
	mutex_lock(&c->mu);
	c->election_events++;
	pthread_cond_broadcast(&c->cond);
	mutex_unlock(&c->mu);
}

static int
candidate_order(const void *a, const void *b)
{
	/* One prefix and ZooKeeper's fixed-width sequence number: the
	 * names sort as their numbers. */
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The candidates in kids, lowest first.  0 or a negative code; between
 * coord_enter and coord_leave. */
static int
candidates_list(struct coord *c, const char *dir,
    struct String_vector *kids)
{
	int zrc = zoo_get_children(c->zh, dir, 0, kids);

	if (zrc == ZNONODE)
		return bt_error_set(-ENOENT, "cell %s: no such cell",
		    c->cell);
	if (zrc != ZOK)
		return coord_zk_error(c, zrc, "listing the candidates");
	qsort(kids->data, (size_t)kids->count, sizeof(kids->data[0]),
	    candidate_order);
	return 0;
}

/*
 * Wait until the watch on the predecessor fires (events moves past seen),
 * the lease is lost, or deadline_ns (0: none) passes.  0, -ENOLINK or
 * -ETIMEDOUT.
 */
static int
election_wait(struct coord *c, uint64_t seen, int64_t deadline_ns)
{
	struct timespec ts = {
		.tv_sec = deadline_ns / 1000000000,
		.tv_nsec = deadline_ns % 1000000000,
	};
	bool timed_out = false;

	mutex_lock(&c->mu);
	while (c->election_events == seen && !c->lost) {
		if (deadline_ns == 0) {
			cond_wait(&c->cond, &c->mu);
		} else if (coord_now_ns() >= deadline_ns) {
			timed_out = true;
			break;
		} else {
			cond_timedwait(&c->cond, &c->mu, &ts);
		}
	}
	mutex_unlock(&c->mu);
	if (timed_out)
		return bt_error_set(-ETIMEDOUT, "cell %s: not elected master "
		    "before the deadline", c->cell);
	return coord_gate(c);
}

/*
 * Wait ELECTION_RETRY_NS, or until deadline_ns (0: none) if sooner, after
 * a call failed with the connection lost: 0, -ENOLINK once the lease is
 * lost (the session, and the candidate with it, may be gone), or
 * -ETIMEDOUT once the deadline has passed.
 */
static int
election_pause(struct coord *c, int64_t deadline_ns)
{
	int64_t until = coord_now_ns() + ELECTION_RETRY_NS;
	struct timespec ts;

	if (deadline_ns != 0 && until > deadline_ns)
		until = deadline_ns;
	ts.tv_sec = until / 1000000000;
	ts.tv_nsec = until % 1000000000;
	mutex_lock(&c->mu);
	while (!c->lost && coord_now_ns() < until)
		if (cond_timedwait(&c->cond, &c->mu, &ts) != 0)
			break;
	mutex_unlock(&c->mu);
	if (deadline_ns != 0 && coord_now_ns() >= deadline_ns)
		return bt_error_set(-ETIMEDOUT, "cell %s: not elected master "
		    "before the deadline", c->cell);
	return coord_gate(c);
}

/*
 * Whether mine leads (0), or the name of its predecessor in pred, watched
 * (1), or gone already (2).  Between coord_enter and coord_leave.
 */
static int
election_look(struct coord *c, const char *dir, const char *mine,
    char *pred)
{
	struct String_vector kids;
	struct Stat st;
	int i, zrc, rc;

	if ((rc = candidates_list(c, dir, &kids)) < 0)
		return rc;
	for (i = 0; i < kids.count && strcmp(kids.data[i], mine) != 0; i++)
		;
	if (i == kids.count)
		rc = bt_error_set(-ENOLINK, "cell %s: candidate %s is gone "
		    "(its session ended)", c->cell, mine);
	else if (i == 0)
		rc = 0;
	else
		rc = coord_path(c, pred, "election", kids.data[i - 1]);
	deallocate_String_vector(&kids);
	if (rc < 0 || i == 0)
		return rc;
	zrc = zoo_wexists(c->zh, pred, election_event, c, &st);
	if (zrc == ZNONODE)
		return 2;
	if (zrc != ZOK)
		return coord_zk_error(c, zrc, "watching the predecessor");
	return 1;
}

/* Lead (0), or wait behind the predecessor of mine: 1 when it left. */
static int
election_turn(struct coord *c, const char *dir, const char *mine,
    int64_t deadline_ns)
{
	char pred[COORD_PATH_MAX];
	uint64_t seen;
	int rc;

	mutex_lock(&c->mu);
	seen = c->election_events;
	mutex_unlock(&c->mu);
	if ((rc = coord_enter(c)) < 0)
		return rc;
	rc = election_look(c, dir, mine, pred);
	coord_leave(c);
	if (rc <= 0)
		return rc;
	if (rc == 2)
		return 1;
	if ((rc = election_wait(c, seen, deadline_ns)) < 0)
		return rc;
	return 1;
}

int
coord_master_elect(struct coord *c, const char *data, int64_t deadline_ns)
{
	char dir[COORD_PATH_MAX], prefix[COORD_PATH_MAX];
	char created[COORD_PATH_MAX];
	const char *mine;
	size_t len;
	int zrc, rc;

	assert(data != NULL);
	len = strlen(data);
	mutex_lock(&c->mu);
	assert(!c->elected);
	c->elected = true;
	mutex_unlock(&c->mu);
	if (len > COORD_VALUE_MAX) {
		rc = bt_error_set(BT_ETOOBIG, "cell %s: candidate data of "
		    "%zu bytes, more than %d", c->cell, len, COORD_VALUE_MAX);
		goto out;
	}
	if ((rc = coord_path(c, dir, "election", NULL)) < 0 ||
	    (rc = coord_path(c, prefix, "election", CANDIDATE_PREFIX)) < 0)
		goto out;
	if ((rc = coord_enter(c)) < 0)
		goto out;
	zrc = zoo_create(c->zh, prefix, data, (int)len, &ZOO_OPEN_ACL_UNSAFE,
	    ZOO_EPHEMERAL | ZOO_SEQUENCE, created, sizeof(created));
	coord_leave(c);
	if (zrc == ZNONODE) {
		rc = bt_error_set(-ENOENT, "cell %s: no such cell", c->cell);
		goto out;
	}
	if (zrc != ZOK) {
		rc = coord_zk_error(c, zrc, "standing as candidate");
		goto out;
	}
	mine = strrchr(created, '/') + 1;
	/* A connection lost while looking (a ZooKeeper server gone, the
	 * ensemble electing its leader) leaves the candidate standing: its
	 * session lives while the lease holds, so look again. */
	while ((rc = election_turn(c, dir, mine, deadline_ns)) == 1 ||
	    (rc == -ENOTCONN && (rc = election_pause(c, deadline_ns)) == 0))
		;
	if (rc == 0)
		return 0;
	/* Withdraw, so as not to lead later unawares -- nor, standing again,
	 * wait behind our own old candidate.  A delete lost with the
	 * connection is sent again until the lease is lost (a lost session
	 * takes the node with it). */
	while (coord_enter(c) == 0) {
		zrc = zoo_delete(c->zh, created, -1);
		coord_leave(c);
		if ((zrc != ZCONNECTIONLOSS && zrc != ZOPERATIONTIMEOUT) ||
		    election_pause(c, 0) < 0)
			break;
	}
out:
	mutex_lock(&c->mu);
	c->elected = false;
	mutex_unlock(&c->mu);
	return rc;
}

static int
master_get(struct coord *c, char **data)
{
	char dir[COORD_PATH_MAX], path[COORD_PATH_MAX];
	struct String_vector kids;
	int rc;

	if ((rc = coord_path(c, dir, "election", NULL)) < 0)
		return rc;
	for (int i = 0; i < MASTER_GET_TRIES; i++) {
		if ((rc = candidates_list(c, dir, &kids)) < 0)
			return rc;
		if (kids.count == 0) {
			deallocate_String_vector(&kids);
			return BT_NOTFOUND;
		}
		rc = coord_path(c, path, "election", kids.data[0]);
		deallocate_String_vector(&kids);
		if (rc < 0)
			return rc;
		rc = coord_node_read(c, path, data, NULL, NULL);
		if (rc != BT_NOTFOUND)	/* else it left just now */
			return rc;
	}
	return bt_error_set(-EAGAIN, "cell %s: the leader changed under "
	    "each of %d reads", c->cell, MASTER_GET_TRIES);
}

int
coord_master_get(struct coord *c, char **data)
{
	int rc;

	if ((rc = coord_enter(c)) < 0)
		return rc;
	rc = master_get(c, data);
	coord_leave(c);
	return rc;
}
