/*
 * test_api_scan.c - bt_scan_next_borrowed(), the scan call that lends its
 * rows instead of copying them: it returns exactly the rows and cells that
 * bt_scan_next() returns for every kind of scan (ranges, prefixes,
 * start_exclusive, limits, column and time filters, cells_per_column,
 * keys_only) over data in memtables and SSTables, with deletes of every
 * kind, binary keys and qualifiers, across tablets made at create time and
 * by splits; its key, families and values are NUL-terminated as copied
 * rows are; a lent row stays intact until the next call on its scan while
 * the store is written and read meanwhile; both calls may be mixed on one
 * scan under one limit; and rows far larger than the first (many cells,
 * large values) are lent whole.  With lend_values, values come straight
 * from the store's blocks and memtables: the same rows and cells for
 * every kind of scan, and each lent value intact until the next call
 * while flushes, compactions, splits and cache churn happen in between,
 * rows of more pinned blocks than a scan keeps included.  A scan with
 * no_cache_fill returns the same rows, uses blocks already cached, and
 * leaves the cache as it found it.
 */
#include "api_util.h"

static const char *const fams[] = { "a", "b=maxversions=2", "c", NULL };

/* Render a lent row as scan_text() renders a copied one, and check that its
 * strings are terminated (values only unless lent_values); a missing
 * terminator is rendered. */
static void
render_lent_as(struct sbuf *b, const struct bt_row *r, bool keys_only,
    bool lent_values)
{
	sbuf_add(b, "[", 1);
	sbuf_escaped(b, r->key.data, r->key.size);
	sbuf_add(b, "]\n", 2);
	if (r->cell_count == 0)
		sbuf_printf(b, "EMPTY ROW\n");
	if (((const char *)r->key.data)[r->key.size] != '\0')
		sbuf_printf(b, "KEY NOT TERMINATED\n");
	for (size_t i = 0; i < r->cell_count; i++)
		if (!lent_values && ((const char *)r->cells[i].value.data)
		    [r->cells[i].value.size] != '\0')
			sbuf_printf(b, "VALUE %zu NOT TERMINATED\n", i);
	render_cells(b, r, keys_only);
}

static void
render_lent(struct sbuf *b, const struct bt_row *r, bool keys_only)
{
	render_lent_as(b, r, keys_only, false);
}

/* scan_text() through bt_scan_next_borrowed(). */
static char *
scan_text_lent(struct bt_store *s, const char *table,
    const struct bt_scan_options *so)
{
	struct sbuf b = { 0 };
	struct bt_scan *sc = NULL;
	const struct bt_row *r;
	int rc;

	if ((rc = bt_scan_open(s, table, so, &sc)) != 0) {
		sbuf_printf(&b, "ERROR(%d %s)", rc, bt_strerror(rc));
		return sbuf_take(&b);
	}
	for (;;) {
		r = NULL;
		rc = bt_scan_next_borrowed(sc, &r);
		if (rc == BT_DONE)
			break;
		if (rc != 0 || r == NULL) {
			sbuf_printf(&b, "ERROR(%d %s)", rc, bt_strerror(rc));
			break;
		}
		render_lent_as(&b, r, so != NULL && so->read.keys_only,
		    so != NULL && so->lend_values);
	}
	bt_scan_close(sc);
	return sbuf_take(&b);
}

/* A row name with a 0x00 byte for every third row, so escaped keys take
 * the slow paths too. */
static struct bt_bytes
row_name(int i, char *buf)
{
	int n = snprintf(buf, 32, "r%03d", i);

	if (i % 3 == 0)
		buf[n++] = '\0';
	buf[n++] = 'x';
	return btb(buf, (size_t)n);
}

/*
 * 60 rows over families a, b (maxversions=2) and c, with several columns
 * and versions each, binary qualifiers, and deletes of each kind; a third
 * of it flushed to SSTables, a third compacted, the rest in the memtable.
 */
static void
fill_values(struct bt_store *s, const char *table, size_t value_len)
{
	static const char qual0[] = { 'q', '\0', 'z' };
	char row[32], val[512];

	for (int pass = 0; pass < 3; pass++) {
		for (int i = pass; i < 60; i += 3) {
			struct bt_bytes r = row_name(i, row);

			for (int v = 0; v < 3; v++) {
				snprintf(val, sizeof(val), "v%d.%d%*s", i, v,
				    (int)value_len, "");
				memset(val + strlen(val) - value_len, '.',
				    value_len);
				must(put_cell(s, table, r, "a", bts("x"),
				    100 + v, bts(val)));
				must(put_cell(s, table, r, "b",
				    btb(qual0, sizeof(qual0)), 200 + v,
				    bts(val)));
			}
			must(put_cell(s, table, r, "a", bts(""), 50,
			    bts("empty-qualifier")));
			if (i % 4 == 0)
				must(put_cell(s, table, r, "c", bts("k"), 7,
				    bts("")));
			if (i % 5 == 1)
				must(del_cell(s, table, r, BT_DELETE_VERSION,
				    "a", bts("x"), 102));
			if (i % 7 == 2)
				must(del_cell(s, table, r, BT_DELETE_COLUMN,
				    "b", btb(qual0, sizeof(qual0)), 0));
			if (i % 11 == 3)
				must(del_cell(s, table, r, BT_DELETE_FAMILY,
				    "a", bts(""), 0));
			if (i % 13 == 4)
				must(del_cell(s, table, r, BT_DELETE_ROW,
				    NULL, bts(""), 0));
		}
		if (pass == 0)
			must(bt_store_flush(s));
		else if (pass == 1)
			must(bt_store_compact(s, table, false));
	}
}

static void
fill(struct bt_store *s, const char *table)
{
	fill_values(s, table, 0);
}

