/*
 * histclient.c - a client of a cell that records a history for
 * tests/cluster/linearizable.py: threads that each run a random mix of
 * single-row operations through the public API (a put of a value no one
 * else writes, a read of the newest value, a check-and-mutate, an
 * increment of a counter row) on rows PREFIXreg0..N-1 and PREFIXctr of
 * table t, column f:q, and write each one, when it completes, as one
 * JSON line: client, op, row, arguments, result, the invoke and complete
 * times (CLOCK_REALTIME ns: every namespace shares the clock) and the
 * outcome:
 *
 *	ok	the call returned its result;
 *	fail	it certainly was not applied: a read that failed, or a change
 *		the API says never reached a server that ran it (-ETIMEDOUT:
 *		no server took it within the deadline; BT_ENOTSERVING; a
 *		refusal such as -EINVAL);
 *	unknown	it may or may not have been applied: -EIO whose detail says
 *		the outcome is unknown (docs/design.md section 5, Clients),
 *		or any other error of a change.
 *
 * Usage: histclient -c CELL -i ID -s SEED -p PREFIX -o OUT
 *	      [-d MS | -n OPS] [-r ROWS] [-t THREADS] [-D DEADLINE_MS]
 *        histclient -c CELL -p PREFIX -f	(prints the counter's value,
 *						 or "none")
 * It stops after MS milliseconds or OPS ops per thread, or at SIGTERM or
 * SIGINT after each thread's current op; every line is flushed as it is
 * written, so the file is whole however the client ends (but SIGKILL
 * during a write, which the checker skips).
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

#define THREADS_MAX	16
#define ROWS_MAX	64	/* registers; the counter is one more */
#define VALUE_MAX	64

struct hist {
	struct bt_store *store;
	const char *prefix;
	int id;
	unsigned seed;
	int rows;
	long ops;		/* per thread; 0: until stopped */
	FILE *out;
	pthread_mutex_t out_mu;
	atomic_bool stop;
	atomic_int running;	/* threads not yet done */
};

struct worker {
	struct hist *h;
	pthread_t thread;
	int index;
	unsigned rand;
	long serial;
	/* Per row, the last value this thread saw or wrote: what its
	 * check-and-mutates expect. */
	char last[ROWS_MAX + 1][VALUE_MAX];
	bool has_last[ROWS_MAX + 1];
};

/* What one op did, ready for its line. */
struct record {
	const char *op;
	char row[VALUE_MAX];
	char value[VALUE_MAX];	/* put, cas: what it writes */
	bool has_value;
	char expected[VALUE_MAX]; /* cas: none means "no version" */
	bool has_expected;
	char result[3 * VALUE_MAX]; /* JSON text */
	int64_t invoke, complete;
	int rc;
	bool changes;
};

static int64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* s as a JSON string into out (size n), or null. */
static void
json_string(char *out, size_t n, const void *s, size_t len)
{
	const unsigned char *p = s;
	size_t o = 0;

	if (s == NULL) {
		snprintf(out, n, "null");
		return;
	}
	out[o++] = '"';
	for (size_t i = 0; i < len && o + 8 < n; i++) {
		if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '"' && p[i] != '\\')
			out[o++] = (char)p[i];
		else
			o += (size_t)snprintf(out + o, n - o, "\\u%04x", p[i]);
	}
	out[o++] = '"';
	out[o] = '\0';
}

/* The outcome of a call, as the header comment classifies it. */
static const char *
outcome(const struct record *r)
{
	if (r->rc >= 0)
		return "ok";
	if (!r->changes)
		return "fail";
	switch (r->rc) {
	case -ETIMEDOUT:
	case BT_ENOTSERVING:
	case -EINVAL:
	case -ENOENT:
	case -EACCES:
		return "fail";
	}
	return "unknown";
}

static void
record_write(struct hist *h, struct worker *w, const struct record *r)
{
	char value[3 * VALUE_MAX], expected[3 * VALUE_MAX];
	char error[256] = "";

	json_string(value, sizeof(value), r->has_value ? r->value : NULL,
	    strlen(r->value));
	json_string(expected, sizeof(expected),
	    r->has_expected ? r->expected : NULL, strlen(r->expected));
	if (r->rc < 0) {
		char detail[3 * 160];
		const char *d = bt_error_detail();

		json_string(detail, sizeof(detail), d,
		    strnlen(d, 150));
		snprintf(error, sizeof(error), ", \"error\": \"%s\", "
		    "\"detail\": %s", bt_strerror(r->rc), detail);
	}
	pthread_mutex_lock(&h->out_mu);
	fprintf(h->out, "{\"client\": \"%d.%d\", \"op\": \"%s\", \"row\": "
	    "\"%s\", \"value\": %s, \"expected\": %s, \"result\": %s, "
	    "\"invoke\": %" PRId64 ", \"complete\": %" PRId64 ", "
	    "\"outcome\": \"%s\"%s}\n", h->id, w->index, r->op, r->row, value,
	    expected, r->result, r->invoke, r->complete, outcome(r), error);
	fflush(h->out);
	pthread_mutex_unlock(&h->out_mu);
}

