/*
 * gc_policy.h - a column family's garbage-collection policy, as Cloud
 * Bigtable's cbt writes it (docs/design.md section 1):
 *
 *	never
 *	maxversions=N			N from 1 to 2^63-1
 *	maxage=DURATION			(util/units.h: 30s, 15m, 12h, 7d), > 0
 *	RULE and RULE ...		a version is condemned if every rule
 *					condemns it
 *	RULE or RULE ...		condemned if any rule condemns it
 *
 * Words are separated by blanks; parentheses, "=", "&&" and "||" need none
 * ("(maxage=1d or maxversions=5)", "maxage = 5d || maxversions = 3").
 * Keywords and units are case-insensitive; "&&" and "||" are cbt's
 * spellings of "and" and "or".  "and" binds tighter than "or"; parentheses
 * group, at most GC_POLICY_MAX_DEPTH deep.  "never" stands alone: it cannot
 * be combined with and/or or put in parentheses.  A family created without
 * a policy keeps every version ("never").  The parsed form is a small
 * immutable tree that gc_policy_condemns() evaluates per version; any
 * number of threads may read one policy at once.
 */
#ifndef TABLETFS_TABLET_GC_POLICY_H
#define TABLETFS_TABLET_GC_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GC_POLICY_MAX_DEPTH	32

struct gc_policy;

/*
 * Parse text into a new policy, which *out receives only on success.  0,
 * -ENOMEM, or -EINVAL with a detail (bt_error_set) naming the offending
 * word, e.g.
 * "gc policy: expected maxversions=N, maxage=DURATION or '(' at 'maxvers=3'".
 */
int gc_policy_parse(const char *text, struct gc_policy **out);
/* Accepts NULL. */
void gc_policy_free(struct gc_policy *p);

/*
 * The canonical spelling, which gc_policy_parse() reads back to an equal
 * policy: "never", "maxversions=3", "maxage=7d",
 * "maxversions=3 or maxage=7d", lower case, single spaces.  Parentheses
 * appear only where needed and around every "and" inside an "or", so that
 * the text also means the same to cbt, which reads and/or left to right
 * with equal precedence.  Writes into dst (truncating, NUL-terminated when
 * size > 0; dst may be NULL when size is 0) and returns the length the full
 * text needs, like snprintf.
 */
size_t gc_policy_format(const struct gc_policy *p, char *dst, size_t size);

/* true for "never" (or a policy that can condemn nothing). */
bool gc_policy_keeps_all(const struct gc_policy *p);

/*
 * Whether the policy has a maxage term anywhere (NULL: false): whether
 * gc_policy_condemns() depends on now at all.
 */
bool gc_policy_uses_age(const struct gc_policy *p);

/*
 * The largest N of the policy's maxversions terms, 0 if it has none (NULL:
 * 0): for a given ts and now, gc_policy_condemns() answers the same for
 * every index at or above it.
 */
uint64_t gc_policy_version_limit(const struct gc_policy *p);

/*
 * Whether a version is condemned: index is its position among the
 * versions of its column that are not deleted, newest first (0 =
 * newest), ts its timestamp and now the current time, both in
 * microseconds.  A version whose age is exactly maxage is kept; older is
 * condemned; a timestamp after now is never condemned by age.
 */
bool gc_policy_condemns(const struct gc_policy *p, uint64_t index,
    int64_t ts, int64_t now);

#endif
