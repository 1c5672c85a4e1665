/*
 * server_write.c - the writes of the tablet server (server.h): mutations
 * checked against the limits and the schema, the read-modify-writes
 * (check-and-mutate, increment, append, put_newest, moves) under the
 * row's lock (docs/design.md section 7, W4), and the admission of each
 * to the write queue (server_queue.c).
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log/format.h"
#include "server/server_int.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/hash.h"

/* When tablet is not 0: BT_STALE when it is not the tablet holding row,
 * BT_ENOTSERVING when it is not served here.  (A write naming no tablet
 * to a tablet not served fails in its group: server_queue.c.) */
static int
tablet_check_serves(struct server_table *t, uint64_t tablet, struct slice row)
{
	return tablet == 0 ? 0 : server_table_serves_row(t, tablet, row);
}

static struct mutex *
row_lock(struct server *s, uint64_t table_id, struct slice row)
{
	return &s->row_locks[hash64(row, table_id) % ROW_LOCKS];
}

/* Check a mutation against the limits and the schema. */
static int
mutation_validate(struct server *s, struct server_table *t,
    const struct tablet_schema *schema, struct slice row,
    const struct mutation *ops, size_t count)
{
	int rc = 0;

	if (row.n == 0 || row.n > SERVER_MAX_ROW)
		return bt_error_set(-EINVAL, "row key of %zu bytes (1 to %u "
		    "allowed)", row.n, SERVER_MAX_ROW);
	if (count == 0)
		return bt_error_set(-EINVAL, "empty mutation");
	for (size_t i = 0; i < count && rc == 0; i++) {
		const struct mutation *m = &ops[i];

		if (m->kind < MUTATION_PUT || m->kind > MUTATION_DELETE_ROW) {
			rc = bt_error_set(-EINVAL, "unknown mutation kind %d",
			    (int)m->kind);
		} else if (m->kind != MUTATION_DELETE_ROW &&
		    !tablet_schema_has_family(schema, m->family)) {
			rc = bt_error_set(-ENOENT, "table %s: no family "
			    "%.*s", t->name, (int)m->family.n,
			    (const char *)m->family.p);
		} else if (m->qualifier.n > SERVER_MAX_QUALIFIER) {
			rc = bt_error_set(-EINVAL, "qualifier of %zu bytes "
			    "(at most %u allowed)", m->qualifier.n,
			    SERVER_MAX_QUALIFIER);
		} else if (m->kind == MUTATION_PUT &&
		    m->value.n > s->opts.max_cell) {
			rc = bt_error_set(-EFBIG, "value of %zu bytes (at "
			    "most %" PRIu64 " allowed)", m->value.n,
			    s->opts.max_cell);
		} else if ((m->kind == MUTATION_PUT &&
		    m->ts != MUTATION_TS_SERVER && m->ts < 0) ||
		    (m->kind == MUTATION_DELETE_VERSION && m->ts < 0)) {
			rc = bt_error_set(-EINVAL, "timestamp %" PRId64
			    " out of range", m->ts);
		}
	}
	return rc;
}

/* Whether schema has every family that ops name. */
static bool
schema_has_families(const struct tablet_schema *schema,
    const struct mutation *ops, size_t count)
{
	for (size_t i = 0; i < count; i++)
		if (ops[i].kind != MUTATION_DELETE_ROW &&
		    !tablet_schema_has_family(schema, ops[i].family))
			return false;
	return true;
}

/*
 * The schema of t for a mutation of ops, referenced.  On a server whose
 * catalog is remote, a family this schema lacks may have been made at
 * the root's server since the table was read here: the table is read
 * again (server_cell_table_refresh()) before mutation_validate() refuses
 * the mutation.  Caller holds no lock of s.
 */
static struct tablet_schema *
write_schema(struct server *s, struct server_table *t,
    const struct mutation *ops, size_t count)
{
	struct tablet_schema *schema = server_table_schema(s, t);

	if (!s->catalog_remote || schema_has_families(schema, ops, count))
		return schema;
	tablet_schema_unref(schema);
	/* Its failure leaves the schema as it was, which then refuses. */
	(void)server_cell_table_refresh(s, t);
	return server_table_schema(s, t);
}

