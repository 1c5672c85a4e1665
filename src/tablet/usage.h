/*
 * usage.h - what a tablet holds of each column family: entries, key bytes
 * and value bytes under a label (a family's name, or empty for what
 * belongs to no family: row deletes), as a memtable counts them on insert
 * and an SSTable records them when it is built (sstable.h, key_label).
 * The bytes that memory and files take are apportioned to the labels by
 * these counts (docs/design.md section 3, "Accounting").
 *
 * A struct usage is a plain value: no locking of its own.
 */
#ifndef TABLETFS_TABLET_USAGE_H
#define TABLETFS_TABLET_USAGE_H

#include <stddef.h>
#include <stdint.h>

#include "catalog/catalog.h"
#include "util/slice.h"

struct usage_label {
	char name[CATALOG_NAME_MAX + 1];	/* "": no family */
	uint64_t entries;
	uint64_t key_bytes;
	uint64_t value_bytes;
	/* What memory or a file takes for the label: the whole's bytes
	 * apportioned by the label's key and value bytes
	 * (usage_apportion()). */
	uint64_t bytes;
};

struct usage {
	struct usage_label *labels;
	size_t count, cap;
};

void usage_init(struct usage *u);
void usage_release(struct usage *u);
/* Forget every label, keeping the room. */
void usage_clear(struct usage *u);

/* The label named name, or NULL. */
struct usage_label *usage_find(const struct usage *u, struct slice name);
/*
 * The label named name, added (with zero counts) when absent: 0 and
 * *out, -ENOMEM, or -EINVAL for a name longer than CATALOG_NAME_MAX
 * (not a family's).
 */
int usage_obtain(struct usage *u, struct slice name,
    struct usage_label **out);
/* Add src's counts to dst, label by label.  0 or -ENOMEM/-EINVAL. */
int usage_merge(struct usage *dst, const struct usage *src);

/* The bytes of a label's entries: keys and values. */
static inline uint64_t
usage_label_bytes(const struct usage_label *l)
{
	return l->key_bytes + l->value_bytes;
}

/* The bytes of every label's entries. */
uint64_t usage_total_bytes(const struct usage *u);

/*
 * Set each label's bytes to its share of whole, by its key and value
 * bytes; the shares add up to whole exactly (the remainder of rounding
 * goes to the largest label), or are all 0 when the labels hold no bytes.
 */
void usage_apportion(struct usage *u, uint64_t whole);

/*
 * part's share of whole bytes when it holds part_bytes of total_bytes
 * (rounded down; 0 when total_bytes is 0), without overflow.
 */
uint64_t usage_share(uint64_t whole, uint64_t part_bytes,
    uint64_t total_bytes);

#endif
