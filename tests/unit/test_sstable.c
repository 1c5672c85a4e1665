/*
 * test_sstable.c - SSTables end to end: build, open, get, iterate, seek,
 * verify; size limits, compression, Bloom filter, block cache, prefix
 * walks (visit_prefix, and its way through the index fences), values
 * pinned past the iterator (and the bound on them), readers shared by
 * threads; the builder's errors, batched appends and writeback; failed
 * allocations; and damage (every byte flipped in turn, truncation, bad
 * footers) that must be reported as an error and never turn into a wrong
 * value.  The bounds block is test_sst_bounds.c's.
 *
 * SST_TEST_ENTRIES overrides the size of the large table (default
 * 1,000,000) and SST_TEST_QUICK=1 thins the byte-flip sweep, for valgrind.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sstable/block.h"
#include "sstable/format.h"
#include "sstable/sstable.h"
#include "tap.h"
#include "util/alloc.h"
#include "util/cache.h"
#include "util/coding.h"
#include "util/compress.h"
#include "util/crc32c.h"
#include "util/env.h"
#include "util/error.h"
#include "sst_util.h"

#define KEY_LEN 16

/*
 * Value kinds: random bytes (incompressible), text (compresses well), or
 * runs of 16 entries of each in turn.
 */
enum vkind { V_RANDOM, V_TEXT, V_MIXED };

struct table_spec {
	uint64_t n;		/* entries: keys 2i for i < n */
	size_t vlen;
	enum vkind kind;
	uint64_t salt;
};

/* Key number v as 16 decimal digits; present keys are even, absent odd. */
static struct slice
key_of(uint64_t v, uint8_t out[KEY_LEN + 1])
{
	snprintf((char *)out, KEY_LEN + 1, "%016llu", (unsigned long long)v);
	return slice_make(out, KEY_LEN);
}

static void
value_of(const struct table_spec *t, uint64_t i, uint8_t *out)
{
	uint64_t s = (i + 1) * 0x9e3779b97f4a7c15ull ^ t->salt;
	size_t j = 0;

	if (t->kind == V_TEXT || (t->kind == V_MIXED && (i / 16) % 2 == 0)) {
		while (j < t->vlen) {
			int m = snprintf((char *)out + j, t->vlen - j + 1,
			    "value %llu ", (unsigned long long)i);

			j += (size_t)m;
		}
		return;
	}
	for (; j < t->vlen; j++) {
		if (j % 8 == 0)
			(void)tap_rand(&s);
		out[j] = (uint8_t)(s >> (8 * (j % 8)));
	}
}

static int
build_table(struct env *env, const char *path, const struct sst_options *o,
    const struct table_spec *t, struct sst_info *info)
{
	struct sst_builder *b;
	uint8_t k[KEY_LEN + 1], *v = malloc(t->vlen + 32);
	int rc;

	if ((rc = sst_builder_new(env, path, o, &b)) < 0)
		goto out;
	for (uint64_t i = 0; i < t->n; i++) {
		value_of(t, i, v);
		if ((rc = sst_builder_add(b, key_of(2 * i, k),
		    slice_make(v, t->vlen))) < 0)
			goto out_free;
	}
	rc = sst_builder_finish(b, info);
out_free:
	sst_builder_free(b);
out:
	free(v);
	return rc;
}

/*
 * Everything a reader offers, checked against the spec: gets of present
 * keys (all when all_gets, else a random sample) and absent keys, full
 * iteration, seeks to and between keys, verify.
 */
static void
check_table(struct env *env, const char *path, const struct table_spec *t,
    struct cache *cache, bool all_gets, uint64_t *rng, const char *label)
{
	struct sst_reader *r;
	struct sst_info info;
	struct iter *it;
	struct buf got;
	uint8_t k[KEY_LEN + 1], *v = malloc(t->vlen + 32);
	uint64_t i, bad, count, samples, seeks;
	uint64_t id = cache != NULL ? cache_new_id(cache) : 0;
	int rc;

	buf_init(&got);
	rc = sst_reader_open(env, path, id, cache, NULL, &r);
	is_int(rc, 0, "%s: open", label);
	if (rc < 0) {
		diag("%s", bt_error_detail());
		goto out;
	}
	sst_reader_get_info(r, &info);
	is_int(info.entry_count, t->n, "%s: footer entry count", label);

	bad = 0;
	samples = all_gets ? t->n : (t->n < 20000 ? t->n : 20000);
	for (uint64_t s = 0; s < samples; s++) {
		i = all_gets ? s : tap_rand(rng) % t->n;
		value_of(t, i, v);
		rc = sst_reader_get(r, key_of(2 * i, k), &got);
		if (rc != 0 || !slice_equal(buf_slice(&got),
		    slice_make(v, t->vlen))) {
			if (bad++ == 0)
				diag("get %llu: %s %s", (unsigned long long)i,
				    bt_strerror(rc), bt_error_detail());
		}
	}
	is_int(bad, 0, "%s: %llu gets of present keys return their values",
	    label, (unsigned long long)samples);

	bad = 0;
	for (i = 0; i < samples; i++) {
		uint64_t a = all_gets ? i : tap_rand(rng) % t->n;

		if (sst_reader_get(r, key_of(2 * a + 1, k), &got) !=
		    BT_NOTFOUND)
			bad++;
	}
	if (sst_reader_get(r, slice_str(""), &got) != BT_NOTFOUND)
		bad++;
	if (sst_reader_get(r, slice_str("99999999999999999"), &got) !=
	    BT_NOTFOUND)
		bad++;
	is_int(bad, 0, "%s: gets of absent keys are BT_NOTFOUND", label);

	rc = sst_reader_iter_new(r, 0, &it);
	is_int(rc, 0, "%s: iterator", label);
	if (rc < 0)
		goto out_reader;
	bad = count = 0;
	for (rc = iter_seek_first(it); rc == 0 && iter_valid(it);
	    rc = iter_next(it)) {
		value_of(t, count, v);
		if (!slice_equal(iter_key(it), key_of(2 * count, k)) ||
		    !slice_equal(iter_value(it), slice_make(v, t->vlen)))
			bad++;
		count++;
	}
	ok(rc == 0 && bad == 0 && count == t->n,
	    "%s: iteration yields the %llu entries in order", label,
	    (unsigned long long)t->n);

	bad = 0;
	seeks = t->n < 10000 ? t->n : 10000;
	for (uint64_t s = 0; s < seeks; s++) {
		i = tap_rand(rng) % t->n;
		rc = iter_seek(it, key_of(2 * i + 1, k));
		if (i + 1 < t->n) {
			value_of(t, i + 1, v);
			if (rc != 0 || !iter_valid(it) ||
			    !slice_equal(iter_key(it), key_of(2 * i + 2, k)) ||
			    !slice_equal(iter_value(it), slice_make(v, t->vlen)))
				bad++;
		} else if (rc != 0 || iter_valid(it)) {
			bad++;
		}
		rc = iter_seek(it, key_of(2 * i, k));
		if (rc != 0 || !iter_valid(it) ||
		    !slice_equal(iter_key(it), key_of(2 * i, k)))
			bad++;
	}
	rc = iter_seek(it, slice_str(""));
	if (rc != 0 || iter_valid(it) != (t->n > 0))
		bad++;
	is_int(bad, 0, "%s: seeks to and between keys land right", label);
	iter_free(it);

	rc = sst_reader_verify(r);
	is_int(rc, 0, "%s: verify is clean", label);
	if (rc < 0)
		diag("%s", bt_error_detail());
out_reader:
	sst_reader_unref(r);
out:
	buf_release(&got);
	free(v);
}

