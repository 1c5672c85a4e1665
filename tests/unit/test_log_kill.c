/*
 * test_log_kill.c - a commit log written through the real local
 * filesystem survives kill -9 of its writer: a child process appends
 * records without syncing (the posix env copies them into a mapping of
 * the reserved segment space, not by write(2)), reports each one it has
 * appended, and is killed by SIGKILL while it writes; replay in the parent
 * finds every record reported, intact and in order, over several segments,
 * with nothing damaged.  Durability against power loss is the fault env's
 * to test (test_log.c); a kill leaves the page cache, which is the point.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log/log.h"
#include "tap.h"
#include "util/alloc.h"
#include "util/env.h"
#include "util/error.h"

#define PATH_SIZE	512
/* Segments of 256 KiB, so the kill comes after several rotations. */
#define SEGMENT_SIZE	(256u << 10)
/* Kill once the child reported this many records (about 2 MiB). */
#define KILL_AFTER	12000u
#define RECORD_MAX	400

/* Record i: 40 to 339 bytes, each a function of i and its index. */
static size_t
record_make(uint32_t i, uint8_t *dst)
{
	size_t n = 40 + (i * 2654435761u) % 300;

	for (size_t k = 0; k < n; k++)
		dst[k] = (uint8_t)(i * 31 + k * 7 + (i >> 8));
	return n;
}

/*
 * How the child's records are written: MAPPED if its segment is mapped
 * writable (rw-s in /proc/self/maps) once it appended 100 records,
 * UNRESERVED if the filesystem cannot reserve space (the env then
 * writes by pwrite), or NOT_MAPPED.
 */
enum { NOT_MAPPED = 0xfffffff0u, MAPPED, UNRESERVED };

static uint32_t
child_how(const char *dir)
{
	char path[PATH_SIZE], line[PATH_SIZE + 128];
	struct env_file *f;
	struct env *env;
	size_t n, len;
	uint32_t how = NOT_MAPPED;
	FILE *maps;

	snprintf(path, sizeof(path), "%s/probe", dir);
	if (env_posix_new(&env) < 0 ||
	    env_file_open(env, path, ENV_CREATE, &f) < 0)
		_exit(2);
	if (env_file_allocate(f, 0, 4096) < 0)
		how = UNRESERVED;
	env_file_close(f);
	env_path_remove(env, path);
	env_free(env);
	if (how == UNRESERVED)
		return how;
	log_segment_path(path, sizeof(path), dir, 1);
	n = strlen(path);
	if ((maps = fopen("/proc/self/maps", "r")) == NULL)
		_exit(2);
	while (fgets(line, sizeof(line), maps) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		len = strlen(line);
		if (len >= n && strcmp(line + len - n, path) == 0 &&
		    strstr(line, " rw-s ") != NULL)
			how = MAPPED;
	}
	fclose(maps);
	return how;
}

/* The child: append records until killed, reporting each one appended
 * (its count) on fd, and after the 100th, how it was written.  Never
 * returns. */
static void __attribute__((noreturn))
child_write(const char *dir, int fd)
{
	struct log_options opts = { .segment_size = SEGMENT_SIZE };
	uint8_t rec[RECORD_MAX];
	struct log_writer *w;
	struct env *env;
	struct slice s;
	uint32_t how;

	if (env_posix_new(&env) < 0 ||
	    log_writer_open(env, dir, 1, &opts, &w) < 0)
		_exit(2);
	for (uint32_t done = 0;;) {
		s.p = rec;
		s.n = record_make(done, rec);
		if (log_writer_append(w, s, false, NULL) < 0)
			_exit(3);
		done++;
		if (write(fd, &done, sizeof(done)) != sizeof(done))
			_exit(4);
		if (done == 100 && (how = child_how(dir),
		    write(fd, &how, sizeof(how)) != sizeof(how)))
			_exit(4);
	}
}

struct replay {
	uint32_t records;	/* in order and intact, from record 0 */
	uint32_t wrong;		/* out of order or damaged */
	size_t segments;
	int rc;			/* the first error, 0 if none */
};

