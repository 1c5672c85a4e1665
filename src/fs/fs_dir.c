/*
 * fs_dir.c - names, attributes and directories: lookup, getattr, the
 * listings (tables stream from a scan; other directories are read once per
 * opendir), mkdir and rmdir.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs/fs.h"
#include "fs/names.h"
#include "util/alloc.h"

#define DIR_HISTORY 512		/* row keys remembered for seekdir back */
#define UNKNOWN_INO 0xffffffffu	/* d_ino for entries not yet looked up */

/* One entry of a directory read at opendir. */
struct dent {
	char *name;
	enum node_kind kind;
	int64_t ts;
	uint64_t size;
	struct buf raw;		/* the row, family or qualifier bytes */
};

struct dirh {
	pthread_mutex_t lock;
	struct node *dir;
	struct dent *ents;	/* snapshot directories */
	size_t count;
	off_t pos;		/* table directories: offset last emitted */
	struct buf hist[DIR_HISTORY];	/* row at offset o, at o % HISTORY */
};

static void dirh_free(struct fs *fs, struct dirh *dh);

static const char *const table_fixed[] = { ".", "..", ".schema" };
#define TABLE_FIXED 3

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

/*
 * The coordinate of name inside parent.  Bytes decoded from the name go
 * to scratch, which c then borrows.  -ENOENT for a name that cannot exist,
 * -EINVAL instead when creating, -ENOTDIR under a file.
 */
int
fs_child(struct fs *fs, const struct node *parent, const char *name,
    bool creating, struct coord *c, struct buf *scratch)
{
	int bad = creating ? -EINVAL : -ENOENT;

	(void)fs;
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
		if (strcmp(name, ".schema") == 0) {
			c->kind = NODE_SCHEMA;
			return 0;
		}
		if (names_decode(name, strlen(name), scratch) < 0 ||
		    scratch->n == 0)
			return bad;
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
		if (names_decode(name, strlen(name), scratch) < 0)
			return bad;
		c->kind = NODE_COLUMN;
		c->qualifier.data = scratch->p;
		c->qualifier.size = scratch->n;
		return 0;
	case NODE_COLUMN:
		if (strcmp(name, "latest") == 0)
			c->kind = NODE_LATEST;
		else if (strcmp(name, "increment") == 0)
			c->kind = NODE_INCREMENT;
		else if (name[0] == '@' && ts_parse(name + 1, &c->ts) == 0)
			c->kind = NODE_ASOF;
		else if (ts_parse(name, &c->ts) == 0)
			c->kind = NODE_VERSION;
		else
			return bad;
		return 0;
	default:
		return -ENOTDIR;
	}
}

/* The read filter for everything under c (a row needs none). */
static void
column_filter(const struct coord *c, struct bt_column *col,
    struct bt_read_options *ro)
{
	memset(col, 0, sizeof(*col));
	if (c->kind == NODE_ROW)
		return;
	col->family = c->family;
	if (c->kind != NODE_FAMILY) {
		col->has_qualifier = true;
		col->qualifier = c->qualifier;
	}
	ro->columns = col;
	ro->column_count = 1;
}

/* Whether row, family or column c holds a live cell: 0, BT_NOTFOUND or an
 * error. */
static int
has_data(struct fs *fs, const struct coord *c)
{
	struct bt_read_options ro = { .cells_per_column = 1,
	    .keys_only = true };
	struct bt_column col;
	struct bt_row *row;
	int rc;

	column_filter(c, &col, &ro);
	rc = bt_read_row(fs->store, c->table, c->row, &ro, &row);
	if (rc == 0)
		bt_row_free(row);
	return rc;
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

	column_filter(c, &col, &ro);
	if (c->kind == NODE_VERSION || c->kind == NODE_ASOF) {
		ro.has_max_ts = true;
		ro.max_ts = c->ts;
	}
	if ((rc = bt_read_row(fs->store, c->table, c->row, &ro, &row)) != 0)
		return rc;
	if (row->cell_count == 0 || (c->kind == NODE_VERSION &&
	    row->cells[0].ts != c->ts)) {
		bt_row_free(row);
		return BT_NOTFOUND;
	}
	*rowp = row;
	*cellp = &row->cells[0];
	return 0;
}

