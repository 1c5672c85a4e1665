/*
 * tablet_compact.c - writing a tablet's SSTables (tablet.h): the minor
 * compaction that writes the frozen memtable (tablet_flush), the merging
 * and major compactions of a group's files (tablet_compact), and the
 * policies that decide when to run them (the file count, the read budget
 * of TABLET_SEEK_BYTES, the idle compaction of TABLET_IDLE_USEC).
 *
 * It builds on tablet.c's versions and files and is not called back by
 * it: an output is written to tmp/, synced, renamed into sst/, the
 * directory synced, and only then named in the catalog and installed in
 * a new version (docs/design.md section 7, W6).
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memtable/memtable.h"
#include "sstable/sstable.h"
#include "tablet/cells.h"
#include "tablet/ikey.h"
#include "tablet/merge.h"
#include "tablet/tablet.h"
#include "tablet/tablet_int.h"
#include "util/alloc.h"
#include "util/error.h"


int
tablet_out_start(struct tablet *t, const struct tablet_group *g,
    bool parallel, struct tablet_out *o)
{
	struct sst_options opts = g->opts;
	int rc;

	memset(&o->meta, 0, sizeof(o->meta));
	if ((rc = catalog_next_number(t->tenv.catalog, &o->meta.number)) < 0)
		return rc;
	o->meta.tablet_id = t->id;
	snprintf(o->meta.group, sizeof(o->meta.group), "%s", g->name);
	tablet_sst_path(o->tmp_path, sizeof(o->tmp_path), t->tenv.tmp_dir,
	    o->meta.number);
	opts.parallel = parallel;
	return sst_builder_new(t->tenv.env, o->tmp_path, &opts, &o->builder);
}

int
tablet_out_finish(struct tablet *t, struct tablet_out *o)
{
	char path[4096];
	struct sst_info info;
	int rc;

	rc = sst_builder_finish(o->builder, &info);
	sst_builder_free(o->builder);
	o->builder = NULL;
	if (rc < 0)
		goto out_remove;
	o->meta.size = info.file_size;
	o->meta.entry_count = info.entry_count;
	tablet_sst_path(path, sizeof(path), t->tenv.sst_dir, o->meta.number);
	if ((rc = env_path_rename(t->tenv.env, o->tmp_path, path)) < 0)
		goto out_remove;
	return 0;
out_remove:
	env_path_remove(t->tenv.env, o->tmp_path);
	return rc;
}

void
tablet_out_abandon(struct tablet *t, struct tablet_out *o)
{
	if (o->builder == NULL)
		return;
	sst_builder_free(o->builder);
	o->builder = NULL;
	env_path_remove(t->tenv.env, o->tmp_path);
}

/*
 * Whether a failed commit_files() is known not to have named its outputs:
 * the catalog refused it for a tablet assigned elsewhere or gone (a
 * remote catalog's refusal is its reply, and such calls are not sent
 * twice).  Other failures may be durable all the same (a sync that
 * failed, a reply lost), so their outputs stay for the catalog to name
 * or the master to collect.
 */
static bool
commit_refused(int rc)
{
	return rc == BT_ENOTSERVING || rc == -ENOENT;
}

/* Remove finished outputs that no catalog will name. */
static void
outputs_remove(struct tablet *t, const struct tablet_out *outs, size_t n)
{
	char path[4096];

	for (size_t i = 0; i < n; i++) {
		tablet_sst_path(path, sizeof(path), t->tenv.sst_dir,
		    outs[i].meta.number);
		env_path_remove(t->tenv.env, path);
	}
}

/*
 * Name the finished outputs in the catalog in place of the removed files,
 * open them, and install a version with the change.  The outputs are
 * already in sst/ with the directory synced.  When imm_done, the frozen
 * memtable is dropped from the version too.
 */
