/*
 * server.h - the tablet server of one store: it owns the store lock, the
 * catalog, the commit log, every table's tablets and the background thread
 * that flushes and compacts them (docs/design.md section 4, Bigtable 5.3),
 * and performs the master's housekeeping that a single process needs
 * (sweeping files the catalog no longer names).
 *
 * Write path: validate; queue in the write queue, whose leader gives the
 * group its sequence numbers and stamps, appends it to the commit log with
 * one write (and one sync), applies it to the memtables and publishes it
 * to readers, in queue order (docs/design.md section 7, W1-W3);
 * read-modify-writes hold the row's lock across their read and their
 * commit (W4).  A mutation is acknowledged only once it is in the log, and
 * visible to reads only once every earlier mutation is.
 *
 * All functions are thread-safe.  Tables are named by their catalog name,
 * or, in the calls on one row, by a reference from server_table_ref();
 * errors as in api/tabletfs.h.
 */
#ifndef TABLETFS_SERVER_SERVER_H
#define TABLETFS_SERVER_SERVER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "catalog/catalog.h"
#include "tablet/cells.h"
#include "tablet/mutation.h"
#include "tablet/tablet.h"
#include "util/env.h"
#include "util/slice.h"

#define SERVER_MAX_ROW		(64u << 10)
#define SERVER_MAX_QUALIFIER	(16u << 10)

struct server_options {
	uint64_t memtable_size;		/* 0: 64 MiB */
	uint64_t block_cache_size;	/* 0: 64 MiB */
	uint64_t max_cell;		/* 0: 64 MiB */
	bool sync_always;
	bool read_only;
	struct env *env;		/* NULL: the local filesystem */
	/* One line for each damage recovery skips (bt_options.notice);
	 * NULL: stderr. */
	void (*notice)(void *arg, const char *line);
	void *notice_arg;
	/*
	 * One tablet server of a cell (docs/design.md section 5, "Tablets
	 * one by one"; server_cell.c), selected by dir: NULL opens the
	 * whole store as today's single server does.
	 *
	 * name: this server's name as the master assigns tablets to it,
	 * "HOST:PORT#EPOCH" (1 to CATALOG_SERVER_MAX printable bytes, no
	 * blank); required with dir (-EINVAL), ignored without (the host
	 * name is used).  The tablets this server makes (a table created,
	 * the children of its splits and merges) are assigned to it.
	 *
	 * dir: this server's own directory, relative to the store's path
	 * ("servers/127.0.0.1_7001.5": no "..", no leading '/'), made with
	 * its log/ and tmp/ as needed, each synced into its parent.  Its
	 * log starts there empty: one that holds segments is refused
	 * (-EEXIST; a server runs in a new epoch's directory, and the
	 * master recovers the tablets of an old one from it).  Every tablet
	 * opens not served until server_tablet_load() or
	 * server_tablet_recover(); STORE/log is not replayed (the master
	 * recovers it as a former server's log); no tablet is assigned at
	 * open; the sweep takes this server's tmp/ and never another's.
	 * Close flushes what it serves and removes its log segments when
	 * clean, and leaves the directory.
	 *
	 * catalog: NULL opens STORE/catalog.db and takes STORE/LOCK, as
	 * the root's server (which serves the catalog to the others) does,
	 * and which alone sweeps sst/.  Else this catalog is used (a
	 * remote one, catalog_client_open()), no lock is taken, and the
	 * server splits the tablets it serves (by size, and server_split())
	 * through the remote catalog's fenced replace, but never merges
	 * one nor changes the schema (as the remote catalog refuses:
	 * -EOPNOTSUPP).  Only with dir (-EINVAL otherwise).
	 * server_open() owns it from the call on, whatever it returns:
	 * server_close() closes it, and so does a failed open.
	 */
	const char *name;
	const char *dir;
	struct catalog *catalog;
};

struct server;
struct server_scan;
struct server_table;

