/*
 * catalog_tablet.c - tablets, the SSTable files they name, file numbers
 * and the store's counters.
 */
#include <errno.h>
#include <string.h>

#include "catalog/catalog_int.h"
#include "catalog/format.h"
#include "util/alloc.h"
#include "util/error.h"

/* Whether a table exists: 0 (no), 1 (yes) or an error. */
static int
table_exists(struct catalog *c, uint64_t table_id)
{
	sqlite3_stmt *st;
	int rc;

	st = catalog_stmt(c, STMT_TABLE_BY_ID);
	if ((rc = catalog_bind(c, st, "u", table_id)) == 0 &&
	    (rc = catalog_step(c, st)) >= 0)
		rc = rc == SQLITE_ROW;
	catalog_stmt_done(st);
	return rc;
}

/* A tablet's table and redo point: 0, BT_NOTFOUND or an error. */
static int
tablet_get(struct catalog *c, uint64_t tablet_id, uint64_t *table_id,
    uint64_t *flushed_seq)
{
	sqlite3_stmt *st = catalog_stmt(c, STMT_TABLET_GET);

	return catalog_one_u64(c, st, catalog_bind(c, st, "u", tablet_id),
	    table_id, flushed_seq);
}

static void
tablet_release(void *elem)
{
	struct catalog_tablet *t = elem;

	buf_release(&t->start);
	buf_release(&t->end);
}

void
catalog_tablets_free(struct catalog_tablet *t, size_t count)
{
	if (t == NULL)
		return;
	for (size_t i = 0; i < count; i++)
		tablet_release(&t[i]);
	bt_free(t);
}

/* A row of STMT_TABLET_LIST; arg is the table's id. */
static int
tablet_read(struct catalog *c, sqlite3_stmt *st, void *elem, void *arg)
{
	struct catalog_tablet *t = elem;
	int rc;

	buf_init(&t->start);
	buf_init(&t->end);
	t->id = catalog_column_u64(st, 0);
	t->table_id = *(const uint64_t *)arg;
	t->flushed_seq = catalog_column_u64(st, 3);
	t->auto_split = catalog_column_u64(st, 4) != 0;
	if ((rc = catalog_column_blob(c, st, 1, &t->start)) < 0 ||
	    (rc = catalog_column_blob(c, st, 2, &t->end)) < 0)
		return rc;
	return 0;
}

int
catalog_tablets_list_txn(struct catalog *c, uint64_t table_id,
    struct catalog_tablet **out, size_t *count)
{
	sqlite3_stmt *st;
	int rc;

	catalog_assert_in_call(c);
	if ((rc = table_exists(c, table_id)) <= 0)
		return rc < 0 ? rc : BT_NOTFOUND;
	st = catalog_stmt(c, STMT_TABLET_LIST);
	return catalog_rows_load(c, st, catalog_bind(c, st, "u", table_id),
	    sizeof(**out), tablet_read, &table_id, tablet_release, out, count);
}

int
catalog_tablets_list(struct catalog *c, uint64_t table_id,
    struct catalog_tablet **out, size_t *count)
{
	int rc;

	if (c->is_remote)
		return c->remote.tablets_list(c->remote_arg, table_id, out,
		    count);
	if ((rc = catalog_begin(c, false)) < 0)
		return rc;
	return catalog_end(c, catalog_tablets_list_txn(c, table_id, out,
	    count));
}

/* A row of STMT_FILE_LIST; arg is the tablet's id. */
static int
file_read(struct catalog *c, sqlite3_stmt *st, void *elem, void *arg)
{
	struct catalog_file *f = elem;
	int rc;

	f->number = catalog_column_u64(st, 0);
	f->tablet_id = *(const uint64_t *)arg;
	if ((rc = catalog_column_text(c, st, 1, f->group,
	    sizeof(f->group))) < 0)
		return rc;
	f->size = catalog_column_u64(st, 2);
	f->entry_count = catalog_column_u64(st, 3);
	f->max_seq = catalog_column_u64(st, 4);
	return 0;
}

