/*
 * test_api_gc.c - garbage collection per family through the public API:
 * maxversions hides the oldest version as soon as a newer one is written,
 * maxage hides versions older than the clock minus the age (exactly that
 * age is kept), "or" and "and" combine them, and a family without a policy
 * keeps everything.  Reads agree from the memtable, after a flush, after a
 * major compaction and after a reopen; a time-range read never brings a
 * condemned version back.  The clock is the fault env's.
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

#define NOW	INT64_C(1700000000000000)
#define SEC	INT64_C(1000000)
#define HOUR	(3600 * SEC)

static const char *const families[] = {
	"v3=maxversions=3",
	"age=maxage=1h",
	"vor=maxversions=2 or maxage=1h",
	"vand=maxversions=2 and maxage=1h",
	"keep",
	"tune",
	NULL,
};

/* Put value at ts; a failure is reported once. */
static void
put_ts(struct tstore *t, const char *row, const char *fam, const char *q,
    int64_t ts, const char *value)
{
	int rc = put_str(t->s, "gc", row, fam, q, ts, value);

	if (rc != 0)
		ok(false, "put %s %s:%s@%" PRId64 ": %s", row, fam, q, ts,
		    bt_strerror(rc));
}

/* The rendered cells of one column, given newest first. */
static char *
column_text(const char *fam, const char *q, const int64_t *ts,
    const char *const *vals, size_t n)
{
	struct sbuf b = { 0 };
	size_t i;

	for (i = 0; i < n; i++)
		sbuf_printf(&b, "%s:%s@%" PRId64 "=%s\n", fam, q, ts[i],
		    vals[i]);
	return sbuf_take(&b);
}

static char *
read_family(struct tstore *t, const char *row, const char *fam)
{
	struct bt_column col = { .family = fam };
	struct bt_read_options ro = { .columns = &col, .column_count = 1 };

	return read_text_str(t->s, "gc", row, &ro);
}

static char *
read_column_asof(struct tstore *t, const char *row, const char *fam,
    const char *q, int64_t max_ts)
{
	struct bt_column col = {
		.family = fam, .has_qualifier = true, .qualifier = bts(q),
	};
	struct bt_read_options ro = {
		.columns = &col, .column_count = 1,
		.has_max_ts = true, .max_ts = max_ts,
	};

	return read_text_str(t->s, "gc", row, &ro);
}

