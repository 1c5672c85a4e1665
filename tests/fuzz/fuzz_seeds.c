/*
 * fuzz_seeds.c - writes the seed corpora of the fuzz targets into
 * DIR/<target>/ (tests/fuzz/run --seeds regenerates tests/fuzz/corpus):
 * real SSTables, blocks, log segments and mutation records made by the
 * engine's own writers, a few typical names, GC policies, import lines
 * and control-socket requests, and RPC frames.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ctl/ctl_socket.h"
#include "log/log.h"
#include "rpc/rpc.h"
#include "sstable/block.h"
#include "sstable/sstable.h"
#include "tablet/mutation.h"
#include "util/buf.h"
#include "util/env.h"

static const char *dir;

static void
die(const char *what)
{
	fprintf(stderr, "fuzz_seeds: %s\n", what);
	exit(1);
}

/* Write DIR/target/name holding flag (if >= 0) then p[0..n). */
static void
seed(const char *target, const char *name, int flag, const void *p,
    size_t n)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, target);
	mkdir(path, 0777);
	snprintf(path, sizeof(path), "%s/%s/%s", dir, target, name);
	if ((f = fopen(path, "wb")) == NULL)
		die(path);
	if (flag >= 0)
		putc(flag, f);
	if (fwrite(p, 1, n, f) != n || fclose(f) != 0)
		die(path);
}

static void
seed_str(const char *target, const char *name, const char *s)
{
	seed(target, name, -1, s, strlen(s));
}

/* The bytes of file path in env. */
static void
env_slurp(struct env *env, const char *path, struct buf *out)
{
	struct env_file *f;
	uint64_t size;

	if (env_file_open(env, path, ENV_READ, &f) < 0)
		die(path);
	if (env_file_size(f, &size) < 0)
		die(path);
	buf_clear(out);
	if (buf_reserve(out, (size_t)size) < 0 ||
	    env_file_read_exact(f, 0, out->p, (size_t)size) < 0)
		die(path);
	out->n = (size_t)size;
	env_file_close(f);
}

/* The bounds of a seed table's keys "rowNNNN": column "row", time NNNN. */
static bool
seed_key_column(struct slice key, struct slice *column, uint64_t *time)
{
	if (key.n < 4)
		return false;
	*column = slice_make(key.p, 3);
	*time = strtoull((const char *)key.p + 3, NULL, 10);
	return true;
}

/* The sequence number of a seed table's key "rowNNNN": 1000 + NNNN. */
static bool
seed_key_sequence(struct slice key, uint64_t *seq)
{
	if (key.n < 4)
		return false;
	*seq = 1000 + strtoull((const char *)key.p + 3, NULL, 10);
	return true;
}

/* The filter prefix of the splits seed: "rowNNN" of "rowNNNN", so that
 * ten keys share one and some run across a block boundary. */
static size_t
seed_filter_prefix(struct slice key)
{
	return key.n < 6 ? key.n : 6;
}

static void
seeds_sstable(struct env *env)
{
	static const struct {
		const char *name;
		int n, vlen, block, bloom, compress, bounds;
	} specs[] = {
		{ "empty", 0, 0, 4096, 10, 1, 0 },
		{ "one", 1, 5, 4096, 10, 0, 0 },
		{ "blocks", 40, 30, 256, 10, 0, 0 },
		{ "snappy", 40, 60, 512, 0, 1, 0 },
		{ "nofilter", 10, 3, 128, 0, 0, 0 },
		{ "bounds", 20, 8, 256, 10, 0, 1 },	/* format version 2 */
		{ "splits", 40, 8, 128, 10, 0, 2 },	/* a splits map */
		/* Version 4: a block per entry, its value length in the
		 * index. */
		{ "lone", 12, 100, 64, 10, 0, 2 },
	};
	struct sst_options o;
	struct sst_builder *b;
	struct buf file;
	char path[64], key[32], val[128];

	buf_init(&file);
	for (size_t s = 0; s < sizeof(specs) / sizeof(specs[0]); s++) {
		snprintf(path, sizeof(path), "/%zu.sst", s);
		sst_options_default(&o);
		o.block_size = (size_t)specs[s].block;
		o.bloom_bits_per_key = specs[s].bloom;
		o.compress = specs[s].compress != 0;
		if (specs[s].bounds) {
			o.key_column = seed_key_column;
			o.key_sequence = seed_key_sequence;
		}
		if (specs[s].bounds == 2)
			o.filter_prefix = seed_filter_prefix;
		if (sst_builder_new(env, path, &o, &b) < 0)
			die("sst_builder_new");
		for (int i = 0; i < specs[s].n; i++) {
			snprintf(key, sizeof(key), "row%04d", i * 3);
			memset(val, 'a' + i % 26, (size_t)specs[s].vlen);
			if (sst_builder_add(b, slice_str(key),
			    slice_make(val, (size_t)specs[s].vlen)) < 0)
				die("sst_builder_add");
		}
		if (sst_builder_finish(b, NULL) < 0)
			die("sst_builder_finish");
		sst_builder_free(b);
		env_slurp(env, path, &file);
		seed("fuzz_sstable", specs[s].name, 1, file.p, file.n);
	}
	buf_release(&file);
}

