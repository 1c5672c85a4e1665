/*
 * test_block.c - prefix-compressed blocks: building, iterating, seeking,
 * and refusing damaged contents with BT_ECORRUPT instead of crashing.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sstable/block.h"
#include "tap.h"
#include "util/alloc.h"
#include "util/coding.h"
#include "util/error.h"

struct kv {
	uint8_t *k;
	size_t kn;
	uint8_t *v;
	size_t vn;
};

static int
kv_compare(const void *a, const void *b)
{
	const struct kv *x = a, *y = b;

	return slice_compare(slice_make(x->k, x->kn), slice_make(y->k, y->kn));
}

static void
kvs_free(struct kv *kvs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(kvs[i].k);
		free(kvs[i].v);
	}
	free(kvs);
}

/*
 * n random entries, sorted, duplicates removed (*np updated).  Keys draw
 * from a small alphabet so that neighbours share prefixes; the first is
 * the empty key and, when long_keys, a few are tens of KiB.
 */
static struct kv *
kvs_make(uint64_t *rng, size_t *np, bool long_keys)
{
	size_t n = *np, m = 0;
	struct kv *kvs = calloc(n, sizeof(*kvs));

	if (kvs == NULL)
		tap_bail("out of memory");
	for (size_t i = 0; i < n; i++) {
		size_t kn = i == 0 ? 0 : 1 + tap_rand(rng) % 24;
		size_t vn = tap_rand(rng) % 64;

		if (long_keys && i % 97 == 5)
			kn = 20000 + tap_rand(rng) % 60000;
		kvs[i].k = malloc(kn + 1);
		kvs[i].v = malloc(vn + 1);
		if (kvs[i].k == NULL || kvs[i].v == NULL)
			tap_bail("out of memory");
		for (size_t j = 0; j < kn; j++)
			kvs[i].k[j] = (uint8_t)('a' + tap_rand(rng) % 4);
		for (size_t j = 0; j < vn; j++)
			kvs[i].v[j] = (uint8_t)tap_rand(rng);
		kvs[i].kn = kn;
		kvs[i].vn = vn;
	}
	qsort(kvs, n, sizeof(*kvs), kv_compare);
	for (size_t i = 0; i < n; i++) {
		if (m > 0 && kv_compare(&kvs[m - 1], &kvs[i]) == 0) {
			free(kvs[i].k);
			free(kvs[i].v);
			continue;
		}
		kvs[m++] = kvs[i];
	}
	*np = m;
	return kvs;
}

