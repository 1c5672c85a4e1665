/*
 * server_int.h - the tablet server's internals, shared by the files of
 * src/server (the order in which they call each other is below, above
 * their declarations).
 */
#ifndef TABLETFS_SERVER_SERVER_INT_H
#define TABLETFS_SERVER_SERVER_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "log/log.h"
#include "server/server.h"
#include "tablet/tablet.h"
#include "util/cache.h"
#include "util/mutex.h"

/*
 * Row locks are striped by a hash of the row.  A writer holds its row's
 * stripe through the whole commit, sync included, so a writer whose row
 * shares a stripe with another's in flight waits a whole group commit
 * for nothing and misses the next group.  With W writers that happens to
 * (W - 1) / ROW_LOCKS of the writes, so the stripes are many: 4096 take
 * 160 KiB (bench/figures.md has what fewer cost).
 */
#define ROW_LOCKS 4096
#define DEFAULT_MEMTABLE_SIZE (64ull << 20)
#define DEFAULT_CACHE_SIZE (64ull << 20)
#define DEFAULT_MAX_CELL (64ull << 20)

/*
 * The tablets serving a table, in row order, tiling its key space: an
 * immutable, reference-counted list that a split or merge replaces as a
 * whole, so that a reader holding one sees a consistent set (and keeps
 * the tablets in it alive).
 */
struct tablet_map {
	atomic_int refs;
	size_t count;
	struct tablet *tablets[];	/* each referenced */
};

/*
 * Who may read and write a table and each of its families, as the
 * catalog last committed it (server_access.c): built whole from the
 * catalog's table with every schema or access change and replaced under
 * tables_mu, never changed in place; readers copy what they need under
 * tables_mu.
 */
struct server_family_access {
	char name[CATALOG_NAME_MAX + 1];
	struct catalog_access access;
};
struct server_access {
	struct catalog_access table;
	size_t family_count;
	struct server_family_access families[];	/* the schema's order */
};

/* The access of catalog table ct, for a server_table; bt_free() it. */
int server_access_new(const struct catalog_table *ct,
    struct server_access **out);

struct server_table {
	atomic_int refs;
	/* Set when the table is deleted: a write that still holds the
	 * table then fails, rather than fill memory no flush will free. */
	atomic_bool dropped;
	char name[CATALOG_NAME_MAX + 1];
	uint64_t id;
	uint64_t tablet_size;		/* split past this many bytes */
	struct tablet_schema *schema;	/* guarded by server.tables_mu */
	struct server_access *access;	/* guarded by server.tables_mu */
	struct mutex map_mu;
	struct tablet_map *map;		/* guarded by map_mu */
};

/* A log segment and the highest sequence number written to it. */
struct segment {
	uint64_t number;
	uint64_t max_seq;
};

struct write_waiter;

/*
 * The write queue (server_queue.c): mutations wait here in arrival order,
 * and the one at the head leads a write group, doing everyone's log append
 * (one append, at most one sync), apply and publication.  Guarded by mu.
 */
struct write_queue {
	struct mutex mu;
	struct write_waiter *head, *tail;
	/* Gathering (see server_queue.c): synced mutations queued and not
	 * yet in a group; how many the next synced group expects; the
	 * leader waiting for them, if one is; the recent latency of a
	 * synced group's log append, in nanoseconds. */
	size_t queued_syncs;
	size_t expected_syncs;
	struct write_waiter *gatherer;
	uint64_t sync_ns;
	uint64_t gathers;		/* waits, for the statistics */
	/* The futex word every waiter sleeps on (server_queue.c), and the
	 * bit the next waiter to queue takes. */
	_Atomic uint32_t wakes;
	uint32_t next_bit;
	/* The leader's scratch: the group's encoded records, the large
	 * values left out of them (one gap per operation at most), the
	 * parts that the log writes (a run of records and a value per gap,
	 * and a last run per record), and per record its parts and
	 * position. */
	struct buf records;
	struct mutation_gap *gaps;
	size_t gap_slots;
	struct slice *slices;
	size_t part_slots;
	struct log_record *log_records;
	struct log_position *positions;
	size_t slots;
};


