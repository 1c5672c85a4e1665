/*
 * fs_temp.c - what a column directory holds besides its versions, kept by
 * the daemon alone (docs: tabletfs(5), "Temporary files"):
 *
 *   - temporary files: any name in a column that is neither a timestamp
 *     nor a control name, as sed -i, rsync, editors and scripts make
 *     before they rename the file onto latest.  Held in memory, listed
 *     while they exist, never stored; renaming one onto latest or a
 *     timestamp commits it as one version (fs_file.c).
 *   - hidden latest names: unlinking latest, or renaming it away, deletes
 *     no version but hides the name until the column's next version, so
 *     that a tool that then creates it with O_EXCL (install, cp
 *     --remove-destination, tar -x) can.
 *
 * Both are bounded (TEMP_MAX_FILES files of at most max_cell bytes each,
 * TEMP_MAX_CELLS times max_cell in all, HIDDEN_MAX names) and both
 * vanish at unmount.
 * Lookups are linear: the sets are small and short-lived.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "fs/fs.h"
#include "util/alloc.h"

#define TEMP_MAX_FILES	1024
#define TEMP_MAX_CELLS	4	/* 256 MiB with the default max_cell */
#define HIDDEN_MAX	4096

struct temp {
	struct buf key;		/* coord_key() of its NODE_TEMP coord */
	struct buf column;	/* coord_key() of its column */
	char *name;
	struct buf qualifier;	/* of its column */
	struct buf data;
	mode_t mode;
	struct timespec mtime;
};

struct temp_set {
	struct mutex lock;
	struct temp **files;
	size_t count;
	uint64_t bytes;
	struct buf *hidden;	/* column keys, oldest first */
	size_t hidden_count;
};

int
temp_set_new(struct temp_set **out)
{
	struct temp_set *ts;

	if ((ts = bt_calloc(1, sizeof(*ts))) == NULL)
		return -ENOMEM;
	if ((ts->files = bt_calloc(TEMP_MAX_FILES, sizeof(*ts->files))) ==
	    NULL || (ts->hidden = bt_calloc(HIDDEN_MAX,
	    sizeof(*ts->hidden))) == NULL) {
		bt_free(ts->files);
		bt_free(ts);
		return -ENOMEM;
	}
	mutex_init(&ts->lock);
	*out = ts;
	return 0;
}

static void
temp_free(struct temp *t)
{
	buf_release(&t->key);
	buf_release(&t->column);
	buf_release(&t->qualifier);
	buf_release(&t->data);
	bt_free(t->name);
	bt_free(t);
}

void
temp_set_free(struct temp_set *ts)
{
	if (ts == NULL)
		return;
	for (size_t i = 0; i < ts->count; i++)
		temp_free(ts->files[i]);
	for (size_t i = 0; i < ts->hidden_count; i++)
		buf_release(&ts->hidden[i]);
	bt_free(ts->files);
	bt_free(ts->hidden);
	mutex_destroy(&ts->lock);
	bt_free(ts);
}

/* The key of c, and of its column when column is not NULL. */
static int
keys_of(const struct coord *c, struct buf *key, struct buf *column)
{
	struct coord col = *c;
	int rc;

	if (key != NULL && (rc = coord_key(c, key)) < 0)
		return rc;
	col.kind = NODE_COLUMN;
	return column != NULL ? coord_key(&col, column) : 0;
}

static bool
buf_same(const struct buf *a, const struct buf *b)
{
	return a->n == b->n && (a->n == 0 || memcmp(a->p, b->p, a->n) == 0);
}

/* The position of the temp with key, or -1; lock held. */
static ssize_t
temp_find(struct temp_set *ts, const struct buf *key)
{
	mutex_assert_held(&ts->lock);
	for (size_t i = 0; i < ts->count; i++)
		if (buf_same(&ts->files[i]->key, key))
			return (ssize_t)i;
	return -1;
}

static void
temp_drop(struct temp_set *ts, size_t i)
{
	mutex_assert_held(&ts->lock);
	assert(i < ts->count && ts->bytes >= ts->files[i]->data.n);
	ts->bytes -= ts->files[i]->data.n;
	temp_free(ts->files[i]);
	ts->files[i] = ts->files[--ts->count];
}

