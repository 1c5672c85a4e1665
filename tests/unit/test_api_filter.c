/*
 * test_api_filter.c - the read filters of struct bt_read_options (issue
 * 29): row, family, qualifier and value regexes, the value range, cells
 * per row (offset and limit) and the time range [T1, T2), alone and
 * combined, in point reads and scans.  Each selects exactly what it
 * should on the paper's Webtable (the paper's own `anchor:*.cnn.com`),
 * on keys with 0x00 and 0xff bytes and on the empty qualifier; patterns
 * match whole keys (`a.*` not "xa"); a bad pattern is -EINVAL with the
 * compiler's message, a pathological one -ERANGE naming the limit; a row
 * regex's literal prefix narrows the scan (fewer blocks read from
 * files); and random filter chains over random data in memtables and
 * SSTables, deletes included, give what a model applying the documented
 * order to an unfiltered scan gives.  Runs embedded and on a cell.
 */
#include "api_util.h"
#include "util/regex.h"

static const char *const webfams[] = { "contents", "anchor", "language",
	NULL };

static struct bt_bytes
pat(const char *s)
{
	return bts(s);
}

/* The paper's Webtable, and rows around it. */
static void
webtable(struct bt_store *s)
{
	must(make_table(s, "web", webfams));
	must(put_str(s, "web", "com.cnn.www", "contents", "", 3, "<html>3"));
	must(put_str(s, "web", "com.cnn.www", "contents", "", 5, "<html>5"));
	must(put_str(s, "web", "com.cnn.www", "contents", "", 6, "<html>6"));
	must(put_str(s, "web", "com.cnn.www", "anchor", "cnnsi.com", 9, "CNN"));
	must(put_str(s, "web", "com.cnn.www", "anchor", "my.look.ca", 8,
	    "CNN.com"));
	must(put_str(s, "web", "com.cnn.www", "anchor", "www.cnn.com", 7,
	    "Top"));
	must(put_str(s, "web", "com.cnn.www", "language", "", 2, "EN"));
	must(put_str(s, "web", "com.cnn.www/sports", "anchor", "sport.cnn.com",
	    4, "Sports"));
	must(put_str(s, "web", "com.example", "anchor", "a.cnn.com", 4, "x"));
	must(put_str(s, "web", "com.example", "contents", "", 4, "ex"));
	must(put_str(s, "web", "xcom.cnn.www", "anchor", "b.cnn.com", 4, "y"));
	must(put_str(s, "web", "org.cnn", "anchor", "cnn.com", 4, "z"));
}

