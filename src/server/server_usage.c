/*
 * server_usage.c - a table's bytes per column family and locality group
 * (server.h, server_table_usage(); docs/design.md section 3,
 * "Accounting"), gathered from its tablets' memtable counts and the usage
 * that each SSTable records, every file counted once.
 */
#include <errno.h>
#include <stdio.h>
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

/* Count one file (once): its bytes to its group, and by its usage to
 * the families of that group; the rest is the group's other bytes. */
static void
usage_add_file(struct server_table_usage *u,
    const struct tablet_file_usage *file)
{
	size_t g = group_index(u, file->group);
	struct server_group_usage *gu;

	if (g == SIZE_MAX)
		return;		/* a group the schema lost: nobody's */
	gu = &u->groups[g];
	gu->files++;
	gu->disk_bytes += file->size;
	if (!file->known) {
		gu->unknown_bytes += file->size;
		return;
	}
	for (size_t i = 0; i < file->labels.count; i++) {
		const struct usage_label *l = &file->labels.labels[i];
		size_t f = family_index(u, l->name);

		if (f == SIZE_MAX ||
		    strcmp(u->families[f].group, gu->name) != 0) {
			gu->other_bytes += l->bytes;
			continue;
		}
		u->families[f].disk_bytes += l->bytes;
		u->families[f].entries += l->entries;
		u->families[f].value_bytes += l->value_bytes;
	}
}

/* Whether number is among the count numbers of seen; if not, add it
 * (seen has room). */
static bool
file_seen(uint64_t *seen, size_t *count, uint64_t number)
{
	for (size_t i = 0; i < *count; i++)
		if (seen[i] == number)
			return true;
	seen[(*count)++] = number;
	return false;
}

int
server_table_usage(struct server *s, const char *table,
    struct server_table_usage *out)
{
	struct server_table_usage u;
	struct catalog_table *ct;
	struct server_table *t;
	struct tablet_map *m;
	uint64_t *seen = NULL;
	size_t seen_count = 0, seen_cap = 0;
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
	for (size_t i = 0; i < m->count && rc == 0; i++) {
		struct tablet_usage tu;

		if ((rc = tablet_usage_get(m->tablets[i], &tu)) < 0)
			break;
		usage_add_memory(&u, &tu.memory);
		if (seen_count + tu.file_count > seen_cap) {
			size_t cap = 2 * (seen_count + tu.file_count);
			uint64_t *p = bt_realloc(seen, cap * sizeof(*p));

			if (p == NULL)
				rc = -ENOMEM;
			else {
				seen = p;
				seen_cap = cap;
			}
		}
		for (size_t j = 0; j < tu.file_count && rc == 0; j++)
			if (!file_seen(seen, &seen_count, tu.files[j].number))
				usage_add_file(&u, &tu.files[j]);
		tablet_usage_release(&tu);
	}
	server_tablet_map_unref(m);
	server_table_unref(t);
	bt_free(seen);
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
	memset(u, 0, sizeof(*u));
}
