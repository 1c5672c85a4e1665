/*
 * block.h - building and reading the prefix-compressed blocks that data and
 * index blocks of an SSTable are made of (layout in format.h).  Internal to
 * the sstable module.
 */
#ifndef TABLETFS_SSTABLE_BLOCK_H
#define TABLETFS_SSTABLE_BLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"
#include "util/iter.h"
#include "util/slice.h"

struct block_builder {
	struct buf data;	/* entries so far */
	struct buf restarts;	/* fixed32 offsets */
	struct buf last_key;
	int restart_interval;
	int since_restart;	/* entries since the last restart point */
	uint64_t count;		/* entries in this block */
	bool finished;		/* finish called: only reset or release */
};

void block_builder_init(struct block_builder *b, int restart_interval);
void block_builder_release(struct block_builder *b);
/* Start a new, empty block, keeping the allocations. */
void block_builder_reset(struct block_builder *b);

/*
 * Add an entry, its key above the last one's (slice_compare order; an
 * assert() checks it, the SSTable builder returns -EINVAL to its callers
 * first), to a block not yet finished.  0, -ENOMEM (the block is
 * unchanged), or BT_ETOOBIG when the block would reach 4 GiB.
 */
int block_builder_add(struct block_builder *b, struct slice key,
    struct slice value);

/* Bytes the block will take once finished. */
size_t block_builder_size_estimate(const struct block_builder *b);

/*
 * Append the restart array and count, and return the finished block
 * contents in *out (borrowed until the next reset).  Once per block:
 * after it only reset or release.  0 or -ENOMEM.
 */
int block_builder_finish(struct block_builder *b, struct slice *out);

/*
 * Finish the block as block_builder_finish() does and move its contents
 * into *out (initialized; its old allocation becomes the builder's, so
 * that buffers pass back and forth without copies), then reset the
 * builder.  0 or -ENOMEM (nothing moved, the block as it was).
 */
int block_builder_take(struct block_builder *b, struct buf *out);

/*
 * An iterator over a finished block's contents.  The iterator borrows the
 * bytes; the caller keeps them alive while it lives.  When release is not
 * NULL, iter_free() calls release(arg) (the SSTable uses this to give back a
 * block cache handle).  The contents are checked for shape at creation
 * (BT_ECORRUPT, with a detail naming what) and each entry as it is decoded.
 * 0, BT_ECORRUPT or -ENOMEM; on failure release is not called and the
 * caller still owns what arg names.
 */
int block_iter_new(struct slice contents, void (*release)(void *arg),
    void *arg, struct iter **out);

/*
 * Point an iterator made by block_iter_new() at other contents, keeping
 * its allocations (a scan moving from block to block): its old release is
 * called first, then it is as block_iter_new(contents, release, arg) would
 * make it.  0 or BT_ECORRUPT; on failure it holds no contents (invalid,
 * with nothing to release) and the caller still owns what arg names.
 */
int block_iter_reset(struct iter *it, struct slice contents,
    void (*release)(void *arg), void *arg);

/*
 * The entry at restart point i of a block (an index block has one at every
 * entry): its key, stored whole there, and its value, both borrowed from
 * contents.  0, BT_NOTFOUND when the block has no entry at restart i, or
 * BT_ECORRUPT.
 */
int block_restart_entry(struct slice contents, uint32_t i, struct slice *key,
    struct slice *value);

/*
 * Visit the block's entries in order from the first key >= target, with no
 * allocation but key_scratch's growth: visit(arg, key, value) returns 0
 * for the next entry, a positive value to stop, or a negative error; key
 * is borrowed until it returns, value as long as contents.  key_scratch
 * (initialized, content replaced) is kept by the caller for reuse.
 * Returns visit's stopping value or error, 0 when the block ran out, or
 * BT_ECORRUPT / -ENOMEM.
 */
int block_visit_from(struct slice contents, struct slice target,
    struct buf *key_scratch,
    int (*visit)(void *arg, struct slice key, struct slice value),
    void *arg);

#endif