/* Whether writers must wait for flushes: the active and frozen memtables
 * of all tablets together hold the whole memtable budget.  A memtable is
 * frozen at half of it (master_freeze_size()), so one frozen memtable
 * flushing while the next fills is the normal state, as LevelDB's imm
 * beside its mem; a writer waits only when the next one has filled too
 * before the flush ended. */
static bool
write_must_wait(struct server *s)
{
	int64_t held = atomic_load(&s->active_bytes) +
	    atomic_load(&s->frozen_bytes);

	return held >= (int64_t)s->opts.memtable_size;
}

/*
 * Wait while the memtable budget is full (write_must_wait()), waking the
 * background thread, which freezes and flushes; a flush finished in the
 * middle of a compaction wakes waiters too (server_background.c).  Memory never
 * grows without bound: when a background round that began after this
 * writer came ends with a memtable it could not flush (a full disk) and
 * the budget is still full, the write fails with the flush's error
 * instead of waiting, and writes resume once flushes do.  A writer whose
 * table was deleted stops waiting (mutation_commit then fails it): the
 * deleted table's memtables, which no flush takes, are freed when the
 * last writer holding the table lets go of it.  A round that
 * was already running may have failed before room was freed, and the
 * errors of compactions are not the writer's: neither fails it.
 */
static int
write_throttle(struct server *s, struct server_table *t)
{
	uint64_t begun;
	int rc = 0;

	if (!write_must_wait(s))
		return 0;
	mutex_lock(&s->bg_mu);
	begun = s->bg_begun;
	while (write_must_wait(s) && !s->bg_stop &&
	    !atomic_load(&t->dropped)) {
		if (s->bg_rounds > begun && s->bg_flush_error < 0) {
			rc = bt_error_set(s->bg_flush_error, "the memtables "
			    "are full and their flush fails: %s",
			    bt_strerror(s->bg_flush_error));
			break;
		}
		s->bg_wanted = true;
		s->write_waits++;
		pthread_cond_signal(&s->bg_cv);
		cond_wait(&s->bg_done_cv, &s->bg_mu);
	}
	mutex_unlock(&s->bg_mu);
	return rc;
}

/*
 * Log and apply a validated mutation through the write queue; the caller
 * holds the row lock.  See server.h for the order of steps.
 */
static int
mutation_commit(struct server *s, struct server_table *t,
    const struct tablet_schema *schema, struct slice row,
    struct mutation *ops, size_t count, bool sync, int64_t *stamp)
{
	struct condemned_marks m;
	int rc;

	mutex_assert_held(row_lock(s, t->id, row));
	if (s->log == NULL)
		return bt_error_set(-EROFS, "store is read-only");
	if ((rc = server_space_refuse(s, ops, count)) < 0 ||
	    (rc = write_throttle(s, t)) < 0)
		return rc;
	if (atomic_load(&t->dropped))
		return bt_error_set(-ENOENT, "table %s: deleted", t->name);
	if (!server_condemned_may_mark(schema, ops, count))
		return server_queue_commit(s, t, row, ops, count, sync, stamp);
	condemned_marks_init(&m);
	if ((rc = server_condemned_marks(s, t, schema, row, ops, count,
	    &m)) < 0)
		return rc;
	rc = server_queue_commit(s, t, row, m.ops, m.count, sync, stamp);
	condemned_marks_finish(&m, ops, count);
	return rc;
}

int
server_mutate(struct server *s, struct server_table *t, uint64_t tablet,
    struct slice row, struct mutation *ops, size_t count, bool sync,
    int64_t *stamp)
{
	struct tablet_schema *schema;
	struct mutex *lock;
	int rc;

	schema = write_schema(s, t, ops, count);
	if ((rc = tablet_check_serves(t, tablet, row)) != 0 ||
	    (rc = mutation_validate(s, t, schema, row, ops, count)) < 0)
		goto out;
	lock = row_lock(s, t->id, row);
	pthread_rwlock_rdlock(&s->batch_lock);
	mutex_lock(lock);
	rc = mutation_commit(s, t, schema, row, ops, count, sync, stamp);
	mutex_unlock(lock);
	pthread_rwlock_unlock(&s->batch_lock);
out:
	tablet_schema_unref(schema);
	return rc;
}