static const struct bt_column COLUMN = {
	.family = "f", .has_qualifier = true,
	.qualifier = { "q", 1 },
};

/* Read the newest value of row: 0 with value (NUL-terminated) or
 * BT_NOTFOUND, or an error. */
static int
row_newest(struct bt_store *s, const char *row, char *value, size_t n)
{
	struct bt_read_options ro = {
		.columns = &COLUMN, .column_count = 1, .cells_per_column = 1,
	};
	struct bt_row *r;
	int rc;

	rc = bt_read_row(s, "t", (struct bt_bytes){ row, strlen(row) }, &ro,
	    &r);
	if (rc != 0)
		return rc;
	if (r->cell_count == 0 || r->cells[0].value.size >= n) {
		bt_row_free(r);
		return -EPROTO;
	}
	memcpy(value, r->cells[0].value.data, r->cells[0].value.size);
	value[r->cells[0].value.size] = '\0';
	bt_row_free(r);
	return 0;
}

static void
op_run(struct worker *w, struct record *r)
{
	struct hist *h = w->h;
	struct bt_bytes row, qual = COLUMN.qualifier;
	struct bt_mutation put = { .kind = BT_PUT, .family = "f",
		.qualifier = qual, .ts = BT_TS_SERVER };
	char got[VALUE_MAX];
	unsigned pick = (unsigned)rand_r(&w->rand) % 100;
	int k = rand_r(&w->rand) % h->rows;
	char *last;
	int64_t n;
	bool applied;

	snprintf(r->value, sizeof(r->value), "c%d.%d-%ld", h->id, w->index,
	    ++w->serial);
	put.value = (struct bt_bytes){ r->value, strlen(r->value) };
	/* 30 % puts, 35 % reads (a fifth of them of the counter), 15 %
	 * check-and-mutates, 20 % increments. */
	if (pick >= 80 || (pick >= 35 && pick < 42))
		k = h->rows;
	if (k == h->rows)
		snprintf(r->row, sizeof(r->row), "%sctr", h->prefix);
	else
		snprintf(r->row, sizeof(r->row), "%sreg%d", h->prefix, k);
	row = (struct bt_bytes){ r->row, strlen(r->row) };
	last = w->last[k];
	snprintf(r->result, sizeof(r->result), "null");
	r->invoke = now_ns();
	if (pick < 30) {
		r->op = "put";
		r->changes = r->has_value = true;
		r->rc = bt_mutate_row(h->store, "t", row, &put, 1, NULL,
		    NULL);
		snprintf(last, VALUE_MAX, "%s", r->value);
		w->has_last[k] = true;
	} else if (pick < 65) {
		r->op = "read";
		r->rc = row_newest(h->store, r->row, got, sizeof(got));
		if (r->rc == 0) {
			json_string(r->result, sizeof(r->result), got,
			    strlen(got));
			snprintf(last, VALUE_MAX, "%s", got);
			w->has_last[k] = true;
		}
	} else if (pick < 80) {
		struct bt_bytes exp = { last, strlen(last) };

		r->op = "cas";
		r->changes = r->has_value = true;
		r->has_expected = w->has_last[k];
		snprintf(r->expected, sizeof(r->expected), "%s", last);
		r->rc = bt_check_and_mutate(h->store, "t", row, "f", qual,
		    r->has_expected ? &exp : NULL, &put, 1, NULL, &applied);
		if (r->rc == 0) {
			snprintf(r->result, sizeof(r->result), "%s",
			    applied ? "true" : "false");
			if (applied)
				snprintf(last, VALUE_MAX, "%s", r->value);
		}
	} else {
		r->op = "incr";
		r->changes = true;
		r->rc = bt_increment(h->store, "t", row, "f", qual, 1, NULL,
		    &n, NULL);
		if (r->rc == 0)
			snprintf(r->result, sizeof(r->result), "%" PRId64, n);
	}
	r->complete = now_ns();
}

