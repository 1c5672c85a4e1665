/*
 * fs_dir.c - names, attributes and directory changes: lookup, getattr,
 * mkdir and rmdir.  The listings are in fs_list.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs/fs.h"
#include "fs/fs_query.h"
#include "tablet/gc_policy.h"
#include "util/alloc.h"
#include "util/names.h"

/* Parse canonical decimal (no sign, no leading zero) into 0..INT64_MAX. */
static int
ts_parse(const char *s, int64_t *ts)
{
	uint64_t v = 0;

	if (*s == '\0' || (s[0] == '0' && s[1] != '\0'))
		return -EINVAL;
	for (; *s != '\0'; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		if (v > ((uint64_t)INT64_MAX - (uint64_t)(*s - '0')) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*ts = (int64_t)v;
	return 0;
}

/* Parse "T1..T2", each canonical decimal, into a range that holds a
 * time: T1 < T2. */
static int
range_parse(const char *s, int64_t *start, int64_t *end)
{
	const char *dots = strstr(s, "..");
	char first[24];

	if (dots == NULL || (size_t)(dots - s) >= sizeof(first))
		return -EINVAL;
	memcpy(first, s, (size_t)(dots - s));
	first[dots - s] = '\0';
	if (ts_parse(first, start) < 0 || ts_parse(dots + 2, end) < 0 ||
	    *end <= *start)
		return -EINVAL;
	return 0;
}

/*
 * A name in query directory parent: a filter component (a query
 * directory that adds it; its path goes to scratch) or a row.
 */
static int
query_child(struct fs *fs, const struct node *parent, const char *name,
    struct coord *c, struct buf *scratch)
{
	struct coord table = { .kind = NODE_TABLE,
	    .table = parent->c.table };
	struct fs_query q;
	int rc;

	if (fs_query_is_component(name)) {
		buf_clear(scratch);
		if ((parent->c.query[0] != '\0' &&
		    ((rc = buf_append(scratch, parent->c.query,
		    strlen(parent->c.query))) < 0 ||
		    (rc = buf_append(scratch, "/", 1)) < 0)) ||
		    (rc = buf_append(scratch, name, strlen(name) + 1)) < 0)
			return rc;
		rc = fs_query_parse((const char *)scratch->p, &q);
		fs_query_release(&q);
		if (rc < 0)
			return rc == -ENOMEM ? rc : -ENOENT;
		c->kind = NODE_QUERY;
		c->query = (const char *)scratch->p;
		return 0;
	}
	if ((rc = fs_name_decode(fs, &table, name, scratch)) < 0 ||
	    scratch->n == 0)
		return rc < 0 && rc != -EINVAL && rc != -ENOENT ? rc : -ENOENT;
	c->kind = NODE_QUERY_ROW;
	c->row.data = scratch->p;
	c->row.size = scratch->n;
	return 0;
}

/*
 * The coordinate of name inside parent.  Bytes decoded from the name go
 * to scratch, which c then borrows; a row or column may be named by its
 * short form (fs_name_decode()).  -ENOENT for a name that cannot exist,
 * -EINVAL instead when creating, -ENOTDIR under a file, -ENAMETOOLONG for
 * a name longer than statfs's f_namemax: the kernel passes FUSE names of
 * up to 1024 bytes, but no listing shows such a name (a key that long is
 * listed under its short form), so a file made under one could be
 * reached and never seen.
 */
int
fs_child(struct fs *fs, const struct node *parent, const char *name,
    bool creating, struct coord *c, struct buf *scratch)
{
	int bad = creating ? -EINVAL : -ENOENT, rc;

	if (strlen(name) > NAMES_MAX_COMPONENT)
		return -ENAMETOOLONG;
	*c = parent->c;
	switch (parent->c.kind) {
	case NODE_ROOT:
		c->kind = strcmp(name, ".status") == 0 ? NODE_STATUS :
		    NODE_TABLE;
		if (c->kind == NODE_TABLE && name[0] == '.')
			return -ENOENT;
		c->table = name;
		return 0;
	case NODE_TABLE:
		if (strcmp(name, ".schema") == 0 ||
		    strcmp(name, ".tablets") == 0) {
			c->kind = name[1] == 's' ? NODE_SCHEMA : NODE_TABLETS;
			return 0;
		}
		if (strcmp(name, ".filter") == 0) {
			if (creating)
				return -EROFS;
			c->kind = NODE_QUERY;
			c->query = "";
			return 0;
		}
		if ((rc = fs_name_decode(fs, &parent->c, name, scratch)) < 0 ||
		    scratch->n == 0)
			return rc < 0 && rc != -EINVAL && rc != -ENOENT ? rc :
			    bad;
		c->kind = NODE_ROW;
		c->row.data = scratch->p;
		c->row.size = scratch->n;
		return 0;
	case NODE_ROW:
		if (name[0] == '.')
			return bad;
		c->kind = NODE_FAMILY;
		c->family = name;
		return 0;
	case NODE_FAMILY:
		if ((rc = fs_name_decode(fs, &parent->c, name, scratch)) < 0)
			return rc != -EINVAL && rc != -ENOENT ? rc : bad;
		c->kind = NODE_COLUMN;
		c->qualifier.data = scratch->p;
		c->qualifier.size = scratch->n;
		return 0;
	case NODE_COLUMN:
		if (strcmp(name, "latest") == 0) {
			c->kind = NODE_LATEST;
		} else if (strcmp(name, "increment") == 0) {
			c->kind = NODE_INCREMENT;
		} else if (name[0] == '@' && strstr(name, "..") != NULL) {
			if (range_parse(name + 1, &c->range_start,
			    &c->range_end) < 0)
				return bad;
			c->ts = 0;
			c->kind = NODE_RANGE;
		} else if (name[0] == '@') {
			if (ts_parse(name + 1, &c->ts) < 0)
				return bad;
			c->kind = NODE_ASOF;
		} else if (ts_parse(name, &c->ts) == 0) {
			c->kind = NODE_VERSION;
		} else {
			c->kind = NODE_TEMP;	/* fs_temp.c */
			c->name = name;
		}
		return 0;
	case NODE_QUERY:
		if (creating)
			return -EROFS;
		return query_child(fs, parent, name, c, scratch);
	case NODE_RANGE:
		if (creating)
			return -EROFS;
		if (ts_parse(name, &c->ts) < 0 ||
		    c->ts < parent->c.range_start ||
		    c->ts >= parent->c.range_end)
			return -ENOENT;
		c->kind = NODE_RANGE_VERSION;
		return 0;
	default:
		return -ENOTDIR;
	}
}

int
fs_child_at(struct fs *fs, fuse_ino_t parent, const char *name,
    bool creating, struct node **dirp, struct coord *c, struct buf *scratch)
{
	if ((*dirp = node_get(fs, parent)) == NULL)
		return -ENOENT;
	return fs_child(fs, *dirp, name, creating, c, scratch);
}

int
fs_child_to_create(struct fs *fs, fuse_ino_t parent, const char *name,
    struct node **dirp, struct coord *c, struct buf *scratch)
{
	if (fs->read_only) {
		*dirp = NULL;
		return -EROFS;
	}
	return fs_child_at(fs, parent, name, true, dirp, c, scratch);
}

/*
 * The time of the newest version under row, family or column c in *ts:
 * 0, BT_NOTFOUND when it holds none, or an error.  A directory's mtime is
 * this, so that find -newer and ls -t see where writes went.
 */
static int
dir_newest(struct fs *fs, const struct coord *c, int64_t *ts)
{
	struct bt_read_options ro = { .cells_per_column = 1,
	    .keys_only = true };
	struct bt_column col;
	struct bt_row *row;
	int rc;

	fs_column_filter(c, &col, &ro);
	if ((rc = bt_read_row(fs->store, c->table, c->row, &ro, &row)) != 0)
		return rc;
	*ts = fs_cells_newest(row->cells, row->cell_count);
	bt_row_free(row);
	return 0;
}

/* Whether row, family or column c holds a live cell: 0, BT_NOTFOUND or an
 * error. */
static int
has_data(struct fs *fs, const struct coord *c)
{
	int64_t ts;

	return dir_newest(fs, c, &ts);
}

/*
 * The version a file name stands for: VERSION exactly its time, LATEST
 * the newest, ASOF the newest at or before its bound.  0 with *rowp (to
 * free) and *cellp, BT_NOTFOUND, or an error.
 */
int
fs_read_cell(struct fs *fs, const struct coord *c, bool keys_only,
    struct bt_row **rowp, const struct bt_cell **cellp)
{
	struct bt_read_options ro = { .cells_per_column = 1,
	    .keys_only = keys_only };
	struct bt_column col;
	struct bt_row *row;
	int rc;

	fs_column_filter(c, &col, &ro);
	if (c->kind == NODE_VERSION || c->kind == NODE_ASOF ||
	    c->kind == NODE_RANGE_VERSION) {
		ro.has_max_ts = true;
		ro.max_ts = c->ts;
	}
	if ((rc = bt_read_row(fs->store, c->table, c->row, &ro, &row)) != 0)
		return rc;
	if (row->cell_count == 0 || ((c->kind == NODE_VERSION ||
	    c->kind == NODE_RANGE_VERSION) && row->cells[0].ts != c->ts)) {
		bt_row_free(row);
		return BT_NOTFOUND;
	}
	*rowp = row;
	*cellp = &row->cells[0];
	return 0;
}


int64_t
fs_cells_newest(const struct bt_cell *cells, size_t count)
{
	int64_t ts = 0;

	for (size_t i = 0; i < count; i++)
		if (cells[i].ts > ts)
			ts = cells[i].ts;
	return ts;
}

void
fs_stat_set_time(struct stat *st, int64_t ts)
{
	st->st_mtim.tv_sec = ts / 1000000;
	st->st_mtim.tv_nsec = (long)(ts % 1000000) * 1000;
	st->st_atim = st->st_ctim = st->st_mtim;
}

/* Load the value of version node c into out, and its timestamp into *ts
 * (may be NULL); found tells whether one exists (out stays empty if not). */
int
fs_load_value(struct fs *fs, const struct coord *c, struct buf *out,
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

/* The line of family in a table's schema text ("FAMILY group=G
 * gc=POLICY" lines, bt_table_describe()), or NULL. */
static const char *
family_line(const char *text, const char *family)
{
	size_t n = strlen(family);

	for (const char *line = text; line != NULL && *line != '\0'; ) {
		if (strncmp(line, family, n) == 0 &&
		    (line[n] == ' ' || line[n] == '\n' || line[n] == '\0'))
			return line;
		if ((line = strchr(line, '\n')) != NULL)
			line++;
	}
	return NULL;
}

/* The GC policy text of c's family, from the table's schema; freed with
 * bt_free(). */
static int
family_gc_text(struct fs *fs, const struct coord *c, char **out)
{
	const char *line, *gc, *end;
	char *text;
	int rc;

	if ((rc = bt_table_describe(fs->store, c->table, &text)) < 0)
		return rc;
	rc = -ENOENT;
	if ((line = family_line(text, c->family)) != NULL &&
	    (end = strchr(line, '\n')) != NULL &&
	    (gc = strstr(line, " gc=")) != NULL && gc < end) {
		gc += 4;
		rc = -ENOMEM;
		if ((*out = bt_malloc((size_t)(end - gc) + 1)) != NULL) {
			memcpy(*out, gc, (size_t)(end - gc));
			(*out)[end - gc] = '\0';
			rc = 0;
		}
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
int
fs_version_condemned(struct fs *fs, const struct coord *c)
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

/* 0 if family is in table's schema, -ENOENT if not, or an error. */
int
fs_family_known(struct fs *fs, const char *table, const char *family)
{
	char *text;
	int rc;

	if ((rc = bt_table_describe(fs->store, table, &text)) < 0)
		return rc;
	rc = family_line(text, family) != NULL ? 0 : -ENOENT;
	free(text);
	return rc;
}

/*
 * The version file n names, read keys only (fs_read_cell()): 0 with
 * *rowp (to free) and *cellp; 0 with *rowp NULL when it has no version
 * yet but is open for writing (a file being written, empty until its
 * commit); BT_NOTFOUND; or an error.  The writers are counted before
 * the read: a writer leaves only once its version is readable, so a
 * file with writers before the read has a version or still a writer.
 */
static int
file_cell(struct fs *fs, struct node *n, struct bt_row **rowp,
    const struct bt_cell **cellp)
{
	bool writing = (n->c.kind == NODE_VERSION ||
	    n->c.kind == NODE_LATEST) && node_writers(fs, n) > 0;
	int rc;

	*rowp = NULL;
	rc = n->c.kind == NODE_LATEST && latest_hidden(fs, &n->c) ?
	    BT_NOTFOUND : fs_read_cell(fs, &n->c, true, rowp, cellp);
	return rc == BT_NOTFOUND && writing ? 0 : rc;
}

/* 0 if directory c (a row, family or column) holds data or is pending,
 * -ENOENT if neither, or an error. */
static int
dir_exists(struct fs *fs, const struct coord *c)
{
	int rc;

	if (pending_has(fs, c))
		return 0;
	rc = has_data(fs, c);
	return rc == BT_NOTFOUND ? -ENOENT : rc;
}

/* 0 if n names something that exists now, else -ENOENT or an error. */
int
fs_exists(struct fs *fs, struct node *n)
{
	struct bt_row *row;
	const struct bt_cell *cell;
	char *text;
	int rc;

	switch (n->c.kind) {
	case NODE_ROOT:
	case NODE_STATUS:
		return 0;
	case NODE_TABLE:
	case NODE_SCHEMA:
	case NODE_TABLETS:
		if ((rc = bt_table_describe(fs->store, n->c.table,
		    &text)) == 0)
			free(text);
		return rc;
	case NODE_ROW:
	case NODE_FAMILY:
	case NODE_COLUMN:
		return dir_exists(fs, &n->c);
	case NODE_QUERY:
		if ((rc = bt_table_describe(fs->store, n->c.table,
		    &text)) == 0)
			free(text);
		return rc;
	case NODE_QUERY_ROW:
		return fs_query_row_read(fs, &n->c, NULL);
	case NODE_RANGE:
		/* A range of a column that exists, empty or not. */
		return dir_exists(fs, &(struct coord){ .kind = NODE_COLUMN,
		    .table = n->c.table, .row = n->c.row,
		    .family = n->c.family, .qualifier = n->c.qualifier });
	case NODE_TEMP:
		return temp_attr(fs, &n->c, &(struct temp_attr){ 0 });
	case NODE_VERSION:
	case NODE_LATEST:
	case NODE_ASOF:
	case NODE_RANGE_VERSION:
		if ((rc = file_cell(fs, n, &row, &cell)) == 0)
			bt_row_free(row);
		return rc == BT_NOTFOUND ? -ENOENT : rc;
	case NODE_INCREMENT:
		return 0;
	}
	return -ENOENT;
}

void
fs_stat_dir(struct fs *fs, fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_mode = S_IFDIR | (fs->read_only ? 0555 : 0755);
	st->st_nlink = 2;
	st->st_uid = fs->uid;
	st->st_gid = fs->gid;
	st->st_blksize = 4096;
	st->st_atim = st->st_mtim = st->st_ctim = fs->started;
}

void
fs_stat_file(struct fs *fs, fuse_ino_t ino, mode_t mode, uint64_t size,
    int64_t ts, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_mode = S_IFREG | (fs->read_only ? mode & 0444 : mode);
	st->st_nlink = 1;
	st->st_uid = fs->uid;
	st->st_gid = fs->gid;
	st->st_size = (off_t)size;
	st->st_blksize = 4096;
	st->st_blocks = (blkcnt_t)((size + 511) / 512);
	fs_stat_set_time(st, ts);
}

/* The attributes of n as its kind has them, before its table's or
 * family's access (fs_stat()). */
static int
stat_kind(struct fs *fs, struct node *n, struct stat *st)
{
	int64_t started = (int64_t)fs->started.tv_sec * 1000000;
	const struct bt_cell *cell;
	struct temp_attr ta;
	struct bt_row *row;
	struct buf text;
	bool pending;
	int64_t ts = 0;
	int rc;

	switch (n->c.kind) {
	case NODE_ROW:
	case NODE_FAMILY:
	case NODE_COLUMN:
		/* The newest version's time; a pending directory's is the
		 * mount's.  Pending is asked first: a first write settles
		 * it once its version is readable, so a directory that
		 * was pending before the read holds one or is pending. */
		pending = pending_has(fs, &n->c);
		if ((rc = dir_newest(fs, &n->c, &ts)) == BT_NOTFOUND) {
			if (!pending)
				return -ENOENT;
			ts = started;
		} else if (rc < 0) {
			return rc;
		}
		fs_stat_dir(fs, n->ino, st);
		fs_stat_set_time(st, ts);
		return 0;
	case NODE_STATUS:
	case NODE_SCHEMA:
	case NODE_TABLETS:
		buf_init(&text);
		if ((rc = fs_control_text(fs, &n->c, &text)) == 0)
			fs_stat_file(fs, n->ino, 0444, text.n, started, st);
		buf_release(&text);
		return rc;
	case NODE_TEMP:
		if ((rc = temp_attr(fs, &n->c, &ta)) == 0) {
			fs_stat_file(fs, n->ino, ta.mode, ta.size, 0, st);
			st->st_mtim = st->st_atim = st->st_ctim = ta.mtime;
		}
		return rc;
	case NODE_QUERY_ROW:
		buf_init(&text);
		if ((rc = fs_control_text(fs, &n->c, &text)) == 0)
			fs_stat_file(fs, n->ino, 0444, text.n, started, st);
		buf_release(&text);
		return rc;
	case NODE_QUERY:
	case NODE_RANGE:
		if ((rc = fs_exists(fs, n)) < 0)
			return rc;
		fs_stat_dir(fs, n->ino, st);
		st->st_mode = S_IFDIR | 0555;	/* read-only */
		return 0;
	case NODE_VERSION:
	case NODE_LATEST:
	case NODE_ASOF:
	case NODE_RANGE_VERSION:
		if ((rc = file_cell(fs, n, &row, &cell)) != 0)
			return rc == BT_NOTFOUND ? -ENOENT : rc;
		if (row != NULL) {
			fs_stat_file(fs, n->ino, n->c.kind == NODE_ASOF ||
			    n->c.kind == NODE_RANGE_VERSION ? 0444 : 0644,
			    cell->value_size, cell->ts, st);
			bt_row_free(row);
		} else {		/* being written: empty until then */
			struct timespec now;

			clock_gettime(CLOCK_REALTIME, &now);
			fs_stat_file(fs, n->ino, 0644, 0, (int64_t)now.tv_sec *
			    1000000 + now.tv_nsec / 1000, st);
		}
		return 0;
	case NODE_INCREMENT:
		/* Written by the mount's owner alone, as every file is. */
		fs_stat_file(fs, n->ino, 0200, 0, started, st);
		return 0;
	default:
		fs_stat_dir(fs, n->ino, st);
		return 0;
	}
}

/* The attributes of n; -ENOENT when a file no longer exists. */
int
fs_stat(struct fs *fs, struct node *n, struct stat *st)
{
	int rc;

	if ((rc = stat_kind(fs, n, st)) == 0)
		fs_access_present(fs, &n->c, st);
	return rc;
}

/* Reply to a lookup-like request with n, counting the kernel's
 * reference.  Returns 0 or the errno sent instead. */
int
fs_reply_entry(struct fs *fs, fuse_req_t req, struct node *n)
{
	struct fuse_entry_param e;
	int rc;

	memset(&e, 0, sizeof(e));
	if ((rc = fs_stat(fs, n, &e.attr)) < 0) {
		fuse_reply_err(req, fs_errno(rc));
		return fs_errno(rc);
	}
	fs_listing_check(fs, n);
	e.ino = n->ino;
	e.attr_timeout = fs->timeout;
	e.entry_timeout = fs->timeout;
	node_lookup_add(fs, n);
	if (fuse_reply_entry(req, &e) != 0)
		node_forget(fs, n->ino, 1);
	return 0;
}

/* Whether fs_stat() of kind answers -ENOENT for what does not exist,
 * from the same read that gives its attributes. */
static bool
fs_stat_checks_exists(enum node_kind kind)
{
	return kind == NODE_VERSION || kind == NODE_LATEST ||
	    kind == NODE_ASOF || kind == NODE_TEMP || kind == NODE_ROW ||
	    kind == NODE_FAMILY || kind == NODE_COLUMN ||
	    kind == NODE_RANGE || kind == NODE_RANGE_VERSION ||
	    kind == NODE_QUERY || kind == NODE_QUERY_ROW;
}

void
fs_op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs *fs = fuse_req_userdata(req);
	struct node *dir, *n = NULL;
	struct buf scratch;
	struct coord c;
	int rc;

	buf_init(&scratch);
	/* Names are resolved and read with no rename between (commit()). */
	pthread_rwlock_rdlock(&fs->rename_lock);
	if ((rc = fs_child_at(fs, parent, name, false, &dir, &c,
	    &scratch)) < 0)
		goto out;
	if ((c.kind == NODE_QUERY || c.kind == NODE_QUERY_ROW) &&
	    (rc = fs_access_query(fs, req, c.table)) < 0)
		goto out;
	if ((n = node_obtain(fs, &c)) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	/*
	 * The attributes of a version or a directory are read from the
	 * cells whose existence fs_exists would read first: fs_reply_entry
	 * alone answers ENOENT for them, with one read instead of two.
	 */
	if (!fs_stat_checks_exists(n->c.kind) && (rc = fs_exists(fs, n)) < 0)
		goto out;
	fs_reply_entry(fs, req, n);
out:
	pthread_rwlock_unlock(&fs->rename_lock);
	if (rc < 0)
		fuse_reply_err(req, fs_errno(rc));
	node_put(fs, n);
	node_put(fs, dir);
	buf_release(&scratch);
}

void
fs_op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	node_forget(fuse_req_userdata(req), ino, nlookup);
	fuse_reply_none(req);
}

void
fs_op_forget_multi(fuse_req_t req, size_t count,
    struct fuse_forget_data *forgets)
{
	struct fs *fs = fuse_req_userdata(req);

	for (size_t i = 0; i < count; i++)
		node_forget(fs, forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

void
fs_op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = fuse_req_userdata(req);
	struct node *n;
	struct stat st;
	int rc;

	/* A rename moves the data, then the nodes: none in between. */
	pthread_rwlock_rdlock(&fs->rename_lock);
	if ((n = fs_file_node_get(fs, ino, fi)) == NULL) {
		pthread_rwlock_unlock(&fs->rename_lock);
		fuse_reply_err(req, ENOENT);
		return;
	}
	fs_listing_check(fs, n);
	rc = fs_stat(fs, n, &st);
	pthread_rwlock_unlock(&fs->rename_lock);
	if (rc < 0)
		fuse_reply_err(req, fs_errno(rc));
	else
		fuse_reply_attr(req, &st, fs->timeout);
	node_put(fs, n);
}

/* ---- mkdir and rmdir ---- */

/*
 * Under the rename lock, read: the name is resolved and made pending with
 * no rename between (one that moved the parent meanwhile would leave the
 * new directory at the parent's old name).
 */
void
fs_op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
    mode_t mode)
{
	struct fs *fs = fuse_req_userdata(req);
	struct node *dir, *n = NULL;
	struct buf scratch;
	struct coord c;
	int rc;

	(void)mode;
	buf_init(&scratch);
	pthread_rwlock_rdlock(&fs->rename_lock);
	if ((rc = fs_child_to_create(fs, parent, name, &dir, &c,
	    &scratch)) < 0)
		goto out;
	if (c.kind != NODE_ROW && c.kind != NODE_FAMILY &&
	    c.kind != NODE_COLUMN) {
		rc = -EPERM;	/* tables are tabletctl's; no dirs in columns */
		goto out;
	}
	if (c.kind == NODE_FAMILY &&
	    (rc = fs_family_known(fs, c.table, c.family)) < 0)
		goto out;
	if ((n = node_obtain(fs, &c)) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	if ((rc = fs_exists(fs, n)) == 0) {
		rc = -EEXIST;
		goto out;
	}
	if (rc != -ENOENT || (rc = pending_add(fs, &c)) < 0)
		goto out;
	fs_reply_entry(fs, req, n);
out:
	pthread_rwlock_unlock(&fs->rename_lock);
	if (rc < 0)
		fuse_reply_err(req, fs_errno(rc));
	node_put(fs, n);
	node_put(fs, dir);
	buf_release(&scratch);
}

/* Under the rename lock, read, as mkdir: the directory removed is the
 * one the name resolved to. */
void
fs_op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs *fs = fuse_req_userdata(req);
	struct buf scratch;
	struct node *dir;
	struct coord c;
	int rc;

	buf_init(&scratch);
	pthread_rwlock_rdlock(&fs->rename_lock);
	if ((rc = fs_child_at(fs, parent, name, false, &dir, &c,
	    &scratch)) < 0)
		goto out;
	if (c.kind == NODE_TABLE) {
		rc = -EPERM;
		goto out;
	}
	if (c.kind == NODE_RANGE || c.kind == NODE_QUERY) {
		rc = -EROFS;	/* a view, not a directory of its own */
		goto out;
	}
	if (c.kind != NODE_ROW && c.kind != NODE_FAMILY &&
	    c.kind != NODE_COLUMN) {
		rc = -ENOTDIR;
		goto out;
	}
	if (fs->read_only) {
		rc = -EROFS;
		goto out;
	}
	if ((rc = has_data(fs, &c)) == 0 || pending_has_child(fs, &c) ||
	    (c.kind == NODE_COLUMN && temp_in_column(fs, &c))) {
		rc = -ENOTEMPTY;
		goto out;
	}
	if (rc != BT_NOTFOUND)
		goto out;
	rc = pending_remove(fs, &c);
	if (rc == BT_NOTFOUND)
		rc = -ENOENT;
out:
	pthread_rwlock_unlock(&fs->rename_lock);
	fuse_reply_err(req, fs_errno(rc));
	node_put(fs, dir);
	buf_release(&scratch);
}

/*
 * Rename directory src to dst (fs_op_rename): within one row a column or
 * a family moves with every version, as one atomic row mutation
 * (bt_move_column()); a pending one moves in memory.  POSIX's rules for a
 * directory: dst must be empty (ENOTEMPTY), RENAME_NOREPLACE refuses one
 * that exists (EEXIST), onto itself nothing happens.  Another row, a
 * change of kind, and a move too large for one mutation are EXDEV, so
 * that mv copies and deletes.  0 or a negative errno.
 */
int
fs_rename_dir(struct fs *fs, const struct coord *src, const struct coord *dst,
    unsigned int flags)
{
	struct bt_write_options wo = { .sync = false };
	struct bt_column from, to;
	struct coord family;
	bool moved;
	int rc;

	if (src->kind == NODE_RANGE || dst->kind == NODE_RANGE ||
	    src->kind == NODE_QUERY || dst->kind == NODE_QUERY)
		return -EROFS;
	if (src->kind != dst->kind || !coord_is_dir(src->kind) ||
	    !coord_same_upto(src, dst, NODE_ROW))
		return -EXDEV;
	if ((rc = dir_exists(fs, src)) < 0 ||
	    coord_same_upto(src, dst, src->kind))
		return rc;
	if ((rc = fs_family_known(fs, dst->table, dst->family)) < 0)
		return rc;
	if ((flags & RENAME_NOREPLACE) && (rc = dir_exists(fs, dst)) != -ENOENT)
		return rc == 0 ? -EEXIST : rc;
	if (pending_has_child(fs, dst))
		return -ENOTEMPTY;
	from = (struct bt_column){ src->family, src->kind == NODE_COLUMN,
	    src->qualifier };
	to = (struct bt_column){ dst->family, dst->kind == NODE_COLUMN,
	    dst->qualifier };
	rc = bt_move_column(fs->store, src->table, src->row, &from, &to, &wo);
	moved = rc == 0;
	if (rc == -ENOENT && pending_has(fs, src))
		rc = 0;		/* nothing to move but the directory */
	else if (rc == -EFBIG)
		rc = -EXDEV;
	if (rc < 0)
		return rc;
	if (src->kind == NODE_COLUMN && strcmp(src->family, dst->family) != 0) {
		/* The family left behind stays until rmdir. */
		family = *src;
		family.kind = NODE_FAMILY;
		(void)pending_add(fs, &family);
	}
	temp_dir_moved(fs, src, dst);
	rc = node_tree_moved(fs, src, dst);
	if (moved) {
		pending_settled(fs, dst);
		rc = 0;		/* the data moved: the rename happened */
	}
	return rc;
}
