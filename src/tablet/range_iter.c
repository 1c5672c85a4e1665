/*
 * range_iter.c - a child iterator seen only inside [lo, hi)
 * (range_iter.h).
 */
#include <errno.h>

#include "tablet/range_iter.h"
#include "util/alloc.h"
#include "util/buf.h"

struct range_iter {
	struct iter base;
	struct iter *child;
	struct buf lo, hi;
};

static int
range_seek_first(struct iter *it)
{
	struct range_iter *r = (struct range_iter *)it;

	if (r->lo.n == 0)
		return iter_seek_first(r->child);
	return iter_seek(r->child, buf_slice(&r->lo));
}

static int
range_seek(struct iter *it, struct slice target)
{
	struct range_iter *r = (struct range_iter *)it;

	if (slice_compare(target, buf_slice(&r->lo)) < 0)
		target = buf_slice(&r->lo);
	return iter_seek(r->child, target);
}

static int
range_next(struct iter *it)
{
	return iter_next(((struct range_iter *)it)->child);
}

static bool
range_valid(const struct iter *it)
{
	const struct range_iter *r = (const struct range_iter *)it;

	if (!iter_valid(r->child))
		return false;
	return r->hi.n == 0 ||
	    slice_compare(iter_key(r->child), buf_slice(&r->hi)) < 0;
}

static struct slice
range_key(const struct iter *it)
{
	return iter_key(((const struct range_iter *)it)->child);
}

static struct slice
range_value(const struct iter *it)
{
	return iter_value(((const struct range_iter *)it)->child);
}

static void
range_free(struct iter *it)
{
	struct range_iter *r = (struct range_iter *)it;

	iter_free(r->child);
	buf_release(&r->lo);
	buf_release(&r->hi);
	bt_free(r);
}

static int
range_pin(struct iter *it, uint64_t epoch)
{
	return iter_pin(((struct range_iter *)it)->child, epoch);
}

static const struct iter_ops range_iter_ops = {
	range_seek_first, range_seek, range_next, range_valid, range_key,
	range_value, range_free, range_pin,
};

int
range_iter_new(struct iter *child, struct slice lo, struct slice hi,
    struct iter **out)
{
	struct range_iter *r;

	if ((r = bt_calloc(1, sizeof(*r))) == NULL) {
		iter_free(child);
		return -ENOMEM;
	}
	r->base.ops = &range_iter_ops;
	r->child = child;
	buf_init(&r->lo);
	buf_init(&r->hi);
	if (buf_set(&r->lo, lo.p, lo.n) < 0 ||
	    buf_set(&r->hi, hi.p, hi.n) < 0) {
		range_free(&r->base);
		return -ENOMEM;
	}
	*out = &r->base;
	return 0;
}
