/*
 * regex.h - the regular expressions of read filters (docs/design.md
 * section 1, Scans; tabletfs.h, struct bt_read_options), over PCRE2.
 *
 * Semantics are those of cbt and Cloud Bigtable (RE2's syntax, which
 * PCRE2's accepts): a pattern must match the WHOLE subject, which is
 * bytes, not UTF-8 text (`a.*` matches "ab" but not "xa"; `\C` or `.`
 * match any one byte but '.' not "\n", as in RE2; `(?s)` makes '.' match
 * it too).  A pattern is compiled once (with PCRE2's JIT where the
 * platform has it) and matched as often as its user likes.
 *
 * Limits: every match runs under REGEX_MATCH_LIMIT (backtracking steps),
 * REGEX_DEPTH_LIMIT (how deep backtracking nests) and a heap limit, so
 * that a pathological pattern such as `(x+x+)+y` on a long subject ends
 * with an error instead of a hang.  That error is -ERANGE, its detail
 * naming the limit that was hit.  A match that outgrows the JIT's stack
 * (`(a|b)*` on a long value) runs again in the interpreter, under the
 * same limits.
 *
 * Threads: a compiled regex keeps its match state, so one regex is used
 * by one thread at a time (each read or scan compiles its own).
 */
#ifndef TABLETFS_UTIL_REGEX_H
#define TABLETFS_UTIL_REGEX_H

#include <stddef.h>

#include "util/buf.h"
#include "util/slice.h"

#define REGEX_MATCH_LIMIT	1000000u
#define REGEX_DEPTH_LIMIT	1000000u

struct regex;

/*
 * Compile pattern (any bytes; NUL included) for whole-subject matches.
 * what names the pattern in error details ("row regex").  0 with *out,
 * -EINVAL with the compiler's message and offset as the detail, or
 * -ENOMEM.
 */
int regex_compile(struct slice pattern, const char *what, struct regex **out);

/* Accepts NULL. */
void regex_free(struct regex *re);

/*
 * Whether re matches all of subject: 1 if it does, 0 if not, -ERANGE
 * (detail naming the limit) when the match ran into a limit, or -ENOMEM.
 */
int regex_match(struct regex *re, struct slice subject);

/*
 * The literal bytes every subject that pattern matches starts with,
 * computed conservatively from the pattern's text (it may be shorter than
 * the true prefix, never longer): `com\.cnn\..*` gives "com.cnn.", `ab*`
 * gives "a", and a pattern with an alternation at its top level, an
 * inline option or a class at its start gives "".  Replaces out's
 * content; 0 or -ENOMEM.  The pattern need not be valid.
 */
int regex_literal_prefix(struct slice pattern, struct buf *out);

#endif
