/*
 * fs_cache.c - what the kernel may keep of a directory's listing.
 *
 * The kernel caches every listing read to its end (its readdir cache:
 * always where it lists without opening, fs_list.c), and itself drops
 * what it cached when it creates, removes or renames an entry there, or
 * when the directory's mtime changes.  The daemon drops the rest:
 *   1. a commit through the mount: the directories of its column
 *      (fs_column_changed());
 *   2. a command through the control socket: every listing the kernel
 *      holds (fs_listings_changed());
 *   3. anything else: whenever the daemon sends a directory's attributes
 *      (GETATTR, LOOKUP, a READDIRPLUS entry), which the kernel must ask
 *      for before it lists from its cache once they are older than the
 *      cache timeout, a listing is dropped if the store or the pending
 *      directories changed since it began, or if it is older than the
 *      cache timeout in a table whose versions age out (a maxage GC
 *      policy) (fs_listing_check()).  An unchanged listing elsewhere
 *      stays, so walking an idle tree again lists nothing afresh.
 * A node's listed, listed_* fields record the listing the kernel may
 * hold (fs_listing_done()).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs/fs.h"
#include "util/alloc.h"

/* What a listing depends on, as of now. */
void
fs_dir_version_get(struct fs *fs, struct dir_version *v)
{
	v->seq = bt_store_last_seq(fs->store);
	mutex_lock(&fs->lock);
	v->gen = fs->pending_gen;
	mutex_unlock(&fs->lock);
}

static double
seconds_since(const struct timespec *then, const struct timespec *now)
{
	return (double)(now->tv_sec - then->tv_sec) +
	    (double)(now->tv_nsec - then->tv_nsec) / 1e9;
}

/* dir_listing_fresh() with fs->lock held. */
static bool
listing_fresh_locked(struct fs *fs, struct node *dir,
    const struct dir_version *v, const struct timespec *now)
{
	mutex_assert_held(&fs->lock);
	return dir->listed && dir->listed_seq == v->seq &&
	    dir->listed_gen == v->gen && (!dir->listed_ages ||
	    seconds_since(&dir->listed_at, now) < fs->timeout);
}

/*
 * Whether a listing of dir can change with time alone: one in a table
 * with a maxage GC policy, whose versions leave as they age.  On an
 * error, yes.
 */
static bool
listing_ages(struct fs *fs, const struct node *dir)
{
	const char *table = dir->c.table;
	char *text, *copy;
	bool ages;

	if (dir->c.kind == NODE_ROOT)
		return false;
	mutex_lock(&fs->lock);
	if (fs->ages_table != NULL && strcmp(fs->ages_table, table) == 0) {
		ages = fs->ages;
		mutex_unlock(&fs->lock);
		return ages;
	}
	mutex_unlock(&fs->lock);
	if (bt_table_describe(fs->store, table, &text) < 0)
		return true;
	/* "FAMILY ... gc=POLICY" lines; family names hold no '='. */
	ages = strstr(text, "maxage=") != NULL;
	free(text);
	if ((copy = bt_strdup(table)) == NULL)
		return ages;
	mutex_lock(&fs->lock);
	bt_free(fs->ages_table);
	fs->ages_table = copy;
	fs->ages = ages;
	mutex_unlock(&fs->lock);
	return ages;
}

void
fs_listing_done(struct fs *fs, struct node *dir,
    const struct dir_version *v, const struct timespec *began)
{
	bool ages = listing_ages(fs, dir);

	mutex_lock(&fs->lock);
	dir->listed = true;
	dir->listed_ages = ages;
	dir->listed_seq = v->seq;
	dir->listed_gen = v->gen;
	dir->listed_at = *began;
	mutex_unlock(&fs->lock);
}

bool
fs_listing_fresh(struct fs *fs, struct node *dir,
    const struct dir_version *v, const struct timespec *now)
{
	bool fresh;

	mutex_lock(&fs->lock);
	fresh = listing_fresh_locked(fs, dir, v, now);
	mutex_unlock(&fs->lock);
	return fresh;
}

void
fs_listing_check(struct fs *fs, struct node *n)
{
	struct dir_version v;
	struct timespec now;
	bool drop;

	mutex_lock(&fs->lock);
	drop = n->listed;
	mutex_unlock(&fs->lock);
	if (!drop)
		return;
	fs_dir_version_get(fs, &v);
	clock_gettime(CLOCK_MONOTONIC, &now);
	mutex_lock(&fs->lock);
	drop = n->listed && !listing_fresh_locked(fs, n, &v, &now);
	if (drop)
		n->listed = false;
	mutex_unlock(&fs->lock);
	if (drop)
		fuse_lowlevel_notify_inval_inode(fs->se, n->ino, 0, 0);
}

void
fs_nodes_invalidate(struct fs *fs, bool (*match)(struct node *, void *),
    void *arg, off_t off)
{
	fuse_ino_t *inos = NULL, *more;
	size_t count = 0, cap = 0;

	mutex_lock(&fs->lock);
	for (size_t b = 0; b < fs->buckets; b++) {
		for (struct node *n = fs->by_ino[b]; n != NULL;
		    n = n->ino_next) {
			/* Room first, so that a node matched (and perhaps
			 * changed) is always one invalidated; without it the
			 * rest are left to rule 3 and the cache time. */
			if (count == cap) {
				cap = cap ? cap * 2 : 64;
				if ((more = bt_realloc(inos,
				    cap * sizeof(*inos))) == NULL)
					break;
				inos = more;
			}
			if (match(n, arg))
				inos[count++] = n->ino;
		}
	}
	mutex_unlock(&fs->lock);
	for (size_t i = 0; i < count; i++)
		fuse_lowlevel_notify_inval_inode(fs->se, inos[i], off, 0);
	bt_free(inos);
}

/* fs_listings_changed's match: a listed node, marked unlisted. */
static bool
node_unlist(struct node *n, void *arg)
{
	(void)arg;
	if (!n->listed)
		return false;
	n->listed = false;
	return true;
}

void
fs_listings_changed(struct fs *fs)
{
	fs_nodes_invalidate(fs, node_unlist, NULL, 0);
	mutex_lock(&fs->lock);
	bt_free(fs->ages_table);
	fs->ages_table = NULL;
	mutex_unlock(&fs->lock);
}
