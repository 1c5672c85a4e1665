/*
 * master.c - the master's duties in a single-process store (Bigtable
 * 5.2, 5.3): splitting tablets that outgrew their table's tablet_size,
 * merging neighbours that shrank, and collecting the files that the
 * catalog no longer names.
 *
 * A split or merge has one commit point, the catalog transaction that
 * replaces the old tablets' rows by the new ones (catalog_tablet_replace).
 * Before it, the old tablets are flushed so that the new ones need nothing
 * from the commit log before the redo point they are given; inside its
 * transaction, before the commit, the new tablets are built in memory,
 * and after it they are installed in the table's map.  All of this
 * happens in the apply turn (server.apply_mu), so no mutation is
 * applied to a tablet between its last flush and its replacement.  A crash
 * before the commit point leaves the old tablets; after it, reopening
 * loads the new ones, and log replay routes each record by its row.
 * Nothing is copied: the new tablets share the old SSTables, each reading
 * only its own rows, until compactions rewrite them.
 *
 * A cell's server with a remote catalog splits the tablets it serves the
 * same way, in the same apply turn, through the root's fenced replace
 * (catalog_tablet_replace_as(), CATALOG_TABLET_REPLACE): no prepare
 * crosses the wire, so the new tablets are built just before the call
 * and numbered just after (replace_commit_remote()).  It merges the
 * neighbours it serves both of the same way: the root's replace takes
 * two parents as it takes one.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "server/server_int.h"
#include "util/alloc.h"
#include "util/error.h"

/* Balance rounds between two sweeps of sst/ (a round is about 1 s). */
#define MASTER_SWEEP_ROUNDS 60
/* Splits, and merges, of one table in one balance round, at most. */
#define MASTER_MAX_CHANGES 64

/* ---- Garbage collection of files ---- */

struct sweep {
	struct server *s;
	const char *dir;
	bool tmp;
	uint64_t horizon;	/* sst/: only numbers up to this go */
};

static int
sweep_one(void *arg, const char *name)
{
	struct sweep *w = arg;
	char path[4096];
	unsigned long long number;
	char tail[8];

	if (!w->tmp) {
		if (sscanf(name, "%llu%7s", &number, tail) != 2 ||
		    strcmp(tail, ".sst") != 0 || number > w->horizon)
			return 0;
		if (catalog_file_is_live(w->s->catalog, number) != 0)
			return 0;	/* named, or the catalog cannot say */
	}
	snprintf(path, sizeof(path), "%s/%s", w->dir, name);
	if (env_path_remove(w->s->env, path) == 0 && !w->tmp)
		atomic_fetch_add(&w->s->files_collected, 1);
	return 0;
}

/*
 * The numbers of sst/ that the sweep may delete when unnamed: every one
 * in a store that one server serves; on a cell's root server, those
 * given before the previous sweep (none at the first): another server
 * may be writing a file it numbered since and not yet named, which the
 * catalog would otherwise see as garbage.  A flush or compaction slower
 * than a sweep's period (MASTER_SWEEP_ROUNDS) is not covered.
 */
static int
sweep_horizon(struct server *s, uint64_t *horizon)
{
	uint64_t last;
	int rc;

	if (!s->cell) {
		*horizon = UINT64_MAX;
		return 0;
	}
	if ((rc = catalog_meta_get(s->catalog, "last_number", 0, &last)) < 0)
		return rc;
	*horizon = s->sweep_horizon;
	s->sweep_horizon = last;
	return 0;
}

int
master_collect_files(struct server *s)
{
	struct sweep tmp = { s, s->tmp_dir, true, 0 };
	struct sweep sst = { s, s->sst_dir, false, 0 };
	int rc;

	mutex_assert_held(&s->work_mu);
	if (atomic_load(&s->bulk_loads) == 0 &&
	    (rc = env_dir_list(s->env, s->tmp_dir, sweep_one, &tmp)) < 0)
		return rc;
	/* sst/ is the root's server's alone (server.h, catalog). */
	if (s->catalog_remote)
		return 0;
	if ((rc = sweep_horizon(s, &sst.horizon)) < 0)
		return rc;
	return env_dir_list(s->env, s->sst_dir, sweep_one, &sst);
}

