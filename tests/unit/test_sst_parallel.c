/*
 * test_sst_parallel.c - the parallel builder (sst_options.parallel): it
 * writes the very bytes the serial builder writes, for every kind of
 * table; its worker thread runs while blocks are in flight and is joined
 * by finish and by free; and a failed write or allocation, in either
 * thread, fails the build cleanly (valgrind and TSan check the rest).
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sstable/sstable.h"
#include "tap.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/env.h"
#include "util/error.h"

/*
 * Keys are a row of 8 digits, a column letter and 8 digits of sequence
 * number: four columns per row, so that rows run across block boundaries
 * (the splits map has bits to set).
 */
#define ROW_LEN	8
#define KEY_LEN	(ROW_LEN + 1 + 8)

enum vkind { V_RANDOM, V_TEXT, V_MIXED };

struct spec {
	const char *name;
	uint64_t n;
	size_t vlen;
	enum vkind kind;
	size_t block_size;
	bool compress;
	int bloom_bits;
	bool row_functions;	/* filter_prefix, key_column, key_sequence */
};

static size_t
row_prefix(struct slice key)
{
	return ROW_LEN;
}

static bool
key_column(struct slice key, struct slice *column, uint64_t *time)
{
	if (key.n != KEY_LEN)
		return false;
	*column = slice_make(key.p + ROW_LEN, 1);
	*time = strtoull((const char *)key.p + ROW_LEN + 1, NULL, 10);
	return true;
}

static bool
key_sequence(struct slice key, uint64_t *seq)
{
	if (key.n != KEY_LEN)
		return false;
	*seq = strtoull((const char *)key.p + ROW_LEN + 1, NULL, 10);
	return true;
}

static struct slice
key_of(uint64_t i, char out[KEY_LEN + 1])
{
	snprintf(out, KEY_LEN + 1, "%08" PRIu64 "%c%08" PRIu64,
	    (i / 4) % 100000000, (char)('a' + i % 4), (i * 7919) % 100000000);
	return slice_make(out, KEY_LEN);
}

/* Half-compressible when mixed: runs of 16 text and 16 random values. */
static void
value_of(const struct spec *t, uint64_t i, uint8_t *out)
{
	uint64_t s = (i + 1) * 0x9e3779b97f4a7c15ull;

	for (size_t j = 0; j < t->vlen; j++) {
		if (t->kind == V_TEXT ||
		    (t->kind == V_MIXED && (i / 16) % 2 == 0)) {
			out[j] = (uint8_t)"value 0123456789 "[(i + j) % 17];
			continue;
		}
		if (j % 8 == 0)
			(void)tap_rand(&s);
		out[j] = (uint8_t)(s >> (8 * (j % 8)));
	}
}

static void
options_of(const struct spec *t, bool parallel, struct sst_options *o)
{
	sst_options_default(o);
	o->block_size = t->block_size;
	o->compress = t->compress;
	o->bloom_bits_per_key = t->bloom_bits;
	if (t->row_functions) {
		o->filter_prefix = row_prefix;
		o->key_column = key_column;
		o->key_sequence = key_sequence;
	}
	o->parallel = parallel;
}

/*
 * Build t at path; the first error is returned, from add or finish.  After
 * stop_after entries (when not 0) the builder is freed unfinished.
 */
static int
build(struct env *env, const char *path, const struct spec *t,
    bool parallel, uint64_t stop_after, struct sst_info *info)
{
	struct sst_options o;
	struct sst_builder *b;
	uint8_t *v;
	char k[KEY_LEN + 1];
	int rc;

	options_of(t, parallel, &o);
	if ((v = malloc(t->vlen + 1)) == NULL)
		tap_bail("malloc");
	if ((rc = sst_builder_new(env, path, &o, &b)) < 0)
		goto out;
	for (uint64_t i = 0; i < t->n; i++) {
		if (stop_after != 0 && i == stop_after)
			goto out_free;
		value_of(t, i, v);
		if ((rc = sst_builder_add(b, key_of(i, k),
		    slice_make(v, t->vlen))) < 0)
			goto out_free;
	}
	rc = sst_builder_finish(b, info);
out_free:
	sst_builder_free(b);
out:
	free(v);
	return rc;
}

