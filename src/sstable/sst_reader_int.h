/*
 * sst_reader_int.h - what the files of the SSTable reader share: the
 * reader's struct, and the block fetch layer (sst_block_fetch.c) that the
 * reader proper (sst_reader.c), its iterator (sst_iter.c) and its row
 * ranges (sst_range.c) read blocks through.  Calls go one way, each file
 * calling only those before it: sst_block_fetch.c, sst_reader.c (whose
 * sst_reader_ref/_unref the iterator calls), sst_iter.c, sst_range.c (a
 * table's first key comes from an iterator).  Nothing outside src/sstable
 * includes this header.
 */
#ifndef TABLETFS_SSTABLE_SST_READER_INT_H
#define TABLETFS_SSTABLE_SST_READER_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "sstable/format.h"
#include "sstable/sstable.h"
#include "util/buf.h"
#include "util/iter.h"
#include "util/slice.h"

/* A data block's handle as its index entry's value holds it, decoded,
 * and whether the entry gives a value length (a one-entry block). */
struct sst_handle {
	uint64_t offset;
	uint64_t size : 63;
	uint64_t lone : 1;
};

struct sst_reader {
	atomic_long refs;
	struct env_file *file;
	uint64_t file_id;
	uint64_t file_size;
	struct cache *cache;
	size_t (*filter_prefix)(struct slice key);
	struct sst_info info;
	uint64_t index_offset;
	struct buf index;		/* uncompressed index block contents */
	struct buf last_key;		/* the table's (the index's last) */
	struct buf filter;		/* Bloom filter; empty when none */
	/* The index fences (sst_index_seek), one per index entry, or NULL
	 * when the index block is empty or lacks a restart at every entry;
	 * fence_common, borrowed from the index, starts every index key.
	 * handle[i] is entry i's block handle, decoded (set with fence). */
	uint64_t *fence;
	struct sst_handle *handle;
	size_t fence_n;
	struct slice fence_common;
	/* The bounds block (format version 2): whether it is complete, and
	 * then the largest time and the columns, each a slice into
	 * bounds_bytes. */
	bool has_bounds;
	uint64_t bounds_max_time;
	size_t bounds_count;
	struct slice bounds_columns[SST_BOUNDS_MAX_COLUMNS];
	struct buf bounds_bytes;
	/* The sequence range of the bounds block, when it has one. */
	bool has_sequences;
	uint64_t min_seq, max_seq;
	/* The splits map of a version 3 or 4 table (format.h), a slice into
	 * bounds_bytes checked to hold a bit per data block; empty when the
	 * table has none (any block may continue its predecessor's row). */
	bool has_splits;
	struct slice splits;
	/* The usage of a version 5 table (format.h), its labels slices
	 * into bounds_bytes; NULL when the table has none. */
	struct sst_usage *usage;
	size_t usage_count;
	uint32_t version;
	atomic_uint_fast64_t filter_negatives;
	atomic_uint_fast64_t block_reads;
};

/* The readahead state of one scan (sst_block_fetch.c); only the scan's
 * thread touches it. */
struct sst_readahead {
	struct sst_window *window;	/* NULL, or file bytes from offset on */
	uint64_t offset;
	uint64_t next;		/* where the block after the last one starts */
	unsigned sequential;	/* blocks read back to back so far */
	size_t size;		/* the next window's size; 0 before the first */
};

/*
 * The block fetch layer (sst_block_fetch.c).  Each function's comment
 * there says what it does; the contracts in brief:
 *
 * sst_reader_block_error: rc with the path and block offset put in front
 * of a BT_ECORRUPT detail that the block code set; other codes unchanged.
 * sst_block_ref_release: give back what ref holds (block_iter_new()'s
 * release callback); ref is then empty and may be released again.
 * sst_readahead_init/_release: an embedded readahead, empty; release
 * gives back its window.
 * sst_reader_read_block: the checked, uncompressed contents of the block
 * stored at (offset, size), which must lie below limit, into out.
 * sst_decode_index_value: an index entry's block handle, and the value
 * length + 1 of a one-entry block (0: none; lone_value NULL: not wanted).
 * sst_decode_handle: the same without the value length.
 * sst_reader_load_block_ahead: a data block's contents, held by ref,
 * through the cache (use_cache) and read through ra (NULL: none);
 * sst_reader_load_block: the same without readahead, filling the cache.
 * sst_reader_block_iter: an iterator over the data block an index entry's
 * value names, holding ref, with the block's offset in *offsetp.
 * sst_reader_index_iter: an iterator over the index block.
 */
int sst_reader_block_error(const struct sst_reader *r, const char *what,
    uint64_t offset, int rc);
void sst_block_ref_release(void *arg);
void sst_readahead_init(struct sst_readahead *ra);
void sst_readahead_release(struct sst_readahead *ra);
int sst_reader_read_block(struct sst_reader *r, const char *what,
    uint64_t offset, uint64_t size, uint64_t limit, struct buf *out);
int sst_decode_index_value(const struct sst_reader *r, struct slice value,
    uint64_t *offset, uint64_t *size, uint64_t *lone_value);
int sst_decode_handle(const struct sst_reader *r, struct slice value,
    uint64_t *offset, uint64_t *size);
int sst_reader_load_block_ahead(struct sst_reader *r,
    struct sst_readahead *ra, uint64_t offset, uint64_t size,
    bool use_cache, bool fill, struct sst_block_ref *ref,
    struct slice *contents);
int sst_reader_load_block(struct sst_reader *r, uint64_t offset,
    uint64_t size, bool use_cache, struct sst_block_ref *ref,
    struct slice *contents);
int sst_reader_block_iter(struct sst_reader *r, struct slice handle,
    bool use_cache, bool fill, struct sst_block_ref *ref, struct iter **out,
    uint64_t *offsetp);
int sst_reader_index_iter(const struct sst_reader *r, struct iter **out);

#endif
