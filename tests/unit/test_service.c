/*
 * test_service.c - the tablet server's request dispatch (service.h):
 * every method of tabletfs.proto, packed as a client would, run through
 * service_handle() on a store in an in-memory env, and its reply
 * compared with what the C API says on the same store; scanners (batches,
 * concurrency, expiry, limits); and bad input of every kind, after which
 * the store still answers as before.  A write's stamp_floor: the server
 * stamps above it, a MUTATE_ROWS reply carries the server's last stamp,
 * and a floor more than an hour ahead is refused, raising nothing.
 */
#include <pthread.h>
#include <time.h>

#include "api_util.h"
#include "rpc/tabletfs.pb-c.h"
#include "tabletd/service.h"
#include "util/alloc.h"

#define M(name)	TABLETFS__METHOD__##name

static struct tstore tst;
static struct service *svc;

/* ---- Calling ---- */

/* Pack req (NULL: no bytes) and run it on service s; the reply (or the
 * error line) in *reply. */
static int
call_on(struct service *s, uint32_t method, const ProtobufCMessage *req,
    struct buf *reply)
{
	size_t n = req != NULL ? protobuf_c_message_get_packed_size(req) : 0;
	uint8_t *p = xmalloc(n + 1);
	int rc;

	if (req != NULL)
		protobuf_c_message_pack(req, p);
	buf_clear(reply);
	rc = service_handle(s, method, slice_make(p, n), reply);
	free(p);
	return rc;
}

/* Whether an error reply is one printable line. */
static bool
error_line_ok(const struct buf *reply)
{
	if (reply->n == 0)
		return false;
	for (size_t i = 0; i < reply->n; i++)
		if (reply->p[i] < 0x20 || reply->p[i] >= 0x7f)
			return false;
	return true;
}

/* Run req on svc expecting rc; on an error, check the message line. */
static int
call_rc(uint32_t method, const ProtobufCMessage *req)
{
	struct buf reply;
	int rc;

	buf_init(&reply);
	rc = call_on(svc, method, req, &reply);
	if (rc < 0 && !error_line_ok(&reply))
		diag("method %u: rc %d with a bad message line", method, rc);
	else if (rc < 0)
		diag("method %u: %d %.*s", method, rc, (int)reply.n, reply.p);
	if (rc == 0 && reply.n != 0)
		rc = 1000;	/* an Empty reply with bytes */
	buf_release(&reply);
	return rc;
}

/* Run req and unpack its reply as d: the message (free with
 * protobuf_c_message_free_unpacked(m, NULL)), or NULL with *rc. */
static void *
call_msg(uint32_t method, const ProtobufCMessage *req,
    const ProtobufCMessageDescriptor *d, int *rcp)
{
	ProtobufCMessage *m = NULL;
	struct buf reply;
	int rc;

	buf_init(&reply);
	if ((rc = call_on(svc, method, req, &reply)) == 0) {
		m = protobuf_c_message_unpack(d, NULL, reply.n, reply.p);
		if (m == NULL)
			rc = 1001;
	} else {
		diag("method %u: %d %.*s", method, rc, (int)reply.n,
		    reply.p);
	}
	buf_release(&reply);
	if (rcp != NULL)
		*rcp = rc;
	return m;
}

static void
msg_free(void *m)
{
	if (m != NULL)
		protobuf_c_message_free_unpacked(m, NULL);
}

static ProtobufCBinaryData
pbs(const char *s)
{
	ProtobufCBinaryData b = { strlen(s), (uint8_t *)s };

	return b;
}

/* A proto Row rendered as render_cells() renders a bt_row. */
static void
render_pb_row(struct sbuf *b, const Tabletfs__Row *r, bool keys_only)
{
	struct bt_cell *cells = xmalloc((r->n_cells + 1) * sizeof(*cells));
	struct bt_row row = { { r->key.data, r->key.len }, r->n_cells, cells };

	for (size_t i = 0; i < r->n_cells; i++) {
		const Tabletfs__Cell *c = r->cells[i];

		cells[i].family = c->family;
		cells[i].qualifier = btb(c->qualifier.data, c->qualifier.len);
		cells[i].ts = c->ts;
		cells[i].value = btb(c->value.data, c->value.len);
		cells[i].value_size = c->value_size;
	}
	render_cells(b, &row, keys_only);
	free(cells);
}

/* The newest value of a webtable column, escaped, or "NOTFOUND". */
static char *
newest_val(const char *row, const char *fam, const char *qual)
{
	struct sbuf b = { 0 };
	char *val = NULL;
	size_t len = 0;
	int64_t t;
	int rc;

	rc = get_newest(tst.s, "webtable", bts(row), fam, bts(qual), &val,
	    &len, &t);
	if (rc == 0)
		sbuf_escaped(&b, val, len);
	else
		sbuf_printf(&b, rc == BT_NOTFOUND ? "NOTFOUND" : "ERROR");
	free(val);
	return sbuf_take(&b);
}

/* ---- Requests ---- */

static Tabletfs__Mutation *
mut(Tabletfs__Mutation *m, int kind, const char *fam, const char *qual,
    int64_t ts, const char *val)
{
	tabletfs__mutation__init(m);
	m->has_kind = kind >= 0;
	m->kind = kind >= 0 ? kind : 0;
	m->family = (char *)fam;
	if (qual != NULL) {
		m->has_qualifier = true;
		m->qualifier = pbs(qual);
	}
	m->has_ts = ts != -2;	/* -2: absent */
	m->ts = ts;
	if (val != NULL) {
		m->has_value = true;
		m->value = pbs(val);
	}
	return m;
}

/* MUTATE_ROW of n mutations (and a condition, or NULL); the reply. */
static int
mutate(const char *table, const char *row, Tabletfs__Mutation *muts,
    size_t n, Tabletfs__Condition *cond, Tabletfs__MutateRowReply **out)
{
	Tabletfs__MutateRowRequest r = TABLETFS__MUTATE_ROW_REQUEST__INIT;
	Tabletfs__Mutation *ptrs[16];
	Tabletfs__MutateRowReply *rep;
	int rc;

	for (size_t i = 0; i < n; i++)
		ptrs[i] = &muts[i];
	r.table = (char *)table;
	r.has_row = row != NULL;
	if (row != NULL)
		r.row = pbs(row);
	r.n_mutations = n;
	r.mutations = ptrs;
	r.condition = cond;
	rep = call_msg(M(MUTATE_ROW), &r.base,
	    &tabletfs__mutate_row_reply__descriptor, &rc);
	if (out != NULL)
		*out = rep;
	else
		msg_free(rep);
	return rc;
}

static int
put1(const char *table, const char *row, const char *fam, const char *qual,
    int64_t ts, const char *val)
{
	Tabletfs__Mutation m;

	return mutate(table, row, mut(&m, 1, fam, qual, ts, val), 1, NULL,
	    NULL);
}

/*
 * MUTATE_ROWS of one mutation per entry, rows[i] (NULL: no row) each
 * taking muts[i]; the reply, or NULL with *rcp.
 */
static Tabletfs__MutateRowsReply *
mutate_rows(const char *table, const char *const *rows,
    Tabletfs__Mutation *muts, size_t n, int *rcp)
{
	Tabletfs__MutateRowsRequest r = TABLETFS__MUTATE_ROWS_REQUEST__INIT;
	Tabletfs__MutateRowsEntry es[8], *eps[8];
	Tabletfs__Mutation *mps[8];

	for (size_t i = 0; i < n; i++) {
		tabletfs__mutate_rows_entry__init(&es[i]);
		es[i].has_row = rows[i] != NULL;
		if (rows[i] != NULL)
			es[i].row = pbs(rows[i]);
		mps[i] = &muts[i];
		es[i].n_mutations = 1;
		es[i].mutations = &mps[i];
		eps[i] = &es[i];
	}
	r.table = (char *)table;
	r.n_entries = n;
	r.entries = eps;
	return call_msg(M(MUTATE_ROWS), &r.base,
	    &tabletfs__mutate_rows_reply__descriptor, rcp);
}

/* ---- Stamps across servers ---- */

/* MUTATE_ROW of one server-stamped put to webtable with stamp_floor
 * floor (0: none): the reply's stamp, or 0 with *rc. */
static int64_t
put_floored(const char *row, int64_t floor, int *rc)
{
	Tabletfs__MutateRowRequest r = TABLETFS__MUTATE_ROW_REQUEST__INIT;
	Tabletfs__Mutation m, *mp = &m;
	Tabletfs__MutateRowReply *rep;
	int64_t stamp = 0;

	r.table = (char *)"webtable";
	r.has_row = true;
	r.row = pbs(row);
	r.n_mutations = 1;
	r.mutations = &mp;
	mut(&m, 1, "anchor", "f", -2, "v");
	r.has_stamp_floor = floor != 0;
	r.stamp_floor = floor;
	rep = call_msg(M(MUTATE_ROW), &r.base,
	    &tabletfs__mutate_row_reply__descriptor, rc);
	if (rep != NULL)
		stamp = rep->stamp;
	msg_free(rep);
	return stamp;
}

