/*
 * server_bulk.c - the bulk load (server.h, docs/design.md section 8):
 * cells sorted in bounded memory (util/extsort.h), written as SSTables
 * straight into the table's tablets, one per tablet and locality group,
 * and named in one catalog transaction, without the commit log.
 *
 * The steps, and what a crash at each leaves:
 *
 *   1. put: each cell is checked as a write would be, encoded as its
 *      internal key without the trailer (all cells of a load share one
 *      sequence number, so it does not change their order) and handed to
 *      the sort, which spills sorted runs to tmp/.  A crash leaves run
 *      files in tmp/, which the sweep of the next open removes
 *      (master_collect_files(), which leaves tmp/ alone while a load of
 *      this process is gathering).
 *   2. commit: flush the memtables (so that the tablets' redo points can
 *      rise to the load's), then, holding the work lock (no flush,
 *      compaction, split, merge or sweep) and the apply turn (no write is
 *      numbered or published), take one sequence number S above every
 *      one given, and merge the runs into SSTables, routing each cell to
 *      its tablet and group (tablet.h, ingest): written to tmp/, synced,
 *      renamed into sst/, sst/ synced (W6).  A crash leaves files that
 *      no catalog row names, which the sweep removes.
 *   3. one catalog transaction names every file, raises every touched
 *      tablet's redo point and the counters last_seq and last_stamp
 *      (catalog_tablets_ingest()).  That commit is the load's one commit
 *      point: before it the store is as it was, after it the whole load
 *      is there.
 *   4. install the files in the tablets and publish S.  Readers of this
 *      process see no cell of the load before the last tablet has it,
 *      since S is published only then and the apply turn keeps every
 *      write group from publishing a later number meanwhile.
 *
 * The cells of the load carry S, so they sit above everything written
 * before the commit (a cell over an older delete of its column is
 * visible, and replaces a version of the same timestamp), and every write
 * after it, numbered above S, wins over them.  Cells without a timestamp
 * get the stamp taken when the load was opened, one for the whole load,
 * above every stamp given before (W3).
 *
 * A tablet's redo point becomes S only when its memtables hold nothing
 * older: after the flush they hold only what this process wrote between
 * the flush and S, and then the redo point stays below that.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "server/server_int.h"
#include "tablet/ikey.h"
#include "util/alloc.h"
#include "util/coding.h"
#include "util/error.h"
#include "util/extsort.h"

struct server_bulk {
	struct server *s;
	struct server_table *t;		/* referenced */
	struct tablet_schema *schema;	/* referenced, for the checks */
	int64_t stamp;			/* of cells without a timestamp */
	struct extsort *sort;
	struct buf key;			/* scratch */
	int failed;			/* the first error, sticky */
	bool committed;
	uint64_t cells;
};

static int
check_writable(struct server *s)
{
	if (s->opts.read_only)
		return bt_error_set(-EROFS, "store is read-only");
	if (s->broken < 0)
		return bt_error_set(s->broken, "the store refuses writes "
		    "until it is reopened");
	if (server_space_full(s))
		return bt_error_set(-ENOSPC, "the disk is full: a bulk load "
		    "adds data");
	return 0;
}

int
server_bulk_open(struct server *s, const char *table,
    const struct server_bulk_options *opts, struct server_bulk **out)
{
	struct extsort_options xo;
	struct server_bulk *b;
	char prefix[64];
	uint64_t number;
	int rc;

	if ((rc = check_writable(s)) < 0)
		return rc;
	if ((b = bt_calloc(1, sizeof(*b))) == NULL)
		return -ENOMEM;
	b->s = s;
	buf_init(&b->key);
	if ((rc = server_table_lookup(s, table, &b->t)) < 0)
		goto out_free;
	b->schema = server_table_schema(s, b->t);
	/* A name for the runs no other load of the store has. */
	if ((rc = catalog_next_number(s->catalog, &number)) < 0)
		goto out_free;
	snprintf(prefix, sizeof(prefix), "bulk-%016" PRIu64, number);
	memset(&xo, 0, sizeof(xo));
	xo.env = s->env;
	xo.dir = s->tmp_dir;
	xo.prefix = prefix;
	xo.budget = opts != NULL ? opts->memory_budget : 0;
	if ((rc = extsort_new(&xo, &b->sort)) < 0)
		goto out_free;
	/* The load's stamp, taken as a write group takes its own (W3). */
	mutex_lock(&s->apply_mu);
	b->stamp = server_stamp_next_locked(s);
	atomic_fetch_add(&s->bulk_loads, 1);
	mutex_unlock(&s->apply_mu);
	*out = b;
	return 0;
out_free:
	tablet_schema_unref(b->schema);
	server_table_unref(b->t);
	buf_release(&b->key);
	bt_free(b);
	return rc;
}

int
server_bulk_put(struct server_bulk *b, struct slice row, struct slice family,
    struct slice qualifier, int64_t ts, struct slice value)
{
	struct ikey k;
	int rc;

