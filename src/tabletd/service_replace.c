/*
 * service_replace.c - CATALOG_TABLET_REPLACE, which the root's server
 * answers for a tablet server that splits a tablet it serves
 * (docs/design.md section 5, "Splits where the tablet is served"): the
 * request's old tablets and specs as catalog_tablet_replace_as() for
 * the caller the request names, so that a tablet assigned elsewhere is
 * refused with BT_ENOTSERVING in the transaction that would have
 * replaced it, and the new tablets are the caller's.  The reply holds
 * the new tablets' ids, with which the caller numbers the tablets it
 * built before sending (no prepare crosses the wire).
 */
#include <errno.h>
#include <string.h>

#include "catalog/catalog.h"
#include "tabletd/service_int.h"
#include "util/alloc.h"
#include "util/error.h"

#define WHAT "CATALOG_TABLET_REPLACE"

/* The request's specs as catalog specs, borrowing its bytes: *specs and
 * *files (one array for every spec's files) to bt_free(). */
static int
specs_in(const Tabletfs__CatalogReplaceRequest *r,
    struct catalog_tablet_spec **specs, struct catalog_file **files)
{
	struct catalog_tablet_spec *sp;
	struct catalog_file *f;
	size_t total = 0, k = 0;

	for (size_t i = 0; i < r->n_specs; i++)
		total += r->specs[i]->n_files;
	sp = bt_calloc(r->n_specs + 1, sizeof(*sp));
	f = bt_calloc(total + 1, sizeof(*f));
	if (sp == NULL || f == NULL) {
		bt_free(sp);
		bt_free(f);
		return -ENOMEM;
	}
	for (size_t i = 0; i < r->n_specs; i++) {
		const Tabletfs__CatalogTabletSpec *t = r->specs[i];

		sp[i].start = slice_make(t->start.data, t->start.len);
		sp[i].end = slice_make(t->end.data, t->end.len);
		sp[i].flushed_seq = t->has_flushed_seq ? t->flushed_seq : 0;
		sp[i].auto_split = t->has_auto_split && t->auto_split;
		sp[i].files = &f[k];
		sp[i].file_count = t->n_files;
		for (size_t j = 0; j < t->n_files; j++, k++) {
			const Tabletfs__CatalogFile *a = t->files[j];

			if (!a->has_number || a->group == NULL ||
			    strlen(a->group) >= sizeof(f[k].group)) {
				bt_free(sp);
				bt_free(f);
				return service_missing(WHAT " file", "number or "
				    "group (of at most 64 bytes)");
			}
			f[k].number = a->number;
			memcpy(f[k].group, a->group, strlen(a->group) + 1);
			f[k].size = a->has_size ? a->size : 0;
			f[k].entry_count = a->has_entry_count ?
			    a->entry_count : 0;
			f[k].max_seq = a->has_max_seq ? a->max_seq : 0;
		}
	}
	*specs = sp;
	*files = f;
	return 0;
}

int
service_catalog_tablet_replace(struct service *svc, struct slice in,
    struct buf *reply)
{
	Tabletfs__CatalogReplaceReply out =
	    TABLETFS__CATALOG_REPLACE_REPLY__INIT;
	Tabletfs__CatalogReplaceRequest *r;
	struct catalog_tablet_spec *specs = NULL;
	struct catalog_file *files = NULL;
	struct catalog *c = NULL;
	uint64_t *ids = NULL;
	int rc;

	if ((rc = service_pb_unpack(
	    &tabletfs__catalog_replace_request__descriptor, in,
	    (ProtobufCMessage **)&r)) < 0)
		return rc;
	if (r->caller == NULL || r->caller[0] == '\0')
		rc = service_missing(WHAT, "caller");
	else if (r->n_old_ids == 0)
		rc = service_missing(WHAT, "old_ids");
	else if (r->n_specs == 0)
		rc = service_missing(WHAT, "specs");
	if (rc < 0 || (rc = service_store_catalog(svc, &c)) < 0 ||
	    (rc = specs_in(r, &specs, &files)) < 0)
		goto out;
	if ((ids = bt_calloc(r->n_specs, sizeof(*ids))) == NULL) {
		rc = -ENOMEM;
		goto out_specs;
	}
	rc = catalog_tablet_replace_as(c, r->caller, r->old_ids, r->n_old_ids,
	    specs, r->n_specs, ids, NULL);
	if (rc == 0) {
		out.n_new_ids = r->n_specs;
		out.new_ids = ids;
		rc = service_pb_pack(&out.base, reply);
	}
	bt_free(ids);
out_specs:
	bt_free(specs);
	bt_free(files);
out:
	service_pb_free(&r->base);
	return rc;
}
