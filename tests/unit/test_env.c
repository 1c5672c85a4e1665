/*
 * test_env.c - the file environment: the same file and directory
 * operations against the local filesystem (in a temporary directory) and
 * the in-memory fault env, locks (also from another process), and the
 * fault env's power loss, injected failures, byte flips and clock.
 * The local filesystem's mapped reads: a file opened for reading is mapped
 * (within the env's budget) and reads as it would by pread, also once it
 * grew or was cut short under the mapping, and a SIGBUS that is not a
 * mapped read's still reaches the handler that was there before, or kills.
 * Its writes in place inside space it reserved go through a writable
 * mapping: readers see them, a sync cleans the pages they dirtied, a
 * truncate or close unmaps, a write over 4 KiB is a pwrite, and a copy
 * that faults falls back to pwrite.
 * With TABLETFS_TEST_RADOS=CONF:POOL (tests/rados/test_env_rados.sh) the
 * same file, directory and lock tests run on the RADOS env too, with
 * locks between processes, the object size limit and renames of files
 * past one atomic copy; the mapping, SIGBUS and fault tests are the
 * posix and in-memory envs' own and are skipped there, each saying so.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rados_util.h"
#include "tap.h"
#include "util/env.h"
#include "util/error.h"

#define PATH_SIZE 512

static void
join(char *dst, const char *root, const char *name)
{
	if (snprintf(dst, PATH_SIZE, "%s/%s", root, name) >= PATH_SIZE)
		tap_bail("path too long");
}

/* The whole content of path as a string (at most size - 1 bytes). */
static int
slurp(struct env *env, const char *path, char *dst, size_t size)
{
	struct env_file *f;
	size_t got;
	int rc;

	if ((rc = env_file_open(env, path, ENV_READ, &f)) < 0)
		return rc;
	rc = env_file_read_at(f, 0, dst, size - 1, &got);
	env_file_close(f);
	dst[rc == 0 ? got : 0] = '\0';
	return rc;
}

static int
spew(struct env *env, const char *path, const char *text, bool sync)
{
	struct env_file *f;
	int rc;

	if ((rc = env_file_open(env, path, ENV_APPEND, &f)) < 0)
		return rc;
	if ((rc = env_file_append(f, text, strlen(text))) == 0 && sync)
		rc = env_file_sync(f);
	env_file_close(f);
	return rc;
}

static bool
detail_has(const char *what)
{
	return strstr(bt_error_detail(), what) != NULL;
}

struct listing {
	int calls;
	int stop_at;		/* return 7 on this call; 0: never */
	bool saw_sub, saw_dots;
	int files;
};

static int
list_cb(void *arg, const char *name)
{
	struct listing *l = arg;

	l->calls++;
	if (strcmp(name, "sub") == 0)
		l->saw_sub = true;
	else if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		l->saw_dots = true;
	else
		l->files++;
	return l->calls == l->stop_at ? 7 : 0;
}

/* Every file and directory operation, with the same expectations on both
 * envs. */
static void
test_file_ops(struct env *env, const char *root, const char *label)
{
	char f1[PATH_SIZE], f2[PATH_SIZE], f3[PATH_SIZE], sub[PATH_SIZE];
	char sf[PATH_SIZE], text[64];
	struct env_file *f, *r;
	struct listing l;
	uint64_t size, now;
	size_t got;
	int rc;

	join(f1, root, "one");
	join(f2, root, "two");
	join(f3, root, "three");
	join(sub, root, "sub");
	join(sf, sub, "inner");

	rc = env_file_open(env, f1, ENV_READ, &f);
	is_int(rc, -ENOENT, "%s: reading a missing file is ENOENT", label);
	ok(detail_has(f1), "%s: the detail names the path: %s", label,
	    bt_error_detail());

	is_int(env_file_open(env, f1, ENV_CREATE, &f), 0,
	    "%s: create", label);
	is_int(env_file_append(f, "hello", 5), 0, "%s: append", label);
	is_int(env_file_append(f, " world", 6), 0, "%s: append again", label);
	is_int(env_file_size(f, &size), 0, "%s: size", label);
	is_int(size, 11, "%s: size counts both appends", label);
	memset(text, 0, sizeof(text));
	is_int(env_file_read_at(f, 0, text, sizeof(text), &got), 0,
	    "%s: read the file being written", label);
	ok(got == 11 && memcmp(text, "hello world", 11) == 0,
	    "%s: read back what was appended", label);
	is_int(env_file_read_at(f, 6, text, 5, &got), 0, "%s: read at", label);
	ok(got == 5 && memcmp(text, "world", 5) == 0,
	    "%s: read at an offset", label);
	is_int(env_file_read_at(f, 11, text, 5, &got), 0,
	    "%s: read at the end", label);
	is_int(got, 0, "%s: nothing at the end", label);
	is_int(env_file_read_at(f, 100, text, 5, &got), 0,
	    "%s: read past the end", label);
	is_int(got, 0, "%s: nothing past the end", label);
	is_int(env_file_read_exact(f, 6, text, 5), 0, "%s: read exact",
	    label);
	rc = env_file_read_exact(f, 6, text, 6);
	is_int(rc, BT_ECORRUPT, "%s: short read exact is BT_ECORRUPT", label);
	ok(detail_has(f1) && detail_has("offset 11"),
	    "%s: short read names path and offset: %s", label,
	    bt_error_detail());
	is_int(env_file_sync(f), 0, "%s: sync", label);
	is_int(env_file_close(f), 0, "%s: close", label);
	is_int(env_file_close(NULL), 0, "%s: close NULL", label);

	is_int(env_file_open(env, f1, ENV_CREATE, &f), -EEXIST,
	    "%s: create of an existing file is EEXIST", label);
	is_int(env_file_open(env, f1, ENV_APPEND, &f), 0,
	    "%s: open for append", label);
	is_int(env_file_append(f, "!", 1), 0, "%s: append after reopen",
	    label);
	is_int(env_file_truncate(f, 5), 0, "%s: truncate", label);
	is_int(env_file_append(f, "X", 1), 0, "%s: append after truncate",
	    label);
	is_int(env_file_truncate(f, 9), 0, "%s: extend by truncate", label);
	is_int(env_file_close(f), 0, "%s: close", label);
	memset(text, 'z', sizeof(text));
	is_int(env_file_open(env, f1, ENV_READ, &r), 0, "%s: open read",
	    label);
	is_int(env_file_read_at(r, 0, text, sizeof(text), &got), 0,
	    "%s: read", label);
	ok(got == 9 && memcmp(text, "helloX\0\0\0", 9) == 0,
	    "%s: appends go to the end after a truncate; extension is zeros",
	    label);
	ok(env_file_append(r, "x", 1) < 0,
	    "%s: a file opened for reading refuses appends", label);
	env_file_close(r);

	is_int(env_path_size(env, f1, &size), 0, "%s: path size", label);
	is_int(size, 9, "%s: path size is the file size", label);
	is_int(env_path_size(env, f2, &size), -ENOENT,
	    "%s: path size of a missing file is ENOENT", label);
	size = 0;
	rc = env_path_available(env, root, &size);
	ok(rc == 0 && size > 0, "%s: the filesystem has room (%" PRIu64
	    " bytes)", label, size);
	ok(env_path_exists(env, f1) && !env_path_exists(env, f2),
	    "%s: env_path_exists", label);

	is_int(env_path_rename(env, f1, f2), 0, "%s: rename", label);
	ok(!env_path_exists(env, f1) && env_path_exists(env, f2),
	    "%s: rename moves the name", label);
	is_int(spew(env, f3, "old", false), 0, "%s: write another", label);
	is_int(env_path_rename(env, f2, f3), 0, "%s: rename over a file",
	    label);
	ok(slurp(env, f3, text, sizeof(text)) == 0 &&
	    memcmp(text, "helloX", 6) == 0,
	    "%s: rename replaces the target", label);
	is_int(env_path_rename(env, f1, f2), -ENOENT,
	    "%s: rename of a missing file is ENOENT", label);
	is_int(env_path_remove(env, f3), 0, "%s: remove", label);
	ok(!env_path_exists(env, f3), "%s: removed file is gone", label);
	is_int(env_path_remove(env, f3), -ENOENT,
	    "%s: remove of a missing file is ENOENT", label);

	is_int(env_dir_create(env, sub), 0, "%s: mkdir", label);
	is_int(env_dir_create(env, sub), 0, "%s: mkdir of an existing dir",
	    label);
	is_int(spew(env, sf, "in", true), 0, "%s: a file in the subdir",
	    label);
	is_int(env_dir_sync(env, sub), 0, "%s: dir sync", label);
	is_int(env_dir_sync(env, root), 0, "%s: dir sync of the root",
	    label);
	ok(env_dir_create(env, sf) < 0, "%s: mkdir over a file fails", label);
	ok(env_path_remove(env, sub) < 0,
	    "%s: remove of a non-empty dir fails", label);
	ok(env_file_open(env, sub, ENV_READ, &f) < 0,
	    "%s: a directory is not opened as a file", label);

	is_int(spew(env, f1, "a", false), 0, "%s: file a", label);
	is_int(spew(env, f2, "b", false), 0, "%s: file b", label);
	memset(&l, 0, sizeof(l));
	is_int(env_dir_list(env, root, list_cb, &l), 0, "%s: list", label);
	ok(l.calls == 3 && l.saw_sub && !l.saw_dots && l.files == 2,
	    "%s: list shows the two files and the subdir, no dots", label);
	memset(&l, 0, sizeof(l));
	l.stop_at = 2;
	is_int(env_dir_list(env, root, list_cb, &l), 7,
	    "%s: a non-zero callback result is returned", label);
	is_int(l.calls, 2, "%s: and stops the listing", label);
	is_int(env_dir_list(env, f3, list_cb, &l), -ENOENT,
	    "%s: listing a missing dir is ENOENT", label);

	is_int(env_path_remove(env, sf), 0, "%s: remove in subdir", label);
	is_int(env_path_remove(env, sub), 0, "%s: remove an empty dir",
	    label);
	ok(!env_path_exists(env, sub), "%s: the dir is gone", label);
	is_int(env_path_remove(env, f1), 0, "%s: clean a", label);
	is_int(env_path_remove(env, f2), 0, "%s: clean b", label);

	now = env_now_micros(env);
	ok(now / 1000000 >= (uint64_t)time(NULL) - 2 &&
	    now / 1000000 <= (uint64_t)time(NULL) + 2,
	    "%s: the clock is the wall clock", label);
}

