/*
 * service.c - the service's life and its dispatch (service.h), and the
 * calls on the schema and the store as a whole; the row calls are in
 * service_rows.c, the scanners in service_scan.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "api/api_server.h"
#include "catalog/catalog.h"
#include "server/server.h"
#include "tabletd/service_int.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"

#define UNPACK(desc, in, msgp) \
	service_pb_unpack(&(desc), (in), (ProtobufCMessage **)(msgp))

/* NULL for an absent or empty string: the proto's "empty: the default". */
static const char *
empty_null(const char *s)
{
	return s != NULL && s[0] != '\0' ? s : NULL;
}

/* ---- Schema ---- */

static int
table_create(struct service *svc, struct slice in, struct buf *reply)
{
	Tabletfs__TableCreateRequest *r;
	struct bt_family_spec *fams = NULL;
	struct bt_bytes *splits = NULL;
	int rc;

	if ((rc = UNPACK(tabletfs__table_create_request__descriptor, in,
	    &r)) < 0)
		return rc;
	if (r->table == NULL) {
		rc = service_missing("TableCreateRequest", "table");
		goto out;
	}
	if (r->n_families > 0 &&
	    (fams = bt_calloc(r->n_families, sizeof(*fams))) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < r->n_families; i++) {
		if (r->families[i]->name == NULL) {
			rc = service_missing("TableCreateRequest family",
			    "name");
			goto out_free;
		}
		fams[i].name = r->families[i]->name;
		fams[i].group = empty_null(r->families[i]->group);
		fams[i].gc_policy = empty_null(r->families[i]->gc_policy);
	}
	if (r->n_splits > 0 &&
	    (splits = bt_calloc(r->n_splits, sizeof(*splits))) == NULL) {
		rc = -ENOMEM;
		goto out_free;
	}
	for (size_t i = 0; i < r->n_splits; i++)
		splits[i] = service_bytes(true, r->splits[i]);
	if (r->owner != NULL && (!r->owner->has_uid || !r->owner->has_gid ||
	    !r->owner->has_mode)) {
		rc = service_missing("TableCreateRequest owner", "uid, gid "
		    "or mode");
		goto out_splits;
	}
	rc = bt_table_create_as(svc->store, r->table, r->owner == NULL ?
	    NULL : &(struct bt_access){ r->owner->uid, r->owner->gid,
	    r->owner->mode }, fams, r->n_families, splits, r->n_splits,
	    r->has_tablet_size ? r->tablet_size : 0);
out_splits:
	bt_free(splits);
out_free:
	bt_free(fams);
out:
	service_pb_free(&r->base);
	return rc;
}

/* A TableRequest with its table named (or, when may_be_empty, not). */
static int
table_request(struct slice in, bool may_be_empty,
    Tabletfs__TableRequest **out)
{
	Tabletfs__TableRequest *r;
	int rc;

	if ((rc = UNPACK(tabletfs__table_request__descriptor, in, &r)) < 0)
		return rc;
	if (r->table == NULL && !may_be_empty) {
		service_pb_free(&r->base);
		return service_missing("TableRequest", "table");
	}
	*out = r;
	return 0;
}

static int
table_delete(struct service *svc, struct slice in, struct buf *reply)
{
	Tabletfs__TableRequest *r;
	int rc;

	if ((rc = table_request(in, false, &r)) < 0)
		return rc;
	rc = bt_table_delete(svc->store, r->table);
	service_pb_free(&r->base);
	return rc;
}

/* Unpack an Empty request: its bytes must still be a message. */
static int
empty_request(struct slice in)
{
	Tabletfs__Empty *r;
	int rc;

	if ((rc = UNPACK(tabletfs__empty__descriptor, in, &r)) < 0)
		return rc;
	service_pb_free(&r->base);
	return 0;
}

static int
table_list(struct service *svc, struct slice in, struct buf *reply)
{
	Tabletfs__TableListReply out = TABLETFS__TABLE_LIST_REPLY__INIT;
	char **names;
	size_t count;
	int rc;

	if ((rc = empty_request(in)) < 0)
		return rc;
	if ((rc = bt_table_list(svc->store, &names, &count)) < 0)
		return rc;
	out.n_names = count;
	out.names = names;
	rc = service_pb_pack(&out.base, reply);
	bt_names_free(names);
	return rc;
}