static void
replay_all(struct env *env, const char *dir, struct replay *out)
{
	uint8_t want[RECORD_MAX];
	char path[PATH_SIZE];
	struct log_reader *r;
	uint64_t *segs, off;
	struct slice s;
	size_t count, n;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((out->rc = log_list_segments(env, dir, &segs, &count)) < 0)
		return;
	out->segments = count;
	for (size_t i = 0; i < count && out->rc == 0; i++) {
		log_segment_path(path, sizeof(path), dir, segs[i]);
		if ((out->rc = log_reader_open(env, path, &r)) < 0)
			break;
		while ((rc = log_reader_next(r, &s, &off)) == 0) {
			n = record_make(out->records, want);
			if (s.n == n && memcmp(s.p, want, n) == 0)
				out->records++;
			else
				out->wrong++;
		}
		if (rc != BT_DONE)
			out->rc = rc;
		log_reader_close(r);
	}
	bt_free(segs);
}

/* Remove the log's segments and then its directory. */
static void
log_remove(struct env *env, const char *dir)
{
	char path[PATH_SIZE];
	uint64_t *segs;
	size_t count;

	if (log_list_segments(env, dir, &segs, &count) == 0) {
		for (size_t i = 0; i < count; i++) {
			log_segment_path(path, sizeof(path), dir, segs[i]);
			env_path_remove(env, path);
		}
		bt_free(segs);
	}
	env_path_remove(env, dir);
}

int
main(void)
{
	char tmp[] = "/tmp/test_log_kill.XXXXXX";
	uint32_t reported = 0, got, how = 0;
	struct replay rp;
	struct env *env;
	int pipefd[2], status;
	ssize_t r;
	pid_t pid;

	if (mkdtemp(tmp) == NULL)
		tap_bail("mkdtemp");
	if (pipe(pipefd) < 0)
		tap_bail("pipe");
	fflush(stdout);
	if ((pid = fork()) < 0)
		tap_bail("fork");
	if (pid == 0) {
		close(pipefd[0]);
		child_write(tmp, pipefd[1]);
	}
	close(pipefd[1]);
	while (reported < KILL_AFTER) {
		r = read(pipefd[0], &got, sizeof(got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r != sizeof(got))
			break;
		if (got >= NOT_MAPPED)
			how = got;
		else
			reported = got;
	}
	kill(pid, SIGKILL);
	/* Counts the child wrote before it died are reports too. */
	while ((r = read(pipefd[0], &got, sizeof(got))) == sizeof(got) ||
	    (r < 0 && errno == EINTR))
		if (r == sizeof(got) && got < NOT_MAPPED)
			reported = got;
	close(pipefd[0]);
	if (waitpid(pid, &status, 0) != pid)
		tap_bail("waitpid");
	ok(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
	    "kill: the writer was killed by SIGKILL while appending "
	    "(status %#x, %u records reported)", status, reported);
	ok(reported >= KILL_AFTER, "kill: it reported %u records first",
	    reported);
	if (how == UNRESERVED)
		ok(1, "# SKIP the filesystem cannot reserve space: the "
		    "records were written by pwrite");
	else
		ok(how == MAPPED, "kill: the records were written through a "
		    "writable mapping of the segment (%#x)", how);

	if (env_posix_new(&env) < 0)
		tap_bail("env_posix_new");
	replay_all(env, tmp, &rp);
	is_int(rp.rc, 0, "kill: replay reads the log without error");
	ok(rp.wrong == 0 && rp.records >= reported, "kill: replay finds "
	    "every reported record intact and in order (%u of %u reported, "
	    "%u wrong)", rp.records, reported, rp.wrong);
	ok(rp.records <= reported + 1, "kill: at most the one record being "
	    "reported when the kill came is there unreported (%u, %u)",
	    rp.records, reported);
	ok(rp.segments > 3, "kill: the records span %zu segments",
	    rp.segments);
	log_remove(env, tmp);
	env_free(env);
	return tap_done();
}
