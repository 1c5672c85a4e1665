/*
 * test_api_bulk.c - the bulk load (bt_bulk_*, docs/design.md section 8)
 * through the public API, in the in-memory fault env and on the local
 * filesystem: cells given in random order, with repeats, into a table
 * split into three tablets and two locality groups, with a memory budget
 * small enough that the sort spills many runs, read back exactly as the
 * same cells written one by one into a model table read; a loaded cell
 * over an older delete is visible and replaces an older version of the
 * same timestamp, and a write after the load wins over it; all of it the
 * same after a reopen and a major compaction, with the store's check
 * clean and nothing left in tmp/; one stamp for the cells without a
 * timestamp; refused cells, an abandoned load, an empty one and an
 * unknown table.  The faults are test_api_bulk_fault's.
 *
 * On a cell (tests/cell/test_cell_api.sh) the same, but for what needs
 * an embedded store (the kill, the local filesystem); tmp/ is then the
 * one of the cell's storage, TABLETFS_TEST_CELL_STORAGE.
 */
#include <dirent.h>

#include "api_util.h"

#define ROWS		300
#define BUDGET		4096	/* bytes: dozens of runs */

static const struct bt_bytes splits[] = {
	{ "r0100", 5 }, { "r0200", 5 },
};

/* Tables "t" (split in three) and "m" (the model, one tablet), each
 * with family a in the default group and c in group g2. */
static void
tables_make(struct bt_store *s)
{
	struct bt_family_spec f[] = {
		{ "a", NULL, NULL }, { "c", "g2", NULL },
	};
	int rc;

	if ((rc = bt_table_create(s, "t", f, 2, splits, 2, 0)) != 0 ||
	    (rc = bt_table_create(s, "m", f, 2, NULL, 0, 0)) != 0) {
		diag("tables: %s (%s)", bt_strerror(rc), bt_error_detail());
		tap_bail("cannot create the tables");
	}
}

/* The sorted runs (NAME.run) in the store's tmp/: the env's, or the
 * directory's.  Not every file there: a flush, compaction or split
 * in the background writes its SSTables there too. */
static int
tmp_count_fn(void *arg, const char *name)
{
	size_t n = strlen(name);

	if (n > 4 && strcmp(name + n - 4, ".run") == 0)
		(*(int *)arg)++;
	return 0;
}

/* The runs in directory path (through env when not NULL), or -1. */
static int
dir_runs(struct env *env, const char *path)
{
	int n = 0;

	if (env != NULL) {
		if (env_dir_list(env, path, tmp_count_fn, &n) < 0)
			return -1;
		return n;
	}
	DIR *d = opendir(path);
	struct dirent *e;

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL)
		tmp_count_fn(&n, e->d_name);
	closedir(d);
	return n;
}

/*
 * The runs in the store's tmp/; on a cell, in its storage's and in each
 * tablet server's own (servers/NAME/tmp: the root's server gathers the
 * load in its own).
 */
static int
tmp_count(struct tstore *t)
{
	char path[400];
	const char *storage;
	struct dirent *e;
	int n, k;
	DIR *d;

	if (getenv("TABLETFS_TEST_CELL") == NULL ||
	    *getenv("TABLETFS_TEST_CELL") == '\0') {
		snprintf(path, sizeof(path), "%s/tmp", t->path);
		return dir_runs(t->env, path);
	}
	if ((storage = getenv("TABLETFS_TEST_CELL_STORAGE")) == NULL)
		tap_bail("TABLETFS_TEST_CELL_STORAGE is not set");
	snprintf(path, sizeof(path), "%s/tmp", storage);
	if ((n = dir_runs(t->env, path)) < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/servers", storage);
	if ((d = opendir(path)) == NULL)
		return n;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/servers/%.100s/tmp", storage,
		    e->d_name);
		if ((k = dir_runs(t->env, path)) > 0)
			n += k;
	}
	closedir(d);
	return n;
}

static int
check_store(struct bt_store *s)
{
	int rc = bt_store_check(s, NULL, NULL, NULL, NULL, NULL);

	if (rc != 0)
		diag("check: %s (%s)", bt_strerror(rc), bt_error_detail());
	return rc;
}

/* Put one cell into the load and the same into the model. */
static void
both_put(struct bt_bulk *b, struct bt_store *s, const char *row,
    const char *fam, const char *q, int64_t ts, const char *value,
    int *failures)
{
	int rc;

	if ((rc = bt_bulk_put(b, bts(row), fam, bts(q), ts,
	    bts(value))) != 0 ||
	    (rc = put_str(s, "m", row, fam, q, ts, value)) != 0) {
		if ((*failures)++ == 0)
			diag("put %s: %s (%s)", row, bt_strerror(rc),
			    bt_error_detail());
	}
}

