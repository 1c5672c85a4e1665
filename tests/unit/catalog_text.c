/*
 * catalog_text.c - catalog answers rendered as text (catalog_text.h).
 */
#include <inttypes.h>
#include <stdlib.h>

#include "api_util.h"
#include "catalog_text.h"
#include "util/alloc.h"

char *
catalog_table_text(int rc, const struct catalog_table *t)
{
	struct sbuf b = { 0 };

	sbuf_printf(&b, "rc %d\n", rc);
	if (rc != 0)
		return sbuf_take(&b);
	sbuf_printf(&b, "%" PRIu64 " %s size=%" PRIu64 " %u:%u:%o\n", t->id,
	    t->name, t->tablet_size, t->access.uid, t->access.gid,
	    t->access.mode);
	for (size_t i = 0; i < t->family_count; i++) {
		const struct catalog_family *f = &t->families[i];

		sbuf_printf(&b, "family %s group=%s gc=%s seq=%" PRIu64
		    " %u:%u:%o\n", f->name, f->group, f->gc_policy,
		    f->created_seq, f->access.uid, f->access.gid,
		    f->access.mode);
	}
	for (size_t i = 0; i < t->group_count; i++) {
		const struct catalog_group *g = &t->groups[i];

		sbuf_printf(&b, "group %s block=%u compress=%d bloom=%d "
		    "inmem=%d\n", g->name, g->block_size, g->compress,
		    g->bloom, g->in_memory);
	}
	return sbuf_take(&b);
}

char *
catalog_text_table(struct catalog *c, const char *name, uint64_t id)
{
	struct catalog_table *t = NULL;
	int rc = name != NULL ? catalog_table_get(c, name, &t) :
	    catalog_table_get_by_id(c, id, &t);
	char *s = catalog_table_text(rc, t);

	catalog_table_free(t);
	return s;
}

char *
catalog_text_tablets(struct catalog *c, uint64_t table_id, size_t *countp)
{
	struct catalog_tablet *t = NULL;
	struct sbuf b = { 0 };
	size_t n = 0;
	int rc = catalog_tablets_list(c, table_id, &t, &n);

	sbuf_printf(&b, "rc %d\n", rc);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		sbuf_printf(&b, "%" PRIu64 " of %" PRIu64 " [", t[i].id,
		    t[i].table_id);
		sbuf_escaped(&b, t[i].start.p, t[i].start.n);
		sbuf_printf(&b, ", ");
		sbuf_escaped(&b, t[i].end.p, t[i].end.n);
		sbuf_printf(&b, ") seq=%" PRIu64 " auto=%d\n",
		    t[i].flushed_seq, t[i].auto_split);
	}
	if (countp != NULL)
		*countp = rc == 0 ? n : 0;
	catalog_tablets_free(t, n);
	return sbuf_take(&b);
}

char *
catalog_text_files(struct catalog *c, uint64_t tablet_id, struct catalog_file *first)
{
	struct catalog_file *f = NULL;
	struct sbuf b = { 0 };
	size_t n = 0;
	int rc = catalog_files_list(c, tablet_id, &f, &n);

	sbuf_printf(&b, "rc %d\n", rc);
	for (size_t i = 0; rc == 0 && i < n; i++)
		sbuf_printf(&b, "%" PRIu64 " of %" PRIu64 " %s size=%" PRIu64
		    " entries=%" PRIu64 " max_seq=%" PRIu64 "\n", f[i].number,
		    f[i].tablet_id, f[i].group, f[i].size, f[i].entry_count,
		    f[i].max_seq);
	if (first != NULL && rc == 0 && n > 0)
		*first = f[0];
	bt_free(f);
	return sbuf_take(&b);
}

char *
catalog_text_names(struct catalog *c)
{
	struct sbuf b = { 0 };
	char **names = NULL;
	size_t n = 0;
	int rc = catalog_table_list(c, &names, &n);

	sbuf_printf(&b, "rc %d\n", rc);
	for (size_t i = 0; rc == 0 && i < n; i++)
		sbuf_printf(&b, "%s\n", names[i]);
	if (rc == 0)
		sbuf_printf(&b, "%s\n", names[n] == NULL ? "(end)" : "no end");
	for (size_t i = 0; rc == 0 && i < n; i++)
		bt_free(names[i]);
	bt_free(names);
	return sbuf_take(&b);
}

char *
catalog_text_state(struct catalog *c, uint64_t table_id)
{
	struct catalog_tablet *t = NULL;
	struct sbuf b = { 0 };
	size_t n = 0;
	char *part;

	part = catalog_text_tablets(c, table_id, NULL);
	sbuf_printf(&b, "%s", part);
	free(part);
	if (catalog_tablets_list(c, table_id, &t, &n) != 0)
		sbuf_printf(&b, "tablets_list failed\n");
	for (size_t i = 0; i < n; i++) {
		part = catalog_text_files(c, t[i].id, NULL);
		sbuf_printf(&b, "%s", part);
		free(part);
	}
	catalog_tablets_free(t, n);
	return sbuf_take(&b);
}
