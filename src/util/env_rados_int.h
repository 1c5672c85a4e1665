/*
 * env_rados_int.h - what the two files of the RADOS env share: the env
 * and file structs, how a path becomes an object name, and the error
 * helper.  env_rados.c connects and does files and locks;
 * env_rados_dir.c emulates directories and renames over the flat object
 * namespace.  Only built with librados (configure's HAVE_RADOS).
 */
#ifndef TABLETFS_UTIL_ENV_RADOS_INT_H
#define TABLETFS_UTIL_ENV_RADOS_INT_H

#include <rados/librados.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/env.h"

/*
 * The most bytes one read or write op carries.  The OSD refuses a write
 * message over osd_max_write_size (90 MB by default) with -EMSGSIZE, and
 * rados_read() returns its count as an int; larger calls are cut into
 * ops of at most this (env_rados_new() lowers it below the cluster's
 * osd_max_write_size if that is smaller).
 */
#define RADOS_OP_MAX		((size_t)64 << 20)

/*
 * A rename copies the object through the client (librados' C API has no
 * server-side copy).  A file of at most this many bytes is copied in one
 * write_full op, which replaces the target atomically, as rename(2)
 * does; a larger one is copied in pieces, so that a crash part way
 * leaves a partial target beside the intact source (the engine renames
 * large files, SSTables, only onto new names).
 */
#define RADOS_RENAME_ATOMIC	((size_t)16 << 20)

/* The cls_lock name under which env_lock() takes its locks. */
#define RADOS_LOCK_NAME		"tabletfs"

struct rados_env {
	struct env base;
	rados_t cluster;
	rados_ioctx_t io;
	char *pool;
	uint64_t max_object;	/* osd_max_object_size */
	size_t max_op;		/* bytes per read or write op */
	atomic_uint_fast64_t cookies;	/* lock cookies handed out */
	/* env_rados_on_fenced(): set before the env is shared. */
	void (*fenced)(void *arg);
	void *fenced_arg;
	atomic_bool fenced_told;	/* fenced has been called */
};

struct rados_file {
	struct env_file base;
	char *oid;
	bool writable;
};

/*
 * The object name of path, as a new string (bt_free it): the path
 * without leading "/" and "./", repeated "/" and a trailing "/", so that
 * "/s/a", "s/a" and "s//a/" name one object (as in the in-memory env).
 * "" is the root, which is a directory.  NULL when memory runs out.
 */
char *rados_oid(const char *path);

/* The object that marks oid as a directory ("oid/"); NULL: no memory. */
char *rados_dir_oid(const char *oid);

/*
 * Record a failed librados call (rc < 0) with its path; returns rc.
 * -ESHUTDOWN (this client is blocklisted) also calls the env's fenced
 * callback, the first time (env_rados_on_fenced()).
 */
int rados_error(struct rados_env *env, int rc, const char *path,
    const char *what);

/* Whether env is a RADOS env (env_rados_new()'s). */
bool rados_env_is(const struct env *env);

/* Whether the directory marker of oid exists: 1, 0 or a negative error. */
int rados_dir_exists(struct rados_env *env, const char *oid);

int rados_path_rename(struct env *env, const char *from, const char *to);
int rados_path_remove(struct env *env, const char *path);
int rados_dir_create(struct env *env, const char *path);
int rados_dir_sync(struct env *env, const char *path);
int rados_dir_list(struct env *env, const char *path,
    int (*fn)(void *arg, const char *name), void *arg);

#endif
