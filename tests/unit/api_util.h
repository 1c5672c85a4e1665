/*
 * api_util.h - helpers shared by the acceptance tests of the public API
 * (tests/unit/test_api_*.c): open a store in a fresh in-memory fault env or
 * in a mkdtemp directory, write and read cells, and render rows as text so
 * that a mismatch prints both sides.
 *
 * A rendered cell is one line "family:qualifier@ts=value"; bytes outside
 * printable ASCII, and '\', are written \xNN.  A rendered scan puts
 * "[row]" before each row's cells.
 */
#ifndef TABLETFS_TESTS_API_UTIL_H
#define TABLETFS_TESTS_API_UTIL_H

#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/tabletfs.h"
#include "util/env.h"
#include "tap.h"

/* ---- A growing text buffer ---- */

struct sbuf {
	char *p;
	size_t n;
	size_t cap;
};

void sbuf_add(struct sbuf *b, const void *p, size_t n);

void sbuf_printf(struct sbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

void sbuf_escaped(struct sbuf *b, const void *data, size_t n);

/* The text, never NULL; the caller frees it. */
char *sbuf_take(struct sbuf *b);

void sbuf_release(struct sbuf *b);

/* diag() a multi-line text, each line indented. */
void diag_text(const char *label, const char *text);

/* ok() comparing two strings, printing both when they differ. */
#define is_str(got, want, ...) do {					\
	const char *is_g_ = (got), *is_w_ = (want);			\
	if (!ok(strcmp(is_g_, is_w_) == 0, __VA_ARGS__)) {		\
		diag_text("got", is_g_);				\
		diag_text("want", is_w_);				\
	}								\
} while (0)

/* ---- Bytes ---- */

struct bt_bytes bts(const char *s);

struct bt_bytes btb(const void *p, size_t n);

bool bytes_eq(struct bt_bytes a, struct bt_bytes b);

void *xmalloc(size_t n);

/* ---- Stores ---- */

struct tstore {
	struct env *env;	/* owned; NULL for the local filesystem */
	struct bt_store *s;
	struct bt_options opts;
	char path[300];
	char dir[256];		/* mkdtemp directory ("" in memory) */
};

/* Create and open a store in a fresh in-memory fault env. */
void tstore_fault(struct tstore *t, const struct bt_options *opts);

/* Create and open a store on the local filesystem under a mkdtemp dir. */
void tstore_posix(struct tstore *t, const struct bt_options *opts);

/* Close (result returned) and open again; bails out if the open fails. */
int tstore_reopen(struct tstore *t);

/*
 * Power loss now, with the store open (a store in the fault env): every
 * append, sync, create and rename fails while the store closes (so that
 * the close only frees its memory), the env loses what was not synced,
 * and its faults are cleared.  t->s is NULL after.
 */
void tstore_crash(struct tstore *t);

/* tstore_crash(), then open the store again: the open's result (t->s is
 * NULL when it failed). */
int tstore_crash_reopen(struct tstore *t);

/* Close the store, free the env, remove the directory. */
void tstore_destroy(struct tstore *t);

/*
 * For a test that needs what only an embedded store has (its env's clock,
 * faults or files): true, after a diagnostic naming why and
 * tstore_destroy(), when t is a cell (TABLETFS_TEST_CELL); the test then
 * returns without its checks.
 */
bool tstore_cell_skip(struct tstore *t, const char *why);

/* ---- Writing ---- */

int put_cell(struct bt_store *s, const char *table, struct bt_bytes row,
    const char *family, struct bt_bytes qualifier, int64_t ts,
    struct bt_bytes value);

/* put_cell() with C strings. */
int put_str(struct bt_store *s, const char *table, const char *row,
    const char *family, const char *qualifier, int64_t ts, const char *value);

/* One delete; family and qualifier are ignored where the kind has none. */
int del_cell(struct bt_store *s, const char *table, struct bt_bytes row,
    enum bt_mutation_kind kind, const char *family, struct bt_bytes qualifier,
    int64_t ts);

int del_str(struct bt_store *s, const char *table, const char *row,
    enum bt_mutation_kind kind, const char *family, const char *qualifier,
    int64_t ts);

/* ---- Reading ---- */

void render_cells(struct sbuf *b, const struct bt_row *r, bool keys_only);

/*
 * Read a row and render its cells; "NOTFOUND" for BT_NOTFOUND,
 * "ERROR(rc)" for anything else.  The caller frees the text.
 */
char *read_text(struct bt_store *s, const char *table, struct bt_bytes row,
    const struct bt_read_options *ro);

char *read_text_str(struct bt_store *s, const char *table, const char *row,
    const struct bt_read_options *ro);

/*
 * Scan and append to b "[row]\n" for each row, then, with cells, the
 * row's cells ("EMPTY ROW" for one without any): 0 at the scan's end, or
 * the error that stopped it, the rows before it appended (-EPROTO for a
 * row that did not come with a success).
 */
int scan_render(struct bt_store *s, const char *table,
    const struct bt_scan_options *so, bool cells, struct sbuf *b);

/* The rows a scan returns with their cells. */
char *scan_text(struct bt_store *s, const char *table,
    const struct bt_scan_options *so);

/* The row keys a scan returns, one "[row]" line each. */
char *scan_keys(struct bt_store *s, const char *table,
    const struct bt_scan_options *so);

/*
 * The newest visible value of one column: 0 with *val (malloc'd,
 * NUL-terminated, free()) and *ts, BT_NOTFOUND, or an error.
 */
int get_newest(struct bt_store *s, const char *table, struct bt_bytes row,
    const char *family, struct bt_bytes qualifier, char **val, size_t *len,
    int64_t *ts);

/* get_newest() rendered: "VALUE@TS", "NOTFOUND" or "ERROR(rc)". */
char *newest_text(struct bt_store *s, const char *table, const char *row,
    const char *family, const char *qualifier);

/* is_str() on a malloc'd text, which it frees. */
#define is_text(got, want, ...) do {					\
	char *it_g_ = (got);						\
	is_str(it_g_, (want), __VA_ARGS__);				\
	free(it_g_);							\
} while (0)

/* Bail out when a set-up step fails. */
#define must(expr) do {							\
	int must_rc_ = (expr);						\
	if (must_rc_ != 0) {						\
		diag("%s:%d: %s = %d (%s; %s)", __FILE__, __LINE__,	\
		    #expr, must_rc_, bt_strerror(must_rc_),		\
		    bt_error_detail());					\
		tap_bail("set-up step failed");				\
	}								\
} while (0)

/* Create a table whose families are given as "name" or "name=policy"
 * strings, NULL-terminated. */
int make_table(struct bt_store *s, const char *table, const char *const *fams);

#endif