static void
test_stamp_floor(void)
{
	static const char *const rows[] = { "sf3" };
	Tabletfs__MutateRowsReply *rep;
	Tabletfs__Mutation m;
	int64_t now, floor, stamp, before;
	int rc;

	before = put_floored("sf0", 0, &rc);
	ok(rc == 0 && before > 0, "a server-stamped put (%" PRId64 ")",
	    before);
	now = before;
	floor = now + 10 * 1000000;	/* a server 10 s ahead stamped it */
	stamp = put_floored("sf1", floor, &rc);
	ok(rc == 0 && stamp > floor, "a put whose client saw a stamp 10 s "
	    "ahead is stamped above it (%" PRId64 " > %" PRId64 ")", stamp,
	    floor);
	before = stamp;
	stamp = put_floored("sf2", 0, &rc);
	ok(rc == 0 && stamp > before, "and so is the next, from any client");
	mut(&m, 1, "anchor", "f", -2, "v");
	rep = mutate_rows("webtable", rows, &m, 1, &rc);
	ok(rc == 0 && rep != NULL && rep->has_last_stamp &&
	    rep->last_stamp > stamp, "a MUTATE_ROWS reply carries the "
	    "server's last stamp, above the rows' (%" PRId64 ")",
	    rep != NULL ? rep->last_stamp : 0);
	before = rep != NULL ? rep->last_stamp : stamp;
	msg_free(rep);

	floor = before + (int64_t)7200 * 1000000;
	stamp = put_floored("sf4", floor, &rc);
	is_int(rc, -ERANGE, "a floor two hours ahead of the server's clock: "
	    "-ERANGE");
	ok(strstr(bt_error_detail(), "ahead of this server's clock") != NULL,
	    "its detail says why (%s)", bt_error_detail());
	is_text(read_text_str(tst.s, "webtable", "sf4", NULL), "NOTFOUND",
	    "and nothing is written");
	stamp = put_floored("sf5", 0, &rc);
	ok(rc == 0 && stamp > before && stamp < floor - (int64_t)3600 *
	    1000000, "the refused floor raised nothing (%" PRId64 ")", stamp);
	before = stamp;

	/* A put of the newest version, above a version a client set far
	 * ahead: its stamp is one above that, the server's last stamp is
	 * not (a client's floor comes from the latter). */
	{
		Tabletfs__ReadModifyWriteRequest r =
		    TABLETFS__READ_MODIFY_WRITE_REQUEST__INIT;
		Tabletfs__ReadModifyWriteReply *rr;

		is_int(put1("webtable", "sf6", "anchor", "f",
		    8000000000000000, "future"), 0, "a version set in the far "
		    "future");
		r.table = (char *)"webtable";
		r.has_row = r.has_qualifier = true;
		r.row = pbs("sf6");
		r.family = (char *)"anchor";
		r.qualifier = pbs("f");
		r.op_case = TABLETFS__READ_MODIFY_WRITE_REQUEST__OP_PUT_NEWEST;
		r.put_newest = pbs("now");
		rr = call_msg(M(READ_MODIFY_WRITE), &r.base,
		    &tabletfs__read_modify_write_reply__descriptor, &rc);
		ok(rc == 0 && rr != NULL && rr->stamp == 8000000000000001,
		    "put_newest above it is stamped one above (%" PRId64 ")",
		    rr != NULL ? rr->stamp : 0);
		ok(rr != NULL && rr->has_last_stamp && rr->last_stamp >
		    before && rr->last_stamp < before + (int64_t)3600 *
		    1000000, "its reply's last stamp is the server's clock "
		    "stamp (%" PRId64 "), which a client may send as its floor",
		    rr != NULL ? rr->last_stamp : 0);
		msg_free(rr);
	}
}

/* ---- Schema ---- */

static void
test_schema(void)
{
	Tabletfs__TableCreateRequest tc = TABLETFS__TABLE_CREATE_REQUEST__INIT;
	Tabletfs__Family f1 = TABLETFS__FAMILY__INIT, f2 = TABLETFS__FAMILY__INIT,
	    f3 = TABLETFS__FAMILY__INIT, *fams[] = { &f1, &f2, &f3 };
	Tabletfs__FamilyRequest fr = TABLETFS__FAMILY_REQUEST__INIT;
	Tabletfs__GroupSetRequest gs = TABLETFS__GROUP_SET_REQUEST__INIT;
	Tabletfs__Group g = TABLETFS__GROUP__INIT;
	Tabletfs__TableRequest tr = TABLETFS__TABLE_REQUEST__INIT;
	Tabletfs__TableListReply *tl;
	Tabletfs__DescribeReply *dr;
	ProtobufCBinaryData splits[] = { pbs("com.m") };
	char *text, *groups, **names;
	size_t count;
	int rc;

	f1.name = "contents";
	f1.gc_policy = "maxversions=3";
	f2.name = "anchor";
	f2.gc_policy = "";		/* "never" */
	f2.group = "";			/* "default" */
	f3.name = "language";	/* keeps old versions: moves land here */
	f3.gc_policy = "maxage=7d and maxversions=2";
	tc.table = "webtable";
	tc.n_families = 3;
	tc.families = fams;
	tc.n_splits = 1;
	tc.splits = splits;
	is_int(call_rc(M(TABLE_CREATE), &tc.base), 0, "TABLE_CREATE webtable");
	is_int(call_rc(M(TABLE_CREATE), &tc.base), -EEXIST,
	    "TABLE_CREATE again: -EEXIST");
	tc.table = "scan";
	tc.n_families = 1;
	tc.n_splits = 0;
	f1.name = "f";
	f1.gc_policy = NULL;
	is_int(call_rc(M(TABLE_CREATE), &tc.base), 0, "TABLE_CREATE scan");
	f1.name = "contents";
	f1.gc_policy = "maxversions=3";

	tl = call_msg(M(TABLE_LIST), NULL,
	    &tabletfs__table_list_reply__descriptor, &rc);
	must(bt_table_list(tst.s, &names, &count));
	ok(rc == 0 && tl->n_names == count && count == 2 &&
	    strcmp(tl->names[0], names[0]) == 0 &&
	    strcmp(tl->names[1], names[1]) == 0,
	    "TABLE_LIST: the names bt_table_list gives, sorted");
	bt_names_free(names);
	msg_free(tl);

	tr.table = "webtable";
	dr = call_msg(M(TABLE_DESCRIBE), &tr.base,
	    &tabletfs__describe_reply__descriptor, &rc);
	must(bt_table_describe(tst.s, "webtable", &text));
	must(bt_table_describe_groups(tst.s, "webtable", &groups));
	ok(rc == 0, "TABLE_DESCRIBE");
	if (rc == 0) {
		is_str(dr->families, text, "DescribeReply.families");
		is_str(dr->groups, groups, "DescribeReply.groups");
	}
	ok(strstr(text, "contents group=default gc=maxversions=3") != NULL &&
	    strstr(text, "anchor group=default gc=never") != NULL,
	    "the families were made with their policies");
	free(text);
	free(groups);
	msg_free(dr);

	fr.table = "webtable";
	fr.family = &f1;
	f1.name = "extra";
	f1.gc_policy = NULL;
	is_int(call_rc(M(FAMILY_CREATE), &fr.base), 0, "FAMILY_CREATE");
	f1.gc_policy = "maxversions=1";
	is_int(call_rc(M(FAMILY_SET_GC), &fr.base), 0, "FAMILY_SET_GC");
	must(bt_table_describe(tst.s, "webtable", &text));
	ok(strstr(text, "extra group=default gc=maxversions=1") != NULL,
	    "FAMILY_SET_GC set the policy");
	free(text);
	f1.gc_policy = "maxversions=banana";
	is_int(call_rc(M(FAMILY_SET_GC), &fr.base), -EINVAL,
	    "FAMILY_SET_GC of a bad policy: -EINVAL from bt_");
	f1.gc_policy = NULL;
	is_int(call_rc(M(FAMILY_SET_GC), &fr.base), -EINVAL,
	    "FAMILY_SET_GC without gc_policy: -EINVAL");
	is_int(call_rc(M(FAMILY_DELETE), &fr.base), 0, "FAMILY_DELETE");
	must(bt_table_describe(tst.s, "webtable", &text));
	ok(strstr(text, "extra") == NULL, "the family is gone");
	free(text);
	is_int(call_rc(M(FAMILY_DELETE), &fr.base), -ENOENT,
	    "FAMILY_DELETE again: -ENOENT");
	fr.family = NULL;
	is_int(call_rc(M(FAMILY_CREATE), &fr.base), -EINVAL,
	    "FamilyRequest without family: -EINVAL");
	fr.family = &f1;
	f1.name = NULL;
	is_int(call_rc(M(FAMILY_CREATE), &fr.base), -EINVAL,
	    "Family without name: -EINVAL");
	f1.name = "x";
	fr.table = NULL;
	is_int(call_rc(M(FAMILY_CREATE), &fr.base), -EINVAL,
	    "FamilyRequest without table: -EINVAL");

	gs.table = "webtable";
	gs.group = &g;
	g.name = "default";
	g.has_compress = true;
	g.compress = 0;
	is_int(call_rc(M(GROUP_SET), &gs.base), 0, "GROUP_SET");
	must(bt_table_describe_groups(tst.s, "webtable", &groups));
	ok(strstr(groups, "compression=none") != NULL &&
	    strstr(groups, "bloom=on") != NULL,
	    "GROUP_SET changed compression, left bloom: %s", groups);
	free(groups);
	g.name = NULL;
	is_int(call_rc(M(GROUP_SET), &gs.base), -EINVAL,
	    "GROUP_SET without a group name: -EINVAL");

	tc.table = NULL;
	is_int(call_rc(M(TABLE_CREATE), &tc.base), -EINVAL,
	    "TABLE_CREATE without table: -EINVAL");
	tr.table = "nosuch";
	is_int(call_rc(M(TABLE_DELETE), &tr.base), -ENOENT,
	    "TABLE_DELETE of an absent table: -ENOENT");
	tr.table = NULL;
	is_int(call_rc(M(TABLE_DELETE), &tr.base), -EINVAL,
	    "TABLE_DELETE without table: -EINVAL");
	is_int(call_rc(M(TABLE_DESCRIBE), &tr.base), -EINVAL,
	    "TABLE_DESCRIBE without table: -EINVAL");
}