/*
 * A log segment in which recovery found damage, kept in STORE/lost/.
 * torn: the damage had intact records after it that no sync covered, so
 * recovery dropped them as a power loss's torn tail (named NNN.torn.log
 * there); otherwise the damage alone was skipped and replay went on.
 */
struct lost_segment {
	uint64_t number;
	bool torn;
};

struct server {
	struct env *env;
	struct env *own_env;		/* the env we created, if any */
	struct server_options opts;
	/* This tablet server's name in the catalog's assignments: the host
	 * name of an embedded store's server, server_options.name of a
	 * cell's. */
	char name[CATALOG_SERVER_MAX + 1];
	/* One server of a cell (server_options.dir set), and whether its
	 * catalog is another process's (server_options.catalog). */
	bool cell;
	bool catalog_remote;
	/* A server with a remote catalog (server_cell_poll.c): the
	 * catalog's schema version that every table here was read at
	 * (0: none yet) and when it was last asked, under poll_mu, which a
	 * poll holds throughout (taken before work_mu); poll_stale asks the
	 * next poll to read every table again whatever the version (a flush
	 * found its tablet gone from the catalog). */
	struct mutex poll_mu;
	uint64_t poll_version;
	int64_t poll_last;
	_Atomic bool poll_stale;
	/* The root's server of a cell: the sweep of sst/ deletes only the
	 * files numbered at most this, the catalog's last number as the
	 * sweep before found it, since a live server may be writing a file
	 * numbered since that it has not yet named (master.c). */
	uint64_t sweep_horizon;
	char *log_dir, *sst_dir, *tmp_dir;
	struct env_lock *lock;
	struct catalog *catalog;
	struct cache *cache;
	struct tablet_env tenv;

	struct mutex tables_mu;
	struct server_table **tables;
	size_t table_count, table_cap;

	struct log_writer *log;		/* NULL when read-only */

	/* Sequence numbers and stamps: written by the write leader alone
	 * (the lead passes under writes.mu), and at open and close;
	 * next_seq is read by schema changes too.  last_stamp is raised
	 * by any thread too (server_stamp_observe()), so it only grows. */
	_Atomic uint64_t next_seq;
	_Atomic int64_t last_stamp;
	/* What the catalog's last_stamp says (under apply_mu). */
	int64_t stamp_recorded;

	struct write_queue writes;

	/* The apply turn: a write group's reservation, log append and apply,
	 * one group at a time; freezes, splits, merges; the segments. */
	struct mutex apply_mu;
	uint64_t applied_upto;
	_Atomic uint64_t visible_seq;
	struct segment *segments;
	size_t segment_count;
	/* Segments in which recovery skipped damage but that a full disk
	 * kept in log/: moved to lost/, not deleted, at close. */
	struct lost_segment *lost_pending;
	size_t lost_pending_count;
	bool replay_disk_full;		/* a flush during replay: ENOSPC */
	uint64_t applied_bytes;		/* since the last memory check */
	_Atomic int64_t frozen_bytes;	/* of every tablet (tablet_env) */
	_Atomic int64_t active_bytes;	/* of every tablet (tablet_env) */
	/* An apply failed, or memory fell behind the catalog: refuse
	 * writes until a reopen.  Set under apply_mu, read anywhere. */
	_Atomic int broken;

	struct mutex row_locks[ROW_LOCKS];
	/*
	 * Taken shared by every write of one row around its row lock, and
	 * exclusively by a batch (server_mutate_rows()), which then takes
	 * no row lock: a batch may name thousands of rows, more locks than
	 * one thread should hold at once (ThreadSanitizer stops at 64).
	 * Taken before a row lock, never twice by one thread; writers are
	 * preferred, so that a stream of single writes cannot starve a
	 * batch.
	 */
	pthread_rwlock_t batch_lock;
	/* Rows for the read-modify-writes (server_write.c). */
	struct server_row_pool rmw_rows;

