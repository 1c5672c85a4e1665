/*
 * test_api_damaged.c - a damaged file does not keep the store from opening
 * (issue 8), through the public API with the in-memory fault env.
 *
 * SSTables: table t has two tablets (split at "m"), table u one.  One byte
 * of the footer, the index block or the filter block of the SSTable of t's
 * first tablet is flipped, or the file is cut short, or it is missing.
 * Each time: the store opens; every read of that tablet's rows fails with
 * BT_ECHECKSUM/BT_ECORRUPT naming the file (never wrong bytes, never "not
 * found"); t's other tablet and table u read back exactly; a scan over the
 * damaged range fails and one over the other tablet does not; writes to the
 * damaged tablet work, are flushed, and a major compaction neither deletes
 * the damaged file nor loses its rows; check names the file.  Restoring the
 * file and reopening serves every row, those written meanwhile included.
 * With two locality groups, a damaged file of one fails only the reads
 * that need that group.  On the local filesystem, where SSTables are read
 * through a mapping, a file cut short while the store has it open fails
 * the reads of the rows cut off (no SIGBUS, never wrong bytes), serves the
 * others, and serves all again once restored and reopened.
 *
 * Log: a record in the middle of segment 1 of 2 is damaged.  The store
 * opens; every other record's mutation is there, the damaged one's is not;
 * the segment is in lost/, and check names it with the damaged offset and
 * byte count until it is removed; with a full disk at recovery the
 * segment stays in log/ until the close moves it to lost/.  A torn tail
 * still opens silently.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/tabletfs.h"
#include "log/log.h"
#include "util/coding.h"
#include "util/env.h"
#include "util/error.h"
#include "api_util.h"

#define ROWS 40
#define PAD "--------------------------------------------------------------"

/* ---- Files in the fault env ---- */

/* The whole content of path, malloc'd; *size its length. */
static uint8_t *
file_read(struct env *env, const char *path, uint64_t *size)
{
	struct env_file *f;
	uint8_t *p;

	if (env_file_open(env, path, ENV_READ, &f) != 0 ||
	    env_file_size(f, size) != 0)
		tap_bail("cannot open a store file");
	p = xmalloc(*size);
	if (*size > 0 && env_file_read_exact(f, 0, p, *size) != 0)
		tap_bail("cannot read a store file");
	env_file_close(f);
	return p;
}

/* Replace path by size bytes of p, synced. */
static void
file_write(struct env *env, const char *path, const uint8_t *p,
    uint64_t size)
{
	struct env_file *f;

	env_path_remove(env, path);
	if (env_file_open(env, path, ENV_CREATE, &f) != 0 ||
	    env_file_append(f, p, size) != 0 || env_file_sync(f) != 0 ||
	    env_file_close(f) != 0)
		tap_bail("cannot write a store file");
}

struct find_ctx {
	struct env *env;
	const char *needle;
	char path[256];
	int found;
};

static int
find_sst(void *arg, const char *name)
{
	struct find_ctx *c = arg;
	char path[256];
	uint64_t size;
	uint8_t *p;
	size_t n = strlen(c->needle);

	if (strlen(name) < 4 || strcmp(name + strlen(name) - 4, ".sst") != 0)
		return 0;
	snprintf(path, sizeof(path), "/store/sst/%s", name);
	p = file_read(c->env, path, &size);
	for (uint64_t i = 0; i + n <= size; i++)
		if (memcmp(p + i, c->needle, n) == 0) {
			snprintf(c->path, sizeof(c->path), "%s", path);
			c->found++;
			break;
		}
	free(p);
	return 0;
}

/* The one SSTable holding needle (raw values make it findable). */
static void
sst_holding(struct env *env, const char *needle, char *path, size_t size)
{
	struct find_ctx c = { env, needle, "", 0 };

	env_dir_list(env, "/store/sst", find_sst, &c);
	if (c.found != 1) {
		diag("%d SSTables hold \"%s\"", c.found, needle);
		tap_bail("cannot find the SSTable to damage");
	}
	snprintf(path, size, "%s", c.path);
}

/* ---- The store ---- */

static const char *
row_name(char *buf, size_t size, char tablet, int i)
{
	snprintf(buf, size, "%c%03d", tablet, i);
	return buf;
}

static void
row_value(char *buf, size_t size, const char *table, const char *row)
{
	snprintf(buf, size, "%s-value-of-%s-%s", table, row, PAD);
}

/*
 * Read every row "<tablet>000".."<tablet>NNN" of table: count those read
 * exactly (good), those failing with a checksum/corruption error whose
 * detail names file (errors), and anything else (wrong).
 */
