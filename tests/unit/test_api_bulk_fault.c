/*
 * test_api_bulk_fault.c - a bulk load (bt_bulk_*) whose nth file operation
 * fails, for every n, in the in-memory fault env: appends and creates
 * failing with -ENOSPC, syncs and renames with -EIO, once or for good.
 * The load spills sorted runs and writes six SSTables and a catalog
 * transaction, so the faults meet every step: the runs, the SSTables'
 * blocks, their syncs and renames, the directory sync, the catalog.
 *
 * A load that fails leaves the store exactly as before in the running
 * process (no cell of the load visible, every cell written before it
 * there).  Then the store closes and opens again, cleanly or after a
 * power loss (every operation failing during the close, then whatever was
 * not synced dropped): a committed load is there whole, and a failed one
 * is absent, unless its failure was the catalog's commit failing after
 * it may have reached the disk (a write after the log's sync), which the
 * load's error says: then it is there whole or not at all, never in part.
 * Either way every cell written before is there, the store's check is
 * clean, and tmp/ is empty.
 *
 * TEST_SMALL=1 sweeps the first points and then ever wider steps.
 */
#include "api_util.h"

static const struct bt_bytes splits[] = {
	{ "r0100", 5 }, { "r0200", 5 },
};

struct fault {
	const char *name;
	enum env_fault_op kind;
	int rc;
	bool sticky;
	bool crash;
};

static const struct fault faults[] = {
	{ "append -ENOSPC once", ENV_FAULT_APPEND, -ENOSPC, false, false },
	{ "append -ENOSPC sticky", ENV_FAULT_APPEND, -ENOSPC, true, false },
	{ "sync -EIO once", ENV_FAULT_SYNC, -EIO, false, false },
	{ "sync -EIO sticky", ENV_FAULT_SYNC, -EIO, true, false },
	{ "open -ENOSPC sticky", ENV_FAULT_OPEN, -ENOSPC, true, false },
	{ "rename -EIO once", ENV_FAULT_RENAME, -EIO, false, false },
	{ "rename -EIO sticky", ENV_FAULT_RENAME, -EIO, true, false },
	{ "append -ENOSPC, power loss", ENV_FAULT_APPEND, -ENOSPC, true,
	    true },
	{ "sync -EIO, power loss", ENV_FAULT_SYNC, -EIO, true, true },
	{ "open -ENOSPC, power loss", ENV_FAULT_OPEN, -ENOSPC, true, true },
	{ "rename -EIO, power loss", ENV_FAULT_RENAME, -EIO, true, true },
};

static uint64_t
calls(struct env *env, enum env_fault_op kind)
{
	struct env_fault_stats st;

	env_fault_get_stats(env, &st);
	switch (kind) {
	case ENV_FAULT_APPEND:
		return st.appends;
	case ENV_FAULT_SYNC:
		return st.file_syncs + st.dir_syncs;
	case ENV_FAULT_RENAME:
		return st.renames;
	default:
		return 0;
	}
}

/* A store with table t (families a, c in two groups, three tablets) and
 * cells written before the load, synced and flushed. */
static void
setup(struct tstore *t)
{
	struct bt_family_spec f[] = {
		{ "a", NULL, NULL }, { "c", "g2", NULL },
	};
	struct bt_options o = { .sync_always = true };

	tstore_fault(t, &o);
	if (bt_table_create(t->s, "t", f, 2, splits, 2, 0) != 0 ||
	    put_str(t->s, "t", "r0050", "a", "x", 7, "before") != 0 ||
	    put_str(t->s, "t", "r0150", "c", "y", 3, "old") != 0 ||
	    del_str(t->s, "t", "r0150", BT_DELETE_COLUMN, "c", "y", 0) != 0 ||
	    put_str(t->s, "t", "r0250", "a", "", 1, "kept") != 0 ||
	    bt_store_flush(t->s) != 0 ||
	    put_str(t->s, "t", "r0251", "a", "", 1, "in the log") != 0)
		tap_bail("cannot set up the store");
}

/* The load: 300 rows over the three tablets and both groups, a budget
 * that spills a few runs.  0 or the first error. */
static int
load(struct bt_store *s)
{
	struct bt_bulk *b;
	int rc;

	if ((rc = bt_bulk_open(s, "t", &(struct bt_bulk_options){ 8192 },
	    &b)) != 0)
		return rc;
	for (int i = 0; i < 300 && rc == 0; i++) {
		char row[16], val[64];
		int r = (i * 7919) % 300;

		snprintf(row, sizeof(row), "r%04d", r);
		snprintf(val, sizeof(val), "loaded %d", r);
		rc = bt_bulk_put(b, bts(row), r % 2 ? "a" : "c", bts("x"), 7,
		    bts(val));
	}
	if (rc == 0)
		rc = bt_bulk_commit(b, NULL);
	bt_bulk_close(b);
	return rc;
}

static int
tmp_fn(void *arg, const char *name)
{
	(void)name;
	(*(int *)arg)++;
	return 0;
}