/* Every kind of scan, lent and copied, gives the same text. */
static void
check_all_scans(struct bt_store *s, const char *table, const char *what)
{
	static const struct bt_column cols_a[] = { { "a", false, { 0 } } };
	static const struct bt_column cols_bx[] = {
		{ "b", true, { "q\0z", 3 } }, { "c", false, { 0 } } };
	char start[32], end[32];
	struct bt_bytes st = row_name(9, start), en = row_name(41, end);
	struct bt_scan_options cases[] = {
		{ .limit = 0 },
		{ .start = st },
		{ .start = st, .start_exclusive = true },
		{ .start = st, .end = en },
		{ .end = en, .limit = 7 },
		{ .prefix = bts("r02") },
		{ .prefix = bts("r00"), .start = st },
		{ .limit = 1 },
		{ .read = { .columns = cols_a, .column_count = 1 } },
		{ .read = { .columns = cols_bx, .column_count = 2 } },
		{ .read = { .cells_per_column = 1 } },
		{ .read = { .min_ts = 101, .has_max_ts = true,
		    .max_ts = 201 } },
		{ .read = { .keys_only = true, .cells_per_column = 2 } },
		{ .start = st, .limit = 5, .read = { .keys_only = true,
		    .columns = cols_a, .column_count = 1 } },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *want = scan_text(s, table, &cases[i]);
		char *got = scan_text_lent(s, table, &cases[i]);
		char *values;

		ok(strlen(want) > 0, "%s: scan %zu has rows", what, i);
		is_str(got, want, "%s: scan %zu lent as bt_scan_next "
		    "returns it", what, i);
		cases[i].lend_values = true;
		values = scan_text_lent(s, table, &cases[i]);
		is_str(values, want, "%s: scan %zu with lent values too",
		    what, i);
		free(want);
		free(got);
		free(values);
	}
}

static void
test_same_rows(void)
{
	struct tstore t;

	tstore_fault(&t, NULL);
	must(make_table(t.s, "t", fams));
	fill(t.s, "t");
	check_all_scans(t.s, "t", "one tablet");
	tstore_destroy(&t);
	/* Values long enough to be lent rather than copied. */
	tstore_fault(&t, NULL);
	must(make_table(t.s, "t", fams));
	fill_values(t.s, "t", 400);
	check_all_scans(t.s, "t", "400-byte values");
	tstore_destroy(&t);
}

/* Tablets from create-time splits and from bt_table_split(): a lent scan
 * crosses every boundary without losing or repeating a row. */
static void
test_across_tablets(void)
{
	char s1[32], s2[32], s3[32];
	struct bt_bytes splits[] = { row_name(10, s1), row_name(30, s2) };
	struct bt_family_spec specs[] = { { "a", NULL, NULL },
	    { "b", NULL, "maxversions=2" }, { "c", NULL, NULL } };
	struct bt_tablet_info *tabs;
	size_t n = 0;
	struct tstore t;

	tstore_fault(&t, NULL);
	must(bt_table_create(t.s, "t", specs, 3, splits, 2, 0));
	fill(t.s, "t");
	must(bt_table_split(t.s, "t", row_name(45, s3)));
	must(bt_table_split(t.s, "t", bts("r021")));
	must(bt_table_tablets(t.s, "t", &tabs, &n));
	bt_tablets_free(tabs);
	is_int((int)n, 5, "five tablets");
	check_all_scans(t.s, "t", "five tablets");
	is_text(scan_keys(t.s, "t", &(struct bt_scan_options){
	    .start = bts("r020"), .end = bts("r023") }),
	    "[r020x]\n[r021\\x00x]\n[r022x]\n",
	    "a copied scan across the split at r021");
	is_text(scan_text_lent(t.s, "t", &(struct bt_scan_options){
	    .start = bts("r020"), .end = bts("r023"), .read = {
	    .columns = (struct bt_column[]){ { "a", true, { "x", 1 } } },
	    .column_count = 1, .cells_per_column = 1 } }),
	    "[r020x]\na:x@102=v20.2\n"
	    "[r021\\x00x]\na:x@101=v21.1\n"
	    "[r022x]\na:x@102=v22.2\n",
	    "a lent scan across the split at r021, values exact");
	tstore_destroy(&t);
}

/* The exact contents of lent rows, deletes applied. */
static void
test_exact_contents(void)
{
	struct tstore t;
	char row[32];

	tstore_fault(&t, NULL);
	must(make_table(t.s, "t", fams));
	fill(t.s, "t");
	/* r001x: version 102 of a:x deleted; r004: row deleted (i%13==4);
	 * r003: family a deleted (i%11==3); r002: column b deleted. */
	is_text(scan_text_lent(t.s, "t", &(struct bt_scan_options){
	    .start = row_name(1, row), .limit = 4 }),
	    "[r001x]\n"
	    "a:@50=empty-qualifier\na:x@101=v1.1\na:x@100=v1.0\n"
	    "b:q\\x00z@202=v1.2\nb:q\\x00z@201=v1.1\n"
	    "[r002x]\n"
	    "a:@50=empty-qualifier\na:x@102=v2.2\na:x@101=v2.1\n"
	    "a:x@100=v2.0\n"
	    "[r003\\x00x]\n"
	    "b:q\\x00z@202=v3.2\nb:q\\x00z@201=v3.1\n"
	    "[r005x]\n"
	    "a:@50=empty-qualifier\na:x@102=v5.2\na:x@101=v5.1\n"
	    "a:x@100=v5.0\n"
	    "b:q\\x00z@202=v5.2\nb:q\\x00z@201=v5.1\n",
	    "lent rows hold exactly the visible cells");
	tstore_destroy(&t);
}

/* A lent row is intact until the next call on its scan, whatever else the
 * store does; mixing both calls keeps order and one limit. */
