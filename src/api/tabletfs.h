/*
 * tabletfs.h - the public C API of tabletfs: Bigtable's data model on a
 * local store (docs/design.md section 1).  The filesystem, tabletctl and
 * tabletbench use only this header.
 *
 * Data model: (row, family:qualifier, timestamp) -> value.  Rows are
 * arbitrary bytes (1 byte to 64 KiB), qualifiers arbitrary bytes (0 to 16
 * KiB), families names from the schema, timestamps microseconds 0..2^63-1,
 * values up to max_cell bytes.  Every mutation of one row is atomic.
 *
 * Return values: 0 for success; BT_NOTFOUND or BT_DONE (positive) for the
 * expected outcomes named below; a negative value for errors: -errno (e.g.
 * -ENOENT for a table or family that does not exist, -EINVAL for bad
 * arguments, -EFBIG for a value over max_cell, -ENOSPC), or a BT_E* code
 * from tabletfs_error.h (installed beside this header, which includes
 * it).  bt_strerror() names any code; bt_error_detail() gives a one-line
 * explanation of the calling thread's last failed call (every call
 * clears it first).
 *
 * Threads: a store handle and everything reached through it may be used
 * from any number of threads at once, except that one scan is used by one
 * thread at a time.
 *
 * Ownership: bytes passed in are copied before a call returns.  Results
 * (struct bt_row) are owned by the caller and freed with bt_row_free(),
 * except the borrowed rows of bt_scan_next_borrowed().
 */
#ifndef TABLETFS_H
#define TABLETFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tabletfs_error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define BT_MAX_ROW		(64u << 10)
#define BT_MAX_QUALIFIER	(16u << 10)
#define BT_DEFAULT_MAX_CELL	(64u << 20)
/* The largest max_cell: such a value, its row and qualifier at their
 * limits and the record's framing fit one commit-log record (256 MiB). */
#define BT_MAX_CELL_LIMIT	(255u << 20)
#define BT_TS_SERVER		(-1)	/* "stamp with the server's clock" */
#define BT_TS_MAX		INT64_MAX

/* A borrowed run of bytes. */
struct bt_bytes {
	const void *data;
	size_t size;
};

struct bt_store;
struct bt_scan;

/* Settings for opening a store; zero means the default. */
struct bt_options {
	uint64_t memtable_size;	/* active and frozen memtables of all
				   tablets together (writers wait for
				   flushes at it; a memtable is frozen
				   for its flush at half); 64 MiB */
	uint64_t block_cache_size;	/* 64 MiB */
	uint64_t max_cell;	/* largest value; BT_DEFAULT_MAX_CELL; over
				   BT_MAX_CELL_LIMIT the open fails with
				   -EINVAL */
	bool sync_always;	/* every mutation fdatasyncs the commit log */
	bool read_only;		/* refuse every change with -EROFS */
	/*
	 * The file environment every byte goes through, catalog included
	 * (NULL: the local filesystem).  Tests pass an in-memory one that
	 * injects faults and sets the clock (src/util/env.h); the store does
	 * not take ownership.
	 */
	struct env *env;
	/*
	 * Called with one line (no newline) for each thing the store did on
	 * its own that its user should hear of: damage that recovery skipped
	 * or dropped from the commit log, naming the segment and offset.
	 * NULL: the line goes to stderr after "tabletfs: ".  Called from the
	 * opening thread, before bt_store_open() returns.
	 */
	void (*notice)(void *arg, const char *line);
	void *notice_arg;
	/*
	 * A cell only: how long one call may take, its retries included,
	 * before it fails with -ETIMEDOUT (0: 30 s).  A call whose server
	 * fails is sent again to the server that takes over, unless it may
	 * have been applied and would change the row again (a server-stamped
	 * put, a read-modify-write, a check-and-mutate): such a call fails
	 * with -EIO, its detail saying that its outcome is unknown.
	 */
	uint32_t deadline_ms;
};

/*
 * Create an empty store in directory path (created if absent, with any
 * missing parents; must be empty of tabletfs files): the catalog and the
 * log, sst and tmp folders.  -EEXIST if a store is already there.
 */
int bt_store_create(const char *path, const struct bt_options *opts);

/*
 * Open a store: lock it (-EWOULDBLOCK, detail naming the holder's pid, if
 * another process or handle has it), read the catalog, replay the commit
 * log, and start the background compaction thread.
 *
 * On the local filesystem (opts->env NULL) SSTables are read through
 * read-only mappings, and the first mapping installs a process-wide
 * SIGBUS handler so that a file cut short under a mapping reads as
 * damage instead of killing the process; every SIGBUS that is not such a
 * read goes on to the handler installed before it.  A program that
 * installs a SIGBUS handler of its own after opening a store should pass
 * on the signals it does not handle in the same way.
 *
 * path may instead be a cell's address, "zk://HOST:PORT[,HOST:PORT...]/CELL"
 * (docs/design.md section 5): the handle then reaches the cell's tablet
 * servers through the network, with the same calls, results and errors;
 * only opts->deadline_ms applies (the servers have their own settings).
 * A call meets -ETIMEDOUT when no server serves the cell within it.
 */
int bt_store_open(const char *path, const struct bt_options *opts,
    struct bt_store **out);

