/*
 * api.c - the public C API (tabletfs.h) over the tablet server: argument
 * checks, conversion between the public types and the engine's, and result
 * rows that the caller owns.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api/api_cell.h"
#include "api/api_server.h"
#include "api/location_cache.h"
#include "api/tabletfs.h"
#include "server/server.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/mutex.h"
#include "util/regex.h"
#include "util/units.h"

/* Calls on one row that meet a stale location, at most, before the store
 * is asked to route the row itself. */
#define LOCATE_TRIES 3

/*
 * A cell's access (bt_access_get()), which the mount asks for with every
 * attribute it sends: kept per table for ACCESS_CACHE_NS, as the kernel
 * keeps attributes, and dropped by every change made through this
 * handle.  An embedded store answers from its memory instead.
 */
#define ACCESS_CACHE_SLOTS	8
#define ACCESS_CACHE_NS		1000000000ull

struct access_cache_entry {
	char table[BT_NAME_MAX + 1];	/* "" unused */
	uint64_t at_ns;			/* CLOCK_MONOTONIC, when asked */
	struct bt_access table_access;
	struct bt_family_access *families;
	size_t count;
};

struct bt_store {
	/* An embedded store's server, or a cell's client (bt_store_open()
	 * of a cell address): exactly one is set, and every call goes to
	 * it. */
	struct server *server;
	struct cell_client *cell;
	/* Where rows live (Bigtable 5.1): consulted before each call on a
	 * row, filled by walking the catalog's location hierarchy. */
	struct location_cache *locations;
	/* Rows for the point reads. */
	struct server_row_pool rows;
	/* A cell's: access_mu guards access and access_next. */
	struct mutex access_mu;
	struct access_cache_entry access[ACCESS_CACHE_SLOTS];
	size_t access_next;
};

struct bt_scan {
	struct server_scan *scan;	/* or, on a cell: */
	struct cell_scan *cell;
	struct cells_row row;
	struct cells_column *columns;
	struct cells_filter filter;
	struct buf end;		/* computed end for prefix scans */
	struct buf regex_prefix;	/* the row regex's literal prefix */
	struct buf regex_end;		/* and the end of its rows */
	uint64_t limit;
	uint64_t returned;
	bool lend_values;	/* bt_scan_options.lend_values */
	/* The row bt_scan_next_borrowed() lends: its cells point into row. */
	struct bt_row lent;
	struct bt_cell *lent_cells;
	size_t lent_cap;
};

static struct slice
bytes_slice(struct bt_bytes b)
{
	return slice_make(b.data, b.size);
}

static void
server_options_from(const struct bt_options *opts, struct server_options *so)
{
	memset(so, 0, sizeof(*so));
	if (opts == NULL)
		return;
	so->memtable_size = opts->memtable_size;
	so->block_cache_size = opts->block_cache_size;
	so->max_cell = opts->max_cell;
	so->sync_always = opts->sync_always;
	so->read_only = opts->read_only;
	so->env = opts->env;
	so->notice = opts->notice;
	so->notice_arg = opts->notice_arg;
}

int
bt_store_create(const char *path, const struct bt_options *opts)
{
	bt_error_clear();
	if (path != NULL && cell_client_address(path))
		return bt_error_set(-EINVAL, "%s: a cell is created with "
		    "tabletctl init, not as a store", path);
	return server_create(path, opts ? opts->env : NULL);
}

/*
 * Open the store at path: a cell's client for a cell address, else the
 * tablet server of the store, embedded or (cell not NULL) one of a
 * cell's, which owns cell->catalog from the call on.
 */
