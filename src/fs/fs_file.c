/*
 * fs_file.c - files: open reads a value into the handle; writes fill a
 * per-handle buffer that flush (close) and fsync commit as one row
 * mutation.  Also unlink, rename, setattr and the .status text.
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
#include "tablet/gc_policy.h"
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
	pthread_mutex_t lock;
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
	if (fh->row != NULL)
		return fh->row->cells[0].value;
	return (struct bt_bytes){ fh->data.p, fh->data.n };
}

int
fs_status_text(struct fs *fs, struct buf *out)
{
	struct bt_stats st;
	char text[1024], writes[128];
	int n;

	bt_store_get_stats(fs->store, &st);
	if (st.writes_refused < 0)
		snprintf(writes, sizeof(writes), "refused (%s): remount to "
		    "replay the log", bt_strerror(st.writes_refused));
	else if (st.disk_full < 0)
		snprintf(writes, sizeof(writes), "deletes only (disk full): "
		    "delete data and compact to free room");
	else
		snprintf(writes, sizeof(writes), "%s", fs->read_only ?
		    "refused (read-only mount)" : "accepted");
	n = snprintf(text, sizeof(text),
	    "daemon: tabletfs pid %ld\n"
	    "store: %s\n"
	    "mode: %s%s\n"
	    "writes: %s\n"
	    "disk: %s\n"
	    "reserve_bytes: %" PRIu64 "\n"
	    "mutations: %" PRIu64 "\n"
	    "reads: %" PRIu64 "\n"
	    "log_syncs: %" PRIu64 "\n"
	    "log_batches: %" PRIu64 "\n"
	    "flushes: %" PRIu64 "\n"
	    "compactions: %" PRIu64 "\n"
	    "sstables: %" PRIu64 "\n"
	    "damaged_sstables: %" PRIu64 "\n"
	    "memtable_bytes: %" PRIu64 "\n"
	    "last_seq: %" PRIu64 "\n"
	    "cache_hits: %" PRIu64 "\n"
	    "cache_misses: %" PRIu64 "\n"
	    "tablets: %" PRIu64 "\n"
	    "splits: %" PRIu64 "\n"
	    "merges: %" PRIu64 "\n"
	    "files_collected: %" PRIu64 "\n"
	    "location_lookups: %" PRIu64 "\n"
	    "location_hits: %" PRIu64 "\n"
	    "location_levels: %" PRIu64 "\n"
	    "location_stale: %" PRIu64 "\n",
	    (long)getpid(), fs->store_path, fs->read_only ? "ro" : "rw",
	    fs->sync_always ? ",sync=always" : "", writes,
	    st.disk_full < 0 ? "full" : "ok", st.reserve_bytes, st.mutations,
	    st.reads,
	    st.log_syncs, st.log_batches, st.flushes, st.compactions,
	    st.sstables, st.damaged_sstables, st.memtable_bytes, st.last_seq,
	    st.cache_hits, st.cache_misses, st.tablets, st.splits, st.merges,
	    st.files_collected, st.location_lookups, st.location_hits,
	    st.location_levels, st.location_stale);
	return buf_set(out, text, (size_t)n < sizeof(text) ? (size_t)n :
	    sizeof(text) - 1);
}

/*
 * Append a tablet bound as one blank-free field: its escaped name with
 * spaces as %20, "-" for empty, and a key "-" as %2D.  Both are valid
 * (non-canonical) spellings of the same bytes.
 */
static int
bound_append(struct bt_bytes b, struct buf *out)
{
	struct buf name;
	size_t i;
	int rc;

	if (b.size == 0)
		return buf_append(out, "-", 1);
	if (b.size == 1 && *(const char *)b.data == '-')
		return buf_append(out, "%2D", 3);
	buf_init(&name);
	if ((rc = names_encode(slice_make(b.data, b.size), &name)) < 0)
		goto out;
	for (i = 0; i < name.n && rc == 0; i++)
		rc = name.p[i] == ' ' ? buf_append(out, "%20", 3) :
		    buf_append(out, &name.p[i], 1);
out:
	buf_release(&name);
	return rc;
}

