/*
 * test_sst_bounds.c - the bounds block of an SSTable (format versions 2
 * to 4): the columns and largest time (key_column) and the sequence
 * range (key_sequence) written and read back, and nothing claimed when a
 * key is not described or there are too many columns; version 1 tables
 * (no key_column) still written and read; the splits map (key_column with
 * filter_prefix) sparing a point read the next block; and a bounds block
 * damaged, or edited with its CRC fixed (a range upside down, an unknown
 * flag, a splits bit wrong), failing the open or verify.
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

/* A key_column for the bounds tests: the column is the key's first byte,
 * the time its last digit; a key starting with 'x' is not described. */
static bool
first_byte_column(struct slice key, struct slice *column, uint64_t *time)
{
	if (key.n < 2 || key.p[0] == 'x')
		return false;
	*column = slice_make(key.p, 1);
	*time = (uint64_t)(key.p[key.n - 1] - '0');
	return true;
}

/* A key_sequence for the bounds tests: ten times the first letter's
 * place in the alphabet plus the last digit ("a1" 1, "b3" 13, "c2" 22); a
 * key starting with 'y' has none. */
static bool
letter_digit_sequence(struct slice key, uint64_t *seq)
{
	if (key.n < 2 || key.p[0] == 'y' || key.p[0] < 'a')
		return false;
	*seq = (uint64_t)(key.p[0] - 'a') * 10 +
	    (uint64_t)(key.p[key.n - 1] - '0');
	return true;
}

static struct slice
value_v(void *arg, const char *key)
{
	(void)arg;
	(void)key;
	return slice_make("v", 1);
}

/* Build path from the NULL-terminated keys (each with value "v") with
 * key_column and key_sequence set as given; info filled. */
static void
build_bounds_table_seq(struct env *env, const char *path,
    bool (*key_column)(struct slice, struct slice *, uint64_t *),
    bool (*key_sequence)(struct slice, uint64_t *),
    const char *const *keys, struct sst_info *info)
{
	struct sst_options o;

	sst_options_default(&o);
	o.key_column = key_column;
	o.key_sequence = key_sequence;
	build_keys_table(env, path, &o, keys, value_v, NULL, info);
}

/* The same without sequences. */
static void
build_bounds_table(struct env *env, const char *path,
    bool (*key_column)(struct slice, struct slice *, uint64_t *),
    const char *const *keys, struct sst_info *info)
{
	build_bounds_table_seq(env, path, key_column, NULL, keys, info);
}

static uint32_t
file_version(struct env *env, const char *path, uint64_t size)
{
	struct env_file *f;
	uint8_t v[4];

	if (env_file_open(env, path, ENV_READ, &f) < 0 ||
	    env_file_read_exact(f, size - 16, v, 4) < 0)
		tap_bail("cannot read a footer");
	env_file_close(f);
	return get_fixed32(v);
}

/*
 * The bounds block (format version 2): written only with key_column, its
 * columns and largest time read back; nothing known when a key is not
 * described or there are too many columns; version 1 tables (no
 * key_column) still written and read; a damaged bounds block fails the
 * open.
 */
