/*
 * crc32c.c - CRC-32C, with the SSE4.2 instruction when the CPU has it and
 * slicing-by-8 tables otherwise.
 *
 * The crc32 instruction takes three cycles but can start one every cycle,
 * so a long buffer is checksummed as three interleaved stripes of
 * CRC_STRIPE bytes each, and the three results are joined: the CRC
 * register is linear, so the register after A || B is the register after
 * A advanced over |B| zero bytes, xor the register of B started from 0.
 * Advancing over CRC_STRIPE zero bytes is a linear map of the 32-bit
 * register, kept as four byte tables.
 */
#include <pthread.h>
#include <string.h>

#include "util/crc32c.h"

#define CRC32C_POLY 0x82f63b78u	/* reflected Castagnoli polynomial */

#define CRC_STRIPE 512

static uint32_t crc_table[8][256];
static uint32_t crc_stripe_shift[4][256];	/* over CRC_STRIPE zeros */
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;
static uint32_t (*crc_impl)(uint32_t, const uint8_t *, size_t);

static uint32_t
crc32c_sw(uint32_t crc, const uint8_t *p, size_t n)
{
	while (n > 0 && ((uintptr_t)p & 7) != 0) {
		crc = crc_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
		n--;
	}
	while (n >= 8) {
		uint64_t w;

		memcpy(&w, p, 8);
		w ^= crc;
		crc = crc_table[7][w & 0xff] ^
		    crc_table[6][(w >> 8) & 0xff] ^
		    crc_table[5][(w >> 16) & 0xff] ^
		    crc_table[4][(w >> 24) & 0xff] ^
		    crc_table[3][(w >> 32) & 0xff] ^
		    crc_table[2][(w >> 40) & 0xff] ^
		    crc_table[1][(w >> 48) & 0xff] ^
		    crc_table[0][w >> 56];
		p += 8;
		n -= 8;
	}
	while (n-- > 0)
		crc = crc_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

/* The register crc advanced over CRC_STRIPE zero bytes. */
static uint32_t
crc_stripe_advance(uint32_t crc)
{
	return crc_stripe_shift[0][crc & 0xff] ^
	    crc_stripe_shift[1][(crc >> 8) & 0xff] ^
	    crc_stripe_shift[2][(crc >> 16) & 0xff] ^
	    crc_stripe_shift[3][crc >> 24];
}

#if defined(__x86_64__)
__attribute__((target("sse4.2")))
static uint32_t
crc32c_hw(uint32_t crc, const uint8_t *p, size_t n)
{
	uint64_t c = crc;

	while (n > 0 && ((uintptr_t)p & 7) != 0) {
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
		n--;
	}
	while (n >= 3 * CRC_STRIPE) {
		uint64_t c1 = 0, c2 = 0, w0, w1, w2;

		for (size_t i = 0; i < CRC_STRIPE; i += 8) {
			memcpy(&w0, p + i, 8);
			memcpy(&w1, p + CRC_STRIPE + i, 8);
			memcpy(&w2, p + 2 * CRC_STRIPE + i, 8);
			c = __builtin_ia32_crc32di(c, w0);
			c1 = __builtin_ia32_crc32di(c1, w1);
			c2 = __builtin_ia32_crc32di(c2, w2);
		}
		c = crc_stripe_advance(crc_stripe_advance((uint32_t)c) ^
		    (uint32_t)c1) ^ (uint32_t)c2;
		p += 3 * CRC_STRIPE;
		n -= 3 * CRC_STRIPE;
	}
	while (n >= 8) {
		uint64_t w;

		memcpy(&w, p, 8);
		c = __builtin_ia32_crc32di(c, w);
		p += 8;
		n -= 8;
	}
	while (n-- > 0)
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
	return (uint32_t)c;
}
#endif

static void
crc32c_setup(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (CRC32C_POLY & (0u - (c & 1)));
		crc_table[0][i] = c;
	}
	for (int t = 1; t < 8; t++)
		for (int i = 0; i < 256; i++)
			crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^
			    crc_table[0][crc_table[t - 1][i] & 0xff];
	for (int t = 0; t < 4; t++)
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t c = i << (8 * t);

			for (int k = 0; k < CRC_STRIPE; k++)
				c = crc_table[0][c & 0xff] ^ (c >> 8);
			crc_stripe_shift[t][i] = c;
		}
	crc_impl = crc32c_sw;
#if defined(__x86_64__)
	__builtin_cpu_init();
	if (__builtin_cpu_supports("sse4.2"))
		crc_impl = crc32c_hw;
#endif
}

uint32_t
crc32c_extend(uint32_t crc, const void *p, size_t n)
{
	pthread_once(&crc_once, crc32c_setup);
	return ~crc_impl(~crc, p, n);
}

uint32_t
crc32c_extend_portable(uint32_t crc, const void *p, size_t n)
{
	pthread_once(&crc_once, crc32c_setup);
	return ~crc32c_sw(~crc, p, n);
}
