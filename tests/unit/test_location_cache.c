/*
 * test_location_cache.c - the client's tablet location cache: hits and
 * misses at range edges, the empty start and the open end, inserts that
 * replace what they overlap (split children, merged tablets), invalidation
 * by row, tablet and table, per-table isolation, bounded memory with CLOCK
 * eviction, counters, allocation failure, and readers racing a writer.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "api/location_cache.h"
#include "util/alloc.h"
#include "util/error.h"
#include "tap.h"

#define EMPTY slice_make(NULL, 0)

/* The tablet the cache names for (table, row), 0 on a miss, or
 * UINT64_MAX on an error. */
static uint64_t
hit(struct location_cache *lc, uint64_t table, const char *row)
{
	uint64_t id = 0;
	int rc = location_cache_lookup(lc, table, slice_str(row), &id);

	if (rc == BT_NOTFOUND)
		return 0;
	return rc == 0 ? id : UINT64_MAX;
}

static void
test_edges_and_replacement(void)
{
	struct location_cache *lc;
	struct location_cache_stats st;

	if (location_cache_new(0, &lc) != 0)
		tap_bail("location_cache_new");
	is_int(hit(lc, 1, "a"), 0, "an empty cache misses");
	is_int(location_cache_insert(lc, 1, EMPTY, slice_str("m"), 1), 0,
	    "cache [, m) -> 1");
	is_int(location_cache_insert(lc, 1, slice_str("m"), EMPTY, 2), 0,
	    "cache [m, ) -> 2");
	is_int(hit(lc, 1, ""), 1, "the empty row is in the first tablet");
	is_int(hit(lc, 1, "a"), 1, "a is in [, m)");
	is_int(hit(lc, 1, "l\xff\xff"), 1, "the row just before m is in [, m)");
	is_int(hit(lc, 1, "m"), 2, "m itself, the boundary, is in [m, )");
	is_int(hit(lc, 1, "m\x01"), 2, "just after m is in [m, )");
	is_int(hit(lc, 1, "\xff\xff\xff"), 2, "a high row is in the open end");
	is_int(hit(lc, 2, "a"), 0, "another table misses");

	is_int(location_cache_insert(lc, 1, slice_str("m"), slice_str("t"), 3),
	    0, "a split child [m, t) -> 3 replaces [m, )");
	is_int(hit(lc, 1, "m"), 3, "m -> 3");
	is_int(hit(lc, 1, "s\xff"), 3, "s\\xff -> 3");
	is_int(hit(lc, 1, "t"), 0, "t misses: the other child is not known");
	is_int(hit(lc, 1, "a"), 1, "the left neighbour stays");
	is_int(location_cache_insert(lc, 1, slice_str("t"), EMPTY, 4), 0,
	    "the other child [t, ) -> 4");
	is_int(hit(lc, 1, "t"), 4, "t -> 4");
	is_int(hit(lc, 1, "zz"), 4, "zz -> 4");

	is_int(location_cache_insert(lc, 1, slice_str("c"), slice_str("p"), 5),
	    0, "a range [c, p) overlapping two entries");
	is_int(hit(lc, 1, "a"), 0, "it dropped [, m)");
	is_int(hit(lc, 1, "o"), 5, "o -> 5");
	is_int(hit(lc, 1, "p"), 0, "it dropped [m, t) too");
	is_int(hit(lc, 1, "t"), 4, "[t, ) did not overlap and stays");
	is_int(location_cache_insert(lc, 1, EMPTY, EMPTY, 6), 0,
	    "a merge of everything: [, ) -> 6");
	is_int(hit(lc, 1, "a"), 6, "a -> 6");
	is_int(hit(lc, 1, "zz"), 6, "zz -> 6");
	location_cache_get_stats(lc, &st);
	is_int(st.entries, 1, "one entry is left");

	is_int(location_cache_insert(lc, 1, slice_str("b"), slice_str("b"), 7),
	    -EINVAL, "an empty range is -EINVAL");
	is_int(location_cache_insert(lc, 1, slice_str("c"), slice_str("b"), 7),
	    -EINVAL, "a reversed range is -EINVAL");
	is_int(hit(lc, 1, "b"), 6, "and changed nothing");

	is_int(location_cache_invalidate(lc, 1, slice_str("q")), 0,
	    "invalidate the entry holding q");
	is_int(hit(lc, 1, "a"), 0, "it is gone");
	is_int(location_cache_invalidate(lc, 1, slice_str("q")), BT_NOTFOUND,
	    "invalidating it again is BT_NOTFOUND");

	location_cache_insert(lc, 1, EMPTY, slice_str("k"), 8);
	location_cache_insert(lc, 1, slice_str("k"), EMPTY, 9);
	location_cache_insert(lc, 2, EMPTY, EMPTY, 8);
	is_int(location_cache_invalidate_tablet(lc, 8), 0,
	    "invalidate tablet 8 (cached under two tables)");
	ok(hit(lc, 1, "a") == 0 && hit(lc, 2, "a") == 0 && hit(lc, 1, "k") == 9,
	    "both of its entries are gone, 9 stays");
	is_int(location_cache_invalidate_tablet(lc, 8), BT_NOTFOUND,
	    "again: BT_NOTFOUND");
	is_int(location_cache_invalidate_table(lc, 1), 0, "invalidate table 1");
	is_int(hit(lc, 1, "k"), 0, "its entries are gone");
	is_int(location_cache_invalidate_table(lc, 1), BT_NOTFOUND,
	    "again: BT_NOTFOUND");

	location_cache_add_levels(lc, 3);
	location_cache_add_levels(lc, 3);
	location_cache_get_stats(lc, &st);
	is_int(st.lookups, st.hits + st.misses,
	    "every lookup is a hit or a miss");
	ok(st.hits > 10 && st.misses > 5, "hits %llu, misses %llu",
	    (unsigned long long)st.hits, (unsigned long long)st.misses);
	is_int(st.levels_walked, 6, "levels walked add up");
	is_int(st.invalidations, 1 + 2 + 1, "invalidations count entries");
	is_int(st.capacity, LOCATION_CACHE_DEFAULT_CAPACITY,
	    "capacity 0 is the default");
	location_cache_free(lc);
	location_cache_free(NULL);
}

