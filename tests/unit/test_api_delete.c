/*
 * test_api_delete.c - every kind of delete (version, column, family, row)
 * through the public API, on data still in the memtable, on data flushed
 * to an SSTable and on data rewritten by a major compaction; each result
 * is checked again after the delete itself is flushed, compacted and
 * reopened.  A delete masks only what was written before it: a later put
 * is visible even with an older timestamp.  With maxversions, deleted
 * versions do not count, yet deleting the newest version never brings
 * back one that GC condemned; compactions drop condemned versions but
 * never change what a read returns.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/tabletfs.h"
#include "util/env.h"
#include "api_util.h"

static const char *const families[] = {
	"a", "b", "one=maxversions=1", "two=maxversions=2",
	"both=maxversions=1 and maxage=1d", NULL,
};

#define L_E	"a:@7=e\n"
#define L_X30	"a:x@30=x30\n"
#define L_X20	"a:x@20=x20\n"
#define L_X10	"a:x@10=x10\n"
#define L_XY	"a:xy@10=xy10\n"
#define L_Y	"a:y@10=y10\n"
#define L_Z	"b:z@5=z5\n"
#define ALL	L_E L_X30 L_X20 L_X10 L_XY L_Y L_Z

static void
setup_row(struct tstore *t, const char *row)
{
	must(put_str(t->s, "d", row, "a", "x", 20, "x20"));
	must(put_str(t->s, "d", row, "a", "", 7, "e"));
	must(put_str(t->s, "d", row, "a", "x", 10, "x10"));
	must(put_str(t->s, "d", row, "b", "z", 5, "z5"));
	must(put_str(t->s, "d", row, "a", "xy", 10, "xy10"));
	must(put_str(t->s, "d", row, "a", "y", 10, "y10"));
	must(put_str(t->s, "d", row, "a", "x", 30, "x30"));
}

static void
act(struct tstore *t, const char *row, bool *failed, int rc)
{
	if (rc != 0) {
		diag("row %s: mutation failed: %s", row, bt_strerror(rc));
		*failed = true;
	}
}

/* The scenarios: what each does after set-up, and the row it leaves. */
struct scenario {
	const char *row;
	const char *want;
};

static const struct scenario scenarios[] = {
	{ "untouched", ALL },
	{ "delver", L_E L_X30 L_X10 L_XY L_Y L_Z },
	{ "delver-miss", ALL },
	{ "delver-again", L_E L_X30 "a:x@20=again\n" L_X10 L_XY L_Y L_Z },
	{ "delver-all", L_E L_XY L_Y L_Z },
	{ "delcol", L_E L_XY L_Y L_Z },
	{ "delcol-empty", L_X30 L_X20 L_X10 L_XY L_Y L_Z },
	{ "delcol-older", L_E "a:x@1=old\n" L_XY L_Y L_Z },
	{ "delcol-twice", L_E L_XY L_Y L_Z },
	{ "delfam", L_Z },
	{ "delfam-older", "a:y@2=y2\n" L_Z },
	{ "delfam-b", L_E L_X30 L_X20 L_X10 L_XY L_Y },
	{ "delrow", "NOTFOUND" },
	{ "delrow-put", "a:x@3=x3\n" },
	{ "delrow-newer", "a:x@99=x99\nb:w@1=w1\n" },
	{ "delrow0", ALL },
};
#define NSCENARIOS (sizeof(scenarios) / sizeof(scenarios[0]))

