/*
 * cmd_data.c - tabletctl's row verbs: set, lookup, read, deleterow,
 * deletecolumn, increment, checkandset, count.  Row keys and qualifiers
 * arrive and leave as the mount spells them (ctl_arg_name,
 * ctl_name_write); values arrive escaped (ctl_arg_bytes) and leave escaped
 * (esc_write).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctl.h"

/* A row key argument, decoded in place: CTL_OK or a reported CTL_USAGE. */
static int
parse_row(struct ctl *c, char *arg, struct bt_bytes *row)
{
	if (!ctl_arg_name(arg, row))
		return ctl_usage(c, "bad row '%s' (want a name as the mount "
		    "spells it: %%XX escapes)", arg);
	return CTL_OK;
}

/* Parse the cells argv[0..argc) into puts; the caller frees *out. */
static int
parse_cells(struct ctl *c, int argc, char **argv, struct bt_mutation **out)
{
	struct bt_mutation *m;

	if ((m = ctl_calloc((size_t)argc, sizeof(*m))) == NULL)
		return ctl_fail(c, -ENOMEM, NULL);
	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--absent") == 0 ||
		    !ctl_parse_cell(argv[i], &m[i])) {
			free(m);
			return ctl_usage(c, "bad cell '%s' (want F:Q=VALUE)",
			    argv[i]);
		}
	}
	*out = m;
	return CTL_OK;
}

/* The word that separates the rows of a set of several rows (no cell
 * is spelled so, and a row named so is written %2D%2D). */
#define SET_ROW_SEPARATOR "--"

/*
 * set T ROW F:Q=V ... [-- ROW F:Q=V ...]...: each row's cells in one
 * atomic mutation of it, all the rows in one batch (bt_mutate_rows()),
 * each failed row reported on its own.
 */
static int
set_rows(struct ctl *c, const char *table, int argc, char **argv)
{
	struct bt_row_mutation *rows;
	struct bt_mutation *muts = NULL;
	int *results, rc, status = CTL_OK, start, nrows = 0;

	rows = ctl_calloc((size_t)argc, sizeof(*rows));
	results = ctl_calloc((size_t)argc, sizeof(*results));
	if (rows == NULL || results == NULL) {
		status = ctl_fail(c, -ENOMEM, NULL);
		goto out;
	}
	for (int i = 0; i < argc; i = start) {
		int n;

		if (strcmp(argv[i], SET_ROW_SEPARATOR) == 0) {
			status = ctl_usage(c, "a row is missing before '%s'",
			    SET_ROW_SEPARATOR);
			goto out;
		}
		for (start = i + 1; start < argc && strcmp(argv[start],
		    SET_ROW_SEPARATOR) != 0; start++)
			;
		if ((n = start - i - 1) == 0) {
			status = ctl_usage(c, "row '%s' has no cells",
			    argv[i]);
			goto out;
		}
		if ((status = parse_row(c, argv[i],
		    &rows[nrows].row)) != CTL_OK ||
		    (status = parse_cells(c, n, argv + i + 1,
		    &muts)) != CTL_OK)
			goto out;
		rows[nrows].muts = muts;
		rows[nrows++].count = (size_t)n;
		if ((status = ctl_allow_mutations(c, table, muts,
		    (size_t)n)) != CTL_OK)
			goto out;
		if (start < argc && ++start == argc) {
			status = ctl_usage(c, "a row is missing after '%s'",
			    SET_ROW_SEPARATOR);
			goto out;
		}
	}
	bt_error_clear();
	if ((rc = bt_mutate_rows(c->store, table, rows, (size_t)nrows, NULL,
	    results)) < 0) {
		/* The call's detail is its first failed row's; the others
		 * are reported by their error alone. */
		bool first = true;

		for (int i = 0; i < nrows; i++) {
			if (results[i] == 0)
				continue;
			if (!first)
				bt_error_clear();
			first = false;
			status = ctl_fail(c, results[i], "row %d of %d", i + 1,
			    nrows);
		}
	}
out:
	for (int i = 0; rows != NULL && i < nrows; i++)
		free((void *)rows[i].muts);
	free(rows);
	free(results);
	return status;
}

