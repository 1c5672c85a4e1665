/*
 * test_api_compact.c - merging compactions that leave the large file
 * alone, through the public API, in the in-memory fault env.
 *
 * A tablet with one large SSTable (a major compaction's output) and three
 * small newer ones holding row deletes, column deletes and new versions
 * (some with older timestamps than the large file's): a merging
 * compaction takes only the small ones (two files are left).  Proves:
 * every delete still masks what it masked in the large file, and every
 * version reads as before, after the merging compaction, after a major
 * compaction and after a reopen.
 *
 * Read-triggered compaction (tablet.h, TABLET_SEEK_BYTES), in tables of
 * three files (below TABLET_MERGE_THRESHOLD): one read pass over rows
 * that each lie in all three files merges them into one; a pass over
 * rows that each lie in one file, and no reads at all, leave the three;
 * two hundred short scans over three files merge them too.
 *
 * Idle compaction (tablet.h, TABLET_IDLE_USEC), on the fault env's
 * clock: see test_idle_merge() and test_idle_flush().
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/tabletfs.h"
#include "tablet/tablet.h"
#include "util/env.h"
#include "api_util.h"

#define ROWS	2000

static void
row_name(int i, char *row, size_t size)
{
	snprintf(row, size, "r%05d", i);
}

/* Whether the small files change row i: a fifth of the rows, so that
 * they hold far less than the large file. */
static bool
row_changed(int i)
{
	return i % 50 < 10;
}

/*
 * What row i holds after the small files: of the rows changed, every
 * tenth deleted (i % 10 == 0), the column deleted in i % 10 == 1 (the
 * other column stays), a newer version in i % 10 == 2, an older-stamped
 * one in i % 10 == 3, as "qualifier@ts=value" lines.
 */
static void
row_expected(int i, char *out, size_t size)
{
	switch (row_changed(i) ? i % 10 : 9) {
	case 0:
		out[0] = '\0';
		break;
	case 1:
		snprintf(out, size, "b@100=b%d\n", i);
		break;
	case 2:
		snprintf(out, size, "a@200=new%d\na@100=a%d\nb@100=b%d\n", i,
		    i, i);
		break;
	case 3:
		snprintf(out, size, "a@100=a%d\na@50=low%d\nb@100=b%d\n", i, i,
		    i);
		break;
	default:
		snprintf(out, size, "a@100=a%d\nb@100=b%d\n", i, i);
		break;
	}
}

static void
row_render(struct bt_store *s, int i, char *out, size_t size)
{
	char row[16];
	struct bt_row *r = NULL;
	size_t n = 0;

	row_name(i, row, sizeof(row));
	out[0] = '\0';
	if (bt_read_row(s, "t", bts(row), NULL, &r) != 0)
		return;
	for (size_t k = 0; k < r->cell_count && n < size; k++)
		n += (size_t)snprintf(out + n, size - n, "%.*s@%" PRId64
		    "=%.*s\n", (int)r->cells[k].qualifier.size,
		    (const char *)r->cells[k].qualifier.data, r->cells[k].ts,
		    (int)r->cells[k].value.size,
		    (const char *)r->cells[k].value.data);
	bt_row_free(r);
}

/* Rows reading as row_expected() says; the first wrong one is shown. */
static int
rows_right(struct bt_store *s)
{
	char want[256], got[256];
	int right = 0;
	bool shown = false;

	for (int i = 0; i < ROWS; i++) {
		row_expected(i, want, sizeof(want));
		row_render(s, i, got, sizeof(got));
		if (strcmp(want, got) == 0) {
			right++;
		} else if (!shown) {
			diag("row %d: want \"%s\", got \"%s\"", i, want, got);
			shown = true;
		}
	}
	return right;
}

static void
put(struct bt_store *s, int i, const char *q, int64_t ts, const char *fmt)
{
	char row[16], val[32];

	row_name(i, row, sizeof(row));
	snprintf(val, sizeof(val), fmt, i);
	must(put_str(s, "t", row, "f", q, ts, val));
}

/* The store's counters. */
static struct bt_stats
store_stats(struct bt_store *s)
{
	struct bt_stats st;

	bt_store_get_stats(s, &st);
	return st;
}