static void
test_paper_example(void)
{
	struct tstore t;
	struct bt_scan_options so = { 0 };

	tstore_fault(&t, NULL);
	webtable(t.s);
	so.read.family_regex = pat("anchor");
	so.read.qualifier_regex = pat(".*\\.cnn\\.com");
	is_text(scan_text(t.s, "web", &so),
	    "[com.cnn.www]\n"
	    "anchor:www.cnn.com@7=Top\n"
	    "[com.cnn.www/sports]\n"
	    "anchor:sport.cnn.com@4=Sports\n"
	    "[com.example]\n"
	    "anchor:a.cnn.com@4=x\n"
	    "[xcom.cnn.www]\n"
	    "anchor:b.cnn.com@4=y\n",
	    "anchor:.*\\.cnn\\.com selects the anchors from *.cnn.com");
	/* cnnsi.com and cnn.com do not end in ".cnn.com" */
	so.read.row_regex = pat("com\\.cnn\\..*");
	is_text(scan_keys(t.s, "web", &so),
	    "[com.cnn.www]\n[com.cnn.www/sports]\n",
	    "and with a row regex, only rows that match it whole");
	so.read.row_regex = pat("com.*");
	so.read.family_regex = (struct bt_bytes){ 0 };
	so.read.qualifier_regex = (struct bt_bytes){ 0 };
	is_text(scan_keys(t.s, "web", &so),
	    "[com.cnn.www]\n[com.cnn.www/sports]\n[com.example]\n",
	    "com.* does not match xcom.cnn.www (anchored)");
	so.read.row_regex = pat("com\\.cnn\\.www");
	is_text(scan_keys(t.s, "web", &so), "[com.cnn.www]\n",
	    "a literal row regex selects one row, not its extensions");
	so.read.row_regex = pat("org.*|com\\.e.*");
	is_text(scan_keys(t.s, "web", &so), "[com.example]\n[org.cnn]\n",
	    "an alternation at the top is anchored as a whole");

	/* cbt's columns=anchor:.*\.cnn\.com,contents as column lists */
	struct bt_column anchors = { .family = "anchor", .has_qualifier = true,
		.qualifier = pat(".*\\.cnn\\.com") };
	struct bt_column contents = { .family = "contents" };
	so.read = (struct bt_read_options){ .column_regexes = &anchors,
	    .column_regex_count = 1, .columns = &contents, .column_count = 1,
	    .cells_per_column = 1 };
	is_text(scan_text(t.s, "web", &so),
	    "[com.cnn.www]\n"
	    "anchor:www.cnn.com@7=Top\n"
	    "contents:@6=<html>6\n"
	    "[com.cnn.www/sports]\n"
	    "anchor:sport.cnn.com@4=Sports\n"
	    "[com.example]\n"
	    "anchor:a.cnn.com@4=x\n"
	    "contents:@4=ex\n"
	    "[xcom.cnn.www]\n"
	    "anchor:b.cnn.com@4=y\n",
	    "a column regex list and a column list select their union");
	so.read = (struct bt_read_options){ .column_regexes = &anchors,
	    .column_regex_count = 1 };
	is_text(read_text_str(t.s, "web", "com.cnn.www", &so.read),
	    "anchor:www.cnn.com@7=Top\n", "a column regex in a point read");
	anchors.qualifier = pat("cnnsi\\.com|my\\..*");
	is_text(read_text_str(t.s, "web", "com.cnn.www", &so.read),
	    "anchor:cnnsi.com@9=CNN\nanchor:my.look.ca@8=CNN.com\n",
	    "an alternation in a column regex");
	anchors.qualifier = pat("(");
	is_text(read_text_str(t.s, "web", "com.cnn.www", &so.read),
	    "ERROR(-22 Invalid argument)", "a bad column regex is -EINVAL");
	ok(strstr(bt_error_detail(), "column regex") != NULL,
	    "naming the column regex: %s", bt_error_detail());

	struct bt_read_options ro = { .family_regex = pat("con.*|lang.*") };
	is_text(read_text_str(t.s, "web", "com.cnn.www", &ro),
	    "contents:@6=<html>6\ncontents:@5=<html>5\n"
	    "contents:@3=<html>3\nlanguage:@2=EN\n",
	    "a family regex in a point read");
	ro = (struct bt_read_options){ .row_regex = pat("org.*") };
	is_text(read_text_str(t.s, "web", "com.cnn.www", &ro), "NOTFOUND",
	    "a point read of a row its row regex rules out finds nothing");
	ro.row_regex = pat("com\\.cnn\\.w+");
	ro.cells_per_column = 1;
	ro.family_regex = pat("contents");
	is_text(read_text_str(t.s, "web", "com.cnn.www", &ro),
	    "contents:@6=<html>6\n", "and one it matches is read");
	tstore_destroy(&t);
}

