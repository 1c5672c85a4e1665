/*
 * test_api_model.c - the store against a model of Bigtable's data model:
 * thousands of random row mutations (puts with client and server
 * timestamps, every kind of delete, several operations in one call) on a
 * small key space where timestamps collide, random reads and scans with
 * random filters compared with the model, and now and then a flush, a
 * compaction or a close and reopen.  The store lives on the local
 * filesystem (a mkdtemp directory) with a small memtable, so real files,
 * flushes and log replay are exercised.  Every other seed makes blocks
 * of 16 bytes, so that every entry is a block of its own (keys-only
 * reads then take value lengths from the SSTables' indexes).
 *
 * The model: every operation is an entry (row, family, qualifier, ts, seq,
 * kind), seq increasing per mutation call.  For a column, of the entries
 * of one timestamp that no column, family or row delete with a higher seq
 * masks, the one with the highest seq decides: a put is a version, a
 * version delete is none.  After every mutation, each version with at
 * least the family's maxversions newer versions is condemned, and stays
 * condemned: a flag on its entry, so that deleting newer versions never
 * brings it back, while deleted versions never count against older
 * ones.  The visible versions are those not condemned.  Flushes and
 * compactions, minor or major, never change what a read returns.
 *
 * TEST_MODEL_OPS=n sets the number of mutations (default 5000).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/tabletfs.h"
#include "util/env.h"
#include "api_util.h"

#define NROWS	20
#define NFAM	2
#define NQUAL	4
#define MAX_TS	12		/* client timestamps are 1..MAX_TS */
#define VAL_MAX	24
#define NSTAMPS	16		/* recent server stamps remembered */

/* Sorted, so that model order is index order. */
static const struct { const char *p; size_t n; } row_keys[NROWS] = {
	{ "\x00", 1 }, { "\x00\x01", 2 },
	{ "r00", 3 }, { "r01", 3 }, { "r02", 3 }, { "r03", 3 }, { "r04", 3 },
	{ "r05", 3 }, { "r06", 3 }, { "r07", 3 }, { "r08", 3 }, { "r09", 3 },
	{ "r10", 3 }, { "r11", 3 }, { "r12", 3 }, { "r13", 3 }, { "r14", 3 },
	{ "r15", 3 }, { "\xff", 1 }, { "\xff\xff", 2 },
};
static const char *const fam_names[NFAM] = { "a", "b" };
static const uint64_t fam_maxversions[NFAM] = { 0, 2 };	/* 0: never */
static const struct { const char *p; size_t n; } quals[NQUAL] = {
	{ "", 0 }, { "\x00", 1 }, { "q", 1 }, { "\xff\x01", 2 },
};

struct entry {
	int64_t ts;
	uint64_t seq;
	bool put;
	bool condemned;		/* a put that maxversions condemned */
	uint8_t len;
	char val[VAL_MAX];
};

struct column {
	struct entry *v;
	size_t n;
	size_t cap;
	uint64_t del_seq;
};

struct model {
	struct column col[NROWS][NFAM][NQUAL];
	uint64_t fam_del[NROWS][NFAM];
	uint64_t row_del[NROWS];
	uint64_t seq;
};

static void
column_add(struct column *c, const struct entry *e)
{
	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 8;
		if ((c->v = realloc(c->v, c->cap * sizeof(*c->v))) == NULL)
			tap_bail("out of memory");
	}
	c->v[c->n++] = *e;
}

static int
entry_cmp(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts > y->ts ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq > y->seq ? -1 : 1;
	return 0;
}

/* The visible versions of a column, newest first, into out (n entries). */
static size_t
model_visible(const struct model *m, int r, int f, int q, struct entry **out)
{
	const struct column *c = &m->col[r][f][q];
	uint64_t mask = m->row_del[r];
	struct entry *tmp;
	size_t i, n = 0, k = 0, index = 0;

	if (m->fam_del[r][f] > mask)
		mask = m->fam_del[r][f];
	if (c->del_seq > mask)
		mask = c->del_seq;
	tmp = xmalloc((c->n + 1) * sizeof(*tmp));
	for (i = 0; i < c->n; i++)
		if (c->v[i].seq > mask)
			tmp[n++] = c->v[i];
	qsort(tmp, n, sizeof(*tmp), entry_cmp);
	for (i = 0; i < n; i++) {
		if (i > 0 && tmp[i].ts == tmp[i - 1].ts)
			continue;	/* an older entry of the same time */
		if (!tmp[i].put || tmp[i].condemned)
			continue;
		if (fam_maxversions[f] != 0 && index >= fam_maxversions[f])
			tap_bail("model: a condemned version not flagged");
		index++;
		tmp[k++] = tmp[i];
	}
	*out = tmp;
	return k;
}

