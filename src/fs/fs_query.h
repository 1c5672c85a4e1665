/*
 * fs_query.h - the filters of a query directory, TABLE/.filter/@KEY=VALUE/
 * ... (tabletfs(5), "Query directories"): the path components under
 * .filter, each one filter, parsed into read options.  Apart from the
 * rest of src/fs (no FUSE), so that its fuzz target links it alone.
 *
 * A component is '@', a key, '=' and a value spelled as names are
 * (util/names.h: %XX for '/', '%', '@' and every byte that is not
 * printable ASCII or UTF-8), so any bytes of a regex round-trip.  Keys:
 *
 *   row=RE  family=RE  qualifier=RE  value=RE      the regexes
 *   column=F  column=F:RE                          a family, or its
 *                                                  qualifiers matching RE
 *                                                  (repeatable: any of)
 *   start-ts=T  end-ts=T                           versions in [T1, T2)
 *   cells-per-column=N  cells-per-row=N  cells-per-row-offset=N
 *
 * Every key but column appears at most once.
 */
#ifndef TABLETFS_FS_FS_QUERY_H
#define TABLETFS_FS_FS_QUERY_H

#include "api/tabletfs.h"
#include "util/buf.h"

#define FS_QUERY_MAX_COLUMNS	16

/* A parsed query: ro borrows from the rest of the struct. */
struct fs_query {
	struct bt_read_options ro;
	struct bt_column columns[FS_QUERY_MAX_COLUMNS];
	struct bt_column column_regexes[FS_QUERY_MAX_COLUMNS];
	char families[FS_QUERY_MAX_COLUMNS * 2][65];
	struct buf bytes;	/* decoded values */
};

/* Whether name can be a query component (it starts with '@'). */
static inline int
fs_query_is_component(const char *name)
{
	return name[0] == '@';
}

/*
 * Parse the components of spec, joined by '/' (an empty spec is no
 * filter), into q, which the caller releases with fs_query_release()
 * whatever the result.  0, -EINVAL for a component that is not a filter
 * (unknown or repeated key, bad spelling, bad number, a time range that
 * holds no time, too many columns), or -ENOMEM.  Regexes are not
 * compiled here: a bad one fails the read that uses it.
 */
int fs_query_parse(const char *spec, struct fs_query *q);
void fs_query_release(struct fs_query *q);

#endif