static void
read_rows(struct bt_store *s, const char *table, char tablet, int n,
    const char *file, long *good, long *errors, long *wrong)
{
	char row[16], val[160];

	*good = *errors = *wrong = 0;
	for (int i = 0; i < n; i++) {
		struct bt_row *r = NULL;
		int rc;

		row_name(row, sizeof(row), tablet, i);
		row_value(val, sizeof(val), table, row);
		bt_error_clear();
		rc = bt_read_row(s, table, bts(row), NULL, &r);
		if (rc == BT_ECHECKSUM || rc == BT_ECORRUPT) {
			if (file != NULL && strstr(bt_error_detail(), file))
				(*errors)++;
			else {
				diag("%s/%s: %s (%s)", table, row,
				    bt_strerror(rc), bt_error_detail());
				(*wrong)++;
			}
		} else if (rc == 0 && r->cell_count == 1 &&
		    bytes_eq(r->cells[0].value, bts(val))) {
			(*good)++;
		} else {
			(*wrong)++;
		}
		if (rc == 0)
			bt_row_free(r);
	}
}

struct check_lines {
	struct sbuf text;
	int lines;
};

static void
check_line(void *arg, const char *problem)
{
	struct check_lines *c = arg;

	sbuf_printf(&c->text, "%s\n", problem);
	c->lines++;
}

/* Run check: its result, with the report lines in *text (free it). */
static int
run_check(struct bt_store *s, char **text)
{
	struct check_lines c = { { 0 }, 0 };
	int rc = bt_store_check(s, check_line, NULL, &c, NULL, NULL);

	*text = sbuf_take(&c.text);
	return rc;
}

static void
store_fill(struct tstore *t)
{
	static const char *const fams[] = { "f", NULL };
	struct bt_family_spec f = { "f", NULL, NULL };
	struct bt_group_spec raw = {
		.name = "default", .compress = 0, .bloom = 1, .in_memory = -1,
	};
	struct bt_bytes split = bts("m");
	char row[16], val[160];

	tstore_fault(t, NULL);
	must(bt_table_create(t->s, "t", &f, 1, &split, 1, 0));
	must(bt_group_set(t->s, "t", &raw));
	must(make_table(t->s, "u", fams));
	must(bt_group_set(t->s, "u", &raw));
	for (int i = 0; i < ROWS; i++) {
		for (const char *tb = "ap"; *tb; tb++) {
			row_name(row, sizeof(row), *tb, i);
			row_value(val, sizeof(val), "t", row);
			must(put_str(t->s, "t", row, "f", "q", 1, val));
		}
		row_name(row, sizeof(row), 'a', i);
		row_value(val, sizeof(val), "u", row);
		must(put_str(t->s, "u", row, "f", "q", 1, val));
	}
	must(bt_store_flush(t->s));
	must(bt_store_compact(t->s, NULL, true));
}

/* How the SSTable of t's first tablet is damaged. */
enum damage {
	DAMAGE_FOOTER,
	DAMAGE_INDEX,
	DAMAGE_FILTER,
	DAMAGE_TRUNCATED,
	DAMAGE_MISSING,
};

static const char *const damage_names[] = {
	"footer", "index block", "filter block", "truncated", "missing",
};

/* Damage the file as kind says, keeping its content in *saved. */
static void
damage_file(struct env *env, const char *path, enum damage kind,
    uint8_t **saved, uint64_t *size)
{
	uint64_t off = 0;

	*saved = file_read(env, path, size);
	switch (kind) {
	case DAMAGE_FOOTER:
		off = *size - 32;		/* entry_count */
		break;
	case DAMAGE_INDEX:
		off = get_fixed64(*saved + *size - 64) + 2;
		break;
	case DAMAGE_FILTER:
		if (get_fixed64(*saved + *size - 40) == 0)
			tap_bail("the SSTable has no filter");
		off = get_fixed64(*saved + *size - 48) + 2;
		break;
	case DAMAGE_TRUNCATED:
		file_write(env, path, *saved, *size / 2);
		return;
	case DAMAGE_MISSING:
		if (env_path_remove(env, path) != 0)
			tap_bail("cannot remove the SSTable");
		return;
	}
	if (env_fault_flip_byte(env, path, off, 0x20) != 0)
		tap_bail("cannot flip a byte");
}

static bool
scan_fails(struct bt_store *s, const char *table, const char *start,
    const char *end, const char *file)
{
	struct bt_scan_options so = { 0 };
	struct bt_scan *sc = NULL;
	struct bt_row *r;
	int rc;

	so.start = bts(start);
	so.end = bts(end);
	bt_error_clear();
	if ((rc = bt_scan_open(s, table, &so, &sc)) == 0) {
		while ((rc = bt_scan_next(sc, &r)) == 0)
			bt_row_free(r);
		bt_scan_close(sc);
	}
	return (rc == BT_ECHECKSUM || rc == BT_ECORRUPT) &&
	    strstr(bt_error_detail(), file) != NULL;
}

