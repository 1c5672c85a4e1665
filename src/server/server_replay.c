/*
 * server_replay.c - replaying commit log segments into tablets: every
 * tablet of the store when it opens (server.c), or tablets recovered
 * from another server's log (server_assign.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "server/server_int.h"
#include "util/error.h"

/* The tablet of the record's row that this replay fills, or NULL when
 * the record is not for it. */
static struct tablet *
replay_target(struct server *s, const struct replay *rp,
    const struct mutation_record *rec)
{
	struct server_table *t;

	if (rp->only_count > 0) {
		if (rec->table_id != rp->only_table)
			return NULL;
		for (size_t i = 0; i < rp->only_count; i++)
			if (tablet_contains(rp->only[i], rec->row))
				return rp->only[i];
		return NULL;
	}
	/* Alone at open, but a table is found under tables_mu. */
	mutex_lock(&s->tables_mu);
	t = server_table_find_id_locked(s, rec->table_id);
	mutex_unlock(&s->tables_mu);
	if (t == NULL)
		return NULL;	/* the table was dropped */
	return server_tablet_map_find(t->map, rec->row);
}

/* Replay one log record into its tablet, unless it is already flushed. */
static int
replay_record(struct server *s, struct replay *rp, struct slice data)
{
	struct mutation_record rec;
	struct tablet *tablet;
	uint64_t last;
	int rc;

	if ((rc = mutation_record_decode(data, &rec)) < 0)
		return rc;
	last = rec.seq + rec.count - 1;
	if (last > rp->max_seq)
		rp->max_seq = last;
	/* The next stamp goes above the record's, whatever the clock says
	 * now.  A version 1 record has none, and a put's time may be a
	 * client's: only one near the clock is taken as a server's. */
	if (rec.stamp > rp->max_stamp)
		rp->max_stamp = rec.stamp;
	for (size_t i = 0; i < rec.count && rec.stamp == 0; i++)
		if (rec.ops[i].kind == MUTATION_PUT &&
		    rec.ops[i].ts > rp->max_stamp &&
		    rec.ops[i].ts <= server_now(s) + 1000000)
			rp->max_stamp = rec.ops[i].ts;
	if ((tablet = replay_target(s, rp, &rec)) == NULL ||
	    last <= tablet_flushed_seq(tablet))
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

void
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

int
server_replay_segment(struct server *s, struct replay *rp, uint64_t number,
    bool last, bool *damaged, bool *torn)
{
	struct log_reader *r;
	struct slice rec;
	uint64_t off, n, size, intact;
	const char *kept;
	char path[4096];
	int rc;

	log_segment_path(path, sizeof(path), rp->dir, number);
	if ((rc = env_path_size(s->env, path, &size)) < 0 ||
	    (rc = log_reader_open(s->env, path, &r)) < 0)
		return rc;
	if (!last)
		log_reader_set_sealed(r);
	for (;;) {
		rc = log_reader_next(r, &rec, NULL);
		if (rc == 0) {
			if ((rc = replay_record(s, rp, rec)) < 0)
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
		kept = rp->only_count > 0 ? "the segment is left where it is" :
		    s->opts.read_only ? "read-only: the segment stays in log/" :
		    "the segment is kept in lost/";
		if (intact > 0)
			server_notice(s, "%s/%016" PRIu64 ".log: damaged "
			    "record at offset %" PRIu64 " before %" PRIu64
			    " intact records, none synced after it: dropped "
			    "as torn by a power loss (%s)", rp->name, number,
			    off, intact, kept);
		else
			server_notice(s, "%s/%016" PRIu64 ".log: %" PRIu64
			    " damaged bytes at offset %" PRIu64 " skipped at "
			    "recovery (%s)", rp->name, number, n, off, kept);
		if (rc == BT_DONE)
			break;
	}
	log_reader_close(r);
	return rc == BT_DONE ? 0 : rc;
}
