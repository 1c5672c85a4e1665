/*
 * extsort.c - the external sort of extsort.h.
 *
 * A run in memory is the entries' bytes back to back in one buffer (key,
 * then value) and an array of records pointing into it, sorted with
 * qsort_r by key and, among equal keys, newest (highest offset) first,
 * so that the first of a key is the one kept.  A spilled run is a file
 * of entries in that order, duplicates dropped:
 *
 *   entry = varint32(key length) varint32(value length) key value
 *
 * and its CRC32C is kept in memory, not in the file.  The merge keeps one
 * cursor per run (the last one the run still in memory) in a binary heap
 * ordered by key and, among equal keys, by run, later first; a key taken
 * from the heap's top makes the other cursors at that key step over it.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/alloc.h"
#include "util/buf.h"
#include "util/coding.h"
#include "util/crc32c.h"
#include "util/error.h"
#include "util/extsort.h"

#define SPILL_BUFFER	((size_t)1 << 20)
#define READ_BUFFER	((size_t)256 << 10)
#define ENTRY_HEAD_MAX	10	/* two varint32s */

/* An entry of the run in memory; head: the key's first 8 bytes,
 * big-endian, zero-padded, which decide most comparisons. */
struct entry {
	uint64_t head;
	uint64_t off;		/* of the key in data; the value follows */
	uint32_t key_n;
	uint32_t value_n;
};

/* A run being read back: a spilled file, or (file NULL) the run in
 * memory. */
struct cursor {
	size_t run;		/* order of the run: later wins */
	struct env_file *file;
	char *path;
	uint64_t offset;	/* in the file, of buf's end */
	uint64_t size;
	uint32_t crc, want_crc;
	struct buf buf;		/* bytes read and not yet consumed */
	size_t pos;
	size_t index;		/* in memory: the next entry */
	struct slice key, value;	/* the current entry */
};

struct extsort {
	struct extsort_options opts;
	char *dir, *prefix;
	int failed;
	bool finished;
	/* The run in memory. */
	struct buf data;
	struct entry *entries;
	size_t count, cap;
	/* The spilled runs: their paths, sizes and checksums. */
	char **paths;
	uint64_t *sizes;
	uint32_t *crcs;
	size_t runs;
	struct buf spill;	/* the write buffer */
	/* The merge. */
	struct cursor *cursors;
	size_t *heap;		/* indexes into cursors */
	size_t heap_n;
	size_t ncursors;
	struct cursor *emitted;	/* stepped past by the next call */
	struct extsort_stats stats;
};

static uint64_t
key_head(const uint8_t *p, size_t n)
{
	uint8_t b[8] = { 0 };

	memcpy(b, p, n < 8 ? n : 8);
	return get_be64(b);
}

int
extsort_new(const struct extsort_options *opts, struct extsort **out)
{
	struct extsort *x;

	assert(opts->env != NULL && opts->dir != NULL &&
	    opts->prefix != NULL);
	if ((x = bt_calloc(1, sizeof(*x))) == NULL)
		return -ENOMEM;
	x->opts = *opts;
	if (x->opts.budget == 0)
		x->opts.budget = EXTSORT_DEFAULT_BUDGET;
	x->dir = bt_strdup(opts->dir);
	x->prefix = bt_strdup(opts->prefix);
	if (x->dir == NULL || x->prefix == NULL) {
		bt_free(x->dir);
		bt_free(x->prefix);
		bt_free(x);
		return -ENOMEM;
	}
	buf_init(&x->data);
	buf_init(&x->spill);
	*out = x;
	return 0;
}

static int
entry_compare(const void *a, const void *b, void *arg)
{
	const struct entry *ea = a, *eb = b;
	const uint8_t *data = arg;
	size_t n;
	int c;

	if (ea->head != eb->head)
		return ea->head < eb->head ? -1 : 1;
	n = ea->key_n < eb->key_n ? ea->key_n : eb->key_n;
	if ((c = memcmp(data + ea->off, data + eb->off, n)) != 0)
		return c;
	if (ea->key_n != eb->key_n)
		return ea->key_n < eb->key_n ? -1 : 1;
	/* Equal keys: the one added later first. */
	return ea->off > eb->off ? -1 : 1;
}

static bool
entry_same_key(const struct extsort *x, const struct entry *a,
    const struct entry *b)
{
	return a->head == b->head && a->key_n == b->key_n &&
	    memcmp(x->data.p + a->off, x->data.p + b->off, a->key_n) == 0;
}

