/*
 * cells.h - from internal entries to the cells a reader sees.
 *
 * Given a sorted stream of internal entries (ikey.h) merged from a tablet's
 * memtables and SSTables, cells_read_row() resolves one row: it drops what
 * the read's snapshot cannot see, applies delete markers, then the family's
 * GC policy, then the caller's filters.  The rules (docs/design.md section 1):
 *
 *   - An entry is visible if its sequence number is at most the snapshot's.
 *   - A row, family or column delete masks the entries it covers whose
 *     sequence number is lower than its own.  A later put is not masked,
 *     whatever its timestamp.
 *   - Of the entries of one timestamp of a column not masked as above,
 *     the newest decides: a put is a version, a version delete is none.
 *   - GC: gc_policy_condemns(policy, index, ts, now), index counting the
 *     column's versions (0 = newest); deleted ones do not count.
 *     Condemned versions are never returned.  Families not in the schema
 *     (dropped) return nothing.  What keeps a condemned version condemned
 *     when a newer one is deleted is the writer's: that delete carries
 *     version deletes of the older versions it would bring back
 *     (server_condemned.c).
 *   - Filters, in order: column selection (the columns listed, then the
 *     family and qualifier regexes), time range, value (regex, range),
 *     cells per column, then cells per row (offset, limit).  The row
 *     regex is the scan's (tablet_scan_next()) and the point read's
 *     (tablet_read_row()): the resolver is only given rows that pass it.
 */
#ifndef TABLETFS_TABLET_CELLS_H
#define TABLETFS_TABLET_CELLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tablet/gc_policy.h"
#include "util/buf.h"
#include "util/iter.h"
#include "util/regex.h"
#include "util/slice.h"

/*
 * What the resolver needs of the schema: each family's GC policy and the
 * first sequence number of its life (entries below it belong to a dropped
 * family of the same name).  Returns false for a family not in the schema.
 */
struct cells_family_memo;

struct cells_schema {
	bool (*family_policy)(void *arg, struct slice family,
	    const struct gc_policy **policy, uint64_t *created_seq);
	void *arg;
	/* NULL, or where the resolver remembers its last answer from
	 * family_policy across calls: for a user whose answers never change
	 * while the memo lives (one scan over one schema), and that zeroes
	 * the memo before first use. */
	struct cells_family_memo *memo;
};

/* The last family the resolver looked up, and the answer. */
#define CELLS_MEMO_FAMILY_MAX	64
struct cells_family_memo {
	bool valid;
	bool known;
	bool slots_free;		/* the policy condemns nothing */
	uint8_t family_len;
	const struct gc_policy *policy;
	uint64_t created_seq;
	uint8_t family[CELLS_MEMO_FAMILY_MAX];
};

/* One column filter: a family, or one column of it. */
struct cells_column {
	struct slice family;
	bool has_qualifier;
	struct slice qualifier;
	struct regex *qualifier_regex;	/* or NULL: qualifier is a name */
};

struct cells_filter {
	const struct cells_column *columns;	/* NULL: every column */
	size_t column_count;
	uint32_t cells_per_column;		/* 0: all */
	int64_t min_ts;
	bool has_max_ts;
	int64_t max_ts;
	bool keys_only;				/* do not copy values */
	bool with_condemned;	/* return versions that GC condemned too */
	bool no_cache_fill;	/* blocks read from files stay out of the
				   block cache (a bulk scan) */
	/* Regexes (regex.h; NULL: none), used by one thread at a time. */
	struct regex *row_regex;
	struct regex *family_regex;
	struct regex *qualifier_regex;
	struct regex *value_regex;
	bool has_value_start;			/* value >= value_start */
	struct slice value_start;
	bool has_value_end;			/* value < value_end */
	struct slice value_end;
	uint32_t cells_per_row_offset;
	uint32_t cells_per_row_limit;		/* 0: all */
};

/* Whether f looks at values (then even a keys-only read reads them). */
static inline bool
cells_filter_on_values(const struct cells_filter *f)
{
	return f->value_regex != NULL || f->has_value_start ||
	    f->has_value_end;
}

/* Whether f can return fewer versions of a column than the newest ones
 * the time range holds (a newest-version shortcut does not apply). */
static inline bool
cells_filter_skips_versions(const struct cells_filter *f)
{
	return cells_filter_on_values(f) || f->cells_per_row_offset != 0;
}

struct cell {
	struct slice family;
	struct slice qualifier;
	int64_t ts;
	struct slice value;	/* empty when keys_only */
	uint64_t value_size;
};

/*
 * A resolved row.  Embedded by its user: cells_row_init() before use,
 * cells_row_release() after; one struct may be reused for row after row.
 * The key, and each cell's family and value, are followed by a 0x00 byte
 * that their lengths do not count, so that a reader can hand them out as
 * C strings without copying them.
 *
 * Lending: when the user sets lend_values, cells_read_row() asks the
 * iterator to pin each value it returns that is not small (iter_pin()
 * with pin_epoch, which the user sets, new for each row) and, where it
 * does, points the cell at the iterator's bytes instead of copying them
 * (such a value is not followed by 0x00).  The values stay valid until
 * the iterator is pinned with a later epoch or freed.  A value the
 * iterator will not pin is copied as usual.
 */
