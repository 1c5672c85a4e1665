/*
 * fs_file.c - open files: open reads a value into the handle; writes fill
 * a per-handle buffer that flush (close) and fsync commit as one row
 * mutation; setattr sizes a file.  Changes to names are fs_rename.c's,
 * control files' text fs_control.c's.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fs/fs.h"
#include "util/alloc.h"
#include "util/names.h"

/*
 * What a handle commits.  One open makes at most one version: the first
 * commit of latest makes a new newest version (its time in fh.stamp), and
 * later commits of the same open (a shared descriptor closed by several
 * processes, a second fsync) put their value at that same time.
 */
enum fh_mode {
	FH_READ,		/* read only: nothing */
	FH_PUT,			/* a put at the version's time, or latest's */
	FH_RMW,			/* latest without O_TRUNC: check-and-mutate */
	FH_APPEND,		/* latest with O_APPEND: a server-side append */
	FH_INCREMENT,		/* the buffer is a delta for bt_increment */
	FH_TEMP,		/* a temporary file, in fs_temp.c */
};

struct fileh {
	struct mutex lock;
	struct node *node;
	int flags;
	enum fh_mode mode;
	bool dirty;		/* written since the last commit */
	bool truncated;		/* O_TRUNC or create, nothing written yet */
	bool writer;		/* counted in node->writers */
	bool seen_present;	/* RMW: a version existed at open */
	bool reread;		/* a reader of latest read once: see read */
	int refused;		/* a write refused for want of room, or 0 */
	int64_t seen_ts;	/* RMW: its timestamp */
	int64_t stamp;		/* the version this open made, or -1 */
	unsigned flushes;	/* close() calls seen so far */
	struct buf data;
	struct buf seen;	/* RMW: the newest value at open */
	/* A cell opened for reading: the row read at open, whose one cell
	 * holds what reads return (data is then unused: a large value is
	 * not copied once more). */
	struct bt_row *row;
};

/* What reads of fh return; lock held. */
static struct bt_bytes
fileh_bytes(const struct fileh *fh)
{
	mutex_assert_held(&fh->lock);
	if (fh->row != NULL)
		return fh->row->cells[0].value;
	return (struct bt_bytes){ fh->data.p, fh->data.n };
}

/* Parse an increment text: an optional sign, digits, an optional "\n". */
static int
delta_parse(const struct buf *b, int64_t *delta)
{
	char text[32], *end;
	size_t n = b->n;
	long long v;

	if (n > 0 && b->p[n - 1] == '\n')
		n--;
	if (n == 0 || n >= sizeof(text))
		return -EINVAL;
	memcpy(text, b->p, n);
	text[n] = '\0';
	if (text[0] != '-' && text[0] != '+' && (text[0] < '0' ||
	    text[0] > '9'))
		return -EINVAL;
	errno = 0;
	v = strtoll(text, &end, 10);
	if (*end != '\0')
		return -EINVAL;
	if (errno == ERANGE)
		return -ERANGE;
	*delta = v;
	return 0;
}

/*
 * Append fh's buffer to the column at c as an O_APPEND open does: the
 * first commit appends on the server (no conflict is possible); later
 * ones extend the version it made while that is still the newest, and
 * append afresh otherwise.  Never loses what was written.
 */
static int
commit_append(struct fs *fs, struct fileh *fh, const struct coord *c,
    const struct bt_write_options *wo)
{
	struct bt_bytes suffix = { fh->data.p, fh->data.n };
	struct bt_mutation m = { .kind = BT_PUT, .family = c->family,
	    .qualifier = c->qualifier, .ts = fh->stamp };
	struct coord mine = *c;
	struct bt_bytes expected;
	bool applied = false, found;
	int rc;

	if (fh->stamp >= 0) {
		mine.kind = NODE_VERSION;
		mine.ts = fh->stamp;
		if ((rc = fs_load_value(fs, &mine, &fh->seen, &found, NULL)) < 0)
			return rc;
		if (found && (rc = buf_append(&fh->seen, suffix.data,
		    suffix.size)) < 0)
			return rc;
		expected = (struct bt_bytes){ fh->seen.p, fh->seen.n -
		    suffix.size };
		m.value = (struct bt_bytes){ fh->seen.p, fh->seen.n };
		if (found && (rc = bt_check_version_and_mutate(fs->store,
		    c->table, c->row, c->family, c->qualifier, &expected,
		    fh->stamp, &m, 1, wo, &applied, NULL)) < 0)
			return rc;
	}
	if (!applied)
		rc = bt_append(fs->store, c->table, c->row, c->family,
		    c->qualifier, suffix, wo, &fh->stamp);
	else
		rc = 0;
	if (rc == 0)
		buf_clear(&fh->data);
	return rc;
}

