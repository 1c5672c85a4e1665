/*
 * tabletd_balance.c - the master's balancing of a spread cell by load
 * (docs/design.md section 5, "Balancing by load").  Each round the
 * servers' SERVE replies say what each tablet costs them
 * (tabletd_load.c); this file decides which tablets move, and
 * tabletd_assign.c moves them (UNLOAD, the catalog, LOAD).
 *
 * The rules, cited by number:
 *
 * 1. Load is requests per second.  A server's load is the sum of the
 *    rates of the tablets the catalog assigns to it, as that server
 *    reports them.  Bytes (memtable, SSTable) are reported too but not
 *    balanced: the SSTables are in shared storage, which no move
 *    relieves; the memtable bytes are what a move costs (its pre-move
 *    flush), so among equal moves the one with the fewest goes.
 * 2. An idle cell (all servers together under BALANCE_BUSY_RPS) is
 *    balanced by tablet count, as before load was reported: a cell with
 *    nothing to measure still spreads its tablets.
 * 3. A busy cell with a tablet whose rate is not known yet (it just
 *    moved, or its server just started watching it) waits: no move by
 *    load or by count, so that no decision rests on a figure that is
 *    not there.  A move thus makes the next one wait a window.
 * 4. Hysteresis: a server gives the idlest one a tablet only while
 *    their loads differ by more than BALANCE_ACT of the mean load, and
 *    only by a move that narrows their difference by at least
 *    BALANCE_GAIN of the mean (the tablet whose rate is nearest half
 *    the difference); the busiest server gives first, and the next
 *    busiest when none of its tablets would do.  A tablet moved does
 *    not go back to the server it came from for BALANCE_REST_NS (on to
 *    a third it may, as servers join one after another).  So the noise
 *    of the rates does not move tablets, and no tablet goes back and
 *    forth.
 * 5. At most max moves a round (ASSIGN_MOVES_PER_ROUND), each planned on
 *    the loads as the moves before it leave them.
 * 6. A tablet too hot for any move to help (its rate alone at least the
 *    difference, so that moving it only swaps which server is busiest,
 *    and above the mean load, so that wherever it goes its server is
 *    over the mean: noise in the rates does not make one) is left,
 *    logged, and split by its server at the middle row of its recent
 *    requests (b->split_wanted; tabletd_assign.c sends the SPLIT); its
 *    halves are new tablets, whose rates the next rounds wait for and
 *    then move, or split again while still above the mean.  Once per
 *    tablet per BALANCE_HOT_NS: a split its server refuses (too few
 *    requests sampled yet, or all of one row) is tried again then.
 * No move is planned while a server is silent: tabletd_assign.c does
 * not call this then.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tabletd/tabletd.h"

/* Rule 2: below this many requests per second in all, the cell is idle. */
#define BALANCE_BUSY_RPS 5.0
/* Rule 4. */
#define BALANCE_ACT 0.2
#define BALANCE_GAIN 0.1
#define BALANCE_REST_NS ((int64_t)30 * 1000000000)
/* Rule 6: how long before a hot tablet is logged and split again. */
#define BALANCE_HOT_NS ((int64_t)10 * 1000000000)
/* How often the loads are logged while the cell is busy. */
#define BALANCE_LOG_NS ((int64_t)10 * 1000000000)

static const struct tabletd_tablet_load *
load_find(const struct tabletd_live *l, uint64_t tablet)
{
	for (size_t i = 0; i < l->load_count; i++)
		if (l->loads[i].tablet_id == tablet)
			return &l->loads[i];
	return NULL;
}

static size_t
live_index(const struct tabletd_assign *a, const char *name)
{
	for (size_t i = 0; i < a->count; i++)
		if (strcmp(a->live[i].name, name) == 0)
			return i;
	return SIZE_MAX;
}

/* Whether tablet came from server to lately (rule 4). */
static bool
resting(const struct tabletd_balance *b, uint64_t tablet, const char *to,
    int64_t now_ns)
{
	for (size_t i = 0; i < b->resting_count; i++)
		if (b->resting[i].tablet_id == tablet &&
		    now_ns - b->resting[i].moved_ns < BALANCE_REST_NS &&
		    strcmp(b->resting[i].from, to) == 0)
			return true;
	return false;
}

