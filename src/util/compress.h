/*
 * compress.h - Snappy block compression.
 */
#ifndef TABLETFS_UTIL_COMPRESS_H
#define TABLETFS_UTIL_COMPRESS_H

#include "util/buf.h"
#include "util/slice.h"

/* Replace out's content with in compressed.  0 or -ENOMEM. */
int compress_snappy(struct slice in, struct buf *out);

/*
 * Replace out's content with in uncompressed.  0, -ENOMEM, or
 * BT_ECORRUPT when in is not valid Snappy data or would expand beyond
 * max_len bytes.
 */
int uncompress_snappy(struct slice in, size_t max_len, struct buf *out);

#endif
