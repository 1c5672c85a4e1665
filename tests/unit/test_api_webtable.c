/*
 * test_api_webtable.c - the data model through the public API: the paper's
 * Webtable row and the seed example read back in order with every read
 * option, binary keys, scans over row ranges, server timestamps, argument
 * errors that write nothing, the schema calls, check-and-mutate,
 * increment and append.  Reads are repeated from the memtable, after a
 * flush and after a reopen.
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

static const char *const stage_names[] = { "memtable", "flushed", "reopened" };

/* Run check(t, stage) from the memtable, after a flush, after a reopen. */
static void
in_three_stages(struct tstore *t, void (*check)(struct tstore *, const char *))
{
	check(t, stage_names[0]);
	is_int(bt_store_flush(t->s), 0, "flush");
	check(t, stage_names[1]);
	is_int(tstore_reopen(t), 0, "clean close before reopen");
	check(t, stage_names[2]);
}

/* ---- The paper's Webtable row (Figure 1) ---- */

static void
webtable_check(struct tstore *t, const char *stage)
{
	struct bt_column anchor = { .family = "anchor" };
	struct bt_column cnnsi = {
		.family = "anchor", .has_qualifier = true,
		.qualifier = { "cnnsi.com", 9 },
	};
	struct bt_read_options ro = { 0 };

	is_text(read_text_str(t->s, "webtable", "com.cnn.www", NULL),
	    "anchor:cnnsi.com@9=CNN\n"
	    "anchor:my.look.ca@8=CNN.com\n"
	    "contents:@6=<html>v6\n"
	    "contents:@5=<html>v5\n"
	    "contents:@3=<html>v3\n",
	    "webtable (%s): the whole row in order", stage);
	ro.cells_per_column = 1;
	is_text(read_text_str(t->s, "webtable", "com.cnn.www", &ro),
	    "anchor:cnnsi.com@9=CNN\n"
	    "anchor:my.look.ca@8=CNN.com\n"
	    "contents:@6=<html>v6\n",
	    "webtable (%s): newest version of each column", stage);
	memset(&ro, 0, sizeof(ro));
	ro.columns = &anchor;
	ro.column_count = 1;
	is_text(read_text_str(t->s, "webtable", "com.cnn.www", &ro),
	    "anchor:cnnsi.com@9=CNN\n"
	    "anchor:my.look.ca@8=CNN.com\n",
	    "webtable (%s): the anchor family", stage);
	ro.columns = &cnnsi;
	is_text(read_text_str(t->s, "webtable", "com.cnn.www", &ro),
	    "anchor:cnnsi.com@9=CNN\n",
	    "webtable (%s): the column anchor:cnnsi.com", stage);
	is_text(newest_text(t->s, "webtable", "com.cnn.www", "contents", ""),
	    "<html>v6@6", "webtable (%s): contents: newest", stage);
	is_text(read_text_str(t->s, "webtable", "com.cnn.ww", NULL),
	    "NOTFOUND", "webtable (%s): a prefix of the row is another row",
	    stage);
	is_text(read_text_str(t->s, "webtable", "com.cnn.www.", NULL),
	    "NOTFOUND", "webtable (%s): an extension is another row", stage);
}

static void
test_webtable(void)
{
	static const char *const fams[] = { "anchor", "contents", NULL };
	struct tstore t;

	tstore_fault(&t, NULL);
	must(make_table(t.s, "webtable", fams));
	/* Written out of order on purpose. */
	must(put_str(t.s, "webtable", "com.cnn.www", "contents", "", 5,
	    "<html>v5"));
	must(put_str(t.s, "webtable", "com.cnn.www", "anchor", "my.look.ca",
	    8, "CNN.com"));
	must(put_str(t.s, "webtable", "com.cnn.www", "contents", "", 3,
	    "<html>v3"));
	must(put_str(t.s, "webtable", "com.cnn.www", "anchor", "cnnsi.com",
	    9, "CNN"));
	must(put_str(t.s, "webtable", "com.cnn.www", "contents", "", 6,
	    "<html>v6"));
	in_three_stages(&t, webtable_check);
	tstore_destroy(&t);
}

/* ---- The seed example: families A and B, row aaaaa ---- */

static void
seed_check(struct tstore *t, const char *stage)
{
	struct bt_column foo = {
		.family = "A", .has_qualifier = true, .qualifier = { "foo", 3 },
	};
	struct bt_column a_empty = {
		.family = "A", .has_qualifier = true, .qualifier = { "", 0 },
	};
	struct bt_column b_empty = {
		.family = "B", .has_qualifier = true, .qualifier = { "", 0 },
	};
	struct bt_column fam_b = { .family = "B" };
	struct bt_column foo_and_b[2] = { foo, { .family = "B" } };
	struct bt_read_options ro;

	is_text(read_text_str(t->s, "T", "aaaaa", NULL),
	    "A:bar@15=d\n"
	    "A:foo@15=y\n"
	    "A:foo@4=m\n"
	    "B:@6=w\n"
	    "B:@3=o\n"
	    "B:@1=w\n",
	    "seed (%s): the whole row in order", stage);

	memset(&ro, 0, sizeof(ro));
	ro.columns = &foo;
	ro.column_count = 1;
	ro.cells_per_column = 1;
	is_text(read_text_str(t->s, "T", "aaaaa", &ro), "A:foo@15=y\n",
	    "seed (%s): A:foo newest is y", stage);
	ro.has_max_ts = true;
	ro.max_ts = 10;
	is_text(read_text_str(t->s, "T", "aaaaa", &ro), "A:foo@4=m\n",
	    "seed (%s): A:foo as of 10 is m", stage);
	ro.max_ts = 4;
	is_text(read_text_str(t->s, "T", "aaaaa", &ro), "A:foo@4=m\n",
	    "seed (%s): A:foo as of 4 is m (max_ts inclusive)", stage);
	ro.max_ts = 2;
	is_text(read_text_str(t->s, "T", "aaaaa", &ro), "NOTFOUND",
	    "seed (%s): A:foo as of 2 is nothing", stage);
	ro.cells_per_column = 0;
	ro.max_ts = 15;
	is_text(read_text_str(t->s, "T", "aaaaa", &ro),
	    "A:foo@15=y\nA:foo@4=m\n",
	    "seed (%s): A:foo as of 15, all versions", stage);

	memset(&ro, 0, sizeof(ro));
	ro.cells_per_column = 1;
	is_text(read_text_str(t->s, "T", "aaaaa", &ro),
	    "A:bar@15=d\nA:foo@15=y\nB:@6=w\n",
	    "seed (%s): cells_per_column=1", stage);
	ro.cells_per_column = 2;
	is_text(read_text_str(t->s, "T", "aaaaa", &ro),
	    "A:bar@15=d\nA:foo@15=y\nA:foo@4=m\nB:@6=w\nB:@3=o\n",
	    "seed (%s): cells_per_column=2", stage);
	ro.has_max_ts = true;
	ro.max_ts = 5;
	is_text(read_text_str(t->s, "T", "aaaaa", &ro),
	    "A:foo@4=m\nB:@3=o\nB:@1=w\n",
	    "seed (%s): cells_per_column=2 as of 5 (time range first)",
	    stage);

	memset(&ro, 0, sizeof(ro));
	ro.min_ts = 5;
	is_text(read_text_str(t->s, "T", "aaaaa", &ro),
	    "A:bar@15=d\nA:foo@15=y\nB:@6=w\n",
	    "seed (%s): min_ts=5", stage);
	ro.min_ts = 4;
	ro.has_max_ts = true;
	ro.max_ts = 6;
	is_text(read_text_str(t->s, "T", "aaaaa", &ro),
	    "A:foo@4=m\nB:@6=w\n",
	    "seed (%s): 4 <= ts <= 6", stage);
	ro.min_ts = 16;
	ro.has_max_ts = false;
	is_text(read_text_str(t->s, "T", "aaaaa", &ro), "NOTFOUND",
	    "seed (%s): min_ts after every version", stage);

	memset(&ro, 0, sizeof(ro));
	ro.columns = &fam_b;
	ro.column_count = 1;
	is_text(read_text_str(t->s, "T", "aaaaa", &ro),
	    "B:@6=w\nB:@3=o\nB:@1=w\n",
	    "seed (%s): family filter B", stage);
	ro.columns = &b_empty;
	is_text(read_text_str(t->s, "T", "aaaaa", &ro),
	    "B:@6=w\nB:@3=o\nB:@1=w\n",
	    "seed (%s): column filter B: (empty qualifier)", stage);
	ro.columns = &a_empty;
	is_text(read_text_str(t->s, "T", "aaaaa", &ro), "NOTFOUND",
	    "seed (%s): column filter A: (empty qualifier) selects nothing",
	    stage);
	ro.columns = foo_and_b;
	ro.column_count = 2;
	is_text(read_text_str(t->s, "T", "aaaaa", &ro),
	    "A:foo@15=y\nA:foo@4=m\nB:@6=w\nB:@3=o\nB:@1=w\n",
	    "seed (%s): filters A:foo and B", stage);

	memset(&ro, 0, sizeof(ro));
	ro.keys_only = true;
	is_text(read_text_str(t->s, "T", "aaaaa", &ro),
	    "A:bar@15= size=1\n"
	    "A:foo@15= size=1\n"
	    "A:foo@4= size=1\n"
	    "B:@6= size=1\n"
	    "B:@3= size=1\n"
	    "B:@1= size=1\n",
	    "seed (%s): keys_only: empty values, exact sizes", stage);
	is_text(read_text_str(t->s, "T", "aaaab", NULL), "NOTFOUND",
	    "seed (%s): another row is absent", stage);
}

