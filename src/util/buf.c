/* buf.c - growable byte buffer. */
#include <assert.h>
#include <errno.h>
#include <string.h>

#include "util/alloc.h"
#include "util/buf.h"

void
buf_init(struct buf *b)
{
	b->p = NULL;
	b->n = 0;
	b->cap = 0;
}

void
buf_release(struct buf *b)
{
	bt_free(b->p);
	buf_init(b);
}

int
buf_reserve(struct buf *b, size_t extra)
{
	size_t want, cap;
	uint8_t *p;

	if (extra > SIZE_MAX - b->n)
		return -ENOMEM;
	assert(b->n <= b->cap);	/* callers that set n directly keep it so */
	want = b->n + extra;
	if (want <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 64;
	while (cap < want)
		cap = cap > SIZE_MAX / 2 ? want : cap * 2;
	if ((p = bt_realloc(b->p, cap)) == NULL)
		return -ENOMEM;
	b->p = p;
	b->cap = cap;
	return 0;
}

int
buf_reserve_exact(struct buf *b, size_t extra)
{
	uint8_t *p;

	if (extra > SIZE_MAX - b->n)
		return -ENOMEM;
	if (b->n + extra <= b->cap)
		return 0;
	if ((p = bt_realloc(b->p, b->n + extra)) == NULL)
		return -ENOMEM;
	b->p = p;
	b->cap = b->n + extra;
	return 0;
}

int
buf_append(struct buf *b, const void *p, size_t n)
{
	int rc;

	if (n == 0)
		return 0;
	if ((rc = buf_reserve(b, n)) < 0)
		return rc;
	memcpy(b->p + b->n, p, n);
	b->n += n;
	return 0;
}

int
buf_set(struct buf *b, const void *p, size_t n)
{
	int rc;

	if (n > b->cap && (rc = buf_reserve(b, n - b->n)) < 0)
		return rc;
	if (n > 0)
		memmove(b->p, p, n);
	b->n = n;
	return 0;
}
