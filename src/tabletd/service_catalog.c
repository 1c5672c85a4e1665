/*
 * service_catalog.c - the catalog calls of tabletfs.proto (CATALOG_*),
 * which the root's server answers for the other tablet servers on its
 * store's catalog (docs/design.md section 5, "The catalog served"): each
 * the catalog.h call of the same name, a lookup's BT_NOTFOUND as found =
 * false (positive codes are never a status), and CATALOG_TABLET_APPLY as
 * catalog_tablet_apply_as() for the caller the request names, so that a
 * tablet assigned elsewhere is refused with BT_ENOTSERVING in the same
 * transaction that would have changed it.  CATALOG_NEXT_NUMBER is
 * catalog_next_number_for() the caller, so that the root's sweep spares
 * the file until the caller names it or the master says the caller is
 * gone (CATALOG_SERVER_GONE).  CATALOG_SCHEMA_VERSION is
 * catalog_schema_version(), which the servers poll.  The master's
 * CATALOG_ASSIGN and
 * CATALOG_ASSIGNMENTS are catalog_tablet_assign_if() and
 * catalog_assignments_list().
 *
 * The catalog is the engine's own (server_catalog()), reached behind the
 * public API (api/api_server.h): a store that is a cell's client has
 * none here, and answers -EOPNOTSUPP.
 */
#include <errno.h>
#include <string.h>

#include "api/api_server.h"
#include "catalog/catalog.h"
#include "server/server.h"
#include "tabletd/service_int.h"
#include "util/alloc.h"
#include "util/error.h"

#define UNPACK(desc, in, msgp) \
	service_pb_unpack(&(desc), (in), (ProtobufCMessage **)(msgp))

int
service_store_catalog(struct service *svc, struct catalog **out)
{
	struct server *s = api_store_server(svc->store);

	if (s == NULL)
		return bt_error_set(-EOPNOTSUPP, "catalog: this server's "
		    "store keeps no catalog here");
	*out = server_catalog(s);
	return 0;
}

/* What a CatalogRequest must hold besides its caller. */
enum need { NEED_NOTHING, NEED_NAME, NEED_ID };

/*
 * Unpack a CatalogRequest of method what, with its caller and what need
 * says, and find the catalog: 0 with both, or an error (nothing to
 * free).
 */
static int
catalog_request(struct service *svc, struct slice in, const char *what,
    enum need need, Tabletfs__CatalogRequest **out, struct catalog **cp)
{
	Tabletfs__CatalogRequest *r;
	int rc;

	if ((rc = UNPACK(tabletfs__catalog_request__descriptor, in, &r)) < 0)
		return rc;
	if (r->caller == NULL || r->caller[0] == '\0')
		rc = service_missing(what, "caller");
	else if (need == NEED_NAME && r->name == NULL)
		rc = service_missing(what, "name");
	else if (need == NEED_ID && !r->has_id)
		rc = service_missing(what, "id");
	else
		rc = service_store_catalog(svc, cp);
	if (rc < 0) {
		service_pb_free(&r->base);
		return rc;
	}
	*out = r;
	return 0;
}

static void
access_out(Tabletfs__Access *out, const struct catalog_access *a)
{
	tabletfs__access__init(out);
	out->has_uid = out->has_gid = out->has_mode = true;
	out->uid = a->uid;
	out->gid = a->gid;
	out->mode = a->mode;
}