static int
store_open(const char *path, const struct bt_options *opts,
    const struct api_cell_server *cell, struct bt_store **out)
{
	struct server_options so;
	struct bt_store *s = NULL;
	/* Ours until server_open() takes it. */
	struct catalog *catalog = cell != NULL ? cell->catalog : NULL;
	bool address = path != NULL && cell_client_address(path);
	int rc;

	bt_error_clear();
	server_options_from(opts, &so);
	if (cell != NULL && (path == NULL || address)) {
		rc = bt_error_set(-EINVAL, "a cell's tablet server opens its "
		    "storage, not a cell address");
		goto out;
	}
	if (opts != NULL && opts->max_cell > BT_MAX_CELL_LIMIT) {
		char want[UNITS_STRLEN], limit[UNITS_STRLEN];

		rc = bt_error_set(-EINVAL, "max_cell %s is over %s, the "
		    "largest value a commit log record holds",
		    format_size(want, sizeof(want), opts->max_cell),
		    format_size(limit, sizeof(limit), BT_MAX_CELL_LIMIT));
		goto out;
	}
	if ((s = bt_calloc(1, sizeof(*s))) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	server_row_pool_init(&s->rows);
	if ((rc = mutex_init(&s->access_mu)) < 0)
		goto out_free;
	if ((rc = location_cache_new(0, &s->locations)) < 0)
		goto out_mutex;
	if (address) {
		rc = cell_client_open(path, opts ? opts->deadline_ms : 0,
		    &s->cell);
	} else {
		if (cell != NULL) {
			so.name = cell->name;
			so.dir = cell->dir;
			so.catalog = catalog;
		}
		catalog = NULL;		/* the server's, whatever it returns */
		rc = server_open(path, &so, &s->server);
	}
	if (rc < 0)
		goto out_cache;
	*out = s;
	return 0;
out_cache:
	location_cache_free(s->locations);
out_mutex:
	mutex_destroy(&s->access_mu);
out_free:
	server_row_pool_release(&s->rows);
	bt_free(s);
out:
	catalog_close(catalog);
	return rc;
}

int
bt_store_open(const char *path, const struct bt_options *opts,
    struct bt_store **out)
{
	return store_open(path, opts, NULL, out);
}

int
api_store_open_cell(const char *path, const struct bt_options *opts,
    const struct api_cell_server *cell, struct bt_store **out)
{
	return store_open(path, opts, cell, out);
}

/* Forget every table's cached access (a cell's). */
static void
access_cache_clear(struct bt_store *s)
{
	mutex_lock(&s->access_mu);
	for (size_t i = 0; i < ACCESS_CACHE_SLOTS; i++) {
		free(s->access[i].families);
		memset(&s->access[i], 0, sizeof(s->access[i]));
	}
	mutex_unlock(&s->access_mu);
}

int
bt_store_close(struct bt_store *s)
{
	int rc;

	bt_error_clear();
	if (s == NULL)
		return 0;
	rc = server_close(s->server);
	cell_client_close(s->cell);
	access_cache_clear(s);
	mutex_destroy(&s->access_mu);
	location_cache_free(s->locations);
	server_row_pool_release(&s->rows);
	bt_free(s);
	return rc;
}

/* ---- Schema ---- */

static int
family_from_spec(const struct bt_family_spec *spec, struct catalog_family *f)
{
	memset(f, 0, sizeof(*f));
	if (spec == NULL || spec->name == NULL || strlen(spec->name) > CATALOG_NAME_MAX ||
	    (spec->group != NULL && strlen(spec->group) > CATALOG_NAME_MAX))
		return bt_error_set(-EINVAL, "bad family or group name");
	if (spec->gc_policy != NULL &&
	    strlen(spec->gc_policy) >= sizeof(f->gc_policy))
		return bt_error_set(-EINVAL, "gc policy too long");
	snprintf(f->name, sizeof(f->name), "%s", spec->name);
	snprintf(f->group, sizeof(f->group), "%s",
	    spec->group ? spec->group : "");
	snprintf(f->gc_policy, sizeof(f->gc_policy), "%s",
	    spec->gc_policy ? spec->gc_policy : "");
	return 0;
}

int
bt_table_create(struct bt_store *s, const char *table,
    const struct bt_family_spec *families, size_t family_count,
    const struct bt_bytes *splits, size_t split_count, uint64_t tablet_size)
{
	return bt_table_create_as(s, table, NULL, families, family_count,
	    splits, split_count, tablet_size);
}

int
bt_table_create_as(struct bt_store *s, const char *table,
    const struct bt_access *owner, const struct bt_family_spec *families,
    size_t family_count, const struct bt_bytes *splits, size_t split_count,
    uint64_t tablet_size)
{
	struct catalog_access access = {
		(uint32_t)geteuid(), (uint32_t)getegid(),
		CATALOG_ACCESS_DEFAULT_MODE
	};
	struct catalog_family *fams;
	struct slice *sp;
	int rc = -ENOMEM;

	bt_error_clear();
	if (owner != NULL) {
		if ((owner->mode & ~BT_ACCESS_MODE_MASK) != 0 ||
		    owner->uid == BT_ACCESS_KEEP ||
		    owner->gid == BT_ACCESS_KEEP)
			return bt_error_set(-EINVAL, "table %s: bad owner or "
			    "mode", table != NULL ? table : "(null)");
		access.uid = owner->uid;
		access.gid = owner->gid;
		access.mode = owner->mode;
	}
	if (s->cell != NULL) {
		/* The creator is this process, not the serving one. */
		access_cache_clear(s);
		return cell_table_create(s->cell, table, &(struct bt_access){
		    access.uid, access.gid, access.mode }, families,
		    family_count, splits, split_count, tablet_size);
	}
	fams = bt_calloc(family_count + 1, sizeof(*fams));
	sp = bt_calloc(split_count + 1, sizeof(*sp));
	if (fams == NULL || sp == NULL)
		goto out;
	for (size_t i = 0; i < family_count; i++)
		if ((rc = family_from_spec(&families[i], &fams[i])) < 0)
			goto out;
	for (size_t i = 0; i < split_count; i++)
		sp[i] = bytes_slice(splits[i]);
	rc = server_table_create(s->server, table, &access, fams,
	    family_count, sp,
	    split_count, tablet_size);
out:
	bt_free(fams);
	bt_free(sp);
	return rc;
}

int
bt_table_delete(struct bt_store *s, const char *table)
{
	uint64_t id;

	bt_error_clear();
	if (s->cell != NULL) {
		access_cache_clear(s);
		return cell_table_delete(s->cell, table);
	}
	if (table != NULL && server_table_id(s->server, table, &id) == 0)
		location_cache_invalidate_table(s->locations, id);
	return server_table_drop(s->server, table);
}

int
bt_table_list(struct bt_store *s, char ***names, size_t *count)
{
	bt_error_clear();
	if (s->cell != NULL)
		return cell_table_list(s->cell, names, count);
	return server_table_list(s->server, names, count);
}

void
bt_names_free(char **names)
{
	if (names == NULL)
		return;
	for (size_t i = 0; names[i] != NULL; i++)
		bt_free(names[i]);
	bt_free(names);
}

int
bt_family_create(struct bt_store *s, const char *table,
    const struct bt_family_spec *family)
{
	struct catalog_family f;
	int rc;

	bt_error_clear();
	if ((rc = family_from_spec(family, &f)) < 0)
		return rc;
	if (s->cell != NULL) {
		access_cache_clear(s);
		return cell_family_create(s->cell, table, family);
	}
	return server_family_create(s->server, table, &f);
}

int
api_family_create_above(struct bt_store *s, const char *table,
    const struct bt_family_spec *family, uint64_t created_min,
    const char *const *servers, size_t count)
{
	struct catalog_family f;
	int rc;

	bt_error_clear();
	if (s->cell != NULL)
		return bt_error_set(-EINVAL, "a cell's client gives no "
		    "created_seq");
	if ((rc = family_from_spec(family, &f)) < 0)
		return rc;
	f.created_seq = created_min;
	return server_family_create_after(s->server, table, &f, servers,
	    count);
}

int
bt_family_delete(struct bt_store *s, const char *table, const char *family)
{
	bt_error_clear();
	if (s->cell != NULL) {
		access_cache_clear(s);
		return cell_family_delete(s->cell, table, family);
	}
	return server_family_drop(s->server, table, family);
}

int
bt_family_set_gc(struct bt_store *s, const char *table, const char *family,
    const char *gc_policy)
{
	bt_error_clear();
	if (s->cell != NULL)
		return cell_family_set_gc(s->cell, table, family, gc_policy);
	return server_family_set_gc(s->server, table, family, gc_policy);
}

int
bt_group_set(struct bt_store *s, const char *table,
    const struct bt_group_spec *spec)
{
	struct catalog_table *ct;
	struct catalog_group g;
	int rc;

	bt_error_clear();
	if (spec->name == NULL || strlen(spec->name) > CATALOG_NAME_MAX)
		return bt_error_set(-EINVAL, "bad group name");
	if (s->cell != NULL)
		return cell_group_set(s->cell, table, spec);
	if ((rc = server_table_get(s->server, table, &ct)) < 0)
		return rc;
	catalog_group_default(&g, spec->name);
	for (size_t i = 0; i < ct->group_count; i++)
		if (strcmp(ct->groups[i].name, spec->name) == 0)
			g = ct->groups[i];
	catalog_table_free(ct);
	if (spec->block_size != 0)
		g.block_size = spec->block_size;
	if (spec->compress >= 0)
		g.compress = spec->compress;
	if (spec->bloom >= 0)
		g.bloom = spec->bloom;
	if (spec->in_memory >= 0)
		g.in_memory = spec->in_memory;
	return server_group_set(s->server, table, &g);
}

/* A table's families (or, when groups, its locality groups) as the text
 * that bt_table_describe (bt_table_describe_groups) returns. */
static int
table_describe(struct bt_store *s, const char *table, bool groups,
    char **text)
{
	struct catalog_table *ct;
	char *out = NULL, block[UNITS_STRLEN];
	size_t size = 0;
	FILE *f;
	int rc;

	bt_error_clear();
	if (s->cell != NULL)
		return cell_table_describe(s->cell, table, groups, text);
	if ((rc = server_table_get(s->server, table, &ct)) < 0)
		return rc;
	if ((f = open_memstream(&out, &size)) == NULL) {
		catalog_table_free(ct);
		return -ENOMEM;
	}
	if (groups) {
		for (size_t i = 0; i < ct->group_count; i++) {
			const struct catalog_group *g = &ct->groups[i];

			fprintf(f, "%s blocksize=%s compression=%s bloom=%s "
			    "inmemory=%s\n", g->name,
			    format_size(block, sizeof(block), g->block_size),
			    g->compress ? "snappy" : "none",
			    g->bloom ? "on" : "off",
			    g->in_memory ? "on" : "off");
		}
	} else {
		for (size_t i = 0; i < ct->family_count; i++)
			fprintf(f, "%s group=%s gc=%s\n",
			    ct->families[i].name, ct->families[i].group,
			    ct->families[i].gc_policy);
	}
	catalog_table_free(ct);
	if (fclose(f) != 0) {
		free(out);
		return -ENOMEM;
	}
	*text = out;
	return 0;
}

int
bt_table_describe(struct bt_store *s, const char *table, char **text)
{
	return table_describe(s, table, false, text);
}

int
bt_table_describe_groups(struct bt_store *s, const char *table, char **text)
{
	return table_describe(s, table, true, text);
}

/* ---- Access control ---- */

bool
bt_access_allows(const struct bt_access *a, const struct bt_cred *c,
    int want)
{
	uint32_t bits;
	bool member;

	if (c->uid == 0)
		return true;
	if (c->uid == a->uid) {
		bits = a->mode >> 6;
	} else {
		member = c->gid == a->gid;
		for (size_t i = 0; !member && i < c->group_count; i++)
			member = c->groups[i] == a->gid;
		bits = member ? a->mode >> 3 : a->mode;
	}
	want &= BT_ACCESS_READ | BT_ACCESS_WRITE;
	return ((uint32_t)want & bits) == (uint32_t)want;
}

static void
access_to_bt(const struct catalog_access *c, struct bt_access *b)
{
	b->uid = c->uid;
	b->gid = c->gid;
	b->mode = c->mode;
}

static uint64_t
monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Answer from e, a cache entry of table: 0, or -ENOENT for a family
 * it lacks. */
static int
access_from_entry(const struct access_cache_entry *e, const char *table,
    const char *family, struct bt_access *table_access,
    struct bt_access *family_access)
{
	*table_access = e->table_access;
	if (family == NULL)
		return 0;
	for (size_t i = 0; i < e->count; i++) {
		if (strcmp(e->families[i].name, family) == 0) {
			*family_access = e->families[i].access;
			return 0;
		}
	}
	return bt_error_set(-ENOENT, "table %s: no family %s", table, family);
}

/* bt_access_get() on a cell: from the cache while fresh, else asked. */
static int
cell_access_get(struct bt_store *s, const char *table, const char *family,
    struct bt_access *table_access, struct bt_access *family_access)
{
	struct access_cache_entry *e, fresh;
	uint64_t now = monotonic_ns();
	int rc;

	if (table == NULL || strlen(table) > BT_NAME_MAX)
		return bt_error_set(-ENOENT, "table %s: no such table",
		    table != NULL ? table : "(null)");
	mutex_lock(&s->access_mu);
	for (size_t i = 0; i < ACCESS_CACHE_SLOTS; i++) {
		e = &s->access[i];
		if (strcmp(e->table, table) == 0 &&
		    now - e->at_ns < ACCESS_CACHE_NS) {
			rc = access_from_entry(e, table, family, table_access,
			    family_access);
			mutex_unlock(&s->access_mu);
			return rc;
		}
	}
	mutex_unlock(&s->access_mu);
	memset(&fresh, 0, sizeof(fresh));
	if ((rc = cell_table_access(s->cell, table, &fresh.table_access,
	    &fresh.families, &fresh.count)) < 0)
		return rc;
	snprintf(fresh.table, sizeof(fresh.table), "%s", table);
	fresh.at_ns = now;
	rc = access_from_entry(&fresh, table, family, table_access,
	    family_access);
	mutex_lock(&s->access_mu);
	for (size_t i = 0; i < ACCESS_CACHE_SLOTS; i++) {
		if (strcmp(s->access[i].table, table) == 0) {
			free(s->access[i].families);
			memset(&s->access[i], 0, sizeof(s->access[i]));
		}
	}
	e = &s->access[s->access_next++ % ACCESS_CACHE_SLOTS];
	free(e->families);
	*e = fresh;
	mutex_unlock(&s->access_mu);
	return rc;
}

int
bt_access_get(struct bt_store *s, const char *table, const char *family,
    struct bt_access *table_access, struct bt_access *family_access)
{
	struct catalog_access t, f;
	int rc;

	bt_error_clear();
	if (s->cell != NULL)
		return cell_access_get(s, table, family, table_access,
		    family_access);
	if ((rc = server_access_get(s->server, table, family, &t, &f)) < 0)
		return rc;
	access_to_bt(&t, table_access);
	if (family != NULL)
		access_to_bt(&f, family_access);
	return 0;
}

int
bt_table_access(struct bt_store *s, const char *table,
    struct bt_access *table_access, struct bt_family_access **families,
    size_t *count)
{
	char (*names)[CATALOG_NAME_MAX + 1];
	struct catalog_access t, *f;
	struct bt_family_access *out;
	size_t n;
	int rc;

	bt_error_clear();
	if (s->cell != NULL)
		return cell_table_access(s->cell, table, table_access,
		    families, count);
	if ((rc = server_access_list(s->server, table, &t, &names, &f,
	    &n)) < 0)
		return rc;
	/* With malloc: the caller frees it with free(). */
	if ((out = calloc(n + 1, sizeof(*out))) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		snprintf(out[i].name, sizeof(out[i].name), "%s", names[i]);
		access_to_bt(&f[i], &out[i].access);
	}
	access_to_bt(&t, table_access);
	*families = out;
	*count = n;
out:
	bt_free(names);
	bt_free(f);
	return rc;
}

int
bt_access_set(struct bt_store *s, const char *table, const char *family,
    const struct bt_access *change)
{
	struct catalog_access c;

	bt_error_clear();
	if (change == NULL)
		return bt_error_set(-EINVAL, "no access change");
	if (change->mode != BT_ACCESS_KEEP &&
	    (change->mode & ~BT_ACCESS_MODE_MASK) != 0)
		return bt_error_set(-EINVAL, "mode %#o: only the permission "
		    "bits (0777) may be set", change->mode);
	if (s->cell != NULL) {
		access_cache_clear(s);
		return cell_access_set(s->cell, table, family, change);
	}
	c.uid = change->uid;
	c.gid = change->gid;
	c.mode = change->mode;
	return server_access_set(s->server, table, family, &c);
}

int
bt_table_describe_access(struct bt_store *s, const char *table, char **text)
{
	struct bt_family_access *fams = NULL;
	struct bt_access t;
	size_t n = 0, size = 0;
	char *out = NULL;
	FILE *f;
	int rc;

	if ((rc = bt_table_access(s, table, &t, &fams, &n)) < 0)
		return rc;
	if ((f = open_memstream(&out, &size)) == NULL) {
		free(fams);
		return -ENOMEM;
	}
	fprintf(f, "access table %s uid=%" PRIu32 " gid=%" PRIu32
	    " mode=%04o\n", table, t.uid, t.gid, (unsigned)t.mode);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "access family %s uid=%" PRIu32 " gid=%" PRIu32
		    " mode=%04o\n", fams[i].name, fams[i].access.uid,
		    fams[i].access.gid, (unsigned)fams[i].access.mode);
	free(fams);
	if (fclose(f) != 0) {
		free(out);
		return -ENOMEM;
	}
	*text = out;
	return 0;
}