/* 0 if family is in table's schema, -ENOENT if not, or an error. */
int
fs_family_known(struct fs *fs, const char *table, const char *family)
{
	size_t n = strlen(family);
	char *text, *line;
	int rc;

	if ((rc = bt_table_describe(fs->store, table, &text)) < 0)
		return rc;
	rc = -ENOENT;
	for (line = text; line != NULL && *line != '\0'; ) {
		if (strncmp(line, family, n) == 0 &&
		    (line[n] == ' ' || line[n] == '\n' || line[n] == '\0')) {
			rc = 0;
			break;
		}
		if ((line = strchr(line, '\n')) != NULL)
			line++;
	}
	free(text);
	return rc;
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
		if ((rc = bt_table_describe(fs->store, n->c.table,
		    &text)) == 0)
			free(text);
		return rc;
	case NODE_ROW:
	case NODE_FAMILY:
	case NODE_COLUMN:
		if (pending_has(fs, &n->c))
			return 0;
		rc = has_data(fs, &n->c);
		return rc == BT_NOTFOUND ? -ENOENT : rc;
	case NODE_VERSION:
	case NODE_LATEST:
	case NODE_ASOF:
		if ((rc = fs_read_cell(fs, &n->c, true, &row, &cell)) == 0) {
			bt_row_free(row);
			return 0;
		}
		if (rc == BT_NOTFOUND && n->c.kind != NODE_ASOF &&
		    node_writers(fs, n) > 0)
			return 0;
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

static void
stat_file(struct fs *fs, fuse_ino_t ino, mode_t mode, uint64_t size,
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
	st->st_mtim.tv_sec = ts / 1000000;
	st->st_mtim.tv_nsec = (long)(ts % 1000000) * 1000;
	st->st_atim = st->st_ctim = st->st_mtim;
}

/* The attributes of n; -ENOENT when a file no longer exists. */
int
fs_stat(struct fs *fs, struct node *n, struct stat *st)
{
	int64_t started = (int64_t)fs->started.tv_sec * 1000000;
	const struct bt_cell *cell;
	struct bt_row *row;
	struct buf text;
	char *schema;
	int rc;

	switch (n->c.kind) {
	case NODE_STATUS:
		buf_init(&text);
		if ((rc = fs_status_text(fs, &text)) == 0)
			stat_file(fs, n->ino, 0444, text.n, started, st);
		buf_release(&text);
		return rc;
	case NODE_SCHEMA:
		if ((rc = bt_table_describe(fs->store, n->c.table,
		    &schema)) < 0)
			return rc;
		stat_file(fs, n->ino, 0444, strlen(schema), started, st);
		free(schema);
		return 0;
	case NODE_VERSION:
	case NODE_LATEST:
	case NODE_ASOF:
		rc = fs_read_cell(fs, &n->c, true, &row, &cell);
		if (rc == 0) {
			stat_file(fs, n->ino, n->c.kind == NODE_ASOF ? 0444 :
			    0644, cell->value_size, cell->ts, st);
			bt_row_free(row);
			return 0;
		}
		if (rc == BT_NOTFOUND && n->c.kind != NODE_ASOF &&
		    node_writers(fs, n) > 0) {
			struct timespec now;

			clock_gettime(CLOCK_REALTIME, &now);
			stat_file(fs, n->ino, 0644, 0, (int64_t)now.tv_sec *
			    1000000 + now.tv_nsec / 1000, st);
			return 0;
		}
		return rc == BT_NOTFOUND ? -ENOENT : rc;
	case NODE_INCREMENT:
		stat_file(fs, n->ino, 0222, 0, started, st);
		return 0;
	default:
		fs_stat_dir(fs, n->ino, st);
		return 0;
	}
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
	e.ino = n->ino;
	e.attr_timeout = fs->timeout;
	e.entry_timeout = fs->timeout;
	node_lookup_add(fs, n);
	if (fuse_reply_entry(req, &e) != 0)
		node_forget(fs, n->ino, 1);
	return 0;
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
	if ((dir = node_get(fs, parent)) == NULL) {
		rc = -ENOENT;
		goto out;
	}
	if ((rc = fs_child(fs, dir, name, false, &c, &scratch)) < 0)
		goto out;
	if ((n = node_obtain(fs, &c)) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	if ((rc = fs_exists(fs, n)) < 0)
		goto out;
	fs_reply_entry(fs, req, n);
out:
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

	(void)fi;
	if ((n = node_get(fs, ino)) == NULL) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if ((rc = fs_stat(fs, n, &st)) < 0)
		fuse_reply_err(req, fs_errno(rc));
	else
		fuse_reply_attr(req, &st, fs->timeout);
	node_put(fs, n);
}

/* ---- Listings ---- */

static void
dents_free(struct dent *ents, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		free(ents[i].name);
		buf_release(&ents[i].raw);
	}
	free(ents);
}

static int
dent_add(struct dent **ents, size_t *count, size_t *cap, const char *name,
    enum node_kind kind, const void *raw, size_t rawn)
{
	struct dent *d;

	if (*count == *cap) {
		size_t nc = *cap ? *cap * 2 : 16;

		if ((d = realloc(*ents, nc * sizeof(*d))) == NULL)
			return -ENOMEM;
		*ents = d;
		*cap = nc;
	}
	d = &(*ents)[*count];
	memset(d, 0, sizeof(*d));
	buf_init(&d->raw);
	if ((d->name = strdup(name)) == NULL ||
	    (rawn > 0 && buf_set(&d->raw, raw, rawn) < 0)) {
		free(d->name);
		return -ENOMEM;
	}
	d->kind = kind;
	(*count)++;
	return 0;
}

/* Add raw (a row, family or qualifier) under its escaped name, unless the
 * previous entry had the same bytes or the name is too long to list. */
static int
dent_add_raw(struct dent **ents, size_t *count, size_t *cap,
    enum node_kind kind, const void *raw, size_t rawn, struct buf *name)
{
	struct dent *last = *count > 2 ? &(*ents)[*count - 1] : NULL;
	int rc;

	if (last != NULL && last->raw.n == rawn &&
	    (rawn == 0 || memcmp(last->raw.p, raw, rawn) == 0))
		return 0;
	buf_clear(name);
	if (kind == NODE_FAMILY)
		rc = buf_append(name, raw, rawn);
	else
		rc = names_encode(slice_make(raw, rawn), name);
	if (rc == 0)
		rc = buf_append(name, "", 1);
	if (rc < 0)
		return rc;
	if (name->n - 1 > NAMES_MAX_COMPONENT)
		return 0;
	return dent_add(ents, count, cap, (char *)name->p, kind, raw, rawn);
}

static int
raw_cmp(const void *a, const void *b)
{
	const struct dent *x = a, *y = b;
	size_t n = x->raw.n < y->raw.n ? x->raw.n : y->raw.n;
	int c = n ? memcmp(x->raw.p, y->raw.p, n) : 0;

	return c != 0 ? c : (x->raw.n > y->raw.n) - (x->raw.n < y->raw.n);
}

/* Read the entries of a root, row, family or column directory. */
static int
dir_snapshot(struct fs *fs, struct node *dir, struct dent **entsp,
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

	column_filter(&dir->c, &col, &ro);
	if (dir->c.kind != NODE_COLUMN)
		ro.cells_per_column = 1;
	rc = bt_read_row(fs->store, dir->c.table, dir->c.row, &ro, &row);
	if (rc == BT_NOTFOUND)
		rc = 0;
	if (rc < 0)
		goto out;
	if ((rc = pending_children(fs, &dir->c, &pnames, &pcount)) < 0)
		goto out;
	for (size_t i = 0; row != NULL && i < row->cell_count && rc == 0;
	    i++) {
		const struct bt_cell *cell = &row->cells[i];
		char ts[24];

		switch (dir->c.kind) {
		case NODE_ROW:
			rc = dent_add_raw(&ents, &count, &cap, NODE_FAMILY,
			    cell->family, strlen(cell->family), &name);
			break;
		case NODE_FAMILY:
			rc = dent_add_raw(&ents, &count, &cap, NODE_COLUMN,
			    cell->qualifier.data, cell->qualifier.size,
			    &name);
			break;
		default:
			snprintf(ts, sizeof(ts), "%lld",
			    (long long)cell->ts);
			if ((rc = dent_add(&ents, &count, &cap, ts,
			    NODE_VERSION, NULL, 0)) == 0) {
				ents[count - 1].ts = cell->ts;
				ents[count - 1].size = cell->value_size;
			}
			break;
		}
	}
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
				    pnames[i].n, &name);
		}
		if (rc == 0)
			qsort(ents + 2, count - 2, sizeof(*ents), raw_cmp);
	}
