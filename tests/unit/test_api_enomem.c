/*
 * test_api_enomem.c - every operation of the public API, failing its nth
 * allocation for every n, in the in-memory fault env.  SQLite allocates
 * through bt_malloc here too, so the catalog's allocations fail as well.
 *
 * Each point starts from a fresh store holding a small known data set (a
 * table of two families, some versions, some deletes, in two SSTables and
 * the memtable), makes the nth allocation from there on fail
 * (bt_alloc_fail_after), runs one operation, stops the fault, and proves:
 * the call returned 0 or a negative error, and a read that fails returns
 * an error, never wrong data; the running store reads back the data set
 * exactly, with the operation's effect when the call succeeded, without
 * it when a write failed, and a schema change either whole or not at all;
 * no allocation failure leaves the store refusing writes until it is
 * reopened (broken); and after a close and a
 * reopen every acknowledged write is there exactly, the operation's own
 * effect whole or absent (a schema change: the old schema or the new,
 * never a mix), and the store takes writes again.  The sweep of an
 * operation ends at the first n at which it runs with no allocation
 * failing.  The operations: the writes (a row mutation of several cells
 * and a delete, check-and-mutate, increment, append, the moves of a
 * version and of a column), a point read,
 * a whole scan, flush, major compaction, split, the schema changes, and
 * the close and the open (with a log to replay) of the store itself.
 *
 * Every point is tried up to the 600th, then steps growing by a sixteenth
 * (the open of a store makes thousands of allocations, most of them
 * SQLite's); TEST_SMALL=1 (scripts/check under valgrind and the
 * sanitizers) sweeps the first five points and then steps growing by
 * half.  TEST_ENOMEM_OP=name TEST_ENOMEM_N=n runs that one point alone.
 * The data set, the operations and the checks are sweep_util.h's.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

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

/*
 * SQLite's allocations go through bt_malloc too, so that the nth
 * allocation may be one of the catalog's (sqlite3_config before SQLite
 * starts; the size is kept in front of each block for xSize).
 */
/* p, an allocation of n bytes and a size in front, or NULL. */
static void *
sqlite_sized(uint64_t *p, int n)
{
	if (p == NULL)
		return NULL;
	p[0] = (uint64_t)n;
	return p + 1;
}

static void *
sqlite_alloc(int n)
{
	return sqlite_sized(bt_malloc((size_t)n + sizeof(uint64_t)), n);
}

static void
sqlite_free(void *p)
{
	if (p != NULL)
		bt_free((uint64_t *)p - 1);
}

static void *
sqlite_realloc(void *p, int n)
{
	return sqlite_sized(bt_realloc((uint64_t *)p - 1, (size_t)n +
	    sizeof(uint64_t)), n);
}

static int
sqlite_size(void *p)
{
	return p == NULL ? 0 : (int)((uint64_t *)p)[-1];
}

static int
sqlite_roundup(int n)
{
	return (n + 7) & ~7;
}

static int
sqlite_init(void *arg)
{
	(void)arg;
	return SQLITE_OK;
}

static void
sqlite_shutdown(void *arg)
{
	(void)arg;
}

static void
sqlite_alloc_route(void)
{
	static const sqlite3_mem_methods m = {
		sqlite_alloc, sqlite_free, sqlite_realloc, sqlite_size,
		sqlite_roundup, sqlite_init, sqlite_shutdown, NULL,
	};

	if (sqlite3_config(SQLITE_CONFIG_MALLOC, &m) != SQLITE_OK)
		tap_bail("sqlite3_config(SQLITE_CONFIG_MALLOC)");
}

static const struct sweep_fault enomem = {
	.what = "allocation", .arm = alloc_arm, .disarm = alloc_disarm,
	.never_breaks = true,
};

int
main(void)
{
	const char *e = getenv("TEST_SMALL");
	const char *only = getenv("TEST_ENOMEM_OP");
	const char *point = getenv("TEST_ENOMEM_N");

	sqlite_alloc_route();
	sweep_init(e != NULL && *e != '\0');
	for (size_t i = 0; i < sweep_op_count; i++) {
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
