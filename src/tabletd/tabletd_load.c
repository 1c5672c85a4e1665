/*
 * tabletd_load.c - a tablet server's window on the load of its tablets
 * (docs/design.md section 5, "Balancing by load"), reported to the
 * master in every SERVE reply.
 *
 * The request path only counts (tablet_request_note(): one relaxed
 * atomic add per request on the tablet, no lock).  About once a second
 * the server's main loop samples every count (server_tablets_load())
 * and turns the differences into rates: each new second's rate is
 * averaged with the one before (an exponential average halving every
 * second), so that the figure follows a change of load within a few
 * seconds yet one burst does not swing it.  A tablet is given a rate
 * only once it has been watched for a whole second here: one just given
 * to this server is reported without one, and the master waits for it
 * before it balances by load again.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rpc/tabletfs.pb-c.h"
#include "server/server.h"
#include "tabletd/tabletd.h"
#include "util/alloc.h"

/* One tablet as the window last saw it. */
struct tabletd_load_entry {
	uint64_t tablet_id;
	uint64_t requests;	/* the count at the last sample */
	double rate;		/* requests per second; valid if has_rate */
	bool has_rate;
	uint64_t memtable_bytes;
	uint64_t sstable_bytes;
};

int
tabletd_load_window_init(struct tabletd_load_window *w)
{
	memset(w, 0, sizeof(*w));
	return mutex_init(&w->mu);
}

void
tabletd_load_window_release(struct tabletd_load_window *w)
{
	bt_free(w->entries);
	mutex_destroy(&w->mu);
}

/* The entry of tablet id in the window before, or NULL; hint is where
 * to look first (tablets come in the same order each sample). */
static const struct tabletd_load_entry *
entry_find(const struct tabletd_load_window *w, uint64_t id, size_t hint)
{
	if (hint < w->count && w->entries[hint].tablet_id == id)
		return &w->entries[hint];
	for (size_t i = 0; i < w->count; i++)
		if (w->entries[i].tablet_id == id)
			return &w->entries[i];
	return NULL;
}

int
tabletd_load_window_sample(struct tabletd_load_window *w,
    const struct server_tablet_load *list, size_t count, int64_t now_ns)
{
	struct tabletd_load_entry *next;
	double dt;

	if ((next = bt_calloc(count + 1, sizeof(*next))) == NULL)
		return -ENOMEM;
	mutex_lock(&w->mu);
	dt = (double)(now_ns - w->sampled_ns) / 1e9;
	for (size_t i = 0; i < count; i++) {
		const struct tabletd_load_entry *old = entry_find(w,
		    list[i].tablet_id, i);
		struct tabletd_load_entry *e = &next[i];

		e->tablet_id = list[i].tablet_id;
		e->requests = list[i].requests;
		e->memtable_bytes = list[i].memtable_bytes;
		e->sstable_bytes = list[i].sstable_bytes;
		/* A count below the last is a tablet opened here anew. */
		if (old == NULL || old->requests > e->requests || dt <= 0)
			continue;
		e->rate = (double)(e->requests - old->requests) / dt;
		if (old->has_rate)
			e->rate = (e->rate + old->rate) / 2;
		e->has_rate = true;
	}
	bt_free(w->entries);
	w->entries = next;
	w->count = count;
	w->sampled_ns = now_ns;
	mutex_unlock(&w->mu);
	return 0;
}

int
tabletd_load_window_report(struct tabletd_load_window *w,
    Tabletfs__ServeReply *out)
{
	Tabletfs__TabletLoad *loads, **ptrs;
	int rc = 0;

	mutex_lock(&w->mu);
	loads = calloc(w->count + 1, sizeof(*loads));
	ptrs = calloc(w->count + 1, sizeof(*ptrs));
	if (loads == NULL || ptrs == NULL || w->count == 0) {
		free(loads);
		free(ptrs);
		rc = w->count == 0 ? 0 : -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < w->count; i++) {
		const struct tabletd_load_entry *e = &w->entries[i];

		tabletfs__tablet_load__init(&loads[i]);
		loads[i].has_tablet_id = true;
		loads[i].tablet_id = e->tablet_id;
		loads[i].has_requests_per_s = e->has_rate;
		loads[i].requests_per_s = e->rate;
		loads[i].has_memtable_bytes = true;
		loads[i].memtable_bytes = e->memtable_bytes;
		loads[i].has_sstable_bytes = true;
		loads[i].sstable_bytes = e->sstable_bytes;
		ptrs[i] = &loads[i];
	}
	out->tablets = ptrs;
	out->n_tablets = w->count;
out:
	mutex_unlock(&w->mu);
	return rc;
}

void
tabletd_load_report_free(Tabletfs__ServeReply *out)
{
	if (out->n_tablets > 0) {
		free(out->tablets[0]);	/* the array of every entry */
		free(out->tablets);
	}
	out->tablets = NULL;
	out->n_tablets = 0;
}
