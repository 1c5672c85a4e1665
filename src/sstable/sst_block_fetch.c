/*
 * sst_block_fetch.c - reading an SSTable's blocks (format.h): the layer
 * under the reader (sst_reader.c), its iterator (sst_iter.c) and its row
 * ranges (sst_range.c), calling none of them.
 *
 * Blocks are read on demand with env_file_read_at() (safe from many
 * threads), checked against their CRC, uncompressed, and data blocks are
 * shared through the block cache when there is one; an iterator that
 * reads blocks back to back reads ahead (struct sst_readahead).  Every
 * byte off disk is untrusted: a flaw is BT_ECHECKSUM or BT_ECORRUPT with
 * a detail naming the path and offset, never a crash and never wrong data.
 */
#include <assert.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "sstable/block.h"
#include "sstable/format.h"
#include "sstable/sst_reader_int.h"
#include "sstable/sstable.h"
#include "util/alloc.h"
#include "util/coding.h"
#include "util/compress.h"
#include "util/crc32c.h"
#include "util/error.h"

/* Block offsets inside a block are fixed32: contents stay below 4 GiB. */
#define SST_MAX_BLOCK_CONTENTS	((size_t)UINT32_MAX)

/*
 * struct sst_block_ref (sstable.h) keeps a data block's contents alive
 * while an iterator reads it or a pin holds it; block_iter_new()'s release
 * callback gives it back.
 */

/*
 * The block code knows offsets within a block but not the file: put the
 * path and the block's offset in front of its detail.
 */
int
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
	if (w == NULL)
		return;
	assert(w->refs > 0);
	if (--w->refs > 0)
		return;
	buf_release(&w->bytes);
	bt_free(w);
}

void
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
 * (seek and a few rows) reads block by block.  Bytes from the
 * window are checked like any others.
 */
#define SST_READAHEAD_AFTER	4	/* back-to-back blocks before it starts */
#define SST_READAHEAD_MIN	(32u << 10)
#define SST_READAHEAD_MAX	(256u << 10)


void
sst_readahead_init(struct sst_readahead *ra)
{
	ra->window = NULL;
	ra->offset = ra->next = 0;
	ra->sequential = 0;
	ra->size = 0;
}

void
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

	assert(offset <= limit && n <= limit - offset);
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

int
sst_reader_read_block(struct sst_reader *r, const char *what,
    uint64_t offset, uint64_t size, uint64_t limit, struct buf *out)
{
	return sst_reader_read_block_ahead(r, NULL, what, offset, size, limit,
	    out, NULL, NULL);
}

/*
 * Decode an index entry's value: varint64 offset, varint64 size, then in
 * a version 4 or 5 table the value length of a one-entry block (format.h),
 * and nothing after.  *lone_value (NULL: not wanted) is that length + 1,
 * or 0 when the entry has none.
 */
int
sst_decode_index_value(const struct sst_reader *r, struct slice value,
    uint64_t *offset, uint64_t *size, uint64_t *lone_value)
{
	uint64_t len = 0;
	bool lone = false;

	if (get_varint64(&value, offset) < 0 ||
	    get_varint64(&value, size) < 0)
		goto bad;
	if (value.n > 0 && r->version >= SST_FORMAT_VERSION_4) {
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
int
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
int
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

int
sst_reader_load_block(struct sst_reader *r, uint64_t offset, uint64_t size,
    bool use_cache, struct sst_block_ref *ref, struct slice *contents)
{
	return sst_reader_load_block_ahead(r, NULL, offset, size, use_cache,
	    true, ref, contents);
}

/* An iterator over the data block that an index entry's value names. */
int
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

int
sst_reader_index_iter(const struct sst_reader *r, struct iter **out)
{
	int rc;

	if ((rc = block_iter_new(buf_slice(&r->index), NULL, NULL, out)) < 0)
		return sst_reader_block_error(r, "index", r->index_offset, rc);
	return 0;
}

