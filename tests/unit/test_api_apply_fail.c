/*
 * test_api_apply_fail.c - a row mutation that memory cannot hold fails
 * before its log record is written, whole, and leaves the store taking
 * writes, in the in-memory fault env.
 *
 * Proves, for an allocation failure at each point of a put of two large
 * cells (each needs more than the memtable arena's largest block, so
 * that the first could be in the memtable when the second fails, were
 * the apply not reserved before the log append): the put succeeds or
 * fails whole to its caller; after a failure the running store shows
 * neither cell, and a later put is accepted (the store does not refuse
 * writes: the statistics' writes_refused stays 0); after a close and
 * reopen, with or without a flush asked for before the close, the failed
 * put is absent, not replayed (nothing of it reached the log), and the
 * cell written before it and the later put, acknowledged and only in the
 * memtable and the log, are there.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/tabletfs.h"
#include "util/alloc.h"
#include "util/env.h"
#include "api_util.h"

#define CELL		(96u << 10)	/* over the arena's largest block */
#define MAX_POINTS	400

/* The cells of row r besides "base", as a bit set: 1 for a, 2 for b,
 * 4 for later; -1 when the row or its base cell cannot be read. */
static int
row_parts(struct bt_store *s)
{
	struct bt_row *r = NULL;
	int parts = 0;
	bool base = false;

	if (bt_read_row(s, "t", bts("r"), NULL, &r) != 0)
		return -1;
	for (size_t i = 0; i < r->cell_count; i++) {
		struct bt_bytes q = r->cells[i].qualifier;

		if (bytes_eq(q, bts("base")))
			base = true;
		else if (bytes_eq(q, bts("a")))
			parts |= 1;
		else if (bytes_eq(q, bts("b")))
			parts |= 2;
		else if (bytes_eq(q, bts("later")))
			parts |= 4;
	}
	bt_row_free(r);
	return base ? parts : -1;
}

int
main(void)
{
	static const char *const fams[] = { "f", NULL };
	char *a = xmalloc(CELL), *b = xmalloc(CELL);
	int failed = 0, half_live = 0, reopened_wrong = 0;
	int refused = 0, later_wrong = 0, status_wrong = 0;
	bool succeeded = false;

	memset(a, 'a', CELL);
	memset(b, 'b', CELL);
	for (long i = 2; i <= 2 * MAX_POINTS && !succeeded; i++) {
		long n = i / 2;
		bool flush = i % 2 == 1;
		struct bt_mutation m[2] = {
			{ .kind = BT_PUT, .family = "f", .qualifier = bts("a"),
			    .ts = BT_TS_SERVER, .value = btb(a, CELL) },
			{ .kind = BT_PUT, .family = "f", .qualifier = bts("b"),
			    .ts = BT_TS_SERVER, .value = btb(b, CELL) },
		};
		struct tstore t;
		struct bt_stats st;
		int rc, parts, later_rc;

		tstore_fault(&t, NULL);
		if (make_table(t.s, "t", fams) != 0 ||
		    put_str(t.s, "t", "r", "f", "base", BT_TS_SERVER,
		    "old") != 0)
			tap_bail("cannot set up the table");
		bt_alloc_fail_after(n);
		rc = bt_mutate_row(t.s, "t", bts("r"), m, 2, NULL, NULL);
		bt_alloc_fail_after(0);
		parts = row_parts(t.s);
		if (rc == 0) {
			succeeded = true;
			ok(parts == 3, "a put that succeeds (allocation %ld "
			    "failing) shows both cells (got %d)", n, parts);
		} else {
			failed++;
			if (parts != 0) {
				half_live++;
				diag("allocation %ld: the put failed (%s) but "
				    "the store shows cells %d", n,
				    bt_strerror(rc), parts);
			}
			later_rc = put_str(t.s, "t", "r", "f", "later",
			    BT_TS_SERVER, "x");
			refused += later_rc != 0;
			bt_store_get_stats(t.s, &st);
			if ((st.writes_refused < 0) != (later_rc != 0)) {
				status_wrong++;
				diag("allocation %ld: writes_refused %d, a "
				    "later put %d", n, st.writes_refused,
				    later_rc);
			}
			if (flush)
				(void)bt_store_flush(t.s);
			tstore_reopen(&t);
			bt_store_get_stats(t.s, &st);
			status_wrong += st.writes_refused != 0;
			parts = row_parts(t.s);
			bool later = parts >= 0 && (parts & 4) != 0;

			if (parts >= 0 && later != (later_rc == 0)) {
				later_wrong++;
				diag("allocation %ld: a later put that %s is "
				    "%s after the reopen", n, later_rc == 0 ?
				    "succeeded" : "failed", later ? "there" :
				    "missing");
			}
			if (parts > 0)
				parts &= 3;
			if (parts != 0) {	/* replayed, or base lost */
				reopened_wrong++;
				diag("allocation %ld: after a reopen (%s a "
				    "flush) the row holds cells %d", n,
				    flush ? "with" : "without", parts);
			}
		}
		tstore_destroy(&t);
	}
	ok(succeeded, "the put succeeds once allocations stop failing "
	    "(after %d failures)", failed);
	ok(half_live == 0, "no failed put shows a cell in the running store "
	    "(%d did)", half_live);
	ok(reopened_wrong == 0, "no failed put is there after a reopen, whole "
	    "or in half, and none loses the cell before it (%d did)",
	    reopened_wrong);
	ok(later_wrong == 0 && refused == 0, "a put after the failure is "
	    "accepted and there after the reopen (%d were refused, %d "
	    "wrong)", refused, later_wrong);
	ok(status_wrong == 0, "the statistics never say that writes are "
	    "refused (%d wrong)", status_wrong);
	free(a);
	free(b);
	return tap_done();
}
