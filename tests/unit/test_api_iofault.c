/*
 * test_api_iofault.c - every operation of the public API, failing its nth
 * I/O call for every n, in the in-memory fault env: a full disk (appends
 * or file creates failing with -ENOSPC) and a failing one (syncs or
 * renames failing with -EIO).
 *
 * The sweep of test_api_enomem (sweep_util.h: the same data set, the same
 * operations, the same checks), with env_fault_fail_after in place of
 * bt_alloc_fail_after.  A sticky fault stays until the point disarms it,
 * as a bad disk does; a one-shot fault fails one call.  A running store
 * may refuse writes after a failure (a log whose sync failed stays
 * refused until the reopen), but must read right.  The store syncs every
 * mutation (sync_always), so that a write meets a failing sync too.  Then,
 * for every operation but the reads, the sticky faults again with a power
 * loss right after the failure in place of the clean close: every
 * acknowledged write (all synced) must survive it, the operation's own
 * effect whole or absent, and the store must open.
 *
 * TEST_SMALL=1 (scripts/check --valgrind) sweeps the first five points
 * and then ever wider steps, instead of every point, and fewer faults
 * (swept()).  TEST_IOFAULT_OP=name
 * TEST_IOFAULT_FAULT=name (as in the test's name, e.g. "sync -EIO sticky")
 * TEST_IOFAULT_N=n runs that one point alone.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/tabletfs.h"
#include "util/env.h"
#include "api_util.h"
#include "sweep_util.h"

/* The calls of kind f->kind the env has counted so far. */
static uint64_t
io_calls(struct tstore *t, const struct sweep_fault *f)
{
	struct env_fault_stats st;

	env_fault_get_stats(t->env, &st);
	switch (f->kind) {
	case ENV_FAULT_APPEND:
		return st.appends;
	case ENV_FAULT_SYNC:
		return st.file_syncs + st.dir_syncs;
	case ENV_FAULT_RENAME:
		return st.renames;
	default:
		return 0;	/* not counted: io_disarm opens a canary */
	}
}

static void
io_arm(struct tstore *t, struct sweep_fault *f, long n)
{
	f->n = n;
	f->calls = io_calls(t, f);
	env_fault_fail_after(t->env, f->kind, n, f->rc, f->sticky);
}

/*
 * Whether the nth call failed: the env counted n calls since the arming;
 * for creates, which it does not count, a canary create fails (sticky
 * faults only).
 */
static bool
io_disarm(struct tstore *t, struct sweep_fault *f)
{
	struct env_file *canary = NULL;
	bool tripped;

	if (f->kind == ENV_FAULT_OPEN) {
		tripped = env_file_open(t->env, "/canary", ENV_CREATE,
		    &canary) < 0;
		env_file_close(canary);
	} else {
		tripped = io_calls(t, f) - f->calls >= (uint64_t)f->n;
	}
	env_fault_fail_after(t->env, f->kind, 0, 0, false);
	return tripped;
}

#define IO(nm, wh, k, r, st, cr) {					\
	.name = (nm), .what = (wh), .arm = io_arm, .disarm = io_disarm, \
	.kind = (k), .rc = (r), .sticky = (st), .sync_always = true,	\
	.crash = (cr),							\
}

static const struct sweep_fault faults[] = {
	IO("append -ENOSPC sticky", "append", ENV_FAULT_APPEND, -ENOSPC, true,
	    false),
	IO("sync -EIO sticky", "sync", ENV_FAULT_SYNC, -EIO, true, false),
	IO("open -ENOSPC sticky", "open", ENV_FAULT_OPEN, -ENOSPC, true,
	    false),
	IO("rename -EIO sticky", "rename", ENV_FAULT_RENAME, -EIO, true,
	    false),
	IO("append -ENOSPC once", "append", ENV_FAULT_APPEND, -ENOSPC, false,
	    false),
	IO("sync -EIO once", "sync", ENV_FAULT_SYNC, -EIO, false, false),
	IO("rename -EIO once", "rename", ENV_FAULT_RENAME, -EIO, false,
	    false),
	IO("append -ENOSPC sticky, power loss", "append", ENV_FAULT_APPEND,
	    -ENOSPC, true, true),
	IO("sync -EIO sticky, power loss", "sync", ENV_FAULT_SYNC, -EIO, true,
	    true),
	IO("open -ENOSPC sticky, power loss", "open", ENV_FAULT_OPEN, -ENOSPC,
	    true, true),
	IO("rename -EIO sticky, power loss", "rename", ENV_FAULT_RENAME, -EIO,
	    true, true),
};

/*
 * Whether to sweep op under f: everything, but the reads never with a
 * power loss; under TEST_SMALL (valgrind), the sticky faults alone, and
 * the power loss only after a row mutation and a flush.
 */
static bool
swept(const struct op *op, const struct sweep_fault *f)
{
	if (f->crash && op->read)
		return false;
	if (!sweep_small)
		return true;
	return f->sticky && (!f->crash || strcmp(op->name, "mutate_row") == 0 ||
	    strcmp(op->name, "store_flush") == 0);
}

int
main(void)
{
	const char *e = getenv("TEST_SMALL");
	const char *only = getenv("TEST_IOFAULT_OP");
	const char *fault = getenv("TEST_IOFAULT_FAULT");
	const char *point = getenv("TEST_IOFAULT_N");

	sweep_init(e != NULL && *e != '\0');
	for (size_t i = 0; i < sweep_op_count; i++) {
		const struct op *op = &sweep_ops[i];
		struct reference ref;

		if (only != NULL && strcmp(only, op->name) != 0)
			continue;
		reference_make(op, &ref);
		for (size_t j = 0; j < sizeof(faults) / sizeof(faults[0]);
		    j++) {
			const struct sweep_fault *f = &faults[j];

			if ((fault != NULL && strcmp(fault, f->name) != 0) ||
			    !swept(op, f))
				continue;
			if (point != NULL)
				sweep_one(op, f, &ref, atol(point));
			else
				sweep(op, f, &ref);
		}
		reference_release(&ref);
	}
	sweep_release();
	return tap_done();
}
