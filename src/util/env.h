/*
 * env.h - the file environment: every byte the engine stores goes through
 * this interface, so that faults can be injected in tests and storage can be
 * replaced (docs/design.md section 5).
 *
 * Three implementations:
 *   env_posix_new()  the local filesystem (pread/write/fdatasync/rename).
 *   env_rados_new()  objects in a Ceph RADOS pool (librados), when built
 *                    with it.
 *   env_fault_new()  an in-memory filesystem that remembers what was synced
 *                    and injects faults: fail the Nth write or sync, drop
 *                    everything not yet synced (power loss), flip bytes.
 *
 * Paths are plain strings handed to the implementation unchanged.  All
 * functions return 0 or a negative error (-errno, e.g. -ENOENT, -ENOSPC,
 * -EIO), and record a detail naming the path with bt_error_set().  An env
 * and distinct files may be used from many threads; one file object is used
 * by one thread at a time, except env_file_read_at(), which is safe to call
 * concurrently on a file opened for reading.
 */
#ifndef TABLETFS_UTIL_ENV_H
#define TABLETFS_UTIL_ENV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/slice.h"

struct env;
struct env_space;
struct env_file;
struct env_lock;

/* How env_file_open() opens a file. */
enum env_open_mode {
	ENV_READ,		/* read an existing file */
	ENV_CREATE,		/* create a new file for appending; -EEXIST if present */
	ENV_APPEND,		/* append to an existing file, or create it */
	ENV_CREATE_PRIVATE,	/* as ENV_CREATE, readable by its owner only
				   from its creation (mode 0600; RADOS has
				   no modes: its client's caps decide) */
};

struct env_ops {
	int (*file_open)(struct env *env, const char *path,
	    enum env_open_mode mode, struct env_file **out);
	int (*file_read_at)(struct env_file *f, uint64_t offset, void *dst,
	    size_t n, size_t *got);
	int (*file_append)(struct env_file *f, const void *p, size_t n);
	int (*file_write_at)(struct env_file *f, uint64_t offset,
	    const void *p, size_t n);
	/* NULL: env_file_write_parts_at() joins the parts for one
	 * file_write_at. */
	int (*file_write_parts_at)(struct env_file *f, uint64_t offset,
	    const struct slice *parts, size_t count);
	int (*file_sync)(struct env_file *f);
	int (*file_start_writeback)(struct env_file *f, uint64_t offset,
	    uint64_t len);
	int (*file_truncate)(struct env_file *f, uint64_t size);
	int (*file_allocate)(struct env_file *f, uint64_t offset,
	    uint64_t len);
	int (*file_size)(struct env_file *f, uint64_t *size);
	int (*file_close)(struct env_file *f);

	int (*path_size)(struct env *env, const char *path, uint64_t *size);
	int (*path_available)(struct env *env, const char *path,
	    uint64_t *bytes);
	int (*path_capacity)(struct env *env, const char *path,
	    uint64_t *bytes);
	/* NULL: env_path_space() makes do with the two above. */
	int (*path_space)(struct env *env, const char *path,
	    struct env_space *out);
	int (*path_rename)(struct env *env, const char *from, const char *to);
	int (*path_remove)(struct env *env, const char *path);
	int (*dir_create)(struct env *env, const char *path);
	int (*dir_sync)(struct env *env, const char *path);
	int (*dir_list)(struct env *env, const char *path,
	    int (*fn)(void *arg, const char *name), void *arg);

	int (*lock)(struct env *env, const char *path, struct env_lock **out);
	void (*unlock)(struct env_lock *lock);

	uint64_t (*now_micros)(struct env *env);
	void (*free)(struct env *env);
};

/* Implementations embed this as their first member. */
struct env {
	const struct env_ops *ops;
};

/* Implementations embed this as their first member. */
struct env_file {
	struct env *env;
	char *path;		/* owned copy, for error messages */
};

/* Implementations embed this as their first member. */
struct env_lock {
	struct env *env;
};

