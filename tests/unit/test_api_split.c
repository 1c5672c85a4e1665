/*
 * test_api_split.c - tablets at scale through the public API: a table with
 * a small tablet_size splits into many tablets by itself, every cell reads
 * back, scans cross tablet boundaries in order with no row lost or
 * repeated, and all of it survives reopening; a forced split keeps its
 * boundary while tablets that shrink merge again; writers keep writing
 * while tablets split under them; and a crash at every step of flushes,
 * compactions, splits and merges (the fault env failing its Nth file
 * operation, then dropping what was not synced) loses no acknowledged
 * cell, duplicates none, and leaves no file that the catalog does not name.
 */
#include <pthread.h>

#include "api_util.h"

#define TABLET_SIZE	(48u << 10)
#define VALUE_SIZE	160

static const char *const fams[] = { "f" };

/* The value of row r, version v: pseudo-random hex, compressible to about
 * half, as the paper's benchmarks write. */
static void
value_of(int r, int v, char *buf)
{
	uint64_t x = (uint64_t)r * 0x9e3779b97f4a7c15ull + (uint64_t)v + 1;

	for (int i = 0; i < VALUE_SIZE; i++)
		buf[i] = "0123456789abcdef"[tap_rand(&x) & 15];
	buf[VALUE_SIZE] = '\0';
}

static void
row_of(int r, char *buf, size_t size)
{
	snprintf(buf, size, "row%06d", r);
}

/* A table "t" whose one group uses 2 KiB blocks, so tablets of a few tens
 * of KiB have enough blocks to split in the middle. */
static void
table_make(struct bt_store *s, const struct bt_bytes *splits, size_t nsplits)
{
	struct bt_family_spec f = { fams[0], NULL, "maxversions=1" };
	struct bt_group_spec g = { "default", 2048, -1, -1, -1 };
	int rc;

	if ((rc = bt_table_create(s, "t", &f, 1, splits, nsplits,
	    TABLET_SIZE)) != 0 || (rc = bt_group_set(s, "t", &g)) != 0) {
		diag("table: %s (%s)", bt_strerror(rc), bt_error_detail());
		tap_bail("cannot create the table");
	}
}

static int
put_row(struct bt_store *s, int r, int v)
{
	char row[32], val[VALUE_SIZE + 1];

	row_of(r, row, sizeof(row));
	value_of(r, v, val);
	return put_str(s, "t", row, "f", "q", BT_TS_SERVER, val);
}

/* Whether row r holds exactly version v's value (v < 0: no cell). */
static bool
row_is(struct bt_store *s, int r, int v)
{
	char row[32], val[VALUE_SIZE + 1];
	struct bt_row *out = NULL;
	bool same;
	int rc;

	row_of(r, row, sizeof(row));
	rc = bt_read_row(s, "t", bts(row), NULL, &out);
	if (rc == 0 && v < 0)
		bt_row_free(out);
	if (v < 0)
		return rc == BT_NOTFOUND;
	if (rc != 0)
		return false;
	value_of(r, v, val);
	same = out->cell_count == 1 &&
	    bytes_eq(out->cells[0].value, bts(val));
	bt_row_free(out);
	return same;
}

/* Scan [start, end) and check it returns exactly the rows of want[]
 * (want[r] = version, or -1 for none), each once and in order. */
static bool
scan_matches(struct bt_store *s, const int *want, int nrows, int from,
    int to)
{
	struct bt_scan_options so = { 0 };
	struct bt_scan *sc;
	struct bt_row *row;
	char start[32], end[32], name[32];
	int r = from, rc;
	bool good = true;

	row_of(from, start, sizeof(start));
	row_of(to, end, sizeof(end));
	if (from > 0)
		so.start = bts(start);
	if (to < nrows)
		so.end = bts(end);
	if ((rc = bt_scan_open(s, "t", &so, &sc)) != 0) {
		diag("scan [%d, %d): open: %s", from, to, bt_strerror(rc));
		return false;
	}
	while (good && (rc = bt_scan_next(sc, &row)) == 0) {
		while (r < to && want[r] < 0)
			r++;
		row_of(r, name, sizeof(name));
		good = r < to && bytes_eq(row->key, bts(name));
		if (!good)
			diag("scan [%d, %d): got %.*s, want %s", from, to,
			    (int)row->key.size, (const char *)row->key.data,
			    r < to ? name : "the end");
		bt_row_free(row);
		r++;
	}
	while (good && r < to && want[r] < 0)
		r++;
	bt_scan_close(sc);
	if (good && rc != BT_DONE)
		diag("scan [%d, %d): at row %d: %s (%s)", from, to, r,
		    bt_strerror(rc), bt_error_detail());
	else if (good && r < to)
		diag("scan [%d, %d): ended before row %d", from, to, r);
	return good && rc == BT_DONE && r >= to;
}

