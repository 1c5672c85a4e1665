/*
 * test_api_enomem.c - every operation of the public API, failing its nth
 * allocation for every n, in the in-memory fault env.
 *
 * Each point starts from a fresh store holding a small known data set (a
 * table of two families, some versions, some deletes, in two SSTables and
 * the memtable), makes the nth allocation from there on fail
 * (bt_alloc_fail_after), runs one operation, stops the fault, and proves:
 * the call returned 0 or a negative error, and a read that fails returns
 * an error, never wrong data; the running store reads back the data set
 * exactly, with the operation's effect when the call succeeded, without
 * it when a write failed, and a schema change either whole or not at all
 * -- or, when the store refuses writes until it is reopened (broken), its
 * reads still return every acknowledged cell; and after a close and a
 * reopen every acknowledged write is there exactly, the operation's own
 * effect whole or absent (a schema change: the old schema or the new,
 * never a mix), and the store takes writes again.  The sweep of an
 * operation ends at the first n at which it runs with no allocation
 * failing.  The operations: the writes (a row mutation of several cells
 * and a delete, check-and-mutate, increment, append, move), a point read,
 * a whole scan, flush, major compaction, split, the schema changes, and
 * the close and the open (with a log to replay) of the store itself.
 *
 * TEST_SMALL=1 (scripts/check --valgrind) sweeps the first five points
 * and then ever wider steps, instead of every point.  TEST_ENOMEM_OP=name
 * TEST_ENOMEM_N=n runs that one point alone.  The data set, the
 * operations and the checks are sweep_util.h's.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/tabletfs.h"
#include "util/alloc.h"
#include "util/env.h"
#include "api_util.h"
#include "sweep_util.h"

/* The nth allocation from now fails. */
static void
alloc_arm(struct tstore *t, struct sweep_fault *f, long n)
{
	(void)t;
	(void)f;
	bt_alloc_fail_after(n);
}

/* Whether an allocation failed: a canary one fails too. */
static bool
alloc_disarm(struct tstore *t, struct sweep_fault *f)
{
	void *canary = bt_malloc(1);

	(void)t;
	(void)f;
	bt_alloc_fail_after(0);
	bt_free(canary);
	return canary == NULL;
}

static const struct sweep_fault enomem = {
	.what = "allocation", .arm = alloc_arm, .disarm = alloc_disarm,
};

int
main(void)
{
	const char *e = getenv("TEST_SMALL");
	const char *only = getenv("TEST_ENOMEM_OP");
	const char *point = getenv("TEST_ENOMEM_N");

	sweep_init(e != NULL && *e != '\0');
	for (size_t i = 0; i < sizeof(sweep_ops) / sizeof(sweep_ops[0]); i++) {
		struct reference ref;

		if (only != NULL && strcmp(only, sweep_ops[i].name) != 0)
			continue;
		reference_make(&sweep_ops[i], &ref);
		if (point != NULL)
			sweep_one(&sweep_ops[i], &enomem, &ref, atol(point));
		else
			sweep(&sweep_ops[i], &enomem, &ref);
		reference_release(&ref);
	}
	sweep_release();
	return tap_done();
}