/* Commit fh's value to file c (a version or latest), in fh->mode. */
static int
commit_value(struct fs *fs, struct fileh *fh, const struct coord *c,
    const struct bt_write_options *wo)
{
	struct bt_mutation m = { .kind = BT_PUT, .family = c->family,
	    .qualifier = c->qualifier, .ts = fh->stamp,
	    .value = { fh->data.p, fh->data.n } };
	struct bt_bytes expected = { fh->seen.p, fh->seen.n };
	bool applied;
	int rc;

	if (c->kind == NODE_VERSION)
		m.ts = c->ts;
	if (fh->mode == FH_PUT && m.ts < 0)
		return bt_put_newest(fs->store, c->table, c->row, c->family,
		    c->qualifier, m.value, wo, &fh->stamp);
	if (fh->mode == FH_PUT)
		return bt_mutate_row(fs->store, c->table, c->row, &m, 1, wo,
		    NULL);
	/* FH_RMW: only if nothing was written since the open, or since
	 * this open's last commit. */
	if (m.ts < 0)
		m.ts = BT_TS_SERVER;
	rc = bt_check_version_and_mutate(fs->store, c->table, c->row,
	    c->family, c->qualifier, fh->seen_present ? &expected : NULL,
	    fh->seen_ts, &m, 1, wo, &applied, &fh->stamp);
	if (rc == 0 && !applied)
		rc = -ESTALE;
	if (rc == 0 && (rc = buf_set(&fh->seen, fh->data.p,
	    fh->data.n)) == 0) {
		fh->seen_present = true;
		fh->seen_ts = fh->stamp;
	}
	return rc;
}

/* Drop the kernel's cache of version ts of column c, if it has one. */
static void
version_changed(struct fs *fs, const struct coord *c, int64_t ts)
{
	struct coord v = *c;
	fuse_ino_t ino;

	v.kind = NODE_VERSION;
	v.ts = ts;
	if ((ino = node_peek(fs, &v)) != 0)
		fuse_lowlevel_notify_inval_inode(fs->se, ino, 0, 0);
}

/*
 * Commit the handle's buffer if it was written; lock held.  A truncation
 * with no write yet commits only when all is set (a second close, fsync,
 * or release), since shells close a duplicate descriptor before writing
 * and no empty version may appear in between.  A handle that refused a
 * write for its size (or for memory) commits nothing and returns that
 * error: a cell's value is stored whole or not at all, never the part
 * that fitted.
 */