/* Compare "t" with the model "m", named what. */
static void
same_as_model(struct bt_store *s, const char *what)
{
	char *got = scan_text(s, "t", NULL), *want = scan_text(s, "m", NULL);

	is_str(got, want, "%s: every loaded cell reads as the model's", what);
	free(got);
	free(want);
}

static void
test_load(struct tstore *t, const char *where)
{
	struct bt_bulk_options bo = { .memory_budget = BUDGET };
	struct bt_bulk_stats st = { 0 };
	struct bt_bulk *b = NULL;
	static const char *const quals[] = { "x", "y", "", "z\001" };
	static const int64_t stamps[] = { 3, 5, 7, 9 };
	uint64_t rnd = tap_seed() | 1;
	int order[ROWS], failures = 0, rc;
	char *text;

	tables_make(t->s);
	/* Before the load, in both tables: a version the load replaces, a
	 * column the load writes below a delete of it, a cell it keeps (in a
	 * column the random cells below never use). */
	for (int i = 0; i < 2; i++) {
		const char *tb = i == 0 ? "t" : "m";

		if (put_str(t->s, tb, "r0050", "a", "x", 7, "before") != 0 ||
		    put_str(t->s, tb, "r0060", "a", "x", 3, "old") != 0 ||
		    del_str(t->s, tb, "r0060", BT_DELETE_COLUMN, "a", "x",
		    0) != 0 ||
		    put_str(t->s, tb, "r0070", "c", "kept", 9, "pre") != 0)
			tap_bail("cannot write before the load");
	}
	rc = bt_bulk_open(t->s, "t", &bo, &b);
	is_int(rc, 0, "%s: bt_bulk_open", where);
	if (rc != 0)
		tap_bail("no load");
	for (int i = 0; i < ROWS; i++)
		order[i] = i;
	for (int i = ROWS - 1; i > 0; i--) {
		int j = (int)(tap_rand(&rnd) % (uint64_t)(i + 1)), x;

		x = order[i];
		order[i] = order[j];
		order[j] = x;
	}
	/* Each row twice over, in random order: cells that land on the same
	 * (column, timestamp) replace the ones given before. */
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < ROWS; i++) {
			char row[16], val[256];
			int cells = 1 + (int)(tap_rand(&rnd) % 3);

			snprintf(row, sizeof(row), "r%04d", order[i]);
			for (int c = 0; c < cells; c++) {
				size_t len = tap_rand(&rnd) % 200;

				for (size_t k = 0; k < len; k++)
					val[k] = (char)('a' +
					    tap_rand(&rnd) % 26);
				val[len] = '\0';
				both_put(b, t->s, row,
				    tap_rand(&rnd) % 2 ? "a" : "c",
				    quals[tap_rand(&rnd) % 4],
				    stamps[tap_rand(&rnd) % 4], val,
				    &failures);
			}
		}
	both_put(b, t->s, "r0050", "a", "x", 7, "loaded", &failures);
	both_put(b, t->s, "r0060", "a", "x", 5, "over the delete", &failures);
	is_int(failures, 0, "%s: every put taken", where);
	text = read_text_str(t->s, "t", "r0050", NULL);
	is_str(text, "a:x@7=before\n", "%s: nothing of the load is visible "
	    "before its commit", where);
	free(text);
	rc = bt_bulk_commit(b, &st);
	if (rc != 0)
		diag("commit: %s (%s)", bt_strerror(rc), bt_error_detail());
	is_int(rc, 0, "%s: bt_bulk_commit", where);
	bt_bulk_close(b);
	is_int(st.tablets, 3, "%s: the load reached all three tablets", where);
	is_int(st.files, 6, "%s: one file per tablet and group", where);
	ok(st.cells > ROWS, "%s: %llu cells written", where,
	    (unsigned long long)st.cells);
	is_int(tmp_count(t), 0, "%s: the sorted runs are gone from tmp/",
	    where);
	same_as_model(t->s, where);
	text = read_text_str(t->s, "t", "r0050", NULL);
	ok(strstr(text, "a:x@7=loaded") != NULL, "%s: a loaded version "
	    "replaces the one of its timestamp written before", where);
	free(text);
	text = read_text_str(t->s, "t", "r0060", NULL);
	ok(strstr(text, "a:x@5=over the delete") != NULL &&
	    strstr(text, "a:x@3=old\n") == NULL, "%s: a loaded cell over an "
	    "older delete is visible, the deleted one is not", where);
	free(text);
	text = read_text_str(t->s, "t", "r0070", NULL);
	ok(strstr(text, "c:kept@9=pre") != NULL, "%s: cells written before "
	    "the load stay", where);
	free(text);
	/* A write after the load wins over the loaded version. */
	for (int i = 0; i < 2; i++)
		if (put_str(t->s, i == 0 ? "t" : "m", "r0050", "a", "x", 7,
		    "after") != 0)
			tap_bail("cannot write after the load");
	text = read_text_str(t->s, "t", "r0050", NULL);
	ok(strstr(text, "a:x@7=after") != NULL, "%s: a write after the "
	    "load wins over it", where);
	free(text);
	is_int(check_store(t->s), 0, "%s: check is clean after the load",
	    where);

	is_int(tstore_reopen(t), 0, "%s: close", where);
	same_as_model(t->s, "after a reopen");
	/* The load's sequence number stays given: a write after the reopen
	 * still wins over a loaded version. */
	for (int i = 0; i < 2; i++)
		if (put_str(t->s, i == 0 ? "t" : "m", "r0060", "a", "x", 5,
		    "after the reopen") != 0)
			tap_bail("cannot write after the reopen");
	text = read_text_str(t->s, "t", "r0060", NULL);
	ok(strstr(text, "a:x@5=after the reopen") != NULL, "%s: a write "
	    "after a reopen wins over a loaded version", where);
	free(text);
	is_int(bt_store_compact(t->s, "t", true), 0, "%s: major compaction",
	    where);
	same_as_model(t->s, "after a major compaction");
	is_int(check_store(t->s), 0, "%s: check is clean after compaction",
	    where);
	is_int(tstore_reopen(t), 0, "%s: close again", where);
	same_as_model(t->s, "after compaction and a reopen");
}

