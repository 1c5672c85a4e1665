/*
 * tablet.c - a tablet's schema, versions, files and memtables (tablet.h):
 * opening and closing a tablet, and the writer side.  The files above it
 * in the folder build on what is here and are not called back:
 * tablet_read.c and tablet_point.c (the read path), tablet_compact.c
 * (flushes and compactions) and tablet_split.c (splits and merges).
 *
 * The tablet's state visible to readers is a version: memtable, frozen
 * memtable, schema and SSTable readers, all referenced.  A change (freeze,
 * flush, compaction, schema) builds a new version from the current one and
 * installs it under the mutex; readers take a reference to the current
 * version and never block the writer.
 */
#include <assert.h>
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
#include "tablet/range_iter.h"
#include "tablet/tablet.h"
#include "tablet/tablet_int.h"
#include "util/alloc.h"
#include "util/error.h"

/* Count delta bytes more (or fewer) in the frozen memtables of all
 * tablets. */
void
tablet_frozen_bytes_add(struct tablet *t, int64_t delta)
{
	if (t->tenv.frozen_bytes != NULL)
		atomic_fetch_add(t->tenv.frozen_bytes, delta);
}

/* Count delta bytes more (or fewer) in the active memtables of all
 * tablets. */
static void
active_bytes_add(struct tablet *t, int64_t delta)
{
	if (t->tenv.active_bytes != NULL && delta != 0)
		atomic_fetch_add(t->tenv.active_bytes, delta);
}

/* ---- Schema ---- */

static void
schema_free(struct tablet_schema *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->family_count; i++)
		gc_policy_free(s->families[i].policy);
	bt_free(s->families);
	bt_free(s->groups);
	bt_free(s);
}

size_t
tablet_schema_group_index(const struct tablet_schema *s, const char *name)
{
	for (size_t i = 0; i < s->group_count; i++)
		if (strcmp(s->groups[i].name, name) == 0)
			return i;
	return NO_GROUP;
}

int
tablet_schema_new(const struct catalog_table *ct, struct tablet_schema **out)
{
	struct tablet_schema *s;
	int rc = -ENOMEM;

	if ((s = bt_calloc(1, sizeof(*s))) == NULL)
		return -ENOMEM;
	atomic_init(&s->refs, 1);
	s->table_id = ct->id;
	s->groups = bt_calloc(ct->group_count ? ct->group_count : 1,
	    sizeof(*s->groups));
	s->families = bt_calloc(ct->family_count ? ct->family_count : 1,
	    sizeof(*s->families));
	if (s->groups == NULL || s->families == NULL)
		goto out_free;
	for (size_t i = 0; i < ct->group_count; i++) {
		const struct catalog_group *g = &ct->groups[i];
		struct tablet_group *tg = &s->groups[s->group_count++];

		snprintf(tg->name, sizeof(tg->name), "%s", g->name);
		sst_options_default(&tg->opts);
		tg->opts.block_size = g->block_size;
		tg->opts.compress = g->compress;
		tg->opts.bloom_bits_per_key = g->bloom ? 10 : 0;
		tg->opts.filter_prefix = ikey_row_prefix_length;
		tg->opts.key_column = ikey_put_column;	/* read skips */
		tg->opts.key_sequence = ikey_sequence;
		tg->opts.key_label = ikey_usage_label;	/* family usage */
		tg->in_memory = g->in_memory;
	}
	for (size_t i = 0; i < ct->family_count; i++) {
		const struct catalog_family *f = &ct->families[i];
		struct tablet_family *tf = &s->families[s->family_count++];

		snprintf(tf->name, sizeof(tf->name), "%s", f->name);
		tf->created_seq = f->created_seq;
		tf->group = tablet_schema_group_index(s, f->group);
		if (tf->group == NO_GROUP) {
			rc = bt_error_set(-EINVAL, "table %s: family %s names "
			    "unknown group %s", ct->name, f->name, f->group);
			goto out_free;
		}
		if ((rc = gc_policy_parse(f->gc_policy, &tf->policy)) < 0)
			goto out_free;
		if (gc_policy_keeps_all(tf->policy)) {
			gc_policy_free(tf->policy);
			tf->policy = NULL;
		}
		s->uses_age |= gc_policy_uses_age(tf->policy);
	}
	*out = s;
	return 0;
out_free:
	schema_free(s);
	return rc;
}

