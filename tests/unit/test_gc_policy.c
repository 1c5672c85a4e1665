/*
 * test_gc_policy.c - the cbt garbage-collection policy language: what it
 * accepts and refuses, what each rule condemns, and that formatting then
 * parsing keeps a policy's meaning.
 */
#include <errno.h>
#include <stddef.h>

#include "tablet/gc_policy.h"
#include "tap.h"
#include "util/alloc.h"
#include "util/error.h"

#define SEC	INT64_C(1000000)
#define HOUR	(3600 * SEC)
#define DAY	(24 * HOUR)
#define NOW	INT64_C(1700000000000000)

#define N(a)	(sizeof(a) / sizeof((a)[0]))

/* text with its control and non-ASCII bytes as \xHH, for one-line names. */
static const char *
show(char *dst, size_t size, const char *text)
{
	size_t n = 0;

	for (; *text != '\0' && n + 5 < size; text++) {
		unsigned char c = (unsigned char)*text;

		if (c >= 0x20 && c < 0x7f)
			dst[n++] = (char)c;
		else
			n += (size_t)snprintf(dst + n, size - n, "\\x%02X", c);
	}
	if (*text != '\0' && n + 4 < size)
		n += (size_t)snprintf(dst + n, size - n, "...");
	dst[n] = '\0';
	return dst;
}

/* Parse, format, and check formatting the reparse gives the same text. */
static void
check_accepts(const char *text, const char *canonical)
{
	struct gc_policy *p = NULL, *q = NULL;
	char name[120], out[512], again[512];
	int rc;

	show(name, sizeof(name), text);
	rc = gc_policy_parse(text, &p);
	is_int(rc, 0, "accepts '%s'", name);
	if (rc != 0) {
		diag("detail: %s", bt_error_detail());
		return;
	}
	gc_policy_format(p, out, sizeof(out));
	ok(strcmp(out, canonical) == 0, "'%s' formats as '%s' (got '%s')",
	    name, canonical, out);
	rc = gc_policy_parse(out, &q);
	if (rc == 0)
		gc_policy_format(q, again, sizeof(again));
	ok(rc == 0 && strcmp(again, out) == 0,
	    "'%s' is a fixed point of format and parse", out);
	gc_policy_free(q);
	gc_policy_free(p);
}

/* Parse must fail with -EINVAL, leave *out alone, and name the word. */
static void
check_rejects(const char *text, const char *in_detail)
{
	max_align_t marker_space;
	struct gc_policy *marker = (struct gc_policy *)&marker_space;
	struct gc_policy *p = marker;
	char name[120];
	int rc;

	show(name, sizeof(name), text);
	bt_error_clear();
	rc = gc_policy_parse(text, &p);
	is_int(rc, -EINVAL, "rejects '%s'", name);
	if (rc == 0 && p != marker)
		gc_policy_free(p);
	else
		ok(p == marker, "rejecting '%s' leaves the output alone", name);
	ok(strncmp(bt_error_detail(), "gc policy: ", 11) == 0 &&
	    strstr(bt_error_detail(), in_detail) != NULL &&
	    strchr(bt_error_detail(), '\n') == NULL,
	    "detail for '%s' mentions \"%s\": %s", name, in_detail,
	    bt_error_detail());
}

