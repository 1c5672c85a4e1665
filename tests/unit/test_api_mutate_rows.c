/*
 * test_api_mutate_rows.c - bt_mutate_rows(): a batch of row mutations.
 *
 * Proves: each row's result is reported on its own, and a row that fails
 * its checks (unknown family, a qualifier too long, no mutations, an
 * empty key) fails alone, wholly, while the others are applied; rows in
 * different tablets are applied, and a row given twice is applied in
 * batch order; server stamps strictly increase along the batch; the
 * batch is one log append and one sync (the env's and the store's
 * counters), where as many single-row calls take one each; a failed
 * append, and a failed sync, fail every row with that error and leave
 * none visible; what was acknowledged survives a reopen; and batches on
 * overlapping rows from several threads, beside single-row writers,
 * neither deadlock nor lose a cell.  A delete in a batch leaves the
 * versions that maxversions condemned condemned, also when the same row
 * comes twice and the first occurrence's put condemns what the second's
 * delete would bring back.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/tabletfs.h"
#include "util/env.h"
#include "api_util.h"

#define BATCH		100
#define THREADS		4
#define ROUNDS		40
#define ROWS_PER_BATCH	16
#define SHARED_ROWS	24

static const char *const families[] = { "f", "g", NULL };

static struct bt_mutation
put(const char *family, const char *qualifier, int64_t ts,
    const char *value)
{
	return (struct bt_mutation){ .kind = BT_PUT, .family = family,
	    .qualifier = bts(qualifier), .ts = ts, .value = bts(value) };
}

static void
make_split_table(struct bt_store *s)
{
	struct bt_family_spec fs[] = { { .name = "f" }, { .name = "g" } };
	struct bt_bytes split = bts("m");

	must(bt_table_create(s, "t", fs, 2, &split, 1, 0));
}

/* Good rows among bad ones: each bad one fails alone and wholly. */
static void
test_mixed(void)
{
	static char longq[BT_MAX_QUALIFIER + 2];
	struct bt_mutation a[] = { put("f", "x", 1, "a1"),
	    put("g", "y", 2, "a2") };
	struct bt_mutation bad_family[] = { put("f", "x", 1, "b"),
	    put("nosuch", "x", 1, "b") };
	struct bt_mutation c[] = { put("f", "x", 3, "c") };
	struct bt_mutation bad_qualifier[] = { put("f", "x", 1, "d"),
	    { .kind = BT_PUT, .family = "f", .ts = 1, .value = bts("d") } };
	struct bt_mutation z[] = { put("g", "z", 4, "z") };
	struct bt_row_mutation rows[] = {
		{ bts("a"), a, 2 },
		{ bts("b"), bad_family, 2 },
		{ bts("c"), c, 1 },
		{ bts("d"), bad_qualifier, 2 },
		{ bts("e"), c, 0 },
		{ bts(""), c, 1 },
		{ bts("z"), z, 1 },
	};
	int results[7];
	struct tstore t;
	int rc;

	memset(longq, 'q', sizeof(longq) - 1);
	bad_qualifier[1].qualifier = btb(longq, BT_MAX_QUALIFIER + 1);
	tstore_fault(&t, NULL);
	make_split_table(t.s);
	rc = bt_mutate_rows(t.s, "t", rows, 7, NULL, results);
	is_int(rc, -ENOENT, "the call returns the first failed row's error");
	is_int(results[0], 0, "row a applied");
	is_int(results[1], -ENOENT, "row b: unknown family, -ENOENT");
	is_int(results[2], 0, "row c applied");
	is_int(results[3], -EINVAL, "row d: qualifier too long, -EINVAL");
	is_int(results[4], -EINVAL, "row e: no mutations, -EINVAL");
	is_int(results[5], -EINVAL, "an empty row key, -EINVAL");
	is_int(results[6], 0, "row z (another tablet) applied");
	is_text(read_text_str(t.s, "t", "a", NULL), "f:x@1=a1\ng:y@2=a2\n",
	    "row a holds both its cells");
	is_text(read_text_str(t.s, "t", "b", NULL), "NOTFOUND",
	    "row b holds none of its cells (its good one neither)");
	is_text(read_text_str(t.s, "t", "c", NULL), "f:x@3=c\n", "row c");
	is_text(read_text_str(t.s, "t", "d", NULL), "NOTFOUND",
	    "row d holds none of its cells");
	is_text(read_text_str(t.s, "t", "z", NULL), "g:z@4=z\n", "row z");

	memset(results, 1, sizeof(results));
	is_int(bt_mutate_rows(t.s, "nosuch", rows, 3, NULL, results), -ENOENT,
	    "an unknown table: -ENOENT");
	ok(results[0] == -ENOENT && results[1] == -ENOENT &&
	    results[2] == -ENOENT, "every row of it fails with -ENOENT");
	is_int(bt_mutate_rows(t.s, "t", rows, 0, NULL, results), -EINVAL,
	    "an empty batch: -EINVAL");
	is_int(bt_mutate_rows(t.s, "t", rows + 2, 1, NULL, NULL), 0,
	    "results may be NULL");
	tstore_destroy(&t);
}

