/*
 * test_api_recovery.c - crash recovery through the public API, with the
 * in-memory fault env.  A crash is simulated by making every further file
 * operation fail, closing the handle, and dropping what was not synced
 * (power loss).  After each reopen: every mutation acknowledged as durable
 * (written with sync, under sync_always, or before a successful flush) is
 * there exactly once with its exact value and timestamp; the mutations that
 * survive are a prefix of those written, each whole (row atomicity);
 * nothing unknown or torn appears; and the store takes writes again.
 * Crash points are random (seeded), including right after a flush, in the
 * middle of a flush, of a compaction and of a synced write, with a small
 * memtable so background flushes are under way too.
 *
 * Also: a clean close keeps everything, unsynced writes included, even if
 * the power goes right after; the store lock refuses a second open; a
 * read-only open refuses writes; a flipped byte in an SSTable is reported,
 * never returned as data; server stamps given before a crash stay below
 * those given after it, though the clock went back ten seconds (a
 * server of a cell taking over from one whose clock was ahead).
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

#define NROWS	40
#define NQUALS	3
#define MAX_OPS	3
#define MAX_MUTS 8000

enum mut_state { PENDING, COMMITTED, LOST };

struct mut_rec {
	int row;
	int nops;
	int q[MAX_OPS];
	int64_t ts[MAX_OPS];
	char val[MAX_OPS][40];
	enum mut_state state;
};

struct history {
	struct mut_rec *m;
	int n;			/* mutations written (attempted) */
	int round_first;	/* first mutation of the current round */
	int durable;		/* mutations [round_first, durable) must survive */
	int64_t next_ts;
	uint64_t rng;
	unsigned char seen[MAX_MUTS][MAX_OPS];
};

static void
row_name(int r, char *buf, size_t size)
{
	snprintf(buf, size, "row%03d", r);
}

static const char *const qual_names[NQUALS] = { "", "q1", "q\x00" "2" };
static const size_t qual_lens[NQUALS] = { 0, 2, 3 };

/*
 * Write one random mutation (1-3 puts on one row, some with server
 * stamps).  Returns the call's result; the mutation is recorded either
 * way, since a failed call may still have reached the log.
 */
static int
write_one(struct tstore *t, struct history *h, bool sync)
{
	struct bt_mutation muts[MAX_OPS];
	struct bt_write_options w = { .sync = sync };
	struct mut_rec *m;
	char row[16];
	int64_t stamp = -1;
	bool server = false, used[NQUALS] = { false };
	int i, rc;

	if (h->n >= MAX_MUTS)
		tap_bail("too many mutations");
	m = &h->m[h->n];
	memset(m, 0, sizeof(*m));
	m->row = (int)(tap_rand(&h->rng) % NROWS);
	m->nops = 1 + (int)(tap_rand(&h->rng) % MAX_OPS);
	for (i = 0; i < m->nops; i++) {
		do
			m->q[i] = (int)(tap_rand(&h->rng) % NQUALS);
		while (used[m->q[i]]);
		used[m->q[i]] = true;
		if (tap_rand(&h->rng) % 6 == 0) {
			m->ts[i] = BT_TS_SERVER;
			server = true;
		} else {
			m->ts[i] = h->next_ts++;
		}
		snprintf(m->val[i], sizeof(m->val[i]), "m%d.%d.%08" PRIx64,
		    h->n, i, tap_rand(&h->rng) & 0xffffffff);
		muts[i] = (struct bt_mutation){
			.kind = BT_PUT, .family = "f",
			.qualifier = btb(qual_names[m->q[i]], qual_lens[m->q[i]]),
			.ts = m->ts[i], .value = bts(m->val[i]),
		};
	}
	row_name(m->row, row, sizeof(row));
	rc = bt_mutate_row(t->s, "t", bts(row), muts, (size_t)m->nops, &w,
	    &stamp);
	for (i = 0; i < m->nops; i++)
		if (m->ts[i] == BT_TS_SERVER)
			m->ts[i] = stamp;
	if (server && rc == 0 && stamp < 0)
		diag("mutation %d: no stamp returned", h->n);
	m->state = PENDING;
	h->n++;
	return rc;
}

static int
qual_index(struct bt_bytes q)
{
	int i;

	for (i = 0; i < NQUALS; i++)
		if (bytes_eq(q, btb(qual_names[i], qual_lens[i])))
			return i;
	return -1;
}

