/*
 * coord.h - a cell's coordination in ZooKeeper: what Chubby does for
 * Bigtable (docs/design.md section 5).  The master election, the live
 * tablet servers (one ephemeral node each), the cell's settings and a few
 * small named values such as the root location.
 *
 * A cell's address is "zk://HOST:PORT[,HOST:PORT...]/CELL"; everything the
 * cell keeps in ZooKeeper lies under /tabletfs/CELL:
 *
 *	/tabletfs/CELL			persistent, data = the settings text
 *	/tabletfs/CELL/servers/NAME	ephemeral, one per live tablet server
 *	/tabletfs/CELL/election/m-N	ephemeral sequential, one per candidate
 *	/tabletfs/CELL/values/NAME	persistent, coord_value_*()
 *
 * One struct coord is one ZooKeeper session.  Its lease (coord_lease_valid)
 * says whether the process may still act for the cell; once it has turned
 * false every call fails with -ENOLINK and the process must open a new
 * coord (a new session) to take part again.
 *
 * Return codes: 0, BT_NOTFOUND where a node may be absent, or a negative
 * code with a detail (bt_error_detail()):
 *	-EINVAL		a malformed address, name or argument
 *	-ENOLINK	the session is lost (lease lapsed or ZooKeeper expired it)
 *	-ENOTCONN	ZooKeeper was unreachable for this request: retry
 *	-ETIMEDOUT	the deadline passed, or ZooKeeper timed the operation out
 *	-EEXIST		the node exists already
 *	-ENOENT		the cell (or a parent) does not exist
 *	-ESTALE		a compare-and-set saw another version
 *	BT_ETOOBIG	data beyond COORD_VALUE_MAX
 *	-ENOMEM, -EIO	and other -errno for the rest
 * Every call returns within about the session timeout: the ZooKeeper client
 * fails a request pending on a connection that gets no reply for 2/3 of
 * it.  Names (servers, values) are 1-64 of [A-Za-z0-9_.-], not "." or "..".
 *
 * Thread safety: every function may be called from any thread on one
 * struct coord, except coord_close, which must come after every other call
 * on it has returned.  Callbacks run on the coord's own thread, one at a
 * time; they must not block long (they delay the others and the lost
 * callback), and must not call coord_close.  They may call the other
 * functions: the coord's thread is not ZooKeeper's.
 */
#ifndef TABLETFS_COORD_COORD_H
#define TABLETFS_COORD_COORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tabletfs_error.h"

#define COORD_NAME_MAX		64	/* a cell, server or value name */
#define COORD_HOSTS_MAX		1024	/* "H:P,H:P" of an address */
#define COORD_VALUE_MAX		65536	/* the data of a value or node */
/* The session timeout a cell's processes ask for (ZooKeeper negotiates it
 * into [2, 20] ticks of its server). */
#define COORD_SESSION_TIMEOUT_MS	10000

/* CLOCK_MONOTONIC in nanoseconds: the clock deadlines are given on. */
int64_t coord_now_ns(void);

/*
 * Whether s is a cell address rather than a store path: it starts with
 * "zk://".
 */
bool coord_address_is_cell(const char *s);

/*
 * Parse "zk://H:P[,H:P...]/CELL" into hosts ("H:P,H:P", at most
 * hosts_size - 1 bytes) and the cell name (at most cell_size - 1 bytes).
 * Each host is a non-empty name or IPv4 address without ':', each port
 * 1-65535.  Returns 0, or -EINVAL with a detail naming what is wrong.
 */
int coord_address_parse(const char *address, char *hosts, size_t hosts_size,
    char *cell, size_t cell_size);

struct coord;

/*
 * Open a session with the cell's ZooKeeper, asking for session_timeout_ms
 * (the server may negotiate another: coord_session_timeout_ms), and wait
 * until it is connected or deadline_ns (coord_now_ns's clock) passes:
 * -ETIMEDOUT then.  The cell need not exist (coord_cell_create).
 * 0 and *out, or a negative code.
 */
int coord_open(const char *address, int session_timeout_ms,
    int64_t deadline_ns, struct coord **out);

/*
 * Close the session: ZooKeeper deletes its ephemeral nodes at once (its
 * server registration, its election candidate).  Accepts NULL.  No
 * callback runs after it returns.
 */
void coord_close(struct coord *c);

/* The session timeout ZooKeeper negotiated, in milliseconds. */
int coord_session_timeout_ms(const struct coord *c);

/* The cell's name, as parsed from the address. */
const char *coord_cell_name(const struct coord *c);

/*
 * THE LEASE.  True while this process may still act for the cell.  It turns
 * false on this process's own clock no later than the moment ZooKeeper may
 * expire the session, even while ZooKeeper is unreachable (the client
 * reports an expiry only once it reaches a server again).
 *
 * The coord's thread sends a cheap request (exists "/") every quarter of
 * the timeout T and, when the server answers, records as last_ok the time
 * taken before sending it; the lease holds while now < last_ok + 0.8 T.
 * The server received that request after last_ok, so it cannot expire the
 * session before last_ok + T; the 0.2 T left is the margin for the two
 * clocks' rates and for the caller to stop what it does.
 * Once false it stays false: the session is lost, every call returns
 * -ENOLINK and the lost callback runs, once.  The coord then closes its
 * ZooKeeper handle, so that the session ends even where ZooKeeper would
 * have let it live on (a paused server): its ephemeral nodes go when
 * ZooKeeper hears the close or expires the session.
 */
