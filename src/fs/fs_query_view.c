/*
 * fs_query_view.c - the files of a query directory (fs_query.h,
 * tabletfs(5) "Query directories"): a row's cells that the query's
 * filters select, in tabletctl's lookup format.  The listing is
 * fs_snapshot.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "ctl/ctl.h"
#include "fs/fs.h"
#include "fs/fs_query.h"

int
fs_query_row_read(struct fs *fs, const struct coord *c, struct buf *out)
{
	struct fs_query q;
	struct bt_row *row = NULL;
	char *text = NULL;
	size_t len = 0;
	FILE *f;
	int rc;

	if ((rc = fs_query_parse(c->query, &q)) < 0)
		goto out;
	if (out == NULL)
		q.ro.keys_only = true;
	rc = bt_read_row(fs->store, c->table, c->row, &q.ro, &row);
	if (rc == BT_NOTFOUND)
		rc = -ENOENT;
	if (rc < 0 || out == NULL)
		goto out;
	if ((f = open_memstream(&text, &len)) == NULL) {
		rc = -errno;
		goto out;
	}
	ctl_row_print(f, row);
	if (fclose(f) != 0) {
		rc = -ENOMEM;
		goto out;
	}
	rc = buf_set(out, text, len);
out:
	free(text);
	bt_row_free(row);
	fs_query_release(&q);
	return rc;
}