static void
run_acts(struct tstore *t)
{
	struct bt_mutation three[3];
	bool failed = false;
	int i;

	act(t, "delver", &failed, del_str(t->s, "d", "delver",
	    BT_DELETE_VERSION, "a", "x", 20));
	act(t, "delver-miss", &failed, del_str(t->s, "d", "delver-miss",
	    BT_DELETE_VERSION, "a", "x", 25));
	act(t, "delver-again", &failed, del_str(t->s, "d", "delver-again",
	    BT_DELETE_VERSION, "a", "x", 20));
	act(t, "delver-again", &failed, put_str(t->s, "d", "delver-again",
	    "a", "x", 20, "again"));
	for (i = 0; i < 3; i++) {
		three[i] = (struct bt_mutation){
			.kind = BT_DELETE_VERSION, .family = "a",
			.qualifier = bts("x"), .ts = 10 * (i + 1),
		};
	}
	act(t, "delver-all", &failed, bt_mutate_row(t->s, "d",
	    bts("delver-all"), three, 3, NULL, NULL));
	act(t, "delcol", &failed, del_str(t->s, "d", "delcol",
	    BT_DELETE_COLUMN, "a", "x", 0));
	act(t, "delcol-empty", &failed, del_str(t->s, "d", "delcol-empty",
	    BT_DELETE_COLUMN, "a", "", 0));
	act(t, "delcol-older", &failed, del_str(t->s, "d", "delcol-older",
	    BT_DELETE_COLUMN, "a", "x", 0));
	act(t, "delcol-older", &failed, put_str(t->s, "d", "delcol-older",
	    "a", "x", 1, "old"));
	act(t, "delcol-twice", &failed, del_str(t->s, "d", "delcol-twice",
	    BT_DELETE_COLUMN, "a", "x", 0));
	act(t, "delcol-twice", &failed, put_str(t->s, "d", "delcol-twice",
	    "a", "x", 15, "p15"));
	act(t, "delcol-twice", &failed, del_str(t->s, "d", "delcol-twice",
	    BT_DELETE_COLUMN, "a", "x", 0));
	act(t, "delfam", &failed, del_str(t->s, "d", "delfam",
	    BT_DELETE_FAMILY, "a", NULL, 0));
	act(t, "delfam-older", &failed, del_str(t->s, "d", "delfam-older",
	    BT_DELETE_FAMILY, "a", NULL, 0));
	act(t, "delfam-older", &failed, put_str(t->s, "d", "delfam-older",
	    "a", "y", 2, "y2"));
	act(t, "delfam-b", &failed, del_str(t->s, "d", "delfam-b",
	    BT_DELETE_FAMILY, "b", NULL, 0));
	act(t, "delrow", &failed, del_str(t->s, "d", "delrow",
	    BT_DELETE_ROW, NULL, NULL, 0));
	act(t, "delrow-put", &failed, del_str(t->s, "d", "delrow-put",
	    BT_DELETE_ROW, NULL, NULL, 0));
	act(t, "delrow-put", &failed, put_str(t->s, "d", "delrow-put",
	    "a", "x", 3, "x3"));
	act(t, "delrow-newer", &failed, del_str(t->s, "d", "delrow-newer",
	    BT_DELETE_ROW, NULL, NULL, 0));
	act(t, "delrow-newer", &failed, put_str(t->s, "d", "delrow-newer",
	    "a", "x", 99, "x99"));
	act(t, "delrow-newer", &failed, put_str(t->s, "d", "delrow-newer",
	    "b", "w", 1, "w1"));
	ok(!failed, "every delete and put succeeds");
}

static void
check_scenarios(struct tstore *t, const char *when)
{
	struct sbuf all = { 0 };
	struct bt_scan_options so = { 0 };
	size_t i;
	char *w;

	for (i = 0; i < NSCENARIOS; i++) {
		is_text(read_text_str(t->s, "d", scenarios[i].row, NULL),
		    scenarios[i].want, "%s: %s", when, scenarios[i].row);
	}
	/* A scan agrees, rows in order; a deleted row is not listed. */
	for (i = 0; i < NSCENARIOS; i++) {
		size_t j, best = NSCENARIOS;

		/* selection of the i-th smallest row name */
		for (j = 0; j < NSCENARIOS; j++) {
			size_t k, smaller = 0;

			for (k = 0; k < NSCENARIOS; k++)
				if (strcmp(scenarios[k].row,
				    scenarios[j].row) < 0)
					smaller++;
			if (smaller == i)
				best = j;
		}
		if (best == NSCENARIOS ||
		    strcmp(scenarios[best].want, "NOTFOUND") == 0)
			continue;
		sbuf_printf(&all, "[%s]\n%s", scenarios[best].row,
		    scenarios[best].want);
	}
	w = sbuf_take(&all);
	is_text(scan_text(t->s, "d", &so), w, "%s: a full scan", when);
	free(w);
}

/*
 * stage 0: the data is in the memtable when deleted; 1: flushed; 2:
 * flushed and rewritten by a major compaction.
 */
