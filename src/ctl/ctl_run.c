/*
 * ctl_run.c - one tabletctl command on a store: the verb table, help,
 * error reporting and dispatch.  tabletctl calls ctl_run on the store it
 * opens; the daemon calls it on its own open store for a command that came
 * over the control socket.  The verbs live in cmd_*.c.  See tabletctl(1).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "coord/coord.h"
#include "ctl/ctl.h"


static int cmd_help(struct ctl *c, int argc, char **argv);

static const struct ctl_verb verbs[] = {
	{ "init", "[--storage DIR|rados://POOL[/NAME][?conf=F&id=C]"
	  " | --secret]",
	  "Create an empty store in the STORE directory (made if absent, with\n"
	  "any missing parents); for a cell (STORE zk://HOST:PORT/NAME), the\n"
	  "cell with its store in DIR, shared storage every server reaches,\n"
	  "or in a Ceph RADOS pool (objects NAME/..., NAME tabletfs unless\n"
	  "given, through ceph.conf F as client.C), and its secret\n"
	  "STORAGE/secret (mode 0600), which every process of the cell must\n"
	  "read.  --secret makes the secret of a cell made without.",
	  0, 2, CTL_STORE_PATH, cmd_init },
	{ "createtable",
	  "T [families=F:POLICY,...] [splits=ROW,...] [tablet_size=SIZE]",
	  "Create table T with families (each F or F:POLICY; no policy keeps\n"
	  "every version), initial tablet boundaries at the split rows, and\n"
	  "the size past which a tablet splits (default 128M).",
	  1, 4, CTL_STORE_WRITE, cmd_createtable },
	{ "createfamily", "T F [group=G]",
	  "Add family F to table T, in locality group G (default \"default\").",
	  2, 3, CTL_STORE_WRITE, cmd_createfamily },
	{ "setgcpolicy", "T F POLICY...",
	  "Set family F's garbage-collection policy: never, maxversions=N,\n"
	  "maxage=DURATION, combined with and/or and parentheses.  The words\n"
	  "are joined by blanks: setgcpolicy T F maxversions=3 or maxage=7d",
	  3, -1, CTL_STORE_WRITE, cmd_setgcpolicy },
	{ "setgroup",
	  "T G [blocksize=SIZE] [compression=snappy|none] [bloom=on|off] "
	  "[inmemory=on|off]",
	  "Create or change locality group G of table T; settings not given\n"
	  "keep their value (or the default: 64k, snappy, on, off).",
	  2, 6, CTL_STORE_WRITE, cmd_setgroup },
	{ "deletefamily", "T F",
	  "Drop family F from table T with all its data.",
	  2, 2, CTL_STORE_WRITE, cmd_deletefamily },
	{ "deletetable", "T",
	  "Drop table T with all its data.",
	  1, 1, CTL_STORE_WRITE, cmd_deletetable },
	{ "ls", "[T]",
	  "List the tables, one a line; or table T's families, one a line:\n"
	  "\"F group=G gc=POLICY\".",
	  0, 1, CTL_STORE_READ, cmd_ls },
	{ "groups", "T",
	  "List table T's locality groups, one a line, with their settings\n"
	  "as setgroup spells them: \"G blocksize=64k compression=snappy\n"
	  "bloom=on inmemory=off\".",
	  1, 1, CTL_STORE_READ, cmd_groups },
	{ "set", "T ROW F:Q=VALUE[@TS] ... [-- ROW F:Q=VALUE[@TS] ...]...",
	  "Write the cells in one atomic mutation of ROW.  A cell without @TS\n"
	  "is stamped with the current time (microseconds).  Several rows,\n"
	  "separated by --, are written in one batch: each row atomically,\n"
	  "each failure reported, the other rows written all the same.",
	  3, -1, CTL_STORE_WRITE, cmd_set },
	{ "lookup",
	  "T ROW [columns=F:Q,F:REGEX,F,...] [cells-per-column=N] [at=TS]\n"
	  "    [start-ts=TS] [end-ts=TS] [keys-only=true]",
	  "Print ROW's cells: those of the columns or families given (a\n"
	  "qualifier with one of \\*+?[](){}|^$ is a regex matching whole\n"
	  "qualifiers), the newest N versions of each, with timestamps at\n"
	  "most TS and in [start-ts, end-ts).  Exit 1 if no cell matches.",
	  2, 8, CTL_STORE_READ, cmd_lookup },
	{ "read",
	  "T [start=ROW] [end=ROW] [prefix=P] [regex=RE] [columns=...]\n"
	  "    [count=N] [cells-per-column=N] [start-ts=TS] [end-ts=TS]\n"
	  "    [keys-only=true]",
	  "Print the rows in [start, end) (or starting with P, or whose\n"
	  "whole key the regex RE matches), at most N of them, in row\n"
	  "order, as lookup does.",
	  1, 11, CTL_STORE_READ, cmd_read },
	{ "deleterow", "T ROW",
	  "Delete every cell of ROW.",
	  2, 2, CTL_STORE_WRITE, cmd_deleterow },
	{ "deletecolumn", "T ROW F Q",
	  "Delete every version of column F:Q in ROW.",
	  4, 4, CTL_STORE_WRITE, cmd_deletecolumn },
	{ "increment", "T ROW F:Q DELTA",
	  "Add DELTA (may be negative) to the counter in F:Q, absent = 0,\n"
	  "store the sum as a new version and print it.",
	  4, 4, CTL_STORE_WRITE, cmd_increment },
	{ "checkandset", "T ROW F:Q EXPECTED|--absent F:Q=VALUE[@TS] ...",
	  "Write the cells, atomically, only if the newest value of F:Q in\n"
	  "ROW is EXPECTED (or, with --absent, if F:Q has no version).\n"
	  "Print \"applied\" and exit 0, or \"not applied\" and exit 1.",
	  5, -1, CTL_STORE_WRITE, cmd_checkandset },
	{ "count",
	  "T [start=ROW] [end=ROW] [prefix=P] [regex=RE] [columns=...]\n"
	  "    [start-ts=TS] [end-ts=TS]",
	  "Print the number of rows of table T (that hold a cell the\n"
	  "filters select, as read's).",
	  1, 8, CTL_STORE_READ, cmd_count },
	{ "import", "[--bulk] T FILE",
	  "Write the cells of FILE (\"-\": standard input), in export's\n"
	  "format, into table T; its families must exist.  --bulk: sort\n"
	  "them and add them to T's tablets as SSTables, all or nothing,\n"
	  "without the commit log (not on a mounted store).",
	  2, 3, CTL_STORE_WRITE, cmd_import },
	{ "export", "T",
	  "Write every cell of table T to standard output, one a line:\n"
	  "ROW, FAMILY, QUALIFIER, TIMESTAMP, VALUE, separated by tabs.",
	  1, 1, CTL_STORE_READ, cmd_export },
	{ "tablets", "[T]",
	  "List the tablets of table T (default: of every table), one a line:\n"
	  "TABLE, START, END (\"-\" for an open bound), sstables=N, bytes=N\n"
	  "(whole files, shared ones too), memtable=N and data=N (estimated\n"
	  "bytes of the tablet's own rows), separated by tabs.",
	  0, 1, CTL_STORE_READ, cmd_tablets },
	{ "split", "T ROW",
	  "Split the tablet of T holding ROW so that a tablet starts at ROW.\n"
	  "Nothing is copied; tablets also split by themselves past the\n"
	  "table's tablet_size, and small neighbours merge again (never\n"
	  "across a row given here or at createtable).",
	  2, 2, CTL_STORE_WRITE, cmd_split },
	{ "compact", "[T] [--major]",
	  "Merge the SSTables of table T (default: every table); --major\n"
	  "also drops deleted and expired data.",
	  0, 2, CTL_STORE_WRITE, cmd_compact },
	{ "check", "",
	  "Verify every block of every SSTable, every commit-log record, and\n"
	  "that the catalog and the files agree; print each problem, then a\n"
	  "summary.  Exit 1 if there is any problem.",
	  0, 0, CTL_STORE_PATH, cmd_check },
	{ "status", "[T]",
	  "Print the store's counters, \"NAME VALUE\" a line; with T, what\n"
	  "table T takes on disk and in memory instead: a line for each\n"
	  "family, each locality group and the table (tabletctl(1)).",
	  0, 1, CTL_STORE_READ, cmd_status },
	{ "chmod", "MODE T[:F]",
	  "Set who may read and write table T, or its family F (for the\n"
	  "whole table): MODE is octal (0750) or symbolic as chmod(1) takes\n"
	  "it (g+w, o-rwx, u=rw,go=r).  r reads cells, w writes and deletes\n"
	  "them.",
	  2, 2, CTL_STORE_WRITE, cmd_chmod },
	{ "chown", "USER[:GROUP] T[:F]",
	  "Give table T, or its family F, to USER and (if given) GROUP, by\n"
	  "name or number; :GROUP alone changes the group only.",
	  2, 2, CTL_STORE_WRITE, cmd_chown },
	{ "help", "[VERB]",
	  "Describe every verb, or one.",
	  0, 1, CTL_STORE_NONE, cmd_help },
};

#define VERB_COUNT	(sizeof(verbs) / sizeof(verbs[0]))

static const struct ctl_verb *
verb_find(const char *name)
{
	for (size_t i = 0; i < VERB_COUNT; i++)
		if (strcmp(verbs[i].name, name) == 0)
			return &verbs[i];
	return NULL;
}

static void
verb_usage(FILE *f, const struct ctl_verb *v)
{
	fprintf(f, "%s%s%s\n", v->name, v->args[0] ? " " : "", v->args);
}

static int
cmd_help(struct ctl *c, int argc, char **argv)
{
	const struct ctl_verb *v;

	if (argc == 1) {
		if ((v = verb_find(argv[0])) == NULL)
			return ctl_usage(c, "unknown verb '%s'", argv[0]);
		fputs("usage: tabletctl [-s STORE] ", c->out);
		verb_usage(c->out, v);
		fprintf(c->out, "\n%s\n", v->help);
		return CTL_OK;
	}
	fputs("usage: tabletctl [-s STORE] VERB [ARGS...]\n\nVerbs:\n",
	    c->out);
	for (size_t i = 0; i < VERB_COUNT; i++) {
		fputs("  ", c->out);
		verb_usage(c->out, &verbs[i]);
	}
	fprintf(c->out, "\nSTORE defaults to $TABLETFS_STORE.  Rows and "
	    "qualifiers are spelled as in the\nmount (%%XX, %% alone the "
	    "empty string); bytes in values may be written\n\\xNN, and a "
	    "backslash \\\\.  See tabletctl(1).\n");
	return CTL_OK;
}

/* Open the store as the verb needs; a reported exit status. */
static int
store_open(struct ctl *c)
{
	struct bt_options opts;
	char catalog[4096];
	int rc;

	/* Say plainly that there is no store, and leave no LOCK behind. */
	snprintf(catalog, sizeof(catalog), "%s/catalog.db", c->store_path);
	if (!coord_address_is_cell(c->store_path) &&
	    access(catalog, F_OK) < 0 && errno == ENOENT)
		return ctl_error(c, "%s: not a tabletfs store (tabletctl init "
		    "makes one)", c->store_path);
	memset(&opts, 0, sizeof(opts));
	opts.read_only = c->verb->mode == CTL_STORE_READ;
	if ((rc = ctl_store_open(c, &opts)) < 0)
		return ctl_fail(c, rc, NULL);
	return CTL_OK;
}