/* Pack t (NULL: not found) as a CatalogTableReply. */
static int
table_reply(const struct catalog_table *t, struct buf *reply)
{
	Tabletfs__CatalogTableReply out = TABLETFS__CATALOG_TABLE_REPLY__INIT;
	Tabletfs__CatalogTable pt = TABLETFS__CATALOG_TABLE__INIT;
	Tabletfs__Access ta, *fa = NULL;
	Tabletfs__CatalogFamily *fs = NULL, **fp = NULL;
	Tabletfs__CatalogGroup *gs = NULL, **gp = NULL;
	int rc = -ENOMEM;

	out.has_found = true;
	out.found = t != NULL;
	if (t == NULL)
		return service_pb_pack(&out.base, reply);
	if ((fa = bt_calloc(t->family_count + 1, sizeof(*fa))) == NULL ||
	    (fs = bt_calloc(t->family_count + 1, sizeof(*fs))) == NULL ||
	    (fp = bt_calloc(t->family_count + 1, sizeof(*fp))) == NULL ||
	    (gs = bt_calloc(t->group_count + 1, sizeof(*gs))) == NULL ||
	    (gp = bt_calloc(t->group_count + 1, sizeof(*gp))) == NULL)
		goto out;
	for (size_t i = 0; i < t->family_count; i++) {
		const struct catalog_family *f = &t->families[i];

		tabletfs__catalog_family__init(&fs[i]);
		fs[i].name = (char *)f->name;
		fs[i].group = (char *)f->group;
		fs[i].gc_policy = (char *)f->gc_policy;
		fs[i].has_created_seq = true;
		fs[i].created_seq = f->created_seq;
		access_out(&fa[i], &f->access);
		fs[i].access = &fa[i];
		fp[i] = &fs[i];
	}
	for (size_t i = 0; i < t->group_count; i++) {
		const struct catalog_group *g = &t->groups[i];

		tabletfs__catalog_group__init(&gs[i]);
		gs[i].name = (char *)g->name;
		gs[i].has_block_size = gs[i].has_compress = true;
		gs[i].has_bloom = gs[i].has_in_memory = true;
		gs[i].block_size = g->block_size;
		gs[i].compress = g->compress;
		gs[i].bloom = g->bloom;
		gs[i].in_memory = g->in_memory;
		gp[i] = &gs[i];
	}
	pt.has_id = pt.has_tablet_size = true;
	pt.id = t->id;
	pt.name = (char *)t->name;
	pt.tablet_size = t->tablet_size;
	access_out(&ta, &t->access);
	pt.access = &ta;
	pt.n_families = t->family_count;
	pt.families = fp;
	pt.n_groups = t->group_count;
	pt.groups = gp;
	out.table = &pt;
	rc = service_pb_pack(&out.base, reply);
out:
	bt_free(fa);
	bt_free(fs);
	bt_free(fp);
	bt_free(gs);
	bt_free(gp);
	return rc;
}

/* CATALOG_TABLE_GET (by name) and CATALOG_TABLE_GET_BY_ID. */
static int
table_get(struct service *svc, struct slice in, struct buf *reply,
    bool by_id)
{
	Tabletfs__CatalogRequest *r;
	struct catalog_table *t = NULL;
	struct catalog *c;
	int rc;

	if ((rc = catalog_request(svc, in, by_id ? "CATALOG_TABLE_GET_BY_ID" :
	    "CATALOG_TABLE_GET", by_id ? NEED_ID : NEED_NAME, &r, &c)) < 0)
		return rc;
	rc = by_id ? catalog_table_get_by_id(c, r->id, &t) :
	    catalog_table_get(c, r->name, &t);
	if (rc >= 0)
		rc = table_reply(rc == 0 ? t : NULL, reply);
	catalog_table_free(t);
	service_pb_free(&r->base);
	return rc;
}

int
service_catalog_table_get(struct service *svc, struct slice in,
    struct buf *reply)
{
	return table_get(svc, in, reply, false);
}

int
service_catalog_table_get_by_id(struct service *svc, struct slice in,
    struct buf *reply)
{
	return table_get(svc, in, reply, true);
}

int
service_catalog_table_list(struct service *svc, struct slice in,
    struct buf *reply)
{
	Tabletfs__TableListReply out = TABLETFS__TABLE_LIST_REPLY__INIT;
	Tabletfs__CatalogRequest *r;
	struct catalog *c;
	char **names;
	size_t count;
	int rc;

	if ((rc = catalog_request(svc, in, "CATALOG_TABLE_LIST",
	    NEED_NOTHING, &r, &c)) < 0)
		return rc;
	if ((rc = catalog_table_list(c, &names, &count)) == 0) {
		out.n_names = count;
		out.names = names;
		rc = service_pb_pack(&out.base, reply);
		for (size_t i = 0; i < count; i++)
			bt_free(names[i]);
		bt_free(names);
	}
	service_pb_free(&r->base);
	return rc;
}