static void
test_stage(int stage)
{
	static const char *const names[] = {
		"in memtable", "flushed", "compacted",
	};
	struct tstore t;
	char when[96];
	size_t i;

	tstore_fault(&t, NULL);
	must(make_table(t.s, "d", families));
	for (i = 0; i < NSCENARIOS; i++)
		setup_row(&t, scenarios[i].row);
	if (stage >= 1)
		is_int(bt_store_flush(t.s), 0, "data %s: flush", names[stage]);
	if (stage >= 2)
		is_int(bt_store_compact(t.s, "d", true), 0,
		    "data %s: major compaction", names[stage]);
	run_acts(&t);
	snprintf(when, sizeof(when), "data %s, deletes in memtable",
	    names[stage]);
	check_scenarios(&t, when);
	is_int(bt_store_flush(t.s), 0, "flush the deletes");
	snprintf(when, sizeof(when), "data %s, deletes flushed",
	    names[stage]);
	check_scenarios(&t, when);
	is_int(bt_store_compact(t.s, "d", false), 0, "minor compaction");
	snprintf(when, sizeof(when), "data %s, minor compaction",
	    names[stage]);
	check_scenarios(&t, when);
	is_int(bt_store_compact(t.s, "d", true), 0, "major compaction");
	snprintf(when, sizeof(when), "data %s, major compaction",
	    names[stage]);
	check_scenarios(&t, when);
	is_int(tstore_reopen(&t), 0, "clean close");
	snprintf(when, sizeof(when), "data %s, reopened", names[stage]);
	check_scenarios(&t, when);
	tstore_destroy(&t);
}

/* The deletes are replayed from the log after a reopen without a flush. */
static void
test_replayed(void)
{
	struct tstore t;

	tstore_fault(&t, NULL);
	if (tstore_cell_skip(&t, "cuts the store's power"))
		return;
	must(make_table(t.s, "d", families));
	for (size_t i = 0; i < NSCENARIOS; i++)
		setup_row(&t, scenarios[i].row);
	is_int(bt_store_flush(t.s), 0, "replay: flush the data");
	run_acts(&t);
	/* Power loss right after: only what was synced survives, so sync
	 * with one last synced write. */
	{
		struct bt_mutation m = {
			.kind = BT_DELETE_VERSION, .family = "a",
			.qualifier = { "x", 1 }, .ts = 25,
		};
		struct bt_write_options w = { .sync = true };

		/* A no-op, so that every scenario stays as it was. */
		is_int(bt_mutate_row(t.s, "d", bts("delver-miss"), &m, 1, &w,
		    NULL), 0, "replay: a synced write after the deletes");
	}
	must(tstore_crash_reopen(&t));
	check_scenarios(&t, "deletes replayed from the log");
	tstore_destroy(&t);
}

