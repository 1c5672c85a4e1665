/*
 * sst_reader.c - serving lookups and scans from an SSTable (format.h).
 *
 * Opening reads the footer, then the index, filter and bounds blocks into
 * memory, and checks that the block handles tile the file exactly: data
 * blocks back to back from offset 0, then the filter, the bounds block
 * (versions 2 to 4), the index and the footer.  Data
 * blocks are read on demand with env_file_read_at() (safe from many
 * threads), checked against their CRC, uncompressed, and shared through the
 * block cache when there is one; an iterator that reads blocks back to back
 * reads ahead (struct sst_readahead).  A point read finds its index entry
 * through the index fences (sst_index_seek), and stops at the end of a
 * block that the splits map (versions 3, 4) says its row does not go past.
 * Every byte off disk is untrusted: a flaw is BT_ECHECKSUM, BT_ECORRUPT or
 * BT_EFORMAT with a detail naming the path and offset, never a crash and
 * never wrong data.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "sstable/block.h"
#include "sstable/format.h"
#include "sstable/sstable.h"
#include "util/alloc.h"
#include "util/bloom.h"
#include "util/coding.h"
#include "util/compress.h"
#include "util/crc32c.h"
#include "util/error.h"

/* Block offsets inside a block are fixed32: contents stay below 4 GiB. */
#define SST_MAX_BLOCK_CONTENTS	((size_t)UINT32_MAX)

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
	uint32_t version;
	atomic_uint_fast64_t filter_negatives;
	atomic_uint_fast64_t block_reads;
};

/*
 * struct sst_block_ref (sstable.h) keeps a data block's contents alive
 * while an iterator reads it or a pin holds it; block_iter_new()'s release
 * callback gives it back.
 */

/*
 * The block code knows offsets within a block but not the file: put the
 * path and the block's offset in front of its detail.
 */
static int
sst_reader_block_error(const struct sst_reader *r, const char *what,
    uint64_t offset, int rc)
{
	char detail[256];

	if (rc != BT_ECORRUPT)
		return rc;
	snprintf(detail, sizeof(detail), "%s", bt_error_detail());
	return bt_error_set(rc, "%s: %s block at %llu: %s", r->file->path,
	    what, (unsigned long long)offset, detail);
}

static void
sst_block_buf_free(struct buf *b)
{
	if (b == NULL)
		return;
	buf_release(b);
	bt_free(b);
}

/*
 * A readahead window, shared by the readahead that read it and by the
 * blocks that a scan takes from it in place (raw blocks: no copy, and not
 * cached, as a block read through mmap is not).  Only the scan's thread
 * touches it: the count is plain.
 */
struct sst_window {
	size_t refs;
	struct buf bytes;
};

static void
sst_window_unref(struct sst_window *w)
{
	if (w == NULL || --w->refs > 0)
		return;
	buf_release(&w->bytes);
	bt_free(w);
}

static void
sst_block_ref_release(void *arg)
{
	struct sst_block_ref *ref = arg;

	if (ref->handle != NULL)
		cache_release(ref->r->cache, ref->handle);
	sst_block_buf_free(ref->owned);
	sst_window_unref(ref->window);
	ref->handle = NULL;
	ref->owned = NULL;
	ref->window = NULL;
}

static void
sst_block_cache_deleter(struct slice key, void *value)
{
	sst_block_buf_free(value);
}

/*
 * Readahead for a scan: once it has read blocks back to back, it reads a
 * window of the file at once and takes the next blocks from it, so that a
 * long scan makes one read call per window rather than one per block.
 * The window grows from SST_READAHEAD_MIN to SST_READAHEAD_MAX while the
 * scan stays sequential, and a seek elsewhere starts over; a short scan
 * (seek and a few rows) reads block by block as before.  Bytes from the
 * window are checked like any others.
 */
#define SST_READAHEAD_AFTER	4	/* back-to-back blocks before it starts */
#define SST_READAHEAD_MIN	(32u << 10)
#define SST_READAHEAD_MAX	(256u << 10)

struct sst_readahead {
	struct sst_window *window;	/* NULL, or file bytes from offset on */
	uint64_t offset;
	uint64_t next;		/* where the block after the last one starts */
	unsigned sequential;	/* blocks read back to back so far */
	size_t size;		/* the next window's size; 0 before the first */
};

static void
sst_readahead_init(struct sst_readahead *ra)
{
	ra->window = NULL;
	ra->offset = ra->next = 0;
	ra->sequential = 0;
	ra->size = 0;
}

static void
sst_readahead_release(struct sst_readahead *ra)
{
	sst_window_unref(ra->window);
	sst_readahead_init(ra);
}

/*
 * A window of size bytes that ra alone holds: the last one when no block
 * holds it any more, else a new one (blocks keep the old).
 */
static int
sst_readahead_fresh(struct sst_readahead *ra, size_t size)
{
	struct sst_window *w = ra->window;

	if (w == NULL || w->refs > 1) {
		if ((w = bt_malloc(sizeof(*w))) == NULL)
			return -ENOMEM;
		w->refs = 1;
		buf_init(&w->bytes);
		sst_window_unref(ra->window);
		ra->window = w;
	}
	w->bytes.n = 0;
	ra->offset = 0;
	return buf_reserve(&w->bytes, size);
}

/*
 * The n bytes at offset through the readahead ra: 1 with *bytes pointing
 * into ra's window (read now if need be), 0 when the caller is to read
 * them itself (no readahead yet: the blocks were not back to back), or a
 * negative error.  The window never reaches past limit (the end of the
 * region the block lies in, already checked to hold it).
 */
static int
sst_readahead_get(struct sst_reader *r, struct sst_readahead *ra,
    uint64_t offset, size_t n, uint64_t limit, const uint8_t **bytes)
{
	struct sst_window *w = ra->window;
	size_t size;
	int rc;

	if (w != NULL && offset >= ra->offset &&
	    offset - ra->offset <= w->bytes.n &&
	    n <= w->bytes.n - (offset - ra->offset)) {
		*bytes = w->bytes.p + (offset - ra->offset);
		ra->next = offset + n;
		return 1;
	}
	if (offset == ra->next && ra->next != 0) {
		ra->sequential++;
	} else {
		ra->sequential = 0;
		ra->size = 0;
	}
	ra->next = offset + n;
	if (ra->sequential < SST_READAHEAD_AFTER)
		return 0;
	ra->size = ra->size == 0 ? SST_READAHEAD_MIN :
	    ra->size < SST_READAHEAD_MAX ? ra->size * 2 : ra->size;
	size = ra->size;
	if (size < n)
		size = n;
	if (size > limit - offset)
		size = (size_t)(limit - offset);
	if ((rc = sst_readahead_fresh(ra, size)) < 0)
		return rc;
	w = ra->window;
	if ((rc = env_file_read_exact(r->file, offset, w->bytes.p,
	    size)) < 0)
		return rc;
	w->bytes.n = size;
	ra->offset = offset;
	*bytes = w->bytes.p;
	return 1;
}

/* A block of stored bytes up to this size (trailer included) is read onto
 * the stack, so that a compressed one costs no allocation besides its
 * uncompressed contents. */
#define SST_STACK_READ	(8u << 10)

/*
 * Read the block stored at (offset, size) into out, through ra when not
 * NULL: check that it lies inside limit, check its CRC, and uncompress it.
 * out holds the contents, except for a raw block in ra's window when
 * windowp is not NULL: then *windowp holds a reference to the window,
 * *lent the contents in it, and out is empty.
 */
static int
sst_reader_read_block_ahead(struct sst_reader *r, struct sst_readahead *ra,
    const char *what, uint64_t offset, uint64_t size, uint64_t limit,
    struct buf *out, struct sst_window **windowp, struct slice *lent)
{
	const char *path = r->file->path;
	const uint8_t *bytes = NULL;
	uint8_t stack[SST_STACK_READ];
	bool on_stack = false;
	struct buf raw;
	uint32_t stored_crc, crc;
	uint8_t type;
	int rc, windowed = 0;

