/*
 * test_crc32c.c - CRC-32C against published vectors, incremental use,
 * hardware against the table implementation, and masking.
 */
#include <stdint.h>
#include <string.h>

#include "tap.h"
#include "util/crc32c.h"

static void
test_vectors(void)
{
	uint8_t buf[48];
	/* iSCSI SCSI Read (10) command PDU, RFC 3720 B.4. */
	static const uint8_t iscsi[48] = {
		0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00,
		0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18,
		0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	};

	is_int(crc32c_value("123456789", 9), 0xe3069283u,
	    "crc32c(\"123456789\") = 0xe3069283");
	is_int(crc32c_extend_portable(0, "123456789", 9), 0xe3069283u,
	    "portable crc32c(\"123456789\") = 0xe3069283");
	memset(buf, 0, 32);
	is_int(crc32c_value(buf, 32), 0x8a9136aau, "32 zero bytes = 0x8a9136aa");
	memset(buf, 0xff, 32);
	is_int(crc32c_value(buf, 32), 0x62a8ab43u, "32 0xff bytes = 0x62a8ab43");
	for (int i = 0; i < 32; i++)
		buf[i] = (uint8_t)i;
	is_int(crc32c_value(buf, 32), 0x46dd794eu,
	    "bytes 0..31 ascending = 0x46dd794e");
	for (int i = 0; i < 32; i++)
		buf[i] = (uint8_t)(31 - i);
	is_int(crc32c_value(buf, 32), 0x113fdb5cu,
	    "bytes 31..0 descending = 0x113fdb5c");
	is_int(crc32c_value(iscsi, sizeof(iscsi)), 0xd9963a56u,
	    "iSCSI read command = 0xd9963a56");
	is_int(crc32c_value("", 0), 0, "crc of nothing is 0");
	ok(crc32c_value("a", 1) != crc32c_value("b", 1),
	    "different bytes, different crc");
}

static void
test_extend(uint64_t *rng)
{
	uint8_t data[1000];
	uint32_t whole;
	int bad = 0;

	is_int(crc32c_extend(crc32c_value("hello ", 6), "world", 5),
	    crc32c_value("hello world", 11),
	    "extend(\"hello \") + \"world\" = value(\"hello world\")");
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)tap_rand(rng);
	whole = crc32c_value(data, sizeof(data));
	for (size_t cut = 0; cut <= sizeof(data); cut++) {
		uint32_t a = crc32c_value(data, cut);

		if (crc32c_extend(a, data + cut, sizeof(data) - cut) != whole)
			bad++;
		if (crc32c_extend_portable(crc32c_extend_portable(0, data,
		    cut), data + cut, sizeof(data) - cut) != whole)
			bad++;
	}
	is_int(bad, 0, "extend(value(a), b) == value(a || b) at every split");
}

/*
 * Both implementations on random buffers of every length and start
 * alignment, so each head, word-loop and tail path is compared.
 */
static void
test_hw_vs_portable(uint64_t *rng)
{
	uint8_t raw[300 + 8 + 8];
	int bad = 0, cases = 0;

	for (size_t len = 0; len <= 300; len++) {
		for (size_t align = 0; align < 8; align++) {
			/* Offsets from the first 8-aligned byte of raw. */
			size_t off = (size_t)(-(uintptr_t)raw & 7) + align;
			uint32_t seed = (uint32_t)tap_rand(rng);

			for (size_t i = 0; i < len; i++)
				raw[off + i] = (uint8_t)tap_rand(rng);
			if (crc32c_extend(0, raw + off, len) !=
			    crc32c_extend_portable(0, raw + off, len))
				bad++;
			if (crc32c_extend(seed, raw + off, len) !=
			    crc32c_extend_portable(seed, raw + off, len))
				bad++;
			cases++;
		}
	}
	is_int(bad, 0, "hardware and portable agree on %d buffers "
	    "(lengths 0..300, alignments 0..7)", cases);
}

/*
 * Long buffers go through the three interleaved stripes and their join:
 * every length around each multiple of the three stripes (1536 bytes),
 * random long ones, and a 1 MiB one, against the table implementation.
 */
static void
test_hw_stripes(uint64_t *rng)
{
	static uint8_t raw[(1u << 20) + 8];
	int bad = 0, cases = 0;

	for (size_t i = 0; i < sizeof(raw); i++)
		raw[i] = (uint8_t)tap_rand(rng);
	for (size_t base = 1536; base <= 4 * 1536; base += 1536)
		for (size_t len = base - 9; len <= base + 9; len++)
			for (size_t off = 0; off < 8; off++) {
				uint32_t seed = (uint32_t)tap_rand(rng);

				bad += crc32c_extend(seed, raw + off, len) !=
				    crc32c_extend_portable(seed, raw + off,
				    len);
				cases++;
			}
	for (int k = 0; k < 200; k++) {
		size_t len = (size_t)(tap_rand(rng) % 70000);
		size_t off = (size_t)(tap_rand(rng) % 8);

		bad += crc32c_extend(0, raw + off, len) !=
		    crc32c_extend_portable(0, raw + off, len);
		cases++;
	}
	bad += crc32c_extend(0, raw, 1u << 20) !=
	    crc32c_extend_portable(0, raw, 1u << 20);
	is_int(bad, 0, "hardware and portable agree on %d long buffers "
	    "(the striped path and its join)", cases + 1);
}

static void
test_mask(uint64_t *rng)
{
	uint32_t crc = crc32c_value("foo", 3);
	int bad = 0;

	ok(crc32c_mask(crc) != crc, "mask(crc) differs from crc");
	ok(crc32c_mask(crc32c_mask(crc)) != crc,
	    "masking twice does not undo the mask");
	is_int(crc32c_unmask(crc32c_mask(crc)), crc, "unmask(mask(crc)) == crc");
	is_int(crc32c_unmask(crc32c_mask(crc32c_mask(crc))), crc32c_mask(crc),
	    "unmask(mask(mask(crc))) == mask(crc)");
	for (int i = 0; i < 100000; i++) {
		uint32_t x = (uint32_t)tap_rand(rng);

		if (crc32c_unmask(crc32c_mask(x)) != x)
			bad++;
	}
	is_int(bad, 0, "unmask(mask(x)) == x for random x");
	/* Pin the mask so the stored form never changes by accident. */
	is_int(crc32c_mask(0), 0xa282ead8u, "mask(0) = 0xa282ead8");
	is_int(crc32c_mask(0x12345678u),
	    (uint32_t)(((0x12345678u >> 15) | (0x12345678u << 17)) + 0xa282ead8u),
	    "mask is rotate right 15 plus 0xa282ead8");
}

int
main(void)
{
	uint64_t rng = tap_seed();

	test_vectors();
	test_extend(&rng);
	test_hw_vs_portable(&rng);
	test_hw_stripes(&rng);
	test_mask(&rng);
	return tap_done();
}