/* Flag the versions of row r that maxversions condemns now: those with at
 * least maxversions newer versions neither deleted nor condemned. */
static void
model_condemn(struct model *m, int r)
{
	for (int f = 0; f < NFAM; f++) {
		uint64_t mask = m->row_del[r], live;

		if (fam_maxversions[f] == 0)
			continue;
		if (m->fam_del[r][f] > mask)
			mask = m->fam_del[r][f];
		for (int q = 0; q < NQUAL; q++) {
			struct column *c = &m->col[r][f][q];
			uint64_t cmask = c->del_seq > mask ? c->del_seq : mask;

			if (c->n == 0)
				continue;	/* c->v is NULL */
			qsort(c->v, c->n, sizeof(*c->v), entry_cmp);
			live = 0;
			for (size_t i = 0; i < c->n; i++) {
				struct entry *e = &c->v[i];

				if (e->seq <= cmask || (i > 0 &&
				    e->ts == c->v[i - 1].ts) || !e->put ||
				    e->condemned)
					continue;
				if (live >= fam_maxversions[f])
					e->condemned = true;
				else
					live++;
			}
		}
	}
}

static void
model_free(struct model *m)
{
	int r, f, q;

	for (r = 0; r < NROWS; r++)
		for (f = 0; f < NFAM; f++)
			for (q = 0; q < NQUAL; q++)
				free(m->col[r][f][q].v);
}

/* ---- Reads ---- */

struct read_spec {
	struct bt_column cols[NFAM * NQUAL];
	bool fam_sel[NFAM];		/* whole family selected */
	bool col_sel[NFAM][NQUAL];	/* column selected */
	struct bt_read_options ro;
};

static bool
spec_selects(const struct read_spec *rs, int f, int q)
{
	if (rs->ro.column_count == 0)
		return true;
	return rs->fam_sel[f] || rs->col_sel[f][q];
}

/* Render what a read of row r with rs returns; false if nothing. */
static bool
model_row_text(const struct model *m, int r, const struct read_spec *rs,
    struct sbuf *b)
{
	const struct bt_read_options *ro = &rs->ro;
	struct entry *vis;
	bool any = false;
	size_t n, i, taken;
	int f, q;

	for (f = 0; f < NFAM; f++) {
		for (q = 0; q < NQUAL; q++) {
			if (!spec_selects(rs, f, q))
				continue;
			n = model_visible(m, r, f, q, &vis);
			taken = 0;
			for (i = 0; i < n; i++) {
				if (vis[i].ts < ro->min_ts)
					continue;
				if (ro->has_max_ts && vis[i].ts > ro->max_ts)
					continue;
				if (ro->cells_per_column != 0 &&
				    taken >= ro->cells_per_column)
					break;
				taken++;
				any = true;
				sbuf_printf(b, "%s:", fam_names[f]);
				sbuf_escaped(b, quals[q].p, quals[q].n);
				sbuf_printf(b, "@%" PRId64 "=", vis[i].ts);
				if (ro->keys_only)
					sbuf_printf(b, " size=%u", vis[i].len);
				else
					sbuf_escaped(b, vis[i].val, vis[i].len);
				sbuf_add(b, "\n", 1);
			}
			free(vis);
		}
	}
	return any;
}

static int64_t stamps[NSTAMPS];
static size_t nstamps;

static void
remember_stamp(int64_t s)
{
	stamps[nstamps % NSTAMPS] = s;
	nstamps++;
}

static int64_t
random_ts(uint64_t *rng)
{
	if (nstamps > 0 && tap_rand(rng) % 5 == 0)
		return stamps[tap_rand(rng) % (nstamps < NSTAMPS ? nstamps :
		    NSTAMPS)];
	return (int64_t)(tap_rand(rng) % (MAX_TS + 2));
}

