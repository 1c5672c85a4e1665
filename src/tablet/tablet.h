/*
 * tablet.h - a tablet: one row range of one table, served from a memtable,
 * a frozen memtable being flushed, and SSTables per locality group
 * (docs/design.md section 4; Bigtable section 5.3).
 *
 * Writes: tablet_apply() inserts a row mutation's entries into the
 * memtable.  The caller (the tablet server) serializes applies and freezes
 * and calls them in sequence order, after the mutation is in the commit log.
 *
 * Reads see a consistent view: a reference-counted version of the tablet
 * (memtables, SSTables and schema) plus a snapshot sequence number; entries
 * above the snapshot are ignored.  Reads may run on any thread, concurrently
 * with the writer and with the background work.
 *
 * Background work: tablet_flush() writes the frozen memtable as one SSTable
 * per locality group (minor compaction); tablet_compact() merges a group's
 * SSTables into one (merging compaction once a group has
 * TABLET_MERGE_THRESHOLD files; major compaction for all groups on
 * request), dropping deleted and condemned data.  Files are written to
 * tmp/, synced, renamed into sst/, the directory synced, and only then named
 * in the catalog; inputs are deleted only after the catalog stops naming
 * them.  The caller runs flushes and compactions of one tablet on one
 * thread at a time; a flush may run in the middle of a compaction of the
 * same tablet on that thread (tablet_env.compact_poll): the compaction
 * replaces only its inputs, and the flushed file stays beside its output
 * (entries carry their sequence numbers, so the order of files does not
 * decide which entry is newer).
 */
#ifndef TABLETFS_TABLET_TABLET_H
#define TABLETFS_TABLET_TABLET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "catalog/catalog.h"
#include "tablet/cells.h"
#include "tablet/mutation.h"
#include "tablet/usage.h"
#include "util/cache.h"
#include "util/env.h"
#include "util/slice.h"

/*
 * A group with this many SSTables gets a merging compaction (of the files
 * compact_pick in tablet_compact.c takes).  Not 3 (HBase's
 * hbase.hstore.compaction.min): at 3 the files a sequential load leaves,
 * whose rows do not overlap and which scans meet one after the other,
 * are merged in the middle of the reads that follow, which then compete
 * with the merge for the disk and the cores (bench/figures.md); what
 * the files of a write burst cost later scans is the idle compaction's
 * (TABLET_IDLE_USEC).
 */
#define TABLET_MERGE_THRESHOLD 4

/*
 * Read-triggered compaction (LevelDB's seek compaction).  A point read
 * that visits two SSTables or more of one locality group (those its Bloom
 * filters and the entries already gathered do not rule out), a scan that
 * opens two or more, and every TABLET_SCAN_SAMPLE_BYTES such a scan
 * returns, each charge the tablet one read.  The budget is one read per
 * TABLET_SEEK_BYTES of the tablet's SSTables, at least TABLET_SEEK_MIN: a
 * read that consults an extra file costs about what merging that many
 * bytes would (LevelDB's reasoning), so one pass of reads over a tablet
 * whose rows are spread over several files uses it up.  Then the group
 * of the read that used it up is merged as a merging compaction would
 * take it (compact_pick), even below TABLET_MERGE_THRESHOLD files.  Every
 * flush or compaction that changes the files starts a new budget; a
 * workload that only writes is never charged.
 */
#define TABLET_SEEK_BYTES (16 * 1024)
#define TABLET_SEEK_MIN 100
#define TABLET_SCAN_SAMPLE_BYTES (1024 * 1024)

/*
 * Idle compaction (Bigtable's periodic merging compactions, RocksDB's
 * idle ones): once no write has reached a tablet for TABLET_IDLE_USEC,
 * its memtable is flushed when it holds at least TABLET_IDLE_FLUSH_MIN
 * bytes and a fraction of its SSTables' bytes (COMPACT_SIZE_RATIO in
 * tablet_compact.c), and each group whose files are all within that
 * ratio of the newer ones taken together is merged into one file.
 * Scans after a write burst then meet one file per group and no
 * memtable, instead of the files the burst left below
 * TABLET_MERGE_THRESHOLD.  The size rule
 * is the merging compaction's, so that a small flush does not rewrite a
 * large file.  Nothing is done when the tablet's data does not overlap
 * (files of disjoint rows and a memtable past them, as a sequential load
 * leaves): a scan meets those one after the other, and rewriting them
 * would only compete with the reads.  An idle tablet that is done (an
 * empty or small memtable, one file per group, files of unlike sizes or
 * disjoint rows) costs nothing more until a write reaches it, so a store
 * of many idle tablets pays once for each.
 */
