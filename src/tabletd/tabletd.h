/*
 * tabletd.h - the processes of a cell (docs/design.md section 5):
 * tabletd master CELL and tabletd server CELL.  main.c parses the command
 * line and runs one role until it is told to stop or loses its lease.
 */
#ifndef TABLETFS_TABLETD_TABLETD_H
#define TABLETFS_TABLETD_TABLETD_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "rpc/format.h"
#include "rpc/tabletfs.pb-c.h"
#include "util/mutex.h"

struct env;
struct server_tablet_load;

/* The session timeout asked of ZooKeeper (ms); a process that loses its
 * session for this long stops acting for the cell. */
#define TABLETD_SESSION_MS 4000

struct tabletd_options {
	const char *cell;	/* "zk://H:P[,H:P]/CELL" */
	const char *listen;	/* server: "HOST:PORT" ("127.0.0.1:0") */
	int session_ms;		/* 0: TABLETD_SESSION_MS */
	/* master: give tablets to every server, not the root's alone
	 * (docs/design.md section 5, "Tablets one by one"). */
	bool spread;
	/* master, spread: even out tablet counts alone, with no move or
	 * split by load (tabletd_balance.c). */
	bool balance_by_count;
	/* Set by SIGTERM/SIGINT: leave cleanly. */
	volatile sig_atomic_t *stop;
};

/*
 * Each role returns the process's exit status once stop is set (0) or
 * when it cannot go on (1, after one line on stderr).  A role that loses
 * its ZooKeeper lease exits at once, from the lease's callback, with
 * status TABLETD_EXIT_LEASE: it may no longer act for the cell, and
 * whatever it held (a store's lock) must be let go for the process that
 * takes over.
 */
#define TABLETD_EXIT_LEASE 3
/*
 * A server on RADOS storage whose client the cluster blocklisted (the
 * master fenced it to give the store to another) exits at once with
 * this status, from the call that found out (env_rados_on_fenced): its
 * writes fail from then on, so it must not go on answering.
 */
#define TABLETD_EXIT_FENCED 4
/*
 * A server whose store refuses writes until it is reopened (its commit
 * log failed: bt_stats' writes_refused) exits with this status, without
 * flushing, so that another server reopens the store and replays its
 * log (tabletd_server.c).
 */
#define TABLETD_EXIT_STORAGE 5
int tabletd_master_run(const struct tabletd_options *o);
int tabletd_server_run(const struct tabletd_options *o);

struct coord;
struct storage;

/*
 * What every process of the cell reads when it starts: the storage= of
 * the cell's settings (coord_cell_storage) into storage[0..size), parsed
 * into *st (util/storage.h: a directory or a RADOS pool), and the cell's
 * secret there (rpc_secret_read).  0, or a negative code
 * after one line on stderr saying what is wrong and, for a cell made
 * before secrets, how to give it one.
 */
int tabletd_cell_read(struct coord *c, const char *cell, char *storage,
    size_t size, struct storage *st, uint8_t secret[RPC_SECRET_SIZE]);

/*
 * The directory of the server at address ("HOST:PORT") serving under
 * epoch, relative to the cell's storage: "servers/HOST_PORT.EPOCH",
 * which holds its log/ and tmp/ (docs/design.md section 5).
 */
#define TABLETD_SERVERS_DIR "servers"
void tabletd_server_dir(const char *address, uint64_t epoch, char *dir,
    size_t size);

/*
 * One call of the master's to a server (tabletd_conns.c): request sent
 * as method over a connection of its own, made by connect_deadline (rpc_now_ns() time)
 * and answered by deadline; with reply_desc, the reply unpacked into
 * *reply (protobuf_c_message_free_unpacked() it).  0, the server's
 * status with its message as the detail, or the transport's error.
 */
int tabletd_call(const char *address, const uint8_t *secret, uint32_t method,
    const ProtobufCMessage *request, int64_t connect_deadline,
    int64_t deadline, const ProtobufCMessageDescriptor *reply_desc,
    ProtobufCMessage **reply);

