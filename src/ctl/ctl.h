/*
 * ctl.h - what the files of tabletctl share: the invocation, the verb
 * table, error reporting, argument parsing, the escaped form of byte
 * strings, and the progress display.  One command runs in one thread (the
 * progress ticker aside), in tabletctl or in the daemon's control-socket
 * thread, and may exit the process on allocation failure.
 */
#ifndef TABLETFS_CTL_CTL_H
#define TABLETFS_CTL_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "api/tabletfs.h"
#include "util/error.h"

/* Exit statuses, returned by every verb. */
enum {
	CTL_OK = 0,
	CTL_FAIL = 1,		/* reported error, or "not found"/"not applied" */
	CTL_USAGE = 2,		/* bad command line, reported with a usage line */
};

/* What a verb needs before it runs. */
enum ctl_store_mode {
	CTL_STORE_NONE,		/* nothing (help) */
	CTL_STORE_PATH,		/* a store path, not opened (init) */
	CTL_STORE_READ,		/* the store opened read-only */
	CTL_STORE_WRITE,	/* the store opened for writing */
};

struct ctl;

struct ctl_verb {
	const char *name;
	const char *args;	/* the usage text after the verb */
	const char *help;	/* a paragraph for "help VERB" */
	int min_args;
	int max_args;		/* -1: no limit */
	enum ctl_store_mode mode;
	int (*run)(struct ctl *c, int argc, char **argv);
};

/* One invocation. */
struct ctl {
	const char *store_path;
	const struct ctl_verb *verb;
	struct bt_store *store;	/* open for READ and WRITE verbs */
	bool own_store;		/* opened (and closed) by ctl_run */
	bool progress;		/* err is a terminal */
	FILE *in;		/* import T - reads this */
	FILE *out;		/* what a verb prints */
	FILE *err;		/* its errors, usage and progress */
	/* Who asks, for a command over the control socket (ctl_access.c);
	 * NULL when tabletctl opened the store itself: no checks. */
	const struct bt_cred *cred;
	uint32_t store_uid;	/* the store's owner: the daemon's euid */
};

/*
 * Run one command line, argv[0] the verb, on store_path, and return its
 * exit status (CTL_OK, CTL_FAIL, CTL_USAGE) with everything it printed
 * written to out and err.  A store given is the daemon's, already open
 * and left open (a command over the control socket); with NULL, ctl_run
 * opens the store as the verb needs and closes it.  cred (borrowed for
 * the call) is who sent a command over the socket, checked as
 * ctl_access.c says, with this process's euid as the store's owner; NULL
 * checks nothing.  One thread; the store may be used by others at the
 * same time.
 */
int ctl_run(struct bt_store *store, const char *store_path, int argc,
    char **argv, FILE *in, FILE *out, FILE *err, const struct bt_cred *cred);

/* ---- Verbs (cmd_schema.c, cmd_data.c, cmd_bulk.c, cmd_admin.c) ---- */

int cmd_init(struct ctl *c, int argc, char **argv);
int cmd_createtable(struct ctl *c, int argc, char **argv);
int cmd_createfamily(struct ctl *c, int argc, char **argv);
int cmd_setgcpolicy(struct ctl *c, int argc, char **argv);
int cmd_setgroup(struct ctl *c, int argc, char **argv);
int cmd_deletefamily(struct ctl *c, int argc, char **argv);
int cmd_deletetable(struct ctl *c, int argc, char **argv);
int cmd_ls(struct ctl *c, int argc, char **argv);
int cmd_groups(struct ctl *c, int argc, char **argv);
int cmd_set(struct ctl *c, int argc, char **argv);
int cmd_lookup(struct ctl *c, int argc, char **argv);
int cmd_read(struct ctl *c, int argc, char **argv);
int cmd_deleterow(struct ctl *c, int argc, char **argv);
int cmd_deletecolumn(struct ctl *c, int argc, char **argv);
int cmd_increment(struct ctl *c, int argc, char **argv);
int cmd_checkandset(struct ctl *c, int argc, char **argv);
int cmd_count(struct ctl *c, int argc, char **argv);
int cmd_import(struct ctl *c, int argc, char **argv);
int cmd_export(struct ctl *c, int argc, char **argv);
/*
 * One line of an import file of format version (1 or 2, tabletctl(1),
 * EXPORT FORMAT), without its newline, at line[0..len) with line[len]
 * writable: split into ROW, FAMILY, QUALIFIER, TIMESTAMP and VALUE at tabs
 * and decoded in place into a put (family NUL-terminated, the rest
 * pointing into line).  false if it is malformed.
 */
