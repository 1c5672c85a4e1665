/*
 * sst_reader.c - serving lookups from an SSTable (format.h).
 *
 * Opening reads the footer, then the index, filter and bounds blocks into
 * memory, and checks that the block handles tile the file exactly: data
 * blocks back to back from offset 0, then the filter, the bounds block
 * (versions 2 to 5), the index and the footer.  Data blocks are read on
 * demand through the fetch layer (sst_block_fetch.c); the iterator is
 * sst_iter.c's and the row ranges sst_range.c's.  A point read finds its
 * index entry through the index fences (sst_index_seek), and stops at the
 * end of a block that the splits map (versions 3 to 5) says its row does
 * not go past.  Every byte off disk is untrusted: a flaw is BT_ECHECKSUM,
 * BT_ECORRUPT or BT_EFORMAT with a detail naming the path and offset,
 * never a crash and never wrong data.
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
#include "util/bloom.h"
#include "util/coding.h"
#include "util/crc32c.h"
#include "util/error.h"

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
	    version != SST_FORMAT_VERSION_4 &&
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

/* Decode the usage part of the bounds block (format.h) from *in into r.
 * 0, -ENOMEM, or BT_ECORRUPT (no detail: the caller names the block). */
static int
sst_reader_parse_usage(struct sst_reader *r, struct slice *in)
{
	uint64_t total = 0;
	uint32_t count, n;

	if (get_varint32(in, &count) < 0 || count > SST_USAGE_MAX_LABELS)
		return BT_ECORRUPT;
	if ((r->usage = bt_calloc(count + 1, sizeof(*r->usage))) == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < count; i++) {
		struct sst_usage *u = &r->usage[i];

		if (get_varint32(in, &n) < 0 || n > in->n)
			return BT_ECORRUPT;
		u->label = slice_make(in->p, n);
		in->p += n;
		in->n -= n;
		if (get_varint64(in, &u->entries) < 0 ||
		    get_varint64(in, &u->key_bytes) < 0 ||
		    get_varint64(in, &u->value_bytes) < 0)
			return BT_ECORRUPT;
	}
	for (uint32_t i = 0; i < count; i++)
		total += r->usage[i].entries;
	if (total != r->info.entry_count)
		return BT_ECORRUPT;
	r->usage_count = count;
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
	int rc;

	if (get_varint32(&in, &flags) < 0 ||
	    (flags & ~(SST_BOUNDS_COMPLETE | SST_BOUNDS_SEQUENCES |
	    SST_BOUNDS_SPLITS | SST_BOUNDS_USAGE)) != 0 ||
	    ((flags & SST_BOUNDS_SPLITS) != 0) !=
	    (r->version >= SST_FORMAT_VERSION_3) ||
	    ((flags & SST_BOUNDS_USAGE) != 0 &&
	    r->version < SST_FORMAT_VERSION))
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
	if ((flags & SST_BOUNDS_USAGE) != 0 &&
	    (rc = sst_reader_parse_usage(r, &in)) < 0) {
		if (rc != BT_ECORRUPT)
			return rc;
		goto corrupt;
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

	assert(n > 0);
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

	assert(r->fence != NULL);
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
	assert(i < r->info.block_count);
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
	if ((rc = buf_set(&r->last_key, prev.p, prev.n)) < 0)
		goto out_iter;
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
	buf_init(&r->last_key);
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
	buf_release(&r->last_key);
	buf_release(&r->filter);
	buf_release(&r->bounds_bytes);
	bt_free(r->usage);
	bt_free(r);
out:
	return rc;
}

void
sst_reader_ref(struct sst_reader *r)
{
	long refs = atomic_fetch_add_explicit(&r->refs, 1,
	    memory_order_relaxed);

	assert(refs > 0);	/* a reference is what lets the caller call */
	(void)refs;
}

void
sst_reader_unref(struct sst_reader *r)
{
	long refs;

	if (r == NULL)
		return;
	refs = atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel);
	assert(refs > 0);
	if (refs != 1)
		return;
	(void)env_file_close(r->file);
	bt_free(r->fence);
	bt_free(r->handle);
	buf_release(&r->index);
	buf_release(&r->last_key);
	buf_release(&r->filter);
	buf_release(&r->bounds_bytes);
	bt_free(r->usage);
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

bool
sst_reader_usage(const struct sst_reader *r, size_t *count)
{
	if (r->usage == NULL)
		return false;
	*count = r->usage_count;
	return true;
}

void
sst_reader_usage_get(const struct sst_reader *r, size_t i,
    struct sst_usage *out)
{
	assert(r->usage != NULL && i < r->usage_count);
	*out = r->usage[i];
}

struct slice
sst_reader_bounds_column(const struct sst_reader *r, size_t i)
{
	assert(r->has_bounds && i < r->bounds_count);
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
sst_reader_ends_before(const struct sst_reader *r, struct slice prefix)
{
	if (r->info.entry_count == 0)
		return true;
	return slice_compare(buf_slice(&r->last_key), prefix) < 0;
}

struct slice
sst_reader_last_key(const struct sst_reader *r)
{
	if (r->info.entry_count == 0)
		return slice_make(NULL, 0);
	return buf_slice(&r->last_key);
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

	if (sst_reader_ends_before(r, key))
		return BT_NOTFOUND;
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
	assert(p->count <= p->cap);
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

	assert(i < w->r->fence_n);
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
