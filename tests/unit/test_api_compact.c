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
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/tabletfs.h"
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

static uint64_t
sstables(struct bt_store *s)
{
	struct bt_stats st;

	bt_store_get_stats(s, &st);
	return st.sstables;
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
	is_int((int)sstables(t.s), 1, "the large file");
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
		if (part == 2)
			is_int(rows_right(t.s), ROWS, "every row reads right "
			    "before the last flush");
		must(bt_store_flush(t.s));
	}
	/* The fourth file calls for a merging compaction: the background
	 * round after the flush may run it before this does. */
	must(bt_store_compact(t.s, "t", false));
	is_int((int)sstables(t.s), 2, "the merging compaction took the small "
	    "files only");
	is_int(rows_right(t.s), ROWS, "after it, deletes still mask the "
	    "large file and every version is there");
	must(bt_store_compact(t.s, "t", true));
	is_int((int)sstables(t.s), 1, "a major compaction leaves one file");
	is_int(rows_right(t.s), ROWS, "every row reads right after it");
	is_int(tstore_reopen(&t), 0, "the store closes cleanly");
	is_int(rows_right(t.s), ROWS, "and after a reopen");
	tstore_destroy(&t);
	return tap_done();
}