static void
test_sizes(struct env *env, uint64_t *rng, uint64_t big)
{
	struct sst_options o;
	struct sst_info info;
	struct cache *cache;
	struct table_spec t0 = { 0, 100, V_RANDOM, 1 };
	struct table_spec t1 = { 1, 100, V_RANDOM, 2 };
	struct table_spec tb = { big, 100, V_RANDOM, 3 };
	int rc;

	sst_options_default(&o);
	if (cache_new(32u << 20, &cache) < 0)
		tap_bail("cache_new");

	rc = build_table(env, "t0.sst", &o, &t0, &info);
	is_int(rc, 0, "0 entries: build");
	ok(info.entry_count == 0 && info.block_count == 0 &&
	    info.data_size == 0, "0 entries: no data blocks");
	check_table(env, "t0.sst", &t0, cache, true, rng, "0 entries");

	rc = build_table(env, "t1.sst", &o, &t1, &info);
	is_int(rc, 0, "1 entry: build");
	ok(info.entry_count == 1 && info.block_count == 1, "1 entry: 1 block");
	check_table(env, "t1.sst", &t1, cache, true, rng, "1 entry");

	rc = build_table(env, "tbig.sst", &o, &tb, &info);
	is_int(rc, 0, "%llu entries: build", (unsigned long long)big);
	ok(info.block_count > big * 100 / (64 << 10),
	    "%llu entries: %llu blocks of about 64 KiB",
	    (unsigned long long)big, (unsigned long long)info.block_count);
	check_table(env, "tbig.sst", &tb, cache, true, rng, "big table");
	env_path_remove(env, "tbig.sst");
	cache_free(cache);
}

/* The on-disk type byte of the first data block, found through the
 * footer and the index, or -1. */
static int
first_block_type(struct env *env, const char *path)
{
	struct env_file *f;
	uint8_t footer[SST_FOOTER_SIZE], type = 0xff;
	uint64_t size, ioff, isize, boff, bsize;
	struct buf ib, raw;
	struct iter *it;
	struct slice h;
	int ret = -1;

	buf_init(&ib);
	buf_init(&raw);
	if (env_file_open(env, path, ENV_READ, &f) < 0)
		return -1;
	if (env_file_size(f, &size) < 0 ||
	    env_file_read_exact(f, size - SST_FOOTER_SIZE, footer,
	    sizeof(footer)) < 0)
		goto out;
	ioff = get_fixed64(footer);
	isize = get_fixed64(footer + 8);
	if (buf_reserve(&ib, isize + 1) < 0 ||
	    env_file_read_exact(f, ioff, ib.p, isize + 1) < 0)
		goto out;
	ib.n = isize;
	if (ib.p[isize] == SST_BLOCK_SNAPPY) {
		if (uncompress_snappy(buf_slice(&ib), 1 << 30, &raw) < 0)
			goto out;
	} else if (buf_set(&raw, ib.p, ib.n) < 0) {
		goto out;
	}
	if (block_iter_new(buf_slice(&raw), NULL, NULL, &it) < 0)
		goto out;
	if (iter_seek_first(it) == 0 && iter_valid(it)) {
		h = iter_value(it);
		if (get_varint64(&h, &boff) == 0 &&
		    get_varint64(&h, &bsize) == 0 &&
		    env_file_read_exact(f, boff + bsize, &type, 1) == 0)
			ret = type;
	}
	iter_free(it);
out:
	env_file_close(f);
	buf_release(&ib);
	buf_release(&raw);
	return ret;
}

static void
test_compression(struct env *env, uint64_t *rng)
{
	struct sst_options o;
	struct sst_info info_text, info_rand, info_off;
	struct table_spec text = { 3000, 200, V_TEXT, 4 };
	struct table_spec rnd = { 3000, 200, V_RANDOM, 5 };

	sst_options_default(&o);
	o.block_size = 4096;
	is_int(build_table(env, "ctext.sst", &o, &text, &info_text), 0,
	    "compressible table: build");
	is_int(first_block_type(env, "ctext.sst"), SST_BLOCK_SNAPPY,
	    "compressible values: first data block stored Snappy");
	check_table(env, "ctext.sst", &text, NULL, true, rng, "snappy blocks");

	is_int(build_table(env, "crand.sst", &o, &rnd, &info_rand), 0,
	    "random table: build");
	is_int(first_block_type(env, "crand.sst"), SST_BLOCK_RAW,
	    "random values: first data block stored raw");
	check_table(env, "crand.sst", &rnd, NULL, true, rng, "raw blocks");

	o.compress = false;
	is_int(build_table(env, "coff.sst", &o, &text, &info_off), 0,
	    "compression off: build");
	is_int(first_block_type(env, "coff.sst"), SST_BLOCK_RAW,
	    "compression off: compressible block stored raw");
	ok(info_text.data_size * 2 < info_off.data_size,
	    "compression shrinks the data (%llu vs %llu bytes)",
	    (unsigned long long)info_text.data_size,
	    (unsigned long long)info_off.data_size);
	ok(info_rand.data_size > 3000 * 200,
	    "random data is not shrunk (%llu bytes)",
	    (unsigned long long)info_rand.data_size);
}

/* An 80 KiB key and multi-MiB values around small entries, 4 KiB blocks. */
static void
test_limits(struct env *env)
{
	struct sst_options o;
	struct sst_builder *b;
	struct sst_reader *r;
	struct sst_info info;
	struct iter *it;
	struct buf got;
	struct { size_t kn, vn; } e[] = {
		{ 1, 10 }, { 80 << 10, 100 }, { 3, 3 << 20 }, { 4, 17 },
		{ 5, 5 << 20 }, { 6, 0 }, { 80 << 10, 6 << 20 }, { 8, 1 },
	};
	size_t ne = sizeof(e) / sizeof(e[0]), bad = 0, i;
	uint8_t *keys[8], *vals[8];
	int rc;

	buf_init(&got);
	/* Key i: byte 'a'+i then filler, so keys increase with i. */
	for (i = 0; i < ne; i++) {
		keys[i] = malloc(e[i].kn);
		vals[i] = malloc(e[i].vn + 1);
		memset(keys[i], 'k', e[i].kn);
		keys[i][0] = (uint8_t)('a' + i);
		for (size_t j = 0; j < e[i].vn; j++)
			vals[i][j] = (uint8_t)(j * 7 + i + (j >> 9));
	}
	sst_options_default(&o);
	o.block_size = 4096;
	rc = sst_builder_new(env, "limits.sst", &o, &b);
	for (i = 0; i < ne && rc == 0; i++)
		rc = sst_builder_add(b, slice_make(keys[i], e[i].kn),
		    slice_make(vals[i], e[i].vn));
	if (rc == 0)
		rc = sst_builder_finish(b, &info);
	sst_builder_free(b);
	is_int(rc, 0, "80 KiB keys and 6 MiB values: build");
	/* An entry of a block's size or more has a block of its own, and
	 * an entry after it starts the next: 8 blocks for the 8 entries. */
	is_int(info.block_count, 8, "each large entry has a block of its "
	    "own");

	rc = sst_reader_open(env, "limits.sst", 0, NULL, NULL, &r);
	is_int(rc, 0, "limits: open");
	if (rc < 0)
		goto out;
	for (i = 0; i < ne; i++)
		if (sst_reader_get(r, slice_make(keys[i], e[i].kn), &got) != 0 ||
		    !slice_equal(buf_slice(&got), slice_make(vals[i], e[i].vn)))
			bad++;
	is_int(bad, 0, "limits: every large entry found by get");
	sst_reader_iter_new(r, 0, &it);
	bad = i = 0;
	for (rc = iter_seek_first(it); rc == 0 && iter_valid(it);
	    rc = iter_next(it), i++)
		if (i >= ne ||
		    !slice_equal(iter_key(it), slice_make(keys[i], e[i].kn)) ||
		    !slice_equal(iter_value(it), slice_make(vals[i], e[i].vn)))
			bad++;
	ok(rc == 0 && bad == 0 && i == ne, "limits: iteration is exact");
	iter_free(it);
	is_int(sst_reader_verify(r), 0, "limits: verify is clean");
	sst_reader_unref(r);
out:
	for (i = 0; i < ne; i++) {
		free(keys[i]);
		free(vals[i]);
	}
	buf_release(&got);
}

