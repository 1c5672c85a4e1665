/*
 * fuzz_import.c - one line of tabletctl's import format
 * (import_line_parse, src/ctl/cmd_bulk.c).  A line is refused or gives a
 * put whose row, family, qualifier and value lie inside the line, whose
 * family is a non-empty name without NUL, and whose timestamp is in
 * range; exported again (esc_write), the cell parses back the same.
 */
#include <stdio.h>
#include <string.h>

#include "ctl/ctl.h"
#include "fuzz.h"

static bool
inside(const char *line, size_t len, struct bt_bytes b)
{
	const char *p = b.data;

	return b.size == 0 || (p >= line && b.size <= len &&
	    (size_t)(p - line) <= len - b.size);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bt_mutation m, m2;
	struct bt_bytes row, row2;
	char *line, *out = NULL;
	size_t out_len = 0;
	FILE *f;

	if (memchr(data, '\n', size) != NULL)
		return 0;	/* import reads one line at a time */
	/* Exactly len + 1 bytes: the parser may write line[len]. */
	FUZZ_CHECK((line = malloc(size + 1)) != NULL);
	memcpy(line, data, size);
	line[size] = '\0';
	if (!import_line_parse(line, size, &row, &m)) {
		free(line);
		return 0;
	}
	FUZZ_CHECK(m.kind == BT_PUT && m.ts >= 0);
	FUZZ_CHECK(m.family != NULL && m.family[0] != '\0');
	FUZZ_CHECK(inside(line, size, row));
	FUZZ_CHECK(inside(line, size, m.qualifier));
	FUZZ_CHECK(inside(line, size, m.value));

	FUZZ_CHECK((f = open_memstream(&out, &out_len)) != NULL);
	esc_write(f, row.data, row.size);
	putc('\t', f);
	esc_write(f, m.family, strlen(m.family));
	putc('\t', f);
	esc_write(f, m.qualifier.data, m.qualifier.size);
	fprintf(f, "\t%lld\t", (long long)m.ts);
	esc_write(f, m.value.data, m.value.size);
	putc('\0', f);		/* the byte the parser may write */
	FUZZ_CHECK(fclose(f) == 0);
	FUZZ_CHECK(import_line_parse(out, out_len - 1, &row2, &m2));
	FUZZ_CHECK(row2.size == row.size &&
	    memcmp(row2.data, row.data, row.size) == 0);
	FUZZ_CHECK(strcmp(m2.family, m.family) == 0 && m2.ts == m.ts);
	FUZZ_CHECK(m2.qualifier.size == m.qualifier.size &&
	    memcmp(m2.qualifier.data, m.qualifier.data, m.qualifier.size) == 0);
	FUZZ_CHECK(m2.value.size == m.value.size &&
	    memcmp(m2.value.data, m.value.data, m.value.size) == 0);
	free(out);
	free(line);
	return 0;
}
