/*
 * test_api_memory.c - the memtable budget and writer backpressure through
 * the public API, in the in-memory fault env.
 *
 * Proves: the active and frozen memtables together stay within
 * memtable_size (plus what writers already past the check add) while
 * writers outrun a slow disk, and the writers wait for flushes and
 * resume, every acknowledged write readable; a writer that waits for a
 * flush that fails (a full disk) gets the error instead of hanging, and
 * writes resume, losing nothing acknowledged, once the disk has room,
 * even when the first flush after that fails once more; rows
 * written during a long major compaction, whose memtables are flushed in
 * its middle so that writers need not wait for its end, are all there
 * after it and after a reopen.  Memory that flushes free is handed back
 * to the system when a flush is waited for, not after every flush while
 * writers are about to take it again.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/tabletfs.h"
#include "util/env.h"
#include "api_util.h"

#define BUDGET		(512u << 10)
#define VALUE		1000
#define WRITERS		4
#define PER_WRITER	1500
#define HANG_SECONDS	30

static void
row_value(int thread, int i, char *row, size_t rsize, char *val)
{
	snprintf(row, rsize, "w%d-%06d", thread, i);
	for (int k = 0; k < VALUE; k++)
		val[k] = (char)('a' + (i * 7 + k * 13 + thread) % 26);
}

/* Whether row holds exactly the value row_value() gives. */
static bool
row_checks(struct bt_store *s, int thread, int i)
{
	char row[32], want[VALUE];
	struct bt_row *r = NULL;
	bool good;

	row_value(thread, i, row, sizeof(row), want);
	if (bt_read_row(s, "t", bts(row), NULL, &r) != 0)
		return false;
	good = r->cell_count == 1 && bytes_eq(r->cells[0].value,
	    btb(want, VALUE));
	bt_row_free(r);
	return good;
}

struct writer {
	struct bt_store *s;
	int thread;
	int count;
	int acked;		/* rows [0, acked) returned 0 */
	int rc;			/* the first failure, or 0 */
	char detail[256];	/* and its detail */
	atomic_bool done;
};

static void *
writer_main(void *arg)
{
	struct writer *w = arg;
	char row[32], val[VALUE];

	for (int i = 0; i < w->count; i++) {
		struct bt_mutation m = { .kind = BT_PUT, .family = "f",
		    .ts = BT_TS_SERVER };

		row_value(w->thread, i, row, sizeof(row), val);
		m.value = btb(val, VALUE);
		if ((w->rc = bt_mutate_row(w->s, "t", bts(row), &m, 1, NULL,
		    NULL)) != 0) {
			snprintf(w->detail, sizeof(w->detail), "%s",
			    bt_error_detail());
			break;
		}
		w->acked = i + 1;
	}
	atomic_store(&w->done, true);
	return NULL;
}

/* Join the writer, or report that it hangs (and leave it). */
static bool
writer_join(pthread_t th, struct writer *w)
{
	for (int i = 0; i < HANG_SECONDS * 100; i++) {
		struct timespec tick = { 0, 10000000 };

		if (atomic_load(&w->done)) {
			pthread_join(th, NULL);
			return true;
		}
		nanosleep(&tick, NULL);
	}
	return false;
}

/* Rows [0, w->acked) of every writer that check; their number. */
static long
rows_checking(struct bt_store *s, const struct writer *ws, int n)
{
	long good = 0;

	for (int k = 0; k < n; k++)
		for (int i = 0; i < ws[k].acked; i++)
			good += row_checks(s, ws[k].thread, i);
	return good;
}

static long
rows_acked(const struct writer *ws, int n)
{
	long total = 0;

	for (int k = 0; k < n; k++)
		total += ws[k].acked;
	return total;
}

/*
 * The writers kept the background busy, so the memory each flush freed
 * was left to their next memtable; a flush waited for hands it back.
 */
static void
test_trims(struct tstore *t, const struct bt_stats *during)
{
	struct writer one = { .s = t->s, .thread = WRITERS, .count = 1 };
	struct bt_stats st;

	/* At most one: a writer descheduled for a second lets the timer
	 * start a round. */
	ok(during->flushes >= 8 && during->memory_trims <= 1,
	    "while writers wrote, freed memory was not handed back after "
	    "the flushes (%" PRIu64 " trims, %" PRIu64 " flushes)",
	    during->memory_trims, during->flushes);
	writer_main(&one);
	is_int(one.rc, 0, "one more row, for the flush to write");
	is_int(bt_store_flush(t->s), 0, "flush once the writers are done");
	bt_store_get_stats(t->s, &st);
	ok(st.memory_trims > during->memory_trims, "the flush waited for "
	    "handed memory back (%" PRIu64 " trims)", st.memory_trims);
}

