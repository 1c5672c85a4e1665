/*
 * test_location.c - the three-level location hierarchy in the catalog:
 * a table of 5,001 tablets whose METADATA tablets split many times; the
 * walk (and each level alone) finds the right tablet for the first and
 * last rows of every tablet, its boundary rows and the rows just before
 * them, the empty-start and open-end tablets; splits and merges through
 * catalog_tablet_replace, across METADATA boundaries too, keep the
 * hierarchy consistent; a client cache detects its stale entries and
 * recovers by walking again; assignment; table drop and a reused table
 * id; crashes in the middle of a tablet replacement, a METADATA split and
 * an upgrade leave the old or the new hierarchy, whole; a version-1
 * catalog and a version-1 store upgrade and keep working.  Prints the
 * timings of walks and cache hits (TEST_LOOKUPS=N sets how many).
 * TEST_SMALL=1 (scripts/check under the sanitizers and valgrind) makes a
 * quarter of the random splits and merges, and crashes at the first five
 * points of each sweep and then at steps growing by half.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sqlite3.h>
#include <time.h>
#include <unistd.h>

#include "api/location_cache.h"
#include "catalog/catalog.h"
#include "catalog/format.h"
#include "catalog/sqlite_env.h"
#include "util/alloc.h"
#include "util/env.h"
#include "util/error.h"
#include "api_util.h"
#include "catalog_util.h"

#define BIG_SPLITS 5000
#define BIG_ROWS_PER_META 64

static char dir[128];
static struct env *env;

/* ---- Helpers ---- */

static bool
small_run(void)
{
	const char *e = getenv("TEST_SMALL");

	return e != NULL && *e != '\0';
}

/* The next crash point of a sweep after k. */
static long
next_crash_point(long k)
{
	return small_run() && k >= 5 ? k + k / 2 : k + 1;
}

static void
report_diag(void *arg, const char *problem)
{
	int *n = arg;

	if ((*n)++ < 10)
		diag("check: %s", problem);
}

/* Run catalog_location_check and assert it finds nothing. */
static void
check_clean(struct catalog *c, const char *what)
{
	int shown = 0;
	int rc = catalog_location_check(c, report_diag, &shown);

	is_int(rc, 0, "the hierarchy is consistent %s", what);
}

static uint64_t
table_id_of(struct catalog *c, const char *name)
{
	struct catalog_table *t;
	uint64_t id;

	if (catalog_table_get(c, name, &t) != 0)
		return 0;
	id = t->id;
	catalog_table_free(t);
	return id;
}

static size_t
meta_tablet_count(struct catalog *c)
{
	struct catalog_meta_tablet *m;
	size_t n;

	if (catalog_meta_tablets_list(c, &m, &n) != 0)
		return 0;
	catalog_meta_tablets_free(m, n);
	return n - 1;	/* without the root */
}

/* The tablet a walk finds for (table, row): its id, 0 for BT_NOTFOUND,
 * UINT64_MAX for an error. *levels gets the levels walked. */
static uint64_t
walk_id(struct catalog *c, uint64_t table, struct slice row, int *levels)
{
	struct catalog_location loc;
	uint64_t id;
	int rc;

	catalog_location_init(&loc);
	rc = catalog_location_walk(c, table, row, &loc, levels);
	id = rc == 0 ? loc.tablet_id : rc == BT_NOTFOUND ? 0 : UINT64_MAX;
	if (rc < 0)
		diag("walk: %s: %s", bt_strerror(rc), bt_error_detail());
	catalog_location_release(&loc);
	return id;
}

/* A row just below end and not below start, into out; false if none of
 * the shapes tried fits. */
static bool
row_before(struct buf *out, struct slice start, struct slice end)
{
	uint8_t tail[] = { 0xff, 0xff, 0xff };

	buf_clear(out);
	if (end.n == 0)
		return false;
	if (end.p[end.n - 1] > 0) {
		buf_append(out, end.p, end.n - 1);
		buf_append(out, (uint8_t[]){ end.p[end.n - 1] - 1 }, 1);
		buf_append(out, tail, sizeof(tail));
	} else {
		buf_append(out, end.p, end.n - 1);
	}
	return slice_compare(buf_slice(out), start) >= 0;
}

/*
 * Probe every tablet of table: its first row, the row after it, the row
 * just before its end (its last row, one below the next boundary) and, for
 * the open-end tablet, rows past every split.  Each walk must find the
 * tablet and walk three levels.  Returns the rows probed.
 */
static size_t
verify_table(struct catalog *c, uint64_t table, const char *what)
{
	struct catalog_tablet *t;
	struct buf rows[4];
	size_t n, probes = 0, wrong = 0, bad_levels = 0;
	int levels;

	if (catalog_tablets_list(c, table, &t, &n) != 0) {
		ok(false, "list the tablets %s", what);
		return 0;
	}
	for (int j = 0; j < 4; j++)
		buf_init(&rows[j]);
	for (size_t i = 0; i < n; i++) {
		struct slice s = buf_slice(&t[i].start), e = buf_slice(&t[i].end);
		size_t k = 0;

		buf_set(&rows[k++], s.p, s.n);
		buf_set(&rows[k], s.p, s.n);
		buf_append(&rows[k], "", 1);
		if (e.n == 0 || slice_compare(buf_slice(&rows[k]), e) < 0)
			k++;
		if (row_before(&rows[k], s, e))
			k++;
		if (e.n == 0)
			buf_set(&rows[k++], "\xff\xff\xff\xff\xff", 5);
		for (size_t j = 0; j < k; j++) {
			uint64_t got = walk_id(c, table, buf_slice(&rows[j]),
			    &levels);

			probes++;
			wrong += got != t[i].id;
			bad_levels += levels != 3;
			if (got != t[i].id && wrong < 5)
				diag("row %zu of tablet %" PRIu64 " found %"
				    PRIu64, j, t[i].id, got);
		}
	}
	is_int(wrong, 0, "%zu walks over %zu tablets find the right tablet %s",
	    probes, n, what);
	is_int(bad_levels, 0, "and each walks three levels");
	for (int j = 0; j < 4; j++)
		buf_release(&rows[j]);
	catalog_tablets_free(t, n);
	return probes;
}

static bool
buf_is_str(const struct buf *b, const char *s)
{
	return slice_equal(buf_slice(b), slice_str(s));
}

static struct catalog *
open_or_bail(struct env *e, const char *path)
{
	struct catalog *c = NULL;
	int rc = catalog_open(e, path, &c);

	if (rc != 0) {
		diag("catalog_open %s: %s: %s", path, bt_strerror(rc),
		    bt_error_detail());
		tap_bail("cannot open a catalog");
	}
	return c;
}

static double
now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- The big table ---- */

static struct slice *
big_splits(char (*keys)[16])
{
	struct slice *s = xmalloc(BIG_SPLITS * sizeof(*s));

	for (int i = 0; i < BIG_SPLITS; i++) {
		snprintf(keys[i], 16, "u%06d", (i + 1) * 10);
		s[i] = slice_str(keys[i]);
	}
	return s;
}