/* Create an empty store at path (see bt_store_create). */
int server_create(const char *path, struct env *env);
int server_open(const char *path, const struct server_options *opts,
    struct server **out);
/* Flush, stop, unlock, free.  Accepts NULL. */
int server_close(struct server *s);

/* ---- Schema ---- */
/* A table owned as access says (NULL: by the store's owner, 0755). */
int server_table_create(struct server *s, const char *name,
    const struct catalog_access *access,
    const struct catalog_family *families, size_t family_count,
    const struct slice *splits, size_t split_count, uint64_t tablet_size);
int server_table_drop(struct server *s, const char *name);
int server_table_list(struct server *s, char ***names, size_t *count);
/* The table's schema from the catalog; free with catalog_table_free(). */
int server_table_get(struct server *s, const char *name,
    struct catalog_table **out);
/* A family made: its created_seq is the next number this server gives,
 * or f->created_seq when that is larger (on a cell, above what the
 * other servers numbered, whose tablets may hold entries of a dropped
 * family of the name), and this server numbers above it from now on. */
int server_family_create(struct server *s, const char *table,
    const struct catalog_family *f);
/*
 * The same for a cell's client, at the root's server: servers (count)
 * name the other servers whose last numbers f->created_seq is above.
 * The family is made only when no log may still replay a record of the
 * table above those and this server's own (catalog_table_replayed(),
 * with this server's name; -EAGAIN, naming the tablet, otherwise), and
 * starts above the tablets' flushed_seq as well.  Off a cell, as
 * server_family_create().
 */
int server_family_create_after(struct server *s, const char *table,
    const struct catalog_family *f, const char *const *servers,
    size_t count);
int server_family_drop(struct server *s, const char *table,
    const char *family);
int server_family_set_gc(struct server *s, const char *table,
    const char *family, const char *gc_policy);
int server_group_set(struct server *s, const char *table,
    const struct catalog_group *g);
/* Change a table's (family NULL) or a family's owner, group or mode
 * (catalog_access_set()); in memory once the catalog has it. */
int server_access_set(struct server *s, const char *table,
    const char *family, const struct catalog_access *change);
/*
 * Who may use table and, when family is not NULL, that family: from
 * memory, as the catalog last committed it (no catalog read: cheap
 * enough for every attribute the mount sends).  0, or -ENOENT (no such
 * table or family).  *family_access is untouched when family is NULL.
 */
int server_access_get(struct server *s, const char *table,
    const char *family, struct catalog_access *table_access,
    struct catalog_access *family_access);
/* The table's and every family's, names and all, in the schema's order:
 * *names and *families (count of each) freed with bt_free(). */
int server_access_list(struct server *s, const char *table,
    struct catalog_access *table_access, char (**names)[CATALOG_NAME_MAX + 1],
    struct catalog_access **families, size_t *count);

/* ---- Assignment (a cell's tablet servers: server_assign.c) ---- */

/*
 * Stop serving tablet id of table, as a tablet server does when the
 * master moves the tablet (Bigtable 5.2): flush its memtable while it
 * still serves, then in the apply turn (writers wait) flush what came
 * meanwhile and put a tablet that serves nothing in its place
 * (tablet_serving()), so that the catalog's redo point covers every write
 * it took and its next server needs none of this server's log.  From
 * then on calls on its rows fail with BT_ENOTSERVING, and it is neither
 * split nor merged.  0 (also when it was not served), -ENOENT (no such
 * table, or no such tablet in it), -EROFS (a read-only store), or the
 * flush's error, and the tablet then serves on.
 */
int server_tablet_unload(struct server *s, const char *table, uint64_t id);
/*
 * Serve tablet id of table again, opened from the catalog (its files and
 * redo point).  Records of it in this server's log above the redo point
 * are not replayed: that is for a tablet whose unload flushed them.
 * 0 (also when it was served), -ENOENT, -EROFS, or the open's error.
 */
