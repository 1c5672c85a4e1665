/*
 * tablet_read.c - a tablet's read sources and its scans (tablet.h): the
 * merging iterator over a version's memtables and the SSTables a filter
 * needs, and a scan that resolves it row by row (versions, deletes and
 * GC policies in cells.c).  Point reads are tablet_point.c's, which falls
 * back on the iterator here for rows too large to gather.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memtable/memtable.h"
#include "sstable/sstable.h"
#include "tablet/ikey.h"
#include "tablet/merge.h"
#include "tablet/tablet.h"
#include "tablet/tablet_int.h"
#include "util/alloc.h"
#include "util/error.h"

/* Whether a read with this filter needs group g's files. */
bool
tablet_filter_needs_group(const struct tablet_schema *s,
    const struct cells_filter *f, size_t g)
{
	if (g == NO_GROUP)
		return false;
	if (f->columns == NULL)
		return true;
	for (size_t i = 0; i < f->column_count; i++) {
		const struct tablet_family *tf = tablet_schema_family(s,
		    f->columns[i].family);

		if (tf != NULL && tf->group == g)
			return true;
	}
	return false;
}

/*
 * A merging iterator over a version's memtables and the SSTables that the
 * filter needs; when row_prefix is not empty, SSTables whose Bloom filter
 * rules the row out are left out.  The SSTables opened are counted in
 * *charge (NULL: not counted).
 *
 * A memtable that is empty now is left out too: every read through this
 * iterator is at a snapshot no newer than now (the server's visible_seq,
 * stored only after the memtable entries it covers were counted), so an
 * entry added later is one it would skip.  A table read after a flush is
 * then often one SSTable, iterated without a merge over it.
 */
int
tablet_version_iter_new(struct tablet_version *v,
    const struct cells_filter *f, struct slice row_prefix,
    struct tablet_charge *charge, struct iter **out)
{
	struct iter **children;
	size_t n = 0;
	int rc;

	if ((children = bt_calloc(v->file_count + 2,
	    sizeof(*children))) == NULL)
		return -ENOMEM;
	if (memtable_count(v->mem) > 0) {
		if ((rc = memtable_iter_new(v->mem, &children[n])) < 0)
			goto out_children;
		n++;
	}
	if (v->imm != NULL && memtable_count(v->imm) > 0) {
		if ((rc = memtable_iter_new(v->imm, &children[n])) < 0)
			goto out_children;
		n++;
	}
	for (size_t i = 0; i < v->file_count; i++) {
		const struct tablet_file *tf = &v->files[i];

		if (!tablet_filter_needs_group(v->schema, f, tf->group))
			continue;
		/* The catalog records no key range: the damaged file may
		 * hold any row of the tablet. */
		if (tf->reader == NULL) {
			rc = tablet_file_error(tf);
			goto out_children;
		}
		if (row_prefix.n > 0 &&
		    !sst_reader_may_contain(tf->reader, row_prefix))
			continue;
		if ((rc = sst_reader_iter_new(tf->reader,
		    (f->no_cache_fill ? SST_ITER_NO_CACHE_FILL : 0) |
		    (f->keys_only && !cells_filter_on_values(f) ?
		    SST_ITER_KEYS_ONLY : 0),
		    &children[n])) < 0)
			goto out_children;
		n++;
		if (charge != NULL)
			tablet_charge_visit(charge, tf->group);
	}
	rc = merge_iter_new(children, n, out);
	bt_free(children);
	return rc;
out_children:
	for (size_t i = 0; i < n; i++)
		iter_free(children[i]);
	bt_free(children);
	return rc;
}

struct tablet_scan {
	struct tablet *t;		/* referenced, for the charge */
	struct tablet_version *v;
	struct iter *it;
	struct cells_schema cs;
	const struct cells_filter *filter;
	uint64_t snapshot;
	int64_t now;
	struct buf start;
	bool start_exclusive;
	struct buf end;
	bool done;
	/* The family last looked up (cells ask once a row, and rows tend to
	 * hold the same families): NULL or one of v->schema's. */
	const struct tablet_family *last_family;
	size_t last_family_len;
	uint64_t pin_epoch;	/* of the row being read (cells.h) */
	/* cs's memo: answers of sc->v->schema, which never change */
	struct cells_family_memo memo;
	/* The group charged for the scan's files, or NO_GROUP when the
	 * scan reads one file of a group (no charge); and the bytes of rows
	 * returned since the last charge (TABLET_SCAN_SAMPLE_BYTES). */
	size_t charge_group;
	size_t charge_bytes;
	/* The row regex's scratch: a key decoded, where a skip seeks. */
	struct buf row_scratch;
	struct buf skip_key;
};

/* The cells_schema callback of a scan: tablet_schema_family_policy() with the
 * last answer remembered. */
static bool
scan_family_policy(void *arg, struct slice family,
    const struct gc_policy **policy, uint64_t *created_seq)
{
	struct tablet_scan *sc = arg;
	const struct tablet_family *f = sc->last_family;

	if (f == NULL || !slice_equal(slice_make(f->name,
	    sc->last_family_len), family)) {
		if ((f = tablet_schema_family(sc->v->schema, family)) == NULL)
			return false;
		sc->last_family = f;
		sc->last_family_len = strlen(f->name);
	}
	*policy = f->policy;
	*created_seq = f->created_seq;
	return true;
}

