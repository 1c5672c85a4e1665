/*
 * regex.c - whole-subject regular expressions over PCRE2 (regex.h).
 *
 * PCRE2 rather than RE2: RE2 is C++, and PCRE2's C library is packaged
 * everywhere (Debian's libpcre2-dev).  PCRE2 backtracks, so it has no
 * linear-time guarantee; its match and depth limits stand in for one.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <errno.h>
#include <pcre2.h>
#include <stdbool.h>
#include <string.h>

#include "util/alloc.h"
#include "util/error.h"
#include "util/regex.h"

/*
 * Under valgrind, no JIT: valgrind cannot follow the machine code PCRE2
 * generates and reports its reads as uninitialised (false reports that
 * would fail scripts/check --valgrind).  The interpreter gives the same
 * answers, more slowly.
 */
#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define REGEX_JIT_USABLE()	(!RUNNING_ON_VALGRIND)
#endif
#endif
#ifndef REGEX_JIT_USABLE
#define REGEX_JIT_USABLE()	1
#endif

/* PCRE2's heap for one match, in KiB: far above what a sane pattern on a
 * 64 KiB key needs. */
#define REGEX_HEAP_LIMIT	(64u << 10)

struct regex {
	pcre2_general_context *gcx;
	pcre2_code *code;
	pcre2_match_context *mcx;
	pcre2_match_data *md;
	const char *what;
	bool jit;
};

/* PCRE2 allocates through the project's wrapper (tests fail the Nth). */
static void *
regex_alloc(size_t n, void *arg)
{
	(void)arg;
	return bt_malloc(n);
}

static void
regex_release(void *p, void *arg)
{
	(void)arg;
	bt_free(p);
}

int
regex_compile(struct slice pattern, const char *what, struct regex **out)
{
	static const uint8_t empty[1];
	pcre2_compile_context *ccx = NULL;
	struct regex *re;
	PCRE2_SIZE offset;
	int err, rc = -ENOMEM;

	if ((re = bt_calloc(1, sizeof(*re))) == NULL)
		return -ENOMEM;
	re->what = what;
	if ((re->gcx = pcre2_general_context_create(regex_alloc,
	    regex_release, NULL)) == NULL ||
	    (ccx = pcre2_compile_context_create(re->gcx)) == NULL ||
	    (re->mcx = pcre2_match_context_create(re->gcx)) == NULL)
		goto out_free;
	pcre2_set_newline(ccx, PCRE2_NEWLINE_LF);
	/* Bytes, never UTF (not even by a leading (*UTF)); anchored at both
	 * ends, so that the whole subject must match, as in cbt. */
	re->code = pcre2_compile(pattern.n > 0 ? pattern.p : empty, pattern.n,
	    PCRE2_ANCHORED | PCRE2_ENDANCHORED | PCRE2_DOLLAR_ENDONLY |
	    PCRE2_NEVER_UTF | PCRE2_NEVER_UCP, &err, &offset, ccx);
	if (re->code == NULL) {
		PCRE2_UCHAR msg[256];

		if (err == PCRE2_ERROR_HEAPLIMIT || err == PCRE2_ERROR_NOMEMORY)
			goto out_free;
		if (pcre2_get_error_message(err, msg, sizeof(msg)) < 0)
			strcpy((char *)msg, "does not compile");
		rc = bt_error_set(-EINVAL, "%s: %s at offset %zu", what,
		    (const char *)msg, (size_t)offset);
		goto out_free;
	}
	re->jit = REGEX_JIT_USABLE() &&
	    pcre2_jit_compile(re->code, PCRE2_JIT_COMPLETE) == 0;
	pcre2_set_match_limit(re->mcx, REGEX_MATCH_LIMIT);
	pcre2_set_depth_limit(re->mcx, REGEX_DEPTH_LIMIT);
	pcre2_set_heap_limit(re->mcx, REGEX_HEAP_LIMIT);
	if ((re->md = pcre2_match_data_create(1, re->gcx)) == NULL)
		goto out_free;
	pcre2_compile_context_free(ccx);
	*out = re;
	return 0;
out_free:
	pcre2_compile_context_free(ccx);
	regex_free(re);
	return rc;
}

void
regex_free(struct regex *re)
{
	if (re == NULL)
		return;
	pcre2_match_data_free(re->md);
	pcre2_match_context_free(re->mcx);
	pcre2_code_free(re->code);
	pcre2_general_context_free(re->gcx);
	bt_free(re);
}

