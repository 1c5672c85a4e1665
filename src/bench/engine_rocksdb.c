/*
 * engine_rocksdb.c - tabletbench's engine over RocksDB's C API
 * (<rocksdb/c.h>, Debian's librocksdb-dev), built when configure finds it.
 *
 * Settings as tabletfs's: a block-based table with an LRU block cache of
 * cfg->cache_bytes, a Bloom filter of 10 bits per key, blocks of
 * cfg->block_bytes (RocksDB's 4 KiB when 0), a write buffer of
 * cfg->memtable_bytes, Snappy when cfg->compress; everything else is
 * RocksDB's default (two background jobs, level compaction).  A put with
 * sync false goes to the WAL with write(2); with sync true RocksDB syncs
 * the WAL, concurrent writers sharing the sync (its write groups).
 * Increments are a get and a put under a key-striped lock.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rocksdb/c.h>

#include "bench/bench.h"

#define RDB_BLOOM_BITS	10

struct rdb {
	rocksdb_t *db;
	rocksdb_options_t *opts;
	rocksdb_block_based_table_options_t *table;
	rocksdb_cache_t *cache;
	rocksdb_readoptions_t *read;
	rocksdb_writeoptions_t *write;
	rocksdb_writeoptions_t *write_sync;
	rocksdb_flushoptions_t *flush;
	struct bench_stripes stripes;
};

struct rdb_scan {
	rocksdb_iterator_t *it;
	uint64_t left;		/* entries still to give; UINT64_MAX: all */
	bool started;
};

/* Record RocksDB's message (and free it) as the error detail. */
static int
rdb_error(const char *what, char *err)
{
	int rc = bt_error_set(-EIO, "rocksdb %s: %s", what, err);

	rocksdb_free(err);
	return rc;
}

static void
rdb_free(struct rdb *r)
{
	if (r->db != NULL)
		rocksdb_close(r->db);
	if (r->opts != NULL)
		rocksdb_options_destroy(r->opts);
	if (r->table != NULL)
		rocksdb_block_based_options_destroy(r->table);
	if (r->cache != NULL)
		rocksdb_cache_destroy(r->cache);
	if (r->read != NULL)
		rocksdb_readoptions_destroy(r->read);
	if (r->write != NULL)
		rocksdb_writeoptions_destroy(r->write);
	if (r->write_sync != NULL)
		rocksdb_writeoptions_destroy(r->write_sync);
	if (r->flush != NULL)
		rocksdb_flushoptions_destroy(r->flush);
	bench_stripes_release(&r->stripes);
	free(r);
}

static int
rdb_open(const struct engine_config *cfg, const char *path, void **dbp)
{
	struct rdb *r;
	char *err = NULL;

	if ((r = calloc(1, sizeof(*r))) == NULL)
		return -ENOMEM;
	bench_stripes_init(&r->stripes);
	r->opts = rocksdb_options_create();
	r->table = rocksdb_block_based_options_create();
	r->read = rocksdb_readoptions_create();
	r->write = rocksdb_writeoptions_create();
	r->write_sync = rocksdb_writeoptions_create();
	r->flush = rocksdb_flushoptions_create();
	rocksdb_flushoptions_set_wait(r->flush, 1);
	rocksdb_writeoptions_set_sync(r->write_sync, 1);
	rocksdb_options_set_create_if_missing(r->opts, 1);
	rocksdb_options_set_error_if_exists(r->opts, 1);
	if (cfg->cache_bytes != 0) {
		r->cache = rocksdb_cache_create_lru(cfg->cache_bytes);
		rocksdb_block_based_options_set_block_cache(r->table,
		    r->cache);
	}
	if (cfg->block_bytes != 0)
		rocksdb_block_based_options_set_block_size(r->table,
		    cfg->block_bytes);
	/* The table options take ownership of the policy. */
	rocksdb_block_based_options_set_filter_policy(r->table,
	    rocksdb_filterpolicy_create_bloom(RDB_BLOOM_BITS));
	rocksdb_options_set_block_based_table_factory(r->opts, r->table);
	if (cfg->memtable_bytes != 0)
		rocksdb_options_set_write_buffer_size(r->opts,
		    cfg->memtable_bytes);
	rocksdb_options_set_compression(r->opts, cfg->compress ?
	    rocksdb_snappy_compression : rocksdb_no_compression);
	r->db = rocksdb_open(r->opts, path, &err);
	if (err != NULL) {
		rdb_free(r);
		return rdb_error("open", err);
	}
	*dbp = r;
	return 0;
}

