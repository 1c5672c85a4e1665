/*
 * tabletbench - a db_bench-style benchmark of tabletfs through its C API,
 * side by side with LevelDB, RocksDB and SQLite through theirs.
 *
 *	tabletbench [--engines LIST] [--num N] [--reads N] [--seeks N]
 *	    [--syncs N] [--value-size B] [--key-size K] [--incompressible]
 *	    [--figure6] [--benchmarks LIST] [--runs R] [--db DIR] [--cache-mb M]
 *	    [--memtable-mb M] [--block-kb K] [--threads T[,T...]] [--seed S]
 *	    [--json] [--cell ADDRESS [--cell-tablets K]]
 *
 * Each engine runs the whole suite in a child process of its own (so its
 * peak RSS is its own), one engine after the other within a run, and the
 * summary gives, per benchmark, every engine's median over --runs and the
 * ratio tabletfs/engine of the speeds.
 *
 * Defaults as db_bench's: 1,000,000 entries of 16-byte keys and 100-byte
 * values that Snappy compresses to about half (slices of a buffer of
 * compressible random text), and the benchmarks fillseq, fillrandom,
 * overwrite, fillsync, readrandom, readmissing, readpastend, readseq,
 * seekrandom, compact, readrandom.  readrandom, readmissing and
 * readpastend do --reads gets (default N); seekrandom does --seeks seeks
 * (default N / 10), each reading 100 rows.  Entry i has the key 2i in
 * decimal, zero-padded; readmissing asks for 2i + 1, between present
 * keys, and readpastend for 2(N + i) + 1, past the last key, where a
 * store that knows its files' key ranges need not consult a filter.
 * Random fills and overwrite write every key
 * once in a random order, and a value is a function of its key and of the
 * pass that wrote it, so every read checks what it got; a mismatch makes
 * the exit status 1.
 *
 * fillseq and fillrandom start from a fresh store; fillsync writes --syncs
 * entries (default N/100) synchronously into a store of its own, with one
 * thread and with --threads, to show group commit.  readwhilewriting
 * reads like readrandom while one more thread rewrites random entries
 * (with the values they have) as fast as it can; increment adds 1 to
 * N/10 counters ten times each, in random order, in a store of its own,
 * and checks every sum.
 * readhot reads random keys of the first 1 %, readsequential reads every
 * key in order with point reads.  readwhilestreaming (not in the default
 * list) adds 32 values of 1 MiB after the entries, compacts, reads every
 * entry once, and then reads like readrandom while one more thread reads
 * the large values in turn, as a reader of large files would: whether
 * the large blocks push the small ones out of the block cache shows in
 * the readers' speed and, where the engine counts them, their cache
 * hits.  The large values stay, so a read benchmark after it needs a fill
 * first.  Each benchmark prints one line:
 * ops/s, MB/s, p50 and p99 latency and the peak RSS while it ran.  With
 * --runs R the suite runs R times on fresh stores and the summary gives
 * the median ops/s.  --json prints one JSON object instead (progress goes
 * to stderr).  --figure6 is the Bigtable paper's Figure 6 set: 1000-byte
 * incompressible values, N 100000 unless given, and the benchmarks
 * fillseq, readsequential, readseq, fillrandom, readrandom, readhot.
 * The stores live under --db DIR (default: a mkdtemp directory under
 * /tmp) and are removed at the end, on errors and on SIGINT/SIGTERM.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>	/* with libbsd's overlay: strlcpy */
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"

#define DATA_SIZE	(1u << 20)	/* compressible text values come from */
#define DATA_PIECE	100		/* half random, half a repeat */
#define SEEK_ROWS	100		/* rows read after each seek */
#define SYNC_DIVISOR	100		/* fillsync writes num / 100 */
#define COUNTER_DIVISOR	10		/* increment: num / 10 counters */
#define MAX_VALUE	(64u << 20)
#define MAX_THREAD_COUNTS	8	/* in --threads */

#define INCREMENTS	10		/* increments per counter */
#define FIGURE6_VALUE	1000
#define FIGURE6_NUM	100000
/* readwhilestreaming: large values, more of them than a cache of 16 MiB
 * holds, so that every one streamed is read from its file. */
#define STREAM_VALUES	32
#define STREAM_VALUE_SIZE	(1u << 20)
#define STREAM_CHECKED	64		/* bytes of each compared */

enum bench_kind {
	FILLSEQ, FILLRANDOM, OVERWRITE, FILLSYNC, READRANDOM, READMISSING,
	READPASTEND, READSEQ, SEEKRANDOM, COMPACT, READWHILEWRITING,
	INCREMENT, READHOT, READSEQUENTIAL, READWHILESTREAMING, BENCH_KINDS
};

static const char *const bench_names[BENCH_KINDS] = {
	"fillseq", "fillrandom", "overwrite", "fillsync", "readrandom",
	"readmissing", "readpastend", "readseq", "seekrandom", "compact", "readwhilewriting",
	"increment", "readhot", "readsequential", "readwhilestreaming",
};

static const char default_benchmarks[] = "fillseq,fillrandom,overwrite,"
    "fillsync,readrandom,readmissing,readpastend,readseq,seekrandom,"
    "readwhilewriting,increment,compact,readrandom";
static const char figure6_benchmarks[] = "fillseq,readsequential,readseq,"
    "fillrandom,readrandom,readhot";

/* Every engine tabletbench knows, and whether this build has it. */
static const struct engine_entry {
	const char *name;
	const struct engine *engine;	/* NULL: not built */
	const char *package;
} engine_table[] = {
	{ "tabletfs", &engine_tabletfs, NULL },
	/* Only with --cell: the same calls through a cell's RPC. */
	{ "cell", &engine_cell, NULL },
#ifdef HAVE_LEVELDB
	{ "leveldb", &engine_leveldb, "libleveldb-dev" },
#else
	{ "leveldb", NULL, "libleveldb-dev" },
#endif
#ifdef HAVE_ROCKSDB
	{ "rocksdb", &engine_rocksdb, "librocksdb-dev" },
#else
	{ "rocksdb", NULL, "librocksdb-dev" },
#endif
	{ "sqlite", &engine_sqlite, NULL },
};
#define ENGINE_TABLE_SIZE	(sizeof(engine_table) / sizeof(engine_table[0]))

struct bench_opts {
	const char *engines;	/* NULL: every engine built */
	const char *cell;	/* --cell: a cell's address, for "cell" */
	uint64_t cell_tablets;	/* --cell-tablets: its table's, at first */
	uint64_t num;
	uint64_t reads;
	uint64_t seeks;
	uint64_t syncs;		/* fillsync's writes */
	uint64_t key_size;
	uint64_t value_size;
	const char *benchmarks;
	uint64_t runs;
	uint64_t threads;	/* the first of thread_counts */
	uint64_t thread_counts[MAX_THREAD_COUNTS];	/* fillsync's */
	size_t nthread_counts;
	const char *db;
	uint64_t cache_mb;	/* 0: the engine's default */
	uint64_t memtable_mb;
	uint64_t block_kb;
	uint64_t seed;
	bool incompressible;
	bool figure6;
	bool json;
};

struct bench {
	struct bench_opts o;
	const struct engine *eng;	/* the child's engine */
	const struct engine *engines[ENGINE_TABLE_SIZE];
	size_t nengines;
	struct engine_config cfg;
	struct bench_slot *slots;
	size_t nslots;
	struct bench_result *results;	/* runs x engines x slots */
	_Atomic pid_t child;	/* the engine's process, while it runs */
	char root[PATH_MAX];	/* the directory holding the stores */
	bool root_made;		/* made by mkdtemp, removed at the end */
	char main_path[PATH_MAX];
	char side_path[PATH_MAX];	/* fillsync's store */
	void *db;		/* the main store */
	bool db_used;		/* written since it was created */
	uint64_t db_keys;	/* entries 0..db_keys-1 are present */
	uint64_t db_epoch;	/* the write pass their values come from */
	uint64_t epochs;	/* write passes so far */
	uint64_t rng;
	char *data;		/* compressible text */
	/* --cell-tablets' split keys, in cfg.cell_splits too */
	struct bench_bytes *cell_splits;
	char *cell_split_keys;
	size_t value_slots;	/* value offsets: multiples of DATA_PIECE */
	FILE *out;		/* the human-readable lines */
	sigset_t signals;	/* handled by bench_signal_main */
	sem_t signal_ready;	/* posted once that thread has started */
};