/* A FamilyRequest with its table and family (and the family's name). */
static int
family_request(struct slice in, Tabletfs__FamilyRequest **out)
{
	Tabletfs__FamilyRequest *r;
	int rc;

	if ((rc = UNPACK(tabletfs__family_request__descriptor, in, &r)) < 0)
		return rc;
	if (r->table == NULL)
		rc = service_missing("FamilyRequest", "table");
	else if (r->family == NULL)
		rc = service_missing("FamilyRequest", "family");
	else if (r->family->name == NULL)
		rc = service_missing("FamilyRequest family", "name");
	if (rc < 0) {
		service_pb_free(&r->base);
		return rc;
	}
	*out = r;
	return 0;
}

static int
family_create(struct service *svc, struct slice in, struct buf *reply)
{
	Tabletfs__FamilyRequest *r;
	struct bt_family_spec spec;
	int rc;

	if ((rc = family_request(in, &r)) < 0)
		return rc;
	spec.name = r->family->name;
	spec.group = empty_null(r->family->group);
	spec.gc_policy = empty_null(r->family->gc_policy);
	rc = api_family_create_above(svc->store, r->table, &spec,
	    r->has_created_seq_min ? r->created_seq_min : 0,
	    (const char *const *)r->servers, r->n_servers);
	service_pb_free(&r->base);
	return rc;
}

static int
family_delete(struct service *svc, struct slice in, struct buf *reply)
{
	Tabletfs__FamilyRequest *r;
	int rc;

	if ((rc = family_request(in, &r)) < 0)
		return rc;
	rc = bt_family_delete(svc->store, r->table, r->family->name);
	service_pb_free(&r->base);
	return rc;
}

static int
family_set_gc(struct service *svc, struct slice in, struct buf *reply)
{
	Tabletfs__FamilyRequest *r;
	int rc;

	if ((rc = family_request(in, &r)) < 0)
		return rc;
	if (r->family->gc_policy == NULL) {
		rc = service_missing("FAMILY_SET_GC", "gc_policy");
		goto out;
	}
	/* Empty text is refused, as by the C call: "never" says never. */
	rc = bt_family_set_gc(svc->store, r->table, r->family->name,
	    r->family->gc_policy);
out:
	service_pb_free(&r->base);
	return rc;
}

static int
group_set(struct service *svc, struct slice in, struct buf *reply)
{
	Tabletfs__GroupSetRequest *r;
	struct bt_group_spec spec;
	const Tabletfs__Group *g;
	int rc;

	if ((rc = UNPACK(tabletfs__group_set_request__descriptor, in,
	    &r)) < 0)
		return rc;
	g = r->group;
	if (r->table == NULL)
		rc = service_missing("GroupSetRequest", "table");
	else if (g == NULL || g->name == NULL)
		rc = service_missing("GroupSetRequest", "group name");
	if (rc < 0)
		goto out;
	spec.name = g->name;
	spec.block_size = g->has_block_size ? g->block_size : 0;
	spec.compress = g->has_compress ? g->compress : -1;
	spec.bloom = g->has_bloom ? g->bloom : -1;
	spec.in_memory = g->has_in_memory ? g->in_memory : -1;
	rc = bt_group_set(svc->store, r->table, &spec);
out:
	service_pb_free(&r->base);
	return rc;
}

static int
table_describe(struct service *svc, struct slice in, struct buf *reply)
{
	Tabletfs__DescribeReply out = TABLETFS__DESCRIBE_REPLY__INIT;
	Tabletfs__TableRequest *r;
	char *families = NULL, *groups = NULL;
	int rc;

	if ((rc = table_request(in, false, &r)) < 0)
		return rc;
	if ((rc = bt_table_describe(svc->store, r->table, &families)) < 0)
		goto out;
	if ((rc = bt_table_describe_groups(svc->store, r->table,
	    &groups)) < 0)
		goto out_free;
	out.families = families;
	out.groups = groups;
	rc = service_pb_pack(&out.base, reply);
	free(groups);
out_free:
	free(families);
out:
	service_pb_free(&r->base);
	return rc;
}

