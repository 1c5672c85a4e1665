/*
 * env_posix.c - the file environment on the local filesystem.
 *
 * Files are plain file descriptors: pread for reads, write on an O_APPEND
 * descriptor for appends (looping over EINTR and short writes), fdatasync
 * for syncs.  A write at an offset is a pwrite; as Linux's pwrite ignores
 * the offset under O_APPEND, the first one clears O_APPEND on that
 * descriptor, and its appends seek to the end from then on.  A directory
 * is synced by fsync of an O_DIRECTORY descriptor.  Writeback is started
 * ahead of a sync by sync_file_range(SYNC_FILE_RANGE_WRITE).
 * Locks are flock(2) locks, which belong to an open file description, so
 * that a second env_lock() on the same file conflicts whether it comes from
 * another process or from this one.
 *
 * A write at an offset inside space that env_file_allocate() reserved is
 * a copy into a writable shared mapping instead (posix_window_write), so
 * that the commit log, which reserves its segments ahead and writes each
 * group of records in place, makes no system call per write.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "util/alloc.h"
#include "util/env.h"
#include "util/error.h"

/*
 * Reads through a mapping.  A file opened ENV_READ is mapped read-only and
 * shared, as long as it was when opened, while the env's mapped files stay
 * within POSIX_MAP_LIMIT bytes (mapped pages count in the resident set, so
 * the budget bounds what mapping adds to it; past it files are read by
 * pread, and mapped at a later read once closed files have made room:
 * a compaction's output is opened before the files it replaces close).
 * A read copies what the mapping covers and preads the rest, so a file
 * that grew reads as it does unmapped.
 *
 * A file cut short under its mapping makes the copy fault with SIGBUS
 * where pread would return fewer bytes.  A SIGBUS handler, installed once
 * per process when the first file is mapped, jumps back out of a copy that
 * a thread of ours has under way (posix_map_guard); that read and every
 * later one of the file then go to pread, which reports what the file now
 * holds, so a shrunk file reads exactly as it would unmapped (a short
 * read, which the engine's readers report as damage).  A SIGBUS anywhere
 * else goes to the handler that was there before, or kills the process
 * as it would have.  If the handler cannot be installed nothing is mapped.
 */
#define POSIX_MAP_LIMIT		((uint64_t)48 << 20)

/*
 * Writes through a mapping.  A write at an offset that lies wholly inside
 * the space this file object reserved with env_file_allocate() (which
 * fallocate(2) reported done, and which a truncate has not cut since) is
 * copied into a MAP_SHARED, PROT_WRITE mapping of one aligned window of
 * POSIX_WRITE_WINDOW bytes around it (no further than the reserved space,
 * to the end of its last page), mapped when first written and
 * unmapped when a write moves on to the next window, and at truncate and
 * close; any other write is a pwrite.
 *
 * The copy lands in the page cache, exactly where pwrite puts its bytes:
 * a reader of the file (pread, a read mapping, another process) sees them
 * at once, a kill of the process loses nothing, and fdatasync writes back
 * the pages dirtied through the mapping as it does those dirtied by
 * pwrite (on Linux the first write to a clean page of a shared mapping
 * faults and marks the page dirty; writeback cleans it and protects it
 * again, so the next write marks it once more).  Only reserved space is
 * written through it: its blocks are allocated, so a write fault needs no
 * disk space, and it lies within the file's size, so no page is past the
 * end.  If a copy faults all the same (SIGBUS: the file was cut by
 * someone else, or the filesystem failed the fault) the guard of mapped
 * reads (posix_map_guard) jumps out of it, the write is done again by
 * pwrite, which reports the real error if there is one, and the file
 * writes by pwrite from then on.
 *
 * A sync costs more with the window: writeback write-protects each page
 * it wrote that is mapped (with a flush of that page's TLB entry on
 * every CPU running the process), and the next copy into the page
 * faults to make it writable again.  A file synced every few writes (the
 * log of synced commits) pays that on every sync for little saved, so
 * the window is used only from the POSIX_WINDOW_AFTER_WRITES-th write
 * since the file's last sync on, and a sync that comes sooner than that
 * unmaps it first: files synced that often write by pwrite.  And a
 * write of more than POSIX_WINDOW_MAX_WRITE bytes is a pwrite: the copy
 * saves one system call but faults once for each page it first dirties,
 * and for a large record (a large cell written through the mount) those
 * faults cost more than the one call they save.
 *
 * Only mapped pages count in the resident set, so one window per file
 * bounds what this adds to it; the window is not counted in
 * POSIX_MAP_LIMIT, which budgets the read mappings.
 */