static void
test_lifetime_and_mixing(void)
{
	struct bt_scan_options so = { .limit = 5 };
	struct bt_scan *sc;
	const struct bt_row *lent;
	struct bt_row *copy, *other;
	struct sbuf b = { 0 };
	struct tstore t;
	char *before, *after, *keys;
	int rc;

	tstore_fault(&t, NULL);
	must(make_table(t.s, "t", fams));
	fill(t.s, "t");
	must(bt_scan_open(t.s, "t", &so, &sc));
	must(bt_scan_next_borrowed(sc, &lent));
	render_lent(&b, lent, false);
	before = sbuf_take(&b);
	/* Writes to the same row, a read of it, a flush and a compaction. */
	must(put_str(t.s, "t", "r000", "a", "x", 999, "changed"));
	must(put_cell(t.s, "t", lent->key, "a", bts("x"), 999,
	    bts("changed too")));
	must(bt_read_row(t.s, "t", lent->key, NULL, &other));
	bt_row_free(other);
	must(bt_store_flush(t.s));
	must(bt_store_compact(t.s, "t", true));
	render_lent(&b, lent, false);
	after = sbuf_take(&b);
	is_str(after, before, "a lent row is unchanged until the next call");
	ok(strstr(before, "changed") == NULL,
	    "and shows the scan's snapshot");
	free(before);
	free(after);

	/* Rows 2..5 alternate between the calls; the limit counts both. */
	sbuf_escaped(&b, lent->key.data, lent->key.size);
	for (int i = 0; i < 6; i++) {
		sbuf_add(&b, " ", 1);
		if (i % 2 == 0) {
			if ((rc = bt_scan_next(sc, &copy)) == 0) {
				sbuf_escaped(&b, copy->key.data,
				    copy->key.size);
				bt_row_free(copy);
			}
		} else if ((rc = bt_scan_next_borrowed(sc, &lent)) == 0) {
			sbuf_escaped(&b, lent->key.data, lent->key.size);
		}
		if (rc != 0)
			sbuf_printf(&b, "%s", rc == BT_DONE ? "DONE" :
			    bt_strerror(rc));
	}
	keys = sbuf_take(&b);
	is_str(keys, "r000\\x00x r001x r002x r003\\x00x r005x DONE DONE",
	    "mixed calls: order kept, one limit of 5 rows");
	free(keys);
	bt_scan_close(sc);
	tstore_destroy(&t);
}

/* A scan keeps its column filter after the caller's copy of the names
 * is gone (tabletfs.h: bytes passed in are copied before a call
 * returns). */
static void
test_filter_copied(void)
{
	char family[2] = "a", qualifier[2] = "x";
	struct bt_column col = { family, true, { qualifier, 1 } };
	struct bt_scan_options so = { .read = { &col, 1 } };
	struct bt_scan *sc;
	struct bt_row *r;
	int rows = 0, other = 0, rc;
	struct tstore t;

	tstore_fault(&t, NULL);
	must(make_table(t.s, "t", fams));
	fill(t.s, "t");
	must(bt_scan_open(t.s, "t", &so, &sc));
	family[0] = 'c';	/* the caller reuses its buffers */
	qualifier[0] = 'y';
	while ((rc = bt_scan_next(sc, &r)) == 0) {
		rows++;
		for (size_t i = 0; i < r->cell_count; i++)
			if (strcmp(r->cells[i].family, "a") != 0 ||
			    r->cells[i].qualifier.size != 1 ||
			    memcmp(r->cells[i].qualifier.data, "x", 1) != 0)
				other++;
		bt_row_free(r);
	}
	is_int(rc, BT_DONE, "filter copied: the scan ends");
	ok(rows > 0 && other == 0, "filter copied: %d rows, all of column "
	    "a:x as opened (%d other cells)", rows, other);
	bt_scan_close(sc);
	tstore_destroy(&t);
}

/* Rows that outgrow the first: 300 cells, then a 200 KiB value. */
static void
test_growing_rows(void)
{
	const size_t big = 200u << 10;
	char *value = xmalloc(big);
	struct bt_scan *sc;
	const struct bt_row *r;
	struct tstore t;
	char q[16];
	bool same = true;
	uint64_t x = 42;

	for (size_t i = 0; i < big; i++)
		value[i] = (char)(tap_rand(&x) | 1);
	tstore_fault(&t, NULL);
	must(make_table(t.s, "t", fams));
	must(put_str(t.s, "t", "a-small", "a", "", 1, "s"));
	for (int i = 0; i < 300; i++) {
		snprintf(q, sizeof(q), "q%03d", i);
		must(put_str(t.s, "t", "b-wide", "c", q, 5, q));
	}
	must(put_cell(t.s, "t", bts("c-big"), "a", bts(""), 1,
	    btb(value, big)));
	must(bt_store_flush(t.s));
	must(put_str(t.s, "t", "d-small", "a", "", 1, "s"));
	must(bt_scan_open(t.s, "t", NULL, &sc));
	must(bt_scan_next_borrowed(sc, &r));
	ok(r->cell_count == 1 && bytes_eq(r->key, bts("a-small")),
	    "first row: one cell");
	must(bt_scan_next_borrowed(sc, &r));
	is_int((int)r->cell_count, 300, "wide row: 300 cells lent");
	for (int i = 0; i < 300 && r->cell_count == 300; i++) {
		snprintf(q, sizeof(q), "q%03d", i);
		same = same && strcmp(r->cells[i].family, "c") == 0 &&
		    bytes_eq(r->cells[i].qualifier, bts(q)) &&
		    bytes_eq(r->cells[i].value, bts(q));
	}
	ok(same, "every cell of the wide row in order");
	must(bt_scan_next_borrowed(sc, &r));
	ok(r->cell_count == 1 && bytes_eq(r->cells[0].value,
	    btb(value, big)) && r->cells[0].value_size == big &&
	    ((const char *)r->cells[0].value.data)[big] == '\0',
	    "big row: the whole 200 KiB value, terminated");
	must(bt_scan_next_borrowed(sc, &r));
	ok(bytes_eq(r->key, bts("d-small")) && r->cell_count == 1 &&
	    bytes_eq(r->cells[0].value, bts("s")), "small row after them");
	is_int(bt_scan_next_borrowed(sc, &r), BT_DONE, "then BT_DONE");
	is_int(bt_scan_next_borrowed(sc, &r), BT_DONE, "and again");
	bt_scan_close(sc);
	tstore_destroy(&t);
	free(value);
}