static int
rdb_close(void *db)
{
	if (db != NULL)
		rdb_free(db);
	return 0;
}

static int
rdb_put(void *db, struct bench_bytes key, struct bench_bytes value,
    bool sync)
{
	struct rdb *r = db;
	char *err = NULL;

	rocksdb_put(r->db, sync ? r->write_sync : r->write, key.p, key.n,
	    value.p, value.n, &err);
	return err != NULL ? rdb_error("put", err) : 0;
}

static int
rdb_get(void *db, struct bench_bytes key, struct bench_buf *value)
{
	struct rdb *r = db;
	char *err = NULL, *v;
	size_t n;
	int rc = 0;

	v = rocksdb_get(r->db, r->read, key.p, key.n, &n, &err);
	if (err != NULL)
		return rdb_error("get", err);
	if (v == NULL)
		return BT_NOTFOUND;
	if ((rc = bench_buf_reserve(value, n)) == 0) {
		memcpy(value->p, v, n);
		value->n = n;
	}
	rocksdb_free(v);
	return rc;
}

static int
rdb_scan_open(void *db, struct bench_bytes start, uint64_t limit,
    void **itp)
{
	struct rdb *r = db;
	struct rdb_scan *s;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return -ENOMEM;
	s->it = rocksdb_create_iterator(r->db, r->read);
	s->left = limit != 0 ? limit : UINT64_MAX;
	if (start.n == 0)
		rocksdb_iter_seek_to_first(s->it);
	else
		rocksdb_iter_seek(s->it, start.p, start.n);
	*itp = s;
	return 0;
}

static int
rdb_scan_next(void *it, struct bench_bytes *key, struct bench_bytes *value)
{
	struct rdb_scan *s = it;
	char *err = NULL;
	size_t n;

	if (s->started)
		rocksdb_iter_next(s->it);
	s->started = true;
	if (s->left == 0 || !rocksdb_iter_valid(s->it)) {
		rocksdb_iter_get_error(s->it, &err);
		return err != NULL ? rdb_error("scan", err) : BT_DONE;
	}
	s->left--;
	key->p = rocksdb_iter_key(s->it, &n);
	key->n = n;
	value->p = rocksdb_iter_value(s->it, &n);
	value->n = n;
	return 0;
}

static void
rdb_scan_close(void *it)
{
	struct rdb_scan *s = it;

	if (s == NULL)
		return;
	rocksdb_iter_destroy(s->it);
	free(s);
}

/* Flush the memtable too, as tabletfs's major compaction does. */
static int
rdb_compact(void *db)
{
	struct rdb *r = db;
	char *err = NULL;

	rocksdb_flush(r->db, r->flush, &err);
	if (err != NULL)
		return rdb_error("flush", err);
	rocksdb_compact_range(r->db, NULL, 0, NULL, 0);
	return 0;
}

static void
rdb_stats(void *db, struct engine_stats *out)
{
	struct rdb *r = db;
	char name[64], *v;

	for (int level = 0; level < 7; level++) {
		snprintf(name, sizeof(name), "rocksdb.num-files-at-level%d",
		    level);
		if ((v = rocksdb_property_value(r->db, name)) == NULL)
			continue;
		out->files += strtoull(v, NULL, 10);
		rocksdb_free(v);
	}
}

static int
rdb_increment(void *db, struct bench_bytes key, int64_t delta,
    int64_t *result)
{
	struct rdb *r = db;

	return bench_counter_add(&engine_rocksdb, &r->stripes, db, key, delta,
	    result);
}

static void
rdb_describe(const struct engine_config *cfg, char *buf, size_t size)
{
	snprintf(buf, size, "RocksDB: block-based table, LRU cache, write "
	    "buffer, %s, Bloom %d bits/key, blocks %s, reads verify checksums "
	    "(its default); sync puts sync the WAL",
	    cfg->compress ? "snappy" : "no compression", RDB_BLOOM_BITS,
	    cfg->block_bytes != 0 ? "as set" : "4 KiB");
}

const struct engine engine_rocksdb = {
	.name = "rocksdb",
	.open = rdb_open,
	.close = rdb_close,
	.put = rdb_put,
	.get = rdb_get,
	.scan_open = rdb_scan_open,
	.scan_next = rdb_scan_next,
	.scan_close = rdb_scan_close,
	.compact = rdb_compact,
	.stats = rdb_stats,
	.increment = rdb_increment,
	.describe = rdb_describe,
};
