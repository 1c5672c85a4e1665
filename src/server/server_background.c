/*
 * server_background.c - the background thread: rounds of flushes,
 * compactions, idle checks and the master's balancing, started by the
 * timer, by writers that need memory, or by a caller waiting for one.
 */
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "server/server_int.h"
#include "util/alloc.h"
#include "util/error.h"

/* Flush every frozen memtable of tables; *flushed is set when one was.
 * Returns the first error, or 0. */
static int
flush_frozen(struct server_table **tables, size_t count, bool *flushed)
{
	int rc, first = 0;

	for (size_t i = 0; i < count; i++) {
		struct tablet_map *m = server_table_map(tables[i]);

		for (size_t j = 0; j < m->count; j++) {
			if (!tablet_has_frozen(m->tablets[j]))
				continue;
			if ((rc = tablet_flush(m->tablets[j], false)) == 0)
				*flushed = true;
			else if (first == 0)
				first = rc;
		}
		server_tablet_map_unref(m);
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
void
server_background_poll(void *arg)
{
	struct server *s = arg;
	struct server_table **tables;
	size_t count;
	bool flushed = false;

	mutex_assert_held(&s->work_mu);
	if (atomic_load(&s->active_bytes) > (int64_t)master_freeze_size(s))
		master_limit_memory(s);
	if (atomic_load(&s->frozen_bytes) <= 0)
		return;
	if (server_tables_snapshot(s, &tables, &count) < 0)
		return;
	(void)flush_frozen(tables, count, &flushed);
	server_tables_snapshot_free(tables, count);
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
 * next memtable is about to take that memory again: a trim there would
 * cost a malloc_trim per flush and make the new memtable fault every page
 * back in, for no lower peak (the active and frozen memtables both full);
 * bench/figures.md has the figures.
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

	mutex_assert_held(&s->work_mu);
	/* A full disk: nothing is flushed or compacted unless asked for
	 * (server_space.c, rule 2); a writer waiting for memory is told. */
	if (server_space_full(s)) {
		*flush_error = atomic_load(&s->disk_full);
		server_segments_collect(s);
		return master_collect_rounds(s, s->bg_rounds);
	}
	master_limit_memory(s);
	if ((rc = server_tables_snapshot(s, &tables, &count)) < 0)
		return *flush_error = rc;
	for (size_t i = 0; i < count; i++) {
		struct tablet_map *m = server_table_map(tables[i]);

		for (size_t j = 0; j < m->count; j++) {
			struct tablet *t = m->tablets[j];

			rc = tablet_flush(t, false);
			server_cell_poll_note(s, rc);
			flush_failed |= rc < 0;
			freed |= rc == 0;
			rc = background_idle(s, t, idle_pending);
			if (rc < 0 && first == 0)
				first = rc;
			flush_failed |= rc < 0;
			if (tablet_needs_compaction(t)) {
				rc = tablet_compact(t, false, server_now(s));
				server_cell_poll_note(s, rc);
				if (rc < 0 && first == 0)
					first = rc;
				freed = true;
			}
		}
		server_tablet_map_unref(m);
		rc = master_balance_table(s, tables[i]);
		if (rc < 0 && first == 0)
			first = rc;
	}
	*flush_error = flush_failed ?
	    flush_frozen(tables, count, &freed) : 0;
	server_cell_poll_note(s, *flush_error);
	if (*flush_error < 0 && first == 0)
		first = *flush_error;
	server_tables_snapshot_free(tables, count);
	server_space_note(s, *flush_error);
	server_space_note(s, first);
	server_segments_collect(s);
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
	/* Room again: take the reserve back. */
	(void)server_space_full(s);
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
		/* Before work_mu: its RPCs would hold up loads and writes
		 * that read a table again. */
		server_cell_poll_tick(s);
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
server_background_wake(struct server *s)
{
	mutex_lock(&s->bg_mu);
	s->bg_wanted = true;
	pthread_cond_signal(&s->bg_cv);
	mutex_unlock(&s->bg_mu);
}

/* The tablets' compact_wanted: reads used up a tablet's budget
 * (TABLET_SEEK_BYTES); run a round now rather than at the timer. */
void
server_background_compact_wanted(void *arg)
{
	server_background_wake(arg);
}

/*
 * Wait until a background round that starts after this call has ended, and
 * return that round's first error.
 */
int
server_background_wait_round(struct server *s)
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

int
server_background_start(struct server *s)
{
	int rc;

	assert(!s->bg_started && !s->opts.read_only);
	if ((rc = pthread_create(&s->bg_thread, NULL, background_main,
	    s)) != 0)
		return -rc;
	s->bg_started = true;
	return 0;
}

void
server_background_stop(struct server *s)
{
	if (!s->bg_started)
		return;
	mutex_lock(&s->bg_mu);
	s->bg_stop = true;
	pthread_cond_broadcast(&s->bg_cv);
	pthread_cond_broadcast(&s->bg_done_cv);
	mutex_unlock(&s->bg_mu);
	pthread_join(s->bg_thread, NULL);
	s->bg_started = false;
}