/* Rows that extend one another with 0x00 and 0x01 bytes, two columns
 * each, so that telling where a row's entries end is not a prefix test on
 * the raw row. */
static void
test_prefix_rows(void)
{
	static const struct { const char *p; size_t n; } rows[] = {
		{ "ab", 2 }, { "ab\0", 3 }, { "ab\0\0", 4 },
		{ "ab\0\1", 4 }, { "ab\0b", 4 }, { "ab\1", 3 },
		{ "abc", 3 },
	};
	struct tstore t;
	char *want;

	tstore_fault(&t, NULL);
	must(make_table(t.s, "t", fams));
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
			must(put_cell(t.s, "t", btb(rows[i].p, rows[i].n), "a",
			    bts("x"), 1 + pass, bts("v")));
			must(put_cell(t.s, "t", btb(rows[i].p, rows[i].n), "c",
			    btb("\0", 1), 1 + pass, bts("w")));
		}
		if (pass == 0)
			must(bt_store_flush(t.s));
	}
	want = scan_text(t.s, "t", NULL);
	is_text(scan_keys(t.s, "t", NULL),
	    "[ab]\n[ab\\x00]\n[ab\\x00\\x00]\n[ab\\x00\\x01]\n"
	    "[ab\\x00b]\n[ab\\x01]\n[abc]\n",
	    "rows that extend one another: each once, in order");
	is_text(scan_text_lent(t.s, "t", NULL), want,
	    "lent as copied, every cell in its own row");
	ok(strstr(want, "[ab]\na:x@2=v\na:x@1=v\nc:\\x00@2=w\n"
	    "c:\\x00@1=w\n[ab\\x00]\n") != NULL,
	    "the first row holds its four cells and no more");
	free(want);
	tstore_destroy(&t);
}

enum { LONG_ROWS = 6000 };

static void
long_value(int i, char *buf)
{
	uint64_t x = (uint64_t)i * 0x9e3779b97f4a7c15ull + 1;

	for (int j = 0; j < 100; j++)
		buf[j] = (char)('a' + tap_rand(&x) % 26);
	buf[100] = '\0';
}

/* Rows [from, from + count) of the long table, lent: 0 when each is the
 * row written, in order, then BT_DONE; else the first error, or -EPROTO
 * for a wrong row.  *seen counts the good rows. */
static int
long_scan(struct bt_store *s, int from, int count, int *seen)
{
	char start[32], name[32], val[101];
	struct bt_scan_options so = { .limit = (uint64_t)count };
	const struct bt_row *r;
	struct bt_scan *sc;
	int rc, i = from;

	*seen = 0;
	snprintf(start, sizeof(start), "row%06d", from);
	so.start = bts(start);
	if ((rc = bt_scan_open(s, "t", &so, &sc)) != 0)
		return rc;
	while ((rc = bt_scan_next_borrowed(sc, &r)) == 0) {
		snprintf(name, sizeof(name), "row%06d", i);
		long_value(i, val);
		if (!bytes_eq(r->key, bts(name)) || r->cell_count != 1 ||
		    !bytes_eq(r->cells[0].value, bts(val))) {
			diag("row %d: got %.*s", i, (int)r->key.size,
			    (const char *)r->key.data);
			rc = -EPROTO;
			break;
		}
		(*seen)++;
		i++;
	}
	bt_scan_close(sc);
	return rc == BT_DONE ? 0 : rc;
}

struct sst_size_ctx {
	struct env *env;
	char path[256];
	uint64_t size;
};

static int
sst_find(void *arg, const char *name)
{
	struct sst_size_ctx *c = arg;
	size_t len = strlen(name);

	if (len > 4 && strcmp(name + len - 4, ".sst") == 0) {
		snprintf(c->path, sizeof(c->path), "/store/sst/%s", name);
		if (env_path_size(c->env, c->path, &c->size) != 0)
			c->size = 0;
	}
	return 0;
}

/*
 * Scans long enough to read ahead (one SSTable of about 700 blocks of 1
 * KiB, read in windows of 32 to 256 KiB): every row comes back whole and in
 * order, from the start, from the middle, in short scans from many places
 * (seeks into and away from a window), and a byte flipped in the middle of
 * the file, read through a window, is a checksum error and never data.
 */