/* The rendered cell f:q@1=val, in buf. */
static const char *
cell_text(char *buf, const char *val)
{
	snprintf(buf, 200, "f:q@1=%s\n", val);
	return buf;
}

/* 1 if reading t's row fails with an error naming file, else 0. */
static int
read_error(struct bt_store *s, const char *row, const char *file)
{
	struct bt_row *r = NULL;
	int rc;

	bt_error_clear();
	if ((rc = bt_read_row(s, "t", bts(row), NULL, &r)) == 0)
		bt_row_free(r);
	return (rc == BT_ECHECKSUM || rc == BT_ECORRUPT) &&
	    strstr(bt_error_detail(), file) != NULL;
}

static void
test_damaged_sstable(enum damage kind)
{
	const char *what = damage_names[kind];
	struct bt_stats st;
	struct tstore t;
	char path[256], file[64], row[16], val[160], want[200], *text, *scan;
	uint8_t *saved;
	uint64_t size;
	long good, errors, wrong;
	int rc;

	store_fill(&t);
	sst_holding(t.env, "t-value-of-a000", path, sizeof(path));
	snprintf(file, sizeof(file), "%s", strrchr(path, '/') + 1);
	is_int(bt_store_close(t.s), 0, "%s: close", what);
	t.s = NULL;
	damage_file(t.env, path, kind, &saved, &size);

	rc = bt_store_open(t.path, &t.opts, &t.s);
	is_int(rc, 0, "%s: the store opens with a damaged SSTable (%s)", what,
	    rc != 0 ? bt_error_detail() : "");
	if (rc != 0) {
		t.s = NULL;
		free(saved);
		tstore_destroy(&t);
		return;
	}
	bt_store_get_stats(t.s, &st);
	is_int(st.damaged_sstables, 1, "%s: the status counts one damaged "
	    "SSTable", what);
	read_rows(t.s, "t", 'a', ROWS, file, &good, &errors, &wrong);
	ok(errors == ROWS && good == 0 && wrong == 0, "%s: every row of the "
	    "damaged tablet fails with an error naming %s (%ld errors, %ld "
	    "read, %ld wrong)", what, file, errors, good, wrong);
	read_rows(t.s, "t", 'p', ROWS, NULL, &good, &errors, &wrong);
	is_int(good, ROWS, "%s: the table's other tablet reads exactly",
	    what);
	read_rows(t.s, "u", 'a', ROWS, NULL, &good, &errors, &wrong);
	is_int(good, ROWS, "%s: the other table reads exactly", what);
	ok(scan_fails(t.s, "t", "", "", file),
	    "%s: a scan of the table fails, naming the file", what);
	scan = scan_keys(t.s, "t", &(struct bt_scan_options){
	    .start = bts("m") });
	ok(strstr(scan, "ERROR") == NULL && strstr(scan, "[p039]") != NULL,
	    "%s: a scan of the other tablet reads through", what);
	free(scan);

	/* Writes go on; flushes and compactions keep the damaged file. */
	row_value(val, sizeof(val), "t", "a500");
	is_int(put_str(t.s, "t", "a500", "f", "q", 1, val), 0,
	    "%s: a write to the damaged tablet is taken", what);
	row_value(val, sizeof(val), "t", "p500");
	is_int(put_str(t.s, "t", "p500", "f", "q", 1, val), 0,
	    "%s: a write to the other tablet is taken", what);
	is_int(read_error(t.s, "a500", file), 1, "%s: a row in the damaged "
	    "tablet's memtable fails too (the file may hold older versions "
	    "of it)", what);
	is_text(read_text_str(t.s, "t", "p500", NULL), cell_text(want, val),
	    "%s: the other tablet's new row reads", what);
	is_int(bt_store_flush(t.s), 0, "%s: flush", what);
	is_int(bt_store_compact(t.s, NULL, true), 0, "%s: major compaction",
	    what);
	ok(kind == DAMAGE_MISSING || env_path_exists(t.env, path),
	    "%s: the compaction left the damaged file in place", what);
	rc = run_check(t.s, &text);
	ok(rc == BT_ECORRUPT && strstr(text, file) != NULL &&
	    strstr(text, "sst/") != NULL, "%s: check names sst/%s", what,
	    file);
	diag_text("check", text);
	free(text);

	/* Restored from a backup: a reopen serves everything. */
	is_int(bt_store_close(t.s), 0, "%s: close", what);
	t.s = NULL;
	file_write(t.env, path, saved, size);
	free(saved);
	if ((rc = bt_store_open(t.path, &t.opts, &t.s)) != 0) {
		ok(false, "%s: reopen after restore: %s", what,
		    bt_error_detail());
		t.s = NULL;
		tstore_destroy(&t);
		return;
	}
	read_rows(t.s, "t", 'a', ROWS, NULL, &good, &errors, &wrong);
	is_int(good, ROWS, "%s: restored, every row of the tablet reads "
	    "exactly", what);
	bt_store_get_stats(t.s, &st);
	is_int(st.damaged_sstables, 0, "%s: restored, no damaged SSTable",
	    what);
	row_value(val, sizeof(val), "t", row_name(row, sizeof(row), 'a',
	    500));
	is_text(read_text_str(t.s, "t", "a500", NULL), cell_text(want, val),
	    "%s: the row written while the file was damaged survived its "
	    "flush and compaction", what);
	rc = run_check(t.s, &text);
	is_int(rc, 0, "%s: restored, check passes", what);
	if (rc != 0)
		diag_text("check", text);
	free(text);
	is_int(bt_store_compact(t.s, NULL, true), 0, "%s: restored, major "
	    "compaction", what);
	read_rows(t.s, "t", 'a', ROWS, NULL, &good, &errors, &wrong);
	is_int(good, ROWS, "%s: restored and compacted, every row reads",
	    what);
	tstore_destroy(&t);
}

