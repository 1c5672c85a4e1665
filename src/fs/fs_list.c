/*
 * fs_list.c - directory listings.  A table streams its rows from a scan,
 * resumed after the last row sent, so that ls of millions of rows runs in
 * bounded memory; the root, row, family and column directories are read
 * whole (fs_snapshot.c) when a listing starts (offset 0: a first read, or
 * rewinddir).
 *
 * The kernel lists directories without opening them where it can
 * (FUSE_CAP_NO_OPENDIR_SUPPORT: opendir answers ENOSYS), so a walk costs
 * two requests a directory, its READDIRPLUS and the empty READDIR that
 * ends it, instead of four.  A listing in progress is therefore found by
 * its directory and the offset it has reached, among the few the daemon
 * keeps (LISTINGS); a request that finds none starts afresh, skipping to
 * its offset.
 *
 * The kernel then caches every listing; fs_cache.c says when the daemon
 * drops one.  Where the kernel opens directories (it lacks that
 * capability), opendir keeps the cached listing under the same rules.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs/fs.h"
#include "util/names.h"
#include "util/alloc.h"

/*
 * Row keys a table's listing remembers by offset, so that a request at an
 * earlier offset (a seekdir back, or the kernel asking again for what a
 * reader could not take) resumes after that row rather than rescanning.
 * A reply built ahead holds at most half of them, so that the reply sent
 * before it is still there to go back into.
 */
#define DIR_HISTORY 2048
#define AHEAD_MAX (DIR_HISTORY / 2)
#define UNKNOWN_INO 0xffffffffu	/* d_ino for entries not yet looked up */
/* Listings in progress the daemon keeps (a reader that stops before the
 * end leaves one behind until it is the oldest). */
#define LISTINGS 64

/* A listing in progress. */
struct listing {
	struct mutex lock;
	struct node *dir;	/* a reference */
	fuse_ino_t ino;
	/* Under listings.lock: */
	unsigned users;		/* requests using it */
	uint64_t used;		/* listings.tick at its last request */
	off_t next;		/* the offset its next request comes at */
	bool kept;		/* in listings.slot */
	bool done;		/* read to its end: freed by its last user */
	bool whole;		/* began at offset 0 in this listing */
	struct dent *ents;	/* snapshot directories */
	size_t count;
	off_t pos;		/* table directories: offset last emitted */
	struct dir_version version;	/* when it began */
	struct timespec opened;	/* CLOCK_MONOTONIC, when it began */
	struct dir_row {
		struct buf key;
		off_t off;	/* -1: none */
	} *hist;		/* tables: the row at offset o at o % HISTORY */
	/*
	 * Table directories: the plain reply to the next READDIR, built
	 * ahead (table_fill_ahead).  l->pos is already past it; a request
	 * it does not answer puts the listing back at from.
	 */
	struct dir_ahead {
		char *buf;
		size_t cap;	/* bytes allocated at buf */
		size_t size;	/* the request size it answers */
		size_t used;
		off_t from;	/* the offset it continues from */
		bool ready;
		bool end;
	} ahead;
};

struct listings {
	struct mutex lock;
	struct listing *slot[LISTINGS];
	uint64_t tick;
};

/* .schema and .tablets are not listed (reachable by name, as latest is),
 * so that rm -r, tar and rsync of a table see its rows alone. */
static const char *const table_fixed[] = { ".", ".." };
#define TABLE_FIXED 2

int
fs_listings_new(struct fs *fs)
{
	struct listings *ls;
	int rc;

	if ((ls = bt_calloc(1, sizeof(*ls))) == NULL)
		return -ENOMEM;
	if ((rc = mutex_init(&ls->lock)) < 0) {
		bt_free(ls);
		return rc;
	}
	fs->listings = ls;
	return 0;
}