	if (offset > limit || size > limit - offset ||
	    SST_BLOCK_TRAILER_SIZE > limit - offset - size ||
	    size > SST_MAX_BLOCK_CONTENTS)
		return bt_error_set(BT_ECORRUPT,
		    "%s: %s block handle (%llu, %llu) outside its region "
		    "(%llu bytes)", path, what, (unsigned long long)offset,
		    (unsigned long long)size, (unsigned long long)limit);
	buf_clear(out);
	if (ra != NULL && (windowed = sst_readahead_get(r, ra, offset,
	    (size_t)size + SST_BLOCK_TRAILER_SIZE, limit, &bytes)) < 0)
		return windowed;
	if (!windowed && size + SST_BLOCK_TRAILER_SIZE <= sizeof(stack)) {
		if ((rc = env_file_read_exact(r->file, offset, stack,
		    (size_t)size + SST_BLOCK_TRAILER_SIZE)) < 0)
			return rc;
		bytes = stack;
		on_stack = true;
	} else if (!windowed) {
		if ((rc = buf_reserve_exact(out, (size_t)size +
		    SST_BLOCK_TRAILER_SIZE)) < 0)
			return rc;
		if ((rc = env_file_read_exact(r->file, offset, out->p,
		    (size_t)size + SST_BLOCK_TRAILER_SIZE)) < 0)
			return rc;
		bytes = out->p;
	}
	atomic_fetch_add_explicit(&r->block_reads, 1, memory_order_relaxed);
	type = bytes[size];
	stored_crc = crc32c_unmask(get_fixed32(bytes + size + 1));
	crc = crc32c_extend(crc32c_value(bytes, (size_t)size), &type, 1);
	if (crc != stored_crc)
		return bt_error_set(BT_ECHECKSUM,
		    "%s: %s block checksum mismatch at offset %llu", path,
		    what, (unsigned long long)offset);
	switch (type) {
	case SST_BLOCK_RAW:
		if (windowed && windowp != NULL) {
			ra->window->refs++;
			*windowp = ra->window;
			*lent = slice_make(bytes, (size_t)size);
			return 0;
		}
		/* An empty block may leave out without memory. */
		if ((windowed || on_stack) && size > 0) {
			if ((rc = buf_reserve_exact(out, (size_t)size)) < 0)
				return rc;
			memcpy(out->p, bytes, (size_t)size);
		}
		out->n = (size_t)size;
		return 0;
	case SST_BLOCK_SNAPPY:
		buf_init(&raw);
		rc = uncompress_snappy(slice_make(bytes, (size_t)size),
		    SST_MAX_BLOCK_CONTENTS, &raw);
		if (rc < 0) {
			buf_release(&raw);
			if (rc == BT_ECORRUPT)
				bt_error_set(rc, "%s: %s block at offset %llu: "
				    "bad Snappy data", path, what,
				    (unsigned long long)offset);
			return rc;
		}
		buf_release(out);
		*out = raw;
		return 0;
	}
	return bt_error_set(BT_ECORRUPT,
	    "%s: %s block at offset %llu: unknown block type %u", path, what,
	    (unsigned long long)offset, type);
}

static int
sst_reader_read_block(struct sst_reader *r, const char *what,
    uint64_t offset, uint64_t size, uint64_t limit, struct buf *out)
{
	return sst_reader_read_block_ahead(r, NULL, what, offset, size, limit,
	    out, NULL, NULL);
}

/*
 * Decode an index entry's value: varint64 offset, varint64 size, then in
 * a version 4 table the value length of a one-entry block (format.h),
 * and nothing after.  *lone_value (NULL: not wanted) is that length + 1,
 * or 0 when the entry has none.
 */
static int
sst_decode_index_value(const struct sst_reader *r, struct slice value,
    uint64_t *offset, uint64_t *size, uint64_t *lone_value)
{
	uint64_t len = 0;
	bool lone = false;

	if (get_varint64(&value, offset) < 0 ||
	    get_varint64(&value, size) < 0)
		goto bad;
	if (value.n > 0 && r->version == SST_FORMAT_VERSION) {
		if (get_varint64(&value, &len) < 0 || len > UINT32_MAX)
			goto bad;
		lone = true;
	}
	if (value.n != 0)
		goto bad;
	if (lone_value != NULL)
		*lone_value = lone ? len + 1 : 0;
	return 0;
bad:
	return bt_error_set(BT_ECORRUPT,
	    "%s: bad block handle in the index block at %llu",
	    r->file->path, (unsigned long long)r->index_offset);
}

/* The block handle of an index entry's value. */
static int
sst_decode_handle(const struct sst_reader *r, struct slice value,
    uint64_t *offset, uint64_t *size)
{
	return sst_decode_index_value(r, value, offset, size, NULL);
}

/*
 * The contents of the data block at (offset, size), through the cache when
 * use_cache and the reader has one (ref then holds it), read through ra
 * when not NULL.  A block read from the file goes into the cache only
 * when fill (a compaction's reads would push out what readers use), and
 * never a raw block that a long scan reads in place from its readahead
 * window (ref then holds the window): a scan of more blocks than the
 * cache holds would only push out what readers use, and LevelDB's
 * mmap-read blocks are not cached either.
 */
static int
sst_reader_load_block_ahead(struct sst_reader *r, struct sst_readahead *ra,
    uint64_t offset, uint64_t size, bool use_cache, bool fill,
    struct sst_block_ref *ref, struct slice *contents)
{
	uint8_t key[16];
	struct cache_handle *h;
	struct buf *blk, tmp;
	int rc;

	ref->r = r;
	ref->handle = NULL;
	ref->owned = NULL;
	ref->window = NULL;
	use_cache = use_cache && r->cache != NULL;
	if (use_cache) {
		put_fixed64(key, r->file_id);
		put_fixed64(key + 8, offset);
		if ((h = cache_lookup(r->cache, slice_make(key, 16))) != NULL) {
			ref->handle = h;
			*contents = buf_slice(cache_handle_value(h));
			return 0;
		}
	}
	buf_init(&tmp);
	if ((rc = sst_reader_read_block_ahead(r, ra, "data", offset, size,
	    r->info.data_size, &tmp, ra != NULL ? &ref->window : NULL,
	    contents)) < 0) {
		buf_release(&tmp);
		return rc;
	}
	if (ref->window != NULL)
		return 0;
	if ((blk = bt_malloc(sizeof(*blk))) == NULL) {
		buf_release(&tmp);
		return -ENOMEM;
	}
	*blk = tmp;
	if (use_cache && fill) {
		/* Charge what is held.  Blocks are read and uncompressed
		 * into buffers of their exact size, so only a raw block's
		 * trailer is spare; more would be shrunk (a copy). */
		if (blk->cap > blk->n + SST_BLOCK_TRAILER_SIZE) {
			uint8_t *tight = bt_realloc(blk->p, blk->n);

			if (tight != NULL) {
				blk->p = tight;
				blk->cap = blk->n;
			}
		}
		if ((rc = cache_insert(r->cache, slice_make(key, 16), blk,
		    blk->cap, sst_block_cache_deleter, &h)) < 0)
			return rc;
		ref->handle = h;
		*contents = buf_slice(blk);
		return 0;
	}
	ref->owned = blk;
	*contents = buf_slice(blk);
	return 0;
}

static int
sst_reader_load_block(struct sst_reader *r, uint64_t offset, uint64_t size,
    bool use_cache, struct sst_block_ref *ref, struct slice *contents)
{
	return sst_reader_load_block_ahead(r, NULL, offset, size, use_cache,
	    true, ref, contents);
}

/* An iterator over the data block that an index entry's value names. */
static int
sst_reader_block_iter(struct sst_reader *r, struct slice handle,
    bool use_cache, bool fill, struct sst_block_ref *ref, struct iter **out,
    uint64_t *offsetp)
{
	struct slice contents;
	uint64_t offset, size;
	int rc;

	if ((rc = sst_decode_handle(r, handle, &offset, &size)) < 0)
		return rc;
	*offsetp = offset;
	if ((rc = sst_reader_load_block_ahead(r, NULL, offset, size,
	    use_cache, fill, ref, &contents)) < 0)
		return rc;
	if ((rc = block_iter_new(contents, sst_block_ref_release, ref,
	    out)) < 0) {
		sst_block_ref_release(ref);
		return sst_reader_block_error(r, "data", offset, rc);
	}
	return 0;
}