/*
 * The local filesystem.  0 or -ENOMEM.  A file opened ENV_READ is read
 * through a read-only mapping (a copy, no system call) while the env's
 * mapped files total at most 48 MiB, by pread past that; bytes appended
 * after the open are read by pread.  If another process cuts a mapped file
 * short while it is open, a read of the bytes cut off returns fewer bytes,
 * as at the end of the file, or zeros up to the end of the page where the
 * file now ends (the engine's readers check every block's CRC, so either
 * is found as damage); it never raises SIGBUS.  For that the first mapping
 * installs a process-wide SIGBUS handler, which passes every SIGBUS that
 * is not a mapped read's to the handler that was there before (or to the
 * default action, which kills).
 *
 * A write at an offset of at most 4 KiB that lies wholly inside space
 * this file object reserved with env_file_allocate() (and no truncate has
 * cut since), from the 32nd write at since the file's last sync on, is a
 * copy into a writable shared mapping of that space, no system call: the
 * bytes are in the page cache as after write(2), so readers see them at
 * once and a kill of the process loses none, and env_file_sync() makes
 * them durable as it does written ones.  At most one window of 1 MiB is
 * mapped per file, moved along as the writes move on and unmapped at
 * truncate and close, and at a sync that came after fewer than 32 writes
 * (a file synced that often writes by pwrite, which is cheaper than a
 * page fault after each sync).  If the copy faults (the file was cut by
 * someone else, or the filesystem failed the fault), the same SIGBUS
 * handler jumps out of it and the write is done by pwrite, which reports
 * any error; the file is written by pwrite from then on.
 */
int env_posix_new(struct env **out);

/*
 * Ceph RADOS: every file an object in pool, named by its path (leading
 * "/" dropped), through a client that reads conf (a ceph.conf; NULL:
 * librados' default search, $CEPH_CONF or /etc/ceph/ceph.conf) and
 * authenticates as client.CLIENT_ID (NULL: client.admin).  Every write
 * is durable when it returns, so syncs do nothing.  A directory is an
 * empty marker object "path/"; a listing scans the pool's object names
 * (env_rados_dir.c); a rename copies through the client and removes the
 * source, atomically replacing the target only for files up to 16 MiB;
 * a file ends at the OSDs' osd_max_object_size (128 MiB by default),
 * past which writes fail with -EFBIG; env_file_allocate() reserves
 * nothing; locks are cls_lock exclusive locks on the object, held until
 * unlocked (a dead holder's lock must be broken: env_rados_lock_fence()
 * below, or by hand); free space is
 * the cluster's raw space, or UINT64_MAX (unknown) when the cluster has
 * no manager to report it.  Calls that get no answer fail with
 * -ETIMEDOUT after 30 s unless conf sets rados_osd_op_timeout and
 * rados_mon_op_timeout; a client fenced by the cluster (blocklisted)
 * gets -ESHUTDOWN from every call.  0, -ENOENT (no such pool), -EIO,
 * -ETIMEDOUT...; -EOPNOTSUPP when tabletfs was built without librados.
 */
int env_rados_new(const char *conf, const char *pool, const char *client_id,
    struct env **out);

/*
 * Fencing on RADOS (env_rados_fence.c; docs/rados.md).  All three take
 * an env from env_rados_new(): the others assert, or fail with -EINVAL.
 *
 * env_rados_on_fenced: cb(arg) runs once, on the thread of the first
 * call that finds this client blocklisted (-ESHUTDOWN), before that call
 * returns; set it before the env is used from several threads.
 *
 * env_rados_client: "client.N at ADDR" of this env's RADOS client, the
 * instance that its locks name and a blocklist fences.
 *
 * env_rados_lock_fence: fence every holder of the lock at path (an
 * env_lock() of another process): blocklist the address that the lock
 * records for it, wait until this client has the OSD map saying so, then
 * break its lock.  The number of holders fenced (0: none held it), each
 * described in fenced[0..size) as "client.N at ADDR (cookie C)"; or a
 * negative error, having broken no lock.
 */
void env_rados_on_fenced(struct env *env, void (*cb)(void *arg), void *arg);

int env_rados_client(struct env *env, char *out, size_t size);
int env_rados_lock_fence(struct env *env, const char *path, char *fenced,
    size_t size);

/*
 * The size past which no file of env can grow: for an env from
 * env_rados_new() the OSDs' osd_max_object_size as the client's conf
 * gives it (128 MiB unless set); UINT64_MAX for any other env.  The
 * engine keeps its SSTables and log segments under half of it
 * (docs/rados.md, "The object size limit").
 */
uint64_t env_max_file_size(const struct env *env);

/* Release an env; accepts NULL.  Every file must be closed first. */
void env_free(struct env *env);

/*
 * Open a file.  Appends go to the end; a file is readable with
 * env_file_read_at() whatever its mode, and writable in place with
 * env_file_write_at() when opened for writing.
 */
int env_file_open(struct env *env, const char *path, enum env_open_mode mode,
    struct env_file **out);

/*
 * Read up to n bytes at offset into dst; *got says how many (fewer only at
 * end of file).
 */