static void
test_bounds(struct env *env)
{
	static const char *const plain[] = { "a1", "a7", "b3", "c2", NULL };
	static const char *const lost[] = { "a1", "b3", "x9", NULL };
	static const char *many[SST_BOUNDS_MAX_COLUMNS + 2];
	static char many_keys[SST_BOUNDS_MAX_COLUMNS + 1][3];
	struct sst_info info;
	struct sst_reader *r;
	struct buf v;
	size_t count = 0;
	uint64_t max_time = 0;
	bool seen[3] = { false, false, false };
	int rc;

	buf_init(&v);
	build_bounds_table(env, "b1.sst", NULL, plain, &info);
	is_int(file_version(env, "b1.sst", info.file_size),
	    SST_FORMAT_VERSION_1, "without key_column: a version 1 table");
	if (sst_reader_open(env, "b1.sst", 0, NULL, NULL, &r) < 0)
		tap_bail("open b1.sst");
	ok(!sst_reader_bounds(r, &count, &max_time),
	    "a version 1 table has no bounds");
	ok(sst_reader_get(r, slice_make("b3", 2), &v) == 0 && v.n == 1,
	    "a version 1 table reads");
	sst_reader_unref(r);

	build_bounds_table(env, "b2.sst", first_byte_column, plain, &info);
	is_int(file_version(env, "b2.sst", info.file_size),
	    SST_FORMAT_VERSION_2, "with key_column: a version 2 table");
	if (sst_reader_open(env, "b2.sst", 0, NULL, NULL, &r) < 0)
		tap_bail("open b2.sst");
	rc = sst_reader_bounds(r, &count, &max_time);
	ok(rc && count == 3 && max_time == 7, "bounds: 3 columns, largest "
	    "time 7 (got %zu, %llu)", count, (unsigned long long)max_time);
	for (size_t i = 0; i < count && i < 3; i++) {
		struct slice c = sst_reader_bounds_column(r, i);

		if (c.n == 1 && c.p[0] >= 'a' && c.p[0] <= 'c')
			seen[c.p[0] - 'a'] = true;
	}
	ok(seen[0] && seen[1] && seen[2], "the columns are a, b and c");
	ok(sst_reader_get(r, slice_make("c2", 2), &v) == 0 && v.n == 1,
	    "a version 2 table reads");
	sst_reader_unref(r);

	build_bounds_table(env, "b3.sst", first_byte_column, lost, &info);
	if (sst_reader_open(env, "b3.sst", 0, NULL, NULL, &r) < 0)
		tap_bail("open b3.sst");
	ok(!sst_reader_bounds(r, &count, &max_time),
	    "a key key_column does not describe: no bounds");
	ok(sst_reader_get(r, slice_make("x9", 2), &v) == 0,
	    "and the table reads");
	sst_reader_unref(r);

	for (int i = 0; i <= SST_BOUNDS_MAX_COLUMNS; i++) {
		snprintf(many_keys[i], sizeof(many_keys[i]), "%c1", 'A' + i);
		many[i] = many_keys[i];
	}
	many[SST_BOUNDS_MAX_COLUMNS + 1] = NULL;
	build_bounds_table(env, "b4.sst", first_byte_column, many, &info);
	if (sst_reader_open(env, "b4.sst", 0, NULL, NULL, &r) < 0)
		tap_bail("open b4.sst");
	ok(!sst_reader_bounds(r, &count, &max_time),
	    "%d columns, one more than a bounds block holds: no bounds",
	    SST_BOUNDS_MAX_COLUMNS + 1);
	sst_reader_unref(r);
	many[SST_BOUNDS_MAX_COLUMNS] = NULL;
	build_bounds_table(env, "b5.sst", first_byte_column, many, &info);
	if (sst_reader_open(env, "b5.sst", 0, NULL, NULL, &r) < 0)
		tap_bail("open b5.sst");
	ok(sst_reader_bounds(r, &count, &max_time) &&
	    count == SST_BOUNDS_MAX_COLUMNS, "%d columns: bounds kept",
	    SST_BOUNDS_MAX_COLUMNS);
	sst_reader_unref(r);

	/* The bounds block's first byte (its flags) follows the filter. */
	{
		uint64_t filter_off, filter_size;
		struct env_file *f;
		uint8_t foot[SST_FOOTER_SIZE];

		if (env_file_open(env, "b2.sst", ENV_READ, &f) < 0 ||
		    env_file_size(f, &filter_off) < 0 ||
		    env_file_read_exact(f, filter_off - SST_FOOTER_SIZE, foot,
		    sizeof(foot)) < 0)
			tap_bail("read b2.sst footer");
		env_file_close(f);
		filter_off = get_fixed64(foot + 16);
		filter_size = get_fixed64(foot + 24);
		if (env_fault_flip_byte(env, "b2.sst", filter_off +
		    filter_size + SST_BLOCK_TRAILER_SIZE, 0x01) < 0)
			tap_bail("flip b2.sst");
		rc = sst_reader_open(env, "b2.sst", 0, NULL, NULL, &r);
		is_int(rc, BT_ECHECKSUM, "a flipped bounds byte fails the "
		    "open: BT_ECHECKSUM");
		ok(strstr(bt_error_detail(), "bounds") != NULL,
		    "the detail names the bounds block: %s",
		    bt_error_detail());
		if (rc == 0)
			sst_reader_unref(r);
	}
	buf_release(&v);
}