	assert(!b->committed);
	if (b->failed < 0)
		return bt_error_set(b->failed, "an earlier put of this bulk "
		    "load failed: %s", bt_strerror(b->failed));
	if (row.n == 0 || row.n > SERVER_MAX_ROW)
		return bt_error_set(-EINVAL, "row key of %zu bytes (1 to %u "
		    "allowed)", row.n, SERVER_MAX_ROW);
	if (!tablet_schema_has_family(b->schema, family))
		return bt_error_set(-ENOENT, "table %s: no family %.*s",
		    b->t->name, (int)family.n, (const char *)family.p);
	if (qualifier.n > SERVER_MAX_QUALIFIER)
		return bt_error_set(-EINVAL, "qualifier of %zu bytes (at most "
		    "%u allowed)", qualifier.n, SERVER_MAX_QUALIFIER);
	if (value.n > b->s->opts.max_cell)
		return bt_error_set(-EFBIG, "value of %zu bytes (at most %"
		    PRIu64 " allowed)", value.n, b->s->opts.max_cell);
	if (ts == MUTATION_TS_SERVER)
		ts = b->stamp;
	else if (ts < 0)
		return bt_error_set(-EINVAL, "timestamp %" PRId64 " out of "
		    "range", ts);
	memset(&k, 0, sizeof(k));
	k.row = row;
	k.family = family;
	k.qualifier = qualifier;
	k.ts = ts;
	k.kind = IKEY_PUT;
	buf_clear(&b->key);
	if ((rc = ikey_encode(&k, &b->key)) < 0)
		return b->failed = rc;
	/* Without its trailer: the commit appends S's. */
	assert(b->key.n > 8);
	if ((rc = extsort_add(b->sort, slice_make(b->key.p, b->key.n - 8),
	    value)) < 0) {
		server_space_note(b->s, rc);
		return b->failed = rc;
	}
	return 0;
}

/* What the commit builds, for each tablet of the map. */
struct bulk_target {
	struct buf end_key;		/* esc(end); empty: no end */
	struct tablet_ingest *ingest;	/* NULL until a cell goes there */
};

/*
 * Merge the sorted cells into the tablets of map m, each key given the
 * trailer of (seq, put); each target's ingest finished once the merge is
 * past its tablet, its files in sst/, and sst/ synced once at the end.
 * *cells counts the cells written.
 */
static int
bulk_build(struct server_bulk *b, const struct tablet_map *m,
    struct bulk_target *targets, uint64_t seq, uint64_t *cells)
{
	struct server *s = b->s;
	struct slice key, value;
	size_t i = 0;
	bool any = false;
	uint8_t trailer[8];
	int rc;

	put_be64(trailer, ~(seq << 8 | IKEY_PUT));
	for (size_t j = 0; j < m->count; j++) {
		struct slice end = tablet_end(m->tablets[j]);

		if (end.n > 0 && (rc = ikey_append_row_prefix(end,
		    &targets[j].end_key)) < 0)
			return rc;
	}
	while ((rc = extsort_next(b->sort, &key, &value)) == 0) {
		buf_clear(&b->key);
		if ((rc = buf_append(&b->key, key.p, key.n)) < 0 ||
		    (rc = buf_append(&b->key, trailer, 8)) < 0)
			return rc;
		/* esc() keeps row order and is prefix-free, so a key at or
		 * past esc(end) has a row at or past end (ikey.h). */
		while (targets[i].end_key.n > 0 && slice_compare(buf_slice(
		    &b->key), buf_slice(&targets[i].end_key)) >= 0) {
			assert(i + 1 < m->count);
			/* Done with that tablet: finish its files now, so
			 * that one tablet's builders are open at a time. */
			if (targets[i].ingest != NULL && (rc =
			    tablet_ingest_finish(targets[i].ingest, seq)) < 0)
				return rc;
			any |= targets[i].ingest != NULL;
			i++;
		}
		if (targets[i].ingest == NULL && (rc = tablet_ingest_new(
		    m->tablets[i], true, &targets[i].ingest)) < 0)
			return rc;
		if ((rc = tablet_ingest_add(targets[i].ingest,
		    buf_slice(&b->key), value)) < 0)
			return rc;
		(*cells)++;
	}
	if (rc < 0)
		return rc;
	if (targets[i].ingest != NULL) {
		if ((rc = tablet_ingest_finish(targets[i].ingest, seq)) < 0)
			return rc;
		any = true;
	}
	return any ? env_dir_sync(s->env, s->sst_dir) : 0;
}

/*
 * Name the targets' files in one catalog transaction and install them;
 * caller holds the apply turn, so the memtables' oldest entries do not
 * change meanwhile.
 */
static int
bulk_name(struct server_bulk *b, const struct tablet_map *m,
    struct bulk_target *targets, uint64_t seq,
    struct server_bulk_stats *st)
{
	struct server *s = b->s;
	struct catalog_ingest *ins;
	size_t n = 0;
	int rc;