static void
test_long_scans(void)
{
	static const char *const one[] = { "f=maxversions=1", NULL };
	struct bt_group_spec g = { "default", 1024, 0, -1, -1 };
	struct sst_size_ctx c = { 0 };
	char row[32], val[101];
	int seen, bad = 0, rc;
	struct tstore t;

	tstore_fault(&t, NULL);
	if (tstore_cell_skip(&t, "counts the store's files"))
		return;
	must(make_table(t.s, "t", one));
	must(bt_group_set(t.s, "t", &g));
	for (int i = 0; i < LONG_ROWS; i++) {
		snprintf(row, sizeof(row), "row%06d", i);
		long_value(i, val);
		must(put_str(t.s, "t", row, "f", "", 5, val));
	}
	must(bt_store_compact(t.s, "t", true));
	must(bt_store_close(t.s));
	t.s = NULL;
	tstore_reopen(&t);
	is_int(long_scan(t.s, 0, LONG_ROWS, &seen), 0, "a full scan");
	is_int(seen, LONG_ROWS, "returns every row");
	is_int(long_scan(t.s, 2500, 3000, &seen), 0, "a scan from the middle");
	is_int(seen, 3000, "returns its 3000 rows");
	for (int i = 0; i < LONG_ROWS; i += 97)
		if (long_scan(t.s, i, 150, &seen) != 0 ||
		    seen != (LONG_ROWS - i < 150 ? LONG_ROWS - i : 150))
			bad++;
	is_int(bad, 0, "62 short scans from all over return their rows");

	must(bt_store_close(t.s));
	t.s = NULL;
	c.env = t.env;
	env_dir_list(t.env, "/store/sst", sst_find, &c);
	ok(c.size > 600u << 10, "one SSTable of %llu bytes",
	    (unsigned long long)c.size);
	ok(env_fault_flip_byte(t.env, c.path, c.size / 2, 0x5a) == 0,
	    "flip a byte in its middle");
	tstore_reopen(&t);
	rc = long_scan(t.s, 0, LONG_ROWS, &seen);
	is_int(rc, BT_ECHECKSUM, "the full scan stops with a checksum error");
	ok(seen > 1000 && seen < LONG_ROWS - 1000,
	    "after %d good rows, none wrong", seen);
	tstore_destroy(&t);
}

#define FILL_ROWS 3000

/* A full scan of table z, filling the cache or not: 0 when it returns
 * rows z00000..z02999, each with its one value; *misses and *hits are
 * the block cache's misses and hits during it. */
static int
fill_scan(struct bt_store *s, bool no_fill, uint64_t *misses, uint64_t *hits)
{
	struct bt_scan_options so = { .no_cache_fill = no_fill };
	struct bt_stats before, after;
	char name[32], val[128];
	const struct bt_row *r;
	struct bt_scan *sc;
	int rc, i = 0;

	bt_store_get_stats(s, &before);
	if ((rc = bt_scan_open(s, "z", &so, &sc)) != 0)
		return rc;
	while ((rc = bt_scan_next_borrowed(sc, &r)) == 0) {
		snprintf(name, sizeof(name), "z%05d", i);
		snprintf(val, sizeof(val), "%0100d", i);
		if (!bytes_eq(r->key, bts(name)) || r->cell_count != 1 ||
		    !bytes_eq(r->cells[0].value, bts(val))) {
			rc = -EPROTO;
			break;
		}
		i++;
	}
	bt_scan_close(sc);
	bt_store_get_stats(s, &after);
	*misses = after.cache_misses - before.cache_misses;
	*hits = after.cache_hits - before.cache_hits;
	if (rc == BT_DONE && i != FILL_ROWS)
		rc = -EPROTO;
	return rc == BT_DONE ? 0 : rc;
}

/*
 * no_cache_fill: over a cold cache, a scan with it reads every block from
 * the file and keeps none (a second one misses as often); a scan without
 * it fills the cache, and then a scan with it finds every block there.
 * Each returns every row.  The values compress, so the blocks are
 * uncompressed into buffers of their own rather than lent from a
 * readahead window (which is never cached).
 *
 * On a cell the counters are its servers', where other tablets' work
 * counts too (a tablet the master moves reads its index blocks as it
 * loads): a comparison that such work can upset is made
 * again, up to CELL_TRIES times.  What no_cache_fill could get wrong
 * (a block kept) would upset every try alike.
 */
#define CELL_TRIES	5

static void
test_no_cache_fill(void)
{
	static const char *const one[] = { "f=maxversions=1", NULL };
	struct bt_group_spec g = { "default", 1024, 1, -1, -1 };
	uint64_t miss1, hit1, miss2 = 0, hit2 = 0, miss3, hit3;
	uint64_t miss4 = 0, hit4 = 0;
	bool cell = getenv("TABLETFS_TEST_CELL") != NULL;
	int tries = cell ? CELL_TRIES : 1, rc = 0;
	char row[32], val[128];
	struct tstore t;

	tstore_fault(&t, NULL);
	must(make_table(t.s, "z", one));
	must(bt_group_set(t.s, "z", &g));
	for (int i = 0; i < FILL_ROWS; i++) {
		snprintf(row, sizeof(row), "z%05d", i);
		snprintf(val, sizeof(val), "%0100d", i);
		must(put_str(t.s, "z", row, "f", "", 5, val));
	}
	must(bt_store_compact(t.s, "z", true));
	must(bt_store_close(t.s));
	t.s = NULL;
	tstore_reopen(&t);
	is_int(fill_scan(t.s, true, &miss1, &hit1), 0,
	    "a scan with no_cache_fill over a cold cache returns every row");
	ok(miss1 > 100, "and reads its blocks from the file (%llu misses, "
	    "%llu hits)", (unsigned long long)miss1, (unsigned long long)hit1);
	for (int k = 0; k < tries && rc == 0; k++) {
		if (k > 0) {
			miss1 = miss2;
			hit1 = hit2;
		}
		rc = fill_scan(t.s, true, &miss2, &hit2);
		if (miss2 == miss1 && hit2 == hit1 && miss1 > 100)
			break;
	}
	is_int(rc, 0, "so does a second");
	ok(miss2 == miss1 && hit2 == hit1 && miss1 > 100, "which finds none "
	    "of them cached (%llu misses, %llu hits)",
	    (unsigned long long)miss2, (unsigned long long)hit2);
	is_int(fill_scan(t.s, false, &miss3, &hit3), 0,
	    "a scan that fills the cache returns every row");
	ok(miss3 == miss1 || (cell && miss3 > miss1), "reading the same "
	    "blocks from the file (%llu misses)", (unsigned long long)miss3);
	for (int k = 0; k < tries && rc == 0; k++) {
		rc = fill_scan(t.s, true, &miss4, &hit4);
		if (miss4 == 0 && hit4 >= miss1)
			break;
	}
	is_int(rc, 0, "then a scan with no_cache_fill returns every row");
	ok(miss4 == 0 && hit4 >= miss1, "from the cached blocks (%llu misses, "
	    "%llu hits)", (unsigned long long)miss4, (unsigned long long)hit4);
	tstore_destroy(&t);
}

