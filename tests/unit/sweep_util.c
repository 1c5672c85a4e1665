/*
 * sweep_util.c - the fault sweeps' machinery (sweep_util.h): the data
 * set, the operations, the reference run and one point of a sweep.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/tabletfs.h"
#include "util/env.h"
#include "api_util.h"
#include "sweep_util.h"

#define EVERY_POINT	600	/* every n up to here is tried... */
#define MAX_POINT	10000000	/* ...then fewer, up to here */
#define CLOCK_US	1000000000ull	/* the store's clock, fixed */
#define BIG		(8u << 10)	/* a value that takes its own arena
					   block: a mutation can fail half
					   way through its apply */
#define POINT_SECONDS	60	/* one point, at most (a hang fails) */

bool sweep_small;
static char sweep_big_a[BIG + 1], sweep_big_b[BIG + 1];
/* An empty store, made once: each point copies it rather than create a
 * catalog (most of a point's time under valgrind). */
static struct env *sweep_template;

/* ---- Copying a store between in-memory envs ---- */

struct copy {
	struct env *from, *to;
	const char *dir;
};

static int copy_tree(struct env *from, struct env *to, const char *dir);

static int
copy_nothing(void *arg, const char *name)
{
	(void)arg;
	(void)name;
	return 0;
}

/* Copy one entry of c->dir, a file (synced) or a directory. */
static int
copy_entry(void *arg, const char *name)
{
	struct copy *c = arg;
	struct env_file *in = NULL, *out = NULL;
	char path[512], buf[4096];
	uint64_t off = 0;
	size_t got;
	int rc;

	snprintf(path, sizeof(path), "%s/%s", c->dir, name);
	if ((rc = env_dir_list(c->from, path, copy_nothing, NULL)) == 0)
		return copy_tree(c->from, c->to, path);
	if (rc != -ENOTDIR)
		return rc;
	if ((rc = env_file_open(c->from, path, ENV_READ, &in)) < 0 ||
	    (rc = env_file_open(c->to, path, ENV_CREATE, &out)) < 0)
		goto out;
	do {
		if ((rc = env_file_read_at(in, off, buf, sizeof(buf),
		    &got)) < 0 || (got > 0 &&
		    (rc = env_file_append(out, buf, got)) < 0))
			goto out;
		off += got;
	} while (got > 0);
	rc = env_file_sync(out);
out:
	env_file_close(in);
	env_file_close(out);
	return rc;
}

/* Copy directory dir and everything under it, synced. */
static int
copy_tree(struct env *from, struct env *to, const char *dir)
{
	struct copy c = { from, to, dir };
	int rc;

	if ((rc = env_dir_create(to, dir)) < 0 ||
	    (rc = env_dir_list(from, dir, copy_entry, &c)) < 0)
		return rc;
	return env_dir_sync(to, dir);
}

/* A fresh store in a fresh env, a copy of the template, opened (every
 * mutation synced with sync_always). */
static void
tstore_copy(struct tstore *t, bool sync_always)
{
	int rc;

	memset(t, 0, sizeof(*t));
	snprintf(t->path, sizeof(t->path), "/store");
	if (env_fault_new(&t->env) != 0)
		tap_bail("env_fault_new failed");
	t->opts.env = t->env;
	t->opts.sync_always = sync_always;
	if (copy_tree(sweep_template, t->env, t->path) != 0 ||
	    env_dir_sync(t->env, "/") != 0)
		tap_bail("cannot copy the template store");
	if ((rc = bt_store_open(t->path, &t->opts, &t->s)) != 0) {
		diag("bt_store_open: %s (%s)", bt_strerror(rc),
		    bt_error_detail());
		tap_bail("cannot open a copy of the template store");
	}
}

/* ---- The data set ---- */

static const char *const sweep_fams[] = { "a", "b=maxversions=3", NULL };