void
api_table_usage_sum(struct bt_table_usage *u, uint64_t other_memory_bytes)
{
	u->memory_bytes = other_memory_bytes;
	for (size_t i = 0; i < u->family_count; i++) {
		u->memory_bytes += u->families[i].memory_bytes;
		u->entries += u->families[i].entries;
		u->value_bytes += u->families[i].value_bytes;
	}
	for (size_t i = 0; i < u->group_count; i++) {
		u->files += u->groups[i].files;
		u->disk_bytes += u->groups[i].disk_bytes;
	}
}

struct bt_table_usage *
api_table_usage_alloc(size_t family_count, size_t group_count)
{
	struct bt_table_usage *u;

	if ((u = bt_calloc(1, sizeof(*u) + (family_count + 1) *
	    sizeof(*u->families) + (group_count + 1) *
	    sizeof(*u->groups))) == NULL)
		return NULL;
	u->families = (struct bt_family_usage *)(u + 1);
	u->groups = (struct bt_group_usage *)(u->families + family_count + 1);
	u->family_count = family_count;
	u->group_count = group_count;
	return u;
}

int
bt_table_usage(struct bt_store *s, const char *table,
    struct bt_table_usage **out)
{
	struct server_table_usage su;
	struct bt_table_usage *u;
	int rc;

	bt_error_clear();
	if (s->cell != NULL)
		return cell_table_usage(s->cell, table, out);
	if ((rc = server_table_usage(s->server, table, &su)) < 0)
		return rc;
	if ((u = api_table_usage_alloc(su.family_count,
	    su.group_count)) == NULL) {
		server_table_usage_release(&su);
		return -ENOMEM;
	}
	for (size_t i = 0; i < su.family_count; i++) {
		const struct server_family_usage *f = &su.families[i];
		struct bt_family_usage *o = &u->families[i];

		snprintf(o->name, sizeof(o->name), "%s", f->name);
		snprintf(o->group, sizeof(o->group), "%s", f->group);
		o->disk_bytes = f->disk_bytes;
		o->memory_bytes = f->memory_bytes;
		o->entries = f->entries;
		o->value_bytes = f->value_bytes;
	}
	for (size_t i = 0; i < su.group_count; i++) {
		const struct server_group_usage *g = &su.groups[i];
		struct bt_group_usage *o = &u->groups[i];

		snprintf(o->name, sizeof(o->name), "%s", g->name);
		o->files = g->files;
		o->disk_bytes = g->disk_bytes;
		o->memory_bytes = g->memory_bytes;
		o->other_bytes = g->other_bytes;
		o->unknown_bytes = g->unknown_bytes;
	}
	api_table_usage_sum(u, su.other_memory_bytes);
	server_table_usage_release(&su);
	*out = u;
	return 0;
}

void
bt_table_usage_free(struct bt_table_usage *u)
{
	bt_free(u);
}