/* What one benchmark's threads do, shared by them. */
struct phase {
	const struct bench *b;
	enum bench_kind kind;
	void *db;
	uint64_t count;		/* operations over all threads */
	struct bench_perm perm;	/* key order of random writes */
	uint64_t epoch;		/* writes: the pass; reads: the expected */
	uint64_t keys;		/* reads: entries present; counters */
	bool sync;
	bool writer;		/* readwhilewriting: worker 0 writes; */
				/* readwhilestreaming: worker 0 streams */
	const char *stream_data;	/* readwhilestreaming: large values */
	uint64_t stream_gets;	/* values the streamer read */
	atomic_bool failed;
	atomic_bool readers_done;	/* the writer stops */
	atomic_uint readers_left;
	pthread_barrier_t start;
};

struct worker {
	struct phase *ph;
	pthread_t tid;
	uint64_t lo, hi;	/* operation numbers */
	uint64_t rng;
	char *key;
	char *want_key;
	struct bench_buf value;
	struct bench_buf rows;	/* seekrandom: the rows, checked later */
	uint64_t ops, bytes, mismatches;
	bool background;	/* the writer or streamer: not counted */
	uint64_t busy_ns;	/* inside the engine's calls */
	uint64_t span_ns;	/* from the common start to this one's end */
	uint64_t cpu_ns;	/* this thread's processor time meanwhile */
	int rc;
	char error[256];
	char first_mismatch[256];
	struct bench_hist hist;
};

static void __attribute__((noreturn))
usage(void)
{
	fprintf(stderr, "usage: tabletbench [--engines LIST] [--num N] "
	    "[--reads N] [--seeks N]\n\t[--syncs N] [--value-size B] "
	    "[--key-size K] [--incompressible] [--figure6]\n\t"
	    "[--benchmarks LIST] "
	    "[--runs R] [--db DIR] [--cache-mb M]\n\t[--memtable-mb M] "
	    "[--block-kb K] [--threads T[,T...]] [--seed S] [--json]\n\t"
	    "[--cell ADDRESS [--cell-tablets K]]\n"
	    "engines: tabletfs leveldb rocksdb sqlite\n"
	    "benchmarks: fillseq fillrandom overwrite fillsync readrandom "
	    "readmissing\n\treadpastend readseq seekrandom compact "
	    "readwhilewriting increment\n\treadhot readsequential "
	    "readwhilestreaming\n");
	exit(2);
}

static void *
xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (p == NULL) {
		fprintf(stderr, "tabletbench: out of memory\n");
		abort();
	}
	return p;
}

static uint64_t
parse_u64(const char *name, const char *s, uint64_t min, uint64_t max)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || *s == '-' || v < min ||
	    v > max) {
		fprintf(stderr, "tabletbench: --%s: bad number \"%s\" (%"
		    PRIu64 "..%" PRIu64 ")\n", name, s, min, max);
		exit(2);
	}
	return v;
}

/* A read after a compact in the list is labelled "NAME+compacted". */
static void
bench_slot_add(struct bench *b, int kind, unsigned threads, bool compacted)
{
	struct bench_slot *sl = &b->slots[b->nslots++];
	bool read = kind == READRANDOM || kind == READMISSING ||
	    kind == READPASTEND || kind == READSEQ || kind == SEEKRANDOM || kind == READHOT ||
	    kind == READSEQUENTIAL || kind == READWHILEWRITING ||
	    kind == READWHILESTREAMING;

	sl->kind = kind;
	sl->threads = threads;
	snprintf(sl->label, sizeof(sl->label), "%s%s", bench_names[kind],
	    compacted && read ? "+compacted" : "");
}

/* The benchmark list as slots: fillsync once per thread count. */
static void
bench_slots_parse(struct bench *b)
{
	char *list = strdup(b->o.benchmarks), *save = NULL, *name;
	bool compacted = false;
	int k;

	if (list == NULL)
		abort();
	b->slots = xcalloc(strlen(list) + 2, 2 * sizeof(*b->slots));
	for (name = strtok_r(list, ",", &save); name != NULL;
	    name = strtok_r(NULL, ",", &save)) {
		for (k = 0; k < BENCH_KINDS; k++)
			if (strcmp(name, bench_names[k]) == 0)
				break;
		if (k == BENCH_KINDS) {
			fprintf(stderr, "tabletbench: unknown benchmark "
			    "\"%s\"\n", name);
			usage();
		}
		if (k == FILLSEQ || k == FILLRANDOM)
			compacted = false;
		bench_slot_add(b, k, 1, compacted);
		for (size_t t = 0; k == FILLSYNC && t < b->o.nthread_counts;
		    t++)
			if (b->o.thread_counts[t] > 1)
				bench_slot_add(b, k,
				    (unsigned)b->o.thread_counts[t], false);
		if (k == COMPACT)
			compacted = true;
	}
	free(list);
	if (b->nslots == 0)
		usage();
}

/* db_bench's compressible text: each DATA_PIECE bytes repeat their
 * first half, so Snappy halves any value cut at a piece boundary.  With
 * --incompressible, random bytes. */
static void
bench_data_make(struct bench *b)
{
	size_t half = DATA_PIECE / 2, len;

	len = (b->o.value_size + DATA_SIZE + DATA_PIECE - 1) / DATA_PIECE *
	    DATA_PIECE;
	b->data = xcalloc(len, 1);
	for (size_t off = 0; off < len && b->o.incompressible; off += 8) {
		uint64_t r = bench_rand(&b->rng);

		memcpy(b->data + off, &r, len - off < 8 ? len - off : 8);
	}
	for (size_t off = 0; off < len && !b->o.incompressible;
	    off += DATA_PIECE) {
		for (size_t i = 0; i < half; i++)
			b->data[off + i] = (char)(' ' + bench_rand(&b->rng) %
			    95);
		memcpy(b->data + off + half, b->data + off, DATA_PIECE - half);
	}
	b->value_slots = (len - b->o.value_size) / DATA_PIECE + 1;
}

/* Key number v in key_size decimal digits, zero-padded. */
static struct bench_bytes
bench_key(const struct bench *b, uint64_t v, char *buf)
{
	for (size_t i = b->o.key_size; i > 0; v /= 10)
		buf[--i] = (char)('0' + v % 10);
	return (struct bench_bytes){ buf, b->o.key_size };
}

/* With --cell-tablets K, the cell engine's table starts as K tablets of
 * as many entries each, split at key numbers num * i / K. */
static void
bench_cell_splits_make(struct bench *b)
{
	size_t n = b->o.cell_tablets > 1 ? b->o.cell_tablets - 1 : 0;

	if (n == 0)
		return;
	b->cell_splits = xcalloc(n, sizeof(*b->cell_splits));
	b->cell_split_keys = xcalloc(n, b->o.key_size);
	for (size_t i = 0; i < n; i++)
		b->cell_splits[i] = bench_key(b, b->o.num * (i + 1) /
		    b->o.cell_tablets, b->cell_split_keys + i * b->o.key_size);
	b->cfg.cell_splits = b->cell_splits;
	b->cfg.cell_split_count = n;
}

/* The value write pass epoch gives entry k. */
static struct bench_bytes
bench_value(const struct bench *b, uint64_t k, uint64_t epoch)
{
	uint64_t h = bench_mix64(k ^ bench_mix64(epoch ^ b->o.seed));

	return (struct bench_bytes){ b->data + h % b->value_slots *
	    DATA_PIECE, b->o.value_size };
}

static bool
bytes_equal(struct bench_bytes a, struct bench_bytes b)
{
	return a.n == b.n && (a.n == 0 || memcmp(a.p, b.p, a.n) == 0);
}

/* ---- Workers ---- */

static void
worker_fail(struct worker *w, const char *what, int rc)
{
	const char *detail = bt_error_detail();

	w->rc = rc;
	snprintf(w->error, sizeof(w->error), "%s: %s%s%s", what,
	    bt_strerror(rc), *detail != '\0' ? ": " : "", detail);
	atomic_store(&w->ph->failed, true);
}

static void __attribute__((format(printf, 3, 4)))
worker_mismatch(struct worker *w, struct bench_bytes key, const char *fmt,
    ...)
{
	va_list ap;
	int n;

	if (w->mismatches++ > 0)
		return;
	n = snprintf(w->first_mismatch, sizeof(w->first_mismatch),
	    "key %.*s: ", (int)(key.n < 40 ? key.n : 40),
	    (const char *)key.p);
	va_start(ap, fmt);
	vsnprintf(w->first_mismatch + n, sizeof(w->first_mismatch) - (size_t)n,
	    fmt, ap);
	va_end(ap);
}

static bool
worker_stopped(struct worker *w)
{
	return atomic_load_explicit(&w->ph->failed, memory_order_relaxed);
}

/* Count t1 - t0 as time in the engine; latency too when sample. */
static void
worker_time(struct worker *w, uint64_t t0, uint64_t t1, bool sample)
{
	w->busy_ns += t1 - t0;
	if (sample)
		bench_hist_add(&w->hist, t1 - t0);
}

