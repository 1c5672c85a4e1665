/*
 * tablet_usage.c - what a tablet holds per column family (tablet.h,
 * tablet_usage_get(); docs/design.md section 3, "Accounting"): its
 * memtables' counts, kept by tablet_apply() and tablet_freeze(), and its
 * SSTables' usage as each file records it.  Calls into tablet.c only.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sstable/sstable.h"
#include "tablet/tablet.h"
#include "tablet/tablet_int.h"
#include "util/alloc.h"

/* The memtables' labels, each with its share of what its memtable takes
 * (mem_usage, imm_bytes), into out.  Caller holds mu and usage_mu. */
static int
memory_usage_locked(struct tablet *t, struct tablet_usage *out)
{
	struct usage part;
	int rc;

	usage_init(&part);
	out->memory_bytes = atomic_load(&t->mem_usage) + t->imm_bytes;
	if ((rc = usage_merge(&part, &t->mem_families)) < 0)
		goto out;
	usage_apportion(&part, atomic_load(&t->mem_usage));
	if ((rc = usage_merge(&out->memory, &part)) < 0)
		goto out;
	usage_clear(&part);
	if ((rc = usage_merge(&part, &t->imm_families)) < 0)
		goto out;
	usage_apportion(&part, t->imm_bytes);
	rc = usage_merge(&out->memory, &part);
out:
	usage_release(&part);
	return rc;
}

/* File f's usage, each label's bytes its share of the file's size, and
 * how much of it lies in t's range. */
static int
file_usage(const struct tablet *t, const struct tablet_file *f,
    struct tablet_file_usage *out)
{
	struct usage_label *l;
	struct sst_usage su;
	struct sst_info info;
	size_t count;
	int rc;

	out->number = f->meta.number;
	out->size = f->meta.size;
	snprintf(out->group, sizeof(out->group), "%s", f->meta.group);
	usage_init(&out->labels);
	if (f->reader == NULL)
		return 0;
	sst_reader_get_info(f->reader, &info);
	out->data_bytes = info.data_size;
	out->range_bytes = sst_reader_range_size(f->reader,
	    buf_slice(&t->key_lo), buf_slice(&t->key_hi));
	if (!sst_reader_usage(f->reader, &count))
		return 0;
	for (size_t i = 0; i < count; i++) {
		sst_reader_usage_get(f->reader, i, &su);
		if ((rc = usage_obtain(&out->labels, su.label, &l)) < 0) {
			if (rc != -EINVAL)
				return rc;
			/* Not a family's name: nobody's. */
			if ((rc = usage_obtain(&out->labels,
			    slice_make("", 0), &l)) < 0)
				return rc;
		}
		l->entries += su.entries;
		l->key_bytes += su.key_bytes;
		l->value_bytes += su.value_bytes;
	}
	usage_apportion(&out->labels, out->size);
	out->known = true;
	return 0;
}

int
tablet_usage_get(struct tablet *t, struct tablet_usage *out)
{
	struct tablet_version *v;
	int rc;

	memset(out, 0, sizeof(*out));
	usage_init(&out->memory);
	/* One version and the memtable counts that go with it: a flush
	 * installs its files and clears imm_families under mu. */
	mutex_lock(&t->mu);
	v = t->current;
	atomic_fetch_add(&v->refs, 1);
	mutex_lock(&t->usage_mu);
	rc = memory_usage_locked(t, out);
	mutex_unlock(&t->usage_mu);
	mutex_unlock(&t->mu);
	if (rc < 0)
		goto out;
	rc = -ENOMEM;
	if ((out->files = bt_calloc(v->file_count + 1,
	    sizeof(*out->files))) == NULL)
		goto out;
	rc = 0;
	for (size_t i = 0; i < v->file_count && rc == 0; i++) {
		rc = file_usage(t, &v->files[i], &out->files[i]);
		out->file_count++;
	}
out:
	tablet_version_unref(v);
	if (rc < 0)
		tablet_usage_release(out);
	return rc;
}

void
tablet_usage_release(struct tablet_usage *u)
{
	usage_release(&u->memory);
	for (size_t i = 0; i < u->file_count; i++)
		usage_release(&u->files[i].labels);
	bt_free(u->files);
	memset(u, 0, sizeof(*u));
}