/* Index of the first entry >= target (n if none). */
static size_t
kvs_lower_bound(const struct kv *kvs, size_t n, struct slice target)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (slice_compare(slice_make(kvs[mid].k, kvs[mid].kn),
		    target) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool
iter_at(struct iter *it, const struct kv *kvs, size_t n, size_t i)
{
	if (i == n)
		return !iter_valid(it);
	return iter_valid(it) &&
	    slice_equal(iter_key(it), slice_make(kvs[i].k, kvs[i].kn)) &&
	    slice_equal(iter_value(it), slice_make(kvs[i].v, kvs[i].vn));
}

/* A private, exactly sized copy so that valgrind sees any overread. */
static uint8_t *
copy_exact(struct slice s)
{
	uint8_t *p = malloc(s.n ? s.n : 1);

	if (p == NULL)
		tap_bail("out of memory");
	memcpy(p, s.p, s.n);
	return p;
}

static int
build(struct block_builder *b, const struct kv *kvs, size_t n,
    struct slice *out)
{
	int rc;

	block_builder_reset(b);
	for (size_t i = 0; i < n; i++)
		if ((rc = block_builder_add(b, slice_make(kvs[i].k, kvs[i].kn),
		    slice_make(kvs[i].v, kvs[i].vn))) < 0)
			return rc;
	return block_builder_finish(b, out);
}

static void
test_roundtrip(uint64_t *rng, int interval, size_t want_n, bool long_keys)
{
	struct block_builder b;
	struct slice contents;
	struct iter *it = NULL;
	struct kv *kvs;
	size_t n = want_n, bad, estimate, i;
	uint8_t *copy;
	int rc;

	kvs = kvs_make(rng, &n, long_keys);
	block_builder_init(&b, interval);
	for (i = 0; i < n; i++)
		if (block_builder_add(&b, slice_make(kvs[i].k, kvs[i].kn),
		    slice_make(kvs[i].v, kvs[i].vn)) < 0)
			break;
	ok(i == n, "interval %d%s: %zu entries added", interval,
	    long_keys ? " long keys" : "", n);
	estimate = block_builder_size_estimate(&b);
	is_int(block_builder_finish(&b, &contents), 0, "finish");
	is_int(contents.n, estimate, "size estimate matches finished size");
	is_int(get_fixed32(contents.p + contents.n - 4),
	    (n + (size_t)interval - 1) / (size_t)interval,
	    "one restart every %d entries", interval);

	copy = copy_exact(contents);
	rc = block_iter_new(slice_make(copy, contents.n), NULL, NULL, &it);
	is_int(rc, 0, "block_iter_new");
	if (rc < 0)
		goto out;

	bad = 0;
	rc = iter_seek_first(it);
	for (i = 0; i < n && rc == 0; i++) {
		if (!iter_at(it, kvs, n, i))
			bad++;
		rc = iter_next(it);
	}
	ok(rc == 0 && bad == 0 && i == n && !iter_valid(it),
	    "interval %d: iteration returns the %zu entries in order",
	    interval, n);

	bad = 0;
	for (i = 0; i < n; i++) {
		rc = iter_seek(it, slice_make(kvs[i].k, kvs[i].kn));
		if (rc != 0 || !iter_at(it, kvs, n, i))
			bad++;
	}
	is_int(bad, 0, "interval %d: seek to each key lands on it", interval);

	/* Between keys: the key with a zero byte appended, and with its last
	 * byte lowered, land on the lower bound. */
	bad = 0;
	for (i = 0; i < n; i++) {
		uint8_t *t = malloc(kvs[i].kn + 1);
		struct slice target;
		size_t want;

		memcpy(t, kvs[i].k, kvs[i].kn);
		t[kvs[i].kn] = 0;
		target = slice_make(t, kvs[i].kn + 1);
		want = kvs_lower_bound(kvs, n, target);
		if (iter_seek(it, target) != 0 || !iter_at(it, kvs, n, want))
			bad++;
		if (kvs[i].kn > 0 && t[kvs[i].kn - 1] > 0) {
			t[kvs[i].kn - 1]--;
			target = slice_make(t, kvs[i].kn);
			want = kvs_lower_bound(kvs, n, target);
			if (iter_seek(it, target) != 0 ||
			    !iter_at(it, kvs, n, want))
				bad++;
		}
		free(t);
	}
	is_int(bad, 0, "interval %d: seeks between keys land on the next key",
	    interval);

	/* Restart point r holds entry r * interval, whole. */
	bad = 0;
	for (i = 0; i * (size_t)interval < n; i++) {
		struct slice k, v;
		size_t e = i * (size_t)interval;

		if (block_restart_entry(slice_make(copy, contents.n),
		    (uint32_t)i, &k, &v) != 0 ||
		    !slice_equal(k, slice_make(kvs[e].k, kvs[e].kn)) ||
		    !slice_equal(v, slice_make(kvs[e].v, kvs[e].vn)))
			bad++;
	}
	is_int(bad, 0, "interval %d: each restart entry is its entry",
	    interval);
	{
		struct slice k, v;

		is_int(block_restart_entry(slice_make(copy, contents.n),
		    (uint32_t)i, &k, &v), BT_NOTFOUND,
		    "interval %d: no restart entry past the last", interval);
	}

	rc = iter_seek(it, slice_str(""));
	ok(rc == 0 && iter_at(it, kvs, n, 0), "seek to the empty key: first");
	rc = iter_seek(it, slice_str("zzzz"));
	ok(rc == 0 && !iter_valid(it), "seek past the last key: invalid");
	iter_free(it);
out:
	free(copy);
	block_builder_release(&b);
	kvs_free(kvs, n);
}

static void
test_empty_block(void)
{
	struct block_builder b;
	struct slice contents;
	struct iter *it;
	int rc;

	block_builder_init(&b, 16);
	is_int(block_builder_finish(&b, &contents), 0, "empty block finishes");
	is_int(contents.n, 8, "empty block: one restart and the count");
	{
		struct slice k, v;

		is_int(block_restart_entry(contents, 0, &k, &v), BT_NOTFOUND,
		    "empty block: no entry at its one restart");
	}
	rc = block_iter_new(contents, NULL, NULL, &it);
	is_int(rc, 0, "empty block opens");
	if (rc == 0) {
		ok(iter_seek_first(it) == 0 && !iter_valid(it),
		    "empty block: seek_first finds nothing");
		ok(iter_seek(it, slice_str("a")) == 0 && !iter_valid(it),
		    "empty block: seek finds nothing");
		iter_free(it);
	}

	/* Reuse after reset: only the new entry remains. */
	block_builder_reset(&b);
	is_int(block_builder_add(&b, slice_str("k"), slice_str("v")), 0,
	    "add after reset");
	is_int(block_builder_finish(&b, &contents), 0, "finish after reset");
	rc = block_iter_new(contents, NULL, NULL, &it);
	ok(rc == 0 && iter_seek_first(it) == 0 && iter_valid(it) &&
	    slice_equal(iter_key(it), slice_str("k")) &&
	    iter_next(it) == 0 && !iter_valid(it),
	    "block after reset holds only the new entry");
	if (rc == 0)
		iter_free(it);
	block_builder_release(&b);
}

static void
count_release(void *arg)
{
	(*(int *)arg)++;
}

static void
test_release_callback(void)
{
	struct block_builder b;
	struct slice contents;
	struct iter *it;
	int released = 0;

	block_builder_init(&b, 16);
	block_builder_finish(&b, &contents);
	is_int(block_iter_new(contents, count_release, &released, &it), 0,
	    "iterator with a release callback");
	iter_free(it);
	is_int(released, 1, "iter_free calls release once");
	released = 0;
	contents.n = 3;
	is_int(block_iter_new(contents, count_release, &released, &it),
	    BT_ECORRUPT, "a 3-byte block is corrupt");
	is_int(released, 0, "a failed block_iter_new does not call release");
	block_builder_release(&b);
}

/* ok() comparing two strings, printing both when they differ. */
#define is_str_eq(got, want, what) do {					\
	if (!ok(strcmp((got), (want)) == 0, "%s", (what)))		\
		diag("got \"%s\", want \"%s\"", (got), (want));	\
} while (0)

