/*
 * env_fault.c - an in-memory filesystem that injects faults, for tests:
 * the env's operations over the tree of env_fault_tree.c, and the
 * triggers, clock and space that tests set (util/env.h).
 *
 * A file keeps its current content and how much of it was synced, and,
 * once a write at an offset changes synced bytes, a copy of the synced
 * content (the shadow) until the next sync.  A directory keeps, per name,
 * the node the name refers to now and the node it referred to at the
 * last dir sync, so that power loss (env_fault_power.c) can undo what was
 * not synced.  One mutex guards the tree.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/alloc.h"
#include "util/buf.h"
#include "util/env.h"
#include "util/env_fault_int.h"
#include "util/error.h"
#include "util/mutex.h"

static const struct env_ops fault_ops;

static const char *const fault_op_names[] = {
	[ENV_FAULT_APPEND] = "append",
	[ENV_FAULT_SYNC] = "sync",
	[ENV_FAULT_OPEN] = "open",
	[ENV_FAULT_RENAME] = "rename",
};

struct fault_env *
fault_env_of(struct env *env)
{
	return env->ops == &fault_ops ? (struct fault_env *)env : NULL;
}

int
fault_error(int rc, const char *path, const char *what)
{
	return bt_error_set(rc, "%s: %s: %s", path, what, bt_strerror(rc));
}

/* Count a call of op and say whether it is to fail, and with what. */
static int
fault_fire(struct fault_env *e, enum env_fault_op op, const char *path)
{
	struct fault_trigger *t = &e->triggers[op];

	mutex_assert_held(&e->mu);
	if (t->tripped)
		return fault_error(t->rc, path, "injected fault");
	if (t->countdown == 0 || --t->countdown > 0)
		return 0;
	t->tripped = t->sticky;
	return bt_error_set(t->rc, "%s: injected %s fault: %s", path,
	    fault_op_names[op], bt_strerror(t->rc));
}

static int
fault_file_open(struct env *env, const char *path, enum env_open_mode mode,
    struct env_file **out)
{
	struct fault_env *e = (struct fault_env *)env;
	struct fault_node *parent, *node;
	struct fault_file *f;
	const char *name;
	size_t len;
	int rc;

