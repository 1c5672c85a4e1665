/*
 * test_coord.c - src/coord against a real ZooKeeper: addresses, the cell
 * and its settings, tablet servers and their watch, the master election,
 * values with compare-and-set and their watch, and the lease when the
 * ZooKeeper server freezes (SIGSTOP): it must lapse on this process's
 * clock before ZooKeeper may expire the session.
 *
 * tests/cell/test_coord.sh starts the server and runs this with
 * TABLETFS_TEST_ZK=127.0.0.1:PORT and TABLETFS_TEST_ZK_PID=its pid; alone,
 * only the address tests run.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coord/coord.h"
#include "tap.h"
#include "util/error.h"

#define MS	1000000LL
#define SEC	1000000000LL
/* The short session of the lease test: ZooKeeper's minimum at
 * tickTime=1000 (scripts/zk). */
#define SHORT_MS	2000

static char zk_hosts[256];
static char cell[64];		/* unique per run: reruns share the server */
static char addr[512];

static double
secs(int64_t ns)
{
	return (double)ns / SEC;
}

static struct coord *
open_or_bail(int timeout_ms)
{
	struct coord *c = NULL;
	int rc = coord_open(addr, timeout_ms, coord_now_ns() + 10 * SEC, &c);

	if (rc < 0) {
		printf("# coord_open: %s: %s\n", bt_strerror(rc),
		    bt_error_detail());
		tap_bail("cannot open a coord");
	}
	return c;
}

/* ---- addresses ---- */

static void
test_address(void)
{
	static const char *const bad[] = {
		"", "zk:/", "zk://", "zk://h:1", "zk://h:1/", "zk://h/c",
		"zk://:1/c", "zk://h:/c", "zk://h:0/c", "zk://h:65536/c",
		"zk://h:12a/c", "zk://h:1,/c", "zk://h:1,,h:2/c", "zk://,h:1/c",
		"zk://h:1/bad/cell", "zk://h:1/..", "zk://h:1/.",
		"zk://h:1/c c", "zk://h h:1/c", "http://h:1/c",
		"zk://h:99999999999999999999/c",
		"zk://h:1/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	};
	char hosts[64], name[65];
	int rc;

	rc = coord_address_parse("zk://127.0.0.1:2181/cell1", hosts,
	    sizeof(hosts), name, sizeof(name));
	ok(rc == 0 && strcmp(hosts, "127.0.0.1:2181") == 0 &&
	    strcmp(name, "cell1") == 0, "address: one host parses");
	rc = coord_address_parse("zk://a:1,zk-2.example:65535,10.0.0.3:7/"
	    "x_Y.z-9", hosts, sizeof(hosts), name, sizeof(name));
	ok(rc == 0 && strcmp(hosts, "a:1,zk-2.example:65535,10.0.0.3:7") ==
	    0 && strcmp(name, "x_Y.z-9") == 0,
	    "address: three hosts and every name character parse");
	rc = coord_address_parse("zk://h:1/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", hosts, sizeof(hosts), name,
	    sizeof(name));
	is_int(rc, 0, "address: a 64-character cell name parses");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		bt_error_clear();
		rc = coord_address_parse(bad[i], hosts, sizeof(hosts), name,
		    sizeof(name));
		if (!ok(rc == -EINVAL && bt_error_detail()[0] != '\0',
		    "address: '%s' is refused with a detail", bad[i]))
			printf("#   rc %d, detail '%s'\n", rc,
			    bt_error_detail());
	}
	diag("e.g. %s", bt_error_detail());
	rc = coord_address_parse("zk://a-long-host-name:2181/c", hosts, 8,
	    name, sizeof(name));
	is_int(rc, -EINVAL, "address: a host list beyond hosts_size is "
	    "refused");
	ok(coord_address_is_cell("zk://h:1/c") &&
	    !coord_address_is_cell("/srv/store") &&
	    !coord_address_is_cell("zk:/h") && !coord_address_is_cell(NULL),
	    "address: is_cell tells cells from store paths");
}