	struct mutex work_mu;	/* held by a flush/compaction round */
	pthread_t bg_thread;
	bool bg_started;
	struct mutex bg_mu;
	pthread_cond_t bg_cv;		/* work for the background thread */
	pthread_cond_t bg_done_cv;	/* a background round finished */
	bool bg_stop;
	bool bg_wanted;
	int bg_error;			/* the last round's error */
	/* The last round left a frozen memtable unflushed for this error
	 * (what a writer waiting for memory is told), or 0. */
	int bg_flush_error;
	uint64_t bg_begun;		/* rounds begun */
	uint64_t bg_rounds;		/* rounds ended */
	uint64_t write_waits;		/* guarded by bg_mu */
	bool bg_trim_wanted;		/* a round was waited for; bg_mu */
	bool bg_trim_pending;		/* freed, not handed back; bg thread */
	uint64_t memory_trims;		/* guarded by bg_mu */
	uint64_t memtable_peak;		/* guarded by apply_mu */

	/* Disk space (server_space.c): the reserve and the disk-full
	 * state.  disk_full is read anywhere; the rest under space_mu. */
	struct mutex space_mu;
	/* The directory of this server's own files (the reserve, lost/):
	 * the store's, or on a cell its server_options.dir. */
	char *home_dir, *reserve_path;
	uint64_t reserve_size;		/* 0: no reserve */
	bool reserve_held;
	_Atomic int disk_full;		/* 0, or -ENOSPC or -EDQUOT */

	/* Bulk loads open (server_bulk.c): while any is, the sweep leaves
	 * tmp/, where their sorted runs are, alone. */
	_Atomic int bulk_loads;

	atomic_uint_fast64_t mutations;
	atomic_uint_fast64_t reads;
	atomic_uint_fast64_t splits;
	atomic_uint_fast64_t merges;
	atomic_uint_fast64_t files_collected;
};

/* The server's clock, in microseconds. */
static inline int64_t
server_now(struct server *s)
{
	return (int64_t)env_now_micros(s->env);
}

/* A stamp above every one given or observed (W3): the clock, or one
 * above the last stamp when the clock has not passed it.  Caller holds
 * apply_mu (server_queue.c). */
int64_t server_stamp_next_locked(struct server *s);
/* Raise the last stamp to stamp, if that is higher; any thread. */
void server_stamp_raise(struct server *s, int64_t stamp);

/* The sequence number the next mutation will take. */
static inline uint64_t
server_next_seq(struct server *s)
{
	return atomic_load_explicit(&s->next_seq, memory_order_relaxed);
}

/*
 * Number above max_seq and stamp above max_stamp from now on, and let
 * readers see everything up to max_seq: what another server numbered
 * (records replayed from its log, a loaded tablet's redo point), or a
 * family's created_seq, which the server that made it numbered.  Each
 * server of a cell numbers its own mutations, and a tablet or family
 * that comes from another must order after what was numbered there.
 * Caller holds apply_mu: every group before is applied and published.
 * 0, or -EOVERFLOW when the numbers are exhausted.
 */
int server_seq_raise_locked(struct server *s, uint64_t max_seq,
    int64_t max_stamp);
/* Number at or above created_seq (a family's, made at another server,
 * catalog_family): server_seq_raise_locked() to the number before it. */
static inline int
server_seq_raise_created_locked(struct server *s, uint64_t created_seq)
{
	return created_seq == 0 ? 0 :
	    server_seq_raise_locked(s, created_seq - 1, 0);
}

/*
 * The files of src/server call one way, each only into those listed
 * before it here: the registry (server_tables.c), disk space
 * (server_space.c), the master (master.c), a cell's server
 * (server_cell.c) and its poll of the catalog (server_cell_poll.c),
 * the log segments
 * (server_segments.c), the background thread (server_background.c), the
 * write queue (server_queue.c), reads (server_read.c), writes
 * (server_write.c); schema changes and administration
 * (server_schema.c), the bulk load (server_bulk.c), the check
 * (server_check.c), and opening and closing (server.c) call any of them.
 */

