/*
 * sqlite_env.c - a SQLite VFS whose files are env files (sqlite_env.h).
 *
 * A struct sqlite_env holds the sqlite3_vfs that SQLite sees (its pAppData
 * points back at us) and the default VFS, which lends randomness, sleep,
 * time and dynamic loading, and opens the nameless temporary files.  The
 * file object SQLite allocates (szOsFile bytes) is a struct sqlite_env_file
 * for files of the env, or the default VFS's own object for temporary
 * files; SQLite reaches each through its pMethods.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <sqlite3.h>

#include "catalog/sqlite_env.h"
#include "util/alloc.h"
#include "util/env.h"
#include "util/error.h"

/* SQLite's buffers for full path names hold this many bytes plus one. */
#define SQLITE_ENV_MAX_PATH	1024
/* The largest errno value; error codes below it are the project's own. */
#define SQLITE_ENV_MAX_ERRNO	4095

struct sqlite_env {
	sqlite3_vfs vfs;
	struct env *env;
	sqlite3_vfs *base;	/* the default VFS */
	atomic_int last_errno;	/* of the last failure, for xGetLastError */
	char name[48];
};

struct sqlite_env_file {
	sqlite3_file base;	/* first: SQLite's view of the object */
	struct sqlite_env *owner;
	struct env_file *f;
	char *path;
	char *dir;		/* the parent directory of path */
	bool dir_unsynced;	/* opened for writing, not yet synced */
	bool delete_on_close;
};

static const sqlite3_io_methods sqlite_env_io_methods;

static struct sqlite_env *
sqlite_env_of(sqlite3_vfs *vfs)
{
	return vfs->pAppData;
}

/*
 * Remember the errno of a failed env call for xGetLastError, and turn the
 * failure into the SQLite code ioerr, or SQLITE_FULL for a full disk.
 */
static int
sqlite_env_error(struct sqlite_env *v, int rc, int ioerr)
{
	int err = rc < 0 && rc >= -SQLITE_ENV_MAX_ERRNO ? -rc : 0;

	atomic_store_explicit(&v->last_errno, err, memory_order_relaxed);
	if (rc == -ENOSPC || rc == -EDQUOT)
		return SQLITE_FULL;
	if (rc == -ENOMEM)
		return SQLITE_IOERR_NOMEM;
	return ioerr;
}

static int
sqlite_env_dir_sync(struct sqlite_env *v, const char *path)
{
	char *dir;
	int rc;

	if ((dir = env_path_parent(path)) == NULL)
		return SQLITE_IOERR_NOMEM;
	rc = env_dir_sync(v->env, dir);
	bt_free(dir);
	if (rc < 0)
		return sqlite_env_error(v, rc, SQLITE_IOERR_DIR_FSYNC);
	return SQLITE_OK;
}

static int
sqlite_env_close(sqlite3_file *file)
{
	struct sqlite_env_file *sf = (struct sqlite_env_file *)file;
	struct sqlite_env *v = sf->owner;
	int rc, src = SQLITE_OK;

	if ((rc = env_file_close(sf->f)) < 0)
		src = sqlite_env_error(v, rc, SQLITE_IOERR_CLOSE);
	if (sf->delete_on_close && (rc = env_path_remove(v->env,
	    sf->path)) < 0 && rc != -ENOENT && src == SQLITE_OK)
		src = sqlite_env_error(v, rc, SQLITE_IOERR_DELETE);
	bt_free(sf->path);
	bt_free(sf->dir);
	file->pMethods = NULL;
	return src;
}

/* A read past the end fills the rest of buf with zeros, as SQLite needs. */
static int
sqlite_env_read(sqlite3_file *file, void *buf, int amt, sqlite3_int64 ofst)
{
	struct sqlite_env_file *sf = (struct sqlite_env_file *)file;
	size_t got;
	int rc;

	if ((rc = env_file_read_at(sf->f, (uint64_t)ofst, buf, (size_t)amt,
	    &got)) < 0)
		return sqlite_env_error(sf->owner, rc, SQLITE_IOERR_READ);
	if (got < (size_t)amt) {
		memset((uint8_t *)buf + got, 0, (size_t)amt - got);
		return SQLITE_IOERR_SHORT_READ;
	}
	return SQLITE_OK;
}

