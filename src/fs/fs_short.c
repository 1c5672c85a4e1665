/*
 * fs_short.c - the bytes a row or column name stands for, when the name
 * may be the short form under which a listing shows a key too long to be
 * a path component (util/names.h, tabletfs(5) NAMES).
 *
 * A short form carries a prefix of the key and a hash of all of it, so it
 * is resolved by reading the keys under that prefix (rows of the table,
 * or qualifiers of the family in the row), stored and pending, and taking
 * the one whose listed name it is.  Prefixes are over 200 bytes long, so
 * few keys share one.
 */
#include <errno.h>
#include <string.h>

#include "fs/fs.h"
#include "util/names.h"

/* Whether raw, a key under prefix, is the one name lists: 0 and out set
 * to it, BT_NOTFOUND, or -ENOMEM. */
static int
short_try(struct slice raw, struct slice prefix, const char *name,
    struct buf *tmp, struct buf *out)
{
	int rc;

	if (raw.n < prefix.n || memcmp(raw.p, prefix.p, prefix.n) != 0)
		return BT_NOTFOUND;
	if ((rc = names_component_is(raw, name, strlen(name), tmp)) <= 0)
		return rc < 0 ? rc : BT_NOTFOUND;
	return buf_set(out, raw.p, raw.n);
}

/* The stored row of table dir whose short name is name. */
static int
short_find_row(struct fs *fs, const struct coord *dir, struct slice prefix,
    const char *name, struct buf *tmp, struct buf *out)
{
	struct bt_scan_options so = { .prefix = { prefix.p, prefix.n },
	    .read = { .cells_per_column = 1, .keys_only = true },
	    .no_cache_fill = true };
	struct bt_scan *scan;
	const struct bt_row *row;
	int rc;

	if ((rc = bt_scan_open(fs->store, dir->table, &so, &scan)) < 0)
		return rc;
	while ((rc = bt_scan_next_borrowed(scan, &row)) == 0)
		if ((rc = short_try(slice_make(row->key.data, row->key.size),
		    prefix, name, tmp, out)) != BT_NOTFOUND)
			break;
	bt_scan_close(scan);
	return rc == BT_DONE ? BT_NOTFOUND : rc;
}

/* The stored qualifier of family dir whose short name is name. */
static int
short_find_qualifier(struct fs *fs, const struct coord *dir,
    struct slice prefix, const char *name, struct buf *tmp, struct buf *out)
{
	struct bt_read_options ro = { .cells_per_column = 1,
	    .keys_only = true };
	struct bt_column col;
	struct bt_row *row;
	int rc;

	fs_column_filter(dir, &col, &ro);
	if ((rc = bt_read_row(fs->store, dir->table, dir->row, &ro,
	    &row)) != 0)
		return rc;
	rc = BT_NOTFOUND;
	for (size_t i = 0; i < row->cell_count && rc == BT_NOTFOUND; i++)
		rc = short_try(slice_make(row->cells[i].qualifier.data,
		    row->cells[i].qualifier.size), prefix, name, tmp, out);
	bt_row_free(row);
	return rc;
}

/* The pending child of dir whose short name is name. */
static int
short_find_pending(struct fs *fs, const struct coord *dir,
    struct slice prefix, const char *name, struct buf *tmp, struct buf *out)
{
	struct buf *names;
	size_t count;
	int rc;

	if ((rc = pending_children(fs, dir, &names, &count)) < 0)
		return rc;
	rc = BT_NOTFOUND;
	for (size_t i = 0; i < count && rc == BT_NOTFOUND; i++)
		rc = short_try(buf_slice(&names[i]), prefix, name, tmp, out);
	pending_names_free(names, count);
	return rc;
}

int
fs_name_decode(struct fs *fs, const struct coord *dir, const char *name,
    struct buf *out)
{
	struct buf prefix, tmp;
	int rc;

	buf_init(&prefix);
	buf_init(&tmp);
	if ((rc = names_short_prefix(name, strlen(name), &prefix)) <= 0) {
		if (rc == 0)
			rc = names_decode(name, strlen(name), out);
		goto out;
	}
	if (dir->kind == NODE_TABLE)
		rc = short_find_row(fs, dir, buf_slice(&prefix), name, &tmp,
		    out);
	else
		rc = short_find_qualifier(fs, dir, buf_slice(&prefix), name,
		    &tmp, out);
	if (rc == BT_NOTFOUND)
		rc = short_find_pending(fs, dir, buf_slice(&prefix), name,
		    &tmp, out);
	if (rc == BT_NOTFOUND)
		rc = -ENOENT;
out:
	buf_release(&tmp);
	buf_release(&prefix);
	return rc;
}