/* Put entry k with its value of this phase, timed and counted; false
 * (the worker failed) on an error. */
static bool
worker_put(struct worker *w, uint64_t k, bool sync)
{
	const struct phase *ph = w->ph;
	const struct bench *b = ph->b;
	struct bench_bytes key = bench_key(b, 2 * k, w->key);
	struct bench_bytes value = bench_value(b, k, ph->epoch);
	uint64_t t0 = bench_now_ns();
	int rc = b->eng->put(ph->db, key, value, sync);

	worker_time(w, t0, bench_now_ns(), true);
	if (rc < 0) {
		worker_fail(w, "put", rc);
		return false;
	}
	w->ops++;
	w->bytes += key.n + value.n;
	return true;
}

/* fillseq, fillrandom, overwrite, fillsync. */
static void
worker_write(struct worker *w)
{
	const struct phase *ph = w->ph;

	for (uint64_t i = w->lo; i < w->hi && !worker_stopped(w); i++) {
		uint64_t k = ph->kind == FILLSEQ ? i :
		    bench_perm_at(&ph->perm, i);

		if (!worker_put(w, k, ph->sync))
			return;
	}
}

/*
 * readrandom and readwhilewriting (random present keys), readhot (random
 * keys of the first 1 %), readsequential (every key in order),
 * readmissing (absent keys between present ones) and readpastend (absent
 * keys after the last one).
 */
static void
worker_read(struct worker *w)
{
	const struct phase *ph = w->ph;
	const struct bench *b = ph->b;
	bool missing = ph->kind == READMISSING || ph->kind == READPASTEND;
	uint64_t past = ph->kind == READPASTEND ? ph->keys : 0;
	uint64_t hot = (ph->keys + 99) / 100;

	for (uint64_t i = w->lo; i < w->hi && !worker_stopped(w); i++) {
		uint64_t k = ph->kind == READSEQUENTIAL ? i % ph->keys :
		    ph->kind == READHOT ? bench_rand(&w->rng) % hot :
		    bench_rand(&w->rng) % ph->keys;
		struct bench_bytes key = bench_key(b, 2 * (k + past) + missing,
		    w->key);
		struct bench_bytes want, got;
		uint64_t t0 = bench_now_ns();
		int rc = b->eng->get(ph->db, key, &w->value);

		worker_time(w, t0, bench_now_ns(), true);
		if (rc < 0) {
			worker_fail(w, "get", rc);
			return;
		}
		w->ops++;
		w->bytes += key.n;
		if (missing) {
			if (rc != BT_NOTFOUND)
				worker_mismatch(w, key, "absent key found");
			continue;
		}
		if (rc == BT_NOTFOUND) {
			worker_mismatch(w, key, "not found");
			continue;
		}
		if (rc == ENGINE_MALFORMED) {
			worker_mismatch(w, key, "malformed row");
			continue;
		}
		w->bytes += w->value.n;
		want = bench_value(b, k, ph->epoch);
		got = (struct bench_bytes){ w->value.p, w->value.n };
		if (!bytes_equal(want, got))
			worker_mismatch(w, key, "wrong value (%zu bytes, "
			    "expected %zu)", got.n, want.n);
	}
}

/*
 * Check scan entry number k: its key and value.  False (after counting
 * one mismatch) when it is wrong.
 */
static bool
worker_check_entry(struct worker *w, uint64_t k, struct bench_bytes key,
    struct bench_bytes value)
{
	const struct bench *b = w->ph->b;
	struct bench_bytes want = bench_key(b, 2 * k, w->want_key);

	if (!bytes_equal(key, want)) {
		worker_mismatch(w, want, "scan gave key %.*s instead",
		    (int)(key.n < 40 ? key.n : 40), (const char *)key.p);
		return false;
	}
	if (!bytes_equal(value, bench_value(b, k, w->ph->epoch))) {
		worker_mismatch(w, want, "wrong value in scan (%zu bytes)",
		    value.n);
		return false;
	}
	return true;
}

/* Keep a copy of a scanned entry in w->rows, to check after the clock
 * stops: a length word each, then the key and the value. */
static void
worker_keep(struct worker *w, struct bench_bytes k, struct bench_bytes v)
{
	size_t need = 2 * sizeof(size_t) + k.n + v.n;
	char *p;

	if (bench_buf_reserve(&w->rows, w->rows.n + need) < 0)
		abort();
	p = w->rows.p + w->rows.n;
	memcpy(p, &k.n, sizeof(size_t));
	memcpy(p + sizeof(size_t), &v.n, sizeof(size_t));
	p += 2 * sizeof(size_t);
	memcpy(p, k.p, k.n);
	memcpy(p + k.n, v.p, v.n);
	w->rows.n += need;
}

/* Check the entries worker_keep kept, the first being entry number j. */
static void
worker_check_kept(struct worker *w, uint64_t j)
{
	struct bench_bytes k, v;

	for (size_t off = 0; off < w->rows.n; j++) {
		memcpy(&k.n, w->rows.p + off, sizeof(size_t));
		memcpy(&v.n, w->rows.p + off + sizeof(size_t), sizeof(size_t));
		off += 2 * sizeof(size_t);
		k.p = w->rows.p + off;
		v.p = w->rows.p + off + k.n;
		off += k.n + v.n;
		if (!worker_check_entry(w, j, k, v))
			break;
	}
}

/*
 * seekrandom: open a scan at a random present key and read SEEK_ROWS rows,
 * copying them; they are checked after the clock stops.
 */
static void
worker_seek(struct worker *w)
{
	const struct phase *ph = w->ph;
	const struct bench *b = ph->b;

	for (uint64_t i = w->lo; i < w->hi && !worker_stopped(w); i++) {
		uint64_t j = bench_rand(&w->rng) % ph->keys, rows = 0;
		uint64_t want = ph->keys - j < SEEK_ROWS ? ph->keys - j :
		    SEEK_ROWS, mismatches = w->mismatches;
		struct bench_bytes start = bench_key(b, 2 * j, w->key), k, v;
		uint64_t t0;
		void *it;
		int rc;

		w->rows.n = 0;
		t0 = bench_now_ns();
		if ((rc = b->eng->scan_open(ph->db, start, SEEK_ROWS,
		    &it)) < 0) {
			worker_fail(w, "scan_open", rc);
			return;
		}
		while (rows < SEEK_ROWS &&
		    (rc = b->eng->scan_next(it, &k, &v)) == 0) {
			worker_keep(w, k, v);
			rows++;
		}
		b->eng->scan_close(it);
		worker_time(w, t0, bench_now_ns(), true);
		if (rc < 0) {
			worker_fail(w, "scan_next", rc);
			return;
		}
		w->ops++;
		w->bytes += w->rows.n - rows * 2 * sizeof(size_t);
		worker_check_kept(w, j);
		if (w->mismatches > mismatches)
			continue;
		if (rc == ENGINE_MALFORMED)
			worker_mismatch(w, start, "malformed row in scan");
		else if (rows != want)
			worker_mismatch(w, start, "scan gave %" PRIu64
			    " rows, expected %" PRIu64, rows, want);
	}
}

/* readseq: one scan over everything; an operation is a row. */
static void
worker_scan(struct worker *w)
{
	const struct phase *ph = w->ph;
	const struct bench *b = ph->b;
	struct bench_bytes k, v;
	uint64_t t0 = bench_now_ns(), rows = 0;
	void *it;
	int rc;

	if ((rc = b->eng->scan_open(ph->db, (struct bench_bytes){ NULL, 0 },
	    0, &it)) < 0) {
		worker_fail(w, "scan_open", rc);
		return;
	}
	worker_time(w, t0, bench_now_ns(), false);
	for (;;) {
		t0 = bench_now_ns();
		rc = b->eng->scan_next(it, &k, &v);
		worker_time(w, t0, bench_now_ns(), rc == 0);
		if (rc != 0)
			break;
		w->bytes += k.n + v.n;
		if (rows < ph->keys)
			worker_check_entry(w, rows, k, v);
		rows++;
	}
	t0 = bench_now_ns();
	b->eng->scan_close(it);
	worker_time(w, t0, bench_now_ns(), false);
	w->ops = rows;
	if (rc < 0)
		worker_fail(w, "scan_next", rc);
	else if (rc == ENGINE_MALFORMED)
		worker_mismatch(w, bench_key(b, 2 * rows, w->want_key),
		    "malformed row in scan");
	else if (rows != ph->keys)
		worker_mismatch(w, bench_key(b, 2 * rows, w->want_key),
		    "scan gave %" PRIu64 " rows, expected %" PRIu64, rows,
		    ph->keys);
}