/* The whole content of path into out. */
static int
file_read(struct env *env, const char *path, struct buf *out)
{
	struct env_file *f;
	uint64_t size;
	int rc;

	if ((rc = env_path_size(env, path, &size)) < 0)
		return rc;
	buf_clear(out);
	if ((rc = buf_reserve(out, (size_t)size + 1)) < 0)
		return rc;
	if ((rc = env_file_open(env, path, ENV_READ, &f)) < 0)
		return rc;
	rc = env_file_read_exact(f, 0, out->p, (size_t)size);
	env_file_close(f);
	out->n = (size_t)size;
	return rc;
}

/* Threads of this process, from /proc/self/task; 0 when unknown. */
static int
thread_count(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static const struct spec specs[] = {
	{ "empty", 0, 100, V_MIXED, 4096, true, 10, true },
	{ "one entry", 1, 100, V_MIXED, 4096, true, 10, true },
	{ "one block", 20, 100, V_MIXED, 4096, true, 10, true },
	{ "two blocks", 40, 100, V_TEXT, 4096, true, 10, true },
	{ "4 KiB blocks, mixed", 20000, 100, V_MIXED, 4096, true, 10, true },
	{ "4 KiB blocks, random (kept raw)", 5000, 100, V_RANDOM, 4096, true,
	    10, true },
	{ "256-byte blocks", 5000, 40, V_MIXED, 256, true, 10, true },
	{ "no compression", 5000, 100, V_TEXT, 4096, false, 10, true },
	{ "no Bloom filter, version 1", 5000, 100, V_MIXED, 4096, true, 0,
	    false },
	{ "64 KiB blocks, 1000-byte values", 3000, 1000, V_MIXED, 65536,
	    true, 10, true },
	{ "values larger than a block", 300, 9000, V_MIXED, 4096, true, 10,
	    true },
};

/* The parallel builder's file is the serial builder's, byte for byte. */
static void
test_identical(struct env *env)
{
	struct buf serial, parallel;

	buf_init(&serial);
	buf_init(&parallel);
	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		const struct spec *t = &specs[i];
		struct sst_info si, pi;
		struct sst_reader *r;

		memset(&si, 0, sizeof(si));
		memset(&pi, 0, sizeof(pi));
		is_int(build(env, "serial.sst", t, false, 0, &si), 0,
		    "%s: serial build", t->name);
		is_int(build(env, "parallel.sst", t, true, 0, &pi), 0,
		    "%s: parallel build", t->name);
		ok(si.entry_count == pi.entry_count &&
		    si.file_size == pi.file_size &&
		    si.data_size == pi.data_size &&
		    si.block_count == pi.block_count,
		    "%s: same info (%" PRIu64 " blocks, %" PRIu64 " bytes)",
		    t->name, pi.block_count, pi.file_size);
		if (file_read(env, "serial.sst", &serial) < 0 ||
		    file_read(env, "parallel.sst", &parallel) < 0)
			tap_bail("file_read");
		ok(serial.n == parallel.n &&
		    memcmp(serial.p, parallel.p, serial.n) == 0,
		    "%s: the same %zu bytes", t->name, parallel.n);
		is_int(sst_reader_open(env, "parallel.sst", 1, NULL,
		    t->row_functions ? row_prefix : NULL, &r), 0,
		    "%s: opens", t->name);
		if (r != NULL)
			is_int(sst_reader_verify(r), 0, "%s: verifies",
			    t->name);
		sst_reader_unref(r);
		env_path_remove(env, "serial.sst");
		env_path_remove(env, "parallel.sst");
	}
	buf_release(&serial);
	buf_release(&parallel);
}

/*
 * The worker runs once the first block is full; a table of one block and
 * a serial builder have none.  That finish and free (mode 3: of an
 * unfinished builder) join it is for TSan to check (a thread leak):
 * /proc may list a joined thread for a moment longer.
 */
static void
test_thread_lifetime(struct env *env)
{
	const struct spec *t = &specs[4];
	struct sst_options o;
	struct sst_builder *b;
	uint8_t v[100];
	char k[KEY_LEN + 1];
	int base = thread_count(), during_serial = 0, during_small = 0;
	int during = 0;

	if (base == 0) {
		ok(true, "# SKIP no /proc/self/task");
		return;
	}
	for (int mode = 0; mode < 4; mode++) {
		/* serial, one block, finished, freed unfinished */
		uint64_t n = mode == 1 ? 20 : 2000;

		options_of(t, mode != 0, &o);
		if (sst_builder_new(env, "threads.sst", &o, &b) < 0)
			tap_bail("sst_builder_new");
		for (uint64_t i = 0; i < n; i++) {
			value_of(t, i, v);
			if (sst_builder_add(b, key_of(i, k),
			    slice_make(v, sizeof(v))) < 0)
				tap_bail("sst_builder_add");
		}
		if (mode == 0)
			during_serial = thread_count();
		else if (mode == 1)
			during_small = thread_count();
		else
			during = thread_count();
		if (mode != 3)
			is_int(sst_builder_finish(b, NULL), 0,
			    "mode %d: finish", mode);
		sst_builder_free(b);
		env_path_remove(env, "threads.sst");
	}
	is_int(during_serial, base, "a serial builder has no thread");
	is_int(during_small, base, "nor has a parallel one of one block");
	is_int(during, base + 1, "a parallel builder of many blocks has one");
}

