/*
 * server_schema.c - schema changes, flushes and compactions on request, and
 * statistics of the tablet server (server.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/server_int.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/hash.h"

/* ---- Schema ---- */

/* Check a GC policy and write its canonical spelling into dst. */
static int
gc_policy_canonical(const char *text, char *dst, size_t size)
{
	struct gc_policy *p;
	int rc;

	if ((rc = gc_policy_parse(text ? text : "never", &p)) < 0)
		return rc;
	if (gc_policy_format(p, dst, size) >= size)
		rc = bt_error_set(-EINVAL, "gc policy too long");
	gc_policy_free(p);
	return rc;
}

/*
 * A schema change in memory, built inside the catalog's transaction
 * (struct catalog_prepare) and put in place after its commit, where
 * nothing can fail: a table changed (its new schema and each tablet's
 * change), or a table made (new, its slot in s->tables reserved).
 */
struct schema_prep {
	struct catalog_prepare prepare;
	struct server *s;
	struct server_table *t;		/* the table changed (a ref) */
	struct tablet_map *map;		/* its tablets, referenced */
	struct tablet_schema *schema;	/* its new schema */
	struct server_access *access;	/* and who may use it */
	struct tablet_schema_change **changes;
	struct server_table *made;	/* the table made */
};

static int
schema_prepare(void *arg, const struct catalog_table *ct,
    const struct catalog_tablet *tablets, size_t tablet_count)
{
	struct schema_prep *p = arg;
	int rc;

	/* Between schema_change_begin() and schema_change_end(). */
	mutex_assert_held(&p->s->work_mu);
	mutex_assert_held(&p->s->apply_mu);
	(void)tablets;
	(void)tablet_count;
	if ((rc = tablet_schema_new(ct, &p->schema)) < 0 ||
	    (rc = server_access_new(ct, &p->access)) < 0)
		return rc;
	p->map = server_table_map(p->t);
	if ((p->changes = bt_calloc(p->map->count + 1,
	    sizeof(*p->changes))) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < p->map->count; i++)
		if ((rc = tablet_schema_prepare(p->map->tablets[i], p->schema,
		    &p->changes[i])) < 0)
			return rc;
	return 0;
}

/* A table made: built, with its slot reserved (tables_mu is held). */
static int
table_prepare(void *arg, const struct catalog_table *ct,
    const struct catalog_tablet *tablets, size_t tablet_count)
{
	struct schema_prep *p = arg;
	int rc;

	mutex_assert_held(&p->s->tables_mu);
	if ((rc = server_tables_reserve_locked(p->s)) < 0)
		return rc;
	return server_table_build(p->s, ct, tablets, tablet_count,
	    SERVER_TABLETS_MADE, &p->made);
}

static void
schema_prep_release(struct schema_prep *p)
{
	for (size_t i = 0; p->changes != NULL && i < p->map->count; i++)
		tablet_schema_change_free(p->changes[i]);
	bt_free(p->changes);
	bt_free(p->access);
	tablet_schema_unref(p->schema);
	server_tablet_map_unref(p->map);
	server_table_unref(p->made);
	server_table_unref(p->t);
}

/*
 * A schema change that the catalog committed and that memory could not
 * follow (rc): the running store would show the old schema and the new
 * one mixed, so it refuses writes until it is reopened, which loads what
 * the catalog says.  Returns rc.  Caller
 * holds neither tables_mu nor apply_mu.  A change prepared before its
 * commit (schema_prep) gets here only if a tablet gained files between
 * the two, which the locks the change holds rule out.
 */
static int
schema_diverged(struct server *s, const char *table, int rc)
{
	mutex_assert_not_held(&s->tables_mu);
	mutex_assert_not_held(&s->apply_mu);
	rc = bt_error_set(rc, "table %s: schema changed in the catalog but "
	    "not in memory; reopen the store", table);
	mutex_lock(&s->apply_mu);
	if (s->broken == 0)
		s->broken = rc;
	mutex_unlock(&s->apply_mu);
	return rc;
}