static void
dataset_put(struct bt_store *s, const char *row, const char *fam, const char *q,
    int64_t ts)
{
	char v[64];

	snprintf(v, sizeof(v), "%s.%s:%s@%lld", row, fam, q, (long long)ts);
	must(put_str(s, "t", row, fam, q, ts, v));
}

/*
 * A fresh store with the data set (synced with sync_always): two SSTables
 * and the memtable, puts with old timestamps written after newer ones,
 * deletes of a column, a version and a row masking flushed cells, and
 * versions that the family "b" (maxversions=3) condemns.
 */
static void
sweep_setup(struct tstore *t, bool sync_always)
{
	struct bt_store *s;

	tstore_copy(t, sync_always);
	env_fault_set_clock(t->env, CLOCK_US);
	s = t->s;
	must(make_table(s, "t", sweep_fams));
	dataset_put(s, "r1", "a", "x", 100);
	dataset_put(s, "r1", "a", "x", 200);
	for (int64_t ts = 100; ts <= 400; ts += 100)
		dataset_put(s, "r1", "b", "y", ts);
	dataset_put(s, "r2", "a", "x", 100);
	dataset_put(s, "r2", "a", "z", 100);
	dataset_put(s, "r2", "b", "y", 100);
	dataset_put(s, "r3", "a", "x", 100);
	dataset_put(s, "r3", "a", "x", 200);
	dataset_put(s, "r4", "a", "x", 100);
	dataset_put(s, "r4", "b", "y", 100);
	must(bt_store_flush(s));
	dataset_put(s, "r1", "a", "x", 300);
	must(del_str(s, "t", "r2", BT_DELETE_COLUMN, "a", "z", 0));
	dataset_put(s, "r5", "a", "x", 100);
	dataset_put(s, "r5", "b", "w", 100);
	dataset_put(s, "r3", "a", "x", 150);
	must(bt_store_flush(s));
	dataset_put(s, "r1", "b", "y", 500);
	must(del_str(s, "t", "r4", BT_DELETE_ROW, NULL, NULL, 0));
	dataset_put(s, "r2", "a", "x", 200);
	dataset_put(s, "r2", "b", "y", 200);
	must(del_str(s, "t", "r3", BT_DELETE_VERSION, "a", "x", 100));
	must(put_str(s, "t", "r6", "a", "n", 100, "7\n"));
	must(put_str(s, "t", "r6", "a", "s", 100, "ab"));
}

/*
 * Everything the store shows: for each table of the catalog, its schema,
 * its rows and (with tablets) its tablets' ranges.  The caller frees it.
 */
static char *
state_text(struct bt_store *s, bool tablets)
{
	struct sbuf b = { 0 };
	char **names = NULL;
	size_t count = 0;
	int rc;

	if ((rc = bt_table_list(s, &names, &count)) != 0) {
		sbuf_printf(&b, "TABLES ERROR(%d %s)\n", rc, bt_strerror(rc));
		return sbuf_take(&b);
	}
	for (size_t i = 0; i < count; i++) {
		struct bt_tablet_info *info = NULL;
		size_t n = 0;
		char *text = NULL;

		sbuf_printf(&b, "== %s\n", names[i]);
		if ((rc = bt_table_describe(s, names[i], &text)) != 0)
			sbuf_printf(&b, "DESCRIBE ERROR(%d %s)\n", rc,
			    bt_strerror(rc));
		else
			sbuf_add(&b, text, strlen(text));
		free(text);
		text = scan_text(s, names[i], NULL);
		sbuf_add(&b, text, strlen(text));
		free(text);
		if (!tablets)
			continue;
		if ((rc = bt_table_tablets(s, names[i], &info, &n)) != 0) {
			sbuf_printf(&b, "TABLETS ERROR(%d %s)\n", rc,
			    bt_strerror(rc));
			continue;
		}
		for (size_t j = 0; j < n; j++) {
			sbuf_add(&b, "tablet [", 8);
			sbuf_escaped(&b, info[j].start.data,
			    info[j].start.size);
			sbuf_add(&b, ", ", 2);
			sbuf_escaped(&b, info[j].end.data, info[j].end.size);
			sbuf_add(&b, ")\n", 2);
		}
		bt_tablets_free(info);
	}
	bt_names_free(names);
	return sbuf_take(&b);
}

