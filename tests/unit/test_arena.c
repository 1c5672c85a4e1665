/*
 * test_arena.c - the bump allocator: sizes small and large, alignment,
 * no overlap between allocations, memory accounting, allocation failure.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "tap.h"
#include "util/alloc.h"
#include "util/arena.h"

#define NALLOC 20000

struct allocation {
	uint8_t *p;
	size_t n;
	uint8_t fill;
};

/* A size: mostly small, sometimes past a quarter block, rarely huge. */
static size_t
random_size(uint64_t *rng)
{
	uint64_t r = tap_rand(rng) % 100;

	if (r < 80)
		return 1 + tap_rand(rng) % 64;
	if (r < 95)
		return 1 + tap_rand(rng) % 1200;
	if (r < 99)
		return 1 + tap_rand(rng) % 8000;
	return 1 + tap_rand(rng) % 100000;
}

static void
test_random_allocations(uint64_t *rng)
{
	struct allocation *all;
	struct arena *a;
	size_t total = 0, usage, prev_usage;
	int misaligned = 0, nulls = 0, shrank = 0, clobbered = 0;
	int naligned = 0;

	if ((all = calloc(NALLOC, sizeof(*all))) == NULL)
		tap_bail("out of memory");
	is_int(arena_new(&a), 0, "arena_new");
	prev_usage = arena_memory_usage(a);
	ok(prev_usage > 0, "a new arena counts its own struct");

	for (int i = 0; i < NALLOC; i++) {
		struct allocation *x = &all[i];
		bool aligned = tap_rand(rng) % 2 == 0;

		x->n = random_size(rng);
		x->fill = (uint8_t)(i * 131 + 7);
		x->p = aligned ? arena_alloc_aligned(a, x->n) :
		    arena_alloc(a, x->n);
		if (x->p == NULL) {
			nulls++;
			x->n = 0;
			continue;
		}
		if (aligned) {
			naligned++;
			if ((uintptr_t)x->p % 8 != 0)
				misaligned++;
		}
		memset(x->p, x->fill, x->n);
		total += x->n;
		usage = arena_memory_usage(a);
		if (usage < prev_usage)
			shrank++;
		prev_usage = usage;
	}
	is_int(nulls, 0, "%d allocations of random sizes succeed", NALLOC);
	is_int(misaligned, 0, "%d aligned allocations are 8-aligned", naligned);
	is_int(shrank, 0, "memory usage never shrinks");

	for (int i = 0; i < NALLOC; i++) {
		for (size_t j = 0; j < all[i].n; j++) {
			if (all[i].p[j] != all[i].fill) {
				clobbered++;
				break;
			}
		}
	}
	is_int(clobbered, 0, "no allocation was overwritten by another");

	usage = arena_memory_usage(a);
	ok(usage >= total, "usage %zu covers the %zu bytes handed out",
	    usage, total);
	ok(usage <= total + total / 2 + 65536,
	    "usage %zu wastes less than half of %zu bytes", usage, total);
	arena_free(a);
	free(all);
}

static void
test_block_policy(void)
{
	struct arena *a;
	size_t u0, u1, u2;
	uint8_t *p, *q, *big;

	if (arena_new(&a) < 0)
		tap_bail("arena_new");
	u0 = arena_memory_usage(a);
	p = arena_alloc(a, 10);
	u1 = arena_memory_usage(a);
	ok(u1 >= u0 + 4096 && u1 < u0 + 4096 + 256,
	    "first small allocation takes one 4 KiB block (%zu -> %zu)", u0, u1);
	q = arena_alloc(a, 10);
	ok(q == p + 10, "small allocations are contiguous in a block");
	is_int(arena_memory_usage(a), u1, "and cost no more memory");
	ok(arena_alloc(a, 3500) == q + 10,
	    "a large allocation that fits comes from the current block");
	is_int(arena_memory_usage(a), u1, "and costs no more memory");
	big = arena_alloc(a, 2000);
	u2 = arena_memory_usage(a);
	ok(big != NULL && u2 >= u1 + 2000 && u2 < u1 + 2000 + 256,
	    "one over a quarter block that does not fit gets its own block");
	ok(arena_alloc(a, 10) == q + 3510,
	    "and the current block keeps serving small ones");
	p = arena_alloc(a, 1000);
	ok(p != NULL && arena_memory_usage(a) >= u2 + 4096,
	    "a small one that does not fit starts a new 4 KiB block");
	ok(arena_alloc_aligned(a, 8) != NULL, "aligned allocation");
	ok(arena_alloc(a, 1) != NULL && arena_alloc(a, 1) != NULL,
	    "one-byte allocations");
	arena_free(a);
	arena_free(NULL);
	ok(1, "arena_free(NULL) is harmless");
}

