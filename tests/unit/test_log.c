/*
 * test_log.c - the commit log: round trips across rotated segments on both
 * envs, seeking, torn tails cut at every byte, zero-filled tails, every
 * byte flipped, group commit under threads, failed writes and syncs, zeros
 * written ahead of synced records, and power loss.
 *
 * TEST_SMALL=1 shrinks the sizes (for valgrind).
 */
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log/format.h"
#include "log/log.h"
#include "tap.h"
#include "util/alloc.h"
#include "util/coding.h"
#include "util/crc32c.h"
#include "util/env.h"
#include "util/error.h"

#define MIB (1u << 20)

static bool small;

/* An expected record: its payload is generated from size and seed. */
struct rec {
	size_t n;
	uint64_t seed;
	struct log_position pos;
};


static bool
rec_equal(const struct rec *r, struct slice got, uint8_t *scratch)
{
	if (got.n != r->n)
		return false;
	tap_fill(scratch, r->n, r->seed);
	return memcmp(scratch, got.p, got.n) == 0;
}

/* Append one generated record; 0 or the writer's error. */
static int
append_rec(struct log_writer *w, struct rec *r, bool sync, uint8_t *scratch)
{
	tap_fill(scratch, r->n, r->seed);
	return log_writer_append(w, slice_make(scratch, r->n), sync, &r->pos);
}

struct replay {
	size_t matched;		/* records equal to the expected ones */
	bool wrong;		/* a record differed or was extra */
	int rc;			/* 0, or the first error */
	size_t segments;
	uint64_t dropped_early;	/* torn bytes in a segment not the last */
	uint64_t dropped_last;
	bool offsets_ok;	/* offsets and segments match rec.pos */
};

/* Read every segment in dir, comparing records with exp in order. */
static void
replay_dir(struct env *env, const char *dir, const struct rec *exp,
    size_t nexp, bool check_pos, struct replay *out)
{
	struct log_reader *r;
	struct slice s;
	uint64_t *segs, off;
	uint8_t *scratch;
	size_t count, i;
	char path[512];
	int rc;

	memset(out, 0, sizeof(*out));
	out->offsets_ok = true;
	if ((scratch = malloc(MIB + 1)) == NULL)
		tap_bail("malloc");
	if ((out->rc = log_list_segments(env, dir, &segs, &count)) < 0)
		goto out;
	out->segments = count;
	for (i = 0; i < count && out->rc == 0; i++) {
		log_segment_path(path, sizeof(path), dir, segs[i]);
		if ((out->rc = log_reader_open(env, path, &r)) < 0)
			break;
		while ((rc = log_reader_next(r, &s, &off)) == 0) {
			if (out->matched >= nexp ||
			    !rec_equal(&exp[out->matched], s, scratch)) {
				out->wrong = true;
				break;
			}
			if (check_pos &&
			    (exp[out->matched].pos.segment != segs[i] ||
			    exp[out->matched].pos.offset != off))
				out->offsets_ok = false;
			out->matched++;
		}
		if (rc < 0)
			out->rc = rc;
		else if (i + 1 < count)
			out->dropped_early += log_reader_dropped_bytes(r);
		else
			out->dropped_last = log_reader_dropped_bytes(r);
		log_reader_close(r);
		if (out->wrong)
			break;
	}
	bt_free(segs);
out:
	free(scratch);
}

/* Sizes from 1 byte to 1 MiB, most of them small. */
static size_t
random_size(uint64_t *rng)
{
	size_t n = 1 + tap_rand(rng) % ((size_t)1 << (tap_rand(rng) % 21));

	return n > MIB ? MIB : n;
}

/*
 * Many records across several segments come back equal, in order, at the
 * positions the writer gave; a reader seeks to any of those positions.
 */
static void
test_round_trip(struct env *env, const char *dir, const char *label,
    uint64_t *rng)
{
	struct log_options opts = { .segment_size = small ? MIB / 4 : MIB };
	struct log_writer_stats st;
	struct log_position before;
	struct log_writer *w, *w2;
	struct log_reader *r;
	struct replay rp;
	struct rec *recs;
	struct slice s;
	uint8_t *scratch;
	size_t i, n = small ? 40 : 300, pos_bad = 0, seek_bad = 0;
	uint64_t off;
	char path[512];
	int rc = 0;

	if ((recs = calloc(n, sizeof(*recs))) == NULL ||
	    (scratch = malloc(MIB)) == NULL)
		tap_bail("malloc");
	is_int(log_writer_open(env, dir, 1, &opts, &w), 0,
	    "%s: open a writer", label);
	is_int(log_writer_open(env, dir, 1, &opts, &w2), -EEXIST, "%s: a second writer on segment 1 is EEXIST", label);
	for (i = 0; i < n; i++) {
		/* Small: three records of 1 MiB rotate three times
		 * whatever the random sizes. */
		recs[i].n = i == 0 ? 1 : i == 1 || (small && i <= 3) ? MIB :
		    random_size(rng);
		recs[i].seed = tap_rand(rng);
		before = log_writer_position(w);
		if ((rc = append_rec(w, &recs[i], tap_rand(rng) % 10 == 0,
		    scratch)) < 0)
			break;
		if (before.segment != recs[i].pos.segment ||
		    before.offset != recs[i].pos.offset)
			pos_bad++;
	}
	is_int(rc, 0, "%s: %zu appends of 1 byte .. 1 MiB", label, n);
	is_int(pos_bad, 0, "%s: log_writer_position names where each record "
	    "goes", label);
	log_writer_get_stats(w, &st);
	is_int(st.records, n, "%s: stats count the records", label);
	ok(recs[n - 1].pos.segment >= 4, "%s: rotation made %" PRIu64
	    " segments", label, recs[n - 1].pos.segment);
	is_int(log_writer_close(w), 0, "%s: close the writer", label);

	replay_dir(env, dir, recs, n, true, &rp);
	is_int(rp.rc, 0, "%s: replay reads without error", label);
	ok(!rp.wrong && rp.matched == n, "%s: replay returns every record "
	    "intact, in order (%zu of %zu)", label, rp.matched, n);
	ok(rp.offsets_ok, "%s: at the positions the writer gave", label);
	ok(rp.dropped_early == 0 && rp.dropped_last == 0,
	    "%s: no segment has a torn tail", label);
	is_int(rp.segments, recs[n - 1].pos.segment,
	    "%s: log_list_segments finds every segment", label);

	for (i = 0; i < 50; i++) {
		struct rec *want = &recs[tap_rand(rng) % n];

		log_segment_path(path, sizeof(path), dir, want->pos.segment);
		if (log_reader_open(env, path, &r) < 0) {
			seek_bad++;
			continue;
		}
		if (log_reader_seek(r, want->pos.offset) < 0 ||
		    log_reader_next(r, &s, &off) != 0 ||
		    off != want->pos.offset || !rec_equal(want, s, scratch))
			seek_bad++;
		if (i == 0) {
			rc = log_reader_seek(r, 3);
			is_int(rc, -EINVAL, "%s: seek into the header is EINVAL",
			    label);
		}
		log_reader_close(r);
	}
	is_int(seek_bad, 0, "%s: seek to a writer position reads that record",
	    label);
	free(scratch);
	free(recs);
}