/*
 * Rewrite the bounds block of path (at most 64 bytes) with edit() applied,
 * its CRC fixed, so that only the parse can object.
 */
static void
bounds_block_rewrite(struct env *env, const char *src, const char *dst,
    void (*edit)(uint8_t *block, size_t n))
{
	struct env_file *f;
	uint64_t size, off, end;
	uint8_t *img;

	if (env_file_open(env, src, ENV_READ, &f) < 0 ||
	    env_file_size(f, &size) < 0 || (img = malloc(size)) == NULL ||
	    env_file_read_exact(f, 0, img, size) < 0)
		tap_bail("cannot read a table");
	env_file_close(f);
	off = get_fixed64(img + size - SST_FOOTER_SIZE + 16);
	if (get_fixed64(img + size - SST_FOOTER_SIZE + 24) > 0)
		off += get_fixed64(img + size - SST_FOOTER_SIZE + 24) +
		    SST_BLOCK_TRAILER_SIZE;
	end = get_fixed64(img + size - SST_FOOTER_SIZE) -
	    SST_BLOCK_TRAILER_SIZE;
	if (end <= off || end - off > 64)
		tap_bail("no bounds block");
	edit(img + off, (size_t)(end - off));
	put_fixed32(img + end + 1, crc32c_mask(crc32c_value(img + off,
	    (size_t)(end - off) + 1)));
	if (write_file(env, dst, img, (size_t)size) < 0)
		tap_bail("cannot write a table");
	free(img);
}

/* min_seq and max_seq are the bytes after the flags (one byte each). */
static void
edit_swap_sequences(uint8_t *p, size_t n)
{
	uint8_t t;

	if (n < 3)
		tap_bail("short bounds block");
	t = p[1];
	p[1] = p[2];
	p[2] = t;
}

static void
edit_unknown_flag(uint8_t *p, size_t n)
{
	(void)n;
	p[0] |= 0x08;
}

/* The bit of the splits map that edit_splits_bit() sets: its byte is
 * right after the flags and the map's one-byte length. */
static size_t splits_bit;

static void
edit_splits_bit(uint8_t *p, size_t n)
{
	if (n < 3 + splits_bit / 8)
		tap_bail("short bounds block");
	p[2 + splits_bit / 8] |= (uint8_t)(1u << (splits_bit % 8));
}

static void
edit_splits_clear(uint8_t *p, size_t n)
{
	if (n < 3 + splits_bit / 8)
		tap_bail("short bounds block");
	p[2 + splits_bit / 8] &= (uint8_t)~(1u << (splits_bit % 8));
}

/* A key_column for the splits test: every key is of column "c" at 0. */
static bool
one_column(struct slice key, struct slice *column, uint64_t *time)
{
	(void)key;
	*column = slice_make("c", 1);
	*time = 0;
	return true;
}

/* Row r of the splits test has one entry, or 30 (several blocks) when
 * r % 25 == 7. */
static int
splits_cols(int row)
{
	return row % 25 == 7 ? 30 : 1;
}

/*
 * The splits map (format versions 3 and 4, written with key_column and
 * filter_prefix): a point read of a row that ends a block does not read
 * the next block to see that the row ends there, while a row that goes on
 * into the next blocks is read whole; a bit set where the next block
 * starts a new row is harmless, and one past the last block fails the
 * open.
 */