int server_tablet_load(struct server *s, const char *table, uint64_t id);
/*
 * Serve tablet id of table, not served here, recovered from the commit
 * logs of other servers in log_dirs (count >= 1 directories of
 * segments; Bigtable 5.3: the tablet of a server that died): opened
 * from the catalog, with every record of its rows in those segments
 * above its redo point replayed (damage skipped with a notice, as at
 * open, and nothing in log_dirs changed), directory by directory, and
 * then flushed once, so that its redo point covers them; this server's
 * sequence numbers and stamps then go on above every record read.  The
 * order of the directories does not matter: a tablet's records above
 * its redo point are all in the log of the one server that served it
 * last.  On a cell's server each is a path below the store (relative,
 * no "..", as server_options.dir; else -EINVAL); elsewhere it is taken
 * as the env names it.  0, -EINVAL (no directory), -ENOENT, -EBUSY (it
 * is served here), -EROFS, or a replay's or the flush's error (it stays
 * not served).
 *
 * On a cell's server, load and recover of a table or a tablet id it
 * does not know (made, split or merged at the root's server since it
 * last read the table) read the table again from the catalog first:
 * its schema, and its tablets, those served here kept as they are and
 * the others not served.
 */
int server_tablet_recover(struct server *s, const char *table, uint64_t id,
    const char *const *log_dirs, size_t count);
/* server_tablet_recover() of tablets ids (n >= 1) of table from one pass
 * over the logs (the paper's recovery sorted by tablet): all served
 * when it returns 0, none otherwise; -EINVAL for an id named twice. */
int server_tablets_recover(struct server *s, const char *table,
    const uint64_t *ids, size_t n, const char *const *log_dirs,
    size_t count);

/* ---- Data ---- */

/*
 * Every call on one row names the tablet the caller believes serves it,
 * as found in its location cache (0: no belief, the server routes the row
 * itself).  When that tablet no longer serves the row (it was split or
 * merged away) the call does nothing and returns BT_STALE; the caller
 * walks the location hierarchy again (server_locate) and retries.
 */

/* The catalog id of a table: 0, or -ENOENT. */
int server_table_id(struct server *s, const char *table, uint64_t *id);

/* Walk the catalog's location hierarchy for (table, row): the tablet's id
 * and range in *loc (catalog_location_release it), the levels walked in
 * *levels. */
int server_locate(struct server *s, const char *table, struct slice row,
    struct catalog_location *loc, int *levels);

/*
 * The table named name, referenced, and its catalog id in *id, for a
 * caller that makes calls on rows of the table (they take t) and needs
 * its id too (for its location cache): one lookup of the name, not one
 * per call.  0 or -ENOENT; BT_ENOTSERVING instead on a cell's server
 * whose catalog is remote (it knows only the tables it serves tablets
 * of).  server_table_unref() releases it.  A table dropped while
 * referenced stays readable and writable by its holder, as during any
 * call on it.
 */
int server_table_ref(struct server *s, const char *name,
    struct server_table **out, uint64_t *id);
/*
 * Whether the table named name has id here, for a call on its rows that
 * names the id the caller located: 0 when it has, or when this server
 * knows no table of that name (the call answers that itself), else
 * BT_ENOTSERVING with a detail; on a server whose catalog is remote the
 * schema is then polled at the background thread's next round, as this
 * server may not yet know that the table was dropped and made again.
 */
int server_table_id_check(struct server *s, const char *name, uint64_t id);
/*
 * server_table_id_check() that keeps what it found, so that the call need
 * not look the table up again: 0 and in *out a reference to the table
 * (server_table_unref() it) when it has id here, 0 and *out NULL when
 * this server knows no table of that name (the call answers that
 * itself), else BT_ENOTSERVING as server_table_id_check().
 */
int server_table_id_hold(struct server *s, const char *name, uint64_t id,
    struct server_table **out);
/* Accepts NULL. */
void server_table_unref(struct server_table *t);

