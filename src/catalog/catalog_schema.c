/*
 * catalog_schema.c - tables, column families and locality groups.
 *
 * Arguments are checked before the transaction starts, so that a bad
 * argument never takes the lock; what depends on the database (does the
 * table exist?) is checked inside it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog_int.h"
#include "catalog/format.h"
#include "util/alloc.h"
#include "util/error.h"

#define CATALOG_DEFAULT_GC_POLICY "never"

/* The group a family is stored in: an empty name means the default. */
static const char *
family_group(const struct catalog_family *f)
{
	return f->group[0] != '\0' ? f->group : CATALOG_DEFAULT_GROUP;
}

/* A family's policy text: an empty one means "never", as cbt does. */
static const char *
family_policy(const struct catalog_family *f)
{
	return f->gc_policy[0] != '\0' ? f->gc_policy :
	    CATALOG_DEFAULT_GC_POLICY;
}

static int
family_check(const struct catalog_family *f)
{
	if (!catalog_field_valid(f->name, sizeof(f->name)))
		return bt_error_set(-EINVAL, "catalog: bad family name '%.*s'",
		    CATALOG_NAME_MAX, f->name);
	if (f->group[0] != '\0' &&
	    !catalog_field_valid(f->group, sizeof(f->group)))
		return bt_error_set(-EINVAL,
		    "catalog: family %s: bad group name '%.*s'", f->name,
		    CATALOG_NAME_MAX, f->group);
	if (memchr(f->gc_policy, '\0', sizeof(f->gc_policy)) == NULL)
		return bt_error_set(-EINVAL,
		    "catalog: family %s: gc policy too long", f->name);
	return 0;
}

static int
group_check(const struct catalog_group *g)
{
	if (!catalog_field_valid(g->name, sizeof(g->name)))
		return bt_error_set(-EINVAL, "catalog: bad group name '%.*s'",
		    CATALOG_NAME_MAX, g->name);
	if (g->block_size == 0)
		return bt_error_set(-EINVAL, "catalog: group %s: block size 0",
		    g->name);
	return 0;
}

/* Check a table's whole definition: names, and no name given twice. */
static int
table_check(const char *name, const struct catalog_family *families,
    size_t family_count, const struct catalog_group *groups,
    size_t group_count, const struct slice *splits, size_t split_count)
{
	int rc;

	if (!catalog_name_valid(name))
		return bt_error_set(-EINVAL, "catalog: bad table name '%s'",
		    name != NULL ? name : "(null)");
	if ((family_count > 0 && families == NULL) ||
	    (group_count > 0 && groups == NULL) ||
	    (split_count > 0 && splits == NULL))
		return bt_error_set(-EINVAL, "catalog: table %s: missing list",
		    name);
	for (size_t i = 0; i < family_count; i++) {
		if ((rc = family_check(&families[i])) < 0)
			return rc;
		for (size_t j = 0; j < i; j++)
			if (strcmp(families[i].name, families[j].name) == 0)
				return bt_error_set(-EINVAL,
				    "catalog: table %s: family %s given twice",
				    name, families[i].name);
	}
	for (size_t i = 0; i < group_count; i++) {
		if ((rc = group_check(&groups[i])) < 0)
			return rc;
		for (size_t j = 0; j < i; j++)
			if (strcmp(groups[i].name, groups[j].name) == 0)
				return bt_error_set(-EINVAL,
				    "catalog: table %s: group %s given twice",
				    name, groups[i].name);
	}
	return 0;
}

static int
split_compare(const void *a, const void *b)
{
	return slice_compare(*(const struct slice *)a,
	    *(const struct slice *)b);
}

/*
 * The split rows sorted, without empty rows (the empty row is where every
 * table starts already) and without duplicates.  *out may be NULL when
 * *count is 0; bt_free it.
 */
static int
splits_normalize(const struct slice *splits, size_t split_count,
    struct slice **out, size_t *count)
{
	struct slice *s;
	size_t n = 0;

	*out = NULL;
	*count = 0;
	if (split_count == 0)
		return 0;
	if (split_count > SIZE_MAX / sizeof(*s))
		return -ENOMEM;
	if ((s = bt_malloc(split_count * sizeof(*s))) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < split_count; i++)
		if (splits[i].n > 0)
			s[n++] = splits[i];
	qsort(s, n, sizeof(*s), split_compare);
	split_count = n;
	n = 0;
	for (size_t i = 0; i < split_count; i++)
		if (n == 0 || !slice_equal(s[n - 1], s[i]))
			s[n++] = s[i];
	*out = s;
	*count = n;
	return 0;
}