	if ((ins = bt_calloc(m->count + 1, sizeof(*ins))) == NULL)
		return -ENOMEM;
	for (size_t j = 0; j < m->count; j++) {
		uint64_t oldest;

		if (targets[j].ingest == NULL)
			continue;
		oldest = tablet_oldest_unflushed_seq(m->tablets[j]);
		ins[n].tablet_id = tablet_id(m->tablets[j]);
		ins[n].files = tablet_ingest_files(targets[j].ingest,
		    &ins[n].file_count);
		ins[n].flushed_seq = oldest > seq ? seq : oldest - 1;
		st->files += ins[n].file_count;
		n++;
	}
	st->tablets = n;
	rc = catalog_tablets_ingest(s->catalog, b->t->id, ins, n, seq,
	    (uint64_t)s->last_stamp);
	if (rc < 0) {
		server_space_note(s, rc);
		if (catalog_commit_unknown(s->catalog))
			rc = bt_error_set(rc, "the catalog's commit failed "
			    "(%s) after it may have reached the disk: the load "
			    "may be there once the store is reopened, whole, "
			    "or not at all", bt_error_detail());
		goto out;
	}
	n = 0;
	for (size_t j = 0; j < m->count; j++)
		if (targets[j].ingest != NULL)
			tablet_ingest_install(targets[j].ingest,
			    ins[n++].flushed_seq);
out:
	bt_free(ins);
	return rc;
}

int
server_bulk_commit(struct server_bulk *b, struct server_bulk_stats *out)
{
	struct server *s = b->s;
	struct server_bulk_stats st;
	struct bulk_target *targets = NULL;
	struct tablet_map *m;
	char detail[512];
	uint64_t seq;
	int rc;

	assert(!b->committed);
	b->committed = true;
	memset(&st, 0, sizeof(st));
	if ((rc = b->failed) < 0)
		return bt_error_set(rc, "an earlier put of this bulk load "
		    "failed: %s", bt_strerror(rc));
	if ((rc = extsort_finish(b->sort)) < 0)
		return rc;
	if ((rc = check_writable(s)) < 0 || (rc = server_flush(s)) < 0)
		return rc;
	mutex_lock(&s->work_mu);
	mutex_lock(&s->apply_mu);
	if ((rc = s->broken) < 0) {
		rc = bt_error_set(rc, "the store refuses writes until it is "
		    "reopened");
		goto out_unlock;
	}
	if (atomic_load(&b->t->dropped)) {
		rc = bt_error_set(-ENOENT, "table %s was deleted",
		    b->t->name);
		goto out_unlock;
	}
	/* One number above every one given (W2: the apply turn). */
	seq = atomic_load_explicit(&s->next_seq, memory_order_relaxed);
	assert(seq == s->applied_upto + 1);
	if (seq > IKEY_MAX_SEQ) {
		rc = bt_error_set(-EOVERFLOW, "sequence numbers exhausted");
		goto out_unlock;
	}
	atomic_store_explicit(&s->next_seq, seq + 1, memory_order_relaxed);
	m = server_table_map_locked(s, b->t);
	if ((targets = bt_calloc(m->count + 1, sizeof(*targets))) == NULL) {
		rc = -ENOMEM;
		goto out_publish;
	}
	for (size_t j = 0; j < m->count; j++)
		buf_init(&targets[j].end_key);
	if ((rc = bulk_build(b, m, targets, seq, &st.cells)) < 0) {
		server_space_note(s, rc);
		goto out_targets;
	}
	if ((rc = bulk_name(b, m, targets, seq, &st)) < 0)
		goto out_targets;
	st.seq = seq;
	st.stamp = b->stamp;
	b->cells = st.cells;
out_targets:
	/* What the cleanup reports (files it keeps) is not the error. */
	if (rc < 0)
		snprintf(detail, sizeof(detail), "%s", bt_error_detail());
	for (size_t j = 0; j < m->count; j++) {
		tablet_ingest_free(targets[j].ingest);
		buf_release(&targets[j].end_key);
	}
	bt_free(targets);
	if (rc < 0)
		bt_error_set(rc, "%s", detail);
out_publish:
	/* S is given whether or not the load went in: publish it, which
	 * shows the load's cells, or no cell at all. */
	s->applied_upto = seq;
	atomic_store_explicit(&s->visible_seq, seq, memory_order_release);
out_unlock:
	mutex_unlock(&s->apply_mu);
	mutex_unlock(&s->work_mu);
	if (rc == 0) {
		/* Tablets that the load made too large split. */
		server_background_wake(s);
		if (out != NULL)
			*out = st;
	}
	return rc;
}

void
server_bulk_free(struct server_bulk *b)
{
	if (b == NULL)
		return;
	extsort_free(b->sort);
	atomic_fetch_sub(&b->s->bulk_loads, 1);
	tablet_schema_unref(b->schema);
	server_table_unref(b->t);
	buf_release(&b->key);
	bt_free(b);
}
