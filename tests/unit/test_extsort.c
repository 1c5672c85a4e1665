/*
 * test_extsort.c - the external sort (util/extsort.h) against a model:
 * random keys with many repeats and empty values, under budgets from
 * everything-in-memory down to a few entries per run, come back in key
 * order with the last-added entry of each key and no other; an entry
 * larger than the budget and than a run's read buffer passes whole; a
 * byte flipped in a spilled run makes the merge end in BT_ECHECKSUM,
 * not BT_DONE (a bulk load then commits nothing); the
 * run files are gone after extsort_free().
 */
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "util/env.h"
#include "util/error.h"
#include "util/extsort.h"

#define ENTRIES 5000

struct model {
	char key[16];
	size_t key_n;
	char *value;
	size_t value_n;
	size_t order;
};

static int
model_compare(const void *a, const void *b)
{
	const struct model *x = a, *y = b;
	size_t n = x->key_n < y->key_n ? x->key_n : y->key_n;
	int c = memcmp(x->key, y->key, n);

	if (c != 0)
		return c;
	if (x->key_n != y->key_n)
		return x->key_n < y->key_n ? -1 : 1;
	return x->order > y->order ? -1 : 1;	/* the last added first */
}

static int
count_fn(void *arg, const char *name)
{
	(void)name;
	(*(int *)arg)++;
	return 0;
}

static int
dir_count(struct env *env)
{
	int n = 0;

	env_dir_list(env, "/tmp", count_fn, &n);
	return n;
}

static struct extsort *
sort_new(struct env *env, size_t budget)
{
	struct extsort_options o = { env, "/tmp", "t", budget };
	struct extsort *x;

	if (extsort_new(&o, &x) != 0)
		tap_bail("extsort_new");
	return x;
}

static void
test_model(struct env *env, size_t budget, uint64_t seed)
{
	struct model *m = calloc(ENTRIES, sizeof(*m));
	struct extsort_stats st;
	struct extsort *x = sort_new(env, budget);
	struct slice k, v;
	uint64_t rnd = seed;
	size_t i, j, bad = 0, got = 0;
	int rc;

	for (i = 0; i < ENTRIES; i++) {
		/* Keys of 0 to 5 bytes from a small alphabet, 0x00 included:
		 * repeats and prefixes of each other. */
		m[i].key_n = tap_rand(&rnd) % 6;
		for (j = 0; j < m[i].key_n; j++)
			m[i].key[j] = "\0ab"[tap_rand(&rnd) % 3];
		m[i].value_n = tap_rand(&rnd) % 40;
		m[i].value = malloc(m[i].value_n + 1);
		for (j = 0; j < m[i].value_n; j++)
			m[i].value[j] = (char)tap_rand(&rnd);
		m[i].order = i;
		if ((rc = extsort_add(x, slice_make(m[i].key, m[i].key_n),
		    slice_make(m[i].value, m[i].value_n))) != 0)
			tap_bail("extsort_add");
	}
	is_int(extsort_finish(x), 0, "budget %zu: finish", budget);
	qsort(m, ENTRIES, sizeof(*m), model_compare);
	for (i = 0; i < ENTRIES; i++) {
		if (i > 0 && m[i].key_n == m[i - 1].key_n &&
		    memcmp(m[i].key, m[i - 1].key, m[i].key_n) == 0)
			continue;	/* an older entry of the key */
		if ((rc = extsort_next(x, &k, &v)) != 0 ||
		    k.n != m[i].key_n || memcmp(k.p, m[i].key, k.n) != 0 ||
		    v.n != m[i].value_n || memcmp(v.p, m[i].value, v.n) != 0) {
			if (bad++ == 0)
				diag("entry %zu differs (rc %d)", got, rc);
		}
		got++;
	}
	is_int(bad, 0, "budget %zu: %zu keys in order, the last added of "
	    "each", budget, got);
	is_int(extsort_next(x, &k, &v), BT_DONE, "budget %zu: then the end",
	    budget);
	extsort_get_stats(x, &st);
	is_int(st.added, ENTRIES, "budget %zu: every entry counted", budget);
	if (budget > 0 && budget < 4096)
		ok(st.runs > 10, "budget %zu: %llu runs spilled", budget,
		    (unsigned long long)st.runs);
	else if (budget >= (1u << 20))
		is_int(st.runs, 0, "budget %zu: nothing spilled", budget);
	extsort_free(x);
	is_int(dir_count(env), 0, "budget %zu: the runs are removed", budget);
	for (i = 0; i < ENTRIES; i++)
		free(m[i].value);
	free(m);
}

/* An entry larger than the budget and the merge's read buffer. */
static void
test_large(struct env *env)
{
	size_t big = 600 << 10;
	char *val = malloc(big);
	struct extsort *x = sort_new(env, 1024);
	struct slice k, v;

	memset(val, 'v', big);
	val[big - 1] = 'z';
	ok(extsort_add(x, slice_make("b", 1), slice_make("small", 5)) == 0 &&
	    extsort_add(x, slice_make("a", 1), slice_make(val, big)) == 0 &&
	    extsort_add(x, slice_make("c", 1), slice_make("x", 1)) == 0 &&
	    extsort_finish(x) == 0, "a large entry is taken");
	ok(extsort_next(x, &k, &v) == 0 && k.n == 1 && k.p[0] == 'a' &&
	    v.n == big && memcmp(v.p, val, big) == 0,
	    "it comes back whole");
	ok(extsort_next(x, &k, &v) == 0 && k.p[0] == 'b' &&
	    extsort_next(x, &k, &v) == 0 && k.p[0] == 'c' &&
	    extsort_next(x, &k, &v) == BT_DONE, "with the others around it");
	extsort_free(x);
	free(val);
}

/* A damaged run ends the merge in an error. */
static void
test_damage(struct env *env)
{
	struct extsort *x = sort_new(env, 256);
	struct slice k, v;
	char key[8];
	int rc = 0;

	for (int i = 0; i < 100; i++) {
		snprintf(key, sizeof(key), "k%03d", i);
		if (extsort_add(x, slice_make(key, 4), slice_make("value", 5)))
			tap_bail("extsort_add");
	}
	ok(env_fault_flip_byte(env, "/tmp/t-0.run", 9, 0x01) == 0,
	    "flip a byte of the first run");
	is_int(extsort_finish(x), 0, "finish");
	while ((rc = extsort_next(x, &k, &v)) == 0)
		;
	is_int(rc, BT_ECHECKSUM, "the run's checksum fails the merge");
	extsort_free(x);
}

int
main(void)
{
	static const size_t budgets[] = { 0, 1 << 20, 64 << 10, 4096, 200 };
	uint64_t seed = tap_seed();
	struct env *env;

	if (env_fault_new(&env) != 0 || env_dir_create(env, "/tmp") != 0)
		tap_bail("env");
	for (size_t i = 0; i < sizeof(budgets) / sizeof(budgets[0]); i++)
		test_model(env, budgets[i], seed + i);
	test_large(env);
	test_damage(env);
	env_free(env);
	return tap_done();
}