/* ---- Rows ---- */

static const char *const WEBTABLE_ROW =
    "anchor:cnnsi.com@9=CNN\n"
    "anchor:my.look.ca@8=CNN.com\n"
    "contents:@6=<html>6\n"
    "contents:@5=<html>5\n"
    "contents:@3=<html>3\n";

/* MUTATE_ROWS: a status per entry, bad entries failing alone. */
static void
test_mutate_rows(void)
{
	static const char *const rows[] = { "mr1", "mr2", "mr3", NULL, "mr4" };
	Tabletfs__MutateRowsReply *rep;
	Tabletfs__Mutation m[5];
	int rc;

	mut(&m[0], 1, "anchor", "a", 1, "one");
	mut(&m[1], 1, "nosuch", "a", 1, "two");
	mut(&m[2], -1, "anchor", "a", 1, "three");	/* no kind */
	mut(&m[3], 1, "anchor", "a", 1, "four");
	mut(&m[4], 1, "anchor", "a", -2, "five");	/* server stamp */
	rep = mutate_rows("webtable", rows, m, 5, &rc);
	ok(rc == 0 && rep != NULL && rep->n_status == 5,
	    "MUTATE_ROWS replies a status per entry");
	if (rep != NULL && rep->n_status == 5) {
		ok(rep->status[0] == 0 && rep->status[4] == 0,
		    "the good entries are applied");
		is_int(rep->status[1], -ENOENT, "an unknown family: -ENOENT");
		is_int(rep->status[2], -EINVAL, "a mutation without kind: "
		    "-EINVAL");
		is_int(rep->status[3], -EINVAL, "an entry without row: "
		    "-EINVAL");
		ok(rep->detail != NULL && strstr(rep->detail, "nosuch") !=
		    NULL, "the detail names the first failure (%s)",
		    rep->detail != NULL ? rep->detail : "none");
	}
	msg_free(rep);
	is_text(read_text_str(tst.s, "webtable", "mr1", NULL),
	    "anchor:a@1=one\n", "entry 1 is written");
	is_text(read_text_str(tst.s, "webtable", "mr2", NULL), "NOTFOUND",
	    "entry 2 is not");
	ok(get_newest(tst.s, "webtable", bts("mr4"), "anchor", bts("a"),
	    NULL, NULL, NULL) == 0, "the server-stamped entry is written");

	rep = mutate_rows("nosuch", rows, m, 1, &rc);
	ok(rc == 0 && rep != NULL && rep->n_status == 1 &&
	    rep->status[0] == -ENOENT, "an absent table: -ENOENT for each "
	    "entry");
	msg_free(rep);
	rep = mutate_rows(NULL, rows, m, 1, &rc);
	ok(rep == NULL && rc == -EINVAL, "no table: -EINVAL");
	rep = mutate_rows("webtable", rows, m, 0, &rc);
	ok(rep == NULL && rc == -EINVAL, "no entries: -EINVAL");
	for (int i = 1; i <= 4; i++)
		must(bt_mutate_row(tst.s, "webtable", bts(rows[i == 4 ? 4 :
		    i - 1]), &(struct bt_mutation){ .kind = BT_DELETE_ROW },
		    1, NULL, NULL));
}

static void
test_mutate(void)
{
	Tabletfs__Mutation m[4];
	Tabletfs__MutateRowReply *rep;
	Tabletfs__Condition c = TABLETFS__CONDITION__INIT;
	char *val;
	size_t len;
	int64_t ts;
	int rc;

	mut(&m[0], 1, "contents", "", 3, "<html>3");
	mut(&m[1], 1, "contents", NULL, 5, "<html>5");	/* qualifier absent */
	mut(&m[2], 1, "anchor", "cnnsi.com", 9, "CNN");
	mut(&m[3], 1, "anchor", "my.look.ca", 8, "CNN.com");
	rc = mutate("webtable", "com.cnn.www", m, 4, NULL, &rep);
	ok(rc == 0 && rep->applied, "MUTATE_ROW of client-stamped puts");
	msg_free(rep);
	is_int(put1("webtable", "com.cnn.www", "contents", "", 6, "<html>6"),
	    0, "MUTATE_ROW one put");
	is_text(read_text_str(tst.s, "webtable", "com.cnn.www", NULL),
	    WEBTABLE_ROW, "the C API reads what MUTATE_ROW wrote");

	mut(&m[0], 1, "language", "", -2, "EN");	/* ts absent: server */
	rc = mutate("webtable", "com.cnn.www", m, 1, NULL, &rep);
	ok(rc == 0 && rep->stamp > 0, "a server-stamped put replies its stamp");
	must(get_newest(tst.s, "webtable", bts("com.cnn.www"), "language",
	    bts(""), &val, &len, &ts));
	ok(rc == 0 && ts == rep->stamp && strcmp(val, "EN") == 0,
	    "the stamp is the version's timestamp");
	free(val);
	msg_free(rep);
	mut(&m[0], 5, NULL, NULL, -2, NULL);	/* DELETE_ROW, no family */
	is_int(mutate("webtable", "gone", m, 1, NULL, NULL), 0,
	    "DELETE_ROW without family");

	/* Check-and-mutate. */
	c.family = "contents";
	c.has_qualifier = true;
	c.qualifier = pbs("");
	c.has_expected = true;
	c.expected = pbs("<html>5");
	mut(&m[0], 1, "anchor", "x", 10, "X");
	rc = mutate("webtable", "com.cnn.www", m, 1, &c, &rep);
	ok(rc == 0 && !rep->applied, "a failed condition: not applied");
	msg_free(rep);
	is_text(newest_text(tst.s, "webtable", "com.cnn.www", "anchor", "x"),
	    "NOTFOUND", "and nothing written");
	c.expected = pbs("<html>6");
	rc = mutate("webtable", "com.cnn.www", m, 1, &c, &rep);
	ok(rc == 0 && rep->applied, "a holding condition: applied");
	msg_free(rep);
	is_text(newest_text(tst.s, "webtable", "com.cnn.www", "anchor", "x"),
	    "X@10", "and written");
	c.has_expected = false;
	c.qualifier = pbs("nothing");
	mut(&m[0], 1, "anchor", "y", 10, "Y");
	rc = mutate("webtable", "com.cnn.www", m, 1, &c, &rep);
	ok(rc == 0 && rep->applied, "condition 'absent' on an empty column");
	msg_free(rep);

	c.qualifier = pbs("");
	c.has_expected = true;
	c.has_expected_ts = true;
	c.expected_ts = 5;
	mut(&m[0], 1, "anchor", "z", -1, "Z");
	rc = mutate("webtable", "com.cnn.www", m, 1, &c, &rep);
	ok(rc == 0 && !rep->applied && rep->stamp == 0,
	    "check-version with the wrong ts: not applied");
	msg_free(rep);
	c.expected_ts = 6;
	rc = mutate("webtable", "com.cnn.www", m, 1, &c, &rep);
	ok(rc == 0 && rep->applied && rep->stamp > 0,
	    "check-version with the right ts: applied, with its stamp");
	msg_free(rep);
	c.family = NULL;
	is_int(mutate("webtable", "com.cnn.www", m, 1, &c, NULL), -EINVAL,
	    "a condition without family: -EINVAL");

	mut(&m[0], 0, "contents", "", 1, "v");
	is_int(mutate("webtable", "r", m, 1, NULL, NULL), -EINVAL,
	    "a Mutation of KIND_NONE: -EINVAL");
	mut(&m[0], -1, "contents", "", 1, "v");
	is_int(mutate("webtable", "r", m, 1, NULL, NULL), -EINVAL,
	    "a Mutation without kind: -EINVAL");
	mut(&m[0], 77, "contents", "", 1, "v");
	is_int(mutate("webtable", "r", m, 1, NULL, NULL), -EINVAL,
	    "a Mutation of an unknown kind: -EINVAL");
	mut(&m[0], 1, NULL, "", 1, "v");
	is_int(mutate("webtable", "r", m, 1, NULL, NULL), -EINVAL,
	    "a put without family: -EINVAL");
	mut(&m[0], 1, "contents", "", 1, "v");
	is_int(mutate(NULL, "r", m, 1, NULL, NULL), -EINVAL,
	    "MUTATE_ROW without table: -EINVAL");
	is_int(mutate("nosuch", "r", m, 1, NULL, NULL), -ENOENT,
	    "MUTATE_ROW on an absent table: -ENOENT");
	is_int(mutate("webtable", NULL, m, 1, NULL, NULL), -EINVAL,
	    "MUTATE_ROW without row: -EINVAL from bt_");
	is_int(mutate("webtable", "r", m, 0, NULL, NULL), -EINVAL,
	    "MUTATE_ROW without mutations: -EINVAL from bt_");
}

