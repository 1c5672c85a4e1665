/*
 * fs.h - the insides of the tabletfs FUSE daemon (docs/design.md section 2),
 * shared by src/fs/fs_*.c and main.c.  Nothing outside src/fs includes it.
 *
 * Every inode stands for one coordinate of the data model: a kind plus as
 * much of (table, row, family, qualifier, timestamp) as the kind needs.
 * Inode numbers come from a 64-bit counter and are never reused, so the
 * generation is always 0.  A node lives while the kernel holds lookups on
 * it (nlookup) or the daemon holds references (refs: open handles and
 * requests in flight); it is freed when both reach zero.
 *
 * A node's coordinate never changes, so requests read it without a lock.
 * A rename keeps inode numbers, as POSIX does (a shell whose cwd is in a
 * renamed directory stays there): the renamed node and every node within
 * it hand their numbers and lookup counts to new nodes of the new
 * coordinates and step out of both tables ("detached", with moved naming
 * the successor, for the handles and requests that hold them); a node
 * whose name the rename took stays in by_ino for the kernel's forget but
 * answers no request by its number ("replaced": fs_inode.c, node_moved).
 *
 * Directories made by mkdir that hold no data yet are "pending": kept in
 * memory only (struct fs.pending), shown in listings and lookups like live
 * ones, and dropped by rmdir or at unmount.  Deleting the last version of a
 * column through the mount makes its column, family and row pending, so a
 * directory never vanishes under the user before rmdir.
 *
 * Threads: requests run on libfuse's worker threads.  fs.lock guards the
 * node tables, the counters in nodes and the pending list; handles carry
 * their own locks; fs.rename_lock orders renames against the requests
 * that act at a name and against commits.  The store is thread-safe
 * (src/api/tabletfs.h).
 */
#ifndef TABLETFS_FS_FS_H
#define TABLETFS_FS_FS_H

#define FUSE_USE_VERSION 35

#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "api/tabletfs.h"
#include "util/buf.h"
#include "util/buf_pool.h"
#include "util/mutex.h"

enum node_kind {
	NODE_ROOT = 1,
	NODE_STATUS,		/* /.status */
	NODE_TABLE,
	NODE_SCHEMA,		/* TABLE/.schema */
	NODE_ROW,
	NODE_FAMILY,
	NODE_COLUMN,		/* FAMILY/QUALIFIER */
	NODE_VERSION,		/* COLUMN/TS */
	NODE_LATEST,		/* COLUMN/latest */
	NODE_ASOF,		/* COLUMN/@TS */
	NODE_INCREMENT,		/* COLUMN/increment */
	NODE_TABLETS,		/* TABLE/.tablets */
	NODE_TEMP,		/* COLUMN/NAME: a temporary file (fs_temp.c) */
	NODE_RANGE,		/* COLUMN/@T1..T2: versions in [T1, T2) */
	NODE_RANGE_VERSION,	/* COLUMN/@T1..T2/TS: one of them */
	NODE_QUERY,		/* TABLE/.filter[/@KEY=VALUE...] (fs_query.h) */
	NODE_QUERY_ROW,		/* QUERY/ROW: the row's selected cells */
};

/* A place in the namespace; fields past the kind's depth are unused. */
struct coord {
	enum node_kind kind;
	const char *table;
	struct bt_bytes row;
	const char *family;
	struct bt_bytes qualifier;
	int64_t ts;		/* VERSION, RANGE_VERSION: its time; ASOF:
				   the bound */
	const char *name;	/* TEMP: its name */
	int64_t range_start;	/* RANGE, RANGE_VERSION: [start, end) */
	int64_t range_end;
	const char *query;	/* QUERY, QUERY_ROW: the components under
				   .filter joined by '/' ("" for none) */
};

struct node {
	struct node *ino_next;	/* hash chains */
	struct node *key_next;
	fuse_ino_t ino;
	uint64_t hash;
	uint64_t nlookup;
	uint64_t refs;
	uint32_t writers;	/* open handles that may create the file */
	bool orphan;		/* out of by_key: renamed, or replaced */
	bool detached;		/* out of by_ino too: renamed, its number
				   went to moved (on fs.detached) */
	struct node *moved;	/* renamed: requests go there (a reference) */
	struct coord c;		/* owns its strings and bytes */
	struct buf key;		/* c serialised: the identity */
	/*
	 * Directories: the kernel may hold a listing in its readdir cache,
	 * sent whole, that began when the store and the pending directories
	 * were at listed_seq and listed_gen (fs_cache.c).
	 */
	bool listed;
	bool listed_ages;	/* in a table with a maxage GC policy */
	uint64_t listed_seq;	/* the store's last sequence number then */
	uint64_t listed_gen;	/* fs.pending_gen then */
	struct timespec listed_at;	/* CLOCK_MONOTONIC, at its opendir */
};

