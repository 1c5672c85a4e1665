/*
 * test_buf_pool.c - the pool of released buffers' memory: a buffer given
 * back is handed out again (the same memory, empty), the largest first;
 * the pool keeps no more than its count and its bytes; a NULL pool takes
 * and keeps nothing.
 */
#include <stdint.h>
#include <string.h>

#include "tap.h"
#include "util/buf_pool.h"

/* A buffer holding n bytes of fill. */
static void
filled(struct buf *b, size_t n, int fill)
{
	buf_init(b);
	if (buf_reserve(b, n) == 0) {
		memset(b->p, fill, n);
		b->n = n;
	}
}

static void
test_reuse(void)
{
	struct buf_pool *pool;
	struct buf a, b, c;
	uint8_t *pa, *pb;

	is_int(buf_pool_new(2, 1 << 20, &pool), 0, "a pool is made");
	filled(&a, 1000, 'a');
	filled(&b, 100000, 'b');
	pa = a.p;
	pb = b.p;
	buf_pool_give(pool, &a);
	ok(a.p == NULL && a.n == 0 && a.cap == 0, "a given buffer is empty");
	buf_pool_give(pool, &b);
	buf_init(&c);
	buf_pool_take(pool, &c);
	ok(c.p == pb && c.n == 0 && c.cap >= 100000,
	    "take hands out the largest memory kept, empty");
	buf_pool_give(pool, &c);
	buf_pool_take(pool, &c);
	ok(c.p == pb, "memory given back is handed out again");
	buf_pool_take(pool, &a);
	ok(a.p == pa, "then the next largest");
	buf_pool_take(pool, &b);
	ok(b.p == NULL && b.cap == 0, "an empty pool hands out nothing");
	buf_release(&a);
	buf_release(&b);
	buf_release(&c);
	buf_pool_free(pool);
}

static void
test_bounds(void)
{
	struct buf_pool *pool;
	struct buf a, b, c, big;

	is_int(buf_pool_new(2, 300000, &pool), 0, "a bounded pool is made");
	filled(&big, 400000, 'x');
	buf_pool_give(pool, &big);
	buf_init(&big);
	buf_pool_take(pool, &big);
	ok(big.p == NULL, "a buffer larger than the pool's bytes is freed");
	filled(&a, 200000, 'a');
	filled(&b, 200000, 'b');
	buf_pool_give(pool, &a);
	buf_pool_give(pool, &b);
	buf_pool_take(pool, &b);
	buf_init(&c);
	buf_pool_take(pool, &c);
	ok(b.p != NULL && c.p == NULL,
	    "no more is kept than the pool's bytes");
	buf_release(&b);
	filled(&a, 10, 'a');
	filled(&b, 10, 'b');
	filled(&c, 10, 'c');
	buf_pool_give(pool, &a);
	buf_pool_give(pool, &b);
	buf_pool_give(pool, &c);
	buf_pool_take(pool, &a);
	buf_pool_take(pool, &b);
	buf_pool_take(pool, &c);
	ok(a.p != NULL && b.p != NULL && c.p == NULL,
	    "no more is kept than the pool's count");
	buf_release(&a);
	buf_release(&b);
	buf_pool_free(pool);
}

static void
test_null(void)
{
	struct buf a;

	filled(&a, 100, 'a');
	buf_pool_give(NULL, &a);
	ok(a.p == NULL && a.cap == 0, "a NULL pool frees what it is given");
	buf_pool_take(NULL, &a);
	ok(a.p == NULL, "and hands out nothing");
	buf_pool_free(NULL);
}

int
main(void)
{
	test_reuse();
	test_bounds();
	test_null();
	return tap_done();
}