static void
test_visit_prefix_splits(struct env *env)
{
	struct sst_reader_stats st0, st1;
	struct sst_options o;
	struct sst_reader *r;
	struct sst_info info;
	struct sst_pins pins;
	struct buf ik, dk;
	char key[32];
	size_t bad = 0, extra_reads = 0, one_entry = 0;
	struct prefix_log *l = calloc(1, sizeof(*l));

	if (l == NULL)
		tap_bail("out of memory");
	buf_init(&ik);
	buf_init(&dk);
	sst_options_default(&o);
	o.block_size = 256;
	o.filter_prefix = row_prefix;
	o.key_column = one_column;
	build_rows_table(env, "splits.sst", &o, 200, 1, splits_cols, &info);
	is_int(file_version(env, "splits.sst", info.file_size),
	    SST_FORMAT_VERSION, "key_column and filter_prefix: a version 5 "
	    "table");
	if (sst_reader_open(env, "splits.sst", 0, NULL, row_prefix, &r) < 0)
		tap_bail("open splits.sst");
	for (int row = 0; row < 201; row++) {
		int want = row < 200 ? splits_cols(row) : 0;

		snprintf(key, sizeof(key), "row%04d/", row);
		memset(l, 0, sizeof(*l));
		sst_pins_init(&pins);
		sst_reader_get_stats(r, &st0);
		if (sst_reader_visit_prefix(r, slice_str(key), NULL, &ik, &dk,
		    &pins, prefix_collect, l) != 0 || (want > 0 ?
		    !prefix_log_is(l, row, want) : l->n != 0))
			bad++;
		sst_reader_get_stats(r, &st1);
		sst_pins_release(&pins);
		if (want == 1) {
			one_entry++;
			if (st1.block_reads - st0.block_reads != 1)
				extra_reads++;
		}
	}
	is_int(bad, 0, "splits map: every row's entries visited, rows over "
	    "several blocks too");
	is_int(sst_reader_verify(r), 0, "splits map: verify is clean");
	is_int(extra_reads, 0, "splits map: each of %zu one-entry rows "
	    "reads one block, those that end a block too", one_entry);
	sst_reader_unref(r);

	/* Every boundary marked: reads as a version 2 table would. */
	splits_bit = 0;
	bounds_block_rewrite(env, "splits.sst", "splits-set.sst",
	    edit_splits_bit);
	if (sst_reader_open(env, "splits-set.sst", 0, NULL, row_prefix,
	    &r) < 0)
		tap_bail("open splits-set.sst");
	memset(l, 0, sizeof(*l));
	sst_pins_init(&pins);
	ok(sst_reader_visit_prefix(r, slice_str("row0000/"), NULL, &ik, &dk,
	    &pins, prefix_collect, l) == 0 && prefix_log_is(l, 0, 1),
	    "a boundary marked needlessly: the row reads right");
	sst_pins_release(&pins);
	is_int(sst_reader_verify(r), 0, "and verify is clean");
	sst_reader_unref(r);
	/* Row 7 spans blocks 0 and 1 (the first block holds 7 entries of
	 * about 33 bytes): unmark that boundary. */
	splits_bit = 0;
	bounds_block_rewrite(env, "splits.sst", "splits-cut.sst",
	    edit_splits_clear);
	if (sst_reader_open(env, "splits-cut.sst", 0, NULL, row_prefix,
	    &r) < 0)
		tap_bail("open splits-cut.sst");
	is_int(sst_reader_verify(r), BT_ECORRUPT,
	    "a boundary inside a row left unmarked: verify finds it");
	sst_reader_unref(r);
	splits_bit = (size_t)info.block_count - 1;
	bounds_block_rewrite(env, "splits.sst", "splits-bad.sst",
	    edit_splits_bit);
	is_int(sst_reader_open(env, "splits-bad.sst", 0, NULL, row_prefix,
	    &r), BT_ECORRUPT, "a splits bit at the last block: BT_ECORRUPT");
	buf_release(&ik);
	buf_release(&dk);
	free(l);
}

/*
 * The bounds block's sequence range (key_sequence): the smallest and the
 * largest read back, with or without the columns; none without
 * key_sequence, when a key has none, or in an empty table; a range upside
 * down or an unknown flag fails the open even with its CRC right.
 */
