/*
 * test_tabletd_balance.c - the master's plan of moves by load
 * (src/tabletd/tabletd_balance.c, its numbered rules), on rounds made up
 * here: live servers with the loads their SERVE replies would carry, and
 * the catalog's assignments.
 *
 * Proves: an idle cell is balanced by tablet count (rule 2); a busy one
 * with a rate not known waits (rule 3); one server carrying 40, 20, 20,
 * 20, 20 and 0 requests/s beside two idle ones gives them tablets until
 * each carries 40, planned on the loads the earlier moves leave, within
 * the bound on moves (rules 4, 5); loads within a fifth of the mean of
 * each other move nothing; a tablet does not go back to the server it
 * came from while it rests, but may go on to a third (rule 4); a tablet
 * that alone is more than a move could even out stays, logged and its
 * split asked of its server, once (rule 6).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tabletd/tabletd.h"
#include "tap.h"

#define SERVERS_MAX 4
#define TABLETS_MAX 16

static char logged[1024];
static int log_lines;

/* tabletd's own is main.c's: the last line, counted. */
void
tabletd_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(logged, sizeof(logged), fmt, ap);
	va_end(ap);
	log_lines++;
}

/* A round: servers S0..Sn-1, tablets 1..m each on a server with a rate
 * (a negative rate: not known). */
struct round {
	struct tabletd_live live[SERVERS_MAX];
	struct tabletd_tablet_load loads[SERVERS_MAX][TABLETS_MAX];
	Tabletfs__CatalogAssignment rows[TABLETS_MAX];
	Tabletfs__CatalogAssignment *ptrs[TABLETS_MAX];
	Tabletfs__CatalogAssignmentsReply all;
	struct tabletd_assign a;
};

static void
round_make(struct round *r, size_t servers, size_t tablets,
    const size_t *where, const double *rate)
{
	memset(r, 0, sizeof(*r));
	for (size_t k = 0; k < servers; k++) {
		snprintf(r->live[k].name, sizeof(r->live[k].name),
		    "127.0.0.1:700%zu#%zu", k, k + 1);
		r->live[k].loads = r->loads[k];
	}
	tabletfs__catalog_assignments_reply__init(&r->all);
	for (size_t i = 0; i < tablets; i++) {
		struct tabletd_live *l = &r->live[where[i]];

		tabletfs__catalog_assignment__init(&r->rows[i]);
		r->rows[i].table = "t";
		r->rows[i].tablet_id = i + 1;
		r->rows[i].server = l->name;
		r->ptrs[i] = &r->rows[i];
		l->loads[l->load_count++] = (struct tabletd_tablet_load){
			.tablet_id = i + 1, .known = rate[i] >= 0,
			.requests_per_s = rate[i] >= 0 ? rate[i] : 0,
			.memtable_bytes = 1000 * (i + 1),
		};
		l->tablets++;
	}
	r->all.tablets = r->ptrs;
	r->all.n_tablets = tablets;
	r->a.live = r->live;
	r->a.count = servers;
	r->a.spread = true;
}

/* The servers' loads once moves[0..n) are made. */
static void
loads_after(const struct round *r, const size_t *where, const double *rate,
    const struct tabletd_move *moves, size_t n, double *load)
{
	size_t w[TABLETS_MAX];

	memcpy(w, where, r->all.n_tablets * sizeof(*w));
	for (size_t i = 0; i < n; i++)
		w[moves[i].tablet] = moves[i].to;
	memset(load, 0, SERVERS_MAX * sizeof(*load));
	for (size_t i = 0; i < r->all.n_tablets; i++)
		load[w[i]] += rate[i];
}