/* The SSTables (memtable false) or memtable bytes (true) of table's
 * single tablet, or -1. */
static int64_t
table_count(struct bt_store *s, const char *table, bool memtable)
{
	struct bt_tablet_info *info;
	size_t count;
	int64_t n = -1;

	if (bt_table_tablets(s, table, &info, &count) != 0)
		return -1;
	if (count == 1)
		n = (int64_t)(memtable ? info[0].memtable_bytes :
		    info[0].sstables);
	bt_tablets_free(info);
	return n;
}

/* The SSTables of table's single tablet, or -1. */
static int
table_sstables(struct bt_store *s, const char *table)
{
	return (int)table_count(s, table, false);
}

/*
 * Run background rounds (bt_store_flush() waits for one; the memtables
 * must be empty, or it adds files) until table has want SSTables, at most
 * POLL_ROUNDS of them: the background thread may have run the compaction
 * already, or be about to.  Whether it got there.
 */
#define POLL_ROUNDS 100
static bool
sstables_reach(struct bt_store *s, const char *table, int want)
{
	for (int i = 0; i < POLL_ROUNDS; i++) {
		if (table_sstables(s, table) == want)
			return true;
		must(bt_store_flush(s));
	}
	return table_sstables(s, table) == want;
}

/* Stop the store's clock, so that no tablet goes idle (tablet.h,
 * TABLET_IDLE_USEC) and only the policy under test merges files. */
static void
clock_stop(struct tstore *t)
{
	env_fault_set_clock(t->env, env_now_micros(t->env));
}

#define SEEK_ROWS 1000
#define SEEK_PARTS 3	/* files of the read-triggered tests */

/* Write SEEK_ROWS rows to table in parts flushed files: each row in
 * every file when overlap, else each row in one of them. */
static void
seek_table_fill(struct bt_store *s, const char *table, bool overlap,
    int parts)
{
	char row[16], val[32];

	must(make_table(s, table, (const char *[]){ "f", NULL }));
	for (int part = 0; part < parts; part++) {
		for (int i = 0; i < SEEK_ROWS; i++) {
			if (!overlap && i % parts != part)
				continue;
			row_name(i, row, sizeof(row));
			snprintf(val, sizeof(val), "v%d.%d", i, part);
			must(put_str(s, table, row, "f", "a", 100 + part,
			    val));
		}
		must(bt_store_flush(s));
	}
}

/* One point read of every row of table (filled in parts files), every
 * version: how many read right (each file's version, newest first). */
static int
seek_table_read(struct bt_store *s, const char *table, bool overlap,
    int parts)
{
	char row[16], want[32], got[32];
	int right = 0;

	for (int i = 0; i < SEEK_ROWS; i++) {
		struct bt_row *r = NULL;
		int part = overlap ? parts - 1 : i % parts;
		bool good;

		row_name(i, row, sizeof(row));
		snprintf(want, sizeof(want), "v%d.%d@%d", i, part, 100 + part);
		got[0] = '\0';
		if (bt_read_row(s, table, bts(row), NULL, &r) == 0 &&
		    r->cell_count > 0)
			snprintf(got, sizeof(got), "%.*s@%" PRId64,
			    (int)r->cells[0].value.size,
			    (const char *)r->cells[0].value.data,
			    r->cells[0].ts);
		good = r != NULL &&
		    r->cell_count == (overlap ? (size_t)parts : 1u) &&
		    strcmp(got, want) == 0;
		if (good)
			right++;
		else if (right == i)
			diag("%s row %d: want \"%s\", got \"%s\"", table, i,
			    want, got);
		bt_row_free(r);
	}
	return right;
}

/* A scan of ten rows from every fifth row of table: how many returned
 * the rows up to it (ten, fewer at the end). */
