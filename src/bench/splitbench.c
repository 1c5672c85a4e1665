/*
 * splitbench.c - a developer tool: fill one table until it has split into
 * many tablets, and time what tablets at scale cost.
 *
 *   splitbench [-n ROWS] [-v VALUE_BYTES] [-t TABLET_SIZE] [-m MEMTABLE]
 *              [-l LOOKUPS] DIR
 *
 * Writes ROWS rows (default 1,100,000) of VALUE_BYTES incompressible bytes
 * (default 1000, as the paper's Figure 6) in random order into a fresh
 * store in DIR, with the table's tablet_size TABLET_SIZE (default 128M),
 * waits for the background splits, then reports: the tablets and their
 * sizes, forced-split latency, random-read latency (each read goes
 * through the API's location cache), the location counters, reopen time
 * and peak RSS.  Every value read is checked.
 */
#include <errno.h>
#include <inttypes.h>
#include <libutil.h>	/* libbsd: humanize_number */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api/tabletfs.h"
#include "bench/bench.h"
#include "util/error.h"
#include "util/units.h"

/*
 * A byte count for people in at most four digits and a suffix, powers of
 * 1024: "634K", "1.5M", "130M".
 */
#define BYTES_TEXT_LEN	24	/* room for any uint64_t in decimal */

static const char *
bytes_text(char buf[BYTES_TEXT_LEN], uint64_t bytes)
{
	if (humanize_number(buf, 6, (int64_t)bytes, "", HN_AUTOSCALE,
	    HN_DECIMAL | HN_NOSPACE | HN_B) < 0)
		snprintf(buf, BYTES_TEXT_LEN, "%" PRIu64, bytes);
	return buf;
}

/* Seconds on the monotonic clock. */
static double
now_seconds(void)
{
	return (double)bench_now_ns() / 1e9;
}

static uint64_t
mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

static void
row_name(uint64_t r, char *buf, size_t size)
{
	snprintf(buf, size, "row%012" PRIu64, r);
}

/* Incompressible bytes, a function of the row. */
static void
value_fill(uint64_t r, char *v, size_t n)
{
	uint64_t x = mix(r + 1);

	for (size_t i = 0; i < n; i += 8) {
		x = mix(x);
		memcpy(v + i, &x, n - i < 8 ? n - i : 8);
	}
}