static void
random_spec(uint64_t *rng, struct read_spec *rs)
{
	size_t k = 0;
	int i, nsel, f, q;

	memset(rs, 0, sizeof(*rs));
	if (tap_rand(rng) % 2 == 0) {
		nsel = 1 + (int)(tap_rand(rng) % 3);
		for (i = 0; i < nsel; i++) {
			f = (int)(tap_rand(rng) % NFAM);
			q = (int)(tap_rand(rng) % NQUAL);
			if (rs->fam_sel[f] || rs->col_sel[f][q])
				continue;
			if (tap_rand(rng) % 3 == 0) {
				/* A whole family: only if no column of it is
				 * selected yet (no overlapping filters). */
				bool overlap = false;

				for (int j = 0; j < NQUAL; j++)
					overlap |= rs->col_sel[f][j];
				if (overlap)
					continue;
				rs->fam_sel[f] = true;
				rs->cols[k++] = (struct bt_column){
					.family = fam_names[f] };
			} else {
				rs->col_sel[f][q] = true;
				rs->cols[k++] = (struct bt_column){
					.family = fam_names[f],
					.has_qualifier = true,
					.qualifier = btb(quals[q].p,
					    quals[q].n) };
			}
		}
		rs->ro.columns = rs->cols;
		rs->ro.column_count = k;
	}
	switch (tap_rand(rng) % 8) {
	case 0: rs->ro.cells_per_column = 1; break;
	case 1: rs->ro.cells_per_column = 2; break;
	case 2: rs->ro.cells_per_column = 3; break;
	default: break;
	}
	if (tap_rand(rng) % 4 == 0)
		rs->ro.min_ts = random_ts(rng);
	if (tap_rand(rng) % 4 == 0) {
		rs->ro.has_max_ts = true;
		rs->ro.max_ts = random_ts(rng);
	}
	rs->ro.keys_only = tap_rand(rng) % 10 == 0;
}

struct counters {
	long reads;
	long scans;
	long mismatches;
	long mut_errors;
};

static void
report_mismatch(struct counters *ct, const char *what, const char *got,
    const char *want)
{
	ct->mismatches++;
	if (ct->mismatches <= 3) {
		diag("mismatch: %s", what);
		diag_text("got", got);
		diag_text("want", want);
	}
}

static void
check_read(struct tstore *t, const struct model *m, int r,
    const struct read_spec *rs, struct counters *ct, const char *when)
{
	struct sbuf b = { 0 };
	char *got, *want;

	if (!model_row_text(m, r, rs, &b)) {
		sbuf_release(&b);
		sbuf_printf(&b, "NOTFOUND");
	}
	want = sbuf_take(&b);
	got = read_text(t->s, "m", btb(row_keys[r].p, row_keys[r].n), &rs->ro);
	ct->reads++;
	if (strcmp(got, want) != 0) {
		char what[160];

		snprintf(what, sizeof(what), "%s: read row %d (cols %zu, "
		    "cpc %u, min %" PRId64 ", max %s%" PRId64 ", keys %d)",
		    when, r, rs->ro.column_count, rs->ro.cells_per_column,
		    rs->ro.min_ts, rs->ro.has_max_ts ? "" : "none/",
		    rs->ro.max_ts, rs->ro.keys_only);
		report_mismatch(ct, what, got, want);
	}
	free(got);
	free(want);
}

static bool
has_prefix(int r, struct bt_bytes prefix)
{
	return row_keys[r].n >= prefix.size &&
	    memcmp(row_keys[r].p, prefix.data, prefix.size) == 0;
}

/* memcmp order of row r against bytes b. */
static int
row_cmp(int r, struct bt_bytes b)
{
	size_t n = row_keys[r].n < b.size ? row_keys[r].n : b.size;
	int c = n ? memcmp(row_keys[r].p, b.data, n) : 0;

	if (c != 0)
		return c;
	return row_keys[r].n < b.size ? -1 : row_keys[r].n > b.size;
}