out:
	bt_row_free(row);
	pending_names_free(pnames, pcount);
	buf_release(&name);
	if (rc < 0) {
		dents_free(ents, count);
		return rc;
	}
	*entsp = ents;
	*countp = count;
	return 0;
}

void
fs_op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = fuse_req_userdata(req);
	struct dirh *dh;
	struct node *n;
	int rc;

	if ((n = node_get(fs, ino)) == NULL) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (!coord_is_dir(n->c.kind)) {
		rc = -ENOTDIR;
		goto out_put;
	}
	if ((dh = calloc(1, sizeof(*dh))) == NULL) {
		rc = -ENOMEM;
		goto out_put;
	}
	pthread_mutex_init(&dh->lock, NULL);
	for (size_t i = 0; i < DIR_HISTORY; i++)
		buf_init(&dh->hist[i]);
	dh->dir = n;
	if (n->c.kind != NODE_TABLE && (rc = dir_snapshot(fs, n, &dh->ents,
	    &dh->count)) < 0)
		goto out_free;
	fi->fh = (uintptr_t)dh;
	if (fuse_reply_open(req, fi) != 0)
		dirh_free(fs, dh);
	return;
out_free:
	pthread_mutex_destroy(&dh->lock);
	free(dh);
out_put:
	node_put(fs, n);
	fuse_reply_err(req, fs_errno(rc));
}

