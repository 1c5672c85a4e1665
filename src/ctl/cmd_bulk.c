/*
 * cmd_bulk.c - tabletctl's whole-table and store verbs: import, export,
 * compact, status.
 *
 * The import/export format is one line per cell, five tab-separated
 * fields: row, family, qualifier, decimal timestamp, value, escaped so
 * that tabs, newlines and other bytes cannot break the line.  Version 2,
 * which export writes, starts with the line EXPORT_HEADER; its row and
 * qualifier are spelled as in the mount (ctl_name_write), its family is
 * as it is, and its value is written with esc_write().  A file without
 * the header is version 1, as exports before it were written: every field
 * with esc_write().  import(export(T)) recreates T's cells exactly.  An
 * empty timestamp is the server's clock.  import --bulk gives the cells to
 * one bulk load (bt_bulk_open()) instead of writing them in batches.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "coord/coord.h"
#include "ctl/ctl.h"
#include "util/names.h"

/* The first line of an export in version 2. */
#define EXPORT_HEADER "# tabletfs export 2"

/*
 * Rows are written in batches (bt_mutate_rows(): one log append per
 * batch) of up to these many cells and bytes; a row with more than that
 * is split into several mutations.
 */
#define IMPORT_BATCH_CELLS	8192
#define IMPORT_BATCH_BYTES	(2u << 20)

/* An import in progress: the rows of the batch being gathered. */
struct import {
	struct ctl *c;
	const char *table;
	const char *name;	/* the file, for messages */
	char **lines;		/* owned buffers the mutations point into */
	struct bt_mutation *muts;	/* IMPORT_BATCH_CELLS of each */
	size_t count;
	size_t bytes;
	/* The batch's rows (at most one per cell), each a run of muts,
	 * with the line of its first cell and its result. */
	struct bt_row_mutation *rows;
	uint64_t *row_lines;
	int *results;
	size_t nrows;
};

/* Forget the gathered cells. */
static void
import_clear(struct import *im)
{
	for (size_t i = 0; i < im->count; i++)
		free(im->lines[i]);
	im->count = 0;
	im->bytes = 0;
	im->nrows = 0;
}

/* Write the first nrows gathered rows as one batch and forget every
 * gathered cell; the first failed row is reported. */
static int
import_flush_rows(struct import *im, size_t nrows)
{
	int rc, status = CTL_OK;

	if (nrows > 0) {
		bt_error_clear();
		rc = bt_mutate_rows(im->c->store, im->table, im->rows, nrows,
		    NULL, im->results);
		for (size_t i = 0; rc < 0 && i < nrows; i++)
			if (im->results[i] < 0) {
				status = ctl_fail(im->c, im->results[i],
				    "%s:%" PRIu64, im->name,
				    im->row_lines[i]);
				break;
			}
	}
	import_clear(im);
	return status;
}

static int
import_flush(struct import *im)
{
	return import_flush_rows(im, im->nrows);
}

/* Add the cell m of row (at line line_no, its buffer line of len bytes
 * owned from now on) to the batch, writing the batch first when it is
 * full. */
static int
import_add(struct import *im, struct bt_bytes row, const struct bt_mutation *m,
    char *line, size_t len, uint64_t line_no)
{
	struct bt_row_mutation *last;
	int status;

	if (im->count > 0 && (im->count >= IMPORT_BATCH_CELLS ||
	    im->bytes >= IMPORT_BATCH_BYTES) &&
	    (status = import_flush(im)) != CTL_OK) {
		free(line);
		return status;
	}
	if ((status = ctl_allow(im->c, im->table, m->family,
	    BT_ACCESS_WRITE)) != CTL_OK) {
		free(line);
		return status;
	}
	last = im->nrows > 0 ? &im->rows[im->nrows - 1] : NULL;
	if (last == NULL || row.size != last->row.size ||
	    memcmp(row.data, last->row.data, row.size) != 0) {
		im->rows[im->nrows] = (struct bt_row_mutation){ row,
		    &im->muts[im->count], 0 };
		im->row_lines[im->nrows++] = line_no;
		last = &im->rows[im->nrows - 1];
	}
	im->lines[im->count] = line;
	im->muts[im->count++] = *m;
	last->count++;
	im->bytes += len;
	return CTL_OK;
}

