/*
 * test_api_point.c - point reads (bt_read_row) gather a row from the
 * memtable and every SSTable that may hold it, sort the entries and
 * resolve them; scans merge the same sources with iterators.  Both must
 * agree, whatever the mix of sources: after random puts (colliding
 * timestamps, older timestamps after newer ones), deletes of every kind,
 * flushes between them (one SSTable each) and compactions, every row is
 * read with every kind of filter (versions per column, time range, as-of,
 * columns, keys only) both ways.  Then fixed cases with their expected
 * answers: a newer delete in the memtable masks older data in SSTables, a
 * later put with an older timestamp is visible, maxversions and as-of
 * across sources, the step over the rest of a column, and rows too large
 * to gather (read by streaming), and the SSTables that a newest-version
 * read leaves out because the memtable or newer SSTables settle them.
 * Last, more reader threads than the store keeps resolved rows for
 * (bt_read_row reuses them) each check the rows they read, some of them
 * large enough that their buffers are freed.
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

#include "api/tabletfs.h"
#include "util/env.h"
#include "api_util.h"

static const char *const families[] = {
	"a", "m1=maxversions=1", "m2=maxversions=2", NULL,
};
static const char *const fam_names[] = { "a", "m1", "m2" };
static const char *const quals[] = { "", "q", "qq" };

/* Rows include a prefix of others and one with a 0x00 byte (escaped). */
static const struct bt_bytes rows[] = {
	{ "r", 1 }, { "r0", 2 }, { "r1", 2 }, { "r00", 3 }, { "z\0q", 3 },
};
#define NROWS (sizeof(rows) / sizeof(rows[0]))

static const struct bt_column col_m1 = { .family = "m1" };
static const struct bt_column col_aq = {
	.family = "a", .has_qualifier = true, .qualifier = { "q", 1 },
};

static const struct bt_read_options read_kinds[] = {
	{ 0 },
	{ .cells_per_column = 1 },
	{ .cells_per_column = 2 },
	{ .min_ts = 4 },
	{ .has_max_ts = true, .max_ts = 5 },
	{ .has_max_ts = true, .max_ts = 3, .cells_per_column = 1 },
	{ .columns = &col_m1, .column_count = 1 },
	{ .columns = &col_aq, .column_count = 1, .cells_per_column = 1 },
	{ .keys_only = true },
};
#define NKINDS (sizeof(read_kinds) / sizeof(read_kinds[0]))

/* What a scan of [row, row 0x00) says, spelled as read_text() spells it. */
static char *
scan_one_row(struct bt_store *s, struct bt_bytes row,
    const struct bt_read_options *ro)
{
	char end[8];
	struct bt_scan_options so = { 0 };
	char *text, *nl, *out;

	memcpy(end, row.data, row.size);
	end[row.size] = '\0';
	so.start = row;
	so.end = btb(end, row.size + 1);
	so.read = *ro;
	text = scan_text(s, "t", &so);
	if (text[0] == '\0') {
		free(text);
		return strdup("NOTFOUND");
	}
	if (text[0] != '[' || (nl = strchr(text, '\n')) == NULL)
		return text;
	out = strdup(nl + 1);
	free(text);
	return out;
}

/* Compare every row, every read kind; count the disagreements. */
static size_t
compare_all(struct bt_store *s, const char *when, bool *shown)
{
	size_t bad = 0;

	for (size_t r = 0; r < NROWS; r++) {
		for (size_t k = 0; k < NKINDS; k++) {
			char *point = read_text(s, "t", rows[r],
			    &read_kinds[k]);
			char *scan = scan_one_row(s, rows[r], &read_kinds[k]);

			if (strcmp(point, scan) != 0) {
				bad++;
				if (!*shown) {
					diag("%s: row %zu, read kind %zu",
					    when, r, k);
					diag_text("point read", point);
					diag_text("scan", scan);
					*shown = true;
				}
			}
			free(point);
			free(scan);
		}
	}
	return bad;
}

static void
random_op(struct bt_store *s, uint64_t *rng, unsigned n)
{
	struct bt_bytes row = rows[tap_rand(rng) % NROWS];
	const char *fam = fam_names[tap_rand(rng) % 3];
	struct bt_bytes q = bts(quals[tap_rand(rng) % 3]);
	int64_t ts = 1 + (int64_t)(tap_rand(rng) % 8);
	unsigned pick = (unsigned)(tap_rand(rng) % 100);
	char val[32];
	int rc;

	snprintf(val, sizeof(val), "v%u", n);
	if (pick < 70)
		rc = put_cell(s, "t", row, fam, q, ts, bts(val));
	else if (pick < 82)
		rc = del_cell(s, "t", row, BT_DELETE_VERSION, fam, q, ts);
	else if (pick < 90)
		rc = del_cell(s, "t", row, BT_DELETE_COLUMN, fam, q, 0);
	else if (pick < 96)
		rc = del_cell(s, "t", row, BT_DELETE_FAMILY, fam, q, 0);
	else
		rc = del_cell(s, "t", row, BT_DELETE_ROW, fam, q, 0);
	if (rc != 0) {
		diag("op %u: %s (%s)", n, bt_strerror(rc), bt_error_detail());
		tap_bail("a random mutation failed");
	}
}

/* Random history in several SSTables and the memtable: point reads agree
 * with scans at every step. */