#define POSIX_WRITE_WINDOW	((uint64_t)1 << 20)
#define POSIX_WINDOW_AFTER_WRITES	32
/* iovecs a pwritev is given at a time (IOV_MAX is at least 16). */
#define POSIX_IOV_BATCH			16
#define POSIX_WINDOW_MAX_WRITE	4096
#define POSIX_WINDOW_POPULATE	((size_t)64 << 10)

struct posix_env {
	struct env base;
	atomic_uint_fast64_t mapped;	/* bytes of the files mapped now */
	uint64_t page;		/* the page size */
	bool window_ok;		/* the page size divides the window */
};

struct posix_file {
	struct env_file base;
	int fd;
	bool writable;
	bool positional;	/* O_APPEND cleared by a write at an offset */
	/* NULL when not mapped; set once, by the open or by a read. */
	_Atomic(const uint8_t *) map;
	size_t map_len;		/* the file's size when it was opened */
	atomic_bool map_faulted;	/* a copy faulted: read by pread */
	/* Writes in place, the writing thread's alone (writable files). */
	uint64_t reserved_start;	/* allocated [start, end), within */
	uint64_t reserved_end;		/* the size; empty when equal */
	uint8_t *window;	/* NULL, or the window at window_offset */
	uint64_t window_offset;
	size_t window_len;
	size_t window_populated;	/* its first bytes made writable */
	bool window_faulted;	/* a copy faulted: write by pwrite */
	uint32_t unsynced_writes;	/* writes at since the last sync */
};

/* The copy under way on this thread, or NULL.  Initial-exec: the handler
 * must not make the thread allocate its TLS block. */
static __thread sigjmp_buf *volatile posix_map_guard
    __attribute__((tls_model("initial-exec")));
static struct sigaction posix_sigbus_prev;
static pthread_once_t posix_sigbus_once = PTHREAD_ONCE_INIT;
static bool posix_sigbus_installed;

static void
posix_sigbus(int sig, siginfo_t *info, void *ctx)
{
	sigjmp_buf *guard = posix_map_guard;
	struct sigaction dfl;

	if (guard != NULL) {
		posix_map_guard = NULL;
		siglongjmp(*guard, 1);
	}
	if ((posix_sigbus_prev.sa_flags & SA_SIGINFO) &&
	    posix_sigbus_prev.sa_sigaction != NULL) {
		posix_sigbus_prev.sa_sigaction(sig, info, ctx);
	} else if (posix_sigbus_prev.sa_handler == SIG_IGN) {
		if (info == NULL || info->si_code <= 0)
			return;		/* sent: ignored, as it asked */
		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		sigemptyset(&dfl.sa_mask);
		sigaction(SIGBUS, &dfl, NULL);
	} else if (posix_sigbus_prev.sa_handler != SIG_DFL) {
		posix_sigbus_prev.sa_handler(sig);
	} else {
		/* Returning retries the faulting access under the default
		 * action (a SIGBUS that raise() sent is not retried). */
		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		sigemptyset(&dfl.sa_mask);
		sigaction(SIGBUS, &dfl, NULL);
		if (info == NULL || info->si_code <= 0)
			raise(SIGBUS);
	}
}

/* SA_NODEFER: the jump out skips the return that would unblock SIGBUS
 * (posix_map_copy). */
static void
posix_sigbus_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = posix_sigbus;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	posix_sigbus_installed = sigaction(SIGBUS, &sa,
	    &posix_sigbus_prev) == 0;
}