static void
seeds_block(void)
{
	struct block_builder b;
	struct slice out;
	char key[32], name[32];

	for (int interval = 1; interval <= 16; interval *= 4) {
		block_builder_init(&b, interval);
		for (int i = 0; i < 20; i++) {
			snprintf(key, sizeof(key), "key%03d", i * 7);
			if (block_builder_add(&b, slice_str(key),
			    slice_str(i % 2 ? "value" : "")) < 0)
				die("block_builder_add");
		}
		if (block_builder_finish(&b, &out) < 0)
			die("block_builder_finish");
		snprintf(name, sizeof(name), "restart%d", interval);
		seed("fuzz_block", name, 'k', out.p, out.n);
		block_builder_release(&b);
	}
	block_builder_init(&b, 16);
	if (block_builder_finish(&b, &out) < 0)
		die("block_builder_finish");
	seed("fuzz_block", "empty", 0, out.p, out.n);
	block_builder_release(&b);
}

static void
mutation_seed(struct buf *out, int ops)
{
	struct mutation m[5] = {
		{ MUTATION_PUT, { (const uint8_t *)"f", 1 },
		    { (const uint8_t *)"q", 1 }, 1700000000000000,
		    { (const uint8_t *)"value", 5 } },
		{ MUTATION_DELETE_VERSION, { (const uint8_t *)"f", 1 },
		    { (const uint8_t *)"", 0 }, 17, { NULL, 0 } },
		{ MUTATION_DELETE_COLUMN, { (const uint8_t *)"anchor", 6 },
		    { (const uint8_t *)"cnnsi.com", 9 }, 0, { NULL, 0 } },
		{ MUTATION_DELETE_FAMILY, { (const uint8_t *)"g", 1 },
		    { NULL, 0 }, 0, { NULL, 0 } },
		{ MUTATION_DELETE_ROW, { NULL, 0 }, { NULL, 0 }, 0,
		    { NULL, 0 } },
	};

	buf_clear(out);
	if (mutation_record_encode(42, 3, slice_str("com.cnn.www"), m,
	    (size_t)ops, out) < 0)
		die("mutation_record_encode");
}

static void
seeds_log(struct env *env)
{
	struct log_writer *w;
	struct buf rec, file;
	char path[64], name[32];

	buf_init(&rec);
	buf_init(&file);
	for (int ops = 1; ops <= 5; ops++) {
		mutation_seed(&rec, ops);
		snprintf(name, sizeof(name), "ops%d", ops);
		seed("fuzz_mutation", name, -1, rec.p, rec.n);
	}
	if (env_dir_create(env, "/log") < 0 ||
	    log_writer_open(env, "/log", 1, NULL, &w) < 0)
		die("log_writer_open");
	for (int ops = 1; ops <= 5; ops++) {
		mutation_seed(&rec, ops);
		if (log_writer_append(w, buf_slice(&rec), ops == 5, NULL) < 0)
			die("log_writer_append");
	}
	if (log_writer_close(w) < 0)
		die("log_writer_close");
	log_segment_path(path, sizeof(path), "/log", 1);
	env_slurp(env, path, &file);
	/* Flag 0: as written; the header stays. */
	seed("fuzz_log", "segment", 0, file.p, file.n);
	/* A torn tail: the last record cut short. */
	seed("fuzz_log", "torn", 0, file.p, file.n - 3);
	/* Flag 1: the target writes the header and fixes the CRCs. */
	seed("fuzz_log", "records", 1, file.p + 16, file.n - 16);
	buf_release(&rec);
	buf_release(&file);
}