static void
dirh_free(struct fs *fs, struct dirh *dh)
{
	dents_free(dh->ents, dh->count);
	for (size_t i = 0; i < DIR_HISTORY; i++)
		buf_release(&dh->hist[i]);
	node_put(fs, dh->dir);
	pthread_mutex_destroy(&dh->lock);
	free(dh);
}

void
fs_op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	dirh_free(fuse_req_userdata(req), (struct dirh *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

/*
 * Add one entry at offset off to the reply buffer; 0 when it does not fit.
 * For readdirplus an entry other than "." and ".." is looked up (counted)
 * and carries the attributes st, or fs_stat's when st is NULL.
 */
static size_t
dir_add(struct fs *fs, fuse_req_t req, bool plus, char *p, size_t rem,
    const char *name, const struct coord *c, const struct stat *st,
    off_t off)
{
	struct fuse_entry_param e;
	struct node *n;
	struct stat plain;

	if (!plus) {
		if (fuse_add_direntry(req, NULL, 0, name, NULL, 0) > rem)
			return 0;
		memset(&plain, 0, sizeof(plain));
		plain.st_mode = coord_is_dir(c != NULL ? c->kind :
		    NODE_ROOT) ? S_IFDIR : S_IFREG;
		plain.st_ino = c != NULL ? node_peek(fs, c) : 0;
		if (plain.st_ino == 0)
			plain.st_ino = UNKNOWN_INO;
		return fuse_add_direntry(req, p, rem, name, &plain, off);
	}
	if (fuse_add_direntry_plus(req, NULL, 0, name, NULL, 0) > rem)
		return 0;
	memset(&e, 0, sizeof(e));
	if (c == NULL) {
		e.attr.st_mode = S_IFDIR;
		e.attr.st_ino = UNKNOWN_INO;
		return fuse_add_direntry_plus(req, p, rem, name, &e, off);
	}
	if ((n = node_obtain(fs, c)) == NULL)
		return 0;
	if (st != NULL) {
		e.attr = *st;
		e.attr.st_ino = n->ino;
	} else if (fs_stat(fs, n, &e.attr) < 0) {
		fs_stat_dir(fs, n->ino, &e.attr);	/* gone meanwhile */
	}
	e.ino = n->ino;
	e.attr_timeout = fs->timeout;
	e.entry_timeout = fs->timeout;
	node_lookup_add(fs, n);
	node_put(fs, n);
	return fuse_add_direntry_plus(req, p, rem, name, &e, off);
}

/* Stream a table's rows after the fixed names, merging pending rows. */
static int
table_fill(struct fs *fs, fuse_req_t req, struct dirh *dh, bool plus,
    char *p, size_t size, off_t skip, size_t *used)
{
	struct bt_scan_options so = { .start_exclusive = true,
	    .read = { .cells_per_column = 1, .keys_only = true } };
	struct buf *pnames = NULL, name, key;
	size_t pcount = 0, pi = 0, len;
	struct bt_scan *scan = NULL;
	struct bt_row *row = NULL;
	bool scan_done = false, full = false;
	struct coord c;
	struct stat st;
	int rc;

	buf_init(&name);
	buf_init(&key);
	while (dh->pos < TABLE_FIXED && !full) {
		if (dh->pos + 1 > skip) {
			c = dh->dir->c;
			c.kind = NODE_SCHEMA;
			len = dir_add(fs, req, plus, p + *used, size - *used,
			    table_fixed[dh->pos], dh->pos == 2 ? &c : NULL,
			    NULL, dh->pos + 1);
			if (len == 0) {
				full = true;
				break;
			}
			*used += len;
		}
		dh->pos++;
	}
	if (full)
		goto out;
	if (dh->pos > TABLE_FIXED) {
		const struct buf *last = &dh->hist[dh->pos % DIR_HISTORY];

		so.start.data = last->p;
		so.start.size = last->n;
	}
	if ((rc = pending_children(fs, &dh->dir->c, &pnames, &pcount)) < 0)
		goto out_rc;
	while (pi < pcount && so.start.size > 0 && slice_compare(
	    buf_slice(&pnames[pi]), slice_make(so.start.data,
	    so.start.size)) <= 0)
		pi++;
	if ((rc = bt_scan_open(fs->store, dh->dir->c.table, &so,
	    &scan)) < 0)
		goto out_rc;
	fs_stat_dir(fs, 0, &st);
	for (;;) {
		int cmp;

		if (row == NULL && !scan_done) {
			rc = bt_scan_next(scan, &row);
			if (rc == BT_DONE)
				scan_done = true;
			else if (rc < 0)
				goto out_rc;
		}
		if (row == NULL && pi == pcount)
			break;
		if (row == NULL)
			cmp = 1;
		else if (pi == pcount)
			cmp = -1;
		else
			cmp = slice_compare(slice_make(row->key.data,
			    row->key.size), buf_slice(&pnames[pi]));
		if ((rc = buf_set(&key, cmp <= 0 ? row->key.data :
		    pnames[pi].p, cmp <= 0 ? row->key.size :
		    pnames[pi].n)) < 0)
			goto out_rc;
		buf_clear(&name);
		if ((rc = names_encode(buf_slice(&key), &name)) < 0 ||
		    (rc = buf_append(&name, "", 1)) < 0)
			goto out_rc;
		if (name.n - 1 <= NAMES_MAX_COMPONENT && dh->pos + 1 > skip) {
			c = dh->dir->c;
			c.kind = NODE_ROW;
			c.row.data = key.p;
			c.row.size = key.n;
			len = dir_add(fs, req, plus, p + *used, size - *used,
			    (char *)name.p, &c, &st, dh->pos + 1);
			if (len == 0)
				break;
			*used += len;
		}
		if (name.n - 1 <= NAMES_MAX_COMPONENT) {
			dh->pos++;
			if ((rc = buf_set(&dh->hist[dh->pos % DIR_HISTORY],
			    key.p, key.n)) < 0)
				goto out_rc;
		}
		if (cmp <= 0) {
			bt_row_free(row);
			row = NULL;
		}
		if (cmp >= 0)
			pi++;
	}
out:
	rc = 0;
out_rc:
	bt_row_free(row);
	bt_scan_close(scan);
	pending_names_free(pnames, pcount);
	buf_release(&name);
	buf_release(&key);
	return rc;
}

static void
do_readdir(fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi,
    bool plus)
{
	struct fs *fs = fuse_req_userdata(req);
	struct dirh *dh = (struct dirh *)(uintptr_t)fi->fh;
	size_t used = 0, len;
	off_t skip = 0;
	struct stat st;
	char *p;
	int rc = 0;

	if ((p = malloc(size)) == NULL) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	pthread_mutex_lock(&dh->lock);
	if (dh->dir->c.kind == NODE_TABLE) {
		/* Continue, go back within the history, or rescan. */
		if (off != dh->pos) {
			if (off > TABLE_FIXED && off < dh->pos &&
			    dh->pos - off < DIR_HISTORY) {
				dh->pos = off;
			} else {
				dh->pos = 0;
				skip = off;
			}
		}
		rc = table_fill(fs, req, dh, plus, p, size, skip, &used);
		goto out;
	}
	if (off == 0) {		/* rewinddir: read afresh */
		struct dent *ents;
		size_t count;

		if (dir_snapshot(fs, dh->dir, &ents, &count) == 0) {
			dents_free(dh->ents, dh->count);
			dh->ents = ents;
			dh->count = count;
		}
	}
	for (size_t i = (size_t)off; i < dh->count; i++) {
		struct dent *d = &dh->ents[i];
		struct coord c = dh->dir->c;

		c.kind = d->kind;
		switch (d->kind) {
		case NODE_TABLE:
			c.table = d->name;
			break;
		case NODE_FAMILY:
			c.family = d->name;
			break;
		case NODE_COLUMN:
			c.qualifier.data = d->raw.p;
			c.qualifier.size = d->raw.n;
			break;
		case NODE_VERSION:
			c.ts = d->ts;
			break;
		default:
			break;
		}
		if (d->kind == NODE_VERSION) {
			stat_file(fs, 0, 0644, d->size, d->ts, &st);
		}
		len = dir_add(fs, req, plus, p + used, size - used, d->name,
		    i < 2 ? NULL : &c, d->kind == NODE_VERSION ? &st : NULL,
		    (off_t)i + 1);
		if (len == 0)
			break;
		used += len;
	}
out:
	pthread_mutex_unlock(&dh->lock);
	if (rc < 0 && used == 0)
		fuse_reply_err(req, fs_errno(rc));
	else
		fuse_reply_buf(req, p, used);
	free(p);
}

void
fs_op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
    struct fuse_file_info *fi)
{
	(void)ino;
	do_readdir(req, size, off, fi, false);
}

void
fs_op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
    struct fuse_file_info *fi)
{
	(void)ino;
	do_readdir(req, size, off, fi, true);
}