/*
 * readwhilewriting's writer: rewrite entries in random order, each with
 * the value it has (so readers can check what they get), as fast as the
 * engine takes them, until the readers are done.
 */
static void
worker_rewrite(struct worker *w)
{
	const struct phase *ph = w->ph;

	for (uint64_t i = 0; !atomic_load_explicit(&w->ph->readers_done,
	    memory_order_relaxed) && !worker_stopped(w); i++) {
		uint64_t k = bench_perm_at(&ph->perm, i % ph->keys);

		if (!worker_put(w, k, false))
			return;
	}
}

/* The key of large value j and its bytes (readwhilestreaming). */
static struct bench_bytes
stream_key(const struct bench *b, uint64_t keys, uint64_t j, char *buf)
{
	return bench_key(b, 2 * (keys + j), buf);
}

static struct bench_bytes
stream_value(const char *data, uint64_t j)
{
	return (struct bench_bytes){ data + 8 * j, STREAM_VALUE_SIZE };
}

/*
 * readwhilestreaming's streamer: read the large values in turn, as a
 * reader of large files would, until the readers are done; each is
 * checked by its size and its first bytes.
 */
static void
worker_stream(struct worker *w)
{
	const struct phase *ph = w->ph;
	const struct bench *b = ph->b;

	for (uint64_t i = 0; !atomic_load_explicit(&ph->readers_done,
	    memory_order_relaxed) && !worker_stopped(w); i++) {
		uint64_t j = i % STREAM_VALUES;
		struct bench_bytes key = stream_key(b, ph->keys, j, w->key);
		struct bench_bytes want = stream_value(ph->stream_data, j);
		int rc = b->eng->get(ph->db, key, &w->value);

		if (rc < 0) {
			worker_fail(w, "get", rc);
			return;
		}
		w->ops++;
		w->bytes += w->value.n;
		if (rc != 0 || w->value.n != want.n ||
		    memcmp(w->value.p, want.p, STREAM_CHECKED) != 0)
			worker_mismatch(w, key, "large value wrong or absent");
	}
}

/*
 * increment: operation i adds 1 to counter perm(i) % counters, so each
 * counter gets count / counters of them (one more for the first count %
 * counters); the sums are checked after the clock stops.
 */
static void
worker_increment(struct worker *w)
{
	const struct phase *ph = w->ph;
	const struct bench *b = ph->b;

	for (uint64_t i = w->lo; i < w->hi && !worker_stopped(w); i++) {
		uint64_t c = bench_perm_at(&ph->perm, i) % ph->keys;
		struct bench_bytes key = bench_key(b, 2 * c, w->key);
		uint64_t t0 = bench_now_ns();
		int64_t sum = 0;
		int rc = b->eng->increment(ph->db, key, 1, &sum);

		worker_time(w, t0, bench_now_ns(), true);
		if (rc < 0) {
			worker_fail(w, "increment", rc);
			return;
		}
		w->ops++;
		w->bytes += key.n;
		if (sum < 1 || (uint64_t)sum > ph->count / ph->keys + 1)
			worker_mismatch(w, key, "counter at %" PRId64, sum);
	}
}

static void *
worker_main(void *arg)
{
	struct worker *w = arg;
	uint64_t t0;

	bt_error_clear();
	pthread_barrier_wait(&w->ph->start);
	t0 = bench_now_ns();
	w->cpu_ns = bench_thread_cpu_ns();
	switch (w->ph->kind) {
	case READWHILEWRITING:
	case READWHILESTREAMING:
		if (w->background && w->ph->kind == READWHILEWRITING) {
			worker_rewrite(w);
			break;
		}
		if (w->background) {
			worker_stream(w);
			break;
		}
		/* FALLTHROUGH */
	case READRANDOM:
	case READMISSING:
	case READPASTEND:
	case READHOT:
	case READSEQUENTIAL:
		worker_read(w);
		if (atomic_fetch_sub(&w->ph->readers_left, 1) == 1)
			atomic_store(&w->ph->readers_done, true);
		break;
	case INCREMENT:
		worker_increment(w);
		break;
	case SEEKRANDOM:
		worker_seek(w);
		break;
	case READSEQ:
		worker_scan(w);
		break;
	default:
		worker_write(w);
		break;
	}
	w->span_ns = bench_now_ns() - t0;
	w->cpu_ns = bench_thread_cpu_ns() - w->cpu_ns;
	return NULL;
}

/*
 * Run ph on nthreads threads, each taking a share of the operations (and,
 * with ph->writer, on one more thread, the background writer), and fill
 * in res: totals, latency quantiles, and the time: from the common start
 * to the last finish as the threads measured it (not the main thread,
 * which may wake late), less the harness's own work between calls (keys,
 * checks) in the thread that did least of it.  The writer is
 * left out of all of them, and its rate goes into the note.  The first
 * mismatch and any error are reported on stderr.
 */
static int
phase_run(struct bench *b, struct phase *ph, unsigned nthreads,
    struct bench_result *res)
{
	unsigned extra = ph->writer ? 1 : 0, all_threads = nthreads + extra;
	struct worker *ws = xcalloc(all_threads, sizeof(*ws));
	struct bench_hist *all = xcalloc(1, sizeof(*all));
	uint64_t wall = 0, idle = UINT64_MAX, cpu = 0;
	int rc = 0;

	atomic_init(&ph->failed, false);
	atomic_init(&ph->readers_done, false);
	atomic_init(&ph->readers_left, nthreads);
	if (pthread_barrier_init(&ph->start, NULL, all_threads + 1) != 0)
		abort();
	for (unsigned t = 0; t < all_threads; t++) {
		struct worker *w = &ws[t];
		unsigned share = t - extra;

		w->ph = ph;
		w->background = t < extra;
		w->lo = w->background ? 0 : ph->count * share / nthreads;
		w->hi = w->background ? 0 : ph->count * (share + 1) / nthreads;
		w->rng = bench_rand(&b->rng);
		w->key = xcalloc(2, b->o.key_size);
		w->want_key = w->key + b->o.key_size;
		if (pthread_create(&w->tid, NULL, worker_main, w) != 0)
			abort();
	}
	pthread_barrier_wait(&ph->start);
	for (unsigned t = 0; t < all_threads; t++)
		pthread_join(ws[t].tid, NULL);
	for (unsigned t = 0; t < all_threads; t++) {
		struct worker *w = &ws[t];

		res->mismatches += w->mismatches;
		if (w->background && w->span_ns > 0 &&
		    ph->kind == READWHILEWRITING)
			snprintf(res->note, sizeof(res->note), "writer %.0f "
			    "writes/s", (double)w->ops * 1e9 /
			    (double)w->span_ns);
		if (w->background && w->span_ns > 0 &&
		    ph->kind == READWHILESTREAMING)
			snprintf(res->note, sizeof(res->note), "stream %.0f "
			    "MB/s", (double)w->bytes * 1e9 / 1048576.0 /
			    (double)w->span_ns);
		if (w->background)
			ph->stream_gets = w->ops;
		if (!w->background) {
			if (w->span_ns - w->busy_ns < idle)
				idle = w->span_ns - w->busy_ns;
			if (w->span_ns > wall)
				wall = w->span_ns;
			res->ops += w->ops;
			res->bytes += w->bytes;
			cpu += w->cpu_ns;
			bench_hist_merge(all, &w->hist);
		}
		if (w->mismatches > 0)
			fprintf(stderr, "tabletbench: %s: %" PRIu64
			    " mismatches; first: %s\n", bench_names[ph->kind],
			    w->mismatches, w->first_mismatch);
		if (w->rc < 0 && rc == 0) {
			fprintf(stderr, "tabletbench: %s: %s\n",
			    bench_names[ph->kind], w->error);
			rc = w->rc;
		}
		free(w->key);
		free(w->value.p);
		free(w->rows.p);
	}
	res->secs = (double)(wall > idle ? wall - idle : wall) / 1e9;
	res->p50_us = bench_hist_quantile(all, 0.50) / 1e3;
	res->p99_us = bench_hist_quantile(all, 0.99) / 1e3;
	if (res->ops > 0)
		res->cpu_us = (double)cpu / 1e3 / (double)res->ops;
	pthread_barrier_destroy(&ph->start);
	free(all);
	free(ws);
	return rc;
}

/* ---- Stores ---- */

static void
bench_error(const char *what, const char *path, int rc)
{
	const char *detail = bt_error_detail();

	fprintf(stderr, "tabletbench: %s %s: %s%s%s\n", what, path,
	    bt_strerror(rc), *detail != '\0' ? ": " : "", detail);
}

