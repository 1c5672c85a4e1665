/*
 * test_cache.c - the sharded LRU cache: lookup, LRU eviction, pinning,
 * erase and replace under a handle, large entries, deleter
 * accounting, statistics, ids, and a multi-threaded consistency run.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "tap.h"
#include "util/alloc.h"
#include "util/cache.h"
#include "util/hash.h"

/* A value that counts its own deleter calls. */
struct value {
	int id;
	int deleted;
	char key[32];		/* the key it was inserted under */
};

static void
value_deleter(struct slice key, void *p)
{
	struct value *v = p;

	if (!slice_equal(key, slice_str(v->key)))
		v->deleted += 1000;	/* shows up as a wrong count */
	v->deleted++;
}

/* The shard a key lands in, as cache.h documents it. */
static unsigned
shard_of(struct slice key)
{
	return (unsigned)(hash64(key, 0) >> 60);
}

/* Keys "k<n>" that all land in shard 0, so LRU order is observable. */
static void
shard0_keys(char keys[][32], int count)
{
	for (int i = 0, found = 0; found < count; i++) {
		snprintf(keys[found], 32, "k%d", i);
		if (shard_of(slice_str(keys[found])) == 0)
			found++;
	}
}

static void
insert(struct cache *c, struct value *v, const char *key, size_t charge)
{
	struct cache_handle *h;

	snprintf(v->key, sizeof(v->key), "%s", key);
	if (cache_insert(c, slice_str(key), v, charge, value_deleter, &h) < 0)
		tap_bail("cache_insert");
	cache_release(c, h);
}

/* Whether key is cached; looks it up (which refreshes it) and releases. */
static bool
present(struct cache *c, const char *key)
{
	struct cache_handle *h = cache_lookup(c, slice_str(key));

	if (h != NULL)
		cache_release(c, h);
	return h != NULL;
}

static void
test_insert_lookup(void)
{
	struct value v[3] = { { .id = 0 }, { .id = 1 }, { .id = 2 } };
	struct cache_handle *h;
	struct cache *c;
	struct cache_stats st;

	is_int(cache_new(1000, &c), 0, "cache_new");
	insert(c, &v[0], "alpha", 1);
	insert(c, &v[1], "beta", 1);
	insert(c, &v[2], "", 1);
	h = cache_lookup(c, slice_str("alpha"));
	ok(h != NULL && cache_handle_value(h) == &v[0], "lookup finds alpha");
	if (h != NULL)
		cache_release(c, h);
	h = cache_lookup(c, slice_str("beta"));
	ok(h != NULL && cache_handle_value(h) == &v[1], "lookup finds beta");
	if (h != NULL)
		cache_release(c, h);
	h = cache_lookup(c, slice_make("", 0));
	ok(h != NULL && cache_handle_value(h) == &v[2],
	    "the empty key is a key");
	if (h != NULL)
		cache_release(c, h);
	ok(cache_lookup(c, slice_str("gamma")) == NULL, "absent key: NULL");
	ok(cache_lookup(c, slice_str("alph")) == NULL, "a prefix is not a "
	    "match");

	cache_get_stats(c, &st);
	is_int(st.inserts, 3, "stats: 3 inserts");
	is_int(st.hits, 3, "stats: 3 hits");
	is_int(st.misses, 2, "stats: 2 misses");
	is_int(st.evictions, 0, "stats: no evictions");
	is_int(st.usage, 3, "stats: usage is the sum of charges");
	is_int(st.capacity, 1000, "stats: capacity");
	ok(v[0].deleted == 0 && v[1].deleted == 0 && v[2].deleted == 0,
	    "no deleter ran while entries are cached");
	cache_free(c);
	ok(v[0].deleted == 1 && v[1].deleted == 1 && v[2].deleted == 1,
	    "cache_free runs each remaining deleter once, with its key");
	cache_free(NULL);
}