/* Listings that show temporary files must be read again. */
static void
listing_changed(struct fs *fs)
{
	mutex_lock(&fs->lock);
	fs->pending_gen++;
	mutex_unlock(&fs->lock);
}

static void
now_into(struct timespec *t)
{
	clock_gettime(CLOCK_REALTIME, t);
}

/*
 * Make temporary file c (kind NODE_TEMP) with mode, or open the one there:
 * -EEXIST when it exists and excl, emptied when trunc.  -ENOSPC when
 * TEMP_MAX_FILES are held.
 */
int
temp_create(struct fs *fs, const struct coord *c, mode_t mode, bool excl,
    bool trunc)
{
	struct temp_set *ts = fs->temps;
	struct temp *t = NULL;
	struct buf key;
	bool made = false;
	ssize_t i;
	int rc = 0;

	buf_init(&key);
	if ((rc = keys_of(c, &key, NULL)) < 0)
		goto out;
	mutex_lock(&ts->lock);
	if ((i = temp_find(ts, &key)) >= 0) {
		t = ts->files[i];
		if (excl) {
			rc = -EEXIST;
		} else if (trunc) {
			ts->bytes -= t->data.n;
			buf_clear(&t->data);
			now_into(&t->mtime);
		}
	} else if (ts->count == TEMP_MAX_FILES) {
		rc = -ENOSPC;
	} else if ((t = bt_calloc(1, sizeof(*t))) == NULL) {
		rc = -ENOMEM;
	} else {
		buf_init(&t->key);
		buf_init(&t->column);
		buf_init(&t->qualifier);
		buf_init(&t->data);
		t->mode = mode & 0644;
		now_into(&t->mtime);
		if ((t->name = bt_strdup(c->name)) == NULL ||
		    (rc = keys_of(c, &t->key, &t->column)) < 0 ||
		    (rc = buf_set(&t->qualifier, c->qualifier.data,
		    c->qualifier.size)) < 0) {
			rc = rc < 0 ? rc : -ENOMEM;
			temp_free(t);
		} else {
			ts->files[ts->count++] = t;
			made = true;
		}
	}
	mutex_unlock(&ts->lock);
	if (made)
		listing_changed(fs);
out:
	buf_release(&key);
	return rc;
}

/* Run fn on temp c under the set's lock: its result, or -ENOENT. */
static int
temp_with(struct fs *fs, const struct coord *c,
    int (*fn)(struct temp_set *ts, struct temp *t, void *arg), void *arg)
{
	struct temp_set *ts = fs->temps;
	struct buf key;
	ssize_t i;
	int rc;

	buf_init(&key);
	if ((rc = keys_of(c, &key, NULL)) < 0)
		goto out;
	mutex_lock(&ts->lock);
	i = temp_find(ts, &key);
	rc = i < 0 ? -ENOENT : fn(ts, ts->files[i], arg);
	mutex_unlock(&ts->lock);
out:
	buf_release(&key);
	return rc;
}

static int
attr_get(struct temp_set *ts, struct temp *t, void *arg)
{
	struct temp_attr *a = arg;

	(void)ts;
	a->size = t->data.n;
	a->mode = t->mode;
	a->mtime = t->mtime;
	return 0;
}

int
temp_attr(struct fs *fs, const struct coord *c, struct temp_attr *a)
{
	return temp_with(fs, c, attr_get, a);
}

struct read_arg {
	off_t off;
	size_t size;
	struct buf *out;
};

static int
read_do(struct temp_set *ts, struct temp *t, void *arg)
{
	struct read_arg *a = arg;
	size_t n = 0;

	(void)ts;
	if ((uint64_t)a->off < t->data.n)
		n = t->data.n - (size_t)a->off < a->size ?
		    t->data.n - (size_t)a->off : a->size;
	return buf_set(a->out, t->data.p + (n ? a->off : 0), n);
}

int
temp_read(struct fs *fs, const struct coord *c, off_t off, size_t size,
    struct buf *out)
{
	struct read_arg a = { off, size, out };

