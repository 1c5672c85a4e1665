/* fs_query.c - the filters of a query directory (fs_query.h). */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "fs/fs_query.h"
#include "util/names.h"

enum query_key {
	KEY_ROW, KEY_FAMILY, KEY_QUALIFIER, KEY_VALUE, KEY_COLUMN,
	KEY_START_TS, KEY_END_TS, KEY_CELLS_PER_COLUMN, KEY_CELLS_PER_ROW,
	KEY_CELLS_PER_ROW_OFFSET, KEY_COUNT
};

static const char *const key_names[KEY_COUNT] = {
	"row", "family", "qualifier", "value", "column", "start-ts", "end-ts",
	"cells-per-column", "cells-per-row", "cells-per-row-offset",
};

/* Where a decoded value lies in q->bytes (offsets survive its growth). */
struct span {
	size_t off, n;
};

/* What the components said, before ro borrows from q. */
struct parsed {
	bool seen[KEY_COUNT];
	struct span regex[4];		/* row, family, qualifier, value */
	struct span column_regex[FS_QUERY_MAX_COLUMNS];
	size_t family_count, regex_count;
	int64_t start_ts, end_ts;
	uint64_t number[KEY_COUNT];
};

/* A decimal number of at most max, without sign or leading zero. */
static int
parse_number(const uint8_t *p, size_t n, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (n == 0 || (p[0] == '0' && n > 1))
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9' ||
		    v > (max - (uint64_t)(p[i] - '0')) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(p[i] - '0');
	}
	*out = v;
	return 0;
}

/* A family name as the schema allows it: [A-Za-z0-9_.-], 1 to 64 bytes,
 * not starting with '.'. */