/*
 * Locality groups: a damaged file of one group fails only the reads that
 * need that group; a read of another group's families is served.
 */
static void
test_damaged_group(void)
{
	struct bt_family_spec fams[] = {
		{ "a", "ga", NULL }, { "b", "gb", NULL },
	};
	struct bt_group_spec raw = {
		.compress = 0, .bloom = -1, .in_memory = -1,
	};
	struct bt_column col_a = { .family = "a" }, col_b = { .family = "b" };
	struct bt_read_options ro_a = { .columns = &col_a, .column_count = 1 };
	struct bt_read_options ro_b = { .columns = &col_b, .column_count = 1 };
	struct tstore t;
	char path[256], file[64], want[1024], *scan;
	int rc;

	tstore_fault(&t, NULL);
	must(bt_table_create(t.s, "g", fams, 2, NULL, 0, 0));
	raw.name = "ga";
	must(bt_group_set(t.s, "g", &raw));
	raw.name = "gb";
	must(bt_group_set(t.s, "g", &raw));
	must(put_str(t.s, "g", "row", "a", "q", 1, "group-a-value"));
	must(put_str(t.s, "g", "row", "b", "q", 1, "group-b-value"));
	must(bt_store_flush(t.s));
	sst_holding(t.env, "group-a-value", path, sizeof(path));
	snprintf(file, sizeof(file), "%s", strrchr(path, '/') + 1);
	is_int(bt_store_close(t.s), 0, "group: close");
	t.s = NULL;
	{
		uint8_t *saved;
		uint64_t size;

		damage_file(t.env, path, DAMAGE_FOOTER, &saved, &size);
		free(saved);
	}
	if ((rc = bt_store_open(t.path, &t.opts, &t.s)) != 0) {
		ok(false, "group: open: %s", bt_error_detail());
		t.s = NULL;
		tstore_destroy(&t);
		return;
	}
	is_text(read_text_str(t.s, "g", "row", &ro_b), "b:q@1=group-b-value\n",
	    "group: a read of the other group's family is served");
	scan = scan_text(t.s, "g", &(struct bt_scan_options){ .read = ro_b });
	is_str(scan, "[row]\nb:q@1=group-b-value\n",
	    "group: so is a scan of it");
	free(scan);
	bt_error_clear();
	rc = bt_read_row(t.s, "g", bts("row"), &ro_a, &(struct bt_row *){ 0 });
	ok(rc == BT_ECHECKSUM && strstr(bt_error_detail(), file) != NULL,
	    "group: a read of the damaged group's family fails naming %s",
	    file);
	snprintf(want, sizeof(want), "%s", bt_error_detail());
	diag("%s", want);
	bt_error_clear();
	rc = bt_read_row(t.s, "g", bts("row"), NULL, &(struct bt_row *){ 0 });
	ok(rc == BT_ECHECKSUM && strstr(bt_error_detail(), file) != NULL,
	    "group: so does a read of the whole row");
	tstore_destroy(&t);
}

/* ---- The commit log ---- */

static int
segment_one(void *arg, const char *name)
{
	uint64_t *n = arg;

	if (strlen(name) == 20 && strcmp(name + 16, ".log") == 0) {
		if (*n != 0)
			tap_bail("more than one log segment");
		*n = strtoull(name, NULL, 10);
	}
	return 0;
}

