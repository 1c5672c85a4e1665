/*
 * test_merge.c - the merging iterator: the union of several sorted
 * memtables in order, a key held by several children returned once (from
 * the first child), seeks, empty inputs, and one child unwrapped.
 */
#include "memtable/memtable.h"
#include "tablet/merge.h"
#include "tap.h"
#include "util/error.h"

enum { CHILDREN = 4, KEYS = 2000 };

static void
key_of(uint32_t k, char out[16])
{
	snprintf(out, 16, "k%08u", k);
}

static void
test_union(uint64_t seed)
{
	struct memtable *mt[CHILDREN];
	struct iter *children[CHILDREN], *it;
	static int owner[KEYS];		/* first child holding key i, or -1 */
	uint64_t st = seed;
	int bad = 0, count = 0, expected = 0;
	char buf[16];

	for (int c = 0; c < CHILDREN; c++)
		memtable_new(&mt[c]);
	for (int i = 0; i < KEYS; i++) {
		owner[i] = -1;
		for (int c = 0; c < CHILDREN; c++) {
			if (tap_rand(&st) % 3 != 0)
				continue;
			char val[8];

			key_of((uint32_t)i, buf);
			snprintf(val, sizeof(val), "%d", c);
			memtable_add(mt[c], slice_str(buf), slice_str(val));
			if (owner[i] < 0)
				owner[i] = c;
		}
		if (owner[i] >= 0)
			expected++;
	}
	for (int c = 0; c < CHILDREN; c++)
		memtable_iter_new(mt[c], &children[c]);
	ok(merge_iter_new(children, CHILDREN, &it) == 0, "merge created");
	iter_seek_first(it);
	for (int i = 0; i < KEYS; i++) {
		char val[8];

		if (owner[i] < 0)
			continue;
		key_of((uint32_t)i, buf);
		snprintf(val, sizeof(val), "%d", owner[i]);
		if (!iter_valid(it) || !slice_equal(iter_key(it), slice_str(buf)) ||
		    !slice_equal(iter_value(it), slice_str(val)))
			bad++;
		else
			count++;
		iter_next(it);
	}
	ok(!iter_valid(it), "iteration ends after the last key");
	is_int(bad, 0, "every key once, in order, from the first child");
	is_int(count, expected, "count of distinct keys");

	bad = 0;
	for (int n = 0; n < 500; n++) {
		int target = (int)(tap_rand(&st) % (KEYS + 10));
		int want = target;

		while (want < KEYS && owner[want] < 0)
			want++;
		key_of((uint32_t)target, buf);
		iter_seek(it, slice_str(buf));
		if (want >= KEYS) {
			if (iter_valid(it))
				bad++;
			continue;
		}
		key_of((uint32_t)want, buf);
		if (!iter_valid(it) || !slice_equal(iter_key(it), slice_str(buf)))
			bad++;
	}
	is_int(bad, 0, "seek lands on the first key >= target");
	iter_free(it);
	for (int c = 0; c < CHILDREN; c++)
		memtable_unref(mt[c]);
}

static void
test_empty(void)
{
	struct iter *it;

	ok(merge_iter_new(NULL, 0, &it) == 0, "merge of nothing");
	iter_seek_first(it);
	ok(!iter_valid(it), "merge of nothing is empty");
	iter_free(it);
}

/*
 * Children whose ranges follow one another, with a few keys held by
 * two or three of them (inside a run, and where runs meet): long runs of
 * one child on top, where the merge knows the top key is unique without
 * looking at the others, still return each shared key once, from the
 * first child holding it.
 */
static void
test_runs(void)
{
	static const struct { int child, lo, hi; } spans[] = {
		{ 0, 0, 1000 }, { 0, 1500, 1501 }, { 0, 1999, 2000 },
		{ 1, 1000, 2000 }, { 1, 500, 501 }, { 1, 2500, 2501 },
		{ 2, 999, 1001 }, { 2, 1500, 1501 }, { 2, 2500, 2600 },
	};
	struct memtable *mt[3];
	struct iter *children[3], *it;
	int owner[2600], bad = 0, count = 0, expected = 0;
	char buf[16], val[16];

	for (int i = 0; i < 2600; i++)
		owner[i] = -1;
	for (int c = 0; c < 3; c++)
		memtable_new(&mt[c]);
	for (size_t j = 0; j < sizeof(spans) / sizeof(spans[0]); j++) {
		for (int i = spans[j].lo; i < spans[j].hi; i++) {
			key_of((uint32_t)i, buf);
			snprintf(val, sizeof(val), "%d", spans[j].child);
			memtable_add(mt[spans[j].child], slice_str(buf),
			    slice_str(val));
			if (owner[i] < 0 || owner[i] > spans[j].child)
				owner[i] = spans[j].child;
		}
	}
	for (int c = 0; c < 3; c++)
		memtable_iter_new(mt[c], &children[c]);
	ok(merge_iter_new(children, 3, &it) == 0, "merge of runs created");
	iter_seek_first(it);
	for (int i = 0; i < 2600; i++) {
		if (owner[i] < 0)
			continue;
		expected++;
		key_of((uint32_t)i, buf);
		snprintf(val, sizeof(val), "%d", owner[i]);
		if (!iter_valid(it) || !slice_equal(iter_key(it),
		    slice_str(buf)) || !slice_equal(iter_value(it),
		    slice_str(val))) {
			bad++;
			continue;
		}
		count++;
		iter_next(it);
	}
	ok(!iter_valid(it), "runs: iteration ends after the last key");
	is_int(bad, 0, "runs: every key once, in order, from the first child");
	is_int(count, expected, "runs: %d distinct keys", expected);
	iter_free(it);
	for (int c = 0; c < 3; c++)
		memtable_unref(mt[c]);
}

/*
 * One child is its own union: the merge hands it back unwrapped (no heap
 * step per entry), and it still yields every key in order and seeks.
 */
static void
test_single(void)
{
	struct memtable *mt;
	struct iter *child, *it;
	char buf[16];
	int count = 0, bad = 0;

	memtable_new(&mt);
	for (int i = 0; i < 100; i++) {
		key_of((uint32_t)(i * 2), buf);
		memtable_add(mt, slice_str(buf), slice_str("v"));
	}
	memtable_iter_new(mt, &child);
	ok(merge_iter_new(&child, 1, &it) == 0, "merge of one child");
	ok(it == child, "one child comes back as itself");
	for (iter_seek_first(it); iter_valid(it); iter_next(it)) {
		key_of((uint32_t)(count * 2), buf);
		if (!slice_equal(iter_key(it), slice_str(buf)))
			bad++;
		count++;
	}
	is_int(count, 100, "every key of the one child");
	is_int(bad, 0, "in order");
	key_of(51, buf);
	iter_seek(it, slice_str(buf));
	key_of(52, buf);
	ok(iter_valid(it) && slice_equal(iter_key(it), slice_str(buf)),
	    "a seek lands on the next key");
	iter_free(it);
	memtable_unref(mt);
}

int
main(void)
{
	test_union(tap_seed());
	test_runs();
	test_empty();
	test_single();
	return tap_done();
}