/* The table's tablets tile the key space, in order. */
static bool
tablets_tile(struct bt_store *s, size_t *count)
{
	struct bt_tablet_info *tabs;
	size_t n;
	bool good;

	if (bt_table_tablets(s, "t", &tabs, &n) != 0)
		return false;
	good = n > 0 && tabs[0].start.size == 0 && tabs[n - 1].end.size == 0;
	for (size_t i = 0; i + 1 < n && good; i++)
		good = bytes_eq(tabs[i].end, tabs[i + 1].start);
	*count = n;
	bt_tablets_free(tabs);
	return good;
}

static void
check_store_clean(struct bt_store *s, const char *label)
{
	uint64_t files = 0;
	int rc = bt_store_check(s, NULL, NULL, NULL, &files, NULL);

	is_int(rc, 0, "%s: tabletctl check finds nothing wrong (%" PRIu64
	    " files)", label, files);
}

/* Every row reads back, whole-table and boundary scans are exact. */
static void
verify_all(struct bt_store *s, const int *want, int nrows, const char *label)
{
	struct bt_tablet_info *tabs;
	size_t n = 0;
	int bad = -1;
	bool scans = true;

	for (int r = 0; r < nrows && bad < 0; r++)
		if (!row_is(s, r, want[r]))
			bad = r;
	is_int(bad, -1, "%s: every row reads back its newest value", label);
	ok(scan_matches(s, want, nrows, 0, nrows),
	    "%s: a scan of the whole table returns every row once, in order",
	    label);
	/* Scans from each tablet boundary, just before it, and to it. */
	if (bt_table_tablets(s, "t", &tabs, &n) != 0)
		n = 0;
	for (size_t i = 1; i < n && scans; i++) {
		char start[32];
		int b;

		/* The key is not NUL-terminated. */
		snprintf(start, sizeof(start), "%.*s",
		    (int)tabs[i].start.size, (const char *)tabs[i].start.data);
		if (sscanf(start, "row%6d", &b) != 1)
			continue;
		scans = scan_matches(s, want, nrows, b, nrows) &&
		    scan_matches(s, want, nrows, b > 0 ? b - 1 : 0, b + 1) &&
		    scan_matches(s, want, nrows, 0, b);
	}
	if (n > 0)
		bt_tablets_free(tabs);
	ok(scans, "%s: scans starting and ending at every one of %zu tablet "
	    "boundaries are exact", label, n > 0 ? n - 1 : 0);
}

static void
test_split_by_size(void)
{
	struct bt_options opts = { .memtable_size = 32u << 10 };
	struct tstore t;
	struct bt_stats st;
	enum { NROWS = 4000 };
	int *want = calloc(NROWS, sizeof(*want));
	size_t before = 0, after = 0, before_reopen = 0;
	bool good;
	int rc = 0;

	tstore_posix(&t, &opts);
	table_make(t.s, NULL, 0);
	for (int r = 0; r < NROWS && rc == 0; r++)
		rc = put_row(t.s, (r * 7919) % NROWS, 0);
	is_int(rc, 0, "4,000 rows written in random order");
	is_int(bt_store_flush(t.s), 0, "flushed");
	is_int(bt_store_flush(t.s), 0, "and the splits that follow done");
	good = tablets_tile(t.s, &before);
	ok(good && before >= 8, "the table split by itself into %zu tablets (48 KiB each at "
	    "most) that tile its rows", before);
	bt_store_get_stats(t.s, &st);
	ok(st.splits >= before - 1 && st.tablets >= before,
	    "status counts %" PRIu64 " splits and %" PRIu64 " tablets",
	    st.splits, st.tablets);
	verify_all(t.s, want, NROWS, "after splits");

	/* Overwrite a third, delete a tenth: still exact after compaction. */
	for (int r = 0; r < NROWS && rc == 0; r += 3) {
		rc = put_row(t.s, r, 1);
		want[r] = 1;
	}
	for (int r = 5; r < NROWS && rc == 0; r += 10) {
		char row[32];

		row_of(r, row, sizeof(row));
		struct bt_mutation m = { .kind = BT_DELETE_ROW };

		rc = bt_mutate_row(t.s, "t", bts(row), &m, 1, NULL, NULL);
		want[r] = -1;
	}
	is_int(rc, 0, "overwrites and row deletes across tablets");
	verify_all(t.s, want, NROWS, "with overwrites in memtables");
	is_int(bt_store_compact(t.s, "t", true), 0, "major compaction of "
	    "every tablet");
	verify_all(t.s, want, NROWS, "after compaction");
	check_store_clean(t.s, "after compaction");

	tablets_tile(t.s, &before_reopen);
	is_int(tstore_reopen(&t), 0, "closed cleanly");
	good = tablets_tile(t.s, &after);
	ok(good && after == before_reopen, "reopened with its %zu tablets",
	    after);
	verify_all(t.s, want, NROWS, "after reopening");
	check_store_clean(t.s, "after reopening");
	tstore_destroy(&t);
	free(want);
}