int
bt_table_describe_usage(struct bt_store *s, const char *table, char **text)
{
	struct bt_table_usage *u;
	char *out = NULL;
	size_t size = 0;
	FILE *f;
	int rc;

	if ((rc = bt_table_usage(s, table, &u)) < 0)
		return rc;
	if ((f = open_memstream(&out, &size)) == NULL) {
		bt_table_usage_free(u);
		return -ENOMEM;
	}
	for (size_t i = 0; i < u->family_count; i++) {
		const struct bt_family_usage *fu = &u->families[i];

		fprintf(f, "family %s group=%s disk_bytes=%" PRIu64
		    " memory_bytes=%" PRIu64 " entries=%" PRIu64
		    " value_bytes=%" PRIu64 "\n", fu->name, fu->group,
		    fu->disk_bytes, fu->memory_bytes, fu->entries,
		    fu->value_bytes);
	}
	for (size_t i = 0; i < u->group_count; i++) {
		const struct bt_group_usage *g = &u->groups[i];

		fprintf(f, "group %s files=%" PRIu64 " disk_bytes=%" PRIu64
		    " memory_bytes=%" PRIu64 " other_bytes=%" PRIu64
		    " unknown_bytes=%" PRIu64 "\n", g->name, g->files,
		    g->disk_bytes, g->memory_bytes, g->other_bytes,
		    g->unknown_bytes);
	}
	fprintf(f, "table %s files=%" PRIu64 " disk_bytes=%" PRIu64
	    " memory_bytes=%" PRIu64 " entries=%" PRIu64 " value_bytes=%"
	    PRIu64 "\n", table, u->files, u->disk_bytes, u->memory_bytes,
	    u->entries, u->value_bytes);
	bt_table_usage_free(u);
	if (fclose(f) != 0) {
		free(out);
		return -ENOMEM;
	}
	*text = out;
	return 0;
}

/* ---- Writing ---- */

/* Mutations up to this many are converted into the caller's array
 * (most calls carry one): no allocation on the common put path. */
#define MUTATIONS_LOCAL	8

/* Convert public mutations, into local when count <= MUTATIONS_LOCAL,
 * otherwise into a new array (mutations_free() either); the slices
 * borrow from muts. */
static int
mutations_from(const struct bt_mutation *muts, size_t count,
    struct mutation *local, struct mutation **out)
{
	struct mutation *ops = local;

	if (muts == NULL || count == 0)
		return bt_error_set(-EINVAL, "empty mutation");
	if (count > MUTATIONS_LOCAL &&
	    (ops = bt_calloc(count, sizeof(*ops))) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < count; i++) {
		const struct bt_mutation *m = &muts[i];

		ops[i].kind = (enum mutation_kind)m->kind;
		ops[i].family = m->family ? slice_str(m->family) :
		    slice_make("", 0);
		ops[i].qualifier = bytes_slice(m->qualifier);
		ops[i].ts = m->ts;
		ops[i].value = bytes_slice(m->value);
		ops[i].ts_floor = 0;
		if (m->kind != BT_DELETE_ROW && m->family == NULL) {
			if (ops != local)
				bt_free(ops);
			return bt_error_set(-EINVAL, "mutation without family");
		}
	}
	*out = ops;
	return 0;
}

static void
mutations_free(struct mutation *ops, struct mutation *local)
{
	if (ops != local)
		bt_free(ops);
}

/*
 * The tablet that serves row, for the attempt-th try of a call: from the
 * location cache, or by walking the location hierarchy on a miss or after
 * a try that found the cached tablet stale.  0 (let the store route the
 * row) when there is nothing to look up, after LOCATE_TRIES tries, or when
 * the walk fails (the call then reports what is wrong).
 */
static uint64_t
row_locate(struct bt_store *s, const char *table, uint64_t table_id,
    struct bt_bytes row, int attempt)
{
	struct catalog_location loc;
	struct slice r = bytes_slice(row);
	uint64_t tablet = 0;
	int levels = 0;

	if (r.n == 0 || r.n > BT_MAX_ROW || attempt >= LOCATE_TRIES)
		return 0;
	if (attempt > 0)
		location_cache_invalidate(s->locations, table_id, r);
	else if (location_cache_lookup(s->locations, table_id, r,
	    &tablet) == 0)
		return tablet;
	catalog_location_init(&loc);
	if (server_locate(s->server, table, r, &loc, &levels) == 0) {
		location_cache_add_levels(s->locations, (unsigned)levels);
		if (location_cache_insert(s->locations, table_id,
		    buf_slice(&loc.start), buf_slice(&loc.end),
		    loc.tablet_id) == 0)
			tablet = loc.tablet_id;
	}
	catalog_location_release(&loc);
	bt_error_clear();
	return tablet;
}

/*
 * Run call, one server call on row of the table named table (whose id is
 * table_id) that names the tablet it believes serves the row (tablet)
 * and the table by a reference the caller holds, until it does not meet
 * a stale location.
 */
#define ON_TABLE_ROW(s, table, table_id, row, rc, call) do {		\
	for (int on_row_try_ = 0;; on_row_try_++) {			\
		uint64_t tablet = row_locate((s), (table), (table_id),	\
		    (row), on_row_try_);				\
									\
		if (((rc) = (call)) != BT_STALE)			\
			break;						\
		assert(tablet != 0);	/* routed by the server */	\
	}								\
} while (0)

/*
 * ON_TABLE_ROW on the table named table, by the reference t: the name is
 * looked up once, for the location cache and every try of the call; rc
 * is the lookup's error when there is no such table.
 */
#define ON_ROW(s, table, row, rc, call) do {				\
	struct server_table *t;						\
	uint64_t on_row_id_;						\
									\
	if (((rc) = server_table_ref((s)->server, (table), &t,		\
	    &on_row_id_)) < 0)						\
		break;							\
	ON_TABLE_ROW(s, table, on_row_id_, row, rc, call);		\
	server_table_unref(t);						\
} while (0)

static bool
want_sync(const struct bt_write_options *wopts)
{
	return wopts != NULL && wopts->sync;
}

int
bt_mutate_row(struct bt_store *s, const char *table, struct bt_bytes row,
    const struct bt_mutation *muts, size_t count,
    const struct bt_write_options *wopts, int64_t *stamp)
{
	struct mutation local[MUTATIONS_LOCAL], *ops;
	int rc;

	bt_error_clear();
	if (s->cell != NULL)
		return cell_mutate_row(s->cell, table, row, muts, count,
		    want_sync(wopts), false, NULL, (struct bt_bytes){ 0 },
		    NULL, -1, NULL, stamp);
	if ((rc = mutations_from(muts, count, local, &ops)) < 0)
		return rc;
	ON_ROW(s, table, row, rc, server_mutate(s->server, t, tablet,
	    bytes_slice(row), ops, count, want_sync(wopts), stamp));
	mutations_free(ops, local);
	return rc;
}

/*
 * The rows of a batch in the engine's terms, into *engine (count *m,
 * with one allocation of mutations at *opsp; bt_free() both): each row
 * that converts, with map[k] its index in rows; a row that does not
 * fails at once in results.  Every row is routed by the server as it is
 * applied (no tablet named, so none is stale): a batch is logged once.
 */
static int
rows_from(const struct bt_row_mutation *rows, size_t n, struct server_table *t,
    int *results, struct server_row_mutation **engine, size_t **map,
    struct mutation **opsp, size_t *m)
{
	struct server_row_mutation *e;
	struct mutation *ops, local[MUTATIONS_LOCAL], *conv;
	size_t total = 0, k = 0, at = 0, *idx;
	int rc;

	for (size_t i = 0; i < n; i++) {
		if (rows[i].count > SIZE_MAX / sizeof(*ops) - total)
			return bt_error_set(-EINVAL, "too many mutations");
		total += rows[i].count;
	}
	e = bt_calloc(n, sizeof(*e));
	idx = bt_calloc(n, sizeof(*idx));
	ops = bt_calloc(total > 0 ? total : 1, sizeof(*ops));
	if (e == NULL || idx == NULL || ops == NULL) {
		bt_free(e);
		bt_free(idx);
		bt_free(ops);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		if ((rc = mutations_from(rows[i].muts, rows[i].count, local,
		    &conv)) < 0) {
			results[i] = rc;
			continue;
		}
		memcpy(ops + at, conv, rows[i].count * sizeof(*ops));
		mutations_free(conv, local);
		e[k].t = t;
		e[k].row = bytes_slice(rows[i].row);
		e[k].ops = ops + at;
		e[k].count = rows[i].count;
		idx[k++] = i;
		at += rows[i].count;
	}
	*engine = e;
	*map = idx;
	*opsp = ops;
	*m = k;
	return 0;
}

/* Fail every row of a batch not yet failed with rc (a whole-batch
 * failure, before anything was written); returns rc. */
static int
rows_fail(int *results, size_t n, int rc)
{
	for (size_t i = 0; i < n; i++)
		if (results[i] == 0)
			results[i] = rc;
	return rc;
}

