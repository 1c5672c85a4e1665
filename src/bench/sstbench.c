/*
 * sstbench - build one SSTable and time reading it back.
 *
 *	sstbench [-n ENTRIES] [-k KEYBYTES] [-v VALUEBYTES] [-c CACHE_MB]
 *	    [-b BLOCKBYTES] [-d DIR]
 *
 * Builds a table of ENTRIES entries (keys in order, values that Snappy
 * compresses to about half, as db_bench makes them) on the local
 * filesystem, then measures, each on one line: the build, ENTRIES random
 * lookups of present keys (a fresh reader and block cache), ENTRIES lookups
 * of absent keys (answered mostly by the Bloom filter), and one sequential
 * scan; then the file size and the peak RSS.  The table goes to DIR
 * (default: a fresh directory under /tmp, removed afterwards).  Blocks
 * are 64 KiB unless -b says otherwise.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "sstable/format.h"
#include "sstable/sstable.h"
#include "util/cache.h"
#include "util/env.h"
#include "util/error.h"

/* db_bench's compressible data: each 100-byte run repeats 50 random
 * printable bytes, so Snappy halves it. */
#define BENCH_DATA_SIZE	(1u << 20)
#define BENCH_COMPRESSIBLE_FRACTION 2

struct bench {
	uint64_t n;
	size_t key_len;
	size_t value_len;
	size_t cache_mb;
	size_t block_size;
	char path[PATH_MAX];
	struct env *env;
	uint8_t *data;		/* compressible source of values */
	size_t data_len;
	size_t data_pos;
	uint64_t rng;
	uint64_t file_size;
};

static void __attribute__((noreturn))
usage(void)
{
	fprintf(stderr, "usage: sstbench [-n ENTRIES] [-k KEYBYTES] "
	    "[-v VALUEBYTES] [-c CACHE_MB] [-b BLOCKBYTES] [-d DIR]\n");
	exit(2);
}

static void __attribute__((noreturn))
fail(const char *what, int rc)
{
	const char *detail = bt_error_detail();

	fprintf(stderr, "sstbench: %s: %s%s%s\n", what, bt_strerror(rc),
	    *detail != '\0' ? ": " : "", detail);
	exit(1);
}

static uint64_t
parse_count(const char *s, uint64_t min, uint64_t max)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < min || v > max) {
		fprintf(stderr, "sstbench: bad number \"%s\" (%" PRIu64
		    "..%" PRIu64 ")\n", s, min, max);
		exit(2);
	}
	return v;
}

/* xorshift64*: the benchmark's own, seeded from the clock. */
static uint64_t
bench_rand(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545f4914f6cdd1dull;
}

static double
now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
bench_make_data(struct bench *b)
{
	size_t run = 100, keep = run / BENCH_COMPRESSIBLE_FRACTION;

	b->data_len = b->value_len > BENCH_DATA_SIZE ? b->value_len :
	    BENCH_DATA_SIZE;
	if ((b->data = malloc(b->data_len)) == NULL)
		fail("value data", -ENOMEM);
	for (size_t off = 0; off < b->data_len; off += run) {
		uint8_t piece[100];
		size_t n = b->data_len - off < run ? b->data_len - off : run;

		for (size_t i = 0; i < keep; i++)
			piece[i] = (uint8_t)(' ' + bench_rand(&b->rng) % 95);
		for (size_t i = keep; i < run; i++)
			piece[i] = piece[i - keep];
		memcpy(b->data + off, piece, n);
	}
	b->data_pos = 0;
}

/* The next value: a window sliding over the compressible data. */
static struct slice
bench_value(struct bench *b)
{
	if (b->data_pos + b->value_len > b->data_len)
		b->data_pos = 0;
	b->data_pos += b->value_len;
	return slice_make(b->data + b->data_pos - b->value_len, b->value_len);
}

/*
 * Key number v as key_len decimal digits, zero-padded (longer keys are
 * padded on the left with zeros too).  Table entry i has key 2i; 2i + 1
 * is absent.
 */