static void
test_forced_split_and_merge(void)
{
	struct bt_options opts = { .memtable_size = 32u << 10 };
	struct bt_bytes pre = bts("row001000");
	struct tstore t;
	struct bt_stats st;
	enum { NROWS = 3000 };
	int *want = calloc(NROWS, sizeof(*want));
	size_t n = 0, grown = 0;
	bool good;
	int rc = 0;

	tstore_posix(&t, &opts);
	table_make(t.s, &pre, 1);
	ok(tablets_tile(t.s, &n) && n == 2, "created with one split row: "
	    "2 tablets");
	is_int(bt_table_split(t.s, "t", bts("row002000")), 0,
	    "a forced split of an empty tablet");
	is_int(bt_table_split(t.s, "t", bts("row002000")), -EEXIST,
	    "splitting again at a boundary is -EEXIST");
	is_int(bt_table_split(t.s, "t", bts("")), -EINVAL,
	    "an empty split row is -EINVAL");
	is_int(bt_table_split(t.s, "nosuch", bts("a")), -ENOENT,
	    "a split of an unknown table is -ENOENT");
	for (int r = 0; r < NROWS && rc == 0; r++)
		rc = put_row(t.s, r, 0);
	is_int(rc, 0, "3,000 rows written in order");
	bt_store_flush(t.s);
	bt_store_flush(t.s);
	good = tablets_tile(t.s, &grown);
	ok(good && grown > 3, "%zu tablets after the fill", grown);
	is_int(bt_table_split(t.s, "t", bts("row000500x")), 0,
	    "a forced split inside a tablet holding data");
	verify_all(t.s, want, NROWS, "after the forced split");

	/* Delete all but every 50th row: the tablets shrink and merge. */
	for (int r = 0; r < NROWS && rc == 0; r++) {
		char row[32];
		struct bt_mutation m = { .kind = BT_DELETE_ROW };

		if (r % 50 == 0)
			continue;
		row_of(r, row, sizeof(row));
		rc = bt_mutate_row(t.s, "t", bts(row), &m, 1, NULL, NULL);
		want[r] = -1;
	}
	is_int(rc, 0, "most rows deleted");
	is_int(bt_store_compact(t.s, "t", true), 0, "major compaction");
	for (int i = 0; i < 3; i++)
		bt_store_flush(t.s);
	bt_store_get_stats(t.s, &st);
	good = tablets_tile(t.s, &n);
	ok(good && n < grown && st.merges > 0,
	    "shrunken tablets merged: %zu tablets from %zu (%" PRIu64
	    " merges)", n, grown, st.merges);
	{
		struct bt_tablet_info *tabs;
		size_t k;
		int kept = 0;

		if (bt_table_tablets(t.s, "t", &tabs, &k) == 0) {
			for (size_t i = 0; i < k; i++)
				kept += bytes_eq(tabs[i].start, pre) ||
				    bytes_eq(tabs[i].start,
				    bts("row002000")) ||
				    bytes_eq(tabs[i].start,
				    bts("row000500x"));
			bt_tablets_free(tabs);
		}
		is_int(kept, 3, "the rows given at create and to split "
		    "stay boundaries");
	}
	verify_all(t.s, want, NROWS, "after merges");
	check_store_clean(t.s, "after merges");
	is_int(tstore_reopen(&t), 0, "closed cleanly");
	verify_all(t.s, want, NROWS, "after merges and reopening");
	tstore_destroy(&t);
	free(want);
}

struct writer {
	struct bt_store *s;
	int first, count;
	int rc;
};

static void *
writer_main(void *arg)
{
	struct writer *w = arg;

	for (int v = 0; v < 2 && w->rc == 0; v++)
		for (int r = w->first; r < w->first + w->count && w->rc == 0;
		    r++)
			w->rc = put_row(w->s, r, v);
	return NULL;
}

