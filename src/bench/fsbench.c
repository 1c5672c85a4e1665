/*
 * fsbench - small-file and large-file operation rates in one directory
 * tree, the same on a tabletfs mount, a passthrough_ll mount and a plain
 * directory, so scripts/fs-rates can print them side by side.
 *
 *	fsbench [--cells N] [--big M] [--readdirs R] [--list LDIR --rows N] DIR
 *
 * The layout is tabletfs's: DIR is a table (or any directory), rows are
 * DIR/rowNNNNNNN, each with one cell f/c/1 of a few bytes; the 1 MiB
 * files are versions 1..M of DIR/big/f/c.  The directories are made
 * first, off the clock.  Then, timing every call:
 *
 *	create	open(O_CREAT|O_TRUNC) + write + close of each cell
 *	stat	stat of each cell (size checked)
 *	read	open + read + close of each cell (bytes checked)
 *	readdir	R listings of LDIR (default DIR), counting the rows in it
 *		(names starting "row": --rows, default the cells); an op is
 *		an entry
 *	write1m	M files of 1 MiB each, in 128 KiB writes, with open and close
 *	read1m	the same read back in 128 KiB reads and checked
 *
 * One line per operation on standard output:
 *	OP OPS SECS OPS_PER_SEC MB_PER_SEC P50_US P99_US
 * Exit status 1 when anything failed or read back wrong.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/bench.h"

#define BIG_SIZE	(1u << 20)
#define BIG_CHUNK	(128u << 10)

struct fsb {
	const char *dir;
	uint64_t cells;
	uint64_t big;
	uint64_t readdirs;
	const char *list;	/* the directory readdir lists */
	uint64_t rows;		/* the rows in it */
	char *chunk;		/* BIG_CHUNK bytes of pattern */
	char *got;
};

struct fsb_op {
	const char *name;
	uint64_t ops;
	uint64_t bytes;
	uint64_t ns;
	struct bench_hist hist;
};

static void __attribute__((noreturn))
usage(void)
{
	fprintf(stderr, "usage: fsbench [--cells N] [--big M] [--readdirs R] "
	    "[--list LDIR --rows N] DIR\n");
	exit(2);
}

static void __attribute__((noreturn, format(printf, 1, 2)))
fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "fsbench: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(1);
}

static void
op_time(struct fsb_op *op, uint64_t t0, uint64_t bytes)
{
	uint64_t dt = bench_now_ns() - t0;

	op->ns += dt;
	op->ops++;
	op->bytes += bytes;
	bench_hist_add(&op->hist, dt);
}

static void
op_print(const struct fsb_op *op, uint64_t ops)
{
	double secs = (double)op->ns / 1e9;

	printf("%s %" PRIu64 " %.6f %.1f %.3f %.2f %.2f\n", op->name, ops,
	    secs, secs > 0 ? (double)ops / secs : 0, secs > 0 ?
	    (double)op->bytes / secs / 1048576.0 : 0,
	    bench_hist_quantile(&op->hist, 0.5) / 1e3,
	    bench_hist_quantile(&op->hist, 0.99) / 1e3);
	fflush(stdout);
}

static void
mkdir_p(const char *path)
{
	char buf[PATH_MAX];

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			fail("mkdir %s: %s", buf, strerror(errno));
		*p = '/';
	}
	if (mkdir(buf, 0755) < 0 && errno != EEXIST)
		fail("mkdir %s: %s", buf, strerror(errno));
}

static void
cell_path(const struct fsb *f, uint64_t i, char *buf, size_t size)
{
	snprintf(buf, size, "%s/row%07" PRIu64 "/f/c/1", f->dir, i);
}

static int
cell_value(uint64_t i, char *buf, size_t size)
{
	return snprintf(buf, size, "value %" PRIu64 "\n", i);
}

