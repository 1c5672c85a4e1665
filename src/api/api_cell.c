/*
 * api_cell.c - the schema and administration calls on a cell
 * (api_cell.h); the calls on rows are in api_cell_rows.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_cell.h"
#include "rpc/tabletfs.pb-c.h"
#include "util/alloc.h"
#include "util/error.h"

#define CALL(c, method, req, retry, desc, reply)			\
	cell_client_call((c), TABLETFS__METHOD__##method,		\
	    (const ProtobufCMessage *)(req), (retry), (desc),		\
	    (ProtobufCMessage **)(reply))

int
cell_table_create(struct cell_client *c, const char *table,
    const struct bt_access *owner,
    const struct bt_family_spec *families, size_t family_count,
    const struct bt_bytes *splits, size_t split_count, uint64_t tablet_size)
{
	Tabletfs__TableCreateRequest req = TABLETFS__TABLE_CREATE_REQUEST__INIT;
	Tabletfs__Access access = TABLETFS__ACCESS__INIT;
	Tabletfs__Family *fams, **famp;
	ProtobufCBinaryData *sp;
	int rc = -ENOMEM;

	fams = bt_calloc(family_count + 1, sizeof(*fams));
	famp = bt_calloc(family_count + 1, sizeof(*famp));
	sp = bt_calloc(split_count + 1, sizeof(*sp));
	if (fams == NULL || famp == NULL || sp == NULL)
		goto out;
	for (size_t i = 0; i < family_count; i++) {
		tabletfs__family__init(&fams[i]);
		fams[i].name = cell_str(families[i].name);
		fams[i].group = cell_str(families[i].group);
		fams[i].gc_policy = cell_str(families[i].gc_policy);
		famp[i] = &fams[i];
	}
	for (size_t i = 0; i < split_count; i++)
		sp[i] = cell_bin(splits[i]);
	req.table = cell_str(table);
	req.n_families = family_count;
	req.families = famp;
	req.n_splits = split_count;
	req.splits = sp;
	req.has_tablet_size = true;
	req.tablet_size = tablet_size;
	if (owner != NULL) {
		access.has_uid = access.has_gid = access.has_mode = true;
		access.uid = owner->uid;
		access.gid = owner->gid;
		access.mode = owner->mode;
		req.owner = &access;
	}
	rc = CALL(c, TABLE_CREATE, &req, CELL_RETRY_UNSENT, NULL, NULL);
out:
	bt_free(fams);
	bt_free(famp);
	bt_free(sp);
	return rc;
}

/*
 * rc, the result of a schema change made at the root's server; when it
 * was made, every other server reads the schema at once (SCHEMA_SYNC)
 * rather than at its next poll, up to a second later: once a table
 * dropped or a family deleted returns, no server serves it.  The change
 * is made whatever the sync gives: a server that does not answer polls
 * on its own (or has lost its lease), and one from before SCHEMA_SYNC
 * (-ENOSYS) polls as before.
 */
static int
schema_synced(struct cell_client *c, int rc)
{
	if (rc == 0)
		(void)cell_client_call_others(c, TABLETFS__METHOD__SCHEMA_SYNC,
		    NULL);
	return rc;
}

int
cell_table_delete(struct cell_client *c, const char *table)
{
	Tabletfs__TableRequest req = TABLETFS__TABLE_REQUEST__INIT;

	req.table = cell_str(table);
	/* While the table is there to locate. */
	(void)cell_client_route_learn(c, table);
	return schema_synced(c, CALL(c, TABLE_DELETE, &req,
	    CELL_RETRY_UNSENT, NULL, NULL));
}

int
cell_table_list(struct cell_client *c, char ***names, size_t *count)
{
	Tabletfs__TableListReply *rep = NULL;
	char **out;
	int rc;

	if ((rc = CALL(c, TABLE_LIST, NULL, CELL_RETRY_ANY,
	    &tabletfs__table_list_reply__descriptor, &rep)) < 0)
		return rc;
	if ((out = bt_calloc(rep->n_names + 1, sizeof(*out))) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < rep->n_names; i++) {
		size_t n = strlen(rep->names[i]) + 1;

		if ((out[i] = bt_malloc(n)) == NULL) {
			bt_names_free(out);
			rc = -ENOMEM;
			goto out;
		}
		memcpy(out[i], rep->names[i], n);
	}
	*names = out;
	*count = rep->n_names;
out:
	cell_client_free(&rep->base);
	return rc;
}