static int
commit(struct fs *fs, struct fileh *fh, bool sync, bool all)
{
	struct bt_write_options wo = { .sync = sync };
	const struct coord *c;
	struct node *now;
	int64_t delta, made = fh->stamp;
	int rc;

	mutex_assert_held(&fh->lock);
	if (fh->refused < 0)
		return fh->refused;
	if (!fh->dirty && !(all && fh->truncated))
		return 0;
	/* Where the file is now: a rename of it, or of a directory above
	 * it, since the open moved it (node_moved()); no rename moves it
	 * again before the commit is done. */
	pthread_rwlock_rdlock(&fs->rename_lock);
	now = node_follow(fs, fh->node);
	c = &now->c;
	fh->dirty = false;
	fh->truncated = false;
	switch (fh->mode) {
	case FH_PUT:
	case FH_RMW:
		rc = commit_value(fs, fh, c, &wo);
		break;
	case FH_APPEND:
		rc = commit_append(fs, fh, c, &wo);
		break;
	case FH_INCREMENT:
		if ((rc = delta_parse(&fh->data, &delta)) == 0)
			rc = bt_increment(fs->store, c->table, c->row,
			    c->family, c->qualifier, delta, &wo, NULL, NULL);
		buf_clear(&fh->data);
		break;
	default:
		rc = 0;
		break;
	}
	if (rc == 0 && fh->mode != FH_READ && fh->mode != FH_TEMP) {
		pending_settled(fs, c);
		latest_show(fs, c);
		fs_column_changed(fs, c);
		/* An earlier commit of this open of latest made a version,
		 * which this one rewrote in place: its pages are stale. */
		if (c->kind == NODE_LATEST && made >= 0)
			version_changed(fs, c, made);
	}
	node_put(fs, now);
	pthread_rwlock_unlock(&fs->rename_lock);
	return rc;
}

static void
fileh_free(struct fs *fs, struct fileh *fh)
{
	if (fh->writer)
		node_writers_add(fs, fh->node, -1);
	node_put(fs, fh->node);
	buf_pool_give(fs->write_bufs, &fh->data);
	buf_release(&fh->seen);
	bt_row_free(fh->row);
	mutex_destroy(&fh->lock);
	bt_free(fh);
}

/*
 * Make a handle for n opened with flags; created says the file was just
 * made by create().  The node reference passes to the handle.
 */
static int
fileh_open(struct fs *fs, struct node *n, int flags, bool created,
    struct fileh **out)
{
	int acc = flags & O_ACCMODE;
	bool writing = acc != O_RDONLY;
	const struct bt_cell *cell;
	struct fileh *fh;
	bool found;
	int rc = 0;

	if (writing && (fs->read_only || n->c.kind == NODE_STATUS ||
	    n->c.kind == NODE_SCHEMA || n->c.kind == NODE_TABLETS ||
	    n->c.kind == NODE_ASOF || n->c.kind == NODE_RANGE_VERSION ||
	    n->c.kind == NODE_QUERY_ROW))
		return -EROFS;
	if (n->c.kind == NODE_INCREMENT && acc != O_WRONLY)
		return fs->read_only ? -EROFS : -EACCES;
	if (coord_is_dir(n->c.kind))
		return -EISDIR;
	if (writing && n->c.kind == NODE_VERSION &&
	    (rc = fs_version_condemned(fs, &n->c)) < 0)
		return rc;
	if ((fh = bt_calloc(1, sizeof(*fh))) == NULL)
		return -ENOMEM;
	mutex_init(&fh->lock);
	buf_init(&fh->data);
	buf_init(&fh->seen);
	/* A writer's buffer takes memory a closed writer left, whose pages
	 * are mapped already: a large value's fresh pages each fault. */
	if (writing && n->c.kind != NODE_TEMP && n->c.kind != NODE_INCREMENT)
		buf_pool_take(fs->write_bufs, &fh->data);
	fh->node = n;
	fh->flags = flags;
	fh->stamp = -1;
	switch (n->c.kind) {
	case NODE_STATUS:
	case NODE_SCHEMA:
	case NODE_TABLETS:
	case NODE_QUERY_ROW:
		rc = fs_control_text(fs, &n->c, &fh->data);
		break;
	case NODE_INCREMENT:
		fh->mode = FH_INCREMENT;
		break;
	case NODE_TEMP:
		fh->mode = FH_TEMP;
		if (!created && (flags & O_TRUNC) && writing)
			rc = temp_truncate(fs, &n->c, 0);
		else if (!created)
			rc = temp_attr(fs, &n->c, &(struct temp_attr){ 0 });
		break;
	default:
		if (!writing) {
			/* A file being written reads empty; its writers are
			 * counted before the read, as fs_stat() does. */
			bool has_writers = node_writers(fs, n) > 0;

			rc = fs_read_cell(fs, &n->c, false, &fh->row, &cell);
			if (rc == BT_NOTFOUND)
				rc = has_writers ? 0 : -ENOENT;
		} else if (n->c.kind == NODE_LATEST && (flags & O_APPEND) &&
		    !(flags & O_TRUNC)) {
			fh->mode = FH_APPEND;	/* the buffer: what to add */
		} else if (created || (flags & O_TRUNC)) {
			fh->mode = FH_PUT;
			fh->truncated = true;	/* ": > f" commits "" */
		} else if (n->c.kind == NODE_VERSION) {
			fh->mode = FH_PUT;
			rc = fs_load_value(fs, &n->c, &fh->data, &found, NULL);
		} else {
			fh->mode = FH_RMW;
			rc = fs_load_value(fs, &n->c, &fh->seen, &found,
			    &fh->seen_ts);
			fh->seen_present = found;
			if (rc == 0)
				rc = buf_set(&fh->data, fh->seen.p,
				    fh->seen.n);
		}
		break;
	}
	if (rc < 0) {
		fh->node = NULL;
		fileh_free(fs, fh);
		return rc;
	}
	if (writing) {
		fh->writer = true;
		node_writers_add(fs, n, 1);
	}
	*out = fh;
	return 0;
}

