/*
 * test_regex.c - the read filters' regexes (util/regex.h): a pattern
 * matches the whole subject and nothing less (`a.*` not inside "xa",
 * alternations anchored as a whole), subjects are bytes (0x00 and 0xff in
 * patterns and subjects, no UTF-8 check, '.' short of "\n" but `\C` not),
 * a bad pattern is -EINVAL with PCRE2's message, a pathological one
 * -ERANGE naming the match limit, quickly, a deep but sane one matches
 * (past the JIT's stack); and the literal prefix that
 * narrows a scan is never longer than what every match starts with.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tap.h"
#include "util/error.h"
#include "util/regex.h"

/* Whether pattern matches subject (both of n bytes, given by length):
 * 1, 0, or the error. */
static int
match_n(const char *pat, size_t pn, const char *subj, size_t sn)
{
	struct regex *re;
	int rc;

	if ((rc = regex_compile(slice_make(pat, pn), "test regex", &re)) < 0)
		return rc;
	rc = regex_match(re, slice_make(subj, sn));
	regex_free(re);
	return rc;
}

static int
match(const char *pat, const char *subj)
{
	return match_n(pat, strlen(pat), subj, strlen(subj));
}

static void
test_whole_subject(void)
{
	is_int(match("a.*", "ab"), 1, "a.* matches ab");
	is_int(match("a.*", "a"), 1, "a.* matches a");
	is_int(match("a.*", "xa"), 0, "a.* does not match inside xa");
	is_int(match("b", "abc"), 0, "b does not match inside abc");
	is_int(match("a|ab", "ab"), 1, "a|ab matches ab whole");
	is_int(match("a|ab", "abc"), 0, "a|ab does not match a prefix of abc");
	is_int(match("x|y", "xy"), 0, "x|y does not match xy");
	is_int(match("^a$", "a"), 1, "explicit anchors still match");
	is_int(match("a$", "a\n"), 0, "$ is the subject's end only");
	is_int(match(".*\\.cnn\\.com", "www.cnn.com"), 1,
	    "the paper's column pattern matches www.cnn.com");
	is_int(match(".*\\.cnn\\.com", "www.cnn.com.au"), 0,
	    "and not www.cnn.com.au");
	is_int(match("", ""), 1, "the empty pattern matches the empty subject");
	is_int(match("", "a"), 0, "and nothing else");
}

static void
test_bytes(void)
{
	is_int(match_n("k\\x00\\xff", 9, "k\0\xff", 3), 1,
	    "\\x00\\xff escapes match bytes 0x00 0xff");
	is_int(match_n("k\0\xff", 3, "k\0\xff", 3), 1,
	    "raw 0x00 and 0xff bytes in a pattern match themselves");
	is_int(match_n("k.*", 3, "k\0\xff\x80", 4), 1,
	    ".* matches bytes that are not UTF-8");
	is_int(match_n("k.", 2, "k\n", 2), 0, ". does not match \\n (RE2)");
	is_int(match_n("k\\C", 3, "k\n", 2), 1, "\\C matches any byte");
	is_int(match_n("(?s)k.", 6, "k\n", 2), 1, "(?s). matches \\n");
	is_int(match_n("\xc3\xa9", 2, "\xc3\xa9", 2), 1,
	    "UTF-8 in a pattern is two bytes");
	is_int(match_n(".", 1, "\xc3\xa9", 2), 0,
	    "and . is one byte, not one character");
	is_int(match("(*UTF)a", "a"), -EINVAL, "(*UTF) is refused");
}

static void
test_errors(void)
{
	struct regex *re = NULL;
	char subj[64];
	struct timespec t0, t1;
	double secs;
	int rc;

	rc = regex_compile(slice_make("a(b", 3), "row regex", &re);
	is_int(rc, -EINVAL, "a bad pattern is -EINVAL");
	ok(re == NULL, "and gives no regex");
	ok(strstr(bt_error_detail(), "row regex") != NULL &&
	    strstr(bt_error_detail(), "missing closing parenthesis") != NULL,
	    "its detail names the pattern and PCRE2's message: %s",
	    bt_error_detail());
	is_int(match("*a", "a"), -EINVAL, "a quantifier with nothing to repeat");
	is_int(match("[a", "a"), -EINVAL, "an unterminated class");

	memset(subj, 'x', 30);
	strcpy(subj + 30, "yz");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = match("(x+x+)+y", subj);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) +
	    (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	is_int(rc, -ERANGE, "a catastrophic pattern is -ERANGE");
	ok(strstr(bt_error_detail(), "match limit") != NULL,
	    "its detail names the match limit: %s", bt_error_detail());
	ok(secs < 10, "and ends in %.3f s, not a hang", secs);

	/* Deep but sane: past the JIT's stack, within the limits. */
	char *deep = malloc(200000);

	if (deep == NULL)
		tap_bail("malloc");
	memset(deep, 'a', 200000);
	is_int(match_n("(a|b)*", 6, deep, 200000), 1,
	    "(a|b)* matches 200000 bytes (the interpreter after the JIT)");
	free(deep);
}

/* The literal prefix of pattern, rendered printable. */
static void
prefix_is(const char *pat, size_t pn, const char *want, size_t wn)
{
	struct buf b;

	buf_init(&b);
	if (regex_literal_prefix(slice_make(pat, pn), &b) != 0)
		tap_bail("regex_literal_prefix failed");
	ok(b.n == wn && (wn == 0 || memcmp(b.p, want, wn) == 0),
	    "literal prefix of %.*s is %zu bytes (got %zu)", (int)pn, pat,
	    wn, b.n);
	buf_release(&b);
}

#define PREFIX_IS(pat, want) \
	prefix_is(pat, sizeof(pat) - 1, want, sizeof(want) - 1)

static void
test_literal_prefix(void)
{
	PREFIX_IS("com\\.cnn\\..*", "com.cnn.");
	PREFIX_IS("abc", "abc");
	PREFIX_IS("ab*", "a");
	PREFIX_IS("ab?c", "a");
	PREFIX_IS("ab{0,2}", "a");
	PREFIX_IS("ab+", "ab");
	PREFIX_IS("a|b", "");
	PREFIX_IS("abc|abd", "");
	PREFIX_IS("ab(c|d)", "ab");
	PREFIX_IS("ab[|]c|x", "");
	PREFIX_IS("ab[]|]c", "ab");
	PREFIX_IS("ab\\Q|\\E|x", "");
	PREFIX_IS("(?i)abc", "");
	PREFIX_IS("ab(?i)c", "ab");
	PREFIX_IS("a.c", "a");
	PREFIX_IS("\\d+", "");
	PREFIX_IS("a\\x00", "a");
	PREFIX_IS("k\0\xff.*", "k\0\xff");
	PREFIX_IS("^abc", "");
	PREFIX_IS("ab)", "");
	PREFIX_IS("a(b", "");
	PREFIX_IS("", "");
	PREFIX_IS("a\\.b\\*", "a.b*");
	PREFIX_IS("a\\.b\\*?", "a.b");
}

int
main(void)
{
	test_whole_subject();
	test_bytes();
	test_errors();
	test_literal_prefix();
	return tap_done();
}