static int
seek_table_scan(struct bt_store *s, const char *table)
{
	int right = 0;

	for (int i = 0; i < SEEK_ROWS; i += 5) {
		struct bt_scan_options so = { .limit = 10 };
		struct bt_scan *sc = NULL;
		struct bt_row *r;
		char row[16];
		int rows = 0;

		row_name(i, row, sizeof(row));
		so.start = bts(row);
		if (bt_scan_open(s, table, &so, &sc) != 0)
			continue;
		while (r = NULL, bt_scan_next(sc, &r) == 0 && r != NULL) {
			rows++;
			bt_row_free(r);
		}
		bt_scan_close(sc);
		right += rows == (SEEK_ROWS - i < 10 ? SEEK_ROWS - i : 10);
	}
	return right;
}

static void
test_seek_compaction(void)
{
	struct tstore t;

	tstore_fault(&t, NULL);
	clock_stop(&t);
	seek_table_fill(t.s, "none", true, SEEK_PARTS);
	seek_table_fill(t.s, "one", false, SEEK_PARTS);
	seek_table_fill(t.s, "many", true, SEEK_PARTS);
	seek_table_fill(t.s, "scan", true, SEEK_PARTS);
	is_int(table_sstables(t.s, "many"), SEEK_PARTS, "three files, below "
	    "the merge threshold");
	is_int(seek_table_read(t.s, "one", false, SEEK_PARTS), SEEK_ROWS,
	    "a pass over rows in one file each reads right");
	for (int i = 0; i < 3; i++)
		must(bt_store_flush(t.s));
	must(bt_store_compact(t.s, "one", false));
	is_int(table_sstables(t.s, "one"), SEEK_PARTS, "reads that found "
	    "each row in one file leave the three files");
	must(bt_store_compact(t.s, "none", false));
	is_int(table_sstables(t.s, "none"), SEEK_PARTS, "no reads, no "
	    "compaction");
	is_int(seek_table_read(t.s, "many", true, SEEK_PARTS), SEEK_ROWS,
	    "a pass over rows in three files each reads right");
	ok(sstables_reach(t.s, "many", 1), "those reads merged the three "
	    "files into one");
	is_int(seek_table_read(t.s, "many", true, SEEK_PARTS), SEEK_ROWS,
	    "every row reads right after it");
	is_int(seek_table_scan(t.s, "scan"), SEEK_ROWS / 5, "short scans "
	    "over three files read right");
	ok(sstables_reach(t.s, "scan", 1), "those scans merged the three "
	    "files into one");
	is_int(table_sstables(t.s, "none"), SEEK_PARTS, "the table without "
	    "reads still has its three files");
	tstore_destroy(&t);
}

/*
 * Idle compaction (tablet.h, TABLET_IDLE_USEC), on the store's clock:
 * two files of one size stay while the clock stands still, however many
 * background rounds run, and merge into one once it has moved on by
 * TABLET_IDLE_USEC with no write; later rounds compact nothing more.  A
 * file much smaller than the older one (past the size rule) is left
 * beside it, and so are two files whose rows do not overlap.
 */
static void
test_idle_merge(void)
{
	struct tstore t;
	int64_t now;
	uint64_t done;
	char row[16];

	tstore_fault(&t, NULL);
	clock_stop(&t);
	now = (int64_t)env_now_micros(t.env);
	seek_table_fill(t.s, "quiet", true, 2);
	/* Rows [0, SEEK_ROWS / 2) in one file, the others in a second. */
	must(make_table(t.s, "apart", (const char *[]){ "f", NULL }));
	for (int i = 0; i < SEEK_ROWS; i++) {
		row_name(i, row, sizeof(row));
		must(put_str(t.s, "apart", row, "f", "a", 100, row));
		if (i == SEEK_ROWS / 2 - 1)
			must(bt_store_flush(t.s));
	}
	for (int i = 0; i < 3; i++)
		must(bt_store_flush(t.s));
	is_int(table_sstables(t.s, "quiet"), 2, "two files stay while the "
	    "clock stands still");
	env_fault_set_clock(t.env, (uint64_t)(now + TABLET_IDLE_USEC));
	must(bt_store_flush(t.s));
	is_int(table_sstables(t.s, "quiet"), 1, "idle for TABLET_IDLE_USEC: "
	    "they merged into one without a read");
	is_int(table_sstables(t.s, "apart"), 2, "two files of disjoint rows "
	    "(a sequential load) are left apart");
	is_int(seek_table_read(t.s, "quiet", true, 2), SEEK_ROWS, "every row "
	    "reads both versions after it");
	done = store_stats(t.s).compactions;
	env_fault_set_clock(t.env, (uint64_t)(now + 10 * TABLET_IDLE_USEC));
	for (int i = 0; i < 3; i++)
		must(bt_store_flush(t.s));
	is_int((int)(store_stats(t.s).compactions - done), 0, "an idle "
	    "tablet at one file is not compacted again");
	/* A small file beside the large one: the size rule keeps them. */
	row_name(0, row, sizeof(row));
	must(put_str(t.s, "quiet", row, "f", "a", 300, "small"));
	must(bt_store_flush(t.s));
	env_fault_set_clock(t.env, (uint64_t)(now + 20 * TABLET_IDLE_USEC));
	must(bt_store_flush(t.s));
	env_fault_set_clock(t.env, (uint64_t)(now + 30 * TABLET_IDLE_USEC));
	for (int i = 0; i < 3; i++)
		must(bt_store_flush(t.s));
	is_int(table_sstables(t.s, "quiet"), 2, "a small new file is not "
	    "merged into a large one when idle");
	tstore_destroy(&t);
}