/* ---- Assignment ---- */

int
master_assign_tablets(struct server *s)
{
	struct catalog_location *locs = NULL;
	struct catalog_meta_tablet *metas = NULL;
	size_t n = 0, m = 0;
	int rc;

	if ((rc = catalog_tablets_unassigned(s->catalog, &locs, &n)) < 0)
		return rc;
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = catalog_tablet_assign(s->catalog, locs[i].tablet_id,
		    s->name);
	catalog_locations_free(locs, n);
	if (rc < 0 || (rc = catalog_meta_tablets_list(s->catalog, &metas,
	    &m)) < 0)
		return rc;
	for (size_t i = 0; i < m && rc == 0; i++)
		if (strcmp(metas[i].server, s->name) != 0)
			rc = catalog_meta_tablet_assign(s->catalog,
			    metas[i].id, s->name);
	catalog_meta_tablets_free(metas, m);
	return rc;
}

/* ---- Memory ---- */

size_t
master_freeze_size(const struct server *s)
{
	uint64_t half = s->opts.memtable_size / 2;

	return half < server_tablet_size_max(s) ? half :
	    server_tablet_size_max(s);
}

void
master_limit_memory(struct server *s)
{
	size_t limit = master_freeze_size(s);
	struct server_table **tables;
	struct tablet_map **maps;
	size_t count;
	uint64_t total = 0;

	if (server_tables_snapshot(s, &tables, &count) < 0)
		return;
	if ((maps = bt_calloc(count + 1, sizeof(*maps))) == NULL)
		goto out;
	for (size_t i = 0; i < count; i++) {
		maps[i] = server_table_map(tables[i]);
		for (size_t j = 0; j < maps[i]->count; j++)
			total += tablet_memtable_usage(maps[i]->tablets[j]);
	}
	/* Over: freeze the largest memtables, down to half of it. */
	while (total > limit) {
		struct tablet *big = NULL;
		size_t most = 0;

		for (size_t i = 0; i < count; i++)
			for (size_t j = 0; j < maps[i]->count; j++) {
				struct tablet *t = maps[i]->tablets[j];
				size_t n = tablet_memtable_usage(t);

				if (n > most && !tablet_has_frozen(t)) {
					most = n;
					big = t;
				}
			}
		if (big == NULL)
			break;
		mutex_lock(&s->apply_mu);
		if (master_freeze(s, big) < 0)
			most = total;	/* cannot: stop here */
		mutex_unlock(&s->apply_mu);
		total -= most < total ? most : total;
		if (total <= limit / 2)
			break;
	}
	for (size_t i = 0; i < count; i++)
		server_tablet_map_unref(maps[i]);
	bt_free(maps);
out:
	server_tables_snapshot_free(tables, count);
}

/* ---- Flushing in the apply turn ---- */

int
master_freeze(struct server *s, struct tablet *t)
{
	mutex_assert_held(&s->apply_mu);
	return s->broken < 0 ? s->broken : tablet_freeze(t);
}

int
master_drain_locked(struct server *s, struct tablet *t)
{
	int rc;

	mutex_assert_held(&s->apply_mu);
	mutex_assert_held(&s->work_mu);
	assert(s->broken == 0);
	for (int i = 0; i < 3; i++) {
		if ((rc = tablet_flush(t, false)) < 0)
			return rc;
		rc = tablet_freeze(t);
		if (rc == BT_NOTFOUND)
			return 0;
		if (rc < 0 && rc != -EBUSY)
			return rc;
	}
	return bt_error_set(-EBUSY, "tablet %" PRIu64 ": cannot drain its "
	    "memtable", tablet_id(t));
}

int
master_preflush(struct server *s, struct tablet *t)
{
	int rc;

	mutex_lock(&s->apply_mu);
	rc = master_freeze(s, t);
	mutex_unlock(&s->apply_mu);
	if (rc < 0 && rc != -EBUSY)
		return rc;
	rc = tablet_flush(t, false);
	return rc > 0 ? 0 : rc;
}