/* Cells without a timestamp: one stamp for the load, above every stamp
 * given before, below every one given after. */
static void
test_stamp(struct tstore *t)
{
	struct bt_bulk_stats st = { 0 };
	struct bt_bulk *b;
	int64_t before = 0, after = 0;
	char *text, want[128];

	if (bt_mutate_row(t->s, "t", bts("s0"), &(struct bt_mutation){
	    BT_PUT, "a", bts("q"), BT_TS_SERVER, bts("v") }, 1, NULL,
	    &before) != 0 || bt_bulk_open(t->s, "t", NULL, &b) != 0)
		tap_bail("cannot start the stamp test");
	ok(bt_bulk_put(b, bts("s1"), "a", bts("q"), BT_TS_SERVER,
	    bts("one")) == 0 && bt_bulk_put(b, bts("s2"), "a", bts("q"),
	    BT_TS_SERVER, bts("two")) == 0, "puts without a timestamp");
	is_int(bt_bulk_commit(b, &st), 0, "commit");
	bt_bulk_close(b);
	ok(st.stamp > before, "the load's stamp is above the one before");
	snprintf(want, sizeof(want), "a:q@%" PRId64 "=one\n", st.stamp);
	text = read_text_str(t->s, "t", "s1", NULL);
	is_str(text, want, "a cell without a timestamp has the load's");
	free(text);
	snprintf(want, sizeof(want), "a:q@%" PRId64 "=two\n", st.stamp);
	text = read_text_str(t->s, "t", "s2", NULL);
	is_str(text, want, "every one has the same");
	free(text);
	if (bt_mutate_row(t->s, "t", bts("s3"), &(struct bt_mutation){
	    BT_PUT, "a", bts("q"), BT_TS_SERVER, bts("v") }, 1, NULL,
	    &after) != 0)
		tap_bail("cannot write after the stamp test");
	ok(after > st.stamp, "a stamp after the load is above it");
}

/*
 * A process killed right after a load's commit (every file operation of
 * its close failing, nothing lost that it wrote): the load is there after
 * the reopen, and its sequence number is still given, so that a write of
 * the same version after the reopen wins over the loaded one.
 */
