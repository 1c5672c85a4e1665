/*
 * sstable.h - immutable sorted files: the builder that writes one and the
 * reader that serves point lookups and iterators from it, with data blocks
 * through a shared block cache.  Byte layout: format.h.
 */
#ifndef TABLETFS_SSTABLE_SSTABLE_H
#define TABLETFS_SSTABLE_SSTABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"
#include "util/cache.h"
#include "util/env.h"
#include "util/iter.h"
#include "util/slice.h"

struct sst_options {
	size_t block_size;	/* 0: SST_DEFAULT_BLOCK_SIZE */
	bool compress;		/* Snappy per block, kept when it saves 12.5 % */
	int bloom_bits_per_key;	/* 0: no filter */
	/*
	 * The part of a key the Bloom filter holds: returns the length of
	 * key's filter prefix.  NULL: the whole key.  The reader must be given
	 * the same function.
	 */
	size_t (*filter_prefix)(struct slice key);
	/*
	 * For the bounds block (format.h): set *column (a part of key) and
	 * *time for a key the bounds can describe and return true, or
	 * return false (the table then records that nothing is known).
	 * NULL: no bounds block, a version 1 table.
	 */
	bool (*key_column)(struct slice key, struct slice *column,
	    uint64_t *time);
	/*
	 * With key_column, for the bounds block's sequence range: set *seq
	 * to the sequence number of key and return true, or return false
	 * (the table then records no range).  NULL: no range.
	 */
	bool (*key_sequence)(struct slice key, uint64_t *seq);
	/*
	 * With key_column and filter_prefix (a version 5 table), for the
	 * bounds block's usage: the label under which key's entry is
	 * counted (a part of key, or empty), so that a reader can tell
	 * what the table holds of each label (the tablet: a column
	 * family) without reading its data.  NULL: no usage.
	 */
	struct slice (*key_label)(struct slice key);
	/*
	 * Compress data blocks (and checksum them) on a worker thread of the
	 * builder's own while the caller goes on adding entries: a large
	 * compaction's merge then has the other core's help.  The file is
	 * byte for byte the one the serial builder writes.  The thread starts
	 * when the first data block is full (a one-block table never has
	 * one; nor has a builder whose thread could not be created, which
	 * then works alone) and is joined by sst_builder_finish() or
	 * sst_builder_free().  Memory: the blocks in flight, each raw and
	 * compressed: 256 KiB of them, but at least 4 and at most
	 * SST_PARALLEL_BLOCKS.  false: all in the caller's thread.
	 */
	bool parallel;
};

/* Data blocks handed to the worker and not yet written, at most. */
#define SST_PARALLEL_BLOCKS 64

/* The defaults: 64 KiB blocks, Snappy on, 10 Bloom bits, whole keys,
 * serial. */
void sst_options_default(struct sst_options *opts);

struct sst_builder;

/*
 * Create the file path (-EEXIST if present) and start a table in it.  The
 * options are copied (block_size is capped at 1 GiB, bloom_bits_per_key at
 * 30).  0 or a negative error (-EINVAL for negative Bloom bits).
 */
int sst_builder_new(struct env *env, const char *path,
    const struct sst_options *opts, struct sst_builder **out);

/*
 * Add an entry; keys must be strictly increasing (-EINVAL otherwise,
 * and the builder is unchanged; BT_ETOOBIG, also unchanged, when key and
 * value together pass 1 GiB).  0 or a negative error (any other error
 * leaves the builder failed: later calls return BT_ECLOSED and only
 * sst_builder_free() remains).
 */
int sst_builder_add(struct sst_builder *b, struct slice key,
    struct slice value);

/* What a finished table holds. */
struct sst_info {
	uint64_t entry_count;
	uint64_t file_size;
	uint64_t data_size;
	uint64_t block_count;
};

/*
 * Write the filter, index and footer, sync the file and close it.  The
 * caller then renames it into place and syncs the directory.  info may be
 * NULL.  0 or a negative error (BT_ECLOSED after an earlier failure).
 */
int sst_builder_finish(struct sst_builder *b, struct sst_info *info);

/* Free a builder; an unfinished file is closed and left for the caller to
 * remove.  Accepts NULL. */
void sst_builder_free(struct sst_builder *b);

struct sst_reader;