/*
 * Read the whole table and compare it with the history.  The round's
 * mutations that survived become COMMITTED, the others LOST.
 */
static void
verify(struct tstore *t, struct history *h, const char *label)
{
	struct bt_scan_options so = { 0 };
	struct bt_scan *sc = NULL;
	struct bt_row *r;
	long unknown = 0, wrong = 0, dups = 0, lost = 0, resurrected = 0;
	long torn = 0, holes = 0, cells = 0;
	int rc, i, j, k = -1, first_absent = -1;
	char row[16];

	memset(h->seen, 0, sizeof(h->seen));
	rc = bt_scan_open(t->s, "t", &so, &sc);
	is_int(rc, 0, "%s: scan opens", label);
	while (rc == 0) {
		r = NULL;
		rc = bt_scan_next(sc, &r);
		if (rc != 0)
			break;
		for (size_t c = 0; c < r->cell_count; c++) {
			const struct bt_cell *cell = &r->cells[c];
			char val[48];
			int mi = -1, oi = -1, q;

			cells++;
			snprintf(val, sizeof(val), "%.*s",
			    (int)(cell->value.size < 47 ? cell->value.size : 47),
			    (const char *)cell->value.data);
			if (sscanf(val, "m%d.%d.", &mi, &oi) != 2 || mi < 0 ||
			    mi >= h->n || oi < 0 || oi >= h->m[mi].nops) {
				if (unknown++ < 3)
					diag("%s: unknown cell value '%s'",
					    label, val);
				continue;
			}
			row_name(h->m[mi].row, row, sizeof(row));
			q = qual_index(cell->qualifier);
			/* A server stamp is unknown (-1) when the call
			 * failed: it may still have reached the log. */
			if (!bytes_eq(r->key, bts(row)) ||
			    strcmp(cell->family, "f") != 0 ||
			    q != h->m[mi].q[oi] || (cell->ts != h->m[mi].ts[oi] &&
			    !(h->m[mi].ts[oi] < 0 && cell->ts > 0)) ||
			    !bytes_eq(cell->value, bts(h->m[mi].val[oi]))) {
				if (wrong++ < 3)
					diag("%s: mutation %d op %d comes back "
					    "wrong (ts %" PRId64 " want %"
					    PRId64 ")", label, mi, oi, cell->ts,
					    h->m[mi].ts[oi]);
				continue;
			}
			if (h->seen[mi][oi]++ > 0)
				dups++;
		}
		bt_row_free(r);
	}
	is_int(rc, BT_DONE, "%s: the scan reads to the end without error",
	    label);
	bt_scan_close(sc);

	for (i = 0; i < h->n; i++) {
		int present = 0;

		for (j = 0; j < h->m[i].nops; j++)
			present += h->seen[i][j] != 0;
		if (h->m[i].state == COMMITTED && present != h->m[i].nops) {
			if (lost++ < 3)
				diag("%s: committed mutation %d lost", label, i);
		} else if (h->m[i].state == LOST && present != 0) {
			if (resurrected++ < 3)
				diag("%s: lost mutation %d came back", label,
				    i);
		} else if (h->m[i].state == PENDING) {
			if (present != 0 && present != h->m[i].nops) {
				if (torn++ < 3)
					diag("%s: mutation %d torn: %d of %d "
					    "puts", label, i, present,
					    h->m[i].nops);
			}
			if (present == 0 && first_absent < 0)
				first_absent = i;
			if (present != 0 && first_absent >= 0) {
				if (holes++ < 3)
					diag("%s: mutation %d survived but %d "
					    "before it did not", label, i,
					    first_absent);
			}
		}
	}
	k = first_absent < 0 ? h->n : first_absent;
	diag("%s: %ld cells; round mutations %d..%d, durable to %d, "
	    "survived to %d", label, cells, h->round_first, h->n, h->durable,
	    k);
	ok(unknown == 0 && wrong == 0 && dups == 0,
	    "%s: every cell is a written put, exact, once (%ld unknown, "
	    "%ld wrong, %ld duplicated)", label, unknown, wrong, dups);
	ok(lost == 0 && resurrected == 0,
	    "%s: earlier rounds intact (%ld lost, %ld resurrected)", label,
	    lost, resurrected);
	ok(torn == 0 && holes == 0,
	    "%s: survivors are whole mutations and a prefix (%ld torn, "
	    "%ld after a hole)", label, torn, holes);
	ok(k >= h->durable, "%s: every durable mutation survived "
	    "(survived to %d, durable to %d)", label, k, h->durable);

	/* Each row also reads back alone, without error. */
	for (i = 0; i < NROWS; i++) {
		struct bt_row *one = NULL;

		row_name(i, row, sizeof(row));
		rc = bt_read_row(t->s, "t", bts(row), NULL, &one);
		if (rc == 0)
			bt_row_free(one);
		else if (rc != BT_NOTFOUND)
			break;
	}
	ok(i == NROWS, "%s: every row reads without error", label);

	for (i = h->round_first; i < h->n; i++) {
		int present = 0;

		for (j = 0; j < h->m[i].nops; j++)
			present += h->seen[i][j] != 0;
		h->m[i].state = present != 0 ? COMMITTED : LOST;
	}
	h->round_first = h->durable = h->n;
}