/* Note the first failure of a batch: its code, and its detail kept in
 * first_detail (the next row's check overwrites the thread's). */
static void
rows_note_failure(int rc, int *first, char *first_detail, size_t size)
{
	if (*first < 0)
		return;
	*first = rc;
	snprintf(first_detail, size, "%s", bt_error_detail());
}

/*
 * Whether a row of the batch that may need marks (server_condemned.c) has
 * its key elsewhere in the batch.  Its marks, read before either
 * occurrence is applied, cannot know which versions the other one's
 * writes condemn, so such a batch is committed row by row.
 */
static bool
rows_repeat_marked(struct server *s, const struct server_row_mutation *rows,
    size_t n, const int *results)
{
	struct tablet_schema *schema = server_table_schema(s, rows[0].t);
	bool repeat = false;

	for (size_t i = 0; i < n && !repeat; i++) {
		if (results[i] < 0 || !server_condemned_may_mark(schema,
		    rows[i].ops, rows[i].count))
			continue;
		for (size_t j = 0; j < n && !repeat; j++)
			repeat = j != i && results[j] == 0 &&
			    slice_equal(rows[j].row, rows[i].row);
	}
	tablet_schema_unref(schema);
	return repeat;
}

/* The valid rows of a batch one at a time, each atomic; as
 * server_mutate_rows() returns. */
static int
rows_one_by_one(struct server *s, struct server_row_mutation *rows,
    size_t n, bool sync, int *results)
{
	char detail[256];
	int first = 0;

	for (size_t i = 0; i < n; i++) {
		if (results[i] == 0)
			results[i] = server_mutate(s, rows[i].t, 0,
			    rows[i].row, rows[i].ops, rows[i].count, sync,
			    &rows[i].stamp);
		if (results[i] < 0)
			rows_note_failure(results[i], &first, detail,
			    sizeof(detail));
	}
	if (first < 0)
		return bt_error_set(first, "%s", detail);
	return 0;
}

/*
 * Commit the valid rows of a batch under the exclusive batch lock, each
 * behind the marks it needs (server_condemned.c).  As
 * server_queue_commit_rows() returns.
 */
static int
rows_commit(struct server *s, struct server_row_mutation *rows, size_t n,
    bool sync, int *results)
{
	struct tablet_schema *schema = server_table_schema(s, rows[0].t);
	struct condemned_marks *marks = NULL;
	struct mutation **own = NULL;
	int rc = 0;

	for (size_t i = 0; i < n && rc == 0; i++) {
		if (results[i] < 0 || !server_condemned_may_mark(schema,
		    rows[i].ops, rows[i].count))
			continue;
		if (marks == NULL &&
		    ((marks = bt_calloc(n, sizeof(*marks))) == NULL ||
		    (own = bt_calloc(n, sizeof(*own))) == NULL)) {
			rc = -ENOMEM;
			break;
		}
		condemned_marks_init(&marks[i]);
		if ((rc = server_condemned_marks(s, rows[i].t, schema,
		    rows[i].row, rows[i].ops, rows[i].count,
		    &marks[i])) < 0)
			break;
		own[i] = rows[i].ops;
		rows[i].ops = marks[i].ops;
		rows[i].count = marks[i].count;
	}
	if (rc < 0) {
		for (size_t i = 0; i < n; i++)
			if (results[i] == 0)
				results[i] = rc;
	} else {
		rc = server_queue_commit_rows(s, rows, n, sync, results);
	}
	for (size_t i = 0; own != NULL && i < n; i++) {
		if (own[i] == NULL)
			continue;
		rows[i].ops = own[i];
		rows[i].count = marks[i].count - marks[i].marks;
		condemned_marks_finish(&marks[i], own[i], rows[i].count);
	}
	bt_free(own);
	bt_free(marks);
	tablet_schema_unref(schema);
	return rc;
}

