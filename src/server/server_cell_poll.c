/*
 * server_cell_poll.c - a cell's tablet server with a remote catalog
 * learns of the schema changes the root's server makes (docs/design.md
 * section 5, "Tablets one by one"): about once a second its background
 * thread asks the catalog's schema version (CATALOG_SCHEMA_VERSION),
 * which every schema change raises, and when it moved reads every table
 * it knows again (server_cell_table_sync()): families dropped, GC
 * policies, groups and access take effect, and a table dropped there is
 * discarded here.  The version is asked before the tables are read, so
 * that a change made while they are read moves it again and the next
 * poll reads them once more.  The poll runs before the background
 * round's work_mu, on no writer's path; one RPC a second is its cost
 * while nothing changes.
 */
#include <assert.h>
#include <errno.h>

#include "server/server_int.h"
#include "util/error.h"

/* The background thread polls at most this often (microseconds), a
 * little under its one-second timer so that each timed round polls. */
#define POLL_INTERVAL_USEC	900000

void
server_cell_poll_init(struct server *s)
{
	mutex_init(&s->poll_mu);
	s->poll_version = 0;
	s->poll_last = 0;
	atomic_init(&s->poll_stale, false);
}

void
server_cell_poll_release(struct server *s)
{
	mutex_destroy(&s->poll_mu);
}

/* Read every table this server knows again; the first error. */
static int
tables_sync(struct server *s)
{
	struct server_table **tables;
	size_t count;
	int rc, first = 0;

	if ((rc = server_tables_snapshot(s, &tables, &count)) < 0)
		return rc;
	for (size_t i = 0; i < count; i++)
		if ((rc = server_cell_table_sync(s, tables[i])) < 0 &&
		    first == 0)
			first = rc;
	server_tables_snapshot_free(tables, count);
	return first;
}

/* One poll; caller holds poll_mu. */
static int
poll_locked(struct server *s)
{
	uint64_t version = 0;
	bool stale;
	int rc;

	mutex_assert_held(&s->poll_mu);
	s->poll_last = server_now(s);
	/* Taken before the version is read: a flush that finds its tablet
	 * gone after this asks again. */
	stale = atomic_exchange(&s->poll_stale, false);
	if ((rc = catalog_schema_version(s->catalog, &version)) < 0)
		goto out;
	if (version == s->poll_version && !stale)
		return 0;
	if ((rc = tables_sync(s)) < 0)
		goto out;
	s->poll_version = version;
	return 0;
out:
	if (stale)
		atomic_store(&s->poll_stale, true);
	return rc;
}

int
server_schema_poll(struct server *s)
{
	int rc;

	mutex_assert_not_held(&s->work_mu);
	if (!s->catalog_remote)
		return 0;
	mutex_lock(&s->poll_mu);
	rc = poll_locked(s);
	mutex_unlock(&s->poll_mu);
	return rc;
}

void
server_cell_poll_tick(struct server *s)
{
	if (!s->catalog_remote)
		return;
	mutex_lock(&s->poll_mu);
	/* Its failure (the root away or moving) is tried again at the next
	 * tick; the version is not taken meanwhile. */
	if (atomic_load(&s->poll_stale) ||
	    server_now(s) - s->poll_last >= POLL_INTERVAL_USEC)
		(void)poll_locked(s);
	mutex_unlock(&s->poll_mu);
}

void
server_cell_poll_note(struct server *s, int rc)
{
	if (rc == -ENOENT && s->catalog_remote)
		atomic_store(&s->poll_stale, true);
}