/*
 * A tablet server's window on the load of its tablets (tabletd_load.c):
 * sampled by the server's main loop about once a second, reported in
 * every SERVE reply.  The mutex makes sample and report safe from any
 * thread.
 */
struct tabletd_load_window {
	struct mutex mu;
	struct tabletd_load_entry *entries;	/* the last sample */
	size_t count;
	int64_t sampled_ns;		/* rpc_now_ns() of the last sample */
};
int tabletd_load_window_init(struct tabletd_load_window *w);
void tabletd_load_window_release(struct tabletd_load_window *w);
/* Take a sample: every tablet served now (server_tablets_load()) at
 * now_ns.  0 or -ENOMEM (the window stays as it was). */
int tabletd_load_window_sample(struct tabletd_load_window *w,
    const struct server_tablet_load *list, size_t count, int64_t now_ns);
/* Set out->tablets to the last sample (each tablet's rate only once it
 * has one); free them with tabletd_load_report_free().  0 or -ENOMEM
 * (out then unchanged). */
int tabletd_load_window_report(struct tabletd_load_window *w,
    Tabletfs__ServeReply *out);
void tabletd_load_report_free(Tabletfs__ServeReply *out);

/* One tablet's load as its server reported it (TabletLoad). */
struct tabletd_tablet_load {
	uint64_t tablet_id;
	bool known;			/* requests_per_s is a figure */
	double requests_per_s;
	uint64_t memtable_bytes;
	uint64_t sstable_bytes;
};

/* A live server as the master sees it in one round. */
struct tabletd_live {
	char address[256];		/* "HOST:PORT" */
	char name[300];			/* "HOST:PORT#EPOCH", as it serves */
	uint64_t epoch;
	size_t tablets;			/* assigned to it (the round counts) */
	/* Its tablets' loads from its SERVE reply (free()). */
	struct tabletd_tablet_load *loads;
	size_t load_count;
};

/*
 * What the master keeps between rounds to balance by load
 * (tabletd_balance.c): the tablets it moved lately and the server each
 * came from, where it does not go back for a while (part of the
 * hysteresis), and what it last logged.
 */
#define TABLETD_BALANCE_RESTING 64
struct tabletd_balance {
	struct {
		uint64_t tablet_id;
		int64_t moved_ns;
		char from[300];		/* tabletd_live.name */
	} resting[TABLETD_BALANCE_RESTING];
	size_t resting_count;
	uint64_t hot_logged;		/* the tablet last said too hot */
	int64_t hot_ns;			/* and when */
	int64_t logged_ns;		/* when the figures were last logged */
	/* Set by a plan that found a tablet too hot to move: split
	 * all->tablets[split_tablet] at live[split_server]. */
	bool split_wanted;
	size_t split_tablet, split_server;
};

/*
 * The master's connections to its servers, one per address, kept for
 * its term (tabletd_conns.c): the calls of assignment go over them
 * rather than over a connection each.  Thread-safe.
 *
 * tabletd_conns_new() copies secret (RPC_SECRET_SIZE bytes): 0 or
 * -ENOMEM.  tabletd_conns_free() closes every connection; accepts NULL.
 *
 * tabletd_conns_retain() takes the round's live servers: it closes each
 * connection to an address none of them has, or that serves under
 * another name than when it was opened (the server restarted); 0 or
 * -ENOMEM.
 *
 * tabletd_conns_call() is tabletd_call() over the connection kept for
 * address, opened by connect_deadline when there is none (a call
 * meanwhile on a connection kept already needs no connect): the same
 * results.  A transport failure (the reply did not come by deadline,
 * the connection broke) closes the connection, for the next call to
 * open a new one; a server's status keeps it.
 *
 * tabletd_conns_call_own() is tabletd_call() over a connection of the
 * call's own (a server that does not answer its handshake by
 * connect_deadline is not waited for, as it would be on a kept one),
 * which tabletd_conns_abandon() reaches too.
 *
 * tabletd_conns_abandon() takes the addresses of the servers registered
 * now: every call waiting on a connection to another address returns
 * -ECONNABORTED at once, and the kept connection is closed.  The number
 * of connections it aborted.
 */
