/*
 * fuzz_import.c - one line of tabletctl's import format, in both its
 * versions (import_line_parse, src/ctl/cmd_bulk.c).  A line is refused or
 * gives a put whose row, family, qualifier and value lie inside the line,
 * whose family is a non-empty name without NUL, and whose timestamp is in
 * range or BT_TS_SERVER (an empty field); exported again in the same version (1: every field with
 * esc_write; 2: names with ctl_name_write), it parses back the same.
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

/* Write the put as an export line of version (with the byte the parser
 * may write after it) and parse it back: it must give the same cell. */
static void
reexport(int version, struct bt_bytes row, const struct bt_mutation *m)
{
	struct bt_mutation m2;
	struct bt_bytes row2;
	char *out = NULL;
	size_t out_len = 0;
	FILE *f;

	FUZZ_CHECK((f = open_memstream(&out, &out_len)) != NULL);
	if (version == 1) {
		esc_write(f, row.data, row.size);
		putc('\t', f);
		esc_write(f, m->family, strlen(m->family));
		putc('\t', f);
		esc_write(f, m->qualifier.data, m->qualifier.size);
	} else {
		ctl_name_write(f, row.data, row.size);
		fprintf(f, "\t%s\t", m->family);
		ctl_name_write(f, m->qualifier.data, m->qualifier.size);
	}
	if (m->ts == BT_TS_SERVER)
		fputs("\t\t", f);
	else
		fprintf(f, "\t%lld\t", (long long)m->ts);
	esc_write(f, m->value.data, m->value.size);
	putc('\0', f);
	FUZZ_CHECK(fclose(f) == 0);
	FUZZ_CHECK(import_line_parse(out, out_len - 1, version, &row2, &m2));
	FUZZ_CHECK(row2.size == row.size &&
	    memcmp(row2.data, row.data, row.size) == 0);
	FUZZ_CHECK(strcmp(m2.family, m->family) == 0 && m2.ts == m->ts);
	FUZZ_CHECK(m2.qualifier.size == m->qualifier.size &&
	    memcmp(m2.qualifier.data, m->qualifier.data,
	    m->qualifier.size) == 0);
	FUZZ_CHECK(m2.value.size == m->value.size &&
	    memcmp(m2.value.data, m->value.data, m->value.size) == 0);
	free(out);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bt_mutation m;
	struct bt_bytes row;
	char *line;

	if (memchr(data, '\n', size) != NULL)
		return 0;	/* import reads one line at a time */
	for (int version = 1; version <= 2; version++) {
		/* Exactly len + 1 bytes: the parser may write line[len]. */
		FUZZ_CHECK((line = malloc(size + 1)) != NULL);
		memcpy(line, data, size);
		line[size] = '\0';
		if (import_line_parse(line, size, version, &row, &m)) {
			FUZZ_CHECK(m.kind == BT_PUT &&
			    (m.ts >= 0 || m.ts == BT_TS_SERVER));
			FUZZ_CHECK(m.family != NULL && m.family[0] != '\0');
			FUZZ_CHECK(inside(line, size, row));
			FUZZ_CHECK(inside(line, size, m.qualifier));
			FUZZ_CHECK(inside(line, size, m.value));
			reexport(version, row, &m);
		}
		free(line);
	}
	return 0;
}