static void
test_bloom(struct env *env, uint64_t *rng)
{
	struct sst_options o;
	struct sst_reader *r;
	struct sst_reader_stats st;
	struct table_spec t = { 20000, 50, V_RANDOM, 6 };
	struct sst_builder *b;
	struct buf got;
	uint8_t k[KEY_LEN + 1];
	char key[64];
	uint64_t before, n_absent = 20000, fp_may = 0, missed = 0;
	int rc;

	buf_init(&got);
	sst_options_default(&o);
	build_table(env, "bloom.sst", &o, &t, NULL);
	if (sst_reader_open(env, "bloom.sst", 0, NULL, NULL, &r) < 0)
		tap_bail("open bloom.sst");
	for (uint64_t i = 0; i < n_absent; i++)
		sst_reader_get(r, key_of(2 * (tap_rand(rng) % t.n) + 1, k),
		    &got);
	sst_reader_get_stats(r, &st);
	ok(st.filter_negatives >= n_absent * 95 / 100,
	    "Bloom filter answers %llu of %llu absent lookups",
	    (unsigned long long)st.filter_negatives,
	    (unsigned long long)n_absent);
	ok(st.block_reads < n_absent / 20,
	    "absent lookups read few blocks (%llu)",
	    (unsigned long long)st.block_reads);
	sst_reader_unref(r);

	o.bloom_bits_per_key = 0;
	build_table(env, "nobloom.sst", &o, &t, NULL);
	if (sst_reader_open(env, "nobloom.sst", 0, NULL, NULL, &r) < 0)
		tap_bail("open nobloom.sst");
	for (uint64_t i = 0; i < 1000; i++)
		sst_reader_get(r, key_of(2 * i + 1, k), &got);
	sst_reader_get_stats(r, &st);
	ok(st.filter_negatives == 0 && st.block_reads == 1000,
	    "without a filter every absent lookup reads a block");
	ok(sst_reader_may_contain(r, slice_str("anything")),
	    "without a filter may_contain is true");
	sst_reader_unref(r);

	/* filter_prefix: the filter holds rows, not whole keys. */
	sst_options_default(&o);
	o.filter_prefix = row_prefix;
	if (sst_builder_new(env, "rows.sst", &o, &b) < 0)
		tap_bail("builder rows.sst");
	for (int row = 0; row < 2000; row++)
		for (int col = 0; col < 10; col++) {
			snprintf(key, sizeof(key), "row%06d/col%d", 2 * row, col);
			sst_builder_add(b, slice_str(key), slice_str("v"));
		}
	rc = sst_builder_finish(b, NULL);
	sst_builder_free(b);
	is_int(rc, 0, "rows table with a row filter: build");
	if (sst_reader_open(env, "rows.sst", 0, NULL, row_prefix, &r) < 0)
		tap_bail("open rows.sst");
	for (int row = 0; row < 2000; row++) {
		snprintf(key, sizeof(key), "row%06d/", 2 * row);
		if (!sst_reader_may_contain(r, slice_str(key)))
			missed++;
		snprintf(key, sizeof(key), "row%06d/", 2 * row + 1);
		if (sst_reader_may_contain(r, slice_str(key)))
			fp_may++;
	}
	is_int(missed, 0, "row filter: may_contain true for every row");
	ok(fp_may < 100, "row filter: absent rows mostly excluded (%llu/2000)",
	    (unsigned long long)fp_may);
	sst_reader_get_stats(r, &st);
	before = st.filter_negatives;
	rc = 0;
	for (int row = 0; row < 200; row++) {
		snprintf(key, sizeof(key), "row%06d/col99", 2 * row);
		if (sst_reader_get(r, slice_str(key), &got) != BT_NOTFOUND)
			rc = -1;
	}
	sst_reader_get_stats(r, &st);
	ok(rc == 0 && st.filter_negatives == before,
	    "row filter: absent column in a present row passes the filter");
	for (int row = 0; row < 200; row++) {
		snprintf(key, sizeof(key), "row%06d/col1", 2 * row + 1);
		sst_reader_get(r, slice_str(key), &got);
	}
	sst_reader_get_stats(r, &st);
	ok(st.filter_negatives - before >= 190,
	    "row filter: absent rows answered by the filter (%llu/200)",
	    (unsigned long long)(st.filter_negatives - before));
	snprintf(key, sizeof(key), "row%06d/col3", 84);
	ok(sst_reader_get(r, slice_str(key), &got) == 0 &&
	    slice_equal(buf_slice(&got), slice_str("v")),
	    "row filter: present key found");
	is_int(sst_reader_verify(r), 0, "row filter: verify is clean");
	sst_reader_unref(r);
	buf_release(&got);
}

/*
 * A lookup past the table's last key is answered from the key range that
 * the reader keeps (the index's last key), before the filter: no filter
 * negative is counted and no block is read.  The last key, the keys
 * before it and the prefixes it extends are not ruled out; an empty
 * table rules out everything.
 */
static void
test_key_range(struct env *env)
{
	struct table_spec t = { 3000, 20, V_TEXT, 7 };
	struct sst_reader_stats st;
	struct sst_options o;
	struct sst_reader *r;
	struct buf got;
	uint8_t k[KEY_LEN + 1], longer[KEY_LEN + 2];
	uint64_t found = 0;

	buf_init(&got);
	sst_options_default(&o);
	o.block_size = 1024;
	if (build_table(env, "range.sst", &o, &t, NULL) < 0 ||
	    sst_reader_open(env, "range.sst", 0, NULL, NULL, &r) < 0)
		tap_bail("range.sst");
	ok(!sst_reader_ends_before(r, key_of(2 * (t.n - 1), k)),
	    "key range: the last key is not past the end");
	ok(!sst_reader_ends_before(r, slice_make(k, KEY_LEN - 1)),
	    "key range: a prefix of the last key is not past the end");
	memcpy(longer, k, KEY_LEN);
	longer[KEY_LEN] = '0';
	ok(sst_reader_ends_before(r, slice_make(longer, KEY_LEN + 1)),
	    "key range: a key extending the last key is past the end");
	ok(!sst_reader_ends_before(r, key_of(0, k)) &&
	    !sst_reader_ends_before(r, key_of(2 * t.n - 3, k)),
	    "key range: keys inside the table are not past the end");
	ok(sst_reader_ends_before(r, key_of(2 * t.n - 1, k)),
	    "key range: the key after the last is past the end");
	for (uint64_t i = 0; i < 1000; i++)
		if (sst_reader_get(r, key_of(2 * (t.n + i) + 1, k), &got) !=
		    BT_NOTFOUND)
			found++;
	sst_reader_get_stats(r, &st);
	ok(found == 0 && st.filter_negatives == 0 && st.block_reads == 0,
	    "key range: 1000 lookups past the end answered without the filter "
	    "(%llu negatives) or a block (%llu)",
	    (unsigned long long)st.filter_negatives,
	    (unsigned long long)st.block_reads);
	ok(sst_reader_get(r, key_of(2 * (t.n - 1), k), &got) == 0,
	    "key range: the last key is found");
	sst_reader_unref(r);

	t.n = 0;
	if (build_table(env, "empty.sst", &o, &t, NULL) < 0 ||
	    sst_reader_open(env, "empty.sst", 0, NULL, NULL, &r) < 0)
		tap_bail("empty.sst");
	ok(sst_reader_ends_before(r, key_of(0, k)) &&
	    sst_reader_ends_before(r, slice_make(NULL, 0)),
	    "key range: an empty table rules out every key");
	sst_reader_unref(r);
	buf_release(&got);
}

