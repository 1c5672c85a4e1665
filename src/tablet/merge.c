/*
 * merge.c - k-way merge of sorted iterators with a binary min-heap of the
 * valid children, ties broken by child order.
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>

#include "tablet/merge.h"
#include "util/alloc.h"
#include "util/buf.h"

struct merge_iter {
	struct iter base;
	struct iter **children;
	size_t n;
	size_t *heap;		/* indexes of valid children */
	size_t heap_n;
	/* The top's key is held by no other child: known when the last
	 * advance left the top in place, smaller than both heap children. */
	bool top_unique;
	/* The smaller of the top's heap children (child order on a tie),
	 * when bound_valid: they stay put while the top stays on top, so
	 * one comparison with it shows whether the top still does. */
	size_t bound;
	bool bound_valid;
	struct slice bound_key;	/* the bound's key, while bound_valid */
	struct slice top_key;	/* the top's key, while heap_n > 0 */
	struct buf last_key;	/* copy of the key merge_next() leaves */
};

static bool
child_less(const struct merge_iter *m, size_t a, size_t b)
{
	int c = slice_compare(iter_key(m->children[a]),
	    iter_key(m->children[b]));

	return c < 0 || (c == 0 && a < b);
}

static void
heap_sift_down(struct merge_iter *m, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, min = i, tmp;

		if (l < m->heap_n && child_less(m, m->heap[l], m->heap[min]))
			min = l;
		if (r < m->heap_n && child_less(m, m->heap[r], m->heap[min]))
			min = r;
		if (min == i)
			return;
		m->bound_valid = false;
		tmp = m->heap[i];
		m->heap[i] = m->heap[min];
		m->heap[min] = tmp;
		i = min;
	}
}

static void
heap_build(struct merge_iter *m)
{
	m->heap_n = 0;
	m->top_unique = false;
	m->bound_valid = false;
	for (size_t i = 0; i < m->n; i++)
		if (iter_valid(m->children[i]))
			m->heap[m->heap_n++] = i;
	for (size_t i = m->heap_n / 2; i-- > 0;)
		heap_sift_down(m, i);
	if (m->heap_n > 0)
		m->top_key = iter_key(m->children[m->heap[0]]);
}

static int
merge_fail(struct merge_iter *m, int rc)
{
	m->heap_n = 0;
	m->top_unique = false;
	m->bound_valid = false;
	return rc;
}

static int
merge_seek_first(struct iter *it)
{
	struct merge_iter *m = (struct merge_iter *)it;
	int rc;

	for (size_t i = 0; i < m->n; i++)
		if ((rc = iter_seek_first(m->children[i])) < 0)
			return merge_fail(m, rc);
	heap_build(m);
	return 0;
}

static int
merge_seek(struct iter *it, struct slice target)
{
	struct merge_iter *m = (struct merge_iter *)it;
	int rc;

	for (size_t i = 0; i < m->n; i++)
		if ((rc = iter_seek(m->children[i], target)) < 0)
			return merge_fail(m, rc);
	heap_build(m);
	return 0;
}

/*
 * Restore the heap after its top changed.  A scan of ranges that do not
 * overlap keeps one child on top for long runs: one comparison with each
 * heap child then shows that the top stays, and whether its key is
 * unique (strictly smaller than theirs), which spares merge_next() the
 * search for other children on the same key.
 */
static void
merge_fix_top(struct merge_iter *m)
{
	size_t top = m->heap[0];
	struct slice key = iter_key(m->children[top]);
	int c;

	if (m->heap_n < 2) {
		m->top_unique = true;
		m->top_key = key;
		return;
	}
	if (!m->bound_valid) {
		m->bound = m->heap[1];
		if (m->heap_n > 2 && child_less(m, m->heap[2], m->heap[1]))
			m->bound = m->heap[2];
		m->bound_key = iter_key(m->children[m->bound]);
		m->bound_valid = true;
	}
	c = slice_compare(key, m->bound_key);
	if (c > 0 || (c == 0 && top > m->bound)) {
		m->top_unique = false;
		heap_sift_down(m, 0);
		m->top_key = iter_key(m->children[m->heap[0]]);
		return;
	}
	m->top_unique = c < 0;
	m->top_key = key;
}

