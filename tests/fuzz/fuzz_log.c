/*
 * fuzz_log.c - a commit-log segment (src/log/log_reader.c) and the
 * mutation records it carries (src/tablet/mutation.c), as replay reads
 * them: every record is returned whole or the reader stops with BT_DONE
 * or an error, which it then repeats; and read on past damage with
 * log_reader_skip_damage(), as recovery does, always moving forward.
 *
 * The first input byte is a flag: when odd, a valid segment header is put
 * before the rest and each record's CRC is recomputed along the chain of
 * lengths, so that the fuzzer reaches the payloads; its next bits choose
 * the header's format version, each one the reader knows.
 */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "log/format.h"
#include "log/log.h"
#include "tablet/mutation.h"
#include "util/coding.h"
#include "util/crc32c.h"
#include "util/env.h"
#include "util/error.h"

#define PATH "/0000000000000001.log"

static void
fix_records(uint8_t *p, size_t n, uint32_t version)
{
	size_t pos = LOG_SEGMENT_HEADER_SIZE;
	uint32_t len, crc;

	put_fixed64(p, LOG_MAGIC);
	put_fixed32(p + 8, version);
	put_fixed32(p + 12, crc32c_mask(crc32c_value(p, 12)));
	while (n - pos >= LOG_RECORD_HEADER_SIZE) {
		len = get_fixed32(p + pos + 4);
		if (len == 0 || len > n - pos - LOG_RECORD_HEADER_SIZE)
			break;
		crc = crc32c_extend(crc32c_value(p + pos + 4, 4),
		    p + pos + LOG_RECORD_HEADER_SIZE, len);
		put_fixed32(p + pos, crc32c_mask(crc));
		pos += LOG_RECORD_HEADER_SIZE + len;
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct env *env;
	struct env_file *f;
	struct log_reader *r;
	struct mutation_record mr;
	struct slice rec;
	uint8_t *copy;
	uint64_t off;
	size_t n;
	int rc, again;

	if (size < 1)
		return 0;
	n = size - 1;
	if (data[0] & 1)
		n += LOG_SEGMENT_HEADER_SIZE;
	FUZZ_CHECK((copy = calloc(1, n + 1)) != NULL);
	memcpy(copy + (n - (size - 1)), data + 1, size - 1);
	if (data[0] & 1)
		fix_records(copy, n, LOG_FORMAT_VERSION_MIN + (uint32_t)(data[0]
		    >> 1) % (LOG_FORMAT_VERSION - LOG_FORMAT_VERSION_MIN + 1));
	FUZZ_CHECK(env_fault_new(&env) == 0);
	FUZZ_CHECK(env_file_open(env, PATH, ENV_CREATE, &f) == 0);
	FUZZ_CHECK(env_file_append(f, copy, n) == 0);
	FUZZ_CHECK(env_file_close(f) == 0);
	free(copy);
	if (log_reader_open(env, PATH, &r) < 0)
		goto out;
	while ((rc = log_reader_next(r, &rec, &off)) == 0) {
		FUZZ_CHECK(rec.n >= 1 && rec.n <= LOG_MAX_RECORD);
		FUZZ_CHECK(off >= LOG_SEGMENT_HEADER_SIZE &&
		    off + LOG_RECORD_HEADER_SIZE + rec.n <= n);
		if (mutation_record_decode(rec, &mr) == 0)
			mutation_record_release(&mr);
	}
	FUZZ_CHECK(rc == BT_DONE || rc < 0);
	again = log_reader_next(r, &rec, &off);
	FUZZ_CHECK(again == rc);
	FUZZ_CHECK(log_reader_dropped_bytes(r) <= n);
	log_reader_close(r);

	/* Again as recovery reads it, skipping damage: every skip moves
	 * forward within the file, and the reading ends. */
	if (log_reader_open(env, PATH, &r) < 0)
		goto out;
	for (uint64_t last = 0;;) {
		uint64_t skip_off, skip_n;

		while ((rc = log_reader_next(r, &rec, &off)) == 0) {
			FUZZ_CHECK(off >= last);
			last = off + 1;
		}
		if (rc != BT_ECHECKSUM && rc != BT_ECORRUPT)
			break;
		FUZZ_CHECK(log_reader_skip_damage(r, &skip_off, &skip_n) == 0);
		FUZZ_CHECK(skip_off >= last && skip_n > 0 &&
		    skip_off + skip_n <= n);
		last = skip_off + skip_n;
	}
	FUZZ_CHECK(rc == BT_DONE || rc < 0);
	FUZZ_CHECK(log_reader_skip_damage(r, &off, &off) == -EINVAL);
	log_reader_close(r);
out:
	env_free(env);
	return 0;
}