/*
 * Copy n bytes of a mapping; -EFAULT if the copy faulted (SIGBUS).  The
 * jump skips the handler's return, which would unblock SIGBUS: SA_NODEFER
 * keeps it unblocked, but a runtime that wraps handlers (TSan) may not
 * pass that flag on, so the rare faulted copy unblocks it itself (or the
 * thread's next SIGBUS, and those of threads it creates, would kill).
 */
static int
posix_map_copy(void *dst, const void *src, size_t n)
{
	sigjmp_buf jump;
	sigset_t bus;

	if (sigsetjmp(jump, 0) != 0) {
		sigemptyset(&bus);
		sigaddset(&bus, SIGBUS);
		pthread_sigmask(SIG_UNBLOCK, &bus, NULL);
		return -EFAULT;
	}
	posix_map_guard = &jump;
	atomic_signal_fence(memory_order_seq_cst);
	memcpy(dst, src, n);
	atomic_signal_fence(memory_order_seq_cst);
	posix_map_guard = NULL;
	return 0;
}

/*
 * Map f (map_len bytes) if the budget allows; unmapped is not an error.
 * Readers may race to map a file: one mapping wins, the others undo
 * theirs.
 */
static void
posix_map_try(struct posix_env *env, struct posix_file *f)
{
	const uint8_t *none = NULL;
	uint64_t size = f->map_len;
	void *p;

	if (atomic_load_explicit(&env->mapped, memory_order_relaxed) + size >
	    POSIX_MAP_LIMIT)
		return;
	if (pthread_once(&posix_sigbus_once, posix_sigbus_install) != 0 ||
	    !posix_sigbus_installed)
		return;
	if (atomic_fetch_add(&env->mapped, size) + size > POSIX_MAP_LIMIT) {
		atomic_fetch_sub(&env->mapped, size);
		return;
	}
	p = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, f->fd, 0);
	if (p == MAP_FAILED) {
		atomic_fetch_sub(&env->mapped, size);
		return;
	}
	if (!atomic_compare_exchange_strong(&f->map, &none, p)) {
		munmap(p, (size_t)size);
		atomic_fetch_sub(&env->mapped, size);
	}
}

static void
posix_map_close(struct posix_env *env, struct posix_file *f)
{
	const uint8_t *map = atomic_load(&f->map);

	if (map == NULL)
		return;
	munmap((void *)map, f->map_len);
	atomic_fetch_sub(&env->mapped, f->map_len);
	atomic_store(&f->map, NULL);
}

static void
posix_window_unmap(struct posix_file *f)
{
	if (f->window == NULL)
		return;
	munmap(f->window, f->window_len);
	f->window = NULL;
}

/*
 * Map the window at offset (a multiple of POSIX_WRITE_WINDOW), as far as
 * the reserved space reaches into it; false if it cannot be, and the
 * write is then a pwrite.
 */
static bool
posix_window_map(struct posix_env *env, struct posix_file *f,
    uint64_t offset)
{
	uint64_t len = f->reserved_end - offset;
	void *p;

	posix_window_unmap(f);
	if (len > POSIX_WRITE_WINDOW)
		len = POSIX_WRITE_WINDOW;
	len = (len + env->page - 1) / env->page * env->page;
	if (pthread_once(&posix_sigbus_once, posix_sigbus_install) != 0 ||
	    !posix_sigbus_installed)
		return false;
	p = mmap(NULL, (size_t)len, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd,
	    (off_t)offset);
	if (p == MAP_FAILED)
		return false;
	f->window = p;
	f->window_offset = offset;
	f->window_len = (size_t)len;
	f->window_populated = 0;
	return true;
}

/*
 * Make the window's pages up to end (a position in it) writable, and a
 * stretch past it, before a copy reaches them, POSIX_WINDOW_POPULATE
 * bytes of pages at a time (bt_prefault): the copy would otherwise fault
 * once for each page it first writes.  The pages it readies ahead hold
 * the zeros of reserved space, which they keep until records are copied
 * over them.  Where the call fails (an older kernel, or a page that
 * cannot be had, which the copy then meets itself) the rest of the
 * window faults page by page, as it would without the call.
 */