static void
test_big_table(struct catalog *c, uint64_t *big)
{
	static char keys[BIG_SPLITS][16];
	struct slice *splits = big_splits(keys);
	struct catalog_location loc;
	uint64_t root = 0, meta = 0, small;
	double t0;
	int rc;

	is_int(catalog_meta_set(c, CATALOG_META_METADATA_ROWS,
	    BIG_ROWS_PER_META), 0, "METADATA tablets hold at most %d rows",
	    BIG_ROWS_PER_META);
	is_int(catalog_table_create(c, "small", 0, NULL, 0, NULL, 0, NULL, 0,
	    &small, NULL), 0, "a table of one tablet");
	t0 = now_seconds();
	rc = catalog_table_create(c, "big", 0, NULL, 0, NULL, 0, splits,
	    BIG_SPLITS, big, NULL);
	is_int(rc, 0, "a table with %d split rows (%s)", BIG_SPLITS,
	    bt_error_detail());
	diag("creating %d tablets took %.3f s", BIG_SPLITS + 1,
	    now_seconds() - t0);
	free(splits);
	ok(meta_tablet_count(c) > (BIG_SPLITS + 2) / BIG_ROWS_PER_META,
	    "the METADATA tablets split many times (%zu of them)",
	    meta_tablet_count(c));
	check_clean(c, "after the create");
	verify_table(c, *big, "in the big table");
	verify_table(c, small, "in the one-tablet table");

	/* One level at a time, as a client that counts them. */
	catalog_location_init(&loc);
	is_int(catalog_location_root(c, &root), 0, "level 0 names the root");
	is_int(catalog_location_metadata(c, root, *big, slice_str("u012345"),
	    &meta), 0, "level 1 names a METADATA tablet");
	is_int(catalog_location_find(c, meta, *big, slice_str("u012345"), &loc),
	    0, "level 2 finds the location");
	ok(buf_is_str(&loc.start, "u012340") && buf_is_str(&loc.end, "u012350")
	    && loc.table_id == *big && loc.meta_tablet_id == meta,
	    "of the tablet [u012340, u012350)");
	is_int(catalog_location_find(c, meta, *big, slice_str("u049999"), &loc),
	    BT_STALE, "a METADATA tablet asked for a key it does not cover "
	    "says BT_STALE");
	is_int(catalog_location_find(c, meta + 100000, *big,
	    slice_str("u012345"), &loc), BT_STALE,
	    "so does a METADATA tablet that does not exist");
	is_int(catalog_location_metadata(c, root + 100000, *big,
	    slice_str("u012345"), &meta), BT_STALE,
	    "and a root that is not the root");
	is_int(catalog_location_find(c, root, *big, slice_str("u012345"), &loc),
	    BT_STALE, "the root tablet is not a METADATA tablet");
	is_int(walk_id(c, *big + 1000, slice_str("a"), NULL), 0,
	    "a walk in a table that does not exist is BT_NOTFOUND");
	catalog_location_release(&loc);
}

/* Time walks and cache hits over random rows of the big table. */
static void
test_timings(struct catalog *c, uint64_t big)
{
	const char *env_n = getenv("TEST_LOOKUPS");
	long lookups = env_n != NULL ? atol(env_n) : 20000;
	struct location_cache *lc;
	struct location_cache_stats st;
	struct catalog_location loc;
	uint64_t seed = 42, id, sum = 0;
	double t0, walk_s, hit_s, levels_s;
	char row[16];
	int levels, rc;

	if (lookups <= 0)
		lookups = 1;
	if (location_cache_new(0, &lc) != 0)
		tap_bail("location_cache_new");
	catalog_location_init(&loc);
	t0 = now_seconds();
	for (long i = 0; i < lookups; i++) {
		snprintf(row, sizeof(row), "u%06u",
		    (unsigned)(tap_rand(&seed) % 50020));
		if (catalog_location_walk(c, big, slice_str(row), &loc,
		    &levels) != 0)
			tap_bail("walk failed");
		location_cache_add_levels(lc, (unsigned)levels);
		location_cache_insert(lc, big, buf_slice(&loc.start),
		    buf_slice(&loc.end), loc.tablet_id);
	}
	walk_s = now_seconds() - t0;
	seed = 42;
	t0 = now_seconds();
	for (long i = 0; i < lookups; i++) {
		snprintf(row, sizeof(row), "u%06u",
		    (unsigned)(tap_rand(&seed) % 50020));
		rc = location_cache_lookup(lc, big, slice_str(row), &id);
		sum += rc == 0 ? id : 0;
	}
	hit_s = now_seconds() - t0;
	/* The same walk as three calls, one per level, as a client that
	 * caches the upper levels makes them. */
	seed = 42;
	t0 = now_seconds();
	for (long i = 0; i < lookups; i++) {
		uint64_t root, meta;

		snprintf(row, sizeof(row), "u%06u",
		    (unsigned)(tap_rand(&seed) % 50020));
		if (catalog_location_root(c, &root) != 0 ||
		    catalog_location_metadata(c, root, big, slice_str(row),
		    &meta) != 0 || catalog_location_find(c, meta, big,
		    slice_str(row), &loc) != 0)
			tap_bail("a level failed");
	}
	levels_s = now_seconds() - t0;
	location_cache_get_stats(lc, &st);
	is_int(st.hits, lookups, "the same rows again all hit the cache");
	is_int(st.levels_walked, 3 * lookups, "the walks counted 3 levels each");
	diag("timing: %ld walks (3 levels) over %d tablets: %.3f s, %.2f us "
	    "each", lookups, BIG_SPLITS + 1, walk_s, walk_s * 1e6 /
	    (double)lookups);
	diag("timing: %ld walks as three calls (one per level, each checked "
	    "for staleness): %.3f s, %.2f us each", lookups, levels_s,
	    levels_s * 1e6 / (double)lookups);
	diag("timing: %ld cache hits: %.4f s, %.3f us each (%" PRIu64 ")",
	    lookups, hit_s, hit_s * 1e6 / (double)lookups, sum % 7);
	catalog_location_release(&loc);
	location_cache_free(lc);
}

/* ---- Splits and merges ---- */

/* A row strictly inside [start, end), into out; false if none tried fits. */
static bool
mid_row(struct buf *out, struct slice start, struct slice end)
{
	static const uint8_t tails[] = { 'm', 0x80, 0x01, 0x00 };

	for (size_t i = 0; i < sizeof(tails); i++) {
		buf_set(out, start.p, start.n);
		buf_append(out, &tails[i], 1);
		if (end.n == 0 || slice_compare(buf_slice(out), end) < 0)
			return true;
	}
	return false;
}

static int
split_tablet(struct catalog *c, const struct catalog_tablet *t,
    const struct catalog_file *files, size_t file_count, const char *server,
    uint64_t ids[2])
{
	struct catalog_tablet_spec specs[2];
	struct buf mid;
	int rc;

	buf_init(&mid);
	if (!mid_row(&mid, buf_slice(&t->start), buf_slice(&t->end))) {
		buf_release(&mid);
		return 1;
	}
	memset(specs, 0, sizeof(specs));
	specs[0].start = buf_slice(&t->start);
	specs[0].end = buf_slice(&mid);
	specs[1].start = buf_slice(&mid);
	specs[1].end = buf_slice(&t->end);
	for (int i = 0; i < 2; i++) {
		specs[i].flushed_seq = t->flushed_seq;
		specs[i].files = files;
		specs[i].file_count = file_count;
		specs[i].server = server;
	}
	rc = catalog_tablet_replace(c, &t->id, 1, specs, 2, ids, NULL);
	buf_release(&mid);
	return rc;
}

static int
merge_tablets(struct catalog *c, const struct catalog_tablet *a,
    const struct catalog_tablet *b, uint64_t *id)
{
	struct catalog_tablet_spec spec;
	uint64_t old[2] = { b->id, a->id };	/* any order */

	memset(&spec, 0, sizeof(spec));
	spec.start = buf_slice(&a->start);
	spec.end = buf_slice(&b->end);
	spec.flushed_seq = a->flushed_seq < b->flushed_seq ? a->flushed_seq :
	    b->flushed_seq;
	return catalog_tablet_replace(c, old, 2, &spec, 1, id, NULL);
}