int
bt_mutate_rows(struct bt_store *s, const char *table,
    const struct bt_row_mutation *rows, size_t n,
    const struct bt_write_options *wopts, int *results)
{
	struct server_row_mutation *engine = NULL;
	struct server_table *t;
	struct mutation *ops = NULL;
	size_t *map = NULL, m = 0;
	int *res = results, *sub = NULL, rc, first = 0;
	uint64_t id;

	bt_error_clear();
	if (rows == NULL || n == 0)
		return bt_error_set(-EINVAL, "empty batch");
	if (res == NULL && (res = bt_calloc(n, sizeof(*res))) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		res[i] = 0;
	if (s->cell != NULL) {
		rc = cell_mutate_rows(s->cell, table, rows, n,
		    want_sync(wopts), res);
		goto out;
	}
	if ((rc = server_table_ref(s->server, table, &t, &id)) < 0) {
		rows_fail(res, n, rc);
		goto out;
	}
	if ((rc = rows_from(rows, n, t, res, &engine, &map, &ops,
	    &m)) < 0) {
		rows_fail(res, n, rc);
		goto out_table;
	}
	for (size_t i = 0; i < n && first == 0; i++)
		first = res[i];
	if (m > 0 && (sub = bt_calloc(m, sizeof(*sub))) == NULL) {
		rc = rows_fail(res, n, -ENOMEM);
		goto out_rows;
	}
	rc = m > 0 ? server_mutate_rows(s->server, engine, m,
	    want_sync(wopts), sub) : 0;
	for (size_t k = 0; k < m; k++)
		res[map[k]] = sub[k];
	/* Otherwise the engine's detail is kept. */
	if (rc == 0 && first < 0)
		rc = bt_error_set(first, "a row of the batch has no "
		    "mutations, or one without a family");
out_rows:
	bt_free(sub);
	bt_free(engine);
	bt_free(map);
	bt_free(ops);
out_table:
	server_table_unref(t);
out:
	if (res != results)
		bt_free(res);
	return rc;
}

int
bt_check_and_mutate(struct bt_store *s, const char *table,
    struct bt_bytes row, const char *family, struct bt_bytes qualifier,
    const struct bt_bytes *expected, const struct bt_mutation *muts,
    size_t count, const struct bt_write_options *wopts, bool *applied)
{
	return bt_check_version_and_mutate(s, table, row, family, qualifier,
	    expected, -1, muts, count, wopts, applied, NULL);
}

int
bt_check_version_and_mutate(struct bt_store *s, const char *table,
    struct bt_bytes row, const char *family, struct bt_bytes qualifier,
    const struct bt_bytes *expected, int64_t expected_ts,
    const struct bt_mutation *muts, size_t count,
    const struct bt_write_options *wopts, bool *applied, int64_t *stamp)
{
	struct mutation local[MUTATIONS_LOCAL], *ops;
	struct slice exp;
	int rc;

	bt_error_clear();
	if (family == NULL)
		return bt_error_set(-EINVAL, "no family");
	if (s->cell != NULL)
		return cell_mutate_row(s->cell, table, row, muts, count,
		    want_sync(wopts), true, family, qualifier, expected,
		    expected_ts, applied, stamp);
	if ((rc = mutations_from(muts, count, local, &ops)) < 0)
		return rc;
	if (expected != NULL)
		exp = bytes_slice(*expected);
	ON_ROW(s, table, row, rc, server_check_and_mutate(s->server, t,
	    tablet, bytes_slice(row), slice_str(family),
	    bytes_slice(qualifier), expected ? &exp : NULL, expected_ts, ops,
	    count, want_sync(wopts), applied));
	if (rc == 0 && *applied && stamp != NULL)
		*stamp = ops[0].ts;	/* the server gave it its time */
	mutations_free(ops, local);
	return rc;
}

int
bt_increment(struct bt_store *s, const char *table, struct bt_bytes row,
    const char *family, struct bt_bytes qualifier, int64_t delta,
    const struct bt_write_options *wopts, int64_t *result, int64_t *stamp)
{
	int rc;

	bt_error_clear();
	if (family == NULL)
		return bt_error_set(-EINVAL, "no family");
	if (s->cell != NULL) {
		struct cell_rmw op = { .kind = CELL_RMW_INCREMENT,
		    .delta = delta };

		return cell_read_modify_write(s->cell, table, row, family,
		    qualifier, &op, want_sync(wopts), result, stamp);
	}
	ON_ROW(s, table, row, rc, server_increment(s->server, t, tablet,
	    bytes_slice(row), slice_str(family), bytes_slice(qualifier),
	    delta, want_sync(wopts), result, stamp));
	return rc;
}

int
bt_append(struct bt_store *s, const char *table, struct bt_bytes row,
    const char *family, struct bt_bytes qualifier, struct bt_bytes suffix,
    const struct bt_write_options *wopts, int64_t *stamp)
{
	int rc;

	bt_error_clear();
	if (family == NULL)
		return bt_error_set(-EINVAL, "no family");
	if (s->cell != NULL) {
		struct cell_rmw op = { .kind = CELL_RMW_APPEND,
		    .bytes = suffix };

		return cell_read_modify_write(s->cell, table, row, family,
		    qualifier, &op, want_sync(wopts), NULL, stamp);
	}
	ON_ROW(s, table, row, rc, server_append(s->server, t, tablet,
	    bytes_slice(row), slice_str(family), bytes_slice(qualifier),
	    bytes_slice(suffix), want_sync(wopts), stamp));
	return rc;
}

int
bt_put_newest(struct bt_store *s, const char *table, struct bt_bytes row,
    const char *family, struct bt_bytes qualifier, struct bt_bytes value,
    const struct bt_write_options *wopts, int64_t *stamp)
{
	int rc;

	bt_error_clear();
	if (family == NULL)
		return bt_error_set(-EINVAL, "no family");
	if (s->cell != NULL) {
		struct cell_rmw op = { .kind = CELL_RMW_PUT_NEWEST,
		    .bytes = value };

		return cell_read_modify_write(s->cell, table, row, family,
		    qualifier, &op, want_sync(wopts), NULL, stamp);
	}
	ON_ROW(s, table, row, rc, server_put_newest(s->server, t, tablet,
	    bytes_slice(row), slice_str(family), bytes_slice(qualifier),
	    bytes_slice(value), want_sync(wopts), stamp));
	return rc;
}

int
bt_move_version(struct bt_store *s, const char *table, struct bt_bytes row,
    const char *src_family, struct bt_bytes src_qualifier, int64_t src_ts,
    const char *dst_family, struct bt_bytes dst_qualifier, int64_t dst_ts,
    const struct bt_write_options *wopts, int64_t *stamp)
{
	int rc;

	bt_error_clear();
	if (src_family == NULL || dst_family == NULL)
		return bt_error_set(-EINVAL, "no family");
	if (s->cell != NULL) {
		struct cell_rmw op = { .kind = CELL_RMW_MOVE_VERSION,
		    .src_ts = src_ts, .dst_family = dst_family,
		    .dst_qualifier = dst_qualifier, .dst_ts = dst_ts };

		return cell_read_modify_write(s->cell, table, row, src_family,
		    src_qualifier, &op, want_sync(wopts), NULL, stamp);
	}
	ON_ROW(s, table, row, rc, server_move_version(s->server, t,
	    tablet, bytes_slice(row), slice_str(src_family),
	    bytes_slice(src_qualifier), src_ts, slice_str(dst_family),
	    bytes_slice(dst_qualifier), dst_ts, want_sync(wopts), stamp));
	return rc;
}

int
bt_move_column(struct bt_store *s, const char *table, struct bt_bytes row,
    const struct bt_column *src, const struct bt_column *dst,
    const struct bt_write_options *wopts)
{
	struct cells_column from, to;
	int rc;

	bt_error_clear();
	if (src == NULL || dst == NULL || src->family == NULL ||
	    dst->family == NULL)
		return bt_error_set(-EINVAL, "no family");
	if (s->cell != NULL)
		return cell_move_column(s->cell, table, row, src, dst,
		    want_sync(wopts));
	from = (struct cells_column){ .family = slice_str(src->family),
	    .has_qualifier = src->has_qualifier,
	    .qualifier = bytes_slice(src->qualifier) };
	to = (struct cells_column){ .family = slice_str(dst->family),
	    .has_qualifier = dst->has_qualifier,
	    .qualifier = bytes_slice(dst->qualifier) };
	ON_ROW(s, table, row, rc, server_move_column(s->server, t, tablet,
	    bytes_slice(row), &from, &to, want_sync(wopts)));
	return rc;
}

/* ---- Reading ---- */

/* Compile one regex of the read options into *re (NULL when unset). */
static int
filter_regex(struct bt_bytes pattern, const char *what, struct regex **re)
{
	*re = NULL;
	if (pattern.data == NULL)
		return 0;
	return regex_compile(bytes_slice(pattern), what, re);
}

/* The i-th column filter of ro: its columns, then its column_regexes. */
static const struct bt_column *
filter_column(const struct bt_read_options *ro, size_t i)
{
	size_t plain = ro->columns != NULL ? ro->column_count : 0;

	return i < plain ? &ro->columns[i] : &ro->column_regexes[i - plain];
}

static bool
filter_column_is_regex(const struct bt_read_options *ro, size_t i)
{
	return i >= (ro->columns != NULL ? ro->column_count : 0);
}

/* Copy b to p (advanced past it) as a slice. */
static struct slice
filter_copy(uint8_t **p, struct bt_bytes b)
{
	struct slice out = slice_make(*p, b.size);

	if (b.size > 0)
		memcpy(*p, b.data, b.size);
	*p += b.size;
	return out;
}

/* Free what filter_from() made: the regexes and *columns. */
static void
filter_release(struct cells_filter *f, struct cells_column *columns)
{
	regex_free(f->row_regex);
	regex_free(f->family_regex);
	regex_free(f->qualifier_regex);
	regex_free(f->value_regex);
	f->row_regex = f->family_regex = NULL;
	f->qualifier_regex = f->value_regex = NULL;
	for (size_t i = 0; columns != NULL && i < f->column_count; i++)
		regex_free(columns[i].qualifier_regex);
	bt_free(columns);
}

/*
 * Convert read options; *columns is allocated when there are column
 * filters or value bounds, with a copy of their bytes after the array (a
 * scan keeps them past the call that opened it, and the caller's bytes
 * need not live on), and the regexes are compiled, once for the whole
 * read or scan.  Release with filter_release(), also after a failure.
 */
static int
filter_from(const struct bt_read_options *ro, struct cells_filter *f,
    struct cells_column **columns)
{
	size_t n = 0, bytes = 0;
	struct cells_column *c;
	uint8_t *p;
	int rc;

	memset(f, 0, sizeof(*f));
	*columns = NULL;
	if (ro == NULL)
		return 0;
	if (ro->columns != NULL)
		n += ro->column_count;
	if (ro->column_regexes != NULL)
		n += ro->column_regex_count;
	for (size_t i = 0; i < n; i++) {
		const struct bt_column *col = filter_column(ro, i);

		bytes += (col->family ? strlen(col->family) : 0) +
		    col->qualifier.size;
	}
	f->has_value_start = ro->value_start.data != NULL &&
	    ro->value_start.size > 0;
	f->has_value_end = ro->value_end.data != NULL;
	bytes += (f->has_value_start ? ro->value_start.size : 0) +
	    (f->has_value_end ? ro->value_end.size : 0);
	if (n > 0 || bytes > 0) {
		if ((c = bt_calloc(1, n * sizeof(*c) + bytes + 1)) == NULL)
			return -ENOMEM;
		*columns = c;
		p = (uint8_t *)(c + n);
		for (size_t i = 0; i < n; i++) {
			const struct bt_column *col = filter_column(ro, i);
			size_t fn = col->family ? strlen(col->family) : 0;

			c[i].family = filter_copy(&p, (struct bt_bytes){
			    col->family, fn });
			c[i].has_qualifier = col->has_qualifier;
			c[i].qualifier = filter_copy(&p, col->qualifier);
		}
		if (n > 0) {
			f->columns = c;
			f->column_count = n;
		}
		for (size_t i = 0; i < n; i++)
			if (filter_column_is_regex(ro, i) &&
			    c[i].has_qualifier &&
			    (rc = regex_compile(c[i].qualifier,
			    "column regex", &c[i].qualifier_regex)) < 0)
				return rc;
		if (f->has_value_start)
			f->value_start = filter_copy(&p, ro->value_start);
		if (f->has_value_end)
			f->value_end = filter_copy(&p, ro->value_end);
	}
	f->cells_per_column = ro->cells_per_column;
	f->min_ts = ro->min_ts;
	f->has_max_ts = ro->has_max_ts;
	f->max_ts = ro->max_ts;
	f->keys_only = ro->keys_only;
	f->cells_per_row_offset = ro->cells_per_row_offset;
	f->cells_per_row_limit = ro->cells_per_row_limit;
	if ((rc = filter_regex(ro->row_regex, "row regex",
	    &f->row_regex)) < 0 ||
	    (rc = filter_regex(ro->family_regex, "family regex",
	    &f->family_regex)) < 0 ||
	    (rc = filter_regex(ro->qualifier_regex, "qualifier regex",
	    &f->qualifier_regex)) < 0 ||
	    (rc = filter_regex(ro->value_regex, "value regex",
	    &f->value_regex)) < 0)
		return rc;
	return 0;
}

/*
 * A bt_row's allocation: this header, then the row's cells, then the bytes
 * row_export() copies (row key, family names with NULs, qualifiers, values
 * with NULs).  A large row's cells point instead into its cells_row's own
 * buffer, taken whole (owned), so that its values are not copied again.
 */
struct row_alloc {
	uint8_t *owned;		/* or NULL */
	struct bt_row row;
};

/*
 * Export a resolved row into an allocation the caller frees with
 * bt_row_free().  With take, r's buffer is taken when it can be (no value
 * lent; r is left empty), and only the key is copied.
 */
static int
row_export(struct cells_row *r, bool take, struct bt_row **out)
{
	size_t bytes = r->key.n + 1;
	struct row_alloc *a;
	struct bt_row *row;
	uint8_t *p;

	for (size_t i = 0; !take && i < r->count; i++) {
		struct cell c;

		cells_row_get(r, i, &c);
		bytes += c.family.n + 1 + c.qualifier.n + c.value.n + 1;
	}
	a = bt_malloc(sizeof(*a) + r->count * sizeof(struct bt_cell) +
	    bytes);
	if (a == NULL)
		return -ENOMEM;
	a->owned = NULL;
	row = &a->row;
	row->cells = (struct bt_cell *)(a + 1);
	row->cell_count = r->count;
	p = (uint8_t *)(row->cells + r->count);
	memcpy(p, r->key.p, r->key.n);
	row->key.data = p;
	row->key.size = r->key.n;
	p += r->key.n;
	*p++ = '\0';
	for (size_t i = 0; i < r->count; i++) {
		struct bt_cell *bc = &row->cells[i];
		struct cell c;

		cells_row_get(r, i, &c);
		bc->ts = c.ts;
		bc->value_size = c.value_size;
		if (take) {	/* NUL-terminated in r's buffer */
			bc->family = (const char *)c.family.p;
			bc->qualifier.data = c.qualifier.p;
			bc->qualifier.size = c.qualifier.n;
			bc->value.data = c.value.p;
			bc->value.size = c.value.n;
			continue;
		}
		memcpy(p, c.family.p, c.family.n);
		bc->family = (const char *)p;
		p += c.family.n;
		*p++ = '\0';
		if (c.qualifier.n > 0)
			memcpy(p, c.qualifier.p, c.qualifier.n);
		bc->qualifier.data = p;
		bc->qualifier.size = c.qualifier.n;
		p += c.qualifier.n;
		if (c.value.n > 0)
			memcpy(p, c.value.p, c.value.n);
		bc->value.data = p;
		bc->value.size = c.value.n;
		p += c.value.n;
		*p++ = '\0';	/* values read as strings stay terminated */
	}
	if (take && (a->owned = cells_row_take_bytes(r)) == NULL) {
		bt_free(a);	/* a value is lent: copy after all */
		return row_export(r, false, out);
	}
	*out = row;
	return 0;
}

/*
 * bt_read_row() of an embedded store, on the table held, whose id is
 * held_id (NULL: looked up by its name).
 */
static int
read_row(struct bt_store *s, struct server_table *held, uint64_t held_id,
    const char *table, struct bt_bytes row,
    const struct bt_read_options *ropts, struct bt_row **out)
{
	struct cells_column *columns;
	struct cells_filter f;
	struct cells_row own, *r;
	int rc;

	bt_error_clear();
	if ((rc = filter_from(ropts, &f, &columns)) < 0) {
		filter_release(&f, columns);
		return rc;
	}
	r = server_row_pool_take(&s->rows, &own);
	if (s->cell != NULL)
		rc = cell_read_row(s->cell, table, row, ropts, r);
	else if (held != NULL)
		ON_TABLE_ROW(s, table, held_id, row, rc,
		    server_read_row(s->server, held, tablet,
		    bytes_slice(row), &f, r));
	else
		ON_ROW(s, table, row, rc, server_read_row(s->server, t,
		    tablet, bytes_slice(row), &f, r));
	/* A row the pool would not keep gives its buffer to the export. */
	if (rc == 0)
		rc = row_export(r, cells_row_memory(r) >
		    SERVER_ROW_POOL_KEEP, out);
	server_row_pool_give(&s->rows, r, &own);
	filter_release(&f, columns);
	return rc;
}

int
bt_read_row(struct bt_store *s, const char *table, struct bt_bytes row,
    const struct bt_read_options *ropts, struct bt_row **out)
{
	return read_row(s, NULL, 0, table, row, ropts, out);
}

int
api_read_row_held(struct bt_store *s, struct server_table *t,
    uint64_t table_id, const char *table, struct bt_bytes row,
    const struct bt_read_options *ropts, struct bt_row **out)
{
	assert(s->cell == NULL && t != NULL);
	return read_row(s, t, table_id, table, row, ropts, out);
}

void
bt_row_free(struct bt_row *r)
{
	struct row_alloc *a;

	if (r == NULL)
		return;
	a = (struct row_alloc *)((uint8_t *)r - offsetof(struct row_alloc,
	    row));
	bt_free(a->owned);
	bt_free(a);
}

/* The smallest row greater than every row starting with prefix, or empty
 * when there is none (a prefix of 0xff bytes). */
static int
prefix_end(struct slice prefix, struct buf *end)
{
	size_t n = prefix.n;
	int rc;

	while (n > 0 && prefix.p[n - 1] == 0xff)
		n--;
	if (n == 0)
		return 0;
	if ((rc = buf_set(end, prefix.p, n)) < 0)
		return rc;
	end->p[n - 1]++;
	return 0;
}

int
bt_scan_open(struct bt_store *s, const char *table,
    const struct bt_scan_options *opts, struct bt_scan **out)
{
	static const struct bt_scan_options everything;
	struct slice start, end;
	struct bt_scan *sc;
	int rc;

	bt_error_clear();
	if (opts == NULL)
		opts = &everything;
	if ((sc = bt_calloc(1, sizeof(*sc))) == NULL)
		return -ENOMEM;
	cells_row_init(&sc->row);
	buf_init(&sc->end);
	buf_init(&sc->regex_prefix);
	buf_init(&sc->regex_end);
	sc->limit = opts->limit;
	sc->lend_values = opts->lend_values;
	if ((rc = filter_from(&opts->read, &sc->filter, &sc->columns)) < 0)
		goto out_free;
	sc->filter.no_cache_fill = opts->no_cache_fill;
	start = bytes_slice(opts->start);
	end = bytes_slice(opts->end);
	if (opts->prefix.size > 0) {
		struct slice prefix = bytes_slice(opts->prefix);

		if (slice_compare(prefix, start) > 0)
			start = prefix;
		if ((rc = prefix_end(prefix, &sc->end)) < 0)
			goto out_free;
		if (sc->end.n > 0 &&
		    (end.n == 0 || slice_compare(buf_slice(&sc->end), end) < 0))
			end = buf_slice(&sc->end);
	}
	/* A row regex's literal prefix narrows the range as a prefix does. */
	if (opts->read.row_regex.data != NULL) {
		if ((rc = regex_literal_prefix(bytes_slice(
		    opts->read.row_regex), &sc->regex_prefix)) < 0 ||
		    (rc = prefix_end(buf_slice(&sc->regex_prefix),
		    &sc->regex_end)) < 0)
			goto out_free;
		if (slice_compare(buf_slice(&sc->regex_prefix), start) > 0)
			start = buf_slice(&sc->regex_prefix);
		if (sc->regex_end.n > 0 && (end.n == 0 ||
		    slice_compare(buf_slice(&sc->regex_end), end) < 0))
			end = buf_slice(&sc->regex_end);
	}
	if (s->cell != NULL)
		rc = cell_scan_open(s->cell, table, (struct bt_bytes){
		    start.p, start.n }, opts->start_exclusive &&
		    slice_equal(start, bytes_slice(opts->start)),
		    (struct bt_bytes){ end.p, end.n }, &opts->read,
		    opts->no_cache_fill, opts->limit, &sc->cell);
	else
		rc = server_scan_open(s->server, table, start,
		    opts->start_exclusive && slice_equal(start,
		    bytes_slice(opts->start)), end, &sc->filter, &sc->scan);
	if (rc < 0)
		goto out_free;
	*out = sc;
	return 0;
out_free:
	bt_scan_close(sc);
	return rc;
}

/*
 * The scan's next row into sc->row, within its limit: both calls' step.
 * Values are lent (cells.h) when lend: bt_scan_next() copies them into
 * its row anyway, NUL and all, so it always lends.
 */
static int
scan_fetch(struct bt_scan *sc, bool lend)
{
	bt_error_clear();
	if (sc->limit != 0 && sc->returned >= sc->limit)
		return BT_DONE;
	sc->row.lend_values = lend;
	if (sc->cell != NULL)
		return cell_scan_next(sc->cell, &sc->row);
	return server_scan_next(sc->scan, &sc->row);
}

int
bt_scan_next(struct bt_scan *sc, struct bt_row **out)
{
	int rc;

	if ((rc = scan_fetch(sc, true)) != 0)
		return rc;
	if ((rc = row_export(&sc->row, false, out)) < 0)
		return rc;
	sc->returned++;
	return 0;
}

int
bt_scan_next_borrowed(struct bt_scan *sc, const struct bt_row **out)
{
	const struct cells_row *r = &sc->row;
	int rc;

	if ((rc = scan_fetch(sc, sc->lend_values)) != 0)
		return rc;
	if (r->count > sc->lent_cap) {
		size_t cap = r->count > 2 * sc->lent_cap ? r->count :
		    2 * sc->lent_cap;
		struct bt_cell *cells = bt_realloc(sc->lent_cells,
		    cap * sizeof(*cells));

		if (cells == NULL)
			return -ENOMEM;
		sc->lent_cells = cells;
		sc->lent_cap = cap;
	}
	/* cells_row ends the key, families and values with 0x00. */
	sc->lent.key.data = r->key.p;
	sc->lent.key.size = r->key.n;
	sc->lent.cell_count = r->count;
	sc->lent.cells = sc->lent_cells;
	for (size_t i = 0; i < r->count; i++) {
		struct bt_cell *bc = &sc->lent_cells[i];
		struct cell c;

		cells_row_get(r, i, &c);
		bc->family = (const char *)c.family.p;
		bc->qualifier.data = c.qualifier.p;
		bc->qualifier.size = c.qualifier.n;
		bc->value.data = c.value.p;
		bc->value.size = c.value.n;
		bc->ts = c.ts;
		bc->value_size = c.value_size;
	}
	sc->returned++;
	*out = &sc->lent;
	return 0;
}

void
bt_scan_close(struct bt_scan *sc)
{
	if (sc == NULL)
		return;
	server_scan_close(sc->scan);
	cell_scan_close(sc->cell);
	cells_row_release(&sc->row);
	bt_free(sc->lent_cells);
	filter_release(&sc->filter, sc->columns);
	buf_release(&sc->end);
	buf_release(&sc->regex_prefix);
	buf_release(&sc->regex_end);
	bt_free(sc);
}

/* ---- Administration ---- */

int
bt_store_flush(struct bt_store *s)
{
	bt_error_clear();
	if (s->cell != NULL)
		return cell_store_flush(s->cell);
	return server_flush(s->server);
}

int
bt_store_compact(struct bt_store *s, const char *table, bool major)
{
	bt_error_clear();
	if (s->cell != NULL)
		return cell_store_compact(s->cell, table, major);
	return server_compact(s->server, table, major);
}

/* ---- Bulk load ---- */

struct bt_bulk {
	struct server_bulk *server;	/* or, on a cell: */
	struct cell_bulk *cell;
};

int
bt_bulk_open(struct bt_store *s, const char *table,
    const struct bt_bulk_options *opts, struct bt_bulk **out)
{
	struct server_bulk_options so;
	struct bt_bulk *b;
	int rc;

	bt_error_clear();
	if (table == NULL)
		return bt_error_set(-EINVAL, "no table");
	memset(&so, 0, sizeof(so));
	if (opts != NULL)
		so.memory_budget = opts->memory_budget;
	if ((b = bt_calloc(1, sizeof(*b))) == NULL)
		return -ENOMEM;
	if (s->cell != NULL)
		rc = cell_bulk_open(s->cell, table, so.memory_budget,
		    &b->cell);
	else
		rc = server_bulk_open(s->server, table, &so, &b->server);
	if (rc < 0) {
		bt_free(b);
		return rc;
	}
	*out = b;
	return 0;
}

int
bt_bulk_put(struct bt_bulk *b, struct bt_bytes row, const char *family,
    struct bt_bytes qualifier, int64_t ts, struct bt_bytes value)
{
	bt_error_clear();
	if (family == NULL)
		return bt_error_set(-EINVAL, "no family");
	if (b->cell != NULL)
		return cell_bulk_put(b->cell, row, family, qualifier, ts,
		    value);
	return server_bulk_put(b->server, bytes_slice(row),
	    slice_make(family, strlen(family)), bytes_slice(qualifier),
	    ts == BT_TS_SERVER ? MUTATION_TS_SERVER : ts, bytes_slice(value));
}

int
bt_bulk_commit(struct bt_bulk *b, struct bt_bulk_stats *out)
{
	struct server_bulk_stats st;
	int rc;

	bt_error_clear();
	if (b->cell != NULL)
		return cell_bulk_commit(b->cell, out);
	if ((rc = server_bulk_commit(b->server, &st)) < 0)
		return rc;
	if (out != NULL) {
		out->cells = st.cells;
		out->files = st.files;
		out->tablets = st.tablets;
		out->stamp = st.stamp;
	}
	return 0;
}

void
bt_bulk_close(struct bt_bulk *b)
{
	if (b == NULL)
		return;
	cell_bulk_close(b->cell);
	server_bulk_free(b->server);
	bt_free(b);
}

int
bt_table_split(struct bt_store *s, const char *table, struct bt_bytes row)
{
	bt_error_clear();
	if (s->cell != NULL)
		return cell_table_split(s->cell, table, row);
	return server_split(s->server, table, bytes_slice(row));
}

int
bt_tablet_unload(struct bt_store *s, const char *table, uint64_t tablet_id)
{
	bt_error_clear();
	if (s->cell != NULL)
		return bt_error_set(-EOPNOTSUPP, "a cell's master assigns its "
		    "tablets");
	return server_tablet_unload(s->server, table, tablet_id);
}

int
bt_tablet_load(struct bt_store *s, const char *table, uint64_t tablet_id)
{
	bt_error_clear();
	if (s->cell != NULL)
		return bt_error_set(-EOPNOTSUPP, "a cell's master assigns its "
		    "tablets");
	return server_tablet_load(s->server, table, tablet_id);
}

int
bt_tablet_recover(struct bt_store *s, const char *table, uint64_t tablet_id,
    const char *log_dir)
{
	return api_tablet_recover(s, table, tablet_id, &log_dir, 1);
}

int
api_tablet_recover(struct bt_store *s, const char *table, uint64_t tablet_id,
    const char *const *log_dirs, size_t count)
{
	return api_tablets_recover(s, table, &tablet_id, 1, log_dirs, count);
}

int
api_tablets_recover(struct bt_store *s, const char *table,
    const uint64_t *ids, size_t n, const char *const *log_dirs,
    size_t count)
{
	bt_error_clear();
	if (s->cell != NULL)
		return bt_error_set(-EOPNOTSUPP, "a cell's master assigns its "
		    "tablets");
	return server_tablets_recover(s->server, table, ids, n, log_dirs,
	    count);
}

int
bt_table_tablets(struct bt_store *s, const char *table,
    struct bt_tablet_info **out, size_t *count)
{
	struct catalog_tablet *list;
	struct tablet_stats *stats;
	struct bt_tablet_info *info;
	size_t n, bytes = 0;
	uint8_t *p;
	int rc;

	bt_error_clear();
	if (s->cell != NULL)
		return cell_table_tablets(s->cell, table, out, count);
	if ((rc = server_table_tablets(s->server, table, &list, &stats,
	    &n)) < 0)
		return rc;
	for (size_t i = 0; i < n; i++)
		bytes += list[i].start.n + list[i].end.n;
	if ((info = bt_calloc(1, (n + 1) * sizeof(*info) + bytes)) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	p = (uint8_t *)(info + n + 1);
	for (size_t i = 0; i < n; i++) {
		info[i].id = list[i].id;
		info[i].start.data = p;
		info[i].start.size = list[i].start.n;
		if (list[i].start.n > 0)
			memcpy(p, list[i].start.p, list[i].start.n);
		p += list[i].start.n;
		info[i].end.data = p;
		info[i].end.size = list[i].end.n;
		if (list[i].end.n > 0)
			memcpy(p, list[i].end.p, list[i].end.n);
		p += list[i].end.n;
		info[i].sstables = stats[i].sstables;
		info[i].sstable_bytes = stats[i].sstable_bytes;
		info[i].data_bytes = stats[i].data_bytes;
		info[i].memtable_bytes = stats[i].memtable_bytes;
		info[i].flushed_seq = list[i].flushed_seq;
		info[i].server = "";
	}
	*out = info;
	*count = n;
out:
	catalog_tablets_free(list, n);
	bt_free(stats);
	return rc;
}

void
bt_tablets_free(struct bt_tablet_info *tablets)
{
	bt_free(tablets);
}

int
bt_store_check(struct bt_store *s,
    void (*report)(void *arg, const char *problem),
    void (*progress)(void *arg, uint64_t done, uint64_t total), void *arg,
    uint64_t *files, uint64_t *bytes)
{
	bt_error_clear();
	if (s->cell != NULL)
		return cell_store_check(s->cell, report, arg, files, bytes);
	return server_check(s->server, report, progress, arg, files, bytes);
}

struct server *
api_store_server(struct bt_store *s)
{
	return s->server;
}

uint64_t
bt_store_last_seq(struct bt_store *s)
{
	if (s->cell != NULL)
		return cell_store_last_seq(s->cell);
	return server_last_seq(s->server);
}

int
bt_store_space(struct bt_store *s, struct bt_space *out)
{
	struct env_space sp;
	int rc;

	bt_error_clear();
	if (s->cell != NULL)
		return cell_store_space(s->cell, out);
	if ((rc = server_space_measure(s->server, &sp)) < 0)
		return rc;
	/* UINT64_MAX is the env's "cannot tell": 0 here (tabletfs.h). */
	out->total_bytes = sp.total == UINT64_MAX ? 0 : sp.total;
	out->free_bytes = sp.free == UINT64_MAX ? 0 : sp.free;
	out->available_bytes = sp.available == UINT64_MAX ? 0 : sp.available;
	out->block_size = sp.block_size;
	return 0;
}

void
bt_store_get_stats(struct bt_store *s, struct bt_stats *out)
{
	struct server_stats ss;
	struct location_cache_stats ls;

	if (s->cell != NULL) {
		cell_store_get_stats(s->cell, out);
		return;
	}
	server_get_stats(s->server, &ss);
	out->mutations = ss.mutations;
	out->reads = ss.reads;
	out->log_syncs = ss.log_syncs;
	out->log_batches = ss.log_batches;
	out->write_gathers = ss.write_gathers;
	out->write_waits = ss.write_waits;
	out->memtable_peak_bytes = ss.memtable_peak_bytes;
	out->memory_trims = ss.memory_trims;
	out->flushes = ss.flushes;
	out->compactions = ss.compactions;
	out->sstables = ss.sstables;
	out->damaged_sstables = ss.damaged_sstables;
	out->memtable_bytes = ss.memtable_bytes;
	out->last_seq = ss.last_seq;
	out->cache_hits = ss.cache_hits;
	out->cache_misses = ss.cache_misses;
	out->tablets = ss.tablets;
	out->splits = ss.splits;
	out->merges = ss.merges;
	out->files_collected = ss.files_collected;
	out->writes_refused = ss.writes_refused;
	out->disk_full = ss.disk_full;
	out->reserve_bytes = ss.reserve_bytes;
	location_cache_get_stats(s->locations, &ls);
	out->location_lookups = ls.lookups;
	out->location_hits = ls.hits;
	out->location_levels = ls.levels_walked;
	out->location_stale = ls.invalidations;
}