/*
 * A stamp seen elsewhere in the cell (a client's, from another server's
 * reply): every stamp this server gives after this returns is above it
 * (W3), as a Lamport clock's receive, so that writes that follow one
 * another through a client are stamped in order whatever the servers'
 * clocks say.  0 and the server's last stamp, given or observed, in
 * *last (when not NULL); -ERANGE with a detail for a stamp more than
 * SERVER_STAMP_AHEAD_US ahead of this server's clock (clocks that far
 * apart are a fault to fix, not to stamp by).  Thread-safe; stamp <= 0
 * only reads the last stamp.
 */
#define SERVER_STAMP_AHEAD_US ((int64_t)3600 * 1000000)
int server_stamp_observe(struct server *s, int64_t stamp, int64_t *last);

/*
 * Apply a row mutation atomically.  Puts with ts MUTATION_TS_SERVER get the
 * server's stamp (returned in *stamp if not NULL); ops is modified to hold
 * the final timestamps.
 */
int server_mutate(struct server *s, struct server_table *t, uint64_t tablet,
    struct slice row, struct mutation *ops, size_t count, bool sync,
    int64_t *stamp);

/* One row of a batch (server_mutate_rows()). */
struct server_row_mutation {
	struct server_table *t;
	struct slice row;
	struct mutation *ops;	/* modified as server_mutate()'s */
	size_t count;
	int64_t stamp;		/* out: the row's server stamp */
};

/*
 * Apply each row's mutation atomically, the rows independently, in the
 * tablets that serve them when they are applied (no tablet is named: a
 * batch is never stale).  Every row is checked first; one that fails its
 * check (results[i] < 0) is left out, and the others are logged in one
 * write group, with one append and at most one sync, so that a failure of
 * that append or sync fails them all alike and none becomes visible.
 * Rows of one key are applied in their order in the batch.  results[i]
 * receives 0 or row i's error; returns 0 when every row was applied,
 * else the first failed row's error (its detail set).
 */
int server_mutate_rows(struct server *s, struct server_row_mutation *rows,
    size_t n, bool sync, int *results);

/* Check-and-mutate; expected NULL means "the column has no version";
 * expected_ts >= 0 also requires the newest version to have that stamp. */
int server_check_and_mutate(struct server *s, struct server_table *t,
    uint64_t tablet, struct slice row, struct slice family,
    struct slice qualifier,
    const struct slice *expected, int64_t expected_ts, struct mutation *ops,
    size_t count, bool sync, bool *applied);

int server_increment(struct server *s, struct server_table *t,
    uint64_t tablet, struct slice row, struct slice family,
    struct slice qualifier, int64_t delta, bool sync, int64_t *result,
    int64_t *stamp);
int server_append(struct server *s, struct server_table *t, uint64_t tablet,
    struct slice row, struct slice family, struct slice qualifier,
    struct slice suffix, bool sync, int64_t *stamp);
/* Put value as the column's newest version: stamped with the server's
 * clock, or one above the newest version when that is later. */
int server_put_newest(struct server *s, struct server_table *t,
    uint64_t tablet, struct slice row, struct slice family,
    struct slice qualifier, struct slice value, bool sync, int64_t *stamp);

/* Move version src_ts of one column to another place in the row (dst_ts
 * may be MUTATION_TS_SERVER) as one atomic mutation; -ENOENT if there is no
 * such version. */
int server_move_version(struct server *s, struct server_table *t,
    uint64_t tablet, struct slice row, struct slice src_family,
    struct slice src_qualifier, int64_t src_ts, struct slice dst_family,
    struct slice dst_qualifier, int64_t dst_ts, bool sync, int64_t *stamp);

/*
 * Move a column, or every column of a family, to another column or family
 * of the row as one atomic mutation (bt_move_column()): src and dst both
 * name a qualifier, or neither does.  -ENOENT when src has no version,
 * -ENOTEMPTY when dst has one, -EFBIG when the values come to more than
 * max_cell bytes or the move would not fit one commit log record; onto
 * itself, nothing changes.
 */