/* The whole content of an open file, for contents with NUL bytes. */
static size_t
slurp_file(struct env_file *f, char *dst, size_t size)
{
	size_t got;

	if (env_file_read_at(f, 0, dst, size, &got) < 0)
		return (size_t)-1;
	return got;
}

/* Writes at an offset overwrite, extend the file with a zero gap, and
 * leave appends going to the end. */
static void
test_write_at(struct env *env, const char *root, const char *label)
{
	char path[PATH_SIZE], text[64];
	struct env_file *f, *r;
	uint64_t size;
	size_t got;

	join(path, root, "paged");
	is_int(env_file_open(env, path, ENV_CREATE, &f), 0,
	    "%s: write at: create", label);
	is_int(env_file_append(f, "0123456789", 10), 0,
	    "%s: write at: append", label);
	is_int(env_file_write_at(f, 2, "ab", 2), 0,
	    "%s: write at inside the file", label);
	is_int(env_file_write_at(f, 8, "XYZ", 3), 0,
	    "%s: write at across the end", label);
	is_int(env_file_write_at(f, 14, "!", 1), 0,
	    "%s: write at past the end", label);
	is_int(env_file_size(f, &size), 0, "%s: size", label);
	is_int(size, 15, "%s: writes at extend the file", label);
	is_int(env_file_append(f, "tail", 4), 0,
	    "%s: append after write at", label);
	is_int(env_file_write_at(f, 0, "", 0), 0,
	    "%s: an empty write at", label);
	got = slurp_file(f, text, sizeof(text));
	ok(got == 19 && memcmp(text, "01ab4567XYZ\0\0\0!tail", 19) == 0,
	    "%s: overwritten, gap of zeros, append at the end", label);
	is_int(env_file_truncate(f, 5), 0, "%s: truncate", label);
	is_int(env_file_append(f, "+", 1), 0, "%s: append", label);
	is_int(env_file_write_at(f, 0, "Z", 1), 0, "%s: write at 0", label);
	is_int(env_file_sync(f), 0, "%s: sync", label);
	got = slurp_file(f, text, sizeof(text));
	ok(got == 6 && memcmp(text, "Z1ab4+", 6) == 0,
	    "%s: appends follow a truncate after writes at", label);
	is_int(env_file_close(f), 0, "%s: close", label);

	is_int(env_file_open(env, path, ENV_READ, &r), 0, "%s: open read",
	    label);
	ok(env_file_write_at(r, 0, "x", 1) < 0,
	    "%s: a file opened for reading refuses writes at", label);
	env_file_close(r);
	is_int(env_file_open(env, path, ENV_APPEND, &f), 0,
	    "%s: open for append", label);
	is_int(env_file_write_at(f, 1, "Y", 1), 0,
	    "%s: write at after reopening", label);
	is_int(env_file_append(f, "-", 1), 0, "%s: and append", label);
	got = slurp_file(f, text, sizeof(text));
	ok(got == 7 && memcmp(text, "ZYab4+-", 7) == 0,
	    "%s: the reopened file is written in place and at the end",
	    label);
	env_file_close(f);
	is_int(env_path_remove(env, path), 0, "%s: clean up", label);
}

/* Starting writeback is a hint: it changes no byte, and a sync still
 * follows it; a file opened for reading refuses it. */
static void
test_writeback(struct env *env, const char *root, const char *label)
{
	char path[PATH_SIZE], text[64];
	struct env_file *f, *r;
	size_t got;

	join(path, root, "written-back");
	is_int(env_file_open(env, path, ENV_CREATE, &f), 0,
	    "%s: writeback: create", label);
	is_int(env_file_append(f, "0123456789", 10), 0,
	    "%s: writeback: append", label);
	is_int(env_file_start_writeback(f, 0, 10), 0,
	    "%s: start writeback of what was appended", label);
	is_int(env_file_start_writeback(f, 4, 0), 0,
	    "%s: start writeback of nothing", label);
	is_int(env_file_append(f, "abc", 3), 0,
	    "%s: append after the writeback", label);
	is_int(env_file_start_writeback(f, 8, 100), 0,
	    "%s: start writeback of a range past the end", label);
	is_int(env_file_sync(f), 0, "%s: then sync", label);
	got = slurp_file(f, text, sizeof(text));
	ok(got == 13 && memcmp(text, "0123456789abc", 13) == 0,
	    "%s: the writeback changed no byte", label);
	is_int(env_file_close(f), 0, "%s: close", label);
	is_int(env_file_open(env, path, ENV_READ, &r), 0,
	    "%s: open for reading", label);
	is_int(env_file_start_writeback(r, 0, 13), -EBADF,
	    "%s: a file opened for reading refuses a writeback", label);
	env_file_close(r);
	is_int(env_path_remove(env, path), 0, "%s: clean up", label);
}

/* A lock excludes a second one in this process and names the holder. */
static void
test_lock(struct env *env, const char *root, const char *label)
{
	char path[PATH_SIZE], text[64], want[64];
	struct env_lock *a, *b;
	int rc;

	join(path, root, "LOCK");
	is_int(env_lock(env, path, &a), 0, "%s: lock", label);
	is_int(slurp(env, path, text, sizeof(text)), 0, "%s: read LOCK",
	    label);
	is_int(strtol(text, NULL, 10), getpid(),
	    "%s: the lock file holds the pid", label);
	rc = env_lock(env, path, &b);
	is_int(rc, -EWOULDBLOCK, "%s: a second lock is refused", label);
	snprintf(want, sizeof(want), "held by pid %ld", (long)getpid());
	ok(detail_has(want) && detail_has(path),
	    "%s: the detail names the holder: %s", label, bt_error_detail());
	env_unlock(a);
	is_int(env_lock(env, path, &b), 0, "%s: lock again after unlock",
	    label);
	env_unlock(b);
	env_unlock(NULL);
	env_path_remove(env, path);
}

/*
 * Locks between processes: a child cannot take the parent's lock and is
 * told the parent's pid; the parent cannot take a child's lock and is
 * told the child's pid, and gets it once the child exits.
 */
static void
test_lock_fork(const char *root)
{
	char path[PATH_SIZE], want[64], c;
	struct env *env, *cenv;
	struct env_lock *a, *b;
	int status, to_parent[2], to_child[2], rc;
	pid_t pid;

	join(path, root, "LOCK");
	if (env_posix_new(&env) < 0)
		tap_bail("env_posix_new");
	is_int(env_lock(env, path, &a), 0, "posix: parent locks");
	fflush(stdout);
	if ((pid = fork()) < 0)
		tap_bail("fork");
	if (pid == 0) {
		if (env_posix_new(&cenv) < 0)
			_exit(2);
		rc = env_lock(cenv, path, &b);
		snprintf(want, sizeof(want), "held by pid %ld",
		    (long)getppid());
		_exit(rc == -EWOULDBLOCK && detail_has(want) ? 0 : 1);
	}
	ok(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	    WEXITSTATUS(status) == 0,
	    "posix: a child process is refused the lock, naming the parent");
	env_unlock(a);

	if (pipe(to_parent) < 0 || pipe(to_child) < 0)
		tap_bail("pipe");
	fflush(stdout);
	if ((pid = fork()) < 0)
		tap_bail("fork");
	if (pid == 0) {
		if (env_posix_new(&cenv) < 0 || env_lock(cenv, path, &b) < 0)
			_exit(2);
		if (write(to_parent[1], "L", 1) != 1 ||
		    read(to_child[0], &c, 1) != 1)
			_exit(3);
		_exit(0);
	}
	ok(read(to_parent[0], &c, 1) == 1, "posix: the child holds the lock");
	rc = env_lock(env, path, &a);
	is_int(rc, -EWOULDBLOCK, "posix: the parent is refused");
	snprintf(want, sizeof(want), "held by pid %ld", (long)pid);
	ok(detail_has(want), "posix: the detail names the child: %s",
	    bt_error_detail());
	if (write(to_child[1], "U", 1) != 1)
		tap_bail("write");
	ok(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	    WEXITSTATUS(status) == 0, "posix: the child exits cleanly");
	is_int(env_lock(env, path, &a), 0,
	    "posix: the lock is free once its holder exits");
	env_unlock(a);
	close(to_parent[0]);
	close(to_parent[1]);
	close(to_child[0]);
	close(to_child[1]);
	env_path_remove(env, path);
	env_free(env);
}