int
cmd_set(struct ctl *c, int argc, char **argv)
{
	struct bt_mutation *muts;
	struct bt_bytes row;
	int rc, status;

	for (int i = 2; i < argc; i++)
		if (strcmp(argv[i], SET_ROW_SEPARATOR) == 0)
			return set_rows(c, argv[0], argc - 1, argv + 1);
	if ((status = parse_row(c, argv[1], &row)) != CTL_OK)
		return status;
	if ((status = parse_cells(c, argc - 2, argv + 2, &muts)) != CTL_OK)
		return status;
	if ((status = ctl_allow_mutations(c, argv[0], muts,
	    (size_t)(argc - 2))) != CTL_OK)
		goto out;
	bt_error_clear();
	if ((rc = bt_mutate_row(c->store, argv[0], row, muts,
	    (size_t)(argc - 2), NULL, NULL)) < 0)
		status = ctl_fail(c, rc, NULL);
out:
	free(muts);
	return status;
}

/* The options of lookup, read and count, gathered from key=value
 * words. */
struct read_args {
	struct bt_scan_options scan;
	struct bt_column *columns;
	bool has_start_ts, has_end_ts, has_at;
	int64_t start_ts, end_ts, at;
};

static const char *const lookup_keys[] = {
	"columns", "cells-per-column", "at", "start-ts", "end-ts",
	"keys-only", NULL,
};
static const char *const read_keys[] = {
	"start", "end", "prefix", "regex", "columns", "count",
	"cells-per-column", "start-ts", "end-ts", "keys-only", NULL,
};
static const char *const count_keys[] = {
	"start", "end", "prefix", "regex", "columns", "start-ts", "end-ts",
	NULL,
};

/*
 * The time range of ra into its read options, once every word is in:
 * [start-ts, end-ts) is min_ts = start-ts, max_ts = end-ts - 1
 * (tabletfs.h), and at= bounds max_ts too.  CTL_OK or a reported
 * CTL_USAGE for a range that holds no time.
 */
static int
read_args_finish(struct ctl *c, struct read_args *ra)
{
	struct bt_read_options *ro = &ra->scan.read;

	ro->min_ts = ra->has_start_ts ? ra->start_ts : 0;
	if (ra->has_end_ts) {
		if (ra->end_ts <= ro->min_ts)
			return ctl_usage(c, "bad time range: end-ts=%" PRId64
			    " is not after start-ts=%" PRId64, ra->end_ts,
			    ro->min_ts);
		ro->has_max_ts = true;
		ro->max_ts = ra->end_ts - 1;
	}
	if (ra->has_at && (!ro->has_max_ts || ra->at < ro->max_ts)) {
		ro->has_max_ts = true;
		ro->max_ts = ra->at;
	}
	return CTL_OK;
}

/*
 * Take one key=value word into ra, if its key is one of keys.  Returns
 * CTL_OK, or a reported CTL_USAGE or CTL_FAIL.
 */
static int
read_arg(struct ctl *c, char *arg, const char *const *keys,
    struct read_args *ra)
{
	struct bt_read_options *ro = &ra->scan.read;
	const char *key = NULL;
	uint64_t n;
	char *v;
	int rc;

	for (; *keys != NULL && key == NULL; keys++)
		if ((v = ctl_keyword(arg, *keys)) != NULL)
			key = *keys;
	if (key == NULL)
		return ctl_usage(c, "unexpected '%s'", arg);
	if (strcmp(key, "columns") == 0) {
		free(ra->columns);
		ra->columns = NULL;
		if ((rc = ctl_parse_columns(v, &ra->columns,
		    &ro->column_count, &ro->column_regex_count)) == -EINVAL)
			return ctl_usage(c, "bad columns list");
		if (rc < 0)
			return ctl_fail(c, rc, NULL);
		ro->columns = ro->column_count > 0 ? ra->columns : NULL;
		ro->column_regexes = ro->column_regex_count > 0 ?
		    ra->columns + ro->column_count : NULL;
	} else if (strcmp(key, "cells-per-column") == 0) {
		if (!ctl_parse_u64(v, UINT32_MAX, &n) || n == 0)
			return ctl_usage(c, "bad count '%s'", v);
		ro->cells_per_column = (uint32_t)n;
	} else if (strcmp(key, "at") == 0) {
		if (!ctl_parse_ts(v, &ra->at))
			return ctl_usage(c, "bad timestamp '%s'", v);
		ra->has_at = true;
	} else if (strcmp(key, "start-ts") == 0) {
		if (!ctl_parse_ts(v, &ra->start_ts))
			return ctl_usage(c, "bad timestamp '%s'", v);
		ra->has_start_ts = true;
	} else if (strcmp(key, "end-ts") == 0) {
		if (!ctl_parse_ts(v, &ra->end_ts))
			return ctl_usage(c, "bad timestamp '%s'", v);
		ra->has_end_ts = true;
	} else if (strcmp(key, "keys-only") == 0) {
		if (strcmp(v, "true") != 0 && strcmp(v, "false") != 0)
			return ctl_usage(c, "bad keys-only '%s' (want true or "
			    "false)", v);
		ro->keys_only = strcmp(v, "true") == 0;
	} else if (strcmp(key, "regex") == 0) {
		/* As written: the regex spells bytes itself (\xNN). */
		ro->row_regex.data = v;
		ro->row_regex.size = strlen(v);
	} else if (strcmp(key, "count") == 0) {
		if (!ctl_parse_u64(v, UINT64_MAX, &ra->scan.limit) ||
		    ra->scan.limit == 0)
			return ctl_usage(c, "bad count '%s'", v);
	} else if (strcmp(key, "start") == 0)
		return parse_row(c, v, &ra->scan.start);
	else if (strcmp(key, "end") == 0)
		return parse_row(c, v, &ra->scan.end);
	else
		return parse_row(c, v, &ra->scan.prefix);
	return CTL_OK;
}

