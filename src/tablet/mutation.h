/*
 * mutation.h - a row mutation: the unit of atomic change (docs/design.md
 * section 1), and its commit-log record.
 *
 * A row mutation is a list of puts and deletes on one row of one table.  It
 * is written to the commit log as one record and applied to the tablet under
 * one sequence number, so readers see all of it or none of it.
 *
 * Log record (payload of one commit-log record, src/log/format.h):
 *     version   1 byte    MUTATION_RECORD_VERSION (1 is read too: no stamp)
 *     seq       varint64  sequence number of the mutation
 *     table_id  varint64
 *     stamp     varint64  the server stamp its write group gave it
 *                         (version 2 only)
 *     row       varint64 length, bytes
 *     count     varint32  number of operations, at least 1
 *     op*       kind 1 byte (enum mutation_kind), family (varint64 length,
 *               bytes), qualifier (same), ts varint64 (final timestamp;
 *               0 for kinds without one), value (varint64 length, bytes)
 */
#ifndef TABLETFS_TABLET_MUTATION_H
#define TABLETFS_TABLET_MUTATION_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"
#include "util/slice.h"

#define MUTATION_RECORD_VERSION 2
/* A put whose ts is this gets the server's clock. */
#define MUTATION_TS_SERVER (-1)

enum mutation_kind {
	MUTATION_PUT = 1,		/* family, qualifier, ts, value */
	MUTATION_DELETE_VERSION = 2,	/* family, qualifier, ts */
	MUTATION_DELETE_COLUMN = 3,	/* family, qualifier */
	MUTATION_DELETE_FAMILY = 4,	/* family */
	MUTATION_DELETE_ROW = 5,
};

struct mutation {
	enum mutation_kind kind;
	struct slice family;
	struct slice qualifier;
	int64_t ts;		/* 0..INT64_MAX, or MUTATION_TS_SERVER for puts */
	struct slice value;
	/* A MUTATION_TS_SERVER put is stamped at least this (0: the clock
	 * alone): a read-modify-write sets it one above the version it read,
	 * so that what it writes becomes the column's newest. */
	int64_t ts_floor;
};

/* A decoded log record; slices borrow from the record bytes. */
struct mutation_record {
	uint64_t seq;
	uint64_t table_id;
	/* The server's stamp when the record was written, which every
	 * server stamp given later exceeds; 0 in a version 1 record. */
	int64_t stamp;
	struct slice row;
	size_t count;
	struct mutation *ops;	/* owned: bt_free() */
};

/* Append the record for a mutation whose timestamps are final.  0, -EINVAL
 * (a server timestamp left) or -ENOMEM. */
int mutation_record_encode(uint64_t seq, uint64_t table_id, int64_t stamp,
    struct slice row, const struct mutation *ops, size_t count,
    struct buf *out);

/*
 * A value that mutation_record_encode_split() left out of the bytes it
 * appended: the record is those bytes with value inserted at byte at of
 * the buffer (before the bytes that follow there).
 */
struct mutation_gap {
	size_t at;
	struct slice value;
};

/*
 * mutation_record_encode(), except that the value of each operation of
 * min_gap bytes or more (min_gap > 0) is not copied: its length is
 * encoded and the value itself described in gaps[] (room for count),
 * *ngaps of them in record order, so that the commit log can write it
 * from where the caller holds it (log_writer_append_records()).  The
 * record is the same bytes once the gaps are filled.
 */
int mutation_record_encode_split(uint64_t seq, uint64_t table_id,
    int64_t stamp, struct slice row, const struct mutation *ops,
    size_t count, size_t min_gap, struct buf *out, struct mutation_gap *gaps,
    size_t *ngaps);

/* Decode a record.  0, BT_ECORRUPT (with a detail) or -ENOMEM. */
int mutation_record_decode(struct slice rec, struct mutation_record *out);
void mutation_record_release(struct mutation_record *r);

#endif
