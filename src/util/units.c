/*
 * units.c - parse and format the size and duration spellings.
 *
 * Why not libbsd's expand_number() and humanize_number(), which the tools
 * use elsewhere: this file is in libengine, so in the installed shared
 * libtabletfs (api.c formats sizes into error details, gc_policy.c parses
 * and prints maxage durations), which should not make every application
 * load libbsd; and neither function spells what docs/design.md section 3
 * documents.  expand_number() reads its count with strtoumax(base 0), so
 * "010" is 8 and "0x10" is 16, takes a sign ("-1" is 2^64 - 1) and leading
 * blanks, the suffixes b, t, p and e, and ignores what follows the suffix
 * ("64kjunk" is 64k), all spellings tests/unit/test_units.c refuses;
 * checking the documented spelling first would leave it only the
 * multiplication to do.  humanize_number() rounds to a few
 * digits ("977K" for 1000001), where format_size() must print what
 * parse_size() reads back exactly.  Durations are ours in any case.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>

#include "util/error.h"
#include "util/units.h"

#define USEC_PER_SEC	UINT64_C(1000000)

/* A suffix letter (lower case) and the number of base units it stands for. */
struct unit {
	char letter;
	uint64_t scale;
};

/* Largest first, so that formatting can take the first exact one. */
static const struct unit size_units[] = {
	{ 'g', UINT64_C(1) << 30 },
	{ 'm', UINT64_C(1) << 20 },
	{ 'k', UINT64_C(1) << 10 },
};

static const struct unit duration_units[] = {
	{ 'd', 86400 * USEC_PER_SEC },
	{ 'h', 3600 * USEC_PER_SEC },
	{ 'm', 60 * USEC_PER_SEC },
	{ 's', USEC_PER_SEC },
};

#define NUNITS(a)	(sizeof(a) / sizeof((a)[0]))

static char
ascii_lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/*
 * Copy s into dst for an error detail: at most 48 characters, bytes that
 * are not printable ASCII as \xHH, so that the detail stays one line.
 */
static void
units_quote(char *dst, size_t size, const char *s)
{
	size_t n = 0, i;

	for (i = 0; s[i] != '\0' && i < 48 && n + 5 < size; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c >= 0x20 && c < 0x7f && c != '\'')
			dst[n++] = (char)c;
		else
			n += (size_t)snprintf(dst + n, size - n, "\\x%02X", c);
	}
	if (s[i] != '\0' && n + 4 < size) {
		dst[n++] = '.';
		dst[n++] = '.';
		dst[n++] = '.';
	}
	dst[n] = '\0';
}

/*
 * Parse a decimal count followed by at most one suffix from units (either
 * case).  The whole spelling is checked before the value, so that junk is
 * -EINVAL however long its digits are, and only a well-formed spelling that
 * does not fit is -ERANGE.
 */
static int
units_parse(const char *what, const char *s, const struct unit *units,
    size_t nunits, bool suffix_required, const char *expected, uint64_t *out)
{
	const struct unit *u = NULL;
	const char *p = s;
	uint64_t n = 0, scale = 1;
	bool overflow = false;
	char quoted[256];
	size_t i;

	while (*p >= '0' && *p <= '9') {
		unsigned d = (unsigned)(*p - '0');

		if (n > (UINT64_MAX - d) / 10)
			overflow = true;
		else
			n = n * 10 + d;
		p++;
	}
	if (p == s)
		goto out_invalid;
	if (*p != '\0') {
		for (i = 0; i < nunits; i++)
			if (ascii_lower(*p) == units[i].letter)
				u = &units[i];
		if (u == NULL || p[1] != '\0')
			goto out_invalid;
		scale = u->scale;
	} else if (suffix_required)
		goto out_invalid;
	if (overflow || n > UINT64_MAX / scale) {
		units_quote(quoted, sizeof(quoted), s);
		return bt_error_set(-ERANGE, "%s '%s': too large", what,
		    quoted);
	}
	*out = n * scale;
	return 0;
out_invalid:
	units_quote(quoted, sizeof(quoted), s);
	return bt_error_set(-EINVAL, "%s '%s': expected %s", what, quoted,
	    expected);
}

int
parse_size(const char *s, uint64_t *bytes)
{
	return units_parse("size", s, size_units, NUNITS(size_units), false,
	    "a number with an optional k, m or g suffix", bytes);
}

int
parse_duration(const char *s, uint64_t *micros)
{
	return units_parse("duration", s, duration_units,
	    NUNITS(duration_units), true,
	    "a number with a unit s, m, h or d", micros);
}

/*
 * Write v in the largest unit of units that divides it exactly, or bare
 * with the suffix `rest` when none does.  Zero is written with zero_text.
 */
static char *
units_format(char *dst, size_t size, uint64_t v, const struct unit *units,
    size_t nunits, const char *rest, const char *zero_text)
{
	size_t i;

	if (v == 0) {
		snprintf(dst, size, "%s", zero_text);
		return dst;
	}
	for (i = 0; i < nunits; i++) {
		if (v % units[i].scale == 0) {
			snprintf(dst, size, "%" PRIu64 "%c", v / units[i].scale,
			    units[i].letter);
			return dst;
		}
	}
	snprintf(dst, size, "%" PRIu64 "%s", v, rest);
	return dst;
}

char *
format_size(char *dst, size_t size, uint64_t bytes)
{
	return units_format(dst, size, bytes, size_units, NUNITS(size_units),
	    "", "0");
}

char *
format_duration(char *dst, size_t size, uint64_t micros)
{
	return units_format(dst, size, micros, duration_units,
	    NUNITS(duration_units), "us", "0s");
}
