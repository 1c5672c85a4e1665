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
 */
#ifndef TABLETFS_UTIL_ITER_H
#define TABLETFS_UTIL_ITER_H

#include <stdbool.h>

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

/* Accepts NULL. */
static inline void
iter_free(struct iter *it)
{
	if (it != NULL)
		it->ops->free(it);
}

#endif