/* Declared in ctl.h, for the import format's fuzz target. */
bool
import_line_parse(char *line, size_t len, int version, struct bt_bytes *row,
    struct bt_mutation *m)
{
	char *field[6], *end = line + len, *tab;
	size_t n[5];

	field[0] = line;
	for (int i = 1; i < 5; i++) {
		if ((tab = memchr(field[i - 1], '\t', (size_t)(end -
		    field[i - 1]))) == NULL)
			return false;
		field[i] = tab + 1;
	}
	if (memchr(field[4], '\t', (size_t)(end - field[4])) != NULL)
		return false;
	field[5] = end + 1;	/* field i ends one byte before field i+1 */
	for (int i = 0; i < 5; i++) {
		n[i] = (size_t)(field[i + 1] - field[i]) - 1;
		field[i][n[i]] = '\0';
		if (i == 3 || (version >= 2 && i == 1))
			continue;
		if (version >= 2 && i != 4) {
			if (n[i] > 0 && names_decode_in_place(field[i],
			    &n[i]) < 0)
				return false;
		} else if (esc_decode(field[i], n[i], true, &n[i]) < 0)
			return false;
	}
	memset(m, 0, sizeof(*m));
	m->kind = BT_PUT;
	/* An empty timestamp is the server's clock. */
	if (n[3] == 0)
		m->ts = BT_TS_SERVER;
	else if (strlen(field[3]) != n[3] || !ctl_parse_ts(field[3], &m->ts))
		return false;
	/* A family is a name: no NUL may hide inside it. */
	if (n[1] == 0 || memchr(field[1], '\0', n[1]) != NULL)
		return false;
	field[1][n[1]] = '\0';
	m->family = field[1];
	m->qualifier.data = field[2];
	m->qualifier.size = n[2];
	m->value.data = field[4];
	m->value.size = n[4];
	row->data = field[0];
	row->size = n[0];
	return true;
}

/* Read cells from f into the table, a row at a time. */
static int
import_file(struct import *im, FILE *f, uint64_t total)
{
	struct progress p;
	struct bt_mutation m;
	struct bt_bytes row;
	uint64_t line_no = 0, done = 0;
	char note[48], *line;
	size_t cap;
	ssize_t len;
	int status = CTL_OK, version = 1;

	progress_init(&p, im->c->progress, im->c->err, "import", total);
	for (;;) {
		line = NULL;
		cap = 0;
		if ((len = getline(&line, &cap, f)) < 0) {
			free(line);
			break;
		}
		line_no++;
		done += (uint64_t)len;
		if (len > 0 && line[len - 1] == '\n')
			len--;
		if (line_no == 1 && (size_t)len == strlen(EXPORT_HEADER) &&
		    memcmp(line, EXPORT_HEADER, (size_t)len) == 0) {
			version = 2;
			free(line);
			continue;
		}
		if (!import_line_parse(line, (size_t)len, version, &row,
		    &m)) {
			free(line);
			progress_finish(&p);
			/* The rows before the one being gathered are
			 * written; that one, which the line may belong
			 * to, is not. */
			if (im->nrows > 0 && (status = import_flush_rows(im,
			    im->nrows - 1)) != CTL_OK)
				goto out;
			status = ctl_error(im->c, "%s:%" PRIu64 ": bad line "
			    "(want ROW, FAMILY, QUALIFIER, TIMESTAMP, VALUE "
			    "separated by tabs)", im->name, line_no);
			goto out;
		}
		if ((status = import_add(im, row, &m, line, (size_t)len,
		    line_no)) != CTL_OK) {
			progress_finish(&p);
			goto out;
		}
		if (p.on) {
			snprintf(note, sizeof(note), "%" PRIu64 " cells",
			    line_no);
			progress_update(&p, done, note);
		}
	}
	progress_finish(&p);
	if (ferror(f)) {
		status = ctl_fail(im->c, errno ? -errno : -EIO, "%s",
		    im->name);
		goto out;
	}
	status = import_flush(im);
out:
	import_clear(im);
	return status;
}