#define TABLET_IDLE_USEC (300 * 1000)
#define TABLET_IDLE_FLUSH_MIN (1024 * 1024)

/* Where a tablet keeps its files and what it shares with the others. */
struct tablet_env {
	struct env *env;
	const char *sst_dir;		/* STORE/sst */
	const char *tmp_dir;		/* STORE/tmp */
	struct cache *block_cache;
	struct catalog *catalog;
	/* Bytes of entries in the frozen memtables of every tablet, waiting
	 * for their flush; kept by the tablets (NULL: not counted). */
	_Atomic int64_t *frozen_bytes;
	/* Bytes of entries in the active memtables of every tablet; kept
	 * by the tablets (NULL: not counted).  With frozen_bytes, what the
	 * server holds to its memtable budget. */
	_Atomic int64_t *active_bytes;
	/* Called by a compaction every TABLET_COMPACT_POLL_ROWS rows, on
	 * the compaction's thread (NULL: never), so that the caller can
	 * flush frozen memtables (of any tablet, this one too) instead of
	 * leaving writers to wait for the whole compaction. */
	void (*compact_poll)(void *arg);
	void *compact_poll_arg;
	/* Called by a reader, on its thread, when reads that had to consult
	 * several SSTables have used up the tablet's read budget
	 * (TABLET_SEEK_BYTES), so that the caller runs a background round
	 * soon: tablet_needs_compaction() is then true.  Called once per
	 * budget; it must not block (NULL: never called). */
	void (*compact_wanted)(void *arg);
	void *compact_wanted_arg;
	/* Below 0 while the disk is full (NULL: never): a flush then
	 * reads the active memtable beside the frozen one, so that what
	 * deletes made since the freeze hide is not written (tablet_flush). */
	_Atomic int *disk_full;
};

#define TABLET_COMPACT_POLL_ROWS 256

/* A table's schema as the engine uses it; reference-counted, immutable. */
struct tablet_schema;

/* Parse a catalog table (its GC policies).  0, -ENOMEM, -EINVAL. */
int tablet_schema_new(const struct catalog_table *ct,
    struct tablet_schema **out);
void tablet_schema_ref(struct tablet_schema *s);
/* Accepts NULL. */
void tablet_schema_unref(struct tablet_schema *s);
uint64_t tablet_schema_table_id(const struct tablet_schema *s);
/* The largest created_seq of its families (catalog_family): entries
 * numbered below it belong to none of them. */
uint64_t tablet_schema_created_seq_max(const struct tablet_schema *s);
/* Whether family is in the schema. */
bool tablet_schema_has_family(const struct tablet_schema *s,
    struct slice family);
/* family's GC policy, borrowed while s lives; NULL when family is not in
 * the schema or keeps every version. */
const struct gc_policy *tablet_schema_family_gc(const struct tablet_schema *s,
    struct slice family);

struct tablet;

/* Open a tablet from its catalog row: open its SSTables.  The schema is
 * referenced, not taken.  The tablet is reference-counted (readers may
 * hold it after the server has replaced it by a split or merge); open
 * returns one reference.
 *
 * An SSTable that cannot be opened (missing, truncated, a footer, index,
 * filter or metaindex that fails its check, a read error) does not fail
 * the open: the file stays in the tablet as damaged.  Every read or scan
 * that needs its locality group then fails with BT_ECHECKSUM, BT_ECORRUPT
 * or -EIO and a detail naming the file (the catalog records no key range,
 * so the file may hold any row of the tablet).  Writes and flushes go on;
 * compactions leave that group alone (its files are neither merged nor
 * deleted); a split shares the damaged file with both halves; and
 * tablet_files_in_range() fails, so the tablet is not merged.  Opening
 * again once the file is readable serves it. */
int tablet_open(const struct tablet_env *tenv, const struct catalog_tablet *ct,
    struct tablet_schema *schema, struct tablet **out);
/* The same with the tablet's files given (count may be 0: a tablet the
 * catalog is making), without asking the catalog. */
int tablet_open_files(const struct tablet_env *tenv,
    const struct catalog_tablet *ct, struct tablet_schema *schema,
    const struct catalog_file *files, size_t count, struct tablet **out);
void tablet_ref(struct tablet *t);