static void
test_accepted(void)
{
	static const struct {
		const char *text, *canonical;
	} cases[] = {
		{ "never", "never" },
		{ "  never\t", "never" },
		{ "NEVER", "never" },
		{ "Never", "never" },
		{ "maxversions=3", "maxversions=3" },
		{ "maxversions=1", "maxversions=1" },
		{ "maxversions=007", "maxversions=7" },
		{ "maxversions=9223372036854775807",
		    "maxversions=9223372036854775807" },
		{ "maxage=7d", "maxage=7d" },
		{ "maxage=30s", "maxage=30s" },
		{ "maxage=15m", "maxage=15m" },
		{ "maxage=12h", "maxage=12h" },
		{ "maxage=2s", "maxage=2s" },
		{ "maxage=168h", "maxage=7d" },
		{ "maxage=90s", "maxage=90s" },
		{ "maxage=60s", "maxage=1m" },
		{ "maxage=1440m", "maxage=1d" },
		{ "maxage=213503982d", "maxage=213503982d" },
		{ "maxversions=3 or maxage=7d", "maxversions=3 or maxage=7d" },
		{ "maxage=1d and maxversions=2",
		    "maxage=1d and maxversions=2" },
		{ "(maxage=1d or maxversions=5) and maxversions=10",
		    "(maxage=1d or maxversions=5) and maxversions=10" },
		{ "(maxage=1d or maxversions=5)and maxversions=10",
		    "(maxage=1d or maxversions=5) and maxversions=10" },
		{ "( maxage=1d  or\tmaxversions=5 )  and maxversions=10",
		    "(maxage=1d or maxversions=5) and maxversions=10" },
		{ "maxversions=10 and(maxage=1d or maxversions=5)",
		    "maxversions=10 and (maxage=1d or maxversions=5)" },
		{ "maxage = 5d || maxversions = 3",
		    "maxage=5d or maxversions=3" },
		{ "maxage=30d || (maxage=3d && maxversions=100)",
		    "maxage=30d or (maxage=3d and maxversions=100)" },
		{ "maxage=1d&&maxversions=2", "maxage=1d and maxversions=2" },
		{ "maxage=1d||maxversions=2", "maxage=1d or maxversions=2" },
		{ "MAXVERSIONS=2 OR MAXAGE=1H", "maxversions=2 or maxage=1h" },
		{ "MaxVersions=2 And MaxAge=1D",
		    "maxversions=2 and maxage=1d" },
		{ "maxversions=1 or maxversions=2 and maxage=1h",
		    "maxversions=1 or (maxversions=2 and maxage=1h)" },
		{ "maxversions=1 and maxversions=2 or maxage=1h",
		    "(maxversions=1 and maxversions=2) or maxage=1h" },
		{ "((maxversions=1))", "maxversions=1" },
		{ "maxversions=1 and (maxversions=2 and maxversions=3)",
		    "maxversions=1 and maxversions=2 and maxversions=3" },
		{ "(maxversions=1 or maxversions=2) or "
		    "(maxversions=3 or maxversions=4)",
		    "maxversions=1 or maxversions=2 or maxversions=3 or "
		    "maxversions=4" },
		{ "\tmaxversions=3\n", "maxversions=3" },
		{ "maxversions\t=\t3", "maxversions=3" },
		{ "maxversions =3", "maxversions=3" },
		{ "maxversions= 3", "maxversions=3" },
		{ "maxage=1d or (maxversions=2 and (maxage=2d or "
		    "maxversions=5))",
		    "maxage=1d or (maxversions=2 and (maxage=2d or "
		    "maxversions=5))" },
	};
	size_t i;

	for (i = 0; i < N(cases); i++)
		check_accepts(cases[i].text, cases[i].canonical);
}