struct pending;
struct temp_set;

/* Settings from the command line. */
struct fs_config {
	char *store;
	char *mountpoint;
	char *sync;
	char *cache_timeout;
	char *max_cell;
	char *memtable_size;
	char *cache_size;
	int read_only;
	int allow_other;	/* then the kernel checks permissions */
};

struct fs {
	struct bt_store *store;
	struct fuse_session *se;
	const char *store_path;
	bool cell;		/* store_path is a cell's address */
	bool read_only;
	bool allow_other;	/* other users in: the socket serves them */
	bool sync_always;
	double timeout;		/* entry and attribute cache, seconds */
	uint64_t max_cell;
	uid_t uid;
	gid_t gid;
	struct timespec started;
	struct fs_socket *sock;	/* the control socket, while mounted */
	/* The memory of writers' buffers, handed from one open to the next
	 * (fs_file.c). */
	struct buf_pool *write_bufs;

	/*
	 * Renames take it to write, a commit of an open file to read: a
	 * file's place is read and written to in one step that no rename
	 * splits, so a write through a descriptor lands where the file is
	 * (a rename's data move and its node changes happen together).
	 * Lookup, getattr, setattr, open and the listing of a row, family,
	 * column or range take it to read too, between finding a node and
	 * reading at its coordinate; create, mkdir, unlink and rmdir from
	 * resolving the parent to acting at the name, which a rename of the
	 * parent in between would leave at its old place.
	 * A handle's lock comes first (commit()): none is taken while this
	 * is held (setattr truncates a handle's buffer after).  Never a read
	 * of an open file: a commit holds it while the kernel invalidates
	 * pages, which may wait for that read.  The kernel is told of
	 * changes under it by fuse_lowlevel_notify_inval_inode() alone, which
	 * waits for no request but such a read; never notify_inval_entry or
	 * notify_delete, which take a directory's lock that the kernel holds
	 * across a create, mkdir, unlink or rmdir there waiting for this
	 * one.  Never twice in one thread: it prefers writers.
	 */
	pthread_rwlock_t rename_lock;
	struct mutex lock;
	struct node **by_ino;
	struct node **by_key;
	size_t buckets;
	size_t count;
	size_t ranges;		/* nodes of kind NODE_RANGE among them */
	struct buf peek_key;		/* node_peek's key, under lock */
	fuse_ino_t next_ino;
	struct node *root;
	struct node *detached;		/* renamed nodes still held, by
					   ino_next */
	struct pending *pending;	/* an array, in no order */
	uint64_t pending_gen;		/* counts changes to the pending set */
	size_t pending_count;
	size_t pending_cap;
	size_t *pending_index;		/* hash chains of array positions */
	size_t pending_buckets;
	struct temp_set *temps;		/* fs_temp.c, with its own lock */
	struct listings *listings;	/* fs_list.c, with its own lock */
	/* fs_cache.c: the table last asked whether its listings age, until
	 * a control command (which may change its schema); under lock. */
	char *ages_table;
	bool ages;
	bool no_opendir;	/* the kernel lists without opening */
};

/*
 * fs_socket.c: STORE/tabletfs.sock, where tabletctl sends its commands
 * while the store is mounted (ctl/ctl_socket.h).  Start after the mount;
 * stop (the socket file is removed) before the store closes.  0 or a
 * negative errno.
 */
int fs_socket_start(struct fs *fs);
void fs_socket_stop(struct fs *fs);

/*
 * fs_access.c: who may do what through the mount (docs/design.md
 * section 2, "Permissions").  The kernel checks every request against the
 * attributes the daemon presents (default_permissions); these present
 * them and check what the kernel cannot.
 */
/* Set st's owner, group and permission bits (st has the kind's own)
 * from the access of c's table or family; st is left as it is when
 * there is none (a cell whose servers predate it).  Applying it twice
 * changes nothing more. */
void fs_access_present(struct fs *fs, const struct coord *c, struct stat *st);
/* chmod, chown, chgrp of table or family directory n (others: 0, no
 * effect) by req's caller: 0 or a negative errno. */
int fs_access_setattr(struct fs *fs, fuse_req_t req, struct node *n,
    const struct stat *attr, int to_set);