int
service_catalog_tablets_list(struct service *svc, struct slice in,
    struct buf *reply)
{
	Tabletfs__CatalogTabletsReply out =
	    TABLETFS__CATALOG_TABLETS_REPLY__INIT;
	Tabletfs__CatalogTablet *ts = NULL, **tp = NULL;
	Tabletfs__CatalogRequest *r;
	struct catalog_tablet *t = NULL;
	struct catalog *c;
	size_t count = 0;
	int rc;

	if ((rc = catalog_request(svc, in, "CATALOG_TABLETS_LIST", NEED_ID,
	    &r, &c)) < 0)
		return rc;
	if ((rc = catalog_tablets_list(c, r->id, &t, &count)) < 0)
		goto out;
	if ((ts = bt_calloc(count + 1, sizeof(*ts))) == NULL ||
	    (tp = bt_calloc(count + 1, sizeof(*tp))) == NULL) {
		rc = -ENOMEM;
		goto out_free;
	}
	for (size_t i = 0; i < count; i++) {
		tabletfs__catalog_tablet__init(&ts[i]);
		ts[i].has_id = ts[i].has_table_id = true;
		ts[i].has_start = ts[i].has_end = true;
		ts[i].has_flushed_seq = ts[i].has_auto_split = true;
		ts[i].id = t[i].id;
		ts[i].table_id = t[i].table_id;
		ts[i].start = (ProtobufCBinaryData){ t[i].start.n,
		    t[i].start.p };
		ts[i].end = (ProtobufCBinaryData){ t[i].end.n, t[i].end.p };
		ts[i].flushed_seq = t[i].flushed_seq;
		ts[i].auto_split = t[i].auto_split;
		tp[i] = &ts[i];
	}
	out.has_found = true;
	out.found = rc == 0;
	out.n_tablets = count;
	out.tablets = tp;
	rc = service_pb_pack(&out.base, reply);
out_free:
	bt_free(ts);
	bt_free(tp);
	catalog_tablets_free(t, count);
out:
	service_pb_free(&r->base);
	return rc;
}

int
service_catalog_files_list(struct service *svc, struct slice in,
    struct buf *reply)
{
	Tabletfs__CatalogFilesReply out = TABLETFS__CATALOG_FILES_REPLY__INIT;
	Tabletfs__CatalogFile *fs = NULL, **fp = NULL;
	Tabletfs__CatalogRequest *r;
	struct catalog_file *f = NULL;
	struct catalog *c;
	size_t count = 0;
	int rc;

	if ((rc = catalog_request(svc, in, "CATALOG_FILES_LIST", NEED_ID,
	    &r, &c)) < 0)
		return rc;
	if ((rc = catalog_files_list(c, r->id, &f, &count)) < 0)
		goto out;
	if ((fs = bt_calloc(count + 1, sizeof(*fs))) == NULL ||
	    (fp = bt_calloc(count + 1, sizeof(*fp))) == NULL) {
		rc = -ENOMEM;
		goto out_free;
	}
	for (size_t i = 0; i < count; i++) {
		tabletfs__catalog_file__init(&fs[i]);
		fs[i].has_number = fs[i].has_tablet_id = true;
		fs[i].has_size = fs[i].has_entry_count = true;
		fs[i].has_max_seq = true;
		fs[i].number = f[i].number;
		fs[i].tablet_id = f[i].tablet_id;
		fs[i].group = f[i].group;
		fs[i].size = f[i].size;
		fs[i].entry_count = f[i].entry_count;
		fs[i].max_seq = f[i].max_seq;
		fp[i] = &fs[i];
	}
	out.has_found = true;
	out.found = rc == 0;
	out.n_files = count;
	out.files = fp;
	rc = service_pb_pack(&out.base, reply);
out_free:
	bt_free(fs);
	bt_free(fp);
	bt_free(f);
out:
	service_pb_free(&r->base);
	return rc;
}

int
service_catalog_next_number(struct service *svc, struct slice in,
    struct buf *reply)
{
	Tabletfs__CatalogNumberReply out =
	    TABLETFS__CATALOG_NUMBER_REPLY__INIT;
	Tabletfs__CatalogRequest *r;
	struct catalog *c;
	int rc;