	if ((f = bt_calloc(1, sizeof(*f))) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	if ((f->base.path = bt_strdup(path)) == NULL) {
		rc = -ENOMEM;
		goto out_free;
	}
	f->base.env = env;
	f->writable = mode != ENV_READ;
	mutex_lock(&e->mu);
	if (f->writable && (rc = fault_fire(e, ENV_FAULT_OPEN, path)) < 0)
		goto out_unlock;
	if ((rc = fault_walk(e, path, &parent, &name, &len)) < 0) {
		rc = fault_error(rc, path, "open");
		goto out_unlock;
	}
	if (parent == NULL) {
		rc = fault_error(-EISDIR, path, "open");
		goto out_unlock;
	}
	node = fault_dir_get(parent, name, len);
	if (node != NULL && node->is_dir) {
		rc = fault_error(-EISDIR, path, "open");
		goto out_unlock;
	}
	if (node != NULL && (mode == ENV_CREATE ||
	    mode == ENV_CREATE_PRIVATE)) {
		rc = fault_error(-EEXIST, path, "open");
		goto out_unlock;
	}
	if (node == NULL && mode == ENV_READ) {
		rc = fault_error(-ENOENT, path, "open");
		goto out_unlock;
	}
	if (node == NULL) {
		if ((node = fault_node_new(false)) == NULL) {
			rc = -ENOMEM;
			goto out_unlock;
		}
		rc = fault_dir_set(parent, name, len, node);
		fault_node_unref(node);
		if (rc < 0)
			goto out_unlock;
	}
	fault_node_ref(node);
	f->node = node;
	mutex_unlock(&e->mu);
	*out = &f->base;
	return 0;
out_unlock:
	mutex_unlock(&e->mu);
	bt_free(f->base.path);
out_free:
	bt_free(f);
out:
	return rc;
}

static int
fault_file_read_at(struct env_file *base, uint64_t offset, void *dst,
    size_t n, size_t *got)
{
	struct fault_env *e = (struct fault_env *)base->env;
	struct fault_file *f = (struct fault_file *)base;
	struct buf *data = &f->node->data;
	size_t k = 0;

	mutex_lock(&e->mu);
	if (offset < data->n) {
		k = data->n - (size_t)offset;
		if (k > n)
			k = n;
		memcpy(dst, data->p + offset, k);
	}
	mutex_unlock(&e->mu);
	*got = k;
	return 0;
}

static int
fault_file_append(struct env_file *base, const void *p, size_t n)
{
	struct fault_env *e = (struct fault_env *)base->env;
	struct fault_file *f = (struct fault_file *)base;
	int rc;

	if (!f->writable)
		return fault_error(-EBADF, base->path, "append");
	mutex_lock(&e->mu);
	e->stats.appends++;
	if ((rc = fault_fire(e, ENV_FAULT_APPEND, base->path)) == 0 &&
	    (rc = buf_append(&f->node->data, p, n)) < 0)
		rc = fault_error(rc, base->path, "append");
	mutex_unlock(&e->mu);
	return rc;
}

/*
 * The first write below the synced length saves the synced content in the
 * shadow, so that power loss can put it back.  Parts are one write: a
 * fault fails them all, before any byte is written.
 */
static int
fault_file_write_parts_at(struct env_file *base, uint64_t offset,
    const struct slice *parts, size_t count)
{
	struct fault_env *e = (struct fault_env *)base->env;
	struct fault_file *f = (struct fault_file *)base;
	struct fault_node *node = f->node;
	struct buf *data = &node->data;
	size_t end, n = 0;
	int rc;

	if (!f->writable)
		return fault_error(-EBADF, base->path, "write at");
	for (size_t i = 0; i < count; i++) {
		if (parts[i].n > FAULT_MAX_FILE - n)
			return fault_error(-EFBIG, base->path, "write at");
		n += parts[i].n;
	}
	if (offset > FAULT_MAX_FILE || n > FAULT_MAX_FILE - offset)
		return fault_error(-EFBIG, base->path, "write at");
	end = (size_t)offset + n;
	mutex_lock(&e->mu);
	e->stats.appends++;
	if ((rc = fault_fire(e, ENV_FAULT_APPEND, base->path)) < 0)
		goto out;
	if (offset < node->synced && !node->overwritten) {
		if ((rc = buf_set(&node->shadow, data->p,
		    (size_t)node->synced)) < 0)
			goto out_error;
		node->overwritten = true;
	}
	if (end > data->n) {
		if ((rc = buf_reserve(data, end - data->n)) < 0)
			goto out_error;
		if (offset > data->n)
			memset(data->p + data->n, 0,
			    (size_t)offset - data->n);
		data->n = end;
	}
	for (size_t i = 0; i < count; i++) {
		if (parts[i].n > 0)
			memcpy(data->p + offset, parts[i].p, parts[i].n);
		offset += parts[i].n;
	}
	goto out;
out_error:
	rc = fault_error(rc, base->path, "write at");
out:
	mutex_unlock(&e->mu);
	return rc;
}

static int
fault_file_write_at(struct env_file *base, uint64_t offset, const void *p,
    size_t n)
{
	struct slice part = slice_make(p, n);

	return fault_file_write_parts_at(base, offset, &part, 1);
}

/*
 * Memory needs no reserving, so the file keeps its size: what it holds is
 * exactly what was written, and power loss tears appended bytes as it
 * always does.
 */
static int
fault_file_allocate(struct env_file *base, uint64_t offset, uint64_t len)
{
	struct fault_env *e = (struct fault_env *)base->env;
	struct fault_file *f = (struct fault_file *)base;

	if (!f->writable)
		return fault_error(-EBADF, base->path, "allocate");
	if (offset > FAULT_MAX_FILE || len > FAULT_MAX_FILE - offset)
		return fault_error(-EFBIG, base->path, "allocate");
	mutex_lock(&e->mu);
	e->stats.allocates++;
	mutex_unlock(&e->mu);
	return 0;
}

/* A hint without durability meaning: counted, nothing more. */
static int
fault_file_start_writeback(struct env_file *base, uint64_t offset,
    uint64_t len)
{
	struct fault_env *e = (struct fault_env *)base->env;
	struct fault_file *f = (struct fault_file *)base;

	(void)offset;
	(void)len;
	if (!f->writable)
		return fault_error(-EBADF, base->path, "start writeback");
	mutex_lock(&e->mu);
	e->stats.writebacks++;
	mutex_unlock(&e->mu);
	return 0;
}

/* The delay is slept outside the mutex, as a disk lets others work. */
static int
fault_file_sync(struct env_file *base)
{
	struct fault_env *e = (struct fault_env *)base->env;
	struct fault_file *f = (struct fault_file *)base;
	struct timespec pause;
	uint64_t delay;
	int rc;

	mutex_lock(&e->mu);
	e->stats.file_syncs++;
	if ((rc = fault_fire(e, ENV_FAULT_SYNC, base->path)) == 0) {
		f->node->synced = f->node->data.n;
		f->node->overwritten = false;
		buf_clear(&f->node->shadow);
	}
	delay = e->sync_delay;
	mutex_unlock(&e->mu);
	if (delay > 0) {
		pause.tv_sec = (time_t)(delay / 1000000);
		pause.tv_nsec = (long)(delay % 1000000) * 1000;
		while (nanosleep(&pause, &pause) < 0 && errno == EINTR)
			;
	}
	return rc;
}

/*
 * A cut below the synced length is taken as durable at once: the synced
 * length (and the shadow, if any) are cut too, so the cut bytes do not
 * come back on power loss.
 */
static int
fault_file_truncate(struct env_file *base, uint64_t size)
{
	struct fault_env *e = (struct fault_env *)base->env;
	struct fault_file *f = (struct fault_file *)base;
	struct buf *data = &f->node->data;
	int rc = 0;

	if (!f->writable)
		return fault_error(-EBADF, base->path, "truncate");
	if (size > FAULT_MAX_FILE)
		return fault_error(-EFBIG, base->path, "truncate");
	mutex_lock(&e->mu);
	if (size <= data->n) {
		data->n = (size_t)size;
		if (f->node->synced > size)
			f->node->synced = size;
		if (f->node->shadow.n > size)
			f->node->shadow.n = (size_t)size;
	} else if ((rc = buf_reserve(data, (size_t)size - data->n)) == 0) {
		memset(data->p + data->n, 0, (size_t)size - data->n);
		data->n = (size_t)size;
	}
	mutex_unlock(&e->mu);
	return rc;
}

static int
fault_file_size(struct env_file *base, uint64_t *size)
{
	struct fault_env *e = (struct fault_env *)base->env;
	struct fault_file *f = (struct fault_file *)base;

	mutex_lock(&e->mu);
	*size = f->node->data.n;
	mutex_unlock(&e->mu);
	return 0;
}

static int
fault_file_close(struct env_file *base)
{
	struct fault_env *e = (struct fault_env *)base->env;
	struct fault_file *f = (struct fault_file *)base;

	mutex_lock(&e->mu);
	fault_node_unref(f->node);
	mutex_unlock(&e->mu);
	bt_free(base->path);
	bt_free(f);
	return 0;
}

static int
fault_path_size(struct env *env, const char *path, uint64_t *size)
{
	struct fault_env *e = (struct fault_env *)env;
	struct fault_node *node;
	int rc;

	mutex_lock(&e->mu);
	if ((rc = fault_find(e, path, &node)) < 0)
		rc = fault_error(rc, path, "stat");
	else
		*size = node->is_dir ? 0 : node->data.n;
	mutex_unlock(&e->mu);
	return rc;
}

static int
fault_path_capacity(struct env *env, const char *path, uint64_t *bytes)
{
	(void)env;
	(void)path;
	*bytes = UINT64_MAX;
	return 0;
}

static int
fault_path_available(struct env *env, const char *path, uint64_t *bytes)
{
	struct fault_env *e = (struct fault_env *)env;

	(void)path;
	mutex_lock(&e->mu);
	*bytes = e->available;
	mutex_unlock(&e->mu);
	return 0;
}

/* Rename a file, replacing to if present.  Directories are not moved. */
static int
fault_path_rename(struct env *env, const char *from, const char *to)
{
	struct fault_env *e = (struct fault_env *)env;
	struct fault_node *fdir, *tdir, *node, *old;
	const char *fname, *tname;
	size_t flen, tlen;
	int rc;

	mutex_lock(&e->mu);
	e->stats.renames++;
	if ((rc = fault_fire(e, ENV_FAULT_RENAME, from)) < 0)
		goto out;
	if ((rc = fault_walk(e, from, &fdir, &fname, &flen)) < 0 ||
	    (rc = fault_walk(e, to, &tdir, &tname, &tlen)) < 0 ||
	    fdir == NULL || tdir == NULL) {
		rc = fault_error(rc < 0 ? rc : -EBUSY, from, "rename");
		goto out;
	}
	if ((node = fault_dir_get(fdir, fname, flen)) == NULL) {
		rc = fault_error(-ENOENT, from, "rename");
		goto out;
	}
	if (node->is_dir) {
		rc = bt_error_set(-EINVAL, "%s: rename: directories cannot be "
		    "renamed in the fault env", from);
		goto out;
	}
	if ((old = fault_dir_get(tdir, tname, tlen)) != NULL && old->is_dir) {
		rc = fault_error(-EISDIR, to, "rename");
		goto out;
	}
	if (old == node)
		goto out;
	fault_node_ref(node);
	if ((rc = fault_dir_set(tdir, tname, tlen, node)) == 0)
		fault_dir_unset(fdir, fname, flen);
	fault_node_unref(node);
out:
	mutex_unlock(&e->mu);
	return rc;
}

static int
fault_path_remove(struct env *env, const char *path)
{
	struct fault_env *e = (struct fault_env *)env;
	struct fault_node *parent, *node;
	const char *name;
	size_t len;
	int rc;

	mutex_lock(&e->mu);
	if ((rc = fault_walk(e, path, &parent, &name, &len)) < 0) {
		rc = fault_error(rc, path, "remove");
		goto out;
	}
	if (parent == NULL) {
		rc = fault_error(-EBUSY, path, "remove");
		goto out;
	}
	if ((node = fault_dir_get(parent, name, len)) == NULL) {
		rc = fault_error(-ENOENT, path, "remove");
		goto out;
	}
	if (node->is_dir && !fault_dir_is_empty(node)) {
		rc = fault_error(-ENOTEMPTY, path, "remove");
		goto out;
	}
	fault_dir_unset(parent, name, len);
out:
	mutex_unlock(&e->mu);
	return rc;
}

static int
fault_dir_create(struct env *env, const char *path)
{
	struct fault_env *e = (struct fault_env *)env;
	struct fault_node *parent, *node;
	const char *name;
	size_t len;
	int rc;

	mutex_lock(&e->mu);
	if ((rc = fault_walk(e, path, &parent, &name, &len)) < 0) {
		rc = fault_error(rc, path, "mkdir");
		goto out;
	}
	if (parent == NULL)
		goto out;
	if ((node = fault_dir_get(parent, name, len)) != NULL) {
		if (!node->is_dir)
			rc = fault_error(-ENOTDIR, path, "mkdir");
		goto out;
	}
	if ((node = fault_node_new(true)) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	rc = fault_dir_set(parent, name, len, node);
	fault_node_unref(node);
out:
	mutex_unlock(&e->mu);
	return rc;
}

/* Make the directory's present entries its durable ones. */
static int
fault_dir_sync(struct env *env, const char *path)
{
	struct fault_env *e = (struct fault_env *)env;
	struct fault_node *dir;
	size_t i;
	int rc;

	mutex_lock(&e->mu);
	e->stats.dir_syncs++;
	if ((rc = fault_fire(e, ENV_FAULT_SYNC, path)) < 0)
		goto out;
	if ((rc = fault_find(e, path, &dir)) < 0) {
		rc = fault_error(rc, path, "dir sync");
		goto out;
	}
	if (!dir->is_dir) {
		rc = fault_error(-ENOTDIR, path, "dir sync");
		goto out;
	}
	for (i = 0; i < dir->n; i++) {
		fault_node_ref(dir->v[i].now);
		fault_node_unref(dir->v[i].durable);
		dir->v[i].durable = dir->v[i].now;
	}
	fault_dir_compact(dir);
out:
	mutex_unlock(&e->mu);
	return rc;
}

/*
 * The names are copied out and fn is called without the mutex held, so
 * that fn may use the env (say, to remove what it is shown).
 */
static int
fault_dir_list(struct env *env, const char *path,
    int (*fn)(void *arg, const char *name), void *arg)
{
	struct fault_env *e = (struct fault_env *)env;
	struct fault_node *dir;
	char **names = NULL;
	size_t i, n = 0;
	int rc;

	mutex_lock(&e->mu);
	if ((rc = fault_find(e, path, &dir)) < 0) {
		rc = fault_error(rc, path, "list");
		goto out_unlock;
	}
	if (!dir->is_dir) {
		rc = fault_error(-ENOTDIR, path, "list");
		goto out_unlock;
	}
	if ((names = bt_calloc(dir->n, sizeof(*names))) == NULL) {
		rc = -ENOMEM;
		goto out_unlock;
	}
	for (i = 0; i < dir->n; i++) {
		if (dir->v[i].now == NULL)
			continue;
		if ((names[n] = bt_strdup(dir->v[i].name)) == NULL) {
			rc = -ENOMEM;
			goto out_unlock;
		}
		n++;
	}
	mutex_unlock(&e->mu);
	for (i = 0; i < n && rc == 0; i++)
		rc = fn(arg, names[i]);
	goto out_free;
out_unlock:
	mutex_unlock(&e->mu);
out_free:
	for (i = 0; i < n; i++)
		bt_free(names[i]);
	bt_free(names);
	return rc;
}

static int
fault_lock(struct env *env, const char *path, struct env_lock **out)
{
	struct fault_env *e = (struct fault_env *)env;
	struct fault_node *parent, *node;
	struct fault_lock *l, *held;
	const char *name;
	char text[32];
	size_t len;
	int rc, n;

	if ((l = bt_calloc(1, sizeof(*l))) == NULL)
		return -ENOMEM;
	mutex_lock(&e->mu);
	if ((rc = fault_walk(e, path, &parent, &name, &len)) < 0 ||
	    parent == NULL) {
		rc = fault_error(rc < 0 ? rc : -EISDIR, path, "lock");
		goto out_unlock;
	}
	if ((node = fault_dir_get(parent, name, len)) == NULL) {
		if ((node = fault_node_new(false)) == NULL) {
			rc = -ENOMEM;
			goto out_unlock;
		}
		rc = fault_dir_set(parent, name, len, node);
		fault_node_unref(node);
		if (rc < 0)
			goto out_unlock;
	} else if (node->is_dir) {
		rc = fault_error(-EISDIR, path, "lock");
		goto out_unlock;
	}
	for (held = e->locks; held != NULL; held = held->next) {
		if (held->node == node) {
			rc = bt_error_set(-EWOULDBLOCK, "%s: held by pid %ld",
			    path, (long)getpid());
			goto out_unlock;
		}
	}
	n = snprintf(text, sizeof(text), "%ld\n", (long)getpid());
	buf_clear(&node->data);
	node->synced = 0;
	node->overwritten = false;
	buf_clear(&node->shadow);
	if ((rc = buf_append(&node->data, text, (size_t)n)) < 0)
		goto out_unlock;
	fault_node_ref(node);
	l->base.env = env;
	l->node = node;
	l->next = e->locks;
	e->locks = l;
	mutex_unlock(&e->mu);
	*out = &l->base;
	return 0;
out_unlock:
	mutex_unlock(&e->mu);
	bt_free(l);
	return rc;
}

static void
fault_unlock(struct env_lock *base)
{
	struct fault_env *e = (struct fault_env *)base->env;
	struct fault_lock *l = (struct fault_lock *)base, **pp;

	mutex_lock(&e->mu);
	for (pp = &e->locks; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == l) {
			*pp = l->next;
			break;
		}
	}
	fault_node_unref(l->node);
	mutex_unlock(&e->mu);
	bt_free(l);
}

static uint64_t
fault_now_micros(struct env *env)
{
	struct fault_env *e = (struct fault_env *)env;
	struct timespec ts;
	uint64_t clock;

	mutex_lock(&e->mu);
	clock = e->clock;
	mutex_unlock(&e->mu);
	if (clock != 0)
		return clock;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void
fault_free(struct env *env)
{
	struct fault_env *e = (struct fault_env *)env;

	fault_node_unref(e->root);
	mutex_destroy(&e->mu);
	bt_free(e);
}

static const struct env_ops fault_ops = {
	.file_open = fault_file_open,
	.file_read_at = fault_file_read_at,
	.file_append = fault_file_append,
	.file_write_at = fault_file_write_at,
	.file_write_parts_at = fault_file_write_parts_at,
	.file_sync = fault_file_sync,
	.file_start_writeback = fault_file_start_writeback,
	.file_truncate = fault_file_truncate,
	.file_allocate = fault_file_allocate,
	.file_size = fault_file_size,
	.file_close = fault_file_close,
	.path_size = fault_path_size,
	.path_available = fault_path_available,
	.path_capacity = fault_path_capacity,
	.path_rename = fault_path_rename,
	.path_remove = fault_path_remove,
	.dir_create = fault_dir_create,
	.dir_sync = fault_dir_sync,
	.dir_list = fault_dir_list,
	.lock = fault_lock,
	.unlock = fault_unlock,
	.now_micros = fault_now_micros,
	.free = fault_free,
};

int
env_fault_new(struct env **out)
{
	struct fault_env *e;
	int rc;

	if ((e = bt_calloc(1, sizeof(*e))) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	if ((e->root = fault_node_new(true)) == NULL) {
		rc = -ENOMEM;
		goto out_free;
	}
	if ((rc = mutex_init(&e->mu)) < 0)
		goto out_root;
	e->available = UINT64_MAX;
	e->base.ops = &fault_ops;
	*out = &e->base;
	return 0;
out_root:
	fault_node_unref(e->root);
out_free:
	bt_free(e);
out:
	return rc;
}

void
env_fault_fail_after(struct env *env, enum env_fault_op op, long n, int rc,
    bool sticky)
{
	struct fault_env *e = fault_env_of(env);
	struct fault_trigger *t;

	if (e == NULL || (unsigned)op > ENV_FAULT_RENAME)
		return;
	t = &e->triggers[op];
	mutex_lock(&e->mu);
	t->countdown = n > 0 ? n : 0;
	t->rc = rc;
	t->sticky = sticky;
	t->tripped = false;
	mutex_unlock(&e->mu);
}

void
env_fault_set_clock(struct env *env, uint64_t micros)
{
	struct fault_env *e = fault_env_of(env);

	if (e == NULL)
		return;
	mutex_lock(&e->mu);
	e->clock = micros;
	mutex_unlock(&e->mu);
}

void
env_fault_set_available(struct env *env, uint64_t bytes)
{
	struct fault_env *e = fault_env_of(env);

	if (e == NULL)
		return;
	mutex_lock(&e->mu);
	e->available = bytes;
	mutex_unlock(&e->mu);
}

void
env_fault_set_sync_delay(struct env *env, uint64_t micros)
{
	struct fault_env *e = fault_env_of(env);

	if (e == NULL)
		return;
	mutex_lock(&e->mu);
	e->sync_delay = micros;
	mutex_unlock(&e->mu);
}

void
env_fault_get_stats(struct env *env, struct env_fault_stats *out)
{
	struct fault_env *e = fault_env_of(env);

	memset(out, 0, sizeof(*out));
	if (e == NULL)
		return;
	mutex_lock(&e->mu);
	*out = e->stats;
	mutex_unlock(&e->mu);
}