void
tablet_schema_ref(struct tablet_schema *s)
{
	atomic_fetch_add(&s->refs, 1);
}

void
tablet_schema_unref(struct tablet_schema *s)
{
	if (s != NULL && atomic_fetch_sub(&s->refs, 1) == 1)
		schema_free(s);
}

uint64_t
tablet_schema_table_id(const struct tablet_schema *s)
{
	return s->table_id;
}

uint64_t
tablet_schema_created_seq_max(const struct tablet_schema *s)
{
	uint64_t max = 0;

	for (size_t i = 0; i < s->family_count; i++)
		if (s->families[i].created_seq > max)
			max = s->families[i].created_seq;
	return max;
}

const struct tablet_family *
tablet_schema_family(const struct tablet_schema *s, struct slice family)
{
	for (size_t i = 0; i < s->family_count; i++)
		if (slice_equal(slice_str(s->families[i].name), family))
			return &s->families[i];
	return NULL;
}

bool
tablet_schema_has_family(const struct tablet_schema *s, struct slice family)
{
	return tablet_schema_family(s, family) != NULL;
}

const struct gc_policy *
tablet_schema_family_gc(const struct tablet_schema *s, struct slice family)
{
	const struct tablet_family *f = tablet_schema_family(s, family);

	return f == NULL ? NULL : f->policy;
}

/* The cells_schema callback: a family's GC policy. */
bool
tablet_schema_family_policy(void *arg, struct slice family,
    const struct gc_policy **policy, uint64_t *created_seq)
{
	const struct tablet_family *f = tablet_schema_family(arg, family);

	if (f == NULL)
		return false;
	*policy = f->policy;
	*created_seq = f->created_seq;
	return true;
}

/* ---- Versions ---- */

static void
file_damage_unref(struct file_damage *d)
{
	if (d != NULL && atomic_fetch_sub(&d->refs, 1) == 1)
		bt_free(d);
}

/* Take another reference to f's reader or damage (copying f). */
void
tablet_file_ref(const struct tablet_file *f)
{
	if (f->reader != NULL)
		sst_reader_ref(f->reader);
	if (f->damage != NULL)
		atomic_fetch_add(&f->damage->refs, 1);
}

void
tablet_file_unref(const struct tablet_file *f)
{
	sst_reader_unref(f->reader);
	file_damage_unref(f->damage);
}

/* The error of a read that needs damaged file f, naming it. */
int
tablet_file_error(const struct tablet_file *f)
{
	return bt_error_set(f->damage->rc, "%s", f->damage->detail);
}

void
tablet_version_unref(struct tablet_version *v)
{
	if (v == NULL || atomic_fetch_sub(&v->refs, 1) != 1)
		return;
	memtable_unref(v->mem);
	memtable_unref(v->imm);
	tablet_schema_unref(v->schema);
	for (size_t i = 0; i < v->file_count; i++)
		tablet_file_unref(&v->files[i]);
	bt_free(v->files);
	bt_free(v);
}

/* An empty version with room for room files, for tablet_version_share().
 * NULL on allocation failure. */
struct tablet_version *
tablet_version_alloc(size_t room)
{
	struct tablet_version *v;

	if ((v = bt_calloc(1, sizeof(*v))) == NULL)
		return NULL;
	if ((v->files = bt_calloc(room + 1, sizeof(*v->files))) == NULL) {
		bt_free(v);
		return NULL;
	}
	atomic_init(&v->refs, 1);
	return v;
}

/* Make the empty version v, with room for from's files, share everything
 * with from. */
void
tablet_version_share(struct tablet_version *v,
    const struct tablet_version *from)
{
	v->mem = from->mem;
	memtable_ref(v->mem);
	if ((v->imm = from->imm) != NULL)
		memtable_ref(v->imm);
	v->schema = from->schema;
	tablet_schema_ref(v->schema);
	for (size_t i = 0; i < from->file_count; i++) {
		v->files[i] = from->files[i];
		tablet_file_ref(&v->files[i]);
	}
	v->file_count = from->file_count;
}

/* A new version sharing everything with from, with room for extra more
 * files.  NULL on allocation failure. */
struct tablet_version *
tablet_version_copy(const struct tablet_version *from, size_t extra)
{
	struct tablet_version *v = tablet_version_alloc(from->file_count + extra);

	if (v != NULL)
		tablet_version_share(v, from);
	return v;
}