static void
test_cache(struct env *env)
{
	struct sst_options o;
	struct sst_reader *r;
	struct sst_reader_stats st;
	struct cache_stats cs0, cs1;
	struct table_spec t = { 5000, 100, V_RANDOM, 7 };
	struct cache *cache;
	struct buf got;
	uint8_t k[KEY_LEN + 1];

	buf_init(&got);
	sst_options_default(&o);
	build_table(env, "cache.sst", &o, &t, NULL);
	/* 16 shards of 1 MiB: each can hold a 64 KiB block. */
	if (cache_new(16u << 20, &cache) < 0)
		tap_bail("cache_new");
	if (sst_reader_open(env, "cache.sst", cache_new_id(cache), cache, NULL,
	    &r) < 0)
		tap_bail("open cache.sst");
	cache_get_stats(cache, &cs0);
	is_int(sst_reader_get(r, key_of(2 * 1234, k), &got), 0, "first get");
	sst_reader_get_stats(r, &st);
	is_int(st.block_reads, 1, "first get reads one block");
	is_int(sst_reader_get(r, key_of(2 * 1234, k), &got), 0, "second get");
	is_int(sst_reader_get(r, key_of(2 * 1235, k), &got), 0,
	    "get of a neighbour");
	sst_reader_get_stats(r, &st);
	cache_get_stats(cache, &cs1);
	is_int(st.block_reads, 1, "second get of the same key reads nothing");
	is_int(cs1.hits - cs0.hits, 2, "both later gets hit the cache");
	ok(cs1.usage > 0 && cs1.usage <= (64u << 10) + 1024,
	    "the cache is charged one block (%zu)", cs1.usage);
	sst_reader_unref(r);
	cache_free(cache);

	/* A compaction's iterator uses cached blocks but adds none; a
	 * plain iterator adds every block it reads. */
	if (cache_new(16u << 20, &cache) < 0 ||
	    sst_reader_open(env, "cache.sst", cache_new_id(cache), cache,
	    NULL, &r) < 0)
		tap_bail("open cache.sst again");
	is_int(sst_reader_get(r, key_of(2 * 1234, k), &got), 0,
	    "a get caches one block");
	cache_get_stats(cache, &cs0);
	{
		struct iter *it;
		long entries = 0;
		int rc;

		if (sst_reader_iter_new(r, SST_ITER_NO_CACHE_FILL, &it) < 0)
			tap_bail("sst_reader_iter_new");
		for (rc = iter_seek_first(it); rc == 0 && iter_valid(it);
		    rc = iter_next(it))
			entries++;
		iter_free(it);
		cache_get_stats(cache, &cs1);
		is_int(entries, (long)t.n, "the compaction iterator reads "
		    "every entry (rc %d)", rc);
		is_int(cs1.inserts - cs0.inserts, 0, "and puts no block in "
		    "the cache");
		ok(cs1.hits > cs0.hits, "but uses the cached one");
		is_int(cs1.usage, cs0.usage, "the cache holds what it held");
		if (sst_reader_iter_new(r, 0, &it) < 0)
			tap_bail("sst_reader_iter_new");
		for (rc = iter_seek_first(it); rc == 0 && iter_valid(it);
		    rc = iter_next(it))
			;
		iter_free(it);
		cache_get_stats(cache, &cs0);
		ok(cs0.inserts > cs1.inserts, "a plain iterator fills the "
		    "cache (%" PRIu64 " blocks)", cs0.inserts - cs1.inserts);
	}
	sst_reader_unref(r);
	cache_free(cache);

	/* Without a cache, every get reads. */
	sst_reader_open(env, "cache.sst", 0, NULL, NULL, &r);
	sst_reader_get(r, key_of(2 * 1234, k), &got);
	sst_reader_get(r, key_of(2 * 1234, k), &got);
	sst_reader_get_stats(r, &st);
	is_int(st.block_reads, 2, "without a cache each get reads its block");
	sst_reader_unref(r);
	buf_release(&got);
}

/* Row r has 1 + (r * 7) % 40 columns; row 38 has 400 (many blocks). */
static int
prefix_cols(int row)
{
	return row == 38 ? 400 : 1 + (row * 7) % 40;
}

/*
 * sst_reader_visit_prefix: exactly a row's entries, across blocks, with
 * and without a cache; with pins the values stay valid after the walk even
 * in a cache too small to keep the blocks; a visit can stop the walk.
 */
static void
test_visit_prefix(struct env *env)
{
	struct sst_options o;
	struct sst_reader *r;
	struct cache *cache;
	struct buf ik, dk;
	struct sst_pins pins;
	char key[32];
	size_t bad = 0, pinned_bad = 0, absent_bad = 0;
	struct prefix_log *l = calloc(1, sizeof(*l));

	if (l == NULL)
		tap_bail("out of memory");
	buf_init(&ik);
	buf_init(&dk);
	sst_options_default(&o);
	o.block_size = 256;
	o.filter_prefix = row_prefix;
	build_rows_table(env, "prefix.sst", &o, 100, 2, prefix_cols, NULL);
	/* Two blocks' worth of cache: pinned blocks outlive eviction. */
	if (cache_new(512, &cache) < 0)
		tap_bail("cache_new");
	for (int pass = 0; pass < 2; pass++) {
		struct cache *c = pass == 0 ? cache : NULL;

		if (sst_reader_open(env, "prefix.sst",
		    c != NULL ? cache_new_id(c) : 0, c, row_prefix, &r) < 0)
			tap_bail("open prefix.sst");
		for (int row = 0; row < 101; row++) {
			int rc;

			snprintf(key, sizeof(key), "row%04d/", row);
			memset(l, 0, sizeof(*l));
			rc = sst_reader_visit_prefix(r, slice_str(key),
			    NULL, &ik, &dk, NULL, prefix_collect, l);
			if (rc != 0 || l->n != (size_t)(row % 2 == 0 &&
			    row < 100 ? prefix_cols(row) : 0))
				(row % 2 == 0 ? &bad : &absent_bad)[0]++;

			memset(l, 0, sizeof(*l));
			sst_pins_init(&pins);
			rc = sst_reader_visit_prefix(r, slice_str(key),
			    NULL, &ik, &dk, &pins, prefix_collect, l);
			/* Other rows' blocks through the tiny cache. */
			if (rc == 0 && row % 2 == 0 && row < 100) {
				struct prefix_log *other = calloc(1,
				    sizeof(*other));

				snprintf(key, sizeof(key), "row%04d/",
				    (row + 50) % 100);
				(void)sst_reader_visit_prefix(r,
				    slice_str(key), NULL, &ik, &dk, NULL,
				    prefix_collect, other);
				free(other);
				if (!prefix_log_is(l, row, prefix_cols(row)))
					pinned_bad++;
			}
			sst_pins_release(&pins);
		}
		is_int(bad, 0, "%s: every row's entries visited, across "
		    "blocks", c != NULL ? "cache" : "no cache");
		is_int(absent_bad, 0, "%s: absent rows visit nothing",
		    c != NULL ? "cache" : "no cache");
		is_int(pinned_bad, 0, "%s: pinned values stay valid after the "
		    "walk", c != NULL ? "cache" : "no cache");

		memset(l, 0, sizeof(*l));
		l->stop_after = 5;
		l->stop_rc = 1;
		is_int(sst_reader_visit_prefix(r, slice_str("row0038/"),
		    NULL, &ik, &dk, NULL, prefix_collect, l), 0,
		    "a visit that stops: 0");
		is_int(l->n, 5, "the walk ends at the visit that stopped it");
		memset(l, 0, sizeof(*l));
		l->stop_after = 100;
		l->stop_rc = -EIO;
		is_int(sst_reader_visit_prefix(r, slice_str("row0038/"),
		    NULL, &ik, &dk, NULL, prefix_collect, l), -EIO,
		    "a visit's error is passed back");
		memset(l, 0, sizeof(*l));
		is_int(sst_reader_visit_prefix(r, slice_str("row00"), NULL,
		    &ik, &dk, NULL, prefix_collect, l), 0, "a shorter prefix");
		ok(l->n > 400, "a shorter prefix spans rows (%zu)", l->n);
		sst_reader_unref(r);
		bad = pinned_bad = absent_bad = 0;
	}
	cache_free(cache);
	buf_release(&ik);
	buf_release(&dk);
	free(l);
}

/* ---- The index fences of a point read ---- */

#define FENCE_KEYS	3000
#define FENCE_KEY_MAX	40

struct fence_key {
	uint8_t p[FENCE_KEY_MAX];
	size_t n;
};

static int
fence_key_cmp(const void *a, const void *b)
{
	const struct fence_key *x = a, *y = b;

	return slice_compare(slice_make(x->p, x->n), slice_make(y->p, y->n));
}

/* The walk's check against the model: the visited keys are model[next..]
 * in order. */
struct fence_walk {
	const struct fence_key *model;
	size_t next, n, end;
	bool wrong;
};

static int
fence_collect(void *arg, struct slice key, struct slice value)
{
	struct fence_walk *w = arg;

	(void)value;
	if (w->next >= w->end || !slice_equal(key,
	    slice_make(w->model[w->next].p, w->model[w->next].n)))
		w->wrong = true;
	w->next++;
	w->n++;
	return 0;
}