/*
 * Open the table at path: read and check the footer, index and filter.
 * file_id distinguishes this file's blocks in the cache (use
 * cache_new_id()); cache may be NULL (no caching).  filter_prefix must match
 * the builder's.  0, -errno, BT_EFORMAT (not an SSTable or unknown version),
 * BT_ECHECKSUM or BT_ECORRUPT, with a detail naming the path and offset.
 *
 * A reader is immutable after opening and safe to use from many threads.
 * It is reference-counted: sst_reader_open() returns one reference and every
 * iterator holds another.
 */
int sst_reader_open(struct env *env, const char *path, uint64_t file_id,
    struct cache *cache, size_t (*filter_prefix)(struct slice key),
    struct sst_reader **out);
void sst_reader_ref(struct sst_reader *r);
/* Accepts NULL. */
void sst_reader_unref(struct sst_reader *r);

/* The footer's counts and sizes. */
void sst_reader_get_info(const struct sst_reader *r, struct sst_info *info);

/*
 * Whether every key that starts with prefix sorts after the table's last
 * key (the index's last, held in memory since the open), so that the
 * table holds none: a lookup past a table's end is answered without its
 * filter or a block, as LevelDB answers it from its files' key ranges.
 * True for an empty table.
 */
bool sst_reader_ends_before(const struct sst_reader *r, struct slice prefix);

/* The file's last key, borrowed for the reader's life; empty when the
 * file has no entries. */
struct slice sst_reader_last_key(const struct sst_reader *r);

/* false if no key with this filter prefix is in the table (Bloom filter);
 * true when it may be, or when the table has no filter. */
bool sst_reader_may_contain(const struct sst_reader *r, struct slice prefix);
/* The same for a prefix whose bloom_hash() the caller computed once for
 * several tables. */
bool sst_reader_may_contain_hash(const struct sst_reader *r, uint64_t hash);

/*
 * Exact lookup: 0 with the value copied into *value, BT_NOTFOUND, or a
 * negative error (a damaged block is BT_ECHECKSUM or BT_ECORRUPT, never
 * wrong data).  Consults the key range, then the filter, first.
 */
int sst_reader_get(struct sst_reader *r, struct slice key, struct buf *value);

/*
 * What keeps a data block's contents alive: a cache handle, a buffer of
 * its own, or the readahead window of the scan that read it.  Embedded in
 * struct sst_pins; its fields are the reader's.
 */
struct sst_window;
struct sst_block_ref {
	struct sst_reader *r;
	struct cache_handle *handle;
	struct buf *owned;
	struct sst_window *window;
};

/*
 * The data blocks a prefix walk keeps alive so that the values it passed
 * stay valid after it returns: sst_pins_init() before the first walk,
 * sst_pins_release() when the values are no longer needed.  bytes counts
 * the contents of the blocks pinned so far (a caller's memory bound).
 */
#define SST_PINS_INLINE 4
struct sst_pins {
	struct sst_block_ref *refs;
	size_t count, cap;
	uint64_t bytes;
	struct sst_block_ref inline_refs[SST_PINS_INLINE];
};

void sst_pins_init(struct sst_pins *p);
/* Give back every pinned block; p may be reused after sst_pins_init(). */
void sst_pins_release(struct sst_pins *p);

/*
 * Visit, in key order, every entry whose key starts with prefix (a point
 * read's row), without allocating beyond the growth of the two key
 * buffers (initialized; kept by the caller for reuse) and of pins.  The
 * filter is not consulted: that is the caller's choice.  visit(arg, key,
 * value) returns 0 for more or non-zero to stop (a negative value is
 * passed back); key is borrowed until it returns, and so is value when
 * pins is NULL; otherwise every block that held a visited entry joins
 * pins (and its bytes are counted there before its entries are visited),
 * and value stays valid until sst_pins_release(pins).  0, visit's error,
 * or a negative error (a damaged block: BT_ECHECKSUM, BT_ECORRUPT;
 * -ENOMEM).  In a version 3 or 4 table, a walk that reaches the end of a
 * block reads the next one only when the splits map says it starts with
 * the filter key of that block's last key, or when that filter key is
 * longer than prefix (which may then go on past it); the reader's
 * filter_prefix must be the builder's for that to hold.  A block that
 * holds one entry, whose key and value length a version 4 or 5 table's
 * index gives, is read only when its key has the prefix and
 * want_value(arg, key) says the caller wants its value (want_value NULL:
 * every value);
 * otherwise its entry is visited with value {NULL, length}.  Other values
 * come whole.
 */