static void
listing_free(struct fs *fs, struct listing *l)
{
	fs_dents_free(l->ents, l->count);
	for (size_t i = 0; l->hist != NULL && i < DIR_HISTORY; i++)
		buf_release(&l->hist[i].key);
	bt_free(l->hist);
	bt_free(l->ahead.buf);
	node_put(fs, l->dir);
	mutex_destroy(&l->lock);
	bt_free(l);
}

void
fs_listings_free(struct fs *fs)
{
	struct listings *ls = fs->listings;

	if (ls == NULL)
		return;
	for (size_t i = 0; i < LISTINGS; i++) {
		if (ls->slot[i] != NULL) {
			assert(ls->slot[i]->users == 0);
			listing_free(fs, ls->slot[i]);
		}
	}
	mutex_destroy(&ls->lock);
	bt_free(ls);
	fs->listings = NULL;
}

/* A new listing of directory n (whose reference it takes), not yet
 * begun. */
static int
listing_new(struct node *n, struct listing **out)
{
	struct listing *l;
	int rc;

	if ((l = bt_calloc(1, sizeof(*l))) == NULL)
		return -ENOMEM;
	if (n->c.kind == NODE_TABLE) {
		if ((l->hist = bt_calloc(DIR_HISTORY,
		    sizeof(*l->hist))) == NULL) {
			rc = -ENOMEM;
			goto out_free;
		}
		for (size_t i = 0; i < DIR_HISTORY; i++) {
			buf_init(&l->hist[i].key);
			l->hist[i].off = -1;
		}
	}
	if ((rc = mutex_init(&l->lock)) < 0)
		goto out_free;
	l->dir = n;
	l->ino = n->ino;
	*out = l;
	return 0;
out_free:
	bt_free(l->hist);
	bt_free(l);
	return rc;
}

/* Where a listing that continues at off is among the kept ones, or
 * LISTINGS; caller holds ls->lock. */
static size_t
listing_find(struct listings *ls, fuse_ino_t ino, off_t off)
{
	mutex_assert_held(&ls->lock);
	for (size_t i = 0; off > 0 && i < LISTINGS; i++) {
		struct listing *l = ls->slot[i];

		if (l != NULL && l->ino == ino && !l->done && l->next == off)
			return i;
	}
	return LISTINGS;
}

/* Keep l, in a free slot or in place of the oldest listing no request
 * uses (returned, for the caller to free), or not at all when every
 * slot is in use; caller holds ls->lock. */
static struct listing *
listing_keep(struct listings *ls, struct listing *l)
{
	size_t oldest = LISTINGS;
	struct listing *old = NULL;

	mutex_assert_held(&ls->lock);
	for (size_t i = 0; i < LISTINGS; i++) {
		struct listing *c = ls->slot[i];

		if (c == NULL) {
			ls->slot[i] = l;
			l->kept = true;
			return NULL;
		}
		if (c->users == 0 && (oldest == LISTINGS ||
		    c->used < ls->slot[oldest]->used))
			oldest = i;
	}
	if (oldest < LISTINGS) {
		old = ls->slot[oldest];
		ls->slot[oldest] = l;
		l->kept = true;
	}
	return old;
}

/*
 * The listing of directory ino that a request at off continues, or a new
 * one (which begins there: at 0 every listing does).  Returned in use by
 * the caller until listing_give().  0, -ENOENT, -ENOTDIR or -ENOMEM.
 */
static int
listing_take(struct fs *fs, fuse_ino_t ino, off_t off, struct listing **out)
{
	struct listings *ls = fs->listings;
	struct listing *l, *old;
	struct node *n;
	size_t i;
	int rc;

	mutex_lock(&ls->lock);
	ls->tick++;
	if ((i = listing_find(ls, ino, off)) < LISTINGS) {
		l = ls->slot[i];
		l->users++;
		l->used = ls->tick;
		mutex_unlock(&ls->lock);
		*out = l;
		return 0;
	}
	mutex_unlock(&ls->lock);
	if ((n = node_get(fs, ino)) == NULL)
		return -ENOENT;
	if (!coord_is_dir(n->c.kind)) {
		node_put(fs, n);
		return -ENOTDIR;
	}
	if ((rc = listing_new(n, &l)) < 0) {
		node_put(fs, n);
		return rc;
	}
	l->whole = off == 0;
	l->next = off;
	l->users = 1;
	/* Before anything is read, so that a change meanwhile counts. */
	fs_dir_version_get(fs, &l->version);
	clock_gettime(CLOCK_MONOTONIC, &l->opened);
	mutex_lock(&ls->lock);
	l->used = ls->tick;
	old = listing_keep(ls, l);
	mutex_unlock(&ls->lock);
	if (old != NULL)
		listing_free(fs, old);
	*out = l;
	return 0;
}