static int
sqlite_env_write(sqlite3_file *file, const void *buf, int amt,
    sqlite3_int64 ofst)
{
	struct sqlite_env_file *sf = (struct sqlite_env_file *)file;
	int rc;

	if ((rc = env_file_write_at(sf->f, (uint64_t)ofst, buf,
	    (size_t)amt)) < 0)
		return sqlite_env_error(sf->owner, rc, SQLITE_IOERR_WRITE);
	return SQLITE_OK;
}

static int
sqlite_env_truncate(sqlite3_file *file, sqlite3_int64 size)
{
	struct sqlite_env_file *sf = (struct sqlite_env_file *)file;
	int rc;

	if ((rc = env_file_truncate(sf->f, (uint64_t)size)) < 0)
		return sqlite_env_error(sf->owner, rc, SQLITE_IOERR_TRUNCATE);
	return SQLITE_OK;
}

/*
 * Sync the data, then, the first time, the directory entry: a file created
 * by this open is not durable until its directory is synced, and one
 * opened again may have been created by a process that died before doing
 * so.  The flags (full, normal, data only) all mean fdatasync here.
 */
static int
sqlite_env_sync(sqlite3_file *file, int flags)
{
	struct sqlite_env_file *sf = (struct sqlite_env_file *)file;
	struct sqlite_env *v = sf->owner;
	int rc;

	if ((rc = env_file_sync(sf->f)) < 0)
		return sqlite_env_error(v, rc, SQLITE_IOERR_FSYNC);
	if (sf->dir_unsynced) {
		if ((rc = env_dir_sync(v->env, sf->dir)) < 0)
			return sqlite_env_error(v, rc, SQLITE_IOERR_DIR_FSYNC);
		sf->dir_unsynced = false;
	}
	return SQLITE_OK;
}

static int
sqlite_env_file_size(sqlite3_file *file, sqlite3_int64 *size)
{
	struct sqlite_env_file *sf = (struct sqlite_env_file *)file;
	uint64_t n;
	int rc;

	if ((rc = env_file_size(sf->f, &n)) < 0)
		return sqlite_env_error(sf->owner, rc, SQLITE_IOERR_FSTAT);
	*size = (sqlite3_int64)n;
	return SQLITE_OK;
}

/* Locks: the store has one owner process (sqlite_env.h). */
static int
sqlite_env_lock(sqlite3_file *file, int level)
{
	return SQLITE_OK;
}

static int
sqlite_env_check_reserved_lock(sqlite3_file *file, int *out)
{
	*out = 0;
	return SQLITE_OK;
}

static int
sqlite_env_file_control(sqlite3_file *file, int op, void *arg)
{
	return SQLITE_NOTFOUND;
}

static int
sqlite_env_sector_size(sqlite3_file *file)
{
	return 4096;
}

/* No promises (atomic or power-safe writes): SQLite assumes the worst. */
static int
sqlite_env_device_characteristics(sqlite3_file *file)
{
	return 0;
}

/* Version 1: no shared memory, no memory mapping. */
static const sqlite3_io_methods sqlite_env_io_methods = {
	.iVersion = 1,
	.xClose = sqlite_env_close,
	.xRead = sqlite_env_read,
	.xWrite = sqlite_env_write,
	.xTruncate = sqlite_env_truncate,
	.xSync = sqlite_env_sync,
	.xFileSize = sqlite_env_file_size,
	.xLock = sqlite_env_lock,
	.xUnlock = sqlite_env_lock,
	.xCheckReservedLock = sqlite_env_check_reserved_lock,
	.xFileControl = sqlite_env_file_control,
	.xSectorSize = sqlite_env_sector_size,
	.xDeviceCharacteristics = sqlite_env_device_characteristics,
};

/*
 * Open name in the env: SQLITE_OPEN_EXCLUSIVE creates it anew, a writable
 * open appends (creating the file only with SQLITE_OPEN_CREATE), others
 * read.  A nameless temporary file goes to the default VFS.
 */