/* Capacity 64 gives each of the 16 shards room for 4 entries of charge 1. */
static void
test_lru_eviction(void)
{
	char keys[8][32];
	struct value v[8];
	struct cache *c;
	struct cache_stats st;

	memset(v, 0, sizeof(v));
	shard0_keys(keys, 8);
	if (cache_new(64, &c) < 0)
		tap_bail("cache_new");
	for (int i = 0; i < 4; i++)
		insert(c, &v[i], keys[i], 1);
	cache_get_stats(c, &st);
	ok(st.evictions == 0 && st.usage == 4, "4 entries fit in a shard");

	insert(c, &v[4], keys[4], 1);
	ok(v[0].deleted == 1 && v[1].deleted == 0 && v[2].deleted == 0 &&
	    v[3].deleted == 0, "a 5th entry evicts the oldest (0)");
	insert(c, &v[5], keys[5], 1);
	ok(v[1].deleted == 1 && v[2].deleted == 0,
	    "a 6th evicts the next oldest (1)");

	/* Lookup refreshes: 2 becomes newest, so 3 goes next. */
	ok(present(c, keys[2]), "entry 2 is present");
	insert(c, &v[6], keys[6], 1);
	ok(v[3].deleted == 1 && v[2].deleted == 0,
	    "after a lookup of 2, a new entry evicts 3 instead");
	insert(c, &v[7], keys[7], 1);
	ok(v[4].deleted == 1 && v[2].deleted == 0, "then 4");
	ok(!present(c, keys[0]) && !present(c, keys[1]) &&
	    !present(c, keys[3]) && !present(c, keys[4]),
	    "evicted entries are gone");
	cache_get_stats(c, &st);
	ok(st.evictions == 4 && st.usage == 4,
	    "stats: 4 evictions, usage back to 4");
	cache_free(c);
	ok(v[0].deleted == 1 && v[1].deleted == 1 && v[2].deleted == 1 &&
	    v[3].deleted == 1 && v[4].deleted == 1 && v[5].deleted == 1 &&
	    v[6].deleted == 1 && v[7].deleted == 1,
	    "every deleter ran exactly once");
}

static void
test_pinned(void)
{
	char keys[8][32];
	struct value v[8];
	struct cache_handle *h[8];
	struct cache *c;
	struct cache_stats st;
	int deleted = 0;

	memset(v, 0, sizeof(v));
	shard0_keys(keys, 8);
	if (cache_new(64, &c) < 0)
		tap_bail("cache_new");

	/* Pin the oldest: the next oldest goes instead. */
	for (int i = 0; i < 4; i++)
		insert(c, &v[i], keys[i], 1);
	h[0] = cache_lookup(c, slice_str(keys[0]));
	insert(c, &v[4], keys[4], 1);
	ok(v[0].deleted == 0 && v[1].deleted == 1,
	    "a pinned oldest entry is skipped; the next oldest is evicted");
	ok(h[0] != NULL && cache_handle_value(h[0]) == &v[0],
	    "the pinned value is intact");
	cache_release(c, h[0]);
	ok(present(c, keys[0]), "released, it is still cached");

	/* Pin everything: usage may pass capacity, nothing is evicted. */
	cache_free(c);
	memset(v, 0, sizeof(v));
	if (cache_new(64, &c) < 0)
		tap_bail("cache_new");
	for (int i = 0; i < 8; i++) {
		memcpy(v[i].key, keys[i], sizeof(v[i].key));
		if (cache_insert(c, slice_str(keys[i]), &v[i], 1,
		    value_deleter, &h[i]) < 0)
			tap_bail("cache_insert");
	}
	cache_get_stats(c, &st);
	for (int i = 0; i < 8; i++)
		deleted += v[i].deleted;
	ok(st.usage == 8 && st.evictions == 0 && deleted == 0,
	    "8 pinned entries overfill a 4-entry shard and stay");
	for (int i = 0; i < 8; i++)
		if (cache_handle_value(h[i]) != &v[i])
			deleted++;
	is_int(deleted, 0, "every pinned value is intact");
	for (int i = 0; i < 8; i++)
		cache_release(c, h[i]);
	cache_get_stats(c, &st);
	ok(st.usage == 4 && st.evictions == 4 && v[0].deleted == 1 &&
	    v[3].deleted == 1 && v[4].deleted == 0 && v[7].deleted == 0,
	    "released, the oldest 4 are evicted down to capacity");

	cache_free(c);
	deleted = 0;
	for (int i = 0; i < 8; i++)
		deleted += v[i].deleted;
	is_int(deleted, 8, "each of 8 deleters ran once");
}