int
fs_tablets_text(struct fs *fs, const char *table, struct buf *out)
{
	struct bt_tablet_info *tablets;
	char text[128];
	size_t count;
	int rc, n;

	buf_clear(out);
	if ((rc = bt_table_tablets(fs->store, table, &tablets, &count)) < 0)
		return rc;
	for (size_t i = 0; i < count && rc == 0; i++) {
		n = snprintf(text, sizeof(text), " sstables=%" PRIu64
		    " bytes=%" PRIu64 " memtable=%" PRIu64 "\n",
		    tablets[i].sstables, tablets[i].sstable_bytes,
		    tablets[i].memtable_bytes);
		if ((rc = bound_append(tablets[i].start, out)) < 0 ||
		    (rc = buf_append(out, " ", 1)) < 0 ||
		    (rc = bound_append(tablets[i].end, out)) < 0)
			break;
		rc = buf_append(out, text, (size_t)n);
	}
	bt_tablets_free(tablets);
	return rc;
}

int
fs_control_text(struct fs *fs, const struct coord *c, struct buf *out)
{
	char *text;
	int rc;

	switch (c->kind) {
	case NODE_STATUS:
		return fs_status_text(fs, out);
	case NODE_TABLETS:
		return fs_tablets_text(fs, c->table, out);
	case NODE_SCHEMA:
		if ((rc = bt_table_describe(fs->store, c->table, &text)) < 0)
			return rc;
		rc = buf_set(out, text, strlen(text));
		free(text);
		return rc;
	default:
		return -EINVAL;
	}
}

/* Load the value of version node c into out, and its timestamp into *ts
 * (may be NULL); found tells whether one exists (out stays empty if not). */
static int
load_value(struct fs *fs, const struct coord *c, struct buf *out,
    bool *found, int64_t *ts)
{
	const struct bt_cell *cell;
	struct bt_row *row;
	int rc;

	buf_clear(out);
	*found = false;
	rc = fs_read_cell(fs, c, false, &row, &cell);
	if (rc == BT_NOTFOUND)
		return 0;
	if (rc < 0)
		return rc;
	rc = buf_set(out, cell->value.data, cell->value.size);
	if (ts != NULL)
		*ts = cell->ts;
	bt_row_free(row);
	*found = rc == 0;
	return rc;
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

void
fs_column_changed(struct fs *fs, const struct coord *c)
{
	struct coord k = *c;
	/* The column, family and row directories: their mtime is the
	 * newest version's. */
	static const enum node_kind kinds[] = { NODE_LATEST, NODE_COLUMN,
	    NODE_FAMILY, NODE_ROW };
	fuse_ino_t ino;

	if (c->kind == NODE_VERSION && (ino = node_peek(fs, c)) != 0)
		fuse_lowlevel_notify_inval_inode(fs->se, ino, 0, 0);
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		k.kind = kinds[i];
		if ((ino = node_peek(fs, &k)) != 0)
			fuse_lowlevel_notify_inval_inode(fs->se, ino, 0, 0);
	}
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
		if ((rc = load_value(fs, &mine, &fh->seen, &found, NULL)) < 0)
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
	int64_t delta;
	int rc;

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
	}
	node_put(fs, now);
	pthread_rwlock_unlock(&fs->rename_lock);
	return rc;
}

/* The GC policy text of c's family, from the table's schema ("FAMILY
 * group=G gc=POLICY" lines); freed with bt_free(). */
static int
family_gc_text(struct fs *fs, const struct coord *c, char **out)
{
	size_t n = strlen(c->family);
	char *text, *line, *gc, *end;
	int rc;

	if ((rc = bt_table_describe(fs->store, c->table, &text)) < 0)
		return rc;
	rc = -ENOENT;
	for (line = text; line != NULL && *line != '\0'; ) {
		if (strncmp(line, c->family, n) == 0 && line[n] == ' ' &&
		    (end = strchr(line, '\n')) != NULL &&
		    (gc = strstr(line, " gc=")) != NULL && gc < end) {
			gc += 4;
			rc = -ENOMEM;
			if ((*out = bt_malloc((size_t)(end - gc) + 1)) !=
			    NULL) {
				memcpy(*out, gc, (size_t)(end - gc));
				(*out)[end - gc] = '\0';
				rc = 0;
			}
			break;
		}
		if ((line = strchr(line, '\n')) != NULL)
			line++;
	}
	free(text);
	return rc;
}

/*
 * -EINVAL when a version at c (a timestamp) would be condemned by its
 * family's GC policy the moment it is written: older than maxage, or
 * behind maxversions newer versions.  Such a write must fail where the
 * shell sees it, not vanish.  0 otherwise, or an error.
 */