/*
 * A store whose log holds ten synced mutations (rows r0..r9), rewritten
 * as segment 1 (r0..r4) and segment 2 (r5..r9); the offset and size of
 * record r2 in segment 1 in *off, *len.  Closed.
 */
static void
log_setup(struct tstore *t, uint64_t *off, uint64_t *len)
{
	static const char *const fams[] = { "f", NULL };
	struct bt_options opts = { .sync_always = true };
	struct log_reader *r;
	struct log_writer *w;
	struct slice rec;
	uint64_t seg = 0;
	char path[64], row[8];
	int i = 0;

	tstore_fault(t, &opts);
	must(make_table(t->s, "t", fams));
	must(bt_store_flush(t->s));
	for (i = 0; i < 10; i++) {
		snprintf(row, sizeof(row), "r%d", i);
		must(put_str(t->s, "t", row, "f", "q", 1, row));
	}
	tstore_crash(t);
	env_dir_list(t->env, "/store/log", segment_one, &seg);
	if (seg == 0)
		tap_bail("no log segment");
	log_segment_path(path, sizeof(path), "/store/log", seg);
	must(env_path_rename(t->env, path, "/store/tmp/old.log"));
	must(log_reader_open(t->env, "/store/tmp/old.log", &r));
	must(log_writer_open(t->env, "/store/log", 1, NULL, &w));
	i = 0;
	while (log_reader_next(r, &rec, NULL) == 0) {
		struct log_position pos;

		/* The record's bytes, as the API wrote them. */
		must(log_writer_append(w, rec, true, &pos));
		if (i == 2)
			*off = pos.offset;
		if (i == 3)	/* header, synced field and payload */
			*len = pos.offset - *off;
		if (++i == 5)
			must(log_writer_rotate(w, NULL));
	}
	log_reader_close(r);
	must(log_writer_close(w));
	must(env_path_remove(t->env, "/store/tmp/old.log"));
	must(env_dir_sync(t->env, "/store/log"));
	is_int(i, 10, "log: ten records, five in each of two segments");
}

static char *
rows_present(struct bt_store *s)
{
	struct sbuf b = { 0 };
	char row[8];

	for (int i = 0; i < 10; i++) {
		struct bt_row *r = NULL;
		int rc;

		snprintf(row, sizeof(row), "r%d", i);
		rc = bt_read_row(s, "t", bts(row), NULL, &r);
		if (rc == 0) {
			sbuf_printf(&b, "%s ", row);
			bt_row_free(r);
		} else if (rc != BT_NOTFOUND) {
			sbuf_printf(&b, "ERROR(%s) ", row);
		}
	}
	return sbuf_take(&b);
}

/* bt_options.notice: keeps the lines, one per line. */
static void
notice_keep(void *arg, const char *line)
{
	sbuf_printf(arg, "%s\n", line);
}