/* The commit of a bulk load, to run under progress_run(). */
struct bulk_job {
	struct bt_bulk *bulk;
	struct bt_bulk_stats stats;
};

static int
bulk_job_run(void *arg)
{
	struct bulk_job *job = arg;

	return bt_bulk_commit(job->bulk, &job->stats);
}

/*
 * import --bulk: every cell of f given to one bulk load (bt_bulk_open()),
 * committed at the end of the file.  A bad line or a refused cell stops
 * it with nothing written.
 */
static int
import_bulk(struct ctl *c, const char *table, const char *name, FILE *f,
    uint64_t total)
{
	struct bulk_job job = { 0 };
	struct progress p;
	struct bt_mutation m;
	struct bt_bytes row;
	uint64_t line_no = 0, done = 0;
	char note[48], *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int rc, status = CTL_OK, version = 1;

	bt_error_clear();
	if ((rc = bt_bulk_open(c->store, table, NULL, &job.bulk)) < 0)
		return ctl_fail(c, rc, NULL);
	progress_init(&p, c->progress, c->err, "bulk import: sorting", total);
	while ((len = getline(&line, &cap, f)) >= 0) {
		line_no++;
		done += (uint64_t)len;
		if (len > 0 && line[len - 1] == '\n')
			len--;
		if (line_no == 1 && (size_t)len == strlen(EXPORT_HEADER) &&
		    memcmp(line, EXPORT_HEADER, (size_t)len) == 0) {
			version = 2;
			continue;
		}
		if (!import_line_parse(line, (size_t)len, version, &row,
		    &m)) {
			progress_finish(&p);
			status = ctl_error(c, "%s:%" PRIu64 ": bad line (want "
			    "ROW, FAMILY, QUALIFIER, TIMESTAMP, VALUE "
			    "separated by tabs); nothing imported", name,
			    line_no);
			goto out;
		}
		bt_error_clear();
		if ((rc = bt_bulk_put(job.bulk, row, m.family, m.qualifier,
		    m.ts, m.value)) < 0) {
			progress_finish(&p);
			status = ctl_fail(c, rc, "%s:%" PRIu64, name, line_no);
			goto out;
		}
		if (p.on) {
			snprintf(note, sizeof(note), "%" PRIu64 " cells",
			    line_no);
			progress_update(&p, done, note);
		}
	}
	progress_finish(&p);
	if (ferror(f)) {
		status = ctl_fail(c, errno ? -errno : -EIO, "%s", name);
		goto out;
	}
	progress_init(&p, c->progress, c->err, "bulk import: writing", 0);
	bt_error_clear();
	if ((rc = progress_run(&p, bulk_job_run, &job)) < 0)
		status = ctl_fail(c, rc, NULL);
out:
	free(line);
	bt_bulk_close(job.bulk);
	return status;
}

