/*
 * tablet.c - a tablet's memtables and SSTables, its versions, and its
 * minor and merging/major compactions (tablet.h); the read path is in
 * tablet_read.c.
 *
 * The tablet's state visible to readers is a version: memtable, frozen
 * memtable, schema and SSTable readers, all referenced.  A change (freeze,
 * flush, compaction, schema) builds a new version from the current one and
 * installs it under the mutex; readers take a reference to the current
 * version and never block the writer.
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
#include "tablet/range_iter.h"
#include "tablet/tablet.h"
#include "tablet/tablet_int.h"
#include "util/alloc.h"
#include "util/bloom.h"
#include "util/error.h"

/* Count delta bytes more (or fewer) in the frozen memtables of all
 * tablets. */
static void
frozen_bytes_add(struct tablet *t, int64_t delta)
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

static size_t
schema_group_index(const struct tablet_schema *s, const char *name)
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
		tg->in_memory = g->in_memory;
	}
	for (size_t i = 0; i < ct->family_count; i++) {
		const struct catalog_family *f = &ct->families[i];
		struct tablet_family *tf = &s->families[s->family_count++];

		snprintf(tf->name, sizeof(tf->name), "%s", f->name);
		tf->created_seq = f->created_seq;
		tf->group = schema_group_index(s, f->group);
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
static void
tablet_file_ref(const struct tablet_file *f)
{
	if (f->reader != NULL)
		sst_reader_ref(f->reader);
	if (f->damage != NULL)
		atomic_fetch_add(&f->damage->refs, 1);
}

static void
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

/* An empty version with room for room files, for version_share().
 * NULL on allocation failure. */
static struct tablet_version *
version_alloc(size_t room)
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
static void
version_share(struct tablet_version *v, const struct tablet_version *from)
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
static struct tablet_version *
version_copy(const struct tablet_version *from, size_t extra)
{
	struct tablet_version *v = version_alloc(from->file_count + extra);

	if (v != NULL)
		version_share(v, from);
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

/* Install v as current (the caller built it from current under t->mu). */
static void
version_install_locked(struct tablet *t, struct tablet_version *v)
{
	struct tablet_version *old = t->current;

	t->current = v;
	tablet_version_unref(old);
}

/* ---- Files ---- */

static void
sst_path(char *dst, size_t size, const char *dir, uint64_t number)
{
	snprintf(dst, size, "%s/%016" PRIu64 ".sst", dir, number);
}

/*
 * Open an SSTable.  For an in-memory locality group, read every block once
 * so that the block cache holds the file (Bigtable's in-memory groups); a
 * damaged block is left for the read that needs it to report.
 */
static int
file_open(const struct tablet_env *tenv, const struct catalog_file *meta,
    const struct tablet_schema *schema, struct sst_reader **out)
{
	size_t g = schema_group_index(schema, meta->group);
	struct iter *it;
	char path[4096];
	int rc;

	sst_path(path, sizeof(path), tenv->sst_dir, meta->number);
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

/* A new read budget for the files of v (tablet.h, TABLET_SEEK_BYTES). */
static void
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
static int
tablet_new(const struct tablet_env *tenv, const struct catalog_tablet *ct,
    struct tablet_schema *schema, struct tablet **out)
{
	struct tablet_version *v;
	struct tablet *t;
	int rc = -ENOMEM;

	if ((t = bt_calloc(1, sizeof(*t))) == NULL)
		return -ENOMEM;
	atomic_init(&t->refs, 1);
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
static int
version_files_alloc(struct tablet_version *v, size_t count)
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
	if ((rc = version_files_alloc(v, count)) < 0)
		goto out_free;
	for (size_t i = 0; i < count; i++) {
		struct tablet_file *f = &v->files[i];

		f->meta = files[i];
		f->group = schema_group_index(schema, files[i].group);
		bt_error_clear();
		if ((rc = file_open(tenv, &files[i], schema, &f->reader)) < 0) {
			f->reader = NULL;
			if (!file_error_is_damage(rc) ||
			    (rc = file_damage_new(&files[i], rc,
			    &f->damage)) < 0)
				goto out_free;
		}
		v->file_count++;
	}
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
		total += pv[i]->file_count;
	}
	if ((rc = tablet_new(&parents[0]->tenv, ct, pv[0]->schema, &t)) < 0)
		goto out;
	if ((rc = version_files_alloc(t->current, total)) < 0) {
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
		if (memtable_count(parents[i]->mem) > 0 ||
		    tablet_has_frozen(parents[i]))
			return bt_error_set(-EBUSY, "tablet %" PRIu64 ": merge "
			    "with unflushed data", parents[i]->id);
	return tablet_from(ct, parents, 2, out);
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
		frozen_bytes_add(t, -(int64_t)t->imm_bytes);
	active_bytes_add(t, -(int64_t)atomic_load(&t->mem_usage));
	tablet_version_unref(t->current);
	mutex_destroy(&t->mu);
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
	if ((c->v = version_alloc(c->room)) == NULL) {
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
	} else if ((v = version_alloc(t->current->file_count)) == NULL) {
		/* It gained files since the prepare. */
		rc = -ENOMEM;
		goto out;
	}
	version_share(v, t->current);
	tablet_schema_unref(v->schema);
	v->schema = c->schema;
	c->schema = NULL;
	for (size_t i = 0; i < v->file_count; i++)
		v->files[i].group = schema_group_index(v->schema,
		    v->files[i].meta.group);
	version_install_locked(t, v);
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

int
tablet_apply(struct tablet *t, uint64_t first_seq, struct slice row,
    const struct mutation *ops, size_t count)
{
	size_t usage;
	int rc;

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

		buf_clear(&t->key_scratch);
		if ((rc = ikey_encode(&k, &t->key_scratch)) < 0 ||
		    (rc = memtable_add(t->mem, buf_slice(&t->key_scratch),
		    value)) < 0)
			return rc;
	}
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
	int rc;

	if (memtable_count(t->mem) == 0)
		return BT_NOTFOUND;
	if (tablet_has_frozen(t))
		return -EBUSY;
	if ((rc = memtable_new(&mem)) < 0)
		return rc;
	mutex_lock(&t->mu);
	if ((v = version_copy(t->current, 0)) == NULL) {
		mutex_unlock(&t->mu);
		memtable_unref(mem);
		return -ENOMEM;
	}
	v->imm = v->mem;	/* the copy's reference moves to imm */
	v->mem = mem;
	t->imm_max_seq = atomic_load_explicit(&t->last_applied_seq,
	    memory_order_relaxed);
	atomic_store(&t->imm_first_seq, atomic_load(&t->mem_first_seq));
	atomic_store(&t->mem_first_seq, UINT64_MAX);
	t->mem = mem;
	t->imm_bytes = atomic_load(&t->mem_usage);
	frozen_bytes_add(t, (int64_t)t->imm_bytes);
	active_bytes_add(t, -(int64_t)t->imm_bytes);
	t->mem_base = memtable_memory_usage(mem);
	atomic_store(&t->mem_usage, 0);
	version_install_locked(t, v);
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

/* ---- Writing SSTables ---- */

/* An SSTable being written to tmp/ for one group. */
struct out_file {
	struct sst_builder *builder;
	struct catalog_file meta;
	char tmp_path[4096];
};

/*
 * Start an output file with g's options; parallel: its blocks are
 * compressed on a second thread (sst_options.parallel).
 */
static int
out_file_start(struct tablet *t, const struct tablet_group *g,
    bool parallel, struct out_file *o)
{
	struct sst_options opts = g->opts;
	int rc;

	memset(&o->meta, 0, sizeof(o->meta));
	if ((rc = catalog_next_number(t->tenv.catalog, &o->meta.number)) < 0)
		return rc;
	o->meta.tablet_id = t->id;
	snprintf(o->meta.group, sizeof(o->meta.group), "%s", g->name);
	sst_path(o->tmp_path, sizeof(o->tmp_path), t->tenv.tmp_dir,
	    o->meta.number);
	opts.parallel = parallel;
	return sst_builder_new(t->tenv.env, o->tmp_path, &opts, &o->builder);
}

/*
 * Finish an output file: sync it and move it into sst/ (the caller syncs
 * the directory once for all outputs).  On failure the tmp file is
 * removed.
 */
static int
out_file_finish(struct tablet *t, struct out_file *o)
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
	sst_path(path, sizeof(path), t->tenv.sst_dir, o->meta.number);
	if ((rc = env_path_rename(t->tenv.env, o->tmp_path, path)) < 0)
		goto out_remove;
	return 0;
out_remove:
	env_path_remove(t->tenv.env, o->tmp_path);
	return rc;
}

static void
out_file_abandon(struct tablet *t, struct out_file *o)
{
	if (o->builder == NULL)
		return;
	sst_builder_free(o->builder);
	o->builder = NULL;
	env_path_remove(t->tenv.env, o->tmp_path);
}

/*
 * Name the finished outputs in the catalog in place of the removed files,
 * open them, and install a version with the change.  The outputs are
 * already in sst/ with the directory synced.  When imm_done, the frozen
 * memtable is dropped from the version too.
 */
static int
commit_files(struct tablet *t, struct out_file *outs, size_t out_count,
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
		rc = file_open(&t->tenv, &added[i], v->schema, &readers[i]);
	tablet_version_unref(v);
	if (rc < 0)
		goto out_readers;
	/*
	 * The new version is allocated before the catalog names the
	 * outputs: after that nothing may fail, or the caller would delete
	 * files that the catalog names.  Only this thread adds files to t
	 * (tablet.h), so the room counted above is enough.
	 */
	if ((v = version_alloc(room)) == NULL) {
		rc = -ENOMEM;
		goto out_readers;
	}
	if ((rc = catalog_tablet_apply(t->tenv.catalog, t->id, added,
	    out_count, removed, removed_count, flushed_seq)) < 0) {
		tablet_version_unref(v);
		goto out_readers;
	}

	mutex_lock(&t->mu);
	version_share(v, t->current);
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
		v->files[i].group = schema_group_index(v->schema,
		    added[i].group);
		v->files[i].reader = readers[i];
		v->files[i].damage = NULL;
	}
	v->file_count = n + out_count;
	if (imm_done && v->imm != NULL) {
		frozen_bytes_add(t, -(int64_t)t->imm_bytes);
		t->imm_bytes = 0;
		memtable_unref(v->imm);
		v->imm = NULL;
	}
	if (flushed_seq > atomic_load(&t->flushed_seq))
		atomic_store(&t->flushed_seq, flushed_seq);
	tablet_seek_reset(t, v);
	version_install_locked(t, v);
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
	struct out_file *outs = NULL;
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
			if (outs[g].builder == NULL && (rc = out_file_start(t,
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
		if ((rc = out_file_finish(t, &outs[out_count])) < 0)
			goto out_abandon;
		out_count++;
	}
	if (out_count > 0 &&
	    (rc = env_dir_sync(t->tenv.env, t->tenv.sst_dir)) < 0)
		goto out_remove;
	/* A failed commit may be on disk all the same (its sync failed, not
	 * its write): the outputs stay for the catalog to name, or for the
	 * master to collect. */
	if ((rc = commit_files(t, outs, out_count, NULL, 0, t->imm_max_seq,
	    true)) < 0)
		goto out_abandon;
	atomic_store(&t->imm_first_seq, UINT64_MAX);
	atomic_fetch_add(&t->flushes, 1);
	goto out;
out_remove:
	for (size_t i = 0; i < out_count; i++) {
		char path[4096];

		sst_path(path, sizeof(path), t->tenv.sst_dir,
		    outs[i].meta.number);
		env_path_remove(t->tenv.env, path);
	}
out_abandon:
	for (size_t g = 0; g < s->group_count; g++)
		out_file_abandon(t, &outs[g]);
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

bool
tablet_needs_compaction(const struct tablet *t)
{
	struct tablet_version *v = tablet_version_get((struct tablet *)t);
	bool needed = false;

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
tablet_file_release(const struct tablet_env *tenv, uint64_t number)
{
	char path[4096];

	if (catalog_file_is_live(tenv->catalog, number) != 0)
		return;		/* still named, or the catalog cannot say */
	sst_path(path, sizeof(path), tenv->sst_dir, number);
	env_path_remove(tenv->env, path);
}

struct compact_out {
	struct tablet *t;
	const struct tablet_group *group;
	struct out_file *out;
};

static int
compact_keep(void *arg, struct slice key, struct slice value)
{
	struct compact_out *c = arg;
	int rc;

	if (c->out->builder == NULL &&
	    (rc = out_file_start(c->t, c->group, true, c->out)) < 0)
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
	struct out_file out = { 0 };
	struct compact_out c = { t, &v->schema->groups[g], &out };
	struct cells_row row;
	size_t n = 0, removed_count;
	uint64_t max_seq = 0, rows = 0;
	bool whole = take == version_group_files(v, g);
	int rc;

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
		if ((rc = out_file_finish(t, &out)) < 0)
			goto out;
		if ((rc = env_dir_sync(t->tenv.env, t->tenv.sst_dir)) < 0)
			goto out;
	}
	if ((rc = commit_files(t, &out, out.meta.number != 0 ? 1 : 0,
	    removed, n, 0, false)) < 0)
		goto out;
	for (size_t i = 0; i < n; i++)
		tablet_file_release(&t->tenv, removed[i]);
	atomic_fetch_add(&t->compactions, 1);
	rc = 0;
	goto out;
out_abandon:
	out_file_abandon(t, &out);
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
	v = version_copy(t->current, 0);
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
	tablet_version_unref(v);
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
