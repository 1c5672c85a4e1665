/*
 * merge.h - an iterator over the union of several sorted iterators, in key
 * order: how a tablet reads its memtables and SSTables as one sorted source.
 *
 * When two children hold the same key (the same entry, seen both in a
 * frozen memtable and in the SSTable it was just flushed to), it is returned
 * once, from the child listed first.
 */
#ifndef TABLETFS_TABLET_MERGE_H
#define TABLETFS_TABLET_MERGE_H

#include <stddef.h>

#include "util/iter.h"

/*
 * A merging iterator that takes ownership of the n children (n may be 0),
 * freeing them with itself, also on failure.  0 or -ENOMEM.  With one
 * child, *out is that child itself (it already is its own union).
 */
int merge_iter_new(struct iter **children, size_t n, struct iter **out);

#endif
