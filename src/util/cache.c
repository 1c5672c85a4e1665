/*
 * cache.c - sharded LRU cache with reference-counted handles.
 *
 * Each entry counts one reference for the cache itself while it is in the
 * cache's table (in_cache), plus one per handle.  An entry sits on its
 * shard's LRU list exactly when it is in the cache and no handle holds it
 * (refs == 1); only those entries can be evicted.  An entry removed from the
 * table (erased, replaced, evicted) dies when its last reference goes.
 *
 * Deleters run after the shard mutex is dropped: entries that die under
 * the lock are chained on a local list and freed afterwards, so a deleter
 * may itself call into the cache.
 *
 * An entry above a shard's capacity >> CACHE_LARGE_SHIFT is large
 * (cache.h).  It is put in the table only when the shard has room for it
 * without evicting anything; otherwise it is born with the caller's
 * reference alone, not in_cache, and dies at its release.  On the LRU
 * list a large entry goes to the oldest end, not the newest, so that it
 * is evicted before any other: a large entry never costs a small one its
 * place.  What that keeps is a second read of a large value soon after
 * the first, while the cache has room (tabletfs rereads a file's newest
 * version at the end of a cat, for tail -f).  A quarter, not less, so
 * that a small cache still treats blocks of the default size as small
 * (64 KiB blocks in a 4 MiB cache: shards of 256 KiB).
 */
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include "util/alloc.h"
#include "util/cache.h"
#include "util/hash.h"
#include "util/mutex.h"

#define CACHE_SHARD_BITS 4
#define CACHE_SHARDS (1 << CACHE_SHARD_BITS)
#define CACHE_HASH_SEED 0
#define CACHE_TABLE_MIN 16
#define CACHE_LARGE_SHIFT 2

/* The opaque handle is the entry itself. */
struct cache_handle {
	void *value;
	void (*deleter)(struct slice key, void *value);
	size_t charge;
	uint64_t hash;
	struct cache_handle *next_hash;	/* table chain, or the dead list */
	struct cache_handle *lru_prev;	/* towards older */
	struct cache_handle *lru_next;	/* towards newer */
	unsigned refs;
	bool in_cache;
	size_t key_len;
	uint8_t key[];
};

struct cache_shard {
	struct mutex mu;
	size_t capacity;
	size_t usage;			/* charge of the entries in_cache */
	struct cache_handle *lru_oldest;
	struct cache_handle *lru_newest;
	struct cache_handle **table;
	size_t table_len;		/* a power of two */
	size_t elems;
	uint64_t hits, misses, inserts, evictions, bypassed;
};

struct cache {
	size_t capacity;
	atomic_uint_fast64_t last_id;
	struct cache_shard shards[CACHE_SHARDS];
};

static struct slice
cache_entry_key(const struct cache_handle *e)
{
	return slice_make(e->key, e->key_len);
}

static void
cache_lru_remove(struct cache_shard *s, struct cache_handle *e)
{
	if (e->lru_prev != NULL)
		e->lru_prev->lru_next = e->lru_next;
	else
		s->lru_oldest = e->lru_next;
	if (e->lru_next != NULL)
		e->lru_next->lru_prev = e->lru_prev;
	else
		s->lru_newest = e->lru_prev;
	e->lru_prev = e->lru_next = NULL;
}

/* Whether an entry of this charge is large in shard s (module comment). */
static bool
cache_large(const struct cache_shard *s, size_t charge)
{
	return charge > s->capacity >> CACHE_LARGE_SHIFT;
}

static void
cache_lru_append(struct cache_shard *s, struct cache_handle *e)
{
	assert(e->in_cache && e->refs == 1);	/* module comment */
	if (cache_large(s, e->charge)) {
		/* The oldest end: evicted before every other entry. */
		e->lru_prev = NULL;
		e->lru_next = s->lru_oldest;
		if (s->lru_oldest != NULL)
			s->lru_oldest->lru_prev = e;
		else
			s->lru_newest = e;
		s->lru_oldest = e;
		return;
	}
	e->lru_next = NULL;
	e->lru_prev = s->lru_newest;
	if (s->lru_newest != NULL)
		s->lru_newest->lru_next = e;
	else
		s->lru_oldest = e;
	s->lru_newest = e;
}

/* The table slot that holds key's entry, or the NULL slot ending its chain. */
static struct cache_handle **
cache_table_find(struct cache_shard *s, struct slice key, uint64_t hash)
{
	struct cache_handle **pp = &s->table[hash & (s->table_len - 1)];

	while (*pp != NULL && ((*pp)->hash != hash ||
	    !slice_equal(cache_entry_key(*pp), key)))
		pp = &(*pp)->next_hash;
	return pp;
}