bool import_line_parse(char *line, size_t len, int version,
    struct bt_bytes *row, struct bt_mutation *m);
int cmd_compact(struct ctl *c, int argc, char **argv);
int cmd_status(struct ctl *c, int argc, char **argv);
int cmd_tablets(struct ctl *c, int argc, char **argv);	/* cmd_admin.c */
int cmd_split(struct ctl *c, int argc, char **argv);
int cmd_check(struct ctl *c, int argc, char **argv);

int cmd_chmod(struct ctl *c, int argc, char **argv);	/* cmd_access.c */
int cmd_chown(struct ctl *c, int argc, char **argv);

/* ---- Who may (ctl_access.c); each CTL_OK, or a reported CTL_FAIL ---- */

/* want (BT_ACCESS_READ, _WRITE) on table and, unless NULL, family. */
int ctl_allow(struct ctl *c, const char *table, const char *family,
    int want);
/* Read the families ro selects (ro NULL or selecting no column: all). */
int ctl_allow_read(struct ctl *c, const char *table,
    const struct bt_read_options *ro);
/* Apply the n mutations m (a row delete writes every family). */
int ctl_allow_mutations(struct ctl *c, const char *table,
    const struct bt_mutation *m, size_t n);
/* Change table's schema (NULL: the store's, as compact of every
 * table). */
int ctl_allow_admin(struct ctl *c, const char *table);
/* Change the access of table or its family (chmod, chown). */
int ctl_allow_change(struct ctl *c, const char *table, const char *family,
    const struct bt_access *change);
/*
 * The rule of ctl_allow_change, pure, for the mount too: whether cred
 * may change something whose access is now (a family's: table_now is its
 * table's, else NULL) as change says, the store's owner being store_uid.
 * 0 or -EPERM.
 */
int ctl_access_change_allowed(const struct bt_cred *cred, uint32_t store_uid,
    const struct bt_access *now, const struct bt_access *table_now,
    const struct bt_access *change);

/* ---- Opening and reporting (ctl_run.c) ---- */

/*
 * bt_store_open of c->store_path into c->store, waiting up to 5 s while
 * another process holds the store's lock.  0 or a negative error, with
 * bt_error_detail() set by the last attempt.
 */
int ctl_store_open(struct ctl *c, const struct bt_options *opts);

/*
 * "tabletctl: VERB: [CONTEXT: ]DETAIL (STRERROR)" on c->err, or without
 * the detail when the API left none.  Returns CTL_FAIL.  Clear the detail
 * with bt_error_clear() before the call whose failure is reported.
 */