int server_move_column(struct server *s, struct server_table *t,
    uint64_t tablet, struct slice row, const struct cells_column *src,
    const struct cells_column *dst, bool sync);

/* Read a row of table t (from server_table_ref()): 0 or BT_NOTFOUND. */
int server_read_row(struct server *s, struct server_table *t,
    uint64_t tablet, struct slice row, const struct cells_filter *filter,
    struct cells_row *out);

/*
 * Resolved rows kept between reads, so that their buffers' growth is
 * reused rather than allocated again (the API's point reads, the
 * server's read-modify-writes): a reader takes a free slot by its flag,
 * or uses a row of its own when all are taken, and a row that grew past
 * SERVER_ROW_POOL_KEEP bytes has its buffers freed before it goes back.
 * Thread-safe without a lock.
 */
#define SERVER_ROW_POOL_SLOTS	4
#define SERVER_ROW_POOL_KEEP	((size_t)64 << 10)
struct server_row_pool {
	atomic_flag taken[SERVER_ROW_POOL_SLOTS];
	struct cells_row rows[SERVER_ROW_POOL_SLOTS];
};
void server_row_pool_init(struct server_row_pool *p);
void server_row_pool_release(struct server_row_pool *p);
/* A pooled row, or own (initialized) when every slot is taken. */
struct cells_row *server_row_pool_take(struct server_row_pool *p,
    struct cells_row *own);
/* Give back r, from server_row_pool_take(p, own). */
void server_row_pool_give(struct server_row_pool *p, struct cells_row *r,
    struct cells_row *own);

/* A scan of rows [start, end) (empty end: to the end of the table); the
 * filter's arrays must outlive the scan. */
int server_scan_open(struct server *s, const char *table, struct slice start,
    bool start_exclusive, struct slice end, const struct cells_filter *filter,
    struct server_scan **out);
/* 0 with the next row, or BT_DONE.  Values that out->lend_values let
 * it lend (tablet_scan_next()) stay valid until the next call on sc or
 * server_scan_close(). */
int server_scan_next(struct server_scan *sc, struct cells_row *out);
void server_scan_close(struct server_scan *sc);

/* ---- Bulk load (server_bulk.c; docs/design.md section 8) ---- */

struct server_bulk_options {
	size_t memory_budget;	/* bytes of cells sorted in memory; 0: 64 MiB */
};

struct server_bulk_stats {
	uint64_t cells;		/* written (a cell given twice counts once) */
	uint64_t files;		/* SSTables added */
	uint64_t tablets;	/* tablets that gained files */
	uint64_t seq;		/* the load's sequence number */
	int64_t stamp;		/* the stamp of cells given none */
};

struct server_bulk;

/*
 * A bulk load into table: cells given in any order with server_bulk_put()
 * (sorted in memory_budget bytes, spilling sorted runs to tmp/), written
 * by server_bulk_commit() as SSTables added to the table's tablets and
 * named in one catalog transaction, without the commit log: a crash
 * leaves the store as before the commit or with every cell of the load,
 * and the load's cells sit above every write made before the commit
 * (older deletes do not mask them; a version of the same timestamp is
 * replaced) and below every write after it.  Of cells given twice (the
 * same row, column and timestamp) the last is kept.  Cells with ts
 * MUTATION_TS_SERVER get one stamp for the whole load, taken by the open.
 *
 * The commit flushes the memtables first, and holds the store's work
 * lock and apply turn throughout its merge and writes: meanwhile no
 * flush, compaction or split runs and other writers of this process
 * wait.  server_bulk_free() after a commit or instead of one (which
 * abandons the load) removes the runs.  One thread uses a load at a time;
 * several loads may be open, and commit one after the other.
 *
 * Errors: -EROFS, -ENOENT (no such table or family), -EINVAL and -EFBIG
 * (put: as server_mutate() checks a put; the load goes on without that
 * cell), -ENOSPC and the env's errors (the load is failed: a later put or
 * the commit returns the error again, and the store is unchanged).
 */
