/*
 * env_fault_int.h - what the fault-injecting environment's files share:
 * the in-memory tree of nodes (env_fault_tree.c), the env and its files
 * (env_fault.c), and power loss and damage (env_fault_power.c).  Calls go
 * env_fault_power.c -> env_fault.c -> env_fault_tree.c, never back.
 *
 * One mutex, fault_env.mu, guards the tree and the env's counters; every
 * function below that takes a node or the env is called with it held.
 */
#ifndef TABLETFS_UTIL_ENV_FAULT_INT_H
#define TABLETFS_UTIL_ENV_FAULT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"
#include "util/env.h"
#include "util/mutex.h"

/* Files live in memory: refuse to grow one past this by truncation. */
#define FAULT_MAX_FILE	((uint64_t)1 << 40)

struct fault_node;

/* One name in a directory; a slot is NULL where the name is absent. */
struct fault_entry {
	char *name;
	struct fault_node *now;
	struct fault_node *durable;	/* as of the last dir sync */
};

struct fault_node {
	int refs;		/* entry slots, open files and locks */
	bool is_dir;
	/* file */
	struct buf data;
	uint64_t synced;	/* bytes of data that survive power loss */
	struct buf shadow;	/* the synced bytes, while overwritten */
	bool overwritten;	/* data differs from shadow below synced */
	/* directory: entries sorted by name */
	struct fault_entry *v;
	size_t n, cap;
};

struct fault_trigger {
	long countdown;		/* calls until the failure; 0: disarmed */
	int rc;
	bool sticky;
	bool tripped;		/* a sticky failure is in force */
};

struct fault_lock {
	struct env_lock base;
	struct fault_node *node;
	struct fault_lock *next;
};

struct fault_env {
	struct env base;
	struct mutex mu;
	struct fault_node *root;
	struct fault_trigger triggers[ENV_FAULT_RENAME + 1];
	uint64_t clock;		/* 0: the real clock */
	uint64_t sync_delay;	/* micros added to each file sync */
	uint64_t available;	/* what env_path_available() reports */
	struct env_fault_stats stats;
	struct fault_lock *locks;
};

struct fault_file {
	struct env_file base;
	struct fault_node *node;
	bool writable;
};

/* The fault env behind env, or NULL when env is another kind. */
struct fault_env *fault_env_of(struct env *env);
/* Set and return rc with the detail "path: what: strerror(rc)". */
int fault_error(int rc, const char *path, const char *what);

/* A new node with one reference; NULL when memory runs out. */
struct fault_node *fault_node_new(bool is_dir);
/* Take and drop a reference; both accept NULL. */
void fault_node_ref(struct fault_node *node);
void fault_node_unref(struct fault_node *node);

/* What name (len bytes) refers to now in dir, or NULL. */
struct fault_node *fault_dir_get(struct fault_node *dir, const char *name,
    size_t len);
/* Make name refer to node now (taking a reference).  0 or -ENOMEM. */
int fault_dir_set(struct fault_node *dir, const char *name, size_t len,
    struct fault_node *node);
/* Remove name from dir now; it stays in the durable slot if synced. */
void fault_dir_unset(struct fault_node *dir, const char *name, size_t len);
/* Drop entries that are absent both now and durably. */
void fault_dir_compact(struct fault_node *dir);
/* Whether no name refers to anything now in dir. */
bool fault_dir_is_empty(struct fault_node *dir);

/*
 * Split path into its parent directory and last name.  Empty components
 * and "." are skipped; a path with no name left is the root, returned as
 * *parent = NULL.  -ENOENT or -ENOTDIR when a directory on the way is
 * missing or is a file (no detail set: callers name the operation).
 */
int fault_walk(struct fault_env *e, const char *path,
    struct fault_node **parent, const char **name, size_t *len);
/* The node at path, or -ENOENT / -ENOTDIR. */
int fault_find(struct fault_env *e, const char *path,
    struct fault_node **out);

#endif