/* The entries of block it is on, from the first, as "k=v;" text. */
static void
block_text(struct iter *it, char *out, size_t size)
{
	size_t n = 0;
	int rc;

	out[0] = '\0';
	for (rc = iter_seek_first(it); rc == 0 && iter_valid(it);
	    rc = iter_next(it)) {
		struct slice k = iter_key(it), v = iter_value(it);

		n += (size_t)snprintf(out + n, size - n, "%.*s=%.*s;",
		    (int)k.n, (const char *)k.p, (int)v.n, (const char *)v.p);
	}
	if (rc < 0)
		snprintf(out + n, size - n, "ERROR");
}

/*
 * block_iter_reset(): an iterator moved to another block reads exactly that
 * block (keys of the old one do not leak into the new through prefix
 * compression), gives the old block back once, and after a reset onto
 * damaged contents is invalid, holds nothing, and releases nothing more.
 */
static void
test_iter_reset(void)
{
	struct block_builder b1, b2;
	struct slice c1, c2;
	struct iter *it;
	char text[256];
	int rel1 = 0, rel2 = 0;

	block_builder_init(&b1, 2);
	block_builder_init(&b2, 2);
	block_builder_add(&b1, slice_str("apple"), slice_str("1"));
	block_builder_add(&b1, slice_str("applesauce"), slice_str("2"));
	block_builder_add(&b1, slice_str("apricot"), slice_str("3"));
	block_builder_add(&b2, slice_str("b"), slice_str("4"));
	block_builder_add(&b2, slice_str("banana"), slice_str("5"));
	block_builder_finish(&b1, &c1);
	block_builder_finish(&b2, &c2);
	is_int(block_iter_new(c1, count_release, &rel1, &it), 0,
	    "iterator on the first block");
	block_text(it, text, sizeof(text));
	is_str_eq(text, "apple=1;applesauce=2;apricot=3;", "first block");
	ok(iter_seek(it, slice_str("applesauce")) == 0 && iter_valid(it),
	    "positioned inside the first block");
	is_int(block_iter_reset(it, c2, count_release, &rel2), 0,
	    "reset onto the second block");
	is_int(rel1, 1, "the first block is given back");
	ok(!iter_valid(it), "invalid until positioned");
	block_text(it, text, sizeof(text));
	is_str_eq(text, "b=4;banana=5;", "second block, nothing of the first");
	ok(iter_seek(it, slice_str("ba")) == 0 && iter_valid(it) &&
	    slice_equal(iter_key(it), slice_str("banana")),
	    "seek in the second block");
	c1.n = 3;
	is_int(block_iter_reset(it, c1, count_release, &rel1), BT_ECORRUPT,
	    "reset onto a 3-byte block is corrupt");
	is_int(rel2, 1, "the second block is given back");
	ok(iter_seek_first(it) == 0 && !iter_valid(it),
	    "after a failed reset the iterator finds nothing");
	iter_free(it);
	is_int(rel1 + rel2, 2, "and iter_free releases nothing more");
	block_builder_release(&b1);
	block_builder_release(&b2);
}

