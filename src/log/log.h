/*
 * log.h - the commit log: CRC-framed records in numbered segment files,
 * written by one appender and read back for replay.  Format: format.h.
 *
 * The log stores opaque payloads; what they mean (row mutations, sequence
 * numbers, tablet tags) is the tablet server's business.  A position
 * (segment, offset) names the start of a record, so that a redo point can
 * be recorded and replay started there.
 */
#ifndef TABLETFS_LOG_LOG_H
#define TABLETFS_LOG_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/env.h"
#include "util/slice.h"

struct log_position {
	uint64_t segment;
	uint64_t offset;	/* byte offset of the record in its segment */
};

#define LOG_DEFAULT_SEGMENT_SIZE	(64ull << 20)

struct log_options {
	/* Start a new segment once the current one passes this size.
	 * Default (0): LOG_DEFAULT_SEGMENT_SIZE. */
	uint64_t segment_size;
	/* The size no segment may pass (the storage's largest file:
	 * env_max_file_size()): a batch that would end past it starts a
	 * new segment first; one that cannot fit even in a new segment
	 * fails with the env's -EFBIG.  0: unbounded. */
	uint64_t max_file_size;
	/* Reserve a segment's space ahead of its records only while the
	 * filesystem keeps at least this many bytes free besides (the
	 * tablet server's memtable budget, so that a nearly full disk is
	 * left to the flushes that empty the memtables).  0: always. */
	uint64_t reserve_headroom;
};

/*
 * A writer has one appender at a time: append, append_many, sync, rotate
 * and close must not run concurrently (the tablet server's write queue
 * serializes them and batches concurrent mutations into one append, which
 * is its group commit).  log_writer_position() and log_writer_get_stats()
 * may be called from any thread at any time.
 */
struct log_writer;

/*
 * Open a writer that appends to a new segment numbered first_segment in dir
 * (which must exist); -EEXIST if that segment exists.  The segment file and
 * its directory entry are synced before this returns.
 */
int log_writer_open(struct env *env, const char *dir, uint64_t first_segment,
    const struct log_options *opts, struct log_writer **out);

/* Close the writer (syncing first), accepting NULL.  Returns the sync's
 * result. */
int log_writer_close(struct log_writer *w);

/*
 * Append one record (1..LOG_MAX_RECORD bytes) and return once it is written
 * to the segment, and, when sync is true, made durable (fdatasync).  On
 * success *pos (if not NULL) receives the record's position.
 *
 * A failed write is rolled back (the segment is truncated to its last good
 * record) and returned; the writer remains usable, so writes can resume
 * when, say, disk space is freed.  A failed sync leaves the durability of
 * the segment unknown: the writer is then poisoned (stats.poison) and
 * every later call returns BT_ECLOSED until the caller rotates.
 */
int log_writer_append(struct log_writer *w, struct slice record, bool sync,
    struct log_position *pos);

/*
 * Append count records, in order and contiguous in one segment, with one
 * write and, when sync is true, one fdatasync: what log_writer_append()
 * does for one.  positions, if not NULL, has room for count positions and
 * receives each record's.  A failure is the whole call's: none of the
 * records is acknowledged.
 */
int log_writer_append_many(struct log_writer *w, const struct slice *records,
    size_t count, bool sync, struct log_position *positions);

/*
 * A record given in parts, its payload their concatenation (count >= 1;
 * parts may be empty, the payload may not).
 */
struct log_record {
	const struct slice *parts;
	size_t count;
};

/*
 * Parts of at least this many bytes are written from where they are
 * (one env_file_write_parts_at() for the batch) rather than copied into
 * the writer's buffer first; the record's CRC is computed over them in
 * place.  The bytes on disk are the same either way.
 */
#define LOG_PART_IN_PLACE	(64u << 10)

/*
 * log_writer_append_many() for records given in parts: a mutation's large
 * value is logged from the caller's memory, in the same batch, append
 * and sync as the small records around it.  The parts are only read, and
 * not after the call returns.
 */