/*
 * Serving (a cell's assignment of tablets to servers, docs/design.md
 * section 5): a tablet serves from its open until tablet_serving_stop().
 * From then on every read, scan, reservation (so every write) and ingest
 * of it fails with BT_ENOTSERVING, and a split or merge of it with
 * -EBUSY.  The server stops a tablet only with its memtables flushed, so
 * that nothing of it lives in this process alone, and puts one opened by
 * tablet_open_unserved() in its place: the same id, range and redo point,
 * no files, never serving.  Thread-safe.
 */
int tablet_open_unserved(const struct tablet_env *tenv,
    const struct catalog_tablet *ct, struct tablet_schema *schema,
    struct tablet **out);
void tablet_serving_stop(struct tablet *t);
bool tablet_serving(const struct tablet *t);
/* Drop a reference; the last one frees the tablet, and unflushed memtable
 * data with it (it is in the log).  Accepts NULL. */
void tablet_unref(struct tablet *t);

/*
 * Splits and merges (Bigtable 5.3) without copying data: the new tablets
 * serve the old ones' SSTables, restricted to their own rows, until
 * compactions rewrite them.  The caller has flushed the old tablets (empty
 * memtables, -EBUSY otherwise), holds the apply turn so that nothing is
 * applied to them meanwhile, and has already recorded the new tablets in
 * the catalog (left, right and ct are those rows, files included).  The
 * old tablets stay valid for readers that still hold them.
 */
int tablet_split(struct tablet *t, const struct catalog_tablet *left,
    const struct catalog_tablet *right, struct tablet **leftp,
    struct tablet **rightp);
int tablet_merge(struct tablet *left, struct tablet *right,
    const struct catalog_tablet *ct, struct tablet **out);
/*
 * Give t, made by tablet_split() or tablet_merge() from a row whose id
 * was 0 and held by its maker alone (one reference, no reader), the id
 * the catalog gave it: a split recorded by a remote catalog, which
 * returns the new ids after its commit (catalog.h: no prepare crosses),
 * is built before and numbered after, where nothing may fail.
 */
void tablet_renumber(struct tablet *t, uint64_t id);
/* Where to split: a row near the middle of the tablet's SSTable bytes,
 * strictly inside its range.  0 with the row in *row, BT_NOTFOUND when the
 * tablet cannot be split (one block, or a single row), or an error. */
int tablet_split_row(struct tablet *t, struct buf *row);
/* Whether every SSTable of the tablet holds only its own rows (so that a
 * merge may take them as they are): 1 yes, 0 no, or an error. */
int tablet_files_in_range(struct tablet *t);
/* Delete SSTable number unless the catalog still names it (another tablet
 * shares it).  Call only after the catalog stopped naming it here. */
void tablet_file_release(const struct tablet_env *tenv, uint64_t number);

uint64_t tablet_id(const struct tablet *t);
/* The tablet's row range [start, end); an empty end is the table's end. */
struct slice tablet_start(const struct tablet *t);
struct slice tablet_end(const struct tablet *t);
/* Whether row lies in [start, end). */
bool tablet_contains(const struct tablet *t, struct slice row);
/* The redo point: mutations at or below it are in the SSTables. */
uint64_t tablet_flushed_seq(const struct tablet *t);
/*
 * Replace the schema seen by later reads, flushes and compactions, in two
 * steps, so that nothing needs memory once the catalog holds the change:
 * prepare takes a reference to schema and allocates what install needs
 * (0 or -ENOMEM); install puts schema in place and frees the change.
 * Install fails (-ENOMEM, the tablet unchanged) only if the tablet gained
 * files in between and memory for them is short: a caller that keeps
 * flushes and compactions off the tablet meanwhile gets 0.  A change not
 * installed is freed with tablet_schema_change_free (NULL is fine).
 */
struct tablet_schema_change;
int tablet_schema_prepare(struct tablet *t, struct tablet_schema *schema,
    struct tablet_schema_change **out);
int tablet_schema_install(struct tablet_schema_change *c);
void tablet_schema_change_free(struct tablet_schema_change *c);

/* ---- Writer side (serialized by the caller) ---- */

/* Insert a mutation; op i gets sequence number first_seq + i.  Timestamps
 * must be final.  0 or -ENOMEM (never, for a mutation reserved). */
int tablet_apply(struct tablet *t, uint64_t first_seq, struct slice row,
    const struct mutation *ops, size_t count);
/*
 * Reserve what tablet_apply() of this mutation needs, on top of what was
 * reserved since the last tablet_reserve_end(), so that applying them
 * allocates nothing: a mutation whose log record is written must not
 * fail for memory in the apply that follows.  0 or -ENOMEM.  A freeze
 * drops the reservation.
 */
