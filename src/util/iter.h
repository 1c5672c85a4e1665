/*
 * iter.h - the ordered iterator every sorted source implements (memtable,
 * SSTable block, SSTable, and later the tablet's merge of them).
 *
 * An iterator is positioned on an entry or invalid.  Keys are in ascending
 * byte order (slice_compare).  Positioning calls return 0 (check
 * iter_valid() to learn whether an entry was found) or a negative error,
 * after which the iterator is invalid.  key() and value() may be called only
 * while valid; the slices they return are borrowed until the next
 * positioning call or iter_free().  An iterator is used by one thread at a
 * time.
 *
 * Pinning (optional): iter_pin(it, epoch) asks that the current entry's
 * value stay valid after the iterator moves on, until a pin with a later
 * epoch or iter_free(), so that a reader can lend it instead of copying
 * it.  A reader that lends one row at a time passes a new epoch for each
 * row: the first pin of an epoch gives back what earlier epochs pinned.
 * Epochs start above 0 and never decrease.  It returns 0 when the value
 * is pinned (or needs no pin: it lives as long as the iterator), 1 when
 * this iterator cannot or will not pin it (no support, or a bound on what
 * it keeps alive was reached: copy the value), or -ENOMEM.
 */
#ifndef TABLETFS_UTIL_ITER_H
#define TABLETFS_UTIL_ITER_H

#include <stdbool.h>
#include <stdint.h>

#include "util/slice.h"

struct iter;

struct iter_ops {
	int (*seek_first)(struct iter *it);
	/* Position on the first entry with key >= target. */
	int (*seek)(struct iter *it, struct slice target);
	int (*next)(struct iter *it);
	bool (*valid)(const struct iter *it);
	struct slice (*key)(const struct iter *it);
	struct slice (*value)(const struct iter *it);
	void (*free)(struct iter *it);
	int (*pin)(struct iter *it, uint64_t epoch);	/* NULL: cannot */
};

/* Implementations embed this as their first member. */
struct iter {
	const struct iter_ops *ops;
};

static inline int
iter_seek_first(struct iter *it)
{
	return it->ops->seek_first(it);
}

static inline int
iter_seek(struct iter *it, struct slice target)
{
	return it->ops->seek(it, target);
}

static inline int
iter_next(struct iter *it)
{
	return it->ops->next(it);
}

static inline bool
iter_valid(const struct iter *it)
{
	return it->ops->valid(it);
}

static inline struct slice
iter_key(const struct iter *it)
{
	return it->ops->key(it);
}

static inline struct slice
iter_value(const struct iter *it)
{
	return it->ops->value(it);
}

static inline int
iter_pin(struct iter *it, uint64_t epoch)
{
	return it->ops->pin != NULL ? it->ops->pin(it, epoch) : 1;
}

/* Accepts NULL. */
static inline void
iter_free(struct iter *it)
{
	if (it != NULL)
		it->ops->free(it);
}

#endif
