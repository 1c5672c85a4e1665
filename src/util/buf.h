/*
 * buf.h - a growable byte buffer that owns its bytes.
 *
 * struct buf is embedded by its user: buf_init() before use, buf_release()
 * to free (safe on an initialized, empty buffer).  Growth can fail with
 * -ENOMEM, in which case the buffer is unchanged.
 */
#ifndef TABLETFS_UTIL_BUF_H
#define TABLETFS_UTIL_BUF_H

#include <stddef.h>
#include <stdint.h>

#include "util/slice.h"

struct buf {
	uint8_t *p;
	size_t n;	/* bytes in use */
	size_t cap;	/* bytes allocated */
};

void buf_init(struct buf *b);
void buf_release(struct buf *b);

/* Make room for at least extra more bytes.  0 or -ENOMEM. */
int buf_reserve(struct buf *b, size_t extra);
/*
 * Make room for exactly extra more bytes when there is not enough: no
 * rounding up, for a buffer filled once and then kept (a cached block), so
 * that it need not be shrunk, and copied, afterwards.  0 or -ENOMEM.
 */
int buf_reserve_exact(struct buf *b, size_t extra);

/* Append n bytes.  0 or -ENOMEM. */
int buf_append(struct buf *b, const void *p, size_t n);

/* Replace the content with the n bytes at p.  0 or -ENOMEM. */
int buf_set(struct buf *b, const void *p, size_t n);

/* Forget the content, keep the allocation. */
static inline void
buf_clear(struct buf *b)
{
	b->n = 0;
}

/* Borrow the content as a slice, valid until the buffer next changes. */
static inline struct slice
buf_slice(const struct buf *b)
{
	return slice_make(b->p, b->n);
}

#endif