/*
 * Start a change of table's schema: the prepare to hand the catalog.
 * Until schema_change_end(), no flush, compaction, split or merge
 * (work_mu) and no freeze (apply_mu) changes the table's tablets, so
 * what the prepare builds still fits them after the commit.  Writes wait
 * for the catalog's commit meanwhile, as they do for a split's.
 */
static int
schema_change_begin(struct server *s, const char *table,
    struct schema_prep *p)
{
	int rc;

	memset(p, 0, sizeof(*p));
	p->prepare.fn = schema_prepare;
	p->prepare.arg = p;
	p->s = s;
	if ((rc = server_table_lookup(s, table, &p->t)) < 0)
		return rc;
	mutex_lock(&s->work_mu);
	mutex_lock(&s->apply_mu);
	return 0;
}

/* End the change begun by schema_change_begin(): rc, the catalog's
 * result; install what was prepared if it committed. */
static int
schema_change_end(struct server *s, struct schema_prep *p, int rc)
{
	struct server_access *old_access;
	struct tablet_schema *old;
	int irc = 0;

	mutex_assert_held(&s->work_mu);
	mutex_assert_held(&s->apply_mu);
	if (rc == 0) {
		mutex_lock(&s->tables_mu);
		old = p->t->schema;
		p->t->schema = p->schema;
		p->schema = NULL;
		old_access = p->t->access;
		p->t->access = p->access;
		p->access = NULL;
		mutex_unlock(&s->tables_mu);
		tablet_schema_unref(old);
		bt_free(old_access);
		for (size_t i = 0; i < p->map->count; i++) {
			int trc = tablet_schema_install(p->changes[i]);

			p->changes[i] = NULL;
			if (irc == 0)
				irc = trc;
		}
	}
	mutex_unlock(&s->apply_mu);
	mutex_unlock(&s->work_mu);
	if (irc < 0)
		rc = schema_diverged(s, p->t->name, irc);
	schema_prep_release(p);
	return rc;
}

static int
check_writable(struct server *s)
{
	if (s->opts.read_only)
		return bt_error_set(-EROFS, "store is read-only");
	return 0;
}

int
server_table_create(struct server *s, const char *name,
    const struct catalog_access *access,
    const struct catalog_family *families, size_t family_count,
    const struct slice *splits, size_t split_count, uint64_t tablet_size)
{
	struct catalog_family *fams;
	struct schema_prep p;
	uint64_t max = server_tablet_size_max(s);
	int rc;

	if ((rc = check_writable(s)) < 0)
		return rc;
	if (tablet_size == 0)
		tablet_size = CATALOG_DEFAULT_TABLET_SIZE < max ?
		    CATALOG_DEFAULT_TABLET_SIZE : max;
	else if (tablet_size > max)
		return bt_error_set(-EINVAL, "tablet_size of %" PRIu64
		    " bytes: at most %" PRIu64 " on this storage, half its "
		    "largest file (%" PRIu64 " bytes, the RADOS "
		    "osd_max_object_size), as a compaction writes a tablet's "
		    "data as one SSTable", tablet_size, max,
		    env_max_file_size(s->env));
	if ((fams = bt_calloc(family_count + 1, sizeof(*fams))) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < family_count; i++) {
		fams[i] = families[i];
		/* A new table's id is new: no family of its has data
		 * from before. */
		fams[i].created_seq = 0;
		if (fams[i].group[0] == '\0')
			snprintf(fams[i].group, sizeof(fams[i].group), "%s",
			    CATALOG_DEFAULT_GROUP);
		if ((rc = gc_policy_canonical(families[i].gc_policy[0] ?
		    families[i].gc_policy : "never", fams[i].gc_policy,
		    sizeof(fams[i].gc_policy))) < 0)
			goto out;
	}
	memset(&p, 0, sizeof(p));
	p.prepare.fn = table_prepare;
	p.prepare.arg = &p;
	p.s = s;
	mutex_lock(&s->tables_mu);
	rc = catalog_table_create_as(s->catalog, name, access,
	    tablet_size, fams,
	    family_count, NULL, 0, splits, split_count, NULL, &p.prepare);
	if (rc == 0) {
		s->tables[s->table_count++] = p.made;	/* reserved */
		/* Kept, for the assignment below. */
		atomic_fetch_add(&p.made->refs, 1);
		p.t = p.made;
		p.made = NULL;
	}
	mutex_unlock(&s->tables_mu);
	/* A cell's root server serves the tablets it makes. */
	if (rc == 0 && s->cell)
		rc = server_cell_tablets_assign(s, p.t);
	schema_prep_release(&p);
out:
	bt_free(fams);
	return rc;
}

