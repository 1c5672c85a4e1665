/*
 * test_api_concurrency.c - one store used from many threads at once:
 * row mutations of four cells are seen all or nothing by concurrent
 * readers and scans (never a mix of two mutations); concurrent increments
 * of one counter lose nothing and never return the same sum twice; writes
 * and reads go on while another thread flushes and compacts, and every
 * acknowledged write is readable at once and after a reopen.  Server
 * stamps of concurrent writers to one cell are distinct.  And all of it
 * at once on a table whose tablets split (by size and by force) and
 * compact underneath: increments from K threads sum to N*K, row
 * mutations stay whole, scans return every row once and in order.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api/tabletfs.h"
#include "util/env.h"
#include "api_util.h"

#define WRITERS		4
#define READERS		2
#define ATOMIC_MUTS	400
#define ATOMIC_ROWS	8
#define INCR_THREADS	4
#define INCR_EACH	500
#define BG_WRITERS	3
#define BG_PUTS		1500
#define BG_PUTS_MAX	30000
#define BG_MIN_MAINT	4
#define SPLIT_INCRS	4	/* threads incrementing */
#define SPLIT_INCR_EACH	600
#define SPLIT_COUNTERS	8
#define SPLIT_WRITERS	2	/* threads writing 4-cell rows */
#define SPLIT_MUTS	1500
#define SPLIT_ROWS	400
/* The maintainer and the reader pace themselves by the workers' progress,
 * so that their work is bounded by the load whatever the scheduler
 * (valgrind runs one thread at a time, and a free-running reader or
 * maintainer there took most of it from the workers). */
#define SPLIT_MAINT_EVERY 100	/* worker operations per maintenance op */
#define SPLIT_SCAN_EVERY 25	/* worker operations per full scan */

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static void
start_thread(pthread_t *th, void *(*fn)(void *), void *arg)
{
	if (pthread_create(th, NULL, fn, arg) != 0)
		tap_bail("pthread_create failed");
}

/* ---- Row atomicity ---- */

struct atomic_test {
	struct bt_store *s;
	atomic_int writers_left;
	atomic_long errors;
	atomic_long mixed;
	atomic_long reads;
	atomic_long found;
	atomic_long scans;
	int64_t stamps[WRITERS][ATOMIC_MUTS];
	int rows[WRITERS][ATOMIC_MUTS];
};

struct atomic_arg {
	struct atomic_test *at;
	int id;
};

static const char *const cell_names[4] = { "c0", "c1", "c2", "c3" };

static void *
atomic_writer(void *p)
{
	struct atomic_arg *a = p;
	struct atomic_test *at = a->at;
	uint64_t rng = 0x1234567ull * (uint64_t)(a->id + 1);
	struct bt_mutation m[4];
	char val[80], row[16];
	int i, j, rc;

	for (i = 0; i < ATOMIC_MUTS; i++) {
		int r = (int)(tap_rand(&rng) % ATOMIC_ROWS);
		int pad = (int)(tap_rand(&rng) % 40);

		snprintf(row, sizeof(row), "row%d", r);
		snprintf(val, sizeof(val), "w%d-%d-%.*s", a->id, i, pad,
		    "........................................");
		for (j = 0; j < 4; j++) {
			m[j] = (struct bt_mutation){
				.kind = BT_PUT, .family = "f",
				.qualifier = bts(cell_names[j]),
				.ts = BT_TS_SERVER, .value = bts(val),
			};
		}
		at->rows[a->id][i] = r;
		at->stamps[a->id][i] = -1;
		rc = bt_mutate_row(at->s, "c", bts(row), m, 4, NULL,
		    &at->stamps[a->id][i]);
		if (rc != 0)
			atomic_fetch_add(&at->errors, 1);
	}
	atomic_fetch_sub(&at->writers_left, 1);
	return NULL;
}

/* Newest versions of c0..c3: all four, one value, one stamp.  Rows in a
 * scan are checked the same way. */
static bool
row_is_whole(const struct bt_row *r)
{
	int j;

	if (r->cell_count != 4)
		return false;
	for (j = 0; j < 4; j++) {
		if (!bytes_eq(r->cells[j].qualifier, bts(cell_names[j])) ||
		    r->cells[j].ts != r->cells[0].ts ||
		    !bytes_eq(r->cells[j].value, r->cells[0].value))
			return false;
	}
	return true;
}