static void
seeds_text(void)
{
	seed_str("fuzz_names", "plain", "com.cnn.www");
	seed_str("fuzz_names", "escapes", "%2Ehidden%2F%25%40%00%ff");
	seed_str("fuzz_names", "empty", "%");
	seed_str("fuzz_names", "utf8", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
	seed_str("fuzz_names", "lower", "%2e%3a%7e");
	seed("fuzz_names", "specials", -1, "./%@\0\x80\xff/.\xc2\x85",
	    11);
	seed_str("fuzz_gc_policy", "never", "never");
	seed_str("fuzz_gc_policy", "versions", "maxversions=3");
	seed_str("fuzz_gc_policy", "or", "maxversions=3 or maxage=7d");
	seed_str("fuzz_gc_policy", "nested",
	    "(maxage=1d and maxversions=5) || (maxage = 12h && maxversions=2)");
	seed_str("fuzz_gc_policy", "units", "MAXAGE=30s OR maxage=15m");
	seed_str("fuzz_import", "cell",
	    "com.cnn.www\tanchor\tcnnsi.com\t1700000000000001\tCNN");
	seed_str("fuzz_import", "escapes",
	    "r\\x00w\tcontents\t\t9223372036854775807\t<html>\\x09\\\\</html>");
	seed_str("fuzz_import", "emptyvalue", "r\tf\tq\t0\t");
}

/* A request, as tabletctl sends it, captured through a socket pair. */
static void
seed_request(const char *name, int argc, char *const *argv, const char *in)
{
	char buf[8192];
	ssize_t n;
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
		die("socketpair");
	if (ctl_socket_send_request(sv[0], argc, argv, in, strlen(in)) < 0)
		die("ctl_socket_send_request");
	close(sv[0]);
	if ((n = read(sv[1], buf, sizeof(buf))) < 0)
		die("read");
	close(sv[1]);
	seed("fuzz_ctl_request", name, -1, buf, (size_t)n);
}

static void
seeds_requests(void)
{
	char *ls[] = { "/srv/web.store", "ls" };
	char *set[] = { "web.store", "set", "webtable", "com.cnn.www",
	    "anchor:cnnsi.com=CNN@1700000000000001", "contents:=x" };
	char *imp[] = { "s", "import", "t", "-" };

	seed_request("ls", 2, ls, "");
	seed_request("set", 6, set, "");
	seed_request("import", 4, imp, "r\tf\tq\t1\tv\n");
}

/* RPC frames as rpc_frame_encode writes them, behind the flag byte of
 * fuzz_rpc_frame.c: 8 the largest max_frame, 9 the same with crcs fixed,
 * 6 a max_frame of 4096. */
static void
seeds_rpc(void)
{
	static const char msg[] = "tablet not served here";
	struct rpc_frame req = { .id = 1, .method = 7, .timeout_ms = 1500,
	    .payload = { (const uint8_t *)"row\0column", 10 } };
	struct rpc_frame empty = { .id = 2, .method = 1 };
	struct rpc_frame err = { .id = 1, .method = 7, .status = -71,
	    .payload = slice_make(msg, sizeof(msg) - 1) };
	struct buf b;

	buf_init(&b);
	if (rpc_frame_encode(&b, &req) < 0)
		die("rpc_frame_encode");
	seed("fuzz_rpc_frame", "request", 8, b.p, b.n);
	if (rpc_frame_encode(&b, &empty) < 0 || rpc_frame_encode(&b, &err) < 0)
		die("rpc_frame_encode");
	seed("fuzz_rpc_frame", "stream", 8, b.p, b.n);
	seed("fuzz_rpc_frame", "truncated", 8, b.p, b.n - 3);
	b.p[b.n - 1] ^= 0x20;
	seed("fuzz_rpc_frame", "badcrc", 8, b.p, b.n);
	seed("fuzz_rpc_frame", "fixcrc", 9, b.p, b.n);
	buf_clear(&b);
	if (rpc_frame_encode(&b, &err) < 0)
		die("rpc_frame_encode");
	seed("fuzz_rpc_frame", "small-max", 6, b.p, b.n);
	buf_release(&b);
}

int
main(int argc, char **argv)
{
	struct env *env;

	if (argc != 2) {
		fprintf(stderr, "usage: fuzz_seeds DIR\n");
		return 2;
	}
	dir = argv[1];
	mkdir(dir, 0777);
	if (env_fault_new(&env) < 0)
		die("env_fault_new");
	seeds_sstable(env);
	seeds_block();
	seeds_log(env);
	seeds_text();
	seeds_requests();
	seeds_rpc();
	env_free(env);
	return 0;
}