int tablet_reserve(struct tablet *t, struct slice row,
    const struct mutation *ops, size_t count);
void tablet_reserve_end(struct tablet *t);
size_t tablet_memtable_usage(const struct tablet *t);
bool tablet_has_frozen(const struct tablet *t);
/* Freeze the memtable for flushing.  0, BT_NOTFOUND if it is empty, or
 * -EBUSY if a frozen memtable is still being flushed. */
int tablet_freeze(struct tablet *t);
/* The lowest sequence number in the memtables, or UINT64_MAX if none: the
 * commit log before it is no longer needed for this tablet. */
uint64_t tablet_oldest_unflushed_seq(const struct tablet *t);

/* ---- Background side ---- */

/* Flush the frozen memtable.  0, or BT_NOTFOUND if there is none.
 * parallel: compress its blocks on a second thread (sst_options.parallel),
 * for a flush that no stream of writes competes with for the cores; a
 * background flush beside the writers filling the next memtable is
 * serial: a second thread there takes a core from the writers, which
 * already keep both cores busy (bench/figures.md). */
int tablet_flush(struct tablet *t, bool parallel);
/* Whether some group has TABLET_MERGE_THRESHOLD files or more, the
 * reads have used up the budget and their group has two files or more,
 * or the tablet is idle and a group can be merged (TABLET_IDLE_USEC);
 * never for the files a merging compaction failed on (a new file makes
 * them others). */
bool tablet_needs_compaction(const struct tablet *t);
/* Merge the SSTables of each group that needs it, as
 * tablet_needs_compaction() says (all groups with files when major). */
int tablet_compact(struct tablet *t, bool major, int64_t now);
/*
 * The idle check (TABLET_IDLE_USEC), called by the background thread in
 * each of its rounds with the time now (microseconds): whether no
 * mutation was applied to t since a call at least TABLET_IDLE_USEC
 * before now.  When idle, *freeze says whether the memtable is worth
 * flushing first (the caller then freezes it in the apply turn and
 * flushes it) and tablet_needs_compaction() counts the groups an idle
 * merge takes.  *pending is set when t had writes since the last call
 * and would have idle work, so that the caller checks again soon.
 */
bool tablet_idle_check(struct tablet *t, int64_t now, bool *freeze,
    bool *pending);

/*
 * Ingest: SSTables built from entries given in key order rather than from
 * the memtable, added to the tablet (a bulk load, docs/design.md section
 * 8).  The caller gives every entry of the tablet's rows (keys strictly
 * increasing, each a put of a family of the tablet's schema, or any
 * internal key whose row lies in the tablet's range) with
 * tablet_ingest_add(); tablet_ingest_finish() writes one SSTable per
 * locality group that has entries with the groups' settings, as a flush
 * would (written to tmp/, synced, renamed into sst/: the caller then
 * syncs sst/), and allocates what the install needs; the caller names
 * the files in the catalog (tablet_ingest_files()) and then
 * tablet_ingest_install() makes them visible, which cannot fail.  The
 * caller holds off the tablet's flushes and compactions from start to
 * install (it is the tablet's one file adder).  Freed before its install,
 * an ingest removes its files unless the catalog names them or cannot
 * say (tablet_file_release()).
 */
struct tablet_ingest;

/* Start an ingest into t (referenced meanwhile); parallel as for
 * tablet_flush().  0 or -ENOMEM. */
int tablet_ingest_new(struct tablet *t, bool parallel,
    struct tablet_ingest **out);
/* Add an entry; -ENOENT for a family the schema lacks; -EINVAL for a key
 * not above the last, or not an internal key; errors of the files. */
int tablet_ingest_add(struct tablet_ingest *in, struct slice key,
    struct slice value);
/* Finish the files, each recording max_seq as its highest sequence
 * number, open them, and allocate the new version.  0 or an error (the
 * files are then removed). */
int tablet_ingest_finish(struct tablet_ingest *in, uint64_t max_seq);
/* The finished files, for the catalog (borrowed from in); *count may be
 * 0 when no entry was added. */
const struct catalog_file *tablet_ingest_files(const struct tablet_ingest *in,
    size_t *count);
/* Once the catalog names the files: show them to reads, and raise the
 * redo point to flushed_seq if that is higher. */
void tablet_ingest_install(struct tablet_ingest *in, uint64_t flushed_seq);
/* Accepts NULL. */
void tablet_ingest_free(struct tablet_ingest *in);

