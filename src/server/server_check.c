/*
 * server_check.c - verify a store for tabletctl check (bt_store_check):
 * the catalog database's own pages, every block of every SSTable the
 * catalog names, that the catalog and sst/ agree, that the location
 * hierarchy describes every tablet, every record of every commit-log
 * segment, and the segments that recovery kept in lost/ (each is a
 * problem until the user removes it).  Problems are reported one line
 * each, named by the file's path inside the store.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/server_int.h"
#include "sstable/sstable.h"
#include "tablet/ikey.h"
#include "util/alloc.h"
#include "util/error.h"

/* A file the catalog names: the first tablet naming it, and its size. */
struct named_file {
	uint64_t number;
	uint64_t tablet_id;
	uint64_t size;
};

struct check {
	struct server *s;
	void (*report)(void *arg, const char *problem);
	void (*progress)(void *arg, uint64_t done, uint64_t total);
	void *arg;
	uint64_t done, total;
	uint64_t files, bytes;
	uint64_t problems;
	struct named_file *named;
	size_t named_count;
};

static void __attribute__((format(printf, 3, 4)))
check_report(struct check *ck, const char *name, const char *fmt, ...)
{
	char line[1024];
	int n;
	va_list ap;

	ck->problems++;
	if (ck->report == NULL)
		return;
	n = snprintf(line, sizeof(line), "%s: ", name);
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	ck->report(ck->arg, line);
}

/* Report a failure found in path by its detail, without the detail's own
 * leading "path: ". */
static void
check_report_error(struct check *ck, const char *name, const char *path,
    int rc)
{
	const char *d = bt_error_detail();
	size_t n = strlen(path);

	if (d[0] == '\0')
		d = bt_strerror(rc);
	else if (strncmp(d, path, n) == 0 && d[n] == ':' && d[n + 1] == ' ')
		d += n + 2;
	check_report(ck, name, "%s", d);
}

static void
check_step(struct check *ck, uint64_t size)
{
	ck->files++;
	ck->bytes += size;
	ck->done++;
	if (ck->progress != NULL)
		ck->progress(ck->arg, ck->done, ck->total);
}

static int
named_cmp(const void *a, const void *b)
{
	const struct named_file *x = a, *y = b;

	return x->number < y->number ? -1 : x->number > y->number;
}

/* Gather the files every tablet of every table names, sorted by number,
 * each once (split children share their parent's files). */
static int
check_gather(struct check *ck)
{
	struct catalog *c = ck->s->catalog;
	char **names = NULL;
	size_t count = 0, cap = 0, n = 0;
	int rc;

	/* No flush or compaction names or deletes a file meanwhile. */
	mutex_assert_held(&ck->s->work_mu);
	if ((rc = catalog_table_list(c, &names, &count)) < 0)
		return rc;
	for (size_t i = 0; i < count && rc >= 0; i++) {
		struct catalog_table *t;
		struct catalog_tablet *tabs;
		size_t tab_count;

		if ((rc = catalog_table_get(c, names[i], &t)) != 0)
			continue;	/* BT_NOTFOUND: dropped meanwhile */
		rc = catalog_tablets_list(c, t->id, &tabs, &tab_count);
		catalog_table_free(t);
		if (rc != 0)
			continue;
		for (size_t j = 0; j < tab_count && rc >= 0; j++) {
			struct catalog_file *f = NULL;
			size_t fc = 0;

			if ((rc = catalog_files_list(c, tabs[j].id, &f,
			    &fc)) != 0)
				continue;
			if (n + fc > cap) {
				struct named_file *grown;

				cap = (n + fc) * 2;
				grown = bt_realloc(ck->named, cap *
				    sizeof(*grown));
				if (grown == NULL)
					rc = -ENOMEM;
				else
					ck->named = grown;
			}
			for (size_t k = 0; k < fc && rc >= 0; k++)
				ck->named[n++] = (struct named_file){
				    f[k].number, f[k].tablet_id, f[k].size };
			bt_free(f);
		}
		catalog_tablets_free(tabs, tab_count);
	}
	for (size_t i = 0; i < count; i++)
		bt_free(names[i]);
	bt_free(names);
	if (rc < 0)
		return rc;
	if (n > 0)
		qsort(ck->named, n, sizeof(*ck->named), named_cmp);
	ck->named_count = 0;
	for (size_t i = 0; i < n; i++)
		if (i == 0 || ck->named[i].number != ck->named[i - 1].number)
			ck->named[ck->named_count++] = ck->named[i];
	return 0;
}

