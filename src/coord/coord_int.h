/*
 * coord_int.h - what the files of src/coord share: struct coord, the
 * watches, and the helpers every call goes through.
 *
 * The files, each one job:
 *	coord_address.c		the address and name syntax
 *	coord_session.c		open and close, ZooKeeper's session events
 *	coord_lease.c		the coord's thread: the lease, the lost
 *				callback, re-arming watches and their callbacks
 *	coord_watch.c		watches on a node or a node's children
 *	coord_zk.c		the gate every call passes, error mapping, paths
 *	coord_cell.c		the cell's node and settings, tablet servers
 *	coord_election.c	the master election
 *	coord_value.c		the named values
 *
 * INVARIANTS (the functions cite them by number):
 *  1. c->mu guards every field below it in struct coord, and each watch's
 *     state fields; no ZooKeeper call is made holding it (ZooKeeper's
 *     threads take it in watchers and completions).
 *  6. c->zh is used only between coord_enter and coord_leave (which hold
 *     c->zh_lock for reading), or by the coord's thread, which alone
 *     closes it (holding c->zh_lock for writing) once the session is
 *     lost: a handle closed under a call would be used after its free.
 *  2. c->lost only goes from false to true; from then on every call fails
 *     with -ENOLINK (coord_gate) and the lost callback runs once.
 *  3. c->last_ok_ns only grows, and is always a time at or before which
 *     the server last heard from this session: the lease is
 *     now < last_ok_ns + 0.8 T (coord_lease.c says why that is safe).
 *  4. Watches are added to c->watches and never removed before
 *     coord_close, so ZooKeeper's threads may hold a pointer to one until
 *     zookeeper_close has returned.
 *  5. User callbacks run only on the coord's thread, without c->mu held.
 */
#ifndef TABLETFS_COORD_COORD_INT_H
#define TABLETFS_COORD_COORD_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <zookeeper/zookeeper.h>

#include "coord/coord.h"
#include "util/mutex.h"

/* Where every cell lives in ZooKeeper. */
#define COORD_TOP		"/tabletfs"
#define COORD_PATH_MAX		256
/* The lease lasts this share of the negotiated timeout (per mille). */
#define COORD_LEASE_PERMILLE	800

enum coord_watch_kind {
	COORD_WATCH_CHILDREN,	/* the set of a node's children */
	COORD_WATCH_NODE,	/* a node's creation, data and deletion */
};

/* One watch a caller asked for; lives until coord_close (invariant 4). */
struct coord_watch {
	struct coord_watch *next;
	struct coord *c;
	enum coord_watch_kind kind;
	char path[COORD_PATH_MAX];
	void (*cb)(void *arg);
	void *arg;
	/* Under c->mu: */
	bool fired;		/* ZooKeeper reported a change: re-arm */
	bool arming;		/* a re-arm request is outstanding */
	bool notify;		/* re-armed: call cb */
	bool dead;		/* its first arming failed: never called */
	int64_t retry_ns;	/* a failed re-arm is retried from then */
};

struct coord {
	zhandle_t *zh;
	char hosts[COORD_HOSTS_MAX];
	char cell[COORD_NAME_MAX + 1];
	char root[COORD_PATH_MAX];	/* /tabletfs/CELL */
	int timeout_ms;			/* negotiated */
	pthread_rwlock_t zh_lock;	/* invariant 6 */
	pthread_t thread;		/* coord_lease.c's */

	struct mutex mu;
	pthread_cond_t cond;	/* CLOCK_MONOTONIC; any change below */
	bool connected;		/* the session's last event said so */
	bool closing;		/* coord_close: the thread is to stop */
	bool lost;		/* invariant 2 */
	const char *lost_why;	/* a static string, once lost */
	int64_t last_ok_ns;	/* invariant 3 */
	int64_t ping_sent_ns;	/* of the outstanding ping */
	bool ping_pending;
	int64_t next_ping_ns;
	void (*lost_cb)(void *arg);
	void *lost_arg;
	bool lost_notified;
	bool session_ended;	/* the handle was closed after the loss */
	uint64_t election_events;	/* the predecessor watch fired */
	bool elected;		/* coord_master_elect was called */
	struct coord_watch *watches;	/* invariant 4 */
};

/* coord_address.c: 0, or -EINVAL with a detail naming what (a "server
 * name", a "value name"). */
int coord_name_check(const char *what, const char *name);

/* coord_lease.c */
int coord_lease_start(struct coord *c);
void coord_lease_stop(struct coord *c);
/* Mark the session lost (invariant 2); c->mu held. */
void coord_lease_lose(struct coord *c, const char *why);
/* When a failed request of the coord's thread is tried again. */
int64_t coord_lease_retry_ns(const struct coord *c, int64_t now);

/* coord_watch.c */
/* Add a watch on path and arm it (from a caller's thread). */
int coord_watch_add(struct coord *c, enum coord_watch_kind kind,
    const char *path, void (*cb)(void *arg), void *arg);
/* Send the re-arm request of a watch that fired (coord's thread; c->mu
 * not held). */
void coord_watch_rearm(struct coord_watch *w);
void coord_watch_free_all(struct coord *c);

/* coord_zk.c */
/*
 * The gate at the start of every call: 0 while the session may act,
 * -ENOLINK with a detail once it is lost (invariant 2).
 */
int coord_gate(struct coord *c);
/*
 * coord_gate, then take the handle for a call (invariant 6): 0, and
 * coord_leave must follow; or -ENOLINK, and it must not.
 */
int coord_enter(struct coord *c);
void coord_leave(struct coord *c);
/*
 * Map a ZooKeeper result that is not ZOK to a negative code with the
 * detail "cell C: WHAT: ZooKeeper's words"; a result that means the
 * session is gone also loses the lease.
 */
int coord_zk_error(struct coord *c, int zrc, const char *what);
/* "/tabletfs/CELL[/sub[/name]]" into out; -ENAMETOOLONG beyond
 * COORD_PATH_MAX (cannot happen for checked names). */
int coord_path(const struct coord *c, char *out, const char *sub,
    const char *name);
/*
 * Read a node's data into a new NUL-terminated string; *len and *version
 * may be NULL.  BT_NOTFOUND when absent.  Between coord_enter and
 * coord_leave.
 */
int coord_node_read(struct coord *c, const char *path, char **data,
    size_t *len, int32_t *version);

#endif