static void
test_kill(struct tstore *t)
{
	static const enum env_fault_op kinds[] = {
		ENV_FAULT_APPEND, ENV_FAULT_SYNC, ENV_FAULT_OPEN,
		ENV_FAULT_RENAME,
	};
	struct bt_bulk *b;
	char *text;

	if (bt_bulk_open(t->s, "t", NULL, &b) != 0 ||
	    bt_bulk_put(b, bts("k1"), "a", bts("q"), 5, bts("loaded")) != 0 ||
	    bt_bulk_commit(b, NULL) != 0)
		tap_bail("cannot load before the kill");
	bt_bulk_close(b);
	for (size_t i = 0; i < 4; i++)
		env_fault_fail_after(t->env, kinds[i], 1, -EIO, true);
	(void)bt_store_close(t->s);
	t->s = NULL;
	for (size_t i = 0; i < 4; i++)
		env_fault_fail_after(t->env, kinds[i], 0, 0, false);
	if (bt_store_open(t->path, &t->opts, &t->s) != 0)
		tap_bail("cannot reopen after the kill");
	text = read_text_str(t->s, "t", "k1", NULL);
	is_str(text, "a:q@5=loaded\n", "a load survives a kill after its "
	    "commit");
	free(text);
	if (put_str(t->s, "t", "k1", "a", "q", 5, "after") != 0)
		tap_bail("cannot write after the kill");
	text = read_text_str(t->s, "t", "k1", NULL);
	is_str(text, "a:q@5=after\n", "a write after the reopen wins over "
	    "the loaded version (the load's number stayed given)");
	free(text);
}

/* Refused cells, an abandoned load, an empty one, an unknown table. */
static void
test_errors(struct tstore *t)
{
	struct bt_bulk_stats st = { 0 };
	struct bt_bulk *b;
	char big[70000], *text;

	is_int(bt_bulk_open(t->s, "nosuch", NULL, &b), -ENOENT,
	    "an unknown table is -ENOENT");
	if (bt_bulk_open(t->s, "t", NULL, &b) != 0)
		tap_bail("no load");
	is_int(bt_bulk_put(b, bts("e1"), "nofam", bts("q"), 1, bts("v")),
	    -ENOENT, "an unknown family is -ENOENT");
	is_int(bt_bulk_put(b, bts(""), "a", bts("q"), 1, bts("v")), -EINVAL,
	    "an empty row key is -EINVAL");
	memset(big, 'k', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	is_int(bt_bulk_put(b, bts(big), "a", bts("q"), 1, bts("v")), -EINVAL,
	    "a row key over 64 KiB is -EINVAL");
	is_int(bt_bulk_put(b, bts("e1"), "a", bts(big), 1, bts("v")), -EINVAL,
	    "a qualifier over 16 KiB is -EINVAL");
	is_int(bt_bulk_put(b, bts("e1"), "a", bts("q"), -5, bts("v")),
	    -EINVAL, "a negative timestamp is -EINVAL");
	is_int(bt_bulk_put(b, bts("e1"), "a", bts("q"), 1, bts("kept")), 0,
	    "the load goes on after a refused cell");
	is_int(bt_bulk_commit(b, &st), 0, "and commits");
	is_int(st.cells, 1, "with the one good cell");
	bt_bulk_close(b);
	text = read_text_str(t->s, "t", "e1", NULL);
	is_str(text, "a:q@1=kept\n", "the good cell is there");
	free(text);

	if (bt_bulk_open(t->s, "t", &(struct bt_bulk_options){ 64 }, &b) != 0)
		tap_bail("no load");
	for (int i = 0; i < 100; i++) {
		char row[16];

		snprintf(row, sizeof(row), "ab%03d", i);
		if (bt_bulk_put(b, bts(row), "a", bts("q"), 1, bts(row)) != 0)
			tap_bail("cannot put");
	}
	ok(tmp_count(t) > 0, "a gathering load has runs in tmp/");
	bt_bulk_close(b);
	is_int(tmp_count(t), 0, "an abandoned load leaves no run in tmp/");
	text = scan_keys(t->s, "t", &(struct bt_scan_options){
	    .prefix = bts("ab") });
	is_str(text, "", "and no cell of it is visible");
	free(text);

	if (bt_bulk_open(t->s, "t", NULL, &b) != 0)
		tap_bail("no load");
	is_int(bt_bulk_commit(b, &st), 0, "an empty load commits");
	is_int(st.cells + st.files + st.tablets, 0, "and writes nothing");
	bt_bulk_close(b);
	is_int(check_store(t->s), 0, "check is clean");
}

int
main(void)
{
	struct tstore t;
	bool cell;

	tstore_fault(&t, NULL);
	cell = t.env == NULL;
	test_load(&t, cell ? "cell" : "fault env");
	test_stamp(&t);
	if (!cell)
		test_kill(&t);
	test_errors(&t);
	if (tstore_cell_skip(&t, "of a kill and of posix needs an embedded "
	    "store"))
		return tap_done();
	tstore_destroy(&t);

	tstore_posix(&t, NULL);
	test_load(&t, "posix");
	tstore_destroy(&t);
	return tap_done();
}
