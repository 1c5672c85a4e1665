/*
 * fuzz_seeds.c - writes the seed corpora of the fuzz targets into
 * DIR/<target>/ (tests/fuzz/run --seeds regenerates tests/fuzz/corpus):
 * real SSTables, blocks, log segments and mutation records made by the
 * engine's own writers, a few typical names, GC policies, import lines
 * and control-socket requests, RPC frames, and the service's RPC requests.
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
#include "rpc/tabletfs.pb-c.h"
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

/* The usage label of the usage seed: "rowN" of "rowNNNN", a few labels. */
static struct slice
seed_key_label(struct slice key)
{
	return slice_make(key.p, key.n < 4 ? key.n : 4);
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
		/* Version 5: bytes per label in the bounds block. */
		{ "usage", 40, 20, 256, 10, 1, 3 },
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
		if (specs[s].bounds >= 2)
			o.filter_prefix = seed_filter_prefix;
		if (specs[s].bounds == 3)
			o.key_label = seed_key_label;
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
	if (mutation_record_encode(42, 3, 1700000000000000,
	    slice_str("com.cnn.www"), m, (size_t)ops, out) < 0)
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
	seed_str("fuzz_fs_query", "paper", "\x02@column=anchor:.*\\.cnn"
	    "\\.com");
	seed_str("fuzz_fs_query", "chain", "\x02@row=com\\.cnn\\..*/"
	    "@family=a|b/@qualifier=%/@value=%2F%25%40%00/@start-ts=5/"
	    "@end-ts=9/@cells-per-column=1/@cells-per-row=2/"
	    "@cells-per-row-offset=1/@column=contents");
	seed_str("fuzz_fs_query", "bad", "\x02@end-ts=5/@start-ts=5/@row=");
	seed("fuzz_fs_query", "bytes", 1, "a\0\xff/%@.", 7);
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

/* A packed request for fuzz_service: the method number, then the
 * message. */
static void
seed_rpc(const char *name, uint32_t method, const ProtobufCMessage *m)
{
	size_t n = m != NULL ? protobuf_c_message_get_packed_size(m) : 0;
	uint8_t *p = malloc(n + 1);

	if (p == NULL)
		die("malloc");
	if (m != NULL)
		protobuf_c_message_pack(m, p);
	seed("fuzz_service", name, (int)method, p, n);
	free(p);
}

#define PB_STR(s)	((ProtobufCBinaryData){ sizeof(s) - 1, (uint8_t *)(s) })

/* The catalog calls of another tablet server (service_catalog.c): the
 * fixture's table "t" is id 1, its tablet 1 (assigned to the fixture's
 * host, not to the caller here: an apply is refused, for its shape). */
static void
seeds_service_catalog(void)
{
	Tabletfs__CatalogRequest cr = TABLETFS__CATALOG_REQUEST__INIT;
	Tabletfs__CatalogApplyRequest ar = TABLETFS__CATALOG_APPLY_REQUEST__INIT;
	Tabletfs__CatalogFile f = TABLETFS__CATALOG_FILE__INIT;
	Tabletfs__CatalogFile *fp[] = { &f };
	uint64_t removed[] = { 3 };

	cr.caller = "127.0.0.1:7001#1";
	cr.name = "t";
	seed_rpc("catalog_table_get", TABLETFS__METHOD__CATALOG_TABLE_GET,
	    &cr.base);
	cr.name = NULL;
	cr.has_id = true;
	cr.id = 1;
	seed_rpc("catalog_table_get_by_id",
	    TABLETFS__METHOD__CATALOG_TABLE_GET_BY_ID, &cr.base);
	seed_rpc("catalog_tablets_list", TABLETFS__METHOD__CATALOG_TABLETS_LIST,
	    &cr.base);
	seed_rpc("catalog_files_list", TABLETFS__METHOD__CATALOG_FILES_LIST,
	    &cr.base);
	seed_rpc("catalog_file_is_live",
	    TABLETFS__METHOD__CATALOG_FILE_IS_LIVE, &cr.base);
	cr.has_id = false;
	seed_rpc("catalog_table_list", TABLETFS__METHOD__CATALOG_TABLE_LIST,
	    &cr.base);
	seed_rpc("catalog_next_number", TABLETFS__METHOD__CATALOG_NEXT_NUMBER,
	    &cr.base);
	seed_rpc("catalog_schema_version",
	    TABLETFS__METHOD__CATALOG_SCHEMA_VERSION, &cr.base);
	f.has_number = f.has_size = f.has_entry_count = f.has_max_seq = true;
	f.number = 1000;
	f.group = "default";
	f.size = 100;
	f.entry_count = 2;
	f.max_seq = 9;
	ar.caller = "127.0.0.1:7001#1";
	ar.has_tablet_id = ar.has_flushed_seq = true;
	ar.tablet_id = 1;
	ar.flushed_seq = 9;
	ar.n_added = 1;
	ar.added = fp;
	ar.n_removed = 1;
	ar.removed = removed;
	seed_rpc("catalog_tablet_apply", TABLETFS__METHOD__CATALOG_TABLET_APPLY,
	    &ar.base);
}

/* A split by another tablet server (service_replace.c): tablet 1 of "t"
 * split at "m", both halves naming the file; tablet 1 is the fixture's
 * host's, not the caller's here: the replace is refused, for its
 * shape. */
static void
seeds_service_replace(void)
{
	Tabletfs__CatalogReplaceRequest rr =
	    TABLETFS__CATALOG_REPLACE_REQUEST__INIT;
	Tabletfs__CatalogTabletSpec sp[2] = {
		TABLETFS__CATALOG_TABLET_SPEC__INIT,
		TABLETFS__CATALOG_TABLET_SPEC__INIT,
	};
	Tabletfs__CatalogTabletSpec *spp[] = { &sp[0], &sp[1] };
	Tabletfs__CatalogFile f = TABLETFS__CATALOG_FILE__INIT;
	Tabletfs__CatalogFile *fp[] = { &f };
	uint64_t old[] = { 1 };

	f.has_number = f.has_size = f.has_entry_count = f.has_max_seq = true;
	f.number = 1000;
	f.group = "default";
	f.size = 100;
	f.entry_count = 2;
	f.max_seq = 9;
	for (size_t i = 0; i < 2; i++) {
		sp[i].has_start = sp[i].has_end = true;
		sp[i].has_flushed_seq = sp[i].has_auto_split = true;
		sp[i].flushed_seq = 9;
		sp[i].n_files = 1;
		sp[i].files = fp;
	}
	sp[0].end = PB_STR("m");
	sp[1].start = PB_STR("m");
	sp[1].auto_split = true;
	rr.caller = "127.0.0.1:7001#1";
	rr.n_old_ids = 1;
	rr.old_ids = old;
	rr.n_specs = 2;
	rr.specs = spp;
	seed_rpc("catalog_tablet_replace",
	    TABLETFS__METHOD__CATALOG_TABLET_REPLACE, &rr.base);
}

/* The master's catalog calls and a client's LOCATE: tablet 1 is the
 * fixture's, assigned to its host's name (not the expected here: the
 * CAS is refused, for its shape); "t" has one tablet. */
static void
seeds_service_assign(void)
{
	Tabletfs__CatalogRequest cr = TABLETFS__CATALOG_REQUEST__INIT;
	Tabletfs__CatalogAssignRequest ar =
	    TABLETFS__CATALOG_ASSIGN_REQUEST__INIT;
	Tabletfs__LocateRequest lr = TABLETFS__LOCATE_REQUEST__INIT;

	ar.caller = "127.0.0.1:7000#1";
	ar.has_tablet_id = true;
	ar.tablet_id = 1;
	ar.server = "127.0.0.1:7001#2";
	ar.expected = "127.0.0.1:7001#1";
	seed_rpc("catalog_assign", TABLETFS__METHOD__CATALOG_ASSIGN,
	    &ar.base);
	cr.caller = "127.0.0.1:7000#1";
	seed_rpc("catalog_assignments", TABLETFS__METHOD__CATALOG_ASSIGNMENTS,
	    &cr.base);
	cr.name = "127.0.0.1:7001#1";
	seed_rpc("catalog_server_gone", TABLETFS__METHOD__CATALOG_SERVER_GONE,
	    &cr.base);
	lr.table = "t";
	lr.has_row = lr.has_count = true;
	lr.row = PB_STR("b");
	lr.count = 3;
	seed_rpc("locate", TABLETFS__METHOD__LOCATE, &lr.base);
}

/*
 * A bulk load's requests.  Ids are the service's scrambled counter, not
 * known here: the open seeds the opening, the others name id 1 (-ENOENT
 * unless the fuzzer finds a live one) for their shape.
 */
static void
seeds_service_bulk(void)
{
	Tabletfs__BulkOpenRequest bo = TABLETFS__BULK_OPEN_REQUEST__INIT;
	Tabletfs__Cell c1 = TABLETFS__CELL__INIT, c2 = TABLETFS__CELL__INIT,
	    *cells[] = { &c1, &c2 };
	Tabletfs__Row row = TABLETFS__ROW__INIT, *rows[] = { &row };
	Tabletfs__BulkPutRequest bp = TABLETFS__BULK_PUT_REQUEST__INIT;
	Tabletfs__BulkRequest br = TABLETFS__BULK_REQUEST__INIT;

	bo.table = "t";
	bo.has_memory_budget = true;
	bo.memory_budget = 4096;
	seed_rpc("bulk_open", TABLETFS__METHOD__BULK_OPEN, &bo.base);
	c1.family = "f";
	c1.has_qualifier = c1.has_ts = c1.has_value = true;
	c1.qualifier = PB_STR("q");
	c1.ts = 9;
	c1.value = PB_STR("v");
	c2.family = "g";
	c2.has_value = true;
	c2.value = PB_STR("w");
	row.has_key = true;
	row.key = PB_STR("d");
	row.n_cells = 2;
	row.cells = cells;
	bp.has_bulk_id = true;
	bp.bulk_id = 1;
	bp.n_rows = 1;
	bp.rows = rows;
	seed_rpc("bulk_put", TABLETFS__METHOD__BULK_PUT, &bp.base);
	br.has_bulk_id = true;
	br.bulk_id = 1;
	seed_rpc("bulk_commit", TABLETFS__METHOD__BULK_COMMIT, &br.base);
	seed_rpc("bulk_abort", TABLETFS__METHOD__BULK_ABORT, &br.base);
}

/* Requests on the fuzz target's table t (families f and g, rows a-c). */
static void
seeds_service(void)
{
	Tabletfs__Family fam = TABLETFS__FAMILY__INIT, *fams[] = { &fam };
	Tabletfs__TableCreateRequest tc = TABLETFS__TABLE_CREATE_REQUEST__INIT;
	Tabletfs__TableRequest tr = TABLETFS__TABLE_REQUEST__INIT;
	Tabletfs__FamilyRequest fr = TABLETFS__FAMILY_REQUEST__INIT;
	Tabletfs__Group grp = TABLETFS__GROUP__INIT;
	Tabletfs__GroupSetRequest gs = TABLETFS__GROUP_SET_REQUEST__INIT;
	Tabletfs__Mutation m1 = TABLETFS__MUTATION__INIT,
	    m2 = TABLETFS__MUTATION__INIT, *muts[] = { &m1, &m2 };
	Tabletfs__Condition cond = TABLETFS__CONDITION__INIT;
	Tabletfs__MutateRowRequest mr = TABLETFS__MUTATE_ROW_REQUEST__INIT;
	Tabletfs__Mutation m3 = TABLETFS__MUTATION__INIT, *bad_muts[] = { &m3 };
	Tabletfs__MutateRowsEntry re[3] = { TABLETFS__MUTATE_ROWS_ENTRY__INIT,
	    TABLETFS__MUTATE_ROWS_ENTRY__INIT,
	    TABLETFS__MUTATE_ROWS_ENTRY__INIT },
	    *rep[] = { &re[0], &re[1], &re[2] };
	Tabletfs__MutateRowsRequest mrs = TABLETFS__MUTATE_ROWS_REQUEST__INIT;
	Tabletfs__ReadModifyWriteRequest rmw =
	    TABLETFS__READ_MODIFY_WRITE_REQUEST__INIT;
	Tabletfs__MoveVersion mv = TABLETFS__MOVE_VERSION__INIT;
	Tabletfs__Column c1 = TABLETFS__COLUMN__INIT,
	    c2 = TABLETFS__COLUMN__INIT, *cols[] = { &c1 };
	Tabletfs__MoveColumnRequest mc = TABLETFS__MOVE_COLUMN_REQUEST__INIT;
	Tabletfs__ReadOptions ro = TABLETFS__READ_OPTIONS__INIT;
	Tabletfs__ReadRowRequest rr = TABLETFS__READ_ROW_REQUEST__INIT;
	Tabletfs__ScanRequest sr = TABLETFS__SCAN_REQUEST__INIT;
	Tabletfs__SplitRequest sp = TABLETFS__SPLIT_REQUEST__INIT;
	ProtobufCBinaryData splits[] = { PB_STR("m") };
	Tabletfs__AccessSetRequest as = TABLETFS__ACCESS_SET_REQUEST__INIT;
	Tabletfs__Access acc = TABLETFS__ACCESS__INIT;

	fam.name = "h";
	fam.gc_policy = "maxversions=2";
	tc.table = "u";
	tc.n_families = 1;
	tc.families = fams;
	tc.n_splits = 1;
	tc.splits = splits;
	seed_rpc("table_create", TABLETFS__METHOD__TABLE_CREATE, &tc.base);
	tr.table = "u";
	seed_rpc("table_delete", TABLETFS__METHOD__TABLE_DELETE, &tr.base);
	seed_rpc("table_list", TABLETFS__METHOD__TABLE_LIST, NULL);
	fr.table = "t";
	fr.family = &fam;
	seed_rpc("family_create", TABLETFS__METHOD__FAMILY_CREATE, &fr.base);
	seed_rpc("family_set_gc", TABLETFS__METHOD__FAMILY_SET_GC, &fr.base);
	seed_rpc("family_delete", TABLETFS__METHOD__FAMILY_DELETE, &fr.base);
	gs.table = "t";
	gs.group = &grp;
	grp.name = "default";
	grp.has_compress = grp.has_bloom = true;
	grp.compress = 0;
	grp.bloom = 1;
	seed_rpc("group_set", TABLETFS__METHOD__GROUP_SET, &gs.base);
	tr.table = "t";
	seed_rpc("table_describe", TABLETFS__METHOD__TABLE_DESCRIBE, &tr.base);
	seed_rpc("tablets", TABLETFS__METHOD__TABLETS, &tr.base);
	seed_rpc("table_usage", TABLETFS__METHOD__TABLE_USAGE, &tr.base);
	seed_rpc("table_access", TABLETFS__METHOD__TABLE_ACCESS, &tr.base);
	as.table = "t";
	as.family = "f";
	as.change = &acc;
	acc.has_mode = true;
	acc.mode = 0750;
	seed_rpc("access_set", TABLETFS__METHOD__ACCESS_SET, &as.base);
	tr.has_major = tr.major = true;
	seed_rpc("compact", TABLETFS__METHOD__COMPACT, &tr.base);

	m1.has_kind = m1.has_qualifier = m1.has_ts = m1.has_value = true;
	m1.kind = TABLETFS__MUTATION__KIND__PUT;
	m1.family = "f";
	m1.qualifier = PB_STR("q");
	m1.ts = -1;
	m1.value = PB_STR("7\n");
	m2.has_kind = true;
	m2.kind = TABLETFS__MUTATION__KIND__DELETE_COLUMN;
	m2.family = "g";
	mr.table = "t";
	mr.has_row = true;
	mr.row = PB_STR("a");
	mr.n_mutations = 2;
	mr.mutations = muts;
	seed_rpc("mutate_row", TABLETFS__METHOD__MUTATE_ROW, &mr.base);
	cond.family = "f";
	cond.has_qualifier = cond.has_expected = cond.has_expected_ts = true;
	cond.qualifier = PB_STR("q");
	cond.expected = PB_STR("12\n");
	cond.expected_ts = 5;
	mr.condition = &cond;
	seed_rpc("check_and_mutate", TABLETFS__METHOD__MUTATE_ROW, &mr.base);
	/* Three rows: a good one, one with an unknown family, one in
	 * another row; the first row's mutations are both kinds above. */
	re[0].has_row = re[1].has_row = re[2].has_row = true;
	re[0].row = PB_STR("a");
	re[0].n_mutations = 2;
	re[0].mutations = muts;
	re[1].row = PB_STR("b");
	re[1].n_mutations = 1;
	re[1].mutations = bad_muts;
	m3.has_kind = m3.has_qualifier = m3.has_ts = m3.has_value = true;
	m3.kind = TABLETFS__MUTATION__KIND__PUT;
	m3.family = "nosuch";
	m3.qualifier = PB_STR("q");
	m3.ts = 3;
	m3.value = PB_STR("v");
	re[2].row = PB_STR("zz");
	re[2].n_mutations = 1;
	re[2].mutations = muts;
	mrs.table = "t";
	mrs.n_entries = 3;
	mrs.entries = rep;
	mrs.has_sync = mrs.sync = true;
	seed_rpc("mutate_rows", TABLETFS__METHOD__MUTATE_ROWS, &mrs.base);

	rmw.table = "t";
	rmw.has_row = rmw.has_qualifier = true;
	rmw.row = PB_STR("b");
	rmw.family = "f";
	rmw.qualifier = PB_STR("q");
	rmw.op_case = TABLETFS__READ_MODIFY_WRITE_REQUEST__OP_INCREMENT;
	rmw.increment = 3;
	seed_rpc("increment", TABLETFS__METHOD__READ_MODIFY_WRITE, &rmw.base);
	rmw.op_case = TABLETFS__READ_MODIFY_WRITE_REQUEST__OP_APPEND;
	rmw.append = PB_STR("x");
	seed_rpc("append", TABLETFS__METHOD__READ_MODIFY_WRITE, &rmw.base);
	rmw.op_case = TABLETFS__READ_MODIFY_WRITE_REQUEST__OP_MOVE_VERSION;
	rmw.move_version = &mv;
	mv.has_src_ts = mv.has_dst_qualifier = true;
	mv.src_ts = 5;
	mv.dst_family = "g";
	mv.dst_qualifier = PB_STR("r");
	seed_rpc("move_version", TABLETFS__METHOD__READ_MODIFY_WRITE,
	    &rmw.base);

	mc.table = "t";
	mc.has_row = true;
	mc.row = PB_STR("c");
	mc.src = &c1;
	mc.dst = &c2;
	c1.family = "f";
	c2.family = "g";
	seed_rpc("move_family", TABLETFS__METHOD__MOVE_COLUMN, &mc.base);

	rr.table = "t";
	rr.has_row = true;
	rr.row = PB_STR("a");
	rr.options = &ro;
	ro.n_columns = 1;
	ro.columns = cols;
	ro.has_cells_per_column = ro.has_max_ts = true;
	ro.cells_per_column = 1;
	ro.max_ts = 10;
	seed_rpc("read_row", TABLETFS__METHOD__READ_ROW, &rr.base);
	sr.table = "t";
	sr.has_start = sr.has_batch_rows = true;
	sr.start = PB_STR("a");
	sr.batch_rows = 2;
	sr.options = &ro;
	seed_rpc("scan", TABLETFS__METHOD__SCAN, &sr.base);
	tabletfs__scan_request__init(&sr);
	sr.has_scanner_id = true;
	sr.scanner_id = 1;
	seed_rpc("scan_next", TABLETFS__METHOD__SCAN, &sr.base);
	seed_rpc("scan_close", TABLETFS__METHOD__SCAN_CLOSE, &sr.base);

	sp.table = "t";
	sp.has_row = true;
	sp.row = PB_STR("b");
	seed_rpc("split", TABLETFS__METHOD__SPLIT, &sp.base);
	seed_rpc("flush", TABLETFS__METHOD__FLUSH, NULL);
	seed_rpc("check", TABLETFS__METHOD__CHECK, NULL);
	seed_rpc("stats", TABLETFS__METHOD__STATS, NULL);
	seed_rpc("last_seq", TABLETFS__METHOD__LAST_SEQ, NULL);
	seed_rpc("space", TABLETFS__METHOD__SPACE, NULL);
	seed_rpc("unknown", 99, NULL);
	seeds_service_bulk();
	seeds_service_catalog();
	seeds_service_replace();
	seeds_service_assign();
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
	seeds_service();
	env_free(env);
	return 0;
}