int
tablet_scan_open(struct tablet *t, uint64_t snapshot, struct slice start,
    bool start_exclusive, struct slice end, int64_t now,
    const struct cells_filter *filter, struct tablet_scan **out)
{
	struct tablet_charge charge = TABLET_CHARGE_INIT;
	struct tablet_scan *sc;
	struct buf prefix;
	int rc = -ENOMEM;

	if (!tablet_serving(t))
		return tablet_not_serving(t);
	if ((sc = bt_calloc(1, sizeof(*sc))) == NULL)
		return -ENOMEM;
	buf_init(&prefix);
	buf_init(&sc->start);
	buf_init(&sc->end);
	buf_init(&sc->row_scratch);
	buf_init(&sc->skip_key);
	sc->v = tablet_version_get(t);
	sc->t = t;
	tablet_ref(t);
	sc->charge_group = NO_GROUP;
	sc->cs.family_policy = scan_family_policy;
	sc->cs.arg = sc;
	sc->cs.memo = &sc->memo;	/* zeroed with sc */
	sc->filter = filter;
	sc->snapshot = snapshot;
	sc->now = now;
	sc->start_exclusive = start_exclusive;
	if (buf_set(&sc->start, start.p, start.n) < 0 ||
	    buf_set(&sc->end, end.p, end.n) < 0)
		goto out_free;
	if ((rc = tablet_version_iter_new(sc->v, filter, slice_make("", 0),
	    &charge, &sc->it)) < 0 ||
	    (rc = tablet_range_wrap(t, &sc->it)) < 0)
		goto out_free;
	if (tablet_charge_due(&charge)) {
		sc->charge_group = charge.group;
		tablet_read_charge(t, charge.group, 1);
	}
	if (start.n > 0) {
		if ((rc = ikey_append_row_prefix(start, &prefix)) < 0 ||
		    (rc = iter_seek(sc->it, buf_slice(&prefix))) < 0)
			goto out_free;
	} else if ((rc = iter_seek_first(sc->it)) < 0) {
		goto out_free;
	}
	buf_release(&prefix);
	*out = sc;
	return 0;
out_free:
	buf_release(&prefix);
	tablet_scan_close(sc);
	return rc;
}

/*
 * A long scan over several files is charged once per
 * TABLET_SCAN_SAMPLE_BYTES of rows it returns (LevelDB samples its
 * iterators likewise): keys and values, the bytes the scan consumed.
 */
static void
scan_charge_row(struct tablet_scan *sc, const struct cells_row *out)
{
	size_t bytes = out->key.n;

	for (size_t i = 0; i < out->count; i++) {
		struct cell c;

		cells_row_get(out, i, &c);
		bytes += c.family.n + c.qualifier.n + c.value.n;
	}
	sc->charge_bytes += bytes;
	if (sc->charge_bytes < TABLET_SCAN_SAMPLE_BYTES)
		return;
	sc->charge_bytes -= TABLET_SCAN_SAMPLE_BYTES;
	tablet_read_charge(sc->t, sc->charge_group, 1);
}

/*
 * Step the iterator over the rows whose key the row regex does not
 * match, from their first key alone (cells_skip_row()), up to the first
 * row it matches or past the scan's end: 0, or a negative error.
 */
static int
scan_skip_unmatched_rows(struct tablet_scan *sc)
{
	struct ikey k;
	int rc;

	while (iter_valid(sc->it)) {
		struct slice key = iter_key(sc->it);
		size_t prefix_n = ikey_row_prefix_length(key);

		if (prefix_n == 0 ||
		    ikey_decode(key, &k, &sc->row_scratch) < 0)
			return bt_error_set(BT_ECORRUPT,
			    "tablet: internal key does not decode");
		if (sc->end.n > 0 &&
		    slice_compare(k.row, buf_slice(&sc->end)) >= 0)
			return 0;
		if ((rc = regex_match(sc->filter->row_regex, k.row)) != 0)
			return rc < 0 ? rc : 0;
		if ((rc = cells_skip_row(sc->it, slice_make(key.p, prefix_n),
		    &sc->skip_key)) < 0)
			return rc;
	}
	return 0;
}

int
tablet_scan_next(struct tablet_scan *sc, struct cells_row *out)
{
	int rc;

	while (!sc->done) {
		if (sc->filter->row_regex != NULL &&
		    (rc = scan_skip_unmatched_rows(sc)) < 0)
			return rc;
		/* A new epoch: the pins of the last row (whose values are no
		 * longer needed) go when this one pins. */
		if (out->lend_values)
			out->pin_epoch = ++sc->pin_epoch;
		rc = cells_read_row(sc->it, sc->snapshot, &sc->cs, sc->now,
		    sc->filter, out);
		if (rc == BT_DONE)
			break;
		if (rc < 0)
			return rc;
		if (sc->end.n > 0 &&
		    slice_compare(buf_slice(&out->key), buf_slice(&sc->end)) >= 0)
			break;
		if (sc->start_exclusive &&
		    slice_equal(buf_slice(&out->key), buf_slice(&sc->start)))
			continue;
		if (out->count > 0) {
			if (sc->charge_group != NO_GROUP)
				scan_charge_row(sc, out);
			return 0;
		}
	}
	sc->done = true;
	return BT_DONE;
}

void
tablet_scan_close(struct tablet_scan *sc)
{
	if (sc == NULL)
		return;
	iter_free(sc->it);
	tablet_version_unref(sc->v);
	tablet_unref(sc->t);
	buf_release(&sc->start);
	buf_release(&sc->end);
	buf_release(&sc->row_scratch);
	buf_release(&sc->skip_key);
	bt_free(sc);
}