/* ---- Catalog rows ---- */

/* Whether the catalog row of tablet id says its start came from a split
 * for size: 1, 0, or an error. */
static int
tablet_auto_split(struct server *s, uint64_t table_id, uint64_t id)
{
	struct catalog_tablet *list = NULL;
	size_t n = 0;
	int rc;

	if ((rc = catalog_tablets_list(s->catalog, table_id, &list, &n)) != 0)
		return rc < 0 ? rc : -ENOENT;
	rc = bt_error_set(-ENOENT, "catalog: no tablet %" PRIu64, id);
	for (size_t i = 0; i < n; i++)
		if (list[i].id == id)
			rc = list[i].auto_split;
	catalog_tablets_free(list, n);
	return rc;
}

static void
row_init(struct catalog_tablet *ct, struct slice start, struct slice end,
    uint64_t flushed_seq, bool auto_split, int *rc)
{
	buf_init(&ct->start);
	buf_init(&ct->end);
	ct->flushed_seq = flushed_seq;
	ct->auto_split = auto_split;
	if (*rc == 0 && (*rc = buf_set(&ct->start, start.p, start.n)) == 0)
		*rc = buf_set(&ct->end, end.p, end.n);
}

static void
row_release(struct catalog_tablet *ct)
{
	buf_release(&ct->start);
	buf_release(&ct->end);
}

/*
 * The files of the given tablets, each once, for the catalog row of a
 * tablet made from them.
 */
static int
files_union(struct server *s, struct tablet *const *from, size_t n,
    struct catalog_file **out, size_t *count)
{
	struct catalog_file *all = NULL, *files;
	size_t total = 0, k;
	int rc = 0;

	for (size_t i = 0; i < n && rc == 0; i++) {
		struct catalog_file *grown;

		if ((rc = catalog_files_list(s->catalog, tablet_id(from[i]),
		    &files, &k)) != 0) {
			rc = rc < 0 ? rc : -ENOENT;
			break;
		}
		grown = bt_realloc(all, (total + k + 1) * sizeof(*all));
		if (grown == NULL) {
			bt_free(files);
			rc = -ENOMEM;
			break;
		}
		all = grown;
		for (size_t j = 0; j < k; j++) {
			bool dup = false;

			for (size_t d = 0; d < total && !dup; d++)
				dup = all[d].number == files[j].number;
			if (!dup)
				all[total++] = files[j];
		}
		bt_free(files);
	}
	if (rc < 0) {
		bt_free(all);
		return rc;
	}
	*out = all;
	*count = total;
	return 0;
}

/*
 * A split (one parent, two rows) or a merge (two parents, one row) of the
 * tablets at [first, first + parents) of map m: what it builds in memory
 * inside the catalog's transaction (replace_prepare), so that once the
 * catalog commits nothing is left that can fail.  The new tablets have
 * their parents' schema, which is the table's: schema changes hold
 * work_mu too (server_schema.c).
 */
struct replace_build {
	struct server_table *t;
	const struct tablet_map *m;
	size_t first;
	size_t parents;
	struct catalog_tablet *rows;	/* rows of the new tablets */
	size_t n;
	struct tablet_map *made;	/* the new map, not yet installed */
};

static int
replace_prepare(void *arg, const uint64_t *ids, size_t n)
{
	struct replace_build *b = arg;
	struct tablet *const *parent = &b->m->tablets[b->first];
	struct tablet *fresh[2] = { NULL, NULL };
	int rc;

	for (size_t i = 0; i < n; i++) {
		b->rows[i].id = ids[i];
		b->rows[i].table_id = b->t->id;
	}
	if (b->parents == 1)
		rc = tablet_split(parent[0], &b->rows[0], &b->rows[1],
		    &fresh[0], &fresh[1]);
	else
		rc = tablet_merge(parent[0], parent[1], &b->rows[0],
		    &fresh[0]);
	if (rc == 0 && (rc = server_tablet_map_replace(b->m, b->first, b->parents, fresh, n,
	    &b->made)) < 0)
		for (size_t i = 0; i < n; i++)
			tablet_unref(fresh[i]);
	return rc;
}