/* ---- The table registry and tablet maps (server_tables.c) ---- */

/* server_table_ref() without the id: a referenced table by name;
 * -ENOENT if there is none. */
int server_table_lookup(struct server *s, const char *name,
    struct server_table **out);
/* The schema of t, referenced (tablet_schema_unref()): a schema change
 * replaces it under tables_mu. */
struct tablet_schema *server_table_schema(struct server *s,
    struct server_table *t);
/* The table with this catalog id, or NULL; caller holds tables_mu. */
struct server_table *server_table_find_id_locked(struct server *s,
    uint64_t id);
/* The table's current tablets, referenced. */
struct tablet_map *server_table_map(struct server_table *t);
/* Whether the tablet with id tablet serves row in the current map (a
 * look under map_mu, without a reference to the map): 0, BT_STALE when
 * another tablet holds row, BT_ENOTSERVING when it is not served here
 * (tablet_serving()). */
int server_table_serves_row(struct server_table *t, uint64_t tablet,
    struct slice row);
/* The table's current tablets, borrowed: the caller holds apply_mu, and
 * splits and merges install maps only in the apply turn (master.c), so
 * the map stays current and alive until apply_mu is released. */
struct tablet_map *server_table_map_locked(struct server *s,
    struct server_table *t);
/* Install m (taking the caller's reference) in place of the current map,
 * which is unreferenced; caller holds apply_mu (see above). */
void server_table_map_install(struct server *s, struct server_table *t,
    struct tablet_map *m);
/* A map with room for count tablets (count set, slots NULL). */
struct tablet_map *server_tablet_map_new(size_t count);
/* Accepts NULL. */
void server_tablet_map_unref(struct tablet_map *m);
/*
 * A new map: m with the tablets at [first, first + old_count) replaced by
 * fresh (fresh_count of them, whose references it takes on success).
 * 0 or -ENOMEM.
 */
int server_tablet_map_replace(const struct tablet_map *m, size_t first,
    size_t old_count, struct tablet *const *fresh, size_t fresh_count,
    struct tablet_map **out);
/* The index of the tablet serving row (binary search on starts). */
size_t server_tablet_map_index(const struct tablet_map *m, struct slice row);
/* The tablet serving row, borrowed from m. */
struct tablet *server_tablet_map_find(const struct tablet_map *m,
    struct slice row);
/* References to every table, for work done without tables_mu. */
int server_tables_snapshot(struct server *s, struct server_table ***out,
    size_t *count);
void server_tables_snapshot_free(struct server_table **list, size_t count);
/*
 * The largest tablet size the store's files allow: half the env's
 * largest file (env_max_file_size(): the RADOS object limit), since a
 * major compaction writes a locality group of a tablet as one SSTable
 * and a tablet may outgrow its size before the master splits it
 * (docs/rados.md, "The object size limit"); UINT64_MAX when files are
 * unbounded.  A table's tablet_size is held to it when the table is
 * built, and createtable refuses more.
 */
uint64_t server_tablet_size_max(const struct server *s);
/* How server_table_build() opens a table's tablets: with their files
 * from the catalog; a new table's, which have none; or not served
 * (tablet_open_unserved(): a cell's server opens them so, and the
 * master loads them one by one). */
enum server_tablets_open {
	SERVER_TABLETS_FILES,
	SERVER_TABLETS_MADE,
	SERVER_TABLETS_UNSERVED,
};
/* A table with its schema and tablets as the catalog has them (build:
 * given them; load: reading them), its tablets opened as how says. */
int server_table_build(struct server *s, const struct catalog_table *ct,
    const struct catalog_tablet *cts, size_t count,
    enum server_tablets_open how, struct server_table **out);
int server_table_load(struct server *s, const char *name,
    enum server_tablets_open how, struct server_table **out);
/* Make room for one more table (reserve), or add one (add, which may
 * then not fail); caller holds tables_mu. */