/*
 * Flush memtables, stop background work, release the lock and free the
 * handle; accepts NULL.  Returns the first error met while flushing (the
 * data stays safe in the log either way).
 */
int bt_store_close(struct bt_store *s);

/* ---- Schema ---- */

/*
 * Who may use a table or a family (docs/design.md section 2,
 * "Permissions"): an owner, a group and the nine permission bits of a
 * file, r to read cells and w to write or delete them (x means nothing
 * to the library; the mount shows it on directories).  The library keeps
 * them; it checks no caller itself: a program serving other users (the
 * mount, the control socket) checks each request with
 * bt_access_allows().  A new table belongs to its creator with mode 0755;
 * a new family takes its table's owner, group and mode.
 */
#define BT_ACCESS_MODE_MASK	0777u
#define BT_ACCESS_KEEP		UINT32_MAX	/* bt_access_set(): unchanged */

struct bt_access {
	uint32_t uid;
	uint32_t gid;
	uint32_t mode;		/* within BT_ACCESS_MODE_MASK */
};

/* Who asks: a user, its group and its supplementary groups (borrowed). */
struct bt_cred {
	uint32_t uid;
	uint32_t gid;
	const uint32_t *groups;
	size_t group_count;
};

/* A family to create: name, locality group (NULL: "default") and GC
 * policy in cbt syntax (NULL: "never"). */
struct bt_family_spec {
	const char *name;
	const char *group;
	const char *gc_policy;
};

/* Locality group settings; see docs/design.md section 3 (setgroup). */
struct bt_group_spec {
	const char *name;
	uint32_t block_size;	/* 0: 64 KiB */
	int compress;		/* 1 Snappy, 0 none, -1 unchanged/default */
	int bloom;		/* 1 on, 0 off, -1 unchanged/default */
	int in_memory;		/* 1 on, 0 off, -1 unchanged/default */
};

/* Create a table with families (may be none) and split rows (may be
 * none).  tablet_size 0: the default 128 MiB.  -EEXIST, -EINVAL. */
int bt_table_create(struct bt_store *s, const char *table,
    const struct bt_family_spec *families, size_t family_count,
    const struct bt_bytes *splits, size_t split_count,
    uint64_t tablet_size);
/*
 * The same, the table (and its families) owned as owner says: its uid,
 * gid and mode (-EINVAL outside BT_ACCESS_MODE_MASK).  bt_table_create()
 * is this with the calling process's effective uid and gid and mode 0755
 * (on a cell address too: the caller's, not the serving process's).
 */
int bt_table_create_as(struct bt_store *s, const char *table,
    const struct bt_access *owner, const struct bt_family_spec *families,
    size_t family_count, const struct bt_bytes *splits, size_t split_count,
    uint64_t tablet_size);
/* Drop a table and all its data.  -ENOENT if absent. */
int bt_table_delete(struct bt_store *s, const char *table);
/* Sorted table names: a NULL-terminated array freed by bt_names_free(). */
int bt_table_list(struct bt_store *s, char ***names, size_t *count);
void bt_names_free(char **names);

int bt_family_create(struct bt_store *s, const char *table,
    const struct bt_family_spec *family);
/* Drop a family; its data disappears from reads at once. */
int bt_family_delete(struct bt_store *s, const char *table,
    const char *family);
/* Replace a family's GC policy (cbt syntax).  -EINVAL for bad text. */
int bt_family_set_gc(struct bt_store *s, const char *table,
    const char *family, const char *gc_policy);
int bt_group_set(struct bt_store *s, const char *table,
    const struct bt_group_spec *group);

/* A table's schema, as text in cbt's style, one family per line:
 * "FAMILY group=G gc=POLICY\n".  The caller frees *text with free(). */
int bt_table_describe(struct bt_store *s, const char *table, char **text);
/* A table's locality groups, one per line, in setgroup's spelling:
 * "GROUP blocksize=SIZE compression=snappy|none bloom=on|off
 * inmemory=on|off\n" (SIZE as "64k").  Freed with free(). */
int bt_table_describe_groups(struct bt_store *s, const char *table,
    char **text);

/* ---- Writing ---- */

enum bt_mutation_kind {
	BT_PUT = 1,		/* family, qualifier, ts (or BT_TS_SERVER), value */
	BT_DELETE_VERSION = 2,	/* family, qualifier, ts */
	BT_DELETE_COLUMN = 3,	/* family, qualifier: every version */
	BT_DELETE_FAMILY = 4,	/* family: every column of it in the row */
	BT_DELETE_ROW = 5,	/* the whole row */
};

struct bt_mutation {
	enum bt_mutation_kind kind;
	const char *family;
	struct bt_bytes qualifier;
	int64_t ts;
	struct bt_bytes value;
};

/* Durability of one call: sync makes it survive power loss (fdatasync of
 * the commit log, shared with concurrent writers). */
struct bt_write_options {
	bool sync;
};

/*
 * Apply the mutations to one row atomically.  Server timestamps are the
 * current time in microseconds, strictly increasing per store; all
 * BT_TS_SERVER puts of one call get the same stamp.  In a cell whose
 * servers' clocks differ, the writes of one client are stamped in the
 * order it makes them, whichever servers stamp them (each write carries
 * the highest stamp the client has seen).  When *stamp is not
 * NULL it receives that stamp.  Returns once the mutation is in the commit
 * log (and synced, with wopts->sync or sync_always), and visible to reads.
 */