/* A query of table (its .filter files) needs r on the table and every
 * family: 0 or -EACCES for req's caller. */
int fs_access_query(struct fs *fs, fuse_req_t req, const char *table);
/* A rename of src onto dst (both resolved) from one family to another:
 * 0, or -EACCES unless req's caller may read and write src's family and
 * write dst's.  Other renames: 0 (the kernel's checks cover them). */
int fs_access_rename(struct fs *fs, fuse_req_t req, const struct coord *src,
    const struct coord *dst);
/* The attributes the kernel holds of every node of table (NULL: of
 * every node) are stale: it asks again. */
void fs_access_changed(struct fs *fs, const char *table);

/* fs_inode.c: the node tables, pending directories and errno mapping. */
int fs_init(struct fs *fs);
void fs_release(struct fs *fs);
int fs_errno(int rc);
bool coord_is_dir(enum node_kind kind);
/* Serialise c into key: the identity of a node. */
int coord_key(const struct coord *c, struct buf *key);
/* Whether a and b agree on the coordinates that kind uses (the table, the
 * row, the family, the qualifier, the timestamp, as deep as kind goes). */
bool coord_same_upto(const struct coord *a, const struct coord *b,
    enum node_kind kind);
/* Find or make the node for c; returned with a reference (node_put). */
struct node *node_obtain(struct fs *fs, const struct coord *c);
/* The node numbered ino with a reference, or NULL (never made, forgotten,
 * or replaced by a rename onto its name). */
struct node *node_get(struct fs *fs, fuse_ino_t ino);
/* The same for a node the caller holds: where n is now, referenced. */
struct node *node_follow(struct fs *fs, struct node *n);
void node_put(struct fs *fs, struct node *n);
void node_lookup_add(struct fs *fs, struct node *n);
void node_forget(struct fs *fs, fuse_ino_t ino, uint64_t nlookup);
/* The inode number of c if the kernel may know it, else 0. */
fuse_ino_t node_peek(struct fs *fs, const struct coord *c);
/* After a rename of src onto dst, with the rename lock held to write:
 * src's inode number (and lookups) now names dst, whose node, if any, is
 * replaced; a new src node may be made for the old name.  0 or -ENOMEM. */
int node_moved(struct fs *fs, const struct coord *src,
    const struct coord *dst);
/* After a rename of directory src to dst: every node within dst is
 * replaced, src and every node within it keep their numbers at their new
 * names (node_moved()), and the pending directories within src move to
 * dst. */
int node_tree_moved(struct fs *fs, const struct coord *src,
    const struct coord *dst);
void node_writers_add(struct fs *fs, struct node *n, int delta);
uint32_t node_writers(struct fs *fs, struct node *n);
/* Tell the kernel that the files of column c changed (after a commit),
 * and the attributes and listings of the directories above it (rule 1
 * of fs_cache.c). */
void fs_column_changed(struct fs *fs, const struct coord *c);
/* The read filter selecting everything under c (a row needs none). */
void fs_column_filter(const struct coord *c, struct bt_column *col,
    struct bt_read_options *ro);

int pending_add(struct fs *fs, const struct coord *c);
bool pending_has(struct fs *fs, const struct coord *c);
bool pending_has_child(struct fs *fs, const struct coord *c);
int pending_remove(struct fs *fs, const struct coord *c);
void pending_settled(struct fs *fs, const struct coord *c);
/* The raw child names of directory c that are pending, sorted: a buf
 * array freed with pending_names_free(). */
int pending_children(struct fs *fs, const struct coord *c, struct buf **out,
    size_t *count);
void pending_names_free(struct buf *names, size_t count);

/*
 * fs_temp.c: temporary files in column directories and hidden latest
 * names, held by the daemon only (see there).  Coordinates of temporary
 * files are NODE_TEMP; of hidden names, anything in the column.  0 or a
 * negative errno.
 */
struct temp_attr {
	uint64_t size;
	mode_t mode;
	struct timespec mtime;
};
int temp_set_new(struct temp_set **out);
void temp_set_free(struct temp_set *ts);
int temp_create(struct fs *fs, const struct coord *c, mode_t mode, bool excl,
    bool trunc);
int temp_attr(struct fs *fs, const struct coord *c, struct temp_attr *a);
int temp_read(struct fs *fs, const struct coord *c, off_t off, size_t size,
    struct buf *out);
int temp_write(struct fs *fs, const struct coord *c, const void *p,
    size_t size, off_t off, bool append);
