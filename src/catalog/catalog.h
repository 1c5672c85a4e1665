/*
 * catalog.h - the store's catalog in SQLite (STORE/catalog.db): the schema
 * (tables, column families with their GC policies, locality groups), the
 * tablets of each table with their SSTable files and redo points, and the
 * store's counters.  Everything the engine must find again after a restart,
 * other than cell data, lives here.
 *
 * The database runs in WAL mode with synchronous=FULL: a call that changes
 * the catalog returns only after its transaction is durable, and each call
 * is one transaction, so the catalog is never seen half-changed.  The
 * schema version is kept in PRAGMA user_version; a database from an unknown
 * version is refused with BT_EFORMAT.
 *
 * A catalog handle serializes its calls with an internal mutex, so it may be
 * shared by threads.  Names are validated here (docs/design.md section 1):
 * table and family names are [A-Za-z0-9_.-], 1-64 bytes, not starting with '.';
 * locality group names the same.  Errors: -EINVAL (bad name or argument),
 * -EEXIST, BT_NOTFOUND (for lookups: the name is absent; an invalid name
 * is absent too), -ENOENT (for changes: the table, family, group, tablet or
 * file named does not exist), -ENOMEM, and for SQLite failures BT_ECORRUPT,
 * BT_EFORMAT, -EBUSY, -ENOSPC, -EROFS or -EIO (the errno SQLite saw when it
 * has one), each with a detail (bt_error_set).  The database layout is in
 * catalog/format.h.
 */
#ifndef TABLETFS_CATALOG_CATALOG_H
#define TABLETFS_CATALOG_CATALOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"
#include "util/slice.h"

struct env;

#define CATALOG_NAME_MAX 64
#define CATALOG_DEFAULT_GROUP "default"
#define CATALOG_DEFAULT_TABLET_SIZE (128ull << 20)

struct catalog;
struct catalog_tablet_spec;

/*
 * Who may read and write a table or a family (docs/design.md section 2,
 * "Permissions"): an owner, a group and the nine permission bits.  The
 * catalog stores CATALOG_ACCESS_STORE_OWNER for "the store's owner" (what
 * tables and families from before format version 4 have) and reads it
 * back as the uid and gid of the process that opened the catalog.
 */
#define CATALOG_ACCESS_STORE_OWNER	UINT32_MAX
/* In a change (catalog_access_set): leave this field as it is. */
#define CATALOG_ACCESS_KEEP		UINT32_MAX
#define CATALOG_ACCESS_MODE_MASK	0777u
#define CATALOG_ACCESS_DEFAULT_MODE	0755u

struct catalog_access {
	uint32_t uid;
	uint32_t gid;
	uint32_t mode;		/* within CATALOG_ACCESS_MODE_MASK */
};

/* Settings of a locality group (docs/design.md section 3, setgroup). */
struct catalog_group {
	char name[CATALOG_NAME_MAX + 1];
	uint32_t block_size;	/* bytes; default 64 KiB */
	bool compress;		/* Snappy; default on */
	bool bloom;		/* Bloom filter on rows; default on */
	bool in_memory;		/* keep blocks cached; default off */
};

struct catalog_family {
	char name[CATALOG_NAME_MAX + 1];
	char group[CATALOG_NAME_MAX + 1];
	char gc_policy[256];	/* canonical gc_policy text; "never" */
	/* The first sequence number of the family's life: entries of an
	 * earlier family of the same name (dropped) have lower ones. */
	uint64_t created_seq;
	/* Read back from the catalog; a family created takes its table's
	 * (what is given here is ignored). */
	struct catalog_access access;
};

/* A table and its whole schema, as one snapshot. */
struct catalog_table {
	uint64_t id;
	char name[CATALOG_NAME_MAX + 1];
	uint64_t tablet_size;
	struct catalog_access access;
	size_t family_count;
	struct catalog_family *families;
	size_t group_count;
	struct catalog_group *groups;	/* always includes "default" */
};

/* One tablet: the row range [start, end) of a table; an empty end means
 * "to the end of the table".  flushed_seq is the redo point: every mutation
 * of this tablet with a sequence number at or below it is in its SSTables,
 * so log replay skips it. */
