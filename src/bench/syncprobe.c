/*
 * syncprobe - the disk's own rate of synced writes, the bound that
 * fillsync is measured against: a pwrite + fdatasync loop on one file, as
 * fio --rw=write --fdatasync=1 runs it.
 *
 *	syncprobe [--bytes B] [--seconds S] [--rounds R] [--append] DIR
 *
 * A file in DIR (the benchmark's stores' directory, so that the same
 * filesystem and disk answer) is laid out first, written and synced
 * whole, and each round then writes B bytes (4096) at the next offset,
 * wrapping at the end of the layout, and fdatasyncs them, for S seconds
 * (1.0); R rounds (3).  That is what the commit log's group commit pays
 * per sync: it writes into space already written (log_writer.c writes
 * zeros ahead of its records), so that its fdatasync flushes data alone.
 * With --append each write extends the file instead, so that each sync
 * also journals the new size: what a log without that pays.
 *
 * Standard output, one line: the median round's syncs per second, then
 * the p50 and p99 latency of a write and its sync over all rounds:
 *	syncs/s N p50_us X p99_us Y bytes B mode overwrite|append
 * Each round is a line on standard error.  The file is removed at the
 * end.  Exit status 1 on an error.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"

#define LAYOUT_BYTES	(16u << 20)
#define MAX_ROUNDS	100

struct probe {
	const char *dir;
	size_t bytes;
	double seconds;
	unsigned rounds;
	bool append;
	char path[PATH_MAX];
	int fd;
	char *block;
	uint64_t offset;	/* of the next write */
	struct bench_hist hist;
};

static void __attribute__((noreturn))
usage(void)
{
	fprintf(stderr, "usage: syncprobe [--bytes B] [--seconds S] "
	    "[--rounds R] [--append] DIR\n");
	exit(2);
}

static int
probe_fail(const struct probe *p, const char *what)
{
	fprintf(stderr, "syncprobe: %s: %s: %s\n", p->path, what,
	    strerror(errno));
	return -1;
}

static int
write_full(int fd, const char *buf, size_t n, uint64_t off)
{
	while (n > 0) {
		ssize_t w = pwrite(fd, buf, n, (off_t)off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		buf += w;
		n -= (size_t)w;
		off += (uint64_t)w;
	}
	return 0;
}

/* Write the whole layout once and sync it, so that the rounds' writes
 * land in space already written (not with --append). */
static int
probe_layout(struct probe *p)
{
	char *zeros;
	int rc = 0;

	if (p->append)
		return 0;
	if ((zeros = calloc(1, 1u << 20)) == NULL) {
		errno = ENOMEM;
		return probe_fail(p, "layout");
	}
	for (uint64_t off = 0; off < LAYOUT_BYTES && rc == 0;
	    off += 1u << 20)
		rc = write_full(p->fd, zeros, 1u << 20, off);
	free(zeros);
	if (rc < 0 || fdatasync(p->fd) < 0)
		return probe_fail(p, "layout");
	return 0;
}

/* One round: synced writes for p->seconds; its rate in *rate. */
static int
probe_round(struct probe *p, double *rate)
{
	uint64_t start = bench_now_ns(), end, now, syncs = 0;

	end = start + (uint64_t)(p->seconds * 1e9);
	do {
		uint64_t t0 = bench_now_ns();

		if (!p->append && p->offset + p->bytes > LAYOUT_BYTES)
			p->offset = 0;
		p->block[0]++;	/* each write differs */
		if (write_full(p->fd, p->block, p->bytes, p->offset) < 0)
			return probe_fail(p, "pwrite");
		if (fdatasync(p->fd) < 0)
			return probe_fail(p, "fdatasync");
		p->offset += p->bytes;
		now = bench_now_ns();
		bench_hist_add(&p->hist, now - t0);
		syncs++;
	} while (now < end);
	*rate = (double)syncs * 1e9 / (double)(now - start);
	return 0;
}

static int
compare_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void
probe_options(struct probe *p, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "bytes", required_argument, NULL, 'b' },
		{ "seconds", required_argument, NULL, 's' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "append", no_argument, NULL, 'a' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	int ch;

	p->bytes = 4096;
	p->seconds = 1.0;
	p->rounds = 3;
	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		errno = 0;
		switch (ch) {
		case 'b':
			p->bytes = strtoul(optarg, &end, 10);
			if (errno != 0 || *end != '\0' || p->bytes == 0 ||
			    p->bytes > LAYOUT_BYTES)
				usage();
			break;
		case 's':
			p->seconds = strtod(optarg, &end);
			if (errno != 0 || *end != '\0' || !(p->seconds > 0) ||
			    p->seconds > 3600)
				usage();
			break;
		case 'r':
			p->rounds = (unsigned)strtoul(optarg, &end, 10);
			if (errno != 0 || *end != '\0' || p->rounds == 0 ||
			    p->rounds > MAX_ROUNDS)
				usage();
			break;
		case 'a':
			p->append = true;
			break;
		default:
			usage();
		}
	}
	if (optind + 1 != argc)
		usage();
	p->dir = argv[optind];
}

int
main(int argc, char **argv)
{
	static struct probe p;
	double rates[MAX_ROUNDS];
	int status = 1;

	probe_options(&p, argc, argv);
	if ((size_t)snprintf(p.path, sizeof(p.path), "%s/syncprobe.XXXXXX",
	    p.dir) >= sizeof(p.path)) {
		fprintf(stderr, "syncprobe: %s: path too long\n", p.dir);
		return 1;
	}
	if ((p.fd = mkstemp(p.path)) < 0) {
		probe_fail(&p, "mkstemp");
		return 1;
	}
	if ((p.block = malloc(p.bytes)) == NULL) {
		errno = ENOMEM;
		probe_fail(&p, "buffer");
		goto out;
	}
	memset(p.block, 'x', p.bytes);
	if (probe_layout(&p) < 0)
		goto out;
	for (unsigned r = 0; r < p.rounds; r++) {
		if (probe_round(&p, &rates[r]) < 0)
			goto out;
		fprintf(stderr, "syncprobe: round %u: %.0f syncs/s\n", r + 1,
		    rates[r]);
	}
	qsort(rates, p.rounds, sizeof(rates[0]), compare_double);
	printf("syncs/s %.0f p50_us %.1f p99_us %.1f bytes %zu mode %s\n",
	    rates[(p.rounds - 1) / 2],
	    bench_hist_quantile(&p.hist, 0.50) / 1e3,
	    bench_hist_quantile(&p.hist, 0.99) / 1e3, p.bytes,
	    p.append ? "append" : "overwrite");
	status = 0;
out:
	free(p.block);
	close(p.fd);
	unlink(p.path);
	return status;
}
