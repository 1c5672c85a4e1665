/*
 * compress.c - Snappy block compression through Snappy's C API.
 *
 * Snappy's decompressor checks every copy against its input and output
 * bounds, so corrupt input yields an error status rather than a crash.
 * Before allocating we check the declared length against max_len and
 * against what in.n bytes can possibly expand to (compress_max_expansion).
 */
#include <errno.h>

#include <snappy-c.h>

#include "util/compress.h"
#include "util/error.h"

/* Snappy wants a real pointer even for empty input. */
static const char compress_empty[1];

static const char *
compress_bytes(struct slice s)
{
	return s.n > 0 ? (const char *)s.p : compress_empty;
}

int
compress_snappy(struct slice in, struct buf *out)
{
	size_t max = snappy_max_compressed_length(in.n);
	size_t len = max;
	snappy_status st;
	int rc;

	buf_clear(out);
	if ((rc = buf_reserve(out, max)) < 0)
		return rc;
	st = snappy_compress(compress_bytes(in), in.n, (char *)out->p, &len);
	if (st != SNAPPY_OK)
		return bt_error_set(-EINVAL, "snappy: compress of %zu bytes "
		    "failed (status %d)", in.n, (int)st);
	out->n = len;
	return 0;
}

/*
 * The most a Snappy stream of n bytes can expand to.  Its densest element
 * is a 3-byte copy of 64 bytes (a 2-byte copy yields at most 11, a literal
 * never more than it holds), so no valid stream holds more than 64 bytes
 * per 3 of its own; the varint header only adds slack.  A header claiming
 * more is corrupt, and refusing it keeps a damaged file from allocating up
 * to 4 GiB for a block of a few bytes.
 */
static size_t
compress_max_expansion(size_t n)
{
	return n / 3 * 64 + 64;
}

int
uncompress_snappy(struct slice in, size_t max_len, struct buf *out)
{
	const char *src = compress_bytes(in);
	size_t len, got;
	snappy_status st;
	int rc;

	if (snappy_uncompressed_length(src, in.n, &len) != SNAPPY_OK)
		return bt_error_set(BT_ECORRUPT, "snappy: bad length header "
		    "in %zu-byte block", in.n);
	if (len > max_len)
		return bt_error_set(BT_ECORRUPT, "snappy: block would expand "
		    "to %zu bytes, limit %zu", len, max_len);
	if (len > compress_max_expansion(in.n))
		return bt_error_set(BT_ECORRUPT, "snappy: %zu-byte block "
		    "claims %zu bytes, more than Snappy can encode in it",
		    in.n, len);
	buf_clear(out);
	if ((rc = buf_reserve_exact(out, len > 0 ? len : 1)) < 0)
		return rc;
	got = len;
	st = snappy_uncompress(src, in.n, (char *)out->p, &got);
	if (st != SNAPPY_OK || got != len)
		return bt_error_set(BT_ECORRUPT, "snappy: corrupt %zu-byte "
		    "block (status %d)", in.n, (int)st);
	out->n = len;
	return 0;
}