static int
commit_files(struct tablet *t, struct tablet_out *outs, size_t out_count,
    const uint64_t *removed, size_t removed_count, uint64_t flushed_seq,
    bool imm_done)
{
	struct catalog_file *added;
	struct sst_reader **readers;
	struct tablet_version *v;
	size_t n = 0, room;
	int rc = -ENOMEM;

	added = bt_calloc(out_count + 1, sizeof(*added));
	readers = bt_calloc(out_count + 1, sizeof(*readers));
	if (added == NULL || readers == NULL)
		goto out_readers;
	for (size_t i = 0; i < out_count; i++)
		added[i] = outs[i].meta;
	v = tablet_version_get(t);
	room = v->file_count + out_count;
	rc = 0;
	for (size_t i = 0; i < out_count && rc >= 0; i++)
		rc = tablet_file_open(&t->tenv, &added[i], v->schema, &readers[i]);
	tablet_version_unref(v);
	if (rc < 0)
		goto out_readers;
	/*
	 * The new version is allocated before the catalog names the
	 * outputs: after that nothing may fail, or the caller would delete
	 * files that the catalog names.  The room counted above is enough
	 * (T4).
	 */
	if ((v = tablet_version_alloc(room)) == NULL) {
		rc = -ENOMEM;
		goto out_readers;
	}
	if ((rc = catalog_tablet_apply(t->tenv.catalog, t->id, added,
	    out_count, removed, removed_count, flushed_seq)) < 0) {
		tablet_version_unref(v);
		goto out_readers;
	}

	mutex_lock(&t->mu);
	assert(t->current->file_count + out_count <= room);	/* T4 */
	tablet_version_share(v, t->current);
	/* New files first (newest), then the survivors in their order. */
	for (size_t i = 0; i < v->file_count; i++) {
		bool gone = false;

		for (size_t j = 0; j < removed_count; j++)
			if (v->files[i].meta.number == removed[j])
				gone = true;
		if (gone)
			tablet_file_unref(&v->files[i]);
		else
			v->files[n++] = v->files[i];
	}
	memmove(v->files + out_count, v->files, n * sizeof(*v->files));
	for (size_t i = 0; i < out_count; i++) {
		v->files[i].meta = added[i];
		v->files[i].group = tablet_schema_group_index(v->schema,
		    added[i].group);
		v->files[i].reader = readers[i];
		v->files[i].damage = NULL;
	}
	v->file_count = n + out_count;
	if (imm_done && v->imm != NULL) {
		tablet_frozen_bytes_add(t, -(int64_t)t->imm_bytes);
		t->imm_bytes = 0;
		memtable_unref(v->imm);
		v->imm = NULL;
		mutex_lock(&t->usage_mu);
		usage_clear(&t->imm_families);
		mutex_unlock(&t->usage_mu);
	}
	if (flushed_seq > atomic_load(&t->flushed_seq))
		atomic_store(&t->flushed_seq, flushed_seq);
	tablet_seek_reset(t, v);
	tablet_version_install_locked(t, v);
	mutex_unlock(&t->mu);
	bt_free(added);
	bt_free(readers);
	return 0;
out_readers:
	for (size_t i = 0; readers != NULL && i < out_count; i++)
		sst_reader_unref(readers[i]);
	bt_free(added);
	bt_free(readers);
	return rc;
}

/*
 * The entries a flush reads: the frozen memtable's, and when with_mem the
 * active one's too, merged in key order.
 */
static int
flush_iter_new(const struct tablet_version *v, bool with_mem,
    struct iter **out)
{
	struct iter *children[2];
	int rc;

	if ((rc = memtable_iter_new(v->imm, &children[0])) < 0)
		return rc;
	if (!with_mem) {
		*out = children[0];
		return 0;
	}
	if ((rc = memtable_iter_new(v->mem, &children[1])) < 0) {
		iter_free(children[0]);
		return rc;
	}
	return merge_iter_new(children, 2, out);
}