static void
faults_arm_all(struct env *env)
{
	env_fault_fail_after(env, ENV_FAULT_APPEND, 1, -EIO, true);
	env_fault_fail_after(env, ENV_FAULT_SYNC, 1, -EIO, true);
	env_fault_fail_after(env, ENV_FAULT_OPEN, 1, -EIO, true);
	env_fault_fail_after(env, ENV_FAULT_RENAME, 1, -EIO, true);
}

static void
faults_disarm(struct env *env)
{
	env_fault_fail_after(env, ENV_FAULT_APPEND, 0, 0, false);
	env_fault_fail_after(env, ENV_FAULT_SYNC, 0, 0, false);
	env_fault_fail_after(env, ENV_FAULT_OPEN, 0, 0, false);
	env_fault_fail_after(env, ENV_FAULT_RENAME, 0, 0, false);
}

/*
 * Power loss now; then reopen (with sync_always as given).  With torn,
 * the disk wrote unsynced pages out of order: each survives or not.
 */
static void
crash_and_reopen(struct tstore *t, bool sync_always, uint64_t torn,
    const char *label)
{
	int rc;

	faults_arm_all(t->env);
	rc = bt_store_close(t->s);
	if (rc != 0)
		diag("%s: close during the crash: %s", label, bt_strerror(rc));
	t->s = NULL;
	if (torn != 0)
		env_fault_drop_unsynced_torn(t->env, torn);
	else
		env_fault_drop_unsynced(t->env);
	faults_disarm(t->env);
	t->opts.sync_always = sync_always;
	rc = bt_store_open(t->path, &t->opts, &t->s);
	is_int(rc, 0, "%s: the store opens after the crash", label);
	if (rc != 0) {
		diag("open: %s (%s)", bt_strerror(rc), bt_error_detail());
		t->s = NULL;
		tap_bail("cannot reopen after a crash");
	}
}

/* Write n mutations, a fraction of them synced. */
static void
write_some(struct tstore *t, struct history *h, int n, unsigned sync_pct)
{
	int i, rc;
	bool sync;

	for (i = 0; i < n; i++) {
		sync = tap_rand(&h->rng) % 100 < sync_pct;
		rc = write_one(t, h, sync);
		if (rc != 0) {
			ok(false, "mutation %d fails: %s (%s)", h->n - 1,
			    bt_strerror(rc), bt_error_detail());
			return;
		}
		if (sync || t->opts.sync_always)
			h->durable = h->n;
	}
}