static bool
family_valid(const uint8_t *p, size_t n)
{
	if (n == 0 || n > 64 || p[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((p[i] >= 'a' && p[i] <= 'z') ||
		    (p[i] >= 'A' && p[i] <= 'Z') ||
		    (p[i] >= '0' && p[i] <= '9') || p[i] == '_' ||
		    p[i] == '.' || p[i] == '-'))
			return false;
	return true;
}

/* A column= value, decoded at q->bytes[s]: F or F:RE. */
static int
parse_column(struct fs_query *q, struct parsed *pr, struct span s)
{
	const uint8_t *p, *colon;
	struct bt_column *c;
	char *family;
	size_t fn;

	if (s.n == 0)		/* no family: and the bytes may be none */
		return -EINVAL;
	p = q->bytes.p + s.off;
	colon = memchr(p, ':', s.n);
	fn = colon != NULL ? (size_t)(colon - p) : s.n;
	if (!family_valid(p, fn))
		return -EINVAL;
	if (colon == NULL) {
		if (pr->family_count == FS_QUERY_MAX_COLUMNS)
			return -EINVAL;
		c = &q->columns[pr->family_count];
		family = q->families[pr->family_count++];
	} else {
		if (pr->regex_count == FS_QUERY_MAX_COLUMNS)
			return -EINVAL;
		pr->column_regex[pr->regex_count] = (struct span){
		    s.off + fn + 1, s.n - fn - 1 };
		c = &q->column_regexes[pr->regex_count];
		family = q->families[FS_QUERY_MAX_COLUMNS +
		    pr->regex_count++];
		c->has_qualifier = true;
	}
	memcpy(family, p, fn);
	family[fn] = '\0';
	c->family = family;
	return 0;
}

/* One component, name[0..n): '@' KEY '=' VALUE. */
static int
parse_component(struct fs_query *q, struct parsed *pr, const char *name,
    size_t n)
{
	const char *eq = memchr(name, '=', n);
	struct span s;
	struct buf value;
	size_t kn;
	int key, rc;

	if (n < 3 || name[0] != '@' || eq == NULL)
		return -EINVAL;
	kn = (size_t)(eq - name - 1);
	for (key = 0; key < KEY_COUNT; key++)
		if (strlen(key_names[key]) == kn &&
		    memcmp(key_names[key], name + 1, kn) == 0)
			break;
	if (key == KEY_COUNT || (key != KEY_COLUMN && pr->seen[key]))
		return -EINVAL;
	pr->seen[key] = true;
	buf_init(&value);
	if ((rc = names_decode(eq + 1, n - kn - 2, &value)) < 0)
		goto out;
	s = (struct span){ q->bytes.n, value.n };
	if ((rc = buf_append(&q->bytes, value.p, value.n)) < 0)
		goto out;
	switch (key) {
	case KEY_ROW:
	case KEY_FAMILY:
	case KEY_QUALIFIER:
	case KEY_VALUE:
		pr->regex[key] = s;
		break;
	case KEY_COLUMN:
		rc = parse_column(q, pr, s);
		break;
	case KEY_START_TS:
	case KEY_END_TS:
		rc = parse_number(value.p, value.n, INT64_MAX, &pr->number[key]);
		break;
	default:
		rc = parse_number(value.p, value.n, UINT32_MAX,
		    &pr->number[key]);
		break;
	}
out:
	buf_release(&value);
	return rc;
}

/* Point q->ro at what pr found in q. */
static int
query_finish(struct fs_query *q, const struct parsed *pr)
{
	struct bt_bytes *regex[4] = { &q->ro.row_regex, &q->ro.family_regex,
	    &q->ro.qualifier_regex, &q->ro.value_regex };
	/* A pattern's bytes, never NULL even when empty (tabletfs.h). */
	static const uint8_t empty[1];

	for (int k = KEY_ROW; k <= KEY_VALUE; k++)
		if (pr->seen[k])
			*regex[k] = (struct bt_bytes){ pr->regex[k].n > 0 ?
			    q->bytes.p + pr->regex[k].off : empty,
			    pr->regex[k].n };
	for (size_t i = 0; i < pr->regex_count; i++)
		q->column_regexes[i].qualifier = (struct bt_bytes){
		    pr->column_regex[i].n > 0 ? q->bytes.p +
		    pr->column_regex[i].off : empty, pr->column_regex[i].n };
	if (pr->family_count > 0) {
		q->ro.columns = q->columns;
		q->ro.column_count = pr->family_count;
	}
	if (pr->regex_count > 0) {
		q->ro.column_regexes = q->column_regexes;
		q->ro.column_regex_count = pr->regex_count;
	}
	q->ro.min_ts = (int64_t)pr->number[KEY_START_TS];
	if (pr->seen[KEY_END_TS]) {
		if ((int64_t)pr->number[KEY_END_TS] <= q->ro.min_ts)
			return -EINVAL;
		q->ro.has_max_ts = true;
		q->ro.max_ts = (int64_t)pr->number[KEY_END_TS] - 1;
	}
	q->ro.cells_per_column = (uint32_t)pr->number[KEY_CELLS_PER_COLUMN];
	q->ro.cells_per_row_limit = (uint32_t)pr->number[KEY_CELLS_PER_ROW];
	q->ro.cells_per_row_offset =
	    (uint32_t)pr->number[KEY_CELLS_PER_ROW_OFFSET];
	return 0;
}

int
fs_query_parse(const char *spec, struct fs_query *q)
{
	struct parsed pr;
	const char *p = spec, *slash;
	int rc;

	memset(q, 0, sizeof(*q));
	memset(&pr, 0, sizeof(pr));
	buf_init(&q->bytes);
	while (*p != '\0') {
		size_t n;

		slash = strchr(p, '/');
		n = slash != NULL ? (size_t)(slash - p) : strlen(p);
		if ((rc = parse_component(q, &pr, p, n)) < 0)
			return rc;
		p += n;
		if (*p == '/' && *++p == '\0')
			return -EINVAL;		/* a trailing '/' */
	}
	return query_finish(q, &pr);
}

void
fs_query_release(struct fs_query *q)
{
	buf_release(&q->bytes);
}