static void
test_differential(uint64_t *rng)
{
	struct tstore t;
	size_t bad = 0, checks = 0, flushes = 0;
	bool shown = false;

	tstore_fault(&t, NULL);
	must(make_table(t.s, "t", families));
	for (unsigned n = 1; n <= 600; n++) {
		random_op(t.s, rng, n);
		if (n % 17 == 0) {
			must(bt_store_flush(t.s));
			flushes++;
		}
		if (n % 150 == 0)
			must(bt_store_compact(t.s, "t", n % 300 == 0));
		if (n % 5 == 0) {
			bad += compare_all(t.s, "random history", &shown);
			checks++;
		}
	}
	is_int(bad, 0, "point reads agree with scans after %zu checks of "
	    "%zu rows x %zu read kinds (%zu flushes)", checks, NROWS, NKINDS,
	    flushes);
	must(bt_store_compact(t.s, "t", true));
	is_int(compare_all(t.s, "after a major compaction", &shown), 0,
	    "and after a major compaction");
	tstore_reopen(&t);
	is_int(compare_all(t.s, "after a reopen", &shown), 0,
	    "and after a reopen");
	tstore_destroy(&t);
}

/* Fixed cases across sources, with their answers. */
static void
test_across_sources(void)
{
	struct bt_read_options newest = { .cells_per_column = 1 };
	struct bt_read_options as_of = { .has_max_ts = true, .max_ts = 15,
	    .cells_per_column = 1 };
	struct tstore t;

	tstore_fault(&t, NULL);
	must(make_table(t.s, "t", families));

	/* A newer row delete in the memtable masks data in two SSTables;
	 * a later put with an older timestamp is visible. */
	must(put_str(t.s, "t", "d", "a", "x", 10, "x10"));
	must(bt_store_flush(t.s));
	must(put_str(t.s, "t", "d", "a", "x", 20, "x20"));
	must(bt_store_flush(t.s));
	is_text(read_text_str(t.s, "t", "d", &newest), "a:x@20=x20\n",
	    "newest of two SSTables");
	must(del_str(t.s, "t", "d", BT_DELETE_ROW, NULL, NULL, 0));
	is_text(read_text_str(t.s, "t", "d", NULL), "NOTFOUND",
	    "a row delete in the memtable masks both SSTables");
	must(put_str(t.s, "t", "d", "a", "x", 5, "x5"));
	is_text(read_text_str(t.s, "t", "d", NULL), "a:x@5=x5\n",
	    "a later put with an older timestamp is visible");
	must(bt_store_flush(t.s));
	is_text(read_text_str(t.s, "t", "d", NULL), "a:x@5=x5\n",
	    "and still once the delete and the put are flushed");

	/* A version delete in the memtable of the newest version, which is
	 * in an SSTable: the older one from another SSTable shows. */
	must(put_str(t.s, "t", "v", "a", "", 1, "one"));
	must(bt_store_flush(t.s));
	must(put_str(t.s, "t", "v", "a", "", 2, "two"));
	must(bt_store_flush(t.s));
	must(del_str(t.s, "t", "v", BT_DELETE_VERSION, "a", "", 2));
	is_text(read_text_str(t.s, "t", "v", &newest), "a:@1=one\n",
	    "deleting the newest version shows the older one");

	/* maxversions=1: the newest timestamp wins wherever it is, and a
	 * condemned version does not come back when the newest is
	 * deleted. */
	must(put_str(t.s, "t", "g", "m1", "c", 30, "m30"));
	must(bt_store_flush(t.s));
	must(put_str(t.s, "t", "g", "m1", "c", 10, "m10"));
	is_text(read_text_str(t.s, "t", "g", NULL), "m1:c@30=m30\n",
	    "maxversions=1 keeps the newest timestamp, not the newest put");
	must(del_str(t.s, "t", "g", BT_DELETE_VERSION, "m1", "c", 30));
	is_text(read_text_str(t.s, "t", "g", NULL), "NOTFOUND",
	    "the condemned version stays condemned");

	/* As of a time: the newest version at or before it, from an older
	 * SSTable than the newest version's. */
	must(put_str(t.s, "t", "o", "a", "c", 12, "c12"));
	must(bt_store_flush(t.s));
	must(put_str(t.s, "t", "o", "a", "c", 18, "c18"));
	must(bt_store_flush(t.s));
	must(put_str(t.s, "t", "o", "a", "c", 25, "c25"));
	is_text(read_text_str(t.s, "t", "o", &as_of), "a:c@12=c12\n",
	    "as of 15: the version of 12, two sources back");
	{
		struct bt_read_options range = { .min_ts = 13, .has_max_ts =
		    true, .max_ts = 24 };

		is_text(read_text_str(t.s, "t", "o", &range), "a:c@18=c18\n",
		    "time range 13..24: one version, from the middle source");
	}
	tstore_destroy(&t);
}

/*
 * The resolver steps over the rest of a column once it can return nothing
 * more from it (not selected, cells per column reached, versions older
 * than min_ts): the next column, even one whose qualifier extends this
 * one's or holds a 0x00 byte, and the next family's delete marker, must
 * still be seen.
 */
