/*
 * server_read.c - the read path of the tablet server: point reads of a
 * row and scans over a table's tablets (server.h), each at the snapshot
 * of the mutations published to readers (docs/design.md section 7, W2).
 */
#include <assert.h>
#include <errno.h>

#include "server/server_int.h"
#include "util/alloc.h"
#include "util/error.h"

void
server_row_pool_init(struct server_row_pool *p)
{
	for (size_t i = 0; i < SERVER_ROW_POOL_SLOTS; i++) {
		atomic_flag_clear(&p->taken[i]);
		cells_row_init(&p->rows[i]);
	}
}

void
server_row_pool_release(struct server_row_pool *p)
{
	for (size_t i = 0; i < SERVER_ROW_POOL_SLOTS; i++)
		cells_row_release(&p->rows[i]);
}

struct cells_row *
server_row_pool_take(struct server_row_pool *p, struct cells_row *own)
{
	for (size_t i = 0; i < SERVER_ROW_POOL_SLOTS; i++)
		if (!atomic_flag_test_and_set_explicit(&p->taken[i],
		    memory_order_acquire))
			return &p->rows[i];
	cells_row_init(own);
	return own;
}

void
server_row_pool_give(struct server_row_pool *p, struct cells_row *r,
    struct cells_row *own)
{
	if (r == own) {
		cells_row_release(own);
		return;
	}
	assert(r >= p->rows && r < p->rows + SERVER_ROW_POOL_SLOTS);
	if (cells_row_memory(r) > SERVER_ROW_POOL_KEEP)
		cells_row_release(r);
	atomic_flag_clear_explicit(&p->taken[r - p->rows],
	    memory_order_release);
}

int
server_table_read_row(struct server *s, struct server_table *t,
    struct slice row, const struct cells_filter *filter,
    struct cells_row *out)
{
	/* The snapshot before the map: a tablet that came later by a split
	 * holds everything up to it, a tablet the split replaced too. */
	uint64_t snapshot = atomic_load(&s->visible_seq);
	struct tablet_map *m = server_table_map(t);
	int rc;

	rc = tablet_read_row(server_tablet_map_find(m, row), snapshot, row,
	    TABLET_NOW_UNREAD, filter, out);
	server_tablet_map_unref(m);
	return rc;
}

int
server_read_row(struct server *s, struct server_table *t, uint64_t tablet,
    struct slice row, const struct cells_filter *filter,
    struct cells_row *out)
{
	int rc;

	if (row.n == 0 || row.n > SERVER_MAX_ROW) {
		rc = bt_error_set(-EINVAL, "row key of %zu bytes", row.n);
	} else {
		/* As server_table_read_row(), with one look at the map for the
		 * staleness check and the read. */
		uint64_t snapshot = atomic_load(&s->visible_seq);
		struct tablet_map *m = server_table_map(t);
		struct tablet *tab = server_tablet_map_find(m, row);

		if (tablet != 0 && tablet_id(tab) != tablet)
			rc = BT_STALE;
		else
			rc = tablet_read_row(tab, snapshot, row,
			    TABLET_NOW_UNREAD, filter, out);
		if (rc >= 0)
			tablet_request_note(tab, row);
		server_tablet_map_unref(m);
	}
	atomic_fetch_add(&s->reads, 1);
	return rc;
}

/* A scan walks the table's tablets in row order, one at a time, from the
 * map current when it opened (its tablets stay readable after a split). */
struct server_scan {
	struct server *s;
	struct server_table *t;
	struct tablet_map *map;
	size_t next_tablet;
	struct tablet_scan *cur;
	uint64_t snapshot;
	int64_t now;
	const struct cells_filter *filter;
	struct buf start;
	bool start_exclusive;
	struct buf end;
};

/* Open the scan of the next tablet that overlaps [start, end). */
static int
scan_next_tablet(struct server_scan *sc)
{
	while (sc->next_tablet < sc->map->count) {
		struct tablet *tab = sc->map->tablets[sc->next_tablet++];
		struct slice first = tablet_start(tab), last = tablet_end(tab);

		if (sc->end.n > 0 && first.n > 0 &&
		    slice_compare(first, buf_slice(&sc->end)) >= 0)
			break;
		if (sc->start.n > 0 && last.n > 0 &&
		    slice_compare(last, buf_slice(&sc->start)) <= 0)
			continue;
		tablet_request_note(tab, (struct slice){ NULL, 0 });
		return tablet_scan_open(tab, sc->snapshot,
		    buf_slice(&sc->start), sc->start_exclusive,
		    buf_slice(&sc->end), sc->now, sc->filter, &sc->cur);
	}
	return BT_DONE;
}

int
server_scan_open(struct server *s, const char *table, struct slice start,
    bool start_exclusive, struct slice end, const struct cells_filter *filter,
    struct server_scan **out)
{
	struct server_scan *sc;
	uint64_t id;
	int rc;

	if ((sc = bt_calloc(1, sizeof(*sc))) == NULL)
		return -ENOMEM;
	buf_init(&sc->start);
	buf_init(&sc->end);
	sc->s = s;
	if ((rc = server_table_ref(s, table, &sc->t, &id)) < 0)
		goto out_free;
	/* The snapshot before the map, as in server_table_read_row(). */
	sc->snapshot = atomic_load(&s->visible_seq);
	sc->map = server_table_map(sc->t);
	/* Skip the tablets before start. */
	if (start.n > 0)
		sc->next_tablet = server_tablet_map_index(sc->map, start);
	sc->now = server_now(s);
	sc->filter = filter;
	sc->start_exclusive = start_exclusive;
	if ((rc = buf_set(&sc->start, start.p, start.n)) < 0 ||
	    (rc = buf_set(&sc->end, end.p, end.n)) < 0)
		goto out_free;
	*out = sc;
	return 0;
out_free:
	server_scan_close(sc);
	return rc;
}

int
server_scan_next(struct server_scan *sc, struct cells_row *out)
{
	int rc;

	for (;;) {
		if (sc->cur == NULL && (rc = scan_next_tablet(sc)) != 0)
			return rc;
		if ((rc = tablet_scan_next(sc->cur, out)) != BT_DONE)
			return rc;
		tablet_scan_close(sc->cur);
		sc->cur = NULL;
	}
}

void
server_scan_close(struct server_scan *sc)
{
	if (sc == NULL)
		return;
	tablet_scan_close(sc->cur);
	server_tablet_map_unref(sc->map);
	server_table_unref(sc->t);
	buf_release(&sc->start);
	buf_release(&sc->end);
	bt_free(sc);
}