static void
test_values_and_rows(void)
{
	struct tstore t;
	struct bt_read_options ro = { 0 };

	tstore_fault(&t, NULL);
	webtable(t.s);
	ro.value_regex = pat("CNN.*");
	is_text(read_text_str(t.s, "web", "com.cnn.www", &ro),
	    "anchor:cnnsi.com@9=CNN\nanchor:my.look.ca@8=CNN.com\n",
	    "a value regex matches whole values");
	ro.keys_only = true;
	is_text(read_text_str(t.s, "web", "com.cnn.www", &ro),
	    "anchor:cnnsi.com@9= size=3\nanchor:my.look.ca@8= size=7\n",
	    "with keys_only: the same cells, values empty");
	ro = (struct bt_read_options){ .value_start = pat("<html>4"),
	    .value_end = pat("<html>6") };
	is_text(read_text_str(t.s, "web", "com.cnn.www", &ro),
	    "contents:@5=<html>5\n",
	    "a value range is [start, end), bytewise");
	ro = (struct bt_read_options){ .value_start = pat("Top") };
	is_text(read_text_str(t.s, "web", "com.cnn.www", &ro),
	    "anchor:www.cnn.com@7=Top\n",
	    "a value range open above (\"<html>\" < \"CNN\" < \"Top\")");
	ro = (struct bt_read_options){ .value_regex = pat("<html>[35]"),
	    .cells_per_column = 1 };
	is_text(read_text_str(t.s, "web", "com.cnn.www", &ro),
	    "contents:@5=<html>5\n",
	    "the value filter comes before cells per column");
	ro = (struct bt_read_options){ .cells_per_row_offset = 2,
	    .cells_per_row_limit = 3 };
	is_text(read_text_str(t.s, "web", "com.cnn.www", &ro),
	    "anchor:www.cnn.com@7=Top\ncontents:@6=<html>6\n"
	    "contents:@5=<html>5\n",
	    "cells per row: offset 2, then at most 3");
	ro.cells_per_column = 1;
	is_text(read_text_str(t.s, "web", "com.cnn.www", &ro),
	    "anchor:www.cnn.com@7=Top\ncontents:@6=<html>6\n"
	    "language:@2=EN\n",
	    "cells per column before cells per row");
	ro = (struct bt_read_options){ .cells_per_row_offset = 7 };
	is_text(read_text_str(t.s, "web", "com.cnn.www", &ro), "NOTFOUND",
	    "an offset past every cell leaves nothing");

	/* [T1, T2) as min_ts = T1, max_ts = T2 - 1 */
	ro = (struct bt_read_options){ .min_ts = 5, .has_max_ts = true,
	    .max_ts = 8 - 1 };
	is_text(read_text_str(t.s, "web", "com.cnn.www", &ro),
	    "anchor:www.cnn.com@7=Top\ncontents:@6=<html>6\n"
	    "contents:@5=<html>5\n",
	    "the time range [5, 8) holds 5, 6 and 7");
	ro = (struct bt_read_options){ .min_ts = 6, .has_max_ts = true,
	    .max_ts = 5 };
	is_text(read_text_str(t.s, "web", "com.cnn.www", &ro), "NOTFOUND",
	    "an empty time range selects nothing");

	struct bt_scan_options so = { 0 };
	so.read.cells_per_row_limit = 1;
	so.read.row_regex = pat("com.*");
	is_text(scan_text(t.s, "web", &so),
	    "[com.cnn.www]\nanchor:cnnsi.com@9=CNN\n"
	    "[com.cnn.www/sports]\nanchor:sport.cnn.com@4=Sports\n"
	    "[com.example]\nanchor:a.cnn.com@4=x\n",
	    "a scan with one cell per row goes on to the next rows");
	must(bt_store_flush(t.s));
	is_text(scan_text(t.s, "web", &so),
	    "[com.cnn.www]\nanchor:cnnsi.com@9=CNN\n"
	    "[com.cnn.www/sports]\nanchor:sport.cnn.com@4=Sports\n"
	    "[com.example]\nanchor:a.cnn.com@4=x\n",
	    "the same from an SSTable");
	so.read = (struct bt_read_options){ .keys_only = true,
	    .value_regex = pat("<html>5|x") };
	is_text(scan_text(t.s, "web", &so),
	    "[com.cnn.www]\ncontents:@5= size=7\n"
	    "[com.example]\nanchor:a.cnn.com@4= size=1\n",
	    "a keys-only scan with a value regex reads values from files");
	tstore_destroy(&t);
}

