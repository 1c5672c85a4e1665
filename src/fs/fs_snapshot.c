/*
 * fs_snapshot.c - the entries of a root, row, family or column
 * directory, read whole when a listing begins (fs_list.c): tables, or
 * the families, qualifiers or versions of one row read keys-only, merged
 * with the pending directories and, in a column, the temporary files.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/fs.h"
#include "fs/fs_query.h"
#include "util/alloc.h"
#include "util/names.h"

void
fs_dents_free(struct dent *ents, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		bt_free(ents[i].name);
		buf_release(&ents[i].raw);
	}
	bt_free(ents);
}

static int
dent_add(struct dent **ents, size_t *count, size_t *cap, const char *name,
    enum node_kind kind, const void *raw, size_t rawn)
{
	struct dent *d;

	if (*count == *cap) {
		size_t nc = *cap ? *cap * 2 : 16;

		if ((d = bt_realloc(*ents, nc * sizeof(*d))) == NULL)
			return -ENOMEM;
		*ents = d;
		*cap = nc;
	}
	d = &(*ents)[*count];
	memset(d, 0, sizeof(*d));
	buf_init(&d->raw);
	if ((d->name = bt_strdup(name)) == NULL ||
	    (rawn > 0 && buf_set(&d->raw, raw, rawn) < 0)) {
		bt_free(d->name);
		return -ENOMEM;
	}
	d->kind = kind;
	(*count)++;
	return 0;
}

/* Add raw (a row, family or qualifier) under its escaped name (its short
 * form when too long), unless the previous entry had the same bytes; ts
 * is the time of a version in it (the entry keeps the newest: its
 * mtime), 0 for none. */
static int
dent_add_raw(struct dent **ents, size_t *count, size_t *cap,
    enum node_kind kind, const void *raw, size_t rawn, int64_t ts,
    struct buf *name)
{
	struct dent *last = *count > 2 ? &(*ents)[*count - 1] : NULL;
	int rc;

	if (last != NULL && last->raw.n == rawn &&
	    (rawn == 0 || memcmp(last->raw.p, raw, rawn) == 0)) {
		if (ts > last->ts)
			last->ts = ts;
		return 0;
	}
	buf_clear(name);
	if (kind == NODE_FAMILY)
		rc = buf_append(name, raw, rawn);
	else
		rc = names_component(slice_make(raw, rawn), name);
	if (rc == 0)
		rc = fs_name_terminate(name);
	if (rc < 0)
		return rc;
	if ((rc = dent_add(ents, count, cap, (char *)name->p, kind, raw,
	    rawn)) == 0)
		(*ents)[*count - 1].ts = ts;
	return rc;
}

static int
raw_cmp(const void *a, const void *b)
{
	const struct dent *x = a, *y = b;
	size_t n = x->raw.n < y->raw.n ? x->raw.n : y->raw.n;
	int c = n ? memcmp(x->raw.p, y->raw.p, n) : 0;

	return c != 0 ? c : (x->raw.n > y->raw.n) - (x->raw.n < y->raw.n);
}

/* Add the temporary files of column c (fs_temp.c) to a listing. */
static int
temps_add(struct fs *fs, const struct coord *c, struct dent **ents,
    size_t *count, size_t *cap)
{
	struct temp_attr *attrs;
	char **names;
	size_t n;
	int rc;

	if ((rc = temp_list(fs, c, &names, &attrs, &n)) < 0)
		return rc;
	for (size_t i = 0; i < n && rc == 0; i++) {
		struct dent *d;

		if ((rc = dent_add(ents, count, cap, names[i], NODE_TEMP,
		    NULL, 0)) < 0)
			break;
		d = &(*ents)[*count - 1];
		d->size = attrs[i].size;
		d->mode = attrs[i].mode;
		d->mtime = attrs[i].mtime;
	}
	temp_names_free(names, attrs, n);
	return rc;
}

/*
 * Add the rows of query directory c that hold a cell its filters select:
 * one scan, keys only, a cell per row.  Held whole, as other listings
 * but a table's (which streams): a query that selects most of a large
 * table is better read with tabletctl.
 */
static int
query_add(struct fs *fs, const struct coord *c, struct dent **ents,
    size_t *count, size_t *cap, struct buf *name)
{
	struct bt_scan_options so = { .no_cache_fill = true };
	const struct bt_row *r;
	struct fs_query q;
	struct bt_scan *sc;
	int rc;

	if ((rc = fs_query_parse(c->query, &q)) < 0)
		goto out;
	so.read = q.ro;
	so.read.keys_only = true;
	so.read.cells_per_row_limit = 1;
	if ((rc = bt_scan_open(fs->store, c->table, &so, &sc)) < 0)
		goto out;
	while ((rc = bt_scan_next_borrowed(sc, &r)) == 0)
		if ((rc = dent_add_raw(ents, count, cap, NODE_QUERY_ROW,
		    r->key.data, r->key.size, 0, name)) < 0)
			break;
	bt_scan_close(sc);
	if (rc == BT_DONE)
		rc = 0;
out:
	fs_query_release(&q);
	return rc;
}