static int
tmp_count(struct tstore *t)
{
	int n = 0;

	if (env_dir_list(t->env, "/store/tmp", tmp_fn, &n) < 0)
		return -1;
	return n;
}

static int
clean_reopen(struct tstore *t)
{
	int rc;

	(void)bt_store_close(t->s);
	t->s = NULL;
	if ((rc = bt_store_open(t->path, &t->opts, &t->s)) != 0)
		t->s = NULL;
	return rc;
}

struct tally {
	long points, failed_loads, unknown, bad;
};

/* One point: returns whether the fault tripped (false: n is past every
 * call of the load, the sweep of this fault is done). */
static bool
point(const struct fault *f, long n, const char *before, const char *after,
    struct tally *tl)
{
	struct tstore t;
	uint64_t c0;
	bool tripped, unknown;
	char *now, *reopened, where[128];
	int rc, orc;

	snprintf(where, sizeof(where), "%s, n=%ld", f->name, n);
	setup(&t);
	c0 = calls(t.env, f->kind);
	env_fault_fail_after(t.env, f->kind, n, f->rc, f->sticky);
	rc = load(t.s);
	if (f->kind == ENV_FAULT_OPEN) {
		struct env_file *canary = NULL;

		tripped = env_file_open(t.env, "/canary", ENV_CREATE,
		    &canary) < 0;
		env_file_close(canary);
		env_path_remove(t.env, "/canary");
	} else {
		tripped = calls(t.env, f->kind) - c0 >= (uint64_t)n;
	}
	env_fault_fail_after(t.env, f->kind, 0, 0, false);
	tl->points++;
	if (rc != 0)
		tl->failed_loads++;
	unknown = rc != 0 && strstr(bt_error_detail(), "may be there") != NULL;
	tl->unknown += unknown;
	if (getenv("TEST_BULK_DEBUG") != NULL)
		diag("%s: load %s (%s)", where, bt_strerror(rc),
		    bt_error_detail());
	now = scan_text(t.s, "t", NULL);
	if (strcmp(now, rc == 0 ? after : before) != 0) {
		if (tl->bad++ < 3) {
			diag("%s: load %s, yet the table reads:", where,
			    rc == 0 ? "committed" : bt_strerror(rc));
			diag_text("got", now);
		}
	}
	free(now);
	orc = f->crash ? tstore_crash_reopen(&t) : clean_reopen(&t);
	if (orc != 0) {
		if (tl->bad++ < 3)
			diag("%s: reopen: %s (%s)", where, bt_strerror(orc),
			    bt_error_detail());
		tstore_destroy(&t);
		return tripped;
	}
	reopened = scan_text(t.s, "t", NULL);
	/* The outcome is the load's, or either when its commit's is not
	 * known. */
	if (!(strcmp(reopened, rc == 0 ? after : before) == 0 ||
	    (unknown && strcmp(reopened, after) == 0))) {
		if (tl->bad++ < 3) {
			diag("%s: load %s; after the %s the table reads:",
			    where, rc == 0 ? "committed" : bt_strerror(rc),
			    f->crash ? "power loss" : "reopen");
			diag_text("got", reopened);
		}
	}
	free(reopened);
	if ((orc = bt_store_check(t.s, NULL, NULL, NULL, NULL, NULL)) != 0 ||
	    tmp_count(&t) != 0) {
		if (tl->bad++ < 3)
			diag("%s: check %s (%s), %d files in tmp/", where,
			    bt_strerror(orc), bt_error_detail(),
			    tmp_count(&t));
	}
	tstore_destroy(&t);
	return tripped;
}

/* Every point under TEST_SMALL too at first, then wider steps. */
static long
next_n(long n)
{
	const char *small = getenv("TEST_SMALL");

	if (small == NULL || *small == '\0' || n < 5)
		return n + 1;
	return n + n / 3;
}

int
main(void)
{
	struct tstore t;
	char *before, *after;

	/* The table before and after a load without faults. */
	setup(&t);
	if (tstore_cell_skip(&t, "the fault env is an embedded store's"))
		return tap_done();
	before = scan_text(t.s, "t", NULL);
	is_int(load(t.s), 0, "a load without faults commits");
	after = scan_text(t.s, "t", NULL);
	ok(strcmp(before, after) != 0 && strstr(after, "loaded 150") != NULL,
	    "and changes the table");
	tstore_destroy(&t);

	for (size_t i = 0; i < sizeof(faults) / sizeof(faults[0]); i++) {
		struct tally tl = { 0 };
		long n;

		for (n = 1; point(&faults[i], n, before, after, &tl);
		    n = next_n(n))
			;
		ok(tl.bad == 0 && tl.failed_loads > 0, "%s: %ld points, %ld "
		    "failed loads (%ld of unknown commit): each left the "
		    "store as before or loaded whole, reopenable, check "
		    "clean", faults[i].name, tl.points, tl.failed_loads,
		    tl.unknown);
	}
	free(before);
	free(after);
	return tap_done();
}