static void
posix_window_populate(struct posix_env *env, struct posix_file *f,
    size_t end)
{
	size_t to;

	if (end <= f->window_populated)
		return;
	to = end + POSIX_WINDOW_POPULATE;
	to = (to + env->page - 1) / env->page * env->page;
	if (to > f->window_len)
		to = f->window_len;
	if (bt_prefault(f->window + f->window_populated,
	    to - f->window_populated) < 0)
		to = f->window_len;
	f->window_populated = to;
}

/*
 * Write n bytes at offset through the window if they lie in reserved
 * space; false if they were not all written so (not reserved, or the
 * mapping failed or faulted), and the caller then pwrites them all.
 */
static bool
posix_window_write(struct posix_env *env, struct posix_file *f,
    uint64_t offset, const uint8_t *src, size_t n)
{
	uint64_t base;
	size_t part;

	if (f->unsynced_writes < POSIX_WINDOW_AFTER_WRITES)
		f->unsynced_writes++;
	if (f->unsynced_writes < POSIX_WINDOW_AFTER_WRITES ||
	    n > POSIX_WINDOW_MAX_WRITE || !env->window_ok ||
	    f->window_faulted ||
	    offset < f->reserved_start || offset > f->reserved_end ||
	    n > f->reserved_end - offset)
		return false;
	while (n > 0) {
		base = offset & ~(POSIX_WRITE_WINDOW - 1);
		if ((f->window == NULL || f->window_offset != base ||
		    offset >= base + f->window_len) &&
		    !posix_window_map(env, f, base))
			return false;
		part = f->window_len - (offset - base);
		if (part > n)
			part = n;
		posix_window_populate(env, f, offset - base + part);
		if (posix_map_copy(f->window + (offset - base), src,
		    part) < 0) {
			f->window_faulted = true;
			posix_window_unmap(f);
			return false;
		}
		offset += part;
		src += part;
		n -= part;
	}
	return true;
}

/* The space reserved by a successful fallocate of [offset, end). */
static void
posix_reserved_add(struct posix_file *f, uint64_t offset, uint64_t end)
{
	if (f->reserved_start < f->reserved_end &&
	    offset <= f->reserved_end && end >= f->reserved_start) {
		if (offset < f->reserved_start)
			f->reserved_start = offset;
		if (end > f->reserved_end)
			f->reserved_end = end;
	} else {
		f->reserved_start = offset;
		f->reserved_end = end;
	}
}

/* The file is cut (or grown) to size: no reserved space lies past it. */
static void
posix_reserved_cut(struct posix_file *f, uint64_t size)
{
	if (f->reserved_end > size)
		f->reserved_end = size;
	if (f->reserved_start >= f->reserved_end)
		f->reserved_start = f->reserved_end = 0;
}

struct posix_lock {
	struct env_lock base;
	int fd;
};

/* Record the failed system call with its path and return -err. */
static int
posix_error(int err, const char *path, const char *what)
{
	return bt_error_set(-err, "%s: %s: %s", path, what, strerror(err));
}

static int
posix_file_open(struct env *env, const char *path, enum env_open_mode mode,
    struct env_file **out)
{
	struct posix_file *f;
	struct stat st;
	mode_t perm = 0644;
	int flags, rc;

	switch (mode) {
	case ENV_READ:
		flags = O_RDONLY;
		break;
	case ENV_CREATE_PRIVATE:
		perm = 0600;
		/* fall through */
	case ENV_CREATE:
		flags = O_RDWR | O_APPEND | O_CREAT | O_EXCL;
		break;
	case ENV_APPEND:
		flags = O_RDWR | O_APPEND | O_CREAT;
		break;
	default:
		return bt_error_set(-EINVAL, "%s: bad open mode %d", path,
		    (int)mode);
	}
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
	atomic_init(&f->map_faulted, false);
	do {
		f->fd = open(path, flags | O_CLOEXEC, perm);
	} while (f->fd < 0 && errno == EINTR);
	if (f->fd < 0) {
		rc = posix_error(errno, path, "open");
		goto out_path;
	}
	if (fstat(f->fd, &st) < 0) {
		rc = posix_error(errno, path, "fstat");
		goto out_fd;
	}
	if (S_ISDIR(st.st_mode)) {
		rc = posix_error(EISDIR, path, "open");
		goto out_fd;
	}
	atomic_init(&f->map, NULL);
	if (mode == ENV_READ && S_ISREG(st.st_mode) && st.st_size > 0 &&
	    (uint64_t)st.st_size <= SIZE_MAX) {
		f->map_len = (size_t)st.st_size;
		posix_map_try((struct posix_env *)env, f);
	}
	*out = &f->base;
	return 0;
out_fd:
	close(f->fd);
out_path:
	bt_free(f->base.path);
out_free:
	bt_free(f);
out:
	return rc;
}

