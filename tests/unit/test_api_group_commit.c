/*
 * test_api_group_commit.c - group commit through the public API, in the
 * in-memory fault env with a slow disk (each sync takes SYNC_DELAY_US).
 *
 * Many threads write synced puts at once (some threads unsynced puts
 * among them).  Proves: synced writes share fdatasyncs (far fewer syncs
 * than synced writes); and durability is kept under batching: the power
 * goes (every further write and sync fails, then what was not synced is
 * dropped) right after a randomly chosen acknowledgement, and after the
 * reopen every synced write that was acknowledged is there with its
 * exact value, from every thread, however its group was formed.  Also: a
 * single synced writer is never held back waiting for others (one sync
 * per write, at the disk's pace).  And a synced put is read by no one
 * before its sync returns, nor ever when the sync fails, after which the
 * store refuses writes until a reopen.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api/tabletfs.h"
#include "util/env.h"
#include "api_util.h"

#define THREADS		8
#define SYNC_THREADS	6	/* the others write without sync */
#define PER_THREAD	150
#define ROUNDS		4
#define SYNC_DELAY_US	300
#define SLOW_SYNC_US	2000

struct writer {
	struct tstore *t;
	int thread;
	int round;
	bool sync;
	int count;		/* puts to write */
	int acked;		/* puts [0, acked) returned 0 */
	int failed_early;	/* failures before the crash */
	_Atomic int *total_acked;
	int crash_at;		/* arm the crash at this many acks */
	atomic_bool *crashed;
};

static void
cell_name(int round, int thread, int i, char *row, size_t rsize,
    char *val, size_t vsize)
{
	snprintf(row, rsize, "r%d-t%02d-%04d", round, thread, i);
	snprintf(val, vsize, "value %d/%d/%d %08x", round, thread, i,
	    (unsigned)(i * 2654435761u + (unsigned)thread));
}

/* The power goes: nothing written or synced from now on reaches the
 * disk.  The drop of unsynced data follows once the writers stop. */
static void
power_off(struct env *env)
{
	env_fault_fail_after(env, ENV_FAULT_APPEND, 1, -EIO, true);
	env_fault_fail_after(env, ENV_FAULT_SYNC, 1, -EIO, true);
	env_fault_fail_after(env, ENV_FAULT_OPEN, 1, -EIO, true);
	env_fault_fail_after(env, ENV_FAULT_RENAME, 1, -EIO, true);
}

static void
power_on(struct env *env)
{
	env_fault_fail_after(env, ENV_FAULT_APPEND, 0, 0, false);
	env_fault_fail_after(env, ENV_FAULT_SYNC, 0, 0, false);
	env_fault_fail_after(env, ENV_FAULT_OPEN, 0, 0, false);
	env_fault_fail_after(env, ENV_FAULT_RENAME, 0, 0, false);
}

static void *
writer_main(void *arg)
{
	struct writer *w = arg;
	struct bt_write_options opts = { .sync = w->sync };
	char row[48], val[64];

	for (int i = 0; i < w->count; i++) {
		struct bt_mutation m = { .kind = BT_PUT, .family = "f",
		    .ts = BT_TS_SERVER };
		int rc;

		cell_name(w->round, w->thread, i, row, sizeof(row), val,
		    sizeof(val));
		m.value = bts(val);
		rc = bt_mutate_row(w->t->s, "t", bts(row), &m, 1, &opts,
		    NULL);
		if (rc != 0) {
			if (!atomic_load(w->crashed))
				w->failed_early++;
			break;
		}
		w->acked = i + 1;
		/* The crash comes right after this acknowledgement. */
		if (w->sync && atomic_fetch_add(w->total_acked, 1) + 1 ==
		    w->crash_at && !atomic_exchange(w->crashed, true))
			power_off(w->t->env);
	}
	return NULL;
}

