/*
 * sst_util.h - helpers shared by the SSTable tests (test_sstable.c,
 * test_sst_bounds.c): a table of rows whose columns say their own key and
 * value, a table of listed keys, the row filter_prefix for them, a
 * visit_prefix callback that logs what it is given and checks it against
 * the rows, and writing a table image back after editing it.
 */
#ifndef TABLETFS_TESTS_SST_UTIL_H
#define TABLETFS_TESTS_SST_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "sstable/sstable.h"
#include "tap.h"
#include "util/env.h"

/* The filter_prefix of the row tables: the row, through its slash
 * ("row000123/"); the whole key when it has none. */
size_t row_prefix(struct slice key);

/* What a visit_prefix walk was given: prefix_collect logs each entry,
 * the key copied and the value borrowed, and returns stop_rc from the
 * stop_after-th. */
struct prefix_log {
	struct slice keys[512], values[512];	/* values borrowed */
	uint8_t key_bytes[512][32];
	size_t n;
	size_t stop_after;	/* 0: never */
	int stop_rc;
};

int prefix_collect(void *arg, struct slice key, struct slice value);

/* Whether l holds exactly the first count columns of row, keys and
 * values (the values read after the walk returned). */
bool prefix_log_is(const struct prefix_log *l, int row, int count);

/* Build path with o from rows 0, step, 2 * step, ... below rows, row r
 * holding the columns "rowRRRR/colCCC" for C below cols(r), each with
 * value "value of " and its key. */
void build_rows_table(struct env *env, const char *path,
    const struct sst_options *o, int rows, int step, int (*cols)(int),
    struct sst_info *info);

/* Build path (replacing it) with o from the NULL-terminated keys, each
 * with the value value(arg, key) gives. */
void build_keys_table(struct env *env, const char *path,
    const struct sst_options *o, const char *const *keys,
    struct slice (*value)(void *arg, const char *key), void *arg,
    struct sst_info *info);

/* Write n bytes at p as the file path, replacing it. */
int write_file(struct env *env, const char *path, const uint8_t *p, size_t n);

#endif