/* READ_MODIFY_WRITE: fill r's table/row/family/qualifier, run it. */
static int
rmw(Tabletfs__ReadModifyWriteRequest *r, const char *fam, const char *qual,
    Tabletfs__ReadModifyWriteReply **out)
{
	Tabletfs__ReadModifyWriteReply *rep;
	int rc;

	r->table = "webtable";
	r->has_row = true;
	r->row = pbs("com.cnn.www");
	r->family = (char *)fam;
	r->has_qualifier = true;
	r->qualifier = pbs(qual);
	rep = call_msg(M(READ_MODIFY_WRITE), &r->base,
	    &tabletfs__read_modify_write_reply__descriptor, &rc);
	if (out != NULL)
		*out = rep;
	else
		msg_free(rep);
	return rc;
}

static void
test_read_modify_write(void)
{
	Tabletfs__ReadModifyWriteRequest r =
	    TABLETFS__READ_MODIFY_WRITE_REQUEST__INIT;
	Tabletfs__MoveVersion mv = TABLETFS__MOVE_VERSION__INIT;
	Tabletfs__ReadModifyWriteReply *rep;
	int rc;

	r.op_case = TABLETFS__READ_MODIFY_WRITE_REQUEST__OP_INCREMENT;
	r.increment = 5;
	rc = rmw(&r, "anchor", "hits", &rep);
	ok(rc == 0 && rep->result == 5 && rep->stamp > 0,
	    "increment of an absent column: 5");
	msg_free(rep);
	r.increment = -7;
	rc = rmw(&r, "anchor", "hits", &rep);
	ok(rc == 0 && rep->result == -2, "increment again: -2");
	msg_free(rep);
	is_text(newest_val("com.cnn.www", "anchor", "hits"), "-2\\x0a",
	    "the C API reads -2\\n");
	is_int(rmw(&r, "contents", "", NULL), -EINVAL,
	    "increment of a non-integer: -EINVAL");

	r.op_case = TABLETFS__READ_MODIFY_WRITE_REQUEST__OP_APPEND;
	r.append = pbs("more");
	is_int(rmw(&r, "anchor", "cnnsi.com", NULL), 0, "append");
	r.op_case = TABLETFS__READ_MODIFY_WRITE_REQUEST__OP_PUT_NEWEST;
	r.put_newest = pbs("newest");
	is_int(rmw(&r, "anchor", "my.look.ca", NULL), 0, "put_newest");
	is_text(newest_val("com.cnn.www", "anchor", "cnnsi.com"), "CNNmore",
	    "append wrote the new newest version");
	is_text(newest_val("com.cnn.www", "anchor", "my.look.ca"), "newest",
	    "put_newest too");

	r.op_case = TABLETFS__READ_MODIFY_WRITE_REQUEST__OP_MOVE_VERSION;
	r.move_version = &mv;
	mv.dst_family = "language";
	mv.has_dst_qualifier = true;
	mv.dst_qualifier = pbs("old");
	mv.has_dst_ts = true;
	mv.dst_ts = 33;
	is_int(rmw(&r, "contents", "", NULL), -EINVAL,
	    "move_version without src_ts: -EINVAL");
	mv.has_src_ts = true;
	mv.src_ts = 4;
	is_int(rmw(&r, "contents", "", NULL), -ENOENT,
	    "move_version of an absent version: -ENOENT");
	mv.src_ts = 3;
	is_int(rmw(&r, "contents", "", NULL), 0, "move_version");
	is_text(newest_text(tst.s, "webtable", "com.cnn.www", "language",
	    "old"), "<html>3@33", "the version moved");
	mv.dst_family = NULL;
	is_int(rmw(&r, "contents", "", NULL), -EINVAL,
	    "move_version without dst_family: -EINVAL");

	r.op_case = TABLETFS__READ_MODIFY_WRITE_REQUEST__OP__NOT_SET;
	is_int(rmw(&r, "anchor", "hits", NULL), -EINVAL,
	    "READ_MODIFY_WRITE without op: -EINVAL");
	r.op_case = TABLETFS__READ_MODIFY_WRITE_REQUEST__OP_INCREMENT;
	is_int(rmw(&r, NULL, "hits", NULL), -EINVAL,
	    "READ_MODIFY_WRITE without family: -EINVAL");
}

static int
move_column(const char *sf, const char *sq, const char *df, const char *dq)
{
	Tabletfs__MoveColumnRequest r = TABLETFS__MOVE_COLUMN_REQUEST__INIT;
	Tabletfs__Column src = TABLETFS__COLUMN__INIT, dst =
	    TABLETFS__COLUMN__INIT;

	r.table = "webtable";
	r.has_row = true;
	r.row = pbs("mv");
	r.src = sf != NULL || sq != NULL ? &src : NULL;
	r.dst = &dst;
	src.family = (char *)sf;
	src.has_qualifier = sq != NULL;
	src.qualifier = pbs(sq != NULL ? sq : "");
	dst.family = (char *)df;
	dst.has_qualifier = dq != NULL;
	dst.qualifier = pbs(dq != NULL ? dq : "");
	return call_rc(M(MOVE_COLUMN), &r.base);
}

static void
test_move_column(void)
{
	must(put_str(tst.s, "webtable", "mv", "anchor", "a", 1, "A1"));
	must(put_str(tst.s, "webtable", "mv", "anchor", "a", 2, "A2"));
	must(put_str(tst.s, "webtable", "mv", "anchor", "b", 1, "B"));
	is_int(move_column("anchor", "a", "anchor", "c"), 0,
	    "MOVE_COLUMN of a column");
	is_text(read_text_str(tst.s, "webtable", "mv", NULL),
	    "anchor:b@1=B\nanchor:c@2=A2\nanchor:c@1=A1\n",
	    "both versions moved");
	is_int(move_column("anchor", NULL, "language", NULL), 0,
	    "MOVE_COLUMN of a family (qualifier absent)");
	is_text(read_text_str(tst.s, "webtable", "mv", NULL),
	    "language:b@1=B\nlanguage:c@2=A2\nlanguage:c@1=A1\n",
	    "the family moved");
	is_int(move_column("anchor", "a", "anchor", "d"), -ENOENT,
	    "MOVE_COLUMN of an empty column: -ENOENT");
	is_int(move_column("language", "b", "language", "c"), -ENOTEMPTY,
	    "MOVE_COLUMN onto a column with versions: -ENOTEMPTY");
	is_int(move_column("language", "b", "anchor", NULL), -EINVAL,
	    "MOVE_COLUMN of a column onto a family: -EINVAL");
	is_int(move_column(NULL, NULL, "anchor", "x"), -EINVAL,
	    "MOVE_COLUMN without src: -EINVAL");
	is_int(move_column(NULL, "b", "anchor", "x"), -EINVAL,
	    "MOVE_COLUMN src without family: -EINVAL");
}

