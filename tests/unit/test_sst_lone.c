/*
 * test_sst_lone.c - the value lengths of one-entry blocks in a version 4
 * table's index (format.h): a keys-only prefix walk, and a keys-only
 * iterator's scans and seeks, take a large value's key and length from
 * the index without reading its block, and every other read still gets
 * the value whole; verify finds an index whose
 * length lies; a version 3 table (no lengths) is still read, and a
 * version 3 footer over an index with lengths fails the open.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sstable/format.h"
#include "sstable/sstable.h"
#include "tap.h"
#include "util/coding.h"
#include "util/crc32c.h"
#include "util/env.h"
#include "util/error.h"
#include "sst_util.h"

#define BIG	300000	/* a value far larger than the 4 KiB blocks */

/* Every key describes one column, so the table gets bounds. */
static bool
one_column(struct slice key, struct slice *column, uint64_t *time)
{
	(void)key;
	*column = slice_make("c", 1);
	*time = 0;
	return true;
}

/* The value of key, in the buffer big: BIG bytes for "big/1" to
 * "big/3", else the key itself. */
static struct slice
value_of(void *big_buf, const char *key)
{
	uint8_t *big = big_buf;

	if (strncmp(key, "big/", 4) == 0 && key[4] >= '1' && key[4] <= '3') {
		for (size_t i = 0; i < BIG; i++)
			big[i] = (uint8_t)(i * 7 + (size_t)key[4]);
		return slice_make(big, BIG);
	}
	return slice_str(key);
}

static const char *const keys[] = {
	"a/1", "a/2", "a/3", "big/1", "big/2", "big/3", "big/4", "c/1", NULL
};

/*
 * Build path from keys with 4 KiB blocks, uncompressed (so that the test
 * can edit the index in place), bounds and the row filter prefix: a
 * version 4 table.  The "a" row fills the first block; "big/1", "big/2"
 * and "big/3" a block each, the first although the block before has
 * room; "big/4" and "c/1" share the last one.
 */
static void
build_lone_table(struct env *env, const char *path, uint8_t *big,
    size_t block_size, struct sst_info *info)
{
	struct sst_options o;

	sst_options_default(&o);
	o.block_size = block_size;
	o.compress = false;
	o.filter_prefix = row_prefix;
	o.key_column = one_column;
	build_keys_table(env, path, &o, keys, value_of, big, info);
}

static uint8_t *
read_image(struct env *env, const char *path, uint64_t *size)
{
	struct env_file *f;
	uint8_t *img;

	if (env_file_open(env, path, ENV_READ, &f) < 0 ||
	    env_file_size(f, size) < 0 || (img = malloc(*size)) == NULL ||
	    env_file_read_exact(f, 0, img, *size) < 0)
		tap_bail("cannot read a table");
	env_file_close(f);
	return img;
}

/* Write img as dst with the footer's version set to version (its CRC
 * fixed). */
static void
write_with_version(struct env *env, const char *dst, uint8_t *img,
    uint64_t size, uint32_t version)
{
	uint8_t *footer = img + size - SST_FOOTER_SIZE;

	put_fixed32(footer + 48, version);
	put_fixed32(footer + 52, crc32c_mask(crc32c_value(footer, 52)));
	if (write_file(env, dst, img, (size_t)size) < 0)
		tap_bail("cannot write a table");
}

/*
 * Write src as dst with the first index entry's value length BIG changed
 * to BIG + 1 (a varint of the same width), the index block's CRC fixed:
 * a well-formed index whose length lies.
 */
static void
write_with_lying_length(struct env *env, const char *src, const char *dst)
{
	uint8_t want[VARINT64_MAX_BYTES], lie[VARINT64_MAX_BYTES];
	uint64_t size, off, n;
	size_t wn, ln;
	uint8_t *img, *at = NULL;

	img = read_image(env, src, &size);
	off = get_fixed64(img + size - SST_FOOTER_SIZE);
	n = get_fixed64(img + size - SST_FOOTER_SIZE + 8);
	wn = (size_t)(encode_varint64(want, BIG) - want);
	ln = (size_t)(encode_varint64(lie, BIG + 1) - lie);
	if (wn != ln || img[off + n] != SST_BLOCK_RAW)
		tap_bail("unexpected index block");
	for (uint64_t i = off; i + wn <= off + n && at == NULL; i++)
		if (memcmp(img + i, want, wn) == 0)
			at = img + i;
	if (at == NULL)
		tap_bail("no value length in the index");
	memcpy(at, lie, ln);
	put_fixed32(img + off + n + 1, crc32c_mask(crc32c_value(img + off,
	    (size_t)n + 1)));
	if (write_file(env, dst, img, (size_t)size) < 0)
		tap_bail("cannot write a table");
	free(img);
}

