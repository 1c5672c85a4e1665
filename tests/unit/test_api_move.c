/*
 * test_api_move.c - bt_move_column(): a column, or a family, moves within
 * its row as one mutation, every version keeping its timestamp and value;
 * the source is gone and the destination's policy applies.  The move
 * reaches versions in SSTables as well as in the memtable, survives a
 * reopen (the log replays it), masks only what was written before it, and
 * refuses a destination that holds versions, an empty source, an unknown
 * family, a column moved onto a family and more than max_cell bytes of
 * values, changing nothing.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/tabletfs.h"
#include "util/env.h"
#include "api_util.h"

static const char *const families[] = {
	"f", "g", "two=maxversions=2", NULL,
};

static struct bt_column
column(const char *family, const char *qualifier)
{
	return (struct bt_column){ family, true, bts(qualifier) };
}

static struct bt_column
family(const char *name)
{
	return (struct bt_column){ name, false, bts("") };
}

static int
move(struct bt_store *s, const char *row, struct bt_column src,
    struct bt_column dst)
{
	return bt_move_column(s, "t", bts(row), &src, &dst, NULL);
}

static void
is_row(struct bt_store *s, const char *row, const char *want,
    const char *what)
{
	is_text(read_text_str(s, "t", row, NULL), want, what);
}

/* Three versions of f:a and one of f:c in row r; the next row holds f:a
 * too, which no move of row r may touch. */
static void
fill(struct bt_store *s)
{
	must(put_str(s, "t", "r", "f", "a", 5, "five"));
	must(put_str(s, "t", "r", "f", "a", 7, "seven"));
	must(put_str(s, "t", "r", "f", "a", 9, "nine"));
	must(put_str(s, "t", "r", "f", "c", 3, "c3"));
	must(put_str(s, "t", "s", "f", "a", 1, "other row"));
}

/* A fresh store with table t and fill()'s cells. */
static void
store_filled(struct tstore *t)
{
	tstore_fault(t, NULL);
	must(make_table(t->s, "t", families));
	fill(t->s);
}

static void
test_column_rename(const char *where, bool flushed)
{
	struct tstore t;
	char what[128];

	store_filled(&t);
	if (flushed)
		must(bt_store_flush(t.s));
	snprintf(what, sizeof(what), "%s: f:a becomes f:b with its three "
	    "versions", where);
	is_int(move(t.s, "r", column("f", "a"), column("f", "b")), 0, what);
	snprintf(what, sizeof(what), "%s: every version at f:b with its "
	    "time and value, none at f:a", where);
	is_row(t.s, "r", "f:b@9=nine\nf:b@7=seven\nf:b@5=five\nf:c@3=c3\n",
	    what);
	snprintf(what, sizeof(what), "%s: the next row's f:a is untouched",
	    where);
	is_row(t.s, "s", "f:a@1=other row\n", what);

	/* A put after the move is not masked by its delete, even with an
	 * older timestamp. */
	must(put_str(t.s, "t", "r", "f", "a", 2, "later"));
	snprintf(what, sizeof(what), "%s: a later put to f:a is visible",
	    where);
	is_row(t.s, "r", "f:a@2=later\nf:b@9=nine\nf:b@7=seven\n"
	    "f:b@5=five\nf:c@3=c3\n", what);

	is_int(tstore_reopen(&t), 0, "clean close before reopen");
	snprintf(what, sizeof(what), "%s: the same after a reopen", where);
	is_row(t.s, "r", "f:a@2=later\nf:b@9=nine\nf:b@7=seven\n"
	    "f:b@5=five\nf:c@3=c3\n", what);
	must(bt_store_compact(t.s, "t", true));
	snprintf(what, sizeof(what), "%s: the same after a major compaction",
	    where);
	is_row(t.s, "r", "f:a@2=later\nf:b@9=nine\nf:b@7=seven\n"
	    "f:b@5=five\nf:c@3=c3\n", what);
	tstore_destroy(&t);
}

