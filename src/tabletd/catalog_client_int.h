/*
 * catalog_client_int.h - what catalog_client.c takes from
 * catalog_client_pb.c: the replies of the CATALOG_* methods turned into
 * catalog.h's structs, allocated as the local catalog allocates them
 * (catalog.h, struct catalog_remote_ops), so that its free functions
 * release them.
 *
 * Each returns 0 with its outputs set, -ENOMEM, or -EPROTO with a detail
 * saying what of the reply breaks a limit of those structs (a name absent
 * or too long); the outputs are set only on success.  A reply's found =
 * false is the caller's to turn into BT_NOTFOUND before.
 */
#ifndef TABLETFS_TABLETD_CATALOG_CLIENT_INT_H
#define TABLETFS_TABLETD_CATALOG_CLIENT_INT_H

#include <stddef.h>

#include "catalog/catalog.h"
#include "rpc/tabletfs.pb-c.h"

/* p may be NULL (a reply without its table): -EPROTO. */
int catalog_client_table_in(const Tabletfs__CatalogTable *p,
    struct catalog_table **out);
/* A NULL-terminated array, allocated even when empty. */
int catalog_client_names_in(const Tabletfs__TableListReply *r,
    char ***names, size_t *count);
/* *out NULL when there are none. */
int catalog_client_tablets_in(const Tabletfs__CatalogTabletsReply *r,
    struct catalog_tablet **out, size_t *count);
int catalog_client_files_in(const Tabletfs__CatalogFilesReply *r,
    struct catalog_file **out, size_t *count);

#endif