static int
bench_store_open(struct bench *b, const char *path, void **dbp)
{
	int rc;

	bt_error_clear();
	if ((rc = bench_tree_remove(path)) < 0) {
		bench_error("removing", path, rc);
		return rc;
	}
	bench_fs_settle(b->root);	/* every engine starts from the same */
	if ((rc = b->eng->open(&b->cfg, path, dbp)) < 0)
		bench_error("opening", path, rc);
	return rc;
}

static int
bench_store_close(struct bench *b, const char *path, void *db)
{
	int rc, rrc;

	bt_error_clear();
	if ((rc = b->eng->close(db)) < 0)
		bench_error("closing", path, rc);
	if ((rrc = bench_tree_remove(path)) < 0) {
		bench_error("removing", path, rrc);
		if (rc == 0)
			rc = rrc;
	}
	return rc;
}

/* Make the main store fresh, unless it was not written since it was. */
static int
bench_main_fresh(struct bench *b)
{
	int rc = 0;

	if (b->db != NULL && !b->db_used)
		return 0;
	if (b->db != NULL)
		rc = bench_store_close(b, b->main_path, b->db);
	b->db = NULL;
	b->db_used = false;
	b->db_keys = 0;
	if (rc == 0)
		rc = bench_store_open(b, b->main_path, &b->db);
	return rc;
}

static void
bench_stats(const struct bench *b, void *db, struct engine_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (b->eng->stats != NULL)
		b->eng->stats(db, st);
}

static void
note_cache(struct bench_result *res, const struct engine_stats *s0,
    const struct engine_stats *s1)
{
	uint64_t hits = s1->cache_hits - s0->cache_hits;
	uint64_t lookups = hits + s1->cache_misses - s0->cache_misses;

	if (lookups > 0)
		snprintf(res->note, sizeof(res->note), "cache hits %.1f%%",
		    100.0 * (double)hits / (double)lookups);
}

/*
 * readwhilestreaming: the readers' cache hits, taking the streamer's
 * lookups to be one per value read, all misses (its values are more than
 * the cache holds, or not kept at all), after the streamer's rate.
 */
static void
note_stream_cache(struct bench_result *res, const struct engine_stats *s0,
    const struct engine_stats *s1, uint64_t stream_gets)
{
	uint64_t hits = s1->cache_hits - s0->cache_hits;
	uint64_t lookups = hits + s1->cache_misses - s0->cache_misses;
	size_t n = strlen(res->note);

	if (lookups <= stream_gets)
		return;
	lookups -= stream_gets;
	snprintf(res->note + n, sizeof(res->note) - n, "%sreaders' cache "
	    "hits %.1f%%", n > 0 ? ", " : "", 100.0 * (double)hits /
	    (double)lookups);
}

/* ---- Benchmarks ---- */

/* Fill or overwrite the main store: every entry once. */
static int
bench_write(struct bench *b, enum bench_kind kind, struct bench_result *res)
{
	struct phase ph = { .b = b, .kind = kind, .count = b->o.num };
	int rc;

	if (kind != OVERWRITE && (rc = bench_main_fresh(b)) < 0)
		return rc;
	ph.db = b->db;
	ph.epoch = ++b->epochs;
	bench_perm_init(&ph.perm, ph.count, bench_rand(&b->rng));
	b->db_used = true;
	if ((rc = phase_run(b, &ph, 1, res)) < 0)
		return rc;
	b->db_keys = b->o.num;
	b->db_epoch = ph.epoch;
	return 0;
}

/* fillsync: num / 100 synchronous writes into a store of their own. */
static int
bench_fillsync(struct bench *b, unsigned nthreads, struct bench_result *res)
{
	struct phase ph = { .b = b, .kind = FILLSYNC, .sync = true };
	struct engine_stats s0, s1;
	int rc, crc;

	ph.count = b->o.syncs;
	ph.epoch = ++b->epochs;
	bench_perm_init(&ph.perm, ph.count, bench_rand(&b->rng));
	if ((rc = bench_store_open(b, b->side_path, &ph.db)) < 0)
		return rc;
	bench_stats(b, ph.db, &s0);
	rc = phase_run(b, &ph, nthreads, res);
	bench_stats(b, ph.db, &s1);
	if (s1.syncs > s0.syncs)
		snprintf(res->note, sizeof(res->note), "%" PRIu64 " syncs, "
		    "%.2f writes/sync", s1.syncs - s0.syncs,
		    (double)res->ops / (double)(s1.syncs - s0.syncs));
	if ((crc = bench_store_close(b, b->side_path, ph.db)) < 0 && rc == 0)
		rc = crc;
	return rc;
}

/*
 * readwhilestreaming's set-up, off the clock: STREAM_VALUES large values
 * (random bytes) after the entries, a compaction, so that the entries
 * and the values are all read from files through the block cache, and a
 * read of every entry, so that the readers start from a warm cache.  The
 * values' bytes are left in *datap (free() them).
 */
static int
bench_stream_load(struct bench *b, char **datap)
{
	size_t size = STREAM_VALUE_SIZE + 8 * STREAM_VALUES;
	char *data = xcalloc(1, size), *key = xcalloc(1, b->o.key_size);
	struct bench_buf value = { 0 };
	int rc = 0;

	for (size_t off = 0; off < size; off += 8) {
		uint64_t r = bench_rand(&b->rng);

		memcpy(data + off, &r, size - off < 8 ? size - off : 8);
	}
	for (uint64_t j = 0; j < STREAM_VALUES && rc >= 0; j++)
		rc = b->eng->put(b->db, stream_key(b, b->db_keys, j, key),
		    stream_value(data, j), false);
	if (rc >= 0)
		rc = b->eng->compact(b->db);
	for (uint64_t k = 0; k < b->db_keys && rc >= 0; k++)
		rc = b->eng->get(b->db, bench_key(b, 2 * k, key), &value);
	if (rc < 0)
		bench_error("loading large values into", b->main_path, rc);
	free(value.p);
	free(key);
	*datap = data;
	return rc < 0 ? rc : 0;
}

/* readrandom, readmissing, readpastend, seekrandom, readseq,
 * readwhilewriting, readwhilestreaming over the main store. */
static int
bench_read(struct bench *b, enum bench_kind kind, struct bench_result *res)
{
	struct phase ph = { .b = b, .kind = kind, .db = b->db,
	    .keys = b->db_keys, .epoch = b->db_epoch };
	struct engine_stats s0, s1;
	char *stream_data = NULL;
	int rc;

	if (b->db_keys == 0) {
		res->skipped = true;
		snprintf(res->note, sizeof(res->note), "skipped: no data "
		    "(run a fill first)");
		return 0;
	}
	ph.count = kind == READSEQ ? 1 : kind == SEEKRANDOM ? b->o.seeks :
	    kind == READSEQUENTIAL ? b->db_keys : b->o.reads;
	if (kind == READWHILEWRITING) {
		ph.writer = true;
		bench_perm_init(&ph.perm, ph.keys, bench_rand(&b->rng));
		b->db_used = true;
	}
	if (kind == READWHILESTREAMING) {
		/* The large values stay: later reads need a fill first. */
		b->db_used = true;
		rc = bench_stream_load(b, &stream_data);
		b->db_keys = 0;
		if (rc < 0) {
			free(stream_data);
			return rc;
		}
		ph.writer = true;
		ph.count = b->o.reads;
		ph.stream_data = stream_data;
	}
	bench_stats(b, b->db, &s0);
	rc = phase_run(b, &ph, 1, res);
	bench_stats(b, b->db, &s1);
	if (kind == READWHILESTREAMING)
		note_stream_cache(res, &s0, &s1, ph.stream_gets);
	else if (kind != READWHILEWRITING)
		note_cache(res, &s0, &s1);
	free(stream_data);
	return rc;
}

/*
 * increment: N / 10 counters in a store of their own, each incremented
 * INCREMENTS times in random order: N operations, as the other workloads
 * run, so that the phase lasts long enough for the background's work not
 * to decide the ratio.  Then every sum is read back (adding 0) and
 * checked, off the clock.
 */
static int
bench_increment(struct bench *b, struct bench_result *res)
{
	struct phase ph = { .b = b, .kind = INCREMENT };
	uint64_t want;
	char *key;
	int rc, crc;

	if (b->eng->increment == NULL) {
		res->skipped = true;
		snprintf(res->note, sizeof(res->note), "skipped: %s has no "
		    "increment", b->eng->name);
		return 0;
	}
	ph.keys = b->o.num / COUNTER_DIVISOR > 0 ?
	    b->o.num / COUNTER_DIVISOR : 1;
	ph.count = ph.keys * INCREMENTS;
	bench_perm_init(&ph.perm, ph.count, bench_rand(&b->rng));
	if ((rc = bench_store_open(b, b->side_path, &ph.db)) < 0)
		return rc;
	rc = phase_run(b, &ph, 1, res);
	key = xcalloc(1, b->o.key_size);
	for (uint64_t c = 0; c < ph.keys && rc == 0; c++) {
		struct bench_bytes k = bench_key(b, 2 * c, key);
		int64_t sum = 0;

		want = ph.count / ph.keys + (c < ph.count % ph.keys);
		if ((rc = b->eng->increment(ph.db, k, 0, &sum)) < 0) {
			bench_error("incrementing in", b->side_path, rc);
			break;
		}
		if ((uint64_t)sum != want && res->mismatches++ == 0)
			fprintf(stderr, "tabletbench: increment: counter %.*s "
			    "is %" PRId64 ", expected %" PRIu64 "\n",
			    (int)k.n, (const char *)k.p, sum, want);
	}
	free(key);
	if ((crc = bench_store_close(b, b->side_path, ph.db)) < 0 && rc == 0)
		rc = crc;
	return rc;
}

