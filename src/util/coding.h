/*
 * coding.h - fixed-width and varint integer coding.
 *
 * Fixed-width integers on disk are little-endian (put_fixed32, ...), except
 * where a format needs byte order to follow numeric order, which uses the
 * big-endian put_be64/get_be64.  Varints are LEB128 as LevelDB and protocol
 * buffers write them: 7 bits a byte, low group first, high bit = more.
 */
#ifndef TABLETFS_UTIL_CODING_H
#define TABLETFS_UTIL_CODING_H

#include <stdint.h>

#include "util/buf.h"
#include "util/slice.h"

#define VARINT32_MAX_BYTES 5
#define VARINT64_MAX_BYTES 10

void put_fixed32(uint8_t *dst, uint32_t v);
void put_fixed64(uint8_t *dst, uint64_t v);
uint32_t get_fixed32(const uint8_t *src);
uint64_t get_fixed64(const uint8_t *src);
void put_be64(uint8_t *dst, uint64_t v);

/* Inline: internal keys and the memtable's comparisons read these on every
 * entry (compilers turn it into one load and a byte swap). */
static inline uint64_t
get_be64(const uint8_t *src)
{
	return (uint64_t)src[0] << 56 | (uint64_t)src[1] << 48 |
	    (uint64_t)src[2] << 40 | (uint64_t)src[3] << 32 |
	    (uint64_t)src[4] << 24 | (uint64_t)src[5] << 16 |
	    (uint64_t)src[6] << 8 | (uint64_t)src[7];
}

/* Write v at dst and return the byte after it. */
uint8_t *encode_varint32(uint8_t *dst, uint32_t v);
uint8_t *encode_varint64(uint8_t *dst, uint64_t v);

/* The number of bytes encode_varint64(v) writes (1..10). */
int varint_length(uint64_t v);

/* Append to a buffer.  0 or -ENOMEM. */
int buf_put_fixed32(struct buf *b, uint32_t v);
int buf_put_fixed64(struct buf *b, uint64_t v);
int buf_put_varint32(struct buf *b, uint32_t v);
int buf_put_varint64(struct buf *b, uint64_t v);
/* varint64 length, then the bytes. */
int buf_put_lenprefixed(struct buf *b, struct slice s);

/*
 * Decode from the front of *in and advance it past what was read.
 * 0, or BT_ECORRUPT when the input ends early or the varint is overlong
 * (more than 5 / 10 bytes, or a value that does not fit); *in is then
 * unchanged.
 */
int get_varint32(struct slice *in, uint32_t *v);
int get_varint64(struct slice *in, uint64_t *v);
/* A length-prefixed run; *out borrows from in's bytes. */
int get_lenprefixed(struct slice *in, struct slice *out);

#endif