static int
posix_file_read_at(struct env_file *base, uint64_t offset, void *dst,
    size_t n, size_t *got)
{
	struct posix_file *f = (struct posix_file *)base;
	const uint8_t *map;
	uint8_t *p = dst;
	size_t done = 0;
	ssize_t r;

	map = atomic_load_explicit(&f->map, memory_order_acquire);
	if (map == NULL && f->map_len > 0 && !atomic_load_explicit(
	    &f->map_faulted, memory_order_relaxed)) {
		posix_map_try((struct posix_env *)base->env, f);
		map = atomic_load_explicit(&f->map, memory_order_acquire);
	}
	if (map != NULL && offset < f->map_len && !atomic_load_explicit(
	    &f->map_faulted, memory_order_relaxed)) {
		done = n < f->map_len - offset ? n :
		    f->map_len - (size_t)offset;
		if (posix_map_copy(p, map + offset, done) < 0) {
			atomic_store(&f->map_faulted, true);
			done = 0;
		} else if (done == n) {
			*got = n;
			return 0;
		}
	}
	while (done < n) {
		r = pread(f->fd, p + done, n - done, (off_t)(offset + done));
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return bt_error_set(-errno,
			    "%s: read at offset %" PRIu64 ": %s", base->path,
			    offset + done, strerror(errno));
		}
		if (r == 0)
			break;
		done += (size_t)r;
	}
	*got = done;
	return 0;
}

static int
posix_file_append(struct env_file *base, const void *src, size_t n)
{
	struct posix_file *f = (struct posix_file *)base;
	const uint8_t *p = src;
	ssize_t r;

	if (!f->writable)
		return posix_error(EBADF, base->path, "append");
	if (f->positional && lseek(f->fd, 0, SEEK_END) < 0)
		return posix_error(errno, base->path, "seek to the end");
	while (n > 0) {
		r = write(f->fd, p, n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return posix_error(errno, base->path, "write");
		}
		if (r == 0)
			return posix_error(EIO, base->path, "write");
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

/* Make a writable file's writes positional (no O_APPEND); what names
 * the operation refused. */
static int
posix_file_positional(struct posix_file *f, const char *what)
{
	int flags;

	if (!f->writable)
		return posix_error(EBADF, f->base.path, what);
	if (!f->positional) {
		if ((flags = fcntl(f->fd, F_GETFL)) < 0 ||
		    fcntl(f->fd, F_SETFL, flags & ~O_APPEND) < 0)
			return posix_error(errno, f->base.path, "fcntl");
		f->positional = true;
	}
	return 0;
}

static int
posix_file_write_at(struct env_file *base, uint64_t offset, const void *src,
    size_t n)
{
	struct posix_file *f = (struct posix_file *)base;
	const uint8_t *p = src;
	ssize_t r;
	int rc;

	if ((rc = posix_file_positional(f, "write at")) < 0)
		return rc;
	if (posix_window_write((struct posix_env *)base->env, f, offset, p,
	    n))
		return 0;
	while (n > 0) {
		r = pwrite(f->fd, p, n, (off_t)offset);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return bt_error_set(-errno,
			    "%s: write at offset %" PRIu64 ": %s", base->path,
			    offset, strerror(errno));
		}
		if (r == 0)
			return posix_error(EIO, base->path, "write at");
		p += r;
		offset += (uint64_t)r;
		n -= (size_t)r;
	}
	return 0;
}

/*
 * One pwritev(2) for all the parts (POSIX_IOV_BATCH at a time), going on
 * from where a short write stopped.  Never through the write window,
 * which takes small writes only; the window's mapping and pwritev share
 * the page cache, so either sees the other's bytes.
 */
static int
posix_file_write_parts_at(struct env_file *base, uint64_t offset,
    const struct slice *parts, size_t count)
{
	struct posix_file *f = (struct posix_file *)base;
	struct iovec iov[POSIX_IOV_BATCH];
	size_t i = 0, skip = 0, k, done;
	ssize_t r;
	int rc;

	if ((rc = posix_file_positional(f, "write at")) < 0)
		return rc;
	if (f->unsynced_writes < POSIX_WINDOW_AFTER_WRITES)
		f->unsynced_writes++;
	for (;;) {
		while (i < count && parts[i].n == skip) {
			i++;
			skip = 0;
		}
		if (i == count)
			return 0;
		for (k = 0; k < POSIX_IOV_BATCH && i + k < count; k++) {
			iov[k].iov_base = (void *)(uintptr_t)(parts[i + k].p +
			    (k == 0 ? skip : 0));
			iov[k].iov_len = parts[i + k].n - (k == 0 ? skip : 0);
		}
		r = pwritev(f->fd, iov, (int)k, (off_t)offset);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return bt_error_set(-errno,
			    "%s: write at offset %" PRIu64 ": %s", base->path,
			    offset, strerror(errno));
		}
		if (r == 0)
			return posix_error(EIO, base->path, "write at");
		offset += (uint64_t)r;
		for (done = (size_t)r; done > 0 && done >= parts[i].n - skip;
		    i++) {
			done -= parts[i].n - skip;
			skip = 0;
		}
		skip += done;
	}
}

