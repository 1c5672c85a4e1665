/*
 * storage.h - where a cell's store lives, as its settings name it
 * (docs/design.md section 5, docs/rados.md): a directory every process
 * of the cell reaches, or a pool of a Ceph cluster.
 *
 *	/ABSOLUTE/DIR
 *	rados://POOL[/NAME][?conf=/PATH/ceph.conf][&id=CLIENT]
 *
 * On RADOS the store's files are the objects NAME/... of POOL (NAME
 * defaults to "tabletfs"), reached with the ceph.conf at conf (absent:
 * librados' own search, $CEPH_CONF or /etc/ceph/ceph.conf) as
 * client.CLIENT (absent: client.admin).  POOL, each component of NAME
 * and CLIENT are 1-63 of [A-Za-z0-9_.-], not "." or ".."; conf is an
 * absolute path without '?', '&', '#' or '%' (there is no escaping).
 * Each key appears at most once, in either order; nothing else is
 * accepted.
 */
#ifndef TABLETFS_UTIL_STORAGE_H
#define TABLETFS_UTIL_STORAGE_H

#include <limits.h>
#include <stdbool.h>

#define STORAGE_RADOS_SCHEME	"rados://"
#define STORAGE_RADOS_NAME	"tabletfs"	/* NAME when absent */
#define STORAGE_WORD_MAX	63	/* a pool, name component or client */
/* The store's lock, under its path (taken by server.c; on RADOS its
 * holder is who a cell's master fences). */
#define STORAGE_LOCK_FILE	"LOCK"

struct env;

struct storage {
	bool rados;
	/* The store's path in its env: the directory, or "/NAME" in the
	 * pool. */
	char path[PATH_MAX];
	char pool[STORAGE_WORD_MAX + 1];	/* RADOS only */
	char conf[PATH_MAX];			/* "": librados' default */
	char client_id[STORAGE_WORD_MAX + 1];	/* "": admin */
};

/* Whether s names RADOS storage (starts with "rados://"). */
bool storage_is_rados(const char *s);

/*
 * Parse a storage (the grammar above) into *out: 0, or -EINVAL with a
 * one-line detail naming what is wrong.
 */
int storage_parse(const char *s, struct storage *out);

/*
 * The env that reaches the storage: the local filesystem, or a new
 * client of the RADOS cluster (env_rados_new).  0 and *out (env_free
 * it), or the env's error with a detail.
 */
int storage_env_new(const struct storage *st, struct env **out);

#endif