int
catalog_table_id(struct catalog *c, const char *name, uint64_t *id)
{
	sqlite3_stmt *st;

	catalog_assert_in_call(c);
	st = catalog_stmt(c, STMT_TABLE_BY_NAME);

	return catalog_one_u64(c, st, catalog_bind(c, st, "t", name), id, NULL);
}

/* The id of a table that a change names: -ENOENT when it is absent. */
static int
table_id_for_change(struct catalog *c, const char *name, uint64_t *id)
{
	int rc = catalog_table_id(c, name, id);

	if (rc == BT_NOTFOUND)
		return bt_error_set(-ENOENT, "catalog: no table %s", name);
	return rc;
}

/* Insert (STMT_GROUP_ADD_DEFAULT: unless present) or update a group. */
static int
group_write(struct catalog *c, enum catalog_stmt_id which, uint64_t table_id,
    const struct catalog_group *g)
{
	sqlite3_stmt *st;
	int rc;

	st = catalog_stmt(c, which);
	if ((rc = catalog_bind(c, st, "utuuuu", table_id, g->name,
	    (uint64_t)g->block_size, (uint64_t)g->compress,
	    (uint64_t)g->bloom, (uint64_t)g->in_memory)) < 0) {
		catalog_stmt_done(st);
		return rc;
	}
	return catalog_exec(c, st);
}

/* Make sure group exists in table_id, with default settings if new. */
static int
group_ensure(struct catalog *c, uint64_t table_id, const char *group)
{
	struct catalog_group g;

	catalog_group_default(&g, group);
	return group_write(c, STMT_GROUP_ADD_DEFAULT, table_id, &g);
}

/* Add a family (and its group if new); -EEXIST if the name is taken. */
static int
family_insert(struct catalog *c, const char *table, uint64_t table_id,
    const struct catalog_family *f)
{
	sqlite3_stmt *st;
	int rc;

	if ((rc = group_ensure(c, table_id, family_group(f))) < 0)
		return rc;
	st = catalog_stmt(c, STMT_FAMILY_INSERT);
	if ((rc = catalog_bind(c, st, "utttu", table_id, f->name,
	    family_group(f), family_policy(f), f->created_seq)) < 0) {
		catalog_stmt_done(st);
		return rc;
	}
	rc = catalog_exec(c, st);
	if (rc == -EEXIST)
		bt_error_set(rc, "catalog: table %s already has family %s",
		    table, f->name);
	return rc;
}

/* Insert the tablets between sorted, distinct, non-empty split rows. */
static int
tablets_insert(struct catalog *c, uint64_t table_id,
    const struct slice *splits, size_t count)
{
	struct slice none = slice_make(NULL, 0);
	sqlite3_stmt *st;
	int rc;

	for (size_t i = 0; i <= count; i++) {
		st = catalog_stmt(c, STMT_TABLET_INSERT);
		if ((rc = catalog_bind(c, st, "ubb", table_id,
		    i > 0 ? &splits[i - 1] : &none,
		    i < count ? &splits[i] : &none)) < 0) {
			catalog_stmt_done(st);
			return rc;
		}
		if ((rc = catalog_exec(c, st)) < 0)
			return rc;
	}
	return 0;
}

static int
table_create_txn(struct catalog *c, const char *name,
    const struct catalog_access *access, uint64_t tablet_size,
    const struct catalog_family *families, size_t family_count,
    const struct catalog_group *groups, size_t group_count,
    const struct slice *splits, size_t split_count, uint64_t *idp)
{
	sqlite3_stmt *st;
	uint64_t id;
	int rc;

	if ((rc = catalog_table_id(c, name, &id)) == 0)
		return bt_error_set(-EEXIST, "catalog: table %s already exists",
		    name);
	if (rc < 0)
		return rc;
	st = catalog_stmt(c, STMT_TABLE_INSERT);
	if ((rc = catalog_bind(c, st, "tuoou", name, tablet_size, access->uid,
	    access->gid, (uint64_t)access->mode)) < 0) {
		catalog_stmt_done(st);
		return rc;
	}
	if ((rc = catalog_exec(c, st)) < 0)
		return rc;
	id = (uint64_t)sqlite3_last_insert_rowid(c->db);
	st = catalog_stmt(c, STMT_META_SET);
	if ((rc = catalog_bind(c, st, "tu", CATALOG_META_LAST_TABLE_ID,
	    id)) < 0) {
		catalog_stmt_done(st);
		return rc;
	}
	if ((rc = catalog_exec(c, st)) < 0)
		return rc;
	for (size_t i = 0; i < group_count; i++)
		if ((rc = group_write(c, STMT_GROUP_UPSERT, id,
		    &groups[i])) < 0)
			return rc;
	if ((rc = group_ensure(c, id, CATALOG_DEFAULT_GROUP)) < 0)
		return rc;
	for (size_t i = 0; i < family_count; i++)
		if ((rc = family_insert(c, name, id, &families[i])) < 0)
			return rc;
	if ((rc = tablets_insert(c, id, splits, split_count)) < 0 ||
	    (rc = catalog_schema_version_raise(c)) < 0)
		return rc;
	*idp = id;
	return 0;
}