static void
test_seed_example(void)
{
	static const char *const fams[] = { "A", "B", NULL };
	struct bt_mutation m[3] = {
		{ .kind = BT_PUT, .family = "A", .qualifier = { "foo", 3 },
		  .ts = 15, .value = { "y", 1 } },
		{ .kind = BT_PUT, .family = "A", .qualifier = { "bar", 3 },
		  .ts = 15, .value = { "d", 1 } },
		{ .kind = BT_PUT, .family = "B", .qualifier = { "", 0 },
		  .ts = 6, .value = { "w", 1 } },
	};
	struct tstore t;

	tstore_fault(&t, NULL);
	must(make_table(t.s, "T", fams));
	must(put_str(t.s, "T", "aaaaa", "B", "", 1, "w"));
	must(put_str(t.s, "T", "aaaaa", "A", "foo", 4, "m"));
	must(put_str(t.s, "T", "aaaaa", "B", "", 3, "o"));
	is_int(bt_mutate_row(t.s, "T", bts("aaaaa"), m, 3, NULL, NULL), 0,
	    "seed: three puts in one row mutation");
	in_three_stages(&t, seed_check);
	tstore_destroy(&t);
}

/* ---- Binary keys ---- */

static const char bin_row[] = { 0x00, (char)0xff, 0x00, 'k' };
static const char bin_q1[] = { 0x00 };
static const char bin_q2[] = { (char)0xff, (char)0xff, 0x00 };
static const char bin_val[] = { 'a', 0x00, (char)0xff, 0x00, 'b' };

static void
binary_check(struct tstore *t, const char *stage)
{
	struct bt_scan_options so = { 0 };

	is_text(read_text(t->s, "bin", btb(bin_row, sizeof(bin_row)), NULL),
	    "f:@1=empty\n"
	    "f:\\x00@2=a\\x00\\xff\\x00b\n"
	    "f:\\xff\\xff\\x00@3=\n",
	    "binary (%s): row, qualifiers and values with 0x00/0xff", stage);
	is_text(read_text(t->s, "bin", btb(bin_row, 3), NULL), "NOTFOUND",
	    "binary (%s): a 3-byte prefix of the row is not the row", stage);
	is_text(scan_keys(t->s, "bin", &so),
	    "[\\x00]\n"
	    "[\\x00\\x00]\n"
	    "[\\x00\\xff\\x00k]\n"
	    "[A]\n"
	    "[a]\n"
	    "[\\x7f]\n"
	    "[\\x80]\n"
	    "[\\xff]\n"
	    "[\\xff\\xff]\n",
	    "binary (%s): rows in unsigned byte order", stage);
}

static void
test_binary_keys(void)
{
	static const char *const fams[] = { "f", NULL };
	static const char *const rows[] = {
		"\xff", "a", "\x80", "A", "\x7f", "\xff\xff",
	};
	struct tstore t;
	size_t i;

	tstore_fault(&t, NULL);
	must(make_table(t.s, "bin", fams));
	must(put_cell(t.s, "bin", btb(bin_row, sizeof(bin_row)), "f",
	    btb("", 0), 1, bts("empty")));
	must(put_cell(t.s, "bin", btb(bin_row, sizeof(bin_row)), "f",
	    btb(bin_q1, sizeof(bin_q1)), 2, btb(bin_val, sizeof(bin_val))));
	must(put_cell(t.s, "bin", btb(bin_row, sizeof(bin_row)), "f",
	    btb(bin_q2, sizeof(bin_q2)), 3, btb("", 0)));
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		must(put_str(t.s, "bin", rows[i], "f", "q", 1, "x"));
	must(put_cell(t.s, "bin", btb("\0", 1), "f", bts("q"), 1, bts("x")));
	must(put_cell(t.s, "bin", btb("\0\0", 2), "f", bts("q"), 1,
	    bts("x")));
	in_three_stages(&t, binary_check);
	tstore_destroy(&t);
}

/* ---- Limits: the largest row and qualifier are accepted ---- */

static void
test_limits(void)
{
	static const char *const fams[] = { "f", NULL };
	struct bt_bytes row, qual;
	struct tstore t;
	char *big, *val = NULL;
	size_t len = 0;
	int64_t ts = 0;

	tstore_fault(&t, NULL);
	must(make_table(t.s, "lim", fams));
	big = xmalloc(BT_MAX_ROW + 1);
	memset(big, 'r', BT_MAX_ROW + 1);
	big[0] = 0x00;
	big[BT_MAX_ROW - 1] = (char)0xff;
	row = btb(big, BT_MAX_ROW);
	qual = btb(big, BT_MAX_QUALIFIER);
	is_int(put_cell(t.s, "lim", row, "f", qual, 7, bts("v")), 0,
	    "limits: a 64 KiB row with a 16 KiB qualifier is accepted");
	is_int(bt_store_flush(t.s), 0, "limits: flush");
	is_int(get_newest(t.s, "lim", row, "f", qual, &val, &len, &ts), 0,
	    "limits: the 64 KiB row reads back");
	ok(val != NULL && len == 1 && val[0] == 'v' && ts == 7,
	    "limits: with its value and timestamp");
	free(val);
	val = NULL;
	is_int(get_newest(t.s, "lim", btb(big, BT_MAX_ROW - 1), "f", qual,
	    NULL, NULL, NULL), BT_NOTFOUND,
	    "limits: a one byte shorter row is another row");
	tstore_destroy(&t);
	free(big);
}

/*
 * A row too large for the store's pool of read rows gives its buffer to
 * the bt_row instead of being copied: its cells read as any row's do
 * (family names and values NUL-terminated, qualifiers exact), from the
 * memtable and from an SSTable, and rows read after it are right too.
 */