int ctl_fail(struct ctl *c, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* "tabletctl: VERB: MESSAGE" on c->err.  Returns CTL_FAIL. */
int ctl_error(struct ctl *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The message (if fmt is not NULL) and the verb's usage line on c->err.
 * Returns CTL_USAGE. */
int ctl_usage(struct ctl *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* ---- Arguments and escapes (ctl_util.c) ---- */

/* calloc() of at least one byte: NULL when memory runs out.  The verbs
 * use it, since they also run inside the daemon (the control socket). */
void *ctl_calloc(size_t count, size_t size);
/* The same for tabletctl's own main(), which exits when memory runs out. */
void *ctl_xcalloc(size_t count, size_t size);
void *ctl_xrealloc(void *p, size_t count, size_t size);

/*
 * Decode the escapes \xNN (either case) and \\ in s[0..n) in place and
 * return the new length through *out.  Any other backslash stands for
 * itself, unless strict, where it is -EINVAL (as in import files).
 */
int esc_decode(char *s, size_t n, bool strict, size_t *out);
/* Decode a value given on the command line in place (not strict) and
 * return its bytes. */
struct bt_bytes ctl_arg_bytes(char *s);
/*
 * Write a value's bytes escaped: printable ASCII (0x20-0x7e) stands for
 * itself but the backslash, written \\; every other byte is \xNN
 * (lower-case hex).
 */
void esc_write(FILE *f, const void *p, size_t n);

/*
 * Decode a row key or qualifier given as the mount spells it (util/names.h:
 * %XX, "%" the empty string) in place into *out; "" is empty too.  false,
 * leaving s as it was, if s is not a valid spelling.
 */
bool ctl_arg_name(char *s, struct bt_bytes *out);
/* Write a row key or qualifier as the mount spells it (canonical, whole:
 * never the short form a listing may show). */
void ctl_name_write(FILE *f, const void *p, size_t n);

/* If arg is "key=VALUE", the VALUE; else NULL. */
char *ctl_keyword(char *arg, const char *key);
/* Strict decimal parsers: the whole string, no sign, in range. */
bool ctl_parse_u64(const char *s, uint64_t max, uint64_t *out);
bool ctl_parse_ts(const char *s, int64_t *ts);
/* A signed decimal (DELTA of increment). */
bool ctl_parse_i64(const char *s, int64_t *out);

/*
 * "F:Q" into a family (NUL-terminated in place) and a decoded qualifier
 * (ctl_arg_name).  false, touching nothing, when there is no ':', no
 * family or Q is not a valid name.
 */
bool ctl_parse_column(char *arg, const char **family, struct bt_bytes *q);
/*
 * "F:Q=VAL[@TS]" into a put: a trailing @ and decimal digits is the
 * timestamp, else the server stamps it.  false, touching nothing, if
 * malformed.
 */
bool ctl_parse_cell(char *arg, struct bt_mutation *m);
/*
 * "F:Q,F,..." into column filters (array freed with free()).  0, -EINVAL
 * if an item is empty or malformed, or -ENOMEM; the list is consumed in
 * place.  An item whose qualifier holds one of CTL_REGEX_CHARS is cbt's
 * F:REGEX (bt_read_options.column_regexes), taken as it is written;
 * *count names go first in *cols, then *regex_count of these.
 */
#define CTL_REGEX_CHARS	"\\*+?[](){}|^$"
int ctl_parse_columns(char *list, struct bt_column **cols, size_t *count,
    size_t *regex_count);

/* A row as lookup and read print it (see tabletctl(1), OUTPUT). */
void ctl_row_print(FILE *f, const struct bt_row *r);

/* ---- Progress on a terminal (progress.c) ---- */

struct progress {
	bool on;		/* draw at all (f is a terminal) */
	FILE *f;		/* where: the invocation's error stream */
	bool drawn;		/* something is on the line */
	const char *label;
	uint64_t total;		/* 0: unknown, no bar */
	struct timespec start;
	struct timespec last;
};

/* Start a display that draws only when on; total 0 shows no bar. */
void progress_init(struct progress *p, bool on, FILE *f, const char *label,
    uint64_t total);
/* Show done of total and a note ("1234 cells"), at most 10 times a
 * second. */
void progress_update(struct progress *p, uint64_t done, const char *note);
/* Erase the line. */
void progress_finish(struct progress *p);
/*
 * Run fn(arg) in this thread while another shows the time elapsed, for a
 * long call that reports no progress of its own.  Returns fn's result.
 */
int progress_run(struct progress *p, int (*fn)(void *), void *arg);

#endif