static int prepare_run(struct catalog *c, const struct catalog_prepare *prep,
    const char *table, int rc);

/*
 * A change to an existing table: unless table's name is bad or check_rc
 * (the caller's checks of its other arguments) is an error, run
 * change(c, table, id, arg) in a write transaction on the table's id,
 * raise the schema version, then run prep on the table as changed
 * (prepare_run; prep may be NULL).  -ENOENT when the table is absent.
 */
static int
table_change(struct catalog *c, const char *table, int check_rc,
    int (*change)(struct catalog *c, const char *table, uint64_t id,
    const void *arg), const void *arg, const struct catalog_prepare *prep)
{
	uint64_t id;
	int rc;

	if (!catalog_name_valid(table))
		return bt_error_set(-EINVAL, "catalog: bad table name '%s'",
		    table != NULL ? table : "(null)");
	if (check_rc < 0)
		return check_rc;
	if ((rc = catalog_begin(c, true)) < 0)
		return rc;
	if ((rc = table_id_for_change(c, table, &id)) >= 0 &&
	    (rc = change(c, table, id, arg)) >= 0)
		rc = catalog_schema_version_raise(c);
	return catalog_end(c, prepare_run(c, prep, table, rc));
}

int
catalog_table_create(struct catalog *c, const char *name,
    uint64_t tablet_size, const struct catalog_family *families,
    size_t family_count, const struct catalog_group *groups,
    size_t group_count, const struct slice *splits, size_t split_count,
    uint64_t *id, const struct catalog_prepare *prep)
{
	return catalog_table_create_as(c, name, NULL, tablet_size, families,
	    family_count, groups, group_count, splits, split_count, id, prep);
}

int
catalog_table_create_as(struct catalog *c, const char *name,
    const struct catalog_access *access, uint64_t tablet_size,
    const struct catalog_family *families, size_t family_count,
    const struct catalog_group *groups, size_t group_count,
    const struct slice *splits, size_t split_count, uint64_t *id,
    const struct catalog_prepare *prep)
{
	static const struct catalog_access store_owner = {
		CATALOG_ACCESS_STORE_OWNER, CATALOG_ACCESS_STORE_OWNER,
		CATALOG_ACCESS_DEFAULT_MODE
	};
	struct slice *sorted;
	size_t sorted_count;
	uint64_t new_id = 0;
	int rc;

	if ((rc = table_check(name, families, family_count, groups,
	    group_count, splits, split_count)) < 0)
		return rc;
	if (access == NULL)
		access = &store_owner;
	if ((access->mode & ~CATALOG_ACCESS_MODE_MASK) != 0)
		return bt_error_set(-EINVAL, "catalog: table %s: bad mode %#o",
		    name, access->mode);
	if (tablet_size == 0)
		tablet_size = CATALOG_DEFAULT_TABLET_SIZE;
	if (tablet_size > INT64_MAX)
		return bt_error_set(-EINVAL, "catalog: table %s: tablet size "
		    "too large", name);
	if ((rc = splits_normalize(splits, split_count, &sorted,
	    &sorted_count)) < 0)
		return rc;
	if ((rc = catalog_begin(c, true)) < 0)
		goto out;
	rc = catalog_end(c, prepare_run(c, prep, name, table_create_txn(c,
	    name, access, tablet_size, families, family_count, groups, group_count,
	    sorted, sorted_count, &new_id)));
	if (rc == 0 && id != NULL)
		*id = new_id;
out:
	bt_free(sorted);
	return rc;
}

static int
table_drop_txn(struct catalog *c, const char *name, uint64_t id,
    const void *arg)
{
	sqlite3_stmt *st;
	int rc;

	st = catalog_stmt(c, STMT_TABLE_DELETE);
	if ((rc = catalog_bind(c, st, "u", id)) < 0) {
		catalog_stmt_done(st);
		return rc;
	}
	return catalog_exec(c, st);
}

