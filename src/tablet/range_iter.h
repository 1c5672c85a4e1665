/*
 * range_iter.h - an iterator restricted to the keys in [lo, hi): how a
 * tablet reads SSTables it shares with its sibling after a split, which
 * hold rows of both halves.
 *
 * The tablet passes the escaped row prefixes of its start and end rows
 * (ikey_append_row_prefix): escaping keeps row order, so a key is below
 * esc(end) exactly when its row is below end.
 */
#ifndef TABLETFS_TABLET_RANGE_ITER_H
#define TABLETFS_TABLET_RANGE_ITER_H

#include "util/iter.h"
#include "util/slice.h"

/*
 * An iterator over child's keys k with lo <= k < hi; an empty lo has no
 * lower bound and an empty hi no upper bound.  lo and hi are copied.  It
 * takes ownership of child, also on failure.  0 or -ENOMEM.
 */
int range_iter_new(struct iter *child, struct slice lo, struct slice hi,
    struct iter **out);

#endif