static void
test_column_skip(void)
{
	static const struct bt_column col_m2 = { .family = "m2" };
	static const struct bt_column col_ax = { .family = "a",
	    .has_qualifier = true, .qualifier = { "x", 1 } };
	struct bt_read_options ro;
	struct tstore t;

	tstore_fault(&t, NULL);
	must(make_table(t.s, "t", families));
	must(put_str(t.s, "t", "s", "a", "q", 5, "q5"));
	must(put_str(t.s, "t", "s", "a", "q", 4, "q4"));
	must(put_str(t.s, "t", "s", "a", "q", 3, "q3"));
	must(put_str(t.s, "t", "s", "m2", "c", 1, "c1"));
	must(bt_store_flush(t.s));
	must(put_str(t.s, "t", "s", "a", "qq", 9, "qq9"));
	must(put_str(t.s, "t", "s", "a", "qq", 8, "qq8"));
	must(put_str(t.s, "t", "s", "a", "x", 7, "x7"));
	must(put_str(t.s, "t", "s", "a", "x", 6, "x6"));
	must(put_cell(t.s, "t", bts("s"), "a", btb("x\0", 2), 2,
	    bts("xz2")));
	must(del_str(t.s, "t", "s", BT_DELETE_FAMILY, "m2", NULL, 0));
	must(bt_store_flush(t.s));
	must(put_str(t.s, "t", "s", "m2", "c", 1, "c1new"));
	must(put_str(t.s, "t", "s", "m2", "d", 3, "d3"));

	ro = (struct bt_read_options){ .cells_per_column = 1 };
	is_text(read_text_str(t.s, "t", "s", &ro),
	    "a:q@5=q5\na:qq@9=qq9\na:x@7=x7\na:x\\x00@2=xz2\n"
	    "m2:c@1=c1new\nm2:d@3=d3\n",
	    "one per column: the newest of each, a:qq and a:x\\0 after a:q "
	    "and a:x, the family delete applied");
	ro = (struct bt_read_options){ .min_ts = 5 };
	is_text(read_text_str(t.s, "t", "s", &ro),
	    "a:q@5=q5\na:qq@9=qq9\na:qq@8=qq8\na:x@7=x7\na:x@6=x6\n",
	    "min_ts 5: each column down to 5, nothing older");
	ro = (struct bt_read_options){ .columns = &col_m2, .column_count = 1,
	    .cells_per_column = 1 };
	is_text(read_text_str(t.s, "t", "s", &ro),
	    "m2:c@1=c1new\nm2:d@3=d3\n",
	    "family m2 only: family a stepped over");
	ro = (struct bt_read_options){ .columns = &col_ax, .column_count = 1,
	    .cells_per_column = 1 };
	is_text(read_text_str(t.s, "t", "s", &ro), "a:x@7=x7\n",
	    "column a:x only: not a:x\\0");
	ro = (struct bt_read_options){ .has_max_ts = true, .max_ts = 4,
	    .cells_per_column = 1 };
	is_text(read_text_str(t.s, "t", "s", &ro),
	    "a:q@4=q4\na:x\\x00@2=xz2\nm2:c@1=c1new\nm2:d@3=d3\n",
	    "as of 4, one per column");
	ro = (struct bt_read_options){ .cells_per_column = 2 };
	is_text(read_text_str(t.s, "t", "s", &ro),
	    "a:q@5=q5\na:q@4=q4\na:qq@9=qq9\na:qq@8=qq8\na:x@7=x7\n"
	    "a:x@6=x6\na:x\\x00@2=xz2\nm2:c@1=c1new\nm2:d@3=d3\n",
	    "two per column");
	tstore_destroy(&t);
}

/* A row whose SSTable blocks hold more than the gathering takes (1 MiB)
 * is read by streaming, with the same answer. */
static void
test_large_row(void)
{
	struct tstore t;
	size_t vlen = 64 << 10, bad = 0;
	char *val = xmalloc(vlen + 1), q[16];
	struct bt_row *r = NULL;
	int rc;

	tstore_fault(&t, NULL);
	must(make_table(t.s, "t", families));
	for (int i = 0; i < 40; i++) {
		snprintf(q, sizeof(q), "c%02d", i);
		memset(val, 'a' + i % 26, vlen);
		must(put_cell(t.s, "t", bts("big"), "a", bts(q), 1,
		    btb(val, vlen)));
	}
	must(bt_store_flush(t.s));
	must(del_str(t.s, "t", "big", BT_DELETE_COLUMN, "a", "c07", 0));
	must(put_str(t.s, "t", "big", "a", "c39", 2, "new"));
	rc = bt_read_row(t.s, "t", bts("big"), NULL, &r);
	is_int(rc, 0, "a 2.5 MiB row reads");
	if (rc == 0) {
		ok(r->cell_count == 40, "39 columns, one of them with two "
		    "versions (%zu cells)", r->cell_count);
		for (size_t i = 0; i < r->cell_count; i++) {
			const struct bt_cell *c = &r->cells[i];
			int col = atoi((const char *)c->qualifier.data + 1);

			const char *data = c->value.data;

			if (col == 7)
				bad++;
			else if (col == 39 && c->ts == 2)
				bad += !bytes_eq(c->value, bts("new"));
			else if (c->value.size != vlen ||
			    data[vlen / 2] != 'a' + col % 26)
				bad++;
		}
		is_int(bad, 0, "every value is whole and the deleted column "
		    "is gone");
		bt_row_free(r);
	}
	{
		struct bt_read_options newest = { .cells_per_column = 1 };
		char *point = read_text(t.s, "t", bts("big"), &newest);
		char *scan = scan_one_row(t.s, bts("big"), &newest);

		ok(strcmp(point, scan) == 0, "the large row: point read and "
		    "scan agree");
		free(point);
		free(scan);
	}

	/* More entries than the gathering takes (16384), all in the
	 * memtable. */
	for (int i = 1; i <= 20000; i++) {
		snprintf(val, vlen, "v%d", i);
		must(put_str(t.s, "t", "many", "a", "", i, val));
	}
	r = NULL;
	rc = bt_read_row(t.s, "t", bts("many"), NULL, &r);
	ok(rc == 0 && r->cell_count == 20000 && r->cells[0].ts == 20000 &&
	    bytes_eq(r->cells[0].value, bts("v20000")) &&
	    r->cells[19999].ts == 1,
	    "a row of 20000 memtable entries reads whole, newest first");
	if (rc == 0)
		bt_row_free(r);
	{
		struct bt_read_options newest = { .cells_per_column = 1 };

		is_text(read_text_str(t.s, "t", "many", &newest),
		    "a:@20000=v20000\n", "and its newest version");
	}
	free(val);
	tstore_destroy(&t);
}

