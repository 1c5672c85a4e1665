/*
 * env_rados_dir.c - directories and renames of the RADOS env over a pool
 * whose object names are flat.
 *
 * A file "a/b/f" is the object "a/b/f"; a directory "a/b" is the empty
 * marker object "a/b/", made by env_dir_create() and removed by
 * env_path_remove() once nothing is under it.  A listing scans the pool
 * (rados_nobjects_list) for the names under "a/b/" and reports each
 * next component once, so a subdirectory shows whether or not its
 * marker exists.  Creates and removes are durable when they return, so
 * env_dir_sync() has nothing to do.
 *
 * Why not an index object per directory (entries in its omap, a rename
 * one atomic omap update)?  Every create and remove would then be two
 * ops on two objects, with no transaction across them: a crash between
 * leaves the index naming a missing file or missing a present one, and
 * a repair pass is needed at open.  A scan is always exact; it costs one
 * pass over the pool's object names (PGLS, 1024 names per round trip)
 * per listing, and the engine lists only at open, at check and in the
 * master's garbage collection, not per operation.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/alloc.h"
#include "util/env.h"
#include "util/env_rados_int.h"
#include "util/error.h"

char *
rados_oid(const char *path)
{
	size_t n = strlen(path), i = 0, o = 0;
	char *oid;

	if ((oid = bt_malloc(n + 1)) == NULL)
		return NULL;
	while (i < n) {
		/* At the start of a component: skip "/" and "./". */
		if (path[i] == '/') {
			i++;
			continue;
		}
		if (path[i] == '.' && (i + 1 == n || path[i + 1] == '/')) {
			i++;
			continue;
		}
		if (o > 0)
			oid[o++] = '/';
		while (i < n && path[i] != '/')
			oid[o++] = path[i++];
	}
	oid[o] = '\0';
	return oid;
}

char *
rados_dir_oid(const char *oid)
{
	size_t n = strlen(oid);
	char *dir;

	if ((dir = bt_malloc(n + 2)) == NULL)
		return NULL;
	memcpy(dir, oid, n);
	dir[n] = '/';
	dir[n + 1] = '\0';
	return dir;
}

/* The names under a directory, collected before fn sees any. */
struct rados_names {
	char **v;
	size_t n, cap;
};

static void
rados_names_free(struct rados_names *l)
{
	for (size_t i = 0; i < l->n; i++)
		bt_free(l->v[i]);
	bt_free(l->v);
}

static int
rados_names_add(struct rados_names *l, const char *name, size_t len)
{
	char **v;

	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		if ((v = bt_realloc(l->v, l->cap * sizeof(*v))) == NULL)
			return -ENOMEM;
		l->v = v;
	}
	if ((l->v[l->n] = bt_malloc(len + 1)) == NULL)
		return -ENOMEM;
	memcpy(l->v[l->n], name, len);
	l->v[l->n][len] = '\0';
	l->n++;
	return 0;
}

static int
rados_names_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Scan the pool for the objects under prefix, a directory's marker name
 * ("a/b/"; "" for the root).  *marker: whether the marker itself exists;
 * *file: whether an object is named as the directory (prefix less its
 * "/"); *others: how many objects are under it besides the marker.
 * With names set, add each one's next component after prefix (unsorted,
 * repeated); with names NULL, stop at the first of them.
 */
static int
rados_scan(struct rados_env *env, const char *prefix,
    struct rados_names *names, bool *marker, bool *file, size_t *others)
{
	size_t plen = strlen(prefix);
	rados_list_ctx_t ctx;
	const char *name, *rest, *slash;
	int rc;

	*marker = *file = false;
	*others = 0;
	if ((rc = rados_nobjects_list_open(env->io, &ctx)) < 0)
		return rados_error(env, rc, prefix, "list objects");
	while ((rc = rados_nobjects_list_next(ctx, &name, NULL, NULL)) == 0) {
		if (strncmp(name, prefix, plen) != 0) {
			if (plen > 0 && strlen(name) == plen - 1 &&
			    strncmp(name, prefix, plen - 1) == 0)
				*file = true;
			continue;
		}
		rest = name + plen;
		if (*rest == '\0') {
			*marker = true;
			continue;
		}
		(*others)++;
		if (names == NULL)
			break;
		slash = strchr(rest, '/');
		if ((rc = rados_names_add(names, rest, slash != NULL ?
		    (size_t)(slash - rest) : strlen(rest))) < 0)
			break;
	}
	rados_nobjects_list_close(ctx);
	if (rc == -ENOENT || (rc == 0 && names == NULL))
		rc = 0;
	else if (rc < 0 && rc != -ENOMEM)
		rc = rados_error(env, rc, prefix, "list objects");
	return rc;
}