static int
posix_file_sync(struct env_file *base)
{
	struct posix_file *f = (struct posix_file *)base;

	if (f->unsynced_writes < POSIX_WINDOW_AFTER_WRITES)
		posix_window_unmap(f);
	f->unsynced_writes = 0;
	if (fdatasync(f->fd) < 0)
		return posix_error(errno, base->path, "fdatasync");
	return 0;
}

/*
 * sync_file_range() is Linux's.  Its failures are dropped, as the hint's
 * contract says: where the filesystem refuses it (EINVAL on some) the sync
 * at the end writes everything anyway, and a disk error (EIO, ENOSPC)
 * comes back from that sync, which is where the caller checks for it.
 */
static int
posix_file_start_writeback(struct env_file *base, uint64_t offset,
    uint64_t len)
{
	struct posix_file *f = (struct posix_file *)base;

	if (!f->writable)
		return posix_error(EBADF, base->path, "start writeback");
#ifdef SYNC_FILE_RANGE_WRITE
	if (len > 0)
		(void)sync_file_range(f->fd, (off_t)offset, (off_t)len,
		    SYNC_FILE_RANGE_WRITE);
#else
	(void)offset;
	(void)len;
#endif
	return 0;
}

static int
posix_file_truncate(struct env_file *base, uint64_t size)
{
	struct posix_file *f = (struct posix_file *)base;
	int rc;

	if (!f->writable)
		return posix_error(EBADF, base->path, "truncate");
	posix_window_unmap(f);
	posix_reserved_cut(f, size);
	do {
		rc = ftruncate(f->fd, (off_t)size);
	} while (rc < 0 && errno == EINTR);
	if (rc < 0)
		return bt_error_set(-errno, "%s: truncate to %" PRIu64 ": %s",
		    base->path, size, strerror(errno));
	return 0;
}

static int
posix_file_allocate(struct env_file *base, uint64_t offset, uint64_t len)
{
	struct posix_file *f = (struct posix_file *)base;
	int rc;

	if (!f->writable)
		return posix_error(EBADF, base->path, "allocate");
	do {
		rc = fallocate(f->fd, 0, (off_t)offset, (off_t)len);
	} while (rc < 0 && errno == EINTR);
	if (rc < 0)
		return bt_error_set(-errno, "%s: allocate %" PRIu64 " bytes at "
		    "offset %" PRIu64 ": %s", base->path, len, offset,
		    strerror(errno));
	if (len > 0 && offset + len > offset)
		posix_reserved_add(f, offset, offset + len);
	return 0;
}