/* Where l's next request is expected: at next. */
static void
listing_advance(struct fs *fs, struct listing *l, off_t next)
{
	mutex_lock(&fs->listings->lock);
	l->next = next;
	mutex_unlock(&fs->listings->lock);
}

/* The caller is done with l, and l with its directory when done. */
static void
listing_give(struct fs *fs, struct listing *l, bool done)
{
	struct listings *ls = fs->listings;
	bool last;

	mutex_lock(&ls->lock);
	assert(l->users > 0);
	if (done)
		l->done = true;
	last = --l->users == 0 && (l->done || !l->kept);
	if (last && l->kept) {
		for (size_t i = 0; i < LISTINGS; i++)
			if (ls->slot[i] == l)
				ls->slot[i] = NULL;
	}
	mutex_unlock(&ls->lock);
	if (last)
		listing_free(fs, l);
}

/*
 * Where the kernel can list without opening (fs_op_init), an
 * open is refused with ENOSYS, which tells it so; elsewhere an open
 * keeps the kernel's cached listing while it is fresh.
 */
void
fs_op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = fuse_req_userdata(req);
	struct dir_version v;
	struct timespec now;
	struct node *n;

	if (fs->no_opendir) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	if ((n = node_get(fs, ino)) == NULL) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (!coord_is_dir(n->c.kind)) {
		node_put(fs, n);
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	fs_dir_version_get(fs, &v);
	clock_gettime(CLOCK_MONOTONIC, &now);
	fi->cache_readdir = 1;
	fi->keep_cache = fs_listing_fresh(fs, n, &v, &now);
	node_put(fs, n);
	fi->fh = 0;
	fuse_reply_open(req, fi);
}

void
fs_op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, 0);
}

/*
 * Add one entry at offset off to the reply buffer; 0 when it does not fit.
 * For readdirplus an entry other than "." and ".." is looked up (counted)
 * and carries the attributes st, or fs_stat's when st is NULL.  A plain
 * entry may be built without a request (req NULL): libfuse's
 * fuse_add_direntry() only lays out the protocol's fuse_dirent.
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
		size_t len;

		/* fuse_add_direntry() reads st_ino and the type bits of
		 * st_mode only (fuse_lowlevel.h), so nothing else is set. */
		plain.st_mode = c == NULL || coord_is_dir(c->kind) ?
		    S_IFDIR : S_IFREG;
		plain.st_ino = c != NULL ? node_peek(fs, c) : 0;
		if (plain.st_ino == 0)
			plain.st_ino = UNKNOWN_INO;
		/* It writes nothing when the entry does not fit. */
		len = fuse_add_direntry(req, p, rem, name, &plain, off);
		return len <= rem ? len : 0;
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
		fs_access_present(fs, c, &e.attr);
	} else if (fs_stat(fs, n, &e.attr) < 0) {
		fs_stat_dir(fs, n->ino, &e.attr);	/* gone meanwhile */
	}
	if (coord_is_dir(c->kind))
		fs_listing_check(fs, n);
	e.ino = n->ino;
	e.attr_timeout = fs->timeout;
	e.entry_timeout = fs->timeout;
	node_lookup_add(fs, n);
	node_put(fs, n);
	return fuse_add_direntry_plus(req, p, rem, name, &e, off);
}