static struct catalog_file
file_row(uint64_t number)
{
	struct catalog_file f;

	memset(&f, 0, sizeof(f));
	f.number = number;
	snprintf(f.group, sizeof(f.group), "default");
	f.size = 1000;
	f.entry_count = 10;
	f.max_seq = number;
	return f;
}

/* The index of the tablet whose end is a METADATA tablet's end, so that
 * merging it with the next crosses a METADATA boundary; n if none. */
static size_t
tablet_at_meta_end(struct catalog *c, const struct catalog_tablet *t,
    size_t n)
{
	struct catalog_meta_tablet *m;
	size_t mn, found = n;

	if (catalog_meta_tablets_list(c, &m, &mn) != 0)
		return n;
	for (size_t j = 1; j < mn && found == n; j++)
		for (size_t i = 0; i + 1 < n && found == n; i++)
			if (m[j].end_table == t[i].table_id && !m[j].end_last &&
			    slice_equal(buf_slice(&m[j].end_row),
			    buf_slice(&t[i].end)))
				found = i;
	catalog_meta_tablets_free(m, mn);
	return found;
}

/* A replacement's prepare that notes what it was given and returns rc. */
struct replace_probe {
	int rc;
	int calls;
	size_t count;
	uint64_t id;
};

static int
replace_probe_run(void *arg, const uint64_t *ids, size_t count)
{
	struct replace_probe *p = arg;

	p->calls++;
	p->count = count;
	p->id = count > 0 ? ids[0] : 0;
	return p->rc;
}

static void
test_split_merge(struct catalog *c, uint64_t big)
{
	struct replace_probe probe = { 0 };
	struct catalog_replace_prepare prep = { replace_probe_run, &probe };
	struct catalog_tablet *t, *t2;
	struct catalog_file f[2] = { file_row(900001), file_row(900002) };
	struct catalog_file *files, bad_file;
	struct catalog_tablet_spec spec;
	uint64_t ids[2] = { 0, 0 }, id = 0, small = table_id_of(c, "small");
	size_t n, n2, fn, i;
	int rc;

	if (catalog_tablets_list(c, big, &t, &n) != 0)
		tap_bail("list the big table");
	t[100].flushed_seq = 55;
	rc = split_tablet(c, &t[100], f, 2, "ts1", ids);
	is_int(rc, 0, "split a tablet into two (%s)", bt_error_detail());
	ok(ids[0] != 0 && ids[1] != 0 && ids[0] != ids[1],
	    "the children have new ids");
	if (catalog_files_list(c, ids[1], &files, &fn) == 0) {
		ok(fn == 2 && files[0].number == 900002 &&
		    files[1].number == 900001, "a child names the files it was "
		    "given");
		bt_free(files);
	}
	is_int(walk_id(c, big, buf_slice(&t[100].start), NULL), ids[0],
	    "the parent's first row is in the left child");
	is_int(walk_id(c, big, slice_str("u001000m"), NULL), ids[1],
	    "the split row is in the right child");
	is_int(catalog_files_list(c, t[100].id, &files, &fn), BT_NOTFOUND,
	    "the parent is gone");
	check_clean(c, "after a split");

	/* A merge across a METADATA boundary moves the boundary. */
	catalog_tablets_free(t, n);
	if (catalog_tablets_list(c, big, &t, &n) != 0)
		tap_bail("list the big table");
	i = tablet_at_meta_end(c, t, n);
	ok(i < n, "a tablet ends where a METADATA tablet ends (%zu)", i);
	if (i < n) {
		is_int(merge_tablets(c, &t[i], &t[i + 1], &id), 0,
		    "merge it with the next, across the METADATA boundary");
		check_clean(c, "after a merge across a METADATA boundary");
		is_int(walk_id(c, big, buf_slice(&t[i].start), NULL), id,
		    "the first row of the merged tablet finds it");
		is_int(walk_id(c, big, buf_slice(&t[i + 1].start), NULL), id,
		    "the old boundary row finds it too");
	}

	/* Refusals change nothing. */
	catalog_tablets_free(t, n);
	if (catalog_tablets_list(c, big, &t, &n) != 0)
		tap_bail("list the big table");
	memset(&spec, 0, sizeof(spec));
	spec.start = buf_slice(&t[10].start);
	spec.end = buf_slice(&t[12].end);
	is_int(catalog_tablet_replace(c, (uint64_t[]){ t[10].id, t[12].id }, 2,
	    &spec, 1, &id, NULL), -EINVAL, "tablets that are not adjacent are "
	    "-EINVAL");
	spec.end = buf_slice(&t[11].end);
	is_int(catalog_tablet_replace(c, &t[10].id, 1, &spec, 1, &id, NULL),
	    -EINVAL, "specs that cover more than the old range are -EINVAL");
	spec.end = buf_slice(&t[10].end);
	spec.start = buf_slice(&t[10].end);
	is_int(catalog_tablet_replace(c, &t[10].id, 1, &spec, 1, &id, NULL),
	    -EINVAL, "specs that cover less are -EINVAL");
	spec.start = buf_slice(&t[10].start);
	is_int(catalog_tablet_replace(c, (uint64_t[]){ 999999999 }, 1, &spec, 1,
	    &id, NULL), -ENOENT, "a missing tablet is -ENOENT");
	spec.end = buf_slice(&t[10].end);
	bad_file = file_row(5);
	snprintf(bad_file.group, sizeof(bad_file.group), "nosuchgroup");
	spec.files = &bad_file;
	spec.file_count = 1;
	is_int(catalog_tablet_replace(c, &t[10].id, 1, &spec, 1, &id, NULL),
	    -ENOENT, "a file in a missing group fails the whole replacement");
	spec.files = NULL;
	spec.file_count = 0;
	is_int(catalog_tablet_replace(c, (uint64_t[]){ t[n - 1].id,
	    999999998 }, 2, &spec, 1, &id, NULL), -ENOENT,
	    "an id of no tablet among others is -ENOENT");
	if (catalog_tablets_list(c, small, &t2, &n2) == 0) {
		is_int(catalog_tablet_replace(c, (uint64_t[]){ t[n - 1].id,
		    t2[0].id }, 2, &spec, 1, &id, NULL), -EINVAL,
		    "tablets of two tables are -EINVAL");
		catalog_tablets_free(t2, n2);
	}
	probe.rc = -ENOSPC;
	is_int(catalog_tablet_replace(c, &t[10].id, 1, &spec, 1, &id, &prep),
	    -ENOSPC, "a prepare's failure is the replacement's, which rolls "
	    "back");
	ok(probe.calls == 1 && probe.count == 1 && probe.id != 0 &&
	    probe.id != t[10].id, "the prepare ran once, inside the "
	    "transaction, with the new tablet's id (%" PRIu64 ")", probe.id);
	if (catalog_tablets_list(c, big, &t2, &n2) == 0) {
		is_int(n2, n, "the refusals left the tablets as they were");
		ok(n2 > 10 && t2[10].id == t[10].id, "the one whose prepare "
		    "failed among them");
		catalog_tablets_free(t2, n2);
	}
	check_clean(c, "after the refusals");

	probe = (struct replace_probe){ 0 };
	is_int(catalog_tablet_replace(c, &t[10].id, 1, &spec, 1, &id, &prep),
	    0, "with a prepare that succeeds the replacement commits");
	ok(probe.calls == 1 && probe.id == id, "the prepare saw the id the "
	    "replacement returned (%" PRIu64 ")", id);
	is_int(walk_id(c, big, buf_slice(&t[10].start), NULL), id,
	    "the replaced range is served by the new tablet");
	check_clean(c, "after a prepared replacement");
	catalog_tablets_free(t, n);
}