/*
 * A merging compaction that fails (here every rename of a new SSTable
 * into place; on RADOS, a tablet whose merge outgrows the largest
 * object) is not tried again on the same files round after round,
 * rewriting them each time: later idle rounds write nothing.  Once a
 * new file is there, the merge is tried again and, the fault gone,
 * merges all three, and every row reads its three versions.
 */
static void
test_merge_failed(void)
{
	struct env_fault_stats before, after;
	struct tstore t;
	int64_t now;
	char row[16], val[32];

	tstore_fault(&t, NULL);
	clock_stop(&t);
	now = (int64_t)env_now_micros(t.env);
	seek_table_fill(t.s, "quiet", true, 2);
	env_fault_fail_after(t.env, ENV_FAULT_RENAME, 1, -EIO, true);
	env_fault_set_clock(t.env, (uint64_t)(now + TABLET_IDLE_USEC));
	(void)bt_store_flush(t.s);
	env_fault_get_stats(t.env, &before);
	for (int i = 2; i < 6; i++) {
		env_fault_set_clock(t.env,
		    (uint64_t)(now + i * TABLET_IDLE_USEC));
		(void)bt_store_flush(t.s);
	}
	env_fault_get_stats(t.env, &after);
	is_int((int)(after.appends - before.appends), 0, "a merge that "
	    "failed is not tried again on the same files");
	is_int(table_sstables(t.s, "quiet"), 2, "the two files stay");
	env_fault_fail_after(t.env, ENV_FAULT_RENAME, 0, 0, false);
	/* A third file as seek_table_fill() writes it. */
	for (int i = 0; i < SEEK_ROWS; i++) {
		row_name(i, row, sizeof(row));
		snprintf(val, sizeof(val), "v%d.2", i);
		must(put_str(t.s, "quiet", row, "f", "a", 102, val));
	}
	must(bt_store_flush(t.s));
	env_fault_set_clock(t.env, (uint64_t)(now + 7 * TABLET_IDLE_USEC));
	must(bt_store_flush(t.s));
	env_fault_set_clock(t.env, (uint64_t)(now + 9 * TABLET_IDLE_USEC));
	must(bt_store_flush(t.s));
	is_int(table_sstables(t.s, "quiet"), 1, "with a new file the merge "
	    "is tried again, and merges the three");
	is_int(seek_table_read(t.s, "quiet", true, 3), SEEK_ROWS, "every row "
	    "reads its three versions");
	tstore_destroy(&t);
}

/*
 * An idle tablet's memtable of TABLET_IDLE_FLUSH_MIN bytes or more is
 * flushed by the background thread on its own (no bt_store_flush()):
 * the clock moves on by a quarter of TABLET_IDLE_USEC between polls of
 * at most IDLE_POLLS, so that some background rounds see the tablet
 * quiet for long enough; and every row reads right from the file.
 */