struct visit_log {
	const struct kv *kvs;
	size_t next;		/* the entry the next visit must see */
	size_t seen;
	size_t stop_after;	/* 0: never stop */
	size_t bad;
};

static int
visit_check(void *arg, struct slice key, struct slice value)
{
	struct visit_log *v = arg;
	const struct kv *want = &v->kvs[v->next++];

	if (!slice_equal(key, slice_make(want->k, want->kn)) ||
	    !slice_equal(value, slice_make(want->v, want->vn)))
		v->bad++;
	v->seen++;
	return v->stop_after != 0 && v->seen == v->stop_after ? 7 : 0;
}

/*
 * block_visit_from sees exactly the entries from the first key >= target,
 * in order, stops when visit says so (passing its value back) and reuses
 * the caller's key buffer.
 */
static void
test_visit_from(uint64_t *rng, int interval)
{
	struct block_builder b;
	struct slice contents;
	struct buf scratch;
	struct kv *kvs;
	size_t n = 600, bad = 0, stops_bad = 0;

	kvs = kvs_make(rng, &n, false);
	block_builder_init(&b, interval);
	buf_init(&scratch);
	if (build(&b, kvs, n, &contents) < 0)
		tap_bail("build");
	for (size_t i = 0; i < 1000; i++) {
		size_t at = tap_rand(rng) % n, want;
		uint8_t t[32];
		struct slice target;
		struct visit_log v = { kvs, 0, 0, 0, 0 };
		int rc;

		/* A present key; one just past it; a prefix of it; or it
		 * with one byte moved up or down (absent, mostly): targets
		 * that share a prefix of every length with their
		 * neighbours, for the seek's scan that compares keys only
		 * from where they can differ. */
		memcpy(t, kvs[at].k, kvs[at].kn);
		target = slice_make(t, kvs[at].kn);
		switch (i % 5) {
		case 1:
			t[target.n++] = 0;
			break;
		case 2:
			target.n = target.n > 0 ? tap_rand(rng) % target.n : 0;
			break;
		case 3:
		case 4:
			if (target.n > 0) {
				size_t j = tap_rand(rng) % target.n;

				t[j] = (uint8_t)(t[j] + (i % 5 == 3 ? 1 : -1));
				target.n = j + 1 + tap_rand(rng) %
				    (target.n - j);
			}
			break;
		}
		want = kvs_lower_bound(kvs, n, target);
		v.next = want;
		rc = block_visit_from(contents, target, &scratch, visit_check,
		    &v);
		if (rc != 0 || v.bad != 0 || v.seen != n - want)
			bad++;

		v = (struct visit_log){ kvs, want, 0, 3, 0 };
		rc = block_visit_from(contents, target, &scratch, visit_check,
		    &v);
		if (n - want >= 3 ? (rc != 7 || v.seen != 3 || v.bad != 0) :
		    (rc != 0 || v.seen != n - want))
			stops_bad++;
	}
	is_int(bad, 0, "interval %d: block_visit_from sees every entry from "
	    "the target on", interval);
	is_int(stops_bad, 0, "interval %d: a visit that stops ends the walk "
	    "with its value", interval);
	ok(scratch.cap > 0, "the caller's key buffer was used and kept");
	contents.n = 5;
	is_int(block_visit_from(contents, slice_str(""), &scratch,
	    visit_check, NULL), BT_ECORRUPT, "a 5-byte block is corrupt");
	buf_release(&scratch);
	block_builder_release(&b);
	kvs_free(kvs, n);
}

