/*
 * tablet_split.c - splitting and merging tablets (tablet.h): choosing a
 * split row, checking that a tablet's files hold only its own rows before
 * a merge, and making the tablets of a split or merge, which share their
 * parents' SSTables rather than copying them (the range iterator hides
 * the rows outside each one).
 *
 * It builds on tablet.c's versions and files and is not called back by
 * it.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "memtable/memtable.h"
#include "sstable/sstable.h"
#include "tablet/ikey.h"
#include "tablet/tablet.h"
#include "tablet/tablet_int.h"
#include "util/error.h"

/* Add a reference to file f of another tablet to t's version, renamed as
 * t's; a file t already has is skipped. */
static void
version_add_shared(struct tablet *t, const struct tablet_file *f)
{
	struct tablet_version *v = t->current;

	for (size_t i = 0; i < v->file_count; i++)
		if (v->files[i].meta.number == f->meta.number)
			return;
	v->files[v->file_count] = *f;
	v->files[v->file_count].meta.tablet_id = t->id;
	tablet_file_ref(f);
	v->file_count++;
}

static int
file_newer_first(const void *a, const void *b)
{
	const struct tablet_file *x = a, *y = b;

	return x->meta.number < y->meta.number ? 1 :
	    x->meta.number > y->meta.number ? -1 : 0;
}

/*
 * A tablet for ct that serves the files of the given tablets (their
 * memtables must be empty): the in-memory side of a split (one parent,
 * each child made in turn) or a merge (two parents, one child).  The
 * files are shared, not copied; the range iterator hides what lies
 * outside the new tablet's rows.
 */
static int
tablet_from(const struct catalog_tablet *ct, struct tablet *const *parents,
    size_t parent_count, struct tablet **out)
{
	struct tablet_version *pv[2];
	struct tablet *t;
	size_t total = 0;
	int rc;

	if (parent_count == 0 || parent_count > 2)
		return -EINVAL;
	for (size_t i = 0; i < parent_count; i++) {
		pv[i] = tablet_version_get(parents[i]);
		assert(memtable_count(pv[i]->mem) == 0 && pv[i]->imm == NULL);
		total += pv[i]->file_count;
	}
	if ((rc = tablet_new(&parents[0]->tenv, ct, pv[0]->schema, &t)) < 0)
		goto out;
	if ((rc = tablet_version_files_alloc(t->current, total)) < 0) {
		tablet_unref(t);
		goto out;
	}
	for (size_t i = 0; i < parent_count; i++)
		for (size_t j = 0; j < pv[i]->file_count; j++)
			version_add_shared(t, &pv[i]->files[j]);
	qsort(t->current->files, t->current->file_count,
	    sizeof(*t->current->files), file_newer_first);
	tablet_seek_reset(t, t->current);
	*out = t;
out:
	for (size_t i = 0; i < parent_count; i++)
		tablet_version_unref(pv[i]);
	return rc;
}

int
tablet_split(struct tablet *t, const struct catalog_tablet *left,
    const struct catalog_tablet *right, struct tablet **leftp,
    struct tablet **rightp)
{
	struct tablet *l, *r;
	int rc;

	if (!tablet_serving(t))
		return bt_error_set(-EBUSY, "tablet %" PRIu64 ": split of a "
		    "tablet not served", t->id);
	if (memtable_count(t->mem) > 0 || tablet_has_frozen(t))
		return bt_error_set(-EBUSY, "tablet %" PRIu64 ": split with "
		    "unflushed data", t->id);
	if ((rc = tablet_from(left, &t, 1, &l)) < 0)
		return rc;
	if ((rc = tablet_from(right, &t, 1, &r)) < 0) {
		tablet_unref(l);
		return rc;
	}
	*leftp = l;
	*rightp = r;
	return 0;
}

int
tablet_merge(struct tablet *left, struct tablet *right,
    const struct catalog_tablet *ct, struct tablet **out)
{
	struct tablet *parents[2] = { left, right };

	for (size_t i = 0; i < 2; i++)
		if (!tablet_serving(parents[i]))
			return bt_error_set(-EBUSY, "tablet %" PRIu64 ": merge "
			    "of a tablet not served", parents[i]->id);
	for (size_t i = 0; i < 2; i++)
		if (memtable_count(parents[i]->mem) > 0 ||
		    tablet_has_frozen(parents[i]))
			return bt_error_set(-EBUSY, "tablet %" PRIu64 ": merge "
			    "with unflushed data", parents[i]->id);
	return tablet_from(ct, parents, 2, out);
}

void
tablet_renumber(struct tablet *t, uint64_t id)
{
	struct tablet_version *v = t->current;

	assert(t->id == 0 && id != 0);
	assert(atomic_load(&t->refs) == 1 && atomic_load(&v->refs) == 1);
	t->id = id;
	for (size_t i = 0; i < v->file_count; i++)
		v->files[i].meta.tablet_id = id;
}

/* ---- Splitting and merging ---- */


int
tablet_split_row(struct tablet *t, struct buf *row)
{
	struct tablet_version *v = tablet_version_get(t);
	struct slice lo = buf_slice(&t->key_lo), hi = buf_slice(&t->key_hi);
	struct buf key, scratch;
	uint64_t best = 0;
	size_t pick = SIZE_MAX;
	struct ikey k;
	int rc;

	buf_init(&key);
	buf_init(&scratch);
	/* The middle of the file holding most of the tablet's bytes. */
	for (size_t i = 0; i < v->file_count; i++) {
		uint64_t n = v->files[i].reader == NULL ? 0 :
		    sst_reader_range_size(v->files[i].reader, lo, hi);

		if (n > best) {
			best = n;
			pick = i;
		}
	}
	rc = BT_NOTFOUND;
	if (pick == SIZE_MAX || (rc = sst_reader_middle_key(
	    v->files[pick].reader, lo, hi, &key)) != 0)
		goto out;
	if ((rc = ikey_decode(buf_slice(&key), &k, &scratch)) < 0)
		goto out;
	/* Both halves must be non-empty ranges: start < row < end. */
	if (slice_compare(k.row, buf_slice(&t->start)) <= 0 ||
	    (t->end.n > 0 && slice_compare(k.row, buf_slice(&t->end)) >= 0)) {
		rc = BT_NOTFOUND;
		goto out;
	}
	rc = buf_set(row, k.row.p, k.row.n);
out:
	buf_release(&key);
	buf_release(&scratch);
	tablet_version_unref(v);
	return rc;
}

int
tablet_files_in_range(struct tablet *t)
{
	struct tablet_version *v = tablet_version_get(t);
	struct buf first, last;
	int rc = 1;

	buf_init(&first);
	buf_init(&last);
	for (size_t i = 0; i < v->file_count && rc == 1; i++) {
		int krc;

		/* Its rows are unknown: it must not be merged as it is. */
		if (v->files[i].reader == NULL) {
			rc = tablet_file_error(&v->files[i]);
			break;
		}
		krc = sst_reader_key_range(v->files[i].reader, &first, &last);

		if (krc == BT_NOTFOUND)
			continue;
		if (krc < 0) {
			rc = krc;
			break;
		}
		if ((t->key_lo.n > 0 && slice_compare(buf_slice(&first),
		    buf_slice(&t->key_lo)) < 0) ||
		    (t->key_hi.n > 0 && slice_compare(buf_slice(&last),
		    buf_slice(&t->key_hi)) >= 0))
			rc = 0;
	}
	buf_release(&first);
	buf_release(&last);
	tablet_version_unref(v);
	return rc;
}