/*
 * Blocks for small requests grow from 4 KiB to 64 KiB with what the arena
 * holds (at most a quarter of it) and stay there: a small arena holds
 * little, and a large one few blocks (each a malloc that can grow the
 * heap with a system call).
 */
static void
test_block_growth(void)
{
	struct arena *a;
	size_t last, usage, step, first = 0, most = 0, steps = 0;
	int shrank = 0, over = 0;

	if (arena_new(&a) < 0)
		tap_bail("arena_new");
	last = arena_memory_usage(a);
	while (last < (size_t)4 << 20) {
		if (arena_alloc(a, 100) == NULL)
			tap_bail("arena_alloc");
		usage = arena_memory_usage(a);
		if (usage == last)
			continue;
		step = usage - last;
		if (step > 4096 + 64 && step > last / 4 + 64)
			over++;
		if (first == 0)
			first = step;
		if (step < most)
			shrank++;
		if (step > most)
			most = step;
		steps++;
		last = usage;
	}
	ok(first >= 4096 && first < 4096 + 64, "the first block is 4 KiB "
	    "(%zu)", first);
	ok(most >= 65536 && most < 65536 + 64, "blocks grow to 64 KiB (%zu)",
	    most);
	is_int(shrank, 0, "and never shrink");
	is_int(over, 0, "a block past 4 KiB is at most a quarter of what the "
	    "arena held");
	ok(steps <= 96, "4 MiB of small allocations take %zu blocks (64 of "
	    "64 KiB, and the ramp)", steps);
	arena_free(a);
}

static void
test_alloc_failure(void)
{
	static char sentinel;
	struct arena *a = (struct arena *)(void *)&sentinel;
	void *p;
	int rc;

	bt_alloc_fail_after(1);
	rc = arena_new(&a);
	bt_alloc_fail_after(0);
	ok(rc == -ENOMEM && a == (struct arena *)(void *)&sentinel,
	    "arena_new fails with -ENOMEM and sets nothing");

	if (arena_new(&a) < 0)
		tap_bail("arena_new");
	bt_alloc_fail_after(1);
	p = arena_alloc(a, 100);
	bt_alloc_fail_after(0);
	ok(p == NULL, "arena_alloc returns NULL when memory runs out");
	ok(arena_alloc(a, 100) != NULL, "and works again afterwards");
	ok(arena_alloc(a, SIZE_MAX - 4) == NULL,
	    "an impossible size returns NULL");
	arena_free(a);
}

/*
 * A reservation makes the allocations it covers take nothing from the
 * system, small ones and ones larger than any block alike; reservations
 * add up; a failed one changes nothing; and one outgrown by its caller
 * does not stop the arena from working.
 */