int
server_mutate_rows(struct server *s, struct server_row_mutation *rows,
    size_t n, bool sync, int *results)
{
	struct tablet_schema *schema = NULL;
	struct server_table *schema_of = NULL;
	char detail[256];
	size_t valid = 0;
	int rc, first = 0;

	/* Every row is checked before anything is written. */
	for (size_t i = 0; i < n; i++) {
		if (rows[i].t != schema_of || !schema_has_families(schema,
		    rows[i].ops, rows[i].count)) {
			tablet_schema_unref(schema);
			schema = write_schema(s, rows[i].t, rows[i].ops,
			    rows[i].count);
			schema_of = rows[i].t;
		}
		rows[i].stamp = 0;
		results[i] = mutation_validate(s, rows[i].t, schema,
		    rows[i].row, rows[i].ops, rows[i].count);
		if (results[i] == 0 && s->log == NULL)
			results[i] = bt_error_set(-EROFS, "store is "
			    "read-only");
		if (results[i] == 0)
			results[i] = server_space_refuse(s, rows[i].ops,
			    rows[i].count);
		if (results[i] < 0)
			rows_note_failure(results[i], &first, detail,
			    sizeof(detail));
		else
			valid++;
	}
	tablet_schema_unref(schema);
	/* The rows are of one table (bt_mutate_rows). */
	if (valid > 0 && rows_repeat_marked(s, rows, n, results))
		return rows_one_by_one(s, rows, n, sync, results);
	rc = valid > 0 ? write_throttle(s, rows[0].t) : 0;
	if (rc == 0 && valid > 0 && atomic_load(&rows[0].t->dropped))
		rc = bt_error_set(-ENOENT, "table %s: deleted",
		    rows[0].t->name);
	if (valid > 0 && rc < 0) {
		for (size_t i = 0; i < n; i++)
			if (results[i] == 0)
				results[i] = rc;
		rows_note_failure(rc, &first, detail, sizeof(detail));
		valid = 0;
	}
	if (valid > 0) {
		/* Exclusive: no row lock is held meanwhile (W4). */
		pthread_rwlock_wrlock(&s->batch_lock);
		if ((rc = rows_commit(s, rows, n, sync, results)) < 0)
			rows_note_failure(rc, &first, detail,
			    sizeof(detail));
		pthread_rwlock_unlock(&s->batch_lock);
	}
	if (first < 0)
		return bt_error_set(first, "%s", detail);
	return 0;
}

/* The newest visible version of one column, resolved into r: 0 with the
 * value and timestamp in *c (borrowed from r), or BT_NOTFOUND. */
static int
column_newest(struct server *s, struct server_table *t, struct slice row,
    struct slice family, struct slice qualifier, int64_t as_of,
    struct cells_row *r, struct cell *c)
{
	struct cells_column col = { .family = family, .has_qualifier = true,
	    .qualifier = qualifier };
	struct cells_filter f = { .columns = &col, .column_count = 1,
	    .cells_per_column = 1, .has_max_ts = as_of >= 0, .max_ts = as_of };
	int rc;

	if ((rc = server_table_read_row(s, t, row, &f, r)) == 0)
		cells_row_get(r, 0, c);
	return rc;
}

/*
 * A read-modify-write on one column: under the row lock, read the newest
 * value (at or before as_of when it is not negative), let decide() build
 * the mutation from it, and commit.  decide
 * returns 0 to commit, 1 to change nothing, or a negative error.  The
 * value decide() sees is borrowed from a pooled row until the commit is
 * done, so that the usual read-modify-write allocates nothing to read.
 */
static int
column_rmw(struct server *s, struct server_table *t, uint64_t tablet,
    struct slice row, struct slice family, struct slice qualifier, bool sync,
    int64_t as_of,
    int (*decide)(void *arg, int found, struct slice value, int64_t ts,
    struct mutation **ops, size_t *count), void *arg, int64_t *stamp)
{
	struct tablet_schema *schema;
	struct mutation probe = { .kind = MUTATION_PUT, .family = family,
	    .qualifier = qualifier, .ts = MUTATION_TS_SERVER };
	struct mutation *ops;
	struct mutex *lock;
	struct cells_row own, *r;
	struct cell c = { .ts = 0 };
	size_t count;
	int rc, found;