/* Write the spill buffer to f and fold it into *crc. */
static int
spill_flush(struct extsort *x, struct env_file *f, uint32_t *crc)
{
	int rc;

	if (x->spill.n == 0)
		return 0;
	*crc = crc32c_extend(*crc, x->spill.p, x->spill.n);
	rc = env_file_append(f, x->spill.p, x->spill.n);
	x->stats.spilled_bytes += x->spill.n;
	buf_clear(&x->spill);
	return rc;
}

/* Sort the run in memory, write it to a new run file and empty it. */
static int
run_spill(struct extsort *x)
{
	struct env_file *f = NULL;
	char *path = NULL, **paths;
	uint64_t *sizes, size = 0;
	uint32_t *crcs, crc = 0;
	size_t len;
	int rc;

	qsort_r(x->entries, x->count, sizeof(*x->entries), entry_compare,
	    x->data.p);
	len = strlen(x->dir) + strlen(x->prefix) + 32;
	paths = bt_realloc(x->paths, (x->runs + 1) * sizeof(*paths));
	if (paths != NULL)
		x->paths = paths;
	sizes = bt_realloc(x->sizes, (x->runs + 1) * sizeof(*sizes));
	if (sizes != NULL)
		x->sizes = sizes;
	crcs = bt_realloc(x->crcs, (x->runs + 1) * sizeof(*crcs));
	if (crcs != NULL)
		x->crcs = crcs;
	if (paths == NULL || sizes == NULL || crcs == NULL ||
	    (path = bt_malloc(len)) == NULL ||
	    buf_reserve_exact(&x->spill, SPILL_BUFFER) < 0) {
		bt_free(path);
		return -ENOMEM;
	}
	snprintf(path, len, "%s/%s-%zu.run", x->dir, x->prefix, x->runs);
	if ((rc = env_file_open(x->opts.env, path, ENV_CREATE, &f)) < 0) {
		bt_free(path);
		return rc;
	}
	/* Named from now on, so that extsort_free() removes it. */
	x->paths[x->runs] = path;
	x->sizes[x->runs] = 0;
	x->crcs[x->runs] = 0;
	x->runs++;
	for (size_t i = 0; i < x->count; i++) {
		const struct entry *e = &x->entries[i];
		uint8_t head[ENTRY_HEAD_MAX], *p = head;

		if (i > 0 && entry_same_key(x, &x->entries[i - 1], e))
			continue;
		p = encode_varint32(p, e->key_n);
		p = encode_varint32(p, e->value_n);
		if (x->spill.n + (size_t)(p - head) + e->key_n + e->value_n >
		    x->spill.cap && (rc = spill_flush(x, f, &crc)) < 0)
			goto out;
		/* An entry larger than the buffer goes out on its own. */
		if ((rc = buf_append(&x->spill, head, (size_t)(p - head))) < 0 ||
		    (rc = buf_append(&x->spill, x->data.p + e->off,
		    (size_t)e->key_n + e->value_n)) < 0)
			goto out;
		size += (uint64_t)(p - head) + e->key_n + e->value_n;
	}
	if ((rc = spill_flush(x, f, &crc)) < 0)
		goto out;
	x->sizes[x->runs - 1] = size;
	x->crcs[x->runs - 1] = crc;
	x->stats.runs++;
	x->count = 0;
	buf_clear(&x->data);
	/* A large entry's room is not kept for the next run. */
	if (x->spill.cap > SPILL_BUFFER)
		buf_release(&x->spill);
	rc = env_file_close(f);
	f = NULL;
out:
	env_file_close(f);
	return rc;
}

/* Room in the run for an entry of n bytes, growing the buffers up to the
 * budget and spilling the run when it is full. */
static int
run_room(struct extsort *x, size_t n)
{
	size_t want, cap;
	int rc;

	if (x->count > 0 && x->data.n + n + (x->count + 1) *
	    sizeof(*x->entries) > x->opts.budget &&
	    (rc = run_spill(x)) < 0)
		return rc;
	if (x->data.cap - x->data.n < n) {
		/* Double, but not past the budget (unless one entry needs
		 * more). */
		want = x->data.cap * 2;
		if (want > x->opts.budget)
			want = x->opts.budget;
		if (want < x->data.n + n)
			want = x->data.n + n;
		if ((rc = buf_reserve_exact(&x->data, want - x->data.n)) < 0)
			return rc;
	}
	if (x->count == x->cap) {
		struct entry *e;

		cap = x->cap ? x->cap * 2 : 1024;
		if ((e = bt_realloc(x->entries, cap * sizeof(*e))) == NULL)
			return -ENOMEM;
		x->entries = e;
		x->cap = cap;
	}
	return 0;
}