int server_tables_reserve_locked(struct server *s);
int server_tables_add_locked(struct server *s, struct server_table *t);

/* ---- Disk space (server_space.c; its numbered rules) ---- */

/* Whether rc says the disk (or the user's quota) is full. */
bool server_space_is_full_error(int rc);
/* Size the reserve for the store's filesystem, and take it, keep it or
 * give it up with the disk-full state (rule 4).  Read-only: nothing. */
int server_space_open(struct server *s);
/* An operation failed with rc: when that is a full disk, enter the
 * disk-full state and give up the reserve (rule 1). */
void server_space_note(struct server *s, int rc);
/* Whether the store is in the disk-full state, after leaving it if
 * there is room again (rule 3).  Takes space_mu. */
bool server_space_full(struct server *s);
/* 0, or -ENOSPC for a mutation that adds data while the disk is full
 * (rule 2). */
int server_space_refuse(struct server *s, const struct mutation *ops,
    size_t count);
/* The state (0 or an errno) and the bytes the reserve holds. */
void server_space_get_stats(struct server *s, int *disk_full,
    uint64_t *reserve_bytes);

/* ---- The master's duties (master.c) ---- */

/* Split the tablets of t that outgrew its tablet_size and merge adjacent
 * ones that shrank below a quarter of it; caller holds work_mu.  Nothing
 * on a server whose catalog is remote (only the root's server changes
 * the catalog's tablets). */
int master_balance_table(struct server *s, struct server_table *t);
/* Split the tablet holding row at row; caller holds work_mu.  0, -EEXIST
 * if a tablet already starts there, or -EOPNOTSUPP on a server whose
 * catalog is remote. */
int master_split_at(struct server *s, struct server_table *t,
    struct slice row, bool auto_split);
/* Delete every file in this server's tmp/ and, on the server that holds
 * the catalog, every SSTable in sst/ that the catalog does not name
 * (mark and sweep; on a cell's root server, only those numbered before
 * the previous sweep: s->sweep_horizon); caller holds work_mu, so no
 * flush or compaction of this server is between writing a file and
 * naming it.  tmp/ is left alone while a bulk load is open (its sorted
 * runs are there). */
int master_collect_files(struct server *s);
/*
 * The memtable budget, memtable_size, holds the active and the frozen
 * memtables of all tablets together: a memtable is frozen once it holds
 * master_freeze_size() bytes (half the budget, and at most
 * server_tablet_size_max(), so that its flush fits in one file), so
 * that it can flush while the next one fills, and writers wait while
 * active and frozen memtables together hold the whole budget
 * (server_write.c).
 */
size_t master_freeze_size(const struct server *s);
/*
 * Freeze tablet t's memtable (tablet_freeze(); caller holds apply_mu),
 * unless the store is broken (s->broken, returned): its memtables may
 * then hold half a mutation, which must never reach an SSTable.  What
 * they hold stays in memory and in the log, and a reopen replays it whole.
 */
int master_freeze(struct server *s, struct tablet *t);
/* Flush t before taking the apply turn, so that little is left to flush
 * while writers wait (the first of Bigtable's two minor compactions
 * before a tablet changes hands).  Caller holds work_mu. */
int master_preflush(struct server *s, struct tablet *t);
/* Flush everything tablet t holds in memory.  Caller holds apply_mu (so
 * nothing new arrives), has found the store not broken, and holds work_mu
 * (so nothing else flushes). */
int master_drain_locked(struct server *s, struct tablet *t);
/* Keep the active memtables of all tablets together within
 * master_freeze_size(): freeze the largest while they are over it (their
 * flush follows in the same background round). */
void master_limit_memory(struct server *s);
/* Assign every tablet that no server holds to this one (at open). */
int master_assign_tablets(struct server *s);
/* The sweep, every so many background rounds. */
int master_collect_rounds(struct server *s, uint64_t round);

/* ---- A cell's tablet server (server_cell.c) ---- */

