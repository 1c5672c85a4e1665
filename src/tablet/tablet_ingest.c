/*
 * tablet_ingest.c - SSTables built outside the memtable and added to a
 * tablet (tablet.h, ingest): what a bulk load writes for each tablet
 * (docs/design.md section 8).
 *
 * The files are written as a flush writes its outputs (tablet_out_*, one
 * per locality group, the group's block size, compression and Bloom
 * filter), and installed as a flush installs them (a new version, newest
 * files first), except that the catalog transaction that names them is
 * the caller's, who names the files of many tablets in one.  So the
 * install is split in two, as a schema change is: finish allocates all
 * that the install needs, and the install, after the catalog names the
 * files, cannot fail.
 */
#include <assert.h>
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "sstable/sstable.h"
#include "tablet/ikey.h"
#include "tablet/tablet.h"
#include "tablet/tablet_int.h"
#include "util/alloc.h"
#include "util/error.h"

struct tablet_ingest {
	struct tablet *t;		/* referenced */
	struct tablet_schema *schema;	/* referenced: the groups written */
	bool parallel;
	struct tablet_out *outs;	/* one per group, started on demand */
	/* The family of the last entry, looked up once for its run. */
	const struct tablet_family *last;
	size_t last_len;
	struct buf scratch;
	/* After finish: the files in sst/, compacted to the front of
	 * files, their readers, and the version the install fills. */
	bool finished;
	bool installed;
	struct catalog_file *files;
	struct sst_reader **readers;
	size_t file_count;
	struct tablet_version *next;
	size_t room;			/* next's room for files */
};

int
tablet_ingest_new(struct tablet *t, bool parallel, struct tablet_ingest **out)
{
	struct tablet_version *v;
	struct tablet_ingest *in;

	if (!tablet_serving(t))
		return tablet_not_serving(t);
	if ((in = bt_calloc(1, sizeof(*in))) == NULL)
		return -ENOMEM;
	v = tablet_version_get(t);
	in->schema = v->schema;
	tablet_schema_ref(in->schema);
	tablet_version_unref(v);
	in->outs = bt_calloc(in->schema->group_count + 1, sizeof(*in->outs));
	in->files = bt_calloc(in->schema->group_count + 1,
	    sizeof(*in->files));
	in->readers = bt_calloc(in->schema->group_count + 1,
	    sizeof(*in->readers));
	if (in->outs == NULL || in->files == NULL || in->readers == NULL) {
		tablet_schema_unref(in->schema);
		bt_free(in->outs);
		bt_free(in->files);
		bt_free(in->readers);
		bt_free(in);
		return -ENOMEM;
	}
	tablet_ref(t);
	in->t = t;
	in->parallel = parallel;
	buf_init(&in->scratch);
	*out = in;
	return 0;
}

/* Whether key's row lies in t's range: esc() is order-preserving and
 * prefix-free, so comparing the key with esc(start) and esc(end) says
 * (ikey.h). */
static bool
key_in_range(const struct tablet *t, struct slice key)
{
	if (t->key_lo.n > 0 && slice_compare(key, buf_slice(&t->key_lo)) < 0)
		return false;
	return t->key_hi.n == 0 ||
	    slice_compare(key, buf_slice(&t->key_hi)) < 0;
}

int
tablet_ingest_add(struct tablet_ingest *in, struct slice key,
    struct slice value)
{
	const struct tablet_schema *s = in->schema;
	const struct tablet_family *f = NULL;
	struct slice family;
	struct ikey k;
	int frc, rc;

	assert(!in->finished);
	assert(key_in_range(in->t, key));
	/* Only the family matters, as in a flush. */
	if ((frc = ikey_family(key, &family)) < 0) {
		if ((rc = ikey_decode(key, &k, &in->scratch)) < 0)
			return bt_error_set(-EINVAL, "bulk load: a key that "
			    "is not an internal key");
		frc = k.kind == IKEY_DELETE_ROW;
		family = k.family;
	}
	if (frc == 0) {
		if (in->last == NULL || family.n != in->last_len ||
		    memcmp(family.p, in->last->name, in->last_len) != 0) {
			if ((in->last = tablet_schema_family(s,
			    family)) == NULL)
				return bt_error_set(-ENOENT, "no family %.*s",
				    (int)family.n, (const char *)family.p);
			in->last_len = strlen(in->last->name);
		}
		f = in->last;
	}
	/* A row delete goes to every group, as in a flush. */
	for (size_t g = 0; g < s->group_count; g++) {
		if (f != NULL && f->group != g)
			continue;
		if (in->outs[g].builder == NULL && (rc = tablet_out_start(
		    in->t, &s->groups[g], in->parallel, &in->outs[g])) < 0)
			return rc;
		if ((rc = sst_builder_add(in->outs[g].builder, key,
		    value)) < 0)
			return rc;
	}
	return 0;
}

