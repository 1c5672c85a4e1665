/*
 * test_memtable.c - the skiplist memtable against a sorted model, values
 * of every size from empty to larger than an arena block, its memory
 * accounting, -ENOMEM paths, reference counting, one writer racing
 * two lock-free readers, and the bounds that answer keys past the largest
 * key or before the smallest without a search (M5), alone and under a
 * writer that moves them with every insertion.
 *
 * TEST_MEMTABLE_DIV=n divides the randomized sizes by n (for valgrind).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memtable/memtable.h"
#include "util/alloc.h"
#include "util/error.h"
#include "tap.h"

#define MODEL_KEYS	100000
#define MODEL_SEEKS	20000
#define MAX_KEY		40
#define RACE_KEYS	200000
#define RACE_READERS	2
#define BIG_VALUE	(8u << 20)
#define BOUNDS_KEYS	100000

static long
size_divisor(void)
{
	const char *s = getenv("TEST_MEMTABLE_DIV");
	long d = s != NULL ? strtol(s, NULL, 0) : 1;

	return d > 0 ? d : 1;
}

static void *
xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (p == NULL)
		tap_bail("out of memory");
	return p;
}

static struct memtable *
xmemtable(void)
{
	struct memtable *m;

	if (memtable_new(&m) != 0)
		tap_bail("memtable_new failed");
	return m;
}

static struct iter *
xiter(struct memtable *m)
{
	struct iter *it;

	if (memtable_iter_new(m, &it) != 0)
		tap_bail("memtable_iter_new failed");
	return it;
}

static bool
slice_is(struct slice s, const char *want)
{
	return slice_equal(s, slice_str(want));
}

static void
test_empty(void)
{
	struct memtable *m = xmemtable();
	struct iter *it = xiter(m);
	struct slice v;

	is_int(memtable_count(m), 0, "empty: count is 0");
	is_int(iter_seek_first(it), 0, "empty: seek_first returns 0");
	ok(!iter_valid(it), "empty: iterator invalid after seek_first");
	is_int(iter_seek(it, slice_make(NULL, 0)), 0, "empty: seek returns 0");
	ok(!iter_valid(it), "empty: iterator invalid after seek to \"\"");
	iter_seek(it, slice_str("\xff\xff"));
	ok(!iter_valid(it), "empty: iterator invalid after seek to ff ff");
	is_int(memtable_get(m, slice_make(NULL, 0), &v), BT_NOTFOUND,
	    "empty: get \"\" is BT_NOTFOUND");
	is_int(memtable_get(m, slice_str("a"), &v), BT_NOTFOUND,
	    "empty: get \"a\" is BT_NOTFOUND");
	iter_free(it);
	memtable_unref(m);
}

/* Model test: keys with their insertion index, so duplicates are known. */
struct mkey {
	uint8_t p[MAX_KEY];
	size_t n;
	size_t idx;
};

static struct slice
mkey_slice(const struct mkey *k)
{
	return slice_make(k->p, k->n);
}