static void
test_large_row(void)
{
	static const char *const fams[] = { "a", "b", NULL };
	const size_t big = 300 << 10;
	struct bt_row *r = NULL;
	struct tstore t;
	char *v;

	tstore_fault(&t, NULL);
	must(make_table(t.s, "lg", fams));
	v = xmalloc(big);
	for (size_t i = 0; i < big; i++)
		v[i] = (char)('a' + i % 26);
	must(put_cell(t.s, "lg", bts("r"), "a", bts("q1"), 5, btb(v, big)));
	must(put_str(t.s, "lg", "r", "b", "", 6, "small"));
	must(put_str(t.s, "lg", "s", "a", "q", 1, "next"));
	for (int stage = 0; stage < 2; stage++) {
		const char *where = stage == 0 ? "memtable" : "flushed";

		if (stage == 1)
			is_int(bt_store_flush(t.s), 0, "large row: flush");
		is_int(bt_read_row(t.s, "lg", bts("r"), NULL, &r), 0,
		    "large row (%s): read", where);
		ok(r != NULL && r->cell_count == 2 &&
		    bytes_eq(r->key, bts("r")) &&
		    strcmp(r->cells[0].family, "a") == 0 &&
		    bytes_eq(r->cells[0].qualifier, bts("q1")) &&
		    r->cells[0].ts == 5 && r->cells[0].value.size == big &&
		    memcmp(r->cells[0].value.data, v, big) == 0 &&
		    ((const char *)r->cells[0].value.data)[big] == '\0' &&
		    strcmp(r->cells[1].family, "b") == 0 &&
		    r->cells[1].qualifier.size == 0 &&
		    strcmp((const char *)r->cells[1].value.data, "small") == 0,
		    "large row (%s): cells, NULs and bytes as written",
		    where);
		bt_row_free(r);
		r = NULL;
		is_text(read_text_str(t.s, "lg", "s", NULL), "a:q@1=next\n",
		    "large row (%s): the next row read is right", where);
	}
	bt_row_free(NULL);
	free(v);
	tstore_destroy(&t);
}

/* ---- Scans over row ranges ---- */

static void
scan_check(struct tstore *t, const char *stage)
{
	struct bt_scan_options so;
	struct bt_column fam_e = { .family = "e" };
	struct sbuf want = { 0 };
	char *w;
	int i;

	memset(&so, 0, sizeof(so));
	for (i = 0; i < 20; i++)
		sbuf_printf(&want, "[r%02d]\n", i);
	w = sbuf_take(&want);
	is_text(scan_keys(t->s, "scan", &so), w,
	    "scan (%s): every row in order", stage);
	free(w);

	so.start = bts("r05");
	so.end = bts("r10");
	is_text(scan_keys(t->s, "scan", &so),
	    "[r05]\n[r06]\n[r07]\n[r08]\n[r09]\n",
	    "scan (%s): [r05, r10)", stage);
	so.start_exclusive = true;
	is_text(scan_keys(t->s, "scan", &so),
	    "[r06]\n[r07]\n[r08]\n[r09]\n",
	    "scan (%s): (r05, r10)", stage);
	so.start = bts("r055");
	so.start_exclusive = false;
	is_text(scan_keys(t->s, "scan", &so),
	    "[r06]\n[r07]\n[r08]\n[r09]\n",
	    "scan (%s): a start between rows", stage);
	so.start = bts("r10");
	so.end = bts("r10");
	is_text(scan_keys(t->s, "scan", &so), "",
	    "scan (%s): an empty range", stage);

	memset(&so, 0, sizeof(so));
	so.prefix = bts("r1");
	is_text(scan_keys(t->s, "scan", &so),
	    "[r10]\n[r11]\n[r12]\n[r13]\n[r14]\n"
	    "[r15]\n[r16]\n[r17]\n[r18]\n[r19]\n",
	    "scan (%s): prefix r1", stage);
	so.limit = 3;
	is_text(scan_keys(t->s, "scan", &so), "[r10]\n[r11]\n[r12]\n",
	    "scan (%s): prefix r1, limit 3", stage);
	so.prefix = bts("x");
	so.limit = 0;
	is_text(scan_keys(t->s, "scan", &so), "",
	    "scan (%s): a prefix no row has", stage);

	memset(&so, 0, sizeof(so));
	so.limit = 2;
	is_text(scan_keys(t->s, "scan", &so), "[r00]\n[r01]\n",
	    "scan (%s): limit 2", stage);
	so.limit = 0;
	so.start = bts("r18");
	is_text(scan_keys(t->s, "scan", &so), "[r18]\n[r19]\n",
	    "scan (%s): open end", stage);
	so.start = bts("");
	so.end = bts("r02");
	is_text(scan_keys(t->s, "scan", &so), "[r00]\n[r01]\n",
	    "scan (%s): open start", stage);

	/* Rows without a selected cell are skipped. */
	memset(&so, 0, sizeof(so));
	so.read.columns = &fam_e;
	so.read.column_count = 1;
	so.end = bts("r08");
	is_text(scan_text(t->s, "scan", &so),
	    "[r00]\ne:x@2=even\n"
	    "[r02]\ne:x@2=even\n"
	    "[r04]\ne:x@2=even\n"
	    "[r06]\ne:x@2=even\n",
	    "scan (%s): family e only: odd rows are skipped", stage);
	so.read.column_count = 0;
	so.read.columns = NULL;
	so.read.cells_per_column = 1;
	so.start = bts("r02");
	so.end = bts("r04");
	is_text(scan_text(t->s, "scan", &so),
	    "[r02]\ne:x@2=even\nf:q@1=r02\n"
	    "[r03]\nf:q@1=r03\n",
	    "scan (%s): cells of rows r02, r03", stage);
}

static void
test_scan(void)
{
	static const char *const fams[] = { "e", "f", NULL };
	struct bt_scan_options so = { 0 };
	struct bt_scan *sc = NULL;
	struct bt_row *r;
	struct sbuf got = { 0 };
	struct tstore t;
	char row[8];
	int i, rc;

	tstore_fault(&t, NULL);
	must(make_table(t.s, "scan", fams));
	is_text(scan_keys(t.s, "scan", &so), "", "scan: an empty table");
	is_text(scan_keys(t.s, "nosuchtable", &so),
	    "ERROR(-2 No such file or directory)",
	    "scan: unknown table is -ENOENT");
	/* Written in a scrambled order. */
	for (i = 0; i < 20; i++) {
		int k = (i * 7) % 20;

		snprintf(row, sizeof(row), "r%02d", k);
		must(put_str(t.s, "scan", row, "f", "q", 1, row));
		if (k % 2 == 0)
			must(put_str(t.s, "scan", row, "e", "x", 2, "even"));
	}
	in_three_stages(&t, scan_check);

	/* A scan sees the table as of its opening. */
	so.end = bts("r09");
	so.start = bts("r06");
	if (bt_scan_open(t.s, "scan", &so, &sc) != 0)
		tap_bail("bt_scan_open");
	must(put_str(t.s, "scan", "r065", "f", "q", 1, "new"));
	must(del_str(t.s, "scan", "r07", BT_DELETE_ROW, NULL, NULL, 0));
	must(put_str(t.s, "scan", "r08", "f", "q", 5, "newer"));
	for (;;) {
		r = NULL;
		if ((rc = bt_scan_next(sc, &r)) != 0)
			break;
		sbuf_add(&got, "[", 1);
		sbuf_escaped(&got, r->key.data, r->key.size);
		sbuf_add(&got, "]\n", 2);
		render_cells(&got, r, false);
		bt_row_free(r);
	}
	is_int(rc, BT_DONE, "scan snapshot: ends with BT_DONE");
	bt_scan_close(sc);
	is_text(sbuf_take(&got),
	    "[r06]\ne:x@2=even\nf:q@1=r06\n"
	    "[r07]\nf:q@1=r07\n"
	    "[r08]\ne:x@2=even\nf:q@1=r08\n",
	    "scan snapshot: writes after the open are not seen");
	memset(&so, 0, sizeof(so));
	so.start = bts("r06");
	so.end = bts("r09");
	is_text(scan_keys(t.s, "scan", &so), "[r06]\n[r065]\n[r08]\n",
	    "scan snapshot: a new scan sees them");
	tstore_destroy(&t);
}

/* ---- Server timestamps ---- */

