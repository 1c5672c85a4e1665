/*
 * arena.c - bump allocator for the memtable.
 *
 * Blocks are chained through a header at their start and freed together.
 * Small requests are carved from the current block; a request larger than
 * a quarter block gets a block of its own so that the tail of the current
 * block is not wasted.
 *
 * A new block is the largest of 4, 8, 16, 32 and 64 KiB that is at most
 * a quarter of what the arena holds already: a memtable that stays small
 * (one of many tablets) holds no more than with 4 KiB blocks, a block
 * wastes at most a quarter of the rest, and a memtable that fills to its
 * flush size takes 16 times fewer blocks.  Each block was a malloc that
 * grew the heap with a brk or mprotect call of its own (8,011 calls for
 * 200,000 entries of 165 bytes, from a thread other than main): 501 now.
 */
#include <errno.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>

#include "util/alloc.h"
#include "util/arena.h"

#define ARENA_BLOCK_SIZE 4096		/* the smallest block */
#define ARENA_BLOCK_MAX (64 * 1024)	/* the largest but for one request */
#define ARENA_ALIGN (alignof(void *) > 8 ? alignof(void *) : 8)

struct arena_block {
	struct arena_block *next;
	alignas(max_align_t) uint8_t data[];
};

struct arena {
	uint8_t *ptr;			/* next free byte of the current block */
	size_t remaining;		/* bytes free after ptr */
	size_t reserved;		/* since arena_reserve_end() */
	struct arena_block *blocks;	/* newest first */
	atomic_size_t usage;		/* read by arena_memory_usage() */
};

int
arena_new(struct arena **out)
{
	struct arena *a;

	if ((a = bt_malloc(sizeof(*a))) == NULL)
		return -ENOMEM;
	a->ptr = NULL;
	a->remaining = 0;
	a->reserved = 0;
	a->blocks = NULL;
	atomic_init(&a->usage, sizeof(*a));
	*out = a;
	return 0;
}

void
arena_free(struct arena *a)
{
	struct arena_block *b, *next;

	if (a == NULL)
		return;
	for (b = a->blocks; b != NULL; b = next) {
		next = b->next;
		bt_free(b);
	}
	bt_free(a);
}

/* A new block with n bytes of room, linked into the arena. */
static uint8_t *
arena_new_block(struct arena *a, size_t n)
{
	struct arena_block *b;

	if (n > SIZE_MAX - sizeof(*b))
		return NULL;
	if ((b = bt_malloc(sizeof(*b) + n)) == NULL)
		return NULL;
	(void)bt_prefault(b, sizeof(*b) + n);
	b->next = a->blocks;
	a->blocks = b;
	atomic_fetch_add_explicit(&a->usage, sizeof(*b) + n,
	    memory_order_relaxed);
	return b->data;
}

/* The size of the next block that small requests share (see above). */
static size_t
arena_block_size(const struct arena *a)
{
	size_t held = atomic_load_explicit(&a->usage, memory_order_relaxed);
	size_t size = ARENA_BLOCK_SIZE;

	while (size < ARENA_BLOCK_MAX && size <= held / 8)
		size *= 2;
	return size;
}

/*
 * The slow path, when the current block cannot hold n bytes.  Block data is
 * max_align_t aligned, so the result satisfies any alignment request.
 */
static void *
arena_alloc_fallback(struct arena *a, size_t n)
{
	size_t size = arena_block_size(a);
	uint8_t *p;

	if (n > size / 4)
		return arena_new_block(a, n);
	if ((p = arena_new_block(a, size)) == NULL)
		return NULL;
	a->ptr = p + n;
	a->remaining = size - n;
	return p;
}

void *
arena_alloc(struct arena *a, size_t n)
{
	void *p;

	if (n == 0)
		n = 1;
	if (n > a->remaining)
		return arena_alloc_fallback(a, n);
	p = a->ptr;
	a->ptr += n;
	a->remaining -= n;
	return p;
}

void *
arena_alloc_aligned(struct arena *a, size_t n)
{
	size_t slop = (size_t)(-(uintptr_t)a->ptr & (ARENA_ALIGN - 1));
	void *p;

	if (n == 0)
		n = 1;
	if (slop > a->remaining || n > a->remaining - slop)
		return arena_alloc_fallback(a, n);
	p = a->ptr + slop;
	a->ptr += slop + n;
	a->remaining -= slop + n;
	return p;
}

int
arena_reserve(struct arena *a, size_t n, size_t allocations)
{
	size_t need, size;
	uint8_t *p;

	if (allocations > (SIZE_MAX - n) / ARENA_ALIGN ||
	    n + allocations * ARENA_ALIGN > SIZE_MAX - a->reserved)
		return -ENOMEM;
	need = a->reserved + n + allocations * ARENA_ALIGN;
	if (need > a->remaining) {
		size = arena_block_size(a);
		/* Reservations that add up (a write group's, a member at
		 * a time) get room for as much again: a group of n
		 * members then takes O(log n) new blocks, not one each,
		 * ever larger (quadratic memory). */
		if (a->reserved > 0 && need <= SIZE_MAX / 2 &&
		    size < 2 * need)
			size = 2 * need;
		if (size < need)
			size = need;
		if ((p = arena_new_block(a, size)) == NULL)
			return -ENOMEM;
		a->ptr = p;
		a->remaining = size;
	}
	a->reserved = need;
	return 0;
}

void
arena_reserve_end(struct arena *a)
{
	a->reserved = 0;
}

size_t
arena_memory_usage(const struct arena *a)
{
	return atomic_load_explicit(&a->usage, memory_order_relaxed);
}