static int
mkey_cmp(const void *a, const void *b)
{
	const struct mkey *x = a, *y = b;
	int c = slice_compare(mkey_slice(x), mkey_slice(y));

	if (c != 0)
		return c;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Bytes biased to the edges of the alphabet: 00, 01, fe, ff. */
static uint8_t
edge_byte(uint64_t *rs)
{
	static const uint8_t edges[] = { 0x00, 0x01, 0xfe, 0xff };
	uint64_t r = tap_rand(rs);

	return (r & 7) < 4 ? edges[r & 3] : (uint8_t)(r >> 8);
}

static void
random_key(uint64_t *rs, struct mkey *k)
{
	size_t i;

	k->n = tap_rand(rs) % (MAX_KEY + 1);
	for (i = 0; i < k->n; i++)
		k->p[i] = edge_byte(rs);
}

/* The value stored under the key inserted at idx. */
static struct slice
model_value(size_t idx, char *buf, size_t cap)
{
	int n = snprintf(buf, cap, "v%zu/%zx", idx, idx * 2654435761u);

	return slice_make(buf, (size_t)n);
}

/* Index in sorted distinct keys of the first key >= target. */
static size_t
model_lower_bound(const struct mkey *model, size_t n, struct slice target)
{
	size_t lo = 0, hi = n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (slice_compare(mkey_slice(&model[mid]), target) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* What memtable_visit_prefix() should show: the model's keys from next
 * on, in order, each with its first-inserted value. */
struct prefix_visit {
	const struct mkey *model;
	size_t next, seen, stop_after, bad;
};

static int
prefix_visit_check(void *arg, struct slice key, struct slice value)
{
	struct prefix_visit *pv = arg;
	const struct mkey *want = &pv->model[pv->next++];
	char vbuf[64];

	if (!slice_equal(key, mkey_slice(want)) ||
	    !slice_equal(value, model_value(want->idx, vbuf, sizeof(vbuf))))
		pv->bad++;
	pv->seen++;
	return pv->seen == pv->stop_after ? 7 : 0;
}

/* Model keys from lb on that start with prefix. */
static size_t
model_prefix_count(const struct mkey *model, size_t n, size_t lb,
    struct slice prefix)
{
	size_t i = lb;

	while (i < n && slice_starts_with(mkey_slice(&model[i]), prefix))
		i++;
	return i - lb;
}

static void
test_model(uint64_t *rs, size_t nkeys)
{
	struct memtable *m = xmemtable();
	struct mkey *keys, *sorted, *model, target;
	bool *dup;
	struct iter *it;
	struct slice v, want;
	char vbuf[64];
	size_t i, j, nmodel = 0, ndup = 0, bad_add = 0, bad_iter = 0;
	size_t bad_seek = 0, bad_get = 0, bad_absent = 0, nabsent = 0, lb;
	size_t npresent_targets = 0, bad_visit = 0, visited = 0;
	int rc;

	keys = xmalloc(nkeys * sizeof(*keys));
	sorted = xmalloc(nkeys * sizeof(*sorted));
	dup = xmalloc(nkeys * sizeof(*dup));
	for (i = 0; i < nkeys; i++) {
		random_key(rs, &keys[i]);
		keys[i].idx = i;
	}
	/* Edge keys, and a duplicate of each to come later. */
	keys[0].n = 0;
	keys[1].n = 1;
	keys[1].p[0] = 0x00;
	keys[2].n = 1;
	keys[2].p[0] = 0xff;
	keys[3].n = MAX_KEY;
	memset(keys[3].p, 0xff, MAX_KEY);
	keys[4].n = MAX_KEY;
	memset(keys[4].p, 0x00, MAX_KEY);
	for (i = 0; i < 5; i++) {
		j = nkeys / 2 + i;
		keys[j] = keys[i];
		keys[j].idx = j;
	}

	/* Sorted by (key, index): the first of each run is the one kept. */
	memcpy(sorted, keys, nkeys * sizeof(*keys));
	qsort(sorted, nkeys, sizeof(*sorted), mkey_cmp);
	model = sorted;
	for (i = 0; i < nkeys; i++) {
		if (nmodel > 0 && slice_equal(mkey_slice(&sorted[i]),
		    mkey_slice(&model[nmodel - 1]))) {
			dup[sorted[i].idx] = true;
			ndup++;
			continue;
		}
		dup[sorted[i].idx] = false;
		model[nmodel++] = sorted[i];
	}
	diag("model: %zu keys, %zu distinct, %zu duplicates", nkeys, nmodel,
	    ndup);

	for (i = 0; i < nkeys; i++) {
		rc = memtable_add(m, mkey_slice(&keys[i]),
		    model_value(i, vbuf, sizeof(vbuf)));
		if (rc != (dup[i] ? -EEXIST : 0) && bad_add++ == 0)
			diag("add #%zu returned %d (duplicate: %d)", i, rc,
			    dup[i]);
	}
	is_int(bad_add, 0, "model: add returns 0, or -EEXIST for each of "
	    "%zu duplicates", ndup);
	ok(ndup >= 5, "model: duplicates were exercised");
	is_int(memtable_count(m), nmodel, "model: count is the number of "
	    "distinct keys");

	it = xiter(m);
	is_int(iter_seek_first(it), 0, "model: seek_first returns 0");
	for (j = 0; iter_valid(it); j++, iter_next(it)) {
		if (j >= nmodel) {
			j++;
			break;
		}
		want = model_value(model[j].idx, vbuf, sizeof(vbuf));
		if ((!slice_equal(iter_key(it), mkey_slice(&model[j])) ||
		    !slice_equal(iter_value(it), want)) && bad_iter++ == 0)
			diag("iteration differs from the model at %zu", j);
	}
	is_int(j, nmodel, "model: full iteration yields every distinct key");
	is_int(bad_iter, 0, "model: full iteration equals the model, with "
	    "each first-inserted value");

	for (i = 0; i < MODEL_SEEKS; i++) {
		switch (tap_rand(rs) % 4) {
		case 0:		/* a present key */
			target = model[tap_rand(rs) % nmodel];
			npresent_targets++;
			break;
		case 1:		/* a present key, one byte longer */
			target = model[tap_rand(rs) % nmodel];
			if (target.n < MAX_KEY)
				target.p[target.n++] = edge_byte(rs);
			break;
		case 2:		/* a present key, one byte shorter */
			target = model[tap_rand(rs) % nmodel];
			if (target.n > 0)
				target.n--;
			break;
		default:
			random_key(rs, &target);
			break;
		}
		lb = model_lower_bound(model, nmodel, mkey_slice(&target));
		{
			size_t want_n = model_prefix_count(model, nmodel, lb,
			    mkey_slice(&target));
			/* Short targets match most keys: those are walked
			 * whole only now and then. */
			struct prefix_visit pv = { model, lb, 0,
			    want_n > 64 && i % 64 != 0 ? 64 : 0, 0 };

			rc = memtable_visit_prefix(m, mkey_slice(&target),
			    prefix_visit_check, &pv);
			if ((pv.bad != 0 || (pv.stop_after != 0 ?
			    rc != 7 || pv.seen != 64 :
			    rc != 0 || pv.seen != want_n)) && bad_visit++ == 0)
				diag("visit_prefix #%zu: rc %d, %zu of %zu "
				    "entries, %zu wrong", i, rc, pv.seen,
				    want_n, pv.bad);
			visited += pv.seen;
			pv = (struct prefix_visit){ model, lb, 0, 2, 0 };
			rc = memtable_visit_prefix(m, mkey_slice(&target),
			    prefix_visit_check, &pv);
			if ((want_n >= 2 ? rc != 7 || pv.seen != 2 :
			    rc != 0 || pv.seen != want_n) && bad_visit++ == 0)
				diag("visit_prefix #%zu: a stop at 2 of %zu "
				    "returned %d after %zu", i, want_n, rc,
				    pv.seen);
		}
		iter_seek(it, mkey_slice(&target));
		if (lb == nmodel ? iter_valid(it) : !iter_valid(it) ||
		    !slice_equal(iter_key(it), mkey_slice(&model[lb]))) {
			if (bad_seek++ == 0)
				diag("seek #%zu: wrong position", i);
			continue;
		}
		if (lb + 1 < nmodel) {
			iter_next(it);
			if ((!iter_valid(it) || !slice_equal(iter_key(it),
			    mkey_slice(&model[lb + 1]))) && bad_seek++ == 0)
				diag("seek #%zu: wrong next", i);
		}
		if (lb < nmodel && slice_equal(mkey_slice(&model[lb]),
		    mkey_slice(&target)))
			continue;
		nabsent++;
		if (memtable_get(m, mkey_slice(&target), &v) != BT_NOTFOUND &&
		    bad_absent++ == 0)
			diag("get of an absent key #%zu found it", i);
	}
	is_int(bad_seek, 0, "model: seek lands on the model's lower bound "
	    "(%zu targets, %zu present)", (size_t)MODEL_SEEKS,
	    npresent_targets);
	is_int(bad_visit, 0, "model: visit_prefix shows exactly the keys "
	    "starting with the target, in order, and stops when told");
	ok(visited > MODEL_SEEKS, "model: visit_prefix saw %zu entries",
	    visited);
	ok(nabsent > MODEL_SEEKS / 4, "model: %zu absent targets exercised",
	    nabsent);
	is_int(bad_absent, 0, "model: get of absent keys is BT_NOTFOUND");

	for (i = 0; i < nmodel; i++) {
		want = model_value(model[i].idx, vbuf, sizeof(vbuf));
		rc = memtable_get(m, mkey_slice(&model[i]), &v);
		if ((rc != 0 || !slice_equal(v, want)) && bad_get++ == 0)
			diag("get of model key %zu: rc %d", i, rc);
	}
	is_int(bad_get, 0, "model: get of every present key returns its "
	    "first-inserted value");
	rc = memtable_get(m, slice_make(NULL, 0), &v);
	ok(rc == 0 && slice_equal(v, model_value(0, vbuf, sizeof(vbuf))),
	    "model: the empty key is stored");

	iter_free(it);
	memtable_unref(m);
	free(dup);
	free(sorted);
	free(keys);
}

/*
 * Keys that share long prefixes and differ at any byte, or only in
 * length: the memtable compares keys a word at a time, so every offset
 * within and across words, and every tail length, must order as
 * slice_compare() does.  Iteration and seeks are checked against the
 * sorted keys.
 */
#define SHARED_KEYS	4000

static void
test_shared_prefix(uint64_t *rs)
{
	struct memtable *m = xmemtable();
	struct mkey *keys = xmalloc(SHARED_KEYS * sizeof(*keys));
	uint8_t base[MAX_KEY];
	struct iter *it;
	size_t i, j, n = 0, bad_iter = 0, bad_seek = 0, lb;
	int rc;

	for (i = 0; i < MAX_KEY; i++)
		base[i] = edge_byte(rs);
	for (i = 0; i < SHARED_KEYS; i++) {
		struct mkey *k = &keys[n];

		k->n = tap_rand(rs) % (MAX_KEY + 1);
		memcpy(k->p, base, k->n);
		if (k->n > 0 && (tap_rand(rs) & 3) != 0)
			k->p[tap_rand(rs) % k->n] = edge_byte(rs);
		k->idx = n;
		rc = memtable_add(m, mkey_slice(k), slice_str("v"));
		if (rc == 0)
			n++;
		else if (rc != -EEXIST)
			diag("add #%zu: rc %d", i, rc);
	}
	qsort(keys, n, sizeof(*keys), mkey_cmp);
	it = xiter(m);
	iter_seek_first(it);
	for (j = 0; iter_valid(it); j++, iter_next(it))
		if ((j >= n || !slice_equal(iter_key(it),
		    mkey_slice(&keys[j]))) && bad_iter++ == 0)
			diag("shared prefix: iteration differs at %zu", j);
	ok(j == n && bad_iter == 0 && n > SHARED_KEYS / 4,
	    "shared prefix: iterating %zu keys that share long prefixes "
	    "yields them in slice_compare order", n);
	for (i = 0; i < SHARED_KEYS; i++) {
		struct mkey target;

		target.n = tap_rand(rs) % (MAX_KEY + 1);
		memcpy(target.p, base, target.n);
		if (target.n > 0 && (tap_rand(rs) & 1) != 0)
			target.p[tap_rand(rs) % target.n] = edge_byte(rs);
		lb = model_lower_bound(keys, n, mkey_slice(&target));
		iter_seek(it, mkey_slice(&target));
		if ((lb == n ? iter_valid(it) : !iter_valid(it) ||
		    !slice_equal(iter_key(it), mkey_slice(&keys[lb]))) &&
		    bad_seek++ == 0)
			diag("shared prefix: seek #%zu misses the lower bound",
			    i);
	}
	is_int(bad_seek, 0, "shared prefix: every seek lands on the lower "
	    "bound");
	iter_free(it);
	free(keys);
	memtable_unref(m);
}

/*
 * Ascending runs, as a sequential load writes them, both at the end of
 * the list and inside the gaps of keys added before: an add after the
 * last one links it where the last insertion left off instead of
 * searching from the head.  The list must come out as a search-built one
 * would: every key found by memtable_get() (a search from the top level
 * down), iteration in order, duplicates refused.
 */
#define ASC_GAPS	3000
#define ASC_STEP	8

static struct slice
asc_key(uint64_t n, uint8_t *p)
{
	/* A long shared prefix, then n big-endian: byte order is n's. */
	memset(p, 'k', 16);
	for (int i = 0; i < 8; i++)
		p[16 + i] = (uint8_t)(n >> (56 - 8 * i));
	return slice_make(p, 24);
}

static void
test_ascending(uint64_t *rs)
{
	struct memtable *m = xmemtable();
	uint8_t kb[24];
	struct slice v;
	struct iter *it;
	size_t bad_add = 0, bad_dup = 0, bad_get = 0, bad_iter = 0, n = 0;
	uint64_t want;
	int rc;

	/* The end of the list: 0, 8, 16, ... */
	for (uint64_t g = 0; g < ASC_GAPS; g++)
		if (memtable_add(m, asc_key(g * ASC_STEP, kb),
		    slice_str("v")) != 0)
			bad_add++;
	/* Each gap filled by an ascending run, the gaps in random order. */
	for (uint64_t r = 0; r < ASC_GAPS; r++) {
		uint64_t g = tap_rand(rs) % ASC_GAPS;

		for (uint64_t j = 1; j < ASC_STEP; j++) {
			rc = memtable_add(m, asc_key(g * ASC_STEP + j, kb),
			    slice_str("v"));
			if (rc != 0 && rc != -EEXIST)
				bad_add++;
		}
		/* Again, ascending: every one refused. */
		for (uint64_t j = 0; j < ASC_STEP; j++)
			if (memtable_add(m, asc_key(g * ASC_STEP + j, kb),
			    slice_str("w")) != -EEXIST)
				bad_dup++;
	}
	is_int(bad_add, 0, "ascending: adds at the end and in gaps succeed");
	is_int(bad_dup, 0, "ascending: an ascending run of present keys is "
	    "refused with -EEXIST");
	it = xiter(m);
	iter_seek_first(it);
	for (want = 0; iter_valid(it); iter_next(it)) {
		struct slice k = iter_key(it);
		uint64_t got = 0;

		for (int i = 0; i < 8 && k.n == 24; i++)
			got = got << 8 | k.p[16 + i];
		/* Keys ascend; unfilled gap keys are absent. */
		if ((k.n != 24 || got < want) && bad_iter++ == 0)
			diag("ascending: entry %zu out of order", n);
		want = got + 1;
		if (memtable_get(m, k, &v) != 0 && bad_get++ == 0)
			diag("ascending: entry %zu not found by get", n);
		n++;
	}
	iter_free(it);
	ok(bad_iter == 0 && n == memtable_count(m) && n > ASC_GAPS * 4,
	    "ascending: iteration yields all %zu keys in order", n);
	is_int(bad_get, 0, "ascending: get finds every key from the top "
	    "level down");
	memtable_unref(m);
}

static void
test_memory(void)
{
	struct memtable *m = xmemtable();
	size_t usage, last, start, n = 1000, i, payload = 0, bad = 0;
	size_t badcount = 0;
	uint8_t value[100], *big;
	char key[32];
	struct slice v;
	int klen;

	memset(value, 'x', sizeof(value));
	start = last = memtable_memory_usage(m);
	for (i = 0; i < n; i++) {
		klen = snprintf(key, sizeof(key), "key%06zu", i);
		if (memtable_add(m, slice_make(key, (size_t)klen),
		    slice_make(value, sizeof(value))) != 0)
			tap_bail("memtable_add failed");
		payload += (size_t)klen + sizeof(value);
		usage = memtable_memory_usage(m);
		if (usage < last)
			bad++;
		last = usage;
		if (memtable_count(m) != i + 1)
			badcount++;
	}
	is_int(bad, 0, "memory: usage never shrinks while inserting");
	is_int(badcount, 0, "memory: count is exact after each insert");
	ok(last >= start + payload, "memory: usage grew by at least the "
	    "payload (%zu -> %zu for %zu bytes)", start, last, payload);

	big = xmalloc(BIG_VALUE);
	for (i = 0; i < BIG_VALUE; i++)
		big[i] = (uint8_t)(i * 31 + (i >> 13));
	is_int(memtable_add(m, slice_str("big"), slice_make(big, BIG_VALUE)),
	    0, "memory: an 8 MiB value is stored");
	ok(memtable_memory_usage(m) >= last + BIG_VALUE,
	    "memory: usage grew by the 8 MiB value");
	ok(memtable_get(m, slice_str("big"), &v) == 0 && v.n == BIG_VALUE &&
	    memcmp(v.p, big, BIG_VALUE) == 0,
	    "memory: the 8 MiB value reads back");
	is_int(memtable_count(m), n + 1, "memory: count includes the big "
	    "value");
	free(big);
#if SIZE_MAX > UINT32_MAX
	/* Refused before a byte of it is read, so no backing is needed. */
	is_int(memtable_add(m, slice_str("huge"),
	    slice_make(value, (size_t)UINT32_MAX + 1)), -EFBIG,
	    "memory: a value over 4 GiB - 1 is -EFBIG");
	is_int(memtable_count(m), n + 1, "memory: and is not counted");
#endif
	memtable_unref(m);
}

/*
 * What an entry costs beyond its bytes, for the usual put's shape (a
 * 39-byte internal key, a 100-byte value): its header, its links and its
 * alignment, 8 + 8 x 4/3 + 4 on average, and the 4 KiB blocks' tails.  The
 * flush trigger counts this memory, so each byte of it is paid in
 * flushes.  A header of three words (24 bytes) fails this.
 */
static void
test_entry_overhead(void)
{
	struct memtable *m = xmemtable();
	size_t start, n = 20000, i, per;
	uint8_t key[39], value[100];

	memset(key, '0', sizeof(key));
	memset(value, 'v', sizeof(value));
	start = memtable_memory_usage(m);
	for (i = 0; i < n; i++) {
		for (size_t j = 0, k = i; j < 8; j++, k /= 10)
			key[15 - j] = (uint8_t)('0' + k % 10);
		if (memtable_add(m, slice_make(key, sizeof(key)),
		    slice_make(value, sizeof(value))) != 0)
			tap_bail("memtable_add failed");
	}
	per = (memtable_memory_usage(m) - start) / n;
	ok(per <= sizeof(key) + sizeof(value) + 28, "memory: an entry of a "
	    "39-byte key and a 100-byte value takes %zu bytes (at most 28 "
	    "beyond them)", per);
	memtable_unref(m);
}

/* Every allocation failure is -ENOMEM and leaves the memtable unchanged. */
static void
test_nomem(void)
{
	struct memtable *m = NULL;
	struct iter *it;
	struct slice v;
	uint8_t *value;
	long n;
	int rc = 0, bad = 0, fails = 0;

	for (n = 1; n < 20; n++) {
		bt_alloc_fail_after(n);
		rc = memtable_new(&m);
		bt_alloc_fail_after(0);
		if (rc == 0)
			break;
		fails++;
		if (rc != -ENOMEM)
			bad++;
	}
	ok(rc == 0 && fails > 0 && bad == 0, "nomem: memtable_new returns "
	    "-ENOMEM for each of its %d allocations, then succeeds", fails);
	if (rc != 0)
		return;
	memtable_add(m, slice_str("a"), slice_str("1"));

	value = xmalloc(1 << 20);
	memset(value, 'v', 1 << 20);
	bt_alloc_fail_after(1);
	rc = memtable_add(m, slice_str("b"), slice_make(value, 1 << 20));
	bt_alloc_fail_after(0);
	is_int(rc, -ENOMEM, "nomem: memtable_add of 1 MiB returns -ENOMEM");
	is_int(memtable_count(m), 1, "nomem: count unchanged after -ENOMEM");
	is_int(memtable_get(m, slice_str("b"), &v), BT_NOTFOUND,
	    "nomem: failed key is absent");
	is_int(memtable_add(m, slice_str("b"), slice_make(value, 1 << 20)), 0,
	    "nomem: the same add succeeds afterwards");

	/* Reserved adds allocate nothing: keys of 1 to 300 bytes, values
	 * of 0 to 1 MiB. */
	{
		char key[301];
		size_t keys = 0, values = 0, vlen[40];
		int add_bad = 0;

		for (int i = 0; i < 40; i++) {
			vlen[i] = i % 10 == 0 ? (size_t)(1 << 20) >> (i % 3) :
			    (size_t)(i * 37) % 2000;
			keys += 1 + (size_t)(i * 7) % 300;
			values += vlen[i];
		}
		rc = memtable_reserve(m, 40, keys, values);
		is_int(rc, 0, "nomem: memtable_reserve for 40 entries");
		bt_alloc_fail_after(1);
		for (int i = 0; i < 40 && rc == 0; i++) {
			size_t kn = 1 + (size_t)(i * 7) % 300;

			memset(key, 'k', kn);
			key[0] = (char)('c' + i);
			if (memtable_add(m, slice_make(key, kn),
			    slice_make(value, vlen[i])) != 0)
				add_bad++;
		}
		bt_alloc_fail_after(0);
		memtable_reserve_end(m);
		ok(rc == 0 && add_bad == 0 && memtable_count(m) == 42,
		    "nomem: every reserved add succeeds with allocation "
		    "failing (%d failed)", add_bad);
	}
	free(value);

	bt_alloc_fail_after(1);
	rc = memtable_iter_new(m, &it);
	bt_alloc_fail_after(0);
	is_int(rc, -ENOMEM, "nomem: memtable_iter_new returns -ENOMEM");
	memtable_unref(m);
}

/*
 * Values of many sizes, from empty to larger than an arena block, mixed
 * in random order: each reads back exactly, by get and in the iterator's
 * order, and the memory accounting counts them all.
 */
static void
test_value_sizes(uint64_t *rs)
{
	static const size_t sizes[] = { 0, 1, 100, 255, 256, 257, 1000, 4096,
	    65536, 100000 };
	enum { PER = 20, N = PER * sizeof(sizes) / sizeof(sizes[0]) };
	struct memtable *m = xmemtable();
	uint8_t *vals[N];
	size_t len[N], order[N], bad_get = 0, bad_iter = 0, total = 0, i;
	struct iter *it;
	struct slice v;
	char key[16];

	for (i = 0; i < N; i++) {
		len[i] = sizes[i % (sizeof(sizes) / sizeof(sizes[0]))];
		vals[i] = xmalloc(len[i] + 1);
		for (size_t j = 0; j < len[i]; j++)
			vals[i][j] = (uint8_t)tap_rand(rs);
		order[i] = i;
		total += len[i];
	}
	for (i = N - 1; i > 0; i--) {
		size_t j = (size_t)(tap_rand(rs) % (i + 1)), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	for (i = 0; i < N; i++) {
		snprintf(key, sizeof(key), "k%04zu", order[i]);
		if (memtable_add(m, slice_str(key), slice_make(vals[order[i]],
		    len[order[i]])) != 0)
			tap_bail("memtable_add");
	}
	for (i = 0; i < N; i++) {
		snprintf(key, sizeof(key), "k%04zu", i);
		if (memtable_get(m, slice_str(key), &v) != 0 || v.n != len[i] ||
		    (v.n > 0 && memcmp(v.p, vals[i], v.n) != 0))
			bad_get++;
	}
	is_int(bad_get, 0, "value sizes: %d values of 0 to 100000 bytes, "
	    "added in random order, each read back by get", N);
	if (memtable_iter_new(m, &it) != 0)
		tap_bail("memtable_iter_new");
	i = 0;
	for (iter_seek_first(it); iter_valid(it); iter_next(it), i++) {
		v = iter_value(it);
		if (i >= N || v.n != len[i] ||
		    (v.n > 0 && memcmp(v.p, vals[i], v.n) != 0))
			bad_iter++;
	}
	ok(bad_iter == 0 && i == N, "value sizes: and by the iterator, in "
	    "order (%zu entries)", i);
	iter_free(it);
	ok(memtable_memory_usage(m) >= total, "value sizes: the memory "
	    "counted (%zu) holds the values (%zu)", memtable_memory_usage(m),
	    total);
	memtable_unref(m);
	for (i = 0; i < N; i++)
		free(vals[i]);
}

/* An iterator sees entries added ahead of its position, not behind it. */
static void
test_iter_live(void)
{
	struct memtable *m = xmemtable();
	struct iter *it;

	memtable_add(m, slice_str("a"), slice_str("1"));
	memtable_add(m, slice_str("c"), slice_str("3"));
	it = xiter(m);
	iter_seek(it, slice_str("a"));
	memtable_add(m, slice_str("b"), slice_str("2"));
	memtable_add(m, slice_str("0"), slice_str("0"));
	ok(iter_valid(it) && slice_is(iter_key(it), "a"),
	    "live: iterator stays on its entry across inserts");
	iter_next(it);
	ok(iter_valid(it) && slice_is(iter_key(it), "b") &&
	    slice_is(iter_value(it), "2"),
	    "live: iterator sees an entry added ahead of it");
	iter_next(it);
	ok(iter_valid(it) && slice_is(iter_key(it), "c"),
	    "live: then the next older entry");
	iter_next(it);
	ok(!iter_valid(it), "live: then the end");
	iter_seek_first(it);
	ok(iter_valid(it) && slice_is(iter_key(it), "0"),
	    "live: seek_first finds the entry added behind it");
	iter_free(it);
	memtable_unref(m);
}

/*
 * The iterator's reference keeps the memtable alive after its owner drops
 * the one from memtable_new() (valgrind proves the absence of a
 * use-after-free and of a leak).
 */
static void
test_iter_ref(void)
{
	struct memtable *m = xmemtable();
	struct iter *it;
	char key[16], val[16];
	int i, n, bad = 0;

	for (i = 0; i < 500; i++) {
		snprintf(key, sizeof(key), "k%04d", i);
		snprintf(val, sizeof(val), "v%d", i);
		memtable_add(m, slice_str(key), slice_str(val));
	}
	it = xiter(m);
	memtable_ref(m);
	memtable_unref(m);
	memtable_unref(m);	/* the owner's reference */
	iter_seek_first(it);
	for (n = 0; iter_valid(it); n++, iter_next(it)) {
		snprintf(key, sizeof(key), "k%04d", n);
		snprintf(val, sizeof(val), "v%d", n);
		if (!slice_is(iter_key(it), key) ||
		    !slice_is(iter_value(it), val))
			bad++;
	}
	is_int(n, 500, "ref: iterator walks every entry after the owner's "
	    "unref");
	is_int(bad, 0, "ref: and reads the right keys and values");
	iter_free(it);		/* frees the memtable */
	memtable_unref(NULL);	/* accepted; a crash fails the program */
}

/*
 * The race: one writer inserts keys in random order while readers iterate
 * and seek.  A key is 8 bytes of a bijective hash of its number followed by
 * 0..7 derived bytes; its value is a function of the key, so a reader can
 * check every entry it sees.
 */
static uint64_t
mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

static size_t
race_key(uint64_t i, uint8_t *p)
{
	uint64_t h = mix64(i);
	size_t n = 8 + (h & 7), j;

	for (j = 0; j < 8; j++)
		p[j] = (uint8_t)(h >> (56 - 8 * j));
	for (j = 8; j < n; j++)
		p[j] = (uint8_t)(h >> (8 * (j - 8)) ^ 0x5a);
	return n;
}

/* FNV-1a of the key, written 1..4 times. */
static size_t
race_value(struct slice key, uint8_t *p)
{
	uint64_t h = 0xcbf29ce484222325ull;
	size_t i, reps;

	for (i = 0; i < key.n; i++)
		h = (h ^ key.p[i]) * 0x100000001b3ull;
	reps = 1 + (h >> 60) % 4;
	for (i = 0; i < 8 * reps; i++)
		p[i] = (uint8_t)(h >> (8 * (i % 8)));
	return 8 * reps;
}

struct race {
	struct memtable *m;
	atomic_int ready;		/* readers holding an iterator */
	atomic_bool done;
};

struct reader {
	pthread_t tid;
	struct race *race;
	uint64_t rand_state;
	size_t passes, passes_during, seeks;
	size_t order_errors, value_errors, lost_errors, seek_errors;
	size_t final_seen;
	int rc;
};

static bool
race_entry_ok(struct iter *it)
{
	uint8_t want[32];
	size_t n = race_value(iter_key(it), want);

	return slice_equal(iter_value(it), slice_make(want, n));
}

/* One full iteration; returns the number of entries seen. */
static size_t
reader_scan(struct reader *r, struct iter *it)
{
	uint8_t prev[16];
	size_t prev_n = 0, seen = 0;
	uint64_t before = memtable_count(r->race->m);
	struct slice k;

	if ((r->rc = iter_seek_first(it)) < 0)
		return 0;
	for (; iter_valid(it); iter_next(it)) {
		k = iter_key(it);
		if (k.n > sizeof(prev)) {
			r->order_errors++;
			break;
		}
		if (seen > 0 && slice_compare(slice_make(prev, prev_n), k) >= 0)
			r->order_errors++;
		if (!race_entry_ok(it))
			r->value_errors++;
		memcpy(prev, k.p, k.n);
		prev_n = k.n;
		seen++;
	}
	if (seen < before)
		r->lost_errors++;
	return seen;
}

/* Random seeks, each followed by a few steps. */
static void
reader_seeks(struct reader *r, struct iter *it)
{
	uint8_t target[8], prev[16];
	size_t prev_n, i, j;
	uint64_t x;
	struct slice k;

	for (i = 0; i < 200; i++) {
		x = tap_rand(&r->rand_state);
		for (j = 0; j < 8; j++)
			target[j] = (uint8_t)(x >> (8 * j));
		r->seeks++;
		if ((r->rc = iter_seek(it, slice_make(target, 8))) < 0)
			return;
		for (j = 0; j < 4 && iter_valid(it); j++, iter_next(it)) {
			k = iter_key(it);
			if (j == 0 && slice_compare(k, slice_make(target, 8)) < 0)
				r->seek_errors++;
			if (j > 0 && slice_compare(slice_make(prev, prev_n),
			    k) >= 0)
				r->order_errors++;
			if (!race_entry_ok(it))
				r->value_errors++;
			if (k.n > sizeof(prev))
				break;
			memcpy(prev, k.p, k.n);
			prev_n = k.n;
		}
	}
}

static void *
reader_main(void *arg)
{
	struct reader *r = arg;
	struct iter *it;
	bool done;

	r->rc = memtable_iter_new(r->race->m, &it);
	atomic_fetch_add(&r->race->ready, 1);
	if (r->rc < 0)
		return NULL;
	do {
		done = atomic_load(&r->race->done);
		r->final_seen = reader_scan(r, it);
		reader_seeks(r, it);
		r->passes++;
		if (!done)
			r->passes_during++;
	} while (!done && r->rc >= 0);
	iter_free(it);
	return NULL;
}

static void
test_race(uint64_t seed, size_t nkeys)
{
	struct race race;
	struct reader readers[RACE_READERS];
	uint8_t key[16], value[32];
	size_t i, kn, vn, bad_add = 0;
	uint64_t order = seed;
	int t, started = 0;

	race.m = xmemtable();
	atomic_init(&race.ready, 0);
	atomic_init(&race.done, false);
	memset(readers, 0, sizeof(readers));
	for (t = 0; t < RACE_READERS; t++) {
		readers[t].race = &race;
		readers[t].rand_state = seed ^ (0x1234567ull * (t + 1));
		if (pthread_create(&readers[t].tid, NULL, reader_main,
		    &readers[t]) != 0)
			tap_bail("pthread_create failed");
		started++;
	}
	/*
	 * Insert key numbers in a scrambled order (i * odd mod 2^48), once
	 * the readers run.
	 */
	while (atomic_load(&race.ready) < started)
		sched_yield();
	order |= 1;
	for (i = 0; i < nkeys; i++) {
		kn = race_key((i * order) & 0xffffffffffffull, key);
		vn = race_value(slice_make(key, kn), value);
		if (memtable_add(race.m, slice_make(key, kn),
		    slice_make(value, vn)) != 0)
			bad_add++;
	}
	atomic_store(&race.done, true);
	for (t = 0; t < started; t++)
		pthread_join(readers[t].tid, NULL);

	is_int(bad_add, 0, "race: writer's %zu adds all succeed", nkeys);
	is_int(memtable_count(race.m), nkeys, "race: count is exact");
	for (t = 0; t < RACE_READERS; t++) {
		struct reader *r = &readers[t];

		diag("reader %d: %zu passes, %zu during the writes, %zu seeks",
		    t, r->passes, r->passes_during, r->seeks);
		is_int(r->rc, 0, "race: reader %d saw no error", t);
		is_int(r->order_errors, 0, "race: reader %d always saw "
		    "strictly increasing keys", t);
		is_int(r->value_errors, 0, "race: reader %d saw each value "
		    "match its key", t);
		is_int(r->lost_errors, 0, "race: reader %d saw at least the "
		    "entries counted before each scan", t);
		is_int(r->seek_errors, 0, "race: reader %d's seeks landed at "
		    "or after the target", t);
		is_int(r->final_seen, nkeys, "race: reader %d's last scan saw "
		    "every entry", t);
	}
	memtable_unref(race.m);
}

/* memtable_visit_prefix() callback: count the entries, keep the last. */
struct bounds_visit {
	size_t n;
	struct slice last;
};

static int
bounds_visit(void *arg, struct slice key, struct slice value)
{
	struct bounds_visit *v = arg;

	(void)value;
	v->n++;
	v->last = key;
	return 0;
}

static size_t
visit_count(struct memtable *m, const char *prefix)
{
	struct bounds_visit v = { 0, { NULL, 0 } };

	memtable_visit_prefix(m, slice_str(prefix), bounds_visit, &v);
	return v.n;
}

static bool
get_is(struct memtable *m, const char *key, const char *want)
{
	struct slice v;
	int rc = memtable_get(m, slice_str(key), &v);

	if (want == NULL)
		return rc == BT_NOTFOUND;
	return rc == 0 && slice_is(v, want);
}

/* Where a seek lands: its key, or "" when the iterator is invalid. */
static bool
seek_is(struct iter *it, const char *target, const char *want)
{
	if (iter_seek(it, slice_str(target)) != 0)
		return false;
	if (!iter_valid(it))
		return *want == '\0';
	return slice_is(iter_key(it), want);
}

static void
xadd(struct memtable *m, const char *key, const char *value)
{
	if (memtable_add(m, slice_str(key), slice_str(value)) != 0)
		tap_bail("memtable_add failed");
}

/*
 * Keys past the largest, before the smallest and between, as each
 * insertion moves the bounds: past the largest nothing is found (not
 * even a key the largest is a prefix of), at or before the smallest the
 * smallest is, and a prefix below the smallest key still visits the keys
 * that start with it.
 */
static void
test_bounds(void)
{
	struct memtable *m = xmemtable();
	struct iter *it = xiter(m);

	ok(get_is(m, "m", NULL) && visit_count(m, "") == 0 &&
	    seek_is(it, "", ""), "bounds: an empty memtable finds nothing");
	xadd(m, "m", "1");
	ok(get_is(m, "m", "1") && get_is(m, "z", NULL) &&
	    get_is(m, "a", NULL) && get_is(m, "m\x01", NULL) &&
	    get_is(m, "", NULL), "bounds: one key: found, and no key past "
	    "or before it");
	ok(seek_is(it, "a", "m") && seek_is(it, "", "m") &&
	    seek_is(it, "m", "m") && seek_is(it, "ma", "") &&
	    seek_is(it, "n", ""), "bounds: one key: seeks before it land on "
	    "it, past it nowhere");
	xadd(m, "mz", "2");
	ok(get_is(m, "mz", "2") && get_is(m, "mzz", NULL) &&
	    visit_count(m, "m") == 2 && visit_count(m, "mz") == 1 &&
	    visit_count(m, "mzz") == 0 && visit_count(m, "n") == 0,
	    "bounds: a new largest key is found, keys past it are not");
	xadd(m, "g", "3");
	ok(get_is(m, "g", "3") && get_is(m, "mz", "2") &&
	    get_is(m, "f", NULL) && seek_is(it, "a", "g") &&
	    seek_is(it, "h", "m") && seek_is(it, "mza", ""),
	    "bounds: a new smallest key is found, seeks before it land on it");
	xadd(m, "k", "4");
	ok(get_is(m, "k", "4") && seek_is(it, "h", "k") &&
	    seek_is(it, "mz", "mz") && get_is(m, "mz", "2"),
	    "bounds: a key between leaves both bounds");
	xadd(m, "ab", "5");
	ok(visit_count(m, "a") == 1 && visit_count(m, "") == 5 &&
	    get_is(m, "a", NULL) && get_is(m, "ab", "5"),
	    "bounds: a prefix below the smallest key visits the keys under it");
	iter_free(it);
	memtable_unref(m);
}

/*
 * The bounds under a writer: one writer inserts keys that each become the
 * new largest or the new smallest (alternately, outward from the middle)
 * and publishes how many it has added; readers look each key up before
 * its insertion (the bound check answers: absent) and again once it is
 * published, when a get, a prefix visit and a seek must all find it.  A
 * reader that kept a bound from before, or a writer that left one behind,
 * fails here.
 */
struct bounds_race {
	struct memtable *m;
	size_t nkeys;
	_Atomic size_t published;	/* keys added, with release */
	atomic_int ready;
};

struct bounds_reader {
	pthread_t tid;
	struct bounds_race *race;
	size_t absent_before, missed, checked;
};

/* Key j: outward from the middle, even j upward and odd j downward. */
static struct slice
bounds_key(size_t j, uint8_t *p)
{
	uint64_t n = (1ull << 40) + (j % 2 == 0 ? j / 2 : -(j / 2 + 1));

	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(n >> (56 - 8 * i));
	return slice_make(p, 8);
}

static int
bounds_visit_find(void *arg, struct slice key, struct slice value)
{
	struct slice *want = arg;

	(void)value;
	return slice_equal(key, *want) ? 1 : 0;
}

static void *
bounds_reader_main(void *arg)
{
	struct bounds_reader *r = arg;
	struct bounds_race *race = r->race;
	struct iter *it;
	struct slice key, v;
	uint8_t kb[8];
	size_t j;
	bool found;

	if (memtable_iter_new(race->m, &it) != 0)
		tap_bail("memtable_iter_new failed");
	atomic_fetch_add(&race->ready, 1);
	for (j = 0; j < race->nkeys; j++) {
		key = bounds_key(j, kb);
		while (atomic_load_explicit(&race->published,
		    memory_order_acquire) <= j) {
			if (memtable_get(race->m, key, &v) == BT_NOTFOUND)
				r->absent_before++;
			sched_yield();
		}
		found = memtable_get(race->m, key, &v) == 0 &&
		    slice_equal(v, key) &&
		    memtable_visit_prefix(race->m, key, bounds_visit_find,
		    &key) == 1 &&
		    iter_seek(it, key) == 0 && iter_valid(it) &&
		    slice_equal(iter_key(it), key);
		if (!found)
			r->missed++;
		r->checked++;
	}
	iter_free(it);
	return NULL;
}

static void
test_bounds_race(size_t nkeys)
{
	struct bounds_race race;
	struct bounds_reader readers[RACE_READERS];
	uint8_t kb[8];
	struct slice key;
	size_t j, bad_add = 0;
	int t;

	race.m = xmemtable();
	race.nkeys = nkeys;
	atomic_init(&race.published, 0);
	atomic_init(&race.ready, 0);
	memset(readers, 0, sizeof(readers));
	for (t = 0; t < RACE_READERS; t++) {
		readers[t].race = &race;
		if (pthread_create(&readers[t].tid, NULL, bounds_reader_main,
		    &readers[t]) != 0)
			tap_bail("pthread_create failed");
	}
	while (atomic_load(&race.ready) < RACE_READERS)
		sched_yield();
	for (j = 0; j < nkeys; j++) {
		key = bounds_key(j, kb);
		if (memtable_add(race.m, key, key) != 0)
			bad_add++;
		atomic_store_explicit(&race.published, j + 1,
		    memory_order_release);
		if (j % 64 == 0)
			sched_yield();
	}
	for (t = 0; t < RACE_READERS; t++)
		pthread_join(readers[t].tid, NULL);
	is_int(bad_add, 0, "bounds race: the writer's %zu adds succeed",
	    nkeys);
	for (t = 0; t < RACE_READERS; t++) {
		struct bounds_reader *r = &readers[t];

		diag("bounds reader %d: %zu lookups of keys not yet published "
		    "found them absent", t, r->absent_before);
		is_int(r->checked, nkeys, "bounds race: reader %d checked "
		    "every key", t);
		is_int(r->missed, 0, "bounds race: reader %d found every key, "
		    "each a new largest or smallest, once it was published", t);
	}
	memtable_unref(race.m);
}

int
main(void)
{
	uint64_t seed = tap_seed(), rs = seed;
	long div = size_divisor();

	test_empty();
	test_model(&rs, MODEL_KEYS / (size_t)div);
	test_shared_prefix(&rs);
	test_ascending(&rs);
	test_value_sizes(&rs);
	test_memory();
	test_entry_overhead();
	test_nomem();
	test_iter_live();
	test_iter_ref();
	test_race(seed, RACE_KEYS / (size_t)div);
	test_bounds();
	test_bounds_race(BOUNDS_KEYS / (size_t)div);
	return tap_done();
}
