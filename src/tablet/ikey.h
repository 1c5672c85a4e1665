/*
 * ikey.h - internal keys: how one cell version, or one delete marker, is
 * spelled as a byte string whose memcmp order is Bigtable's order.
 *
 * The memtable and SSTables store opaque keys in byte order; this module
 * gives those bytes their meaning.  Each component is escaped so that byte
 * order of the whole key is the order of (row, family, qualifier, timestamp
 * descending, sequence descending):
 *
 *   esc(s)   = s with every 0x00 written 0x00 0xff, then the terminator
 *              0x00 0x01.  A shorter string sorts before its extensions.
 *   trailer  = be64(~(seq << 8 | kind)): newest mutation first.
 *
 *   put / version delete   esc(row) esc(family) esc(qualifier) be64(~ts) trailer
 *   column delete          esc(row) esc(family) esc(qualifier) be64(0)   trailer
 *   family delete          esc(row) esc(family) 0x00 0x00              trailer
 *   row delete             esc(row) 0x00 0x00                          trailer
 *
 * Timestamps are 0..2^63-1, so be64(~ts) always has its top bit set and a
 * column delete (be64(0)) sorts before every version of its column; 0x00
 * 0x00 sorts before any escaped component (whose first bytes are 0x00 0x01,
 * 0x00 0xff or a non-zero byte), so a family or row delete sorts before
 * everything it covers.  A reader merging sources in key order therefore
 * meets every marker before the data it masks.  Family names never contain
 * 0x00, but are escaped like the rest for uniformity.
 *
 * A delete masks only entries with a lower sequence number (DESIGN.md
 * section 1): a later put with an old timestamp is visible.
 */
#ifndef TABLETFS_TABLET_IKEY_H
#define TABLETFS_TABLET_IKEY_H

#include <stdint.h>

#include "util/buf.h"
#include "util/slice.h"

enum ikey_kind {
	IKEY_PUT = 1,
	IKEY_DELETE_VERSION = 2,	/* one (row, family, qualifier, ts) */
	IKEY_DELETE_COLUMN = 3,		/* every version of a column */
	IKEY_DELETE_FAMILY = 4,		/* every column of a family in a row */
	IKEY_DELETE_ROW = 5,		/* every cell of a row */
};

#define IKEY_MAX_SEQ	((UINT64_C(1) << 56) - 1)
#define IKEY_MAX_TS	INT64_MAX

/* A decoded key; slices borrow from the decoded bytes or the caller. */
struct ikey {
	struct slice row;
	struct slice family;	/* empty for a row delete */
	struct slice qualifier;	/* empty for row and family deletes */
	int64_t ts;		/* 0 for the delete markers that span versions */
	uint64_t seq;
	enum ikey_kind kind;
};

/*
 * Append the encoding of k to out.  The fields a kind does not use are
 * ignored.  0 or -ENOMEM.
 */
int ikey_encode(const struct ikey *k, struct buf *out);

/*
 * Decode key.  Escaped components are unescaped into scratch (whose content
 * is replaced) unless they contain no 0x00, in which case they borrow from
 * key.  0, BT_ECORRUPT, or -ENOMEM when scratch cannot grow.
 */
int ikey_decode(struct slice key, struct ikey *k, struct buf *scratch);

/* Append esc(row): the prefix every key of the row starts with. */
int ikey_append_row_prefix(struct slice row, struct buf *out);
/* Append esc(row) esc(family). */
int ikey_append_family_prefix(struct slice row, struct slice family,
    struct buf *out);
/* Append esc(row) esc(family) esc(qualifier). */
int ikey_append_column_prefix(struct slice row, struct slice family,
    struct slice qualifier, struct buf *out);

/*
 * The family of key, found without decoding the rest: 0 with *family
 * borrowed from key, 1 for a row delete (no family), or BT_ECORRUPT when
 * key has no family component or the component holds an escaped 0x00
 * (family names never do; use ikey_decode() for such keys).
 */
int ikey_family(struct slice key, struct slice *family);

/*
 * The length of key's escaped row prefix (through its terminator), or 0 if
 * key has none.  This is the SSTable filter prefix: Bloom filters hold rows.
 */
size_t ikey_row_prefix_length(struct slice key);

#endif