static void
test_binary(void)
{
	static const char *const fams[] = { "f", NULL };
	struct tstore t;
	struct bt_scan_options so = { 0 };

	tstore_fault(&t, NULL);
	must(make_table(t.s, "bin", fams));
	must(put_cell(t.s, "bin", btb("k\0\xff", 3), "f", btb("", 0), 1,
	    bts("empty")));
	must(put_cell(t.s, "bin", btb("k\0\xff", 3), "f", btb("q\0", 2), 1,
	    bts("nul")));
	must(put_cell(t.s, "bin", btb("k\0", 2), "f", bts("q"), 1, bts("v")));
	must(put_cell(t.s, "bin", btb("k\n", 2), "f", bts("q"), 1, bts("nl")));
	must(put_cell(t.s, "bin", btb("\xff", 1), "f", bts("q"), 1,
	    btb("\xff\0", 2)));
	so.read.row_regex = btb("k\\x00\\xff", 9);
	is_text(scan_keys(t.s, "bin", &so), "[k\\x00\\xff]\n",
	    "a row regex with \\x00\\xff matches a key with those bytes");
	so.read.row_regex = btb("k\0.*", 4);
	is_text(scan_keys(t.s, "bin", &so), "[k\\x00]\n[k\\x00\\xff]\n",
	    "a raw 0x00 in a pattern is a byte of it");
	so.read.row_regex = pat("k.");
	is_text(scan_keys(t.s, "bin", &so), "[k\\x00]\n",
	    ". is any byte but \\n");
	so.read.row_regex = pat("k\\C");
	is_text(scan_keys(t.s, "bin", &so), "[k\\x00]\n[k\\x0a]\n",
	    "\\C is any byte");
	so.read.row_regex = pat("\\xff");
	is_text(scan_text(t.s, "bin", &so), "[\\xff]\nf:q@1=\\xff\\x00\n",
	    "a row of one 0xff byte");
	so.read.row_regex = (struct bt_bytes){ 0 };
	so.read.qualifier_regex = btb("", 0);
	is_text(scan_text(t.s, "bin", &so), "[k\\x00\\xff]\nf:@1=empty\n",
	    "an empty qualifier regex selects the empty qualifier only");
	so.read.qualifier_regex = btb("q\\x00", 5);
	is_text(scan_text(t.s, "bin", &so), "[k\\x00\\xff]\nf:q\\x00@1=nul\n",
	    "a qualifier with 0x00");
	so.read.qualifier_regex = (struct bt_bytes){ 0 };
	so.read.value_regex = btb("\xff\\x00", 5);
	is_text(scan_keys(t.s, "bin", &so), "[\\xff]\n",
	    "a value of 0xff 0x00");
	tstore_destroy(&t);
}

static void
test_errors(void)
{
	struct tstore t;
	struct bt_read_options ro = { .qualifier_regex = pat("(unclosed") };
	struct bt_scan_options so = { 0 };
	struct bt_scan *sc = NULL;
	struct bt_row *r = NULL;
	char big[64];
	int rc;

	tstore_fault(&t, NULL);
	webtable(t.s);
	rc = bt_read_row(t.s, "web", bts("com.cnn.www"), &ro, &r);
	is_int(rc, -EINVAL, "a bad qualifier regex: -EINVAL");
	ok(strstr(bt_error_detail(), "qualifier regex") != NULL &&
	    strstr(bt_error_detail(), "missing closing parenthesis") != NULL,
	    "with the compiler's message: %s", bt_error_detail());
	so.read.row_regex = pat("a{2,1}");
	rc = bt_scan_open(t.s, "web", &so, &sc);
	is_int(rc, -EINVAL, "a bad row regex fails the scan's open");
	ok(sc == NULL && strstr(bt_error_detail(), "row regex") != NULL,
	    "naming it: %s", bt_error_detail());

	memset(big, 'x', 30);
	strcpy(big + 30, "yz");
	must(put_str(t.s, "web", "com.cnn.www", "contents", "", 10, big));
	ro = (struct bt_read_options){ .value_regex = pat("(x+x+)+y") };
	rc = bt_read_row(t.s, "web", bts("com.cnn.www"), &ro, &r);
	is_int(rc, -ERANGE, "a pathological value regex: -ERANGE");
	ok(strstr(bt_error_detail(), "value regex hit the match limit") != NULL,
	    "naming the limit: %s", bt_error_detail());
	so.read = ro;
	is_text(scan_text(t.s, "web", &so), "ERROR(-34 Numerical result out of "
	    "range)", "and in a scan");
	tstore_destroy(&t);
}

/* Blocks a scan read from files: the block cache's misses. */
static uint64_t
scan_misses(struct bt_store *s, const struct bt_scan_options *so,
    char **text)
{
	struct bt_stats a, b;

	bt_store_get_stats(s, &a);
	*text = scan_keys(s, "nar", so);
	bt_store_get_stats(s, &b);
	return b.cache_misses - a.cache_misses;
}