static void
cells_create(struct fsb *f)
{
	struct fsb_op op = { .name = "create" };
	char path[PATH_MAX], value[64];

	for (uint64_t i = 0; i < f->cells; i++) {
		cell_path(f, i, path, sizeof(path));
		*strrchr(path, '/') = '\0';
		mkdir_p(path);
	}
	for (uint64_t i = 0; i < f->cells; i++) {
		int n = cell_value(i, value, sizeof(value)), fd;
		uint64_t t0;

		cell_path(f, i, path, sizeof(path));
		t0 = bench_now_ns();
		if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)) < 0)
			fail("create %s: %s", path, strerror(errno));
		if (write(fd, value, (size_t)n) != n)
			fail("write %s: %s", path, strerror(errno));
		if (close(fd) < 0)
			fail("close %s: %s", path, strerror(errno));
		op_time(&op, t0, (uint64_t)n);
	}
	op_print(&op, op.ops);
}

static void
cells_stat(struct fsb *f)
{
	struct fsb_op op = { .name = "stat" };
	char path[PATH_MAX], value[64];
	struct stat st;

	for (uint64_t i = 0; i < f->cells; i++) {
		int n = cell_value(i, value, sizeof(value));
		uint64_t t0;

		cell_path(f, i, path, sizeof(path));
		t0 = bench_now_ns();
		if (stat(path, &st) < 0)
			fail("stat %s: %s", path, strerror(errno));
		op_time(&op, t0, 0);
		if (st.st_size != n)
			fail("stat %s: size %jd, expected %d", path,
			    (intmax_t)st.st_size, n);
	}
	op_print(&op, op.ops);
}

static void
cells_read(struct fsb *f)
{
	struct fsb_op op = { .name = "read" };
	char path[PATH_MAX], value[64], got[128];

	for (uint64_t i = 0; i < f->cells; i++) {
		int n = cell_value(i, value, sizeof(value)), fd;
		ssize_t r;
		uint64_t t0;

		cell_path(f, i, path, sizeof(path));
		t0 = bench_now_ns();
		if ((fd = open(path, O_RDONLY)) < 0)
			fail("open %s: %s", path, strerror(errno));
		if ((r = read(fd, got, sizeof(got))) < 0)
			fail("read %s: %s", path, strerror(errno));
		close(fd);
		op_time(&op, t0, (uint64_t)r);
		if (r != n || memcmp(got, value, (size_t)n) != 0)
			fail("read %s: wrong contents", path);
	}
	op_print(&op, op.ops);
}

/* R listings of the rows; an operation is an entry, the latency a
 * listing's.  The first listing is also printed alone (readdir1): the
 * later ones may come from the kernel's readdir cache, which a
 * filesystem may keep for a directory that has not changed. */
static void
rows_list(struct fsb *f)
{
	struct fsb_op op = { .name = "readdir" };
	struct fsb_op first = { .name = "readdir1" };
	uint64_t entries = 0;

	for (uint64_t r = 0; r < f->readdirs; r++) {
		uint64_t rows = 0, t0 = bench_now_ns();
		struct dirent *de;
		DIR *d;

		if ((d = opendir(f->list)) == NULL)
			fail("opendir %s: %s", f->list, strerror(errno));
		errno = 0;
		while ((de = readdir(d)) != NULL)
			rows += strncmp(de->d_name, "row", 3) == 0;
		if (errno != 0)
			fail("readdir %s: %s", f->list, strerror(errno));
		closedir(d);
		op_time(&op, t0, 0);
		if (r == 0)
			op_time(&first, t0, 0);
		if (rows != f->rows)
			fail("readdir %s: %" PRIu64 " rows, expected %" PRIu64,
			    f->list, rows, f->rows);
		entries += rows;
	}
	op_print(&op, entries);
	if (f->readdirs > 0)
		op_print(&first, f->rows);
}

/* The pattern of big file i at offset off: a word of its number. */
static void
big_fill(char *buf, uint64_t i, uint64_t off)
{
	for (size_t k = 0; k < BIG_CHUNK; k += 8) {
		uint64_t w = bench_mix64(i * BIG_SIZE + off + k);

		memcpy(buf + k, &w, 8);
	}
}