int log_writer_append_records(struct log_writer *w,
    const struct log_record *records, size_t count, bool sync,
    struct log_position *positions);

/* Make everything appended so far durable. */
int log_writer_sync(struct log_writer *w);

/*
 * Finish the current segment (synced) and continue in a new one numbered
 * one higher; clears a poisoned state.  *next, if not NULL, receives the
 * new segment number.
 */
int log_writer_rotate(struct log_writer *w, uint64_t *next);

/* The segment being written and the offset its next record will take. */
struct log_position log_writer_position(struct log_writer *w);

/* Records written, the appends (batches) that wrote them, and the
 * fdatasync calls made for them (the syncs of new segment headers are not
 * counted), for group commit tests and status; and while the writer is
 * poisoned, the error that poisoned it (a failed sync, or a failed write
 * that could not be cut off), else 0. */
struct log_writer_stats {
	uint64_t records;
	uint64_t batches;
	uint64_t syncs;
	int poison;
};
void log_writer_get_stats(struct log_writer *w, struct log_writer_stats *out);

/* The path of segment number n in dir, into dst (at least dir + 22 bytes). */
void log_segment_path(char *dst, size_t size, const char *dir, uint64_t n);

/*
 * The segment numbers present in dir, ascending, in a new array
 * (bt_free() it).  0 or a negative error.
 */
int log_list_segments(struct env *env, const char *dir, uint64_t **segments,
    size_t *count);

struct log_reader;

/*
 * Read one segment file.  Checks its header: a damaged one is reported by
 * the first log_reader_next as damage at offset 0, which
 * log_reader_skip_damage skips; a version this code does not read fails
 * the open with BT_EFORMAT.
 */
int log_reader_open(struct env *env, const char *path,
    struct log_reader **out);
void log_reader_close(struct log_reader *r);

/* Continue from the record at offset (a position from the writer). */
int log_reader_seek(struct log_reader *r, uint64_t offset);

/*
 * The next record: 0 with *record (borrowed until the next call) and
 * *offset (its position in the segment; may be NULL) set; BT_DONE at the
 * end, including a dropped torn tail; BT_ECHECKSUM or
 * BT_ECORRUPT, with a detail naming the file and offset, for damage that is
 * not a torn tail.  After an error the reader returns the same error.
 */
int log_reader_next(struct log_reader *r, struct slice *record,
    uint64_t *offset);

/*
 * Bytes dropped as a torn tail at the end (0 if the segment ended clean).
 * Only the last segment of a log may have a torn tail: earlier segments were
 * synced whole before the next began, so replay treats a tail dropped from
 * them as corruption.
 */
uint64_t log_reader_dropped_bytes(struct log_reader *r);

/*
 * Intact records among the dropped bytes: non-zero when damage in the last
 * segment that no synced field covers was dropped with the records after
 * it (a power loss that wrote unsynced pages out of order, or damage to
 * bytes that were never synced).  Replay keeps such a segment for
 * inspection and check reports it.
 */
uint64_t log_reader_dropped_records(struct log_reader *r);

/*
 * Say that the segment was synced whole (a later segment exists).  Damage
 * in it is then corruption even where no record's synced field covers it;
 * in the segment written last such damage is the work of a power loss
 * (unsynced bytes written out of order) and the segment is torn there.
 * Call before the first log_reader_next().
 */
void log_reader_set_sealed(struct log_reader *r);

/*
 * After log_reader_next() returned BT_ECHECKSUM or BT_ECORRUPT (damage that
 * is neither a torn tail nor, in the last segment, a power loss's), skip
 * the damaged bytes: reading goes on at the next offset where a whole
 * record checks, or at the end of the segment if none does.  *offset and
 * *bytes receive the skipped range [offset, offset + bytes).  0; -EINVAL
 * if the reader is not stopped at such damage; or an I/O error.
 */
int log_reader_skip_damage(struct log_reader *r, uint64_t *offset,
    uint64_t *bytes);

#endif