/*
 * An entry above a quarter of its shard's capacity (large) is kept only
 * in room the shard has free.  Without that room its handle works while
 * held, lookups miss it, its release runs its deleter, and the entries
 * of its shard stay; it still replaces a kept entry of its key.  With
 * the room it is kept, and evicted before every other entry, however
 * recently used.  A quarter exactly is not large.  A stream of large
 * entries through a full shard leaves its small entries all cached.
 */
static void
test_large_entries(void)
{
	char keys[16][32];
	struct value v[16], big[8];
	struct cache_handle *h;
	struct cache *c;
	struct cache_stats st;
	int kept = 0, deleted = 0;

	memset(v, 0, sizeof(v));
	memset(big, 0, sizeof(big));
	shard0_keys(keys, 16);
	/* Shards of 64: entries above 16 are large. */
	if (cache_new(16 * 64, &c) < 0)
		tap_bail("cache_new");
	for (int i = 0; i < 7; i++)
		insert(c, &v[i], keys[i], 8);

	snprintf(big[0].key, sizeof(big[0].key), "%s", keys[8]);
	if (cache_insert(c, slice_str(keys[8]), &big[0], 17, value_deleter,
	    &h) < 0)
		tap_bail("cache_insert");
	ok(cache_handle_value(h) == &big[0] && big[0].deleted == 0,
	    "a large entry without room: its handle holds it");
	ok(!present(c, keys[8]), "lookups do not find it");
	cache_release(c, h);
	is_int(big[0].deleted, 1, "its release runs its deleter");
	cache_get_stats(c, &st);
	ok(st.bypassed == 1 && st.inserts == 8 && st.usage == 56 &&
	    st.evictions == 0, "counted as bypassed; usage and the shard's "
	    "entries unchanged");

	snprintf(big[1].key, sizeof(big[1].key), "%s", keys[0]);
	insert(c, &big[1], keys[0], 40);
	ok(v[0].deleted == 1 && big[1].deleted == 1 && !present(c, keys[0]),
	    "a large entry still replaces the kept entry of its key");

	/* A stream of large entries through the full shard. */
	for (int i = 2; i < 8; i++) {
		snprintf(big[i].key, sizeof(big[i].key), "%s", keys[9]);
		insert(c, &big[i], keys[9], 60);
	}
	for (int i = 1; i < 7; i++)
		kept += present(c, keys[i]);
	is_int(kept, 6, "after 6 large entries through a full shard, its 6 "
	    "small entries are all cached");
	cache_get_stats(c, &st);
	ok(st.bypassed == 8 && st.evictions == 0,
	    "8 bypassed, nothing evicted (%llu)",
	    (unsigned long long)st.evictions);

	insert(c, &v[11], keys[11], 8);		/* 56 of 64 now */
	insert(c, &v[10], keys[10], 16);
	ok(present(c, keys[10]) && v[1].deleted == 1 && v[2].deleted == 0,
	    "a quarter of the shard is not large: kept without room, "
	    "evicting the oldest");
	cache_free(c);
	for (int i = 2; i < 8; i++)
		deleted += big[i].deleted;
	is_int(deleted, 6, "every large entry's deleter ran once");

	/* With room, a large entry is kept and goes first. */
	memset(v, 0, sizeof(v));
	memset(big, 0, sizeof(big));
	if (cache_new(16 * 64, &c) < 0)
		tap_bail("cache_new");
	insert(c, &v[0], keys[0], 8);
	insert(c, &v[1], keys[1], 8);
	snprintf(big[0].key, sizeof(big[0].key), "%s", keys[8]);
	insert(c, &big[0], keys[8], 40);
	ok(present(c, keys[8]) && big[0].deleted == 0,
	    "a large entry with room is kept, and read again from the cache");
	insert(c, &v[2], keys[2], 8);
	insert(c, &v[3], keys[3], 8);
	ok(big[0].deleted == 1 && !present(c, keys[8]) &&
	    present(c, keys[0]) && present(c, keys[1]) &&
	    present(c, keys[2]) && present(c, keys[3]),
	    "when room is needed, the large entry goes first, though read "
	    "after the small ones");
	cache_get_stats(c, &st);
	ok(st.bypassed == 0 && st.evictions == 1, "kept, not bypassed; one "
	    "eviction");
	cache_free(c);
}

#define HOT_KEYS	128
#define STREAM_KEYS	48