/*
 * Power loss with unsynced pages written out of order: the synced bytes
 * stay, every unsynced page is either intact or zeros, the file never
 * shrinks below its synced length, and over a few seeds both a lost page
 * followed by a surviving one and a cut file happen.
 */
static void
test_fault_drop_torn(void)
{
	enum { SYNCED = 5000, TOTAL = 5000 + 6 * ENV_FAULT_PAGE + 100 };
	long bad = 0, hole_then_data = 0, cut = 0;
	uint8_t *want = malloc(TOTAL), *got = malloc(TOTAL);

	if (want == NULL || got == NULL)
		tap_bail("out of memory");
	for (uint64_t seed = 1; seed <= 40; seed++) {
		struct env_file *f;
		struct env *env;
		uint64_t size = 0;
		size_t n = 0;
		bool seen_hole = false;

		for (size_t i = 0; i < TOTAL; i++)
			want[i] = (uint8_t)(1 + (i * 7 + seed) % 251);
		if (env_fault_new(&env) < 0 ||
		    env_file_open(env, "/f", ENV_CREATE, &f) < 0)
			tap_bail("fault env");
		env_dir_sync(env, "/");
		if (env_file_append(f, want, SYNCED) < 0 ||
		    env_file_sync(f) < 0 ||
		    env_file_append(f, want + SYNCED, TOTAL - SYNCED) < 0)
			tap_bail("append");
		env_fault_drop_unsynced_torn(env, seed);
		if (env_file_size(f, &size) < 0 || size < SYNCED ||
		    size > TOTAL || env_file_read_at(f, 0, got, size, &n) < 0 ||
		    n != size) {
			bad++;
			goto next;
		}
		cut += size < TOTAL;
		if (memcmp(got, want, SYNCED) != 0)
			bad++;
		for (uint64_t p = SYNCED; p < size;) {
			uint64_t end = (p / ENV_FAULT_PAGE + 1) *
			    ENV_FAULT_PAGE;
			bool zeros = true, same;

			if (end > size)
				end = size;
			same = memcmp(got + p, want + p, end - p) == 0;
			for (uint64_t i = p; i < end; i++)
				zeros &= got[i] == 0;
			if (!same && !zeros)
				bad++;
			if (zeros)
				seen_hole = true;
			else if (seen_hole)
				hole_then_data++;
			p = end;
		}
next:
		env_file_close(f);
		env_free(env);
	}
	is_int(bad, 0, "torn: synced bytes intact, each unsynced page whole "
	    "or zeros, never shorter than synced (40 seeds)");
	ok(hole_then_data > 0, "torn: a later page survived a lost earlier "
	    "one (%ld times)", hole_then_data);
	ok(cut > 0, "torn: some files were cut short (%ld times)", cut);
	free(want);
	free(got);
}

/* Power loss forgets unsynced data and unsynced directory changes. */
static void
test_fault_drop_unsynced(void)
{
	struct env_fault_stats st;
	struct env_file *f, *g;
	struct env *env;
	char text[64];
	uint64_t size;

	if (env_fault_new(&env) < 0)
		tap_bail("env_fault_new");
	is_int(env_dir_create(env, "/d"), 0, "fault: mkdir");
	is_int(env_dir_create(env, "/n"), 0, "fault: mkdir another");
	is_int(env_dir_sync(env, "/"), 0, "fault: sync the root");

	/* Data past the last sync is lost. */
	is_int(env_file_open(env, "/d/f", ENV_CREATE, &f), 0, "fault: create");
	is_int(env_dir_sync(env, "/d"), 0, "fault: sync the dir");
	is_int(env_file_append(f, "synced.", 7), 0, "fault: append");
	is_int(env_file_sync(f), 0, "fault: sync");
	is_int(env_file_append(f, "lost", 4), 0, "fault: append unsynced");
	/* An unsynced create disappears, even with its data synced. */
	is_int(env_file_open(env, "/n/new", ENV_CREATE, &g), 0,
	    "fault: create without dir sync");
	is_int(env_file_append(g, "data", 4), 0, "fault: append");
	is_int(env_file_sync(g), 0, "fault: sync its data");
	env_file_close(g);
	/* A writeback started is no sync: its bytes are lost too. */
	is_int(env_file_start_writeback(f, 7, 4), 0,
	    "fault: start writeback of the unsynced bytes");
	/* A file written but never synced becomes empty. */
	is_int(env_file_open(env, "/d/empty", ENV_CREATE, &g), 0,
	    "fault: create another");
	is_int(env_dir_sync(env, "d"), 0,
	    "fault: sync the dir (a path without the leading slash)");
	is_int(env_file_append(g, "never synced", 12), 0, "fault: append");
	env_file_close(g);
	/* Renames: one synced, one not; a rename over a synced file. */
	is_int(spew(env, "/d/a", "A", true), 0, "fault: file a");
	is_int(spew(env, "/d/b", "B", true), 0, "fault: file b");
	is_int(spew(env, "/d/c", "C", true), 0, "fault: file c");
	is_int(spew(env, "/d/s", "S", true), 0, "fault: file s");
	is_int(env_dir_sync(env, "/d"), 0, "fault: sync the dir");
	is_int(env_path_rename(env, "/d/s", "/d/s2"), 0, "fault: rename s");
	is_int(env_dir_sync(env, "/d"), 0, "fault: and sync it");
	is_int(env_path_rename(env, "/d/a", "/d/b"), 0,
	    "fault: rename a over b, unsynced");
	/* An unsynced remove. */
	is_int(env_path_remove(env, "/d/c"), 0, "fault: remove c, unsynced");
	ok(!env_path_exists(env, "/d/c") && !env_path_exists(env, "/d/a"),
	    "fault: before the crash the changes show");
	/* A directory never synced into its parent. */
	is_int(env_dir_create(env, "/e"), 0, "fault: mkdir unsynced");
	is_int(spew(env, "/e/x", "X", true), 0, "fault: a file in it");
	is_int(env_dir_sync(env, "/e"), 0, "fault: sync the new dir");

	env_fault_drop_unsynced(env);

	is_int(env_file_size(f, &size), 0, "fault: the open file still works");
	is_int(size, 7, "fault: drop truncates to the synced length");
	ok(slurp(env, "/d/f", text, sizeof(text)) == 0 &&
	    strcmp(text, "synced.") == 0, "fault: the synced bytes remain");
	is_int(env_file_append(f, "+more", 5), 0,
	    "fault: the open file can be appended after the drop");
	env_file_close(f);
	ok(!env_path_exists(env, "/n/new"), "fault: an unsynced create is gone");
	ok(env_path_exists(env, "/d/empty"), "fault: a synced create stays");
	ok(env_path_size(env, "/d/empty", &size) == 0 && size == 0,
	    "fault: a never-synced file is empty");
	ok(env_path_exists(env, "/d/a") &&
	    slurp(env, "/d/b", text, sizeof(text)) == 0 &&
	    strcmp(text, "B") == 0,
	    "fault: an unsynced rename is undone, the old target is back");
	ok(slurp(env, "/d/a", text, sizeof(text)) == 0 &&
	    strcmp(text, "A") == 0, "fault: the renamed file has its data");
	ok(env_path_exists(env, "/d/s2") && !env_path_exists(env, "/d/s"),
	    "fault: a synced rename stays");
	ok(slurp(env, "/d/c", text, sizeof(text)) == 0 &&
	    strcmp(text, "C") == 0, "fault: an unsynced remove comes back");
	ok(!env_path_exists(env, "/e") && !env_path_exists(env, "/e/x"),
	    "fault: an unsynced directory is gone with its files");
	env_fault_get_stats(env, &st);
	ok(st.appends >= 10 && st.renames == 2 && st.dir_syncs == 6,
	    "fault: stats count appends, renames and dir syncs "
	    "(%llu, %llu, %llu)", (unsigned long long)st.appends,
	    (unsigned long long)st.renames, (unsigned long long)st.dir_syncs);
	is_int(st.writebacks, 1, "fault: stats count writebacks started");
	env_free(env);
}

