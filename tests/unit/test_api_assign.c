/*
 * test_api_assign.c - a tablet unloaded and loaded again in a running
 * store, as a cell's tablet server does when the master moves it
 * (bt_tablet_unload, bt_tablet_load), and one recovered from another
 * server's log (bt_tablet_recover): once unloaded, reads, scans and
 * writes of its rows fail with BT_ENOTSERVING and nothing else, while
 * the other tablets serve on; its memtable is flushed, so that its redo
 * point covers every write it took; it is neither split nor compacted
 * away; loaded again it holds every cell written before; writers racing
 * with unloads and loads lose no acknowledged cell; a crash right
 * after an unload, with the log collected, loses nothing; and a tablet
 * whose writes live only in another log is recovered from it whole,
 * newer writes ordering after them.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "api_util.h"

static int
tablet_ids(struct bt_store *s, uint64_t *ids, size_t max, size_t *n)
{
	struct bt_tablet_info *info;
	int rc;

	if ((rc = bt_table_tablets(s, "t", &info, n)) != 0)
		return rc;
	for (size_t i = 0; i < *n && i < max; i++)
		ids[i] = info[i].id;
	bt_tablets_free(info);
	return 0;
}

/* The memtable bytes and redo point of tablet i of "t". */
static void
tablet_state(struct bt_store *s, size_t i, uint64_t *mem, uint64_t *redo)
{
	struct bt_tablet_info *info;
	size_t n;

	must(bt_table_tablets(s, "t", &info, &n));
	*mem = info[i].memtable_bytes;
	*redo = info[i].flushed_seq;
	bt_tablets_free(info);
}

/* The value of row's newest version of f:q, or "NOTFOUND"/"ERROR(rc)". */
static char *
newest_text_value(struct bt_store *s, const char *row)
{
	char *val = NULL, *text;
	size_t len;
	int64_t ts;
	int rc;

	rc = get_newest(s, "t", bts(row), "f", bts("q"), &val, &len, &ts);
	if (rc == 0)
		return val;
	text = xmalloc(32);
	snprintf(text, 32, rc == BT_NOTFOUND ? "NOTFOUND" : "ERROR(%d)", rc);
	return text;
}

/* A store with table "t" in two tablets, [, m) and [m, ), and rows
 * a0..a9 and x0..x9 in each. */
static void
store_make(struct tstore *t, uint64_t ids[2])
{
	struct bt_bytes split = bts("m");
	struct bt_family_spec f = { "f", NULL, NULL };
	size_t n;

	tstore_fault(t, NULL);
	must(bt_table_create(t->s, "t", &f, 1, &split, 1, 0));
	for (int i = 0; i < 10; i++) {
		char a[8], x[8];

		snprintf(a, sizeof(a), "a%d", i);
		snprintf(x, sizeof(x), "x%d", i);
		must(put_str(t->s, "t", a, "f", "q", 1000 + i, a));
		must(put_str(t->s, "t", x, "f", "q", 1000 + i, x));
	}
	must(tablet_ids(t->s, ids, 2, &n));
	if (n != 2)
		tap_bail("the table has not two tablets");
}