static int
sst_reader_index_iter(const struct sst_reader *r, struct iter **out)
{
	int rc;

	if ((rc = block_iter_new(buf_slice(&r->index), NULL, NULL, out)) < 0)
		return sst_reader_block_error(r, "index", r->index_offset, rc);
	return 0;
}

/*
 * Read and check the footer: magic, CRC, version, and that the filter,
 * index and footer follow the data blocks with no gap or overlap.
 */
static int
sst_reader_read_footer(struct sst_reader *r, uint64_t *filter_offset,
    uint64_t *filter_size, uint64_t *index_size, uint64_t *bounds_offset,
    uint64_t *bounds_size)
{
	const char *path = r->file->path;
	uint8_t f[SST_FOOTER_SIZE];
	uint64_t footer_off, index_off, filter_end, bounds_end;
	uint32_t version;
	int rc;

	if (r->file_size < SST_FOOTER_SIZE)
		return bt_error_set(BT_EFORMAT,
		    "%s: %llu bytes, too short for an SSTable", path,
		    (unsigned long long)r->file_size);
	footer_off = r->file_size - SST_FOOTER_SIZE;
	if ((rc = env_file_read_exact(r->file, footer_off, f, sizeof(f))) < 0)
		return rc;
	if (get_fixed64(f + 56) != SST_MAGIC)
		return bt_error_set(BT_EFORMAT,
		    "%s: not an SSTable (bad magic at offset %llu)", path,
		    (unsigned long long)(footer_off + 56));
	if (crc32c_unmask(get_fixed32(f + 52)) != crc32c_value(f, 52))
		return bt_error_set(BT_ECHECKSUM,
		    "%s: footer checksum mismatch at offset %llu", path,
		    (unsigned long long)footer_off);
	if ((version = get_fixed32(f + 48)) != SST_FORMAT_VERSION &&
	    version != SST_FORMAT_VERSION_3 &&
	    version != SST_FORMAT_VERSION_2 && version != SST_FORMAT_VERSION_1)
		return bt_error_set(BT_EFORMAT,
		    "%s: unknown SSTable format version %u at offset %llu",
		    path, version, (unsigned long long)(footer_off + 48));

	index_off = get_fixed64(f);
	*index_size = get_fixed64(f + 8);
	*filter_offset = get_fixed64(f + 16);
	*filter_size = get_fixed64(f + 24);
	r->info.entry_count = get_fixed64(f + 32);
	r->info.data_size = get_fixed64(f + 40);
	r->info.file_size = r->file_size;
	r->index_offset = index_off;
	r->version = version;

	filter_end = *filter_offset;
	if (*filter_size > 0)
		filter_end = *filter_offset > footer_off ||
		    *filter_size > footer_off - *filter_offset ?
		    UINT64_MAX : *filter_offset + *filter_size +
		    SST_BLOCK_TRAILER_SIZE;
	/* Version 2 and 3: the bounds block fills what lies between the
	 * filter and the index, with its trailer (at least one byte of
	 * contents). */
	*bounds_offset = filter_end;
	*bounds_size = 0;
	bounds_end = filter_end;
	if (version != SST_FORMAT_VERSION_1 && filter_end <= index_off &&
	    index_off - filter_end > SST_BLOCK_TRAILER_SIZE) {
		*bounds_size = index_off - filter_end - SST_BLOCK_TRAILER_SIZE;
		bounds_end = index_off;
	}
	if (*filter_offset != r->info.data_size || index_off != bounds_end ||
	    index_off > footer_off ||
	    *index_size > footer_off - index_off ||
	    footer_off - index_off - *index_size != SST_BLOCK_TRAILER_SIZE)
		return bt_error_set(BT_ECORRUPT,
		    "%s: footer at %llu: block handles do not tile the file",
		    path, (unsigned long long)footer_off);
	return 0;
}

/*
 * Decode the bounds block's contents (format.h) into r; a block that is
 * not complete leaves r without bounds, one without a sequence range
 * without sequences.  0 or BT_ECORRUPT.
 */
static int
sst_reader_parse_bounds(struct sst_reader *r, uint64_t offset)
{
	struct slice in = buf_slice(&r->bounds_bytes);
	uint32_t flags, count, n;
	uint64_t max_time, min_seq, max_seq;

	if (get_varint32(&in, &flags) < 0 ||
	    (flags & ~(SST_BOUNDS_COMPLETE | SST_BOUNDS_SEQUENCES |
	    SST_BOUNDS_SPLITS)) != 0 ||
	    ((flags & SST_BOUNDS_SPLITS) != 0) !=
	    (r->version >= SST_FORMAT_VERSION_3))
		goto corrupt;
	if ((flags & SST_BOUNDS_SEQUENCES) != 0) {
		if (get_varint64(&in, &min_seq) < 0 ||
		    get_varint64(&in, &max_seq) < 0 || min_seq > max_seq)
			goto corrupt;
		r->has_sequences = true;
		r->min_seq = min_seq;
		r->max_seq = max_seq;
	}
	if ((flags & SST_BOUNDS_SPLITS) != 0) {
		/* Its length is checked against the blocks once the index is
		 * (sst_reader_check_index). */
		if (get_varint32(&in, &n) < 0 || n > in.n)
			goto corrupt;
		r->has_splits = true;
		r->splits = slice_make(in.p, n);
		in.p += n;
		in.n -= n;
	}
	if ((flags & SST_BOUNDS_COMPLETE) == 0) {
		if (in.n != 0)
			goto corrupt;
		return 0;
	}
	if (get_varint64(&in, &max_time) < 0 ||
	    get_varint32(&in, &count) < 0 || count > SST_BOUNDS_MAX_COLUMNS)
		goto corrupt;
	for (uint32_t i = 0; i < count; i++) {
		if (get_varint32(&in, &n) < 0 || n > in.n)
			goto corrupt;
		r->bounds_columns[i] = slice_make(in.p, n);
		in.p += n;
		in.n -= n;
	}
	if (in.n != 0)
		goto corrupt;
	r->has_bounds = true;
	r->bounds_max_time = max_time;
	r->bounds_count = count;
	return 0;
corrupt:
	return bt_error_set(BT_ECORRUPT, "%s: bad bounds block at %llu",
	    r->file->path, (unsigned long long)offset);
}

/*
 * Index fences: a point read's binary search over the index block decodes
 * a dozen keys scattered over a block of hundreds of KiB, a cache miss or
 * two each.  Every index key starts with the bytes that the first and the
 * last share (fence_common, keys being sorted); the 8 bytes after those,
 * zero-padded and read big-endian, are the key's fence, kept in a dense
 * array.  Fences are ordered as their keys are (not strictly): a fence
 * below the target's means a key below the target, one above it a key
 * above.  So the search runs over the array, and only the entries whose
 * fence equals the target's are compared whole, through the index block's
 * restart points (one per entry; sst_reader_check_index made sure).
 */
#define SST_FENCE_SCAN	4	/* equal fences looked at before a search */

static uint64_t
sst_fence_of(struct slice key, size_t skip)
{
	uint8_t b[8] = { 0 };
	size_t n = key.n > skip ? key.n - skip : 0;

	memcpy(b, key.p + skip, n < 8 ? n : 8);
	return get_be64(b);
}

/*
 * Build the fences and the decoded handles of the n index entries (restart
 * i holding entry i).  A point read then takes its block's handle from the
 * dense handle array (one line, beside none of the index block's) rather
 * than from the index entry, whose restart offset and bytes are a miss
 * each in a large index.
 */