static int
version_condemned(struct fs *fs, const struct coord *c)
{
	struct bt_read_options ro = { .keys_only = true };
	struct gc_policy *policy = NULL;
	struct bt_row *row = NULL;
	struct timespec now;
	struct bt_column col;
	uint64_t newer = 0;
	char *text = NULL;
	int rc;

	if ((rc = family_gc_text(fs, c, &text)) < 0 ||
	    (rc = gc_policy_parse(text, &policy)) < 0)
		goto out;
	if (gc_policy_keeps_all(policy))
		goto out;
	fs_column_filter(c, &col, &ro);
	if ((rc = bt_read_row(fs->store, c->table, c->row, &ro, &row)) < 0)
		goto out;
	for (size_t i = 0; rc == 0 && i < row->cell_count; i++)
		newer += row->cells[i].ts > c->ts;
	clock_gettime(CLOCK_REALTIME, &now);
	rc = gc_policy_condemns(policy, newer, c->ts, (int64_t)now.tv_sec *
	    1000000 + now.tv_nsec / 1000) ? -EINVAL : 0;
out:
	bt_row_free(row);
	gc_policy_free(policy);
	bt_free(text);
	return rc == BT_NOTFOUND ? 0 : rc;
}

static void
fileh_free(struct fs *fs, struct fileh *fh)
{
	if (fh->writer)
		node_writers_add(fs, fh->node, -1);
	node_put(fs, fh->node);
	buf_release(&fh->data);
	buf_release(&fh->seen);
	bt_row_free(fh->row);
	pthread_mutex_destroy(&fh->lock);
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
	    n->c.kind == NODE_ASOF))
		return -EROFS;
	if (n->c.kind == NODE_INCREMENT && acc != O_WRONLY)
		return fs->read_only ? -EROFS : -EACCES;
	if (coord_is_dir(n->c.kind))
		return -EISDIR;
	if (writing && n->c.kind == NODE_VERSION &&
	    (rc = version_condemned(fs, &n->c)) < 0)
		return rc;
	if ((fh = bt_calloc(1, sizeof(*fh))) == NULL)
		return -ENOMEM;
	pthread_mutex_init(&fh->lock, NULL);
	buf_init(&fh->data);
	buf_init(&fh->seen);
	fh->node = n;
	fh->flags = flags;
	fh->stamp = -1;
	switch (n->c.kind) {
	case NODE_STATUS:
	case NODE_SCHEMA:
	case NODE_TABLETS:
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
			rc = fs_read_cell(fs, &n->c, false, &fh->row, &cell);
			if (rc == BT_NOTFOUND)	/* a pending write's file */
				rc = node_writers(fs, n) == 0 ? -ENOENT : 0;
		} else if (n->c.kind == NODE_LATEST && (flags & O_APPEND) &&
		    !(flags & O_TRUNC)) {
			fh->mode = FH_APPEND;	/* the buffer: what to add */
		} else if (created || (flags & O_TRUNC)) {
			fh->mode = FH_PUT;
			fh->truncated = true;	/* ": > f" commits "" */
		} else if (n->c.kind == NODE_VERSION) {
			fh->mode = FH_PUT;
			rc = load_value(fs, &n->c, &fh->data, &found, NULL);
		} else {
			fh->mode = FH_RMW;
			rc = load_value(fs, &n->c, &fh->seen, &found,
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
	    kind == NODE_ASOF;

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

	if ((n = node_get(fs, ino)) == NULL) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if ((rc = fileh_open(fs, n, fi->flags, false, &fh)) < 0) {
		node_put(fs, n);
		fuse_reply_err(req, fs_errno(rc));
		return;
	}
	fi->fh = (uintptr_t)fh;
	fileh_cache_mode(fh, fi);
	/* A reader's close has nothing to commit: spare it the FLUSH. */
	fi->noflush = !fh->writer;
	if (fuse_reply_open(req, fi) != 0)
		fileh_free(fs, fh);
}

void
fs_op_create(fuse_req_t req, fuse_ino_t parent, const char *name,
    mode_t mode, struct fuse_file_info *fi)
{
	struct fs *fs = fuse_req_userdata(req);
	struct fuse_entry_param e;
	struct node *dir, *n = NULL;
	struct fileh *fh;
	struct buf scratch;
	struct coord c;
	int rc;

	buf_init(&scratch);
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
	if (fuse_reply_create(req, &e, fi) != 0) {
		node_forget(fs, e.ino, 1);
		fileh_free(fs, fh);
	}
out:
	if (rc < 0)
		fuse_reply_err(req, fs_errno(rc));
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

	rc = now->c.kind == NODE_TEMP ? temp_read(fs, &now->c, off, size,
	    out) : -ESTALE;
	node_put(fs, now);
	return rc;
}

/* The value that fh's latest names now, into out; lock held. */
static int
fileh_load_latest(struct fs *fs, struct fileh *fh, struct buf *out)
{
	bool found;

	return load_value(fs, &fh->node->c, out, &found, NULL);
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
	int rc;

	if ((rc = fs_read_cell(fs, &fh->node->c, false, &row, &cell)) != 0)
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
	pthread_mutex_lock(&fh->lock);
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
	pthread_mutex_unlock(&fh->lock);
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
	pthread_mutex_lock(&fh->lock);
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
	pthread_mutex_unlock(&fh->lock);
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
	pthread_mutex_lock(&fh->lock);
	/*
	 * A truncation with nothing written commits at the second close: a
	 * shell's "cmd > f" closes the descriptor it opened once after
	 * moving it to stdout, and once when cmd is done, so ": > f" then
	 * publishes "" before its close() returns, while "echo v > f" never
	 * shows "" in between.  A lone close leaves it to release.
	 */
	rc = commit(fs, fh, false, ++fh->flushes >= 2);
	pthread_mutex_unlock(&fh->lock);
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
	pthread_mutex_lock(&fh->lock);
	rc = commit(fs, fh, true, true);
	pthread_mutex_unlock(&fh->lock);
	fuse_reply_err(req, fs_errno(rc));
}

void
fs_op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = fuse_req_userdata(req);
	struct fileh *fh = (struct fileh *)(uintptr_t)fi->fh;

	(void)ino;
	pthread_mutex_lock(&fh->lock);
	(void)commit(fs, fh, false, true);	/* errors have no reader */
	pthread_mutex_unlock(&fh->lock);
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
	if ((rc = load_value(fs, &n->c, &value, &found, NULL)) < 0)
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

/* chmod, chown and utimens succeed without effect (on temporary files
 * they set the mode and mtime shown); sizes truncate. */
void
fs_op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
    struct fuse_file_info *fi)
{
	struct fs *fs = fuse_req_userdata(req);
	struct fileh *fh = NULL;
	struct node *n;
	struct stat st;
	int rc = 0;

