/*
 * test_api_usage.c - per-family accounting (bt_table_usage(),
 * docs/design.md section 3, "Accounting") through the public API.
 *
 * A table with families a (maxversions=1) and b in the default locality
 * group and c in group g2, written with known volumes of incompressible
 * values.  Proves: before a flush every family's bytes are in memory (in
 * proportion to what was written) and none on disk, with entries and
 * value_bytes exact; after the flush none in memory, and each group's
 * file split between its families exactly (the families' disk bytes add
 * up to the group's, in proportion to what each wrote); a second round
 * of versions doubles a's stored values until a major compaction drops
 * the condemned ones; a deleted family leaves the schema's figures at
 * once and its bytes as the group's other_bytes until a major
 * compaction; row deletes, in memory or flushed, are nobody's; the text form
 * (bt_table_describe_usage()) carries the same figures.  After a split
 * the two tablets share their parent's file, counted once; once one of
 * them has compacted its rows into a file of its own, the parent counts
 * for the other's rows only (within a block at the boundary), the rest
 * of it as other_bytes, rather than the sibling's cells twice.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/tabletfs.h"
#include "api_util.h"

#define A_CELLS		100
#define A_VALUE		1000
#define B_CELLS		50
#define B_VALUE		400
#define C_CELLS		20
#define C_VALUE		3000
/* The key of each cell: esc("rowNNNN") esc(family) esc("q"), the
 * timestamp and the trailer (src/tablet/ikey.h): 9 + 3 + 3 + 8 + 8. */
#define KEY_BYTES	31

static uint64_t rng = 0x9e3779b97f4a7c15ull;

/* n bytes that Snappy cannot shrink. */
static void
random_bytes(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)tap_rand(&rng);
}

/* Write cells rows of one value_size value to family, one column each,
 * at timestamp ts. */
static void
write_family(struct bt_store *s, const char *family, int cells,
    size_t value_size, int64_t ts)
{
	uint8_t *value = xmalloc(value_size);
	char row[32];

	for (int i = 0; i < cells; i++) {
		snprintf(row, sizeof(row), "row%04d", i);
		random_bytes(value, value_size);
		must(put_cell(s, "t", bts(row), family, bts("q"), ts,
		    btb(value, value_size)));
	}
	free(value);
}

static const struct bt_family_usage *
family_of(const struct bt_table_usage *u, const char *name)
{
	for (size_t i = 0; i < u->family_count; i++)
		if (strcmp(u->families[i].name, name) == 0)
			return &u->families[i];
	return NULL;
}

static const struct bt_group_usage *
group_of(const struct bt_table_usage *u, const char *name)
{
	for (size_t i = 0; i < u->group_count; i++)
		if (strcmp(u->groups[i].name, name) == 0)
			return &u->groups[i];
	return NULL;
}

static struct bt_table_usage *
usage_get(struct bt_store *s)
{
	struct bt_table_usage *u;

	must(bt_table_usage(s, "t", &u));
	if (family_of(u, "a") == NULL || group_of(u, "default") == NULL ||
	    group_of(u, "g2") == NULL)
		tap_bail("the usage lacks a family or group of the schema");
	return u;
}

/* Whether x / y and p / q agree within 0.1 %: two families' bytes in
 * proportion to the key and value bytes each wrote. */
static bool
proportional(uint64_t x, uint64_t y, uint64_t p, uint64_t q)
{
	double r = ((double)x / (double)y) / ((double)p / (double)q);

	return y > 0 && q > 0 && r > 0.999 && r < 1.001;
}