static void
test_open_unreachable(void)
{
	struct coord *c = NULL;
	int64_t t0 = coord_now_ns();
	/* Port 1 on loopback: nothing listens, connects are refused. */
	int rc = coord_open("zk://127.0.0.1:1/x", 2000, t0 + 700 * MS, &c);
	int64_t took = coord_now_ns() - t0;

	ok(rc == -ETIMEDOUT && c == NULL && took < 3 * SEC,
	    "open: no server answers: -ETIMEDOUT at the deadline");
	diag("unreachable open returned %d after %.3f s: %s", rc, secs(took),
	    bt_error_detail());
}

/* ---- the cell ---- */

static void
test_cell(struct coord *a, struct coord *b)
{
	char *s = NULL;
	int rc;

	is_int(coord_session_timeout_ms(a), SHORT_MS,
	    "open: ZooKeeper negotiated the 2 s session asked for");
	is_int(coord_cell_settings(a, &s), BT_NOTFOUND,
	    "cell: settings of a cell not yet created: BT_NOTFOUND");
	is_int(coord_server_register(a, "s0", "x"), -ENOENT,
	    "cell: registering in a cell not yet created: -ENOENT");
	is_int(coord_cell_create(a, "storage=/srv/t\nkey=v\n"), 0,
	    "cell: created");
	rc = coord_cell_create(b, "other\n");
	is_int(rc, -EEXIST, "cell: created twice: -EEXIST");
	diag("%s", bt_error_detail());
	rc = coord_cell_settings(b, &s);
	ok(rc == 0 && strcmp(s, "storage=/srv/t\nkey=v\n") == 0,
	    "cell: settings round trip (read by another session)");
	free(s);
	is_int(coord_value_set(a, "bad/name", "x", 1), -EINVAL,
	    "cell: a name with '/' is refused");
}

/* ---- tablet servers ---- */

static atomic_int servers_changed;
static atomic_int servers_seen = -1;

/* Callbacks run on the coord's thread, not ZooKeeper's: they may call
 * the coord, and what they read is covered by the re-armed watch. */
static void
on_servers(void *arg)
{
	struct coord *c = arg;
	char **names = NULL;
	size_t count = 0;

	if (coord_servers_list(c, &names, &count) == 0) {
		atomic_store(&servers_seen, (int)count);
		coord_names_free(names, count);
	}
	atomic_fetch_add(&servers_changed, 1);
}

/* Wait until *n passes was, for at most ms: the time it took, or -1. */
static int64_t
wait_count(atomic_int *n, int was, int ms)
{
	int64_t t0 = coord_now_ns();

	while (atomic_load(n) <= was) {
		if (coord_now_ns() - t0 > ms * MS)
			return -1;
		usleep(5000);
	}
	return coord_now_ns() - t0;
}

static bool
list_is(struct coord *c, const char *want)
{
	char got[256] = "", **names = NULL;
	size_t count = 0;

	if (coord_servers_list(c, &names, &count) < 0)
		return false;
	for (size_t i = 0; i < count; i++) {
		strcat(got, i ? "," : "");
		strcat(got, names[i]);
	}
	coord_names_free(names, count);
	if (strcmp(got, want) != 0)
		printf("#   servers '%s', want '%s'\n", got, want);
	return strcmp(got, want) == 0;
}

static void
test_servers(struct coord *a)
{
	struct coord *s1 = open_or_bail(SHORT_MS);
	struct coord *s2 = open_or_bail(SHORT_MS);
	char *data = NULL;
	int was;
	int64_t took;

	is_int(coord_servers_watch(a, on_servers, a), 0,
	    "servers: watch armed");
	ok(list_is(a, ""), "servers: none at first");
	was = atomic_load(&servers_changed);
	is_int(coord_server_register(s1, "ts1", "127.0.0.1:9001"), 0,
	    "servers: ts1 registers");
	ok(wait_count(&servers_changed, was, 5000) >= 0,
	    "servers: the watch fired for ts1");
	is_int(coord_server_register(s2, "ts2", "127.0.0.1:9002"), 0,
	    "servers: ts2 registers");
	is_int(coord_server_register(a, "ts1", "elsewhere"), -EEXIST,
	    "servers: a second ts1 is refused with -EEXIST");
	is_int(coord_server_register(a, "a b", "x"), -EINVAL,
	    "servers: a bad name is refused with -EINVAL");
	ok(list_is(a, "ts1,ts2"), "servers: the list shows both");
	ok(coord_server_get(a, "ts2", &data) == 0 &&
	    strcmp(data, "127.0.0.1:9002") == 0,
	    "servers: ts2's data reads back");
	free(data);
	is_int(coord_server_get(a, "ts9", &data), BT_NOTFOUND,
	    "servers: an unknown server: BT_NOTFOUND");
	/* Let the ts2 event pass, then count the close alone. */
	usleep(300 * 1000);
	was = atomic_load(&servers_changed);
	coord_close(s1);
	took = wait_count(&servers_changed, was, 5000);
	ok(took >= 0, "servers: the watch fired when ts1 closed");
	is_int(atomic_load(&servers_seen), 1, "servers: the callback listed "
	    "the servers itself and saw one");
	diag("watch after ts1's close: %.3f s", secs(took));
	ok(list_is(a, "ts2"), "servers: ts1 left the list with its session");
	coord_close(s2);
}