/* The attributes of a listed directory whose newest version has time ts
 * (0: none, a pending directory: the mount's time). */
static void
dir_stat(struct fs *fs, int64_t ts, struct stat *st)
{
	fs_stat_dir(fs, 0, st);
	if (ts > 0)
		fs_stat_set_time(st, ts);
}

/* Stream a table's rows after the fixed names, merging pending rows: at
 * most max of them, skipping the first skip entries of the listing. */
static int
table_fill(struct fs *fs, fuse_req_t req, struct listing *l, bool plus,
    char *p, size_t size, off_t skip, size_t max, size_t *used, bool *end)
{
	/* A listing reads every block of the table once: kept in the block
	 * cache, they would push out what lookups use. */
	struct bt_scan_options so = { .start_exclusive = true,
	    .read = { .cells_per_column = 1, .keys_only = true },
	    .no_cache_fill = true };
	struct buf *pnames = NULL, name;
	struct slice key;
	size_t pcount = 0, pi = 0, len, added = 0;
	struct bt_scan *scan = NULL;
	const struct bt_row *row = NULL;	/* lent by scan */
	bool scan_done = false, full = false;
	struct coord c;
	struct stat st;
	int rc;

	buf_init(&name);
	while (l->pos < TABLE_FIXED && !full) {
		if (l->pos + 1 > skip) {
			len = dir_add(fs, req, plus, p + *used, size - *used,
			    table_fixed[l->pos], NULL, NULL, l->pos + 1);
			if (len == 0) {
				full = true;
				break;
			}
			*used += len;
		}
		l->pos++;
	}
	if (full)
		goto out;
	if (l->pos > TABLE_FIXED) {
		const struct buf *last = &l->hist[l->pos % DIR_HISTORY].key;

		so.start.data = last->p;
		so.start.size = last->n;
	}
	if ((rc = pending_children(fs, &l->dir->c, &pnames, &pcount)) < 0)
		goto out_rc;
	while (pi < pcount && so.start.size > 0 && slice_compare(
	    buf_slice(&pnames[pi]), slice_make(so.start.data,
	    so.start.size)) <= 0)
		pi++;
	if ((rc = bt_scan_open(fs->store, l->dir->c.table, &so,
	    &scan)) < 0)
		goto out_rc;
	while (added < max) {
		size_t slot;
		int cmp;

		if (row == NULL && !scan_done) {
			rc = bt_scan_next_borrowed(scan, &row);
			if (rc == BT_DONE)
				scan_done = true;
			else if (rc < 0)
				goto out_rc;
		}
		if (row == NULL && pi == pcount) {
			*end = true;
			break;
		}
		if (row == NULL)
			cmp = 1;
		else if (pi == pcount)
			cmp = -1;
		else
			cmp = slice_compare(slice_make(row->key.data,
			    row->key.size), buf_slice(&pnames[pi]));
		/* Borrowed from the scan or pnames, until the next row. */
		key = cmp <= 0 ? slice_make(row->key.data, row->key.size) :
		    buf_slice(&pnames[pi]);
		buf_clear(&name);
		if ((rc = names_component(key, &name)) < 0 ||
		    (rc = fs_name_terminate(&name)) < 0)
			goto out_rc;
		if (l->pos + 1 > skip) {
			c = l->dir->c;
			c.kind = NODE_ROW;
			c.row.data = key.p;
			c.row.size = key.n;
			dir_stat(fs, cmp <= 0 ? fs_cells_newest(row->cells,
			    row->cell_count) : 0, &st);
			len = dir_add(fs, req, plus, p + *used, size - *used,
			    (char *)name.p, &c, &st, l->pos + 1);
			if (len == 0)
				break;
			*used += len;
			added++;
		}
		slot = (size_t)(++l->pos % DIR_HISTORY);
		l->hist[slot].off = -1;
		if ((rc = buf_set(&l->hist[slot].key, key.p, key.n)) < 0)
			goto out_rc;
		l->hist[slot].off = l->pos;
		if (cmp <= 0)
			row = NULL;
		if (cmp >= 0)
			pi++;
	}
out:
	rc = 0;
out_rc:
	bt_scan_close(scan);
	pending_names_free(pnames, pcount);
	buf_release(&name);
	return rc;
}