int
catalog_table_drop(struct catalog *c, const char *name)
{
	return table_change(c, name, 0, table_drop_txn, NULL, NULL);
}

void
catalog_table_free(struct catalog_table *t)
{
	if (t == NULL)
		return;
	bt_free(t->families);
	bt_free(t->groups);
	bt_free(t);
}

/* A row of STMT_GROUP_LIST. */
static int
group_read(struct catalog *c, sqlite3_stmt *st, void *elem, void *arg)
{
	struct catalog_group *g = elem;
	int rc;

	if ((rc = catalog_column_text(c, st, 0, g->name,
	    sizeof(g->name))) < 0)
		return rc;
	g->block_size = (uint32_t)sqlite3_column_int64(st, 1);
	g->compress = sqlite3_column_int(st, 2) != 0;
	g->bloom = sqlite3_column_int(st, 3) != 0;
	g->in_memory = sqlite3_column_int(st, 4) != 0;
	return 0;
}

/* A row of STMT_FAMILY_LIST. */
static int
family_read(struct catalog *c, sqlite3_stmt *st, void *elem, void *arg)
{
	struct catalog_family *f = elem;
	int rc;

	if ((rc = catalog_column_text(c, st, 0, f->name,
	    sizeof(f->name))) < 0 ||
	    (rc = catalog_column_text(c, st, 1, f->group,
	    sizeof(f->group))) < 0 ||
	    (rc = catalog_column_text(c, st, 2, f->gc_policy,
	    sizeof(f->gc_policy))) < 0)
		return rc;
	f->created_seq = catalog_column_u64(st, 3);
	f->access.uid = catalog_column_id(c, st, 4, true);
	f->access.gid = catalog_column_id(c, st, 5, false);
	f->access.mode = (uint32_t)sqlite3_column_int64(st, 6) &
	    CATALOG_ACCESS_MODE_MASK;
	return 0;
}

/* Load t's groups and families (t->id set). */
static int
table_load_schema(struct catalog *c, struct catalog_table *t)
{
	sqlite3_stmt *st;
	int rc;

	st = catalog_stmt(c, STMT_GROUP_LIST);
	if ((rc = catalog_rows_load(c, st, catalog_bind(c, st, "u", t->id),
	    sizeof(*t->groups), group_read, NULL, NULL, &t->groups,
	    &t->group_count)) < 0)
		return rc;
	st = catalog_stmt(c, STMT_FAMILY_LIST);
	return catalog_rows_load(c, st, catalog_bind(c, st, "u", t->id),
	    sizeof(*t->families), family_read, NULL, NULL, &t->families,
	    &t->family_count);
}

/*
 * Load the table that the bound statement st (STMT_TABLE_BY_NAME or _ID)
 * finds, with its groups and families; BT_NOTFOUND if none.  Resets st.
 */