struct tablet_version *
tablet_version_get(struct tablet *t)
{
	struct tablet_version *v;

	mutex_lock(&t->mu);
	v = t->current;
	atomic_fetch_add(&v->refs, 1);
	mutex_unlock(&t->mu);
	return v;
}

void
tablet_version_end_files(struct tablet_version *v)
{
	const struct sst_reader *end = NULL;

	for (size_t i = 0; i < v->file_count; i++) {
		const struct sst_reader *r = v->files[i].reader;

		if (r == NULL) {
			v->files_end = NULL;
			return;
		}
		if (sst_reader_last_key(r).n > 0 && (end == NULL ||
		    sst_reader_ends_before(end, sst_reader_last_key(r))))
			end = r;
	}
	v->files_end = end;
}

/* Install v as current (the caller built it from current under t->mu,
 * T1), with its files' end (T5). */
void
tablet_version_install_locked(struct tablet *t, struct tablet_version *v)
{
	struct tablet_version *old = t->current;

	mutex_assert_held(&t->mu);
	assert(v != old);

	tablet_version_end_files(v);
	t->current = v;
	tablet_version_unref(old);
}

/* ---- Files ---- */

void
tablet_sst_path(char *dst, size_t size, const char *dir, uint64_t number)
{
	snprintf(dst, size, "%s/%016" PRIu64 ".sst", dir, number);
}

/*
 * Open an SSTable.  For an in-memory locality group, read every block once
 * so that the block cache holds the file (Bigtable's in-memory groups); a
 * damaged block is left for the read that needs it to report.
 */
int
tablet_file_open(const struct tablet_env *tenv,
    const struct catalog_file *meta, const struct tablet_schema *schema,
    struct sst_reader **out)
{
	size_t g = tablet_schema_group_index(schema, meta->group);
	struct iter *it;
	char path[4096];
	int rc;

	tablet_sst_path(path, sizeof(path), tenv->sst_dir, meta->number);
	if ((rc = sst_reader_open(tenv->env, path,
	    tenv->block_cache ? cache_new_id(tenv->block_cache) : 0,
	    tenv->block_cache, ikey_row_prefix_length, out)) < 0)
		return rc;
	if (g != NO_GROUP && schema->groups[g].in_memory &&
	    tenv->block_cache != NULL &&
	    sst_reader_iter_new(*out, 0, &it) == 0) {
		for (rc = iter_seek_first(it); rc == 0 && iter_valid(it);
		    rc = iter_next(it))
			;
		iter_free(it);
	}
	return 0;
}

/*
 * Whether an error opening an SSTable is damage to that file (it is kept
 * and its rows fail to read) rather than a failure of the open itself
 * (memory, descriptors).
 */
static bool
file_error_is_damage(int rc)
{
	return rc == BT_ECHECKSUM || rc == BT_ECORRUPT || rc == BT_EFORMAT ||
	    rc == -ENOENT || rc == -EIO;
}

/*
 * Record why the file could not be opened: reads that need it get
 * BT_ECHECKSUM for a checksum mismatch, -EIO for a read error, else
 * BT_ECORRUPT (a missing, truncated or garbled file), with the open's
 * detail.  -ENOMEM.
 */
static int
file_damage_new(const struct catalog_file *meta, int rc,
    struct file_damage **out)
{
	struct file_damage *d;

	if ((d = bt_calloc(1, sizeof(*d))) == NULL)
		return -ENOMEM;
	atomic_init(&d->refs, 1);
	d->rc = rc == BT_ECHECKSUM || rc == -EIO ? rc : BT_ECORRUPT;
	if (bt_error_detail()[0] != '\0')
		snprintf(d->detail, sizeof(d->detail), "damaged SSTable: %s",
		    bt_error_detail());
	else
		snprintf(d->detail, sizeof(d->detail), "damaged SSTable "
		    "%016" PRIu64 ".sst: %s", meta->number, bt_strerror(rc));
	*out = d;
	return 0;
}

/* Delete SSTable number once the catalog no longer names it. */
void
tablet_file_release(const struct tablet_env *tenv, uint64_t number)
{
	char path[4096];

	if (catalog_file_is_live(tenv->catalog, number) != 0)
		return;		/* still named, or the catalog cannot say */
	tablet_sst_path(path, sizeof(path), tenv->sst_dir, number);
	env_path_remove(tenv->env, path);
}

