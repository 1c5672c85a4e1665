/*
 * memtable.c - a skiplist in an arena, with one writer and lock-free readers.
 *
 * Concurrency follows LevelDB's skiplist.  Nodes are never removed or
 * changed once linked, so a reader only needs to see a node whole by the
 * time it can reach it.  The writer fills a node (key, value, its own next
 * pointers) and then links it with a release store into each predecessor's
 * next pointer, bottom level first; readers follow next pointers with
 * acquire loads, so every byte the writer wrote before a link is visible to
 * a reader that followed it.  A reader racing the writer sees the list with
 * or without the new node at each level, and any such view is a valid
 * skiplist because a node is in level 0 before it is in a higher one.
 *
 * The height of the list is published the same way.  A reader that sees a
 * new height before the head's pointers at the new levels finds NULL there
 * and descends, which is harmless.
 *
 * The invariants, cited by number below:
 *
 * M1. One writer.  memtable_add() and memtable_reserve() run one at a
 *     time (the caller serializes them); debug builds check it.
 * M2. Order.  Level 0 holds every node in strictly ascending key_less()
 *     order, and a node linked at level i is linked at every level below
 *     it.  Each insertion checks that its node goes between a smaller key
 *     and a larger one.
 * M3. Publication.  A node is linked at a level only after its key,
 *     value and own next pointer there are written (a release store),
 *     and count is raised only after all its links.
 * M4. The writer's hint.  last is the node added last, and splice[i] the
 *     last node at level i at or before it; memtable_find_after_last()
 *     relies on that, and M2's check catches a wrong hint.
 * M5. Bounds.  max is the node with the largest key (NULL while the
 *     memtable is empty): the writer stores a node there, with release,
 *     once it is linked at every level and before count is raised, when
 *     it has no successor at level 0.  Its key only grows, so a reader
 *     that loads it (acquire) after memtable_add() returned, or after any
 *     later load of it, finds a key at least as large.  A key past it is
 *     in no node the reader's search could reach: memtable_seek() answers
 *     such a key without a search, and a key at or before the first node
 *     (level 0's head link, read the same way) with that node.
 */
#include <assert.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "memtable/memtable.h"
#include "util/alloc.h"
#include "util/arena.h"
#include "util/error.h"

#define MEMTABLE_MAX_HEIGHT	12

/*
 * One entry.  Its allocation holds `height` next pointers, highest level
 * first, then this header, then the key bytes and the value bytes; a node
 * pointer points at the header, so the link of level i is the i+1-th
 * pointer below it (node_link()) and the key is always right after it.
 * A search that follows level 0's link and compares the key it reaches
 * touches 16 adjacent bytes around the pointer, and no field says where
 * the key starts.  The header is 8 bytes rather than three words: an
 * entry of the usual put (a 39-byte key, a 100-byte value) is 16 bytes
 * smaller, so a memtable holds about 10 % more entries before it is
 * frozen.  memtable_add() refuses a key or a value whose length does not
 * fit 32 bits.
 */
struct mt_node {
	uint32_t key_len;
	uint32_t value_len;
};

struct memtable {
	struct arena *arena;
	struct mt_node *head;		/* sentinel of full height, no key */
	_Atomic(struct mt_node *) max;	/* M5: the largest key's node */
	atomic_int height;		/* levels in use, 1..MAX_HEIGHT */
	_Atomic uint64_t count;
	atomic_uint refs;
	uint64_t rand_state;		/* the writer's PRNG */
	/* The writer's own, never read by readers: the node it added last
	 * (NULL before the first), and at each level the last node before
	 * or at it (the head when none): where the next key goes when keys
	 * come in ascending order. */
	struct mt_node *last;
	struct mt_node *splice[MEMTABLE_MAX_HEIGHT];
#ifndef NDEBUG
	atomic_int writing;		/* M1: a writer is inside */
#endif
};

struct memtable_iter {
	struct iter base;
	struct memtable *m;
	struct mt_node *node;		/* NULL when invalid */
};

/* The next pointer of level (0 .. the node's height - 1). */
static _Atomic(struct mt_node *) *
node_link(const struct mt_node *x, int level)
{
	return (_Atomic(struct mt_node *) *)x - 1 - level;
}

static const uint8_t *
node_data(const struct mt_node *x)
{
	return (const uint8_t *)(x + 1);
}

static struct slice
node_key(const struct mt_node *x)
{
	return slice_make(node_data(x), x->key_len);
}

static struct slice
node_value(const struct mt_node *x)
{
	return slice_make(node_data(x) + x->key_len, x->value_len);
}

/*
 * Whether a sorts before b in slice_compare() order.  Inline, eight bytes
 * at a time (read as big-endian words, so that their order is the bytes'
 * order): the tablet's keys are tens of bytes that share long prefixes
 * (a row's keys share the row), and a library memcmp call per node
 * visited cost more than the comparison.
 */
