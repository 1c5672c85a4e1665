/*
 * coord_watch.c - watches that last: ZooKeeper's watch fires once, so
 * each change is followed by a re-arm, and the caller's callback runs
 * after the re-arm was sent, so that what it reads next is covered by the
 * new watch (ZooKeeper answers one session's requests in order).
 *
 * A watch is armed first from the caller's thread (synchronously, so
 * errors reach the caller); afterwards ZooKeeper's completion thread only
 * marks it fired, and the coord's thread (coord_lease.c) re-arms it here
 * and runs its callback: a synchronous call from ZooKeeper's own
 * completion thread would wait for itself.
 */
#include <assert.h>
#include <errno.h>
#include <string.h>

#include "coord/coord_int.h"
#include "util/alloc.h"
#include "util/error.h"

/* ZooKeeper's watcher for a struct coord_watch, on its completion thread.
 * Session events come to every watcher as well: they are not changes. */
static void
watch_event(zhandle_t *zh, int type, int state, const char *path,
    void *ctx)
{
	struct coord_watch *w = ctx;

	if (type == ZOO_SESSION_EVENT)
		return;
	mutex_lock(&w->c->mu);
	if (!w->dead) {
		w->fired = true;
		pthread_cond_broadcast(&w->c->cond);
	}
	mutex_unlock(&w->c->mu);
}

/* A re-arm's outcome: armed (ZNONODE arms an exists watch too), or to be
 * tried again a little later. */
static void
rearm_result(struct coord_watch *w, int zrc)
{
	struct coord *c = w->c;

	mutex_lock(&c->mu);
	w->arming = false;
	if (zrc == ZOK || (w->kind == COORD_WATCH_NODE && zrc == ZNONODE)) {
		w->notify = true;
	} else {
		w->fired = true;
		w->retry_ns = coord_lease_retry_ns(c, coord_now_ns());
		if (zrc == ZSESSIONEXPIRED || zrc == ZINVALIDSTATE)
			coord_lease_lose(c, "ZooKeeper expired the session");
	}
	pthread_cond_broadcast(&c->cond);
	mutex_unlock(&c->mu);
}

static void
rearm_children_done(int zrc, const struct String_vector *names,
    const void *data)
{
	rearm_result((struct coord_watch *)data, zrc);
}

static void
rearm_node_done(int zrc, const struct Stat *st, const void *data)
{
	rearm_result((struct coord_watch *)data, zrc);
}

void
coord_watch_rearm(struct coord_watch *w)
{
	zhandle_t *zh = w->c->zh;
	int zrc;

	if (w->kind == COORD_WATCH_CHILDREN)
		zrc = zoo_awget_children(zh, w->path, watch_event, w,
		    rearm_children_done, w);
	else
		zrc = zoo_awexists(zh, w->path, watch_event, w,
		    rearm_node_done, w);
	if (zrc != ZOK)		/* not sent: no completion will come */
		rearm_result(w, zrc);
}

int
coord_watch_add(struct coord *c, enum coord_watch_kind kind,
    const char *path, void (*cb)(void *arg), void *arg)
{
	struct String_vector names;
	struct coord_watch *w;
	struct Stat st;
	int zrc, rc;

	assert(cb != NULL);
	if ((w = bt_calloc(1, sizeof(*w))) == NULL) {
		rc = bt_error_set(-ENOMEM, "cell %s: watching %s", c->cell,
		    path);
		goto out;
	}
	w->c = c;
	w->kind = kind;
	strcpy(w->path, path);
	w->cb = cb;
	w->arg = arg;
	/* Listed before ZooKeeper may hold it (invariant 4). */
	mutex_lock(&c->mu);
	w->next = c->watches;
	c->watches = w;
	mutex_unlock(&c->mu);
	if ((rc = coord_enter(c)) < 0)
		goto out_dead;
	if (kind == COORD_WATCH_CHILDREN) {
		zrc = zoo_wget_children(c->zh, path, watch_event, w, &names);
		if (zrc == ZOK)
			deallocate_String_vector(&names);
	} else {
		zrc = zoo_wexists(c->zh, path, watch_event, w, &st);
		if (zrc == ZNONODE)
			zrc = ZOK;	/* armed for its creation */
	}
	coord_leave(c);
	if (zrc != ZOK) {
		rc = coord_zk_error(c, zrc, path);
		goto out_dead;
	}
	return 0;
out_dead:
	mutex_lock(&c->mu);
	w->dead = true;
	mutex_unlock(&c->mu);
out:
	return rc;
}

void
coord_watch_free_all(struct coord *c)
{
	struct coord_watch *w, *next;

	for (w = c->watches; w != NULL; w = next) {
		next = w->next;
		bt_free(w);
	}
	c->watches = NULL;
}
