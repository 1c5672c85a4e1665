/* coding.c - fixed-width and varint integer coding. */
#include "util/coding.h"
#include "util/error.h"

void
put_fixed32(uint8_t *dst, uint32_t v)
{
	dst[0] = (uint8_t)v;
	dst[1] = (uint8_t)(v >> 8);
	dst[2] = (uint8_t)(v >> 16);
	dst[3] = (uint8_t)(v >> 24);
}

void
put_fixed64(uint8_t *dst, uint64_t v)
{
	put_fixed32(dst, (uint32_t)v);
	put_fixed32(dst + 4, (uint32_t)(v >> 32));
}

uint32_t
get_fixed32(const uint8_t *src)
{
	return (uint32_t)src[0] | (uint32_t)src[1] << 8 |
	    (uint32_t)src[2] << 16 | (uint32_t)src[3] << 24;
}

uint64_t
get_fixed64(const uint8_t *src)
{
	return (uint64_t)get_fixed32(src) | (uint64_t)get_fixed32(src + 4) << 32;
}

/* Spelled out byte by byte (rather than as a loop) so that compilers
 * recognise a byte swap: every internal key decode reads two of these. */
void
put_be64(uint8_t *dst, uint64_t v)
{
	dst[0] = (uint8_t)(v >> 56);
	dst[1] = (uint8_t)(v >> 48);
	dst[2] = (uint8_t)(v >> 40);
	dst[3] = (uint8_t)(v >> 32);
	dst[4] = (uint8_t)(v >> 24);
	dst[5] = (uint8_t)(v >> 16);
	dst[6] = (uint8_t)(v >> 8);
	dst[7] = (uint8_t)v;
}

uint8_t *
encode_varint32(uint8_t *dst, uint32_t v)
{
	return encode_varint64(dst, v);
}

uint8_t *
encode_varint64(uint8_t *dst, uint64_t v)
{
	while (v >= 0x80) {
		*dst++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*dst++ = (uint8_t)v;
	return dst;
}

int
varint_length(uint64_t v)
{
	int n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

int
buf_put_fixed32(struct buf *b, uint32_t v)
{
	uint8_t tmp[4];

	put_fixed32(tmp, v);
	return buf_append(b, tmp, sizeof(tmp));
}

int
buf_put_fixed64(struct buf *b, uint64_t v)
{
	uint8_t tmp[8];

	put_fixed64(tmp, v);
	return buf_append(b, tmp, sizeof(tmp));
}

int
buf_put_varint32(struct buf *b, uint32_t v)
{
	return buf_put_varint64(b, v);
}

int
buf_put_varint64(struct buf *b, uint64_t v)
{
	uint8_t tmp[VARINT64_MAX_BYTES];

	return buf_append(b, tmp, (size_t)(encode_varint64(tmp, v) - tmp));
}

int
buf_put_lenprefixed(struct buf *b, struct slice s)
{
	int rc;

	if ((rc = buf_put_varint64(b, s.n)) < 0)
		return rc;
	return buf_append(b, s.p, s.n);
}

/* Decode a varint of at most max_bytes whose value fits in max_bits. */
static int
get_varint(struct slice *in, uint64_t *v, int max_bytes, int max_bits)
{
	uint64_t result = 0;

	for (int i = 0; i < max_bytes && (size_t)i < in->n; i++) {
		uint64_t byte = in->p[i];
		int shift = 7 * i;

		/* The last byte may only carry the bits that remain. */
		if (shift + 7 > max_bits && (byte & 0x7f) >> (max_bits - shift))
			return BT_ECORRUPT;
		result |= (byte & 0x7f) << shift;
		if ((byte & 0x80) == 0) {
			*v = result;
			slice_skip(in, (size_t)i + 1);
			return 0;
		}
	}
	return BT_ECORRUPT;
}

int
get_varint32(struct slice *in, uint32_t *v)
{
	uint64_t v64;
	int rc;

	if ((rc = get_varint(in, &v64, VARINT32_MAX_BYTES, 32)) < 0)
		return rc;
	*v = (uint32_t)v64;
	return 0;
}

int
get_varint64(struct slice *in, uint64_t *v)
{
	return get_varint(in, v, VARINT64_MAX_BYTES, 64);
}

int
get_lenprefixed(struct slice *in, struct slice *out)
{
	struct slice rest = *in;
	uint64_t n;
	int rc;

	if ((rc = get_varint64(&rest, &n)) < 0)
		return rc;
	if (n > rest.n)
		return BT_ECORRUPT;
	*out = slice_make(rest.p, (size_t)n);
	slice_skip(&rest, (size_t)n);
	*in = rest;
	return 0;
}