int temp_truncate(struct fs *fs, const struct coord *c, uint64_t size);
int temp_set_attr(struct fs *fs, const struct coord *c, const mode_t *mode,
    const struct timespec *mtime);
int temp_take(struct fs *fs, const struct coord *c, struct buf *data);
int temp_put(struct fs *fs, const struct coord *c, const void *value,
    size_t n);
int temp_rename(struct fs *fs, const struct coord *src,
    const struct coord *dst, bool noreplace);
int temp_list(struct fs *fs, const struct coord *c, char ***names,
    struct temp_attr **attrs, size_t *count);
void temp_names_free(char **names, struct temp_attr *attrs, size_t count);
bool temp_in_column(struct fs *fs, const struct coord *c);
void temp_dir_moved(struct fs *fs, const struct coord *src,
    const struct coord *dst);
int latest_hide(struct fs *fs, const struct coord *c);
bool latest_hidden(struct fs *fs, const struct coord *c);
void latest_show(struct fs *fs, const struct coord *c);

/*
 * fs_short.c: the bytes that name, a row's name in table directory dir or
 * a column's in family directory dir, stands for, into out: its decoding
 * (util/names.h), or the key whose short form it is.  0, -EINVAL when it
 * cannot be decoded, -ENOENT when it is a short form of no key, or an
 * error.
 */
int fs_name_decode(struct fs *fs, const struct coord *dir, const char *name,
    struct buf *out);

/* fs_dir.c: lookup, attributes, listings and directory changes. */
int fs_child(struct fs *fs, const struct node *parent, const char *name,
    bool creating, struct coord *c, struct buf *scratch);

/*
 * Take a reference on directory parent into *dirp and resolve name in it
 * (fs_child).  -ENOENT for a forgotten parent; on failure *dirp may still
 * hold the reference (node_put accepts NULL).
 */
int fs_child_at(struct fs *fs, fuse_ino_t parent, const char *name,
    bool creating, struct node **dirp, struct coord *c, struct buf *scratch);
/* The same for a request that creates a name: -EROFS on a read-only
 * mount first. */
int fs_child_to_create(struct fs *fs, fuse_ino_t parent, const char *name,
    struct node **dirp, struct coord *c, struct buf *scratch);
int fs_exists(struct fs *fs, struct node *n);
int fs_stat(struct fs *fs, struct node *n, struct stat *st);
void fs_stat_dir(struct fs *fs, fuse_ino_t ino, struct stat *st);
int fs_reply_entry(struct fs *fs, fuse_req_t req, struct node *n);
int fs_read_cell(struct fs *fs, const struct coord *c, bool keys_only,
    struct bt_row **rowp, const struct bt_cell **cellp);
int fs_family_known(struct fs *fs, const char *table, const char *family);
/* The value of version node c into out, its time into *ts (may be NULL);
 * *found tells whether one exists (out stays empty if not). */
int fs_load_value(struct fs *fs, const struct coord *c, struct buf *out,
    bool *found, int64_t *ts);
/* -EINVAL when a version at c would be condemned by its family's GC
 * policy the moment it is written; 0 otherwise, or an error. */
int fs_version_condemned(struct fs *fs, const struct coord *c);
void fs_stat_file(struct fs *fs, fuse_ino_t ino, mode_t mode, uint64_t size,
    int64_t ts, struct stat *st);
/* Set st's times to ts (microseconds since the epoch). */
void fs_stat_set_time(struct stat *st, int64_t ts);
/* The newest time among cells (0 for none): a directory's mtime. */
int64_t fs_cells_newest(const struct bt_cell *cells, size_t count);
void fs_op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void fs_op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup);
void fs_op_forget_multi(fuse_req_t req, size_t count,
    struct fuse_forget_data *forgets);
void fs_op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);

/* fs_snapshot.c: a directory read whole. */
/* One entry of a directory. */
struct dent {
	char *name;
	enum node_kind kind;
	int64_t ts;
	uint64_t size;
	mode_t mode;		/* temporary files */
	struct timespec mtime;	/* temporary files */
	struct buf raw;		/* the row, family or qualifier bytes */
};
/* The entries of root, row, family or column directory dir, "." and
 * ".." first, in listing order; freed with fs_dents_free(). */
int fs_dir_snapshot(struct fs *fs, struct node *dir, struct dent **ents,
    size_t *count);
void fs_dents_free(struct dent *ents, size_t count);