/* The "server" side of the stale-entry test: whether tablet id exists and
 * holds row. */
static bool
tablet_serves(const struct catalog_tablet *t, size_t n, uint64_t id,
    struct slice row)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].id == id)
			return slice_compare(buf_slice(&t[i].start), row) <= 0 &&
			    (t[i].end.n == 0 ||
			    slice_compare(row, buf_slice(&t[i].end)) < 0);
	return false;
}

/*
 * Random splits and merges with a warm cache: afterwards every row is
 * looked up through the cache as a client would: a hit the "server"
 * refuses is stale, is invalidated and walked again.
 */
static void
test_random_changes_and_cache(struct catalog *c, uint64_t big, uint64_t *seed)
{
	struct location_cache *lc;
	struct location_cache_stats st;
	struct catalog_location loc;
	struct catalog_tablet *t;
	size_t n, splits = 0, merges = 0, stale = 0, wrong = 0, probes = 0;
	uint64_t ids[2], id;
	int levels, ops = small_run() ? 150 : 600;

	if (location_cache_new(0, &lc) != 0)
		tap_bail("location_cache_new");
	catalog_location_init(&loc);
	if (catalog_tablets_list(c, big, &t, &n) != 0)
		tap_bail("list the big table");
	for (size_t i = 0; i < n; i++)
		if (catalog_location_walk(c, big, buf_slice(&t[i].start), &loc,
		    &levels) == 0)
			location_cache_insert(lc, big, buf_slice(&loc.start),
			    buf_slice(&loc.end), loc.tablet_id);
	catalog_tablets_free(t, n);

	for (int op = 0; op < ops; op++) {
		size_t i;

		if (catalog_tablets_list(c, big, &t, &n) != 0)
			tap_bail("list the big table");
		i = (size_t)(tap_rand(seed) % n);
		if (tap_rand(seed) % 2 == 0 || i + 1 >= n) {
			if (split_tablet(c, &t[i], NULL, 0, NULL, ids) == 0)
				splits++;
		} else if (merge_tablets(c, &t[i], &t[i + 1], &id) == 0) {
			merges++;
		}
		catalog_tablets_free(t, n);
	}
	ok(splits > (size_t)ops / 3 && merges > (size_t)ops / 3,
	    "%zu random splits and %zu merges",
	    splits, merges);
	check_clean(c, "after random splits and merges");
	verify_table(c, big, "after random splits and merges");

	if (catalog_tablets_list(c, big, &t, &n) != 0)
		tap_bail("list the big table");
	for (size_t i = 0; i < n; i++) {
		struct slice row = buf_slice(&t[i].start);

		for (int attempt = 0; attempt < 3; attempt++) {
			probes++;
			if (location_cache_lookup(lc, big, row, &id) == 0) {
				if (tablet_serves(t, n, id, row))
					break;
				stale++;
				location_cache_invalidate(lc, big, row);
			}
			id = 0;
			if (catalog_location_walk(c, big, row, &loc,
			    &levels) != 0)
				break;
			location_cache_add_levels(lc, (unsigned)levels);
			location_cache_insert(lc, big, buf_slice(&loc.start),
			    buf_slice(&loc.end), loc.tablet_id);
			id = loc.tablet_id;
			break;
		}
		wrong += id != t[i].id;
	}
	ok(stale > 0, "the warm cache had stale entries (%zu)", stale);
	is_int(wrong, 0, "each stale entry was recovered from by walking again "
	    "(%zu tablets)", n);
	location_cache_get_stats(lc, &st);
	is_int(st.invalidations, stale, "each stale entry was invalidated");
	diag("cache: %" PRIu64 " lookups, %" PRIu64 " hits, %" PRIu64
	    " misses, %" PRIu64 " levels walked", st.lookups, st.hits,
	    st.misses, st.levels_walked);
	catalog_tablets_free(t, n);
	catalog_location_release(&loc);
	location_cache_free(lc);
}

/* ---- Assignment ---- */

static void
test_assignment(struct catalog *c, uint64_t big)
{
	struct catalog_location *un, loc;
	struct catalog_meta_tablet *m;
	struct catalog_tablet *t;
	size_t n, un_n, un_n2, mn;
	uint64_t ids[2];
	char name[CATALOG_SERVER_MAX + 2];

	if (catalog_tablets_unassigned(c, &un, &un_n) != 0)
		tap_bail("unassigned");
	catalog_locations_free(un, un_n);
	if (catalog_tablets_list(c, big, &t, &n) != 0)
		tap_bail("list the big table");
	for (size_t i = 0; i < 10; i++)
		if (catalog_tablet_assign(c, t[i].id, "server-a:7000") != 0)
			tap_bail("assign");
	if (catalog_tablets_unassigned(c, &un, &un_n2) != 0)
		tap_bail("unassigned");
	catalog_locations_free(un, un_n2);
	ok(un_n2 + 10 <= un_n, "assigning ten tablets takes them off the "
	    "unassigned list (%zu -> %zu)", un_n, un_n2);
	catalog_location_init(&loc);
	is_int(catalog_location_walk(c, big, buf_slice(&t[3].start), &loc,
	    NULL), 0, "walk to an assigned tablet");
	ok(strcmp(loc.server, "server-a:7000") == 0,
	    "its location names the server (%s)", loc.server);
	is_int(catalog_tablet_assign(c, t[3].id, ""), 0, "unassign it");
	catalog_location_walk(c, big, buf_slice(&t[3].start), &loc, NULL);
	ok(loc.server[0] == '\0', "its location names no server");
	is_int(catalog_tablet_assign(c, 987654321, "x"), -ENOENT,
	    "assigning a missing tablet is -ENOENT");
	is_int(catalog_tablet_assign(c, t[4].id, "a b"), -EINVAL,
	    "a server name with a blank is -EINVAL");
	memset(name, 'n', sizeof(name));
	name[CATALOG_SERVER_MAX + 1] = '\0';
	is_int(catalog_tablet_assign(c, t[4].id, name), -EINVAL,
	    "a server name of %d bytes is -EINVAL", CATALOG_SERVER_MAX + 1);
	is_int(split_tablet(c, &t[5], NULL, 0, "server-b", ids), 0,
	    "split an assigned tablet, children to server-b");
	catalog_location_walk(c, big, buf_slice(&t[5].start), &loc, NULL);
	ok(strcmp(loc.server, "server-b") == 0, "a child is assigned as told");
	if (catalog_meta_tablets_list(c, &m, &mn) == 0) {
		ok(mn > 1 && m[0].parent_id == 0 && m[1].parent_id == m[0].id,
		    "the root comes first, then its METADATA tablets");
		is_int(catalog_meta_tablet_assign(c, m[0].id, "master"), 0,
		    "assign the root tablet");
		is_int(catalog_meta_tablet_assign(c, m[1].id, "ts1"), 0,
		    "assign a METADATA tablet");
		catalog_meta_tablets_free(m, mn);
	}
	if (catalog_meta_tablets_list(c, &m, &mn) == 0) {
		ok(strcmp(m[0].server, "master") == 0 &&
		    strcmp(m[1].server, "ts1") == 0, "both are recorded");
		ok(m[mn - 1].end_table == UINT64_MAX, "the last METADATA tablet "
		    "ends the key space");
		catalog_meta_tablets_free(m, mn);
	}
	check_clean(c, "after assignments");
	catalog_location_release(&loc);
	catalog_tablets_free(t, n);
}