struct catalog_tablet {
	uint64_t id;
	uint64_t table_id;
	struct buf start;
	struct buf end;
	uint64_t flushed_seq;
	bool auto_split;	/* start was chosen by a split for size */
};

/* One SSTable file, STORE/sst/NNNNNNNNNNNNNNNN.sst, of one locality group of
 * one tablet. */
struct catalog_file {
	uint64_t number;
	uint64_t tablet_id;
	char group[CATALOG_NAME_MAX + 1];
	uint64_t size;
	uint64_t entry_count;
	uint64_t max_seq;	/* highest sequence number in the file */
};

/* Fill a group with the defaults and the given name. */
void catalog_group_default(struct catalog_group *g, const char *name);

/* Whether name is a valid table, family or group name. */
bool catalog_name_valid(const char *name);

/*
 * Create a new catalog database at path in env; -EEXIST if one is there.
 * It is built beside path (path + ".tmp"), synced and renamed into place,
 * so path holds a complete catalog or nothing.
 */
int catalog_create(struct env *env, const char *path);

/*
 * Open an existing catalog in env, which must outlive the handle: every
 * byte goes through env (catalog/sqlite_env.h), so the fault env reaches
 * the catalog too.  -ENOENT if absent, BT_EFORMAT if path is not a catalog
 * of this version.  One handle per database at a time (the store's LOCK
 * ensures it): the connection runs in exclusive locking mode.
 */
int catalog_open(struct env *env, const char *path, struct catalog **out);
/* Accepts NULL.  A remote catalog's ops close runs here. */
void catalog_close(struct catalog *c);

/*
 * A remote catalog: the catalog of another process (the root's server
 * of a cell, which opened the database), reached through ops, which the
 * layer above implements over its transport; this module includes none
 * (docs/design.md section 5, "The catalog served").
 *
 * Each op has the contract of the catalog call of the same name below,
 * with arg for c: the same return codes (BT_NOTFOUND for a table or
 * tablet that is absent, the remote catalog's own errors as they are),
 * results allocated as that call allocates them (bt_malloc and friends,
 * so that catalog_table_free(), catalog_tablets_free() and bt_free()
 * release them), outputs set only on success and a detail with every
 * error; and also -EIO or -ETIMEDOUT, with a detail, when the other
 * process could not be reached or did not answer in time (a change may
 * then have been made or not).  The ops run without the handle's lock:
 * they must be thread-safe.  close releases arg, once, at
 * catalog_close().
 *
 * A remote handle serves exactly these calls, forwarded after the
 * argument checks the local calls make; every other catalog call on it
 * (schema changes, assignment, the location hierarchy, counters, checks)
 * returns -EOPNOTSUPP with a detail, and catalog_commit_unknown() is
 * false (the remote process knows its own commits).
 */
struct catalog_remote_ops {
	int (*table_get)(void *arg, const char *name,
	    struct catalog_table **out);
	int (*table_get_by_id)(void *arg, uint64_t id,
	    struct catalog_table **out);
	int (*table_list)(void *arg, char ***names, size_t *count);
	int (*tablets_list)(void *arg, uint64_t table_id,
	    struct catalog_tablet **out, size_t *count);
	int (*files_list)(void *arg, uint64_t tablet_id,
	    struct catalog_file **out, size_t *count);
	int (*next_number)(void *arg, uint64_t *number);
	/* The remote process applies it as catalog_tablet_apply_as() for
	 * the name the ops' owner was given: BT_ENOTSERVING when that
	 * server is not the tablet's. */
	int (*tablet_apply)(void *arg, uint64_t tablet_id,
	    const struct catalog_file *added, size_t added_count,
	    const uint64_t *removed, size_t removed_count,
	    uint64_t flushed_seq);
	int (*file_is_live)(void *arg, uint64_t number);
	int (*schema_version)(void *arg, uint64_t *version);
	/* The remote process applies it as catalog_tablet_replace_as()
	 * for the name the ops' owner was given: BT_ENOTSERVING when an
	 * old tablet is not that server's; the new tablets are its (each
	 * spec's server is ignored).  new_ids (count entries, may be NULL)
	 * receives the new tablets' ids.  No prepare crosses: the caller
	 * builds what it needs before and numbers it after. */
	int (*tablet_replace)(void *arg, const uint64_t *old_ids,
	    size_t old_count, const struct catalog_tablet_spec *specs,
	    size_t count, uint64_t *new_ids);
	void (*close)(void *arg);
};