/*
 * The block cache's case (issue 30): a small hot set spread over every
 * shard, read between the inserts of a stream of large blocks, some
 * above a quarter of a shard, some as large as a shard, some larger
 * (a 1 MiB value's block in a cache of 16 MiB), each released at once
 * as a reader that streams a file does.  Every hot entry must stay
 * cached and every read of it hit: before large entries were kept apart,
 * each such insert emptied its shard of the hot entries.  Uses only the
 * calls the cache has always had, so that it runs against any version.
 */
static void
test_large_stream_keeps_hot_set(void)
{
	static const size_t charges[] = { 40, 64, 200 };
	static struct value hot[HOT_KEYS], big[STREAM_KEYS];
	struct cache_stats before, after;
	struct cache *c;
	char key[32];
	int missing = 0, dead = 0, big_deleted = 0;

	memset(hot, 0, sizeof(hot));
	memset(big, 0, sizeof(big));
	/* Shards of 64; the hot set is about 32 of each. */
	if (cache_new(16 * 64, &c) < 0)
		tap_bail("cache_new");
	for (int i = 0; i < HOT_KEYS; i++) {
		snprintf(key, sizeof(key), "hot%d", i);
		insert(c, &hot[i], key, 4);
	}
	cache_get_stats(c, &before);
	for (int j = 0; j < STREAM_KEYS; j++) {
		snprintf(key, sizeof(key), "big%d", j);
		insert(c, &big[j], key, charges[j % 3]);
		for (int i = 0; i < HOT_KEYS; i++) {
			snprintf(key, sizeof(key), "hot%d", i);
			missing += !present(c, key);
		}
	}
	cache_get_stats(c, &after);
	for (int i = 0; i < HOT_KEYS; i++)
		dead += hot[i].deleted;
	is_int(missing, 0, "%d large entries through every shard: no read "
	    "of the %d small hot entries misses", STREAM_KEYS, HOT_KEYS);
	is_int(dead, 0, "and no hot entry was evicted");
	ok(after.hits - before.hits == (uint64_t)STREAM_KEYS * HOT_KEYS,
	    "the hot reads' hit rate is 100%% (%llu hits of %d)",
	    (unsigned long long)(after.hits - before.hits),
	    STREAM_KEYS * HOT_KEYS);
	ok(after.usage <= after.capacity, "usage %zu within capacity %zu",
	    after.usage, after.capacity);
	cache_free(c);
	for (int j = 0; j < STREAM_KEYS; j++)
		big_deleted += big[j].deleted;
	is_int(big_deleted, STREAM_KEYS, "every large entry's deleter ran "
	    "once");
}

static void
test_erase_and_replace(void)
{
	struct value a = { .id = 1 }, b = { .id = 2 }, d = { .id = 3 };
	struct cache_handle *h, *h2;
	struct cache *c;
	struct cache_stats st;

	if (cache_new(1000, &c) < 0)
		tap_bail("cache_new");

	/* Erase while pinned. */
	insert(c, &a, "key", 5);
	h = cache_lookup(c, slice_str("key"));
	cache_erase(c, slice_str("key"));
	ok(cache_lookup(c, slice_str("key")) == NULL,
	    "an erased key is not found");
	ok(h != NULL && cache_handle_value(h) == &a && a.deleted == 0,
	    "erased while pinned: the value stays valid");
	cache_get_stats(c, &st);
	is_int(st.usage, 0, "an erased entry no longer counts in usage");
	cache_release(c, h);
	is_int(a.deleted, 1, "the deleter runs at the last release");
	cache_erase(c, slice_str("key"));
	cache_erase(c, slice_str("never"));
	is_int(a.deleted, 1, "erasing an absent key does nothing");

	/* Erase unpinned: dies at once. */
	a.deleted = 0;
	insert(c, &a, "key", 5);
	cache_erase(c, slice_str("key"));
	is_int(a.deleted, 1, "erasing an unpinned entry runs its deleter");

	/* Replace while the old value is pinned. */
	a.deleted = 0;
	snprintf(a.key, sizeof(a.key), "key");
	snprintf(b.key, sizeof(b.key), "key");
	if (cache_insert(c, slice_str("key"), &a, 5, value_deleter, &h) < 0)
		tap_bail("cache_insert");
	if (cache_insert(c, slice_str("key"), &b, 7, value_deleter, &h2) < 0)
		tap_bail("cache_insert");
	cache_release(c, h2);
	h2 = cache_lookup(c, slice_str("key"));
	ok(h2 != NULL && cache_handle_value(h2) == &b,
	    "after replace, lookup returns the new value");
	if (h2 != NULL)
		cache_release(c, h2);
	ok(a.deleted == 0 && cache_handle_value(h) == &a,
	    "the replaced value lives while its handle is held");
	cache_get_stats(c, &st);
	is_int(st.usage, 7, "usage counts only the new value");
	cache_release(c, h);
	ok(a.deleted == 1 && b.deleted == 0,
	    "the replaced value dies at release; the new one lives");

	/* Replace unpinned: the old value dies at once. */
	snprintf(d.key, sizeof(d.key), "key");
	insert(c, &d, "key", 1);
	ok(b.deleted == 1 && d.deleted == 0,
	    "replacing an unpinned entry runs the old deleter");
	cache_free(c);
	ok(a.deleted == 1 && b.deleted == 1 && d.deleted == 1,
	    "each deleter ran exactly once");
}