/*
 * Writers outrun a disk whose every sync takes 3 ms: the memtables stay
 * within the budget, plus one mutation per writer (each may pass the
 * check before the others' writes land) and an arena block; the writers
 * wait, and all finish.
 */
static void
test_budget_holds(void)
{
	struct bt_options opts = { .memtable_size = BUDGET };
	struct writer ws[WRITERS];
	pthread_t th[WRITERS];
	struct bt_stats st;
	struct tstore t;
	uint64_t slack = WRITERS * (VALUE + 256) + (64u << 10);
	bool all_joined = true;

	tstore_fault(&t, &opts);
	must(make_table(t.s, "t", (const char *[]){ "f", NULL }));
	env_fault_set_sync_delay(t.env, 3000);
	for (int k = 0; k < WRITERS; k++) {
		ws[k] = (struct writer){ .s = t.s, .thread = k,
		    .count = PER_WRITER };
		pthread_create(&th[k], NULL, writer_main, &ws[k]);
	}
	for (int k = 0; k < WRITERS; k++)
		all_joined &= writer_join(th[k], &ws[k]);
	if (!all_joined)
		tap_bail("a writer hangs");
	env_fault_set_sync_delay(t.env, 0);
	for (int k = 0; k < WRITERS; k++)
		if (ws[k].rc != 0)
			diag("writer %d: %s (%s)", k, bt_strerror(ws[k].rc),
			    ws[k].detail);
	is_int(rows_acked(ws, WRITERS), WRITERS * PER_WRITER,
	    "every write returned 0 (the writers resumed after waiting)");
	bt_store_get_stats(t.s, &st);
	diag("budget %u, peak %" PRIu64 ", waits %" PRIu64 ", flushes %"
	    PRIu64, BUDGET, st.memtable_peak_bytes, st.write_waits,
	    st.flushes);
	ok(st.write_waits > 0, "writers waited for flushes (%" PRIu64 ")",
	    st.write_waits);
	ok(st.memtable_peak_bytes > BUDGET / 2, "the memtables filled up "
	    "(peak %" PRIu64 ")", st.memtable_peak_bytes);
	ok(st.memtable_peak_bytes <= BUDGET + slack, "active and frozen "
	    "memtables stayed within the budget (peak %" PRIu64 " <= %"
	    PRIu64 ")", st.memtable_peak_bytes, BUDGET + slack);
	is_int(rows_checking(t.s, ws, WRITERS), WRITERS * PER_WRITER,
	    "every acknowledged row reads back exactly");
	test_trims(&t, &st);
	tstore_destroy(&t);
}

/*
 * The disk fills (every create of a file fails with -ENOSPC, so no flush
 * can write its SSTable; the open log segment still takes appends): the
 * writer, once the budget is full, waits, then gets -ENOSPC instead of
 * hanging; with room again, writes resume, and nothing acknowledged is
 * lost, before or after a reopen.
 */
static void
test_failing_flush(void)
{
	struct bt_options opts = { .memtable_size = BUDGET };
	struct writer w = { .thread = 0, .count = 20 * PER_WRITER };
	struct writer again = { .thread = 1, .count = 400 };
	struct bt_stats st;
	struct tstore t;
	pthread_t th;

	tstore_fault(&t, &opts);
	must(make_table(t.s, "t", (const char *[]){ "f", NULL }));
	w.s = t.s;
	env_fault_fail_after(t.env, ENV_FAULT_OPEN, 1, -ENOSPC, true);
	pthread_create(&th, NULL, writer_main, &w);
	if (!writer_join(th, &w)) {
		ok(false, "the writer hangs on a flush that keeps failing");
		tap_bail("cannot go on with a hung writer");
	}
	is_int(w.rc, -ENOSPC, "the write gets the flush's -ENOSPC (%s)",
	    w.detail);
	bt_store_get_stats(t.s, &st);
	ok(st.write_waits > 0, "it waited for the flush before failing");
	ok(w.acked > 0 && (uint64_t)w.acked * VALUE <= BUDGET + (64u << 10),
	    "it failed once the budget was full, not earlier or later (%d "
	    "rows acknowledged)", w.acked);

	/* The budget is still full and its flush has failed.  The disk has
	 * room again except for one more file create: the round that the
	 * next writer wakes fails its flush once, retries it after its
	 * compactions, and the writer goes on (it used to get that round's
	 * first error). */
	env_fault_fail_after(t.env, ENV_FAULT_OPEN, 1, -ENOSPC, false);
	again.s = t.s;
	pthread_create(&th, NULL, writer_main, &again);
	if (!writer_join(th, &again))
		tap_bail("the writer hangs after the disk has room again");
	is_int(again.acked, again.count, "with room again, writes resume, "
	    "a round's flush failing once on the way (rc %d: %s)", again.rc,
	    again.detail);
	is_int(rows_checking(t.s, &w, 1), w.acked, "every row acknowledged "
	    "before the failure is there");
	is_int(rows_checking(t.s, &again, 1), again.acked, "and every row "
	    "written after it");
	is_int(tstore_reopen(&t), 0, "the store closes cleanly");
	is_int(rows_checking(t.s, &w, 1) + rows_checking(t.s, &again, 1),
	    w.acked + again.acked, "after the reopen too");
	tstore_destroy(&t);
}