/* import [--bulk] T FILE, the flag anywhere. */
int
cmd_import(struct ctl *c, int argc, char **argv)
{
	struct import im;
	struct stat st;
	uint64_t total = 0;
	const char *args[2];
	bool bulk = false;
	int nargs = 0;
	FILE *f;
	int status;

	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--bulk") == 0 && !bulk)
			bulk = true;
		else if (nargs < 2 && (argv[i][0] != '-' ||
		    strcmp(argv[i], "-") == 0))
			args[nargs++] = argv[i];
		else
			return ctl_usage(c, "unexpected '%s'", argv[i]);
	}
	if (nargs != 2)
		return ctl_usage(c, NULL);
	/* The daemon's store: a load needs the store to itself (decided in
	 * tabletctl(1), import). */
	if (bulk && !c->own_store)
		return ctl_error(c, "--bulk: %s is mounted: a bulk load needs "
		    "the store to itself (unmount it, or import without "
		    "--bulk)", c->store_path);
	if (ctl_allow(c, args[0], NULL, BT_ACCESS_WRITE) != CTL_OK)
		return CTL_FAIL;
	/* The daemon would open it with its own rights, not the caller's. */
	if (c->cred != NULL && c->cred->uid != 0 &&
	    c->cred->uid != c->store_uid && strcmp(args[1], "-") != 0)
		return ctl_error(c, "%s: %s (the daemon opens no file for "
		    "another user: import %s - <%s)", args[1],
		    strerror(EACCES), args[0], args[1]);
	memset(&im, 0, sizeof(im));
	im.c = c;
	im.table = args[0];
	im.name = args[1];
	if (strcmp(args[1], "-") == 0) {
		f = c->in;
		im.name = "stdin";
	} else if ((f = fopen(args[1], "r")) == NULL)
		return ctl_fail(c, -errno, "%s", args[1]);
	if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode))
		total = (uint64_t)st.st_size;
	if (bulk) {
		status = import_bulk(c, im.table, im.name, f, total);
		if (f != c->in)
			fclose(f);
		return status;
	}
	im.lines = ctl_calloc(IMPORT_BATCH_CELLS, sizeof(*im.lines));
	im.muts = ctl_calloc(IMPORT_BATCH_CELLS, sizeof(*im.muts));
	im.rows = ctl_calloc(IMPORT_BATCH_CELLS, sizeof(*im.rows));
	im.row_lines = ctl_calloc(IMPORT_BATCH_CELLS, sizeof(*im.row_lines));
	im.results = ctl_calloc(IMPORT_BATCH_CELLS, sizeof(*im.results));
	if (im.lines == NULL || im.muts == NULL || im.rows == NULL ||
	    im.row_lines == NULL || im.results == NULL)
		status = ctl_fail(c, -ENOMEM, NULL);
	else
		status = import_file(&im, f, total);
	if (f != c->in)
		fclose(f);
	free(im.lines);
	free(im.muts);
	free(im.rows);
	free(im.row_lines);
	free(im.results);
	return status;
}

/* One cell as an export line (version 2). */
static void
export_cell(FILE *f, const struct bt_row *r, const struct bt_cell *cell)
{
	ctl_name_write(f, r->key.data, r->key.size);
	putc('\t', f);
	fputs(cell->family, f);
	putc('\t', f);
	ctl_name_write(f, cell->qualifier.data, cell->qualifier.size);
	fprintf(f, "\t%" PRId64 "\t", cell->ts);
	esc_write(f, cell->value.data, cell->value.size);
	putc('\n', f);
}

int
cmd_export(struct ctl *c, int argc, char **argv)
{
	struct progress p;
	struct bt_scan *sc;
	const struct bt_row *r;
	uint64_t rows = 0, cells = 0;
	char note[64];
	int rc, status = CTL_OK;

	if (ctl_allow_read(c, argv[0], NULL) != CTL_OK)
		return CTL_FAIL;
	bt_error_clear();
	if ((rc = bt_scan_open(c->store, argv[0], NULL, &sc)) < 0)
		return ctl_fail(c, rc, NULL);
	progress_init(&p, c->progress, c->err, "export", 0);
	fputs(EXPORT_HEADER "\n", c->out);
	while ((rc = bt_scan_next_borrowed(sc, &r)) == 0) {
		for (size_t i = 0; i < r->cell_count; i++)
			export_cell(c->out, r, &r->cells[i]);
		rows++;
		cells += r->cell_count;
		if (ferror(c->out))
			break;
		if (p.on) {
			snprintf(note, sizeof(note), "%" PRIu64 " rows, %"
			    PRIu64 " cells", rows, cells);
			progress_update(&p, rows, note);
		}
	}
	progress_finish(&p);
	if (rc < 0)
		status = ctl_fail(c, rc, NULL);
	else if (fflush(c->out) != 0 || ferror(c->out))
		status = ctl_fail(c, -errno, "stdout");
	bt_scan_close(sc);
	return status;
}

