/*
 * server.c - the tablet server's tables, log segments, background flush and
 * compaction thread, and the opening, recovery and closing of a store
 * (server.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "server/server_int.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/hash.h"

int64_t
server_now(struct server *s)
{
	return (int64_t)env_now_micros(s->env);
}

uint64_t
server_next_seq(struct server *s)
{
	return atomic_load_explicit(&s->next_seq, memory_order_relaxed);
}

static char *
path_join(const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	char *p = bt_malloc(n);

	if (p != NULL)
		snprintf(p, n, "%s/%s", dir, name);
	return p;
}

/* ---- Tables ---- */

struct tablet_map *
tablet_map_new(size_t count)
{
	struct tablet_map *m = bt_calloc(1, sizeof(*m) +
	    (count + 1) * sizeof(m->tablets[0]));

	if (m == NULL)
		return NULL;
	atomic_init(&m->refs, 1);
	m->count = count;
	return m;
}

void
tablet_map_unref(struct tablet_map *m)
{
	if (m == NULL || atomic_fetch_sub(&m->refs, 1) != 1)
		return;
	for (size_t i = 0; i < m->count; i++)
		tablet_unref(m->tablets[i]);
	bt_free(m);
}

size_t
tablet_map_index(const struct tablet_map *m, struct slice row)
{
	size_t lo = 0, hi = m->count;

	/* The last tablet whose start is <= row; the first starts at "". */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (slice_compare(tablet_start(m->tablets[mid]), row) <= 0)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

struct tablet *
tablet_map_find(const struct tablet_map *m, struct slice row)
{
	return m->tablets[tablet_map_index(m, row)];
}

struct tablet_map *
table_map(struct server_table *t)
{
	struct tablet_map *m;

	mutex_lock(&t->map_mu);
	m = t->map;
	atomic_fetch_add(&m->refs, 1);
	mutex_unlock(&t->map_mu);
	return m;
}

bool
table_serves_row(struct server_table *t, uint64_t tablet, struct slice row)
{
	bool serves;

	mutex_lock(&t->map_mu);
	serves = tablet_id(tablet_map_find(t->map, row)) == tablet;
	mutex_unlock(&t->map_mu);
	return serves;
}

struct tablet_map *
table_map_locked(struct server_table *t)
{
	return t->map;
}

void
table_map_install(struct server_table *t, struct tablet_map *m)
{
	struct tablet_map *old;

	mutex_lock(&t->map_mu);
	old = t->map;
	t->map = m;
	mutex_unlock(&t->map_mu);
	tablet_map_unref(old);
}

void
table_unref(struct server_table *t)
{
	if (t == NULL || atomic_fetch_sub(&t->refs, 1) != 1)
		return;
	tablet_map_unref(t->map);
	mutex_destroy(&t->map_mu);
	tablet_schema_unref(t->schema);
	bt_free(t);
}

/* The table named name, or NULL; caller holds tables_mu. */
static struct server_table *
table_find_locked(struct server *s, const char *name)
{
	for (size_t i = 0; i < s->table_count; i++)
		if (strcmp(s->tables[i]->name, name) == 0)
			return s->tables[i];
	return NULL;
}

/* Find a table by name and take a reference; -ENOENT if absent. */
int
table_get(struct server *s, const char *name, struct server_table **out)
{
	return table_get_schema(s, name, out, NULL);
}

/* table_get(), and when schema is not NULL the table's schema,
 * referenced, under the same hold of tables_mu: a write asks for both. */
int
table_get_schema(struct server *s, const char *name,
    struct server_table **out, struct tablet_schema **schema)
{
	struct server_table *t;

	mutex_lock(&s->tables_mu);
	if ((t = table_find_locked(s, name)) == NULL) {
		mutex_unlock(&s->tables_mu);
		return bt_error_set(-ENOENT, "table %s: no such table", name);
	}
	atomic_fetch_add(&t->refs, 1);
	if (schema != NULL) {
		*schema = t->schema;
		tablet_schema_ref(*schema);
	}
	mutex_unlock(&s->tables_mu);
	*out = t;
	return 0;
}

/* The id of the table named name, without taking a reference: an id is
 * only a key to its holder; -ENOENT if absent. */
int
table_id_get(struct server *s, const char *name, uint64_t *id)
{
	struct server_table *t;

	mutex_lock(&s->tables_mu);
	if ((t = table_find_locked(s, name)) != NULL)
		*id = t->id;
	mutex_unlock(&s->tables_mu);
	if (t == NULL)
		return bt_error_set(-ENOENT, "table %s: no such table", name);
	return 0;
}

struct server_table *
table_find_id_locked(struct server *s, uint64_t id)
{
	for (size_t i = 0; i < s->table_count; i++)
		if (s->tables[i]->id == id)
			return s->tables[i];
	return NULL;
}

/* Build a table from its schema and tablets as the catalog has them,
 * opening the tablets: with their files, or (made) a new table's, which
 * have none. */
int
table_build(struct server *s, const struct catalog_table *ct,
    const struct catalog_tablet *cts, size_t count, bool made,
    struct server_table **out)
{
	struct server_table *t;
	int rc;

	if (count == 0)
		return bt_error_set(BT_ECORRUPT, "table %s: no tablets",
		    ct->name);
	if ((t = bt_calloc(1, sizeof(*t))) == NULL)
		return -ENOMEM;
	atomic_init(&t->refs, 1);
	mutex_init(&t->map_mu);
	snprintf(t->name, sizeof(t->name), "%s", ct->name);
	t->id = ct->id;
	t->tablet_size = ct->tablet_size;
	if ((rc = tablet_schema_new(ct, &t->schema)) < 0)
		goto out_free;
	if ((t->map = tablet_map_new(count)) == NULL) {
		rc = -ENOMEM;
		goto out_free;
	}
	for (size_t i = 0; i < count; i++) {
		rc = made ? tablet_open_files(&s->tenv, &cts[i], t->schema,
		    NULL, 0, &t->map->tablets[i]) : tablet_open(&s->tenv,
		    &cts[i], t->schema, &t->map->tablets[i]);
		if (rc < 0)
			goto out_free;
	}
	*out = t;
	return 0;
out_free:
	table_unref(t);
	return rc;
}

/* Load a table and open its tablets from the catalog. */
int
table_load(struct server *s, const char *name, struct server_table **out)
{
	struct catalog_tablet *cts = NULL;
	struct catalog_table *ct = NULL;
	size_t count = 0;
	int rc;

	if ((rc = catalog_table_get(s->catalog, name, &ct)) != 0) {
		if (rc == BT_NOTFOUND)
			rc = bt_error_set(-ENOENT, "table %s: not in the "
			    "catalog", name);
		return rc;
	}
	/* None (BT_NOTFOUND) is the build's error. */
	if ((rc = catalog_tablets_list(s->catalog, ct->id, &cts,
	    &count)) >= 0)
		rc = table_build(s, ct, cts, count, false, out);
	catalog_tablets_free(cts, count);
	catalog_table_free(ct);
	return rc;
}

/* Room in s->tables for one more table. */
int
tables_reserve_locked(struct server *s)
{
	struct server_table **n;

	if (s->table_count < s->table_cap)
		return 0;
	if ((n = bt_realloc(s->tables, (s->table_cap + 8) *
	    sizeof(*n))) == NULL)
		return -ENOMEM;
	s->tables = n;
	s->table_cap += 8;
	return 0;
}

int
tables_add_locked(struct server *s, struct server_table *t)
{
	int rc;

	if ((rc = tables_reserve_locked(s)) < 0)
		return rc;
	s->tables[s->table_count++] = t;
	return 0;
}

/* References to every table, for work that runs without the mutex. */
int
tables_snapshot(struct server *s, struct server_table ***out, size_t *count)
{
	struct server_table **list;

	mutex_lock(&s->tables_mu);
	list = bt_calloc(s->table_count + 1, sizeof(*list));
	if (list == NULL) {
		mutex_unlock(&s->tables_mu);
		return -ENOMEM;
	}
	for (size_t i = 0; i < s->table_count; i++) {
		list[i] = s->tables[i];
		atomic_fetch_add(&list[i]->refs, 1);
	}
	*count = s->table_count;
	mutex_unlock(&s->tables_mu);
	*out = list;
	return 0;
}

void
tables_snapshot_free(struct server_table **list, size_t count)
{
	for (size_t i = 0; i < count; i++)
		table_unref(list[i]);
	bt_free(list);
}

/* ---- Log segments ---- */

/* A segment whose records are all flushed is rotated past this size. */
#define SEGMENT_ROTATE_FLUSHED	(1ull << 20)

void
segment_note_locked(struct server *s, uint64_t number, uint64_t max_seq)
{
	struct segment *n;

	for (size_t i = 0; i < s->segment_count; i++) {
		if (s->segments[i].number == number) {
			if (max_seq > s->segments[i].max_seq)
				s->segments[i].max_seq = max_seq;
			return;
		}
	}
	n = bt_realloc(s->segments, (s->segment_count + 1) * sizeof(*n));
	if (n == NULL)
		return;		/* the segment is then kept until close */
	s->segments = n;
	s->segments[s->segment_count].number = number;
	s->segments[s->segment_count].max_seq = max_seq;
	s->segment_count++;
}

/*
 * Delete the log segments that no tablet needs any more: every record in
 * them is in an SSTable.  The segment being written is kept, unless all
 * of it is flushed and it is past SEGMENT_ROTATE_FLUSHED bytes (or holds
 * anything while the disk is full): it is then finished and a new one
 * begun, so that it can go.  Segments rotate at their size otherwise
 * (64 MiB), and a segment that size, every record of it flushed, was
 * kept on a disk it had filled.  A poisoned writer is not rotated: its
 * writes stay refused until the reopen (server_write.c).  A group
 * applied after the tablets are read is in no memtable that they show,
 * and by the time apply_mu is taken the next group may have started a
 * new segment, so that the group's is no longer the current one: every
 * sequence number past visible_seq, read before the tablets, counts as
 * unflushed.
 */
void
segments_collect(struct server *s)
{
	struct server_table **tables;
	struct log_writer_stats ls;
	struct log_position pos;
	uint64_t oldest, current;
	size_t count, kept = 0;

	if (s->log == NULL)
		return;
	oldest = atomic_load(&s->visible_seq) + 1;
	if (tables_snapshot(s, &tables, &count) < 0)
		return;
	for (size_t i = 0; i < count; i++) {
		struct tablet_map *m = table_map(tables[i]);

		for (size_t j = 0; j < m->count; j++) {
			uint64_t u = tablet_oldest_unflushed_seq(
			    m->tablets[j]);

			if (u < oldest)
				oldest = u;
		}
		tablet_map_unref(m);
	}
	tables_snapshot_free(tables, count);
	mutex_lock(&s->apply_mu);
	pos = log_writer_position(s->log);
	current = pos.segment;
	log_writer_get_stats(s->log, &ls);
	for (size_t i = 0; i < s->segment_count && ls.poison == 0; i++) {
		if (s->segments[i].number == current &&
		    s->segments[i].max_seq < oldest &&
		    (pos.offset >= SEGMENT_ROTATE_FLUSHED ||
		    atomic_load(&s->disk_full) < 0)) {
			if (log_writer_rotate(s->log, NULL) == 0)
				current = log_writer_position(s->log).segment;
			break;
		}
	}
	for (size_t i = 0; i < s->segment_count; i++) {
		struct segment *g = &s->segments[i];
		char path[4096];

		if (g->number != current && g->max_seq < oldest) {
			log_segment_path(path, sizeof(path), s->log_dir,
			    g->number);
			env_path_remove(s->env, path);
		} else {
			s->segments[kept++] = *g;
		}
	}
	s->segment_count = kept;
	mutex_unlock(&s->apply_mu);
}

/* ---- Background work ---- */

/* Flush every frozen memtable of tables; *flushed is set when one was.
 * Returns the first error, or 0. */
static int
flush_frozen(struct server_table **tables, size_t count, bool *flushed)
{
	int rc, first = 0;

	for (size_t i = 0; i < count; i++) {
		struct tablet_map *m = table_map(tables[i]);

		for (size_t j = 0; j < m->count; j++) {
			if (!tablet_has_frozen(m->tablets[j]))
				continue;
			if ((rc = tablet_flush(m->tablets[j], false)) == 0)
				*flushed = true;
			else if (first == 0)
				first = rc;
		}
		tablet_map_unref(m);
	}
	return first;
}

/*
 * The tablets' compact_poll: in the middle of a compaction (which holds
 * work_mu, so no other flush runs), freeze what the memory budget needs
 * and flush every frozen memtable, then wake the writers waiting for
 * memory.  Without this a writer that filled the budget would wait for
 * the end of the compaction, which may rewrite a whole tablet.  A failed
 * flush is left for the round's own flush to retry and report.
 */
static void
background_poll(void *arg)
{
	struct server *s = arg;
	struct server_table **tables;
	size_t count;
	bool flushed = false;

	if (atomic_load(&s->active_bytes) > (int64_t)master_freeze_size(s))
		master_limit_memory(s);
	if (atomic_load(&s->frozen_bytes) <= 0)
		return;
	if (tables_snapshot(s, &tables, &count) < 0)
		return;
	(void)flush_frozen(tables, count, &flushed);
	tables_snapshot_free(tables, count);
	if (!flushed)
		return;
	mutex_lock(&s->bg_mu);
	pthread_cond_broadcast(&s->bg_done_cv);
	mutex_unlock(&s->bg_mu);
}

/*
 * The idle check of tablet t in a round (tablet.h, TABLET_IDLE_USEC):
 * when t has been idle long enough and its memtable is worth it, freeze
 * it in the apply turn and flush it, so that the round's compaction
 * merges its file with the others.  *pending is set when t may go idle
 * with work to do, so that the next round comes sooner.
 */
static int
background_idle(struct server *s, struct tablet *t, bool *pending)
{
	bool freeze;
	int rc;

	if (s->opts.read_only ||
	    !tablet_idle_check(t, server_now(s), &freeze, pending) ||
	    !freeze)
		return 0;
	mutex_lock(&s->apply_mu);
	rc = master_freeze(s, t);
	mutex_unlock(&s->apply_mu);
	if (rc == BT_NOTFOUND || rc == -EBUSY)
		return 0;
	if (rc < 0 || (rc = tablet_flush(t, false)) < 0)
		return rc;
	return 0;
}

/*
 * Flush every frozen memtable, run the idle checks (background_idle; a
 * tablet that may go idle with work sets *idle_pending) and compact what
 * needs it; one round.  The
 * memory that flushes and compactions free is handed back to the system
 * (malloc_trim) only in a round that writers did not ask for (trim): one
 * that the timer started, writes having paused for a second, or one that
 * a caller waits for (bt_store_flush).  Right after a flush the writers'
 * next memtable is about to take that memory again, and a trim there
 * made it fault every page back in (16,000 page faults instead of
 * 10,000 in a 50 MB fill), after 1-7 ms of malloc_trim per flush.  The
 * peak (the active and frozen memtables both full) is the same.
 *
 * A flush that failed (a full disk) is tried once more at the end of the
 * round, after its compactions, which hold room for their output until
 * they end; *flush_error is what the memtables still frozen then failed
 * with, and what a writer waiting for memory is told (write_throttle()).
 * The round's error (the first of its other steps, or that) is what
 * bt_store_flush() reports: not a flush that failed and then succeeded.
 * While the disk is full a round only deletes files and checks for room.
 */
static int
background_round(struct server *s, bool trim, bool *idle_pending,
    int *flush_error)
{
	struct server_table **tables;
	size_t count;
	int rc, first = 0;
	bool freed = false, flush_failed = false;

	/* A full disk: nothing is flushed or compacted unless asked for
	 * (server_space.c, rule 2); a writer waiting for memory is told. */
	if (space_full(s)) {
		*flush_error = atomic_load(&s->disk_full);
		segments_collect(s);
		return master_collect_rounds(s, s->bg_rounds);
	}
	master_limit_memory(s);
	if ((rc = tables_snapshot(s, &tables, &count)) < 0)
		return *flush_error = rc;
	for (size_t i = 0; i < count; i++) {
		struct tablet_map *m = table_map(tables[i]);

		for (size_t j = 0; j < m->count; j++) {
			struct tablet *t = m->tablets[j];

			rc = tablet_flush(t, false);
			flush_failed |= rc < 0;
			freed |= rc == 0;
			rc = background_idle(s, t, idle_pending);
			if (rc < 0 && first == 0)
				first = rc;
			flush_failed |= rc < 0;
			if (tablet_needs_compaction(t)) {
				rc = tablet_compact(t, false, server_now(s));
				if (rc < 0 && first == 0)
					first = rc;
				freed = true;
			}
		}
		tablet_map_unref(m);
		rc = master_balance_table(s, tables[i]);
		if (rc < 0 && first == 0)
			first = rc;
	}
	*flush_error = flush_failed ?
	    flush_frozen(tables, count, &freed) : 0;
	if (*flush_error < 0 && first == 0)
		first = *flush_error;
	tables_snapshot_free(tables, count);
	space_note(s, *flush_error);
	space_note(s, first);
	segments_collect(s);
	s->bg_trim_pending |= freed;
	if (trim && s->bg_trim_pending) {
		bt_alloc_trim();
		s->bg_trim_pending = false;
		mutex_lock(&s->bg_mu);
		s->memory_trims++;
		mutex_unlock(&s->bg_mu);
	}
	rc = master_collect_rounds(s, s->bg_rounds);
	if (rc < 0 && first == 0)
		first = rc;
	(void)space_full(s);	/* room again: take the reserve back */
	return first;
}

/* The wait between rounds while a tablet may go idle with work to do: a
 * third of TABLET_IDLE_USEC, so that its idle compaction starts within
 * about 1.3 times that after its last write. */
#define BACKGROUND_IDLE_POLL_NSEC (TABLET_IDLE_USEC * 1000L / 3)

static void *
background_main(void *arg)
{
	struct server *s = arg;
	bool trim, idle_soon = false;
	int rc, flush_rc;

	mutex_lock(&s->bg_mu);
	while (!s->bg_stop) {
		trim = false;
		if (!s->bg_wanted) {
			struct timespec until;

			/* Wake now and then for merging compactions, and
			 * soon when a tablet may go idle with work to do
			 * (a round then that nothing asked for does not
			 * trim: writes may be about to resume). */
			clock_gettime(CLOCK_REALTIME, &until);
			if (idle_soon) {
				until.tv_nsec += BACKGROUND_IDLE_POLL_NSEC;
				if (until.tv_nsec >= 1000000000L) {
					until.tv_sec++;
					until.tv_nsec -= 1000000000L;
				}
			} else {
				until.tv_sec += 1;
			}
			cond_timedwait(&s->bg_cv, &s->bg_mu, &until);
			if (s->bg_stop)
				break;
			trim = !s->bg_wanted && !idle_soon;
		}
		trim |= s->bg_trim_wanted;
		s->bg_trim_wanted = false;
		s->bg_wanted = false;
		s->bg_begun++;
		mutex_unlock(&s->bg_mu);
		mutex_lock(&s->work_mu);
		idle_soon = false;
		rc = background_round(s, trim, &idle_soon, &flush_rc);
		mutex_unlock(&s->work_mu);
		mutex_lock(&s->bg_mu);
		s->bg_error = rc;
		s->bg_flush_error = flush_rc;
		s->bg_rounds++;
		pthread_cond_broadcast(&s->bg_done_cv);
	}
	mutex_unlock(&s->bg_mu);
	return NULL;
}

void
background_wake(struct server *s)
{
	mutex_lock(&s->bg_mu);
	s->bg_wanted = true;
	pthread_cond_signal(&s->bg_cv);
	mutex_unlock(&s->bg_mu);
}

/* The tablets' compact_wanted: reads used up a tablet's budget
 * (TABLET_SEEK_BYTES); run a round now rather than at the timer. */
static void
background_compact_wanted(void *arg)
{
	background_wake(arg);
}

/*
 * Wait until a background round that starts after this call has ended, and
 * return that round's first error.
 */
int
background_wait_round(struct server *s)
{
	uint64_t target;
	int rc;

	mutex_lock(&s->bg_mu);
	s->bg_wanted = true;
	s->bg_trim_wanted = true;
	pthread_cond_signal(&s->bg_cv);
	target = s->bg_rounds + 2;
	while (s->bg_rounds < target && !s->bg_stop) {
		s->bg_wanted = true;
		pthread_cond_signal(&s->bg_cv);
		cond_wait(&s->bg_done_cv, &s->bg_mu);
	}
	rc = s->bg_stop ? BT_ECLOSED : s->bg_error;
	mutex_unlock(&s->bg_mu);
	return rc;
}

/* ---- Opening, recovery, closing ---- */

/*
 * Make directory dir and whichever of its ancestors are missing, each
 * synced into its parent, as mkdir -p does: a store can be made at a new
 * path.  An existing dir is checked to be a directory.
 */
static int
dir_create_all(struct env *env, const char *dir)
{
	char *parent;
	int rc;

	if (env_path_exists(env, dir))
		return env_dir_create(env, dir);
	if ((parent = env_path_parent(dir)) == NULL)
		return -ENOMEM;
	if (strcmp(parent, dir) == 0 ||
	    (rc = dir_create_all(env, parent)) == 0) {
		if ((rc = env_dir_create(env, dir)) == 0)
			rc = env_dir_sync(env, parent);
	}
	bt_free(parent);
	return rc;
}

int
server_create(const char *path, struct env *env)
{
	struct env *own = NULL;
	char *sub = NULL;
	static const char *const dirs[] = { "log", "sst", "tmp" };
	int rc;

	if (env == NULL) {
		if ((rc = env_posix_new(&own)) < 0)
			return rc;
		env = own;
	}
	if ((rc = dir_create_all(env, path)) < 0)
		goto out;
	if ((sub = path_join(path, "catalog.db")) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	if (env_path_exists(env, sub)) {
		rc = bt_error_set(-EEXIST, "%s: a store is already there",
		    path);
		goto out;
	}
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		char *d = path_join(path, dirs[i]);

		rc = d == NULL ? -ENOMEM : env_dir_create(env, d);
		bt_free(d);
		if (rc < 0)
			goto out;
	}
	if ((rc = catalog_create(env, sub)) < 0)
		goto out;
	if ((rc = env_dir_sync(env, path)) < 0)
		goto out;
	/* The store's own directory entry, in its parent. */
	bt_free(sub);
	if ((sub = env_path_parent(path)) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	rc = env_dir_sync(env, sub);
out:
	bt_free(sub);
	env_free(own);
	return rc;
}

/* Replay one log record into its tablet, unless it is already flushed. */
static int
replay_record(struct server *s, struct slice data)
{
	struct mutation_record rec;
	struct server_table *t;
	struct tablet *tablet;
	uint64_t last;
	int rc;

	if ((rc = mutation_record_decode(data, &rec)) < 0)
		return rc;
	last = rec.seq + rec.count - 1;
	if (last >= s->next_seq)
		s->next_seq = last + 1;
	for (size_t i = 0; i < rec.count; i++)
		if (rec.ops[i].kind == MUTATION_PUT &&
		    rec.ops[i].ts > s->last_stamp &&
		    rec.ops[i].ts <= server_now(s) + 1000000)
			s->last_stamp = rec.ops[i].ts;
	t = table_find_id_locked(s, rec.table_id);
	if (t == NULL)
		goto out;	/* the table was dropped */
	tablet = tablet_map_find(t->map, rec.row);
	if (last <= tablet_flushed_seq(tablet))
		goto out;
	if ((rc = tablet_apply(tablet, rec.seq, rec.row, rec.ops,
	    rec.count)) < 0)
		goto out;
	if (!s->opts.read_only && !s->replay_disk_full &&
	    tablet_memtable_usage(tablet) >= s->opts.memtable_size &&
	    (rc = tablet_freeze(tablet)) == 0)
		rc = tablet_flush(tablet, true);
	/* A full disk: the rest replays into memory (server_recover). */
	if (rc == -ENOSPC || rc == -EDQUOT) {
		s->replay_disk_full = true;
		rc = 0;
	}
	if (rc > 0)
		rc = 0;
out:
	mutation_record_release(&rec);
	return rc;
}

/* Tell the store's user one line (server_options.notice; stderr). */
static void
server_notice(struct server *s, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (s->opts.notice != NULL)
		s->opts.notice(s->opts.notice_arg, line);
	else
		fprintf(stderr, "tabletfs: %s\n", line);
}

/*
 * Replay one segment.  Damage that is not a torn tail (a record whose
 * check fails with a valid record after it, or a torn-looking tail in a
 * segment that is not the last) is skipped -- in the last segment, damage
 * that no later record shows synced is a power loss's torn tail instead,
 * dropped with what follows (log.h) -- and replay goes on at the next
 * record that checks, one notice names what was skipped, and
 * *damaged is set so that the segment is kept in lost/ (and *torn if
 * intact records were dropped).  The mutations in the damaged bytes are
 * lost; every other record is replayed.
 */
static int
recover_segment(struct server *s, uint64_t number, bool last,
    bool *damaged, bool *torn)
{
	struct log_reader *r;
	struct slice rec;
	uint64_t off, n, size, intact;
	const char *kept;
	char path[4096];
	int rc;

	log_segment_path(path, sizeof(path), s->log_dir, number);
	if ((rc = env_path_size(s->env, path, &size)) < 0 ||
	    (rc = log_reader_open(s->env, path, &r)) < 0)
		return rc;
	if (!last)
		log_reader_set_sealed(r);
	for (;;) {
		rc = log_reader_next(r, &rec, NULL);
		if (rc == 0) {
			if ((rc = replay_record(s, rec)) < 0)
				break;
			continue;
		}
		intact = 0;
		if (rc == BT_DONE) {
			/* A torn tail; or damage no sync covered, dropped
			 * with the intact records after it (format.h). */
			n = log_reader_dropped_bytes(r);
			intact = log_reader_dropped_records(r);
			if (n == 0 || (last && intact == 0))
				break;
			off = size - n;
		} else if (rc == BT_ECHECKSUM || rc == BT_ECORRUPT) {
			if ((rc = log_reader_skip_damage(r, &off, &n)) < 0)
				break;
		} else {
			break;
		}
		*damaged = true;
		*torn |= intact > 0;
		kept = s->opts.read_only ?
		    "read-only: the segment stays in log/" :
		    "the segment is kept in lost/";
		if (intact > 0)
			server_notice(s, "log/%016" PRIu64 ".log: damaged "
			    "record at offset %" PRIu64 " before %" PRIu64
			    " intact records, none synced after it: dropped "
			    "as torn by a power loss (%s)", number, off,
			    intact, kept);
		else
			server_notice(s, "log/%016" PRIu64 ".log: %" PRIu64
			    " damaged bytes at offset %" PRIu64 " skipped at "
			    "recovery (%s)", number, n, off, kept);
		if (rc == BT_DONE)
			break;
	}
	log_reader_close(r);
	return rc == BT_DONE ? 0 : rc;
}

/*
 * Move a damaged segment into STORE/lost/ (created if absent) under a name
 * no earlier one there has, NNN.log or, when recovery dropped records as a
 * torn tail, NNN.torn.log, and sync lost/: nothing is destroyed, and
 * tabletctl check reports it until the user removes it.
 */
static int
recover_keep_lost(struct server *s, struct lost_segment seg)
{
	const char *kind = seg.torn ? ".torn" : "";
	char from[4096], to[4096 + 32];
	char *store, *lost = NULL;
	int rc = -ENOMEM;

	if ((store = env_path_parent(s->log_dir)) == NULL ||
	    (lost = path_join(store, "lost")) == NULL)
		goto out;
	if ((rc = env_dir_create(s->env, lost)) < 0 ||
	    (rc = env_dir_sync(s->env, store)) < 0)
		goto out;
	log_segment_path(from, sizeof(from), s->log_dir, seg.number);
	snprintf(to, sizeof(to), "%s/%016" PRIu64 "%s.log", lost, seg.number,
	    kind);
	for (unsigned k = 1; env_path_exists(s->env, to); k++)
		snprintf(to, sizeof(to), "%s/%016" PRIu64 "-%u%s.log", lost,
		    seg.number, k, kind);
	if ((rc = env_path_rename(s->env, from, to)) < 0)
		goto out;
	rc = env_dir_sync(s->env, lost);
out:
	bt_free(lost);
	bt_free(store);
	return rc;
}

/*
 * Replay every log segment in order, then (unless read-only) flush what
 * was replayed and delete the segments, so that the new log starts empty;
 * a segment in which damage was skipped is moved to lost/ instead.  Only
 * the last segment may end in a torn record.  On a full disk the store
 * opens all the same with the replayed data in memory and its segments
 * kept.
 */
static int
server_recover(struct server *s, uint64_t *next_segment)
{
	uint64_t *segments = NULL;
	struct lost_segment *kept = NULL;
	bool *damaged = NULL;
	size_t count = 0;
	int rc;

	*next_segment = 1;
	if ((rc = log_list_segments(s->env, s->log_dir, &segments,
	    &count)) < 0)
		return rc;
	damaged = bt_calloc(count + 1, sizeof(*damaged));
	kept = bt_calloc(count + 1, sizeof(*kept));
	s->lost_pending = bt_calloc(count + 1, sizeof(*s->lost_pending));
	if (damaged == NULL || kept == NULL || s->lost_pending == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < count; i++) {
		kept[i].number = segments[i];
		if ((rc = recover_segment(s, segments[i], i + 1 == count,
		    &damaged[i], &kept[i].torn)) < 0)
			goto out;
		*next_segment = segments[i] + 1;
	}
	if (s->opts.read_only)
		goto out;
	if (s->replay_disk_full) {
		space_note(s, -ENOSPC);
		goto out_keep;
	}
	for (size_t i = 0; i < s->table_count; i++)
		for (size_t j = 0; j < s->tables[i]->map->count; j++) {
			struct tablet *t = s->tables[i]->map->tablets[j];

			if ((rc = tablet_freeze(t)) == 0)
				rc = tablet_flush(t, true);
			if (space_is_full_error(rc)) {
				space_note(s, rc);
				goto out_keep;
			}
			if (rc < 0)
				goto out;
		}
	rc = 0;
	for (size_t i = 0; i < count; i++) {
		char path[4096];

		log_segment_path(path, sizeof(path), s->log_dir, segments[i]);
		if (damaged[i])
			rc = recover_keep_lost(s, kept[i]);
		else
			rc = env_path_remove(s->env, path);
		if (rc < 0)
			goto out;
	}
	if (count > 0)
		rc = env_dir_sync(s->env, s->log_dir);
	goto out;
out_keep:
	/*
	 * The disk is full: what was replayed stays in the memtables (the
	 * frozen ones are flushed by the background once there is room) and
	 * in its segments, which are deleted as usual once that is done.
	 * A damaged one is not noted, so the background does not delete it:
	 * a clean close moves it to lost/ (or the next open does).
	 */
	mutex_lock(&s->apply_mu);
	for (size_t i = 0; i < count; i++)
		if (!damaged[i])
			segment_note_locked(s, segments[i], s->next_seq - 1);
	mutex_unlock(&s->apply_mu);
	rc = 0;
	for (size_t i = 0; i < count; i++)
		if (damaged[i])
			s->lost_pending[s->lost_pending_count++] = kept[i];
out:
	bt_free(kept);
	bt_free(damaged);
	bt_free(segments);
	return rc;
}

static int
server_load_tables(struct server *s)
{
	char **names = NULL;
	size_t count = 0;
	int rc;

	if ((rc = catalog_table_list(s->catalog, &names, &count)) < 0)
		return rc;
	for (size_t i = 0; i < count && rc == 0; i++) {
		struct server_table *t;

		if ((rc = table_load(s, names[i], &t)) < 0)
			break;
		if ((rc = tables_add_locked(s, t)) < 0) {
			table_unref(t);
			break;
		}
		for (size_t j = 0; j < t->map->count; j++) {
			uint64_t f = tablet_flushed_seq(t->map->tablets[j]);

			if (f >= s->next_seq)
				s->next_seq = f + 1;
		}
	}
	for (size_t i = 0; i < count; i++)
		bt_free(names[i]);
	bt_free(names);
	return rc;
}

/* The host name, as a catalog server name (printable, no blanks). */
static void
server_name(char *name, size_t size)
{
	if (gethostname(name, size) != 0 || name[0] == '\0')
		snprintf(name, size, "localhost");
	name[size - 1] = '\0';
	for (char *p = name; *p != '\0'; p++)
		if (*p <= ' ' || *p > '~')
			*p = '_';
}

int
server_open(const char *path, const struct server_options *opts,
    struct server **out)
{
	struct server *s;
	uint64_t next_segment, last_seq, last_stamp;
	char *p;
	int rc = -ENOMEM;

	if ((s = bt_calloc(1, sizeof(*s))) == NULL)
		return -ENOMEM;
	s->opts = *opts;
	if (s->opts.memtable_size == 0)
		s->opts.memtable_size = DEFAULT_MEMTABLE_SIZE;
	if (s->opts.block_cache_size == 0)
		s->opts.block_cache_size = DEFAULT_CACHE_SIZE;
	if (s->opts.max_cell == 0)
		s->opts.max_cell = DEFAULT_MAX_CELL;
	mutex_init(&s->tables_mu);
	if ((rc = write_queue_init(&s->writes)) < 0) {
		mutex_destroy(&s->tables_mu);
		bt_free(s);
		return rc;
	}
	mutex_init(&s->apply_mu);
	mutex_init(&s->work_mu);
	mutex_init(&s->bg_mu);
	mutex_init(&s->space_mu);
	pthread_cond_init(&s->bg_cv, NULL);
	pthread_cond_init(&s->bg_done_cv, NULL);
	for (size_t i = 0; i < ROW_LOCKS; i++)
		mutex_init(&s->row_locks[i]);
	for (size_t i = 0; i < RMW_ROWS; i++) {
		atomic_flag_clear(&s->rmw_taken[i]);
		cells_row_init(&s->rmw_rows[i]);
	}
	s->next_seq = 1;
	server_name(s->name, sizeof(s->name));
	if ((s->env = opts->env) == NULL) {
		if ((rc = env_posix_new(&s->own_env)) < 0)
			goto out_close;
		s->env = s->own_env;
	}
	s->store_dir = bt_strdup(path);
	s->log_dir = path_join(path, "log");
	s->sst_dir = path_join(path, "sst");
	s->tmp_dir = path_join(path, "tmp");
	if (s->store_dir == NULL || s->log_dir == NULL || s->sst_dir == NULL ||
	    s->tmp_dir == NULL) {
		rc = -ENOMEM;
		goto out_close;
	}
	/* Refuse a directory that is not a store before writing to it. */
	if ((p = path_join(path, "catalog.db")) == NULL) {
		rc = -ENOMEM;
		goto out_close;
	}
	rc = env_path_exists(s->env, p) ? 0 : bt_error_set(-ENOENT,
	    "%s: not a tabletfs store (no catalog.db)", path);
	bt_free(p);
	if (rc < 0)
		goto out_close;
	if ((p = path_join(path, "LOCK")) == NULL) {
		rc = -ENOMEM;
		goto out_close;
	}
	rc = env_lock(s->env, p, &s->lock);
	bt_free(p);
	if (rc < 0)
		goto out_close;
	/* Before anything writes: a full disk gives up the reserve. */
	if ((rc = space_open(s)) < 0)
		goto out_close;
	if ((p = path_join(path, "catalog.db")) == NULL) {
		rc = -ENOMEM;
		goto out_close;
	}
	rc = catalog_open(s->env, p, &s->catalog);
	bt_free(p);
	if (rc < 0)
		goto out_close;
	if ((rc = cache_new(s->opts.block_cache_size, &s->cache)) < 0)
		goto out_close;
	s->tenv.env = s->env;
	s->tenv.sst_dir = s->sst_dir;
	s->tenv.tmp_dir = s->tmp_dir;
	s->tenv.block_cache = s->cache;
	s->tenv.catalog = s->catalog;
	s->tenv.frozen_bytes = &s->frozen_bytes;
	s->tenv.active_bytes = &s->active_bytes;
	s->tenv.compact_poll = background_poll;
	s->tenv.compact_poll_arg = s;
	s->tenv.compact_wanted = background_compact_wanted;
	s->tenv.compact_wanted_arg = s;
	s->tenv.disk_full = &s->disk_full;
	if ((rc = catalog_meta_get(s->catalog, "last_seq", 0,
	    &last_seq)) < 0)
		goto out_close;
	if (last_seq >= s->next_seq)
		s->next_seq = last_seq + 1;
	if ((rc = catalog_meta_get(s->catalog, "last_stamp", 0,
	    &last_stamp)) < 0)
		goto out_close;
	s->last_stamp = (int64_t)last_stamp;
	if ((rc = server_load_tables(s)) < 0)
		goto out_close;
	if (!s->opts.read_only && ((rc = master_collect_files(s)) < 0 ||
	    (rc = master_assign_tablets(s)) < 0))
		goto out_close;
	if ((rc = server_recover(s, &next_segment)) < 0)
		goto out_close;
	s->applied_upto = s->next_seq - 1;
	atomic_store(&s->visible_seq, s->applied_upto);
	if (!s->opts.read_only) {
		/* A nearly full disk is left to the flushes (log.h). */
		struct log_options log_opts = {
			.reserve_headroom = s->opts.memtable_size,
		};

		if ((rc = catalog_meta_set(s->catalog, "last_seq",
		    s->next_seq - 1)) < 0)
			goto out_close;
		if ((rc = log_writer_open(s->env, s->log_dir, next_segment,
		    &log_opts, &s->log)) < 0)
			goto out_close;
		if ((rc = pthread_create(&s->bg_thread, NULL,
		    background_main, s)) != 0) {
			rc = -rc;
			goto out_close;
		}
		s->bg_started = true;
	}
	*out = s;
	return 0;
out_close:
	s->broken = rc;		/* nothing to flush */
	server_close(s);
	return rc;
}

int
server_close(struct server *s)
{
	int rc = 0, frc;

	if (s == NULL)
		return 0;
	if (s->bg_started) {
		mutex_lock(&s->bg_mu);
		s->bg_stop = true;
		pthread_cond_broadcast(&s->bg_cv);
		pthread_cond_broadcast(&s->bg_done_cv);
		mutex_unlock(&s->bg_mu);
		pthread_join(s->bg_thread, NULL);
	}
	/* Flush everything so the next open replays nothing. */
	if (s->log != NULL && !s->broken) {
		for (size_t i = 0; i < s->table_count; i++)
			for (size_t j = 0; j < s->tables[i]->map->count;
			    j++) {
				struct tablet *t = s->tables[i]->map->tablets[j];

				frc = tablet_flush(t, true);
				if (frc >= 0 && (frc = tablet_freeze(t)) == 0)
					frc = tablet_flush(t, true);
				if (frc < 0 && rc == 0)
					rc = frc;
			}
		if (rc == 0)
			rc = catalog_meta_set(s->catalog, "last_seq",
			    s->next_seq - 1);
		if (rc == 0)
			rc = catalog_meta_set(s->catalog, "last_stamp",
			    (uint64_t)s->last_stamp);
	}
	frc = log_writer_close(s->log);
	if (rc == 0)
		rc = frc;
	/* Broken: nothing was flushed, and the log is all that holds the
	 * memtables' mutations; the next open replays it. */
	if (rc == 0)
		rc = s->broken;
	if (s->log != NULL && rc == 0) {
		mutex_lock(&s->apply_mu);
		s->segment_count = 0;
		mutex_unlock(&s->apply_mu);
		s->log = NULL;
		/* Everything is in SSTables: the log can go. */
		uint64_t *segs = NULL;
		size_t n = 0;

		if (log_list_segments(s->env, s->log_dir, &segs, &n) == 0) {
			for (size_t i = 0; i < n; i++) {
				char path[4096];
				struct lost_segment *lost = NULL;

				for (size_t k = 0; k < s->lost_pending_count;
				    k++)
					if (s->lost_pending[k].number ==
					    segs[i])
						lost = &s->lost_pending[k];
				log_segment_path(path, sizeof(path),
				    s->log_dir, segs[i]);
				if (lost != NULL)
					recover_keep_lost(s, *lost);
				else
					env_path_remove(s->env, path);
			}
			env_dir_sync(s->env, s->log_dir);
		}
		bt_free(segs);
	}
	for (size_t i = 0; i < s->table_count; i++)
		table_unref(s->tables[i]);
	bt_free(s->tables);
	bt_free(s->segments);
	bt_free(s->lost_pending);
	cache_free(s->cache);
	catalog_close(s->catalog);
	env_unlock(s->lock);
	env_free(s->own_env);
	bt_free(s->store_dir);
	bt_free(s->reserve_path);
	bt_free(s->log_dir);
	bt_free(s->sst_dir);
	bt_free(s->tmp_dir);
	for (size_t i = 0; i < ROW_LOCKS; i++)
		mutex_destroy(&s->row_locks[i]);
	for (size_t i = 0; i < RMW_ROWS; i++)
		cells_row_release(&s->rmw_rows[i]);
	mutex_destroy(&s->tables_mu);
	write_queue_release(&s->writes);
	mutex_destroy(&s->apply_mu);
	mutex_destroy(&s->work_mu);
	mutex_destroy(&s->bg_mu);
	mutex_destroy(&s->space_mu);
	pthread_cond_destroy(&s->bg_cv);
	pthread_cond_destroy(&s->bg_done_cv);
	bt_free(s);
	return rc;
}