/* All versions of c0..c3: four identical histories. */
static bool
history_is_whole(const struct bt_row *r)
{
	size_t n = r->cell_count / 4, i, j;

	if (r->cell_count % 4 != 0)
		return false;
	for (j = 0; j < 4; j++) {
		for (i = 0; i < n; i++) {
			const struct bt_cell *c = &r->cells[j * n + i];
			const struct bt_cell *c0 = &r->cells[i];

			if (!bytes_eq(c->qualifier, bts(cell_names[j])) ||
			    c->ts != c0->ts || !bytes_eq(c->value, c0->value))
				return false;
			if (i > 0 && c->ts >= r->cells[j * n + i - 1].ts)
				return false;
		}
	}
	return true;
}

static void *
atomic_reader(void *p)
{
	struct atomic_arg *a = p;
	struct atomic_test *at = a->at;
	uint64_t rng = 0xabcdefull * (uint64_t)(a->id + 1);
	struct bt_read_options newest = { .cells_per_column = 1 };
	struct bt_row *r;
	char row[16];
	int rc;

	while (atomic_load(&at->writers_left) > 0) {
		unsigned k = (unsigned)(tap_rand(&rng) % 16);

		if (k == 0) {
			struct bt_scan_options so = { .read = newest };
			struct bt_scan *sc = NULL;

			if (bt_scan_open(at->s, "c", &so, &sc) != 0) {
				atomic_fetch_add(&at->errors, 1);
				continue;
			}
			for (;;) {
				r = NULL;
				rc = bt_scan_next(sc, &r);
				if (rc != 0)
					break;
				if (!row_is_whole(r))
					atomic_fetch_add(&at->mixed, 1);
				bt_row_free(r);
			}
			if (rc != BT_DONE)
				atomic_fetch_add(&at->errors, 1);
			bt_scan_close(sc);
			atomic_fetch_add(&at->scans, 1);
			continue;
		}
		snprintf(row, sizeof(row), "row%d",
		    (int)(tap_rand(&rng) % ATOMIC_ROWS));
		r = NULL;
		rc = bt_read_row(at->s, "c", bts(row), k < 4 ? NULL : &newest,
		    &r);
		atomic_fetch_add(&at->reads, 1);
		if (rc == BT_NOTFOUND)
			continue;
		if (rc != 0) {
			atomic_fetch_add(&at->errors, 1);
			continue;
		}
		atomic_fetch_add(&at->found, 1);
		if (k < 4 ? !history_is_whole(r) : !row_is_whole(r))
			atomic_fetch_add(&at->mixed, 1);
		bt_row_free(r);
	}
	return NULL;
}

static void
test_row_atomicity(void)
{
	static const char *const fams[] = { "f", NULL };
	struct bt_options opts = { .memtable_size = 64 << 10 };
	struct atomic_test *at = calloc(1, sizeof(*at));
	struct atomic_arg args[WRITERS + READERS];
	pthread_t th[WRITERS + READERS];
	struct tstore t;
	int64_t *all;
	long dup_stamps = 0, bad_history = 0, n_all;
	int i, j, r;

	if (at == NULL)
		tap_bail("out of memory");
	tstore_fault(&t, &opts);
	must(make_table(t.s, "c", fams));
	at->s = t.s;
	atomic_store(&at->writers_left, WRITERS);
	for (i = 0; i < WRITERS + READERS; i++) {
		args[i].at = at;
		args[i].id = i < WRITERS ? i : i - WRITERS;
		start_thread(&th[i], i < WRITERS ? atomic_writer :
		    atomic_reader, &args[i]);
	}
	for (i = 0; i < WRITERS + READERS; i++)
		pthread_join(th[i], NULL);
	diag("atomicity: %ld reads (%ld found), %ld scans",
	    atomic_load(&at->reads), atomic_load(&at->found),
	    atomic_load(&at->scans));
	is_int(atomic_load(&at->errors), 0,
	    "atomicity: no call failed (%d writers, %d readers)", WRITERS,
	    READERS);
	is_int(atomic_load(&at->mixed), 0,
	    "atomicity: no read or scan saw a mix of two row mutations");
	ok(atomic_load(&at->found) > 0,
	    "atomicity: the readers saw data while writers ran");

	/* Per row, the server stamps of concurrent writers are distinct and
	 * each column holds exactly those versions. */
	all = xmalloc(sizeof(int64_t) * WRITERS * ATOMIC_MUTS);
	for (r = 0; r < ATOMIC_ROWS; r++) {
		struct bt_row *row = NULL;
		char name[16];

		n_all = 0;
		for (i = 0; i < WRITERS; i++)
			for (j = 0; j < ATOMIC_MUTS; j++)
				if (at->rows[i][j] == r)
					all[n_all++] = at->stamps[i][j];
		qsort(all, (size_t)n_all, sizeof(*all), cmp_i64);
		for (i = 1; i < n_all; i++)
			if (all[i] == all[i - 1])
				dup_stamps++;
		snprintf(name, sizeof(name), "row%d", r);
		if (bt_read_row(t.s, "c", bts(name), NULL, &row) != 0) {
			bad_history++;
			continue;
		}
		if (!history_is_whole(row) ||
		    (long)row->cell_count != 4 * n_all) {
			bad_history++;
		} else {
			for (i = 0; i < n_all; i++)
				if (row->cells[i].ts != all[n_all - 1 - i])
					bad_history++;
		}
		bt_row_free(row);
	}
	is_int(dup_stamps, 0,
	    "atomicity: concurrent server stamps on one cell are distinct");
	is_int(bad_history, 0,
	    "atomicity: every row holds each mutation's four cells, newest "
	    "first, at the returned stamps");
	free(all);
	tstore_destroy(&t);
	free(at);
}