/* The nth call fails; sticky failures stay until disarmed. */
static void
test_fault_fail_after(void)
{
	struct env_fault_stats st;
	struct env_file *f, *g;
	struct env *env;
	uint64_t size;
	int i, rc, fails;

	if (env_fault_new(&env) < 0)
		tap_bail("env_fault_new");
	is_int(env_file_open(env, "/f", ENV_CREATE, &f), 0, "fault: create");

	env_fault_fail_after(env, ENV_FAULT_APPEND, 3, -ENOSPC, false);
	fails = 0;
	for (i = 1; i <= 6; i++) {
		rc = env_file_append(f, "x", 1);
		if (i == 3) {
			is_int(rc, -ENOSPC, "fault: append 3 fails");
			ok(detail_has("/f"), "fault: the detail names the file: %s",
			    bt_error_detail());
		} else if (rc != 0)
			fails++;
	}
	is_int(fails, 0, "fault: the other appends succeed (not sticky)");
	is_int(env_file_size(f, &size), 0, "fault: size");
	is_int(size, 5, "fault: a failed append appends nothing");

	env_fault_fail_after(env, ENV_FAULT_APPEND, 2, -EIO, true);
	is_int(env_file_append(f, "y", 1), 0, "fault: sticky: first is fine");
	for (i = 0, fails = 0; i < 5; i++)
		if (env_file_append(f, "y", 1) == -EIO)
			fails++;
	is_int(fails, 5, "fault: sticky: the 2nd and every later append fail");
	env_fault_fail_after(env, ENV_FAULT_APPEND, 0, 0, false);
	is_int(env_file_append(f, "z", 1), 0, "fault: disarmed: append works");

	env_fault_fail_after(env, ENV_FAULT_SYNC, 1, -EIO, false);
	is_int(env_file_sync(f), -EIO, "fault: sync fails");
	is_int(env_file_sync(f), 0, "fault: the next sync works");
	env_fault_fail_after(env, ENV_FAULT_SYNC, 2, -EIO, true);
	is_int(env_dir_sync(env, "/"), 0, "fault: dir sync counts as a sync");
	is_int(env_file_sync(f), -EIO, "fault: sticky sync fails");
	is_int(env_dir_sync(env, "/"), -EIO, "fault: and dir sync after it");
	env_fault_fail_after(env, ENV_FAULT_SYNC, 0, 0, false);
	is_int(env_file_sync(f), 0, "fault: disarmed: sync works");
	env_file_close(f);

	env_fault_fail_after(env, ENV_FAULT_OPEN, 1, -EMFILE, false);
	is_int(env_file_open(env, "/f", ENV_READ, &g), 0,
	    "fault: open for reading is not an open fault");
	env_file_close(g);
	is_int(env_file_open(env, "/g", ENV_CREATE, &g), -EMFILE,
	    "fault: open for writing fails");
	ok(!env_path_exists(env, "/g"), "fault: a failed create creates nothing");
	is_int(env_file_open(env, "/g", ENV_CREATE, &g), 0,
	    "fault: the next open works");
	env_file_close(g);
	env_fault_fail_after(env, ENV_FAULT_OPEN, 1, -EIO, true);
	ok(env_file_open(env, "/h", ENV_APPEND, &g) == -EIO &&
	    env_file_open(env, "/g", ENV_APPEND, &g) == -EIO,
	    "fault: sticky open failures");
	env_fault_fail_after(env, ENV_FAULT_OPEN, 0, 0, false);

	env_fault_fail_after(env, ENV_FAULT_RENAME, 1, -EIO, false);
	is_int(env_path_rename(env, "/g", "/h"), -EIO, "fault: rename fails");
	ok(env_path_exists(env, "/g") && !env_path_exists(env, "/h"),
	    "fault: a failed rename changes nothing");
	is_int(env_path_rename(env, "/g", "/h"), 0, "fault: the next works");
	env_fault_fail_after(env, ENV_FAULT_RENAME, 1, -EXDEV, true);
	ok(env_path_rename(env, "/h", "/g") == -EXDEV &&
	    env_path_rename(env, "/h", "/g") == -EXDEV,
	    "fault: sticky rename failures");
	env_fault_fail_after(env, ENV_FAULT_RENAME, 0, 0, false);
	is_int(env_path_rename(env, "/h", "/g"), 0, "fault: disarmed rename");

	env_fault_get_stats(env, &st);
	ok(st.appends == 13 && st.file_syncs == 4 && st.dir_syncs == 2 &&
	    st.renames == 5, "fault: stats count failed calls too "
	    "(%llu %llu %llu %llu)", (unsigned long long)st.appends,
	    (unsigned long long)st.file_syncs,
	    (unsigned long long)st.dir_syncs, (unsigned long long)st.renames);
	env_free(env);
}

/* Power loss puts back the synced content under writes at an offset. */
static void
test_fault_write_at(void)
{
	struct env_fault_stats st;
	struct env_file *f, *g;
	struct env *env;
	char text[64];
	size_t got;

	if (env_fault_new(&env) < 0)
		tap_bail("env_fault_new");
	is_int(env_file_open(env, "/f", ENV_CREATE, &f), 0, "fault: create");
	is_int(env_dir_sync(env, "/"), 0, "fault: sync the root");
	is_int(env_file_append(f, "aaaaaaaa", 8), 0, "fault: append");
	is_int(env_file_sync(f), 0, "fault: sync");
	is_int(env_file_write_at(f, 2, "BB", 2), 0, "fault: overwrite");
	is_int(env_file_write_at(f, 6, "CCCC", 4), 0,
	    "fault: overwrite across the end");
	got = slurp_file(f, text, sizeof(text));
	ok(got == 10 && memcmp(text, "aaBBaaCCCC", 10) == 0,
	    "fault: the writes show before the crash");
	env_fault_drop_unsynced(env);
	got = slurp_file(f, text, sizeof(text));
	ok(got == 8 && memcmp(text, "aaaaaaaa", 8) == 0,
	    "fault: power loss undoes unsynced overwrites and extensions");

	is_int(env_file_write_at(f, 0, "D", 1), 0, "fault: overwrite");
	is_int(env_file_sync(f), 0, "fault: sync it");
	is_int(env_file_write_at(f, 1, "E", 1), 0, "fault: overwrite again");
	env_fault_drop_unsynced(env);
	got = slurp_file(f, text, sizeof(text));
	ok(got == 8 && memcmp(text, "Daaaaaaa", 8) == 0,
	    "fault: a synced overwrite stays, a later one is undone");

	is_int(env_file_write_at(f, 4, "FF", 2), 0, "fault: overwrite");
	is_int(env_file_truncate(f, 3), 0, "fault: cut below the synced end");
	env_fault_drop_unsynced(env);
	got = slurp_file(f, text, sizeof(text));
	ok(got == 3 && memcmp(text, "Daa", 3) == 0,
	    "fault: a cut under overwrites stays cut after power loss");

	is_int(env_file_write_at(f, 1, "H", 1), 0, "fault: overwrite");
	is_int(env_fault_flip_byte(env, "/f", 2, 0x01), 0, "fault: flip");
	env_fault_drop_unsynced(env);
	got = slurp_file(f, text, sizeof(text));
	ok(got == 3 && memcmp(text, "Da`", 3) == 0,
	    "fault: a flip reaches the synced content under an overwrite");

	env_fault_fail_after(env, ENV_FAULT_APPEND, 1, -ENOSPC, false);
	is_int(env_file_write_at(f, 0, "ZZZZZ", 5), -ENOSPC,
	    "fault: an append fault fails a write at");
	ok(detail_has("/f"), "fault: the detail names the file: %s",
	    bt_error_detail());
	got = slurp_file(f, text, sizeof(text));
	ok(got == 3 && memcmp(text, "Da`", 3) == 0,
	    "fault: a failed write at writes nothing");
	is_int(env_file_write_at(f, 0, "Z", 1), 0, "fault: the next works");
	env_file_close(f);

	is_int(env_file_open(env, "/g", ENV_CREATE, &g), 0, "fault: create");
	is_int(env_file_write_at(g, 4096, "x", 1), 0,
	    "fault: write at far past the end");
	is_int(env_path_size(env, "/g", &(uint64_t){ 0 }), 0, "fault: size");
	env_fault_drop_unsynced(env);
	ok(!env_path_exists(env, "/g"), "fault: the unsynced create is gone");
	env_file_close(g);

	env_fault_get_stats(env, &st);
	is_int(st.appends, 10,
	    "fault: stats count one append and nine writes at");
	env_free(env);
}