/* A want_value for walks of keys and sizes alone. */
static bool
no_value(void *arg, struct slice key)
{
	(void)arg;
	(void)key;
	return false;
}

/* A want_value that wants the value of "big/2" alone. */
static bool
only_big_2(void *arg, struct slice key)
{
	(void)arg;
	return slice_equal(key, slice_str("big/2"));
}

/* The blocks that hold the values of the last walk. */
static struct sst_pins pins;

/* Walk prefix in r into l, whose values stay valid until the next walk;
 * the block reads it cost. */
static uint64_t
walk_want(struct sst_reader *r, const char *prefix,
    bool (*want_value)(void *arg, struct slice key), struct prefix_log *l)
{
	struct sst_reader_stats st0, st1;
	struct buf ik, dk;

	buf_init(&ik);
	buf_init(&dk);
	sst_pins_release(&pins);
	memset(l, 0, sizeof(*l));
	sst_reader_get_stats(r, &st0);
	if (sst_reader_visit_prefix(r, slice_str(prefix), want_value, &ik,
	    &dk, &pins, prefix_collect, l) != 0)
		tap_bail("sst_reader_visit_prefix");
	sst_reader_get_stats(r, &st1);
	buf_release(&ik);
	buf_release(&dk);
	return st1.block_reads - st0.block_reads;
}

/* The same for keys and sizes alone, or for every value. */
static uint64_t
walk(struct sst_reader *r, const char *prefix, bool keys_only,
    struct prefix_log *l)
{
	return walk_want(r, prefix, keys_only ? no_value : NULL, l);
}

/* Whether entry i of l is key with its value whole. */
static bool
log_has(const struct prefix_log *l, size_t i, const char *key, uint8_t *big)
{
	struct slice want;

	if (i >= l->n || !slice_equal(l->keys[i], slice_str(key)))
		return false;
	want = value_of(big, key);
	return l->values[i].p != NULL && slice_equal(l->values[i], want);
}

