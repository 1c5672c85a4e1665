/*
 * sweep_util.h - the machinery of the fault sweeps of the public API
 * (test_api_enomem.c, test_api_iofault.c): a fresh store holding a small
 * known data set (a table of two families, some versions, some deletes,
 * in two SSTables and the memtable), the operations swept (the writes, a
 * point read, a whole scan, flush, major compaction, split, the schema
 * changes, the close and the open of the store), what each does when
 * nothing fails, and one point of a sweep: the operation run with the
 * nth call of some kind failing, then the checks that it was
 * all-or-nothing and lost nothing acknowledged.
 *
 * A point proves: the call returned 0 or a negative error, and a read
 * that fails returns an error, never wrong data; the running store reads
 * back the data set exactly, with the operation's effect when the call
 * succeeded, without it when a write failed, and a schema change either
 * whole or not at all -- or, when the store refuses writes until it is
 * reopened (broken), its reads still return every acknowledged cell; and
 * after a close and a reopen (or a power loss, the data set synced)
 * every acknowledged write is there exactly, the operation's own effect
 * whole or absent (a schema change: the old schema or the new, never a
 * mix), and the store takes writes again.
 *
 * Compiled once into the tests' support library (sweep_util.c); its state
 * is the test program's, set up by sweep_init.
 */
#ifndef TABLETFS_TESTS_SWEEP_UTIL_H
#define TABLETFS_TESTS_SWEEP_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api_util.h"

/* TEST_SMALL was set: the sweeps try fewer points (sweep_init). */
extern bool sweep_small;

struct op {
	const char *name;
	/* Run the operation on t->s; a read renders what it read into
	 * *out (malloc'd).  Returns the call's result.  A run that leaves
	 * t->s NULL leaves no running store to check. */
	int (*run)(struct tstore *t, char **out);
	/* Before the fault is armed (NULL: nothing). */
	void (*prepare)(struct tstore *t);
	bool read;		/* *out must be the reference's or an error */
	bool tablets;		/* the state shows the tablets */
	bool write;		/* a failed call shows nothing in the running
				   store (schema changes may show either) */
	bool whole;		/* no failure leaves the store refusing
				   writes: what memory needs is built before
				   the catalog commits */
};

/* Every operation swept, sweep_op_count of them. */
extern const struct op sweep_ops[];
extern const size_t sweep_op_count;

/* What one operation does when nothing fails. */
struct reference {
	char *before;		/* the data set */
	char *after;		/* with the operation's effect */
	char *rows_before;	/* the rows of table t alone */
	char *rows_after;
	char *read;		/* what a read returns */
};

/* The reference run of op: what it does when nothing fails. */
void reference_make(const struct op *op, struct reference *ref);
void reference_release(struct reference *ref);

/*
 * A kind of fault.  arm makes the nth call (allocation, append, ...)
 * from now fail; disarm stops it and says whether it was hit (a canary
 * call may count as hit when the operation made n - 1 calls: the next
 * point then finishes the sweep).  With crash, the point ends with a
 * power loss right after the operation instead of a clean close.
 */
struct sweep_fault {
	const char *name;	/* in the test's name; NULL: none */
	const char *what;	/* the call that fails: "allocation" */
	void (*arm)(struct tstore *t, struct sweep_fault *f, long n);
	bool (*disarm)(struct tstore *t, struct sweep_fault *f);
	int kind, rc;		/* for arm and disarm */
	bool sticky;
	bool sync_always;	/* the store syncs every mutation */
	bool crash;
	bool never_breaks;	/* no operation may leave the store refusing
				   writes (as op->whole, for every op) */
	long n;			/* as armed */
	uint64_t calls;		/* the count of calls as of the arming */
};

/* The sweep of one operation under one kind of fault: n = 1, 2, ...
 * until the operation runs with no fault hit. */
void sweep(const struct op *op, const struct sweep_fault *f,
    const struct reference *ref);

/* One point alone, to debug it. */
void sweep_one(const struct op *op, const struct sweep_fault *f,
    const struct reference *ref, long n);

/*
 * Make the empty template store and the big values; before any sweep.
 * small: TEST_SMALL was set.
 */
void sweep_init(bool small);
void sweep_release(void);

#endif