int sst_reader_visit_prefix(struct sst_reader *r, struct slice prefix,
    bool (*want_value)(void *arg, struct slice key), struct buf *index_key,
    struct buf *data_key, struct sst_pins *pins,
    int (*visit)(void *arg, struct slice key, struct slice value),
    void *arg);

/*
 * An iterator over the whole table (util/iter.h), with flags:
 * SST_ITER_NO_CACHE_FILL for a bulk read (a compaction, or a scan asked
 * not to fill the cache): blocks already in the cache are used, but
 * blocks read from the file are not put there (they would push out the
 * blocks readers use); SST_ITER_KEYS_ONLY for a reader of keys and value
 * lengths only: the entry of a block that holds one, whose length a
 * version 4 or 5 table's index gives, comes without reading the block, with
 * value {NULL, length} (other values come whole).  0 or -ENOMEM.
 */
#define SST_ITER_NO_CACHE_FILL	1u
#define SST_ITER_KEYS_ONLY	2u
int sst_reader_iter_new(struct sst_reader *r, unsigned flags,
    struct iter **out);

/*
 * Read and check every block (checksums, decoding, key order); for
 * tabletctl check.  0 or the first error, with a detail naming the block.
 */
int sst_reader_verify(struct sst_reader *r);

/*
 * The table's bounds (format.h): true when its builder's key_column
 * described every entry, with the number of distinct columns in
 * *column_count and the largest time in *max_time; false when nothing is
 * known (a version 1 table, or one the bounds could not describe).
 */
bool sst_reader_bounds(const struct sst_reader *r, size_t *column_count,
    uint64_t *max_time);
/* The i-th column (i < column_count), borrowed from r. */
struct slice sst_reader_bounds_column(const struct sst_reader *r, size_t i);
/*
 * The table's sequence range (format.h): true with the smallest and
 * largest sequence number of its entries, as its builder's key_sequence
 * gave them; false when it is not known (a version 1 table, an empty one,
 * or a key key_sequence did not describe).
 */
bool sst_reader_sequences(const struct sst_reader *r, uint64_t *min_seq,
    uint64_t *max_seq);

/* What a table holds under one label (sst_options.key_label). */
struct sst_usage {
	struct slice label;		/* borrowed from the reader */
	uint64_t entries;
	uint64_t key_bytes;
	uint64_t value_bytes;
};

/*
 * The table's usage (format.h): true with the number of labels in
 * *count (sst_reader_usage_get() gives each); false when it is not known
 * (a table of version 4 or older, one built without key_label, or one
 * with more than SST_USAGE_MAX_LABELS labels).
 */
bool sst_reader_usage(const struct sst_reader *r, size_t *count);
/* The i-th label's figures (i < count), the label borrowed from r. */
void sst_reader_usage_get(const struct sst_reader *r, size_t i,
    struct sst_usage *out);

/* Lookups that the Bloom filter answered "absent", and blocks read from the
 * file (cache misses), for status counters. */
struct sst_reader_stats {
	uint64_t filter_negatives;
	uint64_t block_reads;
};
void sst_reader_get_stats(const struct sst_reader *r,
    struct sst_reader_stats *out);

/*
 * Row ranges, for tablets that share files after a split.  A range is
 * [lo, hi) of keys; an empty hi has no upper bound.
 *
 * range_size: the bytes of the data blocks that may hold keys in the range
 * (whole blocks, trailers included; data_size for the whole table; 0 if
 * the index cannot be read).
 * middle_key: a key near the middle of the range by bytes: the last key of
 * a block such that at least one block of the range lies on each side.
 * 0 with the key in *out, BT_NOTFOUND if fewer than two blocks meet the
 * range, or a negative error.
 * key_range: the first and last keys of the table.  0, BT_NOTFOUND for an
 * empty table, or a negative error (the first key costs one block read).
 */
uint64_t sst_reader_range_size(const struct sst_reader *r, struct slice lo,
    struct slice hi);
int sst_reader_middle_key(const struct sst_reader *r, struct slice lo,
    struct slice hi, struct buf *out);
int sst_reader_key_range(struct sst_reader *r, struct buf *first,
    struct buf *last);

#endif
