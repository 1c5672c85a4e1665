/*
 * block.c - prefix-compressed blocks with restart points (format.h).
 *
 * The builder drops from each key the prefix it shares with the previous
 * one, except every restart_interval entries, where the key is stored whole
 * and its offset recorded in the restart array, so that a reader can binary
 * search the restarts and then scan forward.
 *
 * The iterator trusts nothing in the bytes it is given: every length is
 * checked against the end of the entry area before it is used, and a flaw
 * yields BT_ECORRUPT with a detail naming the offset in the block.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sstable/block.h"
#include "util/alloc.h"
#include "util/coding.h"
#include "util/error.h"

/* The most bytes an entry's three length varints take. */
#define BLOCK_ENTRY_HEADER_MAX	(3 * VARINT32_MAX_BYTES)

void
block_builder_init(struct block_builder *b, int restart_interval)
{
	buf_init(&b->data);
	buf_init(&b->restarts);
	buf_init(&b->last_key);
	b->restart_interval = restart_interval < 1 ? 1 : restart_interval;
	b->since_restart = 0;
	b->count = 0;
	b->finished = false;
}

void
block_builder_release(struct block_builder *b)
{
	buf_release(&b->data);
	buf_release(&b->restarts);
	buf_release(&b->last_key);
}

void
block_builder_reset(struct block_builder *b)
{
	buf_clear(&b->data);
	buf_clear(&b->restarts);
	buf_clear(&b->last_key);
	b->since_restart = 0;
	b->count = 0;
	b->finished = false;
}

size_t
block_builder_size_estimate(const struct block_builder *b)
{
	size_t restarts = b->restarts.n > 0 ? b->restarts.n : 4;

	return b->data.n + restarts + 4;
}

/*
 * Everything that can fail (growth of the three buffers) happens before
 * anything changes, so that -ENOMEM leaves the block as it was.
 */
int
block_builder_add(struct block_builder *b, struct slice key,
    struct slice value)
{
	size_t shared = 0, unshared, limit;
	uint8_t *p;
	bool restart;
	int rc;

	assert(!b->finished);
	assert(b->count == 0 ||
	    slice_compare(key, buf_slice(&b->last_key)) > 0);
	restart = b->count == 0 || b->since_restart >= b->restart_interval;
	if (!restart) {
		limit = b->last_key.n < key.n ? b->last_key.n : key.n;
		while (shared < limit && b->last_key.p[shared] == key.p[shared])
			shared++;
	}
	unshared = key.n - shared;

	/* Offsets in the block are fixed32: keep the whole block below 4 GiB. */
	if (key.n > UINT32_MAX || value.n > UINT32_MAX ||
	    key.n + value.n + BLOCK_ENTRY_HEADER_MAX + 8 >
	    UINT32_MAX - block_builder_size_estimate(b))
		return bt_error_set(BT_ETOOBIG,
		    "block entry of %zu + %zu bytes: block would reach 4 GiB",
		    key.n, value.n);

	if ((rc = buf_reserve(&b->data, BLOCK_ENTRY_HEADER_MAX + unshared +
	    value.n)) < 0)
		return rc;
	if (restart && (rc = buf_reserve(&b->restarts, 4)) < 0)
		return rc;
	if (key.n > b->last_key.n &&
	    (rc = buf_reserve(&b->last_key, key.n - b->last_key.n)) < 0)
		return rc;

	if (restart) {
		(void)buf_put_fixed32(&b->restarts, (uint32_t)b->data.n);
		b->since_restart = 0;
	}
	/* The room is reserved: write in place, not a call per piece. */
	p = b->data.p + b->data.n;
	p = encode_varint32(p, (uint32_t)shared);
	p = encode_varint32(p, (uint32_t)unshared);
	p = encode_varint32(p, (uint32_t)value.n);
	if (unshared > 0) {
		memcpy(p, key.p + shared, unshared);
		memcpy(b->last_key.p + shared, key.p + shared, unshared);
	}
	if (value.n > 0)
		memcpy(p + unshared, value.p, value.n);
	b->data.n = (size_t)(p + unshared + value.n - b->data.p);
	b->last_key.n = key.n;
	b->since_restart++;
	b->count++;
	return 0;
}