/* ---- Counters ---- */

struct incr_test {
	struct bt_store *s;
	atomic_long errors;
	int64_t results[INCR_THREADS][INCR_EACH];
};

struct incr_arg {
	struct incr_test *it;
	int id;
};

static void *
incr_thread(void *p)
{
	struct incr_arg *a = p;
	int i;

	for (i = 0; i < INCR_EACH; i++) {
		a->it->results[a->id][i] = -1;
		if (bt_increment(a->it->s, "c", bts("counter"), "f",
		    bts("n"), 1, NULL, &a->it->results[a->id][i], NULL) != 0)
			atomic_fetch_add(&a->it->errors, 1);
	}
	return NULL;
}

static void
test_counter(void)
{
	static const char *const fams[] = { "f", NULL };
	struct bt_options opts = { .memtable_size = 64 << 10 };
	struct incr_test *it = calloc(1, sizeof(*it));
	struct incr_arg args[INCR_THREADS];
	pthread_t th[INCR_THREADS];
	struct tstore t;
	int64_t *all;
	struct bt_row *r = NULL;
	long bad = 0;
	int i, n = INCR_THREADS * INCR_EACH;
	char want[32];

	if (it == NULL)
		tap_bail("out of memory");
	tstore_fault(&t, &opts);
	must(make_table(t.s, "c", fams));
	it->s = t.s;
	for (i = 0; i < INCR_THREADS; i++) {
		args[i].it = it;
		args[i].id = i;
		start_thread(&th[i], incr_thread, &args[i]);
	}
	for (i = 0; i < INCR_THREADS; i++)
		pthread_join(th[i], NULL);
	is_int(atomic_load(&it->errors), 0, "counter: no increment failed");
	snprintf(want, sizeof(want), "%d\\x0a@", n);
	{
		char *got = newest_text(t.s, "c", "counter", "f", "n");

		ok(strncmp(got, want, strlen(want)) == 0,
		    "counter: %d x %d increments of 1 sum to %d (got %s)",
		    INCR_THREADS, INCR_EACH, n, got);
		free(got);
	}
	all = xmalloc(sizeof(int64_t) * (size_t)n);
	memcpy(all, it->results, sizeof(int64_t) * (size_t)n);
	qsort(all, (size_t)n, sizeof(*all), cmp_i64);
	for (i = 0; i < n; i++)
		if (all[i] != i + 1)
			bad++;
	is_int(bad, 0, "counter: the results are exactly 1..%d, each once", n);
	free(all);
	if (bt_read_row(t.s, "c", bts("counter"), NULL, &r) == 0) {
		is_int(r->cell_count, n, "counter: one version per increment");
		bad = 0;
		for (i = 1; i < (int)r->cell_count; i++)
			if (r->cells[i].ts >= r->cells[i - 1].ts)
				bad++;
		is_int(bad, 0, "counter: versions have distinct stamps");
		bt_row_free(r);
	} else {
		ok(false, "counter: read the counter's versions");
	}
	is_int(tstore_reopen(&t), 0, "counter: clean close");
	{
		int64_t result = 0;

		is_int(bt_increment(t.s, "c", bts("counter"), "f", bts("n"),
		    1, NULL, &result, NULL), 0, "counter: after reopen");
		is_int(result, n + 1, "counter: continues at %d", n + 1);
	}
	tstore_destroy(&t);
	free(it);
}

/* ---- Writes and reads while flushes and compactions run ---- */