	return temp_with(fs, c, read_do, &a);
}

struct resize_arg {
	uint64_t size;
	uint64_t max;
};

/* Make t's data size bytes long (zeros past the old end). */
static int
resize_do(struct temp_set *ts, struct temp *t, void *arg)
{
	struct resize_arg *a = arg;
	size_t old = t->data.n;
	int rc;

	if (a->size > a->max)
		return -EFBIG;
	if (a->size > old) {
		if (ts->bytes + (a->size - old) > TEMP_MAX_CELLS * a->max)
			return -ENOSPC;
		if ((rc = buf_reserve(&t->data, (size_t)a->size - old)) < 0)
			return rc;
		memset(t->data.p + old, 0, (size_t)a->size - old);
	}
	ts->bytes = ts->bytes - old + a->size;
	t->data.n = (size_t)a->size;
	now_into(&t->mtime);
	return 0;
}

int
temp_truncate(struct fs *fs, const struct coord *c, uint64_t size)
{
	struct resize_arg a = { size, fs->max_cell };

	return temp_with(fs, c, resize_do, &a);
}

struct write_arg {
	const void *p;
	size_t size;
	off_t off;
	bool append;
	uint64_t max;
};

static int
write_do(struct temp_set *ts, struct temp *t, void *arg)
{
	struct write_arg *a = arg;
	uint64_t off = a->append ? t->data.n : (uint64_t)a->off;
	struct resize_arg r = { off + a->size, a->max };
	int rc;

	if (off > a->max || a->size > a->max - off)
		return -EFBIG;
	if (r.size > t->data.n && (rc = resize_do(ts, t, &r)) < 0)
		return rc;
	memcpy(t->data.p + off, a->p, a->size);
	now_into(&t->mtime);
	return 0;
}

int
temp_write(struct fs *fs, const struct coord *c, const void *p, size_t size,
    off_t off, bool append)
{
	struct write_arg a = { p, size, off, append, fs->max_cell };

	return temp_with(fs, c, write_do, &a);
}

struct set_arg {
	const mode_t *mode;
	const struct timespec *mtime;
};

static int
set_do(struct temp_set *ts, struct temp *t, void *arg)
{
	struct set_arg *a = arg;

	(void)ts;
	if (a->mode != NULL)
		t->mode = *a->mode & 0644;
	if (a->mtime != NULL)
		t->mtime = *a->mtime;
	return 0;
}

int
temp_set_attr(struct fs *fs, const struct coord *c, const mode_t *mode,
    const struct timespec *mtime)
{
	struct set_arg a = { mode, mtime };

	return temp_with(fs, c, set_do, &a);
}

static int
take_do(struct temp_set *ts, struct temp *t, void *arg)
{
	struct buf *data = arg;
	size_t i = 0;

	while (ts->files[i] != t)
		i++;
	if (data != NULL) {
		ts->bytes -= t->data.n;	/* temp_drop() counts what is left */
		buf_release(data);
		*data = t->data;
		buf_init(&t->data);
	}
	temp_drop(ts, i);
	return 0;
}

/* Remove temp c; its data moves to *data unless data is NULL. */
int
temp_take(struct fs *fs, const struct coord *c, struct buf *data)
{
	int rc;

	if ((rc = temp_with(fs, c, take_do, data)) == 0)
		listing_changed(fs);
	return rc;
}

/*
 * Make temp c hold a copy of value (created, or replaced): what renaming
 * latest onto a temporary name does, since latest is a view.
 */
int
temp_put(struct fs *fs, const struct coord *c, const void *value, size_t n)
{
	struct write_arg a = { value, n, 0, false, fs->max_cell };
	int rc;

	if ((rc = temp_create(fs, c, 0644, false, true)) < 0)
		return rc;
	if (n > 0 && (rc = temp_with(fs, c, write_do, &a)) < 0)
		(void)temp_take(fs, c, NULL);
	return rc;
}