/* ---- The operations ---- */


static int
op_mutate_row(struct tstore *t, char **out)
{
	struct bt_mutation m[] = {
		{ .kind = BT_PUT, .family = "a", .qualifier = bts("big"),
		    .ts = 600, .value = btb(sweep_big_a, BIG) },
		{ .kind = BT_PUT, .family = "a", .qualifier = bts("m"),
		    .ts = BT_TS_SERVER, .value = bts("new m") },
		{ .kind = BT_DELETE_COLUMN, .family = "a",
		    .qualifier = bts("x") },
		{ .kind = BT_PUT, .family = "b", .qualifier = bts("y"),
		    .ts = 600, .value = bts("new y") },
		{ .kind = BT_PUT, .family = "b", .qualifier = bts("big"),
		    .ts = 600, .value = btb(sweep_big_b, BIG) },
	};

	(void)out;
	return bt_mutate_row(t->s, "t", bts("r1"), m, 5, NULL, NULL);
}

static int
op_check_and_mutate(struct tstore *t, char **out)
{
	struct bt_bytes want = bts("r1.a:x@300");
	struct bt_mutation m[] = {
		{ .kind = BT_PUT, .family = "a", .qualifier = bts("c"),
		    .ts = BT_TS_SERVER, .value = bts("checked") },
		{ .kind = BT_DELETE_COLUMN, .family = "b",
		    .qualifier = bts("y") },
		{ .kind = BT_PUT, .family = "b", .qualifier = bts("big"),
		    .ts = 700, .value = btb(sweep_big_b, BIG) },
	};
	bool applied = false;
	int rc;

	(void)out;
	rc = bt_check_and_mutate(t->s, "t", bts("r1"), "a", bts("x"), &want,
	    m, 3, NULL, &applied);
	if (rc == 0 && !applied)
		return 1000;	/* not a code the call may return */
	return rc;
}

static int
op_increment(struct tstore *t, char **out)
{
	int64_t result = 0;
	int rc;

	(void)out;
	rc = bt_increment(t->s, "t", bts("r6"), "a", bts("n"), 5, NULL,
	    &result, NULL);
	if (rc == 0 && result != 12)
		return 1001;
	return rc;
}

static int
op_append(struct tstore *t, char **out)
{
	(void)out;
	return bt_append(t->s, "t", bts("r6"), "a", bts("s"), bts("cd"),
	    NULL, NULL);
}

static int
op_move_version(struct tstore *t, char **out)
{
	(void)out;
	return bt_move_version(t->s, "t", bts("r1"), "a", bts("x"), 200,
	    "b", bts("moved"), 250, NULL, NULL);
}

/* r1's a:x, with versions in both SSTables and the memtable, to b:moved. */
static int
op_move_column(struct tstore *t, char **out)
{
	struct bt_column src = { "a", true, bts("x") };
	struct bt_column dst = { "b", true, bts("moved") };

	(void)out;
	return bt_move_column(t->s, "t", bts("r1"), &src, &dst, NULL);
}

/* Read r1, whose cells are in both SSTables and the memtable. */
static int
op_read_row(struct tstore *t, char **out)
{
	struct sbuf b = { 0 };
	struct bt_row *r = NULL;
	int rc;

	rc = bt_read_row(t->s, "t", bts("r1"), NULL, &r);
	if (rc == 0) {
		render_cells(&b, r, false);
		bt_row_free(r);
	}
	*out = sbuf_take(&b);
	return rc;
}

/* A whole scan: the rows it returned in *out, then the error if one. */
static int
op_scan(struct tstore *t, char **out)
{
	struct sbuf b = { 0 };
	int rc = scan_render(t->s, "t", NULL, true, &b);

	*out = sbuf_take(&b);
	return rc;
}