static inline bool
key_less(struct slice a, struct slice b)
{
	size_t n = a.n < b.n ? a.n : b.n, i = 0;

	for (; i + 8 <= n; i += 8) {
		uint64_t x, y;

		memcpy(&x, a.p + i, 8);
		memcpy(&y, b.p + i, 8);
		if (x != y) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
			x = __builtin_bswap64(x);
			y = __builtin_bswap64(y);
#endif
			return x < y;
		}
	}
	for (; i < n; i++)
		if (a.p[i] != b.p[i])
			return a.p[i] < b.p[i];
	return a.n < b.n;
}

static struct mt_node *
node_next(const struct mt_node *x, int level)
{
	return atomic_load_explicit(node_link(x, level), memory_order_acquire);
}

/*
 * Allocate a node of the given height holding copies of key and value
 * (each at most UINT32_MAX bytes), with its next pointers NULL.  NULL when
 * memory runs out.
 */
static struct mt_node *
node_new(struct arena *a, int height, struct slice key, struct slice value)
{
	struct mt_node *x;
	size_t links = (size_t)height * sizeof(struct mt_node *);
	uint8_t *p, *data;
	int i;

	if (key.n > SIZE_MAX - links - sizeof(*x) ||
	    value.n > SIZE_MAX - links - sizeof(*x) - key.n)
		return NULL;
	if ((p = arena_alloc_aligned(a, links + sizeof(*x) + key.n +
	    value.n)) == NULL)
		return NULL;
	x = (struct mt_node *)(p + links);
	x->key_len = (uint32_t)key.n;
	x->value_len = (uint32_t)value.n;
	for (i = 0; i < height; i++)
		atomic_init(node_link(x, i), NULL);
	data = (uint8_t *)(x + 1);
	if (key.n > 0)
		memcpy(data, key.p, key.n);
	if (value.n > 0)
		memcpy(data + key.n, value.p, value.n);
	return x;
}

/*
 * A height for a new node: h with probability (1/4)^(h-1), capped.
 * The PRNG (xorshift64*) is touched only by the writer; two bits of its
 * output decide each level.
 */
static int
memtable_random_height(struct memtable *m)
{
	uint64_t x = m->rand_state;
	int height = 1;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	m->rand_state = x;
	x *= 0x2545f4914f6cdd1dull;
	while (height < MEMTABLE_MAX_HEIGHT && (x >> 62) == 0) {
		height++;
		x <<= 2;
	}
	return height;
}

/*
 * The first node whose key is >= key, or NULL.  When prev is not NULL, it
 * receives at each level in use the last node whose key is < key (the head
 * when there is none): the places where key would be linked.
 */
static struct mt_node *
memtable_find_ge(struct memtable *m, struct slice key,
    struct mt_node **prev)
{
	struct mt_node *x = m->head, *next;
	int level;

	level = atomic_load_explicit(&m->height, memory_order_acquire) - 1;
	for (;;) {
		next = node_next(x, level);
		if (next != NULL && key_less(node_key(next), key)) {
			x = next;
			continue;
		}
		if (prev != NULL)
			prev[level] = x;
		if (level == 0)
			return next;
		level--;
	}
}

/*
 * A reader's memtable_find_ge(): the first node whose key is >= key, or
 * NULL, answered from the bounds (M5) when key is past the largest key or
 * at or before the smallest, which costs one or two compares instead of a
 * search through every level.
 */
static struct mt_node *
memtable_seek(struct memtable *m, struct slice key)
{
	struct mt_node *max, *first;

	max = atomic_load_explicit(&m->max, memory_order_acquire);
	if (max == NULL || key_less(node_key(max), key))
		return NULL;
	first = node_next(m->head, 0);
	assert(first != NULL);		/* linked before max was stored */
	if (!key_less(node_key(first), key))
		return first;
	return memtable_find_ge(m, key, NULL);
}

/*
 * The places where key would be linked, found from the last insertion
 * when key comes right after it at every level in use: true with prev
 * filled in as memtable_find_ge() would, or false (nothing is known).
 * Ascending keys (a sequential load, a row's cells) cost a compare or
 * two instead of a search from the head; any other key costs one or two
 * compares more.  Correct for any such key: each splice node sorts before
 * key, and its successor at its level is past key or absent, so it is the
 * last node before key there.
 */
static bool
memtable_find_after_last(struct memtable *m, struct slice key,
    struct mt_node **prev)
{
	struct mt_node *next;
	int level, height;