/* Rename temp src to temp dst (replacing it unless noreplace: -EEXIST). */
int
temp_rename(struct fs *fs, const struct coord *src, const struct coord *dst,
    bool noreplace)
{
	struct temp_set *ts = fs->temps;
	struct buf skey, dkey, dcol;
	struct temp *t;
	char *name = NULL;
	ssize_t i, j;
	int rc;

	buf_init(&skey);
	buf_init(&dkey);
	buf_init(&dcol);
	if ((rc = keys_of(src, &skey, NULL)) < 0 ||
	    (rc = keys_of(dst, &dkey, &dcol)) < 0)
		goto out;
	if ((name = bt_strdup(dst->name)) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	mutex_lock(&ts->lock);
	i = temp_find(ts, &skey);
	j = temp_find(ts, &dkey);
	if (i < 0) {
		rc = -ENOENT;
	} else if (i == j) {
		rc = 0;
	} else if (j >= 0 && noreplace) {
		rc = -EEXIST;
	} else {
		if (j >= 0) {
			temp_drop(ts, (size_t)j);
			if ((size_t)i == ts->count)	/* moved into j */
				i = j;
		}
		t = ts->files[i];
		if ((rc = buf_set(&t->qualifier, dst->qualifier.data,
		    dst->qualifier.size)) == 0) {
			buf_release(&t->key);
			buf_release(&t->column);
			bt_free(t->name);
			t->key = dkey;
			t->column = dcol;
			t->name = name;
			buf_init(&dkey);
			buf_init(&dcol);
			name = NULL;
		}
	}
	mutex_unlock(&ts->lock);
	if (rc == 0)
		listing_changed(fs);
out:
	bt_free(name);
	buf_release(&skey);
	buf_release(&dkey);
	buf_release(&dcol);
	return rc;
}

/*
 * After a rename of directory src (a column or a family) to dst, its
 * temporary files follow it, as files do in a directory that is renamed.
 * Under memory pressure one may stay behind (its old column is gone:
 * it is no longer reachable, and goes at unmount).
 */
void
temp_dir_moved(struct fs *fs, const struct coord *src,
    const struct coord *dst)
{
	struct temp_set *ts = fs->temps;
	struct coord from = *src, to = *dst;
	struct buf key, col, nkey, ncol;
	bool moved = false;

	from.kind = to.kind = NODE_TEMP;
	buf_init(&key);
	buf_init(&col);
	buf_init(&nkey);
	buf_init(&ncol);
	mutex_lock(&ts->lock);
	for (size_t i = 0; i < ts->count; i++) {
		struct temp *t = ts->files[i];

		if (src->kind == NODE_FAMILY) {
			from.qualifier = to.qualifier = (struct bt_bytes){
			    t->qualifier.p, t->qualifier.n };
		}
		from.name = to.name = t->name;
		if (keys_of(&from, &key, &col) < 0 ||
		    !buf_same(&t->column, &col) ||
		    keys_of(&to, &nkey, &ncol) < 0)
			continue;
		buf_release(&t->key);
		buf_release(&t->column);
		t->key = nkey;
		t->column = ncol;
		buf_init(&nkey);
		buf_init(&ncol);
		if (src->kind == NODE_COLUMN)
			(void)buf_set(&t->qualifier, dst->qualifier.data,
			    dst->qualifier.size);
		moved = true;
	}
	mutex_unlock(&ts->lock);
	buf_release(&key);
	buf_release(&col);
	buf_release(&nkey);
	buf_release(&ncol);
	if (moved)
		listing_changed(fs);
}

/* The temporary files of column c: names and attributes in two arrays
 * freed with temp_names_free(). */
int
temp_list(struct fs *fs, const struct coord *c, char ***names,
    struct temp_attr **attrs, size_t *count)
{
	struct temp_set *ts = fs->temps;
	struct buf col;
	size_t n = 0;
	int rc;

	*names = NULL;
	*attrs = NULL;
	*count = 0;
	buf_init(&col);
	if ((rc = keys_of(c, NULL, &col)) < 0)
		goto out;
	mutex_lock(&ts->lock);
	for (size_t i = 0; i < ts->count; i++)
		n += buf_same(&ts->files[i]->column, &col);
	if (n > 0 && ((*names = bt_calloc(n, sizeof(**names))) == NULL ||
	    (*attrs = bt_calloc(n, sizeof(**attrs))) == NULL))
		rc = -ENOMEM;
	for (size_t i = 0; i < ts->count && rc == 0; i++) {
		struct temp *t = ts->files[i];

		if (!buf_same(&t->column, &col))
			continue;
		if (((*names)[*count] = bt_strdup(t->name)) == NULL) {
			rc = -ENOMEM;
			break;
		}
		(void)attr_get(ts, t, &(*attrs)[(*count)++]);
	}
	mutex_unlock(&ts->lock);
	if (rc < 0) {
		temp_names_free(*names, *attrs, *count);
		*names = NULL;
		*attrs = NULL;
		*count = 0;
	}
out:
	buf_release(&col);
	return rc;
}

void
temp_names_free(char **names, struct temp_attr *attrs, size_t count)
{
	for (size_t i = 0; names != NULL && i < count; i++)
		bt_free(names[i]);
	bt_free(names);
	bt_free(attrs);
}

/* Whether column c holds a temporary file. */
bool
temp_in_column(struct fs *fs, const struct coord *c)
{
	struct temp_set *ts = fs->temps;
	struct buf col;
	bool found = false;

	buf_init(&col);
	if (keys_of(c, NULL, &col) == 0) {
		mutex_lock(&ts->lock);
		for (size_t i = 0; i < ts->count && !found; i++)
			found = buf_same(&ts->files[i]->column, &col);
		mutex_unlock(&ts->lock);
	}
	buf_release(&col);
	return found;
}

/* The position of column key col among the hidden latest names, or -1;
 * lock held. */
static ssize_t
hidden_find(struct temp_set *ts, const struct buf *col)
{
	mutex_assert_held(&ts->lock);
	for (size_t i = 0; i < ts->hidden_count; i++)
		if (buf_same(&ts->hidden[i], col))
			return (ssize_t)i;
	return -1;
}

static void
hidden_drop(struct temp_set *ts, size_t i)
{
	buf_release(&ts->hidden[i]);
	memmove(&ts->hidden[i], &ts->hidden[i + 1],
	    (ts->hidden_count - i - 1) * sizeof(*ts->hidden));
	ts->hidden_count--;
}

/* Hide the latest name of c's column (the oldest hidden one shows again
 * when HIDDEN_MAX are). */
int
latest_hide(struct fs *fs, const struct coord *c)
{
	struct temp_set *ts = fs->temps;
	struct buf col;
	int rc;

	buf_init(&col);
	if ((rc = keys_of(c, NULL, &col)) < 0) {
		buf_release(&col);
		return rc;
	}
	mutex_lock(&ts->lock);
	if (hidden_find(ts, &col) < 0) {
		if (ts->hidden_count == HIDDEN_MAX)
			hidden_drop(ts, 0);
		ts->hidden[ts->hidden_count++] = col;
		buf_init(&col);
	}
	mutex_unlock(&ts->lock);
	buf_release(&col);
	return 0;
}

/* Whether the latest name of c's column is hidden; with show, it no
 * longer is (a version was written). */
static bool
latest_check(struct fs *fs, const struct coord *c, bool show)
{
	struct temp_set *ts = fs->temps;
	struct buf col;
	bool hidden = false;
	ssize_t i;

	mutex_lock(&ts->lock);
	hidden = ts->hidden_count > 0;
	mutex_unlock(&ts->lock);
	if (!hidden)		/* the usual case: no key to make */
		return false;
	hidden = false;
	buf_init(&col);
	if (keys_of(c, NULL, &col) == 0) {
		mutex_lock(&ts->lock);
		if ((i = hidden_find(ts, &col)) >= 0) {
			hidden = true;
			if (show)
				hidden_drop(ts, (size_t)i);
		}
		mutex_unlock(&ts->lock);
	}
	buf_release(&col);
	return hidden;
}

bool
latest_hidden(struct fs *fs, const struct coord *c)
{
	return latest_check(fs, c, false);
}

void
latest_show(struct fs *fs, const struct coord *c)
{
	(void)latest_check(fs, c, true);
}