int bt_mutate_row(struct bt_store *s, const char *table, struct bt_bytes row,
    const struct bt_mutation *muts, size_t count,
    const struct bt_write_options *wopts, int64_t *stamp);

/* One row's mutations in a batch (bt_mutate_rows()). */
struct bt_row_mutation {
	struct bt_bytes row;
	const struct bt_mutation *muts;
	size_t count;
};

/*
 * Apply a batch of row mutations to a table (cbt's MutateRows): each row
 * atomically, as bt_mutate_row() would, and the rows independently of
 * each other (they may lie in different tablets; the batch as a whole is
 * not atomic).  A row given twice is applied twice, in batch order.
 *
 * Every row is checked first: one that bt_mutate_row() would refuse
 * (unknown family, a value over max_cell, a bad key, no mutations, ...)
 * fails alone, before anything is written.  The others are written to the
 * commit log together, with one append and at most one sync (with
 * wopts->sync or sync_always; shared with concurrent writers as group
 * commit does), stamped and made visible as bt_mutate_row() does: each
 * row's BT_TS_SERVER puts get one stamp, and the stamps strictly increase
 * along the batch.  If that append or sync fails, every row of it fails
 * with that error and none is visible.  Nothing is acknowledged before it
 * is in the commit log (and synced, when asked).  A crash during the call
 * may leave any of the rows applied or not after recovery, but never part
 * of a row.
 *
 * results, when not NULL, has room for n codes: results[i] receives 0 when
 * rows[i] was applied, else its error.  Returns 0 when every row was
 * applied; otherwise the error of a failed row (its detail in
 * bt_error_detail()); -EINVAL for n == 0; -ENOENT for an unknown table
 * (every row failing with it).  In a cell the batch is one request to the
 * serving tablet server, which logs it as above; when the cell serves
 * tablets one by one, one request to each server of its rows, one after
 * the other, each server's rows stamped as above and above every stamp
 * of the requests before.
 */
int bt_mutate_rows(struct bt_store *s, const char *table,
    const struct bt_row_mutation *rows, size_t n,
    const struct bt_write_options *wopts, int *results);

/*
 * Check-and-mutate: if the newest visible value of family:qualifier in row
 * equals *expected (or, when expected is NULL, if the column has no visible
 * version), apply the mutations atomically and set *applied to true;
 * otherwise change nothing and set it to false.
 */
int bt_check_and_mutate(struct bt_store *s, const char *table,
    struct bt_bytes row, const char *family, struct bt_bytes qualifier,
    const struct bt_bytes *expected, const struct bt_mutation *muts,
    size_t count, const struct bt_write_options *wopts, bool *applied);

/*
 * The same, when the newest visible version must also have timestamp
 * expected_ts (ignored when expected is NULL): the condition "nothing was
 * written to the column since I read version (expected_ts, *expected)",
 * which a value comparison alone cannot tell from a rewrite of the same
 * value.  When applied and stamp is not NULL, *stamp receives the time
 * that the first mutation was given.
 */
int bt_check_version_and_mutate(struct bt_store *s, const char *table,
    struct bt_bytes row, const char *family, struct bt_bytes qualifier,
    const struct bt_bytes *expected, int64_t expected_ts,
    const struct bt_mutation *muts, size_t count,
    const struct bt_write_options *wopts, bool *applied, int64_t *stamp);

/*
 * Read-modify-write increment: add delta to the newest value of the column
 * (absent = 0), which must be an ASCII decimal integer optionally ending in
 * "\n" (-EINVAL otherwise), and store the sum as the new newest version,
 * written "SUM\n".  -ERANGE on overflow.
 *
 * What this, bt_append() and bt_put_newest() write is stamped with the
 * server's clock, or one above the column's newest version when a client
 * gave that a later time, so that it becomes the newest version; the same
 * holds for a BT_TS_SERVER put that a check-and-mutate makes in the column
 * it checks.  *stamp receives the time given.
 */
int bt_increment(struct bt_store *s, const char *table, struct bt_bytes row,
    const char *family, struct bt_bytes qualifier, int64_t delta,
    const struct bt_write_options *wopts, int64_t *result, int64_t *stamp);

/* Read-modify-write append: store newest value || suffix as the new newest
 * version (absent = empty). */
int bt_append(struct bt_store *s, const char *table, struct bt_bytes row,
    const char *family, struct bt_bytes qualifier, struct bt_bytes suffix,
    const struct bt_write_options *wopts, int64_t *stamp);

/* Store value as the column's new newest version (what a write to a
 * column's latest file does). */
int bt_put_newest(struct bt_store *s, const char *table, struct bt_bytes row,
    const char *family, struct bt_bytes qualifier, struct bt_bytes value,
    const struct bt_write_options *wopts, int64_t *stamp);

/*
 * Move one version within a row, as one atomic mutation: the value of
 * src_family:src_qualifier at exactly src_ts is written at
 * dst_family:dst_qualifier with dst_ts (BT_TS_SERVER for the server's
 * clock) and the source version is deleted.  -ENOENT when that version
 * does not exist; moving a version onto itself changes nothing.
 */