/* Blocks a read of t/row looks up (cache hits and misses), with its text
 * into *text (free it). */
static uint64_t
read_lookups(struct tstore *t, const char *row,
    const struct bt_read_options *ro, char **text)
{
	struct bt_stats st0, st1;

	bt_store_get_stats(t->s, &st0);
	*text = read_text_str(t->s, "t", row, ro);
	bt_store_get_stats(t->s, &st1);
	return st1.cache_hits + st1.cache_misses - st0.cache_hits -
	    st0.cache_misses;
}

/*
 * A column of many large versions (40 of 200 KiB, a block each) in an
 * SSTable, a version delete and a column delete among them: a read of the
 * newest version, or as of an old time, passes the versions it does not
 * return by a seek instead of reading their blocks, and returns what the
 * rules say.  Family "a" keeps every version, so versions newer than the
 * bound count against nothing; in a maxversions family they do.
 */
static void
test_many_versions(void)
{
	static const char *const fams[] = { "a", "m=maxversions=3", NULL };
	struct bt_read_options ro;
	size_t vlen = 200 << 10;
	char *val = xmalloc(vlen), *text, want[64];
	struct tstore t;
	uint64_t n;

	tstore_fault(&t, NULL);
	must(make_table(t.s, "t", fams));
	for (int ts = 1; ts <= 40; ts++) {
		memset(val, 'a' + ts % 26, vlen);
		snprintf(val, vlen, "v%d:", ts);
		must(put_cell(t.s, "t", bts("r"), "a", bts("c"), ts,
		    btb(val, vlen)));
		must(put_cell(t.s, "t", bts("r"), "m", bts("c"), ts,
		    btb(val, vlen)));
	}
	must(bt_store_flush(t.s));
	must(del_str(t.s, "t", "r", BT_DELETE_VERSION, "a", "c", 5));

	ro = (struct bt_read_options){ .cells_per_column = 1, .keys_only =
	    true, .columns = &(struct bt_column){ .family = "a" },
	    .column_count = 1 };
	n = read_lookups(&t, "r", &ro, &text);
	is_text(text, "a:c@40= size=204800\n", "the newest of 40 large "
	    "versions");
	ok(n <= 30, "it looks up %llu blocks, not one per version (80)",
	    (unsigned long long)n);
	for (int64_t at = 7; at >= 4; at--) {
		ro.has_max_ts = true;
		ro.max_ts = at;
		n = read_lookups(&t, "r", &ro, &text);
		snprintf(want, sizeof(want), "a:c@%d= size=204800\n",
		    at == 5 ? 4 : (int)at);
		is_text(text, want, "as of %d (5 is deleted)", (int)at);
		ok(n <= 30, "as of %d it looks up %llu blocks, not one per "
		    "version (80)", (int)at, (unsigned long long)n);
	}
	ro.max_ts = 38;
	ro.cells_per_column = 3;
	ro.columns = &(struct bt_column){ .family = "m" };
	is_text(read_text_str(t.s, "t", "r", &ro), "m:c@38= size=204800\n",
	    "maxversions=3 as of 38: only 38 is among the 3 newest");
	must(del_str(t.s, "t", "r", BT_DELETE_COLUMN, "a", "c", 0));
	must(put_cell(t.s, "t", bts("r"), "a", bts("c"), 2, bts("late")));
	ro = (struct bt_read_options){ .has_max_ts = true, .max_ts = 30,
	    .columns = &(struct bt_column){ .family = "a" },
	    .column_count = 1 };
	is_text(read_text_str(t.s, "t", "r", &ro), "a:c@2=late\n",
	    "after a column delete, as of 30: only the later put");
	ro.has_max_ts = false;
	is_text(read_text_str(t.s, "t", "r", &ro), "a:c@2=late\n",
	    "and newest first, the same");
	free(val);
	tstore_destroy(&t);
}

/* The Bloom filter (one hash of the row for every SSTable) keeps a point
 * read out of the SSTables that do not hold its row.  Three SSTables:
 * one fewer than a merging compaction waits for; the clock stands still,
 * so that the tablet never goes idle (tablet.h, TABLET_IDLE_USEC) and its
 * files stay as they are. */