/*
 * On the local filesystem the writer reserves a segment's space ahead of
 * its records: while it writes, the segment file is longer than its
 * records and replay reads them all with nothing dropped (as after a
 * kill -9); a rotated or closed segment is cut back to its records.
 */
static void
test_reserved_space(struct env *env, const char *dir)
{
	struct log_options opts = { .segment_size = 4 * MIB };
	struct log_position end;
	struct log_writer *w;
	struct replay rp;
	struct rec recs[200];
	uint8_t scratch[2000];
	uint64_t size1 = 0, size2 = 0;
	char path[512];
	size_t i, n = 200;

	if (log_writer_open(env, dir, 1, &opts, &w) < 0)
		tap_bail("log_writer_open");
	for (i = 0; i < n; i++) {
		recs[i].n = 100 + i * 7;
		recs[i].seed = i;
		if (append_rec(w, &recs[i], i % 4 == 0, scratch) < 0)
			tap_bail("append");
	}
	end = log_writer_position(w);
	log_segment_path(path, sizeof(path), dir, 1);
	env_path_size(env, path, &size1);
	ok(size1 >= end.offset + 512 * 1024, "reserved: the segment being "
	    "written is reserved ahead (%" PRIu64 " bytes for records to %"
	    PRIu64 ")", size1, end.offset);
	replay_dir(env, dir, recs, n, true, &rp);
	ok(rp.rc == 0 && !rp.wrong && rp.matched == n && rp.dropped_last == 0,
	    "reserved: replay of the open segment reads all %zu records and "
	    "drops nothing (%zu, rc %d, dropped %" PRIu64 ")", n, rp.matched,
	    rp.rc, rp.dropped_last);
	if (log_writer_rotate(w, NULL) < 0 || append_rec(w, &recs[0], true,
	    scratch) < 0)
		tap_bail("rotate");
	env_path_size(env, path, &size2);
	is_int(size2, end.offset, "reserved: a rotated segment is cut back "
	    "to its records");
	end = log_writer_position(w);
	is_int(log_writer_close(w), 0, "reserved: close");
	log_segment_path(path, sizeof(path), dir, 2);
	env_path_size(env, path, &size2);
	is_int(size2, end.offset, "reserved: a closed segment is cut back to "
	    "its records");
}

/*
 * A writer whose reservations would leave the filesystem less than its
 * headroom makes none, neither for a new segment nor as its records
 * grow, and its records replay all the same; once there is room again it
 * reserves once more.  Without a headroom it reserves however full the
 * disk is.
 */
static void
test_reserve_headroom(void)
{
	struct log_options opts = { .segment_size = 4 * MIB,
	    .reserve_headroom = MIB };
	struct env_fault_stats st;
	struct log_writer *w;
	struct env *env;
	struct replay rp;
	struct rec recs[300];
	uint8_t scratch[1000];
	uint64_t before;
	size_t i, n = 0;

	if (env_fault_new(&env) < 0 || env_dir_create(env, "/h") < 0)
		tap_bail("env_fault_new");
	env_fault_set_available(env, MIB + MIB / 2);
	if (log_writer_open(env, "/h", 1, &opts, &w) < 0)
		tap_bail("log_writer_open");
	for (; n < 150; n++) {
		recs[n].n = 1000;
		recs[n].seed = n;
		if (append_rec(w, &recs[n], n % 2 == 0, scratch) < 0)
			tap_bail("append");
	}
	env_fault_get_stats(env, &st);
	is_int(st.allocates, 0, "headroom: with 1.5 MiB free and 1 MiB of "
	    "headroom, 150 KB of records reserve nothing, nor does the "
	    "segment");
	env_fault_set_available(env, 8 * MIB);
	for (i = 0; i < 150; i++, n++) {
		recs[n].n = 1000;
		recs[n].seed = n;
		if (append_rec(w, &recs[n], n % 2 == 0, scratch) < 0)
			tap_bail("append");
	}
	env_fault_get_stats(env, &st);
	ok(st.allocates > 0, "headroom: with 8 MiB free the records reserve "
	    "again (%" PRIu64 " reservations)", st.allocates);
	replay_dir(env, "/h", recs, n, true, &rp);
	ok(rp.rc == 0 && !rp.wrong && rp.matched == n && rp.dropped_last == 0,
	    "headroom: replay reads all %zu records (%zu, rc %d)", n,
	    rp.matched, rp.rc);
	is_int(log_writer_close(w), 0, "headroom: close");

	env_fault_set_available(env, 4096);
	opts.reserve_headroom = 0;
	before = st.allocates;
	if (log_writer_open(env, "/h", 2, &opts, &w) < 0)
		tap_bail("log_writer_open");
	env_fault_get_stats(env, &st);
	is_int(st.allocates, before + 1, "headroom: without one, a new "
	    "segment is reserved with 4 KiB free");
	is_int(log_writer_close(w), 0, "headroom: close the second writer");
	env_free(env);
}

static int
touch(struct env *env, const char *path)
{
	struct env_file *f;
	int rc;

	if ((rc = env_file_open(env, path, ENV_CREATE, &f)) < 0)
		return rc;
	return env_file_close(f);
}

/*
 * log_writer_append_many: the records land in order, contiguous, each at
 * the position it was given, with one batch and one sync for the call; a
 * call holding an empty record writes none of them.
 */
static void
test_append_many(void)
{
	static const char *const text[] = { "first", "second record", "3" };
	struct slice recs[3], empty[2], got;
	struct log_position pos[3];
	struct log_writer_stats st;
	struct log_writer *w;
	struct log_reader *r;
	struct env *env;
	uint64_t off;
	char path[64];
	int rc, bad = 0, n = 0;

	if (env_fault_new(&env) < 0 || env_dir_create(env, "/m") < 0)
		tap_bail("env");
	if (log_writer_open(env, "/m", 1, NULL, &w) < 0)
		tap_bail("log_writer_open");
	for (int i = 0; i < 3; i++)
		recs[i] = slice_make(text[i], strlen(text[i]));
	empty[0] = recs[0];
	empty[1] = slice_make("", 0);
	is_int(log_writer_append_many(w, empty, 2, true, NULL), -EINVAL,
	    "append_many: an empty record refuses the whole call");
	is_int(log_writer_append_many(w, recs, 3, true, pos), 0,
	    "append_many: three records");
	log_writer_get_stats(w, &st);
	ok(st.records == 3 && st.batches == 1 && st.syncs == 1,
	    "append_many: one batch and one sync for the call (%" PRIu64
	    " records, %" PRIu64 " batches, %" PRIu64 " syncs)", st.records,
	    st.batches, st.syncs);
	ok(pos[0].offset == LOG_SEGMENT_HEADER_SIZE &&
	    pos[1].offset == pos[0].offset + LOG_RECORD_HEADER_SIZE +
	    recs[0].n && pos[2].offset == pos[1].offset +
	    LOG_RECORD_HEADER_SIZE + recs[1].n && pos[0].segment == 1 &&
	    pos[2].segment == 1, "append_many: contiguous positions, in order");
	is_int(log_writer_close(w), 0, "append_many: close");
	log_segment_path(path, sizeof(path), "/m", 1);
	if (log_reader_open(env, path, &r) < 0)
		tap_bail("log_reader_open");
	while ((rc = log_reader_next(r, &got, &off)) == 0) {
		if (n >= 3 || !slice_equal(got, recs[n]) ||
		    off != pos[n].offset)
			bad++;
		n++;
	}
	log_reader_close(r);
	ok(rc == BT_DONE && n == 3 && bad == 0, "append_many: replay gives "
	    "the three records at their positions (%d read, %d bad)", n,
	    bad);
	env_free(env);
}