/* Rows given twice apply in order; server stamps increase along the
 * batch; the batch survives a reopen. */
static void
test_order_and_stamps(void)
{
	struct bt_mutation p1[] = { put("f", "q", BT_TS_SERVER, "one") };
	struct bt_mutation del[] = { { .kind = BT_DELETE_ROW } };
	struct bt_mutation p2[] = { put("f", "q", 7, "seven") };
	struct bt_mutation s1[] = { put("f", "s", BT_TS_SERVER, "s") };
	struct bt_row_mutation rows[] = {
		{ bts("r"), p1, 1 },
		{ bts("r"), del, 1 },
		{ bts("r"), p2, 1 },
		{ bts("s1"), s1, 1 },
		{ bts("s2"), s1, 1 },
		{ bts("s3"), s1, 1 },
	};
	int64_t ts[3];
	int results[6];
	struct tstore t;
	char *v;
	size_t len;

	tstore_fault(&t, NULL);
	must(make_table(t.s, "t", families));
	is_int(bt_mutate_rows(t.s, "t", rows, 6, NULL, results), 0,
	    "the batch is applied");
	is_text(read_text_str(t.s, "t", "r", NULL), "f:q@7=seven\n",
	    "put, delete row, put of one row apply in batch order");
	for (int i = 0; i < 3; i++) {
		char row[4];

		snprintf(row, sizeof(row), "s%d", i + 1);
		ts[i] = -1;
		if (get_newest(t.s, "t", bts(row), "f", bts("s"), &v, &len,
		    &ts[i]) == 0)
			free(v);
	}
	ok(ts[0] > 0 && ts[0] < ts[1] && ts[1] < ts[2],
	    "server stamps strictly increase along the batch (%" PRId64
	    " %" PRId64 " %" PRId64 ")", ts[0], ts[1], ts[2]);
	is_int(tstore_reopen(&t), 0, "reopen");
	is_text(read_text_str(t.s, "t", "r", NULL), "f:q@7=seven\n",
	    "after a reopen, the same");
	tstore_destroy(&t);
}

/* Deletes in a batch do not bring back what maxversions condemned. */
static void
test_condemned(void)
{
	static const char *const fams[] = { "two=maxversions=2", NULL };
	struct bt_mutation del30[] = { { .kind = BT_DELETE_VERSION,
	    .family = "two", .qualifier = bts("q"), .ts = 30 } };
	struct bt_mutation put30[] = { put("two", "q", 30, "v30") };
	struct bt_mutation other[] = { put("two", "q", 1, "o") };
	struct bt_row_mutation once[] = {
		{ bts("a"), del30, 1 }, { bts("b"), other, 1 },
	};
	struct bt_row_mutation twice[] = {
		{ bts("c"), put30, 1 }, { bts("c"), del30, 1 },
	};
	int results[2];
	struct tstore t;

	tstore_fault(&t, NULL);
	must(make_table(t.s, "t", fams));
	for (int ts = 10; ts <= 30; ts += 10) {
		char v[8];

		snprintf(v, sizeof(v), "v%d", ts);
		must(put_str(t.s, "t", "a", "two", "q", ts, v));
		if (ts < 30)
			must(put_str(t.s, "t", "c", "two", "q", ts, v));
	}
	is_int(bt_mutate_rows(t.s, "t", once, 2, NULL, results), 0,
	    "a batch deleting the newest version");
	is_text(read_text_str(t.s, "t", "a", NULL), "two:q@20=v20\n",
	    "v10, condemned by v30, stays condemned when a batch deletes v30");
	is_int(bt_mutate_rows(t.s, "t", twice, 2, NULL, results), 0,
	    "a batch putting v30 and then deleting it, in one row");
	is_text(read_text_str(t.s, "t", "c", NULL),
	    "two:q@20=v20\n", "v10, condemned by the batch's own v30, stays "
	    "condemned when the batch deletes v30");
	is_int(tstore_reopen(&t), 0, "reopen");
	is_text(read_text_str(t.s, "t", "a", NULL), "two:q@20=v20\n",
	    "after a reopen, the same (a)");
	is_text(read_text_str(t.s, "t", "c", NULL), "two:q@20=v20\n",
	    "after a reopen, the same (c)");
	tstore_destroy(&t);
}

