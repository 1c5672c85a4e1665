/*
 * fuzz_sstable.c - a whole SSTable file (src/sstable/sst_reader.c):
 * footer, index, filter, bounds (columns, times, sequences, usage) and
 * data
 * blocks, opened from the in-memory env.
 * Opening, iterating, point lookups and verify must fail cleanly on any
 * damage; when sst_reader_verify() passes the table, iteration yields
 * strictly increasing keys, each found again by sst_reader_get() with
 * the same value, and a keys-only iteration as many entries with the same
 * value lengths.  (With the CRCs fixed the fuzzer can write blocks no
 * builder writes, e.g. keys out of order; only verify promises to see
 * those.)
 *
 * The first input byte is a flag: when odd, the target first recomputes
 * the footer's and every block's CRC where the structure lets it find
 * them, so that the fuzzer reaches the decoding behind the checksums.
 */
#include <string.h>

#include "fuzz.h"
#include "sstable/block.h"
#include "sstable/format.h"
#include "sstable/sstable.h"
#include "util/buf.h"
#include "util/coding.h"
#include "util/crc32c.h"
#include "util/env.h"

#define PATH "/t.sst"

/* Recompute the trailer CRC of the block stored at (offset, size). */
static void
fix_block(uint8_t *p, size_t n, uint64_t offset, uint64_t size)
{
	uint32_t crc;

	if (offset > n || size > n - offset ||
	    SST_BLOCK_TRAILER_SIZE > n - offset - size)
		return;
	crc = crc32c_extend(crc32c_value(p + offset, (size_t)size),
	    p + offset + size, 1);
	put_fixed32(p + offset + size + 1, crc32c_mask(crc));
}

static void
fix_checksums(uint8_t *p, size_t n)
{
	uint8_t *f;
	uint64_t index_off, index_size, off, sz;
	struct iter *it;
	struct slice v;

	if (n < SST_FOOTER_SIZE)
		return;
	f = p + n - SST_FOOTER_SIZE;
	put_fixed32(f + 52, crc32c_mask(crc32c_value(f, 52)));
	index_off = get_fixed64(f);
	index_size = get_fixed64(f + 8);
	fix_block(p, n, get_fixed64(f + 16), get_fixed64(f + 24));
	fix_block(p, n, index_off, index_size);
	/* Version 2: the bounds block lies between the filter and the index. */
	off = get_fixed64(f + 16);
	if (get_fixed64(f + 24) > 0)	/* an empty filter has no trailer */
		off += get_fixed64(f + 24) + SST_BLOCK_TRAILER_SIZE;
	if (get_fixed32(f + 48) >= 2 && off < index_off &&
	    index_off - off >= SST_BLOCK_TRAILER_SIZE)
		fix_block(p, n, off, index_off - off - SST_BLOCK_TRAILER_SIZE);
	if (index_off > n || index_size > n - index_off ||
	    p[index_off + index_size] != SST_BLOCK_RAW)
		return;
	if (block_iter_new(slice_make(p + index_off, (size_t)index_size),
	    NULL, NULL, &it) < 0)
		return;
	for (int rc = iter_seek_first(it); rc == 0 && iter_valid(it);
	    rc = iter_next(it)) {
		v = iter_value(it);
		if (get_varint64(&v, &off) < 0 || get_varint64(&v, &sz) < 0)
			break;
		fix_block(p, n, off, sz);
	}
	iter_free(it);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct env *env;
	struct env_file *f;
	struct sst_reader *r;
	struct iter *it;
	struct buf prev, value;
	uint8_t *copy;
	size_t n = 0, keys_only_n = 0;
	uint64_t max_time, min_seq, max_seq, lengths = 0, keys_only_lengths = 0;
	volatile unsigned touched = 0;
	bool verified;
	int rc;

	if (size < 1)
		return 0;
	FUZZ_CHECK((copy = malloc(size)) != NULL);
	memcpy(copy, data + 1, size - 1);
	if (data[0] & 1)
		fix_checksums(copy, size - 1);
	FUZZ_CHECK(env_fault_new(&env) == 0);
	FUZZ_CHECK(env_file_open(env, PATH, ENV_CREATE, &f) == 0);
	FUZZ_CHECK(env_file_append(f, copy, size - 1) == 0);
	FUZZ_CHECK(env_file_close(f) == 0);
	free(copy);
	if (sst_reader_open(env, PATH, 1, NULL, NULL, &r) < 0)
		goto out;
	verified = sst_reader_verify(r) == 0;
	if (sst_reader_bounds(r, &n, &max_time)) {
		FUZZ_CHECK(n <= SST_BOUNDS_MAX_COLUMNS);
		for (size_t i = 0; i < n; i++) {
			struct slice c = sst_reader_bounds_column(r, i);

			if (c.n > 0)	/* inside the file's bytes (ASan) */
				touched += c.p[0] + c.p[c.n - 1];
		}
		(void)touched;
		n = 0;
	}
	if (sst_reader_sequences(r, &min_seq, &max_seq))
		FUZZ_CHECK(min_seq <= max_seq);
	if (sst_reader_usage(r, &n)) {
		struct sst_info info;
		uint64_t entries = 0;

		FUZZ_CHECK(n <= SST_USAGE_MAX_LABELS);
		for (size_t i = 0; i < n; i++) {
			struct sst_usage u;

			sst_reader_usage_get(r, i, &u);
			if (u.label.n > 0)	/* inside the file (ASan) */
				touched += u.label.p[0] +
				    u.label.p[u.label.n - 1];
			entries += u.entries;
		}
		(void)touched;
		sst_reader_get_info(r, &info);
		FUZZ_CHECK(entries == info.entry_count);
		n = 0;
	}
	FUZZ_CHECK(sst_reader_iter_new(r, 0, &it) == 0);
	buf_init(&prev);
	buf_init(&value);
	for (rc = iter_seek_first(it); rc == 0 && iter_valid(it);
	    rc = iter_next(it)) {
		struct slice k = iter_key(it), v = iter_value(it);

		lengths += v.n;
		if (verified && n > 0)
			FUZZ_CHECK(slice_compare(k, buf_slice(&prev)) > 0);
		FUZZ_CHECK(buf_set(&prev, k.p, k.n) == 0);
		/* A point lookup finds what the scan saw (a few only). */
		if (verified && n < 8 && sst_reader_get(r, k, &value) == 0)
			FUZZ_CHECK(slice_equal(buf_slice(&value), v));
		n++;
	}
	if (n > 0)
		(void)iter_seek(it, buf_slice(&prev));
	iter_free(it);
	/* A keys-only scan sees as many entries, with the same lengths. */
	FUZZ_CHECK(sst_reader_iter_new(r, SST_ITER_KEYS_ONLY, &it) == 0);
	for (rc = iter_seek_first(it); rc == 0 && iter_valid(it);
	    rc = iter_next(it)) {
		keys_only_n++;
		keys_only_lengths += iter_value(it).n;
	}
	if (verified)
		FUZZ_CHECK(rc == 0 && keys_only_n == n &&
		    keys_only_lengths == lengths);
	(void)sst_reader_get(r, slice_make(data, size > 8 ? 8 : size), &value);
	buf_release(&prev);
	buf_release(&value);
	iter_free(it);
	sst_reader_unref(r);
out:
	env_free(env);
	return 0;
}
