/*
 * server_check.c - verify a store for tabletctl check (bt_store_check):
 * every block of every SSTable the catalog names, that the catalog and
 * sst/ agree, that the location hierarchy describes every tablet, and
 * every record of every commit-log segment.  Problems are
 * reported one line each, named by the file's path inside the store.
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
 * Read every record of one segment.  A torn tail is normal only in the
 * last segment, which the open writer (or a crash) may have left short.
 */
static int
check_segment(struct check *ck, uint64_t number, bool last)
{
	struct server *s = ck->s;
	struct log_reader *r;
	struct slice rec;
	char path[4096], name[32];
	uint64_t size = 0, dropped, intact;
	int rc;

	log_segment_path(path, sizeof(path), s->log_dir, number);
	snprintf(name, sizeof(name), "log/%016" PRIu64 ".log", number);
	bt_error_clear();
	if ((rc = env_path_size(s->env, path, &size)) == -ENOENT)
		goto out_step;	/* collected since it was listed */
	if (rc == 0 && (rc = log_reader_open(s->env, path, &r)) == 0) {
		if (!last)
			log_reader_set_sealed(r);
		while ((rc = log_reader_next(r, &rec, NULL)) == 0)
			;
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

/* A flaw in the location hierarchy (tablets that do not tile a table, a
 * location row in the wrong METADATA tablet, ...). */
static void
check_location(void *arg, const char *problem)
{
	check_report(arg, "catalog.db", "location hierarchy: %s", problem);
}

int
server_check(struct server *s,
    void (*report)(void *arg, const char *problem),
    void (*progress)(void *arg, uint64_t done, uint64_t total), void *arg,
    uint64_t *files, uint64_t *bytes)
{
	struct check ck = { .s = s, .report = report, .progress = progress,
	    .arg = arg };
	uint64_t *segments = NULL;
	size_t segment_count = 0;
	int rc;

	/* No flush or compaction may rename, name or delete a file while
	 * the catalog and sst/ are compared. */
	pthread_mutex_lock(&s->work_mu);
	if ((rc = check_gather(&ck)) < 0)
		goto out_unlock;
	if ((rc = log_list_segments(s->env, s->log_dir, &segments,
	    &segment_count)) < 0)
		goto out_unlock;
	ck.total = ck.named_count + segment_count;
	for (size_t i = 0; i < ck.named_count; i++)
		if ((rc = check_sstable(&ck, &ck.named[i])) < 0)
			goto out_unlock;
	if ((rc = env_dir_list(s->env, s->sst_dir, check_orphan, &ck)) < 0)
		goto out_unlock;
	if ((rc = catalog_location_check(s->catalog, check_location,
	    &ck)) < 0)
		goto out_unlock;
	pthread_mutex_unlock(&s->work_mu);

	for (size_t i = 0; i < segment_count; i++)
		if ((rc = check_segment(&ck, segments[i],
		    i + 1 == segment_count)) < 0)
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
	pthread_mutex_unlock(&s->work_mu);
out:
	bt_free(segments);
	bt_free(ck.named);
	return rc;
}