/* ---- the election ---- */

struct candidate {
	struct coord *c;
	const char *name;
	int64_t deadline_ns;
	pthread_t thread;
	atomic_int done;
	int rc;
	int64_t led_at;
};

static void *
candidate_run(void *arg)
{
	struct candidate *k = arg;

	k->rc = coord_master_elect(k->c, k->name, k->deadline_ns);
	k->led_at = coord_now_ns();
	atomic_store(&k->done, 1);
	return NULL;
}

static void
candidate_start(struct candidate *k, const char *name)
{
	k->c = open_or_bail(SHORT_MS);
	k->name = name;
	k->deadline_ns = coord_now_ns() + 60 * SEC;
	if (pthread_create(&k->thread, NULL, candidate_run, k) != 0)
		tap_bail("pthread_create");
}

/* Wait (at most ms) until candidate k has returned. */
static bool
candidate_wait(struct candidate *k, int ms)
{
	int64_t until = coord_now_ns() + ms * MS;

	while (!atomic_load(&k->done) && coord_now_ns() < until)
		usleep(2000);
	return atomic_load(&k->done);
}

static bool
master_is(struct coord *c, const char *want)
{
	char *got = NULL;
	int rc = coord_master_get(c, &got);
	bool same = rc == 0 && strcmp(got, want) == 0;

	if (!same)
		printf("#   master: rc %d '%s', want '%s'\n", rc,
		    rc == 0 ? got : "", want);
	free(got);
	return same;
}

static void
test_election(struct coord *a)
{
	struct candidate k[3] = { 0 };
	struct coord *late;
	char *got = NULL;
	int64_t t0, rc;

	is_int(coord_master_get(a, &got), BT_NOTFOUND,
	    "election: no master before anyone stands");
	candidate_start(&k[0], "m1:9100");
	ok(candidate_wait(&k[0], 10000) && k[0].rc == 0,
	    "election: the first candidate leads");
	candidate_start(&k[1], "m2:9100");
	usleep(200 * 1000);	/* its node first, then the third's */
	candidate_start(&k[2], "m3:9100");
	usleep(300 * 1000);
	ok(!atomic_load(&k[1].done) && !atomic_load(&k[2].done),
	    "election: the other two wait");
	ok(master_is(a, "m1:9100"), "election: master_get names m1");

	t0 = coord_now_ns();
	coord_close(k[0].c);
	ok(candidate_wait(&k[1], 5000) && k[1].rc == 0,
	    "election: m1 closed, m2 leads");
	diag("m2 led %.3f s after m1 closed", secs(k[1].led_at - t0));
	ok(k[1].led_at - t0 < 2 * SEC, "election: within 2 s");
	usleep(500 * 1000);
	ok(!atomic_load(&k[2].done), "election: m3 still waits behind m2");
	ok(master_is(a, "m2:9100"), "election: master_get names m2");

	late = open_or_bail(SHORT_MS);
	t0 = coord_now_ns();
	rc = coord_master_elect(late, "m4:9100", t0 + 400 * MS);
	ok(rc == -ETIMEDOUT && coord_now_ns() - t0 < 2 * SEC,
	    "election: a deadline ends the wait with -ETIMEDOUT");
	diag("%s", bt_error_detail());
	coord_close(late);

	t0 = coord_now_ns();
	coord_close(k[1].c);
	ok(candidate_wait(&k[2], 5000) && k[2].rc == 0,
	    "election: m2 closed, m3 leads");
	diag("m3 led %.3f s after m2 closed", secs(k[2].led_at - t0));
	ok(master_is(a, "m3:9100"), "election: master_get names m3");
	for (int i = 0; i < 3; i++)
		pthread_join(k[i].thread, NULL);
	coord_close(k[2].c);
	is_int(coord_master_get(a, &got), BT_NOTFOUND,
	    "election: no master once all have gone");
}