struct bg_test {
	struct bt_store *s;
	atomic_int writers_left;
	atomic_long progress[BG_WRITERS];
	atomic_long write_errors;
	atomic_long read_errors;
	atomic_long read_misses;
	atomic_long maint_errors;
	atomic_long maint_ops;
	atomic_long reads;
};

struct bg_arg {
	struct bg_test *bg;
	int id;
};

static void
bg_cell(int w, long i, char *row, size_t rn, char *q, size_t qn, char *val,
    size_t vn)
{
	snprintf(row, rn, "t%d-%04ld", w, i / 10);
	snprintf(q, qn, "q%ld", i % 10);
	snprintf(val, vn, "v%d-%ld-%s", w, i,
	    "padding padding padding padding padding padding");
}

static void *
bg_writer(void *p)
{
	struct bg_arg *a = p;
	char row[32], q[16], val[96];
	long i;

	/* At least BG_PUTS, and on until maintenance has run a few times. */
	for (i = 0; i < BG_PUTS_MAX && (i < BG_PUTS ||
	    atomic_load(&a->bg->maint_ops) < BG_MIN_MAINT); i++) {
		bg_cell(a->id, i, row, sizeof(row), q, sizeof(q), val,
		    sizeof(val));
		if (put_str(a->bg->s, "c", row, "f", q, i + 1, val) != 0)
			atomic_fetch_add(&a->bg->write_errors, 1);
		atomic_store(&a->bg->progress[a->id], i + 1);
	}
	atomic_fetch_sub(&a->bg->writers_left, 1);
	return NULL;
}

static void *
bg_reader(void *p)
{
	struct bg_arg *a = p;
	uint64_t rng = 77;
	char row[32], q[16], val[96];

	while (atomic_load(&a->bg->writers_left) > 0) {
		int w = (int)(tap_rand(&rng) % BG_WRITERS);
		long done = atomic_load(&a->bg->progress[w]), i;
		char *got = NULL;
		size_t len = 0;
		int64_t ts = 0;
		int rc;

		if (done == 0) {
			sched_yield();
			continue;
		}
		i = (long)(tap_rand(&rng) % (uint64_t)done);
		bg_cell(w, i, row, sizeof(row), q, sizeof(q), val, sizeof(val));
		rc = get_newest(a->bg->s, "c", bts(row), "f", bts(q), &got,
		    &len, &ts);
		atomic_fetch_add(&a->bg->reads, 1);
		if (rc == BT_NOTFOUND)
			atomic_fetch_add(&a->bg->read_misses, 1);
		else if (rc != 0)
			atomic_fetch_add(&a->bg->read_errors, 1);
		else if (strcmp(got, val) != 0 || ts != i + 1)
			atomic_fetch_add(&a->bg->read_misses, 1);
		free(got);
	}
	return NULL;
}

static void *
bg_maintainer(void *p)
{
	struct bg_arg *a = p;
	int k = 0, rc;

	while (atomic_load(&a->bg->writers_left) > 0) {
		switch (k++ % 4) {
		case 0:
		case 2:
			rc = bt_store_flush(a->bg->s);
			break;
		case 1:
			rc = bt_store_compact(a->bg->s, "c", false);
			break;
		default:
			rc = bt_store_compact(a->bg->s, NULL, true);
			break;
		}
		if (rc != 0) {
			if (atomic_fetch_add(&a->bg->maint_errors, 1) < 3)
				diag("maintenance op %d: %s (%s)", k,
				    bt_strerror(rc), bt_error_detail());
		}
		atomic_fetch_add(&a->bg->maint_ops, 1);
	}
	return NULL;
}