/* Verify one named SSTable: it exists, has its size, opens, and every
 * block checks.  Only -ENOMEM stops the check. */
static int
check_sstable(struct check *ck, const struct named_file *f)
{
	struct server *s = ck->s;
	struct sst_reader *r;
	char path[4096], name[32];
	uint64_t size = 0;
	int rc;

	snprintf(path, sizeof(path), "%s/%016" PRIu64 ".sst", s->sst_dir,
	    f->number);
	snprintf(name, sizeof(name), "sst/%016" PRIu64 ".sst", f->number);
	bt_error_clear();
	if ((rc = env_path_size(s->env, path, &size)) == -ENOENT) {
		check_report(ck, name, "named by tablet %" PRIu64 " but missing",
		    f->tablet_id);
		goto out;
	}
	if (rc < 0) {
		check_report_error(ck, name, path, rc);
		goto out;
	}
	if (size != f->size)
		check_report(ck, name, "%" PRIu64 " bytes, the catalog says %"
		    PRIu64, size, f->size);
	if ((rc = sst_reader_open(s->env, path, 0, NULL,
	    ikey_row_prefix_length, &r)) == 0) {
		rc = sst_reader_verify(r);
		sst_reader_unref(r);
	}
	if (rc == -ENOMEM)
		return rc;
	if (rc < 0)
		check_report_error(ck, name, path, rc);
out:
	check_step(ck, size);
	return 0;
}

/* Report each *.sst in sst/ that no tablet names. */
static int
check_orphan(void *arg, const char *entry)
{
	struct check *ck = arg;
	struct named_file key;
	unsigned long long number;
	char tail[8], name[4096];

	if (sscanf(entry, "%llu%7s", &number, tail) != 2 ||
	    strcmp(tail, ".sst") != 0)
		return 0;
	key.number = number;
	if (ck->named_count > 0 && bsearch(&key, ck->named,
	    ck->named_count, sizeof(key), named_cmp) != NULL)
		return 0;
	snprintf(name, sizeof(name), "sst/%s", entry);
	check_report(ck, name, "not named by the catalog (orphan)");
	return 0;
}

/*
 * Read every record of one segment, reporting each damaged range (and
 * reading on past it, as recovery does).  A torn tail is normal only in
 * the last segment, which the open writer (or a crash) may have left short.
 */
static int
check_segment(struct check *ck, uint64_t number, bool last)
{
	struct server *s = ck->s;
	struct log_reader *r;
	struct slice rec;
	char path[4096], name[32];
	uint64_t size = 0, dropped, intact, off, n;
	int rc;

	log_segment_path(path, sizeof(path), s->log_dir, number);
	snprintf(name, sizeof(name), "log/%016" PRIu64 ".log", number);
	bt_error_clear();
	if ((rc = env_path_size(s->env, path, &size)) == -ENOENT)
		goto out_step;	/* collected since it was listed */
	if (rc == 0 && (rc = log_reader_open(s->env, path, &r)) == 0) {
		if (!last)
			log_reader_set_sealed(r);
		for (;;) {
			while ((rc = log_reader_next(r, &rec, NULL)) == 0)
				;
			if (rc != BT_ECHECKSUM && rc != BT_ECORRUPT)
				break;
			check_report_error(ck, name, path, rc);
			if ((rc = log_reader_skip_damage(r, &off, &n)) < 0)
				break;
		}
		dropped = log_reader_dropped_bytes(r);
		intact = log_reader_dropped_records(r);
		log_reader_close(r);
		if (rc == BT_DONE && dropped > 0 && !last)
			check_report(ck, name, "damaged record at offset %"
			    PRIu64 " (%" PRIu64 " bytes to the end) in a "
			    "segment that is not the last", size - dropped,
			    dropped);
		else if (rc == BT_DONE && intact > 0)
			check_report(ck, name, "damaged record at offset %"
			    PRIu64 " before %" PRIu64 " intact records, none "
			    "synced after it: replay drops them as torn by a "
			    "power loss", size - dropped, intact);
	}
	if (rc == -ENOMEM)
		return rc;
	if (rc < 0)
		check_report_error(ck, name, path, rc);
out_step:
	check_step(ck, size);
	return 0;
}