int server_bulk_open(struct server *s, const char *table,
    const struct server_bulk_options *opts, struct server_bulk **out);
int server_bulk_put(struct server_bulk *b, struct slice row,
    struct slice family, struct slice qualifier, int64_t ts,
    struct slice value);
/* Commit the load; *out (may be NULL) receives its figures.  Once. */
int server_bulk_commit(struct server_bulk *b, struct server_bulk_stats *out);
/* Accepts NULL. */
void server_bulk_free(struct server_bulk *b);

/* ---- Administration ---- */

/*
 * The tablets of a table in row order: their ranges and redo points in
 * *tablets (free with catalog_tablets_free()) and, in the parallel array
 * *stats, what each holds (bt_free()).
 */
int server_table_tablets(struct server *s, const char *table,
    struct catalog_tablet **tablets, struct tablet_stats **stats,
    size_t *count);

/*
 * A table's bytes per family and per locality group (docs/design.md
 * section 3, "Accounting"; bt_table_usage()) in the tablets this server
 * serves (a tablet it unloaded has no files and no memtable left): each
 * file counted once, however many of them share it.  Reads no data
 * block.
 */
struct server_family_usage {
	char name[CATALOG_NAME_MAX + 1];
	char group[CATALOG_NAME_MAX + 1];
	uint64_t disk_bytes;
	uint64_t memory_bytes;
	uint64_t entries;
	uint64_t value_bytes;
};
struct server_group_usage {
	char name[CATALOG_NAME_MAX + 1];
	uint64_t files;
	uint64_t disk_bytes;
	uint64_t memory_bytes;
	uint64_t other_bytes;	/* of its files, no schema family's */
	uint64_t unknown_bytes;	/* of its files that record no usage */
};
/*
 * Each file counted, with what it was counted from: its size (to its
 * group's files, disk_bytes, and unknown_bytes when !known), its labels
 * (each its share of size), and its data blocks and those in the ranges
 * of this server's tablets that name it (range_bytes, summed over them
 * and not capped at data_bytes): each family of its group got
 * usage_share(label, min(range_bytes, data_bytes), data_bytes), the rest
 * of its labels went to other_bytes.  A cell's servers each count a file
 * that a split shares between tablets they serve; the client, summing
 * their usages, counts such a file again from these, once.
 */
struct server_file_usage {
	uint64_t number;
	char group[CATALOG_NAME_MAX + 1];
	uint64_t size;
	bool known;
	uint64_t data_bytes;
	uint64_t range_bytes;
	size_t label_count;
	struct usage_label *labels;
};
struct server_table_usage {
	size_t family_count;
	struct server_family_usage *families;	/* the schema's order */
	size_t group_count;
	struct server_group_usage *groups;
	uint64_t other_memory_bytes;	/* memtables' row deletes */
	size_t file_count;
	struct server_file_usage *files;	/* by number */
};
int server_table_usage(struct server *s, const char *table,
    struct server_table_usage *out);
void server_table_usage_release(struct server_table_usage *u);

/* See bt_store_check(). */
int server_check(struct server *s,
    void (*report)(void *arg, const char *problem),
    void (*progress)(void *arg, uint64_t done, uint64_t total), void *arg,
    uint64_t *files, uint64_t *bytes);

/* Split the tablet holding row so that a tablet starts at row (see
 * bt_table_split).  BT_ENOTSERVING when that tablet is not served
 * here, checked before -EEXIST (a tablet starts at row); on a cell's
 * server with a remote catalog also when the catalog assigns it to
 * another server (the root's fenced replace: nothing changes). */
int server_split(struct server *s, const char *table, struct slice row);

int server_flush(struct server *s);
int server_compact(struct server *s, const char *table, bool major);