/* Whether visit_prefix(target) visits exactly the model's keys that start
 * with target. */
static bool
fence_target_ok(struct sst_reader *r, const struct fence_key *model,
    size_t count, struct slice target, struct buf *ik, struct buf *dk)
{
	struct fence_walk w = { model, 0, 0, 0, false };
	struct sst_reader_stats st0, st1;
	size_t lo = 0, hi = count, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (slice_compare(slice_make(model[mid].p, model[mid].n),
		    target) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	w.next = lo;
	for (w.end = lo; w.end < count && slice_starts_with(
	    slice_make(model[w.end].p, model[w.end].n), target); w.end++)
		;
	sst_reader_get_stats(r, &st0);
	if (sst_reader_visit_prefix(r, target, NULL, ik, dk, NULL,
	    fence_collect, &w) != 0)
		return false;
	sst_reader_get_stats(r, &st1);
	/* The blocks holding the keys, and at most the one after them. */
	return !w.wrong && w.n == w.end - lo &&
	    st1.block_reads - st0.block_reads <= w.n + 1;
}

/*
 * sst_reader_visit_prefix finds the first index entry through the fences:
 * keys sharing a long common prefix, then bytes from a small alphabet with
 * 0x00 and 0xff, of lengths from 0 (the common prefix alone) up, three in
 * four of them after one of three 8-byte middles, so that many index keys
 * have equal fences and some are shorter than their fence's 8 bytes; tiny
 * blocks give an index entry every key or two.  Every target visits
 * exactly the model's keys with that prefix, reading no more than the
 * blocks that hold them and the one after: each key,
 * each of its prefixes (down to below the common part), each key plus a
 * 0x00, each key with its last byte bumped up or down, random strings,
 * the empty target, targets before and after every key.  Also a table
 * without a common prefix and one of one block.
 */
static void
test_visit_prefix_fences(struct env *env, uint64_t *rng)
{
	static const uint8_t alphabet[] = { 0x00, 0x01, 'a', 'b', 0xff };
	static const uint8_t middles[3][8] = {
		{ 'a', 'b', 0x00, 'a', 'b', 0xff, 0x01, 'a' },
		{ 'a', 'b', 0x00, 'a', 'b', 0xff, 0x01, 'b' },
		{ 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff },
	};
	static const char *const commons[] = { "tabletfs-common-", "" };
	struct fence_key *keys = calloc(FENCE_KEYS, sizeof(*keys));
	struct sst_options o;
	struct sst_builder *b;
	struct sst_reader *r;
	struct buf ik, dk;
	uint8_t t[FENCE_KEY_MAX + 1];
	size_t count, bad, targets;

	if (keys == NULL)
		tap_bail("out of memory");
	buf_init(&ik);
	buf_init(&dk);
	for (int round = 0; round < 3; round++) {
		const char *common = commons[round == 1];
		size_t cn = strlen(common), want = round == 2 ? 3 : FENCE_KEYS;

		for (size_t i = 0; i < want; i++) {
			size_t len = (size_t)(tap_rand(rng) % 15), j = 0;
			unsigned kind = (unsigned)(tap_rand(rng) % 4);

			memcpy(keys[i].p, common, cn);
			if (round == 1)	/* no common first byte */
				keys[i].p[j++] = (uint8_t)tap_rand(rng);
			if (kind < 3) {	/* a shared middle: equal fences */
				memcpy(keys[i].p + cn + j, middles[kind], 8);
				j += 8;
				len = j + (size_t)(tap_rand(rng) % 7);
			}
			for (; j < len; j++)
				keys[i].p[cn + j] = alphabet[tap_rand(rng) % 5];
			keys[i].n = cn + (len > j ? len : j);
			if (keys[i].n == 0)
				keys[i].n = 1;
		}
		qsort(keys, want, sizeof(*keys), fence_key_cmp);
		count = 0;
		for (size_t i = 0; i < want; i++)
			if (count == 0 || fence_key_cmp(&keys[count - 1],
			    &keys[i]) != 0)
				keys[count++] = keys[i];
		sst_options_default(&o);
		o.block_size = round == 2 ? 4096 : 48;
		o.compress = false;
		if (sst_builder_new(env, "fence.sst", &o, &b) < 0)
			tap_bail("builder fence.sst");
		for (size_t i = 0; i < count; i++)
			if (sst_builder_add(b, slice_make(keys[i].p, keys[i].n),
			    slice_str("v")) < 0)
				tap_bail("sst_builder_add fence.sst");
		if (sst_builder_finish(b, NULL) < 0)
			tap_bail("sst_builder_finish fence.sst");
		sst_builder_free(b);
		if (sst_reader_open(env, "fence.sst", 0, NULL, NULL, &r) < 0)
			tap_bail("open fence.sst");

		bad = targets = 0;
#define FENCE_TRY(p_, n_) do {						\
		targets++;						\
		if (!fence_target_ok(r, keys, count, slice_make((p_),	\
		    (n_)), &ik, &dk)) {					\
			if (bad++ < 5)					\
				diag("target of %zu bytes fails", (size_t)(n_)); \
		}							\
	} while (0)
		for (size_t i = 0; i < count; i++) {
			struct fence_key *k = &keys[i];

			/* Below the common part every key matches: once. */
			for (size_t n = i == 0 || i == count - 1 ? 0 :
			    cn > 0 ? cn : 1; n <= k->n; n++)
				FENCE_TRY(k->p, n);
			memcpy(t, k->p, k->n);
			t[k->n] = 0x00;
			FENCE_TRY(t, k->n + 1);
			if (k->n > 0) {
				t[k->n - 1] = (uint8_t)(k->p[k->n - 1] + 1);
				FENCE_TRY(t, k->n);
				t[k->n - 1] = (uint8_t)(k->p[k->n - 1] - 1);
				FENCE_TRY(t, k->n);
			}
		}
		for (int i = 0; i < 2000; i++) {
			size_t n = (size_t)(tap_rand(rng) % (FENCE_KEY_MAX / 2));

			memcpy(t, common, cn);
			for (size_t j = 0; j < n; j++)
				t[cn + j] = alphabet[tap_rand(rng) % 5];
			FENCE_TRY(t, cn + n);
		}
		FENCE_TRY((const uint8_t *)"", 0);
		FENCE_TRY((const uint8_t *)"\xff\xff\xff\xff\xff\xff\xff"
		    "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 20);
		FENCE_TRY((const uint8_t *)"\x00", 1);
		FENCE_TRY((const uint8_t *)"tabletfs-common", 15);
		FENCE_TRY((const uint8_t *)"tabletfs-common.", 16);
		FENCE_TRY((const uint8_t *)"tabletfs-common.\xff", 17);
#undef FENCE_TRY
		is_int(bad, 0, "fences (%s, %zu keys): %zu targets visit "
		    "exactly their keys", round == 0 ? "common prefix" :
		    round == 1 ? "no common prefix" : "one block", count,
		    targets);
		sst_reader_unref(r);
		env_path_remove(env, "fence.sst");
	}
	buf_release(&ik);
	buf_release(&dk);
	free(keys);
}

/* The value of entry i of pins.sst: 500 bytes that name it. */
static void
pin_value(int i, char *buf)
{
	memset(buf, 'a' + i % 26, 500);
	snprintf(buf, 16, "v%06d", i);
	buf[7] = '.';
}

/*
 * iter_pin() on a table iterator: a pinned value stays valid after the
 * iterator has moved past its block (a cache of 512 bytes, and no cache:
 * blocks the iterator owns), up to about 1 MiB of blocks in one epoch,
 * after which pins are refused (1); a new epoch pins again.
 */
static void
test_iter_pins(struct env *env)
{
	enum { ENTRIES = 4000 };
	struct sst_options o;
	struct sst_builder *b;
	struct sst_reader *r;
	struct cache *cache;
	struct slice *lent = calloc(ENTRIES, sizeof(*lent));
	char key[32], val[500];

	if (lent == NULL)
		tap_bail("out of memory");
	sst_options_default(&o);
	o.block_size = 1024;
	o.compress = false;
	if (sst_builder_new(env, "pins.sst", &o, &b) < 0)
		tap_bail("builder pins.sst");
	for (int i = 0; i < ENTRIES; i++) {
		snprintf(key, sizeof(key), "key%06d", i);
		pin_value(i, val);
		if (sst_builder_add(b, slice_str(key), slice_make(val,
		    sizeof(val))) < 0)
			tap_bail("sst_builder_add");
	}
	if (sst_builder_finish(b, NULL) < 0)
		tap_bail("sst_builder_finish");
	sst_builder_free(b);
	if (cache_new(512, &cache) < 0)
		tap_bail("cache_new");
	for (int pass = 0; pass < 2; pass++) {
		struct cache *c = pass == 0 ? cache : NULL;
		const char *what = c != NULL ? "cache" : "no cache";
		struct iter *it;
		int pinned = 0, wrong = 0, refused_at = -1, rc = 0;

		if (sst_reader_open(env, "pins.sst",
		    c != NULL ? cache_new_id(c) : 0, c, NULL, &r) < 0 ||
		    sst_reader_iter_new(r, 0, &it) < 0)
			tap_bail("open pins.sst");
		iter_seek_first(it);
		for (int i = 0; i < ENTRIES && iter_valid(it); i++) {
			if ((rc = iter_pin(it, 1)) == 0) {
				lent[pinned++] = iter_value(it);
			} else if (refused_at < 0) {
				refused_at = i;
				break;
			}
			iter_next(it);
		}
		/* The iterator is blocks past most of them now. */
		for (int i = 0; i < pinned; i++) {
			pin_value(i, val);
			if (!slice_equal(lent[i], slice_make(val, sizeof(val))))
				wrong++;
		}
		ok(pinned > 1500 && refused_at == pinned,
		    "%s: %d values pinned, then a pin refused (%d)", what,
		    pinned, rc);
		/* A block holds two entries of 500 bytes and a few more. */
		ok((uint64_t)pinned * 500 <= (1u << 20) &&
		    (uint64_t)pinned * 530 >= (1u << 20) - 2048,
		    "%s: about 1 MiB of blocks pinned (%d values of 500 bytes)",
		    what, pinned);
		is_int(wrong, 0, "%s: every pinned value intact after the "
		    "iterator moved on", what);
		is_int(iter_pin(it, 2), 0, "%s: a new epoch pins again", what);
		iter_next(it);
		pin_value(refused_at + 1, val);
		ok(iter_valid(it) && iter_pin(it, 2) == 0 && slice_equal(
		    iter_value(it), slice_make(val, sizeof(val))),
		    "%s: and the iterator reads on", what);
		iter_free(it);
		sst_reader_unref(r);
	}
	cache_free(cache);
	free(lent);
}

struct reader_thread {
	pthread_t tid;
	struct sst_reader *r;
	const struct table_spec *t;
	uint64_t rng;
	uint64_t bad;
};

/* Random gets of present and absent keys, then a full scan. */
static void *
reader_thread_run(void *arg)
{
	struct reader_thread *th = arg;
	const struct table_spec *t = th->t;
	uint8_t k[KEY_LEN + 1], v[256];
	struct iter *it;
	struct buf got;
	uint64_t i, n = 0;
	int rc;

	buf_init(&got);
	for (int s = 0; s < 4000; s++) {
		i = tap_rand(&th->rng) % t->n;
		value_of(t, i, v);
		if (sst_reader_get(th->r, key_of(2 * i, k), &got) != 0 ||
		    !slice_equal(buf_slice(&got), slice_make(v, t->vlen)))
			th->bad++;
		if (sst_reader_get(th->r, key_of(2 * i + 1, k), &got) !=
		    BT_NOTFOUND)
			th->bad++;
	}
	if (sst_reader_iter_new(th->r, 0, &it) < 0) {
		th->bad++;
		goto out;
	}
	for (rc = iter_seek_first(it); rc == 0 && iter_valid(it);
	    rc = iter_next(it), n++) {
		value_of(t, n, v);
		if (!slice_equal(iter_value(it), slice_make(v, t->vlen)))
			th->bad++;
	}
	if (rc != 0 || n != t->n)
		th->bad++;
	iter_free(it);
out:
	buf_release(&got);
	return NULL;
}

/* Four threads share one reader and a cache small enough to churn: 1 MiB
 * for some 3.5 MB of blocks, its shards (64 KiB) large enough to keep
 * 8 KiB blocks (cache.h). */
static void
test_threads(struct env *env, uint64_t *rng)
{
	struct table_spec t = { 30000, 100, V_TEXT, 12 };
	struct reader_thread th[4];
	struct sst_options o;
	struct sst_reader *r;
	struct cache *cache;
	struct cache_stats cs;
	uint64_t bad = 0;

	sst_options_default(&o);
	o.block_size = 8192;
	build_table(env, "threads.sst", &o, &t, NULL);
	if (cache_new(1u << 20, &cache) < 0 ||
	    sst_reader_open(env, "threads.sst", cache_new_id(cache), cache,
	    NULL, &r) < 0)
		tap_bail("open threads.sst");
	for (int i = 0; i < 4; i++) {
		th[i].r = r;
		th[i].t = &t;
		th[i].rng = tap_rand(rng);
		th[i].bad = 0;
		if (pthread_create(&th[i].tid, NULL, reader_thread_run,
		    &th[i]) != 0)
			tap_bail("pthread_create");
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i].tid, NULL);
		bad += th[i].bad;
	}
	cache_get_stats(cache, &cs);
	is_int(bad, 0, "4 threads sharing a reader read right");
	ok(cs.evictions > 0 && cs.hits > 0,
	    "the shared cache both hit and evicted (%llu, %llu)",
	    (unsigned long long)cs.hits, (unsigned long long)cs.evictions);
	sst_reader_unref(r);
	cache_free(cache);
	env_path_remove(env, "threads.sst");
}