/* Check the cell's part of o (server.h): 0, or -EINVAL with a detail. */
int server_cell_options_check(const struct server_options *o);
/* Whether dir is a path below the store: relative, its components
 * neither empty nor "." nor "..". */
bool server_cell_dir_is_below(const char *dir);
/* Make the server's directory under the store at path, and its log/
 * and tmp/, each synced into its parent (at open). */
int server_cell_dirs_make(struct server *s, const char *path);
/* 0, or -EEXIST when the server's log/ holds segments (server.h). */
int server_cell_log_check(struct server *s);
/* An embedded open of a cell's storage: -EBUSY, saying so, when a
 * server's log under path/servers/ holds segments (writes that only the
 * cell's recovery puts back). */
int server_cell_logs_pending(struct server *s, const char *path);
/* Whether t's current map has tablet id. */
bool server_cell_table_knows(struct server_table *t, uint64_t id);
/*
 * The table named name read again from the catalog (a table the root's
 * server made, split or merged since this server read it): its schema,
 * access and tablets, those here kept when the catalog has them with
 * the same range, the others not served; a table new here is added to
 * the registry with all its tablets not served.  *out referenced.
 * Caller holds work_mu (so that no split, merge or flush of this server
 * runs beside it).  0, -ENOENT (not in the catalog), BT_ECORRUPT (a
 * tablet served here changed its range in the catalog: nothing
 * changes), or the catalog's error.  A tablet served here that the
 * catalog no longer has is discarded (server_cell_table_sync()).
 */
int server_cell_table_reread(struct server *s, const char *name,
    struct server_table **out);
/* The same for t on a server whose catalog is remote (a family made at
 * the root's server since): server_cell_table_sync(). */
int server_cell_table_refresh(struct server *s, struct server_table *t);
/* Assign every tablet of t to this server in the catalog: a table made
 * by a cell's root server (server_table_create()). */
int server_cell_tablets_assign(struct server *s, struct server_table *t);
/*
 * Bring t to what the catalog says of it now, on a server whose catalog
 * is remote (server_cell_poll.c, after a schema change at the root's
 * server): its schema, access and tablets as server_cell_table_reread()
 * does, a tablet served here that the catalog no longer has discarded
 * (it stops serving and its memtables go unflushed: its table was
 * dropped, or another server holds it now); a table the catalog no
 * longer has, or has under another id (dropped, maybe made again), is
 * discarded whole, its tablets so, and replaced in the registry by the
 * catalog's table of that name, if any, with no tablet served.  The
 * catalog is read before work_mu, which this takes; when t's tablets
 * changed meanwhile (a load, unload or split) it is read again.  0, or
 * the catalog's error (nothing changes), or -EAGAIN when t kept
 * changing.
 */
int server_cell_table_sync(struct server *s, struct server_table *t);

/* ---- A cell's server's poll of the catalog (server_cell_poll.c) ---- */

/* poll_mu and the poll's state (at open and close). */
void server_cell_poll_init(struct server *s);
void server_cell_poll_release(struct server *s);
/* The background thread's poll, before each round: server_schema_poll()
 * when about a second passed since the last or a flush asked for one;
 * nothing on a server whose catalog is local. */
void server_cell_poll_tick(struct server *s);
/* A flush or compaction of a tablet failed with rc: on a server with a
 * remote catalog, -ENOENT may be the catalog no longer having its tablet,
 * so the next poll reads every table again (and discards it). */
void server_cell_poll_note(struct server *s, int rc);

/* ---- Replaying the log (server_replay.c) ---- */

/* One replay of log segments: where, into what, and what it found. */
struct replay {
	const char *dir;	/* the segments' directory */
	const char *name;	/* the directory as notices name it */
	/* only_count 0: every tablet of the store (at open, alone); else
	 * only the records of these tablets' rows, in table only_table. */
	struct tablet *const *only;
	size_t only_count;
	uint64_t only_table;
	/* Raised to the highest sequence number and server stamp of the
	 * records read, whichever tablet they are for. */
	uint64_t max_seq;
	int64_t max_stamp;
};