static int
posix_file_size(struct env_file *base, uint64_t *size)
{
	struct posix_file *f = (struct posix_file *)base;
	struct stat st;

	if (fstat(f->fd, &st) < 0)
		return posix_error(errno, base->path, "fstat");
	*size = (uint64_t)st.st_size;
	return 0;
}

/* close(2) is not retried on EINTR: on Linux the descriptor is gone. */
static int
posix_file_close(struct env_file *base)
{
	struct posix_file *f = (struct posix_file *)base;
	int rc = 0;

	posix_map_close((struct posix_env *)base->env, f);
	posix_window_unmap(f);
	if (close(f->fd) < 0 && errno != EINTR)
		rc = posix_error(errno, base->path, "close");
	bt_free(base->path);
	bt_free(f);
	return rc;
}

static int
posix_path_size(struct env *env, const char *path, uint64_t *size)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return posix_error(errno, path, "stat");
	*size = (uint64_t)st.st_size;
	return 0;
}

static int
posix_path_available(struct env *env, const char *path, uint64_t *bytes)
{
	struct statvfs sv;

	(void)env;
	if (statvfs(path, &sv) < 0)
		return posix_error(errno, path, "statvfs");
	*bytes = (uint64_t)sv.f_bavail * (uint64_t)sv.f_frsize;
	return 0;
}

static int
posix_path_capacity(struct env *env, const char *path, uint64_t *bytes)
{
	struct statvfs sv;

	(void)env;
	if (statvfs(path, &sv) < 0)
		return posix_error(errno, path, "statvfs");
	*bytes = (uint64_t)sv.f_blocks * (uint64_t)sv.f_frsize;
	return 0;
}

static int
posix_path_space(struct env *env, const char *path, struct env_space *out)
{
	struct statvfs sv;

	(void)env;
	if (statvfs(path, &sv) < 0)
		return posix_error(errno, path, "statvfs");
	out->total = (uint64_t)sv.f_blocks * (uint64_t)sv.f_frsize;
	out->free = (uint64_t)sv.f_bfree * (uint64_t)sv.f_frsize;
	out->available = (uint64_t)sv.f_bavail * (uint64_t)sv.f_frsize;
	out->block_size = (uint32_t)sv.f_frsize;
	return 0;
}

static int
posix_path_rename(struct env *env, const char *from, const char *to)
{
	if (rename(from, to) < 0)
		return bt_error_set(-errno, "%s: rename to %s: %s", from, to,
		    strerror(errno));
	return 0;
}

/* Remove a file, or an empty directory. */
static int
posix_path_remove(struct env *env, const char *path)
{
	if (unlink(path) == 0)
		return 0;
	if (errno == EISDIR && rmdir(path) == 0)
		return 0;
	return posix_error(errno, path, "remove");
}

static int
posix_dir_create(struct env *env, const char *path)
{
	struct stat st;

	if (mkdir(path, 0755) == 0)
		return 0;
	if (errno != EEXIST)
		return posix_error(errno, path, "mkdir");
	if (stat(path, &st) < 0)
		return posix_error(errno, path, "stat");
	if (!S_ISDIR(st.st_mode))
		return posix_error(ENOTDIR, path, "mkdir");
	return 0;
}

static int
posix_dir_sync(struct env *env, const char *path)
{
	int fd, rc = 0;

	do {
		fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	} while (fd < 0 && errno == EINTR);
	if (fd < 0)
		return posix_error(errno, path, "open directory");
	if (fsync(fd) < 0)
		rc = posix_error(errno, path, "fsync directory");
	close(fd);
	return rc;
}

static int
posix_dir_list(struct env *env, const char *path,
    int (*fn)(void *arg, const char *name), void *arg)
{
	struct dirent *de;
	DIR *d;
	int rc = 0;

	if ((d = opendir(path)) == NULL)
		return posix_error(errno, path, "opendir");
	for (;;) {
		errno = 0;
		if ((de = readdir(d)) == NULL) {
			if (errno != 0)
				rc = posix_error(errno, path, "readdir");
			break;
		}
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if ((rc = fn(arg, de->d_name)) != 0)
			break;
	}
	closedir(d);
	return rc;
}