static void
test_many_keys(void)
{
	enum { N = 5000 };
	struct value *v = calloc(N, sizeof(*v));
	struct cache *c;
	int missing = 0, wrong = 0;

	if (v == NULL || cache_new(N, &c) < 0)
		tap_bail("setup");
	/* Enough keys to grow every shard's table several times. */
	for (int i = 0; i < N; i++) {
		char key[32];

		snprintf(key, sizeof(key), "many-%d", i);
		v[i].id = i;
		insert(c, &v[i], key, 0);
	}
	for (int i = 0; i < N; i++) {
		char key[32];
		struct cache_handle *h;

		snprintf(key, sizeof(key), "many-%d", i);
		if ((h = cache_lookup(c, slice_str(key))) == NULL) {
			missing++;
			continue;
		}
		if (cache_handle_value(h) != &v[i])
			wrong++;
		cache_release(c, h);
	}
	ok(missing == 0 && wrong == 0, "%d zero-charge entries all found "
	    "after the tables grow", N);
	cache_free(c);
	missing = 0;
	for (int i = 0; i < N; i++)
		if (v[i].deleted != 1)
			missing++;
	is_int(missing, 0, "cache_free ran all %d deleters once", N);
	free(v);
}

static void
test_enomem(void)
{
	struct value v = { .id = 1 };
	struct cache_handle *h = NULL;
	struct cache *c = NULL;
	int rc;

	for (int n = 1; n <= 40; n++) {
		bt_alloc_fail_after(n);
		rc = cache_new(100, &c);
		bt_alloc_fail_after(0);
		if (rc == 0)
			break;
		if (rc != -ENOMEM)
			break;
	}
	ok(rc == 0 && c != NULL, "cache_new fails cleanly with -ENOMEM until "
	    "it has enough memory");
	snprintf(v.key, sizeof(v.key), "k");
	bt_alloc_fail_after(1);
	rc = cache_insert(c, slice_str("k"), &v, 1, value_deleter, &h);
	bt_alloc_fail_after(0);
	ok(rc == -ENOMEM && v.deleted == 1 && h == NULL,
	    "cache_insert out of memory: -ENOMEM, deleter already called");
	ok(!present(c, "k"), "and nothing was cached");
	cache_free(c);
	is_int(v.deleted, 1, "the deleter is not called again");
}

/* ---- concurrency ------------------------------------------------------ */

#define CONC_KEYS 300
#define CONC_THREADS 4
#define CONC_PINS 8
#define VALUE_MAGIC 0x5ca1ab1eu
#define VALUE_DEAD 0xdeadbeefu

struct conc_value {
	unsigned magic;
	int key;
	atomic_int deleted;
};

/* Deleter calls, counted here because a deleter gets no context. */
static atomic_long conc_deleted;

struct conc_shared {
	struct cache *c;
	atomic_long created;
	atomic_long errors;
	uint64_t seed;
	double seconds;
};

struct conc_thread {
	struct conc_shared *sh;
	int index;
	long ops;
	uint64_t ids[2000];
	int nids;
};