static struct slice
bench_key(const struct bench *b, uint64_t v, char *buf)
{
	char digits[24];
	int nd = snprintf(digits, sizeof(digits), "%" PRIu64, v);
	size_t pad = b->key_len - (size_t)nd;

	memset(buf, '0', pad);
	memcpy(buf + pad, digits, (size_t)nd);
	return slice_make(buf, b->key_len);
}

static void
report(const char *phase, uint64_t ops, uint64_t bytes, double secs,
    const char *extra)
{
	if (secs <= 0)
		secs = 1e-9;
	printf("%-12s %10" PRIu64 " ops %8.3f s %12.0f ops/s %9.1f MB/s%s%s\n",
	    phase, ops, secs, (double)ops / secs,
	    (double)bytes / secs / 1048576.0, *extra != '\0' ? "  " : "",
	    extra);
	fflush(stdout);
}

static void
bench_build(struct bench *b)
{
	struct sst_options opts;
	struct sst_builder *sb;
	struct sst_info info;
	char *key = malloc(b->key_len);
	double t0, t1;
	char extra[128];
	int rc;

	sst_options_default(&opts);
	opts.block_size = b->block_size;
	t0 = now_seconds();
	if ((rc = sst_builder_new(b->env, b->path, &opts, &sb)) < 0)
		fail(b->path, rc);
	for (uint64_t i = 0; i < b->n; i++)
		if ((rc = sst_builder_add(sb, bench_key(b, 2 * i, key),
		    bench_value(b))) < 0)
			fail("add", rc);
	if ((rc = sst_builder_finish(sb, &info)) < 0)
		fail("finish", rc);
	sst_builder_free(sb);
	t1 = now_seconds();
	b->file_size = info.file_size;
	snprintf(extra, sizeof(extra), "(%" PRIu64 " blocks, synced)",
	    info.block_count);
	report("build", b->n, b->n * (b->key_len + b->value_len), t1 - t0,
	    extra);
	free(key);
}

static void
bench_read(struct bench *b)
{
	struct sst_reader *r;
	struct sst_reader_stats st;
	struct cache_stats cs;
	struct cache *cache;
	struct iter *it;
	struct buf value;
	char *key = malloc(b->key_len), extra[160];
	uint64_t found = 0, bytes = 0, reads0, count;
	double t0;
	int rc;

	buf_init(&value);
	if ((rc = cache_new(b->cache_mb << 20, &cache)) < 0)
		fail("cache", rc);
	if ((rc = sst_reader_open(b->env, b->path, cache_new_id(cache), cache,
	    NULL, &r)) < 0)
		fail(b->path, rc);

	t0 = now_seconds();
	for (uint64_t i = 0; i < b->n; i++) {
		uint64_t k = bench_rand(&b->rng) % b->n;

		rc = sst_reader_get(r, bench_key(b, 2 * k, key), &value);
		if (rc < 0)
			fail("get", rc);
		if (rc == 0) {
			found++;
			bytes += b->key_len + value.n;
		}
	}
	cache_get_stats(cache, &cs);
	snprintf(extra, sizeof(extra), "(%" PRIu64 " of %" PRIu64
	    " found, cache hit %.1f %%)", found, b->n,
	    cs.hits + cs.misses ? 100.0 * (double)cs.hits /
	    (double)(cs.hits + cs.misses) : 0.0);
	report("readrandom", b->n, bytes, now_seconds() - t0, extra);
	if (found != b->n)
		fail("readrandom: present keys not found", BT_ECORRUPT);

	sst_reader_get_stats(r, &st);
	reads0 = st.block_reads;
	found = 0;
	t0 = now_seconds();
	for (uint64_t i = 0; i < b->n; i++) {
		uint64_t k = bench_rand(&b->rng) % b->n;

		rc = sst_reader_get(r, bench_key(b, 2 * k + 1, key), &value);
		if (rc < 0)
			fail("get", rc);
		found += rc == 0;
	}
	sst_reader_get_stats(r, &st);
	snprintf(extra, sizeof(extra), "(%" PRIu64 " answered by the filter, "
	    "%" PRIu64 " blocks read)", st.filter_negatives,
	    st.block_reads - reads0);
	report("readmissing", b->n, b->n * b->key_len, now_seconds() - t0,
	    extra);
	if (found != 0)
		fail("readmissing: absent keys found", BT_ECORRUPT);

	if ((rc = sst_reader_iter_new(r, 0, &it)) < 0)
		fail("iterator", rc);
	count = bytes = 0;
	t0 = now_seconds();
	for (rc = iter_seek_first(it); rc == 0 && iter_valid(it);
	    rc = iter_next(it)) {
		count++;
		bytes += iter_key(it).n + iter_value(it).n;
	}
	if (rc < 0)
		fail("scan", rc);
	report("readseq", count, bytes, now_seconds() - t0, "");
	iter_free(it);

	sst_reader_unref(r);
	cache_free(cache);
	buf_release(&value);
	free(key);
}