int bt_move_version(struct bt_store *s, const char *table, struct bt_bytes row,
    const char *src_family, struct bt_bytes src_qualifier, int64_t src_ts,
    const char *dst_family, struct bt_bytes dst_qualifier, int64_t dst_ts,
    const struct bt_write_options *wopts, int64_t *stamp);

/* ---- Reading ---- */

/* One column filter: a whole family, or one column of it. */
struct bt_column {
	const char *family;
	bool has_qualifier;
	struct bt_bytes qualifier;
};

/*
 * Move a column, or a family, within a row as one atomic mutation: every
 * version of src that a read sees is written at dst with its timestamp
 * and value, and src is deleted (a delete of the column, or of the family
 * in the row).  A family's columns keep their qualifiers.  src and dst
 * are both columns (has_qualifier) or both families (-EINVAL otherwise).
 * -ENOENT when src holds no version, -ENOTEMPTY when dst holds one,
 * -EFBIG when their values come to more than max_cell bytes (what one
 * write may carry, so that a move takes no more memory than the largest
 * write) or the versions to more than one commit log record holds;
 * moving src onto itself changes nothing.
 */
int bt_move_column(struct bt_store *s, const char *table, struct bt_bytes row,
    const struct bt_column *src, const struct bt_column *dst,
    const struct bt_write_options *wopts);

/*
 * What a read returns.  Zero-initialised means everything: all columns,
 * all versions, any time.  Every filter set is applied (AND), on the
 * server in a cell, in this order: row, then column (columns, family
 * and qualifier regexes), time range, value (regex and range), cells per
 * column, cells per row (offset, then limit).  A row with no cell left
 * is not returned.
 *
 * Time ranges: the versions with min_ts <= ts <= max_ts.  A half-open
 * range [T1, T2), as cbt's start-ts/end-ts and HBase's setTimeRange
 * give it, is min_ts = T1, has_max_ts, max_ts = T2 - 1 (timestamps are
 * integers); a range that holds no time (max_ts < min_ts) selects
 * nothing.
 *
 * Regexes (row_regex, family_regex, qualifier_regex, value_regex): a
 * filter when .data is not NULL (an empty pattern matches only the
 * empty string).  The syntax is cbt's (RE2's, as PCRE2 reads it) and a
 * pattern must match the WHOLE key, name or value, as bytes: `a.*`
 * matches "ab" but not "xa", and '.' matches any byte but "\n" (`\C`, or
 * `(?s).`, any byte).  A pattern that does not compile fails the read
 * or the scan's open with -EINVAL, the compiler's message as the
 * detail; a match that runs into the match limit (a million steps) or
 * the depth limit fails with -ERANGE, its detail naming the limit.  A
 * row regex that starts with literal bytes (`com\.cnn\..*`) also
 * narrows a scan to the rows starting with them.
 */
struct bt_read_options {
	const struct bt_column *columns;	/* NULL: every column */
	size_t column_count;
	uint32_t cells_per_column;	/* newest N versions; 0: all */
	int64_t min_ts;			/* versions with ts >= min_ts */
	bool has_max_ts;		/* and, if set, ts <= max_ts: */
	int64_t max_ts;			/* "as of max_ts" */
	bool keys_only;			/* values come back empty, with
					   value_size still exact */
	struct bt_bytes row_regex;	/* rows whose key matches */
	struct bt_bytes family_regex;	/* cells whose family matches */
	struct bt_bytes qualifier_regex; /* and whose qualifier matches */
	struct bt_bytes value_regex;	/* versions whose value matches */
	struct bt_bytes value_start;	/* versions with value >= start */
	struct bt_bytes value_end;	/* and, when .data is not NULL,
					   value < end (bytewise) */
	uint32_t cells_per_row_offset;	/* skip a row's first N cells */
	uint32_t cells_per_row_limit;	/* then return at most N; 0: all */
	/*
	 * More column filters, cbt's columns=F:REGEX: each the family of
	 * its entry and, when has_qualifier, the qualifiers that the regex
	 * in .qualifier matches whole.  A cell is selected when an entry of
	 * columns or of column_regexes selects it (both NULL: every column).
	 */
	const struct bt_column *column_regexes;
	size_t column_regex_count;
};

struct bt_cell {
	const char *family;
	struct bt_bytes qualifier;
	int64_t ts;
	struct bt_bytes value;
	uint64_t value_size;
};

/* A row's cells in order: family, qualifier, then newest first. */
struct bt_row {
	struct bt_bytes key;
	size_t cell_count;
	struct bt_cell *cells;
};

/*
 * Read one row.  0 with *out set (free with bt_row_free()), or BT_NOTFOUND
 * when the row has no cell that the options select.
 */
int bt_read_row(struct bt_store *s, const char *table, struct bt_bytes row,
    const struct bt_read_options *ropts, struct bt_row **out);
void bt_row_free(struct bt_row *r);

/* A scan over rows [start, end) (an empty bound is open), or those
 * starting with prefix when prefix.size > 0. */
