/*
 * catalog_client_pb.c - the CATALOG_* replies as catalog.h's structs
 * (catalog_client_int.h), checked against the structs' limits: the root's
 * server is trusted to answer as its catalog does, not to be unable to
 * overflow a fixed name field.
 */
#include <errno.h>
#include <string.h>

#include "tabletd/catalog_client_int.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"

/* Copy a name of the reply into a fixed field: 0, or -EPROTO when it is
 * absent or too long. */
static int
name_copy(char *dst, size_t size, const char *src, const char *what)
{
	size_t n;

	if (src == NULL || (n = strlen(src)) >= size)
		return bt_error_set(-EPROTO, "%s absent or over %zu bytes",
		    what, size - 1);
	memcpy(dst, src, n + 1);
	return 0;
}

static void
access_in(struct catalog_access *a, const Tabletfs__Access *p)
{
	a->uid = p != NULL && p->has_uid ? p->uid : 0;
	a->gid = p != NULL && p->has_gid ? p->gid : 0;
	a->mode = p != NULL && p->has_mode ? p->mode &
	    CATALOG_ACCESS_MODE_MASK : 0;
}

static int
family_in(struct catalog_family *f, const Tabletfs__CatalogFamily *p)
{
	int rc;

	if ((rc = name_copy(f->name, sizeof(f->name), p->name,
	    "a family's name")) < 0 ||
	    (rc = name_copy(f->group, sizeof(f->group), p->group,
	    "a family's group")) < 0 ||
	    (rc = name_copy(f->gc_policy, sizeof(f->gc_policy), p->gc_policy,
	    "a family's gc policy")) < 0)
		return rc;
	f->created_seq = p->created_seq;
	access_in(&f->access, p->access);
	return 0;
}

static int
group_in(struct catalog_group *g, const Tabletfs__CatalogGroup *p)
{
	int rc;

	if ((rc = name_copy(g->name, sizeof(g->name), p->name,
	    "a group's name")) < 0)
		return rc;
	g->block_size = p->block_size;
	g->compress = p->compress;
	g->bloom = p->bloom;
	g->in_memory = p->in_memory;
	return 0;
}

/* As catalog_table_get() allocates one: the struct, then each array
 * (NULL when empty), each freed by catalog_table_free(). */
int
catalog_client_table_in(const Tabletfs__CatalogTable *p,
    struct catalog_table **out)
{
	struct catalog_table *t;
	int rc = -ENOMEM;

	if (p == NULL || !p->has_id)
		return bt_error_set(-EPROTO, "no table");
	if ((t = bt_calloc(1, sizeof(*t))) == NULL)
		return -ENOMEM;
	if ((p->n_families > 0 && (t->families = bt_calloc(p->n_families,
	    sizeof(*t->families))) == NULL) || (p->n_groups > 0 &&
	    (t->groups = bt_calloc(p->n_groups, sizeof(*t->groups))) == NULL))
		goto out_free;
	t->id = p->id;
	t->tablet_size = p->tablet_size;
	access_in(&t->access, p->access);
	t->family_count = p->n_families;
	t->group_count = p->n_groups;
	if ((rc = name_copy(t->name, sizeof(t->name), p->name,
	    "the table's name")) < 0)
		goto out_free;
	for (size_t i = 0; i < p->n_families; i++)
		if ((rc = family_in(&t->families[i], p->families[i])) < 0)
			goto out_free;
	for (size_t i = 0; i < p->n_groups; i++)
		if ((rc = group_in(&t->groups[i], p->groups[i])) < 0)
			goto out_free;
	*out = t;
	return 0;
out_free:
	catalog_table_free(t);
	return rc;
}

int
catalog_client_names_in(const Tabletfs__TableListReply *r, char ***namesp,
    size_t *countp)
{
	char **names;
	size_t n;

	if ((names = bt_calloc(r->n_names + 1, sizeof(*names))) == NULL)
		return -ENOMEM;
	for (n = 0; n < r->n_names; n++) {
		if ((names[n] = bt_strdup(r->names[n])) == NULL)
			goto out_free;
	}
	*namesp = names;
	*countp = n;
	return 0;
out_free:
	while (n > 0)
		bt_free(names[--n]);
	bt_free(names);
	return -ENOMEM;
}

int
catalog_client_tablets_in(const Tabletfs__CatalogTabletsReply *r,
    struct catalog_tablet **out, size_t *count)
{
	struct catalog_tablet *t = NULL;
	size_t n;
	int rc;

	if (r->n_tablets > 0 && (t = bt_calloc(r->n_tablets,
	    sizeof(*t))) == NULL)
		return -ENOMEM;
	for (n = 0; n < r->n_tablets; n++) {
		const Tabletfs__CatalogTablet *p = r->tablets[n];

		buf_init(&t[n].start);
		buf_init(&t[n].end);
		t[n].id = p->id;
		t[n].table_id = p->table_id;
		t[n].flushed_seq = p->flushed_seq;
		t[n].auto_split = p->auto_split;
		if ((rc = buf_set(&t[n].start, p->start.data,
		    p->start.len)) < 0 || (rc = buf_set(&t[n].end,
		    p->end.data, p->end.len)) < 0) {
			catalog_tablets_free(t, n + 1);
			return rc;
		}
	}
	*out = t;
	*count = n;
	return 0;
}

int
catalog_client_files_in(const Tabletfs__CatalogFilesReply *r,
    struct catalog_file **out, size_t *count)
{
	struct catalog_file *f = NULL;
	int rc;

	if (r->n_files > 0 && (f = bt_calloc(r->n_files, sizeof(*f))) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < r->n_files; i++) {
		const Tabletfs__CatalogFile *p = r->files[i];

		if ((rc = name_copy(f[i].group, sizeof(f[i].group), p->group,
		    "a file's group")) < 0) {
			bt_free(f);
			return rc;
		}
		f[i].number = p->number;
		f[i].tablet_id = p->tablet_id;
		f[i].size = p->size;
		f[i].entry_count = p->entry_count;
		f[i].max_seq = p->max_seq;
	}
	*out = f;
	*count = r->n_files;
	return 0;
}