static void
check_scan(struct tstore *t, const struct model *m, uint64_t *rng,
    bool random_range, struct counters *ct, const char *when)
{
	static const struct { const char *p; size_t n; } prefixes[] = {
		{ "r", 1 }, { "r0", 2 }, { "r1", 2 }, { "\x00", 1 },
		{ "\xff", 1 }, { "zz", 2 }, { "r07", 3 },
	};
	struct bt_scan_options so;
	struct read_spec rs;
	struct sbuf b = { 0 }, rowb = { 0 };
	uint64_t rows = 0;
	char *got, *want;
	int r;

	memset(&so, 0, sizeof(so));
	if (random_range) {
		random_spec(rng, &rs);
		switch (tap_rand(rng) % 4) {
		case 0:
			break;
		case 1: {
			size_t i = tap_rand(rng) %
			    (sizeof(prefixes) / sizeof(prefixes[0]));

			so.prefix = btb(prefixes[i].p, prefixes[i].n);
			break;
		}
		default:
			if (tap_rand(rng) % 3 != 0) {
				r = (int)(tap_rand(rng) % NROWS);
				so.start = btb(row_keys[r].p, row_keys[r].n);
				so.start_exclusive = tap_rand(rng) % 2;
			}
			if (tap_rand(rng) % 3 != 0) {
				r = (int)(tap_rand(rng) % NROWS);
				so.end = btb(row_keys[r].p, row_keys[r].n);
			}
			break;
		}
		if (tap_rand(rng) % 3 == 0)
			so.limit = 1 + tap_rand(rng) % 6;
	} else {
		memset(&rs, 0, sizeof(rs));
	}
	so.read = rs.ro;
	for (r = 0; r < NROWS; r++) {
		if (so.limit != 0 && rows >= so.limit)
			break;
		if (so.prefix.size > 0 && !has_prefix(r, so.prefix))
			continue;
		if (so.start.size > 0 && (so.start_exclusive ?
		    row_cmp(r, so.start) <= 0 : row_cmp(r, so.start) < 0))
			continue;
		if (so.end.size > 0 && row_cmp(r, so.end) >= 0)
			continue;
		if (!model_row_text(m, r, &rs, &rowb)) {
			sbuf_release(&rowb);
			continue;
		}
		sbuf_add(&b, "[", 1);
		sbuf_escaped(&b, row_keys[r].p, row_keys[r].n);
		sbuf_add(&b, "]\n", 2);
		sbuf_add(&b, rowb.p, rowb.n);
		sbuf_release(&rowb);
		rows++;
	}
	want = sbuf_take(&b);
	got = scan_text(t->s, "m", &so);
	ct->scans++;
	if (strcmp(got, want) != 0) {
		char what[200];

		snprintf(what, sizeof(what), "%s: scan (prefix %zu bytes, "
		    "start %zu%s, end %zu, limit %" PRIu64 ", cols %zu, "
		    "cpc %u, min %" PRId64 ", max %s%" PRId64 ")", when,
		    so.prefix.size, so.start.size,
		    so.start_exclusive ? " excl" : "", so.end.size, so.limit,
		    rs.ro.column_count, rs.ro.cells_per_column, rs.ro.min_ts,
		    rs.ro.has_max_ts ? "" : "none/", rs.ro.max_ts);
		report_mismatch(ct, what, got, want);
	}
	free(got);
	free(want);
}

/* Every row read whole, and a full scan. */
static void
check_everything(struct tstore *t, const struct model *m,
    struct counters *ct, const char *when)
{
	struct read_spec rs;
	int r;

	memset(&rs, 0, sizeof(rs));
	for (r = 0; r < NROWS; r++)
		check_read(t, m, r, &rs, ct, when);
	check_scan(t, m, NULL, false, ct, when);
}

/* ---- Mutations ---- */

struct op {
	struct bt_mutation m;
	int f, q;
	char val[VAL_MAX];
	uint8_t len;
};

static void
random_value(uint64_t *rng, long opno, struct op *o)
{
	int n;

	switch (tap_rand(rng) % 10) {
	case 0:
		o->len = 0;
		break;
	case 1:
		n = snprintf(o->val, sizeof(o->val), "b%ld", opno);
		o->val[n] = '\0';
		o->val[n + 1] = (char)0xff;
		o->len = (uint8_t)(n + 2);
		break;
	default:
		n = snprintf(o->val, sizeof(o->val), "v%ld", opno);
		o->len = (uint8_t)n;
		break;
	}
	o->m.value = btb(o->val, o->len);
}