static int
files_list_txn(struct catalog *c, uint64_t tablet_id,
    struct catalog_file **out, size_t *count)
{
	sqlite3_stmt *st;
	uint64_t table_id, seq;
	int rc;

	if ((rc = tablet_get(c, tablet_id, &table_id, &seq)) != 0)
		return rc;
	st = catalog_stmt(c, STMT_FILE_LIST);
	return catalog_rows_load(c, st, catalog_bind(c, st, "u", tablet_id),
	    sizeof(**out), file_read, &tablet_id, NULL, out, count);
}

int
catalog_files_list(struct catalog *c, uint64_t tablet_id,
    struct catalog_file **out, size_t *count)
{
	int rc;

	if (c->is_remote)
		return c->remote.files_list(c->remote_arg, tablet_id, out,
		    count);
	if ((rc = catalog_begin(c, false)) < 0)
		return rc;
	return catalog_end(c, files_list_txn(c, tablet_id, out, count));
}

/* Stop naming file number in tablet_id; -ENOENT if it was not named. */
static int
file_remove(struct catalog *c, uint64_t tablet_id, uint64_t number)
{
	sqlite3_stmt *st;
	int rc;

	st = catalog_stmt(c, STMT_FILE_DELETE);
	if ((rc = catalog_bind(c, st, "uu", tablet_id, number)) < 0) {
		catalog_stmt_done(st);
		return rc;
	}
	if ((rc = catalog_exec(c, st)) < 0)
		return rc;
	if (sqlite3_changes(c->db) == 0)
		return bt_error_set(-ENOENT,
		    "catalog: tablet %llu does not name file %llu",
		    (unsigned long long)tablet_id, (unsigned long long)number);
	return 0;
}

/* Whether table table_id has locality group group: 1, 0 or an error;
 * inside a call's transaction. */
static int
catalog_group_exists(struct catalog *c, uint64_t table_id, const char *group)
{
	sqlite3_stmt *st;
	int rc;

	catalog_assert_in_call(c);
	st = catalog_stmt(c, STMT_GROUP_EXISTS);
	if ((rc = catalog_bind(c, st, "ut", table_id, group)) == 0 &&
	    (rc = catalog_step(c, st)) >= 0)
		rc = rc == SQLITE_ROW;
	catalog_stmt_done(st);
	return rc;
}

int
catalog_file_add(struct catalog *c, uint64_t table_id, uint64_t tablet_id,
    const struct catalog_file *f)
{
	sqlite3_stmt *st;
	int rc;

	catalog_assert_in_call(c);
	if ((rc = catalog_group_exists(c, table_id, f->group)) < 0)
		return rc;
	if (rc == 0)
		return bt_error_set(-ENOENT,
		    "catalog: file %llu: tablet %llu has no group %s",
		    (unsigned long long)f->number,
		    (unsigned long long)tablet_id, f->group);
	st = catalog_stmt(c, STMT_FILE_INSERT);
	if ((rc = catalog_bind(c, st, "uutuuu", tablet_id, f->number,
	    f->group, f->size, f->entry_count, f->max_seq)) < 0) {
		catalog_stmt_done(st);
		return rc;
	}
	rc = catalog_exec(c, st);
	if (rc == -EEXIST)
		bt_error_set(rc, "catalog: tablet %llu already names file %llu",
		    (unsigned long long)tablet_id,
		    (unsigned long long)f->number);
	if (rc < 0)
		return rc;
	return catalog_pending_named(c, f->number);
}

