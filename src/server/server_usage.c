/*
 * server_usage.c - a table's bytes per column family and locality group
 * (server.h, server_table_usage(); docs/design.md section 3,
 * "Accounting"), gathered from its tablets' memtable counts and the usage
 * that each SSTable records, every file counted once.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/server.h"
#include "server/server_int.h"
#include "util/alloc.h"

/* The index of the family (group) named name in u, or SIZE_MAX. */
static size_t
family_index(const struct server_table_usage *u, const char *name)
{
	for (size_t i = 0; i < u->family_count; i++)
		if (strcmp(u->families[i].name, name) == 0)
			return i;
	return SIZE_MAX;
}

static size_t
group_index(const struct server_table_usage *u, const char *name)
{
	for (size_t i = 0; i < u->group_count; i++)
		if (strcmp(u->groups[i].name, name) == 0)
			return i;
	return SIZE_MAX;
}

/* u with ct's families and groups, every count 0. */
static int
usage_from_schema(const struct catalog_table *ct,
    struct server_table_usage *u)
{
	memset(u, 0, sizeof(*u));
	u->families = bt_calloc(ct->family_count + 1, sizeof(*u->families));
	u->groups = bt_calloc(ct->group_count + 1, sizeof(*u->groups));
	if (u->families == NULL || u->groups == NULL) {
		server_table_usage_release(u);
		return -ENOMEM;
	}
	for (size_t i = 0; i < ct->family_count; i++) {
		snprintf(u->families[i].name, sizeof(u->families[i].name),
		    "%s", ct->families[i].name);
		snprintf(u->families[i].group, sizeof(u->families[i].group),
		    "%s", ct->families[i].group);
	}
	u->family_count = ct->family_count;
	for (size_t i = 0; i < ct->group_count; i++)
		snprintf(u->groups[i].name, sizeof(u->groups[i].name), "%s",
		    ct->groups[i].name);
	u->group_count = ct->group_count;
	return 0;
}

/* Count a tablet's memtables. */
static void
usage_add_memory(struct server_table_usage *u, const struct usage *mem)
{
	for (size_t i = 0; i < mem->count; i++) {
		const struct usage_label *l = &mem->labels[i];
		size_t f = family_index(u, l->name), g;

		if (f == SIZE_MAX) {
			u->other_memory_bytes += l->bytes;
			continue;
		}
		u->families[f].memory_bytes += l->bytes;
		u->families[f].entries += l->entries;
		u->families[f].value_bytes += l->value_bytes;
		if ((g = group_index(u, u->families[f].group)) != SIZE_MAX)
			u->groups[g].memory_bytes += l->bytes;
	}
}

/*
 * Count one file (once): its bytes to its group, and by its usage to the
 * families of that group; the rest is the group's other bytes.  A file
 * that a split shares counts for its families only the part of it in the
 * ranges of the tablets that still name it (range_bytes of its
 * data_bytes, by the index): the rest is rows that a sibling has since
 * compacted into files of its own, and counting it again would count
 * those cells twice.
 */
static int
usage_add_file(struct server_table_usage *u,
    const struct tablet_file_usage *file, uint64_t range_bytes)
{
	size_t g = group_index(u, file->group);
	struct server_group_usage *gu;
	struct server_file_usage *fu;
	uint64_t live, whole;

	if (g == SIZE_MAX)
		return 0;	/* a group the schema lost: nobody's */
	fu = &u->files[u->file_count];
	if (file->labels.count > 0 && (fu->labels = bt_calloc(
	    file->labels.count, sizeof(*fu->labels))) == NULL)
		return -ENOMEM;
	u->file_count++;
	gu = &u->groups[g];
	gu->files++;
	gu->disk_bytes += file->size;
	fu->number = file->number;
	snprintf(fu->group, sizeof(fu->group), "%s", gu->name);
	fu->size = file->size;
	fu->known = file->known;
	fu->data_bytes = file->data_bytes;
	fu->range_bytes = range_bytes;
	if (!file->known) {
		gu->unknown_bytes += file->size;
		return 0;
	}
	whole = file->data_bytes;
	live = range_bytes < whole ? range_bytes : whole;
	for (size_t i = 0; i < file->labels.count; i++) {
		const struct usage_label *l = &file->labels.labels[i];
		size_t f = family_index(u, l->name);
		uint64_t bytes = usage_share(l->bytes, live, whole);

		fu->labels[fu->label_count++] = *l;
		if (f == SIZE_MAX ||
		    strcmp(u->families[f].group, gu->name) != 0) {
			gu->other_bytes += l->bytes;
			continue;
		}
		gu->other_bytes += l->bytes - bytes;
		u->families[f].disk_bytes += bytes;
		u->families[f].entries += usage_share(l->entries, live, whole);
		u->families[f].value_bytes += usage_share(l->value_bytes,
		    live, whole);
	}
	return 0;
}