static void
test_keys_only_walk(struct env *env, uint8_t *big)
{
	struct prefix_log *l = calloc(1, sizeof(*l));
	struct sst_info info;
	struct sst_reader *r;
	struct buf v;
	uint64_t reads;
	uint8_t *img;
	uint64_t size;

	if (l == NULL)
		tap_bail("out of memory");
	build_lone_table(env, "lone.sst", big, 4096, &info);
	is_int(info.block_count, 5, "five data blocks: a large value starts "
	    "a block of its own");
	img = read_image(env, "lone.sst", &size);
	is_int(get_fixed32(img + size - SST_FOOTER_SIZE + 48),
	    SST_FORMAT_VERSION, "bounds and a filter prefix: version 5");
	if (sst_reader_open(env, "lone.sst", 0, NULL, row_prefix, &r) < 0)
		tap_bail("open lone.sst");

	reads = walk(r, "big/", true, l);
	ok(l->n == 4 && slice_equal(l->keys[1], slice_str("big/2")) &&
	    slice_equal(l->keys[2], slice_str("big/3")),
	    "keys only: the row's four keys, in order");
	ok(l->values[0].p == NULL && l->values[0].n == BIG &&
	    l->values[1].p == NULL && l->values[1].n == BIG &&
	    l->values[2].p == NULL && l->values[2].n == BIG,
	    "keys only: a block's lone value comes as its length alone");
	ok(log_has(l, 3, "big/4", big),
	    "keys only: values that share a block come whole");
	is_int(reads, 1, "keys only: the three lone blocks are not read");

	reads = walk(r, "big/", false, l);
	ok(l->n == 4 && log_has(l, 0, "big/1", big) &&
	    log_has(l, 1, "big/2", big) && log_has(l, 2, "big/3", big) &&
	    log_has(l, 3, "big/4", big), "with values: every value whole");
	is_int(reads, 4, "with values: all four blocks read");

	reads = walk(r, "big/3", true, l);
	ok(l->n == 1 && l->values[0].n == BIG && l->values[0].p == NULL &&
	    reads == 1, "keys only, a prefix of one lone key: its block is "
	    "not read, the next (its row goes on there) is");
	reads = walk_want(r, "big/", only_big_2, l);
	ok(l->n == 4 && l->values[0].p == NULL && l->values[0].n == BIG &&
	    log_has(l, 1, "big/2", big) && l->values[2].p == NULL &&
	    l->values[2].n == BIG && log_has(l, 3, "big/4", big) && reads == 2,
	    "want_value: only the wanted lone block is read (and the shared "
	    "one), %llu reads", (unsigned long long)reads);
	reads = walk(r, "big/1x", false, l);
	ok(l->n == 0 && reads == 0, "with values: a lone key past the prefix "
	    "ends the walk without reading its block");
	reads = walk(r, "big/1x", true, l);
	ok(l->n == 0 && reads == 0, "keys only: a prefix that sorts before a "
	    "lone key finds nothing, reading nothing");
	reads = walk(r, "big/2x", true, l);
	ok(l->n == 0 && reads == 0, "keys only: so does one between two");
	walk(r, "a/", true, l);
	ok(l->n == 3 && log_has(l, 2, "a/3", big),
	    "keys only: a row of small values reads as before");

	buf_init(&v);
	ok(sst_reader_get(r, slice_str("big/2"), &v) == 0 &&
	    slice_equal(buf_slice(&v), value_of(big, "big/2")),
	    "get of a lone value: whole");
	buf_release(&v);
	is_int(sst_reader_verify(r), 0, "verify is clean");
	sst_pins_release(&pins);
	sst_reader_unref(r);

	write_with_version(env, "lone-v3.sst", img, size,
	    SST_FORMAT_VERSION_3);
	is_int(sst_reader_open(env, "lone-v3.sst", 0, NULL, row_prefix, &r),
	    BT_ECORRUPT, "value lengths under a version 3 footer: "
	    "BT_ECORRUPT");
	free(img);

	write_with_lying_length(env, "lone.sst", "lone-lie.sst");
	if (sst_reader_open(env, "lone-lie.sst", 0, NULL, row_prefix, &r) < 0)
		tap_bail("open lone-lie.sst");
	is_int(sst_reader_verify(r), BT_ECORRUPT,
	    "an index length its block does not have: verify finds it");
	ok(strstr(bt_error_detail(), "value length") != NULL,
	    "the detail says so: %s", bt_error_detail());
	sst_reader_unref(r);
	free(l);
}

/* Whether it is on key with its value whole (NULL want: with BIG bytes
 * and no contents, a lone value). */
static bool
iter_on(struct iter *it, const char *key, uint8_t *big, bool lone)
{
	struct slice v;

	if (!iter_valid(it) || !slice_equal(iter_key(it), slice_str(key)))
		return false;
	v = iter_value(it);
	if (lone)
		return v.p == NULL && v.n == BIG;
	return v.p != NULL && slice_equal(v, value_of(big, key));
}

/*
 * SST_ITER_KEYS_ONLY: a scan, seeks into and between lone blocks, and the
 * block reads that spares; a plain iterator still gets every value.
 */