static void
test_list_segments(void)
{
	static const char *const names[] = {
		"/l/0000000000000003.log", "/l/0000000000000001.log",
		"/l/0000000000000010.log", "/l/junk", "/l/000000000000002.log",
		"/l/0000000000000002.log.tmp", "/l/000000000000000a.log",
		"/l/00000000000000004.log",
	};
	struct env *env;
	uint64_t *segs;
	size_t i, count;
	char path[64];

	if (env_fault_new(&env) < 0 || env_dir_create(env, "/l") < 0)
		tap_bail("env");
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (touch(env, names[i]) < 0)
			tap_bail("touch");
	is_int(log_list_segments(env, "/l", &segs, &count), 0,
	    "list segments");
	ok(count == 3 && segs[0] == 1 && segs[1] == 3 && segs[2] == 10,
	    "list: segment names only, sorted by number");
	bt_free(segs);
	is_int(log_list_segments(env, "/none", &segs, &count), -ENOENT,
	    "list: a missing dir is ENOENT");
	log_segment_path(path, sizeof(path), "/l", 42);
	ok(strcmp(path, "/l/0000000000000042.log") == 0,
	    "segment path: 16 digits and .log");
	env_free(env);
}

/* Write recs as a one-segment log (syncing at record sync_at, if it is
 * one) and read the file back into *content. */
static size_t
make_segment(struct env *env, const char *dir, struct rec *recs, size_t n,
    size_t sync_at, uint8_t **content)
{
	struct log_writer *w;
	struct env_file *f;
	uint8_t scratch[4096];
	char path[512];
	uint64_t size;
	size_t i;

	if (log_writer_open(env, dir, 1, NULL, &w) < 0)
		tap_bail("log_writer_open");
	for (i = 0; i < n; i++)
		if (append_rec(w, &recs[i], i == sync_at, scratch) < 0)
			tap_bail("append");
	if (log_writer_close(w) < 0)
		tap_bail("log_writer_close");
	log_segment_path(path, sizeof(path), dir, 1);
	if (env_file_open(env, path, ENV_READ, &f) < 0 ||
	    env_file_size(f, &size) < 0 ||
	    (*content = malloc(size)) == NULL ||
	    env_file_read_exact(f, 0, *content, size) < 0)
		tap_bail("read segment");
	env_file_close(f);
	env_path_remove(env, path);
	return size;
}

/* Replace path with the given bytes. */
static void
put_file(struct env *env, const char *path, const uint8_t *p, size_t n)
{
	struct env_file *f;

	env_path_remove(env, path);
	if (env_file_open(env, path, ENV_CREATE, &f) < 0 ||
	    (n > 0 && env_file_append(f, p, n) < 0) || env_file_close(f) < 0)
		tap_bail("put_file");
}

struct segment_read {
	size_t records;		/* intact records read, in order */
	bool wrong;		/* a record was not the expected one */
	int rc;			/* BT_DONE or the error */
	uint64_t dropped;
	char detail[256];
};

/* Read one segment file, comparing with recs; sealed as a segment that
 * another followed (log_reader_set_sealed), or as the last. */
static void
read_segment_as(struct env *env, const char *path, const struct rec *recs,
    size_t n, bool sealed, struct segment_read *out)
{
	struct log_reader *r;
	uint8_t scratch[4096];
	struct slice s;
	uint64_t off;

	memset(out, 0, sizeof(*out));
	if ((out->rc = log_reader_open(env, path, &r)) < 0) {
		snprintf(out->detail, sizeof(out->detail), "%s",
		    bt_error_detail());
		return;
	}
	if (sealed)
		log_reader_set_sealed(r);
	while ((out->rc = log_reader_next(r, &s, &off)) == 0) {
		if (out->records >= n || !rec_equal(&recs[out->records], s,
		    scratch) || off != recs[out->records].pos.offset) {
			out->wrong = true;
			break;
		}
		out->records++;
	}
	if (out->rc < 0)
		snprintf(out->detail, sizeof(out->detail), "%s",
		    bt_error_detail());
	out->dropped = log_reader_dropped_bytes(r);
	log_reader_close(r);
}

/* The damage tests read a segment as one that another followed. */
static void
read_segment(struct env *env, const char *path, const struct rec *recs,
    size_t n, struct segment_read *out)
{
	read_segment_as(env, path, recs, n, true, out);
}

/*
 * Damage in the segment written last: where no later record's synced
 * field covers it, a power loss explains it (unsynced pages written out
 * of order), and the segment is torn there; where one does, the damaged
 * bytes had been synced, and it is corruption.
 */
static void
test_damage_in_last_segment(uint64_t *rng)
{
	struct rec recs[7];
	struct segment_read sr;
	struct env *env;
	uint8_t *content;
	size_t n = 7, size, k;
	const char *path = "/u/last.log";

	if (env_fault_new(&env) < 0 || env_dir_create(env, "/u") < 0)
		tap_bail("env");
	for (k = 0; k < n; k++) {
		recs[k].n = 20 + tap_rand(rng) % 60;
		recs[k].seed = tap_rand(rng);
	}
	/* Synced at record 3: record 4 carries the synced field. */
	size = make_segment(env, "/u", recs, n, 3, &content);
	for (k = 0; k < n; k++) {
		uint8_t save = content[recs[k].pos.offset +
		    LOG_RECORD_HEADER_SIZE + 5];
		bool synced = k <= 3;

		/* Zeros in the middle of record k's payload. */
		memset(content + recs[k].pos.offset + LOG_RECORD_HEADER_SIZE +
		    5, 0, 1);
		if (save == 0)
			content[recs[k].pos.offset + LOG_RECORD_HEADER_SIZE +
			    5] = 0x5a;
		put_file(env, path, content, size);
		read_segment_as(env, path, recs, n, false, &sr);
		if (synced)
			ok(sr.rc == BT_ECHECKSUM && sr.records == k &&
			    !sr.wrong, "last segment: damage in synced record "
			    "%zu is corruption (%s)", k, sr.detail);
		else
			ok(sr.rc == BT_DONE && sr.records == k && !sr.wrong &&
			    sr.dropped == size - recs[k].pos.offset,
			    "last segment: damage in unsynced record %zu is "
			    "torn there (%zu records, %" PRIu64 " bytes "
			    "dropped)", k, sr.records, sr.dropped);
		/* (The last record of any segment can read as torn; replay
		 * treats a tail dropped from a sealed one as damage.) */
		read_segment_as(env, path, recs, n, true, &sr);
		ok(sr.records == k && !sr.wrong && (k + 1 < n ?
		    sr.rc == BT_ECHECKSUM : sr.rc == BT_DONE && sr.dropped > 0),
		    "sealed segment: damage in record %zu is corruption", k);
		content[recs[k].pos.offset + LOG_RECORD_HEADER_SIZE + 5] =
		    save;
	}
	put_file(env, path, content, size);
	read_segment_as(env, path, recs, n, false, &sr);
	ok(sr.rc == BT_DONE && sr.records == n && !sr.wrong,
	    "last segment: undamaged, every record reads");
	free(content);
	env_free(env);
}