static void
test_prefix_narrowing(void)
{
	static const char *const fams[] = { "f", NULL };
	struct bt_group_spec g = { .name = "default", .block_size = 1024,
	    .compress = 0, .bloom = -1, .in_memory = -1 };
	struct bt_scan_options so = { 0 };
	char row[32], val[200], *narrow, *wide;
	uint64_t narrow_misses, wide_misses;
	struct tstore t;

	tstore_fault(&t, NULL);
	if (tstore_cell_skip(&t, "reads the store's cache counters"))
		return;
	must(make_table(t.s, "nar", fams));
	must(bt_group_set(t.s, "nar", &g));
	memset(val, 'v', sizeof(val) - 1);
	val[sizeof(val) - 1] = '\0';
	for (int i = 0; i < 2000; i++) {
		snprintf(row, sizeof(row), "r%05d", i);
		must(put_str(t.s, "nar", row, "f", "q", 1, val));
	}
	must(bt_store_flush(t.s));
	must(tstore_reopen(&t));
	so.read.row_regex = pat("r0150.*");
	narrow_misses = scan_misses(t.s, &so, &narrow);
	so.read.row_regex = pat("(?:r0150).*");
	wide_misses = scan_misses(t.s, &so, &wide);
	is_str(narrow, wide, "a pattern with a literal prefix selects the "
	    "same rows as one without");
	ok(strncmp(narrow, "[r01500]\n", 9) == 0 &&
	    strlen(narrow) == 10 * 9, "ten rows r01500..r01509");
	ok(narrow_misses <= 8 && wide_misses >= 100,
	    "the literal prefix narrows the scan: %" PRIu64 " blocks read, "
	    "%" PRIu64 " without it", narrow_misses, wide_misses);
	free(narrow);
	free(wide);
	tstore_destroy(&t);
}

/* ---- Random filter chains against a model ---- */

static const char *const row_pats[] = { NULL, "a.*", "\\x00.*", "a",
	".*\\xff", "b|a\\x00", "[ab]+", "(?s).*", "a\\xff.*", "" };
static const char *const fam_pats[] = { NULL, "a", "b|c", ".*" };
static const char *const qual_pats[] = { NULL, "", "y\\..*", ".*", "x|" };
static const char *const val_pats[] = { NULL, "v.*", "cnn|", "\\C+" };
static const char keychars[] = { 'a', 'b', 0x00, (char)0xff };

static bool
re_ok(struct regex *re, const void *p, size_t n)
{
	int rc;

	if (re == NULL)
		return true;
	if ((rc = regex_match(re, slice_make(p, n))) < 0)
		tap_bail("model regex failed");
	return rc == 1;
}

static struct regex *
re_new(struct bt_bytes b)
{
	struct regex *re = NULL;

	if (b.data != NULL &&
	    regex_compile(slice_make(b.data, b.size), "model", &re) != 0)
		tap_bail("model regex does not compile");
	return re;
}

static int
bytes_cmp(const void *a, size_t an, const void *b, size_t bn)
{
	int c = memcmp(a, b, an < bn ? an : bn);

	return c != 0 ? c : (an > bn) - (an < bn);
}