static void
bg_verify(struct tstore *t, struct bg_test *bg, const char *label)
{
	struct bt_scan_options so = { 0 };
	struct bt_scan *sc = NULL;
	struct bt_row *r;
	char row[32], q[16], val[96];
	long cells = 0, bad = 0, written = 0;
	int rc;

	rc = bt_scan_open(t->s, "c", &so, &sc);
	while (rc == 0) {
		r = NULL;
		if ((rc = bt_scan_next(sc, &r)) != 0)
			break;
		for (size_t c = 0; c < r->cell_count; c++) {
			int w = -1;
			long i = -1;
			char v[96];

			snprintf(v, sizeof(v), "%.*s",
			    (int)(r->cells[c].value.size < 95 ?
			    r->cells[c].value.size : 95),
			    (const char *)r->cells[c].value.data);
			cells++;
			if (sscanf(v, "v%d-%ld-", &w, &i) != 2 || w < 0 ||
			    w >= BG_WRITERS || i < 0 ||
			    i >= atomic_load(&bg->progress[w])) {
				bad++;
				continue;
			}
			bg_cell(w, i, row, sizeof(row), q, sizeof(q), val,
			    sizeof(val));
			if (!bytes_eq(r->key, bts(row)) ||
			    !bytes_eq(r->cells[c].qualifier, bts(q)) ||
			    r->cells[c].ts != i + 1 || strcmp(v, val) != 0)
				bad++;
		}
		bt_row_free(r);
	}
	bt_scan_close(sc);
	is_int(rc, BT_DONE, "%s: the scan completes", label);
	for (int w = 0; w < BG_WRITERS; w++)
		written += atomic_load(&bg->progress[w]);
	is_int(cells, written, "%s: every write is there once", label);
	is_int(bad, 0, "%s: each with its row, column, stamp and value",
	    label);
}

static void
test_background(void)
{
	static const char *const fams[] = { "f", NULL };
	struct bt_options opts = { .memtable_size = 64 << 10 };
	struct bg_test *bg = calloc(1, sizeof(*bg));
	struct bg_arg args[BG_WRITERS + 2];
	pthread_t th[BG_WRITERS + 2];
	struct tstore t;
	int i;

	if (bg == NULL)
		tap_bail("out of memory");
	tstore_posix(&t, &opts);
	must(make_table(t.s, "c", fams));
	bg->s = t.s;
	atomic_store(&bg->writers_left, BG_WRITERS);
	for (i = 0; i < BG_WRITERS + 2; i++) {
		args[i].bg = bg;
		args[i].id = i;
		start_thread(&th[i], i < BG_WRITERS ? bg_writer :
		    i == BG_WRITERS ? bg_reader : bg_maintainer, &args[i]);
	}
	for (i = 0; i < BG_WRITERS + 2; i++)
		pthread_join(th[i], NULL);
	diag("background: %ld maintenance ops, %ld reads, %ld+%ld+%ld puts",
	    atomic_load(&bg->maint_ops), atomic_load(&bg->reads),
	    atomic_load(&bg->progress[0]), atomic_load(&bg->progress[1]),
	    atomic_load(&bg->progress[2]));
	is_int(atomic_load(&bg->write_errors), 0,
	    "background: no write failed while flushes and compactions ran");
	is_int(atomic_load(&bg->maint_errors), 0,
	    "background: no flush or compaction failed");
	ok(atomic_load(&bg->maint_ops) > 0,
	    "background: maintenance ran during the writes");
	is_int(atomic_load(&bg->read_errors), 0,
	    "background: no read failed");
	is_int(atomic_load(&bg->read_misses), 0,
	    "background: every acknowledged write was readable at once");
	bg_verify(&t, bg, "background");
	is_int(tstore_reopen(&t), 0, "background: clean close");
	bg_verify(&t, bg, "background, reopened");
	tstore_destroy(&t);
	free(bg);
}

/* ---- Everything at once while tablets split and compact ---- */

struct split_test {
	struct bt_store *s;
	atomic_int workers_left;
	atomic_long errors;
	atomic_long mixed;		/* a row seen with two mutations' cells */
	atomic_long disorder;		/* a scan's rows out of order or twice */
	atomic_long scans;
	atomic_long forced;		/* splits asked for that happened */
	atomic_long maint;
	atomic_long progress;		/* worker operations done */
	int64_t results[SPLIT_INCRS][SPLIT_INCR_EACH];
};

struct split_arg {
	struct split_test *st;
	int id;
};

/* Counts a failed call; the first few say which and why. */
static void
split_error(struct split_test *st, const char *what, int rc)
{
	if (atomic_fetch_add(&st->errors, 1) < 3)
		diag("splits: %s: %s (%s)", what, bt_strerror(rc),
		    bt_error_detail());
}

static void
split_counter_row(int k, char *row, size_t n)
{
	/* Spread among the 4-cell rows, so splits fall between counters. */
	snprintf(row, n, "r%04d", k * (SPLIT_ROWS / SPLIT_COUNTERS) + 7);
}

static void *
split_incr_thread(void *p)
{
	struct split_arg *a = p;
	struct split_test *st = a->st;
	char row[16];
	int rc;

	for (int i = 0; i < SPLIT_INCR_EACH; i++) {
		split_counter_row((i + a->id) % SPLIT_COUNTERS, row,
		    sizeof(row));
		st->results[a->id][i] = -1;
		if ((rc = bt_increment(st->s, "s", bts(row), "f", bts("n"),
		    1, NULL, &st->results[a->id][i], NULL)) != 0)
			split_error(st, "increment", rc);
		atomic_fetch_add(&st->progress, 1);
	}
	atomic_fetch_sub(&st->workers_left, 1);
	return NULL;
}