/*
 * A catalog handle whose calls go to ops (copied; every op must be set,
 * else -EINVAL) with arg.  0 and *out, or -ENOMEM, and then close is
 * not called: arg stays the caller's.
 */
int catalog_open_remote(const struct catalog_remote_ops *ops, void *arg,
    struct catalog **out);
/* Whether c is a remote catalog. */
bool catalog_is_remote(struct catalog *c);
/* The arg that remote catalog c was opened with, when its ops' close is
 * close (how the layer above finds its own state from a handle); NULL
 * for a local catalog or another's remote one. */
void *catalog_remote_arg(struct catalog *c, void (*close)(void *arg));

/*
 * What a schema change's caller builds from the table as the change leaves
 * it, so that nothing it needs can fail once the change is durable: fn
 * runs inside the change's transaction, before its commit, with the
 * table's schema and its tablets in row order (the catalog's, lent for
 * the call).  A negative return rolls the change back and is the
 * change's result.  fn runs under the catalog's lock and must not call
 * the catalog.  The changes below take a NULL prepare for none.
 */
struct catalog_prepare {
	int (*fn)(void *arg, const struct catalog_table *table,
	    const struct catalog_tablet *tablets, size_t tablet_count);
	void *arg;
};

/*
 * What the caller of catalog_tablet_replace builds from the new tablets,
 * so that nothing it needs can fail once the replacement is durable: fn
 * runs inside the transaction, before its commit, with the new tablets'
 * ids (count of them, in the specs' order).  A negative return rolls the
 * replacement back and is its result.  fn runs under the catalog's lock
 * and must not call the catalog.
 */
struct catalog_replace_prepare {
	int (*fn)(void *arg, const uint64_t *new_ids, size_t count);
	void *arg;
};

/*
 * Create a table with its families (each with its group and GC policy
 * text, already validated by the caller; a family naming a group not in
 * groups gets that group with default settings; an empty group is
 * "default", an empty policy "never") and the groups' settings, and its
 * first tablets: one per range between the split rows, which are sorted
 * here, empty rows and duplicates dropped (none: one tablet covering
 * everything).  tablet_size 0 means CATALOG_DEFAULT_TABLET_SIZE.  A family
 * or group listed twice is -EINVAL.  *id (may be NULL) receives the id.
 */
int catalog_table_create(struct catalog *c, const char *name,
    uint64_t tablet_size, const struct catalog_family *families,
    size_t family_count, const struct catalog_group *groups,
    size_t group_count, const struct slice *splits, size_t split_count,
    uint64_t *id, const struct catalog_prepare *prep);
/*
 * The same, the table and its families owned as access says (NULL: by
 * the store's owner, mode CATALOG_ACCESS_DEFAULT_MODE, which is what
 * catalog_table_create gives).  -EINVAL for a mode outside
 * CATALOG_ACCESS_MODE_MASK.
 */
int catalog_table_create_as(struct catalog *c, const char *name,
    const struct catalog_access *access, uint64_t tablet_size,
    const struct catalog_family *families, size_t family_count,
    const struct catalog_group *groups, size_t group_count,
    const struct slice *splits, size_t split_count, uint64_t *id,
    const struct catalog_prepare *prep);

/*
 * Drop a table, its schema, its tablets and their file rows; the files
 * stop being named, so the file sweep (catalog_file_is_live) deletes them.
 */
int catalog_table_drop(struct catalog *c, const char *name);

/* Load a table's schema: 0 or BT_NOTFOUND.  Free with catalog_table_free. */
int catalog_table_get(struct catalog *c, const char *name,
    struct catalog_table **out);
int catalog_table_get_by_id(struct catalog *c, uint64_t id,
    struct catalog_table **out);
void catalog_table_free(struct catalog_table *t);

/* The names of all tables, sorted, as a NULL-terminated array of strings
 * (free each, then the array, with bt_free). */
int catalog_table_list(struct catalog *c, char ***names, size_t *count);