static void
test_bloom_skips(void)
{
	struct bt_stats st0, st1;
	struct tstore t;
	char row[32], want[64];
	uint64_t lookups;

	tstore_fault(&t, NULL);
	if (tstore_cell_skip(&t, "sets the store's clock"))
		return;
	env_fault_set_clock(t.env, env_now_micros(t.env));
	must(make_table(t.s, "t", families));
	for (int k = 0; k < 3; k++) {
		for (int i = 0; i < 200; i++) {
			snprintf(row, sizeof(row), "b%d_%03d", k, i);
			must(put_str(t.s, "t", row, "a", "", 1, row));
		}
		must(bt_store_flush(t.s));
	}
	bt_store_get_stats(t.s, &st0);
	for (int i = 0; i < 100; i++) {
		snprintf(row, sizeof(row), "b%d_%03d", i % 3, i * 2);
		snprintf(want, sizeof(want), "a:@1=%s\n", row);
		is_text(read_text_str(t.s, "t", row, NULL), want, "row %s",
		    row);
	}
	bt_store_get_stats(t.s, &st1);
	lookups = st1.cache_hits + st1.cache_misses - st0.cache_hits -
	    st0.cache_misses;
	ok(st1.sstables == 3 && lookups >= 100 && lookups < 150,
	    "100 point reads over %llu SSTables look up %llu blocks, not one "
	    "per SSTable", (unsigned long long)st1.sstables,
	    (unsigned long long)lookups);
	tstore_destroy(&t);
}

/* Block lookups (cache hits and misses) made by reading row with ro. */
static uint64_t
lookups_of_read(struct tstore *t, const char *row,
    const struct bt_read_options *ro, const char *want)
{
	struct bt_stats st0, st1;

	bt_store_get_stats(t->s, &st0);
	is_text(read_text_str(t->s, "t", row, ro), want, "row %s", row);
	bt_store_get_stats(t->s, &st1);
	return st1.cache_hits + st1.cache_misses - st0.cache_hits -
	    st0.cache_misses;
}

/*
 * An SSTable whose bounds (its columns and largest timestamp) the
 * memtables settle is not read by a newest-version read: a row rewritten
 * since its flush is read without a block lookup.  Every other read still
 * reads the file: all versions, a column the memtable lacks, an older
 * client timestamp in the memtable, a version delete in the memtable, an
 * as-of time before the memtable's put.
 */
static const struct bt_read_options newest = { .cells_per_column = 1 };

static void
test_memtable_settles(void)
{
	const struct bt_read_options all = { 0 };
	const struct bt_read_options asof = { .cells_per_column = 1,
	    .has_max_ts = true, .max_ts = 150 };
	const struct bt_mutation del = { .kind = BT_DELETE_VERSION,
	    .family = "a", .qualifier = { "", 0 }, .ts = 200 };
	struct tstore t;
	uint64_t n;

	tstore_fault(&t, NULL);
	if (tstore_cell_skip(&t, "reads the store's files"))
		return;
	must(make_table(t.s, "t", families));
	/* Bounds are the file's: the row with two columns has its own. */
	must(put_str(t.s, "t", "s3", "a", "", 100, "file"));
	must(put_str(t.s, "t", "s3", "a", "q", 100, "fileq"));
	must(bt_store_flush(t.s));
	must(put_str(t.s, "t", "s1", "a", "", 100, "file"));
	must(put_str(t.s, "t", "s2", "a", "", 100, "file"));
	must(put_str(t.s, "t", "s4", "a", "", 100, "file"));
	must(put_str(t.s, "t", "s5", "a", "", 100, "file"));
	must(bt_store_flush(t.s));
	must(put_str(t.s, "t", "s1", "a", "", 200, "mem"));
	must(put_str(t.s, "t", "s2", "a", "", 50, "mem"));
	must(put_str(t.s, "t", "s3", "a", "", 200, "mem"));
	must(put_str(t.s, "t", "s4", "a", "", 200, "mem"));
	must(bt_mutate_row(t.s, "t", bts("s4"), &del, 1, NULL, NULL));
	must(put_str(t.s, "t", "s5", "a", "", 200, "mem"));

	n = lookups_of_read(&t, "s1", &newest, "a:@200=mem\n");
	is_int((long long)n, 0, "newest version settled by the memtable: no "
	    "block lookup");
	n = lookups_of_read(&t, "s1", &all, "a:@200=mem\na:@100=file\n");
	ok(n >= 1, "all versions: the SSTable is read (%llu lookups)",
	    (unsigned long long)n);
	n = lookups_of_read(&t, "s2", &newest, "a:@100=file\n");
	ok(n >= 1, "an older client timestamp in the memtable: the SSTable "
	    "is read (%llu lookups)", (unsigned long long)n);
	n = lookups_of_read(&t, "s3", &newest,
	    "a:@200=mem\na:q@100=fileq\n");
	ok(n >= 1, "the SSTable has a column the memtable lacks: it is read "
	    "(%llu lookups)", (unsigned long long)n);
	n = lookups_of_read(&t, "s4", &newest, "a:@100=file\n");
	ok(n >= 1, "a version delete in the memtable: the SSTable is read "
	    "(%llu lookups)", (unsigned long long)n);
	n = lookups_of_read(&t, "s5", &asof, "a:@100=file\n");
	ok(n >= 1, "as of a time before the memtable's put: the SSTable is "
	    "read (%llu lookups)", (unsigned long long)n);
	tstore_destroy(&t);
}

