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
 *   put, version delete  esc(row) esc(family) esc(qualifier) be64(~ts) trailer
 *   column delete        esc(row) esc(family) esc(qualifier) be64(0)   trailer
 *   family delete        esc(row) esc(family) 0x00 0x00              trailer
 *   row delete           esc(row) 0x00 0x00                          trailer
 *
 * Timestamps are 0..2^63-1, so be64(~ts) always has its top bit set and a
 * column delete (be64(0)) sorts before every version of its column; 0x00
 * 0x00 sorts before any escaped component (whose first bytes are 0x00 0x01,
 * 0x00 0xff or a non-zero byte), so a family or row delete sorts before
 * everything it covers.  A reader merging sources in key order therefore
 * meets every marker before the data it masks.  Family names never contain
 * 0x00, but are escaped like the rest for uniformity.
 *
 * A delete masks only entries with a lower sequence number (docs/design.md
 * section 1): a later put with an old timestamp is visible.
 */
#ifndef TABLETFS_TABLET_IKEY_H
#define TABLETFS_TABLET_IKEY_H

#include <assert.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "util/buf.h"
#include "util/coding.h"
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

/* At least the bytes the encoding of a key with components of these
 * lengths takes: each component escaped (at most twice its length) and
 * terminated, then a timestamp and a trailer. */
static inline size_t
ikey_encoded_max(size_t row, size_t family, size_t qualifier)
{
	return 2 * (row + family + qualifier) + 3 * 2 + 8 + 8;
}

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

/* The trailer of a key at least 8 bytes long, decoded: seq << 8 | kind. */
static inline uint64_t
ikey_trailer(struct slice key)
{
	assert(key.n >= 8);
	return ~get_be64(key.p + key.n - 8);
}

/* The first 0x00 in [p, end), or NULL; short runs without a call. */
static inline const uint8_t *
ikey_find_zero(const uint8_t *p, const uint8_t *end)
{
	for (int i = 0; i < 16 && p < end; i++, p++)
		if (*p == 0x00)
			return p;
	return p < end ? memchr(p, 0, (size_t)(end - p)) : NULL;
}

/*
 * ikey_decode() with the usual key read inline, for loops that decode
 * every entry (the read resolver, a flush): a put or a version delete
 * whose row, family and qualifier hold no 0x00 (each borrows from key, as
 * ikey_decode() would have it).  Every other key (a marker, an escaped
 * 0x00, a flaw) is left to ikey_decode().  The same results.
 */
static inline __attribute__((always_inline)) int
ikey_decode_inline(struct slice key, struct ikey *k, struct buf *scratch)
{
	const uint8_t *p = key.p, *end = key.p + key.n, *z;
	const uint8_t *row, *family, *qualifier;
	uint64_t tsbits, trailer;
	unsigned kind;

	row = p;
	if ((z = memchr(p, 0, key.n)) == NULL || end - z < 2 || z[1] != 0x01)
		goto slow;
	k->row = slice_make(row, (size_t)(z - row));
	family = z + 2;
	if ((z = ikey_find_zero(family, end)) == NULL || end - z < 2 ||
	    z[1] != 0x01)
		goto slow;
	k->family = slice_make(family, (size_t)(z - family));
	qualifier = z + 2;
	if ((z = ikey_find_zero(qualifier, end)) == NULL || end - z != 18 ||
	    z[1] != 0x01)
		goto slow;
	k->qualifier = slice_make(qualifier, (size_t)(z - qualifier));
	tsbits = get_be64(z + 2);
	trailer = ~get_be64(z + 10);
	kind = (unsigned)(trailer & 0xff);
	if ((tsbits >> 63) == 0 ||
	    (kind != IKEY_PUT && kind != IKEY_DELETE_VERSION))
		goto slow;
	k->ts = (int64_t)~tsbits;
	k->seq = trailer >> 8;
	k->kind = (enum ikey_kind)kind;
	return 0;
slow:
	return ikey_decode(key, k, scratch);
}

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
 * The label under which an SSTable counts key's bytes (sst_options
 * key_label): its family, borrowed from key, or empty for a row delete
 * (which belongs to no family) and for bytes ikey_family() cannot read.
 */
struct slice ikey_usage_label(struct slice key);

/*
 * The length of key's escaped row prefix (through its terminator), or 0 if
 * key has none.  This is the SSTable filter prefix: Bloom filters hold rows.
 */
size_t ikey_row_prefix_length(struct slice key);

/*
 * A put's column and timestamp, for an SSTable's bounds (sst_options
 * key_column): true with *column = esc(family) esc(qualifier) borrowed
 * from key and *ts its timestamp; false for every other key (a delete
 * marker, or bytes that are not a put's key).
 */
bool ikey_put_column(struct slice key, struct slice *column, uint64_t *ts);

/*
 * The sequence number of any key's trailer, for an SSTable's sequence
 * range (sst_options key_sequence): true with *seq; false for bytes whose
 * last 8 are not a trailer.
 */
bool ikey_sequence(struct slice key, uint64_t *seq);

#endif