static void
test_log_middle(void)
{
	struct tstore t;
	struct sbuf notices = { 0 };
	uint64_t off = 0, len = 0;
	char want[256], *text;
	int rc;

	log_setup(&t, &off, &len);
	/* A payload byte of record r2: its crc fails, r3 follows. */
	must(env_fault_flip_byte(t.env, "/store/log/0000000000000001.log",
	    off + 12, 0x40));

	/* Read-only: replayed, the segment left in log/, check names it. */
	t.opts.read_only = true;
	rc = bt_store_open(t.path, &t.opts, &t.s);
	is_int(rc, 0, "log: a read-only open skips the damaged record (%s)",
	    rc ? bt_error_detail() : "");
	if (rc == 0) {
		is_text(rows_present(t.s), "r0 r1 r3 r4 r5 r6 r7 r8 r9 ",
		    "log: read-only, every other record's mutation is there");
		rc = run_check(t.s, &text);
		snprintf(want, sizeof(want), "log/0000000000000001.log: "
		    "checksum mismatch in record at offset %" PRIu64, off);
		ok(rc == BT_ECORRUPT && strstr(text, want) != NULL,
		    "log: read-only, check names the segment and offset");
		diag_text("check", text);
		free(text);
		bt_store_close(t.s);
		t.s = NULL;
	}
	ok(env_path_exists(t.env, "/store/log/0000000000000001.log"),
	    "log: read-only, the segment is still in log/");

	t.opts.read_only = false;
	t.opts.notice = notice_keep;
	t.opts.notice_arg = &notices;
	rc = bt_store_open(t.path, &t.opts, &t.s);
	t.opts.notice = NULL;
	is_int(rc, 0, "log: the store opens with a damaged record in the "
	    "middle of the log (%s)", rc ? bt_error_detail() : "");
	if (rc != 0) {
		t.s = NULL;
		tstore_destroy(&t);
		return;
	}
	snprintf(want, sizeof(want), "log/0000000000000001.log: %" PRIu64
	    " damaged bytes at offset %" PRIu64 " skipped at recovery (the "
	    "segment is kept in lost/)\n", len, off);
	text = sbuf_take(&notices);
	is_str(text, want, "log: the store's notice callback gets one line "
	    "naming the segment, the bytes and the offset");
	free(text);
	is_text(rows_present(t.s), "r0 r1 r3 r4 r5 r6 r7 r8 r9 ",
	    "log: every other record's mutation is there, the damaged one's "
	    "is not");
	ok(env_path_exists(t.env, "/store/lost/0000000000000001.log") &&
	    !env_path_exists(t.env, "/store/log/0000000000000001.log") &&
	    !env_path_exists(t.env, "/store/log/0000000000000002.log"),
	    "log: the damaged segment is in lost/, the sound one is gone");
	rc = run_check(t.s, &text);
	snprintf(want, sizeof(want), "lost/0000000000000001.log: %" PRIu64
	    " bytes damaged at offset %" PRIu64 ", skipped at recovery\n",
	    len, off);
	is_int(rc, BT_ECORRUPT, "log: check fails while lost/ holds it");
	is_str(text, want, "log: check names the segment, the offset and the "
	    "bytes skipped");
	free(text);

	/* Power loss right after: lost/ and the replayed rows stay. */
	tstore_crash(&t);
	if ((rc = bt_store_open(t.path, &t.opts, &t.s)) != 0)
		tap_bail("cannot reopen after the crash");
	is_text(rows_present(t.s), "r0 r1 r3 r4 r5 r6 r7 r8 r9 ",
	    "log: after a power loss the rows are still there");
	ok(env_path_exists(t.env, "/store/lost/0000000000000001.log"),
	    "log: after a power loss lost/ still holds the segment");
	must(env_path_remove(t.env, "/store/lost/0000000000000001.log"));
	rc = run_check(t.s, &text);
	is_int(rc, 0, "log: once the user removes it, check passes");
	free(text);
	tstore_destroy(&t);
}

/*
 * A log longer than the memtable budget replays in several flushes; when
 * the disk is full for one of them, the open goes on with that data in
 * memory (and its segments kept), as when the last flush fails.  Every
 * file create of the open is made to fail in turn with ENOSPC: the open
 * either succeeds with every row, or fails on something it cannot do
 * without (the catalog, the new log segment), never on an SSTable.
 */
static void
test_replay_disk_full(void)
{
	static const char *const fams[] = { "f", NULL };
	struct bt_options opts = { .sync_always = true,
	    .memtable_size = 16 << 10 };
	int opened = 0, sst_failures = 0, bad_rows = 0, n;
	char row[16], val[120], *got;

	for (n = 1; n <= 24; n++) {
		struct tstore t;
		int rc;

		tstore_fault(&t, &opts);
		must(make_table(t.s, "t", fams));
		for (int i = 0; i < 400; i++) {
			snprintf(row, sizeof(row), "r%03d", i);
			memset(val, 'a' + i % 26, sizeof(val) - 1);
			val[sizeof(val) - 1] = '\0';
			must(put_str(t.s, "t", row, "f", "q", 1, val));
		}
		tstore_crash(&t);
		env_fault_fail_after(t.env, ENV_FAULT_OPEN, n, -ENOSPC, false);
		rc = bt_store_open(t.path, &t.opts, &t.s);
		env_fault_fail_after(t.env, ENV_FAULT_OPEN, 0, 0, false);
		if (rc != 0) {
			t.s = NULL;
			if (strstr(bt_error_detail(), ".sst") != NULL &&
			    sst_failures++ == 0)
				diag("create %d: %s", n, bt_error_detail());
			tstore_destroy(&t);
			continue;
		}
		opened++;
		for (int i = 0; i < 400; i += 37) {
			snprintf(row, sizeof(row), "r%03d", i);
			memset(val, 'a' + i % 26, sizeof(val) - 1);
			val[sizeof(val) - 1] = '\0';
			got = read_text_str(t.s, "t", row, NULL);
			bad_rows += strncmp(got, "f:q@1=", 6) != 0 ||
			    strncmp(got + 6, val, sizeof(val) - 1) != 0;
			free(got);
		}
		tstore_destroy(&t);
	}
	is_int(sst_failures, 0, "replay on a full disk: no open fails "
	    "because an SSTable cannot be written (%d of 24 opened)", opened);
	is_int(bad_rows, 0, "replay on a full disk: every open store reads "
	    "its rows");
}

