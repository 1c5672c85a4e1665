/*
 * test_rados_store.c - a store whose every file is a RADOS object
 * (the catalog through the SQLite VFS, the commit log, SSTables): the
 * steps of tabletctl init, createtable, set and lookup through the
 * public API, then what the engine does with files on its own: a flush
 * and a major compaction (SSTables written in tmp/ and renamed into
 * sst/), a reopen from another client (log replay and the catalog read
 * back), a second open refused by the lock, and bt_store_check.
 * Needs TABLETFS_TEST_RADOS=CONF:POOL (tests/rados/test_env_rados.sh);
 * one SKIP point without it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api_util.h"
#include "rados_util.h"
#include "tap.h"
#include "util/env.h"
#include "util/error.h"

struct listing {
	int files;
};

static int
count_one(void *arg, const char *name)
{
	struct listing *l = arg;

	(void)name;
	l->files++;
	return 0;
}

static void
report(void *arg, const char *problem)
{
	int *n = arg;

	(*n)++;
	diag("check: %s", problem);
}

int
main(void)
{
	static const char *const fams[] = { "contents", "anchor", NULL };
	char root[RADOS_TEST_PATH], root2[RADOS_TEST_PATH];
	char path[RADOS_TEST_PATH + 16], dir[RADOS_TEST_PATH + 32];
	struct bt_options opts, opts2;
	struct bt_store *s, *s2;
	struct env *env, *env2;
	struct listing l;
	char row[32], want[64];
	int problems = 0, bad, rc;

	if (!rados_test_env("test_rados_store", &env, root))
		return tap_done();
	snprintf(path, sizeof(path), "%s/store", root);
	memset(&opts, 0, sizeof(opts));
	opts.env = env;

	/* tabletctl init, createtable, set, lookup */
	must(bt_store_create(path, &opts));
	ok(1, "init: create a store on RADOS");
	must(bt_store_open(path, &opts, &s));
	ok(1, "open it");
	is_int(make_table(s, "webtable", fams), 0, "createtable webtable");
	is_int(put_str(s, "webtable", "com.cnn.www", "contents", "", 3,
	    "<html>v3"), 0, "set com.cnn.www contents:=...@3");
	is_int(put_str(s, "webtable", "com.cnn.www", "anchor",
	    "cnnsi.com", 9, "CNN"), 0, "set com.cnn.www anchor:cnnsi.com=CNN@9");
	is_text(newest_text(s, "webtable", "com.cnn.www", "contents", ""),
	    "<html>v3@3", "lookup reads the value back");

	/* Rows enough for an SSTable, flushed and compacted. */
	bad = 0;
	for (int i = 0; i < 500; i++) {
		snprintf(row, sizeof(row), "row%04d", i);
		if (put_str(s, "webtable", row, "contents", "", 1, row) != 0)
			bad++;
	}
	is_int(bad, 0, "500 more rows");
	is_int(bt_store_flush(s), 0, "flush: memtables become SSTables");
	is_int(bt_store_compact(s, "webtable", true), 0, "major compaction");
	snprintf(dir, sizeof(dir), "%s/sst", path);
	memset(&l, 0, sizeof(l));
	is_int(env_dir_list(env, dir, count_one, &l), 0, "list sst/");
	ok(l.files >= 1, "sst/ holds %d SSTable object(s)", l.files);
	is_int(put_str(s, "webtable", "com.cnn.www", "contents", "", 5,
	    "<html>v5"), 0, "a write left in the commit log only");

	/* Another client (another host) while it is open: refused. */
	if (!rados_test_env("test_rados_store.2", &env2, root2))
		tap_bail("second RADOS env");
	rados_test_clean(env2, root2);
	memset(&opts2, 0, sizeof(opts2));
	opts2.env = env2;
	rc = bt_store_open(path, &opts2, &s2);
	is_int(rc, -EWOULDBLOCK, "a second open from another client is "
	    "refused");
	snprintf(want, sizeof(want), "held by pid %ld", (long)getpid());
	ok(strstr(bt_error_detail(), want) != NULL, "naming the holder: %s",
	    bt_error_detail());

	/* Close, and reopen from that client: replay and catalog. */
	is_int(bt_store_close(s), 0, "close");
	if ((rc = bt_store_open(path, &opts2, &s2)) != 0) {
		diag("%s", bt_error_detail());
		tap_bail("cannot reopen the store from the other client");
	}
	ok(1, "reopen from the other client");
	is_text(newest_text(s2, "webtable", "com.cnn.www", "contents", ""),
	    "<html>v5@5", "the newest write is there after the reopen");
	is_text(newest_text(s2, "webtable", "com.cnn.www", "anchor",
	    "cnnsi.com"), "CNN@9", "and the older one");
	bad = 0;
	for (int i = 0; i < 500; i += 7) {
		char *got;

		snprintf(row, sizeof(row), "row%04d", i);
		snprintf(want, sizeof(want), "%s@1", row);
		got = newest_text(s2, "webtable", row, "contents", "");
		if (strcmp(got, want) != 0)
			bad++;
		free(got);
	}
	is_int(bad, 0, "the compacted rows read back");
	is_int(bt_store_check(s2, report, NULL, &problems, NULL, NULL), 0,
	    "check: every SSTable block, log record and catalog entry");
	is_int(problems, 0, "check reports nothing");
	is_int(bt_store_close(s2), 0, "close");
	env_free(env2);

	rados_test_clean(env, root);
	ok(!env_path_exists(env, root), "the store's objects are removed");
	env_free(env);
	return tap_done();
}
