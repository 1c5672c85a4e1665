/*
 * extsort.h - an external sort of key-value entries in bounded memory:
 * entries are gathered in memory up to a budget, each full run is sorted
 * and spilled to a file of its own through the file environment, and the
 * runs are merged when read back.  A bulk load sorts its input with it
 * (docs/design.md section 8).
 *
 * Order: keys by memcmp (a shorter key before its extensions).  Of
 * entries with equal keys the one added last is kept and the others are
 * dropped, as a later put replaces an earlier one.
 *
 * Run files are DIR/PREFIX-N.run, written without syncs (they are scratch:
 * nothing survives a crash that needs them) and removed by
 * extsort_free(); each run's bytes are checksummed (CRC32C) as written
 * and checked as they are read back, the check of a run failing its last
 * extsort_next() call.  One thread at a time.  Errors: -ENOMEM, the env's,
 * BT_ECHECKSUM or BT_ECORRUPT for a run that does not read back as
 * written (detail naming the file).
 */
#ifndef TABLETFS_UTIL_EXTSORT_H
#define TABLETFS_UTIL_EXTSORT_H

#include <stddef.h>
#include <stdint.h>

#include "util/env.h"
#include "util/slice.h"

/* The default budget of entry bytes held in memory. */
#define EXTSORT_DEFAULT_BUDGET	((size_t)64 << 20)

struct extsort_options {
	struct env *env;
	const char *dir;	/* where runs are spilled (must exist) */
	const char *prefix;	/* their names' start, unique to this sort */
	/*
	 * Bytes of keys, values and entry records gathered before a run is
	 * spilled (0: EXTSORT_DEFAULT_BUDGET).  Memory: about the budget,
	 * plus per run in the merge a read buffer (256 KiB, or the largest
	 * entry), plus a 1 MiB write buffer while spilling.
	 */
	size_t budget;
};

struct extsort_stats {
	uint64_t added;		/* entries given */
	uint64_t runs;		/* spilled to files */
	uint64_t spilled_bytes;
};

struct extsort;

/* A new sort; the options' strings are copied.  0 or -ENOMEM. */
int extsort_new(const struct extsort_options *opts, struct extsort **out);
/* Add an entry (copied).  A spill may happen, with its errors; after any
 * error the sort is failed and later calls return it again. */
int extsort_add(struct extsort *x, struct slice key, struct slice value);
/* Stop adding and start reading: sort the run in memory and open the
 * spilled ones for the merge. */
int extsort_finish(struct extsort *x);
/*
 * The next entry in key order: 0 with *key and *value borrowed until the
 * next call, BT_DONE at the end (every run's checksum verified), or an
 * error.
 */
int extsort_next(struct extsort *x, struct slice *key, struct slice *value);
void extsort_get_stats(const struct extsort *x, struct extsort_stats *out);
/* Remove the run files and free; accepts NULL. */
void extsort_free(struct extsort *x);

#endif