static int
family_call(struct cell_client *c, uint32_t method, const char *table,
    const char *name, const char *group, const char *gc_policy,
    uint64_t created_min, char **servers, size_t count)
{
	Tabletfs__FamilyRequest req = TABLETFS__FAMILY_REQUEST__INIT;
	Tabletfs__Family f = TABLETFS__FAMILY__INIT;

	f.name = cell_str(name);
	f.group = cell_str(group);
	f.gc_policy = cell_str(gc_policy);
	req.table = cell_str(table);
	req.family = &f;
	req.has_created_seq_min = created_min != 0;
	req.created_seq_min = created_min;
	req.servers = servers;
	req.n_servers = count;
	return schema_synced(c, cell_client_call(c, method, &req.base,
	    CELL_RETRY_UNSENT, NULL, NULL));
}

/* What the servers other than the root's answered LAST_SEQ. */
struct last_seqs {
	uint64_t max;		/* the largest number any gave so far */
	char **names;		/* their names, count of them */
	size_t count;
};

static void
last_seqs_release(struct last_seqs *l)
{
	for (size_t i = 0; i < l->count; i++)
		bt_free(l->names[i]);
	bt_free(l->names);
	memset(l, 0, sizeof(*l));
}

/* LAST_SEQ's reply, into arg's struct last_seqs. */
static int
last_seq_add(void *arg, const char *server, ProtobufCMessage *reply)
{
	const Tabletfs__LastSeqReply *rep =
	    (const Tabletfs__LastSeqReply *)reply;
	struct last_seqs *l = arg;
	char **grown;

	(void)server;
	if (rep->last_seq > l->max)
		l->max = rep->last_seq;
	if (rep->server == NULL || rep->server[0] == '\0')
		return 0;
	if ((grown = bt_realloc(l->names, (l->count + 1) *
	    sizeof(*grown))) == NULL)
		return -ENOMEM;
	l->names = grown;
	if ((l->names[l->count] = bt_strdup(rep->server)) == NULL)
		return -ENOMEM;
	l->count++;
	return 0;
}

/*
 * A family is made at the root's server, which numbers it created_seq
 * (catalog_family); entries below that are of a dropped family of the
 * name.  On tablets served one by one every server numbers on its own,
 * and one may have numbered a dropped family's entries above what the
 * root's server gives next: the family starts above every server's
 * last number, and the root's server makes it only while no log of a
 * server that did not answer may still replay entries of the table
 * (server_family_create()).  It answers -EAGAIN while one may, as
 * during the recovery of a dead server's tablets: then ask again, until
 * the deadline.  A server that does not answer fails the call (the
 * family is not made) rather than risk showing a dropped family's
 * cells.
 */
int
cell_family_create(struct cell_client *c, const char *table,
    const struct bt_family_spec *family)
{
	int64_t deadline = cell_client_deadline(c);
	struct last_seqs last = { 0 };
	char why[512];
	int wait_ms = 0, rc;

	if (family == NULL)
		return bt_error_set(-EINVAL, "no family");
	(void)cell_client_route_learn(c, table);
	for (;;) {
		if ((rc = cell_client_call_each(c, TABLETFS__METHOD__LAST_SEQ,
		    NULL, &tabletfs__last_seq_reply__descriptor,
		    last_seq_add, &last)) == 0)
			rc = family_call(c, TABLETFS__METHOD__FAMILY_CREATE,
			    table, family->name, family->group,
			    family->gc_policy, last.max != 0 ? last.max + 1 :
			    0, last.names, last.count);
		last_seqs_release(&last);
		if (rc != -EAGAIN)
			return rc;
		snprintf(why, sizeof(why), "%s", bt_error_detail());
		if (cell_client_backoff(c, deadline, &wait_ms) < 0)
			return bt_error_set(-EAGAIN, "%s", why);
	}
}