static void
test_rejected(void)
{
	static const struct {
		const char *text, *detail;
	} cases[] = {
		{ "", "empty" },
		{ "   ", "empty" },
		{ "\t\n", "empty" },
		{ "maxversions=0", "at '0'" },
		{ "maxversions=-1", "at '-1'" },
		{ "maxversions=+1", "at '+1'" },
		{ "maxversions=1.5", "at '1.5'" },
		{ "maxversions=3x", "at '3x'" },
		{ "maxversions=1k", "at '1k'" },
		{ "maxversions=9223372036854775808",
		    "at '9223372036854775808'" },
		{ "maxversions=18446744073709551617",
		    "at '18446744073709551617'" },
		{ "maxage=7", "at '7'" },
		{ "maxage=0s", "above zero with a unit s, m, h or d at '0s'" },
		{ "maxage=0d", "above zero with a unit s, m, h or d at '0d'" },
		{ "maxage=1w", "at '1w'" },
		{ "maxage=1ms", "at '1ms'" },
		{ "maxage=-1d", "at '-1d'" },
		{ "maxage=1.5d", "at '1.5d'" },
		{ "maxage=1d1h", "at '1d1h'" },
		{ "maxage=99999999999999d", "too long at '99999999999999d'" },
		{ "maxage", "expected '=' after maxage at end of input" },
		{ "maxage=", "expected a value after maxage= at end of input" },
		{ "maxage 7d", "expected '=' after maxage at '7d'" },
		{ "maxversions==3", "at '=3'" },
		{ "maxversions=and", "at 'and'" },
		{ "maxversions=(3)", "at '('" },
		{ "maxvers=3", "at 'maxvers=3'" },
		{ "junk", "at 'junk'" },
		{ "maxversions=3 junk", "at 'junk'" },
		{ "maxversions=3 maxage=1d", "at 'maxage=1d'" },
		{ "maxversions=3 or", "end of input" },
		{ "or maxversions=3", "at 'or'" },
		{ "and", "at 'and'" },
		{ "maxversions=3 and and maxage=1d", "at 'and'" },
		{ "maxversions=3 or or maxage=1d", "at 'or'" },
		{ "maxversions=3 and or maxage=1d", "at 'or'" },
		{ "(maxversions=3", "expected ')' at end of input" },
		{ "(maxversions=3 maxage=1d)", "expected ')' at 'maxage=1d'" },
		{ "maxversions=3)", "unmatched ')'" },
		{ "()", "at ')'" },
		{ "(", "end of input" },
		{ ")", "at ')'" },
		{ "never or maxversions=3", "'never' cannot be combined" },
		{ "maxversions=3 or never", "'never' cannot be combined" },
		{ "(never)", "'never' cannot be combined" },
		{ "never never", "'never' cannot be combined" },
		{ "never)", "'never' cannot be combined" },
		{ "nevermore", "at 'nevermore'" },
		{ "maxversions=3 & maxage=1d", "at '&'" },
		{ "maxversions=3 | maxage=1d", "at '|'" },
		{ "maxversions=3 &&& maxage=1d", "at '&'" },
		{ "maxversions=3;", "at '3;'" },
		{ "maxversions=3,maxage=1d", "at '3,maxage=1d'" },
		{ "maxversions=3\x01", "at '3\\x01'" },
		{ "maxversions\xc2\xa0=3", "at 'maxversions\\xC2\\xA0=3'" },
		{ "maxversions=3 or maxage=1d'", "at '1d\\x27'" },
	};
	size_t i;

	for (i = 0; i < N(cases); i++)
		check_rejects(cases[i].text, cases[i].detail);
}

/* Very long numbers, deep nesting and long chains stay bounded. */
static void
test_hostile(void)
{
	struct gc_policy *p = NULL, *q = NULL;
	size_t n, i, len;
	char *text, *out;

	text = malloc(200000);
	out = malloc(200000);
	if (text == NULL || out == NULL)
		tap_bail("out of memory");

	n = (size_t)sprintf(text, "maxversions=");
	memset(text + n, '9', 1000);
	text[n + 1000] = '\0';
	check_rejects(text, "...");
	n = (size_t)sprintf(text, "maxage=");
	memset(text + n, '9', 1000);
	strcpy(text + n + 1000, "d");
	check_rejects(text, "too long");
	/* Leading zeros are not a long number: this is one day. */
	n = (size_t)sprintf(text, "maxage=");
	memset(text + n, '0', 1000);
	strcpy(text + n + 1000, "1d");
	check_accepts(text, "maxage=1d");
	n = (size_t)sprintf(text, "maxversions=");
	memset(text + n, '0', 1000);
	strcpy(text + n + 1000, "5");
	check_accepts(text, "maxversions=5");

	/* GC_POLICY_MAX_DEPTH parentheses are fine; one more is not. */
	for (i = 0; i < GC_POLICY_MAX_DEPTH; i++)
		text[i] = '(';
	n = i + (size_t)sprintf(text + i, "maxversions=1");
	for (i = 0; i < GC_POLICY_MAX_DEPTH; i++)
		text[n++] = ')';
	text[n] = '\0';
	check_accepts(text, "maxversions=1");
	for (i = 0; i <= GC_POLICY_MAX_DEPTH; i++)
		text[i] = '(';
	n = i + (size_t)sprintf(text + i, "maxversions=1");
	for (i = 0; i <= GC_POLICY_MAX_DEPTH; i++)
		text[n++] = ')';
	text[n] = '\0';
	check_rejects(text, "nested deeper than 32");

	for (i = 0; i < 10000; i++)
		text[i] = '(';
	n = i + (size_t)sprintf(text + i, "maxversions=1");
	for (i = 0; i < 10000; i++)
		text[n++] = ')';
	text[n] = '\0';
	check_rejects(text, "nested deeper than 32");
	memset(text, '(', 10000);
	text[10000] = '\0';
	check_rejects(text, "nested deeper than 32");
	memset(text, ')', 10000);
	check_rejects(text, "at ')'");
	for (i = 0; i < 5000; i++)
		memcpy(text + 2 * i, "( ", 2);
	text[10000] = '\0';
	check_rejects(text, "nested deeper than 32");

	/* A flat chain of 5000 rules is no deeper than one of two. */
	for (n = 0, i = 0; i < 5000; i++)
		n += (size_t)sprintf(text + n, "%smaxversions=%zu",
		    i > 0 ? (i % 2 ? " or " : " && ") : "", i % 7 + 1);
	is_int(gc_policy_parse(text, &p), 0, "accepts a chain of 5000 rules");
	len = p != NULL ? gc_policy_format(p, out, 200000) : 0;
	ok(len > 0 && len < 200000 && gc_policy_parse(out, &q) == 0,
	    "its format (%zu bytes) parses again", len);
	if (q != NULL) {
		gc_policy_format(q, text, 200000);
		ok(strcmp(text, out) == 0, "and formats to the same text");
	} else
		ok(false, "and formats to the same text");
	gc_policy_free(q);
	gc_policy_free(p);

	/* A long junk word is shortened in the detail. */
	memset(text, 'x', 100000);
	text[100000] = '\0';
	check_rejects(text, "xxx...'");
	ok(strlen(bt_error_detail()) < 200, "that detail is short (%zu)",
	    strlen(bt_error_detail()));
	free(out);
	free(text);
}