/* Dropping a table empties its METADATA tablets; a new table with the
 * same id meets the METADATA boundaries the old one left. */
static void
test_drop_and_reuse(struct catalog *c)
{
	static char keys[BIG_SPLITS][16];
	struct slice *splits = big_splits(keys);
	size_t before = meta_tablet_count(c);
	uint64_t id = table_id_of(c, "big"), id2 = 0;

	is_int(catalog_table_drop(c, "big"), 0, "drop the big table");
	check_clean(c, "after the drop");
	ok(meta_tablet_count(c) < before / 4,
	    "its METADATA tablets are gone with it (%zu -> %zu)", before,
	    meta_tablet_count(c));
	is_int(catalog_table_create(c, "big2", 0, NULL, 0, NULL, 0,
	    splits + 1, 300, &id2, NULL), 0, "create a table after the drop");
	diag("the new table has id %" PRIu64 " (the dropped one had %" PRIu64
	    ")", id2, id);
	check_clean(c, "after a create that may reuse the id");
	verify_table(c, id2, "in the new table");
	free(splits);
}

/* ---- Walks racing splits and merges ---- */

struct walk_race {
	struct catalog *c;
	uint64_t table;
	atomic_bool stop;
	long walks, wrong, errors;
};

static void *
walk_race_main(void *arg)
{
	struct walk_race *r = arg;
	struct catalog_location loc;
	uint64_t state = 7;
	char row[16];

	catalog_location_init(&loc);
	while (!atomic_load(&r->stop)) {
		struct slice s;
		int rc;

		snprintf(row, sizeof(row), "%c%u", 'a' + (int)(tap_rand(&state)
		    % 26), (unsigned)(tap_rand(&state) % 1000));
		s = slice_str(row);
		rc = catalog_location_walk(r->c, r->table, s, &loc, NULL);
		r->walks++;
		if (rc != 0) {
			r->errors++;
			continue;
		}
		if (slice_compare(buf_slice(&loc.start), s) > 0 ||
		    (loc.end.n > 0 && slice_compare(s, buf_slice(&loc.end)) >= 0))
			r->wrong++;
	}
	catalog_location_release(&loc);
	return NULL;
}

/* A walk is one transaction: while another thread splits and merges the
 * table, every walk returns a tablet whose range holds the row. */
static void
test_walks_race_changes(struct catalog *c, uint64_t *seed)
{
	struct walk_race r;
	struct catalog_tablet *t;
	pthread_t tid;
	uint64_t ids[2], id;
	size_t n;
	int ops = 0;

	memset(&r, 0, sizeof(r));
	r.c = c;
	r.table = table_id_of(c, "small");
	if (pthread_create(&tid, NULL, walk_race_main, &r) != 0)
		tap_bail("pthread_create");
	for (int op = 0; op < 400; op++) {
		size_t i;
		struct buf at;

		if (catalog_tablets_list(c, r.table, &t, &n) != 0)
			tap_bail("list");
		i = (size_t)(tap_rand(seed) % n);
		buf_init(&at);
		if (n < 3 || tap_rand(seed) % 3 != 0 || i + 1 >= n) {
			/* Split at a random row, so the table fills out. */
			buf_set(&at, (char[]){ (char)('a' + tap_rand(seed) %
			    26) }, 1);
			buf_append(&at, "5", 1);
			if (slice_compare(buf_slice(&t[i].start),
			    buf_slice(&at)) < 0 && (t[i].end.n == 0 ||
			    slice_compare(buf_slice(&at),
			    buf_slice(&t[i].end)) < 0)) {
				struct catalog_tablet_spec sp[2];

				memset(sp, 0, sizeof(sp));
				sp[0].start = buf_slice(&t[i].start);
				sp[0].end = sp[1].start = buf_slice(&at);
				sp[1].end = buf_slice(&t[i].end);
				ops += catalog_tablet_replace(c, &t[i].id, 1,
				    sp, 2, ids, NULL) == 0;
			} else {
				ops += split_tablet(c, &t[i], NULL, 0, NULL,
				    ids) == 0;
			}
		} else {
			ops += merge_tablets(c, &t[i], &t[i + 1], &id) == 0;
		}
		buf_release(&at);
		catalog_tablets_free(t, n);
	}
	atomic_store(&r.stop, true);
	pthread_join(tid, NULL);
	ok(ops > 300, "%d splits and merges ran beside the walks", ops);
	is_int(r.errors, 0, "no walk failed (%ld walks)", r.walks);
	is_int(r.wrong, 0, "every walk returned a tablet holding its row");
	check_clean(c, "after the race");
}

/* ---- Crashes ---- */

static const char fault_path[] = "/s/catalog.db";

/* The table's tablets with their files and redo points, and the METADATA
 * tablets' ends and row counts, as text. */
static char *
render(struct catalog *c)
{
	struct sbuf b = { 0 };
	struct catalog_meta_tablet *m;
	struct catalog_tablet *t;
	char **names;
	size_t n, mn, tn;

	if (catalog_table_list(c, &names, &tn) != 0)
		return strdup("ERROR");
	for (size_t k = 0; k < tn; k++) {
		if (catalog_tablets_list(c, table_id_of(c, names[k]), &t,
		    &n) != 0)
			continue;
		sbuf_printf(&b, "%s:", names[k]);
		for (size_t i = 0; i < n; i++) {
			struct catalog_file *f;
			size_t fn = 0;

			sbuf_escaped(&b, t[i].start.p, t[i].start.n);
			sbuf_printf(&b, "-");
			sbuf_escaped(&b, t[i].end.p, t[i].end.n);
			if (catalog_files_list(c, t[i].id, &f, &fn) == 0) {
				for (size_t j = 0; j < fn; j++)
					sbuf_printf(&b, " f%" PRIu64,
					    f[j].number);
				bt_free(f);
			}
			sbuf_printf(&b, " s%" PRIu64 ";", t[i].flushed_seq);
		}
		catalog_tablets_free(t, n);
		bt_free(names[k]);
	}
	bt_free(names);
	if (catalog_meta_tablets_list(c, &m, &mn) == 0) {
		sbuf_printf(&b, " META");
		for (size_t i = 1; i < mn; i++) {
			sbuf_printf(&b, " %" PRIu64 "/", m[i].end_table);
			sbuf_escaped(&b, m[i].end_row.p, m[i].end_row.n);
			sbuf_printf(&b, "=%" PRIu64, m[i].row_count);
		}
		catalog_meta_tablets_free(m, mn);
	}
	return sbuf_take(&b);
}

/* A fresh fault env with a catalog of small METADATA tablets and a table
 * "t" of eight tablets, the fourth naming file 77. */
static struct catalog *
fault_setup(struct env **fenvp)
{
	struct slice splits[7];
	char keys[7][16];
	struct catalog_file f = file_row(77);
	struct catalog_tablet *t;
	struct catalog *c;
	uint64_t id;
	size_t n;

	if (env_fault_new(fenvp) < 0 || env_dir_create(*fenvp, "/s") < 0 ||
	    env_dir_sync(*fenvp, "/") < 0 ||
	    catalog_create(*fenvp, fault_path) < 0)
		tap_bail("cannot set up the fault env");
	c = open_or_bail(*fenvp, fault_path);
	for (int i = 0; i < 7; i++) {
		snprintf(keys[i], sizeof(keys[i]), "k%d", (i + 1) * 10);
		splits[i] = slice_str(keys[i]);
	}
	if (catalog_meta_set(c, CATALOG_META_METADATA_ROWS, 4) != 0 ||
	    catalog_table_create(c, "t", 0, NULL, 0, NULL, 0, splits, 7,
	    &id, NULL) != 0 || catalog_tablets_list(c, id, &t, &n) != 0)
		tap_bail("cannot fill the fault env's catalog");
	if (catalog_tablet_apply(c, t[3].id, &f, 1, NULL, 0, 9) != 0)
		tap_bail("cannot name a file");
	catalog_tablets_free(t, n);
	return c;
}