static int
table_access(struct service *svc, struct slice in, struct buf *reply)
{
	Tabletfs__AccessReply out = TABLETFS__ACCESS_REPLY__INIT;
	Tabletfs__Access t = TABLETFS__ACCESS__INIT, *as = NULL;
	Tabletfs__FamilyAccess *fas = NULL, **fap = NULL;
	struct bt_family_access *fams = NULL;
	Tabletfs__TableRequest *r;
	struct bt_access ta;
	size_t n = 0;
	int rc;

	if ((rc = table_request(in, false, &r)) < 0)
		return rc;
	if ((rc = bt_table_access(svc->store, r->table, &ta, &fams, &n)) < 0)
		goto out;
	as = bt_calloc(n + 1, sizeof(*as));
	fas = bt_calloc(n + 1, sizeof(*fas));
	fap = bt_calloc(n + 1, sizeof(*fap));
	if (as == NULL || fas == NULL || fap == NULL) {
		rc = -ENOMEM;
		goto out_free;
	}
	t.has_uid = t.has_gid = t.has_mode = true;
	t.uid = ta.uid;
	t.gid = ta.gid;
	t.mode = ta.mode;
	for (size_t i = 0; i < n; i++) {
		tabletfs__access__init(&as[i]);
		as[i].has_uid = as[i].has_gid = as[i].has_mode = true;
		as[i].uid = fams[i].access.uid;
		as[i].gid = fams[i].access.gid;
		as[i].mode = fams[i].access.mode;
		tabletfs__family_access__init(&fas[i]);
		fas[i].name = fams[i].name;
		fas[i].access = &as[i];
		fap[i] = &fas[i];
	}
	out.table = &t;
	out.n_families = n;
	out.families = fap;
	rc = service_pb_pack(&out.base, reply);
out_free:
	bt_free(as);
	bt_free(fas);
	bt_free(fap);
	free(fams);
out:
	service_pb_free(&r->base);
	return rc;
}

static int
access_set(struct service *svc, struct slice in, struct buf *reply)
{
	struct bt_access change = { BT_ACCESS_KEEP, BT_ACCESS_KEEP,
	    BT_ACCESS_KEEP };
	Tabletfs__AccessSetRequest *r;
	int rc;

	if ((rc = UNPACK(tabletfs__access_set_request__descriptor, in,
	    &r)) < 0)
		return rc;
	if (r->table == NULL || r->change == NULL) {
		rc = service_missing("AccessSetRequest", r->table == NULL ?
		    "table" : "change");
		goto out;
	}
	if (r->change->has_uid)
		change.uid = r->change->uid;
	if (r->change->has_gid)
		change.gid = r->change->gid;
	if (r->change->has_mode)
		change.mode = r->change->mode;
	rc = bt_access_set(svc->store, r->table, empty_null(r->family),
	    &change);
out:
	service_pb_free(&r->base);
	return rc;
}

/* ---- Administration ---- */

static int
store_flush(struct service *svc, struct slice in, struct buf *reply)
{
	int rc;

	if ((rc = empty_request(in)) < 0)
		return rc;
	return bt_store_flush(svc->store);
}

/* SCHEMA_SYNC: the schema polled now (0 at once where the catalog is
 * this server's own). */
static int
store_schema_sync(struct service *svc, struct slice in, struct buf *reply)
{
	struct server *s = api_store_server(svc->store);
	int rc;

	if ((rc = empty_request(in)) < 0)
		return rc;
	return s != NULL ? server_schema_poll(s) : 0;
}

static int
store_compact(struct service *svc, struct slice in, struct buf *reply)
{
	Tabletfs__TableRequest *r;
	int rc;

	if ((rc = table_request(in, true, &r)) < 0)
		return rc;
	rc = bt_store_compact(svc->store, empty_null(r->table),
	    r->has_major && r->major);
	service_pb_free(&r->base);
	return rc;
}

/* A hot tablet's split, at the middle row of its recent requests
 * (server_tablet_split_row()); only where the store is served here. */
static int
hot_split(struct service *svc, const char *table, uint64_t tablet_id)
{
	struct server *s = api_store_server(svc->store);
	struct buf row;
	int rc;

	if (s == NULL)
		return bt_error_set(-EOPNOTSUPP, "a hot tablet's split is its "
		    "server's");
	buf_init(&row);
	rc = server_tablet_split_row(s, table, tablet_id, &row);
	if (rc == 0)
		rc = bt_table_split(svc->store, table,
		    (struct bt_bytes){ row.p, row.n });
	else if (rc == BT_NOTFOUND)	/* a status is never positive */
		rc = bt_error_set(-EAGAIN, "table %s: tablet %" PRIu64 ": its "
		    "requests give no row to split at yet", table, tablet_id);
	buf_release(&row);
	return rc;
}

static int
table_split(struct service *svc, struct slice in, struct buf *reply)
{
	Tabletfs__SplitRequest *r;
	int rc;

	if ((rc = UNPACK(tabletfs__split_request__descriptor, in, &r)) < 0)
		return rc;
	if (r->table == NULL)
		rc = service_missing("SplitRequest", "table");
	else if (!r->has_row && r->has_tablet_id)
		rc = hot_split(svc, r->table, r->tablet_id);
	else
		rc = bt_table_split(svc->store, r->table,
		    service_bytes(r->has_row, r->row));
	service_pb_free(&r->base);
	return rc;
}

