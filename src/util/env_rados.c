/*
 * env_rados.c - the file environment over Ceph RADOS (librados): one
 * object per file in one pool, named by the file's path
 * (env_rados_int.h), so that every process that reaches the cluster
 * sees the same files.
 *
 * Every call is synchronous: librados returns from a write only once
 * every replica of the object has it, so a file is durable when the call
 * returns and env_file_sync() has nothing left to do.  A file is bounded
 * by the OSDs' osd_max_object_size (128 MiB by default): a write past it
 * fails with -EFBIG and says so.  Files are not striped over several
 * objects: the engine's files are bounded by its settings (commit log
 * segments, SSTables by the tablet size), and striping
 * (libradosstriper) would cost a lock round trip on its first object per
 * write and give up the one-object atomicity that renames rely on
 * (env_rados_dir.c).
 *
 * Locks are cls_lock exclusive locks on the lock file's object, which
 * the cluster keeps, so two processes on any hosts cannot both hold one.
 * They carry no expiry: a holder that dies keeps the lock until someone
 * breaks it (`rados -p POOL lock break OBJ tabletfs CLIENT --lock-cookie
 * COOKIE`, after fencing the dead client with `ceph osd blocklist add`),
 * as a cell's master does before it moves the store (env_rados_fence.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/alloc.h"
#include "util/env.h"
#include "util/env_rados_int.h"
#include "util/error.h"

struct rados_lock {
	struct env_lock base;
	char *oid;
	char cookie[64];
};

int
rados_error(struct rados_env *env, int rc, const char *path,
    const char *what)
{
	if (rc != -ESHUTDOWN)
		return bt_error_set(rc, "%s: %s: %s", path, what,
		    strerror(-rc));
	bt_error_set(rc, "%s: %s: this RADOS client is blocklisted (fenced) "
	    "by the cluster", path, what);
	if (env->fenced != NULL && !atomic_exchange(&env->fenced_told, true))
		env->fenced(env->fenced_arg);
	return rc;
}

int
rados_dir_exists(struct rados_env *env, const char *oid)
{
	char *dir;
	uint64_t size;
	time_t mtime;
	int rc;

	if (*oid == '\0')
		return 1;
	if ((dir = rados_dir_oid(oid)) == NULL)
		return -ENOMEM;
	rc = rados_stat(env->io, dir, &size, &mtime);
	if (rc == -ENOENT)
		rc = 0;
	else if (rc < 0)
		rc = rados_error(env, rc, dir, "stat");
	else
		rc = 1;
	bt_free(dir);
	return rc;
}

/* -EFBIG, with the reason, for a file that would end at end (0: at an
 * unknown place, an append's) past the object limit. */
static int
rados_too_big(struct rados_env *env, const char *path, uint64_t end)
{
	if (end == 0)
		return bt_error_set(-EFBIG, "%s: would grow past the RADOS "
		    "object limit of %" PRIu64 " bytes (osd_max_object_size; "
		    "files are not striped)", path, env->max_object);
	return bt_error_set(-EFBIG, "%s: would end at %" PRIu64 " bytes, past "
	    "the RADOS object limit of %" PRIu64 " (osd_max_object_size; "
	    "files are not striped)", path, end, env->max_object);
}

static int
rados_file_open(struct env *base, const char *path, enum env_open_mode mode,
    struct env_file **out)
{
	struct rados_env *env = (struct rados_env *)base;
	struct rados_file *f;
	rados_write_op_t op;
	uint64_t size;
	time_t mtime;
	int rc, isdir;

