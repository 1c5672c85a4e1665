/*
 * location_cache.c - the client's tablet location cache (location_cache.h).
 *
 * Tables are kept in an array sorted by id; each holds its ranges in an
 * array sorted by start.  Cached ranges never overlap, so their ends are
 * sorted too and one binary search answers a lookup.  Arrays make misses
 * cost a memmove, which is small beside the walk that follows a miss.
 * A lookup runs under the read lock and only sets the entry's referenced
 * byte (atomically), so lookups run in parallel; CLOCK eviction clears
 * those bytes under the write lock.
 */
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include "api/location_cache.h"
#include "util/alloc.h"
#include "util/error.h"

struct lc_entry {
	uint8_t *bytes;		/* start, then end */
	uint32_t start_n;
	uint32_t end_n;		/* 0: to the end of the table */
	uint64_t tablet_id;
	uint8_t referenced;	/* set by lookups, cleared by the clock */
};

struct lc_table {
	uint64_t table_id;
	struct lc_entry *v;
	size_t n, cap;
};

struct location_cache {
	pthread_rwlock_t lock;
	size_t capacity;
	size_t entries;
	struct lc_table *tables;	/* sorted by table_id */
	size_t table_count, table_cap;
	size_t hand_table, hand_entry;	/* the clock hand */
	atomic_uint_fast64_t hits, misses;	/* lookups: their sum */
	atomic_uint_fast64_t inserts, invalidations, evictions, levels;
};

static struct slice
entry_start(const struct lc_entry *e)
{
	return slice_make(e->bytes, e->start_n);
}

static struct slice
entry_end(const struct lc_entry *e)
{
	return slice_make(e->bytes + e->start_n, e->end_n);
}

/* Whether row sorts before the end of e (an empty end is infinite). */
static bool
before_end(struct slice row, const struct lc_entry *e)
{
	return e->end_n == 0 || slice_compare(row, entry_end(e)) < 0;
}

int
location_cache_new(size_t capacity, struct location_cache **out)
{
	struct location_cache *lc;

	if ((lc = bt_calloc(1, sizeof(*lc))) == NULL)
		return -ENOMEM;
	if (pthread_rwlock_init(&lc->lock, NULL) != 0) {
		bt_free(lc);
		return -ENOMEM;
	}
	lc->capacity = capacity ? capacity : LOCATION_CACHE_DEFAULT_CAPACITY;
	*out = lc;
	return 0;
}

void
location_cache_free(struct location_cache *lc)
{
	if (lc == NULL)
		return;
	for (size_t i = 0; i < lc->table_count; i++) {
		for (size_t j = 0; j < lc->tables[i].n; j++)
			bt_free(lc->tables[i].v[j].bytes);
		bt_free(lc->tables[i].v);
	}
	bt_free(lc->tables);
	pthread_rwlock_destroy(&lc->lock);
	bt_free(lc);
}

/* The index of table_id in lc->tables, or where it would go (*found
 * false). */
static size_t
table_index(const struct location_cache *lc, uint64_t table_id, bool *found)
{
	size_t lo = 0, hi = lc->table_count;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (lc->tables[mid].table_id < table_id)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = lo < lc->table_count && lc->tables[lo].table_id == table_id;
	return lo;
}