static int
tablet_apply_txn(struct catalog *c, uint64_t tablet_id,
    const struct catalog_file *added, size_t added_count,
    const uint64_t *removed, size_t removed_count, uint64_t flushed_seq)
{
	sqlite3_stmt *st;
	uint64_t table_id, old_seq;
	int rc;

	if ((rc = tablet_get(c, tablet_id, &table_id, &old_seq)) < 0)
		return rc;
	if (rc == BT_NOTFOUND)
		return bt_error_set(-ENOENT, "catalog: no tablet %llu",
		    (unsigned long long)tablet_id);
	for (size_t i = 0; i < removed_count; i++)
		if ((rc = file_remove(c, tablet_id, removed[i])) < 0)
			return rc;
	for (size_t i = 0; i < added_count; i++)
		if ((rc = catalog_file_add(c, table_id, tablet_id,
		    &added[i])) < 0)
			return rc;
	if (flushed_seq <= old_seq)
		return 0;
	st = catalog_stmt(c, STMT_TABLET_SET_SEQ);
	if ((rc = catalog_bind(c, st, "uu", tablet_id, flushed_seq)) < 0) {
		catalog_stmt_done(st);
		return rc;
	}
	return catalog_exec(c, st);
}

int
catalog_tablet_server_check(struct catalog *c, uint64_t tablet_id,
    const char *server)
{
	char assigned[CATALOG_SERVER_MAX + 1];
	sqlite3_stmt *st;
	int rc;

	catalog_assert_in_call(c);
	st = catalog_stmt(c, STMT_TABLET_SERVER);
	if ((rc = catalog_bind(c, st, "u", tablet_id)) < 0 ||
	    (rc = catalog_step(c, st)) < 0)
		goto out;
	if (rc == SQLITE_DONE) {
		rc = BT_NOTFOUND;
		goto out;
	}
	if ((rc = catalog_column_text(c, st, 0, assigned,
	    sizeof(assigned))) < 0)
		goto out;
	rc = 0;
	if (strcmp(assigned, server) != 0)
		rc = bt_error_set(BT_ENOTSERVING, "catalog: tablet %llu is "
		    "assigned to %s, not to %s", (unsigned long long)tablet_id,
		    assigned[0] != '\0' ? assigned : "no server", server);
out:
	catalog_stmt_done(st);
	return rc;
}

static int
tablet_apply_as_txn(struct catalog *c, const char *server,
    uint64_t tablet_id, const struct catalog_file *added,
    size_t added_count, const uint64_t *removed, size_t removed_count,
    uint64_t flushed_seq)
{
	int rc;

	if (server != NULL &&
	    (rc = catalog_tablet_server_check(c, tablet_id, server)) != 0) {
		if (rc == BT_NOTFOUND)
			return bt_error_set(-ENOENT, "catalog: no tablet %llu",
			    (unsigned long long)tablet_id);
		return rc;
	}
	return tablet_apply_txn(c, tablet_id, added, added_count, removed,
	    removed_count, flushed_seq);
}

/* catalog_tablet_apply(), fenced for server unless it is NULL. */
static int
tablet_apply(struct catalog *c, const char *server, uint64_t tablet_id,
    const struct catalog_file *added, size_t added_count,
    const uint64_t *removed, size_t removed_count, uint64_t flushed_seq)
{
	int rc;

	if ((added_count > 0 && added == NULL) ||
	    (removed_count > 0 && removed == NULL))
		return bt_error_set(-EINVAL, "catalog: tablet %llu: missing "
		    "file list", (unsigned long long)tablet_id);
	for (size_t i = 0; i < added_count; i++)
		if (added[i].number == 0 || !catalog_field_valid(added[i].group,
		    sizeof(added[i].group)))
			return bt_error_set(-EINVAL, "catalog: tablet %llu: "
			    "bad file %llu", (unsigned long long)tablet_id,
			    (unsigned long long)added[i].number);
	if (server != NULL && (server[0] == '\0' ||
	    memchr(server, '\0', CATALOG_SERVER_MAX + 1) == NULL))
		return bt_error_set(-EINVAL, "catalog: tablet %llu: bad "
		    "server name", (unsigned long long)tablet_id);
	if (c->is_remote && server == NULL)
		return c->remote.tablet_apply(c->remote_arg, tablet_id, added,
		    added_count, removed, removed_count, flushed_seq);
	if ((rc = catalog_begin(c, true)) < 0)
		return rc;
	return catalog_end(c, tablet_apply_as_txn(c, server, tablet_id, added,
	    added_count, removed, removed_count, flushed_seq));
}