int
cell_family_delete(struct cell_client *c, const char *table,
    const char *family)
{
	(void)cell_client_route_learn(c, table);
	return family_call(c, TABLETFS__METHOD__FAMILY_DELETE, table, family,
	    NULL, NULL, 0, NULL, 0);
}

int
cell_family_set_gc(struct cell_client *c, const char *table,
    const char *family, const char *gc_policy)
{
	(void)cell_client_route_learn(c, table);
	return family_call(c, TABLETFS__METHOD__FAMILY_SET_GC, table, family,
	    NULL, gc_policy, 0, NULL, 0);
}

int
cell_group_set(struct cell_client *c, const char *table,
    const struct bt_group_spec *group)
{
	Tabletfs__GroupSetRequest req = TABLETFS__GROUP_SET_REQUEST__INIT;
	Tabletfs__Group g = TABLETFS__GROUP__INIT;

	if (group == NULL)
		return bt_error_set(-EINVAL, "no group");
	g.name = cell_str(group->name);
	g.has_block_size = g.has_compress = g.has_bloom = true;
	g.has_in_memory = true;
	g.block_size = group->block_size;
	g.compress = group->compress;
	g.bloom = group->bloom;
	g.in_memory = group->in_memory;
	req.table = cell_str(table);
	req.group = &g;
	(void)cell_client_route_learn(c, table);
	return schema_synced(c, CALL(c, GROUP_SET, &req, CELL_RETRY_ANY,
	    NULL, NULL));
}

int
cell_table_describe(struct cell_client *c, const char *table, bool groups,
    char **text)
{
	Tabletfs__TableRequest req = TABLETFS__TABLE_REQUEST__INIT;
	Tabletfs__DescribeReply *rep = NULL;
	const char *t;
	int rc;

	req.table = cell_str(table);
	if ((rc = CALL(c, TABLE_DESCRIBE, &req, CELL_RETRY_ANY,
	    &tabletfs__describe_reply__descriptor, &rep)) < 0)
		return rc;
	t = (groups ? rep->groups : rep->families);
	/* Freed with free() (tabletfs.h), as open_memstream's text is. */
	if ((*text = strdup(t != NULL ? t : "")) == NULL)
		rc = -ENOMEM;
	cell_client_free(&rep->base);
	return rc;
}

/* A server from before access control answers a method it does not
 * know with -ENOSYS: no access kept there. */
static int
access_unsupported(int rc)
{
	if (rc == -ENOSYS)
		return bt_error_set(-EOPNOTSUPP, "the cell's servers keep no "
		    "access (they predate it)");
	return rc;
}

int
cell_table_access(struct cell_client *c, const char *table,
    struct bt_access *table_access, struct bt_family_access **families,
    size_t *count)
{
	Tabletfs__TableRequest req = TABLETFS__TABLE_REQUEST__INIT;
	Tabletfs__AccessReply *rep = NULL;
	struct bt_family_access *out;
	int rc;

	req.table = cell_str(table);
	if ((rc = CALL(c, TABLE_ACCESS, &req, CELL_RETRY_ANY,
	    &tabletfs__access_reply__descriptor, &rep)) < 0)
		return access_unsupported(rc);
	if (rep->table == NULL) {
		rc = bt_error_set(BT_ECORRUPT, "TABLE_ACCESS: no table access");
		goto out;
	}
	/* With malloc: the caller frees it with free() (tabletfs.h). */
	if ((out = calloc(rep->n_families + 1, sizeof(*out))) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < rep->n_families; i++) {
		const Tabletfs__FamilyAccess *f = rep->families[i];

		if (f->name == NULL || f->access == NULL) {
			free(out);
			rc = bt_error_set(BT_ECORRUPT, "TABLE_ACCESS: a family "
			    "without its name or access");
			goto out;
		}
		snprintf(out[i].name, sizeof(out[i].name), "%s", f->name);
		out[i].access = (struct bt_access){ f->access->uid,
		    f->access->gid, f->access->mode };
	}
	*table_access = (struct bt_access){ rep->table->uid, rep->table->gid,
	    rep->table->mode };
	*families = out;
	*count = rep->n_families;
out:
	cell_client_free(&rep->base);
	return rc;
}