static int
sqlite_env_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *file,
    int flags, int *out_flags)
{
	struct sqlite_env *v = sqlite_env_of(vfs);
	struct sqlite_env_file *sf = (struct sqlite_env_file *)file;
	enum env_open_mode mode;
	int rc, src;

	file->pMethods = NULL;
	if (name == NULL)
		return v->base->xOpen(v->base, NULL, file, flags, out_flags);
	memset(sf, 0, sizeof(*sf));
	sf->owner = v;
	if ((flags & SQLITE_OPEN_READWRITE) == 0)
		mode = ENV_READ;
	else if (flags & SQLITE_OPEN_EXCLUSIVE)
		mode = ENV_CREATE;
	else
		mode = ENV_APPEND;
	if (mode == ENV_APPEND && (flags & SQLITE_OPEN_CREATE) == 0 &&
	    !env_path_exists(v->env, name)) {
		src = sqlite_env_error(v, bt_error_set(-ENOENT,
		    "%s: open: %s", name, bt_strerror(-ENOENT)),
		    SQLITE_CANTOPEN);
		goto out;
	}
	if ((sf->path = bt_strdup(name)) == NULL ||
	    (sf->dir = env_path_parent(name)) == NULL) {
		src = SQLITE_NOMEM;
		goto out_free;
	}
	if ((rc = env_file_open(v->env, name, mode, &sf->f)) < 0) {
		src = rc == -ENOMEM ? SQLITE_NOMEM :
		    sqlite_env_error(v, rc, SQLITE_CANTOPEN);
		goto out_free;
	}
	sf->dir_unsynced = mode != ENV_READ;
	sf->delete_on_close = (flags & SQLITE_OPEN_DELETEONCLOSE) != 0;
	file->pMethods = &sqlite_env_io_methods;
	if (out_flags != NULL)
		*out_flags = flags;
	return SQLITE_OK;
out_free:
	bt_free(sf->path);
	bt_free(sf->dir);
out:
	return src;
}

static int
sqlite_env_delete(sqlite3_vfs *vfs, const char *name, int sync_dir)
{
	struct sqlite_env *v = sqlite_env_of(vfs);
	int rc;

	if ((rc = env_path_remove(v->env, name)) < 0)
		return sqlite_env_error(v, rc, rc == -ENOENT ?
		    SQLITE_IOERR_DELETE_NOENT : SQLITE_IOERR_DELETE);
	if (sync_dir)
		return sqlite_env_dir_sync(v, name);
	return SQLITE_OK;
}

/*
 * Whether name exists.  As in SQLite's unix VFS, an empty file does not
 * "exist": an empty journal is not a hot one.  There are no permissions,
 * so a file that exists is readable and writable.
 */
static int
sqlite_env_access(sqlite3_vfs *vfs, const char *name, int flags, int *out)
{
	struct sqlite_env *v = sqlite_env_of(vfs);
	uint64_t size;
	int rc;

	rc = env_path_size(v->env, name, &size);
	if (rc == -ENOENT || rc == -ENOTDIR) {
		*out = 0;
		return SQLITE_OK;
	}
	if (rc < 0)
		return sqlite_env_error(v, rc, SQLITE_IOERR_ACCESS);
	*out = flags == SQLITE_ACCESS_EXISTS ? size > 0 : 1;
	return SQLITE_OK;
}

/* Env paths are their own name space: a name is its own full name. */
static int
sqlite_env_full_pathname(sqlite3_vfs *vfs, const char *name, int n_out,
    char *out)
{
	size_t n = strlen(name);

	if (n_out <= 0 || n >= (size_t)n_out)
		return SQLITE_CANTOPEN;
	memcpy(out, name, n + 1);
	return SQLITE_OK;
}

static void *
sqlite_env_dl_open(sqlite3_vfs *vfs, const char *name)
{
	struct sqlite_env *v = sqlite_env_of(vfs);

	return v->base->xDlOpen(v->base, name);
}

static void
sqlite_env_dl_error(sqlite3_vfs *vfs, int n, char *msg)
{
	struct sqlite_env *v = sqlite_env_of(vfs);

	v->base->xDlError(v->base, n, msg);
}

static void
(*sqlite_env_dl_sym(sqlite3_vfs *vfs, void *handle, const char *sym))(void)
{
	struct sqlite_env *v = sqlite_env_of(vfs);

	return v->base->xDlSym(v->base, handle, sym);
}

static void
sqlite_env_dl_close(sqlite3_vfs *vfs, void *handle)
{
	struct sqlite_env *v = sqlite_env_of(vfs);

	v->base->xDlClose(v->base, handle);
}

static int
sqlite_env_randomness(sqlite3_vfs *vfs, int n, char *out)
{
	struct sqlite_env *v = sqlite_env_of(vfs);

	return v->base->xRandomness(v->base, n, out);
}