/* A compaction to run under progress_run(). */
struct compact_job {
	struct bt_store *store;
	const char *table;
	bool major;
};

static int
compact_job_run(void *arg)
{
	struct compact_job *job = arg;

	return bt_store_compact(job->store, job->table, job->major);
}

/* compact [T] [--major], the words in either order. */
int
cmd_compact(struct ctl *c, int argc, char **argv)
{
	struct compact_job job = { .store = c->store };
	struct progress p;
	int rc;

	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--major") == 0 && !job.major)
			job.major = true;
		else if (argv[i][0] != '-' && job.table == NULL)
			job.table = argv[i];
		else
			return ctl_usage(c, "unexpected '%s'", argv[i]);
	}
	if (ctl_allow_admin(c, job.table) != CTL_OK)
		return CTL_FAIL;
	progress_init(&p, c->progress, c->err, job.major ? "major compaction" :
	    "compaction", 0);
	bt_error_clear();
	if ((rc = progress_run(&p, compact_job_run, &job)) < 0)
		return ctl_fail(c, rc, NULL);
	return CTL_OK;
}

/*
 * How many tablets of every table the catalog assigns to the server at
 * address (tabletctl tablets' server=), or -1 when the tablets cannot
 * be read.
 */
static long
tablets_at(struct ctl *c, const char *address)
{
	char **tables = NULL;
	size_t count = 0, n, len = strlen(address);
	long at = 0;

	if (bt_table_list(c->store, &tables, &count) < 0)
		return -1;
	for (size_t i = 0; i < count && at >= 0; i++) {
		struct bt_tablet_info *t;

		if (bt_table_tablets(c->store, tables[i], &t, &n) < 0) {
			at = -1;
			break;
		}
		for (size_t k = 0; k < n; k++)
			if (strncmp(t[k].server, address, len) == 0 &&
			    t[k].server[len] == '#')
				at++;
		bt_tablets_free(t);
	}
	bt_names_free(tables);
	bt_error_clear();
	return at;
}

/*
 * A cell's processes, from ZooKeeper: who is master, which server serves
 * the store (the root location), and every live server with the number
 * of tablets the catalog assigns it.
 */
static int
status_cell(struct ctl *c)
{
	char **names = NULL, *master = NULL, *root = NULL;
	struct coord *coord;
	struct timespec now;
	size_t count = 0, len;
	int32_t version;
	int rc;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if ((rc = coord_open(c->store_path, 10000, (int64_t)now.tv_sec *
	    1000000000 + now.tv_nsec + (int64_t)10 * 1000000000,
	    &coord)) < 0)
		return rc;
	if ((rc = coord_master_get(coord, &master)) < 0 ||
	    (rc = coord_value_get(coord, "root", &root, &len,
	    &version)) < 0 ||
	    (rc = coord_servers_list(coord, &names, &count)) < 0)
		goto out;
	fprintf(c->out, "%-15s %s\n", "master", master != NULL ? master :
	    "none elected");
	fprintf(c->out, "%-15s %s\n", "serving", root != NULL ? root :
	    "nobody yet");
	fprintf(c->out, "%-15s %zu\n", "servers", count);
	for (size_t i = 0; i < count; i++) {
		char *address = NULL;

		if (coord_server_get(coord, names[i], &address) != 0)
			continue;	/* gone meanwhile */
		fprintf(c->out, "%-15s %s%s tablets=%ld\n", "server",
		    address, root != NULL && strcmp(address, root) == 0 ?
		    " serving" : "", tablets_at(c, address));
		free(address);
	}
	rc = 0;
out:
	coord_names_free(names, count);
	free(master);
	free(root);
	coord_close(coord);
	return rc;
}

