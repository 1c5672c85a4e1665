/*
 * catalog_text.h - what a catalog call answers, rendered as text with
 * every field of its result ("rc N" first), so that two catalogs (a local
 * one and a remote one) compare as strings and a mismatch prints both.
 * Each returns a string to free(); results are freed as the catalog's
 * contract says.
 */
#ifndef TABLETFS_TESTS_CATALOG_TEXT_H
#define TABLETFS_TESTS_CATALOG_TEXT_H

#include <stdint.h>

#include "catalog/catalog.h"

/* A table (rc: the lookup's result; t is read only when it is 0). */
char *catalog_table_text(int rc, const struct catalog_table *t);
/* catalog_table_get() by name, or by id when name is NULL. */
char *catalog_text_table(struct catalog *c, const char *name, uint64_t id);
/* catalog_tablets_list(); *countp (may be NULL): the tablets, 0 on
 * error. */
char *catalog_text_tablets(struct catalog *c, uint64_t table_id,
    size_t *countp);
/* catalog_files_list(); *first (may be NULL): the newest file, if any. */
char *catalog_text_files(struct catalog *c, uint64_t tablet_id,
    struct catalog_file *first);
/* catalog_table_list(), its NULL end checked. */
char *catalog_text_names(struct catalog *c);
/* A table's tablets and every tablet's files: "nothing changed" is the
 * same text before and after. */
char *catalog_text_state(struct catalog *c, uint64_t table_id);

#endif