int
rados_dir_list(struct env *base, const char *path,
    int (*fn)(void *arg, const char *name), void *arg)
{
	struct rados_env *env = (struct rados_env *)base;
	struct rados_names names = { 0 };
	char *oid, *prefix;
	size_t others;
	bool marker, file;
	int rc;

	if ((oid = rados_oid(path)) == NULL)
		return -ENOMEM;
	prefix = *oid == '\0' ? bt_strdup("") : rados_dir_oid(oid);
	if (prefix == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	if ((rc = rados_scan(env, prefix, &names, &marker, &file,
	    &others)) < 0)
		goto out_names;
	if (!marker && others == 0 && *oid != '\0') {
		rc = rados_error(env, file ? -ENOTDIR : -ENOENT, path, "list");
		goto out_names;
	}
	if (names.n > 0)
		qsort(names.v, names.n, sizeof(*names.v), rados_names_cmp);
	for (size_t i = 0; i < names.n; i++) {
		if (i > 0 && strcmp(names.v[i], names.v[i - 1]) == 0)
			continue;
		if ((rc = fn(arg, names.v[i])) != 0)
			break;
	}
out_names:
	rados_names_free(&names);
	bt_free(prefix);
out:
	bt_free(oid);
	return rc;
}

/* A marker object per directory; over a file, -ENOTDIR as mkdir(2). */
int
rados_dir_create(struct env *base, const char *path)
{
	struct rados_env *env = (struct rados_env *)base;
	rados_write_op_t op;
	char *oid, *dir = NULL;
	uint64_t size;
	time_t mtime;
	int rc;

	if ((oid = rados_oid(path)) == NULL)
		return -ENOMEM;
	if (*oid == '\0') {
		rc = 0;
		goto out;
	}
	rc = rados_stat(env->io, oid, &size, &mtime);
	if (rc == 0) {
		rc = rados_error(env, -ENOTDIR, path, "mkdir");
		goto out;
	}
	if (rc != -ENOENT) {
		rc = rados_error(env, rc, path, "stat");
		goto out;
	}
	if ((dir = rados_dir_oid(oid)) == NULL ||
	    (op = rados_create_write_op()) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	rados_write_op_create(op, LIBRADOS_CREATE_IDEMPOTENT, NULL);
	rc = rados_write_op_operate(op, env->io, dir, NULL, 0);
	rados_release_write_op(op);
	if (rc < 0)
		rc = rados_error(env, rc, path, "mkdir");
out:
	bt_free(dir);
	bt_free(oid);
	return rc;
}

/* Every create, remove and rename was durable when it returned. */
int
rados_dir_sync(struct env *base, const char *path)
{
	(void)base;
	(void)path;
	return 0;
}

/* A file's object, or a directory's marker once nothing is under it. */
int
rados_path_remove(struct env *base, const char *path)
{
	struct rados_env *env = (struct rados_env *)base;
	char *oid, *dir = NULL;
	size_t others;
	bool marker, file;
	int rc;

	if ((oid = rados_oid(path)) == NULL)
		return -ENOMEM;
	if (*oid == '\0') {
		rc = rados_error(env, -EBUSY, path, "remove");
		goto out;
	}
	if ((rc = rados_remove(env->io, oid)) != -ENOENT) {
		if (rc < 0)
			rc = rados_error(env, rc, path, "remove");
		goto out;
	}
	if ((dir = rados_dir_oid(oid)) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	if ((rc = rados_scan(env, dir, NULL, &marker, &file, &others)) < 0)
		goto out;
	if (others > 0)
		rc = rados_error(env, -ENOTEMPTY, path, "remove");
	else if (!marker)
		rc = rados_error(env, -ENOENT, path, "remove");
	else if ((rc = rados_remove(env->io, dir)) < 0)
		rc = rados_error(env, rc, path, "remove");
out:
	bt_free(dir);
	bt_free(oid);
	return rc;
}

/*
 * Copy from's object over to's and remove from's (RADOS_RENAME_ATOMIC
 * says when the copy is atomic).  A crash between the copy and the
 * remove leaves both names with the same bytes, which the engine's
 * sweeps of tmp/ clean up as they clean an SSTable never renamed.
 */
int
rados_path_rename(struct env *base, const char *from, const char *to)
{
	struct rados_env *env = (struct rados_env *)base;
	char *src, *dst = NULL, *buf = NULL;
	size_t len, chunk;
	uint64_t size, done;
	time_t mtime;
	int rc, r;

	if ((src = rados_oid(from)) == NULL ||
	    (dst = rados_oid(to)) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	if ((rc = rados_stat(env->io, src, &size, &mtime)) < 0) {
		if (rc == -ENOENT && rados_dir_exists(env, src) == 1)
			rc = -EISDIR;	/* directories are not renamed */
		rc = bt_error_set(rc, "%s: rename to %s: %s", from, to,
		    strerror(-rc));
		goto out;
	}
	if (strcmp(src, dst) == 0)
		goto out;
	if ((rc = rados_dir_exists(env, dst)) != 0) {
		rc = bt_error_set(rc < 0 ? rc : -EISDIR, "%s: rename to %s: "
		    "%s", from, to, strerror(rc < 0 ? -rc : EISDIR));
		goto out;
	}
	len = size < RADOS_RENAME_ATOMIC ? (size_t)size : RADOS_RENAME_ATOMIC;
	if ((buf = bt_malloc(len > 0 ? len : 1)) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	for (done = 0; done == 0 || done < size; done += chunk) {
		chunk = size - done < len ? (size_t)(size - done) : len;
		r = rados_read(env->io, src, buf, chunk, done);
		if (r == -ESHUTDOWN) {
			rc = rados_error(env, r, from, "rename");
			goto out;
		}
		if (r < 0 || (size_t)r != chunk) {
			rc = bt_error_set(r < 0 ? r : -EIO, "%s: rename to "
			    "%s: read at offset %" PRIu64 ": %s", from, to,
			    done, r < 0 ? strerror(-r) : "changed under the "
			    "copy");
			goto out;
		}
		r = done == 0 ? rados_write_full(env->io, dst, buf, chunk) :
		    rados_write(env->io, dst, buf, chunk, done);
		if (r == -ESHUTDOWN) {
			rc = rados_error(env, r, from, "rename");
			goto out;
		}
		if (r < 0) {
			rc = bt_error_set(r, "%s: rename to %s: write at "
			    "offset %" PRIu64 ": %s", from, to, done,
			    strerror(-r));
			goto out;
		}
		if (size == 0)
			break;
	}
	if ((rc = rados_remove(env->io, src)) < 0)
		rc = rados_error(env, rc, from, "remove after the copy of a rename");
out:
	bt_free(buf);
	bt_free(dst);
	bt_free(src);
	return rc;
}