/*
 * The same commit through a remote catalog, whose replace runs no
 * prepare (catalog.h): b's tablets are built before it, numbered 0, and
 * given the ids the root returns after it (tablet_renumber(), which
 * cannot fail), then installed.  The root fences it: a parent assigned
 * elsewhere is BT_ENOTSERVING and changes nothing.  A commit whose
 * outcome this server cannot know (-EIO, -ETIMEDOUT, or a reply without
 * the ids) may have given the children to this server while it still
 * serves the parent: the store is broken then, as when its log fails,
 * and the server exits; the master recovers the tablets from its log,
 * whose records are routed by row.
 */
static int
replace_commit_remote(struct server *s, struct replace_build *b,
    const uint64_t *old, const struct catalog_tablet_spec *specs)
{
	static const uint64_t unknown[2] = { 0, 0 };
	uint64_t ids[2];
	int rc;

	mutex_assert_held(&s->apply_mu);
	assert(s->catalog_remote && b->n <= 2);
	b->made = NULL;
	if ((rc = replace_prepare(b, unknown, b->n)) < 0)
		return rc;
	rc = catalog_tablet_replace(s->catalog, old, b->parents, specs, b->n,
	    ids, NULL);
	if (rc < 0) {
		server_tablet_map_unref(b->made);
		if ((rc == -EIO || rc == -ETIMEDOUT || rc == -EPROTO) &&
		    s->broken == 0)
			s->broken = bt_error_set(rc, "table %s: a %s's "
			    "outcome is unknown, the store refuses writes "
			    "until it is reopened: %s", b->t->name,
			    b->parents == 1 ? "split" : "merge",
			    bt_error_detail());
		return rc;
	}
	for (size_t i = 0; i < b->n; i++)
		tablet_renumber(b->made->tablets[b->first + i], ids[i]);
	server_table_map_install(s, b->t, b->made);
	return 0;
}

/*
 * Record b's new tablets in place of its parents (the commit point),
 * each named with files[0..count), and install them: 0, or an error
 * that changed nothing.
 */
static int
replace_commit(struct server *s, struct replace_build *b,
    const struct catalog_file *files, size_t count)
{
	struct catalog_replace_prepare prep = { replace_prepare, b };
	struct catalog_tablet_spec specs[2];
	uint64_t old[2];
	int rc;

	/* In the apply turn (the top of this file). */
	mutex_assert_held(&s->apply_mu);
	/* A split or a merge: the only shapes replace_prepare() builds. */
	if (!(b->parents == 1 && b->n == 2) && !(b->parents == 2 && b->n == 1))
		return -EINVAL;
	for (size_t i = 0; i < b->parents; i++)
		old[i] = tablet_id(b->m->tablets[b->first + i]);
	for (size_t i = 0; i < b->n; i++)
		specs[i] = (struct catalog_tablet_spec){
			.start = buf_slice(&b->rows[i].start),
			.end = buf_slice(&b->rows[i].end),
			.flushed_seq = b->rows[i].flushed_seq,
			.files = files, .file_count = count,
			.server = s->name, .auto_split = b->rows[i].auto_split,
		};
	if (s->catalog_remote)
		return replace_commit_remote(s, b, old, specs);
	b->made = NULL;
	rc = catalog_tablet_replace(s->catalog, old, b->parents, specs, b->n,
	    NULL, &prep);
	if (rc < 0) {
		/* built, then not committed */
		server_tablet_map_unref(b->made);
		return rc;
	}
	server_table_map_install(s, b->t, b->made);
	return 0;
}

/* ---- Splits ---- */