static void
test_writes_during_splits(uint64_t seed)
{
	struct bt_options opts = { .memtable_size = 16u << 10 };
	struct tstore t;
	struct writer w[2];
	pthread_t th[2];
	enum { NROWS = 3000 };
	int *want = calloc(NROWS, sizeof(*want));
	uint64_t rng = seed;
	int forced = 0;

	tstore_posix(&t, &opts);
	table_make(t.s, NULL, 0);
	for (int i = 0; i < 2; i++) {
		w[i] = (struct writer){ t.s, i * NROWS / 2, NROWS / 2, 0 };
		pthread_create(&th[i], NULL, writer_main, &w[i]);
	}
	/* Force splits at random rows while the writers run. */
	for (int i = 0; i < 30; i++) {
		char row[32];

		row_of((int)(tap_rand(&rng) % NROWS), row, sizeof(row));
		strcat(row, "m");
		forced += bt_table_split(t.s, "t", bts(row)) == 0;
	}
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	ok(w[0].rc == 0 && w[1].rc == 0, "two writers wrote 6,000 cells "
	    "while %d forced splits and the background ones ran", forced);
	for (int r = 0; r < NROWS; r++)
		want[r] = 1;
	verify_all(t.s, want, NROWS, "after concurrent writes and splits");
	is_int(tstore_reopen(&t), 0, "closed cleanly");
	verify_all(t.s, want, NROWS, "reopened");
	check_store_clean(t.s, "reopened");
	tstore_destroy(&t);
	free(want);
}

/*
 * Crash after the Nth operation of one kind, for many N: a workload that
 * flushes, compacts, splits and merges with every write synced.  After
 * the crash every acknowledged write is there, exactly once, the store
 * checks clean (no file the catalog does not name, none missing), and it
 * takes writes again.  48 rounds; 24 under TEST_SMALL (scripts/check
 * under the sanitizers and valgrind), each of the four kinds still
 * crashing both splits and merges.
 */