static void *
worker_main(void *arg)
{
	struct worker *w = arg;
	struct hist *h = w->h;

	for (long i = 0; h->ops == 0 || i < h->ops; i++) {
		struct record r = { 0 };

		if (atomic_load(&h->stop))
			break;
		op_run(w, &r);
		record_write(h, w, &r);
	}
	atomic_fetch_sub(&h->running, 1);
	return NULL;
}

/* -f: the counter's newest value, after the run. */
static int
counter_print(struct bt_store *s, const char *prefix)
{
	char row[VALUE_MAX], value[VALUE_MAX];
	int rc;

	snprintf(row, sizeof(row), "%sctr", prefix);
	rc = row_newest(s, row, value, sizeof(value));
	if (rc == BT_NOTFOUND) {
		printf("none\n");
		return 0;
	}
	if (rc < 0) {
		fprintf(stderr, "histclient: read %s: %s: %s\n", row,
		    bt_strerror(rc), bt_error_detail());
		return 1;
	}
	printf("%lld\n", strtoll(value, NULL, 10));
	return 0;
}

static void
usage(void)
{
	fprintf(stderr, "usage: histclient -c CELL -i ID -s SEED -p PREFIX "
	    "-o OUT [-d MS | -n OPS] [-r ROWS] [-t THREADS] "
	    "[-D DEADLINE_MS]\n       histclient -c CELL -p PREFIX -f\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	struct hist h = { .prefix = "", .rows = 4 };
	struct bt_options opts = { .deadline_ms = 4000 };
	struct worker workers[THREADS_MAX];
	struct timespec tick = { 0, 100000000 };
	int64_t end;
	const char *cell = NULL, *out = NULL;
	long duration_ms = 0;
	int threads = 1, c, rc, status = 0;
	bool final = false;
	sigset_t sigs;
	siginfo_t info;

	while ((c = getopt(argc, argv, "c:i:s:p:o:d:n:r:t:D:f")) != -1) {
		switch (c) {
		case 'c': cell = optarg; break;
		case 'i': h.id = atoi(optarg); break;
		case 's': h.seed = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'p': h.prefix = optarg; break;
		case 'o': out = optarg; break;
		case 'd': duration_ms = atol(optarg); break;
		case 'n': h.ops = atol(optarg); break;
		case 'r': h.rows = atoi(optarg); break;
		case 't': threads = atoi(optarg); break;
		case 'D': opts.deadline_ms = (uint32_t)atol(optarg); break;
		case 'f': final = true; break;
		default: usage();
		}
	}
	if (cell == NULL || (!final && out == NULL) || h.rows < 1 ||
	    h.rows > ROWS_MAX ||
	    threads < 1 || threads > THREADS_MAX ||
	    (!final && duration_ms <= 0 && h.ops <= 0))
		usage();
	/* Every thread, the library's too, leaves SIGTERM and SIGINT to
	 * main's sigtimedwait. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	if ((rc = bt_store_open(cell, &opts, &h.store)) < 0) {
		fprintf(stderr, "histclient: %s: %s: %s\n", cell,
		    bt_strerror(rc), bt_error_detail());
		return 1;
	}
	if (final) {
		status = counter_print(h.store, h.prefix);
		goto out_close;
	}
	if ((h.out = fopen(out, "w")) == NULL) {
		perror(out);
		status = 1;
		goto out_close;
	}
	pthread_mutex_init(&h.out_mu, NULL);
	atomic_init(&h.stop, false);
	atomic_init(&h.running, threads);
	for (int i = 0; i < threads; i++) {
		workers[i] = (struct worker){ .h = &h, .index = i,
			.rand = h.seed * 7919u + (unsigned)h.id * 131u +
			    (unsigned)i };
		if (pthread_create(&workers[i].thread, NULL, worker_main,
		    &workers[i]) != 0) {
			fprintf(stderr, "histclient: no thread\n");
			abort();
		}
	}
	/* Until the time is up, the threads are done or a signal came. */
	end = duration_ms > 0 ? now_ns() + (int64_t)duration_ms * 1000000 :
	    INT64_MAX;
	while (now_ns() < end && atomic_load(&h.running) > 0 &&
	    sigtimedwait(&sigs, &info, &tick) < 0)
		;
	atomic_store(&h.stop, true);
	for (int i = 0; i < threads; i++)
		pthread_join(workers[i].thread, NULL);
	if (fclose(h.out) != 0) {
		perror(out);
		status = 1;
	}
out_close:
	bt_store_close(h.store);
	return status;
}