	schema = write_schema(s, t, &probe, 1);
	if ((rc = tablet_check_serves(t, tablet, row)) != 0 ||
	    (rc = mutation_validate(s, t, schema, row, &probe, 1)) < 0)
		goto out;
	r = server_row_pool_take(&s->rmw_rows, &own);
	lock = row_lock(s, t->id, row);
	pthread_rwlock_rdlock(&s->batch_lock);
	mutex_lock(lock);
	found = column_newest(s, t, row, family, qualifier, as_of, r, &c);
	if (found < 0) {
		rc = found;
	} else {
		rc = decide(arg, found == 0, found == 0 ? c.value :
		    slice_make(NULL, 0), c.ts, &ops, &count);
		assert(rc <= 1);
		if (rc == 0 && (rc = mutation_validate(s, t, schema, row, ops,
		    count)) == 0)
			rc = mutation_commit(s, t, schema, row, ops, count,
			    sync, stamp);
		else if (rc == 1)
			rc = 0;
	}
	mutex_unlock(lock);
	pthread_rwlock_unlock(&s->batch_lock);
	server_row_pool_give(&s->rmw_rows, r, &own);
out:
	tablet_schema_unref(schema);
	return rc;
}

/* The ts_floor of a put that must become the newest version of a column
 * whose newest version, if found, has time ts. */
static int64_t
newest_floor(int found, int64_t ts)
{
	if (!found)
		return 0;
	return ts < INT64_MAX ? ts + 1 : ts;
}

struct check_arg {
	struct slice family, qualifier;
	const struct slice *expected;
	int64_t expected_ts;		/* -1: any */
	struct mutation *ops;
	size_t count;
	bool *applied;
};

static int
check_decide(void *arg, int found, struct slice value, int64_t ts,
    struct mutation **ops, size_t *count)
{
	struct check_arg *a = arg;
	bool match = a->expected == NULL ? !found :
	    found && slice_equal(value, *a->expected) &&
	    (a->expected_ts < 0 || ts == a->expected_ts);

	*a->applied = match;
	/* What a check-and-mutate puts in the column it read, with the
	 * server's clock, becomes that column's newest version. */
	for (size_t i = 0; match && i < a->count; i++) {
		struct mutation *m = &a->ops[i];

		if (m->kind == MUTATION_PUT && m->ts == MUTATION_TS_SERVER &&
		    slice_equal(m->family, a->family) &&
		    slice_equal(m->qualifier, a->qualifier))
			m->ts_floor = newest_floor(found, ts);
	}
	*ops = a->ops;
	*count = a->count;
	return match ? 0 : 1;
}

int
server_check_and_mutate(struct server *s, struct server_table *t,
    uint64_t tablet, struct slice row, struct slice family,
    struct slice qualifier, const struct slice *expected, int64_t expected_ts,
    struct mutation *ops, size_t count, bool sync, bool *applied)
{
	struct check_arg a = { family, qualifier, expected, expected_ts, ops,
	    count, applied };

	*applied = false;
	return column_rmw(s, t, tablet, row, family, qualifier, sync, -1,
	    check_decide, &a, NULL);
}

struct increment_arg {
	struct slice family, qualifier;
	int64_t delta;
	int64_t result;
	char text[32];
	struct mutation op;
};

/* Parse an ASCII decimal counter, optionally ending in one newline. */
static int
counter_parse(struct slice v, int64_t *out)
{
	char tmp[32], *end;
	size_t n = v.n;
	long long x;

	if (n > 0 && v.p[n - 1] == '\n')
		n--;
	if (n == 0 || n >= sizeof(tmp))
		return bt_error_set(-EINVAL, "counter value is not an "
		    "integer");
	memcpy(tmp, v.p, n);
	tmp[n] = '\0';
	if (!(tmp[0] == '-' || (tmp[0] >= '0' && tmp[0] <= '9')))
		return bt_error_set(-EINVAL, "counter value is not an "
		    "integer");
	errno = 0;
	x = strtoll(tmp, &end, 10);
	if (*end != '\0')
		return bt_error_set(-EINVAL, "counter value is not an "
		    "integer");
	if (errno == ERANGE)
		return bt_error_set(-ERANGE, "counter value out of range");
	*out = x;
	return 0;
}