/* Rewrite a segment header's version (and its crc). */
static void
set_version(uint8_t *header, uint32_t version)
{
	put_fixed32(header + 8, version);
	put_fixed32(header + 12, crc32c_mask(crc32c_value(header, 12)));
}

/* A segment of a few records, cut at every byte offset: replay returns
 * exactly the records wholly before the cut. */
static void
test_torn_every_offset(uint64_t *rng)
{
	struct rec recs[9];
	struct segment_read sr;
	struct env *env;
	uint8_t *content;
	size_t n = 9, size, cut, k, bad = 0, end, z;
	const char *path = "/c/cut.log";
	bool zero_tail;

	if (env_fault_new(&env) < 0 || env_dir_create(env, "/c") < 0)
		tap_bail("env");
	for (k = 0; k < n; k++) {
		recs[k].n = k == 4 ? 300 : 1 + tap_rand(rng) % 100;
		recs[k].seed = tap_rand(rng);
	}
	size = make_segment(env, "/c", recs, n, SIZE_MAX, &content);
	for (cut = 0; cut <= size; cut++) {
		put_file(env, path, content, cut);
		read_segment(env, path, recs, n, &sr);
		for (k = 0, end = LOG_SEGMENT_HEADER_SIZE; k < n; k++) {
			if (recs[k].pos.offset + LOG_RECORD_HEADER_SIZE +
			    recs[k].n > cut)
				break;
			end = recs[k].pos.offset + LOG_RECORD_HEADER_SIZE +
			    recs[k].n;
		}
		if (cut < LOG_SEGMENT_HEADER_SIZE)
			end = 0;
		/* Zeros from a record boundary on are a version 3 segment's
		 * clean end (reserved space), even where they begin the
		 * next record's header (seed 1086268611 cuts after a 0x00). */
		zero_tail = end >= LOG_SEGMENT_HEADER_SIZE;
		for (z = end; zero_tail && z < cut; z++)
			zero_tail = content[z] == 0;
		if (sr.rc != BT_DONE || sr.wrong || sr.records != k ||
		    sr.dropped != (zero_tail ? 0 : cut - end)) {
			if (bad++ == 0)
				diag("cut at %zu: rc %d, %zu records (want %zu), "
				    "dropped %" PRIu64 " (want %zu) %s", cut,
				    sr.rc, sr.records, k, sr.dropped,
				    zero_tail ? 0 : cut - end, sr.detail);
		}
	}
	is_int(bad, 0, "torn: a cut at each of %zu offsets yields exactly the "
	    "records before it, and drops the rest", size + 1);

	/* Zero-filled tails, clean or starting inside the last record. */
	{
		static const size_t zeros[] = { 1, 7, 8, 9, 100, 70000 };
		uint8_t *buf;
		size_t i, last = recs[n - 1].pos.offset, mid;

		if ((buf = calloc(size + 70000 + 400, 1)) == NULL)
			tap_bail("calloc");
		bad = 0;
		for (i = 0; i < sizeof(zeros) / sizeof(zeros[0]); i++) {
			memcpy(buf, content, size);
			memset(buf + size, 0, zeros[i]);
			put_file(env, path, buf, size + zeros[i]);
			read_segment(env, path, recs, n, &sr);
			if (sr.rc != BT_DONE || sr.wrong || sr.records != n ||
			    sr.dropped != 0)
				bad++;
		}
		is_int(bad, 0, "zero tail of a version 3 segment: all records, "
		    "the zeros its reserved end (nothing dropped)");
		bad = 0;
		for (i = 0; i < sizeof(zeros) / sizeof(zeros[0]); i++) {
			memcpy(buf, content, size);
			set_version(buf, 2);
			memset(buf + size, 0, zeros[i]);
			put_file(env, path, buf, size + zeros[i]);
			read_segment(env, path, recs, n, &sr);
			if (sr.rc != BT_DONE || sr.wrong || sr.records != n ||
			    sr.dropped != zeros[i])
				bad++;
		}
		is_int(bad, 0, "zero tail of a version 2 segment: all records, "
		    "the zeros dropped as a torn tail");
		mid = last + LOG_RECORD_HEADER_SIZE + recs[n - 1].n / 2;
		memset(buf + mid, 0, size + 50 - mid);
		put_file(env, path, buf, size + 50);
		read_segment(env, path, recs, n, &sr);
		ok(sr.rc == BT_DONE && !sr.wrong && sr.records == n - 1 &&
		    sr.dropped == size + 50 - last,
		    "zero tail from inside the last record drops that record");
		/* Zeros inside a middle record are damage, not a tail. */
		memcpy(buf, content, size);
		mid = recs[2].pos.offset + LOG_RECORD_HEADER_SIZE;
		memset(buf + mid, 0, recs[2].n);
		put_file(env, path, buf, size);
		read_segment(env, path, recs, n, &sr);
		ok(sr.rc == BT_ECHECKSUM && sr.records == 2 && !sr.wrong,
		    "zeros inside a middle record are a checksum error: %s",
		    sr.detail);
		/* A segment cut inside its header, or all zeros, is torn. */
		memset(buf, 0, 64);
		put_file(env, path, buf, 64);
		read_segment(env, path, recs, n, &sr);
		ok(sr.rc == BT_DONE && sr.records == 0 && sr.dropped == 64,
		    "an all-zero segment is a torn tail");
		memcpy(buf, "not a log segment", 17);
		put_file(env, path, buf, 17);
		read_segment(env, path, recs, n, &sr);
		is_int(sr.rc, BT_ECORRUPT, "a file that is not a segment is "
		    "damage at offset 0, BT_ECORRUPT");
		free(buf);
	}
	free(content);
	env_free(env);
}