static int
table_load(struct catalog *c, sqlite3_stmt *st, struct catalog_table **out)
{
	struct catalog_table *t;
	int rc;

	if ((rc = catalog_step(c, st)) < 0)
		goto out;
	if (rc == SQLITE_DONE) {
		rc = BT_NOTFOUND;
		goto out;
	}
	if ((t = bt_calloc(1, sizeof(*t))) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	t->id = catalog_column_u64(st, 0);
	t->tablet_size = catalog_column_u64(st, 2);
	t->access.uid = catalog_column_id(c, st, 3, true);
	t->access.gid = catalog_column_id(c, st, 4, false);
	t->access.mode = (uint32_t)sqlite3_column_int64(st, 5) &
	    CATALOG_ACCESS_MODE_MASK;
	if ((rc = catalog_column_text(c, st, 1, t->name,
	    sizeof(t->name))) < 0)
		goto out_free;
	catalog_stmt_done(st);
	if ((rc = table_load_schema(c, t)) < 0)
		goto out_free;
	*out = t;
	return 0;
out_free:
	catalog_table_free(t);
out:
	catalog_stmt_done(st);
	return rc;
}

static int
table_get_txn(struct catalog *c, const char *name, uint64_t id,
    struct catalog_table **out)
{
	sqlite3_stmt *st;
	int rc;

	st = catalog_stmt(c, name != NULL ? STMT_TABLE_BY_NAME :
	    STMT_TABLE_BY_ID);
	if (name != NULL)
		rc = catalog_bind(c, st, "t", name);
	else
		rc = catalog_bind(c, st, "u", id);
	if (rc < 0) {
		catalog_stmt_done(st);
		return rc;
	}
	return table_load(c, st, out);
}

int
catalog_table_get(struct catalog *c, const char *name,
    struct catalog_table **out)
{
	int rc;

	if (!catalog_name_valid(name))
		return BT_NOTFOUND;
	if (c->is_remote)
		return c->remote.table_get(c->remote_arg, name, out);
	if ((rc = catalog_begin(c, false)) < 0)
		return rc;
	return catalog_end(c, table_get_txn(c, name, 0, out));
}

int
catalog_table_get_by_id(struct catalog *c, uint64_t id,
    struct catalog_table **out)
{
	int rc;

	if (c->is_remote)
		return c->remote.table_get_by_id(c->remote_arg, id, out);
	if ((rc = catalog_begin(c, false)) < 0)
		return rc;
	return catalog_end(c, table_get_txn(c, NULL, id, out));
}

/*
 * Run prep, if there is one, on table as the change left it (rc: the
 * change's result; its transaction still open): the change's result.
 */
static int
prepare_run(struct catalog *c, const struct catalog_prepare *prep,
    const char *table, int rc)
{
	struct catalog_table *after = NULL;
	struct catalog_tablet *tablets = NULL;
	size_t count = 0;

	if (rc < 0 || prep == NULL)
		return rc;
	catalog_assert_in_call(c);
	if ((rc = table_get_txn(c, table, 0, &after)) == 0 &&
	    (rc = catalog_tablets_list_txn(c, after->id, &tablets,
	    &count)) == 0)
		rc = prep->fn(prep->arg, after, tablets, count);
	/* Gone within its own change's transaction: cannot be. */
	if (rc == BT_NOTFOUND)
		rc = bt_error_set(BT_ECORRUPT, "catalog: table %s: gone "
		    "within its change", table);
	catalog_tablets_free(tablets, count);
	catalog_table_free(after);
	return rc;
}

static void
names_free(char **names, size_t count)
{
	for (size_t i = 0; i < count; i++)
		bt_free(names[i]);
	bt_free(names);
}

static int
table_list_txn(struct catalog *c, char ***namesp, size_t *countp)
{
	sqlite3_stmt *st;
	char **names = NULL, name[CATALOG_NAME_MAX + 1];
	size_t n = 0, cap = 0;
	int rc;

	st = catalog_stmt(c, STMT_TABLE_LIST);
	while ((rc = catalog_step(c, st)) == SQLITE_ROW) {
		if ((rc = catalog_column_text(c, st, 0, name,
		    sizeof(name))) < 0)
			goto out_free;
		if ((rc = catalog_array_grow(&names, &cap, n,
		    sizeof(*names))) < 0)
			goto out_free;
		if ((names[n] = bt_strdup(name)) == NULL) {
			rc = -ENOMEM;
			goto out_free;
		}
		n++;
	}
	if (rc < 0)
		goto out_free;
	if ((rc = catalog_array_grow(&names, &cap, n, sizeof(*names))) < 0)
		goto out_free;
	names[n] = NULL;
	catalog_stmt_done(st);
	*namesp = names;
	*countp = n;
	return 0;
out_free:
	catalog_stmt_done(st);
	names_free(names, n);
	return rc;
}

int
catalog_table_list(struct catalog *c, char ***names, size_t *count)
{
	int rc;

	if (c->is_remote)
		return c->remote.table_list(c->remote_arg, names, count);
	if ((rc = catalog_begin(c, false)) < 0)
		return rc;
	return catalog_end(c, table_list_txn(c, names, count));
}

static int
family_create_txn(struct catalog *c, const char *table, uint64_t id,
    const void *f)
{
	return family_insert(c, table, id, f);
}

int
catalog_family_create(struct catalog *c, const char *table,
    const struct catalog_family *f, const struct catalog_prepare *prep)
{
	return table_change(c, table, f == NULL ? bt_error_set(-EINVAL,
	    "catalog: no family") : family_check(f), family_create_txn, f,
	    prep);
}

/* A family change: STMT_FAMILY_DELETE, or STMT_FAMILY_SET_GC with
 * gc_policy as its third parameter. */
struct family_edit {
	enum catalog_stmt_id which;
	const char *family;
	const char *gc_policy;
};

/* Run a family change; -ENOENT if the family is absent. */
static int
family_change_txn(struct catalog *c, const char *table, uint64_t id,
    const void *arg)
{
	const struct family_edit *fc = arg;
	const char *family = fc->family;
	sqlite3_stmt *st;
	int rc;

	st = catalog_stmt(c, fc->which);
	if (fc->gc_policy != NULL)
		rc = catalog_bind(c, st, "utt", id, family, fc->gc_policy);
	else
		rc = catalog_bind(c, st, "ut", id, family);
	if (rc < 0) {
		catalog_stmt_done(st);
		return rc;
	}
	if ((rc = catalog_exec(c, st)) < 0)
		return rc;
	if (sqlite3_changes(c->db) == 0)
		return bt_error_set(-ENOENT, "catalog: table %s has no family %s",
		    table, family);
	return 0;
}

static int
family_change(struct catalog *c, enum catalog_stmt_id which,
    const char *table, const char *family, const char *gc_policy,
    const struct catalog_prepare *prep)
{
	const struct family_edit fc = { which, family, gc_policy };
	int check_rc = 0;

	if (!catalog_name_valid(family))
		check_rc = bt_error_set(-EINVAL, "catalog: bad family name "
		    "'%s'", family != NULL ? family : "(null)");
	return table_change(c, table, check_rc, family_change_txn, &fc, prep);
}

int
catalog_family_drop(struct catalog *c, const char *table, const char *family,
    const struct catalog_prepare *prep)
{
	return family_change(c, STMT_FAMILY_DELETE, table, family, NULL,
	    prep);
}

int
catalog_family_set_gc(struct catalog *c, const char *table,
    const char *family, const char *gc_policy,
    const struct catalog_prepare *prep)
{
	if (gc_policy == NULL || gc_policy[0] == '\0' ||
	    strlen(gc_policy) >= sizeof(((struct catalog_family *)0)->gc_policy))
		return bt_error_set(-EINVAL, "catalog: family %s: bad gc policy",
		    family != NULL ? family : "(null)");
	return family_change(c, STMT_FAMILY_SET_GC, table, family, gc_policy,
	    prep);
}

static int
group_set_txn(struct catalog *c, const char *table, uint64_t id,
    const void *g)
{
	return group_write(c, STMT_GROUP_UPSERT, id, g);
}

int
catalog_group_set(struct catalog *c, const char *table,
    const struct catalog_group *g, const struct catalog_prepare *prep)
{
	return table_change(c, table, g == NULL ? bt_error_set(-EINVAL,
	    "catalog: no group") : group_check(g), group_set_txn, g, prep);
}

/* An access change (catalog_access_set). */
struct access_edit {
	const char *family;	/* NULL: the table's */
	const struct catalog_access *change;
};

static int
access_set_txn(struct catalog *c, const char *table, uint64_t id,
    const void *arg)
{
	const struct access_edit *e = arg;
	const struct catalog_access *a = e->change;
	sqlite3_stmt *st;
	int rc;

	if (e->family == NULL) {
		st = catalog_stmt(c, STMT_TABLE_SET_ACCESS);
		rc = catalog_bind(c, st, "ukkk", id, a->uid, a->gid, a->mode);
	} else {
		st = catalog_stmt(c, STMT_FAMILY_SET_ACCESS);
		rc = catalog_bind(c, st, "utkkk", id, e->family, a->uid,
		    a->gid, a->mode);
	}
	if (rc < 0) {
		catalog_stmt_done(st);
		return rc;
	}
	if ((rc = catalog_exec(c, st)) < 0)
		return rc;
	if (e->family != NULL && sqlite3_changes(c->db) == 0)
		return bt_error_set(-ENOENT, "catalog: table %s has no family %s",
		    table, e->family);
	return 0;
}

int
catalog_access_set(struct catalog *c, const char *table, const char *family,
    const struct catalog_access *change, const struct catalog_prepare *prep)
{
	const struct access_edit e = { family, change };
	int check_rc = 0;

	if (change == NULL)
		check_rc = bt_error_set(-EINVAL, "catalog: no access change");
	else if (family != NULL && !catalog_name_valid(family))
		check_rc = bt_error_set(-EINVAL, "catalog: bad family name "
		    "'%s'", family);
	else if (change->mode != CATALOG_ACCESS_KEEP &&
	    (change->mode & ~CATALOG_ACCESS_MODE_MASK) != 0)
		check_rc = bt_error_set(-EINVAL, "catalog: bad mode %#o",
		    change->mode);
	return table_change(c, table, check_rc, access_set_txn, &e, prep);
}