/* A fresh store whose table "t" has the families above, and a clock that
 * stands still: the tablet never goes idle (tablet.h, TABLET_IDLE_USEC),
 * so its files stay as they are; false (nothing to test) on a cell. */
static bool
settle_store(struct tstore *t)
{
	tstore_fault(t, NULL);
	if (tstore_cell_skip(t, "reads the store's files"))
		return false;
	env_fault_set_clock(t->env, env_now_micros(t->env));
	must(make_table(t->s, "t", families));
	return true;
}

static void
put_flush(struct tstore *t, const char *row, const char *qual, int64_t ts,
    const char *value)
{
	must(put_str(t->s, "t", row, "a", qual, ts, value));
	must(bt_store_flush(t->s));
}

/*
 * An SSTable whose bounds (columns, largest timestamp, largest sequence
 * number) the newer SSTables' entries settle is not read by a
 * newest-version read: a row rewritten and flushed twice reads one file,
 * three times still one.  Every other read still reads the older files:
 * an older file holding a newer client timestamp, a version delete in a
 * newer file or in the memtable, a family delete in the newer file, all
 * versions, a column only the older file has.  And across a tablet split
 * (the halves share both files).
 */
static void
test_files_settle(void)
{
	const struct bt_read_options all = { 0 };
	const struct bt_mutation del200 = { .kind = BT_DELETE_VERSION,
	    .family = "a", .qualifier = { "", 0 }, .ts = 200 };
	struct tstore t;
	uint64_t n;

	if (!settle_store(&t))
		return;
	put_flush(&t, "f", "", 100, "old");
	put_flush(&t, "f", "", 200, "new");
	n = lookups_of_read(&t, "f", &newest, "a:@200=new\n");
	is_int((long long)n, 1, "rewritten and flushed twice: the newer "
	    "SSTable settles the older, one block lookup");
	n = lookups_of_read(&t, "f", &all, "a:@200=new\na:@100=old\n");
	is_int((long long)n, 2, "all versions: both SSTables are read");
	put_flush(&t, "f", "", 300, "newer");
	n = lookups_of_read(&t, "f", &newest, "a:@300=newer\n");
	is_int((long long)n, 1, "three times: the newest settles both");
	tstore_destroy(&t);

	if (!settle_store(&t))
		return;
	put_flush(&t, "f", "", 300, "old");
	put_flush(&t, "f", "", 200, "new");
	n = lookups_of_read(&t, "f", &newest, "a:@300=old\n");
	is_int((long long)n, 2, "an older SSTable with a newer client "
	    "timestamp is read");
	tstore_destroy(&t);

	if (!settle_store(&t))
		return;
	put_flush(&t, "f", "", 100, "old");
	put_flush(&t, "f", "", 200, "mid");
	must(bt_mutate_row(t.s, "t", bts("f"), &del200, 1, NULL, NULL));
	n = lookups_of_read(&t, "f", &newest, "a:@100=old\n");
	is_int((long long)n, 2, "a version delete in the memtable of the "
	    "newer SSTable's put: both are read");
	must(bt_store_flush(t.s));
	n = lookups_of_read(&t, "f", &newest, "a:@100=old\n");
	/* The newest file holds the marker alone, a block of its own that
	 * its index gives without a lookup (format.h, version 4). */
	is_int((long long)n, 2, "the delete flushed between them: both older "
	    "SSTables are read, the marker's from its index");
	tstore_destroy(&t);

	if (!settle_store(&t))
		return;
	must(put_str(t.s, "t", "f", "a", "q", 100, "oldq"));
	put_flush(&t, "f", "", 100, "old");
	put_flush(&t, "f", "", 200, "new");
	n = lookups_of_read(&t, "f", &newest, "a:@200=new\na:q@100=oldq\n");
	is_int((long long)n, 2, "a column only the older SSTable has: it is "
	    "read");
	must(del_cell(t.s, "t", bts("f"), BT_DELETE_FAMILY, "a", bts(""), 0));
	put_flush(&t, "f", "", 150, "after");
	n = lookups_of_read(&t, "f", &newest, "a:@150=after\n");
	is_int((long long)n, 3, "a family delete in the newest SSTable: the "
	    "older ones are read and masked");
	tstore_destroy(&t);

	if (!settle_store(&t))
		return;
	must(put_str(t.s, "t", "k", "a", "", 100, "oldk"));
	put_flush(&t, "x", "", 100, "oldx");
	must(put_str(t.s, "t", "k", "a", "", 200, "newk"));
	put_flush(&t, "x", "", 200, "newx");
	must(bt_table_split(t.s, "t", bts("p")));
	n = lookups_of_read(&t, "k", &newest, "a:@200=newk\n");
	n += lookups_of_read(&t, "x", &newest, "a:@200=newx\n");
	is_int((long long)n, 2, "split: each half reads the newer of the "
	    "SSTables they share");
	n = lookups_of_read(&t, "x", &all, "a:@200=newx\na:@100=oldx\n");
	is_int((long long)n, 2, "and all versions still read both");
	tstore_destroy(&t);
}

/* How many tablets table "t" has (0 on error). */
static size_t
tablet_count(struct bt_store *s)
{
	struct bt_tablet_info *tabs;
	size_t n;

	if (bt_table_tablets(s, "t", &tabs, &n) != 0)
		return 0;
	bt_tablets_free(tabs);
	return n;
}