static void
test_across_families(void)
{
	struct tstore t;

	store_filled(&t);
	must(del_str(t.s, "t", "r", BT_DELETE_VERSION, "f", "a", 7));
	is_int(move(t.s, "r", column("f", "a"), column("two", "z")), 0,
	    "a column moves to another family");
	is_row(t.s, "r", "f:c@3=c3\ntwo:z@9=nine\ntwo:z@5=five\n",
	    "the deleted version stays deleted; the rest is at two:z");
	must(put_str(t.s, "t", "r", "two", "z", 11, "eleven"));
	is_row(t.s, "r", "f:c@3=c3\ntwo:z@11=eleven\ntwo:z@9=nine\n",
	    "the destination family's maxversions=2 applies");

	is_int(move(t.s, "r", family("f"), family("g")), 0,
	    "a family's columns move to another family");
	is_row(t.s, "r", "g:c@3=c3\ntwo:z@11=eleven\ntwo:z@9=nine\n",
	    "each column keeps its qualifier in the new family");
	is_int(move(t.s, "r", family("g"), family("f")), 0,
	    "and back");
	is_row(t.s, "r", "f:c@3=c3\ntwo:z@11=eleven\ntwo:z@9=nine\n",
	    "back where it was");
	is_int(tstore_reopen(&t), 0, "clean close before reopen");
	is_row(t.s, "r", "f:c@3=c3\ntwo:z@11=eleven\ntwo:z@9=nine\n",
	    "family moves replay from the log");
	tstore_destroy(&t);
}

static void
test_refusals(void)
{
	struct tstore t;

	store_filled(&t);
	is_int(move(t.s, "r", column("f", "a"), column("f", "c")), -ENOTEMPTY,
	    "onto a column with a version: -ENOTEMPTY");
	is_int(move(t.s, "r", family("f"), family("two")), 0,
	    "a family onto an empty family of the row");
	must(put_str(t.s, "t", "r", "f", "x", 1, "x"));
	is_int(move(t.s, "r", family("f"), family("two")), -ENOTEMPTY,
	    "onto a family with a version in the row: -ENOTEMPTY");
	is_int(move(t.s, "r", column("f", "nosuch"), column("f", "b")),
	    -ENOENT, "an empty source: -ENOENT");
	is_int(move(t.s, "nosuchrow", family("f"), family("g")), -ENOENT,
	    "a row without the family: -ENOENT");
	is_int(move(t.s, "r", column("f", "x"), column("nosuch", "x")),
	    -ENOENT, "an unknown destination family: -ENOENT");
	is_int(move(t.s, "r", column("f", "x"), family("g")), -EINVAL,
	    "a column onto a family: -EINVAL");
	is_int(move(t.s, "r", column("f", "x"), column("f", "x")), 0,
	    "a column onto itself");
	is_int(move(t.s, "r", column("f", "none"), column("f", "none")),
	    -ENOENT, "an empty column onto itself: -ENOENT");
	is_row(t.s, "r", "f:x@1=x\ntwo:a@9=nine\ntwo:a@7=seven\n"
	    "two:c@3=c3\n", "the refusals changed nothing");
	is_int(bt_move_column(t.s, "nosuch", bts("r"), &(struct bt_column){
	    "f", true, bts("x") }, &(struct bt_column){ "f", true, bts("y") },
	    NULL), -ENOENT, "an unknown table: -ENOENT");
	tstore_destroy(&t);
}

/* A move carries no more than one write may: max_cell bytes of values. */
static void
test_too_large(void)
{
	struct bt_options opts = { .max_cell = 1000 };
	char big[601];
	struct tstore t;

	memset(big, 'v', 600);
	big[600] = '\0';
	tstore_fault(&t, &opts);
	if (tstore_cell_skip(&t, "sets the store's max_cell"))
		return;
	must(make_table(t.s, "t", families));
	must(put_str(t.s, "t", "r", "f", "a", 1, big));
	must(put_str(t.s, "t", "r", "f", "a", 2, big));
	must(put_str(t.s, "t", "r", "f", "c", 1, big));
	is_int(move(t.s, "r", column("f", "a"), column("f", "b")), -EFBIG,
	    "1200 bytes of values with max_cell 1000: -EFBIG");
	is_int(move(t.s, "r", family("f"), family("g")), -EFBIG,
	    "a family of 1800 bytes: -EFBIG");
	is_int(move(t.s, "r", column("f", "c"), column("f", "d")), 0,
	    "600 bytes move");
	is_text(read_text_str(t.s, "t", "r", &(struct bt_read_options){
	    .keys_only = true }),
	    "f:a@2= size=600\nf:a@1= size=600\nf:d@1= size=600\n",
	    "the refused moves changed nothing");
	tstore_destroy(&t);
}

int
main(void)
{
	test_column_rename("memtable", false);
	test_column_rename("sstable", true);
	test_across_families();
	test_refusals();
	test_too_large();
	return tap_done();
}