/* What the documented order of filters makes of the unfiltered rows. */
static char *
model_scan(struct bt_store *s, const char *table,
    const struct bt_read_options *ro)
{
	struct regex *rre = re_new(ro->row_regex), *fre = re_new(
	    ro->family_regex), *qre = re_new(ro->qualifier_regex),
	    *vre = re_new(ro->value_regex);
	struct sbuf b = { 0 };
	struct bt_scan *sc;
	struct bt_row *r;

	if (bt_scan_open(s, table, NULL, &sc) != 0)
		tap_bail("model scan");
	while (bt_scan_next(sc, &r) == 0) {
		struct bt_row out = r[0];
		struct bt_cell *cells = xmalloc((r->cell_count + 1) *
		    sizeof(*cells));
		uint32_t in_column = 0, passed = 0;

		out.cells = cells;
		out.cell_count = 0;
		if (!re_ok(rre, r->key.data, r->key.size))
			goto next;
		for (size_t i = 0; i < r->cell_count; i++) {
			const struct bt_cell *c = &r->cells[i];

			if (i == 0 || strcmp(c->family, r->cells[i - 1].family)
			    != 0 || !bytes_eq(c->qualifier,
			    r->cells[i - 1].qualifier))
				in_column = 0;
			if (!re_ok(fre, c->family, strlen(c->family)) ||
			    !re_ok(qre, c->qualifier.data, c->qualifier.size))
				continue;
			if (c->ts < ro->min_ts ||
			    (ro->has_max_ts && c->ts > ro->max_ts))
				continue;
			if (!re_ok(vre, c->value.data, c->value.size))
				continue;
			if (ro->value_start.data != NULL && bytes_cmp(
			    c->value.data, c->value.size, ro->value_start.data,
			    ro->value_start.size) < 0)
				continue;
			if (ro->value_end.data != NULL && bytes_cmp(
			    c->value.data, c->value.size, ro->value_end.data,
			    ro->value_end.size) >= 0)
				continue;
			if (ro->cells_per_column != 0 &&
			    in_column >= ro->cells_per_column)
				continue;
			in_column++;
			if (passed++ < ro->cells_per_row_offset)
				continue;
			if (ro->cells_per_row_limit != 0 && out.cell_count >=
			    ro->cells_per_row_limit)
				break;
			cells[out.cell_count] = *c;
			if (ro->keys_only)
				cells[out.cell_count].value.size = 0;
			out.cell_count++;
		}
		if (out.cell_count > 0) {
			sbuf_add(&b, "[", 1);
			sbuf_escaped(&b, out.key.data, out.key.size);
			sbuf_add(&b, "]\n", 2);
			render_cells(&b, &out, ro->keys_only);
		}
next:
		free(cells);
		bt_row_free(r);
	}
	bt_scan_close(sc);
	regex_free(rre);
	regex_free(fre);
	regex_free(qre);
	regex_free(vre);
	return sbuf_take(&b);
}

static struct bt_bytes
pick_pat(uint64_t *rng, const char *const *pats, size_t n)
{
	const char *p = pats[tap_rand(rng) % n];

	return p == NULL ? (struct bt_bytes){ 0 } : bts(p);
}

#define PICK(rng, a) pick_pat(rng, a, sizeof(a) / sizeof(a[0]))

static void
random_key(uint64_t *rng, char *k, size_t *n)
{
	*n = 1 + tap_rand(rng) % 3;
	for (size_t i = 0; i < *n; i++)
		k[i] = keychars[tap_rand(rng) % sizeof(keychars)];
}

static void
test_random_chains(uint64_t *rng)
{
	static const char *const fams[] = { "a", "b=maxversions=2", "c", NULL };
	static const char *const quals[] = { "", "x", "y.z", "y" };
	static const char *const vals[] = { "", "v1", "cnn", "\xff", "w" };
	int bad = 0, rounds = getenv("TABLETFS_TEST_CELL") ? 60 : 300;
	struct tstore t;

	tstore_fault(&t, NULL);
	must(make_table(t.s, "rnd", fams));
	for (int i = 0; i < 400; i++) {
		char k[4];
		size_t kn;
		const char *fam = fams[tap_rand(rng) % 3];
		const char *q = quals[tap_rand(rng) % 4];
		int64_t ts = 1 + (int64_t)(tap_rand(rng) % 6);

		random_key(rng, k, &kn);
		if (fam[1] == '=')
			fam = "b";
		if (tap_rand(rng) % 10 == 0)
			must(del_cell(t.s, "rnd", btb(k, kn), tap_rand(rng) % 2 ?
			    BT_DELETE_COLUMN : BT_DELETE_ROW, fam, bts(q), 0));
		else
			must(put_cell(t.s, "rnd", btb(k, kn), fam, bts(q), ts,
			    bts(vals[tap_rand(rng) % 5])));
		if (i == 200)
			must(bt_store_flush(t.s));
	}
	for (int round = 0; round < rounds; round++) {
		struct bt_scan_options so = { 0 };
		struct bt_read_options *ro = &so.read;
		char *got, *want;

		ro->row_regex = PICK(rng, row_pats);
		ro->family_regex = PICK(rng, fam_pats);
		ro->qualifier_regex = PICK(rng, qual_pats);
		ro->value_regex = PICK(rng, val_pats);
		if (tap_rand(rng) % 3 == 0)
			ro->value_start = bts("v");
		if (tap_rand(rng) % 3 == 0)
			ro->value_end = bts("w");
		ro->cells_per_column = (uint32_t)(tap_rand(rng) % 3);
		ro->cells_per_row_offset = (uint32_t)(tap_rand(rng) % 3);
		ro->cells_per_row_limit = (uint32_t)(tap_rand(rng) % 3);
		if (tap_rand(rng) % 3 == 0) {
			ro->min_ts = 2;
			ro->has_max_ts = true;
			ro->max_ts = 4;
		}
		ro->keys_only = tap_rand(rng) % 4 == 0;
		got = scan_text(t.s, "rnd", &so);
		want = model_scan(t.s, "rnd", ro);
		if (strcmp(got, want) != 0 && bad++ < 3) {
			diag("round %d differs: row %.*s fam %.*s qual %.*s "
			    "val %.*s [%s, %s) cpc %u off %u lim %u ts %d "
			    "keys %d", round,
			    (int)ro->row_regex.size, (const char *)ro->row_regex.data,
			    (int)ro->family_regex.size, (const char *)ro->family_regex.data,
			    (int)ro->qualifier_regex.size, (const char *)ro->qualifier_regex.data,
			    (int)ro->value_regex.size, (const char *)ro->value_regex.data,
			    ro->value_start.data ? "v" : "-",
			    ro->value_end.data ? "w" : "-", ro->cells_per_column,
			    ro->cells_per_row_offset, ro->cells_per_row_limit,
			    ro->has_max_ts, ro->keys_only);
			diag_text("got", got);
			diag_text("want", want);
		}
		free(got);
		free(want);
		if (round == rounds / 2)
			must(bt_store_flush(t.s));
	}
	ok(bad == 0, "%d random filter chains give the model's rows "
	    "(%d differ)", rounds, bad);
	tstore_destroy(&t);
}