/* Split t's fourth tablet into four children sharing its file: the
 * location rows move and a METADATA tablet passes 4 rows and splits. */
static int
op_replace(struct catalog *c)
{
	struct catalog_file f = file_row(77);
	struct catalog_tablet_spec specs[4];
	static const char *const bounds[] = { "k30", "k32", "k34", "k36",
	    "k40" };
	uint64_t id = table_id_of(c, "t"), ids[4];
	struct catalog_tablet *t;
	size_t n;
	int rc;

	if ((rc = catalog_tablets_list(c, id, &t, &n)) != 0)
		return rc;
	memset(specs, 0, sizeof(specs));
	for (int i = 0; i < 4; i++) {
		specs[i].start = slice_str(bounds[i]);
		specs[i].end = slice_str(bounds[i + 1]);
		specs[i].flushed_seq = 9;
		specs[i].files = &f;
		specs[i].file_count = 1;
	}
	rc = catalog_tablet_replace(c, &t[3].id, 1, specs, 4, ids, NULL);
	catalog_tablets_free(t, n);
	return rc;
}

/* Create a table of 13 tablets: METADATA tablets split several times in
 * the one transaction. */
static int
op_create(struct catalog *c)
{
	struct slice splits[12];
	char keys[12][16];
	uint64_t id;

	for (int i = 0; i < 12; i++) {
		snprintf(keys[i], sizeof(keys[i]), "m%02d", i);
		splits[i] = slice_str(keys[i]);
	}
	return catalog_table_create(c, "u", 0, NULL, 0, NULL, 0, splits, 12,
	    &id, NULL);
}

/*
 * Crash op at the kth write or sync from its start, for every k until it
 * runs clean: after power loss and reopen the hierarchy is consistent and
 * the catalog is the old one or the new one, whole.
 */
static void
test_crash(const char *what, int (*op)(struct catalog *))
{
	static const enum env_fault_op ops[] = { ENV_FAULT_APPEND,
	    ENV_FAULT_SYNC };
	struct env *fenv;
	struct catalog *c;
	char *old, *new, *got;
	size_t metas_old, metas_new;
	int crashes = 0, olds = 0, bad = 0, unclean = 0, lost = 0, rc;

	c = fault_setup(&fenv);
	old = render(c);
	metas_old = meta_tablet_count(c);
	if ((rc = op(c)) != 0)
		tap_bail("the operation fails without faults");
	new = render(c);
	metas_new = meta_tablet_count(c);
	catalog_close(c);
	env_free(fenv);
	ok(strcmp(old, new) != 0 && metas_new > metas_old,
	    "%s changes the tablets and splits METADATA tablets (%zu -> %zu)",
	    what, metas_old, metas_new);

	for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); o++) {
		for (long k = 1; k < 200; k = next_crash_point(k)) {
			c = fault_setup(&fenv);
			env_fault_fail_after(fenv, ops[o], k, -EIO, true);
			rc = op(c);
			/* The process dies here: nothing more reaches disk. */
			catalog_crash(fenv, c);
			c = open_or_bail(fenv, fault_path);
			got = render(c);
			crashes++;
			if (strcmp(got, old) == 0) {
				olds++;
			} else if (strcmp(got, new) != 0) {
				if (bad++ == 0)
					diag("k=%ld: got %s", k, got);
			}
			lost += rc == 0 && strcmp(got, new) != 0;
			unclean += catalog_location_check(c, NULL, NULL) != 0;
			free(got);
			catalog_close(c);
			env_free(fenv);
			if (rc == 0)
				break;
		}
	}
	is_int(bad, 0, "%s crashed at %d points: the catalog is always the old "
	    "or the new one, whole", what, crashes);
	ok(olds > 0, "some crashes left the old one (%d)", olds);
	is_int(lost, 0, "a change that returned 0 survives");
	is_int(unclean, 0, "the hierarchy is consistent after every crash");
	free(old);
	free(new);
}

/* ---- Upgrade from version 1 ---- */

static void
sql_or_bail(sqlite3 *db, const char *sql)
{
	char *msg = NULL;

	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		diag("sql: %s: %s", sql, msg != NULL ? msg : "?");
		tap_bail("raw SQL failed");
	}
}

/* Build a version-1 catalog at path as the previous release did: its
 * schema, a table "old" of 300 tablets, files, counters. */
static void
make_v1_catalog(const char *path)
{
	char sql[256];
	sqlite3 *db;

	unlink(path);
	if (sqlite3_open(path, &db) != SQLITE_OK)
		tap_bail("sqlite3_open");
	sql_or_bail(db, "PRAGMA journal_mode = WAL; BEGIN;");
	sql_or_bail(db, CATALOG_SCHEMA_V1_SQL);
	sql_or_bail(db, "INSERT INTO tables VALUES (1, 'old', 1048576);"
	    "INSERT INTO groups VALUES (1, 'default', 65536, 1, 1, 0);"
	    "INSERT INTO families VALUES (1, 'f', 'default', 'never', 0);"
	    "INSERT INTO meta VALUES ('last_number', 500);"
	    "INSERT INTO meta VALUES ('metadata_tablet_rows', 16);");
	for (int i = 0; i < 300; i++) {
		char s[16], e[16];

		snprintf(s, sizeof(s), "%s%04d", i ? "k" : "", i ? i : 0);
		snprintf(e, sizeof(e), "k%04d", i + 1);
		snprintf(sql, sizeof(sql), "INSERT INTO tablets (id, table_id, "
		    "start_row, end_row, flushed_seq) VALUES (%d, 1, "
		    "CAST('%s' AS BLOB), CAST('%s' AS BLOB), %d)", 1000 + i,
		    i ? s : "", i < 299 ? e : "", i);
		sql_or_bail(db, sql);
		if (i % 50 == 0) {
			snprintf(sql, sizeof(sql), "INSERT INTO files VALUES "
			    "(%d, %d, 'default', 10, 1, 5)", 1000 + i, 400 + i);
			sql_or_bail(db, sql);
		}
	}
	sql_or_bail(db, "PRAGMA application_id = 1952871267;"
	    "PRAGMA user_version = 1; COMMIT;");
	sqlite3_close(db);
}

static int
user_version(const char *path)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	int v = -1;

	if (sqlite3_open(path, &db) != SQLITE_OK)
		return -1;
	if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st,
	    NULL) == SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW)
			v = sqlite3_column_int(st, 0);
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	return v;
}

static void
test_upgrade(void)
{
	struct catalog_file *files;
	struct catalog *c;
	char path[256];
	uint64_t number = 0;
	size_t fn;

	snprintf(path, sizeof(path), "%s/v1.db", dir);
	make_v1_catalog(path);
	is_int(user_version(path), 1, "a version-1 catalog");
	c = open_or_bail(env, path);
	ok(true, "opens");
	is_int(user_version(path), CATALOG_VERSION, "and is now version %d",
	    CATALOG_VERSION);
	check_clean(c, "after the upgrade");
	ok(meta_tablet_count(c) > 300 / 16, "the upgrade built %zu METADATA "
	    "tablets for 300 tablets", meta_tablet_count(c));
	verify_table(c, 1, "of the upgraded catalog");
	is_int(catalog_files_list(c, 1050, &files, &fn), 0,
	    "its file rows are kept");
	ok(fn == 1 && files[0].number == 450, "file 450 of tablet 1050");
	bt_free(files);
	is_int(catalog_next_number(c, &number), 0, "take a number");
	is_int(number, 501, "numbers continue from the old counter");
	catalog_close(c);
	c = open_or_bail(env, path);
	check_clean(c, "after reopening the upgraded catalog");
	catalog_close(c);
	unlink(path);
}

