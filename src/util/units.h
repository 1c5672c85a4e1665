/*
 * units.h - the size and duration spellings of docs/design.md section 3.
 *
 * Sizes: a decimal count with an optional k, m or g suffix, either case, in
 * powers of 1024 ("256K", "64k", "1g", "4096").  Durations: a decimal count
 * with a suffix s, m, h or d, either case ("2s", "15m", "12h", "7d"); a
 * bare count is refused, since "7" could mean any unit.  Durations are
 * stored as microseconds.  No sign, blank, fraction or other suffix is
 * accepted anywhere.  Pure functions: safe from any thread.
 */
#ifndef TABLETFS_UTIL_UNITS_H
#define TABLETFS_UTIL_UNITS_H

#include <stddef.h>
#include <stdint.h>

/* Room for any format_size() or format_duration() text, with its NUL. */
#define UNITS_STRLEN 24

/*
 * Parse all of s.  0, or -EINVAL (empty, junk, unknown or missing suffix,
 * negative) or -ERANGE (does not fit in uint64_t), with a detail quoting s.
 * The output is written only on success.
 */
int parse_size(const char *s, uint64_t *bytes);
int parse_duration(const char *s, uint64_t *micros);

/*
 * The shortest exact spelling of a size or duration, as parse_* accept it
 * ("64k", "1536", "0", "7d", "90s", "0s"), written into dst (truncated to
 * size, NUL-terminated when size > 0).  Returns dst.  A duration that is
 * not a whole number of seconds has no parse_duration() spelling; it is
 * written in microseconds with a "us" suffix ("1500us"), for display only.
 */
char *format_size(char *dst, size_t size, uint64_t bytes);
char *format_duration(char *dst, size_t size, uint64_t micros);

#endif