struct server_stats {
	uint64_t mutations;
	uint64_t reads;
	uint64_t log_syncs;
	uint64_t log_batches;
	uint64_t write_gathers;		/* group commit leaders that waited */
	/* Writes that waited for a flush (the memtable budget was full),
	 * and the most the active and frozen memtables held together. */
	uint64_t write_waits;
	uint64_t memtable_peak_bytes;
	/* Rounds that handed freed memory back to the system. */
	uint64_t memory_trims;
	uint64_t flushes;
	uint64_t compactions;
	uint64_t sstables;
	uint64_t damaged_sstables;	/* named, not readable (tablet.h) */
	uint64_t memtable_bytes;
	uint64_t last_seq;
	uint64_t cache_hits;
	uint64_t cache_misses;
	uint64_t tablets;
	uint64_t splits;		/* since open */
	uint64_t merges;
	uint64_t files_collected;	/* SSTables deleted by the sweep */
	/* 0, or the error for which every write is refused until the
	 * store is reopened (memory fell behind the log or catalog). */
	int writes_refused;
	/* 0, or -ENOSPC (-EDQUOT) while the disk is full: writes that
	 * add data are refused, deletes and compactions go on
	 * (server_space.c); and the bytes the store's reserve holds. */
	int disk_full;
	uint64_t reserve_bytes;
};
void server_get_stats(struct server *s, struct server_stats *out);
/*
 * What each tablet served here costs (server_load.c), for a cell's
 * balancing by load: the requests it served since it was opened here
 * (a row read or written, a scan entering it: a count that only grows,
 * whose differences make a rate), its memtables' bytes and the
 * estimated bytes of its own rows in SSTables (tablet_stats.data_bytes).
 * Tablets not served here are left out.  *out allocated (bt_free()),
 * *count entries, in table then row order.  0 or -ENOMEM.  Thread-safe;
 * it takes no lock a request holds.
 */
struct server_tablet_load {
	uint64_t table_id;
	uint64_t tablet_id;
	uint64_t requests;
	uint64_t memtable_bytes;
	uint64_t sstable_bytes;
};
int server_tablets_load(struct server *s, struct server_tablet_load **out,
    size_t *count);
/*
 * Where to split tablet id of table, served here, so that its requests
 * divide evenly (tablet_request_split_row()): 0 with the row in *row,
 * BT_ENOTSERVING when it is not served here, BT_NOTFOUND when its
 * requests give no such row (too few, or all of one row), -ENOENT for
 * no such table, -ENOMEM.
 */
struct buf;
int server_tablet_split_row(struct server *s, const char *table,
    uint64_t id, struct buf *row);
/* server_stats.last_seq alone (bt_store_last_seq). */
uint64_t server_last_seq(struct server *s);
/* This server's name in the catalog's assignments (server_options.name
 * on a cell's server, the host name otherwise); s's for its life. */
const char *server_assign_name(const struct server *s);
/* The store's catalog, owned by s (valid until server_close()), which
 * the root's server of a cell serves to the other tablet servers
 * (tabletd/service_catalog.c).  Thread-safe, as every catalog call. */
struct catalog *server_catalog(struct server *s);
/*
 * On a cell's server whose catalog is remote: ask the catalog's schema
 * version (catalog_schema_version()) and, when it moved since the last
 * poll (or a flush found a tablet gone from the catalog), read every
 * table this server knows again (docs/design.md section 5, "Tablets one
 * by one"): schema changes made at the root's server take effect here
 * (families dropped, GC policies, groups, access), and a table dropped
 * there is discarded here, its tablets no longer served and their
 * memtables dropped unflushed.  The background thread does this about
 * once a second; this call does it now.  0 (also on a local catalog:
 * nothing to do), or the catalog's error, the version then not taken,
 * so that the next poll tries again.  Thread-safe; not with work_mu
 * held.
 */
int server_schema_poll(struct server *s);
/* The figures of the filesystem holding the store, through its env
 * (env_path_space(); bt_store_space).  0 or the env's error. */
int server_space_measure(struct server *s, struct env_space *out);

#endif