int
main(void)
{
	static const size_t one[6] = { 0, 0, 0, 0, 0, 0 };
	static const double uneven[6] = { 40, 20, 20, 20, 20, 0 };
	struct tabletd_balance b;
	struct tabletd_move moves[4];
	struct round r;
	double load[SERVERS_MAX];
	bool back;
	size_t n;
	int64_t now = (int64_t)1000 * 1000000000;

	/* Rule 2: nothing served, or next to nothing. */
	{
		static const double idle[6] = { 1, 0, 0.5, 0, 0, 0 };

		memset(&b, 0, sizeof(b));
		round_make(&r, 3, 6, one, idle);
		is_int(tabletd_balance_plan(&b, &r.a, &r.all, now, moves, 4,
		    &n), TABLETD_BALANCE_COUNT, "an idle cell: by tablet "
		    "count");
		is_int(n, 0, "and no move by load");
	}
	/* Rule 3. */
	{
		static const double unknown[6] = { 40, 20, -1, 20, 20, 0 };

		memset(&b, 0, sizeof(b));
		round_make(&r, 3, 6, one, unknown);
		is_int(tabletd_balance_plan(&b, &r.a, &r.all, now, moves, 4,
		    &n), TABLETD_BALANCE_WAIT, "a busy cell with a rate not "
		    "known: it waits");
		is_int(n, 0, "no move");
	}
	/* Rules 4, 5: 120 requests/s on one server of three. */
	memset(&b, 0, sizeof(b));
	round_make(&r, 3, 6, one, uneven);
	is_int(tabletd_balance_plan(&b, &r.a, &r.all, now, moves, 4, &n),
	    TABLETD_BALANCE_LOAD, "a busy cell: by load");
	loads_after(&r, one, uneven, moves, n, load);
	ok(n == 3 && load[0] == 40 && load[1] == 40 && load[2] == 40,
	    "three moves leave 40 requests/s each (%zu moves: %g %g %g)", n,
	    load[0], load[1], load[2]);
	ok(n > 0 && moves[0].tablet == 0 && moves[0].from == 0,
	    "the first moves the 40 requests/s tablet, nearest half the gap");
	tabletd_balance_plan(&b, &r.a, &r.all, now, moves, 2, &n);
	is_int(n, 2, "no more moves than the bound");
	ok(strstr(logged, "load: ") != NULL, "the loads are logged (%s)",
	    logged);

	/* Within a fifth of the mean: no move. */
	{
		static const size_t spread[6] = { 0, 1, 1, 2, 2, 2 };
		static const double noisy[6] = { 43, 20, 17, 21, 19, 0 };

		memset(&b, 0, sizeof(b));
		round_make(&r, 3, 6, spread, noisy);
		is_int(tabletd_balance_plan(&b, &r.a, &r.all, now, moves, 4,
		    &n), TABLETD_BALANCE_LOAD, "balanced: by load");
		is_int(n, 0, "43, 37 and 40 requests/s: no move");
	}
	/* Rule 4: no move back while it rests; on to a third it may. */
	{
		static const size_t two[4] = { 0, 1, 1, 1 };
		static const double rates[4] = { 0, 30, 10, 10 };
		static const size_t three[3] = { 0, 1, 1 };
		static const double r3[3] = { 30, 20, 20 };

		/* Tablet 2 (index 1), 30 of S1's 50, would even S0 and S1
		 * out best, but came from S0. */
		memset(&b, 0, sizeof(b));
		round_make(&r, 2, 4, two, rates);
		tabletd_balance_moved(&b, 2, r.live[0].name, now);
		tabletd_balance_plan(&b, &r.a, &r.all, now + 1000000000,
		    moves, 4, &n);
		back = false;
		for (size_t i = 0; i < n; i++)
			back = back || moves[i].tablet == 1;
		ok(n >= 1 && !back, "a tablet just moved from S0 does not go "
		    "back to it; others go (%zu moves)", n);
		tabletd_balance_plan(&b, &r.a, &r.all, now +
		    (int64_t)31 * 1000000000, moves, 4, &n);
		ok(n >= 1 && moves[0].tablet == 1 && moves[0].to == 0,
		    "after its rest it may (%zu moves)", n);

		/* S0 30, S1 40 (20 + 20), S2 0: tablet 2 came from S0 and
		 * goes on to S2 (the cheaper flush of the two). */
		memset(&b, 0, sizeof(b));
		round_make(&r, 3, 3, three, r3);
		tabletd_balance_moved(&b, 2, r.live[0].name, now);
		tabletd_balance_plan(&b, &r.a, &r.all, now, moves, 4, &n);
		ok(n >= 1 && moves[0].tablet == 1 && moves[0].from == 1 &&
		    moves[0].to == 2,
		    "a tablet just moved goes on to a third server");
	}
	/* Rule 6. */
	{
		static const size_t hot_where[2] = { 0, 0 };
		static const double hot[2] = { 100, 0 };

		memset(&b, 0, sizeof(b));
		round_make(&r, 2, 2, hot_where, hot);
		log_lines = 0;
		tabletd_balance_plan(&b, &r.a, &r.all, now, moves, 4, &n);
		ok(n == 0 || moves[0].tablet != 0,
		    "a tablet of 100 requests/s against 0 is not moved");
		ok(strstr(logged, "no move evens that out") != NULL &&
		    b.split_wanted && b.split_tablet == 0 &&
		    b.split_server == 0, "it is logged and its split asked "
		    "of its server (%s)", logged);
		log_lines = 0;
		tabletd_balance_plan(&b, &r.a, &r.all, now, moves, 4, &n);
		is_int(log_lines, 0, "once");
		ok(!b.split_wanted, "and its split asked once");
	}
	return tap_done();
}