static void
conc_deleter(struct slice key, void *p)
{
	struct conc_value *v = p;
	char want[32];
	int n = snprintf(want, sizeof(want), "c%d", v->key);

	/* A wrong key or a second call shows up as a corrupt magic. */
	if (v->magic != VALUE_MAGIC ||
	    !slice_equal(key, slice_make(want, (size_t)n)) ||
	    atomic_fetch_add(&v->deleted, 1) != 0) {
		fprintf(stderr, "conc_deleter: bad value for key %d\n", v->key);
		abort();
	}
	v->magic = VALUE_DEAD;
	free(v);
	atomic_fetch_add(&conc_deleted, 1);
}

static double
now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Random inserts, lookups, releases and erases on a small key space. */
static void *
conc_main(void *arg)
{
	struct conc_thread *t = arg;
	struct conc_shared *sh = t->sh;
	struct cache_handle *pins[CONC_PINS];
	int pin_keys[CONC_PINS];
	int npins = 0;
	uint64_t rng = sh->seed + (uint64_t)t->index * 0x9e3779b97f4a7c15ull;
	double end = now_seconds() + sh->seconds;

	while ((t->ops & 255) != 0 || now_seconds() < end) {
		uint64_t r = tap_rand(&rng);
		int k = (int)(r % CONC_KEYS);
		int op = (int)((r >> 32) % 100);
		char key[32];
		struct slice ks;
		struct cache_handle *h;
		struct conc_value *v;

		ks = slice_make(key, (size_t)snprintf(key, sizeof(key),
		    "c%d", k));
		t->ops++;
		if (op < 5 && t->nids < 2000) {
			t->ids[t->nids++] = cache_new_id(sh->c);
		} else if (op < 35) {
			if ((v = malloc(sizeof(*v))) == NULL)
				tap_bail("out of memory");
			v->magic = VALUE_MAGIC;
			v->key = k;
			atomic_init(&v->deleted, 0);
			atomic_fetch_add(&sh->created, 1);
			if (cache_insert(sh->c, ks, v, 1 + r % 3, conc_deleter,
			    &h) < 0) {
				atomic_fetch_add(&sh->errors, 1);
				continue;
			}
			if (npins < CONC_PINS) {
				pin_keys[npins] = k;
				pins[npins++] = h;
			} else {
				cache_release(sh->c, h);
			}
		} else if (op < 80) {
			if ((h = cache_lookup(sh->c, ks)) == NULL)
				continue;
			v = cache_handle_value(h);
			if (v->magic != VALUE_MAGIC || v->key != k)
				atomic_fetch_add(&sh->errors, 1);
			if (npins < CONC_PINS) {
				pin_keys[npins] = k;
				pins[npins++] = h;
			} else {
				cache_release(sh->c, h);
			}
		} else if (op < 90) {
			cache_erase(sh->c, ks);
		} else if (npins > 0) {
			int i = (int)(r % (uint64_t)npins);

			/* A pinned value stays valid whatever others do. */
			v = cache_handle_value(pins[i]);
			if (v->magic != VALUE_MAGIC || v->key != pin_keys[i])
				atomic_fetch_add(&sh->errors, 1);
			cache_release(sh->c, pins[i]);
			pins[i] = pins[npins - 1];
			pin_keys[i] = pin_keys[npins - 1];
			npins--;
		}
	}
	for (int i = 0; i < npins; i++) {
		struct conc_value *v = cache_handle_value(pins[i]);

		if (v->magic != VALUE_MAGIC || v->key != pin_keys[i])
			atomic_fetch_add(&sh->errors, 1);
		cache_release(sh->c, pins[i]);
	}
	return NULL;
}