/*
 * A tablet server's name ("HOST:PORT#EPOCH") as TABLETS gives it; NULL
 * for none or for the embedded store's host name, which no client can
 * reach.
 */
static char *
tablet_server(char *name)
{
	return strchr(name, '#') != NULL ? name : NULL;
}

/* The catalog's id of table, or 0 when it has none. */
static uint64_t
catalog_table_id(struct catalog *c, const char *table)
{
	struct catalog_table *t = NULL;
	uint64_t id = 0;

	if (catalog_table_get(c, table, &t) == 0 && t != NULL)
		id = t->id;
	catalog_table_free(t);
	return id;
}

/*
 * TABLETS: the tablets of a table with what this server's store knows of
 * each.  At the root's server the row ranges and servers are the
 * catalog's, from one read: in a cell whose tablets are spread, the
 * store here knows only the tablets it was given, as they were then,
 * not those split at other servers since.
 */
static int
table_tablets(struct service *svc, struct slice in, struct buf *reply)
{
	Tabletfs__TabletsReply out = TABLETFS__TABLETS_REPLY__INIT;
	Tabletfs__TabletInfo *infos = NULL, **ptrs = NULL;
	struct catalog_location *locs = NULL;
	struct bt_tablet_info *t;
	Tabletfs__TableRequest *r;
	struct catalog *c;
	size_t count, n_locs = 0, n;
	uint64_t id;
	int rc;

	if ((rc = table_request(in, false, &r)) < 0)
		return rc;
	if ((rc = bt_table_tablets(svc->store, r->table, &t, &count)) < 0)
		goto out;
	if (service_store_catalog(svc, &c) == 0 &&
	    (id = catalog_table_id(c, r->table)) != 0 &&
	    catalog_locations_from(c, id, slice_make(NULL, 0),
	    (size_t)INT64_MAX, &locs, &n_locs) != 0)
		n_locs = 0;
	bt_error_clear();
	n = n_locs > 0 ? n_locs : count;
	if (n > 0 && ((infos = bt_calloc(n, sizeof(*infos))) == NULL ||
	    (ptrs = bt_calloc(n, sizeof(*ptrs))) == NULL)) {
		rc = -ENOMEM;
		goto out_free;
	}
	for (size_t i = 0; i < n; i++) {
		Tabletfs__TabletInfo *ti = &infos[i];
		const struct bt_tablet_info *local = NULL;

		tabletfs__tablet_info__init(ti);
		ti->has_id = ti->has_start = ti->has_end = true;
		ti->has_sstables = ti->has_sstable_bytes = true;
		ti->has_data_bytes = ti->has_memtable_bytes = true;
		ti->has_flushed_seq = true;
		if (n_locs > 0) {
			ti->id = locs[i].tablet_id;
			ti->start = (ProtobufCBinaryData){ locs[i].start.n,
			    locs[i].start.p };
			ti->end = (ProtobufCBinaryData){ locs[i].end.n,
			    locs[i].end.p };
			ti->server = tablet_server(locs[i].server);
			for (size_t k = 0; k < count && local == NULL; k++)
				if (t[k].id == ti->id)
					local = &t[k];
		} else {
			local = &t[i];
			ti->id = local->id;
			ti->start = service_pb_bytes(local->start);
			ti->end = service_pb_bytes(local->end);
		}
		if (local != NULL) {
			ti->sstables = local->sstables;
			ti->sstable_bytes = local->sstable_bytes;
			ti->data_bytes = local->data_bytes;
			ti->memtable_bytes = local->memtable_bytes;
			ti->flushed_seq = local->flushed_seq;
		}
		ptrs[i] = ti;
	}
	out.n_tablets = n;
	out.tablets = ptrs;
	rc = service_pb_pack(&out.base, reply);
out_free:
	bt_free(ptrs);
	bt_free(infos);
	catalog_locations_free(locs, n_locs);
	bt_tablets_free(t);
out:
	service_pb_free(&r->base);
	return rc;
}

/* x's labels into o: one allocation of them at o->labels[0], and the
 * array of pointers, both for the caller to free. */
static int
usage_labels_pack(const struct server_file_usage *x, Tabletfs__UsageFile *o)
{
	Tabletfs__UsageLabel *labels;

	if (x->label_count == 0)
		return 0;
	labels = bt_calloc(x->label_count, sizeof(*labels));
	o->labels = bt_calloc(x->label_count, sizeof(*o->labels));
	if (labels == NULL || o->labels == NULL) {
		bt_free(labels);
		bt_free(o->labels);
		o->labels = NULL;
		return -ENOMEM;
	}
	for (size_t k = 0; k < x->label_count; k++) {
		const struct usage_label *l = &x->labels[k];
		Tabletfs__UsageLabel *p = &labels[k];

		tabletfs__usage_label__init(p);
		p->name = (char *)l->name;
		p->has_bytes = p->has_entries = p->has_value_bytes = true;
		p->bytes = l->bytes;
		p->entries = l->entries;
		p->value_bytes = l->value_bytes;
		o->labels[k] = p;
	}
	o->n_labels = x->label_count;
	return 0;
}