/*
 * Name the holder of a lock that could not be taken.  The holder writes
 * its pid right after locking, so an empty file means it is about to:
 * look again a few times before giving up on the number.
 */
static int
posix_lock_held(int fd, const char *path)
{
	struct timespec pause = { 0, 1000000 };
	char text[32];
	ssize_t r;
	long pid;
	int tries;

	for (tries = 0; tries < 20; tries++) {
		r = pread(fd, text, sizeof(text) - 1, 0);
		if (r > 0) {
			text[r] = '\0';
			pid = strtol(text, NULL, 10);
			if (pid > 0)
				return bt_error_set(-EWOULDBLOCK,
				    "%s: held by pid %ld", path, pid);
		}
		nanosleep(&pause, NULL);
	}
	return bt_error_set(-EWOULDBLOCK, "%s: held by another process",
	    path);
}

static int
posix_lock(struct env *env, const char *path, struct env_lock **out)
{
	struct posix_lock *l;
	char text[32];
	int fd, len, rc;

	do {
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	} while (fd < 0 && errno == EINTR);
	if (fd < 0) {
		rc = posix_error(errno, path, "open lock");
		goto out;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno == EWOULDBLOCK)
			rc = posix_lock_held(fd, path);
		else
			rc = posix_error(errno, path, "flock");
		goto out_close;
	}
	len = snprintf(text, sizeof(text), "%ld\n", (long)getpid());
	errno = 0;
	if (ftruncate(fd, 0) < 0 || pwrite(fd, text, (size_t)len, 0) != len) {
		rc = posix_error(errno ? errno : EIO, path, "write pid");
		goto out_close;
	}
	if ((l = bt_calloc(1, sizeof(*l))) == NULL) {
		rc = -ENOMEM;
		goto out_close;
	}
	l->base.env = env;
	l->fd = fd;
	*out = &l->base;
	return 0;
out_close:
	close(fd);
out:
	return rc;
}

/* Closing the descriptor releases the flock. */
static void
posix_unlock(struct env_lock *base)
{
	struct posix_lock *l = (struct posix_lock *)base;

	close(l->fd);
	bt_free(l);
}

static uint64_t
posix_now_micros(struct env *env)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void
posix_free(struct env *env)
{
	bt_free(env);
}

static const struct env_ops posix_ops = {
	.file_open = posix_file_open,
	.file_read_at = posix_file_read_at,
	.file_append = posix_file_append,
	.file_write_at = posix_file_write_at,
	.file_write_parts_at = posix_file_write_parts_at,
	.file_sync = posix_file_sync,
	.file_start_writeback = posix_file_start_writeback,
	.file_truncate = posix_file_truncate,
	.file_allocate = posix_file_allocate,
	.file_size = posix_file_size,
	.file_close = posix_file_close,
	.path_size = posix_path_size,
	.path_available = posix_path_available,
	.path_capacity = posix_path_capacity,
	.path_space = posix_path_space,
	.path_rename = posix_path_rename,
	.path_remove = posix_path_remove,
	.dir_create = posix_dir_create,
	.dir_sync = posix_dir_sync,
	.dir_list = posix_dir_list,
	.lock = posix_lock,
	.unlock = posix_unlock,
	.now_micros = posix_now_micros,
	.free = posix_free,
};

int
env_posix_new(struct env **out)
{
	struct posix_env *env;
	long page;

	if ((env = bt_calloc(1, sizeof(*env))) == NULL)
		return -ENOMEM;
	env->base.ops = &posix_ops;
	atomic_init(&env->mapped, 0);
	page = sysconf(_SC_PAGESIZE);
	env->page = page > 0 ? (uint64_t)page : 1;
	env->window_ok = page > 0 && POSIX_WRITE_WINDOW % (uint64_t)page == 0;
	*out = &env->base;
	return 0;
}