int
extsort_add(struct extsort *x, struct slice key, struct slice value)
{
	struct entry *e;
	int rc;

	assert(!x->finished);
	if (x->failed < 0)
		return x->failed;
	if (key.n > UINT32_MAX || value.n > UINT32_MAX)
		return bt_error_set(-EFBIG, "extsort: an entry over 4 GiB");
	if ((rc = run_room(x, key.n + value.n)) < 0)
		return x->failed = rc;
	e = &x->entries[x->count++];
	e->head = key_head(key.p, key.n);
	e->off = x->data.n;
	e->key_n = (uint32_t)key.n;
	e->value_n = (uint32_t)value.n;
	if (key.n > 0)
		memcpy(x->data.p + x->data.n, key.p, key.n);
	if (value.n > 0)
		memcpy(x->data.p + x->data.n + key.n, value.p, value.n);
	x->data.n += key.n + value.n;
	x->stats.added++;
	return 0;
}

/* Make the next entry of c current: 0, BT_DONE, or an error. */
static int
cursor_next(struct extsort *x, struct cursor *c)
{
	struct slice in;
	uint32_t kn, vn;
	size_t need, got;
	int rc;

	if (c->file == NULL) {
		const struct entry *e;

		/* Step over the older entries of the key just taken. */
		while (c->index > 0 && c->index < x->count &&
		    entry_same_key(x, &x->entries[c->index - 1],
		    &x->entries[c->index]))
			c->index++;
		if (c->index >= x->count)
			return BT_DONE;
		e = &x->entries[c->index++];
		c->key = slice_make(x->data.p + e->off, e->key_n);
		c->value = slice_make(x->data.p + e->off + e->key_n,
		    e->value_n);
		return 0;
	}
	for (;;) {
		in = slice_make(c->buf.p + c->pos, c->buf.n - c->pos);
		if (get_varint32(&in, &kn) == 0 &&
		    get_varint32(&in, &vn) == 0 &&
		    in.n >= (uint64_t)kn + vn) {
			c->key = slice_make(in.p, kn);
			c->value = slice_make(in.p + kn, vn);
			need = (size_t)(in.p - (c->buf.p + c->pos)) + kn + vn;
			c->crc = crc32c_extend(c->crc, c->buf.p + c->pos,
			    need);
			c->pos += need;
			return 0;
		}
		if (c->offset >= c->size) {
			if (c->pos != c->buf.n)
				return bt_error_set(BT_ECORRUPT, "%s: run ends "
				    "inside an entry", c->path);
			if (c->crc != c->want_crc)
				return bt_error_set(BT_ECHECKSUM, "%s: run "
				    "checksum mismatch", c->path);
			return BT_DONE;
		}
		/* Keep the partial entry, read more: at least what it
		 * needs when its lengths are known. */
		if (c->pos > 0) {
			memmove(c->buf.p, c->buf.p + c->pos,
			    c->buf.n - c->pos);
			c->buf.n -= c->pos;
			c->pos = 0;
		}
		need = READ_BUFFER;
		in = buf_slice(&c->buf);
		if (get_varint32(&in, &kn) == 0 &&
		    get_varint32(&in, &vn) == 0 &&
		    (size_t)(in.p - c->buf.p) + kn + vn > need)
			need = (size_t)(in.p - c->buf.p) + kn + vn;
		if (c->buf.cap < need &&
		    (rc = buf_reserve_exact(&c->buf, need - c->buf.n)) < 0)
			return rc;
		if ((rc = env_file_read_at(c->file, c->offset,
		    c->buf.p + c->buf.n, c->buf.cap - c->buf.n, &got)) < 0)
			return rc;
		if (got == 0)
			return bt_error_set(BT_ECORRUPT, "%s: run shorter "
			    "than written", c->path);
		c->buf.n += got;
		c->offset += got;
	}
}

/* Whether cursor a goes before b: smaller key, or the same key from a
 * later run. */
static bool
cursor_before(const struct cursor *a, const struct cursor *b)
{
	int c = slice_compare(a->key, b->key);

	return c < 0 || (c == 0 && a->run > b->run);
}

static void
heap_down(struct extsort *x, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i, tmp;

		if (l < x->heap_n && cursor_before(&x->cursors[x->heap[l]],
		    &x->cursors[x->heap[m]]))
			m = l;
		if (r < x->heap_n && cursor_before(&x->cursors[x->heap[r]],
		    &x->cursors[x->heap[m]]))
			m = r;
		if (m == i)
			return;
		tmp = x->heap[i];
		x->heap[i] = x->heap[m];
		x->heap[m] = tmp;
		i = m;
	}
}