static struct slice
key_of(char *buf, size_t size, unsigned i)
{
	snprintf(buf, size, "k%06u", i);
	return slice_str(buf);
}

static void
cache_range(struct location_cache *lc, uint64_t table, unsigned i,
    uint64_t id)
{
	char a[16], b[16];

	if (location_cache_insert(lc, table, key_of(a, sizeof(a), i),
	    key_of(b, sizeof(b), i + 1), id) != 0)
		tap_bail("location_cache_insert");
}

static uint64_t
hit_index(struct location_cache *lc, uint64_t table, unsigned i)
{
	char a[16];

	key_of(a, sizeof(a), i);
	return hit(lc, table, a);
}

/* The cache never holds more than its capacity, and CLOCK keeps what was
 * looked up since the hand last passed. */
static void
test_bounded(void)
{
	struct location_cache *lc;
	struct location_cache_stats st;
	int kept = 0, wrong = 0;

	if (location_cache_new(100, &lc) != 0)
		tap_bail("location_cache_new");
	for (unsigned i = 0; i < 1000; i++)
		cache_range(lc, 1 + i % 3, i, 10000 + i);
	location_cache_get_stats(lc, &st);
	is_int(st.entries, 100, "1000 inserts into 100 entries keep 100");
	is_int(st.evictions, 900, "and evicted 900");
	for (unsigned i = 0; i < 1000; i++) {
		uint64_t id = hit_index(lc, 1 + i % 3, i);

		kept += id != 0;
		wrong += id != 0 && id != 10000 + i;
	}
	is_int(kept, 100, "100 of them still hit");
	is_int(wrong, 0, "each with its own tablet");
	location_cache_free(lc);

	/* Fill 100, let the hand pass once (one eviction), then use ten: the
	 * next fifty evictions spare those ten. */
	if (location_cache_new(100, &lc) != 0)
		tap_bail("location_cache_new");
	for (unsigned i = 0; i < 101; i++)
		cache_range(lc, 1, i, 20000 + i);
	for (unsigned i = 10; i < 20; i++)
		hit_index(lc, 1, i);
	for (unsigned i = 101; i < 151; i++)
		cache_range(lc, 1, i, 20000 + i);
	kept = 0;
	for (unsigned i = 10; i < 20; i++)
		kept += hit_index(lc, 1, i) == 20000 + i;
	is_int(kept, 10, "entries looked up since the hand passed survive");
	location_cache_get_stats(lc, &st);
	is_int(st.entries, 100, "still 100 entries");
	location_cache_free(lc);
}