/*
 * How the kernel caches fh's file.  Readers of values go through the page
 * cache, so that mmap works and a second read costs no request: a
 * version's value is fixed once written, and every change made through
 * the mount invalidates it (fs_column_changed()), so its pages are kept
 * from one open to the next; latest and @TS stand for other versions as
 * the column changes, so theirs are dropped at each open.  Writers,
 * temporary files and control files are read and written directly.
 */
static void
fileh_cache_mode(const struct fileh *fh, struct fuse_file_info *fi)
{
	enum node_kind kind = fh->node->c.kind;
	bool value = kind == NODE_VERSION || kind == NODE_LATEST ||
	    kind == NODE_ASOF || kind == NODE_RANGE_VERSION;

	fi->direct_io = fh->mode != FH_READ || !value;
	fi->keep_cache = !fi->direct_io && kind == NODE_VERSION;
}

void
fs_op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = fuse_req_userdata(req);
	struct fileh *fh;
	struct node *n;
	int rc;

	/* The file is found and read with no rename between (a read of a
	 * place the rename just emptied would be ENOENT). */
	pthread_rwlock_rdlock(&fs->rename_lock);
	if ((n = node_get(fs, ino)) == NULL) {
		pthread_rwlock_unlock(&fs->rename_lock);
		fuse_reply_err(req, ENOENT);
		return;
	}
	if ((n->c.kind == NODE_QUERY_ROW &&
	    (rc = fs_access_query(fs, req, n->c.table)) < 0) ||
	    (rc = fileh_open(fs, n, fi->flags, false, &fh)) < 0) {
		pthread_rwlock_unlock(&fs->rename_lock);
		node_put(fs, n);
		fuse_reply_err(req, fs_errno(rc));
		return;
	}
	pthread_rwlock_unlock(&fs->rename_lock);
	fi->fh = (uintptr_t)fh;
	fileh_cache_mode(fh, fi);
	/* A reader's close has nothing to commit: spare it the FLUSH. */
	fi->noflush = !fh->writer;
	if (fuse_reply_open(req, fi) != 0)
		fileh_free(fs, fh);
}

/*
 * Under the rename lock, read: the name is resolved and its node made
 * with no rename between, so a rename after it moves the new file with
 * its directory (one in between would leave the node, and so the
 * commit, at the directory's old name).  The handle is new and no one
 * else's: nothing takes a handle's lock here (commit() orders them).
 */