/*
 * Tablets that split by size and merge again (the merged tablet holds
 * both parents' files, sorted by number): a row rewritten and flushed
 * twice there still reads only the newest of its SSTables.
 */
static void
test_files_settle_merged(void)
{
	struct bt_options opts = { .memtable_size = 32u << 10 };
	struct bt_family_spec f = { "a", NULL, NULL };
	struct bt_group_spec g = { "default", 2048, -1, -1, -1 };
	struct bt_stats st;
	struct tstore t;
	char row[32], val[161];
	uint64_t x = 7, n;
	size_t grown, merged;
	int rc = 0;

	tstore_fault(&t, &opts);
	if (bt_table_create(t.s, "t", &f, 1, NULL, 0, 48u << 10) != 0 ||
	    bt_group_set(t.s, "t", &g) != 0)
		tap_bail("cannot create the table");
	for (int r = 0; r < 3000 && rc == 0; r++) {
		for (int i = 0; i < 160; i++)
			val[i] = "0123456789abcdef"[tap_rand(&x) & 15];
		val[160] = '\0';
		snprintf(row, sizeof(row), "row%06d", (r * 7919) % 3000);
		rc = put_str(t.s, "t", row, "a", "", 1, val);
	}
	must(rc);
	must(bt_store_flush(t.s));
	must(bt_store_flush(t.s));
	grown = tablet_count(t.s);
	for (int r = 0; r < 3000 && rc == 0; r++) {
		if (r % 1000 == 0)
			continue;
		snprintf(row, sizeof(row), "row%06d", r);
		rc = del_cell(t.s, "t", bts(row), BT_DELETE_ROW, NULL,
		    bts(""), 0);
	}
	must(rc);
	must(bt_store_compact(t.s, "t", true));
	for (int i = 0; i < 3; i++)
		must(bt_store_flush(t.s));
	bt_store_get_stats(t.s, &st);
	merged = tablet_count(t.s);
	ok(grown >= 4 && merged < grown && st.merges > 0, "split into %zu "
	    "tablets, merged into %zu (%llu merges)", grown, merged,
	    (unsigned long long)st.merges);
	put_flush(&t, "row001000", "", 5, "five");
	put_flush(&t, "row001000", "", 6, "six");
	n = lookups_of_read(&t, "row001000", &newest, "a:@6=six\n");
	is_int((long long)n, 1, "merged: the newest SSTable settles the "
	    "others");
	tstore_destroy(&t);
}

#define POOL_THREADS	8
#define POOL_ROWS	24

/* Row i holds one cell whose value is (i * 997) % 200000 + 1 copies of
 * the byte 'A' + i % 26: some rows past the pool's 64 KiB. */
static size_t
pool_value_len(int i)
{
	return (size_t)(i * 997 * 7) % 200000 + 1;
}

struct pool_arg {
	struct bt_store *s;
	int id;
	atomic_long *bad;
};

/*
 * A point read skips the SSTables whose last key sorts before its row
 * (sst_reader_ends_before) without their filters, and still reads every
 * file that holds the row: the last row of each file, a row past a newer
 * file's end that an older file holds, a row delete that is a file's last
 * key.  Rows that a file's last row is a prefix of, or that are a prefix
 * of it, are told apart; rows past every file come from the memtable or
 * are absent, with no block lookup.
 */
static void
test_file_ends(void)
{
	char row[32], want[64];
	struct tstore t;
	uint64_t n;

	if (!settle_store(&t))
		return;
	for (int i = 0; i < 50; i++) {
		snprintf(row, sizeof(row), "m%03d", i);
		must(put_str(t.s, "t", row, "a", "", 1, row));
	}
	must(put_str(t.s, "t", "c100", "a", "", 1, "old"));
	must(bt_store_flush(t.s));
	for (int i = 0; i < 50; i++) {
		snprintf(row, sizeof(row), "c%03d", i);
		must(put_str(t.s, "t", row, "a", "", 2, row));
	}
	must(del_str(t.s, "t", "c100", BT_DELETE_ROW, NULL, NULL, 0));
	must(bt_store_flush(t.s));
	must(put_str(t.s, "t", "x", "a", "", 3, "mem"));
	must(put_str(t.s, "t", "m0490", "a", "", 3, "mem"));

	for (int i = 0; i < 50; i += 49) {
		snprintf(row, sizeof(row), "m%03d", i);
		snprintf(want, sizeof(want), "a:@1=%s\n", row);
		is_text(read_text_str(t.s, "t", row, NULL), want,
		    "row %s of the older file, past the newer one's end", row);
		snprintf(row, sizeof(row), "c%03d", i);
		snprintf(want, sizeof(want), "a:@2=%s\n", row);
		is_text(read_text_str(t.s, "t", row, NULL), want,
		    "row %s of the newer file", row);
	}
	is_text(read_text_str(t.s, "t", "c100", NULL), "NOTFOUND",
	    "a row delete that ends the newer file masks the older file");
	is_text(read_text_str(t.s, "t", "c04", NULL), "NOTFOUND",
	    "a prefix of a file's last row is absent");
	is_text(read_text_str(t.s, "t", "c1000", NULL), "NOTFOUND",
	    "a row extending a file's last row is absent");
	is_text(read_text_str(t.s, "t", "m0490", NULL), "a:@3=mem\n",
	    "a row extending the last file row, in the memtable");
	is_text(read_text_str(t.s, "t", "x", NULL), "a:@3=mem\n",
	    "a row past every file, in the memtable");
	n = lookups_of_read(&t, "y", NULL, "NOTFOUND");
	is_int((long long)n, 0, "a row past every file and the memtable: "
	    "no block lookup");
	tstore_destroy(&t);
}

