/*
 * fs_control.c - the text of the control files: MOUNT/.status,
 * TABLE/.tablets and TABLE/.schema.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/fs.h"
#include "util/names.h"

int
fs_status_text(struct fs *fs, struct buf *out)
{
	struct bt_stats st;
	char text[1024], writes[128];
	int n;

	bt_store_get_stats(fs->store, &st);
	if (st.writes_refused < 0)
		snprintf(writes, sizeof(writes), "refused (%s): remount to "
		    "replay the log", bt_strerror(st.writes_refused));
	else if (st.disk_full < 0)
		snprintf(writes, sizeof(writes), "deletes only (disk full): "
		    "delete data and compact to free room");
	else
		snprintf(writes, sizeof(writes), "%s", fs->read_only ?
		    "refused (read-only mount)" : "accepted");
	n = snprintf(text, sizeof(text),
	    "daemon: tabletfs pid %ld\n"
	    "store: %s\n"
	    "mode: %s%s\n"
	    "writes: %s\n"
	    "disk: %s\n"
	    "reserve_bytes: %" PRIu64 "\n"
	    "mutations: %" PRIu64 "\n"
	    "reads: %" PRIu64 "\n"
	    "log_syncs: %" PRIu64 "\n"
	    "log_batches: %" PRIu64 "\n"
	    "flushes: %" PRIu64 "\n"
	    "compactions: %" PRIu64 "\n"
	    "sstables: %" PRIu64 "\n"
	    "damaged_sstables: %" PRIu64 "\n"
	    "memtable_bytes: %" PRIu64 "\n"
	    "last_seq: %" PRIu64 "\n"
	    "cache_hits: %" PRIu64 "\n"
	    "cache_misses: %" PRIu64 "\n"
	    "tablets: %" PRIu64 "\n"
	    "splits: %" PRIu64 "\n"
	    "merges: %" PRIu64 "\n"
	    "files_collected: %" PRIu64 "\n"
	    "location_lookups: %" PRIu64 "\n"
	    "location_hits: %" PRIu64 "\n"
	    "location_levels: %" PRIu64 "\n"
	    "location_stale: %" PRIu64 "\n",
	    (long)getpid(), fs->store_path, fs->read_only ? "ro" : "rw",
	    fs->sync_always ? ",sync=always" : "", writes,
	    st.disk_full < 0 ? "full" : "ok", st.reserve_bytes, st.mutations,
	    st.reads,
	    st.log_syncs, st.log_batches, st.flushes, st.compactions,
	    st.sstables, st.damaged_sstables, st.memtable_bytes, st.last_seq,
	    st.cache_hits, st.cache_misses, st.tablets, st.splits, st.merges,
	    st.files_collected, st.location_lookups, st.location_hits,
	    st.location_levels, st.location_stale);
	return buf_set(out, text, (size_t)n < sizeof(text) ? (size_t)n :
	    sizeof(text) - 1);
}

/*
 * Append a tablet bound as one blank-free field: its escaped name with
 * spaces as %20, "-" for empty, and a key "-" as %2D.  Both are valid
 * (non-canonical) spellings of the same bytes.
 */
static int
bound_append(struct bt_bytes b, struct buf *out)
{
	struct buf name;
	size_t i;
	int rc;

	if (b.size == 0)
		return buf_append(out, "-", 1);
	if (b.size == 1 && *(const char *)b.data == '-')
		return buf_append(out, "%2D", 3);
	buf_init(&name);
	if ((rc = names_encode(slice_make(b.data, b.size), &name)) < 0)
		goto out;
	for (i = 0; i < name.n && rc == 0; i++)
		rc = name.p[i] == ' ' ? buf_append(out, "%20", 3) :
		    buf_append(out, &name.p[i], 1);
out:
	buf_release(&name);
	return rc;
}

int
fs_tablets_text(struct fs *fs, const char *table, struct buf *out)
{
	struct bt_tablet_info *tablets;
	char text[128];
	size_t count;
	int rc, n;

	buf_clear(out);
	if ((rc = bt_table_tablets(fs->store, table, &tablets, &count)) < 0)
		return rc;
	for (size_t i = 0; i < count && rc == 0; i++) {
		n = snprintf(text, sizeof(text), " sstables=%" PRIu64
		    " bytes=%" PRIu64 " memtable=%" PRIu64 "\n",
		    tablets[i].sstables, tablets[i].sstable_bytes,
		    tablets[i].memtable_bytes);
		if ((rc = bound_append(tablets[i].start, out)) < 0 ||
		    (rc = buf_append(out, " ", 1)) < 0 ||
		    (rc = bound_append(tablets[i].end, out)) < 0)
			break;
		rc = buf_append(out, text, (size_t)n);
	}
	bt_tablets_free(tablets);
	return rc;
}

/*
 * TABLE/.schema: the families (bt_table_describe()), a blank line, then
 * what the table takes per family, locality group and in all
 * (bt_table_describe_usage(); tabletfs(5)), then who may use the table
 * and its families (bt_table_describe_access(); none from a cell whose servers
 * predate it).
 */
int
fs_schema_text(struct fs *fs, const char *table, struct buf *out)
{
	char *text, *usage, *access = NULL;
	int rc;

	if ((rc = bt_table_describe(fs->store, table, &text)) < 0)
		return rc;
	if ((rc = bt_table_describe_usage(fs->store, table, &usage)) < 0)
		goto out;
	if ((rc = bt_table_describe_access(fs->store, table, &access)) < 0 &&
	    rc != -EOPNOTSUPP)
		goto out_usage;
	if ((rc = buf_set(out, text, strlen(text))) == 0 &&
	    (rc = buf_append(out, "\n", 1)) == 0)
		rc = buf_append(out, usage, strlen(usage));
	if (rc == 0 && access != NULL)
		rc = buf_append(out, access, strlen(access));
	free(access);
out_usage:
	free(usage);
out:
	free(text);
	return rc;
}

int
fs_control_text(struct fs *fs, const struct coord *c, struct buf *out)
{
	switch (c->kind) {
	case NODE_STATUS:
		return fs_status_text(fs, out);
	case NODE_TABLETS:
		return fs_tablets_text(fs, c->table, out);
	case NODE_SCHEMA:
		return fs_schema_text(fs, c->table, out);
	case NODE_QUERY_ROW:
		return fs_query_row_read(fs, c, out);
	default:
		return -EINVAL;
	}
}