static void
test_alloc_failure(void)
{
	struct location_cache *lc;
	struct location_cache_stats st;
	int bad = 0;

	if (location_cache_new(10, &lc) != 0)
		tap_bail("location_cache_new");
	cache_range(lc, 1, 1, 1);
	for (long k = 1; k <= 4; k++) {
		char a[16], b[16];
		int rc;

		bt_alloc_fail_after(k);
		rc = location_cache_insert(lc, 7, key_of(a, sizeof(a), 5),
		    key_of(b, sizeof(b), 6), 5);
		bt_alloc_fail_after(0);
		bad += rc != 0 && rc != -ENOMEM;
		if (rc == 0)
			location_cache_invalidate_table(lc, 7);
	}
	is_int(bad, 0, "a failed allocation is -ENOMEM");
	bt_alloc_fail_after(1);
	is_int(location_cache_insert(lc, 1, slice_str("x"), EMPTY, 9), -ENOMEM,
	    "an insert whose copy cannot be made is -ENOMEM");
	bt_alloc_fail_after(0);
	is_int(hit_index(lc, 1, 1), 1, "and leaves the cache as it was");
	is_int(hit(lc, 1, "x"), 0, "without the new entry");
	location_cache_get_stats(lc, &st);
	is_int(st.entries, 1, "one entry");
	location_cache_free(lc);
}

#define RACE_ROWS 400
#define RACE_READERS 4

struct race {
	struct location_cache *lc;
	atomic_bool stop;
	atomic_long wrong, hits, lookups;
};

/* Tiling A: [10i, 10i+10) -> 1000+i; tiling B: [5i, 5i+5) -> 5000+i. */
static bool
race_valid(unsigned row, uint64_t id)
{
	return id == 1000 + row / 10 || id == 5000 + row / 5;
}

static void *
race_reader(void *arg)
{
	struct race *r = arg;
	uint64_t state = (uint64_t)(uintptr_t)&arg | 1;

	while (!atomic_load(&r->stop)) {
		unsigned row = (unsigned)(tap_rand(&state) % RACE_ROWS);
		uint64_t id = hit_index(r->lc, 1, row);

		atomic_fetch_add(&r->lookups, 1);
		if (id == 0)
			continue;
		atomic_fetch_add(&r->hits, 1);
		if (!race_valid(row, id))
			atomic_fetch_add(&r->wrong, 1);
	}
	return NULL;
}

static void
test_readers_race_writer(void)
{
	struct race r;
	pthread_t tids[RACE_READERS];
	char a[16], b[16];

	memset(&r, 0, sizeof(r));
	if (location_cache_new(RACE_ROWS, &r.lc) != 0)
		tap_bail("location_cache_new");
	for (int i = 0; i < RACE_READERS; i++)
		if (pthread_create(&tids[i], NULL, race_reader, &r) != 0)
			tap_bail("pthread_create");
	for (int round = 0; round < 200; round++) {
		bool fine = round % 2 == 1;
		unsigned step = fine ? 5 : 10;

		for (unsigned s = 0; s < RACE_ROWS; s += step)
			location_cache_insert(r.lc, 1,
			    key_of(a, sizeof(a), s),
			    key_of(b, sizeof(b), s + step),
			    (fine ? 5000 : 1000) + s / step);
		if (round % 7 == 0)
			location_cache_invalidate(r.lc, 1,
			    key_of(a, sizeof(a), (unsigned)round));
	}
	/* On a loaded machine (or under valgrind, which runs one thread at
	 * a time) the writer may be done before a reader ran at all. */
	for (long spin = 0; atomic_load(&r.hits) == 0 && spin < 100000000;
	    spin++)
		sched_yield();
	atomic_store(&r.stop, true);
	for (int i = 0; i < RACE_READERS; i++)
		pthread_join(tids[i], NULL);
	is_int(atomic_load(&r.wrong), 0, "%d readers racing a writer never see "
	    "a wrong tablet (%ld lookups, %ld hits)", RACE_READERS,
	    atomic_load(&r.lookups), atomic_load(&r.hits));
	ok(atomic_load(&r.hits) > 0, "and they did hit");
	location_cache_free(r.lc);
}

int
main(void)
{
	test_edges_and_replacement();
	test_bounded();
	test_alloc_failure();
	test_readers_race_writer();
	return tap_done();
}