int
cmd_lookup(struct ctl *c, int argc, char **argv)
{
	struct read_args ra;
	struct bt_bytes row;
	struct bt_row *r;
	int rc, status = CTL_OK;

	memset(&ra, 0, sizeof(ra));
	for (int i = 2; i < argc && status == CTL_OK; i++)
		status = read_arg(c, argv[i], lookup_keys, &ra);
	if (status != CTL_OK ||
	    (status = read_args_finish(c, &ra)) != CTL_OK ||
	    (status = parse_row(c, argv[1], &row)) != CTL_OK ||
	    (status = ctl_allow_read(c, argv[0], &ra.scan.read)) != CTL_OK)
		goto out;
	bt_error_clear();
	rc = bt_read_row(c->store, argv[0], row, &ra.scan.read, &r);
	if (rc < 0)
		status = ctl_fail(c, rc, NULL);
	else if (rc == BT_NOTFOUND) {
		fputs("tabletctl: lookup: row ", c->err);
		ctl_name_write(c->err, row.data, row.size);
		fputs(" not found\n", c->err);
		status = CTL_FAIL;
	} else {
		ctl_row_print(c->out, r);
		bt_row_free(r);
	}
out:
	free(ra.columns);
	return status;
}

int
cmd_read(struct ctl *c, int argc, char **argv)
{
	struct bt_scan *sc;
	struct read_args ra;
	const struct bt_row *r;
	int rc, status = CTL_OK;

	memset(&ra, 0, sizeof(ra));
	for (int i = 1; i < argc && status == CTL_OK; i++)
		status = read_arg(c, argv[i], read_keys, &ra);
	if (status != CTL_OK ||
	    (status = read_args_finish(c, &ra)) != CTL_OK ||
	    (status = ctl_allow_read(c, argv[0], &ra.scan.read)) != CTL_OK)
		goto out;
	bt_error_clear();
	if ((rc = bt_scan_open(c->store, argv[0], &ra.scan, &sc)) < 0) {
		status = ctl_fail(c, rc, NULL);
		goto out;
	}
	while ((rc = bt_scan_next_borrowed(sc, &r)) == 0)
		ctl_row_print(c->out, r);
	if (rc < 0)
		status = ctl_fail(c, rc, NULL);
	bt_scan_close(sc);
out:
	free(ra.columns);
	return status;
}

/* Apply one mutation to one row. */
static int
mutate_one(struct ctl *c, const char *table, char *row,
    const struct bt_mutation *m)
{
	struct bt_bytes key;
	int rc, status;

	if ((status = parse_row(c, row, &key)) != CTL_OK ||
	    (status = ctl_allow_mutations(c, table, m, 1)) != CTL_OK)
		return status;
	bt_error_clear();
	if ((rc = bt_mutate_row(c->store, table, key, m, 1, NULL, NULL)) < 0)
		return ctl_fail(c, rc, NULL);
	return CTL_OK;
}

int
cmd_deleterow(struct ctl *c, int argc, char **argv)
{
	struct bt_mutation m = { .kind = BT_DELETE_ROW };

	return mutate_one(c, argv[0], argv[1], &m);
}

