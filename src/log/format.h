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
 *     crc      fixed32  masked crc32c of length || payload
 *     length   fixed32  payload bytes, 1..LOG_MAX_RECORD
 *     payload  length bytes, opaque to the log
 *
 * All fixed integers are little-endian.  A record is never split across
 * segments.  On replay, a record that runs past the end of its segment, or
 * whose check fails (bad crc, or length 0) while every byte after its end
 * is zero or it ends exactly at the end of the file, is a torn tail: the
 * write did not finish before a crash, it was never acknowledged, and it is
 * dropped -- unless a valid record starts anywhere after it, which proves
 * it was not the last write (a flipped length field looks like a record
 * running past the end).  Any other check failure is corruption and is
 * reported with file and offset.  A segment shorter than its header that
 * holds a prefix of the header, or a segment of zeros, is torn whole.
 */
#ifndef TABLETFS_LOG_FORMAT_H
#define TABLETFS_LOG_FORMAT_H

#define LOG_MAGIC		0x676f6c2e73667462ull	/* "btfs.log" */
#define LOG_FORMAT_VERSION	1u
#define LOG_SEGMENT_HEADER_SIZE	16
#define LOG_RECORD_HEADER_SIZE	8
#define LOG_MAX_RECORD		(256u << 20)	/* 256 MiB */

#endif