static void
test_keys_only_iter(struct env *env, uint8_t *big)
{
	struct sst_reader_stats st0, st1;
	struct sst_reader *r;
	struct iter *it;
	size_t n = 0, lone = 0, whole = 0;
	bool in_order = true;
	int rc;

	if (sst_reader_open(env, "lone.sst", 0, NULL, row_prefix, &r) < 0)
		tap_bail("open lone.sst");
	if (sst_reader_iter_new(r, SST_ITER_KEYS_ONLY, &it) < 0)
		tap_bail("sst_reader_iter_new");
	sst_reader_get_stats(r, &st0);
	for (rc = iter_seek_first(it); rc == 0 && iter_valid(it);
	    rc = iter_next(it), n++) {
		const char *key = keys[n];

		if (key == NULL) {
			in_order = false;
			break;
		}
		if (iter_on(it, key, big, true))
			lone++;
		else if (iter_on(it, key, big, false))
			whole++;
		else
			in_order = false;
	}
	sst_reader_get_stats(r, &st1);
	ok(rc == 0 && in_order && n == 8, "keys only: a scan sees every key "
	    "in order");
	ok(lone == 3 && whole == 5, "keys only: three lone values as "
	    "lengths, five whole (%zu, %zu)", lone, whole);
	is_int(st1.block_reads - st0.block_reads, 2,
	    "keys only: a scan reads the two blocks that are not lone");

	ok(iter_seek(it, slice_str("big/2")) == 0 &&
	    iter_on(it, "big/2", big, true), "keys only: seek onto a lone "
	    "key");
	ok(iter_next(it) == 0 && iter_on(it, "big/3", big, true) &&
	    iter_next(it) == 0 && iter_on(it, "big/4", big, false),
	    "keys only: next from a lone block to a lone one, then to a "
	    "shared one");
	ok(iter_seek(it, slice_str("big/1x")) == 0 &&
	    iter_on(it, "big/2", big, true), "keys only: seek between two "
	    "lone keys lands on the next");
	ok(iter_seek(it, slice_str("a/4")) == 0 &&
	    iter_on(it, "big/1", big, true), "keys only: seek past a block's "
	    "end lands on the lone key after it");
	ok(iter_seek(it, slice_str("d")) == 0 && !iter_valid(it),
	    "keys only: seek past the last key: not valid");
	iter_free(it);

	if (sst_reader_iter_new(r, 0, &it) < 0)
		tap_bail("sst_reader_iter_new");
	ok(iter_seek(it, slice_str("big/1")) == 0 &&
	    iter_on(it, "big/1", big, false) && iter_next(it) == 0 &&
	    iter_on(it, "big/2", big, false), "without the flag: lone "
	    "values come whole");
	iter_free(it);
	sst_reader_unref(r);
}

/* A version 3 table (one whose blocks all hold several entries is a
 * version 4 table without lengths, relabelled) reads as before. */
static void
test_version_3(struct env *env, uint8_t *big)
{
	struct prefix_log *l = calloc(1, sizeof(*l));
	struct sst_info info;
	struct sst_reader *r;
	struct iter *it;
	uint64_t size;
	uint8_t *img;

	if (l == NULL)
		tap_bail("out of memory");
	build_lone_table(env, "one.sst", big, 4 << 20, &info);
	is_int(info.block_count, 1, "one block holds the whole table");
	img = read_image(env, "one.sst", &size);
	write_with_version(env, "v3.sst", img, size, SST_FORMAT_VERSION_3);
	free(img);
	if (sst_reader_open(env, "v3.sst", 0, NULL, row_prefix, &r) < 0)
		tap_bail("open v3.sst");
	walk(r, "big/", true, l);
	ok(l->n == 4 && log_has(l, 1, "big/2", big) &&
	    log_has(l, 3, "big/4", big),
	    "version 3: a keys-only walk gets values whole");
	if (sst_reader_iter_new(r, SST_ITER_KEYS_ONLY, &it) < 0)
		tap_bail("sst_reader_iter_new");
	ok(iter_seek(it, slice_str("big/2")) == 0 &&
	    iter_on(it, "big/2", big, false),
	    "version 3: a keys-only iterator gets values whole");
	iter_free(it);
	is_int(sst_reader_verify(r), 0, "version 3: verify is clean");
	sst_pins_release(&pins);
	sst_reader_unref(r);
	free(l);
}

int
main(void)
{
	struct env *env;
	uint8_t *big = malloc(BIG);

	if (big == NULL || env_fault_new(&env) < 0)
		tap_bail("set-up");
	sst_pins_init(&pins);
	test_keys_only_walk(env, big);
	test_keys_only_iter(env, big);
	test_version_3(env, big);
	env_free(env);
	free(big);
	return tap_done();
}
