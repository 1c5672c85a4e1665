/*
 * server_segments.c - the commit log's segments: which sequence numbers
 * each holds, and deleting those that every tablet has flushed past
 * (docs/design.md section 7, W7).
 */
#include <errno.h>

#include "server/server_int.h"
#include "util/alloc.h"

/* A segment whose records are all flushed is rotated past this size. */
#define SEGMENT_ROTATE_FLUSHED	(1ull << 20)

void
server_segment_note_locked(struct server *s, uint64_t number, uint64_t max_seq)
{
	struct segment *n;

	mutex_assert_held(&s->apply_mu);
	for (size_t i = 0; i < s->segment_count; i++) {
		if (s->segments[i].number == number) {
			if (max_seq > s->segments[i].max_seq)
				s->segments[i].max_seq = max_seq;
			return;
		}
	}
	n = bt_realloc(s->segments, (s->segment_count + 1) * sizeof(*n));
	if (n == NULL)
		return;	/* the segment is then kept until close */
	s->segments = n;
	s->segments[s->segment_count].number = number;
	s->segments[s->segment_count].max_seq = max_seq;
	s->segment_count++;
}

/*
 * Before a segment goes, the catalog's last_stamp must cover the stamps
 * its records carry (mutation.h), or an open after a crash, replaying
 * only what is left, could stamp below them when its clock is behind
 * (docs/design.md section 1).  One commit for all the segments that go
 * in one collection.  Caller holds apply_mu, so no stamp is given
 * meanwhile.
 */
static int
stamp_recorded(struct server *s)
{
	int rc;

	mutex_assert_held(&s->apply_mu);
	if (s->stamp_recorded >= s->last_stamp)
		return 0;
	if ((rc = catalog_meta_set(s->catalog, CATALOG_META_LAST_STAMP,
	    (uint64_t)s->last_stamp)) < 0)
		return rc;
	s->stamp_recorded = s->last_stamp;
	return 0;
}

/*
 * Delete the log segments that no tablet needs any more: every record in
 * them is in an SSTable.  The segment being written is kept, unless all
 * of it is flushed and it is past SEGMENT_ROTATE_FLUSHED bytes (or holds
 * anything while the disk is full): it is then finished and a new one
 * begun, so that it can go.  Segments rotate at their size otherwise
 * (64 MiB), and a segment that size, every record of it flushed, was
 * kept on a disk it had filled.  A poisoned writer is not rotated: its
 * writes stay refused until the reopen (server_queue.c).  A group
 * applied after the tablets are read is in no memtable that they show,
 * and by the time apply_mu is taken the next group may have started a
 * new segment, so that the group's is no longer the current one: every
 * sequence number past visible_seq, read before the tablets, counts as
 * unflushed.
 */
void
server_segments_collect(struct server *s)
{
	struct server_table **tables;
	struct log_writer_stats ls;
	struct log_position pos;
	uint64_t oldest, current;
	size_t count, kept = 0;

	if (s->log == NULL)
		return;
	oldest = atomic_load(&s->visible_seq) + 1;
	if (server_tables_snapshot(s, &tables, &count) < 0)
		return;
	for (size_t i = 0; i < count; i++) {
		struct tablet_map *m = server_table_map(tables[i]);

		for (size_t j = 0; j < m->count; j++) {
			uint64_t u = tablet_oldest_unflushed_seq(
			    m->tablets[j]);

			if (u < oldest)
				oldest = u;
		}
		server_tablet_map_unref(m);
	}
	server_tables_snapshot_free(tables, count);
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

		if (g->number != current && g->max_seq < oldest &&
		    stamp_recorded(s) == 0) {
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