/* Every acknowledged synced put of the round is there, exactly. */
static void
check_round(struct tstore *t, const struct writer *ws, int round)
{
	long missing = 0, wrong = 0, checked = 0;
	char row[48], val[64];

	for (int k = 0; k < THREADS; k++) {
		if (!ws[k].sync)
			continue;
		for (int i = 0; i < ws[k].acked; i++) {
			struct bt_row *r = NULL;
			int rc;

			cell_name(round, k, i, row, sizeof(row), val,
			    sizeof(val));
			rc = bt_read_row(t->s, "t", bts(row), NULL, &r);
			checked++;
			if (rc == BT_NOTFOUND) {
				if (missing++ == 0)
					diag("round %d: acknowledged %s is "
					    "lost", round, row);
			} else if (rc != 0 || r->cell_count != 1 ||
			    !bytes_eq(r->cells[0].value, bts(val))) {
				if (wrong++ == 0)
					diag("round %d: %s reads wrong (rc "
					    "%d)", round, row, rc);
			}
			bt_row_free(r);
		}
	}
	is_int(missing, 0, "round %d: every acknowledged synced put "
	    "survives the power loss (%ld checked)", round, checked);
	is_int(wrong, 0, "round %d: each with its exact value", round);
}

static void
test_power_loss_after_ack(uint64_t *rng)
{
	static const struct bt_family_spec fam = { .name = "f",
	    .gc_policy = "maxversions=1" };
	struct tstore t;
	int rc;

	tstore_fault(&t, NULL);
	env_fault_set_sync_delay(t.env, SYNC_DELAY_US);
	if (bt_table_create(t.s, "t", &fam, 1, NULL, 0, 0) != 0)
		tap_bail("bt_table_create");
	for (int round = 0; round < ROUNDS; round++) {
		struct writer ws[THREADS];
		pthread_t tids[THREADS];
		struct bt_stats s0, s1;
		_Atomic int total = 0;
		atomic_bool crashed = false;
		int synced_acks = 0, all_acks = 0, early = 0;
		/* The last round runs to the end and crashes after it. */
		int crash_at = round + 1 == ROUNDS ? -1 :
		    1 + (int)(tap_rand(rng) % (SYNC_THREADS * PER_THREAD));

		bt_store_get_stats(t.s, &s0);
		for (int k = 0; k < THREADS; k++) {
			ws[k] = (struct writer){ .t = &t, .thread = k,
			    .round = round, .sync = k < SYNC_THREADS,
			    .count = PER_THREAD,
			    .total_acked = &total, .crash_at = crash_at,
			    .crashed = &crashed };
			if (pthread_create(&tids[k], NULL, writer_main,
			    &ws[k]) != 0)
				tap_bail("pthread_create");
		}
		for (int k = 0; k < THREADS; k++) {
			pthread_join(tids[k], NULL);
			early += ws[k].failed_early;
			all_acks += ws[k].acked;
			if (ws[k].sync)
				synced_acks += ws[k].acked;
		}
		is_int(early, 0, "round %d: no write fails before the crash",
		    round);
		bt_store_get_stats(t.s, &s1);
		diag("round %d: crash after ack %d; %d synced puts acked, "
		    "%" PRIu64 " syncs", round, crash_at, synced_acks,
		    s1.log_syncs - s0.log_syncs);
		if (crash_at < 0) {
			ok(synced_acks == SYNC_THREADS * PER_THREAD,
			    "round %d: every synced put is acknowledged",
			    round);
			/* With 6 synced writers and a slow disk, a batch
			 * should carry several of them. */
			ok((s1.log_syncs - s0.log_syncs) * 3 <=
			    (uint64_t)synced_acks, "round %d: synced puts "
			    "share syncs (%" PRIu64 " syncs for %d puts)",
			    round, s1.log_syncs - s0.log_syncs, synced_acks);
			/* Each leader counts its whole group's. */
			is_int(s1.mutations - s0.mutations, all_acks,
			    "round %d: the store counts each of the %d "
			    "acknowledged mutations once", round, all_acks);
			power_off(t.env);
		}
		rc = bt_store_close(t.s);
		t.s = NULL;
		(void)rc;	/* the close fails: the power is off */
		env_fault_drop_unsynced(t.env);
		power_on(t.env);
		rc = bt_store_open(t.path, &t.opts, &t.s);
		is_int(rc, 0, "round %d: the store opens after the power "
		    "loss", round);
		if (rc != 0) {
			diag("open: %s (%s)", bt_strerror(rc),
			    bt_error_detail());
			tap_bail("cannot reopen");
		}
		check_round(&t, ws, round);
	}
	tstore_destroy(&t);
}