/* Add a family; its group is created with defaults if new. */
int catalog_family_create(struct catalog *c, const char *table,
    const struct catalog_family *f, const struct catalog_prepare *prep);
int catalog_family_drop(struct catalog *c, const char *table,
    const char *family, const struct catalog_prepare *prep);
int catalog_family_set_gc(struct catalog *c, const char *table,
    const char *family, const char *gc_policy,
    const struct catalog_prepare *prep);
/*
 * Change the owner, group or mode of a table (family NULL) or of one of
 * its families; a field of CATALOG_ACCESS_KEEP stays as it is.  -EINVAL
 * for a mode outside CATALOG_ACCESS_MODE_MASK, -ENOENT for a table or
 * family that does not exist.  Who may change them is the caller's
 * business.
 */
int catalog_access_set(struct catalog *c, const char *table,
    const char *family, const struct catalog_access *change,
    const struct catalog_prepare *prep);
/* Create or update a group's settings. */
int catalog_group_set(struct catalog *c, const char *table,
    const struct catalog_group *g, const struct catalog_prepare *prep);

/* The tablets of a table in row order; free with catalog_tablets_free.
 * BT_NOTFOUND if the table does not exist. */
int catalog_tablets_list(struct catalog *c, uint64_t table_id,
    struct catalog_tablet **out, size_t *count);
void catalog_tablets_free(struct catalog_tablet *t, size_t count);

/* The files of a tablet, newest (highest number) first; bt_free(*out)
 * (NULL when there are none).  BT_NOTFOUND if the tablet does not exist. */
int catalog_files_list(struct catalog *c, uint64_t tablet_id,
    struct catalog_file **out, size_t *count);

/*
 * Record a flush or compaction of one tablet, in one transaction: the added
 * files become named, the removed ones stop being named, and the tablet's
 * flushed_seq becomes flushed_seq if that is higher.  The added files must
 * already be complete, synced and in place; their group must exist in the
 * table (-ENOENT), number > 0.  A removed file the tablet does not name is
 * -ENOENT, an added one it names already -EEXIST; either way nothing
 * changes.  Several tablets may name one file (split children share their
 * parent's files).
 */
int catalog_tablet_apply(struct catalog *c, uint64_t tablet_id,
    const struct catalog_file *added, size_t added_count,
    const uint64_t *removed, size_t removed_count, uint64_t flushed_seq);
/*
 * The same for the tablet server named server, fenced (docs/design.md
 * section 5, "The catalog served"): the change is made only if the
 * tablet's assigned server (catalog_tablet_assign) is server, checked in
 * the change's own transaction, so that a server the master has given
 * the tablet up for cannot name files in it.  BT_ENOTSERVING, with a
 * detail naming the tablet's server, when it is assigned elsewhere or
 * to none; -EINVAL for an empty or bad name; otherwise as
 * catalog_tablet_apply().  Nothing changes on any error.
 */
int catalog_tablet_apply_as(struct catalog *c, const char *server,
    uint64_t tablet_id, const struct catalog_file *added,
    size_t added_count, const uint64_t *removed, size_t removed_count,
    uint64_t flushed_seq);

/* What one tablet gains in a bulk load (catalog_tablets_ingest). */
struct catalog_ingest {
	uint64_t tablet_id;
	const struct catalog_file *files;
	size_t file_count;
	uint64_t flushed_seq;	/* the redo point, if higher than the old */
};

/*
 * The store's counters of the highest sequence number and server stamp
 * given (catalog_meta_get), which an open starts above.
 */
#define CATALOG_META_LAST_SEQ	"last_seq"
#define CATALOG_META_LAST_STAMP	"last_stamp"

/*
 * The schema version: a counter that every schema change
 * (catalog_table_create(), _create_as(), catalog_table_drop(),
 * catalog_family_create(), _drop(), _set_gc(), catalog_group_set(),
 * catalog_access_set()) raises by one in its own transaction, so that
 * it changes whenever a table's schema, access or existence does; 0 for
 * a catalog that never had one (meta CATALOG_META_SCHEMA_VERSION; no
 * format change).  Tablet changes (splits, merges, flushes, assignment)
 * leave it alone.  A tablet server with a remote catalog polls it and
 * reads its tables again when it moved (docs/design.md section 5).  A
 * remote catalog serves it (CATALOG_SCHEMA_VERSION).
 */