static void
test_server_timestamps(void)
{
	static const char *const fams[] = { "f", "g", NULL };
	struct bt_mutation two[2] = {
		{ .kind = BT_PUT, .family = "f", .qualifier = { "a", 1 },
		  .ts = BT_TS_SERVER, .value = { "1", 1 } },
		{ .kind = BT_PUT, .family = "g", .qualifier = { "b", 1 },
		  .ts = BT_TS_SERVER, .value = { "2", 1 } },
	};
	enum { N = 1000 };
	int64_t *stamps = xmalloc(N * sizeof(*stamps));
	int64_t stamp, before;
	struct bt_row *r = NULL;
	struct tstore t;
	bool increasing = true, values = true, all_ok = true;
	char val[16];
	int i, rc;

	tstore_fault(&t, NULL);
	if (tstore_cell_skip(&t, "sets the store's clock")) {
		free(stamps);
		return;
	}
	must(make_table(t.s, "ts", fams));
	before = (int64_t)env_now_micros(t.env);
	for (i = 0; i < N; i++) {
		struct bt_mutation m = {
			.kind = BT_PUT, .family = "f", .qualifier = { "c", 1 },
			.ts = BT_TS_SERVER,
		};

		snprintf(val, sizeof(val), "%d", i);
		m.value = bts(val);
		stamps[i] = -1;
		rc = bt_mutate_row(t.s, "ts", bts("row"), &m, 1, NULL,
		    &stamps[i]);
		if (rc != 0)
			all_ok = false;
		if (i > 0 && stamps[i] <= stamps[i - 1])
			increasing = false;
	}
	ok(all_ok, "server ts: %d puts to one cell succeed", N);
	ok(increasing, "server ts: the returned stamps strictly increase");
	ok(stamps[0] >= before - 1000000 && stamps[0] <= before + 60000000,
	    "server ts: the stamp is the clock in microseconds "
	    "(%" PRId64 " vs %" PRId64 ")", stamps[0], before);
	rc = bt_read_row(t.s, "ts", bts("row"), NULL, &r);
	is_int(rc, 0, "server ts: read the row");
	if (rc == 0) {
		is_int(r->cell_count, N, "server ts: %d distinct versions", N);
		for (i = 0; i < (int)r->cell_count && i < N; i++) {
			snprintf(val, sizeof(val), "%d", N - 1 - i);
			if (r->cells[i].ts != stamps[N - 1 - i] ||
			    !bytes_eq(r->cells[i].value, bts(val)))
				values = false;
		}
		ok(values, "server ts: newest first, each with its value");
		bt_row_free(r);
	}

	/* All server-stamped puts of one call share the stamp. */
	stamp = -1;
	is_int(bt_mutate_row(t.s, "ts", bts("two"), two, 2, NULL, &stamp), 0,
	    "server ts: two puts in one call");
	{
		struct sbuf want = { 0 };
		char *w;

		sbuf_printf(&want, "f:a@%" PRId64 "=1\ng:b@%" PRId64 "=2\n",
		    stamp, stamp);
		w = sbuf_take(&want);
		is_text(read_text_str(t.s, "ts", "two", NULL), w,
		    "server ts: both cells carry the returned stamp");
		free(w);
	}

	/* Still distinct and increasing when the clock stands still (ahead
	 * of every stamp given so far, as a real clock would be). */
	env_fault_set_clock(t.env, env_now_micros(t.env) + 10000000);
	increasing = true;
	all_ok = true;
	for (i = 0; i < 10; i++) {
		struct bt_mutation m = {
			.kind = BT_PUT, .family = "f", .qualifier = { "s", 1 },
			.ts = BT_TS_SERVER, .value = { "v", 1 },
		};

		if (bt_mutate_row(t.s, "ts", bts("still"), &m, 1, NULL,
		    &stamps[i]) != 0)
			all_ok = false;
		if (i > 0 && stamps[i] <= stamps[i - 1])
			increasing = false;
	}
	ok(all_ok && increasing,
	    "server ts: a frozen clock still gives increasing stamps");
	r = NULL;
	if (bt_read_row(t.s, "ts", bts("still"), NULL, &r) == 0) {
		is_int(r->cell_count, 10,
		    "server ts: frozen clock: 10 versions");
		bt_row_free(r);
	} else {
		ok(false, "server ts: frozen clock: read the row");
	}
	/* And after a reopen, a new stamp is after the old ones. */
	is_int(tstore_reopen(&t), 0, "server ts: clean close");
	stamp = -1;
	{
		struct bt_mutation m = {
			.kind = BT_PUT, .family = "f", .qualifier = { "s", 1 },
			.ts = BT_TS_SERVER, .value = { "w", 1 },
		};

		is_int(bt_mutate_row(t.s, "ts", bts("still"), &m, 1, NULL,
		    &stamp), 0, "server ts: put after reopen");
	}
	ok(stamp > stamps[9],
	    "server ts: after a reopen the stamp still increases "
	    "(%" PRId64 " > %" PRId64 ")", stamp, stamps[9]);
	tstore_destroy(&t);
	free(stamps);
}

/* ---- Errors write nothing ---- */

static void
test_errors(void)
{
	static const char *const fams[] = { "f", "g", NULL };
	struct bt_options opts = { .max_cell = 1024 };
	struct bt_mutation m[2];
	struct tstore t;
	char *big = xmalloc(BT_MAX_ROW + 2);
	struct bt_row *r = NULL;

	memset(big, 'x', BT_MAX_ROW + 2);
	tstore_fault(&t, &opts);
	if (tstore_cell_skip(&t, "sets the store's max_cell")) {
		free(big);
		return;
	}
	must(make_table(t.s, "err", fams));

	is_int(put_str(t.s, "nosuch", "r", "f", "q", 1, "v"), -ENOENT,
	    "errors: put to an unknown table is -ENOENT");
	is_int(bt_read_row(t.s, "nosuch", bts("r"), NULL, &r), -ENOENT,
	    "errors: read of an unknown table is -ENOENT");
	is_int(put_str(t.s, "err", "r", "nosuch", "q", 1, "v"), -ENOENT,
	    "errors: put to an unknown family is -ENOENT");

	/* One bad op fails the whole mutation. */
	memset(m, 0, sizeof(m));
	m[0].kind = BT_PUT;
	m[0].family = "f";
	m[0].qualifier = bts("q");
	m[0].ts = 1;
	m[0].value = bts("good");
	m[1] = m[0];
	m[1].family = "nosuch";
	is_int(bt_mutate_row(t.s, "err", bts("r"), m, 2, NULL, NULL), -ENOENT,
	    "errors: a mutation with one unknown family is -ENOENT");
	is_int(put_cell(t.s, "err", btb("", 0), "f", bts("q"), 1, bts("v")),
	    -EINVAL, "errors: an empty row key is -EINVAL");
	is_int(put_cell(t.s, "err", btb(big, BT_MAX_ROW + 1), "f", bts("q"),
	    1, bts("v")), -EINVAL, "errors: a row over 64 KiB is -EINVAL");
	is_int(put_cell(t.s, "err", bts("r"), "f",
	    btb(big, BT_MAX_QUALIFIER + 1), 1, bts("v")), -EINVAL,
	    "errors: a qualifier over 16 KiB is -EINVAL");
	is_int(put_cell(t.s, "err", bts("r"), "f", bts("q"), 1,
	    btb(big, 1025)), -EFBIG, "errors: a value over max_cell is -EFBIG");
	m[1] = m[0];
	m[1].qualifier = bts("q2");
	m[1].value = btb(big, 2000);
	is_int(bt_mutate_row(t.s, "err", bts("r"), m, 2, NULL, NULL), -EFBIG,
	    "errors: a mutation with one value over max_cell is -EFBIG");
	is_int(put_cell(t.s, "err", bts("r"), "f", bts("q"), -5, bts("v")),
	    -EINVAL, "errors: a negative timestamp is -EINVAL");
	is_int(bt_read_row(t.s, "err", btb("", 0), NULL, &r), -EINVAL,
	    "errors: reading an empty row key is -EINVAL");
	/* No table name at all: -EINVAL from every call, no crash. */
	{
		struct bt_scan *sc = NULL;
		char *text = NULL;
		int64_t sum;

		is_int(bt_read_row(t.s, NULL, bts("r"), NULL, &r), -EINVAL,
		    "errors: a read of no table name is -EINVAL");
		is_int(put_cell(t.s, NULL, bts("r"), "f", bts("q"), 1,
		    bts("v")), -EINVAL,
		    "errors: a put to no table name is -EINVAL");
		is_int(bt_scan_open(t.s, NULL, NULL, &sc), -EINVAL,
		    "errors: a scan of no table name is -EINVAL");
		is_int(bt_increment(t.s, NULL, bts("r"), "f", bts("n"), 1,
		    NULL, &sum, NULL), -EINVAL,
		    "errors: an increment of no table name is -EINVAL");
		is_int(bt_table_describe(t.s, NULL, &text), -EINVAL,
		    "errors: describing no table name is -EINVAL");
		is_int(bt_table_delete(t.s, NULL), -EINVAL,
		    "errors: deleting no table name is -EINVAL");
		is_int(bt_table_split(t.s, NULL, bts("m")), -EINVAL,
		    "errors: splitting no table name is -EINVAL");
		is_int(bt_family_create(t.s, "err", NULL), -EINVAL,
		    "errors: creating no family spec is -EINVAL");
	}

	is_text(read_text_str(t.s, "err", "r", NULL), "NOTFOUND",
	    "errors: nothing was written");

	is_int(put_cell(t.s, "err", bts("r"), "f", bts("q"), 1,
	    btb(big, 1024)), 0, "errors: a value of exactly max_cell is fine");
	is_int(tstore_reopen(&t), 0, "errors: clean close");
	is_text(read_text_str(t.s, "err", "r", &(struct bt_read_options){
	    .keys_only = true }), "f:q@1= size=1024\n",
	    "errors: after a reopen only the good put is there");
	/* A max_cell no log record could hold is refused at the open;
	 * the largest one is taken. */
	bt_store_close(t.s);
	t.s = NULL;
	t.opts.max_cell = BT_MAX_CELL_LIMIT + 1;
	is_int(bt_store_open(t.path, &t.opts, &t.s), -EINVAL,
	    "errors: max_cell over BT_MAX_CELL_LIMIT is -EINVAL");
	t.opts.max_cell = BT_MAX_CELL_LIMIT;
	is_int(bt_store_open(t.path, &t.opts, &t.s), 0,
	    "errors: max_cell of BT_MAX_CELL_LIMIT opens");
	tstore_destroy(&t);
	free(big);
}