/* ---- mkdir and rmdir ---- */

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
	if ((dir = node_get(fs, parent)) == NULL) {
		rc = -ENOENT;
		goto out;
	}
	if (fs->read_only) {
		rc = -EROFS;
		goto out;
	}
	if ((rc = fs_child(fs, dir, name, true, &c, &scratch)) < 0)
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
	if (rc < 0)
		fuse_reply_err(req, fs_errno(rc));
	node_put(fs, n);
	node_put(fs, dir);
	buf_release(&scratch);
}

void
fs_op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs *fs = fuse_req_userdata(req);
	struct buf scratch;
	struct node *dir;
	struct coord c;
	int rc;

	buf_init(&scratch);
	if ((dir = node_get(fs, parent)) == NULL) {
		rc = -ENOENT;
		goto out;
	}
	if ((rc = fs_child(fs, dir, name, false, &c, &scratch)) < 0)
		goto out;
	if (c.kind == NODE_TABLE) {
		rc = -EPERM;
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
	if ((rc = has_data(fs, &c)) == 0 || pending_has_child(fs, &c)) {
		rc = -ENOTEMPTY;
		goto out;
	}
	if (rc != BT_NOTFOUND)
		goto out;
	rc = pending_remove(fs, &c);
	if (rc == BT_NOTFOUND)
		rc = -ENOENT;
out:
	fuse_reply_err(req, fs_errno(rc));
	node_put(fs, dir);
	buf_release(&scratch);
}