/* maxversions and deleted versions. */
static void
test_maxversions(void)
{
	struct tstore t;
	struct bt_mutation m = {
		.kind = BT_PUT, .family = "a", .qualifier = { "srv", 3 },
		.ts = BT_TS_SERVER, .value = { "s", 1 },
	};
	int64_t stamp = -1;
	struct sbuf b = { 0 };
	char *w;

	tstore_fault(&t, NULL);
	must(make_table(t.s, "d", families));

	/* maxversions=1 */
	must(put_str(t.s, "d", "m", "one", "q", 10, "a"));
	must(put_str(t.s, "d", "m", "one", "q", 20, "b"));
	is_text(read_text_str(t.s, "d", "m", NULL), "one:q@20=b\n",
	    "maxversions=1: the newest version only");
	must(del_str(t.s, "d", "m", BT_DELETE_VERSION, "one", "q", 20));
	is_text(read_text_str(t.s, "d", "m", NULL), "NOTFOUND",
	    "maxversions=1: deleting the newest does not bring back the "
	    "condemned older one");
	is_int(bt_store_flush(t.s), 0, "maxversions=1: flush");
	is_text(read_text_str(t.s, "d", "m", NULL), "NOTFOUND",
	    "maxversions=1: still hidden after a flush");
	must(put_str(t.s, "d", "m", "one", "q", 15, "c"));
	is_text(read_text_str(t.s, "d", "m", NULL), "one:q@15=c\n",
	    "maxversions=1: a put older than the deleted version is visible "
	    "(deleted versions do not count)");
	must(put_str(t.s, "d", "m", "one", "q", 25, "d"));
	is_text(read_text_str(t.s, "d", "m", NULL), "one:q@25=d\n",
	    "maxversions=1: a newer put is visible, and condemns it");
	must(del_str(t.s, "d", "m", BT_DELETE_VERSION, "one", "q", 25));
	is_text(read_text_str(t.s, "d", "m", NULL), "NOTFOUND",
	    "maxversions=1: deleting it again leaves the one it condemned "
	    "condemned");
	must(put_str(t.s, "d", "m", "one", "q", 25, "d"));
	is_int(bt_store_flush(t.s), 0, "maxversions=1: flush");
	is_int(bt_store_compact(t.s, "d", true), 0,
	    "maxversions=1: major compaction");
	is_text(read_text_str(t.s, "d", "m", NULL), "one:q@25=d\n",
	    "maxversions=1: the same after a major compaction");
	is_int(tstore_reopen(&t), 0, "maxversions=1: clean close");
	is_text(read_text_str(t.s, "d", "m", NULL), "one:q@25=d\n",
	    "maxversions=1: the same after a reopen");
	must(del_str(t.s, "d", "m", BT_DELETE_VERSION, "one", "q", 25));
	is_text(read_text_str(t.s, "d", "m", NULL), "NOTFOUND",
	    "maxversions=1: delete the only visible version");
	is_int(bt_store_flush(t.s), 0, "maxversions=1: flush");
	is_int(bt_store_compact(t.s, "d", true), 0,
	    "maxversions=1: major compaction");
	is_text(read_text_str(t.s, "d", "m", NULL), "NOTFOUND",
	    "maxversions=1: nothing after a major compaction");
	must(put_str(t.s, "d", "m", "one", "q", 5, "e"));
	is_text(read_text_str(t.s, "d", "m", NULL), "one:q@5=e\n",
	    "maxversions=1: after a compaction too, an older put is the "
	    "only version");
	must(del_str(t.s, "d", "m", BT_DELETE_VERSION, "one", "q", 5));
	must(put_str(t.s, "d", "m", "one", "q", 26, "f"));
	is_text(read_text_str(t.s, "d", "m", NULL), "one:q@26=f\n",
	    "maxversions=1: a put newer than the deleted version is visible");

	/* maxversions=2: the case: deleting v20, then writing
	 * v30, leaves v10 alone. */
	must(put_str(t.s, "d", "m3", "two", "q", 10, "v10"));
	must(put_str(t.s, "d", "m3", "two", "q", 20, "v20"));
	must(del_str(t.s, "d", "m3", BT_DELETE_VERSION, "two", "q", 20));
	must(put_str(t.s, "d", "m3", "two", "q", 30, "v30"));
	is_text(read_text_str(t.s, "d", "m3", NULL),
	    "two:q@30=v30\ntwo:q@10=v10\n",
	    "maxversions=2: a deleted version does not cost an older one");
	must(put_str(t.s, "d", "m3", "two", "q", 40, "v40"));
	must(del_str(t.s, "d", "m3", BT_DELETE_VERSION, "two", "q", 40));
	is_text(read_text_str(t.s, "d", "m3", NULL), "two:q@30=v30\n",
	    "maxversions=2: v10, condemned by v40, stays condemned when v40 "
	    "is deleted");
	is_int(bt_store_flush(t.s), 0, "maxversions=2: flush");
	is_text(read_text_str(t.s, "d", "m3", NULL), "two:q@30=v30\n",
	    "maxversions=2: the same after a flush");
	is_int(tstore_reopen(&t), 0, "maxversions=2: clean close");
	is_int(bt_store_compact(t.s, "d", true), 0,
	    "maxversions=2: major compaction");
	is_text(read_text_str(t.s, "d", "m3", NULL), "two:q@30=v30\n",
	    "maxversions=2: the same after a reopen and a major compaction");
	must(put_str(t.s, "d", "m3", "two", "q", 5, "v5"));
	is_text(read_text_str(t.s, "d", "m3", NULL),
	    "two:q@30=v30\ntwo:q@5=v5\n",
	    "maxversions=2: an older put takes the free place");

	/* maxversions=1 and maxage=1d: the marks of a delete follow the
	 * whole policy.  Timestamps of a few microseconds are decades old;
	 * server stamps are young, and beyond the count they stay. */
	must(put_str(t.s, "d", "m4", "both", "q", 10, "v10"));
	must(put_str(t.s, "d", "m4", "both", "q", 20, "v20"));
	must(put_str(t.s, "d", "m4", "both", "q", 30, "v30"));
	is_text(read_text_str(t.s, "d", "m4", NULL), "both:q@30=v30\n",
	    "maxversions=1 and maxage: old versions beyond one condemned");
	must(del_str(t.s, "d", "m4", BT_DELETE_VERSION, "both", "q", 30));
	is_text(read_text_str(t.s, "d", "m4", NULL), "NOTFOUND",
	    "maxversions=1 and maxage: deleting v30 brings back neither");
	must(put_str(t.s, "d", "m4", "both", "q", 25, "v25"));
	is_text(read_text_str(t.s, "d", "m4", NULL), "both:q@25=v25\n",
	    "maxversions=1 and maxage: an old put takes the free place");
	m.family = "both";
	must(bt_mutate_row(t.s, "d", bts("m5"), &m, 1, NULL, &stamp));
	must(bt_mutate_row(t.s, "d", bts("m5"), &m, 1, NULL, &stamp));
	w = read_text_str(t.s, "d", "m5", NULL);
	{
		int lines = 0;

		for (const char *p = w; *p != '\0'; p++)
			lines += *p == '\n';
		is_int(lines, 2, "maxversions=1 and maxage: two young "
		    "versions both stay");
	}
	free(w);
	m.family = "a";

	/* maxversions=2 */
	must(put_str(t.s, "d", "m2", "two", "q", 1, "v1"));
	must(put_str(t.s, "d", "m2", "two", "q", 2, "v2"));
	must(put_str(t.s, "d", "m2", "two", "q", 3, "v3"));
	is_text(read_text_str(t.s, "d", "m2", NULL),
	    "two:q@3=v3\ntwo:q@2=v2\n", "maxversions=2: two newest");
	must(del_str(t.s, "d", "m2", BT_DELETE_VERSION, "two", "q", 3));
	is_text(read_text_str(t.s, "d", "m2", NULL), "two:q@2=v2\n",
	    "maxversions=2: deleting the newest leaves v2; v1 stays hidden");
	must(del_str(t.s, "d", "m2", BT_DELETE_VERSION, "two", "q", 1));
	is_text(read_text_str(t.s, "d", "m2", NULL), "two:q@2=v2\n",
	    "maxversions=2: deleting a hidden version changes nothing");
	must(put_str(t.s, "d", "m2", "two", "q", 3, "v3b"));
	is_text(read_text_str(t.s, "d", "m2", NULL),
	    "two:q@3=v3b\ntwo:q@2=v2\n",
	    "maxversions=2: a put at the deleted timestamp is visible");
	must(del_str(t.s, "d", "m2", BT_DELETE_COLUMN, "two", "q", 0));
	must(put_str(t.s, "d", "m2", "two", "q", 1, "v1b"));
	is_text(read_text_str(t.s, "d", "m2", NULL), "two:q@1=v1b\n",
	    "maxversions=2: after a column delete the slots are free");
	is_int(bt_store_flush(t.s), 0, "maxversions=2: flush");
	is_int(bt_store_compact(t.s, "d", true), 0,
	    "maxversions=2: major compaction");
	is_text(read_text_str(t.s, "d", "m2", NULL), "two:q@1=v1b\n",
	    "maxversions=2: the same after a major compaction");

	/* A server-stamped version deleted by its stamp. */
	is_int(bt_mutate_row(t.s, "d", bts("s"), &m, 1, NULL, &stamp), 0,
	    "server stamp: put");
	must(put_str(t.s, "d", "s", "a", "srv", 1, "old"));
	must(del_str(t.s, "d", "s", BT_DELETE_VERSION, "a", "srv", stamp));
	is_text(read_text_str(t.s, "d", "s", NULL), "a:srv@1=old\n",
	    "server stamp: deleting the version by its stamp");

	/* Deleting what is not there. */
	is_int(del_str(t.s, "d", "ghost", BT_DELETE_ROW, NULL, NULL, 0), 0,
	    "a row delete of an absent row succeeds");
	is_int(del_str(t.s, "d", "ghost", BT_DELETE_COLUMN, "a", "q", 0), 0,
	    "a column delete of an absent column succeeds");
	is_text(read_text_str(t.s, "d", "ghost", NULL), "NOTFOUND",
	    "and the row stays absent");
	is_int(del_str(t.s, "d", "ghost", BT_DELETE_FAMILY, "nosuch", NULL,
	    0), -ENOENT, "a family delete of an unknown family is -ENOENT");
	is_int(del_str(t.s, "nosuch", "ghost", BT_DELETE_ROW, NULL, NULL, 0),
	    -ENOENT, "a row delete in an unknown table is -ENOENT");

	/* A row delete in the middle of a multi-version history. */
	must(put_str(t.s, "d", "h", "a", "q", 100, "before"));
	must(del_str(t.s, "d", "h", BT_DELETE_ROW, NULL, NULL, 0));
	must(put_str(t.s, "d", "h", "a", "q", 50, "after"));
	sbuf_printf(&b, "a:q@50=after\n");
	w = sbuf_take(&b);
	is_text(read_text_str(t.s, "d", "h", NULL), w,
	    "a row delete masks a newer timestamp written before it, not an "
	    "older one written after");
	is_int(tstore_reopen(&t), 0, "clean close");
	is_text(read_text_str(t.s, "d", "h", NULL), w, "and after a reopen");
	free(w);
	tstore_destroy(&t);
}