struct bt_scan_options {
	struct bt_bytes start;
	bool start_exclusive;	/* resume after start rather than at it */
	struct bt_bytes end;
	struct bt_bytes prefix;
	uint64_t limit;		/* rows; 0: no limit */
	struct bt_read_options read;
	/*
	 * Let bt_scan_next_borrowed() lend values straight from the store's
	 * memtables and cached blocks instead of copying them into the row,
	 * as LevelDB's iterators lend theirs (small values are still
	 * copied): a value is valid for as long as the row (until the next
	 * call on the scan, whatever flushes, compactions or splits happen
	 * meanwhile) but may not be followed by a NUL byte.  Keys, families
	 * and qualifiers are as without it.  bt_scan_next() is not
	 * affected.
	 */
	bool lend_values;
	/*
	 * Blocks this scan reads from files are not kept in the block cache
	 * (blocks already there are still used), as LevelDB's fill_cache =
	 * false and HBase's setCacheBlocks(false): for a bulk scan, such as
	 * a listing of every row, whose blocks would only push out those
	 * that point reads use, and cost fresh memory to keep.
	 */
	bool no_cache_fill;
};

/*
 * Open a scan: a consistent view of the table as of this call, streamed in
 * bounded memory (one row at a time).  Rows without a selected cell are
 * skipped.
 */
int bt_scan_open(struct bt_store *s, const char *table,
    const struct bt_scan_options *opts, struct bt_scan **out);
/* The next row: 0 and *out (free with bt_row_free()), or BT_DONE. */
int bt_scan_next(struct bt_scan *sc, struct bt_row **out);
/*
 * The next row without a copy: 0 and *out, or BT_DONE.  The row and every
 * byte it points to are borrowed from the scan until the next call on sc
 * (bt_scan_next, bt_scan_next_borrowed or bt_scan_close); copy what must
 * live longer, and do not free it.  The row is the one bt_scan_next()
 * would have returned (key, families and values NUL-terminated too, but
 * values not when the scan was opened with lend_values); the two calls
 * may be mixed on one scan and count against one limit.
 */
int bt_scan_next_borrowed(struct bt_scan *sc, const struct bt_row **out);
/* Accepts NULL. */
void bt_scan_close(struct bt_scan *sc);

/* ---- Bulk load (HBase's) ---- */

struct bt_bulk;

struct bt_bulk_options {
	/* Bytes of cells sorted in memory before a sorted run is spilled
	 * to STORE/tmp/ (0: 64 MiB).  The load's memory is about this. */
	size_t memory_budget;
};

/* What a committed load wrote. */
struct bt_bulk_stats {
	uint64_t cells;		/* a cell given twice counts once */
	uint64_t files;		/* SSTables added */
	uint64_t tablets;	/* tablets that gained them */
	int64_t stamp;		/* the time of cells given BT_TS_SERVER */
};

/*
 * A bulk load into an existing table (tabletctl import --bulk): puts given
 * in any order with bt_bulk_put(), then bt_bulk_commit() sorts them (in
 * memory_budget bytes, spilling sorted runs to STORE/tmp/ and merging
 * them), writes them as SSTables straight into the table's tablets, one
 * file per tablet and locality group with the group's settings, and names
 * all the files in one catalog transaction.  Nothing goes through the
 * commit log, so a load is much faster than bt_mutate_rows() of the same
 * cells, and it is atomic as a whole: until the commit returns 0 no cell
 * of it is visible, and a crash at any point leaves the store as it was
 * or with every cell of the load (what a crash leaves in tmp/ and sst/ is
 * removed at the next open).
 *
 * Order: the load's cells count as written at the commit, after every
 * write made before it (a delete made earlier does not mask them, and a
 * version of the same timestamp is replaced), before every write made
 * after it.  Of cells of the same row, column and timestamp given to one
 * load, the last given is kept.  Cells with ts BT_TS_SERVER all get one
 * stamp, the server's clock at bt_bulk_open() (above every stamp given
 * before, as in bt_mutate_row()), returned in bt_bulk_stats.stamp.
 *
 * The commit flushes the memtables, then merges and writes while holding
 * the store's background work (flushes, compactions, splits) and the
 * commit of other writes of this process, which wait for it.  A load is
 * used by one thread at a time.
 *
 * On a cell address the load is kept by the serving tablet server (in
 * the cell's storage, tmp/ as above), fed in batches of about 1 MiB of
 * cells, each cell checked by bt_bulk_put() as on a store; the load
 * lives on the client's connection to that server.  When that connection
 * fails, or the server stops serving, the load is gone (the server
 * removes it, nothing of it visible) and every later call on it returns
 * -EIO, its detail saying so; it is never restarted on another server.
 * A commit whose reply is lost has an unknown outcome: -EIO, its detail
 * saying that the load may be there whole or not at all (never in part).
 * A server keeps a few loads at once: bt_bulk_open() is -EBUSY beyond.
 * The error of a batch (-ENOSPC, -EIO on the server) is returned by the
 * bt_bulk_put() that sent it or by the commit.
 *
 * Errors: bt_bulk_open(): -ENOENT (no such table), -EROFS, -ENOSPC (the
 * disk is full), -EBUSY, -EOPNOTSUPP (a cell whose servers predate
 * bulk loads).  bt_bulk_put(): -ENOENT (no such family),
 * -EINVAL (a row key of 0 or more than BT_MAX_ROW bytes, a qualifier over
 * BT_MAX_QUALIFIER, a negative ts other than BT_TS_SERVER), -EFBIG (a
 * value over max_cell): that cell is refused, the load goes on; any
 * other error (-ENOSPC or -EIO spilling a run, -ENOMEM) fails the load,
 * whose later calls return it again.  bt_bulk_commit(): the errors of
 * writing and syncing files and of the catalog; the store is then as
 * before the load.  Commit once; then, or to abandon a load, close it.
 */