/* Split tablet index i of map m at row.  Caller holds work_mu. */
static int
split_tablet(struct server *s, struct server_table *t, struct tablet_map *m,
    size_t i, struct slice row, bool auto_split)
{
	struct tablet *p = m->tablets[i];
	struct replace_build b;
	struct catalog_tablet rows[2];
	struct catalog_file *files = NULL;
	size_t count = 0;
	uint64_t old = tablet_id(p);
	int rc, left_auto;

	mutex_assert_held(&s->work_mu);
	assert(i < m->count);
	if ((rc = master_preflush(s, p)) < 0)
		return rc;
	if ((left_auto = tablet_auto_split(s, t->id, old)) < 0)
		return left_auto;
	mutex_lock(&s->apply_mu);
	if ((rc = s->broken) < 0 || (rc = master_drain_locked(s, p)) < 0)
		goto out_unlock;
	if ((rc = files_union(s, &p, 1, &files, &count)) < 0)
		goto out_unlock;
	row_init(&rows[0], tablet_start(p), row, s->applied_upto,
	    left_auto == 1, &rc);
	row_init(&rows[1], row, tablet_end(p), s->applied_upto, auto_split,
	    &rc);
	b = (struct replace_build){ .t = t, .m = m, .first = i, .parents = 1,
	    .rows = rows, .n = 2 };
	if (rc == 0 && (rc = replace_commit(s, &b, files, count)) == 0)
		atomic_fetch_add(&s->splits, 1);
	row_release(&rows[0]);
	row_release(&rows[1]);
	bt_free(files);
out_unlock:
	mutex_unlock(&s->apply_mu);
	return rc;
}

int
master_split_at(struct server *s, struct server_table *t, struct slice row,
    bool auto_split)
{
	struct tablet_map *m = server_table_map(t);
	size_t i = server_tablet_map_index(m, row);
	int rc;

	mutex_assert_held(&s->work_mu);
	if (!tablet_serving(m->tablets[i]))
		rc = bt_error_set(BT_ENOTSERVING, "table %s: tablet %" PRIu64
		    " is not served here", t->name, tablet_id(m->tablets[i]));
	else if (slice_equal(tablet_start(m->tablets[i]), row))
		rc = bt_error_set(-EEXIST, "table %s: a tablet already "
		    "starts at that row", t->name);
	else
		rc = split_tablet(s, t, m, i, row, auto_split);
	server_tablet_map_unref(m);
	return rc;
}

/* ---- Merges ---- */

/* Bytes a tablet holds: its own rows in SSTables, and its memtables. */
static uint64_t
tablet_bytes(struct tablet *tab)
{
	struct tablet_stats st;

	tablet_get_stats(tab, &st);
	return st.data_bytes + st.memtable_bytes;
}

/* Whether the tablet keeps a damaged SSTable (it is not merged then: the
 * file's rows are unknown). */
static bool
tablet_damaged(struct tablet *tab)
{
	struct tablet_stats st;

	tablet_get_stats(tab, &st);
	return st.damaged_sstables > 0;
}

/*
 * Merge tablets i and i + 1 of map m.  Each must hold only its own rows
 * (after a split it may still share files holding its sibling's rows,
 * which the merged tablet must not see): a tablet that does not is
 * compacted first.  Caller holds work_mu.
 */
static int
merge_tablets(struct server *s, struct server_table *t, struct tablet_map *m,
    size_t i, int64_t now)
{
	struct tablet *pair[2] = { m->tablets[i], m->tablets[i + 1] };
	struct replace_build b;
	struct catalog_tablet row;
	struct catalog_file *files = NULL;
	size_t count = 0;
	int rc, left_auto;

	mutex_assert_held(&s->work_mu);
	assert(i + 1 < m->count);
	for (size_t k = 0; k < 2; k++) {
		if ((rc = master_preflush(s, pair[k])) < 0)
			return rc;
		if ((rc = tablet_files_in_range(pair[k])) < 0)
			return rc;
		if (rc == 0 && (rc = tablet_compact(pair[k], true, now)) < 0)
			return rc;
	}
	left_auto = tablet_auto_split(s, t->id, tablet_id(pair[0]));
	if (left_auto < 0)
		return left_auto;
	mutex_lock(&s->apply_mu);
	rc = s->broken;
	for (size_t k = 0; k < 2 && rc == 0; k++)
		rc = master_drain_locked(s, pair[k]);
	if (rc < 0 || (rc = files_union(s, pair, 2, &files, &count)) < 0)
		goto out_unlock;
	row_init(&row, tablet_start(pair[0]), tablet_end(pair[1]),
	    s->applied_upto, left_auto == 1, &rc);
	b = (struct replace_build){ .t = t, .m = m, .first = i, .parents = 2,
	    .rows = &row, .n = 1 };
	if (rc == 0 && (rc = replace_commit(s, &b, files, count)) == 0)
		atomic_fetch_add(&s->merges, 1);
	row_release(&row);
	bt_free(files);
out_unlock:
	mutex_unlock(&s->apply_mu);
	return rc;
}