int env_file_read_at(struct env_file *f, uint64_t offset, void *dst, size_t n,
    size_t *got);

/* Read exactly n bytes at offset; BT_ECORRUPT if the file is shorter. */
int env_file_read_exact(struct env_file *f, uint64_t offset, void *dst,
    size_t n);

/* Append all n bytes, or fail having appended an unknown prefix of them. */
int env_file_append(struct env_file *f, const void *p, size_t n);

/*
 * Write all n bytes at offset, over what is there and past the end as
 * needed (a gap between the end and offset reads as zeros); or fail having
 * written an unknown part of them.  Later appends still go to the end.
 * For page-oriented files (SQLite's, through catalog/sqlite_env.h) and the
 * commit log, which writes its records in place in reserved space (see
 * env_file_allocate()).
 */
int env_file_write_at(struct env_file *f, uint64_t offset, const void *p,
    size_t n);

/*
 * Write the concatenation of parts[0..count) at offset, as
 * env_file_write_at() writes one buffer (and with its failure: an
 * unknown part of them written), without first copying them together:
 * the posix env makes one pwritev(2), the in-memory env one write that
 * its faults count once; an env without it (RADOS) gets the parts joined
 * into one buffer and one write.  For the commit log, which writes a
 * large value from where the caller holds it.
 */
int env_file_write_parts_at(struct env_file *f, uint64_t offset,
    const struct slice *parts, size_t count);

/* Make the file's data durable (fdatasync). */
int env_file_sync(struct env_file *f);

/*
 * Start writing bytes [offset, offset + len) of a file being written out
 * to the disk, without waiting for it (sync_file_range with
 * SYNC_FILE_RANGE_WRITE), so that a later env_file_sync() has less left
 * to wait for; a file written in one stream and synced at its end (an
 * SSTable) then reaches the disk while it is written rather than all at
 * the sync.  A hint only: it makes nothing durable and promises no order,
 * and env_file_sync() is still what makes the bytes durable.  0 also where
 * the filesystem has no such operation (the in-memory env, which counts
 * the calls); an error only for a file not opened for writing.
 */
int env_file_start_writeback(struct env_file *f, uint64_t offset,
    uint64_t len);

/* Cut or extend the file to size bytes. */
int env_file_truncate(struct env_file *f, uint64_t size);

/*
 * Reserve disk space for bytes [offset, offset + len) of a file written in
 * place, so that writing them later allocates nothing and a sync of them
 * need not record a new file size (the commit log reserves its segments
 * ahead this way).  The file may grow to offset + len, the new bytes
 * reading as zeros, or keep its size (the in-memory env, which has no
 * space to reserve).  -EOPNOTSUPP where the filesystem cannot, -ENOSPC.
 * In the posix env, writes at an offset into space reserved so are
 * copies into a mapping rather than system calls (env_posix_new()); a
 * reservation that failed leaves them pwrites.
 */
int env_file_allocate(struct env_file *f, uint64_t offset, uint64_t len);

int env_file_size(struct env_file *f, uint64_t *size);

/* Close; accepts NULL.  Returns the first error of closing. */
int env_file_close(struct env_file *f);

/* The size of a file by path; -ENOENT when absent. */
int env_path_size(struct env *env, const char *path, uint64_t *size);
/* The bytes that files may still take on the filesystem holding path
 * (statvfs(3)'s f_bavail blocks; UINT64_MAX in the in-memory env unless
 * a test sets it, env_fault_set_available()). */
int env_path_available(struct env *env, const char *path, uint64_t *bytes);
/* The size of the filesystem holding path (statvfs(3)'s f_blocks;
 * UINT64_MAX, unknown, in the in-memory env). */
int env_path_capacity(struct env *env, const char *path, uint64_t *bytes);
/* The figures of the filesystem holding path, as statvfs(3) gives them,
 * in bytes; UINT64_MAX where the env cannot tell (the in-memory env's
 * size).  An env without its own path_space gives env_path_capacity()
 * as total, env_path_available() as both free and available, and
 * blocks of 4 KiB. */
struct env_space {
	uint64_t total;		/* f_blocks */
	uint64_t free;		/* f_bfree: not used by any file */
	uint64_t available;	/* f_bavail: that files may still take */
	uint32_t block_size;	/* f_frsize: the unit of the three */
};
int env_path_space(struct env *env, const char *path, struct env_space *out);

static inline bool
env_path_exists(struct env *env, const char *path)
{
	uint64_t size;

	return env_path_size(env, path, &size) == 0;
}