int
catalog_tablet_apply(struct catalog *c, uint64_t tablet_id,
    const struct catalog_file *added, size_t added_count,
    const uint64_t *removed, size_t removed_count, uint64_t flushed_seq)
{
	return tablet_apply(c, NULL, tablet_id, added, added_count, removed,
	    removed_count, flushed_seq);
}

int
catalog_tablet_apply_as(struct catalog *c, const char *server,
    uint64_t tablet_id, const struct catalog_file *added,
    size_t added_count, const uint64_t *removed, size_t removed_count,
    uint64_t flushed_seq)
{
	assert(server != NULL);
	return tablet_apply(c, server, tablet_id, added, added_count, removed,
	    removed_count, flushed_seq);
}

/* Read a counter: 0 and *value, or BT_NOTFOUND. */
static int
meta_read(struct catalog *c, const char *key, uint64_t *value)
{
	sqlite3_stmt *st = catalog_stmt(c, STMT_META_GET);

	return catalog_one_u64(c, st, catalog_bind(c, st, "t", key), value,
	    NULL);
}

static int
meta_write(struct catalog *c, const char *key, uint64_t value)
{
	sqlite3_stmt *st;
	int rc;

	st = catalog_stmt(c, STMT_META_SET);
	if ((rc = catalog_bind(c, st, "tu", key, value)) < 0) {
		catalog_stmt_done(st);
		return rc;
	}
	return catalog_exec(c, st);
}

int
catalog_next_number_txn(struct catalog *c, uint64_t *number)
{
	uint64_t last = 0;
	int rc;

	catalog_assert_in_call(c);
	if ((rc = meta_read(c, CATALOG_META_LAST_NUMBER, &last)) < 0)
		return rc;
	if (last >= INT64_MAX)
		return bt_error_set(-EOVERFLOW, "catalog %s: file numbers "
		    "exhausted", c->path);
	if ((rc = meta_write(c, CATALOG_META_LAST_NUMBER, last + 1)) < 0)
		return rc;
	*number = last + 1;
	return 0;
}

int
catalog_next_number(struct catalog *c, uint64_t *number)
{
	uint64_t n = 0;
	int rc;

	if (c->is_remote)
		return c->remote.next_number(c->remote_arg, number);
	if ((rc = catalog_begin(c, true)) < 0)
		return rc;
	if ((rc = catalog_end(c, catalog_next_number_txn(c, &n))) == 0)
		*number = n;
	return rc;
}

static int
file_is_live_txn(struct catalog *c, uint64_t number)
{
	sqlite3_stmt *st;
	int rc;

	if (c->commit_unknown)
		return bt_error_set(-EIO, "catalog: a commit failed: file "
		    "%llu may be named; reopen the store",
		    (unsigned long long)number);
	st = catalog_stmt(c, STMT_FILE_LIVE);
	if ((rc = catalog_bind(c, st, "u", number)) == 0 &&
	    (rc = catalog_step(c, st)) >= 0)
		rc = rc == SQLITE_ROW;
	catalog_stmt_done(st);
	return rc;
}

bool
catalog_commit_unknown(struct catalog *c)
{
	bool unknown;

	mutex_lock(&c->mu);
	unknown = c->commit_unknown;
	mutex_unlock(&c->mu);
	return unknown;
}

int
catalog_file_is_live(struct catalog *c, uint64_t number)
{
	int rc;

	if (c->is_remote)
		return c->remote.file_is_live(c->remote_arg, number);
	if ((rc = catalog_begin(c, false)) < 0)
		return rc;
	return catalog_end(c, file_is_live_txn(c, number));
}