/*
 * The Nth append failing, for every N the table takes: the build fails
 * with that error from add or finish, the builder then refuses more, and
 * free joins the worker.  So does a failed sync.
 */
static void
test_write_failures(struct env *env)
{
	const struct spec *t = &specs[4];
	struct sst_info info;
	long n, wrong = 0, failed = 0;
	int rc;

	for (n = 1; n < 1000; n++) {
		env_fault_fail_after(env, ENV_FAULT_APPEND, n, -EIO, false);
		rc = build(env, "ioerr.sst", t, true, 0, &info);
		env_fault_fail_after(env, ENV_FAULT_APPEND, 0, 0, false);
		env_path_remove(env, "ioerr.sst");
		if (rc == 0)
			break;
		failed++;
		wrong += rc != -EIO;
	}
	ok(failed > 10, "%ld builds met a failed append", failed);
	is_int(wrong, 0, "each failed with -EIO");
	is_int(rc, 0, "and the build with no failure left succeeds");

	env_fault_fail_after(env, ENV_FAULT_APPEND, 1, -EIO, true);
	rc = build(env, "ioerr.sst", t, true, 0, &info);
	env_fault_fail_after(env, ENV_FAULT_APPEND, 0, 0, false);
	env_path_remove(env, "ioerr.sst");
	is_int(rc, -EIO, "every append failing: -EIO");

	env_fault_fail_after(env, ENV_FAULT_SYNC, 1, -EIO, false);
	rc = build(env, "ioerr.sst", t, true, 0, &info);
	env_fault_fail_after(env, ENV_FAULT_SYNC, 0, 0, false);
	env_path_remove(env, "ioerr.sst");
	is_int(rc, -EIO, "a failed sync fails a parallel build");

	for (uint64_t stop = 100; stop <= 1000; stop += 300) {
		rc = build(env, "unfinished.sst", t, true, stop, NULL);
		env_path_remove(env, "unfinished.sst");
		is_int(rc, 0, "freed unfinished after %" PRIu64 " entries",
		    stop);
	}
}

/*
 * Every allocation failing from the nth on: the build returns -ENOMEM or
 * succeeds, and a success has the serial builder's bytes.  Which thread
 * meets the failure varies from run to run; both must hold.
 */
static void
test_enomem(struct env *env)
{
	const struct spec *t = &specs[6];
	struct buf want, got;
	struct sst_info info;
	long n, wrong = 0, failed = 0, differ = 0;
	int rc = 0;

	buf_init(&want);
	buf_init(&got);
	if (build(env, "want.sst", t, false, 0, &info) < 0 ||
	    file_read(env, "want.sst", &want) < 0)
		tap_bail("reference build");
	for (n = 1; n < 100000; n++) {
		bt_alloc_fail_after(n);
		rc = build(env, "nomem.sst", t, true, 0, &info);
		bt_alloc_fail_after(0);
		if (rc == 0) {
			if (file_read(env, "nomem.sst", &got) < 0)
				tap_bail("file_read");
			differ += got.n != want.n ||
			    memcmp(got.p, want.p, got.n) != 0;
		}
		env_path_remove(env, "nomem.sst");
		if (rc == 0)
			break;
		failed++;
		wrong += rc != -ENOMEM;
	}
	ok(failed > 10, "%ld builds met a failed allocation", failed);
	is_int(wrong, 0, "each failed with -ENOMEM");
	is_int(rc, 0, "the first with no failure left succeeds");
	is_int(differ, 0, "with the serial builder's bytes");
	env_path_remove(env, "want.sst");
	buf_release(&want);
	buf_release(&got);
}

int
main(void)
{
	struct env *env;

	if (env_fault_new(&env) < 0)
		tap_bail("env_fault_new");
	test_identical(env);
	test_thread_lifetime(env);
	test_write_failures(env);
	test_enomem(env);
	env_free(env);
	return tap_done();
}
