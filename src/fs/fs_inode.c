/*
 * fs_inode.c - the inode table, the pending directories and the one
 * mapping from API codes to errno.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fs/fs.h"
#include "util/alloc.h"
#include "util/buf_pool.h"
#include "util/hash.h"

#define INITIAL_BUCKETS 1024
/*
 * What fs->write_bufs keeps: a buffer for each of a few files written at
 * once, values of a few megabytes; a larger value's buffer is freed.
 */
#define WRITE_BUFS_KEPT 8
#define WRITE_BUFS_BYTES ((size_t)16 << 20)

#define PENDING_NONE SIZE_MAX	/* the end of a hash chain */
#define PENDING_SEED 0x7064
#define NODE_KEY_SEED 0x7462	/* hash64 seed of by_key */

/* A pending directory: an owned coordinate, in a chain of fs.pending_index
 * by the hash of its key. */
struct pending {
	struct coord c;
	struct buf key;
	uint64_t hash;
	size_t next;		/* the next position in its chain */
};

/* API codes to errno; negative errno values pass through. */
static const struct {
	int rc;
	int err;
} errno_table[] = {
	{ BT_NOTFOUND, ENOENT },
	{ BT_DONE, ENOENT },
	{ BT_ECORRUPT, EIO },
	{ BT_ECHECKSUM, EIO },
	{ BT_EFORMAT, EIO },
	{ BT_ETOOBIG, EFBIG },
	{ BT_ECLOSED, EIO },
};

int
fs_errno(int rc)
{
	for (size_t i = 0; i < sizeof(errno_table) / sizeof(errno_table[0]);
	    i++)
		if (errno_table[i].rc == rc)
			return errno_table[i].err;
	if (rc < 0 && rc > -4096)
		return -rc;
	return rc == 0 ? 0 : EIO;
}

bool
coord_is_dir(enum node_kind kind)
{
	return kind == NODE_ROOT || kind == NODE_TABLE || kind == NODE_ROW ||
	    kind == NODE_FAMILY || kind == NODE_COLUMN || kind == NODE_RANGE ||
	    kind == NODE_QUERY;
}

/* How many coordinates a kind uses: 0 none, 1 table, ... 5 timestamp. */
static int
coord_depth(enum node_kind kind)
{
	switch (kind) {
	case NODE_ROOT:
	case NODE_STATUS:
		return 0;
	case NODE_TABLE:
	case NODE_SCHEMA:
	case NODE_TABLETS:
	case NODE_QUERY:
		return 1;
	case NODE_ROW:
	case NODE_QUERY_ROW:
		return 2;
	case NODE_FAMILY:
		return 3;
	case NODE_COLUMN:
	case NODE_LATEST:
	case NODE_INCREMENT:
		return 4;
	case NODE_VERSION:
	case NODE_ASOF:
	case NODE_TEMP:
	case NODE_RANGE:
	case NODE_RANGE_VERSION:
		return 5;
	}
	return 0;
}

/* Append a length-prefixed field at *q; the room is reserved. */
static uint8_t *
key_field(uint8_t *q, const void *p, size_t n)
{
	uint32_t len = (uint32_t)n;

	memcpy(q, &len, sizeof(len));
	if (n > 0)
		memcpy(q + sizeof(len), p, n);
	return q + sizeof(len) + n;
}

/*
 * Serialise c into key: kind, then each used field length-prefixed.
 * Measured first and reserved once: listings ask this of every entry
 * they show (node_peek).
 */
int
coord_key(const struct coord *c, struct buf *key)
{
	int depth = coord_depth(c->kind);
	size_t tlen = depth >= 1 ? strlen(c->table) : 0;
	size_t flen = depth >= 3 ? strlen(c->family) : 0;
	size_t nlen = c->kind == NODE_TEMP ? strlen(c->name) : 0;
	bool query = c->kind == NODE_QUERY || c->kind == NODE_QUERY_ROW;
	size_t qlen = query ? strlen(c->query) : 0;
	bool range = c->kind == NODE_RANGE || c->kind == NODE_RANGE_VERSION;
	size_t n = 1;
	uint8_t *q;
	int rc;

	if (depth >= 1)
		n += sizeof(uint32_t) + tlen;
	if (depth >= 2)
		n += sizeof(uint32_t) + c->row.size;
	if (depth >= 3)
		n += sizeof(uint32_t) + flen;
	if (depth >= 4)
		n += sizeof(uint32_t) + c->qualifier.size;
	if (depth >= 5)
		n += c->kind == NODE_TEMP ? sizeof(uint32_t) + nlen :
		    sizeof(c->ts);
	if (range)
		n += sizeof(c->range_start) + sizeof(c->range_end);
	if (query)
		n += sizeof(uint32_t) + qlen;
	buf_clear(key);
	if ((rc = buf_reserve(key, n)) < 0)
		return rc;
	q = key->p;
	*q++ = (uint8_t)c->kind;
	if (depth >= 1)
		q = key_field(q, c->table, tlen);
	if (depth >= 2)
		q = key_field(q, c->row.data, c->row.size);
	if (depth >= 3)
		q = key_field(q, c->family, flen);
	if (depth >= 4)
		q = key_field(q, c->qualifier.data, c->qualifier.size);
	if (c->kind == NODE_TEMP) {
		q = key_field(q, c->name, nlen);
	} else if (depth >= 5) {
		memcpy(q, &c->ts, sizeof(c->ts));
		q += sizeof(c->ts);
	}
	if (range) {
		memcpy(q, &c->range_start, sizeof(c->range_start));
		q += sizeof(c->range_start);
		memcpy(q, &c->range_end, sizeof(c->range_end));
		q += sizeof(c->range_end);
	}
	if (query)
		q = key_field(q, c->query, qlen);
	key->n = (size_t)(q - key->p);
	return 0;
}