/* The number of entries of t starting at or before row. */
static size_t
upper_bound(const struct lc_table *t, struct slice row)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (slice_compare(entry_start(&t->v[mid]), row) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The entry of t holding row, or NULL. */
static struct lc_entry *
entry_for(const struct lc_table *t, struct slice row)
{
	size_t i = upper_bound(t, row);

	if (i == 0 || !before_end(row, &t->v[i - 1]))
		return NULL;
	return &t->v[i - 1];
}

int
location_cache_lookup(struct location_cache *lc, uint64_t table_id,
    struct slice row, uint64_t *tablet_id)
{
	return location_cache_lookup_range(lc, table_id, row, tablet_id, NULL,
	    NULL);
}

int
location_cache_lookup_range(struct location_cache *lc, uint64_t table_id,
    struct slice row, uint64_t *tablet_id, struct buf *start, struct buf *end)
{
	struct lc_entry *e = NULL;
	size_t ti;
	bool found;
	int rc = 0;

	pthread_rwlock_rdlock(&lc->lock);
	ti = table_index(lc, table_id, &found);
	if (found && (e = entry_for(&lc->tables[ti], row)) != NULL) {
		*tablet_id = e->tablet_id;
		if (!__atomic_load_n(&e->referenced, __ATOMIC_RELAXED))
			__atomic_store_n(&e->referenced, 1, __ATOMIC_RELAXED);
		if (start != NULL)
			rc = buf_set(start, e->bytes, e->start_n);
		if (rc == 0 && end != NULL)
			rc = buf_set(end, e->bytes + e->start_n, e->end_n);
	}
	pthread_rwlock_unlock(&lc->lock);
	if (e == NULL || rc < 0) {
		atomic_fetch_add_explicit(&lc->misses, 1, memory_order_relaxed);
		return rc < 0 ? rc : BT_NOTFOUND;
	}
	atomic_fetch_add_explicit(&lc->hits, 1, memory_order_relaxed);
	return 0;
}

/* Remove entries [from, to) of table ti, freeing their bytes; keeps the
 * clock hand on the entry it pointed at (or the next). */
static void
entries_remove(struct location_cache *lc, size_t ti, size_t from, size_t to)
{
	struct lc_table *t = &lc->tables[ti];

	assert(ti < lc->table_count && from <= to && to <= t->n);
	for (size_t i = from; i < to; i++)
		bt_free(t->v[i].bytes);
	memmove(&t->v[from], &t->v[to], (t->n - to) * sizeof(t->v[0]));
	t->n -= to - from;
	lc->entries -= to - from;
	if (lc->hand_table == ti && lc->hand_entry >= to)
		lc->hand_entry -= to - from;
	else if (lc->hand_table == ti && lc->hand_entry > from)
		lc->hand_entry = from;
}

static void
table_remove(struct location_cache *lc, size_t ti)
{
	entries_remove(lc, ti, 0, lc->tables[ti].n);
	bt_free(lc->tables[ti].v);
	memmove(&lc->tables[ti], &lc->tables[ti + 1],
	    (lc->table_count - ti - 1) * sizeof(lc->tables[0]));
	lc->table_count--;
	if (lc->hand_table > ti) {
		lc->hand_table--;
	} else if (lc->hand_table == ti) {
		lc->hand_entry = 0;
	}
}

/* Evict one entry by CLOCK: the first the hand finds unreferenced since
 * it last passed, clearing marks on the way.  Never more than two turns. */
static void
evict_one(struct location_cache *lc)
{
	for (size_t steps = 0;
	    steps <= 2 * (lc->entries + lc->table_count) + 1; steps++) {
		struct lc_table *t;

		if (lc->hand_table >= lc->table_count) {
			lc->hand_table = 0;
			lc->hand_entry = 0;
		}
		t = &lc->tables[lc->hand_table];
		if (lc->hand_entry >= t->n) {
			lc->hand_table++;
			lc->hand_entry = 0;
			continue;
		}
		if (t->v[lc->hand_entry].referenced) {
			t->v[lc->hand_entry].referenced = 0;
			lc->hand_entry++;
			continue;
		}
		entries_remove(lc, lc->hand_table, lc->hand_entry,
		    lc->hand_entry + 1);
		atomic_fetch_add_explicit(&lc->evictions, 1,
		    memory_order_relaxed);
		return;
	}
	assert(lc->entries == 0);	/* the two turns found none */
}

/* The table entry for table_id, added if new: its index, or -ENOMEM. */
static int
table_ensure(struct location_cache *lc, uint64_t table_id, size_t *index)
{
	struct lc_table *p;
	size_t ti, cap;
	bool found;

	ti = table_index(lc, table_id, &found);
	if (!found) {
		if (lc->table_count == lc->table_cap) {
			cap = lc->table_cap ? lc->table_cap * 2 : 4;
			p = bt_realloc(lc->tables, cap * sizeof(*p));
			if (p == NULL)
				return -ENOMEM;
			lc->tables = p;
			lc->table_cap = cap;
		}
		memmove(&lc->tables[ti + 1], &lc->tables[ti],
		    (lc->table_count - ti) * sizeof(lc->tables[0]));
		memset(&lc->tables[ti], 0, sizeof(lc->tables[0]));
		lc->tables[ti].table_id = table_id;
		lc->table_count++;
		if (lc->hand_table >= ti && lc->table_count > 1)
			lc->hand_table++;
	}
	*index = ti;
	return 0;
}

/* Put e into table ti in place of the entries it overlaps.  0 or -ENOMEM
 * (nothing changed). */
static int
entry_put(struct location_cache *lc, size_t ti, const struct lc_entry *e)
{
	struct lc_table *t = &lc->tables[ti];
	struct slice start = entry_start(e), end = entry_end(e);
	struct lc_entry *p;
	size_t from, to, cap;

	/* The first entry that may overlap is the one holding start, or the
	 * first starting after it; overlaps run while entries start before
	 * the new end. */
	from = upper_bound(t, start);
	if (from > 0 && before_end(start, &t->v[from - 1]))
		from--;
	for (to = from; to < t->n && (e->end_n == 0 ||
	    slice_compare(entry_start(&t->v[to]), end) < 0); to++)
		;
	if (from == to && t->n == t->cap) {
		cap = t->cap ? t->cap * 2 : 8;
		if ((p = bt_realloc(t->v, cap * sizeof(*p))) == NULL)
			return -ENOMEM;
		t->v = p;
		t->cap = cap;
	}
	if (to > from)
		entries_remove(lc, ti, from + 1, to);
	else {
		memmove(&t->v[from + 1], &t->v[from],
		    (t->n - from) * sizeof(t->v[0]));
		t->n++;
		lc->entries++;
		if (lc->hand_table == ti && lc->hand_entry > from)
			lc->hand_entry++;
		t->v[from].bytes = NULL;
	}
	bt_free(t->v[from].bytes);
	t->v[from] = *e;
	/* Cached ranges never overlap. */
	assert(from == 0 || !before_end(start, &t->v[from - 1]));
	assert(from + 1 == t->n || (e->end_n > 0 &&
	    slice_compare(end, entry_start(&t->v[from + 1])) <= 0));
	return 0;
}

int
location_cache_insert(struct location_cache *lc, uint64_t table_id,
    struct slice start, struct slice end, uint64_t tablet_id)
{
	struct lc_entry e;
	size_t ti;
	int rc;

	if ((end.n > 0 && slice_compare(start, end) >= 0) ||
	    start.n > UINT32_MAX || end.n > UINT32_MAX)
		return bt_error_set(-EINVAL, "location cache: bad range for "
		    "tablet %llu", (unsigned long long)tablet_id);
	memset(&e, 0, sizeof(e));
	if ((e.bytes = bt_malloc(start.n + end.n + 1)) == NULL)
		return -ENOMEM;
	if (start.n > 0)
		memcpy(e.bytes, start.p, start.n);
	if (end.n > 0)
		memcpy(e.bytes + start.n, end.p, end.n);
	e.start_n = (uint32_t)start.n;
	e.end_n = (uint32_t)end.n;
	e.tablet_id = tablet_id;
	e.referenced = 1;
	pthread_rwlock_wrlock(&lc->lock);
	if ((rc = table_ensure(lc, table_id, &ti)) < 0 ||
	    (rc = entry_put(lc, ti, &e)) < 0) {
		pthread_rwlock_unlock(&lc->lock);
		bt_free(e.bytes);
		return rc;
	}
	while (lc->entries > lc->capacity)
		evict_one(lc);
	pthread_rwlock_unlock(&lc->lock);
	atomic_fetch_add_explicit(&lc->inserts, 1, memory_order_relaxed);
	return 0;
}

int
location_cache_invalidate(struct location_cache *lc, uint64_t table_id,
    struct slice row)
{
	struct lc_entry *e = NULL;
	size_t ti;
	bool found;

	pthread_rwlock_wrlock(&lc->lock);
	ti = table_index(lc, table_id, &found);
	if (found && (e = entry_for(&lc->tables[ti], row)) != NULL) {
		size_t i = (size_t)(e - lc->tables[ti].v);

		entries_remove(lc, ti, i, i + 1);
	}
	pthread_rwlock_unlock(&lc->lock);
	if (e == NULL)
		return BT_NOTFOUND;
	atomic_fetch_add_explicit(&lc->invalidations, 1, memory_order_relaxed);
	return 0;
}

int
location_cache_invalidate_tablet(struct location_cache *lc,
    uint64_t tablet_id)
{
	uint64_t dropped = 0;

	pthread_rwlock_wrlock(&lc->lock);
	for (size_t ti = 0; ti < lc->table_count; ti++) {
		struct lc_table *t = &lc->tables[ti];

		for (size_t i = 0; i < t->n;) {
			if (t->v[i].tablet_id == tablet_id) {
				entries_remove(lc, ti, i, i + 1);
				dropped++;
			} else {
				i++;
			}
		}
	}
	pthread_rwlock_unlock(&lc->lock);
	atomic_fetch_add_explicit(&lc->invalidations, dropped,
	    memory_order_relaxed);
	return dropped > 0 ? 0 : BT_NOTFOUND;
}

int
location_cache_invalidate_table(struct location_cache *lc, uint64_t table_id)
{
	size_t ti, n = 0;
	bool found;

	pthread_rwlock_wrlock(&lc->lock);
	ti = table_index(lc, table_id, &found);
	if (found) {
		n = lc->tables[ti].n;
		table_remove(lc, ti);
	}
	pthread_rwlock_unlock(&lc->lock);
	atomic_fetch_add_explicit(&lc->invalidations, n, memory_order_relaxed);
	return n > 0 ? 0 : BT_NOTFOUND;
}

void
location_cache_add_levels(struct location_cache *lc, unsigned levels)
{
	atomic_fetch_add_explicit(&lc->levels, levels, memory_order_relaxed);
}

void
location_cache_get_stats(struct location_cache *lc,
    struct location_cache_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->hits = atomic_load(&lc->hits);
	out->misses = atomic_load(&lc->misses);
	out->lookups = out->hits + out->misses;
	out->inserts = atomic_load(&lc->inserts);
	out->invalidations = atomic_load(&lc->invalidations);
	out->evictions = atomic_load(&lc->evictions);
	out->levels_walked = atomic_load(&lc->levels);
	pthread_rwlock_rdlock(&lc->lock);
	out->entries = lc->entries;
	out->capacity = lc->capacity;
	pthread_rwlock_unlock(&lc->lock);
}