static void
test_fault_flip_and_clock(void)
{
	struct env *env;
	char text[64];
	uint64_t now;

	if (env_fault_new(&env) < 0)
		tap_bail("env_fault_new");
	is_int(spew(env, "/f", "abc", true), 0, "fault: write");
	is_int(env_dir_sync(env, "/"), 0, "fault: sync root");
	is_int(env_fault_flip_byte(env, "/f", 1, 0x03), 0, "fault: flip");
	ok(slurp(env, "/f", text, sizeof(text)) == 0 &&
	    strcmp(text, "aac") == 0, "fault: the byte is flipped");
	env_fault_drop_unsynced(env);
	ok(slurp(env, "/f", text, sizeof(text)) == 0 &&
	    strcmp(text, "aac") == 0, "fault: the flip is in the synced data");
	is_int(env_fault_flip_byte(env, "/f", 3, 1), -EINVAL,
	    "fault: flip past the end is EINVAL");
	is_int(env_fault_flip_byte(env, "/nope", 0, 1), -ENOENT,
	    "fault: flip of a missing file is ENOENT");

	env_fault_set_clock(env, 1234567);
	is_int(env_now_micros(env), 1234567, "fault: the clock is settable");
	env_fault_set_available(env, 4096);
	ok(env_path_available(env, "/", &now) == 0 && now == 4096,
	    "fault: the room available is settable");
	env_fault_set_clock(env, 1700000000000000ull);
	is_int(env_now_micros(env), 1700000000000000ll,
	    "fault: and settable again");
	env_fault_set_clock(env, 0);
	now = env_now_micros(env);
	ok(now / 1000000 >= (uint64_t)time(NULL) - 2 &&
	    now / 1000000 <= (uint64_t)time(NULL) + 2,
	    "fault: clock 0 is the wall clock again");
	env_free(env);
}

/* ---- Mapped reads (the local filesystem) ---- */

/* Whether this process maps path (a line of /proc/self/maps names it). */
static bool
is_mapped(const char *path)
{
	char line[PATH_SIZE + 128];
	size_t n = strlen(path);
	bool found = false;
	FILE *maps;

	if ((maps = fopen("/proc/self/maps", "r")) == NULL)
		tap_bail("/proc/self/maps");
	while (!found && fgets(line, sizeof(line), maps) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		found = strlen(line) >= n &&
		    strcmp(line + strlen(line) - n, path) == 0;
	}
	fclose(maps);
	return found;
}

/* A file of size bytes, byte i being (i * 7) & 0xff. */
static void
pattern_file(const char *path, size_t size)
{
	uint8_t *p = malloc(size);
	FILE *f;

	if (p == NULL || (f = fopen(path, "w")) == NULL)
		tap_bail("pattern file");
	for (size_t i = 0; i < size; i++)
		p[i] = (uint8_t)(i * 7);
	if (fwrite(p, 1, size, f) != size || fclose(f) != 0)
		tap_bail("pattern file write");
	free(p);
}

static bool
pattern_at(const uint8_t *p, uint64_t offset, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (uint8_t)((offset + i) * 7))
			return false;
	return true;
}

/*
 * Reads of a mapped file: exact bytes at any offset, short at the end;
 * bytes appended after the open (past the mapping) read too; cut short
 * under the mapping, a read returns what is left, exactly as pread would,
 * instead of dying of SIGBUS, and read_exact reports the file as corrupt.
 */
static void
test_map_reads(const char *root)
{
	enum { SIZE = 5 * 4096 + 123 };
	char path[PATH_SIZE];
	static uint8_t buf[SIZE + 4096];
	struct env *env;
	struct env_file *f, *w;
	size_t got;
	FILE *a;
	int rc;

	join(path, root, "mapped");
	pattern_file(path, SIZE);
	if (env_posix_new(&env) < 0)
		tap_bail("env_posix_new");
	is_int(env_file_open(env, path, ENV_READ, &f), 0, "map: open");
	ok(is_mapped(path), "map: a file opened for reading is mapped");
	rc = env_file_read_at(f, 4000, buf, 5000, &got);
	ok(rc == 0 && got == 5000 && pattern_at(buf, 4000, 5000),
	    "map: a read across pages returns the file's bytes");
	rc = env_file_read_at(f, SIZE - 100, buf, 1000, &got);
	ok(rc == 0 && got == 100 && pattern_at(buf, SIZE - 100, 100),
	    "map: a read past the end is short (%zu)", got);
	rc = env_file_read_at(f, SIZE + 10, buf, 10, &got);
	ok(rc == 0 && got == 0, "map: a read beyond the end returns nothing");

	if ((a = fopen(path, "a")) == NULL || fputs("tail!", a) < 0 ||
	    fclose(a) != 0)
		tap_bail("append");
	rc = env_file_read_at(f, SIZE - 3, buf, 100, &got);
	ok(rc == 0 && got == 8 && pattern_at(buf, SIZE - 3, 3) &&
	    memcmp(buf + 3, "tail!", 5) == 0,
	    "map: bytes appended after the open read on from the mapping");

	is_int(env_file_open(env, path, ENV_APPEND, &w), 0,
	    "map: open to cut");
	is_int(env_file_truncate(w, 4096 + 10), 0,
	    "map: cut the file to 4106 bytes under the mapping");
	env_file_close(w);
	rc = env_file_read_at(f, 3 * 4096, buf, 4096, &got);
	ok(rc == 0 && got == 0,
	    "map: a read of a page cut off returns nothing, no SIGBUS");
	/* The page holding the new end maps zeros past it (env.h). */
	memset(buf, 0xee, 4096);
	rc = env_file_read_at(f, 4000, buf, 4096, &got);
	ok(rc == 0 && pattern_at(buf, 4000, 106) && (got == 106 ||
	    (got == 4096 && buf[106] == 0 && buf[4095] == 0)),
	    "map: a read across the new end returns what is left, or zeros "
	    "past it in its page (%zu)", got);
	rc = env_file_read_at(f, 4000, buf, 2 * 4096, &got);
	ok(rc == 0 && got == 106 && pattern_at(buf, 4000, 106),
	    "map: a read reaching a page cut off returns what is left (%zu)",
	    got);
	rc = env_file_read_exact(f, 2 * 4096, buf, 100);
	is_int(rc, BT_ECORRUPT, "map: read_exact past the new end: corrupt");
	rc = env_file_read_at(f, 0, buf, 4096, &got);
	ok(rc == 0 && got == 4096 && pattern_at(buf, 0, 4096),
	    "map: the bytes before the cut still read");
	is_int(env_file_close(f), 0, "map: close");
	ok(!is_mapped(path), "map: closing unmaps");
	env_path_remove(env, path);
	env_free(env);
}

/* Readers of one mapped file, racing with a cut. */
#define RACE_SIZE	(64 * 4096)
#define RACE_READERS	4
#define RACE_READS	4000

struct race {
	struct env_file *f;
	atomic_bool cut;		/* the file has been cut to 4096 */
	atomic_int started;
	uint64_t seed;
	int bad;
};

static void *
race_reader(void *arg)
{
	struct race *r = arg;
	uint64_t rng = r->seed;
	uint8_t buf[8192];
	size_t got;

	atomic_fetch_add(&r->started, 1);
	/* Until the cut, then as many reads again after it. */
	for (int i = 0; i < RACE_READS; i += atomic_load(&r->cut)) {
		uint64_t off = tap_rand(&rng) % RACE_SIZE;
		size_t n = 1 + (size_t)(tap_rand(&rng) % sizeof(buf));
		bool cut;

		if (env_file_read_at(r->f, off, buf, n, &got) != 0 ||
		    got > n || off + got > RACE_SIZE) {
			r->bad++;
			continue;
		}
		/* Not cut yet when the read had ended: all of it.  Any
		 * time: the file's bytes, or zeros past 4096 once cut. */
		cut = atomic_load(&r->cut);
		if (!cut && got != (off + n > RACE_SIZE ?
		    RACE_SIZE - off : n))
			r->bad++;
		for (size_t j = 0; j < got; j++)
			if (buf[j] != (uint8_t)((off + j) * 7) &&
			    !(off + j >= 4096 && buf[j] == 0)) {
				r->bad++;
				break;
			}
	}
	return NULL;
}

/*
 * Four threads read a mapped file at random while it is cut short under
 * them: no SIGBUS on any thread, and every read returns the file's bytes
 * (or, past the cut, fewer of them, or zeros in the last page).
 */
static void
test_map_race(const char *root)
{
	char path[PATH_SIZE];
	struct race r[RACE_READERS];
	pthread_t th[RACE_READERS];
	struct env *env;
	struct env_file *f, *w;
	atomic_int *started;
	int bad = 0;

	join(path, root, "race");
	pattern_file(path, RACE_SIZE);
	if (env_posix_new(&env) < 0 ||
	    env_file_open(env, path, ENV_READ, &f) < 0)
		tap_bail("open race file");
	for (int i = 0; i < RACE_READERS; i++) {
		r[i].f = f;
		atomic_init(&r[i].cut, false);
		atomic_init(&r[i].started, 0);
		r[i].seed = 0x5eed + (uint64_t)i;
		r[i].bad = 0;
		if (pthread_create(&th[i], NULL, race_reader, &r[i]) != 0)
			tap_bail("pthread_create");
	}
	for (int i = 0; i < RACE_READERS; i++) {
		started = &r[i].started;
		while (atomic_load(started) == 0)
			sched_yield();
	}
	if (env_file_open(env, path, ENV_APPEND, &w) < 0)
		tap_bail("open race file to cut");
	for (int i = 0; i < RACE_READERS; i++)
		atomic_store(&r[i].cut, true);
	if (env_file_truncate(w, 4096) < 0)
		tap_bail("cut race file");
	env_file_close(w);
	for (int i = 0; i < RACE_READERS; i++) {
		pthread_join(th[i], NULL);
		bad += r[i].bad;
	}
	is_int(bad, 0, "map race: %d threads read a file cut under them: "
	    "no SIGBUS, no wrong bytes", RACE_READERS);
	env_file_close(f);
	env_path_remove(env, path);
	env_free(env);
}