int bt_bulk_open(struct bt_store *s, const char *table,
    const struct bt_bulk_options *opts, struct bt_bulk **out);
int bt_bulk_put(struct bt_bulk *b, struct bt_bytes row, const char *family,
    struct bt_bytes qualifier, int64_t ts, struct bt_bytes value);
/* *out may be NULL. */
int bt_bulk_commit(struct bt_bulk *b, struct bt_bulk_stats *out);
/* Free the load, removing its sorted runs; accepts NULL. */
void bt_bulk_close(struct bt_bulk *b);

/* ---- Administration ---- */

/* Freeze and flush every memtable now (minor compactions), and wait. */
int bt_store_flush(struct bt_store *s);
/* Compact a table (NULL: all): flush its memtables and merge its
 * SSTables; major also drops deleted and condemned data.  Waits for
 * completion.  -ENOENT for a table that does not exist. */
int bt_store_compact(struct bt_store *s, const char *table, bool major);

/*
 * Split the tablet holding row so that a tablet starts at row (tabletctl
 * split).  Nothing is copied: both halves share the tablet's SSTables
 * until compactions rewrite them.  A split for size happens by itself in
 * the background once a tablet holds more than the table's tablet_size;
 * neighbouring tablets that shrink below a quarter of it are merged again
 * (never across a row given here or at bt_table_create).  -EEXIST if a
 * tablet already starts at row, -ENOENT for an unknown table.
 */
int bt_table_split(struct bt_store *s, const char *table, struct bt_bytes row);

/*
 * What a cell's tablet server does when the master moves a tablet away
 * (Bigtable 5.2; docs/design.md section 5): stop serving it, and serve it
 * again.  bt_tablet_unload() flushes the tablet's memtable twice, while
 * it serves and then in a short pause of the store's writes for what
 * came meanwhile, so that whoever loads it next needs no commit log;
 * from then on reads, scans and writes of its rows fail with
 * BT_ENOTSERVING, and it is neither split nor merged, until
 * bt_tablet_load() opens it again from the catalog.  tablet_id is one of
 * bt_table_tablets().  Both return 0 when there is nothing to do, -ENOENT
 * for an unknown table or tablet, -EROFS on a read-only store, and
 * -EOPNOTSUPP on a cell address (its master assigns tablets).
 */
int bt_tablet_unload(struct bt_store *s, const char *table,
    uint64_t tablet_id);
int bt_tablet_load(struct bt_store *s, const char *table, uint64_t tablet_id);
/*
 * What a cell's tablet server does when given a tablet of a server that
 * died (Bigtable 5.3): serve tablet_id, which bt_tablet_unload() left not
 * served here, recovered from the dead server's commit log in log_dir (a
 * directory of log segments, as the store's env names it): the records
 * of its rows above its redo point are replayed, damage skipped with a
 * notice as at open, and flushed; nothing in log_dir is changed.  Later
 * writes get sequence numbers and server stamps above every record read
 * there.  -EBUSY when the tablet is served here; otherwise as
 * bt_tablet_load(), or the replay's error (the tablet stays not served).
 */
int bt_tablet_recover(struct bt_store *s, const char *table,
    uint64_t tablet_id, const char *log_dir);

/* One tablet of a table: its row range [start, end) (an empty end is the
 * end of the table) and what it holds. */
struct bt_tablet_info {
	uint64_t id;
	struct bt_bytes start;
	struct bt_bytes end;
	uint64_t sstables;
	uint64_t sstable_bytes;		/* whole files, shared ones too */
	uint64_t data_bytes;		/* estimated bytes of its own rows */
	uint64_t memtable_bytes;
	uint64_t flushed_seq;		/* the tablet's redo point */
	/* In a cell whose tablets are served one by one, the server the
	 * tablet is assigned to ("HOST:PORT#EPOCH"); else "". */
	const char *server;
};

/* The tablets of a table in row order, in one allocation freed with
 * bt_tablets_free().  -ENOENT for an unknown table. */
int bt_table_tablets(struct bt_store *s, const char *table,
    struct bt_tablet_info **out, size_t *count);
void bt_tablets_free(struct bt_tablet_info *tablets);

/*
 * Accounting (docs/design.md section 3): what a table takes, per column
 * family and per locality group.  disk_bytes are SSTable bytes, each
 * file counted once however many tablets share it, and split among the
 * families it holds in proportion to their key and value bytes, which
 * the file records when it is written; memory_bytes are what the
 * memtables take beyond empty ones, split the same way by what was
 * inserted.  entries and value_bytes count what is stored: every
 * version and delete marker until a compaction drops it, so that after
 * a major compaction value_bytes is the sum of the sizes of the
 * family's visible versions (what du --apparent-size adds up through
 * the mount).  Names are at most BT_NAME_MAX bytes.
 */