static void
coord_release(struct coord *c)
{
	bt_free((void *)c->table);
	bt_free((void *)c->row.data);
	bt_free((void *)c->family);
	bt_free((void *)c->qualifier.data);
	bt_free((void *)c->name);
	bt_free((void *)c->query);
	memset(c, 0, sizeof(*c));
}

/* Deep-copy the used fields of src into dst. */
static int
coord_copy(struct coord *dst, const struct coord *src)
{
	int depth = coord_depth(src->kind);

	memset(dst, 0, sizeof(*dst));
	dst->kind = src->kind;
	dst->ts = depth >= 5 ? src->ts : 0;
	dst->range_start = src->range_start;
	dst->range_end = src->range_end;
	if (depth >= 1 && (dst->table = bt_strdup(src->table)) == NULL)
		goto fail;
	if (depth >= 2) {
		dst->row.size = src->row.size;
		if ((dst->row.data = bt_malloc(src->row.size + 1)) == NULL)
			goto fail;
		if (src->row.size > 0)
			memcpy((void *)dst->row.data, src->row.data,
			    src->row.size);
	}
	if (depth >= 3 && (dst->family = bt_strdup(src->family)) == NULL)
		goto fail;
	if (depth >= 4) {
		dst->qualifier.size = src->qualifier.size;
		if ((dst->qualifier.data = bt_malloc(src->qualifier.size +
		    1)) == NULL)
			goto fail;
		if (src->qualifier.size > 0)
			memcpy((void *)dst->qualifier.data,
			    src->qualifier.data, src->qualifier.size);
	}
	if (src->kind == NODE_TEMP && (dst->name = bt_strdup(src->name)) ==
	    NULL)
		goto fail;
	if ((src->kind == NODE_QUERY || src->kind == NODE_QUERY_ROW) &&
	    (dst->query = bt_strdup(src->query)) == NULL)
		goto fail;
	return 0;
fail:
	coord_release(dst);
	return -ENOMEM;
}

