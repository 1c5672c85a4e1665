/*
 * sstable/format.h - the SSTable on-disk format (also in tabletfs(5)).
 *
 * An SSTable is an immutable file of (key, value) entries in strictly
 * increasing key order (slice_compare):
 *
 *   [data block 0] ... [filter block] [bounds block] [index block] [footer]
 *
 * Every block is followed by a 5-byte trailer:
 *     type     1 byte   SST_BLOCK_RAW or SST_BLOCK_SNAPPY
 *     crc      fixed32  masked crc32c of the stored block bytes || type
 * A block is stored Snappy-compressed only when that saves at least 12.5 %
 * of its size; otherwise raw.  A block handle (offset, size) names the stored
 * bytes without the trailer.
 *
 * Block contents (data and index blocks), once uncompressed:
 *     entry*   each: varint32 shared      bytes shared with the previous key
 *                    varint32 unshared    bytes of key that follow
 *                    varint32 value_len
 *                    unshared key bytes, then value bytes
 *     restart* fixed32 offsets of entries stored with shared = 0, one every
 *              restart_interval entries (16), the first at 0
 *     count    fixed32 number of restarts (at least 1)
 *   Data blocks close at about block_size bytes (default 64 KiB); an entry
 *   is never split, so a block with one huge value is as large as it is.
 *   An entry of block_size bytes or more (key and value) starts a block
 *   of its own.
 *
 * Filter block: a Bloom filter (util/bloom.h layout) over the filter key of
 * every entry; empty (size 0) when the table was built without one.  The
 * filter key is the whole key unless the builder's options name a prefix
 * extractor (the tablet uses the row).
 *
 * Bounds block (version 2 only): what every entry of the table lies
 * within, as the builder's key_column option describes a key (the tablet:
 * a put's column and timestamp) and its key_sequence option gives a key's
 * sequence number, so that a read can tell that the table cannot change
 * its answer.  Stored raw with a trailer, between the filter and the index;
 * its handle is implied: it starts where the filter (with its trailer)
 * ends, or at data_size when there is no filter, and ends
 * SST_BLOCK_TRAILER_SIZE bytes before index_offset.  Contents:
 *     flags     varint32  SST_BOUNDS_COMPLETE | SST_BOUNDS_SEQUENCES; no
 *                         other bit is set
 *   when flags has SST_BOUNDS_SEQUENCES (key_sequence gave every entry's
 *   sequence number, and there is at least one entry):
 *     min_seq   varint64  the smallest sequence number of any entry
 *     max_seq   varint64  the largest, >= min_seq
 *   when flags has SST_BOUNDS_SPLITS (versions 3 to 5 only; written
 *   when the builder has a filter prefix extractor):
 *     n         varint32  ceil(data blocks / 8)
 *     map       n bytes   bit i (bit i % 8 of byte i / 8) set when the
 *                         first key of data block i + 1 starts with the
 *                         filter key of the last key of block i; the bits
 *                         from the last block's on are 0
 *   when flags has SST_BOUNDS_USAGE (version 5 only; written when the
 *   builder has a key_label function, the tablet's gives a key's column
 *   family, and the table holds at most SST_USAGE_MAX_LABELS labels):
 *     count     varint32  distinct labels, at most SST_USAGE_MAX_LABELS
 *     label*    varint32 length, then the label's bytes (distinct, in no
 *               order; the empty label counts keys that have none), then
 *                 entries     varint64  entries with this label
 *                 key_bytes   varint64  the bytes of their keys
 *                 value_bytes varint64  the bytes of their values
 *               the entries of all labels add up to the footer's
 *               entry_count
 *   when flags has SST_BOUNDS_COMPLETE (key_column described every entry
 *   in at most SST_BOUNDS_MAX_COLUMNS columns; otherwise nothing of the
 *   columns and times is known and nothing more follows):
 *     max_time  varint64  the largest time of any entry
 *     count     varint32  distinct columns, at most SST_BOUNDS_MAX_COLUMNS
 *     column*   varint32 length, then the column's bytes; in no order
 * Version 1 tables have no bounds block (the index follows the filter);
 * version 2 ones have no SST_BOUNDS_SPLITS map: a reader must assume that
 * any block may continue the filter key its predecessor ends with.
 * Versions 1 to 4 have no SST_BOUNDS_USAGE: what they hold per label is
 * not known.  Version 5 is version 4 with the usage allowed.
 *
 * Index block: a block (format above, restart interval 1) with one entry per
 * data block: key = the last key of that block, value = its handle as
 * varint64 offset, varint64 size; in a version 4 or 5 table, a data block that
 * holds one entry (a large value fills a block of its own) adds
 *     value_len varint64  the length of that entry's value
 * so that a read of keys and sizes alone (a stat) need not read the
 * block: the entry's key is the index entry's.
 *
 * Footer (SST_FOOTER_SIZE = 64 bytes, fixed64/fixed32 little-endian):
 *     index_offset   fixed64
 *     index_size     fixed64
 *     filter_offset  fixed64
 *     filter_size    fixed64
 *     entry_count    fixed64
 *     data_size      fixed64  bytes of data blocks with trailers
 *     version        fixed32  SST_FORMAT_VERSION
 *     crc            fixed32  masked crc32c of the 52 bytes before it
 *     magic          fixed64  SST_MAGIC  (the last 8 bytes of the file)
 */
#ifndef TABLETFS_SSTABLE_FORMAT_H
#define TABLETFS_SSTABLE_FORMAT_H

#define SST_MAGIC		0x7473732e73667462ull	/* "btfs.sst" */
/* Written when bounds are kept and there is a filter prefix extractor. */
#define SST_FORMAT_VERSION	5u
/* Version 4: as 5, without the usage in the bounds block; still read. */
#define SST_FORMAT_VERSION_4	4u
/* Version 3: as 4, without the value lengths of one-entry blocks in the
 * index; still read. */
#define SST_FORMAT_VERSION_3	3u
/* Version 2: bounds without a splits map; still read, and written with
 * key_column but without filter_prefix. */
#define SST_FORMAT_VERSION_2	2u
/* Version 1: no bounds block; still read, and written without key_column. */
#define SST_FORMAT_VERSION_1	1u
#define SST_BOUNDS_COMPLETE	1u	/* columns and max_time follow */
#define SST_BOUNDS_SEQUENCES	2u	/* min_seq and max_seq follow */
#define SST_BOUNDS_SPLITS	4u	/* the splits map follows (v3-v5) */
#define SST_BOUNDS_USAGE	8u	/* bytes per label follow (v5) */
#define SST_USAGE_MAX_LABELS	256
#define SST_BOUNDS_MAX_COLUMNS	16
#define SST_FOOTER_SIZE		64
#define SST_BLOCK_TRAILER_SIZE	5
#define SST_BLOCK_RAW		0
#define SST_BLOCK_SNAPPY	1
#define SST_DEFAULT_BLOCK_SIZE	(64u << 10)
#define SST_RESTART_INTERVAL	16
#define SST_DEFAULT_BLOOM_BITS	10
/* Compression is kept only when compressed < raw - raw / 8. */
#define SST_MIN_COMPRESSION_SAVING_SHIFT 3

#endif