static const struct eval_case {
	const char *policy;
	uint64_t index;
	int64_t ts, now;
	bool want;
} eval_cases[] = {
	{ "never", 0, NOW, NOW, false },
	{ "never", 1000000, 0, NOW, false },
	{ "never", UINT64_MAX, INT64_MIN, INT64_MAX, false },

	{ "maxversions=3", 0, NOW, NOW, false },
	{ "maxversions=3", 2, NOW, NOW, false },
	{ "maxversions=3", 2, 0, NOW, false },
	{ "maxversions=3", 3, NOW, NOW, true },
	{ "maxversions=3", 3, INT64_MAX, NOW, true },
	{ "maxversions=3", 4, NOW, NOW, true },
	{ "maxversions=3", UINT64_MAX, NOW, NOW, true },
	{ "maxversions=1", 0, 0, NOW, false },
	{ "maxversions=1", 1, NOW, NOW, true },
	{ "maxversions=9223372036854775807", INT64_MAX - 1, 0, NOW, false },
	{ "maxversions=9223372036854775807", INT64_MAX, 0, NOW, true },

	{ "maxage=1h", 0, NOW, NOW, false },
	{ "maxage=1h", 0, NOW - 1, NOW, false },
	{ "maxage=1h", 0, NOW - HOUR + 1, NOW, false },
	{ "maxage=1h", 0, NOW - HOUR, NOW, false },
	{ "maxage=1h", 0, NOW - HOUR - 1, NOW, true },
	{ "maxage=1h", 0, NOW + 1, NOW, false },
	{ "maxage=1h", 0, INT64_MAX, NOW, false },
	{ "maxage=1h", 0, 0, NOW, true },
	{ "maxage=1h", UINT64_MAX, NOW, NOW, false },
	{ "maxage=1h", 0, INT64_MIN, INT64_MAX, true },
	{ "maxage=1h", 0, INT64_MAX, INT64_MIN, false },
	{ "maxage=1h", 0, INT64_MIN, INT64_MIN, false },
	{ "maxage=1h", 0, -HOUR, 0, false },
	{ "maxage=1h", 0, -HOUR - 1, 0, true },
	{ "maxage=1s", 0, NOW - SEC, NOW, false },
	{ "maxage=1s", 0, NOW - SEC - 1, NOW, true },
	{ "maxage=7d", 5, NOW - 7 * DAY, NOW, false },
	{ "maxage=7d", 5, NOW - 7 * DAY - 1, NOW, true },
	{ "maxage=213503982d", 0, INT64_MIN, INT64_MAX, true },
	{ "maxage=213503982d", 0, 0, INT64_MAX, false },

	{ "maxversions=2 and maxage=1h", 1, 0, NOW, false },
	{ "maxversions=2 and maxage=1h", 2, NOW, NOW, false },
	{ "maxversions=2 and maxage=1h", 2, NOW - HOUR, NOW, false },
	{ "maxversions=2 and maxage=1h", 2, NOW - HOUR - 1, NOW, true },
	{ "maxversions=2 and maxage=1h", 1, NOW - HOUR - 1, NOW, false },

	{ "maxversions=2 or maxage=1h", 1, NOW, NOW, false },
	{ "maxversions=2 or maxage=1h", 1, NOW - HOUR, NOW, false },
	{ "maxversions=2 or maxage=1h", 2, NOW, NOW, true },
	{ "maxversions=2 or maxage=1h", 1, NOW - HOUR - 1, NOW, true },
	{ "maxversions=2 or maxage=1h", 0, NOW + DAY, NOW, false },

	/* "and" binds tighter: read left to right these would differ. */
	{ "maxversions=1 or maxversions=5 and maxage=1h", 1, NOW, NOW, true },
	{ "maxversions=1 or maxversions=5 and maxage=1h", 4, 0, NOW, true },
	{ "maxversions=1 or maxversions=5 and maxage=1h", 0, 0, NOW, false },
	{ "maxversions=1 or maxversions=5 and maxage=1h", 5, 0, NOW, true },
	{ "maxage=1h and maxversions=5 or maxversions=1", 1, NOW, NOW, true },
	{ "maxage=1h and maxversions=5 or maxversions=1", 0, 0, NOW, false },
	{ "(maxversions=1 or maxversions=5) and maxage=1h", 1, NOW, NOW,
	    false },

	{ "(maxage=1d or maxversions=5) and maxversions=10", 9, 0, NOW,
	    false },
	{ "(maxage=1d or maxversions=5) and maxversions=10", 10, NOW, NOW,
	    true },
	{ "(maxage=1d or maxversions=5) and maxversions=10", 4, 0, NOW,
	    false },
	{ "(maxage=1d or maxversions=5) and maxversions=10", 10, NOW - DAY,
	    NOW, true },
	{ "maxage=1d and (maxversions=2 or maxage=2d)", 1, NOW - DAY - 1, NOW,
	    false },
	{ "maxage=1d and (maxversions=2 or maxage=2d)", 2, NOW - DAY - 1, NOW,
	    true },
	{ "maxage=1d and (maxversions=2 or maxage=2d)", 0, NOW - 2 * DAY - 1,
	    NOW, true },
	{ "maxage=1d and (maxversions=2 or maxage=2d)", 9, NOW - DAY, NOW,
	    false },
};