/* Advance the top child, then drop it from the heap if it ran out. */
static int
merge_advance_top(struct merge_iter *m)
{
	struct iter *top = m->children[m->heap[0]];
	int rc;

	if ((rc = iter_next(top)) < 0)
		return merge_fail(m, rc);
	if (!iter_valid(top)) {
		m->heap[0] = m->heap[--m->heap_n];
		m->bound_valid = false;
	}
	if (m->heap_n > 0)
		merge_fix_top(m);
	return 0;
}

/*
 * Whether another child is on the top's key.  Only the top's two heap
 * children can be: everything below them is at least as large as they.
 */
static bool
merge_top_shared(const struct merge_iter *m, struct slice key)
{
	for (size_t i = 1; i < 3 && i < m->heap_n; i++)
		if (slice_equal(iter_key(m->children[m->heap[i]]), key))
			return true;
	return false;
}

/*
 * Move past the current key in every child holding it, so that a key
 * present in several children is returned once.  When others hold it the
 * key is copied first: advancing its child invalidates it.
 */
static int
merge_next(struct iter *it)
{
	struct merge_iter *m = (struct merge_iter *)it;
	struct slice key;
	int rc;

	if (m->top_unique)
		return merge_advance_top(m);
	key = m->top_key;
	if (!merge_top_shared(m, key))
		return merge_advance_top(m);
	if ((rc = buf_set(&m->last_key, key.p, key.n)) < 0)
		return merge_fail(m, rc);
	do {
		if ((rc = merge_advance_top(m)) < 0)
			return rc;
	} while (m->heap_n > 0 && slice_equal(m->top_key,
	    buf_slice(&m->last_key)));
	return 0;
}

static bool
merge_valid(const struct iter *it)
{
	return ((const struct merge_iter *)it)->heap_n > 0;
}

static struct slice
merge_key(const struct iter *it)
{
	const struct merge_iter *m = (const struct merge_iter *)it;

	assert(m->heap_n > 0);	/* util/iter.h: only while valid */
	return m->top_key;
}

static struct slice
merge_value(const struct iter *it)
{
	const struct merge_iter *m = (const struct merge_iter *)it;

	assert(m->heap_n > 0);
	return iter_value(m->children[m->heap[0]]);
}

static void
merge_free(struct iter *it)
{
	struct merge_iter *m = (struct merge_iter *)it;

	for (size_t i = 0; i < m->n; i++)
		iter_free(m->children[i]);
	buf_release(&m->last_key);
	bt_free(m);
}

/* The value is the top child's. */
static int
merge_pin(struct iter *it, uint64_t epoch)
{
	struct merge_iter *m = (struct merge_iter *)it;

	return iter_pin(m->children[m->heap[0]], epoch);
}

static const struct iter_ops merge_ops = {
	.seek_first = merge_seek_first,
	.seek = merge_seek,
	.next = merge_next,
	.valid = merge_valid,
	.key = merge_key,
	.value = merge_value,
	.free = merge_free,
	.pin = merge_pin,
};

/*
 * One allocation: the iterator, then its arrays of n each.  One child is
 * its own union: it is returned as it is, sparing every step of a read
 * or a compaction of a single source (a major compaction of a tablet's
 * one file) the heap's indirection.
 */
int
merge_iter_new(struct iter **children, size_t n, struct iter **out)
{
	size_t k = n ? n : 1;
	struct merge_iter *m;
	uint8_t *p;

	if (n == 1) {
		*out = children[0];
		return 0;
	}
	if ((m = bt_calloc(1, sizeof(*m) + k * (sizeof(*m->children) +
	    sizeof(*m->heap)))) == NULL) {
		for (size_t i = 0; i < n; i++)
			iter_free(children[i]);
		return -ENOMEM;
	}
	p = (uint8_t *)(m + 1);
	m->children = (struct iter **)p;
	p += k * sizeof(*m->children);
	m->heap = (size_t *)p;
	m->base.ops = &merge_ops;
	buf_init(&m->last_key);
	for (size_t i = 0; i < n; i++)
		m->children[i] = children[i];
	m->n = n;
	*out = &m->base;
	return 0;
}