/*
 * The env maps files while they total at most 48 MiB (sparse files here):
 * past it a file is read by pread, and closing a mapped file makes room,
 * for a file opened later or for the next read of one opened meanwhile.
 */
static void
test_map_budget(const char *root)
{
	char paths[3][PATH_SIZE], name[16];
	struct env_file *f[3], *g;
	struct env *env;
	uint8_t b[4];
	size_t got;
	FILE *h;
	int rc;

	if (env_posix_new(&env) < 0)
		tap_bail("env_posix_new");
	for (int i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "s%d", i);
		join(paths[i], root, name);
		if ((h = fopen(paths[i], "w")) == NULL ||
		    ftruncate(fileno(h), (off_t)20 << 20) < 0 ||
		    fclose(h) != 0)
			tap_bail("sparse file");
		if (env_file_open(env, paths[i], ENV_READ, &f[i]) < 0)
			tap_bail("open sparse file");
	}
	ok(is_mapped(paths[0]) && is_mapped(paths[1]),
	    "map budget: two files of 20 MiB are mapped");
	ok(!is_mapped(paths[2]), "map budget: a third is not (60 > 48 MiB)");
	rc = env_file_read_at(f[2], ((uint64_t)20 << 20) - 2, b, 4, &got);
	ok(rc == 0 && got == 2 && b[0] == 0 && b[1] == 0,
	    "map budget: the unmapped file reads by pread");
	env_file_close(f[0]);
	is_int(env_file_open(env, paths[0], ENV_READ, &g), 0,
	    "map budget: reopen the first");
	ok(is_mapped(paths[0]), "map budget: closing one made room for it");
	env_file_close(g);
	env_file_close(f[1]);
	ok(!is_mapped(paths[2]), "map budget: the file opened past the budget "
	    "is still unmapped");
	rc = env_file_read_at(f[2], ((uint64_t)20 << 20) - 2, b, 4, &got);
	ok(rc == 0 && got == 2 && is_mapped(paths[2]), "map budget: once "
	    "others closed, its next read maps it");
	env_file_close(f[2]);
	for (int i = 0; i < 3; i++)
		env_path_remove(env, paths[i]);
	env_free(env);
}

static volatile sig_atomic_t sigbus_seen;

static void
on_sigbus(int sig)
{
	(void)sig;
	sigbus_seen = 1;
}

#define SETUP_FAILED	77

/*
 * Whether a child ended by the SIGBUS's default action: killed by it, or,
 * in a sanitizer build whose runtime handles SIGBUS itself (it was there
 * before the env's handler), ended by that runtime with an error status.
 */
static bool
died_of_sigbus(int status)
{
	if (WIFSIGNALED(status))
		return WTERMSIG(status) == SIGBUS;
	return WIFEXITED(status) && WEXITSTATUS(status) != 0 &&
	    WEXITSTATUS(status) != SETUP_FAILED;
}

/* Read one byte of path through a posix env (maps it, and so installs
 * the env's SIGBUS handler); 0 or -1. */
static int
map_one_read(const char *path)
{
	struct env *env;
	struct env_file *f;
	uint8_t c;
	size_t got;
	int rc = -1;

	if (env_posix_new(&env) < 0)
		return -1;
	if (env_file_open(env, path, ENV_READ, &f) == 0) {
		if (env_file_read_at(f, 0, &c, 1, &got) == 0 && got == 1)
			rc = 0;
		env_file_close(f);
	}
	env_free(env);
	return rc;
}

/*
 * The env's SIGBUS handler passes on what is not its own, each case in a
 * fresh child (the handler is installed once per process): a SIGBUS sent
 * to a process that had a handler reaches that handler; one sent to a
 * process without one kills it; and so does a real fault on a mapping of
 * the program's own (a page past the end of a file cut short).
 */
static void
test_map_sigbus(const char *root)
{
	char path[PATH_SIZE];
	bool waited;
	int status;
	pid_t pid;

	join(path, root, "bus");
	pattern_file(path, 3 * 4096);

	fflush(stdout);
	if ((pid = fork()) < 0)
		tap_bail("fork");
	if (pid == 0) {
		signal(SIGBUS, on_sigbus);
		if (map_one_read(path) < 0)
			_exit(SETUP_FAILED);
		raise(SIGBUS);
		_exit(sigbus_seen ? 0 : 1);
	}
	waited = waitpid(pid, &status, 0) == pid;
	ok(waited && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	    "sigbus: a handler installed before the env's still gets a SIGBUS "
	    "(status %#x)", status);

	fflush(stdout);
	if ((pid = fork()) < 0)
		tap_bail("fork");
	if (pid == 0) {
		if (map_one_read(path) < 0)
			_exit(SETUP_FAILED);
		raise(SIGBUS);
		_exit(0);
	}
	waited = waitpid(pid, &status, 0) == pid;
	ok(waited && died_of_sigbus(status),
	    "sigbus: without a handler a SIGBUS sent still kills (status %#x)",
	    status);

	fflush(stdout);
	if ((pid = fork()) < 0)
		tap_bail("fork");
	if (pid == 0) {
		volatile uint8_t *m;
		int fd;

		if (map_one_read(path) < 0 ||
		    (fd = open(path, O_RDWR)) < 0)
			_exit(SETUP_FAILED);
		m = mmap(NULL, 3 * 4096, PROT_READ, MAP_SHARED, fd, 0);
		if (m == MAP_FAILED || ftruncate(fd, 10) < 0)
			_exit(SETUP_FAILED);
		(void)m[2 * 4096];
		_exit(0);
	}
	waited = waitpid(pid, &status, 0) == pid;
	ok(waited && died_of_sigbus(status),
	    "sigbus: a fault on a mapping of the program's own still kills "
	    "(status %#x)", status);
	unlink(path);
}

/* ---- Writes in place through a mapping (the local filesystem) ---- */

#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC	0x01021994
#endif

/*
 * The dirty kilobytes (Shared_Dirty + Private_Dirty) of this process's
 * mappings of path, from /proc/self/smaps; -1 if none maps it.
 */
static long
mapped_dirty_kb(const char *path)
{
	char line[PATH_SIZE + 128];
	size_t n = strlen(path), len;
	unsigned long start, end;
	char perms[5];
	bool in = false;
	long total = -1, kb;
	FILE *smaps;

	if ((smaps = fopen("/proc/self/smaps", "r")) == NULL)
		tap_bail("/proc/self/smaps");
	while (fgets(line, sizeof(line), smaps) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		len = strlen(line);
		if (sscanf(line, "%lx-%lx %4s", &start, &end, perms) == 3) {
			/* A mapping's first line: "start-end perms ... path" */
			in = len >= n && strcmp(line + len - n, path) == 0;
			if (in && total < 0)
				total = 0;
			continue;
		}
		if (in && (sscanf(line, "Shared_Dirty: %ld kB", &kb) == 1 ||
		    sscanf(line, "Private_Dirty: %ld kB", &kb) == 1))
			total += kb;
	}
	fclose(smaps);
	return total;
}

/* Read n bytes at offset of path by a descriptor of its own. */
static bool
pread_is(const char *path, uint64_t offset, const void *want, size_t n)
{
	uint8_t buf[4096];
	bool same;
	int fd;

	if (n > sizeof(buf) || (fd = open(path, O_RDONLY)) < 0)
		return false;
	same = pread(fd, buf, n, (off_t)offset) == (ssize_t)n &&
	    memcmp(buf, want, n) == 0;
	close(fd);
	return same;
}

/* Write n bytes of p at offset, count times (the window is used from the
 * 32nd write since the last sync on); whether every write succeeded. */
static bool
write_at_times(struct env_file *f, uint64_t offset, const void *p, size_t n,
    int count)
{
	for (int i = 0; i < count; i++)
		if (env_file_write_at(f, offset, p, n) < 0)
			return false;
	return true;
}

/*
 * Writes at an offset inside reserved space are copies into a mapping of
 * the file once 32 were made since the last sync (before that, and
 * outside reserved space, the process does not map it), read back by
 * another descriptor (the same page cache) at once,
 * also across a window boundary and in space reserved later; a sync
 * leaves none of the pages they dirtied dirty (fdatasync wrote them
 * back; not on tmpfs, which has no writeback); a truncate unmaps and a
 * write past what the cut left is a pwrite again; a sync after fewer than
 * 32 writes unmaps (a file synced that often writes by pwrite); close
 * unmaps.
 */