int
block_builder_finish(struct block_builder *b, struct slice *out)
{
	uint32_t count;
	int rc;

	assert(!b->finished);
	if ((rc = buf_reserve(&b->data, b->restarts.n + 8)) < 0)
		return rc;
	if (b->restarts.n == 0 && (rc = buf_put_fixed32(&b->restarts, 0)) < 0)
		return rc;
	count = (uint32_t)(b->restarts.n / 4);
	(void)buf_append(&b->data, b->restarts.p, b->restarts.n);
	(void)buf_put_fixed32(&b->data, count);
	b->finished = true;
	*out = buf_slice(&b->data);
	return 0;
}

int
block_builder_take(struct block_builder *b, struct buf *out)
{
	struct slice contents;
	struct buf spare;
	int rc;

	if ((rc = block_builder_finish(b, &contents)) < 0)
		return rc;
	spare = *out;
	*out = b->data;
	b->data = spare;
	block_builder_reset(b);
	return 0;
}

struct block_iter {
	struct iter base;
	const uint8_t *data;
	size_t entries_end;		/* offset of the restart array */
	const uint8_t *restarts;
	uint32_t restart_count;
	size_t next;			/* offset of the entry after this one */
	struct buf key;
	struct slice value;
	bool valid;
	void (*release)(void *arg);
	void *arg;
};

/* An entry's parts, parsed in place. */
struct block_entry {
	uint32_t shared;
	struct slice delta;	/* the unshared key bytes */
	struct slice value;
	size_t next;		/* offset of the following entry */
};

/*
 * Parse the entry at off, checking every length against the end of the
 * entry area: any header, and the errors.
 */
static int __attribute__((noinline))
block_entry_parse_slow(const struct block_iter *it, size_t off,
    struct block_entry *e)
{
	struct slice in;
	uint32_t unshared, value_len;

	if (off >= it->entries_end)
		return bt_error_set(BT_ECORRUPT,
		    "block entry at %zu: past the entry area (%zu bytes)",
		    off, it->entries_end);
	in = slice_make(it->data + off, it->entries_end - off);
	if (get_varint32(&in, &e->shared) < 0 ||
	    get_varint32(&in, &unshared) < 0 ||
	    get_varint32(&in, &value_len) < 0)
		return bt_error_set(BT_ECORRUPT,
		    "block entry at %zu: truncated header", off);
	if (unshared > in.n || value_len > in.n - unshared)
		return bt_error_set(BT_ECORRUPT,
		    "block entry at %zu: lengths %u+%u overrun the block",
		    off, unshared, value_len);
	e->delta = slice_make(in.p, unshared);
	e->value = slice_make(in.p + unshared, value_len);
	e->next = (size_t)(in.p + unshared + value_len - it->data);
	return 0;
}

/*
 * block_entry_parse_slow() with the usual case inline, in registers: the
 * three lengths take a byte each (or the value's two), and the entry fits.
 */
static inline int
block_entry_parse(const struct block_iter *it, size_t off,
    struct block_entry *e)
{
	const uint8_t *p;
	uint32_t unshared, value_len;
	size_t left, hdr;

	if (off >= it->entries_end)
		return block_entry_parse_slow(it, off, e);
	p = it->data + off;
	left = it->entries_end - off;
	if (left >= 3 && (p[0] | p[1] | p[2]) < 0x80) {
		unshared = p[1];
		value_len = p[2];
		hdr = 3;
	} else if (left >= 4 && (p[0] | p[1] | p[3]) < 0x80 && p[3] != 0) {
		/* A value of 128 bytes to 16 KiB: its length takes two. */
		unshared = p[1];
		value_len = (uint32_t)(p[2] & 0x7f) | (uint32_t)p[3] << 7;
		hdr = 4;
	} else {
		return block_entry_parse_slow(it, off, e);
	}
	if ((size_t)unshared + value_len > left - hdr)
		return block_entry_parse_slow(it, off, e);
	e->shared = p[0];
	e->delta = slice_make(p + hdr, unshared);
	e->value = slice_make(p + hdr + unshared, value_len);
	e->next = off + hdr + unshared + value_len;
	return 0;
}

/*
 * Decode the entry at off into the iterator.  At a restart point the stored
 * key must be whole (shared = 0); elsewhere it extends the current key.
 */
