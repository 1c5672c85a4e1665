/*
 * engine_tabletfs.c - tabletbench's engine over the public tabletfs API.
 *
 * Data model: one table "bench" with one family "f" that keeps one version
 * (so that a put replaces the value, as in the other engines, and
 * compactions drop what it replaced); a key is the row, the qualifier is
 * empty, the value is the cell's value, and the timestamp is the server's.
 * Reads ask for the newest version only.
 * Counters (increment) live in a second family "c" that keeps one version,
 * as a Bigtable user would declare a family of counters.  The commit log
 * is written before a put returns and fdatasynced when it asks for sync
 * (group commit); the block cache is the config's.  The memtable budget
 * is twice the config's write buffer: LevelDB and RocksDB keep up to two
 * memtables of that size (the one filling and the one flushing), and
 * tabletfs's budget holds both of its own (it freezes one at half), so
 * each engine may hold the same memtable memory.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/tabletfs.h"
#include "bench/bench.h"

#define TFS_TABLE	"bench"

/* An open store and the table the harness works in: always TFS_TABLE
 * in a store of its own; in a cell, one table per store path. */
struct tfs_db {
	struct bt_store *s;
	char table[65];
};

static int
tfs_db_new(struct bt_store *s, const char *table, void **dbp)
{
	struct tfs_db *d;

	if ((d = calloc(1, sizeof(*d))) == NULL)
		return -ENOMEM;
	d->s = s;
	snprintf(d->table, sizeof(d->table), "%s", table);
	*dbp = d;
	return 0;
}
#define TFS_FAMILY	"f"
#define TFS_COUNTERS	"c"

/* A scan lends its rows and their values (bt_scan_next_borrowed(),
 * lend_values), as LevelDB's iterator lends its entries: each is valid
 * until the next call. */
struct tfs_scan {
	struct bt_scan *scan;
};

static const struct bt_read_options tfs_newest = { .cells_per_column = 1 };

static struct bt_bytes
tfs_bytes(struct bench_bytes b)
{
	return (struct bt_bytes){ .data = b.p, .size = b.n };
}

/* A row as the harness wrote it: one cell in f with an empty qualifier
 * (the one-letter name compared in place: a strcmp call a row showed in
 * the scans' instruction counts). */
static bool
tfs_row_ok(const struct bt_row *r)
{
	return r->cell_count == 1 && r->cells[0].family[0] == TFS_FAMILY[0] &&
	    r->cells[0].family[1] == '\0' && r->cells[0].qualifier.size == 0;
}

/* The harness's table in s: its families, and the locality group cfg
 * asks for. */
static int
tfs_table_make(struct bt_store *s, const char *table,
    const struct engine_config *cfg)
{
	static const struct bt_family_spec families[] = {
		{ .name = TFS_FAMILY, .gc_policy = "maxversions=1" },
		{ .name = TFS_COUNTERS, .gc_policy = "maxversions=1" },
	};
	struct bt_group_spec group = {
		.name = "default", .block_size = (uint32_t)cfg->block_bytes,
		.compress = cfg->compress ? 1 : 0, .bloom = -1,
		.in_memory = -1,
	};
	struct bt_bytes splits[BENCH_MAX_CELL_TABLETS];
	int rc;

	for (size_t i = 0; i < cfg->cell_split_count; i++)
		splits[i] = (struct bt_bytes){ cfg->cell_splits[i].p,
		    cfg->cell_splits[i].n };
	if ((rc = bt_table_create(s, table, families, 2, splits,
	    cfg->cell_split_count, 0)) < 0)
		return rc;
	if (cfg->block_bytes != 0 || !cfg->compress)
		rc = bt_group_set(s, table, &group);
	return rc;
}

static int
tfs_open(const struct engine_config *cfg, const char *path, void **dbp)
{
	struct bt_options opts = {
		.block_cache_size = cfg->cache_bytes,
		.memtable_size = 2 * cfg->memtable_bytes,
	};
	struct bt_store *s;
	int rc;

	if ((rc = bt_store_create(path, &opts)) < 0)
		return rc;
	if ((rc = bt_store_open(path, &opts, &s)) < 0)
		return rc;
	if ((rc = tfs_table_make(s, TFS_TABLE, cfg)) < 0 ||
	    (rc = tfs_db_new(s, TFS_TABLE, dbp)) < 0) {
		bt_store_close(s);
		return rc;
	}
	return 0;
}

/* How long the tablets of a new split table may take to spread. */
#define SPREAD_WAIT_MS	120000
/* Unchanged this long, with no server ahead of another by more than one
 * tablet, the spread is done (the master moves a few a second). */
#define SPREAD_STEADY_MS	3000

