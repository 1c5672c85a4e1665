/*
 * sst_iter.c - the SSTable iterator (sstable.h: sst_reader_iter_new): a
 * two-level iterator whose index entries name data blocks, read through
 * the fetch layer (sst_block_fetch.c) with readahead for blocks read back
 * to back, and able to pin the blocks of the values a scan lends.
 */
#include <assert.h>
#include <errno.h>
#include <string.h>

#include "sstable/block.h"
#include "sstable/sst_reader_int.h"
#include "sstable/sstable.h"
#include "util/alloc.h"
#include "util/error.h"

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
	assert(it->kept_n < it->kept_cap);
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

	assert(sst_iter_valid(base));
	return iter_key(it->on_lone ? it->index_it : it->data_it);
}

static struct slice
sst_iter_value(const struct iter *base)
{
	const struct sst_iter *it = (const struct sst_iter *)base;

	assert(sst_iter_valid(base));
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

	assert(epoch > 0 && epoch >= it->pin_epoch);	/* util/iter.h */
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