static uint64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000;
}

/*
 * One synced writer right after a burst of many: the writer alone pays
 * one sync per write and waits for no one (at most once, for the first
 * put, while the expectation the burst left adapts).
 */
static void
test_single_writer_not_delayed(void)
{
	static const struct bt_family_spec fam = { .name = "f" };
	struct bt_write_options opts = { .sync = true };
	struct writer ws[THREADS];
	pthread_t tids[THREADS];
	_Atomic int total = 0;
	atomic_bool crashed = false;
	struct bt_stats s0, s1;
	struct tstore t;
	uint64_t t0, elapsed;
	int n = 30, failures = 0;
	char row[32];

	tstore_fault(&t, NULL);
	if (bt_table_create(t.s, "t", &fam, 1, NULL, 0, 0) != 0)
		tap_bail("bt_table_create");
	env_fault_set_sync_delay(t.env, SLOW_SYNC_US);
	for (int k = 0; k < THREADS; k++) {
		ws[k] = (struct writer){ .t = &t, .thread = k, .sync = true,
		    .count = 20, .total_acked = &total, .crash_at = -1,
		    .crashed = &crashed };
		if (pthread_create(&tids[k], NULL, writer_main, &ws[k]) != 0)
			tap_bail("pthread_create");
	}
	for (int k = 0; k < THREADS; k++)
		pthread_join(tids[k], NULL);
	bt_store_get_stats(t.s, &s0);
	t0 = now_us();
	for (int i = 0; i < n; i++) {
		struct bt_mutation m = { .kind = BT_PUT, .family = "f",
		    .ts = BT_TS_SERVER, .value = bts("v") };

		snprintf(row, sizeof(row), "alone%04d", i);
		if (bt_mutate_row(t.s, "t", bts(row), &m, 1, &opts,
		    NULL) != 0)
			failures++;
	}
	elapsed = now_us() - t0;
	bt_store_get_stats(t.s, &s1);
	is_int(failures, 0, "single writer: %d synced puts succeed", n);
	is_int(s1.log_syncs - s0.log_syncs, n, "single writer: one sync "
	    "per synced put");
	diag("single writer: %" PRIu64 " us per put (a sync takes %d us), "
	    "%" PRIu64 " gathering waits", elapsed / (uint64_t)n,
	    SLOW_SYNC_US, s1.write_gathers - s0.write_gathers);
	ok(s0.write_gathers > 0, "the burst's leaders gathered (%" PRIu64
	    " waits)", s0.write_gathers);
	ok(s1.write_gathers - s0.write_gathers <= 1, "single writer: no "
	    "gathering wait after the first put (%" PRIu64 " waits)",
	    s1.write_gathers - s0.write_gathers);
	tstore_destroy(&t);
}

#define BIG_THREADS	2	/* the taker is then right after the group */
#define BIG_PUTS	8
#define BIG_VALUE	(700u << 10)	/* two never share a write group */

struct big_writer {
	struct tstore *t;
	int thread;
	int failures;
};

static void *
big_writer_main(void *arg)
{
	struct big_writer *w = arg;
	struct bt_write_options opts = { .sync = true };
	struct bt_mutation m = { .kind = BT_PUT, .family = "f",
	    .ts = BT_TS_SERVER };
	char row[32];
	uint8_t *val;

	if ((val = malloc(BIG_VALUE)) == NULL)
		tap_bail("malloc");
	for (int i = 0; i < BIG_PUTS; i++) {
		snprintf(row, sizeof(row), "big-t%d-%d", w->thread, i);
		memset(val, 'a' + (w->thread * BIG_PUTS + i) % 26, BIG_VALUE);
		m.value = (struct bt_bytes){ val, BIG_VALUE };
		if (bt_mutate_row(w->t->s, "t", bts(row), &m, 1, &opts,
		    NULL) != 0)
			w->failures++;
	}
	free(val);
	return NULL;
}

