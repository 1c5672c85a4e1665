/*
 * buf_pool.c - a bounded cache of released buffers' memory (buf_pool.h).
 *
 * A small array under a mutex: the pool is meant for a few buffers of
 * megabytes (one per file being written), where a scan of the array costs
 * nothing beside the copy that fills a buffer.
 */
#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "util/alloc.h"
#include "util/buf_pool.h"
#include "util/mutex.h"

struct buf_pool {
	struct mutex lock;
	size_t max_count;
	size_t max_bytes;
	size_t count;		/* buffers kept */
	size_t bytes;		/* their capacity in all */
	struct buf kept[];	/* [max_count], the first count in use */
};

int
buf_pool_new(size_t count, size_t max_bytes, struct buf_pool **out)
{
	struct buf_pool *pool;
	int rc;

	if (count > (SIZE_MAX - sizeof(*pool)) / sizeof(pool->kept[0]))
		return -ENOMEM;
	if ((pool = bt_calloc(1, sizeof(*pool) +
	    count * sizeof(pool->kept[0]))) == NULL)
		return -ENOMEM;
	if ((rc = mutex_init(&pool->lock)) < 0) {
		bt_free(pool);
		return rc;
	}
	pool->max_count = count;
	pool->max_bytes = max_bytes;
	*out = pool;
	return 0;
}

void
buf_pool_free(struct buf_pool *pool)
{
	if (pool == NULL)
		return;
	for (size_t i = 0; i < pool->count; i++)
		buf_release(&pool->kept[i]);
	mutex_destroy(&pool->lock);
	bt_free(pool);
}

void
buf_pool_take(struct buf_pool *pool, struct buf *b)
{
	size_t best = 0;

	assert(b->p == NULL && b->n == 0);
	if (pool == NULL)
		return;
	mutex_lock(&pool->lock);
	if (pool->count > 0) {
		for (size_t i = 1; i < pool->count; i++)
			if (pool->kept[i].cap > pool->kept[best].cap)
				best = i;
		*b = pool->kept[best];
		pool->bytes -= b->cap;
		pool->kept[best] = pool->kept[--pool->count];
		b->n = 0;
	}
	mutex_unlock(&pool->lock);
}

void
buf_pool_give(struct buf_pool *pool, struct buf *b)
{
	bool kept = false;

	if (pool != NULL && b->p != NULL && b->cap <= pool->max_bytes) {
		mutex_lock(&pool->lock);
		if (pool->count < pool->max_count &&
		    b->cap <= pool->max_bytes - pool->bytes) {
			pool->kept[pool->count++] = *b;
			pool->bytes += b->cap;
			kept = true;
		}
		mutex_unlock(&pool->lock);
	}
	if (!kept)
		buf_release(b);
	buf_init(b);
}