/*
 * Where a table's listing continues for a request at off: after a row
 * it remembers that offset of, or else from the start, skipping the
 * first off entries (the returned count).
 */
static off_t
table_seek(struct listing *l, off_t off)
{
	if (off > TABLE_FIXED && l->hist[off % DIR_HISTORY].off == off) {
		l->pos = off;
		return 0;
	}
	if (off == l->pos && off <= TABLE_FIXED)
		return 0;
	/* Offsets are counted afresh from here. */
	for (size_t i = 0; i < DIR_HISTORY; i++)
		l->hist[i].off = -1;
	l->pos = 0;
	return off;
}

/* Forget the reply built ahead: the listing is back where it started
 * (whose row the history still holds, the reply being at most half of
 * it). */
static void
table_ahead_drop(struct listing *l)
{
	l->ahead.ready = false;
	l->pos = l->ahead.from;
}

/*
 * Build the plain reply to the next READDIR of a table, of the size of
 * the one just answered and at the offset it ended at, while the kernel
 * and the reader take in that one: a listing then waits for the scan
 * once per reply less.  Only plain entries are built ahead, since a
 * readdirplus entry is a lookup the kernel must learn of; a request the
 * reply does not answer drops it (table_ahead_drop).  On an error
 * nothing is kept, and the request meets the error itself.
 */
static void
table_fill_ahead(struct fs *fs, struct listing *l, size_t size)
{
	struct dir_ahead *a = &l->ahead;
	char *p;
	int rc;

	if (a->cap < size) {
		if ((p = bt_realloc(a->buf, size)) == NULL)
			return;
		a->buf = p;
		a->cap = size;
	}
	a->from = l->pos;
	a->size = size;
	a->used = 0;
	a->end = false;
	a->ready = true;
	rc = table_fill(fs, NULL, l, false, a->buf, size, 0, AHEAD_MAX,
	    &a->used, &a->end);
	if (rc < 0 || (a->used == 0 && !a->end))
		table_ahead_drop(l);
}