#define CATALOG_META_SCHEMA_VERSION	"schema_version"
int catalog_schema_version(struct catalog *c, uint64_t *version);

/*
 * Record a bulk load (docs/design.md section 8) in one transaction: each
 * tablet of ins, all of table table_id (-ENOENT otherwise), names its
 * files and has its redo point raised to its flushed_seq if that is
 * higher, as catalog_tablet_apply() would do; and the counters
 * CATALOG_META_LAST_SEQ and CATALOG_META_LAST_STAMP are raised to
 * last_seq and last_stamp if those are higher.  The files must be
 * complete, synced and in place.  On any error nothing changes (a failed
 * COMMIT aside, whose outcome the catalog then says it does not know:
 * catalog_commit_unknown()).
 */
int catalog_tablets_ingest(struct catalog *c, uint64_t table_id,
    const struct catalog_ingest *ins, size_t count, uint64_t last_seq,
    uint64_t last_stamp);

/*
 * A fresh file number, higher than any number returned before (durable:
 * it survives a restart).  Numbers are shared by SSTables and log segments.
 */
int catalog_next_number(struct catalog *c, uint64_t *number);

/*
 * A fresh file number as catalog_next_number() gives, handed to the
 * tablet server named server ("HOST:PORT#EPOCH", as assigned; the root's
 * server asks it for CATALOG_NEXT_NUMBER): the same transaction records
 * the number as pending for server, durably, so that it is live
 * (catalog_file_is_live) and the root's sweep of sst/ spares the file
 * that server writes under it, renames into sst/ and only then names
 * (docs/design.md section 5, "The catalog served").  The record goes in
 * the transaction of any call that names the number in a tablet
 * (catalog_tablet_apply(), _apply_as(), _ingest(), _replace()), or with
 * every other of server's at catalog_server_gone().  -EINVAL for an
 * empty or bad name (as catalog_tablet_assign() takes).  A remote
 * catalog refuses it (-EOPNOTSUPP): its catalog_next_number() is this
 * call at the root, for the name its ops were given.
 */
int catalog_next_number_for(struct catalog *c, const char *server,
    uint64_t *number);
/*
 * Forget every number pending for server, in one transaction: the
 * master says so once it has reassigned the tablets of a server it gave
 * up for dead (CATALOG_SERVER_GONE), so that the next sweep deletes the
 * files that server wrote and never named.  0 whether it had any or
 * not; -EINVAL for an empty or bad name.  A number named by then stays
 * live as named.
 */
int catalog_server_gone(struct catalog *c, const char *server);

/* Whether a file number is named by any tablet or pending
 * (catalog_next_number_for); 0 (no), 1 (yes); an error when the catalog
 * cannot say (a commit failed since the open). */
int catalog_file_is_live(struct catalog *c, uint64_t number);
/* Whether a COMMIT failed since the open, so that what it changed may be
 * durable all the same (its sync succeeded and a later step failed): the
 * catalog's state is then known again only once it is opened again. */
bool catalog_commit_unknown(struct catalog *c);

/* Store-wide counters kept durably: get returns 0 and the value, or 0 and
 * def when the key was never set.  Keys follow the name rules; the key
 * "last_number" belongs to catalog_next_number. */
int catalog_meta_get(struct catalog *c, const char *key, uint64_t def,
    uint64_t *value);
int catalog_meta_set(struct catalog *c, const char *key, uint64_t value);