/* A new read budget for the files of v (tablet.h, TABLET_SEEK_BYTES). */
void
tablet_seek_reset(struct tablet *t, const struct tablet_version *v)
{
	uint64_t bytes = 0;
	int64_t budget;

	for (size_t i = 0; i < v->file_count; i++)
		bytes += v->files[i].meta.size;
	budget = (int64_t)(bytes / TABLET_SEEK_BYTES);
	if (budget < TABLET_SEEK_MIN)
		budget = TABLET_SEEK_MIN;
	atomic_store_explicit(&t->seek_allowance, budget,
	    memory_order_relaxed);
}

void
tablet_read_charge(struct tablet *t, size_t g, int64_t cost)
{
	int64_t left = atomic_fetch_sub_explicit(&t->seek_allowance, cost,
	    memory_order_relaxed);

	/* Only the read that crosses zero asks: one wake per budget. */
	if (left <= 0 || left > cost)
		return;
	atomic_store_explicit(&t->seek_group, g, memory_order_relaxed);
	if (t->tenv.compact_wanted != NULL)
		t->tenv.compact_wanted(t->tenv.compact_wanted_arg);
}

/* ---- Open and close ---- */

/*
 * A tablet for the catalog row ct with an empty memtable and no files
 * yet: the common start of opening, splitting and merging.
 */
int
tablet_new(const struct tablet_env *tenv, const struct catalog_tablet *ct,
    struct tablet_schema *schema, struct tablet **out)
{
	struct tablet_version *v;
	struct tablet *t;
	int rc = -ENOMEM;

	if ((t = bt_calloc(1, sizeof(*t))) == NULL)
		return -ENOMEM;
	atomic_init(&t->refs, 1);
	atomic_init(&t->serving, true);
	t->tenv = *tenv;
	t->id = ct->id;
	t->table_id = ct->table_id;
	atomic_init(&t->flushed_seq, ct->flushed_seq);
	atomic_init(&t->last_applied_seq, ct->flushed_seq);
	t->idle_seq = ct->flushed_seq;
	atomic_init(&t->mem_first_seq, UINT64_MAX);
	atomic_init(&t->imm_first_seq, UINT64_MAX);
	atomic_init(&t->seek_allowance, TABLET_SEEK_MIN);
	atomic_init(&t->seek_group, NO_GROUP);
	buf_init(&t->start);
	buf_init(&t->end);
	buf_init(&t->key_lo);
	buf_init(&t->key_hi);
	buf_init(&t->key_scratch);
	mutex_init(&t->mu);
	mutex_init(&t->usage_mu);
	mutex_init(&t->sample_mu);
	for (size_t i = 0; i < TABLET_SAMPLES; i++)
		buf_init(&t->samples[i]);
	usage_init(&t->mem_families);
	usage_init(&t->imm_families);
	if (buf_set(&t->start, ct->start.p, ct->start.n) < 0 ||
	    buf_set(&t->end, ct->end.p, ct->end.n) < 0)
		goto out_free;
	if ((ct->start.n > 0 && (rc = ikey_append_row_prefix(
	    buf_slice(&ct->start), &t->key_lo)) < 0) ||
	    (ct->end.n > 0 && (rc = ikey_append_row_prefix(
	    buf_slice(&ct->end), &t->key_hi)) < 0))
		goto out_free;
	rc = -ENOMEM;
	if ((v = bt_calloc(1, sizeof(*v))) == NULL)
		goto out_free;
	atomic_init(&v->refs, 1);
	t->current = v;
	v->schema = schema;
	tablet_schema_ref(schema);
	if ((rc = memtable_new(&v->mem)) < 0)
		goto out_free;
	t->mem = v->mem;
	t->mem_base = memtable_memory_usage(t->mem);
	*out = t;
	return 0;
out_free:
	tablet_unref(t);
	return rc;
}

/* Give the version room for count files. */
int
tablet_version_files_alloc(struct tablet_version *v, size_t count)
{
	v->files = bt_calloc(count + 1, sizeof(*v->files));
	return v->files == NULL ? -ENOMEM : 0;
}