	if ((rc = catalog_request(svc, in, "CATALOG_NEXT_NUMBER",
	    NEED_NOTHING, &r, &c)) < 0)
		return rc;
	if ((rc = catalog_next_number_for(c, r->caller, &out.number)) == 0) {
		out.has_number = true;
		rc = service_pb_pack(&out.base, reply);
	}
	service_pb_free(&r->base);
	return rc;
}

int
service_catalog_file_is_live(struct service *svc, struct slice in,
    struct buf *reply)
{
	Tabletfs__CatalogLiveReply out = TABLETFS__CATALOG_LIVE_REPLY__INIT;
	Tabletfs__CatalogRequest *r;
	struct catalog *c;
	int rc;

	if ((rc = catalog_request(svc, in, "CATALOG_FILE_IS_LIVE", NEED_ID,
	    &r, &c)) < 0)
		return rc;
	if ((rc = catalog_file_is_live(c, r->id)) >= 0) {
		out.has_live = true;
		out.live = rc == 1;
		rc = service_pb_pack(&out.base, reply);
	}
	service_pb_free(&r->base);
	return rc;
}

int
service_catalog_schema_version(struct service *svc, struct slice in,
    struct buf *reply)
{
	Tabletfs__CatalogVersionReply out =
	    TABLETFS__CATALOG_VERSION_REPLY__INIT;
	Tabletfs__CatalogRequest *r;
	struct catalog *c;
	int rc;

	if ((rc = catalog_request(svc, in, "CATALOG_SCHEMA_VERSION",
	    NEED_NOTHING, &r, &c)) < 0)
		return rc;
	if ((rc = catalog_schema_version(c, &out.version)) == 0) {
		out.has_version = true;
		rc = service_pb_pack(&out.base, reply);
	}
	service_pb_free(&r->base);
	return rc;
}

/* The added files of an apply as catalog files (*out: bt_free() it). */
static int
apply_files(const Tabletfs__CatalogApplyRequest *r, uint64_t tablet_id,
    struct catalog_file **out)
{
	struct catalog_file *f;

	if ((f = bt_calloc(r->n_added + 1, sizeof(*f))) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < r->n_added; i++) {
		const Tabletfs__CatalogFile *a = r->added[i];

		if (!a->has_number || a->group == NULL ||
		    strlen(a->group) >= sizeof(f[i].group)) {
			bt_free(f);
			return service_missing("CATALOG_TABLET_APPLY file",
			    "number or group (of at most 64 bytes)");
		}
		f[i].number = a->number;
		f[i].tablet_id = tablet_id;
		memcpy(f[i].group, a->group, strlen(a->group) + 1);
		f[i].size = a->has_size ? a->size : 0;
		f[i].entry_count = a->has_entry_count ? a->entry_count : 0;
		f[i].max_seq = a->has_max_seq ? a->max_seq : 0;
	}
	*out = f;
	return 0;
}

int
service_catalog_tablet_apply(struct service *svc, struct slice in,
    struct buf *reply)
{
	Tabletfs__CatalogApplyRequest *r;
	struct catalog_file *added = NULL;
	struct catalog *c = NULL;
	int rc;

	if ((rc = UNPACK(tabletfs__catalog_apply_request__descriptor, in,
	    &r)) < 0)
		return rc;
	if (r->caller == NULL || r->caller[0] == '\0')
		rc = service_missing("CATALOG_TABLET_APPLY", "caller");
	else if (!r->has_tablet_id)
		rc = service_missing("CATALOG_TABLET_APPLY", "tablet_id");
	if (rc < 0 || (rc = service_store_catalog(svc, &c)) < 0 ||
	    (rc = apply_files(r, r->tablet_id, &added)) < 0)
		goto out;
	rc = catalog_tablet_apply_as(c, r->caller, r->tablet_id, added,
	    r->n_added, r->removed, r->n_removed,
	    r->has_flushed_seq ? r->flushed_seq : 0);
	bt_free(added);
out:
	service_pb_free(&r->base);
	return rc;
}