int
regex_match(struct regex *re, struct slice subject)
{
	static const uint8_t empty[1];
	int rc;

	rc = pcre2_match(re->code, subject.n > 0 ? subject.p : empty,
	    subject.n, 0, 0, re->md, re->mcx);
	/* The JIT's stack is small and fixed; the interpreter's frames are
	 * on the heap, bounded by the limits. */
	if (rc == PCRE2_ERROR_JIT_STACKLIMIT && re->jit)
		rc = pcre2_match(re->code, subject.n > 0 ? subject.p : empty,
		    subject.n, 0, PCRE2_NO_JIT, re->md, re->mcx);
	if (rc >= 0)
		return 1;
	switch (rc) {
	case PCRE2_ERROR_NOMATCH:
		return 0;
	case PCRE2_ERROR_NOMEMORY:
		return -ENOMEM;
	case PCRE2_ERROR_MATCHLIMIT:
		return bt_error_set(-ERANGE, "%s hit the match limit (%u "
		    "steps) on a subject of %zu bytes", re->what,
		    REGEX_MATCH_LIMIT, subject.n);
	case PCRE2_ERROR_DEPTHLIMIT:
		return bt_error_set(-ERANGE, "%s hit the depth limit (%u) on "
		    "a subject of %zu bytes", re->what, REGEX_DEPTH_LIMIT,
		    subject.n);
	case PCRE2_ERROR_HEAPLIMIT:
		return bt_error_set(-ERANGE, "%s hit the heap limit (%u KiB) "
		    "on a subject of %zu bytes", re->what, REGEX_HEAP_LIMIT,
		    subject.n);
	case PCRE2_ERROR_JIT_STACKLIMIT:
		return bt_error_set(-ERANGE, "%s hit the depth limit (JIT "
		    "stack) on a subject of %zu bytes", re->what, subject.n);
	default: {
		PCRE2_UCHAR msg[256];

		if (pcre2_get_error_message(rc, msg, sizeof(msg)) < 0)
			strcpy((char *)msg, "match failed");
		return bt_error_set(-EINVAL, "%s: %s", re->what,
		    (const char *)msg);
	}
	}
}

/* Whether c may begin a backslash escape that stands for itself: PCRE2
 * gives every non-alphanumeric ASCII byte after '\' its literal meaning. */
static bool
escape_is_literal(uint8_t c)
{
	return c < 0x80 && !(c >= '0' && c <= '9') &&
	    !(c >= 'A' && c <= 'Z') && !(c >= 'a' && c <= 'z');
}

/*
 * Whether pattern has an alternation outside every group, or brackets
 * that do not balance (then nothing about it is trusted).  Escapes, \Q..\E
 * quoting and character classes are stepped over.
 */
static bool
top_level_alternation(struct slice pat)
{
	size_t i = 0, depth = 0;

	while (i < pat.n) {
		uint8_t c = pat.p[i];

		if (c == '\\') {
			if (i + 1 < pat.n && pat.p[i + 1] == 'Q') {
				for (i += 2; i < pat.n; i++)
					if (pat.p[i] == '\\' && i + 1 < pat.n &&
					    pat.p[i + 1] == 'E')
						break;
			}
			i += 2;
		} else if (c == '[') {
			i++;
			if (i < pat.n && pat.p[i] == '^')
				i++;
			if (i < pat.n && pat.p[i] == ']')
				i++;
			while (i < pat.n && pat.p[i] != ']')
				i += pat.p[i] == '\\' ? 2 : 1;
			if (i >= pat.n)
				return true;	/* unterminated */
			i++;
		} else if (c == '(') {
			depth++;
			i++;
		} else if (c == ')') {
			if (depth == 0)
				return true;
			depth--;
			i++;
		} else if (c == '|' && depth == 0) {
			return true;
		} else {
			i++;
		}
	}
	return depth != 0;
}

int
regex_literal_prefix(struct slice pat, struct buf *out)
{
	size_t i = 0;
	int rc;

	buf_clear(out);
	if (top_level_alternation(pat))
		return 0;
	while (i < pat.n) {
		uint8_t c = pat.p[i];

		switch (c) {
		case '*': case '?': case '{':
			/* The last literal may occur zero times. */
			if (out->n > 0)
				out->n--;
			return 0;
		case '+':
		case '.': case '[': case '(': case ')': case '|':
		case '^': case '$':
			return 0;
		case '\\':
			if (i + 1 >= pat.n || !escape_is_literal(pat.p[i + 1]))
				return 0;
			c = pat.p[i + 1];
			i += 2;
			break;
		default:
			i++;
			break;
		}
		if ((rc = buf_append(out, &c, 1)) < 0)
			return rc;
	}
	return 0;
}