/* A new fault env holding /x, and in it a one-segment log of n records
 * of 1 to 40 random bytes, read back into *content. */
static size_t
small_segment(struct env **envp, uint64_t *rng, struct rec *recs, size_t n,
    uint8_t **content)
{
	if (env_fault_new(envp) < 0 || env_dir_create(*envp, "/x") < 0)
		tap_bail("env");
	for (size_t k = 0; k < n; k++) {
		recs[k].n = 1 + tap_rand(rng) % 40;
		recs[k].seed = tap_rand(rng);
	}
	return make_segment(*envp, "/x", recs, n, SIZE_MAX, content);
}

/*
 * Flip every byte of a small log, one at a time: a damaged record is never
 * returned; damage before the last record is an error naming the file and
 * the record's offset; damage in the last one may also read as a torn tail.
 */
static void
test_flip_every_byte(uint64_t *rng)
{
	struct rec recs[6];
	struct segment_read sr;
	struct env *env;
	uint8_t *content, mask;
	size_t n = 6, size, o, k, m, wrong = 0, undetected = 0, detail_bad = 0,
	    flips = 0;
	const char *path = "/x/flip.log";
	char want[64];

	size = small_segment(&env, rng, recs, n, &content);
	for (o = 0; o < size; o++) {
		for (m = 0; m < (small ? 1u : 3u); m++) {
			mask = m == 0 ? 0x01 : m == 1 ? 0x80 :
			    (uint8_t)(1 + tap_rand(rng) % 255);
			put_file(env, path, content, size);
			if (env_fault_flip_byte(env, path, o, mask) < 0)
				tap_bail("flip");
			flips++;
			read_segment(env, path, recs, n, &sr);
			for (k = 0; k + 1 < n && o >= recs[k + 1].pos.offset;
			    k++)
				;
			if (o < LOG_SEGMENT_HEADER_SIZE) {
				if ((sr.rc != BT_ECORRUPT && sr.rc != BT_ECHECKSUM) ||
				    sr.records != 0)
					undetected++;
				snprintf(want, sizeof(want), "offset 0");
			} else {
				snprintf(want, sizeof(want), "offset %" PRIu64,
				    recs[k].pos.offset);
				if (sr.wrong || sr.records != k)
					wrong++;
				else if (sr.rc == BT_DONE && k + 1 < n)
					undetected++;
				else if (sr.rc == BT_DONE && sr.dropped == 0)
					undetected++;
				else if (sr.rc != BT_DONE &&
				    sr.rc != BT_ECHECKSUM &&
				    sr.rc != BT_ECORRUPT)
					undetected++;
			}
			if (sr.rc < 0 && (strstr(sr.detail, path) == NULL ||
			    strstr(sr.detail, want) == NULL)) {
				if (detail_bad++ == 0)
					diag("flip at %zu: detail \"%s\" lacks "
					    "\"%s\"", o, sr.detail, want);
			}
		}
	}
	is_int(wrong, 0, "flip: no damaged record is ever returned "
	    "(%zu flips over %zu bytes)", flips, size);
	is_int(undetected, 0, "flip: damage before the last record is always "
	    "BT_ECHECKSUM/BT_ECORRUPT (also in the header)");
	is_int(detail_bad, 0, "flip: every error names the file and the "
	    "damaged record's offset");
	free(content);
	env_free(env);
}

/* Record i of test_sync_counts(): its number, then 8 + i % 50 bytes. */
static struct slice
sc_record(uint8_t *buf, uint32_t i)
{
	memset(buf, 0, 64);
	memcpy(buf, &i, sizeof(i));
	return slice_make(buf, 8 + i % 50);
}

/*
 * The writer has one appender (the server's write queue batches for it):
 * one append_many() is one write and at most one sync whatever its record
 * count, unsynced appends cost no sync, log_writer_sync() syncs once and
 * only when something is unsynced, and replay has every record once, in
 * order.
 */
static void
test_sync_counts(struct env *env, const char *dir, const char *label,
    uint32_t n)
{
	struct log_writer_stats st;
	struct log_writer *w;
	struct log_reader *r;
	struct slice *recs, s;
	uint8_t (*bufs)[64];
	uint32_t i, next = 0, got;
	uint64_t *segs;
	size_t count;
	int bad = 0, rc;
	char path[512];

	if ((recs = calloc(n, sizeof(*recs))) == NULL ||
	    (bufs = calloc(n, sizeof(*bufs))) == NULL)
		tap_bail("calloc");
	if (log_writer_open(env, dir, 1, NULL, &w) < 0)
		tap_bail("log_writer_open");
	for (i = 0; i < n; i++)
		recs[i] = sc_record(bufs[i], i);
	is_int(log_writer_append_many(w, recs, n, true, NULL), 0,
	    "%s: %u synced records in one append", label, n);
	log_writer_get_stats(w, &st);
	ok(st.records == n && st.batches == 1 && st.syncs == 1,
	    "%s: they take one write and one sync (%" PRIu64 " records, %"
	    PRIu64 " batches, %" PRIu64 " syncs)", label, st.records,
	    st.batches, st.syncs);
	for (i = 0; i < n; i++)
		if (log_writer_append(w, sc_record(bufs[0], n + i), false,
		    NULL) < 0)
			bad++;
	log_writer_get_stats(w, &st);
	ok(bad == 0 && st.batches == 1 + n && st.syncs == 1,
	    "%s: %u unsynced appends: a write each, no sync (%" PRIu64
	    " syncs)", label, n, st.syncs);
	is_int(log_writer_sync(w), 0, "%s: sync", label);
	is_int(log_writer_sync(w), 0, "%s: sync with nothing new", label);
	log_writer_get_stats(w, &st);
	is_int(st.syncs, 2, "%s: one sync for the unsynced appends, none when "
	    "nothing is new", label);
	is_int(log_writer_close(w), 0, "%s: close", label);

	if (log_list_segments(env, dir, &segs, &count) < 0 || count != 1)
		tap_bail("list");
	log_segment_path(path, sizeof(path), dir, segs[0]);
	bt_free(segs);
	if (log_reader_open(env, path, &r) < 0)
		tap_bail("log_reader_open");
	while ((rc = log_reader_next(r, &s, NULL)) == 0) {
		memcpy(&got, s.p, 4);
		if (got != next || s.n != 8 + got % 50)
			bad++;
		next++;
	}
	ok(rc == BT_DONE && log_reader_dropped_bytes(r) == 0 && bad == 0 &&
	    next == 2 * n, "%s: replay has every record once, in order (%u "
	    "records, %d bad)", label, next, bad);
	log_reader_close(r);
	free(bufs);
	free(recs);
}

/*
 * A failed write is returned to its appender and rolled back; the writer
 * carries on and replay shows exactly the records that succeeded.
 */