/* A crash at any write or sync of the upgrade leaves a catalog that the
 * next open upgrades (or finds upgraded), consistent and complete. */
static void
test_upgrade_crash(void)
{
	static const enum env_fault_op ops[] = { ENV_FAULT_APPEND,
	    ENV_FAULT_SYNC };
	struct catalog_tablet *t;
	struct env *fenv;
	struct catalog *c;
	char path[256];
	int crashes = 0, failed = 0, bad = 0, rc;
	size_t n;

	snprintf(path, sizeof(path), "%s/v1.db", dir);
	make_v1_catalog(path);
	for (size_t o = 0; o < 2; o++) {
		for (long k = 1; k < 400; k = next_crash_point(k)) {
			if (env_fault_new(&fenv) < 0 ||
			    env_dir_create(fenv, "/s") < 0 ||
			    env_dir_sync(fenv, "/") < 0)
				tap_bail("fault env");
			catalog_copy_into(fenv, path, fault_path);
			env_fault_fail_after(fenv, ops[o], k, -EIO, true);
			c = NULL;
			rc = catalog_open(fenv, fault_path, &c);
			catalog_crash(fenv, c);
			crashes++;
			failed += rc != 0;
			c = open_or_bail(fenv, fault_path);
			bad += catalog_location_check(c, NULL, NULL) != 0;
			if (catalog_tablets_list(c, 1, &t, &n) == 0) {
				bad += n != 300;
				catalog_tablets_free(t, n);
			} else {
				bad++;
			}
			catalog_close(c);
			env_free(fenv);
			if (rc == 0)
				break;
		}
	}
	ok(failed > 0, "%d upgrades crashed at a write or sync", failed);
	is_int(bad, 0, "after each of %d crashes the next open has the whole "
	    "catalog, upgraded and consistent", crashes);
	unlink(path);
}

/* A store written by the previous release (its catalog taken back to
 * version 1) opens, upgrades and reads back every cell. */
static void
test_v1_store(void)
{
	static const char *const downgrade =
	    "DROP TRIGGER tablets_location_insert;"
	    "DROP TRIGGER tablets_location_update;"
	    "DROP TRIGGER tablets_location_delete;"
	    "DROP TRIGGER tablets_location_server;"
	    "DROP TABLE locations; DROP TABLE meta_tablets;"
	    "DROP INDEX tablets_server;"
	    "DROP TRIGGER tablets_id_high;"
	    "ALTER TABLE tablets DROP COLUMN server;"
	    "ALTER TABLE tablets DROP COLUMN auto_split;"
	    "ALTER TABLE tablets DROP COLUMN recovering;"
	    "ALTER TABLE tables DROP COLUMN uid;"
	    "ALTER TABLE tables DROP COLUMN gid;"
	    "ALTER TABLE tables DROP COLUMN mode;"
	    "ALTER TABLE families DROP COLUMN uid;"
	    "ALTER TABLE families DROP COLUMN gid;"
	    "ALTER TABLE families DROP COLUMN mode;"
	    "DROP TABLE pending_files;"
	    "DELETE FROM meta WHERE key = 'root_tablet';"
	    "DELETE FROM meta WHERE key = 'last_tablet_id';"
	    "PRAGMA user_version = 1;";
	struct bt_family_spec fam = { .name = "f" };
	struct bt_bytes splits[] = { bts("g"), bts("p") };
	struct tstore ts;
	struct catalog *c;
	char path[512], row[16], *text;
	sqlite3 *db;
	int bad = 0;

	tstore_posix(&ts, NULL);
	is_int(bt_table_create(ts.s, "web", &fam, 1, splits, 2, 0), 0,
	    "a store with a table of three tablets");
	for (int i = 0; i < 200; i++) {
		snprintf(row, sizeof(row), "%c%03d", 'a' + i % 26, i);
		if (put_str(ts.s, "web", row, "f", "q", 1000 + i, row) != 0)
			bad++;
	}
	is_int(bad, 0, "200 cells written");
	is_int(bt_store_flush(ts.s), 0, "and flushed to SSTables");
	is_int(bt_store_close(ts.s), 0, "closed");
	ts.s = NULL;
	snprintf(path, sizeof(path), "%s/catalog.db", ts.path);
	if (raw_open(env, path, &db) != SQLITE_OK)
		tap_bail("open the store's catalog");
	sql_or_bail(db, downgrade);
	sqlite3_close(db);
	is_int(user_version(path), 1, "its catalog is taken back to version 1");
	if (bt_store_open(ts.path, &ts.opts, &ts.s) != 0) {
		diag("open: %s", bt_error_detail());
		tap_bail("the version-1 store does not open");
	}
	ok(true, "the version-1 store opens");
	bad = 0;
	for (int i = 0; i < 200; i++) {
		char want[64];

		snprintf(row, sizeof(row), "%c%03d", 'a' + i % 26, i);
		snprintf(want, sizeof(want), "f:q@%d=%s\n", 1000 + i, row);
		text = read_text_str(ts.s, "web", row, NULL);
		if (strcmp(text, want) != 0 && bad++ == 0)
			diag("row %s: %s", row, text);
		free(text);
	}
	is_int(bad, 0, "and reads back all 200 cells");
	is_int(put_str(ts.s, "web", "zzz", "f", "q", 5, "new"), 0,
	    "and takes new writes");
	is_int(bt_store_close(ts.s), 0, "and closes");
	ts.s = NULL;
	is_int(user_version(path), CATALOG_VERSION, "its catalog is version %d",
	    CATALOG_VERSION);
	c = open_or_bail(env, path);
	check_clean(c, "in the upgraded store");
	verify_table(c, table_id_of(c, "web"), "in the upgraded store");
	catalog_close(c);
	tstore_destroy(&ts);
}

static void
report_collect(void *arg, const char *problem)
{
	sbuf_printf(arg, "%s\n", problem);
}

/*
 * The check finds each kind of damage, made behind the catalog's back
 * with its triggers dropped: a tablet without its location row, a row in
 * the wrong METADATA tablet, a row count that lies, tablets that do not
 * tile, a METADATA end inside a tablet, a row for no tablet, no root.
 */