static void
test_bounds_sequences(struct env *env)
{
	static const char *const plain[] = { "a1", "a7", "b3", "c2", NULL };
	static const char *const lost[] = { "a1", "b3", "x9", NULL };
	static const char *const noseq[] = { "a1", "b3", "y5", NULL };
	static const char *const none[] = { NULL };
	struct sst_info info;
	struct sst_reader *r;
	size_t count = 0;
	uint64_t lo = 0, hi = 0, max_time = 0;
	bool seqs, bounds;
	int rc;

	build_bounds_table(env, "s0.sst", first_byte_column, plain, &info);
	if (sst_reader_open(env, "s0.sst", 0, NULL, NULL, &r) < 0)
		tap_bail("open s0.sst");
	ok(sst_reader_bounds(r, &count, &max_time) &&
	    !sst_reader_sequences(r, &lo, &hi),
	    "without key_sequence: bounds, no sequence range");
	sst_reader_unref(r);

	build_bounds_table_seq(env, "s1.sst", first_byte_column,
	    letter_digit_sequence, plain, &info);
	is_int(file_version(env, "s1.sst", info.file_size),
	    SST_FORMAT_VERSION_2, "with key_sequence: a version 2 table");
	if (sst_reader_open(env, "s1.sst", 0, NULL, NULL, &r) < 0)
		tap_bail("open s1.sst");
	seqs = sst_reader_sequences(r, &lo, &hi);
	ok(seqs && lo == 1 && hi == 22, "sequences 1 to 22 (got %d, %llu, "
	    "%llu)", seqs, (unsigned long long)lo, (unsigned long long)hi);
	ok(sst_reader_bounds(r, &count, &max_time) && count == 3 &&
	    max_time == 7, "and the columns and time as before");
	sst_reader_unref(r);

	build_bounds_table_seq(env, "s2.sst", first_byte_column,
	    letter_digit_sequence, lost, &info);
	if (sst_reader_open(env, "s2.sst", 0, NULL, NULL, &r) < 0)
		tap_bail("open s2.sst");
	bounds = sst_reader_bounds(r, &count, &max_time);
	seqs = sst_reader_sequences(r, &lo, &hi);
	ok(!bounds && seqs && lo == 1 && hi == 239, "a key key_column does "
	    "not describe: no bounds, sequences 1 to 239 (got %llu, %llu)",
	    (unsigned long long)lo, (unsigned long long)hi);
	sst_reader_unref(r);

	build_bounds_table_seq(env, "s3.sst", first_byte_column,
	    letter_digit_sequence, noseq, &info);
	if (sst_reader_open(env, "s3.sst", 0, NULL, NULL, &r) < 0)
		tap_bail("open s3.sst");
	ok(sst_reader_bounds(r, &count, &max_time) && count == 3 &&
	    !sst_reader_sequences(r, &lo, &hi),
	    "a key key_sequence does not describe: bounds, no sequence range");
	sst_reader_unref(r);

	build_bounds_table_seq(env, "s4.sst", first_byte_column,
	    letter_digit_sequence, none, &info);
	if (sst_reader_open(env, "s4.sst", 0, NULL, NULL, &r) < 0)
		tap_bail("open s4.sst");
	ok(sst_reader_bounds(r, &count, &max_time) && count == 0 &&
	    !sst_reader_sequences(r, &lo, &hi),
	    "an empty table: no columns, no sequence range");
	sst_reader_unref(r);

	bounds_block_rewrite(env, "s1.sst", "s5.sst", edit_swap_sequences);
	rc = sst_reader_open(env, "s5.sst", 0, NULL, NULL, &r);
	is_int(rc, BT_ECORRUPT, "min_seq above max_seq: BT_ECORRUPT");
	ok(strstr(bt_error_detail(), "bounds") != NULL,
	    "the detail names the bounds block: %s", bt_error_detail());
	if (rc == 0)
		sst_reader_unref(r);
	bounds_block_rewrite(env, "s1.sst", "s6.sst", edit_unknown_flag);
	rc = sst_reader_open(env, "s6.sst", 0, NULL, NULL, &r);
	is_int(rc, BT_ECORRUPT, "an unknown bounds flag: BT_ECORRUPT");
	if (rc == 0)
		sst_reader_unref(r);
}

int
main(void)
{
	struct env *env;

	if (env_fault_new(&env) < 0)
		tap_bail("env_fault_new");
	test_bounds(env);
	test_bounds_sequences(env);
	test_visit_prefix_splits(env);
	env_free(env);
	return tap_done();
}