static int
bench_compact(struct bench *b, struct bench_result *res)
{
	struct engine_stats s0, s1;
	uint64_t t0;
	int rc;

	bench_stats(b, b->db, &s0);
	bt_error_clear();
	t0 = bench_now_ns();
	if ((rc = b->eng->compact(b->db)) < 0) {
		bench_error("compacting", b->main_path, rc);
		return rc;
	}
	res->secs = (double)(bench_now_ns() - t0) / 1e9;
	res->ops = 1;
	res->p50_us = res->p99_us = res->secs * 1e6;
	bench_stats(b, b->db, &s1);
	snprintf(res->note, sizeof(res->note), "files %" PRIu64 " -> %"
	    PRIu64, s0.files, s1.files);
	return 0;
}

static int
bench_slot_run(struct bench *b, const struct bench_slot *sl,
    struct bench_result *res)
{
	int rc;

	bench_rss_reset();
	switch (sl->kind) {
	case FILLSEQ:
	case FILLRANDOM:
	case OVERWRITE:
		rc = bench_write(b, sl->kind, res);
		break;
	case FILLSYNC:
		rc = bench_fillsync(b, sl->threads, res);
		break;
	case COMPACT:
		rc = bench_compact(b, res);
		break;
	case INCREMENT:
		rc = bench_increment(b, res);
		break;
	default:
		rc = bench_read(b, sl->kind, res);
		break;
	}
	if (rc < 0)
		return rc;
	if (res->secs > 0) {
		res->ops_per_sec = (double)res->ops / res->secs;
		res->mb_per_sec = (double)res->bytes / res->secs / 1048576.0;
	}
	res->peak_rss_kib = bench_rss_peak_kib();
	bench_result_print(b->out, b->eng->name, sl, res);
	return 0;
}

/* One pass over the benchmark list, on a fresh main store. */
static int
bench_suite_run(struct bench *b, struct bench_result *results)
{
	int rc, crc;

	b->db_used = true;
	if ((rc = bench_main_fresh(b)) < 0)
		return rc;
	for (size_t i = 0; i < b->nslots && rc == 0; i++)
		rc = bench_slot_run(b, &b->slots[i], &results[i]);
	crc = bench_store_close(b, b->main_path, b->db);
	b->db = NULL;
	return rc < 0 ? rc : crc;
}

/* The paths of engine e's stores under the root. */
static int
bench_paths_set(struct bench *b, const struct engine *e)
{
	if ((size_t)snprintf(b->main_path, sizeof(b->main_path), "%s/%s",
	    b->root, e->name) >= sizeof(b->main_path) ||
	    (size_t)snprintf(b->side_path, sizeof(b->side_path), "%s/%s-side",
	    b->root, e->name) >= sizeof(b->side_path)) {
		fprintf(stderr, "tabletbench: %s: path too long\n", b->root);
		return -1;
	}
	return 0;
}

/* Read exactly n bytes; false on end of file or error. */
static bool
read_full(int fd, void *buf, size_t n)
{
	char *p = buf;

	while (n > 0) {
		ssize_t got = read(fd, p, n);

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return false;
		p += got;
		n -= (size_t)got;
	}
	return true;
}

/*
 * Run the suite once on engine e in a child process (its memory, threads
 * and peak RSS its own), which sends back its results, one per slot.
 * 0, or -1 when the child failed (it said why on stderr).
 */
static int
bench_engine_run(struct bench *b, const struct engine *e,
    struct bench_result *results)
{
	size_t size = b->nslots * sizeof(*results);
	int fds[2], status, rc;
	bool ok;
	pid_t pid;

	if (bench_paths_set(b, e) < 0)
		return -1;
	fflush(NULL);
	if (pipe(fds) < 0 || (pid = fork()) < 0) {
		perror("tabletbench: fork");
		return -1;
	}
	if (pid == 0) {
		/* The child dies of the signals the parent cleans up after. */
		pthread_sigmask(SIG_UNBLOCK, &b->signals, NULL);
		close(fds[0]);
		b->eng = e;
		rc = bench_suite_run(b, results);
		if (rc == 0 && write(fds[1], results, size) != (ssize_t)size)
			rc = -EIO;
		fflush(NULL);
		_exit(rc < 0 ? 1 : 0);
	}
	atomic_store(&b->child, pid);
	close(fds[1]);
	ok = read_full(fds[0], results, size);
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	atomic_store(&b->child, 0);
	bench_tree_remove(b->main_path);
	bench_tree_remove(b->side_path);
	if (!ok || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "tabletbench: engine %s failed\n", e->name);
		return -1;
	}
	return 0;
}

static void
bench_json(const struct bench *b, const struct bench_report *rep,
    const struct bench_machine *m, const char *commit, uint64_t mismatches)
{
	FILE *f = stdout;
	char text[256];

	fprintf(f, "{\"engines\": [");
	for (size_t e = 0; e < b->nengines; e++) {
		b->engines[e]->describe(&b->cfg, text, sizeof(text));
		fprintf(f, "%s\n  {\"name\": ", e > 0 ? "," : "");
		bench_json_string(f, b->engines[e]->name);
		fprintf(f, ", \"settings\": ");
		bench_json_string(f, text);
		fprintf(f, "}");
	}
	fprintf(f, "],\n \"not_built\": [");
	for (size_t i = 0, n = 0; i < ENGINE_TABLE_SIZE; i++)
		if (engine_table[i].engine == NULL) {
			fprintf(f, "%s", n++ > 0 ? ", " : "");
			bench_json_string(f, engine_table[i].name);
		}
	fprintf(f, "],\n \"machine\": {\"cpus\": %ld, \"model\": ", m->cpus);
	bench_json_string(f, m->model);
	fprintf(f, ", \"ram_bytes\": %" PRIu64 ", \"load\": %.2f},\n"
	    " \"commit\": ", m->ram, m->load);
	bench_json_string(f, commit);
	fprintf(f, ",\n \"settings\": {\"num\": %" PRIu64 ", \"reads\": %"
	    PRIu64 ", \"seeks\": %" PRIu64 ", \"syncs\": %" PRIu64
	    ", \"key_size\": %" PRIu64
	    ", \"value_size\": %" PRIu64 ", \"incompressible\": %s"
	    ", \"threads\": %" PRIu64 ", \"runs\": %" PRIu64
	    ", \"cache_mb\": %" PRIu64 ", \"memtable_mb\": %" PRIu64
	    ", \"block_kb\": %" PRIu64 ", \"seed\": %" PRIu64 ", \"db\": ",
	    b->o.num, b->o.reads, b->o.seeks, b->o.syncs, b->o.key_size,
	    b->o.value_size, b->o.incompressible ? "true" : "false",
	    b->o.threads, b->o.runs,
	    b->o.cache_mb, b->o.memtable_mb, b->o.block_kb, b->o.seed);
	bench_json_string(f, b->root);
	fprintf(f, ", \"benchmarks\": ");
	bench_json_string(f, b->o.benchmarks);
	fprintf(f, "},\n \"summary\": \"%s\",\n \"results\": ",
	    b->o.runs > 1 ? "median ops/s over runs" : "single run");
	bench_report_json(f, rep);
	fprintf(f, ",\n \"mismatches\": %" PRIu64 "}\n", mismatches);
}

/* ---- Set-up ---- */

/* SIGINT, SIGTERM, SIGHUP: end the engine's process, remove the stores
 * and leave. */