static int
meta_get_txn(struct catalog *c, const char *key, uint64_t def,
    uint64_t *value)
{
	int rc = meta_read(c, key, value);

	if (rc == BT_NOTFOUND) {
		*value = def;
		rc = 0;
	}
	return rc;
}

int
catalog_meta_get(struct catalog *c, const char *key, uint64_t def,
    uint64_t *value)
{
	uint64_t v = 0;
	int rc;

	if (!catalog_name_valid(key))
		return bt_error_set(-EINVAL, "catalog: bad meta key '%s'",
		    key != NULL ? key : "(null)");
	if ((rc = catalog_begin(c, false)) < 0)
		return rc;
	if ((rc = catalog_end(c, meta_get_txn(c, key, def, &v))) == 0)
		*value = v;
	return rc;
}

int
catalog_meta_set(struct catalog *c, const char *key, uint64_t value)
{
	int rc;

	if (!catalog_name_valid(key))
		return bt_error_set(-EINVAL, "catalog: bad meta key '%s'",
		    key != NULL ? key : "(null)");
	if ((rc = catalog_begin(c, true)) < 0)
		return rc;
	return catalog_end(c, meta_write(c, key, value));
}

/* Raise counter key to value if that is higher; inside a call's
 * transaction. */
static int
meta_raise(struct catalog *c, const char *key, uint64_t value)
{
	uint64_t old = 0;
	int rc;

	if ((rc = meta_read(c, key, &old)) < 0)
		return rc;
	if (rc == 0 && old >= value)
		return 0;
	return meta_write(c, key, value);
}

static int
tablets_ingest_txn(struct catalog *c, uint64_t table_id,
    const struct catalog_ingest *ins, size_t count, uint64_t last_seq,
    uint64_t last_stamp)
{
	uint64_t owner, seq;
	int rc;

	for (size_t i = 0; i < count; i++) {
		if ((rc = tablet_get(c, ins[i].tablet_id, &owner, &seq)) < 0)
			return rc;
		if (rc == BT_NOTFOUND || owner != table_id)
			return bt_error_set(-ENOENT, "catalog: table %llu has "
			    "no tablet %llu", (unsigned long long)table_id,
			    (unsigned long long)ins[i].tablet_id);
		if ((rc = tablet_apply_txn(c, ins[i].tablet_id, ins[i].files,
		    ins[i].file_count, NULL, 0, ins[i].flushed_seq)) < 0)
			return rc;
	}
	if ((rc = meta_raise(c, CATALOG_META_LAST_SEQ, last_seq)) < 0)
		return rc;
	return meta_raise(c, CATALOG_META_LAST_STAMP, last_stamp);
}

int
catalog_tablets_ingest(struct catalog *c, uint64_t table_id,
    const struct catalog_ingest *ins, size_t count, uint64_t last_seq,
    uint64_t last_stamp)
{
	int rc;

	for (size_t i = 0; i < count; i++) {
		if (ins[i].file_count > 0 && ins[i].files == NULL)
			return bt_error_set(-EINVAL, "catalog: tablet %llu: "
			    "missing file list",
			    (unsigned long long)ins[i].tablet_id);
		for (size_t j = 0; j < ins[i].file_count; j++)
			if (ins[i].files[j].number == 0 ||
			    !catalog_field_valid(ins[i].files[j].group,
			    sizeof(ins[i].files[j].group)))
				return bt_error_set(-EINVAL, "catalog: tablet "
				    "%llu: bad file %llu",
				    (unsigned long long)ins[i].tablet_id,
				    (unsigned long long)ins[i].files[j].number);
	}
	if ((rc = catalog_begin(c, true)) < 0)
		return rc;
	return catalog_end(c, tablets_ingest_txn(c, table_id, ins, count,
	    last_seq, last_stamp));
}