	if ((n = node_get(fs, ino)) == NULL) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (fi != NULL && !coord_is_dir(n->c.kind))
		fh = (struct fileh *)(uintptr_t)fi->fh;
	if ((to_set & FUSE_SET_ATTR_SIZE) && fs->read_only) {
		rc = -EROFS;
	} else if (n->c.kind == NODE_TEMP) {
		rc = temp_setattr(fs, n, attr, to_set);
		fh = NULL;	/* the temporary file is what a handle sees */
	} else if ((to_set & FUSE_SET_ATTR_SIZE) && fh != NULL) {
		pthread_mutex_lock(&fh->lock);
		if (fh->mode == FH_READ)
			rc = -EBADF;
		else if ((uint64_t)attr->st_size > fs->max_cell)
			rc = -EFBIG;
		else if ((size_t)attr->st_size > fh->data.n &&
		    (rc = buf_reserve(&fh->data, (size_t)attr->st_size -
		    fh->data.n)) == 0)
			memset(fh->data.p + fh->data.n, 0,
			    (size_t)attr->st_size - fh->data.n);
		if (rc == 0) {
			fh->data.n = (size_t)attr->st_size;
			fh->dirty = true;
		}
		pthread_mutex_unlock(&fh->lock);
	} else if (to_set & FUSE_SET_ATTR_SIZE) {
		rc = truncate_path(fs, n, attr->st_size);
	}
	if (rc == 0 && (rc = fs_stat(fs, n, &st)) == -ENOENT && fh != NULL)
		rc = 0;		/* not committed yet: describe the buffer */
	if (rc == 0 && fh != NULL && fh->mode != FH_READ &&
	    fh->mode != FH_APPEND) {
		pthread_mutex_lock(&fh->lock);
		st.st_size = (off_t)fh->data.n;
		st.st_blocks = (blkcnt_t)((fh->data.n + 511) / 512);
		pthread_mutex_unlock(&fh->lock);
	}
	if (rc < 0)
		fuse_reply_err(req, fs_errno(rc));
	else
		fuse_reply_attr(req, &st, fs->timeout);
	node_put(fs, n);
}

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
	else if ((rc = version_condemned(fs, c)) == 0)
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

		rc = latest_hidden(fs, src) ? 0 : load_value(fs, src, &value,
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
	pthread_rwlock_wrlock(&fs->rename_lock);
	locked = true;
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
