/*
 * sst_range.c - an SSTable's row ranges (sstable.h): the sizes and split
 * points of key ranges for tablets that share files after a split, read
 * from the index alone, and the table's first and last keys.
 */
#include <assert.h>
#include <stdint.h>

#include "sstable/block.h"
#include "sstable/format.h"
#include "sstable/sst_reader_int.h"
#include "sstable/sstable.h"
#include "util/error.h"

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

		assert(r->fence_n > 0);
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