void
tabletd_balance_moved(struct tabletd_balance *b, uint64_t tablet,
    const char *from, int64_t now_ns)
{
	size_t slot = 0;

	/* The slot of tablet, a free one, or the oldest. */
	for (size_t i = 0; i < b->resting_count; i++) {
		if (b->resting[i].tablet_id == tablet) {
			slot = i;
			goto set;
		}
		if (b->resting[i].moved_ns < b->resting[slot].moved_ns)
			slot = i;
	}
	if (b->resting_count < TABLETD_BALANCE_RESTING)
		slot = b->resting_count++;
set:
	b->resting[slot].tablet_id = tablet;
	b->resting[slot].moved_ns = now_ns;
	snprintf(b->resting[slot].from, sizeof(b->resting[slot].from), "%s",
	    from);
}

/* Log each server's load, at most every BALANCE_LOG_NS or when told. */
static void
loads_log(struct tabletd_balance *b, const struct tabletd_assign *a,
    const double *load, int64_t now_ns, bool now)
{
	char line[1024];
	size_t n = 0;

	if (now_ns - b->logged_ns < (now ? 1 : BALANCE_LOG_NS))
		return;		/* now: unless this plan logged them already */
	b->logged_ns = now_ns;
	line[0] = '\0';
	for (size_t k = 0; k < a->count && n < sizeof(line); k++)
		n += (size_t)snprintf(line + n, sizeof(line) - n, "%s%s %.1f/s",
		    k ? ", " : "", a->live[k].name, load[k]);
	tabletd_log("load: %s", line);
}

/* The planning of tabletd_balance_plan(), on its scratch: per tablet,
 * its rate, its server's index in a->live and whether it moved. */
struct plan {
	double *load;		/* per live server */
	double *rate;
	size_t *where;
	bool *moved;
};

static double
distance(double x)
{
	return x < 0 ? -x : x;
}

/* The tablet of live server hi to move to lo to even out their
 * difference (rule 4), or SIZE_MAX; *hottest the hottest tablet of hi. */
static size_t
plan_pick(const struct tabletd_balance *b, const struct tabletd_assign *a,
    const Tabletfs__CatalogAssignmentsReply *all, const struct plan *p,
    size_t hi, size_t lo, double mean, int64_t now_ns, size_t *hottest)
{
	double gap = p->load[hi] - p->load[lo];
	size_t pick = SIZE_MAX;
	uint64_t pick_bytes = 0;
	double best = 0;

	*hottest = SIZE_MAX;
	for (size_t i = 0; i < all->n_tablets; i++) {
		const struct tabletd_tablet_load *tl;
		double after;

		if (p->where[i] != hi || p->moved[i])
			continue;
		if (*hottest == SIZE_MAX || p->rate[i] > p->rate[*hottest])
			*hottest = i;
		if (resting(b, all->tablets[i]->tablet_id, a->live[lo].name,
		    now_ns))
			continue;
		after = distance(gap - 2 * p->rate[i]);
		if (after > gap - BALANCE_GAIN * mean)
			continue;
		tl = load_find(&a->live[hi], all->tablets[i]->tablet_id);
		/* Nearest half the gap; then the cheapest flush (rule 1). */
		if (pick == SIZE_MAX || after < best ||
		    (after == best && tl->memtable_bytes < pick_bytes)) {
			pick = i;
			best = after;
			pick_bytes = tl->memtable_bytes;
		}
	}
	return pick;
}

/* Rule 6: the busiest server hi (SIZE_MAX: none to even out) could
 * give lo nothing; when its hottest tablet alone is more than their
 * difference and than the mean, say so and ask for its split. */
static void
hot_note(struct tabletd_balance *b, const struct tabletd_assign *a,
    const Tabletfs__CatalogAssignmentsReply *all, const struct plan *p,
    size_t hi, size_t lo, size_t hottest, double mean, int64_t now_ns)
{
	const Tabletfs__CatalogAssignment *t;

	if (hi == SIZE_MAX || hottest == SIZE_MAX ||
	    p->rate[hottest] < p->load[hi] - p->load[lo] ||
	    p->rate[hottest] <= mean)
		return;
	t = all->tablets[hottest];
	if (b->hot_logged == t->tablet_id && now_ns - b->hot_ns <
	    BALANCE_HOT_NS)
		return;
	b->hot_logged = t->tablet_id;
	b->hot_ns = now_ns;
	tabletd_log("tablet %" PRIu64 " of %s carries %.1f of %s's %.1f "
	    "requests/s: no move evens that out; splitting it",
	    t->tablet_id, t->table, p->rate[hottest], a->live[hi].name,
	    p->load[hi]);
	b->split_wanted = true;
	b->split_tablet = hottest;
	b->split_server = hi;
}