/* ==== The location hierarchy and tablet assignment (catalog_location.c) ====
 *
 * Bigtable's three levels (format.h has the layout): level 0, the root
 * location record, names the root tablet; level 1, the root tablet, has a
 * row per METADATA tablet keyed by its end key; level 2, each METADATA
 * tablet, has a row per user tablet keyed by (table id, end row), with the
 * tablet's range and assigned server.  SQLite triggers keep levels 1 and 2
 * in step with the tablets, in the same transaction as every change to
 * them (table create and drop, catalog_tablet_replace, any DELETE/INSERT
 * of tablet rows), and split a METADATA tablet that passes meta
 * CATALOG_META_METADATA_ROWS rows (default CATALOG_METADATA_TABLET_ROWS;
 * catalog_meta_set it, at least 2, before tablets are added: it applies
 * as rows arrive).  METADATA tablets merge only when empty.  So a crash
 * leaves the old hierarchy or the new one, never a mix.
 *
 * A client finds the tablet of (table, row) with one call per level, so
 * it can count the levels it walked and cache what it learned, or with
 * catalog_location_walk() for all three in one transaction.  Between
 * separate calls the hierarchy may change; a step that was handed a
 * METADATA tablet that no longer covers the key returns BT_STALE, and the
 * client walks again from the root.  Same locking and errors as every
 * catalog call.
 */

#define CATALOG_SERVER_MAX 255	/* bytes of a server name */

/* A user tablet's location row, as level 2 holds it. */
struct catalog_location {
	uint64_t tablet_id;
	uint64_t table_id;
	uint64_t meta_tablet_id;	/* the METADATA tablet holding the row */
	struct buf start;		/* [start, end); empty start: the first */
	struct buf end;			/* empty: to the end of the table */
	char server[CATALOG_SERVER_MAX + 1];	/* "" when unassigned */
};

/* One tablet of the METADATA table: the root (parent_id 0) or a METADATA
 * tablet, its end key (end_table UINT64_MAX for the last: the end of the
 * key space), its row count and server. */
struct catalog_meta_tablet {
	uint64_t id;
	uint64_t parent_id;
	uint64_t end_table;
	bool end_last;
	struct buf end_row;
	uint64_t row_count;
	char server[CATALOG_SERVER_MAX + 1];
};

/* What a replacement tablet starts with (catalog_tablet_replace). */
struct catalog_tablet_spec {
	struct slice start;		/* [start, end), empty end: to the end */
	struct slice end;
	uint64_t flushed_seq;		/* its redo point */
	const struct catalog_file *files;	/* named from the start */
	size_t file_count;
	const char *server;		/* NULL or "": unassigned */
	bool auto_split;		/* start chosen by a split for size */
};

/* Init before use, release after (accepts a released location). */
void catalog_location_init(struct catalog_location *loc);
void catalog_location_release(struct catalog_location *loc);

/* Level 0: the root tablet's id.  0 or an error (BT_ECORRUPT if the
 * record is missing). */
int catalog_location_root(struct catalog *c, uint64_t *root_id);

/*
 * Level 1: in the root tablet root_id, the METADATA tablet whose range
 * covers row of table_id (the first METADATA tablet ending above
 * (table_id, 0, row)).  0 and *meta_tablet_id; BT_STALE if root_id is no
 * longer the root tablet.
 */
int catalog_location_metadata(struct catalog *c, uint64_t root_id,
    uint64_t table_id, struct slice row, uint64_t *meta_tablet_id);

/*
 * Level 2: in METADATA tablet meta_tablet_id, the location of the tablet
 * holding row of table_id (the first location key above (table_id, 0,
 * row)), into *out (init'ed by the caller, who releases it; filled on 0,
 * unspecified otherwise).  BT_STALE if that METADATA tablet no longer
 * exists or does not cover the key (walk again from the root);
 * BT_NOTFOUND if no such table exists; BT_ECORRUPT if the hierarchy is
 * broken (catalog_location_check says how).
 */
int catalog_location_find(struct catalog *c, uint64_t meta_tablet_id,
    uint64_t table_id, struct slice row, struct catalog_location *out);

/*
 * All three levels in one read transaction (so none can be stale): 0 and
 * *out (as for catalog_location_find), or BT_NOTFOUND (no such table), or
 * an error.  *levels (may be NULL) receives the levels walked (3 unless
 * an error stopped the walk), for the client's counters.
 */
int catalog_location_walk(struct catalog *c, uint64_t table_id,
    struct slice row, struct catalog_location *out, int *levels);

/*
 * Check the hierarchy against the tablets, in one read transaction: one
 * root record naming the one root tablet; every other METADATA-table
 * tablet a child of it, exactly one of them ending the key space, each
 * with its true row count; every tablet with exactly one location row,
 * equal to it, in the METADATA tablet covering its key, with no METADATA
 * end inside its span; no location row without a tablet; the tablets of
 * each table tile its row space.  Each problem is passed to report (may
 * be NULL) as one line.  Returns the number of problems (0: consistent)
 * or a negative error.
 */