/* One append and one sync for a synced batch of BATCH rows. */
static void
test_one_append_one_sync(void)
{
	struct bt_row_mutation rows[BATCH];
	struct bt_mutation m[BATCH];
	char keys[BATCH][16];
	struct env_fault_stats e0, e1, e2;
	struct bt_write_options sync = { .sync = true };
	struct bt_stats s0, s1, s2;
	int results[BATCH];
	struct tstore t;

	tstore_fault(&t, NULL);
	must(make_table(t.s, "t", families));
	for (int i = 0; i < BATCH; i++) {
		snprintf(keys[i], sizeof(keys[i]), "row%03d", i);
		m[i] = put("f", "q", 1, "v");
		rows[i] = (struct bt_row_mutation){ bts(keys[i]), &m[i], 1 };
	}
	bt_store_get_stats(t.s, &s0);
	if (t.env != NULL)
		env_fault_get_stats(t.env, &e0);
	is_int(bt_mutate_rows(t.s, "t", rows, BATCH, &sync, results), 0,
	    "a synced batch of %d rows", BATCH);
	bt_store_get_stats(t.s, &s1);
	if (t.env != NULL)
		env_fault_get_stats(t.env, &e1);
	is_int((int)(s1.log_batches - s0.log_batches), 1,
	    "the batch is one log append");
	is_int((int)(s1.log_syncs - s0.log_syncs), 1,
	    "and one log sync");
	is_int((int)(s1.mutations - s0.mutations), BATCH,
	    "of %d mutations", BATCH);
	if (t.env != NULL) {
		is_int((int)(e1.file_syncs - e0.file_syncs), 1,
		    "the env saw one file sync");
		ok(e1.appends - e0.appends <= 2, "and %" PRIu64 " writes "
		    "(the records, and zeros written ahead at most)",
		    e1.appends - e0.appends);
	}
	for (int i = 0; i < BATCH; i++)
		if (bt_mutate_row(t.s, "t", rows[i].row, rows[i].muts, 1,
		    &sync, NULL) != 0)
			tap_bail("bt_mutate_row");
	bt_store_get_stats(t.s, &s2);
	diag("one by one: %" PRIu64 " appends, %" PRIu64 " syncs",
	    s2.log_batches - s1.log_batches, s2.log_syncs - s1.log_syncs);
	is_int((int)(s2.log_syncs - s1.log_syncs), BATCH,
	    "the same rows one call each take %d syncs", BATCH);
	if (t.env != NULL) {
		env_fault_get_stats(t.env, &e2);
		ok(e2.file_syncs - e1.file_syncs == BATCH,
		    "(the env saw %" PRIu64 ")", e2.file_syncs -
		    e1.file_syncs);
	}
	tstore_destroy(&t);
}