static void
test_usage(void)
{
	struct bt_family_spec c = { "c", "g2", NULL };
	const struct bt_family_usage *fa, *fb, *fc;
	const struct bt_group_usage *gd, *g2;
	struct bt_table_usage *u;
	struct tstore t;
	char *text, line[256];
	uint64_t disk, a_disk;

	tstore_fault(&t, NULL);
	must(make_table(t.s, "t", (const char *const[]){ "a=maxversions=1",
	    "b", NULL }));
	must(bt_family_create(t.s, "t", &c));
	is_int(bt_table_usage(t.s, "nosuch", &u), -ENOENT,
	    "an unknown table: -ENOENT");

	write_family(t.s, "a", A_CELLS, A_VALUE, 1000);
	write_family(t.s, "b", B_CELLS, B_VALUE, 1000);
	write_family(t.s, "c", C_CELLS, C_VALUE, 1000);

	/* Before a flush: all in memory. */
	u = usage_get(t.s);
	fa = family_of(u, "a");
	fb = family_of(u, "b");
	fc = family_of(u, "c");
	gd = group_of(u, "default");
	g2 = group_of(u, "g2");
	is_int(fa->entries, A_CELLS, "memory: a's entries");
	is_int(fa->value_bytes, A_CELLS * A_VALUE, "memory: a's value bytes");
	is_int(fb->value_bytes, B_CELLS * B_VALUE, "memory: b's value bytes");
	is_int(fc->value_bytes, C_CELLS * C_VALUE, "memory: c's value bytes");
	ok(fa->memory_bytes >= fa->value_bytes &&
	    fb->memory_bytes >= fb->value_bytes &&
	    fc->memory_bytes >= fc->value_bytes,
	    "memory: each family's memory holds at least its values "
	    "(%" PRIu64 ", %" PRIu64 ", %" PRIu64 ")", fa->memory_bytes,
	    fb->memory_bytes, fc->memory_bytes);
	ok(proportional(fa->memory_bytes, fb->memory_bytes,
	    A_CELLS * (KEY_BYTES + A_VALUE), B_CELLS * (KEY_BYTES + B_VALUE)),
	    "memory: a and b in proportion to what each wrote (%" PRIu64
	    " : %" PRIu64 ")", fa->memory_bytes, fb->memory_bytes);
	is_int(fa->disk_bytes + fb->disk_bytes + fc->disk_bytes, 0,
	    "memory: nothing on disk");
	is_int(gd->memory_bytes, fa->memory_bytes + fb->memory_bytes,
	    "memory: the default group's is a's and b's");
	is_int(g2->memory_bytes, fc->memory_bytes, "memory: g2's is c's");
	is_int(u->memory_bytes, gd->memory_bytes + g2->memory_bytes,
	    "memory: the table's is its groups'");
	is_int(u->value_bytes, A_CELLS * A_VALUE + B_CELLS * B_VALUE +
	    C_CELLS * C_VALUE, "memory: the table's value bytes");
	bt_table_usage_free(u);

	/* After the flush: all on disk, each group's file split exactly. */
	must(bt_store_flush(t.s));
	u = usage_get(t.s);
	fa = family_of(u, "a");
	fb = family_of(u, "b");
	fc = family_of(u, "c");
	gd = group_of(u, "default");
	g2 = group_of(u, "g2");
	is_int(u->memory_bytes, 0, "flushed: nothing in memory");
	is_int(gd->files, 1, "flushed: one file in the default group");
	is_int(g2->files, 1, "flushed: one file in g2");
	is_int(fa->disk_bytes + fb->disk_bytes, gd->disk_bytes,
	    "flushed: a's and b's disk bytes are the default group's file");
	is_int(fc->disk_bytes, g2->disk_bytes, "flushed: c's are g2's file");
	is_int(gd->other_bytes + gd->unknown_bytes, 0,
	    "flushed: nothing of the default group is nobody's");
	ok(fa->disk_bytes > fa->value_bytes &&
	    fa->disk_bytes < fa->value_bytes + fa->value_bytes / 10,
	    "flushed: a's disk bytes are its values and a little more "
	    "(%" PRIu64 " for %" PRIu64 ")", fa->disk_bytes, fa->value_bytes);
	ok(proportional(fa->disk_bytes, fb->disk_bytes,
	    A_CELLS * (KEY_BYTES + A_VALUE), B_CELLS * (KEY_BYTES + B_VALUE)),
	    "flushed: a and b split the file in proportion (%" PRIu64
	    " : %" PRIu64 ")", fa->disk_bytes, fb->disk_bytes);
	is_int(fa->entries, A_CELLS, "flushed: a's entries as before");
	is_int(fc->value_bytes, C_CELLS * C_VALUE,
	    "flushed: c's value bytes as before");
	is_int(u->disk_bytes, gd->disk_bytes + g2->disk_bytes,
	    "flushed: the table's disk bytes are its groups'");
	bt_table_usage_free(u);

	/* A second version of every a cell: stored twice until a major
	 * compaction drops the one maxversions=1 condemns. */
	write_family(t.s, "a", A_CELLS, A_VALUE, 2000);
	must(bt_store_flush(t.s));
	u = usage_get(t.s);
	fa = family_of(u, "a");
	is_int(group_of(u, "default")->files, 2,
	    "second round: two files in the default group");
	is_int(fa->value_bytes, 2 * A_CELLS * A_VALUE,
	    "second round: a's values stored twice");
	bt_table_usage_free(u);
	must(bt_store_compact(t.s, "t", true));
	u = usage_get(t.s);
	fa = family_of(u, "a");
	fb = family_of(u, "b");
	gd = group_of(u, "default");
	is_int(gd->files, 1, "major compaction: one file again");
	is_int(fa->value_bytes, A_CELLS * A_VALUE,
	    "major compaction: a's condemned versions dropped");
	is_int(fa->entries, A_CELLS, "major compaction: a's entries");
	is_int(fb->value_bytes, B_CELLS * B_VALUE,
	    "major compaction: b's values kept");
	is_int(fa->disk_bytes + fb->disk_bytes, gd->disk_bytes,
	    "major compaction: a and b split the new file");
	bt_table_usage_free(u);

	/* A deleted family: gone from the figures, its bytes nobody's
	 * until a major compaction drops them. */
	must(bt_family_delete(t.s, "t", "b"));
	u = usage_get(t.s);
	ok(family_of(u, "b") == NULL, "deleted family: not in the usage");
	gd = group_of(u, "default");
	fa = family_of(u, "a");
	ok(gd->other_bytes > B_CELLS * B_VALUE, "deleted family: its bytes "
	    "are the group's other_bytes (%" PRIu64 ")", gd->other_bytes);
	is_int(fa->disk_bytes + gd->other_bytes, gd->disk_bytes,
	    "deleted family: a's and the other bytes make the file");
	bt_table_usage_free(u);
	must(bt_store_compact(t.s, "t", true));
	u = usage_get(t.s);
	gd = group_of(u, "default");
	fa = family_of(u, "a");
	is_int(gd->other_bytes, 0,
	    "deleted family: a major compaction drops its bytes");
	is_int(fa->disk_bytes, gd->disk_bytes,
	    "deleted family: the group's file is a's alone");
	is_int(u->value_bytes, A_CELLS * A_VALUE + C_CELLS * C_VALUE,
	    "deleted family: the table's values are a's and c's");
	bt_table_usage_free(u);

	/* Row deletes in memory belong to no family (enough of them to
	 * take more than the memtable's first arena block). */
	for (int i = 0; i < 4000; i++) {
		char row[32];

		snprintf(row, sizeof(row), "gone%04d", i);
		must(del_str(t.s, "t", row, BT_DELETE_ROW, NULL, NULL, 0));
	}
	u = usage_get(t.s);
	fa = family_of(u, "a");
	fc = family_of(u, "c");
	ok(u->memory_bytes > 0 && fa->memory_bytes + fc->memory_bytes == 0,
	    "row delete: in memory (%" PRIu64 "), no family's",
	    u->memory_bytes);
	disk = u->disk_bytes;
	a_disk = fa->disk_bytes;
	bt_table_usage_free(u);

	/* Flushed, they make a file whose first label is empty (no
	 * family), counted as the group's other bytes. */
	must(bt_store_flush(t.s));
	u = usage_get(t.s);
	fa = family_of(u, "a");
	ok(u->disk_bytes > disk, "row delete flushed: on disk (%" PRIu64
	    " > %" PRIu64 ")", u->disk_bytes, disk);
	is_int(fa->disk_bytes, a_disk, "row delete flushed: no family's");
	bt_table_usage_free(u);

	/* The text carries the same figures. */
	u = usage_get(t.s);
	fa = family_of(u, "a");
	must(bt_table_describe_usage(t.s, "t", &text));
	snprintf(line, sizeof(line), "family a group=default disk_bytes=%"
	    PRIu64 " memory_bytes=%" PRIu64 " entries=%" PRIu64
	    " value_bytes=%" PRIu64 "\n", fa->disk_bytes, fa->memory_bytes,
	    fa->entries, fa->value_bytes);
	ok(strncmp(text, line, strlen(line)) == 0,
	    "text: the first line is a's");
	snprintf(line, sizeof(line), "\ntable t files=%" PRIu64
	    " disk_bytes=%" PRIu64 " memory_bytes=%" PRIu64 " entries=%"
	    PRIu64 " value_bytes=%" PRIu64 "\n", u->files, u->disk_bytes,
	    u->memory_bytes, u->entries, u->value_bytes);
	ok(strstr(text, line) != NULL, "text: the table's line is last");
	if (strstr(text, line) == NULL)
		diag_text("text", text);
	free(text);
	bt_table_usage_free(u);
	tstore_destroy(&t);
}