int
server_table_drop(struct server *s, const char *name)
{
	struct catalog_tablet *cts = NULL;
	struct server_table *t = NULL;
	uint64_t *files = NULL;
	size_t count = 0, file_count = 0;
	int rc;

	if (name == NULL)
		return bt_error_set(-EINVAL, "no table name");
	if ((rc = check_writable(s)) < 0)
		return rc;
	mutex_lock(&s->tables_mu);
	for (size_t i = 0; i < s->table_count; i++) {
		if (strcmp(s->tables[i]->name, name) == 0) {
			t = s->tables[i];
			break;
		}
	}
	if (t == NULL) {
		mutex_unlock(&s->tables_mu);
		return bt_error_set(-ENOENT, "table %s: no such table", name);
	}
	/* Remember the files, so they can go once the catalog forgets. */
	rc = catalog_tablets_list(s->catalog, t->id, &cts, &count);
	for (size_t i = 0; i < count && rc == 0; i++) {
		struct catalog_file *f = NULL;
		size_t n = 0;
		uint64_t *grown;

		if ((rc = catalog_files_list(s->catalog, cts[i].id, &f,
		    &n)) < 0)
			break;
		grown = bt_realloc(files, (file_count + n + 1) *
		    sizeof(*files));
		if (grown == NULL)
			rc = -ENOMEM;
		else
			files = grown;
		for (size_t j = 0; j < n && rc == 0; j++)
			files[file_count++] = f[j].number;
		bt_free(f);
	}
	if (rc == 0)
		rc = catalog_table_drop(s->catalog, name);
	if (rc == 0) {
		for (size_t i = 0; i < s->table_count; i++)
			if (s->tables[i] == t)
				s->tables[i] = s->tables[--s->table_count];
		atomic_store(&t->dropped, true);
	}
	mutex_unlock(&s->tables_mu);
	if (rc == 0) {
		/* Writers of the table waiting for memtable room leave. */
		mutex_lock(&s->bg_mu);
		pthread_cond_broadcast(&s->bg_done_cv);
		mutex_unlock(&s->bg_mu);
		/* Under the work lock, so that check sees no half-gone table. */
		mutex_lock(&s->work_mu);
		for (size_t i = 0; i < file_count; i++) {
			char path[4096];

			snprintf(path, sizeof(path), "%s/%016" PRIu64 ".sst",
			    s->sst_dir, files[i]);
			env_path_remove(s->env, path);
		}
		mutex_unlock(&s->work_mu);
		server_table_unref(t);
	}
	catalog_tablets_free(cts, count);
	bt_free(files);
	return rc;
}

int
server_table_list(struct server *s, char ***names, size_t *count)
{
	return catalog_table_list(s->catalog, names, count);
}

int
server_table_get(struct server *s, const char *name,
    struct catalog_table **out)
{
	int rc;

	if (name == NULL)
		return bt_error_set(-EINVAL, "no table name");
	if ((rc = catalog_table_get(s->catalog, name, out)) == BT_NOTFOUND)
		rc = bt_error_set(-ENOENT, "table %s: no such table", name);
	return rc;
}

/*
 * The highest flushed_seq of table's tablets in *flushed, once no log
 * of a server but those named (count, and this one) may replay a record
 * of them (catalog_table_replayed()).
 */
static int
family_floor(struct server *s, const char *table, const char *const *servers,
    size_t count, uint64_t *flushed)
{
	const char **names;
	int rc;

	if ((names = bt_calloc(count + 1, sizeof(*names))) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < count; i++)
		names[i] = servers[i];
	names[count] = s->name;
	rc = catalog_table_replayed(s->catalog, table, names, count + 1,
	    flushed);
	bt_free(names);
	return rc;
}