static void
test_unloaded_refuses(void)
{
	struct tstore t;
	uint64_t ids[2], mem, redo, stats_seq;
	struct bt_row *row = NULL;
	struct sbuf b = { 0 };
	struct bt_scan_options so = { 0 };
	int rc;

	store_make(&t, ids);
	if (tstore_cell_skip(&t, "unload is the tablet server's"))
		return;
	stats_seq = bt_store_last_seq(t.s);
	tablet_state(t.s, 1, &mem, &redo);
	ok(redo < stats_seq, "before: the tablet holds its "
	    "writes in memory (redo point %" PRIu64 ")", redo);
	rc = bt_tablet_unload(t.s, "t", ids[1]);
	ok(rc == 0, "unload: %s (%s)", bt_strerror(rc), bt_error_detail());
	tablet_state(t.s, 1, &mem, &redo);
	ok(redo >= stats_seq, "its memtable is flushed: redo point %" PRIu64
	    " of last seq %" PRIu64, redo, stats_seq);

	rc = bt_read_row(t.s, "t", bts("x3"), NULL, &row);
	ok(rc == BT_ENOTSERVING, "a read of its row: BT_ENOTSERVING (%s)",
	    bt_strerror(rc));
	if (rc == 0)
		bt_row_free(row);
	rc = put_str(t.s, "t", "x3", "f", "q", BT_TS_SERVER, "new");
	ok(rc == BT_ENOTSERVING, "a write of its row: BT_ENOTSERVING (%s)",
	    bt_strerror(rc));
	rc = put_str(t.s, "t", "zz", "f", "q", 5, "new");
	ok(rc == BT_ENOTSERVING, "a write of a new row in it: "
	    "BT_ENOTSERVING (%s)", bt_strerror(rc));
	is_text(read_text_str(t.s, "t", "a3", NULL), "f:q@1003=a3\n",
	    "the other tablet reads");
	ok(put_str(t.s, "t", "a3", "f", "q", 2000, "b3") == 0 &&
	    put_str(t.s, "t", "l", "f", "q", 2000, "l") == 0,
	    "and takes writes, up to the boundary");
	so.end = bts("m");
	is_text(scan_keys(t.s, "t", &so), "[a0]\n[a1]\n[a2]\n[a3]\n[a4]\n"
	    "[a5]\n[a6]\n[a7]\n[a8]\n[a9]\n[l]\n",
	    "a scan of the other tablet's rows");
	so.end = bts("");
	rc = scan_render(t.s, "t", &so, false, &b);
	ok(rc == BT_ENOTSERVING, "a scan into it stops with BT_ENOTSERVING "
	    "(%s)", bt_strerror(rc));
	sbuf_release(&b);
	so.start = bts("n");
	rc = scan_render(t.s, "t", &so, false, &b);
	ok(rc == BT_ENOTSERVING, "a scan inside it: BT_ENOTSERVING (%s)",
	    bt_strerror(rc));
	sbuf_release(&b);

	ok(bt_tablet_unload(t.s, "t", ids[1]) == 0, "unloading again: 0");
	ok(bt_tablet_unload(t.s, "t", ids[1] + 100) == -ENOENT,
	    "an unknown tablet: -ENOENT");
	ok(bt_tablet_load(t.s, "nosuch", ids[1]) == -ENOENT,
	    "an unknown table: -ENOENT");
	rc = bt_table_split(t.s, "t", bts("q"));
	ok(rc < 0, "it is not split (%s)", bt_strerror(rc));
	rc = bt_store_compact(t.s, "t", true);
	ok(rc == 0, "a major compaction of the table passes it by (%s)",
	    bt_strerror(rc));

	rc = bt_tablet_load(t.s, "t", ids[1]);
	ok(rc == 0, "load: %s (%s)", bt_strerror(rc), bt_error_detail());
	ok(bt_tablet_load(t.s, "t", ids[1]) == 0, "loading again: 0");
	is_text(read_text_str(t.s, "t", "x3", NULL), "f:q@1003=x3\n",
	    "loaded, it holds what it held");
	ok(put_str(t.s, "t", "x3", "f", "q", 2000, "y3") == 0,
	    "and takes writes again");
	is_text(read_text_str(t.s, "t", "x3", NULL),
	    "f:q@2000=y3\nf:q@1003=x3\n", "which read back");
	so.start = bts("");
	is_text(scan_keys(t.s, "t", &so), "[a0]\n[a1]\n[a2]\n[a3]\n[a4]\n"
	    "[a5]\n[a6]\n[a7]\n[a8]\n[a9]\n[l]\n[x0]\n[x1]\n[x2]\n[x3]\n"
	    "[x4]\n[x5]\n[x6]\n[x7]\n[x8]\n[x9]\n", "a scan of the table");
	ok(tstore_reopen(&t) == 0, "the store closes and opens");
	is_text(read_text_str(t.s, "t", "x3", NULL),
	    "f:q@2000=y3\nf:q@1003=x3\n", "and keeps it");
	tstore_destroy(&t);
}

/* A crash just after an unload, the log collected: the unloaded tablet's
 * cells are in its SSTables, and the reopen serves them. */
static void
test_crash_after_unload(void)
{
	struct tstore t;
	uint64_t ids[2];
	int rc;

	store_make(&t, ids);
	if (tstore_cell_skip(&t, "needs the fault env"))
		return;
	must(bt_tablet_unload(t.s, "t", ids[1]));
	must(bt_tablet_unload(t.s, "t", ids[0]));
	/* Collects the log segments both redo points passed. */
	must(bt_store_flush(t.s));
	tstore_crash(&t);
	rc = bt_store_open(t.path, &t.opts, &t.s);
	ok(rc == 0, "the store opens after the crash (%s)", bt_strerror(rc));
	if (rc != 0) {
		tstore_destroy(&t);
		return;
	}
	is_text(read_text_str(t.s, "t", "x9", NULL), "f:q@1009=x9\n",
	    "an unloaded tablet's cell is there");
	is_text(read_text_str(t.s, "t", "a9", NULL), "f:q@1009=a9\n",
	    "and the other's");
	tstore_destroy(&t);
}