static int
sqlite_env_sleep(sqlite3_vfs *vfs, int micros)
{
	struct sqlite_env *v = sqlite_env_of(vfs);

	return v->base->xSleep(v->base, micros);
}

static int
sqlite_env_current_time(sqlite3_vfs *vfs, double *out)
{
	struct sqlite_env *v = sqlite_env_of(vfs);

	return v->base->xCurrentTime(v->base, out);
}

static int
sqlite_env_current_time_int64(sqlite3_vfs *vfs, sqlite3_int64 *out)
{
	struct sqlite_env *v = sqlite_env_of(vfs);
	double days;
	int src;

	if (v->base->iVersion >= 2 && v->base->xCurrentTimeInt64 != NULL)
		return v->base->xCurrentTimeInt64(v->base, out);
	if ((src = v->base->xCurrentTime(v->base, &days)) == SQLITE_OK)
		*out = (sqlite3_int64)(days * 86400000.0);
	return src;
}

/*
 * The last failure's errno (the default VFS's would describe its own
 * calls, not ours), with the calling thread's detail as the message.
 */
static int
sqlite_env_get_last_error(sqlite3_vfs *vfs, int n, char *msg)
{
	struct sqlite_env *v = sqlite_env_of(vfs);

	if (n > 0)
		snprintf(msg, (size_t)n, "%s", bt_error_detail());
	return atomic_load_explicit(&v->last_errno, memory_order_relaxed);
}

int
sqlite_env_register(struct env *env, struct sqlite_env **out)
{
	struct sqlite_env *v;
	sqlite3_vfs *base;
	int src, rc;

	if ((src = sqlite3_initialize()) != SQLITE_OK) {
		rc = bt_error_set(src == SQLITE_NOMEM ? -ENOMEM : -EIO,
		    "sqlite env: initialize SQLite: %s", sqlite3_errstr(src));
		goto out;
	}
	if ((base = sqlite3_vfs_find(NULL)) == NULL) {
		rc = bt_error_set(-EIO,
		    "sqlite env: SQLite has no default VFS");
		goto out;
	}
	if ((v = bt_calloc(1, sizeof(*v))) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	v->env = env;
	v->base = base;
	atomic_init(&v->last_errno, 0);
	snprintf(v->name, sizeof(v->name), "tabletfs-env-%" PRIxPTR,
	    (uintptr_t)v);
	v->vfs.iVersion = 2;
	v->vfs.szOsFile = (int)sizeof(struct sqlite_env_file);
	if (v->vfs.szOsFile < base->szOsFile)
		v->vfs.szOsFile = base->szOsFile;
	v->vfs.mxPathname = SQLITE_ENV_MAX_PATH;
	v->vfs.zName = v->name;
	v->vfs.pAppData = v;
	v->vfs.xOpen = sqlite_env_open;
	v->vfs.xDelete = sqlite_env_delete;
	v->vfs.xAccess = sqlite_env_access;
	v->vfs.xFullPathname = sqlite_env_full_pathname;
	v->vfs.xDlOpen = sqlite_env_dl_open;
	v->vfs.xDlError = sqlite_env_dl_error;
	v->vfs.xDlSym = sqlite_env_dl_sym;
	v->vfs.xDlClose = sqlite_env_dl_close;
	v->vfs.xRandomness = sqlite_env_randomness;
	v->vfs.xSleep = sqlite_env_sleep;
	v->vfs.xCurrentTime = sqlite_env_current_time;
	v->vfs.xGetLastError = sqlite_env_get_last_error;
	v->vfs.xCurrentTimeInt64 = sqlite_env_current_time_int64;
	if ((src = sqlite3_vfs_register(&v->vfs, 0)) != SQLITE_OK) {
		rc = bt_error_set(src == SQLITE_NOMEM ? -ENOMEM : -EIO,
		    "sqlite env: register %s: %s", v->name,
		    sqlite3_errstr(src));
		goto out_free;
	}
	*out = v;
	return 0;
out_free:
	bt_free(v);
out:
	return rc;
}

const char *
sqlite_env_name(const struct sqlite_env *v)
{
	return v->name;
}

void
sqlite_env_unregister(struct sqlite_env *v)
{
	if (v == NULL)
		return;
	sqlite3_vfs_unregister(&v->vfs);
	bt_free(v);
}