static void
test_evaluation(void)
{
	const struct eval_case *c;
	struct gc_policy *p;
	size_t i;

	for (i = 0; i < N(eval_cases); i++) {
		c = &eval_cases[i];
		p = NULL;
		if (gc_policy_parse(c->policy, &p) != 0) {
			ok(false, "'%s' parses: %s", c->policy,
			    bt_error_detail());
			continue;
		}
		ok(gc_policy_condemns(p, c->index, c->ts, c->now) == c->want,
		    "'%s' %s index %" PRIu64 " ts %" PRId64 " now %" PRId64,
		    c->policy, c->want ? "condemns" : "keeps", c->index, c->ts,
		    c->now);
		gc_policy_free(p);
	}
}

static void
test_keeps_all(void)
{
	static const struct {
		const char *policy;
		bool want;
	} cases[] = {
		{ "never", true },
		{ "maxversions=1", false },
		{ "maxversions=9223372036854775807", false },
		{ "maxage=1s", false },
		{ "maxage=213503982d", false },
		{ "maxversions=3 and maxage=7d", false },
		{ "maxversions=3 or maxage=7d", false },
	};
	struct gc_policy *p;
	size_t i;

	for (i = 0; i < N(cases); i++) {
		p = NULL;
		if (gc_policy_parse(cases[i].policy, &p) != 0) {
			ok(false, "'%s' parses", cases[i].policy);
			continue;
		}
		ok(gc_policy_keeps_all(p) == cases[i].want,
		    "keeps_all('%s') is %s", cases[i].policy,
		    cases[i].want ? "true" : "false");
		gc_policy_free(p);
	}
}

