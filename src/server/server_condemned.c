/*
 * server_condemned.c - deletes that leave condemned versions condemned
 * (server_int.h; docs/design.md section 1).
 *
 * A maxversions policy counts the versions of a column that are not
 * deleted, so deleting a version moves each older one up by one, and one
 * that the policy had condemned would be live again.  A version once
 * condemned stays condemned (reads are the same before and after any
 * compaction, and a compaction may already have dropped it).  So a
 * mutation that deletes versions in a family whose policy counts
 * versions first reads each such column, under the row's lock, and puts
 * in front of its own operations a version delete of every version that
 * is condemned now and would not be once its deletes are applied.
 * These marks travel in the mutation's log record like any delete, so
 * replay, flushes and compactions need no rule of their own; the
 * mutation's own operations come after them, so a put of a marked
 * timestamp in the same mutation is a new version, judged as any.
 *
 * The mutation's puts are left out of "once its deletes are applied":
 * a put can only condemn more, and a mark on a version that is
 * condemned already changes nothing a read returns.  Cloud Bigtable
 * counts versions the same way; HBase does with NEW_VERSION_BEHAVIOR.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "server/server_int.h"
#include "util/alloc.h"
#include "util/error.h"

/* The version limit of op's family when op is a version delete in a
 * family whose policy counts versions; 0 otherwise. */
static uint64_t
op_version_limit(const struct tablet_schema *schema,
    const struct mutation *op)
{
	if (op->kind != MUTATION_DELETE_VERSION)
		return 0;
	return gc_policy_version_limit(tablet_schema_family_gc(schema,
	    op->family));
}

bool
server_condemned_may_mark(const struct tablet_schema *schema,
    const struct mutation *ops, size_t count)
{
	for (size_t i = 0; i < count; i++)
		if (op_version_limit(schema, &ops[i]) > 0)
			return true;
	return false;
}

void
condemned_marks_init(struct condemned_marks *m)
{
	m->ops = NULL;
	m->count = 0;
	m->marks = 0;
	m->cap = 0;
}

void
condemned_marks_finish(struct condemned_marks *m, struct mutation *ops,
    size_t count)
{
	if (m->ops != NULL && m->ops != ops)
		for (size_t i = 0; i < count; i++)
			ops[i].ts = m->ops[m->marks + i].ts;
	if (m->ops != ops)
		bt_free(m->ops);
	condemned_marks_init(m);
}

static int
marks_add(struct condemned_marks *m, const struct mutation *deleting,
    int64_t ts)
{
	if (m->marks == m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 8;
		struct mutation *p = bt_realloc(m->ops, cap * sizeof(*p));

		if (p == NULL)
			return -ENOMEM;
		m->ops = p;
		m->cap = cap;
	}
	m->ops[m->marks++] = (struct mutation){
		.kind = MUTATION_DELETE_VERSION, .family = deleting->family,
		.qualifier = deleting->qualifier, .ts = ts };
	return 0;
}

static bool
same_column(const struct mutation *a, const struct mutation *b)
{
	return slice_equal(a->family, b->family) &&
	    slice_equal(a->qualifier, b->qualifier);
}

/* Whether ops delete version ts of the column of op. */
static bool
ops_delete(const struct mutation *ops, size_t count,
    const struct mutation *op, int64_t ts)
{
	for (size_t i = 0; i < count; i++)
		if (ops[i].kind == MUTATION_DELETE_VERSION &&
		    ops[i].ts == ts && same_column(&ops[i], op))
			return true;
	return false;
}

/*
 * The marks for the column of ops[at], the first version delete of it in
 * ops: read the column's versions, condemned ones too, and mark each
 * condemned one whose index, less the versions deleted or marked above
 * it, the policy spares.  A mark moves the older versions up as a delete
 * does, so once one version needs a mark, each condemned one below it
 * usually does too: a column's condemned versions are few once a
 * compaction has dropped them.
 */
static int
column_marks(struct server *s, struct server_table *t, struct slice row,
    const struct gc_policy *policy, const struct mutation *ops,
    size_t count, size_t at, struct cells_row *r, struct condemned_marks *m)
{
	const struct mutation *op = &ops[at];
	struct cells_column col = { .family = op->family,
	    .has_qualifier = true, .qualifier = op->qualifier };
	struct cells_filter f = { .columns = &col, .column_count = 1,
	    .keys_only = true, .with_condemned = true };
	uint64_t removed_above = 0;
	int64_t now = server_now(s);
	int rc;

	if ((rc = server_table_read_row(s, t, row, &f, r)) == BT_NOTFOUND)
		return 0;
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < r->count; i++) {
		struct cell c;

		cells_row_get(r, i, &c);
		if (ops_delete(ops, count, op, c.ts)) {
			removed_above++;
			continue;
		}
		if (removed_above == 0 ||
		    !gc_policy_condemns(policy, i, c.ts, now) ||
		    gc_policy_condemns(policy, i - removed_above, c.ts, now))
			continue;
		if ((rc = marks_add(m, op, c.ts)) < 0)
			return rc;
		removed_above++;
	}
	return 0;
}

int
server_condemned_marks(struct server *s, struct server_table *t,
    const struct tablet_schema *schema, struct slice row,
    struct mutation *ops, size_t count, struct condemned_marks *m)
{
	struct cells_row own, *r = NULL;
	struct mutation *all;
	int rc = 0;

	for (size_t i = 0; i < count && rc == 0; i++) {
		const struct gc_policy *policy;
		bool seen = false;

		if (op_version_limit(schema, &ops[i]) == 0)
			continue;
		for (size_t j = 0; j < i && !seen; j++)
			seen = ops[j].kind == MUTATION_DELETE_VERSION &&
			    same_column(&ops[j], &ops[i]);
		if (seen)
			continue;
		if (r == NULL)
			r = server_row_pool_take(&s->rmw_rows, &own);
		policy = tablet_schema_family_gc(schema, ops[i].family);
		rc = column_marks(s, t, row, policy, ops, count, i, r, m);
	}
	if (r != NULL)
		server_row_pool_give(&s->rmw_rows, r, &own);
	if (rc < 0)
		goto fail;
	if (m->marks == 0) {
		bt_free(m->ops);
		m->ops = ops;
		m->count = count;
		return 0;
	}
	if ((all = bt_realloc(m->ops, (m->marks + count) *
	    sizeof(*all))) == NULL) {
		rc = -ENOMEM;
		goto fail;
	}
	memcpy(all + m->marks, ops, count * sizeof(*ops));
	m->ops = all;
	m->count = m->marks + count;
	return 0;
fail:
	bt_free(m->ops);
	condemned_marks_init(m);
	return rc;
}