int
cell_access_set(struct cell_client *c, const char *table, const char *family,
    const struct bt_access *change)
{
	Tabletfs__AccessSetRequest req = TABLETFS__ACCESS_SET_REQUEST__INIT;
	Tabletfs__Access a = TABLETFS__ACCESS__INIT;

	a.has_uid = change->uid != BT_ACCESS_KEEP;
	a.uid = change->uid;
	a.has_gid = change->gid != BT_ACCESS_KEEP;
	a.gid = change->gid;
	a.has_mode = change->mode != BT_ACCESS_KEEP;
	a.mode = change->mode;
	req.table = cell_str(table);
	req.family = cell_str(family);
	req.change = &a;
	(void)cell_client_route_learn(c, table);
	/* Setting the same again changes nothing: safe to send twice. */
	return schema_synced(c, access_unsupported(CALL(c, ACCESS_SET, &req,
	    CELL_RETRY_ANY, NULL, NULL)));
}

/* ---- Administration ---- */

/* FLUSH and COMPACT act on what each server serves: at the root's
 * server, then at every other. */
int
cell_store_flush(struct cell_client *c)
{
	int rc;

	if ((rc = CALL(c, FLUSH, NULL, CELL_RETRY_ANY, NULL, NULL)) < 0)
		return rc;
	if ((rc = cell_client_route_learn(c, NULL)) < 0)
		return rc;
	return cell_client_call_others(c, TABLETFS__METHOD__FLUSH, NULL);
}

int
cell_store_compact(struct cell_client *c, const char *table, bool major)
{
	Tabletfs__TableRequest req = TABLETFS__TABLE_REQUEST__INIT;
	int rc;

	req.table = cell_str(table);
	req.has_major = true;
	req.major = major;
	if ((rc = CALL(c, COMPACT, &req, CELL_RETRY_ANY, NULL, NULL)) < 0)
		return rc;
	if ((rc = cell_client_route_learn(c, table)) < 0)
		return rc;
	return cell_client_call_others(c, TABLETFS__METHOD__COMPACT,
	    &req.base);
}

/*
 * SPLIT goes to the server of row's tablet, which splits what it serves
 * (docs/design.md section 5), as a call on the row: BT_ENOTSERVING
 * forgets the row's tablet and locates it again.  It is retried only
 * when certainly not sent: a split that took effect is -EEXIST when
 * sent again, so a retry could not tell it from one that already
 * started there.
 */
int
cell_table_split(struct cell_client *c, const char *table,
    struct bt_bytes row)
{
	Tabletfs__SplitRequest req = TABLETFS__SPLIT_REQUEST__INIT;

	req.table = cell_str(table);
	req.has_row = true;
	req.row = cell_bin(row);
	return cell_client_call_row(c, table, slice_make(row.data, row.size),
	    TABLETFS__METHOD__SPLIT, &req.base, CELL_RETRY_UNSENT, NULL, NULL,
	    NULL);
}

/* How long one server may take to say what its tablets hold. */
#define TABLETS_GATHER_MS 2000

/*
 * The figures of the tablets of info (n, from the root's server) that
 * the server named server serves, from its own TABLETS: each server
 * knows its own memtables and files.  A server that does not answer
 * within TABLETS_GATHER_MS (a stopped one, say) leaves them 0.
 */
static void
tablets_gather(struct cell_client *c, const char *table, const char *server,
    struct bt_tablet_info *info, size_t n)
{
	Tabletfs__TableRequest req = TABLETFS__TABLE_REQUEST__INIT;
	Tabletfs__TabletsReply *rep = NULL;
	char address[256];