static void
test_check_detects(void)
{
	static const struct {
		const char *sql;
		const char *expect;
	} damage[] = {
		{ "DELETE FROM locations WHERE tablet_id ="
		  " (SELECT min(id) FROM tablets)", "no location row" },
		{ "UPDATE locations SET meta_id = (SELECT max(id) FROM"
		  " meta_tablets WHERE parent_id IS NOT NULL)"
		  " WHERE tablet_id = (SELECT max(id) FROM tablets)",
		  "not in the one covering its key" },
		{ "UPDATE meta_tablets SET row_count = row_count + 1"
		  " WHERE parent_id IS NOT NULL", "counts" },
		{ "UPDATE tablets SET end_row = CAST('k55' AS BLOB)"
		  " WHERE start_row = CAST('k40' AS BLOB)",
		  "does not start where the one before ends" },
		{ "UPDATE meta_tablets SET end_row = CAST('k15' AS BLOB)"
		  " WHERE end_row = CAST('k20' AS BLOB)", "ends inside the span" },
		{ "INSERT INTO locations VALUES (99999, 2, 1, 0,"
		  " CAST('k05' AS BLOB), x'', '')", "does not exist" },
		{ "DELETE FROM meta WHERE key = 'root_tablet'",
		  "no root location record" },
	};
	struct slice splits[9];
	char keys[9][16], path[256];
	struct catalog *c;
	uint64_t id;
	sqlite3 *db;

	for (int i = 0; i < 9; i++) {
		snprintf(keys[i], sizeof(keys[i]), "k%d", (i + 1) * 10);
		splits[i] = slice_str(keys[i]);
	}
	snprintf(path, sizeof(path), "%s/damaged.db", dir);
	for (size_t d = 0; d < sizeof(damage) / sizeof(damage[0]); d++) {
		struct sbuf b = { 0 };
		int rc;

		unlink(path);
		if (catalog_create(env, path) != 0)
			tap_bail("catalog_create");
		c = open_or_bail(env, path);
		if (catalog_meta_set(c, CATALOG_META_METADATA_ROWS, 4) != 0 ||
		    catalog_table_create(c, "t", 0, NULL, 0, NULL, 0, splits,
		    9, &id, NULL) != 0 || catalog_location_check(c, NULL,
		    NULL) != 0)
			tap_bail("cannot make a catalog to damage");
		catalog_close(c);
		if (raw_open(env, path, &db) != SQLITE_OK)
			tap_bail("sqlite3_open");
		sql_or_bail(db, "DROP TRIGGER tablets_location_insert;"
		    "DROP TRIGGER tablets_location_update;"
		    "DROP TRIGGER tablets_location_delete;"
		    "DROP TRIGGER tablets_location_server;"
		    "DROP TRIGGER locations_count_insert;"
		    "DROP TRIGGER locations_count_delete;"
		    "DROP TRIGGER locations_count_move;"
		    "DROP TRIGGER meta_tablets_split;"
		    "DROP TRIGGER meta_tablets_empty;");
		sql_or_bail(db, damage[d].sql);
		sqlite3_close(db);
		c = open_or_bail(env, path);
		rc = catalog_location_check(c, report_collect, &b);
		ok(rc > 0 && b.p != NULL && strstr(b.p, damage[d].expect) !=
		    NULL, "the check finds: %s (%d problems)", damage[d].expect,
		    rc);
		if (b.p != NULL && strstr(b.p, damage[d].expect) == NULL)
			diag("it reported: %s", b.p);
		sbuf_release(&b);
		catalog_close(c);
	}
	unlink(path);
}

/*
 * Changes to `tablets` made by plain SQL, as the lead's own transactions
 * may make them, keep the hierarchy: an in-place split (the parent's end
 * updated, then the right child inserted) and a merge by DELETE and
 * UPDATE.  Inserting the right child before the parent shrinks is
 * refused: the two would share a location key.
 */
static void
test_raw_sql_changes(void)
{
	struct slice splits[9];
	char keys[9][16], path[256];
	struct catalog *c;
	uint64_t id, got;
	sqlite3 *db;
	char *msg = NULL;
	int src;

	for (int i = 0; i < 9; i++) {
		snprintf(keys[i], sizeof(keys[i]), "k%d", (i + 1) * 10);
		splits[i] = slice_str(keys[i]);
	}
	snprintf(path, sizeof(path), "%s/raw.db", dir);
	unlink(path);
	if (catalog_create(env, path) != 0)
		tap_bail("catalog_create");
	c = open_or_bail(env, path);
	if (catalog_meta_set(c, CATALOG_META_METADATA_ROWS, 3) != 0 ||
	    catalog_table_create(c, "t", 0, NULL, 0, NULL, 0, splits, 9,
	    &id, NULL) != 0)
		tap_bail("cannot make a catalog");
	catalog_close(c);
	if (raw_open(env, path, &db) != SQLITE_OK)
		tap_bail("sqlite3_open");
	src = sqlite3_exec(db, "BEGIN;"
	    "INSERT INTO tablets (table_id, start_row, end_row, flushed_seq)"
	    " VALUES (1, CAST('k15' AS BLOB), CAST('k20' AS BLOB), 0);",
	    NULL, NULL, &msg);
	ok(src != SQLITE_OK, "a child inserted before its parent shrinks is "
	    "refused (%s)", msg != NULL ? msg : "accepted");
	sqlite3_free(msg);
	sql_or_bail(db, "ROLLBACK;");
	sql_or_bail(db, "PRAGMA foreign_keys = ON; BEGIN;"
	    "UPDATE tablets SET end_row = CAST('k15' AS BLOB)"
	    " WHERE start_row = CAST('k10' AS BLOB);"
	    "INSERT INTO tablets (table_id, start_row, end_row, flushed_seq)"
	    " VALUES (1, CAST('k15' AS BLOB), CAST('k20' AS BLOB), 0);"
	    "COMMIT;");
	c = open_or_bail(env, path);
	check_clean(c, "after an in-place split in plain SQL");
	got = walk_id(c, id, slice_str("k17"), NULL);
	ok(got != 0 && got != UINT64_MAX && got == walk_id(c, id,
	    slice_str("k15"), NULL) && got != walk_id(c, id,
	    slice_str("k14"), NULL), "k15 and k17 are in the new child");
	verify_table(c, id, "after the plain-SQL split");
	catalog_close(c);
	sql_or_bail(db, "PRAGMA foreign_keys = ON; BEGIN;"
	    "DELETE FROM tablets WHERE start_row = CAST('k20' AS BLOB);"
	    "DELETE FROM tablets WHERE start_row = CAST('k30' AS BLOB);"
	    "UPDATE tablets SET end_row = CAST('k40' AS BLOB)"
	    " WHERE start_row = CAST('k15' AS BLOB);"
	    "COMMIT;");
	sqlite3_close(db);
	c = open_or_bail(env, path);
	check_clean(c, "after a three-way merge in plain SQL");
	verify_table(c, id, "after the plain-SQL merge");
	catalog_close(c);
	unlink(path);
}

static void
dir_remove(void)
{
	char p[512];
	struct dirent *e;
	DIR *d = opendir(dir);

	if (d != NULL) {
		while ((e = readdir(d)) != NULL) {
			if (e->d_name[0] == '.')
				continue;
			snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
			unlink(p);
		}
		closedir(d);
	}
	rmdir(dir);
}

int
main(void)
{
	struct catalog *c;
	char path[256];
	uint64_t big = 0, seed = tap_seed();

	if (env_posix_new(&env) < 0)
		tap_bail("env_posix_new");
	snprintf(dir, sizeof(dir), "/tmp/test_location.XXXXXX");
	if (mkdtemp(dir) == NULL)
		tap_bail("mkdtemp");
	snprintf(path, sizeof(path), "%s/catalog.db", dir);
	if (catalog_create(env, path) != 0)
		tap_bail("catalog_create");
	c = open_or_bail(env, path);
	check_clean(c, "in a new catalog");

	test_big_table(c, &big);
	test_timings(c, big);
	test_split_merge(c, big);
	test_random_changes_and_cache(c, big, &seed);
	test_assignment(c, big);
	test_walks_race_changes(c, &seed);
	catalog_close(c);
	c = open_or_bail(env, path);
	check_clean(c, "after a reopen");
	verify_table(c, big, "after a reopen");
	test_drop_and_reuse(c);
	catalog_close(c);

	test_crash("a tablet replacement", op_replace);
	test_crash("a table create", op_create);
	test_check_detects();
	test_raw_sql_changes();
	test_upgrade();
	test_upgrade_crash();
	test_v1_store();

	env_free(env);
	dir_remove();
	return tap_done();
}