/*
 * Double the table once it holds more entries than buckets.  If memory runs
 * out the old table stays: chains get longer, nothing breaks.
 */
static void
cache_table_grow(struct cache_shard *s)
{
	size_t len = s->table_len * 2;
	struct cache_handle **table, *e, *next;

	if (s->elems <= s->table_len || len > SIZE_MAX / sizeof(*table))
		return;
	if ((table = bt_calloc(len, sizeof(*table))) == NULL)
		return;
	for (size_t i = 0; i < s->table_len; i++) {
		for (e = s->table[i]; e != NULL; e = next) {
			next = e->next_hash;
			e->next_hash = table[e->hash & (len - 1)];
			table[e->hash & (len - 1)] = e;
		}
	}
	bt_free(s->table);
	s->table = table;
	s->table_len = len;
}

/* Drop one reference; a dead entry goes on *dead for cache_bury(). */
static void
cache_unref(struct cache_shard *s, struct cache_handle *e,
    struct cache_handle **dead)
{
	assert(e->refs > 0);
	if (--e->refs == 0) {
		e->next_hash = *dead;
		*dead = e;
	} else if (e->refs == 1 && e->in_cache) {
		cache_lru_append(s, e);
	}
}

/* Take an entry already unlinked from the table out of the cache. */
static void
cache_finish_erase(struct cache_shard *s, struct cache_handle *e,
    struct cache_handle **dead)
{
	assert(e->in_cache);
	if (e->refs == 1)
		cache_lru_remove(s, e);
	e->in_cache = false;
	s->usage -= e->charge;
	s->elems--;
	cache_unref(s, e, dead);
}

/* Evict least recently used unpinned entries until usage fits. */
static void
cache_shard_trim(struct cache_shard *s, struct cache_handle **dead)
{
	struct cache_handle *e, **pp;

	mutex_assert_held(&s->mu);
	while (s->usage > s->capacity && (e = s->lru_oldest) != NULL) {
		pp = cache_table_find(s, cache_entry_key(e), e->hash);
		assert(*pp == e);
		*pp = e->next_hash;
		cache_finish_erase(s, e, dead);
		s->evictions++;
	}
}

/* Run the deleters of entries that died under a shard lock, and free them. */
static void
cache_bury(struct cache_handle *dead)
{
	struct cache_handle *next;

	for (; dead != NULL; dead = next) {
		next = dead->next_hash;
		if (dead->deleter != NULL)
			dead->deleter(cache_entry_key(dead), dead->value);
		bt_free(dead);
	}
}

static uint64_t
cache_hash(struct slice key)
{
	return hash64(key, CACHE_HASH_SEED);
}

static struct cache_shard *
cache_shard_of(struct cache *c, uint64_t hash)
{
	return &c->shards[hash >> (64 - CACHE_SHARD_BITS)];
}

int
cache_new(size_t capacity, struct cache **out)
{
	struct cache *c;
	struct cache_shard *s;
	int i, rc = -ENOMEM;

	if ((c = bt_calloc(1, sizeof(*c))) == NULL)
		goto out;
	c->capacity = capacity;
	atomic_init(&c->last_id, 0);
	for (i = 0; i < CACHE_SHARDS; i++) {
		s = &c->shards[i];
		s->capacity = capacity / CACHE_SHARDS +
		    (capacity % CACHE_SHARDS != 0);
		s->table_len = CACHE_TABLE_MIN;
		if ((s->table = bt_calloc(s->table_len,
		    sizeof(*s->table))) == NULL) {
			rc = -ENOMEM;
			goto out_shards;
		}
		if ((rc = mutex_init(&s->mu)) < 0) {
			bt_free(s->table);
			goto out_shards;
		}
	}
	*out = c;
	return 0;
out_shards:
	while (i-- > 0) {
		mutex_destroy(&c->shards[i].mu);
		bt_free(c->shards[i].table);
	}
	bt_free(c);
out:
	return rc;
}

void
cache_free(struct cache *c)
{
	struct cache_handle *e, *next, *dead;
	struct cache_shard *s;

	if (c == NULL)
		return;
	for (int i = 0; i < CACHE_SHARDS; i++) {
		s = &c->shards[i];
		dead = NULL;
		for (size_t b = 0; b < s->table_len; b++) {
			for (e = s->table[b]; e != NULL; e = next) {
				next = e->next_hash;
				assert(e->refs == 1);	/* no handle left */
				cache_finish_erase(s, e, &dead);
			}
		}
		cache_bury(dead);
		mutex_destroy(&s->mu);
		bt_free(s->table);
	}
	bt_free(c);
}