/* Write x in ASCII decimal and a newline at out (room for 21 bytes);
 * returns the length.  By hand: snprintf() would be the dearest step of
 * an increment's decision. */
static size_t
counter_format(int64_t x, char *out)
{
	uint64_t u = x < 0 ? -(uint64_t)x : (uint64_t)x;
	char digits[20];
	size_t n = 0, len = 0;

	do {
		digits[n++] = (char)('0' + u % 10);
		u /= 10;
	} while (u != 0);
	if (x < 0)
		out[len++] = '-';
	while (n > 0)
		out[len++] = digits[--n];
	out[len++] = '\n';
	return len;
}

static int
increment_decide(void *arg, int found, struct slice value, int64_t ts,
    struct mutation **ops, size_t *count)
{
	struct increment_arg *a = arg;
	int64_t old = 0;
	int rc;

	if (found && (rc = counter_parse(value, &old)) < 0)
		return rc;
	if (__builtin_add_overflow(old, a->delta, &a->result))
		return bt_error_set(-ERANGE, "counter overflow");
	a->op.kind = MUTATION_PUT;
	a->op.family = a->family;
	a->op.qualifier = a->qualifier;
	a->op.ts = MUTATION_TS_SERVER;
	a->op.ts_floor = newest_floor(found, ts);
	a->op.value = slice_make(a->text, counter_format(a->result, a->text));
	*ops = &a->op;
	*count = 1;
	return 0;
}

int
server_increment(struct server *s, struct server_table *t, uint64_t tablet,
    struct slice row, struct slice family, struct slice qualifier,
    int64_t delta, bool sync, int64_t *result, int64_t *stamp)
{
	struct increment_arg a = { .family = family, .qualifier = qualifier,
	    .delta = delta };
	int rc;

	rc = column_rmw(s, t, tablet, row, family, qualifier, sync, -1,
	    increment_decide, &a, stamp);
	if (rc == 0 && result != NULL)
		*result = a.result;
	if (rc == 0 && stamp != NULL)
		*stamp = a.op.ts;
	return rc;
}

struct append_arg {
	struct slice family, qualifier, suffix;
	struct buf joined;
	struct mutation op;
};

static int
append_decide(void *arg, int found, struct slice value, int64_t ts,
    struct mutation **ops, size_t *count)
{
	struct append_arg *a = arg;
	int rc;

	if ((rc = buf_set(&a->joined, value.p, found ? value.n : 0)) < 0 ||
	    (rc = buf_append(&a->joined, a->suffix.p, a->suffix.n)) < 0)
		return rc;
	a->op.kind = MUTATION_PUT;
	a->op.family = a->family;
	a->op.qualifier = a->qualifier;
	a->op.ts = MUTATION_TS_SERVER;
	a->op.ts_floor = newest_floor(found, ts);
	a->op.value = buf_slice(&a->joined);
	*ops = &a->op;
	*count = 1;
	return 0;
}

int
server_append(struct server *s, struct server_table *t, uint64_t tablet,
    struct slice row, struct slice family, struct slice qualifier,
    struct slice suffix, bool sync, int64_t *stamp)
{
	struct append_arg a = { .family = family, .qualifier = qualifier,
	    .suffix = suffix };
	int rc;

	buf_init(&a.joined);
	rc = column_rmw(s, t, tablet, row, family, qualifier, sync, -1,
	    append_decide, &a, stamp);
	buf_release(&a.joined);
	if (rc == 0 && stamp != NULL)
		*stamp = a.op.ts;
	return rc;
}

struct put_newest_arg {
	struct mutation op;
};

static int
put_newest_decide(void *arg, int found, struct slice value, int64_t ts,
    struct mutation **ops, size_t *count)
{
	struct put_newest_arg *a = arg;

	(void)value;
	a->op.ts_floor = newest_floor(found, ts);
	*ops = &a->op;
	*count = 1;
	return 0;
}