static void
test_reserve(uint64_t *rng)
{
	struct arena *a;
	size_t sizes[64], total = 0, before;
	int bad = 0, rc;

	if (arena_new(&a) < 0)
		tap_bail("arena_new");
	if (arena_alloc(a, 10) == NULL)
		tap_bail("arena_alloc");
	for (int round = 0; round < 200; round++) {
		size_t n = 1 + tap_rand(rng) % 64;

		total = 0;
		for (size_t i = 0; i < n; i++) {
			/* Mostly small, now and then past a block. */
			sizes[i] = tap_rand(rng) % 8 == 0 ?
			    70000 + tap_rand(rng) % 200000 :
			    1 + tap_rand(rng) % 3000;
			total += sizes[i];
		}
		/* In two parts: reservations add up. */
		if (arena_reserve(a, total / 2, n / 2) < 0 ||
		    arena_reserve(a, total - total / 2, n - n / 2) < 0)
			tap_bail("arena_reserve");
		before = arena_memory_usage(a);
		bt_alloc_fail_after(1);
		for (size_t i = 0; i < n; i++) {
			uint8_t *p = i % 2 ? arena_alloc(a, sizes[i]) :
			    arena_alloc_aligned(a, sizes[i]);

			if (p == NULL)
				bad++;
			else
				memset(p, (int)i, sizes[i]);
		}
		bt_alloc_fail_after(0);
		if (arena_memory_usage(a) != before)
			bad++;
		arena_reserve_end(a);
	}
	is_int(bad, 0, "200 rounds: every reserved allocation, up to 270 KB, "
	    "is served without asking the system");

	before = arena_memory_usage(a);
	bt_alloc_fail_after(1);
	/* More than any block the rounds left (a reservation made in
	 * parts takes twice its size). */
	rc = arena_reserve(a, 1 << 28, 1);
	bt_alloc_fail_after(0);
	ok(rc == -ENOMEM && arena_memory_usage(a) == before,
	    "a reservation that needs a block it cannot get is -ENOMEM and "
	    "takes nothing");
	is_int(arena_reserve(a, SIZE_MAX - 4, 4), -ENOMEM,
	    "an impossible reservation is -ENOMEM");
	if (arena_reserve(a, 100, 1) < 0)
		tap_bail("arena_reserve");
	ok(arena_alloc(a, 200000) != NULL && arena_alloc(a, 5000) != NULL &&
	    arena_alloc(a, 50) != NULL, "allocations past a reservation "
	    "still work");
	arena_free(a);
}

/* Reservations made one small part at a time, as a write group's
 * members make them, take a few blocks, not one each. */
static void
test_reserve_parts(void)
{
	struct arena *a;
	size_t blocks_bytes;

	if (arena_new(&a) < 0)
		tap_bail("arena_new");
	for (int i = 0; i < 2000; i++)
		if (arena_reserve(a, 200, 1) < 0)
			tap_bail("arena_reserve");
	blocks_bytes = arena_memory_usage(a);
	ok(blocks_bytes < 8 * 2000 * (200 + 16), "2000 reservations of "
	    "200 bytes in parts take %zu bytes of blocks (linear, not "
	    "quadratic)", blocks_bytes);
	arena_reserve_end(a);
	arena_free(a);
}

struct usage_reader {
	struct arena *a;
	atomic_bool stop;
	int shrank;
	long reads;
};

static void *
usage_reader_main(void *arg)
{
	struct usage_reader *r = arg;
	size_t prev = 0, u;

	while (!atomic_load(&r->stop)) {
		u = arena_memory_usage(r->a);
		if (u < prev)
			r->shrank++;
		prev = u;
		r->reads++;
	}
	return NULL;
}

/* Another thread may read the usage while the owner allocates. */
static void
test_usage_from_other_thread(uint64_t *rng)
{
	struct usage_reader r;
	pthread_t t;
	size_t final;

	if (arena_new(&r.a) < 0)
		tap_bail("arena_new");
	atomic_init(&r.stop, false);
	r.shrank = 0;
	r.reads = 0;
	if (pthread_create(&t, NULL, usage_reader_main, &r) != 0)
		tap_bail("pthread_create");
	for (int i = 0; i < 20000; i++)
		if (arena_alloc(r.a, random_size(rng)) == NULL)
			tap_bail("arena_alloc");
	atomic_store(&r.stop, true);
	pthread_join(t, NULL);
	final = arena_memory_usage(r.a);
	is_int(r.shrank, 0, "a reader thread never sees usage shrink "
	    "(%ld reads, final %zu)", r.reads, final);
	arena_free(r.a);
}

int
main(void)
{
	uint64_t rng = tap_seed();

	test_random_allocations(&rng);
	test_block_policy();
	test_block_growth();
	test_alloc_failure();
	test_reserve(&rng);
	test_reserve_parts();
	test_usage_from_other_thread(&rng);
	return tap_done();
}