/* Copy every file of directory from to directory to (made), synced: the
 * log of a server that died, as its tablets' next servers find it. */
struct copy {
	struct env *env;
	const char *from, *to;
	int rc;
};

static int
copy_one(void *arg, const char *name)
{
	struct copy *c = arg;
	char src[512], dst[512];
	struct env_file *in, *out;
	uint64_t size;
	char *data;
	int rc;

	snprintf(src, sizeof(src), "%s/%s", c->from, name);
	snprintf(dst, sizeof(dst), "%s/%s", c->to, name);
	if ((rc = env_path_size(c->env, src, &size)) < 0 ||
	    (rc = env_file_open(c->env, src, ENV_READ, &in)) < 0)
		return rc;
	data = xmalloc(size + 1);
	rc = env_file_read_exact(in, 0, data, size);
	env_file_close(in);
	if (rc == 0 && (rc = env_file_open(c->env, dst, ENV_CREATE,
	    &out)) == 0) {
		if ((rc = env_file_append(out, data, size)) == 0)
			rc = env_file_sync(out);
		env_file_close(out);
	}
	free(data);
	return rc;
}

static int
copy_dir(struct env *env, const char *from, const char *to)
{
	struct copy c = { env, from, to, 0 };
	int rc;

	if ((rc = env_dir_create(env, to)) < 0 ||
	    (rc = env_dir_sync(env, "/")) < 0 ||
	    (rc = env_dir_list(env, from, copy_one, &c)) < 0)
		return rc;
	return env_dir_sync(env, to);
}

static int
remove_one(void *arg, const char *name)
{
	struct copy *c = arg;
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", c->from, name);
	return env_path_remove(c->env, path);
}

/*
 * The writes of tablet [m, ) live only in a log the store does not
 * replay (its own log is gone, as if another server had taken them):
 * the reopened store lacks them; bt_tablet_recover() from that log
 * brings them back, flushed, and a later write with a server stamp is
 * the newest version and orders after them.
 */
static void
test_recover_from_log(void)
{
	struct bt_write_options wo = { .sync = true };
	struct copy rm;
	struct tstore t;
	uint64_t ids[2], mem, redo;
	int rc;

	store_make(&t, ids);
	if (tstore_cell_skip(&t, "needs the fault env"))
		return;
	/* Server-stamped versions, synced, above the ones at 1000+. */
	for (int i = 0; i < 10; i++) {
		char x[8];
		struct bt_mutation m = { .kind = BT_PUT, .family = "f",
		    .qualifier = bts("q"), .ts = BT_TS_SERVER,
		    .value = bts("late") };

		snprintf(x, sizeof(x), "x%d", i);
		must(bt_mutate_row(t.s, "t", bts(x), &m, 1, &wo, NULL));
	}
	must(copy_dir(t.env, "/store/log", "/dead"));
	/* A crash, then the store's own log is lost: what the tablets have
	 * not flushed is only in /dead. */
	tstore_crash(&t);
	rm = (struct copy){ t.env, "/store/log", NULL, 0 };
	must(env_dir_list(t.env, "/store/log", remove_one, &rm));
	must(bt_store_open(t.path, &t.opts, &t.s));
	is_text(read_text_str(t.s, "t", "x3", NULL), "NOTFOUND",
	    "reopened without its log, the store lacks the tablet's cells");

	rc = bt_tablet_recover(t.s, "t", ids[1], "/dead");
	ok(rc == -EBUSY, "recovering a served tablet: -EBUSY (%s)",
	    bt_strerror(rc));
	must(bt_tablet_unload(t.s, "t", ids[1]));
	rc = bt_tablet_recover(t.s, "t", ids[1], "/nosuch");
	ok(rc < 0, "from a log that is not there: an error (%s)",
	    bt_strerror(rc));
	is_text(read_text_str(t.s, "t", "x3", NULL), "ERROR(-10005 not served here: locate it again)",
	    "which leaves it not served");
	rc = bt_tablet_recover(t.s, "t", ids[1], "/dead");
	ok(rc == 0, "recover: %s (%s)", bt_strerror(rc), bt_error_detail());
	{
		struct bt_row *r = NULL;

		rc = bt_read_row(t.s, "t", bts("x3"), NULL, &r);
		ok(rc == 0 && r->cell_count == 2, "x3 has its two versions "
		    "back (%s)", bt_strerror(rc));
		if (rc == 0)
			bt_row_free(r);
	}
	tablet_state(t.s, 1, &mem, &redo);
	ok(redo > 20, "its redo point covers them (%" PRIu64 ")", redo);
	is_text(read_text_str(t.s, "t", "a3", NULL), "NOTFOUND",
	    "the other tablet's cells stay in the log it was not given");
	must(put_str(t.s, "t", "x3", "f", "q", BT_TS_SERVER, "newest"));
	is_text(newest_text_value(t.s, "x3"), "newest",
	    "a write after the recovery is the newest version");
	must(del_str(t.s, "t", "x4", BT_DELETE_COLUMN, "f", "q", 0));
	is_text(read_text_str(t.s, "t", "x4", NULL), "NOTFOUND",
	    "and a delete after it masks what it replayed");
	ok(tstore_reopen(&t) == 0, "the store closes and opens");
	is_text(newest_text_value(t.s, "x3"), "newest", "and keeps it");
	is_text(read_text_str(t.s, "t", "x4", NULL), "NOTFOUND",
	    "and the delete");
	tstore_destroy(&t);
}