/* The read filter for everything under c (a row needs none). */
void
fs_column_filter(const struct coord *c, struct bt_column *col,
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

int
fs_init(struct fs *fs)
{
	struct coord root = { .kind = NODE_ROOT };
	struct node *n;
	pthread_rwlockattr_t ra;
	int rc;

	if ((rc = mutex_init(&fs->lock)) < 0)
		return rc;
	pthread_rwlockattr_init(&ra);
	/* A rename waits for the commits in flight, not for every one
	 * that comes after it. */
	pthread_rwlockattr_setkind_np(&ra,
	    PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	rc = pthread_rwlock_init(&fs->rename_lock, &ra);
	pthread_rwlockattr_destroy(&ra);
	if (rc != 0) {
		mutex_destroy(&fs->lock);
		return -rc;
	}
	if ((rc = buf_pool_new(WRITE_BUFS_KEPT, WRITE_BUFS_BYTES,
	    &fs->write_bufs)) < 0)
		goto out_lock;
	fs->buckets = INITIAL_BUCKETS;
	fs->by_ino = bt_calloc(fs->buckets, sizeof(*fs->by_ino));
	fs->by_key = bt_calloc(fs->buckets, sizeof(*fs->by_key));
	if (fs->by_ino == NULL || fs->by_key == NULL) {
		rc = -ENOMEM;
		goto out_free;
	}
	fs->next_ino = FUSE_ROOT_ID;
	if ((n = node_obtain(fs, &root)) == NULL) {
		rc = -ENOMEM;
		goto out_free;
	}
	fs->root = n;		/* the reference is never dropped */
	clock_gettime(CLOCK_REALTIME, &fs->started);
	return 0;
out_free:
	bt_free(fs->by_ino);
	bt_free(fs->by_key);
	buf_pool_free(fs->write_bufs);
out_lock:
	pthread_rwlock_destroy(&fs->rename_lock);
	mutex_destroy(&fs->lock);
	return rc;
}

static void
node_free(struct node *n)
{
	coord_release(&n->c);
	buf_release(&n->key);
	bt_free(n);
}

void
fs_release(struct fs *fs)
{
	for (size_t i = 0; i < fs->buckets; i++) {
		struct node *n, *next;

		for (n = fs->by_ino[i]; n != NULL; n = next) {
			next = n->ino_next;
			node_free(n);
		}
	}
	for (struct node *n = fs->detached, *next; n != NULL; n = next) {
		next = n->ino_next;
		node_free(n);
	}
	for (size_t i = 0; i < fs->pending_count; i++) {
		coord_release(&fs->pending[i].c);
		buf_release(&fs->pending[i].key);
	}
	bt_free(fs->ages_table);
	bt_free(fs->pending);
	bt_free(fs->pending_index);
	bt_free(fs->by_ino);
	bt_free(fs->by_key);
	buf_release(&fs->peek_key);
	buf_pool_free(fs->write_bufs);
	pthread_rwlock_destroy(&fs->rename_lock);
	mutex_destroy(&fs->lock);
}

/* Double the buckets when the tables get crowded; on ENOMEM keep going
 * with longer chains. */
static void
tables_grow(struct fs *fs)
{
	size_t nb = fs->buckets * 2;
	struct node **bi, **bk;

	mutex_assert_held(&fs->lock);
	bi = bt_calloc(nb, sizeof(*bi));
	bk = bt_calloc(nb, sizeof(*bk));
	if (bi == NULL || bk == NULL) {
		bt_free(bi);
		bt_free(bk);
		return;
	}
	for (size_t i = 0; i < fs->buckets; i++) {
		struct node *n, *next;

		for (n = fs->by_ino[i]; n != NULL; n = next) {
			next = n->ino_next;
			n->ino_next = bi[n->ino % nb];
			bi[n->ino % nb] = n;
			if (n->orphan)
				continue;	/* its name went to another */
			n->key_next = bk[n->hash % nb];
			bk[n->hash % nb] = n;
		}
	}
	bt_free(fs->by_ino);
	bt_free(fs->by_key);
	fs->by_ino = bi;
	fs->by_key = bk;
	fs->buckets = nb;
}

static struct node *
find_key(struct fs *fs, const struct buf *key, uint64_t hash)
{
	struct node *n;

	mutex_assert_held(&fs->lock);
	for (n = fs->by_key[hash % fs->buckets]; n != NULL; n = n->key_next)
		if (n->hash == hash && n->key.n == key->n &&
		    memcmp(n->key.p, key->p, key->n) == 0)
			return n;
	return NULL;
}

/* Insert n, numbered, in both tables; lock held. */
static void
node_insert(struct fs *fs, struct node *n)
{
	mutex_assert_held(&fs->lock);
	if (fs->count >= fs->buckets)
		tables_grow(fs);
	n->ino_next = fs->by_ino[n->ino % fs->buckets];
	fs->by_ino[n->ino % fs->buckets] = n;
	n->key_next = fs->by_key[n->hash % fs->buckets];
	fs->by_key[n->hash % fs->buckets] = n;
	fs->count++;
	if (n->c.kind == NODE_RANGE)
		fs->ranges++;
}

struct node *
node_obtain(struct fs *fs, const struct coord *c)
{
	struct node *n;
	struct buf key;
	uint64_t hash;

	buf_init(&key);
	if (coord_key(c, &key) < 0)
		goto fail;
	hash = hash64(buf_slice(&key), NODE_KEY_SEED);
	mutex_lock(&fs->lock);
	if ((n = find_key(fs, &key, hash)) != NULL) {
		n->refs++;
		mutex_unlock(&fs->lock);
		buf_release(&key);
		return n;
	}
	mutex_unlock(&fs->lock);

	if ((n = bt_calloc(1, sizeof(*n))) == NULL)
		goto fail;
	if (coord_copy(&n->c, c) < 0) {
		bt_free(n);
		goto fail;
	}
	n->key = key;
	n->hash = hash;
	n->refs = 1;

	mutex_lock(&fs->lock);
	{
		struct node *other = find_key(fs, &n->key, hash);

		if (other != NULL) {	/* another thread won the race */
			other->refs++;
			mutex_unlock(&fs->lock);
			node_free(n);
			return other;
		}
	}
	n->ino = fs->next_ino++;
	node_insert(fs, n);
	mutex_unlock(&fs->lock);
	return n;
fail:
	buf_release(&key);
	return NULL;
}

static struct node *
find_ino(struct fs *fs, fuse_ino_t ino)
{
	struct node *n;

	mutex_assert_held(&fs->lock);
	for (n = fs->by_ino[ino % fs->buckets]; n != NULL; n = n->ino_next)
		if (n->ino == ino)
			return n;
	return NULL;
}

/* Where n's requests go: n, or the node a rename sent them to; lock
 * held. */
static struct node *
node_moved_to(struct node *n)
{
	while (n->moved != NULL)
		n = n->moved;
	return n;
}

/* An orphan in by_ino was replaced: its number names nothing now. */
struct node *
node_get(struct fs *fs, fuse_ino_t ino)
{
	struct node *n;

	mutex_lock(&fs->lock);
	if ((n = find_ino(fs, ino)) != NULL && n->orphan)
		n = NULL;
	if (n != NULL)
		n->refs++;
	mutex_unlock(&fs->lock);
	return n;
}

struct node *
node_follow(struct fs *fs, struct node *n)
{
	mutex_lock(&fs->lock);
	n = node_moved_to(n);
	n->refs++;
	mutex_unlock(&fs->lock);
	return n;
}

/* Unlink n from both tables (a detached node: from fs.detached) and
 * free it if nothing holds it, then the same for the node it moved to;
 * lock held. */
static void
node_maybe_free(struct fs *fs, struct node *n)
{
	struct node **pp, *moved;

	mutex_assert_held(&fs->lock);
	assert(n != fs->root || n->refs > 0);
	while (n != NULL && n->refs == 0 && n->nlookup == 0) {
		for (pp = n->detached ? &fs->detached :
		    &fs->by_ino[n->ino % fs->buckets]; *pp != n;
		    pp = &(*pp)->ino_next)
			;
		*pp = n->ino_next;
		if (!n->orphan) {
			for (pp = &fs->by_key[n->hash % fs->buckets];
			    *pp != n; pp = &(*pp)->key_next)
				;
			*pp = n->key_next;
		}
		fs->count--;
		if (n->c.kind == NODE_RANGE)
			fs->ranges--;
		if ((moved = n->moved) != NULL)
			moved->refs--;
		node_free(n);
		n = moved;
	}
}

/* Take n out of by_key; lock held. */
static void
node_orphan(struct fs *fs, struct node *n)
{
	struct node **pp;

	mutex_assert_held(&fs->lock);
	assert(!n->orphan);
	for (pp = &fs->by_key[n->hash % fs->buckets]; *pp != n;
	    pp = &(*pp)->key_next)
		;
	*pp = n->key_next;
	n->key_next = NULL;
	n->orphan = true;
}

/*
 * Give current node from's number to to, a new node of its new name, and
 * detach from (out of by_ino too, onto fs.detached): what the kernel
 * holds of from (its lookups) and what open handles count on it (writers)
 * go with the number; from moves to to, with a reference, so that the
 * handles and requests holding it find where it went (node_follow()).
 * Lock held.
 */
static void
node_renumber(struct fs *fs, struct node *from, struct node *to)
{
	struct node **pp;

	mutex_assert_held(&fs->lock);
	assert(!from->orphan && from->moved == NULL);
	for (pp = &fs->by_ino[from->ino % fs->buckets]; *pp != from;
	    pp = &(*pp)->ino_next)
		;
	*pp = from->ino_next;
	node_orphan(fs, from);
	from->detached = true;
	from->ino_next = fs->detached;
	fs->detached = from;

	to->ino = from->ino;
	to->nlookup = from->nlookup;
	to->writers = from->writers;
	to->listed = from->listed;
	to->listed_ages = from->listed_ages;
	to->listed_seq = from->listed_seq;
	to->listed_gen = from->listed_gen;
	to->listed_at = from->listed_at;
	to->refs = 1;		/* from->moved's */
	from->nlookup = 0;
	from->writers = 0;
	from->moved = to;
	node_insert(fs, to);
	node_maybe_free(fs, from);
}

/*
 * The kernel gave src's inode the name dst: the number now names dst (a
 * new node takes it, since a node's coordinate never changes under the
 * requests that read it) and a node that had dst's name is replaced.
 * The rename lock, held to write, keeps lookups and the requests that
 * resolve and read under it out until both are done.
 */
int
node_moved(struct fs *fs, const struct coord *src, const struct coord *dst)
{
	struct node *to, *from, *old;
	struct buf key;
	int rc;

	if ((to = bt_calloc(1, sizeof(*to))) == NULL)
		return -ENOMEM;
	buf_init(&key);
	if ((rc = coord_copy(&to->c, dst)) < 0) {
		bt_free(to);
		goto out;
	}
	buf_init(&to->key);
	if ((rc = coord_key(dst, &to->key)) < 0 ||
	    (rc = coord_key(src, &key)) < 0)
		goto out_free;
	to->hash = hash64(buf_slice(&to->key), NODE_KEY_SEED);
	if (key.n == to->key.n && memcmp(key.p, to->key.p, key.n) == 0)
		goto out_free;		/* onto itself */
	mutex_lock(&fs->lock);
	if ((old = find_key(fs, &to->key, to->hash)) != NULL) {
		node_orphan(fs, old);	/* replaced */
		node_maybe_free(fs, old);
	}
	from = find_key(fs, &key, hash64(buf_slice(&key), NODE_KEY_SEED));
	if (from != NULL && from != fs->root) {
		node_renumber(fs, from, to);
		to = NULL;
	}
	mutex_unlock(&fs->lock);
out_free:
	if (to != NULL)
		node_free(to);
out:
	buf_release(&key);
	return rc;
}

void
node_put(struct fs *fs, struct node *n)
{
	if (n == NULL)
		return;
	mutex_lock(&fs->lock);
	assert(n->refs > 0);
	n->refs--;
	node_maybe_free(fs, n);
	mutex_unlock(&fs->lock);
}

/* The kernel's lookups count on the node that has n's number now (a
 * caller without the rename lock may have met a rename). */
void
node_lookup_add(struct fs *fs, struct node *n)
{
	mutex_lock(&fs->lock);
	node_moved_to(n)->nlookup++;
	mutex_unlock(&fs->lock);
}

void
node_forget(struct fs *fs, fuse_ino_t ino, uint64_t nlookup)
{
	struct node *n;

	mutex_lock(&fs->lock);
	if ((n = find_ino(fs, ino)) != NULL && n != fs->root) {
		n->nlookup = n->nlookup > nlookup ? n->nlookup - nlookup : 0;
		node_maybe_free(fs, n);
	}
	mutex_unlock(&fs->lock);
}

/* The node for c, or NULL, found without an allocation (a listing asks
 * for every entry); lock held. */
static struct node *
find_coord(struct fs *fs, const struct coord *c)
{
	mutex_assert_held(&fs->lock);
	if (coord_key(c, &fs->peek_key) < 0)
		return NULL;
	return find_key(fs, &fs->peek_key,
	    hash64(buf_slice(&fs->peek_key), NODE_KEY_SEED));
}

fuse_ino_t
node_peek(struct fs *fs, const struct coord *c)
{
	struct node *n;
	fuse_ino_t ino = 0;

	mutex_lock(&fs->lock);
	if ((n = find_coord(fs, c)) != NULL && n->nlookup > 0)
		ino = n->ino;
	mutex_unlock(&fs->lock);
	return ino;
}

/* Writers are counted where the node is now: a rename takes them along
 * (node_renumber()). */
void
node_writers_add(struct fs *fs, struct node *n, int delta)
{
	mutex_lock(&fs->lock);
	n = node_moved_to(n);
	assert(delta >= 0 || n->writers >= (uint32_t)-delta);
	n->writers += delta;
	mutex_unlock(&fs->lock);
}

uint32_t
node_writers(struct fs *fs, struct node *n)
{
	uint32_t w;

	mutex_lock(&fs->lock);
	w = node_moved_to(n)->writers;
	mutex_unlock(&fs->lock);
	return w;
}

/*
 * ---- Pending directories ----
 * An array (listings and rmdir scan it for the children of a directory)
 * with a hash index on the keys, since a bulk mkdir -p makes thousands
 * and every lookup, mkdir and commit asks about a few of them.  The
 * lock is held in all the helpers below.
 */

static ssize_t
pending_find(struct fs *fs, const struct buf *key, uint64_t hash)
{
	const struct pending *p;

	mutex_assert_held(&fs->lock);
	if (fs->pending_buckets == 0)
		return -1;
	for (size_t i = fs->pending_index[hash % fs->pending_buckets];
	    i != PENDING_NONE; i = p->next) {
		p = &fs->pending[i];
		if (p->hash == hash && p->key.n == key->n &&
		    memcmp(p->key.p, key->p, key->n) == 0)
			return (ssize_t)i;
	}
	return -1;
}

static void
pending_link(struct fs *fs, size_t i)
{
	size_t *head = &fs->pending_index[fs->pending[i].hash %
	    fs->pending_buckets];

	mutex_assert_held(&fs->lock);
	assert(i < fs->pending_cap);
	fs->pending[i].next = *head;
	*head = i;
}

static void
pending_unlink(struct fs *fs, size_t i)
{
	size_t *pp = &fs->pending_index[fs->pending[i].hash %
	    fs->pending_buckets];

	while (*pp != i)
		pp = &fs->pending[*pp].next;
	*pp = fs->pending[i].next;
}

/* Room for one more entry, in the array and (at most one a bucket on
 * average) in the index. */
static int
pending_reserve(struct fs *fs)
{
	struct pending *p;
	size_t nb, *idx;

	mutex_assert_held(&fs->lock);
	if (fs->pending_count == fs->pending_cap) {
		size_t cap = fs->pending_cap ? fs->pending_cap * 2 : 16;

		if ((p = bt_realloc(fs->pending, cap * sizeof(*p))) == NULL)
			return -ENOMEM;
		fs->pending = p;
		fs->pending_cap = cap;
	}
	if (fs->pending_count < fs->pending_buckets)
		return 0;
	nb = fs->pending_buckets ? fs->pending_buckets * 2 : 64;
	if ((idx = bt_malloc(nb * sizeof(*idx))) == NULL)
		return fs->pending_buckets ? 0 : -ENOMEM;	/* longer chains */
	for (size_t b = 0; b < nb; b++)
		idx[b] = PENDING_NONE;
	bt_free(fs->pending_index);
	fs->pending_index = idx;
	fs->pending_buckets = nb;
	for (size_t i = 0; i < fs->pending_count; i++)
		pending_link(fs, i);
	return 0;
}

/* Drop the entry at position i; the last entry takes its place. */
static void
pending_drop(struct fs *fs, size_t i)
{
	size_t last = fs->pending_count - 1;

	mutex_assert_held(&fs->lock);
	assert(i < fs->pending_count);
	pending_unlink(fs, i);
	coord_release(&fs->pending[i].c);
	buf_release(&fs->pending[i].key);
	if (i != last) {
		pending_unlink(fs, last);
		fs->pending[i] = fs->pending[last];
		pending_link(fs, i);
	}
	fs->pending_count--;
	fs->pending_gen++;
}

/* Add one coordinate. */
static int
pending_add_one(struct fs *fs, const struct coord *c)
{
	struct pending *p;
	struct buf key;
	uint64_t hash;
	int rc;

	buf_init(&key);
	if ((rc = coord_key(c, &key)) < 0)
		goto out;
	hash = hash64(buf_slice(&key), PENDING_SEED);
	if (pending_find(fs, &key, hash) >= 0)
		goto out;
	if ((rc = pending_reserve(fs)) < 0)
		goto out;
	p = &fs->pending[fs->pending_count];
	if ((rc = coord_copy(&p->c, c)) < 0)
		goto out;
	p->key = key;
	p->hash = hash;
	pending_link(fs, fs->pending_count);
	fs->pending_count++;
	fs->pending_gen++;
	return 0;
out:
	buf_release(&key);
	return rc;
}

/* Make c and its ancestors up to the row pending. */
int
pending_add(struct fs *fs, const struct coord *c)
{
	struct coord up = *c;
	int rc = 0;

	mutex_lock(&fs->lock);
	for (up.kind = c->kind; up.kind >= NODE_ROW && rc == 0; up.kind--) {
		if (up.kind == NODE_ROW || up.kind == NODE_FAMILY ||
		    up.kind == NODE_COLUMN)
			rc = pending_add_one(fs, &up);
	}
	mutex_unlock(&fs->lock);
	return rc;
}

bool
pending_has(struct fs *fs, const struct coord *c)
{
	struct buf key;
	bool found = false;

	buf_init(&key);
	if (coord_key(c, &key) == 0) {
		uint64_t hash = hash64(buf_slice(&key), PENDING_SEED);

		mutex_lock(&fs->lock);
		found = pending_find(fs, &key, hash) >= 0;
		mutex_unlock(&fs->lock);
	}
	buf_release(&key);
	return found;
}

bool
coord_same_upto(const struct coord *p, const struct coord *c,
    enum node_kind kind)
{
	int depth = coord_depth(kind);

	if (depth >= 1 && strcmp(p->table, c->table) != 0)
		return false;
	if (depth >= 2 && (p->row.size != c->row.size ||
	    memcmp(p->row.data, c->row.data, c->row.size) != 0))
		return false;
	if (depth >= 3 && strcmp(p->family, c->family) != 0)
		return false;
	if (depth >= 4 && (p->qualifier.size != c->qualifier.size ||
	    (c->qualifier.size > 0 && memcmp(p->qualifier.data,
	    c->qualifier.data, c->qualifier.size) != 0)))
		return false;
	return true;
}

/* Whether p lies inside directory c (one or more levels down). */
static bool
coord_under(const struct coord *p, const struct coord *c)
{
	return coord_depth(p->kind) > coord_depth(c->kind) &&
	    coord_same_upto(p, c, c->kind);
}

/* Whether p is directory c (a row, family or column) or a name in it at
 * any depth, control names (latest, increment, @TS), temporary files and
 * time ranges included. */
static bool
coord_within(const struct coord *p, const struct coord *c)
{
	return ((p->kind >= c->kind && p->kind <= NODE_INCREMENT) ||
	    p->kind == NODE_TEMP || p->kind == NODE_RANGE ||
	    p->kind == NODE_RANGE_VERSION) && coord_same_upto(p, c, c->kind);
}

/* p, within directory src, with src's coordinates replaced by dst's (a
 * directory of the same kind); borrows from p and dst. */
static struct coord
coord_rebased(const struct coord *p, const struct coord *dst)
{
	struct coord out = *p;
	int depth = coord_depth(dst->kind);

	out.table = dst->table;
	out.row = dst->row;
	if (depth >= 3)
		out.family = dst->family;
	if (depth >= 4)
		out.qualifier = dst->qualifier;
	return out;
}

/* A growing array of owned coordinates. */
struct coord_list {
	struct coord *v;
	size_t n, cap;
};

static int
coord_list_add(struct coord_list *l, const struct coord *c)
{
	struct coord *v;
	int rc;

	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 8;

		if ((v = bt_realloc(l->v, cap * sizeof(*v))) == NULL)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	if ((rc = coord_copy(&l->v[l->n], c)) == 0)
		l->n++;
	return rc;
}

static void
coord_list_release(struct coord_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		coord_release(&l->v[i]);
	bt_free(l->v);
}

/*
 * After directory src was renamed to dst (a row, family or column of the
 * same kind): what the kernel knew within dst is gone (POSIX: dst was
 * empty, and is replaced), and it keeps the inode of src, and of every
 * name inside it that it knows, under their new names (node_moved());
 * the pending directories within src move within dst.
 */
int
node_tree_moved(struct fs *fs, const struct coord *src,
    const struct coord *dst)
{
	struct coord_list nodes = { 0 }, pend = { 0 };
	struct coord to;
	int rc = 0;

	mutex_lock(&fs->lock);
	for (size_t b = 0; b < fs->buckets; b++) {
		struct node *n, *next;

		for (n = fs->by_ino[b]; n != NULL; n = next) {
			next = n->ino_next;
			if (!n->orphan && coord_within(&n->c, dst)) {
				node_orphan(fs, n);	/* replaced */
				node_maybe_free(fs, n);
			}
		}
	}
	for (size_t b = 0; b < fs->buckets && rc == 0; b++)
		for (struct node *n = fs->by_ino[b]; n != NULL && rc == 0;
		    n = n->ino_next)
			if (!n->orphan && coord_within(&n->c, src))
				rc = coord_list_add(&nodes, &n->c);
	for (size_t i = 0; i < fs->pending_count && rc == 0; i++)
		if (coord_within(&fs->pending[i].c, src))
			rc = coord_list_add(&pend, &fs->pending[i].c);
	mutex_unlock(&fs->lock);
	for (size_t i = 0; i < nodes.n && rc == 0; i++) {
		to = coord_rebased(&nodes.v[i], dst);
		rc = node_moved(fs, &nodes.v[i], &to);
	}
	for (size_t i = 0; i < pend.n && rc == 0; i++) {
		to = coord_rebased(&pend.v[i], dst);
		(void)pending_remove(fs, &pend.v[i]);
		rc = pending_add(fs, &to);
	}
	coord_list_release(&nodes);
	coord_list_release(&pend);
	return rc;
}

bool
pending_has_child(struct fs *fs, const struct coord *c)
{
	bool found = false;

	mutex_lock(&fs->lock);
	for (size_t i = 0; i < fs->pending_count && !found; i++)
		found = coord_under(&fs->pending[i].c, c);
	mutex_unlock(&fs->lock);
	return found;
}

int
pending_remove(struct fs *fs, const struct coord *c)
{
	struct buf key;
	ssize_t i;
	int rc;

	buf_init(&key);
	if ((rc = coord_key(c, &key)) < 0)
		goto out;
	mutex_lock(&fs->lock);
	if ((i = pending_find(fs, &key, hash64(buf_slice(&key),
	    PENDING_SEED))) < 0)
		rc = BT_NOTFOUND;
	else
		pending_drop(fs, (size_t)i);
	mutex_unlock(&fs->lock);
out:
	buf_release(&key);
	return rc;
}

/* The column of c, or directory c, now holds data: its directories need
 * no pending entry any more (unlink makes them pending again), which keeps
 * the list short during bulk loads through the mount. */
void
pending_settled(struct fs *fs, const struct coord *c)
{
	struct coord up = *c;

	for (up.kind = c->kind < NODE_COLUMN ? c->kind : NODE_COLUMN;
	    up.kind >= NODE_ROW; up.kind--)
		(void)pending_remove(fs, &up);
}

static int
name_cmp(const void *a, const void *b)
{
	const struct buf *x = a, *y = b;
	size_t n = x->n < y->n ? x->n : y->n;
	int c = n ? memcmp(x->p, y->p, n) : 0;

	return c != 0 ? c : (x->n > y->n) - (x->n < y->n);
}

void
pending_names_free(struct buf *names, size_t count)
{
	for (size_t i = 0; i < count; i++)
		buf_release(&names[i]);
	bt_free(names);
}

int
pending_children(struct fs *fs, const struct coord *c, struct buf **out,
    size_t *count)
{
	int want = coord_depth(c->kind) + 1;
	struct buf *names = NULL;
	size_t n = 0;
	int rc = 0;

	mutex_lock(&fs->lock);
	if (fs->pending_count > 0 &&
	    (names = bt_calloc(fs->pending_count, sizeof(*names))) == NULL)
		rc = -ENOMEM;
	for (size_t i = 0; i < fs->pending_count && rc == 0; i++) {
		const struct coord *p = &fs->pending[i].c;

		if (coord_depth(p->kind) != want || !coord_under(p, c))
			continue;
		buf_init(&names[n]);
		if (want == 2)
			rc = buf_set(&names[n], p->row.data, p->row.size);
		else if (want == 3)
			rc = buf_set(&names[n], p->family,
			    strlen(p->family));
		else
			rc = buf_set(&names[n], p->qualifier.data,
			    p->qualifier.size);
		n++;
	}
	mutex_unlock(&fs->lock);
	if (rc < 0) {
		pending_names_free(names, n);
		return rc;
	}
	if (n > 0)
		qsort(names, n, sizeof(*names), name_cmp);
	*out = names;
	*count = n;
	return 0;
}

/*
 * The listings the kernel holds of column c's time ranges (@T1..T2):
 * their names are many, so the nodes are walked, and only while some
 * range is looked up at all.
 */
static void
fs_column_ranges_changed(struct fs *fs, const struct coord *c)
{
	fuse_ino_t inos[16];
	size_t count = 0;

	mutex_lock(&fs->lock);
	for (size_t b = 0; fs->ranges > 0 && b < fs->buckets; b++) {
		for (struct node *n = fs->by_ino[b]; n != NULL &&
		    count < sizeof(inos) / sizeof(inos[0]);
		    n = n->ino_next) {
			if (n->c.kind != NODE_RANGE || !n->listed ||
			    !coord_same_upto(&n->c, c, NODE_COLUMN))
				continue;
			n->listed = false;
			inos[count++] = n->ino;
		}
	}
	mutex_unlock(&fs->lock);
	/* More than fit here wait for rule 3 of fs_cache.c. */
	for (size_t i = 0; i < count; i++)
		fuse_lowlevel_notify_inval_inode(fs->se, inos[i], 0, 0);
}

void
fs_column_changed(struct fs *fs, const struct coord *c)
{
	struct coord k = *c;
	/* The column, family and row directories: their mtime is the
	 * newest version's. */
	static const enum node_kind kinds[] = { NODE_LATEST, NODE_COLUMN,
	    NODE_FAMILY, NODE_ROW };
	fuse_ino_t ino = 0;
	struct node *n;

	if (c->kind == NODE_VERSION && (ino = node_peek(fs, c)) != 0)
		fuse_lowlevel_notify_inval_inode(fs->se, ino, 0, 0);
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		k.kind = kinds[i];
		if ((ino = node_peek(fs, &k)) != 0)
			fuse_lowlevel_notify_inval_inode(fs->se, ino, 0, 0);
	}
	fs_column_ranges_changed(fs, c);
	/* The table's listing, only if the kernel holds one: a delete may
	 * have taken the row's last cell. */
	k.kind = NODE_TABLE;
	ino = 0;
	mutex_lock(&fs->lock);
	if ((n = find_coord(fs, &k)) != NULL && n->listed) {
		n->listed = false;
		ino = n->ino;
	}
	mutex_unlock(&fs->lock);
	if (ino != 0)
		fuse_lowlevel_notify_inval_inode(fs->se, ino, 0, 0);
}