bool coord_lease_valid(struct coord *c);

/*
 * The time the lease lapses (coord_now_ns's clock), or 0 once it has.
 */
int64_t coord_lease_expiry_ns(struct coord *c);

/*
 * Call cb(arg) once, on the coord's thread, when the lease is lost (at once
 * if it already is).  Replaces an earlier callback, which will not run if
 * it has not yet; cb NULL removes it.
 */
void coord_on_lost(struct coord *c, void (*cb)(void *arg), void *arg);

/*
 * Create the cell: /tabletfs/CELL with the settings text (for example
 * "storage=DIR\n") and its empty servers, election and values, all in one
 * transaction.  -EEXIST if the cell exists.
 */
int coord_cell_create(struct coord *c, const char *settings);

/*
 * The cell's settings text in *settings (NUL-terminated; free() it).
 * BT_NOTFOUND when the cell does not exist.
 */
int coord_cell_settings(struct coord *c, char **settings);

/*
 * The storage= of the cell's settings (written by tabletctl init) into
 * out[0..size): 0, or -ENOENT when the cell does not exist, -EINVAL when
 * its settings name no storage, or the coord's error, with a detail.
 */
int coord_cell_storage(struct coord *c, char *out, size_t size);

/*
 * Register this process as tablet server NAME: the ephemeral node
 * /tabletfs/CELL/servers/NAME with data (for example its RPC address),
 * which lives as long as the session.  -EEXIST if a live server (or a
 * session of this name not yet expired) holds the name; -ENOENT when the
 * cell does not exist.
 */
int coord_server_register(struct coord *c, const char *name,
    const char *data);

/*
 * The names of the live tablet servers, sorted, in *names (*count of them;
 * free with coord_names_free).  -ENOENT when the cell does not exist.
 */
int coord_servers_list(struct coord *c, char ***names, size_t *count);
void coord_names_free(char **names, size_t count);

/*
 * A tablet server's data in *data (NUL-terminated; free()).  BT_NOTFOUND
 * when no server of that name is registered.
 */
int coord_server_get(struct coord *c, const char *name, char **data);

/*
 * Call cb(arg) on the coord's thread whenever the set of servers changes,
 * until coord_close.  The watch is armed before this returns, so a list
 * read after it sees every later change as a callback.  Changes close
 * together may come as one callback: read the list again in it or after.
 */
int coord_servers_watch(struct coord *c, void (*cb)(void *arg), void *arg);

/*
 * Stand in the master election (ZooKeeper's recipe: an ephemeral
 * sequential candidate node, the lowest leads, each candidate watches only
 * its predecessor) with data naming this candidate (its address).
 * Blocks until this process leads (0), its lease is lost (-ENOLINK) or
 * deadline_ns passes (-ETIMEDOUT; 0 = no deadline); a connection lost
 * while waiting is waited out, one lost while standing fails with
 * -ENOTCONN (stand again).  On failure the candidate withdraws: its node
 * is deleted (the delete is sent again after a lost connection, until
 * the lease is lost).  A leader stays one until its
 * lease is lost or coord_close; one election per coord (it asserts).
 */
int coord_master_elect(struct coord *c, const char *data,
    int64_t deadline_ns);

/*
 * The data of the candidate that leads now in *data (NUL-terminated;
 * free()), BT_NOTFOUND when nobody does.
 */
int coord_master_get(struct coord *c, char **data);

/*
 * Small persistent named values: /tabletfs/CELL/values/NAME, at most
 * COORD_VALUE_MAX bytes.
 * set creates or replaces the value.
 * set_if_version compares and sets: version is what coord_value_get
 * reported, or -1 for "must not exist yet"; -ESTALE when the value has
 * another version (or exists, for -1).
 * get returns a copy in *data (NUL-terminated past *len; free()), *len and
 * *version (either may be NULL); BT_NOTFOUND when absent (or when the cell
 * is).
 * set, and set_if_version with -1, return -ENOENT when the cell does not
 * exist; set_if_version with a version returns -ESTALE when the value does
 * not exist (any more).
 */
int coord_value_set(struct coord *c, const char *name, const void *data,
    size_t len);
int coord_value_set_if_version(struct coord *c, const char *name,
    const void *data, size_t len, int32_t version);
int coord_value_get(struct coord *c, const char *name, char **data,
    size_t *len, int32_t *version);

/*
 * Call cb(arg) on the coord's thread whenever the value NAME is created,
 * replaced or deleted, until coord_close; armed before this returns, as
 * coord_servers_watch.
 */
int coord_value_watch(struct coord *c, const char *name,
    void (*cb)(void *arg), void *arg);

#endif