/*
 * A damaged segment header, in an earlier segment and in the last one:
 * the store opens with every record replayed (the header is synced when
 * a segment is created, so its damage is never a power loss's tear),
 * both segments are kept in lost/ and check names each at offset 0.
 */
static void
test_log_header(void)
{
	struct tstore t;
	uint64_t off = 0, len = 0;
	char *text;
	int rc;

	log_setup(&t, &off, &len);
	must(env_fault_flip_byte(t.env, "/store/log/0000000000000001.log",
	    3, 0x01));
	must(env_fault_flip_byte(t.env, "/store/log/0000000000000002.log",
	    13, 0x20));
	rc = bt_store_open(t.path, &t.opts, &t.s);
	is_int(rc, 0, "log header: the store opens with damaged segment "
	    "headers (%s)", rc ? bt_error_detail() : "");
	if (rc != 0) {
		t.s = NULL;
		tstore_destroy(&t);
		return;
	}
	is_text(rows_present(t.s), "r0 r1 r2 r3 r4 r5 r6 r7 r8 r9 ",
	    "log header: every record after the damaged headers is replayed");
	ok(env_path_exists(t.env, "/store/lost/0000000000000001.log") &&
	    env_path_exists(t.env, "/store/lost/0000000000000002.log"),
	    "log header: both segments are kept in lost/");
	rc = run_check(t.s, &text);
	is_int(rc, BT_ECORRUPT, "log header: check fails while lost/ holds "
	    "them");
	is_str(text, "lost/0000000000000001.log: 16 bytes damaged at offset "
	    "0, skipped at recovery\nlost/0000000000000002.log: 16 bytes "
	    "damaged at offset 0, skipped at recovery\n", "log header: check "
	    "names each segment's header");
	free(text);
	tstore_destroy(&t);
}

/*
 * A full disk at recovery keeps the replayed segments in log/ (the store
 * opens with the data in memory): the damaged one must not be deleted
 * with the others once the data is flushed, but moved to lost/.
 */
static void
test_log_damaged_disk_full(void)
{
	struct tstore t;
	uint64_t off = 0, len = 0;
	char *text;
	int n, rc = -1;

	log_setup(&t, &off, &len);
	must(env_fault_flip_byte(t.env, "/store/log/0000000000000001.log",
	    off + 12, 0x40));
	/* The first file create of the open that is the flush's fails. */
	for (n = 1; n <= 20; n++) {
		env_fault_fail_after(t.env, ENV_FAULT_OPEN, n, -ENOSPC, false);
		rc = bt_store_open(t.path, &t.opts, &t.s);
		env_fault_fail_after(t.env, ENV_FAULT_OPEN, 0, 0, false);
		if (rc == 0 && env_path_exists(t.env,
		    "/store/log/0000000000000001.log"))
			break;
		if (rc == 0)
			tap_bail("the open never met the full disk");
		t.s = NULL;
	}
	ok(rc == 0, "disk full: the store opens with a damaged segment "
	    "(create %d fails)", n);
	if (rc != 0) {
		t.s = NULL;
		tstore_destroy(&t);
		return;
	}
	is_text(rows_present(t.s), "r0 r1 r3 r4 r5 r6 r7 r8 r9 ",
	    "disk full: every other record's mutation is there");
	ok(!env_path_exists(t.env, "/store/lost/0000000000000001.log"),
	    "disk full: the damaged segment stays in log/ while its data is "
	    "only in memory");
	is_int(bt_store_flush(t.s), 0, "disk full: room again, a flush");
	is_int(bt_store_close(t.s), 0, "disk full: close");
	t.s = NULL;
	ok(env_path_exists(t.env, "/store/lost/0000000000000001.log") &&
	    !env_path_exists(t.env, "/store/log/0000000000000001.log"),
	    "disk full: the close moves the damaged segment to lost/");
	if ((rc = bt_store_open(t.path, &t.opts, &t.s)) != 0)
		tap_bail("cannot reopen");
	is_text(rows_present(t.s), "r0 r1 r3 r4 r5 r6 r7 r8 r9 ",
	    "disk full: reopened, the rows are there");
	rc = run_check(t.s, &text);
	ok(rc == BT_ECORRUPT && strstr(text, "lost/0000000000000001.log: ")
	    != NULL, "disk full: check names the segment in lost/");
	free(text);
	tstore_destroy(&t);
}

