/*
 * bench.h - what tabletbench drives: an engine, a small table of function
 * pointers over one key-value store, and the helpers its files share.
 *
 * The harness maps every workload onto open/put/get/scan/compact/close, so
 * another store (LevelDB, RocksDB, SQLite) is added as one more struct
 * engine in its own file.  Engines return 0 for success, BT_NOTFOUND or
 * BT_DONE for the expected outcomes, ENGINE_MALFORMED for a result of the
 * wrong shape (counted as a mismatch), and a negative code for errors, with
 * one line of context recorded by bt_error_set().
 */
#ifndef TABLETFS_BENCH_H
#define TABLETFS_BENCH_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "util/error.h"

#define ENGINE_MALFORMED	100

/* Borrowed bytes. */
struct bench_bytes {
	const void *p;
	size_t n;
};

/* A growable buffer a get copies its value into; free p with free(). */
struct bench_buf {
	char *p;
	size_t n;
	size_t cap;
};

/*
 * Settings shared by every engine; zero means the engine's default.  The
 * harness gives every engine the same block cache and memtable budget, and
 * the same durability: a put with sync false is handed to the operating
 * system before it returns (it survives the process's death, not a power
 * loss), a put with sync true is on stable storage (fdatasync, shared by
 * concurrent writers where the engine can).
 */
/* Tablets of the cell engine's table, at most (--cell-tablets). */
#define BENCH_MAX_CELL_TABLETS	256

struct engine_config {
	uint64_t cache_bytes;
	uint64_t memtable_bytes;	/* write buffer before a flush */
	uint64_t block_bytes;	/* SSTable data block size */
	bool compress;		/* Snappy on data blocks, where the engine can */
	const char *cell;	/* the cell engine's address (--cell) */
	/* The cell engine's table is split at these keys (--cell-tablets),
	 * so that a cell's master can spread its tablets over servers. */
	const struct bench_bytes *cell_splits;
	size_t cell_split_count;
};

/* Counters some engines can report; fields an engine lacks stay 0. */
struct engine_stats {
	uint64_t syncs;		/* log fsyncs */
	uint64_t files;		/* table files */
	uint64_t cache_hits;
	uint64_t cache_misses;
};

/*
 * One store.  A handle (void *db) is used by many threads at once; an
 * iterator by one.  Keys and values handed in are copied before a call
 * returns; those an iterator hands out are borrowed until its next call.
 */
struct engine {
	const char *name;
	/* Create a fresh store in path (absent or empty) and open it. */
	int (*open)(const struct engine_config *cfg, const char *path,
	    void **dbp);
	/* Flush and close; accepts NULL. */
	int (*close)(void *db);
	int (*put)(void *db, struct bench_bytes key, struct bench_bytes value,
	    bool sync);
	/* 0 with the newest value copied into *value, or BT_NOTFOUND. */
	int (*get)(void *db, struct bench_bytes key, struct bench_buf *value);
	/* Iterate from the first key >= start (start.n == 0: the first key),
	 * at most limit entries (0: no limit). */
	int (*scan_open)(void *db, struct bench_bytes start, uint64_t limit,
	    void **itp);
	/* 0 with the next entry, or BT_DONE. */
	int (*scan_next)(void *it, struct bench_bytes *key,
	    struct bench_bytes *value);
	void (*scan_close)(void *it);
	/* Compact everything (a major compaction) and wait for it. */
	int (*compact)(void *db);
	/* Optional (NULL when the engine has no counters). */
	void (*stats)(void *db, struct engine_stats *out);
	/*
	 * Read-modify-write: add delta to the counter at key (absent: 0;
	 * stored as ASCII decimal ending in "\n"), atomically with respect to
	 * every other increment, and give the sum in *result.  -EINVAL when
	 * the stored value is not a counter.
	 */
	int (*increment)(void *db, struct bench_bytes key, int64_t delta,
	    int64_t *result);
	/* One line saying how cfg maps onto the engine's own settings. */
	void (*describe)(const struct engine_config *cfg, char *buf,
	    size_t size);
};

extern const struct engine engine_tabletfs;
extern const struct engine engine_cell;
extern const struct engine engine_sqlite;
#ifdef HAVE_LEVELDB
extern const struct engine engine_leveldb;
#endif
#ifdef HAVE_ROCKSDB
extern const struct engine engine_rocksdb;
#endif

/* ---- Results and their tables (bench_report.c) ---- */

/* One line of output: a benchmark at a thread count, and its name. */
struct bench_slot {
	int kind;
	unsigned threads;
	char label[40];		/* "readrandom", "readrandom+compacted" */
};

struct bench_result {
	bool skipped;
	uint64_t ops;
	uint64_t bytes;
	uint64_t mismatches;
	double secs;
	double ops_per_sec;
	double mb_per_sec;
	double p50_us;
	double p99_us;
	long peak_rss_kib;	/* the process's peak while it ran */
	/* Processor time of the timed threads per operation (not of the
	 * engine's own threads): on a loaded machine, steadier than the
	 * speed, which waits for a processor as well. */
	double cpu_us;
	char note[96];
};

