/*
 * fs_rename.c - changes to names: unlink, rename (of files; directories
 * are fs_dir.c's), and the links and special files that have no place in
 * the data model.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/fs.h"
#include "util/alloc.h"

/* Special files and links have no place in the data model: EPERM, as
 * from a filesystem without them (EROFS on a read-only mount). */
static void
reply_not_permitted(fuse_req_t req)
{
	struct fs *fs = fuse_req_userdata(req);

	fuse_reply_err(req, fs->read_only ? EROFS : EPERM);
}

void
fs_op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
    mode_t mode, dev_t rdev)
{
	(void)parent;
	(void)name;
	(void)mode;
	(void)rdev;
	reply_not_permitted(req);
}

void
fs_op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
    const char *name)
{
	(void)link;
	(void)parent;
	(void)name;
	reply_not_permitted(req);
}

void
fs_op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
    const char *newname)
{
	(void)ino;
	(void)newparent;
	(void)newname;
	reply_not_permitted(req);
}

/* Keep a column's directories after its last version goes. */
static void
column_keep(struct fs *fs, const struct coord *c)
{
	struct coord col = *c;

	col.kind = NODE_COLUMN;
	(void)pending_add(fs, &col);
}

/*
 * Under the rename lock, read: the name is resolved and its version
 * deleted with no rename between (one that moved the column meanwhile
 * would leave the delete at its old place, and the version in place).
 */
void
fs_op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs *fs = fuse_req_userdata(req);
	struct bt_write_options wo = { .sync = false };
	struct bt_mutation m = { .kind = BT_DELETE_VERSION };
	const struct bt_cell *cell;
	struct bt_row *row;
	struct buf scratch;
	struct node *dir;
	struct coord c;
	int rc;

	buf_init(&scratch);
	pthread_rwlock_rdlock(&fs->rename_lock);
	if ((rc = fs_child_at(fs, parent, name, false, &dir, &c,
	    &scratch)) < 0)
		goto out;
	if (coord_is_dir(c.kind)) {
		rc = -EISDIR;
		goto out;
	}
	if (fs->read_only || (c.kind != NODE_VERSION &&
	    c.kind != NODE_LATEST && c.kind != NODE_TEMP)) {
		rc = -EROFS;
		goto out;
	}
	if (c.kind == NODE_TEMP) {
		rc = temp_take(fs, &c, NULL);
		goto out;
	}
	if ((c.kind == NODE_LATEST && latest_hidden(fs, &c)) ||
	    (rc = fs_read_cell(fs, &c, true, &row, &cell)) != 0) {
		rc = rc == BT_NOTFOUND || rc == 0 ? -ENOENT : rc;
		goto out;
	}
	if (c.kind == NODE_LATEST) {
		/* latest is a view: its name goes, no version does. */
		bt_row_free(row);
		rc = latest_hide(fs, &c);
		goto out;
	}
	m.family = c.family;
	m.qualifier = c.qualifier;
	m.ts = cell->ts;
	bt_row_free(row);
	column_keep(fs, &c);
	if ((rc = bt_mutate_row(fs->store, c.table, c.row, &m, 1, &wo,
	    NULL)) == 0)
		fs_column_changed(fs, &c);
out:
	pthread_rwlock_unlock(&fs->rename_lock);
	fuse_reply_err(req, fs_errno(rc));
	node_put(fs, dir);
	buf_release(&scratch);
}

/* Commit value as file c: latest's new newest version, or the version at
 * c's time (refused when its GC policy condemns it at once). */
static int
value_commit(struct fs *fs, const struct coord *c, struct buf *value)
{
	struct bt_write_options wo = { .sync = false };
	struct bt_mutation m = { .kind = BT_PUT, .family = c->family,
	    .qualifier = c->qualifier, .ts = c->ts,
	    .value = { value->p, value->n } };
	int rc;

	if (c->kind == NODE_LATEST)
		rc = bt_put_newest(fs->store, c->table, c->row, c->family,
		    c->qualifier, m.value, &wo, NULL);
	else if ((rc = fs_version_condemned(fs, c)) == 0)
		rc = bt_mutate_row(fs->store, c->table, c->row, &m, 1, &wo,
		    NULL);
	if (rc == 0) {
		pending_settled(fs, c);
		latest_show(fs, c);
		fs_column_changed(fs, c);
	}
	return rc;
}

/*
 * A rename from or to a temporary file.  Onto latest or a timestamp, the
 * temporary file's content becomes one version, atomically (the save of
 * sed -i, rsync, editors and scripts); between temporary names it is
 * renamed; latest renamed to a temporary name gives it a copy of the
 * newest value and hides latest (it is a view: no version goes).  A
 * version renamed to a temporary name is EPERM: the temporary file would
 * hold the only copy of a stored value, and it is never stored.
 */