/*
 * The version's files' end (T5) follows every change of its files: after
 * each flush of rows past the previous files, the newest file's last row
 * is read from it and a row past it is absent without a block lookup;
 * a flush of rows before the end leaves the end where it was (an older
 * file's last row still reads); a major compaction and a reopen find the
 * end again.
 */
static void
expect_ends(struct tstore *t, int last, const char *stage)
{
	char row[32], want[64];

	snprintf(row, sizeof(row), "r%03d", last);
	snprintf(want, sizeof(want), "a:@1=%s\n", row);
	is_text(read_text_str(t->s, "t", row, NULL), want,
	    "files' end %s: the last row %s reads", stage, row);
	is_text(read_text_str(t->s, "t", "r000", NULL), "a:@1=r000\n",
	    "files' end %s: the first row reads", stage);
	snprintf(row, sizeof(row), "r%03d", last + 1);
	is_int((long long)lookups_of_read(t, row, NULL, "NOTFOUND"), 0,
	    "files' end %s: a row past the end reads no block", stage);
}

static void
test_files_end_follows(void)
{
	char row[32], stage[32];
	struct tstore t;

	if (!settle_store(&t))
		return;
	for (int k = 0; k < 4; k++) {
		for (int i = k * 10; i < k * 10 + 10; i++) {
			snprintf(row, sizeof(row), "r%03d", i);
			must(put_str(t.s, "t", row, "a", "", 1, row));
		}
		must(bt_store_flush(t.s));
		snprintf(stage, sizeof(stage), "after flush %d", k + 1);
		expect_ends(&t, k * 10 + 9, stage);
	}
	put_flush(&t, "b", "", 1, "b");
	expect_ends(&t, 39, "after a flush before the end");
	is_text(read_text_str(t.s, "t", "b", NULL), "a:@1=b\n",
	    "files' end: the row of a file before the end reads");
	must(bt_store_compact(t.s, NULL, true));
	expect_ends(&t, 39, "after a major compaction");
	must(tstore_reopen(&t));
	expect_ends(&t, 39, "after a reopen");
	tstore_destroy(&t);
}

static void *
pool_reader(void *p)
{
	struct pool_arg *a = p;
	uint64_t rng = 77 + (uint64_t)a->id;
	char row[16];

	for (int n = 0; n < 1500; n++) {
		int i = (int)(tap_rand(&rng) % POOL_ROWS);
		size_t len = pool_value_len(i);
		const unsigned char *v;
		struct bt_row *r = NULL;
		bool good;

		snprintf(row, sizeof(row), "p%02d", i);
		if (bt_read_row(a->s, "t", bts(row), NULL, &r) != 0) {
			atomic_fetch_add(a->bad, 1);
			continue;
		}
		v = r->cells[0].value.data;
		good = r->cell_count == 1 && r->cells[0].value.size == len &&
		    bytes_eq(r->key, bts(row)) && v[0] == 'A' + i % 26 &&
		    v[len - 1] == 'A' + i % 26 && v[len / 2] == 'A' + i % 26;
		if (!good)
			atomic_fetch_add(a->bad, 1);
		bt_row_free(r);
	}
	return NULL;
}

static void
test_pool_threads(void)
{
	struct pool_arg args[POOL_THREADS];
	pthread_t th[POOL_THREADS];
	atomic_long bad = 0;
	struct tstore t;
	char *val = xmalloc(200001), row[16];

	tstore_fault(&t, NULL);
	must(make_table(t.s, "t", families));
	for (int i = 0; i < POOL_ROWS; i++) {
		memset(val, 'A' + i % 26, pool_value_len(i));
		snprintf(row, sizeof(row), "p%02d", i);
		must(put_cell(t.s, "t", bts(row), "a", bts(""), 1,
		    btb(val, pool_value_len(i))));
		if (i == POOL_ROWS / 2)
			must(bt_store_flush(t.s));
	}
	for (int i = 0; i < POOL_THREADS; i++) {
		args[i] = (struct pool_arg){ t.s, i, &bad };
		if (pthread_create(&th[i], NULL, pool_reader, &args[i]) != 0)
			tap_bail("pthread_create");
	}
	for (int i = 0; i < POOL_THREADS; i++)
		pthread_join(th[i], NULL);
	is_int(atomic_load(&bad), 0, "%d threads reading rows of 1 byte to "
	    "200 KB: every read whole and its own", POOL_THREADS);
	free(val);
	tstore_destroy(&t);
}

int
main(void)
{
	uint64_t seed = tap_seed(), rng = seed;

	test_differential(&rng);
	test_across_sources();
	test_column_skip();
	test_large_row();
	test_many_versions();
	test_bloom_skips();
	test_memtable_settles();
	test_files_settle();
	test_files_settle_merged();
	test_file_ends();
	test_files_end_follows();
	test_pool_threads();
	return tap_done();
}