int
tablet_open_files(const struct tablet_env *tenv,
    const struct catalog_tablet *ct, struct tablet_schema *schema,
    const struct catalog_file *files, size_t count, struct tablet **out)
{
	struct tablet_version *v;
	struct tablet *t;
	int rc;

	if ((rc = tablet_new(tenv, ct, schema, &t)) < 0)
		return rc;
	v = t->current;
	if ((rc = tablet_version_files_alloc(v, count)) < 0)
		goto out_free;
	for (size_t i = 0; i < count; i++) {
		struct tablet_file *f = &v->files[i];

		f->meta = files[i];
		f->group = tablet_schema_group_index(schema, files[i].group);
		bt_error_clear();
		if ((rc = tablet_file_open(tenv, &files[i], schema, &f->reader)) < 0) {
			f->reader = NULL;
			if (!file_error_is_damage(rc) ||
			    (rc = file_damage_new(&files[i], rc,
			    &f->damage)) < 0)
				goto out_free;
		}
		v->file_count++;
	}
	tablet_version_end_files(v);
	tablet_seek_reset(t, v);
	*out = t;
	return 0;
out_free:
	tablet_unref(t);
	return rc;
}

int
tablet_open(const struct tablet_env *tenv, const struct catalog_tablet *ct,
    struct tablet_schema *schema, struct tablet **out)
{
	struct catalog_file *files = NULL;
	size_t count = 0;
	int rc;

	if ((rc = catalog_files_list(tenv->catalog, ct->id, &files,
	    &count)) != 0)
		return rc < 0 ? rc : bt_error_set(BT_ECORRUPT, "tablet %"
		    PRIu64 ": not in the catalog", ct->id);
	rc = tablet_open_files(tenv, ct, schema, files, count, out);
	bt_free(files);
	return rc;
}

int
tablet_open_unserved(const struct tablet_env *tenv,
    const struct catalog_tablet *ct, struct tablet_schema *schema,
    struct tablet **out)
{
	int rc;

	if ((rc = tablet_open_files(tenv, ct, schema, NULL, 0, out)) == 0)
		tablet_serving_stop(*out);
	return rc;
}

void
tablet_serving_stop(struct tablet *t)
{
	atomic_store(&t->serving, false);
}

bool
tablet_serving(const struct tablet *t)
{
	return atomic_load(&t->serving);
}

/* BT_ENOTSERVING with a detail, for what t no longer serves. */
int
tablet_not_serving(const struct tablet *t)
{
	return bt_error_set(BT_ENOTSERVING, "tablet %" PRIu64 ": not served "
	    "here", t->id);
}

void
tablet_ref(struct tablet *t)
{
	atomic_fetch_add(&t->refs, 1);
}

void
tablet_unref(struct tablet *t)
{
	if (t == NULL || atomic_fetch_sub(&t->refs, 1) != 1)
		return;
	if (t->current != NULL && t->current->imm != NULL)
		tablet_frozen_bytes_add(t, -(int64_t)t->imm_bytes);
	active_bytes_add(t, -(int64_t)atomic_load(&t->mem_usage));
	tablet_version_unref(t->current);
	mutex_destroy(&t->mu);
	mutex_destroy(&t->usage_mu);
	mutex_destroy(&t->sample_mu);
	for (size_t i = 0; i < TABLET_SAMPLES; i++)
		buf_release(&t->samples[i]);
	usage_release(&t->mem_families);
	usage_release(&t->imm_families);
	buf_release(&t->start);
	buf_release(&t->end);
	buf_release(&t->key_lo);
	buf_release(&t->key_hi);
	buf_release(&t->key_scratch);
	bt_free(t);
}

uint64_t
tablet_id(const struct tablet *t)
{
	return t->id;
}

struct slice
tablet_start(const struct tablet *t)
{
	return buf_slice(&t->start);
}

struct slice
tablet_end(const struct tablet *t)
{
	return buf_slice(&t->end);
}

bool
tablet_contains(const struct tablet *t, struct slice row)
{
	if (slice_compare(row, buf_slice(&t->start)) < 0)
		return false;
	return t->end.n == 0 || slice_compare(row, buf_slice(&t->end)) < 0;
}

uint64_t
tablet_flushed_seq(const struct tablet *t)
{
	return atomic_load(&t->flushed_seq);
}

/*
 * Restrict *it to the tablet's rows, when the tablet has bounds: after a
 * split its files hold rows of its sibling too.  Takes ownership of *it.
 */
int
tablet_range_wrap(struct tablet *t, struct iter **it)
{
	if (t->key_lo.n == 0 && t->key_hi.n == 0)
		return 0;
	return range_iter_new(*it, buf_slice(&t->key_lo),
	    buf_slice(&t->key_hi), it);
}

