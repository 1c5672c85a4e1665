/*
 * engine_leveldb.c - tabletbench's engine over LevelDB's C API
 * (<leveldb/c.h>, Debian's libleveldb-dev), built when configure finds it.
 *
 * Settings as tabletfs's: an LRU block cache of cfg->cache_bytes, a write
 * buffer of cfg->memtable_bytes, Snappy when cfg->compress, a Bloom filter
 * of 10 bits per key (tabletfs keeps one per SSTable), blocks of
 * cfg->block_bytes (LevelDB's 4 KiB when 0).  A put with sync false goes
 * to the log with write(2); with sync true LevelDB fsyncs it, and
 * concurrent writers share the sync (its writer queue).  Increments are a
 * get and a put under a key-striped lock.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <leveldb/c.h>

#include "bench/bench.h"

#define LDB_BLOOM_BITS	10

struct ldb {
	leveldb_t *db;
	leveldb_options_t *opts;
	leveldb_cache_t *cache;
	leveldb_filterpolicy_t *bloom;
	leveldb_readoptions_t *read;
	leveldb_writeoptions_t *write;
	leveldb_writeoptions_t *write_sync;
	struct bench_stripes stripes;
};

struct ldb_scan {
	leveldb_iterator_t *it;
	uint64_t left;		/* entries still to give; UINT64_MAX: all */
	bool started;
};

/* Record LevelDB's message (and free it) as the error detail. */
static int
ldb_error(const char *what, char *err)
{
	int rc = bt_error_set(-EIO, "leveldb %s: %s", what, err);

	leveldb_free(err);
	return rc;
}

static void
ldb_free(struct ldb *l)
{
	if (l->db != NULL)
		leveldb_close(l->db);
	if (l->opts != NULL)
		leveldb_options_destroy(l->opts);
	if (l->bloom != NULL)
		leveldb_filterpolicy_destroy(l->bloom);
	if (l->cache != NULL)
		leveldb_cache_destroy(l->cache);
	if (l->read != NULL)
		leveldb_readoptions_destroy(l->read);
	if (l->write != NULL)
		leveldb_writeoptions_destroy(l->write);
	if (l->write_sync != NULL)
		leveldb_writeoptions_destroy(l->write_sync);
	bench_stripes_release(&l->stripes);
	free(l);
}

static int
ldb_open(const struct engine_config *cfg, const char *path, void **dbp)
{
	struct ldb *l;
	char *err = NULL;

	if ((l = calloc(1, sizeof(*l))) == NULL)
		return -ENOMEM;
	bench_stripes_init(&l->stripes);
	l->opts = leveldb_options_create();
	l->read = leveldb_readoptions_create();
	/* Every block read is checked, as tabletfs and RocksDB check it. */
	leveldb_readoptions_set_verify_checksums(l->read, 1);
	l->write = leveldb_writeoptions_create();
	l->write_sync = leveldb_writeoptions_create();
	leveldb_writeoptions_set_sync(l->write_sync, 1);
	leveldb_options_set_create_if_missing(l->opts, 1);
	leveldb_options_set_error_if_exists(l->opts, 1);
	if (cfg->cache_bytes != 0) {
		l->cache = leveldb_cache_create_lru(cfg->cache_bytes);
		leveldb_options_set_cache(l->opts, l->cache);
	}
	if (cfg->memtable_bytes != 0)
		leveldb_options_set_write_buffer_size(l->opts,
		    cfg->memtable_bytes);
	if (cfg->block_bytes != 0)
		leveldb_options_set_block_size(l->opts, cfg->block_bytes);
	leveldb_options_set_compression(l->opts, cfg->compress ?
	    leveldb_snappy_compression : leveldb_no_compression);
	l->bloom = leveldb_filterpolicy_create_bloom(LDB_BLOOM_BITS);
	leveldb_options_set_filter_policy(l->opts, l->bloom);
	l->db = leveldb_open(l->opts, path, &err);
	if (err != NULL) {
		ldb_free(l);
		return ldb_error("open", err);
	}
	*dbp = l;
	return 0;
}

static int
ldb_close(void *db)
{
	if (db != NULL)
		ldb_free(db);
	return 0;
}