int
fs_dir_snapshot(struct fs *fs, struct node *dir, struct dent **entsp,
    size_t *countp)
{
	struct bt_read_options ro = { .keys_only = true };
	struct dent *ents = NULL;
	size_t count = 0, cap = 0, pcount = 0;
	struct buf *pnames = NULL;
	struct bt_row *row = NULL;
	struct bt_column col;
	struct buf name;
	char **tables;
	size_t ntables;
	int rc;

	buf_init(&name);
	if ((rc = dent_add(&ents, &count, &cap, ".", dir->c.kind, NULL,
	    0)) < 0 || (rc = dent_add(&ents, &count, &cap, "..", NODE_ROOT,
	    NULL, 0)) < 0)
		goto out;
	if (dir->c.kind == NODE_ROOT) {
		if ((rc = dent_add(&ents, &count, &cap, ".status",
		    NODE_STATUS, NULL, 0)) < 0)
			goto out;
		if ((rc = bt_table_list(fs->store, &tables, &ntables)) < 0)
			goto out;
		for (size_t i = 0; i < ntables && rc == 0; i++)
			rc = dent_add(&ents, &count, &cap, tables[i],
			    NODE_TABLE, tables[i], strlen(tables[i]));
		bt_names_free(tables);
		goto out;
	}
	if (dir->c.kind == NODE_QUERY) {
		rc = query_add(fs, &dir->c, &ents, &count, &cap, &name);
		goto out;
	}

	fs_column_filter(&dir->c, &col, &ro);
	if (dir->c.kind != NODE_COLUMN && dir->c.kind != NODE_RANGE)
		ro.cells_per_column = 1;
	if (dir->c.kind == NODE_RANGE) {
		/* [start, end) as bt_read_options spells it */
		ro.min_ts = dir->c.range_start;
		ro.has_max_ts = true;
		ro.max_ts = dir->c.range_end - 1;
	}
	rc = bt_read_row(fs->store, dir->c.table, dir->c.row, &ro, &row);
	if (rc == BT_NOTFOUND)
		rc = 0;
	if (rc < 0)
		goto out;
	if (dir->c.kind != NODE_RANGE &&
	    (rc = pending_children(fs, &dir->c, &pnames, &pcount)) < 0)
		goto out;
	for (size_t i = 0; row != NULL && i < row->cell_count && rc == 0;
	    i++) {
		const struct bt_cell *cell = &row->cells[i];
		char ts[24];

		switch (dir->c.kind) {
		case NODE_ROW:
			rc = dent_add_raw(&ents, &count, &cap, NODE_FAMILY,
			    cell->family, strlen(cell->family), cell->ts,
			    &name);
			break;
		case NODE_FAMILY:
			rc = dent_add_raw(&ents, &count, &cap, NODE_COLUMN,
			    cell->qualifier.data, cell->qualifier.size,
			    cell->ts, &name);
			break;
		default:
			snprintf(ts, sizeof(ts), "%lld",
			    (long long)cell->ts);
			if ((rc = dent_add(&ents, &count, &cap, ts,
			    dir->c.kind == NODE_RANGE ? NODE_RANGE_VERSION :
			    NODE_VERSION, NULL, 0)) == 0) {
				ents[count - 1].ts = cell->ts;
				ents[count - 1].size = cell->value_size;
			}
			break;
		}
	}
	if (dir->c.kind == NODE_COLUMN && rc == 0)
		rc = temps_add(fs, &dir->c, &ents, &count, &cap);
	/* Pending children not already listed, then sort by raw bytes. */
	if (dir->c.kind != NODE_COLUMN && pcount > 0) {
		size_t data_end = count;

		for (size_t i = 0; i < pcount && rc == 0; i++) {
			bool dup = false;

			for (size_t j = 2; j < data_end && !dup; j++)
				dup = raw_cmp(&ents[j], &(struct dent){
				    .raw = pnames[i] }) == 0;
			if (!dup)
				rc = dent_add_raw(&ents, &count, &cap,
				    dir->c.kind + 1, pnames[i].p,
				    pnames[i].n, 0, &name);
		}
		if (rc == 0)
			qsort(ents + 2, count - 2, sizeof(*ents), raw_cmp);
	}
out:
	bt_row_free(row);
	pending_names_free(pnames, pcount);
	buf_release(&name);
	if (rc < 0) {
		fs_dents_free(ents, count);
		return rc;
	}
	*entsp = ents;
	*countp = count;
	return 0;
}
