/*
 * tablet_point.c - a tablet's point reads (tablet_read_row, tablet.h): the
 * row's entries are gathered from each source the filter lets through
 * (and that the newer sources do not settle, for a newest-version read)
 * into one sorted array, and resolved by cells.c.  A row too large to
 * gather is streamed through tablet_read.c's merging iterator instead.
 */
#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "memtable/memtable.h"
#include "sstable/sstable.h"
#include "tablet/ikey.h"
#include "tablet/tablet.h"
#include "tablet/tablet_int.h"
#include "util/alloc.h"
#include "util/bloom.h"
#include "util/env.h"
#include "util/error.h"

/*
 * The general read of one row: a merging iterator over every source,
 * streamed through the resolver.  Point reads whose row is too large to
 * gather (read_row_gather()) fall back to it.
 */
static int
read_row_streaming(struct tablet_version *v, uint64_t snapshot,
    struct slice prefix, int64_t now, const struct cells_filter *filter,
    struct cells_row *out)
{
	struct cells_schema cs = { tablet_schema_family_policy, v->schema,
	    NULL };
	struct iter *it = NULL;
	int rc;

	if ((rc = tablet_version_iter_new(v, filter, prefix, NULL, &it)) < 0 ||
	    (rc = iter_seek(it, prefix)) < 0)
		goto out;
	if (!iter_valid(it) || !slice_starts_with(iter_key(it), prefix)) {
		out->count = 0;
		rc = BT_NOTFOUND;
		goto out;
	}
	if ((rc = cells_read_point(it, snapshot, &cs, now, filter, out)) < 0)
		goto out;
	rc = out->count > 0 ? 0 : BT_NOTFOUND;
out:
	iter_free(it);
	return rc;
}

/*
 * A point read gathers the entries of its row from every source into one
 * sorted array instead of merging iterators: no iterator, heap or block
 * iterator is allocated per source, and no source is stepped past the row.
 * Memtable entries are borrowed (the version keeps the memtables alive);
 * SSTable values are borrowed from their blocks, pinned until the row is
 * resolved, and their keys (decoded from prefix compression) are copied.
 * Past POINT_COPY_LIMIT bytes of pinned blocks (the first aside) and
 * copies, or POINT_MAX_ENTRIES entries, the read streams instead, so that
 * a huge row is not held whole twice.
 */
#define POINT_INLINE_ENTRIES	16
#define POINT_INLINE_COPIES	512
#define POINT_MAX_ENTRIES	((size_t)1 << 14)
#define POINT_COPY_LIMIT	((size_t)1 << 20)

struct point_entry {
	struct slice key, value;	/* a copied key: set by the sort */
	size_t key_off;			/* a copied key: in copies */
	uint32_t source;		/* merge order: 0 is the newest */
	bool copied;
};

struct point_read {
	struct point_entry inline_entries[POINT_INLINE_ENTRIES];
	struct point_entry *entries;
	size_t count, cap;
	uint8_t *copies;		/* SSTable keys */
	size_t copies_n, copies_cap;
	uint8_t inline_copies[POINT_INLINE_COPIES];
	struct buf *index_key, *data_key;	/* SSTable walk scratch */
	struct sst_pins pins;		/* the blocks of SSTable values */
	const struct cells_filter *filter;
	struct point_stop *stop;	/* or NULL (point_stop_init) */
	uint32_t source;
	uint32_t sources_used;		/* sources that added entries */
	bool too_big;
};

/* The key buffers are the caller's, borrowed for the gathering; the
 * filter is the read's.  pr->stop is set by point_stop_init(). */
static void
point_read_init(struct point_read *pr, struct buf *index_key,
    struct buf *data_key, const struct cells_filter *filter)
{
	pr->entries = pr->inline_entries;
	pr->count = 0;
	pr->cap = POINT_INLINE_ENTRIES;
	pr->copies = pr->inline_copies;
	pr->copies_n = 0;
	pr->copies_cap = POINT_INLINE_COPIES;
	pr->index_key = index_key;
	pr->data_key = data_key;
	sst_pins_init(&pr->pins);
	pr->filter = filter;
	pr->stop = NULL;
	pr->source = 0;
	pr->sources_used = 0;
	pr->too_big = false;
}