/* Adding under an allocation failure leaves the block as it was. */
static void
test_enomem(void)
{
	static uint8_t big[4096];
	struct block_builder b, ref;
	struct slice got, want;
	int rc;

	block_builder_init(&b, 16);
	block_builder_init(&ref, 16);
	block_builder_add(&b, slice_str("a"), slice_str("1"));
	block_builder_add(&ref, slice_str("a"), slice_str("1"));
	bt_alloc_fail_after(1);
	rc = block_builder_add(&b, slice_str("b"), slice_make(big, sizeof(big)));
	bt_alloc_fail_after(0);
	is_int(rc, -ENOMEM, "add under allocation failure: -ENOMEM");
	block_builder_finish(&b, &got);
	block_builder_finish(&ref, &want);
	ok(slice_equal(got, want), "the failed add changed nothing");
	block_builder_release(&b);
	block_builder_release(&ref);
}

/*
 * Walk a possibly damaged block every way a reader would and return the
 * first code other than 0, or 0.  Loops are bounded by the block size:
 * each entry takes at least 3 bytes.
 */
static int
walk(struct slice contents, const struct kv *kvs, size_t n)
{
	struct iter *it;
	size_t steps = 0;
	uint8_t *copy = copy_exact(contents);
	int rc;

	rc = block_iter_new(slice_make(copy, contents.n), NULL, NULL, &it);
	if (rc != 0)
		goto out;
	rc = iter_seek_first(it);
	while (rc == 0 && iter_valid(it) && steps++ <= contents.n)
		rc = iter_next(it);
	if (steps > contents.n / 3 + 1)
		rc = -ELOOP;
	for (size_t i = 0; i < n && rc == 0; i += 7)
		rc = iter_seek(it, slice_make(kvs[i].k, kvs[i].kn));
	iter_free(it);
out:
	free(copy);
	return rc;
}