/* ---- Schema ---- */

static bool
names_are(char **names, size_t count, const char *const *want, size_t n)
{
	size_t i;

	if (names == NULL || count != n || names[count] != NULL)
		return false;
	for (i = 0; i < n; i++)
		if (strcmp(names[i], want[i]) != 0)
			return false;
	return true;
}

static void
test_schema(void)
{
	static const char *const three[] = { "alpha", "mid", "zeta" };
	static const char *const two[] = { "alpha", "zeta" };
	struct bt_family_spec fams[2] = {
		{ .name = "a", .gc_policy = "maxversions=3" },
		{ .name = "b" },
	};
	struct bt_family_spec spec;
	struct tstore t;
	char **names = NULL;
	size_t count = 0;
	char *text = NULL;

	tstore_fault(&t, NULL);
	is_int(bt_table_list(t.s, &names, &count), 0, "schema: list empty");
	ok(names != NULL && count == 0 && names[0] == NULL,
	    "schema: no tables at first");
	bt_names_free(names);

	is_int(bt_table_create(t.s, "zeta", fams, 2, NULL, 0, 0), 0,
	    "schema: create zeta");
	is_int(bt_table_create(t.s, "alpha", NULL, 0, NULL, 0, 0), 0,
	    "schema: create alpha without families");
	is_int(bt_table_create(t.s, "mid", fams, 1, NULL, 0, 0), 0,
	    "schema: create mid");
	is_int(bt_table_create(t.s, "mid", NULL, 0, NULL, 0, 0), -EEXIST,
	    "schema: creating mid again is -EEXIST");
	names = NULL;
	is_int(bt_table_list(t.s, &names, &count), 0, "schema: list");
	ok(names_are(names, count, three, 3),
	    "schema: alpha, mid, zeta in order");
	bt_names_free(names);

	/* describe */
	is_int(bt_table_describe(t.s, "zeta", &text), 0, "schema: describe");
	is_str(text != NULL ? text : "",
	    "a group=default gc=maxversions=3\n"
	    "b group=default gc=never\n",
	    "schema: describe names both families, group and policy");
	free(text);
	text = NULL;
	is_int(bt_table_describe(t.s, "nosuch", &text), -ENOENT,
	    "schema: describe of an unknown table is -ENOENT");

	/* GC policies */
	is_int(bt_family_set_gc(t.s, "zeta", "b", "MaxVersions = 2 || maxage=7d"),
	    0, "schema: setgc with cbt's spelling");
	is_int(bt_family_set_gc(t.s, "zeta", "a", "maxversions=0"), -EINVAL,
	    "schema: setgc maxversions=0 is -EINVAL");
	is_int(bt_family_set_gc(t.s, "zeta", "a", "bogus"), -EINVAL,
	    "schema: setgc bogus is -EINVAL");
	is_int(bt_family_set_gc(t.s, "zeta", "a", "maxversions=3 and"),
	    -EINVAL, "schema: setgc with a dangling and is -EINVAL");
	is_int(bt_family_set_gc(t.s, "zeta", "a", ""), -EINVAL,
	    "schema: setgc with empty text is -EINVAL");
	is_int(bt_family_set_gc(t.s, "zeta", "nosuch", "never"), -ENOENT,
	    "schema: setgc on an unknown family is -ENOENT");
	is_int(bt_family_set_gc(t.s, "nosuch", "a", "never"), -ENOENT,
	    "schema: setgc on an unknown table is -ENOENT");
	spec = (struct bt_family_spec){ .name = "c", .gc_policy = "nonsense" };
	is_int(bt_family_create(t.s, "zeta", &spec), -EINVAL,
	    "schema: a family with a bad policy is -EINVAL");
	spec = (struct bt_family_spec){ .name = "" };
	is_int(bt_family_create(t.s, "zeta", &spec), -EINVAL,
	    "schema: an empty family name is -EINVAL");
	spec = (struct bt_family_spec){ .name = ".hidden" };
	is_int(bt_family_create(t.s, "zeta", &spec), -EINVAL,
	    "schema: a family name starting with . is -EINVAL");
	spec = (struct bt_family_spec){ .name = "a/b" };
	is_int(bt_family_create(t.s, "zeta", &spec), -EINVAL,
	    "schema: a family name with / is -EINVAL");
	spec = (struct bt_family_spec){ .name = "a" };
	is_int(bt_family_create(t.s, "zeta", &spec), -EEXIST,
	    "schema: creating family a again is -EEXIST");
	spec = (struct bt_family_spec){ .name = "x" };
	is_int(bt_family_create(t.s, "nosuch", &spec), -ENOENT,
	    "schema: a family in an unknown table is -ENOENT");
	spec = (struct bt_family_spec){ .name = "c-1.x_Y",
	    .gc_policy = "maxage=12h" };
	is_int(bt_family_create(t.s, "zeta", &spec), 0,
	    "schema: create family c-1.x_Y");
	is_int(tstore_reopen(&t), 0, "schema: clean close");
	is_int(bt_table_describe(t.s, "zeta", &text), 0,
	    "schema: describe after reopen");
	is_str(text != NULL ? text : "",
	    "a group=default gc=maxversions=3\n"
	    "b group=default gc=maxversions=2 or maxage=7d\n"
	    "c-1.x_Y group=default gc=maxage=12h\n",
	    "schema: the new family and policy survive a reopen");
	free(text);
	text = NULL;

	/* Deleting a family drops its data at once, even if re-created.
	 * (b goes back to keeping everything: maxage=7d would hide ts 1.) */
	is_int(bt_family_set_gc(t.s, "zeta", "b", "never"), 0,
	    "schema: setgc never");
	must(put_str(t.s, "zeta", "r", "a", "q", 1, "in a"));
	must(put_str(t.s, "zeta", "r", "b", "q", 1, "in b"));
	is_int(bt_family_delete(t.s, "zeta", "a"), 0, "schema: delete family a");
	is_text(read_text_str(t.s, "zeta", "r", NULL), "b:q@1=in b\n",
	    "schema: family a's data is gone at once");
	is_int(put_str(t.s, "zeta", "r", "a", "q", 2, "v"), -ENOENT,
	    "schema: a put to the deleted family is -ENOENT");
	is_int(bt_family_delete(t.s, "zeta", "a"), -ENOENT,
	    "schema: deleting it again is -ENOENT");
	spec = (struct bt_family_spec){ .name = "a" };
	is_int(bt_family_create(t.s, "zeta", &spec), 0,
	    "schema: re-create family a");
	is_text(read_text_str(t.s, "zeta", "r", NULL), "b:q@1=in b\n",
	    "schema: the re-created family a is empty");
	/* The memtable lists the dropped family's a:q@1 before a put at an
	 * older time in the re-created family: a newest-version read of a:q
	 * looks past the first for the second. */
	must(put_str(t.s, "zeta", "r", "a", "q", 0, "new a"));
	is_text(newest_text(t.s, "zeta", "r", "a", "q"), "new a@0",
	    "schema: the newest of a:q is the re-created family's older put");
	must(del_str(t.s, "zeta", "r", BT_DELETE_FAMILY, "a", NULL, 0));
	is_int(tstore_reopen(&t), 0, "schema: clean close");
	is_text(read_text_str(t.s, "zeta", "r", NULL), "b:q@1=in b\n",
	    "schema: and stays empty after a reopen");

	/* Deleting a table. */
	must(put_str(t.s, "mid", "r", "a", "q", 1, "old"));
	is_int(bt_store_flush(t.s), 0, "schema: flush");
	is_int(bt_table_delete(t.s, "mid"), 0, "schema: delete table mid");
	is_int(bt_table_delete(t.s, "mid"), -ENOENT,
	    "schema: deleting mid again is -ENOENT");
	is_text(read_text_str(t.s, "mid", "r", NULL),
	    "ERROR(-2 No such file or directory)",
	    "schema: reading the deleted table is -ENOENT");
	names = NULL;
	is_int(bt_table_list(t.s, &names, &count), 0, "schema: list");
	ok(names_are(names, count, two, 2), "schema: alpha, zeta remain");
	bt_names_free(names);
	is_int(bt_table_create(t.s, "mid", fams, 1, NULL, 0, 0), 0,
	    "schema: re-create table mid");
	is_text(read_text_str(t.s, "mid", "r", NULL), "NOTFOUND",
	    "schema: the re-created table is empty");
	is_int(tstore_reopen(&t), 0, "schema: clean close");
	is_text(read_text_str(t.s, "mid", "r", NULL), "NOTFOUND",
	    "schema: and stays empty after a reopen");
	names = NULL;
	is_int(bt_table_list(t.s, &names, &count), 0, "schema: list");
	ok(names_are(names, count, three, 3),
	    "schema: alpha, mid, zeta after reopen");
	bt_names_free(names);
	tstore_destroy(&t);
}