/* The catalog's name of a CatalogAssignRequest's recovery. */
static enum catalog_recovery
assign_recovery(Tabletfs__CatalogAssignRequest__Recovery r)
{
	switch (r) {
	case TABLETFS__CATALOG_ASSIGN_REQUEST__RECOVERY__RECOVERY_BEGIN:
		return CATALOG_RECOVERY_BEGIN;
	case TABLETFS__CATALOG_ASSIGN_REQUEST__RECOVERY__RECOVERY_DONE:
		return CATALOG_RECOVERY_DONE;
	default:
		return CATALOG_RECOVERY_KEEP;
	}
}

/* CATALOG_ASSIGN: the master's compare-and-set of a tablet's server and
 * its recovery mark; an absent server or expected is "" (none). */
int
service_catalog_assign(struct service *svc, struct slice in,
    struct buf *reply)
{
	Tabletfs__CatalogAssignRequest *r;
	struct catalog *c = NULL;
	int rc;

	if ((rc = UNPACK(tabletfs__catalog_assign_request__descriptor, in,
	    &r)) < 0)
		return rc;
	if (r->caller == NULL || r->caller[0] == '\0')
		rc = service_missing("CATALOG_ASSIGN", "caller");
	else if (!r->has_tablet_id)
		rc = service_missing("CATALOG_ASSIGN", "tablet_id");
	if (rc < 0 || (rc = service_store_catalog(svc, &c)) < 0)
		goto out;
	rc = catalog_tablet_assign_if(c, r->tablet_id,
	    r->server != NULL ? r->server : "",
	    r->expected != NULL ? r->expected : "",
	    assign_recovery(r->has_recovery ? r->recovery :
	    TABLETFS__CATALOG_ASSIGN_REQUEST__RECOVERY__RECOVERY_KEEP));
out:
	service_pb_free(&r->base);
	return rc;
}

int
service_catalog_assignments(struct service *svc, struct slice in,
    struct buf *reply)
{
	Tabletfs__CatalogAssignmentsReply out =
	    TABLETFS__CATALOG_ASSIGNMENTS_REPLY__INIT;
	Tabletfs__CatalogAssignment *as = NULL, **ap = NULL;
	Tabletfs__CatalogRequest *r;
	struct catalog_assignment *a = NULL;
	struct catalog *c;
	size_t count = 0;
	int rc;

	if ((rc = catalog_request(svc, in, "CATALOG_ASSIGNMENTS",
	    NEED_NOTHING, &r, &c)) < 0)
		return rc;
	if ((rc = catalog_assignments_list(c, &a, &count)) < 0)
		goto out;
	if ((as = bt_calloc(count + 1, sizeof(*as))) == NULL ||
	    (ap = bt_calloc(count + 1, sizeof(*ap))) == NULL) {
		rc = -ENOMEM;
		goto out_free;
	}
	for (size_t i = 0; i < count; i++) {
		tabletfs__catalog_assignment__init(&as[i]);
		as[i].table = a[i].table;
		as[i].has_table_id = as[i].has_tablet_id = true;
		as[i].table_id = a[i].table_id;
		as[i].tablet_id = a[i].tablet_id;
		as[i].server = a[i].server;
		as[i].has_recovering = true;
		as[i].recovering = a[i].recovering;
		ap[i] = &as[i];
	}
	out.n_tablets = count;
	out.tablets = ap;
	rc = service_pb_pack(&out.base, reply);
out_free:
	bt_free(as);
	bt_free(ap);
	bt_free(a);
out:
	service_pb_free(&r->base);
	return rc;
}

/* CATALOG_SERVER_GONE: name is the server whose pending numbers go. */
int
service_catalog_server_gone(struct service *svc, struct slice in,
    struct buf *reply)
{
	Tabletfs__CatalogRequest *r;
	struct catalog *c;
	int rc;

	if ((rc = catalog_request(svc, in, "CATALOG_SERVER_GONE", NEED_NAME,
	    &r, &c)) < 0)
		return rc;
	rc = catalog_server_gone(c, r->name);
	service_pb_free(&r->base);
	return rc;
}
