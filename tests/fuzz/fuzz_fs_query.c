/*
 * fuzz_fs_query.c - the path of a mount's query directory,
 * TABLE/.filter/@KEY=VALUE/... (src/fs/fs_query.c).  The first byte
 * chooses: even, the rest is a path to parse, which either fails with
 * -EINVAL or gives options whose regexes and bounds lie in the parsed
 * bytes, whose lists fit, and whose time range holds a time; odd, the
 * rest is a regex's bytes, which encoded as a name (util/names.h) in each
 * regex key parse back to exactly those bytes, whatever they are.
 */
#include <errno.h>
#include <string.h>

#include "fs/fs_query.h"
#include "fuzz.h"
#include "util/names.h"

/* b lies in q's decoded bytes (or is the empty pattern). */
static void
check_inside(const struct fs_query *q, struct bt_bytes b)
{
	const uint8_t *p = b.data;

	if (p == NULL || b.size == 0)
		return;
	FUZZ_CHECK(p >= q->bytes.p && p + b.size <= q->bytes.p + q->bytes.n);
}

static void
parse_path(const uint8_t *data, size_t size)
{
	struct fs_query q;
	char *spec;
	int rc;

	if ((spec = malloc(size + 1)) == NULL)
		return;
	memcpy(spec, data, size);
	spec[size] = '\0';
	rc = fs_query_parse(spec, &q);
	FUZZ_CHECK(rc == 0 || rc == -EINVAL || rc == -ENOMEM);
	if (rc == 0) {
		check_inside(&q, q.ro.row_regex);
		check_inside(&q, q.ro.family_regex);
		check_inside(&q, q.ro.qualifier_regex);
		check_inside(&q, q.ro.value_regex);
		FUZZ_CHECK(q.ro.column_count <= FS_QUERY_MAX_COLUMNS);
		FUZZ_CHECK(q.ro.column_regex_count <= FS_QUERY_MAX_COLUMNS);
		for (size_t i = 0; i < q.ro.column_regex_count; i++) {
			check_inside(&q, q.ro.column_regexes[i].qualifier);
			FUZZ_CHECK(q.ro.column_regexes[i].qualifier.data !=
			    NULL);
		}
		FUZZ_CHECK(!q.ro.has_max_ts || q.ro.max_ts >= q.ro.min_ts);
		FUZZ_CHECK(q.ro.min_ts >= 0);
	}
	fs_query_release(&q);
	free(spec);
}

static void
round_trip(const uint8_t *data, size_t size)
{
	static const char *const keys[] = { "row", "family", "qualifier",
		"value", "column=f:" };
	struct buf enc, spec;

	buf_init(&enc);
	buf_init(&spec);
	FUZZ_CHECK(names_encode(slice_make(data, size), &enc) == 0);
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		struct fs_query q;
		struct bt_bytes got;

		buf_clear(&spec);
		FUZZ_CHECK(buf_append(&spec, "@", 1) == 0);
		FUZZ_CHECK(buf_append(&spec, keys[k], strlen(keys[k])) == 0);
		if (k < 4)
			FUZZ_CHECK(buf_append(&spec, "=", 1) == 0);
		/* In column=F:RE the empty regex is nothing ("%" alone
		 * spells the empty string only as a whole value). */
		if (k < 4 || size > 0)
			FUZZ_CHECK(buf_append(&spec, enc.p, enc.n) == 0);
		FUZZ_CHECK(buf_append(&spec, "", 1) == 0);
		FUZZ_CHECK(fs_query_parse((const char *)spec.p, &q) == 0);
		got = k == 0 ? q.ro.row_regex : k == 1 ? q.ro.family_regex :
		    k == 2 ? q.ro.qualifier_regex : k == 3 ? q.ro.value_regex :
		    q.ro.column_regexes[0].qualifier;
		FUZZ_CHECK(got.data != NULL && got.size == size);
		FUZZ_CHECK(size == 0 || memcmp(got.data, data, size) == 0);
		fs_query_release(&q);
	}
	buf_release(&spec);
	buf_release(&enc);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	if (data[0] % 2 == 0)
		parse_path(data + 1, size - 1);
	else
		round_trip(data + 1, size - 1);
	return 0;
}