int catalog_location_check(struct catalog *c,
    void (*report)(void *arg, const char *problem), void *arg);

/*
 * Check the catalog database itself, in one read transaction: every
 * page's checksum, read from the file directly (sqlite_env_check: free and
 * superseded pages too), then SQLite's PRAGMA quick_check through the
 * connection, which reads every page in use (from the WAL where it is
 * newer, verified there against the frame checksum) and checks the
 * b-trees.  Each problem goes to report (may be NULL) as one line, e.g.
 * "page 7: checksum mismatch".  Returns the number of problems (0: sound)
 * or a negative error.
 */
int catalog_check(struct catalog *c,
    void (*report)(void *arg, const char *problem), void *arg);

/* The METADATA table's tablets, the root first, then by end key; free
 * with catalog_meta_tablets_free. */
int catalog_meta_tablets_list(struct catalog *c,
    struct catalog_meta_tablet **out, size_t *count);
void catalog_meta_tablets_free(struct catalog_meta_tablet *m, size_t count);

/*
 * Assignment, the master's duty: record that server (printable, 1 to
 * CATALOG_SERVER_MAX bytes; "" unassigns) serves a user tablet, or a root
 * or METADATA tablet (catalog_meta_tablet_assign).  -ENOENT if there is
 * no such tablet, -EINVAL for a bad name.  Split children are assigned as
 * catalog_tablet_replace is told.
 */
int catalog_tablet_assign(struct catalog *c, uint64_t tablet_id,
    const char *server);
int catalog_meta_tablet_assign(struct catalog *c, uint64_t meta_tablet_id,
    const char *server);

/* The locations of the user tablets no server is assigned to, by key
 * (table id, then end row); each released and the array freed with
 * catalog_locations_free. */
int catalog_tablets_unassigned(struct catalog *c,
    struct catalog_location **out, size_t *count);
void catalog_locations_free(struct catalog_location *locs, size_t count);

/* ==== The master's assignment and the clients' locations (catalog_assign.c)
 *
 * What the root's server answers the master (CATALOG_ASSIGN,
 * CATALOG_ASSIGNMENTS) and the clients (LOCATE), docs/design.md section
 * 5, "Tablets one by one", step 5.  Same locking and errors as every
 * catalog call; a remote catalog refuses them (-EOPNOTSUPP).
 */

/*
 * What a compare-and-set of a tablet's assignment does to its recovery
 * mark (tablets.recovering, format.h version 6): the master sets it when
 * it gives a tablet out to be recovered from the logs of servers that
 * are not live, and clears it once it has seen that server serve the
 * tablet.  While it is set, records of the tablet may be in a log that
 * no live server's counter covers (catalog_table_replayed()).
 */
enum catalog_recovery {
	CATALOG_RECOVERY_KEEP,	/* the mark as it is */
	CATALOG_RECOVERY_BEGIN,	/* set it, with the new server */
	CATALOG_RECOVERY_DONE,	/* clear it: server recovered the tablet */
};

/*
 * Compare-and-set of a user tablet's assignment, in one transaction:
 * assign tablet_id to server ("" unassigns) if it is now assigned to
 * expected ("" for none), so that two masters (or one master's stale
 * round) cannot both move a tablet, and set or clear its recovery mark
 * as rec says.  0 (also when server is expected: then only the mark
 * changes); -ESTALE, with a detail naming the tablet's server, when
 * that is not expected, and nothing changes; -ENOENT when there is no
 * such tablet; -EINVAL for a bad name (either), or for
 * CATALOG_RECOVERY_DONE with server other than expected or "".
 */
int catalog_tablet_assign_if(struct catalog *c, uint64_t tablet_id,
    const char *server, const char *expected, enum catalog_recovery rec);

/* One user tablet's assignment (catalog_assignments_list). */
struct catalog_assignment {
	uint64_t tablet_id;
	uint64_t table_id;
	char table[CATALOG_NAME_MAX + 1];	/* its table's name */
	char server[CATALOG_SERVER_MAX + 1];	/* "" when unassigned */
	bool recovering;			/* its recovery mark */
};