static void
on_alarm(int sig)
{
	static const char msg[] = "Bail out! large synced writes did not "
	    "finish: a writer was never woken\n";

	(void)sig;
	(void)!write(1, msg, sizeof(msg) - 1);
	_exit(1);
}

/*
 * Synced writes too big to share a group: a writer that completes a
 * gathering leader's count and takes the lead over may find the group
 * ending before itself; everyone must still be acknowledged, and every
 * value read back whole.  A hang is caught by an alarm.
 */
static void
test_large_groups(void)
{
	static const struct bt_family_spec fam = { .name = "f" };
	struct big_writer ws[BIG_THREADS];
	pthread_t tids[BIG_THREADS];
	int failures = 0, wrong = 0;
	struct tstore t;
	char row[32];

	tstore_fault(&t, NULL);
	if (bt_table_create(t.s, "t", &fam, 1, NULL, 0, 0) != 0)
		tap_bail("bt_table_create");
	env_fault_set_sync_delay(t.env, SYNC_DELAY_US);
	signal(SIGALRM, on_alarm);
	alarm(120);
	for (int k = 0; k < BIG_THREADS; k++) {
		ws[k] = (struct big_writer){ .t = &t, .thread = k };
		if (pthread_create(&tids[k], NULL, big_writer_main,
		    &ws[k]) != 0)
			tap_bail("pthread_create");
	}
	for (int k = 0; k < BIG_THREADS; k++) {
		pthread_join(tids[k], NULL);
		failures += ws[k].failures;
	}
	alarm(0);
	is_int(failures, 0, "large groups: %d synced puts of %u KiB from %d "
	    "threads all acknowledged", BIG_THREADS * BIG_PUTS,
	    BIG_VALUE >> 10, BIG_THREADS);
	for (int k = 0; k < BIG_THREADS; k++) {
		for (int i = 0; i < BIG_PUTS; i++) {
			struct bt_row *r = NULL;
			uint8_t want = (uint8_t)('a' + (k * BIG_PUTS + i) % 26);

			snprintf(row, sizeof(row), "big-t%d-%d", k, i);
			if (bt_read_row(t.s, "t", bts(row), NULL, &r) != 0 ||
			    r->cell_count != 1 ||
			    r->cells[0].value.size != BIG_VALUE ||
			    ((const uint8_t *)r->cells[0].value.data)[0] !=
			    want ||
			    ((const uint8_t *)r->cells[0].value.data)[
			    BIG_VALUE - 1] != want)
				wrong++;
			bt_row_free(r);
		}
	}
	is_int(wrong, 0, "large groups: every value reads back whole");
	tstore_destroy(&t);
}

#define PENDING_SYNC_US	300000

struct pending_put {
	struct tstore *t;
	int rc;
	atomic_bool returned;
};

static void *
pending_put_main(void *arg)
{
	struct pending_put *p = arg;
	struct bt_write_options opts = { .sync = true };
	struct bt_mutation m = { .kind = BT_PUT, .family = "f",
	    .ts = BT_TS_SERVER, .value = bts("pending value") };

	p->rc = bt_mutate_row(p->t->s, "t", bts("pending"), &m, 1, &opts,
	    NULL);
	atomic_store(&p->returned, true);
	return NULL;
}

/* Whether row is in table t: 1, 0 when absent, -1 when the read fails. */
static int
row_present(struct bt_store *s, const char *row)
{
	struct bt_row *r = NULL;
	int rc = bt_read_row(s, "t", bts(row), NULL, &r);

	bt_row_free(r);
	return rc == 0 ? 1 : rc == BT_NOTFOUND ? 0 : -1;
}