/* A failed append, then a failed sync: every row fails, none visible. */
static void
test_log_failure(void)
{
	struct bt_mutation m[] = { put("f", "q", 5, "v") };
	struct bt_mutation bad[] = { put("nosuch", "q", 5, "v") };
	struct bt_row_mutation rows[] = {
		{ bts("a"), m, 1 }, { bts("b"), bad, 1 }, { bts("n"), m, 1 },
		{ bts("z"), m, 1 },
	};
	struct bt_write_options sync = { .sync = true };
	struct bt_stats st;
	int results[4];
	struct tstore t;

	tstore_fault(&t, NULL);
	if (tstore_cell_skip(&t, "injects faults into the store's env"))
		return;
	make_split_table(t.s);
	env_fault_fail_after(t.env, ENV_FAULT_APPEND, 1, -EIO, false);
	is_int(bt_mutate_rows(t.s, "t", rows, 4, NULL, results), -ENOENT,
	    "a batch whose log append fails");
	ok(results[0] == -EIO && results[2] == -EIO && results[3] == -EIO,
	    "every row of the append fails with its error (%d %d %d)",
	    results[0], results[2], results[3]);
	is_int(results[1], -ENOENT, "the row that failed its check keeps "
	    "its own error");
	is_text(scan_keys(t.s, "t", NULL), "", "no row is visible");
	is_int(bt_mutate_rows(t.s, "t", rows, 1, NULL, results), 0,
	    "the store takes writes again");
	is_text(scan_keys(t.s, "t", NULL), "[a]\n", "and shows them");

	env_fault_fail_after(t.env, ENV_FAULT_SYNC, 1, -EIO, false);
	is_int(bt_mutate_rows(t.s, "t", rows + 2, 2, &sync, results), -EIO,
	    "a synced batch whose sync fails: -EIO");
	ok(results[0] == -EIO && results[1] == -EIO,
	    "both rows fail with it");
	is_text(scan_keys(t.s, "t", NULL), "[a]\n",
	    "neither row is visible");
	bt_store_get_stats(t.s, &st);
	ok(st.writes_refused < 0, "the store refuses writes after a failed "
	    "sync (%d)", st.writes_refused);
	env_fault_fail_after(t.env, ENV_FAULT_SYNC, 0, 0, false);
	tstore_destroy(&t);
}

struct racer {
	struct bt_store *s;
	int id;
	int failures;
};

/* Batches over rows shared with every other thread, in a shuffled
 * order, and single-row puts among them. */
static void *
racer_main(void *arg)
{
	struct racer *r = arg;
	struct bt_row_mutation rows[ROWS_PER_BATCH];
	struct bt_mutation m[ROWS_PER_BATCH];
	char keys[ROWS_PER_BATCH][16], qual[ROUNDS][16];
	uint64_t rng = 0x9e3779b97f4a7c15ull * (uint64_t)(r->id + 1);
	int results[ROWS_PER_BATCH];

	for (int round = 0; round < ROUNDS; round++) {
		snprintf(qual[round], sizeof(qual[round]), "t%d-%d", r->id,
		    round);
		for (int i = 0; i < ROWS_PER_BATCH; i++) {
			snprintf(keys[i], sizeof(keys[i]), "shared%02d",
			    (int)(tap_rand(&rng) % SHARED_ROWS));
			m[i] = put("f", qual[round], BT_TS_SERVER, "v");
			rows[i] = (struct bt_row_mutation){ bts(keys[i]),
			    &m[i], 1 };
		}
		if (bt_mutate_rows(r->s, "t", rows, ROWS_PER_BATCH,
		    &(struct bt_write_options){ .sync = round % 2 == 0 },
		    results) != 0)
			r->failures++;
		if (bt_mutate_row(r->s, "t", rows[0].row, &m[0], 1, NULL,
		    NULL) != 0)
			r->failures++;
	}
	return NULL;
}

static void
test_concurrent(void)
{
	struct racer rs[THREADS];
	pthread_t tids[THREADS];
	struct bt_scan *sc;
	struct bt_row *row;
	struct tstore t;
	size_t cells = 0;
	int failures = 0;

	tstore_fault(&t, NULL);
	must(make_table(t.s, "t", families));
	for (int k = 0; k < THREADS; k++) {
		rs[k] = (struct racer){ t.s, k, 0 };
		if (pthread_create(&tids[k], NULL, racer_main, &rs[k]) != 0)
			tap_bail("pthread_create");
	}
	for (int k = 0; k < THREADS; k++) {
		pthread_join(tids[k], NULL);
		failures += rs[k].failures;
	}
	is_int(failures, 0, "%d threads of batches and single puts on "
	    "shared rows: no failure, no deadlock", THREADS);
	must(bt_scan_open(t.s, "t", NULL, &sc));
	while (bt_scan_next(sc, &row) == 0) {
		cells += row->cell_count;
		bt_row_free(row);
	}
	bt_scan_close(sc);
	/* Every put has a server stamp of its own (strictly increasing),
	 * so each is a version, a row named twice in a batch too. */
	is_int((int)cells, THREADS * ROUNDS * (ROWS_PER_BATCH + 1),
	    "every put is a version of its own");
	tstore_destroy(&t);
}

int
main(void)
{
	test_mixed();
	test_order_and_stamps();
	test_condemned();
	test_one_append_one_sync();
	test_log_failure();
	test_concurrent();
	return tap_done();
}
