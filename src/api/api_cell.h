/*
 * api_cell.h - the C API's calls on a cell (bt_store_open() of a
 * "zk://" address): each bt_ call of tabletfs.h as its tabletfs.proto
 * request through cell_client.h, with the same arguments, results and
 * errors as on an embedded store.  api.c checks what it checks for both
 * and calls these; rows come back as cells_row for api.c to export.
 */
#ifndef TABLETFS_API_API_CELL_H
#define TABLETFS_API_API_CELL_H

#include <protobuf-c/protobuf-c.h>

#include "api/cell_client.h"
#include "api/tabletfs.h"
#include "tablet/cells.h"

/* The generated messages hold strings as char * and bytes as
 * ProtobufCBinaryData; a request only reads them. */
static inline char *
cell_str(const char *s)
{
	return (char *)s;
}

static inline ProtobufCBinaryData
cell_bin(struct bt_bytes b)
{
	return (ProtobufCBinaryData){ b.size, (uint8_t *)b.data };
}

/* owner NULL: the serving process's (as an embedded bt_table_create()). */
int cell_table_create(struct cell_client *c, const char *table,
    const struct bt_access *owner,
    const struct bt_family_spec *families, size_t family_count,
    const struct bt_bytes *splits, size_t split_count, uint64_t tablet_size);
/* bt_table_access() and bt_access_set() (TABLE_ACCESS, ACCESS_SET):
 * -EOPNOTSUPP from a server that predates them. */
int cell_table_access(struct cell_client *c, const char *table,
    struct bt_access *table_access, struct bt_family_access **families,
    size_t *count);
int cell_access_set(struct cell_client *c, const char *table,
    const char *family, const struct bt_access *change);
int cell_table_delete(struct cell_client *c, const char *table);
int cell_table_list(struct cell_client *c, char ***names, size_t *count);
int cell_family_create(struct cell_client *c, const char *table,
    const struct bt_family_spec *family);
int cell_family_delete(struct cell_client *c, const char *table,
    const char *family);
int cell_family_set_gc(struct cell_client *c, const char *table,
    const char *family, const char *gc_policy);
int cell_group_set(struct cell_client *c, const char *table,
    const struct bt_group_spec *group);
int cell_table_describe(struct cell_client *c, const char *table,
    bool groups, char **text);
int cell_table_usage(struct cell_client *c, const char *table,
    struct bt_table_usage **out);
/* A zeroed usage with room for the families and groups, freed with
 * bt_table_usage_free(); and its table totals, set from its families
 * and groups (api.c, for both kinds of store). */
struct bt_table_usage *api_table_usage_alloc(size_t family_count,
    size_t group_count);
void api_table_usage_sum(struct bt_table_usage *u,
    uint64_t other_memory_bytes);

/* bt_mutate_row() when check is false; otherwise a check-and-mutate of
 * family:qualifier against expected (NULL: the column is absent) and,
 * when expected_ts >= 0, its timestamp (bt_check_version_and_mutate). */
int cell_mutate_row(struct cell_client *c, const char *table,
    struct bt_bytes row, const struct bt_mutation *muts, size_t count,
    bool sync, bool check, const char *family, struct bt_bytes qualifier,
    const struct bt_bytes *expected, int64_t expected_ts, bool *applied,
    int64_t *stamp);

/* Whether muts give the same row however often they are applied: no
 * put with a server stamp (a second copy would add a second version). */
bool cell_mutations_idempotent(const struct bt_mutation *muts,
    size_t count);

/* bt_mutate_rows() (results has room for n, zeroed; api_cell_batch.c). */
int cell_mutate_rows(struct cell_client *c, const char *table,
    const struct bt_row_mutation *rows, size_t n, bool sync, int *results);

/* The read-modify-writes on one column (bt_increment, bt_append,
 * bt_put_newest, bt_move_version). */

enum cell_rmw_kind {
	CELL_RMW_INCREMENT,
	CELL_RMW_APPEND,
	CELL_RMW_PUT_NEWEST,
	CELL_RMW_MOVE_VERSION,
};
struct cell_rmw {
	enum cell_rmw_kind kind;
	int64_t delta;			/* increment */
	struct bt_bytes bytes;		/* append, put_newest */
	int64_t src_ts;			/* move_version */
	const char *dst_family;
	struct bt_bytes dst_qualifier;
	int64_t dst_ts;
};
int cell_read_modify_write(struct cell_client *c, const char *table,
    struct bt_bytes row, const char *family, struct bt_bytes qualifier,
    const struct cell_rmw *op, bool sync, int64_t *result, int64_t *stamp);
int cell_move_column(struct cell_client *c, const char *table,
    struct bt_bytes row, const struct bt_column *src,
    const struct bt_column *dst, bool sync);

/* 0 with out filled, or BT_NOTFOUND. */
int cell_read_row(struct cell_client *c, const char *table,
    struct bt_bytes row, const struct bt_read_options *ropts,
    struct cells_row *out);

/*
 * A scan of rows [start, end) (empty end: to the end of the table), read
 * from a scanner on the server in batches.  When the scanner is lost (its
 * server failed or dropped it), a new one resumes after the last row
 * returned, so a scan that outlives a failover sees each row once, in
 * order, though not all as of one instant.
 */
struct cell_scan;
int cell_scan_open(struct cell_client *c, const char *table,
    struct bt_bytes start, bool start_exclusive, struct bt_bytes end,
    const struct bt_read_options *ropts, bool no_cache_fill, uint64_t limit,
    struct cell_scan **out);
/* 0 with the next row in out, or BT_DONE. */
int cell_scan_next(struct cell_scan *sc, struct cells_row *out);
/* Accepts NULL. */
void cell_scan_close(struct cell_scan *sc);

/*
 * A bulk load (bt_bulk_* on a cell; api_cell_bulk.c): kept by the
 * serving server on this client's connection to it, fed in batches.
 * cell_bulk_close() accepts NULL and aborts a load not committed.
 */
struct cell_bulk;
int cell_bulk_open(struct cell_client *c, const char *table,
    size_t memory_budget, struct cell_bulk **out);
int cell_bulk_put(struct cell_bulk *b, struct bt_bytes row,
    const char *family, struct bt_bytes qualifier, int64_t ts,
    struct bt_bytes value);
int cell_bulk_commit(struct cell_bulk *b, struct bt_bulk_stats *out);
void cell_bulk_close(struct cell_bulk *b);

int cell_store_flush(struct cell_client *c);
int cell_store_compact(struct cell_client *c, const char *table, bool major);
int cell_table_split(struct cell_client *c, const char *table,
    struct bt_bytes row);
int cell_table_tablets(struct cell_client *c, const char *table,
    struct bt_tablet_info **out, size_t *count);
int cell_store_check(struct cell_client *c,
    void (*report)(void *arg, const char *problem), void *arg,
    uint64_t *files, uint64_t *bytes);
/* bt_stats as the root's server counts them, with every other server's
 * added when the tablets are served one by one (counts and bytes
 * summed, the highest last_seq, the first refusal); zero when the root's
 * server cannot be reached, and a server that does not answer left
 * out. */
void cell_store_get_stats(struct cell_client *c, struct bt_stats *out);
/* bt_store_last_seq() (LAST_SEQ; STATS from a server before it): 0 when
 * no server can be reached. */
uint64_t cell_store_last_seq(struct cell_client *c);
/* bt_store_space() (SPACE): -EOPNOTSUPP from a server before it. */
int cell_store_space(struct cell_client *c, struct bt_space *out);

#endif