static int
sst_reader_fence_build(struct sst_reader *r, size_t n)
{
	struct slice first, last, key, value;
	size_t common = 0;
	int rc;

	if ((rc = block_restart_entry(buf_slice(&r->index), 0, &first,
	    &value)) < 0 ||
	    (rc = block_restart_entry(buf_slice(&r->index), (uint32_t)(n - 1),
	    &last, &value)) < 0)
		return rc;
	while (common < first.n && common < last.n &&
	    first.p[common] == last.p[common])
		common++;
	if ((r->fence = bt_malloc(n * sizeof(*r->fence))) == NULL)
		return -ENOMEM;
	if ((r->handle = bt_malloc(n * sizeof(*r->handle))) == NULL) {
		rc = -ENOMEM;
		goto out_fence;
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t offset, size, lone_value;

		if ((rc = block_restart_entry(buf_slice(&r->index),
		    (uint32_t)i, &key, &value)) < 0 ||
		    (rc = sst_decode_index_value(r, value, &offset, &size,
		    &lone_value)) < 0)
			goto out_handle;
		r->handle[i].offset = offset;
		r->handle[i].size = size;	/* within the file (checked) */
		r->handle[i].lone = lone_value != 0;
		r->fence[i] = sst_fence_of(key, common);
	}
	r->fence_n = n;
	r->fence_common = slice_make(first.p, common);
	return 0;
out_handle:
	bt_free(r->handle);
	r->handle = NULL;
out_fence:
	bt_free(r->fence);
	r->fence = NULL;
	return rc;
}

/*
 * The first index entry whose key is >= target (fence_n if none), as a
 * seek of the index block finds it, through the fences.  0 or BT_ECORRUPT.
 */