/* Whether, within 20 s, each of the table's two tablets names one file:
 * the first has merged the parent's file with its own, the second still
 * names the parent's. */
static bool
wait_one_file_each(struct bt_store *s)
{
	struct timespec nap = { 0, 20 * 1000 * 1000 };
	struct bt_tablet_info *tablets;
	size_t count;
	bool done = false;

	for (int i = 0; i < 1000 && !done; i++) {
		must(bt_table_tablets(s, "t", &tablets, &count));
		done = count == 2 && tablets[0].sstables == 1 &&
		    tablets[1].sstables == 1;
		bt_tablets_free(tablets);
		if (!done)
			nanosleep(&nap, NULL);
	}
	return done;
}

#define S_CELLS		200
#define S_VALUE		1000
#define S_BLOCK		4096
#define S_NEW		20	/* cells of each later file */

static void
test_split_shared(void)
{
	struct bt_group_spec g = { "default", S_BLOCK, 0, -1, -1 };
	const struct bt_family_usage *fb;
	const struct bt_group_usage *gd;
	struct bt_table_usage *u;
	struct tstore t;
	uint8_t value[S_VALUE];
	uint64_t want, slack;

	tstore_fault(&t, NULL);
	must(make_table(t.s, "t", (const char *const[]){ "b", NULL }));
	must(bt_group_set(t.s, "t", &g));
	write_family(t.s, "b", S_CELLS, S_VALUE, 1000);
	must(bt_store_flush(t.s));
	must(bt_table_split(t.s, "t", bts("row0100")));
	must(bt_table_usage(t.s, "t", &u));
	fb = family_of(u, "b");
	gd = group_of(u, "default");
	is_int(u->files, 1, "split: both tablets share one file");
	is_int(fb->value_bytes, S_CELLS * S_VALUE,
	    "split: the shared file counted once, whole");
	is_int(gd->other_bytes, 0, "split: none of it is other bytes");
	bt_table_usage_free(u);

	/* Three more files in the first tablet, together more than a
	 * quarter of the parent's: with it, four, which the first tablet
	 * merges whole (TABLET_MERGE_THRESHOLD, COMPACT_SIZE_RATIO). */
	for (int f = 0; f < 3; f++) {
		for (int i = 0; i < S_NEW; i++) {
			char row[32];

			snprintf(row, sizeof(row), "row%04d", i);
			random_bytes(value, sizeof(value));
			must(put_cell(t.s, "t", bts(row), "b", bts("q2"),
			    2000 + f, btb(value, sizeof(value))));
		}
		must(bt_store_flush(t.s));
	}
	if (!ok(wait_one_file_each(t.s),
	    "the first tablet merged its files alone")) {
		tstore_destroy(&t);
		return;
	}
	must(bt_table_usage(t.s, "t", &u));
	fb = family_of(u, "b");
	gd = group_of(u, "default");
	want = (S_CELLS + 3 * S_NEW) * S_VALUE;
	/* A block on each side of the boundary may count twice or not. */
	slack = 2 * (S_BLOCK + S_VALUE);
	is_int(u->files, 2, "merged: the first tablet's file and the parent");
	ok(fb->value_bytes + slack >= want && fb->value_bytes <= want + slack,
	    "merged: b's value bytes are its cells' once (%" PRIu64
	    ", want %" PRIu64 " within %" PRIu64 ")", fb->value_bytes, want,
	    slack);
	ok(fb->entries + slack / S_VALUE >= S_CELLS + 3 * S_NEW &&
	    fb->entries <= S_CELLS + 3 * S_NEW + slack / S_VALUE,
	    "merged: b's entries are its cells' once (%" PRIu64 ")",
	    fb->entries);
	ok(gd->other_bytes > 0,
	    "merged: the parent's rows of the first tablet are other bytes "
	    "(%" PRIu64 ")", gd->other_bytes);
	is_int(fb->disk_bytes + gd->other_bytes, gd->disk_bytes,
	    "merged: b's and the other bytes add up to the files");
	bt_table_usage_free(u);
	tstore_destroy(&t);
}

int
main(void)
{
	test_usage();
	test_split_shared();
	return tap_done();
}