static void
test_log_torn_tail(void)
{
	struct tstore t;
	uint64_t off = 0, len = 0, size;
	uint8_t *p;
	char *text;
	int rc;

	log_setup(&t, &off, &len);
	/* Segment 2 loses the second half of its last record. */
	p = file_read(t.env, "/store/log/0000000000000002.log", &size);
	file_write(t.env, "/store/log/0000000000000002.log", p, size - 3);
	free(p);
	rc = bt_store_open(t.path, &t.opts, &t.s);
	is_int(rc, 0, "torn tail: the store opens");
	if (rc != 0) {
		t.s = NULL;
		tstore_destroy(&t);
		return;
	}
	is_text(rows_present(t.s), "r0 r1 r2 r3 r4 r5 r6 r7 r8 ",
	    "torn tail: every record but the torn one is there");
	ok(!env_path_exists(t.env, "/store/lost/0000000000000002.log") &&
	    !env_path_exists(t.env, "/store/log/0000000000000002.log"),
	    "torn tail: the segment is dropped, not kept in lost/");
	rc = run_check(t.s, &text);
	is_int(rc, 0, "torn tail: check passes");
	if (rc != 0)
		diag_text("check", text);
	free(text);
	tstore_destroy(&t);
}

/* ---- An SSTable cut short under an open store (local filesystem) ---- */

#define CUT_ROWS	600

/* The path of the one SSTable of the store at store. */
static void
posix_only_sst(const char *store, char *path, size_t size)
{
	char dir[512];
	struct dirent *d;
	int found = 0;
	DIR *dp;

	snprintf(dir, sizeof(dir), "%s/sst", store);
	if ((dp = opendir(dir)) == NULL)
		tap_bail("opendir sst");
	while ((d = readdir(dp)) != NULL) {
		size_t n = strlen(d->d_name);

		if (n > 4 && strcmp(d->d_name + n - 4, ".sst") == 0) {
			snprintf(path, size, "%s/%s", dir, d->d_name);
			found++;
		}
	}
	closedir(dp);
	if (found != 1)
		tap_bail("want exactly one SSTable");
}

static void
test_posix_cut_open(void)
{
	struct bt_options opts = { .block_cache_size = 1 };
	struct bt_group_spec small = {
		.name = "default", .block_size = 1024, .compress = 0,
		.bloom = 1, .in_memory = -1,
	};
	static const char *const fams[] = { "f", NULL };
	char row[16], val[160], path[600];
	long good, errors, wrong;
	uint8_t *saved;
	struct tstore t;
	FILE *f;
	long size;

	tstore_posix(&t, &opts);
	must(make_table(t.s, "t", fams));
	must(bt_group_set(t.s, "t", &small));
	for (int i = 0; i < CUT_ROWS; i++) {
		row_name(row, sizeof(row), 'a', i);
		row_value(val, sizeof(val), "t", row);
		must(put_str(t.s, "t", row, "f", "q", 1, val));
	}
	must(bt_store_flush(t.s));
	must(bt_store_compact(t.s, NULL, true));
	posix_only_sst(t.path, path, sizeof(path));
	read_rows(t.s, "t", 'a', CUT_ROWS, NULL, &good, &errors, &wrong);
	is_int(good, CUT_ROWS, "posix cut: every row reads before the cut");

	if ((f = fopen(path, "rb")) == NULL || fseek(f, 0, SEEK_END) < 0 ||
	    (size = ftell(f)) <= 0)
		tap_bail("sst size");
	saved = xmalloc((size_t)size);
	if (fseek(f, 0, SEEK_SET) < 0 ||
	    fread(saved, 1, (size_t)size, f) != (size_t)size)
		tap_bail("sst read");
	fclose(f);
	if (truncate(path, size / 2) < 0)
		tap_bail("truncate");
	read_rows(t.s, "t", 'a', CUT_ROWS, path, &good, &errors, &wrong);
	is_int(wrong, 0, "posix cut: no row reads wrong or fails otherwise");
	ok(good > CUT_ROWS / 4 && errors > CUT_ROWS / 4,
	    "posix cut under the open store: rows before the cut read "
	    "(%ld), rows past it fail naming the file (%ld)", good, errors);

	if ((f = fopen(path, "wb")) == NULL ||
	    fwrite(saved, 1, (size_t)size, f) != (size_t)size ||
	    fclose(f) != 0)
		tap_bail("sst restore");
	free(saved);
	is_int(tstore_reopen(&t), 0, "posix cut: restored, reopen");
	read_rows(t.s, "t", 'a', CUT_ROWS, NULL, &good, &errors, &wrong);
	is_int(good, CUT_ROWS, "posix cut: restored, every row reads");
	tstore_destroy(&t);
}

int
main(void)
{
	for (int k = DAMAGE_FOOTER; k <= DAMAGE_MISSING; k++)
		test_damaged_sstable((enum damage)k);
	test_damaged_group();
	test_log_middle();
	test_log_header();
	test_replay_disk_full();
	test_log_damaged_disk_full();
	test_log_torn_tail();
	test_posix_cut_open();
	return tap_done();
}