static void
test_crash_rounds(uint64_t seed)
{
	static const char *const fams[] = { "f", NULL };
	static const enum env_fault_op fault_ops[] = {
		ENV_FAULT_APPEND, ENV_FAULT_SYNC, ENV_FAULT_OPEN,
		ENV_FAULT_RENAME,
	};
	struct bt_options opts = { .memtable_size = 8 << 10 };
	struct history *h = calloc(1, sizeof(*h));
	struct tstore t;
	char label[64];
	bool sync_always = false;
	int round, rc;

	if (h == NULL || (h->m = calloc(MAX_MUTS, sizeof(*h->m))) == NULL)
		tap_bail("out of memory");
	h->rng = seed;
	h->next_ts = 1;
	tstore_fault(&t, &opts);
	must(make_table(t.s, "t", fams));

	for (round = 0; round < 14; round++) {
		int kind = round < 7 ? round : (int)(tap_rand(&h->rng) % 7);
		int n = 20 + (int)(tap_rand(&h->rng) % 150);

		switch (kind) {
		case 0:		/* a random point among writes */
			snprintf(label, sizeof(label), "round %d (writes)",
			    round);
			write_some(&t, h, n, 20);
			break;
		case 1:		/* right after a flush */
			snprintf(label, sizeof(label), "round %d (after flush)",
			    round);
			write_some(&t, h, n, 5);
			rc = bt_store_flush(t.s);
			is_int(rc, 0, "%s: flush", label);
			if (rc == 0)
				h->durable = h->n;
			if (tap_rand(&h->rng) % 2)
				write_some(&t, h, 1 + n / 4, 0);
			break;
		case 2:		/* in the middle of a major compaction */
			snprintf(label, sizeof(label),
			    "round %d (during compaction)", round);
			write_some(&t, h, n, 10);
			if (bt_store_flush(t.s) == 0)
				h->durable = h->n;
			write_some(&t, h, n, 10);
			if (bt_store_flush(t.s) == 0)
				h->durable = h->n;
			env_fault_fail_after(t.env,
			    fault_ops[tap_rand(&h->rng) % 4],
			    1 + (long)(tap_rand(&h->rng) % 6), -EIO, true);
			rc = bt_store_compact(t.s, "t", true);
			diag("%s: compaction returned %d", label, rc);
			break;
		case 3:		/* in the middle of a flush */
			snprintf(label, sizeof(label),
			    "round %d (during flush)", round);
			write_some(&t, h, n, 10);
			env_fault_fail_after(t.env,
			    fault_ops[tap_rand(&h->rng) % 4],
			    1 + (long)(tap_rand(&h->rng) % 4), -EIO, true);
			rc = bt_store_flush(t.s);
			diag("%s: flush returned %d", label, rc);
			if (rc == 0)
				h->durable = h->n;
			break;
		case 4:		/* a synced write fails */
			snprintf(label, sizeof(label),
			    "round %d (failed sync)", round);
			env_fault_fail_after(t.env, ENV_FAULT_SYNC,
			    1 + (long)(tap_rand(&h->rng) % 8), -EIO, true);
			for (int i = 0; i < n; i++) {
				if (write_one(&t, h, true) != 0)
					break;
				h->durable = h->n;
			}
			break;
		case 5:		/* sync_always */
			snprintf(label, sizeof(label),
			    "round %d (sync_always)", round);
			if (!t.opts.sync_always) {
				t.opts.sync_always = true;
				h->durable = h->n;	/* a clean close */
				is_int(tstore_reopen(&t), 0,
				    "%s: clean close before", label);
				verify(&t, h, label);
			}
			write_some(&t, h, n / 3, 0);
			break;
		default:	/* a random point among many small writes,
				   flushes under way */
			snprintf(label, sizeof(label),
			    "round %d (background flushes)", round);
			write_some(&t, h, 3 * n, 2);
			break;
		}
		sync_always = tap_rand(&h->rng) % 4 == 0;
		/* Every other round, unsynced pages land out of order. */
		if (round % 2 == 1)
			strncat(label, ", torn", sizeof(label) -
			    strlen(label) - 1);
		crash_and_reopen(&t, sync_always, round % 2 == 1 ?
		    tap_rand(&h->rng) | 1 : 0, label);
		verify(&t, h, label);

		/* It takes writes again, and they survive the next crash. */
		rc = write_one(&t, h, true);
		is_int(rc, 0, "%s: a synced write after recovery", label);
		if (rc == 0)
			h->durable = h->n;
	}

	/* A clean close keeps everything, even without syncs. */
	t.opts.sync_always = false;
	is_int(tstore_reopen(&t), 0, "clean: close");
	verify(&t, h, "clean reopen");
	write_some(&t, h, 300, 0);
	is_int(bt_store_close(t.s), 0, "clean: close after unsynced writes");
	t.s = NULL;
	h->durable = h->n;
	env_fault_drop_unsynced(t.env);
	must(bt_store_open(t.path, &t.opts, &t.s));
	verify(&t, h, "clean close then power loss");

	tstore_destroy(&t);
	free(h->m);
	free(h);
}