static int
sst_index_seek(const struct sst_reader *r, struct slice target, size_t *out)
{
	struct slice common = r->fence_common, key, value;
	size_t m = target.n < common.n ? target.n : common.n;
	size_t lo = 0, hi = r->fence_n, mid;
	uint64_t t;
	int c, rc;

	c = m > 0 ? memcmp(target.p, common.p, m) : 0;
	if (c < 0 || (c == 0 && target.n < common.n)) {
		*out = 0;		/* below every key */
		return 0;
	}
	if (c > 0) {
		*out = r->fence_n;	/* above every key */
		return 0;
	}
	t = sst_fence_of(target, common.n);
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (r->fence[mid] < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* [lo, hi): the fences equal to t, usually one or none; whole keys
	 * decide among them (a binary search again: many keys may share
	 * their 8 bytes after the common part). */
	for (hi = lo; hi < r->fence_n && r->fence[hi] == t &&
	    hi - lo < SST_FENCE_SCAN; hi++)
		;
	if (hi - lo == SST_FENCE_SCAN) {
		size_t a = hi, b = r->fence_n;

		while (a < b) {
			mid = a + (b - a) / 2;
			if (r->fence[mid] == t)
				a = mid + 1;
			else
				b = mid;
		}
		hi = a;
	}
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if ((rc = block_restart_entry(buf_slice(&r->index),
		    (uint32_t)mid, &key, &value)) < 0)
			return rc;
		if (slice_compare(key, target) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*out = lo;
	return 0;
}

/* Whether map is a splits map for a table of blocks data blocks:
 * ceil(blocks / 8) bytes, no bit set from the last block's on. */
static bool
sst_splits_fit(struct slice map, uint64_t blocks)
{
	if (map.n != (blocks + 7) / 8)
		return false;
	for (uint64_t i = blocks > 0 ? blocks - 1 : 0; i < map.n * 8; i++)
		if (map.p[i / 8] & (1u << (i % 8)))
			return false;
	return true;
}

/* Whether data block i + 1 may start with the filter key that block i
 * ends with: always, unless the table has a splits map. */
static bool
sst_reader_split_after(const struct sst_reader *r, size_t i)
{
	if (!r->has_splits)
		return true;
	return (r->splits.p[i / 8] & (1u << (i % 8))) != 0;
}

/*
 * Walk the index once: every handle must decode, data blocks must follow
 * each other from offset 0 to data_size, and keys must increase.  Counts
 * the blocks.  If every entry is also at its own restart point (the
 * format's restart interval 1 for the index), builds the fences.
 */
static int
sst_reader_check_index(struct sst_reader *r)
{
	const char *path = r->file->path;
	struct iter *it;
	struct buf prev;
	struct slice rkey, rvalue;
	uint64_t expect = 0, offset, size, blocks = 0;
	bool restart_each = true;
	int rc;

	buf_init(&prev);
	if ((rc = sst_reader_index_iter(r, &it)) < 0)
		goto out;
	for (rc = iter_seek_first(it); rc == 0 && iter_valid(it);
	    rc = iter_next(it)) {
		if ((rc = sst_decode_handle(r, iter_value(it), &offset,
		    &size)) < 0)
			goto out_iter;
		if (offset != expect || size > r->info.data_size - offset ||
		    r->info.data_size - offset - size < SST_BLOCK_TRAILER_SIZE) {
			rc = bt_error_set(BT_ECORRUPT,
			    "%s: index block at %llu: handle %llu (%llu, %llu) "
			    "does not follow the previous block", path,
			    (unsigned long long)r->index_offset,
			    (unsigned long long)blocks,
			    (unsigned long long)offset,
			    (unsigned long long)size);
			goto out_iter;
		}
		if (blocks > 0 &&
		    slice_compare(iter_key(it), buf_slice(&prev)) <= 0) {
			rc = bt_error_set(BT_ECORRUPT,
			    "%s: index block at %llu: keys out of order at "
			    "entry %llu", path,
			    (unsigned long long)r->index_offset,
			    (unsigned long long)blocks);
			goto out_iter;
		}
		if ((rc = buf_set(&prev, iter_key(it).p, iter_key(it).n)) < 0)
			goto out_iter;
		if (restart_each && (blocks >= UINT32_MAX ||
		    block_restart_entry(buf_slice(&r->index),
		    (uint32_t)blocks, &rkey, &rvalue) != 0 ||
		    !slice_equal(rkey, iter_key(it)) ||
		    !slice_equal(rvalue, iter_value(it))))
			restart_each = false;
		expect = offset + size + SST_BLOCK_TRAILER_SIZE;
		blocks++;
	}
	if (rc < 0) {
		rc = sst_reader_block_error(r, "index", r->index_offset, rc);
		goto out_iter;
	}
	if (expect != r->info.data_size || blocks > r->info.entry_count ||
	    (blocks == 0 && r->info.entry_count != 0)) {
		rc = bt_error_set(BT_ECORRUPT,
		    "%s: index block at %llu: %llu blocks do not cover the "
		    "%llu data bytes and %llu entries", path,
		    (unsigned long long)r->index_offset,
		    (unsigned long long)blocks,
		    (unsigned long long)r->info.data_size,
		    (unsigned long long)r->info.entry_count);
		goto out_iter;
	}
	r->info.block_count = blocks;
	if (r->has_splits && !sst_splits_fit(r->splits, blocks)) {
		rc = bt_error_set(BT_ECORRUPT,
		    "%s: bounds block: a splits map of %zu bytes for %llu "
		    "blocks", path, r->splits.n, (unsigned long long)blocks);
		goto out_iter;
	}
	rc = 0;
	if (restart_each && blocks > 0 && blocks < UINT32_MAX &&
	    block_restart_entry(buf_slice(&r->index), (uint32_t)blocks,
	    &rkey, &rvalue) == BT_NOTFOUND)
		rc = sst_reader_fence_build(r, (size_t)blocks);
	if (rc < 0)
		rc = sst_reader_block_error(r, "index", r->index_offset, rc);
out_iter:
	iter_free(it);
out:
	buf_release(&prev);
	return rc;
}

int
sst_reader_open(struct env *env, const char *path, uint64_t file_id,
    struct cache *cache, size_t (*filter_prefix)(struct slice key),
    struct sst_reader **out)
{
	struct sst_reader *r;
	uint64_t filter_offset = 0, filter_size = 0, index_size = 0;
	uint64_t bounds_offset = 0, bounds_size = 0;
	uint64_t footer_off;
	int rc;

	if ((r = bt_calloc(1, sizeof(*r))) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	atomic_init(&r->refs, 1);
	atomic_init(&r->filter_negatives, 0);
	atomic_init(&r->block_reads, 0);
	r->file_id = file_id;
	r->cache = cache;
	r->filter_prefix = filter_prefix;
	buf_init(&r->index);
	buf_init(&r->filter);
	buf_init(&r->bounds_bytes);
	if ((rc = env_file_open(env, path, ENV_READ, &r->file)) < 0)
		goto out_free;
	if ((rc = env_file_size(r->file, &r->file_size)) < 0)
		goto out_close;
	if ((rc = sst_reader_read_footer(r, &filter_offset, &filter_size,
	    &index_size, &bounds_offset, &bounds_size)) < 0)
		goto out_close;
	if (bounds_size > 0 && ((rc = sst_reader_read_block(r, "bounds",
	    bounds_offset, bounds_size, r->index_offset,
	    &r->bounds_bytes)) < 0 ||
	    (rc = sst_reader_parse_bounds(r, bounds_offset)) < 0))
		goto out_close;
	footer_off = r->file_size - SST_FOOTER_SIZE;
	if ((rc = sst_reader_read_block(r, "index", r->index_offset,
	    index_size, footer_off, &r->index)) < 0)
		goto out_close;
	if (filter_size > 0 && (rc = sst_reader_read_block(r, "filter",
	    filter_offset, filter_size, r->index_offset, &r->filter)) < 0)
		goto out_close;
	if ((rc = sst_reader_check_index(r)) < 0)
		goto out_close;
	atomic_store(&r->block_reads, 0);
	*out = r;
	return 0;
out_close:
	(void)env_file_close(r->file);
out_free:
	bt_free(r->fence);
	bt_free(r->handle);
	buf_release(&r->index);
	buf_release(&r->filter);
	buf_release(&r->bounds_bytes);
	bt_free(r);
out:
	return rc;
}

void
sst_reader_ref(struct sst_reader *r)
{
	atomic_fetch_add_explicit(&r->refs, 1, memory_order_relaxed);
}

void
sst_reader_unref(struct sst_reader *r)
{
	if (r == NULL ||
	    atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) != 1)
		return;
	(void)env_file_close(r->file);
	bt_free(r->fence);
	bt_free(r->handle);
	buf_release(&r->index);
	buf_release(&r->filter);
	buf_release(&r->bounds_bytes);
	bt_free(r);
}

void
sst_reader_get_info(const struct sst_reader *r, struct sst_info *info)
{
	*info = r->info;
}

bool
sst_reader_bounds(const struct sst_reader *r, size_t *column_count,
    uint64_t *max_time)
{
	if (!r->has_bounds)
		return false;
	*column_count = r->bounds_count;
	*max_time = r->bounds_max_time;
	return true;
}

struct slice
sst_reader_bounds_column(const struct sst_reader *r, size_t i)
{
	return r->bounds_columns[i];
}

bool
sst_reader_sequences(const struct sst_reader *r, uint64_t *min_seq,
    uint64_t *max_seq)
{
	if (!r->has_sequences)
		return false;
	*min_seq = r->min_seq;
	*max_seq = r->max_seq;
	return true;
}

bool
sst_reader_may_contain(const struct sst_reader *r, struct slice prefix)
{
	if (r->filter.n == 0)
		return true;
	return bloom_may_contain(buf_slice(&r->filter), bloom_hash(prefix));
}

bool
sst_reader_may_contain_hash(const struct sst_reader *r, uint64_t hash)
{
	if (r->filter.n == 0)
		return true;
	return bloom_may_contain(buf_slice(&r->filter), hash);
}

/* The part of key the filter holds. */
static struct slice
sst_reader_filter_key(const struct sst_reader *r, struct slice key)
{
	if (r->filter_prefix != NULL) {
		size_t n = r->filter_prefix(key);

		if (n < key.n)
			key.n = n;
	}
	return key;
}

int
sst_reader_get(struct sst_reader *r, struct slice key, struct buf *value)
{
	struct sst_block_ref ref;
	struct iter *index_it, *data_it;
	uint64_t offset;
	int rc;

	if (!sst_reader_may_contain(r, sst_reader_filter_key(r, key))) {
		atomic_fetch_add_explicit(&r->filter_negatives, 1,
		    memory_order_relaxed);
		return BT_NOTFOUND;
	}
	if ((rc = sst_reader_index_iter(r, &index_it)) < 0)
		goto out;
	if ((rc = iter_seek(index_it, key)) < 0) {
		rc = sst_reader_block_error(r, "index", r->index_offset, rc);
		goto out_index;
	}
	if (!iter_valid(index_it)) {
		rc = BT_NOTFOUND;
		goto out_index;
	}
	if ((rc = sst_reader_block_iter(r, iter_value(index_it), true, true,
	    &ref,
	    &data_it, &offset)) < 0)
		goto out_index;
	if ((rc = iter_seek(data_it, key)) < 0)
		rc = sst_reader_block_error(r, "data", offset, rc);
	else if (!iter_valid(data_it) || !slice_equal(iter_key(data_it), key))
		rc = BT_NOTFOUND;
	else
		rc = buf_set(value, iter_value(data_it).p,
		    iter_value(data_it).n);
	iter_free(data_it);
out_index:
	iter_free(index_it);
out:
	return rc;
}

/* The state of one sst_reader_visit_prefix() walk. */
struct sst_prefix_walk {
	struct sst_reader *r;
	struct slice prefix;
	struct buf *data_key;
	int (*visit)(void *arg, struct slice key, struct slice value);
	void *arg;
	uint64_t offset;	/* of the data block being walked */
	struct sst_pins *pins;	/* or NULL */
	/* Whether the caller wants the value of key (NULL: every value). */
	bool (*want_value)(void *arg, struct slice key);
	bool stopped;		/* a key past the prefix, or visit stopped */
	int visit_rc;		/* visit's own stopping value or error */
	bool failed;		/* a data block failed (detail set) */
	bool visited;		/* visit saw an entry of this block */
};

void
sst_pins_init(struct sst_pins *p)
{
	p->refs = p->inline_refs;
	p->count = 0;
	p->cap = SST_PINS_INLINE;
	p->bytes = 0;
}

void
sst_pins_release(struct sst_pins *p)
{
	for (size_t i = 0; i < p->count; i++)
		sst_block_ref_release(&p->refs[i]);
	if (p->refs != p->inline_refs)
		bt_free(p->refs);
	sst_pins_init(p);
}

/* Keep ref in p; on failure ref is released. */
static int
sst_pins_add(struct sst_pins *p, struct sst_block_ref *ref)
{
	if (p->count == p->cap) {
		size_t cap = p->cap * 2;
		struct sst_block_ref *n;

		if (p->refs == p->inline_refs) {
			if ((n = bt_malloc(cap * sizeof(*n))) != NULL)
				memcpy(n, p->refs, p->count * sizeof(*n));
		} else {
			n = bt_realloc(p->refs, cap * sizeof(*n));
		}
		if (n == NULL) {
			sst_block_ref_release(ref);
			return -ENOMEM;
		}
		p->refs = n;
		p->cap = cap;
	}
	p->refs[p->count++] = *ref;
	return 0;
}

static int
sst_prefix_data_entry(void *arg, struct slice key, struct slice value)
{
	struct sst_prefix_walk *w = arg;
	int rc;

	if (!slice_starts_with(key, w->prefix)) {
		w->stopped = true;
		return 1;
	}
	w->visited = true;
	if ((rc = w->visit(w->arg, key, value)) != 0) {
		w->stopped = true;
		w->visit_rc = rc;
	}
	return rc;
}

/* Walk the data block at (offset, size) from the prefix on. */
static int
sst_prefix_block(struct sst_prefix_walk *w, uint64_t offset, uint64_t size)
{
	struct sst_block_ref ref;
	struct slice contents;
	int rc;

	w->offset = offset;
	if ((rc = sst_reader_load_block(w->r, offset, size, true, &ref,
	    &contents)) < 0) {
		w->failed = true;
		return rc;
	}
	w->visited = false;
	if (w->pins != NULL)
		w->pins->bytes += contents.n;
	rc = block_visit_from(contents, w->prefix, w->data_key,
	    sst_prefix_data_entry, w);
	if (w->pins != NULL && w->visited) {
		if (sst_pins_add(w->pins, &ref) < 0) {
			w->failed = true;
			w->stopped = false;
			return -ENOMEM;
		}
	} else {
		sst_block_ref_release(&ref);
	}
	if (w->stopped)
		return w->visit_rc < 0 ? w->visit_rc : 1;
	if (rc < 0) {
		w->failed = true;
		return sst_reader_block_error(w->r, "data", w->offset, rc);
	}
	return 0;
}

/*
 * One index entry: walk its data block from the prefix on.  A one-entry
 * block's entry is the index entry's key: past the prefix, the walk ends
 * without reading the block; and when the caller does not want its value
 * (want_value), it is visited from the index entry alone (the key, and
 * the value's length with no bytes: {NULL, length}).  That spares reading
 * a block as large as its value.
 */
static int
sst_prefix_index_entry(void *arg, struct slice key, struct slice value)
{
	struct sst_prefix_walk *w = arg;
	uint64_t offset, size, lone_value;
	int rc;

	if ((rc = sst_decode_index_value(w->r, value, &offset, &size,
	    &lone_value)) < 0) {
		w->failed = true;
		return rc;
	}
	if (lone_value == 0 || (slice_starts_with(key, w->prefix) &&
	    (w->want_value == NULL || w->want_value(w->arg, key))))
		return sst_prefix_block(w, offset, size);
	w->offset = offset;
	w->visited = false;
	/* The walk's last key, as a block's walk leaves it. */
	if ((rc = buf_set(w->data_key, key.p, key.n)) < 0) {
		w->failed = true;
		return rc;
	}
	(void)sst_prefix_data_entry(w, key, slice_make(NULL, lone_value - 1));
	if (w->stopped)
		return w->visit_rc < 0 ? w->visit_rc : 1;
	return 0;
}

/* The walk of index entry i, through the fences' decoded handles (a
 * one-entry block's through its index entry). */
static int
sst_prefix_fence(struct sst_prefix_walk *w, size_t i)
{
	struct slice key, value;
	int rc;

	if (!w->r->handle[i].lone)
		return sst_prefix_block(w, w->r->handle[i].offset,
		    w->r->handle[i].size);
	/* Every entry was decoded once when the fences were built. */
	if ((rc = block_restart_entry(buf_slice(&w->r->index), (uint32_t)i,
	    &key, &value)) < 0)
		return rc;
	return sst_prefix_index_entry(w, key, value);
}

int
sst_reader_visit_prefix(struct sst_reader *r, struct slice prefix,
    bool (*want_value)(void *arg, struct slice key), struct buf *index_key,
    struct buf *data_key, struct sst_pins *pins,
    int (*visit)(void *arg, struct slice key, struct slice value), void *arg)
{
	struct sst_prefix_walk w = { r, prefix, data_key, visit, arg, 0,
	    pins, want_value, false, 0, false, false };
	size_t i;
	int rc;

	if (r->fence == NULL) {
		rc = block_visit_from(buf_slice(&r->index), prefix, index_key,
		    sst_prefix_index_entry, &w);
	} else if ((rc = sst_index_seek(r, prefix, &i)) == 0) {
		for (; i < r->fence_n; i++) {
			if ((rc = sst_prefix_fence(&w, i)) != 0)
				break;
			/* The walk reached the block's end inside the prefix,
			 * its last key L in data_key.  When the next block
			 * does not start with L's filter key, a prefix of the
			 * prefix (L starts with it), no key there has the
			 * prefix: no need to read the block to see that. */
			if (w.visited && !sst_reader_split_after(r, i) &&
			    sst_reader_filter_key(r,
			    buf_slice(data_key)).n <= prefix.n)
				break;
		}
	}
	if (w.stopped)
		return w.visit_rc < 0 ? w.visit_rc : 0;
	if (rc < 0 && !w.failed)
		return sst_reader_block_error(r, "index", r->index_offset, rc);
	return rc < 0 ? rc : 0;
}

/*
 * A scan that lends values (iter_pin()) keeps the blocks of one epoch
 * alive, the ones it moved off included, up to this many bytes of blocks;
 * past it, pins are refused and the reader copies.  A first pin always
 * succeeds, however large its block: it holds no more than a copy of the
 * value.  A block read in place from a readahead window keeps the window
 * (at most SST_READAHEAD_MAX, or the block) alive; the blocks of one epoch
 * are consecutive, so they hold only the few windows they span.
 */
#define SST_ITER_PIN_LIMIT	((uint64_t)1 << 20)

/* The two-level iterator: index entries name data blocks. */
struct sst_iter {
	struct iter base;
	struct sst_reader *r;
	struct iter *index_it;
	struct iter *data_it;		/* NULL when not on a block */
	struct sst_block_ref ref;	/* keeps data_it's block alive */
	uint64_t block_offset;
	size_t block_size;		/* data_it's contents */
	struct sst_readahead ra;	/* for blocks read in sequence */
	bool fill_cache;		/* blocks read go into the cache */
	/* SST_ITER_KEYS_ONLY: a block that holds one entry, whose value
	 * length the index gives, is not read (data_it is then NULL); its
	 * entry is the index entry's key with a value of lone_n bytes and
	 * no contents, current while lone_valid. */
	bool keys_only;
	bool on_lone, lone_valid;
	uint64_t lone_n;
	bool block_pinned;		/* ref goes to kept when left */
	struct sst_block_ref *kept;	/* pinned blocks moved off */
	size_t kept_n, kept_cap;
	uint64_t pinned_bytes;		/* kept's and a pinned ref's */
	uint64_t pin_epoch;		/* of every pin held */
};

/* Leaving the current block: a pinned one joins kept (pinning made room)
 * and ref is emptied, so that the block iterator's release is a no-op. */
static void
sst_iter_keep_block(struct sst_iter *it)
{
	if (!it->block_pinned)
		return;
	it->kept[it->kept_n++] = it->ref;
	it->ref.handle = NULL;
	it->ref.owned = NULL;
	it->ref.window = NULL;
	it->block_pinned = false;
}

static void
sst_iter_drop_block(struct sst_iter *it)
{
	sst_iter_keep_block(it);
	iter_free(it->data_it);
	it->data_it = NULL;
	it->on_lone = false;
}

/*
 * Open the data block the index iterator is on (none when it is invalid).
 * Moving on from a block, the block iterator is pointed at the next one
 * rather than made anew.
 */
static int
sst_iter_load_block(struct sst_iter *it)
{
	struct sst_block_ref fresh;
	struct slice contents;
	uint64_t offset, size, lone_value;
	int rc;

	if (!iter_valid(it->index_it)) {
		sst_iter_drop_block(it);
		return 0;
	}
	/* The block left is given back first (its iterator is reset or
	 * freed below, before it reads again), so that a readahead window
	 * no block holds any more is read into again, not made anew. */
	sst_iter_keep_block(it);
	sst_block_ref_release(&it->ref);
	if ((rc = sst_decode_index_value(it->r, iter_value(it->index_it),
	    &offset, &size, &lone_value)) < 0) {
		sst_iter_drop_block(it);
		return rc;
	}
	if (it->keys_only && lone_value != 0) {
		sst_iter_drop_block(it);
		it->on_lone = true;
		it->lone_valid = false;
		it->lone_n = lone_value - 1;
		it->block_offset = offset;
		return 0;
	}
	it->on_lone = false;
	if ((rc = sst_reader_load_block_ahead(it->r, &it->ra, offset, size,
	    true, it->fill_cache, &fresh, &contents)) < 0) {
		sst_iter_drop_block(it);
		return rc;
	}
	it->block_offset = offset;
	it->block_size = contents.n;
	if (it->data_it == NULL) {
		it->ref = fresh;
		if ((rc = block_iter_new(contents, sst_block_ref_release,
		    &it->ref, &it->data_it)) < 0) {
			sst_block_ref_release(&it->ref);
			return sst_reader_block_error(it->r, "data", offset,
			    rc);
		}
		return 0;
	}
	/* The reset gives back the old block (it->ref) before the new one
	 * takes its place. */
	if ((rc = block_iter_reset(it->data_it, contents,
	    sst_block_ref_release, &it->ref)) < 0) {
		sst_block_ref_release(&fresh);
		sst_iter_drop_block(it);
		return sst_reader_block_error(it->r, "data", offset, rc);
	}
	it->ref = fresh;
	return 0;
}

/* Position inside the block just loaded: on its first entry with key >=
 * *target (target NULL: on its first). */
static int
sst_iter_block_seek(struct sst_iter *it, const struct slice *target)
{
	int rc;

	if (it->on_lone) {
		/* The index entry's key, its block's only one. */
		it->lone_valid = target == NULL ||
		    slice_compare(iter_key(it->index_it), *target) >= 0;
		return 0;
	}
	if (it->data_it == NULL)
		return 0;
	rc = target == NULL ? iter_seek_first(it->data_it) :
	    iter_seek(it->data_it, *target);
	return rc < 0 ? sst_reader_block_error(it->r, "data",
	    it->block_offset, rc) : 0;
}

/* Whether the iterator ran off the block it is on. */
static bool
sst_iter_block_done(const struct sst_iter *it)
{
	if (it->on_lone)
		return !it->lone_valid;
	return it->data_it != NULL && !iter_valid(it->data_it);
}

/* After the iterator ran off its block, move to the next non-empty one. */
static int
sst_iter_skip_forward(struct sst_iter *it)
{
	int rc;

	while (sst_iter_block_done(it)) {
		if ((rc = iter_next(it->index_it)) < 0)
			return sst_reader_block_error(it->r, "index",
			    it->r->index_offset, rc);
		if ((rc = sst_iter_load_block(it)) < 0 ||
		    (rc = sst_iter_block_seek(it, NULL)) < 0)
			return rc;
	}
	return 0;
}

/* Any error leaves the iterator invalid. */
static int
sst_iter_fail(struct sst_iter *it, int rc)
{
	if (rc < 0)
		sst_iter_drop_block(it);
	return rc;
}

static int
sst_iter_seek_first(struct iter *base)
{
	struct sst_iter *it = (struct sst_iter *)base;
	int rc;

	sst_iter_drop_block(it);
	if ((rc = iter_seek_first(it->index_it)) < 0)
		return sst_iter_fail(it, sst_reader_block_error(it->r,
		    "index", it->r->index_offset, rc));
	if ((rc = sst_iter_load_block(it)) < 0 ||
	    (rc = sst_iter_block_seek(it, NULL)) < 0)
		return sst_iter_fail(it, rc);
	return sst_iter_fail(it, sst_iter_skip_forward(it));
}

static int
sst_iter_seek(struct iter *base, struct slice target)
{
	struct sst_iter *it = (struct sst_iter *)base;
	int rc;

	sst_iter_drop_block(it);
	if ((rc = iter_seek(it->index_it, target)) < 0)
		return sst_iter_fail(it, sst_reader_block_error(it->r,
		    "index", it->r->index_offset, rc));
	if ((rc = sst_iter_load_block(it)) < 0 ||
	    (rc = sst_iter_block_seek(it, &target)) < 0)
		return sst_iter_fail(it, rc);
	return sst_iter_fail(it, sst_iter_skip_forward(it));
}

static int
sst_iter_next(struct iter *base)
{
	struct sst_iter *it = (struct sst_iter *)base;
	int rc;

	if (it->on_lone) {
		it->lone_valid = false;
		return sst_iter_fail(it, sst_iter_skip_forward(it));
	}
	if (it->data_it == NULL)
		return 0;
	if ((rc = iter_next(it->data_it)) < 0)
		return sst_iter_fail(it, sst_reader_block_error(it->r, "data",
		    it->block_offset, rc));
	return sst_iter_fail(it, sst_iter_skip_forward(it));
}

static bool
sst_iter_valid(const struct iter *base)
{
	const struct sst_iter *it = (const struct sst_iter *)base;

	if (it->on_lone)
		return it->lone_valid;
	return it->data_it != NULL && iter_valid(it->data_it);
}

static struct slice
sst_iter_key(const struct iter *base)
{
	const struct sst_iter *it = (const struct sst_iter *)base;

	return iter_key(it->on_lone ? it->index_it : it->data_it);
}

static struct slice
sst_iter_value(const struct iter *base)
{
	const struct sst_iter *it = (const struct sst_iter *)base;

	if (it->on_lone)
		return slice_make(NULL, (size_t)it->lone_n);
	return iter_value(it->data_it);
}

/* Give back every pin (the current block stays, unpinned). */
static void
sst_iter_unpin(struct sst_iter *it)
{
	for (size_t i = 0; i < it->kept_n; i++)
		sst_block_ref_release(&it->kept[i]);
	it->kept_n = 0;
	it->block_pinned = false;
	it->pinned_bytes = 0;
}

/*
 * Pin the current block: it goes to kept when the iterator moves off it,
 * until a pin of a later epoch.  Room in kept is made here so that moving
 * off cannot fail.
 */
static int
sst_iter_pin(struct iter *base, uint64_t epoch)
{
	struct sst_iter *it = (struct sst_iter *)base;

	if (it->on_lone)
		return 0;	/* a value with no contents stays valid */
	if (epoch != it->pin_epoch) {
		if (it->kept_n > 0)
			sst_iter_unpin(it);
		it->block_pinned = false;
		it->pinned_bytes = 0;
		it->pin_epoch = epoch;
	} else if (it->block_pinned) {
		return 0;
	}
	if (it->pinned_bytes > 0 &&
	    it->block_size > SST_ITER_PIN_LIMIT - it->pinned_bytes)
		return 1;
	if (it->kept_n == it->kept_cap) {
		size_t cap = it->kept_cap ? it->kept_cap * 2 : 8;
		struct sst_block_ref *n = bt_realloc(it->kept,
		    cap * sizeof(*n));

		if (n == NULL)
			return -ENOMEM;
		it->kept = n;
		it->kept_cap = cap;
	}
	it->block_pinned = true;
	it->pinned_bytes += it->block_size;
	return 0;
}

static void
sst_iter_free(struct iter *base)
{
	struct sst_iter *it = (struct sst_iter *)base;

	sst_iter_drop_block(it);
	sst_iter_unpin(it);
	bt_free(it->kept);
	iter_free(it->index_it);
	sst_readahead_release(&it->ra);
	sst_reader_unref(it->r);
	bt_free(it);
}

static const struct iter_ops sst_iter_ops = {
	.seek_first = sst_iter_seek_first,
	.seek = sst_iter_seek,
	.next = sst_iter_next,
	.valid = sst_iter_valid,
	.key = sst_iter_key,
	.value = sst_iter_value,
	.free = sst_iter_free,
	.pin = sst_iter_pin,
};

int
sst_reader_iter_new(struct sst_reader *r, unsigned flags, struct iter **out)
{
	struct sst_iter *it;
	int rc;

	if ((it = bt_calloc(1, sizeof(*it))) == NULL)
		return -ENOMEM;
	it->base.ops = &sst_iter_ops;
	it->r = r;
	it->fill_cache = (flags & SST_ITER_NO_CACHE_FILL) == 0;
	it->keys_only = (flags & SST_ITER_KEYS_ONLY) != 0;
	sst_readahead_init(&it->ra);
	if ((rc = sst_reader_index_iter(r, &it->index_it)) < 0) {
		bt_free(it);
		return rc;
	}
	sst_reader_ref(r);
	*out = &it->base;
	return 0;
}

/*
 * Check one data block read straight from the file: its entries decode,
 * keys keep increasing from *prev, its last key is the index key, a value
 * length the index gives is its one entry's, and the filter holds every
 * key.  Adds its entries to *entries.
 */
static int
sst_reader_verify_block(struct sst_reader *r, struct slice index_key,
    struct slice handle, uint64_t block, struct buf *prev,
    uint64_t *entries)
{
	const char *path = r->file->path;
	struct sst_block_ref ref;
	struct iter *it;
	uint64_t offset, size, lone_value, last_value_n = 0, n = 0;
	int rc;

	if ((rc = sst_decode_index_value(r, handle, &offset, &size,
	    &lone_value)) < 0 ||
	    (rc = sst_reader_block_iter(r, handle, false, false, &ref, &it,
	    &offset)) < 0)
		return rc;
	for (rc = iter_seek_first(it); rc == 0 && iter_valid(it);
	    rc = iter_next(it)) {
		struct slice key = iter_key(it);

		if ((*entries > 0 || n > 0) &&
		    slice_compare(key, buf_slice(prev)) <= 0) {
			rc = bt_error_set(BT_ECORRUPT,
			    "%s: data block at %llu: key %llu out of order",
			    path, (unsigned long long)offset,
			    (unsigned long long)n);
			goto out;
		}
		/* A boundary the splits map wrongly leaves unmarked would
		 * cut a point read's row short. */
		if (n == 0 && block > 0 &&
		    !sst_reader_split_after(r, (size_t)block - 1) &&
		    slice_starts_with(key, sst_reader_filter_key(r,
		    buf_slice(prev)))) {
			rc = bt_error_set(BT_ECORRUPT,
			    "%s: data block at %llu: continues the row of "
			    "the block before, which the splits map does not "
			    "say", path, (unsigned long long)offset);
			goto out;
		}
		if (!sst_reader_may_contain(r, sst_reader_filter_key(r,
		    key))) {
			rc = bt_error_set(BT_ECORRUPT,
			    "%s: data block at %llu: key %llu missing from "
			    "the filter", path, (unsigned long long)offset,
			    (unsigned long long)n);
			goto out;
		}
		if ((rc = buf_set(prev, key.p, key.n)) < 0)
			goto out;
		last_value_n = iter_value(it).n;
		n++;
	}
	if (rc < 0) {
		rc = sst_reader_block_error(r, "data", offset, rc);
		goto out;
	}
	if (n == 0 || !slice_equal(buf_slice(prev), index_key)) {
		rc = bt_error_set(BT_ECORRUPT,
		    "%s: data block at %llu: last key differs from the index",
		    path, (unsigned long long)offset);
		goto out;
	}
	if (lone_value != 0 && (n != 1 || lone_value - 1 != last_value_n)) {
		rc = bt_error_set(BT_ECORRUPT,
		    "%s: data block at %llu: the index gives a value length "
		    "its entries do not have", path,
		    (unsigned long long)offset);
		goto out;
	}
	*entries += n;
out:
	iter_free(it);
	return rc;
}

int
sst_reader_verify(struct sst_reader *r)
{
	struct iter *index_it;
	struct buf prev;
	uint64_t entries = 0, block = 0;
	int rc;

	buf_init(&prev);
	if ((rc = sst_reader_index_iter(r, &index_it)) < 0)
		goto out;
	for (rc = iter_seek_first(index_it); rc == 0 && iter_valid(index_it);
	    rc = iter_next(index_it), block++)
		if ((rc = sst_reader_verify_block(r, iter_key(index_it),
		    iter_value(index_it), block, &prev, &entries)) < 0)
			goto out_index;
	if (rc < 0) {
		rc = sst_reader_block_error(r, "index", r->index_offset, rc);
		goto out_index;
	}
	if (entries != r->info.entry_count)
		rc = bt_error_set(BT_ECORRUPT,
		    "%s: %llu entries in the data blocks, the footer says %llu",
		    r->file->path, (unsigned long long)entries,
		    (unsigned long long)r->info.entry_count);
out_index:
	iter_free(index_it);
out:
	buf_release(&prev);
	return rc;
}

void
sst_reader_get_stats(const struct sst_reader *r,
    struct sst_reader_stats *out)
{
	out->filter_negatives = atomic_load_explicit(
	    (atomic_uint_fast64_t *)&r->filter_negatives,
	    memory_order_relaxed);
	out->block_reads = atomic_load_explicit(
	    (atomic_uint_fast64_t *)&r->block_reads, memory_order_relaxed);
}

/* ---- Row ranges: sizes and split points for tablets ---- */

/*
 * Walk the data blocks that may hold keys in [lo, hi) (empty hi: no upper
 * bound).  Block i holds the keys in (last key of block i-1, last key of
 * block i], so it meets the range when its last key is >= lo and the
 * previous block's last key is < hi.  visit() sees each such block's index
 * key and stored size, in order; a non-zero return stops the walk.
 */
static int
sst_reader_range_walk(const struct sst_reader *r, struct slice lo,
    struct slice hi,
    int (*visit)(void *arg, struct slice last_key, uint64_t size), void *arg)
{
	struct iter *it;
	struct buf prev;
	bool first = true;
	int rc;

	buf_init(&prev);
	if ((rc = sst_reader_index_iter(r, &it)) < 0)
		goto out;
	for (rc = lo.n > 0 ? iter_seek(it, lo) : iter_seek_first(it);
	    rc == 0 && iter_valid(it); rc = iter_next(it)) {
		uint64_t offset, size;

		if (!first && hi.n > 0 &&
		    slice_compare(buf_slice(&prev), hi) >= 0)
			break;
		if ((rc = sst_decode_handle(r, iter_value(it), &offset,
		    &size)) < 0)
			break;
		if ((rc = visit(arg, iter_key(it), size)) != 0)
			break;
		if ((rc = buf_set(&prev, iter_key(it).p,
		    iter_key(it).n)) < 0)
			break;
		first = false;
	}
	if (rc > 0)
		rc = 0;
	iter_free(it);
out:
	buf_release(&prev);
	return rc;
}

static int
sst_range_add_size(void *arg, struct slice last_key, uint64_t size)
{
	(void)last_key;
	*(uint64_t *)arg += size + SST_BLOCK_TRAILER_SIZE;
	return 0;
}

uint64_t
sst_reader_range_size(const struct sst_reader *r, struct slice lo,
    struct slice hi)
{
	uint64_t total = 0;

	if (lo.n == 0 && hi.n == 0)
		return r->info.data_size;
	if (sst_reader_range_walk(r, lo, hi, sst_range_add_size, &total) < 0)
		return 0;
	return total;
}

struct sst_range_count {
	uint64_t blocks;
	uint64_t stop_at;	/* UINT64_MAX: count only */
	struct buf *key;
};

static int
sst_range_pick(void *arg, struct slice last_key, uint64_t size)
{
	struct sst_range_count *c = arg;
	int rc;

	(void)size;
	if (c->blocks++ < c->stop_at)
		return 0;
	if ((rc = buf_set(c->key, last_key.p, last_key.n)) < 0)
		return rc;
	return 1;
}

int
sst_reader_middle_key(const struct sst_reader *r, struct slice lo,
    struct slice hi, struct buf *out)
{
	struct sst_range_count c = { 0, UINT64_MAX, out };
	int rc;

	if ((rc = sst_reader_range_walk(r, lo, hi, sst_range_pick, &c)) < 0)
		return rc;
	if (c.blocks < 2)
		return BT_NOTFOUND;
	/* The last key of the block before the middle one: both halves
	 * then hold at least one block. */
	c.stop_at = c.blocks / 2 - 1;
	c.blocks = 0;
	if ((rc = sst_reader_range_walk(r, lo, hi, sst_range_pick, &c)) < 0)
		return rc;
	return 0;
}

int
sst_reader_key_range(struct sst_reader *r, struct buf *first,
    struct buf *last)
{
	struct iter *it;
	int rc;

	if (r->info.entry_count == 0)
		return BT_NOTFOUND;
	if ((rc = sst_reader_iter_new(r, SST_ITER_KEYS_ONLY, &it)) < 0)
		return rc;
	if ((rc = iter_seek_first(it)) == 0 && iter_valid(it))
		rc = buf_set(first, iter_key(it).p, iter_key(it).n);
	else if (rc == 0)
		rc = BT_NOTFOUND;
	iter_free(it);
	if (rc != 0)
		return rc;
	/* The index's last key is the table's last key: its last entry's,
	 * at its last restart when the index has a restart at each entry
	 * (the fences), else found by walking it. */
	if (r->fence != NULL) {
		struct slice key, value;

		if ((rc = block_restart_entry(buf_slice(&r->index),
		    (uint32_t)(r->fence_n - 1), &key, &value)) < 0)
			return rc;
		return buf_set(last, key.p, key.n);
	}
	if ((rc = sst_reader_index_iter(r, &it)) < 0)
		return rc;
	for (rc = iter_seek_first(it); rc == 0 && iter_valid(it);
	    rc = iter_next(it))
		if ((rc = buf_set(last, iter_key(it).p, iter_key(it).n)) < 0)
			break;
	iter_free(it);
	return rc;
}
