/*
 * seqprobe - what bt_store_last_seq() costs a caller that asks often (the
 * mount asks it at every directory-version check), on a store or a cell,
 * beside bt_store_get_stats(), which is what it cost on a cell before
 * the LAST_SEQ call (a full STATS round trip, every counter gathered).
 *
 *	seqprobe STORE [--count N] [--rounds R]
 *
 * Each round times N (20000) calls of each, one after the other, each
 * call on its own.  Standard output, one line per call kind: the p50 and
 * p99 of a call over all rounds and the median round's mean:
 *	last_seq p50_us X p99_us Y mean_us Z
 *	get_stats p50_us X p99_us Y mean_us Z
 * Each round is a line on standard error.  Exit status 1 on an error.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/tabletfs.h"
#include "bench/bench.h"

#define MAX_ROUNDS	100

static void __attribute__((noreturn))
usage(void)
{
	fprintf(stderr, "usage: seqprobe STORE [--count N] [--rounds R]\n");
	exit(2);
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Time count calls of kind (0: last_seq, 1: get_stats) into h; the mean
 * in microseconds. */
static double
round_run(struct bt_store *s, int kind, long count, struct bench_hist *h)
{
	struct bt_stats st;
	uint64_t begin = bench_now_ns(), t0, t1;
	volatile uint64_t sink = 0;

	for (long i = 0; i < count; i++) {
		t0 = bench_now_ns();
		if (kind == 0) {
			sink += bt_store_last_seq(s);
		} else {
			bt_store_get_stats(s, &st);
			sink += st.last_seq;
		}
		t1 = bench_now_ns();
		bench_hist_add(h, t1 - t0);
	}
	(void)sink;
	return (double)(bench_now_ns() - begin) / 1e3 / (double)count;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "count", required_argument, NULL, 'n' },
		{ "rounds", required_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 },
	};
	static const char *const names[2] = { "last_seq", "get_stats" };
	static struct bench_hist hist[2];
	double means[2][MAX_ROUNDS];
	long count = 20000;
	int rounds = 3, c, rc;
	struct bt_store *s;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (c == 'n')
			count = atol(optarg);
		else if (c == 'r')
			rounds = atoi(optarg);
		else
			usage();
	}
	if (optind + 1 != argc || count <= 0 || rounds <= 0 ||
	    rounds > MAX_ROUNDS)
		usage();
	if ((rc = bt_store_open(argv[optind], NULL, &s)) < 0) {
		fprintf(stderr, "seqprobe: %s: %s\n", argv[optind],
		    *bt_error_detail() ? bt_error_detail() : bt_strerror(rc));
		return 1;
	}
	for (int r = 0; r < rounds; r++)
		for (int k = 0; k < 2; k++) {
			means[k][r] = round_run(s, k, count, &hist[k]);
			fprintf(stderr, "round %d %s mean_us %.1f\n", r + 1,
			    names[k], means[k][r]);
		}
	for (int k = 0; k < 2; k++) {
		qsort(means[k], (size_t)rounds, sizeof(double), cmp_double);
		printf("%s p50_us %.1f p99_us %.1f mean_us %.1f\n", names[k],
		    bench_hist_quantile(&hist[k], 0.5) / 1e3,
		    bench_hist_quantile(&hist[k], 0.99) / 1e3,
		    means[k][rounds / 2]);
	}
	return bt_store_close(s) < 0;
}
