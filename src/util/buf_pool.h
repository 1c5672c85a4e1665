/*
 * buf_pool.h - a bounded cache of released buffers' memory.
 *
 * A buffer that grows to megabytes and is then freed, once per file
 * written through the mount, costs more in fresh pages than in its copy:
 * every page of a new allocation faults on first touch, and the kernel
 * zeroes it.  A pool keeps the memory of released buffers, up to a count
 * and a total size, and hands it to the next buffer, whose pages are then
 * already mapped.  Thread safe.
 */
#ifndef TABLETFS_UTIL_BUF_POOL_H
#define TABLETFS_UTIL_BUF_POOL_H

#include <stddef.h>

#include "util/buf.h"

struct buf_pool;

/*
 * A pool keeping at most count buffers of max_bytes in all (a buffer
 * larger than max_bytes is never kept).  0 or -ENOMEM.
 */
int buf_pool_new(size_t count, size_t max_bytes, struct buf_pool **out);
/* Frees the pool and the memory it keeps; accepts NULL. */
void buf_pool_free(struct buf_pool *pool);

/*
 * Give the empty, initialized buffer b the largest memory the pool keeps,
 * if any (b->n stays 0).  pool may be NULL.
 */
void buf_pool_take(struct buf_pool *pool, struct buf *b);
/*
 * Release b: the pool keeps its memory if there is room, and frees it
 * otherwise; b is empty and initialized afterwards.  pool may be NULL.
 */
void buf_pool_give(struct buf_pool *pool, struct buf *b);

#endif