int
server_family_create(struct server *s, const char *table,
    const struct catalog_family *f)
{
	struct catalog_family fam = *f;
	struct schema_prep p;
	int rc;

	if ((rc = check_writable(s)) < 0)
		return rc;
	if (fam.group[0] == '\0')
		snprintf(fam.group, sizeof(fam.group), "%s",
		    CATALOG_DEFAULT_GROUP);
	if ((rc = gc_policy_canonical(f->gc_policy[0] ? f->gc_policy :
	    "never", fam.gc_policy, sizeof(fam.gc_policy))) < 0)
		return rc;
	if ((rc = schema_change_begin(s, table, &p)) < 0)
		return rc;
	if (fam.created_seq < server_next_seq(s))
		fam.created_seq = server_next_seq(s);
	if ((rc = server_seq_raise_created_locked(s, fam.created_seq)) < 0)
		return schema_change_end(s, &p, rc);
	return schema_change_end(s, &p, catalog_family_create(s->catalog,
	    table, &fam, &p.prepare));
}

int
server_family_create_after(struct server *s, const char *table,
    const struct catalog_family *f, const char *const *servers,
    size_t count)
{
	struct catalog_family fam = *f;
	uint64_t flushed;
	int rc;

	if (s->cell) {
		if ((rc = family_floor(s, table, servers, count,
		    &flushed)) < 0)
			return rc;
		if (fam.created_seq <= flushed)
			fam.created_seq = flushed + 1;
	}
	return server_family_create(s, table, &fam);
}

int
server_family_drop(struct server *s, const char *table, const char *family)
{
	struct schema_prep p;
	int rc;

	if ((rc = check_writable(s)) < 0)
		return rc;
	if ((rc = schema_change_begin(s, table, &p)) < 0)
		return rc;
	return schema_change_end(s, &p, catalog_family_drop(s->catalog,
	    table, family, &p.prepare));
}

int
server_family_set_gc(struct server *s, const char *table, const char *family,
    const char *gc_policy)
{
	char canonical[256];
	struct schema_prep p;
	int rc;

	if ((rc = check_writable(s)) < 0 ||
	    (rc = gc_policy_canonical(gc_policy, canonical,
	    sizeof(canonical))) < 0)
		return rc;
	if ((rc = schema_change_begin(s, table, &p)) < 0)
		return rc;
	return schema_change_end(s, &p, catalog_family_set_gc(s->catalog,
	    table, family, canonical, &p.prepare));
}

int
server_group_set(struct server *s, const char *table,
    const struct catalog_group *g)
{
	struct schema_prep p;
	int rc;

	if ((rc = check_writable(s)) < 0)
		return rc;
	if ((rc = schema_change_begin(s, table, &p)) < 0)
		return rc;
	return schema_change_end(s, &p, catalog_group_set(s->catalog, table,
	    g, &p.prepare));
}

int
server_access_set(struct server *s, const char *table, const char *family,
    const struct catalog_access *change)
{
	struct schema_prep p;
	int rc;

	if ((rc = check_writable(s)) < 0)
		return rc;
	if ((rc = schema_change_begin(s, table, &p)) < 0)
		return rc;
	return schema_change_end(s, &p, catalog_access_set(s->catalog, table,
	    family, change, &p.prepare));
}

/* ---- Administration ---- */

/*
 * Flush what tablet t holds in memory, on this thread (work_mu held, so
 * no background flush runs meanwhile): a frozen memtable, then the
 * active one frozen in the apply turn.  A writer may freeze it first
 * (its memtable full), and that one is flushed in turn; past three such
 * turns the writers keep it full and what they write is left.  A
 * compaction that was asked for flushes with the parallel builder, as
 * it then compacts.
 */
static int
compact_flush(struct server *s, struct tablet *t)
{
	int rc;

	mutex_assert_held(&s->work_mu);
	for (int turn = 0; turn < 3; turn++) {
		if ((rc = tablet_flush(t, true)) < 0)
			return rc;
		mutex_lock(&s->apply_mu);
		rc = master_freeze(s, t);
		mutex_unlock(&s->apply_mu);
		if (rc == BT_NOTFOUND)
			return 0;
		if (rc == 0) {
			rc = tablet_flush(t, true);
			return rc > 0 ? 0 : rc;
		}
		if (rc != -EBUSY)
			return rc;
	}
	return 0;
}

