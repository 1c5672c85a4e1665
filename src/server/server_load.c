/*
 * server_load.c - what each tablet served here costs, for the master's
 * balancing by load (server.h, server_tablets_load(); docs/design.md
 * section 5, "Balancing by load"): the requests each tablet has served
 * since it was opened here, and the bytes it holds in memory and on
 * disk.  The counts grow on the request path (tablet_request_note(), an
 * atomic add); reading them takes no lock a request takes.
 */
#include <errno.h>
#include <inttypes.h>

#include "server/server.h"
#include "server/server_int.h"
#include "util/alloc.h"
#include "util/error.h"

/* Append the served tablets of t to *list (room for them made). */
static int
table_load_add(struct server_table *t, struct server_tablet_load **list,
    size_t *count, size_t *cap)
{
	struct tablet_map *m = server_table_map(t);
	struct server_tablet_load *grown;
	struct tablet_stats st;
	int rc = 0;

	for (size_t i = 0; i < m->count; i++) {
		struct tablet *tab = m->tablets[i];

		if (!tablet_serving(tab))
			continue;
		if (*count == *cap) {
			size_t n = *cap ? *cap * 2 : 16;

			if ((grown = bt_realloc(*list, n * sizeof(*grown))) ==
			    NULL) {
				rc = -ENOMEM;
				break;
			}
			*list = grown;
			*cap = n;
		}
		tablet_get_stats(tab, &st);
		(*list)[(*count)++] = (struct server_tablet_load){
			.table_id = t->id,
			.tablet_id = tablet_id(tab),
			.requests = st.requests,
			.memtable_bytes = st.memtable_bytes,
			.sstable_bytes = st.data_bytes,
		};
	}
	server_tablet_map_unref(m);
	return rc;
}

int
server_tablets_load(struct server *s, struct server_tablet_load **out,
    size_t *count)
{
	struct server_table **tables;
	struct server_tablet_load *list = NULL;
	size_t n_tables, n = 0, cap = 0;
	int rc;

	*out = NULL;
	*count = 0;
	if ((rc = server_tables_snapshot(s, &tables, &n_tables)) < 0)
		return rc;
	for (size_t i = 0; i < n_tables && rc == 0; i++)
		rc = table_load_add(tables[i], &list, &n, &cap);
	server_tables_snapshot_free(tables, n_tables);
	if (rc < 0) {
		bt_free(list);
		return rc;
	}
	*out = list;
	*count = n;
	return 0;
}

int
server_tablet_split_row(struct server *s, const char *table, uint64_t id,
    struct buf *row)
{
	struct server_table *t;
	struct tablet_map *m;
	int rc = BT_ENOTSERVING;

	if ((rc = server_table_lookup(s, table, &t)) < 0)
		return rc;
	m = server_table_map(t);
	rc = BT_ENOTSERVING;
	for (size_t i = 0; i < m->count; i++)
		if (tablet_id(m->tablets[i]) == id &&
		    tablet_serving(m->tablets[i]))
			rc = tablet_request_split_row(m->tablets[i], row);
	server_tablet_map_unref(m);
	server_table_unref(t);
	if (rc == BT_ENOTSERVING)
		rc = bt_error_set(rc, "table %s: tablet %" PRIu64 " is not "
		    "served here", table, id);
	else if (rc == BT_NOTFOUND)
		rc = bt_error_set(rc, "table %s: tablet %" PRIu64 ": its "
		    "requests give no row to split at", table, id);
	return rc;
}