#define BT_NAME_MAX		64

struct bt_family_usage {
	char name[BT_NAME_MAX + 1];
	char group[BT_NAME_MAX + 1];
	uint64_t disk_bytes;
	uint64_t memory_bytes;
	uint64_t entries;
	uint64_t value_bytes;
};

struct bt_group_usage {
	char name[BT_NAME_MAX + 1];
	uint64_t files;
	uint64_t disk_bytes;		/* its files, whole */
	uint64_t memory_bytes;		/* its families' */
	/* Bytes of its files charged to no family of the schema: row
	 * deletes, families deleted until a compaction drops them, and
	 * the rows of a file shared by a split that no tablet naming it
	 * serves any more (by its index: within a block per boundary). */
	uint64_t other_bytes;
	/* Bytes of its files written before SSTables recorded their
	 * families (format version 5): not split among the families. */
	uint64_t unknown_bytes;
};

struct bt_table_usage {
	size_t family_count;
	struct bt_family_usage *families;	/* the schema's order */
	size_t group_count;
	struct bt_group_usage *groups;
	/* The table's: files and disk_bytes of every group, memory_bytes
	 * of every family and the row deletes in memtables, entries and
	 * value_bytes of every family. */
	uint64_t files;
	uint64_t disk_bytes;
	uint64_t memory_bytes;
	uint64_t entries;
	uint64_t value_bytes;
};

/*
 * A table's usage, in one allocation freed with bt_table_usage_free().
 * Reads no data block.  -ENOENT for an unknown table.  On a cell whose
 * tablets are spread over its servers, the sum of what each live server
 * says of the tablets it serves, each file counted once: a server that
 * does not answer fails the call (-EIO, -ETIMEDOUT, or its error, with
 * a detail naming it) rather than leave its tablets out.  Each server's
 * figures are as of its answer; a tablet moving meanwhile may be
 * counted twice or not at all.
 */
int bt_table_usage(struct bt_store *s, const char *table,
    struct bt_table_usage **out);
/* Accepts NULL. */
void bt_table_usage_free(struct bt_table_usage *u);
/*
 * The same as text, one line each, fields separated by one blank:
 *   family NAME group=G disk_bytes=N memory_bytes=N entries=N value_bytes=N
 *   group NAME files=N disk_bytes=N memory_bytes=N other_bytes=N
 *       unknown_bytes=N                       (on one line)
 *   table NAME files=N disk_bytes=N memory_bytes=N entries=N value_bytes=N
 * families in the schema's order, then groups, then the table.  Freed
 * with free().
 */
int bt_table_describe_usage(struct bt_store *s, const char *table,
    char **text);

/* ---- Access control ---- */

/* What bt_access_allows() is asked for: a mask of these. */
#define BT_ACCESS_READ		4
#define BT_ACCESS_WRITE		2

/*
 * Whether c may do what want asks (a mask of BT_ACCESS_READ and
 * BT_ACCESS_WRITE) on something with access a, as POSIX decides for a
 * file: uid 0 may do anything; otherwise the owner's bits when c->uid
 * is the owner, else the group's when c->gid or one of c->groups is the
 * group, else the others'; every bit of want must be there.  Pure.
 */
bool bt_access_allows(const struct bt_access *a, const struct bt_cred *c,
    int want);

/*
 * Who may use table, and, when family is not NULL, that family (into
 * *family_access).  From memory (no catalog read), so cheap enough to
 * ask for every request.  -ENOENT for a table or family that does not
 * exist.  On a cell address the answer is kept by the handle for a
 * second (a change through the handle drops it): another client's
 * change may take that long to show; -EOPNOTSUPP when the cell's
 * servers predate access control.
 */
int bt_access_get(struct bt_store *s, const char *table, const char *family,
    struct bt_access *table_access, struct bt_access *family_access);

struct bt_family_access {
	char name[BT_NAME_MAX + 1];
	struct bt_access access;
};

/* The table's access and every family's, in the schema's order (one
 * allocation, *families, freed with free()), asked afresh.  Errors as
 * bt_access_get. */
int bt_table_access(struct bt_store *s, const char *table,
    struct bt_access *table_access, struct bt_family_access **families,
    size_t *count);

/*
 * Change the owner, group or mode of table (family NULL) or of one of its
 * families; a field of BT_ACCESS_KEEP stays as it is.  One catalog
 * transaction.  A family's access holds for the whole table.  Who may
 * change it is the caller's to decide (chown(2): root; chmod(2): the
 * owner or root).  -EINVAL for a mode outside BT_ACCESS_MODE_MASK,
 * -ENOENT, -EROFS; -EOPNOTSUPP on a cell whose servers predate it.
 */
int bt_access_set(struct bt_store *s, const char *table, const char *family,
    const struct bt_access *change);

/*
 * The access of a table and its families as text, one line each:
 *   access table NAME uid=N gid=N mode=0755
 *   access family NAME uid=N gid=N mode=0750
 * the table first, then the families in the schema's order.  Freed with
 * free().  Errors as bt_access_get.
 */