/* Write entries by hand (shared, unshared, value_len, bytes). */
static void
put_entry(struct buf *b, uint32_t shared, uint32_t unshared,
    uint32_t value_len, const char *bytes)
{
	buf_put_varint32(b, shared);
	buf_put_varint32(b, unshared);
	buf_put_varint32(b, value_len);
	buf_append(b, bytes, strlen(bytes));
}

static void
put_restarts(struct buf *b, const uint32_t *offs, uint32_t count)
{
	for (uint32_t i = 0; i < count; i++)
		buf_put_fixed32(b, offs[i]);
	buf_put_fixed32(b, count);
}

static void
test_corrupt_crafted(void)
{
	static const uint32_t zero[] = { 0 };
	struct buf b;
	struct iter *it;

	buf_init(&b);

	put_entry(&b, 0, 1, 1, "ab");
	put_restarts(&b, zero, 1);
	is_int(walk(buf_slice(&b), NULL, 0), 0, "hand-made block is good");

	buf_clear(&b);
	put_entry(&b, 0, 1, 1, "ab");
	buf_put_fixed32(&b, 0);
	is_int(block_iter_new(buf_slice(&b), NULL, NULL, &it), BT_ECORRUPT,
	    "restart count 0: BT_ECORRUPT");
	ok(strstr(bt_error_detail(), "restart") != NULL,
	    "the detail names the restart count: %s", bt_error_detail());

	buf_clear(&b);
	put_entry(&b, 0, 1, 1, "ab");
	buf_put_fixed32(&b, 0);
	buf_put_fixed32(&b, 0xffffffffu);
	is_int(block_iter_new(buf_slice(&b), NULL, NULL, &it), BT_ECORRUPT,
	    "restart count 2^32-1: BT_ECORRUPT");

	buf_clear(&b);
	put_entry(&b, 0, 1, 1, "ab");
	buf_put_fixed32(&b, 0);
	buf_put_fixed32(&b, 3);		/* 12 bytes of restarts in 13 */
	is_int(block_iter_new(buf_slice(&b), NULL, NULL, &it), BT_ECORRUPT,
	    "restart array larger than the block: BT_ECORRUPT");

	buf_clear(&b);
	put_entry(&b, 0, 1, 1, "ab");
	put_restarts(&b, (const uint32_t[]){ 2 }, 1);
	is_int(block_iter_new(buf_slice(&b), NULL, NULL, &it), BT_ECORRUPT,
	    "first restart not at 0: BT_ECORRUPT");

	buf_clear(&b);
	put_entry(&b, 0, 1, 1, "ab");
	put_entry(&b, 0, 1, 1, "cd");
	put_restarts(&b, (const uint32_t[]){ 0, 200 }, 2);
	is_int(walk(buf_slice(&b), (const struct kv[]){ { (uint8_t *)"c", 1,
	    NULL, 0 } }, 1), BT_ECORRUPT,
	    "restart offset past the entries: BT_ECORRUPT on seek");

	buf_clear(&b);
	put_entry(&b, 0, 1, 1, "ab");
	put_entry(&b, 0, 1, 1, "cd");
	put_restarts(&b, (const uint32_t[]){ 0, 3 }, 2);
	is_int(walk(buf_slice(&b), (const struct kv[]){ { (uint8_t *)"c", 1,
	    NULL, 0 } }, 1), BT_ECORRUPT,
	    "restart offset inside an entry: BT_ECORRUPT on seek");

	buf_clear(&b);
	put_entry(&b, 3, 1, 1, "ab");
	put_restarts(&b, zero, 1);
	is_int(walk(buf_slice(&b), NULL, 0), BT_ECORRUPT,
	    "shared bytes in the first entry: BT_ECORRUPT");

	buf_clear(&b);
	put_entry(&b, 0, 1, 1, "ab");
	put_entry(&b, 2, 1, 1, "cd");
	put_restarts(&b, zero, 1);
	is_int(walk(buf_slice(&b), NULL, 0), BT_ECORRUPT,
	    "shared longer than the previous key: BT_ECORRUPT");

	buf_clear(&b);
	put_entry(&b, 0, 1, 1000, "ab");
	put_restarts(&b, zero, 1);
	is_int(walk(buf_slice(&b), NULL, 0), BT_ECORRUPT,
	    "value length past the block: BT_ECORRUPT");

	buf_clear(&b);
	put_entry(&b, 0, 0xfffffff0u, 1, "ab");
	put_restarts(&b, zero, 1);
	is_int(walk(buf_slice(&b), NULL, 0), BT_ECORRUPT,
	    "key length past the block: BT_ECORRUPT");

	buf_clear(&b);
	put_entry(&b, 0, 1, 0xffffffffu, "ab");
	put_restarts(&b, zero, 1);
	is_int(walk(buf_slice(&b), NULL, 0), BT_ECORRUPT,
	    "value length 2^32-1: BT_ECORRUPT");
	ok(strstr(bt_error_detail(), "at 0") != NULL,
	    "the detail names the offset: %s", bt_error_detail());

	buf_clear(&b);
	buf_append(&b, "\x80\x80", 2);	/* a varint cut by the restarts */
	put_restarts(&b, zero, 1);
	is_int(walk(buf_slice(&b), NULL, 0), BT_ECORRUPT,
	    "truncated entry header: BT_ECORRUPT");

	buf_release(&b);
}