/*
 * Open, get every key, iterate and verify a possibly damaged table.
 * Returns the number of wrong values; *errors counts calls that failed
 * and *odd those that failed with something other than a corruption code.
 */
static uint64_t
probe_damaged(struct env *env, const char *path, const struct table_spec *t,
    uint64_t *errors, uint64_t *odd)
{
	struct sst_reader *r;
	struct iter *it;
	struct buf got;
	uint8_t k[KEY_LEN + 1], v[256];
	uint64_t wrong = 0, i;
	int rc;

#define NOTE(rc_) do {							\
	if ((rc_) < 0) {						\
		(*errors)++;						\
		if ((rc_) != BT_ECORRUPT && (rc_) != BT_ECHECKSUM &&	\
		    (rc_) != BT_EFORMAT)				\
			(*odd)++;					\
	}								\
} while (0)

	buf_init(&got);
	if ((rc = sst_reader_open(env, path, 0, NULL, NULL, &r)) < 0) {
		NOTE(rc);
		goto out;
	}
	for (i = 0; i < t->n; i++) {
		rc = sst_reader_get(r, key_of(2 * i, k), &got);
		NOTE(rc);
		value_of(t, i, v);
		if (rc == 0 && !slice_equal(buf_slice(&got),
		    slice_make(v, t->vlen)))
			wrong++;
		/* A present key may hide behind a damaged block, but an
		 * absent key must never be found. */
		if (sst_reader_get(r, key_of(2 * i + 1, k), &got) == 0)
			wrong++;
	}
	if ((rc = sst_reader_iter_new(r, 0, &it)) < 0) {
		NOTE(rc);
		goto out_reader;
	}
	i = 0;
	for (rc = iter_seek_first(it); rc == 0 && iter_valid(it);
	    rc = iter_next(it), i++) {
		value_of(t, i, v);
		if (i >= t->n || !slice_equal(iter_key(it), key_of(2 * i, k)) ||
		    !slice_equal(iter_value(it), slice_make(v, t->vlen)))
			wrong++;
	}
	NOTE(rc);
	if (rc == 0 && i != t->n)
		wrong++;
	iter_free(it);
	rc = sst_reader_verify(r);
	NOTE(rc);
out_reader:
	sst_reader_unref(r);
out:
	buf_release(&got);
	return wrong;
#undef NOTE
}

/*
 * Flip each byte of a small table in turn (with a random mask, restored
 * after): the damage must always be reported, by open or by a later call,
 * and no call may return a wrong value.
 */