/* Point reads of every row with random chains, against the scan. */
static void
test_random_points(uint64_t *rng)
{
	static const char *const fams[] = { "a", "b", NULL };
	struct tstore t;
	int bad = 0;

	tstore_fault(&t, NULL);
	must(make_table(t.s, "pts", fams));
	for (int i = 0; i < 120; i++) {
		char k[4];
		size_t kn;

		random_key(rng, k, &kn);
		must(put_cell(t.s, "pts", btb(k, kn), tap_rand(rng) % 2 ? "a" :
		    "b", bts(tap_rand(rng) % 2 ? "x" : ""),
		    1 + (int64_t)(tap_rand(rng) % 4), bts(tap_rand(rng) % 2 ?
		    "v1" : "cnn")));
		if (i == 60)
			must(bt_store_flush(t.s));
	}
	for (int round = 0; round < 60; round++) {
		struct bt_scan_options so = { 0 };
		struct bt_read_options *ro = &so.read;
		char k[4], *got, *want;
		size_t kn;
		struct sbuf b = { 0 };

		ro->row_regex = PICK(rng, row_pats);
		ro->qualifier_regex = PICK(rng, qual_pats);
		ro->value_regex = PICK(rng, val_pats);
		ro->cells_per_column = (uint32_t)(tap_rand(rng) % 2);
		ro->cells_per_row_offset = (uint32_t)(tap_rand(rng) % 2);
		ro->cells_per_row_limit = (uint32_t)(tap_rand(rng) % 3);
		random_key(rng, k, &kn);
		k[kn] = '\0';
		so.start = btb(k, kn);
		so.end = btb(k, kn + 1);	/* the row k alone */
		want = scan_text(t.s, "pts", &so);
		got = read_text(t.s, "pts", btb(k, kn), ro);
		if (strcmp(got, "NOTFOUND") != 0) {
			sbuf_add(&b, "[", 1);
			sbuf_escaped(&b, k, kn);
			sbuf_add(&b, "]\n", 2);
			sbuf_add(&b, got, strlen(got));
		}
		free(got);
		got = sbuf_take(&b);
		if (strcmp(got, want) != 0 && bad++ < 3) {
			diag_text("point", got);
			diag_text("scan", want);
		}
		free(got);
		free(want);
	}
	ok(bad == 0, "point reads with random chains give the scan's cells "
	    "(%d differ)", bad);
	tstore_destroy(&t);
}

int
main(void)
{
	uint64_t seed = tap_seed(), rng = seed;

	test_paper_example();
	test_values_and_rows();
	test_binary();
	test_errors();
	test_prefix_narrowing();
	test_random_chains(&rng);
	test_random_points(&rng);
	return tap_done();
}