/*
 * Minor compaction: write the frozen memtable as one SSTable per locality
 * group that has entries (a row delete goes to every group, since reads of
 * any group must see it), then name them in the catalog with the new redo
 * point.  Entries of families no longer in the schema are dropped, and so
 * is what newer entries of the memtable hide (cells_flush_filter).
 *
 * While the disk is full (tablet_env.disk_full) the active memtable is
 * read too, for what its newer entries hide: after a reopen on a full
 * disk the replayed data is frozen, and the deletes that are to free its
 * room land in the active memtable, which cannot flush before it.  Its
 * entries are not written (they stay in it and in the log until their
 * own flush), and what they hide is hidden from every read already; a
 * delete being applied as the flush reads it, not yet published, may
 * hide its put from a read between the flush's end and the publication
 * (microseconds), as a compaction's drops do from a scan that began
 * earlier.
 */
int
tablet_flush(struct tablet *t, bool parallel)
{
	struct tablet_version *v = tablet_version_get(t);
	struct tablet_schema *s = v->schema;
	struct tablet_out *outs = NULL;
	struct iter *it = NULL;
	const struct tablet_family *last = NULL;	/* looked up last */
	struct cells_flush_filter hidden;
	struct buf scratch;
	size_t out_count = 0, last_len = 0;
	bool with_mem;
	int rc;

	buf_init(&scratch);
	cells_flush_filter_init(&hidden);
	if (v->imm == NULL) {
		rc = BT_NOTFOUND;
		goto out;
	}
	if ((outs = bt_calloc(s->group_count + 1, sizeof(*outs))) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	with_mem = v->mem != NULL && t->tenv.disk_full != NULL &&
	    atomic_load(t->tenv.disk_full) < 0;
	if ((rc = flush_iter_new(v, with_mem, &it)) < 0 ||
	    (rc = iter_seek_first(it)) < 0)
		goto out_abandon;
	for (; iter_valid(it); rc = iter_next(it)) {
		const struct tablet_family *f = NULL;
		struct slice family;
		struct ikey k;
		int frc;

		if (rc < 0)
			goto out_abandon;
		/* What newer entries of the memtable hide is left out. */
		if ((rc = cells_flush_filter_keep(&hidden, iter_key(it))) < 0)
			goto out_abandon;
		if (rc == 0 || (with_mem && iter_key(it).n >= 8 &&
		    ikey_trailer(iter_key(it)) >> 8 > t->imm_max_seq))
			continue;
		/* Only the family matters here; decode the whole key only
		 * when the quick look cannot tell. */
		if ((frc = ikey_family(iter_key(it), &family)) < 0) {
			if ((rc = ikey_decode(iter_key(it), &k,
			    &scratch)) < 0)
				goto out_abandon;
			frc = k.kind == IKEY_DELETE_ROW;
			family = k.family;
		}
		/* Runs of one family are the rule: look up a new one only. */
		if (frc == 0 && (last == NULL || family.n != last_len ||
		    memcmp(family.p, last->name, last_len) != 0)) {
			if ((last = tablet_schema_family(s, family)) == NULL)
				continue;
			last_len = strlen(last->name);
		}
		if (frc == 0)
			f = last;
		for (size_t g = 0; g < s->group_count; g++) {
			if (f != NULL && f->group != g)
				continue;
			if (outs[g].builder == NULL && (rc = tablet_out_start(t,
			    &s->groups[g], parallel, &outs[g])) < 0)
				goto out_abandon;
			outs[g].meta.max_seq = t->imm_max_seq;
			if ((rc = sst_builder_add(outs[g].builder,
			    iter_key(it), iter_value(it))) < 0)
				goto out_abandon;
		}
	}
	if (rc < 0)
		goto out_abandon;
	/* Compact the outputs to the front, finishing each. */
	for (size_t g = 0; g < s->group_count; g++) {
		if (outs[g].builder == NULL)
			continue;
		outs[out_count] = outs[g];
		if (out_count != g)
			outs[g].builder = NULL;
		if ((rc = tablet_out_finish(t, &outs[out_count])) < 0)
			goto out_abandon;
		out_count++;
	}
	if (out_count > 0 &&
	    (rc = env_dir_sync(t->tenv.env, t->tenv.sst_dir)) < 0)
		goto out_remove;
	if ((rc = commit_files(t, outs, out_count, NULL, 0, t->imm_max_seq,
	    true)) < 0) {
		if (commit_refused(rc))
			goto out_remove;
		goto out_abandon;
	}
	atomic_store(&t->imm_first_seq, UINT64_MAX);
	atomic_fetch_add(&t->flushes, 1);
	goto out;
out_remove:
	outputs_remove(t, outs, out_count);
out_abandon:
	for (size_t g = 0; g < s->group_count; g++)
		tablet_out_abandon(t, &outs[g]);
out:
	iter_free(it);
	cells_flush_filter_release(&hidden);
	buf_release(&scratch);
	bt_free(outs);
	tablet_version_unref(v);
	return rc;
}

/*
 * The files of group g in v, or 0 when one of them is damaged: a
 * compaction must not drop what the damaged file's data would need (a
 * delete masking it, a version that a GC policy keeps only because it is
 * newer), so the group is left as it is until the file is restored.
 */
static size_t
version_group_files(const struct tablet_version *v, size_t g)
{
	size_t n = 0;

	for (size_t i = 0; i < v->file_count; i++) {
		if (v->files[i].group != g)
			continue;
		if (v->files[i].reader == NULL)
			return 0;
		n++;
	}
	return n;
}

/*
 * The ratio of a merging compaction's size rule (compact_pick): a file
 * is taken with the newer ones when it is at most COMPACT_SIZE_RATIO
 * times their bytes together.
 */
#define COMPACT_SIZE_RATIO 4

/*
 * The size rule of merging compactions: how many of group g's files,
 * newest first, are taken when the first min are taken whatever their
 * size and each later one only while it is at most COMPACT_SIZE_RATIO
 * times the bytes of those taken before it.
 */
static size_t
size_rule_take(const struct tablet_version *v, size_t g, size_t min)
{
	uint64_t taken_bytes = 0;
	size_t taken = 0;

	for (size_t i = 0; i < v->file_count; i++) {
		if (v->files[i].group != g)
			continue;
		if (taken >= min &&
		    v->files[i].meta.size > COMPACT_SIZE_RATIO * taken_bytes)
			break;
		taken_bytes += v->files[i].meta.size;
		taken++;
	}
	return taken;
}

/*
 * How many files of group g an idle merge takes (TABLET_IDLE_USEC): all
 * of them, when there are two or more and each is within the size rule
 * of those newer than it (a small new file does not make the idle merge
 * rewrite a large old one); else 0.
 */
static size_t
idle_pick(const struct tablet_version *v, size_t g)
{
	size_t n = version_group_files(v, g);

	return n >= 2 && size_rule_take(v, g, 1) == n ? n : 0;
}

/* The group whose reads used up the budget (TABLET_SEEK_BYTES), or
 * NO_GROUP while some budget is left. */
static size_t
seek_group_due(const struct tablet *t)
{
	if (atomic_load_explicit(&t->seek_allowance,
	    memory_order_relaxed) > 0)
		return NO_GROUP;
	return atomic_load_explicit(&t->seek_group, memory_order_relaxed);
}

/* The largest file number of v, 0 when it has none. */
static uint64_t
version_file_max(const struct tablet_version *v)
{
	uint64_t max = 0;

	for (size_t i = 0; i < v->file_count; i++)
		if (v->files[i].meta.number > max)
			max = v->files[i].meta.number;
	return max;
}

/* Whether a merging compaction of v's files failed (files are only
 * added with new numbers, so the count and the largest name them). */
static bool
version_merge_failed(const struct tablet *t, const struct tablet_version *v)
{
	return t->failed_file_max != 0 &&
	    t->failed_file_count == v->file_count &&
	    t->failed_file_max == version_file_max(v);
}

bool
tablet_needs_compaction(const struct tablet *t)
{
	struct tablet_version *v = tablet_version_get((struct tablet *)t);
	bool needed = false;

	if (version_merge_failed(t, v)) {
		tablet_version_unref(v);
		return false;
	}

	for (size_t g = 0; g < v->schema->group_count && !needed; g++)
		needed = version_group_files(v, g) >= TABLET_MERGE_THRESHOLD;
	if (!needed) {
		size_t g = seek_group_due(t);

		needed = g < v->schema->group_count &&
		    version_group_files(v, g) >= 2;
	}
	for (size_t g = 0; g < v->schema->group_count && !needed && t->idle;
	    g++)
		needed = idle_pick(v, g) > 0;
	tablet_version_unref(v);
	return needed;
}

struct compact_out {
	struct tablet *t;
	const struct tablet_group *group;
	struct tablet_out *out;
};

static int
compact_keep(void *arg, struct slice key, struct slice value)
{
	struct compact_out *c = arg;
	int rc;

	if (c->out->builder == NULL &&
	    (rc = tablet_out_start(c->t, c->group, true, c->out)) < 0)
		return rc;
	return sst_builder_add(c->out->builder, key, value);
}

/*
 * Merge the first take SSTables of group g (in the version's order) into
 * at most one.  When every SSTable of the group takes part, keep only
 * what cells_compact_row() says must survive: safe to drop because
 * memtable data is newer than all of it.  Otherwise keep every entry
 * (a merging compaction, as Bigtable's: deletes and what they mask may
 * still meet data in the files left out).  The inputs are deleted once
 * the catalog no longer names them.
 */
static int
compact_group(struct tablet *t, struct tablet_version *v, size_t g,
    size_t take, int64_t now)
{
	struct cells_schema cs = { tablet_schema_family_policy, v->schema,
	    NULL };
	struct iter **children;
	struct iter *it = NULL;
	uint64_t *removed;
	struct tablet_out out = { 0 };
	struct compact_out c = { t, &v->schema->groups[g], &out };
	struct cells_row row;
	size_t n = 0, removed_count;
	uint64_t max_seq = 0, rows = 0;
	bool whole = take == version_group_files(v, g);
	int rc;

	assert(take > 0 && take <= version_group_files(v, g));
	cells_row_init(&row);
	children = bt_calloc(v->file_count + 1, sizeof(*children));
	removed = bt_calloc(v->file_count + 1, sizeof(*removed));
	if (children == NULL || removed == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < v->file_count && n < take; i++) {
		if (v->files[i].group != g)
			continue;
		if ((rc = sst_reader_iter_new(v->files[i].reader,
		    SST_ITER_NO_CACHE_FILL, &children[n])) < 0)
			goto out_children;
		removed[n] = v->files[i].meta.number;
		if (v->files[i].meta.max_seq > max_seq)
			max_seq = v->files[i].meta.max_seq;
		n++;
	}
	removed_count = n;
	rc = merge_iter_new(children, n, &it);
	n = 0;		/* the merge owns the children now */
	if (rc == 0)
		rc = tablet_range_wrap(t, &it);
	if (rc < 0 || (rc = iter_seek_first(it)) < 0)
		goto out;
	for (;;) {
		if (whole) {
			rc = cells_compact_row(it, &cs, now, &row,
			    compact_keep, &c);
		} else if (!iter_valid(it)) {
			rc = BT_DONE;
		} else if ((rc = compact_keep(&c, iter_key(it),
		    iter_value(it))) == 0) {
			rc = iter_next(it);
		}
		if (rc != 0)
			break;
		if (++rows % TABLET_COMPACT_POLL_ROWS == 0 &&
		    t->tenv.compact_poll != NULL)
			t->tenv.compact_poll(t->tenv.compact_poll_arg);
	}
	if (rc != BT_DONE)
		goto out_abandon;
	n = removed_count;
	out.meta.max_seq = max_seq;
	if (out.builder != NULL) {
		if ((rc = tablet_out_finish(t, &out)) < 0)
			goto out;
		if ((rc = env_dir_sync(t->tenv.env, t->tenv.sst_dir)) < 0)
			goto out;
	}
	if ((rc = commit_files(t, &out, out.meta.number != 0 ? 1 : 0,
	    removed, n, 0, false)) < 0) {
		if (commit_refused(rc))
			outputs_remove(t, &out, out.meta.number != 0 ? 1 : 0);
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		tablet_file_release(&t->tenv, removed[i]);
	atomic_fetch_add(&t->compactions, 1);
	rc = 0;
	goto out;
out_abandon:
	tablet_out_abandon(t, &out);
	goto out;
out_children:
	for (size_t i = 0; i < n; i++)
		iter_free(children[i]);
out:
	iter_free(it);
	cells_row_release(&row);
	bt_free(children);
	bt_free(removed);
	return rc;
}

/*
 * The files of t's current version, without its memtables: a compaction
 * holds its version to the end, and a flush in its middle
 * (tablet_env.compact_poll) must free the memtable it flushed.  NULL on
 * allocation failure.
 */
static struct tablet_version *
version_files_get(struct tablet *t)
{
	struct tablet_version *v;

	mutex_lock(&t->mu);
	v = tablet_version_copy(t->current, 0);
	mutex_unlock(&t->mu);
	if (v == NULL)
		return NULL;
	memtable_unref(v->mem);
	memtable_unref(v->imm);
	v->mem = v->imm = NULL;
	return v;
}

/*
 * How many of group g's files (the first, in the version's order: newest
 * first) a merging compaction takes: the two newest, and each older one
 * while it is at most COMPACT_SIZE_RATIO times those taken together.  A
 * file much larger than everything newer (the last compaction's output,
 * most of the tablet) is left alone until the newer files add up to a
 * fraction of it, so that the bytes rewritten per byte flushed stop
 * growing with the tablet's size, and the blocks of the large file stay
 * cached for readers.  The ratio is not 1 because the files left out
 * keep what the merge could not drop (overwritten versions, deletes):
 * every read of an overwritten row then finds it in two files.  All of
 * them (a whole compaction) when the sizes say so.
 */
static size_t
compact_pick(const struct tablet_version *v, size_t g)
{
	return size_rule_take(v, g, 2);
}

int
tablet_compact(struct tablet *t, bool major, int64_t now)
{
	struct tablet_version *v = version_files_get(t);
	size_t seek_g = seek_group_due(t);
	int rc = 0;

	if (v == NULL)
		return -ENOMEM;
	for (size_t g = 0; g < v->schema->group_count && rc == 0; g++) {
		size_t n = version_group_files(v, g);

		if (major && n > 0)
			rc = compact_group(t, v, g, n, now);
		else if (n >= TABLET_MERGE_THRESHOLD ||
		    (g == seek_g && n >= 2))
			rc = compact_group(t, v, g, compact_pick(v, g), now);
		else if (t->idle && idle_pick(v, g) > 0)
			rc = compact_group(t, v, g, n, now);
	}
	if (rc < 0 && !major) {
		t->failed_file_count = v->file_count;
		t->failed_file_max = version_file_max(v);
	}
	tablet_version_unref(v);
	return rc;
}

/* Whether t's memtable is worth an idle flush (TABLET_IDLE_USEC): its
 * file would be taken by the idle merge with the others of its group,
 * roughly (a memtable's bytes are not its file's). */
static bool
idle_flush_wanted(struct tablet *t)
{
	struct tablet_version *v = tablet_version_get(t);
	uint64_t mem = atomic_load_explicit(&t->mem_usage,
	    memory_order_relaxed), files = 0;

	for (size_t i = 0; i < v->file_count; i++)
		files += v->files[i].meta.size;
	tablet_version_unref(v);
	return mem >= TABLET_IDLE_FLUSH_MIN &&
	    mem * COMPACT_SIZE_RATIO >= files;
}

/* Whether some group of t's current version can be merged by an idle
 * merge. */
static bool
idle_merge_wanted(struct tablet *t)
{
	struct tablet_version *v = tablet_version_get(t);
	bool wanted = false;

	for (size_t g = 0; g < v->schema->group_count && !wanted; g++)
		wanted = idle_pick(v, g) > 0;
	tablet_version_unref(v);
	return wanted;
}

/* A file's first and last keys (idle_overlap), ordered by the first. */
struct key_range {
	struct buf first, last;
};

static int
key_range_first_order(const void *a, const void *b)
{
	const struct key_range *x = a, *y = b;

	return slice_compare(buf_slice(&x->first), buf_slice(&y->first));
}

/*
 * Whether an idle compaction of t would merge anything that a read meets
 * together: two files of a group whose key ranges overlap, or a memtable
 * whose first key is not past every file's last key.  A sequential load
 * leaves files (and a memtable) of disjoint ranges, which a scan meets
 * one after the other; rewriting them would only compete with the
 * reads.  A tablet without files is worth it (its memtable's flush).
 * Reads each file's first block and index (once per quiet period).  An
 * error says no.
 */
static bool
idle_overlap(struct tablet *t)
{
	struct tablet_version *v = tablet_version_get(t);
	struct key_range *kr;
	struct iter *it = NULL;
	struct buf mem_first;
	size_t n = 0;
	bool overlap = false;
	int rc = 0;

	buf_init(&mem_first);
	if ((kr = bt_calloc(v->file_count + 1, sizeof(*kr))) == NULL)
		goto out;
	if (memtable_iter_new(v->mem, &it) == 0 && iter_seek_first(it) == 0 &&
	    iter_valid(it))
		rc = buf_set(&mem_first, iter_key(it).p, iter_key(it).n);
	iter_free(it);
	for (size_t g = 0; g < v->schema->group_count && !overlap &&
	    rc >= 0; g++) {
		size_t first = n;

		for (size_t i = 0; i < v->file_count && rc >= 0; i++) {
			if (v->files[i].group != g || v->files[i].reader ==
			    NULL)
				continue;
			buf_init(&kr[n].first);
			buf_init(&kr[n].last);
			rc = sst_reader_key_range(v->files[i].reader,
			    &kr[n].first, &kr[n].last);
			n++;
			if (rc == BT_NOTFOUND)
				rc = 0;
			if (rc == 0 && mem_first.n > 0 && slice_compare(
			    buf_slice(&mem_first), buf_slice(&kr[n - 1].last))
			    <= 0)
				overlap = true;
		}
		qsort(kr + first, n - first, sizeof(*kr),
		    key_range_first_order);
		for (size_t i = first + 1; i < n && rc >= 0; i++)
			if (kr[i - 1].last.n > 0 && slice_compare(
			    buf_slice(&kr[i].first),
			    buf_slice(&kr[i - 1].last)) <= 0)
				overlap = true;
	}
	if (v->file_count == 0)
		overlap = true;
	if (rc < 0)
		overlap = false;
	for (size_t i = 0; i < n; i++) {
		buf_release(&kr[i].first);
		buf_release(&kr[i].last);
	}
	bt_free(kr);
out:
	buf_release(&mem_first);
	tablet_version_unref(v);
	return overlap;
}

bool
tablet_idle_check(struct tablet *t, int64_t now, bool *freeze,
    bool *pending)
{
	uint64_t seq = atomic_load_explicit(&t->last_applied_seq,
	    memory_order_relaxed);

	*freeze = false;
	if (seq != t->idle_seq || t->idle_since == 0) {
		t->idle_seq = seq;
		t->idle_since = now;
		t->idle = false;
		t->idle_decided = false;
	}
	if (now - t->idle_since < TABLET_IDLE_USEC) {
		if (idle_flush_wanted(t) || idle_merge_wanted(t))
			*pending = true;
		return false;
	}
	if (!t->idle_decided) {
		t->idle_decided = true;
		t->idle = idle_overlap(t);
	}
	if (!t->idle)
		return false;
	*freeze = !tablet_has_frozen(t) && idle_flush_wanted(t);
	return *freeze || idle_merge_wanted(t);
}