/* TABLE_USAGE: server_table_usage() of the tablets this server serves,
 * the table's totals left to the client but for the memtables' bytes of
 * no family, with every file it counted. */
static int
table_usage(struct service *svc, struct slice in, struct buf *reply)
{
	Tabletfs__UsageReply out = TABLETFS__USAGE_REPLY__INIT;
	Tabletfs__FamilyUsage *fams = NULL, **fptrs = NULL;
	Tabletfs__GroupUsage *groups = NULL, **gptrs = NULL;
	Tabletfs__UsageFile *files = NULL, **xptrs = NULL;
	Tabletfs__TableRequest *r;
	struct server_table_usage su, *u = &su;
	int rc;

	if ((rc = table_request(in, false, &r)) < 0)
		return rc;
	if ((rc = server_table_usage(api_store_server(svc->store),
	    r->table, &su)) < 0)
		goto out;
	fams = bt_calloc(u->family_count + 1, sizeof(*fams));
	fptrs = bt_calloc(u->family_count + 1, sizeof(*fptrs));
	groups = bt_calloc(u->group_count + 1, sizeof(*groups));
	gptrs = bt_calloc(u->group_count + 1, sizeof(*gptrs));
	files = bt_calloc(u->file_count + 1, sizeof(*files));
	xptrs = bt_calloc(u->file_count + 1, sizeof(*xptrs));
	if (fams == NULL || fptrs == NULL || groups == NULL || gptrs == NULL ||
	    files == NULL || xptrs == NULL) {
		rc = -ENOMEM;
		goto out_free;
	}
	for (size_t i = 0; i < u->family_count; i++) {
		const struct server_family_usage *f = &u->families[i];
		Tabletfs__FamilyUsage *o = &fams[i];

		tabletfs__family_usage__init(o);
		o->name = (char *)f->name;
		o->group = (char *)f->group;
		o->has_disk_bytes = o->has_memory_bytes = true;
		o->has_entries = o->has_value_bytes = true;
		o->disk_bytes = f->disk_bytes;
		o->memory_bytes = f->memory_bytes;
		o->entries = f->entries;
		o->value_bytes = f->value_bytes;
		fptrs[i] = o;
	}
	for (size_t i = 0; i < u->group_count; i++) {
		const struct server_group_usage *g = &u->groups[i];
		Tabletfs__GroupUsage *o = &groups[i];

		tabletfs__group_usage__init(o);
		o->name = (char *)g->name;
		o->has_files = o->has_disk_bytes = o->has_memory_bytes = true;
		o->has_other_bytes = o->has_unknown_bytes = true;
		o->files = g->files;
		o->disk_bytes = g->disk_bytes;
		o->memory_bytes = g->memory_bytes;
		o->other_bytes = g->other_bytes;
		o->unknown_bytes = g->unknown_bytes;
		gptrs[i] = o;
	}
	for (size_t i = 0; i < u->file_count && rc == 0; i++) {
		const struct server_file_usage *x = &u->files[i];
		Tabletfs__UsageFile *o = &files[i];

		tabletfs__usage_file__init(o);
		o->has_number = o->has_size = o->has_known = true;
		o->has_data_bytes = o->has_range_bytes = true;
		o->number = x->number;
		o->group = (char *)x->group;
		o->size = x->size;
		o->known = x->known;
		o->data_bytes = x->data_bytes;
		o->range_bytes = x->range_bytes;
		rc = usage_labels_pack(x, o);
		xptrs[i] = o;
	}
	if (rc < 0)
		goto out_free;
	out.n_families = u->family_count;
	out.families = fptrs;
	out.n_groups = u->group_count;
	out.groups = gptrs;
	out.has_other_memory_bytes = true;
	out.other_memory_bytes = u->other_memory_bytes;
	out.n_files = u->file_count;
	out.files = xptrs;
	rc = service_pb_pack(&out.base, reply);
out_free:
	bt_free(fams);
	bt_free(fptrs);
	bt_free(groups);
	bt_free(gptrs);
	for (size_t i = 0; files != NULL && i < u->file_count; i++) {
		if (files[i].labels != NULL)
			bt_free(files[i].labels[0]);
		bt_free(files[i].labels);
	}
	bt_free(files);
	bt_free(xptrs);
	server_table_usage_release(u);
out:
	service_pb_free(&r->base);
	return rc;
}