/*
 * A read of one column's newest version looks past the first put it meets
 * in the memtable when a delete gathered before it masks that put: a row
 * delete (whose key, for a one-byte row, is shorter than a put's tail), a
 * family, column or version delete.  The put after each delete has an
 * older timestamp and is the answer.
 */
static void
test_newest_past_markers(void)
{
	static const struct {
		const char *row;
		enum bt_mutation_kind kind;
		const char *what;
	} cases[] = {
		{ "r", BT_DELETE_ROW, "a row delete of a one-byte row" },
		{ "f", BT_DELETE_FAMILY, "a family delete" },
		{ "c", BT_DELETE_COLUMN, "a column delete" },
		{ "v", BT_DELETE_VERSION, "a version delete" },
	};
	struct tstore t;

	tstore_fault(&t, NULL);
	must(make_table(t.s, "d", families));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		must(put_str(t.s, "d", cases[i].row, "a", "q", 5, "old"));
		must(del_str(t.s, "d", cases[i].row, cases[i].kind, "a", "q",
		    5));
		must(put_str(t.s, "d", cases[i].row, "a", "q", 3, "new"));
		is_text(newest_text(t.s, "d", cases[i].row, "a", "q"),
		    "new@3", "memtable: the newest of a:q past %s",
		    cases[i].what);
	}
	tstore_destroy(&t);
}