/*
 * Flush every tablet of table (NULL: of every table) and, when compact,
 * compact it, on the caller's thread, holding the work lock so that no
 * background flush or compaction runs meanwhile: the background would
 * flush only after waiting a round, and might then merge the new file
 * with others just before this rewrites them all.  Returns the first
 * error, with its detail (the later steps set details of their own).
 */
static int
compact_all(struct server *s, const char *table, bool major, bool compact)
{
	struct server_table **tables;
	char detail[512] = "";
	size_t count;
	int rc, first = 0;

	if ((rc = server_tables_snapshot(s, &tables, &count)) < 0)
		return rc;
	mutex_lock(&s->work_mu);
	for (size_t i = 0; i < count; i++) {
		struct tablet_map *m;

		if (table != NULL && strcmp(tables[i]->name, table) != 0)
			continue;
		m = server_table_map(tables[i]);
		for (size_t j = 0; j < m->count; j++) {
			struct tablet *t = m->tablets[j];

			if ((rc = compact_flush(s, t)) == 0 && compact)
				rc = tablet_compact(t, major, server_now(s));
			if (rc < 0 && first == 0) {
				first = rc;
				snprintf(detail, sizeof(detail), "%s",
				    bt_error_detail());
			}
		}
		server_tablet_map_unref(m);
		/* Then split or merge what the compaction resized, as a
		 * background round would. */
		if (compact && (rc = master_balance_table(s, tables[i])) < 0 &&
		    first == 0) {
			first = rc;
			snprintf(detail, sizeof(detail), "%s",
			    bt_error_detail());
		}
	}
	mutex_unlock(&s->work_mu);
	server_tables_snapshot_free(tables, count);
	/* Writers that wait for memory wait for a round's end. */
	mutex_lock(&s->bg_mu);
	pthread_cond_broadcast(&s->bg_done_cv);
	mutex_unlock(&s->bg_mu);
	server_space_note(s, first);
	server_segments_collect(s);
	/* Room again: take the reserve back. */
	(void)server_space_full(s);
	if (first < 0 && detail[0] != '\0')
		return bt_error_set(first, "%s", detail);
	return first;
}

int
server_flush(struct server *s)
{
	struct server_table **tables;
	size_t count;
	int rc;

	if ((rc = check_writable(s)) < 0)
		return rc;
	/* The background flushes nothing while the disk is full. */
	if (server_space_full(s))
		return compact_all(s, NULL, false, false);
	for (int round = 0; round < 3; round++) {
		bool busy = false;

		if ((rc = server_tables_snapshot(s, &tables, &count)) < 0)
			return rc;
		mutex_lock(&s->apply_mu);
		for (size_t i = 0; i < count; i++) {
			struct tablet_map *m = server_table_map(tables[i]);

			for (size_t j = 0; j < m->count; j++)
				if (master_freeze(s, m->tablets[j]) ==
				    -EBUSY)
					busy = true;
			server_tablet_map_unref(m);
		}
		mutex_unlock(&s->apply_mu);
		server_tables_snapshot_free(tables, count);
		if ((rc = server_background_wait_round(s)) < 0)
			return rc;
		if (!busy)
			break;
	}
	return 0;
}

int
server_compact(struct server *s, const char *table, bool major)
{
	int rc;

	if ((rc = check_writable(s)) < 0)
		return rc;
	if (table != NULL) {	/* a table that is not there is an error */
		struct server_table *t;

		if ((rc = server_table_lookup(s, table, &t)) < 0)
			return rc;
		server_table_unref(t);
	}
	return compact_all(s, table, major, true);
}

int
server_split(struct server *s, const char *table, struct slice row)
{
	struct server_table *t;
	int rc;

	if ((rc = check_writable(s)) < 0)
		return rc;
	if (row.n == 0 || row.n > SERVER_MAX_ROW)
		return bt_error_set(-EINVAL, "split row of %zu bytes (1 to %u "
		    "allowed)", row.n, SERVER_MAX_ROW);
	if ((rc = server_table_lookup(s, table, &t)) < 0)
		return rc;
	mutex_lock(&s->work_mu);
	rc = master_split_at(s, t, row, false);
	mutex_unlock(&s->work_mu);
	server_table_unref(t);
	return rc;
}