/* One random operation on column (f, q) of a multi-op mutation. */
static void
random_column_op(uint64_t *rng, long opno, struct op *o, int f, int q,
    bool allow_server)
{
	unsigned k = (unsigned)(tap_rand(rng) % 10);

	memset(o, 0, sizeof(*o));
	o->f = f;
	o->q = q;
	o->m.family = fam_names[f];
	o->m.qualifier = btb(quals[q].p, quals[q].n);
	if (k < 6) {
		o->m.kind = BT_PUT;
		o->m.ts = allow_server && tap_rand(rng) % 5 == 0 ?
		    BT_TS_SERVER : 1 + (int64_t)(tap_rand(rng) % MAX_TS);
		random_value(rng, opno, o);
	} else if (k < 9) {
		o->m.kind = BT_DELETE_VERSION;
		o->m.ts = nstamps > 0 && tap_rand(rng) % 4 == 0 ?
		    stamps[(nstamps - 1) % NSTAMPS] :
		    1 + (int64_t)(tap_rand(rng) % MAX_TS);
	} else {
		o->m.kind = BT_DELETE_COLUMN;
	}
}

static size_t
random_mutation(uint64_t *rng, long opno, struct op *ops)
{
	unsigned k = (unsigned)(tap_rand(rng) % 100);
	bool used[NFAM][NQUAL] = { { false } };
	size_t n, i;
	int f, q;

	f = (int)(tap_rand(rng) % NFAM);
	q = (int)(tap_rand(rng) % NQUAL);
	if (k < 70) {
		random_column_op(rng, opno, &ops[0], f, q, true);
		return 1;
	}
	if (k < 76) {
		memset(&ops[0], 0, sizeof(ops[0]));
		ops[0].m.kind = BT_DELETE_FAMILY;
		ops[0].m.family = fam_names[f];
		ops[0].f = f;
		return 1;
	}
	if (k < 80) {
		memset(&ops[0], 0, sizeof(ops[0]));
		ops[0].m.kind = BT_DELETE_ROW;
		return 1;
	}
	/* Several operations on distinct columns; perhaps a family delete
	 * with no other operation in that family. */
	n = 2 + (size_t)(tap_rand(rng) % 3);
	for (i = 0; i < n; i++) {
		int tries = 0;

		do {
			f = (int)(tap_rand(rng) % NFAM);
			q = (int)(tap_rand(rng) % NQUAL);
		} while (used[f][q] && ++tries < 20);
		if (used[f][q])
			break;
		used[f][q] = true;
		random_column_op(rng, opno, &ops[i], f, q, true);
	}
	n = i;
	if (tap_rand(rng) % 4 == 0) {
		for (f = 0; f < NFAM; f++) {
			bool any = false;

			for (q = 0; q < NQUAL; q++)
				any |= used[f][q];
			if (!any) {
				memset(&ops[n], 0, sizeof(ops[n]));
				ops[n].m.kind = BT_DELETE_FAMILY;
				ops[n].m.family = fam_names[f];
				ops[n].f = f;
				n++;
				break;
			}
		}
	}
	return n;
}

static void
model_apply(struct model *m, int r, const struct op *ops, size_t n,
    int64_t stamp)
{
	struct entry e;
	size_t i;

	m->seq++;
	for (i = 0; i < n; i++) {
		const struct op *o = &ops[i];

		memset(&e, 0, sizeof(e));
		e.seq = m->seq;
		switch (o->m.kind) {
		case BT_PUT:
			e.ts = o->m.ts == BT_TS_SERVER ? stamp : o->m.ts;
			e.put = true;
			e.len = o->len;
			memcpy(e.val, o->val, o->len);
			column_add(&m->col[r][o->f][o->q], &e);
			break;
		case BT_DELETE_VERSION:
			e.ts = o->m.ts;
			column_add(&m->col[r][o->f][o->q], &e);
			break;
		case BT_DELETE_COLUMN:
			m->col[r][o->f][o->q].del_seq = m->seq;
			break;
		case BT_DELETE_FAMILY:
			m->fam_del[r][o->f] = m->seq;
			break;
		case BT_DELETE_ROW:
			m->row_del[r] = m->seq;
			break;
		}
	}
	model_condemn(m, r);
}

static long
env_long(const char *name, long dflt)
{
	const char *s = getenv(name);
	long v = s != NULL ? strtol(s, NULL, 0) : 0;

	return v > 0 ? v : dflt;
}