static void
test_window_writes(const char *root)
{
	static const char header[16] = "segment header!";
	char path[PATH_SIZE], rec[200];
	struct env *env;
	struct env_file *f;
	struct statfs sfs;
	uint64_t size;
	long dirty;

	join(path, root, "window");
	if (env_posix_new(&env) < 0)
		tap_bail("env_posix_new");
	is_int(env_file_open(env, path, ENV_CREATE, &f), 0, "window: create");
	is_int(env_file_write_at(f, 0, header, sizeof(header)), 0,
	    "window: write the header before reserving");
	ok(!is_mapped(path), "window: a write outside reserved space maps "
	    "nothing");
	if (env_file_allocate(f, sizeof(header), (1 << 20) - 16) < 0) {
		ok(1, "# SKIP the filesystem cannot reserve space: %s",
		    bt_error_detail());
		env_file_close(f);
		env_free(env);
		unlink(path);
		return;
	}
	for (size_t i = 0; i < sizeof(rec); i++)
		rec[i] = (char)(i * 13 + 1);
	is_int(env_file_write_at(f, 16, rec, 140), 0,
	    "window: a write inside reserved space");
	ok(!is_mapped(path), "window: the first writes since the file's last "
	    "sync (its creation) are pwrites");
	ok(write_at_times(f, 16, rec, 140, 31), "window: 31 writes more");
	ok(is_mapped(path), "window: the 32nd went through a mapping of the "
	    "file");
	ok(pread_is(path, 16, rec, 140) && pread_is(path, 0, header, 16),
	    "window: another descriptor reads it, and the header, at once");
	is_int(env_file_allocate(f, (1 << 20) - 60, 4096), 0,
	    "window: reserve the next chunk");
	is_int(env_file_write_at(f, (1 << 20) - 60, rec, sizeof(rec)), 0,
	    "window: a write across the window's end into the new chunk");
	ok(pread_is(path, (1 << 20) - 60, rec, sizeof(rec)),
	    "window: it reads back whole");
	ok(is_mapped(path), "window: the next window is mapped");
	is_int(env_file_sync(f), 0, "window: sync");
	dirty = mapped_dirty_kb(path);
	if (statfs(root, &sfs) == 0 && sfs.f_type == TMPFS_MAGIC)
		ok(1, "# SKIP tmpfs has no writeback (%ld kB dirty)", dirty);
	else
		ok(dirty == 0, "window: after the sync no page dirtied through "
		    "the mapping is still dirty (%ld kB)", dirty);
	is_int(env_file_truncate(f, (1 << 20) + 140), 0,
	    "window: cut the reserved tail");
	ok(!is_mapped(path), "window: the truncate unmapped");
	is_int(env_file_write_at(f, (1 << 20) + 140, rec, 100), 0,
	    "window: a write past the cut");
	ok(!is_mapped(path), "window: is a pwrite (the cut space is not "
	    "reserved any more)");
	is_int(env_file_size(f, &size), 0, "window: size");
	is_int(size, (1 << 20) + 240,
	    "window: the file ends at the last write");
	ok(pread_is(path, (1 << 20) - 60, rec, sizeof(rec)) &&
	    pread_is(path, (1 << 20) + 140, rec, 100),
	    "window: what was written through the mapping survives the cut");
	is_int(env_file_allocate(f, (1 << 20) + 240, 8192), 0,
	    "window: reserve again");
	ok(write_at_times(f, (1 << 20) + 240, rec, 10, 32),
	    "window: write in it 32 times");
	ok(is_mapped(path), "window: mapped again");
	is_int(env_file_sync(f), 0, "window: sync after 32 writes");
	ok(is_mapped(path), "window: it stays mapped");
	ok(write_at_times(f, (1 << 20) + 240, rec, 10, 1) &&
	    env_file_sync(f) == 0, "window: one write and a sync");
	ok(!is_mapped(path), "window: a sync after fewer than 32 writes "
	    "unmapped");
	ok(pread_is(path, (1 << 20) + 240, rec, 10),
	    "window: the bytes read back");
	{
		char big[5000];

		memset(big, 'B', sizeof(big));
		ok(write_at_times(f, (1 << 20) + 240, big, sizeof(big), 32),
		    "window: 32 writes of 5000 bytes in reserved space");
		ok(!is_mapped(path), "window: writes over 4 KiB are pwrites "
		    "(a copy would fault on each page)");
		ok(pread_is(path, (1 << 20) + 240, big, 4096),
		    "window: and read back");
	}
	ok(write_at_times(f, (1 << 20) + 240, rec, 10, 32) && is_mapped(path),
	    "window: mapped again after 32 writes more");
	is_int(env_file_close(f), 0, "window: close");
	ok(!is_mapped(path), "window: closing unmapped");
	ok(pread_is(path, (1 << 20) + 240, rec, 10),
	    "window: the bytes are in the file after close");
	env_free(env);
	unlink(path);
}

/*
 * A write through the mapping that faults (the file was cut under the
 * reserved space by another descriptor, so the page is past the end:
 * SIGBUS) does not kill: the write is done by pwrite instead, which
 * extends the file as it would have, and the file is not mapped again.
 * In a child, so that a SIGBUS that did kill fails this test only.
 */
static void
test_window_sigbus(const char *root)
{
	char path[PATH_SIZE], rec[100];
	struct env *env;
	struct env_file *f;
	uint64_t size;
	bool waited;
	int status, fd;
	pid_t pid;

	join(path, root, "window-bus");
	memset(rec, 'r', sizeof(rec));
	fflush(stdout);
	if ((pid = fork()) < 0)
		tap_bail("fork");
	if (pid == 0) {
		if (env_posix_new(&env) < 0 ||
		    env_file_open(env, path, ENV_CREATE, &f) < 0)
			_exit(SETUP_FAILED);
		if (env_file_allocate(f, 0, 65536) < 0)
			_exit(SETUP_FAILED);
		if (!write_at_times(f, 0, "a", 1, 32) || !is_mapped(path))
			_exit(SETUP_FAILED);
		if ((fd = open(path, O_RDWR)) < 0 || ftruncate(fd, 1) < 0)
			_exit(SETUP_FAILED);
		close(fd);
		if (env_file_write_at(f, 8192, rec, sizeof(rec)) < 0)
			_exit(2);
		if (is_mapped(path) || !pread_is(path, 8192, rec, sizeof(rec)))
			_exit(3);
		if (env_file_size(f, &size) < 0 || size != 8192 + sizeof(rec))
			_exit(4);
		if (env_file_write_at(f, 100, rec, 10) < 0 ||
		    is_mapped(path) || !pread_is(path, 100, rec, 10))
			_exit(5);
		env_file_close(f);
		env_free(env);
		_exit(0);
	}
	waited = waitpid(pid, &status, 0) == pid;
	if (waited && WIFEXITED(status) && WEXITSTATUS(status) == SETUP_FAILED)
		ok(1, "# SKIP window sigbus: no reserved, mapped write here");
	else
		ok(waited && WIFEXITED(status) && WEXITSTATUS(status) == 0,
		    "window sigbus: a write through the mapping past a cut "
		    "end is redone by pwrite, which extends the file; later "
		    "writes are pwrites (status %#x)", status);
	unlink(path);
}

/* ---- The RADOS env (TABLETFS_TEST_RADOS) ---- */

#ifdef HAVE_RADOS
/*
 * Locks between processes on RADOS: a child holds the lock, the parent
 * is refused and told the child's pid, and gets the lock once the child
 * unlocked.  The child forks before this process first connects
 * (librados' threads do not survive a fork), and connects on its own.
 */
static void
test_rados_lock_fork(const char *conf, const char *pool, const char *root)
{
	char path[PATH_SIZE], want[64], c;
	struct env *env, *cenv;
	struct env_lock *a, *b;
	int status, to_parent[2], to_child[2];
	pid_t pid;

	join(path, root, "LOCK");
	if (pipe(to_parent) < 0 || pipe(to_child) < 0)
		tap_bail("pipe");
	fflush(stdout);
	if ((pid = fork()) < 0)
		tap_bail("fork");
	if (pid == 0) {
		close(to_parent[0]);
		close(to_child[1]);
		if (env_rados_new(conf, pool, NULL, &cenv) < 0 ||
		    env_lock(cenv, path, &b) < 0)
			_exit(2);
		if (write(to_parent[1], "L", 1) != 1 ||
		    read(to_child[0], &c, 1) != 1)
			_exit(3);
		env_unlock(b);
		env_free(cenv);
		_exit(0);
	}
	/* Only the child writes to_parent: its exit ends a read. */
	close(to_parent[1]);
	close(to_child[0]);
	if (!ok(read(to_parent[0], &c, 1) == 1,
	    "rados: the child holds the lock")) {
		waitpid(pid, &status, 0);
		close(to_parent[0]);
		close(to_child[1]);
		return;
	}
	if (env_rados_new(conf, pool, NULL, &env) < 0)
		tap_bail("env_rados_new");
	is_int(env_lock(env, path, &a), -EWOULDBLOCK,
	    "rados: the parent is refused");
	snprintf(want, sizeof(want), "held by pid %ld", (long)pid);
	ok(detail_has(want), "rados: the detail names the child: %s",
	    bt_error_detail());
	if (write(to_child[1], "U", 1) != 1)
		tap_bail("write");
	ok(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	    WEXITSTATUS(status) == 0,
	    "rados: the child unlocks and exits cleanly");
	is_int(env_lock(env, path, &a), 0,
	    "rados: the lock is free once its holder unlocked");
	env_unlock(a);
	close(to_parent[0]);
	close(to_child[1]);
	env_path_remove(env, path);
	env_free(env);
}
#endif