int
cache_insert(struct cache *c, struct slice key, void *value, size_t charge,
    void (*deleter)(struct slice key, void *value), struct cache_handle **out)
{
	struct cache_handle *e, *old, **pp, *dead = NULL;
	struct cache_shard *s;

	if (key.n > SIZE_MAX - sizeof(*e) ||
	    (e = bt_malloc(sizeof(*e) + key.n)) == NULL) {
		if (deleter != NULL)
			deleter(key, value);
		return -ENOMEM;
	}
	e->value = value;
	e->deleter = deleter;
	e->charge = charge;
	e->hash = cache_hash(key);
	e->lru_prev = e->lru_next = NULL;
	e->refs = 2;			/* the cache's and the caller's */
	e->in_cache = true;
	e->key_len = key.n;
	if (key.n > 0)
		memcpy(e->key, key.p, key.n);

	s = cache_shard_of(c, e->hash);
	mutex_lock(&s->mu);
	pp = cache_table_find(s, key, e->hash);
	old = *pp;
	s->inserts++;
	if (cache_large(s, charge) && (s->usage > s->capacity ||
	    charge > s->capacity - s->usage)) {
		/* Large, and no room: the caller's reference alone. */
		e->refs = 1;
		e->in_cache = false;
		e->next_hash = NULL;
		s->bypassed++;
		if (old != NULL) {
			*pp = old->next_hash;
			cache_finish_erase(s, old, &dead);
		}
		mutex_unlock(&s->mu);
		cache_bury(dead);
		*out = e;
		return 0;
	}
	e->next_hash = old != NULL ? old->next_hash : NULL;
	*pp = e;
	s->elems++;
	s->usage += charge;
	if (old != NULL)
		cache_finish_erase(s, old, &dead);
	cache_shard_trim(s, &dead);
	cache_table_grow(s);
	mutex_unlock(&s->mu);

	cache_bury(dead);
	*out = e;
	return 0;
}

struct cache_handle *
cache_lookup(struct cache *c, struct slice key)
{
	uint64_t hash = cache_hash(key);
	struct cache_shard *s = cache_shard_of(c, hash);
	struct cache_handle *e;

	mutex_lock(&s->mu);
	if ((e = *cache_table_find(s, key, hash)) != NULL) {
		if (e->refs == 1)
			cache_lru_remove(s, e);
		e->refs++;
		s->hits++;
	} else {
		s->misses++;
	}
	mutex_unlock(&s->mu);
	return e;
}

/*
 * Besides dropping the reference, trim the shard: an entry that was pinned
 * while usage passed capacity becomes evictable only now.
 */
void
cache_release(struct cache *c, struct cache_handle *h)
{
	struct cache_shard *s = cache_shard_of(c, h->hash);
	struct cache_handle *dead = NULL;

	mutex_lock(&s->mu);
	cache_unref(s, h, &dead);
	cache_shard_trim(s, &dead);
	mutex_unlock(&s->mu);
	cache_bury(dead);
}

void *
cache_handle_value(const struct cache_handle *h)
{
	return h->value;
}

void
cache_erase(struct cache *c, struct slice key)
{
	uint64_t hash = cache_hash(key);
	struct cache_shard *s = cache_shard_of(c, hash);
	struct cache_handle *e, **pp, *dead = NULL;

	mutex_lock(&s->mu);
	pp = cache_table_find(s, key, hash);
	if ((e = *pp) != NULL) {
		*pp = e->next_hash;
		cache_finish_erase(s, e, &dead);
	}
	mutex_unlock(&s->mu);
	cache_bury(dead);
}

uint64_t
cache_new_id(struct cache *c)
{
	return atomic_fetch_add(&c->last_id, 1) + 1;
}

void
cache_get_stats(struct cache *c, struct cache_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->capacity = c->capacity;
	for (int i = 0; i < CACHE_SHARDS; i++) {
		struct cache_shard *s = &c->shards[i];

		mutex_lock(&s->mu);
		out->hits += s->hits;
		out->misses += s->misses;
		out->inserts += s->inserts;
		out->evictions += s->evictions;
		out->bypassed += s->bypassed;
		out->usage += s->usage;
		mutex_unlock(&s->mu);
	}
}