void
fs_op_create(fuse_req_t req, fuse_ino_t parent, const char *name,
    mode_t mode, struct fuse_file_info *fi)
{
	struct fs *fs = fuse_req_userdata(req);
	struct fuse_entry_param e;
	struct node *dir, *n = NULL;
	struct fileh *fh = NULL;
	struct buf scratch;
	struct coord c;
	int rc;

	buf_init(&scratch);
	pthread_rwlock_rdlock(&fs->rename_lock);
	if ((rc = fs_child_to_create(fs, parent, name, &dir, &c,
	    &scratch)) < 0)
		goto out;
	if (coord_is_dir(c.kind)) {
		rc = -EPERM;	/* only version files are made by create */
		goto out;
	}
	if ((n = node_obtain(fs, &c)) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	if (c.kind == NODE_TEMP) {
		if ((rc = temp_create(fs, &c, mode, fi->flags & O_EXCL,
		    fi->flags & O_TRUNC)) < 0)
			goto out;
	} else if ((fi->flags & O_EXCL) && c.kind != NODE_INCREMENT &&
	    fs_exists(fs, n) == 0) {
		rc = -EEXIST;
		goto out;
	}
	if ((rc = fileh_open(fs, n, fi->flags, true, &fh)) < 0)
		goto out;
	n = NULL;		/* the handle holds the reference */
	fi->fh = (uintptr_t)fh;
	fileh_cache_mode(fh, fi);
	memset(&e, 0, sizeof(e));
	if ((rc = fs_stat(fs, fh->node, &e.attr)) < 0) {
		fileh_free(fs, fh);
		goto out;
	}
	e.ino = fh->node->ino;
	e.attr_timeout = fs->timeout;
	e.entry_timeout = fs->timeout;
	node_lookup_add(fs, fh->node);
out:
	pthread_rwlock_unlock(&fs->rename_lock);
	if (rc < 0) {
		fuse_reply_err(req, fs_errno(rc));
	} else if (fuse_reply_create(req, &e, fi) != 0) {
		node_forget(fs, e.ino, 1);
		fileh_free(fs, fh);
	}
	node_put(fs, n);
	node_put(fs, dir);
	buf_release(&scratch);
}

/* Read size bytes at off of fh's temporary file into out; lock held. */
static int
fileh_temp_read(struct fs *fs, struct fileh *fh, off_t off, size_t size,
    struct buf *out)
{
	struct node *now = node_follow(fs, fh->node);
	int rc;

	mutex_assert_held(&fh->lock);
	rc = now->c.kind == NODE_TEMP ? temp_read(fs, &now->c, off, size,
	    out) : -ESTALE;
	node_put(fs, now);
	return rc;
}

/*
 * The value that fh's latest names now (where a rename of its column
 * took it), into out; lock held.  No read takes the rename lock: a commit
 * holds it while the kernel invalidates pages, which may wait for a read
 * in flight, and a rename queued behind the commit would hold the read
 * back (the lock prefers writers).  A read that meets a rename reads
 * nothing new, and the next one reads at the new name.
 */
static int
fileh_load_latest(struct fs *fs, struct fileh *fh, struct buf *out)
{
	struct node *now;
	bool found;
	int rc;

	mutex_assert_held(&fh->lock);
	now = node_follow(fs, fh->node);
	rc = fs_load_value(fs, &now->c, out, &found, NULL);
	node_put(fs, now);
	return rc;
}

/*
 * A reader of latest that asks again for more than the end of what it
 * read (the page cache asks for whole pages) reads the newest value
 * again, so that tail -f follows appends.  Lock held.
 */
static int
fileh_reread(struct fs *fs, struct fileh *fh)
{
	const struct bt_cell *cell;
	struct bt_row *row;
	struct node *now;
	int rc;

	mutex_assert_held(&fh->lock);
	/* Where the file is now: tail -f follows a rename of its column
	 * (without the rename lock: fileh_load_latest()). */
	now = node_follow(fs, fh->node);
	rc = fs_read_cell(fs, &now->c, false, &row, &cell);
	node_put(fs, now);
	if (rc != 0)
		return rc == BT_NOTFOUND ? 0 : rc;
	bt_row_free(fh->row);
	fh->row = row;
	return 0;
}

void
fs_op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
    struct fuse_file_info *fi)
{
	struct fs *fs = fuse_req_userdata(req);
	struct fileh *fh = (struct fileh *)(uintptr_t)fi->fh;
	struct bt_bytes b;
	struct buf out;
	size_t n = 0;
	int rc = 0;