/*
 * No read sees a synced put before its fdatasync (a slow one here) has
 * returned: not before PENDING_SYNC_US after the put began, which the
 * sync's delay alone takes.  When the sync fails instead, the put fails
 * with the sync's error and is never read; the store refuses every later
 * write with it (writes_refused) until a reopen, while what was
 * acknowledged stays readable and can still be flushed to an SSTable.
 */
static void
test_sync_failure(void)
{
	static const struct bt_family_spec fam = { .name = "f" };
	struct bt_write_options opts = { .sync = true };
	struct bt_mutation m = { .kind = BT_PUT, .family = "f",
	    .ts = BT_TS_SERVER, .value = bts("v") };
	struct pending_put p = { 0 };
	struct bt_stats s0, st;
	struct tstore t;
	pthread_t tid;
	uint64_t t0, early = 0, reads = 0;
	int rc;

	tstore_fault(&t, NULL);
	if (bt_table_create(t.s, "t", &fam, 1, NULL, 0, 0) != 0)
		tap_bail("bt_table_create");
	bt_store_get_stats(t.s, &s0);
	env_fault_set_sync_delay(t.env, PENDING_SYNC_US);
	p.t = &t;
	atomic_init(&p.returned, false);
	t0 = now_us();
	if (pthread_create(&tid, NULL, pending_put_main, &p) != 0)
		tap_bail("pthread_create");
	while (!atomic_load(&p.returned)) {
		uint64_t at = now_us();

		if (at - t0 < PENDING_SYNC_US) {
			reads++;
			if (row_present(t.s, "pending") != 0 ||
			    bt_store_last_seq(t.s) != s0.last_seq)
				early++;
		}
		usleep(1000);
	}
	pthread_join(tid, NULL);
	env_fault_set_sync_delay(t.env, 0);
	is_int((int)early, 0, "no read sees a synced put before its sync "
	    "returns (%" PRIu64 " reads during it)", reads);
	is_int(p.rc, 0, "the synced put succeeds");
	is_int(row_present(t.s, "pending"), 1, "and reads back after it");

	env_fault_fail_after(t.env, ENV_FAULT_SYNC, 1, -EIO, false);
	rc = bt_mutate_row(t.s, "t", bts("failed"), &m, 1, &opts, NULL);
	env_fault_fail_after(t.env, ENV_FAULT_SYNC, 0, 0, false);
	is_int(rc, -EIO, "a put whose log sync fails fails with it");
	is_int(row_present(t.s, "failed"), 0, "and is not read");
	bt_store_get_stats(t.s, &st);
	is_int(st.writes_refused, -EIO, "the store refuses writes after it");
	is_int(bt_mutate_row(t.s, "t", bts("later"), &m, 1, &opts, NULL),
	    -EIO, "a later put fails with the sync's error");
	is_int(row_present(t.s, "later"), 0, "and is not read");
	is_int(row_present(t.s, "pending"), 1, "what was acknowledged still "
	    "reads");
	is_int(bt_store_flush(t.s), 0, "and is flushed to an SSTable");
	bt_store_get_stats(t.s, &st);
	ok(st.sstables > s0.sstables, "the flush wrote an SSTable (%" PRIu64
	    " now, %" PRIu64 " before)", st.sstables, s0.sstables);
	tstore_reopen(&t);
	bt_store_get_stats(t.s, &st);
	is_int(st.writes_refused, 0, "a reopen clears the refusal");
	is_int(bt_mutate_row(t.s, "t", bts("after"), &m, 1, &opts, NULL), 0,
	    "and the store takes writes again");
	is_int(row_present(t.s, "pending"), 1, "with the acknowledged put "
	    "there");
	tstore_destroy(&t);
}

int
main(void)
{
	uint64_t rng = tap_seed();

	test_power_loss_after_ack(&rng);
	test_single_writer_not_delayed();
	test_large_groups();
	test_sync_failure();
	return tap_done();
}