	snprintf(address, sizeof(address), "%.*s",
	    (int)strcspn(server, "#"), server);
	req.table = cell_str(table);
	if (cell_client_call_at(c, address, TABLETFS__METHOD__TABLETS,
	    &req.base, TABLETS_GATHER_MS, &tabletfs__tablets_reply__descriptor,
	    (ProtobufCMessage **)&rep) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(info[i].server, server) != 0)
			continue;
		for (size_t k = 0; k < rep->n_tablets; k++) {
			const Tabletfs__TabletInfo *t = rep->tablets[k];

			if (t->id != info[i].id)
				continue;
			info[i].sstables = t->sstables;
			info[i].sstable_bytes = t->sstable_bytes;
			info[i].data_bytes = t->data_bytes;
			info[i].memtable_bytes = t->memtable_bytes;
			info[i].flushed_seq = t->flushed_seq;
		}
	}
	cell_client_free(&rep->base);
}

int
cell_table_tablets(struct cell_client *c, const char *table,
    struct bt_tablet_info **out, size_t *count)
{
	Tabletfs__TableRequest req = TABLETFS__TABLE_REQUEST__INIT;
	Tabletfs__TabletsReply *rep = NULL;
	struct bt_tablet_info *info;
	size_t n, bytes = 0;
	uint8_t *p;
	int rc;