/* READ_ROW of row with options o, compared with bt_read_row's text. */
static void
check_read_row(const char *row, Tabletfs__ReadOptions *o,
    const struct bt_read_options *ro, const char *what)
{
	Tabletfs__ReadRowRequest r = TABLETFS__READ_ROW_REQUEST__INIT;
	Tabletfs__ReadRowReply *rep;
	struct sbuf b = { 0 };
	char *want;
	int rc;

	r.table = "webtable";
	r.has_row = true;
	r.row = pbs(row);
	r.options = o;
	rep = call_msg(M(READ_ROW), &r.base,
	    &tabletfs__read_row_reply__descriptor, &rc);
	if (rc != 0)
		sbuf_printf(&b, "ERROR(%d)", rc);
	else if (!rep->found)
		sbuf_printf(&b, "NOTFOUND");
	else if (rep->row == NULL)
		sbuf_printf(&b, "found without row");
	else
		render_pb_row(&b, rep->row, ro != NULL && ro->keys_only);
	want = read_text_str(tst.s, "webtable", row, ro);
	is_text(sbuf_take(&b), want, "READ_ROW %s: as bt_read_row", what);
	free(want);
	msg_free(rep);
}

static void
test_read_row(void)
{
	Tabletfs__ReadOptions o = TABLETFS__READ_OPTIONS__INIT;
	Tabletfs__Column c1 = TABLETFS__COLUMN__INIT, c2 =
	    TABLETFS__COLUMN__INIT, *cols[] = { &c1, &c2 };
	Tabletfs__ReadRowRequest r = TABLETFS__READ_ROW_REQUEST__INIT;
	struct bt_column bcols[] = {
		{ "contents", false, { "", 0 } },
		{ "anchor", true, { "cnnsi.com", 9 } },
	};
	struct bt_read_options ro = { 0 };
	char *want;

	check_read_row("com.cnn.www", NULL, NULL, "of every cell");
	want = read_text_str(tst.s, "webtable", "com.cnn.www", NULL);
	ok(strstr(want, "contents:@6=<html>6") != NULL, "(the row is there)");
	free(want);
	check_read_row("com.nosuch", NULL, NULL, "of an absent row");

	c1.family = "contents";
	c2.family = "anchor";
	c2.has_qualifier = true;
	c2.qualifier = pbs("cnnsi.com");
	o.n_columns = 2;
	o.columns = cols;
	ro.columns = bcols;
	ro.column_count = 2;
	check_read_row("com.cnn.www", &o, &ro, "of two columns");
	o.has_cells_per_column = true;
	o.cells_per_column = 1;
	ro.cells_per_column = 1;
	check_read_row("com.cnn.www", &o, &ro, "cells_per_column 1");
	o.has_cells_per_column = false;
	ro.cells_per_column = 0;
	o.has_max_ts = true;
	o.max_ts = 5;
	ro.has_max_ts = true;
	ro.max_ts = 5;
	check_read_row("com.cnn.www", &o, &ro, "max_ts 5");
	o.has_keys_only = true;
	o.keys_only = true;
	ro.keys_only = true;
	check_read_row("com.cnn.www", &o, &ro, "keys_only");
	o.has_min_ts = true;
	o.min_ts = 100;
	ro.min_ts = 100;
	check_read_row("com.cnn.www", &o, &ro, "of nothing selected");

	c1.family = NULL;
	r.table = "webtable";
	r.has_row = true;
	r.row = pbs("com.cnn.www");
	r.options = &o;
	is_int(call_rc(M(READ_ROW), &r.base), -EINVAL,
	    "READ_ROW with a column without family: -EINVAL");
	r.options = NULL;
	r.table = NULL;
	is_int(call_rc(M(READ_ROW), &r.base), -EINVAL,
	    "READ_ROW without table: -EINVAL");
	r.table = "nosuch";
	is_int(call_rc(M(READ_ROW), &r.base), -ENOENT,
	    "READ_ROW of an absent table: -ENOENT");
}

/* ---- Scans ---- */

#define SCAN_ROWS	1000

