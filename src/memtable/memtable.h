/*
 * memtable.h - the sorted in-memory map that takes every write before it is
 * flushed to an SSTable.
 *
 * A skiplist of (key, value) byte strings in slice_compare order, with keys
 * and values copied into an arena.  Keys are unique: the tablet layer makes
 * them so by encoding a sequence number into each.  One writer at a time
 * (the caller serializes memtable_add() calls); any number of readers and
 * iterators run concurrently with that writer without locks, and see each
 * entry either whole or not at all.
 *
 * A memtable is reference-counted: memtable_new() returns one reference,
 * each iterator holds its own, and the last memtable_unref() frees it.
 */
#ifndef TABLETFS_MEMTABLE_MEMTABLE_H
#define TABLETFS_MEMTABLE_MEMTABLE_H

#include <stddef.h>
#include <stdint.h>

#include "util/iter.h"
#include "util/slice.h"

struct memtable;

/* 0 or -ENOMEM. */
int memtable_new(struct memtable **out);
void memtable_ref(struct memtable *m);
/* Accepts NULL. */
void memtable_unref(struct memtable *m);

/*
 * Insert a copy of key -> value.  0, -EEXIST if key is present (nothing
 * changes), -EFBIG for a key or a value over 4 GiB - 1 (a commit log
 * record, LOG_MAX_RECORD, is far smaller), or -ENOMEM.  Callers serialize
 * this.
 */
int memtable_add(struct memtable *m, struct slice key, struct slice value);

/*
 * Make the next memtable_add() calls, count of them with keys of key_bytes
 * and values of value_bytes in all, allocate nothing, so that they cannot
 * fail with -ENOMEM.  0 or -ENOMEM.  Reservations made before those adds
 * add up until memtable_reserve_end(), called once they are done.
 * Writer's calls, serialized with memtable_add().
 */
int memtable_reserve(struct memtable *m, size_t count, size_t key_bytes,
    size_t value_bytes);
void memtable_reserve_end(struct memtable *m);

/*
 * Exact lookup: 0 with *value borrowed for the memtable's lifetime, or
 * BT_NOTFOUND.  This, memtable_visit_prefix() and an iterator's seek
 * answer a key past the largest key, or at or before the smallest,
 * without a search: a key added by a memtable_add() that returned before
 * the call began is always found.
 */
int memtable_get(struct memtable *m, struct slice key, struct slice *value);

/*
 * Visit, in key order, every entry whose key starts with prefix (a point
 * read's row) without allocating: visit(arg, key, value) returns 0 for
 * more or non-zero to stop.  Keys and values are borrowed for the
 * memtable's lifetime, as an iterator's are.  0, or visit's non-zero
 * value.
 */
int memtable_visit_prefix(struct memtable *m, struct slice prefix,
    int (*visit)(void *arg, struct slice key, struct slice value),
    void *arg);

/* Bytes used by keys, values and the index: the flush trigger. */
size_t memtable_memory_usage(const struct memtable *m);
/* Number of entries. */
uint64_t memtable_count(const struct memtable *m);

/*
 * An iterator over the memtable (see util/iter.h).  It sees entries added
 * after its creation if it has not passed their position.  Its slices stay
 * valid while the iterator lives.  0 or -ENOMEM.
 */
int memtable_iter_new(struct memtable *m, struct iter **out);

#endif