	(void)ino;
	buf_init(&out);
	mutex_lock(&fh->lock);
	switch (fh->mode) {
	case FH_INCREMENT:
		rc = -EBADF;
		break;
	case FH_TEMP:
		rc = fileh_temp_read(fs, fh, off, size, &out);
		break;
	case FH_APPEND:		/* what is stored; the rest is on its way */
		rc = fileh_load_latest(fs, fh, &out);
		break;
	case FH_READ:
		if (fh->row != NULL && fh->node->c.kind == NODE_LATEST &&
		    fh->reread && (uint64_t)off + size >
		    fh->row->cells[0].value.size)
			rc = fileh_reread(fs, fh);
		fh->reread = true;
		break;
	default:
		break;
	}
	b = fh->mode == FH_TEMP || fh->mode == FH_APPEND ?
	    (struct bt_bytes){ out.p, out.n } : fileh_bytes(fh);
	if (fh->mode == FH_TEMP)
		off = 0;	/* temp_read gave the part asked for */
	if ((uint64_t)off < b.size)
		n = b.size - (size_t)off < size ? b.size - (size_t)off : size;
	if (rc < 0)
		fuse_reply_err(req, fs_errno(rc));
	else
		fuse_reply_buf(req, n ? (const char *)b.data + off : NULL, n);
	mutex_unlock(&fh->lock);
	buf_release(&out);
}

static int
fileh_temp_write(struct fs *fs, struct fileh *fh, const char *data,
    size_t size, off_t off)
{
	struct node *now = node_follow(fs, fh->node);
	int rc;

	rc = now->c.kind == NODE_TEMP ? temp_write(fs, &now->c, data, size,
	    off, fh->flags & O_APPEND) : -ESTALE;
	node_put(fs, now);
	return rc;
}

void
fs_op_write(fuse_req_t req, fuse_ino_t ino, const char *data, size_t size,
    off_t off, struct fuse_file_info *fi)
{
	struct fs *fs = fuse_req_userdata(req);
	struct fileh *fh = (struct fileh *)(uintptr_t)fi->fh;
	size_t old, end;
	int64_t delta;
	int rc = 0;

	(void)ino;
	mutex_lock(&fh->lock);
	old = fh->data.n;
	if (fh->mode == FH_READ) {
		rc = -EBADF;
		goto out;
	}
	if (fh->mode == FH_TEMP) {
		rc = fileh_temp_write(fs, fh, data, size, off);
		goto out;
	}
	if ((fh->flags & O_APPEND) || fh->mode == FH_INCREMENT)
		off = (off_t)fh->data.n;
	if ((uint64_t)off > fs->max_cell || size > fs->max_cell -
	    (uint64_t)off) {
		rc = fh->refused = -EFBIG;	/* now: shells ignore close() */
		goto out;
	}
	end = (size_t)off + size;
	if (end > fh->data.n) {
		if ((rc = buf_reserve(&fh->data, end - fh->data.n)) < 0) {
			fh->refused = rc;
			goto out;
		}
		if ((size_t)off > fh->data.n)	/* a hole reads as zeros */
			memset(fh->data.p + fh->data.n, 0,
			    (size_t)off - fh->data.n);
		fh->data.n = end;
	}
	memcpy(fh->data.p + off, data, size);
	if (fh->mode == FH_INCREMENT && (rc = delta_parse(&fh->data,
	    &delta)) < 0) {
		fh->data.n = old;
		goto out;
	}
	fh->dirty = true;
	/* A whole line is a whole delta: add it now, so that a stored
	 * value that is not a number (EINVAL) or an overflow (ERANGE) fails
	 * this write, which the shell reports, not close(), which it does
	 * not look at. */
	if (fh->mode == FH_INCREMENT && fh->data.p[fh->data.n - 1] == '\n')
		rc = commit(fs, fh, false, true);
out:
	mutex_unlock(&fh->lock);
	if (rc < 0)
		fuse_reply_err(req, fs_errno(rc));
	else
		fuse_reply_write(req, size);
}