static int
op_flush(struct tstore *t, char **out)
{
	(void)out;
	return bt_store_flush(t->s);
}

static int
op_compact(struct tstore *t, char **out)
{
	(void)out;
	return bt_store_compact(t->s, "t", true);
}

static int
op_split(struct tstore *t, char **out)
{
	(void)out;
	return bt_table_split(t->s, "t", bts("r3"));
}

static int
op_table_create(struct tstore *t, char **out)
{
	struct bt_family_spec f[] = {
		{ "c", NULL, "maxversions=2" },
		{ "d", "g2", NULL },
	};
	struct bt_bytes split = bts("m");

	(void)out;
	return bt_table_create(t->s, "u", f, 2, &split, 1, 0);
}

static int
op_family_create(struct tstore *t, char **out)
{
	struct bt_family_spec f = { "c", "g2", "maxage=7d" };

	(void)out;
	return bt_family_create(t->s, "t", &f);
}

/* "b" keeps 3 versions; 1 hides some of the data set from reads. */
static int
op_family_set_gc(struct tstore *t, char **out)
{
	(void)out;
	return bt_family_set_gc(t->s, "t", "b", "maxversions=1");
}

/* Its data leaves reads at once. */
static int
op_family_delete(struct tstore *t, char **out)
{
	(void)out;
	return bt_family_delete(t->s, "t", "b");
}

static int
op_table_delete(struct tstore *t, char **out)
{
	(void)out;
	return bt_table_delete(t->s, "t");
}

static int
op_close(struct tstore *t, char **out)
{
	int rc;

	(void)out;
	rc = bt_store_close(t->s);
	t->s = NULL;
	return rc;
}

/*
 * Close the store with every file create failing, so that its flush
 * fails and its commit log stays for the next open to replay.
 */
static void
close_keeping_log(struct tstore *t)
{
	env_fault_fail_after(t->env, ENV_FAULT_OPEN, 1, -EIO, true);
	if (bt_store_close(t->s) == 0)
		tap_bail("a close flushed with no file to write to");
	t->s = NULL;
	env_fault_fail_after(t->env, ENV_FAULT_OPEN, 0, 0, false);
}

/* Open the store: replay its log, flush what it replayed. */
static int
op_open(struct tstore *t, char **out)
{
	int rc;

	(void)out;
	if ((rc = bt_store_open(t->path, &t->opts, &t->s)) != 0)
		t->s = NULL;
	return rc;
}

const struct op sweep_ops[] = {
	{ .name = "mutate_row", .run = op_mutate_row, .write = true },
	{ .name = "check_and_mutate", .run = op_check_and_mutate,
	    .write = true },
	{ .name = "increment", .run = op_increment, .write = true },
	{ .name = "append", .run = op_append, .write = true },
	{ .name = "move_version", .run = op_move_version, .write = true },
	{ .name = "move_column", .run = op_move_column, .write = true },
	{ .name = "read_row", .run = op_read_row, .read = true },
	{ .name = "scan", .run = op_scan, .read = true },
	{ .name = "store_flush", .run = op_flush },
	{ .name = "store_compact", .run = op_compact },
	{ .name = "table_split", .run = op_split, .tablets = true,
	    .whole = true },
	{ .name = "table_create", .run = op_table_create,
	    .whole = true },
	{ .name = "family_create", .run = op_family_create,
	    .whole = true },
	{ .name = "family_set_gc", .run = op_family_set_gc,
	    .whole = true },
	{ .name = "family_delete", .run = op_family_delete,
	    .whole = true },
	{ .name = "table_delete", .run = op_table_delete },
	{ .name = "store_close", .run = op_close },
	{ .name = "store_open", .run = op_open,
	    .prepare = close_keeping_log },
};
const size_t sweep_op_count = sizeof(sweep_ops) / sizeof(sweep_ops[0]);

/* ---- The sweep ---- */