static uint64_t
now_ms(void)
{
	return bench_now_ns() / 1000000;
}

/* Whether no server named in t serves more than one tablet above
 * another ("", not served one by one or not yet assigned, counts as a
 * server: the steady wait below outlasts an assignment). */
static bool
spread_even(const struct bt_tablet_info *t, size_t n)
{
	size_t most = 0, fewest = SIZE_MAX;

	for (size_t i = 0; i < n; i++) {
		const char *a = t[i].server ? t[i].server : "";
		size_t k = 0;

		for (size_t j = 0; j < n; j++)
			k += strcmp(a, t[j].server ? t[j].server : "") == 0;
		most = k > most ? k : most;
		fewest = k < fewest ? k : fewest;
	}
	return most <= fewest + 1;
}

/* The servers of t, one string, compared from one poll to the next. */
static char *
spread_of(const struct bt_tablet_info *t, size_t n)
{
	size_t size = 1;
	char *s;

	for (size_t i = 0; i < n; i++)
		size += strlen(t[i].server ? t[i].server : "") + 1;
	if ((s = calloc(1, size)) == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		strcat(s, t[i].server ? t[i].server : "");
		strcat(s, ",");
	}
	return s;
}

/*
 * Wait until the master has spread the tablets of a table just made
 * with splits over its servers: the assignment steady and even for
 * SPREAD_STEADY_MS.  A cell without --spread keeps them at one server,
 * steady at once.  Says on stderr how it went; a timeout is not fatal
 * (the workload runs on the spread there is).
 */
static void
cell_spread_wait(struct bt_store *s, const char *table)
{
	uint64_t t0 = now_ms(), steady = t0;
	char *last = NULL;
	struct timespec tick = { 0, 100 * 1000000 };

	while (now_ms() - t0 < SPREAD_WAIT_MS) {
		struct bt_tablet_info *t;
		size_t n;
		char *now;
		bool even;

		if (bt_table_tablets(s, table, &t, &n) < 0)
			break;
		even = spread_even(t, n);
		now = spread_of(t, n);
		bt_tablets_free(t);
		if (now == NULL)
			break;
		if (!even || last == NULL || strcmp(now, last) != 0)
			steady = now_ms();
		free(last);
		last = now;
		if (now_ms() - steady >= SPREAD_STEADY_MS) {
			fprintf(stderr, "tabletbench: %s: %zu tablets spread "
			    "in %" PRIu64 " ms\n", table, n,
			    now_ms() - t0 - SPREAD_STEADY_MS);
			free(last);
			return;
		}
		nanosleep(&tick, NULL);
	}
	free(last);
	fprintf(stderr, "tabletbench: %s: its tablets did not spread evenly "
	    "in %d ms; running on the spread there is\n", table,
	    SPREAD_WAIT_MS);
}

/*
 * The cell engine: the same table in a running cell (tabletbench --cell),
 * created afresh; the store's settings are the cell server's own, so
 * only the locality group follows cfg.  Each store path is a table of
 * its own (the harness has two stores open at once for fillsync).
 */
static int
cell_open(const struct engine_config *cfg, const char *path, void **dbp)
{
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	char table[65];
	struct bt_store *s;
	int rc;

	/* The store's name as a table name: [A-Za-z0-9_.-]. */
	snprintf(table, sizeof(table), "%s-%s", TFS_TABLE, base);
	for (char *p = table; *p != '\0'; p++)
		if (!isalnum((unsigned char)*p) && *p != '_' && *p != '.' &&
		    *p != '-')
			*p = '_';
	if ((rc = bt_store_open(cfg->cell, NULL, &s)) < 0)
		return rc;
	if (((rc = bt_table_delete(s, table)) < 0 && rc != -ENOENT) ||
	    (rc = tfs_table_make(s, table, cfg)) < 0) {
		bt_store_close(s);
		return rc;
	}
	if (cfg->cell_split_count > 0)
		cell_spread_wait(s, table);
	if ((rc = tfs_db_new(s, table, dbp)) < 0) {
		bt_store_close(s);
		return rc;
	}
	return 0;
}

static void
cell_describe(const struct engine_config *cfg, char *buf, size_t size)
{
	snprintf(buf, size, "cell: the tabletfs engine's calls through the "
	    "client library to the cell %s (RPC over TCP to its serving "
	    "tablet server; the server's own cache and memtable settings)",
	    cfg->cell);
}

static int
tfs_close(void *db)
{
	struct tfs_db *d = db;
	int rc;

	if (d == NULL)
		return 0;
	rc = bt_store_close(d->s);
	free(d);
	return rc;
}