int bt_table_describe_access(struct bt_store *s, const char *table,
    char **text);

/*
 * Verify the store: every block checksum of every SSTable, every record of
 * every commit-log segment, and that the catalog and the files agree (each
 * named file exists and opens; files nobody names are reported).  Each
 * problem found is passed to report(arg, line) as one line naming the file
 * and offset; progress(arg, done, total) is called as files are checked
 * (either callback may be NULL).  Returns 0 when the store is sound,
 * BT_ECORRUPT when any problem was reported, or another negative error if
 * the check itself could not run.  *files and *bytes, when not NULL,
 * receive what was checked.  The callbacks run while background flushes
 * and compactions are held off: they must not call back into the store.
 */
int bt_store_check(struct bt_store *s,
    void (*report)(void *arg, const char *problem),
    void (*progress)(void *arg, uint64_t done, uint64_t total), void *arg,
    uint64_t *files, uint64_t *bytes);

/* Counters for status displays.  On a cell whose tablets are spread
 * over its servers, the sum over the servers that answer (the highest
 * last_seq; the first server's refusal or full disk). */
struct bt_stats {
	uint64_t mutations;
	uint64_t reads;
	uint64_t log_syncs;
	uint64_t log_batches;
	uint64_t flushes;
	uint64_t compactions;
	uint64_t sstables;
	/* SSTables that could not be opened: the reads of their tablets
	 * fail until they are restored (tabletctl check names them). */
	uint64_t damaged_sstables;
	uint64_t memtable_bytes;
	uint64_t last_seq;
	uint64_t cache_hits;
	uint64_t cache_misses;
	uint64_t tablets;
	uint64_t splits;		/* since the store was opened */
	uint64_t merges;
	uint64_t files_collected;	/* unnamed SSTables deleted */
	/* The location cache (Bigtable 5.1): rows looked up, answered
	 * from the cache, levels of the location hierarchy walked on
	 * misses, and cached locations found stale (split or merged). */
	uint64_t location_lookups;
	uint64_t location_hits;
	uint64_t location_levels;
	uint64_t location_stale;
	/* Group commit: leaders of synced write groups that waited for
	 * more synced writers to join (bounded by the sync latency). */
	uint64_t write_gathers;
	/* Memory: writes that waited for a flush because the memtables
	 * held the whole memtable budget, and the most that the active and
	 * frozen memtables held together since the store was opened. */
	uint64_t write_waits;
	uint64_t memtable_peak_bytes;
	/* Background rounds that handed memory freed by flushes and
	 * compactions back to the system: when writes had paused for a
	 * second, or when a flush was waited for (bt_store_flush), not
	 * while writers are about to take that memory again. */
	uint64_t memory_trims;
	/* 0 while the store takes writes; otherwise the error (negative)
	 * for which it refuses every write until it is reopened: a sync
	 * of the commit log failed, or a failed write to it could not be
	 * undone (what was acknowledged stays readable and is flushed as
	 * before), or memory could not follow the commit log or the
	 * catalog.  No allocation failure leads here (a write
	 * reserves, and a split or schema change builds, what memory
	 * needs before its log record or its catalog commit); it guards
	 * against a memtable apply failing for another fault.  Reads go
	 * on; the reopen replays the log. */
	int writes_refused;
	/* 0, or -ENOSPC (-EDQUOT) while the disk is full: a write that
	 * adds data is refused with that error, deletes are accepted, and
	 * flushes and compactions go on in the room of the store's
	 * reserve (STORE/reserve, given up when the disk filled), until
	 * twice the reserve is free again; and the bytes the reserve
	 * holds (0 while it is given up, or where there is none). */
	int disk_full;
	uint64_t reserve_bytes;
};
void bt_store_get_stats(struct bt_store *s, struct bt_stats *out);
/* The space of the storage that holds a store, in bytes. */
struct bt_space {
	uint64_t total_bytes;	/* its size */
	uint64_t free_bytes;	/* not taken by any file */
	uint64_t available_bytes; /* that the store may still take (free,
				   less what the filesystem keeps back) */
	uint32_t block_size;	/* the unit it allocates in */
};
/*
 * Measure the storage that holds s: statvfs(3) of the store's directory
 * (through the env given at open, which may measure otherwise: Ceph's
 * cluster figures), or on a cell the storage of the server that serves
 * it, over RPC.  A figure the storage cannot tell (the in-memory env) is
 * 0.  0, or -errno, or on a cell the errors of any call (-EOPNOTSUPP
 * when its servers predate this call).  Thread-safe.
 */
int bt_store_space(struct bt_store *s, struct bt_space *out);
/*
 * The sequence number of the last mutation applied and visible to reads
 * (bt_stats.last_seq), without gathering the other counters: one atomic
 * load, for a caller that asks often whether anything was written since
 * (the filesystem's readdir cache).  Every committed mutation advances it;
 * schema changes and time (maxage) do not.  On a cell, one small call to
 * the serving server (which answers from the same atomic), 0 when it
 * cannot be reached.  Thread-safe.
 */
uint64_t bt_store_last_seq(struct bt_store *s);

#ifdef __cplusplus
}
#endif

#endif