/* Every result of a tabletbench run. */
struct bench_report {
	const char *const *engines;	/* names; "tabletfs" gets ratios */
	size_t nengines;
	const struct bench_slot *slots;
	size_t nslots;
	const struct bench_result *results;	/* runs x engines x slots */
	size_t runs;
};

/* The one-engine progress lines, as each benchmark ends. */
void bench_result_print_header(FILE *f);
void bench_result_print(FILE *f, const char *engine,
    const struct bench_slot *sl, const struct bench_result *r);
/*
 * The median over runs of engine e's slot i: the middle run by speed (the
 * lower of the two middle ones, with their mean speed, when runs are
 * even), with the mismatches of all runs.
 */
void bench_report_median(const struct bench_report *rep, size_t e, size_t i,
    struct bench_result *med);
/* A table per benchmark: every engine's medians, and tabletfs/engine. */
void bench_report_tables(FILE *f, const struct bench_report *rep);
/* The JSON array of the same, as the value of "results". */
void bench_report_json(FILE *f, const struct bench_report *rep);

/* ---- Helpers (bench_util.c) ---- */

/*
 * Key-striped locks, for engines without a read-modify-write of their own:
 * an increment holds the stripe of its key across its get and its put.
 */
#define BENCH_STRIPES	64
struct bench_stripes {
	pthread_mutex_t lock[BENCH_STRIPES];
};
void bench_stripes_init(struct bench_stripes *s);
void bench_stripes_release(struct bench_stripes *s);
/*
 * engine->increment through engine->get and engine->put (sync false)
 * under the key's stripe; what the engine struct's increment returns.
 */
int bench_counter_add(const struct engine *e, struct bench_stripes *s,
    void *db, struct bench_bytes key, int64_t delta, int64_t *result);
/* Parse a counter value ("-12\n"; the newline optional); 0 or -EINVAL. */
int bench_counter_parse(const void *p, size_t n, int64_t *out);

/* Make room for n bytes in b; -ENOMEM. */
int bench_buf_reserve(struct bench_buf *b, size_t n);

/* CLOCK_MONOTONIC in nanoseconds, and in microseconds. */
uint64_t bench_now_ns(void);
double bench_now_us(void);
/* The q-quantile (0 <= q <= 1) of v's n > 0 values: sorts v in place. */
double bench_quantile(double *v, size_t n, double q);
/* The calling thread's processor time in nanoseconds. */
uint64_t bench_thread_cpu_ns(void);
/* splitmix64's finaliser: a bijective mix of x. */
uint64_t bench_mix64(uint64_t x);
/* xorshift64*: the next number from *state (never 0). */
uint64_t bench_rand(uint64_t *state);

/*
 * A pseudo-random permutation of 0..n-1 in constant memory: a bijection
 * on the enclosing power of two (odd multiplies and xor-shifts), walked
 * until it lands below n.
 */
struct bench_perm {
	uint64_t n;
	uint64_t mask;
	uint64_t mul[3];
	uint64_t add;
	unsigned shift;
};
void bench_perm_init(struct bench_perm *p, uint64_t n, uint64_t seed);
uint64_t bench_perm_at(const struct bench_perm *p, uint64_t i);

/*
 * A latency histogram in bounded memory: exact below 64 ns, then 32
 * buckets per power of two (about 3 % resolution).
 */
#define HIST_SUB_BITS	5
#define HIST_LINEAR	(2u << HIST_SUB_BITS)
#define HIST_BUCKETS	(HIST_LINEAR + (63u - HIST_SUB_BITS) * \
			    (1u << HIST_SUB_BITS))
struct bench_hist {
	uint64_t count;
	uint64_t buckets[HIST_BUCKETS];
};
void bench_hist_add(struct bench_hist *h, uint64_t ns);
void bench_hist_merge(struct bench_hist *into, const struct bench_hist *h);
/* The q-quantile (0 < q <= 1) in nanoseconds; 0 when empty. */
double bench_hist_quantile(const struct bench_hist *h, double q);

/* The machine: online CPUs, CPU model, RAM bytes, 1-minute load. */
struct bench_machine {
	long cpus;
	char model[128];
	uint64_t ram;
	double load;
};
void bench_machine_get(struct bench_machine *m);
/* The source tree's commit ("abc1234", "abc1234-dirty") or "unknown". */
void bench_git_commit(char *buf, size_t size);
/* Remove path and everything under it; 0 or -errno (absent is 0). */
int bench_tree_remove(const char *path);
/*
 * Commit what the filesystem holding dir still owes (syncfs): the removal
 * of the last store, and on a disk mounted with discard its discards,
 * which the next journal commit would otherwise make the next timed
 * phase's first sync wait for.  Best effort: errors are ignored.
 */
void bench_fs_settle(const char *dir);
/* Write s as a JSON string, quotes included. */
void bench_json_string(FILE *f, const char *s);
/*
 * Peak resident memory: bench_rss_reset() starts a new peak (Linux's
 * clear_refs "5"); bench_rss_peak_kib() is the peak since, in KiB (the
 * process's lifetime peak where the reset is not supported).
 */
void bench_rss_reset(void);
long bench_rss_peak_kib(void);

#endif