/* gc_policy_uses_age(): whether a maxage term appears at any depth, which
 * decides whether a read takes the clock. */
static void
test_uses_age(void)
{
	static const struct {
		const char *policy;
		bool want;
	} cases[] = {
		{ "never", false },
		{ "maxversions=1", false },
		{ "maxage=1s", true },
		{ "maxversions=3 and maxage=7d", true },
		{ "maxversions=3 or maxage=7d", true },
		{ "maxversions=3 or maxversions=5", false },
		{ "maxversions=3 or (maxversions=2 and maxage=1h)", true },
		{ "(maxversions=2 and maxversions=4) or maxversions=1", false },
	};
	struct gc_policy *p;
	size_t i;

	ok(!gc_policy_uses_age(NULL), "uses_age(NULL) is false");
	for (i = 0; i < N(cases); i++) {
		p = NULL;
		if (gc_policy_parse(cases[i].policy, &p) != 0) {
			ok(false, "'%s' parses", cases[i].policy);
			continue;
		}
		ok(gc_policy_uses_age(p) == cases[i].want,
		    "uses_age('%s') is %s", cases[i].policy,
		    cases[i].want ? "true" : "false");
		gc_policy_free(p);
	}
}

/* gc_policy_format() truncates and counts like snprintf. */
static void
test_format_buffer(void)
{
	const char *full = "maxversions=3 or maxage=7d";
	size_t len = strlen(full);
	struct gc_policy *p = NULL;
	char buf[64];

	if (gc_policy_parse(full, &p) != 0)
		tap_bail("cannot parse a plain policy");
	is_int(gc_policy_format(p, NULL, 0), len,
	    "format with no buffer returns the full length");
	memset(buf, 'x', sizeof(buf));
	is_int(gc_policy_format(p, buf, 5), len,
	    "format into 5 bytes returns the full length");
	ok(strcmp(buf, "maxv") == 0 && buf[5] == 'x',
	    "and writes 4 characters and a NUL, nothing beyond");
	memset(buf, 'x', sizeof(buf));
	gc_policy_format(p, buf, len);
	ok(strncmp(buf, full, len - 1) == 0 && buf[len - 1] == '\0',
	    "one byte short drops the last character");
	memset(buf, 'x', sizeof(buf));
	gc_policy_format(p, buf, len + 1);
	ok(strcmp(buf, full) == 0, "exactly enough room holds it all");
	memset(buf, 'x', sizeof(buf));
	gc_policy_format(p, buf, 1);
	ok(buf[0] == '\0' && buf[1] == 'x', "one byte holds just the NUL");
	gc_policy_free(p);
	gc_policy_free(NULL);
	ok(true, "gc_policy_free(NULL) returns");
}

/* Every allocation failure is -ENOMEM, sets nothing and leaks nothing. */
static void
test_enomem(void)
{
	static const char *const texts[] = {
		"never",
		"maxage=7d",
		"(maxage=1d or maxversions=5) and maxversions=10 or "
		    "maxage=2h && (maxversions=3 || maxage=1s)",
	};
	max_align_t marker_space;
	struct gc_policy *marker = (struct gc_policy *)&marker_space, *p;
	int rc, n, fails, bad;
	size_t i;

	for (i = 0; i < N(texts); i++) {
		fails = bad = 0;
		for (n = 1; n < 1000; n++) {
			p = marker;
			bt_alloc_fail_after(n);
			rc = gc_policy_parse(texts[i], &p);
			bt_alloc_fail_after(0);
			if (rc == 0)
				break;
			fails++;
			if (rc != -ENOMEM || p != marker)
				bad++;
		}
		ok(rc == 0 && fails > 0 && bad == 0,
		    "'%s': %d allocation failures each give -ENOMEM and no "
		    "output, then it parses", texts[i], fails);
		if (rc == 0)
			gc_policy_free(p);
	}
}

/*
 * The randomized property: a random policy tree, spelled in a random
 * accepted way, parses to something that condemns exactly what the tree
 * does; and its canonical format does too, and is a fixed point.
 */
enum { M_MAXVERSIONS, M_MAXAGE, M_AND, M_OR };