/* The problems a check reports, gathered for CheckReply. */
struct check_lines {
	char **lines;
	size_t count, cap;
	bool failed;		/* a line could not be kept: -ENOMEM */
};

static void
check_report(void *arg, const char *problem)
{
	struct check_lines *cl = arg;
	char *line, **grown;

	if (cl->failed)
		return;
	if (cl->count == cl->cap) {
		size_t cap = cl->cap ? cl->cap * 2 : 16;

		if ((grown = bt_realloc(cl->lines,
		    cap * sizeof(*grown))) == NULL) {
			cl->failed = true;
			return;
		}
		cl->lines = grown;
		cl->cap = cap;
	}
	if ((line = bt_strdup(problem)) == NULL) {
		cl->failed = true;
		return;
	}
	cl->lines[cl->count++] = line;
}

static int
store_check(struct service *svc, struct slice in, struct buf *reply)
{
	Tabletfs__CheckReply out = TABLETFS__CHECK_REPLY__INIT;
	struct check_lines cl = { NULL, 0, 0, false };
	uint64_t files = 0, bytes = 0;
	int rc;

	if ((rc = empty_request(in)) < 0)
		return rc;
	rc = bt_store_check(svc->store, check_report, NULL, &cl, &files,
	    &bytes);
	if (rc < 0 && rc != BT_ECORRUPT)
		goto out;
	if (cl.failed) {
		rc = -ENOMEM;
		goto out;
	}
	out.has_result = out.has_files = out.has_bytes = true;
	out.result = rc;
	out.files = files;
	out.bytes = bytes;
	out.n_problems = cl.count;
	out.problems = cl.lines;
	rc = service_pb_pack(&out.base, reply);
out:
	for (size_t i = 0; i < cl.count; i++)
		bt_free(cl.lines[i]);
	bt_free(cl.lines);
	return rc;
}

#define STAT(field) do {						\
	out.has_##field = true;						\
	out.field = st.field;						\
} while (0)

static int
store_stats(struct service *svc, struct slice in, struct buf *reply)
{
	Tabletfs__Stats out = TABLETFS__STATS__INIT;
	struct bt_stats st;
	int rc;

	if ((rc = empty_request(in)) < 0)
		return rc;
	bt_store_get_stats(svc->store, &st);
	STAT(mutations); STAT(reads); STAT(log_syncs); STAT(log_batches);
	STAT(flushes); STAT(compactions); STAT(sstables);
	STAT(damaged_sstables); STAT(memtable_bytes); STAT(last_seq);
	STAT(cache_hits); STAT(cache_misses); STAT(tablets); STAT(splits);
	STAT(merges); STAT(files_collected); STAT(location_lookups);
	STAT(location_hits); STAT(location_levels); STAT(location_stale);
	STAT(write_gathers); STAT(write_waits); STAT(memtable_peak_bytes);
	STAT(memory_trims); STAT(writes_refused); STAT(disk_full);
	STAT(reserve_bytes);
	return service_pb_pack(&out.base, reply);
}

/* LAST_SEQ: bt_store_last_seq(), an atomic load, nothing gathered. */
static int
store_last_seq(struct service *svc, struct slice in, struct buf *reply)
{
	Tabletfs__LastSeqReply out = TABLETFS__LAST_SEQ_REPLY__INIT;
	int rc;

	if ((rc = empty_request(in)) < 0)
		return rc;
	out.has_last_seq = true;
	out.last_seq = bt_store_last_seq(svc->store);
	out.server = (char *)server_assign_name(api_store_server(svc->store));
	return service_pb_pack(&out.base, reply);
}

static int
store_space(struct service *svc, struct slice in, struct buf *reply)
{
	Tabletfs__SpaceReply out = TABLETFS__SPACE_REPLY__INIT;
	struct bt_space sp;
	int rc;

	if ((rc = empty_request(in)) < 0)
		return rc;
	if ((rc = bt_store_space(svc->store, &sp)) < 0)
		return rc;
	out.has_total_bytes = out.has_free_bytes = true;
	out.has_available_bytes = out.has_block_size = true;
	out.total_bytes = sp.total_bytes;
	out.free_bytes = sp.free_bytes;
	out.available_bytes = sp.available_bytes;
	out.block_size = sp.block_size;
	return service_pb_pack(&out.base, reply);
}

/* ---- Dispatch ---- */