/* The names in lost/, as a growing array. */
struct lost_names {
	char **names;
	size_t count;
	int rc;
};

static int
lost_add(void *arg, const char *entry)
{
	struct lost_names *l = arg;
	char **grown, *copy;

	if ((copy = bt_strdup(entry)) == NULL ||
	    (grown = bt_realloc(l->names, (l->count + 1) *
	    sizeof(*grown))) == NULL) {
		bt_free(copy);
		l->rc = -ENOMEM;
		return 1;
	}
	l->names = grown;
	l->names[l->count++] = copy;
	return 0;
}

/*
 * A segment that recovery kept in lost/: report each damaged range it
 * skipped there and, in a NNN.torn.log (the last segment at recovery,
 * read as recovery read it), the torn tail it dropped with the intact
 * records after it; or the file itself when no damage shows now.  Every
 * file there is at least one problem.
 */
static int
check_lost(struct check *ck, const char *dir, const char *entry)
{
	struct log_reader *r;
	struct slice rec;
	char path[8192], name[300];
	uint64_t size = 0, off, n, intact, before = ck->problems;
	size_t len = strlen(entry);
	bool torn = len >= 9 && strcmp(entry + len - 9, ".torn.log") == 0;
	int rc;

	snprintf(path, sizeof(path), "%s/%s", dir, entry);
	snprintf(name, sizeof(name), "lost/%s", entry);
	bt_error_clear();
	if ((rc = env_path_size(ck->s->env, path, &size)) == 0 &&
	    (rc = log_reader_open(ck->s->env, path, &r)) == 0) {
		if (!torn)
			log_reader_set_sealed(r);
		for (;;) {
			while ((rc = log_reader_next(r, &rec, NULL)) == 0)
				;
			if (rc != BT_ECHECKSUM && rc != BT_ECORRUPT)
				break;
			if ((rc = log_reader_skip_damage(r, &off, &n)) < 0)
				break;
			check_report(ck, name, "%" PRIu64 " bytes damaged at "
			    "offset %" PRIu64 ", skipped at recovery", n, off);
		}
		n = log_reader_dropped_bytes(r);
		intact = log_reader_dropped_records(r);
		if (rc == BT_DONE && n > 0 && intact > 0)
			check_report(ck, name, "damaged record at offset %"
			    PRIu64 " before %" PRIu64 " intact records, none "
			    "synced after it: dropped at recovery as torn by "
			    "a power loss", size - n, intact);
		else if (rc == BT_DONE && n > 0)
			check_report(ck, name, "%" PRIu64 " bytes damaged at "
			    "offset %" PRIu64 ", skipped at recovery", n,
			    size - n);
		log_reader_close(r);
	}
	if (rc == -ENOMEM)
		return rc;
	if (rc < 0 && rc != BT_DONE)
		check_report_error(ck, name, path, rc);
	if (ck->problems == before)
		check_report(ck, name, "kept by recovery, which skipped "
		    "damage in it");
	check_step(ck, size);
	return 0;
}

/* A flaw in the location hierarchy (tablets that do not tile a table, a
 * location row in the wrong METADATA tablet, ...). */