/* The value of version v of column q of row i in test_lent_lifetime():
 * 300 bytes that differ from any other's in their first 12. */
static void
lent_value(int i, int q, int v, char *buf)
{
	uint64_t x = (uint64_t)(i * 64 + q * 8 + v) * 0x9e3779b97f4a7c15ull;
	char head[32];
	int n = snprintf(head, sizeof(head), "%05d.%02d.%d:", i, q, v);

	memcpy(buf, head, (size_t)n);
	for (int j = n; j < 300; j++)
		buf[j] = (char)('a' + tap_rand(&x) % 26);
}

/* Whether r is row i of test_lent_lifetime() as its scan sees it: the
 * newest version (2) of columns a:q0..q2 and nothing of family b. */
static bool
lent_row_ok(const struct bt_row *r, int i)
{
	char name[32], val[300];

	snprintf(name, sizeof(name), "row%05d", i);
	if (!bytes_eq(r->key, bts(name)) || r->cell_count != 3)
		return false;
	for (int q = 0; q < 3; q++) {
		char qual[8];

		snprintf(qual, sizeof(qual), "q%d", q);
		lent_value(i, q, 2, val);
		if (strcmp(r->cells[q].family, "a") != 0 ||
		    !bytes_eq(r->cells[q].qualifier, bts(qual)) ||
		    !bytes_eq(r->cells[q].value, btb(val, sizeof(val))) ||
		    r->cells[q].value_size != sizeof(val))
			return false;
	}
	return true;
}

/*
 * Lent values outlive what the store does between two calls.  1 KiB
 * blocks and a block cache of four of them, so that the blocks of a row
 * are left behind by the time it is returned (the scan has stepped onto
 * the next row) and would be evicted at once if the scan did not pin
 * them.  Three versions of each column in three SSTables, every tenth
 * row's newest in the memtable too; a column deleted, another family
 * filtered out, the newest version only.
 * Between calls: a write and a flush, minor and major compactions (the
 * files the scan reads are replaced and deleted), a split ahead of the
 * scan, point reads that churn the cache.  Every lent row is checked
 * after them.
 */
static void
test_lent_lifetime(void)
{
	static const char *const two[] = { "a", "b", NULL };
	static const struct bt_column cols_a[] = { { "a", false, { 0 } } };
	struct bt_options opts = { .block_cache_size = 4096 };
	struct bt_group_spec g = { "default", 1024, 0, -1, -1 };
	struct bt_scan_options so = { .lend_values = true, .read = {
	    .columns = cols_a, .column_count = 1, .cells_per_column = 1 } };
	enum { ROWS = 400 };
	char row[32], val[300], qual[8];
	struct bt_scan *sc;
	const struct bt_row *r;
	struct bt_row *other;
	int bad = 0, rows = 0, rc;
	struct tstore t;

	tstore_fault(&t, &opts);
	must(make_table(t.s, "t", two));
	must(bt_group_set(t.s, "t", &g));
	for (int v = 0; v < 3; v++) {
		for (int i = 0; i < ROWS; i++) {
			snprintf(row, sizeof(row), "row%05d", i);
			for (int q = 0; q < 4; q++) {
				snprintf(qual, sizeof(qual), "q%d", q);
				lent_value(i, q, v, val);
				must(put_cell(t.s, "t", bts(row), "a",
				    bts(qual), 10 + v, btb(val, sizeof(val))));
			}
			must(put_str(t.s, "t", row, "b", "x", 10 + v, "bb"));
			if (v == 2)
				must(del_cell(t.s, "t", bts(row),
				    BT_DELETE_COLUMN, "a", bts("q3"), 0));
		}
		must(bt_store_flush(t.s));
	}
	/* Every tenth row's newest versions in the memtable too (the same
	 * cells written again: the memtable's replace the files'). */
	for (int i = 0; i < ROWS; i += 10) {
		snprintf(row, sizeof(row), "row%05d", i);
		for (int q = 0; q < 3; q++) {
			snprintf(qual, sizeof(qual), "q%d", q);
			lent_value(i, q, 2, val);
			must(put_cell(t.s, "t", bts(row), "a", bts(qual), 12,
			    btb(val, sizeof(val))));
		}
	}
	must(bt_scan_open(t.s, "t", &so, &sc));
	while ((rc = bt_scan_next_borrowed(sc, &r)) == 0) {
		int i = rows++;

		if (!lent_row_ok(r, i)) {
			diag("row %d wrong as returned", i);
			bad++;
		}
		switch (i % 50) {
		case 5:
			snprintf(row, sizeof(row), "row%05d", i + 1);
			must(put_str(t.s, "t", row, "a", "q0", 99, "later"));
			must(bt_store_flush(t.s));
			break;
		case 15:
			must(bt_store_compact(t.s, "t", false));
			break;
		case 25:
			must(bt_store_compact(t.s, "t", true));
			break;
		case 35:
			snprintf(row, sizeof(row), "row%05d", i + 7);
			must(bt_table_split(t.s, "t", bts(row)));
			break;
		case 45:
			for (int j = 0; j < ROWS; j += 7) {
				snprintf(row, sizeof(row), "row%05d", j);
				must(bt_read_row(t.s, "t", bts(row), NULL,
				    &other));
				bt_row_free(other);
			}
			break;
		}
		if (!lent_row_ok(r, i)) {
			diag("row %d changed before the next call", i);
			bad++;
		}
	}
	is_int(rc, BT_DONE, "the lent scan ends with BT_DONE");
	is_int(rows, ROWS, "every row once, as of the scan's snapshot");
	is_int(bad, 0, "every lent row intact until the next call");
	bt_scan_close(sc);
	tstore_destroy(&t);
}