/*
 * Replay segment number of rp->dir into its tablets, skipping what each
 * has flushed; last: the log's last segment, which may end torn.
 * Damage is skipped (a torn tail dropped) with one notice, and sets
 * *damaged (and *torn when intact records were dropped as torn).
 */
int server_replay_segment(struct server *s, struct replay *rp,
    uint64_t number, bool last, bool *damaged, bool *torn);
/* One line for the store's user (server_options.notice; stderr). */
void server_notice(struct server *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- The log segments (server_segments.c) ---- */

/* Record that segment number holds sequence numbers up to max_seq;
 * caller holds apply_mu. */
void server_segment_note_locked(struct server *s, uint64_t number,
    uint64_t max_seq);
/* Delete the log segments every tablet has flushed past. */
void server_segments_collect(struct server *s);

/* ---- The background thread (server_background.c) ---- */

/* Start the thread (at open), or stop it and wait for it to end (at
 * close; nothing when it was not started). */
int server_background_start(struct server *s);
void server_background_stop(struct server *s);
/* Ask the background thread for a flush and compaction round. */
void server_background_wake(struct server *s);
/* Run a whole background round and return its first error. */
int server_background_wait_round(struct server *s);
/* The tablet_env callbacks (tablet.h): compact_poll and compact_wanted,
 * with the server as their argument. */
void server_background_poll(void *arg);
void server_background_compact_wanted(void *arg);

/* ---- The write queue (server_queue.c) ---- */

int server_queue_init(struct write_queue *q);
void server_queue_release(struct write_queue *q);
/*
 * Commit a validated mutation of row in table t through the write queue:
 * log it in a write group and apply and publish it (W1, W2), its server
 * stamp in *stamp when not NULL.  The caller holds the row's lock and
 * has checked that the store is writable and has room for it.
 */
int server_queue_commit(struct server *s, struct server_table *t,
    struct slice row, struct mutation *ops, size_t count, bool sync,
    int64_t *stamp);

/*
 * Commit the rows whose results[i] is 0 as one unit of the write queue:
 * in one write group, so with one log append (and at most one sync); the
 * rows' stamps in rows[i].stamp.  Each row is applied atomically and on
 * its own: results[i] receives each one's outcome.  The caller holds the
 * rows' locks and has checked that the store is writable.  0, or the
 * first failed row's error.
 */
int server_queue_commit_rows(struct server *s,
    struct server_row_mutation *rows, size_t n, bool sync, int *results);

/* ---- Deletes that leave condemned versions condemned
 * (server_condemned.c) ---- */

/* A mutation to commit: marks, then the caller's operations. */
struct condemned_marks {
	struct mutation *ops;	/* the caller's own when there is no mark */
	size_t count;
	size_t marks;		/* version deletes in front of them */
	size_t cap;
};
void condemned_marks_init(struct condemned_marks *m);
/* Give back the final timestamps of the caller's count ops (a commit
 * stamps its puts) and release m. */
void condemned_marks_finish(struct condemned_marks *m, struct mutation *ops,
    size_t count);

/* Whether ops delete a version in a family whose policy counts versions:
 * whether server_condemned_marks() may have to read. */
bool server_condemned_may_mark(const struct tablet_schema *schema,
    const struct mutation *ops, size_t count);

/*
 * With the row's lock held: into m, the mutation to commit in place of
 * ops, which is ops itself or ops behind the version deletes that keep
 * condemned the versions its deletes would bring back.  The marks borrow
 * the names of ops.  0, or a read's error (m then holds nothing).
 */
int server_condemned_marks(struct server *s, struct server_table *t,
    const struct tablet_schema *schema, struct slice row,
    struct mutation *ops, size_t count, struct condemned_marks *m);

/* ---- Reads (server_read.c) ---- */

/* Read one row of t from the tablet serving it now, at the published
 * snapshot: 0 or BT_NOTFOUND. */
int server_table_read_row(struct server *s, struct server_table *t,
    struct slice row, const struct cells_filter *filter,
    struct cells_row *out);

#endif