struct tabletd_conns;
int tabletd_conns_new(const uint8_t *secret, struct tabletd_conns **out);
void tabletd_conns_free(struct tabletd_conns *c);
int tabletd_conns_retain(struct tabletd_conns *c,
    const struct tabletd_live *live, size_t count);
int tabletd_conns_call(struct tabletd_conns *c, const char *address,
    uint32_t method, const ProtobufCMessage *request,
    int64_t connect_deadline, int64_t deadline,
    const ProtobufCMessageDescriptor *reply_desc, ProtobufCMessage **reply);
int tabletd_conns_call_own(struct tabletd_conns *c, const char *address,
    uint32_t method, const ProtobufCMessage *request,
    int64_t connect_deadline, int64_t deadline,
    const ProtobufCMessageDescriptor *reply_desc, ProtobufCMessage **reply);
size_t tabletd_conns_abandon(struct tabletd_conns *c, char *const *addresses,
    size_t count);

/* What one round of assignment works from (tabletd_assign.c). */
struct tabletd_assign {
	const char *root;		/* the root's server's address */
	const uint8_t *secret;
	struct env *env;		/* the cell's storage */
	const char *storage_path;	/* the store's path in env */
	struct tabletd_live *live;	/* the root's server among them */
	size_t count;
	/* The addresses of the servers registered in ZooKeeper that did
	 * not answer SERVE this round. */
	char *const *silent;
	size_t silent_count;
	bool rebuild;			/* a new master's first round */
	/* Tablets go to every live server, and are moved to even out
	 * their numbers; else to the root's server alone, unmoved. */
	bool spread;
	int64_t connect_ns;		/* to connect to a server, at most */
	/* The master's session: no assignment is sent once its lease has
	 * lapsed, nor run by the root after that (NULL: no lease). */
	struct coord *coord;
	/* The connections the round's calls go over, kept from round to
	 * round (NULL: a connection per call). */
	struct tabletd_conns *conns;
	/* The balancer's memory (NULL: balance by tablet count alone). */
	struct tabletd_balance *balance;
};

/* How the balancer evens out the servers this round. */
enum tabletd_balance_by {
	TABLETD_BALANCE_COUNT,	/* the cell is idle: tablet numbers */
	TABLETD_BALANCE_LOAD,	/* requests per second: the moves given */
	TABLETD_BALANCE_WAIT,	/* busy, some tablet's rate not known yet */
};

/* A move the balancer chose: all->tablets[tablet] from a->live[from] to
 * a->live[to]. */
struct tabletd_move {
	size_t tablet;
	size_t from, to;
	double requests_per_s;
};

/*
 * Plan one round of balancing by load (tabletd_balance.c, its numbered
 * rules): whether the cell is busy enough to balance by load and every
 * tablet's rate is known, and if so at most max moves, in order, in
 * moves[0..*count).  Reads b (the tablets at rest) and logs through
 * tabletd_log() what a move cannot help (a tablet that carries most of
 * a server's load), once per tablet.
 */
enum tabletd_balance_by tabletd_balance_plan(struct tabletd_balance *b,
    const struct tabletd_assign *a,
    const Tabletfs__CatalogAssignmentsReply *all, int64_t now_ns,
    struct tabletd_move *moves, size_t max, size_t *count);
/* Record that tablet moved from server from (a tabletd_live.name) at
 * now_ns: it does not go back there for a while. */
void tabletd_balance_moved(struct tabletd_balance *b, uint64_t tablet,
    const char *from, int64_t now_ns);

/*
 * Give every tablet whose server is not live to a live one, recovered
 * from the logs of the servers that are not (the file comment of
 * tabletd_assign.c), and even out their load (tabletd_balance.c).  0
 * once the round ran (a tablet that could not be given is logged and
 * tried again next round), or the error that kept it from reading the
 * assignments.
 */
int tabletd_assign_round(const struct tabletd_assign *a);

/* Sleep ms milliseconds. */
void tabletd_pause_ms(int ms);

/* One line on stderr: "tabletd ROLE[pid]: ...". */
void tabletd_log(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

#endif