static void *
bench_signal_main(void *arg)
{
	struct bench *b = arg;
	pid_t child;
	int sig;

	sem_post(&b->signal_ready);
	if (sigwait(&b->signals, &sig) != 0)
		return NULL;
	fprintf(stderr, "tabletbench: %s: removing the stores\n",
	    strsignal(sig));
	if ((child = atomic_load(&b->child)) > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	bench_tree_remove(b->main_path);
	bench_tree_remove(b->side_path);
	if (b->root_made)
		bench_tree_remove(b->root);
	_exit(128 + sig);
}

/* "N MiB", or "default" for 0. */
static void
mib_text(char *buf, size_t size, uint64_t mb)
{
	if (mb == 0)
		snprintf(buf, size, "default");
	else
		snprintf(buf, size, "%" PRIu64 " MiB", mb);
}

/* The stores' directory: --db (created if absent, kept) or mkdtemp. */
static int
bench_root_make(struct bench *b)
{
	struct stat st;

	if (b->o.db == NULL) {
		strlcpy(b->root, "/tmp/tabletbench.XXXXXX", sizeof(b->root));
		if (mkdtemp(b->root) == NULL) {
			perror("tabletbench: mkdtemp");
			return -1;
		}
		b->root_made = true;
	} else {
		if (strlcpy(b->root, b->o.db, sizeof(b->root)) >=
		    sizeof(b->root)) {
			fprintf(stderr, "tabletbench: --db %s: %s\n", b->o.db,
			    strerror(ENAMETOOLONG));
			return -1;
		}
		if (mkdir(b->root, 0777) < 0 && errno != EEXIST) {
			fprintf(stderr, "tabletbench: %s: %s\n", b->root,
			    strerror(errno));
			return -1;
		}
	}
	for (size_t e = 0; e < b->nengines; e++) {
		if (bench_paths_set(b, b->engines[e]) < 0)
			return -1;
		if (lstat(b->main_path, &st) == 0 ||
		    lstat(b->side_path, &st) == 0) {
			fprintf(stderr, "tabletbench: %s or %s exists; not "
			    "touching it\n", b->main_path, b->side_path);
			return -1;
		}
	}
	return 0;
}

/*
 * The engines to run: --engines (names of the table, in its order), or
 * every one built.  One not built is named on stderr and left out.
 */
static void
bench_engines_choose(struct bench *b)
{
	for (size_t i = 0; i < ENGINE_TABLE_SIZE; i++) {
		const struct engine_entry *en = &engine_table[i];
		const char *list = b->o.engines, *p;
		size_t n = strlen(en->name);
		bool wanted = list == NULL;

		for (p = list; p != NULL && *p != '\0' && !wanted;
		    p += strcspn(p, ",") + (p[strcspn(p, ",")] != '\0'))
			wanted = strncmp(p, en->name, n) == 0 &&
			    (p[n] == ',' || p[n] == '\0');
		if (!wanted)
			continue;
		if (en->engine == &engine_cell && b->o.cell == NULL) {
			if (list != NULL) {
				fprintf(stderr, "tabletbench: the cell engine "
				    "needs --cell ADDRESS\n");
				exit(2);
			}
			continue;
		}
		if (en->engine != NULL)
			b->engines[b->nengines++] = en->engine;
		else if (list != NULL)
			fprintf(stderr, "tabletbench: %s: not built in (install "
			    "%s and configure again)\n", en->name,
			    en->package);
	}
	for (const char *p = b->o.engines; p != NULL && *p != '\0';
	    p += strcspn(p, ",") + (p[strcspn(p, ",")] != '\0')) {
		size_t n = strcspn(p, ","), i;

		for (i = 0; i < ENGINE_TABLE_SIZE; i++)
			if (strlen(engine_table[i].name) == n &&
			    strncmp(p, engine_table[i].name, n) == 0)
				break;
		if (i == ENGINE_TABLE_SIZE) {
			fprintf(stderr, "tabletbench: unknown engine \"%.*s\"\n",
			    (int)n, p);
			usage();
		}
	}
	if (b->nengines == 0) {
		fprintf(stderr, "tabletbench: no engine to run\n");
		exit(2);
	}
}

/* --threads: the thread counts fillsync runs with besides 1. */
static void
threads_parse(struct bench_opts *o, const char *arg)
{
	char *list = strdup(arg), *save = NULL, *t;

	if (list == NULL)
		abort();
	o->nthread_counts = 0;
	for (t = strtok_r(list, ",", &save); t != NULL;
	    t = strtok_r(NULL, ",", &save)) {
		if (o->nthread_counts == MAX_THREAD_COUNTS) {
			fprintf(stderr, "tabletbench: --threads: at most %d "
			    "counts\n", MAX_THREAD_COUNTS);
			exit(2);
		}
		o->thread_counts[o->nthread_counts++] = parse_u64("threads",
		    t, 1, 1024);
	}
	free(list);
	if (o->nthread_counts == 0)
		usage();
	o->threads = o->thread_counts[0];
}

static void
bench_options_parse(struct bench *b, int argc, char **argv)
{
	enum { O_NUM, O_READS, O_SEEKS, O_SYNCS, O_VALUE, O_KEY, O_BENCH,
	    O_RUNS, O_DB, O_CACHE, O_MEMTABLE, O_BLOCK, O_THREADS, O_SEED,
	    O_JSON, O_ENGINES, O_INCOMPRESSIBLE, O_FIGURE6, O_CELL,
	    O_CELL_TABLETS, O_HELP };
	static const struct option longopts[] = {
		{ "num", required_argument, NULL, O_NUM },
		{ "reads", required_argument, NULL, O_READS },
		{ "seeks", required_argument, NULL, O_SEEKS },
		{ "syncs", required_argument, NULL, O_SYNCS },
		{ "value-size", required_argument, NULL, O_VALUE },
		{ "key-size", required_argument, NULL, O_KEY },
		{ "benchmarks", required_argument, NULL, O_BENCH },
		{ "runs", required_argument, NULL, O_RUNS },
		{ "db", required_argument, NULL, O_DB },
		{ "cache-mb", required_argument, NULL, O_CACHE },
		{ "memtable-mb", required_argument, NULL, O_MEMTABLE },
		{ "block-kb", required_argument, NULL, O_BLOCK },
		{ "threads", required_argument, NULL, O_THREADS },
		{ "seed", required_argument, NULL, O_SEED },
		{ "json", no_argument, NULL, O_JSON },
		{ "engines", required_argument, NULL, O_ENGINES },
		{ "incompressible", no_argument, NULL, O_INCOMPRESSIBLE },
		{ "figure6", no_argument, NULL, O_FIGURE6 },
		{ "cell", required_argument, NULL, O_CELL },
		{ "cell-tablets", required_argument, NULL, O_CELL_TABLETS },
		{ "help", no_argument, NULL, O_HELP },
		{ NULL, 0, NULL, 0 },
	};
	struct bench_opts *o = &b->o;
	bool reads_set = false, seeks_set = false, syncs_set = false;
	bool num_set = false;
	bool value_set = false, bench_set = false;
	uint64_t most;		/* entries a store numbers, at most */
	int ch;

	o->num = 1000000;
	o->key_size = 16;
	o->value_size = 100;
	o->benchmarks = default_benchmarks;
	o->cache_mb = 64;
	o->memtable_mb = 64;
	o->runs = 1;
	o->threads = 4;
	o->thread_counts[0] = 4;
	o->nthread_counts = 1;
	o->seed = bench_mix64((uint64_t)time(NULL) ^ (uint64_t)getpid());
	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		const char *name = ch >= 0 && ch < O_HELP ?
		    longopts[ch].name : "";

		switch (ch) {
		case O_NUM:
			o->num = parse_u64(name, optarg, 1, UINT64_C(1) << 40);
			num_set = true;
			break;
		case O_READS:
			o->reads = parse_u64(name, optarg, 1,
			    UINT64_C(1) << 40);
			reads_set = true;
			break;
		case O_SEEKS:
			o->seeks = parse_u64(name, optarg, 1,
			    UINT64_C(1) << 40);
			seeks_set = true;
			break;
		case O_SYNCS:
			o->syncs = parse_u64(name, optarg, 1,
			    UINT64_C(1) << 40);
			syncs_set = true;
			break;
		case O_VALUE:
			o->value_size = parse_u64(name, optarg, 0, MAX_VALUE);
			value_set = true;
			break;
		case O_KEY:
			o->key_size = parse_u64(name, optarg, 1, 65536);
			break;
		case O_BENCH:
			o->benchmarks = optarg;
			bench_set = true;
			break;
		case O_RUNS:
			o->runs = parse_u64(name, optarg, 1, 1000);
			break;
		case O_DB:
			o->db = optarg;
			break;
		case O_CELL:
			o->cell = optarg;
			break;
		case O_CELL_TABLETS:
			o->cell_tablets = parse_u64(name, optarg, 1,
			    BENCH_MAX_CELL_TABLETS);
			break;
		case O_CACHE:
			o->cache_mb = parse_u64(name, optarg, 0, 1u << 30);
			break;
		case O_MEMTABLE:
			o->memtable_mb = parse_u64(name, optarg, 0, 1u << 30);
			break;
		case O_BLOCK:
			o->block_kb = parse_u64(name, optarg, 0, 1u << 20);
			break;
		case O_THREADS:
			threads_parse(o, optarg);
			break;
		case O_SEED:
			o->seed = parse_u64(name, optarg, 0, UINT64_MAX);
			break;
		case O_JSON:
			o->json = true;
			break;
		case O_ENGINES:
			o->engines = optarg;
			break;
		case O_INCOMPRESSIBLE:
			o->incompressible = true;
			break;
		case O_FIGURE6:
			o->figure6 = true;
			break;
		default:
			usage();
		}
	}
	if (optind != argc)
		usage();
	if (o->figure6) {
		o->incompressible = true;
		if (!num_set)
			o->num = FIGURE6_NUM;
		if (!value_set)
			o->value_size = FIGURE6_VALUE;
		if (!bench_set)
			o->benchmarks = figure6_benchmarks;
	}
	if (!reads_set)
		o->reads = o->num;
	if (!seeks_set)
		o->seeks = o->num / 10 > 0 ? o->num / 10 : 1;
	if (!syncs_set)
		o->syncs = o->num / SYNC_DIVISOR > 0 ?
		    o->num / SYNC_DIVISOR : 1;
	/* readpastend numbers keys up to twice the entries,
	 * readwhilestreaming its large values after them. */
	most = o->num > o->syncs ? o->num : o->syncs;
	if (strstr(o->benchmarks, bench_names[READWHILESTREAMING]) != NULL &&
	    most < o->num + STREAM_VALUES)
		most = o->num + STREAM_VALUES;
	if (strstr(o->benchmarks, bench_names[READPASTEND]) != NULL &&
	    most < 2 * o->num)
		most = 2 * o->num;
	if (o->key_size < (uint64_t)snprintf(NULL, 0, "%" PRIu64,
	    2 * most - 1)) {
		fprintf(stderr, "tabletbench: %" PRIu64 "-byte keys cannot "
		    "hold key number %" PRIu64 "\n", o->key_size,
		    2 * most - 1);
		exit(2);
	}
}