	if (mode == ENV_CREATE_PRIVATE)
		mode = ENV_CREATE;	/* no modes: the caps decide (env.h) */
	if (mode != ENV_READ && mode != ENV_CREATE && mode != ENV_APPEND)
		return bt_error_set(-EINVAL, "%s: bad open mode %d", path,
		    (int)mode);
	if ((f = bt_calloc(1, sizeof(*f))) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	f->base.env = base;
	f->writable = mode != ENV_READ;
	if ((f->base.path = bt_strdup(path)) == NULL ||
	    (f->oid = rados_oid(path)) == NULL) {
		rc = -ENOMEM;
		goto out_free;
	}
	if (*f->oid == '\0') {
		rc = rados_error(env, -EISDIR, path, "open");
		goto out_free;
	}
	/* A directory's marker: a file cannot have its name. */
	if (mode != ENV_READ) {
		if ((isdir = rados_dir_exists(env, f->oid)) != 0) {
			rc = rados_error(env, isdir < 0 ? isdir : -EISDIR, path,
			    "open");
			goto out_free;
		}
		if ((op = rados_create_write_op()) == NULL) {
			rc = -ENOMEM;
			goto out_free;
		}
		rados_write_op_create(op, mode == ENV_CREATE ?
		    LIBRADOS_CREATE_EXCLUSIVE : LIBRADOS_CREATE_IDEMPOTENT,
		    NULL);
		rc = rados_write_op_operate(op, env->io, f->oid, NULL, 0);
		rados_release_write_op(op);
		if (rc < 0) {
			rc = rados_error(env, rc, path, "create");
			goto out_free;
		}
	} else if ((rc = rados_stat(env->io, f->oid, &size, &mtime)) < 0) {
		if (rc == -ENOENT && rados_dir_exists(env, f->oid) == 1)
			rc = -EISDIR;
		rc = rados_error(env, rc, path, "open");
		goto out_free;
	}
	*out = &f->base;
	return 0;
out_free:
	bt_free(f->oid);
	bt_free(f->base.path);
	bt_free(f);
out:
	return rc;
}

static int
rados_file_read_at(struct env_file *base, uint64_t offset, void *dst,
    size_t n, size_t *got)
{
	struct rados_file *f = (struct rados_file *)base;
	struct rados_env *env = (struct rados_env *)base->env;
	char *p = dst;
	size_t done = 0, chunk;
	int r;

	while (done < n) {
		chunk = n - done < env->max_op ? n - done : env->max_op;
		r = rados_read(env->io, f->oid, p + done, chunk, offset + done);
		if (r == -ESHUTDOWN)
			return rados_error(env, r, base->path, "read");
		if (r < 0)
			return bt_error_set(r, "%s: read at offset %" PRIu64
			    ": %s", base->path, offset + done, strerror(-r));
		done += (size_t)r;
		if ((size_t)r < chunk)
			break;
	}
	*got = done;
	return 0;
}

/* The OSD's -EFBIG, told as the object limit. */
static int
rados_write_error(struct rados_env *env, struct env_file *base, int rc,
    uint64_t end, const char *what)
{
	if (rc == -EFBIG)
		return rados_too_big(env, base->path, end);
	if (rc == -EMSGSIZE)
		return bt_error_set(rc, "%s: %s: one op is over the cluster's "
		    "osd_max_write_size", base->path, what);
	return rados_error(env, rc, base->path, what);
}

static int
rados_file_append(struct env_file *base, const void *src, size_t n)
{
	struct rados_file *f = (struct rados_file *)base;
	struct rados_env *env = (struct rados_env *)base->env;
	const char *p = src;
	size_t chunk;
	int rc;

	if (!f->writable)
		return rados_error(env, -EBADF, base->path, "append");
	while (n > 0) {
		chunk = n < env->max_op ? n : env->max_op;
		if ((rc = rados_append(env->io, f->oid, p, chunk)) < 0)
			return rados_write_error(env, base, rc, 0, "append");
		p += chunk;
		n -= chunk;
	}
	return 0;
}

static int
rados_file_write_at(struct env_file *base, uint64_t offset, const void *src,
    size_t n)
{
	struct rados_file *f = (struct rados_file *)base;
	struct rados_env *env = (struct rados_env *)base->env;
	const char *p = src;
	size_t chunk;
	int rc;

	if (!f->writable)
		return rados_error(env, -EBADF, base->path, "write at");
	if (offset > env->max_object || n > env->max_object - offset)
		return rados_too_big(env, base->path, offset + n);
	while (n > 0) {
		chunk = n < env->max_op ? n : env->max_op;
		if ((rc = rados_write(env->io, f->oid, p, chunk, offset)) < 0)
			return rados_write_error(env, base, rc, offset + n,
			    "write at");
		p += chunk;
		offset += chunk;
		n -= chunk;
	}
	return 0;
}

/* Every write was durable when it returned (file comment). */
static int
rados_file_sync(struct env_file *base)
{
	(void)base;
	return 0;
}

static int
rados_file_start_writeback(struct env_file *base, uint64_t offset,
    uint64_t len)
{
	struct rados_file *f = (struct rados_file *)base;
	struct rados_env *env = (struct rados_env *)base->env;

	(void)offset;
	(void)len;
	if (!f->writable)
		return rados_error(env, -EBADF, base->path, "start writeback");
	return 0;
}

static int
rados_file_truncate(struct env_file *base, uint64_t size)
{
	struct rados_file *f = (struct rados_file *)base;
	struct rados_env *env = (struct rados_env *)base->env;
	int rc;

	if (!f->writable)
		return rados_error(env, -EBADF, base->path, "truncate");
	if (size > env->max_object)
		return rados_too_big(env, base->path, size);
	if ((rc = rados_trunc(env->io, f->oid, size)) == -ESHUTDOWN)
		return rados_error(env, rc, base->path, "truncate");
	if (rc < 0)
		return bt_error_set(rc, "%s: truncate to %" PRIu64 ": %s",
		    base->path, size, strerror(-rc));
	return 0;
}

/*
 * An object has no space to reserve: the file keeps its size, as the
 * contract allows, and only a reservation past the object limit fails,
 * as the writes into it would.
 */
static int
rados_file_allocate(struct env_file *base, uint64_t offset, uint64_t len)
{
	struct rados_file *f = (struct rados_file *)base;
	struct rados_env *env = (struct rados_env *)base->env;

	if (!f->writable)
		return rados_error(env, -EBADF, base->path, "allocate");
	if (offset > env->max_object || len > env->max_object - offset)
		return rados_too_big(env, base->path, offset + len);
	return 0;
}

static int
rados_file_size(struct env_file *base, uint64_t *size)
{
	struct rados_file *f = (struct rados_file *)base;
	struct rados_env *env = (struct rados_env *)base->env;
	time_t mtime;
	int rc;

	if ((rc = rados_stat(env->io, f->oid, size, &mtime)) < 0)
		return rados_error(env, rc, base->path, "stat");
	return 0;
}

static int
rados_file_close(struct env_file *base)
{
	struct rados_file *f = (struct rados_file *)base;

	bt_free(f->oid);
	bt_free(base->path);
	bt_free(f);
	return 0;
}

/* A file's size, or 0 for a directory (as stat(2) gives it a size). */
static int
rados_path_size(struct env *base, const char *path, uint64_t *size)
{
	struct rados_env *env = (struct rados_env *)base;
	time_t mtime;
	char *oid;
	int rc;

	if ((oid = rados_oid(path)) == NULL)
		return -ENOMEM;
	if ((rc = rados_dir_exists(env, oid)) == 1) {
		*size = 0;
		rc = 0;
	} else if (rc == 0 &&
	    (rc = rados_stat(env->io, oid, size, &mtime)) < 0) {
		rc = rados_error(env, rc, path, "stat");
	}
	bt_free(oid);
	return rc;
}

/*
 * The cluster's raw bytes (rados_cluster_stat), not divided by the
 * pool's replica count, and blind to pool quotas.  The monitor reports
 * them from the manager's statistics: a cluster without a manager (as
 * scripts/ceph runs) reports 0 bytes of 0, which is read as unknown,
 * UINT64_MAX, rather than as a full cluster.
 */
static int
rados_space(struct env *base, const char *path, uint64_t *bytes,
    bool capacity)
{
	struct rados_env *env = (struct rados_env *)base;
	struct rados_cluster_stat_t st;
	int rc;

	if ((rc = rados_cluster_stat(env->cluster, &st)) < 0)
		return rados_error(env, rc, path, "cluster stat");
	if (st.kb == 0)
		*bytes = UINT64_MAX;
	else
		*bytes = (capacity ? st.kb : st.kb_avail) * 1024;
	return 0;
}

static int
rados_path_available(struct env *base, const char *path, uint64_t *bytes)
{
	return rados_space(base, path, bytes, false);
}

static int
rados_path_capacity(struct env *base, const char *path, uint64_t *bytes)
{
	return rados_space(base, path, bytes, true);
}

/*
 * Name a lock's holder.  Its cookie starts with its pid
 * (rados_lock()); the detail also names its RADOS client and address,
 * which breaking a dead holder's lock needs.
 */
static int
rados_lock_held(struct rados_env *env, const char *path, const char *oid)
{
	char tag[256], clients[1024], cookies[1024], addrs[1024];
	size_t tag_len = sizeof(tag), clients_len = sizeof(clients);
	size_t cookies_len = sizeof(cookies), addrs_len = sizeof(addrs);
	int exclusive;
	ssize_t n;
	long pid;

	n = rados_list_lockers(env->io, oid, RADOS_LOCK_NAME, &exclusive, tag,
	    &tag_len, clients, &clients_len, cookies, &cookies_len, addrs,
	    &addrs_len);
	if (n < 1 || (pid = strtol(cookies, NULL, 10)) <= 0)
		return bt_error_set(-EWOULDBLOCK, "%s: held by another "
		    "process", path);
	return bt_error_set(-EWOULDBLOCK, "%s: held by pid %ld (RADOS %s at "
	    "%s, cookie %s)", path, pid, clients, addrs, cookies);
}

/*
 * An exclusive cls_lock on path's object, which it creates if absent,
 * with a cookie of its own (pid, client instance, counter) so that two
 * locks of one process conflict as two processes' do; then the pid is
 * written into the object, as the posix env writes it into the file.
 */
static int
rados_lock(struct env *base, const char *path, struct env_lock **out)
{
	struct rados_env *env = (struct rados_env *)base;
	struct rados_lock *l;
	char desc[128], host[64], text[32];
	int rc, len;

	if ((l = bt_calloc(1, sizeof(*l))) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	l->base.env = base;
	if ((l->oid = rados_oid(path)) == NULL) {
		rc = -ENOMEM;
		goto out_free;
	}
	snprintf(l->cookie, sizeof(l->cookie), "%ld-%" PRIu64 "-%" PRIu64,
	    (long)getpid(), rados_get_instance_id(env->cluster),
	    (uint64_t)atomic_fetch_add(&env->cookies, 1));
	if (gethostname(host, sizeof(host)) < 0)
		snprintf(host, sizeof(host), "?");
	host[sizeof(host) - 1] = '\0';
	snprintf(desc, sizeof(desc), "tabletfs pid %ld on %s",
	    (long)getpid(), host);
	rc = rados_lock_exclusive(env->io, l->oid, RADOS_LOCK_NAME, l->cookie,
	    desc, NULL, 0);
	if (rc == -EBUSY || rc == -EEXIST) {
		rc = rados_lock_held(env, path, l->oid);
		goto out_free;
	}
	if (rc < 0) {
		rc = rados_error(env, rc, path, "lock");
		goto out_free;
	}
	len = snprintf(text, sizeof(text), "%ld\n", (long)getpid());
	if ((rc = rados_write_full(env->io, l->oid, text, (size_t)len)) < 0) {
		rc = rados_error(env, rc, path, "write pid");
		goto out_unlock;
	}
	*out = &l->base;
	return 0;
out_unlock:
	rados_unlock(env->io, l->oid, RADOS_LOCK_NAME, l->cookie);
out_free:
	bt_free(l->oid);
	bt_free(l);
out:
	return rc;
}

static void
rados_unlock_one(struct env_lock *base)
{
	struct rados_lock *l = (struct rados_lock *)base;
	struct rados_env *env = (struct rados_env *)base->env;

	(void)rados_unlock(env->io, l->oid, RADOS_LOCK_NAME, l->cookie);
	bt_free(l->oid);
	bt_free(l);
}

static uint64_t
rados_now_micros(struct env *env)
{
	struct timespec ts;

	(void)env;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void
rados_free(struct env *base)
{
	struct rados_env *env = (struct rados_env *)base;

	rados_ioctx_destroy(env->io);
	rados_shutdown(env->cluster);
	bt_free(env->pool);
	bt_free(env);
}

static const struct env_ops rados_ops = {
	.file_open = rados_file_open,
	.file_read_at = rados_file_read_at,
	.file_append = rados_file_append,
	.file_write_at = rados_file_write_at,
	.file_sync = rados_file_sync,
	.file_start_writeback = rados_file_start_writeback,
	.file_truncate = rados_file_truncate,
	.file_allocate = rados_file_allocate,
	.file_size = rados_file_size,
	.file_close = rados_file_close,
	.path_size = rados_path_size,
	.path_available = rados_path_available,
	.path_capacity = rados_path_capacity,
	.path_rename = rados_path_rename,
	.path_remove = rados_path_remove,
	.dir_create = rados_dir_create,
	.dir_sync = rados_dir_sync,
	.dir_list = rados_dir_list,
	.lock = rados_lock,
	.unlock = rados_unlock_one,
	.now_micros = rados_now_micros,
	.free = rados_free,
};

bool
rados_env_is(const struct env *env)
{
	return env->ops == &rados_ops;
}

uint64_t
env_max_file_size(const struct env *env)
{
	if (!rados_env_is(env))
		return UINT64_MAX;
	return ((const struct rados_env *)env)->max_object;
}

/* An unsigned number from the client's configuration, or dflt. */
static uint64_t
rados_conf_u64(rados_t cluster, const char *option, uint64_t dflt)
{
	char buf[64], *end;
	unsigned long long v;

	if (rados_conf_get(cluster, option, buf, sizeof(buf)) < 0)
		return dflt;
	v = strtoull(buf, &end, 10);
	return end == buf ? dflt : (uint64_t)v;
}

/*
 * An op waits for an OSD that went away until the client has the OSD map
 * that shows its successor, and librados asks the monitor for a new map
 * only for ops older than objecter_timeout (10 s), looked at every
 * objecter_tick_interval (5 s): after an OSD restart the log's writes
 * stalled 10-14 s longer than the OSD was down (docs/rados.md, "When the
 * OSD fails").  Unless the conf changes them from Ceph's defaults, ask
 * after 2 s, looking every second: a map request costs one message to
 * the monitor.
 */
static int
rados_set_objecter(rados_t cluster)
{
	int rc;

	if (rados_conf_u64(cluster, "objecter_timeout", 10) == 10 &&
	    (rc = rados_conf_set(cluster, "objecter_timeout", "2")) < 0)
		return rc;
	if (rados_conf_u64(cluster, "objecter_tick_interval", 5) == 5 &&
	    (rc = rados_conf_set(cluster, "objecter_tick_interval", "1")) < 0)
		return rc;
	return 0;
}

/*
 * Without a timeout librados waits forever for a dead monitor or OSD
 * (the recipe's gotchas); a conf that sets none gets these, so that a
 * call fails with -ETIMEDOUT instead of hanging the engine.
 */
static int
rados_set_timeouts(rados_t cluster)
{
	static const char *const options[] = {
		"rados_osd_op_timeout", "rados_mon_op_timeout",
	};
	int rc;

	for (size_t i = 0; i < sizeof(options) / sizeof(options[0]); i++)
		if (rados_conf_u64(cluster, options[i], 0) == 0 &&
		    (rc = rados_conf_set(cluster, options[i], "30")) < 0)
			return rc;
	if ((rc = rados_set_objecter(cluster)) < 0)
		return rc;
	return rados_conf_set(cluster, "client_mount_timeout", "30");
}

int
env_rados_new(const char *conf, const char *pool, const char *client_id,
    struct env **out)
{
	struct rados_env *env;
	uint64_t write_max;
	int rc;

	if ((env = bt_calloc(1, sizeof(*env))) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	env->base.ops = &rados_ops;
	atomic_init(&env->cookies, 0);
	atomic_init(&env->fenced_told, false);
	if ((env->pool = bt_strdup(pool)) == NULL) {
		rc = -ENOMEM;
		goto out_free;
	}
	if ((rc = rados_create(&env->cluster, client_id)) < 0) {
		rc = rados_error(env, rc, client_id != NULL ? client_id : "admin",
		    "RADOS client");
		goto out_free;
	}
	if ((rc = rados_conf_read_file(env->cluster, conf)) < 0) {
		rc = rados_error(env, rc, conf != NULL ? conf : "ceph.conf",
		    "read Ceph configuration");
		goto out_shutdown;
	}
	if ((rc = rados_set_timeouts(env->cluster)) < 0) {
		rc = rados_error(env, rc, conf != NULL ? conf : "ceph.conf",
		    "set timeouts");
		goto out_shutdown;
	}
	if ((rc = rados_connect(env->cluster)) < 0) {
		rc = rados_error(env, rc, conf != NULL ? conf : "ceph.conf",
		    "connect to the cluster");
		goto out_shutdown;
	}
	if ((rc = rados_ioctx_create(env->cluster, pool, &env->io)) < 0) {
		rc = bt_error_set(rc, "RADOS pool %s: %s", pool,
		    rc == -ENOENT ? "no such pool" : strerror(-rc));
		goto out_shutdown;
	}
	env->max_object = rados_conf_u64(env->cluster, "osd_max_object_size",
	    (uint64_t)128 << 20);
	write_max = rados_conf_u64(env->cluster, "osd_max_write_size", 90)
	    << 20;
	env->max_op = RADOS_OP_MAX;
	if (write_max > (1 << 20) && write_max - (1 << 20) < env->max_op)
		env->max_op = (size_t)(write_max - (1 << 20));
	*out = &env->base;
	return 0;
out_shutdown:
	rados_shutdown(env->cluster);
out_free:
	bt_free(env->pool);
	bt_free(env);
out:
	return rc;
}