static void
test_lock(void)
{
	struct bt_store *second = NULL;
	struct tstore t;
	int rc;

	tstore_fault(&t, NULL);
	rc = bt_store_open(t.path, &t.opts, &second);
	is_int(rc, -EWOULDBLOCK,
	    "lock: a second open of the same store is -EWOULDBLOCK");
	if (rc == 0)
		bt_store_close(second);
	else
		diag("detail: %s", bt_error_detail());
	is_int(bt_store_create(t.path, &t.opts), -EEXIST,
	    "lock: creating a store over one is -EEXIST");
	is_int(bt_store_close(t.s), 0, "lock: close");
	t.s = NULL;
	second = NULL;
	is_int(bt_store_open(t.path, &t.opts, &second), 0,
	    "lock: after the close the store opens again");
	bt_store_close(second);
	tstore_destroy(&t);

	tstore_posix(&t, NULL);
	second = NULL;
	rc = bt_store_open(t.path, &t.opts, &second);
	is_int(rc, -EWOULDBLOCK,
	    "lock (posix): a second open is -EWOULDBLOCK");
	if (rc == 0)
		bt_store_close(second);
	is_int(bt_store_create(t.path, &t.opts), -EEXIST,
	    "lock (posix): creating a store over one is -EEXIST");
	is_int(tstore_reopen(&t), 0, "lock (posix): close and reopen");
	tstore_destroy(&t);
}

/* A store that bt_store_create made, directory and all, survives a
 * power loss right after the create and after its first synced write. */
static void
test_create_durable(void)
{
	static const char *const fams[] = { "f", NULL };
	struct bt_options opts = { 0 };
	struct bt_mutation m = {
		.kind = BT_PUT, .family = "f", .qualifier = { "q", 1 },
		.ts = 5, .value = { "v", 1 },
	};
	struct bt_write_options w = { .sync = true };
	struct bt_store *s = NULL;
	struct env *env = NULL;
	int rc;

	if (env_fault_new(&env) != 0)
		tap_bail("env_fault_new");
	opts.env = env;
	is_int(bt_store_create("/fresh", &opts), 0, "create: a new store");
	env_fault_drop_unsynced(env);
	rc = bt_store_open("/fresh", &opts, &s);
	is_int(rc, 0, "create: the new store survives a power loss "
	    "right after the create (%s)", rc ? bt_error_detail() : "");
	if (rc == 0) {
		rc = make_table(s, "t", fams);
		is_int(rc, 0, "create: a table");
		is_int(bt_mutate_row(s, "t", bts("r"), &m, 1, &w, NULL), 0,
		    "create: a synced write");
		faults_arm_all(env);
		bt_store_close(s);
		s = NULL;
		env_fault_drop_unsynced(env);
		faults_disarm(env);
		rc = bt_store_open("/fresh", &opts, &s);
		is_int(rc, 0, "create: opens after a power loss (%s)",
		    rc ? bt_error_detail() : "");
		if (rc == 0)
			is_text(read_text_str(s, "t", "r", NULL), "f:q@5=v\n",
			    "create: the table and the synced write survive");
		bt_store_close(s);
	}
	env_free(env);
}

/* A flush or compaction that cannot write says so; the data stays safe
 * in the log. */