/* ---- Balancing ---- */

/* Split the first tablet that outgrew the table: 0 (one split), 1
 * (nothing to split), or an error. */
static int
balance_split_one(struct server *s, struct server_table *t)
{
	struct tablet_map *m = server_table_map(t);
	struct buf row;
	int rc = 1;

	buf_init(&row);
	for (size_t i = 0; i < m->count && rc == 1; i++) {
		struct tablet_stats st;

		tablet_get_stats(m->tablets[i], &st);
		if (st.data_bytes <= t->tablet_size ||
		    !tablet_serving(m->tablets[i]))
			continue;
		rc = tablet_split_row(m->tablets[i], &row);
		if (rc == BT_NOTFOUND) {
			rc = 1;		/* one huge row: it stays whole */
			continue;
		}
		if (rc == 0)
			rc = split_tablet(s, t, m, i, buf_slice(&row), true);
	}
	buf_release(&row);
	server_tablet_map_unref(m);
	return rc;
}

/* Whether the catalog's rows say that tablet id starts at a boundary a
 * split for size made.  The rows may list tablets this server's map
 * does not know yet (split at other servers of a cell), so by id. */
static bool
rows_auto_split(const struct catalog_tablet *rows, size_t n, uint64_t id)
{
	for (size_t i = 0; i < n; i++)
		if (rows[i].id == id)
			return rows[i].auto_split;
	return false;
}

/* Merge the first pair of neighbours served here that both shrank below
 * a quarter of the tablet size, across a boundary a split for size
 * made. */
static int
balance_merge_one(struct server *s, struct server_table *t)
{
	struct catalog_tablet *rows = NULL;
	struct tablet_map *m;
	uint64_t small = t->tablet_size / 4;
	size_t n = 0;
	int rc = 1;

	if ((rc = catalog_tablets_list(s->catalog, t->id, &rows, &n)) != 0)
		return rc < 0 ? rc : 1;
	m = server_table_map(t);
	rc = 1;
	for (size_t i = 0; i + 1 < m->count && rc == 1; i++) {
		if (!rows_auto_split(rows, n, tablet_id(m->tablets[i + 1])))
			continue;
		if (tablet_bytes(m->tablets[i]) >= small ||
		    tablet_bytes(m->tablets[i + 1]) >= small ||
		    tablet_damaged(m->tablets[i]) ||
		    tablet_damaged(m->tablets[i + 1]) ||
		    !tablet_serving(m->tablets[i]) ||
		    !tablet_serving(m->tablets[i + 1]))
			continue;
		rc = merge_tablets(s, t, m, i, server_now(s));
	}
	server_tablet_map_unref(m);
	catalog_tablets_free(rows, n);
	return rc;
}

int
master_balance_table(struct server *s, struct server_table *t)
{
	int rc = 0;

	mutex_assert_held(&s->work_mu);
	for (int i = 0; i < MASTER_MAX_CHANGES && rc == 0; i++)
		rc = balance_split_one(s, t);
	if (rc < 0)
		return rc;
	/* Merge while something merges. */
	for (int i = 0; i < MASTER_MAX_CHANGES; i++)
		if ((rc = balance_merge_one(s, t)) != 0)
			break;
	return rc > 0 ? 0 : rc;
}

int
master_collect_rounds(struct server *s, uint64_t round)
{
	if (round % MASTER_SWEEP_ROUNDS != MASTER_SWEEP_ROUNDS - 1)
		return 0;
	return master_collect_files(s);
}