static void
test_write_failure(uint64_t *rng)
{
	struct log_position before, after;
	struct log_writer *w;
	struct env *env;
	struct replay rp;
	struct rec recs[40], extra;
	uint8_t scratch[4096];
	size_t n = 0, i;
	int rc, other = 0;

	if (env_fault_new(&env) < 0 || env_dir_create(env, "/w") < 0)
		tap_bail("env");
	if (log_writer_open(env, "/w", 1, NULL, &w) < 0)
		tap_bail("log_writer_open");
	for (i = 0; i < 10; i++) {
		recs[n].n = 1 + tap_rand(rng) % 2000;
		recs[n].seed = tap_rand(rng);
		if (append_rec(w, &recs[n], i % 2 == 0, scratch) == 0)
			n++;
		else
			other++;
	}
	env_fault_fail_after(env, ENV_FAULT_APPEND, 1, -ENOSPC, false);
	before = log_writer_position(w);
	extra.n = 100;
	extra.seed = 99;
	rc = append_rec(w, &extra, false, scratch);
	is_int(rc, -ENOSPC, "write failure: the append gets -ENOSPC");
	ok(strstr(bt_error_detail(), "/w/0000000000000001.log") != NULL,
	    "write failure: the detail names the segment: %s",
	    bt_error_detail());
	after = log_writer_position(w);
	ok(before.segment == after.segment && before.offset == after.offset,
	    "write failure: the position did not move");
	for (i = 0; i < 10; i++) {
		recs[n].n = 1 + tap_rand(rng) % 2000;
		recs[n].seed = tap_rand(rng);
		if (append_rec(w, &recs[n], true, scratch) == 0)
			n++;
		else
			other++;
	}
	env_fault_fail_after(env, ENV_FAULT_APPEND, 1, -EIO, true);
	for (i = 0; i < 3; i++)
		if (append_rec(w, &extra, true, scratch) != -EIO)
			other++;
	env_fault_fail_after(env, ENV_FAULT_APPEND, 0, 0, false);
	for (i = 0; i < 10; i++) {
		recs[n].n = 1 + tap_rand(rng) % 2000;
		recs[n].seed = tap_rand(rng);
		if (append_rec(w, &recs[n], false, scratch) == 0)
			n++;
		else
			other++;
	}
	is_int(other, 0, "write failure: the writer carries on after failures");
	is_int(log_writer_close(w), 0, "write failure: close");
	replay_dir(env, "/w", recs, n, true, &rp);
	ok(rp.rc == 0 && !rp.wrong && rp.matched == 30 && rp.offsets_ok &&
	    rp.dropped_last == 0, "write failure: replay shows exactly the 30 "
	    "successful records (%zu, rc %d)", rp.matched, rp.rc);
	env_free(env);
}

/* The fault env's own append failures write nothing; this one writes half
 * of the bytes before failing, as a full disk can. */
static const struct env_ops *partial_base;
static bool partial_armed;

static int
partial_write_at(struct env_file *f, uint64_t offset, const void *p,
    size_t n)
{
	if (!partial_armed)
		return partial_base->file_write_at(f, offset, p, n);
	partial_armed = false;
	partial_base->file_write_at(f, offset, p, n / 2);
	return bt_error_set(-ENOSPC, "%s: partial write", f->path);
}

/*
 * A new fault env holding dir, with its file_write_at replaced by
 * write_at (ops: room for the changed table; *base: the fault env's own),
 * and a writer in dir.
 */
static struct log_writer *
writer_with_write_at(struct env **envp, const char *dir,
    int (*write_at)(struct env_file *, uint64_t, const void *, size_t),
    struct env_ops *ops, const struct env_ops **base)
{
	struct log_writer *w;

	if (env_fault_new(envp) < 0 || env_dir_create(*envp, dir) < 0)
		tap_bail("env");
	*base = (*envp)->ops;
	*ops = *(*envp)->ops;
	ops->file_write_at = write_at;
	(*envp)->ops = ops;
	if (log_writer_open(*envp, dir, 1, NULL, &w) < 0)
		tap_bail("log_writer_open");
	return w;
}

/* A write that fails half done is cut off, and the log stays readable. */
static void
test_partial_write(uint64_t *rng)
{
	struct env_ops ops;
	struct log_writer *w;
	struct env *env;
	struct replay rp;
	struct rec recs[21], extra;
	uint8_t scratch[4096];
	size_t n = 0, i;
	int other = 0;

	w = writer_with_write_at(&env, "/p", partial_write_at, &ops,
	    &partial_base);
	for (i = 0; i < 20; i++) {
		if (i == 10) {
			partial_armed = true;
			extra.n = 3000;
			extra.seed = 5;
			is_int(append_rec(w, &extra, true, scratch), -ENOSPC,
			    "partial write: the append fails");
		}
		recs[n].n = 1 + tap_rand(rng) % 2000;
		recs[n].seed = tap_rand(rng);
		if (append_rec(w, &recs[n], i % 3 == 0, scratch) == 0)
			n++;
		else
			other++;
	}
	is_int(other, 0, "partial write: the writer carries on");
	is_int(log_writer_close(w), 0, "partial write: close");
	replay_dir(env, "/p", recs, n, true, &rp);
	ok(rp.rc == 0 && !rp.wrong && rp.matched == 20 && rp.offsets_ok &&
	    rp.dropped_last == 0, "partial write: the half-written record was "
	    "cut off; replay shows exactly the 20 others (%zu, rc %d)",
	    rp.matched, rp.rc);
	env->ops = partial_base;
	env_free(env);
}

/* Bytes written (file_write_at) past the last record, and in all. */
static const struct env_ops *zero_base;
static uint64_t zero_written_end, zero_written;

static int
zero_write_at(struct env_file *f, uint64_t offset, const void *p, size_t n)
{
	if (offset + n > zero_written_end)
		zero_written_end = offset + n;
	zero_written += n;
	return zero_base->file_write_at(f, offset, p, n);
}

/*
 * A writer whose appends sync writes zeros ahead of its records (so that
 * their syncs find the space written, not merely reserved), once per
 * stretch of them: never for appends that do not sync, never twice over
 * the same bytes.  The zeros read as the segment's end, and a closed
 * segment is cut back to its records.
 */