/* Remove the finished files that the catalog does not name. */
static void
ingest_release_files(struct tablet_ingest *in)
{
	for (size_t i = 0; i < in->file_count; i++) {
		sst_reader_unref(in->readers[i]);
		in->readers[i] = NULL;
		tablet_file_release(&in->t->tenv, in->files[i].number);
	}
	in->file_count = 0;
}

int
tablet_ingest_finish(struct tablet_ingest *in, uint64_t max_seq)
{
	const struct tablet_schema *s = in->schema;
	struct tablet_version *v;
	int rc = 0;

	assert(!in->finished);
	in->finished = true;
	for (size_t g = 0; g < s->group_count; g++) {
		if (in->outs[g].builder == NULL)
			continue;
		in->outs[g].meta.max_seq = max_seq;
		if ((rc = tablet_out_finish(in->t, &in->outs[g])) < 0)
			goto out_abandon;
		in->files[in->file_count++] = in->outs[g].meta;
	}
	for (size_t i = 0; i < in->file_count; i++)
		if ((rc = tablet_file_open(&in->t->tenv, &in->files[i],
		    in->schema, &in->readers[i])) < 0)
			goto out_abandon;
	/* Room for the files the tablet has now and these: no other file
	 * adder runs until the install (T4). */
	v = tablet_version_get(in->t);
	in->room = v->file_count + in->file_count;
	in->next = tablet_version_alloc(in->room);
	tablet_version_unref(v);
	if (in->next == NULL) {
		rc = -ENOMEM;
		goto out_abandon;
	}
	return 0;
out_abandon:
	for (size_t g = 0; g < s->group_count; g++)
		tablet_out_abandon(in->t, &in->outs[g]);
	ingest_release_files(in);
	return rc;
}

const struct catalog_file *
tablet_ingest_files(const struct tablet_ingest *in, size_t *count)
{
	assert(in->finished);
	*count = in->file_count;
	return in->files;
}

void
tablet_ingest_install(struct tablet_ingest *in, uint64_t flushed_seq)
{
	struct tablet *t = in->t;
	struct tablet_version *v = in->next;
	size_t n;

	assert(in->finished && !in->installed && v != NULL);
	in->installed = true;
	in->next = NULL;
	mutex_lock(&t->mu);
	assert(t->current->file_count + in->file_count <= in->room); /* T4 */
	tablet_version_share(v, t->current);
	/* The new files first (newest), then the others in their order. */
	n = v->file_count;
	memmove(v->files + in->file_count, v->files, n * sizeof(*v->files));
	for (size_t i = 0; i < in->file_count; i++) {
		v->files[i].meta = in->files[i];
		v->files[i].group = tablet_schema_group_index(v->schema,
		    in->files[i].group);
		v->files[i].reader = in->readers[i];
		v->files[i].damage = NULL;
		in->readers[i] = NULL;
	}
	v->file_count = n + in->file_count;
	if (flushed_seq > atomic_load(&t->flushed_seq))
		atomic_store(&t->flushed_seq, flushed_seq);
	tablet_seek_reset(t, v);
	tablet_version_install_locked(t, v);
	mutex_unlock(&t->mu);
}

void
tablet_ingest_free(struct tablet_ingest *in)
{
	if (in == NULL)
		return;
	for (size_t g = 0; g < in->schema->group_count; g++)
		tablet_out_abandon(in->t, &in->outs[g]);
	if (!in->installed)
		ingest_release_files(in);
	tablet_version_unref(in->next);
	tablet_schema_unref(in->schema);
	buf_release(&in->scratch);
	bt_free(in->outs);
	bt_free(in->files);
	bt_free(in->readers);
	tablet_unref(in->t);
	bt_free(in);
}
