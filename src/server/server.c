/*
 * server.c - creating, opening (recovery included) and closing a store:
 * the top of src/server, which drives the registry (server_tables.c),
 * the master (master.c), the background thread (server_background.c) and
 * the rest, and which none of them calls.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "server/server_int.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/storage.h"

/* The batch lock (server_int.h), writer-preferring. */
static void
server_batch_lock_init(pthread_rwlock_t *l)
{
	pthread_rwlockattr_t attr;

	pthread_rwlockattr_init(&attr);
	pthread_rwlockattr_setkind_np(&attr,
	    PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(l, &attr);
	pthread_rwlockattr_destroy(&attr);
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
	struct replay rp;
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
	rp = (struct replay){ .dir = s->log_dir, .name = "log",
	    .max_seq = s->next_seq - 1, .max_stamp = s->last_stamp };
	for (size_t i = 0; i < count; i++) {
		kept[i].number = segments[i];
		rc = server_replay_segment(s, &rp, segments[i],
		    i + 1 == count, &damaged[i], &kept[i].torn);
		s->next_seq = rp.max_seq + 1;
		s->last_stamp = rp.max_stamp;
		if (rc < 0)
			goto out;
		*next_segment = segments[i] + 1;
	}
	if (s->opts.read_only)
		goto out;
	if (s->replay_disk_full) {
		server_space_note(s, -ENOSPC);
		goto out_keep;
	}
	for (size_t i = 0; i < s->table_count; i++)
		for (size_t j = 0; j < s->tables[i]->map->count; j++) {
			struct tablet *t = s->tables[i]->map->tablets[j];

			if ((rc = tablet_freeze(t)) == 0)
				rc = tablet_flush(t, true);
			if (server_space_is_full_error(rc)) {
				server_space_note(s, rc);
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
			server_segment_note_locked(s, segments[i],
			    s->next_seq - 1);
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

/* Every table of the catalog, its tablets served (an embedded store's
 * server) or not (a cell's, whose master loads them one by one). */
static int
server_load_tables(struct server *s)
{
	enum server_tablets_open how = s->cell ? SERVER_TABLETS_UNSERVED :
	    SERVER_TABLETS_FILES;
	char **names = NULL;
	size_t count = 0;
	int rc;

	if ((rc = catalog_table_list(s->catalog, &names, &count)) < 0)
		return rc;
	for (size_t i = 0; i < count && rc == 0; i++) {
		struct server_table *t;
		uint64_t created;

		if ((rc = server_table_load(s, names[i], how, &t)) < 0)
			break;
		mutex_lock(&s->tables_mu);
		rc = server_tables_add_locked(s, t);
		mutex_unlock(&s->tables_mu);
		if (rc < 0) {
			server_table_unref(t);
			break;
		}
		for (size_t j = 0; j < t->map->count; j++) {
			uint64_t f = tablet_flushed_seq(t->map->tablets[j]);

			if (f >= s->next_seq)
				s->next_seq = f + 1;
		}
		/* Its families' writes number at or above their birth
		 * (server_seq_raise_created_locked()). */
		created = tablet_schema_created_seq_max(t->schema);
		if (created > s->next_seq)
			s->next_seq = created;
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

/* The directories of s's files: its own (the store's, or on a cell
 * path/dir), with log/ and tmp/ in it, and the store's sst/. */
static int
server_dirs_name(struct server *s, const char *path)
{
	s->home_dir = s->cell ? path_join(path, s->opts.dir) :
	    bt_strdup(path);
	if (s->home_dir == NULL)
		return -ENOMEM;
	s->log_dir = path_join(s->home_dir, "log");
	s->sst_dir = path_join(path, "sst");
	s->tmp_dir = path_join(s->home_dir, "tmp");
	if (s->log_dir == NULL || s->sst_dir == NULL || s->tmp_dir == NULL)
		return -ENOMEM;
	return 0;
}

/* The store's counters of the last sequence number and stamp, which
 * the server that holds the catalog goes on above; a cell's other
 * servers number above each tablet they take (server_assign.c). */
static int
server_counters_load(struct server *s)
{
	uint64_t last_seq, last_stamp;
	int rc;

	if (s->catalog_remote)
		return 0;
	if ((rc = catalog_meta_get(s->catalog, "last_seq", 0,
	    &last_seq)) < 0)
		return rc;
	if (last_seq >= s->next_seq)
		s->next_seq = last_seq + 1;
	if ((rc = catalog_meta_get(s->catalog, "last_stamp", 0,
	    &last_stamp)) < 0)
		return rc;
	s->last_stamp = (int64_t)last_stamp;
	s->stamp_recorded = s->last_stamp;
	return 0;
}

int
server_open(const char *path, const struct server_options *opts,
    struct server **out)
{
	struct server *s;
	uint64_t next_segment;
	char *p;
	int rc = -ENOMEM;

	/* The catalog given is ours from here on (server.h). */
	if ((rc = server_cell_options_check(opts)) < 0) {
		catalog_close(opts->catalog);
		return rc;
	}
	if ((s = bt_calloc(1, sizeof(*s))) == NULL) {
		catalog_close(opts->catalog);
		return -ENOMEM;
	}
	s->catalog = opts->catalog;
	s->cell = opts->dir != NULL;
	s->catalog_remote = opts->catalog != NULL;
	s->opts = *opts;
	if (s->opts.memtable_size == 0)
		s->opts.memtable_size = DEFAULT_MEMTABLE_SIZE;
	if (s->opts.block_cache_size == 0)
		s->opts.block_cache_size = DEFAULT_CACHE_SIZE;
	if (s->opts.max_cell == 0)
		s->opts.max_cell = DEFAULT_MAX_CELL;
	mutex_init(&s->tables_mu);
	if ((rc = server_queue_init(&s->writes)) < 0) {
		mutex_destroy(&s->tables_mu);
		catalog_close(s->catalog);
		bt_free(s);
		return rc;
	}
	mutex_init(&s->apply_mu);
	mutex_init(&s->work_mu);
	mutex_init(&s->bg_mu);
	mutex_init(&s->space_mu);
	server_cell_poll_init(s);
	pthread_cond_init(&s->bg_cv, NULL);
	pthread_cond_init(&s->bg_done_cv, NULL);
	for (size_t i = 0; i < ROW_LOCKS; i++)
		mutex_init(&s->row_locks[i]);
	server_batch_lock_init(&s->batch_lock);
	server_row_pool_init(&s->rmw_rows);
	s->next_seq = 1;
	if (s->cell)
		snprintf(s->name, sizeof(s->name), "%s", opts->name);
	else
		server_name(s->name, sizeof(s->name));
	if ((s->env = opts->env) == NULL) {
		if ((rc = env_posix_new(&s->own_env)) < 0)
			goto out_close;
		s->env = s->own_env;
	}
	if ((rc = server_dirs_name(s, path)) < 0)
		goto out_close;
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
	/* The lock goes with the catalog: a remote one's holder has it. */
	if (!s->catalog_remote) {
		if ((p = path_join(path, STORAGE_LOCK_FILE)) == NULL) {
			rc = -ENOMEM;
			goto out_close;
		}
		rc = env_lock(s->env, p, &s->lock);
		bt_free(p);
		if (rc < 0)
			goto out_close;
	}
	if (s->cell && ((rc = server_cell_dirs_make(s, path)) < 0 ||
	    (rc = server_cell_log_check(s)) < 0))
		goto out_close;
	if (!s->cell && (rc = server_cell_logs_pending(s, path)) < 0)
		goto out_close;
	/* Before anything writes: a full disk gives up the reserve. */
	if ((rc = server_space_open(s)) < 0)
		goto out_close;
	if (!s->catalog_remote) {
		if ((p = path_join(path, "catalog.db")) == NULL) {
			rc = -ENOMEM;
			goto out_close;
		}
		rc = catalog_open(s->env, p, &s->catalog);
		bt_free(p);
		if (rc < 0)
			goto out_close;
	}
	/* Only needed while opening: the caller's strings. */
	s->opts.name = s->opts.dir = NULL;
	s->opts.catalog = NULL;
	if ((rc = cache_new(s->opts.block_cache_size, &s->cache)) < 0)
		goto out_close;
	s->tenv.env = s->env;
	s->tenv.sst_dir = s->sst_dir;
	s->tenv.tmp_dir = s->tmp_dir;
	s->tenv.block_cache = s->cache;
	s->tenv.catalog = s->catalog;
	s->tenv.frozen_bytes = &s->frozen_bytes;
	s->tenv.active_bytes = &s->active_bytes;
	s->tenv.compact_poll = server_background_poll;
	s->tenv.compact_poll_arg = s;
	s->tenv.compact_wanted = server_background_compact_wanted;
	s->tenv.compact_wanted_arg = s;
	s->tenv.disk_full = &s->disk_full;
	if ((rc = server_counters_load(s)) < 0 ||
	    (rc = server_load_tables(s)) < 0)
		goto out_close;
	if (!s->opts.read_only) {
		/* The sweep's lock, though no flush runs yet. */
		mutex_lock(&s->work_mu);
		rc = master_collect_files(s);
		mutex_unlock(&s->work_mu);
		/* A cell's master assigns its tablets. */
		if (rc < 0 || (!s->cell &&
		    (rc = master_assign_tablets(s)) < 0))
			goto out_close;
	}
	if ((rc = server_recover(s, &next_segment)) < 0)
		goto out_close;
	s->applied_upto = s->next_seq - 1;
	atomic_store(&s->visible_seq, s->applied_upto);
	if (!s->opts.read_only) {
		/* A nearly full disk is left to the flushes (log.h).  On
		 * storage whose files are bounded (the RADOS object limit),
		 * a segment is cut at half the bound, and a batch that
		 * would pass the bound starts the next one (docs/rados.md). */
		struct log_options log_opts = {
			.reserve_headroom = s->opts.memtable_size,
		};
		uint64_t limit = env_max_file_size(s->env);

		if (limit != UINT64_MAX && limit / 2 < LOG_DEFAULT_SEGMENT_SIZE)
			log_opts.segment_size = limit / 2;
		if (limit != UINT64_MAX)
			log_opts.max_file_size = limit;

		if (!s->catalog_remote && (rc = catalog_meta_set(s->catalog,
		    "last_seq", s->next_seq - 1)) < 0)
			goto out_close;
		if ((rc = log_writer_open(s->env, s->log_dir, next_segment,
		    &log_opts, &s->log)) < 0)
			goto out_close;
		if ((rc = server_background_start(s)) < 0)
			goto out_close;
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
	server_background_stop(s);
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
		if (rc == 0 && !s->catalog_remote)
			rc = catalog_meta_set(s->catalog, "last_seq",
			    s->next_seq - 1);
		if (rc == 0 && !s->catalog_remote)
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
		server_table_unref(s->tables[i]);
	bt_free(s->tables);
	bt_free(s->segments);
	bt_free(s->lost_pending);
	cache_free(s->cache);
	catalog_close(s->catalog);
	env_unlock(s->lock);
	env_free(s->own_env);
	bt_free(s->home_dir);
	bt_free(s->reserve_path);
	bt_free(s->log_dir);
	bt_free(s->sst_dir);
	bt_free(s->tmp_dir);
	for (size_t i = 0; i < ROW_LOCKS; i++)
		mutex_destroy(&s->row_locks[i]);
	pthread_rwlock_destroy(&s->batch_lock);
	server_row_pool_release(&s->rmw_rows);
	mutex_destroy(&s->tables_mu);
	server_queue_release(&s->writes);
	mutex_destroy(&s->apply_mu);
	mutex_destroy(&s->work_mu);
	mutex_destroy(&s->bg_mu);
	mutex_destroy(&s->space_mu);
	server_cell_poll_release(s);
	pthread_cond_destroy(&s->bg_cv);
	pthread_cond_destroy(&s->bg_done_cv);
	bt_free(s);
	return rc;
}