/*
 * A row of more blocks than a scan pins (1 MiB of them): 3000 columns of
 * 1000 bytes in 1 KiB blocks, between two small rows, with a tiny cache.
 * Past the bound the values are copied, so the row comes back whole and
 * right, and stays so through a major compaction before the next call.
 */
static void
test_lent_wide_row(void)
{
	static const char *const one[] = { "a", NULL };
	struct bt_options opts = { .block_cache_size = 4096 };
	struct bt_group_spec g = { "default", 1024, 0, -1, -1 };
	struct bt_scan_options so = { .lend_values = true };
	enum { COLS = 3000 };
	char qual[16], *val = xmalloc(1000);
	struct bt_scan *sc;
	const struct bt_row *r;
	struct tstore t;
	int wrong = 0;

	tstore_fault(&t, &opts);
	must(make_table(t.s, "t", one));
	must(bt_group_set(t.s, "t", &g));
	must(put_str(t.s, "t", "a-small", "a", "", 1, "s"));
	for (int q = 0; q < COLS; q++) {
		snprintf(qual, sizeof(qual), "q%05d", q);
		memset(val, 'a' + q % 26, 1000);
		memcpy(val, qual, 6);
		must(put_cell(t.s, "t", bts("b-wide"), "a", bts(qual), 1,
		    btb(val, 1000)));
	}
	must(put_str(t.s, "t", "c-small", "a", "", 1, "s"));
	must(bt_store_compact(t.s, "t", true));
	must(bt_scan_open(t.s, "t", &so, &sc));
	must(bt_scan_next_borrowed(sc, &r));
	ok(bytes_eq(r->key, bts("a-small")), "the small row first");
	must(bt_scan_next_borrowed(sc, &r));
	is_int((int)r->cell_count, COLS, "the wide row: every column");
	must(bt_store_compact(t.s, "t", true));
	for (int q = 0; q < COLS && r->cell_count == COLS; q++) {
		snprintf(qual, sizeof(qual), "q%05d", q);
		memset(val, 'a' + q % 26, 1000);
		memcpy(val, qual, 6);
		if (!bytes_eq(r->cells[q].qualifier, bts(qual)) ||
		    !bytes_eq(r->cells[q].value, btb(val, 1000)))
			wrong++;
	}
	is_int(wrong, 0, "every value right, lent or copied, after a major "
	    "compaction");
	must(bt_scan_next_borrowed(sc, &r));
	ok(bytes_eq(r->key, bts("c-small")) && r->cell_count == 1 &&
	    bytes_eq(r->cells[0].value, bts("s")), "then the last row");
	is_int(bt_scan_next_borrowed(sc, &r), BT_DONE, "then BT_DONE");
	bt_scan_close(sc);
	tstore_destroy(&t);
	free(val);
}

/*
 * The scan resolver's shortcuts (cells.c): a scan remembers the last
 * family's GC policy from row to row, and decodes the usual key (no 0x00
 * in row, family or qualifier, a put or version delete) inline.  Rows
 * here alternate between families of different policies, hold keys and
 * qualifiers with 0x00 (the decoder's slow path), deletes of every kind
 * (markers go the slow path), a family dropped and made again (its old
 * cells stay hidden), and rows whose versions span the memtable and two
 * SSTables.  Every scan is checked against the exact text, read from the
 * memtable, after a flush, and after a major compaction.
 */
