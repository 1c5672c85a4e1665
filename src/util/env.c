/*
 * env.c - the file environment's public functions: each one dispatches
 * through env->ops to the implementation (env_posix.c, env_fault.c,
 * env_rados.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <string.h>

#include "util/alloc.h"
#include "util/env.h"
#include "util/error.h"

void
env_free(struct env *env)
{
	if (env != NULL)
		env->ops->free(env);
}

int
env_file_open(struct env *env, const char *path, enum env_open_mode mode,
    struct env_file **out)
{
	return env->ops->file_open(env, path, mode, out);
}

int
env_file_read_at(struct env_file *f, uint64_t offset, void *dst, size_t n,
    size_t *got)
{
	return f->env->ops->file_read_at(f, offset, dst, n, got);
}

/*
 * Read exactly n bytes.  The implementations return short counts only at
 * end of file, but loop anyway so that a short read is never mistaken for
 * a short file.
 */
int
env_file_read_exact(struct env_file *f, uint64_t offset, void *dst, size_t n)
{
	uint8_t *p = dst;
	size_t done = 0, got;
	int rc;

	while (done < n) {
		if ((rc = env_file_read_at(f, offset + done, p + done,
		    n - done, &got)) < 0)
			return rc;
		if (got == 0)
			return bt_error_set(BT_ECORRUPT,
			    "%s: file ends at offset %" PRIu64
			    ", wanted %zu bytes at offset %" PRIu64,
			    f->path, offset + done, n, offset);
		done += got;
	}
	return 0;
}

int
env_file_append(struct env_file *f, const void *p, size_t n)
{
	return f->env->ops->file_append(f, p, n);
}

int
env_file_write_at(struct env_file *f, uint64_t offset, const void *p,
    size_t n)
{
	return f->env->ops->file_write_at(f, offset, p, n);
}

/*
 * Where the env has no parts write (RADOS, where each write is a round
 * trip to the OSDs), the parts are joined and written with one write,
 * as one buffer was before parts existed.
 */
int
env_file_write_parts_at(struct env_file *f, uint64_t offset,
    const struct slice *parts, size_t count)
{
	size_t n = 0, at = 0;
	uint8_t *joined;
	int rc;

	if (f->env->ops->file_write_parts_at != NULL)
		return f->env->ops->file_write_parts_at(f, offset, parts,
		    count);
	if (count == 1)
		return f->env->ops->file_write_at(f, offset, parts[0].p,
		    parts[0].n);
	for (size_t i = 0; i < count; i++) {
		if (parts[i].n > SIZE_MAX - n)
			return bt_error_set(-EFBIG, "%s: parts too big to "
			    "write", f->path);
		n += parts[i].n;
	}
	if ((joined = bt_malloc(n > 0 ? n : 1)) == NULL)
		return bt_error_set(-ENOMEM, "%s: no memory to join %zu "
		    "bytes to write", f->path, n);
	for (size_t i = 0; i < count; i++) {
		if (parts[i].n > 0)
			memcpy(joined + at, parts[i].p, parts[i].n);
		at += parts[i].n;
	}
	rc = f->env->ops->file_write_at(f, offset, joined, n);
	bt_free(joined);
	return rc;
}

int
env_file_sync(struct env_file *f)
{
	return f->env->ops->file_sync(f);
}

int
env_file_start_writeback(struct env_file *f, uint64_t offset, uint64_t len)
{
	return f->env->ops->file_start_writeback(f, offset, len);
}

int
env_file_truncate(struct env_file *f, uint64_t size)
{
	return f->env->ops->file_truncate(f, size);
}

int
env_file_allocate(struct env_file *f, uint64_t offset, uint64_t len)
{
	return f->env->ops->file_allocate(f, offset, len);
}

int
env_file_size(struct env_file *f, uint64_t *size)
{
	return f->env->ops->file_size(f, size);
}

int
env_file_close(struct env_file *f)
{
	if (f == NULL)
		return 0;
	return f->env->ops->file_close(f);
}

int
env_path_size(struct env *env, const char *path, uint64_t *size)
{
	return env->ops->path_size(env, path, size);
}

int
env_path_available(struct env *env, const char *path, uint64_t *bytes)
{
	return env->ops->path_available(env, path, bytes);
}

int
env_path_capacity(struct env *env, const char *path, uint64_t *bytes)
{
	return env->ops->path_capacity(env, path, bytes);
}

int
env_path_space(struct env *env, const char *path, struct env_space *out)
{
	int rc;

	if (env->ops->path_space != NULL)
		return env->ops->path_space(env, path, out);
	if ((rc = env_path_capacity(env, path, &out->total)) < 0 ||
	    (rc = env_path_available(env, path, &out->available)) < 0)
		return rc;
	out->free = out->available;
	out->block_size = 4096;
	return 0;
}

int
env_path_rename(struct env *env, const char *from, const char *to)
{
	return env->ops->path_rename(env, from, to);
}

int
env_path_remove(struct env *env, const char *path)
{
	return env->ops->path_remove(env, path);
}

int
env_dir_create(struct env *env, const char *path)
{
	return env->ops->dir_create(env, path);
}

int
env_dir_sync(struct env *env, const char *path)
{
	return env->ops->dir_sync(env, path);
}

int
env_dir_list(struct env *env, const char *path,
    int (*fn)(void *arg, const char *name), void *arg)
{
	return env->ops->dir_list(env, path, fn, arg);
}

int
env_lock(struct env *env, const char *path, struct env_lock **out)
{
	return env->ops->lock(env, path, out);
}

void
env_unlock(struct env_lock *lock)
{
	if (lock != NULL)
		lock->env->ops->unlock(lock);
}

uint64_t
env_now_micros(struct env *env)
{
	return env->ops->now_micros(env);
}

char *
env_path_parent(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir;
	size_t n;

	if (slash == NULL)
		return bt_strdup(".");
	n = slash == path ? 1 : (size_t)(slash - path);
	if ((dir = bt_malloc(n + 1)) == NULL)
		return NULL;
	memcpy(dir, path, n);
	dir[n] = '\0';
	return dir;
}

#ifndef HAVE_RADOS
/*
 * Built without librados: the one RADOS function still exists, so that
 * its callers need no conditional code of their own, and says why it
 * cannot work.
 */
int
env_rados_new(const char *conf, const char *pool, const char *client_id,
    struct env **out)
{
	(void)conf;
	(void)client_id;
	(void)out;
	return bt_error_set(-EOPNOTSUPP, "RADOS pool %s: tabletfs was built "
	    "without librados (install librados-dev, configure again)",
	    pool != NULL ? pool : "?");
}

/* No RADOS env can exist: every file is unbounded. */
uint64_t
env_max_file_size(const struct env *env)
{
	(void)env;
	return UINT64_MAX;
}

/* No RADOS env can exist: these are never reached with one. */
void
env_rados_on_fenced(struct env *env, void (*cb)(void *arg), void *arg)
{
	(void)env;
	(void)cb;
	(void)arg;
}

int
env_rados_client(struct env *env, char *out, size_t size)
{
	(void)env;
	(void)out;
	(void)size;
	return bt_error_set(-EINVAL, "not a RADOS env");
}

int
env_rados_lock_fence(struct env *env, const char *path, char *fenced,
    size_t size)
{
	(void)env;
	(void)fenced;
	(void)size;
	return bt_error_set(-EINVAL, "%s: fencing needs RADOS storage", path);
}
#endif