void
reference_make(const struct op *op, struct reference *ref)
{
	struct tstore t;
	char *out = NULL, *again;
	int rc;

	sweep_setup(&t, false);
	ref->before = state_text(t.s, op->tablets);
	ref->rows_before = scan_text(t.s, "t", NULL);
	if (op->prepare != NULL)
		op->prepare(&t);
	rc = op->run(&t, &out);
	if (rc != 0) {
		diag("%s: %s (%s)", op->name, bt_strerror(rc),
		    bt_error_detail());
		tap_bail("the operation fails with nothing failing");
	}
	if (t.s == NULL && bt_store_open(t.path, &t.opts, &t.s) != 0)
		tap_bail("cannot open the store again");
	ref->after = state_text(t.s, op->tablets);
	ref->rows_after = scan_text(t.s, "t", NULL);
	ref->read = out != NULL ? out : strdup("");
	tstore_reopen(&t);
	again = state_text(t.s, op->tablets);
	if (strcmp(again, ref->after) != 0) {
		diag_text("before the reopen", ref->after);
		diag_text("after it", again);
		tap_bail("a reopen changes what the store shows");
	}
	free(again);
	tstore_destroy(&t);
}

void
reference_release(struct reference *ref)
{
	free(ref->before);
	free(ref->after);
	free(ref->rows_before);
	free(ref->rows_after);
	free(ref->read);
}

/* Counts of one operation's sweep. */
struct tally {
	int points;		/* n at which an allocation failed */
	int failed;		/* ... and the call returned an error */
	int applied;		/* ... an error, and the effect was there
				   after the reopen */
	int broken;		/* ... and the store said it was broken */
	int violations;
	bool finished;		/* a point ran with nothing failing */
};

/* Whether state is before (0), after (1) or neither (-1). */
static int
state_which(const struct reference *ref, const char *state)
{
	if (strcmp(state, ref->after) == 0)
		return 1;	/* first: an op without effect is both */
	if (strcmp(state, ref->before) == 0)
		return 0;
	return -1;
}

#define violation(tl, ...) do {						\
	(tl)->violations++;						\
	diag(__VA_ARGS__);						\
} while (0)

/* Whether a read's text is the reference's, or a prefix of whole rows of
 * it followed by a failure (rc < 0). */
static bool
read_is_sound(const struct reference *ref, const char *got, int rc)
{
	size_t n = strlen(got);

	if (rc == 0)
		return strcmp(got, ref->read) == 0;
	return n == 0 || (strncmp(got, ref->read, n) == 0 &&
	    (ref->read[n] == '\0' || ref->read[n] == '[') &&
	    got[n - 1] == '\n');
}

/*
 * Whether the running store reports itself broken: it refuses a write
 * (with nothing failing).  The write deletes a row that holds nothing,
 * so that whether it was taken or refused, and whether a refused one is
 * in the log (a broken store refuses writes after their log append) and
 * comes back at the reopen, the store shows the same.
 */
static bool
store_broken(struct tstore *t)
{
	return del_str(t->s, "t", "probe", BT_DELETE_ROW, NULL, NULL, 0) != 0;
}

/*
 * After family_create, in a store that is not broken: what the catalog
 * says is what the tables do, a family that the schema shows takes a
 * write.
 */
static void
probe_family(struct tstore *t, struct tally *tl, const char *where)
{
	char *schema = NULL;
	int rc;

	if (bt_table_describe(t->s, "t", &schema) != 0)
		return;
	if (strstr(schema, "\nc group=") != NULL ||
	    strncmp(schema, "c group=", 8) == 0) {
		rc = put_str(t->s, "t", "probe", "c", "q", 1, "v");
		if (rc != 0)
			violation(tl, "%s: the schema shows family c but a "
			    "write to it fails (%s)", where,
			    bt_error_detail());
		else if (del_str(t->s, "t", "probe", BT_DELETE_ROW, NULL,
		    NULL, 0) != 0)
			tap_bail("cannot delete the probe row");
	}
	free(schema);
}

/* ---- The sweep ---- */