	if (m->last == NULL || !key_less(node_key(m->last), key))
		return false;
	height = atomic_load_explicit(&m->height, memory_order_relaxed);
	for (level = 0; level < height; level++) {
		next = node_next(m->splice[level], level);
		if (next != NULL && key_less(node_key(next), key))
			return false;
		prev[level] = m->splice[level];
	}
	return true;
}

int
memtable_new(struct memtable **out)
{
	struct memtable *m;
	struct mt_node *head;
	int rc;

	if ((m = bt_malloc(sizeof(*m))) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	if ((rc = arena_new(&m->arena)) < 0)
		goto out_free;
	head = node_new(m->arena, MEMTABLE_MAX_HEIGHT, slice_make(NULL, 0),
	    slice_make(NULL, 0));
	if (head == NULL) {
		rc = -ENOMEM;
		goto out_arena;
	}
	m->head = head;
	atomic_init(&m->max, NULL);
	atomic_init(&m->height, 1);
	atomic_init(&m->count, 0);
	atomic_init(&m->refs, 1);
	m->rand_state = 0x9e3779b97f4a7c15ull;
	m->last = NULL;
	for (int i = 0; i < MEMTABLE_MAX_HEIGHT; i++)
		m->splice[i] = head;
#ifndef NDEBUG
	atomic_init(&m->writing, 0);
#endif
	*out = m;
	return 0;
out_arena:
	arena_free(m->arena);
out_free:
	bt_free(m);
out:
	return rc;
}

void
memtable_ref(struct memtable *m)
{
	atomic_fetch_add_explicit(&m->refs, 1, memory_order_relaxed);
}

/*
 * The release half of acq_rel orders this thread's last reads before the
 * free; the acquire half makes every other holder's reads precede it.
 */
void
memtable_unref(struct memtable *m)
{
	unsigned refs;

	if (m == NULL)
		return;
	refs = atomic_fetch_sub_explicit(&m->refs, 1, memory_order_acq_rel);
	assert(refs > 0);
	if (refs != 1)
		return;
	arena_free(m->arena);
	bt_free(m);
}

/* Enter and leave a writer's call (M1): abort when another is inside. */
static inline void
writer_enter(struct memtable *m)
{
#ifndef NDEBUG
	int inside = atomic_exchange_explicit(&m->writing, 1,
	    memory_order_acquire);

	assert(inside == 0);
#else
	(void)m;
#endif
}

static inline void
writer_leave(struct memtable *m)
{
#ifndef NDEBUG
	atomic_store_explicit(&m->writing, 0, memory_order_release);
#else
	(void)m;
#endif
}

/* A node's allocation at its tallest, less its key and value. */
#define MEMTABLE_NODE_MAX \
	(MEMTABLE_MAX_HEIGHT * sizeof(struct mt_node *) + sizeof(struct mt_node))

int
memtable_reserve(struct memtable *m, size_t count, size_t key_bytes,
    size_t value_bytes)
{
	int rc;

	if (count > SIZE_MAX / MEMTABLE_NODE_MAX ||
	    key_bytes > SIZE_MAX - count * MEMTABLE_NODE_MAX ||
	    value_bytes > SIZE_MAX - count * MEMTABLE_NODE_MAX - key_bytes)
		return -ENOMEM;
	writer_enter(m);
	rc = arena_reserve(m->arena, count * MEMTABLE_NODE_MAX + key_bytes +
	    value_bytes, count);
	writer_leave(m);
	return rc;
}

void
memtable_reserve_end(struct memtable *m)
{
	writer_enter(m);
	arena_reserve_end(m->arena);
	writer_leave(m);
}

/*
 * Link a new node between its predecessors and successors, level by level
 * from the bottom (M2, M3), and make it the largest when it is (M5).  The
 * count is bumped last, with release, so a
 * reader that reads count n can then iterate over at least n entries.
 */
static int
memtable_insert(struct memtable *m, struct slice key, struct slice value)
{
	struct mt_node *prev[MEMTABLE_MAX_HEIGHT], *x, *succ;
	int height, cur, i;
	uint64_t count;

	if (key.n > UINT32_MAX || value.n > UINT32_MAX)
		return bt_error_set(-EFBIG, "memtable: a %zu-byte key or a "
		    "%zu-byte value is too large", key.n, value.n);
	if (memtable_find_after_last(m, key, prev))
		x = node_next(prev[0], 0);
	else
		x = memtable_find_ge(m, key, prev);
	if (x != NULL && slice_equal(node_key(x), key))
		return -EEXIST;
	assert(prev[0] == m->head || key_less(node_key(prev[0]), key));
	assert(x == NULL || key_less(key, node_key(x)));	/* M2 */
	height = memtable_random_height(m);
	if ((x = node_new(m->arena, height, key, value)) == NULL)
		return -ENOMEM;
	cur = atomic_load_explicit(&m->height, memory_order_relaxed);
	if (height > cur) {
		for (i = cur; i < height; i++)
			prev[i] = m->head;
		atomic_store_explicit(&m->height, height, memory_order_release);
	}
	for (i = 0; i < height; i++) {
		succ = atomic_load_explicit(node_link(prev[i], i),
		    memory_order_relaxed);
		atomic_store_explicit(node_link(x, i), succ,
		    memory_order_relaxed);
		atomic_store_explicit(node_link(prev[i], i), x,
		    memory_order_release);
		m->splice[i] = x;
	}
	cur = atomic_load_explicit(&m->height, memory_order_relaxed);
	for (; i < cur; i++)
		m->splice[i] = prev[i];
	m->last = x;
	if (atomic_load_explicit(node_link(x, 0), memory_order_relaxed) ==
	    NULL)
		atomic_store_explicit(&m->max, x, memory_order_release);
	count = atomic_load_explicit(&m->count, memory_order_relaxed);
	atomic_store_explicit(&m->count, count + 1, memory_order_release);
	return 0;
}

int
memtable_add(struct memtable *m, struct slice key, struct slice value)
{
	int rc;

	writer_enter(m);
	rc = memtable_insert(m, key, value);
	writer_leave(m);
	return rc;
}

int
memtable_get(struct memtable *m, struct slice key, struct slice *value)
{
	struct mt_node *x;

	x = memtable_seek(m, key);
	if (x == NULL || !slice_equal(node_key(x), key))
		return BT_NOTFOUND;
	*value = node_value(x);
	return 0;
}

int
memtable_visit_prefix(struct memtable *m, struct slice prefix,
    int (*visit)(void *arg, struct slice key, struct slice value), void *arg)
{
	struct mt_node *x;
	int rc;

	for (x = memtable_seek(m, prefix);
	    x != NULL && slice_starts_with(node_key(x), prefix);
	    x = node_next(x, 0))
		if ((rc = visit(arg, node_key(x), node_value(x))) != 0)
			return rc;
	return 0;
}

size_t
memtable_memory_usage(const struct memtable *m)
{
	return arena_memory_usage(m->arena);
}

uint64_t
memtable_count(const struct memtable *m)
{
	return atomic_load_explicit(&m->count, memory_order_acquire);
}

static int
memtable_iter_seek_first(struct iter *it)
{
	struct memtable_iter *mi = (struct memtable_iter *)it;

	mi->node = node_next(mi->m->head, 0);
	return 0;
}

static int
memtable_iter_seek(struct iter *it, struct slice target)
{
	struct memtable_iter *mi = (struct memtable_iter *)it;

	mi->node = memtable_seek(mi->m, target);
	return 0;
}

static int
memtable_iter_next(struct iter *it)
{
	struct memtable_iter *mi = (struct memtable_iter *)it;

	if (mi->node != NULL)
		mi->node = node_next(mi->node, 0);
	return 0;
}

static bool
memtable_iter_valid(const struct iter *it)
{
	const struct memtable_iter *mi = (const struct memtable_iter *)it;

	return mi->node != NULL;
}

static struct slice
memtable_iter_key(const struct iter *it)
{
	const struct memtable_iter *mi = (const struct memtable_iter *)it;

	assert(mi->node != NULL);	/* util/iter.h: only while valid */
	return node_key(mi->node);
}

static struct slice
memtable_iter_value(const struct iter *it)
{
	const struct memtable_iter *mi = (const struct memtable_iter *)it;

	assert(mi->node != NULL);
	return node_value(mi->node);
}

static void
memtable_iter_free(struct iter *it)
{
	struct memtable_iter *mi = (struct memtable_iter *)it;

	memtable_unref(mi->m);
	bt_free(mi);
}

/* Entries are never moved or freed while the memtable lives, and the
 * iterator holds a reference on it: every value is pinned already. */
static int
memtable_iter_pin(struct iter *it, uint64_t epoch)
{
	(void)it;
	(void)epoch;
	return 0;
}

static const struct iter_ops memtable_iter_ops = {
	.seek_first = memtable_iter_seek_first,
	.seek = memtable_iter_seek,
	.next = memtable_iter_next,
	.valid = memtable_iter_valid,
	.key = memtable_iter_key,
	.value = memtable_iter_value,
	.free = memtable_iter_free,
	.pin = memtable_iter_pin,
};

int
memtable_iter_new(struct memtable *m, struct iter **out)
{
	struct memtable_iter *mi;

	if ((mi = bt_malloc(sizeof(*mi))) == NULL)
		return -ENOMEM;
	mi->base.ops = &memtable_iter_ops;
	memtable_ref(m);
	mi->m = m;
	mi->node = NULL;
	*out = &mi->base;
	return 0;
}