struct tablet_stats {
	uint64_t sstables;		/* damaged ones too */
	uint64_t damaged_sstables;	/* named but not readable */
	uint64_t sstable_bytes;		/* whole files, shared ones too */
	uint64_t data_bytes;		/* estimated bytes of its own rows */
	uint64_t memtable_bytes;
	uint64_t flushes;
	uint64_t compactions;
	uint64_t requests;		/* tablet_request_note() calls */
};
void tablet_get_stats(struct tablet *t, struct tablet_stats *out);
/*
 * Count one request served by t (a row read or written, a scan entering
 * it: row empty), for the master's balancing by load (docs/design.md
 * section 5): one relaxed atomic add, no lock, so that any thread may
 * call it on the request path; one in TABLET_SAMPLE_EVERY also keeps
 * its row (below).  The count only grows; tablet_request_count() reads
 * it, and whoever wants a rate takes the difference of two reads.
 */
void tablet_request_note(struct tablet *t, struct slice row);
uint64_t tablet_request_count(const struct tablet *t);
/*
 * Where to split t so that its requests divide evenly (a hot tablet,
 * docs/design.md section 5, "Balancing by load"): the middle row of the
 * rows of its recent requests, which tablet_request_note() samples (one
 * in TABLET_SAMPLE_EVERY, the last TABLET_SAMPLES, each copied under a
 * lock the request only tries, so none waits for it).  0 with the row
 * in *row, strictly inside t's range; BT_NOTFOUND with too few samples
 * or none inside; -ENOMEM.
 */
#define TABLET_SAMPLE_EVERY 8
#define TABLET_SAMPLES 32
int tablet_request_split_row(struct tablet *t, struct buf *row);

/* One of a tablet's SSTables, per family (tablet_usage_get()). */
struct tablet_file_usage {
	uint64_t number;
	char group[CATALOG_NAME_MAX + 1];
	uint64_t size;
	/* Whether the file records what it holds per family (format
	 * version 5); labels is empty when not, or when it is damaged.
	 * Each label's bytes are its share of size. */
	bool known;
	struct usage labels;
	/* The file's data blocks, and those of them that may hold rows of
	 * this tablet (by the index, whole blocks: sst_reader_range_size()):
	 * below data_bytes when a split shares the file with a sibling. */
	uint64_t data_bytes;
	uint64_t range_bytes;
};

/*
 * What a tablet holds per family (docs/design.md section 3,
 * "Accounting"): its memtables' entries, each label's bytes its share of
 * what the memtables take beyond empty ones, and its files (shared ones
 * too: the caller counts a file once).  Release with
 * tablet_usage_release().
 */
struct tablet_usage {
	uint64_t memory_bytes;
	struct usage memory;
	size_t file_count;
	struct tablet_file_usage *files;
};
/* A consistent picture of t: files and memtables of one version.  0 or
 * -ENOMEM.  Reads no data block. */
int tablet_usage_get(struct tablet *t, struct tablet_usage *out);
void tablet_usage_release(struct tablet_usage *u);

/* ---- Readers ---- */

/*
 * Read one row as of snapshot.  0, or BT_NOTFOUND if nothing is selected.
 * now is the time for the families' maxage policies (microseconds), or
 * TABLET_NOW_UNREAD for the read to take it from the tablet's env clock
 * itself, and only when it has cells to judge and a family has a maxage:
 * most reads then read no clock.
 */
#define TABLET_NOW_UNREAD	INT64_MIN
int tablet_read_row(struct tablet *t, uint64_t snapshot, struct slice row,
    int64_t now, const struct cells_filter *filter, struct cells_row *out);

struct tablet_scan;

/*
 * Scan rows from start (or after it, when start_exclusive) to end (empty:
 * the tablet's end) as of snapshot.  The filter's arrays must outlive the
 * scan.
 */
int tablet_scan_open(struct tablet *t, uint64_t snapshot, struct slice start,
    bool start_exclusive, struct slice end, int64_t now,
    const struct cells_filter *filter, struct tablet_scan **out);
/*
 * The next row with a selected cell: 0, or BT_DONE.  With
 * out->lend_values set, values may point into the scan's memtables and
 * pinned blocks (cells.h) instead of out's bytes: they stay valid until
 * the next tablet_scan_next() or tablet_scan_close() on sc, whatever
 * flushes, compactions or splits happen meanwhile (out->pin_epoch is the
 * scan's to set).
 */
int tablet_scan_next(struct tablet_scan *sc, struct cells_row *out);
/* Accepts NULL. */
void tablet_scan_close(struct tablet_scan *sc);

#endif