/* One point: the operation with the nth call of the fault's kind failing. */
static void
sweep_point(const struct op *op, const struct sweep_fault *fault,
    const struct reference *ref, long n, struct tally *tl)
{
	struct sweep_fault f = *fault;
	struct tstore t;
	char *out = NULL, *state, where[160], detail[200] = "";
	bool tripped, bad, broken = false;
	int rc, which, orc;

	if (f.name != NULL)
		snprintf(where, sizeof(where), "%s (%s), %s %ld", op->name,
		    f.name, f.what, n);
	else
		snprintf(where, sizeof(where), "%s, %s %ld", op->name, f.what,
		    n);
	alarm(sweep_small ? 4 * POINT_SECONDS : POINT_SECONDS);
	sweep_setup(&t, f.sync_always || f.crash);
	if (op->prepare != NULL)
		op->prepare(&t);
	f.arm(&t, &f, n);
	rc = op->run(&t, &out);
	if (rc < 0)
		snprintf(detail, sizeof(detail), "%s", bt_error_detail());
	tripped = f.disarm(&t, &f);
	if (!tripped && rc == 0)
		tl->finished = true;
	if (tripped)
		tl->points++;
	if (rc < 0)
		tl->failed++;
	if (rc > 0)
		violation(tl, "%s: returned %d, not 0 or an error", where, rc);
	if (rc < 0 && !tripped)
		violation(tl, "%s: failed (%s: %s) with no %s failing", where,
		    bt_strerror(rc), bt_error_detail(), f.what);

	/* 1. A read returns the data or an error. */
	if (op->read && !read_is_sound(ref, out, rc)) {
		violation(tl, "%s: the read returned %d and wrong data",
		    where, rc);
		diag_text("got", out);
		diag_text("want", ref->read);
	}
	free(out);

	/* 2. The running store reads back the data set; or, broken, at
	 * least the acknowledged rows.  (Not before a power loss: that
	 * comes right after the operation.) */
	if (t.s != NULL && !f.crash) {
		state = state_text(t.s, op->tablets);
		which = state_which(ref, state);
		bad = which < 0 || (rc == 0 && which != 1) ||
		    (rc < 0 && op->write && which != 0);
		if ((bad || rc < 0) && op->run != op_table_delete)
			broken = store_broken(&t);
		if (bad && broken) {
			char *rows = scan_text(t.s, "t", NULL);

			if (rc == 0 ? strcmp(rows, ref->rows_after) != 0 :
			    strcmp(rows, ref->rows_before) != 0 &&
			    (op->write || strcmp(rows, ref->rows_after) != 0)) {
				violation(tl, "%s: returned %d (%s), and the "
				    "broken store reads wrong rows", where, rc,
				    detail);
				diag_text("got", rows);
				diag_text("want", rc == 0 ? ref->rows_after :
				    ref->rows_before);
			}
			free(rows);
		} else if (bad) {
			violation(tl, "%s: returned %d (%s), and the running "
			    "store shows %s", where, rc, rc < 0 ? detail : "ok",
			    which < 0 ? "neither the data set nor the "
			    "operation's result" : which ? "the operation "
			    "done" : "the operation not done");
			diag_text("got", state);
			diag_text("want", rc == 0 || which > 0 ? ref->after :
			    ref->before);
		}
		free(state);
		if (op->run == op_family_create && !broken)
			probe_family(&t, tl, where);
		if (broken)
			tl->broken++;
	}

	/* 3. After a reopen (or a power loss: the data set was synced):
	 * everything acknowledged, the effect whole or absent; and the
	 * store takes a write.  (The close may fail: a broken store says
	 * so.) */
	if (f.crash) {
		orc = tstore_crash_reopen(&t);
	} else {
		if (t.s != NULL)
			(void)bt_store_close(t.s);
		t.s = NULL;
		if ((orc = bt_store_open(t.path, &t.opts, &t.s)) != 0)
			t.s = NULL;
	}
	if (orc != 0) {
		violation(tl, "%s: the store does not open again%s: %s (%s)",
		    where, f.crash ? " after a power loss" : "",
		    bt_strerror(orc), bt_error_detail());
		tstore_destroy(&t);
		alarm(0);
		return;
	}
	state = state_text(t.s, op->tablets);
	which = state_which(ref, state);
	if (which < 0 || (rc == 0 && which != 1)) {
		violation(tl, "%s: returned %d (%s), and after a %s the store "
		    "shows %s", where, rc, rc < 0 ? detail : "ok",
		    f.crash ? "power loss" : "reopen",
		    which < 0 ? "neither the data set nor the operation's "
		    "result" : "the operation not done");
		diag_text("got", state);
		diag_text("want", rc == 0 || which > 0 ? ref->after :
		    ref->before);
	} else if (rc < 0 && which == 1 && strcmp(ref->before,
	    ref->after) != 0) {
		tl->applied++;
	}
	free(state);
	if (op->run != op_table_delete) {
		orc = put_str(t.s, "t", "zz", "a", "x", 1, "after");
		if (orc != 0)
			violation(tl, "%s: after a %s a write fails: %s (%s)",
			    where, f.crash ? "power loss" : "reopen",
			    bt_strerror(orc), bt_error_detail());
	}
	tstore_destroy(&t);
	alarm(0);
}