/* Advance the cursor at the heap's top, dropping it at its end. */
static int
heap_advance_top(struct extsort *x)
{
	int rc = cursor_next(x, &x->cursors[x->heap[0]]);

	if (rc < 0)
		return rc;
	if (rc == BT_DONE)
		x->heap[0] = x->heap[--x->heap_n];
	if (x->heap_n > 0)
		heap_down(x, 0);
	return 0;
}

int
extsort_finish(struct extsort *x)
{
	size_t n;
	int rc;

	assert(!x->finished);
	x->finished = true;
	if (x->failed < 0)
		return x->failed;
	if (x->count > 0)
		qsort_r(x->entries, x->count, sizeof(*x->entries),
		    entry_compare, x->data.p);
	buf_release(&x->spill);
	n = x->runs + 1;
	x->cursors = bt_calloc(n, sizeof(*x->cursors));
	x->heap = bt_calloc(n, sizeof(*x->heap));
	if (x->cursors == NULL || x->heap == NULL)
		return x->failed = -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct cursor *c = &x->cursors[i];

		c->run = i;
		buf_init(&c->buf);
		x->ncursors++;
		if (i < x->runs) {
			c->path = x->paths[i];
			c->size = x->sizes[i];
			c->want_crc = x->crcs[i];
			if ((rc = env_file_open(x->opts.env, c->path, ENV_READ,
			    &c->file)) < 0)
				return x->failed = rc;
		}
		if ((rc = cursor_next(x, c)) < 0)
			return x->failed = rc;
		if (rc == 0)
			x->heap[x->heap_n++] = i;
	}
	for (size_t i = x->heap_n / 2; i-- > 0;)
		heap_down(x, i);
	return 0;
}

int
extsort_next(struct extsort *x, struct slice *key, struct slice *value)
{
	struct cursor *top;
	int rc;

	assert(x->finished);
	if (x->failed < 0)
		return x->failed;
	/* The entry returned last is left behind only now, so that its
	 * bytes stayed valid until this call. */
	if (x->emitted != NULL) {
		size_t i = (size_t)(x->emitted - x->cursors);

		x->emitted = NULL;
		assert(x->heap_n > 0 && x->heap[0] == i);
		(void)i;
		if ((rc = heap_advance_top(x)) < 0)
			return x->failed = rc;
	}
	if (x->heap_n == 0)
		return BT_DONE;
	top = &x->cursors[x->heap[0]];
	/* Older entries of the same key, in earlier runs, are dropped: take
	 * top out of the heap while stepping them past it. */
	for (;;) {
		size_t t = x->heap[0];
		struct cursor *other;
		int c;

		if (x->heap_n == 1)
			break;
		/* The best of the other cursors is a child of the root. */
		other = &x->cursors[x->heap[1]];
		if (x->heap_n > 2 && cursor_before(&x->cursors[x->heap[2]],
		    other))
			other = &x->cursors[x->heap[2]];
		c = slice_compare(other->key, top->key);
		if (c != 0)
			break;
		/* other holds an older entry of top's key: advance it. */
		rc = cursor_next(x, other);
		if (rc < 0)
			return x->failed = rc;
		{
			size_t oi = (size_t)(other - x->cursors), pos;

			pos = x->heap[1] == oi ? 1 : 2;
			if (rc == BT_DONE) {
				x->heap[pos] = x->heap[--x->heap_n];
				if (pos < x->heap_n)
					heap_down(x, pos);
			} else {
				heap_down(x, pos);
			}
		}
		assert(x->heap[0] == t);
		(void)t;
	}
	*key = top->key;
	*value = top->value;
	x->emitted = top;
	return 0;
}

void
extsort_get_stats(const struct extsort *x, struct extsort_stats *out)
{
	*out = x->stats;
}

void
extsort_free(struct extsort *x)
{
	if (x == NULL)
		return;
	for (size_t i = 0; i < x->ncursors; i++) {
		env_file_close(x->cursors[i].file);
		buf_release(&x->cursors[i].buf);
	}
	for (size_t i = 0; i < x->runs; i++) {
		env_path_remove(x->opts.env, x->paths[i]);
		bt_free(x->paths[i]);
	}
	bt_free(x->paths);
	bt_free(x->sizes);
	bt_free(x->crcs);
	bt_free(x->cursors);
	bt_free(x->heap);
	buf_release(&x->data);
	buf_release(&x->spill);
	bt_free(x->entries);
	bt_free(x->dir);
	bt_free(x->prefix);
	bt_free(x);
}