static void
point_read_release(struct point_read *pr)
{
	if (pr->entries != pr->inline_entries)
		bt_free(pr->entries);
	if (pr->copies != pr->inline_copies)
		bt_free(pr->copies);
	sst_pins_release(&pr->pins);
}

/* Copy key to the end of pr's copies; its offset there in *off. */
static int
point_read_copy(struct point_read *pr, struct slice key, size_t *off)
{
	if (key.n > pr->copies_cap - pr->copies_n) {
		size_t cap = pr->copies_cap * 2;
		uint8_t *n;

		while (cap - pr->copies_n < key.n)
			cap *= 2;
		if ((n = bt_malloc(cap)) == NULL)
			return -ENOMEM;
		memcpy(n, pr->copies, pr->copies_n);
		if (pr->copies != pr->inline_copies)
			bt_free(pr->copies);
		pr->copies = n;
		pr->copies_cap = cap;
	}
	memcpy(pr->copies + pr->copies_n, key.p, key.n);
	*off = pr->copies_n;
	pr->copies_n += key.n;
	return 0;
}

static int
point_read_add(struct point_read *pr, struct slice key, struct slice value,
    bool copy_key)
{
	struct point_entry *e;
	int rc;

	if (pr->count == POINT_MAX_ENTRIES) {
		pr->too_big = true;
		return 1;
	}
	if (pr->count == pr->cap) {
		size_t cap = pr->cap * 2;
		struct point_entry *n;

		if (pr->entries == pr->inline_entries) {
			if ((n = bt_malloc(cap * sizeof(*n))) == NULL)
				return -ENOMEM;
			memcpy(n, pr->entries, pr->count * sizeof(*n));
		} else if ((n = bt_realloc(pr->entries,
		    cap * sizeof(*n))) == NULL) {
			return -ENOMEM;
		}
		pr->entries = n;
		pr->cap = cap;
	}
	if (pr->count == 0 || pr->entries[pr->count - 1].source != pr->source)
		pr->sources_used++;
	e = &pr->entries[pr->count];
	e->source = pr->source;
	e->copied = copy_key;
	e->value = value;
	if (copy_key) {
		/* The block being walked is counted in pins.bytes before it
		 * is pinned; the first one is free, however large: it holds
		 * no more than a copy of its values would. */
		if (pr->copies_n + key.n +
		    (pr->pins.count > 0 ? pr->pins.bytes : 0) >
		    POINT_COPY_LIMIT) {
			pr->too_big = true;
			return 1;
		}
		e->key.n = key.n;
		if ((rc = point_read_copy(pr, key, &e->key_off)) < 0)
			return rc;
	} else {
		e->key = key;
	}
	pr->count++;
	return 0;
}

static int
point_entry_compare(const void *a, const void *b)
{
	const struct point_entry *x = a, *y = b;
	int c = slice_compare(x->key, y->key);

	if (c != 0)
		return c;
	return x->source < y->source ? -1 : x->source > y->source;
}

/*
 * Turn copy offsets into slices, sort by key (the newer source first on a
 * tie) and keep the first of equal keys, as the merging iterator does.
 * One source's entries are already in order and unique.
 */
static void
point_read_sort(struct point_read *pr)
{
	size_t n = 0;

	for (size_t i = 0; i < pr->count; i++) {
		struct point_entry *e = &pr->entries[i];

		if (e->copied)
			e->key.p = pr->copies + e->key_off;
	}
	if (pr->sources_used < 2)
		return;
	qsort(pr->entries, pr->count, sizeof(*pr->entries),
	    point_entry_compare);
	for (size_t i = 0; i < pr->count; i++)
		if (n == 0 || !slice_equal(pr->entries[i].key,
		    pr->entries[n - 1].key))
			pr->entries[n++] = pr->entries[i];
	pr->count = n;
}

/* An iterator over a point read's sorted entries, living on the stack
 * (never iter_free()d). */
struct point_iter {
	struct iter base;
	const struct point_entry *e;
	size_t n, i;
};

