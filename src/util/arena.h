/*
 * arena.h - bump allocator for the memtable.
 *
 * Memory comes in blocks (4 KiB while the arena holds less than 32 KiB,
 * then growing with it to 64 KiB: at most a quarter of what it holds; an
 * allocation larger than a quarter of the next block that does not fit
 * the current block gets a block of its own) and is freed all at once by
 * arena_free().  One thread allocates at a time;
 * arena_memory_usage() may be called from any thread.
 */
#ifndef TABLETFS_UTIL_ARENA_H
#define TABLETFS_UTIL_ARENA_H

#include <stddef.h>

struct arena;

/* 0 or -ENOMEM. */
int arena_new(struct arena **out);
/* Frees every allocation; accepts NULL. */
void arena_free(struct arena *a);

/* n bytes (n > 0), or NULL when memory runs out. */
void *arena_alloc(struct arena *a, size_t n);
/* The same, aligned for any pointer or 8-byte integer. */
void *arena_alloc_aligned(struct arena *a, size_t n);

/*
 * Make the next allocations, of n bytes in all and at most allocations of
 * them (each counted with its alignment), take nothing from the system:
 * they are carved from the current block, which gets a new one big enough
 * if it is too small.  0 or -ENOMEM (nothing changes).  Reservations made
 * before the allocations they cover add up until arena_reserve_end(),
 * which the caller makes once those allocations are done; allocations
 * themselves keep no account of them.
 */
int arena_reserve(struct arena *a, size_t n, size_t allocations);
void arena_reserve_end(struct arena *a);

/* Bytes held from the system, including block overhead. */
size_t arena_memory_usage(const struct arena *a);

#endif