static void
write_all(struct tstore *t)
{
	int i;
	char v[16];

	/* maxversions=3: the 4th version hides the oldest at once. */
	put_ts(t, "r", "v3", "q", 1, "one");
	put_ts(t, "r", "v3", "q", 2, "two");
	put_ts(t, "r", "v3", "q", 3, "three");
	is_text(read_family(t, "r", "v3"),
	    "v3:q@3=three\nv3:q@2=two\nv3:q@1=one\n",
	    "maxversions=3: three versions are kept");
	put_ts(t, "r", "v3", "q", 4, "four");
	is_text(read_family(t, "r", "v3"),
	    "v3:q@4=four\nv3:q@3=three\nv3:q@2=two\n",
	    "maxversions=3: a 4th version hides the oldest at once");
	put_ts(t, "r", "v3", "q", 0, "zero");
	is_text(read_family(t, "r", "v3"),
	    "v3:q@4=four\nv3:q@3=three\nv3:q@2=two\n",
	    "maxversions=3: an older 5th version is hidden at once");
	put_ts(t, "r", "v3", "q", 3, "three-b");
	put_ts(t, "r", "v3", "p", 7, "p7");
	put_ts(t, "r", "v3", "p", 9, "p9");

	/* maxage=1h */
	put_ts(t, "r", "age", "q", NOW - 2 * HOUR, "2h");
	put_ts(t, "r", "age", "q", NOW - HOUR - 1, "1h+1us");
	put_ts(t, "r", "age", "q", NOW - HOUR, "1h");
	put_ts(t, "r", "age", "q", NOW - 1, "1us");
	put_ts(t, "r", "age", "q", NOW + 5, "future");
	put_ts(t, "r", "age", "old", NOW - 3 * HOUR, "3h");

	/* maxversions=2 or maxage=1h */
	put_ts(t, "r", "vor", "c1", NOW - 3 * HOUR, "3h");
	put_ts(t, "r", "vor", "c1", NOW - 2 * HOUR, "2h");
	put_ts(t, "r", "vor", "c1", NOW - 10, "10us");
	put_ts(t, "r", "vor", "c1", NOW - 5, "5us");
	put_ts(t, "r", "vor", "c1", NOW - 1, "1us");
	put_ts(t, "r", "vor", "c2", NOW - 3 * HOUR, "3h");
	put_ts(t, "r", "vor", "c2", NOW - 1, "1us");
	put_ts(t, "r", "vor", "c3", NOW - 3 * HOUR, "3h");
	put_ts(t, "r", "vor", "c3", NOW - 2 * HOUR, "2h");

	/* maxversions=2 and maxage=1h */
	put_ts(t, "r", "vand", "c1", NOW - 3 * HOUR, "3h");
	put_ts(t, "r", "vand", "c1", NOW - 2 * HOUR, "2h");
	put_ts(t, "r", "vand", "c1", NOW - 10, "10us");
	put_ts(t, "r", "vand", "c1", NOW - 5, "5us");
	put_ts(t, "r", "vand", "c1", NOW - 1, "1us");
	put_ts(t, "r", "vand", "c2", NOW - 3 * HOUR, "3h");
	put_ts(t, "r", "vand", "c2", NOW - 1, "1us");
	put_ts(t, "r", "vand", "c3", NOW - 3 * HOUR, "3h");
	put_ts(t, "r", "vand", "c3", NOW - 2 * HOUR, "2h");
	put_ts(t, "r", "vand", "c4", NOW - 3 * HOUR, "3h");
	put_ts(t, "r", "vand", "c4", NOW - 2 * HOUR, "2h");
	put_ts(t, "r", "vand", "c4", NOW - 90 * 60 * SEC, "90m");

	/* No policy: all 50 versions, written in a scrambled order. */
	for (i = 0; i < 50; i++) {
		int k = (i * 17) % 50 + 1;

		snprintf(v, sizeof(v), "n%d", k);
		put_ts(t, "r", "keep", "q", k, v);
	}
}