static void
test_zero_ahead(void)
{
	struct env_ops ops;
	struct log_writer *w;
	struct log_position end;
	struct env *env;
	struct replay rp;
	struct rec recs[40];
	uint8_t scratch[512];
	uint64_t size = 0, before;
	size_t i, n = 0;
	bool unsynced_only = true, once = true;

	w = writer_with_write_at(&env, "/z", zero_write_at, &ops, &zero_base);
	for (i = 0; i < 20; i++, n++) {
		recs[n].n = 100 + i;
		recs[n].seed = n;
		if (append_rec(w, &recs[n], false, scratch) < 0)
			tap_bail("append");
		if (zero_written_end != log_writer_position(w).offset)
			unsynced_only = false;
	}
	ok(unsynced_only, "zero ahead: appends that do not sync write their "
	    "records and nothing after them");
	recs[n].n = 300;
	recs[n].seed = n;
	if (append_rec(w, &recs[n++], true, scratch) < 0)
		tap_bail("append");
	end = log_writer_position(w);
	ok(zero_written_end >= end.offset + 16 * 1024, "zero ahead: a synced "
	    "append writes zeros ahead of its records (to %" PRIu64 ", records "
	    "to %" PRIu64 ")", zero_written_end, end.offset);
	for (i = 0; i < 19; i++, n++) {
		recs[n].n = 200;
		recs[n].seed = n;
		before = zero_written;
		if (append_rec(w, &recs[n], true, scratch) < 0)
			tap_bail("append");
		if (zero_written - before != LOG_RECORD_HEADER_SIZE + 200 +
		    LOG_RECORD_SYNCED_SIZE)
			once = false;
	}
	ok(once, "zero ahead: the next synced appends, inside the zeros, "
	    "write their records alone");
	replay_dir(env, "/z", recs, n, true, &rp);
	ok(rp.rc == 0 && !rp.wrong && rp.matched == n && rp.offsets_ok &&
	    rp.dropped_last == 0, "zero ahead: replay of the open segment "
	    "reads all %zu records and drops nothing (%zu, rc %d, dropped %"
	    PRIu64 ")", n, rp.matched, rp.rc, rp.dropped_last);
	end = log_writer_position(w);
	is_int(log_writer_close(w), 0, "zero ahead: close");
	env_path_size(env, "/z/0000000000000001.log", &size);
	is_int(size, end.offset, "zero ahead: a closed segment is cut back to "
	    "its records");
	env->ops = zero_base;
	env_free(env);
}

/* A failed sync poisons the writer until it rotates. */
static void
test_sync_failure(void)
{
	struct log_writer *w;
	struct env *env;
	struct replay rp;
	struct rec recs[8];
	uint8_t scratch[256];
	uint64_t next = 0;
	size_t i;
	int rc;

	if (env_fault_new(&env) < 0 || env_dir_create(env, "/s") < 0)
		tap_bail("env");
	if (log_writer_open(env, "/s", 7, NULL, &w) < 0)
		tap_bail("log_writer_open");
	for (i = 0; i < 8; i++) {
		recs[i].n = 10 + i;
		recs[i].seed = i;
	}
	is_int(append_rec(w, &recs[0], true, scratch), 0, "sync failure: a "
	    "first append");
	env_fault_fail_after(env, ENV_FAULT_SYNC, 1, -EIO, false);
	is_int(append_rec(w, &recs[1], true, scratch), -EIO,
	    "sync failure: the synced append gets the sync's error");
	rc = append_rec(w, &recs[7], false, scratch);
	is_int(rc, BT_ECLOSED, "sync failure: later appends are BT_ECLOSED");
	ok(strstr(bt_error_detail(), "rotate") != NULL,
	    "sync failure: the detail says why: %s", bt_error_detail());
	is_int(log_writer_sync(w), BT_ECLOSED,
	    "sync failure: log_writer_sync is BT_ECLOSED");
	is_int(append_rec(w, &recs[7], true, scratch), BT_ECLOSED,
	    "sync failure: still poisoned");
	env_fault_fail_after(env, ENV_FAULT_OPEN, 1, -EMFILE, false);
	is_int(log_writer_rotate(w, &next), -EMFILE,
	    "sync failure: a rotate that cannot create a segment fails");
	is_int(append_rec(w, &recs[7], false, scratch), BT_ECLOSED,
	    "sync failure: and the writer stays poisoned");
	is_int(log_writer_rotate(w, &next), 0, "sync failure: rotate");
	is_int(next, 8, "sync failure: rotate moves to segment 8");
	for (i = 2; i < 5; i++)
		is_int(append_rec(w, &recs[i], i == 4, scratch), 0,
		    "sync failure: append %zu works after the rotate", i);
	is_int(log_writer_rotate(w, &next), 0, "rotate again");
	is_int(next, 9, "rotate moves to segment 9");
	is_int(append_rec(w, &recs[5], true, scratch), 0, "append in 9");
	is_int(log_writer_close(w), 0, "sync failure: close");
	replay_dir(env, "/s", recs, 6, false, &rp);
	ok(rp.rc == 0 && !rp.wrong && rp.matched == 6 && rp.segments == 3,
	    "sync failure: replay shows records 0..5 across "
	    "segments 7..9 (%zu)", rp.matched);
	env_free(env);
}

/*
 * Power loss: records appended with sync survive, later unsynced ones may
 * not, and what survives is a readable prefix.
 */
static void
test_power_loss(uint64_t *rng)
{
	struct log_options opts = { .segment_size = 64 << 10 };
	struct log_writer *w, *w2;
	struct env *env;
	struct replay rp;
	struct rec *recs;
	uint8_t scratch[4096];
	size_t i, n1 = small ? 60 : 200, n2 = 100;
	uint64_t *segs, count, next;
	int failures = 0;

	if ((recs = calloc(n1 + n2, sizeof(*recs))) == NULL)
		tap_bail("calloc");
	if (env_fault_new(&env) < 0 || env_dir_create(env, "/store") < 0 ||
	    env_dir_sync(env, "/") < 0 ||
	    env_dir_create(env, "/store/log") < 0 ||
	    env_dir_sync(env, "/store") < 0)
		tap_bail("env");
	if (log_writer_open(env, "/store/log", 1, &opts, &w) < 0)
		tap_bail("log_writer_open");
	for (i = 0; i < n1 + n2; i++) {
		recs[i].n = 1 + tap_rand(rng) % 4000;
		recs[i].seed = tap_rand(rng);
		if (append_rec(w, &recs[i], i < n1, scratch) < 0)
			failures++;
	}
	is_int(failures, 0, "power loss: all appends succeed");
	env_fault_drop_unsynced(env);
	replay_dir(env, "/store/log", recs, n1 + n2, true, &rp);
	ok(rp.rc == 0 && !rp.wrong && rp.dropped_early == 0,
	    "power loss: the log is readable, every record intact (rc %d)",
	    rp.rc);
	ok(rp.matched >= n1, "power loss: all %zu synced records survive "
	    "(%zu of %zu)", n1, rp.matched, n1 + n2);
	ok(rp.segments > 1, "power loss: across %zu segments", rp.segments);
	log_writer_close(w);

	/* A new writer continues after the surviving segments. */
	if (log_list_segments(env, "/store/log", &segs, &count) < 0)
		tap_bail("list");
	next = segs[count - 1] + 1;
	bt_free(segs);
	is_int(log_writer_open(env, "/store/log", next, &opts, &w2), 0,
	    "power loss: a new writer opens segment %" PRIu64, next);
	log_writer_close(w2);
	free(recs);
	env_free(env);
}

/*
 * max_file_size: a batch that would end a segment past it starts a new
 * segment first, so that no segment passes it (the RADOS object limit),
 * even with segments larger than it; every record replays.
 */