static void
test_flip_every_byte(struct env *env, uint64_t *rng, bool quick)
{
	struct sst_options o;
	struct sst_info info;
	struct table_spec t = { 60, 64, V_MIXED, 8 };
	uint64_t wrong = 0, undetected = 0, odd = 0, tried = 0;

	sst_options_default(&o);
	o.block_size = 512;
	/* Mixed values so that some blocks compress and some do not. */
	if (build_table(env, "flip.sst", &o, &t, &info) < 0)
		tap_bail("build flip.sst");
	diag("flip table: %llu bytes, %llu blocks",
	    (unsigned long long)info.file_size,
	    (unsigned long long)info.block_count);
	ok(info.block_count >= 4, "the flip table has several blocks");
	for (uint64_t off = 0; off < info.file_size; off++) {
		uint8_t mask = (uint8_t)(1 + tap_rand(rng) % 255);
		uint64_t errors = 0;

		if (quick && off % 17 != 0 && off + SST_FOOTER_SIZE <
		    info.file_size)
			continue;
		tried++;
		env_fault_flip_byte(env, "flip.sst", off, mask);
		wrong += probe_damaged(env, "flip.sst", &t, &errors, &odd);
		env_fault_flip_byte(env, "flip.sst", off, mask);
		if (errors == 0) {
			if (undetected++ < 5)
				diag("flip at %llu (mask %#x) went unnoticed",
				    (unsigned long long)off, mask);
		}
	}
	is_int(wrong, 0, "%llu byte flips: no wrong value ever returned",
	    (unsigned long long)tried);
	is_int(undetected, 0, "every byte flip is reported as an error");
	is_int(odd, 0, "damage is reported as BT_ECORRUPT, BT_ECHECKSUM or "
	    "BT_EFORMAT");
	{
		uint64_t errors = 0;

		is_int(probe_damaged(env, "flip.sst", &t, &errors, &odd), 0,
		    "restored table reads right");
		is_int(errors, 0, "restored table reads without error");
	}
}

/* Truncated files and footers with a bad magic or version. */
static void
test_bad_files(struct env *env)
{
	struct table_spec t = { 500, 64, V_RANDOM, 9 };
	struct sst_options o;
	struct sst_info info;
	struct sst_reader *r;
	struct env_file *f;
	uint8_t *img;
	size_t n, cuts[] = { 0, 1, 8, 63, 64, 65, 1000, 0, 0, 0 };
	uint64_t bad = 0;
	int rc;

	sst_options_default(&o);
	o.block_size = 1024;
	build_table(env, "bad.sst", &o, &t, &info);
	n = info.file_size;
	img = malloc(n);
	env_file_open(env, "bad.sst", ENV_READ, &f);
	env_file_read_exact(f, 0, img, n);
	env_file_close(f);

	cuts[7] = n / 2;
	cuts[8] = n - 1;
	cuts[9] = n - SST_FOOTER_SIZE;
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		write_file(env, "cut.sst", img, cuts[i]);
		rc = sst_reader_open(env, "cut.sst", 0, NULL, NULL, &r);
		if (rc != BT_EFORMAT && rc != BT_ECORRUPT &&
		    rc != BT_ECHECKSUM) {
			bad++;
			diag("truncated to %zu: %s", cuts[i], bt_strerror(rc));
			if (rc == 0)
				sst_reader_unref(r);
		}
	}
	is_int(bad, 0, "truncated tables fail to open");

	/* Appended garbage moves the footer: not an SSTable any more. */
	{
		uint8_t *more = malloc(n + 10);

		memcpy(more, img, n);
		memset(more + n, 0, 10);
		write_file(env, "long.sst", more, n + 10);
		is_int(sst_reader_open(env, "long.sst", 0, NULL, NULL, &r),
		    BT_EFORMAT, "bytes after the footer: BT_EFORMAT");
		free(more);
	}

	img[n - 1] ^= 0x40;
	write_file(env, "magic.sst", img, n);
	img[n - 1] ^= 0x40;
	is_int(sst_reader_open(env, "magic.sst", 0, NULL, NULL, &r),
	    BT_EFORMAT, "bad magic: BT_EFORMAT");
	ok(strstr(bt_error_detail(), "magic.sst") != NULL,
	    "the detail names the path: %s", bt_error_detail());

	/* Version 2 with a footer CRC that matches it. */
	put_fixed32(img + n - 16, SST_FORMAT_VERSION + 1);
	put_fixed32(img + n - 12, crc32c_mask(crc32c_value(img + n - 64, 52)));
	write_file(env, "version.sst", img, n);
	is_int(sst_reader_open(env, "version.sst", 0, NULL, NULL, &r),
	    BT_EFORMAT, "unknown version: BT_EFORMAT");
	ok(strstr(bt_error_detail(), "version") != NULL,
	    "the detail names the version: %s", bt_error_detail());

	/* A consistent footer (CRC fixed) whose index handle lies. */
	put_fixed32(img + n - 16, SST_FORMAT_VERSION);
	put_fixed64(img + n - 64, get_fixed64(img + n - 64) - 1);
	put_fixed32(img + n - 12, crc32c_mask(crc32c_value(img + n - 64, 52)));
	write_file(env, "handle.sst", img, n);
	is_int(sst_reader_open(env, "handle.sst", 0, NULL, NULL, &r),
	    BT_ECORRUPT, "index handle off by one: BT_ECORRUPT");
	ok(strstr(bt_error_detail(), "handle.sst") != NULL &&
	    strstr(bt_error_detail(), "footer at") != NULL,
	    "the detail names path and offset: %s", bt_error_detail());
	free(img);
}

static void
test_builder_errors(struct env *env)
{
	struct sst_options o;
	struct sst_builder *b;
	struct sst_reader *r;
	struct sst_info info;
	struct iter *it;
	struct buf got;
	int rc, n;

	buf_init(&got);
	sst_options_default(&o);
	is_int(sst_builder_new(env, "order.sst", &o, &b), 0, "builder");
	is_int(sst_builder_add(b, slice_str("b"), slice_str("1")), 0, "add b");
	is_int(sst_builder_add(b, slice_str("b"), slice_str("2")), -EINVAL,
	    "equal key: -EINVAL");
	is_int(sst_builder_add(b, slice_str("a"), slice_str("3")), -EINVAL,
	    "smaller key: -EINVAL");
	is_int(sst_builder_add(b, slice_str("c"), slice_str("4")), 0,
	    "the builder still takes a larger key");
	is_int(sst_builder_finish(b, &info), 0, "finish after refusals");
	is_int(info.entry_count, 2, "refused keys were not added");
	sst_builder_free(b);
	sst_reader_open(env, "order.sst", 0, NULL, NULL, &r);
	sst_reader_iter_new(r, 0, &it);
	sst_reader_unref(r);	/* the iterator keeps the reader alive */
	n = 0;
	for (rc = iter_seek_first(it); rc == 0 && iter_valid(it);
	    rc = iter_next(it))
		n += slice_equal(iter_key(it), slice_str(n == 0 ? "b" : "c"));
	is_int(n, 2, "table holds b and c; the iterator outlives unref");
	iter_free(it);

	is_int(sst_builder_new(env, "order.sst", &o, &b), -EEXIST,
	    "builder on an existing path: -EEXIST");

	/* A failed write fails the builder for good. */
	is_int(sst_builder_new(env, "ioerr.sst", &o, &b), 0, "builder 2");
	env_fault_fail_after(env, ENV_FAULT_APPEND, 1, -EIO, false);
	rc = 0;
	for (int i = 0; i < 100000 && rc == 0; i++) {
		char key[32];

		snprintf(key, sizeof(key), "%08d", i);
		rc = sst_builder_add(b, slice_str(key), slice_str("value"));
	}
	is_int(rc, -EIO, "a failed append surfaces as -EIO");
	is_int(sst_builder_add(b, slice_str("zzzz"), slice_str("")),
	    BT_ECLOSED, "then the builder refuses more entries");
	is_int(sst_builder_finish(b, NULL), BT_ECLOSED,
	    "and refuses to finish");
	sst_builder_free(b);

	/* A small table is written by finish: its failure shows there. */
	is_int(sst_builder_new(env, "ioerr2.sst", &o, &b), 0, "builder 4");
	is_int(sst_builder_add(b, slice_str("k"), slice_str("v")), 0,
	    "add to a table that fits in the write buffer");
	env_fault_fail_after(env, ENV_FAULT_APPEND, 1, -EIO, false);
	is_int(sst_builder_finish(b, NULL), -EIO,
	    "a failed append at finish fails finish");
	sst_builder_free(b);
	env_fault_fail_after(env, ENV_FAULT_APPEND, 0, 0, false);

	is_int(sst_builder_new(env, "syncerr.sst", &o, &b), 0, "builder 3");
	sst_builder_add(b, slice_str("k"), slice_str("v"));
	env_fault_fail_after(env, ENV_FAULT_SYNC, 1, -EIO, false);
	is_int(sst_builder_finish(b, NULL), -EIO, "a failed sync fails finish");
	sst_builder_free(b);
	env_fault_fail_after(env, ENV_FAULT_SYNC, 0, 0, false);
	buf_release(&got);
}