static void *
split_row_writer(void *p)
{
	struct split_arg *a = p;
	struct split_test *st = a->st;
	uint64_t rng = 0x5eedull + (uint64_t)a->id;
	struct bt_mutation m[4];
	char row[16], val[160];
	int rc;

	for (int i = 0; i < SPLIT_MUTS; i++) {
		snprintf(row, sizeof(row), "r%04d",
		    (int)(tap_rand(&rng) % SPLIT_ROWS));
		snprintf(val, sizeof(val), "w%d-%d-%0120d", a->id, i, i);
		for (int j = 0; j < 4; j++)
			m[j] = (struct bt_mutation){
				.kind = BT_PUT, .family = "f",
				.qualifier = bts(cell_names[j]),
				.ts = BT_TS_SERVER, .value = bts(val),
			};
		if ((rc = bt_mutate_row(st->s, "s", bts(row), m, 4, NULL,
		    NULL)) != 0)
			split_error(st, "mutate_row", rc);
		atomic_fetch_add(&st->progress, 1);
	}
	atomic_fetch_sub(&st->workers_left, 1);
	return NULL;
}

/* A row of the 4-cell kind is whole; a counter row has one cell "n". */
static bool
split_row_ok(const struct bt_row *r)
{
	if (r->cell_count == 1)
		return bytes_eq(r->cells[0].qualifier, bts("n"));
	if (r->cell_count == 5) {
		/* A counter row that a row writer also hit: c0..c3, n. */
		struct bt_row four = *r;

		four.cell_count = 4;
		return bytes_eq(r->cells[4].qualifier, bts("n")) &&
		    row_is_whole(&four);
	}
	return row_is_whole(r);
}

static void *
split_reader(void *p)
{
	struct split_arg *a = p;
	struct split_test *st = a->st;
	uint64_t rng = 0xfeedull + (uint64_t)a->id;
	struct bt_read_options newest = { .cells_per_column = 1 };
	long scanned_at = -SPLIT_SCAN_EVERY, read_at = -1;

	while (atomic_load(&st->workers_left) > 0) {
		struct bt_scan_options so = { .read = newest };
		struct bt_scan *sc = NULL;
		struct bt_row *r;
		char row[16], last[16] = "";
		int rc;

		/* At most one read per worker operation. */
		if (atomic_load(&st->progress) == read_at) {
			sched_yield();
			continue;
		}
		read_at = atomic_load(&st->progress);

		if (tap_rand(&rng) % 4 != 0 || atomic_load(&st->progress) <
		    scanned_at + SPLIT_SCAN_EVERY) {
			snprintf(row, sizeof(row), "r%04d",
			    (int)(tap_rand(&rng) % SPLIT_ROWS));
			r = NULL;
			rc = bt_read_row(st->s, "s", bts(row), &newest, &r);
			if (rc == 0 && !split_row_ok(r))
				atomic_fetch_add(&st->mixed, 1);
			else if (rc != 0 && rc != BT_NOTFOUND)
				split_error(st, "read_row", rc);
			bt_row_free(r);
			continue;
		}
		scanned_at = atomic_load(&st->progress);
		if ((rc = bt_scan_open(st->s, "s", &so, &sc)) != 0) {
			split_error(st, "scan_open", rc);
			continue;
		}
		while ((rc = bt_scan_next(sc, &r)) == 0) {
			snprintf(row, sizeof(row), "%.*s",
			    (int)(r->key.size < 15 ? r->key.size : 15),
			    (const char *)r->key.data);
			if (strcmp(row, last) <= 0)
				atomic_fetch_add(&st->disorder, 1);
			memcpy(last, row, sizeof(last));
			if (!split_row_ok(r))
				atomic_fetch_add(&st->mixed, 1);
			bt_row_free(r);
		}
		if (rc != BT_DONE)
			split_error(st, "scan_next", rc);
		bt_scan_close(sc);
		atomic_fetch_add(&st->scans, 1);
	}
	return NULL;
}