void
tablet_get_stats(struct tablet *t, struct tablet_stats *out)
{
	struct tablet_version *v = tablet_version_get(t);

	memset(out, 0, sizeof(*out));
	out->sstables = v->file_count;
	for (size_t i = 0; i < v->file_count; i++) {
		out->sstable_bytes += v->files[i].meta.size;
		if (v->files[i].reader == NULL) {
			out->damaged_sstables++;
			continue;
		}
		out->data_bytes += sst_reader_range_size(v->files[i].reader,
		    buf_slice(&t->key_lo), buf_slice(&t->key_hi));
	}
	out->memtable_bytes = memtable_memory_usage(v->mem) +
	    (v->imm ? memtable_memory_usage(v->imm) : 0);
	out->flushes = atomic_load(&t->flushes);
	out->compactions = atomic_load(&t->compactions);
	out->requests = tablet_request_count(t);
	tablet_version_unref(v);
}

void
tablet_request_note(struct tablet *t, struct slice row)
{
	uint64_t n = atomic_fetch_add_explicit(&t->requests, 1,
	    memory_order_relaxed) + 1;

	if (row.n == 0 || n % TABLET_SAMPLE_EVERY != 0 ||
	    mutex_trylock(&t->sample_mu) != 0)
		return;
	/* A failed copy leaves the slot empty: a sample less. */
	if (buf_set(&t->samples[t->sample_next], row.p, row.n) < 0)
		t->samples[t->sample_next].n = 0;
	t->sample_next = (t->sample_next + 1) % TABLET_SAMPLES;
	if (t->sample_count < TABLET_SAMPLES)
		t->sample_count++;
	mutex_unlock(&t->sample_mu);
}

static int
sample_compare(const void *a, const void *b)
{
	return slice_compare(buf_slice(a), buf_slice(b));
}

int
tablet_request_split_row(struct tablet *t, struct buf *row)
{
	struct buf rows[TABLET_SAMPLES];
	size_t n = 0, first = 0;
	int rc = 0;

	mutex_lock(&t->sample_mu);
	for (size_t i = 0; i < t->sample_count && rc == 0; i++) {
		struct slice r = buf_slice(&t->samples[i]);

		/* Inside the range, start excluded: a split there is none. */
		if (r.n == 0 || slice_compare(r, buf_slice(&t->start)) <= 0 ||
		    (t->end.n > 0 && slice_compare(r, buf_slice(&t->end)) >= 0))
			continue;
		buf_init(&rows[n]);
		if ((rc = buf_set(&rows[n], r.p, r.n)) == 0)
			n++;
		else
			buf_release(&rows[n]);
	}
	mutex_unlock(&t->sample_mu);
	if (rc == 0 && n < TABLET_SAMPLES / 4)
		rc = BT_NOTFOUND;
	if (rc == 0) {
		qsort(rows, n, sizeof(*rows), sample_compare);
		/* The middle; past the rows equal to the first, so that the
		 * left tablet is not empty of requests. */
		first = n / 2;
		while (first < n && slice_compare(buf_slice(&rows[first]),
		    buf_slice(&rows[0])) == 0)
			first++;
		if (first == n)
			rc = BT_NOTFOUND;	/* one row: no split helps */
		else
			rc = buf_set(row, rows[first].p, rows[first].n);
	}
	for (size_t i = 0; i < n; i++)
		buf_release(&rows[i]);
	return rc;
}

uint64_t
tablet_request_count(const struct tablet *t)
{
	return atomic_load_explicit(&t->requests, memory_order_relaxed);
}

struct tablet_schema_change {
	struct tablet *t;
	struct tablet_schema *schema;	/* referenced */
	struct tablet_version *v;	/* empty, with room for room files */
	size_t room;
};

int
tablet_schema_prepare(struct tablet *t, struct tablet_schema *schema,
    struct tablet_schema_change **out)
{
	struct tablet_schema_change *c;

	if ((c = bt_calloc(1, sizeof(*c))) == NULL)
		return -ENOMEM;
	mutex_lock(&t->mu);
	c->room = t->current->file_count;
	mutex_unlock(&t->mu);
	if ((c->v = tablet_version_alloc(c->room)) == NULL) {
		bt_free(c);
		return -ENOMEM;
	}
	c->t = t;
	c->schema = schema;
	tablet_schema_ref(schema);
	*out = c;
	return 0;
}