struct mnode {
	int kind;
	uint64_t limit;			/* versions, or seconds */
	int nchild;
	int child[3];
};

struct model {
	struct mnode node[128];
	int n;
};

static const uint64_t model_ages[] = { 1, 2, 59, 60, 90, 3600, 5400, 86400,
    7 * 86400 };

static bool
model_condemns(const struct model *m, int i, uint64_t index, int64_t ts,
    int64_t now)
{
	const struct mnode *x = &m->node[i];
	int k;

	switch (x->kind) {
	case M_MAXVERSIONS:
		return index >= x->limit;
	case M_MAXAGE:
		return ts < now && (uint64_t)(now - ts) > x->limit * SEC;
	case M_AND:
		for (k = 0; k < x->nchild; k++)
			if (!model_condemns(m, x->child[k], index, ts, now))
				return false;
		return true;
	default:
		for (k = 0; k < x->nchild; k++)
			if (model_condemns(m, x->child[k], index, ts, now))
				return true;
		return false;
	}
}

static int
model_build(struct model *m, uint64_t *rs, int depth)
{
	int i = m->n++, k;
	struct mnode *x = &m->node[i];
	uint64_t r = tap_rand(rs);

	if (depth >= 4 || r % 3 == 0) {
		if (r & 8) {
			x->kind = M_MAXVERSIONS;
			x->limit = (r >> 8) % 6 + 1;
		} else {
			x->kind = M_MAXAGE;
			x->limit = model_ages[(r >> 8) % N(model_ages)];
		}
		return i;
	}
	x->kind = r & 8 ? M_AND : M_OR;
	x->nchild = 2 + (int)((r >> 8) % 2);
	for (k = 0; k < x->nchild; k++) {
		int c = model_build(m, rs, depth + 1);

		m->node[i].child[k] = c;
	}
	return i;
}

static void
spell_case(char *dst, const char *word, uint64_t r)
{
	for (; *word != '\0'; word++, r >>= 1)
		*dst++ = (r & 1) && *word >= 'a' && *word <= 'z' ?
		    (char)(*word - 'a' + 'A') : *word;
	*dst = '\0';
}

static void
append(char *buf, size_t *n, const char *s)
{
	size_t len = strlen(s);

	memcpy(buf + *n, s, len);
	*n += len;
	buf[*n] = '\0';
}

static const char *
blank(uint64_t r)
{
	static const char *const blanks[] = { " ", "  ", "\t", " \n " };

	return blanks[r % N(blanks)];
}

/* Spell node i; parent is the kind of the enclosing node, or -1. */
static void
model_spell(const struct model *m, int i, int parent, uint64_t *rs,
    char *buf, size_t *n)
{
	static const char *const eq[] = { "=", " = ", "= ", " =", "\t=" };
	const struct mnode *x = &m->node[i];
	uint64_t r = tap_rand(rs);
	char word[64];
	bool paren;
	int k;

	/* Parentheses are needed only for an "or" inside an "and". */
	paren = (parent == M_AND && x->kind == M_OR) || r % 5 == 0;
	if (paren)
		append(buf, n, r & 16 ? "( " : "(");
	r >>= 5;
	if (x->kind == M_MAXVERSIONS || x->kind == M_MAXAGE) {
		spell_case(word, x->kind == M_MAXAGE ? "maxage" :
		    "maxversions", r);
		append(buf, n, word);
		r >>= 12;
		append(buf, n, eq[r % N(eq)]);
		r >>= 3;
		if (x->kind == M_MAXVERSIONS) {
			sprintf(word, "%s%" PRIu64, r & 1 ? "0" : "",
			    x->limit);
		} else {
			/* Any unit that divides the age exactly. */
			static const struct {
				uint64_t secs;
				char unit;
			} units[] = {
				{ 86400, 'd' }, { 3600, 'h' }, { 60, 'm' },
				{ 1, 's' },
			};
			size_t u = (r >> 1) % N(units);

			while (x->limit % units[u].secs != 0)
				u++;
			sprintf(word, "%" PRIu64 "%c",
			    x->limit / units[u].secs,
			    r & 64 ? units[u].unit - 'a' + 'A' : units[u].unit);
		}
		append(buf, n, word);
	} else {
		for (k = 0; k < x->nchild; k++) {
			uint64_t r2 = tap_rand(rs);

			if (k > 0) {
				if (r2 % 4 == 0) {
					append(buf, n, x->kind == M_AND ?
					    "&&" : "||");
				} else {
					append(buf, n, blank(r2 >> 2));
					spell_case(word, x->kind == M_AND ?
					    "and" : "or", r2 >> 4);
					append(buf, n, word);
					append(buf, n, blank(r2 >> 8));
				}
			}
			model_spell(m, x->child[k], x->kind, rs, buf, n);
		}
	}
	if (paren)
		append(buf, n, (r >> 20) & 1 ? " )" : ")");
}