static void
test_maintenance_errors(void)
{
	static const char *const fams[] = { "f", NULL };
	static const struct {
		enum env_fault_op op;
		const char *name;
	} faults[] = {
		{ ENV_FAULT_APPEND, "append" }, { ENV_FAULT_SYNC, "sync" },
		{ ENV_FAULT_OPEN, "open" }, { ENV_FAULT_RENAME, "rename" },
	};
	struct bt_write_options w = { .sync = true };
	struct tstore t;
	char row[16];
	int i, k, rc;

	for (k = 0; k < 4; k++) {
		tstore_fault(&t, NULL);
		must(make_table(t.s, "t", fams));
		/* Two SSTables, then more in the memtable. */
		for (i = 0; i < 120; i++) {
			struct bt_mutation m = {
				.kind = BT_PUT, .family = "f",
				.qualifier = { "q", 1 }, .ts = 1,
				.value = { "v", 1 },
			};

			snprintf(row, sizeof(row), "row%03d", i);
			must(bt_mutate_row(t.s, "t", bts(row), &m, 1,
			    i == 119 ? &w : NULL, NULL));
			if (i == 49 || i == 99)
				must(bt_store_flush(t.s));
		}
		env_fault_fail_after(t.env, faults[k].op, 1, -EIO, true);
		rc = bt_store_flush(t.s);
		ok(rc < 0, "errors: a flush whose %s fails returns an error "
		    "(got %d)", faults[k].name, rc);
		rc = bt_store_compact(t.s, NULL, true);
		ok(rc < 0, "errors: so does a major compaction (got %d)", rc);
		crash_and_reopen(&t, false, 0, "errors");
		{
			struct bt_scan_options so = { 0 };
			struct sbuf want = { 0 };
			char *wt;

			for (i = 0; i < 120; i++)
				sbuf_printf(&want, "[row%03d]\nf:q@1=v\n", i);
			wt = sbuf_take(&want);
			is_text(scan_text(t.s, "t", &so), wt,
			    "errors: after a crash every row is there, up to "
			    "the last synced write (%s fault)",
			    faults[k].name);
			free(wt);
		}
		tstore_destroy(&t);
	}
}

static void
test_read_only(void)
{
	static const char *const fams[] = { "f", NULL };
	struct bt_options ro_opts;
	struct tstore t;
	int rc;

	tstore_fault(&t, NULL);
	must(make_table(t.s, "t", fams));
	must(put_str(t.s, "t", "r", "f", "q", 1, "v"));
	is_int(bt_store_close(t.s), 0, "read-only: close");
	t.s = NULL;
	ro_opts = t.opts;
	ro_opts.read_only = true;
	rc = bt_store_open(t.path, &ro_opts, &t.s);
	is_int(rc, 0, "read-only: open");
	if (rc != 0) {
		t.s = NULL;
		tstore_destroy(&t);
		return;
	}
	is_text(read_text_str(t.s, "t", "r", NULL), "f:q@1=v\n",
	    "read-only: reads work");
	is_int(put_str(t.s, "t", "r", "f", "q", 2, "w"), -EROFS,
	    "read-only: a put is -EROFS");
	is_int(bt_table_create(t.s, "u", NULL, 0, NULL, 0, 0), -EROFS,
	    "read-only: a table create is -EROFS");
	is_text(read_text_str(t.s, "t", "r", NULL), "f:q@1=v\n",
	    "read-only: nothing changed");
	tstore_destroy(&t);
}

struct flip_ctx {
	struct env *env;
	int files;
};

static int
flip_sst(void *arg, const char *name)
{
	struct flip_ctx *c = arg;
	char path[256];
	size_t len = strlen(name);
	uint64_t size = 0;

	if (len < 4 || strcmp(name + len - 4, ".sst") != 0)
		return 0;
	snprintf(path, sizeof(path), "/store/sst/%s", name);
	if (env_path_size(c->env, path, &size) == 0 && size > 64 &&
	    env_fault_flip_byte(c->env, path, 20, 0x5a) == 0)
		c->files++;
	return 0;
}

static void
test_flipped_byte(void)
{
	static const char *const fams[] = { "f", NULL };
	struct bt_group_spec nocompress = {
		.name = "default", .compress = 0, .bloom = -1, .in_memory = -1,
	};
	struct flip_ctx fc = { 0 };
	struct tstore t;
	char row[16], val[64];
	long errors = 0, wrong = 0, good = 0;
	int i, rc;

	tstore_fault(&t, NULL);
	must(make_table(t.s, "t", fams));
	rc = bt_group_set(t.s, "t", &nocompress);
	if (rc != 0)
		diag("setgroup compress=0: %s", bt_strerror(rc));
	for (i = 0; i < 200; i++) {
		snprintf(row, sizeof(row), "row%03d", i);
		snprintf(val, sizeof(val), "value of row %03d", i);
		must(put_str(t.s, "t", row, "f", "q", 1, val));
	}
	is_int(bt_store_flush(t.s), 0, "flip: flush");
	is_int(bt_store_compact(t.s, NULL, true), 0, "flip: major compaction");
	is_int(bt_store_close(t.s), 0, "flip: close");
	t.s = NULL;
	fc.env = t.env;
	env_dir_list(t.env, "/store/sst", flip_sst, &fc);
	ok(fc.files > 0, "flip: flipped a byte in %d sstable(s)", fc.files);
	rc = bt_store_open(t.path, &t.opts, &t.s);
	if (rc != 0) {
		ok(rc < 0, "flip: the open reports the damage (%s)",
		    bt_strerror(rc));
		t.s = NULL;
		tstore_destroy(&t);
		return;
	}
	for (i = 0; i < 200; i++) {
		struct bt_row *r = NULL;

		snprintf(row, sizeof(row), "row%03d", i);
		snprintf(val, sizeof(val), "value of row %03d", i);
		rc = bt_read_row(t.s, "t", bts(row), NULL, &r);
		if (rc < 0) {
			errors++;
		} else if (rc == BT_NOTFOUND) {
			wrong++;
		} else {
			if (r->cell_count == 1 && r->cells[0].ts == 1 &&
			    bytes_eq(r->cells[0].value, bts(val)))
				good++;
			else
				wrong++;
			bt_row_free(r);
		}
	}
	diag("flip: %ld rows read, %ld errors, %ld wrong", good, errors,
	    wrong);
	is_int(wrong, 0, "flip: damaged data is never returned as data");
	ok(errors > 0, "flip: the damage is reported as an error");
	tstore_destroy(&t);
}