static void
do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
    bool plus)
{
	struct fs *fs = fuse_req_userdata(req);
	struct node *dir = NULL;
	struct listing *l;
	struct dir_ahead *a;
	bool table, locked;
	size_t used = 0, len, i;
	char *p = NULL, *reply = NULL;
	struct stat st;
	bool end = false;
	int rc;

	/*
	 * A row, family, column or time range is listed with no rename
	 * between finding it and reading it, and its entries are named where
	 * it is now (a listing begun before a rename continues after it).
	 * No rename moves the others (a table's listing streams).
	 */
	pthread_rwlock_rdlock(&fs->rename_lock);
	locked = true;
	if ((rc = listing_take(fs, ino, off, &l)) < 0) {
		pthread_rwlock_unlock(&fs->rename_lock);
		fuse_reply_err(req, fs_errno(rc));
		return;
	}
	table = l->dir->c.kind == NODE_TABLE;
	if (l->dir->c.kind != NODE_ROW && l->dir->c.kind != NODE_FAMILY &&
	    l->dir->c.kind != NODE_COLUMN && l->dir->c.kind != NODE_RANGE) {
		pthread_rwlock_unlock(&fs->rename_lock);
		locked = false;
	}
	dir = node_follow(fs, l->dir);
	/* A query's rows tell of every family it does not filter out. */
	if (dir->c.kind == NODE_QUERY &&
	    (rc = fs_access_query(fs, req, dir->c.table)) < 0) {
		if (locked)
			pthread_rwlock_unlock(&fs->rename_lock);
		node_put(fs, dir);
		listing_give(fs, l, true);
		fuse_reply_err(req, fs_errno(rc));
		return;
	}
	a = &l->ahead;
	mutex_lock(&l->lock);
	if (table && a->ready && !plus && off == a->from && size == a->size) {
		a->ready = false;
		reply = a->buf;
		used = a->used;
		end = a->end;
		goto out;
	}
	if ((p = bt_malloc(size)) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	reply = p;
	if (table) {
		/* Continue, go back within the history, or rescan. */
		if (a->ready)
			table_ahead_drop(l);
		rc = table_fill(fs, req, l, plus, p, size,
		    table_seek(l, off), SIZE_MAX, &used, &end);
		goto out;
	}
	if (l->ents == NULL &&
	    (rc = fs_dir_snapshot(fs, dir, &l->ents, &l->count)) < 0)
		goto out;
	end = (size_t)off >= l->count;
	for (i = (size_t)off; i < l->count; i++) {
		struct dent *d = &l->ents[i];
		struct coord c = dir->c;

		c.kind = d->kind;
		switch (d->kind) {
		case NODE_TABLE:
			c.table = d->name;
			break;
		case NODE_FAMILY:
			c.family = d->name;
			dir_stat(fs, d->ts, &st);
			break;
		case NODE_COLUMN:
			c.qualifier.data = d->raw.p;
			c.qualifier.size = d->raw.n;
			dir_stat(fs, d->ts, &st);
			break;
		case NODE_QUERY_ROW:
			c.row.data = d->raw.p;
			c.row.size = d->raw.n;
			break;
		case NODE_VERSION:
		case NODE_RANGE_VERSION:
			c.ts = d->ts;
			fs_stat_file(fs, 0, d->kind == NODE_VERSION ? 0644 :
			    0444, d->size, d->ts, &st);
			break;
		case NODE_TEMP:
			c.name = d->name;
			fs_stat_file(fs, 0, d->mode, d->size, 0, &st);
			st.st_mtim = st.st_atim = st.st_ctim = d->mtime;
			break;
		default:
			break;
		}
		len = dir_add(fs, req, plus, p + used, size - used, d->name,
		    i < 2 ? NULL : &c, d->kind == NODE_VERSION ||
		    d->kind == NODE_RANGE_VERSION ||
		    d->kind == NODE_TEMP || d->kind == NODE_FAMILY ||
		    d->kind == NODE_COLUMN ? &st : NULL, (off_t)i + 1);
		if (len == 0)
			break;
		used += len;
	}
	listing_advance(fs, l, (off_t)i);
out:
	if (table && rc == 0)
		listing_advance(fs, l, a->ready ? a->from : l->pos);
	/* An empty reply is the end the kernel's cache waits for. */
	if (rc == 0 && end && used == 0)
		if (l->whole)
			fs_listing_done(fs, dir, &l->version, &l->opened);
	if (locked)
		pthread_rwlock_unlock(&fs->rename_lock);
	if (rc < 0 && used == 0)
		fuse_reply_err(req, fs_errno(rc));
	else
		fuse_reply_buf(req, reply, used);
	/* Under the lock, so that the next request waits for it. */
	if (table && rc == 0 && used > 0 && !end) {
		table_fill_ahead(fs, l, size);	/* from l->next */
	}
	mutex_unlock(&l->lock);
	bt_free(p);
	/* The kernel's readdir cache would serve a query's rows to callers
	 * the daemon has not checked (fs_access.c): it keeps none. */
	if (dir->c.kind == NODE_QUERY)
		fuse_lowlevel_notify_inval_inode(fs->se, dir->ino, 0, 0);
	node_put(fs, dir);
	listing_give(fs, l, rc < 0 || (end && used == 0));
}

void
fs_op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
    struct fuse_file_info *fi)
{
	(void)fi;	/* no handle: a listing is found by ino and off */
	do_readdir(req, ino, size, off, false);
}

void
fs_op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
    struct fuse_file_info *fi)
{
	(void)fi;
	do_readdir(req, ino, size, off, true);
}