static void
test_resolver_shortcuts(void)
{
	static const char *const f3[] = { "a=maxversions=1", "b",
	    "c=maxversions=2", "d", NULL };
	static const char zrow[] = { 'r', '5', '\0', 'z' };
	static const char zqual[] = { 'q', '\0' };
	static const char *const want_all =
	    "[r1]\na:x@3=a13\n"
	    "[r2]\nb:x@3=b23\nb:x@2=b22\nb:x@1=b21\n"
	    "[r3]\na:x@2=a32\n"
	    "[r4]\nc:x@3=c43\nc:x@2=c42\n"
	    "[r5\\x00z]\na:q\\x00@2=a52\nb:q\\x00@2=b52\nb:q\\x00@1=b51\n"
	    "[r6]\nb:x@2=b62\nb:x@1=b61\n"
	    "[r7]\na:x@1=a71-later\nb:y@1=b71\n"
	    "[r8]\na:x@9=a89\nb:x@9=b89\nb:x@5=b85\nb:x@1=b81\n"
	    "[r9]\nb:x@1=b91\nd:x@2=d92-new\n";
	struct bt_family_spec dnew = { "d", NULL, "maxversions=1" };
	const char *stage[] = { "memtable", "flushed", "compacted" };
	struct tstore t;

	tstore_fault(&t, NULL);
	must(make_table(t.s, "t", f3));
	for (int v = 1; v <= 3; v++) {
		char val[16];

		snprintf(val, sizeof(val), "a1%d", v);
		must(put_str(t.s, "t", "r1", "a", "x", v, val));
		snprintf(val, sizeof(val), "b2%d", v);
		must(put_str(t.s, "t", "r2", "b", "x", v, val));
		snprintf(val, sizeof(val), "c4%d", v);
		must(put_str(t.s, "t", "r4", "c", "x", v, val));
		snprintf(val, sizeof(val), "b6%d", v);
		must(put_str(t.s, "t", "r6", "b", "x", v, val));
	}
	must(put_str(t.s, "t", "r3", "a", "x", 1, "a31"));
	must(put_str(t.s, "t", "r3", "a", "x", 2, "a32"));
	must(put_cell(t.s, "t", btb(zrow, 4), "a", btb(zqual, 2), 1,
	    bts("a51")));
	must(put_cell(t.s, "t", btb(zrow, 4), "a", btb(zqual, 2), 2,
	    bts("a52")));
	must(put_cell(t.s, "t", btb(zrow, 4), "b", btb(zqual, 2), 1,
	    bts("b51")));
	must(put_cell(t.s, "t", btb(zrow, 4), "b", btb(zqual, 2), 2,
	    bts("b52")));
	must(del_str(t.s, "t", "r6", BT_DELETE_VERSION, "b", "x", 3));
	/* r7: a column delete, then a put with an old timestamp (visible),
	 * and a family delete of c before a later b. */
	must(put_str(t.s, "t", "r7", "a", "x", 5, "a75"));
	must(del_str(t.s, "t", "r7", BT_DELETE_COLUMN, "a", "x", 0));
	must(put_str(t.s, "t", "r7", "a", "x", 1, "a71-later"));
	must(put_str(t.s, "t", "r7", "c", "x", 1, "c71"));
	must(del_str(t.s, "t", "r7", BT_DELETE_FAMILY, "c", NULL, 0));
	must(put_str(t.s, "t", "r7", "b", "y", 1, "b71"));
	/* r8 spans three sources: two SSTables and the memtable. */
	must(put_str(t.s, "t", "r8", "a", "x", 1, "a81"));
	must(put_str(t.s, "t", "r8", "b", "x", 1, "b81"));
	must(bt_store_flush(t.s));
	must(put_str(t.s, "t", "r8", "a", "x", 5, "a85"));
	must(put_str(t.s, "t", "r8", "b", "x", 5, "b85"));
	/* r9: d's first life is hidden once d is made again. */
	must(put_str(t.s, "t", "r9", "d", "x", 1, "d91-old"));
	must(put_str(t.s, "t", "r9", "b", "x", 1, "b91"));
	must(bt_store_flush(t.s));
	must(put_str(t.s, "t", "r8", "a", "x", 9, "a89"));
	must(put_str(t.s, "t", "r8", "b", "x", 9, "b89"));
	must(bt_family_delete(t.s, "t", "d"));
	must(bt_family_create(t.s, "t", &dnew));
	must(put_str(t.s, "t", "r9", "d", "x", 2, "d92-new"));
	for (int i = 0; i < 3; i++) {
		struct bt_scan_options newest = { .read = {
		    .cells_per_column = 1 }, .lend_values = true };
		struct bt_scan_options window = { .read = { .min_ts = 2,
		    .has_max_ts = true, .max_ts = 5 } };
		struct bt_scan_options only_b = { .read = {
		    .columns = (struct bt_column[]){ { "b", false, { 0 } } },
		    .column_count = 1 }, .start = bts("r5") };

		if (i == 1)
			must(bt_store_flush(t.s));
		else if (i == 2)
			must(bt_store_compact(t.s, "t", true));
		is_text(scan_text(t.s, "t", NULL), want_all,
		    "%s: every visible cell, each family's policy", stage[i]);
		is_text(scan_text_lent(t.s, "t", &newest),
		    "[r1]\na:x@3=a13\n[r2]\nb:x@3=b23\n[r3]\na:x@2=a32\n"
		    "[r4]\nc:x@3=c43\n"
		    "[r5\\x00z]\na:q\\x00@2=a52\nb:q\\x00@2=b52\n"
		    "[r6]\nb:x@2=b62\n[r7]\na:x@1=a71-later\nb:y@1=b71\n"
		    "[r8]\na:x@9=a89\nb:x@9=b89\n"
		    "[r9]\nb:x@1=b91\nd:x@2=d92-new\n",
		    "%s: the newest cells, lent", stage[i]);
		is_text(scan_text_lent(t.s, "t", &window),
		    "[r1]\na:x@3=a13\n[r2]\nb:x@3=b23\nb:x@2=b22\n"
		    "[r3]\na:x@2=a32\n[r4]\nc:x@3=c43\nc:x@2=c42\n"
		    "[r5\\x00z]\na:q\\x00@2=a52\nb:q\\x00@2=b52\n"
		    "[r6]\nb:x@2=b62\n[r8]\nb:x@5=b85\n"
		    "[r9]\nd:x@2=d92-new\n",
		    "%s: a time range, each family's policy first",
		    stage[i]);
		is_text(scan_text(t.s, "t", &only_b),
		    "[r5\\x00z]\nb:q\\x00@2=b52\nb:q\\x00@1=b51\n"
		    "[r6]\nb:x@2=b62\nb:x@1=b61\n[r7]\nb:y@1=b71\n"
		    "[r8]\nb:x@9=b89\nb:x@5=b85\nb:x@1=b81\n"
		    "[r9]\nb:x@1=b91\n",
		    "%s: one family from r5 on", stage[i]);
	}
	tstore_destroy(&t);
}

int
main(void)
{

	test_same_rows();
	test_across_tablets();
	test_exact_contents();
	test_lifetime_and_mixing();
	test_filter_copied();
	test_growing_rows();
	test_prefix_rows();
	test_long_scans();
	test_no_cache_fill();
	test_lent_lifetime();
	test_lent_wide_row();
	test_resolver_shortcuts();
	return tap_done();
}