typedef int (*service_handler)(struct service *, struct slice,
    struct buf *);

static const struct {
	uint32_t method;
	service_handler handler;
} handlers[] = {
	{ TABLETFS__METHOD__TABLE_CREATE, table_create },
	{ TABLETFS__METHOD__TABLE_DELETE, table_delete },
	{ TABLETFS__METHOD__TABLE_LIST, table_list },
	{ TABLETFS__METHOD__FAMILY_CREATE, family_create },
	{ TABLETFS__METHOD__FAMILY_DELETE, family_delete },
	{ TABLETFS__METHOD__FAMILY_SET_GC, family_set_gc },
	{ TABLETFS__METHOD__GROUP_SET, group_set },
	{ TABLETFS__METHOD__TABLE_DESCRIBE, table_describe },
	{ TABLETFS__METHOD__TABLE_ACCESS, table_access },
	{ TABLETFS__METHOD__ACCESS_SET, access_set },
	{ TABLETFS__METHOD__MUTATE_ROW, service_mutate_row },
	{ TABLETFS__METHOD__MUTATE_ROWS, service_mutate_rows },
	{ TABLETFS__METHOD__READ_MODIFY_WRITE, service_read_modify_write },
	{ TABLETFS__METHOD__MOVE_COLUMN, service_move_column },
	{ TABLETFS__METHOD__READ_ROW, service_read_row },
	{ TABLETFS__METHOD__SCAN, service_scan },
	{ TABLETFS__METHOD__SCAN_CLOSE, service_scan_close },
	{ TABLETFS__METHOD__FLUSH, store_flush },
	{ TABLETFS__METHOD__SCHEMA_SYNC, store_schema_sync },
	{ TABLETFS__METHOD__COMPACT, store_compact },
	{ TABLETFS__METHOD__SPLIT, table_split },
	{ TABLETFS__METHOD__TABLETS, table_tablets },
	{ TABLETFS__METHOD__CHECK, store_check },
	{ TABLETFS__METHOD__STATS, store_stats },
	{ TABLETFS__METHOD__TABLE_USAGE, table_usage },
	{ TABLETFS__METHOD__LAST_SEQ, store_last_seq },
	{ TABLETFS__METHOD__SPACE, store_space },
	{ TABLETFS__METHOD__CATALOG_TABLE_GET, service_catalog_table_get },
	{ TABLETFS__METHOD__CATALOG_TABLE_GET_BY_ID,
	    service_catalog_table_get_by_id },
	{ TABLETFS__METHOD__CATALOG_TABLE_LIST, service_catalog_table_list },
	{ TABLETFS__METHOD__CATALOG_TABLETS_LIST,
	    service_catalog_tablets_list },
	{ TABLETFS__METHOD__CATALOG_FILES_LIST, service_catalog_files_list },
	{ TABLETFS__METHOD__CATALOG_NEXT_NUMBER,
	    service_catalog_next_number },
	{ TABLETFS__METHOD__CATALOG_TABLET_APPLY,
	    service_catalog_tablet_apply },
	{ TABLETFS__METHOD__CATALOG_FILE_IS_LIVE,
	    service_catalog_file_is_live },
	{ TABLETFS__METHOD__CATALOG_SCHEMA_VERSION,
	    service_catalog_schema_version },
	{ TABLETFS__METHOD__CATALOG_TABLET_REPLACE,
	    service_catalog_tablet_replace },
	{ TABLETFS__METHOD__CATALOG_ASSIGN, service_catalog_assign },
	{ TABLETFS__METHOD__CATALOG_ASSIGNMENTS,
	    service_catalog_assignments },
	{ TABLETFS__METHOD__CATALOG_SERVER_GONE,
	    service_catalog_server_gone },
	{ TABLETFS__METHOD__LOCATE, service_locate },
};

/* The methods whose state belongs to the connection they came on. */
typedef int (*service_conn_handler)(struct service *, uint64_t,
    struct slice, struct buf *);

static const struct {
	uint32_t method;
	service_conn_handler handler;
} conn_handlers[] = {
	{ TABLETFS__METHOD__BULK_OPEN, service_bulk_open },
	{ TABLETFS__METHOD__BULK_PUT, service_bulk_put },
	{ TABLETFS__METHOD__BULK_COMMIT, service_bulk_commit },
	{ TABLETFS__METHOD__BULK_ABORT, service_bulk_abort },
};

/* Append the error line for rc: the detail, else the code's name, with
 * every byte outside printable ASCII written '?'. */