/* End name with a NUL, in place when there is room (every listed row). */
static inline int
fs_name_terminate(struct buf *name)
{
	if (name->n < name->cap) {
		name->p[name->n++] = '\0';
		return 0;
	}
	return buf_append(name, "", 1);
}

/* fs_cache.c: the listings the kernel keeps (its rules 1-3). */
/* What a listing depends on. */
struct dir_version {
	uint64_t seq;	/* the store's last sequence number */
	uint64_t gen;	/* fs.pending_gen */
};
/* What a listing depends on, as of now. */
void fs_dir_version_get(struct fs *fs, struct dir_version *v);
/* The kernel holds a listing of dir that began at v, at time began
 * (CLOCK_MONOTONIC). */
void fs_listing_done(struct fs *fs, struct node *dir,
    const struct dir_version *v, const struct timespec *began);
/* Whether the kernel's listing of dir still shows it as it is at v (and,
 * where listings age, is younger than the cache timeout at now). */
bool fs_listing_fresh(struct fs *fs, struct node *dir,
    const struct dir_version *v, const struct timespec *now);
/* Rule 3: drop the kernel's listing of n if it may be stale; wherever
 * n's attributes are sent. */
void fs_listing_check(struct fs *fs, struct node *n);
/* Rule 2: drop every listing the kernel holds. */
void fs_listings_changed(struct fs *fs);
/* Tell the kernel to forget every node for which match(n, arg) holds
 * (called with fs->lock held; it may change n): its pages from offset
 * off on, or with off -1 its attributes alone. */
void fs_nodes_invalidate(struct fs *fs, bool (*match)(struct node *, void *),
    void *arg, off_t off);

/* fs_list.c: listings in progress. */
int fs_listings_new(struct fs *fs);
void fs_listings_free(struct fs *fs);
void fs_op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
    struct fuse_file_info *fi);
void fs_op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
    off_t off, struct fuse_file_info *fi);
void fs_op_releasedir(fuse_req_t req, fuse_ino_t ino,
    struct fuse_file_info *fi);

/* fs_dir.c again: directory changes. */
void fs_op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
    mode_t mode);
void fs_op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
/* Rename directory src to dst, both resolved by fs_child(): 0 or a
 * negative errno (fs_op_rename() replies). */
int fs_rename_dir(struct fs *fs, const struct coord *src,
    const struct coord *dst, unsigned int flags);

/* fs_control.c: the text of the control files. */
int fs_status_text(struct fs *fs, struct buf *out);
/* One line per tablet of table: "START END sstables=N bytes=B
 * memtable=M", bounds escaped, an empty bound "-". */
int fs_tablets_text(struct fs *fs, const char *table, struct buf *out);
/* The families of table, a blank line, and its usage lines
 * (bt_table_describe_usage()). */
int fs_schema_text(struct fs *fs, const char *table, struct buf *out);
/* The content of control file c (.status, .schema or .tablets). */
int fs_control_text(struct fs *fs, const struct coord *c, struct buf *out);
/*
 * The row of query row c with its query's filters (fs_query.h): 0 with its
 * cells as tabletctl's lookup prints them in *out (when not NULL), -ENOENT
 * when it has none, or an error (-EINVAL for a regex that does not
 * compile, -ERANGE for one over its limits).
 */
int fs_query_row_read(struct fs *fs, const struct coord *c, struct buf *out);

/* fs_file.c: open files, their reads, writes and commits. */
void fs_op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_create(fuse_req_t req, fuse_ino_t parent, const char *name,
    mode_t mode, struct fuse_file_info *fi);
void fs_op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
    struct fuse_file_info *fi);
void fs_op_write(fuse_req_t req, fuse_ino_t ino, const char *data,
    size_t size, off_t off, struct fuse_file_info *fi);
void fs_op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
    struct fuse_file_info *fi);
void fs_op_release(fuse_req_t req, fuse_ino_t ino,
    struct fuse_file_info *fi);
void fs_op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
    int to_set, struct fuse_file_info *fi);
/* The node a request on ino with fi (an open file, or NULL) is about,
 * referenced: the open file's, where it is now, since a file replaced
 * by a rename is still its descriptors'; else node_get(ino). */
struct node *fs_file_node_get(struct fs *fs, fuse_ino_t ino,
    const struct fuse_file_info *fi);

/* fs_rename.c: changes to names. */
void fs_op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name);
void fs_op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
    fuse_ino_t newparent, const char *newname, unsigned int flags);
void fs_op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
    mode_t mode, dev_t rdev);
void fs_op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
    const char *name);
void fs_op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
    const char *newname);


#endif