/* The next n to try: every one up to EVERY_POINT and then steps growing
 * by a sixteenth (an open of the store makes thousands of allocations,
 * most of them SQLite's as it reads the catalog's schema); under
 * TEST_SMALL the first five and then steps growing by half. */
static long
next_point(long n)
{
	if (n < (sweep_small ? 5 : EVERY_POINT))
		return n + 1;
	return n + n / (sweep_small ? 2 : 16);
}

/* The sweep of one operation under one kind of fault: n = 1, 2, ...
 * until the operation runs with no fault hit. */
void
sweep(const struct op *op, const struct sweep_fault *f,
    const struct reference *ref)
{
	struct tally tl = { 0 };
	char name[160];
	long n, last = 0;

	snprintf(name, sizeof(name), "%s%s%s", op->name,
	    f->name != NULL ? ", " : "", f->name != NULL ? f->name : "");
	for (n = 1; n <= MAX_POINT && !tl.finished; n = next_point(n))
		sweep_point(op, f, ref, last = n, &tl);
	if ((op->whole || f->never_breaks) && tl.broken > 0)
		violation(&tl, "%s: %d failures left the store refusing "
		    "writes until a reopen", name, tl.broken);
	if (!ok(tl.finished && tl.violations == 0, "%s: %d failure points "
	    "(%d failed calls; %d broke the store until a reopen, %d were "
	    "done whole after it), each all-or-nothing, nothing "
	    "acknowledged lost", name, tl.points, tl.failed, tl.broken,
	    tl.applied) && !tl.finished)
		diag("%s: still failing at %s %ld", name, f->what, last);
}

/* One point alone, to debug it. */
void
sweep_one(const struct op *op, const struct sweep_fault *f,
    const struct reference *ref, long n)
{
	struct tally tl = { 0 };

	sweep_point(op, f, ref, n, &tl);
	ok(tl.violations == 0, "%s%s%s, %s %ld alone", op->name,
	    f->name != NULL ? ", " : "", f->name != NULL ? f->name : "",
	    f->what, n);
}

/*
 * Make the empty template store and the big values; before any sweep.
 * small: TEST_SMALL was set.
 */
void
sweep_init(bool small)
{
	sweep_small = small;
	if (env_fault_new(&sweep_template) != 0 ||
	    env_dir_create(sweep_template, "/store") != 0 ||
	    bt_store_create("/store", &(struct bt_options){
	    .env = sweep_template }) != 0)
		tap_bail("cannot create the template store");
	memset(sweep_big_a, 'A', BIG);
	memset(sweep_big_b, 'B', BIG);
}

void
sweep_release(void)
{
	env_free(sweep_template);
	sweep_template = NULL;
}