/* Compare p with the model on random (index, ts, now) near boundaries. */
static int
model_mismatches(const struct model *m, const struct gc_policy *p,
    uint64_t *rs, const char *text)
{
	char shown[1024];
	int bad = 0, t;

	for (t = 0; t < 200; t++) {
		uint64_t r = tap_rand(rs);
		uint64_t index = r % 8;
		int64_t now = NOW + (int64_t)(r >> 40);
		int64_t age = (int64_t)model_ages[(r >> 4) % N(model_ages)] *
		    SEC + (int64_t)((r >> 8) % 3) - 1;
		int64_t ts;

		if ((r >> 12) % 8 == 0)
			age = -age;		/* a future timestamp */
		else if ((r >> 12) % 8 == 1)
			age = (int64_t)((r >> 16) % (8 * (uint64_t)DAY));
		if ((r >> 20) % 16 == 0)
			index = r >> 24;
		ts = now - age;
		if (gc_policy_condemns(p, index, ts, now) !=
		    model_condemns(m, 0, index, ts, now)) {
			if (bad++ == 0)
				diag("'%s' differs at index %" PRIu64 " ts %"
				    PRId64 " now %" PRId64, show(shown,
				    sizeof(shown), text), index, ts, now);
		}
	}
	return bad;
}

static void
test_random_round_trip(void)
{
	uint64_t seed = tap_seed(), rs = seed;
	char text[8192], out[8192], again[8192], shown[1024];
	int trees = 2000, parse_bad = 0, eval_bad = 0, reparse_bad = 0;
	int fixed_bad = 0, t;
	struct gc_policy *p, *q;
	struct model m;
	size_t n;

	for (t = 0; t < trees; t++) {
		m.n = 0;
		model_build(&m, &rs, 0);
		n = 0;
		text[0] = '\0';
		if (rs & 1)
			append(text, &n, blank(rs >> 1));
		model_spell(&m, 0, -1, &rs, text, &n);
		p = q = NULL;
		if (gc_policy_parse(text, &p) != 0) {
			if (parse_bad++ == 0)
				diag("'%s': %s", show(shown, sizeof(shown),
				    text), bt_error_detail());
			continue;
		}
		eval_bad += model_mismatches(&m, p, &rs, text) != 0;
		gc_policy_format(p, out, sizeof(out));
		if (t < 3)
			diag("for example '%s' -> '%s'",
			    show(shown, sizeof(shown), text), out);
		if (gc_policy_parse(out, &q) != 0) {
			if (reparse_bad++ == 0)
				diag("'%s' -> '%s': %s", show(shown,
				    sizeof(shown), text), out,
				    bt_error_detail());
		} else {
			eval_bad += model_mismatches(&m, q, &rs, out) != 0;
			gc_policy_format(q, again, sizeof(again));
			if (strcmp(out, again) != 0 && fixed_bad++ == 0)
				diag("'%s' -> '%s'", out, again);
		}
		gc_policy_free(q);
		gc_policy_free(p);
	}
	is_int(parse_bad, 0, "%d random spellings of random trees parse",
	    trees);
	is_int(eval_bad, 0, "they and their formats condemn what the trees "
	    "condemn");
	is_int(reparse_bad, 0, "their formats parse");
	is_int(fixed_bad, 0, "their formats are fixed points");
}

int
main(void)
{
	test_accepted();
	test_rejected();
	test_hostile();
	test_evaluation();
	test_keeps_all();
	test_uses_age();
	test_format_buffer();
	test_enomem();
	test_random_round_trip();
	return tap_done();
}