/* ---- values ---- */

static atomic_int value_changed;

static void
on_value(void *arg)
{
	atomic_fetch_add(&value_changed, 1);
}

static void
test_values(struct coord *a, struct coord *b)
{
	char *data = NULL;
	size_t len = 0;
	int32_t v0 = -2, v1 = -2;
	int was, rc;

	is_int(coord_value_get(a, "root", &data, &len, &v0), BT_NOTFOUND,
	    "values: absent: BT_NOTFOUND");
	is_int(coord_value_watch(b, "root", on_value, NULL), 0,
	    "values: watch armed on an absent value");
	was = atomic_load(&value_changed);
	is_int(coord_value_set_if_version(a, "root", "ts1", 3, -1), 0,
	    "values: created with version -1");
	ok(wait_count(&value_changed, was, 5000) >= 0,
	    "values: the watch fired for the creation");
	is_int(coord_value_set_if_version(a, "root", "ts9", 3, -1), -ESTALE,
	    "values: version -1 on an existing value: -ESTALE");
	rc = coord_value_get(a, "root", &data, &len, &v0);
	ok(rc == 0 && len == 3 && memcmp(data, "ts1", 4) == 0,
	    "values: get reads it back, NUL-terminated");
	free(data);
	usleep(100 * 1000);
	was = atomic_load(&value_changed);
	is_int(coord_value_set_if_version(b, "root", "ts2", 3, v0), 0,
	    "values: compare-and-set at the version read");
	ok(wait_count(&value_changed, was, 5000) >= 0,
	    "values: the watch fired again (re-armed)");
	rc = coord_value_set_if_version(a, "root", "ts3", 3, v0);
	is_int(rc, -ESTALE, "values: compare-and-set at a stale version: "
	    "-ESTALE");
	diag("%s", bt_error_detail());
	rc = coord_value_get(b, "root", &data, &len, &v1);
	ok(rc == 0 && strcmp(data, "ts2") == 0 && v1 == v0 + 1,
	    "values: the stale set changed nothing; version moved by one");
	free(data);
	is_int(coord_value_set(a, "bin", "a\0b", 3), 0,
	    "values: set creates");
	is_int(coord_value_set(a, "bin", "x\0y\0", 4), 0,
	    "values: set replaces");
	rc = coord_value_get(b, "bin", &data, &len, NULL);
	ok(rc == 0 && len == 4 && memcmp(data, "x\0y\0", 4) == 0,
	    "values: binary data round trip");
	free(data);
}

/* ---- the lease ---- */

static atomic_int lost_calls;
static _Atomic int64_t lost_at;

static void
on_lost(void *arg)
{
	atomic_store(&lost_at, coord_now_ns());
	atomic_fetch_add(&lost_calls, 1);
}

static atomic_int late_lost_calls;

static void
on_lost_late(void *arg)
{
	atomic_fetch_add(&late_lost_calls, 1);
}

struct frozen_call {
	struct coord *c;
	int rc;
	int64_t took;
};

/* A call made while ZooKeeper is frozen: it must come back, not hang. */
static void *
frozen_call_run(void *arg)
{
	struct frozen_call *f = arg;
	int64_t t0 = coord_now_ns();
	char *data = NULL;

	f->rc = coord_value_get(f->c, "root", &data, NULL, NULL);
	f->took = coord_now_ns() - t0;
	if (f->rc == 0)
		free(data);
	return NULL;
}

/* Wait (up to 2 s) until every thread of pid is stopped ('T' in its
 * /proc stat), as SIGSTOP leaves them one after another. */