int
tablet_schema_install(struct tablet_schema_change *c)
{
	struct tablet *t = c->t;
	struct tablet_version *v = c->v;
	int rc = 0;

	mutex_lock(&t->mu);
	if (t->current->file_count <= c->room) {
		c->v = NULL;	/* installed below */
	} else if ((v = tablet_version_alloc(t->current->file_count)) == NULL) {
		/* It gained files since the prepare. */
		rc = -ENOMEM;
		goto out;
	}
	tablet_version_share(v, t->current);
	tablet_schema_unref(v->schema);
	v->schema = c->schema;
	c->schema = NULL;
	for (size_t i = 0; i < v->file_count; i++)
		v->files[i].group = tablet_schema_group_index(v->schema,
		    v->files[i].meta.group);
	tablet_version_install_locked(t, v);
out:
	mutex_unlock(&t->mu);
	tablet_schema_change_free(c);
	return rc;
}

void
tablet_schema_change_free(struct tablet_schema_change *c)
{
	if (c == NULL)
		return;
	tablet_version_unref(c->v);
	tablet_schema_unref(c->schema);
	bt_free(c);
}

/* ---- Writer side ---- */


static enum ikey_kind
ikey_kind_of(enum mutation_kind kind)
{
	switch (kind) {
	case MUTATION_PUT:
		return IKEY_PUT;
	case MUTATION_DELETE_VERSION:
		return IKEY_DELETE_VERSION;
	case MUTATION_DELETE_COLUMN:
		return IKEY_DELETE_COLUMN;
	case MUTATION_DELETE_FAMILY:
		return IKEY_DELETE_FAMILY;
	case MUTATION_DELETE_ROW:
		break;
	}
	return IKEY_DELETE_ROW;
}

/* The usage label of a mutation (usage.h): its family; none for a row
 * delete. */
static struct slice
mutation_label(const struct mutation *m)
{
	return m->kind == MUTATION_DELETE_ROW ? slice_make("", 0) : m->family;
}

/* Make room in mem_families for the labels of ops.  Caller holds
 * usage_mu. */
static int
tablet_usage_reserve_locked(struct tablet *t, const struct mutation *ops,
    size_t count)
{
	struct usage_label *l;
	int rc;

	for (size_t i = 0; i < count; i++)
		if ((rc = usage_obtain(&t->mem_families,
		    mutation_label(&ops[i]), &l)) < 0)
			return rc;
	return 0;
}

int
tablet_apply(struct tablet *t, uint64_t first_seq, struct slice row,
    const struct mutation *ops, size_t count)
{
	size_t usage;
	int rc;

	assert(count > 0 && first_seq > atomic_load_explicit(
	    &t->last_applied_seq, memory_order_relaxed));	/* T2 */
	/* Labels first: a failure (only where no tablet_reserve() came
	 * first, as at replay) leaves the memtable unchanged. */
	mutex_lock(&t->usage_mu);
	if ((rc = tablet_usage_reserve_locked(t, ops, count)) < 0) {
		mutex_unlock(&t->usage_mu);
		return rc;
	}
	for (size_t i = 0; i < count; i++) {
		const struct mutation *m = &ops[i];
		struct ikey k = {
			.row = row,
			.family = m->family,
			.qualifier = m->qualifier,
			.ts = m->ts,
			.seq = first_seq + i,
			.kind = ikey_kind_of(m->kind),
		};
		struct slice value = m->kind == MUTATION_PUT ? m->value :
		    slice_make("", 0);

		struct usage_label *l;

		buf_clear(&t->key_scratch);
		if ((rc = ikey_encode(&k, &t->key_scratch)) < 0 ||
		    (rc = memtable_add(t->mem, buf_slice(&t->key_scratch),
		    value)) < 0) {
			mutex_unlock(&t->usage_mu);
			return rc;
		}
		l = usage_find(&t->mem_families, mutation_label(m));
		l->entries++;
		l->key_bytes += t->key_scratch.n;
		l->value_bytes += value.n;
	}
	mutex_unlock(&t->usage_mu);
	if (atomic_load(&t->mem_first_seq) == UINT64_MAX)
		atomic_store(&t->mem_first_seq, first_seq);
	usage = memtable_memory_usage(t->mem) - t->mem_base;
	active_bytes_add(t, (int64_t)usage -
	    (int64_t)atomic_load(&t->mem_usage));
	/* A plain store (applies are serialized): a seq_cst one is an xchg
	 * on every mutation. */
	atomic_store_explicit(&t->mem_usage, usage, memory_order_release);
	atomic_store_explicit(&t->last_applied_seq, first_seq + count - 1,
	    memory_order_relaxed);
	return 0;
}