static void
fill_scan_table(void)
{
	char row[32], val[160];

	for (int i = 0; i < SCAN_ROWS; i++) {
		struct bt_mutation m[2] = {
			{ BT_PUT, "f", { "q", 1 }, 7, { val, 0 } },
			{ BT_PUT, "f", { "r", 1 }, 8, { "second", 6 } },
		};

		snprintf(row, sizeof(row), "row%04d", i);
		m[0].value.size = (size_t)snprintf(val, sizeof(val),
		    "value %d %.*s", i, i % 100, "xxxxxxxxxxxxxxxxxxxxxxxxxxx"
		    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
		    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
		must(bt_mutate_row(tst.s, "scan", bts(row), m, i % 3 ? 1 : 2,
		    NULL, NULL));
	}
}

/* What one batch said. */
struct batch {
	uint64_t id;
	bool done;
	size_t rows;
	size_t bytes;		/* the packed reply */
};

/* One SCAN of r on s: its rows rendered onto text (if not NULL). */
static int
scan_once(struct service *s, Tabletfs__ScanRequest *r, struct sbuf *text,
    bool keys_only, struct batch *bt)
{
	Tabletfs__ScanReply *rep;
	struct buf reply;
	int rc;

	buf_init(&reply);
	memset(bt, 0, sizeof(*bt));
	if ((rc = call_on(s, M(SCAN), &r->base, &reply)) == 0) {
		rep = tabletfs__scan_reply__unpack(NULL, reply.n, reply.p);
		if (rep == NULL) {
			rc = 1001;
			goto out;
		}
		bt->id = rep->scanner_id;
		bt->done = rep->has_done && rep->done;
		bt->rows = rep->n_rows;
		bt->bytes = reply.n;
		for (size_t i = 0; text != NULL && i < rep->n_rows; i++) {
			sbuf_add(text, "[", 1);
			sbuf_escaped(text, rep->rows[i]->key.data,
			    rep->rows[i]->key.len);
			sbuf_add(text, "]\n", 2);
			render_pb_row(text, rep->rows[i], keys_only);
		}
		tabletfs__scan_reply__free_unpacked(rep, NULL);
	} else if (rc != -EBUSY && !error_line_ok(&reply)) {
		rc = 1002;
	}
out:
	buf_release(&reply);
	return rc;
}

/* What a whole scan in batches came to. */
struct scan_sum {
	int rc;
	int batches;
	size_t max_rows;
	size_t max_bytes;
	uint64_t id;
};

/* Scan with r (scanner_id 0) to the end on s; rows onto text. */
static struct scan_sum
scan_all(struct service *s, Tabletfs__ScanRequest *r, struct sbuf *text)
{
	Tabletfs__ScanRequest next = TABLETFS__SCAN_REQUEST__INIT;
	Tabletfs__ScanRequest *q = r;
	bool keys_only = r->options != NULL && r->options->keys_only;
	struct scan_sum sum = { 0 };
	struct batch bt;

	for (;;) {
		if ((sum.rc = scan_once(s, q, text, keys_only, &bt)) != 0)
			break;
		sum.batches++;
		if (bt.rows > sum.max_rows)
			sum.max_rows = bt.rows;
		if (bt.bytes > sum.max_bytes)
			sum.max_bytes = bt.bytes;
		if (q == r)
			sum.id = bt.id;
		else if (bt.id != sum.id)
			sum.rc = 1003;	/* the id changed */
		if (bt.done || sum.rc != 0 || sum.batches > 100000)
			break;
		next.has_scanner_id = true;
		next.scanner_id = sum.id;
		q = &next;
	}
	return sum;
}

static Tabletfs__ScanRequest
scan_request(uint32_t rows, uint32_t bytes)
{
	Tabletfs__ScanRequest r = TABLETFS__SCAN_REQUEST__INIT;

	r.table = "scan";
	r.has_batch_rows = rows != 0;
	r.batch_rows = rows;
	r.has_batch_bytes = bytes != 0;
	r.batch_bytes = bytes;
	return r;
}

static void
test_scan_batches(void)
{
	Tabletfs__ScanRequest r = scan_request(7, 0);
	Tabletfs__ReadOptions o = TABLETFS__READ_OPTIONS__INIT;
	struct bt_scan_options so = { 0 };
	struct sbuf b = { 0 };
	struct scan_sum sum;
	char *want = scan_text(tst.s, "scan", NULL);
	struct batch bt;

	sum = scan_all(svc, &r, &b);
	ok(sum.rc == 0 && sum.id != 0, "a scan in batches of 7 rows");
	ok(sum.batches == 143 || sum.batches == 144,
	    "%d batches of at most 7 rows", sum.batches);
	is_int(sum.max_rows, 7, "no batch over 7 rows");
	is_text(sbuf_take(&b), want, "the rows are bt_scan's");
	is_int(service_scanner_count(svc), 0, "the scanner closed at done");
	r.scanner_id = sum.id;
	r.has_scanner_id = true;
	is_int(scan_once(svc, &r, NULL, false, &bt), BT_ENOTSERVING,
	    "SCAN of the finished scanner: BT_ENOTSERVING");
	r.scanner_id = 12345;
	is_int(scan_once(svc, &r, NULL, false, &bt), BT_ENOTSERVING,
	    "SCAN of an unknown scanner: BT_ENOTSERVING");

	r = scan_request(0, 2000);
	sum = scan_all(svc, &r, &b);
	ok(sum.rc == 0 && sum.batches > 10 && sum.max_rows > 1,
	    "a scan in batches of 2000 bytes: %d batches, up to %zu rows",
	    sum.batches, sum.max_rows);
	ok(sum.max_bytes <= 2000 + 400, "each about 2000 bytes (%zu)",
	    sum.max_bytes);
	is_text(sbuf_take(&b), want, "the same rows");

	r = scan_request(0, 1);
	sum = scan_all(svc, &r, &b);
	ok(sum.rc == 0 && sum.max_rows == 1 && sum.batches >= SCAN_ROWS,
	    "batch_bytes 1: one row a batch");
	is_text(sbuf_take(&b), want, "the same rows");

	r = scan_request(0, 0);
	sum = scan_all(svc, &r, &b);
	ok(sum.rc == 0 && sum.max_rows == 100 && sum.batches >= 10,
	    "the default batch: 100 rows");
	is_text(sbuf_take(&b), want, "the same rows");
	free(want);

	/* A range with options, as bt_scan_open takes them. */
	r = scan_request(9, 0);
	r.has_start = r.has_start_exclusive = r.has_end = true;
	r.start = pbs("row0100");
	r.start_exclusive = true;
	r.end = pbs("row0200");
	r.options = &o;
	o.has_keys_only = o.keys_only = true;
	o.has_cells_per_column = true;
	o.cells_per_column = 1;
	so.start = bts("row0100");
	so.start_exclusive = true;
	so.end = bts("row0200");
	so.read.keys_only = true;
	so.read.cells_per_column = 1;
	want = scan_text(tst.s, "scan", &so);
	sum = scan_all(svc, &r, &b);
	ok(sum.rc == 0, "a scan of a range, keys only");
	is_text(sbuf_take(&b), want, "the rows bt_scan gives for it");
	free(want);

	r.table = NULL;
	is_int(scan_once(svc, &r, NULL, false, &bt), -EINVAL,
	    "SCAN opening without table: -EINVAL");
	r.table = "nosuch";
	is_int(scan_once(svc, &r, NULL, false, &bt), -ENOENT,
	    "SCAN of an absent table: -ENOENT");
	is_int(service_scanner_count(svc), 0, "no scanner left open");
}

struct scan_thread {
	pthread_t thread;
	struct sbuf text;
	struct scan_sum sum;
};

static void *
scan_thread_run(void *arg)
{
	struct scan_thread *t = arg;
	Tabletfs__ScanRequest r = scan_request(13, 0);

	t->sum = scan_all(svc, &r, &t->text);
	return NULL;
}

static void
test_scan_concurrent(void)
{
	struct scan_thread th[4];
	char *want = scan_text(tst.s, "scan", NULL);
	bool all = true;

	memset(th, 0, sizeof(th));
	for (int i = 0; i < 4; i++)
		if (pthread_create(&th[i].thread, NULL, scan_thread_run,
		    &th[i]) != 0)
			tap_bail("pthread_create");
	for (int i = 0; i < 4; i++) {
		char *got;

		pthread_join(th[i].thread, NULL);
		got = sbuf_take(&th[i].text);
		all = all && th[i].sum.rc == 0 && strcmp(got, want) == 0;
		free(got);
	}
	ok(all, "four threads scanning at once each get every row");
	ok(th[0].sum.id != th[1].sum.id && th[0].sum.id != th[2].sum.id &&
	    th[1].sum.id != th[2].sum.id && th[2].sum.id != th[3].sum.id,
	    "each scanner its own id");
	free(want);
}

/*
 * Two threads reading one scanner as fast as they can, one in big
 * batches (long requests) and one a row at a time, released together: the
 * requests that meet the other's get -EBUSY, and every row comes once, to
 * one of them.  A meeting needs both threads on a processor at once, which
 * a loaded machine may deny for a while: the rounds go on for up to
 * SCAN_BUSY_SECS.
 */
#define SCAN_BUSY_SECS	60

struct shared_scan {
	uint64_t id;
	pthread_barrier_t start;
	pthread_mutex_t mu;
	int seen[SCAN_ROWS];
	long busy;
	int bad_rc;
};

struct shared_reader {
	pthread_t thread;
	struct shared_scan *sh;
	uint32_t batch;
};

static void *
shared_scan_run(void *arg)
{
	struct shared_reader *rd = arg;
	struct shared_scan *sh = rd->sh;
	Tabletfs__ScanRequest r = scan_request(rd->batch, 1u << 30);
	struct sbuf b = { 0 };
	struct batch bt;
	int rc;

	r.has_scanner_id = true;
	r.scanner_id = sh->id;
	pthread_barrier_wait(&sh->start);
	for (;;) {
		rc = scan_once(svc, &r, &b, false, &bt);
		if (rc == -EBUSY) {
			pthread_mutex_lock(&sh->mu);
			sh->busy++;
			pthread_mutex_unlock(&sh->mu);
			continue;
		}
		if (rc == BT_ENOTSERVING)
			break;	/* the other thread reached the end */
		if (rc != 0) {
			sh->bad_rc = rc;
			break;
		}
		pthread_mutex_lock(&sh->mu);
		for (char *p = b.p; p != NULL &&
		    (p = strstr(p, "[row")) != NULL; p += 4)
			sh->seen[atoi(p + 4)]++;
		pthread_mutex_unlock(&sh->mu);
		b.n = 0;
		if (b.p != NULL)
			b.p[0] = '\0';
		if (bt.done)
			break;
	}
	sbuf_release(&b);
	return NULL;
}

static void
test_scan_busy(void)
{
	struct shared_scan sh;
	struct shared_reader rd[2] = { { 0, &sh, 400 }, { 0, &sh, 1 } };
	Tabletfs__ScanRequest r = scan_request(1, 0);
	struct batch bt;
	time_t until = time(NULL) + SCAN_BUSY_SECS;
	int tries = 0, missed = -1;

	do {
		memset(&sh, 0, sizeof(sh));
		pthread_mutex_init(&sh.mu, NULL);
		pthread_barrier_init(&sh.start, NULL, 2);
		must(scan_once(svc, &r, NULL, false, &bt));
		sh.id = bt.id;
		sh.seen[0] = 1;		/* the opening batch's row */
		for (int i = 0; i < 2; i++)
			pthread_create(&rd[i].thread, NULL, shared_scan_run,
			    &rd[i]);
		for (int i = 0; i < 2; i++)
			pthread_join(rd[i].thread, NULL);
		pthread_mutex_destroy(&sh.mu);
		pthread_barrier_destroy(&sh.start);
		missed = -1;
		for (int i = 0; i < SCAN_ROWS && missed < 0; i++)
			if (sh.seen[i] != 1)
				missed = i;
	} while (sh.busy == 0 && sh.bad_rc == 0 && missed < 0 &&
	    (++tries, time(NULL) < until));
	is_int(sh.bad_rc, 0, "one scanner read by two threads: no other error");
	ok(sh.busy > 0, "a request meeting another gets -EBUSY (%ld times, "
	    "%d tries)", sh.busy, tries + 1);
	ok(missed < 0, "every row came once, to one of them");
	if (missed >= 0)
		diag("row %d came %d times", missed, sh.seen[missed]);
	is_int(service_scanner_count(svc), 0, "and the scanner closed");
}

static void
test_scan_idle(void)
{
	struct service_options so = { .scanner_idle_ms = 1000 };
	Tabletfs__ScanRequest r = scan_request(1, 0), close_r =
	    TABLETFS__SCAN_REQUEST__INIT;
	struct service *fast, *saved = svc;
	struct batch a, b, d, x;
	struct timespec t = { 0, 600 * 1000 * 1000 };

	must(service_new_with(tst.s, &so, &fast));
	svc = fast;
	must(scan_once(fast, &r, NULL, false, &a));
	must(scan_once(saved, &r, NULL, false, &d));	/* 60 s default */
	nanosleep(&t, NULL);
	must(scan_once(fast, &r, NULL, false, &b));
	r.has_scanner_id = true;
	r.scanner_id = b.id;
	is_int(scan_once(fast, &r, NULL, false, &x), 0,
	    "a scanner used within its idle time goes on");
	nanosleep(&t, NULL);
	r.scanner_id = a.id;
	is_int(scan_once(fast, &r, NULL, false, &x), BT_ENOTSERVING,
	    "a scanner idle for 1.2 s of 1 s: BT_ENOTSERVING");
	r.scanner_id = b.id;
	is_int(scan_once(fast, &r, NULL, false, &x), 0,
	    "one used 0.6 s ago goes on");
	r.scanner_id = d.id;
	is_int(scan_once(saved, &r, NULL, false, &x), 0,
	    "under the default 60 s, one idle for 1.2 s goes on");
	nanosleep(&t, NULL);
	nanosleep(&t, NULL);
	is_int(service_scanner_count(fast), 1, "(b idle, not yet swept)");
	close_r.has_scanner_id = true;
	close_r.scanner_id = 999;
	is_int(call_on(fast, M(SCAN_CLOSE), &close_r.base,
	    &(struct buf){ 0 }), 0, "SCAN_CLOSE of an unknown id: 0");
	is_int(service_scanner_count(fast), 0,
	    "and it swept the idle scanner");
	close_r.scanner_id = d.id;
	svc = saved;
	is_int(call_rc(M(SCAN_CLOSE), &close_r.base), 0, "SCAN_CLOSE");
	is_int(service_scanner_count(saved), 0, "closed it");
	service_free(fast);
}

static void
test_scan_limit(void)
{
	Tabletfs__ScanRequest r = scan_request(1, 0), c =
	    TABLETFS__SCAN_REQUEST__INIT;
	uint64_t *ids = xmalloc(SERVICE_MAX_SCANNERS * sizeof(*ids));
	struct batch bt;
	int rc = 0, n;

	for (n = 0; n < SERVICE_MAX_SCANNERS; n++) {
		if ((rc = scan_once(svc, &r, NULL, false, &bt)) != 0)
			break;
		ids[n] = bt.id;
	}
	ok(rc == 0 && n == SERVICE_MAX_SCANNERS, "%d scanners open", n);
	is_int(scan_once(svc, &r, NULL, false, &bt), -EMFILE,
	    "one more: -EMFILE");
	c.has_scanner_id = true;
	c.scanner_id = ids[17];
	is_int(call_rc(M(SCAN_CLOSE), &c.base), 0, "SCAN_CLOSE of one");
	ok(scan_once(svc, &r, NULL, false, &bt) == 0 && bt.id != ids[17],
	    "then one opens again, with a new id");
	for (int i = 0; i < n; i++) {
		c.scanner_id = ids[i];
		call_rc(M(SCAN_CLOSE), &c.base);
	}
	is_int(service_scanner_count(svc), 1, "closed but the last");
	free(ids);
	/* The last is left for service_free to close. */
}

/* ---- Administration ---- */

static void
test_admin(void)
{
	Tabletfs__SplitRequest sr = TABLETFS__SPLIT_REQUEST__INIT;
	Tabletfs__TableRequest tr = TABLETFS__TABLE_REQUEST__INIT;
	Tabletfs__TabletsReply *tl;
	Tabletfs__Stats *st;
	struct bt_tablet_info *t;
	struct bt_stats bs;
	size_t count;
	bool same;
	int rc;

	sr.table = "scan";
	sr.has_row = true;
	sr.row = pbs("row0500");
	is_int(call_rc(M(SPLIT), &sr.base), 0, "SPLIT");
	is_int(call_rc(M(SPLIT), &sr.base), -EEXIST, "SPLIT again: -EEXIST");
	sr.table = NULL;
	is_int(call_rc(M(SPLIT), &sr.base), -EINVAL,
	    "SPLIT without table: -EINVAL");

	tr.table = "scan";
	tl = call_msg(M(TABLETS), &tr.base,
	    &tabletfs__tablets_reply__descriptor, &rc);
	must(bt_table_tablets(tst.s, "scan", &t, &count));
	same = rc == 0 && tl->n_tablets == count && count == 2;
	for (size_t i = 0; same && i < count; i++) {
		const Tabletfs__TabletInfo *ti = tl->tablets[i];

		same = ti->id == t[i].id &&
		    bytes_eq(btb(ti->start.data, ti->start.len), t[i].start) &&
		    bytes_eq(btb(ti->end.data, ti->end.len), t[i].end) &&
		    ti->sstables == t[i].sstables &&
		    ti->flushed_seq == t[i].flushed_seq;
	}
	ok(same, "TABLETS: the two tablets bt_table_tablets gives");
	bt_tablets_free(t);
	msg_free(tl);
	tr.table = NULL;
	is_int(call_rc(M(TABLETS), &tr.base), -EINVAL,
	    "TABLETS without table: -EINVAL");

	is_int(call_rc(M(FLUSH), NULL), 0, "FLUSH");
	is_int(call_rc(M(COMPACT), &tr.base), 0, "COMPACT of every table");
	tr.table = "";
	is_int(call_rc(M(COMPACT), &tr.base), 0, "COMPACT of \"\": every one");
	tr.table = "webtable";
	tr.has_major = tr.major = true;
	is_int(call_rc(M(COMPACT), &tr.base), 0, "COMPACT major");
	tr.table = "nosuch";
	is_int(call_rc(M(COMPACT), &tr.base), -ENOENT,
	    "COMPACT of an absent table: -ENOENT");

	st = call_msg(M(STATS), NULL, &tabletfs__stats__descriptor, &rc);
	bt_store_get_stats(tst.s, &bs);
	ok(rc == 0 && st->has_mutations && st->mutations == bs.mutations &&
	    st->last_seq == bs.last_seq && st->tablets == bs.tablets &&
	    st->sstables == bs.sstables && st->splits == bs.splits &&
	    st->flushes == bs.flushes && st->has_reserve_bytes &&
	    st->writes_refused == bs.writes_refused && bs.sstables > 0 &&
	    bs.splits > 0, "STATS: bt_store_get_stats's counters");
	msg_free(st);
}

static int
first_name(void *arg, const char *name)
{
	snprintf(arg, 256, "%s", name);
	return 1;
}

static void
report_line(void *arg, const char *line)
{
	sbuf_printf(arg, "%s\n", line);
}

/* CHECK of a sound store, then of one whose SSTable has a flipped byte
 * (last: the store is damaged after it). */
static void
test_check(void)
{
	Tabletfs__CheckReply *cr;
	uint64_t files = 0, bytes = 0;
	struct sbuf got = { 0 }, want = { 0 };
	char name[256] = "", path[300];
	int rc, crc;

	cr = call_msg(M(CHECK), NULL, &tabletfs__check_reply__descriptor, &rc);
	crc = bt_store_check(tst.s, NULL, NULL, NULL, &files, &bytes);
	ok(rc == 0 && crc == 0 && cr->result == 0 && cr->n_problems == 0 &&
	    cr->files == files && cr->bytes == bytes && files > 0,
	    "CHECK of a sound store: result 0, the files bt_store_check saw");
	msg_free(cr);

	env_dir_list(tst.env, "/store/sst", first_name, name);
	snprintf(path, sizeof(path), "/store/sst/%s", name);
	must(env_fault_flip_byte(tst.env, path, 20, 0x40));
	cr = call_msg(M(CHECK), NULL, &tabletfs__check_reply__descriptor, &rc);
	crc = bt_store_check(tst.s, report_line, NULL, &want, NULL, NULL);
	ok(rc == 0 && cr->result == BT_ECORRUPT && crc == BT_ECORRUPT &&
	    cr->n_problems > 0, "CHECK of a damaged SSTable: status 0, "
	    "result BT_ECORRUPT, problems");
	for (size_t i = 0; rc == 0 && i < cr->n_problems; i++)
		sbuf_printf(&got, "%s\n", cr->problems[i]);
	is_text(sbuf_take(&got), want.p != NULL ? want.p : "",
	    "the problems bt_store_check reports");
	sbuf_release(&want);
	msg_free(cr);
}

/* ---- Bad input ---- */

static const uint32_t all_methods[] = {
	M(TABLE_CREATE), M(TABLE_DELETE), M(TABLE_LIST), M(FAMILY_CREATE),
	M(FAMILY_DELETE), M(FAMILY_SET_GC), M(GROUP_SET), M(TABLE_DESCRIBE),
	M(MUTATE_ROW), M(MUTATE_ROWS), M(READ_MODIFY_WRITE), M(MOVE_COLUMN),
	M(READ_ROW),
	M(SCAN), M(SCAN_CLOSE), M(FLUSH), M(COMPACT), M(SPLIT), M(TABLETS),
	M(CHECK), M(STATS),
};
#define ALL_METHODS	(sizeof(all_methods) / sizeof(all_methods[0]))

/* Run raw bytes; true when the outcome is 0 or an error with a line. */
static bool
raw_ok(uint32_t method, const void *p, size_t n, int *rcp)
{
	struct buf reply;
	bool good;
	int rc;

	buf_init(&reply);
	rc = service_handle(svc, method, slice_make(p, n), &reply);
	good = rc == 0 || (rc < 0 && error_line_ok(&reply));
	if (rc < 0 && rcp != NULL && method == M(MUTATE_ROW))
		diag("%d %.*s", rc, (int)reply.n, reply.p);
	buf_release(&reply);
	if (rcp != NULL)
		*rcp = rc;
	return good;
}

static void
test_bad_input(void)
{
	static const uint8_t garbage[] = { 0xff, 0xff, 0xff, 0xff, 0xff,
	    0xff, 0xff, 0xff };
	Tabletfs__MutateRowRequest mr = TABLETFS__MUTATE_ROW_REQUEST__INIT;
	Tabletfs__Mutation m[2], *mp[] = { &m[0], &m[1] };
	char *before = read_text_str(tst.s, "webtable", "com.cnn.www", NULL);
	uint8_t *p, big_row[BT_MAX_ROW + 1], rnd[96];
	uint64_t seed = tap_seed();
	bool all = true;
	size_t n;
	int rc;

	ok(raw_ok(999, NULL, 0, &rc) && rc == -ENOSYS,
	    "an unknown method: -ENOSYS");
	ok(raw_ok(M(METHOD_NONE), NULL, 0, &rc) && rc == -ENOSYS,
	    "METHOD_NONE: -ENOSYS");
	ok(raw_ok(M(SERVE), NULL, 0, &rc) && rc == -ENOSYS,
	    "SERVE: -ENOSYS, the process's business");
	for (size_t i = 0; i < ALL_METHODS; i++) {
		all = raw_ok(all_methods[i], garbage, sizeof(garbage), &rc) &&
		    rc == -EPROTO && all;
		if (rc != -EPROTO)
			diag("method %u: %d", all_methods[i], rc);
	}
	ok(all, "garbage bytes for every method: -EPROTO with a line");

	/* Every prefix of a packed request: a message with fewer fields,
	 * or one that does not unpack; never a crash. */
	mr.table = "webtable";
	mr.has_row = true;
	mr.row = pbs("trunc");
	mr.n_mutations = 2;
	mr.mutations = mp;
	mut(&m[0], 1, "contents", "", 1, "one");
	mut(&m[1], 1, "anchor", "a", 2, "two");
	n = protobuf_c_message_get_packed_size(&mr.base);
	p = xmalloc(n);
	protobuf_c_message_pack(&mr.base, p);
	all = true;
	for (size_t k = 0; k < n; k++)
		all = raw_ok(M(MUTATE_ROW), p, k, NULL) &&
		    raw_ok(M(READ_ROW), p, k, NULL) &&
		    raw_ok(M(SCAN), p, k, NULL) && all;
	ok(all, "every truncation of a request: 0 or an error with a line");
	free(p);

	memset(big_row, 'r', sizeof(big_row));
	mr.row.data = big_row;
	mr.row.len = sizeof(big_row);
	n = protobuf_c_message_get_packed_size(&mr.base);
	p = xmalloc(n);
	protobuf_c_message_pack(&mr.base, p);
	ok(raw_ok(M(MUTATE_ROW), p, n, &rc) && rc == -EINVAL,
	    "a row over 64 KiB: -EINVAL with a line (%d)", rc);
	free(p);

	all = true;
	for (int i = 0; i < 3000; i++) {
		uint32_t method = all_methods[tap_rand(&seed) % ALL_METHODS];

		n = tap_rand(&seed) % sizeof(rnd);
		for (size_t k = 0; k < n; k++)
			rnd[k] = (uint8_t)tap_rand(&seed);
		/* Mostly small field numbers, so that some fields parse. */
		if (n > 0)
			rnd[0] = (uint8_t)(rnd[0] & 0x3f);
		if (method == M(COMPACT) || method == M(CHECK) ||
		    method == M(FLUSH) || method == M(TABLE_DELETE))
			continue;	/* slow, or would drop a table */
		all = raw_ok(method, rnd, n, NULL) && all;
	}
	ok(all, "random payloads: 0 or an error with a line");

	is_text(read_text_str(tst.s, "webtable", "com.cnn.www", NULL), before,
	    "the store is as before");
	free(before);
}

/* SCAN_CLOSE the scanner a SCAN reply names. */
static void
scan_close_reply(uint32_t method, const struct buf *reply)
{
	Tabletfs__ScanRequest c = TABLETFS__SCAN_REQUEST__INIT;
	Tabletfs__ScanReply *rep;

	if (method != M(SCAN) ||
	    (rep = tabletfs__scan_reply__unpack(NULL, reply->n,
	    reply->p)) == NULL)
		return;
	c.has_scanner_id = true;
	c.scanner_id = rep->scanner_id;
	call_rc(M(SCAN_CLOSE), &c.base);
	tabletfs__scan_reply__free_unpacked(rep, NULL);
}

/* Fail each allocation of a call in turn: -ENOMEM or the right reply. */
static void
sweep_enomem(uint32_t method, const ProtobufCMessage *req, const char *what)
{
	struct buf reply, good;
	bool all = true;
	int rc, n;

	buf_init(&reply);
	buf_init(&good);
	/* Room for the error line: the transport's buffer, reused. */
	if (buf_reserve(&reply, 4096) < 0)
		tap_bail("buf_reserve");
	must(call_on(svc, method, req, &good));
	scan_close_reply(method, &good);
	for (n = 1; n < 1000; n++) {
		bt_alloc_fail_after(n);
		rc = call_on(svc, method, req, &reply);
		bt_alloc_fail_after(0);
		if (rc == 0)
			break;
		if (rc != -ENOMEM || !error_line_ok(&reply)) {
			diag("allocation %d: %d %.*s", n, rc, (int)reply.n,
			    reply.p);
			all = false;
		}
	}
	ok(all && rc == 0 && n > 1, "%s: -ENOMEM for each of %d allocations",
	    what, n - 1);
	scan_close_reply(method, &reply);
	if (method != M(SCAN) && method != M(MUTATE_ROW))
		ok(reply.n == good.n && memcmp(reply.p, good.p, good.n) == 0,
		    "%s: then the same reply", what);
	buf_release(&reply);
	buf_release(&good);
}

static void
test_enomem(void)
{
	Tabletfs__ReadRowRequest rr = TABLETFS__READ_ROW_REQUEST__INIT;
	Tabletfs__TableRequest tr = TABLETFS__TABLE_REQUEST__INIT;
	Tabletfs__Mutation m;
	Tabletfs__MutateRowRequest mr = TABLETFS__MUTATE_ROW_REQUEST__INIT;
	Tabletfs__Mutation *mp[] = { &m };
	Tabletfs__ScanRequest sr = scan_request(5, 0);
	struct bt_stats st;

	rr.table = "webtable";
	rr.has_row = true;
	rr.row = pbs("com.cnn.www");
	sweep_enomem(M(READ_ROW), &rr.base, "READ_ROW");
	tr.table = "webtable";
	sweep_enomem(M(TABLE_DESCRIBE), &tr.base, "TABLE_DESCRIBE");
	sweep_enomem(M(TABLETS), &tr.base, "TABLETS");
	sweep_enomem(M(TABLE_LIST), NULL, "TABLE_LIST");
	mr.table = "webtable";
	mr.has_row = true;
	mr.row = pbs("nomem");
	mr.n_mutations = 1;
	mr.mutations = mp;
	mut(&m, 1, "contents", "", 4, "v");
	sweep_enomem(M(MUTATE_ROW), &mr.base, "MUTATE_ROW");
	sweep_enomem(M(SCAN), &sr.base, "SCAN");
	bt_store_get_stats(tst.s, &st);
	is_int(st.writes_refused, 0, "the store still takes writes");
	is_text(read_text_str(tst.s, "webtable", "nomem", NULL),
	    "contents:@4=v\n", "and holds the row written");
}

int
main(void)
{
	tstore_fault(&tst, NULL);
	must(service_new(tst.s, &svc));
	test_schema();
	test_mutate();
	test_mutate_rows();
	test_read_modify_write();
	test_stamp_floor();
	test_move_column();
	test_read_row();
	fill_scan_table();
	test_scan_batches();
	test_scan_concurrent();
	test_scan_busy();
	test_scan_idle();
	test_enomem();
	test_bad_input();
	test_admin();
	test_scan_limit();
	test_check();
	service_free(svc);
	service_free(NULL);
	tstore_destroy(&tst);
	return tap_done();
}