/* Atomically replace to with from (POSIX rename). */
int env_path_rename(struct env *env, const char *from, const char *to);
int env_path_remove(struct env *env, const char *path);

/* Create a directory; 0 if it already exists. */
int env_dir_create(struct env *env, const char *path);

/* Make the directory's entries (creates, renames, removes) durable. */
int env_dir_sync(struct env *env, const char *path);

/*
 * Call fn(arg, name) for each entry of the directory except "." and "..",
 * in no particular order.  A non-zero return from fn stops the listing and
 * is returned.
 */
int env_dir_list(struct env *env, const char *path,
    int (*fn)(void *arg, const char *name), void *arg);

/*
 * Take an exclusive lock on path (created if absent) for this process and
 * write the holder's pid into it.  -EWOULDBLOCK if another process or
 * another env_lock in this process holds it; the detail then names the
 * holder's pid.
 */
int env_lock(struct env *env, const char *path, struct env_lock **out);
/* Release a lock; accepts NULL. */
void env_unlock(struct env_lock *lock);

/*
 * The directory holding path, as a new string (bt_free it): "." for a bare
 * name, "/" for "/name".  NULL when memory runs out.
 */
char *env_path_parent(const char *path);

/* Wall-clock time in microseconds since the epoch (settable in tests). */
uint64_t env_now_micros(struct env *env);

/*
 * The in-memory fault-injecting environment.  Files and directories live in
 * memory; each file remembers its content as of its last sync, and each
 * directory which of its entries were synced.  Directories must be created
 * before files in them (as on a real filesystem), and a new directory is
 * itself an unsynced entry of its parent until the parent is dir-synced.
 * Paths name the same node with or without a leading "/"; directories
 * cannot be renamed.
 */
int env_fault_new(struct env **out);

/* Which operation a fault applies to. */
enum env_fault_op {
	ENV_FAULT_APPEND,	/* append and write at */
	ENV_FAULT_SYNC,		/* file sync and dir sync */
	ENV_FAULT_OPEN,		/* open for writing (create or append) */
	ENV_FAULT_RENAME,
};

/*
 * The nth call of op from now (1 = the next) fails with rc (e.g. -EIO,
 * -ENOSPC), and so does every later one while sticky; otherwise only that
 * one.  n = 0 disarms.  A failed append or write at writes nothing.
 */
void env_fault_fail_after(struct env *env, enum env_fault_op op, long n,
    int rc, bool sticky);

/*
 * Simulate power loss: every file goes back to its content as of its last
 * sync (bytes appended since are lost, so a file never synced becomes
 * empty; bytes overwritten since get their synced content back; a cut by
 * truncation is durable at once), and every directory forgets the creates,
 * renames and removes made since its last dir sync (a file created in an
 * unsynced directory entry disappears; an unsynced rename is undone; an
 * unsynced remove comes back).  Open file objects stay usable.
 */
void env_fault_drop_unsynced(struct env *env);
/*
 * Power loss where the disk wrote unsynced pages out of order: as
 * env_fault_drop_unsynced, except that a file extended past its synced
 * length keeps that length, and each ENV_FAULT_PAGE-byte sector of the
 * unsynced part either survives or reads as zeros, at random (seed), so a
 * later write can survive while an earlier one is lost.
 */
void env_fault_drop_unsynced_torn(struct env *env, uint64_t seed);
#define ENV_FAULT_PAGE	512

/* XOR the byte at offset of path with mask (in both synced and current
 * content).  -ENOENT, or -EINVAL if offset is past the end. */
int env_fault_flip_byte(struct env *env, const char *path, uint64_t offset,
    uint8_t mask);

/* Make env_now_micros() return micros from now on (0: the real clock). */
void env_fault_set_clock(struct env *env, uint64_t micros);

/* Make every file sync take micros longer (0: no delay), as a disk would,
 * so that tests can watch concurrent syncs being batched. */
void env_fault_set_sync_delay(struct env *env, uint64_t micros);

/* What env_path_available() reports from now on (UINT64_MAX at first).
 * Nothing else changes: files still grow without limit. */
void env_fault_set_available(struct env *env, uint64_t bytes);

/* Counters of calls made, for tests that check sync ordering. */
struct env_fault_stats {
	uint64_t appends;	/* and writes at an offset */
	uint64_t file_syncs;
	uint64_t writebacks;	/* env_file_start_writeback() calls */
	uint64_t dir_syncs;
	uint64_t renames;
	uint64_t allocates;	/* env_file_allocate() calls */
};
void env_fault_get_stats(struct env *env, struct env_fault_stats *out);

#endif
