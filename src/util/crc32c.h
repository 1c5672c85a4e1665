/*
 * crc32c.h - CRC-32C (Castagnoli), the checksum of every stored block and
 * record.
 *
 * Stored checksums are masked (rotated and offset, as LevelDB does) so that
 * a CRC computed over data that itself contains CRCs stays strong.  Uses the
 * SSE4.2 crc32 instruction when the CPU has it, a table otherwise; both give
 * identical results.
 */
#ifndef TABLETFS_UTIL_CRC32C_H
#define TABLETFS_UTIL_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* The CRC of p[0..n) continuing from crc (0 to start). */
uint32_t crc32c_extend(uint32_t crc, const void *p, size_t n);

/* The table-driven implementation alone, so tests can compare both. */
uint32_t crc32c_extend_portable(uint32_t crc, const void *p, size_t n);

static inline uint32_t
crc32c_value(const void *p, size_t n)
{
	return crc32c_extend(0, p, n);
}

#define CRC32C_MASK_DELTA 0xa282ead8u

/* The form stored on disk. */
static inline uint32_t
crc32c_mask(uint32_t crc)
{
	return ((crc >> 15) | (crc << 17)) + CRC32C_MASK_DELTA;
}

static inline uint32_t
crc32c_unmask(uint32_t masked)
{
	uint32_t rot = masked - CRC32C_MASK_DELTA;

	return (rot >> 17) | (rot << 15);
}

#endif