int
main(int argc, char **argv)
{
	struct bench b;
	struct rusage ru;
	char tmpdir[] = "/tmp/sstbench.XXXXXX";
	const char *dir = NULL;
	int ch, rc;

	memset(&b, 0, sizeof(b));
	b.n = 1000000;
	b.key_len = 16;
	b.value_len = 100;
	b.cache_mb = 8;
	b.block_size = SST_DEFAULT_BLOCK_SIZE;
	while ((ch = getopt(argc, argv, "n:k:v:c:b:d:")) != -1) {
		switch (ch) {
		case 'n':
			b.n = parse_count(optarg, 1, UINT64_C(1) << 40);
			break;
		case 'k':
			b.key_len = parse_count(optarg, 1, 65536);
			break;
		case 'v':
			b.value_len = parse_count(optarg, 0, 64u << 20);
			break;
		case 'c':
			b.cache_mb = parse_count(optarg, 0, 1u << 20);
			break;
		case 'b':
			b.block_size = parse_count(optarg, 256, 1u << 30);
			break;
		case 'd':
			dir = optarg;
			break;
		default:
			usage();
		}
	}
	if (optind != argc)
		usage();
	if (b.key_len < (size_t)snprintf(NULL, 0, "%" PRIu64, 2 * b.n)) {
		fprintf(stderr, "sstbench: %zu-byte keys cannot number %"
		    PRIu64 " entries\n", b.key_len, b.n);
		return 2;
	}
	if (dir == NULL) {
		if (mkdtemp(tmpdir) == NULL) {
			perror("sstbench: mkdtemp");
			return 1;
		}
	}
	snprintf(b.path, sizeof(b.path), "%s/sstbench-%ld.sst",
	    dir != NULL ? dir : tmpdir, (long)getpid());
	b.rng = (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ull | 1;
	if ((rc = env_posix_new(&b.env)) < 0)
		fail("env", rc);
	bench_make_data(&b);

	printf("sstbench: %" PRIu64 " entries, %zu-byte keys, %zu-byte values, "
	    "%zu-byte blocks, %zu MiB cache, %s\n", b.n, b.key_len,
	    b.value_len, b.block_size, b.cache_mb, b.path);
	bench_build(&b);
	printf("%-12s %10" PRIu64 " bytes (%.1f MB, %.2f of raw)\n", "file",
	    b.file_size, (double)b.file_size / 1048576.0,
	    (double)b.file_size / (double)(b.n * (b.key_len + b.value_len)));
	bench_read(&b);

	getrusage(RUSAGE_SELF, &ru);
	printf("%-12s %10ld KiB\n", "peak_rss", ru.ru_maxrss);

	env_path_remove(b.env, b.path);
	if (dir == NULL)
		rmdir(tmpdir);
	env_free(b.env);
	free(b.data);
	return 0;
}