int
cmd_deletecolumn(struct ctl *c, int argc, char **argv)
{
	struct bt_mutation m = { .kind = BT_DELETE_COLUMN };

	m.family = argv[2];
	if (!ctl_arg_name(argv[3], &m.qualifier))
		return ctl_usage(c, "bad qualifier '%s' (want a name as the "
		    "mount spells it: %%XX escapes)", argv[3]);
	return mutate_one(c, argv[0], argv[1], &m);
}

int
cmd_increment(struct ctl *c, int argc, char **argv)
{
	const char *family;
	struct bt_bytes q, row;
	int64_t delta, result;
	int rc, status;

	if ((status = parse_row(c, argv[1], &row)) != CTL_OK)
		return status;
	if (!ctl_parse_i64(argv[3], &delta))
		return ctl_usage(c, "bad delta '%s'", argv[3]);
	if (!ctl_parse_column(argv[2], &family, &q))
		return ctl_usage(c, "bad column '%s' (want F:Q)", argv[2]);
	/* It prints the sum: a read as well as a write. */
	if (ctl_allow(c, argv[0], family, BT_ACCESS_READ |
	    BT_ACCESS_WRITE) != CTL_OK)
		return CTL_FAIL;
	bt_error_clear();
	if ((rc = bt_increment(c->store, argv[0], row, family, q, delta,
	    NULL, &result, NULL)) < 0)
		return ctl_fail(c, rc, NULL);
	fprintf(c->out, "%" PRId64 "\n", result);
	return CTL_OK;
}

/*
 * checkandset T ROW F:Q EXPECTED|--absent CELL...: "applied" and exit 0,
 * or "not applied" and exit 1.
 */
int
cmd_checkandset(struct ctl *c, int argc, char **argv)
{
	struct bt_bytes q, row, expected, *expectp = NULL;
	struct bt_mutation *muts;
	const char *family;
	bool applied;
	int rc, status;

	if ((status = parse_row(c, argv[1], &row)) != CTL_OK)
		return status;
	if (!ctl_parse_column(argv[2], &family, &q))
		return ctl_usage(c, "bad column '%s' (want F:Q)", argv[2]);
	if ((status = parse_cells(c, argc - 4, argv + 4, &muts)) != CTL_OK)
		return status;
	/* Whether it applied tells of the checked value: read it too. */
	if ((status = ctl_allow(c, argv[0], family, BT_ACCESS_READ)) !=
	    CTL_OK || (status = ctl_allow_mutations(c, argv[0], muts,
	    (size_t)(argc - 4))) != CTL_OK) {
		free(muts);
		return status;
	}
	if (strcmp(argv[3], "--absent") != 0) {
		expected = ctl_arg_bytes(argv[3]);
		expectp = &expected;
	}
	bt_error_clear();
	rc = bt_check_and_mutate(c->store, argv[0], row, family, q, expectp,
	    muts, (size_t)(argc - 4), NULL, &applied);
	free(muts);
	if (rc < 0)
		return ctl_fail(c, rc, NULL);
	fprintf(c->out, "%s\n", applied ? "applied" : "not applied");
	return applied ? CTL_OK : CTL_FAIL;
}

/* The number of rows with at least one live cell that the filters
 * select. */
int
cmd_count(struct ctl *c, int argc, char **argv)
{
	struct read_args ra;
	struct bt_scan *sc;
	const struct bt_row *r;
	uint64_t rows = 0;
	int rc, status = CTL_OK;

	memset(&ra, 0, sizeof(ra));
	for (int i = 1; i < argc && status == CTL_OK; i++)
		status = read_arg(c, argv[i], count_keys, &ra);
	if (status != CTL_OK ||
	    (status = read_args_finish(c, &ra)) != CTL_OK ||
	    (status = ctl_allow_read(c, argv[0], &ra.scan.read)) != CTL_OK)
		goto out;
	/* One cell tells that a row counts. */
	ra.scan.read.cells_per_row_limit = 1;
	ra.scan.read.keys_only = true;
	bt_error_clear();
	if ((rc = bt_scan_open(c->store, argv[0], &ra.scan, &sc)) < 0) {
		status = ctl_fail(c, rc, NULL);
		goto out;
	}
	while ((rc = bt_scan_next_borrowed(sc, &r)) == 0)
		rows++;
	bt_scan_close(sc);
	if (rc < 0)
		status = ctl_fail(c, rc, NULL);
	else
		fprintf(c->out, "%" PRIu64 "\n", rows);
out:
	free(ra.columns);
	return status;
}