void
fs_op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = fuse_req_userdata(req);
	struct fileh *fh = (struct fileh *)(uintptr_t)fi->fh;
	int rc;

	(void)ino;
	mutex_lock(&fh->lock);
	/*
	 * A truncation with nothing written commits at the second close: a
	 * shell's "cmd > f" closes the descriptor it opened once after
	 * moving it to stdout, and once when cmd is done, so ": > f" then
	 * publishes "" before its close() returns, while "echo v > f" never
	 * shows "" in between.  A lone close leaves it to release.
	 */
	rc = commit(fs, fh, false, ++fh->flushes >= 2);
	mutex_unlock(&fh->lock);
	fuse_reply_err(req, fs_errno(rc));
}

void
fs_op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
    struct fuse_file_info *fi)
{
	struct fs *fs = fuse_req_userdata(req);
	struct fileh *fh = (struct fileh *)(uintptr_t)fi->fh;
	int rc;

	(void)ino;
	(void)datasync;
	mutex_lock(&fh->lock);
	rc = commit(fs, fh, true, true);
	mutex_unlock(&fh->lock);
	fuse_reply_err(req, fs_errno(rc));
}

void
fs_op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = fuse_req_userdata(req);
	struct fileh *fh = (struct fileh *)(uintptr_t)fi->fh;

	(void)ino;
	mutex_lock(&fh->lock);
	(void)commit(fs, fh, false, true);	/* errors have no reader */
	mutex_unlock(&fh->lock);
	fileh_free(fs, fh);
	fuse_reply_err(req, 0);
}

/* Truncate a version by path (no handle): commit the resized value. */
static int
truncate_path(struct fs *fs, struct node *n, off_t size)
{
	struct bt_mutation m = { .kind = BT_PUT, .family = n->c.family,
	    .qualifier = n->c.qualifier, .ts = BT_TS_SERVER };
	struct bt_write_options wo = { .sync = false };
	struct buf value;
	bool found;
	int rc;

	if (n->c.kind != NODE_VERSION && n->c.kind != NODE_LATEST)
		return coord_is_dir(n->c.kind) ? -EISDIR : -EROFS;
	if ((uint64_t)size > fs->max_cell)
		return -EFBIG;
	buf_init(&value);
	if ((rc = fs_load_value(fs, &n->c, &value, &found, NULL)) < 0)
		goto out;
	if (found && value.n == (size_t)size)
		goto out;
	if ((size_t)size > value.n) {
		if ((rc = buf_reserve(&value, (size_t)size - value.n)) < 0)
			goto out;
		memset(value.p + value.n, 0, (size_t)size - value.n);
	}
	value.n = (size_t)size;
	m.value.data = value.p;
	m.value.size = value.n;
	if (n->c.kind == NODE_VERSION) {
		m.ts = n->c.ts;
		rc = bt_mutate_row(fs->store, n->c.table, n->c.row, &m, 1,
		    &wo, NULL);
	} else {
		rc = bt_put_newest(fs->store, n->c.table, n->c.row,
		    n->c.family, n->c.qualifier, m.value, &wo, NULL);
	}
	if (rc == 0) {
		latest_show(fs, &n->c);
		fs_column_changed(fs, &n->c);
	}
out:
	buf_release(&value);
	return rc;
}

/* Set the size, mode and times of temporary file n, as tools set them
 * before they rename it into place. */
static int
temp_setattr(struct fs *fs, struct node *n, const struct stat *attr,
    int to_set)
{
	struct timespec now, *mtime = NULL;
	mode_t mode = attr->st_mode;
	int rc = 0;

	if (to_set & FUSE_SET_ATTR_SIZE)
		rc = temp_truncate(fs, &n->c, (uint64_t)attr->st_size);
	if (to_set & FUSE_SET_ATTR_MTIME_NOW) {
		clock_gettime(CLOCK_REALTIME, &now);
		mtime = &now;
	} else if (to_set & FUSE_SET_ATTR_MTIME) {
		mtime = (struct timespec *)&attr->st_mtim;
	}
	if (rc == 0 && ((to_set & FUSE_SET_ATTR_MODE) || mtime != NULL))
		rc = temp_set_attr(fs, &n->c, (to_set & FUSE_SET_ATTR_MODE) ?
		    &mode : NULL, mtime);
	return rc;
}