int
main(void)
{
	static const char *const fams[] = { "a", "b=maxversions=2", NULL };
	struct bt_options opts = { .memtable_size = 32 << 10 };
	struct model *m = calloc(1, sizeof(*m));
	struct counters ct = { 0 }, epoch0;
	struct tstore t;
	struct op ops[6];
	struct bt_mutation muts[6];
	struct read_spec rs;
	uint64_t seed = tap_seed(), rng = seed;
	long nops = env_long("TEST_MODEL_OPS", 5000), i;
	long next_maint = 200 + (long)(tap_rand(&rng) % 200);
	int epoch = 0, r, rc;
	char when[64];

	if (m == NULL)
		tap_bail("out of memory");
	tstore_posix(&t, &opts);
	must(make_table(t.s, "m", fams));
	if (tap_rand(&rng) % 2 == 0) {
		/* Blocks smaller than any entry: every entry is a block of
		 * its own, whose value length keys-only reads take from the
		 * index. */
		struct bt_group_spec g = { "default", 16, -1, -1, -1 };

		must(bt_group_set(t.s, "m", &g));
		diag("blocks of 16 bytes: an entry each");
	}
	epoch0 = ct;
	for (i = 0; i < nops; i++) {
		size_t n, j;
		int64_t stamp = -1;
		bool server = false;

		r = (int)(tap_rand(&rng) % NROWS);
		n = random_mutation(&rng, i, ops);
		for (j = 0; j < n; j++) {
			muts[j] = ops[j].m;
			server |= ops[j].m.kind == BT_PUT &&
			    ops[j].m.ts == BT_TS_SERVER;
		}
		rc = bt_mutate_row(t.s, "m", btb(row_keys[r].p, row_keys[r].n),
		    muts, n, NULL, &stamp);
		if (rc != 0) {
			ct.mut_errors++;
			if (ct.mut_errors <= 3)
				diag("op %ld: mutation failed: %s (%s)", i,
				    bt_strerror(rc), bt_error_detail());
		} else {
			if (server)
				remember_stamp(stamp);
			model_apply(m, r, ops, n, stamp);
		}

		/* A random read after most mutations. */
		snprintf(when, sizeof(when), "op %ld", i);
		if (tap_rand(&rng) % 4 != 0) {
			random_spec(&rng, &rs);
			check_read(&t, m, (int)(tap_rand(&rng) % NROWS), &rs,
			    &ct, when);
		}
		if (tap_rand(&rng) % 50 == 0)
			check_scan(&t, m, &rng, true, &ct, when);

		if (i + 1 == next_maint || i + 1 == nops) {
			const char *what = "none";

			switch (i + 1 == nops ? 3 : tap_rand(&rng) % 4) {
			case 0:
				what = "flush";
				rc = bt_store_flush(t.s);
				break;
			case 1:
				what = "minor compaction";
				rc = bt_store_compact(t.s, "m", false);
				break;
			case 2:
				what = "flush and major compaction";
				rc = bt_store_flush(t.s);
				if (rc == 0)
					rc = bt_store_compact(t.s, "m", true);
				break;
			default:
				what = "close and reopen";
				rc = tstore_reopen(&t);
				break;
			}
			snprintf(when, sizeof(when), "after %s at op %ld",
			    what, i);
			is_int(rc, 0, "epoch %d: %s at op %ld", epoch, what,
			    i);
			check_everything(&t, m, &ct, when);
			ok(ct.mismatches == epoch0.mismatches &&
			    ct.mut_errors == epoch0.mut_errors,
			    "epoch %d (to op %ld): %ld reads and %ld scans "
			    "match the model, mutations succeed", epoch, i,
			    ct.reads - epoch0.reads, ct.scans - epoch0.scans);
			epoch0 = ct;
			epoch++;
			next_maint = i + 1 + 200 + (long)(tap_rand(&rng) % 200);
		}
	}
	diag("%ld mutations, %ld reads, %ld scans, last seq %" PRIu64, nops,
	    ct.reads, ct.scans, m->seq);
	is_int(ct.mismatches, 0, "no read or scan differed from the model");
	is_int(ct.mut_errors, 0, "no mutation failed");
	tstore_destroy(&t);
	model_free(m);
	free(m);
	return tap_done();
}