static int
rename_temp(struct fs *fs, const struct coord *src, const struct coord *dst,
    unsigned int flags)
{
	const struct bt_cell *cell;
	struct bt_row *row;
	struct buf value;
	int rc;

	if ((dst->kind != NODE_TEMP && dst->kind != NODE_LATEST &&
	    dst->kind != NODE_VERSION) || (src->kind != NODE_TEMP &&
	    src->kind != NODE_LATEST && src->kind != NODE_VERSION))
		return -EROFS;
	if (src->kind == NODE_VERSION)
		return -EPERM;
	buf_init(&value);
	if (src->kind == NODE_LATEST) {
		bool found = false;

		rc = latest_hidden(fs, src) ? 0 : fs_load_value(fs, src, &value,
		    &found, NULL);
		if (rc == 0 && !found)
			rc = -ENOENT;
		if (rc == 0 && (flags & RENAME_NOREPLACE) &&
		    temp_attr(fs, dst, &(struct temp_attr){ 0 }) == 0)
			rc = -EEXIST;
		if (rc == 0 && (rc = temp_put(fs, dst, value.p,
		    value.n)) == 0)
			rc = latest_hide(fs, src);
	} else if (dst->kind == NODE_TEMP) {
		rc = temp_rename(fs, src, dst, flags & RENAME_NOREPLACE);
	} else if ((flags & RENAME_NOREPLACE) && !(dst->kind == NODE_LATEST &&
	    latest_hidden(fs, dst)) && fs_read_cell(fs, dst, true, &row,
	    &cell) == 0) {
		bt_row_free(row);
		rc = -EEXIST;
	} else if ((rc = temp_take(fs, src, &value)) == 0 &&
	    (rc = value_commit(fs, dst, &value)) < 0) {
		/* Nothing was stored: the temporary file stays. */
		(void)temp_put(fs, src, value.p, value.n);
	}
	if (rc == 0)
		(void)node_moved(fs, src, dst);
	buf_release(&value);
	return rc;
}

/*
 * Rename a version within one row: one atomic mutation (bt_move_version)
 * puts it at the new place and deletes the old version; directories are
 * fs_rename_dir()'s.  Other rows: EXDEV, so that mv copies and deletes.
 */
void
fs_op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
    fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	struct fs *fs = fuse_req_userdata(req);
	struct bt_write_options wo = { .sync = false };
	struct node *sdir, *ddir = NULL;
	const struct bt_cell *cell, *dcell;
	struct bt_row *row = NULL, *drow;
	struct buf s1, s2;
	struct coord src, dst;
	bool locked = false;
	int rc;

	buf_init(&s1);
	buf_init(&s2);
	/* Both names are resolved with no other rename between: one that
	 * moved a parent meanwhile would leave them naming its old place. */
	pthread_rwlock_wrlock(&fs->rename_lock);
	locked = true;
	if ((sdir = node_get(fs, parent)) == NULL ||
	    (ddir = node_get(fs, newparent)) == NULL) {
		rc = -ENOENT;
		goto out;
	}
	if (flags & ~RENAME_NOREPLACE) {
		rc = -EINVAL;
		goto out;
	}
	if ((rc = fs_child(fs, sdir, name, false, &src, &s1)) < 0 ||
	    (rc = fs_child(fs, ddir, newname, true, &dst, &s2)) < 0)
		goto out;
	if (fs->read_only) {
		rc = -EROFS;
		goto out;
	}
	if ((rc = fs_access_rename(fs, req, &src, &dst)) < 0)
		goto out;
	if (src.kind == NODE_TABLE || dst.kind == NODE_TABLE) {
		rc = -EPERM;
		goto out;
	}
	if (coord_is_dir(src.kind) || coord_is_dir(dst.kind)) {
		rc = fs_rename_dir(fs, &src, &dst, flags);
		goto out;
	}
	if (src.kind == NODE_TEMP || dst.kind == NODE_TEMP) {
		rc = rename_temp(fs, &src, &dst, flags);
		goto out;
	}
	if (!coord_same_upto(&src, &dst, NODE_ROW)) {
		rc = -EXDEV;
		goto out;
	}
	if ((src.kind != NODE_VERSION && src.kind != NODE_LATEST) ||
	    (dst.kind != NODE_VERSION && dst.kind != NODE_LATEST)) {
		rc = -EROFS;
		goto out;
	}
	if ((rc = fs_read_cell(fs, &src, false, &row, &cell)) != 0) {
		rc = rc == BT_NOTFOUND ? -ENOENT : rc;
		goto out;
	}
	if ((flags & RENAME_NOREPLACE) &&
	    fs_read_cell(fs, &dst, true, &drow, &dcell) == 0) {
		bt_row_free(drow);
		rc = -EEXIST;
		goto out;
	}
	if (dst.kind == NODE_VERSION && dst.ts == cell->ts &&
	    coord_same_upto(&dst, &src, NODE_COLUMN))
		goto out;	/* onto itself */
	/* The engine re-reads the version under the row's lock, so the
	 * value moved is the one there at the moment of the move. */
	column_keep(fs, &src);
	if ((rc = bt_move_version(fs->store, src.table, src.row, src.family,
	    src.qualifier, cell->ts, dst.family, dst.qualifier,
	    dst.kind == NODE_VERSION ? dst.ts : BT_TS_SERVER, &wo,
	    NULL)) == 0) {
		/* The kernel now gives src's inode the new name. */
		(void)node_moved(fs, &src, &dst);
		pending_settled(fs, &dst);
		fs_column_changed(fs, &src);
		fs_column_changed(fs, &dst);
	}
out:
	if (locked)
		pthread_rwlock_unlock(&fs->rename_lock);
	fuse_reply_err(req, fs_errno(rc));
	bt_row_free(row);
	node_put(fs, ddir);
	node_put(fs, sdir);
	buf_release(&s1);
	buf_release(&s2);
}
