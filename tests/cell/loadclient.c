/*
 * loadclient.c - a steady, paced load on a cell for
 * tests/cell/test_cell_balance.sh: one thread per PREFIX:RATE argument,
 * each putting and reading back (in turn) rows PREFIX0..PREFIX9 of
 * table t, column f:q, at RATE operations per second on an absolute
 * schedule (a late operation does not make the next ones late too),
 * through the public API.  Every second it rewrites STATS (written to
 * STATS.tmp, then renamed) with one line per thread:
 *
 *	PREFIX RATE OK FAILED
 *
 * OK and FAILED counting since the start; each failure is one line on
 * stderr.  It stops at SIGTERM or SIGINT, writes STATS a last time, and
 * exits 0 when no operation failed, 1 otherwise.
 *
 * Usage: loadclient CELL STATS PREFIX:RATE ...
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

#define THREADS_MAX 32

struct load {
	struct bt_store *store;
	atomic_bool stop;
};

struct worker {
	struct load *l;
	pthread_t thread;
	char prefix[64];
	double rate;
	atomic_uint_fast64_t ok, failed;
};

static int64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void
sleep_until(int64_t at)
{
	struct timespec ts = { at / 1000000000, at % 1000000000 };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
	    EINTR)
		;
}

/* One operation, n-th of the worker: a put, or a read of the row the
 * put before wrote, which must find that value. */
static int
op_run(struct worker *w, uint64_t n)
{
	static const struct bt_column col = { "f", true, { "q", 1 } };
	char row[96], value[64];
	struct bt_bytes r;
	int rc;

	snprintf(row, sizeof(row), "%s%" PRIu64, w->prefix, (n / 2) % 10);
	snprintf(value, sizeof(value), "v%" PRIu64, n / 2);
	r = (struct bt_bytes){ row, strlen(row) };
	if (n % 2 == 0) {
		struct bt_mutation put = { .kind = BT_PUT, .family = "f",
			.qualifier = col.qualifier, .ts = BT_TS_SERVER,
			.value = { value, strlen(value) } };

		return bt_mutate_row(w->l->store, "t", r, &put, 1, NULL,
		    NULL);
	} else {
		struct bt_read_options ro = { .columns = &col,
			.column_count = 1, .cells_per_column = 1 };
		struct bt_row *got;

		if ((rc = bt_read_row(w->l->store, "t", r, &ro, &got)) < 0)
			return rc;
		if (got->cell_count != 1 ||
		    got->cells[0].value.size != strlen(value) ||
		    memcmp(got->cells[0].value.data, value,
		    strlen(value)) != 0)
			rc = -EPROTO;	/* not the value put */
		bt_row_free(got);
		return rc;
	}
}

static void *
worker_run(void *arg)
{
	struct worker *w = arg;
	int64_t step = (int64_t)(1e9 / w->rate), next = now_ns();
	uint64_t n = 0;
	int rc;

	while (!atomic_load(&w->l->stop)) {
		if ((rc = op_run(w, n)) < 0) {
			/* The read after a failed put has nothing to find. */
			fprintf(stderr, "loadclient: %s op %" PRIu64 ": %s: "
			    "%s\n", w->prefix, n, bt_strerror(rc),
			    bt_error_detail());
			atomic_fetch_add(&w->failed, 1);
			n |= 1;
		} else {
			atomic_fetch_add(&w->ok, 1);
		}
		n++;
		next += step;
		sleep_until(next);
	}
	return NULL;
}

static void
stats_write(const char *path, struct worker *w, size_t count)
{
	char tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if ((f = fopen(tmp, "w")) == NULL)
		return;
	for (size_t i = 0; i < count; i++)
		fprintf(f, "%s %g %" PRIuFAST64 " %" PRIuFAST64 "\n",
		    w[i].prefix, w[i].rate, atomic_load(&w[i].ok),
		    atomic_load(&w[i].failed));
	if (fclose(f) == 0)
		(void)rename(tmp, path);
}

int
main(int argc, char **argv)
{
	static struct worker w[THREADS_MAX];
	struct bt_options opts = { 0 };
	struct load l = { 0 };
	struct timespec second = { 1, 0 };
	sigset_t sigs;
	size_t count = 0;
	uint64_t failed = 0;
	int rc;

	if (argc < 4 || argc - 3 > THREADS_MAX) {
		fprintf(stderr, "usage: loadclient CELL STATS PREFIX:RATE "
		    "...\n");
		return 2;
	}
	for (int i = 3; i < argc; i++, count++) {
		const char *colon = strrchr(argv[i], ':');

		if (colon == NULL || colon == argv[i] ||
		    (size_t)(colon - argv[i]) >= sizeof(w[count].prefix) ||
		    (w[count].rate = strtod(colon + 1, NULL)) <= 0) {
			fprintf(stderr, "loadclient: %s: not PREFIX:RATE\n",
			    argv[i]);
			return 2;
		}
		memcpy(w[count].prefix, argv[i], colon - argv[i]);
		w[count].l = &l;
	}
	/* Every thread, the library's too, leaves SIGTERM and SIGINT to
	 * main's sigtimedwait. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	if ((rc = bt_store_open(argv[1], &opts, &l.store)) < 0) {
		fprintf(stderr, "loadclient: %s: %s: %s\n", argv[1],
		    bt_strerror(rc), bt_error_detail());
		return 1;
	}
	for (size_t i = 0; i < count; i++)
		if (pthread_create(&w[i].thread, NULL, worker_run, &w[i]) != 0) {
			fprintf(stderr, "loadclient: no thread\n");
			_exit(1);
		}
	while (sigtimedwait(&sigs, NULL, &second) < 0)
		stats_write(argv[2], w, count);
	atomic_store(&l.stop, true);
	for (size_t i = 0; i < count; i++) {
		pthread_join(w[i].thread, NULL);
		failed += atomic_load(&w[i].failed);
	}
	stats_write(argv[2], w, count);
	bt_store_close(l.store);
	return failed == 0 ? 0 : 1;
}