/* late: the clock is NOW + 1 rather than NOW. */
static void
check_all(struct tstore *t, const char *stage, bool late)
{
	static const int64_t v3_ts[] = { 4, 3, 2 };
	static const char *const v3_vals[] = { "four", "three-b", "two" };
	int64_t age_ts[] = { NOW + 5, NOW - 1, NOW - HOUR };
	static const char *const age_vals[] = { "future", "1us", "1h" };
	struct sbuf b = { 0 };
	char *w, *c;
	int i;

	c = column_text("v3", "p", (const int64_t[]){ 9, 7 },
	    (const char *const[]){ "p9", "p7" }, 2);
	w = column_text("v3", "q", v3_ts, v3_vals, 3);
	sbuf_printf(&b, "%s%s", c, w);
	free(c);
	free(w);
	w = sbuf_take(&b);
	is_text(read_family(t, "r", "v3"), w,
	    "maxversions=3 (%s): the newest three of each column", stage);
	free(w);
	is_text(read_column_asof(t, "r", "v3", "q", 1), "NOTFOUND",
	    "maxversions=3 (%s): as of 1, the condemned version stays hidden",
	    stage);
	is_text(read_column_asof(t, "r", "v3", "q", 2), "v3:q@2=two\n",
	    "maxversions=3 (%s): as of 2", stage);

	w = column_text("age", "q", age_ts, age_vals, late ? 2 : 3);
	is_text(read_family(t, "r", "age"), w,
	    late ? "maxage=1h (%s, clock +1us): exactly 1h old is now gone" :
	    "maxage=1h (%s): exactly 1h old is kept, older is hidden", stage);
	free(w);
	is_text(read_column_asof(t, "r", "age", "q", NOW - HOUR - 1),
	    "NOTFOUND",
	    "maxage=1h (%s): as of an hidden version, nothing", stage);

	is_text(read_family(t, "r", "vor"), 
	    "vor:c1@" "1699999999999999" "=1us\n"
	    "vor:c1@" "1699999999999995" "=5us\n"
	    "vor:c2@" "1699999999999999" "=1us\n",
	    "maxversions=2 or maxage=1h (%s)", stage);
	{
		struct sbuf e = { 0 };

		sbuf_printf(&e,
		    "vand:c1@%" PRId64 "=1us\n"
		    "vand:c1@%" PRId64 "=5us\n"
		    "vand:c1@%" PRId64 "=10us\n"
		    "vand:c2@%" PRId64 "=1us\n"
		    "vand:c2@%" PRId64 "=3h\n"
		    "vand:c3@%" PRId64 "=2h\n"
		    "vand:c3@%" PRId64 "=3h\n"
		    "vand:c4@%" PRId64 "=90m\n"
		    "vand:c4@%" PRId64 "=2h\n",
		    NOW - 1, NOW - 5, NOW - 10, NOW - 1, NOW - 3 * HOUR,
		    NOW - 2 * HOUR, NOW - 3 * HOUR, NOW - 90 * 60 * SEC,
		    NOW - 2 * HOUR);
		w = sbuf_take(&e);
		is_text(read_family(t, "r", "vand"), w,
		    "maxversions=2 and maxage=1h (%s)", stage);
		free(w);
	}

	for (i = 50; i >= 1; i--)
		sbuf_printf(&b, "keep:q@%d=n%d\n", i, i);
	w = sbuf_take(&b);
	is_text(read_family(t, "r", "keep"), w,
	    "no policy (%s): all 50 versions", stage);
	free(w);
}

static void
check_stats(struct tstore *t)
{
	struct bt_stats st0, st1, st2;
	int rc;

	bt_store_get_stats(t->s, &st0);
	put_ts(t, "s1", "keep", "q", 1, "x");
	is_int(bt_store_flush(t->s), 0, "stats: flush");
	bt_store_get_stats(t->s, &st1);
	ok(st1.flushes > st0.flushes, "stats: flushes counted (%" PRIu64
	    " -> %" PRIu64 ")", st0.flushes, st1.flushes);
	ok(st1.sstables >= 1, "stats: at least one sstable (%" PRIu64 ")",
	    st1.sstables);
	put_ts(t, "s2", "keep", "q", 1, "y");
	is_int(bt_store_flush(t->s), 0, "stats: flush");
	bt_store_get_stats(t->s, &st1);
	diag("sstables before major compaction: %" PRIu64, st1.sstables);
	rc = bt_store_compact(t->s, NULL, true);
	is_int(rc, 0, "stats: major compaction of every table");
	bt_store_get_stats(t->s, &st2);
	ok(st2.compactions > st0.compactions,
	    "stats: compactions counted (%" PRIu64 " -> %" PRIu64 ")",
	    st0.compactions, st2.compactions);
	is_int(st2.sstables, 1,
	    "stats: one sstable after a major compaction of one tablet");
	ok(st2.mutations >= st1.mutations && st2.last_seq >= st1.last_seq &&
	    st1.last_seq > 0, "stats: mutations and last_seq make sense");
	is_int(bt_store_last_seq(t->s), st2.last_seq,
	    "stats: bt_store_last_seq is the stats' last_seq");
	put_ts(t, "s3", "keep", "q", 1, "z");
	ok(bt_store_last_seq(t->s) > st2.last_seq,
	    "stats: a put advances bt_store_last_seq");
}