static void *
split_maintainer(void *p)
{
	static const struct bt_family_spec side = { .name = "g" };
	struct split_arg *a = p;
	struct split_test *st = a->st;
	uint64_t rng = 0x511full;
	char row[16];
	int k = 0, rc;
	long done_at;

	while (atomic_load(&st->workers_left) > 0 || k < 4) {
		done_at = atomic_load(&st->progress);
		switch (k++ % 4) {
		case 0:
			snprintf(row, sizeof(row), "r%04d",
			    (int)(tap_rand(&rng) % SPLIT_ROWS));
			rc = bt_table_split(st->s, "s", bts(row));
			if (rc == 0)
				atomic_fetch_add(&st->forced, 1);
			if (rc == -EEXIST)
				rc = 0;
			break;
		case 1:
			rc = bt_store_compact(st->s, "s", false);
			break;
		case 2:
			/* A schema change beside the writers, splits and
			 * compactions (a family they do not write). */
			if ((rc = bt_family_create(st->s, "s", &side)) == 0 &&
			    (rc = bt_family_set_gc(st->s, "s", "g",
			    "maxversions=1")) == 0)
				rc = bt_family_delete(st->s, "s", "g");
			break;
		default:
			rc = bt_store_compact(st->s, "s", k % 8 == 0);
			break;
		}
		if (rc != 0)
			split_error(st, "maintenance", rc);
		atomic_fetch_add(&st->maint, 1);
		while (atomic_load(&st->workers_left) > 0 &&
		    atomic_load(&st->progress) < done_at + SPLIT_MAINT_EVERY)
			nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
	return NULL;
}

/* Each counter holds what was added to it, and its results were
 * 1..count each once. */
static void
split_verify_counters(struct split_test *st, const char *label)
{
	long bad_sum = 0, bad_results = 0;

	for (int k = 0; k < SPLIT_COUNTERS; k++) {
		int64_t got[SPLIT_INCRS * SPLIT_INCR_EACH];
		int n = 0;
		char row[16], want[32], *text;

		for (int t = 0; t < SPLIT_INCRS; t++)
			for (int i = 0; i < SPLIT_INCR_EACH; i++)
				if ((i + t) % SPLIT_COUNTERS == k)
					got[n++] = st->results[t][i];
		qsort(got, (size_t)n, sizeof(*got), cmp_i64);
		for (int i = 0; i < n; i++)
			if (got[i] != i + 1)
				bad_results++;
		split_counter_row(k, row, sizeof(row));
		snprintf(want, sizeof(want), "%d\\x0a@", n);
		text = newest_text(st->s, "s", row, "f", "n");
		if (strncmp(text, want, strlen(want)) != 0) {
			diag("%s: counter %s holds %s, want %d", label, row,
			    text, n);
			bad_sum++;
		}
		free(text);
	}
	is_int(bad_sum, 0, "%s: %d threads x %d increments of 1 over %d "
	    "counters sum to %d", label, SPLIT_INCRS, SPLIT_INCR_EACH,
	    SPLIT_COUNTERS, SPLIT_INCRS * SPLIT_INCR_EACH);
	is_int(bad_results, 0, "%s: each counter's results are 1..n, each "
	    "once", label);
}

static void
test_splits_under_load(void)
{
	static const struct bt_family_spec fam = { .name = "f" };
	struct bt_options opts = { .memtable_size = 64 << 10 };
	struct split_test *st = calloc(1, sizeof(*st));
	enum { N = SPLIT_INCRS + SPLIT_WRITERS + 2 };
	struct split_arg args[N];
	pthread_t th[N];
	struct bt_tablet_info *tabs = NULL;
	struct bt_stats stats;
	struct tstore t;
	size_t ntabs = 0;

	if (st == NULL)
		tap_bail("out of memory");
	tstore_posix(&t, &opts);
	must(bt_table_create(t.s, "s", &fam, 1, NULL, 0, 32 << 10));
	st->s = t.s;
	atomic_store(&st->workers_left, SPLIT_INCRS + SPLIT_WRITERS);
	for (int i = 0; i < N; i++) {
		args[i].st = st;
		args[i].id = i < SPLIT_INCRS ? i : i - SPLIT_INCRS;
		start_thread(&th[i], i < SPLIT_INCRS ? split_incr_thread :
		    i < SPLIT_INCRS + SPLIT_WRITERS ? split_row_writer :
		    i == N - 2 ? split_reader : split_maintainer, &args[i]);
	}
	for (int i = 0; i < N; i++)
		pthread_join(th[i], NULL);
	bt_store_get_stats(t.s, &stats);
	must(bt_table_tablets(t.s, "s", &tabs, &ntabs));
	bt_tablets_free(tabs);
	diag("splits: %" PRIu64 " splits (%ld forced), %" PRIu64 " merges, "
	    "%zu tablets, %ld maintenance ops, %ld scans", stats.splits,
	    atomic_load(&st->forced), stats.merges, ntabs,
	    atomic_load(&st->maint), atomic_load(&st->scans));
	ok(stats.splits > (uint64_t)atomic_load(&st->forced) &&
	    atomic_load(&st->forced) > 0,
	    "splits: tablets split by size and by force during the load");
	is_int(atomic_load(&st->errors), 0,
	    "splits: no increment, write, read, scan, split, compaction or "
	    "schema change failed");
	is_int(atomic_load(&st->mixed), 0,
	    "splits: no read or scan saw a torn row");
	is_int(atomic_load(&st->disorder), 0,
	    "splits: every scan returned its rows once, in order");
	ok(atomic_load(&st->scans) > 0, "splits: scans ran during the load");
	split_verify_counters(st, "splits");
	is_int(tstore_reopen(&t), 0, "splits: clean close");
	st->s = t.s;
	split_verify_counters(st, "splits, reopened");
	tstore_destroy(&t);
	free(st);
}

/* ---- A table deleted under its writers ---- */

struct drop_test {
	struct bt_store *s;
	atomic_bool stop;
	atomic_long acked, gone, other;
};

static void *
drop_writer(void *p)
{
	struct drop_test *d = p;
	char row[32], value[512];
	long i = 0;
	int rc;

	memset(value, 'v', sizeof(value));
	while (!atomic_load(&d->stop)) {
		snprintf(row, sizeof(row), "r%ld", i++);
		rc = put_cell(d->s, "d", bts(row), "f", bts("q"), 1,
		    btb(value, sizeof(value)));
		if (rc == 0)
			atomic_fetch_add(&d->acked, 1);
		else if (rc == -ENOENT)
			atomic_fetch_add(&d->gone, 1);
		else
			atomic_fetch_add(&d->other, 1);
	}
	return NULL;
}

static void
watchdog_fire(int sig)
{
	(void)sig;
	static const char msg[] = "Bail out! the drop test hung\n";

	(void)write(1, msg, sizeof(msg) - 1);
	_exit(1);
}

/*
 * Writers that still hold a table when it is deleted fail with ENOENT
 * from then on.  They used to go on filling the deleted table's
 * memtables, which no flush takes, until the memtable budget was full;
 * then every writer of the store waited for room for ever.  Each round
 * deletes the table under four writers with a small budget; a hang is
 * caught by an alarm.
 */
static void
test_drop_under_writers(void)
{
	static const char *const fams[] = { "f", NULL };
	struct bt_options opts = { .memtable_size = 256 << 10 };
	struct timespec pause = { 0, 20 * 1000000 };
	struct drop_test d;
	pthread_t th[WRITERS];
	struct tstore t;
	int rounds = getenv("TEST_SMALL") ? 4 : 12, round, i;
	long acked = 0, other = 0;

	signal(SIGALRM, watchdog_fire);
	alarm(120);
	tstore_fault(&t, &opts);
	memset(&d, 0, sizeof(d));
	d.s = t.s;
	for (round = 0; round < rounds; round++) {
		must(make_table(t.s, "d", fams));
		atomic_store(&d.stop, false);
		for (i = 0; i < WRITERS; i++)
			start_thread(&th[i], drop_writer, &d);
		nanosleep(&pause, NULL);
		must(bt_table_delete(t.s, "d"));
		nanosleep(&pause, NULL);
		atomic_store(&d.stop, true);
		for (i = 0; i < WRITERS; i++)
			pthread_join(th[i], NULL);
	}
	acked = atomic_load(&d.acked);
	other = atomic_load(&d.other);
	diag("%ld writes acknowledged, %ld refused as deleted", acked,
	    (long)atomic_load(&d.gone));
	is_int(other, 0, "drop: writers saw no error but ENOENT");
	ok(atomic_load(&d.gone) > 0,
	    "drop: writers of the deleted table were refused (ENOENT)");
	must(make_table(t.s, "e", fams));
	is_int(put_str(t.s, "e", "r", "f", "q", 1, "v"), 0,
	    "drop: the store takes writes afterwards");
	is_int(bt_store_flush(t.s), 0, "drop: and flushes");
	alarm(0);
	tstore_destroy(&t);
}

int
main(void)
{
	test_row_atomicity();
	test_counter();
	test_background();
	test_splits_under_load();
	test_drop_under_writers();
	return tap_done();
}
