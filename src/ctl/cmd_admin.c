/*
 * cmd_admin.c - tabletctl's administration verbs: tablets (the row ranges
 * of a table and what each holds), split (force a tablet boundary) and
 * check (verify every file of the store).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coord/coord.h"
#include "ctl/ctl.h"

/* A tablet bound as the mount spells a row, "-" when empty (open); a row
 * that is "-" itself is written %2D so that the two cannot be confused. */
static void
bound_print(FILE *f, struct bt_bytes b)
{
	if (b.size == 0)
		putc('-', f);
	else if (b.size == 1 && *(const char *)b.data == '-')
		fputs("%2D", f);
	else
		ctl_name_write(f, b.data, b.size);
}

static int
tablets_print(struct ctl *c, const char *table)
{
	struct bt_tablet_info *t;
	size_t n;
	int rc;

	if (ctl_allow(c, table, NULL, BT_ACCESS_READ) != CTL_OK)
		return CTL_FAIL;
	bt_error_clear();
	if ((rc = bt_table_tablets(c->store, table, &t, &n)) < 0)
		return ctl_fail(c, rc, NULL);
	for (size_t i = 0; i < n; i++) {
		fprintf(c->out, "%s\t", table);
		bound_print(c->out, t[i].start);
		putc('\t', c->out);
		bound_print(c->out, t[i].end);
		fprintf(c->out, "\tsstables=%" PRIu64 "\tbytes=%" PRIu64
		    "\tmemtable=%" PRIu64 "\tdata=%" PRIu64,
		    t[i].sstables, t[i].sstable_bytes, t[i].memtable_bytes,
		    t[i].data_bytes);
		if (t[i].server[0] != '\0')
			fprintf(c->out, "\tserver=%s", t[i].server);
		putc('\n', c->out);
	}
	bt_tablets_free(t);
	return CTL_OK;
}

/* tablets [T]: every table's tablets, in table order, when T is absent. */
int
cmd_tablets(struct ctl *c, int argc, char **argv)
{
	char **names;
	size_t count;
	int rc, status = CTL_OK;

	if (argc == 1)
		return tablets_print(c, argv[0]);
	bt_error_clear();
	if ((rc = bt_table_list(c->store, &names, &count)) < 0)
		return ctl_fail(c, rc, NULL);
	/* Past a table the caller may not read, on to the others (as ls -l
	 * goes past what it cannot stat); the exit status tells. */
	for (size_t i = 0; i < count; i++)
		if (tablets_print(c, names[i]) != CTL_OK)
			status = CTL_FAIL;
	bt_names_free(names);
	return status;
}

/* split T ROW: a tablet boundary at ROW. */
int
cmd_split(struct ctl *c, int argc, char **argv)
{
	struct bt_bytes row;
	int rc;

	(void)argc;
	if (!ctl_arg_name(argv[1], &row))
		return ctl_usage(c, "bad row '%s' (want a name as the mount "
		    "spells it: %%XX escapes)", argv[1]);
	if (ctl_allow_admin(c, argv[0]) != CTL_OK)
		return CTL_FAIL;
	bt_error_clear();
	if ((rc = bt_table_split(c->store, argv[0], row)) < 0)
		return ctl_fail(c, rc, NULL);
	return CTL_OK;
}

/* A check in progress: problems go to c->out as they are found. */
struct check_job {
	struct ctl *c;
	struct progress p;
	uint64_t problems;
};

static void
check_report(void *arg, const char *problem)
{
	struct check_job *job = arg;

	job->problems++;
	progress_finish(&job->p);
	fprintf(job->c->out, "%s\n", problem);
	fflush(job->c->out);
}

static void
check_progress(void *arg, uint64_t done, uint64_t total)
{
	struct check_job *job = arg;
	char note[64];

	if (!job->p.on)
		return;
	job->p.total = total;
	snprintf(note, sizeof(note), "%" PRIu64 "/%" PRIu64 " files", done,
	    total);
	progress_update(&job->p, done, note);
}

static void
check_summary(struct ctl *c, uint64_t files, uint64_t bytes,
    uint64_t problems)
{
	fprintf(c->out, "checked %" PRIu64 " file%s, %" PRIu64 " bytes: ",
	    files, files == 1 ? "" : "s", bytes);
	if (problems == 0)
		fprintf(c->out, "OK\n");
	else
		fprintf(c->out, "%" PRIu64 " problem%s\n", problems,
		    problems == 1 ? "" : "s");
}

/*
 * Open the store read-only, so that nothing changes and commit-log
 * segments a crash left are checked too.  Damage that keeps the store from
 * opening (a log record that replay refuses) is itself the one problem
 * reported, and so is a file the catalog names that is missing.
 */
static int
check_open(struct ctl *c, struct check_job *job)
{
	struct bt_options opts;
	char catalog[4096];
	const char *d;
	size_t n = strlen(c->store_path);
	bool inside;
	int rc;

	/* The daemon's store, already open (the control socket). */
	if (c->store != NULL)
		return CTL_OK;
	/* A cell: its serving tablet server checks the store. */
	if (coord_address_is_cell(c->store_path)) {
		memset(&opts, 0, sizeof(opts));
		if ((rc = ctl_store_open(c, &opts)) < 0)
			return ctl_fail(c, rc, NULL);
		return CTL_OK;
	}
	/* As the other verbs say it, and leaving no LOCK behind. */
	snprintf(catalog, sizeof(catalog), "%s/catalog.db", c->store_path);
	if (access(catalog, F_OK) < 0 && errno == ENOENT)
		return ctl_error(c, "%s: not a tabletfs store (tabletctl init "
		    "makes one)", c->store_path);
	memset(&opts, 0, sizeof(opts));
	opts.read_only = true;
	if ((rc = ctl_store_open(c, &opts)) == 0)
		return CTL_OK;
	/* The file at fault, named inside the store. */
	d = bt_error_detail();
	inside = strncmp(d, c->store_path, n) == 0 && d[n] == '/';
	if (inside)
		for (d += n; *d == '/'; d++)
			;
	if (rc != BT_ECORRUPT && rc != BT_ECHECKSUM && rc != BT_EFORMAT &&
	    (rc != -ENOENT || !inside))
		return ctl_fail(c, rc, NULL);
	if (d[0] == '\0')
		d = bt_strerror(rc);
	check_report(job, d);
	check_summary(c, 0, 0, job->problems);
	return ctl_error(c, "the store does not open; nothing else was "
	    "checked");
}

int
cmd_check(struct ctl *c, int argc, char **argv)
{
	struct check_job job;
	uint64_t files = 0, bytes = 0;
	int rc, status;

	if (ctl_allow_admin(c, NULL) != CTL_OK)
		return CTL_FAIL;
	memset(&job, 0, sizeof(job));
	job.c = c;
	progress_init(&job.p, c->progress, c->err, "check", 0);
	if ((status = check_open(c, &job)) != CTL_OK)
		return status;
	bt_error_clear();
	rc = bt_store_check(c->store, check_report, check_progress, &job,
	    &files, &bytes);
	progress_finish(&job.p);
	if (rc < 0 && rc != BT_ECORRUPT)
		return ctl_fail(c, rc, NULL);
	check_summary(c, files, bytes, job.problems);
	return job.problems == 0 && rc == 0 ? CTL_OK : CTL_FAIL;
}