/*
 * The builder gathers blocks into large appends: a table of hundreds of
 * 4 KiB blocks takes one append per 64 KiB or so, not two per block, and
 * reads back whole.
 */
static void
test_builder_appends(struct env *env, uint64_t *rng)
{
	struct table_spec t = { .n = 20000, .vlen = 100, .kind = V_MIXED,
	    .salt = 7 };
	struct env_fault_stats before, after;
	struct sst_options o;
	struct sst_info info;
	uint64_t appends;

	sst_options_default(&o);
	o.block_size = 4096;
	env_fault_get_stats(env, &before);
	is_int(build_table(env, "appends.sst", &o, &t, &info), 0,
	    "build a table of 4 KiB blocks");
	env_fault_get_stats(env, &after);
	appends = after.appends - before.appends;
	ok(info.block_count >= 300, "it has %llu blocks",
	    (unsigned long long)info.block_count);
	ok(appends <= info.file_size / (60u << 10) + 2,
	    "written in %llu appends for %llu bytes (batched, not per block)",
	    (unsigned long long)appends, (unsigned long long)info.file_size);
	check_table(env, "appends.sst", &t, NULL, false, rng,
	    "batched appends");
}

/*
 * A table is handed to the disk while it is written: a writeback hint for
 * each MiB appended (so the sync at the end waits for the last one only),
 * none for a table under a MiB, and the table reads the same.
 */
static void
test_builder_writeback(struct env *env, uint64_t *rng)
{
	struct table_spec big = { .n = 3000, .vlen = 1000, .kind = V_RANDOM,
	    .salt = 8 };
	struct table_spec small = { .n = 500, .vlen = 1000,
	    .kind = V_RANDOM, .salt = 9 };
	struct env_fault_stats before, after;
	struct sst_options o;
	struct sst_info info;
	uint64_t hints, mib;

	sst_options_default(&o);
	o.block_size = 4096;
	env_fault_get_stats(env, &before);
	is_int(build_table(env, "writeback.sst", &o, &big, &info), 0,
	    "build a table of 3000 1000-byte values");
	env_fault_get_stats(env, &after);
	hints = after.writebacks - before.writebacks;
	mib = info.file_size >> 20;
	ok(mib >= 2 && hints >= mib - 1 && hints <= mib,
	    "%llu writebacks started for %llu bytes (one a MiB)",
	    (unsigned long long)hints, (unsigned long long)info.file_size);
	ok(after.file_syncs == before.file_syncs + 1,
	    "and still one sync at the end");
	check_table(env, "writeback.sst", &big, NULL, false, rng,
	    "written back");
	env_fault_get_stats(env, &before);
	is_int(build_table(env, "small.sst", &o, &small, &info), 0,
	    "build a table under a MiB");
	env_fault_get_stats(env, &after);
	ok(info.file_size < (1u << 20) &&
	    after.writebacks == before.writebacks,
	    "no writeback for %llu bytes", (unsigned long long)info.file_size);
}

/* Every allocation failure in open, get and iteration is a clean -ENOMEM. */
static void
test_enomem(struct env *env)
{
	struct table_spec t = { 300, 40, V_TEXT, 10 };
	struct sst_options o;
	struct sst_reader *r;
	struct cache *cache;
	struct iter *it;
	struct buf got;
	uint8_t k[KEY_LEN + 1];
	long bad = 0, n;
	int rc;

	buf_init(&got);
	sst_options_default(&o);
	o.block_size = 1024;
	build_table(env, "nomem.sst", &o, &t, NULL);
	cache_new(1 << 20, &cache);
	for (n = 1; n < 200; n++) {
		bt_alloc_fail_after(n);
		rc = sst_reader_open(env, "nomem.sst", (uint64_t)n, cache, NULL,
		    &r);
		if (rc == 0) {
			rc = sst_reader_get(r, key_of(2 * 150, k), &got);
			if (rc == 0 || rc == -ENOMEM)
				rc = sst_reader_iter_new(r, 0, &it);
			if (rc == 0) {
				for (rc = iter_seek_first(it);
				    rc == 0 && iter_valid(it);
				    rc = iter_next(it))
					;
				iter_free(it);
			}
			sst_reader_unref(r);
		}
		bt_alloc_fail_after(0);
		if (rc != 0 && rc != -ENOMEM)
			bad++;
	}
	is_int(bad, 0, "allocation failures yield -ENOMEM (checked by "
	    "valgrind for leaks)");
	cache_free(cache);
	buf_release(&got);
}

/* One table on the real filesystem, in a temporary directory. */
static void
test_posix(uint64_t *rng)
{
	struct env *env;
	struct sst_options o;
	struct sst_info info;
	struct table_spec t = { 20000, 100, V_TEXT, 11 };
	char dir[] = "/tmp/test_sstable.XXXXXX", path[64];
	struct cache *cache;

	if (mkdtemp(dir) == NULL || env_posix_new(&env) < 0 ||
	    cache_new(8u << 20, &cache) < 0)
		tap_bail("mkdtemp, env_posix_new or cache_new");
	snprintf(path, sizeof(path), "%s/t.sst", dir);
	sst_options_default(&o);
	is_int(build_table(env, path, &o, &t, &info), 0, "posix: build");
	check_table(env, path, &t, cache, true, rng, "posix");
	env_path_remove(env, path);
	rmdir(dir);
	cache_free(cache);
	env_free(env);
}

/* Print the seconds since the previous lap, to keep the suite fast. */
static void
lap(const char *what)
{
	static struct timespec prev;
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (prev.tv_sec != 0)
		diag("%s: %.2f s", what, (double)(now.tv_sec - prev.tv_sec) +
		    (double)(now.tv_nsec - prev.tv_nsec) / 1e9);
	prev = now;
}

int
main(void)
{
	uint64_t seed = tap_seed(), rng = seed, big = 1000000;
	const char *s;
	bool quick;
	struct env *env;

	if ((s = getenv("SST_TEST_ENTRIES")) != NULL && *s != '\0')
		big = strtoull(s, NULL, 0);
	quick = (s = getenv("SST_TEST_QUICK")) != NULL && *s == '1';
	if (env_fault_new(&env) < 0)
		tap_bail("env_fault_new");
	lap("start");

	test_builder_errors(env);
	lap("builder errors");
	test_builder_appends(env, &rng);
	lap("builder appends");
	test_builder_writeback(env, &rng);
	lap("builder writeback");
	test_limits(env);
	lap("limits");
	test_compression(env, &rng);
	lap("compression");
	test_bloom(env, &rng);
	lap("bloom");
	test_key_range(env);
	lap("key range");
	test_cache(env);
	lap("cache");
	test_visit_prefix(env);
	lap("visit prefix");
	test_visit_prefix_fences(env, &rng);
	lap("visit prefix fences");
	test_iter_pins(env);
	lap("iterator pins");
	test_threads(env, &rng);
	lap("threads");
	test_bad_files(env);
	lap("bad files");
	test_flip_every_byte(env, &rng, quick);
	lap("flip");
	test_enomem(env);
	lap("enomem");
	test_posix(&rng);
	lap("posix");
	test_sizes(env, &rng, big);
	lap("sizes");
	env_free(env);
	return tap_done();
}