/* One synced server-stamped put of value to row; its stamp. */
static int64_t
put_stamped(struct tstore *t, const char *row, struct bt_bytes value)
{
	struct bt_mutation m = { BT_PUT, "f", { (const uint8_t *)"q", 1 },
	    BT_TS_SERVER, value };
	struct bt_write_options w = { .sync = true };
	int64_t stamp = -1;

	must(bt_mutate_row(t->s, "t", bts(row), &m, 1, &w, &stamp));
	return stamp;
}

#define CLOCK_AHEAD	1800000000000000ll	/* early 2027, in micros */
#define CLOCK_BACK	(10 * 1000000ll)

/*
 * Server stamps at a clock ten seconds ahead, a crash, and a stamp at
 * the clock set back: above them all.  With flushed, the writes fill
 * more than a log segment and are flushed, so that their segment is
 * deleted, and the process dies (every file operation fails from then
 * on, nothing is lost): the replay finds none of their stamps.  (After
 * a power loss instead, the segment's unsynced deletion would be undone
 * and its records replayed.)
 */
static void
test_clock_back(bool flushed, const char *label)
{
	const char *const fams[] = { "f", NULL };
	size_t size = flushed ? 64 * 1024 : 8;
	int64_t before = 0, after;
	struct bt_row *r = NULL;
	struct tstore t;
	uint8_t *value = xmalloc(size);
	char row[16];

	memset(value, 'v', size);
	tstore_fault(&t, NULL);
	must(make_table(t.s, "t", fams));
	env_fault_set_clock(t.env, CLOCK_AHEAD);
	for (int i = 0; i < 20; i++) {
		int64_t stamp;

		snprintf(row, sizeof(row), "r%02d", i);
		stamp = put_stamped(&t, row, btb(value, size));
		if (stamp > before)
			before = stamp;
	}
	env_fault_set_clock(t.env, CLOCK_AHEAD - CLOCK_BACK);
	if (flushed) {
		must(bt_store_flush(t.s));
		faults_arm_all(t.env);
		(void)bt_store_close(t.s);
		faults_disarm(t.env);
		must(bt_store_open(t.path, &t.opts, &t.s));
	} else {
		crash_and_reopen(&t, false, 0, label);
	}
	after = put_stamped(&t, "r00", bts("after"));
	ok(after > before, "%s: a stamp after the crash (%" PRId64 ") is "
	    "above every one before it (%" PRId64 ")", label, after, before);
	must(bt_read_row(t.s, "t", bts("r00"), NULL, &r));
	ok(r->cell_count == 2 && bytes_eq(r->cells[0].value, bts("after")),
	    "%s: the newest version is the write after the crash", label);
	bt_row_free(r);
	free(value);
	tstore_destroy(&t);
}

int
main(void)
{
	uint64_t seed = tap_seed();

	test_lock();
	test_create_durable();
	test_maintenance_errors();
	test_read_only();
	test_crash_rounds(seed);
	test_flipped_byte();
	test_clock_back(false, "clock back");
	test_clock_back(true, "clock back, log collected, killed");
	return tap_done();
}