static void
test_crash_at_every_step(uint64_t seed)
{
	static const enum env_fault_op ops[] = {
		ENV_FAULT_APPEND, ENV_FAULT_SYNC, ENV_FAULT_OPEN,
		ENV_FAULT_RENAME,
	};
	enum { NROWS = 600 };
	uint64_t rng = seed;
	int rounds = 0, bad_rounds = 0, unclean = 0;
	uint64_t splits = 0, merges = 0;
	struct bt_stats st;
	const char *small = getenv("TEST_SMALL");
	int nrounds = small != NULL && *small != '\0' ? 24 : 48;

	for (int round = 0; round < nrounds; round++) {
		struct bt_options opts = { .memtable_size = 8u << 10,
		    .sync_always = true };
		int want[NROWS], rc = 0, failed_row = -1, failed_v = 0;
		enum env_fault_op op = ops[round % 4];
		long n = 1 + (long)(tap_rand(&rng) % 60);
		struct tstore t;
		bool good = true;

		tstore_fault(&t, &opts);
		if (tstore_cell_skip(&t, "injects faults into the store's "
		    "files"))
			return;
		table_make(t.s, NULL, 0);
		for (int r = 0; r < NROWS; r++)
			want[r] = -1;
		/* Some data first, so the crash can hit splits of it. */
		for (int r = 0; r < NROWS / 2 && rc == 0; r++)
			if ((rc = put_row(t.s, r, 0)) == 0)
				want[r] = 0;
		if (round % 2 == 1) {
			/* Split first; the crash then hits the merges that
			 * follow deleting most rows. */
			bt_store_flush(t.s);
			env_fault_fail_after(t.env, op, n, -EIO, true);
			for (int r = 0; r < NROWS / 2 && rc == 0; r++) {
				struct bt_mutation m = {
					.kind = BT_DELETE_ROW };
				char row[32];

				if (r % 10 == 0)
					continue;
				row_of(r, row, sizeof(row));
				if ((rc = bt_mutate_row(t.s, "t", bts(row),
				    &m, 1, NULL, NULL)) == 0)
					want[r] = -1;
				else
					failed_row = r, failed_v = -1;
			}
			if (rc == 0)
				bt_store_compact(t.s, "t", true);
			if (rc == 0)
				bt_store_flush(t.s);
		} else {
			env_fault_fail_after(t.env, op, n, -EIO, true);
		}
		for (int r = NROWS / 2; r < NROWS && rc == 0; r++)
			if ((rc = put_row(t.s, r, 0)) == 0)
				want[r] = 0;
			else
				failed_row = r, failed_v = 0;
		for (int r = 0; r < NROWS && rc == 0; r += 2)
			if ((rc = put_row(t.s, r, 1)) == 0)
				want[r] = 1;
			else
				failed_row = r, failed_v = 1;
		if (rc == 0)
			bt_store_flush(t.s);
		bt_store_get_stats(t.s, &st);
		splits += st.splits;
		merges += st.merges;
		/* The crash: nothing more reaches the disk. */
		for (size_t k = 0; k < 4; k++)
			env_fault_fail_after(t.env, ops[k], 1, -EIO, true);
		bt_store_close(t.s);
		t.s = NULL;
		env_fault_drop_unsynced(t.env);
		for (size_t k = 0; k < 4; k++)
			env_fault_fail_after(t.env, ops[k], 0, 0, false);
		if ((rc = bt_store_open(t.path, &t.opts, &t.s)) != 0) {
			diag("round %d: reopen: %s (%s)", round,
			    bt_strerror(rc), bt_error_detail());
			bad_rounds++;
			tstore_destroy(&t);
			continue;
		}
		/* The write that failed may be there or not, whole. */
		if (failed_row >= 0 && row_is(t.s, failed_row, failed_v))
			want[failed_row] = failed_v;
		for (int r = 0; r < NROWS && good; r++) {
			good = row_is(t.s, r, want[r]);
			if (!good)
				diag("round %d (op %d fails from call %ld): "
				    "row %d is not version %d", round,
				    (int)op, n, r, want[r]);
		}
		good = good && scan_matches(t.s, want, NROWS, 0, NROWS);
		if (bt_store_check(t.s, NULL, NULL, NULL, NULL, NULL) != 0) {
			diag("round %d (op %d fails from call %ld): check "
			    "reports problems", round, (int)op, n);
			unclean++;
		}
		if (put_row(t.s, 0, 2) != 0 || !row_is(t.s, 0, 2))
			good = false;
		bad_rounds += !good;
		rounds++;
		tstore_destroy(&t);
	}
	is_int(bad_rounds, 0, "%d crash rounds at random steps of flushes, "
	    "compactions, splits and merges: no acknowledged cell lost or "
	    "changed, and the store takes writes again", rounds);
	ok(splits > 0 && merges > 0, "the rounds split %" PRIu64 " and "
	    "merged %" PRIu64 " tablets before their crashes", splits,
	    merges);
	is_int(unclean, 0, "after each crash, check finds every named file "
	    "and none that is unnamed");
}

/* The API's location cache: repeated lookups hit it, a split makes the
 * cached tablet stale, and the next call walks again and is right. */
static void
test_location_cache(void)
{
	struct tstore t;
	struct bt_stats a, b, c;
	int rc = 0;

	tstore_posix(&t, NULL);
	if (tstore_cell_skip(&t, "counts the location cache, which a cell's "
	    "client does not keep yet"))
		return;
	table_make(t.s, NULL, 0);
	for (int r = 0; r < 100 && rc == 0; r++)
		rc = put_row(t.s, r, 0);
	bt_store_get_stats(t.s, &a);
	ok(rc == 0 && a.location_lookups >= 100 && a.location_hits >= 99 &&
	    a.location_levels == 3, "100 writes: %" PRIu64 " lookups, %"
	    PRIu64 " cache hits, %" PRIu64 " levels walked once",
	    a.location_lookups, a.location_hits, a.location_levels);
	is_int(bt_table_split(t.s, "t", bts("row000050")), 0, "split at "
	    "row000050");
	ok(row_is(t.s, 70, 0) && row_is(t.s, 20, 0), "rows on both sides "
	    "read right through stale cache entries");
	bt_store_get_stats(t.s, &b);
	ok(b.location_stale >= 1 && b.location_levels >= a.location_levels + 3,
	    "the stale entry was found and the hierarchy walked again (%"
	    PRIu64 " stale, %" PRIu64 " levels)", b.location_stale,
	    b.location_levels);
	ok(row_is(t.s, 71, 0) && row_is(t.s, 21, 0), "and read again");
	bt_store_get_stats(t.s, &c);
	is_int(c.location_levels, b.location_levels, "the next reads hit the "
	    "cache without walking");
	tstore_destroy(&t);
}

int
main(void)
{
	uint64_t seed = tap_seed();

	test_location_cache();
	test_split_by_size();
	test_forced_split_and_merge();
	test_writes_during_splits(seed);
	test_crash_at_every_step(seed);
	return tap_done();
}