static int
tfs_put(void *db, struct bench_bytes key, struct bench_bytes value,
    bool sync)
{
	struct bt_mutation m = {
		.kind = BT_PUT,
		.family = TFS_FAMILY,
		.ts = BT_TS_SERVER,
		.value = tfs_bytes(value),
	};
	struct bt_write_options w = { .sync = sync };
	struct tfs_db *d = db;

	return bt_mutate_row(d->s, d->table, tfs_bytes(key), &m, 1, &w,
	    NULL);
}

static int
tfs_get(void *db, struct bench_bytes key, struct bench_buf *value)
{
	struct tfs_db *d = db;
	struct bt_row *r;
	int rc;

	if ((rc = bt_read_row(d->s, d->table, tfs_bytes(key), &tfs_newest,
	    &r)) != 0)
		return rc;
	if (!tfs_row_ok(r))
		rc = ENGINE_MALFORMED;
	else if ((rc = bench_buf_reserve(value,
	    r->cells[0].value.size)) == 0) {
		memcpy(value->p, r->cells[0].value.data,
		    r->cells[0].value.size);
		value->n = r->cells[0].value.size;
	}
	bt_row_free(r);
	return rc;
}

static int
tfs_scan_open(void *db, struct bench_bytes start, uint64_t limit,
    void **itp)
{
	struct bt_scan_options opts = {
		.start = tfs_bytes(start),
		.limit = limit,
		.read = tfs_newest,
		.lend_values = true,
	};
	struct tfs_db *d = db;
	struct tfs_scan *ts;
	int rc;

	if ((ts = calloc(1, sizeof(*ts))) == NULL)
		return -ENOMEM;
	if ((rc = bt_scan_open(d->s, d->table, &opts, &ts->scan)) < 0) {
		free(ts);
		return rc;
	}
	*itp = ts;
	return 0;
}

static int
tfs_scan_next(void *it, struct bench_bytes *key, struct bench_bytes *value)
{
	struct tfs_scan *ts = it;
	const struct bt_row *row;
	int rc;

	if ((rc = bt_scan_next_borrowed(ts->scan, &row)) != 0)
		return rc;
	if (!tfs_row_ok(row))
		return ENGINE_MALFORMED;
	*key = (struct bench_bytes){ row->key.data, row->key.size };
	*value = (struct bench_bytes){ row->cells[0].value.data,
	    row->cells[0].value.size };
	return 0;
}

static void
tfs_scan_close(void *it)
{
	struct tfs_scan *ts = it;

	if (ts == NULL)
		return;
	bt_scan_close(ts->scan);
	free(ts);
}

static int
tfs_compact(void *db)
{
	struct tfs_db *d = db;

	return bt_store_compact(d->s, d->table, true);
}

static void
tfs_stats(void *db, struct engine_stats *out)
{
	struct bt_stats st;

	bt_store_get_stats(((struct tfs_db *)db)->s, &st);
	out->syncs = st.log_syncs;
	out->files = st.sstables;
	out->cache_hits = st.cache_hits;
	out->cache_misses = st.cache_misses;
}

static int
tfs_increment(void *db, struct bench_bytes key, int64_t delta,
    int64_t *result)
{
	static const struct bt_write_options w = { .sync = false };
	struct tfs_db *d = db;

	return bt_increment(d->s, d->table, tfs_bytes(key), TFS_COUNTERS,
	    (struct bt_bytes){ NULL, 0 }, delta, &w, result, NULL);
}

static void
tfs_describe(const struct engine_config *cfg, char *buf, size_t size)
{
	snprintf(buf, size, "tabletfs: one table, one locality group, %s, "
	    "Bloom filter on rows, blocks %s, reads verify checksums, "
	    "memtable budget 2 x the write buffer (mem + imm, as the "
	    "others); sync puts fdatasync the log "
	    "(group commit)", cfg->compress ? "snappy" : "no compression",
	    cfg->block_bytes != 0 ? "as set" : "64 KiB");
}

const struct engine engine_tabletfs = {
	.name = "tabletfs",
	.open = tfs_open,
	.close = tfs_close,
	.put = tfs_put,
	.get = tfs_get,
	.scan_open = tfs_scan_open,
	.scan_next = tfs_scan_next,
	.scan_close = tfs_scan_close,
	.compact = tfs_compact,
	.stats = tfs_stats,
	.increment = tfs_increment,
	.describe = tfs_describe,
};

const struct engine engine_cell = {
	.name = "cell",
	.open = cell_open,
	.close = tfs_close,
	.put = tfs_put,
	.get = tfs_get,
	.scan_open = tfs_scan_open,
	.scan_next = tfs_scan_next,
	.scan_close = tfs_scan_close,
	.compact = tfs_compact,
	.stats = tfs_stats,
	.increment = tfs_increment,
	.describe = cell_describe,
};