static int
block_iter_decode(struct block_iter *it, size_t off, bool at_restart)
{
	struct block_entry e;
	int rc;

	it->valid = false;
	if ((rc = block_entry_parse(it, off, &e)) < 0)
		return rc;
	if (at_restart)
		it->key.n = 0;
	if (e.shared > it->key.n)
		return bt_error_set(BT_ECORRUPT,
		    "block entry at %zu: shares %u bytes of a %zu-byte key",
		    off, e.shared, it->key.n);
	it->key.n = e.shared;
	if (e.delta.n > it->key.cap - it->key.n &&
	    (rc = buf_reserve(&it->key, e.delta.n)) < 0)
		return rc;
	if (e.delta.n > 0)
		memcpy(it->key.p + it->key.n, e.delta.p, e.delta.n);
	it->key.n += e.delta.n;
	it->value = e.value;
	it->next = e.next;
	it->valid = true;
	return 0;
}

static inline size_t
block_iter_restart_offset(const struct block_iter *it, uint32_t i)
{
	const uint8_t *p = it->restarts + 4 * (size_t)i;

	assert(i < it->restart_count);
	/* get_fixed32(), inline: a seek reads a dozen of these. */
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

/* Decode the entry at restart point i. */
static int
block_iter_decode_restart(struct block_iter *it, uint32_t i)
{
	return block_iter_decode(it, block_iter_restart_offset(it, i), true);
}

/* Parse the entry at offset off of a restart point, which shares no
 * bytes with a key before it. */
static int
block_restart_entry_parse(const struct block_iter *it, size_t off,
    struct block_entry *e)
{
	int rc;

	if ((rc = block_entry_parse(it, off, e)) < 0)
		return rc;
	if (e->shared != 0)
		return bt_error_set(BT_ECORRUPT,
		    "block entry at %zu: restart point shares %u bytes",
		    off, e->shared);
	return 0;
}

/* The whole key stored at restart point i, borrowed from the block. */
static inline int
block_iter_restart_key(const struct block_iter *it, uint32_t i,
    struct slice *key)
{
	size_t off = block_iter_restart_offset(it, i);
	const uint8_t *p = it->data + off;
	struct block_entry e;
	int rc;

	/* The binary search's usual case inline: a whole key and a value
	 * whose lengths take a byte each, inside the entry area. */
	if (off + 3 <= it->entries_end && p[0] == 0 &&
	    (p[1] | p[2]) < 0x80 &&
	    (size_t)p[1] + p[2] <= it->entries_end - off - 3) {
		*key = slice_make(p + 3, p[1]);
		return 0;
	}
	if ((rc = block_restart_entry_parse(it, off, &e)) < 0)
		return rc;
	*key = e.delta;
	return 0;
}

static int
block_iter_seek_first(struct iter *base)
{
	struct block_iter *it = (struct block_iter *)base;

	it->valid = false;
	if (it->entries_end == 0)
		return 0;
	return block_iter_decode_restart(it, 0);
}

/*
 * Decode the entry at it->next as block_iter_decode() does, for the
 * forward scan of a seek: the key is extended in place, with no call, when
 * it has room.  *shared (may be NULL) receives how many bytes of the
 * previous key the new one kept.
 */
static inline int
block_iter_seek_step(struct block_iter *it, uint32_t *shared)
{
	struct block_entry e;
	size_t off = it->next;
	int rc;

	it->valid = false;
	if ((rc = block_entry_parse(it, off, &e)) < 0)
		return rc;
	if (e.shared > it->key.n)
		return bt_error_set(BT_ECORRUPT,
		    "block entry at %zu: shares %u bytes of a %zu-byte key",
		    off, e.shared, it->key.n);
	if (e.shared + e.delta.n > it->key.cap) {
		it->key.n = e.shared;
		if ((rc = buf_reserve(&it->key, e.delta.n)) < 0)
			return rc;
	}
	if (e.delta.n > 0)
		memcpy(it->key.p + e.shared, e.delta.p, e.delta.n);
	it->key.n = e.shared + e.delta.n;
	it->value = e.value;
	it->next = e.next;
	it->valid = true;
	if (shared != NULL)
		*shared = e.shared;
	return 0;
}

/*
 * Decode the restart a seek for target scans from: the last one whose key
 * is below target (or the first).  Every restart after it holds a key >=
 * target, so when it is its run's only entry (an index block has a
 * restart at every entry) the answer is the next restart, decoded instead
 * and *found set.  The block is not empty.
 */
static int
block_iter_seek_restart(struct block_iter *it, struct slice target,
    bool *found)
{
	uint32_t lo = 0, hi = it->restart_count - 1, mid;
	struct slice key = { NULL, 0 };
	struct block_entry e;
	bool lo_below = false;
	int rc;

	*found = false;
	while (lo < hi) {
		mid = lo + (hi - lo + 1) / 2;
		if ((rc = block_iter_restart_key(it, mid, &key)) < 0)
			return rc;
		if (slice_compare(key, target) < 0) {
			lo = mid;
			lo_below = true;
		} else {
			hi = mid - 1;
		}
	}
	if (lo_below && lo + 1 < it->restart_count) {
		if ((rc = block_entry_parse(it,
		    block_iter_restart_offset(it, lo), &e)) < 0)
			return rc;
		if (e.next == block_iter_restart_offset(it, lo + 1)) {
			*found = true;
			return block_iter_decode_restart(it, lo + 1);
		}
	}
	return block_iter_decode_restart(it, lo);
}

/*
 * Binary search for the last restart whose key is below target, then scan
 * forward to the first key >= target.
 */
static int
block_iter_seek(struct iter *base, struct slice target)
{
	struct block_iter *it = (struct block_iter *)base;
	bool found;
	int rc;

	it->valid = false;
	if (it->entries_end == 0)
		return 0;
	if ((rc = block_iter_seek_restart(it, target, &found)) < 0 || found)
		return rc;
	while (slice_compare(buf_slice(&it->key), target) < 0) {
		if (it->next >= it->entries_end) {
			it->valid = false;
			return 0;
		}
		if ((rc = block_iter_seek_step(it, NULL)) < 0)
			return rc;
	}
	return 0;
}

static int
block_iter_next(struct iter *base)
{
	struct block_iter *it = (struct block_iter *)base;

	if (!it->valid)
		return 0;
	if (it->next >= it->entries_end) {
		it->valid = false;
		return 0;
	}
	return block_iter_decode(it, it->next, false);
}

static bool
block_iter_valid(const struct iter *base)
{
	return ((const struct block_iter *)base)->valid;
}

static struct slice
block_iter_key(const struct iter *base)
{
	const struct block_iter *it = (const struct block_iter *)base;

	assert(it->valid);	/* util/iter.h */
	return buf_slice(&it->key);
}

static struct slice
block_iter_value(const struct iter *base)
{
	const struct block_iter *it = (const struct block_iter *)base;

	assert(it->valid);
	return it->value;
}

static void
block_iter_free(struct iter *base)
{
	struct block_iter *it = (struct block_iter *)base;

	if (it->release != NULL)
		it->release(it->arg);
	buf_release(&it->key);
	bt_free(it);
}

static const struct iter_ops block_iter_ops = {
	.seek_first = block_iter_seek_first,
	.seek = block_iter_seek,
	.next = block_iter_next,
	.valid = block_iter_valid,
	.key = block_iter_key,
	.value = block_iter_value,
	.free = block_iter_free,
};

/*
 * Only the shape is checked here (the restart array fits, the first restart
 * is at 0); restart offsets and entries are checked as they are decoded, so
 * that opening an iterator on a large index block stays O(1).
 */
static int
block_iter_setup(struct block_iter *it, struct slice contents)
{
	uint32_t restart_count;
	size_t entries_end;

	if (contents.n < 8)
		return bt_error_set(BT_ECORRUPT,
		    "block of %zu bytes: too short for a restart array",
		    contents.n);
	restart_count = get_fixed32(contents.p + contents.n - 4);
	if (restart_count == 0 || restart_count > (contents.n - 4) / 4)
		return bt_error_set(BT_ECORRUPT,
		    "block of %zu bytes: bad restart count %u",
		    contents.n, restart_count);
	entries_end = contents.n - 4 - 4 * (size_t)restart_count;
	if (get_fixed32(contents.p + entries_end) != 0)
		return bt_error_set(BT_ECORRUPT,
		    "block of %zu bytes: first restart is not at 0",
		    contents.n);
	if (entries_end == 0 && restart_count != 1)
		return bt_error_set(BT_ECORRUPT,
		    "empty block with %u restarts", restart_count);
	it->base.ops = &block_iter_ops;
	it->data = contents.p;
	it->entries_end = entries_end;
	it->restarts = contents.p + entries_end;
	it->restart_count = restart_count;
	it->valid = false;
	return 0;
}

int
block_iter_new(struct slice contents, void (*release)(void *arg),
    void *arg, struct iter **out)
{
	struct block_iter *it;
	int rc;

	if ((it = bt_calloc(1, sizeof(*it))) == NULL)
		return -ENOMEM;
	if ((rc = block_iter_setup(it, contents)) < 0) {
		bt_free(it);
		return rc;
	}
	buf_init(&it->key);
	it->release = release;
	it->arg = arg;
	*out = &it->base;
	return 0;
}

int
block_iter_reset(struct iter *base, struct slice contents,
    void (*release)(void *arg), void *arg)
{
	struct block_iter *it = (struct block_iter *)base;
	int rc;

	if (it->release != NULL)
		it->release(it->arg);
	it->release = NULL;
	it->arg = NULL;
	it->next = 0;
	it->key.n = 0;
	it->value = slice_make(NULL, 0);
	it->valid = false;
	if ((rc = block_iter_setup(it, contents)) < 0) {
		/* Nothing to read: seek_first and seek find no entry. */
		it->data = NULL;
		it->entries_end = 0;
		it->restarts = NULL;
		it->restart_count = 1;
		return rc;
	}
	it->release = release;
	it->arg = arg;
	return 0;
}

/*
 * Compare key with target from offset from on, below which they are
 * known to agree: <0, 0 or >0, and the length of their common prefix in
 * *match.
 */
static int
block_key_compare_from(struct slice key, struct slice target, size_t from,
    size_t *match)
{
	size_t n = key.n < target.n ? key.n : target.n, i = from;

	while (i < n && key.p[i] == target.p[i])
		i++;
	*match = i;
	if (i < n)
		return key.p[i] < target.p[i] ? -1 : 1;
	return key.n < target.n ? -1 : key.n > target.n;
}

/*
 * block_iter_seek() for a point read: the same binary search, then a
 * forward scan that knows how much of the current key agrees with target
 * (match).  The next key keeps the current key's first `shared` bytes, so
 * when shared > match it is below target for the same reason and is not
 * compared at all; otherwise only its bytes from `shared` on are.  Scans
 * and seeks of iterators keep block_iter_seek(), whose targets are
 * rarely near their keys.
 */
static int
block_iter_seek_point(struct block_iter *it, struct slice target)
{
	uint32_t shared = 0;
	size_t match;
	bool found;
	int rc, cmp;

	it->valid = false;
	if (it->entries_end == 0)
		return 0;
	if ((rc = block_iter_seek_restart(it, target, &found)) < 0 || found)
		return rc;
	cmp = block_key_compare_from(buf_slice(&it->key), target, 0, &match);
	while (cmp < 0) {
		if (it->next >= it->entries_end) {
			it->valid = false;
			return 0;
		}
		if ((rc = block_iter_seek_step(it, &shared)) < 0)
			return rc;
		if (shared <= match)
			cmp = block_key_compare_from(buf_slice(&it->key),
			    target, shared, &match);
	}
	return 0;
}

int
block_restart_entry(struct slice contents, uint32_t i, struct slice *key,
    struct slice *value)
{
	struct block_iter it;
	struct block_entry e;
	size_t off;
	int rc;

	if ((rc = block_iter_setup(&it, contents)) < 0)
		return rc;
	if (i >= it.restart_count || it.entries_end == 0)
		return BT_NOTFOUND;
	off = block_iter_restart_offset(&it, i);
	if ((rc = block_restart_entry_parse(&it, off, &e)) < 0)
		return rc;
	*key = e.delta;
	*value = e.value;
	return 0;
}

/*
 * An iterator on the stack that decodes keys into the caller's buffer, so
 * that a point read allocates nothing per block.
 */
int
block_visit_from(struct slice contents, struct slice target,
    struct buf *key_scratch,
    int (*visit)(void *arg, struct slice key, struct slice value), void *arg)
{
	struct block_iter it = { 0 };
	int rc;

	if ((rc = block_iter_setup(&it, contents)) < 0)
		return rc;
	it.key = *key_scratch;
	it.key.n = 0;
	for (rc = block_iter_seek_point(&it, target); rc == 0 && it.valid;
	    rc = block_iter_next(&it.base))
		if ((rc = visit(arg, buf_slice(&it.key), it.value)) != 0)
			break;
	*key_scratch = it.key;
	return rc;
}