int
server_table_tablets(struct server *s, const char *table,
    struct catalog_tablet **tablets, struct tablet_stats **stats,
    size_t *count)
{
	struct catalog_tablet *list;
	struct tablet_stats *st;
	struct server_table *t;
	struct tablet_map *m;
	size_t n = 0;
	int rc = 0;

	if ((rc = server_table_lookup(s, table, &t)) < 0)
		return rc;
	m = server_table_map(t);
	list = bt_calloc(m->count + 1, sizeof(*list));
	st = bt_calloc(m->count + 1, sizeof(*st));
	if (list == NULL || st == NULL)
		rc = -ENOMEM;
	for (; rc == 0 && n < m->count; n++) {
		struct tablet *tab = m->tablets[n];
		struct slice a = tablet_start(tab), b = tablet_end(tab);

		buf_init(&list[n].start);
		buf_init(&list[n].end);
		list[n].id = tablet_id(tab);
		list[n].table_id = t->id;
		list[n].flushed_seq = tablet_flushed_seq(tab);
		tablet_get_stats(tab, &st[n]);
		if ((rc = buf_set(&list[n].start, a.p, a.n)) == 0)
			rc = buf_set(&list[n].end, b.p, b.n);
	}
	server_tablet_map_unref(m);
	server_table_unref(t);
	if (rc < 0) {
		catalog_tablets_free(list, n);
		bt_free(st);
		return rc;
	}
	*tablets = list;
	*stats = st;
	*count = n;
	return 0;
}

const char *
server_assign_name(const struct server *s)
{
	return s->name;
}

uint64_t
server_last_seq(struct server *s)
{
	return atomic_load(&s->visible_seq);
}

struct catalog *
server_catalog(struct server *s)
{
	return s->catalog;
}

void
server_get_stats(struct server *s, struct server_stats *out)
{
	struct server_table **tables;
	struct log_writer_stats ls = { 0 };
	struct cache_stats cs;
	size_t count;

	memset(out, 0, sizeof(*out));
	out->mutations = atomic_load(&s->mutations);
	out->reads = atomic_load(&s->reads);
	out->last_seq = server_last_seq(s);
	if (s->log != NULL)
		log_writer_get_stats(s->log, &ls);
	out->log_syncs = ls.syncs;
	out->log_batches = ls.batches;
	out->writes_refused = s->broken < 0 ? s->broken : ls.poison;
	server_space_get_stats(s, &out->disk_full, &out->reserve_bytes);
	mutex_lock(&s->writes.mu);
	out->write_gathers = s->writes.gathers;
	mutex_unlock(&s->writes.mu);
	mutex_lock(&s->bg_mu);
	out->write_waits = s->write_waits;
	out->memory_trims = s->memory_trims;
	mutex_unlock(&s->bg_mu);
	mutex_lock(&s->apply_mu);
	out->memtable_peak_bytes = s->memtable_peak;
	mutex_unlock(&s->apply_mu);
	cache_get_stats(s->cache, &cs);
	out->cache_hits = cs.hits;
	out->cache_misses = cs.misses;
	if (server_tables_snapshot(s, &tables, &count) < 0)
		return;
	for (size_t i = 0; i < count; i++) {
		struct tablet_map *m = server_table_map(tables[i]);

		out->tablets += m->count;
		for (size_t j = 0; j < m->count; j++) {
			struct tablet_stats ts;

			tablet_get_stats(m->tablets[j], &ts);
			out->flushes += ts.flushes;
			out->compactions += ts.compactions;
			out->sstables += ts.sstables;
			out->damaged_sstables += ts.damaged_sstables;
			out->memtable_bytes += ts.memtable_bytes;
		}
		server_tablet_map_unref(m);
	}
	out->splits = atomic_load(&s->splits);
	out->merges = atomic_load(&s->merges);
	out->files_collected = atomic_load(&s->files_collected);
	server_tables_snapshot_free(tables, count);
}