/*
 * A flush whose first try fails (one file create refused: a moment of
 * full disk) and whose retry in the same round succeeds is no error of
 * bt_store_flush(): the memtables are flushed and the rows are there.
 */
static void
test_flush_retried(void)
{
	struct bt_options opts = { .memtable_size = BUDGET };
	struct writer w = { .thread = 0, .count = 100 };
	struct bt_stats before, after;
	struct tstore t;
	int rc;

	tstore_fault(&t, &opts);
	must(make_table(t.s, "t", (const char *[]){ "f", NULL }));
	w.s = t.s;
	writer_main(&w);
	is_int(w.acked, w.count, "retried flush: the rows are written");
	bt_store_get_stats(t.s, &before);
	env_fault_fail_after(t.env, ENV_FAULT_OPEN, 1, -ENOSPC, false);
	rc = bt_store_flush(t.s);
	is_int(rc, 0, "retried flush: bt_store_flush succeeds (%s)",
	    rc < 0 ? bt_error_detail() : "");
	bt_store_get_stats(t.s, &after);
	ok(after.flushes > before.flushes && after.sstables > before.sstables,
	    "retried flush: the memtable is flushed (%" PRIu64 " to %" PRIu64
	    " SSTables)", before.sstables, after.sstables);
	is_int(rows_checking(t.s, &w, 1), w.acked, "retried flush: every row "
	    "reads back");
	tstore_destroy(&t);
}

struct compactor {
	struct bt_store *s;
	int rc;
	atomic_bool done;
};

static void *
compactor_main(void *arg)
{
	struct compactor *c = arg;

	c->rc = bt_store_compact(c->s, "t", true);
	atomic_store(&c->done, true);
	return NULL;
}

/*
 * Writers keep writing while a major compaction rewrites a tablet many
 * times the budget: the memtables they fill are flushed in the middle
 * of the compaction, and the flushed files survive its commit.
 */
static void
test_flush_during_compaction(void)
{
	struct bt_options opts = { .memtable_size = BUDGET };
	struct writer base = { .thread = 0, .count = 12000 };
	struct writer w = { .thread = 1, .count = 3000 };
	struct compactor c = { 0 };
	struct bt_stats s0, s1;
	pthread_t th, tc;
	struct tstore t;
	uint64_t mid_flushes = 0;

	tstore_fault(&t, &opts);
	must(make_table(t.s, "t", (const char *[]){ "f", NULL }));
	base.s = w.s = c.s = t.s;
	writer_main(&base);
	is_int(base.acked, base.count, "the tablet is filled (rc %d)",
	    base.rc);
	pthread_create(&tc, NULL, compactor_main, &c);
	pthread_create(&th, NULL, writer_main, &w);
	bt_store_get_stats(t.s, &s0);
	while (!atomic_load(&c.done)) {
		struct timespec tick = { 0, 1000000 };

		nanosleep(&tick, NULL);
		bt_store_get_stats(t.s, &s1);
		/* No background round runs while the compaction holds the
		 * work lock: a flush counted meanwhile is the poll's. */
		if (!atomic_load(&c.done) && s1.flushes > s0.flushes)
			mid_flushes = s1.flushes - s0.flushes;
	}
	pthread_join(tc, NULL);
	if (!writer_join(th, &w))
		tap_bail("the writer hangs");
	is_int(c.rc, 0, "the major compaction succeeds");
	is_int(w.acked, w.count, "every write during it returned 0");
	diag("flushes seen during the compaction: %" PRIu64, mid_flushes);
	is_int(rows_checking(t.s, &base, 1) + rows_checking(t.s, &w, 1),
	    base.acked + w.acked, "every row, old and new, reads back");
	must(bt_store_compact(t.s, "t", true));
	is_int(rows_checking(t.s, &w, 1), w.acked, "and after another "
	    "compaction");
	is_int(tstore_reopen(&t), 0, "the store closes cleanly");
	is_int(rows_checking(t.s, &base, 1) + rows_checking(t.s, &w, 1),
	    base.acked + w.acked, "and after a reopen");
	tstore_destroy(&t);
}

int
main(void)
{
	test_budget_holds();
	test_failing_flush();
	test_flush_retried();
	test_flush_during_compaction();
	return tap_done();
}