static int
ldb_put(void *db, struct bench_bytes key, struct bench_bytes value,
    bool sync)
{
	struct ldb *l = db;
	char *err = NULL;

	leveldb_put(l->db, sync ? l->write_sync : l->write, key.p, key.n,
	    value.p, value.n, &err);
	return err != NULL ? ldb_error("put", err) : 0;
}

static int
ldb_get(void *db, struct bench_bytes key, struct bench_buf *value)
{
	struct ldb *l = db;
	char *err = NULL, *v;
	size_t n;
	int rc = 0;

	v = leveldb_get(l->db, l->read, key.p, key.n, &n, &err);
	if (err != NULL)
		return ldb_error("get", err);
	if (v == NULL)
		return BT_NOTFOUND;
	if ((rc = bench_buf_reserve(value, n)) == 0) {
		memcpy(value->p, v, n);
		value->n = n;
	}
	leveldb_free(v);
	return rc;
}

static int
ldb_scan_open(void *db, struct bench_bytes start, uint64_t limit,
    void **itp)
{
	struct ldb *l = db;
	struct ldb_scan *s;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return -ENOMEM;
	s->it = leveldb_create_iterator(l->db, l->read);
	s->left = limit != 0 ? limit : UINT64_MAX;
	if (start.n == 0)
		leveldb_iter_seek_to_first(s->it);
	else
		leveldb_iter_seek(s->it, start.p, start.n);
	*itp = s;
	return 0;
}

static int
ldb_scan_next(void *it, struct bench_bytes *key, struct bench_bytes *value)
{
	struct ldb_scan *s = it;
	char *err = NULL;
	size_t n;

	if (s->started)
		leveldb_iter_next(s->it);
	s->started = true;
	if (s->left == 0 || !leveldb_iter_valid(s->it)) {
		leveldb_iter_get_error(s->it, &err);
		return err != NULL ? ldb_error("scan", err) : BT_DONE;
	}
	s->left--;
	key->p = leveldb_iter_key(s->it, &n);
	key->n = n;
	value->p = leveldb_iter_value(s->it, &n);
	value->n = n;
	return 0;
}

static void
ldb_scan_close(void *it)
{
	struct ldb_scan *s = it;

	if (s == NULL)
		return;
	leveldb_iter_destroy(s->it);
	free(s);
}

static int
ldb_compact(void *db)
{
	struct ldb *l = db;

	leveldb_compact_range(l->db, NULL, 0, NULL, 0);
	return 0;
}

static void
ldb_stats(void *db, struct engine_stats *out)
{
	struct ldb *l = db;
	char name[64], *v;

	for (int level = 0; level < 7; level++) {
		snprintf(name, sizeof(name), "leveldb.num-files-at-level%d",
		    level);
		if ((v = leveldb_property_value(l->db, name)) == NULL)
			continue;
		out->files += strtoull(v, NULL, 10);
		leveldb_free(v);
	}
}

static int
ldb_increment(void *db, struct bench_bytes key, int64_t delta,
    int64_t *result)
{
	struct ldb *l = db;

	return bench_counter_add(&engine_leveldb, &l->stripes, db, key, delta,
	    result);
}

static void
ldb_describe(const struct engine_config *cfg, char *buf, size_t size)
{
	snprintf(buf, size, "LevelDB %d.%d: LRU cache, write buffer, "
	    "%s, Bloom %d bits/key, blocks %s, reads verify checksums; "
	    "sync puts fsync the log",
	    leveldb_major_version(), leveldb_minor_version(),
	    cfg->compress ? "snappy" : "no compression", LDB_BLOOM_BITS,
	    cfg->block_bytes != 0 ? "as set" : "4 KiB");
}

const struct engine engine_leveldb = {
	.name = "leveldb",
	.open = ldb_open,
	.close = ldb_close,
	.put = ldb_put,
	.get = ldb_get,
	.scan_open = ldb_scan_open,
	.scan_next = ldb_scan_next,
	.scan_close = ldb_scan_close,
	.compact = ldb_compact,
	.stats = ldb_stats,
	.increment = ldb_increment,
	.describe = ldb_describe,
};
