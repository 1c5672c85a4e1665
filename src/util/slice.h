/*
 * slice.h - a borrowed run of bytes.
 *
 * Keys and values travel as slices.  A slice never owns its bytes: whoever
 * hands one out says in its header how long the bytes stay valid (for an
 * iterator, until the next call on it).
 */
#ifndef TABLETFS_UTIL_SLICE_H
#define TABLETFS_UTIL_SLICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct slice {
	const uint8_t *p;
	size_t n;
};

static inline struct slice
slice_make(const void *p, size_t n)
{
	struct slice s = { (const uint8_t *)p, n };
	return s;
}

/* A slice over a NUL-terminated string, without the NUL. */
static inline struct slice
slice_str(const char *s)
{
	return slice_make(s, strlen(s));
}

/* Lexicographic byte order; a proper prefix sorts first.  <0, 0, >0. */
static inline int
slice_compare(struct slice a, struct slice b)
{
	size_t n = a.n < b.n ? a.n : b.n;
	int c = n ? memcmp(a.p, b.p, n) : 0;

	if (c != 0)
		return c;
	return a.n < b.n ? -1 : a.n > b.n;
}

static inline bool
slice_equal(struct slice a, struct slice b)
{
	return a.n == b.n && (a.n == 0 || memcmp(a.p, b.p, a.n) == 0);
}

static inline bool
slice_starts_with(struct slice s, struct slice prefix)
{
	return s.n >= prefix.n &&
	    (prefix.n == 0 || memcmp(s.p, prefix.p, prefix.n) == 0);
}

/* Drop the first n bytes (n <= s->n). */
static inline void
slice_skip(struct slice *s, size_t n)
{
	s->p += n;
	s->n -= n;
}

#endif