	req.table = cell_str(table);
	if ((rc = CALL(c, TABLETS, &req, CELL_RETRY_ANY,
	    &tabletfs__tablets_reply__descriptor, &rep)) < 0)
		return rc;
	n = rep->n_tablets;
	for (size_t i = 0; i < n; i++)
		bytes += rep->tablets[i]->start.len + rep->tablets[i]->end.len +
		    (rep->tablets[i]->server != NULL ?
		    strlen(rep->tablets[i]->server) : 0) + 1;
	/* One allocation, as bt_tablets_free() expects. */
	if ((info = bt_calloc(1, (n + 1) * sizeof(*info) + bytes)) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	p = (uint8_t *)(info + n + 1);
	for (size_t i = 0; i < n; i++) {
		const Tabletfs__TabletInfo *t = rep->tablets[i];
		const char *server = t->server != NULL ? t->server : "";

		info[i].id = t->id;
		info[i].start.data = p;
		info[i].start.size = t->start.len;
		if (t->start.len > 0)
			memcpy(p, t->start.data, t->start.len);
		p += t->start.len;
		info[i].end.data = p;
		info[i].end.size = t->end.len;
		if (t->end.len > 0)
			memcpy(p, t->end.data, t->end.len);
		p += t->end.len;
		info[i].server = (const char *)p;
		memcpy(p, server, strlen(server) + 1);
		p += strlen(server) + 1;
		info[i].sstables = t->sstables;
		info[i].sstable_bytes = t->sstable_bytes;
		info[i].data_bytes = t->data_bytes;
		info[i].memtable_bytes = t->memtable_bytes;
		info[i].flushed_seq = t->flushed_seq;
	}
	/* Each server once, for the tablets it serves. */
	for (size_t i = 0; i < n; i++) {
		bool asked = info[i].server[0] == '\0';

		for (size_t k = 0; k < i && !asked; k++)
			asked = strcmp(info[k].server, info[i].server) == 0;
		if (!asked)
			tablets_gather(c, table, info[i].server, info, n);
	}
	bt_error_clear();
	*out = info;
	*count = n;
out:
	cell_client_free(&rep->base);
	return rc;
}

int
cell_store_check(struct cell_client *c,
    void (*report)(void *arg, const char *problem), void *arg,
    uint64_t *files, uint64_t *bytes)
{
	Tabletfs__CheckReply *rep = NULL;
	int rc;

	if ((rc = CALL(c, CHECK, NULL, CELL_RETRY_ANY,
	    &tabletfs__check_reply__descriptor, &rep)) < 0)
		return rc;
	for (size_t i = 0; report != NULL && i < rep->n_problems; i++)
		report(arg, rep->problems[i]);
	if (files != NULL)
		*files = rep->files;
	if (bytes != NULL)
		*bytes = rep->bytes;
	rc = rep->result;
	cell_client_free(&rep->base);
	return rc;
}

/* Add one server's counters to out: counts and bytes summed, the
 * highest sequence number, the first refusal and full disk. */
static void
stats_add(struct bt_stats *out, const Tabletfs__Stats *st)
{
	out->mutations += st->mutations;
	out->reads += st->reads;
	out->log_syncs += st->log_syncs;
	out->log_batches += st->log_batches;
	out->flushes += st->flushes;
	out->compactions += st->compactions;
	out->sstables += st->sstables;
	out->damaged_sstables += st->damaged_sstables;
	out->memtable_bytes += st->memtable_bytes;
	if (st->last_seq > out->last_seq)
		out->last_seq = st->last_seq;
	out->cache_hits += st->cache_hits;
	out->cache_misses += st->cache_misses;
	out->tablets += st->tablets;
	out->splits += st->splits;
	out->merges += st->merges;
	out->files_collected += st->files_collected;
	out->location_lookups += st->location_lookups;
	out->location_hits += st->location_hits;
	out->location_levels += st->location_levels;
	out->location_stale += st->location_stale;
	out->write_gathers += st->write_gathers;
	out->write_waits += st->write_waits;
	out->memtable_peak_bytes += st->memtable_peak_bytes;
	out->memory_trims += st->memory_trims;
	if (out->writes_refused == 0)
		out->writes_refused = st->writes_refused;
	if (out->disk_full == 0)
		out->disk_full = st->disk_full;
	out->reserve_bytes += st->reserve_bytes;
}

static int
stats_add_reply(void *arg, const char *server, ProtobufCMessage *reply)
{
	(void)server;
	stats_add(arg, (const Tabletfs__Stats *)reply);
	return 0;
}

/* The root's server's counters, and on a cell whose tablets are served
 * one by one every other server's added (what one of them does not
 * answer is left out). */
void
cell_store_get_stats(struct cell_client *c, struct bt_stats *out)
{
	Tabletfs__Stats *st = NULL;

	memset(out, 0, sizeof(*out));
	if (CALL(c, STATS, NULL, CELL_RETRY_ANY, &tabletfs__stats__descriptor,
	    &st) < 0)
		return;
	stats_add(out, st);
	cell_client_free(&st->base);
	(void)cell_client_route_learn(c, NULL);
	(void)cell_client_call_others_each(c, TABLETFS__METHOD__STATS, NULL,
	    &tabletfs__stats__descriptor, stats_add_reply, out);
}

uint64_t
cell_store_last_seq(struct cell_client *c)
{
	Tabletfs__LastSeqReply *rep = NULL;
	struct bt_stats st;
	uint64_t seq;
	int rc;

	/* Tablets served one by one: every server's, combined. */
	if ((rc = cell_client_last_seq(c, &seq)) <= 0)
		return rc == 0 ? seq : 0;
	rc = CALL(c, LAST_SEQ, NULL, CELL_RETRY_ANY,
	    &tabletfs__last_seq_reply__descriptor, &rep);
	if (rc == -ENOSYS) {		/* a server from before LAST_SEQ */
		cell_store_get_stats(c, &st);
		return st.last_seq;
	}
	if (rc < 0)
		return 0;
	seq = rep->last_seq;
	cell_client_free(&rep->base);
	return seq;
}

int
cell_store_space(struct cell_client *c, struct bt_space *out)
{
	Tabletfs__SpaceReply *rep = NULL;
	int rc;

	rc = CALL(c, SPACE, NULL, CELL_RETRY_ANY,
	    &tabletfs__space_reply__descriptor, &rep);
	if (rc == -ENOSYS)
		return bt_error_set(-EOPNOTSUPP, "the cell's servers do not "
		    "measure their storage (they predate it)");
	if (rc < 0)
		return rc;
	out->total_bytes = rep->total_bytes;
	out->free_bytes = rep->free_bytes;
	out->available_bytes = rep->available_bytes;
	out->block_size = rep->block_size;
	cell_client_free(&rep->base);
	return 0;
}