static void
test_policies(void)
{
	struct tstore t;

	tstore_fault(&t, NULL);
	if (tstore_cell_skip(&t, "sets the store's clock"))
		return;
	env_fault_set_clock(t.env, (uint64_t)NOW);
	must(make_table(t.s, "gc", families));
	write_all(&t);
	check_all(&t, "memtable", false);
	is_int(bt_store_flush(t.s), 0, "flush");
	check_all(&t, "flushed", false);
	is_int(bt_store_compact(t.s, "gc", true), 0, "major compaction");
	check_all(&t, "compacted", false);
	is_int(tstore_reopen(&t), 0, "clean close");
	check_all(&t, "reopened", false);

	env_fault_set_clock(t.env, (uint64_t)(NOW + 1));
	check_all(&t, "reopened", true);
	is_int(bt_store_compact(t.s, "gc", true), 0, "major compaction");
	check_all(&t, "compacted", true);
	is_int(tstore_reopen(&t), 0, "clean close");
	check_all(&t, "reopened twice", true);
	check_stats(&t);
	check_all(&t, "after the stats compaction", true);
	tstore_destroy(&t);
}

/* Server stamps age with the clock too. */
static void
test_server_stamp_age(void)
{
	struct bt_mutation m = {
		.kind = BT_PUT, .family = "age", .qualifier = { "s", 1 },
		.ts = BT_TS_SERVER, .value = { "srv", 3 },
	};
	struct tstore t;
	int64_t stamp = -1;

	tstore_fault(&t, NULL);
	if (tstore_cell_skip(&t, "sets the store's clock"))
		return;
	env_fault_set_clock(t.env, (uint64_t)NOW);
	must(make_table(t.s, "gc", families));
	is_int(bt_mutate_row(t.s, "gc", bts("srv"), &m, 1, NULL, &stamp), 0,
	    "maxage: a server-stamped put");
	ok(stamp >= NOW, "maxage: stamped with the env clock");
	{
		struct sbuf b = { 0 };
		char *w;

		sbuf_printf(&b, "age:s@%" PRId64 "=srv\n", stamp);
		w = sbuf_take(&b);
		env_fault_set_clock(t.env, (uint64_t)(stamp + HOUR));
		is_text(read_family(&t, "srv", "age"), w,
		    "maxage: a server stamp exactly 1h old is kept");
		free(w);
	}
	is_int(bt_store_flush(t.s), 0, "maxage: flush");
	env_fault_set_clock(t.env, (uint64_t)(stamp + HOUR + 1));
	is_text(read_family(&t, "srv", "age"), "NOTFOUND",
	    "maxage: a server stamp 1h+1us old is hidden");
	tstore_destroy(&t);
}

/* Tightening a policy hides versions at once. */
static void
test_set_gc(void)
{
	struct tstore t;
	int i;
	char v[8];

	tstore_fault(&t, NULL);
	must(make_table(t.s, "gc", families));
	for (i = 1; i <= 5; i++) {
		snprintf(v, sizeof(v), "t%d", i);
		put_ts(&t, "r", "tune", "q", i, v);
	}
	is_int(bt_store_flush(t.s), 0, "setgc: flush");
	put_ts(&t, "r", "tune", "q", 6, "t6");
	is_int(bt_family_set_gc(t.s, "gc", "tune", "maxversions=2"), 0,
	    "setgc: maxversions=2 on a family that kept everything");
	is_text(read_family(&t, "r", "tune"), "tune:q@6=t6\ntune:q@5=t5\n",
	    "setgc: the new policy applies at once");
	is_int(bt_store_compact(t.s, NULL, true), 0, "setgc: major compaction");
	is_text(read_family(&t, "r", "tune"), "tune:q@6=t6\ntune:q@5=t5\n",
	    "setgc: after a major compaction");
	is_int(tstore_reopen(&t), 0, "setgc: clean close");
	is_text(read_family(&t, "r", "tune"), "tune:q@6=t6\ntune:q@5=t5\n",
	    "setgc: after a reopen");
	put_ts(&t, "r", "tune", "q", 7, "t7");
	is_text(read_family(&t, "r", "tune"), "tune:q@7=t7\ntune:q@6=t6\n",
	    "setgc: the policy still applies to new versions after a reopen");
	tstore_destroy(&t);
}

int
main(void)
{
	test_policies();
	test_server_stamp_age();
	test_set_gc();
	return tap_done();
}