static int
compare_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void
test_concurrent(uint64_t seed)
{
	static struct conc_thread th[CONC_THREADS];
	struct conc_shared sh;
	pthread_t tid[CONC_THREADS];
	struct cache_stats st;
	uint64_t *ids;
	long ops = 0;
	int nids = 0, dup = 0;

	memset(&sh, 0, sizeof(sh));
	atomic_init(&sh.created, 0);
	atomic_init(&sh.errors, 0);
	sh.seed = seed;
	sh.seconds = 1.0;
	/* 16 shards of 8 charge units: constant eviction among 300 keys. */
	if (cache_new(128, &sh.c) < 0)
		tap_bail("cache_new");
	for (int i = 0; i < CONC_THREADS; i++) {
		th[i].sh = &sh;
		th[i].index = i;
		th[i].ops = 0;
		th[i].nids = 0;
		if (pthread_create(&tid[i], NULL, conc_main, &th[i]) != 0)
			tap_bail("pthread_create");
	}
	for (int i = 0; i < CONC_THREADS; i++) {
		pthread_join(tid[i], NULL);
		ops += th[i].ops;
	}
	is_int(atomic_load(&sh.errors), 0, "%d threads, %ld operations: every "
	    "handle saw its own live value", CONC_THREADS, ops);

	cache_get_stats(sh.c, &st);
	ok(st.usage <= st.capacity, "with no handle held, usage %zu is "
	    "within capacity %zu", st.usage, st.capacity);
	ok(st.inserts == (uint64_t)atomic_load(&sh.created),
	    "stats count every insert (%" PRIu64 ")", st.inserts);
	ok(st.hits > 0 && st.misses > 0 && st.evictions > 0,
	    "hits %" PRIu64 ", misses %" PRIu64 ", evictions %" PRIu64,
	    st.hits, st.misses, st.evictions);
	cache_free(sh.c);
	is_int(atomic_load(&conc_deleted), atomic_load(&sh.created),
	    "after cache_free, one deleter call per value inserted "
	    "(a second call on one value aborts)");

	ids = calloc(CONC_THREADS * 2000, sizeof(*ids));
	if (ids == NULL)
		tap_bail("out of memory");
	for (int i = 0; i < CONC_THREADS; i++)
		for (int j = 0; j < th[i].nids; j++)
			ids[nids++] = th[i].ids[j];
	qsort(ids, (size_t)nids, sizeof(*ids), compare_u64);
	for (int i = 1; i < nids; i++)
		if (ids[i] == ids[i - 1])
			dup++;
	ok(nids > 0 && dup == 0 && ids[0] != 0,
	    "%d concurrent cache_new_id calls gave distinct nonzero ids",
	    nids);
	free(ids);
}

static void
test_new_id(void)
{
	struct cache *c;
	uint64_t a, b;

	if (cache_new(10, &c) < 0)
		tap_bail("cache_new");
	a = cache_new_id(c);
	b = cache_new_id(c);
	ok(a != b && b > a, "cache_new_id gives fresh, growing numbers");
	cache_free(c);
}

#define ID_BURST 100000

struct id_burst {
	struct cache *c;
	pthread_barrier_t *start;
	uint64_t *ids;
};

static void *
id_burst_main(void *arg)
{
	struct id_burst *b = arg;

	pthread_barrier_wait(b->start);
	for (int i = 0; i < ID_BURST; i++)
		b->ids[i] = cache_new_id(b->c);
	return NULL;
}

/* Threads racing on cache_new_id never get the same number. */
static void
test_new_id_concurrent(void)
{
	struct id_burst b[CONC_THREADS];
	pthread_barrier_t start;
	pthread_t tid[CONC_THREADS];
	uint64_t *ids;
	struct cache *c;
	int dup = 0;

	if (cache_new(10, &c) < 0)
		tap_bail("cache_new");
	if ((ids = calloc(CONC_THREADS * ID_BURST, sizeof(*ids))) == NULL)
		tap_bail("out of memory");
	pthread_barrier_init(&start, NULL, CONC_THREADS);
	for (int i = 0; i < CONC_THREADS; i++) {
		b[i].c = c;
		b[i].start = &start;
		b[i].ids = ids + (size_t)i * ID_BURST;
		if (pthread_create(&tid[i], NULL, id_burst_main, &b[i]) != 0)
			tap_bail("pthread_create");
	}
	for (int i = 0; i < CONC_THREADS; i++)
		pthread_join(tid[i], NULL);
	pthread_barrier_destroy(&start);
	qsort(ids, CONC_THREADS * ID_BURST, sizeof(*ids), compare_u64);
	for (int i = 1; i < CONC_THREADS * ID_BURST; i++)
		if (ids[i] == ids[i - 1])
			dup++;
	is_int(dup, 0, "%d threads calling cache_new_id %d times each get "
	    "no duplicate", CONC_THREADS, ID_BURST);
	free(ids);
	cache_free(c);
}

int
main(void)
{
	uint64_t seed = tap_seed();

	test_insert_lookup();
	test_lru_eviction();
	test_pinned();
	test_large_entries();
	test_large_stream_keeps_hot_set();
	test_erase_and_replace();
	test_many_keys();
	test_enomem();
	test_new_id();
	test_concurrent(seed);
	test_new_id_concurrent();
	return tap_done();
}