enum tabletd_balance_by
tabletd_balance_plan(struct tabletd_balance *b,
    const struct tabletd_assign *a,
    const Tabletfs__CatalogAssignmentsReply *all, int64_t now_ns,
    struct tabletd_move *moves, size_t max, size_t *count)
{
	enum tabletd_balance_by by = TABLETD_BALANCE_WAIT;
	struct plan p;
	double total = 0, mean;
	bool unknown = false;

	*count = 0;
	b->split_wanted = false;
	p.load = calloc(a->count + 1, sizeof(*p.load));
	p.rate = calloc(all->n_tablets + 1, sizeof(*p.rate));
	p.where = calloc(all->n_tablets + 1, sizeof(*p.where));
	p.moved = calloc(all->n_tablets + 1, sizeof(*p.moved));
	if (p.load == NULL || p.rate == NULL || p.where == NULL ||
	    p.moved == NULL)
		goto out;	/* no memory: no move this round */
	for (size_t i = 0; i < all->n_tablets; i++) {
		const Tabletfs__CatalogAssignment *t = all->tablets[i];
		const struct tabletd_tablet_load *tl;

		p.where[i] = live_index(a, t->server != NULL ? t->server : "");
		if (p.where[i] == SIZE_MAX)
			continue;
		tl = load_find(&a->live[p.where[i]], t->tablet_id);
		if (tl == NULL || !tl->known) {
			unknown = true;
			continue;
		}
		p.rate[i] = tl->requests_per_s;
		p.load[p.where[i]] += p.rate[i];
		total += p.rate[i];
	}
	if (total < BALANCE_BUSY_RPS) {			/* rule 2 */
		by = TABLETD_BALANCE_COUNT;
		goto out;
	}
	if (unknown)					/* rule 3 */
		goto out;
	by = TABLETD_BALANCE_LOAD;
	mean = total / (double)a->count;
	loads_log(b, a, p.load, now_ns, false);
	while (*count < max) {				/* rule 5 */
		size_t hi = SIZE_MAX, lo = 0, pick = SIZE_MAX, hottest;
		size_t first = SIZE_MAX, first_hottest = SIZE_MAX;

		for (size_t k = 1; k < a->count; k++)
			if (p.load[k] < p.load[lo])
				lo = k;
		/* The busiest first, then the next (rule 4). */
		for (size_t tried = 0; tried < a->count && pick == SIZE_MAX;
		    tried++) {
			size_t next = SIZE_MAX;

			for (size_t k = 0; k < a->count; k++)
				if (k != lo && (hi == SIZE_MAX ||
				    p.load[k] < p.load[hi] ||
				    (p.load[k] == p.load[hi] && k > hi)) &&
				    (next == SIZE_MAX ||
				    p.load[k] > p.load[next]))
					next = k;
			if (next == SIZE_MAX ||
			    p.load[next] - p.load[lo] <= BALANCE_ACT * mean)
				break;
			hi = next;
			pick = plan_pick(b, a, all, &p, hi, lo, mean, now_ns,
			    &hottest);
			if (first == SIZE_MAX) {
				first = hi;
				first_hottest = hottest;
			}
		}
		if (pick == SIZE_MAX) {
			hot_note(b, a, all, &p, first, lo, first_hottest,
			    mean, now_ns);
			break;
		}
		if (*count == 0)	/* the loads measured, before moves */
			loads_log(b, a, p.load, now_ns, true);
		moves[(*count)++] = (struct tabletd_move){ .tablet = pick,
		    .from = hi, .to = lo, .requests_per_s = p.rate[pick] };
		p.moved[pick] = true;
		p.where[pick] = lo;
		p.load[hi] -= p.rate[pick];
		p.load[lo] += p.rate[pick];
	}
out:
	free(p.load);
	free(p.rate);
	free(p.where);
	free(p.moved);
	return by;
}