/* A file of the table, and the bytes of it in its tablets' ranges. */
struct usage_file {
	const struct tablet_file_usage *file;
	uint64_t range_bytes;
};

static int
usage_file_compare(const void *a, const void *b)
{
	uint64_t x = ((const struct usage_file *)a)->file->number;
	uint64_t y = ((const struct usage_file *)b)->file->number;

	return x < y ? -1 : x > y;
}

/* Each file of the tablets' usages once in files (room for every one),
 * with the range bytes of every tablet that names it; the count. */
static size_t
usage_files_gather(const struct tablet_usage *tu, size_t tablet_count,
    struct usage_file *files)
{
	size_t all = 0, count = 0;

	for (size_t i = 0; i < tablet_count; i++)
		for (size_t k = 0; k < tu[i].file_count; k++)
			files[all++] = (struct usage_file){ &tu[i].files[k],
			    tu[i].files[k].range_bytes };
	qsort(files, all, sizeof(*files), usage_file_compare);
	for (size_t i = 0; i < all; i++) {
		if (count > 0 && files[count - 1].file->number ==
		    files[i].file->number)
			files[count - 1].range_bytes += files[i].range_bytes;
		else
			files[count++] = files[i];
	}
	return count;
}

int
server_table_usage(struct server *s, const char *table,
    struct server_table_usage *out)
{
	struct server_table_usage u;
	struct catalog_table *ct;
	struct server_table *t;
	struct tablet_map *m;
	struct tablet_usage *tu = NULL;
	struct usage_file *files = NULL;
	size_t got = 0, file_total = 0, count;
	int rc;

	if ((rc = server_table_get(s, table, &ct)) < 0)
		return rc;
	rc = usage_from_schema(ct, &u);
	catalog_table_free(ct);
	if (rc < 0)
		return rc;
	if ((rc = server_table_lookup(s, table, &t)) < 0)
		goto out_usage;
	m = server_table_map(t);
	if ((tu = bt_calloc(m->count, sizeof(*tu))) == NULL)
		rc = -ENOMEM;
	for (; rc == 0 && got < m->count; got++) {
		if ((rc = tablet_usage_get(m->tablets[got], &tu[got])) < 0)
			break;
		usage_add_memory(&u, &tu[got].memory);
		file_total += tu[got].file_count;
	}
	server_tablet_map_unref(m);
	server_table_unref(t);
	if (rc == 0 && ((files = bt_calloc(file_total + 1,
	    sizeof(*files))) == NULL || (u.files = bt_calloc(file_total + 1,
	    sizeof(*u.files))) == NULL))
		rc = -ENOMEM;
	if (rc == 0) {
		count = usage_files_gather(tu, got, files);
		for (size_t i = 0; i < count && rc == 0; i++)
			rc = usage_add_file(&u, files[i].file,
			    files[i].range_bytes);
	}
	bt_free(files);
	for (size_t i = 0; i < got; i++)
		tablet_usage_release(&tu[i]);
	bt_free(tu);
	if (rc < 0)
		goto out_usage;
	*out = u;
	return 0;
out_usage:
	server_table_usage_release(&u);
	return rc;
}

void
server_table_usage_release(struct server_table_usage *u)
{
	bt_free(u->families);
	bt_free(u->groups);
	for (size_t i = 0; i < u->file_count; i++)
		bt_free(u->files[i].labels);
	bt_free(u->files);
	memset(u, 0, sizeof(*u));
}