struct node *
fs_file_node_get(struct fs *fs, fuse_ino_t ino,
    const struct fuse_file_info *fi)
{
	const struct fileh *fh;

	/* A directory's requests carry no handle (fh 0: opendir makes
	 * none), and the kernel sends a getattr's only for a file. */
	if (fi == NULL || fi->fh == 0)
		return node_get(fs, ino);
	fh = (const struct fileh *)(uintptr_t)fi->fh;
	return node_follow(fs, fh->node);
}

/* Truncate what the handle fh buffers to size.  Takes fh's lock. */
static int
fileh_truncate(struct fs *fs, struct fileh *fh, off_t size)
{
	int rc = 0;

	mutex_lock(&fh->lock);
	if (fh->mode == FH_READ)
		rc = -EBADF;
	else if ((uint64_t)size > fs->max_cell)
		rc = -EFBIG;
	else if ((size_t)size > fh->data.n &&
	    (rc = buf_reserve(&fh->data, (size_t)size - fh->data.n)) == 0)
		memset(fh->data.p + fh->data.n, 0, (size_t)size - fh->data.n);
	if (rc == 0) {
		fh->data.n = (size_t)size;
		fh->dirty = true;
	}
	mutex_unlock(&fh->lock);
	return rc;
}

/*
 * chmod, chown and utimens succeed without effect (on temporary files
 * they set the mode and mtime shown); sizes truncate.  Under the rename
 * lock, read: a truncation by path reads and writes where the file is.
 * A handle's lock is taken only after it is given back, since a commit
 * takes the rename lock while it holds its handle's.
 */
void
fs_op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
    struct fuse_file_info *fi)
{
	struct fs *fs = fuse_req_userdata(req);
	struct fileh *fh = NULL;
	struct node *n;
	struct stat st;
	bool truncate_fh = false;
	int rc = 0;

	pthread_rwlock_rdlock(&fs->rename_lock);
	if ((n = fs_file_node_get(fs, ino, fi)) == NULL) {
		pthread_rwlock_unlock(&fs->rename_lock);
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (fi != NULL && !coord_is_dir(n->c.kind))
		fh = (struct fileh *)(uintptr_t)fi->fh;
	if ((rc = fs_access_setattr(fs, req, n, attr, to_set)) < 0) {
		/* refused: nothing else changes */
	} else if ((to_set & FUSE_SET_ATTR_SIZE) && fs->read_only) {
		rc = -EROFS;
	} else if (n->c.kind == NODE_TEMP) {
		rc = temp_setattr(fs, n, attr, to_set);
		fh = NULL;	/* the temporary file is what a handle sees */
	} else if ((to_set & FUSE_SET_ATTR_SIZE) && fh != NULL) {
		truncate_fh = true;
	} else if (to_set & FUSE_SET_ATTR_SIZE) {
		rc = truncate_path(fs, n, attr->st_size);
	}
	if (rc == 0 && (rc = fs_stat(fs, n, &st)) == -ENOENT && fh != NULL)
		rc = 0;		/* not committed yet: describe the buffer */
	pthread_rwlock_unlock(&fs->rename_lock);
	if (rc == 0 && truncate_fh)
		rc = fileh_truncate(fs, fh, attr->st_size);
	if (rc == 0 && fh != NULL && fh->mode != FH_READ &&
	    fh->mode != FH_APPEND) {
		mutex_lock(&fh->lock);
		st.st_size = (off_t)fh->data.n;
		st.st_blocks = (blkcnt_t)((fh->data.n + 511) / 512);
		mutex_unlock(&fh->lock);
	}
	if (rc < 0)
		fuse_reply_err(req, fs_errno(rc));
	else
		fuse_reply_attr(req, &st, fs->timeout);
	node_put(fs, n);
}