/*
 * status T: the table's usage (bt_table_describe_usage()), each line's
 * first word padded to the column of the store's counters.
 */
static int
status_table(struct ctl *c, const char *table)
{
	char *text, *access = NULL, *line, *next, *joined;
	int rc;

	if (ctl_allow(c, table, NULL, BT_ACCESS_READ) != CTL_OK)
		return CTL_FAIL;
	bt_error_clear();
	if ((rc = bt_table_describe_usage(c->store, table, &text)) < 0)
		return ctl_fail(c, rc, NULL);
	/* Then who may use it, "access table|family NAME uid= gid= mode="
	 * (none from a cell whose servers predate it). */
	if ((rc = bt_table_describe_access(c->store, table, &access)) < 0 &&
	    rc != -EOPNOTSUPP) {
		free(text);
		return ctl_fail(c, rc, NULL);
	}
	if (access != NULL) {
		if (asprintf(&joined, "%s%s", text, access) < 0) {
			free(access);
			free(text);
			return ctl_fail(c, -ENOMEM, NULL);
		}
		free(access);
		free(text);
		text = joined;
	}
	for (line = text; *line != '\0'; line = next) {
		size_t word = strcspn(line, " \n");

		next = line + strcspn(line, "\n");
		if (*next == '\n')
			*next++ = '\0';
		fprintf(c->out, "%-15.*s %s\n", (int)word, line,
		    line[word] == ' ' ? line + word + 1 : "");
	}
	free(text);
	return CTL_OK;
}

/* Counters, "NAME VALUE" a line, the names padded to one column; with a
 * table, its usage. */
int
cmd_status(struct ctl *c, int argc, char **argv)
{
	struct bt_stats st;
	char **names;
	size_t tables;
	int rc;

	if (argc == 1)
		return status_table(c, argv[0]);
	bt_error_clear();
	if ((rc = bt_table_list(c->store, &names, &tables)) < 0)
		return ctl_fail(c, rc, NULL);
	bt_names_free(names);
	bt_store_get_stats(c->store, &st);
	fprintf(c->out, "%-15s %s\n", "store", c->store_path);
	if (coord_address_is_cell(c->store_path) &&
	    (rc = status_cell(c)) < 0)
		return ctl_fail(c, rc, "the cell's processes");
	fprintf(c->out, "%-15s %zu\n", "tables", tables);
	if (st.writes_refused < 0)
		fprintf(c->out, "%-15s refused (%s): reopen the store\n",
		    "writes", bt_strerror(st.writes_refused));
	else if (st.disk_full < 0)
		fprintf(c->out, "%-15s deletes only (disk full): delete data "
		    "and compact to free room\n", "writes");
	else
		fprintf(c->out, "%-15s accepted\n", "writes");
	fprintf(c->out, "%-15s %s\n", "disk", st.disk_full < 0 ? "full" :
	    "ok");
	fprintf(c->out, "%-15s %" PRIu64 "\n", "reserve_bytes",
	    st.reserve_bytes);
#define STAT(name) fprintf(c->out, "%-15s %" PRIu64 "\n", #name, st.name)
	STAT(sstables);
	STAT(damaged_sstables);
	STAT(memtable_bytes);
	STAT(last_seq);
	STAT(mutations);
	STAT(reads);
	STAT(log_syncs);
	STAT(log_batches);
	STAT(flushes);
	STAT(compactions);
	STAT(cache_hits);
	STAT(cache_misses);
	STAT(tablets);
	STAT(splits);
	STAT(merges);
	STAT(files_collected);
	STAT(location_lookups);
	STAT(location_hits);
	STAT(location_levels);
	STAT(location_stale);
#undef STAT
	return CTL_OK;
}