/*
 * Every truncation and many random byte flips of a real block decode to
 * 0 or BT_ECORRUPT: never a crash, an overread (valgrind) or a loop.
 */
static void
test_corrupt_random(uint64_t *rng)
{
	struct block_builder b;
	struct slice contents;
	struct kv *kvs;
	size_t n = 300, bad = 0, detected = 0, flips = 3000;
	uint8_t *mut;

	kvs = kvs_make(rng, &n, false);
	block_builder_init(&b, 16);
	if (build(&b, kvs, n, &contents) < 0)
		tap_bail("build failed");

	for (size_t len = 0; len < contents.n; len++) {
		int rc = walk(slice_make(contents.p, len), kvs, n);

		if (rc != 0 && rc != BT_ECORRUPT)
			bad++;
		if (rc == BT_ECORRUPT)
			detected++;
	}
	is_int(bad, 0, "%zu truncations: only 0 or BT_ECORRUPT",
	    contents.n);
	ok(detected > contents.n / 2, "most truncations are detected (%zu)",
	    detected);

	mut = copy_exact(contents);
	bad = detected = 0;
	for (size_t i = 0; i < flips; i++) {
		size_t off = tap_rand(rng) % contents.n;
		uint8_t mask = (uint8_t)(1 + tap_rand(rng) % 255);
		int rc;

		mut[off] ^= mask;
		rc = walk(slice_make(mut, contents.n), kvs, n);
		mut[off] ^= mask;
		if (rc != 0 && rc != BT_ECORRUPT)
			bad++;
		if (rc == BT_ECORRUPT)
			detected++;
	}
	is_int(bad, 0, "%zu random byte flips: only 0 or BT_ECORRUPT", flips);
	diag("%zu of %zu flips detected by decoding alone", detected, flips);
	free(mut);
	block_builder_release(&b);
	kvs_free(kvs, n);
}

int
main(void)
{
	uint64_t seed = tap_seed(), rng = seed;

	test_roundtrip(&rng, 1, 500, false);
	test_roundtrip(&rng, 16, 500, false);
	test_roundtrip(&rng, 16, 400, true);
	test_roundtrip(&rng, 1, 1, false);
	test_roundtrip(&rng, 2, 3000, false);
	test_empty_block();
	test_release_callback();
	test_iter_reset();
	test_visit_from(&rng, 16);
	test_visit_from(&rng, 1);
	test_enomem();
	test_corrupt_crafted();
	test_corrupt_random(&rng);
	return tap_done();
}