static void
test_max_file_size(uint64_t *rng)
{
	struct log_options opts = { .segment_size = MIB,
	    .max_file_size = 64 << 10 };
	struct log_writer *w;
	struct env *env;
	struct replay rp;
	struct rec *recs;
	uint8_t scratch[4096];
	size_t i, n = small ? 60 : 200;
	uint64_t *segs, count, size, largest = 0;
	char path[64];
	int failures = 0;

	if ((recs = calloc(n, sizeof(*recs))) == NULL)
		tap_bail("calloc");
	if (env_fault_new(&env) < 0 || env_dir_create(env, "/m") < 0 ||
	    env_dir_create(env, "/m/log") < 0)
		tap_bail("env");
	if (log_writer_open(env, "/m/log", 1, &opts, &w) < 0)
		tap_bail("log_writer_open");
	for (i = 0; i < n; i++) {
		recs[i].n = 1 + tap_rand(rng) % 4000;
		recs[i].seed = tap_rand(rng);
		if (append_rec(w, &recs[i], i % 3 == 0, scratch) < 0)
			failures++;
	}
	is_int(failures, 0, "max file size: all appends succeed");
	log_writer_close(w);
	if (log_list_segments(env, "/m/log", &segs, &count) < 0)
		tap_bail("list");
	for (uint64_t k = 0; k < count; k++) {
		snprintf(path, sizeof(path), "/m/log/%016" PRIu64 ".log",
		    segs[k]);
		if (env_path_size(env, path, &size) == 0 && size > largest)
			largest = size;
	}
	bt_free(segs);
	ok(count > 1 && largest <= (64 << 10), "max file size: %" PRIu64
	    " segments, the largest %" PRIu64 " bytes", count, largest);
	replay_dir(env, "/m/log", recs, n, true, &rp);
	ok(rp.rc == 0 && !rp.wrong && rp.matched == n,
	    "max file size: every record replays (%zu of %zu, rc %d)",
	    rp.matched, n, rp.rc);
	free(recs);
	env_free(env);
}

static int
remove_one(const char *path, const struct stat *st, int flag,
    struct FTW *ftw)
{
	return remove(path);
}

/*
 * Flip every byte of every record but the last of a sealed segment, one at
 * a time, and read on with log_reader_skip_damage(): every other record
 * comes back, in
 * order and at its offset, and the skipped range is exactly the damaged
 * record (from its offset to the next record's).
 */
static void
test_skip_damage(uint64_t *rng)
{
	struct rec recs[6];
	struct env *env;
	uint8_t *content, scratch[4096];
	size_t n = 6, size, o, k, bad = 0, flips = 0;
	const char *path = "/x/skip.log";
	int rc;

	size = small_segment(&env, rng, recs, n, &content);
	for (o = 0; o < recs[n - 1].pos.offset; o++) {
		struct log_reader *r;
		struct slice s;
		uint64_t off, skip_off = 0, skip_n = 0;
		size_t got = 0, skips = 0;
		bool wrong = false;

		/* k: the damaged record, n for the header (none lost). */
		uint64_t bad_off = 0, bad_end = recs[0].pos.offset;

		for (k = 0; k + 1 < n && o >= recs[k + 1].pos.offset; k++)
			;
		if (o < LOG_SEGMENT_HEADER_SIZE)
			k = n;
		else {
			bad_off = recs[k].pos.offset;
			bad_end = recs[k + 1].pos.offset;
		}
		put_file(env, path, content, size);
		if (env_fault_flip_byte(env, path, o, 0x10) < 0)
			tap_bail("flip");
		flips++;
		if (log_reader_open(env, path, &r) < 0)
			tap_bail("open");
		/* Synced whole, as every segment but the last is: damage
		 * is never a power loss's there. */
		log_reader_set_sealed(r);
		for (;;) {
			while ((rc = log_reader_next(r, &s, &off)) == 0) {
				if (got == k)
					got++;	/* the damaged one is gone */
				if (got >= n || !rec_equal(&recs[got], s,
				    scratch) || off != recs[got].pos.offset)
					wrong = true;
				got++;
			}
			if (rc != BT_ECHECKSUM && rc != BT_ECORRUPT)
				break;
			if (log_reader_skip_damage(r, &skip_off,
			    &skip_n) < 0)
				tap_bail("skip");
			skips++;
		}
		log_reader_close(r);
		if (wrong || rc != BT_DONE || got != n ||
		    skips != 1 || skip_off != bad_off ||
		    skip_off + skip_n != bad_end) {
			if (bad++ == 0)
				diag("flip at %zu (record %zu): rc %d, %zu "
				    "records, %zu skips, skipped %" PRIu64
				    "+%" PRIu64, o, k, rc, got, skips,
				    skip_off, skip_n);
		}
	}
	is_int(bad, 0, "skip: after damage to any byte of the header or of a "
	    "record but the last, every other record is read and exactly the "
	    "damaged range is skipped (%zu flips)", flips);
	free(content);
	env_free(env);
}

int
main(void)
{
	char tmp[] = "/tmp/test_log.XXXXXX", dir[64];
	uint64_t rng = tap_seed();
	struct env *env;

	small = getenv("TEST_SMALL") != NULL && *getenv("TEST_SMALL") != '\0';

	if (env_fault_new(&env) < 0 || env_dir_create(env, "/log") < 0)
		tap_bail("env_fault_new");
	test_round_trip(env, "/log", "fault", &rng);
	env_free(env);
	if (mkdtemp(tmp) == NULL || env_posix_new(&env) < 0)
		tap_bail("mkdtemp");
	snprintf(dir, sizeof(dir), "%s/rt", tmp);
	if (env_dir_create(env, dir) < 0)
		tap_bail("mkdir");
	test_round_trip(env, dir, "posix", &rng);
	snprintf(dir, sizeof(dir), "%s/gc", tmp);
	if (env_dir_create(env, dir) < 0)
		tap_bail("mkdir");
	test_sync_counts(env, dir, "posix", small ? 50 : 250);
	snprintf(dir, sizeof(dir), "%s/rs", tmp);
	if (env_dir_create(env, dir) < 0)
		tap_bail("mkdir");
	test_reserved_space(env, dir);
	env_free(env);
	nftw(tmp, remove_one, 16, FTW_DEPTH | FTW_PHYS);

	test_list_segments();
	test_append_many();
	test_torn_every_offset(&rng);
	test_flip_every_byte(&rng);
	test_damage_in_last_segment(&rng);
	test_skip_damage(&rng);

	if (env_fault_new(&env) < 0 || env_dir_create(env, "/g") < 0)
		tap_bail("env_fault_new");
	test_sync_counts(env, "/g", "fault", small ? 300 : 2000);
	env_free(env);

	test_write_failure(&rng);
	test_partial_write(&rng);
	test_zero_ahead();
	test_reserve_headroom();
	test_sync_failure();
	test_power_loss(&rng);
	test_max_file_size(&rng);
	return tap_done();
}
