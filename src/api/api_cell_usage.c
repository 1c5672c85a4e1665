/*
 * api_cell_usage.c - bt_table_usage() on a cell (api_cell.h,
 * cell_table_usage(); docs/design.md section 5): TABLE_USAGE at the
 * root's server, whose answer says whether the table exists and whose
 * schema names the families and groups, then at every other live server
 * when tablets are served one by one; each counts the tablets it serves,
 * and the replies are summed field by field, by name.
 *
 * A file that a split shares between tablets of two servers is counted
 * by both, each giving its families the share of it in its own tablets'
 * ranges (by the index, whole blocks) and its group the whole file.
 * Each server lists the files it counted with what it counted them from
 * (UsageFile), and a file listed by several is counted again here as one
 * server serving all those tablets would: the whole file once, its
 * families' share from the sum of the servers' range bytes, capped at
 * the file's data bytes, as server_usage.c caps it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_cell.h"
#include "rpc/tabletfs.pb-c.h"
#include "tablet/usage.h"
#include "util/alloc.h"
#include "util/error.h"

/* A label of a file some server counted. */
struct usage_file_label {
	char name[BT_NAME_MAX + 1];
	uint64_t bytes;
	uint64_t entries;
	uint64_t value_bytes;
};

/* A file some server counted. */
struct usage_file {
	uint64_t number;
	char group[BT_NAME_MAX + 1];
	uint64_t size;
	bool known;
	uint64_t data_bytes;
	uint64_t range_bytes;
	size_t label_count;
	struct usage_file_label *labels;
};

struct usage_gather {
	struct bt_table_usage *u;	/* the root's families and groups */
	uint64_t other_memory_bytes;
	struct usage_file *files;
	size_t file_count, file_cap;
};

static struct bt_family_usage *
family_find(struct bt_table_usage *u, const char *name)
{
	for (size_t i = 0; i < u->family_count; i++)
		if (strcmp(u->families[i].name, name) == 0)
			return &u->families[i];
	return NULL;
}

static struct bt_group_usage *
group_find(struct bt_table_usage *u, const char *name)
{
	for (size_t i = 0; i < u->group_count; i++)
		if (strcmp(u->groups[i].name, name) == 0)
			return &u->groups[i];
	return NULL;
}

static const char *
str(const char *s)
{
	return s != NULL ? s : "";
}

/*
 * Add one server's reply to g by name.  A family or group the root's
 * schema lacks (a server that has not yet read a schema change) is
 * counted as the root would count it: a family's bytes as no family's,
 * a group's not at all (the root counts a group it lost as nobody's).
 */
static int
usage_gather_add(struct usage_gather *g, const Tabletfs__UsageReply *rep)
{
	g->other_memory_bytes += rep->other_memory_bytes;
	for (size_t i = 0; i < rep->n_families; i++) {
		const Tabletfs__FamilyUsage *f = rep->families[i];
		struct bt_family_usage *o = family_find(g->u, str(f->name));
		struct bt_group_usage *og;

		if (o == NULL) {
			g->other_memory_bytes += f->memory_bytes;
			if ((og = group_find(g->u, str(f->group))) != NULL)
				og->other_bytes += f->disk_bytes;
			continue;
		}
		o->disk_bytes += f->disk_bytes;
		o->memory_bytes += f->memory_bytes;
		o->entries += f->entries;
		o->value_bytes += f->value_bytes;
	}
	for (size_t i = 0; i < rep->n_groups; i++) {
		const Tabletfs__GroupUsage *gr = rep->groups[i];
		struct bt_group_usage *o = group_find(g->u, str(gr->name));

		if (o == NULL)
			continue;
		o->files += gr->files;
		o->disk_bytes += gr->disk_bytes;
		o->memory_bytes += gr->memory_bytes;
		o->other_bytes += gr->other_bytes;
		o->unknown_bytes += gr->unknown_bytes;
	}
	if (rep->n_files > g->file_cap - g->file_count) {
		size_t cap = g->file_count + rep->n_files + 16;
		struct usage_file *grown;

		if ((grown = bt_realloc(g->files, cap * sizeof(*grown))) ==
		    NULL)
			return -ENOMEM;
		g->files = grown;
		g->file_cap = cap;
	}
	for (size_t i = 0; i < rep->n_files; i++) {
		const Tabletfs__UsageFile *x = rep->files[i];
		struct usage_file *o = &g->files[g->file_count];

		memset(o, 0, sizeof(*o));
		if (x->n_labels > 0 && (o->labels = bt_calloc(x->n_labels,
		    sizeof(*o->labels))) == NULL)
			return -ENOMEM;
		g->file_count++;
		o->number = x->number;
		snprintf(o->group, sizeof(o->group), "%s", str(x->group));
		o->size = x->size;
		o->known = x->known;
		o->data_bytes = x->data_bytes;
		o->range_bytes = x->range_bytes;
		for (size_t k = 0; k < x->n_labels; k++) {
			const Tabletfs__UsageLabel *l = x->labels[k];
			struct usage_file_label *ol = &o->labels[k];

			snprintf(ol->name, sizeof(ol->name), "%s",
			    str(l->name));
			ol->bytes = l->bytes;
			ol->entries = l->entries;
			ol->value_bytes = l->value_bytes;
		}
		o->label_count = x->n_labels;
	}
	return 0;
}