int
server_put_newest(struct server *s, struct server_table *t, uint64_t tablet,
    struct slice row, struct slice family, struct slice qualifier,
    struct slice value, bool sync, int64_t *stamp)
{
	struct put_newest_arg a = { .op = { .kind = MUTATION_PUT,
	    .family = family, .qualifier = qualifier,
	    .ts = MUTATION_TS_SERVER, .value = value } };
	int rc;

	rc = column_rmw(s, t, tablet, row, family, qualifier, sync, -1,
	    put_newest_decide, &a, stamp);
	if (rc == 0 && stamp != NULL)
		*stamp = a.op.ts;
	return rc;
}

struct move_arg {
	struct slice src_family, src_qualifier;
	int64_t src_ts;
	struct slice dst_family, dst_qualifier;
	int64_t dst_ts;
	struct buf value;
	struct mutation ops[2];
};

static int
move_decide(void *arg, int found, struct slice value, int64_t ts,
    struct mutation **ops, size_t *count)
{
	struct move_arg *a = arg;
	int rc;

	if (!found || ts != a->src_ts)
		return bt_error_set(-ENOENT, "no version %" PRId64 " to move",
		    a->src_ts);
	if (a->dst_ts == a->src_ts &&
	    slice_equal(a->dst_family, a->src_family) &&
	    slice_equal(a->dst_qualifier, a->src_qualifier))
		return 1;	/* onto itself */
	if ((rc = buf_set(&a->value, value.p, value.n)) < 0)
		return rc;
	a->ops[0] = (struct mutation){ .kind = MUTATION_PUT,
	    .family = a->dst_family, .qualifier = a->dst_qualifier,
	    .ts = a->dst_ts, .value = buf_slice(&a->value) };
	a->ops[1] = (struct mutation){ .kind = MUTATION_DELETE_VERSION,
	    .family = a->src_family, .qualifier = a->src_qualifier,
	    .ts = a->src_ts };
	*ops = a->ops;
	*count = 2;
	return 0;
}

int
server_move_version(struct server *s, struct server_table *t, uint64_t tablet,
    struct slice row, struct slice src_family, struct slice src_qualifier,
    int64_t src_ts, struct slice dst_family, struct slice dst_qualifier,
    int64_t dst_ts, bool sync, int64_t *stamp)
{
	struct move_arg a = { .src_family = src_family,
	    .src_qualifier = src_qualifier, .src_ts = src_ts,
	    .dst_family = dst_family, .dst_qualifier = dst_qualifier,
	    .dst_ts = dst_ts };
	int rc;

	if (src_ts < 0)
		return bt_error_set(-EINVAL, "timestamp %" PRId64
		    " out of range", src_ts);
	buf_init(&a.value);
	rc = column_rmw(s, t, tablet, row, src_family, src_qualifier, sync,
	    src_ts, move_decide, &a, stamp);
	buf_release(&a.value);
	return rc;
}

/* Every version of one column, or of a whole family when col has no
 * qualifier, that a read sees now, into r (values too unless keys_only):
 * 0 with r->count cells (none when there are none), or an error. */
static int
column_versions(struct server *s, struct server_table *t, struct slice row,
    const struct cells_column *col, bool keys_only, struct cells_row *r)
{
	struct cells_filter f = { .columns = col, .column_count = 1,
	    .keys_only = keys_only };
	int rc;

	if ((rc = server_table_read_row(s, t, row, &f, r)) == BT_NOTFOUND) {
		r->count = 0;
		rc = 0;
	}
	return rc;
}

/*
 * Under the row lock: the mutation that moves src's versions (read into
 * r) to dst: a delete of src, then a put of each at dst with its time and
 * value, in *opsp (allocated; *countp of them), or an error.  The delete
 * comes first, so that it masks none of the puts (src and dst differ).
 */
static int
move_build(struct server *s, struct server_table *t, struct slice row,
    const struct cells_column *src, const struct cells_column *dst,
    struct cells_row *r, struct mutation **opsp, size_t *countp)
{
	struct mutation *ops;
	struct cell c;
	uint64_t bytes = 32 + row.n, values = 0;
	size_t n;
	int rc;

