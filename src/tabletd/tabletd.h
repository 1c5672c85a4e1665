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

#include "rpc/format.h"

/* The session timeout asked of ZooKeeper (ms); a process that loses its
 * session for this long stops acting for the cell. */
#define TABLETD_SESSION_MS 4000

struct tabletd_options {
	const char *cell;	/* "zk://H:P[,H:P]/CELL" */
	const char *listen;	/* server: "HOST:PORT" ("127.0.0.1:0") */
	int session_ms;		/* 0: TABLETD_SESSION_MS */
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

/* Sleep ms milliseconds. */
void tabletd_pause_ms(int ms);

/* One line on stderr: "tabletd ROLE[pid]: ...". */
void tabletd_log(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

#endif