#define IDLE_POLLS 3000
#define IDLE_ROWS 4000
static void
test_idle_flush(void)
{
	struct tstore t;
	char row[16], val[512];
	int64_t now;
	int polls, right = 0;

	tstore_fault(&t, NULL);
	clock_stop(&t);
	now = (int64_t)env_now_micros(t.env);
	must(make_table(t.s, "mem", (const char *[]){ "f", NULL }));
	memset(val, 'v', sizeof(val) - 1);
	val[sizeof(val) - 1] = '\0';
	for (int i = 0; i < IDLE_ROWS; i++) {
		row_name(i, row, sizeof(row));
		must(put_str(t.s, "mem", row, "f", "a", 100, val));
	}
	ok(table_count(t.s, "mem", true) >= TABLET_IDLE_FLUSH_MIN,
	    "the memtable holds TABLET_IDLE_FLUSH_MIN bytes");
	for (polls = 0; polls < IDLE_POLLS; polls++) {
		if (table_sstables(t.s, "mem") == 1)
			break;
		now += TABLET_IDLE_USEC / 4;
		env_fault_set_clock(t.env, (uint64_t)now);
		usleep(10000);
	}
	is_int(table_sstables(t.s, "mem"), 1, "idle: the background flushed "
	    "it to a file (%d polls)", polls);
	ok(table_count(t.s, "mem", true) < TABLET_IDLE_FLUSH_MIN,
	    "and the memtable is empty again");
	for (int i = 0; i < IDLE_ROWS; i++) {
		struct bt_row *r = NULL;

		row_name(i, row, sizeof(row));
		if (bt_read_row(t.s, "mem", bts(row), NULL, &r) == 0 &&
		    r->cell_count == 1 && r->cells[0].value.size ==
		    strlen(val))
			right++;
		bt_row_free(r);
	}
	is_int(right, IDLE_ROWS, "every row reads right from it");
	tstore_destroy(&t);
}

int
main(void)
{
	struct tstore t;
	char row[16];

	tstore_fault(&t, NULL);
	must(make_table(t.s, "t", (const char *[]){ "f", NULL }));
	for (int i = 0; i < ROWS; i++) {
		put(t.s, i, "a", 100, "a%d");
		put(t.s, i, "b", 100, "b%d");
	}
	must(bt_store_flush(t.s));
	must(bt_store_compact(t.s, "t", true));
	is_int((int)store_stats(t.s).sstables, 1, "the large file");
	/* Three small files, each with some of every kind of change. */
	for (int part = 0; part < 3; part++) {
		for (int k = part; k < ROWS; k += 3) {
			if (row_changed(k)) {
				row_name(k, row, sizeof(row));
				if (k % 10 == 0) {
					struct bt_mutation m = {
					    .kind = BT_DELETE_ROW };

					must(bt_mutate_row(t.s, "t", bts(row),
					    &m, 1, NULL, NULL));
				} else if (k % 10 == 1) {
					must(del_str(t.s, "t", row,
					    BT_DELETE_COLUMN, "f", "a", 0));
				} else if (k % 10 == 2) {
					put(t.s, k, "a", 200, "new%d");
				} else if (k % 10 == 3) {
					put(t.s, k, "a", 50, "low%d");
				}
			}
		}
		must(bt_store_flush(t.s));
	}
	/* The fourth file calls for a merging compaction: the background
	 * round after the flush may run it before this does.  No read came
	 * before it: reads of rows in two files would ask for a merge of
	 * the files they found first (a read-triggered compaction, at a
	 * moment the background thread chooses). */
	must(bt_store_compact(t.s, "t", false));
	is_int((int)store_stats(t.s).sstables, 2, "the merging compaction "
	    "took the small files only");
	is_int(rows_right(t.s), ROWS, "after it, deletes still mask the "
	    "large file and every version is there");
	must(bt_store_compact(t.s, "t", true));
	is_int((int)store_stats(t.s).sstables, 1, "a major compaction "
	    "leaves one file");
	is_int(rows_right(t.s), ROWS, "every row reads right after it");
	is_int(tstore_reopen(&t), 0, "the store closes cleanly");
	is_int(rows_right(t.s), ROWS, "and after a reopen");
	tstore_destroy(&t);
	test_seek_compaction();
	test_idle_merge();
	test_merge_failed();
	test_idle_flush();
	return tap_done();
}