#define WRITERS 3
#define ROUNDS 40

struct race {
	struct bt_store *s;
	atomic_bool stop;
	atomic_int bad;		/* failures other than BT_ENOTSERVING */
	int acked[WRITERS];	/* writes acknowledged, each a new row */
	int refused[WRITERS];	/* BT_ENOTSERVING */
};

struct writer {
	struct race *r;
	int id;
};

static void *
writer_run(void *arg)
{
	struct writer *w = arg;
	struct race *r = w->r;
	int i = 0;

	while (!atomic_load(&r->stop)) {
		char row[32];
		int rc;

		/* Rows on both sides of the boundary "m". */
		snprintf(row, sizeof(row), "%c%d-%06d", i % 2 ? 'x' : 'b',
		    w->id, r->acked[w->id]);
		rc = put_str(r->s, "t", row, "f", "q", 7, row);
		if (rc == 0)
			r->acked[w->id]++;
		else if (rc == BT_ENOTSERVING)
			r->refused[w->id]++;
		else {
			diag("writer %d: %s (%s)", w->id, bt_strerror(rc),
			    bt_error_detail());
			atomic_fetch_add(&r->bad, 1);
		}
		i++;
	}
	return NULL;
}

static void
test_writers_race(void)
{
	struct tstore t;
	struct race r = { 0 };
	struct writer w[WRITERS];
	pthread_t th[WRITERS];
	uint64_t ids[2];
	int fails = 0, missing = 0;

	store_make(&t, ids);
	if (tstore_cell_skip(&t, "unload is the tablet server's"))
		return;
	r.s = t.s;
	for (int i = 0; i < WRITERS; i++) {
		w[i] = (struct writer){ &r, i };
		pthread_create(&th[i], NULL, writer_run, &w[i]);
	}
	for (int k = 0; k < ROUNDS; k++) {
		if (bt_tablet_unload(t.s, "t", ids[k % 2]) != 0)
			fails++;
		usleep(2000);	/* writers meet it unloaded */
		if (bt_tablet_load(t.s, "t", ids[k % 2]) != 0)
			fails++;
	}
	atomic_store(&r.stop, true);
	for (int i = 0; i < WRITERS; i++)
		pthread_join(th[i], NULL);
	ok(fails == 0, "%d unloads and loads under writers, %d failed",
	    ROUNDS, fails);
	ok(atomic_load(&r.bad) == 0, "writers failed only with "
	    "BT_ENOTSERVING");
	ok(r.refused[0] + r.refused[1] + r.refused[2] > 0, "and some did");
	for (int i = 0; i < WRITERS; i++) {
		int j = 0;

		/* Acknowledged writes i..acked-1 of writer i, the sides
		 * alternating as they were tried: look in both. */
		for (int a = 0; a < r.acked[i]; a++) {
			char b[32], x[32];
			struct bt_row *row = NULL;

			snprintf(b, sizeof(b), "b%d-%06d", i, a);
			snprintf(x, sizeof(x), "x%d-%06d", i, a);
			if (bt_read_row(t.s, "t", bts(b), NULL, &row) == 0)
				bt_row_free(row);
			else if (bt_read_row(t.s, "t", bts(x), NULL,
			    &row) == 0)
				bt_row_free(row);
			else
				missing++;
			j++;
		}
		diag("writer %d: %d writes acknowledged, %d refused", i, j,
		    r.refused[i]);
	}
	ok(missing == 0, "every acknowledged write reads back (%d missing)",
	    missing);
	ok(tstore_reopen(&t) == 0, "the store closes and opens");
	tstore_destroy(&t);
}

int
main(void)
{
	test_unloaded_refuses();
	test_crash_after_unload();
	test_recover_from_log();
	test_writers_race();
	return tap_done();
}