int
tablet_reserve(struct tablet *t, struct slice row,
    const struct mutation *ops, size_t count)
{
	size_t keys = 0, values = 0, key_max = 0;
	int rc;

	if (!tablet_serving(t))
		return tablet_not_serving(t);
	for (size_t i = 0; i < count; i++) {
		size_t k = ikey_encoded_max(row.n, ops[i].family.n,
		    ops[i].qualifier.n);

		keys += k;
		if (k > key_max)
			key_max = k;
		if (ops[i].kind == MUTATION_PUT)
			values += ops[i].value.n;
	}
	buf_clear(&t->key_scratch);
	if ((rc = buf_reserve(&t->key_scratch, key_max)) < 0)
		return rc;
	mutex_lock(&t->usage_mu);
	rc = tablet_usage_reserve_locked(t, ops, count);
	mutex_unlock(&t->usage_mu);
	if (rc < 0)
		return rc;
	return memtable_reserve(t->mem, count, keys, values);
}

void
tablet_reserve_end(struct tablet *t)
{
	memtable_reserve_end(t->mem);
}

size_t
tablet_memtable_usage(const struct tablet *t)
{
	return atomic_load(&t->mem_usage);
}

bool
tablet_has_frozen(const struct tablet *t)
{
	return atomic_load(&t->imm_first_seq) != UINT64_MAX;
}

int
tablet_freeze(struct tablet *t)
{
	struct tablet_version *v;
	struct memtable *mem;
	struct usage fresh;
	struct usage_label *l;
	int rc;

	if (memtable_count(t->mem) == 0)
		return BT_NOTFOUND;
	if (tablet_has_frozen(t))
		return -EBUSY;
	/* The new memtable's labels: the old one's, counting nothing. */
	usage_init(&fresh);
	rc = 0;
	mutex_lock(&t->usage_mu);
	for (size_t i = 0; i < t->mem_families.count && rc == 0; i++)
		rc = usage_obtain(&fresh,
		    slice_str(t->mem_families.labels[i].name), &l);
	mutex_unlock(&t->usage_mu);
	if (rc < 0) {
		usage_release(&fresh);
		return rc;
	}
	if ((rc = memtable_new(&mem)) < 0) {
		usage_release(&fresh);
		return rc;
	}
	mutex_lock(&t->mu);
	if ((v = tablet_version_copy(t->current, 0)) == NULL) {
		mutex_unlock(&t->mu);
		memtable_unref(mem);
		usage_release(&fresh);
		return -ENOMEM;
	}
	assert(v->mem == t->mem);	/* T3 */
	v->imm = v->mem;	/* the copy's reference moves to imm */
	v->mem = mem;
	t->imm_max_seq = atomic_load_explicit(&t->last_applied_seq,
	    memory_order_relaxed);
	atomic_store(&t->imm_first_seq, atomic_load(&t->mem_first_seq));
	atomic_store(&t->mem_first_seq, UINT64_MAX);
	t->mem = mem;
	t->imm_bytes = atomic_load(&t->mem_usage);
	tablet_frozen_bytes_add(t, (int64_t)t->imm_bytes);
	active_bytes_add(t, -(int64_t)t->imm_bytes);
	t->mem_base = memtable_memory_usage(mem);
	atomic_store(&t->mem_usage, 0);
	mutex_lock(&t->usage_mu);
	assert(t->imm_families.count == 0);	/* cleared by its flush */
	usage_release(&t->imm_families);
	t->imm_families = t->mem_families;
	t->mem_families = fresh;
	mutex_unlock(&t->usage_mu);
	tablet_version_install_locked(t, v);
	mutex_unlock(&t->mu);
	return 0;
}

/*
 * mem before imm: a freeze stores imm = mem and then mem = UINT64_MAX, so
 * read in the other order, a freeze between the two loads would show both
 * as UINT64_MAX and the frozen memtable's records as flushed.
 */
uint64_t
tablet_oldest_unflushed_seq(const struct tablet *t)
{
	uint64_t mem = atomic_load(&t->mem_first_seq);
	uint64_t imm = atomic_load(&t->imm_first_seq);

	return imm < mem ? imm : mem;
}