static void
threads_stopped_wait(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%ld/task", (long)pid);
	for (int tries = 0; tries < 2000; tries++) {
		DIR *d = opendir(path);
		struct dirent *e;
		bool all = d != NULL;

		while (d != NULL && (e = readdir(d)) != NULL) {
			char stat[128], line[512], *close_paren;
			FILE *f;

			if (e->d_name[0] == '.')
				continue;
			snprintf(stat, sizeof(stat), "%s/%s/stat", path,
			    e->d_name);
			if ((f = fopen(stat, "r")) == NULL)
				continue;
			if (fgets(line, sizeof(line), f) != NULL &&
			    (close_paren = strrchr(line, ')')) != NULL &&
			    close_paren[1] == ' ' && close_paren[2] != 'T')
				all = false;
			fclose(f);
		}
		if (d != NULL)
			closedir(d);
		if (all)
			return;
		usleep(1000);
	}
}

static bool
servers_has(struct coord *c, const char *name)
{
	char **names = NULL;
	size_t count = 0;
	bool has = false;

	if (coord_servers_list(c, &names, &count) < 0)
		return true;
	for (size_t i = 0; i < count; i++)
		has = has || strcmp(names[i], name) == 0;
	coord_names_free(names, count);
	return has;
}

static void
test_lease(pid_t zk_pid)
{
	struct coord *l = open_or_bail(SHORT_MS), *fresh;
	int64_t t_stop, t_trip, t_false = 0, t_valid = 0, last_ok, now;
	int64_t expiry, t0;
	int64_t lease_ns = SHORT_MS * MS * 8 / 10;
	struct frozen_call f = { .c = l };
	pthread_t th;
	bool sound = true, gone = false;
	char *data = NULL;
	int rc;

	coord_on_lost(l, on_lost, NULL);
	is_int(coord_server_register(l, "lease-ts", "x"), 0,
	    "lease: registered as a server");
	/* Healthy: pings renew it well past one lease. */
	usleep(2500 * 1000);
	ok(coord_lease_valid(l), "lease: still valid after 2.5 s (1.6 s "
	    "leases, renewed)");

	/*
	 * Freeze it just after a round trip, so that the lease has its full
	 * 1.6 s to run whatever the pings' phase.  The test sees that round
	 * trip end (the coord's expiry moves) at t_trip: the server heard
	 * from the session before then, and may expire it from 2 s after.
	 * What follows is measured from t_trip, on the test's own
	 * observations rather than the expiry the coord reports.
	 */
	expiry = coord_lease_expiry_ns(l);
	t0 = coord_now_ns();
	while (coord_lease_expiry_ns(l) == expiry &&
	    coord_now_ns() - t0 < 2 * SEC)
		usleep(500);
	t_trip = coord_now_ns();
	ok(t_trip - t0 < 2 * SEC, "lease: renewed by a round trip every "
	    "0.5 s");
	last_ok = coord_lease_expiry_ns(l) - lease_ns;
	t_stop = coord_now_ns();
	if (kill(zk_pid, SIGSTOP) != 0)
		tap_bail("cannot SIGSTOP ZooKeeper");
	/* The frozen call only once every thread of it has stopped: a
	 * thread still running would answer it (seen under ASan). */
	threads_stopped_wait(zk_pid);
	if (pthread_create(&th, NULL, frozen_call_run, &f) != 0)
		tap_bail("pthread_create");
	for (;;) {
		int64_t before = coord_now_ns();
		bool valid = coord_lease_valid(l);
		int64_t after = coord_now_ns();

		if (!valid) {
			t_false = after;	/* it turned false by then */
			break;
		}
		t_valid = before;		/* it was true at least then */
		/* Valid while ZooKeeper may have expired it: unsound. */
		if (before >= t_trip + SHORT_MS * MS)
			sound = false;
		if (after - t_stop > 10 * SEC)
			break;
		usleep(1000);
	}
	ok(t_false != 0, "lease: turned false while ZooKeeper was frozen");
	ok(sound, "lease: never valid 2 s or more after the last round "
	    "trip");
	diag("frozen at +0 s; last round trip seen at %+.3f s (the coord's "
	    "last_ok %+.3f s); lease last seen true at %+.3f s, false at "
	    "%+.3f s: %.3f s after the round trip", secs(t_trip - t_stop),
	    secs(last_ok - t_stop), secs(t_valid - t_stop),
	    secs(t_false - t_stop), secs(t_false - t_trip));
	ok(t_false - t_trip < SHORT_MS * MS,
	    "lease: false before 2.0 s after the last round trip");
	ok(t_valid - t_stop >= 1000 * MS,
	    "lease: still true 1 s after the freeze");
	ok(!coord_lease_valid(l), "lease: once false, stays false");
	ok(wait_count(&lost_calls, 0, 2000) >= 0,
	    "lease: the lost callback ran");
	diag("lost callback %.3f s after the lease turned false",
	    secs(atomic_load(&lost_at) - t_false));
	pthread_join(th, NULL);
	ok(f.rc < 0 && f.took < 2 * SHORT_MS * MS,
	    "lease: a call made while frozen fails within the timeout");
	diag("call made while frozen: %d (%s) after %.3f s", f.rc,
	    bt_strerror(f.rc), secs(f.took));

	/* Past ZooKeeper's own expiry, then thaw it. */
	now = coord_now_ns();
	if (t_stop + 3 * SEC > now)
		usleep((useconds_t)((t_stop + 3 * SEC - now) / 1000));
	kill(zk_pid, SIGCONT);
	t0 = coord_now_ns();
	rc = coord_value_get(l, "root", &data, NULL, NULL);
	now = coord_now_ns();
	ok(rc == -ENOLINK && now - t0 < 100 * MS,
	    "lease: after the thaw, calls fail at once with -ENOLINK");
	diag("%s", bt_error_detail());
	is_int(coord_server_register(l, "other", "x"), -ENOLINK,
	    "lease: and so does every other call");
	usleep(500 * 1000);
	is_int(atomic_load(&lost_calls), 1, "lease: the lost callback ran "
	    "once");
	coord_on_lost(l, on_lost_late, NULL);
	ok(wait_count(&late_lost_calls, 0, 2000) >= 0,
	    "lease: a callback set after the loss runs at once");

	fresh = open_or_bail(SHORT_MS);
	ok(coord_lease_valid(fresh), "lease: a fresh coord_open works");
	t0 = coord_now_ns();
	while (!(gone = !servers_has(fresh, "lease-ts")) &&
	    coord_now_ns() - t0 < 10 * SEC)
		usleep(20 * 1000);
	ok(gone, "lease: ZooKeeper expired the old session (its server "
	    "node is gone)");
	diag("old server node gone %.3f s after the thaw",
	    secs(coord_now_ns() - t0));
	rc = coord_value_get(fresh, "root", &data, NULL, NULL);
	ok(rc == 0 && strcmp(data, "ts2") == 0,
	    "lease: the fresh session reads the cell");
	if (rc == 0)
		free(data);
	coord_close(fresh);
	coord_close(l);
}

int
main(void)
{
	const char *zk = getenv("TABLETFS_TEST_ZK");
	const char *pid = getenv("TABLETFS_TEST_ZK_PID");
	struct coord *a, *b;

	test_address();
	if (zk == NULL || *zk == '\0') {
		diag("TABLETFS_TEST_ZK unset: the ZooKeeper tests do not run "
		    "(tests/cell/test_coord.sh sets it)");
		return tap_done();
	}
	snprintf(zk_hosts, sizeof(zk_hosts), "%s", zk);
	snprintf(cell, sizeof(cell), "t%ld_%lld", (long)getpid(),
	    (long long)(coord_now_ns() / MS));
	snprintf(addr, sizeof(addr), "zk://%s/%s", zk_hosts, cell);
	diag("cell %s", addr);
	test_open_unreachable();
	a = open_or_bail(SHORT_MS);
	b = open_or_bail(SHORT_MS);
	test_cell(a, b);
	test_servers(a);
	test_election(a);
	test_values(a, b);
	coord_close(a);
	coord_close(b);
	if (pid != NULL && *pid != '\0')
		test_lease((pid_t)atol(pid));
	else
		diag("TABLETFS_TEST_ZK_PID unset: the lease test does not "
		    "run");
	return tap_done();
}