static void
check_location(void *arg, const char *problem)
{
	check_report(arg, "catalog.db", "location hierarchy: %s", problem);
}

/* A problem in the catalog database's own pages. */
static void
check_catalog_page(void *arg, const char *problem)
{
	check_report(arg, "catalog.db", "%s", problem);
}

/* The catalog database: every page's checksum and SQLite's quick_check
 * (catalog_check); damage found is counted by the report. */
static int
check_catalog(struct check *ck)
{
	int rc = catalog_check(ck->s->catalog, check_catalog_page, ck);

	return rc < 0 ? rc : 0;
}

/*
 * A later step that needs a catalog page found damaged (and reported)
 * stops the check: the problems so far are the result, not an error.
 */
static int
check_catalog_stopped(struct check *ck, int rc)
{
	if (rc != BT_ECHECKSUM || ck->problems == 0)
		return rc;
	return bt_error_set(BT_ECORRUPT, "check: %" PRIu64 " problem%s found "
	    "(stopped at a damaged catalog page)", ck->problems,
	    ck->problems == 1 ? "" : "s");
}

int
server_check(struct server *s,
    void (*report)(void *arg, const char *problem),
    void (*progress)(void *arg, uint64_t done, uint64_t total), void *arg,
    uint64_t *files, uint64_t *bytes)
{
	struct check ck = { .s = s, .report = report, .progress = progress,
	    .arg = arg };
	struct lost_names lost = { 0 };
	uint64_t *segments = NULL;
	size_t segment_count = 0;
	char *store, lost_dir[4096];
	int rc;

	if ((store = env_path_parent(s->log_dir)) == NULL)
		return -ENOMEM;
	snprintf(lost_dir, sizeof(lost_dir), "%s/lost", store);
	bt_free(store);

	/* No flush or compaction may rename, name or delete a file while
	 * the catalog and sst/ are compared. */
	mutex_lock(&s->work_mu);
	if ((rc = check_catalog(&ck)) < 0)
		goto out_unlock;
	if ((rc = check_gather(&ck)) < 0)
		goto out_unlock;
	if ((rc = log_list_segments(s->env, s->log_dir, &segments,
	    &segment_count)) < 0)
		goto out_unlock;
	rc = env_dir_list(s->env, lost_dir, lost_add, &lost);
	if (rc == -ENOENT)
		rc = 0;
	if (rc == 0)
		rc = lost.rc;
	if (rc < 0)
		goto out_unlock;
	ck.total = ck.named_count + segment_count + lost.count;
	for (size_t i = 0; i < ck.named_count; i++)
		if ((rc = check_sstable(&ck, &ck.named[i])) < 0)
			goto out_unlock;
	if ((rc = env_dir_list(s->env, s->sst_dir, check_orphan, &ck)) < 0)
		goto out_unlock;
	if ((rc = catalog_location_check(s->catalog, check_location,
	    &ck)) < 0)
		goto out_unlock;
	mutex_unlock(&s->work_mu);

	for (size_t i = 0; i < segment_count; i++)
		if ((rc = check_segment(&ck, segments[i],
		    i + 1 == segment_count)) < 0)
			goto out;
	for (size_t i = 0; i < lost.count; i++)
		if ((rc = check_lost(&ck, lost_dir, lost.names[i])) < 0)
			goto out;
	rc = ck.problems > 0 ? BT_ECORRUPT : 0;
	if (rc < 0)
		bt_error_set(rc, "check: %" PRIu64 " problem%s found",
		    ck.problems, ck.problems == 1 ? "" : "s");
	else
		bt_error_clear();
	if (files != NULL)
		*files = ck.files;
	if (bytes != NULL)
		*bytes = ck.bytes;
	goto out;
out_unlock:
	mutex_unlock(&s->work_mu);
	rc = check_catalog_stopped(&ck, rc);
out:
	for (size_t i = 0; i < lost.count; i++)
		bt_free(lost.names[i]);
	bt_free(lost.names);
	bt_free(segments);
	bt_free(ck.named);
	return rc;
}