static void
big_write(struct fsb *f)
{
	struct fsb_op op = { .name = "write1m" };
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/big/f/c", f->dir);
	mkdir_p(path);
	for (uint64_t i = 0; i < f->big; i++) {
		uint64_t t0;
		int fd;

		snprintf(path, sizeof(path), "%s/big/f/c/%" PRIu64, f->dir,
		    i + 1);
		big_fill(f->chunk, i, 0);
		t0 = bench_now_ns();
		if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)) < 0)
			fail("create %s: %s", path, strerror(errno));
		for (uint64_t off = 0; off < BIG_SIZE; off += BIG_CHUNK) {
			if (off > 0) {
				/* Off the clock: the pattern. */
				uint64_t t1 = bench_now_ns();

				big_fill(f->chunk, i, off);
				t0 += bench_now_ns() - t1;
			}
			if (write(fd, f->chunk, BIG_CHUNK) != BIG_CHUNK)
				fail("write %s: %s", path, strerror(errno));
		}
		if (close(fd) < 0)
			fail("close %s: %s", path, strerror(errno));
		op_time(&op, t0, BIG_SIZE);
	}
	op_print(&op, op.ops);
}

static void
big_read(struct fsb *f)
{
	struct fsb_op op = { .name = "read1m" };
	char path[PATH_MAX];

	for (uint64_t i = 0; i < f->big; i++) {
		uint64_t t0, off = 0, check = 0;
		int fd;

		snprintf(path, sizeof(path), "%s/big/f/c/%" PRIu64, f->dir,
		    i + 1);
		t0 = bench_now_ns();
		if ((fd = open(path, O_RDONLY)) < 0)
			fail("open %s: %s", path, strerror(errno));
		for (;;) {
			ssize_t r = read(fd, f->got, BIG_CHUNK);
			uint64_t t1;

			if (r < 0)
				fail("read %s: %s", path, strerror(errno));
			if (r == 0)
				break;
			t1 = bench_now_ns();
			if (r != BIG_CHUNK || off >= BIG_SIZE)
				fail("read %s: %zd bytes at %" PRIu64, path, r,
				    off);
			big_fill(f->chunk, i, off);
			if (memcmp(f->chunk, f->got, BIG_CHUNK) != 0)
				fail("read %s: wrong bytes at %" PRIu64, path,
				    off);
			check += bench_now_ns() - t1;
			off += (uint64_t)r;
		}
		close(fd);
		op_time(&op, t0 + check, off);
		if (off != BIG_SIZE)
			fail("read %s: %" PRIu64 " bytes", path, off);
	}
	op_print(&op, op.ops);
}

static uint64_t
parse_count(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || *s == '-')
		usage();
	return v;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "cells", required_argument, NULL, 'c' },
		{ "big", required_argument, NULL, 'b' },
		{ "readdirs", required_argument, NULL, 'r' },
		{ "list", required_argument, NULL, 'l' },
		{ "rows", required_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 },
	};
	struct fsb f = { .cells = 100000, .big = 64, .readdirs = 3 };
	bool rows_set = false;
	int ch;

	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			f.cells = parse_count(optarg);
			break;
		case 'b':
			f.big = parse_count(optarg);
			break;
		case 'r':
			f.readdirs = parse_count(optarg);
			break;
		case 'l':
			f.list = optarg;
			break;
		case 'n':
			f.rows = parse_count(optarg);
			rows_set = true;
			break;
		default:
			usage();
		}
	}
	if (optind != argc - 1)
		usage();
	f.dir = argv[optind];
	if (f.list == NULL)
		f.list = f.dir;
	if (!rows_set)
		f.rows = f.list == f.dir ? f.cells : 0;
	if ((f.chunk = malloc(BIG_CHUNK)) == NULL ||
	    (f.got = malloc(BIG_CHUNK)) == NULL)
		fail("out of memory");
	cells_create(&f);
	cells_stat(&f);
	cells_read(&f);
	rows_list(&f);
	big_write(&f);
	big_read(&f);
	free(f.chunk);
	free(f.got);
	return 0;
}