/* ---- Check-and-mutate, increment, append ---- */

static void
test_check_and_mutate(void)
{
	static const char *const fams[] = { "f", "g", NULL };
	struct bt_mutation put_v1 = {
		.kind = BT_PUT, .family = "f", .qualifier = { "lock", 4 },
		.ts = 10, .value = { "v1", 2 },
	};
	struct bt_mutation put_v2[2] = {
		{ .kind = BT_PUT, .family = "f", .qualifier = { "lock", 4 },
		  .ts = 20, .value = { "v2", 2 } },
		{ .kind = BT_PUT, .family = "g", .qualifier = { "other", 5 },
		  .ts = 20, .value = { "side", 4 } },
	};
	struct bt_bytes v1 = bts("v1"), nope = bts("nope"), v2 = bts("v2");
	struct bt_bytes old = bts("old");
	struct tstore t;
	bool applied;

	tstore_fault(&t, NULL);
	must(make_table(t.s, "cm", fams));
	applied = false;
	is_int(bt_check_and_mutate(t.s, "cm", bts("r"), "f", bts("lock"),
	    NULL, &put_v1, 1, NULL, &applied), 0, "cam: absent check");
	ok(applied, "cam: applied when the column is absent");
	applied = true;
	is_int(bt_check_and_mutate(t.s, "cm", bts("r"), "f", bts("lock"),
	    NULL, &put_v2[0], 1, NULL, &applied), 0, "cam: absent check again");
	ok(!applied, "cam: not applied when the column exists");
	is_text(read_text_str(t.s, "cm", "r", NULL), "f:lock@10=v1\n",
	    "cam: only the first put is there");

	applied = true;
	is_int(bt_check_and_mutate(t.s, "cm", bts("r"), "f", bts("lock"),
	    &nope, put_v2, 2, NULL, &applied), 0, "cam: unequal check");
	ok(!applied, "cam: not applied when the value differs");
	is_text(read_text_str(t.s, "cm", "r", NULL), "f:lock@10=v1\n",
	    "cam: nothing changed");
	applied = false;
	is_int(bt_check_and_mutate(t.s, "cm", bts("r"), "f", bts("lock"),
	    &v1, put_v2, 2, NULL, &applied), 0, "cam: equal check");
	ok(applied, "cam: applied when the value is equal");
	is_text(read_text_str(t.s, "cm", "r", NULL),
	    "f:lock@20=v2\nf:lock@10=v1\ng:other@20=side\n",
	    "cam: both mutations were applied");
	applied = true;
	is_int(bt_check_and_mutate(t.s, "cm", bts("r"), "f", bts("lock"),
	    &v1, &put_v1, 1, NULL, &applied), 0, "cam: check an old version");
	ok(!applied, "cam: compares with the newest version only");

	/* A prefix or extension of the value is not equal. */
	applied = true;
	is_int(bt_check_and_mutate(t.s, "cm", bts("r"), "f", bts("lock"),
	    &(struct bt_bytes){ "v", 1 }, &put_v1, 1, NULL, &applied), 0,
	    "cam: check with a prefix of the value");
	ok(!applied, "cam: a prefix of the value is not equal");
	applied = true;
	is_int(bt_check_and_mutate(t.s, "cm", bts("r"), "f", bts("lock"),
	    &(struct bt_bytes){ "v2x", 3 }, &put_v1, 1, NULL, &applied), 0,
	    "cam: check with an extension of the value");
	ok(!applied, "cam: an extension of the value is not equal");

	/* Deleted columns count as absent; an empty value is a value. */
	must(del_str(t.s, "cm", "r", BT_DELETE_COLUMN, "f", "lock", 0));
	applied = false;
	is_int(bt_check_and_mutate(t.s, "cm", bts("r"), "f", bts("lock"),
	    NULL, &put_v1, 1, NULL, &applied), 0, "cam: absent after delete");
	ok(applied, "cam: a deleted column is absent");
	is_text(newest_text(t.s, "cm", "r", "f", "lock"), "v1@10",
	    "cam: the put after the delete is visible");
	must(put_str(t.s, "cm", "e", "f", "q", 1, ""));
	applied = true;
	is_int(bt_check_and_mutate(t.s, "cm", bts("e"), "f", bts("q"),
	    NULL, &put_v1, 1, NULL, &applied), 0, "cam: empty value absent?");
	ok(!applied, "cam: a column whose value is empty is not absent");
	applied = false;
	is_int(bt_check_and_mutate(t.s, "cm", bts("e"), "f", bts("q"),
	    &(struct bt_bytes){ "", 0 }, &put_v1, 1, NULL, &applied), 0,
	    "cam: equal to the empty value");
	ok(applied, "cam: the empty value equals the empty value");

	/* Errors. */
	is_int(bt_check_and_mutate(t.s, "cm", bts("r"), "nosuch", bts("q"),
	    NULL, &put_v1, 1, NULL, &applied), -ENOENT,
	    "cam: unknown family in the check is -ENOENT");
	is_int(bt_check_and_mutate(t.s, "nosuch", bts("r"), "f", bts("q"),
	    NULL, &put_v1, 1, NULL, &applied), -ENOENT,
	    "cam: unknown table is -ENOENT");
	/* Old versions: the check sees the newest by timestamp. */
	must(put_str(t.s, "cm", "o", "f", "q", 50, "new"));
	must(put_str(t.s, "cm", "o", "f", "q", 40, "old"));
	applied = true;
	is_int(bt_check_and_mutate(t.s, "cm", bts("o"), "f", bts("q"),
	    &old, &put_v1, 1, NULL, &applied), 0, "cam: check newest by ts");
	ok(!applied, "cam: the newest is by timestamp, not by write order");
	applied = true;
	is_int(bt_check_and_mutate(t.s, "cm", bts("o"), "f", bts("q"),
	    &v2, &put_v1, 1, NULL, &applied), 0, "cam: check v2");
	ok(!applied, "cam: v2 is not in row o");

	/* The version check: the same bytes in a newer version fail it. */
	struct bt_bytes same = bts("new");
	applied = false;
	is_int(bt_check_version_and_mutate(t.s, "cm", bts("o"), "f", bts("q"),
	    &same, 50, &put_v1, 1, NULL, &applied, NULL), 0,
	    "cvam: value and timestamp of the newest version");
	ok(applied, "cvam: applied when both match");
	must(put_str(t.s, "cm", "o", "f", "q", 60, "new"));
	applied = true;
	is_int(bt_check_version_and_mutate(t.s, "cm", bts("o"), "f", bts("q"),
	    &same, 50, &put_v1, 1, NULL, &applied, NULL), 0,
	    "cvam: the same value in a newer version");
	ok(!applied, "cvam: not applied: the version changed, not the bytes");

	/* Moving a version within a row. */
	must(put_str(t.s, "cm", "m", "f", "a", 7, "moved"));
	is_int(bt_move_version(t.s, "cm", bts("m"), "f", bts("a"), 7, "g",
	    bts("b"), 9, NULL, NULL), 0, "move: a version to another column");
	is_text(read_text_str(t.s, "cm", "m", NULL), "g:b@9=moved\n",
	    "move: the value is at the new place only");
	is_int(bt_move_version(t.s, "cm", bts("m"), "f", bts("a"), 7, "g",
	    bts("b"), 10, NULL, NULL), -ENOENT,
	    "move: a version that is gone is -ENOENT");
	is_int(bt_move_version(t.s, "cm", bts("m"), "g", bts("b"), 9, "g",
	    bts("b"), 9, NULL, NULL), 0, "move: onto itself");
	is_text(read_text_str(t.s, "cm", "m", NULL), "g:b@9=moved\n",
	    "move: onto itself changes nothing");
	tstore_destroy(&t);
}