static void
reply_error(int rc, struct buf *reply)
{
	const char *text = bt_error_detail();
	size_t n;

	if (text[0] == '\0')
		text = bt_strerror(rc);
	n = strlen(text);
	if (buf_reserve(reply, n) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)text[i];

		reply->p[reply->n++] = c >= 0x20 && c < 0x7f ? c : '?';
	}
}

/* Not LOCATE nor any CATALOG_* read: the catalog's lock may be held by
 * a change waiting for its sync. */
bool
service_method_short(uint32_t method)
{
	return method == TABLETFS__METHOD__READ_ROW ||
	    method == TABLETFS__METHOD__LAST_SEQ;
}

int
service_handle(struct service *svc, uint32_t method, struct slice request,
    struct buf *reply)
{
	return service_handle_conn(svc, 0, method, request, reply);
}

int
service_handle_conn(struct service *svc, uint64_t conn, uint32_t method,
    struct slice request, struct buf *reply)
{
	service_handler handler = NULL;
	service_conn_handler conn_handler = NULL;
	size_t mark = reply->n;
	int rc;

	assert(svc != NULL && reply != NULL);
	bt_error_clear();
	for (size_t i = 0; i < sizeof(handlers) / sizeof(handlers[0]); i++)
		if (handlers[i].method == method)
			handler = handlers[i].handler;
	for (size_t i = 0; i < sizeof(conn_handlers) /
	    sizeof(conn_handlers[0]); i++)
		if (conn_handlers[i].method == method)
			conn_handler = conn_handlers[i].handler;
	if (handler != NULL)
		rc = handler(svc, request, reply);
	else if (conn_handler != NULL)
		rc = conn_handler(svc, conn, request, reply);
	else
		rc = bt_error_set(-ENOSYS, "method %u: not served here",
		    method);
	assert(rc <= 0);
	if (rc < 0) {
		reply->n = mark;
		reply_error(rc, reply);
	}
	return rc;
}

void
service_conn_closed(struct service *svc, uint64_t conn)
{
	service_loads_abort(svc, conn, false);
}

uint64_t
service_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A counter through a bijection of 64-bit numbers (splitmix64's), so
 * never one given before, and not 1, 2, 3. */
uint64_t
service_next_id(struct service *svc)
{
	uint64_t x;

	mutex_assert_held(&svc->mu);
	do {
		x = ++svc->next_id ^ svc->id_key;
		x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
		x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
		x ^= x >> 31;
	} while (x == 0);
	return x;
}

/* ---- Life ---- */

int
service_new(struct bt_store *store, struct service **out)
{
	return service_new_with(store, NULL, out);
}

int
service_new_with(struct bt_store *store, const struct service_options *opts,
    struct service **out)
{
	struct service *svc;
	uint32_t idle_ms = SERVICE_SCANNER_IDLE_MS;
	uint32_t load_idle_ms = SERVICE_LOAD_IDLE_MS;
	int rc;

	assert(store != NULL && out != NULL);
	if (opts != NULL && opts->scanner_idle_ms != 0)
		idle_ms = opts->scanner_idle_ms;
	if (opts != NULL && opts->load_idle_ms != 0)
		load_idle_ms = opts->load_idle_ms;
	if ((svc = bt_calloc(1, sizeof(*svc))) == NULL)
		return -ENOMEM;
	svc->store = store;
	svc->idle_ns = (uint64_t)idle_ms * 1000000u;
	svc->load_idle_ns = (uint64_t)load_idle_ms * 1000000u;
	svc->max_cell = opts != NULL && opts->max_cell != 0 ?
	    opts->max_cell : BT_DEFAULT_MAX_CELL;
	if ((svc->scanners = bt_calloc(SERVICE_MAX_SCANNERS,
	    sizeof(*svc->scanners))) == NULL) {
		rc = -ENOMEM;
		goto out_free;
	}
	if ((rc = mutex_init(&svc->mu)) < 0)
		goto out_scanners;
	/* The key only scrambles ids: the clock does when there is no
	 * randomness to be had. */
	if (getrandom(&svc->id_key, sizeof(svc->id_key), GRND_NONBLOCK) !=
	    (ssize_t)sizeof(svc->id_key))
		svc->id_key = (uint64_t)time(NULL) * 0x9e3779b97f4a7c15u;
	*out = svc;
	return 0;
out_scanners:
	bt_free(svc->scanners);
out_free:
	bt_free(svc);
	return rc;
}

void
service_free(struct service *svc)
{
	if (svc == NULL)
		return;
	service_scanners_close_all(svc);
	service_loads_abort(svc, 0, true);
	mutex_destroy(&svc->mu);
	bt_free(svc->scanners);
	bt_free(svc);
}