struct cells_row {
	struct buf key;		/* the row key */
	struct buf bytes;	/* families, qualifiers, values */
	struct cell_span *spans;
	size_t count;
	size_t cap;
	bool lend_values;	/* the user's choice; false after init */
	uint64_t pin_epoch;	/* the user's, when lend_values */
	/* Resolution state, reused between calls. */
	struct buf scratch;
	struct buf cur_family;
	struct buf cur_qualifier;
	struct buf row_prefix;	/* esc(key) when key holds 0x00 */
	struct buf seek_key;	/* where a skip within the row seeks to */
};

void cells_row_init(struct cells_row *r);
void cells_row_release(struct cells_row *r);
/* Bytes r's buffers hold allocated (a reuser's bound). */
size_t cells_row_memory(const struct cells_row *r);

/* The i-th cell; its slices borrow from r until r is next changed. */
void cells_row_get(const struct cells_row *r, size_t i, struct cell *out);

/*
 * Take r's buffer of families, qualifiers and values (each family and each
 * value followed by a NUL), which the slices cells_row_get() gave point
 * into, for the caller to free with bt_free(); r is left with no cells.
 * NULL, and r unchanged, when a value is lent rather than in the buffer.
 */
uint8_t *cells_row_take_bytes(struct cells_row *r);

/*
 * Build a row from cells resolved elsewhere (a cell's server sent them):
 * cells_row_start() empties r and gives it key; cells_row_add() appends a
 * cell, copying its parts, in the order the caller gives (a resolved row's:
 * family, qualifier, newest first).  0 or -ENOMEM.
 */
int cells_row_start(struct cells_row *r, struct slice key);
int cells_row_add(struct cells_row *r, const struct cell *c);

/*
 * Resolve the row of the entry it is positioned on, consuming every entry
 * of that row, and leave it on the first entry of the next row (or
 * invalid).  0 with r filled (r->count may be 0 when nothing is selected or
 * visible), BT_DONE if it was invalid to begin with, or a negative error
 * (the iterator's, BT_ECORRUPT for a key that does not decode, -ENOMEM).
 */
int cells_read_row(struct iter *it, uint64_t snapshot,
    const struct cells_schema *schema, int64_t now,
    const struct cells_filter *filter, struct cells_row *r);

/*
 * cells_read_row() for a read of one row alone: the same cells, but it
 * stops once the filter selects no later column of the row, leaving it
 * anywhere in the row (a column of many large versions, or a wide row, is
 * not read past the columns asked for).
 */
int cells_read_point(struct iter *it, uint64_t snapshot,
    const struct cells_schema *schema, int64_t now,
    const struct cells_filter *filter, struct cells_row *r);

/*
 * Move it, positioned in the row whose escaped prefix (ikey.h, esc(row))
 * is prefix, to the first entry of a later row (or invalid), stepping a
 * few entries and then seeking: a row a filter rules out costs no more
 * than its first key.  target is scratch.  0 or a negative error.
 */
int cells_skip_row(struct iter *it, struct slice prefix, struct buf *target);

/*
 * The compaction of one row: consume the row's entries as cells_read_row()
 * does (seeing every entry) and call keep(arg, key, value) for those that
 * must survive a compaction that includes every SSTable of the data: the
 * versions, each the newest put of its timestamp, neither masked,
 * deleted nor condemned.  Delete markers, and everything they mask, are
 * dropped, and so is every entry of a family not in the schema.  r is used as scratch space.
 * 0, BT_DONE, or a negative error (keep's, the iterator's, BT_ECORRUPT).
 */
int cells_compact_row(struct iter *it, const struct cells_schema *schema,
    int64_t now, struct cells_row *r,
    int (*keep)(void *arg, struct slice key, struct slice value), void *arg);

/*
 * What a flush (minor compaction) of one memtable may leave out: an entry
 * that a newer entry of the same memtable hides at every snapshot that a
 * reader of the flushed data can take (the flushed data is older than
 * every snapshot taken after the flush): a put or version delete below
 * the newest entry of its slot (row, family, qualifier, timestamp), and
 * any entry, delete markers included, that a row, family or column delete
 * with a higher sequence number covers.  The markers that decide are
 * kept, since older SSTables may hold what they mask.  Without this, a
 * flush wrote whatever the memtable held, deleted or not: a memtable of
 * 20 MB whose rows were all deleted needed 20 MB on disk to flush, and a
 * full disk could not be freed by deleting data.
 *
 * Feed every key of the memtable in order to cells_flush_filter_keep():
 * 1 to keep it, 0 to leave it out, or -ENOMEM.  One filter per flush;
 * not thread-safe.
 */
struct cells_flush_filter {
	struct buf scope[3];	/* row, family, column delete: the key
				 * prefix each covers */
	uint64_t scope_seq[3];	/* and its sequence number (0: none) */
	struct buf slot;	/* the last kept version entry's slot */
	bool have_slot;
};

void cells_flush_filter_init(struct cells_flush_filter *f);
void cells_flush_filter_release(struct cells_flush_filter *f);
int cells_flush_filter_keep(struct cells_flush_filter *f, struct slice key);

#endif