static void
test_increment_append(void)
{
	static const char *const fams[] = { "f", NULL };
	struct tstore t;
	int64_t result, stamp, ts;
	char *val;
	struct bt_row *r;
	int rc;

	tstore_fault(&t, NULL);
	must(make_table(t.s, "inc", fams));
	result = -1;
	stamp = -1;
	is_int(bt_increment(t.s, "inc", bts("r"), "f", bts("n"), 1, NULL,
	    &result, &stamp), 0, "incr: an absent counter");
	is_int(result, 1, "incr: absent counts as 0");
	val = NULL;
	rc = get_newest(t.s, "inc", bts("r"), "f", bts("n"), &val, NULL, &ts);
	ok(rc == 0 && strcmp(val, "1\n") == 0 && ts == stamp,
	    "incr: stored \"1\\n\" at the returned stamp");
	free(val);

	must(put_str(t.s, "inc", "r", "f", "c", 5, "41\n"));
	is_int(bt_increment(t.s, "inc", bts("r"), "f", bts("c"), 1, NULL,
	    &result, &stamp), 0, "incr: 41 + 1");
	is_int(result, 42, "incr: result 42");
	ok(stamp > 5, "incr: the new version is newer than the old one");
	{
		struct sbuf want = { 0 };
		char *w;

		sbuf_printf(&want, "42\\x0a@%" PRId64, stamp);
		w = sbuf_take(&want);
		is_text(newest_text(t.s, "inc", "r", "f", "c"), w,
		    "incr: \"42\\n\" at the returned stamp");
		free(w);
	}
	r = NULL;
	if (bt_read_row(t.s, "inc", bts("r"), &(struct bt_read_options){
	    .columns = &(struct bt_column){ .family = "f",
	    .has_qualifier = true, .qualifier = { "c", 1 } },
	    .column_count = 1 }, &r) == 0) {
		is_int(r->cell_count, 2, "incr: a new version was added");
		bt_row_free(r);
	} else {
		ok(false, "incr: read the counter");
	}
	must(put_str(t.s, "inc", "r", "f", "d", 5, "41"));
	is_int(bt_increment(t.s, "inc", bts("r"), "f", bts("d"), -50, NULL,
	    &result, NULL), 0, "incr: \"41\" without newline - 50");
	is_int(result, -9, "incr: result -9");
	is_int(bt_increment(t.s, "inc", bts("r"), "f", bts("d"), 0, NULL,
	    &result, NULL), 0, "incr: a negative stored value");
	is_int(result, -9, "incr: reads -9 back");

	must(put_str(t.s, "inc", "r", "f", "bad", 5, "abc"));
	is_int(bt_increment(t.s, "inc", bts("r"), "f", bts("bad"), 1, NULL,
	    &result, NULL), -EINVAL, "incr: non-integer is -EINVAL");
	must(put_str(t.s, "inc", "r", "f", "bad2", 5, "12x\n"));
	is_int(bt_increment(t.s, "inc", bts("r"), "f", bts("bad2"), 1, NULL,
	    &result, NULL), -EINVAL, "incr: \"12x\\n\" is -EINVAL");
	must(put_str(t.s, "inc", "r", "f", "max", 5, "9223372036854775807\n"));
	is_int(bt_increment(t.s, "inc", bts("r"), "f", bts("max"), 1, NULL,
	    &result, NULL), -ERANGE, "incr: INT64_MAX + 1 is -ERANGE");
	must(put_str(t.s, "inc", "r", "f", "min", 5,
	    "-9223372036854775808\n"));
	is_int(bt_increment(t.s, "inc", bts("r"), "f", bts("min"), -1, NULL,
	    &result, NULL), -ERANGE, "incr: INT64_MIN - 1 is -ERANGE");
	must(put_str(t.s, "inc", "r", "f", "huge", 5,
	    "99999999999999999999\n"));
	is_int(bt_increment(t.s, "inc", bts("r"), "f", bts("huge"), 1, NULL,
	    &result, NULL), -ERANGE,
	    "incr: a stored value beyond int64 is -ERANGE");
	is_text(read_text_str(t.s, "inc", "r", &(struct bt_read_options){
	    .columns = (struct bt_column[]){
		{ .family = "f", .has_qualifier = true, .qualifier = { "bad", 3 } },
		{ .family = "f", .has_qualifier = true, .qualifier = { "max", 3 } },
		{ .family = "f", .has_qualifier = true, .qualifier = { "min", 3 } },
	    }, .column_count = 3 }),
	    "f:bad@5=abc\n"
	    "f:max@5=9223372036854775807\\x0a\n"
	    "f:min@5=-9223372036854775808\\x0a\n",
	    "incr: failed increments wrote nothing");
	/* The sum is stored as canonical decimal and a newline, at the
	 * extremes of int64 and at zero too. */
	{
		static const struct {
			const char *q, *stored;
			int64_t delta;
			const char *want;
		} sums[] = {
			{ "lo", "-9223372036854775807", -1,
			    "-9223372036854775808\n" },
			{ "hi", "9223372036854775806\n", 1,
			    "9223372036854775807\n" },
			{ "z", "-7\n", 7, "0\n" },
			{ "absent", NULL, -120, "-120\n" },
			{ "ten", "9\n", 1, "10\n" },
		};

		for (size_t i = 0; i < sizeof(sums) / sizeof(sums[0]); i++) {
			struct bt_column col = { .family = "f",
			    .has_qualifier = true,
			    .qualifier = bts(sums[i].q) };
			struct bt_read_options ro = { .columns = &col,
			    .column_count = 1, .cells_per_column = 1 };

			if (sums[i].stored != NULL)
				must(put_str(t.s, "inc", "r", "f", sums[i].q,
				    5, sums[i].stored));
			must(bt_increment(t.s, "inc", bts("r"), "f",
			    bts(sums[i].q), sums[i].delta, NULL, &result,
			    NULL));
			r = NULL;
			if (bt_read_row(t.s, "inc", bts("r"), &ro, &r) == 0 &&
			    r->cell_count == 1) {
				ok(r->cells[0].value.size ==
				    strlen(sums[i].want) &&
				    memcmp(r->cells[0].value.data,
				    sums[i].want, strlen(sums[i].want)) == 0,
				    "incr: column %s %+" PRId64 " is stored "
				    "as its sum in canonical decimal and a "
				    "newline", sums[i].q, sums[i].delta);
			} else {
				ok(false, "incr: read %s back", sums[i].q);
			}
			bt_row_free(r);
		}
	}
	is_int(bt_increment(t.s, "inc", bts("r"), "nosuch", bts("c"), 1,
	    NULL, &result, NULL), -ENOENT,
	    "incr: unknown family is -ENOENT");

	/* Append. */
	stamp = -1;
	is_int(bt_append(t.s, "inc", bts("r"), "f", bts("log"), bts("ab"),
	    NULL, &stamp), 0, "append: to an absent column");
	{
		struct sbuf want = { 0 };
		char *w;

		sbuf_printf(&want, "ab@%" PRId64, stamp);
		w = sbuf_take(&want);
		is_text(newest_text(t.s, "inc", "r", "f", "log"), w,
		    "append: absent is empty");
		free(w);
	}
	is_int(bt_append(t.s, "inc", bts("r"), "f", bts("log"),
	    btb("c\0d", 3), NULL, NULL), 0, "append: binary suffix");
	is_int(bt_append(t.s, "inc", bts("r"), "f", bts("log"), btb("", 0),
	    NULL, NULL), 0, "append: empty suffix");
	r = NULL;
	if (bt_read_row(t.s, "inc", bts("r"), &(struct bt_read_options){
	    .columns = &(struct bt_column){ .family = "f",
	    .has_qualifier = true, .qualifier = { "log", 3 } },
	    .column_count = 1 }, &r) == 0) {
		ok(r->cell_count == 3 &&
		    bytes_eq(r->cells[0].value, btb("abc\0d", 5)) &&
		    bytes_eq(r->cells[1].value, btb("abc\0d", 5)) &&
		    bytes_eq(r->cells[2].value, btb("ab", 2)) &&
		    r->cells[0].ts > r->cells[1].ts &&
		    r->cells[1].ts > r->cells[2].ts,
		    "append: three versions ab, abc\\0d, abc\\0d");
		bt_row_free(r);
	} else {
		ok(false, "append: read the column");
	}
	is_int(tstore_reopen(&t), 0, "incr: clean close");
	is_int(bt_increment(t.s, "inc", bts("r"), "f", bts("c"), 8, NULL,
	    &result, NULL), 0, "incr: after reopen");
	is_int(result, 50, "incr: 42 + 8 = 50 after reopen");
	tstore_destroy(&t);
}