static int
point_iter_seek_first(struct iter *it)
{
	((struct point_iter *)it)->i = 0;
	return 0;
}

static int
point_iter_seek(struct iter *it, struct slice target)
{
	struct point_iter *pi = (struct point_iter *)it;
	size_t lo = 0, hi = pi->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (slice_compare(pi->e[mid].key, target) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	pi->i = lo;
	return 0;
}

static int
point_iter_next(struct iter *it)
{
	struct point_iter *pi = (struct point_iter *)it;

	if (pi->i < pi->n)
		pi->i++;
	return 0;
}

static bool
point_iter_valid(const struct iter *it)
{
	const struct point_iter *pi = (const struct point_iter *)it;

	return pi->i < pi->n;
}

static struct slice
point_iter_key(const struct iter *it)
{
	const struct point_iter *pi = (const struct point_iter *)it;

	assert(pi->i < pi->n);	/* util/iter.h: only while valid */
	return pi->e[pi->i].key;
}

static struct slice
point_iter_value(const struct iter *it)
{
	const struct point_iter *pi = (const struct point_iter *)it;

	assert(pi->i < pi->n);
	return pi->e[pi->i].value;
}

static void
point_iter_free(struct iter *it)
{
	(void)it;
}

static const struct iter_ops point_iter_ops = {
	.seek_first = point_iter_seek_first,
	.seek = point_iter_seek,
	.next = point_iter_next,
	.valid = point_iter_valid,
	.key = point_iter_key,
	.value = point_iter_value,
	.free = point_iter_free,
};

static int
point_read_visit_borrow(void *arg, struct slice key, struct slice value)
{
	return point_read_add(arg, key, value, false);
}

/*
 * A read of one column's newest version (cells_per_column 1, one column
 * with its qualifier) stops visiting a memtable, or an SSTable, at the
 * column's first put that the read can see (at the snapshot, in the time
 * range, not older than its family), as long as no delete marker has been
 * gathered.  A source lists a column's versions newest first (timestamp,
 * then sequence number), and what could mask that put sorts before it: a
 * row, family or column delete, or a delete of its version written after
 * it.  The versions after it in that source are older, so never the
 * newest, and the markers after it touch only those.  An older source
 * (the frozen memtable, the files) may hold a put newer in time, so it is
 * still visited.  A counter incremented in place then visits one entry of
 * each memtable, not every version it holds; a read of a file's newest
 * version reads no block of its older versions.
 */
struct point_stop {
	struct point_read *pr;
	struct slice column;	/* esc(row) esc(family) esc(qualifier) */
	uint64_t snapshot;
	uint64_t created_seq;	/* the family's */
	int64_t min_ts, max_ts;
	bool armed;		/* no marker gathered yet */
};

#define POINT_STOP 2	/* a visit's "the rest of this source is moot" */

/* Whether key is a version of ps's column (its prefix, then the
 * timestamp and trailer). */
static bool
point_stop_column_has(const struct point_stop *ps, struct slice key)
{
	return key.n == ps->column.n + 16 &&
	    memcmp(key.p, ps->column.p, ps->column.n) == 0;
}

/* Whether key, just gathered, is the put at which ps stops its source
 * (ps disarms at a delete marker). */
static bool
point_stop_reached(struct point_stop *ps, struct slice key)
{
	uint64_t trailer, seq;
	int64_t ts;

	if (!ps->armed)
		return false;
	/* A row delete of a short row is under 16 bytes. */
	if (key.n < 8 || ((trailer = ikey_trailer(key)) & 0xff) != IKEY_PUT) {
		ps->armed = false;
		return false;
	}
	if (!point_stop_column_has(ps, key))
		return false;
	seq = trailer >> 8;
	ts = (int64_t)~get_be64(key.p + ps->column.n);
	return seq <= ps->snapshot && seq >= ps->created_seq &&
	    ts >= ps->min_ts && ts <= ps->max_ts;
}

static int
point_read_visit_stop(void *arg, struct slice key, struct slice value)
{
	struct point_stop *ps = arg;
	int rc;

	if ((rc = point_read_add(ps->pr, key, value, false)) != 0)
		return rc;
	return point_stop_reached(ps, key) ? POINT_STOP : 0;
}

/* An SSTable's entry: its key is copied (the walk decodes it into a
 * scratch buffer), and a read of one column's newest version stops the
 * file at the same put as a memtable (the argument above holds for one
 * file's entries as well). */
static int
point_read_visit_file(void *arg, struct slice key, struct slice value)
{
	struct point_read *pr = arg;
	int rc;

	if ((rc = point_read_add(pr, key, value, true)) != 0)
		return rc;
	return pr->stop != NULL && point_stop_reached(pr->stop, key) ?
	    POINT_STOP : 0;
}

/*
 * Whether the read needs the value of key, an SSTable entry that is a
 * block of its own (the walk reads that block only then): not for a
 * keys-only read, nor for a delete marker (no value), a put outside the
 * time range or, in a read of one column's newest version, a put of
 * another column.  Resolution never looks at the value of a version that
 * it does not return, and returns none of these.
 */
static bool
point_read_wants_value(void *arg, struct slice key)
{
	const struct point_read *pr = arg;
	const struct cells_filter *f = pr->filter;
	const struct point_stop *ps = pr->stop;
	struct slice column;
	uint64_t ts;

	if ((f->keys_only && !cells_filter_on_values(f)) ||
	    !ikey_put_column(key, &column, &ts) ||
	    (int64_t)ts < f->min_ts ||
	    (f->has_max_ts && (int64_t)ts > f->max_ts))
		return false;
	return ps == NULL || point_stop_column_has(ps, key);
}

/* Add the entries of one memtable under prefix, borrowed (the version
 * keeps the memtable alive), up to where ps (NULL: none) stops.  0, 1
 * when there are too many, or a negative error. */
static int
point_read_memtable(struct point_read *pr, struct memtable *m,
    struct slice prefix, struct point_stop *ps)
{
	int rc;

	if (ps == NULL)
		return memtable_visit_prefix(m, prefix,
		    point_read_visit_borrow, pr);
	rc = memtable_visit_prefix(m, prefix, point_read_visit_stop, ps);
	return rc == POINT_STOP ? 0 : rc;
}

/* Arm ps for a read of row with filter f when it reads one column's
 * newest version, building the column's prefix in scratch: ps, or NULL. */
static struct point_stop *
point_stop_init(struct point_stop *ps, struct point_read *pr,
    const struct tablet_version *v, uint64_t snapshot, struct slice row,
    const struct cells_filter *f, struct buf *scratch)
{
	const struct tablet_family *fam;

	if (f->cells_per_column != 1 || f->column_count != 1 ||
	    cells_filter_skips_versions(f) ||
	    !f->columns[0].has_qualifier ||
	    f->columns[0].qualifier_regex != NULL ||
	    (fam = tablet_schema_family(v->schema,
	    f->columns[0].family)) == NULL)
		return NULL;
	buf_clear(scratch);
	if (ikey_append_column_prefix(row, f->columns[0].family,
	    f->columns[0].qualifier, scratch) < 0)
		return NULL;
	ps->pr = pr;
	ps->column = buf_slice(scratch);
	ps->snapshot = snapshot;
	ps->created_seq = fam->created_seq;
	ps->min_ts = f->min_ts;
	ps->max_ts = f->has_max_ts ? f->max_ts : INT64_MAX;
	ps->armed = true;
	pr->stop = ps;
	return ps;
}

/*
 * What the entries gathered so far by a newest-version read
 * (cells_per_column 1) settle: for up to READ_COVER_COLUMNS columns, the
 * newest timestamp of a put the read can see (at the snapshot, in the
 * filter's time range), with that put's sequence number and whether it
 * came from a memtable.  An SSTable F whose bounds (sst_reader_bounds)
 * hold no delete marker and only columns settled here by puts P above its
 * largest timestamp and above its largest sequence number
 * (sst_reader_sequences) cannot change the answer: each of its versions
 * is older than a visible put of the same column, so never the newest; it
 * masks nothing, having no markers; what would hide P but not F's
 * versions of the column is a version delete of P, which has a higher
 * sequence number than P; and what would hide P for good (a delete of the
 * column, family or row, a family created after P) hides F's older
 * entries as well, as a GC policy that condemns P (by age or by newer
 * versions) condemns F's versions, older in time.  So F is skipped when
 * no source the read has not gathered can hold a marker above the
 * smallest such P: for a P from a memtable, every entry above it is in
 * the memtables, which are gathered first (every SSTable entry is older
 * than every memtable entry); for a P from an SSTable, each file not yet
 * visited must have no markers
 * (complete bounds), not hold the row (its Bloom filter), or hold only
 * entries below P (its sequence range).  The files' order in the version
 * (newest first by number) is not relied on: compaction outputs, and the
 * files of split or merged tablets, may interleave in sequence.  Any
 * delete marker gathered voids the cover.  A file skipped is one block
 * read (and often one cache miss) fewer: under rewrites the row of a read
 * is often in a memtable and in the files, or in several files.
 */
#define READ_COVER_COLUMNS	4

struct read_cover {
	size_t entry[READ_COVER_COLUMNS];	/* a put of the column, in pr */
	uint64_t ts[READ_COVER_COLUMNS];
	uint64_t seq[READ_COVER_COLUMNS];
	bool from_file[READ_COVER_COLUMNS];
	size_t count;
	size_t folded;			/* pr's entries folded in */
	uint32_t file_source;		/* pr sources from here are files */
	bool dead;		/* a marker, or a read of all versions */
	bool tail_known;
	uint64_t tail_max_seq;		/* of markers in files not visited */
};

/* The key of pr's i-th entry as it is now (copies move as they grow). */
static struct slice
point_read_key(const struct point_read *pr, size_t i)
{
	const struct point_entry *e = &pr->entries[i];

	return e->copied ? slice_make(pr->copies + e->key_off, e->key.n) :
	    e->key;
}

/* The column of a put's key of the row whose prefix is prefix_n bytes:
 * esc(family) esc(qualifier), as ikey_put_column() gives it. */
static struct slice
read_cover_column(const struct point_read *pr, size_t i, size_t prefix_n)
{
	struct slice key = point_read_key(pr, i);

	return slice_make(key.p + prefix_n, key.n - prefix_n - 16);
}

static void
read_cover_init(struct read_cover *rc, const struct cells_filter *f)
{
	rc->count = 0;
	rc->folded = 0;
	rc->file_source = 0;
	rc->dead = f->cells_per_column != 1 || cells_filter_skips_versions(f);
	rc->tail_known = false;
	rc->tail_max_seq = 0;
}

/* Fold the entries pr gathered since the last call into rc. */
static void
read_cover_fold(struct read_cover *rc, const struct point_read *pr,
    struct slice prefix, uint64_t snapshot, const struct cells_filter *f)
{
	for (; !rc->dead && rc->folded < pr->count; rc->folded++) {
		size_t i = rc->folded, j;
		struct slice key = point_read_key(pr, i), column;
		uint64_t ts, trailer, seq;

		if (key.n < prefix.n + 16) {
			rc->dead = true;
			return;
		}
		trailer = ikey_trailer(key);
		if ((trailer & 0xff) != IKEY_PUT) {
			rc->dead = true;	/* a delete marker */
			return;
		}
		seq = trailer >> 8;
		if (seq > snapshot || !ikey_put_column(key, &column, &ts) ||
		    (int64_t)ts < f->min_ts ||
		    (f->has_max_ts && (int64_t)ts > f->max_ts))
			continue;
		for (j = 0; j < rc->count; j++)
			if (slice_equal(read_cover_column(pr, rc->entry[j],
			    prefix.n), column))
				break;
		if (j == rc->count) {
			if (j == READ_COVER_COLUMNS)
				continue;
			rc->count++;
		} else if (ts < rc->ts[j] ||
		    (ts == rc->ts[j] && seq <= rc->seq[j])) {
			continue;
		}
		rc->entry[j] = i;
		rc->ts[j] = ts;
		rc->seq[j] = seq;
		rc->from_file[j] = pr->entries[i].source >= rc->file_source;
	}
}

/*
 * The largest sequence number a delete marker of the row (prefix, Bloom
 * hash hash) may have in the files after the first `from' of v that the
 * read needs; UINT64_MAX when one cannot tell.
 */
static uint64_t
read_cover_tail_max_seq(const struct tablet_version *v,
    const struct cells_filter *f, struct slice prefix, uint64_t hash,
    size_t from)
{
	uint64_t max = 0, lo, hi, max_ts;
	size_t n;

	for (size_t i = from; i < v->file_count; i++) {
		const struct tablet_file *tf = &v->files[i];

		if (!tablet_filter_needs_group(v->schema, f, tf->group))
			continue;
		if (tf->reader == NULL)
			return UINT64_MAX;
		if (sst_reader_bounds(tf->reader, &n, &max_ts) ||
		    sst_reader_ends_before(tf->reader, prefix) ||
		    !sst_reader_may_contain_hash(tf->reader, hash))
			continue;	/* no markers, or not the row */
		if (!sst_reader_sequences(tf->reader, &lo, &hi))
			return UINT64_MAX;
		if (hi > max)
			max = hi;
	}
	return max;
}

/*
 * Whether rc settles every column of v's i-th file (see read_cover),
 * whose reader is r and whose Bloom filter passed the row.
 */
static bool
read_cover_settles(struct read_cover *rc, const struct point_read *pr,
    struct slice prefix, const struct tablet_version *v, size_t i,
    const struct cells_filter *f, uint64_t hash)
{
	const struct sst_reader *r = v->files[i].reader;
	uint64_t max_ts, min_seq, max_seq, file_put_seq = UINT64_MAX;
	size_t n;

	if (rc->dead || rc->count == 0 ||
	    !sst_reader_bounds(r, &n, &max_ts) || n == 0 ||
	    !sst_reader_sequences(r, &min_seq, &max_seq))
		return false;
	for (size_t k = 0; k < n; k++) {
		struct slice c = sst_reader_bounds_column(r, k);
		size_t j;

		for (j = 0; j < rc->count; j++)
			if (slice_equal(read_cover_column(pr, rc->entry[j],
			    prefix.n), c))
				break;
		if (j == rc->count || rc->ts[j] <= max_ts ||
		    rc->seq[j] <= max_seq)
			return false;
		if (rc->from_file[j] && rc->seq[j] < file_put_seq)
			file_put_seq = rc->seq[j];
	}
	if (file_put_seq == UINT64_MAX)
		return true;		/* the memtables settle it */
	/* Computed once, from the first file that needs it: the files after
	 * a later one are among those. */
	if (!rc->tail_known) {
		rc->tail_max_seq = read_cover_tail_max_seq(v, f, prefix, hash,
		    i + 1);
		rc->tail_known = true;
	}
	return rc->tail_max_seq < file_put_seq;
}

/*
 * Gather the row's entries from every source the filter needs, less the
 * SSTables that end before the row (their last key, in memory, answers
 * without a filter probe: a row past the tablet's data costs no more than
 * a look at each file's end) and those that the entries gathered before
 * them settle (read_cover).  The SSTables visited are counted in *charge.
 * 0, 1 when the row is too large to gather, or a negative error.
 */
static int
read_row_gather(struct tablet_version *v, uint64_t snapshot,
    const struct cells_filter *f, struct slice prefix, struct point_read *pr,
    struct point_stop *ps, struct tablet_charge *charge)
{
	uint64_t hash = 0;
	bool hashed = false;
	struct read_cover rc;
	int r;

	if ((r = point_read_memtable(pr, v->mem, prefix, ps)) != 0)
		return r;
	pr->source++;
	if (v->imm != NULL) {
		if ((r = point_read_memtable(pr, v->imm, prefix, ps)) != 0)
			return r;
		pr->source++;
	}
	/* T5: a row past every file's last key is in no file. */
	if (v->files_end != NULL && sst_reader_ends_before(v->files_end,
	    prefix))
		return 0;
	read_cover_init(&rc, f);
	rc.file_source = pr->source;
	for (size_t i = 0; i < v->file_count; i++) {
		const struct tablet_file *tf = &v->files[i];

		if (!tablet_filter_needs_group(v->schema, f, tf->group))
			continue;
		/* Damaged: it may hold any row of the tablet. */
		if (tf->reader == NULL)
			return tablet_file_error(tf);
		if (sst_reader_ends_before(tf->reader, prefix))
			continue;
		if (!hashed) {
			hash = bloom_hash(prefix);
			hashed = true;
		}
		if (!sst_reader_may_contain_hash(tf->reader, hash))
			continue;
		if (!rc.dead && rc.folded < pr->count)
			read_cover_fold(&rc, pr, prefix, snapshot, f);
		if (!rc.dead && rc.count > 0 &&
		    read_cover_settles(&rc, pr, prefix, v, i, f, hash))
			continue;
		tablet_charge_visit(charge, tf->group);
		if ((r = sst_reader_visit_prefix(tf->reader, prefix,
		    point_read_wants_value, pr->index_key, pr->data_key,
		    &pr->pins, point_read_visit_file, pr)) < 0)
			return r;
		if (pr->too_big)
			return 1;
		pr->source++;
	}
	return 0;
}

/* now, or, when it is TABLET_NOW_UNREAD, the env's clock if v's schema
 * has an age policy (0 otherwise: no policy would look at it). */
static int64_t
read_now(const struct tablet *t, const struct tablet_version *v,
    int64_t now)
{
	if (now != TABLET_NOW_UNREAD)
		return now;
	return v->schema->uses_age ? (int64_t)env_now_micros(t->tenv.env) : 0;
}

/*
 * The row prefix, the SSTable walk's key buffers and a one-column read's
 * column prefix live in out's resolution buffers (key, cur_family,
 * cur_qualifier, seek_key), which the resolver sets before it uses them:
 * what they grow to here is then reused, not allocated again.
 */
static int
tablet_read_row_served(struct tablet *t, uint64_t snapshot, struct slice row,
    int64_t now, const struct cells_filter *filter, struct cells_row *out)
{
	struct tablet_version *v = tablet_version_get(t);
	struct cells_schema cs = { tablet_schema_family_policy, v->schema,
	    NULL };
	struct point_iter pit = { { &point_iter_ops }, NULL, 0, 0 };
	struct tablet_charge charge = TABLET_CHARGE_INIT;
	struct point_read pr;
	struct point_stop stop, *ps;
	struct slice prefix;
	int rc;

	point_read_init(&pr, &out->cur_family, &out->cur_qualifier, filter);
	if (filter->row_regex != NULL &&
	    (rc = regex_match(filter->row_regex, row)) <= 0) {
		out->count = 0;
		if (rc == 0)
			rc = BT_NOTFOUND;
		goto out;
	}
	buf_clear(&out->key);
	if ((rc = ikey_append_row_prefix(row, &out->key)) < 0)
		goto out;
	prefix = buf_slice(&out->key);
	ps = point_stop_init(&stop, &pr, v, snapshot, row, filter,
	    &out->seek_key);
	rc = read_row_gather(v, snapshot, filter, prefix, &pr, ps, &charge);
	if (tablet_charge_due(&charge))
		tablet_read_charge(t, charge.group, 1);
	if (rc < 0)
		goto out;
	if (rc == 1) {
		sst_pins_release(&pr.pins);
		rc = read_row_streaming(v, snapshot, prefix,
		    read_now(t, v, now), filter, out);
		goto out;
	}
	point_read_sort(&pr);
	if (pr.count == 0) {
		out->count = 0;
		rc = BT_NOTFOUND;
		goto out;
	}
	pit.e = pr.entries;
	pit.n = pr.count;
	if ((rc = cells_read_point(&pit.base, snapshot, &cs,
	    read_now(t, v, now), filter, out)) < 0)
		goto out;
	rc = out->count > 0 ? 0 : BT_NOTFOUND;
out:
	point_read_release(&pr);
	tablet_version_unref(v);
	return rc;
}

int
tablet_read_row(struct tablet *t, uint64_t snapshot, struct slice row,
    int64_t now, const struct cells_filter *filter, struct cells_row *out)
{
	if (!tablet_serving(t))
		return tablet_not_serving(t);
	return tablet_read_row_served(t, snapshot, row, now, filter, out);
}