int
ctl_run(struct bt_store *store, const char *store_path, int argc,
    char **argv, FILE *in, FILE *out, FILE *err, const struct bt_cred *cred)
{
	struct ctl c;
	int rc, status;

	memset(&c, 0, sizeof(c));
	c.store_path = store_path;
	c.store = store;
	c.in = in;
	c.out = out;
	c.err = err;
	c.cred = cred;
	c.store_uid = (uint32_t)geteuid();
	bt_error_clear();	/* the daemon's thread ran commands before */
	if (argc == 0)
		return ctl_usage(&c, NULL);
	if ((c.verb = verb_find(argv[0])) == NULL) {
		fprintf(err, "tabletctl: unknown verb '%s'\n", argv[0]);
		return ctl_usage(&c, NULL);
	}
	argc--;
	argv++;
	if (argc < c.verb->min_args ||
	    (c.verb->max_args >= 0 && argc > c.verb->max_args))
		return ctl_usage(&c, NULL);
	if (c.verb->mode != CTL_STORE_NONE &&
	    (c.store_path == NULL || c.store_path[0] == '\0'))
		return ctl_usage(&c, "no store: give -s STORE or set "
		    "TABLETFS_STORE");
	/* init makes a store; the daemon's exists and is in use. */
	if (store != NULL && c.verb->run == cmd_init)
		return ctl_error(&c, "%s: store is mounted", store_path);
	c.progress = fileno(err) >= 0 && isatty(fileno(err));

	if (store == NULL && (c.verb->mode == CTL_STORE_READ ||
	    c.verb->mode == CTL_STORE_WRITE)) {
		if ((status = store_open(&c)) != CTL_OK)
			return status;
	}
	c.own_store = store == NULL;
	status = c.verb->run(&c, argc, argv);
	if (c.own_store) {
		bt_error_clear();
		if ((rc = bt_store_close(c.store)) < 0 && status != CTL_USAGE)
			status = ctl_fail(&c, rc, "close");
	}
	if (fflush(out) != 0 || ferror(out))
		status = ctl_fail(&c, -(errno ? errno : EIO), "stdout");
	return status;
}