static void
die(const char *what, int rc)
{
	fprintf(stderr, "splitbench: %s: %s (%s)\n", what, bt_strerror(rc),
	    bt_error_detail());
	exit(1);
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static size_t
tablets_report(struct bt_store *s, bool print)
{
	struct bt_tablet_info *t;
	uint64_t lo = UINT64_MAX, hi = 0, sum = 0;
	char lo_text[BYTES_TEXT_LEN], hi_text[BYTES_TEXT_LEN];
	char sum_text[BYTES_TEXT_LEN];
	size_t n;
	int rc;

	if ((rc = bt_table_tablets(s, "t", &t, &n)) < 0)
		die("tablets", rc);
	for (size_t i = 0; i < n; i++) {
		uint64_t b = t[i].data_bytes;

		lo = b < lo ? b : lo;
		hi = b > hi ? b : hi;
		sum += b;
	}
	if (print)
		printf("tablets         %zu (own data: min %s, max %s, total "
		    "%s)\n", n, bytes_text(lo_text, lo),
		    bytes_text(hi_text, hi),
		    bytes_text(sum_text, sum));
	bt_tablets_free(t);
	return n;
}

int
main(int argc, char **argv)
{
	uint64_t rows = 1100000, lookups = 100000, value_size = 1000;
	uint64_t tablet_size = 128ull << 20, memtable = 64ull << 20;
	struct bt_family_spec fam = { "f", NULL, "maxversions=1" };
	struct bt_options opts = { 0 };
	struct bt_stats st;
	struct bt_store *s;
	char path[4096], row[32], rss_text[BYTES_TEXT_LEN], *value, *expect;
	double t0, t1, *lat;
	size_t before, after;
	int c, rc;

	while ((c = getopt(argc, argv, "n:v:t:m:l:")) != -1) {
		uint64_t *arg = c == 'n' ? &rows : c == 'v' ? &value_size :
		    c == 't' ? &tablet_size : c == 'm' ? &memtable :
		    c == 'l' ? &lookups : NULL;

		/* Every argument is a size in the project's spelling
		 * ("1100000", "1000", "128m", "1g"), all of it. */
		if (arg == NULL || parse_size(optarg, arg) < 0) {
			if (arg != NULL)
				fprintf(stderr, "splitbench: -%c %s: %s\n", c,
				    optarg, bt_error_detail());
			fprintf(stderr, "usage: splitbench [-n ROWS] "
			    "[-v VALUE_BYTES] [-t TABLET_SIZE] "
			    "[-m MEMTABLE_SIZE] [-l LOOKUPS] DIR\n");
			return 2;
		}
	}
	if (optind + 1 != argc || rows == 0 || value_size == 0) {
		fprintf(stderr, "usage: splitbench [options] DIR\n");
		return 2;
	}
	snprintf(path, sizeof(path), "%s/store", argv[optind]);
	opts.memtable_size = memtable;
	value = malloc(value_size);
	expect = malloc(value_size);
	lat = calloc(lookups + 20, sizeof(*lat));
	if (value == NULL || expect == NULL || lat == NULL)
		die("memory", -ENOMEM);
	if ((rc = bt_store_create(path, &opts)) < 0)
		die(path, rc);
	if ((rc = bt_store_open(path, &opts, &s)) < 0)
		die(path, rc);
	if ((rc = bt_table_create(s, "t", &fam, 1, NULL, 0, tablet_size)) < 0)
		die("createtable", rc);

	printf("rows            %" PRIu64 " x %" PRIu64 " bytes (%.2f GB), "
	    "tablet_size %" PRIu64 " MiB, memtable %" PRIu64 " MiB\n", rows,
	    value_size, (double)(rows * value_size) / 1e9, tablet_size >> 20,
	    memtable >> 20);
	t0 = now_seconds();
	for (uint64_t i = 0; i < rows; i++) {
		/* A random order: each row once (mix is a bijection). */
		uint64_t r = mix(i) % (rows * 4);
		struct bt_mutation m = { BT_PUT, "f", { "", 0 }, BT_TS_SERVER,
		    { value, value_size } };

		row_name(r, row, sizeof(row));
		value_fill(r, value, value_size);
		if ((rc = bt_mutate_row(s, "t", (struct bt_bytes){ row,
		    strlen(row) }, &m, 1, NULL, NULL)) < 0)
			die("put", rc);
	}
	bt_store_flush(s);
	t1 = now_seconds();
	printf("fill            %.1f s (%.0f rows/s, %.1f MB/s), flushed\n",
	    t1 - t0, (double)rows / (t1 - t0),
	    (double)(rows * value_size) / 1e6 / (t1 - t0));
	/* The background splits: until two rounds change nothing. */
	t0 = now_seconds();
	for (before = 0, after = tablets_report(s, false); after != before;) {
		before = after;
		bt_store_flush(s);
		after = tablets_report(s, false);
	}
	t1 = now_seconds();
	bt_store_get_stats(s, &st);
	printf("splits          %" PRIu64 " by size (%.1f s after the fill)\n",
	    st.splits, t1 - t0);
	tablets_report(s, true);

	/* Forced splits at random rows: each drains the tablet's memtable
	 * and commits one catalog transaction. */
	for (int i = 0; i < 20; i++) {
		row_name(mix(i + 7777) % (rows * 4), row, sizeof(row));
		strcat(row, "x");
		t0 = now_seconds();
		if ((rc = bt_table_split(s, "t", (struct bt_bytes){ row,
		    strlen(row) })) < 0)
			die("split", rc);
		lat[i] = now_seconds() - t0;
	}
	qsort(lat, 20, sizeof(*lat), cmp_double);
	printf("forced split    median %.2f ms, max %.2f ms (20 splits)\n",
	    lat[10] * 1e3, lat[19] * 1e3);

	for (uint64_t i = 0; i < lookups; i++) {
		uint64_t r = mix(mix(i + 1) % rows) % (rows * 4);
		struct bt_row *out;

		row_name(r, row, sizeof(row));
		value_fill(r, expect, value_size);
		t0 = now_seconds();
		rc = bt_read_row(s, "t", (struct bt_bytes){ row,
		    strlen(row) }, NULL, &out);
		lat[i] = now_seconds() - t0;
		if (rc != 0)
			die("read", rc < 0 ? rc : -ENOENT);
		if (out->cell_count != 1 ||
		    out->cells[0].value.size != value_size ||
		    memcmp(out->cells[0].value.data, expect, value_size) != 0)
			die("read: wrong value", BT_ECORRUPT);
		bt_row_free(out);
	}
	qsort(lat, lookups, sizeof(*lat), cmp_double);
	bt_store_get_stats(s, &st);
	printf("random reads    p50 %.1f us, p99 %.1f us (%" PRIu64 " reads "
	    "of present rows, every value checked)\n",
	    lat[lookups / 2] * 1e6, lat[lookups * 99 / 100] * 1e6, lookups);
	printf("locations       %" PRIu64 " lookups, %" PRIu64 " cache hits, %"
	    PRIu64 " levels walked, %" PRIu64 " stale\n", st.location_lookups,
	    st.location_hits, st.location_levels, st.location_stale);
	printf("peak RSS        %s\n", bytes_text(rss_text,
	    (uint64_t)bench_rss_peak_kib() * 1024));
	t0 = now_seconds();
	if ((rc = bt_store_close(s)) < 0)
		die("close", rc);
	if ((rc = bt_store_open(path, &opts, &s)) < 0)
		die("reopen", rc);
	t1 = now_seconds();
	printf("close + reopen  %.2f s, ", t1 - t0);
	tablets_report(s, true);
	bt_store_close(s);
	free(value);
	free(expect);
	free(lat);
	return 0;
}