/*
 * Row mutations of 1, 8 (the most bt_mutate_row() converts without an
 * allocation), 9 and 40 puts each apply whole, with every value right;
 * one whose last op has no family is EINVAL and applies nothing.
 */
static void
test_mutation_sizes(void)
{
	static const char *const fams[] = { "f", NULL };
	static const size_t sizes[] = { 1, 8, 9, 40 };
	struct bt_mutation m[40];
	char quals[40][24], vals[40][48];
	struct bt_row *r;
	struct tstore t;

	tstore_fault(&t, NULL);
	must(make_table(t.s, "T", fams));
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t n = sizes[k], right = 0;
		char row[32];

		snprintf(row, sizeof(row), "row%zu", n);
		for (size_t i = 0; i < n; i++) {
			snprintf(quals[i], sizeof(quals[i]), "q%02zu", i);
			snprintf(vals[i], sizeof(vals[i]), "v%zu.%zu", n, i);
			m[i] = (struct bt_mutation){ .kind = BT_PUT,
			    .family = "f", .qualifier = bts(quals[i]),
			    .ts = 7, .value = bts(vals[i]) };
		}
		is_int(bt_mutate_row(t.s, "T", bts(row), m, n, NULL, NULL), 0,
		    "sizes: a row mutation of %zu puts", n);
		if (bt_read_row(t.s, "T", bts(row), NULL, &r) == 0) {
			for (size_t i = 0; i < r->cell_count && i < n; i++)
				if (bytes_eq(r->cells[i].qualifier,
				    bts(quals[i])) &&
				    bytes_eq(r->cells[i].value, bts(vals[i])))
					right++;
			if (r->cell_count != n)
				right = 0;
			bt_row_free(r);
		}
		is_int(right, n, "sizes: all %zu cells read back", n);

		snprintf(row, sizeof(row), "bad%zu", n);
		m[n - 1].family = NULL;
		is_int(bt_mutate_row(t.s, "T", bts(row), m, n, NULL, NULL),
		    -EINVAL, "sizes: %zu puts, the last without a family: "
		    "EINVAL", n);
		is_int(bt_read_row(t.s, "T", bts(row), NULL, &r), BT_NOTFOUND,
		    "sizes: and none of them applies");
	}
	tstore_destroy(&t);
}

/*
 * After a version with a future client timestamp, what an increment, an
 * append, bt_put_newest() and a check-and-mutate of the column write
 * becomes the newest version, one above it (what a write to latest
 * needs to read back).  Each fails on the code before ts_floor: it is
 * stored below the future version.
 */
static void
test_newest_above_future(void)
{
	static const char *const fams[] = { "f", NULL };
	const int64_t future = INT64_C(8000000000000000);
	struct bt_mutation put = { .kind = BT_PUT, .family = "f",
	    .qualifier = { "p", 1 }, .ts = BT_TS_SERVER,
	    .value = { "cam", 3 } };
	struct bt_bytes fut = { "future", 6 };
	struct tstore t;
	int64_t stamp = -1;
	bool applied = false;

	tstore_fault(&t, NULL);
	must(make_table(t.s, "nf", fams));
	must(put_str(t.s, "nf", "r", "f", "n", future, "7\n"));
	must(put_str(t.s, "nf", "r", "f", "a", future, "x"));
	must(put_str(t.s, "nf", "r", "f", "w", future, "future"));
	must(put_str(t.s, "nf", "r", "f", "p", future, "future"));
	is_int(bt_increment(t.s, "nf", bts("r"), "f", bts("n"), 1, NULL,
	    NULL, &stamp), 0, "newest: increment");
	is_int(stamp, future + 1, "newest: increment stamped one above");
	is_text(newest_text(t.s, "nf", "r", "f", "n"), "8\\x0a@8000000000000001",
	    "newest: the increment is the newest version");
	is_int(bt_append(t.s, "nf", bts("r"), "f", bts("a"), bts("y"), NULL,
	    &stamp), 0, "newest: append");
	is_text(newest_text(t.s, "nf", "r", "f", "a"), "xy@8000000000000001",
	    "newest: the append is the newest version");
	is_int(bt_put_newest(t.s, "nf", bts("r"), "f", bts("w"), bts("now"),
	    NULL, &stamp), 0, "newest: put_newest");
	is_text(newest_text(t.s, "nf", "r", "f", "w"), "now@8000000000000001",
	    "newest: the put is the newest version");
	is_int(bt_check_version_and_mutate(t.s, "nf", bts("r"), "f",
	    bts("p"), &fut, future, &put, 1, NULL, &applied, &stamp), 0,
	    "newest: check-and-mutate");
	ok(applied && stamp == future + 1,
	    "newest: check-and-mutate stamped one above, and says so");
	is_text(newest_text(t.s, "nf", "r", "f", "p"), "cam@8000000000000001",
	    "newest: the checked put is the newest version");
	/* Without a later version, the server's clock as before. */
	is_int(bt_put_newest(t.s, "nf", bts("r"), "f", bts("fresh"),
	    bts("v"), NULL, &stamp), 0, "newest: a fresh column");
	ok(stamp > 1000000 && stamp < future, "newest: stamped by the clock");
	tstore_destroy(&t);
}

int
main(void)
{
	test_webtable();
	test_seed_example();
	test_binary_keys();
	test_limits();
	test_large_row();
	test_scan();
	test_server_timestamps();
	test_errors();
	test_schema();
	test_check_and_mutate();
	test_increment_append();
	test_newest_above_future();
	test_mutation_sizes();
	return tap_done();
}