/*
 * A file ends at the object size limit: a write at, truncate or
 * reservation past it fails with -EFBIG before reaching the cluster,
 * and an append that the OSD refuses says the same.
 */
static void
test_rados_limit(struct env *env, const char *root)
{
	char path[PATH_SIZE];
	const uint64_t max = (uint64_t)128 << 20;	/* Ceph's default */
	struct env_file *f;
	uint64_t size;

	join(path, root, "big");
	is_int(env_file_open(env, path, ENV_CREATE, &f), 0,
	    "rados limit: create");
	is_int(env_file_write_at(f, max - 1, "x", 1), 0,
	    "rados limit: the last byte an object holds");
	is_int(env_file_size(f, &size), 0, "rados limit: size");
	is_int(size, max, "rados limit: the object is 128 MiB (sparse)");
	is_int(env_file_write_at(f, max, "x", 1), -EFBIG,
	    "rados limit: a write past it is EFBIG");
	ok(detail_has("osd_max_object_size") && detail_has(path),
	    "rados limit: the detail says why: %s", bt_error_detail());
	is_int(env_file_append(f, "x", 1), -EFBIG,
	    "rados limit: the OSD refuses an append past it: EFBIG");
	ok(detail_has("osd_max_object_size"),
	    "rados limit: told the same way: %s", bt_error_detail());
	is_int(env_file_truncate(f, max + 1), -EFBIG,
	    "rados limit: a truncate past it is EFBIG");
	is_int(env_file_allocate(f, max - 10, 20), -EFBIG,
	    "rados limit: a reservation past it is EFBIG");
	is_int(env_file_allocate(f, 0, 4096), 0,
	    "rados limit: a reservation inside it succeeds");
	is_int(env_file_truncate(f, 0), 0, "rados limit: cut to nothing");
	env_file_close(f);
	is_int(env_path_remove(env, path), 0, "rados limit: clean up");
}

/*
 * A rename of a file larger than one atomic copy (16 MiB) copies it in
 * pieces: every byte arrives, over a file that was there, and the
 * source is gone; an empty file renames too; a directory does not.
 */
static void
test_rados_rename(struct env *env, const char *root)
{
	const size_t n = (20 << 20) + 12345;
	char from[PATH_SIZE], to[PATH_SIZE], sub[PATH_SIZE];
	struct env_file *f;
	uint8_t *want, *got;
	size_t read;
	uint64_t size;

	join(from, root, "tmp-big");
	join(to, root, "big-renamed");
	join(sub, root, "adir");
	want = malloc(n);
	got = malloc(n);
	if (want == NULL || got == NULL)
		tap_bail("out of memory");
	for (size_t i = 0; i < n; i++)
		want[i] = (uint8_t)(i * 31 + (i >> 12));
	is_int(spew(env, to, "an older, shorter file", false), 0,
	    "rados rename: a target to replace");
	if (env_file_open(env, from, ENV_CREATE, &f) < 0 ||
	    env_file_append(f, want, n) < 0 || env_file_close(f) < 0)
		tap_bail("write a 20 MiB file");
	is_int(env_path_rename(env, from, to), 0,
	    "rados rename: a 20 MiB file over another");
	ok(!env_path_exists(env, from), "rados rename: the source is gone");
	is_int(env_path_size(env, to, &size), 0, "rados rename: size");
	is_int(size, n, "rados rename: the target has the source's size");
	memset(got, 0, n);
	if (env_file_open(env, to, ENV_READ, &f) < 0)
		tap_bail("open the renamed file");
	ok(env_file_read_at(f, 0, got, n, &read) == 0 && read == n &&
	    memcmp(got, want, n) == 0, "rados rename: every byte arrived");
	env_file_close(f);
	if (env_file_open(env, from, ENV_CREATE, &f) < 0)
		tap_bail("create an empty file");
	env_file_close(f);
	is_int(env_path_rename(env, from, to), 0,
	    "rados rename: an empty file over it");
	ok(env_path_size(env, to, &size) == 0 && size == 0,
	    "rados rename: the target is empty now");
	is_int(env_dir_create(env, sub), 0, "rados rename: a directory");
	is_int(env_path_rename(env, sub, from), -EISDIR,
	    "rados rename: a directory is not renamed");
	is_int(env_path_rename(env, to, sub), -EISDIR,
	    "rados rename: nor a file onto one");
	env_path_remove(env, sub);
	env_path_remove(env, to);
	free(want);
	free(got);
}

/* Space is the cluster's, or unknown (no manager reports it). */
static void
test_rados_space(struct env *env, const char *root)
{
	uint64_t avail = 0, cap = 0;

	is_int(env_path_available(env, root, &avail), 0,
	    "rados space: available");
	is_int(env_path_capacity(env, root, &cap), 0, "rados space: capacity");
	ok(avail > 0 && cap > 0 && avail <= cap, "rados space: %" PRIu64
	    " bytes of %" PRIu64 "%s", avail, cap, cap == UINT64_MAX ?
	    " (unknown: the cluster has no manager)" : "");
}

static void
test_rados(void)
{
	static const char *const posix_only[] = {
		"mapped reads (objects are read by rados_read)",
		"SIGBUS handling (nothing is mapped)",
		"writes through a mapping of reserved space (nothing is "
		    "reserved or mapped)",
		"fault injection and power loss (the in-memory env's)",
	};
	char conf[RADOS_TEST_PATH], pool[RADOS_TEST_PATH];
	char root[RADOS_TEST_PATH];
	struct env *env;

#ifdef HAVE_RADOS
	if (rados_test_target(conf, pool)) {
		/* Before this process first connects (its comment). */
		snprintf(root, sizeof(root), "/test_env.lock.%ld",
		    (long)getpid());
		test_rados_lock_fork(conf, pool, root);
	}
#else
	(void)conf;
	(void)pool;
#endif
	if (!rados_test_env("test_env", &env, root))
		return;
	for (size_t i = 0; i < sizeof(posix_only) / sizeof(*posix_only); i++)
		ok(1, "# SKIP rados: %s", posix_only[i]);
	test_file_ops(env, root, "rados");
	test_lock(env, root, "rados");
	test_write_at(env, root, "rados");
	test_writeback(env, root, "rados");
	test_rados_limit(env, root);
	test_rados_rename(env, root);
	test_rados_space(env, root);
	rados_test_clean(env, root);
	ok(!env_path_exists(env, root), "rados: the test's objects are gone");
	env_free(env);
}

static int
remove_one(const char *path, const struct stat *st, int flag,
    struct FTW *ftw)
{
	return remove(path);
}

int
main(void)
{
	char tmp[] = "/tmp/test_env.XXXXXX";
	struct env *env;

	if (mkdtemp(tmp) == NULL)
		tap_bail("mkdtemp");
	/* First: its children need a process that has not mapped yet. */
	test_map_sigbus(tmp);
	test_map_reads(tmp);
	test_map_race(tmp);
	test_map_budget(tmp);
	test_window_writes(tmp);
	test_window_sigbus(tmp);
	if (env_posix_new(&env) < 0)
		tap_bail("env_posix_new");
	test_file_ops(env, tmp, "posix");
	test_lock(env, tmp, "posix");
	test_write_at(env, tmp, "posix");
	test_writeback(env, tmp, "posix");
	env_free(env);
	test_lock_fork(tmp);
	nftw(tmp, remove_one, 16, FTW_DEPTH | FTW_PHYS);

	if (env_fault_new(&env) < 0)
		tap_bail("env_fault_new");
	is_int(env_dir_create(env, "/t"), 0, "fault: mkdir /t");
	test_file_ops(env, "/t", "fault");
	test_lock(env, "/t", "fault");
	test_write_at(env, "/t", "fault");
	test_writeback(env, "/t", "fault");
	env_free(env);

	test_fault_drop_unsynced();
	test_fault_drop_torn();
	test_fault_fail_after();
	test_fault_write_at();
	test_fault_flip_and_clock();
	test_rados();
	return tap_done();
}