static int
usage_file_compare(const void *a, const void *b)
{
	uint64_t x = ((const struct usage_file *)a)->number;
	uint64_t y = ((const struct usage_file *)b)->number;

	return x < y ? -1 : x > y;
}

static uint64_t
adjust(uint64_t v, int64_t by)
{
	return by < 0 && (uint64_t)-by > v ? 0 : v + (uint64_t)by;
}

/* What the servers gave the family of label l of file x, k times as
 * x[0..k) each counted it, and what one count gives it: each server's
 * share by its range bytes capped at the file's data bytes (as
 * server_usage.c gives it), less the share by their sum, capped. */
static int64_t
label_excess(const struct usage_file *x, size_t k, uint64_t value)
{
	uint64_t whole = x[0].data_bytes, sum = 0, counted = 0;

	for (size_t i = 0; i < k; i++) {
		uint64_t r = x[i].range_bytes < whole ? x[i].range_bytes :
		    whole;

		counted += usage_share(value, r, whole);
		sum += x[i].range_bytes;
	}
	return (int64_t)counted - (int64_t)usage_share(value,
	    sum < whole ? sum : whole, whole);
}

/* File x, counted by k > 1 servers (x[0..k)), counted once. */
static void
usage_file_once(struct bt_table_usage *u, const struct usage_file *x,
    size_t k)
{
	struct bt_group_usage *g = group_find(u, x->group);
	int64_t again = (int64_t)k - 1;

	if (g == NULL)
		return;
	g->files = adjust(g->files, -again);
	g->disk_bytes = adjust(g->disk_bytes, -again * (int64_t)x->size);
	if (!x->known) {
		g->unknown_bytes = adjust(g->unknown_bytes,
		    -again * (int64_t)x->size);
		return;
	}
	for (size_t i = 0; i < x->label_count; i++) {
		const struct usage_file_label *l = &x->labels[i];
		struct bt_family_usage *f = family_find(u, l->name);
		int64_t excess;

		/* Each server gave its group's other bytes the whole label
		 * but the family's share. */
		if (f == NULL || strcmp(f->group, g->name) != 0) {
			g->other_bytes = adjust(g->other_bytes,
			    -again * (int64_t)l->bytes);
			continue;
		}
		excess = label_excess(x, k, l->bytes);
		f->disk_bytes = adjust(f->disk_bytes, -excess);
		g->other_bytes = adjust(g->other_bytes,
		    excess - again * (int64_t)l->bytes);
		f->entries = adjust(f->entries, -label_excess(x, k,
		    l->entries));
		f->value_bytes = adjust(f->value_bytes, -label_excess(x, k,
		    l->value_bytes));
	}
}

/* Count once every file that several servers counted (the file
 * comment). */
static void
usage_gather_dedup(struct usage_gather *g)
{
	size_t i = 0, k;

	if (g->file_count == 0)
		return;
	qsort(g->files, g->file_count, sizeof(*g->files),
	    usage_file_compare);
	for (; i < g->file_count; i += k) {
		for (k = 1; i + k < g->file_count &&
		    g->files[i + k].number == g->files[i].number; k++)
			;
		if (k > 1)
			usage_file_once(g->u, &g->files[i], k);
	}
}

static int
usage_each(void *arg, const char *server, ProtobufCMessage *reply)
{
	(void)server;
	return usage_gather_add(arg, (const Tabletfs__UsageReply *)reply);
}

int
cell_table_usage(struct cell_client *c, const char *table,
    struct bt_table_usage **out)
{
	Tabletfs__TableRequest req = TABLETFS__TABLE_REQUEST__INIT;
	Tabletfs__UsageReply *rep = NULL;
	struct usage_gather g = { 0 };
	int rc;

	req.table = cell_str(table);
	if ((rc = cell_client_call(c, TABLETFS__METHOD__TABLE_USAGE,
	    &req.base, CELL_RETRY_ANY, &tabletfs__usage_reply__descriptor,
	    (ProtobufCMessage **)&rep)) < 0)
		return rc;
	if ((g.u = api_table_usage_alloc(rep->n_families,
	    rep->n_groups)) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < rep->n_families; i++) {
		const Tabletfs__FamilyUsage *f = rep->families[i];
		struct bt_family_usage *o = &g.u->families[i];

		snprintf(o->name, sizeof(o->name), "%s", str(f->name));
		snprintf(o->group, sizeof(o->group), "%s", str(f->group));
	}
	for (size_t i = 0; i < rep->n_groups; i++)
		snprintf(g.u->groups[i].name, sizeof(g.u->groups[i].name),
		    "%s", str(rep->groups[i]->name));
	if ((rc = usage_gather_add(&g, rep)) < 0)
		goto out_free;
	if ((rc = cell_client_route_learn(c, table)) < 0 ||
	    (rc = cell_client_call_each(c, TABLETFS__METHOD__TABLE_USAGE,
	    &req.base, &tabletfs__usage_reply__descriptor, usage_each,
	    &g)) < 0)
		goto out_free;
	usage_gather_dedup(&g);
	api_table_usage_sum(g.u, g.other_memory_bytes);
	*out = g.u;
	g.u = NULL;
	rc = 0;
out_free:
	bt_table_usage_free(g.u);
out:
	for (size_t i = 0; i < g.file_count; i++)
		bt_free(g.files[i].labels);
	bt_free(g.files);
	cell_client_free(&rep->base);
	return rc;
}
