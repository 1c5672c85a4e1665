/*
 * log/format.h - the commit log's on-disk format (also in tabletfs(5)).
 *
 * The log is a sequence of segment files LOGDIR/NNNNNNNNNNNNNNNN.log (the
 * segment number, 16 decimal digits, so names sort by number).  A segment
 * begins with a 16-byte header and continues with records:
 *
 *   segment header (16 bytes):
 *     magic    fixed64  LOG_MAGIC
 *     version  fixed32  LOG_FORMAT_VERSION
 *     crc      fixed32  masked crc32c of the 12 bytes before it
 *
 *   record:
 *     crc      fixed32  masked crc32c of length || [synced] || payload
 *     length   fixed32  payload bytes, 1..LOG_MAX_RECORD, or'd with
 *                       LOG_RECORD_SYNCED when the synced field is there
 *     synced   fixed64  (version 2, only with the flag) the segment was
 *                       durable (fdatasync returned) up to this offset
 *                       before the record was written
 *     payload  length bytes, opaque to the log
 *
 * The writer puts the synced field on the first record it writes after
 * each sync, so a record proves how far its segment had been synced.
 *
 * Version 3 adds reserved space: the writer reserves a segment's space
 * ahead of its records (the file grows in zeros a chunk at a time, so a
 * sync need not journal a new size), and cuts the zeros off when it
 * finishes the segment.  In a version 3 segment, zeros from a record
 * boundary to the end of the file (a whole zero record header and nothing
 * but zeros after it) are the end of the segment, as clean as the end of
 * the file.  Versions 1 (no synced fields) and 2 are still read.
 *
 * All fixed integers are little-endian.  A record is never split across
 * segments.  On replay, a record that runs past the end of its segment, or
 * whose check fails (bad crc, or length 0) while every byte after its end
 * is zero or it ends exactly at the end of the file, is a torn tail: the
 * write did not finish before a crash, it was never acknowledged, and it is
 * dropped -- unless a valid record starts anywhere after it, which proves
 * it was not the last write (a flipped length field looks like a record
 * running past the end).  Any other check failure is corruption and is
 * reported with file and offset -- except, in the last segment, damage
 * that no later record's synced field covers: a power loss can leave
 * unsynced bytes written out of order (a later page on the disk, an
 * earlier one not), none of which was promised to survive, so the
 * segment is torn there and the rest is dropped.  A segment shorter than
 * its header that holds a prefix of the header, or a segment of zeros, is
 * torn whole.  Any other damage to the header (the writer syncs it when it
 * creates the segment) is damage at offset 0, and the records after it
 * are read on.
 */
#ifndef TABLETFS_LOG_FORMAT_H
#define TABLETFS_LOG_FORMAT_H

#define LOG_MAGIC		0x676f6c2e73667462ull	/* "btfs.log" */
#define LOG_FORMAT_VERSION	3u
#define LOG_FORMAT_VERSION_MIN	1u	/* the oldest version read */
#define LOG_SEGMENT_HEADER_SIZE	16
#define LOG_RECORD_HEADER_SIZE	8
#define LOG_RECORD_SYNCED	0x80000000u	/* flag in length */
#define LOG_RECORD_SYNCED_SIZE	8		/* the synced field */
#define LOG_MAX_RECORD		(256u << 20)	/* 256 MiB */

#endif