	mutex_assert_held(row_lock(s, t->id, row));
	if ((rc = column_versions(s, t, row, dst, true, r)) < 0)
		return rc;
	if (r->count > 0)
		return bt_error_set(-ENOTEMPTY, "the destination holds "
		    "versions");
	if ((rc = column_versions(s, t, row, src, true, r)) < 0)
		return rc;
	if ((n = r->count) == 0)
		return bt_error_set(-ENOENT, "no version to move");
	for (size_t i = 0; i < n; i++) {
		cells_row_get(r, i, &c);
		values += c.value_size;
		bytes += 24 + dst->family.n + (dst->has_qualifier ?
		    dst->qualifier.n : c.qualifier.n) + c.value_size;
	}
	if (values > s->opts.max_cell)
		return bt_error_set(-EFBIG, "%zu versions of %" PRIu64
		    " bytes in all are more than one write may carry "
		    "(max_cell, %" PRIu64 ")", n, values, s->opts.max_cell);
	if (bytes > LOG_MAX_RECORD)
		return bt_error_set(-EFBIG, "%zu versions are more than one "
		    "commit log record holds (%u bytes)", n, LOG_MAX_RECORD);
	if ((rc = column_versions(s, t, row, src, false, r)) < 0)
		return rc;
	n = r->count;	/* the row lock keeps it unchanged */
	if ((ops = bt_calloc(n + 1, sizeof(*ops))) == NULL)
		return -ENOMEM;
	ops[0].kind = src->has_qualifier ? MUTATION_DELETE_COLUMN :
	    MUTATION_DELETE_FAMILY;
	ops[0].family = src->family;
	ops[0].qualifier = src->qualifier;
	for (size_t i = 0; i < n; i++) {
		cells_row_get(r, i, &c);
		ops[i + 1].kind = MUTATION_PUT;
		ops[i + 1].family = dst->family;
		ops[i + 1].qualifier = dst->has_qualifier ? dst->qualifier :
		    c.qualifier;
		ops[i + 1].ts = c.ts;
		ops[i + 1].value = c.value;
	}
	*opsp = ops;
	*countp = n + 1;
	return 0;
}

int
server_move_column(struct server *s, struct server_table *t,
    uint64_t tablet, struct slice row, const struct cells_column *src,
    const struct cells_column *dst, bool sync)
{
	struct mutation probe[2] = {
		{ .kind = MUTATION_PUT, .family = src->family,
		    .qualifier = src->qualifier, .ts = MUTATION_TS_SERVER },
		{ .kind = MUTATION_PUT, .family = dst->family,
		    .qualifier = dst->qualifier, .ts = MUTATION_TS_SERVER },
	};
	struct tablet_schema *schema;
	struct mutation *ops = NULL;
	struct cells_row r;
	struct mutex *lock;
	size_t count = 0;
	int rc;

	if (src->has_qualifier != dst->has_qualifier)
		return bt_error_set(-EINVAL, "a column moves to a column and "
		    "a family to a family");
	schema = write_schema(s, t, probe, 2);
	if ((rc = tablet_check_serves(t, tablet, row)) != 0 ||
	    (rc = mutation_validate(s, t, schema, row, probe, 2)) < 0)
		goto out;
	cells_row_init(&r);
	lock = row_lock(s, t->id, row);
	pthread_rwlock_rdlock(&s->batch_lock);
	mutex_lock(lock);
	if (slice_equal(src->family, dst->family) &&
	    (!src->has_qualifier || slice_equal(src->qualifier,
	    dst->qualifier))) {
		/* Onto itself: nothing changes, if there is something. */
		if ((rc = column_versions(s, t, row, src, true, &r)) == 0 &&
		    r.count == 0)
			rc = bt_error_set(-ENOENT, "no version to move");
	} else if ((rc = move_build(s, t, row, src, dst, &r, &ops,
	    &count)) == 0 &&
	    (rc = mutation_validate(s, t, schema, row, ops, count)) == 0) {
		rc = mutation_commit(s, t, schema, row, ops, count, sync,
		    NULL);
	}
	mutex_unlock(lock);
	pthread_rwlock_unlock(&s->batch_lock);
	bt_free(ops);
	cells_row_release(&r);
out:
	tablet_schema_unref(schema);
	return rc;
}