/* Machine, commit and settings, at the top of the output. */
static void
bench_header_print(const struct bench *b, const struct bench_machine *m,
    const char *commit)
{
	char cache[32], memtable[32], block[32], text[256];
	FILE *f = b->out;

	fprintf(f, "tabletbench: engines");
	for (size_t e = 0; e < b->nengines; e++)
		fprintf(f, " %s", b->engines[e]->name);
	for (size_t i = 0, n = 0; i < ENGINE_TABLE_SIZE; i++)
		if (engine_table[i].engine == NULL)
			fprintf(f, "%s%s", n++ == 0 ? " (not built: " : ", ",
			    engine_table[i].name);
	for (size_t i = 0; i < ENGINE_TABLE_SIZE; i++)
		if (engine_table[i].engine == NULL) {
			fprintf(f, "; skipped)");
			break;
		}
	fprintf(f, "\nmachine:     %ld cpus, %s, %.1f GiB RAM, load %.2f\n",
	    m->cpus, m->model, (double)m->ram / (1 << 30), m->load);
	fprintf(f, "commit:      %s\n", commit);
	fprintf(f, "settings:    num %" PRIu64 ", reads %" PRIu64
	    ", seeks %" PRIu64 ", syncs %" PRIu64 ", keys %" PRIu64
	    " B, values %" PRIu64 " B (%s)\n", b->o.num, b->o.reads,
	    b->o.seeks, b->o.syncs, b->o.key_size,
	    b->o.value_size, b->o.incompressible ? "incompressible" :
	    "half compressible");
	mib_text(cache, sizeof(cache), b->o.cache_mb);
	mib_text(memtable, sizeof(memtable), b->o.memtable_mb);
	if (b->o.block_kb == 0)
		snprintf(block, sizeof(block), "each engine's default");
	else
		snprintf(block, sizeof(block), "%" PRIu64 " KiB", b->o.block_kb);
	fprintf(f, "             threads ");
	for (size_t t = 0; t < b->o.nthread_counts; t++)
		fprintf(f, "%s%" PRIu64, t > 0 ? "," : "",
		    b->o.thread_counts[t]);
	fprintf(f, ", runs %" PRIu64 ", cache %s, memtable %s, blocks %s\n",
	    b->o.runs, cache, memtable, block);
	fprintf(f, "             seed %" PRIu64 ", db %s\n", b->o.seed,
	    b->root);
	for (size_t e = 0; e < b->nengines; e++) {
		b->engines[e]->describe(&b->cfg, text, sizeof(text));
		fprintf(f, "%-12s %s\n", e == 0 ? "engines:" : "", text);
	}
	fprintf(f, "benchmarks:  %s\n", b->o.benchmarks);
	fflush(f);
}

int
main(int argc, char **argv)
{
	struct bench b;
	struct bench_machine machine;
	struct bench_report rep;
	const char *names[ENGINE_TABLE_SIZE];
	pthread_t sigtid;
	char commit[64];
	uint64_t mismatches = 0;
	size_t per_run;
	int status = 1;

	memset(&b, 0, sizeof(b));
	bench_options_parse(&b, argc, argv);
	bench_engines_choose(&b);
	bench_slots_parse(&b);
	b.out = b.o.json ? stderr : stdout;
	b.cfg.cache_bytes = b.o.cache_mb << 20;
	b.cfg.memtable_bytes = b.o.memtable_mb << 20;
	b.cfg.block_bytes = b.o.block_kb << 10;
	b.cfg.compress = true;
	b.cfg.cell = b.o.cell;
	bench_cell_splits_make(&b);
	b.rng = b.o.seed | 1;
	per_run = b.nengines * b.nslots;
	b.results = xcalloc(b.o.runs * per_run, sizeof(*b.results));
	bench_data_make(&b);
	bench_machine_get(&machine);
	bench_git_commit(commit, sizeof(commit));
	if (bench_root_make(&b) < 0)
		goto out;

	/* Signals go to one thread, which removes the stores. */
	sigemptyset(&b.signals);
	sigaddset(&b.signals, SIGINT);
	sigaddset(&b.signals, SIGTERM);
	sigaddset(&b.signals, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &b.signals, NULL);
	/* Each engine runs in a forked child: the thread must be done
	 * starting first, or the child can inherit an allocator lock its
	 * start held at the fork and hang (AddressSanitizer's allocator,
	 * with GCC 12, is not locked around fork). */
	if (sem_init(&b.signal_ready, 0, 0) != 0 ||
	    pthread_create(&sigtid, NULL, bench_signal_main, &b) != 0)
		abort();
	while (sem_wait(&b.signal_ready) != 0)
		;	/* EINTR */

	bench_header_print(&b, &machine, commit);
	/* Engines take turns within each run, so that the machine's noise
	 * falls on all of them alike. */
	for (uint64_t run = 0; run < b.o.runs; run++) {
		if (b.o.runs > 1)
			fprintf(b.out, "-- run %" PRIu64 " of %" PRIu64 "\n",
			    run + 1, b.o.runs);
		bench_result_print_header(b.out);
		for (size_t e = 0; e < b.nengines; e++)
			if (bench_engine_run(&b, b.engines[e], &b.results[run *
			    per_run + e * b.nslots]) < 0)
				goto out_remove;
	}
	for (size_t i = 0; i < b.o.runs * per_run; i++)
		mismatches += b.results[i].mismatches;
	for (size_t e = 0; e < b.nengines; e++)
		names[e] = b.engines[e]->name;
	rep = (struct bench_report){ .engines = names,
	    .nengines = b.nengines, .slots = b.slots, .nslots = b.nslots,
	    .results = b.results, .runs = b.o.runs };
	fprintf(b.out, "\n-- %s, each engine on fresh stores in a process "
	    "of its own; ratio = tabletfs ops/s / engine ops/s\n",
	    b.o.runs > 1 ? "median of the runs" : "one run");
	bench_report_tables(b.out, &rep);
	if (b.o.json)
		bench_json(&b, &rep, &machine, commit, mismatches);
	if (mismatches > 0)
		fprintf(stderr, "tabletbench: %" PRIu64 " mismatches\n",
		    mismatches);
	else
		status = 0;
out_remove:
	pthread_cancel(sigtid);
	pthread_join(sigtid, NULL);
	for (size_t e = 0; e < b.nengines; e++)
		if (bench_paths_set(&b, b.engines[e]) == 0) {
			bench_tree_remove(b.main_path);
			bench_tree_remove(b.side_path);
		}
	if (b.root_made)
		rmdir(b.root);
out:
	free(b.data);
	free(b.results);
	free(b.cell_splits);
	free(b.cell_split_keys);
	free(b.slots);
	return status;
}