/*
 * A flush writes no entry that a newer one of its memtable hides: 80
 * rows of one 4 KiB value deleted by a version, column or row delete,
 * and 20 whose value was put again at the same timestamp, flush to the
 * 20 new values and the markers, not to all 120 values (480 KiB).  The
 * reads, before and after a reopen, are what they were.
 */
static void
test_flush_leaves_out_hidden(void)
{
	static const enum bt_mutation_kind kinds[] = {
		BT_DELETE_VERSION, BT_DELETE_COLUMN, BT_DELETE_ROW,
	};
	static char values[100][4097], again[100][4097];
	struct bt_tablet_info *info;
	struct tstore t;
	char row[16];
	size_t count;
	uint64_t bytes;
	bool reads_ok = true;

	/* Random letters, a value each: blocks do not compress them. */
	for (int i = 0; i < 100; i++)
		for (size_t j = 0; j < 4096; j++) {
			values[i][j] = (char)('a' + rand() % 26);
			again[i][j] = (char)('a' + rand() % 26);
		}
	tstore_fault(&t, NULL);
	must(make_table(t.s, "d", families));
	for (int i = 0; i < 100; i++) {
		snprintf(row, sizeof(row), "h%03d", i);
		must(put_str(t.s, "d", row, "a", "q", 10, values[i]));
		if (i < 80)
			must(del_str(t.s, "d", row, kinds[i % 3], "a", "q",
			    10));
		else
			must(put_str(t.s, "d", row, "a", "q", 10, again[i]));
	}
	must(bt_store_flush(t.s));
	must(bt_table_tablets(t.s, "d", &info, &count));
	bytes = info[0].sstable_bytes;
	bt_tablets_free(info);
	ok(bytes > 20 * 4096 && bytes < 24 * 4096, "the flush wrote the 20 "
	    "live values and the markers: %" PRIu64 " bytes (all 120 values: "
	    "491,520)", bytes);
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < 100; i++) {
			char *got;

			snprintf(row, sizeof(row), "h%03d", i);
			got = newest_text(t.s, "d", row, "a", "q");
			if (i < 80 ? strcmp(got, "NOTFOUND") != 0 :
			    strncmp(got, again[i], 4096) != 0 ||
			    strcmp(got + 4096, "@10") != 0) {
				diag("row %s: %.20s", row, got);
				reads_ok = false;
			}
			free(got);
		}
		ok(reads_ok, "%s: the deleted rows read nothing, the others "
		    "their new value", pass == 0 ? "flushed" : "reopened");
		if (pass == 0)
			is_int(tstore_reopen(&t), 0, "clean close");
	}
	tstore_destroy(&t);
}

int
main(void)
{
	int stage;

	for (stage = 0; stage < 3; stage++)
		test_stage(stage);
	test_replayed();
	test_maxversions();
	test_newest_past_markers();
	test_flush_leaves_out_hidden();
	return tap_done();
}