/* Every user tablet with its table and server, by table id, then row,
 * in one read transaction: 0 with *out (bt_free() it; NULL when there
 * are none) and *count, or an error. */
int catalog_assignments_list(struct catalog *c,
    struct catalog_assignment **out, size_t *count);

/*
 * Whether every record of table's tablets is under a number that the
 * servers named (count names, as tablets are assigned) have given or
 * flushed: each tablet is assigned to one of them, and none carries a
 * recovery mark.  Then 0 and *flushed, the highest flushed_seq of the
 * tablets (a record replayed by a recovery that is done is at most
 * that).  Otherwise -EAGAIN, with a detail naming the first tablet that
 * is not (unassigned, assigned to a name not given, or still being
 * recovered): a dead server's log may hold records of it numbered above
 * every named server's counter.  -ENOENT for no such table.  One read
 * transaction.  (A family made on a cell whose tablets are served one
 * by one starts above both: server_family_create().)
 */
int catalog_table_replayed(struct catalog *c, const char *table,
    const char *const *servers, size_t count, uint64_t *flushed);

/*
 * The location of the tablet holding row of table_id, then those of the
 * tablets after it in row order, at most max in all (max >= 1, else
 * -EINVAL), in one read transaction: what catalog_location_walk()
 * finds, and level 2's next rows of the table.  0 with *out (free with
 * catalog_locations_free(); count >= 1 entries, fewer than max when the
 * table ends), BT_NOTFOUND when there is no such table, or an error.
 */
int catalog_locations_from(struct catalog *c, uint64_t table_id,
    struct slice row, size_t max, struct catalog_location **out,
    size_t *count);

/*
 * Replace tablets by others in one transaction: the split (1 -> 2), the
 * merge (2 -> 1), or any n -> m.  old_ids name old_count >= 1 tablets of
 * one table whose ranges are contiguous (in any order in the array);
 * specs, count >= 1 of them in row order, must tile exactly the same
 * range [first old start, last old end): each non-empty, each ending
 * where the next starts.  The old tablets and their file rows are
 * deleted, then the new ones inserted, each with its spec's redo point,
 * server and file rows (a file may be named by several children; its
 * group must exist in the table); the triggers move the location rows
 * and split METADATA tablets as needed.  new_ids (count entries, may be
 * NULL) receives the new tablets' ids in order.  -ENOENT (an old tablet
 * or a group missing), -EINVAL (not one table, not contiguous, or specs
 * that do not tile the range), -EEXIST; on any error nothing changes.
 * The files must be complete and synced before the call, as for
 * catalog_tablet_apply; the old tablets' files that no new tablet names
 * stop being named.  prep (NULL: none) runs inside the transaction once
 * the new tablets have their ids, before the commit (see
 * struct catalog_replace_prepare).
 *
 * On a remote catalog it is the remote's tablet_replace (struct
 * catalog_remote_ops): fenced for the name its ops were given, and prep
 * must be NULL (-EINVAL): nothing runs inside the root's transaction.
 */
int catalog_tablet_replace(struct catalog *c, const uint64_t *old_ids,
    size_t old_count, const struct catalog_tablet_spec *specs, size_t count,
    uint64_t *new_ids, const struct catalog_replace_prepare *prep);
/*
 * The same for the tablet server named server, fenced as
 * catalog_tablet_apply_as() is (docs/design.md section 5, "The catalog
 * served"): in the replacement's own transaction every old tablet must
 * be assigned to server, else BT_ENOTSERVING with a detail naming the
 * tablet and its server, and nothing changes; the new tablets are
 * assigned to server, whatever the specs say.  -EINVAL for an empty or
 * bad name; otherwise as catalog_tablet_replace() on a local catalog.
 * What the root's server answers CATALOG_TABLET_REPLACE with: a split
 * by the server of the tablet.
 */
int catalog_tablet_replace_as(struct catalog *c, const char *server,
    const uint64_t *old_ids, size_t old_count,
    const struct catalog_tablet_spec *specs, size_t count,
    uint64_t *new_ids, const struct catalog_replace_prepare *prep);

#endif
